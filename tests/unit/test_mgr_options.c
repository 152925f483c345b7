/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's option table and parser (src/mgr/options.c,
 * compiled in): every option's defaults are the table's, a good value of
 * each is stored in its field, each bad value gets the exact message
 * sluiced prints (after "sluiced: ") and docs/sluiced.md states, and
 * --help and --defaults-json list every entry.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "options.h"

#define MAX_ARGS 80

static struct sl_mgr_opts g_o;
static char g_err[512];
static enum sl_mgr_ask g_ask;

/* Parses "--" then words[0..n): 0 or EINVAL (g_err). */
static int
parse_words(int n, const char *const *words)
{
	char *argv[MAX_ARGS + 2];
	int argc = 0;

	assert_true(n <= MAX_ARGS);
	argv[argc++] = (char *)"--";
	for (int i = 0; i < n; i++)
		argv[argc++] = (char *)words[i];
	argv[argc] = NULL;
	g_err[0] = '\0';
	return mgr_mgr_opts_parse(&g_o, argc, argv, &g_ask, g_err,
				  sizeof(g_err));
}

/* The same, of the NULL-terminated words first, ... */
static int
parsev(const char *first, va_list ap)
{
	const char *words[MAX_ARGS];
	int n = 0;

	for (const char *a = first; a != NULL; a = va_arg(ap, const char *)) {
		assert_true(n < MAX_ARGS);
		words[n++] = a;
	}
	return parse_words(n, words);
}

static int
parse(const char *first, ...)
{
	va_list ap;
	int rc;

	va_start(ap, first);
	rc = parsev(first, ap);
	va_end(ap);
	return rc;
}

/* Refused with exactly msg. */
static void
refused(const char *msg, const char *first, ...)
{
	va_list ap;
	int rc;

	va_start(ap, first);
	rc = parsev(first, ap);
	va_end(ap);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(g_err, msg);
}

static uint32_t
field(const struct sl_mgr_opt *d, const struct sl_mgr_opts *o)
{
	const char *p = (const char *)o + d->off;

	return d->size == sizeof(uint16_t) ? *(const uint16_t *)p
					   : *(const uint32_t *)p;
}

static const struct sl_mgr_opt *
entry(const char *name)
{
	for (size_t i = 0; i < mgr_mgr_opt_count; i++)
		if (strcmp(mgr_mgr_opt_table[i].name, name) == 0)
			return &mgr_mgr_opt_table[i];
	fail_msg("no option --%s", name);
	return NULL;
}

static void
defaults_are_the_tables(void **state)
{
	(void)state;
	assert_int_equal(parse(NULL), 0);
	assert_int_equal(g_ask, SL_ASK_RUN);
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];

		if (d->type == MGR_OPT_TEXT || d->def_text != NULL)
			continue;
		assert_int_equal(field(d, &g_o), d->def);
	}
	assert_string_equal(g_o.name, "sluice");
	assert_string_equal(g_o.socket_path, "/var/run/sluice/sluice.sock");
	assert_null(g_o.chain);
	assert_int_equal(g_o.n_ports, 0);
	/* derived: a quarter of --flow-capacity */
	assert_int_equal(g_o.flow_capacity6, g_o.flow_capacity / 4);
	/* the values docs/sluiced.md states, spelled out once here */
	assert_int_equal(g_o.mode, SL_MODE_SHARED);
	assert_int_equal(g_o.handoff, 0);
	assert_int_equal(g_o.flow_lookup, SL_LOOKUP_CACHED);
	assert_int_equal(g_o.max_nfs, 128);
	assert_int_equal(g_o.ring_size, 4096);
	assert_int_equal(g_o.mbufs, 65535);
	assert_int_equal(g_o.burst, 32);
	assert_int_equal(g_o.rx_burst, 64);
	assert_int_equal(g_o.flow_capacity, 1u << 18);
	assert_int_equal(g_o.max_hops, SL_MAX_HOPS);
	assert_int_equal(g_o.rxd, 1024);
	assert_int_equal(g_o.txd, 1024);
	/* mgr_mgr_opts_defaults alone: the same, before the derived ones */
	mgr_mgr_opts_defaults(&g_o);
	assert_int_equal(g_o.max_services, 64);
	assert_int_equal(g_o.flow_capacity6, 0);
	assert_string_equal(g_o.socket_path, "");
}

/* Both ends of every range are stored; so is every word of a choice. */
static void
good_values_are_stored(void **state)
{
	char v[16];

	(void)state;
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];
		char opt[64];

		snprintf(opt, sizeof(opt), "--%s", d->name);
		if (d->type == MGR_OPT_NUM) {
			uint32_t ends[2] = {d->min, d->max};

			for (int e = 0; e < 2; e++) {
				snprintf(v, sizeof(v), "%u", ends[e]);
				/* the options checked against others made
				 * loose first (the last value given wins) */
				assert_int_equal(parse("--nf-hang-ms", "0",
						       "--flow-capacity",
						       "67108864", opt, v,
						       NULL),
						 0);
				assert_int_equal(field(d, &g_o), ends[e]);
			}
		} else if (d->type == MGR_OPT_CHOICE) {
			for (uint32_t w = 0; d->words[w] != NULL; w++) {
				assert_int_equal(parse(opt, d->words[w], NULL),
						 0);
				assert_int_equal(field(d, &g_o), w);
			}
		}
	}
	assert_int_equal(parse("--name", "A-z_0.9", "--socket", "/tmp/x.sock",
			       "--chain", "firewall,port:out", "--port",
			       "in=net_null0", "--port",
			       "out=net_null1,no-rx=1", NULL),
			 0);
	assert_string_equal(g_o.name, "A-z_0.9");
	assert_string_equal(g_o.socket_path, "/tmp/x.sock");
	assert_string_equal(g_o.chain, "firewall,port:out");
	assert_int_equal(g_o.n_ports, 2);
	assert_string_equal(g_o.ports[0].name, "in");
	assert_string_equal(g_o.ports[0].device, "net_null0");
	assert_string_equal(g_o.ports[1].name, "out");
	assert_string_equal(g_o.ports[1].device, "net_null1,no-rx=1");
	/* the socket follows --name unless given; = and prefixes as getopt */
	assert_int_equal(parse("--name=n1", "--max-n", "7", NULL), 0);
	assert_string_equal(g_o.socket_path, "/var/run/sluice/n1.sock");
	assert_int_equal(g_o.max_nfs, 7);
	/* --flow-capacity-v6 derived from a small --flow-capacity */
	assert_int_equal(parse("--flow-capacity", "100", NULL), 0);
	assert_int_equal(g_o.flow_capacity6, 64);
	assert_int_equal(parse("--flow-capacity", "64", NULL), 0);
	assert_int_equal(g_o.flow_capacity6, 64);
}

/* Every number option: one past each end, a non-number, signs and
 * blanks, an empty value. */
static void
bad_numbers_are_refused(void **state)
{
	const char *junk[] =
		{"12x", "", " 5", "+5", "-1", "5 ", "99999999999999999999"};
	char v[16], opt[64], msg[256];
	int checked = 0;

	(void)state;
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];

		if (d->type != MGR_OPT_NUM)
			continue;
		snprintf(opt, sizeof(opt), "--%s", d->name);
		for (int e = 0; e < 2; e++) {
			uint64_t x = e == 0 ? (uint64_t)d->min - 1
					    : (uint64_t)d->max + 1;

			if (e == 0 && d->min == 0)
				continue;
			snprintf(v, sizeof(v), "%llu", (unsigned long long)x);
			snprintf(msg, sizeof(msg),
				 "%s '%s' is not a number in %u..%u", opt, v,
				 d->min, d->max);
			refused(msg, opt, v, NULL);
		}
		for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
			snprintf(msg, sizeof(msg),
				 "%s '%s' is not a number in %u..%u", opt,
				 junk[j], d->min, d->max);
			refused(msg, opt, junk[j], NULL);
		}
		checked++;
	}
	assert_true(checked >= 25);
	assert_int_equal(entry("max-nfs")->max, 4096);
	assert_int_equal(entry("max-nfs")->min, 1);
	refused("--max-nfs '0' is not a number in 1..4096", "--max-nfs", "0",
		NULL);
	refused("--ring-size 96 is not a power of 2: use 64 or 128",
		"--ring-size", "96", NULL);
	refused("--ring-size 1000 is not a power of 2: use 512 or 1024",
		"--ring-size", "1000", NULL);
}

static void
bad_words_are_refused(void **state)
{
	(void)state;
	refused("--mode 'bogus': use shared or poll", "--mode", "bogus", NULL);
	refused("--handoff 'bogus': use direct or mgr", "--handoff", "bogus",
		NULL);
	refused("--flow-lookup 'bogus': use off, cached or naive",
		"--flow-lookup", "bogus", NULL);
	refused("--mode 'Poll': use shared or poll", "--mode", "Poll", NULL);
	refused("--mode '': use shared or poll", "--mode", "", NULL);
}

static void
bad_texts_are_refused(void **state)
{
	char dev[300], sock[120], many[33][16];
	const char *argv[66];

	(void)state;
	refused("--name 'abcdefghijklmnopq' is not valid: 1-16 characters of "
		"A-Z a-z 0-9 _ - .",
		"--name", "abcdefghijklmnopq", NULL);
	refused("--name '' is not valid: 1-16 characters of A-Z a-z 0-9 _ - .",
		"--name", "", NULL);
	refused("--name 'a/b' is not valid: 1-16 characters of A-Z a-z 0-9 "
		"_ - .",
		"--name", "a/b", NULL);
	memset(sock, 's', sizeof(sock));
	sock[0] = '/';
	sock[108] = '\0';
	refused("--socket path is longer than 107 characters", "--socket", sock,
		NULL);
	sock[107] = '\0';
	assert_int_equal(parse("--socket", sock, NULL), 0);
	refused("--port 'x' must be NAME=DEVICE, e.g. out=net_null0,no-rx=1",
		"--port", "x", NULL);
	refused("--port '=x' must be NAME=DEVICE, e.g. out=net_null0,no-rx=1",
		"--port", "=x", NULL);
	refused("--port 'x=' must be NAME=DEVICE, e.g. out=net_null0,no-rx=1",
		"--port", "x=", NULL);
	refused("port name 'pppppppppppppppppppppppppppppppp' is not valid: "
		"1-31 characters of A-Z a-z 0-9 _ - .",
		"--port", "pppppppppppppppppppppppppppppppp=net_null0", NULL);
	refused("port name 'a b' is not valid: 1-31 characters of A-Z a-z "
		"0-9 _ - .",
		"--port", "a b=net_null0", NULL);
	snprintf(dev, sizeof(dev), "p=net_null0,%0246d", 0);
	refused("--port p: the device string is 256 characters, more than "
		"255: shorten its paths or arguments",
		"--port", dev, NULL);
	dev[strlen(dev) - 1] = '\0';
	assert_int_equal(parse("--port", dev, NULL), 0);
	refused("port name 'a' is given twice", "--port", "a=net_null0",
		"--port", "a=net_null1", NULL);
	for (int i = 0; i < 33; i++) {
		snprintf(many[i], sizeof(many[i]), "p%d=net_null%d", i, i);
		argv[2 * i] = "--port";
		argv[2 * i + 1] = many[i];
	}
	assert_int_equal(parse_words(64, argv), 0);
	assert_int_equal(g_o.n_ports, 32);
	assert_string_equal(g_o.ports[31].device, "net_null31");
	assert_int_equal(parse_words(66, argv), EINVAL);
	assert_string_equal(g_err, "more than 32 ports");
}

static void
checks_between_options(void **state)
{
	(void)state;
	refused("--flow-capacity-v6 1001 is more than --flow-capacity 1000: "
		"IPv6 flows are a share of all flows; lower it or raise "
		"--flow-capacity",
		"--flow-capacity", "1000", "--flow-capacity-v6", "1001", NULL);
	refused("--nf-hang-ms 100 is not longer than --backpressure-us 100000 "
		"(an NF may wait that long on a full next hop): raise it, or 0 "
		"to never call an NF hung",
		"--nf-hang-ms", "100", "--backpressure-us", "100000", NULL);
	assert_int_equal(parse("--nf-hang-ms", "101", "--backpressure-us",
			       "100000", NULL),
			 0);
	/* each option is checked as it comes: the first bad one is said */
	refused("--max-nfs '0' is not a number in 1..4096", "--max-nfs", "0",
		"--mode", "x", NULL);
}

static void
other_arguments(void **state)
{
	(void)state;
	refused("unknown option '--foo' (EAL options go before '--'; see "
		"sluiced -- --help)",
		"--foo", NULL);
	refused("unknown option '--max-nfs' (EAL options go before '--'; see "
		"sluiced -- --help)",
		"--max-nfs", NULL);
	refused("unknown option '--max' (EAL options go before '--'; see "
		"sluiced -- --help)",
		"--max", "5", NULL);
	refused("unexpected argument 'stray'", "--max-nfs", "5", "stray", NULL);
	assert_int_equal(parse("--max-nfs", "5", "--help", "--max-nfs", "0",
			       NULL),
			 0);
	assert_int_equal(g_ask, SL_ASK_HELP);
	assert_int_equal(parse("-h", NULL), 0);
	assert_int_equal(g_ask, SL_ASK_HELP);
	assert_int_equal(parse("--defaults-json", NULL), 0);
	assert_int_equal(g_ask, SL_ASK_DEFAULTS_JSON);
	assert_int_equal(parse(NULL), 0);
	assert_int_equal(g_ask, SL_ASK_RUN);
}

/* Every entry has one help line ("--rxd N / --txd N" shares one). */
static void
help_lists_every_option(void **state)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, lines = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	mgr_mgr_opts_usage(f);
	fclose(f);
	assert_true(strncmp(buf, "usage: sluiced [EAL args] -- [options]\n",
			    39) == 0);
	assert_non_null(strstr(buf, "\n  --max-nfs N            NF instances "
				    "(128)\n"));
	assert_non_null(strstr(buf, "\n  --rxd N / --txd N      port "
				    "descriptors per queue (1024)\n"));
	assert_non_null(strstr(buf, "\n  --flow-capacity-v6 N   of which IPv6 "
				    "flows (their own table; a quarter of "
				    "--flow-capacity)\n"));
	assert_non_null(strstr(buf, "\n  --mode shared|poll     sluiced's I/O "
				    "threads yield/sleep when idle, or busy "
				    "poll (shared)\n"));
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		lines += strncmp(line, "  --", 4) == 0;
	assert_int_equal(lines, mgr_mgr_opt_count - 1);
	for (size_t i = 0; i < mgr_mgr_opt_count; i++)
		assert_non_null(mgr_mgr_opt_table[i].help);
	free(buf);
}

static void
defaults_json_has_every_option(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t jerr;
	json_t *doc, *opts, *o;

	(void)state;
	assert_non_null(f);
	assert_int_equal(mgr_mgr_opts_json(f), 0);
	fclose(f);
	doc = json_loads(buf, 0, &jerr);
	assert_non_null(doc);
	opts = json_object_get(doc, "options");
	assert_int_equal(json_array_size(opts), mgr_mgr_opt_count);
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];
		char name[64];

		o = json_array_get(opts, i);
		snprintf(name, sizeof(name), "--%s", d->name);
		assert_string_equal(json_string_value(
					    json_object_get(o, "name")),
				    name);
		assert_string_equal(json_string_value(
					    json_object_get(o, "help")),
				    d->help);
		if (d->type == MGR_OPT_NUM) {
			assert_int_equal(json_integer_value(
						 json_object_get(o, "min")),
					 d->min);
			assert_int_equal(json_integer_value(
						 json_object_get(o, "max")),
					 d->max);
			if (d->def_text == NULL)
				assert_int_equal(
					json_integer_value(
						json_object_get(o, "default")),
					d->def);
			else
				assert_true(json_is_null(
					json_object_get(o, "default")));
		}
	}
	o = json_array_get(opts, 3);
	assert_string_equal(json_string_value(json_object_get(o, "name")),
			    "--mode");
	assert_string_equal(json_string_value(json_object_get(o, "default")),
			    "shared");
	assert_int_equal(json_array_size(json_object_get(o, "values")), 2);
	json_decref(doc);
	free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_the_tables),
		cmocka_unit_test(good_values_are_stored),
		cmocka_unit_test(bad_numbers_are_refused),
		cmocka_unit_test(bad_words_are_refused),
		cmocka_unit_test(bad_texts_are_refused),
		cmocka_unit_test(checks_between_options),
		cmocka_unit_test(other_arguments),
		cmocka_unit_test(help_lists_every_option),
		cmocka_unit_test(defaults_json_has_every_option),
	};

	return cmocka_run_group_tests_name("mgr_options", tests, NULL, NULL);
}
