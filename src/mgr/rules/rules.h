/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's flow rules in batches (src/mgr/rules/): every change of the
 * rule set rebuilds its rte_acl classifier, whose cost grows with the
 * number of rules, so N rules added one request at a time cost O(N^2)
 * (docs/control-socket.md has the figures). A batch is one build, made by
 * a builder thread while the control thread serves everything else.
 *   build.c    a rule set built from a list, published for the RX thread
 *   builder.c  the builder thread, its jobs, their commit (mgr_rules_poll)
 *   change.c   rule.add / rule.remove / graph.remove checked and started
 *   list.c     rule.list
 *
 * Part of sluiced.h, which includes it: include "sluiced.h".
 */
#ifndef SL_MGR_RULES_H
#define SL_MGR_RULES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sl_match.h"
#include "sluiced.h"

struct sl_rule;
struct sl_ruleset;
struct sl_rules_job;

/*
 * The rules' state (m->rules). The control thread owns all of it except
 * the builder's hand-over (bld: todo and stop under mu, done atomic).
 */
struct sl_rules_state {
	struct sl_rule *list; /* the committed rules, in order, [n] */
	uint32_t n;
	uint32_t last_id;              /* ids are never reused */
	uint64_t builds;               /* rule sets built and published */
	struct sl_rules_job *job;      /* handed out, not committed */
	struct sl_rules_job *prepared; /* graph.remove's, for its removal */
	struct {
		pthread_t t;
		int started;
		int efd; /* eventfd: readable when a job is built */
		pthread_mutex_t mu;
		pthread_cond_t cv;
		struct sl_rules_job *todo; /* under mu: for the builder */
		int stop;                  /* under mu */
		struct sl_rules_job *done; /* atomic: built, to commit */
	} bld;
};

/* m->rules, empty (mgr_rules_module's init); 0 or ENOMEM. */
int mgr_rules_init(struct sl_mgr *m);
/* Frees the committed list and rule set (no reader is left). */
void mgr_rules_close(struct sl_mgr *m);

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
 * control loop commits it with mgr_rules_poll once it is built. One change
 * at a time: while one builds (mgr_rules_busy) the starts refuse with
 * EBUSY, and rpc.c holds back every rule change until it is committed.
 * Readers (rule.list, flows naming their rule) see the committed rules.
 * All of these run on the control thread only.
 */

/* The builder thread, started before the control loop, stopped after it
 * (a build under way finishes first; an uncommitted change is dropped).
 * Start: 0, or the errno of eventfd or pthread_create with err set. */
int mgr_rules_builder_start(struct sl_rules_state *rs, char *err,
			    size_t errlen);
void mgr_rules_builder_stop(struct sl_rules_state *rs);
/* An eventfd, readable when a change is built: for the control loop. */
int mgr_rules_builder_fd(const struct sl_rules_state *rs);

/* A change is being built (or built and not committed yet). */
int mgr_rules_busy(const struct sl_rules_state *rs);

/**
 * Starts adding rules r[0..n) with one classifier build: all of them or
 * none; their ids are the next n, in the order given.
 * @return 0 (started), or a positive errno and the reason in err (EBUSY,
 * ENOTSUP: --flow-lookup off, ENOSPC: over --max-rules, ENOMEM).
 */
int mgr_rules_add_start(struct sl_mgr *m, const struct sl_rule_spec *r,
			uint32_t n, char *err, size_t errlen);

/**
 * Starts removing the rules ids[0..n) with one classifier build: all of
 * them or none (an unknown or repeated id removes nothing).
 * @return 0 (started), or a positive errno and err (EBUSY, EINVAL: an id
 * given twice, ENOENT: an unknown id, ENOMEM).
 */
int mgr_rules_remove_start(struct sl_mgr *m, const uint32_t *ids, uint32_t n,
			   char *err, size_t errlen);

/**
 * Starts building the rules without graph's (graph.remove): 0 with
 * *started 1 (once mgr_rules_poll has returned, mgr_graph_remove commits it
 * through mgr_rules_remove_graph, or mgr_rules_prepared_drop drops it) or 0
 * (the graph has no rule: nothing to build); or a positive errno and err.
 */
int mgr_rules_remove_graph_start(struct sl_mgr *m, uint16_t graph, int *started,
				 char *err, size_t errlen);
void mgr_rules_prepared_drop(struct sl_rules_state *rs);
/* Removes every rule of a graph (graph.c, the graph's removal): commits
 * the prepared build if it is this graph's, else builds here. Returns how
 * many were removed. */
uint32_t mgr_rules_remove_graph(struct sl_mgr *m, uint16_t graph);

/**
 * Commits the started change if it is built: 0 while it builds (or none
 * was started); 1 when done, with *rc 0 (committed: rule set published,
 * events sent; for an add, *out the added rules as rule.add gives them,
 * highest priority first) or EINVAL and err (the committed rules stay as
 * they were).
 */
int mgr_rules_poll(struct sl_mgr *m, int *rc, json_t **out, char *err,
		   size_t errlen);

/**
 * rule.list: at most limit rules from position offset (highest priority
 * first), with total, truncated and builds (classifier builds so far).
 */
json_t *mgr_rules_list(struct sl_mgr *m, uint32_t offset, uint32_t limit);
json_t *mgr_rules_json(struct sl_mgr *m); /* every rule */

/* ---- inside rules/ ---------------------------------------------------- */

/* Builds a rule set from list[0..n) (copied): touches no state, so the
 * builder thread may run it. 0 and *out, or a positive errno and err. */
int mgr_ruleset_build(const struct sl_rule *list, uint32_t n,
		      struct sl_ruleset **out, char *err, size_t errlen);
/* Frees a rule set no reader holds (m unused: a deferred call's form). */
int mgr_ruleset_free(struct sl_mgr *m, void *rs);
/* Publishes rs for the RX thread (control thread); the old set is freed
 * once no reader holds it. */
void mgr_ruleset_publish(struct sl_mgr *m, struct sl_ruleset *rs);
/* Hands j (whose list is the new committed list) to the builder; frees j
 * and refuses with ESHUTDOWN if the builder is not running. */
int mgr_rules_job_start(struct sl_rules_state *rs, struct sl_rules_job *j,
			char *err, size_t errlen);
/* Makes j's list the committed one and publishes its rule set. */
void mgr_rules_job_commit(struct sl_mgr *m, struct sl_rules_job *j);
void mgr_rules_job_free(struct sl_rules_job *j);
json_t *mgr_rule_json(const struct sl_mgr *m, const struct sl_rule *r,
		      json_int_t flows);
/* qsort/bsearch order of uint32_t */
int mgr_rules_u32_cmp(const void *a, const void *b);

enum sl_rules_kind { SL_RULES_ADD, SL_RULES_REMOVE, SL_RULES_REMOVE_GRAPH };

/* One change for the builder: at most one exists (rs->job); rpc.c holds
 * back every other rule change until it is committed, so a job's checks
 * still hold when it commits. */
struct sl_rules_job {
	enum sl_rules_kind kind;
	struct sl_rule *list; /* the new list, in order, [n] */
	uint32_t n;
	uint32_t first_id, n_new; /* SL_RULES_ADD: ids first_id.. */
	uint32_t *ids, n_ids;     /* SL_RULES_REMOVE: as given */
	uint16_t graph;           /* SL_RULES_REMOVE_GRAPH */
	/* set by the builder */
	struct sl_ruleset *rs;
	int rc;
	char err[256];
};

#endif /* SL_MGR_RULES_H */
