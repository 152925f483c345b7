/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ring.h>

#include "sl_dispatch.h"
#include "sl_futex.h"
#include "sl_graph.h"
#include "sluice/pkt.h"

/* A resolved destination: kind in bits 32..39. */
enum { DEST_DROP = 1, DEST_INST, DEST_PORT };
#define DEST(kind, svc, id)                                                    \
	(((uint64_t)(kind) << 32) | ((uint64_t)(svc) << 16) | (uint64_t)(id))
#define DEST_KIND(d) ((unsigned)((d) >> 32))
#define DEST_SVC(d) ((uint16_t)((d) >> 16))
#define DEST_ID(d) ((uint16_t)(d))

int
sl_dispatch_init(struct sl_dispatch *d, struct sl_shm *shm, uint16_t self_owner,
		 struct sl_ctx_stats *fwd, uint64_t *drops,
		 sl_port_out_fn port_out, void *port_arg)
{
	memset(d, 0, sizeof(*d));
	d->shm = shm;
	d->meta_off = shm->dynfield_offset;
	d->self_owner = self_owner;
	d->fwd = fwd;
	d->drops = drops;
	d->port_out = port_out;
	d->port_arg = port_arg;
	d->bp_cycles = shm->backpressure_cycles;
	d->rr = calloc(shm->max_services, sizeof(*d->rr));
	return d->rr == NULL ? -ENOMEM : 0;
}

void
sl_dispatch_fini(struct sl_dispatch *d)
{
	free(d->rr);
	d->rr = NULL;
}

void
sl_drop_pkts(struct sl_shm *shm, uint64_t *drops, enum sl_drop_reason r,
	     struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		sl_meta(pkts[i], shm->dynfield_offset)->owner = 0;
	rte_pktmbuf_free_bulk(pkts, n);
	drops[r] += n;
}

uint32_t
sl_meta_flow_hash(const struct rte_mbuf *m, struct sl_pkt_meta *meta)
{
	struct sl_5tuple t;

	if (!(meta->flags & SL_META_HASH)) {
		meta->flow_hash =
			sl_pkt_flow_tuple(m, &t) == 0 ? sl_5tuple_hash(&t) : 0;
		meta->flags |= SL_META_HASH;
	}
	return meta->flow_hash;
}

static inline int
inst_running(const struct sl_shm *shm, uint16_t inst, uint16_t s)
{
	return inst < shm->max_nfs &&
	       __atomic_load_n(&shm->nfs[inst].state, __ATOMIC_RELAXED) ==
		       SL_NF_RUNNING &&
	       shm->nfs[inst].service == s;
}

/*
 * The instance of service s for a flow with an entry: its pinned instance
 * while that one runs; otherwise the load balancer's choice, pinned with a
 * compare-and-swap (the first writer wins; everyone then uses its pin).
 * Without a free pin slot the flow is balanced by its hash bucket.
 */
static uint16_t
pick_pinned(struct sl_dispatch *d, uint16_t s, const struct rte_mbuf *m,
	    struct sl_pkt_meta *meta, struct sl_flow_entry *e, uint16_t n,
	    int *sticky)
{
	const struct sl_shm *shm = d->shm;
	const struct sl_service *svc = &shm->services[s];
	uint32_t *pin = sl_flow_pins(shm, e);
	uint16_t np = shm->flow.n_pins;

	for (int tries = 0; tries < 4; tries++) {
		uint32_t *slot = NULL, old = UINT32_MAX;
		uint16_t inst;

		for (uint16_t k = 0; k < np; k++) {
			uint32_t v = __atomic_load_n(&pin[k], __ATOMIC_ACQUIRE);

			if (v == UINT32_MAX) {
				if (slot == NULL)
					slot = &pin[k];
				continue;
			}
			if ((v >> 16) != s)
				continue;
			if (inst_running(shm, (uint16_t)v, s)) {
				*sticky =
					1; /* the flow's pin: its next packets' too */
				return (uint16_t)v;
			}
			slot = &pin[k]; /* its instance left: re-pin */
			old = v;
			break;
		}
		if (n == 0)
			return SL_INSTANCE_NONE;
		if (svc->lb_mode == SL_LB_QUEUE)
			inst = sl_lb_pick_queue(shm, svc, n);
		else
			inst = sl_lb_pick(shm, s, sl_meta_flow_hash(m, meta),
					  &d->rr[s]);
		if (slot == NULL)
			return inst; /* no room to pin: hash bucket */
		if (__atomic_compare_exchange_n(slot, &old,
						(uint32_t)s << 16 | inst, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return inst;
		/* Someone pinned meanwhile: look again. */
	}
	return sl_lb_pick(shm, s, sl_meta_flow_hash(m, meta), &d->rr[s]);
}

/*
 * The instance of service s for this packet (SL_INSTANCE_NONE if none).
 * *sticky is set when the choice holds for every packet whose metadata
 * routes alike (same flow entry, or no entry): a lone instance, or the
 * flow's pin; a round-robin, shortest-queue or hash choice is per packet.
 */
static inline uint16_t
pick(struct sl_dispatch *d, uint16_t s, const struct rte_mbuf *m,
     struct sl_pkt_meta *meta, struct sl_flow_entry *e, int *sticky)
{
	const struct sl_service *svc = &d->shm->services[s];
	uint16_t n = __atomic_load_n(&svc->n_live, __ATOMIC_ACQUIRE);
	uint8_t mode = __atomic_load_n(&svc->lb_mode, __ATOMIC_RELAXED);

	/* A flow with an entry is pinned even to a lone instance, so that a
	 * replica joining later leaves it where it is. */
	if (e != NULL && mode != SL_LB_RR && d->shm->flow.n_pins > 0)
		return pick_pinned(d, s, m, meta, e, n, sticky);
	if (n <= 1) { /* no choice to make: no hash needed */
		*sticky = 1;
		return n == 0 ? SL_INSTANCE_NONE : svc->live[0];
	}
	if (mode == SL_LB_QUEUE)
		return sl_lb_pick_queue(d->shm, svc, n);
	return sl_lb_pick(d->shm, s,
			  mode == SL_LB_FLOW ? sl_meta_flow_hash(m, meta) : 0,
			  &d->rr[s]);
}

void
sl_flow_key_make(const struct sl_5tuple *t, struct sl_flow_key *k)
{
	const uint8_t *a = t->src.v6, *b = t->dst.v6;
	uint16_t pa = t->sport, pb = t->dport;
	uint64_t x[2], y[2];
	uint32_t lo, hi;
	int c;

	if (t->family == 4) {
		/* The first 8 bytes stored once from a register: reading them
		 * back after byte-sized stores missed store forwarding. */
		uint64_t head = sl_flow_key4_parts(t, &lo, &hi);

		RTE_BUILD_BUG_ON(offsetof(struct sl_flow_key, port_hi) != 4 ||
				 offsetof(struct sl_flow_key, addr_lo) != 8);
		memset(k, 0, sizeof(*k));
		memcpy(k, &head, sizeof(head));
		memcpy(k->addr_lo, &lo, 4);
		memcpy(k->addr_hi, &hi, 4);
		return;
	}
	/* The lower end first (as flow.list names the flow): the addresses
	 * compared as two big-endian integers each, not byte by byte: this
	 * runs per packet on the I/O thread, where a libc memcmp shows (see
	 * docs/performance.md, flow director). */
	memcpy(x, a, 16);
	memcpy(y, b, 16);
	for (int i = 0; i < 2; i++) {
		x[i] = rte_be_to_cpu_64(x[i]);
		y[i] = rte_be_to_cpu_64(y[i]);
	}
	c = x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0])
			 : (x[1] > y[1]) - (x[1] < y[1]);
	memset(k, 0, sizeof(*k));
	k->family = t->family;
	k->proto = t->proto;
	if (c > 0 || (c == 0 && rte_be_to_cpu_16(pa) > rte_be_to_cpu_16(pb))) {
		/* canonical: lower end first */
		const uint8_t *z = a;
		uint16_t pz = pa;

		a = b;
		b = z;
		pa = pb;
		pb = pz;
	}
	memcpy(k->addr_lo, a, 16);
	memcpy(k->addr_hi, b, 16);
	k->port_lo = pa;
	k->port_hi = pb;
}

uint32_t
sl_flow_key_hash(const struct sl_flow_key *k)
{
	uint64_t head;
	uint32_t h;

	/* CRC32-C over the canonical key's meaningful bytes: symmetric, and
	 * spreads the 1M-flow captures (addresses differing in a few bits)
	 * evenly over the cuckoo buckets. An IPv4 key hashes 16 bytes, not
	 * the 48 of the whole key (its zero padding only permutes the CRC):
	 * 3 CRC instructions instead of 6 per packet at ingress. */
	memcpy(&head, k, sizeof(head)); /* family, proto, ports */
	if (k->family == 4) {
		uint32_t a, b;

		memcpy(&a, k->addr_lo, 4);
		memcpy(&b, k->addr_hi, 4);
		return sl_flow_key_hash_v4(head, a, b);
	}
	h = rte_hash_crc_8byte(head, SL_FLOW_HASH_SEED);
	return rte_hash_crc(k->addr_lo, 32, h);
}

void
sl_flow_key_tuple(const struct sl_flow_key *k, struct sl_5tuple *t)
{
	unsigned int alen = k->family == 4 ? 4 : 16;

	memset(t, 0, sizeof(*t));
	t->family = k->family;
	t->proto = k->proto;
	t->sport = k->port_lo;
	t->dport = k->port_hi;
	memcpy(k->family == 4 ? (uint8_t *)&t->src.v4 : t->src.v6, k->addr_lo,
	       alen);
	memcpy(k->family == 4 ? (uint8_t *)&t->dst.v4 : t->dst.v6, k->addr_hi,
	       alen);
}

/*
 * The packet's flow-table entry, or NULL (no entry, or the entry was
 * recycled since the packet cached it). In naive mode the cached position
 * is ignored after ingress: the packet is parsed, hashed and looked up
 * again, as a flow director without the cache would.
 */
static inline struct sl_flow_entry *
flow_of(struct sl_dispatch *d, const struct rte_mbuf *m,
	struct sl_pkt_meta *meta)
{
	const struct sl_shm *shm = d->shm;
	struct sl_flow_entry *e;

	if (shm->flow.lookup == SL_LOOKUP_NAIVE &&
	    meta->service != SL_SERVICE_NONE) {
		struct sl_5tuple t;
		struct sl_flow_key k;
		int32_t pos;

		meta->flow = SL_FLOW_NONE;
		if (sl_pkt_flow_tuple(m, &t) != 0)
			return NULL;
		sl_flow_key_make(&t, &k);
		pos = sl_flow_table_lookup(&shm->flow, &k,
					   sl_flow_key_hash(&k));
		if (pos < 0)
			return NULL;
		e = sl_flow_entry(shm, (uint32_t)pos);
		meta->flow = (uint32_t)pos;
		meta->flow_gen = (uint16_t)e->gen;
		return e;
	}
	/* SL_FLOW_NONE is above any capacity; so is a position an NF
	 * scribbled over: one compare for both. */
	if (meta->flow >= shm->flow.capacity)
		return NULL;
	e = sl_flow_entry(shm, meta->flow);
	return (uint16_t)__atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) ==
			       meta->flow_gen
		       ? e
		       : NULL;
}

/* Finds an override of kind for service s in the flow's entry. */
static inline int
flow_ovr(const struct sl_shm *shm, struct sl_flow_entry *e, uint16_t s,
	 uint16_t kind, sl_hop_t *hop)
{
	const union sl_flow_ovr *o;

	if (e == NULL || __atomic_load_n(&e->n_ovr, __ATOMIC_RELAXED) == 0)
		return 0;
	o = sl_flow_ovrs(shm, e);
	for (uint16_t k = 0; k < shm->flow.n_ovr; k++) {
		union sl_flow_ovr v = {
			.u64 = __atomic_load_n(&o[k].u64, __ATOMIC_RELAXED)};

		if (v.f.kind == kind && v.f.service == s) {
			if (hop != NULL)
				*hop = v.f.hop;
			return 1;
		}
	}
	return 0;
}

/* Default next hop of service s for this flow: its override, if the graph
 * allows it, else the graph's default edge. */
static inline sl_hop_t
default_hop(const struct sl_shm *shm, const struct sl_graph *g,
	    struct sl_flow_entry *e, uint16_t s)
{
	sl_hop_t hop;

	if (s >= shm->max_services)
		return SL_HOP_NONE;
	if (flow_ovr(shm, e, s, SL_OVR_DEFAULT, &hop) &&
	    sl_graph_allows(g, s, hop))
		return hop;
	return g->next[s];
}

/*
 * Where one packet goes. Reads its meta (and may cache its flow hash).
 * Sets *sticky when the answer holds for the next packets of the burst
 * whose metadata routes alike (see route_key): everything but a choice
 * made per packet (load balancer, naive lookup, hop limit).
 */
static inline uint64_t
resolve(struct sl_dispatch *d, const struct rte_mbuf *m,
	struct sl_pkt_meta *meta, int *sticky)
{
	const struct sl_shm *shm = d->shm;
	const struct sl_graph *g;
	struct sl_flow_entry *e;
	sl_hop_t hop = meta->verdict;
	uint16_t id, inst, s = meta->service;
	int lone = 0;

	/* The naive ablation looks the flow up again for every packet. */
	*sticky = shm->flow.lookup != SL_LOOKUP_NAIVE || s == SL_SERVICE_NONE;
	if (d->all_out)
		return DEST(DEST_PORT, 0, SL_PORT_NONE);
	if (!(meta->flags & SL_META_GRAPH)) {
		/* Made by an NF, or the flow table is off: the default. */
		meta->graph = sl_graph_current(shm, 0);
		meta->flags |= SL_META_GRAPH;
	}
	g = meta->graph == SL_GRAPH_NONE ? NULL : sl_graph_of(shm, meta->graph);
	if (g == NULL && meta->graph != SL_GRAPH_NONE)
		return DEST(DEST_DROP, 0, SL_DROP_GRAPH_GONE);
	if (s != SL_SERVICE_NONE && s >= shm->max_services)
		return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
	/* Only NEXT and TO read the flow's entry (overrides, skips, pins): a
	 * packet on its way out, resolved by an NF, or dropped does not touch
	 * the entry's line, which at a million flows is a miss each time. The
	 * naive ablation looks the flow up again at every hop all the same. */
	e = shm->flow.lookup == SL_LOOKUP_NAIVE ||
			    (shm->flow.lookup == SL_LOOKUP_CACHED &&
			     (sl_verdict_kind(hop) == SL_VERDICT_NEXT ||
			      sl_verdict_kind(hop) == SL_VERDICT_TO))
		    ? flow_of(d, m, meta)
		    : NULL;

	switch (sl_verdict_kind(hop)) {
	case SL_VERDICT_NEXT:
		if (g == NULL) /* no default chain (yet) */
			return DEST(DEST_DROP, 0, SL_DROP_END_OF_CHAIN);
		hop = s == SL_SERVICE_NONE ? g->first
					   : default_hop(shm, g, e, s);
		break;
	case SL_VERDICT_TO:
	case SL_VERDICT_OUT:
		/* An NF's choice: only along an edge the graph allows. */
		if (g != NULL && s != SL_SERVICE_NONE &&
		    !(meta->flags & SL_META_PORT) &&
		    !sl_graph_allows(g, s, hop))
			return DEST(DEST_DROP, 0, SL_DROP_POLICY);
		break;
	default:
		break;
	}
	/* Services the flow skips hand it straight to their own default;
	 * the graph is acyclic, so this ends within max_services steps. */
	for (uint16_t guard = 0;
	     sl_verdict_kind(hop) == SL_VERDICT_TO && e != NULL &&
	     flow_ovr(shm, e, sl_verdict_id(hop), SL_OVR_SKIP, NULL);
	     guard++) {
		if (guard == shm->max_services)
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
		hop = g != NULL ? default_hop(shm, g, e, sl_verdict_id(hop))
				: SL_HOP_NONE;
	}
	id = sl_verdict_id(hop);
	switch (sl_verdict_kind(hop)) {
	case SL_VERDICT_NEXT:
		return DEST(DEST_DROP, 0, SL_DROP_END_OF_CHAIN);
	case SL_VERDICT_TO:
		if (id >= shm->max_services ||
		    !__atomic_load_n(&shm->services[id].used, __ATOMIC_ACQUIRE))
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
		/* A port's packet that went round a loop (an NF's TO on a
		 * chain, an override a later chain.set turned back) stops
		 * here; packets an NF made may circulate (speedtest). */
		if (unlikely(meta->flags >= shm->max_hops * SL_META_HOP)) {
			*sticky = 0; /* depends on in_port too */
			if (meta->in_port != UINT16_MAX)
				return DEST(DEST_DROP, 0, SL_DROP_HOP_LIMIT);
		}
		inst = pick(d, id, m, meta, e, &lone);
		*sticky &= lone;
		if (inst == SL_INSTANCE_NONE)
			return DEST(DEST_DROP, 0, SL_DROP_NO_INSTANCE);
		return DEST(DEST_INST, id, inst);
	case SL_VERDICT_OUT:
		if (id >= SL_MAX_PORTS || !shm->ports[id].used)
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
		if (!__atomic_load_n(&shm->ports[id].started, __ATOMIC_ACQUIRE))
			return DEST(DEST_DROP, 0, SL_DROP_PORT_DOWN);
		return DEST(DEST_PORT, 0, id);
	case SL_VERDICT_DROP:
		/* An NF's DROP, or the graph's "drop" sink reached by NEXT. */
		return sl_verdict_kind(meta->verdict) == SL_VERDICT_DROP
			       ? DEST(DEST_DROP, 0, SL_DROP_NF_VERDICT)
			       : DEST(DEST_DROP, 0, SL_DROP_GRAPH);
	default:
		return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
	}
}

static inline void
wake_if_sleeping(struct sl_dispatch *d, struct sl_nf_slot *slot)
{
	if (slot->mode != SL_MODE_SHARED)
		return;
	/* Pairs with the fence in the NF between storing sleeping = 1 and
	 * re-checking its rx ring: one of the two sides sees the other. */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&slot->sleeping, __ATOMIC_RELAXED)) {
		sl_futex_wake(&slot->wake);
		if (d->fwd != NULL)
			d->fwd->wakeups++;
	}
}

/* Counts n packets of these bytes handed to service svc: the context's
 * tx and the edge. */
static inline void
count_fwd(struct sl_dispatch *d, uint16_t svc, uint16_t n, uint64_t bytes)
{
	if (d->fwd != NULL) {
		d->fwd->tx_pkts += n;
		d->fwd->tx_bytes += bytes;
	}
	if (d->edge != NULL) {
		d->edge[svc].pkts += n;
		d->edge[svc].bytes += bytes;
	}
}

/* Enqueues what fits of pkts[0..n) into instance inst's rx ring. */
static inline uint16_t
enqueue_inst(struct sl_dispatch *d, uint16_t inst, struct rte_mbuf **pkts,
	     uint16_t n)
{
	struct rte_ring *r = d->shm->nfs[inst].rx;

	/* Another producer mid-enqueue (or dead in one): wait here, as for
	 * a full ring, never inside rte_ring on its progress. */
	if (unlikely(sl_ring_prod_busy(r)))
		return 0;
	return (uint16_t)rte_ring_enqueue_burst(r, (void **)pkts, n, NULL);
}

/* Keeps pkts[0..n) pending, in order (backpressure), for reason r. */
static void
keep_pending(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n,
	     uint8_t r)
{
	memcpy(d->pending, pkts, n * sizeof(*pkts));
	d->n_pending = n;
	d->pending_reason = r;
	d->pending_since = rte_rdtsc();
}

/*
 * Enqueues a run [0, n) to an instance. The metadata is written before the
 * enqueue (the consumer may read it at once) and restored on the packets
 * that did not fit, so that a pending packet still looks like ours. The
 * owner tag is left as it is: the consumer retags what it takes, so that
 * a packet is always either tagged by who holds it or in a ring (or just
 * taken from one), and sluiced can tell after a death (registry.c).
 */
static uint16_t
to_instance(struct sl_dispatch *d, uint16_t svc, uint16_t inst,
	    struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_nf_slot *slot = &d->shm->nfs[inst];
	sl_verdict_t saved_v[SL_BURST_MAX];
	uint16_t saved_s[SL_BURST_MAX];
	uint64_t bytes = 0;
	unsigned int k;

	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		/* Counted before the enqueue: the next hop may free or send
		 * an mbuf (in use again, another length) before we look. */
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
		saved_v[i] = m->verdict;
		saved_s[i] = m->service;
		m->verdict = SL_NEXT;
		m->service = svc;
		m->flags = (uint16_t)(m->flags + SL_META_HOP);
	}
	if (unlikely(d->fault != NULL))
		d->fault(d);
	k = enqueue_inst(d, inst, pkts, n);
	for (uint16_t i = (uint16_t)k; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		bytes -= rte_pktmbuf_pkt_len(pkts[i]); /* still ours */
		m->verdict = saved_v[i];
		m->service = saved_s[i];
		m->flags = (uint16_t)(m->flags - SL_META_HOP);
	}
	if (k > 0) {
		count_fwd(d, svc, (uint16_t)k, bytes);
		wake_if_sleeping(d, slot);
	}
	return (uint16_t)k;
}

/*
 * Hands a run to port_out. A resolved port is written into the verdict, so
 * that whoever transmits (sluiced's TX thread, for an NF) uses this
 * resolution and not a newer chain's: a packet sees one chain version.
 * Unresolved runs (all_out) keep their verdict for sluiced to resolve.
 * The owner tag is port_out's business: an NF's tx ring leaves it to
 * the TX thread, which retags; a driver needs 0 first (it frees).
 */
static uint16_t
to_port(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	uint16_t n)
{
	sl_verdict_t saved_v[SL_BURST_MAX];
	uint8_t fresh[SL_BURST_MAX];
	uint64_t np = 0, nb = 0; /* in registers, added once */
	uint16_t k;

	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		saved_v[i] = m->verdict;
		/* Resolved here for the first time (not a resolved packet an
		 * NF left for sluiced to transmit): that is the edge to count,
		 * with the lengths read now (a sent mbuf may be in use again,
		 * another length, by the time port_out returns). */
		fresh[i] = !(m->flags & SL_META_PORT);
		if (fresh[i]) {
			np++;
			nb += rte_pktmbuf_pkt_len(pkts[i]);
		}
		if (port != SL_PORT_NONE) {
			m->verdict = SL_OUT(port);
			m->flags |= SL_META_PORT;
		}
	}
	if (unlikely(d->fault != NULL))
		d->fault(d);
	k = d->port_out(d, port, pkts, n);
	for (uint16_t i = k; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		if (fresh[i]) { /* still ours */
			np--;
			nb -= rte_pktmbuf_pkt_len(pkts[i]);
		}
		m->verdict = saved_v[i];
		m->flags &= ~SL_META_PORT;
	}
	if (d->edge != NULL && port != SL_PORT_NONE) {
		struct sl_edge_ctr *e = &d->edge[SL_EDGE_PORT(d->shm, port)];

		e->pkts += np;
		e->bytes += nb;
	}
	return k;
}

/* A run from an NF's tx ring that sluiced drops for reason r: unless the
 * NF dropped it itself, its tx counted it (see undo_tx). */
static inline void
undo_tx(struct sl_dispatch *d, enum sl_drop_reason r, struct rte_mbuf **pkts,
	uint16_t n)
{
	if (!d->undo_tx || r == SL_DROP_NF_VERDICT || d->fwd == NULL)
		return;
	for (uint16_t i = 0; i < n; i++)
		d->fwd->undone_bytes += rte_pktmbuf_pkt_len(pkts[i]);
	d->fwd->undone_pkts += n;
}

/* Counts a run on the edge to column col (the graph's drop sink). */
static void
count_edge(struct sl_dispatch *d, uint32_t col, struct rte_mbuf **pkts,
	   uint16_t n)
{
	struct sl_edge_ctr *e = &d->edge[col];

	for (uint16_t i = 0; i < n; i++)
		e->bytes += rte_pktmbuf_pkt_len(pkts[i]);
	e->pkts += n;
}

/*
 * What resolve() reads of a packet's metadata: two packets with equal keys
 * resolve alike while the node's state stands (verdict, graph node, graph
 * version or none yet, hop count and flags, and the cached flow entry
 * when the flow table is on).
 */
struct route_key {
	uint64_t a; /* verdict, service, flags */
	uint64_t b; /* flow_gen << 48 | flow << 16 | graph (0 until set) */
};
#define ROUTE_KEY_B_GRAPH 0xffffu /* b without the flow entry */

static inline struct route_key
route_key(const struct sl_shm *shm, const struct sl_pkt_meta *m)
{
	struct route_key k;

	k.a = (uint64_t)m->verdict | (uint64_t)m->service << 32 |
	      (uint64_t)m->flags << 48;
	RTE_BUILD_BUG_ON(sizeof(m->graph) != 2);
	k.b = m->flags & SL_META_GRAPH ? m->graph : 0;
	if (shm->flow.lookup != SL_LOOKUP_OFF)
		k.b |= (uint64_t)m->flow << 16 | (uint64_t)m->flow_gen << 48;
	return k;
}

static inline int
route_key_eq(struct route_key x, struct route_key y)
{
	return ((x.a ^ y.a) | (x.b ^ y.b)) == 0;
}

/* Equal but for the flow entry (the graph version stays in the key). */
static inline int
route_key_eq_but_flow(struct route_key x, struct route_key y)
{
	return ((x.a ^ y.a) | ((x.b ^ y.b) & ROUTE_KEY_B_GRAPH)) == 0;
}

/*
 * 1 if resolve() gives this packet dest, the answer it gave the head of
 * a run whose metadata differs from this packet's only by the flow entry.
 * resolve() reads the entry only for NEXT and TO, and there only its
 * overrides (default changes, skips) and, to choose an instance, its pin
 * for that service (pick_pinned(): the first one). So an entry without
 * overrides routes a packet to a port, or drops it, as no entry does, and
 * to an instance as any entry pinned to it: a burst of many flows to one
 * port, or to one instance they are pinned to, is resolved once, not once
 * per flow. Cached mode only: the naive ablation looks each flow up again.
 */
static inline int
flow_alike(struct sl_dispatch *d, const struct rte_mbuf *m,
	   struct sl_pkt_meta *meta, uint64_t dest)
{
	const struct sl_shm *shm = d->shm;
	struct sl_flow_entry *e;
	unsigned int kind = sl_verdict_kind(meta->verdict);
	const uint32_t *pin;
	uint32_t want;

	if (kind != SL_VERDICT_NEXT && kind != SL_VERDICT_TO)
		return 1;
	e = flow_of(d, m, meta);
	if (e == NULL)
		return DEST_KIND(dest) != DEST_INST;
	if (__atomic_load_n(&e->n_ovr, __ATOMIC_RELAXED) != 0)
		return 0;
	if (DEST_KIND(dest) != DEST_INST)
		return 1;
	pin = sl_flow_pins(shm, e);
	want = (uint32_t)DEST_SVC(dest) << 16 | DEST_ID(dest);
	for (uint16_t k = 0; k < shm->flow.n_pins; k++) {
		uint32_t v = __atomic_load_n(&pin[k], __ATOMIC_ACQUIRE);

		if (v != UINT32_MAX && (v >> 16) == DEST_SVC(dest))
			return v == want;
	}
	return 0;
}

uint16_t
sl_dispatch(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t dest[SL_BURST_MAX];
	uint16_t i, j, k;

	RTE_ASSERT(d->n_pending == 0 && n <= SL_BURST_MAX);
	for (i = 0; i < n;) {
		struct sl_pkt_meta *meta = sl_meta(pkts[i], d->meta_off);
		struct route_key key = route_key(d->shm, meta);
		uint16_t had_graph = meta->flags & SL_META_GRAPH, graph;
		int sticky, set_graph, anyflow;

		dest[i] = resolve(d, pkts[i], meta, &sticky);
		/* The graph version resolve() fixed for a packet that had none
		 * (none in an all_out context, which leaves it to sluiced). */
		set_graph = !had_graph && (meta->flags & SL_META_GRAPH);
		graph = meta->graph;
		/* The same for other flows (flow_alike()). */
		anyflow = sticky && d->shm->flow.lookup == SL_LOOKUP_CACHED &&
			  flow_alike(d, pkts[i], meta, dest[i]);
		/* The packets behind it that route alike go the same way:
		 * a burst from one port or one NF is mostly one run, and is
		 * resolved once instead of once per packet. */
		for (i++; sticky && i < n; i++) {
			struct route_key k;

			meta = sl_meta(pkts[i], d->meta_off);
			k = route_key(d->shm, meta);
			if (!route_key_eq(k, key) &&
			    !(anyflow && route_key_eq_but_flow(k, key) &&
			      flow_alike(d, pkts[i], meta, dest[i - 1])))
				break;
			if (set_graph) {
				meta->graph = graph;
				meta->flags |= SL_META_GRAPH;
			}
			dest[i] = dest[i - 1];
		}
	}

	for (i = 0; i < n; i = j) {
		for (j = (uint16_t)(i + 1); j < n && dest[j] == dest[i]; j++)
			;
		switch (DEST_KIND(dest[i])) {
		case DEST_DROP:
			if (DEST_ID(dest[i]) == SL_DROP_GRAPH &&
			    d->edge != NULL)
				count_edge(d, SL_EDGE_DROP(d->shm), &pkts[i],
					   (uint16_t)(j - i));
			undo_tx(d, (enum sl_drop_reason)DEST_ID(dest[i]),
				&pkts[i], (uint16_t)(j - i));
			sl_pool_op_begin(d->pool_op);
			sl_drop_pkts(d->shm, d->drops,
				     (enum sl_drop_reason)DEST_ID(dest[i]),
				     &pkts[i], (uint16_t)(j - i));
			sl_pool_op_end(d->pool_op);
			continue;
		case DEST_INST:
			k = to_instance(d, DEST_SVC(dest[i]), DEST_ID(dest[i]),
					&pkts[i], (uint16_t)(j - i));
			break;
		default:
			k = to_port(d, DEST_ID(dest[i]), &pkts[i],
				    (uint16_t)(j - i));
			break;
		}
		if (k < j - i) {
			/* Backpressure: keep the rest, in order. */
			uint16_t rest = (uint16_t)(n - i - k);

			keep_pending(d, &pkts[i + k], rest,
				     DEST_KIND(dest[i]) == DEST_INST
					     ? SL_DROP_RING_FULL
					     : SL_DROP_TX_FULL);
			return rest;
		}
	}
	return 0;
}

uint16_t
sl_dispatch_alike(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n,
		  const struct sl_pkt_meta *pre, int rss,
		  struct sl_ctx_stats *in)
{
	struct sl_pkt_meta post = *pre, kept;
	uint64_t dest = 0, bytes = 0;
	uint16_t svc, k;
	int sticky = 0, one, port;

	RTE_ASSERT(d->n_pending == 0 && n <= SL_BURST_MAX);
	if (n == 0)
		return 0;
	/* What sl_dispatch() would answer for the first packet, on a copy
	 * of its meta-to-be; it holds for all when sticky (resolve() never
	 * reads the flow hash for a sticky answer). Per-flow state (the flow
	 * table) makes packets differ: not here. */
	if (d->shm->flow.lookup == SL_LOOKUP_OFF && !d->all_out &&
	    d->fault == NULL)
		dest = resolve(d, pkts[0], &post, &sticky);
	one = sticky && DEST_KIND(dest) == DEST_INST;
	port = sticky && DEST_KIND(dest) == DEST_PORT;
	/* As sl_dispatch() leaves a packet it keeps: the graph version
	 * fixed, nothing else changed. It is also what sl_dispatch() hands
	 * to_port(): the port's rewrite is to_port()'s own. */
	kept = post;
	/* to_instance()'s rewrite, written once instead of twice. */
	svc = DEST_SVC(dest);
	post.verdict = SL_NEXT;
	post.service = svc;
	post.flags = (uint16_t)(post.flags + SL_META_HOP);
	for (uint16_t i = 0; i < n; i++) {
		sl_meta_enter(sl_meta(pkts[i], d->meta_off),
			      one    ? &post
			      : port ? &kept
				     : pre,
			      pkts[i], rss);
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	}
	if (in != NULL) {
		in->rx_pkts += n;
		in->rx_bytes += bytes;
	}
	if (port) {
		/* sl_dispatch() without its walk over the burst. */
		k = to_port(d, DEST_ID(dest), pkts, n);
		if (k < n)
			keep_pending(d, pkts + k, (uint16_t)(n - k),
				     SL_DROP_TX_FULL);
		return (uint16_t)(n - k);
	}
	if (!one)
		return sl_dispatch(d, pkts, n);
	k = enqueue_inst(d, DEST_ID(dest), pkts, n);
	for (uint16_t i = k; i < n; i++) { /* still ours */
		bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		sl_meta_enter(sl_meta(pkts[i], d->meta_off), &kept, pkts[i],
			      rss);
	}
	if (k > 0) {
		count_fwd(d, svc, k, bytes);
		wake_if_sleeping(d, &d->shm->nfs[DEST_ID(dest)]);
	}
	if (k < n)
		keep_pending(d, pkts + k, (uint16_t)(n - k), SL_DROP_RING_FULL);
	return (uint16_t)(n - k);
}

uint16_t
sl_dispatch_retry(struct sl_dispatch *d, uint64_t now)
{
	struct rte_mbuf *pkts[SL_BURST_MAX];
	uint64_t since = d->pending_since;
	uint16_t n = d->n_pending;

	if (n == 0)
		return 0;
	memcpy(pkts, d->pending, n * sizeof(*pkts));
	d->n_pending = 0;
	if (sl_dispatch(d, pkts, n) == 0)
		return 0;
	d->pending_since = since; /* the wait counts from the first try */
	if (now - since > d->bp_cycles)
		sl_dispatch_drop_pending(d, (enum sl_drop_reason)
						    d->pending_reason);
	return d->n_pending;
}

void
sl_dispatch_drop_pending(struct sl_dispatch *d, enum sl_drop_reason r)
{
	undo_tx(d, r, d->pending, d->n_pending);
	sl_pool_op_begin(d->pool_op);
	sl_drop_pkts(d->shm, d->drops, r, d->pending, d->n_pending);
	sl_pool_op_end(d->pool_op);
	d->n_pending = 0;
}

uint32_t
sl_ring_unstick(struct rte_ring *r, const struct sl_ring_prod *then)
{
	struct sl_ring_prod now;
	uint32_t head = then->head;

	sl_ring_prod_get(r, &now);
	if (then->head == then->tail || now.head != then->head ||
	    now.tail != then->tail)
		return 0;
	if (!__atomic_compare_exchange_n((uint32_t *)(uintptr_t)&r->prod.head,
					 &head, then->tail, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return 0;
	return then->head - then->tail;
}
