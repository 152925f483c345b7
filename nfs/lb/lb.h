/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb's state, shared by lb.c (the NF: options, the packet path,
 * connection tracking) and backends.c (the backend set: the Maglev table,
 * run-time changes, reload).
 */
#ifndef SL_LB_H
#define SL_LB_H

#include <stdint.h>

#include "sluice/nf.h"

#include "config.h"
#include "maglev.h"

#define LB_PROG "sluice-lb"
#define LB_ERR_LEN 384

/* One backend slot. A slot's gen changes whenever it is given to another
 * backend or emptied, so a tracked connection that names (slot, gen) knows
 * whether its backend is still there. */
struct lb_backend {
	struct lb_backend_spec spec;
	uint8_t live;
	uint16_t gen;
	int port;         /* its --via port id, -1: SL_NEXT */
	uint32_t entries; /* Maglev table entries it owns */
	uint64_t flows;   /* connections given to it */
	uint64_t pkts, bytes;
};

/* A tracked connection, at its rte_hash position. The key is the
 * client's 5-tuple (client -> VIP). */
struct lb_conn {
	uint64_t last_ns;
	struct lb_ip backend; /* its address */
	uint16_t slot, gen;
	uint8_t client_mac[6]; /* the client's packet's source MAC */
	uint8_t vip_mac[6];    /* ... and its destination MAC */
	uint16_t in_port;      /* where the client's packet came in */
	uint8_t fin_client, fin_backend, rst;
};

enum lb_other { LB_OTHER_PASS = 0, LB_OTHER_DROP };
enum lb_replies { LB_REPLIES_NEXT = 0, LB_REPLIES_IN_PORT };

struct lb_counters {
	uint64_t pkts, bytes;
	uint64_t to_backend, to_client;
	uint64_t new_flows, moved, expired, other, non_ip;
	uint64_t drop_no_backend, drop_table_full, drop_fragment;
	uint64_t drop_malformed, drop_other;
};

/* The NF's private context (libsluice allocates it, options first). */
struct lb_state {
	/* Options. */
	const char *config_path;
	uint32_t table_size;
	uint32_t flows_max;
	uint32_t max_backends;
	double timeout_s, closed_timeout_s, stats_ms;
	const char *mac_text;
	int client_port;
	int replies;
	int other;

	/* Derived at init. */
	uint8_t mac[6];
	uint8_t has_mac;
	uint64_t timeout_ns, closed_ns;
	struct sl_nf *nf;

	/* The service: VIP, protocols, ports (cfg.backends is not kept). */
	struct lb_config cfg;
	struct lb_backend *backends; /* [max_backends] */
	uint32_t n_live;
	uint16_t *table;          /* [table_size]: slot or NONE */
	uint32_t *scratch;        /* [max_backends] */
	struct lb_maglev_in *min; /* [max_backends] */

	/* Connection tracking. */
	struct rte_hash *h;
	struct lb_conn *conns;
	uint32_t n_conns;
	uint32_t sweep_next;

	struct lb_counters c;
	struct sl_stats_line stats;
};

/* backends.c */
int lb_backends_alloc(struct lb_state *st);
void lb_backends_free(struct lb_state *st);
/** Takes cfg's backends (ports resolved): 0, or EINVAL with err. */
int lb_backends_set(struct lb_state *st, const struct lb_config *cfg, char *err,
		    size_t errlen);
/** Rebuilds the Maglev table from the live backends. */
void lb_rebuild(struct lb_state *st);
int lb_backend_add(struct lb_state *st, const char *text, char *err,
		   size_t errlen);
int lb_backend_remove(struct lb_state *st, const char *name, char *err,
		      size_t errlen);
int lb_backend_weight(struct lb_state *st, const char *text, char *err,
		      size_t errlen);
/** Prints the backends, one "lb-backend:" line each. */
void lb_print_backends(const struct lb_state *st);
/** SIGHUP: re-reads the file; a bad one keeps the current set. */
void lb_reload(struct sl_nf *nf);
void lb_message(struct sl_nf *nf, const char *key, const char *value);
/** Loads --config at init: 0, or EINVAL after printing why. */
int lb_load(struct lb_state *st);
/** The counters line ("lb-stats:") and the backends. */
void lb_print(struct lb_state *st, const char *reason, uint64_t now);

#endif /* SL_LB_H */
