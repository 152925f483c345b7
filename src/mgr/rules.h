/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's flow rules in batches (src/mgr/flow.c): every change of the
 * rule set rebuilds its rte_acl classifier, whose cost grows with the
 * number of rules, so N rules added one request at a time cost O(N^2)
 * (docs/control-socket.md has the figures). A batch is one build, made by
 * a builder thread while the control thread serves everything else.
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

/*
 * Rule changes are built off the control thread (a build of 4,096 random
 * rules takes seconds): a *_start call checks the change against the
 * committed rules and hands the new list to the builder thread; the
 * control loop commits it with sl_rules_poll once it is built. One change
 * at a time: while one builds (sl_rules_busy) the starts refuse with
 * -EBUSY, and rpc.c holds back every rule change until it is committed.
 * Readers (rule.list, flows naming their rule) see the committed rules.
 * All of these run on the control thread only.
 */

/* The builder thread, started before the control loop, stopped after it
 * (a build under way finishes first; an uncommitted change is dropped). */
int sl_rules_builder_start(char *err, size_t errlen);
void sl_rules_builder_stop(void);
/* An eventfd, readable when a change is built: for the control loop. */
int sl_rules_builder_fd(void);

/* A change is being built (or built and not committed yet). */
int sl_rules_busy(void);

/**
 * Starts adding rules r[0..n) with one classifier build: all of them or
 * none; their ids are the next n, in the order given.
 * @return 0 (started), or a negative errno and the reason in err.
 */
int sl_rules_add_start(struct sl_mgr *m, const struct sl_rule_spec *r,
		       uint32_t n, char *err, size_t errlen);

/**
 * Starts removing the rules ids[0..n) with one classifier build: all of
 * them or none (an unknown or repeated id removes nothing).
 */
int sl_rules_remove_start(struct sl_mgr *m, const uint32_t *ids, uint32_t n,
			  char *err, size_t errlen);

/**
 * Starts building the rules without graph's (graph.remove): 1 (started;
 * once sl_rules_poll has returned, sl_graph_remove commits it through
 * sl_rules_remove_graph, or sl_rules_prepared_drop drops it), 0 (the graph
 * has no rule: nothing to build) or a negative errno and err.
 */
int sl_rules_remove_graph_start(struct sl_mgr *m, uint16_t graph, char *err,
				size_t errlen);
void sl_rules_prepared_drop(void);

/**
 * Commits the started change if it is built: 0 while it builds (or none
 * was started); 1 when done, with *rc 0 (committed: rule set published,
 * events sent; for an add, *out the added rules as rule.add gives them,
 * highest priority first) or a negative errno and err (the committed rules
 * stay as they were).
 */
int sl_rules_poll(struct sl_mgr *m, int *rc, json_t **out, char *err,
		  size_t errlen);

/**
 * rule.list: at most limit rules from position offset (highest priority
 * first), with total, truncated and builds (classifier builds so far).
 */
json_t *sl_rules_list(struct sl_mgr *m, uint32_t offset, uint32_t limit);

#endif /* SL_MGR_RULES_H */
