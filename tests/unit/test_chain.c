/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the default-chain parser and compiler (src/common/sl_chain.c):
 * sl_chain_split() and sl_chain_compile() with a fake resolver. Every
 * rejection is checked with its exact message, every accepted chain with
 * its exact first / next[] / list[] arrays.
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

#include "sl_chain.h"

#define MAX_SVC 8
#define GARBAGE 0xdeadbeefu

/*
 * Fake resolver. Services: a fixed table of names with ids, plus names
 * created on demand (as sluiced does) from the next free id. Special
 * names: "full" fails like a full service table, "huge" returns an id
 * beyond max_services. Ports: "in" = 0, "out" = 3.
 */
struct fake {
	const char *svc[MAX_SVC + 4];
	int n_svc;
	int service_calls;
	int port_calls;
};

static int
fake_service(void *arg, const char *name, char *err, size_t errlen)
{
	struct fake *f = arg;

	f->service_calls++;
	if (strcmp(name, "full") == 0) {
		snprintf(err, errlen,
			 "all 8 services are in use: raise --max-services");
		return -ENOSPC;
	}
	if (strcmp(name, "huge") == 0)
		return MAX_SVC + 1;
	for (int i = 0; i < f->n_svc; i++)
		if (strcmp(f->svc[i], name) == 0)
			return i;
	f->svc[f->n_svc] = name;
	return f->n_svc++;
}

static int
fake_port(void *arg, const char *name)
{
	struct fake *f = arg;

	f->port_calls++;
	if (strcmp(name, "in") == 0)
		return 0;
	if (strcmp(name, "out") == 0)
		return 3;
	return -ENOENT;
}

/* The result of one compile, with canaries around every array. */
struct compiled {
	int rc;
	sl_hop_t first;
	sl_hop_t next[MAX_SVC + 1]; /* [MAX_SVC] is a canary */
	sl_hop_t list[16 + 1];
	char err[256];
	struct fake f;
};

static void
compile(struct compiled *c, const char *const *hops, uint16_t n)
{
	struct sl_chain_resolver r = {.service = fake_service,
				      .port = fake_port,
				      .arg = &c->f};

	memset(c, 0, sizeof(*c));
	c->first = GARBAGE;
	for (size_t i = 0; i < RTE_DIM(c->next); i++)
		c->next[i] = GARBAGE;
	for (size_t i = 0; i < RTE_DIM(c->list); i++)
		c->list[i] = GARBAGE;
	/* Services known before the chain: ids 0..2. */
	c->f.svc[0] = "firewall";
	c->f.svc[1] = "monitor";
	c->f.svc[2] = "forward";
	c->f.n_svc = 3;
	c->rc = sl_chain_compile(hops, n, &r, MAX_SVC, &c->first, c->next,
				 c->list, c->err, sizeof(c->err));
	assert_int_equal(c->next[MAX_SVC], GARBAGE);
	assert_int_equal(c->list[n], GARBAGE);
}

/* Checks next[] against (service, hop) pairs; every other entry NONE. */
static void
check_next(const struct compiled *c, int n_pairs, ...)
{
	sl_hop_t want[MAX_SVC];
	va_list ap;

	for (int s = 0; s < MAX_SVC; s++)
		want[s] = SL_HOP_NONE;
	va_start(ap, n_pairs);
	for (int i = 0; i < n_pairs; i++) {
		int s = va_arg(ap, int);

		want[s] = va_arg(ap, sl_hop_t);
	}
	va_end(ap);
	for (int s = 0; s < MAX_SVC; s++) {
		if (c->next[s] != want[s])
			fail_msg("next[%d] = %#x, want %#x", s, c->next[s],
				 want[s]);
	}
}

static void
check_list(const struct compiled *c, uint16_t n, const sl_hop_t *want)
{
	for (uint16_t i = 0; i < n; i++)
		if (c->list[i] != want[i])
			fail_msg("list[%u] = %#x, want %#x", i, c->list[i],
				 want[i]);
}

static void
check_rejected(const char *const *hops, uint16_t n, const char *msg)
{
	struct compiled c;

	compile(&c, hops, n);
	assert_int_equal(c.rc, EINVAL);
	assert_string_equal(c.err, msg);
}

/*
 * Rejected before any service is resolved: sluiced's resolver creates
 * services, and a rejected chain must not leave any behind.
 */
static void
check_rejected_early(const char *const *hops, uint16_t n, const char *msg)
{
	struct compiled c;

	compile(&c, hops, n);
	assert_int_equal(c.rc, EINVAL);
	assert_string_equal(c.err, msg);
	assert_int_equal(c.f.service_calls, 0);
	assert_int_equal(c.f.n_svc, 3);
}

/* ---- sl_chain_split ------------------------------------------------- */

static void
split_ok(void **state)
{
	char text[] = "firewall,monitor,port:out";
	char *hops[8];
	char err[256] = "";
	uint16_t n;

	(void)state;
	assert_int_equal(sl_chain_split(text, hops, 8, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 3);
	assert_string_equal(hops[0], "firewall");
	assert_string_equal(hops[1], "monitor");
	assert_string_equal(hops[2], "port:out");
	/* in place: the hops point into text */
	assert_ptr_equal(hops[0], text);
	assert_ptr_equal(hops[1], text + 9);
	assert_ptr_equal(hops[2], text + 17);
	assert_string_equal(err, "");
}

static void
split_one_and_exact_max(void **state)
{
	char one[] = "forward";
	char three[] = "a,b,c";
	char *hops[3];
	char err[256] = "";
	uint16_t n;

	(void)state;
	assert_int_equal(sl_chain_split(one, hops, 3, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_string_equal(hops[0], "forward");
	assert_int_equal(sl_chain_split(three, hops, 3, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 3);
	assert_string_equal(hops[0], "a");
	assert_string_equal(hops[1], "b");
	assert_string_equal(hops[2], "c");
	assert_string_equal(err, "");
}

static void
split_empty_hop(void **state)
{
	static const char *const bad[] = {"", ",", "a,", ",a", "a,,b", "a,b,,"};
	char *hops[8];
	uint16_t n;

	(void)state;
	for (size_t i = 0; i < RTE_DIM(bad); i++) {
		char text[32], want[256], err[256] = "";

		snprintf(text, sizeof(text), "%s", bad[i]);
		snprintf(want, sizeof(want),
			 "chain '%s' has an empty hop; write hops separated "
			 "by single commas, e.g. firewall,monitor,port:out",
			 bad[i]);
		assert_int_equal(sl_chain_split(text, hops, 8, &n, err,
						sizeof(err)),
				 EINVAL);
		assert_string_equal(err, want);
	}
}

static void
split_too_many(void **state)
{
	char text[] = "a,b,c";
	char *hops[2];
	char err[256] = "";
	uint16_t n;

	(void)state;
	assert_int_equal(sl_chain_split(text, hops, 2, &n, err, sizeof(err)),
			 EINVAL);
	assert_string_equal(err, "chain has more than 2 hops; raise "
				 "--max-services or shorten the chain");
}

static void
split_spaces_are_kept(void **state)
{
	/* Split does not trim: " b" reaches compile, which rejects it. */
	char text[] = "a, b";
	char *hops[4];
	char err[256] = "";
	struct compiled c;
	uint16_t n;

	(void)state;
	assert_int_equal(sl_chain_split(text, hops, 4, &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 2);
	assert_string_equal(hops[1], " b");
	compile(&c, (const char *const *)hops, 2);
	assert_int_equal(c.rc, EINVAL);
	assert_string_equal(c.err,
			    "chain hop 2 ' b' is not a valid service name "
			    "(1-31 characters of A-Z a-z 0-9 _ - .), "
			    "'port:NAME' or 'drop'");
}

/* ---- sl_chain_compile: accepted chains ------------------------------ */

static void
compile_services_then_port(void **state)
{
	static const char *const hops[] = {"firewall", "monitor", "forward",
					   "port:out"};
	static const sl_hop_t list[] = {SL_HOP_SERVICE(0), SL_HOP_SERVICE(1),
					SL_HOP_SERVICE(2), SL_HOP_PORT(3)};
	struct compiled c;

	(void)state;
	compile(&c, hops, 4);
	assert_int_equal(c.rc, 0);
	assert_string_equal(c.err, "");
	assert_int_equal(c.first, SL_TO(0));
	check_next(&c, 3, 0, SL_TO(1), 1, SL_TO(2), 2, SL_OUT(3));
	check_list(&c, 4, list);
	assert_int_equal(c.f.port_calls, 1);
	assert_int_equal(c.f.service_calls, 3);
}

static void
compile_new_services(void **state)
{
	/* Unknown names are created by the resolver: ids 3, 4. */
	static const char *const hops[] = {"nat", "firewall", "ids", "port:in"};
	static const sl_hop_t list[] = {SL_HOP_SERVICE(3), SL_HOP_SERVICE(0),
					SL_HOP_SERVICE(4), SL_HOP_PORT(0)};
	struct compiled c;

	(void)state;
	compile(&c, hops, 4);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(3));
	check_next(&c, 3, 3, SL_TO(0), 0, SL_TO(4), 4, SL_OUT(0));
	check_list(&c, 4, list);
}

static void
compile_single_service(void **state)
{
	/* No hop after the service: its default edge is "none" (end of
	 * chain), which the data path counts as end_of_chain. */
	static const char *const hops[] = {"monitor"};
	struct compiled c;

	(void)state;
	compile(&c, hops, 1);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(1));
	check_next(&c, 0);
	assert_int_equal(c.list[0], SL_HOP_SERVICE(1));
}

static void
compile_port_only(void **state)
{
	static const char *const hops[] = {"port:out"};
	struct compiled c;

	(void)state;
	compile(&c, hops, 1);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_OUT(3));
	check_next(&c, 0);
	assert_int_equal(c.list[0], SL_HOP_PORT(3));
	assert_int_equal(c.f.service_calls, 0);
}

static void
compile_drop(void **state)
{
	static const char *const hops[] = {"firewall", "drop"};
	static const char *const alone[] = {"drop"};
	static const sl_hop_t list[] = {SL_HOP_SERVICE(0), SL_HOP_DROP};
	struct compiled c;

	(void)state;
	compile(&c, hops, 2);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(0));
	check_next(&c, 1, 0, SL_DROP);
	check_list(&c, 2, list);
	assert_int_equal(c.f.port_calls, 0);

	compile(&c, alone, 1);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_DROP);
	check_next(&c, 0);
	assert_int_equal(c.list[0], SL_HOP_DROP);
}

static void
compile_loop(void **state)
{
	/* The last hop may repeat an earlier service to close a loop. */
	static const char *const aba[] = {"firewall", "monitor", "firewall"};
	static const sl_hop_t list[] = {SL_HOP_SERVICE(0), SL_HOP_SERVICE(1),
					SL_HOP_SERVICE(0)};
	struct compiled c;

	(void)state;
	compile(&c, aba, 3);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(0));
	check_next(&c, 2, 0, SL_TO(1), 1, SL_TO(0));
	check_list(&c, 3, list);
}

static void
compile_self_loop(void **state)
{
	/* "speedtest,speedtest": one NF that gets its own packets back. */
	static const char *const hops[] = {"speedtest", "speedtest"};
	struct compiled c;

	(void)state;
	compile(&c, hops, 2);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(3));
	check_next(&c, 1, 3, SL_TO(3));
	assert_int_equal(c.list[0], SL_HOP_SERVICE(3));
	assert_int_equal(c.list[1], SL_HOP_SERVICE(3));
}

static void
compile_loop_to_middle(void **state)
{
	/* a,b,c,b: the last hop closes the loop onto a middle service. */
	static const char *const hops[] = {"firewall", "monitor", "forward",
					   "monitor"};
	struct compiled c;

	(void)state;
	compile(&c, hops, 4);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.first, SL_TO(0));
	check_next(&c, 3, 0, SL_TO(1), 1, SL_TO(2), 2, SL_TO(1));
}

static void
compile_names(void **state)
{
	/* 31 characters (the longest) of every allowed class: valid. */
	static const char *const ok[] = {"Az09_-.abcdefghijklmnopqrstuvwx"};
	struct compiled c;

	(void)state;
	assert_int_equal(strlen(ok[0]), 31);
	compile(&c, ok, 1);
	assert_int_equal(c.rc, 0);

	assert_true(sl_name_valid("a"));
	assert_true(sl_name_valid("0123456789012345678901234567890"));
	assert_false(sl_name_valid("01234567890123456789012345678901"));
	assert_false(sl_name_valid(""));
	assert_false(sl_name_valid("fire wall"));
	assert_false(sl_name_valid("fw!"));
	assert_false(sl_name_valid("a/b"));
	assert_false(sl_name_valid("caf\xc3\xa9"));
}

/* ---- sl_chain_compile: rejections ----------------------------------- */

static void
reject_empty_chain(void **state)
{
	struct compiled c;

	(void)state;
	compile(&c, NULL, 0);
	assert_int_equal(c.rc, EINVAL);
	assert_string_equal(c.err, "chain is empty; give at least one hop, "
				   "e.g. [forward, \"port:out\"]");
	assert_int_equal(c.first, GARBAGE);
	assert_int_equal(c.f.service_calls + c.f.port_calls, 0);
}

static void
reject_port_not_last(void **state)
{
	static const char *const port_first[] = {"port:out", "firewall"};
	static const char *const port_mid[] = {"firewall", "port:out",
					       "monitor", "forward"};
	static const char *const drop_mid[] = {"firewall", "drop", "monitor"};

	(void)state;
	check_rejected_early(
		port_first, 2,
		"chain hop 1 'port:out' ends the chain but 1 hop(s) "
		"follow it; a port or drop must be the last hop");
	check_rejected_early(
		port_mid, 4,
		"chain hop 2 'port:out' ends the chain but 2 hop(s) "
		"follow it; a port or drop must be the last hop");
	check_rejected_early(drop_mid, 3,
			     "chain hop 2 'drop' ends the chain but 1 hop(s) "
			     "follow it; a port or drop must be the last hop");
}

static void
reject_unknown_port(void **state)
{
	static const char *const hops[] = {"firewall", "port:nope"};
	static const char *const empty[] = {"port:"};
	static const char *const new_then_bad[] = {"nat", "ids", "port:nope"};

	(void)state;
	check_rejected_early(
		hops, 2,
		"chain hop 2 'port:nope': no port named 'nope'; use a "
		"name from port.list");
	/* "nat" and "ids" would be new services: none is created. */
	check_rejected_early(
		new_then_bad, 3,
		"chain hop 3 'port:nope': no port named 'nope'; use a "
		"name from port.list");
	check_rejected_early(
		empty, 1,
		"chain hop 1 'port:': no port named ''; use a name "
		"from port.list");
}

static void
reject_duplicate_service(void **state)
{
	static const char *const aab[] = {"firewall", "firewall", "monitor"};
	static const char *const abac[] = {"firewall", "monitor", "firewall",
					   "forward"};
	static const char *const new_dup[] = {"nat", "nat", "port:out"};
	static const char *const abca_port[] = {"firewall", "monitor",
						"forward", "monitor",
						"port:out"};

	(void)state;
	check_rejected_early(
		aab, 3,
		"chain: service 'firewall' appears twice (hops 1 and "
		"2); only the last hop may repeat an earlier service, "
		"to close a loop");
	check_rejected_early(
		abac, 4,
		"chain: service 'firewall' appears twice (hops 1 and "
		"3); only the last hop may repeat an earlier service, "
		"to close a loop");
	check_rejected_early(
		new_dup, 3,
		"chain: service 'nat' appears twice (hops 1 and 2); "
		"only the last hop may repeat an earlier service, to "
		"close a loop");
	check_rejected_early(
		abca_port, 5,
		"chain: service 'monitor' appears twice (hops 2 and "
		"4); only the last hop may repeat an earlier service, "
		"to close a loop");
}

static void
reject_invalid_name(void **state)
{
	static const char *const bang[] = {"firewall", "fw!"};
	static const char *const empty[] = {""};
	static const char *const port_word[] = {"port"};
	static const char *const too_long[] = {
		"01234567890123456789012345678901"};

	(void)state;
	check_rejected_early(
		bang, 2,
		"chain hop 2 'fw!' is not a valid service name (1-31 "
		"characters of A-Z a-z 0-9 _ - .), 'port:NAME' or "
		"'drop'");
	check_rejected_early(empty, 1,
			     "chain hop 1 '' is not a valid service name (1-31 "
			     "characters of A-Z a-z 0-9 _ - .), 'port:NAME' or "
			     "'drop'");
	check_rejected_early(
		too_long, 1,
		"chain hop 1 '01234567890123456789012345678901' is not "
		"a valid service name (1-31 characters of A-Z a-z 0-9 "
		"_ - .), 'port:NAME' or 'drop'");
	/* "port" without a colon is a (valid) service name, not a port. */
	{
		struct compiled c;

		compile(&c, port_word, 1);
		assert_int_equal(c.rc, 0);
		assert_int_equal(c.first, SL_TO(3));
		assert_int_equal(c.f.port_calls, 0);
	}
}

static void
reject_resolver_errors(void **state)
{
	static const char *const full[] = {"firewall", "full"};
	static const char *const huge[] = {"huge", "port:out"};

	(void)state;
	check_rejected(full, 2,
		       "chain hop 2 'full': all 8 services are in use: raise "
		       "--max-services");
	check_rejected(huge, 2,
		       "chain hop 1 'huge': service id 9 out of range");
}

static void
reject_too_many_hops(void **state)
{
	/* The bound on hops is sl_chain_split's max (sluiced passes 1024;
	 * a chain longer than the number of services cannot be valid). */
	char text[] = "a,b,c,d,e,f,g,h,i";
	char *hops[MAX_SVC];
	char err[256] = "";
	uint16_t n;

	(void)state;
	assert_int_equal(sl_chain_split(text, hops, MAX_SVC, &n, err,
					sizeof(err)),
			 EINVAL);
	assert_string_equal(err, "chain has more than 8 hops; raise "
				 "--max-services or shorten the chain");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(split_ok),
		cmocka_unit_test(split_one_and_exact_max),
		cmocka_unit_test(split_empty_hop),
		cmocka_unit_test(split_too_many),
		cmocka_unit_test(split_spaces_are_kept),
		cmocka_unit_test(compile_services_then_port),
		cmocka_unit_test(compile_new_services),
		cmocka_unit_test(compile_single_service),
		cmocka_unit_test(compile_port_only),
		cmocka_unit_test(compile_drop),
		cmocka_unit_test(compile_loop),
		cmocka_unit_test(compile_self_loop),
		cmocka_unit_test(compile_loop_to_middle),
		cmocka_unit_test(compile_names),
		cmocka_unit_test(reject_empty_chain),
		cmocka_unit_test(reject_port_not_last),
		cmocka_unit_test(reject_unknown_port),
		cmocka_unit_test(reject_duplicate_service),
		cmocka_unit_test(reject_invalid_name),
		cmocka_unit_test(reject_resolver_errors),
		cmocka_unit_test(reject_too_many_hops),
	};

	return cmocka_run_group_tests_name("chain", tests, NULL, NULL);
}
