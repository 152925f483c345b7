/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Scaffolding shared by the unit tests of sample NFs: drive the NF's ops
 * through nf_stub.c and get what each call printed to stderr (the caller
 * frees it). Include after <cmocka.h>, nf_stub.h and pkt_build.h.
 */
#ifndef SL_TEST_NF_TEST_H
#define SL_TEST_NF_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"

#include "nf_stub.h"
#include "pkt_build.h"

#define NF_TEST_MAX_BURST 200

static inline void
assert_has(const char *text, const char *line)
{
	if (strstr(text, line) == NULL)
		fail_msg("missing \"%s\" in:\n%s", line, text);
}

/* A new file /tmp/<name>XXXXXX<suffix> (suffix "" for none) holding
 * text, for an NF's configuration; the caller unlinks and frees the path. */
static inline char *
nf_test_write_file(const char *name, const char *suffix, const char *text)
{
	char *path = malloc(64);
	FILE *f;
	int fd;

	assert_non_null(path);
	snprintf(path, 64, "/tmp/%sXXXXXX%s", name, suffix);
	fd = mkstemps(path, (int)strlen(suffix));
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* Replaces the contents of the file at path with text (before a reload). */
static inline void
nf_test_rewrite_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

struct nf_test_send {
	const struct frame *f;
	unsigned n;
};

/* Sends n frames to ops->process as one burst; every one must get
 * SL_NEXT. */
static inline void
nf_test_do_send(void *arg)
{
	const struct nf_test_send *c = arg;
	struct rte_mbuf *m[NF_TEST_MAX_BURST];
	unsigned i;

	assert_true(c->n <= NF_TEST_MAX_BURST);
	for (i = 0; i < c->n; i++) {
		m[i] = stub_mbuf(c->f[i].b, c->f[i].len);
		assert_non_null(m[i]);
	}
	stub_ops->process(stub_nf(), m, (uint16_t)c->n);
	for (i = 0; i < c->n; i++) {
		assert_true(stub_verdict_set(m[i]));
		assert_int_equal(sl_pkt_verdict(m[i]), SL_NEXT);
		stub_mbuf_free(m[i]);
	}
}

/* Sends the frames as one burst at time now; returns what the NF
 * printed. */
static inline char *
send_at(uint64_t now, const struct frame *f, unsigned n)
{
	struct nf_test_send c = {f, n};
	char *out;

	stub_now_ns = now;
	out = stub_capture_stderr(nf_test_do_send, &c);
	assert_non_null(out);
	return out;
}

static inline void
send_quiet(uint64_t now, const struct frame *f, unsigned n)
{
	free(send_at(now, f, n));
}

static inline void
nf_test_do_tick(void *arg)
{
	stub_now_ns = *(uint64_t *)arg;
	stub_ops->tick(stub_nf(), stub_now_ns);
}

/* Calls ops->tick at time now. */
static inline char *
tick_output(uint64_t now)
{
	char *out = stub_capture_stderr(nf_test_do_tick, &now);

	assert_non_null(out);
	return out;
}

struct nf_test_msg {
	const char *key, *value;
};

static inline void
nf_test_do_msg(void *arg)
{
	const struct nf_test_msg *c = arg;

	stub_ops->on_message(stub_nf(), c->key, c->value);
}

/* Calls ops->on_message(key, value). */
static inline char *
msg_output(const char *key, const char *value)
{
	struct nf_test_msg c = {key, value};
	char *out = stub_capture_stderr(nf_test_do_msg, &c);

	assert_non_null(out);
	return out;
}

struct nf_test_reply {
	int64_t id;
	int result;
	const char *reason;
};

static inline void
nf_test_do_reply(void *arg)
{
	const struct nf_test_reply *c = arg;

	stub_ops->on_reply(stub_nf(), c->id, c->result, c->reason);
}

/* Calls ops->on_reply(id, result, reason). */
static inline char *
reply_output(int64_t id, int result, const char *reason)
{
	struct nf_test_reply c = {id, result, reason};
	char *out = stub_capture_stderr(nf_test_do_reply, &c);

	assert_non_null(out);
	return out;
}

/* Calls ops->fini, which must leave no private state behind. */
static inline char *
fini_output(void)
{
	char *out = stub_fini_output();

	assert_non_null(out);
	assert_null(sl_nf_priv(stub_nf()));
	return out;
}

/*
 * Calls ops->init with argv[0] = prog and the given arguments (up to 15,
 * NULL-terminated): it must fail with EINVAL, keep no state and print
 * want.
 */
static inline void
expect_init_error(const char *prog, const char *want, ...)
{
	const char *args[16] = {NULL};
	unsigned n = 0;
	va_list ap;
	char *out;
	int rc;

	va_start(ap, want);
	while (n < 15 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	out = stub_init_output(&rc, prog, args[0], args[1], args[2], args[3],
			       args[4], args[5], args[6], args[7], args[8],
			       args[9], args[10], args[11], args[12], args[13],
			       args[14], NULL);
	assert_int_equal(rc, EINVAL);
	assert_null(sl_nf_priv(stub_nf()));
	assert_has(out, want);
	free(out);
}

#endif /* SL_TEST_NF_TEST_H */
