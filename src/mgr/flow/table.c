/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The flow module's state and tables (flow/flow.h), and the helpers the
 * control thread and the other flow files use on entries: their graph,
 * overrides, filters, find and delete.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "sl_graph.h"
#include "sl_match.h"
#include "sluiced.h"

size_t
mgr_flow_entry_bytes(const struct sl_mgr_opts *o)
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
table_create(const char *suffix, uint32_t key_len, uint32_t entries,
	     const char *option)
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

/* The two hash tables, the entries and sluiced's per-position arrays:
 * 0, or ENOMEM after printing why. */
static int
tables_init(struct sl_mgr *m, struct sl_flowdir_state *fs)
{
	struct sl_flow_table *ft = &m->shm->flow;
	char name[RTE_RING_NAMESIZE];
	size_t sz;

	ft->hash = table_create("flows", sizeof(struct sl_flow_key4),
				m->o.flow_capacity, "--flow-capacity");
	ft->hash6 = ft->hash == NULL
			    ? NULL
			    : table_create("flows6", sizeof(struct sl_flow_key),
					   ft->max_flows6,
					   "--flow-capacity-v6");
	if (ft->hash == NULL || ft->hash6 == NULL)
		return ENOMEM; /* table_create said why */
	ft->base6 = (uint32_t)rte_hash_max_key_id(ft->hash) + 1;
	ft->capacity = ft->base6 + (uint32_t)rte_hash_max_key_id(ft->hash6) + 1;
	sz = (size_t)ft->capacity * ft->stride;
	ft->entries = rte_zmalloc("sl_flow_entries", sz, RTE_CACHE_LINE_SIZE);
	fs->keys = calloc(ft->capacity, sizeof(*fs->keys));
	fs->side = calloc(ft->capacity, sizeof(*fs->side));
	/* Touched now, not as flows first use each position: rte_hash hands
	 * out free positions in turn, so a table whose flows come and go
	 * would page these in for minutes (RSS growing to its fixed size,
	 * which looks like a leak). */
	touch_pages(fs->keys, (size_t)ft->capacity * sizeof(*fs->keys));
	touch_pages(fs->side, (size_t)ft->capacity * sizeof(*fs->side));
	snprintf(name, sizeof(name), "sl_%.16s_fdel", m->o.name);
	fs->del_ring = rte_ring_create_elem(name, sizeof(uint32_t),
					    SL_FLOW_DEL_RING,
					    (int)rte_socket_id(),
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ft->entries == NULL || fs->del_ring == NULL || fs->keys == NULL ||
	    fs->side == NULL) {
		fprintf(stderr,
			"sluiced: out of hugepage memory for %u flow entries "
			"(%zu MiB); lower --flow-capacity\n",
			ft->capacity, sz >> 20);
		return ENOMEM;
	}
	return 0;
}

int
mgr_flow_init(struct sl_mgr *m)
{
	struct sl_flow_table *ft = &m->shm->flow;
	struct sl_flowdir_state *fs;
	size_t fs_sz = RTE_ALIGN_CEIL(sizeof(*fs), RTE_CACHE_LINE_SIZE);

	ft->lookup = m->o.flow_lookup;
	ft->timeout_ms = m->o.flow_timeout_ms;
	ft->n_pins = (uint16_t)m->o.flow_pins;
	ft->n_ovr = (uint16_t)m->o.flow_ovr;
	ft->max_flows = m->o.flow_capacity;
	ft->max_flows6 = m->o.flow_capacity6; /* <= flow_capacity (main.c) */
	ft->ovr_off =
		(uint32_t)RTE_ALIGN_CEIL(sizeof(struct sl_flow_entry) +
						 sizeof(uint32_t) * ft->n_pins,
					 8);
	ft->stride = (uint32_t)mgr_flow_entry_bytes(&m->o);
	/* Cache-line aligned: del_marked's line is the control thread's. */
	fs = aligned_alloc(RTE_CACHE_LINE_SIZE, fs_sz);
	if (fs != NULL) {
		memset(fs, 0, fs_sz);
		fs->start_tsc = m->start_tsc;
		fs->graph_inc = calloc(m->o.max_graphs, sizeof(*fs->graph_inc));
	}
	m->flow = fs;
	if (fs == NULL || fs->graph_inc == NULL) {
		fprintf(stderr, "sluiced: out of memory for the graph table\n");
		return ENOMEM;
	}
	if (ft->lookup == SL_LOOKUP_OFF)
		return 0;
	return tables_init(m, fs);
}

void
mgr_flow_close(struct sl_mgr *m)
{
	struct sl_flowdir_state *fs = m->flow;

	if (fs == NULL)
		return;
	free(fs->keys);
	free(fs->side);
	free(fs->graph_inc);
	free(fs);
	m->flow = NULL;
}

void
mgr_flow_graph_removed(struct sl_flowdir_state *fs, uint16_t id)
{
	__atomic_store_n(&fs->graph_inc[id], (uint16_t)(fs->graph_inc[id] + 1),
			 __ATOMIC_RELEASE);
}

uint16_t
mgr_flow_entry_graph(const struct sl_flowdir_state *fs,
		     const struct sl_shm *shm, const struct sl_flow_entry *e)
{
	uint16_t id = e->graph;

	if (id == 0)
		return 0; /* the default chain is never removed */
	if (sl_graph_current(shm, id) == SL_GRAPH_NONE ||
	    e->graph_inc !=
		    __atomic_load_n(&fs->graph_inc[id], __ATOMIC_ACQUIRE))
		return SL_GRAPH_NONE;
	return id;
}

int
mgr_flow_match_either(const struct sl_match *mt, const struct sl_5tuple *t,
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

int
mgr_flow_ovr_put(const struct sl_shm *shm, struct sl_flow_entry *e,
		 union sl_flow_ovr v)
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
		return ENOSPC;
	__atomic_store_n(&o[free_k].u64, v.u64, __ATOMIC_RELEASE);
	__atomic_store_n(&e->n_ovr, (uint8_t)(e->n_ovr + 1), __ATOMIC_RELEASE);
	return 0;
}

int
mgr_flow_deferred_run(void *ctx, struct sl_grace_action *qa, int draining)
{
	struct sl_flow_deferred *d =
		container_of(qa, struct sl_flow_deferred, qa);
	int rc = d->fn(ctx, d->p);

	/* At shutdown nothing reads it: a few more tries, then let go. */
	for (int k = 1; draining && k < 3 && rc != 0; k++)
		rc = d->fn(ctx, d->p);
	if (rc == 0 || draining)
		free(d);
	return rc == 0 ? 0 : EAGAIN; /* retried at the next poll */
}

void
mgr_flow_defer(struct sl_mgr *m, sl_flow_free_fn *fn, void *p)
{
	struct sl_flow_deferred *d = calloc(1, sizeof(*d));

	if (d == NULL || sl_grace_defer(&m->qs, &d->qa, mgr_flow_deferred_run,
					m->shm) != 0) {
		/* out of memory or queue full: leak rather than risk a
		 * reader */
		free(d);
		mgr_log(m, "out of memory queueing a deferred free");
		return;
	}
	d->fn = fn;
	d->p = p;
}

/* Is any pin of entry e service f->service's (and f->instance's)? */
static int
pinned_to(const struct sl_shm *shm, struct sl_flow_entry *e,
	  const struct sl_flow_filter *f)
{
	const uint32_t *pin = sl_flow_pins(shm, e);
	int found = 0;

	for (uint16_t k = 0; k < shm->flow.n_pins; k++)
		found |= pin[k] != UINT32_MAX && (pin[k] >> 16) == f->service &&
			 (f->instance == SL_INSTANCE_NONE ||
			  (pin[k] & 0xffff) == f->instance);
	return found;
}

int
mgr_flow_filter_ok(const struct sl_flowdir_state *fs, const struct sl_shm *shm,
		   uint32_t p, const struct sl_flow_filter *f)
{
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	struct sl_5tuple t;

	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == SL_FLOW_FREE)
		return 0;
	if (f == NULL)
		return 1;
	if (f->graph != SL_GRAPH_NONE &&
	    mgr_flow_entry_graph(fs, shm, e) != f->graph)
		return 0;
	if (f->service != SL_SERVICE_NONE && !pinned_to(shm, e, f))
		return 0;
	if (f->has_match) {
		if (shm->flow.hash == NULL || p >= shm->flow.capacity)
			return 0;
		sl_flow_key_tuple(&fs->keys[p], &t);
		if (!mgr_flow_match_either(&f->match, &t, fs->side[p].in_port))
			return 0;
	}
	return 1;
}

/* Finds the entry of 5-tuple t (flow.get, exact requests). */
int
mgr_flow_find(const struct sl_mgr *m, const struct sl_5tuple *t, uint32_t *pos)
{
	const struct sl_flow_table *ft = &m->shm->flow;
	struct sl_flow_key k;
	int32_t p;

	if (ft->hash == NULL)
		return ENOENT;
	sl_flow_key_make(t, &k);
	/* Ingress adds every key under sl_flow_key_hash() (never the port's
	 * RSS hash), so a key not found is not in the table: no scan. A key
	 * found whose entry is still FREE is being created by the RX thread
	 * (added to the hash just before its entry is written): not yet a
	 * flow. */
	p = sl_flow_table_lookup(ft, &k, sl_flow_key_hash(&k));
	if (p < 0 || __atomic_load_n(&sl_flow_entry(m->shm, (uint32_t)p)->state,
				     __ATOMIC_ACQUIRE) == SL_FLOW_FREE)
		return ENOENT;
	*pos = (uint32_t)p;
	return 0;
}

uint32_t
mgr_flows_delete(struct sl_mgr *m, const struct sl_flow_filter *f, int64_t only)
{
	struct sl_flowdir_state *fs = m->flow;
	struct sl_shm *shm = m->shm;
	uint32_t n = 0, p = 0, end = shm->flow.hash ? shm->flow.capacity : 0;

	if (only >= 0) { /* one flow: its position, not a scan of the table */
		p = (uint32_t)RTE_MIN((uint64_t)only, (uint64_t)end);
		end = p < end ? p + 1 : p;
	}
	for (; p < end; p++) {
		struct sl_flow_entry *e = sl_flow_entry(shm, p);
		uint8_t live = SL_FLOW_LIVE;

		if (!mgr_flow_filter_ok(fs, shm, p, f))
			continue;
		/* Counted before it is marked: the RX thread may remove it
		 * (and count it off) as soon as it is. */
		__atomic_fetch_add(&fs->del_marked, 1, __ATOMIC_ACQ_REL);
		if (!__atomic_compare_exchange_n(&e->state, &live,
						 SL_FLOW_DELETE, 0,
						 __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			__atomic_fetch_sub(&fs->del_marked, 1,
					   __ATOMIC_RELEASE);
			continue;
		}
		n++;
		/* If the ring is full, the RX thread's pass over the table
		 * finds it (delete_marked). */
		if (rte_ring_sp_enqueue_elem(fs->del_ring, &p, sizeof(p)) != 0)
			__atomic_fetch_add(&fs->del_missed, 1,
					   __ATOMIC_RELEASE);
	}
	return n;
}
