/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ingress (the RX thread): every packet of a burst is looked up once in
 * the flow table; new flows are classified by the published rule set and
 * get an entry with the published wildcard requests applied; each packet
 * leaves with its entry and graph version in its meta.
 *
 * The per-packet loops are one function once compiled: the stages below
 * are always inlined into mgr_flow_ingress and share the burst's arrays on
 * its stack (struct burst), so the split costs no call nor indirection.
 * State reached per burst: fs (the caller's pointer) and shm.
 */
#include <errno.h>
#include <stdint.h>

#include <rte_hash.h>
#include <rte_prefetch.h>

#include "sl_classifier.h"
#include "sl_graph.h"
#include "sl_match.h"
#include "sluice/pkt.h"
#include "sluiced.h"

#define NO_SAME UINT16_MAX
#define INGRESS_INLINE static inline __attribute__((always_inline))

/* Classifies the first packet of a flow: the graph of the best rule, or
 * the default graph. */
static void
classify(const struct sl_ruleset *rs, const struct sl_5tuple *const *t,
	 const uint16_t *in_port, uint32_t n, uint16_t *graph, uint32_t *rule)
{
	uint32_t res[SL_BURST_MAX];

	if (rs == NULL || rs->n == 0) {
		for (uint32_t i = 0; i < n; i++) {
			graph[i] = 0;
			rule[i] = 0;
		}
		return;
	}
	sl_classifier_lookup(rs->cls, t, in_port, n, res);
	/* A flow entry is a connection: a packet that matches no rule in its
	 * own direction is tried in the other (the reply may come first). */
	for (uint32_t i = 0; i < n; i++) {
		struct sl_5tuple r;
		const struct sl_5tuple *rp = &r;

		if (res[i] != 0)
			continue;
		r = *t[i];
		r.src = t[i]->dst;
		r.dst = t[i]->src;
		r.sport = t[i]->dport;
		r.dport = t[i]->sport;
		sl_classifier_lookup(rs->cls, &rp, &in_port[i], 1, &res[i]);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct sl_rule *r = res[i] ? &rs->rules[res[i] - 1]
						 : NULL;

		graph[i] = r != NULL ? r->graph : 0;
		rule[i] = r != NULL ? r->id : 0;
	}
}

/* A wildcard RequestMe(S) on a new flow of logical graph `graph`: undo a
 * SkipMe of S, and every node of the graph with an edge to S defaults to
 * S (as mgr_flow_request does for live flows). Nothing on a chain. */
static void
wild_request_me(struct sl_shm *shm, struct sl_flow_entry *e, uint16_t graph,
		uint16_t s)
{
	uint16_t v = sl_graph_current(shm, graph);
	const struct sl_graph *g = v == SL_GRAPH_NONE ? NULL
						      : sl_graph_of(shm, v);
	union sl_flow_ovr *o = sl_flow_ovrs(shm, e);

	if (g == NULL || g->open)
		return;
	for (uint16_t k = 0; k < shm->flow.n_ovr; k++)
		if (o[k].f.kind == SL_OVR_SKIP && o[k].f.service == s) {
			__atomic_store_n(&o[k].u64, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&e->n_ovr, (uint8_t)(e->n_ovr - 1),
					 __ATOMIC_RELEASE);
		}
	for (uint16_t i = 0; i < g->n_nodes; i++) {
		union sl_flow_ovr d = {.u64 = 0};

		if (!sl_graph_allows(g, g->nodes[i], SL_HOP_SERVICE(s)))
			continue;
		d.f.service = g->nodes[i];
		d.f.kind = SL_OVR_DEFAULT;
		d.f.hop = SL_HOP_SERVICE(s);
		(void)mgr_flow_ovr_put(shm, e, d);
	}
}

static void
entry_create(struct sl_flowdir_state *fs, struct sl_shm *shm,
	     struct sl_flow_entry *e, uint16_t graph, const struct sl_5tuple *t,
	     uint16_t in_port, uint32_t len)
{
	const struct sl_wildset *ws =
		__atomic_load_n(&fs->wild, __ATOMIC_ACQUIRE);
	uint32_t *pin = sl_flow_pins(shm, e);
	union sl_flow_ovr *o = sl_flow_ovrs(shm, e);

	__atomic_store_n(&e->gen, (uint16_t)(e->gen + 1), __ATOMIC_RELEASE);
	e->graph = graph;
	e->graph_inc = __atomic_load_n(&fs->graph_inc[graph], __ATOMIC_ACQUIRE);
	e->last_ms = fs->now_ms;
	e->pkts = 1;
	e->bytes = len;
	e->n_ovr = 0;
	for (uint16_t k = 0; k < shm->flow.n_pins; k++)
		pin[k] = UINT32_MAX;
	for (uint16_t k = 0; k < shm->flow.n_ovr; k++)
		o[k].u64 = 0;
	for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
		if (!mgr_flow_match_either(&ws->w[i].match, t, in_port))
			continue;
		if (ws->w[i].request_me)
			wild_request_me(shm, e, graph, ws->w[i].ovr.f.service);
		else
			(void)mgr_flow_ovr_put(shm, e, ws->w[i].ovr);
	}
	__atomic_store_n(&e->state, SL_FLOW_LIVE, __ATOMIC_RELEASE);
}

/* Adds a key to its family's table: its entry index, or a negative errno
 * (-ENOSPC: that family's share of the table is full), as
 * rte_hash_add_key_with_hash() answers: an index, not an error return. */
static int32_t
table_add(struct sl_flow_table *ft, const struct sl_flow_key *k,
	  const struct sl_flow_key4 *k4, uint32_t sig)
{
	if (ft->n_live >= ft->max_flows)
		return -ENOSPC; /* index or -errno, as rte_hash */
	if (k->family == 4)
		return rte_hash_add_key_with_hash(ft->hash, k4, sig);
	if (ft->n_live6 >= ft->max_flows6)
		return -ENOSPC; /* index or -errno, as rte_hash */
	return sl_flow_entry6(ft,
			      rte_hash_add_key_with_hash(ft->hash6, k, sig));
}

/* Bulk lookup of the keys of one family (idx: which of the burst's keys),
 * writing entry indexes (or < 0) into pos[]. */
static void
table_lookup_bulk(const struct sl_flow_table *ft, int v6, const void **kp,
		  hash_sig_t *sig, const uint16_t *idx, uint16_t n,
		  int32_t *pos)
{
	int32_t r[SL_BURST_MAX];

	if (n == 0)
		return;
	rte_hash_lookup_with_hash_bulk(v6 ? ft->hash6 : ft->hash, kp, sig, n,
				       r);
	for (uint16_t j = 0; j < n; j++)
		pos[idx[j]] = v6 ? sl_flow_entry6(ft, r[j]) : r[j];
}

/* Adds a run of packets to an entry's counters, seen at now_ms. */
INGRESS_INLINE void
entry_count(struct sl_flow_entry *e, uint64_t pkts, uint64_t bytes,
	    uint32_t now_ms)
{
	if (e == NULL || pkts == 0)
		return;
	e->pkts += pkts;
	e->bytes += bytes;
	e->last_ms = now_ms;
}

/* One burst's working arrays, indexed by k (packets with a 5-tuple). */
struct burst {
	/* A packet's key: k4 for IPv4 (what that table stores), keys for
	 * IPv6; the 48-byte form of an IPv4 key is made only for new flows. */
	struct sl_flow_key4 k4[SL_BURST_MAX];
	struct sl_flow_key keys[SL_BURST_MAX];
	struct sl_5tuple tup[SL_BURST_MAX];
	const void *kp4[SL_BURST_MAX], *kp6[SL_BURST_MAX];
	hash_sig_t sig[SL_BURST_MAX], sig4[SL_BURST_MAX], sig6[SL_BURST_MAX];
	int32_t pos[SL_BURST_MAX];
	uint16_t idx[SL_BURST_MAX]; /* k -> packet */
	uint16_t i4[SL_BURST_MAX], i6[SL_BURST_MAX], n4, n6;
	uint16_t nk, miss[SL_BURST_MAX], nm;
	/* same[k]: the earlier packet whose IPv4 lookup answers for k's (its
	 * key is the key of the last IPv4 packet looked up), or NO_SAME. */
	uint16_t same[SL_BURST_MAX];
};

/* Parses and hashes each packet; sets nk, n4, n6 and the keys. */
INGRESS_INLINE void
burst_keys(struct burst *b, struct sl_flow_table *ft, struct rte_mbuf **pkts,
	   uint16_t n, int off)
{
	/* Counters in locals, stored once: b's address escapes. */
	uint16_t nk = 0, n4 = 0, n6 = 0, last4 = NO_SAME;
	uint64_t l_head = 0; /* k4[last4], in registers */
	uint32_t l_lo = 0, l_hi = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *meta = sl_meta(pkts[i], off);
		/* The port's RSS hash (symmetric key) when it gave one; the
		 * naive ablation always hashes in software, as every later
		 * hop will. */
		int rss = (meta->flags & SL_META_HASH) &&
			  ft->lookup == SL_LOOKUP_CACHED;

		meta->flow = SL_FLOW_NONE;
		if (sl_pkt_flow_tuple(pkts[i], &b->tup[nk]) != 0) {
			ft->st.non_ip++;
			continue;
		}
		/* The table is keyed by sluiced's own hash, never the
		 * port's, so the control thread finds any key in O(1). */
		b->same[nk] = NO_SAME;
		if (likely(b->tup[nk].family == 4)) {
			uint32_t lo, hi;
			uint64_t head =
				sl_flow_key4_parts(&b->tup[nk], &lo, &hi);

			b->k4[nk].head = head;
			b->k4[nk].addr_lo = lo;
			b->k4[nk].addr_hi = hi;
			if (last4 != NO_SAME && head == l_head && lo == l_lo &&
			    hi == l_hi) {
				/* The flow of the IPv4 packet before (either
				 * direction): a burst is often a train of one
				 * flow. Its lookup answers for this one, as
				 * the table does not change until all are
				 * looked up: no hash, no second lookup. */
				b->sig[nk] = b->sig[last4];
				b->same[nk] = last4;
			} else {
				b->sig[nk] = sl_flow_key_hash_v4(head, lo, hi);
				b->kp4[n4] = &b->k4[nk];
				b->sig4[n4] = b->sig[nk];
				b->i4[n4++] = nk;
				last4 = nk;
				l_head = head;
				l_lo = lo;
				l_hi = hi;
			}
		} else {
			sl_flow_key_make(&b->tup[nk], &b->keys[nk]);
			b->sig[nk] = sl_flow_key_hash(&b->keys[nk]);
			b->kp6[n6] = &b->keys[nk];
			b->sig6[n6] = b->sig[nk];
			b->i6[n6++] = nk;
		}
		if (!rss)
			meta->flow_hash = b->sig[nk];
		meta->flags |= SL_META_HASH;
		b->idx[nk++] = i;
	}
	b->nk = nk;
	b->n4 = n4;
	b->n6 = n6;
}

/* Looks the keys up; hits get their entry in meta, misses go to miss[]. */
INGRESS_INLINE void
burst_lookup(struct burst *b, struct sl_flowdir_state *fs, struct sl_shm *shm,
	     struct rte_mbuf **pkts, int off)
{
	struct sl_flow_table *ft = &shm->flow;
	uint16_t nk = b->nk, nm = 0;

	ft->st.lookups += nk;
	table_lookup_bulk(ft, 0, b->kp4, b->sig4, b->i4, b->n4, b->pos);
	table_lookup_bulk(ft, 1, b->kp6, b->sig6, b->i6, b->n6, b->pos);
	if (b->n4 + b->n6 < nk)
		for (uint16_t k = 0; k < nk; k++)
			if (b->same[k] != NO_SAME)
				b->pos[k] = b->pos[b->same[k]];

	for (uint16_t k = 0; k < nk; k++)
		if (b->pos[k] >= 0)
			rte_prefetch0(sl_flow_entry(shm, (uint32_t)b->pos[k]));
	/* A deleted flow's next packet starts a new flow, classified anew,
	 * even if its entry is still waiting to be removed: remove it now. */
	if (unlikely(__atomic_load_n(&fs->del_marked, __ATOMIC_RELAXED) != 0))
		for (uint16_t k = 0; k < nk; k++) {
			uint32_t p = (uint32_t)b->pos[k];

			if (b->pos[k] < 0 ||
			    __atomic_load_n(&sl_flow_entry(shm, p)->state,
					    __ATOMIC_ACQUIRE) == SL_FLOW_LIVE)
				continue;
			/* DELETE, or FREE: an earlier packet of this burst
			 * removed it. If it cannot be removed yet (every
			 * limbo batch waits), the packet goes on classified
			 * but without an entry (below). */
			(void)mgr_flow_retire_deleted(fs, shm, p);
			b->pos[k] = -1;
		}
	for (uint16_t k = 0; k < nk; k++) {
		struct sl_pkt_meta *meta = sl_meta(pkts[b->idx[k]], off);

		if (b->pos[k] < 0) {
			b->miss[nm++] = k;
			continue;
		}
		meta->flow = (uint32_t)b->pos[k];
	}
	b->nm = nm;
	ft->st.hits += (uint64_t)(nk - nm);
}

/* New flows: classified all at once, then an entry each (or, the table
 * full, their rule's graph without one). */
static void
burst_new_flows(struct burst *b, struct sl_flowdir_state *fs,
		struct sl_shm *shm, struct rte_mbuf **pkts, int off)
{
	struct sl_flow_table *ft = &shm->flow;
	const struct sl_ruleset *rs =
		__atomic_load_n(&fs->rules, __ATOMIC_ACQUIRE);
	const struct sl_5tuple *tp[SL_BURST_MAX];
	uint16_t inp[SL_BURST_MAX], graph[SL_BURST_MAX];
	uint32_t rule[SL_BURST_MAX];

	for (uint16_t j = 0; j < b->nm; j++) {
		tp[j] = &b->tup[b->miss[j]];
		inp[j] = sl_meta(pkts[b->idx[b->miss[j]]], off)->in_port;
	}
	classify(rs, tp, inp, b->nm, graph, rule);
	for (uint16_t j = 0; j < b->nm; j++) {
		uint16_t k = b->miss[j];
		struct rte_mbuf *m = pkts[b->idx[k]];
		struct sl_pkt_meta *meta = sl_meta(m, off);
		int32_t p;

		if (b->tup[k].family == 4)
			sl_flow_key_make(&b->tup[k], &b->keys[k]);
		/* An earlier packet of this burst may have created it. */
		p = sl_flow_table_lookup(ft, &b->keys[k], b->sig[k]);
		if (p >= 0 &&
		    __atomic_load_n(&sl_flow_entry(shm, (uint32_t)p)->state,
				    __ATOMIC_ACQUIRE) == SL_FLOW_LIVE) {
			meta->flow = (uint32_t)p;
			b->pos[k] = p;
			ft->st.hits++;
			continue;
		}
		/* (Still there but deleted: could not be removed.) */
		p = p >= 0 ? -EAGAIN
			   : table_add(ft, &b->keys[k], &b->k4[k], b->sig[k]);
		if (p < 0) {
			/* Full: the packet goes on by its rule's graph,
			 * without an entry. */
			if (p != -EAGAIN)
				ft->st.table_full++;
			meta->graph = sl_graph_current(shm, graph[j]);
			if (meta->graph == SL_GRAPH_NONE)
				meta->graph = sl_graph_current(shm, 0);
			meta->flags |= SL_META_GRAPH;
			b->pos[k] = -1;
			continue;
		}
		fs->keys[p] = b->keys[k];
		fs->side[p].sig = b->sig[k];
		fs->side[p].rule = rule[j];
		fs->side[p].in_port = meta->in_port;
		entry_create(fs, shm, sl_flow_entry(shm, (uint32_t)p), graph[j],
			     &b->tup[k], meta->in_port, rte_pktmbuf_pkt_len(m));
		ft->n_live++;
		if ((uint32_t)p >= ft->base6)
			ft->n_live6++;
		ft->st.created++;
		meta->flow = (uint32_t)p;
		b->pos[k] = p;
		b->pos[k] |= INT32_MIN; /* created: counters set */
	}
}

/* Entry e's graph was removed (its id may be another graph's by now):
 * classifies the flow again; returns the graph version it now has. */
static uint16_t
entry_reclassify(struct sl_flowdir_state *fs, struct sl_shm *shm,
		 struct sl_flow_entry *e, const struct sl_5tuple *t,
		 uint16_t in_port, uint32_t p)
{
	const struct sl_ruleset *rs =
		__atomic_load_n(&fs->rules, __ATOMIC_ACQUIRE);
	uint16_t g, inc, gv;
	uint32_t r;

	classify(rs, &t, &in_port, 1, &g, &r);
	/* Read the graph's version once, after its incarnation: read twice,
	 * a removal in between left the packet with no graph
	 * (end_of_chain). */
	inc = __atomic_load_n(&fs->graph_inc[g], __ATOMIC_ACQUIRE);
	gv = sl_graph_current(shm, g);
	if (gv == SL_GRAPH_NONE) {
		g = 0;
		r = 0;
		inc = 0; /* the default is never removed */
		gv = sl_graph_current(shm, 0);
	}
	e->graph = g;
	e->graph_inc = inc;
	fs->side[p].rule = r;
	return gv;
}

/* Counters, last-seen, and the graph version for each packet; for a run
 * of packets of one entry, once (written once: every hop reads that
 * line, possibly on another core). */
INGRESS_INLINE void
burst_count(struct burst *b, struct sl_flowdir_state *fs, struct sl_shm *shm,
	    struct rte_mbuf **pkts, int off)
{
	struct sl_flow_entry *run = NULL;
	uint64_t run_pkts = 0, run_bytes = 0;
	uint16_t run_gv = SL_GRAPH_NONE;
	uint32_t now_ms = fs->now_ms;
	uint16_t nk = b->nk;

	for (uint16_t k = 0; k < nk; k++) {
		struct rte_mbuf *m = pkts[b->idx[k]];
		struct sl_pkt_meta *meta = sl_meta(m, off);
		struct sl_flow_entry *e;
		uint16_t gv;

		if (meta->flow == SL_FLOW_NONE)
			continue;
		e = sl_flow_entry(shm, meta->flow);
		if (e == run) {
			if (b->pos[k] >= 0) {
				run_pkts++;
				run_bytes += rte_pktmbuf_pkt_len(m);
			}
			meta->flow_gen = e->gen;
			meta->graph = run_gv;
			meta->flags |= SL_META_GRAPH;
			continue;
		}
		entry_count(run, run_pkts, run_bytes, now_ms);
		run = e;
		/* A hit (or created by an earlier packet of this burst). */
		run_pkts = b->pos[k] >= 0;
		run_bytes = run_pkts ? rte_pktmbuf_pkt_len(m) : 0;
		meta->flow_gen = e->gen;
		gv = sl_graph_current(shm, e->graph);
		if (e->graph != 0 &&
		    (gv == SL_GRAPH_NONE ||
		     e->graph_inc != __atomic_load_n(&fs->graph_inc[e->graph],
						     __ATOMIC_ACQUIRE)))
			gv = entry_reclassify(fs, shm, e, &b->tup[k],
					      meta->in_port, meta->flow);
		run_gv = gv;
		meta->graph = gv;
		meta->flags |= SL_META_GRAPH;
	}
	entry_count(run, run_pkts, run_bytes, now_ms);
}

void
mgr_flow_ingress(struct sl_flowdir_state *fs, struct sl_shm *shm,
		 struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_flow_table *ft = &shm->flow;
	struct burst b;
	int off = shm->dynfield_offset;

	if (ft->lookup == SL_LOOKUP_OFF)
		return; /* dispatch gives every packet the default graph */
	burst_keys(&b, ft, pkts, n, off);
	if (b.nk == 0)
		return;
	burst_lookup(&b, fs, shm, pkts, off);
	if (b.nm > 0)
		burst_new_flows(&b, fs, shm, pkts, off);
	burst_count(&b, fs, shm, pkts, off);
}
