/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rule builder: a thread that builds one rule set at a time off the
 * control thread, whose loop keeps serving the socket, the NFs and the
 * watchdog meanwhile (a build of 4,096 random rules takes seconds). The
 * control thread validates a change against the committed list
 * (change.c), hands the builder a job (the new list), and commits it
 * when it is built (mgr_rules_poll): rule set published, list replaced,
 * events sent.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sluiced.h"

void
mgr_rules_job_free(struct sl_rules_job *j)
{
	if (j == NULL)
		return;
	mgr_ruleset_free(NULL, j->rs); /* never published: no reader */
	free(j->list);
	free(j->ids);
	free(j);
}

static void *
builder_main(void *arg)
{
	struct sl_rules_state *rs = arg;

	for (;;) {
		struct sl_rules_job *j;
		uint64_t one = 1;
		ssize_t w;

		pthread_mutex_lock(&rs->bld.mu);
		while (!rs->bld.stop && rs->bld.todo == NULL)
			pthread_cond_wait(&rs->bld.cv, &rs->bld.mu);
		j = rs->bld.todo;
		rs->bld.todo = NULL;
		pthread_mutex_unlock(&rs->bld.mu);
		if (j == NULL)
			return NULL; /* stopping */
		j->rc = mgr_ruleset_build(j->list, j->n, &j->rs, j->err,
					  sizeof(j->err));
		__atomic_store_n(&rs->bld.done, j, __ATOMIC_RELEASE);
		/* Wakes the control loop (which also looks every 5 ms). */
		w = write(rs->bld.efd, &one, sizeof(one));
		(void)w;
	}
}

int
mgr_rules_builder_start(struct sl_rules_state *rs, char *err, size_t errlen)
{
	sigset_t all, old;
	int rc;

	rs->bld.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rs->bld.efd < 0) {
		rc = errno;
		snprintf(err, errlen, "rule builder: eventfd: %s",
			 strerror(rc));
		return rc;
	}
	/* Signals (SIGINT, SIGTERM) stay the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&rs->bld.t, NULL, builder_main, rs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "rule builder: cannot start a thread: %s",
			 strerror(rc));
		close(rs->bld.efd);
		rs->bld.efd = -1;
		return rc;
	}
	rs->bld.started = 1;
	return 0;
}

int
mgr_rules_builder_fd(const struct sl_rules_state *rs)
{
	return rs->bld.efd;
}

void
mgr_rules_builder_stop(struct sl_rules_state *rs)
{
	if (rs == NULL)
		return;
	if (rs->bld.started) {
		/* A build under way finishes first (seconds at most). */
		pthread_mutex_lock(&rs->bld.mu);
		rs->bld.stop = 1;
		pthread_cond_signal(&rs->bld.cv);
		pthread_mutex_unlock(&rs->bld.mu);
		pthread_join(rs->bld.t, NULL);
		rs->bld.started = 0;
	}
	/* Not committed: dropped (sluiced stops). */
	mgr_rules_job_free(rs->job);
	rs->job = NULL;
	rs->bld.done = NULL;
	rs->bld.todo = NULL;
	mgr_rules_job_free(rs->prepared);
	rs->prepared = NULL;
	if (rs->bld.efd >= 0)
		close(rs->bld.efd);
	rs->bld.efd = -1;
}

int
mgr_rules_busy(const struct sl_rules_state *rs)
{
	return rs->job != NULL;
}

int
mgr_rules_job_start(struct sl_rules_state *rs, struct sl_rules_job *j,
		    char *err, size_t errlen)
{
	if (!rs->bld.started) {
		snprintf(err, errlen,
			 "the rule builder is not running (sluiced is "
			 "stopping)");
		mgr_rules_job_free(j);
		return ESHUTDOWN;
	}
	rs->job = j;
	pthread_mutex_lock(&rs->bld.mu);
	rs->bld.todo = j;
	pthread_cond_signal(&rs->bld.cv);
	pthread_mutex_unlock(&rs->bld.mu);
	return 0;
}

void
mgr_rules_job_commit(struct sl_mgr *m, struct sl_rules_job *j)
{
	struct sl_rules_state *rs = m->rules;

	free(rs->list);
	rs->list = j->list;
	rs->n = j->n;
	j->list = NULL;
	mgr_ruleset_publish(m, j->rs);
	j->rs = NULL;
}

/* Commits a built add: the new rules, as rule.add gives them, in *out. */
static void
commit_add(struct sl_mgr *m, struct sl_rules_job *j, json_t **out)
{
	struct sl_rules_state *rs = m->rules;
	json_t *a = json_array();

	mgr_rules_job_commit(m, j);
	rs->last_id += j->n_new;
	for (uint32_t i = 0; i < rs->n; i++) {
		if (rs->list[i].id < j->first_id)
			continue;
		json_t *x = mgr_rule_json(m, &rs->list[i], -1);

		mgr_event(m, "rule.added", json_deep_copy(x));
		json_array_append_new(a, x);
	}
	*out = a;
}

int
mgr_rules_poll(struct sl_mgr *m, int *rc, json_t **out, char *err,
	       size_t errlen)
{
	struct sl_rules_state *rs = m->rules;
	struct sl_rules_job *j = rs->job;

	if (j == NULL || __atomic_load_n(&rs->bld.done, __ATOMIC_ACQUIRE) != j)
		return 0;
	rs->bld.done = NULL;
	rs->job = NULL;
	*out = NULL;
	*rc = j->rc;
	if (j->rc != 0) { /* the committed list stays */
		snprintf(err, errlen, "%s", j->err);
		*rc = EINVAL;
		mgr_rules_job_free(j);
		return 1;
	}
	err[0] = '\0';
	switch (j->kind) {
	case SL_RULES_ADD:
		commit_add(m, j, out);
		break;
	case SL_RULES_REMOVE:
		mgr_rules_job_commit(m, j);
		for (uint32_t i = 0; i < j->n_ids; i++)
			mgr_event(m, "rule.removed",
				  json_pack("{s:I}", "id",
					    (json_int_t)j->ids[i]));
		break;
	case SL_RULES_REMOVE_GRAPH:
		/* Committed by mgr_rules_remove_graph, when graph.c removes
		 * the graph (next, on this thread). */
		mgr_rules_job_free(rs->prepared);
		rs->prepared = j;
		return 1;
	}
	mgr_rules_job_free(j);
	return 1;
}
