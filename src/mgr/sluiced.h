/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced internals: the node manager's state, shared by its files.
 *   main.c      the module list, checks, EAL and shared memory; the
 *               phases walk the list (module.h: struct mgr_module)
 *   options.c   the option table: parsing, --help, --defaults-json
 *   ports/      ports: probe, configure, start, close; port classes
 *               for drivers with needs of their own (ports/ports.h)
 *   registry/   services and NF instances: registration, death, reclaim,
 *               load-balancer tables, quiescent-state actions, the hang
 *               watchdog (registry/registry.h)
 *   io.c        the I/O thread(s): RX from ports, NF tx rings, TX to ports
 *   control.c   control thread: socket, events, liveness
 *   bus.c       the event bus: modules emit, the control socket subscribes
 *   rpc.c       JSON-RPC framing, method lookup; each module's methods
 *               are in its *_rpc.c or rpc.c (ctl/node.c: status, rx)
 *   base/       below every module: rpcutil.c (the methods' errors,
 *               params, parking), view.c (hops, graphs, chain: read)
 *   flow/       flow table, ingress, aging, flow.list (flow/flow.h)
 *   rules/      rule sets, their builder thread, rule.list (rules/rules.h)
 *   requests/   cross-layer requests, wildcard requests
 *               (requests/requests.h)
 *   scale.c     nf.scale: replicas started, watched until they register
 *   graph.c     graphs and the default chain (graph_rpc.c: their methods)
 *   telemetry.c DPDK telemetry commands (stats/stats.h's tables)
 *   stats/      counter rows and their descriptor tables: `stats`
 */
#ifndef SLUICED_H
#define SLUICED_H

#include <stdint.h>
#include <sys/un.h>

#include <jansson.h>

#include "grace.h"
#include "sl_dispatch.h"
#include "sl_match.h"
#include "sl_shared.h"

#include "bus.h"
#include "module.h"
#include "ports/ports.h"

#define SL_VERSION "0.1.0"

struct sl_port_opt {
	char name[SL_NAME_LEN];
	char device[256];
};

struct sl_mgr_opts {
	char name[SL_NAME_LEN];
	uint32_t mode; /* enum sl_nf_mode of sluiced's own threads */
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint16_t max_nfs;
	uint16_t max_services;
	uint32_t ring_size;
	uint32_t mbufs;
	uint32_t mbuf_cache;
	uint32_t burst;
	uint32_t rx_burst; /* packets per port read (--rx-burst) */
	uint32_t handoff;
	uint32_t backpressure_us;
	uint32_t idle_sleep_us;
	uint32_t nf_hang_ms; /* 0: no hang watchdog */
	/* nf.scale: a started replica registers within this, else SIGTERM;
	 * SIGKILL scale_kill_ms later */
	uint32_t scale_register_ms;
	uint32_t scale_kill_ms;
	uint32_t tx_retry_us;
	uint32_t nf_mem_mb;
	uint32_t nf_txq;   /* TX queues per port for NFs to transmit directly */
	uint32_t nf_cache; /* give each NF a mempool cache of its own (1) */
	uint16_t rxd;
	uint16_t txd;
	uint32_t flow_lookup; /* enum sl_flow_lookup */
	uint32_t flow_capacity;
	uint32_t flow_capacity6; /* 0: a quarter of flow_capacity */
	uint32_t flow_timeout_ms;
	uint32_t flow_pins;
	uint32_t flow_ovr;
	uint16_t max_graphs;
	uint16_t max_hops;
	uint32_t max_rules;
	uint32_t max_wild;
	uint32_t ctl_conns;   /* control connections at once (64) */
	uint32_t ctl_out_kb;  /* unread replies/events per connection (4096) */
	uint32_t ctl_line_kb; /* longest request line (1024) */
	const char *chain;
	struct sl_port_opt ports[SL_MAX_PORTS];
	uint16_t n_ports;
};

#define SL_SCALE_PENDING_MAX 256

struct sl_mgr {
	struct sl_mgr_opts o;
	struct sl_shm *shm;
	struct mgr_bus bus; /* events and the pidfd watch hook (bus.h) */
	/* The modules in start order (module.h; main.c sets them) */
	const struct mgr_module *const *modules;
	size_t n_modules;
	uint64_t start_tsc;
	/* 0 while running; 1: the shutdown method (or an I/O thread that
	 * cannot run); else the signal. Atomic: written by on_signal and by
	 * other threads, read by the control loop, which then stops. */
	_Atomic int quit;
	/* The registry's own state (registry/registry.h; mgr_registry_init) */
	struct sl_registry_state *registry;
	uint64_t mbufs_leaked;   /* dead NFs' caches not trusted (pool_op) */
	uint64_t mbufs_in_doubt; /* dead inside a driver's transmit call */
	uint64_t nfs_hung;       /* NFs killed as hung */
	struct sl_ports_state ports; /* ports/ */
	/* Graph versions (graph.c; control thread only) */
	struct sl_graphs_state {
		/* Per gtab slot: a retired version is freed once a grace
		 * period and RETIRE_MIN_MS have passed since */
		struct sl_graph_slot {
			uint8_t retired;
			uint64_t since;
			struct sl_grace grace;
		} slot[SL_GRAPH_SLOTS];
		uint32_t version; /* the last version published */
		/* Services created by the apply under way, [max_services];
		 * NULL between applies */
		uint16_t *created;
		uint16_t n_created;
	} graphs;
	/* What main.c's clean-up watchdog does if DPDK's clean-up hangs:
	 * the files of --file-prefix prefix to remove, the exit status */
	struct {
		const char *prefix;
		int rc;
	} cleanup;
	/* Reservations of NFs killed inside an enqueue, rolled back */
	uint64_t rings_unstuck;
	uint64_t msgs_reclaimed;   /* answers dead processes never returned */
	uint64_t msgs_refused;     /* NF messages refused as malformed */
	uint64_t msgs_undelivered; /* Message copies an inbox had no room for */
	uint64_t port_tx_retired[SL_MAX_PORTS][2]; /* NFs gone: pkts, bytes */
	struct sl_ctx_stats *svc_retired;          /* [max_services] */
	/* Edge counters of NFs gone, per source service:
	 * [max_services][SL_EDGE_COLS] */
	struct sl_edge_ctr *edge_retired;
	/* Actions waiting for a grace period (grace.h; control thread) */
	struct sl_grace_queue qs;
	int rx_started; /* ports were enabled once (a complete chain) */
	int epfd;
	/* The control socket's connections (control.c; control thread only) */
	struct sl_ctl_state {
		struct sl_ctl_conn *conns; /* [n_conns] (--control-conns) */
		uint32_t n_conns;
		size_t out_max;         /* bytes (--control-out-kb) */
		size_t line_max;        /* bytes (--control-line-kb) */
		uint64_t closed_unread; /* closed for not reading */
		int epfd;               /* m->epfd, for functions with no m */
		int parked; /* the connection of the parked request, or -1 */
		uint64_t turns;           /* HELD_WAITING turns given */
		uint32_t n_waiting;       /* connections HELD_WAITING */
		struct sl_ctl_conn *turn; /* the waiting one whose turn it is */
	} ctl;
	int listen_fd;
	/* Replicas nf.scale started that have not registered yet: they count
	 * as instances of their service until they do, die or time out, so
	 * that a second nf.scale does not start them again. */
	struct sl_scale_pending {
		int pid;
		int pidfd; /* signals go here, never to a reused pid */
		uint16_t service;
		uint16_t model; /* the instance it is a copy of */
		int given_up;   /* did not register in time: being stopped */
		uint64_t until_tsc; /* then: SIGKILL if still there */
		char log[160];      /* where its output goes (the model's) */
	} scale_pending[SL_SCALE_PENDING_MAX];
	uint16_t n_scale_pending;
	uint64_t scale_next_tsc; /* when scale's poll next looks at them */
	/* The nf.scale request parked while its replicas start, one per
	 * control-loop turn (scale.c; control thread only) */
	struct sl_scale_job {
		int active; /* parked: replicas left to start */
		int done;   /* rc, out or err is its reply */
		int rc;
		uint16_t service;
		uint16_t model; /* the slot of the instance copied */
		uint32_t replicas, running, starting; /* as counted first */
		uint32_t left;   /* replicas still to start */
		json_t *started; /* their pids so far */
		json_t *out;     /* the reply, once done with rc 0 */
		char err[512];   /* why not, rc != 0 */
	} scale_job;
	unsigned int io_lcores[SL_MAX_IO_THREADS];
	/* The I/O threads' (io.c; set by sl_io_init, read-only once they
	 * run) */
	struct sl_io_state {
		/* Split mode only: RX -> TX hand-off of port-bound packets;
		 * NULL with one I/O thread */
		struct rte_ring *rx2tx;
		/* What each thread is launched with */
		struct sl_io_arg {
			struct sl_mgr *m;
			unsigned int idx;
		} arg[SL_MAX_IO_THREADS];
	} io;
	/* The flow module's states (mgr_flow_init; flow/, rules/, requests/) */
	struct sl_flowdir_state *flow;
	struct sl_rules_state *rules;
	struct sl_requests_state *requests;
};

/* Logs a line "sluiced[node]: ..." on stderr (main.c). */
void mgr_log(const struct sl_mgr *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Events (NF up/down, ...): mgr_event(m, kind, data) on m->bus, bus.h. */

/* The packet pool of a NUMA socket (main.c), created on first use. */
struct rte_mempool *mgr_pool_for_socket(struct sl_mgr *m, int socket, char *err,
					size_t errlen);

/* ports/: ports/ports.h, included above */

/* registry/ */
/* Allocates m->registry (after m->o and m->shm are set): 0 or ENOMEM
 * (said on stderr). */
int mgr_registry_init(struct sl_mgr *m);
/* Frees m->registry (after every NF is gone). */
void mgr_registry_close(struct sl_mgr *m);
void mgr_registry_poll(struct sl_mgr *m); /* messages + quiescent actions */
void mgr_nf_died(struct sl_mgr *m, uint16_t instance);
/* The service named name in *id: 0; ENOENT if there is none and !create;
 * ENOSPC (err says why) if every service is in use. */
int mgr_service_get(struct sl_mgr *m, const char *name, int create, int *id,
		    char *err, size_t errlen);
/* Frees a service nothing has used: one a refused graph or chain created
 * (graph.c); no instance, graph, flow or request may name it. */
void mgr_service_release(struct sl_mgr *m, uint16_t id);
int mgr_chain_apply(struct sl_mgr *m, const char *const *hops, uint16_t n,
		    char *err, size_t errlen);
json_t *mgr_chain_json(const struct sl_mgr *m);
/* A note for the answer that applied graph id: the services of that graph
 * with no running instance, whose packets are dropped (no_instance) until
 * one registers (a typo in a name creates a service nobody runs); NULL if
 * every one has an instance. */
json_t *mgr_graph_idle_note(const struct sl_mgr *m, uint16_t id);
int mgr_lb_set(struct sl_mgr *m, uint16_t service, enum sl_lb_mode mode);
void mgr_stop_all_nfs(struct sl_mgr *m, unsigned int timeout_ms);
const char *mgr_nf_state_name(uint32_t state);

void mgr_maybe_enable_rx(struct sl_mgr *m);

/* base/view.c: read-only views of the published graphs, below every
 * module */
json_t *mgr_hop_json(const struct sl_shm *shm, sl_hop_t h);
/* The current graph named name: its id, or -1. */
int mgr_graph_lookup(const struct sl_mgr *m, const char *name);
/* 1 when the default chain (graph 0) has an instance of every service. */
int mgr_chain_complete(const struct sl_mgr *m);

/* graph.c: mgr_chain_apply, mgr_graph_apply_json and mgr_graph_remove
 * return 0 or a positive errno with err set (EINVAL: the request is bad;
 * else no room or memory for a good one). */
uint32_t mgr_chain_version(const struct sl_mgr *m);
json_t *mgr_graphs_json(const struct sl_mgr *m, const char *name, char *err,
			size_t errlen);
int mgr_graph_apply_json(struct sl_mgr *m, json_t *p, json_t **out, char *err,
			 size_t errlen);
int mgr_graph_remove(struct sl_mgr *m, const char *name, uint32_t *rules,
		     char *err, size_t errlen);
void mgr_graphs_close(struct sl_mgr *m);

/* The flow module: flow table and ingress (flow/), rules (rules/),
 * cross-layer requests (requests/); their states are m->flow, m->rules,
 * m->requests. */
#include "flow/flow.h"
#include "requests/requests.h"
#include "rules/rules.h"

/* scale.c: nf.scale, and the replicas it started (mgr_scale_module) */

/* io.c (mgr_io_module: the RX->TX ring, the threads' arguments, their
 * launch and their end) */
/* An I/O thread's main; arg is &m->io.arg[its index]. 0, or ENOMEM if it
 * could not start (it sets m->quit). */
int mgr_io_thread(void *arg);
/* After rx_enabled was set to 0: waits (at most 100 ms, then ETIMEDOUT)
 * until the RX thread reads no port any more and has counted and handed
 * on what it read before. */
int mgr_io_rx_settle(struct sl_shm *shm);

/* control.c (mgr_control_module: the socket) */
/* The control loop, until m->quit: socket events, NF deaths, then every
 * module's poll in list order. */
void mgr_control_run(struct sl_mgr *m);
/* status.control: {connections, max_connections, out_kb, closed_unread} */
json_t *mgr_control_json(const struct sl_mgr *m);

/* rpc.c: JSON-RPC 2.0 framing, method lookup and dispatch, the parked
 * request. Each module serves its methods from a const table of struct
 * sl_rpc_method ended by {NULL}, its module's `methods` (module.h); rpc.c
 * looks them up in m->modules (docs/architecture.md "Adding an RPC
 * method"). */
#define SL_RPC_E_PARSE -32700
#define SL_RPC_E_REQUEST -32600
#define SL_RPC_E_METHOD -32601
#define SL_RPC_E_PARAMS -32602
#define SL_RPC_E_FAILED -32000

/* A method's error: code 0 and msg "" until it fails. */
struct sl_rpc_err {
	int code;
	char msg[512];
};

/* A method: its result (a new reference), or NULL with e set (or parked,
 * mgr_rpc_park). params is always an object. */
typedef json_t *(*sl_rpc_fn)(struct sl_mgr *m, json_t *params,
			     struct sl_rpc_err *e);

enum sl_rpc_flag {
	/* Changes rules: the control socket's thread alone runs it (the
	 * telemetry thread can neither start a build nor see one half
	 * done), one build at a time; it may park (mgr_rpc_park). */
	SL_RPC_RULES = 1u << 0,
	/* fn is NULL: rpc.c subscribes the connection to events. */
	SL_RPC_SUBSCRIBE = 1u << 1,
	/* May park (mgr_rpc_park) for work that takes control-loop turns
	 * (nf.scale): the control socket's thread alone runs it, and it
	 * waits, like a rule change, while another request is parked. */
	SL_RPC_PARKS = 1u << 2,
};

struct sl_rpc_method {
	const char *name; /* NULL ends a table */
	sl_rpc_fn fn;
	unsigned int flags; /* enum sl_rpc_flag */
};

/* base/rpcutil.c, below every module: */
/* Sets e and returns NULL: `return mgr_rpc_fail(e, ...)` in a method. */
json_t *mgr_rpc_fail(struct sl_rpc_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Every method's name, in module then table order (status.methods). */
json_t *mgr_rpc_names(const struct sl_mgr *m);

/* A rule change that started a build (sl_rules_*_start) returns
 * mgr_rpc_park(&pk): its reply is made by pk.done once pk.ready (NULL:
 * mgr_rules_poll) reports the work done (rc 0: committed, with out; else
 * refused, with err). The control thread alone parks (SL_RPC_RULES and
 * SL_RPC_PARKS methods), one request at a time; rpc.c takes pk's ids and
 * graph and releases them after done. */
struct sl_rpc_park;
typedef json_t *(*sl_rpc_done_fn)(struct sl_mgr *m,
				  const struct sl_rpc_park *pk, int rc,
				  json_t *out, const char *err,
				  struct sl_rpc_err *e);
struct sl_rpc_park {
	sl_rpc_done_fn done;
	/* Polled by the control loop each turn (mgr_rpc_poll): 1 once the
	 * work is done, with rc, out (a reference passed to done) and err;
	 * NULL: the rule build's mgr_rules_poll. */
	int (*ready)(struct sl_mgr *m, int *rc, json_t **out, char *err,
		     size_t errlen);
	json_t *ids;    /* a reference, or NULL */
	json_int_t one; /* a number to reply with */
	size_t n;       /* a count to reply with */
	char *graph;    /* malloc'd, or NULL */
};
json_t *mgr_rpc_park(const struct sl_rpc_park *pk);
/* rpc.c, after a method returned: 1 with *pk when it parked (cleared). */
int mgr_rpc_park_take(struct sl_rpc_park *pk);

/* Params shared by several modules' methods: each returns the value or -1
 * with e set (E_PARAMS when missing or malformed, E_FAILED when it names
 * nothing). */
/* A service by name or id in params[key] (registry_rpc.c). */
int mgr_rpc_param_service(struct sl_mgr *m, json_t *params, const char *key,
			  struct sl_rpc_err *e);
/* The graph named by params.graph: its id. */
int mgr_rpc_param_graph(struct sl_mgr *m, json_t *params, struct sl_rpc_err *e);
/* The match fields (and in_port) of params into mt, *has 1 when any is
 * given; keys besides those must be in extra. 0 or -1. */
int mgr_rpc_param_match(struct sl_mgr *m, json_t *params,
			const char *const *extra, size_t n_extra,
			struct sl_match *mt, int *has, struct sl_rpc_err *e);
/* r, or NULL with e set (r released) when it would not fit a client's
 * --control-out-kb (the reply would close the connection unanswered);
 * what: how to ask for less. */
json_t *mgr_rpc_fits_out(struct sl_mgr *m, json_t *r, const char *what,
			 struct sl_rpc_err *e);

enum sl_rpc_state {
	SL_RPC_REPLY,  /* *resp is the reply (NULL for a notification) */
	SL_RPC_PARKED, /* a rule build started: mgr_rpc_poll gives the reply */
	SL_RPC_WAIT,   /* a rule change while one builds: nothing was done;
			* give the same line again once mgr_rpc_poll answered */
};
/* The control thread's: a request that may start a rule build; with
 * rules_wait (others wait their turn), a rule change is SL_RPC_WAIT. */
enum sl_rpc_state mgr_rpc_handle_ctl(struct sl_mgr *m, const char *line,
				     size_t len, int rules_wait, int *subscribe,
				     json_t **resp);
/* 1 when the parked request's build finished and was committed or
 * refused, with *resp its reply (NULL for a notification); 0 otherwise. */
int mgr_rpc_poll(struct sl_mgr *m, json_t **resp);
/* Drops a parked request (shutdown). */
void mgr_rpc_close(void);
/* 1 while a request is parked or a rule build is under way: a request
 * that may park (SL_RPC_RULES, SL_RPC_PARKS) must wait. */
int mgr_rpc_busy(const struct sl_mgr *m);

/* telemetry.c: DPDK telemetry commands /sluice/... (mgr_telemetry_module:
 * started after every module's init, stopped first at shutdown) */

#endif /* SLUICED_H */
