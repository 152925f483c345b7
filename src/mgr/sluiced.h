/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced internals: the node manager's state, shared by its files.
 *   main.c      options, start-up checks, EAL and shared memory, shutdown
 *   ports.c     ports: probe, configure, transmit
 *   registry.c  services and NF instances: registration, death, reclaim,
 *               load-balancer tables, chains, quiescent-state actions
 *   io.c        the I/O thread(s): RX from ports, NF tx rings, TX to ports
 *   control.c   control thread: socket, events, liveness
 *   rpc.c       JSON-RPC methods
 */
#ifndef SLUICED_H
#define SLUICED_H

#include <stdint.h>
#include <sys/un.h>

#include <jansson.h>

#include "sl_dispatch.h"
#include "sl_shared.h"

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
	uint32_t handoff;
	uint32_t backpressure_us;
	uint32_t idle_sleep_us;
	uint32_t tx_retry_us;
	uint32_t nf_mem_mb;
	uint32_t nf_txq; /* TX queues per port for NFs to transmit directly */
	uint16_t rxd;
	uint16_t txd;
	const char *chain;
	struct sl_port_opt ports[SL_MAX_PORTS];
	uint16_t n_ports;
};

/* Something to do once every reader has passed a quiescent point. */
enum sl_qs_kind {
	SL_QS_FREE_CHAIN = 1, /* free an unpublished chain */
	SL_QS_DEREGISTER,     /* answer an NF's deregistration */
	SL_QS_RECLAIM,        /* reclaim a dead (or gone) NF's packets */
};

struct sl_qs_action {
	struct sl_qs_action *next;
	enum sl_qs_kind kind;
	uint64_t t0;
	void *ptr;         /* chain, or the deregistration message */
	uint16_t instance; /* for DEREGISTER / RECLAIM */
	uint64_t *nf_hb;   /* [max_nfs] heartbeats when queued */
	uint64_t io_hb[SL_MAX_IO_THREADS];
};

struct sl_mgr {
	struct sl_mgr_opts o;
	struct sl_shm *shm;
	uint64_t start_tsc;
	volatile int quit;
	int *pidfd;              /* [max_nfs] */
	uint16_t *txq_owner;     /* [1 + nf_txq]: instance + 1 using it, 0 */
	uint64_t port_tx_retired[SL_MAX_PORTS][2]; /* NFs gone: pkts, bytes */
	struct sl_ctx_stats *svc_retired; /* [max_services] */
	struct sl_qs_action *qs; /* pending quiescent-state actions */
	uint32_t chain_version;
	int rx_started; /* ports were enabled once (a complete chain) */
	int epfd;
	int listen_fd;
	unsigned int io_lcores[SL_MAX_IO_THREADS];
};

extern struct sl_mgr g_mgr;

/* Logs a line "sluiced[node]: ..." on stderr. */
void sl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Logs an event and publishes it to subscribers (NF up/down, ...). */
void sl_event(const char *kind, json_t *data);

/* ports.c */
int sl_ports_init(struct sl_mgr *m, char *err, size_t errlen);
void sl_ports_close(struct sl_mgr *m);
int sl_port_by_name(const struct sl_mgr *m, const char *name);
json_t *sl_ports_json(const struct sl_mgr *m);

/* registry.c */
int sl_registry_init(struct sl_mgr *m);
void sl_registry_poll(struct sl_mgr *m); /* messages + quiescent actions */
void sl_nf_died(struct sl_mgr *m, uint16_t instance);
int sl_service_get(struct sl_mgr *m, const char *name, int create, char *err,
		   size_t errlen);
int sl_chain_apply(struct sl_mgr *m, const char *const *hops, uint16_t n,
		   char *err, size_t errlen);
int sl_chain_complete(const struct sl_mgr *m);
json_t *sl_chain_json(const struct sl_mgr *m);
int sl_lb_set(struct sl_mgr *m, uint16_t service, enum sl_lb_mode mode);
void sl_stop_all_nfs(struct sl_mgr *m, unsigned int timeout_ms);
const char *sl_nf_state_name(uint32_t state);
void sl_qs_drain_all(struct sl_mgr *m);

/* io.c */
int sl_io_init(struct sl_mgr *m); /* before the threads start */
int sl_io_thread(void *arg);

/* control.c */
int sl_control_init(struct sl_mgr *m, char *err, size_t errlen);
void sl_control_run(struct sl_mgr *m);
void sl_control_close(struct sl_mgr *m);
void sl_control_watch_pid(struct sl_mgr *m, uint16_t instance, int pidfd);

/* rpc.c */
json_t *sl_rpc_handle(struct sl_mgr *m, const char *line, size_t len,
		      int *subscribe);

#endif /* SLUICED_H */
