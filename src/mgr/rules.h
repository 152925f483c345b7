/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's flow rules in batches (src/mgr/flow.c): every change of the
 * rule set rebuilds its rte_acl classifier, whose cost grows with the
 * number of rules, so N rules added one request at a time cost O(N^2)
 * (docs/control-socket.md has the figures). A batch is one build.
 */
#ifndef SL_MGR_RULES_H
#define SL_MGR_RULES_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sl_match.h"

struct sl_mgr;

/* One rule to add. */
struct sl_rule_spec {
	uint16_t graph;
	int32_t priority;
	struct sl_match match;
};

/**
 * Adds rules r[0..n) with one classifier build: all of them or none.
 * @return 0 and *out, a JSON array of the rules as rule.add gives them;
 *   or a negative errno and the reason in err.
 */
int sl_rules_add(struct sl_mgr *m, const struct sl_rule_spec *r, uint32_t n,
		 json_t **out, char *err, size_t errlen);

/**
 * Removes the rules ids[0..n) with one classifier build: all of them or
 * none (an unknown or repeated id removes nothing).
 */
int sl_rules_remove(struct sl_mgr *m, const uint32_t *ids, uint32_t n,
		    char *err, size_t errlen);

/**
 * rule.list: at most limit rules from position offset (highest priority
 * first), with total, truncated and builds (classifier builds so far).
 */
json_t *sl_rules_list(struct sl_mgr *m, uint32_t offset, uint32_t limit);

#endif /* SL_MGR_RULES_H */
