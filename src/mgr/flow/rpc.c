/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC methods of the flow table: flow.list, flow.get, flow.delete.
 */
#include <errno.h>
#include <string.h>

#include "sluiced.h"
#include "flow/flow.h"

/* Filters of flow.list / flow.delete: 0, or EINVAL with e filled. */
static int
param_filter(struct sl_mgr *m, json_t *p, const char *const *extra,
	     size_t n_extra, struct sl_flow_filter *f, struct sl_rpc_err *e)
{
	json_t *v;

	f->graph = SL_GRAPH_NONE;
	f->service = SL_SERVICE_NONE;
	f->instance = SL_INSTANCE_NONE;
	if (mgr_rpc_param_match(m, p, extra, n_extra, &f->match, &f->has_match,
				e))
		return EINVAL;
	if (json_object_get(p, "graph") != NULL) {
		int g = mgr_rpc_param_graph(m, p, e);

		if (g < 0)
			return EINVAL;
		f->graph = (uint16_t)g;
	}
	if (json_object_get(p, "service") != NULL) {
		int s = mgr_rpc_param_service(m, p, "service", e);

		if (s < 0)
			return EINVAL;
		f->service = (uint16_t)s;
	}
	v = json_object_get(p, "instance");
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= m->shm->max_nfs) {
			mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				     "param 'instance' must be an "
				     "instance id");
			return EINVAL;
		}
		if (f->service == SL_SERVICE_NONE) {
			/* Pins are per service: an instance alone would match
			 * nothing it says. */
			mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"param 'instance' needs 'service' "
				"(the service whose pinned instance it is)");
			return EINVAL;
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

	if (lim != NULL &&
	    (!json_is_integer(lim) || json_integer_value(lim) < 0 ||
	     json_integer_value(lim) > 100000))
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'limit' must be an integer in 0..100000");
	if (param_filter(m, p, extra, RTE_DIM(extra), &f, e) != 0)
		return NULL;
	return mgr_rpc_fits_out(
		m,
		mgr_flows_list(m, &f,
			       lim ? (uint32_t)json_integer_value(lim) : 100),
		"ask for fewer flows (limit) or narrow the filters", e);
}

/* The flow named by params id or key: 0 and its position, or a positive
 * errno with e filled (ENOTSUP: no table, EINVAL, ENOENT: no such flow). */
static int
param_flow(struct sl_mgr *m, json_t *p, uint32_t *pos, struct sl_rpc_err *e)
{
	json_t *id = json_object_get(p, "id");
	const char *key = json_string_value(json_object_get(p, "key"));
	struct sl_5tuple t;

	if (m->shm->flow.hash == NULL) {
		mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"sluiced runs with --flow-lookup off: no flow table");
		return ENOTSUP;
	}
	if (json_is_integer(id)) {
		json_int_t v = json_integer_value(id);

		if (v < 0 || v >= m->shm->flow.capacity ||
		    sl_flow_entry(m->shm, (uint32_t)v)->state == SL_FLOW_FREE) {
			mgr_rpc_fail(e, SL_RPC_E_FAILED,
				     "no flow with id %lld; see flow.list",
				     (long long)v);
			return ENOENT;
		}
		*pos = (uint32_t)v;
		return 0;
	}
	if (key == NULL) {
		mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"give the flow as 'id' or as 'key' (\"tcp 10.0.0.1:1234 "
			"> 10.0.0.2:80\")");
		return EINVAL;
	}
	if (sl_5tuple_parse(key, &t) != 0) {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS,
			     "param 'key' '%s' is not a flow key like \"tcp "
			     "10.0.0.1:1234 > 10.0.0.2:80\" or \"udp "
			     "[2001:db8::1]:53 > [2001:db8::2]:5353\" (IPv6 "
			     "addresses in brackets)",
			     key);
		return EINVAL;
	}
	if (mgr_flow_find(m, &t, pos) != 0) {
		mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"no flow '%s' in the table (it may have aged out); see "
			"flow.list",
			key);
		return ENOENT;
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
	r = mgr_flow_json(m, pos);
	return r != NULL ? r
			 : mgr_rpc_fail(e, SL_RPC_E_FAILED,
					"the flow just went away");
}

static json_t *
rpc_flow_delete(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	static const char *const extra[] = {"all",      "graph", "service",
					    "instance", "id",    "key"};
	struct sl_flow_filter f;
	uint32_t pos;

	if (json_object_get(p, "id") != NULL ||
	    json_object_get(p, "key") != NULL) {
		if (param_flow(m, p, &pos, e) != 0)
			return NULL;
		return json_pack("{s:I}", "deleted",
				 (json_int_t)mgr_flows_delete(m, NULL, pos));
	}
	if (param_filter(m, p, extra, RTE_DIM(extra), &f, e) != 0)
		return NULL;
	if (!json_is_true(json_object_get(p, "all")) && !f.has_match &&
	    f.graph == SL_GRAPH_NONE && f.service == SL_SERVICE_NONE)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"flow.delete needs 'id', 'key', filters, or "
			"\"all\": true");
	return json_pack("{s:I}", "deleted",
			 (json_int_t)mgr_flows_delete(m, &f, -1));
}

static const struct sl_rpc_method sl_flow_methods[] = {
	{"flow.list", rpc_flow_list, 0},
	{"flow.get", rpc_flow_get, 0},
	{"flow.delete", rpc_flow_delete, 0},
	{NULL, NULL, 0},
};

static int
flow_init(struct sl_mgr *m, char *err, size_t errlen)
{
	(void)errlen;
	err[0] = '\0'; /* mgr_flow_init says why */
	return mgr_flow_init(m);
}

/* The flow table (after rules and requests in main.c's list: their init
 * comes first and their close, which reads m->flow, too). */
const struct mgr_module mgr_flow_module = {
	.name = "flow",
	.init = flow_init,
	.close = mgr_flow_close,
	.methods = sl_flow_methods,
};
