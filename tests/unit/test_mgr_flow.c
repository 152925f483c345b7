/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's flow table (src/mgr/flow/), linked from the
 * static library sluiced_mgr on a real EAL (mgr_env.h): ingress creates
 * and finds entries, counts hits and a full table's drops, the RX
 * thread's upkeep ages idle flows out and removes the deleted ones.
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
	return env_eal_setup("mgr_flow");
}

static void
free_burst(struct rte_mbuf **p, uint16_t n)
{
	rte_pktmbuf_free_bulk(p, n);
}

/* Ticks the RX thread's upkeep ms milliseconds on from its last tick. */
static void
maintain_ms(struct env *e, uint64_t *now, uint32_t ms)
{
	for (uint32_t i = 0; i < ms; i++) {
		*now += e->shm->ms_hz;
		mgr_flow_maintain(e->m->flow, e->shm, *now);
	}
}

/* A burst of two flows, one of them both ways: two entries; the same
 * flow's packets (either direction) share one, counted once per run. */
static void
test_insert_lookup(void **state)
{
	struct env *e = env_new(1024, 10000);
	struct sl_flow_table *ft = &e->shm->flow;
	struct rte_mbuf *p[4];
	struct sl_5tuple t = {0};
	uint32_t pos;

	(void)state;
	p[0] = env_udp(A, 1000, B, 53);
	p[1] = env_udp(A, 1000, B, 53);
	p[2] = env_udp(B, 53, A, 1000); /* the reply */
	p[3] = env_udp(A, 1001, B, 53);
	mgr_flow_ingress(e->m->flow, e->shm, p, 4);
	assert_int_equal(ft->st.created, 2);
	assert_int_equal(ft->n_live, 2);
	assert_int_equal(ft->st.lookups, 4);
	assert_int_not_equal(env_meta(p[0])->flow, SL_FLOW_NONE);
	assert_int_equal(env_meta(p[1])->flow, env_meta(p[0])->flow);
	assert_int_equal(env_meta(p[2])->flow, env_meta(p[0])->flow);
	assert_int_not_equal(env_meta(p[3])->flow, env_meta(p[0])->flow);
	for (int i = 0; i < 4; i++) {
		assert_true(env_meta(p[i])->flags & SL_META_GRAPH);
		assert_int_equal(env_meta(p[i])->graph,
				 sl_graph_current(e->shm, 0));
	}
	assert_int_equal(sl_flow_entry(e->shm, env_meta(p[0])->flow)->pkts, 3);

	/* The control thread finds it by its 5-tuple (either direction). */
	assert_int_equal(sl_pkt_flow_tuple(p[2], &t), 0);
	assert_int_equal(mgr_flow_find(e->m, &t, &pos), 0);
	assert_int_equal(pos, env_meta(p[0])->flow);
	free_burst(p, 4);

	/* Again: hits, nothing created. */
	p[0] = env_udp(A, 1001, B, 53);
	mgr_flow_ingress(e->m->flow, e->shm, p, 1);
	assert_int_equal(ft->st.created, 2);
	assert_int_equal(
		ft->st.hits,
		3); /* 2 in the first burst: created by an earlier packet */
	assert_int_equal(sl_flow_entry(e->shm, env_meta(p[0])->flow)->pkts, 2);
	free_burst(p, 1);
	env_free(e);
}

/* A full table: the flows beyond --flow-capacity are counted
 * (table_full) and go on by their graph, without an entry. */
static void
test_table_full(void **state)
{
	struct env *e = env_new(16, 10000);
	struct sl_flow_table *ft = &e->shm->flow;
	struct rte_mbuf *p[20];

	(void)state;
	for (uint16_t i = 0; i < 20; i++)
		p[i] = env_udp(A, (uint16_t)(2000 + i), B, 80);
	mgr_flow_ingress(e->m->flow, e->shm, p, 20);
	assert_int_equal(ft->n_live, 16);
	assert_int_equal(ft->st.created, 16);
	assert_int_equal(ft->st.table_full, 4);
	for (uint16_t i = 16; i < 20; i++) {
		assert_int_equal(env_meta(p[i])->flow, SL_FLOW_NONE);
		assert_true(env_meta(p[i])->flags & SL_META_GRAPH);
		assert_int_equal(env_meta(p[i])->graph,
				 sl_graph_current(e->shm, 0));
	}
	free_burst(p, 20);
	env_free(e);
}

/* Idle flows age out after --flow-timeout; a flow seen meanwhile stays;
 * their positions are recycled after a grace period. */
static void
test_age(void **state)
{
	struct env *e = env_new(1024, 20);
	struct sl_flow_table *ft = &e->shm->flow;
	struct rte_mbuf *p[2];
	uint64_t now = rte_rdtsc();

	(void)state;
	mgr_flow_maintain(e->m->flow, e->shm, now);
	p[0] = env_udp(A, 3000, B, 80);
	p[1] = env_udp(A, 3001, B, 80);
	mgr_flow_ingress(e->m->flow, e->shm, p, 2);
	free_burst(p, 2);
	assert_int_equal(ft->n_live, 2);
	maintain_ms(e, &now, 15);
	assert_int_equal(ft->n_live, 2);
	p[0] = env_udp(A, 3001, B, 80); /* seen again at 15 ms */
	mgr_flow_ingress(e->m->flow, e->shm, p, 1);
	free_burst(p, 1);
	/* At 33 ms: the other idle for 33 (swept twice per timeout, so out
	 * by 30), this one for 18. */
	maintain_ms(e, &now, 18);
	assert_int_equal(ft->st.aged, 1);
	assert_int_equal(ft->n_live, 1);
	maintain_ms(e, &now, 20);
	assert_int_equal(ft->st.aged, 2);
	assert_int_equal(ft->n_live, 0);
	/* The half-full limbo batch closed after 10 ms; recycled once its
	 * grace period passed. */
	assert_true(e->m->flow->n_closed > 0);
	env_grace_pass(e);
	maintain_ms(e, &now, 1);
	assert_int_equal(e->m->flow->n_closed, 0);
	env_free(e);
}

/* flow.delete marks entries; the RX thread removes them at its next
 * tick, and the flow's next packet starts a new flow. */
static void
test_delete(void **state)
{
	struct env *e = env_new(1024, 10000);
	struct sl_flow_table *ft = &e->shm->flow;
	struct rte_mbuf *p[1];
	uint64_t now = rte_rdtsc();
	uint32_t pos;

	(void)state;
	p[0] = env_udp(A, 4000, B, 80);
	mgr_flow_ingress(e->m->flow, e->shm, p, 1);
	pos = env_meta(p[0])->flow;
	free_burst(p, 1);
	assert_int_equal(mgr_flows_delete(e->m, NULL, (int64_t)pos), 1);
	assert_int_equal(e->m->flow->del_marked, 1);
	assert_int_equal(sl_flow_entry(e->shm, pos)->state, SL_FLOW_DELETE);
	maintain_ms(e, &now, 1);
	assert_int_equal(ft->st.deleted, 1);
	assert_int_equal(ft->n_live, 0);
	assert_int_equal(e->m->flow->del_marked, 0);
	p[0] = env_udp(A, 4000, B, 80);
	mgr_flow_ingress(e->m->flow, e->shm, p, 1);
	assert_int_equal(ft->st.created, 2);
	free_burst(p, 1);
	env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_lookup),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_delete),
	};

	return cmocka_run_group_tests(tests, group_setup, env_eal_teardown);
}
