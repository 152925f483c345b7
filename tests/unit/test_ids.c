/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids driven through its ops (nfs/ids/ids.c) with the libsluice
 * stand-in of nf_stub.c and stand-ins for sl_message, sl_change_default
 * and sl_flow_of_pkt: signatures split across TCP segments, retransmitted
 * and missing bytes, both directions (-> and <>), overlapping rules,
 * rules that must not match (offset, depth, distance, within and nocase
 * boundaries, address and port sets), drop and divert, the bounded flow
 * table and its timeout, reload, and every rule error word for word.
 */
#undef main /* meson.build renames ids.c's main to sl_ids_main */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"
#include "rules.h"

int sl_ids_main(int argc, char **argv);

#define PROG "sluice-ids"
#define NS 1000000000ull
#define CLI IP4(10, 65, 1, 2)
#define SRV IP4(10, 65, 2, 80)
#define SANDBOX 7

/* ---- stand-ins ----------------------------------------------------- */

#define MAX_MSG 64

struct msg {
	uint16_t service;
	char key[64];
	char value[256];
};

static struct msg g_msg[MAX_MSG];
static unsigned g_n_msg;
static int g_msg_fail; /* sl_message fails while set */

struct cd {
	struct sl_5tuple t;
	uint16_t service;
	sl_verdict_t to;
};

static struct cd g_cd[8];
static unsigned g_n_cd;
static int g_cd_fail;

int64_t
sl_message(struct sl_nf *nf, uint16_t service, const char *key,
	   const char *value)
{
	(void)nf;
	if (g_msg_fail)
		return -ENOBUFS;
	assert_true(g_n_msg < MAX_MSG);
	g_msg[g_n_msg].service = service;
	snprintf(g_msg[g_n_msg].key, sizeof(g_msg[0].key), "%s", key);
	snprintf(g_msg[g_n_msg].value, sizeof(g_msg[0].value), "%s", value);
	return ++g_n_msg;
}

int64_t
sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
		  uint16_t service, sl_verdict_t to)
{
	(void)nf;
	if (g_cd_fail)
		return -ENOBUFS;
	assert_true(g_n_cd < 8);
	assert_int_equal(f->exact, 1);
	g_cd[g_n_cd].t = f->tuple;
	g_cd[g_n_cd].service = service;
	g_cd[g_n_cd].to = to;
	return 100 + ++g_n_cd;
}

int
sl_flow_of_pkt(const struct rte_mbuf *m, struct sl_flow_match *f)
{
	memset(f, 0, sizeof(*f));
	f->exact = 1;
	return sl_pkt_flow_tuple(m, &f->tuple) == 0 ? 0 : -ENOENT;
}

/* Services: 0 is the NF's own (nf_stub); "sandbox" is 7. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	return strcmp(name, "sandbox") == 0 ? SANDBOX : -1;
}

/* ---- helpers ------------------------------------------------------- */

static char g_path[64];

static void
write_rules(const char *text)
{
	FILE *f;

	snprintf(g_path, sizeof(g_path), "/tmp/sl_ids_test_%d.rules",
		 (int)getpid());
	f = fopen(g_path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Starts the NF on these rules (and more arguments, up to 6). */
static void
start(const char *rules, const char *a1, const char *a2)
{
	char *out;
	int rc;

	g_n_msg = 0;
	g_msg_fail = 0;
	g_n_cd = 0;
	g_cd_fail = 0;
	stub_now_ns = 1 * NS;
	write_rules(rules);
	out = stub_init_output(&rc, PROG, "--rules", g_path, a1, a2, NULL);
	if (rc != 0)
		fail_msg("init failed: %s", out);
	free(out);
}

static void
stop(void)
{
	free(fini_output());
	unlink(g_path);
}

/* A TCP segment: flags, sequence number and payload. */
static void
tcp_frame(struct frame *f, uint32_t src, uint16_t sport, uint32_t dst,
	  uint16_t dport, uint8_t flags, uint32_t seq, const char *payload)
{
	uint32_t n = (uint32_t)strlen(payload);

	memset(f, 0, sizeof(*f));
	put_eth(f, 0x0800, 0, NULL);
	put_ipv4(f, IPPROTO_TCP, src, dst, (uint16_t)(20 + n), 0, 0);
	put16(f, sport);
	put16(f, dport);
	put32(f, seq);
	put32(f, 0);
	put8(f, 0x50);
	put8(f, flags);
	put16(f, 0xffff);
	put32(f, 0);
	put(f, payload, n);
}

static void
udp_frame(struct frame *f, uint32_t src, uint16_t sport, uint32_t dst,
	  uint16_t dport, const char *payload)
{
	uint32_t n = (uint32_t)strlen(payload);

	memset(f, 0, sizeof(*f));
	put_eth(f, 0x0800, 0, NULL);
	put_ipv4(f, IPPROTO_UDP, src, dst, (uint16_t)(8 + n), 0, 0);
	put16(f, sport);
	put16(f, dport);
	put16(f, (uint16_t)(8 + n));
	put16(f, 0);
	put(f, payload, n);
}

struct one {
	const struct frame *f;
	sl_verdict_t v;
};

/* Runs one packet through process_pkt; its bytes must not change. */
static void
do_one(void *arg)
{
	struct one *o = arg;
	struct rte_mbuf *m = stub_mbuf(o->f->b, o->f->len);

	assert_non_null(m);
	o->v = stub_ops->process_pkt(stub_nf(), m);
	assert_int_equal(rte_pktmbuf_pkt_len(m), o->f->len);
	assert_memory_equal(rte_pktmbuf_mtod(m, void *), o->f->b, o->f->len);
	stub_mbuf_free(m);
}

/* Sends f; returns its verdict, and what was printed in *out if out. */
static sl_verdict_t
send1(const struct frame *f, char **out)
{
	struct one o = {f, 0xdead};
	char *text = stub_capture_stderr(do_one, &o);

	assert_non_null(text);
	if (out != NULL)
		*out = text;
	else
		free(text);
	return o.v;
}

/* A client -> server segment of flow sport, at seq 1000 + off. */
static sl_verdict_t
c2s(uint16_t sport, uint32_t off, const char *payload)
{
	struct frame f;

	tcp_frame(&f, CLI, sport, SRV, 80, 0x18, 1000 + off, payload);
	return send1(&f, NULL);
}

static sl_verdict_t
s2c(uint16_t sport, uint32_t off, const char *payload)
{
	struct frame f;

	tcp_frame(&f, SRV, 80, CLI, sport, 0x18, 5000 + off, payload);
	return send1(&f, NULL);
}

static char *
stats(void)
{
	return msg_output("stats", "");
}

static void
assert_stats(const char *want)
{
	char *out = stats();

	assert_has(out, want);
	free(out);
}

/* The sids of the alerts sent so far, as "1,2,". */
static const char *
alert_sids(void)
{
	static char buf[256];
	size_t k = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < g_n_msg; i++) {
		unsigned sid;

		assert_string_equal(g_msg[i].key, "alert");
		assert_int_equal(sscanf(g_msg[i].value, "sid=%u", &sid), 1);
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%u,", sid);
	}
	return buf;
}

/* ---- tests --------------------------------------------------------- */

/* A signature split over two and over three segments is found once; its
 * alert names the rule and the flow; the packets go on. */
static void
test_split_across_packets(void **state)
{
	char *out;
	struct frame f;

	(void)state;
	start("# a comment, then a blank line\n\n"
	      "alert tcp any any -> any 80 (msg:\"evil sig\"; "
	      "content:\"EVILSIG\"; sid:10; rev:3;)\n",
	      NULL, NULL);
	assert_int_equal(c2s(1111, 0, "GET /xxEVI"), SL_NEXT);
	assert_int_equal(g_n_msg, 0);
	tcp_frame(&f, CLI, 1111, SRV, 80, 0x18, 1010, "LSIG HTTP/1.1");
	assert_int_equal(send1(&f, &out), SL_NEXT);
	assert_string_equal(out, "ids-alert: sid=10 rev=3 action=alert "
				 "flow=tcp 10.65.1.2:1111 > 10.65.2.80:80 "
				 "msg=\"evil sig\"\n");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_int_equal(g_msg[0].service, 0); /* its own service */
	assert_string_equal(g_msg[0].value,
			    "sid=10 rev=3 action=alert flow=tcp "
			    "10.65.1.2:1111 > 10.65.2.80:80 msg=evil sig");
	/* Once per flow direction: the signature again is not alerted. */
	assert_int_equal(c2s(1111, 23, "EVILSIG"), SL_NEXT);
	assert_int_equal(g_n_msg, 1);
	/* Three segments: E | VILS | IG. */
	c2s(2222, 0, "E");
	c2s(2222, 1, "VILS");
	assert_int_equal(g_n_msg, 1);
	c2s(2222, 5, "IG");
	assert_string_equal(alert_sids(), "10,10,");
	/* Split in the other order (a different flow): no match. */
	c2s(3333, 0, "SIG");
	c2s(3333, 3, "EVIL");
	assert_int_equal(g_n_msg, 2);
	assert_stats(" alerts=2 alerts_quiet=0 dropped_rule=0 dropped_flow=0 "
		     "diverted=0 divert_failed=0 messages_failed=0 flows=3 "
		     "flows_new=3 flows_expired=0 flows_full=0 tcp_retrans=0 "
		     "tcp_gaps=0 hs_errors=0 ");
	out = stats();
	assert_has(out, "ids-stats: reason=message ");
	assert_has(out, " packets=8 ");
	assert_has(out, "\nids-rule: sid=10 rev=3 action=alert hits=2\n");
	free(out);
	stop();
}

/* Retransmitted bytes are not scanned twice (and do not shift the
 * stream); a gap is counted and scanned across; a SYN starts the
 * sequence. */
static void
test_retransmit_and_gap(void **state)
{
	struct frame f;

	(void)state;
	start("alert tcp any any -> any any (content:\"ABCDEF\"; depth:6; "
	      "sid:1;)\n",
	      NULL, NULL);
	tcp_frame(&f, CLI, 4000, SRV, 80, 0x02, 999, ""); /* SYN */
	assert_int_equal(send1(&f, NULL), SL_NEXT);
	c2s(4000, 0, "ABC");
	c2s(4000, 0, "ABC");    /* a retransmission: all old */
	c2s(4000, 1, "BCDEFG"); /* two old bytes, four new */
	assert_string_equal(alert_sids(), "1,");
	assert_stats(" no_payload=2 scanned_bytes=7 ");
	assert_stats(" tcp_retrans=1 tcp_gaps=0 ");
	/* A gap: 10 bytes missing. */
	c2s(4001, 0, "xx");
	c2s(4001, 12, "yy");
	assert_stats(" tcp_retrans=1 tcp_gaps=1 ");
	stop();
}

/* -> is one way: the server's bytes do not match a client rule; <> is
 * both, one alert per direction. */
static void
test_both_directions(void **state)
{
	(void)state;
	start("alert tcp 10.65.1.0/24 any -> 10.65.2.0/24 80 (content:\"up\"; "
	      "sid:1;)\n"
	      "alert tcp 10.65.1.0/24 any <> 10.65.2.0/24 80 "
	      "(content:\"both\"; sid:2;)\n",
	      NULL, NULL);
	s2c(1000, 0, "up up");
	assert_int_equal(g_n_msg, 0);
	c2s(1000, 0, "up");
	assert_string_equal(alert_sids(), "1,");
	s2c(1000, 5, "both");
	c2s(1000, 2, "both");
	assert_string_equal(alert_sids(), "1,2,2,");
	assert_has(g_msg[1].value, "flow=tcp 10.65.2.80:80 > 10.65.1.2:1000");
	assert_has(g_msg[2].value, "flow=tcp 10.65.1.2:1000 > 10.65.2.80:80");
	stop();
}

/* Overlapping rules on the same bytes all fire, a pcre too. */
static void
test_overlapping_rules(void **state)
{
	(void)state;
	start("alert tcp any any -> any any (content:\"abc\"; sid:1;)\n"
	      "alert tcp any any -> any any (content:\"abcdef\"; sid:2;)\n"
	      "alert tcp any any -> any any (pcre:\"/b.d[e]f/\"; sid:3;)\n"
	      "alert tcp any any -> any any (content:\"cd\"; "
	      "pcre:\"/^x+a/\"; sid:4;)\n"
	      "alert tcp any any -> any any (content:\"zzz\"; sid:5;)\n",
	      NULL, NULL);
	c2s(1, 0, "xabcdef");
	assert_string_equal(alert_sids(), "1,4,2,3,");
	stop();
}

/* A rule of several parts fires on the packet that completes it (that
 * packet gets its action); each direction keeps at most --partials (8)
 * partly matched rules: the parts of a 9th are counted (p9, q9) and it is
 * missed; with --partials 2, only 2. */
static void
test_parts(void **state)
{
	char rules[4096];
	size_t k = 0;

	(void)state;
	k += (size_t)snprintf(rules + k, sizeof(rules) - k,
			      "drop tcp any any -> any any (content:\"one\"; "
			      "content:\"two\"; sid:100;)\n");
	for (int i = 1; i <= 9; i++)
		k += (size_t)snprintf(rules + k, sizeof(rules) - k,
				      "alert tcp any any -> any any "
				      "(content:\"p%d\"; pcre:\"/q%d/\"; "
				      "sid:%d;)\n",
				      i, i, i);
	start(rules, NULL, NULL);
	assert_int_equal(c2s(1, 0, "two"), SL_NEXT);
	assert_int_equal(c2s(1, 3, "..one"), SL_DROP);
	assert_string_equal(alert_sids(), "100,");
	g_n_msg = 0;
	c2s(2, 0, "p1p2p3p4p5p6p7p8p9");
	c2s(2, 18, "q9q8q7q6q5q4q3q2q1");
	assert_string_equal(alert_sids(), "8,7,6,5,4,3,2,1,");
	assert_stats(" hs_errors=0 partials_full=2 ");
	stop();
	start(rules, "--partials=2", NULL);
	c2s(2, 0, "p1p2p3");
	c2s(2, 6, "q3q2q1");
	assert_string_equal(alert_sids(), "2,1,");
	assert_stats(" hs_errors=0 partials_full=2 ");
	stop();
}

/* One flow per payload; returns the sids alerted by it. */
static const char *
probe(uint16_t sport, const char *payload)
{
	g_n_msg = 0;
	c2s(sport, 0, payload);
	return alert_sids();
}

/* offset/depth: HELLO must start at 2 to 4 (offset 2, depth 7). */
static void
test_offset_depth(void **state)
{
	(void)state;
	start("alert tcp any any -> any any (content:\"HELLO\"; offset:2; "
	      "depth:7; sid:1;)\n"
	      "alert tcp any any -> any any (content:\"HEAD\"; depth:4; "
	      "content:\"X\"; distance:0; sid:2;)\n"
	      "alert tcp any any -> any any (content:\"abc\"; offset:2; "
	      "depth:5; content:\"Q\"; sid:3;)\n",
	      NULL, NULL);
	assert_string_equal(probe(1, "xHELLO"), "");
	assert_string_equal(probe(2, "xxHELLO"), "1,");
	assert_string_equal(probe(3, "xxxxHELLO"), "1,");
	assert_string_equal(probe(4, "xxxxxHELLO"), "");
	assert_string_equal(probe(5, "HEADX"), "2,");
	assert_string_equal(probe(6, "HEAD..X"), "2,");
	assert_string_equal(probe(7, ".HEADX"), "");
	/* Two chains (a combination): the anchored one keeps its offsets,
	 * the other may come before or after it. */
	assert_string_equal(probe(8, "xxabcQ"), "3,");
	assert_string_equal(probe(9, "Qxxxabc"), "3,");
	assert_string_equal(probe(10, "abcQ"), "");
	assert_string_equal(probe(11, "xxxxxabcQ"), "");
	stop();
}

/* distance/within: B2 starts 2 to 4 bytes after A1 ends. */
static void
test_distance_within(void **state)
{
	(void)state;
	start("alert tcp any any -> any any (content:\"A1\"; content:\"B2\"; "
	      "distance:2; within:6; sid:1;)\n"
	      "alert tcp any any -> any any (content:\"C3\"; content:\"D4\"; "
	      "within:3; sid:2;)\n",
	      NULL, NULL);
	assert_string_equal(probe(1, "A1xB2"), "");
	assert_string_equal(probe(2, "A1xxB2"), "1,");
	assert_string_equal(probe(3, "A1xxxxB2"), "1,");
	assert_string_equal(probe(4, "A1xxxxxB2"), "");
	assert_string_equal(probe(5, "B2A1"), "");
	assert_string_equal(probe(6, "C3D4"), "2,");
	assert_string_equal(probe(7, "C3xD4"), "2,");
	assert_string_equal(probe(8, "C3xxD4"), "");
	stop();
}

/* nocase, |hex| bytes and pcre flags. */
static void
test_nocase_and_hex(void **state)
{
	(void)state;
	start("alert tcp any any -> any any (content:\"Virus\"; sid:1;)\n"
	      "alert tcp any any -> any any (content:\"Worm\"; nocase; "
	      "sid:2;)\n"
	      "alert tcp any any -> any any (content:\"|0d 0a|X|3b|\"; "
	      "sid:3;)\n"
	      "alert tcp any any -> any any (pcre:\"/tro+jan/i\"; sid:4;)\n",
	      NULL, NULL);
	assert_string_equal(probe(1, "VIRUS virus"), "");
	assert_string_equal(probe(2, "Virus"), "1,");
	assert_string_equal(probe(3, "a wORM"), "2,");
	assert_string_equal(probe(4, "\r\nX;"), "3,");
	assert_string_equal(probe(5, "\nX;"), "");
	assert_string_equal(probe(6, "TROOOJAN"), "4,");
	stop();
}

/* Address and port sets, negations, protocols. */
static void
test_sets(void **state)
{
	struct frame f;

	(void)state;
	start("alert tcp [10.65.0.0/16,!10.65.1.0/24] any -> any "
	      "[80,8000:8100] (content:\"s1\"; sid:1;)\n"
	      "alert tcp any !1000 -> ![10.65.9.0/24] any (content:\"s2\"; "
	      "sid:2;)\n"
	      "alert udp any any -> any 53 (content:\"s3\"; sid:3;)\n"
	      "alert ip any any -> 10.65.2.80 any (content:\"s4\"; sid:4;)\n",
	      NULL, NULL);
	g_n_msg = 0;
	tcp_frame(&f, IP4(10, 65, 3, 1), 9, SRV, 8050, 0x18, 1, "s1 s2 s4");
	send1(&f, NULL);
	assert_string_equal(alert_sids(), "1,2,4,");
	g_n_msg = 0;
	tcp_frame(&f, CLI, 1000, SRV, 8101, 0x18, 1, "s1 s2 s3"); /* 1.x */
	send1(&f, NULL);
	assert_string_equal(alert_sids(), "");
	g_n_msg = 0;
	tcp_frame(&f, CLI, 1001, IP4(10, 65, 9, 9), 80, 0x18, 1, "s2 s4");
	send1(&f, NULL);
	assert_string_equal(alert_sids(), "");
	g_n_msg = 0;
	udp_frame(&f, CLI, 5000, SRV, 53, "s1 s3 s4");
	assert_int_equal(send1(&f, NULL), SL_NEXT);
	assert_string_equal(alert_sids(), "3,4,");
	stop();
}

/* --alert-rate: alerts over it are counted, not printed or sent, and
 * their action is taken; --alert-to; a Message that cannot be queued is
 * counted; UDP datagrams of a flow are one stream. */
static void
test_alert_rate_and_udp(void **state)
{
	struct frame f;
	char *out;

	(void)state;
	start("drop udp any any -> any 53 (content:\"BADQUERY\"; sid:1;)\n",
	      "--alert-rate=1", "--alert-to=sandbox");
	udp_frame(&f, CLI, 1000, SRV, 53, "xxBAD");
	assert_int_equal(send1(&f, NULL), SL_NEXT);
	udp_frame(&f, CLI, 1000, SRV, 53, "QUERY");
	assert_int_equal(send1(&f, &out), SL_DROP);
	assert_has(out, "ids-alert: sid=1 rev=0 action=drop flow=udp "
			"10.65.1.2:1000 > 10.65.2.80:53 msg=\"\"\n");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_int_equal(g_msg[0].service, SANDBOX);
	udp_frame(&f, CLI, 1001, SRV, 53, "BADQUERY"); /* same second */
	assert_int_equal(send1(&f, &out), SL_DROP);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(g_n_msg, 1);
	stub_now_ns = 2 * NS; /* a new second, but no room for the message */
	g_msg_fail = 1;
	udp_frame(&f, CLI, 1002, SRV, 53, "BADQUERY");
	assert_int_equal(send1(&f, NULL), SL_DROP);
	g_msg_fail = 0;
	assert_stats(" alerts=3 alerts_quiet=1 dropped_rule=3 dropped_flow=0 "
		     "diverted=0 divert_failed=0 messages_failed=1 ");
	stop();
}

/* IPv6 prefixes and sets; ICMP payload after its 8-byte header; an IPv4
 * prefix never matches IPv6. */
static void
test_ipv6_and_icmp(void **state)
{
	struct frame f;

	(void)state;
	start("alert tcp 2001:db8::/32 any -> [2001:db8::2,10.65.0.0/16] 80 "
	      "(content:\"cdef\"; sid:1;)\n"
	      "alert tcp 10.0.0.0/8 any <> any any (content:\"cdef\"; sid:2;)\n"
	      "alert icmp any any -> any any (content:\"|00 00 00 00|\"; "
	      "sid:3;)\n"
	      "alert tcp !2001:db8::1 any -> any any (content:\"cdef\"; "
	      "sid:4;)\n",
	      NULL, NULL);
	g_n_msg = 0;
	frame_ip6(&f, IPPROTO_TCP, v6_a, 1234, v6_b, 80, 10); /* abcdefghij */
	assert_int_equal(send1(&f, NULL), SL_NEXT);
	assert_string_equal(alert_sids(), "1,");
	assert_has(g_msg[0].value,
		   "flow=tcp [2001:db8::1]:1234 > [2001:db8::2]:80");
	g_n_msg = 0;
	frame_ip6(&f, IPPROTO_TCP, v6_b, 80, v6_a, 1234, 10); /* reply */
	send1(&f, NULL);
	assert_string_equal(alert_sids(), "4,");
	g_n_msg = 0;
	frame_ip4(&f, IPPROTO_ICMP, CLI, 0, SRV, 0, 3); /* 3 zeros: no */
	send1(&f, NULL);
	assert_string_equal(alert_sids(), "");
	frame_ip4(&f, IPPROTO_ICMP, CLI, 0, SRV, 0, 8);
	send1(&f, NULL); /* the same flow: 3 + 8 zeros in its stream */
	assert_string_equal(alert_sids(), "3,");
	stop();
}

/* drop: the packet and every later one of the flow, both ways. */
static void
test_drop(void **state)
{
	char *out;

	(void)state;
	start("drop tcp any any <> any any (msg:\"bad\"; content:\"BAD\"; "
	      "sid:7;)\n",
	      NULL, NULL);
	assert_int_equal(c2s(1, 0, "ok"), SL_NEXT);
	assert_int_equal(s2c(1, 0, "xxB"), SL_NEXT);
	assert_int_equal(s2c(1, 3, "AD"), SL_DROP);
	assert_int_equal(c2s(1, 2, "ok"), SL_DROP);
	assert_int_equal(s2c(1, 5, ""), SL_DROP);
	assert_int_equal(c2s(2, 0, "other flow"), SL_NEXT);
	assert_string_equal(alert_sids(), "7,");
	assert_has(g_msg[0].value, "action=drop flow=tcp 10.65.2.80:80 > "
				   "10.65.1.2:1 msg=bad");
	out = stats();
	assert_has(out, " alerts=1 alerts_quiet=0 dropped_rule=1 "
			"dropped_flow=2 ");
	assert_has(out, "ids-rule: sid=7 rev=0 action=drop hits=1\n");
	free(out);
	stop();
}

/* divert: one ChangeDefault of the flow at our service to the sandbox,
 * and the flow's packets go there; one that cannot be queued is tried
 * again on the next packet. */
static void
test_divert(void **state)
{
	char flow[128];

	(void)state;
	start("divert tcp any any -> any any (content:\"sus\"; "
	      "divert:sandbox; sid:9;)\n",
	      NULL, NULL);
	assert_int_equal(c2s(1, 0, "fine"), SL_NEXT);
	assert_int_equal(c2s(1, 4, "sus"), SL_TO(SANDBOX));
	assert_int_equal(g_n_cd, 1);
	assert_int_equal(g_cd[0].service, 0);
	assert_int_equal(g_cd[0].to, SL_TO(SANDBOX));
	sl_5tuple_format(&g_cd[0].t, flow, sizeof(flow));
	assert_string_equal(flow, "tcp 10.65.1.2:1 > 10.65.2.80:80");
	assert_int_equal(s2c(1, 0, "reply"), SL_TO(SANDBOX));
	assert_int_equal(g_n_cd, 1);
	g_cd_fail = 1;
	assert_int_equal(c2s(2, 0, "sus"), SL_TO(SANDBOX));
	g_cd_fail = 0;
	assert_int_equal(g_n_cd, 1);
	assert_int_equal(c2s(2, 3, "more"), SL_TO(SANDBOX));
	assert_int_equal(g_n_cd, 2);
	free(reply_output(101, 0, ""));
	free(reply_output(102, 22, "graph 'g' has no edge"));
	assert_stats(" diverted=2 divert_failed=1 ");
	assert_stats(" requests_ok=1 requests_failed=1 ");
	stop();
}

/* --flows bounds the table (a flow beyond it is not inspected, counted);
 * --timeout forgets idle flows, whose slots are used again. */
static void
test_table_full_and_timeout(void **state)
{
	char *out;

	(void)state;
	start("alert tcp any any -> any any (content:\"SIG\"; sid:1;)\n",
	      "--flows=16", "--timeout=2");
	for (uint16_t p = 1; p <= 16; p++)
		c2s(p, 0, "x");
	assert_int_equal(c2s(17, 0, "SIG"), SL_NEXT);
	assert_int_equal(g_n_msg, 0); /* not inspected */
	assert_stats(" flows=16 flows_new=16 flows_expired=0 flows_full=1 ");
	stub_now_ns = 2 * NS;
	c2s(1, 1, "y"); /* flow 1 stays busy */
	out = tick_output(3 * NS + 1);
	assert_string_equal(out, "");
	free(out);
	assert_stats(" flows=1 flows_new=16 flows_expired=15 flows_full=1 ");
	stub_now_ns = 3 * NS + 2;
	c2s(17, 0, "SI");
	c2s(17, 2, "G");
	assert_string_equal(alert_sids(), "1,");
	stop();
}

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* SIGHUP, then ticks until the background compile is taken (at most
 * 10 s); returns all they printed. */
static char *
reload_output(void)
{
	char *out = stub_capture_stderr(do_reload, NULL), *t;
	size_t n;

	assert_non_null(out);
	for (int i = 0; i < 10000; i++) {
		if (strstr(out, "reloaded ") || strstr(out, "reload failed"))
			return out;
		usleep(1000);
		t = tick_output(stub_now_ns);
		n = strlen(out);
		out = realloc(out, n + strlen(t) + 1);
		assert_non_null(out);
		memcpy(out + n, t, strlen(t) + 1);
		free(t);
	}
	fail_msg("the reload did not end: %s", out);
	return out;
}

/* --closed-timeout: a reset flow, or one closed both ways, goes early;
 * one closed one way stays. */
static void
test_closed_timeout(void **state)
{
	struct frame f;

	(void)state;
	start("alert tcp any any -> any any (content:\"SIG\"; sid:1;)\n",
	      "--closed-timeout=1", NULL);
	tcp_frame(&f, CLI, 1, SRV, 80, 0x04, 1000, ""); /* RST */
	send1(&f, NULL);
	tcp_frame(&f, CLI, 2, SRV, 80, 0x11, 1000, ""); /* FIN one way */
	send1(&f, NULL);
	tcp_frame(&f, CLI, 3, SRV, 80, 0x11, 1000, "");
	send1(&f, NULL);
	tcp_frame(&f, SRV, 80, CLI, 3, 0x11, 5000, ""); /* and back */
	send1(&f, NULL);
	free(tick_output(2 * NS + 1));
	assert_stats(" flows=1 flows_new=3 flows_expired=2 ");
	free(tick_output(61 * NS + 1));
	assert_stats(" flows=0 flows_new=3 flows_expired=3 ");
	stop();
}

/* SIGHUP: a good file replaces the rules (streams start again), a bad
 * one keeps them and says why, naming the line. */
static void
test_reload(void **state)
{
	char *out, want[256];

	(void)state;
	start("alert tcp any any -> any any (content:\"OLD\"; sid:1;)\n", NULL,
	      NULL);
	c2s(1, 0, "OL");
	write_rules("alert tcp any any -> any any (content:\"NEW\"; sid:2;)\n"
		    "alert tcp any any -> any any (content:\"OLD\"; sid:3; "
		    "rev:2;)\n");
	out = reload_output();
	snprintf(want, sizeof(want),
		 "sluice-ids: reloading %s in the background; packets go on "
		 "through the 1 current rules until it is compiled\n",
		 g_path);
	assert_has(out, want);
	assert_has(out, "ids-stats: reason=reload ");
	snprintf(want, sizeof(want),
		 "sluice-ids: reloaded 2 rules from %s (Hyperscan ", g_path);
	assert_has(out, want);
	assert_has(out, "sluice-ids:   sid 3 rev 2 alert (line 2): -\n");
	free(out);
	c2s(1, 2, "D NEW OLD");
	assert_string_equal(alert_sids(), "2,3,");
	write_rules("alert tcp any any -> any any (content:\"A\"; sid:4;)\n"
		    "alert tcp any any -> any any (content:\"B\"; sid:4;)\n");
	out = reload_output();
	snprintf(want, sizeof(want),
		 "sluice-ids: reload failed, keeping the 2 current rules: "
		 "%s:2: sid 4 is already used by the rule on line 1\n",
		 g_path);
	assert_has(out, want);
	free(out);
	/* A divert service is looked up when the compile is taken. */
	write_rules("divert tcp any any -> any any (content:\"A\"; "
		    "divert:nowhere; sid:4;)\n");
	out = reload_output();
	snprintf(want, sizeof(want),
		 "sluice-ids: reload failed, keeping the 2 current rules: "
		 "%s:1: sid 4: option 'divert': no service 'nowhere' (sluice "
		 "status lists them)\n",
		 g_path);
	assert_has(out, want);
	free(out);
	assert_stats(" rules=2 reloads=1 reloads_failed=2\n");
	g_n_msg = 0;
	c2s(2, 0, "NEW");
	assert_string_equal(alert_sids(), "2,");
	stop();
}

/* Ticks until the output (out, freed) has want (at most 20 s); returns
 * it. */
static char *
ticks_until(char *out, const char *want)
{
	for (int i = 0; i < 20000 && strstr(out, want) == NULL; i++) {
		char *t;
		size_t n = strlen(out);

		usleep(1000);
		t = tick_output(stub_now_ns);
		out = realloc(out, n + strlen(t) + 1);
		assert_non_null(out);
		memcpy(out + n, t, strlen(t) + 1);
		free(t);
	}
	assert_has(out, want);
	return out;
}

/* 500 pcre rules: a compile of about half a second. */
static void
write_slow_rules(void)
{
	char *text = malloc(500 * 80), *p = text;

	assert_non_null(text);
	for (int i = 1; i <= 500; i++)
		p += sprintf(p,
			     "alert tcp any any -> any any "
			     "(pcre:\"/w%dx[0-9]{2,4}y%d/i\"; sid:%d;)\n",
			     i, i, i);
	write_rules(text);
	free(text);
}

/* A SIGHUP during a compile: the file is read and compiled again after
 * it; an exit during one waits for it and does not use it. */
static void
test_reload_during_reload(void **state)
{
	char *out, want[256];

	(void)state;
	start("alert tcp any any -> any any (content:\"A\"; sid:1;)\n", NULL,
	      NULL);
	write_slow_rules();
	free(stub_capture_stderr(do_reload, NULL));
	out = stub_capture_stderr(do_reload, NULL);
	snprintf(want, sizeof(want),
		 "sluice-ids: SIGHUP during a reload: %s will be read again "
		 "once the current one is compiled\n",
		 g_path);
	assert_string_equal(out, want);
	out = ticks_until(out, "sluice-ids: reloaded 500 rules from ");
	/* ... and the second build started at once. */
	snprintf(want, sizeof(want),
		 "sluice-ids: reloading %s in the background", g_path);
	assert_has(strstr(out, "reloaded 500"), want);
	free(out);
	out = ticks_until(strdup(""), "sluice-ids: reloaded 500 rules from ");
	free(out);
	assert_stats(" rules=500 reloads=2 reloads_failed=0\n");

	write_slow_rules();
	free(stub_capture_stderr(do_reload, NULL));
	out = fini_output();
	snprintf(want, sizeof(want),
		 "sluice-ids: exiting during a reload: waiting for the compile "
		 "of %s to end; its rules are not used\n",
		 g_path);
	assert_has(out, want);
	assert_has(out, "ids-stats: reason=exit ");
	assert_has(out, " rules=500 reloads=2 ");
	free(out);
	unlink(g_path);
}

/* A file with rule text on line 1 (or as given) must be refused with
 * "sluice-ids: FILE:WHERE". */
static void
refused(const char *rules, const char *where)
{
	char want[512];

	write_rules(rules);
	snprintf(want, sizeof(want), "sluice-ids: %s%s\n", g_path, where);
	expect_init_error(PROG, want, "--rules", g_path, NULL);
}

#define OK_OPTS "(content:\"x\"; sid:1;)\n"

static void
test_rule_errors(void **state)
{
	char want[256];

	(void)state;
	/* At start, as the NF says them (every message: test_ids_rules). */
	refused("bogus tcp any any -> any any " OK_OPTS,
		":1: unknown action 'bogus' (alert, drop or divert)");
	refused("divert tcp any any -> any any (content:\"a\"; divert:nowhere; "
		"sid:3;)\n",
		":1: sid 3: option 'divert': no service 'nowhere' (sluice status "
		"lists them)");
	refused("alert tcp any any -> any any (pcre:\"/(a)\\\\1/\"; sid:5;)\n",
		":1: sid 5: Hyperscan cannot compile its pcre 1 ((a)\\1): "
		"Back-references are unsupported.");
	refused("# nothing\n\n", ": no rules (a rule per line; # starts a "
				 "comment)");
	unlink(g_path);
	snprintf(want, sizeof(want),
		 "sluice-ids: %s: No such file or directory\n", g_path);
	expect_init_error(PROG, want, "--rules", g_path, NULL);
	expect_init_error(PROG, "sluice-ids: missing --rules FILE\n", NULL);
}

/* examples/ids.rules loads, and its EICAR rule drops. */
static void
test_example_rules(void **state)
{
	struct frame f;
	char *out;
	int rc;

	(void)state;
	g_n_msg = 0;
	out = stub_init_output(&rc, PROG, "--rules",
			       SL_SOURCE_ROOT "/examples/ids.rules", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-ids: loaded 5 rules from " SL_SOURCE_ROOT
			"/examples/ids.rules (Hyperscan ");
	assert_has(out, "sluice-ids:   sid 3 rev 0 divert to sandbox (line 5): "
			"exe download\n");
	free(out);
	tcp_frame(&f, SRV, 80, CLI, 1234, 0x18, 1,
		  "X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR");
	assert_int_equal(send1(&f, NULL), SL_DROP);
	assert_string_equal(alert_sids(), "2,");
	free(fini_output());
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup(PROG, sl_ids_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_across_packets),
		cmocka_unit_test(test_retransmit_and_gap),
		cmocka_unit_test(test_both_directions),
		cmocka_unit_test(test_overlapping_rules),
		cmocka_unit_test(test_parts),
		cmocka_unit_test(test_offset_depth),
		cmocka_unit_test(test_distance_within),
		cmocka_unit_test(test_nocase_and_hex),
		cmocka_unit_test(test_sets),
		cmocka_unit_test(test_alert_rate_and_udp),
		cmocka_unit_test(test_ipv6_and_icmp),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_divert),
		cmocka_unit_test(test_table_full_and_timeout),
		cmocka_unit_test(test_closed_timeout),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_during_reload),
		cmocka_unit_test(test_rule_errors),
		cmocka_unit_test(test_example_rules),
	};

	return cmocka_run_group_tests_name("ids", tests, setup, stub_teardown);
}
