/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rule changes (control thread): checked against the committed list, the
 * new list made, and handed to the builder (builder.c); graph.remove's
 * rules dropped with the graph.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluiced.h"

int
mgr_rules_u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Rule order: priority, highest first; equal: oldest (lowest id) first. */
static int
rule_order(const void *a, const void *b)
{
	const struct sl_rule *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Refuses n more rules if they do not fit: 0 or ENOSPC and err. */
static int
rules_fit(const struct sl_mgr *m, uint32_t n, char *err, size_t errlen)
{
	uint32_t used = m->rules->n;

	if (n <= m->o.max_rules - used)
		return 0;
	if (n == 1)
		snprintf(err, errlen,
			 "all %u rules are in use: remove one or raise "
			 "--max-rules",
			 m->o.max_rules);
	else
		snprintf(err, errlen,
			 "%u rules would make %llu, more than --max-rules %u "
			 "(%u in use): remove some or raise --max-rules",
			 n, (unsigned long long)used + n, m->o.max_rules, used);
	return ENOSPC;
}

int
mgr_rules_add_start(struct sl_mgr *m, const struct sl_rule_spec *r, uint32_t n,
		    char *err, size_t errlen)
{
	struct sl_rules_state *rs = m->rules;
	struct sl_rules_job *j;
	struct sl_rule *nl;
	uint32_t first_id = rs->last_id + 1;

	if (rs->job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return EBUSY;
	}
	if (m->o.flow_lookup == SL_LOOKUP_OFF) {
		snprintf(err, errlen,
			 "rules need the flow table, and sluiced runs with "
			 "--flow-lookup off: restart it with --flow-lookup "
			 "cached");
		return ENOTSUP;
	}
	if (rules_fit(m, n, err, errlen) != 0)
		return ENOSPC;
	/* A new list, so the committed one stays whole until it is built. */
	j = calloc(1, sizeof(*j));
	nl = malloc(sizeof(*nl) * ((size_t)rs->n + n + 1));
	if (j == NULL || nl == NULL) {
		free(j);
		free(nl);
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	if (rs->n > 0)
		memcpy(nl, rs->list, sizeof(*nl) * rs->n);
	for (uint32_t i = 0; i < n; i++)
		nl[rs->n + i] = (struct sl_rule){.id = first_id + i,
						 .graph = r[i].graph,
						 .priority = r[i].priority,
						 .match = r[i].match};
	/* The list was in order and the new ids are the newest: a sort of
	 * the whole list is O(N log N), once per batch. */
	qsort(nl, (size_t)rs->n + n, sizeof(*nl), rule_order);
	*j = (struct sl_rules_job){.kind = SL_RULES_ADD,
				   .list = nl,
				   .n = rs->n + n,
				   .first_id = first_id,
				   .n_new = n};
	return mgr_rules_job_start(rs, j, err, errlen);
}

/* Names the first of ids[0..n) (in the order given) that is no rule. */
static void
name_unknown(const struct sl_rules_state *rs, const uint32_t *ids, uint32_t n,
	     char *err, size_t errlen)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k;

		for (k = 0; k < rs->n && rs->list[k].id != ids[i]; k++)
			;
		if (k == rs->n) {
			snprintf(err, errlen,
				 "no rule with id %u; see rule.list%s", ids[i],
				 n > 1 ? " (no rule was removed)" : "");
			return;
		}
	}
}

int
mgr_rules_remove_start(struct sl_mgr *m, const uint32_t *ids, uint32_t n,
		       char *err, size_t errlen)
{
	struct sl_rules_state *rs = m->rules;
	struct sl_rules_job *j;
	struct sl_rule *nl;
	uint32_t *want, j_n = 0;
	int rc = ENOMEM;

	if (rs->job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return EBUSY;
	}
	want = malloc(sizeof(*want) * ((size_t)n + 1));
	nl = malloc(sizeof(*nl) * ((size_t)rs->n + 1));
	j = calloc(1, sizeof(*j));
	if (want == NULL || nl == NULL || j == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (n > 0)
		memcpy(want, ids, sizeof(*want) * n);
	qsort(want, n, sizeof(*want), mgr_rules_u32_cmp);
	rc = EINVAL;
	for (uint32_t i = 1; i < n; i++)
		if (want[i] == want[i - 1]) {
			snprintf(err, errlen,
				 "rule id %u is given twice: give each once",
				 want[i]);
			goto fail;
		}
	for (uint32_t i = 0; i < rs->n; i++)
		if (bsearch(&rs->list[i].id, want, n, sizeof(*want),
			    mgr_rules_u32_cmp) == NULL)
			nl[j_n++] = rs->list[i];
	if (rs->n - j_n != n) {
		name_unknown(rs, ids, n, err, errlen);
		rc = ENOENT;
		goto fail;
	}
	/* The events name the ids in the order given. */
	if (n > 0)
		memcpy(want, ids, sizeof(*want) * n);
	*j = (struct sl_rules_job){.kind = SL_RULES_REMOVE,
				   .list = nl,
				   .n = j_n,
				   .ids = want,
				   .n_ids = n};
	return mgr_rules_job_start(rs, j, err, errlen);
fail:
	free(want);
	free(nl);
	free(j);
	return rc;
}

int
mgr_rules_remove_graph_start(struct sl_mgr *m, uint16_t graph, int *started,
			     char *err, size_t errlen)
{
	struct sl_rules_state *rs = m->rules;
	struct sl_rules_job *j;
	struct sl_rule *nl;
	uint32_t k = 0;
	int rc;

	*started = 0;
	if (rs->job != NULL) {
		snprintf(err, errlen, "another rule change is being built");
		return EBUSY;
	}
	for (uint32_t i = 0; i < rs->n; i++)
		k += rs->list[i].graph != graph;
	if (k == rs->n)
		return 0; /* no rule of that graph: nothing to build */
	j = calloc(1, sizeof(*j));
	nl = malloc(sizeof(*nl) * ((size_t)k + 1));
	if (j == NULL || nl == NULL) {
		free(j);
		free(nl);
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	k = 0;
	for (uint32_t i = 0; i < rs->n; i++)
		if (rs->list[i].graph != graph)
			nl[k++] = rs->list[i];
	*j = (struct sl_rules_job){.kind = SL_RULES_REMOVE_GRAPH,
				   .list = nl,
				   .n = k,
				   .graph = graph};
	rc = mgr_rules_job_start(rs, j, err, errlen);
	*started = rc == 0;
	return rc;
}

uint32_t
mgr_rules_remove_graph(struct sl_mgr *m, uint16_t graph)
{
	struct sl_rules_state *rs = m->rules;
	struct sl_ruleset *set;
	uint32_t removed = 0, j = 0;
	char err[256];

	if (rs->prepared != NULL && rs->prepared->graph == graph) {
		/* Built off the control thread (graph.remove). */
		removed = rs->n - rs->prepared->n;
		mgr_rules_job_commit(m, rs->prepared);
		mgr_rules_job_free(rs->prepared);
		rs->prepared = NULL;
		return removed;
	}
	for (uint32_t i = 0; i < rs->n; i++)
		if (rs->list[i].graph == graph)
			removed++;
	if (removed == 0)
		return 0;
	/* Not prepared: built here, on the control thread (no caller does
	 * this now). */
	for (uint32_t i = 0; i < rs->n; i++)
		if (rs->list[i].graph != graph)
			rs->list[j++] = rs->list[i];
	rs->n = j;
	if (mgr_ruleset_build(rs->list, rs->n, &set, err, sizeof(err)) == 0)
		mgr_ruleset_publish(m, set);
	else
		mgr_log(m, "rules after removing graph %u: %s", graph, err);
	return removed;
}

void
mgr_rules_prepared_drop(struct sl_rules_state *rs)
{
	mgr_rules_job_free(rs->prepared);
	rs->prepared = NULL;
}
