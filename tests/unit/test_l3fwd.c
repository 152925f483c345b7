/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-l3fwd driven through its ops (nfs/l3fwd/) with the libsluice
 * stand-in of nf_stub.c (l3fwd_env.h): longest-prefix choice, default
 * routes, MAC rewrite, TTL and checksum byte by byte, reload and
 * configuration errors by message. The ICMP side is test_l3fwd_icmp.c.
 */
#undef main /* meson.build renames l3fwd.c's main to sl_l3_main */

#include "l3fwd_env.h"


static void
test_loaded_message(void **state)
{
	char *path = write_file(routes), *out, line[256];
	int rc;

	(void)state;
	out = stub_init_output(&rc, PROG, "--routes", path, NULL);
	assert_int_equal(rc, 0);
	snprintf(line, sizeof(line),
		 PROG ": loaded %s: 6 IPv4 and 2 IPv6 routes (4 of them "
		      "neighbours), 3 ports\n",
		 path);
	assert_has(out, line);
	assert_has(out, PROG ":   port a (id 0): mac 02:00:00:00:01:FE, "
			     "address 10.62.1.1 fd62:1::1\n");
	assert_has(out, PROG ":   port b (id 1): mac 02:00:00:00:02:FE, "
			     "address 10.62.2.1 -\n");
	assert_has(out, PROG ":   port c (id 2): mac 02:CC:CC:CC:CC:01, "
			     "address - fd62:3::1\n");
	free(out);
	free(stop());
	unlink(path);
	free(path);
}

/* The longest prefix wins; MACs are the next hop's and the port's. */
static void
test_lpm_choice(void **state)
{
	static const struct {
		uint32_t dst;
		uint16_t port;
		const uint8_t *dmac, *smac;
	} cases[] = {
		{IP4(10, 62, 9, 9), 1, nb_b, mac_b},     /* /16 via B */
		{IP4(10, 62, 2, 2), 1, nb_b, mac_b},     /* B's host route */
		{IP4(10, 62, 3, 5), 2, nb_c, mac_c},     /* /24 via C */
		{IP4(10, 62, 3, 127), 2, nb_c, mac_c},   /* /24 */
		{IP4(10, 62, 3, 128), 0, nb_128, mac_a}, /* /25 */
		{IP4(10, 62, 3, 255), 0, nb_128, mac_a}, /* /25 */
		{IP4(10, 62, 3, 2), 2, nb_c, mac_c},     /* /32 */
	};
	struct frame f, out;

	(void)state;
	start(routes, NULL, NULL);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		udp4(&f, IP4(10, 62, 1, 2), cases[i].dst, 64);
		assert_int_equal(run(&f, 0, &out), SL_OUT(cases[i].port));
		assert_memory_equal(out.b, cases[i].dmac, 6);
		assert_memory_equal(out.b + 6, cases[i].smac, 6);
	}
	free(stop());
}

/* Default routes (rte_lpm takes depths from 1: kept beside it), alone
 * and under longer prefixes. */
static void
test_default_route(void **state)
{
	struct frame f, out;
	char *text;

	(void)state;
	start("route 0.0.0.0/0 port b mac 02:bb:00:00:00:02\n"
	      "route ::/0 port c mac 02:c6:00:00:00:02\n",
	      NULL, NULL);
	udp4(&f, IP4(10, 62, 1, 2), IP4(198, 51, 100, 7), 64);
	assert_int_equal(run(&f, 0, &out), SL_OUT(1));
	assert_memory_equal(out.b, nb_b, 6);
	udp6(&f, v6_host_a, v6_b, 64);
	if (run(&f, 0, &out) != SL_OUT(2))
		fail_msg("%s", stop());
	assert_memory_equal(out.b, nb_c6, 6);
	free(stop());
	start("route 0.0.0.0/0 port b mac 02:bb:00:00:00:02\n"
	      "route 10.62.3.0/24 port c mac 02:c0:00:00:00:02\n",
	      NULL, NULL);
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 3, 9), 64);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(2));
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 4, 9), 64);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(1));
	udp6(&f, v6_host_a, v6_b, 64); /* no IPv6 route at all */
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	text = stop();
	assert_has(text, " forwarded=2 no_route=1 ");
	free(text);
	expect_file_error("route 0.0.0.0/0 port b mac 02:bb:00:00:00:02\n"
			  "route 0.0.0.0/0 port a mac 02:bb:00:00:00:02\n",
			  "2: 0.0.0.0/0 is given twice (first on line 1)");
}

/* The forwarded frame byte by byte: only MACs, TTL and checksum change,
 * and the checksum is what a full computation gives. */
static void
test_forward_bytes(void **state)
{
	struct frame f, out, want;

	(void)state;
	start(routes, NULL, NULL);
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 2, 2), 64);
	assert_int_equal(run(&f, 0, &out), SL_OUT(1));
	want = f;
	memcpy(want.b, nb_b, 6);
	memcpy(want.b + 6, mac_b, 6);
	want.b[14 + 8] = 63;
	fix4(&want);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.b, want.b, want.len);
	/* 45 00 00 28 12 34 00 00 3f 11 cksum 0a 3e 01 02 0a 3e 02 02 */
	assert_int_equal(out.b[24] << 8 | out.b[25], 0x5212);

	/* Every TTL and many headers: incremental equals recomputed. */
	srand(7);
	for (unsigned i = 0; i < 2000; i++) {
		uint8_t ttl = (uint8_t)(2 + i % 254);

		udp4(&f, (uint32_t)rand(), IP4(10, 62, 2, 2), ttl);
		f.b[14 + 1] = (uint8_t)rand(); /* TOS */
		wr16(&f, 14 + 4, (uint16_t)rand());
		fix4(&f);
		if (f.b[14 + 12] == 0 || f.b[14 + 12] == 127 ||
		    f.b[14 + 12] >= 224)
			continue;
		assert_int_equal(run(&f, 0, &out), SL_OUT(1));
		want = f;
		want.b[14 + 8] = (uint8_t)(ttl - 1);
		fix4(&want);
		assert_memory_equal(out.b + 14, want.b + 14, 20);
	}
	free(stop());
}

/* An expected ICMPv4 error, built here field by field. */
static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* Ticks until the build has been taken; returns what was printed. */
static char *
reload_wait(const char *want)
{
	char *all = stub_capture_stderr(do_reload, NULL), *out;

	for (int i = 0; i < 1000 && strstr(all, want) == NULL; i++) {
		size_t n;

		usleep(10000);
		out = tick_output(stub_now_ns);
		n = strlen(all) + strlen(out) + 1;
		all = realloc(all, n);
		assert_non_null(all);
		strcat(all, out);
		free(out);
	}
	return all;
}

static void
test_reload(void **state)
{
	struct frame f;
	char *path, *out, line[512];

	(void)state;
	start(routes, NULL, &path);
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 9, 9), 64);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(1));
	/* A bad file: the old routes stay, the line is named. */
	rewrite_file(path, "port a\nroute 10.62.0.0/16 via 10.62.7.7\n");
	out = reload_wait("reload failed");
	snprintf(line, sizeof(line),
		 PROG ": reloading %s in the background; packets go on "
		      "through the 8 current routes until it is built\n",
		 path);
	assert_has(out, line);
	assert_has(out, "l3fwd-stats: reason=reload ");
	snprintf(line, sizeof(line),
		 PROG ": reload failed, keeping the 8 current routes: "
		      "%s:2: route via 10.62.7.7: no neigh line gives its "
		      "MAC and port\n",
		 path);
	assert_has(out, line);
	free(out);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(1));
	/* A good one: 10.62.0.0/16 now goes to c. */
	rewrite_file(path, "neigh 10.62.3.2 02:c0:00:00:00:02 port c\n"
			   "route 10.62.0.0/16 via 10.62.3.2\n");
	out = reload_wait("reloaded");
	snprintf(line, sizeof(line),
		 PROG ": reloaded %s: 2 IPv4 and 0 IPv6 routes (1 of them "
		      "neighbours), 1 ports\n",
		 path);
	assert_has(out, line);
	free(out);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(2));
	out = stop();
	assert_has(out, " forwarded=3 ");
	assert_has(out, " out.a=0 out.b=2 out.c=1\n");
	free(out);
	unlink(path);
	free(path);
}

/* A routes file of n /24s from 16.0.0.0 up through port b: a build of a
 * good fraction of a second (rte_lpm searches its rules linearly). */
static char *
big_routes(unsigned n)
{
	char *text = malloc((size_t)n * 64 + 1), *p = text;

	assert_non_null(text);
	for (unsigned i = 0; i < n; i++)
		p += sprintf(
			p, "route %u.%u.%u.0/24 port b mac 02:00:00:00:00:01\n",
			16 + (i >> 16), (i >> 8) & 255, i & 255);
	*p = '\0';
	return text;
}

/* SIGHUP during a build: read again once it ends; exit during a build:
 * waits for it, frees it unused. */
static void
test_reload_during_build(void **state)
{
	char *path, *text = big_routes(20000), *out, line[512];
	const char *at;
	int n = 0, rc;

	(void)state;
	path = write_file(routes);
	out = stub_init_output(&rc, PROG, "--routes", path, "--max-routes",
			       "30000", NULL);
	assert_int_equal(rc, 0);
	free(out);
	rewrite_file(path, text);
	out = stub_capture_stderr(do_reload, NULL);
	free(out);
	out = stub_capture_stderr(do_reload, NULL);
	snprintf(line, sizeof(line),
		 PROG ": SIGHUP during a reload: %s will be read again once "
		      "the current build ends\n",
		 path);
	assert_has(out, line);
	free(out);
	/* Both builds end: two "reloaded" lines, the second after a second
	 * "reloading". */
	for (int i = 0; i < 3000 && n < 2; i++) {
		usleep(10000);
		out = tick_output(stub_now_ns);
		for (at = out; (at = strstr(at, PROG ": reloaded ")) != NULL;
		     at++)
			n++;
		if (strstr(out, PROG ": reloading ") != NULL)
			assert_int_equal(n, 1);
		free(out);
	}
	assert_int_equal(n, 2);
	/* Exit during a build. */
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, PROG ": reloading ");
	free(out);
	out = stop();
	snprintf(line, sizeof(line),
		 PROG ": exiting during a reload: waiting for the build of %s "
		      "to end; its routes are not used\n",
		 path);
	assert_has(out, line);
	assert_has(out, "l3fwd-stats: reason=exit ");
	free(out);
	unlink(path);
	free(path);
	free(text);
}

static void
test_config_errors(void **state)
{
	(void)state;
	expect_file_error("port a\n\nrouter 10.0.0.0/8\n",
			  "3: unknown keyword 'router' (use port, neigh or "
			  "route)");
	expect_file_error("port x\n", "1: port 'x': no such port (sluice "
				      "status lists them)");
	expect_file_error("port a\nport a address 10.62.1.1\n",
			  "2: port 'a' is already given on line 1");
	expect_file_error("port a address 10.62.1\n",
			  "1: '10.62.1' is not an IPv4 or IPv6 address");
	expect_file_error("port a address 10.0.0.1 address 10.0.0.2\n",
			  "1: port 'a': a second IPv4 address");
	expect_file_error("port a colour blue\n",
			  "1: port 'a': unknown word 'colour' (use address "
			  "or mac)");
	expect_file_error("neigh 10.62.1.2 02:aa:00:00:00 port a\n",
			  "1: '02:aa:00:00:00' is not a MAC address "
			  "(xx:xx:xx:xx:xx:xx)");
	expect_file_error("neigh 10.62.1.2 02:aa:00:00:00:01 a\n",
			  "1: neigh: use neigh ADDR MAC port NAME");
	expect_file_error("route 10.62.1.0/33 via 10.62.1.2\n",
			  "1: '10.62.1.0/33': the prefix length is not 0 to "
			  "32");
	expect_file_error("route 10.62.1.1/24 via 10.62.1.2\n",
			  "1: '10.62.1.1/24' has host bits set (the prefix "
			  "is the network's first address)");
	expect_file_error("route fd62::/16 via 10.62.1.2\n",
			  "1: route fd62::/16 via 10.62.1.2: the next hop is "
			  "not of the route's family");
	expect_file_error("route 10.62.0.0/16 to b\n",
			  "1: route: use route PREFIX via ADDR, or route "
			  "PREFIX port NAME mac MAC");
	expect_file_error("route 10.62.0.0/16 port d mac 02:00:00:00:00:01\n",
			  "1: port 'd': cannot read its MAC address "
			  "(rte_eth_macaddr_get); give it: port d mac MAC");
	expect_file_error("neigh 10.62.1.2 02:aa:00:00:00:01 port a\n"
			  "route 10.62.0.0/16 via 10.62.1.2\n"
			  "route 10.62.0.0/16 port b mac 02:00:00:00:00:01\n",
			  "3: 10.62.0.0/16 is given twice (first on line 2)");
	/* A neighbour is its host route: the same prefix; the first
	 * repeated line is the one named. */
	expect_file_error("neigh fd62::2 02:aa:00:00:00:01 port a\n"
			  "route 10.0.0.0/8 port b mac 02:00:00:00:00:01\n"
			  "route 10.0.0.0/8 port b mac 02:00:00:00:00:01\n"
			  "route fd62::2/128 port b mac 02:00:00:00:00:01\n"
			  "route fd62::2/128 port b mac 02:00:00:00:00:01\n",
			  "3: 10.0.0.0/8 is given twice (first on line 2)");
	expect_file_error("neigh fd62::2 02:aa:00:00:00:01 port a\n"
			  "route fd62::2/128 port b mac 02:00:00:00:00:01\n",
			  "2: fd62::2/128 is given twice (first on line 1)");
}

static void
test_config_errors_2(void **state)
{
	char *path, line[512];

	(void)state;
	/* A port with no MAC, named on a port line: that line. */
	expect_file_error("\nport d address 10.62.4.1\n",
			  "2: port 'd': cannot read its MAC address "
			  "(rte_eth_macaddr_get); give it: port d mac MAC");
	/* Too many routes for --max-routes. */
	path = write_file("route 10.1.0.0/16 port a mac 02:00:00:00:00:01\n"
			  "route 10.2.0.0/16 port a mac 02:00:00:00:00:01\n"
			  "route 10.3.0.0/16 port a mac 02:00:00:00:00:01\n");
	snprintf(line, sizeof(line),
		 PROG ": %s:3: more than --max-routes 2 IPv4 routes (neigh "
		      "lines count as host routes)\n",
		 path);
	expect_init_error(PROG, line, "--routes", path, "--max-routes", "2",
			  NULL);
	unlink(path);
	free(path);
	/* tbl8 groups run out: two /25s in different /24s with one. */
	path = write_file("route 10.1.0.0/25 port a mac 02:00:00:00:00:01\n"
			  "route 10.2.0.0/25 port a mac 02:00:00:00:00:01\n");
	snprintf(line, sizeof(line),
		 PROG ": %s:2: cannot add 10.2.0.0/25: the IPv4 table has "
		      "no tbl8 group left (--tbl8-v4 1)\n",
		 path);
	expect_init_error(PROG, line, "--routes", path, "--tbl8-v4", "1", NULL);
	unlink(path);
	free(path);
	expect_init_error(PROG,
			  PROG ": /nonexistent/routes: cannot open: No such "
			       "file or directory\n",
			  "--routes", "/nonexistent/routes", NULL);
	expect_init_error(PROG, PROG ": missing --routes FILE\n", NULL);
	expect_init_error(PROG,
			  PROG ": --icmp-rate: '-1' is not a whole number "
			       "from 0 to 1000000",
			  "--routes", "/x", "--icmp-rate", "-1", NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loaded_message),
		cmocka_unit_test(test_lpm_choice),
		cmocka_unit_test(test_default_route),
		cmocka_unit_test(test_forward_bytes),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_during_build),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_errors_2),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
