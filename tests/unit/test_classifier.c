/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of src/common/sl_classifier.c: the rte_acl classifier against
 * the linear reference sl_match_find() on hand-made and random rules
 * (priorities with ties, both families, prefixes of every length, port
 * and in_port ranges) and random tuples. Runs EAL without hugepages,
 * with its own file prefix, and removes EAL's runtime directory.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include "eal_env.h"
#include "sl_classifier.h"
#include "sl_match.h"

static uint64_t rng_state = 1;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void
parse(const char *text, struct sl_match *m)
{
	char err[256];

	if (sl_match_parse(text, m, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", text, err);
}

static void
tuple(struct sl_5tuple *t, uint8_t proto, const char *src, uint16_t sp,
      const char *dst, uint16_t dp)
{
	int v6 = strchr(src, ':') != NULL;

	memset(t, 0, sizeof(*t));
	t->family = v6 ? 6 : 4;
	t->proto = proto;
	assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, src, &t->src), 1);
	assert_int_equal(inet_pton(v6 ? AF_INET6 : AF_INET, dst, &t->dst), 1);
	t->sport = htons(sp);
	t->dport = htons(dp);
}

/* Looks up n tuples (in bursts of a random size) and checks each. */
static void
check_lookup(const struct sl_classifier *c, const struct sl_match *const *r,
	     const int32_t *prio, uint32_t n_rules,
	     const struct sl_5tuple *const *t, const uint16_t *port, uint32_t n,
	     const char *what)
{
	uint32_t *res = calloc(n ? n : 1, sizeof(*res));
	uint32_t i, done, k;

	assert_non_null(res);
	for (done = 0; done < n; done += k) {
		k = 1 + (uint32_t)(rng() % 200);
		if (k > n - done)
			k = n - done;
		memset(res + done, 0xff, k * sizeof(*res));
		sl_classifier_lookup(c, t + done, port ? port + done : NULL, k,
				     res + done);
	}
	for (i = 0; i < n; i++) {
		uint32_t expect = 0;

		if (t[i] != NULL)
			expect = sl_match_find(r, prio, n_rules, t[i],
					       port ? port[i] : 0);
		if (res[i] != expect) {
			char key[128], rule[256] = "-";

			key[0] = '\0';
			if (t[i] != NULL)
				sl_5tuple_format(t[i], key, sizeof(key));
			if (expect != 0)
				sl_match_format(r[expect - 1], rule,
						sizeof(rule));
			fail_msg("%s: tuple %u (%s, port %u): classifier %u, "
				 "linear %u (%s)",
				 what, i, key, port ? port[i] : 0, res[i],
				 expect, rule);
		}
	}
	free(res);
}

static void
test_zero_rules(void **state)
{
	struct sl_classifier *c = NULL;
	struct sl_5tuple t;
	const struct sl_5tuple *tp[2] = {&t, NULL};
	uint32_t res[2] = {7, 7};
	char err[256];

	(void)state;
	assert_int_equal(sl_classifier_build(NULL, NULL, 0, "t0_", &c, err,
					     sizeof(err)),
			 0);
	assert_non_null(c);
	assert_int_equal(sl_classifier_n_rules(c), 0);
	tuple(&t, IPPROTO_TCP, "1.2.3.4", 1, "5.6.7.8", 80);
	sl_classifier_lookup(c, tp, NULL, 2, res);
	assert_int_equal(res[0], 0);
	assert_int_equal(res[1], 0);
	sl_classifier_lookup(c, tp, NULL, 0, res); /* nothing to do */
	sl_classifier_free(c);
	/* No classifier: no rules. */
	res[0] = 7;
	sl_classifier_lookup(NULL, tp, NULL, 1, res);
	assert_int_equal(res[0], 0);
	assert_int_equal(sl_classifier_n_rules(NULL), 0);
	sl_classifier_free(NULL);
}

static void
test_basic(void **state)
{
	static const char *const text[] = {
		"proto=tcp dst=10.0.0.0/8 dport=80", /* 1 */
		"src=2001:db8::/32 in_port=1",       /* 2 */
		"proto=udp dport=53 in_port=2-3",    /* 3 */
		"dst=10.1.0.0/16",                   /* 4 */
		"",                                  /* 5 */
	};
	static const int32_t prio[] = {10, 10, 10, 20, -5};
	struct sl_match m[5];
	const struct sl_match *r[5];
	struct sl_classifier *c = NULL;
	struct sl_5tuple t[8];
	const struct sl_5tuple *tp[8];
	uint16_t port[8] = {0, 0, 1, 2, 2, 4, 0, 3};
	uint32_t res[8];
	static const uint32_t expect[8] = {1, 4, 2, 3, 5, 5, 5, 5};
	char err[256];
	unsigned i;

	(void)state;
	for (i = 0; i < 5; i++) {
		parse(text[i], &m[i]);
		r[i] = &m[i];
	}
	assert_int_equal(sl_classifier_build(r, prio, 5, "tb_", &c, err,
					     sizeof(err)),
			 0);
	assert_int_equal(sl_classifier_n_rules(c), 5);
	tuple(&t[0], IPPROTO_TCP, "1.1.1.1", 9, "10.2.0.1", 80);
	tuple(&t[1], IPPROTO_TCP, "1.1.1.1", 9, "10.1.0.1", 80); /* prio 20 */
	tuple(&t[2], IPPROTO_TCP, "2001:db8::1", 9, "::1", 80);
	tuple(&t[3], IPPROTO_UDP, "2001:db9::1", 9, "::1", 53);
	tuple(&t[4], IPPROTO_TCP, "2001:db8::1", 9, "::1", 80); /* port 2 */
	tuple(&t[5], IPPROTO_UDP, "1.1.1.1", 9, "2.2.2.2", 53); /* port 4 */
	tuple(&t[6], IPPROTO_UDP, "1.1.1.1", 9, "2.2.2.2", 54);
	tuple(&t[7], IPPROTO_TCP, "1.1.1.1", 9, "10.2.0.1", 81);
	for (i = 0; i < 8; i++)
		tp[i] = &t[i];
	sl_classifier_lookup(c, tp, port, 8, res);
	for (i = 0; i < 8; i++)
		if (res[i] != expect[i])
			fail_msg("tuple %u: %u, expected %u", i, res[i],
				 expect[i]);
	check_lookup(c, r, prio, 5, tp, port, 8, "basic");
	/* in_port NULL: all from port 0. */
	sl_classifier_lookup(c, tp, NULL, 8, res);
	assert_int_equal(res[2], 5);
	assert_int_equal(res[3], 5);
	assert_int_equal(res[0], 1);
	/* A tuple that is not IPv4/IPv6 matches nothing. */
	t[0].family = 0;
	sl_classifier_lookup(c, tp, NULL, 1, res);
	assert_int_equal(res[0], 0);
	sl_classifier_free(c);
}

/* Equal priorities: the lower index wins, also across families. */
static void
test_ties(void **state)
{
	struct sl_match m[3];
	const struct sl_match *r[3] = {&m[0], &m[1], &m[2]};
	int32_t prio[3] = {INT32_MIN, INT32_MAX, INT32_MAX};
	struct sl_classifier *c = NULL;
	struct sl_5tuple t[2];
	const struct sl_5tuple *tp[2] = {&t[0], &t[1]};
	uint32_t res[2];
	char err[256];

	(void)state;
	parse("proto=tcp", &m[0]);
	parse("", &m[1]);
	parse("src=0.0.0.0/0", &m[2]);
	tuple(&t[0], IPPROTO_TCP, "1.1.1.1", 1, "2.2.2.2", 2);
	tuple(&t[1], IPPROTO_TCP, "::1", 1, "::2", 2);
	assert_int_equal(sl_classifier_build(r, prio, 3, NULL, &c, err,
					     sizeof(err)),
			 0);
	sl_classifier_lookup(c, tp, NULL, 2, res);
	assert_int_equal(res[0], 2);
	assert_int_equal(res[1], 2);
	sl_classifier_free(c);
	/* Reversed: the IPv4-only rule comes first. */
	r[1] = &m[2];
	r[2] = &m[1];
	assert_int_equal(sl_classifier_build(r, prio, 3, NULL, &c, err,
					     sizeof(err)),
			 0);
	sl_classifier_lookup(c, tp, NULL, 2, res);
	assert_int_equal(res[0], 2);
	assert_int_equal(res[1], 3);
	sl_classifier_free(c);
	/* No priorities: first match. */
	assert_int_equal(sl_classifier_build(r, NULL, 3, NULL, &c, err,
					     sizeof(err)),
			 0);
	sl_classifier_lookup(c, tp, NULL, 2, res);
	assert_int_equal(res[0], 1);
	assert_int_equal(res[1], 1);
	sl_classifier_free(c);
}

/* Several classifiers at once have distinct rte_acl names. */
static void
test_names(void **state)
{
	struct sl_match m[2];
	const struct sl_match *r0 = &m[0], *r1 = &m[1];
	struct sl_classifier *a = NULL, *b = NULL, *c = NULL;
	struct sl_5tuple t;
	const struct sl_5tuple *tp = &t;
	uint32_t res;
	char err[256];

	(void)state;
	parse("dport=1", &m[0]);
	parse("dport=2", &m[1]);
	assert_int_equal(sl_classifier_build(&r0, NULL, 1, "same_", &a, err,
					     sizeof(err)),
			 0);
	assert_int_equal(sl_classifier_build(&r1, NULL, 1, "same_", &b, err,
					     sizeof(err)),
			 0);
	tuple(&t, IPPROTO_UDP, "1.1.1.1", 9, "2.2.2.2", 1);
	sl_classifier_lookup(a, &tp, NULL, 1, &res);
	assert_int_equal(res, 1);
	sl_classifier_lookup(b, &tp, NULL, 1, &res);
	assert_int_equal(res, 0);
	t.dport = htons(2);
	sl_classifier_lookup(b, &tp, NULL, 1, &res);
	assert_int_equal(res, 1);
	sl_classifier_lookup(a, &tp, NULL, 1, &res);
	assert_int_equal(res, 0);
	sl_classifier_free(a);
	sl_classifier_free(b);

	/* The longest allowed prefix, and one too long. */
	assert_int_equal(sl_classifier_build(&r0, NULL, 1, "abcdefghijklmnop",
					     &c, err, sizeof(err)),
			 0);
	sl_classifier_free(c);
	c = (struct sl_classifier *)&res;
	assert_int_equal(sl_classifier_build(&r0, NULL, 1, "abcdefghijklmnopq",
					     &c, err, sizeof(err)),
			 -EINVAL);
	assert_null(c);
	assert_string_equal(err, "rte_acl name prefix 'abcdefghijklmnopq' is "
				 "longer than 16 characters");
	assert_int_equal(sl_classifier_build(NULL, NULL, 1, NULL, &c, err,
					     sizeof(err)),
			 -EINVAL);
}

static void
rand_addr(unsigned family, uint8_t a[16])
{
	unsigned i;

	memset(a, 0, 16);
	for (i = 0; i < (family == 4 ? 4u : 16u); i++)
		a[i] = (uint8_t)rng();
	/* Few distinct high bytes, so prefixes overlap and match. */
	a[0] = (uint8_t)(10 + rng() % 3);
	if (family == 6)
		a[1] = (uint8_t)(rng() % 2);
}

/* A random prefix "A/N" of a random address, or "" for none. */
static void
rand_prefix(unsigned family, char *buf, size_t size)
{
	static const unsigned lens4[] = {0, 1, 7, 8, 9, 16, 23, 24, 31, 32};
	static const unsigned lens6[] = {0,  1,  8,  16, 31,  32,  33, 48,
					 63, 64, 65, 96, 100, 127, 128};
	char a[INET6_ADDRSTRLEN];
	uint8_t x[16];
	unsigned len, i;

	rand_addr(family, x);
	len = family == 4 ? lens4[rng() % 10] : lens6[rng() % 15];
	for (i = 0; i < 16; i++) {
		unsigned bits = len > 8 * i ? len - 8 * i : 0;

		if (bits < 8)
			x[i] &= (uint8_t)(0xff00 >> bits);
	}
	inet_ntop(family == 4 ? AF_INET : AF_INET6, x, a, sizeof(a));
	snprintf(buf, size, "%s/%u", a, len);
}

static uint16_t
rand_port(void)
{
	/* Mostly small ports so that ranges match, some anywhere. */
	return (uint16_t)(rng() % 4 ? rng() % 1100 : rng() % 65536);
}

static void
rand_range(char *buf, size_t size, uint16_t max)
{
	uint16_t a = (uint16_t)(rand_port() % (max + 1u));
	uint16_t b = (uint16_t)(rand_port() % (max + 1u));

	if (rng() % 3 == 0)
		b = a;
	snprintf(buf, size, "%u-%u", a < b ? a : b, a < b ? b : a);
}

static void
rand_match(struct sl_match *m)
{
	static const char *const protos[] = {"",     "tcp", "udp",
					     "icmp", "47",  "icmp6"};
	char text[256], tmp[80];
	size_t off = 0;
	unsigned family = (unsigned)(rng() % 10), p = (unsigned)(rng() % 6);

	family = family < 4 ? 4 : family < 7 ? 6 : 0;
	if (p > 0)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"proto=%s ", protos[p]);
	if (family && rng() % 3) {
		rand_prefix(family, tmp, sizeof(tmp));
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"src=%s ", tmp);
	}
	if (family && rng() % 2) {
		rand_prefix(family, tmp, sizeof(tmp));
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"dst=%s ", tmp);
	}
	if (p <= 2 && rng() % 2) {
		rand_range(tmp, sizeof(tmp), 65535);
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"sport=%s ", tmp);
	}
	if (p <= 2 && rng() % 2) {
		rand_range(tmp, sizeof(tmp), 65535);
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"dport=%s ", tmp);
	}
	if (rng() % 4 == 0) {
		rand_range(tmp, sizeof(tmp), 7);
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"in_port=%s", tmp);
	}
	if (family && !strstr(text, "src=") && !strstr(text, "dst="))
		snprintf(text + off, sizeof(text) - off, " src=%s",
			 family == 4 ? "0.0.0.0/0" : "::/0");
	parse(text, m);
}

static void
rand_tuple(struct sl_5tuple *t)
{
	static const uint8_t protos[] = {IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP,
					 47, IPPROTO_ICMPV6};
	unsigned family = rng() % 10 < 6 ? 4 : 6;

	memset(t, 0, sizeof(*t));
	t->family = (uint8_t)family;
	t->proto = protos[rng() % 5];
	rand_addr(family, family == 4 ? (uint8_t *)&t->src.v4 : t->src.v6);
	rand_addr(family, family == 4 ? (uint8_t *)&t->dst.v4 : t->dst.v6);
	if (t->proto == IPPROTO_TCP || t->proto == IPPROTO_UDP) {
		t->sport = htons(rand_port());
		t->dport = htons(rand_port());
	}
}

/* Random rules and tuples: the classifier must equal the reference. */
static void
check_random(unsigned seed, uint32_t n_rules, uint32_t n_tuples, int with_prio)
{
	struct sl_match *m = calloc(n_rules ? n_rules : 1, sizeof(*m));
	const struct sl_match **r = calloc(n_rules ? n_rules : 1, sizeof(*r));
	int32_t *prio = calloc(n_rules ? n_rules : 1, sizeof(*prio));
	struct sl_5tuple *t = calloc(n_tuples, sizeof(*t));
	const struct sl_5tuple **tp = calloc(n_tuples, sizeof(*tp));
	uint16_t *port = calloc(n_tuples, sizeof(*port));
	struct sl_classifier *c = NULL;
	char err[256], what[64];
	uint32_t i, hits = 0;

	assert_true(m && r && prio && t && tp && port);
	rng_state = 0x9e3779b97f4a7c15ull * (seed + 1);
	for (i = 0; i < n_rules; i++) {
		rand_match(&m[i]);
		r[i] = &m[i];
		/* Few distinct values, so ties are common. */
		prio[i] = (int32_t)(rng() % 7) - 3;
	}
	for (i = 0; i < n_tuples; i++) {
		rand_tuple(&t[i]);
		tp[i] = rng() % 50 ? &t[i] : NULL;
		port[i] = (uint16_t)(rng() % 10);
		if (tp[i] != NULL &&
		    sl_match_find(r, with_prio ? prio : NULL, n_rules, tp[i],
				  port[i]) != 0)
			hits++;
	}
	if (sl_classifier_build(r, with_prio ? prio : NULL, n_rules, "trand_",
				&c, err, sizeof(err)) != 0)
		fail_msg("seed %u: %s", seed, err);
	snprintf(what, sizeof(what), "seed %u, %u rules%s", seed, n_rules,
		 with_prio ? ", priorities" : "");
	check_lookup(c, r, with_prio ? prio : NULL, n_rules, tp, port, n_tuples,
		     what);
	/* Without ports: port 0 for all. */
	check_lookup(c, r, with_prio ? prio : NULL, n_rules, tp, NULL, n_tuples,
		     what);
	/* The test means something: some tuples match, some do not. */
	if (n_rules >= 20 && (hits == 0 || hits == n_tuples))
		fail_msg("%s: %u of %u tuples match", what, hits, n_tuples);
	sl_classifier_free(c);
	free(m);
	free(r);
	free(prio);
	free(t);
	free(tp);
	free(port);
}

static void
test_random(void **state)
{
	unsigned seed;

	(void)state;
	for (seed = 0; seed < 8; seed++)
		check_random(seed, 1 + seed * 37, 3000, seed % 2);
	check_random(100, 1500, 5000, 1);
	check_random(101, 1500, 5000, 0);
}

static char eal_dir[PATH_MAX];

static int
setup(void **state)
{
	(void)state;
	return eal_env_start("test_classifier", "cls", "128", eal_dir,
			     sizeof(eal_dir)) < 0
		       ? -1
		       : 0;
}

static int
teardown(void **state)
{
	(void)state;
	rte_eal_cleanup();
	/* EAL leaves an empty runtime directory even without shared config. */
	if (eal_dir[0] != '\0' && rmdir(eal_dir) != 0)
		fprintf(stderr, "rmdir %s: %s\n", eal_dir, strerror(errno));
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_rules), cmocka_unit_test(test_basic),
		cmocka_unit_test(test_ties),       cmocka_unit_test(test_names),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("classifier", tests, setup,
					   teardown);
}
