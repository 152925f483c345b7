/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one definition of every layout shared by sluiced (DPDK primary) and
 * libsluice (DPDK secondaries). Everything here lives in hugepage memory
 * mapped at the same address in every process, so pointers are valid
 * everywhere. Writers are named on each field; counters have one writer.
 *
 * Bump SL_SHM_VERSION whenever a layout here changes: an NF built against
 * another version refuses to attach, with a message saying so.
 */
#ifndef SL_SHARED_H
#define SL_SHARED_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_common.h>

#include "sluice/nf.h"

#define SL_SHM_MAGIC 0x534c4943u /* "SLIC" */
#define SL_SHM_VERSION 9u

/*
 * Layout pins. An NF keeps the layout of the header it was built with, so
 * every structure here that NFs map (through struct sl_shm, the message
 * pool and the packet metadata) has its size and the offsets of its
 * fields pinned by the asserts after it. A change that moves one fails
 * the build: then bump SL_SHM_VERSION (NFs built against the old layout
 * refuse to attach instead of misreading it) and update the numbers. The
 * numbers are those of 64-bit builds with 64-byte cache lines (DPDK's
 * RTE_CACHE_LINE_SIZE); elsewhere only the alignment rules below are
 * checked. SL_SHM_PINNED_VERSION says which version the numbers describe.
 */
#define SL_SHM_PINNED_VERSION 9u
_Static_assert(SL_SHM_VERSION == SL_SHM_PINNED_VERSION,
	       "the layout pins below describe another SL_SHM_VERSION: check "
	       "them against the new layout and update SL_SHM_PINNED_VERSION");
#if UINTPTR_MAX == UINT64_MAX && RTE_CACHE_LINE_SIZE == 64
#define SL_PIN_SIZE(type, n)                                                   \
	_Static_assert(sizeof(type) == (n),                                    \
		       #type " changed size: bump SL_SHM_VERSION and update "  \
			     "the layout pins (see SL_SHM_PINNED_VERSION)")
#define SL_PIN_OFF(type, field, n)                                             \
	_Static_assert(offsetof(type, field) == (n), #type                     \
		       "." #field " moved: bump SL_SHM_VERSION and "           \
		       "update the layout pins (see SL_SHM_PINNED_VERSION)")
#else
#define SL_PIN_SIZE(type, n) _Static_assert(1, #type)
#define SL_PIN_OFF(type, field, n) _Static_assert(1, #type "." #field)
#endif

#define SL_NAME_LEN 32
#define SL_BURST 32
#define SL_LB_BUCKETS 256 /* flow-sticky bucket table, power of two */
#define SL_MAX_PORTS 32
#define SL_BURST_MAX 64 /* --burst: packets per burst, at most */
#define SL_MAX_IO_THREADS 4
#define SL_INSTANCE_NONE 0xffffu
#define SL_SERVICE_NONE 0xffffu
#define SL_PORT_NONE 0xffffu
#define SL_FLOW_NONE 0xffffffffu
#define SL_GRAPH_NONE 0xffffu
/* Compiled graph versions that may be in flight at once (the version table);
 * a packet names its version by slot (low 8 bits) and tag (high 8 bits). */
#define SL_GRAPH_SLOTS 256
#define SL_CACHE_LINE 64
#define SL_INBOX_SIZE 256 /* messages and replies waiting for one NF */

/* Node names are short: DPDK object names hold 31 characters at most. */
#define SL_NODE_NAME_MAX 16
/* Memzone and object names; %.16s is the node name. */
#define SL_MZ_SHM "sl_%.16s_shm"
#define SL_MZ_MSG_RING "sl_%.16s_msg"
#define SL_MZ_MSG_POOL "sl_%.16s_msgp"
#define SL_DYNFIELD_NAME "sluice_meta"

/* A hop in a chain or graph: same encoding as sl_verdict_t. */
typedef uint32_t sl_hop_t;
#define SL_HOP_NONE SL_NEXT /* no default edge: "end of chain" */
#define SL_HOP_SERVICE(s) SL_TO(s)
#define SL_HOP_PORT(p) SL_OUT(p)
#define SL_HOP_DROP SL_DROP

/* Why a packet was dropped. Keep sl_drop_names[] in step. */
enum sl_drop_reason {
	SL_DROP_NF_VERDICT = 0, /* an NF returned DROP */
	SL_DROP_RING_FULL,      /* next hop's ring stayed full past the bound */
	SL_DROP_NO_INSTANCE,    /* the service has no live instance */
	SL_DROP_INVALID_DEST,   /* TO/OUT names no such service or port */
	SL_DROP_END_OF_CHAIN,   /* NEXT where the chain has no default edge */
	SL_DROP_NF_LOST,        /* reclaimed from a dead NF's rings/hands */
	SL_DROP_TX_FULL,        /* port TX queue stayed full past the bound */
	SL_DROP_PORT_DOWN,      /* OUT to a port that is not started */
	SL_DROP_GRAPH,          /* the chain/graph sends it to "drop" */
	SL_DROP_POLICY,         /* TO/OUT on an edge the graph does not allow */
	SL_DROP_GRAPH_GONE, /* its graph version was freed while it waited */
	SL_DROP_HOP_LIMIT,  /* a port's packet made --max-hops NF visits */
	SL_DROP_MAX
};

#define SL_DROP_NAMES                                                          \
	{                                                                      \
		"nf_verdict", "ring_full", "no_instance", "invalid_dest",      \
			"end_of_chain", "nf_lost", "tx_full", "port_down",     \
			"graph_drop", "policy_violation", "graph_gone",        \
			"hop_limit"                                            \
	}

/* Per-packet metadata: an mbuf dynamic field registered by sluiced. */
struct sl_pkt_meta {
	sl_verdict_t verdict; /* set by the NF holding the packet */
	uint32_t flow_hash;   /* symmetric flow hash, valid with
			       * SL_META_HASH (see sl_meta_flow_hash()) */
	uint32_t flow;        /* flow-table entry (position), SL_FLOW_NONE;
			       * cached at ingress: later hops never hash */
	uint16_t flow_gen;    /* low bits of the entry's gen when cached */
	uint16_t graph;       /* graph version: slot | tag << 8 (valid with
			       * SL_META_GRAPH); fixed at ingress, so a
			       * packet never sees two versions of a graph */
	uint16_t service;     /* graph node: service that holds / held it */
	uint16_t owner;       /* instance id + 1 of the NF that holds it, or
			       * that handed it into a ring and whose
			       * consumer has not taken it yet (a consumer
			       * retags what it takes); 0: sluiced's, or
			       * free. Lets sluiced reclaim exactly a dead
			       * NF's packets (docs/architecture.md). */
	uint16_t in_port;     /* ingress ethdev, UINT16_MAX if NF-made */
	uint16_t flags;
};
_Static_assert(sizeof(struct sl_pkt_meta) == 24, "meta must stay 24 bytes");

/* Load-balancing modes, per service. */
enum sl_lb_mode {
	SL_LB_FLOW = 0, /* flow-sticky: symmetric hash -> bucket -> instance */
	SL_LB_RR,       /* round robin, per producer */
	SL_LB_QUEUE,    /* shortest queue: fewest packets in the rx ring */
	SL_LB_MAX
};

enum sl_nf_state {
	SL_NF_FREE = 0,
	SL_NF_RUNNING,  /* registered; receives traffic */
	SL_NF_STOPPING, /* asked to stop or deregistering: no new traffic */
	SL_NF_DEAD,     /* died; sluiced reclaims its packets */
};

#define SL_CACHE_NONE UINT16_MAX

enum sl_nf_mode {
	SL_MODE_SHARED = 0, /* yield when idle, then sleep on a futex */
	SL_MODE_POLL,       /* busy poll on a dedicated core */
};

/*
 * Counters of one data-path context (an NF instance, or an I/O thread of
 * sluiced). Single writer: that context.
 */
struct sl_ctx_stats {
	uint64_t rx_pkts; /* packets received (from rx ring or port) */
	uint64_t rx_bytes;
	uint64_t tx_pkts; /* packets handed on to a next hop */
	uint64_t tx_bytes;
	uint64_t drop[SL_DROP_MAX];
	uint64_t cycles;  /* TSC cycles spent in ops->process */
	uint64_t bursts;  /* non-empty receive bursts */
	uint64_t wakeups; /* futex wake-ups sent to sleepers */
	uint64_t sleeps;  /* times this context went to sleep */
	uint64_t stalls;  /* loops that waited on a full next hop */
	/* sluiced's row of an NF (slot->mgr) only: packets of the NF's tx
	 * ring, counted in the NF's own tx, that sluiced then dropped (for
	 * another reason than the NF's DROP): stats shows the NF's tx less
	 * these, so that its rx = tx + drops. */
	uint64_t undone_pkts;
	uint64_t undone_bytes;
} __rte_cache_aligned;
/* One writer per context: no two contexts' counters share a line (arrays
 * of them in struct sl_shm and struct sl_nf_slot included). */
_Static_assert(alignof(struct sl_ctx_stats) == RTE_CACHE_LINE_SIZE,
	       "context counters must be cache-line aligned");
_Static_assert(sizeof(struct sl_ctx_stats) % RTE_CACHE_LINE_SIZE == 0,
	       "context counters must fill whole cache lines");
SL_PIN_SIZE(struct sl_ctx_stats, 192);
SL_PIN_OFF(struct sl_ctx_stats, rx_bytes, 8);
SL_PIN_OFF(struct sl_ctx_stats, tx_pkts, 16);
SL_PIN_OFF(struct sl_ctx_stats, tx_bytes, 24);
SL_PIN_OFF(struct sl_ctx_stats, drop, 32);
SL_PIN_OFF(struct sl_ctx_stats, cycles, 128);
SL_PIN_OFF(struct sl_ctx_stats, bursts, 136);
SL_PIN_OFF(struct sl_ctx_stats, wakeups, 144);
SL_PIN_OFF(struct sl_ctx_stats, sleeps, 152);
SL_PIN_OFF(struct sl_ctx_stats, stalls, 160);
SL_PIN_OFF(struct sl_ctx_stats, undone_pkts, 168);
SL_PIN_OFF(struct sl_ctx_stats, undone_bytes, 176);

/*
 * Per-port counters written by one I/O thread: rx = from the wire,
 * tx = to the wire, drop = packets that entered here and were dropped
 * before the first NF, plus TX-side drops of this port.
 */
#define sl_port_stats sl_ctx_stats

/*
 * Per-edge counters: packets handed from one context (a port's ingress, an
 * NF instance) to a service, a port or the graph's drop sink. A row per
 * context, single writer (the thread that dispatches for it); a column per
 * destination: service s, port SL_EDGE_PORT(shm, p), SL_EDGE_DROP(shm).
 * Rows: [io thread][port] for ingress, then two per NF instance (what the
 * NF handed on itself, what sluiced handed on from its tx ring).
 */
struct sl_edge_ctr {
	uint64_t pkts;
	uint64_t bytes;
};
SL_PIN_SIZE(struct sl_edge_ctr, 16);

#define SL_EDGE_PORT(shm, p) ((uint32_t)(shm)->max_services + (p))
#define SL_EDGE_DROP(shm) ((uint32_t)(shm)->max_services + SL_MAX_PORTS)
#define SL_EDGE_COLS(shm) ((uint32_t)(shm)->max_services + SL_MAX_PORTS + 1)
#define SL_EDGE_ROWS(shm)                                                      \
	(SL_MAX_IO_THREADS * SL_MAX_PORTS + 2u * (shm)->max_nfs)

/*
 * An NF's call into a port's driver (rte_eth_tx_burst on its own TX
 * queue), as it stands: phase 0 none; 1 the burst is handed to the driver
 * (or about to be), its fate unknown; 2 the call returned k: the
 * n - k not sent are retagged as the NF's again, and the k sent are, or
 * are about to be, added to port_tx[port] (from pkts/bytes_before to
 * + k / + sent_bytes). sluiced settles a dead NF's call in reclaim().
 */
struct sl_tx_call {
	uint32_t phase; /* written last (release), see above */
	uint16_t port;
	uint16_t n;
	uint16_t k;
	uint16_t pad[3];
	uint64_t pkts_before;
	uint64_t bytes_before;
	uint64_t sent_bytes;
};
SL_PIN_SIZE(struct sl_tx_call, 40);

/* One NF instance. Index = instance id. */
struct sl_nf_slot {
	/* Written by sluiced's control thread. */
	uint32_t state; /* enum sl_nf_state, atomic */
	uint16_t instance;
	uint16_t service;
	int32_t pid;
	uint32_t mode;   /* enum sl_nf_mode */
	uint32_t access; /* SL_ACCESS_* */
	uint32_t stop;   /* set to ask the NF to stop, atomic */
	char prog[SL_NAME_LEN];
	struct rte_ring *rx;  /* MP/SC: producers are sluiced and other NFs */
	struct rte_ring *tx;  /* SP/SC: NF -> sluiced I/O thread */
	uint64_t started_tsc; /* registered */
	uint64_t proc_start_tsc; /* the NF's main() began (its own TSC read) */
	/* NF -> sluiced requests and sluiced -> NF messages (MP/SC each). */
	struct rte_ring *inbox; /* struct sl_msg * for this NF */
	/* This instance's own TX queue on every port that has more than txq
	 * queues (queue 0 is sluiced's); 0: none, send through the tx ring. */
	uint16_t txq;
	/* The lcore id whose mempool cache (in the pool's shared memory) this
	 * NF frees and allocates packets through; SL_CACHE_NONE: no cache.
	 * sluiced gives each NF its own and returns the cache's packets to the
	 * pool after the NF is gone (see pool_op). */
	uint16_t cache_lcore;

	/*
	 * Wake-up word. The NF stores sleeping = 1, fences, re-checks its rx
	 * ring, then futex-waits on wake. A producer enqueues, fences, loads
	 * sleeping, and if set bumps wake and calls futex wake. The two
	 * SEQ_CST fences pair so that a sleeper never misses an enqueue.
	 */
	alignas(SL_CACHE_LINE) uint32_t sleeping; /* written by the NF */
	uint32_t wake;                            /* futex word */
	uint64_t heartbeat; /* NF loop iterations, written by the NF */
	/* 1 while the NF is inside a mempool put (a TX burst, whose driver
	 * frees what it sent, or libsluice's drops): if it dies then, its
	 * cache may be half-updated, and sluiced leaks it rather than return
	 * possibly stale pointers to the pool (counted). Written by the NF. */
	uint32_t pool_op;
	uint64_t first_pkt_tsc; /* TSC of the first packet received (NF) */

	/* Counters written by the NF. */
	struct sl_ctx_stats nf;
	/* Packets this NF transmitted itself, per port (NF-written). */
	struct {
		uint64_t pkts;
		uint64_t bytes;
	} port_tx[SL_MAX_PORTS] __rte_cache_aligned;
	/* Counters written by sluiced on the NF's behalf: packets sluiced
	 * dispatched from this NF's tx ring, and packets reclaimed (lost)
	 * after it died. */
	struct sl_ctx_stats mgr;
	/* The burst the NF is taking from its rx ring (NF-written): the ring
	 * copies it here before it moves its tail, and the NF clears it once
	 * the burst is retagged as its own. Non-NULL entries after its death
	 * are packets it had taken and not yet tagged (sluiced's reclaim). */
	struct rte_mbuf *hand[SL_BURST_MAX] __rte_cache_aligned;
	/* The NF's transmit call on its own TX queue of a port (txq),
	 * NF-written: what sluiced needs to count it if the NF dies inside.
	 * The driver frees what it sends, so the burst is tagged nobody's
	 * for the call, and no scan for the NF's tag finds it. */
	struct sl_tx_call tx_call __rte_cache_aligned;
	/* The burst of that call, copied before it (tx_call.n entries). */
	struct rte_mbuf *tx_hand[SL_BURST_MAX] __rte_cache_aligned;
};

_Static_assert(offsetof(struct sl_nf_slot, sleeping) % SL_CACHE_LINE == 0,
	       "the wake-up word must start its own cache line");
_Static_assert(offsetof(struct sl_nf_slot, nf) % SL_CACHE_LINE == 0,
	       "NF-written counters must not share a line with sluiced's");
_Static_assert(offsetof(struct sl_nf_slot, mgr) % SL_CACHE_LINE == 0,
	       "sluiced-written counters must not share a line with the NF's");
SL_PIN_SIZE(struct sl_nf_slot, 2176);
SL_PIN_OFF(struct sl_nf_slot, state, 0);
SL_PIN_OFF(struct sl_nf_slot, instance, 4);
SL_PIN_OFF(struct sl_nf_slot, service, 6);
SL_PIN_OFF(struct sl_nf_slot, pid, 8);
SL_PIN_OFF(struct sl_nf_slot, mode, 12);
SL_PIN_OFF(struct sl_nf_slot, access, 16);
SL_PIN_OFF(struct sl_nf_slot, stop, 20);
SL_PIN_OFF(struct sl_nf_slot, prog, 24);
SL_PIN_OFF(struct sl_nf_slot, rx, 56);
SL_PIN_OFF(struct sl_nf_slot, tx, 64);
SL_PIN_OFF(struct sl_nf_slot, started_tsc, 72);
SL_PIN_OFF(struct sl_nf_slot, proc_start_tsc, 80);
SL_PIN_OFF(struct sl_nf_slot, inbox, 88);
SL_PIN_OFF(struct sl_nf_slot, txq, 96);
SL_PIN_OFF(struct sl_nf_slot, cache_lcore, 98);
SL_PIN_OFF(struct sl_nf_slot, sleeping, 128);
SL_PIN_OFF(struct sl_nf_slot, wake, 132);
SL_PIN_OFF(struct sl_nf_slot, heartbeat, 136);
SL_PIN_OFF(struct sl_nf_slot, pool_op, 144);
SL_PIN_OFF(struct sl_nf_slot, first_pkt_tsc, 152);
SL_PIN_OFF(struct sl_nf_slot, nf, 192);
SL_PIN_OFF(struct sl_nf_slot, port_tx, 384);
SL_PIN_OFF(struct sl_nf_slot, mgr, 896);
SL_PIN_OFF(struct sl_nf_slot, hand, 1088);
SL_PIN_OFF(struct sl_nf_slot, tx_call, 1600);
SL_PIN_OFF(struct sl_nf_slot, tx_hand, 1664);

/* A sluice port: an ethdev with a user-given name. Index = ethdev id. */
struct sl_port {
	char name[SL_NAME_LEN];
	char device[256]; /* as given, for port.list */
	uint8_t used;
	uint8_t started;
	uint16_t n_txq; /* queue 0: sluiced's TX thread; 1..: NFs' (txq) */
};
SL_PIN_SIZE(struct sl_port, 292);
SL_PIN_OFF(struct sl_port, device, 32);
SL_PIN_OFF(struct sl_port, used, 288);
SL_PIN_OFF(struct sl_port, started, 289);
SL_PIN_OFF(struct sl_port, n_txq, 290);

/* A service. Index = service id. */
struct sl_service {
	char name[SL_NAME_LEN];
	uint8_t used;    /* written by control thread */
	uint8_t lb_mode; /* enum sl_lb_mode, atomic */
	uint16_t n_live; /* entries valid in live[], atomic release */
	uint16_t *live;  /* instance ids of RUNNING instances [max_nfs] */
	/* flow-sticky: hash & (SL_LB_BUCKETS-1) -> instance id; each entry
	 * updated atomically by the control thread */
	uint16_t bucket[SL_LB_BUCKETS];
};
SL_PIN_SIZE(struct sl_service, 560);
SL_PIN_OFF(struct sl_service, used, 32);
SL_PIN_OFF(struct sl_service, lb_mode, 33);
SL_PIN_OFF(struct sl_service, n_live, 34);
SL_PIN_OFF(struct sl_service, live, 40);
SL_PIN_OFF(struct sl_service, bucket, 48);

/*
 * A compiled service graph (one version of it). Nodes are services; each
 * node lists its allowed next hops (services of the graph, ports, drop),
 * the first being its default. Immutable once published: sluiced builds a
 * new version, stores it in a free slot of shm->gtab and points the
 * logical graph at it (shm->graph_cur[id]); packets carry the slot they
 * entered with, so each packet sees one version from ingress to egress.
 * The default chain is the logical graph 0, "default", compiled "open":
 * it sets defaults only, and TO/OUT may name any service or port.
 */
struct sl_graph {
	uint32_t version; /* global apply counter */
	uint16_t id;      /* logical graph id */
	uint16_t slot;    /* index in shm->gtab */
	uint8_t tag;      /* version & 0xff: meta->graph >> 8 */
	uint8_t open;     /* 1: a chain; edges are not enforced */
	uint16_t n_nodes;
	uint16_t n_hops; /* chains: hops as given */
	uint16_t pad;
	uint32_t n_edges;
	sl_hop_t first; /* ingress hop */
	char name[SL_NAME_LEN];
	sl_hop_t *next;     /* [max_services]: default next hop per service,
			    * SL_HOP_NONE if the service is not a node */
	uint32_t *edge_off; /* [max_services]: first edge of the node */
	uint16_t *edge_n;   /* [max_services]: allowed next hops (0: no node) */
	sl_hop_t *edges;    /* [n_edges] */
	uint16_t *nodes;    /* [n_nodes]: service ids, in the order given */
	sl_hop_t *hops;     /* [n_hops]: a chain as given, for chain.get */
};
SL_PIN_SIZE(struct sl_graph, 104);
SL_PIN_OFF(struct sl_graph, version, 0);
SL_PIN_OFF(struct sl_graph, id, 4);
SL_PIN_OFF(struct sl_graph, slot, 6);
SL_PIN_OFF(struct sl_graph, tag, 8);
SL_PIN_OFF(struct sl_graph, open, 9);
SL_PIN_OFF(struct sl_graph, n_nodes, 10);
SL_PIN_OFF(struct sl_graph, n_hops, 12);
SL_PIN_OFF(struct sl_graph, n_edges, 16);
SL_PIN_OFF(struct sl_graph, first, 20);
SL_PIN_OFF(struct sl_graph, name, 24);
SL_PIN_OFF(struct sl_graph, next, 56);
SL_PIN_OFF(struct sl_graph, edge_off, 64);
SL_PIN_OFF(struct sl_graph, edge_n, 72);
SL_PIN_OFF(struct sl_graph, edges, 80);
SL_PIN_OFF(struct sl_graph, nodes, 88);
SL_PIN_OFF(struct sl_graph, hops, 96);

/* Per-flow override kinds (cross-layer requests). */
enum sl_ovr_kind {
	SL_OVR_FREE = 0,
	SL_OVR_SKIP,    /* packets of the flow bypass the service */
	SL_OVR_DEFAULT, /* the service's default edge is `hop` for the flow */
};

/* One override: written whole (64-bit) by sluiced's control thread. */
union sl_flow_ovr {
	uint64_t u64;
	struct {
		uint16_t service;
		uint16_t kind; /* enum sl_ovr_kind */
		sl_hop_t hop;
	} f;
};
SL_PIN_SIZE(union sl_flow_ovr, 8);

/*
 * A flow-table entry (flow director). Index = rte_hash key position.
 * Followed in memory by pin[shm->flow.n_pins] (uint32_t: service << 16 |
 * instance, UINT32_MAX free; set once by compare-and-swap by whoever first
 * sends the flow to a replicated service) and ovr[shm->flow.n_ovr].
 */
struct sl_flow_entry {
	uint16_t gen;       /* bumped when created (RX thread) */
	uint16_t graph;     /* logical graph id (RX thread) */
	uint8_t state;      /* enum sl_flow_state, atomic */
	uint8_t n_ovr;      /* override slots in use (control thread) */
	uint16_t graph_inc; /* the graph id's incarnation when classified:
			     * a removed graph's id may be given to another
			     * graph, whose flows these are not (RX thread) */
	uint32_t last_ms;   /* last packet, ms clock of the RX thread */
	uint32_t pad2;
	uint64_t pkts; /* ingress packets (RX thread) */
	uint64_t bytes;
};
/* 32 bytes, so that with the default 4 pins and 2 overrides an entry is
 * exactly one cache line (entries are 64-byte aligned): every hop reads
 * gen, n_ovr and the pins, ingress writes the counters. What only sluiced
 * needs (the key, the hash signature, the rule) lives in its own memory. */
_Static_assert(sizeof(struct sl_flow_entry) == 32, "flow entry header");

enum sl_flow_state {
	SL_FLOW_FREE = 0,
	SL_FLOW_LIVE,
	SL_FLOW_DELETE, /* asked to be deleted (control); RX deletes it */
};

enum sl_flow_lookup {
	SL_LOOKUP_OFF = 0, /* no flow table: every packet takes graph 0 */
	SL_LOOKUP_CACHED,  /* once at ingress, cached in the metadata */
	SL_LOOKUP_NAIVE,   /* again at every hop (ablation benchmark) */
};

/* The flow-table key: canonical 5-tuple (lower address/port first), so
 * both directions of a connection share one entry. 48 bytes, a key size
 * rte_hash compares without a function pointer (valid in every process). */
struct sl_flow_key {
	uint8_t family;
	uint8_t proto;
	uint16_t port_lo;
	uint16_t port_hi;
	uint16_t pad0;
	uint8_t addr_lo[16];
	uint8_t addr_hi[16];
	uint64_t pad1;
};
_Static_assert(sizeof(struct sl_flow_key) == 48, "flow key size");

/*
 * What the IPv4 flow table stores of an IPv4 key: its 16 meaningful bytes
 * (the first 8 of struct sl_flow_key, then the first 4 of each address).
 * rte_hash keeps a key and a pointer per slot: 24 bytes instead of 56, so
 * a lookup reads one line of keys where a 48-byte key mostly spans two
 * (see docs/performance.md, flow director, session 4). IPv6 flows keep the
 * 48-byte key in a table of their own.
 */
struct sl_flow_key4 {
	uint64_t head;
	uint32_t addr_lo;
	uint32_t addr_hi;
};
_Static_assert(sizeof(struct sl_flow_key4) == 16, "IPv4 flow key size");

/* Flow-table counters, written by the ingress (RX) thread. */
struct sl_flow_stats {
	uint64_t lookups;
	uint64_t hits;
	uint64_t created;
	uint64_t aged;
	uint64_t deleted;
	uint64_t table_full; /* new flows that found no room: no entry */
	uint64_t non_ip;     /* packets with no 5-tuple: no entry */
	uint64_t stale;      /* packets whose cached entry was recycled */
	uint64_t cycles;     /* TSC cycles the RX thread spent in ingress
			      * lookups (parse, key, hash, lookup, entry) */
} __rte_cache_aligned;
SL_PIN_SIZE(struct sl_flow_stats, 128);

struct sl_flow_table {
	struct rte_hash *hash;  /* IPv4 keys (sl_flow_key4); NULL: off */
	struct rte_hash *hash6; /* IPv6 keys (sl_flow_key) */
	uint8_t *entries;       /* [capacity] entries of `stride` bytes */
	/* Entry index of a position: the IPv4 table's position p is entry
	 * p, the IPv6 table's is base6 + p. */
	uint32_t base6;
	uint32_t capacity;   /* entries: both tables' max key id + 1 */
	uint32_t max_flows;  /* --flow-capacity: live flows in all */
	uint32_t max_flows6; /* --flow-capacity-v6: of which IPv6 */
	uint32_t n_live6;    /* live IPv6 entries (RX thread) */
	uint32_t stride;
	uint32_t ovr_off; /* offset of ovr[] in an entry, 8-aligned */
	uint16_t n_pins;
	uint16_t n_ovr;
	uint32_t lookup; /* enum sl_flow_lookup */
	uint32_t timeout_ms;
	uint32_t n_live; /* live entries (RX thread) */
	struct sl_flow_stats st;
};
SL_PIN_SIZE(struct sl_flow_table, 256);
SL_PIN_OFF(struct sl_flow_table, hash, 0);
SL_PIN_OFF(struct sl_flow_table, hash6, 8);
SL_PIN_OFF(struct sl_flow_table, entries, 16);
SL_PIN_OFF(struct sl_flow_table, base6, 24);
SL_PIN_OFF(struct sl_flow_table, capacity, 28);
SL_PIN_OFF(struct sl_flow_table, max_flows, 32);
SL_PIN_OFF(struct sl_flow_table, max_flows6, 36);
SL_PIN_OFF(struct sl_flow_table, n_live6, 40);
SL_PIN_OFF(struct sl_flow_table, stride, 44);
SL_PIN_OFF(struct sl_flow_table, ovr_off, 48);
SL_PIN_OFF(struct sl_flow_table, n_pins, 52);
SL_PIN_OFF(struct sl_flow_table, n_ovr, 54);
SL_PIN_OFF(struct sl_flow_table, lookup, 56);
SL_PIN_OFF(struct sl_flow_table, timeout_ms, 60);
SL_PIN_OFF(struct sl_flow_table, n_live, 64);
SL_PIN_OFF(struct sl_flow_table, st, 128);

/* NF <-> sluiced messages (registration, deregistration). */
enum sl_msg_type {
	SL_MSG_FREE = 0, /* in the pool: stored just before every put */
	SL_MSG_REGISTER = 1,
	SL_MSG_DEREGISTER,
	SL_MSG_REQUEST, /* a cross-layer request (struct sl_msg.req) */
	SL_MSG_MESSAGE, /* Message(S, key, value) delivered to an NF inbox */
	SL_MSG_REPLY,   /* the outcome of a request, back in the NF inbox */
};

/* Cross-layer request kinds. */
enum sl_req_kind {
	SL_REQ_SKIP_ME = 1,
	SL_REQ_REQUEST_ME,
	SL_REQ_CHANGE_DEFAULT,
	SL_REQ_MESSAGE,
};

/* A request kind's name as the control socket spells it ("?" if none). */
static inline const char *
sl_req_name(uint32_t kind)
{
	static const char *const names[] = {"?", "skip_me", "request_me",
					    "change_default", "message"};

	return kind < RTE_DIM(names) ? names[kind] : "?";
}

struct sl_msg {
	uint32_t type;
	int32_t pid;
	uint32_t mode;
	uint32_t access;
	uint16_t instance; /* in: wanted id or SL_INSTANCE_NONE; out: given */
	uint16_t service;  /* out */
	char service_name[SL_NAME_LEN];
	char prog[SL_NAME_LEN];
	uint64_t start_tsc; /* REGISTER: when the NF's main() began */
	/* Reply, written by sluiced, then done is stored with release. */
	int32_t result; /* 0 or a positive errno */
	char error[160];
	uint32_t done;
	/* SL_MSG_REQUEST / _MESSAGE / _REPLY. */
	struct {
		int64_t id;    /* chosen by the NF, echoed in the reply */
		uint32_t kind; /* enum sl_req_kind */
		uint8_t exact; /* 1: key is one flow; 0: wildcard text */
		uint8_t pad[3];
		uint16_t service; /* S */
		uint16_t pad2;
		sl_verdict_t to; /* ChangeDefault's T */
		struct sl_flow_key key;
		char match[160]; /* wildcard, "proto=tcp dst=10.0.0.0/8" */
		char mkey[64];   /* Message key */
		char value[256]; /* Message value */
	} req;
};
SL_PIN_SIZE(struct sl_msg, 816);
SL_PIN_OFF(struct sl_msg, type, 0);
SL_PIN_OFF(struct sl_msg, pid, 4);
SL_PIN_OFF(struct sl_msg, mode, 8);
SL_PIN_OFF(struct sl_msg, access, 12);
SL_PIN_OFF(struct sl_msg, instance, 16);
SL_PIN_OFF(struct sl_msg, service, 18);
SL_PIN_OFF(struct sl_msg, service_name, 20);
SL_PIN_OFF(struct sl_msg, prog, 52);
SL_PIN_OFF(struct sl_msg, start_tsc, 88);
SL_PIN_OFF(struct sl_msg, result, 96);
SL_PIN_OFF(struct sl_msg, error, 100);
SL_PIN_OFF(struct sl_msg, done, 260);
SL_PIN_OFF(struct sl_msg, req.id, 264);
SL_PIN_OFF(struct sl_msg, req.kind, 272);
SL_PIN_OFF(struct sl_msg, req.exact, 276);
SL_PIN_OFF(struct sl_msg, req.service, 280);
SL_PIN_OFF(struct sl_msg, req.to, 284);
SL_PIN_OFF(struct sl_msg, req.key, 288);
SL_PIN_OFF(struct sl_msg, req.match, 336);
SL_PIN_OFF(struct sl_msg, req.mkey, 496);
SL_PIN_OFF(struct sl_msg, req.value, 560);

/* The root of shared memory: memzone SL_MZ_SHM. */
struct sl_shm {
	uint32_t magic;
	uint32_t version;
	char node[SL_NAME_LEN];
	int32_t mgr_pid;
	uint32_t shutdown; /* set by sluiced on exit, atomic */

	/* Limits (options of sluiced). */
	uint16_t max_nfs;
	uint16_t max_services;
	uint32_t ring_size;
	uint32_t burst;
	uint32_t handoff; /* 0 = direct NF->NF enqueue, 1 = via I/O thread */
	uint64_t
		backpressure_cycles; /* how long a full next hop is waited for */
	uint64_t idle_sleep_cycles;  /* idle time before a shared NF sleeps */
	uint64_t tsc_hz;
	int dynfield_offset;

	struct rte_mempool *pktmbuf_pool; /* pools[0]: NFs allocate here */
	struct rte_ring *msg_ring;        /* NF -> sluiced, MP/SC */
	struct rte_mempool *msg_pool;     /* struct sl_msg */

	/* Service graphs: the version table and, per logical graph, the slot
	 * of its current version (SL_GRAPH_NONE: no such graph). Graph 0 is
	 * the default chain. Written by the control thread (atomic). */
	struct sl_graph *gtab[SL_GRAPH_SLOTS];
	uint16_t *graph_cur; /* [max_graphs] */
	uint16_t max_graphs;
	uint16_t max_hops; /* NF visits a port's packet may make */
	struct sl_flow_table flow;
	uint64_t ms_hz;         /* TSC cycles per ms */
	uint64_t ctl_heartbeat; /* control thread loops (it writes entries) */
	uint32_t ctl_idle;      /* 1 while the control thread waits */
	uint32_t rx_enabled; /* ports are read once a complete chain is set */
	uint16_t nf_hwm;     /* 1 + highest instance id ever used */
	uint16_t n_ports;

	struct sl_edge_ctr *edges;   /* [SL_EDGE_ROWS][SL_EDGE_COLS] */
	struct sl_nf_slot *nfs;      /* [max_nfs] */
	struct sl_service *services; /* [max_services] */
	struct sl_port ports[SL_MAX_PORTS];

	/* I/O threads of sluiced. */
	uint32_t n_io;
	uint32_t io_sleeping[SL_MAX_IO_THREADS];  /* written by the thread */
	uint32_t io_wake[SL_MAX_IO_THREADS];      /* futex words */
	uint64_t io_heartbeat[SL_MAX_IO_THREADS]; /* loop count, by thread */
	struct sl_ctx_stats io[SL_MAX_IO_THREADS];
	struct sl_port_stats port_stats[SL_MAX_IO_THREADS][SL_MAX_PORTS];

	/* Packet pools, one per NUMA socket in use (written by sluiced before
	 * any NF attaches): pools[0] is pktmbuf_pool, on the socket of
	 * sluiced's main lcore; a port on another socket receives into a
	 * pool of its own socket. A packet goes back to the pool it came
	 * from (m->pool), so an NF may hold buffers of every pool. */
	uint32_t n_pools;
	struct rte_mempool *pools[RTE_MAX_NUMA_NODES];
};
/* magic and version stay where they are in every version: an NF built
 * against another version reads them there to refuse to attach. */
_Static_assert(offsetof(struct sl_shm, magic) == 0 &&
		       offsetof(struct sl_shm, version) == 4,
	       "magic and version must stay the first two words of sl_shm");
_Static_assert(offsetof(struct sl_shm, io) % RTE_CACHE_LINE_SIZE == 0 &&
		       offsetof(struct sl_shm, port_stats) %
				       RTE_CACHE_LINE_SIZE ==
			       0,
	       "I/O thread counters must start a cache line");
SL_PIN_SIZE(struct sl_shm, 37632);
SL_PIN_OFF(struct sl_shm, node, 8);
SL_PIN_OFF(struct sl_shm, mgr_pid, 40);
SL_PIN_OFF(struct sl_shm, shutdown, 44);
SL_PIN_OFF(struct sl_shm, max_nfs, 48);
SL_PIN_OFF(struct sl_shm, max_services, 50);
SL_PIN_OFF(struct sl_shm, ring_size, 52);
SL_PIN_OFF(struct sl_shm, burst, 56);
SL_PIN_OFF(struct sl_shm, handoff, 60);
SL_PIN_OFF(struct sl_shm, backpressure_cycles, 64);
SL_PIN_OFF(struct sl_shm, idle_sleep_cycles, 72);
SL_PIN_OFF(struct sl_shm, tsc_hz, 80);
SL_PIN_OFF(struct sl_shm, dynfield_offset, 88);
SL_PIN_OFF(struct sl_shm, pktmbuf_pool, 96);
SL_PIN_OFF(struct sl_shm, msg_ring, 104);
SL_PIN_OFF(struct sl_shm, msg_pool, 112);
SL_PIN_OFF(struct sl_shm, gtab, 120);
SL_PIN_OFF(struct sl_shm, graph_cur, 2168);
SL_PIN_OFF(struct sl_shm, max_graphs, 2176);
SL_PIN_OFF(struct sl_shm, flow, 2240);
SL_PIN_OFF(struct sl_shm, ms_hz, 2496);
SL_PIN_OFF(struct sl_shm, ctl_heartbeat, 2504);
SL_PIN_OFF(struct sl_shm, ctl_idle, 2512);
SL_PIN_OFF(struct sl_shm, rx_enabled, 2516);
SL_PIN_OFF(struct sl_shm, nf_hwm, 2520);
SL_PIN_OFF(struct sl_shm, n_ports, 2522);
SL_PIN_OFF(struct sl_shm, edges, 2528);
SL_PIN_OFF(struct sl_shm, nfs, 2536);
SL_PIN_OFF(struct sl_shm, services, 2544);
SL_PIN_OFF(struct sl_shm, ports, 2552);
SL_PIN_OFF(struct sl_shm, n_io, 11896);
SL_PIN_OFF(struct sl_shm, io_sleeping, 11900);
SL_PIN_OFF(struct sl_shm, io_wake, 11916);
SL_PIN_OFF(struct sl_shm, io_heartbeat, 11936);
SL_PIN_OFF(struct sl_shm, io, 11968);
SL_PIN_OFF(struct sl_shm, port_stats, 12736);
SL_PIN_OFF(struct sl_shm, n_pools, 37312);
SL_PIN_OFF(struct sl_shm, pools, 37320);

/* sl_pkt_meta.flags */
#define SL_META_HASH 0x1u  /* flow_hash is valid */
#define SL_META_GRAPH 0x2u /* graph is set */
#define SL_META_PORT 0x4u  /* verdict is a port resolved by a dispatch */
/* Bits 4-15: NF visits so far (hand-offs to an instance), for the hop
 * limit; they wrap harmlessly for NF-made packets, which have none. */
#define SL_META_HOPS_SHIFT 4
#define SL_META_HOP (1u << SL_META_HOPS_SHIFT)
#define SL_MAX_HOPS 4095u

/* The edge counter row of a port's ingress on I/O thread io. */
static inline struct sl_edge_ctr *
sl_edge_row_port(const struct sl_shm *shm, uint32_t io, uint16_t port)
{
	return shm->edges +
	       (size_t)(io * SL_MAX_PORTS + port) * SL_EDGE_COLS(shm);
}

/* The edge counter row of NF instance inst: side 0 is written by the NF,
 * side 1 by sluiced (packets it dispatched from the NF's tx ring). */
static inline struct sl_edge_ctr *
sl_edge_row_nf(const struct sl_shm *shm, uint16_t inst, int side)
{
	return shm->edges +
	       (size_t)(SL_MAX_IO_THREADS * SL_MAX_PORTS + 2u * inst + side) *
		       SL_EDGE_COLS(shm);
}

static inline struct sl_pkt_meta *
sl_meta(const struct rte_mbuf *m, int offset)
{
	return (struct sl_pkt_meta *)((uintptr_t)m + (uintptr_t)offset);
}

/* The graph version a packet travels with, or NULL if it was freed (the
 * packet then is dropped as graph_gone). */
static inline const struct sl_graph *
sl_graph_of(const struct sl_shm *shm, uint16_t g)
{
	const struct sl_graph *gr =
		__atomic_load_n(&shm->gtab[g & 0xff], __ATOMIC_ACQUIRE);

	return gr != NULL && gr->tag == (g >> 8) ? gr : NULL;
}

/* The current version of logical graph id, as a meta->graph value, or
 * SL_GRAPH_NONE. */
static inline uint16_t
sl_graph_current(const struct sl_shm *shm, uint16_t id)
{
	uint16_t slot = __atomic_load_n(&shm->graph_cur[id], __ATOMIC_ACQUIRE);
	const struct sl_graph *gr;

	if (slot == SL_GRAPH_NONE)
		return SL_GRAPH_NONE;
	gr = __atomic_load_n(&shm->gtab[slot], __ATOMIC_ACQUIRE);
	return gr == NULL ? SL_GRAPH_NONE : (uint16_t)(slot | gr->tag << 8);
}

static inline struct sl_flow_entry *
sl_flow_entry(const struct sl_shm *shm, uint32_t pos)
{
	return (struct sl_flow_entry *)(shm->flow.entries +
					(size_t)pos * shm->flow.stride);
}

static inline uint32_t *
sl_flow_pins(const struct sl_shm *shm, struct sl_flow_entry *e)
{
	(void)shm;
	return (uint32_t *)(e + 1);
}

static inline union sl_flow_ovr *
sl_flow_ovrs(const struct sl_shm *shm, struct sl_flow_entry *e)
{
	return (union sl_flow_ovr *)((uint8_t *)e + shm->flow.ovr_off);
}

#endif /* SL_SHARED_H */
