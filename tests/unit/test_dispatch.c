/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of verdict validation and hand-off (src/common/sl_dispatch.c):
 * NEXT, TO, OUT and DROP, and the group's list of every test. The fake
 * node they run on is in dispatch_env.c; the other tests are in
 * test_dispatch_handoff.c.
 */
#include "dispatch_env.h"

/* ---- NEXT ----------------------------------------------------------- */

static void
next_follows_chain(void **state)
{
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	struct rte_mbuf *p[3], *got[8];
	uint16_t inst;

	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 0x11, 60); /* ingress: first */
	p[1] = mk(SL_NEXT, 0, 0x22, 70);               /* fw -> mon */
	p[2] = mk(SL_NEXT, 1, 0x33, 80);               /* mon -> port 0 */
	assert_int_equal(sl_dispatch(&e->d, p, 3), 0);
	assert_int_equal(sl_dispatch_pending(&e->d), 0);

	assert_int_equal(take_rx(e, 0, got, 4), 1);
	assert_ptr_equal(got[0], p[0]);
	check_meta(p[0], SL_NEXT, 0, SELF_OWNER, 0x11);

	inst = mon->bucket[0x22];
	assert_true(inst == 1 || inst == 2);
	assert_int_equal(take_rx(e, inst, got, 4), 1);
	assert_int_equal(take_rx(e, (uint16_t)(3 - inst), got + 1, 4), 0);
	assert_ptr_equal(got[0], p[1]);
	check_meta(p[1], SL_NEXT, 1, SELF_OWNER, 0x22);

	assert_int_equal(g_port.calls, 1);
	assert_int_equal(g_port.port[0], 0);
	assert_int_equal(g_port.n_got, 1);
	assert_ptr_equal(g_port.got[0], p[2]);
	/* A resolved port is written into the verdict (the transmitter
	 * must not re-resolve against a newer chain); the tag is port_out's. */
	check_meta(p[2], SL_OUT(0), 1, SELF_OWNER, 0x33);

	check_drops(e, SL_DROP_NF_VERDICT, 0);
	assert_int_equal(e->stats.tx_pkts, 2);
	assert_int_equal(e->stats.tx_bytes, 60 + 70);
	rte_pktmbuf_free(got[0]);
	rte_pktmbuf_free(p[0]);
}

static void
next_flow_sticky_spreads(void **state)
{
	/* NEXT from fw to mon: each packet goes to its bucket's instance;
	 * both instances get some. */
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	struct rte_mbuf *p[BURST], *got[BURST];
	unsigned n1, n2, want1 = 0;

	for (int i = 0; i < BURST; i++) {
		p[i] = mk(SL_NEXT, 0, (uint32_t)i * 2654435761u, 64);
		want1 += mon->bucket[((uint32_t)i * 2654435761u) & 255] == 1;
	}
	assert_int_equal(sl_dispatch(&e->d, p, BURST), 0);
	n1 = take_rx(e, 1, got, BURST);
	assert_int_equal(n1, want1);
	for (unsigned i = 0; i < n1; i++) {
		check_meta(got[i], SL_NEXT, 1, SELF_OWNER,
			   meta(got[i])->flow_hash);
		assert_int_equal(mon->bucket[meta(got[i])->flow_hash & 255], 1);
	}
	rte_pktmbuf_free_bulk(got, n1);
	n2 = take_rx(e, 2, got, BURST);
	assert_int_equal(n1 + n2, BURST);
	assert_true(n1 > 0 && n2 > 0);
	for (unsigned i = 0; i < n2; i++)
		check_meta(got[i], SL_NEXT, 1, SELF_OWNER,
			   meta(got[i])->flow_hash);
	rte_pktmbuf_free_bulk(got, n2);
	assert_int_equal(e->stats.tx_pkts, BURST);
	assert_int_equal(e->stats.tx_bytes, BURST * 64);
}

static void
next_graph_drop_and_end(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[4];

	p[0] = mk(SL_NEXT, 2, 1, 64); /* next[empty] = drop */
	p[1] = mk(SL_NEXT, 2, 2, 64);
	p[2] = mk(SL_NEXT, 3, 3, 64);       /* next[3] = none */
	p[3] = mk(SL_NEXT, MAX_SVC, 4, 64); /* a node beyond max_services */
	assert_int_equal(sl_dispatch(&e->d, p, 4), 0);
	assert_int_equal(e->stats.drop[SL_DROP_GRAPH], 2);
	assert_int_equal(e->stats.drop[SL_DROP_END_OF_CHAIN], 1);
	assert_int_equal(e->stats.drop[SL_DROP_INVALID_DEST], 1);
	assert_int_equal(drops_total(e), 4);
	assert_int_equal(e->stats.tx_pkts, 0);
	assert_int_equal(e->stats.tx_bytes, 0);
	check_pool_full();
	/* Freed packets are held by nobody. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(meta(p[i])->owner, 0);
}

static void
next_without_chain(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[3], *got[2];

	e->shm->gtab[0] = NULL;
	e->graph_cur[0] = SL_GRAPH_NONE;
	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 1, 64);
	p[1] = mk(SL_NEXT, 0, 2, 64);
	p[2] = mk(SL_TO(0), 1, 3, 100); /* TO does not need the chain */
	assert_int_equal(sl_dispatch(&e->d, p, 3), 0);
	check_drops(e, SL_DROP_END_OF_CHAIN, 2);
	assert_int_equal(meta(p[0])->owner, 0);
	assert_int_equal(meta(p[1])->owner, 0);
	assert_int_equal(take_rx(e, 0, got, 2), 1);
	assert_ptr_equal(got[0], p[2]);
	check_meta(p[2], SL_NEXT, 0, SELF_OWNER, 3);
	assert_int_equal(e->stats.tx_pkts, 1);
	assert_int_equal(e->stats.tx_bytes, 100);
	assert_int_equal(rte_mempool_avail_count(g_pool), g_pool_full - 1);
	rte_pktmbuf_free(got[0]);
}

/* ---- TO ------------------------------------------------------------- */

static void
to_valid_service(void **state)
{
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	struct rte_mbuf *p[2], *got[2];
	uint16_t inst;

	p[0] = mk(SL_TO(1), 0, 0x5, 90);
	p[1] = mk(SL_TO(0), 1, 0x6, 91); /* back to fw: any edge is taken */
	assert_int_equal(sl_dispatch(&e->d, p, 2), 0);
	inst = mon->bucket[5];
	assert_int_equal(take_rx(e, inst, got, 2), 1);
	assert_ptr_equal(got[0], p[0]);
	/* Reset for the receiver: NEXT, at the target, held by it. */
	check_meta(p[0], SL_NEXT, 1, SELF_OWNER, 0x5);
	assert_int_equal(take_rx(e, 0, got + 1, 2), 1);
	assert_ptr_equal(got[1], p[1]);
	check_meta(p[1], SL_NEXT, 0, SELF_OWNER, 0x6);
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(e->stats.tx_pkts, 2);
	assert_int_equal(e->stats.tx_bytes, 181);
	rte_pktmbuf_free_bulk(got, 2);
}

static void
to_invalid_service(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[4];

	p[0] = mk(SL_TO(MAX_SVC), 0, 1, 64);         /* out of range */
	p[1] = mk(SL_TO(SL_SERVICE_NONE), 0, 2, 64); /* way out of range */
	p[2] = mk(SL_TO(3), 0, 3, 64);               /* not used */
	p[3] = mk(SL_TO(3), 0, 4, 64);
	assert_int_equal(rte_mempool_avail_count(g_pool), g_pool_full - 4);
	assert_int_equal(sl_dispatch(&e->d, p, 4), 0);
	check_drops(e, SL_DROP_INVALID_DEST, 4);
	check_pool_full();
	for (int i = 0; i < 4; i++)
		assert_int_equal(meta(p[i])->owner, 0);
	assert_int_equal(e->stats.tx_pkts, 0);
	for (uint16_t i = 0; i < MAX_NFS; i++)
		assert_int_equal(rte_ring_count(rx_of(e, i)), 0);
}

static void
to_service_without_instance(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[2];

	p[0] = mk(SL_TO(2), 0, 1, 64);
	p[1] = mk(SL_TO(2), 0, 2, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 0);
	check_drops(e, SL_DROP_NO_INSTANCE, 2);
	check_pool_full();
	assert_int_equal(meta(p[0])->owner, 0);
	assert_int_equal(meta(p[1])->owner, 0);
}

static void
to_round_robin(void **state)
{
	/* RR on mon: packets alternate between instances 1 and 2, each its
	 * own run, in order within each ring. */
	struct env *e = *state;
	struct rte_mbuf *p[6], *got[6];

	e->shm->services[1].lb_mode = SL_LB_RR;
	for (int i = 0; i < 6; i++)
		p[i] = mk(SL_TO(1), 0, 0x77, (uint16_t)(64 + i));
	assert_int_equal(sl_dispatch(&e->d, p, 6), 0);
	assert_int_equal(take_rx(e, 1, got, 6), 3);
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(got[i], p[2 * i]);
		check_meta(got[i], SL_NEXT, 1, SELF_OWNER, 0x77);
	}
	rte_pktmbuf_free_bulk(got, 3);
	assert_int_equal(take_rx(e, 2, got, 6), 3);
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(got[i], p[2 * i + 1]);
		check_meta(got[i], SL_NEXT, 1, SELF_OWNER, 0x77);
	}
	rte_pktmbuf_free_bulk(got, 3);
	assert_int_equal(e->d.rr[1], 6);
	assert_int_equal(e->stats.tx_pkts, 6);
	assert_int_equal(e->stats.tx_bytes, 6 * 64 + 15);
}

/* Puts n dummies at the tail of instance inst's rx ring. */
static void
add_dummies(struct env *e, uint16_t inst, unsigned n)
{
	void *objs[RING_CAP];

	for (unsigned i = 0; i < n; i++)
		objs[i] = &g_dummy[i];
	assert_int_equal(rte_ring_enqueue_bulk(rx_of(e, inst), objs, n, NULL),
			 n);
}

/* Takes the n packets at the head of instance inst's rx ring: exactly
 * p[0..n) in order, now held by inst; frees them. */
static void
take_exactly(struct env *e, uint16_t inst, struct rte_mbuf **p, unsigned n)
{
	struct rte_mbuf *got[SL_BURST_MAX];

	assert_int_equal(rte_ring_dequeue_bulk(rx_of(e, inst), (void **)got, n,
					       NULL),
			 n);
	for (unsigned i = 0; i < n; i++) {
		assert_ptr_equal(got[i], p[i]);
		check_meta(got[i], SL_NEXT, 1, SELF_OWNER,
			   meta(got[i])->flow_hash);
	}
	rte_pktmbuf_free_bulk(got, n);
}

static void
to_shortest_queue(void **state)
{
	/*
	 * Shortest queue on mon (instances 1, 2), flow table off (no entry,
	 * no pins): whatever their hashes, packets go to the instance whose
	 * rx ring holds fewer packets, as the rings stand when the burst is
	 * resolved; when the other ring becomes the emptier one the choice
	 * flips; on a tie the first live instance (1) wins.
	 */
	struct env *e = *state;
	struct rte_mbuf *p[8], *q[8], *r[4];
	int n1 = 0;

	assert_int_equal(e->shm->flow.lookup, SL_LOOKUP_OFF);
	assert_int_equal(e->shm->flow.n_pins, 0);
	e->shm->services[1].lb_mode = SL_LB_QUEUE;
	add_dummies(e, 1, 10);
	for (int i = 0; i < 8; i++)
		p[i] = mk(SL_TO(1), 0, (uint32_t)i * 2654435761u, 64);
	/* The premise: by their hashes, both instances would get some. */
	for (int i = 0; i < 8; i++)
		n1 += e->shm->services[1].bucket[meta(p[i])->flow_hash & 255] ==
		      1;
	assert_true(n1 > 0 && n1 < 8);
	assert_int_equal(sl_dispatch(&e->d, p, 8), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 1)), 10);
	assert_int_equal(rte_ring_count(rx_of(e, 2)), 8);

	/* 8 < 10: ring 2 is still the emptier one. */
	for (int i = 0; i < 8; i++)
		q[i] = mk(SL_TO(1), 0, (uint32_t)i * 40503u, 65);
	assert_int_equal(sl_dispatch(&e->d, q, 8), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 1)), 10);
	assert_int_equal(rte_ring_count(rx_of(e, 2)), 16);

	/* Now ring 1 (10) is the emptier one: the choice flips. */
	for (int i = 0; i < 4; i++)
		r[i] = mk(SL_TO(1), 0, (uint32_t)i * 2654435761u, 66);
	assert_int_equal(sl_dispatch(&e->d, r, 4), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 1)), 14);
	assert_int_equal(rte_ring_count(rx_of(e, 2)), 16);
	drain_dummies(e, 1, 10);
	take_exactly(e, 1, r, 4);
	take_exactly(e, 2, p, 8);
	take_exactly(e, 2, q, 8);

	/* Fill the other ring instead: everything goes to 2. */
	add_dummies(e, 1, 3);
	for (int i = 0; i < 4; i++)
		r[i] = mk(SL_TO(1), 0, (uint32_t)i * 2654435761u, 67);
	assert_int_equal(sl_dispatch(&e->d, r, 4), 0);
	take_exactly(e, 2, r, 4);
	drain_dummies(e, 1, 3);
	/* Both empty: a tie goes to the first live instance. */
	for (int i = 0; i < 4; i++)
		r[i] = mk(SL_TO(1), 0, (uint32_t)i * 2654435761u, 68);
	assert_int_equal(sl_dispatch(&e->d, r, 4), 0);
	take_exactly(e, 1, r, 4);
	assert_int_equal(rte_ring_count(rx_of(e, 2)), 0);

	assert_int_equal(e->d.rr[1], 0); /* no round robin involved */
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(e->stats.tx_pkts, 8 + 8 + 4 + 4 + 4);
	assert_int_equal(e->stats.tx_bytes,
			 8 * 64 + 8 * 65 + 4 * 66 + 4 * 67 + 4 * 68);
}

static void
to_leaving_instance_falls_back(void **state)
{
	/*
	 * mon has instances 1, 2, 3; 1 leaves. The control thread stops it,
	 * removes it from live[] (last entry into the hole: {3, 2}) and
	 * stores n_live = 2 before it rebuilds the buckets: in that window
	 * a bucket still names 1, and its flows must go to a live instance
	 * (live[h % n_live]), never to 1's ring.
	 */
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	static const uint16_t three[] = {1, 2, 3};
	struct rte_mbuf *p[BURST];
	int n = 0;

	e->shm->nfs[3].state = SL_NF_RUNNING;
	set_live(e, 1, 3, three);
	e->shm->nfs[1].state = SL_NF_STOPPING;
	mon->live[0] = 3;
	mon->n_live = 2;
	for (uint32_t h = 0; h < SL_LB_BUCKETS && n < BURST; h++)
		if (mon->bucket[h] == 1)
			p[n++] = mk(SL_TO(1), 0, h, 64);
	assert_int_equal(n, BURST);
	assert_int_equal(sl_dispatch(&e->d, p, (uint16_t)n), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 1)), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 2)) +
				 rte_ring_count(rx_of(e, 3)),
			 BURST);
	for (int i = 0; i < n; i++)
		check_meta(p[i], SL_NEXT, 1, SELF_OWNER, meta(p[i])->flow_hash);
	for (uint16_t i = 2; i <= 3; i++) {
		struct rte_mbuf *got[BURST];
		unsigned k = take_rx(e, i, got, BURST);

		/* live[h % n_live]: live = {3, 2} */
		for (unsigned j = 0; j < k; j++)
			assert_int_equal(meta(got[j])->flow_hash % 2 == 0 ? 3
									  : 2,
					 i);
		rte_pktmbuf_free_bulk(got, k);
	}
	/* Flows of the other instances do not move. */
	for (uint32_t h = 0; h < SL_LB_BUCKETS; h++) {
		struct rte_mbuf *q[1], *got[1];
		uint16_t b = mon->bucket[h];

		if (b == 1)
			continue;
		q[0] = mk(SL_TO(1), 0, h, 64);
		assert_int_equal(sl_dispatch(&e->d, q, 1), 0);
		assert_int_equal(take_rx(e, b, got, 1), 1);
		assert_ptr_equal(got[0], q[0]);
		rte_pktmbuf_free(got[0]);
	}
}

/* ---- OUT and DROP --------------------------------------------------- */

static void
out_ports(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[7];

	p[0] = mk(SL_OUT(2), 0, 1, 64);            /* unused port */
	p[1] = mk(SL_OUT(SL_MAX_PORTS), 0, 2, 64); /* beyond the table */
	p[2] = mk(SL_OUT(0xffff), 0, 3, 64);
	p[3] = mk(SL_OUT(1), 0, 4, 64); /* not started */
	p[4] = mk(SL_OUT(0), 0, 5, 64); /* ok: one run of 3 */
	p[5] = mk(SL_OUT(0), 0, 6, 65);
	p[6] = mk(SL_OUT(0), 0, 7, 66);
	assert_int_equal(sl_dispatch(&e->d, p, 7), 0);
	assert_int_equal(e->stats.drop[SL_DROP_INVALID_DEST], 3);
	assert_int_equal(e->stats.drop[SL_DROP_PORT_DOWN], 1);
	assert_int_equal(drops_total(e), 4);
	assert_int_equal(g_port.calls, 1);
	assert_int_equal(g_port.port[0], 0);
	assert_int_equal(g_port.run[0], 3);
	assert_int_equal(g_port.n_got, 3);
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(g_port.got[i], p[4 + i]);
		check_meta(p[4 + i], SL_OUT(0), 0, SELF_OWNER,
			   (uint32_t)(5 + i));
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(meta(p[i])->owner, 0);
	/* Port-bound packets are counted by the port_out callback, not
	 * by sl_dispatch. */
	assert_int_equal(e->stats.tx_pkts, 0);
	assert_int_equal(rte_mempool_avail_count(g_pool), g_pool_full - 3);
	free_port_got();
	check_pool_full();
}

static void
out_port_started_later(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[1];

	e->shm->ports[1].started = 1;
	p[0] = mk(SL_OUT(1), 0, 1, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 1), 0);
	assert_int_equal(g_port.calls, 1);
	assert_int_equal(g_port.port[0], 1);
	assert_int_equal(drops_total(e), 0);
}

static void
drop_verdict(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[3];

	p[0] = mk(SL_DROP, 0, 1, 64);
	p[1] = mk(SL_DROP, SL_SERVICE_NONE, 2, 64);
	p[2] = mk(SL_DROP | 0x1234, 1, 3, 64); /* id bits are ignored */
	assert_int_equal(sl_dispatch(&e->d, p, 3), 0);
	check_drops(e, SL_DROP_NF_VERDICT, 3);
	check_pool_full();
	for (int i = 0; i < 3; i++)
		assert_int_equal(meta(p[i])->owner, 0);
}

static void
unknown_verdict_kind(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[2];

	p[0] = mk((sl_verdict_t)(4u << SL_VERDICT_KIND_SHIFT), 0, 1, 64);
	p[1] = mk(0xffffffffu, 0, 2, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 0);
	check_drops(e, SL_DROP_INVALID_DEST, 2);
	check_pool_full();
}

static void
mixed_burst_every_packet_accounted(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[8], *got[8];
	unsigned n = 0;

	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 1, 64); /* -> inst 0 */
	p[1] = mk(SL_DROP, 0, 2, 64);               /* nf_verdict */
	p[2] = mk(SL_TO(3), 0, 3, 64);              /* invalid_dest */
	p[3] = mk(SL_TO(2), 0, 4, 64);              /* no_instance */
	p[4] = mk(SL_OUT(0), 0, 5, 64);             /* port 0 */
	p[5] = mk(SL_OUT(1), 0, 6, 64);             /* port_down */
	p[6] = mk(SL_NEXT, 3, 7, 64);               /* end_of_chain */
	p[7] = mk(SL_NEXT, SL_SERVICE_NONE, 8, 64); /* -> inst 0 */
	assert_int_equal(sl_dispatch(&e->d, p, 8), 0);
	assert_int_equal(e->stats.drop[SL_DROP_NF_VERDICT], 1);
	assert_int_equal(e->stats.drop[SL_DROP_INVALID_DEST], 1);
	assert_int_equal(e->stats.drop[SL_DROP_NO_INSTANCE], 1);
	assert_int_equal(e->stats.drop[SL_DROP_PORT_DOWN], 1);
	assert_int_equal(e->stats.drop[SL_DROP_END_OF_CHAIN], 1);
	assert_int_equal(drops_total(e), 5);
	n = take_rx(e, 0, got, 8);
	assert_int_equal(n, 2);
	assert_ptr_equal(got[0], p[0]);
	assert_ptr_equal(got[1], p[7]);
	assert_int_equal(g_port.n_got, 1);
	assert_int_equal(e->stats.tx_pkts + g_port.n_got + drops_total(e), 8);
	rte_pktmbuf_free_bulk(got, n);
}

/* Flow entries for the cached-lookup tests: FLOWS lines of 4 pins and 2
 * overrides, every pin free; freed by the caller. */
#define FLOWS 16
static uint8_t *
flows_on(struct env *e)
{
	struct sl_flow_table *ft = &e->shm->flow;
	uint8_t *mem = zalloc_aligned(FLOWS * SL_CACHE_LINE);

	ft->entries = mem;
	ft->capacity = FLOWS;
	ft->stride = SL_CACHE_LINE;
	ft->n_pins = 4;
	ft->n_ovr = 2;
	ft->ovr_off = sizeof(struct sl_flow_entry) + 4 * sizeof(uint32_t);
	ft->lookup = SL_LOOKUP_CACHED;
	for (uint32_t f = 0; f < FLOWS; f++) {
		struct sl_flow_entry *fe = sl_flow_entry(e->shm, f);

		fe->gen = (uint16_t)(100 + f);
		fe->state = SL_FLOW_LIVE;
		for (int k = 0; k < 4; k++)
			sl_flow_pins(e->shm, fe)[k] = UINT32_MAX;
	}
	return mem;
}

/* Flow f's first override: kind for service svc, to hop. */
static void
flow_ovr_set(struct env *e, uint32_t f, uint16_t kind, uint16_t svc,
	     sl_hop_t hop)
{
	struct sl_flow_entry *fe = sl_flow_entry(e->shm, f);
	union sl_flow_ovr *o = sl_flow_ovrs(e->shm, fe);

	o[0].f.service = svc;
	o[0].f.kind = kind;
	o[0].f.hop = hop;
	fe->n_ovr = 1;
}

/* A packet of flow f (its entry's generation unless stale) leaving
 * service svc with verdict v, in the default graph's current version. */
static struct rte_mbuf *
mk_flow(struct env *e, sl_verdict_t v, uint16_t svc, uint32_t f, int stale)
{
	struct rte_mbuf *m = mk(v, svc, f, 64);

	meta(m)->flags |= SL_META_GRAPH;
	meta(m)->graph = sl_graph_current(e->shm, 0);
	meta(m)->flow = f;
	if (f < FLOWS)
		meta(m)->flow_gen =
			(uint16_t)(sl_flow_entry(e->shm, f)->gen - !!stale);
	return m;
}

/*
 * With the flow table on, packets of many flows bound for one port are
 * resolved once per run (an entry without overrides routes as none), yet
 * each flow that has an override still goes its own way: at the head of
 * a run, in its middle, or stale (a recycled entry is no entry).
 */
static void
flows_to_a_port_resolve_alike_overrides_still_count(void **state)
{
	struct env *e = *state;
	uint8_t *mem = flows_on(e);
	struct rte_mbuf *p[10], *got[4];

	e->shm->ports[1].started = 1;
	/* mon's default is port 0; flow 0 changes it to port 1 (the head
	 * of the burst), flow 3 to service fw. Flow 5 skips another
	 * service; flow 6's override is a recycled entry's. */
	flow_ovr_set(e, 0, SL_OVR_DEFAULT, 1, SL_HOP_PORT(1));
	flow_ovr_set(e, 3, SL_OVR_DEFAULT, 1, SL_HOP_SERVICE(0));
	flow_ovr_set(e, 5, SL_OVR_SKIP, 2, SL_HOP_NONE);
	flow_ovr_set(e, 6, SL_OVR_DEFAULT, 1, SL_HOP_PORT(1));
	flow_ovr_set(e, 9, SL_OVR_DEFAULT, 1, SL_HOP_PORT(1));
	for (uint32_t f = 0; f < 7; f++)
		p[f] = mk_flow(e, SL_NEXT, 1, f, f == 6);
	p[7] = mk_flow(e, SL_NEXT, 1, SL_FLOW_NONE, 0);
	/* An NF's OUT: the flow's overrides are not for it. */
	p[8] = mk_flow(e, SL_OUT(0), 1, 9, 0);
	p[9] = mk_flow(e, SL_NEXT, 1, 10, 0);
	assert_int_equal(sl_dispatch(&e->d, p, 10), 0);
	assert_int_equal(drops_total(e), 0);

	assert_int_equal(take_rx(e, 0, got, 4), 1);
	assert_ptr_equal(got[0], p[3]);
	check_meta(p[3], SL_NEXT, 0, SELF_OWNER, 3);
	rte_pktmbuf_free(got[0]);

	assert_int_equal(g_port.calls, 3);
	assert_int_equal(g_port.port[0], 1);
	assert_int_equal(g_port.run[0], 1);
	assert_int_equal(g_port.port[1], 0);
	assert_int_equal(g_port.run[1], 2);
	assert_int_equal(g_port.port[2], 0);
	assert_int_equal(g_port.run[2], 6);
	assert_int_equal(g_port.n_got, 9);
	assert_ptr_equal(g_port.got[0], p[0]);
	for (unsigned k = 1; k < 9; k++)
		assert_ptr_equal(g_port.got[k], p[k < 3 ? k : k + 1]);
	for (unsigned k = 0; k < 9; k++)
		check_meta(g_port.got[k], SL_OUT(k == 0 ? 1 : 0), 1, SELF_OWNER,
			   meta(g_port.got[k])->flow_hash);
	free_port_got();
	e->shm->flow.entries = NULL;
	e->shm->flow.capacity = 0;
	free(mem);
}

/* Flow f's pins, in order (UINT32_MAX: free). */
static void
flow_pins_set(struct env *e, uint32_t f, uint32_t p0, uint32_t p1)
{
	uint32_t *pin = sl_flow_pins(e->shm, sl_flow_entry(e->shm, f));

	pin[0] = p0;
	pin[1] = p1;
}

#define PIN(svc, inst) ((uint32_t)(svc) << 16 | (inst))

/*
 * The same for flows pinned to an instance: packets whose flows are
 * pinned to the head's instance go with it, resolved once; a flow pinned
 * to the other replica, one skipping the service, one not pinned yet
 * (the balancer's choice, then pinned) and a packet without an entry
 * (the balancer's choice by its hash) each go their own way.
 */
static void
flows_pinned_alike_resolve_once_others_their_own_way(void **state)
{
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	uint8_t *mem = flows_on(e);
	struct rte_mbuf *p[10], *got[16];
	uint32_t h7 = 0;
	unsigned n;

	for (uint32_t f = 0; f < 9; f++)
		flow_pins_set(e, f, PIN(1, 1), UINT32_MAX);
	flow_pins_set(e, 4, PIN(1, 2), UINT32_MAX);
	/* A pin of another service first: the scan goes on to mon's. */
	flow_pins_set(e, 5, PIN(0, 0), PIN(1, 1));
	flow_ovr_set(e, 6, SL_OVR_SKIP, 1, SL_HOP_NONE);
	flow_pins_set(e, 7, UINT32_MAX, UINT32_MAX);
	while (mon->bucket[h7 & (SL_LB_BUCKETS - 1)] != 2)
		h7++;
	for (uint32_t f = 0; f < 9; f++)
		p[f] = mk_flow(e, SL_NEXT, 0, f, 0); /* fw -> mon */
	meta(p[7])->flow_hash = h7;
	/* No entry (the table was full): the balancer's choice by hash. */
	p[9] = mk_flow(e, SL_NEXT, 0, SL_FLOW_NONE, 0);
	meta(p[9])->flow_hash = h7;
	assert_int_equal(sl_dispatch(&e->d, p, 10), 0);
	assert_int_equal(drops_total(e), 0);

	n = take_rx(e, 1, got, 16);
	assert_int_equal(n, 6);
	for (unsigned k = 0; k < n; k++) {
		static const int want[] = {0, 1, 2, 3, 5, 8};

		assert_ptr_equal(got[k], p[want[k]]);
		check_meta(got[k], SL_NEXT, 1, SELF_OWNER,
			   meta(got[k])->flow_hash);
	}
	rte_pktmbuf_free_bulk(got, n);
	n = take_rx(e, 2, got, 16);
	assert_int_equal(n, 3);
	assert_ptr_equal(got[0], p[4]);
	assert_ptr_equal(got[1], p[7]);
	assert_ptr_equal(got[2], p[9]);
	rte_pktmbuf_free_bulk(got, n);
	/* Flow 7 is pinned now, to the balancer's choice. */
	assert_int_equal(sl_flow_pins(e->shm, sl_flow_entry(e->shm, 7))[0],
			 PIN(1, 2));
	/* Flow 6 skipped mon: mon's default, port 0. */
	assert_int_equal(g_port.n_got, 1);
	assert_ptr_equal(g_port.got[0], p[6]);
	free_port_got();
	e->shm->flow.entries = NULL;
	e->shm->flow.capacity = 0;
	free(mem);
}

/*
 * A burst is resolved once per run of packets whose metadata routes alike,
 * never across a per-packet choice: NEXT from ingress (one instance) is one
 * run; TO(mon) picks each packet's flow bucket between two instances; the
 * runs around it and a verdict that differs in the middle are their own.
 */
static void
alike_packets_resolve_alike_choices_stay_per_packet(void **state)
{
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	struct rte_mbuf *p[16], *got[16];
	unsigned n, want1 = 0, want2 = 0;
	int i;

	for (i = 0; i < 4; i++)
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i, 64);
	for (; i < 12; i++) {
		uint32_t h = (uint32_t)i * 2654435761u;

		p[i] = mk(SL_TO(1), 0, h, 64);
		if (mon->bucket[h & 255] == 1)
			want1++;
		else
			want2++;
	}
	p[12] = mk(SL_DROP, 0, 12, 64);
	p[13] = mk(SL_NEXT, SL_SERVICE_NONE, 13, 64);
	p[14] = mk(SL_NEXT, SL_SERVICE_NONE, 14, 64);
	p[15] = mk(SL_DROP, 0, 15, 64);
	assert_true(want1 > 0 && want2 > 0); /* the choice is per packet */
	assert_int_equal(sl_dispatch(&e->d, p, 16), 0);
	check_drops(e, SL_DROP_NF_VERDICT, 2);
	n = take_rx(e, 0, got, 16);
	assert_int_equal(n, 6);
	for (i = 0; i < 4; i++)
		assert_ptr_equal(got[i], p[i]);
	assert_ptr_equal(got[4], p[13]);
	assert_ptr_equal(got[5], p[14]);
	for (i = 0; i < 6; i++)
		check_meta(got[i], SL_NEXT, 0, SELF_OWNER,
			   meta(got[i])->flow_hash);
	rte_pktmbuf_free_bulk(got, n);
	for (uint16_t inst = 1; inst <= 2; inst++) {
		n = take_rx(e, inst, got, 16);
		assert_int_equal(n, inst == 1 ? want1 : want2);
		for (unsigned j = 0; j < n; j++)
			assert_int_equal(mon->bucket[meta(got[j])->flow_hash &
						     255],
					 inst);
		rte_pktmbuf_free_bulk(got, n);
	}
	assert_int_equal(e->stats.tx_pkts, 14);
	check_pool_full();
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(next_follows_chain),
		T(next_flow_sticky_spreads),
		T(next_graph_drop_and_end),
		T(next_without_chain),
		T(to_valid_service),
		T(to_invalid_service),
		T(to_service_without_instance),
		T(to_round_robin),
		T(to_shortest_queue),
		T(to_leaving_instance_falls_back),
		T(out_ports),
		T(out_port_started_later),
		T(drop_verdict),
		T(unknown_verdict_kind),
		T(mixed_burst_every_packet_accounted),
		T(alike_packets_resolve_alike_choices_stay_per_packet),
		T(flows_to_a_port_resolve_alike_overrides_still_count),
		T(flows_pinned_alike_resolve_once_others_their_own_way),
		T(producer_killed_mid_enqueue),
		T(backpressure_partial_then_retry),
		T(backpressure_keeps_order_across_runs),
		T(backpressure_drops_after_bound),
		T(backpressure_partial_progress_then_bound),
		T(backpressure_forever_at_ingress),
		T(backpressure_port_out_partial),
		T(drop_pending_with_reason),
		T(all_out_sends_everything_unresolved),
		T(wakes_sleeping_shared_nf),
		T(full_burst),
		T(flow_hash_is_lazy),
		T(hop_limit_drops_port_packets_only),
		T(hop_limit_count_undone_for_packets_that_wait),
		T(alike_lone_instance_one_write),
		T(alike_ring_full_keeps_rest_as_entered),
		T(alike_port_full_keeps_rest_as_entered),
		T(alike_other_first_hops_as_before),
		cmocka_unit_test(flow_key_make_hash_matches),
	};

	return cmocka_run_group_tests_name("dispatch", tests, group_setup,
					   group_teardown);
}
