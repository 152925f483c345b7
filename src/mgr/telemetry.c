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
 * Each one asks rpc.c for the control socket's own `stats` result (so the
 * numbers are those of `stats`, computed the same way) and copies the part
 * asked for. `stats` only loads counters that have a single writer, fixed
 * arrays and ring counts: it takes no lock and nothing the data path holds.
 * Non-integer values (cycles_per_pkt) are left out: DPDK 22.11 telemetry
 * has no floating-point type. Not being the control thread, a reply made
 * while an NF instance is being freed may count that instance's packets
 * twice or not at all (the control thread moves them to its service's
 * retired counters meanwhile); the next reply is right again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "sluiced.h"

static struct sl_mgr *g_m;
static uint32_t g_live;     /* 1 while the callbacks may read sluiced */
static uint32_t g_inflight; /* callbacks reading now */

static int
enter(void)
{
	__atomic_add_fetch(&g_inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g_live, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_sub_fetch(&g_inflight, 1, __ATOMIC_SEQ_CST);
	return -1;
}

static void
leave(void)
{
	__atomic_sub_fetch(&g_inflight, 1, __ATOMIC_SEQ_CST);
}

/*
 * Starts a callback's read: the result of the control socket's `stats` in
 * *st, to be given back with stats_put(). 0, or -EAGAIN while sluiced
 * stops, or -ENOMEM.
 */
static int
stats_take(json_t **st)
{
	static const char req[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"stats\"}";
	int sub = 0;
	json_t *resp;

	if (enter() != 0)
		return -EAGAIN;
	resp = sl_rpc_handle(g_m, req, sizeof(req) - 1, &sub);
	*st = json_incref(json_object_get(resp, "result"));
	json_decref(resp);
	if (*st == NULL) {
		leave();
		return -ENOMEM;
	}
	return 0;
}

/* Ends what stats_take() started. */
static void
stats_put(json_t *st)
{
	json_decref(st);
	leave();
}

static void
add_int(struct rte_tel_data *d, const char *k, json_int_t v)
{
	if (v >= 0)
		rte_tel_data_add_dict_u64(d, k, (uint64_t)v);
	else
		rte_tel_data_add_dict_int(d, k, (int)v);
}

static uint64_t
sum_of(json_t *o)
{
	const char *k;
	json_t *v;
	uint64_t s = 0;

	json_object_foreach(o, k, v)
		s += (uint64_t)json_integer_value(v);
	return s;
}

/*
 * Adds member k = v of a stats object to dict d. At the top of a reply
 * (nested 0) an object becomes a dict and an array of integers an array;
 * inside a list entry (nested 1, where DPDK allows no further level) an
 * object named drops becomes its sum, another object k: {a, b} becomes
 * k_a and k_b, and an array its length as n_k.
 */
static void
add_member(struct rte_tel_data *d, const char *k, json_t *v, int nested)
{
	char name[RTE_TEL_MAX_STRING_LEN];
	const char *sk;
	json_t *sv;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		add_int(d, k, json_integer_value(v));
		break;
	case JSON_STRING:
		rte_tel_data_add_dict_string(d, k, json_string_value(v));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		rte_tel_data_add_dict_int(d, k, json_is_true(v));
		break;
	case JSON_OBJECT:
		if (!nested) {
			struct rte_tel_data *c = rte_tel_data_alloc();

			if (c == NULL)
				break;
			rte_tel_data_start_dict(c);
			json_object_foreach(v, sk, sv)
				add_member(c, sk, sv, 1);
			if (rte_tel_data_add_dict_container(d, k, c, 0) != 0)
				rte_tel_data_free(c);
		} else if (strcmp(k, "drops") == 0) {
			rte_tel_data_add_dict_u64(d, k, sum_of(v));
		} else {
			json_object_foreach(v, sk, sv) {
				if (!json_is_integer(sv))
					continue;
				snprintf(name, sizeof(name), "%s_%s", k, sk);
				add_int(d, name, json_integer_value(sv));
			}
		}
		break;
	case JSON_ARRAY:
		if (!nested) {
			struct rte_tel_data *c = rte_tel_data_alloc();

			if (c == NULL)
				break;
			rte_tel_data_start_array(c, RTE_TEL_U64_VAL);
			json_array_foreach(v, i, sv)
				rte_tel_data_add_array_u64(
					c, (uint64_t)json_integer_value(sv));
			if (rte_tel_data_add_dict_container(d, k, c, 0) != 0)
				rte_tel_data_free(c);
		} else {
			snprintf(name, sizeof(name), "n_%s", k);
			rte_tel_data_add_dict_u64(d, name, json_array_size(v));
		}
		break;
	default: /* reals, null */
		break;
	}
}

static void
add_object(struct rte_tel_data *d, json_t *o, int nested)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
		add_member(d, k, v, nested);
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

/* The id field of entry e, as text. */
static void
id_text(json_t *e, const char *field, char *buf, size_t size)
{
	snprintf(buf, size, "%lld",
		 (long long)json_integer_value(json_object_get(e, field)));
}

static int add_entry(struct rte_tel_data *d, const char *id, json_t *e);

static size_t
digits(json_int_t v)
{
	char b[24];

	return (size_t)snprintf(b, sizeof(b), "%lld", (long long)v);
}

/* Bytes of "k":<value> as add_member(..., nested 1) writes member k = v
 * (0 for what it leaves out), with its comma. */
static size_t
member_len(const char *k, json_t *v)
{
	size_t kl = strlen(k) + 4; /* "k": and , */
	const char *sk;
	json_t *sv;
	size_t n = 0;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		return kl + digits(json_integer_value(v));
	case JSON_STRING:
		/* names are letters, digits, '_', '-', ':' (no escapes); 2x
		 * covers any that would need them */
		return kl + 2 + 2 * json_string_length(v);
	case JSON_TRUE:
	case JSON_FALSE:
		return kl + 1;
	case JSON_OBJECT:
		if (strcmp(k, "drops") == 0)
			return kl + 20;
		json_object_foreach(v, sk, sv)
			if (json_is_integer(sv))
				n += kl + 1 + strlen(sk) +
				     digits(json_integer_value(sv));
		return n;
	case JSON_ARRAY:
		return kl + 2 + 20;
	default:
		return 0;
	}
}

/* Bytes of "id":{...} for entry e of a list. */
static size_t
entry_len(const char *id, json_t *e)
{
	const char *k;
	json_t *v;
	size_t n = strlen(id) + 6;

	json_object_foreach(e, k, v)
		n += member_len(k, v);
	return n;
}

/* Adds the entries of stats list arr to dict d, each named by its id field
 * (NULL: its index), as many as fit; then "more": what was left out and
 * where to read it (one). */
static void
add_entries(struct rte_tel_data *d, json_t *arr, const char *idf,
	    const char *what, const char *one)
{
	size_t i, used = REPLY_ROOM, n = json_array_size(arr);
	char msg[RTE_TEL_MAX_STRING_LEN];
	json_t *e;

	json_array_foreach(arr, i, e) {
		char id[24];

		if (idf != NULL)
			id_text(e, idf, id, sizeof(id));
		else
			snprintf(id, sizeof(id), "%zu", i);
		used += entry_len(id, e);
		if (used > REPLY_MAX || i + 1 >= RTE_TEL_MAX_DICT_ENTRIES ||
		    add_entry(d, id, e) != 0)
			break;
	}
	if (i < n) {
		snprintf(msg, sizeof(msg),
			 "%zu of %zu %s left out (a reply holds %d KiB): %s",
			 n - i, n, what, REPLY_MAX / 1024, one);
		rte_tel_data_add_dict_string(d, "more", msg);
	}
}

/* Entry e of a stats list as a dict named id in d, its members as inside a
 * list entry; -1 when there is no room (more than RTE_TEL_MAX_DICT_ENTRIES)
 * or no memory. */
static int
add_entry(struct rte_tel_data *d, const char *id, json_t *e)
{
	struct rte_tel_data *c = rte_tel_data_alloc();

	if (c == NULL)
		return -1;
	rte_tel_data_start_dict(c);
	add_object(c, e, 1);
	if (rte_tel_data_add_dict_container(d, id, c, 0) != 0) {
		rte_tel_data_free(c);
		return -1;
	}
	return 0;
}

/* /sluice/stats: node totals and the flow table. */
static int
tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint64_t rx = 0, rxb = 0, tx = 0, txb = 0;
	json_t *st, *p;
	size_t i;
	int rc;

	(void)cmd;
	(void)params;
	rc = stats_take(&st);
	if (rc != 0)
		return rc;
	json_array_foreach(json_object_get(st, "ports"), i, p) {
		rx += (uint64_t)json_integer_value(json_object_get(p, "rx_pkts"));
		rxb += (uint64_t)json_integer_value(json_object_get(p, "rx_bytes"));
		tx += (uint64_t)json_integer_value(json_object_get(p, "tx_pkts"));
		txb += (uint64_t)json_integer_value(json_object_get(p, "tx_bytes"));
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "node", g_m->shm->node);
	add_member(d, "tsc_hz", json_object_get(st, "tsc_hz"), 0);
	rte_tel_data_add_dict_u64(d, "rx_pkts", rx);
	rte_tel_data_add_dict_u64(d, "rx_bytes", rxb);
	rte_tel_data_add_dict_u64(d, "tx_pkts", tx);
	rte_tel_data_add_dict_u64(d, "tx_bytes", txb);
	add_member(d, "drops_total", json_object_get(st, "drops_total"), 0);
	rte_tel_data_add_dict_u64(d, "n_ports",
				  json_array_size(json_object_get(st, "ports")));
	rte_tel_data_add_dict_u64(d, "n_nfs",
				  json_array_size(json_object_get(st, "nfs")));
	rte_tel_data_add_dict_u64(
		d, "n_services",
		json_array_size(json_object_get(st, "services")));
	if (json_object_get(st, "flows") != NULL)
		add_member(d, "flows", json_object_get(st, "flows"), 0);
	stats_put(st);
	return 0;
}

/* What each list command lists: stats key, id field, names. */
struct tel_list {
	const char *cmd;
	const char *key;   /* in stats */
	const char *id;    /* the entry's id field */
	const char *named; /* the entry's name field, or NULL */
	const char *what;  /* for messages */
	const char *list;  /* the list command */
	const char *plural; /* for the note of a reply too long */
	const char *each;   /* where to read them then */
};

static const struct tel_list lists[] = {
	{"/sluice/port", "ports", "id", "name", "port", "/sluice/ports", "ports",
	 "ask /sluice/port,<id> for each"},
	{"/sluice/nf", "nfs", "instance", NULL, "NF instance", "/sluice/nfs",
	 "NF instances", "ask /sluice/nf,<instance> for each"},
	{"/sluice/service", "services", "id", "name", "service",
	 "/sluice/services", "services", "ask /sluice/service,<id> for each"},
};

static const struct tel_list *
list_of(const char *cmd)
{
	for (size_t i = 0; i < RTE_DIM(lists); i++)
		if (strncmp(cmd, lists[i].cmd, strlen(lists[i].cmd)) == 0)
			return &lists[i];
	return NULL;
}

/* /sluice/ports, /sluice/nfs, /sluice/services: id -> entry. */
static int
tel_list(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct tel_list *l = list_of(cmd);
	json_t *st;
	int rc;

	(void)params;
	if (l == NULL)
		return -EINVAL;
	rc = stats_take(&st);
	if (rc != 0)
		return rc;
	rte_tel_data_start_dict(d);
	add_entries(d, json_object_get(st, l->key), l->id, l->plural, l->each);
	stats_put(st);
	return 0;
}

/* /sluice/port,<id|name>, /sluice/nf,<instance>, /sluice/service,<id|name> */
static int
tel_one(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct tel_list *l = list_of(cmd);
	json_t *st, *e, *found = NULL;
	char msg[RTE_TEL_MAX_STRING_LEN];
	size_t i;
	int rc;

	if (l == NULL)
		return -EINVAL;
	if (params == NULL || params[0] == '\0') {
		snprintf(msg, sizeof(msg), "give the %s: %s,%s; %s lists them",
			 l->what, l->cmd, l->named ? "<id|name>" : "<id>",
			 l->list);
		rte_tel_data_string(d, msg);
		return 0;
	}
	rc = stats_take(&st);
	if (rc != 0)
		return rc;
	json_array_foreach(json_object_get(st, l->key), i, e) {
		char id[24];
		const char *name = l->named ? json_string_value(json_object_get(
						      e, l->named))
					    : NULL;

		id_text(e, l->id, id, sizeof(id));
		if (strcmp(params, id) == 0 ||
		    (name != NULL && strcmp(params, name) == 0)) {
			found = e;
			break;
		}
	}
	if (found != NULL) {
		rte_tel_data_start_dict(d);
		add_object(d, found, 0);
	} else {
		snprintf(msg, sizeof(msg), "no %s '%.40s'; %s lists them",
			 l->what, params, l->list);
		rte_tel_data_string(d, msg);
	}
	stats_put(st);
	return 0;
}

/* /sluice/flows: the flow table's counters. */
static int
tel_flows(const char *cmd, const char *params, struct rte_tel_data *d)
{
	json_t *st;
	int rc;

	(void)cmd;
	(void)params;
	rc = stats_take(&st);
	if (rc != 0)
		return rc;
	rte_tel_data_start_dict(d);
	add_object(d, json_object_get(st, "flows"), 0);
	stats_put(st);
	return 0;
}

/* /sluice/edges: index -> {from, to, pkts, bytes}. */
static int
tel_edges(const char *cmd, const char *params, struct rte_tel_data *d)
{
	json_t *st;
	int rc;

	(void)cmd;
	(void)params;
	rc = stats_take(&st);
	if (rc != 0)
		return rc;
	rte_tel_data_start_dict(d);
	add_entries(d, json_object_get(st, "edges"), NULL, "edges",
		    "the control socket's stats lists them all");
	stats_put(st);
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
	{"/sluice/edges", tel_edges,
	 "Packets and bytes per edge (from, to). No parameters"},
};

int
sl_telemetry_init(struct sl_mgr *m)
{
	int rc = 0;

	g_m = m;
	__atomic_store_n(&g_live, 1, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < RTE_DIM(cmds); i++) {
		int r = rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn,
						   cmds[i].help);

		if (r != 0) {
			sl_log("telemetry: cannot register %s: %s", cmds[i].cmd,
			       strerror(-r));
			rc = r;
		}
	}
	return rc;
}

void
sl_telemetry_close(void)
{
	/* Callbacks that start now answer with an error; wait (up to 1 s)
	 * for those already reading. */
	__atomic_store_n(&g_live, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 1000 && __atomic_load_n(&g_inflight,
						    __ATOMIC_SEQ_CST) != 0;
	     i++)
		usleep(1000);
}
