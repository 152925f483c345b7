/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Grace periods and quiescent-state actions: removing anything that a
 * data-path thread may still be using (an old chain, a leaving or dead
 * instance's rings) is deferred until every running NF and I/O thread has
 * gone round its loop (or is asleep) since the change was published.
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

/* ---- quiescent-state actions --------------------------------------- */

int
sl_grace_start(struct sl_grace *g, const struct sl_shm *shm)
{
	if (g->nf_hb == NULL) {
		g->nf_hb = malloc(sizeof(uint64_t) * shm->max_nfs);
		if (g->nf_hb == NULL)
			return -ENOMEM;
	}
	g->t0 = rte_rdtsc();
	for (uint16_t i = 0; i < shm->max_nfs; i++)
		g->nf_hb[i] = __atomic_load_n(&shm->nfs[i].heartbeat,
					      __ATOMIC_ACQUIRE);
	for (uint32_t t = 0; t < shm->n_io; t++)
		g->io_hb[t] = __atomic_load_n(&shm->io_heartbeat[t],
					      __ATOMIC_ACQUIRE);
	g->ctl_hb = __atomic_load_n(&shm->ctl_heartbeat, __ATOMIC_ACQUIRE);
	return 0;
}

void
sl_grace_fini(struct sl_grace *g)
{
	free(g->nf_hb);
	g->nf_hb = NULL;
}

int
sl_grace_passed(const struct sl_grace *g, const struct sl_shm *shm, int self_io,
		int self_ctl)
{
	uint16_t hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);

	if (rte_rdtsc() - g->t0 < shm->tsc_hz / 1000)
		return 0;
	for (uint16_t i = 0; i < hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
			continue;
		if (__atomic_load_n(&s->heartbeat, __ATOMIC_ACQUIRE) ==
			    g->nf_hb[i] &&
		    !__atomic_load_n(&s->sleeping, __ATOMIC_ACQUIRE))
			return 0;
	}
	for (uint32_t t = 0; t < shm->n_io; t++)
		if ((int)t != self_io &&
		    __atomic_load_n(&shm->io_heartbeat[t], __ATOMIC_ACQUIRE) ==
			    g->io_hb[t] &&
		    !__atomic_load_n(&shm->io_sleeping[t], __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE))
			return 0;
	if (!self_ctl &&
	    __atomic_load_n(&shm->ctl_heartbeat, __ATOMIC_ACQUIRE) ==
		    g->ctl_hb &&
	    !__atomic_load_n(&shm->ctl_idle, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE))
		return 0;
	return 1;
}

struct sl_qs_action *
sl_qs_new(struct sl_mgr *m, enum sl_qs_kind kind)
{
	struct sl_qs_action *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	if (sl_grace_start(&a->grace, m->shm) != 0) {
		free(a);
		return NULL;
	}
	a->kind = kind;
	/* Append: actions complete in order. */
	struct sl_qs_action **pp = &m->qs;

	while (*pp != NULL)
		pp = &(*pp)->next;
	*pp = a;
	return a;
}


static int
qs_run(struct sl_mgr *m, struct sl_qs_action *a)
{
	struct sl_msg *msg;

	switch (a->kind) {
	case SL_QS_FREE_CHAIN:
		rte_free(a->ptr);
		return 0;
	case SL_QS_CALL:
		return a->fn(m, a->ptr);
	case SL_QS_DEREGISTER:
		msg = a->ptr;
		if (m->shm->nfs[a->instance].pid != msg->pid ||
		    m->shm->nfs[a->instance].state != SL_NF_STOPPING) {
			/* It died while waiting: nobody reads the answer. */
			sl_reg_msg_give_back(m, msg);
			return 0;
		}
		msg->result = 0;
		__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
		return 0;
	case SL_QS_RECLAIM:
		return sl_reg_reclaim(m, a);
	}
	return 0;
}

void
sl_reg_qs_poll(struct sl_mgr *m)
{
	struct sl_qs_action **pp = &m->qs;

	while (*pp != NULL) {
		struct sl_qs_action *a = *pp;

		if (!sl_grace_passed(&a->grace, m->shm, -1, 1) ||
		    qs_run(m, a) != 0) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		sl_grace_fini(&a->grace);
		free(a);
	}
}

void
sl_qs_drain_all(struct sl_mgr *m)
{
	/* At shutdown every data-path thread has stopped. */
	while (m->qs != NULL) {
		struct sl_qs_action *a = m->qs;

		m->qs = a->next;
		if (a->kind == SL_QS_RECLAIM) {
			/* tx rings are no longer drained: drop as lost */
			struct sl_nf_slot *s = &m->shm->nfs[a->instance];
			void *obj;

			while (s->tx != NULL &&
			       rte_ring_sc_dequeue(s->tx, &obj) == 0) {
				rte_pktmbuf_free(obj);
				s->mgr.drop[SL_DROP_NF_LOST]++;
			}
		}
		/* A reclaim's second pass needs no grace period now. */
		for (int k = 0; k < 3 && qs_run(m, a) != 0; k++)
			;
		free(a->cand);
		sl_grace_fini(&a->grace);
		free(a);
	}
}
