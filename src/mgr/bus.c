/* SPDX-License-Identifier: BSD-3-Clause */
/* sluiced's event bus (bus.h). */
#include <errno.h>

#include "sluiced.h"

int
mgr_bus_subscribe(struct mgr_bus *b, mgr_bus_fn fn, void *ctx)
{
	if (b->n_subs == MGR_BUS_SUBS)
		return ENOSPC;
	b->sub[b->n_subs].fn = fn;
	b->sub[b->n_subs].ctx = ctx;
	b->n_subs++;
	return 0;
}

void
mgr_bus_set_pid_watch(struct mgr_bus *b, mgr_bus_pid_fn fn, void *ctx)
{
	b->watch_pid = fn;
	b->watch_ctx = ctx;
}

void
mgr_bus_watch_pid(const struct mgr_bus *b, uint16_t instance, int pidfd)
{
	if (b->watch_pid != NULL)
		b->watch_pid(b->watch_ctx, instance, pidfd);
}

void
mgr_event(const struct sl_mgr *m, const char *kind, json_t *data)
{
	const struct mgr_bus *b = &m->bus;

	for (uint32_t i = 0; i < b->n_subs; i++)
		b->sub[i].fn(b->sub[i].ctx, kind, data);
	json_decref(data);
}
