/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's counter rows and their descriptor tables (stats.h). Adding a
 * counter: a field in the row struct, its line in the table, and where the
 * row's fill sets it (docs/architecture.md, "Adding a counter").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ring.h>

#include "sluiced.h"
#include "stats.h"

static const char *const drop_names[SL_DROP_MAX] = SL_DROP_NAMES;
static const char *const ring_parts[] = {"count", "size"};
/* enum sl_flow_lookup */
static const char *const lookup_names[] = {"off", "cached", "naive"};

#define PKTS "packets"
#define BYTES "bytes"

/* ---- rows ------------------------------------------------------------ */

static void
add_ctx(struct sl_ctx_stats *to, const struct sl_ctx_stats *from, int with_rx)
{
	if (with_rx) {
		to->rx_pkts += from->rx_pkts;
		to->rx_bytes += from->rx_bytes;
	}
	to->tx_pkts += from->tx_pkts;
	to->tx_bytes += from->tx_bytes;
	to->cycles += from->cycles;
	to->stalls += from->stalls;
	for (int d = 0; d < SL_DROP_MAX; d++)
		to->drop[d] += from->drop[d];
}

static void
port_row(const struct sl_mgr *m, uint16_t pid, struct sl_stats_port *r)
{
	const struct sl_shm *shm = m->shm;
	struct sl_ctx_stats sum;

	memset(&sum, 0, sizeof(sum));
	for (uint32_t t = 0; t < shm->n_io; t++)
		add_ctx(&sum, &shm->port_stats[t][pid], 1);
	/* What NFs transmitted on their own queues of this port. */
	sum.tx_pkts += m->port_tx_retired[pid][0];
	sum.tx_bytes += m->port_tx_retired[pid][1];
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].state != SL_NF_FREE) {
			sum.tx_pkts += shm->nfs[i].port_tx[pid].pkts;
			sum.tx_bytes += shm->nfs[i].port_tx[pid].bytes;
		}
	r->id = pid;
	r->name = shm->ports[pid].name;
	r->rx_pkts = sum.rx_pkts;
	r->rx_bytes = sum.rx_bytes;
	r->tx_pkts = sum.tx_pkts;
	r->tx_bytes = sum.tx_bytes;
	r->rx_stalls = sum.stalls;
	memcpy(r->drops, sum.drop, sizeof(r->drops));
}

static int
each_port(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;
	struct sl_stats_port r;
	int rc;

	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++) {
		if (!m->shm->ports[pid].used)
			continue;
		port_row(m, pid, &r);
		rc = fn(arg, &r);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* a - b, or 0: an NF's tx less what sluiced then dropped of it. The NF
 * adds to its tx just after its enqueue, so sluiced may have taken and
 * dropped a run it has not counted yet: in flight, b can pass a. */
static inline uint64_t
sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void
nf_row(const struct sl_mgr *m, uint16_t i, struct sl_stats_nf *r)
{
	const struct sl_shm *shm = m->shm;
	const struct sl_nf_slot *s = &shm->nfs[i];

	r->instance = i;
	r->service = shm->services[s->service].name;
	r->state = mgr_nf_state_name(s->state);
	r->rx_pkts = s->nf.rx_pkts;
	r->rx_bytes = s->nf.rx_bytes;
	r->tx_pkts = sub0(s->nf.tx_pkts, s->mgr.undone_pkts);
	r->tx_bytes = sub0(s->nf.tx_bytes, s->mgr.undone_bytes);
	for (int d = 0; d < SL_DROP_MAX; d++)
		r->drops[d] = s->nf.drop[d] + s->mgr.drop[d];
	r->rx_ring[0] = s->rx != NULL ? rte_ring_count(s->rx) : 0;
	r->rx_ring[1] = s->rx != NULL ? rte_ring_get_capacity(s->rx) : 0;
	r->cycles = s->nf.cycles;
	r->cycles_per_pkt =
		s->nf.rx_pkts ? (double)s->nf.cycles / (double)s->nf.rx_pkts
			      : 0.0;
	r->sleeps = s->nf.sleeps;
	r->stalls = s->nf.stalls;
	r->bursts = s->nf.bursts;
}

static int
each_nf(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;
	struct sl_stats_nf r;
	int rc;

	for (uint16_t i = 0; i < m->shm->nf_hwm; i++) {
		if (m->shm->nfs[i].state == SL_NF_FREE)
			continue;
		nf_row(m, i, &r);
		rc = fn(arg, &r);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void
edge_row_tx(const struct sl_shm *shm, const struct sl_edge_ctr *row,
	    struct sl_ctx_stats *to)
{
	for (uint32_t c = 0; c < SL_EDGE_DROP(shm); c++) {
		to->tx_pkts += row[c].pkts;
		to->tx_bytes += row[c].bytes;
	}
}

/*
 * What service sv handed on to a next hop (a service or a port, not the
 * graph's drop sink): the sum of its edge counters, of its live instances
 * and of those gone (slot_retire_stats keeps them). Each hop is counted
 * once, where it was resolved: by the NF, or by sluiced for what the NF
 * left unresolved in its tx ring (--handoff mgr, where the NF's tx_pkts
 * already counted them into the ring: adding sluiced's tx_pkts for the
 * NF would count them twice). One writer per counter row.
 */
static void
svc_tx(const struct sl_mgr *m, uint16_t sv, struct sl_ctx_stats *to)
{
	const struct sl_shm *shm = m->shm;

	to->tx_pkts = 0;
	to->tx_bytes = 0;
	edge_row_tx(shm, m->edge_retired + (size_t)sv * SL_EDGE_COLS(shm), to);
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->state == SL_NF_FREE || s->service != sv)
			continue;
		edge_row_tx(shm, sl_edge_row_nf(shm, i, 0), to);
		edge_row_tx(shm, sl_edge_row_nf(shm, i, 1), to);
	}
}

/* inst: room for nf_hwm instance ids. */
static void
service_row(const struct sl_mgr *m, uint16_t sv, uint16_t *inst,
	    struct sl_stats_service *r)
{
	const struct sl_shm *shm = m->shm;
	struct sl_ctx_stats sum = m->svc_retired[sv];
	uint32_t n = 0;

	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->state == SL_NF_FREE || s->service != sv)
			continue;
		add_ctx(&sum, &s->nf, 1);
		add_ctx(&sum, &s->mgr, 0);
		inst[n++] = i;
	}
	svc_tx(m, sv, &sum);
	r->id = sv;
	r->name = shm->services[sv].name;
	r->instances.v = inst;
	r->instances.n = n;
	r->rx_pkts = sum.rx_pkts;
	r->rx_bytes = sum.rx_bytes;
	r->tx_pkts = sum.tx_pkts;
	r->tx_bytes = sum.tx_bytes;
	memcpy(r->drops, sum.drop, sizeof(r->drops));
}

static int
each_service(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;
	const struct sl_shm *shm = m->shm;
	uint16_t *inst = malloc(((size_t)shm->nf_hwm + 1) * sizeof(*inst));
	struct sl_stats_service r;
	int rc = 0;

	if (inst == NULL)
		return ENOMEM;
	for (uint16_t sv = 0; sv < shm->max_services && rc == 0; sv++) {
		if (!shm->services[sv].used)
			continue;
		service_row(m, sv, inst, &r);
		rc = fn(arg, &r);
	}
	free(inst);
	return rc;
}

static int
each_flow_table(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;

	return fn(arg, &m->shm->flow);
}

/* The name of edge column c: a service, "port:NAME" or "drop". */
static void
edge_col_name(const struct sl_shm *shm, uint32_t c, char *buf, size_t len)
{
	if (c < shm->max_services)
		snprintf(buf, len, "%s", shm->services[c].name);
	else if (c < SL_EDGE_DROP(shm))
		snprintf(buf, len, "port:%s",
			 shm->ports[c - shm->max_services].name);
	else
		snprintf(buf, len, "drop");
}

/* The non-zero edges of one source (summed counters). */
static int
edges_of(const struct sl_shm *shm, const char *from,
	 const struct sl_edge_ctr *sum, sl_ctr_row_fn fn, void *arg)
{
	char to[SL_NAME_LEN + 8];
	struct sl_stats_edge r = {.from = from, .to = to};
	int rc;

	for (uint32_t c = 0; c < SL_EDGE_COLS(shm); c++) {
		if (sum[c].pkts == 0)
			continue;
		edge_col_name(shm, c, to, sizeof(to));
		r.pkts = sum[c].pkts;
		r.bytes = sum[c].bytes;
		rc = fn(arg, &r);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void
edge_add(struct sl_edge_ctr *sum, const struct sl_edge_ctr *row, uint32_t n)
{
	for (uint32_t c = 0; c < n; c++) {
		sum[c].pkts += row[c].pkts;
		sum[c].bytes += row[c].bytes;
	}
}

/* Cumulative packets per edge: from each port's ingress and from each
 * service (its live instances plus those gone) to a service, a port or
 * the graph's drop sink. Only edges that carried packets. */
static int
each_edge(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;
	const struct sl_shm *shm = m->shm;
	uint32_t cols = SL_EDGE_COLS(shm);
	struct sl_edge_ctr *sum = calloc(cols, sizeof(*sum));
	char from[SL_NAME_LEN + 8];
	int rc = 0;

	if (sum == NULL)
		return ENOMEM;
	for (uint16_t p = 0; p < SL_MAX_PORTS && rc == 0; p++) {
		if (!shm->ports[p].used)
			continue;
		memset(sum, 0, cols * sizeof(*sum));
		for (uint32_t t = 0; t < shm->n_io; t++)
			edge_add(sum, sl_edge_row_port(shm, t, p), cols);
		snprintf(from, sizeof(from), "port:%s", shm->ports[p].name);
		rc = edges_of(shm, from, sum, fn, arg);
	}
	for (uint16_t sv = 0; sv < shm->max_services && rc == 0; sv++) {
		if (!shm->services[sv].used)
			continue;
		memcpy(sum, m->edge_retired + (size_t)sv * cols,
		       cols * sizeof(*sum));
		for (uint16_t i = 0; i < shm->nf_hwm; i++) {
			const struct sl_nf_slot *s = &shm->nfs[i];

			if (s->state == SL_NF_FREE || s->service != sv)
				continue;
			edge_add(sum, sl_edge_row_nf(shm, i, 0), cols);
			edge_add(sum, sl_edge_row_nf(shm, i, 1), cols);
		}
		rc = edges_of(shm, shm->services[sv].name, sum, fn, arg);
	}
	free(sum);
	return rc;
}

/* Every drop once, by reason: the ports', the instances' (theirs and
 * sluiced's on their behalf), the TX thread's in split mode, and those of
 * instances gone. */
static int
each_node(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct sl_mgr *m = ctx;
	const struct sl_shm *shm = m->shm;
	struct sl_stats_node r;

	memset(&r, 0, sizeof(r));
	r.tsc_hz = shm->tsc_hz;
	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++)
		if (shm->ports[pid].used)
			for (uint32_t t = 0; t < shm->n_io; t++)
				for (int d = 0; d < SL_DROP_MAX; d++)
					r.drops[d] +=
						shm->port_stats[t][pid].drop[d];
	for (uint32_t t = 0; t < shm->n_io; t++)
		for (int d = 0; d < SL_DROP_MAX; d++)
			r.drops[d] += shm->io[t].drop[d];
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->state == SL_NF_FREE)
			continue;
		for (int d = 0; d < SL_DROP_MAX; d++)
			r.drops[d] += s->nf.drop[d] + s->mgr.drop[d];
	}
	for (uint16_t sv = 0; sv < shm->max_services; sv++)
		if (shm->services[sv].used)
			for (int d = 0; d < SL_DROP_MAX; d++)
				r.drops[d] += m->svc_retired[sv].drop[d];
	for (int d = 0; d < SL_DROP_MAX; d++)
		r.drops_total += r.drops[d];
	return fn(arg, &r);
}

/* ---- the tables: one line per field, in the order `stats` shows ------ */

#define C SL_CTR_COUNTER
#define G SL_CTR_GAUGE
#define L SL_CTR_LABEL

#define P(k, kind, type, unit, help)                                           \
	SL_CTR(#k, struct sl_stats_port, k, kind, type, unit, help)
static const struct sl_ctr port_ctrs[] = {
	P(id, L, SL_CT_U16, "", "port id"),
	P(name, L, SL_CT_STR, "", "port name (the deployment's)"),
	P(rx_pkts, C, SL_CT_U64, PKTS, "packets received from the port"),
	P(rx_bytes, C, SL_CT_U64, BYTES, "bytes received from the port"),
	P(tx_pkts, C, SL_CT_U64, PKTS,
	  "packets sent on the port, by sluiced and by NFs on their own "
	  "TX queues"),
	P(tx_bytes, C, SL_CT_U64, BYTES, "bytes sent on the port"),
	P(rx_stalls, C, SL_CT_U64, "",
	  "receive loops that waited on a full next hop"),
	SL_CTR_NAMED("drops", struct sl_stats_port, drops, C, SL_CT_REASONS,
		     drop_names, PKTS,
		     "packets that entered here and were dropped before the "
		     "first NF, and TX drops of this port, by reason"),
};
#undef P

#define N(k, kind, type, unit, help)                                           \
	SL_CTR(#k, struct sl_stats_nf, k, kind, type, unit, help)
static const struct sl_ctr nf_ctrs[] = {
	N(instance, L, SL_CT_U16, "", "NF instance id"),
	N(service, L, SL_CT_STR, "", "the service it is an instance of"),
	N(state, L, SL_CT_STR, "", "its state (registering, running, ...)"),
	N(rx_pkts, C, SL_CT_U64, PKTS, "packets the NF received"),
	N(rx_bytes, C, SL_CT_U64, BYTES, "bytes the NF received"),
	N(tx_pkts, C, SL_CT_U64, PKTS,
	  "packets the NF handed on to a next hop, less those sluiced then "
	  "dropped"),
	N(tx_bytes, C, SL_CT_U64, BYTES, "bytes the NF handed on"),
	SL_CTR_NAMED("drops", struct sl_stats_nf, drops, C, SL_CT_REASONS,
		     drop_names, PKTS,
		     "packets dropped by the NF and by sluiced on its behalf, "
		     "by reason"),
	SL_CTR_NAMED(
		"rx_ring", struct sl_stats_nf, rx_ring, G, SL_CT_PARTS,
		ring_parts, PKTS,
		"packets waiting in its receive ring, and the ring's size"),
	N(cycles, C, SL_CT_U64, "cycles",
	  "TSC cycles spent in the NF's process"),
	N(cycles_per_pkt, G, SL_CT_REAL, "cycles",
	  "cycles / rx_pkts (0 before the first packet)"),
	N(sleeps, C, SL_CT_U64, "", "times the NF went to sleep"),
	N(stalls, C, SL_CT_U64, "", "loops that waited on a full next hop"),
	N(bursts, C, SL_CT_U64, "", "non-empty receive bursts"),
};
#undef N

#define S(k, kind, type, unit, help)                                           \
	SL_CTR(#k, struct sl_stats_service, k, kind, type, unit, help)
static const struct sl_ctr service_ctrs[] = {
	S(id, L, SL_CT_U16, "", "service id"),
	S(name, L, SL_CT_STR, "", "service name"),
	S(instances, L, SL_CT_IDS, "", "its live NF instances"),
	S(rx_pkts, C, SL_CT_U64, PKTS,
	  "packets its instances received, those gone included"),
	S(rx_bytes, C, SL_CT_U64, BYTES, "bytes its instances received"),
	S(tx_pkts, C, SL_CT_U64, PKTS,
	  "packets it handed on to a service or a port (its edges)"),
	S(tx_bytes, C, SL_CT_U64, BYTES, "bytes it handed on"),
	SL_CTR_NAMED("drops", struct sl_stats_service, drops, C, SL_CT_REASONS,
		     drop_names, PKTS,
		     "packets its instances (and sluiced on their behalf) "
		     "dropped, those gone included, by reason"),
};
#undef S

#define F(k, f, kind, type, unit, help)                                        \
	SL_CTR(k, struct sl_flow_table, f, kind, type, unit, help)
static const struct sl_ctr flow_ctrs[] = {
	SL_CTR_NAMED("lookup", struct sl_flow_table, lookup, L, SL_CT_ENUM,
		     lookup_names, "",
		     "how ingress looks flows up (--flow-lookup)"),
	F("live", n_live, G, SL_CT_U32, "flows", "flows in the table"),
	F("capacity", max_flows, G, SL_CT_U32, "flows",
	  "most flows at once (--flow-capacity)"),
	F("live_v6", n_live6, G, SL_CT_U32, "flows", "IPv6 flows in the table"),
	F("capacity_v6", max_flows6, G, SL_CT_U32, "flows",
	  "most IPv6 flows at once (--flow-capacity-v6)"),
	F("lookups", st.lookups, C, SL_CT_U64, PKTS, "packets looked up"),
	F("hits", st.hits, C, SL_CT_U64, PKTS,
	  "packets whose flow was in the table"),
	F("created", st.created, C, SL_CT_U64, "flows", "flows added"),
	F("aged", st.aged, C, SL_CT_U64, "flows",
	  "flows removed after timeout_ms without a packet"),
	F("deleted", st.deleted, C, SL_CT_U64, "flows",
	  "flows removed by flow.delete or a graph's removal"),
	F("table_full", st.table_full, C, SL_CT_U64, PKTS,
	  "new flows that found no room (no entry)"),
	F("non_ip", st.non_ip, C, SL_CT_U64, PKTS,
	  "packets with no 5-tuple (no entry)"),
	F("timeout_ms", timeout_ms, G, SL_CT_U32, "ms",
	  "idle time after which a flow ages out (--flow-timeout-ms)"),
	F("cycles", st.cycles, C, SL_CT_U64, "cycles",
	  "TSC cycles the RX thread spent in ingress lookups"),
};
#undef F

#define E(k, kind, type, unit, help)                                           \
	SL_CTR(#k, struct sl_stats_edge, k, kind, type, unit, help)
static const struct sl_ctr edge_ctrs[] = {
	E(from, L, SL_CT_STR, "", "\"port:NAME\" (its ingress) or a service"),
	E(to, L, SL_CT_STR, "", "a service, \"port:NAME\" or \"drop\""),
	E(pkts, C, SL_CT_U64, PKTS, "packets handed on along the edge"),
	E(bytes, C, SL_CT_U64, BYTES, "bytes handed on along the edge"),
};
#undef E

const struct sl_ctr_table mgr_stats_port_table = {"port", port_ctrs,
						  SL_CTR_N(port_ctrs),
						  each_port};
const struct sl_ctr_table mgr_stats_nf_table = {"nf", nf_ctrs,
						SL_CTR_N(nf_ctrs), each_nf};
const struct sl_ctr_table mgr_stats_service_table = {"service", service_ctrs,
						     SL_CTR_N(service_ctrs),
						     each_service};
const struct sl_ctr_table mgr_stats_flow_table = {"flows", flow_ctrs,
						  SL_CTR_N(flow_ctrs),
						  each_flow_table};
const struct sl_ctr_table mgr_stats_edge_table = {"edge", edge_ctrs,
						  SL_CTR_N(edge_ctrs),
						  each_edge};

static const struct sl_ctr node_ctrs[] = {
	SL_CTR("tsc_hz", struct sl_stats_node, tsc_hz, G, SL_CT_U64, "hz",
	       "TSC ticks per second (cycles counters' clock)"),
	SL_CTR_SUB("ports", SL_CTR_LIST, &mgr_stats_port_table, "every port"),
	SL_CTR_SUB("nfs", SL_CTR_LIST, &mgr_stats_nf_table,
		   "every NF instance"),
	SL_CTR_SUB("services", SL_CTR_LIST, &mgr_stats_service_table,
		   "every service"),
	SL_CTR("drops_total", struct sl_stats_node, drops_total, C, SL_CT_U64,
	       PKTS, "every packet dropped on the node, once"),
	SL_CTR_NAMED("drops", struct sl_stats_node, drops, C, SL_CT_REASONS,
		     drop_names, PKTS, "drops_total by reason"),
	SL_CTR_SUB("flows", SL_CTR_OBJECT, &mgr_stats_flow_table,
		   "the flow table"),
	SL_CTR_SUB("edges", SL_CTR_LIST, &mgr_stats_edge_table,
		   "packets per edge that carried any"),
};

const struct sl_ctr_table mgr_stats_node_table = {"node", node_ctrs,
						  SL_CTR_N(node_ctrs),
						  each_node};

json_t *
mgr_stats_json(const struct sl_mgr *m)
{
	return mgr_ctr_table_json(&mgr_stats_node_table, SL_CTR_OBJECT, m);
}

json_t *
mgr_stats_schema(void)
{
	return mgr_ctr_schema(&mgr_stats_node_table);
}
