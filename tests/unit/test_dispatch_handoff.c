/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sl_dispatch.c, second part: backpressure, hand-off via the
 * manager and wake-ups, the hop limit, sl_dispatch_alike (the group's
 * list is in test_dispatch.c; the fake node in dispatch_env.c).
 */
#include "dispatch_env.h"

/* ---- backpressure --------------------------------------------------- */

/*
 * A producer killed between reserving ring slots and publishing them
 * (simulated: prod.head moved, tail not). Dispatch must not wait for it
 * inside rte_ring (that spins for ever): the packets wait as for a full
 * ring. sl_ring_unstick, given the producer side as it was when the death
 * was seen, rolls the reservation back only if nothing moved since.
 */
void
producer_killed_mid_enqueue(void **state)
{
	struct env *e = *state;
	struct rte_ring *r = rx_of(e, 0);
	struct sl_ring_prod at_death, later;
	struct rte_mbuf *p[2], *got[4];

	assert_false(sl_ring_prod_busy(r));
	r->prod.head += 2; /* the dead producer's reservation */
	assert_true(sl_ring_prod_busy(r));
	sl_ring_prod_get(r, &at_death);
	assert_int_equal(at_death.head - at_death.tail, 2);

	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 0x11, 60);
	p[1] = mk(SL_NEXT, SL_SERVICE_NONE, 0x12, 61);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 2); /* returns: no hang */
	assert_int_equal(e->d.pending_reason, SL_DROP_RING_FULL);
	check_meta(p[0], SL_NEXT, SL_SERVICE_NONE, SELF_OWNER, 0x11);
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 2);
	assert_int_equal(e->stats.tx_pkts, 0);
	assert_int_equal(drops_total(e), 0);

	/* A snapshot that differs from now (someone published since) is not
	 * a dead reservation: left alone. */
	later = at_death;
	later.tail -= 1;
	assert_int_equal(sl_ring_unstick(r, &later), 0);
	assert_true(sl_ring_prod_busy(r));
	/* Unmoved since the death: rolled back, and only once. */
	assert_int_equal(sl_ring_unstick(r, &at_death), 2);
	assert_false(sl_ring_prod_busy(r));
	assert_int_equal(sl_ring_unstick(r, &at_death), 0);

	/* The waiting packets go, in order; nothing stale is seen. */
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since + 1), 0);
	assert_int_equal(take_rx(e, 0, got, 4), 2);
	assert_ptr_equal(got[0], p[0]);
	assert_ptr_equal(got[1], p[1]);
	check_meta(p[1], SL_NEXT, 0, SELF_OWNER, 0x12);
	assert_int_equal(e->stats.tx_pkts, 2);
	/* A ring with no reservation is never touched. */
	sl_ring_prod_get(r, &later);
	assert_int_equal(sl_ring_unstick(r, &later), 0);
	rte_pktmbuf_free_bulk(got, 2);
}

void
backpressure_partial_then_retry(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[6], *got[RING_CAP];
	const unsigned room = 3;
	uint64_t t0, since;

	leave_room(e, 0, room);
	for (int i = 0; i < 6; i++)
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i,
			  (uint16_t)(100 + i));
	t0 = rte_rdtsc();
	assert_int_equal(sl_dispatch(&e->d, p, 6), 3);
	/* The wait starts now: stamped by this call. */
	since = e->d.pending_since;
	assert_in_range(since, t0, rte_rdtsc());
	assert_int_equal(sl_dispatch_pending(&e->d), 3);
	assert_int_equal(rte_ring_free_count(rx_of(e, 0)), 0);
	/* The ring took p0..p2; p3..p5 wait, in order, looking untouched. */
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(e->d.pending[i], p[3 + i]);
		check_meta(p[3 + i], SL_NEXT, SL_SERVICE_NONE, SELF_OWNER,
			   (uint32_t)(3 + i));
		check_meta(p[i], SL_NEXT, 0, SELF_OWNER, (uint32_t)i);
	}
	assert_int_equal(e->stats.tx_pkts, 3);
	assert_int_equal(e->stats.tx_bytes, 100 + 101 + 102);

	/* Still full: nothing moves, nothing is dropped; the wait still
	 * counts from the first try. */
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 3);
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(e->d.pending_since, since);

	/* Room for 2: p3, p4 go, p5 waits, since the first try still. */
	drain_dummies(e, 0, 2);
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since + 1), 1);
	assert_int_equal(e->d.pending_since, since);
	assert_ptr_equal(e->d.pending[0], p[5]);
	check_meta(p[5], SL_NEXT, SL_SERVICE_NONE, SELF_OWNER, 5);
	assert_int_equal(e->stats.tx_pkts, 5);

	/* Room for all. */
	drain_dummies(e, 0, RING_CAP - room - 2);
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since + 2), 0);
	assert_int_equal(sl_dispatch_pending(&e->d), 0);
	assert_int_equal(take_rx(e, 0, got, RING_CAP), 6);
	for (int i = 0; i < 6; i++) {
		assert_ptr_equal(got[i], p[i]);
		check_meta(p[i], SL_NEXT, 0, SELF_OWNER, (uint32_t)i);
	}
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(e->stats.tx_pkts, 6);
	assert_int_equal(e->stats.tx_bytes, 6 * 100 + 15);
	rte_pktmbuf_free_bulk(got, 6);
	/* Retry with nothing pending is a no-op. */
	assert_int_equal(sl_dispatch_retry(&e->d, 0), 0);
}

void
backpressure_keeps_order_across_runs(void **state)
{
	/* [A1 A2 B1 A3 C1]: A's ring has room for 1. A1 goes; A2, B1, A3,
	 * C1 all wait (B1 is not overtaken past A2, nor C1, a port). */
	struct env *e = *state;
	struct rte_mbuf *p[5], *got[RING_CAP];

	leave_room(e, 0, 1);
	p[0] = mk(SL_TO(0), 1, 10, 64);
	p[1] = mk(SL_TO(0), 1, 11, 64);
	p[2] = mk(SL_DROP, 1, 12, 64);
	p[3] = mk(SL_TO(0), 1, 13, 64);
	p[4] = mk(SL_OUT(0), 1, 14, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 5), 4);
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(e->d.pending[i], p[1 + i]);
	check_meta(p[1], SL_TO(0), 1, SELF_OWNER, 11);
	check_meta(p[2], SL_DROP, 1, SELF_OWNER, 12);
	check_meta(p[3], SL_TO(0), 1, SELF_OWNER, 13);
	check_meta(p[4], SL_OUT(0), 1, SELF_OWNER, 14);
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(g_port.calls, 0);

	drain_dummies(e, 0, RING_CAP - 1);
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 0);
	assert_int_equal(take_rx(e, 0, got, RING_CAP), 3);
	assert_ptr_equal(got[0], p[0]);
	assert_ptr_equal(got[1], p[1]);
	assert_ptr_equal(got[2], p[3]);
	check_drops(e, SL_DROP_NF_VERDICT, 1);
	assert_int_equal(g_port.n_got, 1);
	assert_ptr_equal(g_port.got[0], p[4]);
	rte_pktmbuf_free_bulk(got, 3);
}

void
backpressure_drops_after_bound(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[4];
	uint64_t since;

	leave_room(e, 0, 1);
	for (int i = 0; i < 4; i++)
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 4), 3);
	since = e->d.pending_since;
	/* Exactly the bound: still waiting, and the wait counts from the
	 * first try. */
	assert_int_equal(sl_dispatch_retry(&e->d, since + BP_CYCLES), 3);
	assert_int_equal(e->d.pending_since, since);
	assert_int_equal(drops_total(e), 0);
	/* Past the bound: dropped as ring_full, back in the pool. */
	assert_int_equal(sl_dispatch_retry(&e->d, since + BP_CYCLES + 1), 0);
	check_drops(e, SL_DROP_RING_FULL, 3);
	for (int i = 1; i < 4; i++)
		assert_int_equal(meta(p[i])->owner, 0);
	assert_int_equal(rte_mempool_avail_count(g_pool), g_pool_full - 1);
	assert_int_equal(e->stats.tx_pkts, 1);
	drain_dummies(e, 0, RING_CAP - 1);
}

void
backpressure_partial_progress_then_bound(void **state)
{
	/* A retry that moves some but not all: the rest still counts its
	 * wait from the first try and is dropped once past the bound. */
	struct env *e = *state;
	struct rte_mbuf *p[4];
	uint64_t since;

	leave_room(e, 0, 0);
	for (int i = 0; i < 4; i++)
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 4), 4);
	since = e->d.pending_since;
	drain_dummies(e, 0, 1);
	assert_int_equal(sl_dispatch_retry(&e->d, since + BP_CYCLES + 1), 0);
	check_drops(e, SL_DROP_RING_FULL, 3);
	assert_int_equal(e->stats.tx_pkts, 1);
	drain_dummies(e, 0, RING_CAP - 1);
}

void
backpressure_forever_at_ingress(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[2];

	e->d.bp_cycles = UINT64_MAX;
	leave_room(e, 0, 0);
	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 1, 64);
	p[1] = mk(SL_NEXT, SL_SERVICE_NONE, 2, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 2);
	assert_int_equal(sl_dispatch_retry(&e->d, UINT64_MAX), 2);
	assert_int_equal(drops_total(e), 0);
	drain_dummies(e, 0, RING_CAP);
	assert_int_equal(sl_dispatch_retry(&e->d, UINT64_MAX), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 0)), 2);
}

void
backpressure_port_out_partial(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[5];

	g_port.take = 2;
	for (int i = 0; i < 5; i++)
		p[i] = mk(SL_OUT(0), 0, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 5), 3);
	assert_int_equal(g_port.n_got, 2);
	for (int i = 2; i < 5; i++) {
		assert_ptr_equal(e->d.pending[i - 2], p[i]);
		check_meta(p[i], SL_OUT(0), 0, SELF_OWNER, (uint32_t)i);
	}
	g_port.take = 0;
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 3);
	g_port.take = UINT16_MAX;
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 0);
	assert_int_equal(g_port.n_got, 5);
	for (int i = 0; i < 5; i++) {
		assert_ptr_equal(g_port.got[i], p[i]);
		assert_int_equal(meta(p[i])->owner, SELF_OWNER);
	}
	assert_int_equal(g_port.calls, 3);
	assert_int_equal(drops_total(e), 0);
	free_port_got();

	/* NEXT resolved to a port: what the port takes carries OUT(port),
	 * what it leaves gets its NEXT verdict back. */
	g_port.take = 1;
	p[0] = mk(SL_NEXT, 1, 1, 64);
	p[1] = mk(SL_NEXT, 1, 2, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 1);
	check_meta(p[0], SL_OUT(0), 1, SELF_OWNER, 1);
	check_meta(p[1], SL_NEXT, 1, SELF_OWNER, 2);
	assert_ptr_equal(e->d.pending[0], p[1]);
	g_port.take = UINT16_MAX;
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 0);
	check_meta(p[1], SL_OUT(0), 1, SELF_OWNER, 2);
}

void
drop_pending_with_reason(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[3];

	leave_room(e, 0, 0);
	for (int i = 0; i < 3; i++)
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 3), 3);
	sl_dispatch_drop_pending(&e->d, SL_DROP_NF_LOST);
	assert_int_equal(sl_dispatch_pending(&e->d), 0);
	check_drops(e, SL_DROP_NF_LOST, 3);
	check_pool_full();
	drain_dummies(e, 0, RING_CAP);
}

/* ---- hand-off via the manager, wake-ups ------------------------------ */

void
all_out_sends_everything_unresolved(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[5];
	static const sl_verdict_t v[5] = {SL_NEXT, SL_DROP, SL_TO(3), SL_OUT(1),
					  SL_TO(0)};

	e->d.all_out = 1;
	for (int i = 0; i < 5; i++)
		p[i] = mk(v[i], 0, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 5), 0);
	assert_int_equal(g_port.calls, 1);
	assert_int_equal(g_port.port[0], SL_PORT_NONE);
	assert_int_equal(g_port.run[0], 5);
	for (int i = 0; i < 5; i++) {
		assert_ptr_equal(g_port.got[i], p[i]);
		/* verdict and node kept for sluiced to resolve */
		check_meta(p[i], v[i], 0, SELF_OWNER, (uint32_t)i);
	}
	assert_int_equal(drops_total(e), 0);
	assert_int_equal(rte_ring_count(rx_of(e, 0)), 0);
	assert_int_equal(e->stats.tx_pkts, 0);

	/* When the tx ring is full they wait like any other. */
	g_port.take = 1;
	for (int i = 0; i < 3; i++)
		p[i] = mk(v[i], 0, (uint32_t)i, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 3), 2);
	check_meta(p[1], SL_DROP, 0, SELF_OWNER, 1);
	check_meta(p[2], SL_TO(3), 0, SELF_OWNER, 2);
	g_port.take = UINT16_MAX;
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 0);
	assert_int_equal(g_port.n_got, 8);
}

void
wakes_sleeping_shared_nf(void **state)
{
	struct env *e = *state;
	struct sl_nf_slot *s = &e->shm->nfs[0];
	struct rte_mbuf *p[2];

	/* Poll mode: never woken. */
	s->sleeping = 1;
	p[0] = mk(SL_TO(0), 1, 1, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 1), 0);
	assert_int_equal(s->wake, 0);
	assert_int_equal(e->stats.wakeups, 0);
	/* Shared mode, awake: no wake-up. */
	s->mode = SL_MODE_SHARED;
	s->sleeping = 0;
	p[0] = mk(SL_TO(0), 1, 1, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 1), 0);
	assert_int_equal(s->wake, 0);
	assert_int_equal(e->stats.wakeups, 0);
	/* Shared mode, asleep: one wake-up per run. */
	s->sleeping = 1;
	p[0] = mk(SL_TO(0), 1, 1, 64);
	p[1] = mk(SL_TO(0), 1, 1, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 0);
	assert_int_equal(s->wake, 1);
	assert_int_equal(e->stats.wakeups, 1);
	/* Nothing enqueued (ring full): no wake-up. */
	{
		struct rte_mbuf *got[4];

		assert_int_equal(take_rx(e, 0, got, 4), 4);
		rte_pktmbuf_free_bulk(got, 4);
	}
	leave_room(e, 0, 0);
	p[0] = mk(SL_TO(0), 1, 1, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 1), 1);
	assert_int_equal(s->wake, 1);
	assert_int_equal(e->stats.wakeups, 1);
	sl_dispatch_drop_pending(&e->d, SL_DROP_NF_LOST);
	drain_dummies(e, 0, RING_CAP);
}

void
full_burst(void **state)
{
	/* SL_BURST_MAX packets to one instance: one run, all in order. */
	struct env *e = *state;
	struct rte_mbuf *p[SL_BURST_MAX], *got[SL_BURST_MAX];
	uint64_t bytes = 0;

	for (int i = 0; i < SL_BURST_MAX; i++) {
		p[i] = mk(SL_NEXT, SL_SERVICE_NONE, (uint32_t)i,
			  (uint16_t)(60 + i * 5));
		bytes += 60 + (uint64_t)i * 5;
	}
	assert_int_equal(sl_dispatch(&e->d, p, SL_BURST_MAX), 0);
	assert_int_equal(take_rx(e, 0, got, SL_BURST_MAX), SL_BURST_MAX);
	for (int i = 0; i < SL_BURST_MAX; i++)
		assert_ptr_equal(got[i], p[i]);
	assert_int_equal(e->stats.tx_pkts, SL_BURST_MAX);
	assert_int_equal(e->stats.tx_bytes, bytes);
	rte_pktmbuf_free_bulk(got, SL_BURST_MAX);
	/* An empty burst does nothing. */
	assert_int_equal(sl_dispatch(&e->d, p, 0), 0);
}

void
flow_hash_is_lazy(void **state)
{
	/* A packet without a valid hash: a one-instance hop does not compute
	 * it; a flow-sticky choice between two instances computes it once
	 * (the symmetric 5-tuple hash), caches it and picks by it. */
	static const uint8_t frame[42] = {
		[12] = 0x08, [13] = 0x00,                         /* IPv4 */
		[14] = 0x45, [17] = 28,   [22] = 64,   [23] = 17, /* UDP */
		[26] = 10,   [29] = 1,    [30] = 192,  [31] = 168,  [33] = 7,
		[34] = 0x04, [35] = 0xd2, [36] = 0x00, [37] = 0x35, [39] = 8,
	};
	struct env *e = *state;
	struct sl_service *mon = &e->shm->services[1];
	struct rte_mbuf *p[2], *got[2];
	struct sl_5tuple t;
	uint32_t want;

	assert_int_equal(sl_5tuple_get(frame, sizeof(frame), &t), 0);
	want = sl_5tuple_hash(&t);
	for (int i = 0; i < 2; i++) {
		p[i] = mk(SL_TO((uint16_t)i), 0, 0, sizeof(frame));
		memcpy(rte_pktmbuf_mtod(p[i], void *), frame, sizeof(frame));
		meta(p[i])->flags = 0;
		meta(p[i])->flow_hash = 0;
	}
	assert_int_equal(sl_dispatch(&e->d, p, 2), 0);
	assert_int_equal(take_rx(e, 0, got, 2), 1); /* service 0: one NF */
	assert_ptr_equal(got[0], p[0]);
	assert_int_equal(meta(p[0])->flags & SL_META_HASH, 0);
	assert_int_equal(meta(p[0])->flow_hash, 0);
	assert_int_equal(meta(p[1])->flags & SL_META_HASH, SL_META_HASH);
	assert_int_equal(meta(p[1])->flow_hash, want);
	assert_int_equal(take_rx(e, mon->bucket[want & 255], got + 1, 2), 1);
	assert_ptr_equal(got[1], p[1]);
	rte_pktmbuf_free_bulk(p, 2);
}

void
flow_key_make_hash_matches(void **state)
{
	/* Both directions of a flow make one key and signature, equal
	 * addresses (ports decide) included; the inline IPv4 ingress path
	 * (sl_flow_key4_make_hash) gives the IPv4 table's key of
	 * sl_flow_key_make()'s key and sl_flow_key_hash()'s signature, which
	 * the control plane and naive mode look flows up with. The IPv4 key
	 * is checked against the layout written out by hand. */
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct sl_5tuple t, r;
		struct sl_flow_key k1, k3;
		struct sl_flow_key4 want4, k4, k4r;
		uint32_t h1;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memset(&t, 0, sizeof(t));
		t.family = (i % 5 == 4) ? 6 : 4;
		t.proto = (i & 1) ? 6 : 17;
		t.sport = (uint16_t)x;
		t.dport = (uint16_t)(x >> 16);
		if (t.family == 4) {
			t.src.v4 = (uint32_t)(x >> 20);
			t.dst.v4 = i % 7 == 0 ? t.src.v4 : (uint32_t)(x >> 28);
		} else {
			for (int b = 0; b < 16; b++) {
				t.src.v6[b] = (uint8_t)(x >> (b * 3));
				t.dst.v6[b] = (uint8_t)(x >> (b * 2 + 5));
			}
		}
		r = t;
		r.src = t.dst;
		r.dst = t.src;
		r.sport = t.dport;
		r.dport = t.sport;
		sl_flow_key_make(&t, &k1);
		if (t.family == 4) {
			/* The canonical IPv4 key, written out field by field:
			 * the lower (address, port) end first, compared as
			 * numbers (the fields are in network order). */
			struct sl_flow_key want;
			uint32_t sa = rte_be_to_cpu_32(t.src.v4),
				 da = rte_be_to_cpu_32(t.dst.v4);
			int swap =
				sa > da ||
				(sa == da && rte_be_to_cpu_16(t.sport) >
						     rte_be_to_cpu_16(t.dport));

			memset(&want, 0, sizeof(want));
			want.family = 4;
			want.proto = t.proto;
			want.port_lo = swap ? t.dport : t.sport;
			want.port_hi = swap ? t.sport : t.dport;
			memcpy(want.addr_lo, swap ? &t.dst.v4 : &t.src.v4, 4);
			memcpy(want.addr_hi, swap ? &t.src.v4 : &t.dst.v4, 4);
			assert_memory_equal(&k1, &want, sizeof(want));
		}
		sl_flow_key_make(&r, &k3);
		assert_memory_equal(&k1, &k3, sizeof(k1));
		h1 = sl_flow_key_hash(&k1);
		assert_int_equal(sl_flow_key_hash(&k3), h1);
		if (t.family != 4)
			continue;
		sl_flow_key4_of(&k1, &want4);
		assert_int_equal(sl_flow_key4_make_hash(&t, &k4), h1);
		assert_int_equal(sl_flow_key4_make_hash(&r, &k4r), h1);
		assert_memory_equal(&k4, &want4, sizeof(k4));
		assert_memory_equal(&k4r, &want4, sizeof(k4));
	}
}

/* ---- hop limit ------------------------------------------------------ */

void
hop_limit_drops_port_packets_only(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[4], *got[8];
	unsigned n;

	e->shm->max_hops = 2;
	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 0x10, 64); /* ingress: 0 visits */
	p[1] = mk(SL_TO(1), 0, 0x11, 64);              /* its 2nd visit */
	meta(p[1])->flags |= 1 * SL_META_HOP;
	p[2] = mk(SL_TO(1), 0, 0x12, 64); /* made 2: a 3rd is refused */
	meta(p[2])->flags |= 2 * SL_META_HOP;
	p[3] = mk(SL_TO(1), 0, 0x13, 64); /* the same, but NF-made */
	meta(p[3])->flags |= 2 * SL_META_HOP;
	meta(p[3])->in_port = UINT16_MAX;
	assert_int_equal(sl_dispatch(&e->d, p, 4), 0);
	check_drops(e, SL_DROP_HOP_LIMIT, 1);
	assert_int_equal(take_rx(e, 0, got, 8), 1);
	assert_ptr_equal(got[0], p[0]);
	assert_int_equal(hops(p[0]), 1);
	rte_pktmbuf_free(got[0]);
	n = take_rx(e, 1, got, 8) + take_rx(e, 2, got + 1, 8);
	assert_int_equal(n, 2);
	assert_int_equal(hops(p[1]), 2);
	assert_int_equal(hops(p[3]), 3);
	assert_true((got[0] == p[1] && got[1] == p[3]) ||
		    (got[0] == p[3] && got[1] == p[1]));
	rte_pktmbuf_free_bulk(got, 2);
	assert_int_equal(e->stats.tx_pkts, 3);
	check_pool_full();
}

void
hop_limit_count_undone_for_packets_that_wait(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *p[2], *got[RING_CAP];
	unsigned fill = rte_ring_free_count(rx_of(e, 0)) - 1;

	leave_room(e, 0, 1);
	p[0] = mk(SL_NEXT, SL_SERVICE_NONE, 1, 64);
	p[1] = mk(SL_NEXT, SL_SERVICE_NONE, 2, 64);
	assert_int_equal(sl_dispatch(&e->d, p, 2), 1);
	/* The one that went counts its visit; the one that waits does not
	 * (it is retried, and would count it twice). */
	assert_int_equal(hops(p[0]), 1);
	assert_int_equal(hops(p[1]), 0);
	drain_dummies(e, 0, fill);
	assert_int_equal(sl_dispatch_retry(&e->d, e->d.pending_since), 0);
	assert_int_equal(hops(p[1]), 1);
	assert_int_equal(take_rx(e, 0, got, RING_CAP), 2);
	rte_pktmbuf_free_bulk(got, 2);
	assert_int_equal(drops_total(e), 0);
}

/* ---- sl_dispatch_alike: ingress of a burst that enters alike ---------- */

#define ALIKE_N 24
#define WHERE_DROPPED (-1)
#define WHERE_PORT 100
#define WHERE_PENDING 200

/* Where each packet of a burst ended and with what meta. */
struct outcome {
	int where[ALIKE_N]; /* instance id, WHERE_PORT, WHERE_PENDING or
			     * WHERE_DROPPED */
	struct sl_pkt_meta meta[ALIKE_N];
	struct sl_ctx_stats stats; /* the context's tx and drops */
	struct sl_ctx_stats in;    /* the port's rx */
	uint16_t pending;
	uint8_t reason; /* why they wait: the drop reason once too long */
};

static int
index_of(struct rte_mbuf *const *p, const struct rte_mbuf *m)
{
	for (int i = 0; i < ALIKE_N; i++)
		if (p[i] == m)
			return i;
	fail_msg("a packet that was not in the burst");
	return -1;
}

/*
 * Dispatches ALIKE_N fresh packets (lengths 60..83, zeroed data, stale
 * meta from an earlier life) entering with *pre, with room0 free slots in
 * instance 0's rx ring: with sl_dispatch_alike() if fast, else as sluiced
 * did before it (*pre written into each, then sl_dispatch()). With rss,
 * every third packet carries a port RSS hash. Records the outcome, then
 * frees everything.
 */
static void
alike_run(struct env *e, int fast, const struct sl_pkt_meta *pre, int rss,
	  unsigned room0, struct outcome *o)
{
	struct rte_mbuf *p[ALIKE_N], *got[RING_CAP];

	memset(o, 0, sizeof(*o));
	memset(&e->stats, 0, sizeof(e->stats));
	free_port_got();
	for (int i = 0; i < ALIKE_N; i++) {
		p[i] = mk(SL_DROP, 3, 0xdead, (uint16_t)(60 + i));
		memset(rte_pktmbuf_mtod(p[i], void *), 0, 60 + i);
		meta(p[i])->flags = 0xfff0; /* a stale hop count, too */
		if (rss && i % 3 == 0) {
			p[i]->ol_flags |= RTE_MBUF_F_RX_RSS_HASH;
			p[i]->hash.rss = 0x1000u + (uint32_t)i * 77u;
		}
		o->where[i] = WHERE_DROPPED;
	}
	if (room0 < RING_CAP)
		leave_room(e, 0, room0);
	if (fast) {
		o->pending =
			sl_dispatch_alike(&e->d, p, ALIKE_N, pre, rss, &o->in);
	} else {
		for (int i = 0; i < ALIKE_N; i++) {
			sl_meta_enter(meta(p[i]), pre, p[i], rss);
			o->in.rx_bytes += rte_pktmbuf_pkt_len(p[i]);
		}
		o->in.rx_pkts = ALIKE_N;
		o->pending = sl_dispatch(&e->d, p, ALIKE_N);
	}
	assert_int_equal(o->pending, sl_dispatch_pending(&e->d));
	if (room0 < RING_CAP)
		drain_dummies(e, 0, RING_CAP - room0);
	for (uint16_t inst = 0; inst < 3; inst++) {
		unsigned n = take_rx(e, inst, got, RING_CAP);

		for (unsigned k = 0; k < n; k++) {
			int i = index_of(p, got[k]);

			o->where[i] = inst;
			o->meta[i] = *meta(got[k]);
		}
		rte_pktmbuf_free_bulk(got, n);
	}
	for (unsigned k = 0; k < g_port.n_got; k++) {
		int i = index_of(p, g_port.got[k]);

		o->where[i] = WHERE_PORT;
		o->meta[i] = *meta(g_port.got[k]);
	}
	free_port_got();
	for (unsigned k = 0; k < e->d.n_pending; k++) {
		int i = index_of(p, e->d.pending[k]);

		o->where[i] = WHERE_PENDING;
		o->meta[i] = *meta(e->d.pending[k]);
	}
	o->stats = e->stats;
	o->reason = o->pending > 0 ? e->d.pending_reason : 0;
	sl_dispatch_drop_pending(&e->d, SL_DROP_NF_LOST);
	check_pool_full();
}

/* Both ways give the same outcome, packet by packet, byte by byte. */
static void
alike_same(struct env *e, const struct sl_pkt_meta *pre, int rss,
	   unsigned room0, struct outcome *fast)
{
	struct outcome slow;

	alike_run(e, 0, pre, rss, room0, &slow);
	alike_run(e, 1, pre, rss, room0, fast);
	assert_int_equal(fast->pending, slow.pending);
	assert_int_equal(fast->reason, slow.reason);
	for (int i = 0; i < ALIKE_N; i++) {
		assert_int_equal(fast->where[i], slow.where[i]);
		assert_memory_equal(&fast->meta[i], &slow.meta[i],
				    sizeof(fast->meta[i]));
	}
	assert_memory_equal(&fast->stats, &slow.stats, sizeof(slow.stats));
	assert_memory_equal(&fast->in, &slow.in, sizeof(slow.in));
	assert_int_equal(fast->in.rx_pkts, ALIKE_N);
	assert_int_equal(fast->in.rx_bytes,
			 ALIKE_N * 60 + ALIKE_N * (ALIKE_N - 1) / 2);
}

static const struct sl_pkt_meta g_pre = {
	.verdict = SL_NEXT,
	.flow = SL_FLOW_NONE,
	.service = SL_SERVICE_NONE,
	.owner = SELF_OWNER,
	.in_port = IN_PORT,
	.flags = 0x8u, /* a spare flag bit: carried along */
};

void
alike_lone_instance_one_write(void **state)
{
	/* The chain's first hop has one instance: the burst is enqueued
	 * whole, each meta already in its handed-on form. */
	struct env *e = *state;
	struct sl_pkt_meta want = g_pre;
	struct outcome o;

	alike_same(e, &g_pre, 0, RING_CAP, &o);
	want.service = 0;
	want.graph = sl_graph_current(e->shm, 0);
	want.flags = 0x8u | SL_META_GRAPH | SL_META_HOP;
	for (int i = 0; i < ALIKE_N; i++) {
		assert_int_equal(o.where[i], 0);
		assert_memory_equal(&o.meta[i], &want, sizeof(want));
	}
	assert_int_equal(o.stats.tx_pkts, ALIKE_N);
	assert_int_equal(o.stats.tx_bytes, o.in.rx_bytes);
	assert_int_equal(drops_total(e), 0);
}

void
alike_ring_full_keeps_rest_as_entered(void **state)
{
	/* Room for 10 of 24: those go in order, the other 14 wait with
	 * the meta they entered with, their graph version fixed (a retry
	 * resolves them again in that version). */
	struct env *e = *state;
	struct sl_pkt_meta want = g_pre;
	struct outcome o;

	want.graph = sl_graph_current(e->shm, 0);

	alike_same(e, &g_pre, 1, 10, &o);
	assert_int_equal(o.pending, ALIKE_N - 10);
	for (int i = 0; i < ALIKE_N; i++) {
		want.flow_hash = i % 3 == 0 ? 0x1000u + (uint32_t)i * 77u : 0;
		want.flags = (i % 3 == 0 ? 0x8u | SL_META_HASH : 0x8u) |
			     SL_META_GRAPH;
		assert_int_equal(o.where[i], i < 10 ? 0 : WHERE_PENDING);
		if (i >= 10)
			assert_memory_equal(&o.meta[i], &want, sizeof(want));
		else
			assert_int_equal(o.meta[i].flow_hash, want.flow_hash);
	}
	assert_int_equal(o.stats.tx_pkts, 10);
	assert_int_equal(o.stats.tx_bytes, 10 * 60 + 45);
	for (int r = 0; r < SL_DROP_MAX; r++)
		assert_int_equal(o.stats.drop[r], 0);
}

void
alike_port_full_keeps_rest_as_entered(void **state)
{
	/* A port as the first hop, whose transmit takes 10 of 24: those
	 * leave with the port's verdict, the other 14 wait as they entered,
	 * their graph version fixed; the same as sl_dispatch(). */
	struct env *e = *state;
	struct sl_pkt_meta want = g_pre;
	struct outcome o;

	e->chain.first = SL_HOP_PORT(0);
	g_port.take = 10;
	want.graph = sl_graph_current(e->shm, 0);
	alike_same(e, &g_pre, 1, RING_CAP, &o);
	assert_int_equal(o.pending, ALIKE_N - 10);
	assert_int_equal(o.reason, SL_DROP_TX_FULL);
	for (int i = 0; i < ALIKE_N; i++) {
		int sent = i < 10;

		want.verdict = sent ? SL_OUT(0) : SL_NEXT;
		want.flow_hash = i % 3 == 0 ? 0x1000u + (uint32_t)i * 77u : 0;
		want.flags = (i % 3 == 0 ? 0x8u | SL_META_HASH : 0x8u) |
			     SL_META_GRAPH | (sent ? SL_META_PORT : 0);
		assert_int_equal(o.where[i], sent ? WHERE_PORT : WHERE_PENDING);
		assert_memory_equal(&o.meta[i], &want, sizeof(want));
	}
	for (int r = 0; r < SL_DROP_MAX; r++)
		assert_int_equal(o.stats.drop[r], 0);
	g_port.take = UINT16_MAX;
	e->chain.first = SL_HOP_SERVICE(0);
}

void
alike_other_first_hops_as_before(void **state)
{
	/* Replicas (a per-packet choice, with the ports' RSS hashes), a
	 * port, a service without instances, no chain, and the flow table
	 * on: all as sl_dispatch() does it. */
	struct env *e = *state;
	static const sl_hop_t firsts[] = {SL_HOP_SERVICE(1), SL_HOP_PORT(0),
					  SL_HOP_SERVICE(2), SL_HOP_DROP};
	struct sl_pkt_meta pre = g_pre;
	struct outcome o;
	int inst[3] = {0};

	pre.flow_hash = 0x42;
	pre.flags |= SL_META_HASH; /* no parse for the hash */
	for (size_t f = 0; f < RTE_DIM(firsts); f++) {
		e->chain.first = firsts[f];
		alike_same(e, &pre, 1, RING_CAP, &o);
		for (int i = 0; i < ALIKE_N; i++) {
			if (f == 0) {
				assert_true(o.where[i] == 1 || o.where[i] == 2);
				inst[o.where[i]]++;
			} else if (f == 1) {
				assert_int_equal(o.where[i], WHERE_PORT);
			} else {
				assert_int_equal(o.where[i], WHERE_DROPPED);
			}
		}
		check_drops(e, f == 2 ? SL_DROP_NO_INSTANCE : SL_DROP_GRAPH,
			    f >= 2 ? ALIKE_N : 0);
	}
	/* The RSS hashes differ per packet: both replicas got some. */
	assert_true(inst[1] > 0 && inst[2] > 0);
	e->chain.first = SL_HOP_SERVICE(0);
	e->shm->flow.lookup = SL_LOOKUP_CACHED;
	alike_same(e, &pre, 0, RING_CAP, &o);
	for (int i = 0; i < ALIKE_N; i++)
		assert_int_equal(o.where[i], 0);
	e->shm->flow.lookup = SL_LOOKUP_OFF;
}
