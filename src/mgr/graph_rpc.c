/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The graph module (mgr_graph_module): the default chain of --chain at
 * start-up, and the JSON-RPC methods of chains and graphs (graph.c):
 * chain.get, chain.set, graph.apply, graph.get, graph.remove (a rule
 * change: its rules are rebuilt without it first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sl_chain.h"
#include "sluiced.h"
#include "rules/rules.h"

static json_t *
rpc_chain_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	return json_pack("{s:i, s:o}", "version", (int)mgr_chain_version(m),
			 "hops", mgr_chain_json(m));
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
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'hops' (array of strings) is missing, e.g. "
			"{\"hops\": [\"firewall\", \"port:out\"]}");
	n = json_array_size(hops);
	if (n > RTE_DIM(h))
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'hops': more than %zu hops",
				    RTE_DIM(h));
	for (i = 0; i < n; i++) {
		json_t *v = json_array_get(hops, i);

		if (!json_is_string(v))
			return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
					    "param 'hops'[%zu] is not a string",
					    i);
		h[i] = json_string_value(v);
	}
	if (mgr_chain_apply(m, h, (uint16_t)n, err, sizeof(err)) != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	out = json_pack("{s:i}", "version", (int)mgr_chain_version(m));
	note = mgr_graph_idle_note(m, 0);
	if (out != NULL && note != NULL)
		json_object_set_new(out, "note", note);
	else
		json_decref(note);
	return out;
}

static json_t *
rpc_graph_apply(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[512];
	json_t *out = NULL;
	int rc = mgr_graph_apply_json(m, p, &out, err, sizeof(err));

	/* A bad graph is bad params; a good one sluiced has no room for now
	 * (--max-graphs, versions still in flight, memory) is a failure. */
	if (rc != 0)
		return mgr_rpc_fail(e,
				    rc == EINVAL ? SL_RPC_E_PARAMS
						 : SL_RPC_E_FAILED,
				    "%s", err);
	return out;
}

static json_t *
rpc_graph_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[256];
	json_t *r =
		mgr_graphs_json(m,
				json_string_value(json_object_get(p, "name")),
				err, sizeof(err));

	return r != NULL ? r : mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
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
		return mgr_rpc_fail(e, SL_RPC_E_FAILED,
				    "graph '%s' was not removed: its rules "
				    "could not be rebuilt without it: %s",
				    pk->graph ? pk->graph : "?", err);
	if (pk->graph == NULL)
		mgr_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	else if (mgr_graph_remove(m, pk->graph, &rules, msg, sizeof(msg)) != 0)
		mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", msg);
	else
		result = json_pack("{s:s, s:I}", "removed", pk->graph,
				   "rules_removed", (json_int_t)rules);
	mgr_rules_prepared_drop(m->rules); /* if not taken */
	return result;
}

static json_t *
rpc_graph_remove(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *name = json_string_value(json_object_get(p, "name"));
	char err[256];
	uint32_t rules = 0;

	int id, started;

	if (name == NULL)
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'name' (graph name) is missing");
	/* Its rules go first: a rule set without them is built off this
	 * thread, and the graph is removed when it is committed. */
	id = mgr_graph_lookup(m, name);
	if (id > 0) {
		if (mgr_rules_remove_graph_start(m, (uint16_t)id, &started, err,
						 sizeof(err)) != 0)
			return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		if (started) {
			struct sl_rpc_park pk = {.done = graph_removed,
						 .graph = strdup(name)};

			if (pk.graph == NULL) /* the build runs anyway */
				mgr_log(m, "out of memory for graph.remove %s",
					name);
			return mgr_rpc_park(&pk);
		}
	}
	if (mgr_graph_remove(m, name, &rules, err, sizeof(err)) != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_pack("{s:s, s:I}", "removed", name, "rules_removed",
			 (json_int_t)rules);
}

static const struct sl_rpc_method sl_graph_methods[] = {
	{"chain.get", rpc_chain_get, 0},
	{"chain.set", rpc_chain_set, 0},
	{"graph.apply", rpc_graph_apply, 0},
	{"graph.get", rpc_graph_get, 0},
	{"graph.remove", rpc_graph_remove, SL_RPC_RULES},
	{NULL, NULL, 0},
};

/* The default chain of --chain, once the ports are up. */
static int
graph_init(struct sl_mgr *m, char *err, size_t errlen)
{
	char text[SL_CHAIN_MAX_TEXT], *hops[1024], why[512];
	uint16_t n;

	if (m->o.chain == NULL)
		return 0;
	if (strlen(m->o.chain) >= sizeof(text)) {
		snprintf(err, errlen, "--chain is longer than %zu characters",
			 sizeof(text) - 1);
		return EINVAL;
	}
	strcpy(text, m->o.chain);
	if (sl_chain_split(text, hops, 1024, &n, why, sizeof(why)) != 0 ||
	    mgr_chain_apply(m, (const char *const *)hops, n, why,
			    sizeof(why)) != 0) {
		snprintf(err, errlen, "--chain: %s", why);
		return EINVAL;
	}
	return 0;
}

const struct mgr_module mgr_graph_module = {
	.name = "graph",
	.init = graph_init,
	.close = mgr_graphs_close,
	.methods = sl_graph_methods,
};
