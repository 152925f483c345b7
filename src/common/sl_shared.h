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
#define SL_SHM_VERSION 1u

#define SL_NAME_LEN 32
#define SL_BURST 32
#define SL_LB_BUCKETS 256 /* flow-sticky bucket table, power of two */
#define SL_MAX_PORTS 32
#define SL_MAX_IO_THREADS 4
#define SL_INSTANCE_NONE 0xffffu
#define SL_SERVICE_NONE 0xffffu
#define SL_PORT_NONE 0xffffu
#define SL_CACHE_LINE 64

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
	SL_DROP_MAX
};

#define SL_DROP_NAMES                                                          \
	{                                                                      \
		"nf_verdict", "ring_full", "no_instance", "invalid_dest",      \
		"end_of_chain", "nf_lost", "tx_full", "port_down",             \
			"graph_drop"                                           \
	}

/* Per-packet metadata: an mbuf dynamic field registered by sluiced. */
struct sl_pkt_meta {
	sl_verdict_t verdict; /* set by the NF holding the packet */
	uint32_t flow_hash;   /* symmetric flow hash, valid with
			       * SL_META_HASH (see sl_meta_flow_hash()) */
	uint16_t service;     /* graph node: service that holds / held it */
	uint16_t owner;       /* instance id + 1 whose rx ring or hands hold
			       * it; 0 when sluiced holds it. Lets sluiced
			       * reclaim exactly a dead NF's packets. */
	uint16_t in_port;     /* ingress ethdev, UINT16_MAX if NF-made */
	uint16_t flags;
};
_Static_assert(sizeof(struct sl_pkt_meta) == 16, "meta must stay 16 bytes");

/* Load-balancing modes, per service. */
enum sl_lb_mode {
	SL_LB_FLOW = 0, /* flow-sticky: symmetric hash -> bucket -> instance */
	SL_LB_RR,       /* round robin, per producer */
	SL_LB_MAX
};

enum sl_nf_state {
	SL_NF_FREE = 0,
	SL_NF_RUNNING, /* registered; receives traffic */
	SL_NF_STOPPING, /* asked to stop or deregistering: no new traffic */
	SL_NF_DEAD,    /* died; sluiced reclaims its packets */
};

enum sl_nf_mode {
	SL_MODE_SHARED = 0, /* yield when idle, then sleep on a futex */
	SL_MODE_POLL,       /* busy poll on a dedicated core */
};

/*
 * Counters of one data-path context (an NF instance, or an I/O thread of
 * sluiced). Single writer: that context.
 */
struct sl_ctx_stats {
	uint64_t rx_pkts;   /* packets received (from rx ring or port) */
	uint64_t rx_bytes;
	uint64_t tx_pkts;   /* packets handed on to a next hop */
	uint64_t tx_bytes;
	uint64_t drop[SL_DROP_MAX];
	uint64_t cycles;    /* TSC cycles spent in ops->process */
	uint64_t bursts;    /* non-empty receive bursts */
	uint64_t wakeups;   /* futex wake-ups sent to sleepers */
	uint64_t sleeps;    /* times this context went to sleep */
	uint64_t stalls;    /* loops that waited on a full next hop */
} __rte_cache_aligned;

/*
 * Per-port counters written by one I/O thread: rx = from the wire,
 * tx = to the wire, drop = packets that entered here and were dropped
 * before the first NF, plus TX-side drops of this port.
 */
#define sl_port_stats sl_ctx_stats

/* One NF instance. Index = instance id. */
struct sl_nf_slot {
	/* Written by sluiced's control thread. */
	uint32_t state;  /* enum sl_nf_state, atomic */
	uint16_t instance;
	uint16_t service;
	int32_t pid;
	uint32_t mode;   /* enum sl_nf_mode */
	uint32_t access; /* SL_ACCESS_* */
	uint32_t stop;   /* set to ask the NF to stop, atomic */
	char prog[SL_NAME_LEN];
	struct rte_ring *rx; /* MP/SC: producers are sluiced and other NFs */
	struct rte_ring *tx; /* SP/SC: NF -> sluiced I/O thread */
	uint64_t started_tsc;
	/* This instance's own TX queue on every port that has more than txq
	 * queues (queue 0 is sluiced's); 0: none, send through the tx ring. */
	uint16_t txq;

	/*
	 * Wake-up word. The NF stores sleeping = 1, fences, re-checks its rx
	 * ring, then futex-waits on wake. A producer enqueues, fences, loads
	 * sleeping, and if set bumps wake and calls futex wake. The two
	 * SEQ_CST fences pair so that a sleeper never misses an enqueue.
	 */
	alignas(SL_CACHE_LINE) uint32_t sleeping; /* written by the NF */
	uint32_t wake;                           /* futex word */
	uint64_t heartbeat; /* NF loop iterations, written by the NF */

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
};

_Static_assert(offsetof(struct sl_nf_slot, sleeping) % SL_CACHE_LINE == 0,
	       "the wake-up word must start its own cache line");
_Static_assert(offsetof(struct sl_nf_slot, nf) % SL_CACHE_LINE == 0,
	       "NF-written counters must not share a line with sluiced's");
_Static_assert(offsetof(struct sl_nf_slot, mgr) % SL_CACHE_LINE == 0,
	       "sluiced-written counters must not share a line with the NF's");

/* A sluice port: an ethdev with a user-given name. Index = ethdev id. */
struct sl_port {
	char name[SL_NAME_LEN];
	char device[256]; /* as given, for port.list */
	uint8_t used;
	uint8_t started;
	uint16_t n_txq; /* queue 0: sluiced's TX thread; 1..: NFs' (txq) */
};

/* A service. Index = service id. */
struct sl_service {
	char name[SL_NAME_LEN];
	uint8_t used;     /* written by control thread */
	uint8_t lb_mode;  /* enum sl_lb_mode, atomic */
	uint16_t n_live;  /* entries valid in live[], atomic release */
	uint16_t *live;   /* instance ids of RUNNING instances [max_nfs] */
	/* flow-sticky: hash & (SL_LB_BUCKETS-1) -> instance id; each entry
	 * updated atomically by the control thread */
	uint16_t bucket[SL_LB_BUCKETS];
};

/*
 * The default chain, as a per-service default next hop. Immutable once
 * published: sluiced builds a new one and swaps shm->chain atomically, and
 * frees the old one after every reader has passed a quiescent point.
 */
struct sl_chain {
	uint32_t version;
	uint16_t n_hops;
	uint16_t pad;
	sl_hop_t first;  /* ingress hop */
	sl_hop_t *next;  /* [max_services]: default next hop per service */
	sl_hop_t *hops;  /* [n_hops]: the chain as given, for chain.get */
};

/* NF <-> sluiced messages (registration, deregistration). */
enum sl_msg_type {
	SL_MSG_REGISTER = 1,
	SL_MSG_DEREGISTER,
};

struct sl_msg {
	uint32_t type;
	int32_t pid;
	uint32_t mode;
	uint32_t access;
	uint16_t instance; /* in: wanted id or SL_INSTANCE_NONE; out: given */
	uint16_t service;  /* out */
	char service_name[SL_NAME_LEN];
	char prog[SL_NAME_LEN];
	/* Reply, written by sluiced, then done is stored with release. */
	int32_t result; /* 0 or a positive errno */
	char error[160];
	uint32_t done;
};

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
	uint64_t backpressure_cycles; /* how long a full next hop is waited for */
	uint64_t idle_sleep_cycles;   /* idle time before a shared NF sleeps */
	uint64_t tsc_hz;
	int dynfield_offset;

	struct rte_mempool *pktmbuf_pool;
	struct rte_ring *msg_ring;    /* NF -> sluiced, MP/SC */
	struct rte_mempool *msg_pool; /* struct sl_msg */

	struct sl_chain *chain; /* current default chain, atomic pointer */
	uint32_t rx_enabled;    /* ports are read once a complete chain is set */
	uint16_t nf_hwm;        /* 1 + highest instance id ever used */
	uint16_t n_ports;

	struct sl_nf_slot *nfs;       /* [max_nfs] */
	struct sl_service *services;  /* [max_services] */
	struct sl_port ports[SL_MAX_PORTS];

	/* I/O threads of sluiced. */
	uint32_t n_io;
	uint32_t io_sleeping[SL_MAX_IO_THREADS]; /* written by the thread */
	uint32_t io_wake[SL_MAX_IO_THREADS];     /* futex words */
	uint64_t io_heartbeat[SL_MAX_IO_THREADS]; /* loop count, by thread */
	struct sl_ctx_stats io[SL_MAX_IO_THREADS];
	struct sl_port_stats port_stats[SL_MAX_IO_THREADS][SL_MAX_PORTS];
};

/* sl_pkt_meta.flags */
#define SL_META_HASH 0x1u /* flow_hash is valid */

static inline struct sl_pkt_meta *
sl_meta(const struct rte_mbuf *m, int offset)
{
	return (struct sl_pkt_meta *)((uintptr_t)m + (uintptr_t)offset);
}

#endif /* SL_SHARED_H */
