/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's statistics as DPDK telemetry commands (docs/control-socket.md,
 * "DPDK telemetry"), for dpdk-telemetry.py and anything that speaks the
 * telemetry socket /var/run/dpdk/<file-prefix>/dpdk_telemetry.v2:
 *
 *   /sluice/stats                node totals and the flow table
 *   /sluice/ports                every port (drops summed)
 *   /sluice/port,<id|name>       one port, drops by reason
 *   /sluice/nfs                  every NF instance (drops summed)
 *   /sluice/nf,<instance>        one NF instance, drops by reason
 *   /sluice/services             every service (drops summed)
 *   /sluice/service,<id|name>    one service, drops by reason
 *   /sluice/flows                the flow table's counters
 *   /sluice/edges                packets per edge
 *
 * The callbacks run on DPDK's telemetry threads, not the control thread.
 * They read the counters as `stats` does, through the same row tables
 * (stats/stats.h): the numbers are those of `stats`, computed the same
 * way; a field is added by its descriptor's type, so only /sluice/stats's
 * summary names fields (the ports' four it sums). Filling rows takes no lock and
 * nothing the data path holds (stats.h says what a row read off the
 * control thread may miss). Non-integer values (cycles_per_pkt) are left
 * out: DPDK 22.11 telemetry has no floating-point type.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "sluiced.h"
#include "stats/stats.h"

/* What the callbacks read: the one sluiced, set by the module's start.
 * check_structure: no-context (DPDK 22.11's telemetry_cb has no context
 * argument; 24.11's rte_telemetry_register_cmd_arg would carry it) */
static struct {
	struct sl_mgr *m;
	uint32_t live;     /* 1 while the callbacks may read sluiced */
	uint32_t inflight; /* callbacks reading now */
} g_tel;

static int
enter(void)
{
	__atomic_add_fetch(&g_tel.inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g_tel.live, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_sub_fetch(&g_tel.inflight, 1, __ATOMIC_SEQ_CST);
	return EAGAIN;
}

static void
leave(void)
{
	__atomic_sub_fetch(&g_tel.inflight, 1, __ATOMIC_SEQ_CST);
}

/* A callback's answer when a table walk failed with rc (a positive
 * errno): DPDK's telemetry_cb convention, a negative errno. */
static int
read_error(int rc)
{
	return rc == EAGAIN ? -EAGAIN : -ENOMEM; /* DPDK */
}

static void
add_int(struct rte_tel_data *d, const char *k, uint64_t u)
{
	int64_t v = (int64_t)u;

	if (v >= 0)
		rte_tel_data_add_dict_u64(d, k, (uint64_t)v);
	else
		rte_tel_data_add_dict_int(d, k, (int)v);
}

/* Adds the parts of c in row as a dict named c->name to d. */
static void
add_parts(struct rte_tel_data *d, const struct sl_ctr *c, const void *row)
{
	struct rte_tel_data *p = rte_tel_data_alloc();

	if (p == NULL)
		return;
	rte_tel_data_start_dict(p);
	for (uint16_t i = 0; i < c->n_parts; i++)
		add_int(p, c->parts[i], mgr_ctr_part(c, row, i));
	if (rte_tel_data_add_dict_container(d, c->name, p, 0) != 0)
		rte_tel_data_free(p);
}

static void
add_ids(struct rte_tel_data *d, const struct sl_ctr *c, const void *row)
{
	const struct sl_ctr_ids *ids =
		(const void *)((const char *)row + c->off);
	struct rte_tel_data *a = rte_tel_data_alloc();

	if (a == NULL)
		return;
	rte_tel_data_start_array(a, RTE_TEL_U64_VAL);
	for (uint32_t i = 0; i < ids->n; i++)
		rte_tel_data_add_array_u64(a, ids->v[i]);
	if (rte_tel_data_add_dict_container(d, c->name, a, 0) != 0)
		rte_tel_data_free(a);
}

/*
 * Adds field c of row to dict d. At the top of a reply (nested 0) reasons
 * and parts become a dict and ids an array; inside a list entry (nested
 * 1, where DPDK allows no further level) reasons become their sum, parts
 * k: {a, b} become k_a and k_b, and ids their count as n_k. Reals are left
 * out: DPDK 22.11 telemetry has no floating-point type.
 */
static void
add_field(struct rte_tel_data *d, const struct sl_ctr *c, const void *row,
	  int nested)
{
	char name[RTE_TEL_MAX_STRING_LEN];

	switch (c->type) {
	case SL_CT_U64:
	case SL_CT_U32:
	case SL_CT_U16:
		add_int(d, c->name, mgr_ctr_u64(c, row));
		break;
	case SL_CT_STR:
	case SL_CT_ENUM:
		rte_tel_data_add_dict_string(d, c->name, mgr_ctr_str(c, row));
		break;
	case SL_CT_REASONS:
		if (nested)
			rte_tel_data_add_dict_u64(d, c->name,
						  mgr_ctr_u64(c, row));
		else
			add_parts(d, c, row);
		break;
	case SL_CT_PARTS:
		if (!nested) {
			add_parts(d, c, row);
			break;
		}
		for (uint16_t i = 0; i < c->n_parts; i++) {
			snprintf(name, sizeof(name), "%s_%s", c->name,
				 c->parts[i]);
			add_int(d, name, mgr_ctr_part(c, row, i));
		}
		break;
	case SL_CT_IDS:
		if (nested) {
			snprintf(name, sizeof(name), "n_%s", c->name);
			rte_tel_data_add_dict_u64(
				d, name,
				((const struct sl_ctr_ids
					  *)(const void *)((const char *)row +
							   c->off))
					->n);
		} else {
			add_ids(d, c, row);
		}
		break;
	default: /* reals; tables are the commands' own */
		break;
	}
}

static void
add_row(struct rte_tel_data *d, const struct sl_ctr_table *t, const void *row,
	int nested)
{
	for (size_t i = 0; i < t->n; i++)
		add_field(d, &t->c[i], row, nested);
}

/*
 * A reply is at most REPLY_MAX bytes of JSON (DPDK 22.11's MAX_OUTPUT_LEN,
 * the greeting's max_output_len): what does not fit DPDK leaves out without
 * a word. So the list commands count the bytes of what they add (as DPDK
 * writes it) and, before an entry would not fit, stop and say how many
 * entries are left out and where to read them (REPLY_ROOM is kept for the
 * command's name around the reply and that note).
 */
#define REPLY_MAX 16384
#define REPLY_ROOM 256

static size_t
digits(uint64_t u)
{
	char b[24];

	return (size_t)snprintf(b, sizeof(b), "%lld", (long long)(int64_t)u);
}

/* Bytes of "k":<value> as add_field(..., nested 1) writes field c (0 for
 * what it leaves out), with its comma. */
static size_t
field_len(const struct sl_ctr *c, const void *row)
{
	size_t kl = strlen(c->name) + 4; /* "k": and , */
	size_t n = 0;

	switch (c->type) {
	case SL_CT_U64:
	case SL_CT_U32:
	case SL_CT_U16:
		return kl + digits(mgr_ctr_u64(c, row));
	case SL_CT_STR:
	case SL_CT_ENUM:
		/* names are letters, digits, '_', '-', ':' (no escapes); 2x
		 * covers any that would need them */
		return kl + 2 + 2 * strlen(mgr_ctr_str(c, row));
	case SL_CT_REASONS:
		return kl + 20;
	case SL_CT_PARTS:
		for (uint16_t i = 0; i < c->n_parts; i++)
			n += kl + 1 + strlen(c->parts[i]) +
			     digits(mgr_ctr_part(c, row, i));
		return n;
	case SL_CT_IDS:
		return kl + 2 + 20;
	default:
		return 0;
	}
}

/* Bytes of "id":{...} for a row of t in a list. */
static size_t
row_len(const char *id, const struct sl_ctr_table *t, const void *row)
{
	size_t n = strlen(id) + 6;

	for (size_t i = 0; i < t->n; i++)
		n += field_len(&t->c[i], row);
	return n;
}

/* A row of t as a dict named id in d, its fields as inside a list entry;
 * ENOSPC when there is no room (more than RTE_TEL_MAX_DICT_ENTRIES),
 * ENOMEM without memory. */
static int
add_entry(struct rte_tel_data *d, const char *id, const struct sl_ctr_table *t,
	  const void *row)
{
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (c == NULL)
		return ENOMEM;
	rte_tel_data_start_dict(c);
	add_row(c, t, row, 1);
	if (rte_tel_data_add_dict_container(d, id, c, 0) != 0) {
		rte_tel_data_free(c);
		return ENOSPC;
	}
	return 0;
}

/* What each list command lists, and how its rows are named. */
struct tel_list {
	const char *cmd; /* the one-row command */
	const struct sl_ctr_table *t;
	const char *id;     /* the row's id field; NULL: its index */
	const char *named;  /* the row's name field, or NULL */
	const char *what;   /* for messages */
	const char *list;   /* the list command */
	const char *plural; /* for the note of a reply too long */
	const char *each;   /* where to read them then */
};

static const struct tel_list lists[] = {
	{"/sluice/port", &mgr_stats_port_table, "id", "name", "port",
	 "/sluice/ports", "ports", "ask /sluice/port,<id> for each"},
	{"/sluice/nf", &mgr_stats_nf_table, "instance", NULL, "NF instance",
	 "/sluice/nfs", "NF instances", "ask /sluice/nf,<instance> for each"},
	{"/sluice/service", &mgr_stats_service_table, "id", "name", "service",
	 "/sluice/services", "services", "ask /sluice/service,<id> for each"},
	{"/sluice/edges", &mgr_stats_edge_table, NULL, NULL, "edge",
	 "/sluice/edges", "edges", "the control socket's stats lists them all"},
};

static const struct tel_list *
list_of(const char *cmd)
{
	for (size_t i = 0; i < RTE_DIM(lists); i++)
		if (strncmp(cmd, lists[i].cmd, strlen(lists[i].cmd)) == 0)
			return &lists[i];
	return NULL;
}

/* The id of a row of l (its index i if l has no id field), as text. */
static void
id_text(const struct tel_list *l, const void *row, size_t i, char *buf,
	size_t size)
{
	if (l->id != NULL)
		snprintf(buf, size, "%" PRIu64,
			 mgr_ctr_u64(mgr_ctr_find(l->t, l->id), row));
	else
		snprintf(buf, size, "%zu", i);
}

/* A list command's walk: rows added while they fit, the others counted. */
struct walk {
	const struct tel_list *l;
	struct rte_tel_data *d;
	size_t i;     /* rows seen */
	size_t added; /* rows added before the first that did not fit */
	size_t used;  /* bytes */
	int full;
};

static int
walk_row(void *arg, const void *row)
{
	struct walk *w = arg;
	char id[24];

	if (!w->full) {
		id_text(w->l, row, w->i, id, sizeof(id));
		w->used += row_len(id, w->l->t, row);
		if (w->used > REPLY_MAX ||
		    w->i + 1 >= RTE_TEL_MAX_DICT_ENTRIES ||
		    add_entry(w->d, id, w->l->t, row) != 0)
			w->full = 1;
		else
			w->added++;
	}
	w->i++;
	return 0;
}

/* /sluice/ports, /sluice/nfs, /sluice/services, /sluice/edges: id -> row,
 * as many as fit; then "more": what was left out and where to read it. */
static int
tel_list(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct tel_list *l = list_of(cmd);
	struct walk w = {.l = l, .d = d, .used = REPLY_ROOM};
	char msg[RTE_TEL_MAX_STRING_LEN];
	int rc;

	(void)params;
	if (l == NULL)
		return -EINVAL; /* DPDK: telemetry_cb's negative errno */
	if (enter() != 0)
		return -EAGAIN; /* DPDK: telemetry_cb's negative errno */
	rte_tel_data_start_dict(d);
	rc = l->t->each(g_tel.m, walk_row, &w);
	leave();
	if (rc != 0)
		return read_error(rc);
	if (w.added < w.i) {
		snprintf(msg, sizeof(msg),
			 "%zu of %zu %s left out (a reply holds %d KiB): %s",
			 w.i - w.added, w.i, l->plural, REPLY_MAX / 1024,
			 l->each);
		rte_tel_data_add_dict_string(d, "more", msg);
	}
	return 0;
}

/* A one-row command's search: the row whose id or name is `want`. */
struct find {
	const struct tel_list *l;
	struct rte_tel_data *d;
	const char *want;
};

static int
find_row(void *arg, const void *row)
{
	struct find *f = arg;
	const struct sl_ctr *named =
		f->l->named ? mgr_ctr_find(f->l->t, f->l->named) : NULL;
	char id[24];

	id_text(f->l, row, 0, id, sizeof(id));
	if (strcmp(f->want, id) != 0 &&
	    (named == NULL || strcmp(f->want, mgr_ctr_str(named, row)) != 0))
		return 0;
	rte_tel_data_start_dict(f->d);
	add_row(f->d, f->l->t, row, 0);
	return 1;
}

/* /sluice/port,<id|name>, /sluice/nf,<instance>, /sluice/service,<id|name> */
static int
tel_one(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct tel_list *l = list_of(cmd);
	struct find f = {.l = l, .d = d, .want = params};
	char msg[RTE_TEL_MAX_STRING_LEN];
	int rc;

	if (l == NULL)
		return -EINVAL; /* DPDK: telemetry_cb's negative errno */
	if (params == NULL || params[0] == '\0') {
		snprintf(msg, sizeof(msg), "give the %s: %s,%s; %s lists them",
			 l->what, l->cmd, l->named ? "<id|name>" : "<id>",
			 l->list);
		rte_tel_data_string(d, msg);
		return 0;
	}
	if (enter() != 0)
		return -EAGAIN; /* DPDK: telemetry_cb's negative errno */
	rc = l->t->each(g_tel.m, find_row, &f);
	leave();
	if (rc != 0 && rc != 1) /* each's ENOMEM; 1: find_row found it */
		return read_error(rc);
	if (rc == 0) {
		snprintf(msg, sizeof(msg), "no %s '%.40s'; %s lists them",
			 l->what, params, l->list);
		rte_tel_data_string(d, msg);
	}
	return 0;
}

/* The node row's and the flow table's: one row each, added as it is. */
struct one {
	struct rte_tel_data *d;
	const struct sl_ctr_table *t;
	int nested;
};

static int
one_row(void *arg, const void *row)
{
	const struct one *o = arg;

	add_row(o->d, o->t, row, o->nested);
	return 0;
}

/* The rows of a table: counted, and some fields summed. */
struct sums {
	const struct sl_ctr *c[4];
	uint64_t v[4];
	uint64_t n;
};

static int
sum_row(void *arg, const void *row)
{
	struct sums *s = arg;

	for (int i = 0; i < 4; i++)
		if (s->c[i] != NULL)
			s->v[i] += mgr_ctr_u64(s->c[i], row);
	s->n++;
	return 0;
}

static int
copy_node(void *arg, const void *row)
{
	memcpy(arg, row, sizeof(struct sl_stats_node));
	return 0;
}

/* /sluice/stats: the node, its ports' traffic summed, how many ports, NF
 * instances and services, and the flow table. */
static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	static const char *const summed[4] = {"rx_pkts", "rx_bytes", "tx_pkts",
					      "tx_bytes"};
	struct sums ports = {.n = 0}, nfs = {.n = 0}, svcs = {.n = 0};
	const struct sl_ctr_table *nt = &mgr_stats_node_table;
	struct one flows = {.t = &mgr_stats_flow_table, .nested = 1};
	struct sl_stats_node node;
	int rc;

	(void)cmd;
	(void)params;
	for (int i = 0; i < 4; i++)
		ports.c[i] = mgr_ctr_find(&mgr_stats_port_table, summed[i]);
	if (enter() != 0)
		return -EAGAIN; /* DPDK: telemetry_cb's negative errno */
	rc = nt->each(g_tel.m, copy_node, &node);
	if (rc == 0)
		rc = mgr_stats_port_table.each(g_tel.m, sum_row, &ports);
	if (rc == 0)
		rc = mgr_stats_nf_table.each(g_tel.m, sum_row, &nfs);
	if (rc == 0)
		rc = mgr_stats_service_table.each(g_tel.m, sum_row, &svcs);
	flows.d = rte_tel_data_alloc();
	if (rc != 0 || flows.d == NULL) {
		leave();
		rte_tel_data_free(flows.d);
		return read_error(rc ? rc : ENOMEM);
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "node", g_tel.m->shm->node);
	add_field(d, mgr_ctr_find(nt, "tsc_hz"), &node, 0);
	for (int i = 0; i < 4; i++)
		rte_tel_data_add_dict_u64(d, summed[i], ports.v[i]);
	add_field(d, mgr_ctr_find(nt, "drops_total"), &node, 0);
	rte_tel_data_add_dict_u64(d, "n_ports", ports.n);
	rte_tel_data_add_dict_u64(d, "n_nfs", nfs.n);
	rte_tel_data_add_dict_u64(d, "n_services", svcs.n);
	rte_tel_data_start_dict(flows.d);
	mgr_stats_flow_table.each(g_tel.m, one_row, &flows);
	leave();
	if (rte_tel_data_add_dict_container(d, "flows", flows.d, 0) != 0)
		rte_tel_data_free(flows.d);
	return 0;
}

/* /sluice/flows: the flow table's counters. */
static int
tel_flows(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct one flows = {.d = d, .t = &mgr_stats_flow_table, .nested = 0};

	(void)cmd;
	(void)params;
	if (enter() != 0)
		return -EAGAIN; /* DPDK: telemetry_cb's negative errno */
	rte_tel_data_start_dict(d);
	mgr_stats_flow_table.each(g_tel.m, one_row, &flows);
	leave();
	return 0;
}

static const struct {
	const char *cmd;
	telemetry_cb fn;
	const char *help;
} cmds[] = {
	{"/sluice/stats", tel_stats,
	 "Node totals (ports summed, drops_total) and the flow table. "
	 "No parameters"},
	{"/sluice/ports", tel_list,
	 "Every port: counters, drops summed. No parameters"},
	{"/sluice/port", tel_one,
	 "One port's counters and drops by reason. Parameter: port id or name"},
	{"/sluice/nfs", tel_list,
	 "Every NF instance: counters, drops summed. No parameters"},
	{"/sluice/nf", tel_one,
	 "One NF instance's counters and drops by reason. Parameter: "
	 "instance id"},
	{"/sluice/services", tel_list,
	 "Every service: counters, drops summed. No parameters"},
	{"/sluice/service", tel_one,
	 "One service's counters and drops by reason. Parameter: service id "
	 "or name"},
	{"/sluice/flows", tel_flows,
	 "The flow table: lookups, hits, flows live, created, aged, ... "
	 "No parameters"},
	{"/sluice/edges", tel_list,
	 "Packets and bytes per edge (from, to). No parameters"},
};

/* Optional: a command that cannot be registered is logged and sluiced
 * runs on. */
static void
telemetry_start(struct sl_mgr *m)
{
	g_tel.m = m;
	__atomic_store_n(&g_tel.live, 1, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < RTE_DIM(cmds); i++) {
		int r = rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn,
						   cmds[i].help);

		if (r != 0) {
			mgr_log(m, "telemetry: cannot register %s: %s",
				cmds[i].cmd, strerror(-r));
		}
	}
}

static void
telemetry_stop(struct sl_mgr *m)
{
	(void)m;
	/* Callbacks that start now answer with an error; wait (up to 1 s)
	 * for those already reading. */
	__atomic_store_n(&g_tel.live, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 1000 &&
			__atomic_load_n(&g_tel.inflight, __ATOMIC_SEQ_CST) != 0;
	     i++)
		usleep(1000);
}

/* Last in main.c's list: started once the ports and the control socket
 * are up, stopped first. */
const struct mgr_module mgr_telemetry_module = {
	.name = "telemetry",
	.start = telemetry_start,
	.stop = telemetry_stop,
};
