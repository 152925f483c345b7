/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's helpers for NF code (src/nflib/sl_helpers.c) on their own:
 * sl_nf_table_create()'s tag, whose length DPDK's ring names bound.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_hash.h>

#include "sluice/nf.h"

#include "nf_stub.h"

struct create_call {
	const char *tag;
	struct rte_hash *h;
	void *slots;
	uint32_t n_slots;
	int rc;
};

static void
do_create(void *arg)
{
	struct create_call *c = arg;
	const struct sl_nf_table_spec spec = {
		.prog = "sluice-test",
		.tag = c->tag,
		.what = "flow",
		.whats = "flows",
		.entries = 64,
		.key_len = 16,
		.bytes_per_key = 74,
		.slot_size = 8,
	};

	c->rc = sl_nf_table_create(stub_nf(), &spec, &c->h, &c->slots,
				   &c->n_slots);
}

/* Creates a table tagged tag; returns its stderr (caller frees). */
static char *
create(struct create_call *c, const char *tag)
{
	memset(c, 0, sizeof(*c));
	c->tag = tag;
	return stub_capture_stderr(do_create, c);
}

static void
test_tag_length(void **state)
{
	static const char *const bad[] = {"slmonitor1",
					  "a-tag-of-27-characters-long", ""};
	char longest[SL_NF_TABLE_TAG_MAX + 1];
	struct create_call c;
	char *err;

	(void)state;
	assert_int_equal(SL_NF_TABLE_TAG_MAX, 9);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[512];

		err = create(&c, bad[i]);
		assert_int_equal(c.rc, EINVAL);
		assert_null(c.h);
		snprintf(
			want, sizeof(want),
			"sluice-test: the flow table's tag '%s' is not 1 to 9 "
			"characters: DPDK keeps 28 of the names rte_hash makes "
			"from it (HT_EXT_<tag><pid>_<instance>); use a shorter "
			"sl_nf_table_spec.tag\n",
			bad[i]);
		assert_string_equal(err, want);
		free(err);
	}
	/* The longest tag makes a table, and again after it is freed. */
	memset(longest, 't', SL_NF_TABLE_TAG_MAX);
	longest[SL_NF_TABLE_TAG_MAX] = '\0';
	for (int round = 0; round < 2; round++) {
		err = create(&c, longest);
		assert_int_equal(c.rc, 0);
		assert_string_equal(err, "");
		assert_non_null(c.h);
		assert_true(c.n_slots >= 64);
		rte_hash_free(c.h);
		free(c.slots);
		free(err);
	}
}

/* sl_read_file(): the whole file, NUL-terminated; each error's text. */
static void
test_read_file(void **state)
{
	char path[] = "/tmp/sl_helpers_test_XXXXXX", err[256], want[300];
	char *text = (char *)1;
	size_t len = 7;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("0123456789", f);
	fclose(f);
	assert_int_equal(sl_read_file(path, 10, &text, &len, err, sizeof(err)),
			 0);
	assert_int_equal(len, 10);
	assert_string_equal(text, "0123456789");
	free(text);
	/* One byte over the bound. */
	assert_int_equal(sl_read_file(path, 9, &text, &len, err, sizeof(err)),
			 EFBIG);
	assert_null(text);
	assert_int_equal(len, 0);
	snprintf(want, sizeof(want), "%s: larger than 9 bytes", path);
	assert_string_equal(err, want);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(sl_read_file(path, 9, &text, &len, err, sizeof(err)),
			 ENOENT);
	assert_null(text);
	snprintf(want, sizeof(want), "%s: cannot open: %s", path,
		 strerror(ENOENT));
	assert_string_equal(err, want);
	/* A directory opens but does not read. */
	assert_int_equal(sl_read_file("/tmp", 9, &text, &len, err, sizeof(err)),
			 EIO);
	assert_string_equal(err, "/tmp: read error");
}

static int
setup(void **state)
{
	(void)state;
	return stub_eal_init() == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	stub_eal_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag_length),
		cmocka_unit_test(test_read_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
