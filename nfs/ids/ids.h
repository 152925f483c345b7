/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids's state, shared by ids.c (the packet path and callbacks) and
 * ids_db.c (rule sets: loading, compiling, reloading in a thread).
 */
#ifndef SL_IDS_H
#define SL_IDS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hs.h>

#include "sluice/nf.h"

#include "rules.h"

#define IDS_PROG "sluice-ids"
#define IDS_ERR_LEN 1024
#define IDS_TICK_MS 100
#define IDS_NS 1000000000ull
#define IDS_PRINT_RULES 32
#define IDS_SERVICE_WAIT_MS 5000

/* A rule of several parts some of which matched in a direction. */
struct ids_partial {
	uint32_t rule;
	uint32_t mask; /* the parts seen */
};

/* One direction of a flow: its Hyperscan stream, for TCP the next
 * sequence number expected, and its partly matched rules. */
struct ids_dir {
	hs_stream_t *s; /* kept when the slot is reused (hs_reset_stream) */
	uint32_t next_seq;
	uint8_t seq_known;
	uint8_t closed; /* a FIN or RST seen in this direction: 1 FIN, 2 RST */
	uint8_t n_partials;
	struct ids_partial *partial; /* [--partials], in the flow's slot */
};

/* A flow's slot, at the position rte_hash gives its key. */
struct ids_flow {
	uint64_t last_ns;
	struct ids_dir dir[2]; /* 0: the key's direction, 1: the other */
	uint8_t in_use;
	uint8_t dropped;   /* a drop rule matched */
	int32_t divert_to; /* service id + 1 once a divert rule matched */
	uint8_t diverted;  /* the ChangeDefault was queued */
};

/* A compiled rule set. */
struct ids_db {
	struct ids_ruleset *rs;
	hs_database_t *db;
	hs_scratch_t *scratch;
	int *divert_to; /* [n_rules]: service id of a divert rule */
	uint64_t *hits; /* [n_rules]: alerts raised */
	struct ids_parts parts;
};

struct ids_counters {
	uint64_t pkts, bytes, non_ip, malformed, fragments, no_payload;
	uint64_t scanned_bytes, alerts, alerts_quiet, dropped_rule;
	uint64_t dropped_flow, diverted, divert_failed, messages_failed;
	uint64_t flows_new, flows_expired, flows_full, tcp_retrans, tcp_gaps;
	uint64_t hs_errors, partials_full, requests_applied, requests_rejected;
	uint64_t reloads, reloads_failed;
};

/* The NF's private context; libsluice stores the options in it. */
struct ids_state {
	const char *rules_path; /* --rules */
	uint32_t capacity;      /* --flows */
	double timeout_s;       /* --timeout */
	double closed_s;        /* --closed-timeout */
	int alert_to;           /* --alert-to (service id, -1: own) */
	uint32_t alert_rate;    /* --alert-rate (per second) */
	uint64_t stats_ms;      /* --stats-ms */
	int full_drop;          /* --full: 0 pass, 1 drop */

	struct ids_db *cur;
	struct rte_hash *h;
	struct ids_flow *flows;
	uint32_t n_slots, n_flows, sweep_cursor;
	uint32_t partials; /* --partials */
	size_t slot_size;  /* a flow and its 2 x partials */
	uint64_t idle_ns, closed_ns, last_sweep_ns;
	uint64_t alert_sec;     /* second of the alert budget */
	uint32_t alerts_in_sec; /* alerts printed in it */
	struct ids_counters c;
	struct sl_stats_line stats;
	struct ids_build *build; /* the reload being built, or NULL */
	int reload_again;        /* SIGHUP during a build: reload after it */
};

/*
 * A reload in progress: ids_builder() reads and compiles the file in its
 * own thread (it only reads path); the NF thread sees done
 * (release/acquire), joins it and takes db, or err.
 */
struct ids_build {
	pthread_t thread;
	const char *path;
	int done;
	int rc;
	struct ids_db *db;
	char err[IDS_ERR_LEN];
};

/* ids_db.c */
void ids_db_free(struct ids_db *d);
int ids_db_resolve(struct sl_nf *nf, struct ids_db *d, const char *path,
		   int wait, char *err, size_t size);
int ids_db_build(const char *path, struct ids_db **out, char *err, size_t size);
void ids_print_rules(const struct ids_state *st, const char *verb);
void ids_reload(struct sl_nf *nf);
void ids_reload_poll(struct ids_state *st, struct sl_nf *nf);
void ids_reload_discard(struct ids_state *st);

/* ids.c */
void ids_print(struct ids_state *st, const char *reason, uint64_t now);
void ids_close_streams(struct ids_state *st);

#endif /* SL_IDS_H */
