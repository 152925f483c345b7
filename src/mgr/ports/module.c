/* SPDX-License-Identifier: BSD-3-Clause */
/* The ports module (module.h): ports opened at init, closed last. */
#include <errno.h>

#include "sluiced.h"

static int
ports_init(struct sl_mgr *m, char *err, size_t errlen)
{
	return mgr_ports_init(m, err, errlen);
}

/* Also after a failed start: the ports made so far, their folders. */
const struct mgr_module mgr_ports_module = {
	.name = "ports",
	.init = ports_init,
	.release = mgr_ports_close,
};
