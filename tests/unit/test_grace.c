/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the grace-period library (src/common/grace.c) alone, on a
 * fake struct sl_shm in heap memory: when a grace period passes, and the
 * action queue (order, retries, drain at shutdown, its bound). No EAL.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_common.h>

#include "grace.h"

#define MAX_NFS 8
#define N_IO 2

static void *
zalloc_aligned(size_t size)
{
	size_t sz = RTE_ALIGN_CEIL(size, SL_CACHE_LINE);
	void *p = aligned_alloc(SL_CACHE_LINE, sz);

	assert_non_null(p);
	memset(p, 0, sz);
	return p;
}

/* NF 0 RUNNING and NF 1 STOPPING (readers), NF 2 DEAD and NF 3 FREE (not
 * readers), two I/O threads, the control thread; no minimum time (tsc_hz
 * 0) unless a test sets one. */
static int
setup(void **state)
{
	struct sl_shm *shm = zalloc_aligned(sizeof(*shm));

	shm->max_nfs = MAX_NFS;
	shm->nfs = zalloc_aligned(sizeof(struct sl_nf_slot) * MAX_NFS);
	for (uint16_t i = 0; i < MAX_NFS; i++) {
		shm->nfs[i].instance = i;
		shm->nfs[i].state = SL_NF_FREE;
		shm->nfs[i].heartbeat = 100u + i;
	}
	shm->nfs[0].state = SL_NF_RUNNING;
	shm->nfs[1].state = SL_NF_STOPPING;
	shm->nfs[2].state = SL_NF_DEAD;
	shm->nf_hwm = 4;
	shm->n_io = N_IO;
	shm->tsc_hz = 0;
	*state = shm;
	return 0;
}

static int
teardown(void **state)
{
	struct sl_shm *shm = *state;

	free(shm->nfs);
	free(shm);
	return 0;
}

/* Every reader goes round its loop once. */
static void
all_move(struct sl_shm *shm)
{
	for (uint16_t i = 0; i < MAX_NFS; i++)
		shm->nfs[i].heartbeat++;
	for (uint32_t t = 0; t < N_IO; t++)
		shm->io_heartbeat[t]++;
	shm->ctl_heartbeat++;
}

/* A grace period passes only once each live reader moved or sleeps. */
static void
test_waits_for_every_reader(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace g = {0};

	assert_int_equal(sl_grace_start(&g, shm), 0);
	assert_non_null(g.nf_hb);
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->nfs[0].heartbeat++; /* the running NF went round */
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->nfs[1].sleeping = 1; /* the stopping one sleeps */
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->io_heartbeat[0]++;
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->io_sleeping[1] = 1;
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->ctl_heartbeat++;
	assert_true(sl_grace_passed(&g, shm, -1, 0));
	/* Passed stays passed while nothing restarts it. */
	assert_true(sl_grace_passed(&g, shm, -1, 0));
	sl_grace_fini(&g);
	assert_null(g.nf_hb);
}

/* The caller's own thread is not waited for; idle control thread. */
static void
test_self_and_idle(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace g = {0};

	assert_int_equal(sl_grace_start(&g, shm), 0);
	shm->nfs[0].heartbeat++;
	shm->nfs[1].heartbeat++;
	shm->io_heartbeat[1]++;
	/* I/O thread 0 and the control thread have not moved. */
	assert_false(sl_grace_passed(&g, shm, -1, 1));
	assert_false(sl_grace_passed(&g, shm, 0, 0));
	assert_true(sl_grace_passed(&g, shm, 0, 1));
	shm->ctl_idle = 1;
	assert_true(sl_grace_passed(&g, shm, 0, 0));
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	sl_grace_fini(&g);
}

/* Slots that are not RUNNING or STOPPING, and slots at or above nf_hwm,
 * never block; at shutdown neither do I/O threads nor the control
 * thread. */
static void
test_dead_does_not_block(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace g = {0};

	shm->nfs[6].state = SL_NF_RUNNING; /* above nf_hwm: never used */
	assert_int_equal(sl_grace_start(&g, shm), 0);
	shm->nfs[0].heartbeat++;
	shm->nfs[1].heartbeat++;
	/* NF 2 (DEAD) and 3 (FREE) did not move. */
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->shutdown = 1;
	assert_true(sl_grace_passed(&g, shm, -1, 0));
	shm->shutdown = 0;
	/* A reader that dies while it holds the grace period up. */
	shm->nfs[0].heartbeat--;
	shm->io_heartbeat[0]++;
	shm->io_heartbeat[1]++;
	shm->ctl_heartbeat++;
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->nfs[0].state = SL_NF_DEAD;
	assert_true(sl_grace_passed(&g, shm, -1, 0));
	sl_grace_fini(&g);
}

/* At least a millisecond of TSC must go by too. */
static void
test_minimum_time(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace g = {0};

	shm->tsc_hz = UINT64_C(1) << 62; /* a millisecond: 2^62 / 1000 */
	assert_int_equal(sl_grace_start(&g, shm), 0);
	all_move(shm);
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	shm->tsc_hz = 0;
	assert_true(sl_grace_passed(&g, shm, -1, 0));
	/* Started again: a new snapshot to move from. */
	assert_int_equal(sl_grace_start(&g, shm), 0);
	assert_false(sl_grace_passed(&g, shm, -1, 0));
	sl_grace_fini(&g);
}

/* ---- the action queue ------------------------------------------------ */

#define LOG_MAX 32

struct run_log {
	int order[LOG_MAX];
	int drains[LOG_MAX];
	unsigned int n;
	struct sl_grace_queue *q; /* for an action that queues another */
	const struct sl_shm *shm;
};

struct test_action {
	struct sl_grace_action qa;
	int id;
	int rc[4]; /* what successive runs return */
	unsigned int runs;
	int queue_child; /* queues a new action (id + 100) when it runs */
	int freed;       /* set instead of freeing: the test owns it */
};

static struct test_action child;

static int
action_run(void *ctx, struct sl_grace_action *qa, int draining)
{
	struct run_log *log = ctx;
	struct test_action *a = container_of(qa, struct test_action, qa);
	int rc = a->runs < RTE_DIM(a->rc) ? a->rc[a->runs] : 0;

	assert_true(log->n < LOG_MAX);
	log->order[log->n] = a->id;
	log->drains[log->n] = draining;
	log->n++;
	a->runs++;
	if (a->queue_child) {
		a->queue_child = 0;
		child = (struct test_action){.id = a->id + 100};
		assert_int_equal(sl_grace_defer(log->q, &child.qa, action_run,
						log->shm),
				 0);
	}
	if (rc == 0 || draining)
		a->freed = 1;
	return rc;
}

/* Actions run once their grace period passed, in order, exactly once. */
static void
test_queue_order_once(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace_queue q = {0};
	struct run_log log = {.q = &q, .shm = shm};
	struct test_action a[3];

	for (int i = 0; i < 3; i++) {
		a[i] = (struct test_action){.id = i};
		assert_int_equal(sl_grace_defer(&q, &a[i].qa, action_run, shm),
				 0);
	}
	assert_int_equal(q.n, 3);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 0); /* nobody moved yet */
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(log.order[i], i);
		assert_int_equal(log.drains[i], 0);
		assert_true(a[i].freed);
	}
	assert_null(q.head);
	assert_int_equal(q.n, 0);
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 3); /* none again */
	/* The queue works again once empty (its tail was reset). */
	a[0] = (struct test_action){.id = 7};
	assert_int_equal(sl_grace_defer(&q, &a[0].qa, action_run, shm), 0);
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 4);
	assert_int_equal(log.order[3], 7);
}

/* An action queued later waits for its own grace period. */
static void
test_queue_later_waits(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace_queue q = {0};
	struct run_log log = {.q = &q, .shm = shm};
	struct test_action a = {.id = 1}, b = {.id = 2};

	assert_int_equal(sl_grace_defer(&q, &a.qa, action_run, shm), 0);
	all_move(shm);
	assert_int_equal(sl_grace_defer(&q, &b.qa, action_run, shm), 0);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.order[0], 1);
	assert_int_equal(q.n, 1);
	assert_ptr_equal(q.head, &b.qa);
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.order[1], 2);
}

/* Retries: any nonzero value runs again at the next poll without holding
 * back those behind it; SL_GRACE_AGAIN waits for another grace period.
 * An action may queue another while it runs. */
static void
test_queue_retries(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace_queue q = {0};
	struct run_log log = {.q = &q, .shm = shm};
	struct test_action busy = {.id = 1, .rc = {EAGAIN}};
	struct test_action again = {.id = 2, .rc = {SL_GRACE_AGAIN}};
	struct test_action parent = {.id = 3, .queue_child = 1};

	assert_int_equal(sl_grace_defer(&q, &busy.qa, action_run, shm), 0);
	assert_int_equal(sl_grace_defer(&q, &again.qa, action_run, shm), 0);
	assert_int_equal(sl_grace_defer(&q, &parent.qa, action_run, shm), 0);
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.order[0], 1);
	assert_int_equal(log.order[1], 2);
	assert_int_equal(log.order[2], 3);
	assert_true(parent.freed);
	/* busy, again, and the child parent queued, in that order */
	assert_int_equal(q.n, 3);
	assert_ptr_equal(q.head, &busy.qa);
	assert_ptr_equal(q.head->next, &again.qa);
	assert_ptr_equal(q.head->next->next, &child.qa);
	assert_null(child.qa.next);
	/* Nobody moved: busy runs again (its grace passed already); again
	 * and the child wait. */
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 4);
	assert_int_equal(log.order[3], 1);
	assert_true(busy.freed);
	assert_int_equal(q.n, 2);
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 6);
	assert_int_equal(log.order[4], 2);
	assert_int_equal(log.order[5], 103);
	assert_int_equal(again.runs, 2);
	assert_true(again.freed);
	assert_true(child.freed);
	assert_null(q.head);
	assert_int_equal(q.n, 0);
}

/* At shutdown every action left runs once with draining = 1, in order, its
 * grace period passed or not; the queue is empty after. */
static void
test_drain(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace_queue q = {0};
	struct run_log log = {.q = &q, .shm = shm};
	struct test_action a[3];

	for (int i = 0; i < 3; i++) {
		a[i] = (struct test_action){.id = i, .rc = {EAGAIN, EAGAIN}};
		assert_int_equal(sl_grace_defer(&q, &a[i].qa, action_run, shm),
				 0);
	}
	sl_grace_drain(&q, &log);
	assert_int_equal(log.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(log.order[i], i);
		assert_int_equal(log.drains[i], 1);
		assert_int_equal(a[i].runs, 1);
		assert_true(a[i].freed);
	}
	assert_null(q.head);
	assert_int_equal(q.n, 0);
	sl_grace_drain(&q, &log); /* empty: nothing */
	assert_int_equal(log.n, 3);
}

/* The bound: a full queue refuses (counted), the caller keeps its action;
 * room again once actions have run. */
static void
test_queue_bound(void **state)
{
	struct sl_shm *shm = *state;
	struct sl_grace_queue q = {.max = 2};
	struct run_log log = {.q = &q, .shm = shm};
	struct test_action a[3] = {{.id = 0}, {.id = 1}, {.id = 2}};

	assert_int_equal(sl_grace_defer(&q, &a[0].qa, action_run, shm), 0);
	assert_int_equal(sl_grace_defer(&q, &a[1].qa, action_run, shm), 0);
	assert_int_equal(sl_grace_defer(&q, &a[2].qa, action_run, shm), ENOSPC);
	assert_int_equal(q.overflow, 1);
	assert_int_equal(q.n, 2);
	assert_null(a[2].qa.grace.nf_hb); /* nothing of it kept */
	all_move(shm);
	sl_grace_poll(&q, shm, &log, -1, 0);
	assert_int_equal(log.n, 2);
	assert_int_equal(sl_grace_defer(&q, &a[2].qa, action_run, shm), 0);
	assert_int_equal(q.overflow, 1);
	sl_grace_drain(&q, &log);
	assert_int_equal(log.n, 3);
	assert_int_equal(log.order[2], 2);
	/* max 0: the default bound */
	struct sl_grace_queue d = {0};
	struct test_action b = {.id = 9};

	assert_int_equal(sl_grace_defer(&d, &b.qa, action_run, shm), 0);
	assert_int_equal(d.n, 1);
	assert_true(SL_GRACE_QUEUE_MAX > 1);
	sl_grace_drain(&d, &log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_waits_for_every_reader,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_and_idle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dead_does_not_block, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_minimum_time, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_queue_order_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_queue_later_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_queue_retries, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_bound, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
