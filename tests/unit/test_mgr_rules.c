/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's rules (src/mgr/rules/), linked from the static
 * library sluiced_mgr on a real EAL (mgr_env.h): a change is built by the
 * builder thread and committed by mgr_rules_poll, its rule set published
 * for ingress, and the set it replaced freed only after a grace period.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pkt_build.h"
#include "mgr_env.h"

#define A IP4(10, 0, 0, 1)
#define B IP4(10, 0, 0, 2)

static int
group_setup(void **state)
{
	(void)state;
	return env_eal_setup("mgr_rules");
}

static struct env *
rules_env(void)
{
	struct env *e = env_new(1024, 10000);
	char err[256];

	assert_int_equal(mgr_rules_builder_start(e->m->rules, err, sizeof(err)),
			 0);
	return e;
}

/* Waits for the change under way to be built and commits it: its rc. */
static int
commit(struct env *e, json_t **out)
{
	char err[256];
	int rc = 0;

	for (int i = 0; i < 10000; i++) {
		if (mgr_rules_poll(e->m, &rc, out, err, sizeof(err)) == 1)
			return rc;
		rte_delay_us_sleep(1000);
	}
	fail_msg("the rule build did not finish in 10 s");
	return -1;
}

static struct sl_rule_spec
spec(uint16_t graph, int32_t prio, const char *match)
{
	struct sl_rule_spec r = {.graph = graph, .priority = prio};
	char err[256];

	assert_int_equal(sl_match_parse(match, &r.match, err, sizeof(err)), 0);
	return r;
}

/* An add is built off the control thread: busy (a second change is
 * refused) until committed; then published, with its ids, in order. */
static void
test_add_publish(void **state)
{
	struct env *e = rules_env();
	struct sl_rule_spec r[2] = {spec(0, 10, "proto=udp dport=53"),
				    spec(0, 20, "proto=tcp")};
	const struct sl_ruleset *rs;
	json_t *out = NULL;
	char err[256];

	(void)state;
	assert_null(e->m->flow->rules);
	assert_int_equal(mgr_rules_add_start(e->m, r, 2, err, sizeof(err)), 0);
	assert_true(mgr_rules_busy(e->m->rules));
	assert_int_equal(mgr_rules_add_start(e->m, r, 1, err, sizeof(err)),
			 EBUSY);
	assert_int_equal(commit(e, &out), 0);
	assert_false(mgr_rules_busy(e->m->rules));
	assert_int_equal(json_array_size(out), 2);
	/* Highest priority first; ids in the order given. */
	assert_int_equal(json_integer_value(
				 json_object_get(json_array_get(out, 0), "id")),
			 2);
	json_decref(out);
	rs = e->m->flow->rules;
	assert_non_null(rs);
	assert_int_equal(rs->n, 2);
	assert_int_equal(rs->rules[0].id, 2);
	assert_int_equal(e->m->rules->builds, 1);
	assert_int_equal(e->m->rules->n, 2);
	env_free(e);
}

/* Ingress classifies a new flow with the published set: the entry
 * remembers the rule that matched (in either direction). */
static void
test_classify(void **state)
{
	struct env *e = rules_env();
	struct sl_rule_spec r = spec(0, 10, "proto=udp dport=53");
	struct rte_mbuf *p[2];
	json_t *out = NULL, *list;
	char err[256];

	(void)state;
	assert_int_equal(mgr_rules_add_start(e->m, &r, 1, err, sizeof(err)), 0);
	assert_int_equal(commit(e, &out), 0);
	json_decref(out);
	p[0] = env_udp(B, 53, A, 1000); /* the reply direction matches */
	p[1] = env_udp(A, 1000, B, 80);
	mgr_flow_ingress(e->m->flow, e->shm, p, 2);
	assert_int_equal(e->m->flow->side[env_meta(p[0])->flow].rule, 1);
	assert_int_equal(e->m->flow->side[env_meta(p[1])->flow].rule, 0);
	rte_pktmbuf_free_bulk(p, 2);
	list = mgr_rules_list(e->m, 0, 10);
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(json_object_get(list, "rules"),
						0),
				 "flows")),
			 1);
	json_decref(list);
	env_free(e);
}

/* A set replaced is freed only after a grace period: queued for the
 * control thread, waiting while an NF has not gone round its loop. */
static void
test_reclaim_after_grace(void **state)
{
	struct env *e = rules_env();
	struct sl_rule_spec r = spec(0, 10, "proto=udp");
	struct sl_ruleset *first;
	const struct sl_flow_deferred *d;
	json_t *out = NULL;
	char err[256];
	uint32_t id = 1;

	(void)state;
	assert_int_equal(mgr_rules_add_start(e->m, &r, 1, err, sizeof(err)), 0);
	assert_int_equal(commit(e, &out), 0);
	json_decref(out);
	first = e->m->flow->rules;
	assert_null(e->m->qs.head); /* nothing was replaced */
	assert_int_equal(mgr_rules_remove_start(e->m, &id, 1, err, sizeof(err)),
			 0);
	assert_int_equal(commit(e, &out), 0);
	assert_ptr_not_equal(e->m->flow->rules, first);
	assert_int_equal(e->m->flow->rules->n, 0);
	assert_int_equal(e->m->rules->builds, 2);
	/* The old set waits for a grace period. */
	assert_non_null(e->m->qs.head);
	assert_int_equal(e->m->qs.n, 1);
	assert_ptr_equal(e->m->qs.head->fn, mgr_flow_deferred_run);
	d = container_of(e->m->qs.head, struct sl_flow_deferred, qa);
	assert_ptr_equal(d->p, first);
	assert_ptr_equal(d->fn, mgr_ruleset_free);
	assert_null(e->m->qs.head->next);
	rte_delay_us_sleep(1500);
	assert_false(sl_grace_passed(&e->m->qs.head->grace, e->shm, -1, 1));
	env_grace_pass(e);
	assert_true(sl_grace_passed(&e->m->qs.head->grace, e->shm, -1, 1));
	sl_grace_drain(&e->m->qs, e->m); /* frees it (ASan: once) */
	assert_null(e->m->qs.head);
	assert_int_equal(e->m->qs.n, 0);
	env_free(e);
}

/* Refusals leave the committed rules as they were. */
static void
test_refusals(void **state)
{
	struct env *e = rules_env();
	struct sl_rule_spec r = spec(0, 10, "proto=udp");
	uint32_t ids[2] = {7, 7};
	char err[256];

	(void)state;
	assert_int_equal(mgr_rules_remove_start(e->m, ids, 1, err, sizeof(err)),
			 ENOENT);
	assert_string_equal(err, "no rule with id 7; see rule.list");
	assert_int_equal(mgr_rules_remove_start(e->m, ids, 2, err, sizeof(err)),
			 EINVAL);
	e->m->o.max_rules = 0;
	assert_int_equal(mgr_rules_add_start(e->m, &r, 1, err, sizeof(err)),
			 ENOSPC);
	assert_false(mgr_rules_busy(e->m->rules));
	assert_int_equal(e->m->rules->n, 0);
	env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_publish),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_reclaim_after_grace),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, group_setup, env_eal_teardown);
}
