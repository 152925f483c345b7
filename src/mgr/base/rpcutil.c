/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every module's JSON-RPC methods use, below every module (rpc.c,
 * above them, does the framing and dispatch): an error (mgr_rpc_fail),
 * the params several methods share (match fields, a graph), the size
 * check of a list reply, and parking a request (mgr_rpc_park).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "sluiced.h"

json_t *
mgr_rpc_fail(struct sl_rpc_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return NULL;
}

/* The park the method running on this thread asked for, until rpc.c
 * takes it right after the method returns (thread-local: only the
 * control thread parks; a telemetry thread never does). */
static __thread struct {
	int parked;
	struct sl_rpc_park pk;
} t_park;

json_t *
mgr_rpc_park(const struct sl_rpc_park *pk)
{
	t_park.parked = 1;
	t_park.pk = *pk;
	return NULL;
}

int
mgr_rpc_park_take(struct sl_rpc_park *pk)
{
	if (!t_park.parked)
		return 0;
	*pk = t_park.pk;
	memset(&t_park, 0, sizeof(t_park));
	return 1;
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
mgr_rpc_param_match(struct sl_mgr *m, json_t *p, const char *const *extra,
		    size_t n_extra, struct sl_match *mt, int *has,
		    struct sl_rpc_err *e)
{
	const char *k;
	json_t *v;
	char err[256];

	*has = 0;
	json_object_foreach(p, k, v)
	{
		if (is_key(k, match_keys, RTE_DIM(match_keys))) {
			*has = 1;
			continue;
		}
		if (strcmp(k, "in_port") == 0 || is_key(k, extra, n_extra))
			continue;
		mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"unknown param '%s': use proto, src, dst, sport, dport, "
			"in_port%s",
			k, n_extra ? " and the method's own" : "");
		return -1; /* none: e says why */
	}
	if (sl_match_from_json(p, mt, err, sizeof(err)) != 0) {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS, "%s", err);
		return -1; /* none: e says why */
	}
	v = json_object_get(p, "in_port");
	if (v != NULL) {
		int port = json_is_string(v)
				   ? mgr_port_by_name(m, json_string_value(v))
				   : -1;

		if (port < 0) {
			mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"param 'in_port': no port named '%s'; use a name "
				"from port.list",
				json_is_string(v) ? json_string_value(v) : "?");
			return -1; /* none: e says why */
		}
		mt->in_port_lo = mt->in_port_hi = (uint16_t)port;
		*has = 1;
	}
	return 0;
}

int
mgr_rpc_param_graph(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *g = json_string_value(json_object_get(p, "graph"));
	int id;

	if (g == NULL) {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS,
			     "param 'graph' (graph name) is missing");
		return -1; /* none: e says why */
	}
	id = mgr_graph_lookup(m, g);
	if (id < 0)
		mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"no graph named '%s': apply it first (graph.apply)", g);
	return id;
}

/* A list result that would not fit a client's --control-out-kb is
 * refused (it would close the connection unanswered): NULL and the error. */
json_t *
mgr_rpc_fits_out(struct sl_mgr *m, json_t *r, const char *what,
		 struct sl_rpc_err *e)
{
	size_t len = json_dumpb(r, NULL, 0, JSON_COMPACT);

	if (len + 256 <= (size_t)m->o.ctl_out_kb * 1024)
		return r;
	json_decref(r);
	return mgr_rpc_fail(
		e, SL_RPC_E_FAILED,
		"the reply would be %zu KiB, more than --control-out-kb "
		"%u: %s",
		(len + 1023) / 1024, m->o.ctl_out_kb, what);
}
