/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC methods of cross-layer requests from the control plane:
 * flow.request, flow.requests, flow.request.remove.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sluiced.h"
#include "registry/registry.h"
#include "requests/requests.h"

/* A hop named like a graph edge: service, port:NAME or drop. 0, or
 * EINVAL with e filled. */
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
		id = mgr_port_by_name(m, h + 5);
		if (id >= 0) {
			*hop = SL_HOP_PORT((uint16_t)id);
			return 0;
		}
	} else {
		if (mgr_service_get(m, h, 0, &id, dummy, sizeof(dummy)) == 0) {
			*hop = SL_HOP_SERVICE((uint16_t)id);
			return 0;
		}
	}
	mgr_rpc_fail(e, SL_RPC_E_PARAMS,
		     "param 'to' '%s': no such service or port", h);
	return EINVAL;
}

/* The event of a request made over the control socket, applied or not:
 * an nf.message from "control", or a flow.request whose nf and instance
 * are null (no NF made it). */
static void
request_event(struct sl_mgr *m, const struct sl_req *r, const char *type,
	      json_t *flow, int rc, const char *err, uint32_t applied,
	      uint32_t kept)
{
	json_t *ev;
	const char *sn = m->shm->services[r->service].name;

	if (r->kind == SL_REQ_MESSAGE) {
		ev = json_pack("{s:s, s:s, s:s, s:s}", "from", "control",
			       "service", sn, "key", r->mkey, "value",
			       r->value);
	} else {
		char fk[160];
		const char *fl =
			json_string_value(json_object_get(flow, "key"));

		snprintf(fk, sizeof(fk), "%s", fl ? fl : "(match)");
		ev = json_pack("{s:n, s:n, s:s, s:s, s:s, s:s, s:I}", "nf",
			       "instance", "type", type, "flow", fk, "service",
			       sn, "result", rc == 0 ? "applied" : "rejected",
			       "applied", (json_int_t)applied);
		if (r->kind == SL_REQ_CHANGE_DEFAULT)
			json_object_set_new(ev, "to",
					    mgr_hop_json(m->shm, r->to));
	}
	if (rc != 0)
		json_object_set_new(ev, "reason", json_string(err));
	if (kept != 0)
		json_object_set_new(ev, "kept", json_integer(kept));
	mgr_event(m, r->kind == SL_REQ_MESSAGE ? "nf.message" : "flow.request",
		  ev);
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
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'type' must be skip_me, request_me, "
				    "change_default or message");
	s = mgr_rpc_param_service(m, p, "service", e);
	if (s < 0)
		return NULL;
	r.service = (uint16_t)s;
	if (r.kind == SL_REQ_MESSAGE) {
		const char *k = json_string_value(json_object_get(p, "key"));
		const char *v = json_string_value(json_object_get(p, "value"));

		if (k == NULL || v == NULL)
			return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
					    "a message needs 'key' and 'value' "
					    "(strings)");
		if (k[0] == '\0' || strlen(k) >= sizeof(r.mkey) ||
		    strlen(v) >= sizeof(r.value))
			return mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"a message's key is 1 to %zu bytes and its "
				"value at most %zu (got %zu and %zu): "
				"shorten them",
				sizeof(r.mkey) - 1, sizeof(r.value) - 1,
				strlen(k), strlen(v));
		snprintf(r.mkey, sizeof(r.mkey), "%s", k);
		snprintf(r.value, sizeof(r.value), "%s", v);
	} else {
		const char *key =
			json_string_value(json_object_get(flow, "key"));
		json_t *mt = json_object_get(flow, "match");
		int has;

		if (key != NULL) {
			r.exact = 1;
			if (sl_5tuple_parse(key, &r.tuple) != 0)
				return mgr_rpc_fail(
					e, SL_RPC_E_PARAMS,
					"flow key '%s' is not like \"tcp "
					"10.0.0.1:1234 > 10.0.0.2:80\" or "
					"\"udp [2001:db8::1]:53 > "
					"[2001:db8::2]:5353\" (IPv6 addresses "
					"in brackets)",
					key);
		} else if (json_is_object(mt)) {
			if (mgr_rpc_param_match(m, mt, NULL, 0, &r.match, &has,
						e))
				return NULL;
		} else {
			return mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"param 'flow' must be {\"key\": \"tcp "
				"a:p > b:q\"} or {\"match\": {...}}");
		}
		if (r.kind == SL_REQ_CHANGE_DEFAULT) {
			const char *to =
				json_string_value(json_object_get(p, "to"));

			if (to == NULL)
				return mgr_rpc_fail(
					e, SL_RPC_E_PARAMS,
					"change_default needs 'to' (the "
					"new default next hop)");
			if (param_hop(m, to, &r.to, e) != 0)
				return NULL;
		}
	}
	rc = mgr_flow_request(m, &r, &applied, &kept, err, sizeof(err));
	request_event(m, &r, type, flow, rc, err, applied, kept);
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s rejected: %s", type,
				    err);
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
	return mgr_flow_requests_json(m);
}

static json_t *
rpc_flow_request_remove(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *id = json_object_get(p, "id");
	char err[256];

	if (!json_is_integer(id) || json_integer_value(id) < 1 ||
	    json_integer_value(id) > UINT32_MAX)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'id' (a kept request's id, from "
			"flow.requests) is missing or not a positive "
			"integer");
	if (mgr_flow_request_remove(m, (uint32_t)json_integer_value(id), err,
				    sizeof(err)) != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_pack("{s:I}", "removed", json_integer_value(id));
}

static const struct sl_rpc_method sl_requests_methods[] = {
	{"flow.request", rpc_flow_request, 0},
	{"flow.requests", rpc_flow_requests, 0},
	{"flow.request.remove", rpc_flow_request_remove, 0},
	{NULL, NULL, 0},
};

static int
requests_init(struct sl_mgr *m, char *err, size_t errlen)
{
	if (mgr_requests_init(m) == 0) {
		/* NFs' flow requests come in through the registry's ring. */
		m->registry->flow_request = mgr_flow_request;
		return 0;
	}
	snprintf(err, errlen, "out of memory for the graph table");
	return ENOMEM;
}

const struct mgr_module mgr_requests_module = {
	.name = "requests",
	.init = requests_init,
	.close = mgr_requests_close,
	.methods = sl_requests_methods,
};
