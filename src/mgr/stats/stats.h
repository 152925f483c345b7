/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's counters: the rows `stats` reports (a port, an NF instance, a
 * service, an edge, the node; the flow table is read in place), each with
 * its descriptor table (counters.h) in stats.c. The `stats` reply and the
 * DPDK telemetry commands are both built from these tables.
 *
 * Rows are summed from counters with a single writer, fixed arrays and
 * ring counts: filling them takes no lock and nothing the data path
 * holds, so any thread may (the telemetry threads do). Off the control
 * thread, a row made while an NF instance is being freed may count that
 * instance's packets twice or not at all (the control thread moves them
 * to its service's retired counters meanwhile); the next one is right.
 */
#ifndef SL_MGR_STATS_H
#define SL_MGR_STATS_H

#include "counters.h"
#include "sl_shared.h"

struct sl_mgr;

/* A port: what the I/O threads counted, plus what NFs sent on their own
 * TX queues of it. */
struct sl_stats_port {
	uint16_t id;
	const char *name;
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t rx_stalls;
	uint64_t drops[SL_DROP_MAX];
};

/* An NF instance: its own counters, its tx less what sluiced then dropped
 * of it, its drops and sluiced's on its behalf. */
struct sl_stats_nf {
	uint16_t instance;
	const char *service;
	const char *state;
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops[SL_DROP_MAX];
	uint64_t rx_ring[2]; /* count, size */
	uint64_t cycles;
	double cycles_per_pkt;
	uint64_t sleeps;
	uint64_t stalls;
	uint64_t bursts;
};

/* A service: its live instances and those gone, tx from its edges. */
struct sl_stats_service {
	uint16_t id;
	const char *name;
	struct sl_ctr_ids instances;
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops[SL_DROP_MAX];
};

/* An edge that carried packets: from a port's ingress or a service to a
 * service, "port:NAME" or "drop". */
struct sl_stats_edge {
	const char *from;
	const char *to;
	uint64_t pkts;
	uint64_t bytes;
};

/* The node: every drop once, by reason. */
struct sl_stats_node {
	uint64_t tsc_hz;
	uint64_t drops_total;
	uint64_t drops[SL_DROP_MAX];
};

/* Rows of the tables below: ctx is the struct sl_mgr. */
extern const struct sl_ctr_table mgr_stats_node_table; /* one row */
extern const struct sl_ctr_table
	mgr_stats_port_table;                        /* struct sl_stats_port */
extern const struct sl_ctr_table mgr_stats_nf_table; /* struct sl_stats_nf */
extern const struct sl_ctr_table mgr_stats_service_table;
extern const struct sl_ctr_table
	mgr_stats_flow_table; /* struct sl_flow_table */
extern const struct sl_ctr_table mgr_stats_edge_table;

/* The `stats` reply (docs/control-socket.md). */
json_t *mgr_stats_json(const struct sl_mgr *m);
/* `stats {"schema": true}`: every field of the reply described. */
json_t *mgr_stats_schema(void);

#endif /* SL_MGR_STATS_H */
