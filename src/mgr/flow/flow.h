/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's flow director (src/mgr/flow/): an exact-match flow table
 * (rte_hash, cuckoo, lock-free readers) whose entries live in shared
 * memory, and the RX thread's side of it.
 *   table.c    state, tables, entries' helpers, filters, find, delete
 *   ingress.c  the per-burst lookup, classification and entry creation
 *   maintain.c aging, deletions, recycling after a grace period
 *   json.c     flow.list / flow.get
 * Rules (src/mgr/rules/) and wildcard requests (src/mgr/requests/) are
 * immutable sets their modules build and publish here (struct
 * sl_flowdir_state's rules and wild): ingress reads them, nothing else of
 * those modules.
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
 * Part of sluiced.h, which includes it: include "sluiced.h".
 */
#ifndef SL_MGR_FLOW_H
#define SL_MGR_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sluiced.h"

struct rte_mbuf;
struct rte_ring;

/* ---- sets the RX thread reads (immutable once published) ----------- */

struct sl_rule {
	uint32_t id;
	uint16_t graph;
	int32_t priority;
	struct sl_match match;
};

/* A built rule set: rules[i] is classifier result i + 1. */
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

/* ---- the module's state -------------------------------------------- */

#define SL_FLOW_LIMBO_BATCH 256
#define SL_FLOW_LIMBO_BATCHES 64
#define SL_FLOW_DEL_RING 4096

/* Positions deleted together, recycled together after a grace period. */
struct sl_flow_limbo {
	uint32_t n;
	uint32_t pos[SL_FLOW_LIMBO_BATCH];
	struct sl_grace grace;
};

/* Per position, sluiced-only: the rte_hash signature the key was added
 * with (to delete it), the id of the rule that classified it and the port
 * its first packet came in on (what in_port filters test). */
struct sl_flow_side {
	uint32_t sig;
	uint32_t rule;
	uint16_t in_port;
};

struct sl_flowdir_state {
	/* The RX thread's own (there is one RX thread). */
	struct sl_flow_limbo limbo[SL_FLOW_LIMBO_BATCHES];
	unsigned int head; /* oldest closed batch */
	unsigned int n_closed;
	uint64_t open_since; /* TSC when the open batch got its first */
	uint32_t cursor;     /* aging sweep position */
	uint32_t pass;       /* deleted-flow pass position, while pass_on */
	uint32_t pass_seen;  /* del_missed when the pass (re)started */
	int pass_on;
	uint32_t now_ms; /* since start_tsc, set once per millisecond */
	uint64_t last_tick;
	int self_io; /* the RX thread's I/O index (not waited for) */
	uint64_t start_tsc;

	/* Each entry's key (written by the RX thread when it creates the
	 * entry). rte_hash_get_key_with_position() cannot be used: it
	 * re-hashes the key with the table's hash function, and entries are
	 * added with sluiced's symmetric hash (sl_flow_key_hash) instead. */
	struct sl_flow_key *keys;  /* [capacity] */
	struct sl_flow_side *side; /* [capacity] */
	/* Per graph id, bumped when that graph is removed (control thread;
	 * RX reads it): an entry classified under an earlier incarnation of
	 * its graph id belongs to a removed graph, even once another graph
	 * got the id, and is classified again. */
	uint16_t *graph_inc; /* [max_graphs] */
	/* control -> RX: positions to delete (uint32_t). */
	struct rte_ring *del_ring;

	/* Written by the control thread, read by the RX thread: a line of
	 * their own, apart from the RX thread's fields above. */
	/* Entries in state SL_FLOW_DELETE (control adds, RX subtracts):
	 * while none is, ingress does not look at a hit's state. */
	uint32_t del_marked __attribute__((aligned(64)));
	/* Bumped whenever a marked entry is not (or no longer) on the ring:
	 * the RX thread then passes over the table for marked entries. */
	uint32_t del_missed;
	/* Published by rules/ and requests/ (atomic pointers, the control
	 * thread swaps them; the old set is freed after a grace period). */
	struct sl_ruleset *rules;
	struct sl_wildset *wild;
};

/* ---- flow filters (flow.list, flow.delete) ------------------------- */

struct sl_flow_filter {
	uint16_t graph;    /* SL_GRAPH_NONE: any */
	uint16_t service;  /* pinned to this service (SL_SERVICE_NONE: any) */
	uint16_t instance; /* ... and this instance (SL_INSTANCE_NONE: any) */
	int has_match;
	struct sl_match match; /* either direction */
};

/* ---- start and stop (table.c) -------------------------------------- */

size_t mgr_flow_entry_bytes(const struct sl_mgr_opts *o);
/* The flow module: m->flow (after rules and requests made theirs; and,
 * unless --flow-lookup off, the tables). 0, or ENOMEM after printing
 * why. */
int mgr_flow_init(struct sl_mgr *m);
/* Frees the states mgr_flow_init made (the tables go with EAL); after
 * the I/O threads and the rule builder stopped. */
void mgr_flow_close(struct sl_mgr *m);
/* Graph id `id` was removed: flows classified under it are its no more. */
void mgr_flow_graph_removed(struct sl_flowdir_state *fs, uint16_t id);

/* ---- the RX thread (ingress.c, maintain.c) -------------------------- */

void mgr_flow_ingress(struct sl_flowdir_state *fs, struct sl_shm *shm,
		      struct rte_mbuf **pkts, uint16_t n);
/* Aging, deletions and recycling: at most once per millisecond. */
void mgr_flow_maintain(struct sl_flowdir_state *fs, struct sl_shm *shm,
		       uint64_t now);
void mgr_flow_rx_fini(struct sl_flowdir_state *fs);
/* Removes entry p if it is marked deleted (counted as deleted): 0, or
 * EAGAIN if every limbo batch is waiting, ENOENT if it is not marked. */
int mgr_flow_retire_deleted(struct sl_flowdir_state *fs, struct sl_shm *shm,
			    uint32_t p);

/* ---- the control thread (table.c, json.c) -------------------------- */

json_t *mgr_flow_json(const struct sl_mgr *m, uint32_t pos);
json_t *mgr_flows_list(struct sl_mgr *m, const struct sl_flow_filter *f,
		       uint32_t limit);
/* 0 and the position of t's entry, or ENOENT (no table, no live entry) */
int mgr_flow_find(const struct sl_mgr *m, const struct sl_5tuple *t,
		  uint32_t *pos);
uint32_t mgr_flows_delete(struct sl_mgr *m, const struct sl_flow_filter *f,
			  int64_t only);

/* ---- for rules/ and requests/ (table.c, json.c) -------------------- */

/* The entry's graph id, or SL_GRAPH_NONE if that graph was removed (the
 * next packet classifies the flow again). */
uint16_t mgr_flow_entry_graph(const struct sl_flowdir_state *fs,
			      const struct sl_shm *shm,
			      const struct sl_flow_entry *e);
/* Does entry p pass the filter (NULL: any live entry)? */
int mgr_flow_filter_ok(const struct sl_flowdir_state *fs,
		       const struct sl_shm *shm, uint32_t p,
		       const struct sl_flow_filter *f);
/* Does t, in either direction, match mt? */
int mgr_flow_match_either(const struct sl_match *mt, const struct sl_5tuple *t,
			  uint16_t in_port);
/* Writes an override into a free slot (or the slot of the same service
 * and kind): 0, or ENOSPC if none is left. Caller: the entry's one writer. */
int mgr_flow_ovr_put(const struct sl_shm *shm, struct sl_flow_entry *e,
		     union sl_flow_ovr v);
/* A match's fields into obj, its ingress port by name. */
void mgr_flow_match_json(const struct sl_shm *shm, const struct sl_match *mt,
			 json_t *obj);
/* Frees what mgr_flow_defer() was given; 0 once done. */
typedef int sl_flow_free_fn(struct sl_mgr *m, void *p);
/* Frees p with fn(m, p) once no reader can hold it (a grace period). */
void mgr_flow_defer(struct sl_mgr *m, sl_flow_free_fn *fn, void *p);
/* What mgr_flow_defer queues on m->qs, and its grace-queue function. */
struct sl_flow_deferred {
	struct sl_grace_action qa;
	sl_flow_free_fn *fn;
	void *p;
};
int mgr_flow_deferred_run(void *ctx, struct sl_grace_action *qa, int draining);

#endif /* SL_MGR_FLOW_H */
