/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC methods of rules: rule.add, rule.remove (rule changes, built
 * off the control thread: they park, rules.h) and rule.list.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluiced.h"
#include "rules/rules.h"

/* One rule of rule.add (p: its params) into r; 0 or EINVAL with e set.
 * where: "" or "rules[N]: " for messages. */
static int
param_rule(struct sl_mgr *m, json_t *p, struct sl_rule_spec *r,
	   const char *where, struct sl_rpc_err *e)
{
	static const char *const extra[] = {"graph", "priority"};
	json_t *pr = json_object_get(p, "priority");
	int has, g;

	if (!json_is_object(p)) {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS,
			     "%sa rule must be an object of graph, "
			     "priority and match fields",
			     where);
		return EINVAL;
	}
	if (pr != NULL &&
	    (!json_is_integer(pr) || json_integer_value(pr) < -1000000 ||
	     json_integer_value(pr) > 1000000)) {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS,
			     "%sparam 'priority' must be an integer in "
			     "-1000000..1000000 (higher wins)",
			     where);
		return EINVAL;
	}
	if (mgr_rpc_param_match(m, p, extra, RTE_DIM(extra), &r->match, &has,
				e) != 0 ||
	    (g = mgr_rpc_param_graph(m, p, e)) < 0) {
		if (where[0] != '\0') {
			char msg[sizeof(e->msg)];

			snprintf(msg, sizeof(msg), "%s%s", where, e->msg);
			snprintf(e->msg, sizeof(e->msg), "%s", msg);
		}
		return EINVAL;
	}
	r->graph = (uint16_t)g;
	r->priority = pr ? (int32_t)json_integer_value(pr) : 0;
	return 0;
}

/* rule.add {graph, ...}'s reply: the rule added. */
static json_t *
rule_added(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc, json_t *out,
	   const char *err, struct sl_rpc_err *e)
{
	(void)m;
	(void)pk;
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_incref(json_array_get(out, 0));
}

/* rule.add {rules}'s reply from the added rules. */
static json_t *
rules_added(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc, json_t *out,
	    const char *err, struct sl_rpc_err *e)
{
	/* The ids are consecutive, in the order given (the rules themselves
	 * could be more than a client's --control-out-kb: rule.list pages). */
	json_int_t first = INT64_MAX;
	json_t *x;
	size_t i;

	(void)m;
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	json_array_foreach(out, i, x)
	{
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
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
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
		if (mgr_rules_add_start(m, &one, 1, err, sizeof(err)) != 0)
			return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		return mgr_rpc_park(&(struct sl_rpc_park){.done = rule_added});
	}
	/* A batch: one classifier build for all of them. */
	if (json_object_size(p) != 1)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'rules' goes alone: give each rule's "
			"fields inside it");
	n = json_array_size(list);
	if (!json_is_array(list) || n == 0)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'rules' must be a non-empty list of rules");
	if (n > m->o.max_rules)
		return mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"%zu rules, more than --max-rules %u: add fewer "
			"or raise --max-rules",
			n, m->o.max_rules);
	r = malloc(sizeof(*r) * n);
	if (r == NULL)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	for (i = 0; i < n; i++) {
		snprintf(where, sizeof(where), "rules[%zu]: ", i);
		if (param_rule(m, json_array_get(list, i), &r[i], where, e)) {
			free(r);
			return NULL;
		}
	}
	rc = mgr_rules_add_start(m, r, (uint32_t)n, err, sizeof(err));
	free(r);
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return mgr_rpc_park(&(struct sl_rpc_park){.done = rules_added, .n = n});
}

static json_t *
rpc_rule_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *off = json_object_get(p, "offset");
	json_t *lim = json_object_get(p, "limit");
	const char *k;
	json_t *v;

	json_object_foreach(p, k, v)
	{
		if (strcmp(k, "offset") != 0 && strcmp(k, "limit") != 0)
			return mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"unknown param '%s': rule.list takes "
				"offset and limit",
				k);
	}
	if (off != NULL &&
	    (!json_is_integer(off) || json_integer_value(off) < 0 ||
	     json_integer_value(off) > UINT32_MAX))
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'offset' must be an integer from 0 (the "
			"rules to skip)");
	if (lim != NULL &&
	    (!json_is_integer(lim) || json_integer_value(lim) < 0 ||
	     json_integer_value(lim) > 100000))
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'limit' must be an integer in 0..100000");
	return mgr_rpc_fits_out(
		m,
		mgr_rules_list(m, off ? (uint32_t)json_integer_value(off) : 0,
			       lim ? (uint32_t)json_integer_value(lim) : 10000),
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
			return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
					    "param 'id' (rule id) is missing");
		uint32_t one = (uint32_t)json_integer_value(id);

		if (mgr_rules_remove_start(m, &one, 1, err, sizeof(err)) != 0)
			return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
		return mgr_rpc_park(
			&(struct sl_rpc_park){.done = rules_removed,
					      .one = json_integer_value(id)});
	}
	n = json_array_size(ids);
	if (id != NULL || !json_is_array(ids) || n == 0)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'ids' must be a non-empty list of rule ids, "
			"without 'id'");
	v = malloc(sizeof(*v) * n);
	if (v == NULL)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *x = json_array_get(ids, i);

		if (!json_is_integer(x) || json_integer_value(x) < 1 ||
		    json_integer_value(x) > UINT32_MAX) {
			free(v);
			return mgr_rpc_fail(
				e, SL_RPC_E_PARAMS,
				"ids[%zu] is not a rule id; see rule.list", i);
		}
		v[i] = (uint32_t)json_integer_value(x);
	}
	rc = mgr_rules_remove_start(m, v, (uint32_t)n, err, sizeof(err));
	free(v);
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return mgr_rpc_park(&(struct sl_rpc_park){.done = rules_removed,
						  .ids = json_incref(ids)});
}

static const struct sl_rpc_method sl_rules_methods[] = {
	{"rule.add", rpc_rule_add, SL_RPC_RULES},
	{"rule.list", rpc_rule_list, 0},
	{"rule.remove", rpc_rule_remove, SL_RPC_RULES},
	{NULL, NULL, 0},
};

static int
rules_init(struct sl_mgr *m, char *err, size_t errlen)
{
	if (mgr_rules_init(m) == 0)
		return 0;
	snprintf(err, errlen, "out of memory for the graph table");
	return ENOMEM;
}

/* Rule changes are built off the control thread (rules.h). */
static void
rules_start(struct sl_mgr *m)
{
	char err[512];

	if (mgr_rules_builder_start(m->rules, err, sizeof(err)) != 0)
		mgr_log(m, "%s: rule changes will be refused", err);
}

/* A build under way finishes first. */
static void
rules_stop(struct sl_mgr *m)
{
	mgr_rules_builder_stop(m->rules);
}

const struct mgr_module mgr_rules_module = {
	.name = "rules",
	.init = rules_init,
	.start = rules_start,
	.stop = rules_stop,
	.close = mgr_rules_close,
	.methods = sl_rules_methods,
};
