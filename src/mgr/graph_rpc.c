/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC methods of graphs (graph.c): graph.apply, graph.get,
 * graph.remove (a rule change: its rules are rebuilt without it first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sluiced.h"
#include "rules/rules.h"

static json_t *
rpc_graph_apply(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[512];
	json_t *out = NULL;
	int rc = sl_graph_apply_json(m, p, &out, err, sizeof(err));

	/* A bad graph is bad params; a good one sluiced has no room for now
	 * (--max-graphs, versions still in flight, memory) is a failure. */
	if (rc != 0)
		return sl_rpc_fail(e,
				   rc == -EINVAL ? SL_RPC_E_PARAMS
						 : SL_RPC_E_FAILED,
				   "%s", err);
	return out;
}

static json_t *
rpc_graph_get(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	char err[256];
	json_t *r =
		sl_graphs_json(m, json_string_value(json_object_get(p, "name")),
			       err, sizeof(err));

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

	int id, started;

	if (name == NULL)
		return sl_rpc_fail(e, SL_RPC_E_PARAMS,
				   "param 'name' (graph name) is missing");
	/* Its rules go first: a rule set without them is built off this
	 * thread, and the graph is removed when it is committed. */
	id = sl_graph_lookup(m, name);
	if (id > 0) {
		if (sl_rules_remove_graph_start(m, (uint16_t)id, &started, err,
						sizeof(err)) != 0)
			return sl_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		if (started) {
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

const struct sl_rpc_method sl_graph_methods[] = {
	{"graph.apply", rpc_graph_apply, 0},
	{"graph.get", rpc_graph_get, 0},
	{"graph.remove", rpc_graph_remove, SL_RPC_RULES},
	{NULL, NULL, 0},
};
