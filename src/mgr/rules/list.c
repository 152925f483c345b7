/* SPDX-License-Identifier: BSD-3-Clause */
/* rule.list (control thread): the committed rules, with their flows. */
#include <stdlib.h>

#include "sluiced.h"

json_t *
mgr_rule_json(const struct sl_mgr *m, const struct sl_rule *r, json_int_t flows)
{
	json_t *o = json_object();
	uint16_t slot = m->shm->graph_cur[r->graph];

	json_object_set_new(o, "id", json_integer(r->id));
	json_object_set_new(o, "graph",
			    json_string(slot != SL_GRAPH_NONE &&
							m->shm->gtab[slot]
						? m->shm->gtab[slot]->name
						: "?"));
	json_object_set_new(o, "priority", json_integer(r->priority));
	mgr_flow_match_json(m->shm, &r->match, o);
	if (flows >= 0)
		json_object_set_new(o, "flows", json_integer(flows));
	return o;
}

struct rule_pos {
	uint32_t id;
	uint32_t i; /* in the committed list */
};

static int
rule_pos_cmp(const void *a, const void *b)
{
	return mgr_rules_u32_cmp(&((const struct rule_pos *)a)->id,
				 &((const struct rule_pos *)b)->id);
}

/* Flows per rule (count[i]: rule list[i]'s), counted from the table: one
 * pass, each flow's rule found by id in O(log rules). NULL if out of
 * memory. */
static json_int_t *
rule_flows(const struct sl_mgr *m)
{
	const struct sl_rules_state *rs = m->rules;
	const struct sl_shm *shm = m->shm;
	json_int_t *count = calloc(rs->n + 1, sizeof(*count));
	struct rule_pos *by_id = malloc(sizeof(*by_id) * (rs->n + 1));

	if (count == NULL || by_id == NULL) {
		free(count);
		free(by_id);
		return NULL;
	}
	for (uint32_t i = 0; i < rs->n; i++)
		by_id[i] = (struct rule_pos){.id = rs->list[i].id, .i = i};
	qsort(by_id, rs->n, sizeof(*by_id), rule_pos_cmp);
	for (uint32_t p = 0;
	     rs->n > 0 && shm->flow.hash != NULL && p < shm->flow.capacity;
	     p++) {
		const struct sl_flow_entry *e = sl_flow_entry(shm, p);
		struct rule_pos k = {.id = m->flow->side[p].rule}, *f;

		if (e->state == SL_FLOW_FREE || k.id == 0)
			continue;
		f = bsearch(&k, by_id, rs->n, sizeof(*by_id), rule_pos_cmp);
		if (f != NULL)
			count[f->i]++;
	}
	free(by_id);
	return count;
}

json_t *
mgr_rules_list(struct sl_mgr *m, uint32_t offset, uint32_t limit)
{
	const struct sl_rules_state *rs = m->rules;
	json_t *a = json_array();
	uint32_t end = offset >= rs->n          ? offset
		       : limit > rs->n - offset ? rs->n
						: offset + limit;
	json_int_t *count = rule_flows(m);

	for (uint32_t i = offset; i < end; i++)
		json_array_append_new(a, mgr_rule_json(m, &rs->list[i],
						       count ? count[i] : 0));
	free(count);
	return json_pack("{s:o, s:I, s:b, s:I}", "rules", a, "total",
			 (json_int_t)rs->n, "truncated", end < rs->n, "builds",
			 (json_int_t)rs->builds);
}

json_t *
mgr_rules_json(struct sl_mgr *m)
{
	return mgr_rules_list(m, 0, UINT32_MAX);
}
