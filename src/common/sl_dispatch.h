/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Next-hop resolution and hand-off, shared by libsluice (an NF handing its
 * burst on) and sluiced's I/O threads (ingress from ports, NF tx rings).
 *
 * For each packet: verdict (+ the chain's default edge for NEXT) -> hop ->
 * instance (load balancer) or port -> enqueue. Consecutive packets with the
 * same destination are enqueued as one burst, so per-flow order is kept.
 * A full destination ring never drops a whole batch: what fits goes, the
 * rest stays pending in the context (backpressure) and is retried until
 * shm->backpressure_cycles have passed, then dropped as ring_full. A context
 * with pending packets must not take new ones (sl_dispatch_pending() != 0).
 */
#ifndef SL_DISPATCH_H
#define SL_DISPATCH_H

#include <stdint.h>

#include <string.h>

#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "sl_shared.h"
#include "sluice/pkt.h"

/*
 * Returns a message to the pool, marked free first: sluiced gives back the
 * answered messages of a dead process (those with its pid, answered and not
 * free), so a message in the pool must never look like one.
 */
static inline void
sl_msg_put(struct sl_shm *shm, struct sl_msg *m)
{
	__atomic_store_n(&m->type, SL_MSG_FREE, __ATOMIC_RELEASE);
	rte_mempool_put(shm->msg_pool, m);
}

struct sl_dispatch;

/*
 * Sends a run of packets to port `port`. Returns how many it took (it owns
 * those: sent, buffered or dropped-and-counted); the rest stay with the
 * caller, which keeps them pending.
 */
typedef uint16_t (*sl_port_out_fn)(struct sl_dispatch *d, uint16_t port,
				   struct rte_mbuf **pkts, uint16_t n);

struct sl_dispatch {
	struct sl_shm *shm;
	int meta_off;
	/* Owner tag of packets this context holds: instance + 1, or 0. */
	uint16_t self_owner;
	/* Counters charged: handed-on packets and drops by reason. */
	struct sl_ctx_stats *fwd;
	uint64_t *drops;
	sl_port_out_fn port_out;
	void *port_arg;
	uint32_t *rr; /* [max_services] round-robin counters (local memory) */
	/* This context's row of per-edge counters (sl_edge_row_*), or NULL
	 * for none (a context that only re-sends resolved packets). */
	struct sl_edge_ctr *edge;
	/* Set to 1 around the mempool puts this context makes (its slot's
	 * pool_op, for an NF with a cache of its own), or NULL. */
	uint32_t *pool_op;
	/* Tests only (libsluice's SLUICE_TEST_KILL_AT): called with a run
	 * ready for its next hop, just before the enqueue or port_out; NULL
	 * normally. */
	void (*fault)(struct sl_dispatch *d);
	/* Hand every packet to port_out unresolved: an NF in "mgr" hand-off
	 * mode, where sluiced's I/O thread resolves next hops. */
	uint8_t all_out;
	/* sluiced, from an NF's tx ring: what it drops (other than the NF's
	 * own DROPs) was counted in the NF's tx; count it in fwd->undone_*. */
	uint8_t undo_tx;
	/* How long pending packets wait before being dropped as ring_full
	 * (TSC cycles; UINT64_MAX: wait for ever, used at ingress). */
	uint64_t bp_cycles;

	uint16_t n_pending;
	uint8_t pending_reason; /* ring_full, or tx_full for a port */
	uint64_t pending_since; /* TSC when the oldest pending packet waited */
	struct rte_mbuf *pending[SL_BURST_MAX];
};

/* Prepares a context; rr is allocated here (free with _fini). 0 or -errno */
int sl_dispatch_init(struct sl_dispatch *d, struct sl_shm *shm,
		     uint16_t self_owner, struct sl_ctx_stats *fwd,
		     uint64_t *drops, sl_port_out_fn port_out, void *port_arg);
void sl_dispatch_fini(struct sl_dispatch *d);

/*
 * Resolves and hands on pkts[0..n), n <= SL_BURST_MAX, which must have no
 * pending packets before the call. Each packet's meta holds its verdict and
 * its current graph node (meta->service, SL_SERVICE_NONE at ingress).
 * Returns the number of packets left pending.
 */
uint16_t sl_dispatch(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n);

/*
 * A packet's meta as it enters from a port: *pre, with the port's RSS hash
 * as its flow hash when rss is set and the port gave one (set rss when
 * every port's hash is symmetric and alike: ports.c); otherwise the
 * software hash is computed only if a hop needs it.
 */
static inline void
sl_meta_enter(struct sl_pkt_meta *m, const struct sl_pkt_meta *pre,
	      const struct rte_mbuf *pkt, int rss)
{
	*m = *pre;
	if (rss && (pkt->ol_flags & RTE_MBUF_F_RX_RSS_HASH)) {
		m->flow_hash = pkt->hash.rss;
		m->flags |= SL_META_HASH;
	}
}

/*
 * Ingress of a burst whose packets all enter with the same metadata, *pre
 * (an I/O thread without the flow table): only each packet's flow hash may
 * differ, taken from the port's RSS hash when rss is set and the mbuf has
 * one (flow_hash, SL_META_HASH), as sluiced's ingress does. Counts the
 * burst in `in` (rx_pkts, rx_bytes; may be NULL) first. The first packet
 * is resolved once; when the answer holds for them all and is an
 * instance (a lone one), each packet's meta is written once, already in
 * the form the hand-off gives it, and the burst is enqueued in one call;
 * when it is a port, each gets *pre with the graph version fixed and the
 * burst goes to the port whole. Otherwise every packet gets *pre and goes
 * through sl_dispatch(). Either way the result is what writing *pre into
 * each packet and calling sl_dispatch() gives: packets that do not fit
 * stay pending with *pre and the graph version fixed for them
 * (SL_META_GRAPH).
 * Same preconditions as sl_dispatch(); returns the number left pending.
 */
uint16_t sl_dispatch_alike(struct sl_dispatch *d, struct rte_mbuf **pkts,
			   uint16_t n, const struct sl_pkt_meta *pre, int rss,
			   struct sl_ctx_stats *in);

/*
 * Retries pending packets; drops them once they have waited longer than
 * the backpressure bound (now is the TSC): as ring_full, or tx_full when
 * a port's TX queue was what stayed full. Returns the number still pending.
 */
uint16_t sl_dispatch_retry(struct sl_dispatch *d, uint64_t now);

/* Drops every pending packet with the given reason (used at shutdown). */
void sl_dispatch_drop_pending(struct sl_dispatch *d, enum sl_drop_reason r);

static inline uint16_t
sl_dispatch_pending(const struct sl_dispatch *d)
{
	return d->n_pending;
}

/*
 * Frees packets counted under a drop reason. Clears each packet's owner
 * first so a freed mbuf never looks held by an NF.
 */
void sl_drop_pkts(struct sl_shm *shm, uint64_t *drops, enum sl_drop_reason r,
		  struct rte_mbuf **pkts, uint16_t n);

/* Marks the span of a mempool put (flag may be NULL): what a dead NF's
 * cache may be in the middle of (struct sl_nf_slot, pool_op). */
static inline void
sl_pool_op_begin(uint32_t *flag)
{
	if (flag != NULL) {
		__atomic_store_n(flag, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

static inline void
sl_pool_op_end(uint32_t *flag)
{
	if (flag != NULL) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(flag, 0, __ATOMIC_RELAXED);
	}
}

/*
 * A multi-producer ring's producer side as it stands (see sl_ring_unstick).
 */
struct sl_ring_prod {
	uint32_t head;
	uint32_t tail;
};

/*
 * Is another producer inside an enqueue on r (or did one die inside one)?
 * Producers of the rings NFs share (NF rx rings, sluiced's message ring)
 * check this first and back off, where rte_ring would wait for the other
 * producer's progress and spin for ever if that producer was killed: so a
 * killed NF can hang neither sluiced nor another NF. What is left is the
 * few nanoseconds between this check and rte_ring's own reservation.
 */
static inline int
sl_ring_prod_busy(const struct rte_ring *r)
{
	return __atomic_load_n(&r->prod.head, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
}

static inline void
sl_ring_prod_get(const struct rte_ring *r, struct sl_ring_prod *p)
{
	p->tail = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
	p->head = __atomic_load_n(&r->prod.head, __ATOMIC_ACQUIRE);
}

/*
 * Rolls back the reservation of a producer that died inside an enqueue:
 * `then` is the ring's producer side when the producer was found dead; if,
 * a grace period later (every live producer has finished what it was
 * doing), head and tail have not moved and differ, nobody else can be in
 * there (they all back off on sl_ring_prod_busy), and head goes back to
 * tail. Returns the slots rolled back (their packets were never handed
 * on), or 0.
 */
uint32_t sl_ring_unstick(struct rte_ring *r, const struct sl_ring_prod *then);

/*
 * The packet's flow hash, computed on first use and cached in its meta:
 * the port's RSS hash when the port gave one (set at ingress), otherwise
 * the symmetric 5-tuple hash; 0 for non-IP or malformed packets. Lazy, so
 * a packet whose path never needs it (one instance per service, round
 * robin) is never parsed for it; at most once per packet otherwise.
 */
uint32_t sl_meta_flow_hash(const struct rte_mbuf *m, struct sl_pkt_meta *meta);

/* The flow-table key of a 5-tuple: canonical, so both directions of a
 * connection make the same key. */
void sl_flow_key_make(const struct sl_5tuple *t, struct sl_flow_key *k);
/* The flow table's signature of a key when the port gave no RSS hash. */
uint32_t sl_flow_key_hash(const struct sl_flow_key *k);
/* The 5-tuple of a key (in its canonical direction). */
void sl_flow_key_tuple(const struct sl_flow_key *k, struct sl_5tuple *t);

#define SL_FLOW_HASH_SEED 0x5bd1e995u

/*
 * The canonical parts of an IPv4 5-tuple (the one definition; the lower
 * end first, addresses and ports compared as numbers): returns the key's first 8
 * bytes (family, proto, port_lo, port_hi, pad0) built in a register;
 * *lo, *hi: the addresses.
 */
static inline uint64_t
sl_flow_key4_parts(const struct sl_5tuple *t, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = t->src.v4, b = t->dst.v4;
	uint16_t pa = t->sport, pb = t->dport;
	/* Compared as addresses and ports (network order read as numbers),
	 * so that the key names the lower end first, as flow.list shows it:
	 * one byte swap each, in registers. */
	uint32_t na = rte_be_to_cpu_32(a), nb = rte_be_to_cpu_32(b);

	if (na > nb ||
	    (na == nb && rte_be_to_cpu_16(pa) > rte_be_to_cpu_16(pb))) {
		uint32_t x = a;
		uint16_t px = pa;

		a = b;
		b = x;
		pa = pb;
		pb = px;
	}
	*lo = a;
	*hi = b;
	return (uint64_t)4 | (uint64_t)t->proto << 8 | (uint64_t)pa << 16 |
	       (uint64_t)pb << 32;
}

/* The IPv4 table's key of an IPv4 flow key. */
static inline void
sl_flow_key4_of(const struct sl_flow_key *k, struct sl_flow_key4 *k4)
{
	memcpy(&k4->head, k, sizeof(k4->head));
	memcpy(&k4->addr_lo, k->addr_lo, 4);
	memcpy(&k4->addr_hi, k->addr_hi, 4);
}

/* The entry index of position p of the IPv6 table (or p, an error). */
static inline int32_t
sl_flow_entry6(const struct sl_flow_table *ft, int32_t p)
{
	return p < 0 ? p : (int32_t)(ft->base6 + (uint32_t)p);
}

/*
 * Looks a key up in its family's table (IPv4: the compact key). Returns
 * its entry index, or a negative errno. Any process may call it (the
 * tables are lock-free for readers).
 */
static inline int32_t
sl_flow_table_lookup(const struct sl_flow_table *ft,
		     const struct sl_flow_key *k, uint32_t sig)
{
	struct sl_flow_key4 k4;
	int32_t p;

	if (k->family == 4) {
		sl_flow_key4_of(k, &k4);
		return rte_hash_lookup_with_hash(ft->hash, &k4, sig);
	}
	p = rte_hash_lookup_with_hash(ft->hash6, k, sig);
	return sl_flow_entry6(ft, p);
}

/* The signature of an IPv4 key from its parts (see sl_flow_key_hash). */
static inline uint32_t
sl_flow_key_hash_v4(uint64_t head, uint32_t lo, uint32_t hi)
{
	return rte_hash_crc_4byte(
		hi,
		rte_hash_crc_4byte(lo, rte_hash_crc_8byte(head,
							  SL_FLOW_HASH_SEED)));
}

/*
 * The IPv4 table's key of an IPv4 5-tuple and its signature (what
 * sl_flow_key_make() + sl_flow_key4_of() + sl_flow_key_hash() give), in
 * one inline step from registers. Ingress takes the same two steps apart
 * (sl_flow_key4_parts(), then sl_flow_key_hash_v4() unless the key is the
 * previous packet's).
 */
static inline uint32_t
sl_flow_key4_make_hash(const struct sl_5tuple *t, struct sl_flow_key4 *k4)
{
	uint32_t lo, hi;
	uint64_t head = sl_flow_key4_parts(t, &lo, &hi);

	k4->head = head;
	k4->addr_lo = lo;
	k4->addr_hi = hi;
	return sl_flow_key_hash_v4(head, lo, hi);
}

/*
 * Asks for the flow entries that the next dispatch of this burst reads
 * (cached lookup: each packet's entry, for its overrides and pins), once
 * the packets' metadata lines are in: resolve() reads them one packet
 * after the other, and at a million flows each is a miss (memory, or the
 * I/O thread's core, which wrote its counters) that would otherwise be
 * waited for in turn instead of all at once.
 */
static inline void
sl_flow_prefetch(const struct sl_shm *shm, struct rte_mbuf *const *pkts,
		 uint16_t n)
{
	if (shm->flow.lookup != SL_LOOKUP_CACHED)
		return;
	for (uint16_t i = 0; i < n; i++) {
		uint32_t f = sl_meta(pkts[i], shm->dynfield_offset)->flow;

		if (f < shm->flow.capacity)
			rte_prefetch0(sl_flow_entry(shm, f));
	}
}

/*
 * Picks the instance of service s for a packet with flow hash h, or
 * SL_INSTANCE_NONE if the service has no live instance. rr is the caller's
 * round-robin counter for s.
 */
static inline uint16_t
sl_lb_pick(const struct sl_shm *shm, uint16_t s, uint32_t h, uint32_t *rr)
{
	const struct sl_service *svc = &shm->services[s];
	uint16_t n = __atomic_load_n(&svc->n_live, __ATOMIC_ACQUIRE);
	uint16_t inst;

	if (n == 0)
		return SL_INSTANCE_NONE;
	if (n == 1)
		return svc->live[0];
	if (__atomic_load_n(&svc->lb_mode, __ATOMIC_RELAXED) == SL_LB_RR)
		return svc->live[(*rr)++ % n];
	inst = __atomic_load_n(&svc->bucket[h & (SL_LB_BUCKETS - 1)],
			       __ATOMIC_RELAXED);
	/* A bucket may briefly name an instance that is leaving: fall back
	 * to a stable choice among the live ones until it is rebalanced. */
	if (inst >= shm->max_nfs ||
	    __atomic_load_n(&shm->nfs[inst].state, __ATOMIC_RELAXED) !=
		    SL_NF_RUNNING)
		inst = svc->live[h % n];
	return inst;
}

/*
 * Shortest queue: the instance among the n live ones of svc whose rx ring
 * holds the fewest packets (the first on ties). Reads n ring counts.
 */
static inline uint16_t
sl_lb_pick_queue(const struct sl_shm *shm, const struct sl_service *svc,
		 uint16_t n)
{
	uint16_t best = svc->live[0];
	unsigned int best_n = UINT32_MAX;

	for (uint16_t k = 0; k < n; k++) {
		uint16_t inst = svc->live[k];
		unsigned int c = rte_ring_count(shm->nfs[inst].rx);

		if (c < best_n) {
			best_n = c;
			best = inst;
		}
	}
	return best;
}

#endif /* SL_DISPATCH_H */
