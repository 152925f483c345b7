/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the load balancer: sl_lb_rebuild() (src/common/sl_lb.c,
 * flow-sticky bucket table) and sl_lb_pick() (inline in sl_dispatch.h),
 * on a fake struct sl_shm in heap memory. No EAL.
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

#include "sl_dispatch.h"
#include "sl_lb.h"

#define MAX_NFS 16
#define MAX_SVC 4

struct fake_shm {
	struct sl_shm *shm;
	uint16_t live[MAX_SVC][MAX_NFS];
};

static void *
zalloc_aligned(size_t size)
{
	size_t sz = RTE_ALIGN_CEIL(size, SL_CACHE_LINE);
	void *p = aligned_alloc(SL_CACHE_LINE, sz);

	assert_non_null(p);
	memset(p, 0, sz);
	return p;
}

static int
setup(void **state)
{
	struct fake_shm *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->shm = zalloc_aligned(sizeof(*f->shm));
	f->shm->max_nfs = MAX_NFS;
	f->shm->max_services = MAX_SVC;
	f->shm->nfs = zalloc_aligned(sizeof(struct sl_nf_slot) * MAX_NFS);
	f->shm->services = zalloc_aligned(sizeof(struct sl_service) * MAX_SVC);
	for (uint16_t s = 0; s < MAX_SVC; s++) {
		f->shm->services[s].used = 1;
		f->shm->services[s].live = f->live[s];
	}
	for (uint16_t i = 0; i < MAX_NFS; i++)
		f->shm->nfs[i].instance = i;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fake_shm *f = *state;

	free(f->shm->nfs);
	free(f->shm->services);
	free(f->shm);
	free(f);
	return 0;
}

/* Sets the live instances of service s (all RUNNING) and rebuilds. */
static void
set_live(struct fake_shm *f, uint16_t s, int n, const uint16_t *ids)
{
	struct sl_service *svc = &f->shm->services[s];

	for (int k = 0; k < n; k++) {
		svc->live[k] = ids[k];
		f->shm->nfs[ids[k]].state = SL_NF_RUNNING;
		f->shm->nfs[ids[k]].service = s;
	}
	svc->n_live = (uint16_t)n;
	sl_lb_rebuild(svc);
}

/* Buckets per instance id; checks every bucket names a live instance. */
static void
count_buckets(const struct sl_service *svc, unsigned *count)
{
	memset(count, 0, sizeof(*count) * MAX_NFS);
	for (int b = 0; b < SL_LB_BUCKETS; b++) {
		int found = 0;

		for (uint16_t k = 0; k < svc->n_live; k++)
			found |= svc->bucket[b] == svc->live[k];
		if (!found)
			fail_msg("bucket %d names instance %u, not live", b,
				 svc->bucket[b]);
		count[svc->bucket[b]]++;
	}
}

/* Fair share: every live instance has 256/n or 256/n + 1 buckets. */
static void
check_fair(const struct sl_service *svc)
{
	unsigned count[MAX_NFS], lo = SL_LB_BUCKETS, hi = 0, sum = 0;

	count_buckets(svc, count);
	for (uint16_t k = 0; k < svc->n_live; k++) {
		unsigned c = count[svc->live[k]];

		lo = c < lo ? c : lo;
		hi = c > hi ? c : hi;
		sum += c;
	}
	assert_int_equal(sum, SL_LB_BUCKETS);
	if (hi - lo > 1)
		fail_msg("unfair with %u instances: %u..%u buckets",
			 svc->n_live, lo, hi);
	assert_int_equal(lo, SL_LB_BUCKETS / svc->n_live);
}

/* ---- sl_lb_rebuild -------------------------------------------------- */

static void
fair_shares(void **state)
{
	struct fake_shm *f = *state;
	/* Instance 0 first: a fresh table (all zero) already names it. */
	static const uint16_t ids[] = {0, 5, 2, 9, 7, 1, 12};
	static const uint16_t others[] = {3, 4, 6, 8, 10, 11, 13};

	for (int n = 1; n <= 7; n++) {
		memset(f->shm->services[0].bucket, 0,
		       sizeof(f->shm->services[0].bucket));
		set_live(f, 0, n, ids);
		check_fair(&f->shm->services[0]);

		memset(f->shm->services[1].bucket, 0,
		       sizeof(f->shm->services[1].bucket));
		set_live(f, 1, n, others);
		check_fair(&f->shm->services[1]);
	}
}

static void
fair_shares_growing(void **state)
{
	/* Instances join one by one (as sluiced does): fair at each step. */
	struct fake_shm *f = *state;
	static const uint16_t ids[] = {3, 4, 6, 8, 10, 11, 13};

	for (int n = 1; n <= 7; n++) {
		set_live(f, 0, n, ids);
		check_fair(&f->shm->services[0]);
	}
	for (int n = 6; n >= 1; n--) {
		set_live(f, 0, n, ids);
		check_fair(&f->shm->services[0]);
	}
}

static void
leave_moves_only_its_buckets(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[0];

	for (int n = 2; n <= 7; n++) {
		static const uint16_t ids[] = {1, 2, 3, 4, 5, 6, 7};

		for (int gone = 0; gone < n; gone++) {
			uint16_t before[SL_LB_BUCKETS], rest[7];
			unsigned moved = 0, count[MAX_NFS];
			int m = 0;

			memset(svc->bucket, 0, sizeof(svc->bucket));
			set_live(f, 0, n, ids);
			memcpy(before, svc->bucket, sizeof(before));
			count_buckets(svc, count);
			/* sluiced's live_remove: last entry into the hole */
			for (int k = 0; k < n; k++)
				rest[k] = ids[k];
			rest[gone] = rest[n - 1];
			m = n - 1;
			f->shm->nfs[ids[gone]].state = SL_NF_STOPPING;
			set_live(f, 0, m, rest);
			for (int b = 0; b < SL_LB_BUCKETS; b++) {
				if (before[b] == ids[gone]) {
					assert_int_not_equal(svc->bucket[b],
							     ids[gone]);
					moved++;
				} else if (svc->bucket[b] != before[b]) {
					fail_msg("n=%d, %u left: bucket %d "
						 "moved %u -> %u",
						 n, ids[gone], b, before[b],
						 svc->bucket[b]);
				}
			}
			assert_int_equal(moved, count[ids[gone]]);
			check_fair(svc);
		}
	}
}

static void
join_moves_only_to_newcomer(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[0];
	static const uint16_t ids[] = {1, 2, 3, 4, 5, 6, 7};

	memset(svc->bucket, 0, sizeof(svc->bucket));
	set_live(f, 0, 1, ids);
	for (int n = 2; n <= 7; n++) {
		uint16_t before[SL_LB_BUCKETS], newcomer = ids[n - 1];
		unsigned changed = 0, count[MAX_NFS];

		memcpy(before, svc->bucket, sizeof(before));
		set_live(f, 0, n, ids);
		count_buckets(svc, count);
		for (int b = 0; b < SL_LB_BUCKETS; b++) {
			if (svc->bucket[b] == before[b])
				continue;
			if (svc->bucket[b] != newcomer)
				fail_msg("n=%d: bucket %d moved %u -> %u, not "
					 "to the newcomer %u",
					 n, b, before[b], svc->bucket[b],
					 newcomer);
			changed++;
		}
		/* The newcomer is last in live[]: quota 256 / n. */
		assert_int_equal(changed, SL_LB_BUCKETS / n);
		assert_int_equal(count[newcomer], changed);
		check_fair(svc);
	}
}

static void
rebuild_is_idempotent(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[0];
	static const uint16_t ids[] = {4, 9, 2, 11, 6};
	uint16_t before[SL_LB_BUCKETS];

	set_live(f, 0, 5, ids);
	memcpy(before, svc->bucket, sizeof(before));
	sl_lb_rebuild(svc);
	assert_memory_equal(before, svc->bucket, sizeof(before));
}

static void
rebuild_no_live_keeps_table(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[0];
	static const uint16_t ids[] = {4, 9};
	uint16_t before[SL_LB_BUCKETS];

	set_live(f, 0, 2, ids);
	memcpy(before, svc->bucket, sizeof(before));
	set_live(f, 0, 0, ids);
	assert_memory_equal(before, svc->bucket, sizeof(before));
	/* The next instance to join takes every bucket. */
	static const uint16_t next[] = {13};
	set_live(f, 0, 1, next);
	for (int b = 0; b < SL_LB_BUCKETS; b++)
		assert_int_equal(svc->bucket[b], 13);
}

/* ---- sl_lb_pick ----------------------------------------------------- */

static void
pick_follows_bucket(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[2];
	static const uint16_t ids[] = {3, 8, 5};
	uint32_t rr = 0;

	set_live(f, 2, 3, ids);
	for (uint32_t h = 0; h < 4096; h++) {
		uint16_t inst = sl_lb_pick(f->shm, 2, h, &rr);

		assert_int_equal(inst, svc->bucket[h & (SL_LB_BUCKETS - 1)]);
		/* stable: the same hash gives the same instance */
		assert_int_equal(sl_lb_pick(f->shm, 2, h, &rr), inst);
		/* only the low bits of the hash choose the bucket */
		assert_int_equal(sl_lb_pick(f->shm, 2, h | 0xabcd0000u, &rr),
				 inst);
	}
	assert_int_equal(rr, 0); /* flow mode never touches rr */
}

static void
pick_single_instance(void **state)
{
	struct fake_shm *f = *state;
	static const uint16_t ids[] = {6};
	uint32_t rr = 0;

	set_live(f, 1, 1, ids);
	for (uint32_t h = 0; h < 1000; h += 7)
		assert_int_equal(sl_lb_pick(f->shm, 1, h, &rr), 6);
	f->shm->services[1].lb_mode = SL_LB_RR;
	for (int i = 0; i < 5; i++)
		assert_int_equal(sl_lb_pick(f->shm, 1, 0, &rr), 6);
}

static void
pick_bucket_not_running_falls_back(void **state)
{
	struct fake_shm *f = *state;
	struct sl_service *svc = &f->shm->services[0];
	static const uint16_t ids[] = {2, 7, 9};
	static const uint32_t states[] = {SL_NF_FREE, SL_NF_STOPPING,
					  SL_NF_DEAD};
	uint32_t rr = 0;

	set_live(f, 0, 3, ids);
	/* Instance 7 is leaving, its buckets not yet handed out. */
	for (size_t i = 0; i < RTE_DIM(states); i++) {
		f->shm->nfs[7].state = states[i];
		for (uint32_t h = 0; h < 2048; h++) {
			uint16_t b = svc->bucket[h & (SL_LB_BUCKETS - 1)];
			uint16_t inst = sl_lb_pick(f->shm, 0, h, &rr);

			if (b == 7) {
				/* stable choice among the live entries */
				assert_int_equal(inst, ids[h % 3]);
			} else {
				assert_int_equal(inst, b);
			}
		}
	}
	/* A bucket naming an id beyond max_nfs falls back too. */
	f->shm->nfs[7].state = SL_NF_RUNNING;
	svc->bucket[5] = MAX_NFS;
	assert_int_equal(sl_lb_pick(f->shm, 0, 5, &rr), ids[5 % 3]);
	svc->bucket[5] = SL_INSTANCE_NONE;
	assert_int_equal(sl_lb_pick(f->shm, 0, 5 + 256, &rr), ids[261 % 3]);
}

static void
pick_round_robin(void **state)
{
	struct fake_shm *f = *state;
	static const uint16_t ids[] = {10, 3, 8, 1};
	uint32_t rr = 0, rr2 = 0;

	set_live(f, 3, 4, ids);
	f->shm->services[3].lb_mode = SL_LB_RR;
	for (int i = 0; i < 12; i++) {
		/* the hash does not matter; live[] order does */
		assert_int_equal(sl_lb_pick(f->shm, 3, 0x1234, &rr),
				 ids[i % 4]);
	}
	assert_int_equal(rr, 12);
	/* Counters are per producer: a second one starts from live[0]. */
	assert_int_equal(sl_lb_pick(f->shm, 3, 0, &rr2), ids[0]);
	assert_int_equal(sl_lb_pick(f->shm, 3, 0, &rr), ids[0]);
	/* An instance leaves: the cycle covers the remaining ones. */
	static const uint16_t three[] = {10, 1, 8};
	set_live(f, 3, 3, three);
	rr = 0;
	for (int i = 0; i < 9; i++)
		assert_int_equal(sl_lb_pick(f->shm, 3, 0, &rr), three[i % 3]);
}

static void
pick_no_live_instance(void **state)
{
	struct fake_shm *f = *state;
	static const uint16_t ids[] = {4, 5};
	uint32_t rr = 0;

	set_live(f, 0, 2, ids);
	set_live(f, 0, 0, ids);
	for (uint32_t h = 0; h < 512; h += 3)
		assert_int_equal(sl_lb_pick(f->shm, 0, h, &rr),
				 SL_INSTANCE_NONE);
	f->shm->services[0].lb_mode = SL_LB_RR;
	assert_int_equal(sl_lb_pick(f->shm, 0, 0, &rr), SL_INSTANCE_NONE);
	assert_int_equal(rr, 0);
}

static void
pick_spread_is_fair(void **state)
{
	/* Uniform hashes spread over instances by their bucket shares. */
	struct fake_shm *f = *state;
	static const uint16_t ids[] = {1, 2, 3};
	unsigned count[MAX_NFS] = {0};
	uint32_t rr = 0;

	set_live(f, 0, 3, ids);
	for (uint32_t h = 0; h < 3 * SL_LB_BUCKETS; h++)
		count[sl_lb_pick(f->shm, 0, h, &rr)]++;
	/* 86, 85, 85 buckets, each hit 3 times */
	assert_int_equal(count[1], 86 * 3);
	assert_int_equal(count[2], 85 * 3);
	assert_int_equal(count[3], 85 * 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fair_shares, setup, teardown),
		cmocka_unit_test_setup_teardown(fair_shares_growing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(leave_moves_only_its_buckets,
						setup, teardown),
		cmocka_unit_test_setup_teardown(join_moves_only_to_newcomer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(rebuild_is_idempotent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rebuild_no_live_keeps_table,
						setup, teardown),
		cmocka_unit_test_setup_teardown(pick_follows_bucket, setup,
						teardown),
		cmocka_unit_test_setup_teardown(pick_single_instance, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			pick_bucket_not_running_falls_back, setup, teardown),
		cmocka_unit_test_setup_teardown(pick_round_robin, setup,
						teardown),
		cmocka_unit_test_setup_teardown(pick_no_live_instance, setup,
						teardown),
		cmocka_unit_test_setup_teardown(pick_spread_is_fair, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("lb", tests, NULL, NULL);
}
