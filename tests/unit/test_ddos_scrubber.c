/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-scrubber driven through its ops (nfs/scrubber/scrubber.c) with the
 * libsluice stand-in of nf_stub.c and stand-ins for the cross-layer calls:
 * RequestMe for each --prefix at start and ChangeDefault at each --at
 * (retried while a service is unknown or a request cannot be queued),
 * replies, drop/pass by source prefix (IPv4 and IPv6, replies to the
 * prefix pass), --rate, prefixes added by message, counters, and option
 * errors word for word.
 */
#undef main /* meson.build renames scrubber.c's main to sl_sc_main */

#include <errno.h>
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

#include "sl_match.h"
#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

int sl_sc_main(int argc, char **argv);

#define init_with(rc, ...) stub_init_output(rc, "sluice-scrubber", __VA_ARGS__)
#define NS 1000000000ull
#define MS 1000000ull

/* ---- stand-ins for sluice/flow.h ------------------------------------ */

#define MAX_REQ 64

enum { REQ_ME = 1, REQ_CD };

struct req {
	int kind;
	char match[160];
	uint16_t service;
	sl_verdict_t to;
};

static struct req g_req[MAX_REQ];
static unsigned g_n_req;
static int g_req_fail;    /* requests fail while set */
static int g_front_known; /* service "front" exists */

/* As libsluice: the text must parse as an sl_match. */
int
sl_flow_match_parse(const char *text, struct sl_flow_match *f, char *err,
		    size_t errlen)
{
	struct sl_match mt;

	memset(f, 0, sizeof(*f));
	if (sl_match_parse(text, &mt, err, errlen) != 0)
		return -EINVAL;
	snprintf(f->text, sizeof(f->text), "%s", text);
	return 0;
}

static int64_t
record(int kind, const struct sl_flow_match *f, uint16_t service,
       sl_verdict_t to)
{
	if (g_req_fail)
		return -ENOBUFS;
	assert_true(g_n_req < MAX_REQ);
	assert_int_equal(f->exact, 0);
	g_req[g_n_req].kind = kind;
	snprintf(g_req[g_n_req].match, sizeof(g_req[0].match), "%s", f->text);
	g_req[g_n_req].service = service;
	g_req[g_n_req].to = to;
	return ++g_n_req;
}

int64_t
sl_request_me(struct sl_nf *nf, const struct sl_flow_match *f, uint16_t service)
{
	(void)nf;
	return record(REQ_ME, f, service, 0);
}

int64_t
sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
		  uint16_t service, sl_verdict_t to)
{
	(void)nf;
	return record(REQ_CD, f, service, to);
}

/* Services: 0 is the NF's own (nf_stub); "detect" is 3, "front" 4 once
 * known. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	if (strcmp(name, "detect") == 0)
		return 3;
	if (strcmp(name, "front") == 0 && g_front_known)
		return 4;
	return -1;
}

/* ---- helpers ------------------------------------------------------- */

static void
reset(uint64_t now)
{
	memset(g_req, 0, sizeof(g_req));
	g_n_req = 0;
	g_req_fail = 0;
	g_front_known = 0;
	stub_now_ns = now;
}

static void
assert_req(unsigned i, int kind, const char *match, uint16_t service,
	   sl_verdict_t to)
{
	assert_true(i < g_n_req);
	assert_int_equal(g_req[i].kind, kind);
	assert_string_equal(g_req[i].match, match);
	assert_int_equal(g_req[i].service, service);
	assert_int_equal(g_req[i].to, to);
}

/* The verdict of one frame at time now. */
static sl_verdict_t
verdict_at(uint64_t now, const struct frame *f)
{
	struct rte_mbuf *m = stub_mbuf(f->b, f->len);
	sl_verdict_t v;

	assert_non_null(m);
	stub_now_ns = now;
	v = stub_ops->process_pkt(stub_nf(), m);
	stub_mbuf_free(m);
	return v;
}

/* ---- tests --------------------------------------------------------- */

static void
test_requests_and_drops(void **state)
{
	static const uint8_t v6_atk[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x66,
					   0,    9,    0,    0,    0, 0,
					   0,    0,    0,    1};
	struct frame atk, atk2, reply, normal, v6, v6_other, arp;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--prefix", "10.66.6.0/24", "--prefix",
			"2001:db8:66::/48", "--at", "detect", "--stats-ms", "0",
			NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "sluice-scrubber: scrubs "
				 "10.66.6.0/24,2001:db8:66::/48 (RequestMe; "
				 "later flows via detect); drops them\n");
	free(out);
	/* At start: RequestMe and ChangeDefault(detect -> scrubber) for
	 * each prefix. */
	assert_int_equal(g_n_req, 4);
	assert_req(0, REQ_ME, "src=10.66.6.0/24", 0, 0);
	assert_req(1, REQ_CD, "src=10.66.6.0/24", 3, SL_TO(0));
	assert_req(2, REQ_ME, "src=2001:db8:66::/48", 0, 0);
	assert_req(3, REQ_CD, "src=2001:db8:66::/48", 3, SL_TO(0));
	/* Ticks send nothing more. */
	free(tick_output(1 * NS + 10 * MS));
	assert_int_equal(g_n_req, 4);
	out = reply_output(1, 0, "");
	assert_string_equal(out, "scrubber-request: id=1 type=request_me "
				 "prefix=10.66.6.0/24 result=applied\n");
	free(out);
	out = reply_output(2, 0, "");
	assert_string_equal(out, "scrubber-request: id=2 type=change_default "
				 "prefix=10.66.6.0/24 at=detect "
				 "result=applied\n");
	free(out);
	out = reply_output(4, EINVAL, "graph 'g' has no edge from 'detect'");
	assert_string_equal(out, "scrubber-request: id=4 type=change_default "
				 "prefix=2001:db8:66::/48 at=detect "
				 "result=rejected reason=graph 'g' has no edge "
				 "from 'detect'\n");
	free(out);
	out = reply_output(4, 0, ""); /* answered already: not ours */
	assert_string_equal(out, "");
	free(out);

	frame_ip4(&atk, IPPROTO_UDP, IP4(10, 66, 6, 9), 1000,
		  IP4(192, 168, 0, 1), 80, 18);
	frame_ip4(&atk2, IPPROTO_TCP, IP4(10, 66, 6, 255), 1000,
		  IP4(192, 168, 0, 1), 80, 100);
	frame_ip4(&reply, IPPROTO_UDP, IP4(192, 168, 0, 1), 80,
		  IP4(10, 66, 6, 9), 1000, 18);
	frame_ip4(&normal, IPPROTO_UDP, IP4(10, 66, 7, 9), 1000,
		  IP4(192, 168, 0, 1), 80, 18);
	frame_ip6(&v6, IPPROTO_UDP, v6_atk, 1, v6_b, 2, 10);
	frame_ip6(&v6_other, IPPROTO_UDP, v6_a, 1, v6_b, 2, 10);
	memset(&arp, 0, sizeof(arp));
	put_eth(&arp, 0x0806, 0, NULL);
	put_zero(&arp, 28);

	assert_int_equal(verdict_at(2 * NS, &atk), SL_DROP);
	assert_int_equal(verdict_at(2 * NS, &atk2), SL_DROP);
	assert_int_equal(verdict_at(2 * NS, &reply), SL_NEXT);
	assert_int_equal(verdict_at(2 * NS, &normal), SL_NEXT);
	assert_int_equal(verdict_at(2 * NS, &v6), SL_DROP);
	assert_int_equal(verdict_at(2 * NS, &v6_other), SL_NEXT);
	assert_int_equal(verdict_at(2 * NS, &arp), SL_NEXT);

	out = fini_output();
	assert_has(out, "scrubber-stats: reason=exit ");
	assert_has(out, " packets=7 ");
	assert_has(out, " non_ip=1 passed=4 passed_rate=0 dropped_prefix=3 "
			"dropped_rate=0 prefixes=2 requests=4 applied=2 "
			"rejected=1 not_queued=0\n");
	assert_has(out, "scrubber-prefix: prefix=10.66.6.0/24 packets=2 "
			"dropped=2 passed=0\n");
	assert_has(out, "scrubber-prefix: prefix=2001:db8:66::/48 packets=1 "
			"dropped=1 passed=0\n");
	free(out);
}

static void
test_retries(void **state)
{
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	g_req_fail = 1;
	out = init_with(&rc, "--prefix", "10.66.6.0/24", "--at", "front",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	assert_int_equal(g_n_req, 0);
	/* The queue takes requests again; "front" is still unknown. */
	g_req_fail = 0;
	free(tick_output(1 * NS + 10 * MS));
	assert_int_equal(g_n_req, 1);
	assert_req(0, REQ_ME, "src=10.66.6.0/24", 0, 0);
	free(tick_output(1 * NS + 20 * MS));
	assert_int_equal(g_n_req, 1);
	g_front_known = 1;
	free(tick_output(1 * NS + 30 * MS));
	assert_int_equal(g_n_req, 2);
	assert_req(1, REQ_CD, "src=10.66.6.0/24", 4, SL_TO(0));
	free(tick_output(1 * NS + 40 * MS));
	assert_int_equal(g_n_req, 2);
	out = fini_output();
	assert_has(out, " requests=2 applied=0 rejected=0 not_queued=1\n");
	free(out);
}

static void
test_rate(void **state)
{
	struct frame atk;
	unsigned passed = 0;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--prefix", "10.66.6.0/24", "--rate", "10",
			"--burst", "3", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "; lets 10 pps per prefix through (burst 3)\n");
	free(out);
	frame_ip4(&atk, IPPROTO_UDP, IP4(10, 66, 6, 9), 1000,
		  IP4(192, 168, 0, 1), 80, 18);
	/* A burst of 3 passes, then nothing until tokens come back at 10
	 * per second: one every 100 ms. */
	for (unsigned i = 0; i < 5; i++)
		passed += verdict_at(2 * NS, &atk) == SL_NEXT;
	assert_int_equal(passed, 3);
	assert_int_equal(verdict_at(2 * NS + 99 * MS, &atk), SL_DROP);
	assert_int_equal(verdict_at(2 * NS + 100 * MS + 1000, &atk), SL_NEXT);
	assert_int_equal(verdict_at(2 * NS + 100 * MS + 1000, &atk), SL_DROP);
	/* Ten seconds idle: the bucket holds at most --burst. */
	passed = 0;
	for (unsigned i = 0; i < 5; i++)
		passed += verdict_at(12 * NS, &atk) == SL_NEXT;
	assert_int_equal(passed, 3);
	out = fini_output();
	assert_has(out, " passed=0 passed_rate=7 dropped_prefix=0 "
			"dropped_rate=6 prefixes=1 ");
	assert_has(out, "scrubber-prefix: prefix=10.66.6.0/24 packets=13 "
			"dropped=6 passed=7\n");
	free(out);

	/* --rate without --burst: a second's worth. */
	out = init_with(&rc, "--prefix", "10.66.6.0/24", "--rate", "2.5",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "lets 2.5 pps per prefix through (burst 2.5)\n");
	free(out);
	free(fini_output());
}

static void
test_messages(void **state)
{
	struct frame atk;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--prefix", "10.66.6.0/24", "--stats-ms", "0",
			NULL);
	assert_int_equal(rc, 0);
	free(out);
	assert_int_equal(g_n_req, 1);
	frame_ip4(&atk, IPPROTO_UDP, IP4(10, 99, 0, 1), 1000,
		  IP4(192, 168, 0, 1), 80, 18);
	assert_int_equal(verdict_at(2 * NS, &atk), SL_NEXT);
	/* An alarm for another prefix: scrubbed too, pulled at once. */
	out = msg_output("alarm", "10.99.0.0/16");
	assert_string_equal(out, "scrubber-message: key=alarm "
				 "value=10.99.0.0/16 applied\n");
	free(out);
	assert_int_equal(g_n_req, 2);
	assert_req(1, REQ_ME, "src=10.99.0.0/16", 0, 0);
	assert_int_equal(verdict_at(2 * NS, &atk), SL_DROP);
	out = msg_output("add", "10.99.0.0/16");
	assert_string_equal(out, "scrubber-message: key=add "
				 "value=10.99.0.0/16 ignored: already "
				 "scrubbed\n");
	free(out);
	out = msg_output("add", "10.99.0.1/16");
	assert_string_equal(out, "scrubber-message: key=add "
				 "value=10.99.0.1/16 invalid: '10.99.0.1/16' "
				 "has bits set after the prefix length: write "
				 "10.99.0.0/16 (or the address alone for one "
				 "host)\n");
	free(out);
	out = msg_output("stats", "");
	assert_has(out, "scrubber-stats: reason=message ");
	assert_has(out, " passed=1 passed_rate=0 dropped_prefix=1 ");
	assert_has(out, "scrubber-prefix: prefix=10.99.0.0/16 packets=1 "
			"dropped=1 passed=0\n");
	free(out);
	out = msg_output("frob", "x");
	assert_string_equal(out, "scrubber-message: key=frob value=x ignored "
				 "(keys: alarm, add, stats)\n");
	free(out);
	/* Up to 16 prefixes. */
	for (unsigned i = 0; i < 14; i++) {
		char p[32];

		snprintf(p, sizeof(p), "10.200.%u.0/24", i);
		free(msg_output("add", p));
	}
	out = msg_output("add", "10.201.0.0/24");
	assert_string_equal(out, "scrubber-message: key=add "
				 "value=10.201.0.0/24 ignored: at most 16 "
				 "prefixes\n");
	free(out);
	assert_int_equal(g_n_req, 16);
	free(fini_output());
}

#define expect_error(...) expect_init_error("sluice-scrubber", __VA_ARGS__)

static void
test_args(void **state)
{
	(void)state;
	reset(1 * NS);
	expect_error("sluice-scrubber: give at least one --prefix PREFIX (the "
		     "source prefix to scrub, e.g. 10.66.6.0/24)\n",
		     "--rate", "5", NULL);
	expect_error("sluice-scrubber: --prefix: '10.66.6.1/24' has bits set "
		     "after the prefix length: write 10.66.6.0/24 (or the "
		     "address alone for one host)\n",
		     "--prefix", "10.66.6.1/24", NULL);
	expect_error("sluice-scrubber: --prefix: 'evil' is not an address "
		     "prefix: write A.B.C.D/N (IPv4) or X:Y::Z/N (IPv6), e.g. "
		     "10.66.6.0/24\n",
		     "--prefix", "evil", NULL);
	expect_error("sluice-scrubber: --prefix 10.66.6.0/24: given twice; "
		     "give each prefix once\n",
		     "--prefix", "10.66.6.0/24", "--prefix", "10.66.6.0/24",
		     NULL);
	expect_error("sluice-scrubber: --at: 'port:out' is not a service name "
		     "(1 to 63 characters; the graph node in front of the "
		     "scrubber)\n",
		     "--prefix", "10.66.6.0/24", "--at", "port:out", NULL);
	expect_error("sluice-scrubber: --rate: '-1' is not a number from 0 to "
		     "1000000000000\n",
		     "--prefix", "10.66.6.0/24", "--rate", "-1", NULL);
	expect_error("sluice-scrubber: --burst needs --rate (without it every "
		     "packet of the prefixes is dropped)\n",
		     "--prefix", "10.66.6.0/24", "--burst", "4", NULL);
	expect_error("sluice-scrubber: unexpected argument '10.66.6.0/24'\n",
		     "10.66.6.0/24", NULL);
	expect_error("unrecognized option '--prefixes'", "--prefixes", "x",
		     NULL);
	assert_int_equal(g_n_req, 0); /* nothing sent on an error */
}

static int
setup(void **state)
{
	char *argv[] = {(char *)(uintptr_t) "sluice-scrubber", NULL};

	(void)state;
	assert_int_equal(sl_sc_main(1, argv), 0);
	return stub_ops == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests_and_drops),
		cmocka_unit_test(test_retries),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests_name("ddos_scrubber", tests, setup, NULL);
}
