/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flow director: an exact-match flow table (rte_hash, cuckoo, lock-free
 * readers) and wildcard rules (rte_acl through sl_classifier) that pick a
 * service graph for each new flow.
 *
 * Writers. The RX thread is the only writer of the hash: it looks every
 * packet up once at ingress, creates entries for new flows (classifying
 * their first packet), updates counters and last-seen times, ages idle
 * flows out and deletes the ones the control thread marked. A deleted
 * entry's position is recycled only after a grace period (every NF, I/O
 * and the control thread has gone round its loop), and each entry carries
 * a generation that packets cache with its position, so a packet still in
 * a ring never uses a recycled entry. After creation the control thread is
 * the only writer of an entry's overrides (cross-layer requests); pins are
 * set by compare-and-swap by whoever first sends the flow to a service.
 *
 * Rules and wildcard requests are immutable sets built by the control
 * thread and swapped atomically; the old set is freed after a grace
 * period.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "sl_classifier.h"
#include "sl_graph.h"
#include "sl_match.h"
#include "sluice/pkt.h"
#include "rules.h"
#include "sluiced.h"

#define LIMBO_BATCH 256
#define LIMBO_BATCHES 64
#define DEL_RING 4096
/* At most this much of the RX thread's time per millisecond goes to
 * removing deleted flows (ring and pass below): a delete of a million
 * flows takes seconds, and forwarding never stops for longer than this. */
#define DEL_WORK_US 50

/* Positions deleted together, recycled together after a grace period. */
struct limbo {
	uint32_t n;
	uint32_t pos[LIMBO_BATCH];
	struct sl_grace grace;
};

/* State of the RX thread's side (one RX thread). */
static struct {
	struct limbo b[LIMBO_BATCHES];
	unsigned int head; /* oldest closed batch */
	unsigned int n_closed;
	uint64_t open_since; /* TSC when the open batch got its first */
	uint32_t cursor;     /* aging sweep position */
	uint32_t pass;       /* deleted-flow pass position, while pass_on */
	uint32_t pass_seen;  /* g_del_missed when the pass (re)started */
	int pass_on;
	uint32_t now_ms;
	uint64_t last_tick;
	int self_io;
} rx;

/* control -> RX: positions to delete (uint32_t). */
static struct rte_ring *g_del_ring;
/* Entries in state SL_FLOW_DELETE (control adds, RX subtracts): while
 * none is, ingress does not look at a hit's state. */
static uint32_t g_del_marked;
/* Bumped whenever a marked entry is not (or no longer) on the ring: the
 * RX thread then passes over the table for marked entries. */
static uint32_t g_del_missed;
/* Each entry's key (sluiced-private; written by the RX thread when it
 * creates the entry). rte_hash_get_key_with_position() cannot be used: it
 * re-hashes the key with the table's hash function, and entries are
 * added with sluiced's symmetric hash (sl_flow_key_hash) instead. */
static struct sl_flow_key *g_keys;
/* Per position, sluiced-only: the rte_hash signature the key was added
 * with (to delete it), the id of the rule that classified it and the port
 * its first packet came in on (what in_port filters test). */
static struct flow_side {
	uint32_t sig;
	uint32_t rule;
	uint16_t in_port;
} *g_side;
/* Per graph id, bumped when that graph is removed (control thread; RX
 * reads it): an entry classified under an earlier incarnation of its
 * graph id belongs to a removed graph, even once another graph got the
 * id, and is classified again. */
static uint16_t *g_graph_inc;

size_t
sl_flow_entry_bytes(const struct sl_mgr_opts *o)
{
	size_t ovr_off = RTE_ALIGN_CEIL(sizeof(struct sl_flow_entry) +
					       sizeof(uint32_t) * o->flow_pins,
				       8);

	/* Whole cache lines: an entry never shares a line with another
	 * (they are written by different cores) nor straddles two more than
	 * its size needs. */
	return RTE_ALIGN_CEIL(ovr_off + sizeof(union sl_flow_ovr) * o->flow_ovr,
			      RTE_CACHE_LINE_SIZE);
}

/* One of the two tables (IPv4 or IPv6 keys). NULL after printing why. */
static struct rte_hash *
table_create(const char *suffix, uint32_t key_len,
	     uint32_t entries, const char *option)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
		.name = name,
		.entries = entries,
		.key_len = key_len,
		.socket_id = (int)rte_socket_id(),
		/* Lock-free readers (NFs in naive mode, the control thread),
		 * one writer (the RX thread); the extendable table makes the
		 * capacity exact instead of "about, unless unlucky". */
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
			      RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct rte_hash *h;

	/* Not the node's name: rte_hash makes ring and memzone names of
	 * "RG_HT_EXT_<name>" that DPDK cuts at 31 characters, which left no
	 * room for a 16-character node and made the two tables' names
	 * clash ("File exists"). Names are per DPDK file prefix, i.e. per
	 * node, anyway. */
	snprintf(name, sizeof(name), "sl_%s", suffix);
	h = rte_hash_create(&hp);
	if (h == NULL)
		fprintf(stderr,
			"sluiced: cannot create a flow table of %u entries: "
			"%s; lower %s or reserve more hugepages\n",
			entries, rte_strerror(rte_errno), option);
	return h;
}

/* Writes every page of p[0, n): backs it with memory now (calloc maps
 * zero pages lazily). Volatile: a zero store into calloc'ed memory is
 * otherwise dropped by the compiler. */
static void
touch_pages(void *p, size_t n)
{
	volatile char *c = p;

	for (size_t o = 0; p != NULL && o < n; o += 4096)
		c[o] = 0;
}

int
sl_flow_init(struct sl_mgr *m)
{
	struct sl_shm *shm = m->shm;
	struct sl_flow_table *ft = &shm->flow;
	char name[RTE_RING_NAMESIZE];
	size_t sz;

	ft->lookup = m->o.flow_lookup;
	ft->timeout_ms = m->o.flow_timeout_ms;
	ft->n_pins = (uint16_t)m->o.flow_pins;
	ft->n_ovr = (uint16_t)m->o.flow_ovr;
	ft->max_flows = m->o.flow_capacity;
	ft->max_flows6 = m->o.flow_capacity6; /* <= flow_capacity (main.c) */
	ft->ovr_off = (uint32_t)RTE_ALIGN_CEIL(
		sizeof(struct sl_flow_entry) + sizeof(uint32_t) * ft->n_pins,
		8);
	ft->stride = (uint32_t)sl_flow_entry_bytes(&m->o);
	rx.self_io = 0;
	g_graph_inc = calloc(m->o.max_graphs, sizeof(*g_graph_inc));
	if (g_graph_inc == NULL) {
		fprintf(stderr, "sluiced: out of memory for the graph table\n");
		return -1;
	}
	if (ft->lookup == SL_LOOKUP_OFF)
		return 0;
	ft->hash = table_create("flows", sizeof(struct sl_flow_key4),
				m->o.flow_capacity, "--flow-capacity");
	ft->hash6 = ft->hash == NULL
			    ? NULL
			    : table_create("flows6",
					   sizeof(struct sl_flow_key),
					   ft->max_flows6,
					   "--flow-capacity-v6");
	if (ft->hash == NULL || ft->hash6 == NULL)
		return -1;
	ft->base6 = (uint32_t)rte_hash_max_key_id(ft->hash) + 1;
	ft->capacity = ft->base6 + (uint32_t)rte_hash_max_key_id(ft->hash6) + 1;
	sz = (size_t)ft->capacity * ft->stride;
	ft->entries = rte_zmalloc("sl_flow_entries", sz, RTE_CACHE_LINE_SIZE);
	g_keys = calloc(ft->capacity, sizeof(*g_keys));
	g_side = calloc(ft->capacity, sizeof(*g_side));
	/* Touched now, not as flows first use each position: rte_hash hands
	 * out free positions in turn, so a table whose flows come and go
	 * would page these in for minutes (RSS growing to its fixed size,
	 * which looks like a leak). */
	touch_pages(g_keys, (size_t)ft->capacity * sizeof(*g_keys));
	touch_pages(g_side, (size_t)ft->capacity * sizeof(*g_side));
	snprintf(name, sizeof(name), "sl_%.16s_fdel", m->o.name);
	g_del_ring = rte_ring_create_elem(name, sizeof(uint32_t), DEL_RING,
					  (int)rte_socket_id(),
					  RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ft->entries == NULL || g_del_ring == NULL || g_keys == NULL ||
	    g_side == NULL) {
		fprintf(stderr,
			"sluiced: out of hugepage memory for %u flow entries "
			"(%zu MiB); lower --flow-capacity\n",
			ft->capacity, sz >> 20);
		return -1;
	}
	return 0;
}

/* ---- rules and wildcard requests (immutable sets) ----------------- */

struct sl_rule {
	uint32_t id;
	uint16_t graph;
	int32_t priority;
	struct sl_match match;
};

struct sl_ruleset {
	uint32_t n;
	struct sl_rule *rules; /* [n] */
	struct sl_classifier *cls;
};

struct sl_wild {
	uint32_t id;
	struct sl_match match;
	union sl_flow_ovr ovr; /* RequestMe: only ovr.f.service is used */
	uint8_t request_me;    /* expanded per flow: its graph's predecessors */
};

struct sl_wildset {
	uint32_t n;
	struct sl_wild w[];
};

static struct sl_ruleset *g_rules;    /* read by RX, atomic pointer */
static struct sl_wildset *g_wild;     /* read by RX, atomic pointer */
static struct sl_rule *g_rule_list;   /* control's copy, [g_n_rules] */
static uint32_t g_n_rules;
static uint32_t g_rule_id;
static uint64_t g_rule_builds;        /* rule sets built and published */
static uint32_t g_wild_id;            /* the last kept request's id */

void
sl_flow_graph_removed(uint16_t id)
{
	__atomic_store_n(&g_graph_inc[id], (uint16_t)(g_graph_inc[id] + 1),
			 __ATOMIC_RELEASE);
}

/* The entry's graph id, or SL_GRAPH_NONE if that graph was removed (the
 * next packet classifies the flow again). */
static uint16_t
entry_graph(const struct sl_shm *shm, const struct sl_flow_entry *e)
{
	uint16_t id = e->graph;

	if (id == 0)
		return 0; /* the default chain is never removed */
	if (sl_graph_current(shm, id) == SL_GRAPH_NONE ||
	    e->graph_inc != __atomic_load_n(&g_graph_inc[id], __ATOMIC_ACQUIRE))
		return SL_GRAPH_NONE;
	return id;
}

/* ---- the RX thread ------------------------------------------------ */

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
		const struct sl_rule *r = res[i] ? &rs->rules[res[i] - 1] : NULL;

		graph[i] = r != NULL ? r->graph : 0;
		rule[i] = r != NULL ? r->id : 0;
	}
}

static int
wild_matches(const struct sl_match *mt, const struct sl_5tuple *t,
	     uint16_t in_port)
{
	struct sl_5tuple r = *t;

	if (sl_match_test(mt, t, in_port))
		return 1;
	/* The other direction of the connection. */
	r.src = t->dst;
	r.dst = t->src;
	r.sport = t->dport;
	r.dport = t->sport;
	return sl_match_test(mt, &r, in_port);
}

/* Writes an override into a free slot (or the slot of the same service
 * and kind). -ENOSPC if none is left. Caller: the entry's one writer. */
static int
ovr_put(const struct sl_shm *shm, struct sl_flow_entry *e, union sl_flow_ovr v)
{
	union sl_flow_ovr *o = sl_flow_ovrs(shm, e);
	int free_k = -1;

	for (uint16_t k = 0; k < shm->flow.n_ovr; k++) {
		if (o[k].f.kind == SL_OVR_FREE) {
			if (free_k < 0)
				free_k = k;
			continue;
		}
		if (o[k].f.service == v.f.service && o[k].f.kind == v.f.kind) {
			__atomic_store_n(&o[k].u64, v.u64, __ATOMIC_RELEASE);
			return 0;
		}
	}
	if (free_k < 0)
		return -ENOSPC;
	__atomic_store_n(&o[free_k].u64, v.u64, __ATOMIC_RELEASE);
	__atomic_store_n(&e->n_ovr, (uint8_t)(e->n_ovr + 1), __ATOMIC_RELEASE);
	return 0;
}

/* A wildcard RequestMe(S) on a new flow of logical graph `graph`: undo a
 * SkipMe of S, and every node of the graph with an edge to S defaults to
 * S (as sl_flow_request does for live flows). Nothing on a chain. */
static void
wild_request_me(struct sl_shm *shm, struct sl_flow_entry *e, uint16_t graph,
		uint16_t s)
{
	uint16_t v = sl_graph_current(shm, graph);
	const struct sl_graph *g =
		v == SL_GRAPH_NONE ? NULL : sl_graph_of(shm, v);
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
		(void)ovr_put(shm, e, d);
	}
}

static void
entry_create(struct sl_shm *shm, struct sl_flow_entry *e, uint16_t graph,
	     const struct sl_5tuple *t,
	     uint16_t in_port, uint32_t len)
{
	const struct sl_wildset *ws = __atomic_load_n(&g_wild, __ATOMIC_ACQUIRE);
	uint32_t *pin = sl_flow_pins(shm, e);
	union sl_flow_ovr *o = sl_flow_ovrs(shm, e);

	__atomic_store_n(&e->gen, (uint16_t)(e->gen + 1), __ATOMIC_RELEASE);
	e->graph = graph;
	e->graph_inc = __atomic_load_n(&g_graph_inc[graph], __ATOMIC_ACQUIRE);
	e->last_ms = rx.now_ms;
	e->pkts = 1;
	e->bytes = len;
	e->n_ovr = 0;
	for (uint16_t k = 0; k < shm->flow.n_pins; k++)
		pin[k] = UINT32_MAX;
	for (uint16_t k = 0; k < shm->flow.n_ovr; k++)
		o[k].u64 = 0;
	for (uint32_t i = 0; ws != NULL && i < ws->n; i++) {
		if (!wild_matches(&ws->w[i].match, t, in_port))
			continue;
		if (ws->w[i].request_me)
			wild_request_me(shm, e, graph, ws->w[i].ovr.f.service);
		else
			(void)ovr_put(shm, e, ws->w[i].ovr);
	}
	__atomic_store_n(&e->state, SL_FLOW_LIVE, __ATOMIC_RELEASE);
}

/* Adds a key to its family's table: its entry index, or a negative errno
 * (-ENOSPC: that family's share of the table is full). */
static int32_t
table_add(struct sl_flow_table *ft, const struct sl_flow_key *k,
	  const struct sl_flow_key4 *k4, uint32_t sig)
{
	if (ft->n_live >= ft->max_flows)
		return -ENOSPC;
	if (k->family == 4)
		return rte_hash_add_key_with_hash(ft->hash, k4, sig);
	if (ft->n_live6 >= ft->max_flows6)
		return -ENOSPC;
	return sl_flow_entry6(ft, rte_hash_add_key_with_hash(ft->hash6, k, sig));
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

static int retire_deleted(struct sl_shm *shm, uint32_t p);

#define NO_SAME UINT16_MAX

/* Adds a run of packets to an entry's counters, seen now. */
static inline void
entry_count(struct sl_flow_entry *e, uint64_t pkts, uint64_t bytes)
{
	if (e == NULL || pkts == 0)
		return;
	e->pkts += pkts;
	e->bytes += bytes;
	e->last_ms = rx.now_ms;
}

void
sl_flow_ingress(struct sl_shm *shm, struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_flow_table *ft = &shm->flow;
	/* A packet's key: k4 for IPv4 (what that table stores), keys for
	 * IPv6; the 48-byte form of an IPv4 key is made only for new flows. */
	struct sl_flow_key4 k4[SL_BURST_MAX];
	struct sl_flow_key keys[SL_BURST_MAX];
	struct sl_5tuple tup[SL_BURST_MAX];
	const void *kp4[SL_BURST_MAX], *kp6[SL_BURST_MAX];
	hash_sig_t sig[SL_BURST_MAX], sig4[SL_BURST_MAX], sig6[SL_BURST_MAX];
	int32_t pos[SL_BURST_MAX];
	uint16_t idx[SL_BURST_MAX]; /* packets with a 5-tuple */
	uint16_t i4[SL_BURST_MAX], i6[SL_BURST_MAX], n4 = 0, n6 = 0;
	uint16_t nk = 0, miss[SL_BURST_MAX], nm = 0;
	/* same[k]: the earlier packet whose IPv4 lookup answers for k's (its
	 * key is the key of the last IPv4 packet looked up), or NO_SAME. */
	uint16_t same[SL_BURST_MAX], last4 = NO_SAME;
	uint64_t l_head = 0; /* k4[last4], in registers */
	uint32_t l_lo = 0, l_hi = 0;
	int off = shm->dynfield_offset;

	if (ft->lookup == SL_LOOKUP_OFF)
		return; /* dispatch gives every packet the default graph */
	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *meta = sl_meta(pkts[i], off);
		/* The port's RSS hash (symmetric key) when it gave one; the
		 * naive ablation always hashes in software, as every later
		 * hop will. */
		int rss = (meta->flags & SL_META_HASH) &&
			  ft->lookup == SL_LOOKUP_CACHED;

		meta->flow = SL_FLOW_NONE;
		if (sl_pkt_flow_tuple(pkts[i], &tup[nk]) != 0) {
			ft->st.non_ip++;
			continue;
		}
		/* The table is keyed by sluiced's own hash, never the
		 * port's, so the control thread finds any key in O(1). */
		same[nk] = NO_SAME;
		if (likely(tup[nk].family == 4)) {
			uint32_t lo, hi;
			uint64_t head = sl_flow_key4_parts(&tup[nk], &lo, &hi);

			k4[nk].head = head;
			k4[nk].addr_lo = lo;
			k4[nk].addr_hi = hi;
			if (last4 != NO_SAME && head == l_head && lo == l_lo &&
			    hi == l_hi) {
				/* The flow of the IPv4 packet before (either
				 * direction): a burst is often a train of one
				 * flow. Its lookup answers for this one, as
				 * the table does not change until all are
				 * looked up: no hash, no second lookup. */
				sig[nk] = sig[last4];
				same[nk] = last4;
			} else {
				sig[nk] = sl_flow_key_hash_v4(head, lo, hi);
				kp4[n4] = &k4[nk];
				sig4[n4] = sig[nk];
				i4[n4++] = nk;
				last4 = nk;
				l_head = head;
				l_lo = lo;
				l_hi = hi;
			}
		} else {
			sl_flow_key_make(&tup[nk], &keys[nk]);
			sig[nk] = sl_flow_key_hash(&keys[nk]);
			kp6[n6] = &keys[nk];
			sig6[n6] = sig[nk];
			i6[n6++] = nk;
		}
		if (!rss)
			meta->flow_hash = sig[nk];
		meta->flags |= SL_META_HASH;
		idx[nk++] = i;
	}
	if (nk == 0)
		return;
	ft->st.lookups += nk;
	table_lookup_bulk(ft, 0, kp4, sig4, i4, n4, pos);
	table_lookup_bulk(ft, 1, kp6, sig6, i6, n6, pos);
	if (n4 + n6 < nk)
		for (uint16_t k = 0; k < nk; k++)
			if (same[k] != NO_SAME)
				pos[k] = pos[same[k]];

	for (uint16_t k = 0; k < nk; k++)
		if (pos[k] >= 0)
			rte_prefetch0(sl_flow_entry(shm, (uint32_t)pos[k]));
	/* A deleted flow's next packet starts a new flow, classified anew,
	 * even if its entry is still waiting to be removed: remove it now. */
	if (unlikely(__atomic_load_n(&g_del_marked, __ATOMIC_RELAXED) != 0))
		for (uint16_t k = 0; k < nk; k++) {
			uint32_t p = (uint32_t)pos[k];

			if (pos[k] < 0 ||
			    __atomic_load_n(&sl_flow_entry(shm, p)->state,
					    __ATOMIC_ACQUIRE) == SL_FLOW_LIVE)
				continue;
			/* DELETE, or FREE: an earlier packet of this burst
			 * removed it. If it cannot be removed yet (every
			 * limbo batch waits), the packet goes on classified
			 * but without an entry (below). */
			(void)retire_deleted(shm, p);
			pos[k] = -1;
		}
	for (uint16_t k = 0; k < nk; k++) {
		struct sl_pkt_meta *meta = sl_meta(pkts[idx[k]], off);

		if (pos[k] < 0) {
			miss[nm++] = k;
			continue;
		}
		meta->flow = (uint32_t)pos[k];
	}
	ft->st.hits += (uint64_t)(nk - nm);

	/* New flows: classify them all at once, then create entries. */
	if (nm > 0) {
		const struct sl_ruleset *rs =
			__atomic_load_n(&g_rules, __ATOMIC_ACQUIRE);
		const struct sl_5tuple *tp[SL_BURST_MAX];
		uint16_t inp[SL_BURST_MAX], graph[SL_BURST_MAX];
		uint32_t rule[SL_BURST_MAX];

		for (uint16_t j = 0; j < nm; j++) {
			tp[j] = &tup[miss[j]];
			inp[j] = sl_meta(pkts[idx[miss[j]]], off)->in_port;
		}
		classify(rs, tp, inp, nm, graph, rule);
		for (uint16_t j = 0; j < nm; j++) {
			uint16_t k = miss[j];
			struct rte_mbuf *m = pkts[idx[k]];
			struct sl_pkt_meta *meta = sl_meta(m, off);
			int32_t p;

			if (tup[k].family == 4)
				sl_flow_key_make(&tup[k], &keys[k]);
			/* An earlier packet of this burst may have created
			 * it. */
			p = sl_flow_table_lookup(ft, &keys[k], sig[k]);
			if (p >= 0 && __atomic_load_n(
					      &sl_flow_entry(shm, (uint32_t)p)
						       ->state,
					      __ATOMIC_ACQUIRE) == SL_FLOW_LIVE) {
				meta->flow = (uint32_t)p;
				pos[k] = p;
				ft->st.hits++;
				continue;
			}
			/* (Still there but deleted: could not be removed.) */
			p = p >= 0 ? -EAGAIN
				   : table_add(ft, &keys[k], &k4[k], sig[k]);
			if (p < 0) {
				/* Full: the packet goes on by its rule's
				 * graph, without an entry. */
				if (p != -EAGAIN)
					ft->st.table_full++;
				meta->graph = sl_graph_current(shm, graph[j]);
				if (meta->graph == SL_GRAPH_NONE)
					meta->graph = sl_graph_current(shm, 0);
				meta->flags |= SL_META_GRAPH;
				pos[k] = -1;
				continue;
			}
			g_keys[p] = keys[k];
			g_side[p].sig = sig[k];
			g_side[p].rule = rule[j];
			g_side[p].in_port = meta->in_port;
			entry_create(shm, sl_flow_entry(shm, (uint32_t)p),
				     graph[j], &tup[k], meta->in_port,
				     rte_pktmbuf_pkt_len(m));
			ft->n_live++;
			if ((uint32_t)p >= ft->base6)
				ft->n_live6++;
			ft->st.created++;
			meta->flow = (uint32_t)p;
			pos[k] = p;
			pos[k] |= INT32_MIN; /* created: counters set */
		}
	}

	/* Counters, last-seen, and the graph version for each packet; for a
	 * run of packets of one entry, once (written once: every hop reads
	 * that line, possibly on another core). */
	struct sl_flow_entry *run = NULL;
	uint64_t run_pkts = 0, run_bytes = 0;
	uint16_t run_gv = SL_GRAPH_NONE;

	for (uint16_t k = 0; k < nk; k++) {
		struct rte_mbuf *m = pkts[idx[k]];
		struct sl_pkt_meta *meta = sl_meta(m, off);
		struct sl_flow_entry *e;
		uint16_t gv;

		if (meta->flow == SL_FLOW_NONE)
			continue;
		e = sl_flow_entry(shm, meta->flow);
		if (e == run) {
			if (pos[k] >= 0) {
				run_pkts++;
				run_bytes += rte_pktmbuf_pkt_len(m);
			}
			meta->flow_gen = e->gen;
			meta->graph = run_gv;
			meta->flags |= SL_META_GRAPH;
			continue;
		}
		entry_count(run, run_pkts, run_bytes);
		run = e;
		/* A hit (or created by an earlier packet of this burst). */
		run_pkts = pos[k] >= 0;
		run_bytes = run_pkts ? rte_pktmbuf_pkt_len(m) : 0;
		meta->flow_gen = e->gen;
		gv = sl_graph_current(shm, e->graph);
		if (e->graph != 0 &&
		    (gv == SL_GRAPH_NONE ||
		     e->graph_inc != __atomic_load_n(&g_graph_inc[e->graph],
						     __ATOMIC_ACQUIRE))) {
			/* Its graph was removed (its id may be another
			 * graph's by now): classify it again. */
			const struct sl_ruleset *rs =
				__atomic_load_n(&g_rules, __ATOMIC_ACQUIRE);
			const struct sl_5tuple *tp = &tup[k];
			uint16_t g, inc, inp = meta->in_port;
			uint32_t r;

			classify(rs, &tp, &inp, 1, &g, &r);
			/* Read the graph's version once, after its
			 * incarnation: read twice, a removal in between
			 * left the packet with no graph (end_of_chain). */
			inc = __atomic_load_n(&g_graph_inc[g],
					      __ATOMIC_ACQUIRE);
			gv = sl_graph_current(shm, g);
			if (gv == SL_GRAPH_NONE) {
				g = 0;
				r = 0;
				inc = 0; /* the default is never removed */
				gv = sl_graph_current(shm, 0);
			}
			e->graph = g;
			e->graph_inc = inc;
			g_side[meta->flow].rule = r;
		}
		run_gv = gv;
		meta->graph = gv;
		meta->flags |= SL_META_GRAPH;
	}
	entry_count(run, run_pkts, run_bytes);
}

/* Retires a position: deleted from the hash now, recycled after a grace
 * period. -EAGAIN if every limbo batch is waiting (try again later). */
static int
flow_retire(struct sl_shm *shm, uint32_t p)
{
	struct sl_flow_table *ft = &shm->flow;
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	unsigned int open = (rx.head + rx.n_closed) % LIMBO_BATCHES;
	struct limbo *b = &rx.b[open];

	if (rx.n_closed == LIMBO_BATCHES)
		return -EAGAIN;
	if (p < ft->base6) {
		struct sl_flow_key4 k4;

		sl_flow_key4_of(&g_keys[p], &k4);
		if (rte_hash_del_key_with_hash(ft->hash, &k4, g_side[p].sig) <
		    0)
			return -ENOENT;
	} else {
		if (rte_hash_del_key_with_hash(ft->hash6, &g_keys[p],
					       g_side[p].sig) < 0)
			return -ENOENT;
		ft->n_live6--;
	}
	__atomic_store_n(&e->state, SL_FLOW_FREE, __ATOMIC_RELEASE);
	ft->n_live--;
	if (b->n == 0)
		rx.open_since = rte_rdtsc();
	b->pos[b->n++] = p;
	if (b->n == LIMBO_BATCH) {
		(void)sl_grace_start(&b->grace, shm);
		rx.n_closed++;
	}
	return 0;
}

/* Removes entry p if it is marked deleted (counted as deleted): 0, or
 * -EAGAIN if every limbo batch is waiting, -ENOENT if it is not marked. */
static int
retire_deleted(struct sl_shm *shm, uint32_t p)
{
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	int rc;

	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != SL_FLOW_DELETE)
		return -ENOENT;
	rc = flow_retire(shm, p);
	if (rc != 0)
		return rc;
	shm->flow.st.deleted++;
	__atomic_fetch_sub(&g_del_marked, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Removes the entries the control thread marked, until `until` (TSC):
 * those on the ring, then, if some were not (the ring was full), a pass
 * over the table that finds the rest, a bounded stretch per call. */
static void
delete_marked(struct sl_shm *shm, uint64_t until)
{
	struct sl_flow_table *ft = &shm->flow;
	uint32_t p, missed;
	unsigned int i = 0;

	while (rte_ring_sc_dequeue_elem(g_del_ring, &p, sizeof(p)) == 0) {
		if (retire_deleted(shm, p) == -EAGAIN) {
			/* Off the ring but still marked: the pass finds it. */
			__atomic_fetch_add(&g_del_missed, 1, __ATOMIC_RELEASE);
			return;
		}
		if ((++i & 15) == 0 && rte_rdtsc() > until)
			return;
	}
	missed = __atomic_load_n(&g_del_missed, __ATOMIC_ACQUIRE);
	if (!rx.pass_on) {
		if (missed == rx.pass_seen)
			return;
		rx.pass_on = 1;
		rx.pass_seen = missed;
		rx.pass = 0;
	}
	while (rx.pass < ft->capacity &&
	       __atomic_load_n(&g_del_marked, __ATOMIC_ACQUIRE) != 0) {
		if (retire_deleted(shm, rx.pass) == -EAGAIN)
			return; /* again from here once a batch is recycled */
		rx.pass++;
		if ((++i & 255) == 0 && rte_rdtsc() > until)
			return;
	}
	/* Done; if more were missed since it started (maybe behind it),
	 * g_del_missed != pass_seen starts another. */
	rx.pass_on = 0;
}

void
sl_flow_maintain(struct sl_shm *shm, uint64_t now)
{
	struct sl_flow_table *ft = &shm->flow;
	uint32_t budget, p;

	if (ft->lookup == SL_LOOKUP_OFF)
		return;
	if (now - rx.last_tick < shm->ms_hz)
		return; /* once per millisecond */
	rx.last_tick = now;
	rx.now_ms = (uint32_t)((now - g_mgr.start_tsc) / shm->ms_hz);

	/* Recycle positions whose grace period has passed. */
	while (rx.n_closed > 0) {
		struct limbo *b = &rx.b[rx.head];

		if (!sl_grace_passed(&b->grace, shm, rx.self_io, 0))
			break;
		for (uint32_t i = 0; i < b->n; i++) {
			uint32_t p = b->pos[i];
			int v6 = p >= ft->base6;

			rte_hash_free_key_with_position(
				v6 ? ft->hash6 : ft->hash,
				(int32_t)(v6 ? p - ft->base6 : p));
		}
		b->n = 0;
		rx.head = (rx.head + 1) % LIMBO_BATCHES;
		rx.n_closed--;
	}
	/* Close a half-full batch after 10 ms, so frees are not held up. */
	if (rx.n_closed < LIMBO_BATCHES) {
		struct limbo *b =
			&rx.b[(rx.head + rx.n_closed) % LIMBO_BATCHES];

		if (b->n > 0 && now - rx.open_since > 10 * shm->ms_hz) {
			(void)sl_grace_start(&b->grace, shm);
			rx.n_closed++;
		}
	}
	/* Deletions asked for by the control thread. */
	delete_marked(shm, now + DEL_WORK_US * shm->ms_hz / 1000);
	/* Aging: sweep the table twice per timeout. */
	budget = (uint32_t)RTE_MIN((uint64_t)ft->capacity,
				   2ull * ft->capacity / ft->timeout_ms + 16);
	for (uint32_t i = 0; i < budget; i++) {
		struct sl_flow_entry *e;
		uint8_t st;

		p = rx.cursor;
		rx.cursor = rx.cursor + 1 == ft->capacity ? 0 : rx.cursor + 1;
		e = sl_flow_entry(shm, p);
		st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (st == SL_FLOW_FREE)
			continue;
		if (st == SL_FLOW_DELETE) {
			(void)retire_deleted(shm, p);
			continue;
		}
		if ((uint32_t)(rx.now_ms - e->last_ms) >= ft->timeout_ms &&
		    flow_retire(shm, p) == 0)
			ft->st.aged++;
	}
}

void
sl_flow_rx_fini(void)
{
	for (unsigned int i = 0; i < LIMBO_BATCHES; i++)
		sl_grace_fini(&rx.b[i].grace);
}

/* ---- control thread: rules --------------------------------------- */

static int
free_ruleset(struct sl_mgr *m, void *p)
{
	struct sl_ruleset *rs = p;

	(void)m;
	if (rs != NULL) {
		sl_classifier_free(rs->cls);
		free(rs->rules);
		free(rs);
	}
	return 0;
}

static void
defer(struct sl_mgr *m, int (*fn)(struct sl_mgr *, void *), void *p)
{
	struct sl_qs_action *a = sl_qs_new(m, SL_QS_CALL);

	if (a == NULL) { /* out of memory: leak rather than risk a reader */
		sl_log("out of memory queueing a deferred free");
		return;
	}
	a->fn = fn;
	a->ptr = p;
}

/* Builds a rule set from list[0..n) (copied): no globals, so the builder
 * thread may run it. 0 and *out, or a negative errno and err. */
static int
ruleset_build(const struct sl_rule *list, uint32_t n, struct sl_ruleset **out,
	      char *err, size_t errlen)
{
	struct sl_ruleset *rs = calloc(1, sizeof(*rs));
	const struct sl_match **mt = NULL;
	int32_t *prio = NULL;
	int rc = -ENOMEM;

	if (rs == NULL)
		goto fail;
	rs->n = n;
	rs->rules = malloc(sizeof(*rs->rules) * (n ? n : 1));
	mt = malloc(sizeof(*mt) * (n ? n : 1));
	prio = malloc(sizeof(*prio) * (n ? n : 1));
	if (rs->rules == NULL || mt == NULL || prio == NULL)
		goto fail;
	if (n > 0)
		memcpy(rs->rules, list, sizeof(*rs->rules) * n);
	for (uint32_t i = 0; i < n; i++) {
		mt[i] = &rs->rules[i].match;
		prio[i] = rs->rules[i].priority;
	}
	/* sl_classifier names each build's contexts from a process-wide
	 * counter: two builds never share an rte_acl name. */
	rc = sl_classifier_build(mt, prio, n, "sl_rules", &rs->cls, err,
				 errlen);
	if (rc != 0)
		goto fail;
	free(mt);
	free(prio);
	*out = rs;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory building the rules");
	free(mt);
	free(prio);
	free_ruleset(NULL, rs);
	return rc;
}

/* Publishes rs for the RX thread (control thread); the old set is freed
 * once no reader holds it. */
static void
ruleset_publish(struct sl_mgr *m, struct sl_ruleset *rs)
{
	struct sl_ruleset *old = __atomic_exchange_n(&g_rules, rs,
						     __ATOMIC_ACQ_REL);

	g_rule_builds++;
	if (old != NULL)
		defer(m, free_ruleset, old);
}

/*
 * The rule builder: a thread that builds one rule set at a time off the
 * control thread, whose loop keeps serving the socket, the NFs and the
 * watchdog meanwhile (a build of 4,096 random rules takes seconds). The
 * control thread validates a change against the committed list, hands the
 * builder a job (the new list), and commits it when it is built
 * (sl_rules_poll): rule set published, list replaced, events sent. At most
 * one job exists; rpc.c holds back every other rule change until it is
 * committed, so a job's checks still hold when it commits.
 */
enum rules_kind { RULES_ADD, RULES_REMOVE, RULES_REMOVE_GRAPH };

struct rules_job {
	enum rules_kind kind;
	struct sl_rule *list; /* the new list, in order, [n] */
	uint32_t n;
	uint32_t first_id, n_new; /* RULES_ADD: ids first_id.. */
	uint32_t *ids, n_ids;     /* RULES_REMOVE: as given */
	uint16_t graph;           /* RULES_REMOVE_GRAPH */
	/* set by the builder */
	struct sl_ruleset *rs;
	int rc;
	char err[256];
};

static struct {
	pthread_t t;
	int started;
	int efd; /* eventfd: readable when a job is built */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct rules_job *todo; /* under mu: for the builder */
	int stop;               /* under mu */
	struct rules_job *done; /* atomic: built, to commit */
} g_bld = {.efd = -1,
	   .mu = PTHREAD_MUTEX_INITIALIZER,
	   .cv = PTHREAD_COND_INITIALIZER};

static struct rules_job *g_job;      /* control: handed out, not committed */
static struct rules_job *g_prepared; /* graph.remove's, for its removal */

static void
job_free(struct rules_job *j)
{
	if (j == NULL)
		return;
	free_ruleset(NULL, j->rs); /* never published: no reader */
	free(j->list);
	free(j->ids);
	free(j);
}

static void *
builder_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct rules_job *j;
		uint64_t one = 1;
		ssize_t w;

		pthread_mutex_lock(&g_bld.mu);
		while (!g_bld.stop && g_bld.todo == NULL)
			pthread_cond_wait(&g_bld.cv, &g_bld.mu);
		j = g_bld.todo;
		g_bld.todo = NULL;
		pthread_mutex_unlock(&g_bld.mu);
		if (j == NULL)
			return NULL; /* stopping */
		j->rc = ruleset_build(j->list, j->n, &j->rs, j->err,
				      sizeof(j->err));
		__atomic_store_n(&g_bld.done, j, __ATOMIC_RELEASE);
		/* Wakes the control loop (which also looks every 5 ms). */
		w = write(g_bld.efd, &one, sizeof(one));
		(void)w;
	}
}

int
sl_rules_builder_start(char *err, size_t errlen)
{
	sigset_t all, old;
	int rc;

	g_bld.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g_bld.efd < 0) {
		snprintf(err, errlen, "rule builder: eventfd: %s",
			 strerror(errno));
		return -1;
	}
	/* Signals (SIGINT, SIGTERM) stay the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&g_bld.t, NULL, builder_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "rule builder: cannot start a thread: %s",
			 strerror(rc));
		close(g_bld.efd);
		g_bld.efd = -1;
		return -1;
	}
	g_bld.started = 1;
	return 0;
}

int
sl_rules_builder_fd(void)
{
	return g_bld.efd;
}

void
sl_rules_builder_stop(void)
{
	if (g_bld.started) {
		/* A build under way finishes first (seconds at most). */
		pthread_mutex_lock(&g_bld.mu);
		g_bld.stop = 1;
		pthread_cond_signal(&g_bld.cv);
		pthread_mutex_unlock(&g_bld.mu);
		pthread_join(g_bld.t, NULL);
		g_bld.started = 0;
	}
	/* Not committed: dropped (sluiced stops). */
	job_free(g_job);
	g_job = NULL;
	g_bld.done = NULL;
	g_bld.todo = NULL;
	job_free(g_prepared);
	g_prepared = NULL;
	if (g_bld.efd >= 0)
		close(g_bld.efd);
	g_bld.efd = -1;
}

int
sl_rules_busy(void)
{
	return g_job != NULL;
}

/* Hands j to the builder (control thread, none under way). */
static int
job_start(struct rules_job *j, char *err, size_t errlen)
{
	if (!g_bld.started) {
		snprintf(err, errlen,
			 "the rule builder is not running (sluiced is "
			 "stopping)");
		job_free(j);
		return -ESHUTDOWN;
	}
	g_job = j;
	pthread_mutex_lock(&g_bld.mu);
	g_bld.todo = j;
	pthread_cond_signal(&g_bld.cv);
	pthread_mutex_unlock(&g_bld.mu);
	return 0;
}

/* Makes j's list the committed one and publishes its rule set. */
static void
job_commit(struct sl_mgr *m, struct rules_job *j)
{
	free(g_rule_list);
	g_rule_list = j->list;
	g_n_rules = j->n;
	j->list = NULL;
	ruleset_publish(m, j->rs);
	j->rs = NULL;
}

/* Builds and publishes the rule set from g_rule_list, on this thread (a
 * graph removed other than by graph.remove's prepared job). */
static int
rules_publish(struct sl_mgr *m, char *err, size_t errlen)
{
	struct sl_ruleset *rs;
	int rc = ruleset_build(g_rule_list, g_n_rules, &rs, err, errlen);

	if (rc == 0)
		ruleset_publish(m, rs);
	return rc;
}

/* A match's fields into obj, its ingress port by name. */
static void
match_json(const struct sl_shm *shm, const struct sl_match *mt, json_t *obj)
{
	sl_match_to_json(mt, obj);
	if (mt->in_port_lo == mt->in_port_hi && mt->in_port_lo < SL_MAX_PORTS)
		json_object_set_new(
			obj, "in_port",
			json_string(shm->ports[mt->in_port_lo].name));
}

static json_t *
rule_json(const struct sl_mgr *m, const struct sl_rule *r, json_int_t flows)
{
	json_t *o = json_object();
	uint16_t slot = m->shm->graph_cur[r->graph];

	json_object_set_new(o, "id", json_integer(r->id));
	json_object_set_new(
		o, "graph",
		json_string(slot != SL_GRAPH_NONE && m->shm->gtab[slot]
				    ? m->shm->gtab[slot]->name
				    : "?"));
	json_object_set_new(o, "priority", json_integer(r->priority));
	match_json(m->shm, &r->match, o);
	if (flows >= 0)
		json_object_set_new(o, "flows", json_integer(flows));
	return o;
}

/* Rule order: priority, highest first; equal: oldest (lowest id) first. */
static int
rule_order(const void *a, const void *b)
{
	const struct sl_rule *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int
u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int
sl_rules_add_start(struct sl_mgr *m, const struct sl_rule_spec *r,
		   uint32_t n, char *err, size_t errlen)
{
	struct rules_job *j;
	struct sl_rule *nl;
	uint32_t first_id = g_rule_id + 1;

	if (g_job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return -EBUSY;
	}
	if (m->o.flow_lookup == SL_LOOKUP_OFF) {
		snprintf(err, errlen,
			 "rules need the flow table, and sluiced runs with "
			 "--flow-lookup off: restart it with --flow-lookup "
			 "cached");
		return -ENOTSUP;
	}
	if (n > m->o.max_rules - g_n_rules) {
		if (n == 1)
			snprintf(err, errlen,
				 "all %u rules are in use: remove one or "
				 "raise --max-rules",
				 m->o.max_rules);
		else
			snprintf(err, errlen,
				 "%u rules would make %llu, more than "
				 "--max-rules %u (%u in use): remove some or "
				 "raise --max-rules",
				 n, (unsigned long long)g_n_rules + n,
				 m->o.max_rules, g_n_rules);
		return -ENOSPC;
	}
	/* A new list, so the committed one stays whole until it is built. */
	j = calloc(1, sizeof(*j));
	nl = malloc(sizeof(*nl) * ((size_t)g_n_rules + n + 1));
	if (j == NULL || nl == NULL) {
		free(j);
		free(nl);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (g_n_rules > 0)
		memcpy(nl, g_rule_list, sizeof(*nl) * g_n_rules);
	for (uint32_t i = 0; i < n; i++)
		nl[g_n_rules + i] = (struct sl_rule){
			.id = first_id + i, .graph = r[i].graph,
			.priority = r[i].priority, .match = r[i].match};
	/* The list was in order and the new ids are the newest: a sort of
	 * the whole list is O(N log N), once per batch. */
	qsort(nl, (size_t)g_n_rules + n, sizeof(*nl), rule_order);
	*j = (struct rules_job){.kind = RULES_ADD, .list = nl,
				.n = g_n_rules + n, .first_id = first_id,
				.n_new = n};
	return job_start(j, err, errlen);
}

int
sl_rules_remove_start(struct sl_mgr *m, const uint32_t *ids, uint32_t n,
		      char *err, size_t errlen)
{
	struct rules_job *j;
	struct sl_rule *nl;
	uint32_t *want, j_n = 0;

	(void)m;
	if (g_job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return -EBUSY;
	}
	want = malloc(sizeof(*want) * ((size_t)n + 1));
	nl = malloc(sizeof(*nl) * ((size_t)g_n_rules + 1));
	j = calloc(1, sizeof(*j));
	if (want == NULL || nl == NULL || j == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail_nomem;
	}
	if (n > 0)
		memcpy(want, ids, sizeof(*want) * n);
	qsort(want, n, sizeof(*want), u32_cmp);
	for (uint32_t i = 1; i < n; i++)
		if (want[i] == want[i - 1]) {
			snprintf(err, errlen,
				 "rule id %u is given twice: give each once",
				 want[i]);
			goto fail;
		}
	for (uint32_t i = 0; i < g_n_rules; i++)
		if (bsearch(&g_rule_list[i].id, want, n, sizeof(*want),
			    u32_cmp) == NULL)
			nl[j_n++] = g_rule_list[i];
	if (g_n_rules - j_n != n) {
		/* Name the first unknown one (in the order given). */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t k;

			for (k = 0; k < g_n_rules && g_rule_list[k].id != ids[i];
			     k++)
				;
			if (k == g_n_rules) {
				snprintf(err, errlen,
					 "no rule with id %u; see rule.list%s",
					 ids[i],
					 n > 1 ? " (no rule was removed)" : "");
				break;
			}
		}
		free(want);
		free(nl);
		free(j);
		return -ENOENT;
	}
	/* The events name the ids in the order given. */
	if (n > 0)
		memcpy(want, ids, sizeof(*want) * n);
	*j = (struct rules_job){.kind = RULES_REMOVE, .list = nl, .n = j_n,
				.ids = want, .n_ids = n};
	return job_start(j, err, errlen);
fail:
	free(want);
	free(nl);
	free(j);
	return -EINVAL;
fail_nomem:
	free(want);
	free(nl);
	free(j);
	return -ENOMEM;
}

int
sl_rules_remove_graph_start(struct sl_mgr *m, uint16_t graph, char *err,
			    size_t errlen)
{
	struct rules_job *j;
	struct sl_rule *nl;
	uint32_t k = 0;

	(void)m;
	if (g_job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return -EBUSY;
	}
	for (uint32_t i = 0; i < g_n_rules; i++)
		k += g_rule_list[i].graph != graph;
	if (k == g_n_rules)
		return 0; /* no rule of that graph: nothing to build */
	j = calloc(1, sizeof(*j));
	nl = malloc(sizeof(*nl) * ((size_t)k + 1));
	if (j == NULL || nl == NULL) {
		free(j);
		free(nl);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	k = 0;
	for (uint32_t i = 0; i < g_n_rules; i++)
		if (g_rule_list[i].graph != graph)
			nl[k++] = g_rule_list[i];
	*j = (struct rules_job){.kind = RULES_REMOVE_GRAPH, .list = nl, .n = k,
				.graph = graph};
	return job_start(j, err, errlen) == 0 ? 1 : -ESHUTDOWN;
}

int
sl_rules_poll(struct sl_mgr *m, int *rc, json_t **out, char *err,
	      size_t errlen)
{
	struct rules_job *j = g_job;

	if (j == NULL || __atomic_load_n(&g_bld.done, __ATOMIC_ACQUIRE) != j)
		return 0;
	g_bld.done = NULL;
	g_job = NULL;
	*out = NULL;
	*rc = j->rc;
	if (j->rc != 0) { /* the committed list stays */
		snprintf(err, errlen, "%s", j->err);
		*rc = -EINVAL;
		job_free(j);
		return 1;
	}
	err[0] = '\0';
	switch (j->kind) {
	case RULES_ADD: {
		json_t *a = json_array();

		job_commit(m, j);
		g_rule_id += j->n_new;
		for (uint32_t i = 0; i < g_n_rules; i++) {
			if (g_rule_list[i].id < j->first_id)
				continue;
			json_t *x = rule_json(m, &g_rule_list[i], -1);

			sl_event("rule.added", json_deep_copy(x));
			json_array_append_new(a, x);
		}
		*out = a;
		break;
	}
	case RULES_REMOVE:
		job_commit(m, j);
		for (uint32_t i = 0; i < j->n_ids; i++)
			sl_event("rule.removed", json_pack("{s:I}", "id",
							   (json_int_t)j->ids[i]));
		break;
	case RULES_REMOVE_GRAPH:
		/* Committed by sl_rules_remove_graph, when graph.c removes
		 * the graph (next, on this thread). */
		job_free(g_prepared);
		g_prepared = j;
		return 1;
	}
	job_free(j);
	return 1;
}

/* Removes every rule of a graph; returns how many. */
uint32_t
sl_rules_remove_graph(struct sl_mgr *m, uint16_t graph)
{
	uint32_t removed = 0;
	char err[256];

	if (g_prepared != NULL && g_prepared->graph == graph) {
		/* Built off the control thread (graph.remove). */
		removed = g_n_rules - g_prepared->n;
		job_commit(m, g_prepared);
		job_free(g_prepared);
		g_prepared = NULL;
		return removed;
	}
	for (uint32_t i = 0; i < g_n_rules; i++)
		if (g_rule_list[i].graph == graph)
			removed++;
	if (removed == 0)
		return 0;
	/* Not prepared: built here (no caller does this now). */
	{
		uint32_t j = 0;

		for (uint32_t i = 0; i < g_n_rules; i++)
			if (g_rule_list[i].graph != graph)
				g_rule_list[j++] = g_rule_list[i];
		g_n_rules = j;
	}
	if (rules_publish(m, err, sizeof(err)) != 0)
		sl_log("rules after removing graph %u: %s", graph, err);
	return removed;
}

void
sl_rules_prepared_drop(void)
{
	job_free(g_prepared);
	g_prepared = NULL;
}

struct rule_pos {
	uint32_t id;
	uint32_t i; /* in g_rule_list */
};

static int
rule_pos_cmp(const void *a, const void *b)
{
	return u32_cmp(&((const struct rule_pos *)a)->id,
		       &((const struct rule_pos *)b)->id);
}

json_t *
sl_rules_list(struct sl_mgr *m, uint32_t offset, uint32_t limit)
{
	const struct sl_shm *shm = m->shm;
	json_t *a = json_array();
	uint32_t end = offset >= g_n_rules ? offset
		       : limit > g_n_rules - offset ? g_n_rules
						    : offset + limit;
	json_int_t *count = calloc(g_n_rules + 1, sizeof(*count));
	struct rule_pos *by_id = malloc(sizeof(*by_id) * (g_n_rules + 1));

	/* Flows per rule, counted from the table: one pass, each flow's
	 * rule found by id in O(log rules). */
	for (uint32_t i = 0; by_id != NULL && i < g_n_rules; i++)
		by_id[i] = (struct rule_pos){.id = g_rule_list[i].id, .i = i};
	if (by_id != NULL)
		qsort(by_id, g_n_rules, sizeof(*by_id), rule_pos_cmp);
	for (uint32_t p = 0; count != NULL && by_id != NULL && g_n_rules > 0 &&
			     shm->flow.hash != NULL && p < shm->flow.capacity;
	     p++) {
		const struct sl_flow_entry *e = sl_flow_entry(shm, p);
		struct rule_pos k = {.id = g_side[p].rule}, *f;

		if (e->state == SL_FLOW_FREE || k.id == 0)
			continue;
		f = bsearch(&k, by_id, g_n_rules, sizeof(*by_id), rule_pos_cmp);
		if (f != NULL)
			count[f->i]++;
	}
	for (uint32_t i = offset; i < end; i++)
		json_array_append_new(a, rule_json(m, &g_rule_list[i],
						   count && by_id ? count[i] : 0));
	free(count);
	free(by_id);
	return json_pack("{s:o, s:I, s:b, s:I}", "rules", a, "total",
			 (json_int_t)g_n_rules, "truncated",
			 end < g_n_rules, "builds", (json_int_t)g_rule_builds);
}

json_t *
sl_rules_json(struct sl_mgr *m)
{
	return sl_rules_list(m, 0, UINT32_MAX);
}

/* ---- control thread: flows ---------------------------------------- */

/* The entry's key as a 5-tuple (canonical direction). */
static int
entry_tuple(const struct sl_shm *shm, uint32_t p, struct sl_5tuple *t)
{
	if (shm->flow.hash == NULL || p >= shm->flow.capacity)
		return -ENOENT;
	sl_flow_key_tuple(&g_keys[p], t);
	return 0;
}

static const char *
graph_name(const struct sl_shm *shm, uint16_t id)
{
	uint16_t slot;

	if (id == SL_GRAPH_NONE)
		return "(removed)";
	if (id >= shm->max_graphs)
		return "?";
	slot = shm->graph_cur[id];
	return slot != SL_GRAPH_NONE && shm->gtab[slot] != NULL
		       ? shm->gtab[slot]->name
		       : "(removed)";
}

json_t *
sl_flow_json(const struct sl_mgr *m, uint32_t p)
{
	struct sl_shm *shm = m->shm;
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	const uint32_t *pin = sl_flow_pins(shm, e);
	const union sl_flow_ovr *o = sl_flow_ovrs(shm, e);
	struct sl_5tuple t;
	char key[128];
	json_t *pins, *ovr;
	uint32_t now_ms = (uint32_t)((rte_rdtsc() - m->start_tsc) / shm->ms_hz);

	if (entry_tuple(shm, p, &t) != 0)
		return NULL; /* gone meanwhile (the RX thread removed it) */
	sl_5tuple_format(&t, key, sizeof(key));
	pins = json_object();
	ovr = json_array();
	for (uint16_t k = 0; k < shm->flow.n_pins; k++) {
		uint32_t v = __atomic_load_n(&pin[k], __ATOMIC_ACQUIRE);

		if (v != UINT32_MAX && (v >> 16) < shm->max_services)
			json_object_set_new(pins, shm->services[v >> 16].name,
					    json_integer(v & 0xffff));
	}
	for (uint16_t k = 0; k < shm->flow.n_ovr; k++) {
		union sl_flow_ovr v = {.u64 = __atomic_load_n(
					       &o[k].u64, __ATOMIC_ACQUIRE)};

		if (v.f.kind == SL_OVR_FREE || v.f.service >= shm->max_services)
			continue;
		json_t *x = json_pack("{s:s, s:s}", "service",
				      shm->services[v.f.service].name, "type",
				      v.f.kind == SL_OVR_SKIP ? "skip"
							      : "default");
		if (v.f.kind == SL_OVR_DEFAULT)
			json_object_set_new(x, "to", sl_hop_json(shm, v.f.hop));
		json_array_append_new(ovr, x);
	}
	return json_pack(
		"{s:I, s:s, s:i, s:i, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:s}",
		"id", (json_int_t)p, "key", key, "family", t.family, "proto",
		t.proto, "in_port",
		g_side[p].in_port < m->o.n_ports
			? shm->ports[g_side[p].in_port].name
			: "?",
		"graph", graph_name(shm, entry_graph(shm, e)), "pkts", (json_int_t)e->pkts,
		"bytes", (json_int_t)e->bytes, "idle_ms",
		(json_int_t)(uint32_t)(now_ms - e->last_ms), "pins", pins,
		"overrides", ovr, "state",
		e->state == SL_FLOW_DELETE ? "deleting" : "live");
}

/* Does entry p pass the filter (match on either direction, graph,
 * service pinned)? */
static int
flow_filter_ok(const struct sl_shm *shm, uint32_t p,
	       const struct sl_flow_filter *f)
{
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	struct sl_5tuple t;

	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == SL_FLOW_FREE)
		return 0;
	if (f == NULL)
		return 1;
	if (f->graph != SL_GRAPH_NONE && entry_graph(shm, e) != f->graph)
		return 0;
	if (f->service != SL_SERVICE_NONE) {
		const uint32_t *pin = sl_flow_pins(shm, e);
		int found = 0;

		for (uint16_t k = 0; k < shm->flow.n_pins; k++)
			found |= pin[k] != UINT32_MAX &&
				 (pin[k] >> 16) == f->service &&
				 (f->instance == SL_INSTANCE_NONE ||
				  (pin[k] & 0xffff) == f->instance);
		if (!found)
			return 0;
	}
	if (f->has_match) {
		if (entry_tuple(shm, p, &t) != 0 ||
		    !wild_matches(&f->match, &t, g_side[p].in_port))
			return 0;
	}
	return 1;
}

json_t *
sl_flows_list(struct sl_mgr *m, const struct sl_flow_filter *f,
	      uint32_t limit)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();
	uint32_t matched = 0;

	for (uint32_t p = 0; shm->flow.hash != NULL && p < shm->flow.capacity;
	     p++) {
		if (!flow_filter_ok(shm, p, f))
			continue;
		matched++;
		if (json_array_size(a) < limit) {
			json_t *x = sl_flow_json(m, p);

			if (x != NULL)
				json_array_append_new(a, x);
			else
				matched--; /* gone since the filter passed it */
		}
	}
	return json_pack("{s:I, s:I, s:o, s:b}", "total",
			 (json_int_t)shm->flow.n_live, "matched",
			 (json_int_t)matched, "flows", a, "truncated",
			 matched > json_array_size(a));
}

/* Parses "tcp 10.0.0.1:1234 > 10.0.0.2:80" (sl_5tuple_format's form)
 * and finds its entry. */
int
sl_flow_find(const struct sl_mgr *m, const struct sl_5tuple *t, uint32_t *pos)
{
	const struct sl_flow_table *ft = &m->shm->flow;
	struct sl_flow_key k;
	int32_t p;

	if (ft->hash == NULL)
		return -ENOENT;
	sl_flow_key_make(t, &k);
	/* Ingress adds every key under sl_flow_key_hash() (never the port's
	 * RSS hash), so a key not found is not in the table: no scan. A key
	 * found whose entry is still FREE is being created by the RX thread
	 * (added to the hash just before its entry is written): not yet a
	 * flow. */
	p = sl_flow_table_lookup(ft, &k, sl_flow_key_hash(&k));
	if (p < 0 || __atomic_load_n(&sl_flow_entry(m->shm, (uint32_t)p)->state,
				     __ATOMIC_ACQUIRE) == SL_FLOW_FREE)
		return -ENOENT;
	*pos = (uint32_t)p;
	return 0;
}

uint32_t
sl_flows_delete(struct sl_mgr *m, const struct sl_flow_filter *f,
		int64_t only)
{
	struct sl_shm *shm = m->shm;
	uint32_t n = 0, p = 0, end = shm->flow.hash ? shm->flow.capacity : 0;

	if (only >= 0) { /* one flow: its position, not a scan of the table */
		p = (uint32_t)RTE_MIN((uint64_t)only, (uint64_t)end);
		end = p < end ? p + 1 : p;
	}
	for (; p < end; p++) {
		struct sl_flow_entry *e = sl_flow_entry(shm, p);
		uint8_t live = SL_FLOW_LIVE;

		if (!flow_filter_ok(shm, p, f))
			continue;
		/* Counted before it is marked: the RX thread may remove it
		 * (and count it off) as soon as it is. */
		__atomic_fetch_add(&g_del_marked, 1, __ATOMIC_ACQ_REL);
		if (!__atomic_compare_exchange_n(&e->state, &live,
						 SL_FLOW_DELETE, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&g_del_marked, 1, __ATOMIC_RELEASE);
			continue;
		}
		n++;
		/* If the ring is full, the RX thread's pass over the table
		 * finds it (delete_marked). */
		if (rte_ring_sp_enqueue_elem(g_del_ring, &p, sizeof(p)) != 0)
			__atomic_fetch_add(&g_del_missed, 1, __ATOMIC_RELEASE);
	}
	return n;
}

/* ---- control thread: cross-layer requests ------------------------- */

/*
 * Checks request r against graph g and applies it to entry e (NULL: only
 * check). 0, or a positive errno with the reason in err.
 */
static int
req_apply(struct sl_mgr *m, const struct sl_req *r, const struct sl_graph *g,
	  struct sl_flow_entry *e, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const char *sname = shm->services[r->service].name;
	union sl_flow_ovr v = {.u64 = 0};
	uint16_t preds[256], np = 0;

	if (!sl_graph_has(g, r->service) && !(g->open && r->kind ==
						       SL_REQ_CHANGE_DEFAULT)) {
		snprintf(err, errlen,
			 "service '%s' is not a node of graph '%s': name one "
			 "of its nodes (see graph.get)",
			 sname, g->name);
		return EINVAL;
	}
	switch (r->kind) {
	case SL_REQ_SKIP_ME:
		if (g->next[r->service] == SL_HOP_NONE) {
			snprintf(err, errlen,
				 "service '%s' has no default edge in graph "
				 "'%s' to skip to",
				 sname, g->name);
			return EINVAL;
		}
		v.f.service = r->service;
		v.f.kind = SL_OVR_SKIP;
		break;
	case SL_REQ_CHANGE_DEFAULT:
		if (!sl_graph_allows(g, r->service, r->to) ||
		    sl_verdict_kind(r->to) == SL_VERDICT_NEXT) {
			char to[SL_NAME_LEN + 8];

			sl_hop_format(shm, r->to, to, sizeof(to));
			snprintf(err, errlen,
				 "graph '%s' has no edge from '%s' to '%s': "
				 "ChangeDefault may only pick one of the node's "
				 "allowed next hops",
				 g->name, sname, to);
			return EINVAL;
		}
		/* A chain allows any hop: refuse one that leads back to the
		 * service along the chain, which would send the flow round a
		 * loop for ever (the hop limit would drop every packet). */
		sl_hop_t h = r->to;

		for (uint32_t steps = 0;
		     g->open && sl_verdict_kind(h) == SL_VERDICT_TO; steps++) {
			uint16_t t = sl_verdict_id(h);
			char to[SL_NAME_LEN + 8];

			if (t >= shm->max_services || steps > shm->max_services)
				break;
			if (t != r->service) {
				h = g->next[t];
				continue;
			}
			sl_hop_format(shm, r->to, to, sizeof(to));
			snprintf(err, errlen,
				 "graph '%s' is a chain, and '%s' leads back to "
				 "'%s' along it: ChangeDefault from '%s' to '%s' "
				 "would send the flow round a loop; pick a hop "
				 "after '%s' (a later service, a port or drop)",
				 g->name, to, sname, sname, to, sname);
			return EINVAL;
		}
		v.f.service = r->service;
		v.f.kind = SL_OVR_DEFAULT;
		v.f.hop = r->to;
		break;
	case SL_REQ_REQUEST_ME:
		if (g->open) {
			snprintf(err, errlen,
				 "graph '%s' is a chain (no allowed edges "
				 "to choose from): RequestMe needs a graph "
				 "with an edge to '%s'",
				 g->name, sname);
			return EINVAL;
		}
		for (uint16_t i = 0; i < g->n_nodes && np < RTE_DIM(preds); i++)
			if (sl_graph_allows(g, g->nodes[i],
					    SL_HOP_SERVICE(r->service)))
				preds[np++] = g->nodes[i];
		if (np == 0) {
			snprintf(err, errlen,
				 "no node of graph '%s' has an edge to '%s'",
				 g->name, sname);
			return EINVAL;
		}
		if (np > shm->flow.n_ovr) {
			snprintf(err, errlen,
				 "'%s' has %u predecessors in graph '%s' but "
				 "a flow holds %u overrides: raise "
				 "--flow-overrides",
				 sname, np, g->name, shm->flow.n_ovr);
			return ENOSPC;
		}
		break;
	default:
		snprintf(err, errlen, "unknown request kind %u", r->kind);
		return EINVAL;
	}
	if (e == NULL)
		return 0;
	if (r->kind == SL_REQ_REQUEST_ME) {
		union sl_flow_ovr *o = sl_flow_ovrs(shm, e);

		/* Undo a SkipMe of the same service, then route to it. */
		for (uint16_t k = 0; k < shm->flow.n_ovr; k++)
			if (o[k].f.kind == SL_OVR_SKIP &&
			    o[k].f.service == r->service) {
				__atomic_store_n(&o[k].u64, 0,
						 __ATOMIC_RELEASE);
				__atomic_store_n(&e->n_ovr,
						 (uint8_t)(e->n_ovr - 1),
						 __ATOMIC_RELEASE);
			}
		for (uint16_t i = 0; i < np; i++) {
			union sl_flow_ovr d = {.u64 = 0};

			d.f.service = preds[i];
			d.f.kind = SL_OVR_DEFAULT;
			d.f.hop = SL_HOP_SERVICE(r->service);
			if (ovr_put(shm, e, d) != 0)
				goto full;
		}
		return 0;
	}
	if (ovr_put(shm, e, v) == 0)
		return 0;
full:
	snprintf(err, errlen,
		 "the flow already holds %u overrides: raise "
		 "--flow-overrides",
		 shm->flow.n_ovr);
	return ENOSPC;
}

static const struct sl_graph *
graph_now(const struct sl_shm *shm, uint16_t id)
{
	uint16_t gv = id < shm->max_graphs ? sl_graph_current(shm, id)
					   : SL_GRAPH_NONE;

	return gv == SL_GRAPH_NONE ? NULL : sl_graph_of(shm, gv);
}

static int
free_wildset(struct sl_mgr *m, void *p)
{
	(void)m;
	free(p);
	return 0;
}

static int
deliver_message(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
		char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const struct sl_service *svc = &shm->services[r->service];
	uint16_t n = svc->n_live;

	if (n == 0) {
		snprintf(err, errlen,
			 "service '%s' has no running instance to take the "
			 "message",
			 svc->name);
		return ENOENT;
	}
	for (uint16_t k = 0; k < n; k++) {
		struct sl_nf_slot *s = &shm->nfs[svc->live[k]];
		struct sl_msg *msg;

		if (s->inbox == NULL ||
		    rte_mempool_get(shm->msg_pool, (void **)&msg) != 0)
			continue;
		memset(msg, 0, sizeof(*msg));
		msg->type = SL_MSG_MESSAGE;
		msg->req.kind = SL_REQ_MESSAGE;
		msg->req.service = r->service;
		snprintf(msg->req.mkey, sizeof(msg->req.mkey), "%s", r->mkey);
		snprintf(msg->req.value, sizeof(msg->req.value), "%s",
			 r->value);
		if (rte_ring_enqueue(s->inbox, msg) != 0) {
			sl_msg_put(shm, msg);
			continue;
		}
		(*applied)++;
	}
	if (*applied < n) {
		m->msgs_undelivered += n - *applied;
		if (m->msgs_undelivered <= 20 ||
		    m->msgs_undelivered % 1000 == 0)
			sl_log("message '%s' to service '%s': %u of its %u "
			       "instances had a full inbox and did not get it "
			       "(status messages.undelivered %" PRIu64 ")",
			       r->mkey, svc->name, n - *applied, n,
			       m->msgs_undelivered);
	}
	if (*applied == 0) {
		snprintf(err, errlen,
			 "no instance of '%s' could take the message (inboxes "
			 "full)",
			 svc->name);
		return ENOBUFS;
	}
	/* Sent, but not to all: the sender hears which (the reply's reason,
	 * the control socket's note). */
	if (*applied < n)
		snprintf(err, errlen,
			 "%u of the %u instances of '%s' had a full inbox and "
			 "did not get it (status messages.undelivered)",
			 n - *applied, n, svc->name);
	return 0;
}

int
sl_flow_request(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
		uint32_t *kept, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	int rc;

	*applied = 0;
	*kept = 0;
	if (r->service >= shm->max_services || !shm->services[r->service].used) {
		snprintf(err, errlen, "no such service (id %u)", r->service);
		return ENOENT;
	}
	if (r->kind == SL_REQ_MESSAGE)
		return deliver_message(m, r, applied, err, errlen);
	if (shm->flow.hash == NULL) {
		snprintf(err, errlen,
			 "%s needs the flow table, and sluiced runs with "
			 "--flow-lookup off",
			 sl_req_name(r->kind));
		return ENOTSUP;
	}
	if (r->exact) {
		uint32_t p;
		struct sl_flow_entry *e;
		const struct sl_graph *g;

		if (sl_flow_find(m, &r->tuple, &p) != 0) {
			snprintf(err, errlen,
				 "no such flow in the table (it may have aged "
				 "out)");
			return ENOENT;
		}
		e = sl_flow_entry(shm, p);
		g = graph_now(shm, entry_graph(shm, e));
		if (g == NULL) {
			snprintf(err, errlen, "the flow's graph was removed");
			return ENOENT;
		}
		rc = req_apply(m, r, g, e, err, errlen);
		if (rc == 0)
			*applied = 1;
		return rc;
	}

	/* Wildcard: valid in at least one graph; kept for new flows (a
	 * RequestMe is expanded for each new flow's graph), applied to the
	 * live ones now. */
	int valid = 0;
	char first_err[256] = "";

	for (uint16_t id = 0; id < shm->max_graphs; id++) {
		const struct sl_graph *g = graph_now(shm, id);

		if (g == NULL)
			continue;
		if (req_apply(m, r, g, NULL, first_err[0] ? err : first_err,
			      first_err[0] ? errlen : sizeof(first_err)) == 0)
			valid = 1;
	}
	if (!valid && first_err[0] == '\0') { /* not even a chain yet */
		snprintf(err, errlen,
			 "no chain or graph is set yet to check %s against: "
			 "ask again once the chain is set (chain.set)",
			 sl_req_name(r->kind));
		return EAGAIN;
	}
	if (!valid) {
		snprintf(err, errlen, "%s", first_err);
		return EINVAL;
	}
	{
		const struct sl_wildset *old = g_wild;
		uint32_t n = old ? old->n : 0;
		struct sl_wildset *ws;
		struct sl_wild w = {.match = r->match,
				    .request_me =
					    r->kind == SL_REQ_REQUEST_ME};
		uint32_t dup = 0;

		w.ovr.f.service = r->service;
		w.ovr.f.kind = r->kind == SL_REQ_SKIP_ME ? SL_OVR_SKIP
							 : SL_OVR_DEFAULT;
		w.ovr.f.hop = r->kind == SL_REQ_CHANGE_DEFAULT ? r->to : 0;
		/* The same request again (an NF restarted, say) is kept once:
		 * it would only use up --max-wildcards. */
		for (uint32_t i = 0; i < n && !dup; i++)
			if (old->w[i].ovr.u64 == w.ovr.u64 &&
			    old->w[i].request_me == w.request_me &&
			    memcmp(&old->w[i].match, &w.match,
				   sizeof(w.match)) == 0)
				dup = old->w[i].id;
		if (dup) {
			*kept = dup;
			goto live;
		}
		if (n == m->o.max_wild) {
			snprintf(err, errlen,
				 "all %u wildcard requests are in use: remove "
				 "one (flow.requests lists them, "
				 "flow.request.remove) or raise --max-wildcards",
				 m->o.max_wild);
			return ENOSPC;
		}
		ws = malloc(sizeof(*ws) + sizeof(ws->w[0]) * (n + 1));
		if (ws == NULL) {
			snprintf(err, errlen, "out of memory");
			return ENOMEM;
		}
		ws->n = n + 1;
		if (n > 0)
			memcpy(ws->w, old->w, sizeof(ws->w[0]) * n);
		ws->w[n] = w;
		/* Stable (oldest first, never reused): removing one does not
		 * rename the others. */
		ws->w[n].id = ++g_wild_id;
		*kept = ws->w[n].id;
		__atomic_store_n(&g_wild, ws, __ATOMIC_RELEASE);
		if (old != NULL)
			defer(m, free_wildset, (void *)(uintptr_t)old);
	}
live:;
	struct sl_flow_filter f = {.graph = SL_GRAPH_NONE,
				   .service = SL_SERVICE_NONE,
				   .has_match = 1,
				   .match = r->match};
	for (uint32_t p = 0; p < shm->flow.capacity; p++) {
		struct sl_flow_entry *e = sl_flow_entry(shm, p);
		const struct sl_graph *g;
		char e2[256];

		if (!flow_filter_ok(shm, p, &f))
			continue;
		g = graph_now(shm, entry_graph(shm, e));
		if (g != NULL && req_apply(m, r, g, e, e2, sizeof(e2)) == 0)
			(*applied)++;
	}
	return 0;
}

static json_t *
wild_json(const struct sl_shm *shm, const struct sl_wild *w)
{
	json_t *o = json_object(), *mt = json_object();
	uint32_t kind = w->request_me		       ? SL_REQ_REQUEST_ME
			: w->ovr.f.kind == SL_OVR_SKIP ? SL_REQ_SKIP_ME
						       : SL_REQ_CHANGE_DEFAULT;

	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "type", json_string(sl_req_name(kind)));
	json_object_set_new(
		o, "service",
		json_string(w->ovr.f.service < shm->max_services
				    ? shm->services[w->ovr.f.service].name
				    : "?"));
	if (!w->request_me && w->ovr.f.kind == SL_OVR_DEFAULT)
		json_object_set_new(o, "to", sl_hop_json(shm, w->ovr.f.hop));
	match_json(shm, &w->match, mt);
	json_object_set_new(o, "match", mt);
	return o;
}

json_t *
sl_flow_requests_json(const struct sl_mgr *m)
{
	const struct sl_wildset *ws = g_wild;
	json_t *a = json_array();

	for (uint32_t i = 0; ws != NULL && i < ws->n; i++)
		json_array_append_new(a, wild_json(m->shm, &ws->w[i]));
	return json_pack("{s:o}", "requests", a);
}

/* Forgets kept request `id`: flows created from now on no longer get it;
 * live flows keep the overrides it gave them. */
int
sl_flow_request_remove(struct sl_mgr *m, uint32_t id, char *err,
		       size_t errlen)
{
	const struct sl_wildset *old = g_wild;
	struct sl_wildset *ws;
	uint32_t n = old ? old->n : 0, i, j = 0;

	for (i = 0; i < n && old->w[i].id != id; i++)
		;
	if (i == n) {
		snprintf(err, errlen,
			 "no kept wildcard request with id %u; see "
			 "flow.requests",
			 id);
		return -ENOENT;
	}
	ws = malloc(sizeof(*ws) + sizeof(ws->w[0]) * (n - 1));
	if (ws == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (old->w[i].id != id)
			ws->w[j++] = old->w[i];
	ws->n = j;
	__atomic_store_n(&g_wild, ws, __ATOMIC_RELEASE);
	defer(m, free_wildset, (void *)(uintptr_t)old);
	sl_event("flow.request.removed",
		 json_pack("{s:I}", "id", (json_int_t)id));
	return 0;
}

/* Empties the wildcard requests (graph.apply / remove of anything they
 * could name is handled by re-validation at use time). */
void
sl_flow_close(void)
{
	free(g_rule_list);
	g_rule_list = NULL;
	g_n_rules = 0;
	free_ruleset(NULL, g_rules);
	g_rules = NULL;
	free(g_wild);
	g_wild = NULL;
	free(g_keys);
	g_keys = NULL;
	free(g_side);
	g_side = NULL;
	free(g_graph_inc);
	g_graph_inc = NULL;
}
