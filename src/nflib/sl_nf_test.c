/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's fault injection: in libsluice_test, which only the test
 * builds of NFs link (nfs/forward/hooks), and in libsluice only with meson
 * -Dnf_test_hooks=true.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_nf_int.h"

/*
 * Tests only. SLUICE_TEST_KILL_AT=handoff:N makes the NF kill itself (SIGKILL)
 * at its Nth run handed to a next hop, once the run is ready and before it
 * is enqueued (or given to port_out); take:N, at its Nth burst taken from
 * its rx ring, before the burst is tagged as its own; tx:N, at its Nth
 * transmit call on its own TX queue, written down and not made yet (as if
 * killed inside the driver); sent:N, just after the Nth such call
 * returned, before its packets are counted. Those are the moments a death
 * is hardest to clean up after (docs/architecture.md, "Killed inside a
 * hand-off"); tests/integration/test_failure.py uses them.
 */
void
nfi_test_kill_count(struct sl_nf *nf)
{
	if (--nf->kill_left == 0) {
		fprintf(stderr,
			"%s: SLUICE_TEST_KILL_AT reached: killing "
			"myself\n",
			nf->prog);
		raise(SIGKILL);
	}
}

static void
test_kill_fault(struct sl_dispatch *d)
{
	nfi_test_kill_count(container_of(d, struct sl_nf, disp));
}

void
nfi_test_kill_at(struct sl_nf *nf)
{
	const char *v = getenv("SLUICE_TEST_KILL_AT");
	char *end;
	unsigned long long n;

	if (v == NULL || *v == '\0')
		return;
	if (strncmp(v, "handoff:", 8) == 0)
		v += 8;
	else if (strncmp(v, "take:", 5) == 0)
		v += 5, nf->kill_take = 1;
	else if (strncmp(v, "tx:", 3) == 0)
		v += 3, nf->kill_tx = 1;
	else if (strncmp(v, "sent:", 5) == 0)
		v += 5, nf->kill_tx = 2;
	else
		v = "";
	n = strtoull(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n == 0) {
		fprintf(stderr,
			"%s: SLUICE_TEST_KILL_AT='%s' ignored: use "
			"handoff:N, take:N, tx:N or sent:N, N >= 1\n",
			nf->prog, getenv("SLUICE_TEST_KILL_AT"));
		nf->kill_take = 0;
		nf->kill_tx = 0;
		return;
	}
	nf->kill_left = n;
	if (!nf->kill_take && !nf->kill_tx)
		nf->disp.fault = test_kill_fault;
}
