/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC method stats: the counters (stats/stats.h).
 */
#include "sluiced.h"
#include "stats/stats.h"

/* stats: the counters (stats/stats.h); {"schema": true}: what each is. */
static json_t *
rpc_stats(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *schema = json_object_get(p, "schema");

	if (schema != NULL && !json_is_boolean(schema))
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'schema' must be true or false");
	if (json_is_true(schema))
		return mgr_stats_schema();
	return mgr_stats_json(m);
}

static const struct sl_rpc_method sl_stats_methods[] = {
	{"stats", rpc_stats, 0},
	{NULL, NULL, 0},
};

const struct mgr_module mgr_stats_module = {
	.name = "stats",
	.methods = sl_stats_methods,
};
