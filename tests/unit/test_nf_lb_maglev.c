/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb's Maglev table (nfs/lb/maglev.c) alone, with numbers: the
 * spread by weight, what moves when a backend leaves or joins, order
 * independence, weight 0. The NF around it: test_nf_lb.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "maglev.h"

#define M 65537
static uint16_t t0[M], t1[M];

static void
names(struct lb_maglev_in *in, char (*nm)[12], unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		snprintf(nm[i], 12, "b%u", i + 1);
		in[i].name = nm[i];
		in[i].weight = 1;
		in[i].id = (uint16_t)i;
	}
}

/*
 * Numbers (M = 65537): N equal backends get M/N entries each to within 1;
 * weights 1:2:3 get M/6, M/3, M/2 to within 1 (10923, 21846, 32768);
 * removing one of N (3 to 8) moves its entries and changes at most 1% of
 * the others' (34 of 43691 for N = 3, 284 of 56174 for N = 7); adding one
 * moves M/(N+1) entries to it, to within N, and at most 1% of M more
 * between the others (77 for N = 3 -> 4). The order of the backends does
 * not matter.
 */
static void
test_maglev_properties(void **state)
{
	struct lb_maglev_in in[9], r[9];
	char nm[9][12];
	uint32_t scratch[9], cnt[9];
	unsigned n, i, j, k;

	(void)state;
	assert_true(lb_is_prime(65537) && lb_is_prime(2) && lb_is_prime(3));
	assert_false(lb_is_prime(65536) || lb_is_prime(1) || lb_is_prime(9));
	for (n = 3; n <= 8; n++) {
		unsigned gone = 0, others = 0, to_new = 0, moved = 0;

		names(in, nm, n + 1);
		assert_int_equal(lb_maglev_populate(in, n, t0, M, scratch), n);
		memset(cnt, 0, sizeof(cnt));
		for (j = 0; j < M; j++)
			cnt[t0[j]]++;
		for (i = 0; i < n; i++)
			assert_true(cnt[i] >= M / n && cnt[i] <= M / n + 1);
		/* Without b2 (id 1). */
		for (i = 0, k = 0; i < n; i++)
			if (i != 1)
				r[k++] = in[i];
		lb_maglev_populate(r, k, t1, M, scratch);
		for (j = 0; j < M; j++) {
			assert_int_not_equal(t1[j], 1);
			if (t0[j] == 1)
				gone++;
			else if (t1[j] != t0[j])
				others++;
		}
		assert_int_equal(gone, cnt[1]);
		assert_true(others * 100 < M - cnt[1]);
		/* With one more. */
		lb_maglev_populate(in, n + 1, t1, M, scratch);
		for (j = 0; j < M; j++) {
			if (t1[j] == n)
				to_new++;
			else if (t1[j] != t0[j])
				moved++;
		}
		assert_true(to_new + n >= M / (n + 1) &&
			    to_new <= M / (n + 1) + n);
		assert_true(moved * 100 < M);
		print_message("maglev N=%u: remove one: %u entries of it move, "
			      "%u of the others'; add one: %u to it, %u "
			      "between the others\n",
			      n, gone, others, to_new, moved);
	}
	/* Weights 1:2:3; the same table whatever the order. */
	names(in, nm, 3);
	in[1].weight = 2;
	in[2].weight = 3;
	lb_maglev_populate(in, 3, t0, M, scratch);
	memset(cnt, 0, sizeof(cnt));
	for (j = 0; j < M; j++)
		cnt[t0[j]]++;
	assert_true(cnt[0] >= M / 6 && cnt[0] <= M / 6 + 1);
	assert_true(cnt[1] >= M / 3 && cnt[1] <= M / 3 + 1);
	assert_true(cnt[2] >= M / 2 && cnt[2] <= M / 2 + 1);
	r[0] = in[2];
	r[1] = in[0];
	r[2] = in[1];
	lb_maglev_populate(r, 3, t1, M, scratch);
	assert_memory_equal(t0, t1, sizeof(t0));
	/* Weight 0 takes nothing; no weight at all: every entry NONE. */
	in[1].weight = 0;
	assert_int_equal(lb_maglev_populate(in, 3, t0, M, scratch), 2);
	for (j = 0; j < M; j++)
		assert_int_not_equal(t0[j], 1);
	in[0].weight = in[2].weight = 0;
	assert_int_equal(lb_maglev_populate(in, 3, t0, M, scratch), 0);
	for (j = 0; j < M; j++)
		assert_int_equal(t0[j], LB_MAGLEV_NONE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maglev_properties),
	};

	return cmocka_run_group_tests_name("nf_lb_maglev", tests, NULL, NULL);
}
