/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's cross-layer requests (src/mgr/requests/),
 * linked from the static library sluiced_mgr on a real EAL (mgr_env.h):
 * a request for one flow written into its entry's overrides, one refused
 * with the entry unchanged, and a wildcard request applied to the live
 * flows, kept for new ones and withdrawn.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pkt_build.h"
#include "mgr_env.h"

#define A IP4(10, 0, 0, 1)
#define B IP4(10, 0, 0, 2)

static int
group_setup(void **state)
{
	(void)state;
	return env_eal_setup("mgr_requests");
}

/* A new flow (A:sport > B:80): its entry's position. */
static uint32_t
new_flow(struct env *e, uint16_t sport)
{
	struct rte_mbuf *p = env_udp(A, sport, B, 80);
	uint32_t pos;

	mgr_flow_ingress(e->m->flow, e->shm, &p, 1);
	pos = env_meta(p)->flow;
	rte_pktmbuf_free(p);
	assert_int_not_equal(pos, SL_FLOW_NONE);
	return pos;
}

/* The entry's override of service s of kind, or 0 (none). */
static uint64_t
ovr_of(struct env *e, uint32_t pos, uint16_t s, uint8_t kind)
{
	struct sl_flow_entry *en = sl_flow_entry(e->shm, pos);
	union sl_flow_ovr *o = sl_flow_ovrs(e->shm, en);

	for (uint16_t k = 0; k < e->shm->flow.n_ovr; k++)
		if (o[k].f.kind == kind && o[k].f.service == s)
			return o[k].u64;
	return 0;
}

static struct sl_req
exact(uint32_t kind, uint16_t service, uint16_t sport)
{
	struct sl_req r = {.kind = kind, .exact = 1, .service = service};

	r.tuple.family = 4;
	r.tuple.proto = IPPROTO_UDP;
	r.tuple.src.v4 = htonl(A);
	r.tuple.dst.v4 = htonl(B);
	r.tuple.sport = htons(sport);
	r.tuple.dport = htons(80);
	return r;
}

/* SkipMe and ChangeDefault on one flow: written into its overrides. */
static void
test_exact_applied(void **state)
{
	struct env *e = env_new(1024, 10000);
	uint32_t pos = new_flow(e, 5000), applied, kept;
	struct sl_req r = exact(SL_REQ_SKIP_ME, 0, 5000);
	union sl_flow_ovr v;
	char err[256];

	(void)state;
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 0);
	assert_int_equal(applied, 1);
	assert_int_equal(kept, 0);
	assert_int_not_equal(ovr_of(e, pos, 0, SL_OVR_SKIP), 0);
	r = exact(SL_REQ_CHANGE_DEFAULT, 1, 5000);
	r.to = SL_HOP_PORT(1);
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 0);
	v.u64 = ovr_of(e, pos, 1, SL_OVR_DEFAULT);
	assert_int_equal(v.f.hop, SL_HOP_PORT(1));
	assert_int_equal(sl_flow_entry(e->shm, pos)->n_ovr, 2);
	env_free(e);
}

/* Refused: the entry is unchanged and err says why. */
static void
test_exact_refused(void **state)
{
	struct env *e = env_new(1024, 10000);
	uint32_t pos = new_flow(e, 5001), applied, kept;
	struct sl_req r = exact(SL_REQ_CHANGE_DEFAULT, 1, 5001);
	char err[256];

	(void)state;
	r.to = SL_HOP_SERVICE(0); /* a -> b along the chain: a loop */
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 EINVAL);
	assert_non_null(strstr(err, "round a loop"));
	assert_int_equal(applied, 0);
	assert_int_equal(sl_flow_entry(e->shm, pos)->n_ovr, 0);
	r = exact(SL_REQ_SKIP_ME, 0, 9999); /* no such flow */
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 ENOENT);
	r.service = 3; /* not used */
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 ENOENT);
	assert_string_equal(err, "no such service (id 3)");
	env_free(e);
}

/* A wildcard: applied to the live flows it matches, kept (once) for new
 * ones until removed; the replaced set waits for a grace period. */
static void
test_wildcard(void **state)
{
	struct env *e = env_new(1024, 10000);
	uint32_t live = new_flow(e, 6000), applied, kept, again, later;
	struct sl_req r = {.kind = SL_REQ_SKIP_ME, .service = 1};
	char err[256];

	(void)state;
	assert_int_equal(sl_match_parse("proto=udp dport=80", &r.match, err,
					sizeof(err)),
			 0);
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &kept, err,
					  sizeof(err)),
			 0);
	assert_int_equal(applied, 1);
	assert_int_equal(kept, 1);
	assert_int_not_equal(ovr_of(e, live, 1, SL_OVR_SKIP), 0);
	later = new_flow(e, 6001); /* created with it */
	assert_int_not_equal(ovr_of(e, later, 1, SL_OVR_SKIP), 0);
	assert_int_equal(mgr_flow_request(e->m, &r, &applied, &again, err,
					  sizeof(err)),
			 0);
	assert_int_equal(again, 1); /* the same request: kept once */
	assert_int_equal(e->m->flow->wild->n, 1);
	assert_int_equal(mgr_flow_request_remove(e->m, 1, err, sizeof(err)), 0);
	assert_int_equal(e->m->flow->wild->n, 0);
	assert_non_null(e->m->qs.head); /* the old set, after a grace period */
	later = new_flow(e, 6002);
	assert_int_equal(ovr_of(e, later, 1, SL_OVR_SKIP), 0);
	assert_int_equal(mgr_flow_request_remove(e->m, 1, err, sizeof(err)),
			 ENOENT);
	env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_applied),
		cmocka_unit_test(test_exact_refused),
		cmocka_unit_test(test_wildcard),
	};

	return cmocka_run_group_tests(tests, group_setup, env_eal_teardown);
}
