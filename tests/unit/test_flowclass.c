/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-flowclass driven through its ops (nfs/flowclass/flowclass.c) with
 * the libsluice stand-in of nf_stub.c, plus stand-ins for the cross-layer
 * calls it makes: windows and the ant/elephant rule, one ChangeDefault per
 * class change to the right target, both directions as one flow,
 * --confirm, targets sluiced learns late, requests that cannot be queued,
 * replies, messages, the bounded table and idle eviction, arguments.
 */
#undef main /* meson.build renames flowclass.c's main to sl_fc_main */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

int sl_fc_main(int argc, char **argv);

#define init_with(rc, ...) stub_init_output(rc, "sluice-flowclass", __VA_ARGS__)
#define NS 1000000000ull
#define MS 1000000ull

/* ---- stand-ins for the calls of sluice/flow.h and nf.h ------------ */

#define MAX_REQ 64

struct req {
	struct sl_flow_match f;
	uint16_t service;
	sl_verdict_t to;
};

static struct req g_req[MAX_REQ];
static unsigned g_n_req;
static int g_req_fail;   /* next sl_change_default calls fail */
static int g_late_known; /* service "late" exists */

int64_t
sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
		  uint16_t service, sl_verdict_t to)
{
	(void)nf;
	if (g_req_fail)
		return -ENOBUFS;
	assert_true(g_n_req < MAX_REQ);
	g_req[g_n_req].f = *f;
	g_req[g_n_req].service = service;
	g_req[g_n_req].to = to;
	return ++g_n_req;
}

/* Services: 0 is the NF's own (nf_stub), then these. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	if (strcmp(name, "flowclass") == 0)
		return 0;
	if (strcmp(name, "fast") == 0)
		return 7;
	if (strcmp(name, "slow") == 0)
		return 8;
	if (strcmp(name, "late") == 0 && g_late_known)
		return 9;
	return -1;
}

int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	return strcmp(name, "out") == 0 ? 3 : -1;
}

/* ---- helpers ------------------------------------------------------ */

static void
reset(uint64_t now)
{
	memset(g_req, 0, sizeof(g_req));
	g_n_req = 0;
	g_req_fail = 0;
	g_late_known = 0;
	stub_now_ns = now;
}

/* Request i was ChangeDefault(F = the flow a <-> b, service, to). */
static void
assert_req(unsigned i, uint32_t a, uint16_t sport, uint32_t b, uint16_t dport,
	   uint16_t service, sl_verdict_t to)
{
	const struct req *r = &g_req[i];
	uint32_t lo = a < b ? a : b, hi = a < b ? b : a;

	assert_true(i < g_n_req);
	assert_int_equal(r->f.exact, 1);
	assert_int_equal(r->f.tuple.family, 4);
	assert_int_equal(r->f.tuple.proto, IPPROTO_UDP);
	/* Either direction names the flow; flowclass sends the canonical
	 * one (lower address first). */
	assert_int_equal(r->f.tuple.src.v4, htonl(lo));
	assert_int_equal(r->f.tuple.dst.v4, htonl(hi));
	assert_int_equal(r->f.tuple.sport, htons(a < b ? sport : dport));
	assert_int_equal(r->f.tuple.dport, htons(a < b ? dport : sport));
	assert_int_equal(r->service, service);
	assert_int_equal(r->to, to);
}

#define A IP4(10, 0, 0, 1)
#define B IP4(10, 0, 0, 2)
#define C IP4(10, 0, 0, 3)

/* Small (88-byte) and big (242-byte) UDP frames of flow a -> b. */
static void
small(struct frame *f, uint32_t a, uint16_t sp, uint32_t b, uint16_t dp)
{
	frame_ip4(f, IPPROTO_UDP, a, sp, b, dp, 46);
}

static void
big(struct frame *f, uint32_t a, uint16_t sp, uint32_t b, uint16_t dp)
{
	frame_ip4(f, IPPROTO_UDP, a, sp, b, dp, 200);
}

/* ---- tests -------------------------------------------------------- */

static void
test_classify_and_route(void **state)
{
	struct frame s, s_back, l;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "1000", "--ant-max-pps", "100",
			"--ant-max-size", "100", "--ant-to", "fast",
			"--elephant-to", "slow", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-flowclass: window 1000 ms; ant: at most 100 "
			"pps and 100 bytes per packet; ants -> fast, elephants "
			"-> slow, at (this service); up to 65536 flows, idle "
			"after 10000 ms\n");
	free(out);
	small(&s, A, 1000, B, 2000);
	small(&s_back, B, 2000, A, 1000);
	big(&l, C, 3000, B, 4000);

	/* Window 1 of both flows: 10 packets in 1 s, replies included. */
	for (unsigned i = 0; i < 10; i++) {
		struct frame two[2] = {i % 2 ? s_back : s, l};

		out = send_at(1 * NS + i * 100 * MS, two, 2);
		assert_string_equal(out, ""); /* not classified yet */
		free(out);
	}
	assert_int_equal(g_n_req, 0);
	/* The next packets close the windows: 10 pps; 88 vs 242 bytes. */
	out = send_at(2 * NS, &s, 1);
	assert_string_equal(out, "flowclass: udp 10.0.0.1:1000 > "
				 "10.0.0.2:2000 ant pps=10.0 size=88\n");
	free(out);
	assert_int_equal(g_n_req, 1);
	assert_req(0, A, 1000, B, 2000, 0, SL_TO(7));
	out = send_at(2 * NS, &l, 1);
	assert_string_equal(out, "flowclass: udp 10.0.0.3:3000 > "
				 "10.0.0.2:4000 elephant pps=10.0 size=242\n");
	free(out);
	assert_int_equal(g_n_req, 2);
	assert_req(1, C, 3000, B, 4000, 0, SL_TO(8));

	/* Same class again: no line, no request. 150 packets in the next
	 * second make the small flow an elephant (by rate). */
	for (unsigned i = 0; i < 149; i++)
		send_quiet(2 * NS + i * 6 * MS, i % 3 ? &s : &s_back, 1);
	send_quiet(3 * NS + 1, &l, 1);
	assert_int_equal(g_n_req, 2);
	out = send_at(3 * NS + 1, &s_back, 1);
	assert_string_equal(out, "flowclass: udp 10.0.0.1:1000 > "
				 "10.0.0.2:2000 elephant pps=150.0 size=88\n");
	free(out);
	assert_int_equal(g_n_req, 3);
	assert_req(2, A, 1000, B, 2000, 0, SL_TO(8));

	/* Replies: one applied, one rejected with its flow and reason. */
	out = reply_output(1, 0, "");
	assert_string_equal(out, "");
	free(out);
	out = reply_output(3, EINVAL, "graph 'g' has no edge from 'fc'");
	assert_string_equal(out,
			    "flowclass-rejected: id=3 flow=udp 10.0.0.1:1000 > "
			    "10.0.0.2:2000 class=elephant to=slow "
			    "reason=graph 'g' has no edge from 'fc'\n");
	free(out);
	out = reply_output(1000, ENOENT, "gone");
	assert_string_equal(out, "flowclass-rejected: id=1000 reason=gone\n");
	free(out);

	stub_now_ns = 4 * NS;
	out = fini_output();
	assert_has(out, "flowclass-stats: reason=exit uptime=3.0 packets=173 ");
	assert_has(out, " non_ip=0 flows=2 flows_capacity=65536 "
			"flows_untracked=0 flows_seen=2 evicted=0 "
			"unclassified=0 ants=0 elephants=2 changes=3 "
			"requests=3 applied=1 rejected=2 not_queued=0\n");
	free(out);
}

/* Windows that no packet closes are closed by the sweep; idle flows go. */
static void
test_sweep_and_idle(void **state)
{
	struct frame s;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "200", "--ant-to", "fast",
			"--idle-ms", "1000", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	small(&s, A, 1, B, 2);
	send_quiet(1 * NS, &s, 1);
	send_quiet(1 * NS + 50 * MS, &s, 1);
	/* The sweep runs every half window; this window ends at 1.2 s. */
	out = tick_output(1 * NS + 150 * MS);
	assert_string_equal(out, "");
	free(out);
	out = tick_output(1 * NS + 250 * MS);
	assert_string_equal(out, "flowclass: udp 10.0.0.1:1 > 10.0.0.2:2 "
				 "ant pps=8.0 size=88\n");
	free(out);
	assert_int_equal(g_n_req, 1);
	assert_req(0, A, 1, B, 2, 0, SL_TO(7));
	/* Empty windows keep the class; after 1 s without packets the
	 * flow is evicted. */
	for (uint64_t t = 1 * NS + 350 * MS; t < 2 * NS; t += 100 * MS) {
		out = tick_output(t);
		assert_string_equal(out, "");
		free(out);
	}
	out = msg_output("stats", "");
	assert_has(out, " flows=1 ");
	assert_has(out, " evicted=0 unclassified=0 ants=1 elephants=0 ");
	free(out);
	free(tick_output(2 * NS + 100 * MS));
	out = msg_output("stats", "");
	assert_has(out, "flowclass-stats: reason=message ");
	assert_has(out, " flows=0 ");
	assert_has(out, " evicted=1 unclassified=0 ants=0 elephants=0 ");
	assert_has(out, "flowclass-message: key=stats value= applied\n");
	free(out);
	/* It comes back as a new flow: classified (and routed) again. */
	send_quiet(3 * NS, &s, 1);
	out = send_at(3 * NS + 200 * MS, &s, 1);
	assert_string_equal(out, "flowclass: udp 10.0.0.1:1 > 10.0.0.2:2 "
				 "ant pps=5.0 size=88\n");
	free(out);
	assert_int_equal(g_n_req, 2);
	free(fini_output());
}

/* With a tick every 10 ms the sweep visits a slice of the table per tick
 * and still ends every window within half a window. */
static void
test_sweep_slices(void **state)
{
	struct frame f[40];
	unsigned closed = 0, i;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "100", "--flows", "4096",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	for (i = 0; i < 40; i++)
		small(&f[i], A, (uint16_t)(100 + i), B, 2);
	free(send_at(1 * NS, f, 40));
	for (uint64_t t = 1 * NS + 10 * MS; t <= 1 * NS + 200 * MS;
	     t += 10 * MS) {
		const char *l;

		out = tick_output(t);
		for (l = strstr(out, "flowclass: "); l != NULL;
		     l = strstr(l + 1, "flowclass: ")) {
			double pps = atof(strstr(l, "pps=") + 4);

			/* Ended after 100 ms, and at most 50 ms late. */
			assert_true(t >= 1 * NS + 100 * MS &&
				    t <= 1 * NS + 150 * MS);
			assert_true(pps > 1 / 0.151 && pps <= 1 / 0.1);
			closed++;
		}
		free(out);
	}
	assert_int_equal(closed, 40);
	free(fini_output());
}

/* --confirm 2: a class changes only after two windows in a row. */
static void
test_confirm(void **state)
{
	struct frame s, l;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "100", "--ant-max-size", "100",
			"--confirm", "2", "--ant-to", "fast", "--elephant-to",
			"port:out", "--at", "slow", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "ants -> fast, elephants -> port:out, at slow;");
	free(out);
	small(&s, A, 1, B, 2);
	big(&l, A, 1, B, 2);
	send_quiet(1 * NS, &s, 1);
	/* The first class needs no confirmation. */
	out = send_at(1 * NS + 100 * MS, &l, 1);
	assert_has(out, " ant pps=10.0 size=88\n");
	free(out);
	assert_req(0, A, 1, B, 2, 8, SL_TO(7));
	/* big (elephant), small (ant: the streak restarts), big, big. */
	out = send_at(1 * NS + 200 * MS, &s, 1);
	assert_string_equal(out, "");
	free(out);
	out = send_at(1 * NS + 300 * MS, &l, 1);
	assert_string_equal(out, "");
	free(out);
	out = send_at(1 * NS + 400 * MS, &l, 1);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(g_n_req, 1);
	out = send_at(1 * NS + 500 * MS, &l, 1);
	assert_string_equal(out, "flowclass: udp 10.0.0.1:1 > 10.0.0.2:2 "
				 "elephant pps=10.0 size=242\n");
	free(out);
	assert_int_equal(g_n_req, 2);
	assert_req(1, A, 1, B, 2, 8, SL_OUT(3));
	free(fini_output());
}

/* A target sluiced learns late, a class without target, a request that
 * cannot be queued: re-routing waits and is tried again. */
static void
test_late_target_and_retry(void **state)
{
	struct frame s, l;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "100", "--ant-max-size", "100",
			"--ant-to", "late", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-flowclass: --ant-to 'late': sluiced has no "
			"such service yet; ants are re-routed once it has\n");
	assert_has(out, "ants -> late, elephants -> (unchanged)");
	free(out);
	small(&s, A, 1, B, 2);
	big(&l, C, 1, B, 2);
	send_quiet(1 * NS, &s, 1);
	send_quiet(1 * NS, &l, 1);
	out = send_at(1 * NS + 100 * MS, &s, 1);
	assert_has(out, " ant ");
	free(out);
	out = send_at(1 * NS + 100 * MS, &l, 1);
	assert_has(out, " elephant ");
	free(out);
	assert_int_equal(g_n_req, 0); /* late unknown; no elephant target */
	g_late_known = 1;
	g_req_fail = 1;
	free(tick_output(1 * NS + 160 * MS)); /* resolves, cannot queue */
	assert_int_equal(g_n_req, 0);
	g_req_fail = 0;
	free(tick_output(1 * NS + 220 * MS));
	assert_int_equal(g_n_req, 1);
	assert_req(0, A, 1, B, 2, 0, SL_TO(9));
	free(tick_output(1 * NS + 400 * MS));
	assert_int_equal(g_n_req, 1); /* asked once */
	stub_now_ns = 2 * NS;
	out = fini_output();
	assert_has(out, " ants=1 elephants=1 changes=2 requests=1 applied=0 "
			"rejected=0 not_queued=1\n");
	free(out);
}

/* --flows bounds the table; non-IP frames pass and are counted. */
static void
test_capacity(void **state)
{
	struct frame f[5];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--flows", "2", "--stats-ms", "1000", NULL);
	assert_int_equal(rc, 0);
	free(out);
	small(&f[0], A, 1, B, 2);
	small(&f[1], A, 1, C, 2);
	small(&f[2], B, 1, C, 2); /* no room */
	small(&f[3], C, 2, A, 1); /* the reply of flow 2 */
	memset(&f[4], 0, sizeof(f[4]));
	put_eth(&f[4], 0x0806, 0, NULL);
	put_zero(&f[4], 28);
	free(send_at(1 * NS, f, 5));
	free(send_at(1 * NS + 500 * MS, &f[2], 1));
	out = tick_output(1 * NS + 999 * MS);
	assert_string_equal(out, "");
	free(out);
	out = tick_output(2 * NS);
	assert_has(out, "flowclass-stats: reason=interval uptime=1.0 "
			"packets=6 bytes=482 pps=6 non_ip=1 flows=2 "
			"flows_capacity=2 flows_untracked=2 flows_seen=2 ");
	free(out);
	free(fini_output());
}

static void
test_messages(void **state)
{
	struct frame s;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "100", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	out = msg_output("ant-max-pps", "5");
	assert_string_equal(out, "flowclass-message: key=ant-max-pps value=5 "
				 "applied\n");
	free(out);
	out = msg_output("ant-max-size", "x");
	assert_string_equal(out, "flowclass-message: key=ant-max-size "
				 "value=x invalid (bytes from 1 to "
				 "1000000)\n");
	free(out);
	out = msg_output("colour", "blue");
	assert_string_equal(out, "flowclass-message: key=colour value=blue "
				 "ignored (keys: ant-max-pps, ant-max-size, "
				 "stats)\n");
	free(out);
	/* 10 pps is above the new limit of 5. */
	small(&s, A, 1, B, 2);
	send_quiet(1 * NS, &s, 1);
	out = send_at(1 * NS + 100 * MS, &s, 1);
	assert_has(out, " elephant pps=10.0 ");
	free(out);
	free(fini_output());
}

static void
test_args(void **state)
{
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--window-ms", "5", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-flowclass: --window-ms: '5' is not a whole "
			"number from 10 to 3600000\n");
	free(out);
	out = init_with(&rc, "--ant-max-pps", "-1", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "--ant-max-pps: '-1' is not a number from 0 to ");
	free(out);
	out = init_with(&rc, "--window-ms", "1000", "--idle-ms", "2000", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-flowclass: --idle-ms 2000: give at least 3 "
			"windows (3000 ms)");
	free(out);
	out = init_with(&rc, "--ant-to", "port:nope", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-flowclass: --ant-to 'port:nope': no such "
			"port (sluice status lists them)\n");
	free(out);
	out = init_with(&rc, "--at", "drop", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "--at 'drop': give a service");
	free(out);
	out = init_with(&rc, "--flows", "0", NULL);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(out,
			    "sluice-flowclass: --flows: '0' is not a whole "
			    "number from 1 to 16777216\n");
	free(out);
	out = init_with(&rc, "--confirm", "1.5", NULL);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(out, "sluice-flowclass: --confirm: '1.5' is not a "
				 "whole number from 1 to 100\n");
	free(out);
	out = init_with(&rc, "stray", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-flowclass: unexpected argument 'stray'\n");
	free(out);
	out = init_with(&rc, "--bogus", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-flowclass: unrecognized option '--bogus'\n"
			"usage: sluice-flowclass ");
	free(out);
	assert_null(sl_nf_priv(stub_nf()));
	/* --at naming an unknown service waits for it. */
	out = init_with(&rc, "--at", "nosuch", "--elephant-to", "drop", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-flowclass: --at 'nosuch': sluiced has no such "
			"service yet; re-routing waits until it has\n");
	assert_has(out, "ants -> (unchanged), elephants -> drop, at nosuch;");
	free(out);
	free(fini_output());
	/* Defaults. */
	out = init_with(&rc, NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-flowclass: window 1000 ms; ant: at most 1000 "
			"pps and 512 bytes per packet; ants -> (unchanged), "
			"elephants -> (unchanged), at (this service); up to "
			"65536 flows, idle after 10000 ms\n");
	free(out);
	free(fini_output());
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-flowclass", sl_fc_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_and_route),
		cmocka_unit_test(test_sweep_and_idle),
		cmocka_unit_test(test_sweep_slices),
		cmocka_unit_test(test_confirm),
		cmocka_unit_test(test_late_target_and_retry),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests_name("flowclass", tests, setup,
					   stub_teardown);
}
