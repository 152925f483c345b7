/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hang watchdog.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sl_graph.h"
#include "sluice/pkt.h"
#include "sl_lb.h"
#include "sluiced.h"
#include "registry/registry.h"

/*
 * The hang watchdog: an NF that is registered, not asleep and has not
 * looped for --nf-hang-ms holds whatever grace periods wait for (buffers
 * of dead NFs, old graph versions, retired flow entries) for as long as it
 * is stuck. It is killed; its death (pidfd) then frees what it held like
 * any other. So is a running NF asleep with packets waiting in its ring,
 * which a live NF wakes up for at once. An NF in its init (no loop yet)
 * or fini, or idle, is not hung.
 */
void
mgr_reg_watchdog(struct sl_mgr *m)
{
	struct sl_shm *shm = m->shm;
	struct sl_registry_state *r = m->registry;
	uint64_t now = rte_rdtsc(), limit;
	uint16_t hwm;

	if (m->o.nf_hang_ms == 0 || now < r->hang_next)
		return;
	r->hang_next = now + shm->tsc_hz / 100; /* every 10 ms */
	limit = shm->tsc_hz / 1000 * m->o.nf_hang_ms;
	hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);
	for (uint16_t i = 0; i < hwm; i++) {
		struct sl_nf_slot *s = &shm->nfs[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		uint64_t hb = __atomic_load_n(&s->heartbeat, __ATOMIC_ACQUIRE);

		if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
			continue;
		if (r->hb_tsc[i] == 0 || hb != r->hb_seen[i] || hb == 0 ||
		    (__atomic_load_n(&s->sleeping, __ATOMIC_ACQUIRE) &&
		     (st != SL_NF_RUNNING || rte_ring_count(s->rx) == 0))) {
			r->hb_seen[i] = hb;
			r->hb_tsc[i] = now;
			continue;
		}
		if (now - r->hb_tsc[i] < limit)
			continue;
		mgr_log(m,
			"NF hung: instance %u, service %s, pid %d: not one "
			"loop in %u ms with work to do; killing it (sluiced "
			"--nf-hang-ms; 0 never does)",
			i, shm->services[s->service].name, s->pid,
			m->o.nf_hang_ms);
		mgr_event(m, "nf.hung",
			  json_pack("{s:i, s:s, s:i, s:i}", "instance", i,
				    "service", shm->services[s->service].name,
				    "pid", s->pid, "hang_ms", m->o.nf_hang_ms));
		if ((r->pidfd[i] >= 0 ? syscall(SYS_pidfd_send_signal,
						r->pidfd[i], SIGKILL, NULL, 0)
				      : kill(s->pid, SIGKILL)) != 0)
			mgr_log(m, "cannot kill pid %d: %s", s->pid,
				strerror(errno));
		m->nfs_hung++;
		r->hb_tsc[i] = now; /* its death follows; not again at once */
	}
}
