/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 methods of the control socket (docs/control-socket.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sluiced.h"
#include "stats/stats.h"

static const char *const lb_names[SL_LB_MAX] = {"flow", "rr", "queue"};

json_t *
sl_rpc_fail(struct sl_rpc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return NULL;
}

/*
 * Rule changes (rule.add, rule.remove, graph.remove) are built off the
 * control thread (rules.h): the request that starts a build is parked, and
 * its reply made by sl_rpc_poll once the build is committed. Only the
 * control thread handles them (t_ctl is set on it alone: a telemetry
 * thread can neither start a build nor see one half done).
 */
struct rpc_ctl {
	int rules_wait; /* rule changes must wait (one builds, or others
			 * wait their turn) */
	int parked;     /* the method started a build: no reply yet */
};

static __thread struct rpc_ctl *t_ctl;

/* The parked request (control thread). */
static struct {
	int active;
	json_t *id; /* its id; NULL: a notification (no reply) */
	struct sl_rpc_park pk;
} g_park;

json_t *
sl_rpc_park(const struct sl_rpc_park *pk)
{
	t_ctl->parked = 1;
	g_park.pk = *pk;
	return NULL;
}

static void
park_clear(void)
{
	json_decref(g_park.id);
	json_decref(g_park.pk.ids);
	free(g_park.pk.graph);
	memset(&g_park, 0, sizeof(g_park));
}

static json_t *
ring_json(const struct rte_ring *r)
{
	if (r == NULL)
		return json_pack("{s:i, s:i}", "count", 0, "size", 0);
	return json_pack("{s:I, s:I}", "count",
			 (json_int_t)rte_ring_count(r), "size",
			 (json_int_t)rte_ring_get_capacity(r));
}

/* Looks up a service given by name or id in params[key]. */
int
sl_rpc_param_service(struct sl_mgr *m, json_t *params, const char *key,
	      struct sl_rpc_err *e)
{
	json_t *v = json_object_get(params, key);
	int s;

	if (json_is_integer(v)) {
		s = (int)json_integer_value(v);
		if (s >= 0 && s < m->shm->max_services &&
		    m->shm->services[s].used)
			return s;
	} else if (json_is_string(v)) {
		char dummy[8];

		s = sl_service_get(m, json_string_value(v), 0, dummy,
				   sizeof(dummy));
		if (s >= 0)
			return s;
	} else {
		sl_rpc_fail(e, SL_RPC_E_PARAMS, "param '%s' (service name or id) is missing",
		     key);
		return -1;
	}
	sl_rpc_fail(e, SL_RPC_E_FAILED, "no service %s; service.list shows the services",
	     json_is_string(v) ? json_string_value(v) : "with that id");
	return -1;
}

/* ---- methods -------------------------------------------------------- */

static json_t *rpc_status(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e);

/* Free buffers an NF's cache holds now, over every pool (a racy read). */
static unsigned int
cache_len(const struct sl_shm *shm, uint16_t lcore)
{
	unsigned int n = 0;

	for (uint32_t i = 0; i < shm->n_pools; i++)
		n += rte_mempool_default_cache(shm->pools[i], lcore)->len;
	return n;
}

static json_t *
rpc_nf_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();

	(void)p;
	(void)e;
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->state == SL_NF_FREE)
			continue;
		json_array_append_new(
			a,
			json_pack("{s:i, s:s, s:i, s:s, s:i, s:s, s:s, s:i, "
				  "s:o, s:o}",
				  "instance", i, "service",
				  shm->services[s->service].name, "service_id",
				  s->service, "prog", s->prog, "pid", s->pid,
				  "state", sl_nf_state_name(s->state), "mode",
				  s->mode == SL_MODE_POLL ? "poll" : "shared",
				  "access", s->access, "rx_ring",
				  ring_json(s->rx), "tx_ring",
				  ring_json(s->tx)));
		uint64_t fp = __atomic_load_n(&s->first_pkt_tsc,
					      __ATOMIC_ACQUIRE);

		json_object_set_new(
			json_array_get(a, json_array_size(a) - 1),
			"start_to_first_pkt_ms",
			fp == 0 || fp < s->proc_start_tsc
				? json_null()
				: json_real((double)(fp - s->proc_start_tsc) *
					    1e3 / (double)shm->tsc_hz));
		json_object_set_new(
			json_array_get(a, json_array_size(a) - 1),
			"start_to_register_ms",
			json_real((double)(s->started_tsc - s->proc_start_tsc) *
				  1e3 / (double)shm->tsc_hz));
		/* Its own mempool cache: the lcore id and how many free
		 * buffers it holds now (a racy read: a gauge). */
		json_object_set_new(
			json_array_get(a, json_array_size(a) - 1),
			"mbuf_cache",
			s->cache_lcore == SL_CACHE_NONE
				? json_null()
				: json_pack("{s:i, s:i}", "lcore",
					    (int)s->cache_lcore, "len",
					    (int)cache_len(shm, s->cache_lcore)));
	}
	return a;
}

static json_t *
rpc_nf_stop(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *v = json_object_get(p, "instance");
	json_int_t i;

	if (!json_is_integer(v))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'instance' (integer) is missing");
	i = json_integer_value(v);
	if (i < 0 || i >= m->shm->max_nfs ||
	    m->shm->nfs[i].state != SL_NF_RUNNING)
		return sl_rpc_fail(e, SL_RPC_E_FAILED,
			    "no running NF instance %lld; nf.list shows them",
			    (long long)i);
	__atomic_store_n(&m->shm->nfs[i].stop, 1, __ATOMIC_RELEASE);
	return json_pack("{s:I, s:s}", "instance", i, "state", "stopping");
}

static json_t *
rpc_nf_scale(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *r = json_object_get(p, "replicas"), *out = NULL;
	char err[512];
	int s = sl_rpc_param_service(m, p, "service", e);

	if (s < 0)
		return NULL;
	if (!json_is_integer(r) || json_integer_value(r) < 0)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'replicas' (integer >= 0) is missing");
	if (sl_scale(m, (uint16_t)s, (uint32_t)json_integer_value(r), &out,
		     err, sizeof(err)) != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return out;
}

static json_t *
rpc_port_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	return sl_ports_json(m);
}

static json_t *
rpc_service_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();

	(void)p;
	(void)e;
	for (uint16_t s = 0; s < shm->max_services; s++) {
		const struct sl_service *svc = &shm->services[s];
		json_t *inst = json_array();

		if (!svc->used) {
			json_decref(inst);
			continue;
		}
		for (uint16_t k = 0; k < svc->n_live; k++)
			json_array_append_new(inst, json_integer(svc->live[k]));
		json_array_append_new(
			a, json_pack("{s:i, s:s, s:s, s:o}", "id", s, "name",
				     svc->name, "lb", lb_names[svc->lb_mode],
				     "instances", inst));
	}
	return a;
}

/* stats: the counters (stats/stats.h); {"schema": true}: what each is. */
static json_t *
rpc_stats(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *schema = json_object_get(p, "schema");

	if (schema != NULL && !json_is_boolean(schema))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'schema' must be true or false");
	if (json_is_true(schema))
		return sl_stats_schema();
	return sl_stats_json(m);
}

static json_t *
rpc_chain_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	return json_pack("{s:i, s:o}", "version", (int)sl_chain_version(m),
			 "hops", sl_chain_json(m));
}

static json_t *
rpc_chain_set(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *hops = json_object_get(p, "hops");
	const char *h[1024];
	json_t *out, *note;
	char err[512];
	size_t i, n;

	if (!json_is_array(hops))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'hops' (array of strings) is missing, e.g. "
			    "{\"hops\": [\"firewall\", \"port:out\"]}");
	n = json_array_size(hops);
	if (n > RTE_DIM(h))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'hops': more than %zu hops",
			    RTE_DIM(h));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(hops, i);

		if (!json_is_string(v))
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'hops'[%zu] is not a string", i);
		h[i] = json_string_value(v);
	}
	if (sl_chain_apply(m, h, (uint16_t)n, err, sizeof(err)) != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	out = json_pack("{s:i}", "version", (int)sl_chain_version(m));
	note = sl_graph_idle_note(m, 0);
	if (out != NULL && note != NULL)
		json_object_set_new(out, "note", note);
	else
		json_decref(note);
	return out;
}

static json_t *
rpc_lb_set(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *mode = json_string_value(json_object_get(p, "mode"));
	int s, md = -1;

	if (mode == NULL)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'mode' is missing: use flow, queue or rr");
	for (int i = 0; i < SL_LB_MAX; i++)
		if (strcmp(mode, lb_names[i]) == 0)
			md = i;
	if (md < 0)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'mode' '%s': use flow, queue or rr", mode);
	s = sl_rpc_param_service(m, p, "service", e);
	if (s < 0)
		return NULL;
	sl_lb_set(m, (uint16_t)s, (enum sl_lb_mode)md);
	return json_pack("{s:s, s:s}", "service", m->shm->services[s].name,
			 "mode", mode);
}


/* ---- graphs, rules, flows, requests -------------------------------- */

static json_t *
rpc_graph_apply(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[512];
	json_t *out = NULL;
	int rc = sl_graph_apply_json(m, p, &out, err, sizeof(err));

	/* A bad graph is bad params; a good one sluiced has no room for now
	 * (--max-graphs, versions still in flight, memory) is a failure. */
	if (rc != 0)
		return sl_rpc_fail(e, rc == -EINVAL ? SL_RPC_E_PARAMS : SL_RPC_E_FAILED, "%s", err);
	return out;
}

static json_t *
rpc_graph_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[256];
	json_t *r = sl_graphs_json(
		m, json_string_value(json_object_get(p, "name")), err,
		sizeof(err));

	return r != NULL ? r : sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
}

/* graph.remove's reply once the rules without the graph are built: the
 * graph itself goes then. */
static json_t *
graph_removed(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc,
	      json_t *out, const char *err, struct sl_rpc_err *e)
{
	char msg[512];
	uint32_t rules = 0;
	json_t *result = NULL;

	(void)out;
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED,
				   "graph '%s' was not removed: its rules "
				   "could not be rebuilt without it: %s",
				   pk->graph ? pk->graph : "?", err);
	if (pk->graph == NULL)
		sl_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	else if (sl_graph_remove(m, pk->graph, &rules, msg, sizeof(msg)) != 0)
		sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", msg);
	else
		result = json_pack("{s:s, s:I}", "removed", pk->graph,
				   "rules_removed", (json_int_t)rules);
	sl_rules_prepared_drop(m->rules); /* if not taken */
	return result;
}

static json_t *
rpc_graph_remove(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *name = json_string_value(json_object_get(p, "name"));
	char err[256];
	uint32_t rules = 0;

	int id, rc;

	if (name == NULL)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'name' (graph name) is missing");
	/* Its rules go first: a rule set without them is built off this
	 * thread, and the graph is removed when it is committed. */
	id = sl_graph_lookup(m, name);
	if (id > 0) {
		rc = sl_rules_remove_graph_start(m, (uint16_t)id, err,
						 sizeof(err));
		if (rc < 0)
			return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		if (rc == 1) {
			struct sl_rpc_park pk = {.done = graph_removed,
						 .graph = strdup(name)};

			if (pk.graph == NULL) /* the build runs anyway */
				sl_log("out of memory for graph.remove %s",
				       name);
			return sl_rpc_park(&pk);
		}
	}
	if (sl_graph_remove(m, name, &rules, err, sizeof(err)) != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_pack("{s:s, s:I}", "removed", name, "rules_removed",
			 (json_int_t)rules);
}

/* Rule and filter fields besides the match ones. */
static const char *const match_keys[] = {"proto", "src", "dst", "sport",
					 "dport"};

static int
is_key(const char *k, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(k, keys[i]) == 0)
			return 1;
	return 0;
}

/* Reads the match fields (and in_port) of params into mt. */
int
sl_rpc_param_match(struct sl_mgr *m, json_t *p, const char *const *extra,
	    size_t n_extra, struct sl_match *mt, int *has, struct sl_rpc_err *e)
{
	const char *k;
	json_t *v;
	char err[256];

	*has = 0;
	json_object_foreach(p, k, v) {
		if (is_key(k, match_keys, RTE_DIM(match_keys))) {
			*has = 1;
			continue;
		}
		if (strcmp(k, "in_port") == 0 ||
		    is_key(k, extra, n_extra))
			continue;
		sl_rpc_fail(e, SL_RPC_E_PARAMS,
		     "unknown param '%s': use proto, src, dst, sport, dport, "
		     "in_port%s",
		     k, n_extra ? " and the method's own" : "");
		return -1;
	}
	if (sl_match_from_json(p, mt, err, sizeof(err)) != 0) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS, "%s", err);
		return -1;
	}
	v = json_object_get(p, "in_port");
	if (v != NULL) {
		int port = json_is_string(v)
				   ? sl_port_by_name(m, json_string_value(v))
				   : -1;

		if (port < 0) {
			sl_rpc_fail(e, SL_RPC_E_PARAMS,
			     "param 'in_port': no port named '%s'; use a name "
			     "from port.list",
			     json_is_string(v) ? json_string_value(v) : "?");
			return -1;
		}
		mt->in_port_lo = mt->in_port_hi = (uint16_t)port;
		*has = 1;
	}
	return 0;
}

int
sl_rpc_param_graph(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *g = json_string_value(json_object_get(p, "graph"));
	int id;

	if (g == NULL) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'graph' (graph name) is missing");
		return -1;
	}
	id = sl_graph_lookup(m, g);
	if (id < 0)
		sl_rpc_fail(e, SL_RPC_E_FAILED,
		     "no graph named '%s': apply it first (graph.apply)", g);
	return id;
}

/* A list result that would not fit a client's --control-out-kb is
 * refused (it would close the connection unanswered): NULL and the error. */
json_t *
sl_rpc_fits_out(struct sl_mgr *m, json_t *r, const char *what, struct sl_rpc_err *e)
{
	size_t len = json_dumpb(r, NULL, 0, JSON_COMPACT);

	if (len + 256 <= (size_t)m->o.ctl_out_kb * 1024)
		return r;
	json_decref(r);
	return sl_rpc_fail(e, SL_RPC_E_FAILED,
		    "the reply would be %zu KiB, more than --control-out-kb "
		    "%u: %s",
		    (len + 1023) / 1024, m->o.ctl_out_kb, what);
}

/* One rule of rule.add (p: its params) into r; 0 or -1 with e set.
 * where: "" or "rules[N]: " for messages. */
static int
param_rule(struct sl_mgr *m, json_t *p, struct sl_rule_spec *r,
	   const char *where, struct sl_rpc_err *e)
{
	static const char *const extra[] = {"graph", "priority"};
	json_t *pr = json_object_get(p, "priority");
	int has, g;

	if (!json_is_object(p)) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS, "%sa rule must be an object of graph, "
		     "priority and match fields", where);
		return -1;
	}
	if (pr != NULL && (!json_is_integer(pr) ||
			   json_integer_value(pr) < -1000000 ||
			   json_integer_value(pr) > 1000000)) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS,
		     "%sparam 'priority' must be an integer in "
		     "-1000000..1000000 (higher wins)", where);
		return -1;
	}
	if (sl_rpc_param_match(m, p, extra, RTE_DIM(extra), &r->match, &has, e) != 0 ||
	    (g = sl_rpc_param_graph(m, p, e)) < 0) {
		if (where[0] != '\0') {
			char msg[sizeof(e->msg)];

			snprintf(msg, sizeof(msg), "%s%s", where, e->msg);
			snprintf(e->msg, sizeof(e->msg), "%s", msg);
		}
		return -1;
	}
	r->graph = (uint16_t)g;
	r->priority = pr ? (int32_t)json_integer_value(pr) : 0;
	return 0;
}

/* rule.add {graph, ...}'s reply: the rule added. */
static json_t *
rule_added(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc,
	   json_t *out, const char *err, struct sl_rpc_err *e)
{
	(void)m;
	(void)pk;
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_incref(json_array_get(out, 0));
}

/* rule.add {rules}'s reply from the added rules. */
static json_t *
rules_added(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc,
	    json_t *out, const char *err, struct sl_rpc_err *e)
{
	/* The ids are consecutive, in the order given (the rules themselves
	 * could be more than a client's --control-out-kb: rule.list pages). */
	json_int_t first = INT64_MAX;
	json_t *x;
	size_t i;

	(void)m;
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	json_array_foreach(out, i, x) {
		json_int_t id = json_integer_value(json_object_get(x, "id"));

		if (id < first)
			first = id;
	}
	return json_pack("{s:I, s:I, s:I}", "added", (json_int_t)pk->n,
			 "first_id", first, "last_id",
			 first + (json_int_t)pk->n - 1);
}

/* rule.remove's reply: the id or ids as given. */
static json_t *
rules_removed(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc,
	      json_t *out, const char *err, struct sl_rpc_err *e)
{
	(void)m;
	(void)out;
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	if (pk->ids != NULL)
		return json_pack("{s:O}", "removed", pk->ids);
	return json_pack("{s:I}", "removed", pk->one);
}

static json_t *
rpc_rule_add(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *list = json_object_get(p, "rules");
	struct sl_rule_spec one, *r;
	char err[512], where[32];
	size_t n, i;
	int rc;

	if (list == NULL) {
		if (param_rule(m, p, &one, "", e) != 0)
			return NULL;
		if (sl_rules_add_start(m, &one, 1, err, sizeof(err)) != 0)
			return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		return sl_rpc_park(&(struct sl_rpc_park){.done = rule_added});
	}
	/* A batch: one classifier build for all of them. */
	if (json_object_size(p) != 1)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'rules' goes alone: give each rule's "
			    "fields inside it");
	n = json_array_size(list);
	if (!json_is_array(list) || n == 0)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'rules' must be a non-empty list of rules");
	if (n > m->o.max_rules)
		return sl_rpc_fail(e, SL_RPC_E_FAILED,
			    "%zu rules, more than --max-rules %u: add fewer "
			    "or raise --max-rules",
			    n, m->o.max_rules);
	r = malloc(sizeof(*r) * n);
	if (r == NULL)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	for (i = 0; i < n; i++) {
		snprintf(where, sizeof(where), "rules[%zu]: ", i);
		if (param_rule(m, json_array_get(list, i), &r[i], where, e)) {
			free(r);
			return NULL;
		}
	}
	rc = sl_rules_add_start(m, r, (uint32_t)n, err, sizeof(err));
	free(r);
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return sl_rpc_park(&(struct sl_rpc_park){.done = rules_added, .n = n});
}

static json_t *
rpc_rule_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *off = json_object_get(p, "offset");
	json_t *lim = json_object_get(p, "limit");
	const char *k;
	json_t *v;

	json_object_foreach(p, k, v) {
		if (strcmp(k, "offset") != 0 && strcmp(k, "limit") != 0)
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "unknown param '%s': rule.list takes "
				    "offset and limit",
				    k);
	}
	if (off != NULL && (!json_is_integer(off) ||
			    json_integer_value(off) < 0 ||
			    json_integer_value(off) > UINT32_MAX))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'offset' must be an integer from 0 (the "
			    "rules to skip)");
	if (lim != NULL && (!json_is_integer(lim) ||
			    json_integer_value(lim) < 0 ||
			    json_integer_value(lim) > 100000))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'limit' must be an integer in 0..100000");
	return sl_rpc_fits_out(m,
			sl_rules_list(m,
				      off ? (uint32_t)json_integer_value(off)
					  : 0,
				      lim ? (uint32_t)json_integer_value(lim)
					  : 10000),
			"ask for fewer rules (limit, then offset)", e);
}

static json_t *
rpc_rule_remove(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *id = json_object_get(p, "id");
	json_t *ids = json_object_get(p, "ids");
	char err[256];
	uint32_t *v;
	size_t n, i;
	int rc;

	if (ids == NULL) {
		if (!json_is_integer(id))
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'id' (rule id) is missing");
		uint32_t one = (uint32_t)json_integer_value(id);

		if (sl_rules_remove_start(m, &one, 1, err, sizeof(err)) != 0)
			return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		return sl_rpc_park(&(struct sl_rpc_park){
			.done = rules_removed, .one = json_integer_value(id)});
	}
	n = json_array_size(ids);
	if (id != NULL || !json_is_array(ids) || n == 0)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'ids' must be a non-empty list of rule ids, "
			    "without 'id'");
	v = malloc(sizeof(*v) * n);
	if (v == NULL)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *x = json_array_get(ids, i);

		if (!json_is_integer(x) || json_integer_value(x) < 1 ||
		    json_integer_value(x) > UINT32_MAX) {
			free(v);
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "ids[%zu] is not a rule id; see rule.list",
				    i);
		}
		v[i] = (uint32_t)json_integer_value(x);
	}
	rc = sl_rules_remove_start(m, v, (uint32_t)n, err, sizeof(err));
	free(v);
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return sl_rpc_park(&(struct sl_rpc_park){.done = rules_removed,
						 .ids = json_incref(ids)});
}

/* Filters of flow.list / flow.delete. */
static int
param_filter(struct sl_mgr *m, json_t *p, const char *const *extra,
	     size_t n_extra, struct sl_flow_filter *f, struct sl_rpc_err *e)
{
	json_t *v;

	f->graph = SL_GRAPH_NONE;
	f->service = SL_SERVICE_NONE;
	f->instance = SL_INSTANCE_NONE;
	if (sl_rpc_param_match(m, p, extra, n_extra, &f->match, &f->has_match, e))
		return -1;
	if (json_object_get(p, "graph") != NULL) {
		int g = sl_rpc_param_graph(m, p, e);

		if (g < 0)
			return -1;
		f->graph = (uint16_t)g;
	}
	if (json_object_get(p, "service") != NULL) {
		int s = sl_rpc_param_service(m, p, "service", e);

		if (s < 0)
			return -1;
		f->service = (uint16_t)s;
	}
	v = json_object_get(p, "instance");
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= m->shm->max_nfs) {
			sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'instance' must be an "
			     "instance id");
			return -1;
		}
		if (f->service == SL_SERVICE_NONE) {
			/* Pins are per service: an instance alone would match
			 * nothing it says. */
			sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'instance' needs 'service' "
			     "(the service whose pinned instance it is)");
			return -1;
		}
		f->instance = (uint16_t)json_integer_value(v);
	}
	return 0;
}

static json_t *
rpc_flow_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	static const char *const extra[] = {"limit", "graph", "service",
					    "instance"};
	struct sl_flow_filter f;
	json_t *lim = json_object_get(p, "limit");

	if (lim != NULL && (!json_is_integer(lim) ||
			    json_integer_value(lim) < 0 ||
			    json_integer_value(lim) > 100000))
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'limit' must be an integer in 0..100000");
	if (param_filter(m, p, extra, RTE_DIM(extra), &f, e) != 0)
		return NULL;
	return sl_rpc_fits_out(m,
			sl_flows_list(m, &f,
				      lim ? (uint32_t)json_integer_value(lim)
					  : 100),
			"ask for fewer flows (limit) or narrow the filters", e);
}

/* The flow named by params id or key: its position. */
static int
param_flow(struct sl_mgr *m, json_t *p, uint32_t *pos, struct sl_rpc_err *e)
{
	json_t *id = json_object_get(p, "id");
	const char *key = json_string_value(json_object_get(p, "key"));
	struct sl_5tuple t;

	if (m->shm->flow.hash == NULL) {
		sl_rpc_fail(e, SL_RPC_E_FAILED,
		     "sluiced runs with --flow-lookup off: no flow table");
		return -1;
	}
	if (json_is_integer(id)) {
		json_int_t v = json_integer_value(id);

		if (v < 0 || v >= m->shm->flow.capacity ||
		    sl_flow_entry(m->shm, (uint32_t)v)->state ==
			    SL_FLOW_FREE) {
			sl_rpc_fail(e, SL_RPC_E_FAILED, "no flow with id %lld; see flow.list",
			     (long long)v);
			return -1;
		}
		*pos = (uint32_t)v;
		return 0;
	}
	if (key == NULL) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS,
		     "give the flow as 'id' or as 'key' (\"tcp 10.0.0.1:1234 "
		     "> 10.0.0.2:80\")");
		return -1;
	}
	if (sl_5tuple_parse(key, &t) != 0) {
		sl_rpc_fail(e, SL_RPC_E_PARAMS,
		     "param 'key' '%s' is not a flow key like \"tcp "
		     "10.0.0.1:1234 > 10.0.0.2:80\" or \"udp "
		     "[2001:db8::1]:53 > [2001:db8::2]:5353\" (IPv6 "
		     "addresses in brackets)",
		     key);
		return -1;
	}
	if (sl_flow_find(m, &t, pos) != 0) {
		sl_rpc_fail(e, SL_RPC_E_FAILED,
		     "no flow '%s' in the table (it may have aged out); see "
		     "flow.list",
		     key);
		return -1;
	}
	return 0;
}

static json_t *
rpc_flow_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	uint32_t pos;
	json_t *r;

	if (param_flow(m, p, &pos, e) != 0)
		return NULL;
	r = sl_flow_json(m, pos);
	return r != NULL ? r : sl_rpc_fail(e, SL_RPC_E_FAILED, "the flow just went away");
}

static json_t *
rpc_flow_delete(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	static const char *const extra[] = {"all", "graph", "service",
					    "instance", "id", "key"};
	struct sl_flow_filter f;
	uint32_t pos;

	if (json_object_get(p, "id") != NULL ||
	    json_object_get(p, "key") != NULL) {
		if (param_flow(m, p, &pos, e) != 0)
			return NULL;
		return json_pack("{s:I}", "deleted",
				 (json_int_t)sl_flows_delete(m, NULL, pos));
	}
	if (param_filter(m, p, extra, RTE_DIM(extra), &f, e) != 0)
		return NULL;
	if (!json_is_true(json_object_get(p, "all")) && !f.has_match &&
	    f.graph == SL_GRAPH_NONE && f.service == SL_SERVICE_NONE)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "flow.delete needs 'id', 'key', filters, or "
			    "\"all\": true");
	return json_pack("{s:I}", "deleted",
			 (json_int_t)sl_flows_delete(m, &f, -1));
}

/* A hop named like a graph edge: service, port:NAME or drop. */
static int
param_hop(struct sl_mgr *m, const char *h, sl_hop_t *hop, struct sl_rpc_err *e)
{
	char dummy[8];
	int id;

	if (strcmp(h, "drop") == 0) {
		*hop = SL_HOP_DROP;
		return 0;
	}
	if (strncmp(h, "port:", 5) == 0) {
		id = sl_port_by_name(m, h + 5);
		if (id >= 0) {
			*hop = SL_HOP_PORT((uint16_t)id);
			return 0;
		}
	} else {
		id = sl_service_get(m, h, 0, dummy, sizeof(dummy));
		if (id >= 0) {
			*hop = SL_HOP_SERVICE((uint16_t)id);
			return 0;
		}
	}
	sl_rpc_fail(e, SL_RPC_E_PARAMS, "param 'to' '%s': no such service or port", h);
	return -1;
}

static json_t *
rpc_flow_request(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	static const char *const kinds[] = {NULL, "skip_me", "request_me",
					    "change_default", "message"};
	const char *type = json_string_value(json_object_get(p, "type"));
	json_t *flow = json_object_get(p, "flow");
	struct sl_req r;
	char err[256] = "";
	uint32_t applied = 0, kept = 0;
	int s, rc;

	memset(&r, 0, sizeof(r));
	for (uint32_t k = 1; type != NULL && k < RTE_DIM(kinds); k++)
		if (strcmp(type, kinds[k]) == 0)
			r.kind = k;
	if (r.kind == 0)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'type' must be skip_me, request_me, "
			    "change_default or message");
	s = sl_rpc_param_service(m, p, "service", e);
	if (s < 0)
		return NULL;
	r.service = (uint16_t)s;
	if (r.kind == SL_REQ_MESSAGE) {
		const char *k = json_string_value(json_object_get(p, "key"));
		const char *v = json_string_value(json_object_get(p, "value"));

		if (k == NULL || v == NULL)
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "a message needs 'key' and 'value' "
				    "(strings)");
		if (k[0] == '\0' || strlen(k) >= sizeof(r.mkey) ||
		    strlen(v) >= sizeof(r.value))
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "a message's key is 1 to %zu bytes and its "
				    "value at most %zu (got %zu and %zu): "
				    "shorten them",
				    sizeof(r.mkey) - 1, sizeof(r.value) - 1,
				    strlen(k), strlen(v));
		snprintf(r.mkey, sizeof(r.mkey), "%s", k);
		snprintf(r.value, sizeof(r.value), "%s", v);
	} else {
		const char *key = json_string_value(json_object_get(flow, "key"));
		json_t *mt = json_object_get(flow, "match");
		int has;

		if (key != NULL) {
			r.exact = 1;
			if (sl_5tuple_parse(key, &r.tuple) != 0)
				return sl_rpc_fail(e, SL_RPC_E_PARAMS,
					    "flow key '%s' is not like \"tcp "
					    "10.0.0.1:1234 > 10.0.0.2:80\" or "
					    "\"udp [2001:db8::1]:53 > "
					    "[2001:db8::2]:5353\" (IPv6 addresses "
					    "in brackets)",
					    key);
		} else if (json_is_object(mt)) {
			if (sl_rpc_param_match(m, mt, NULL, 0, &r.match, &has, e))
				return NULL;
		} else {
			return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'flow' must be {\"key\": \"tcp "
				    "a:p > b:q\"} or {\"match\": {...}}");
		}
		if (r.kind == SL_REQ_CHANGE_DEFAULT) {
			const char *to =
				json_string_value(json_object_get(p, "to"));

			if (to == NULL)
				return sl_rpc_fail(e, SL_RPC_E_PARAMS,
					    "change_default needs 'to' (the "
					    "new default next hop)");
			if (param_hop(m, to, &r.to, e) != 0)
				return NULL;
		}
	}
	rc = sl_flow_request(m, &r, &applied, &kept, err, sizeof(err));
	{
		json_t *ev;
		const char *sn = m->shm->services[r.service].name;

		if (r.kind == SL_REQ_MESSAGE) {
			ev = json_pack("{s:s, s:s, s:s, s:s}", "from", "control",
				       "service", sn, "key", r.mkey, "value", r.value);
		} else {
			char fk[160];
			const char *fl = json_string_value(json_object_get(flow, "key"));

			snprintf(fk, sizeof(fk), "%s", fl ? fl : "(match)");
			ev = json_pack("{s:n, s:n, s:s, s:s, s:s, s:s, s:I}", "nf",
				       "instance", "type", type, "flow", fk, "service", sn,
				       "result", rc == 0 ? "applied" : "rejected",
				       "applied", (json_int_t)applied);
			if (r.kind == SL_REQ_CHANGE_DEFAULT)
				json_object_set_new(ev, "to", sl_hop_json(m->shm, r.to));
		}
		if (rc != 0)
			json_object_set_new(ev, "reason", json_string(err));
		if (kept != 0)
			json_object_set_new(ev, "kept", json_integer(kept));
		sl_event(r.kind == SL_REQ_MESSAGE ? "nf.message" : "flow.request", ev);
	}
	if (rc != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s rejected: %s", type, err);
	/* A wildcard request is kept for new flows: its id, for
	 * flow.requests and flow.request.remove. */
	if (kept != 0)
		return json_pack("{s:I, s:I}", "applied", (json_int_t)applied,
				 "id", (json_int_t)kept);
	/* A Message that some instances missed (full inboxes) says so. */
	if (r.kind == SL_REQ_MESSAGE && err[0] != '\0')
		return json_pack("{s:I, s:s}", "applied", (json_int_t)applied,
				 "note", err);
	return json_pack("{s:I}", "applied", (json_int_t)applied);
}

static json_t *
rpc_flow_requests(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	return sl_flow_requests_json(m);
}

static json_t *
rpc_flow_request_remove(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *id = json_object_get(p, "id");
	char err[256];

	if (!json_is_integer(id) || json_integer_value(id) < 1 ||
	    json_integer_value(id) > UINT32_MAX)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
			    "param 'id' (a kept request's id, from "
			    "flow.requests) is missing or not a positive "
			    "integer");
	if (sl_flow_request_remove(m, (uint32_t)json_integer_value(id), err,
				   sizeof(err)) != 0)
		return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_pack("{s:I}", "removed", json_integer_value(id));
}

static json_t *
rpc_rx_pause(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	__atomic_store_n(&m->shm->rx_enabled, 0, __ATOMIC_SEQ_CST);
	m->rx_started = 1; /* paused stays paused until rx.resume */
	/* Answer once no port is read any more: a caller that then waits
	 * for the chain to empty must not see a last burst come in after
	 * it has looked (the launcher's stop, whose summary says in = out
	 * + dropped). */
	if (sl_io_rx_settle(m->shm) != 0)
		sl_log("rx.pause: the RX thread did not come round within "
		       "100 ms; a burst it was reading may still come in");
	sl_log("ports paused: not reading them");
	return json_pack("{s:b}", "rx_enabled", 0);
}

static json_t *
rpc_rx_resume(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	if (!sl_chain_complete(m))
		return sl_rpc_fail(e, SL_RPC_E_FAILED,
			    "the chain is not complete (a service on it has "
			    "no NF): start the NFs or chain.set first");
	__atomic_store_n(&m->shm->rx_enabled, 1, __ATOMIC_RELEASE);
	return json_pack("{s:b}", "rx_enabled", 1);
}

static json_t *
rpc_shutdown(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	m->quit = 1;
	return json_object();
}

const struct sl_rpc_method sl_node_status_methods[] = {
	{"status", rpc_status, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_registry_methods[] = {
	{"nf.list", rpc_nf_list, 0},
	{"nf.stop", rpc_nf_stop, 0},
	{"nf.scale", rpc_nf_scale, 0},
	{"port.list", rpc_port_list, 0},
	{"service.list", rpc_service_list, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_stats_methods[] = {
	{"stats", rpc_stats, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_chain_methods[] = {
	{"chain.get", rpc_chain_get, 0},
	{"chain.set", rpc_chain_set, 0},
	{"lb.set", rpc_lb_set, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_graph_methods[] = {
	{"graph.apply", rpc_graph_apply, 0},
	{"graph.get", rpc_graph_get, 0},
	{"graph.remove", rpc_graph_remove, SL_RPC_RULES},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_rules_methods[] = {
	{"rule.add", rpc_rule_add, SL_RPC_RULES},
	{"rule.list", rpc_rule_list, 0},
	{"rule.remove", rpc_rule_remove, SL_RPC_RULES},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_flow_methods[] = {
	{"flow.list", rpc_flow_list, 0},
	{"flow.get", rpc_flow_get, 0},
	{"flow.delete", rpc_flow_delete, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_requests_methods[] = {
	{"flow.request", rpc_flow_request, 0},
	{"flow.requests", rpc_flow_requests, 0},
	{"flow.request.remove", rpc_flow_request_remove, 0},
	{NULL, NULL, 0},
};

const struct sl_rpc_method sl_node_methods[] = {
	{"rx.pause", rpc_rx_pause, 0},
	{"rx.resume", rpc_rx_resume, 0},
	{"subscribe", NULL, SL_RPC_SUBSCRIBE},
	{"shutdown", rpc_shutdown, 0},
	{NULL, NULL, 0},
};

/* ---- lookup and framing --------------------------------------------- */

/* Every module's table, in the order status lists their methods (clients
 * show that list as it comes). */
static const struct sl_rpc_method *const tables[] = {
	sl_node_status_methods, sl_registry_methods, sl_stats_methods,
	sl_chain_methods,	sl_graph_methods,    sl_rules_methods,
	sl_flow_methods,	sl_requests_methods, sl_node_methods,
};

/* The method named name, or NULL. */
static const struct sl_rpc_method *
lookup(const char *name)
{
	for (size_t t = 0; t < RTE_DIM(tables); t++)
		for (const struct sl_rpc_method *r = tables[t]; r->name; r++)
			if (strcmp(r->name, name) == 0)
				return r;
	return NULL;
}

json_t *
sl_rpc_names(void)
{
	json_t *names = json_array();

	for (size_t t = 0; t < RTE_DIM(tables); t++)
		for (const struct sl_rpc_method *r = tables[t]; r->name; r++)
			json_array_append_new(names, json_string(r->name));
	return names;
}

static json_t *
rpc_status(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *names = sl_rpc_names(), *pools = json_array();
	int n_nfs = 0, n_svc = 0, pool_size = 0, in_use = 0;

	(void)p;
	(void)e;
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		n_nfs += shm->nfs[i].state == SL_NF_RUNNING;
	for (uint16_t s = 0; s < shm->max_services; s++)
		n_svc += shm->services[s].used;
	for (uint32_t i = 0; i < shm->n_pools; i++) {
		const struct rte_mempool *mp = shm->pools[i];
		unsigned int used = rte_mempool_in_use_count(mp);

		pool_size += (int)mp->size;
		in_use += (int)used;
		json_array_append_new(
			pools, json_pack("{s:s, s:i, s:i, s:i}", "name",
					 mp->name, "socket", mp->socket_id,
					 "size", (int)mp->size, "in_use",
					 (int)used));
	}
	return json_pack(
		"{s:s, s:s, s:i, s:s, s:s, s:f, s:b, s:i, s:i, s:i, s:i, s:i, "
		"s:i, s:i, s:i, s:i, s:i, s:o, s:{s:i, s:i, s:I, s:I, s:o}, s:I, s:I, "
		"s:{s:i, s:i, s:I, s:I, s:I}, s:o}",
		"node", shm->node, "version", SL_VERSION, "pid", (int)getpid(),
		"mode", m->o.mode == SL_MODE_POLL ? "poll" : "shared",
		"handoff", shm->handoff ? "mgr" : "direct", "uptime_s",
		(double)(rte_rdtsc() - m->start_tsc) / (double)shm->tsc_hz,
		"rx_enabled", shm->rx_enabled, "max_nfs", shm->max_nfs,
		"max_services", shm->max_services, "ring_size",
		(int)shm->ring_size, "burst", (int)shm->burst, "rx_burst",
		(int)m->o.rx_burst, "max_hops",
		(int)shm->max_hops, "n_nfs", n_nfs,
		"n_services", n_svc, "n_ports", shm->n_ports, "io_threads",
		(int)shm->n_io, "methods", names, "mbufs", "size",
		pool_size, "in_use", in_use, "leaked",
		(json_int_t)m->mbufs_leaked, "in_doubt",
		(json_int_t)m->mbufs_in_doubt, "pools", pools, "rings_unstuck",
		(json_int_t)m->rings_unstuck, "nfs_hung",
		(json_int_t)m->nfs_hung, "messages", "size",
		(int)shm->msg_pool->size, "free",
		(int)rte_mempool_avail_count(shm->msg_pool), "reclaimed",
		(json_int_t)m->msgs_reclaimed, "refused",
		(json_int_t)m->msgs_refused, "undelivered",
		(json_int_t)m->msgs_undelivered, "control", sl_control_json(m));
}

static json_t *
error_resp(json_t *id, int code, const char *msg)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), "error", "code", code,
			 "message", msg);
}

/* The reply to a request with id (NULL: a notification, no reply). */
static json_t *
reply(json_t *id, json_t *result, const struct sl_rpc_err *e)
{
	if (id == NULL) {
		json_decref(result);
		return NULL;
	}
	if (result != NULL)
		return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
				 "result", result);
	return error_resp(id, e->code ? e->code : SL_RPC_E_FAILED,
			  e->msg[0] ? e->msg : "internal error");
}

static json_t *
handle(struct sl_mgr *m, const char *line, size_t len, int *subscribe,
       struct rpc_ctl *ctl, enum sl_rpc_state *state)
{
	struct sl_rpc_err e = {0, ""};
	json_error_t jerr;
	json_t *req, *id, *params, *result = NULL, *resp;
	const struct sl_rpc_method *def;
	const char *method;
	char buf[600];

	*state = SL_RPC_REPLY;
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			 &jerr);
	if (req == NULL) {
		snprintf(buf, sizeof(buf), "parse error at column %d: %s",
			 jerr.column, jerr.text);
		return error_resp(NULL, SL_RPC_E_PARSE, buf);
	}
	if (!json_is_object(req)) {
		json_decref(req);
		return error_resp(NULL, SL_RPC_E_REQUEST,
				  "a request must be a JSON object");
	}
	id = json_object_get(req, "id");
	if (id != NULL && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_null(id)) {
		json_decref(req);
		return error_resp(NULL, SL_RPC_E_REQUEST,
				  "'id' must be a string, an integer or null");
	}
	if (!json_is_string(json_object_get(req, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(req, "jsonrpc")),
		   "2.0") != 0) {
		resp = error_resp(id, SL_RPC_E_REQUEST, "'jsonrpc' must be \"2.0\"");
		json_decref(req);
		return resp;
	}
	method = json_string_value(json_object_get(req, "method"));
	if (method == NULL) {
		resp = error_resp(id, SL_RPC_E_REQUEST,
				  "'method' (a string) is missing");
		json_decref(req);
		return resp;
	}
	params = json_object_get(req, "params");
	if (params != NULL && !json_is_object(params)) {
		resp = error_resp(id, SL_RPC_E_PARAMS,
				  "'params' must be an object of named "
				  "params");
		json_decref(req);
		return resp;
	}
	if (params == NULL)
		params = json_object();
	else
		json_incref(params);

	def = lookup(method);
	if (def != NULL && (def->flags & SL_RPC_RULES) && ctl != NULL &&
	    (ctl->rules_wait || sl_rules_busy(m->rules))) {
		/* Its turn comes when the build under way is committed. */
		*state = SL_RPC_WAIT;
		json_decref(params);
		json_decref(req);
		return NULL;
	}
	if (def == NULL) {
		e.code = SL_RPC_E_METHOD;
		snprintf(e.msg, sizeof(e.msg),
			 "method '%.200s' not found; 'status' lists the methods",
			 method);
	} else if (def->flags & SL_RPC_SUBSCRIBE) {
		*subscribe = 1;
		result = json_pack("{s:b}", "subscribed", 1);
	} else if ((def->flags & SL_RPC_RULES) && ctl == NULL) {
		e.code = SL_RPC_E_FAILED;
		snprintf(e.msg, sizeof(e.msg),
			 "method '%s' changes rules: send it on the control "
			 "socket",
			 method);
	} else {
		t_ctl = ctl;
		result = def->fn(m, params, &e);
		t_ctl = NULL;
	}
	json_decref(params);
	if (ctl != NULL && ctl->parked) {
		/* The reply comes from sl_rpc_poll. */
		g_park.active = 1;
		g_park.id = json_incref(id);
		*state = SL_RPC_PARKED;
		json_decref(result);
		json_decref(req);
		return NULL;
	}
	resp = reply(id, result, &e);
	json_decref(req);
	return resp;
}

enum sl_rpc_state
sl_rpc_handle_ctl(struct sl_mgr *m, const char *line, size_t len,
		  int rules_wait, int *subscribe, json_t **resp)
{
	struct rpc_ctl ctl = {.rules_wait = rules_wait};
	enum sl_rpc_state state;

	*resp = handle(m, line, len, subscribe, &ctl, &state);
	return state;
}

int
sl_rpc_poll(struct sl_mgr *m, json_t **resp)
{
	struct sl_rpc_err e = {0, ""};
	json_t *out = NULL, *result;
	char err[512];
	int rc;

	*resp = NULL;
	if (!g_park.active || !sl_rules_poll(m, &rc, &out, err, sizeof(err)))
		return 0;
	result = g_park.pk.done(m, &g_park.pk, rc, out, err, &e);
	json_decref(out);
	*resp = reply(g_park.id, result, &e);
	park_clear();
	return 1;
}

void
sl_rpc_close(void)
{
	park_clear();
}
