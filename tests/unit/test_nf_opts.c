/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An NF's option table (struct sl_nf_opt, src/nflib/sl_nf_opts.c) through
 * the libsluice stand-in of nf_stub.c: defaults, each type, its checks and
 * messages, abbreviations, the table check and the --help lines.
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

#include "sluice/nf.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "../../src/nflib/sl_nf_opts.h"

struct t_ctx {
	uint32_t count;
	uint64_t big;
	double secs;
	uint8_t small;
	int flag;
	const char *file;
	const char *name;
	int mode;
	int svc;
	int seen; /* calls of t_parse */
};

static int
t_parse(struct sl_nf *nf, void *priv, const char *value)
{
	struct t_ctx *c = priv;

	(void)nf;
	if (strcmp(value, "bad") == 0) {
		fprintf(stderr, "t: --each 'bad': no\n");
		return EINVAL;
	}
	c->seen++;
	return 0;
}

static const char *const t_modes[] = {"allow", "deny", "log", NULL};

static const struct sl_nf_opt t_opts[] = {
	{.name = "count",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "how many",
	 SL_OPT_AT(struct t_ctx, count),
	 .min = 1,
	 .max = 1000,
	 .def = "128"},
	{.name = "big",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "a lot",
	 SL_OPT_AT(struct t_ctx, big),
	 .max = 1e12,
	 .what = "number"},
	{.name = "secs",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "seconds\nsecond line",
	 SL_OPT_AT(struct t_ctx, secs),
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "0.5"},
	{.name = "small",
	 .letter = 'n',
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "a byte",
	 SL_OPT_AT(struct t_ctx, small),
	 .max = 255},
	{.name = "flag",
	 .type = SL_OPT_FLAG,
	 .help = "a flag",
	 SL_OPT_AT(struct t_ctx, flag),
	 .access = SL_ACCESS_WRITE},
	{.name = "file",
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "a file",
	 SL_OPT_AT(struct t_ctx, file)},
	{.name = "filter",
	 .type = SL_OPT_STRING,
	 .arg = "TEXT",
	 .help = "a text",
	 SL_OPT_AT(struct t_ctx, name)},
	{.name = "mode",
	 .type = SL_OPT_CHOICE,
	 .arg = "MODE",
	 .help = "mode",
	 SL_OPT_AT(struct t_ctx, mode),
	 .choices = t_modes,
	 .def = "deny"},
	{.name = "to",
	 .type = SL_OPT_SERVICE,
	 .arg = "SERVICE",
	 .help = "where",
	 SL_OPT_AT(struct t_ctx, svc)},
	{.name = "each",
	 .type = SL_OPT_STRING,
	 .arg = "X",
	 .help = "any",
	 .parse = t_parse},
	{.name = NULL},
};

static const struct sl_nf_ops t_ops = {
	.name = "t",
	.service = "t",
	.process_pkt = NULL,
	.usage = "usage: t\n",
	.opts = t_opts,
	.priv_size = sizeof(struct t_ctx),
	.opts_help_col = 16,
};

#define opts_with(rc, ...) stub_init_output(rc, "t", __VA_ARGS__)

static const struct t_ctx *
ctx(void)
{
	return sl_nf_priv(stub_nf());
}

static void
test_defaults_and_values(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = opts_with(&rc, NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(ctx()->count, 128);
	assert_true(ctx()->secs == 0.5);
	assert_int_equal(ctx()->mode, 1);
	assert_int_equal(ctx()->svc, -1);
	assert_int_equal(ctx()->flag, 0);
	assert_null(ctx()->file);

	out = opts_with(&rc, "--count", "7", "--big=1000000000000", "--sec",
			"2.25", "-n", "255", "--flag", "--file", "-h",
			"--filter", "x y", "--mode", "log", "--each", "a",
			"--each=b", "-n9", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(ctx()->count, 7);
	assert_true(ctx()->big == 1000000000000ull);
	assert_true(ctx()->secs == 2.25);
	assert_int_equal(ctx()->small, 9);
	assert_int_equal(ctx()->flag, 1);
	assert_string_equal(ctx()->file, "-h");
	assert_string_equal(ctx()->name, "x y");
	assert_int_equal(ctx()->mode, 2);
	assert_int_equal(ctx()->seen, 2);
	free(stub_fini_output());
}

static void
expect_error(const char *text, const char *a1, const char *a2)
{
	char *out;
	int rc;

	out = opts_with(&rc, a1, a2, NULL);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(out, text);
	free(out);
}

static void
test_errors(void **state)
{
	(void)state;
	expect_error("t: --count: '0' is not a whole number from 1 to 1000\n",
		     "--count", "0");
	expect_error("t: --count: '1.5' is not a whole number from 1 to "
		     "1000\n",
		     "--count", "1.5");
	expect_error("t: --big: '-1' is not a number from 0 to "
		     "1000000000000\n",
		     "--big", "-1");
	expect_error("t: --secs: '1e3' is not a number of seconds from 0 to "
		     "86400\n",
		     "--secs", "1e3");
	expect_error("t: --mode 'none': use allow, deny or log\n", "--mode",
		     "none");
	expect_error("t: --to 'x': no such service (sluice status lists "
		     "them)\n",
		     "--to", "x");
	expect_error("t: unrecognized option '--bogus'\nusage: t\n", "--bogus",
		     NULL);
	expect_error("t: option '--fi' is ambiguous\nusage: t\n", "--fi", "x");
	expect_error("t: option --flag takes no value\n", "--flag=1", NULL);
	expect_error("t: option --count needs a value\n", "--count", NULL);
	expect_error("t: unexpected argument 'x'\n", "x", NULL);
	expect_error("t: --each 'bad': no\n", "--each", "bad");
}

static void
test_find(void **state)
{
	const char *v;
	int amb;

	(void)state;
	assert_ptr_equal(nfo_find(t_opts, "--fla", &v, &amb), &t_opts[4]);
	assert_null(v);
	assert_ptr_equal(nfo_find(t_opts, "--file=f", &v, &amb), &t_opts[5]);
	assert_string_equal(v, "f");
	assert_null(nfo_find(t_opts, "--f", &v, &amb));
	assert_int_equal(amb, 1);
	assert_null(nfo_find(t_opts, "--", &v, &amb));
	assert_null(nfo_find(t_opts, "-x", &v, &amb));
	assert_false(nfo_takes_value(&t_opts[4]));
	assert_true(nfo_takes_value(&t_opts[0]));
}

static void
test_check(void **state)
{
	static const struct sl_nf_opt bad_size[] = {
		{.name = "n",
		 .type = SL_OPT_NUMBER,
		 .max = 70000,
		 SL_OPT_AT(struct t_ctx, small)},
		{.name = NULL},
	};
	static const struct sl_nf_opt bad_letter[] = {
		{.name = "x",
		 .letter = 'h',
		 .type = SL_OPT_FLAG,
		 SL_OPT_AT(struct t_ctx, flag)},
		{.name = NULL},
	};
	struct sl_nf_ops ops = t_ops;

	(void)state;
	assert_int_equal(nfo_check(&t_ops, "t"), 0);
	ops.opts = bad_size;
	assert_int_equal(nfo_check(&ops, "t"), EINVAL);
	ops.opts = bad_letter;
	assert_int_equal(nfo_check(&ops, "t"), EINVAL);
	ops.opts = t_opts;
	ops.priv_size = 4;
	assert_int_equal(nfo_check(&ops, "t"), EINVAL);
}

static void
test_usage(void **state)
{
	FILE *tmp = tmpfile();
	char buf[2048];
	size_t n;
	int saved;

	(void)state;
	assert_non_null(tmp);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fileno(tmp), STDOUT_FILENO);
	nfo_usage(&t_ops);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	n = (size_t)pread(fileno(tmp), buf, sizeof(buf) - 1, 0);
	buf[n] = '\0';
	fclose(tmp);
	assert_string_equal(buf, "  --count N     how many\n"
				 "  --big N       a lot\n"
				 "  --secs S      seconds\n"
				 "                second line\n"
				 "  --small N     a byte\n"
				 "  --flag        a flag\n"
				 "  --file FILE   a file\n"
				 "  --filter TEXT  a text\n"
				 "  --mode MODE   mode\n"
				 "  --to SERVICE  where\n"
				 "  --each X      any\n");
}

static int
setup(void **state)
{
	(void)state;
	stub_ops = &t_ops;
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_usage),
	};

	return cmocka_run_group_tests_name("nf_opts", tests, setup, NULL);
}
