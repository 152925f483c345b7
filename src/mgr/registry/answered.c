/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Messages a process was answered in and never returned: given back once
 * it has exited (a dead NF's at its reclaim, any other sender's by the
 * periodic sweep).
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
 * Gives back the messages a dead process was answered and never returned
 * (it died waiting for the answer, or gave up on it: a replica cancelled
 * while registering). A message with its pid, answered (done) and not free
 * is one: nothing else reads it. Its unanswered messages are still
 * sluiced's (the message ring, a deregistration in progress) or lost in
 * its own hands for good (taken, not yet posted: a short window).
 */
/* Returns one message nobody will return, counted. */
void
mgr_reg_msg_give_back(struct sl_mgr *m, struct sl_msg *msg)
{
	sl_msg_put(m->shm, msg);
	m->msgs_reclaimed++;
}

/*
 * Messages answered in the message itself (done) belong to their sender
 * until it returns them: every registration and deregistration answer, and
 * refused messages of any type (a bad registration, an unknown type, a
 * request from no running NF of its pid). A sender that never registered,
 * or not as that pid, is watched by no slot, so nothing above returns what
 * it keeps: a process that gives up or dies after its answer, or a bad NF
 * that never returns refused messages. Every SWEEP_MS the pool is scanned
 * for answered messages (not free, done, pid > 0) whose pid has exited and
 * is no slot's (a slot's are msgs_reclaim's, after its reclaim): nobody can
 * return those any more, so they are given back, once (a message given back
 * is marked free, and the scan skips the free). Never before the process
 * has exited: a slow sender returns its own. Skipped as not in the
 * sender's hands: a message still queued in the message ring (its done set
 * by the sender itself), and a deregistration waiting for its quiescent
 * point (sluiced's). Limits: the pid is the one the message names; a
 * message naming a pid not its sender's (0, another live process) is
 * reclaimed when that pid exits, or never.
 */
#define SWEEP_MS 100

struct answered {
	int32_t pid; /* only this sender's; 0: any sender's */
	uint32_t n, max;
	struct sl_msg **msg;
};

static void
answered_find(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	struct answered *a = arg;
	struct sl_msg *msg = obj;

	(void)mp;
	(void)idx;
	if (__atomic_load_n(&msg->type, __ATOMIC_ACQUIRE) != SL_MSG_FREE &&
	    __atomic_load_n(&msg->done, __ATOMIC_ACQUIRE) == 1 &&
	    msg->pid > 0 && (a->pid == 0 || msg->pid == a->pid) &&
	    a->n < a->max)
		a->msg[a->n++] = msg;
}

/* Room for every message of the pool (m->registry's, allocated on first
 * use: 0 for the sweep, 1 for a pid's reclaim). */
static struct sl_msg **
answered_room(const struct sl_mgr *m, int which)
{
	struct sl_registry_state *r = m->registry;

	if (r->answered[which] == NULL)
		r->answered[which] = calloc(m->shm->msg_pool->size,
					    sizeof(*r->answered[which]));
	return r->answered[which];
}

/* 1 once pid has exited (a zombie counts), not a process reusing it. */
static int
pid_exited(int32_t pid)
{
	struct pollfd p = {.events = POLLIN};
	int r;

	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p.fd < 0)
		return errno == ESRCH;
	r = poll(&p, 1, 0);
	close(p.fd);
	return r > 0;
}

/* 1 if sluiced holds msg itself: a deregistration waiting for its grace
 * period. */
static int
held_by_qs(const struct sl_mgr *m, const struct sl_msg *msg)
{
	for (const struct sl_grace_action *a = m->qs.head; a != NULL;
	     a = a->next)
		if (mgr_reg_dereg_holds(a, msg))
			return 1;
	return 0;
}

/* 1 if pid is a slot's that is not free (its reclaim returns its own). */
static int
pid_of_slot(const struct sl_mgr *m, int32_t pid)
{
	const struct sl_shm *shm = m->shm;

	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].pid == pid &&
		    __atomic_load_n(&shm->nfs[i].state, __ATOMIC_ACQUIRE) !=
			    SL_NF_FREE)
			return 1;
	return 0;
}

/*
 * Gives back the answered messages of pid, which has exited (a dead NF's,
 * or a sender's the sweep below found): gathered now, so none it returned
 * before it exited is taken for its. Not given back: one still queued in
 * the message ring (done set by the sender itself: the ring's reader
 * answers and returns it) and a deregistration sluiced holds for its
 * quiescent point. Returns how many.
 */
uint32_t
mgr_reg_msgs_reclaim(struct sl_mgr *m, int32_t pid)
{
	struct rte_mempool *mp = m->shm->msg_pool;
	struct answered a = {.pid = pid,
			     .max = mp->size,
			     .msg = answered_room(m, 1)};
	uint32_t n = 0;

	if (a.msg == NULL || pid <= 0)
		return 0;
	rte_mempool_obj_iter(mp, answered_find, &a);
	for (uint32_t i = 0; i < a.n; i++) {
		if (mgr_reg_in_ring(m->shm->msg_ring, a.msg[i]) ||
		    held_by_qs(m, a.msg[i]))
			continue;
		mgr_reg_msg_give_back(m, a.msg[i]);
		n++;
	}
	return n;
}

static int
pid_cmp(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;

	return (a > b) - (a < b);
}

void
mgr_reg_answered_sweep(struct sl_mgr *m)
{
	struct sl_registry_state *r = m->registry;
	struct rte_mempool *mp = m->shm->msg_pool;
	struct answered a = {.max = mp->size, .msg = answered_room(m, 0)};
	uint64_t now = rte_rdtsc();

	if (now < r->sweep_next)
		return;
	r->sweep_next = now + m->shm->tsc_hz / 1000 * SWEEP_MS;
	if (r->pids == NULL)
		r->pids = calloc(mp->size, sizeof(*r->pids));
	if (r->pids == NULL || a.msg == NULL)
		return;
	rte_mempool_obj_iter(mp, answered_find, &a);
	/* Their senders, each once (read once: a live sender may reuse its
	 * messages meanwhile). */
	for (uint32_t i = 0; i < a.n; i++)
		r->pids[i] = a.msg[i]->pid;
	qsort(r->pids, a.n, sizeof(*r->pids), pid_cmp);
	for (uint32_t i = 0; i < a.n; i++) {
		int32_t pid = r->pids[i];
		uint32_t n;

		if ((i > 0 && r->pids[i - 1] == pid) || pid <= 0 ||
		    pid_of_slot(m, pid) || !pid_exited(pid))
			continue;
		n = mgr_reg_msgs_reclaim(m, pid);
		if (n > 0)
			mgr_log(m,
				"pid %d (no registered NF): %u answered "
				"message(s) it left unreturned given back "
				"(status messages.reclaimed)",
				pid, n);
	}
}
