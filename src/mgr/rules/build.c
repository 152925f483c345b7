/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rule sets: built from a list (on the builder thread, or here), then
 * published for the RX thread in m->flow->rules; a set replaced is freed
 * after a grace period, once no reader can hold it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_classifier.h"
#include "sluiced.h"

int
mgr_rules_init(struct sl_mgr *m)
{
	struct sl_rules_state *rs = calloc(1, sizeof(*rs));

	m->rules = rs;
	if (rs == NULL)
		return ENOMEM;
	rs->bld.efd = -1;
	pthread_mutex_init(&rs->bld.mu, NULL);
	pthread_cond_init(&rs->bld.cv, NULL);
	return 0;
}

void
mgr_rules_close(struct sl_mgr *m)
{
	struct sl_rules_state *rs = m->rules;

	if (rs == NULL)
		return;
	free(rs->list);
	if (m->flow != NULL) {
		(void)mgr_ruleset_free(m, m->flow->rules);
		m->flow->rules = NULL;
	}
	pthread_mutex_destroy(&rs->bld.mu);
	pthread_cond_destroy(&rs->bld.cv);
	free(rs);
	m->rules = NULL;
}

int
mgr_ruleset_free(struct sl_mgr *m, void *p)
{
	struct sl_ruleset *rs = p;

	(void)m;
	if (rs != NULL) {
		sl_classifier_free(rs->cls);
		free(rs->rules);
		free(rs);
	}
	return 0;
}

int
mgr_ruleset_build(const struct sl_rule *list, uint32_t n,
		  struct sl_ruleset **out, char *err, size_t errlen)
{
	struct sl_ruleset *rs = calloc(1, sizeof(*rs));
	const struct sl_match **mt = NULL;
	int32_t *prio = NULL;
	int rc = ENOMEM;

	if (rs == NULL)
		goto fail;
	rs->n = n;
	rs->rules = malloc(sizeof(*rs->rules) * (n ? n : 1));
	mt = malloc(sizeof(*mt) * (n ? n : 1));
	prio = malloc(sizeof(*prio) * (n ? n : 1));
	if (rs->rules == NULL || mt == NULL || prio == NULL)
		goto fail;
	if (n > 0)
		memcpy(rs->rules, list, sizeof(*rs->rules) * n);
	for (uint32_t i = 0; i < n; i++) {
		mt[i] = &rs->rules[i].match;
		prio[i] = rs->rules[i].priority;
	}
	/* sl_classifier names each build's contexts from a process-wide
	 * counter: two builds never share an rte_acl name. */
	/* The public classifier API answers a negative errno. */
	rc = -sl_classifier_build(mt, prio, n, "sl_rules", &rs->cls, err,
				  errlen);
	if (rc != 0)
		goto fail;
	free(mt);
	free(prio);
	*out = rs;
	return 0;
fail:
	if (rc == ENOMEM)
		snprintf(err, errlen, "out of memory building the rules");
	free(mt);
	free(prio);
	mgr_ruleset_free(NULL, rs);
	return rc;
}

void
mgr_ruleset_publish(struct sl_mgr *m, struct sl_ruleset *rs)
{
	struct sl_ruleset *old =
		__atomic_exchange_n(&m->flow->rules, rs, __ATOMIC_ACQ_REL);

	m->rules->builds++;
	if (old != NULL)
		mgr_flow_defer(m, mgr_ruleset_free, old);
}
