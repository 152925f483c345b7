/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Grace periods (quiescent-state reclamation) over the heartbeat words of
 * the shared layout (sl_shared.h), and a queue of actions run once one has
 * passed. Used by sluiced's flow table (recycling entries), graphs
 * (freeing retired versions) and registry (answering a deregistration,
 * reclaiming a dead NF); it calls back into none of them.
 *
 * Readers: every NF slot RUNNING or STOPPING (its heartbeat and sleeping
 * words), every I/O thread (io_heartbeat, io_sleeping) and the control
 * thread (ctl_heartbeat, ctl_idle). A reader that goes round its loop
 * bumps its heartbeat at a point where it holds nothing it read from a
 * published pointer; one that waits idle holds nothing either. So once
 * each reader has moved or waits idle, none can still hold what was
 * unpublished before the grace period started. A slot in any other state
 * (FREE, DEAD) is no reader: an NF that died does not block anything.
 * Why this and not DPDK's rte_rcu_qsbr: docs/architecture.md, "Grace
 * periods".
 */
#ifndef SL_GRACE_H
#define SL_GRACE_H

#include <errno.h>
#include <stdint.h>

#include "sl_shared.h"

/*
 * A grace period: started when something is unpublished, passed once every
 * reader has gone round its loop (or waits idle) since, and at least a
 * millisecond has gone by (a reader between loading a pointer and using
 * it has then surely finished).
 */
struct sl_grace {
	uint64_t t0;
	uint64_t *nf_hb; /* [max_nfs] heartbeats at the start */
	uint64_t io_hb[SL_MAX_IO_THREADS];
	uint64_t ctl_hb;
};

/* Snapshots the heartbeats (allocates nf_hb on first use). 0 or ENOMEM.
 * Any thread; g is the caller's own. */
int sl_grace_start(struct sl_grace *g, const struct sl_shm *shm);
/* 1 once the grace period has passed; the caller's own thread (I/O thread
 * self_io, or the control thread if self_ctl) is not waited for. Once
 * sluiced has set shm->shutdown, I/O threads and the control thread are
 * not waited for either (they are stopping). */
int sl_grace_passed(const struct sl_grace *g, const struct sl_shm *shm,
		    int self_io, int self_ctl);
/* Frees what sl_grace_start allocated; g may be started again. */
void sl_grace_fini(struct sl_grace *g);

/* ---- the action queue ------------------------------------------------ */

struct sl_grace_action;

/*
 * What an action does, called by the queue's owner thread with the ctx
 * given to sl_grace_poll/sl_grace_drain and the action, embedded in the
 * caller's own struct (container_of).
 * draining == 0: the grace period has passed. Returns 0 when done: the queue
 * no longer holds a and fn may free it. SL_GRACE_AGAIN: run it again once
 * another grace period, started now, has passed. Any other value: run it
 * again at the next poll.
 * draining == 1: sl_grace_drain at shutdown, no reader runs any more: fn
 * finishes what it can and releases a; its value is ignored.
 * fn never starts nor finishes a->grace: the queue does.
 */
typedef int sl_grace_fn(void *ctx, struct sl_grace_action *a, int draining);

#define SL_GRACE_AGAIN EINPROGRESS

struct sl_grace_action {
	struct sl_grace_action *next; /* the queue's */
	sl_grace_fn *fn;
	struct sl_grace grace;
};

/* Actions queued at once, unless the owner sets max (0: this default). */
#define SL_GRACE_QUEUE_MAX 65536u

/*
 * Pending actions, run in the order they were queued (an action that asks
 * to run again does not hold back those behind it). All zero is an empty
 * queue with the default bound. One thread (the owner) uses it.
 */
struct sl_grace_queue {
	struct sl_grace_action *head;
	struct sl_grace_action **tail; /* &last->next, or NULL: &head */
	uint32_t n;                    /* actions queued */
	uint32_t max;                  /* bound on n; 0: SL_GRACE_QUEUE_MAX */
	uint64_t overflow;             /* sl_grace_defer refused: full */
};

/* Queues a (its fn set to fn) and starts its grace period. 0; ENOSPC if
 * the queue holds max actions already (counted in overflow); ENOMEM. On
 * failure a is not queued and the caller still owns it. */
int sl_grace_defer(struct sl_grace_queue *q, struct sl_grace_action *a,
		   sl_grace_fn *fn, const struct sl_shm *shm);
/* Runs, in order, the actions whose grace period has passed (self_io and
 * self_ctl as for sl_grace_passed). fn may queue new actions. */
void sl_grace_poll(struct sl_grace_queue *q, const struct sl_shm *shm,
		   void *ctx, int self_io, int self_ctl);
/* At shutdown, once no reader runs: every action left, in order, with
 * draining = 1. The queue is empty after. */
void sl_grace_drain(struct sl_grace_queue *q, void *ctx);

#endif /* SL_GRACE_H */
