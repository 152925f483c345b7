/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Grace periods over the shared layout's heartbeat words, and the queue of
 * actions run after them (grace.h).
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "grace.h"

int
sl_grace_start(struct sl_grace *g, const struct sl_shm *shm)
{
	if (g->nf_hb == NULL) {
		g->nf_hb = malloc(sizeof(uint64_t) * shm->max_nfs);
		if (g->nf_hb == NULL)
			return ENOMEM;
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

/* ---- the action queue ------------------------------------------------ */

static struct sl_grace_action **
queue_tail(struct sl_grace_queue *q)
{
	return q->tail != NULL ? q->tail : &q->head;
}

int
sl_grace_defer(struct sl_grace_queue *q, struct sl_grace_action *a,
	       sl_grace_fn *fn, const struct sl_shm *shm)
{
	uint32_t max = q->max != 0 ? q->max : SL_GRACE_QUEUE_MAX;

	if (q->n >= max) {
		q->overflow++;
		return ENOSPC;
	}
	a->grace.nf_hb = NULL;
	if (sl_grace_start(&a->grace, shm) != 0)
		return ENOMEM;
	a->fn = fn;
	a->next = NULL;
	*queue_tail(q) = a;
	q->tail = &a->next;
	q->n++;
	return 0;
}

/* Takes *pp (= a) out of q. */
static void
unlink_at(struct sl_grace_queue *q, struct sl_grace_action **pp,
	  struct sl_grace_action *a)
{
	*pp = a->next;
	if (q->tail == &a->next)
		q->tail = pp;
	q->n--;
}

/* Puts a back in q at *pp. */
static void
relink_at(struct sl_grace_queue *q, struct sl_grace_action **pp,
	  struct sl_grace_action *a)
{
	a->next = *pp;
	*pp = a;
	if (a->next == NULL)
		q->tail = &a->next;
	q->n++;
}

void
sl_grace_poll(struct sl_grace_queue *q, const struct sl_shm *shm, void *ctx,
	      int self_io, int self_ctl)
{
	struct sl_grace_action **pp = &q->head;

	while (*pp != NULL) {
		struct sl_grace_action *a = *pp;
		uint64_t *hb = a->grace.nf_hb;
		int rc;

		if (!sl_grace_passed(&a->grace, shm, self_io, self_ctl)) {
			pp = &a->next;
			continue;
		}
		/* Out while fn runs: fn may free it, or queue others. */
		unlink_at(q, pp, a);
		rc = a->fn(ctx, a, 0);
		if (rc == 0) {
			free(hb); /* a is fn's again */
			continue;
		}
		relink_at(q, pp, a);
		if (rc == SL_GRACE_AGAIN)
			(void)sl_grace_start(&a->grace, shm);
		pp = &a->next;
	}
}

void
sl_grace_drain(struct sl_grace_queue *q, void *ctx)
{
	while (q->head != NULL) {
		struct sl_grace_action *a = q->head;
		uint64_t *hb = a->grace.nf_hb;

		unlink_at(q, &q->head, a);
		(void)a->fn(ctx, a, 1);
		free(hb);
	}
}
