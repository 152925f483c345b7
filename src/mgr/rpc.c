/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC 2.0 on the control socket (docs/control-socket.md): framing
 * (parse, -32600/-32601/-32602 errors, replies), the lookup of a method in
 * the modules' tables (struct sl_rpc_method, sluiced.h), dispatch and the
 * parked request. The helpers the methods use (errors, params, parking)
 * are base/rpcutil.c's, below every module.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "sluiced.h"
#include "rules/rules.h"

/*
 * Rule changes (rule.add, rule.remove, graph.remove) are built off the
 * control thread (rules.h): the request that starts a build is parked, and
 * its reply made by mgr_rpc_poll once the build is committed. Only the
 * control thread handles them (a struct rpc_ctl is given on it alone: a
 * telemetry thread can neither start a build nor see one half done).
 */
struct rpc_ctl {
	int rules_wait; /* rule changes must wait (one builds, or others
			 * wait their turn) */
	int parked;     /* the method started a build: no reply yet */
};

/* The parked request: the control thread's, the one thread that parks
 * (ctl given), polls the build and closes the socket (main.c runs them all
 * on the main lcore). */
static __thread struct {
	int active;
	json_t *id; /* its id; NULL: a notification (no reply) */
	struct sl_rpc_park pk;
} g_park;

static void
park_clear(void)
{
	json_decref(g_park.id);
	json_decref(g_park.pk.ids);
	free(g_park.pk.graph);
	memset(&g_park, 0, sizeof(g_park));
}

/* ---- lookup and framing --------------------------------------------- */

/* The method named name in the modules' tables (m->modules, in list
 * order), or NULL. */
static const struct sl_rpc_method *
lookup(const struct sl_mgr *m, const char *name)
{
	for (size_t k = 0; k < m->n_modules; k++) {
		const struct sl_rpc_method *r = m->modules[k]->methods;

		for (; r != NULL && r->name != NULL; r++)
			if (strcmp(r->name, name) == 0)
				return r;
	}
	return NULL;
}

json_t *
mgr_rpc_names(const struct sl_mgr *m)
{
	json_t *names = json_array();

	for (size_t k = 0; k < m->n_modules; k++) {
		const struct sl_rpc_method *r = m->modules[k]->methods;

		for (; r != NULL && r->name != NULL; r++)
			json_array_append_new(names, json_string(r->name));
	}
	return names;
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
	    strcmp(json_string_value(json_object_get(req, "jsonrpc")), "2.0") !=
		    0) {
		resp = error_resp(id, SL_RPC_E_REQUEST,
				  "'jsonrpc' must be \"2.0\"");
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

	def = lookup(m, method);
	if (def != NULL && (def->flags & (SL_RPC_RULES | SL_RPC_PARKS)) &&
	    ctl != NULL && (ctl->rules_wait || mgr_rpc_busy(m))) {
		/* Its turn comes when the build under way is committed. */
		*state = SL_RPC_WAIT;
		json_decref(params);
		json_decref(req);
		return NULL;
	}
	if (def == NULL) {
		e.code = SL_RPC_E_METHOD;
		snprintf(
			e.msg, sizeof(e.msg),
			"method '%.200s' not found; 'status' lists the methods",
			method);
	} else if (def->flags & SL_RPC_SUBSCRIBE) {
		*subscribe = 1;
		result = json_pack("{s:b}", "subscribed", 1);
	} else if ((def->flags & (SL_RPC_RULES | SL_RPC_PARKS)) &&
		   ctl == NULL) {
		e.code = SL_RPC_E_FAILED;
		snprintf(e.msg, sizeof(e.msg),
			 "method '%s' changes rules: send it on the control "
			 "socket",
			 method);
	} else {
		struct sl_rpc_park pk;

		result = def->fn(m, params, &e);
		if (mgr_rpc_park_take(&pk)) {
			if (ctl != NULL) {
				ctl->parked = 1;
				g_park.pk = pk;
			} else { /* only the control thread parks */
				json_decref(pk.ids);
				free(pk.graph);
			}
		}
	}
	json_decref(params);
	if (ctl != NULL && ctl->parked) {
		/* The reply comes from mgr_rpc_poll. */
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
mgr_rpc_handle_ctl(struct sl_mgr *m, const char *line, size_t len,
		   int rules_wait, int *subscribe, json_t **resp)
{
	struct rpc_ctl ctl = {.rules_wait = rules_wait};
	enum sl_rpc_state state;

	*resp = handle(m, line, len, subscribe, &ctl, &state);
	return state;
}

int
mgr_rpc_poll(struct sl_mgr *m, json_t **resp)
{
	struct sl_rpc_err e = {0, ""};
	json_t *out = NULL, *result;
	char err[512];
	int rc;

	*resp = NULL;
	if (!g_park.active)
		return 0;
	if (!(g_park.pk.ready != NULL
		      ? g_park.pk.ready
		      : mgr_rules_poll)(m, &rc, &out, err, sizeof(err)))
		return 0;
	result = g_park.pk.done(m, &g_park.pk, rc, out, err, &e);
	json_decref(out);
	*resp = reply(g_park.id, result, &e);
	park_clear();
	return 1;
}

void
mgr_rpc_close(void)
{
	park_clear();
}

int
mgr_rpc_busy(const struct sl_mgr *m)
{
	return g_park.active || mgr_rules_busy(m->rules);
}
