/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids's rule sets: a rule file read, checked and compiled into a
 * Hyperscan database with its scratch space (ids_db_build, which uses
 * nothing of the NF, so a reload runs it in a thread), the divert
 * services looked up (ids_db_resolve, on the NF's thread), and the
 * SIGHUP reload that builds a new set aside and swaps it in between two
 * packets.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hs.h>

#include "sluice/nf.h"

#include "ids.h"
#include "rules.h"

/* ---- rule sets ----------------------------------------------------- */

void
ids_db_free(struct ids_db *d)
{
	if (d == NULL)
		return;
	hs_free_scratch(d->scratch);
	hs_free_database(d->db);
	ids_rules_free(d->rs);
	ids_parts_free(&d->parts);
	free(d->divert_to);
	free(d->hits);
	free(d);
}

/* The services of the divert rules: waited for at start (their NFs may
 * be starting too), looked up once on reload. */
int
ids_db_resolve(struct sl_nf *nf, struct ids_db *d, const char *path, int wait,
	       char *err, size_t size)
{
	for (uint32_t i = 0; i < d->rs->n_rules; i++) {
		const struct ids_rule *r = &d->rs->rules[i];
		int id;

		d->divert_to[i] = -1;
		if (r->action != IDS_DIVERT)
			continue;
		id = wait ? sl_service_id_wait(nf, r->divert,
					       IDS_SERVICE_WAIT_MS)
			  : sl_service_id(nf, r->divert);
		if (id < 0) {
			snprintf(err, size,
				 "%s:%u: sid %u: option 'divert': no service "
				 "'%s' (sluice status lists them)",
				 path, r->line, r->sid, r->divert);
			return -EINVAL;
		}
		d->divert_to[i] = id;
	}
	return 0;
}

/* Reads, checks and compiles the rule file (divert services are looked
 * up after, on the NF's thread: ids_db_resolve). Nothing running changes
 * and nothing of the NF is used, so a reload runs it in a thread. */
int
ids_db_build(const char *path, struct ids_db **out, char *err, size_t size)
{
	struct ids_db *d = calloc(1, sizeof(*d));
	int rc;

	if (d == NULL) {
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	rc = ids_rules_load(path, &d->rs, err, size);
	if (rc == 0) {
		d->divert_to = calloc(d->rs->n_rules, sizeof(*d->divert_to));
		d->hits = calloc(d->rs->n_rules, sizeof(*d->hits));
		if (d->divert_to == NULL || d->hits == NULL) {
			snprintf(err, size, "out of memory");
			rc = -ENOMEM;
		}
	}
	if (rc == 0)
		rc = ids_rules_compile(d->rs, path, &d->db, &d->parts, err,
				       size);
	if (rc == 0 && hs_alloc_scratch(d->db, &d->scratch) != HS_SUCCESS) {
		snprintf(err, size, "cannot allocate Hyperscan scratch space");
		rc = -ENOMEM;
	}
	if (rc != 0) {
		ids_db_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void
ids_print_rules(const struct ids_state *st, const char *verb)
{
	const struct ids_ruleset *rs = st->cur->rs;
	size_t ssize = 0;

	hs_stream_size(st->cur->db, &ssize);
	fprintf(stderr,
		IDS_PROG ": %s %" PRIu32 " rules from %s (Hyperscan %s, "
			 "%zu bytes of stream state per flow direction)\n",
		verb, rs->n_rules, st->rules_path, hs_version(), ssize);
	for (uint32_t i = 0; i < rs->n_rules && i < IDS_PRINT_RULES; i++) {
		const struct ids_rule *r = &rs->rules[i];

		fprintf(stderr,
			IDS_PROG ":   sid %" PRIu32 " rev %" PRIu32
				 " %s%s%s (line %" PRIu32 "): %s\n",
			r->sid, r->rev, ids_action_name(r->action),
			r->divert[0] ? " to " : "", r->divert, r->line,
			r->msg[0] ? r->msg : "-");
	}
	if (rs->n_rules > IDS_PRINT_RULES)
		fprintf(stderr, IDS_PROG ":   ... and %" PRIu32 " more\n",
			rs->n_rules - IDS_PRINT_RULES);
	fflush(stderr);
}

static void
ids_reload_failed(struct ids_state *st, const char *why)
{
	st->c.reloads_failed++;
	ids_print(st, "reload", sl_now_ns());
	fprintf(stderr,
		IDS_PROG ": reload failed, keeping the %" PRIu32
			 " current rules: %s\n",
		st->cur->rs->n_rules, why);
	fflush(stderr);
}

static void *
ids_builder(void *arg)
{
	struct ids_build *b = arg;

	b->rc = ids_db_build(b->path, &b->db, b->err, sizeof(b->err));
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Starts a build in a thread (signals blocked in it, so that SIGHUP and
 * SIGTERM reach the NF thread); packets go on through the current rules. */
static void
ids_reload_start(struct ids_state *st)
{
	struct ids_build *b = calloc(1, sizeof(*b));
	sigset_t all, old;
	char why[128];
	int rc;

	if (b == NULL) {
		ids_reload_failed(st, "out of memory");
		return;
	}
	b->path = st->rules_path;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&b->thread, NULL, ids_builder, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		free(b);
		snprintf(why, sizeof(why),
			 "cannot start a thread to compile them (%s); send "
			 "SIGHUP again",
			 strerror(rc));
		ids_reload_failed(st, why);
		return;
	}
	st->build = b;
	fprintf(stderr,
		IDS_PROG ": reloading %s in the background; packets go on "
			 "through the %" PRIu32 " current rules until it is "
			 "compiled\n",
		st->rules_path, st->cur->rs->n_rules);
	fflush(stderr);
}

/* Takes the new rules (their divert services looked up now), or says
 * why not. */
static void
ids_reload_take(struct ids_state *st, struct sl_nf *nf, struct ids_build *b)
{
	if (b->rc == 0 && ids_db_resolve(nf, b->db, st->rules_path, 0, b->err,
					 sizeof(b->err)) != 0) {
		ids_db_free(b->db);
		b->rc = -EINVAL;
	}
	if (b->rc != 0) {
		ids_reload_failed(st, b->err);
		return;
	}
	st->c.reloads++;
	ids_print(st, "reload", sl_now_ns());
	ids_close_streams(st);
	ids_db_free(st->cur);
	st->cur = b->db;
	ids_print_rules(st, "reloaded");
}

/* If the build has finished, between two packets: swap, then start the
 * reload a SIGHUP asked for during it. */
void
ids_reload_poll(struct ids_state *st, struct sl_nf *nf)
{
	struct ids_build *b = st->build;

	if (b == NULL || !__atomic_load_n(&b->done, __ATOMIC_ACQUIRE))
		return;
	pthread_join(b->thread, NULL);
	st->build = NULL;
	ids_reload_take(st, nf, b);
	free(b);
	if (st->reload_again) {
		st->reload_again = 0;
		ids_reload_start(st);
	}
}

void
ids_reload(struct sl_nf *nf)
{
	struct ids_state *st = sl_nf_priv(nf);

	ids_reload_poll(st, nf);
	if (st->build == NULL) {
		ids_reload_start(st);
		return;
	}
	st->reload_again = 1; /* the file may have changed since it was read */
	fprintf(stderr,
		IDS_PROG ": SIGHUP during a reload: %s will be read again once "
			 "the current one is compiled\n",
		st->rules_path);
	fflush(stderr);
}

/* At exit during a build: waits for it; its rules are not used. */
void
ids_reload_discard(struct ids_state *st)
{
	if (st->build == NULL)
		return;
	pthread_join(st->build->thread, NULL);
	if (st->build->rc == 0)
		ids_db_free(st->build->db);
	free(st->build);
	st->build = NULL;
}
