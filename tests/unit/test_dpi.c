/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-dpi driven through its ops (nfs/dpi/dpi.c) with the libsluice
 * stand-in of nf_stub.c and a stand-in for sl_message(): HTTP, DNS and
 * TLS (a ClientHello with SNI) flows detected as such by nDPI, the line
 * and the Message of each detection, steering verdicts of the rules file
 * in both directions, give-up after --max-packets (and --guess), the
 * bounded table and idle eviction, non-IP and malformed frames, reload,
 * every error by its text, and examples/traces/http-mix.pcap.
 */
#undef main /* meson.build renames dpi.c's main to sl_dpi_main */

#include <errno.h>
#include <inttypes.h>
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

#ifndef SL_SOURCE_ROOT
#define SL_SOURCE_ROOT "."
#endif

int sl_dpi_main(int argc, char **argv);

#define init_with(rc, ...) stub_init_output(rc, "sluice-dpi", __VA_ARGS__)
#define NS 1000000000ull
#define MS 1000000ull

/* ---- stand-ins for sl_message() and the service lookups ----------- */

#define MAX_MSG 1024

struct msg {
	uint16_t service;
	char key[SL_MESSAGE_KEY_MAX + 1];
	char value[SL_MESSAGE_VALUE_MAX + 1];
};

static struct msg g_msg[MAX_MSG];
static unsigned g_n_msg;
static int g_msg_fail; /* sl_message returns -ENOBUFS */

int64_t
sl_message(struct sl_nf *nf, uint16_t service, const char *key,
	   const char *value)
{
	(void)nf;
	if (g_msg_fail)
		return -ENOBUFS;
	assert_true(strlen(key) <= SL_MESSAGE_KEY_MAX);
	assert_true(strlen(value) <= SL_MESSAGE_VALUE_MAX);
	if (g_n_msg < MAX_MSG) {
		g_msg[g_n_msg].service = service;
		snprintf(g_msg[g_n_msg].key, sizeof(g_msg[0].key), "%s", key);
		snprintf(g_msg[g_n_msg].value, sizeof(g_msg[0].value), "%s",
			 value);
	}
	return ++g_n_msg;
}

/* Services: 0 is the NF's own (nf_stub), then these. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	if (strcmp(name, "dpi") == 0)
		return 0;
	if (strcmp(name, "web") == 0)
		return 7;
	if (strcmp(name, "resolver") == 0)
		return 8;
	if (strcmp(name, "events") == 0)
		return 9;
	return -1;
}

/* ---- frames -------------------------------------------------------- */

#define A IP4(10, 67, 0, 1)
#define B IP4(10, 67, 1, 1)

/* Ethernet / IPv4 / TCP (PSH ACK) or UDP with payload p[0..n). */
static void
frame_app(struct frame *f, uint8_t proto, uint32_t src, uint16_t sport,
	  uint32_t dst, uint16_t dport, const void *p, uint32_t n)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, 0x0800, 0, NULL);
	if (proto == IPPROTO_TCP) {
		put_ipv4(f, proto, src, dst, (uint16_t)(20 + n), 0, 0);
		put_tcp(f, sport, dport, 0);
	} else {
		put_ipv4(f, proto, src, dst, (uint16_t)(8 + n), 0, 0);
		put_udp(f, sport, dport, 0);
		wr16(f, f->len - 4, (uint16_t)(8 + n));
	}
	put(f, p, n);
}

static const char http_get[] = "GET / HTTP/1.1\r\nHost: example.com\r\n"
			       "User-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
static const char http_google[] = "GET / HTTP/1.1\r\nHost: www.google.com\r\n"
				  "Accept: */*\r\n\r\n";
static const char http_ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

static void
http(struct frame *f, uint16_t sport, const char *req)
{
	frame_app(f, IPPROTO_TCP, A, sport, B, 80, req, strlen(req));
}

/* A DNS query for example.com (id 0x1234, recursion desired). */
static void
dns(struct frame *f, uint16_t sport)
{
	static const uint8_t q[] = {0x12, 0x34, 0x01, 0x00, 0, 1,   0,   0,
				    0,    0,    0,    0,    7, 'e', 'x', 'a',
				    'm',  'p',  'l',  'e',  3, 'c', 'o', 'm',
				    0,    0,    1,    0,    1};

	frame_app(f, IPPROTO_UDP, A, sport, B, 53, q, sizeof(q));
}

/* A TLS 1.3 ClientHello with SNI www.example.org, to port dport. */
static void
tls(struct frame *f, uint16_t sport, uint16_t dport)
{
	static const char sni[] = "www.example.org";
	uint8_t b[160];
	uint32_t n = 0, name = sizeof(sni) - 1, hs, body;

	b[n++] = 0x16; /* record: handshake, TLS 1.0, length */
	b[n++] = 3;
	b[n++] = 1;
	n += 2;
	hs = n;
	b[n++] = 1; /* ClientHello, 24-bit length */
	n += 3;
	body = n;
	b[n++] = 3; /* legacy version 1.2 */
	b[n++] = 3;
	for (unsigned i = 0; i < 32; i++)
		b[n++] = (uint8_t)i; /* random */
	b[n++] = 0;                  /* no session id */
	b[n++] = 0;                  /* one cipher suite: TLS_AES_128_GCM */
	b[n++] = 2;
	b[n++] = 0x13;
	b[n++] = 0x01;
	b[n++] = 1; /* compression: null */
	b[n++] = 0;
	b[n++] = 0; /* extensions length */
	b[n++] = (uint8_t)(name + 9 + 7);
	b[n++] = 0; /* server_name */
	b[n++] = 0;
	b[n++] = 0;
	b[n++] = (uint8_t)(name + 5);
	b[n++] = 0;
	b[n++] = (uint8_t)(name + 3);
	b[n++] = 0; /* host_name */
	b[n++] = 0;
	b[n++] = (uint8_t)name;
	memcpy(b + n, sni, name);
	n += name;
	b[n++] = 0; /* supported_versions: TLS 1.3 */
	b[n++] = 43;
	b[n++] = 0;
	b[n++] = 3;
	b[n++] = 2;
	b[n++] = 3;
	b[n++] = 4;
	b[3] = 0;
	b[4] = (uint8_t)(n - hs);
	b[hs + 1] = 0;
	b[hs + 2] = 0;
	b[hs + 3] = (uint8_t)(n - body);
	assert_true(n <= sizeof(b));
	frame_app(f, IPPROTO_TCP, A, sport, B, dport, b, n);
}

/* The same frame, the other way (B -> A), with payload p. */
static void
reply(struct frame *f, uint8_t proto, uint16_t sport, uint16_t dport,
      const void *p, uint32_t n)
{
	frame_app(f, proto, B, dport, A, sport, p, n);
}

/* ---- sending -------------------------------------------------------- */

struct send_one {
	const struct frame *f;
	sl_verdict_t v;
};

static void
do_send(void *arg)
{
	struct send_one *c = arg;
	struct rte_mbuf *m = stub_mbuf(c->f->b, c->f->len);

	assert_non_null(m);
	stub_ops->process(stub_nf(), &m, 1);
	assert_true(stub_verdict_set(m));
	c->v = sl_pkt_verdict(m);
	/* an inspector: the packet leaves as it came, byte for byte */
	assert_int_equal(rte_pktmbuf_pkt_len(m), c->f->len);
	assert_memory_equal(rte_pktmbuf_mtod(m, void *), c->f->b, c->f->len);
	stub_mbuf_free(m);
}

/* Sends one frame at now: its verdict, and what the NF printed in *out
 * (or freed if out is NULL). */
static sl_verdict_t
send1(uint64_t now, const struct frame *f, char **out)
{
	struct send_one c = {f, 0};
	char *o;

	stub_now_ns = now;
	o = stub_capture_stderr(do_send, &c);
	assert_non_null(o);
	if (out != NULL)
		*out = o;
	else
		free(o);
	return c.v;
}

static void
reset(uint64_t now)
{
	memset(g_msg, 0, sizeof(g_msg));
	g_n_msg = 0;
	g_msg_fail = 0;
	stub_now_ns = now;
}

/* Writes text to a file of its own; returns its path (static). */
static const char *
rules_file(const char *text)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/sl_dpi_test_%d.rules",
		 (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* ---- tests ---------------------------------------------------------- */

/* HTTP, DNS and TLS, each detected on its first packet: a line and a
 * Message for each, every packet on the default edge. */
static void
test_detect(void **state)
{
	struct frame h, d, t, back;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-dpi: nDPI 4.2.0, ");
	assert_has(out, " protocols; up to 16384 flows, idle after 30000 ms, "
			"32 packets per flow at most\n");
	free(out);
	http(&h, 40000, http_get);
	dns(&d, 40001);
	tls(&t, 40002, 443);

	assert_int_equal(send1(1 * NS, &h, &out), SL_NEXT);
	assert_string_equal(out, "dpi: tcp 10.67.0.1:40000 > 10.67.1.1:80 "
				 "app=HTTP category=Web by=payload "
				 "host=example.com packets=1\n");
	free(out);
	assert_int_equal(send1(1 * NS, &d, &out), SL_NEXT);
	assert_string_equal(out, "dpi: udp 10.67.0.1:40001 > 10.67.1.1:53 "
				 "app=DNS category=Network by=payload "
				 "host=example.com packets=1\n");
	free(out);
	assert_int_equal(send1(1 * NS, &t, &out), SL_NEXT);
	assert_string_equal(out, "dpi: tcp 10.67.0.1:40002 > 10.67.1.1:443 "
				 "app=TLS category=Web by=payload "
				 "host=www.example.org packets=1\n");
	free(out);
	/* the reply is the same flow: no second detection */
	reply(&back, IPPROTO_TCP, 40000, 80, http_ok, strlen(http_ok));
	assert_int_equal(send1(2 * NS, &back, &out), SL_NEXT);
	assert_string_equal(out, "");
	free(out);

	/* A host name from the packets is one word, whatever it holds. */
	http(&back, 40003,
	     "GET / HTTP/1.1\r\nHost: a b=c\x01\xff.example\r\n\r\n");
	assert_int_equal(send1(2 * NS, &back, &out), SL_NEXT);
	assert_string_equal(out, "dpi: tcp 10.67.0.1:40003 > 10.67.1.1:80 "
				 "app=HTTP category=Web by=payload "
				 "host=a?b?c??.example packets=1\n");
	free(out);
	assert_int_equal(g_n_msg, 4);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(g_msg[i].service, 0); /* its own service */
		assert_string_equal(g_msg[i].key, "dpi.app");
	}
	assert_string_equal(
		g_msg[0].value,
		"app=HTTP category=Web by=payload "
		"host=example.com flow=tcp 10.67.0.1:40000 > 10.67.1.1:80");
	assert_string_equal(
		g_msg[1].value,
		"app=DNS category=Network by=payload "
		"host=example.com flow=udp 10.67.0.1:40001 > 10.67.1.1:53");
	assert_string_equal(
		g_msg[2].value,
		"app=TLS category=Web by=payload "
		"host=www.example.org flow=tcp 10.67.0.1:40002 > 10.67.1.1:443");
	/* Its own Messages come back to it (--notify is itself): ignored. */
	out = msg_output("dpi.app", g_msg[0].value);
	assert_string_equal(out, "");
	free(out);

	stub_now_ns = 3 * NS;
	out = fini_output();
	assert_has(out, "dpi-stats: reason=exit uptime=2.0 packets=5 bytes=");
	assert_has(out, " non_ip=0 malformed=0 flows=4 flows_capacity=16384 "
			"flows_seen=4 table_full=0 detecting=0 detected=4 "
			"guessed=0 undetected=0 evicted=0 steered=0 dropped=0 "
			"messages=4 messages_not_queued=0 "
			"messages_undelivered=0\n");
	assert_has(out, "dpi-app: app=HTTP flows=2 guessed=0 packets=3 "
			"bytes=");
	assert_has(out, "dpi-app: app=DNS flows=1 guessed=0 packets=1 "
			"bytes=71\n");
	assert_has(out, "dpi-app: app=TLS flows=1 guessed=0 packets=1 ");
	free(out);
}

/* Rules: HTTP (also HTTP.Google, by its master) to web, DNS dropped, TLS
 * on the default edge; both directions; per-rule counters. */
static void
test_steer(void **state)
{
	struct frame h, g, d, t, back;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--rules",
			rules_file("# steering\n"
				   "HTTP -> web   # the proxy\n"
				   "\n"
				   "  dns\t->\tdrop\n"),
			"--stats-ms", "0", "--notify", "events", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-dpi: loaded 2 rules from /tmp/sl_dpi_test_");
	assert_has(out, "sluice-dpi:   rule 1: HTTP -> web\n"
			"sluice-dpi:   rule 2: dns -> drop\n");
	free(out);
	http(&h, 41000, http_get);
	http(&g, 41001, http_google);
	dns(&d, 41002);
	tls(&t, 41003, 443);
	reply(&back, IPPROTO_TCP, 41000, 80, http_ok, strlen(http_ok));

	assert_int_equal(send1(1 * NS, &h, NULL), SL_TO(7));
	assert_int_equal(send1(1 * NS, &back, NULL), SL_TO(7));
	assert_int_equal(send1(1 * NS, &h, NULL), SL_TO(7));
	assert_int_equal(send1(1 * NS, &g, &out), SL_TO(7));
	assert_string_equal(out, "dpi: tcp 10.67.0.1:41001 > 10.67.1.1:80 "
				 "app=HTTP.Google category=Web by=payload "
				 "host=www.google.com packets=1\n");
	free(out);
	assert_int_equal(send1(1 * NS, &d, NULL), SL_DROP);
	assert_int_equal(send1(1 * NS, &t, NULL), SL_NEXT);
	assert_int_equal(g_n_msg, 4);
	assert_int_equal(g_msg[0].service, 9); /* --notify events */
	assert_string_equal(
		g_msg[1].value,
		"app=HTTP.Google category=Web by=payload "
		"host=www.google.com flow=tcp 10.67.0.1:41001 > 10.67.1.1:80");

	out = msg_output("stats", "");
	assert_has(out, "dpi-stats: reason=message ");
	assert_has(out, " detected=4 guessed=0 undetected=0 evicted=0 "
			"steered=4 dropped=1 messages=4 ");
	assert_has(out, "dpi-app: app=Google flows=1 guessed=0 packets=1 ");
	assert_has(out, "dpi-rule: rule=1 line=2 app=HTTP to=web flows=2 "
			"packets=4\n");
	assert_has(out, "dpi-rule: rule=2 line=4 app=dns to=drop flows=1 "
			"packets=1\n");
	free(out);
	out = msg_output("rate", "9");
	assert_string_equal(out, "dpi-message: key=rate value=9 ignored "
				 "(keys: stats)\n");
	free(out);
	free(fini_output());
	unlink(rules_file(""));
}

/* Undetected flows: nDPI gives up after --max-packets; with --guess its
 * guess by port is taken, and counted as guessed. */
static void
test_giveup(void **state)
{
	static const char junk[] = "\x01\x02\x03\x04 nothing known here";
	struct frame u, w;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--max-packets", "3", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	frame_app(&u, IPPROTO_UDP, A, 42000, B, 42001, junk, sizeof(junk));
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(send1(1 * NS + i, &u, &out), SL_NEXT);
		assert_string_equal(out, "");
		free(out);
	}
	out = msg_output("stats", "");
	assert_has(out, " flows=1 flows_capacity=16384 flows_seen=1 "
			"table_full=0 detecting=0 detected=0 guessed=0 "
			"undetected=1 ");
	free(out);
	assert_int_equal(g_n_msg, 0);
	free(fini_output());

	/* TCP to port 80 with no HTTP in it: a guess. */
	reset(1 * NS);
	out = init_with(&rc, "--max-packets", "2", "--guess", "--stats-ms", "0",
			"--rules", rules_file("HTTP -> web\n"), NULL);
	assert_int_equal(rc, 0);
	assert_has(out, " 2 packets per flow at most, then a guess\n");
	free(out);
	frame_app(&w, IPPROTO_TCP, A, 42002, B, 80, junk, sizeof(junk));
	assert_int_equal(send1(1 * NS, &w, NULL), SL_NEXT);
	assert_int_equal(send1(1 * NS, &w, &out), SL_TO(7));
	assert_string_equal(out, "dpi: tcp 10.67.0.1:42002 > 10.67.1.1:80 "
				 "app=HTTP category=Web by=guess "
				 "host=- packets=2\n");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_string_equal(g_msg[0].value,
			    "app=HTTP category=Web by=guess host=- "
			    "flow=tcp 10.67.0.1:42002 > 10.67.1.1:80");
	out = fini_output();
	assert_has(out, " detected=1 guessed=1 undetected=0 ");
	assert_has(out, "dpi-app: app=HTTP flows=1 guessed=1 packets=1 ");
	free(out);
	unlink(rules_file(""));
}

/* A full table passes new flows undetected (counted); idle flows are
 * evicted, one still being detected counted as undetected. */
static void
test_table_and_idle(void **state)
{
	static const char junk[] = "zzzz";
	struct frame h, d, t, u;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--flows", "2", "--idle-ms", "1000", "--rules",
			rules_file("TLS -> web\n"), "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	http(&h, 43000, http_get);
	frame_app(&u, IPPROTO_UDP, A, 43001, B, 43002, junk, 4);
	tls(&t, 43003, 443);
	dns(&d, 43004);
	assert_int_equal(send1(1 * NS, &h, NULL), SL_NEXT);
	assert_int_equal(send1(1 * NS, &u, NULL), SL_NEXT);
	/* full: TLS passes on the default edge, not detected, no line */
	assert_int_equal(send1(1 * NS, &t, &out), SL_NEXT);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(send1(1 * NS, &t, NULL), SL_NEXT);
	out = msg_output("stats", "");
	assert_has(out, " flows=2 flows_capacity=2 flows_seen=2 table_full=2 "
			"detecting=1 detected=1 guessed=0 undetected=0 "
			"evicted=0 ");
	free(out);
	/* the HTTP flow stays, the other goes idle */
	send1(1 * NS + 900 * MS, &h, NULL);
	for (uint64_t now = 1 * NS + 910 * MS; now <= 2 * NS + 200 * MS;
	     now += 10 * MS)
		free(tick_output(now));
	out = msg_output("stats", "");
	assert_has(out, " flows=1 flows_capacity=2 flows_seen=2 table_full=2 "
			"detecting=0 detected=1 guessed=0 undetected=1 "
			"evicted=1 ");
	free(out);
	/* room again: TLS is detected and steered */
	assert_int_equal(send1(2 * NS + 300 * MS, &t, NULL), SL_TO(7));
	for (uint64_t now = 2 * NS + 210 * MS; now <= 4 * NS; now += 10 * MS)
		free(tick_output(now));
	out = fini_output();
	assert_has(out, " flows=0 flows_capacity=2 flows_seen=3 table_full=2 "
			"detecting=0 detected=2 guessed=0 undetected=1 "
			"evicted=3 steered=1 ");
	free(out);
	unlink(rules_file(""));
}

/* IPv6, and IPv4 behind a VLAN tag: nDPI gets the IP datagram wherever
 * it starts; Ethernet padding is not part of it. */
static void
test_ipv6_vlan(void **state)
{
	static const uint16_t tag[2] = {0x8100, 100};
	static const char junk[40] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct frame f6, fv, pad;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	memset(&f6, 0, sizeof(f6));
	put_eth(&f6, 0x86DD, 0, NULL);
	put_ipv6(&f6, IPPROTO_TCP, v6_a, v6_b,
		 (uint16_t)(20 + strlen(http_get)));
	put_tcp(&f6, 47000, 80, 0);
	put(&f6, http_get, (uint32_t)strlen(http_get));
	assert_int_equal(send1(1 * NS, &f6, &out), SL_NEXT);
	assert_string_equal(out, "dpi: tcp [2001:db8::1]:47000 > "
				 "[2001:db8::2]:80 app=HTTP category=Web "
				 "by=payload host=example.com packets=1\n");
	free(out);

	memset(&fv, 0, sizeof(fv));
	put_eth(&fv, 0x0800, 1, tag);
	put_ipv4(&fv, IPPROTO_TCP, A, B, (uint16_t)(20 + strlen(http_get)), 0,
		 0);
	put_tcp(&fv, 47001, 80, 0);
	put(&fv, http_get, (uint32_t)strlen(http_get));
	assert_int_equal(send1(1 * NS, &fv, &out), SL_NEXT);
	assert_string_equal(out, "dpi: tcp 10.67.0.1:47001 > 10.67.1.1:80 "
				 "app=HTTP category=Web by=payload "
				 "host=example.com packets=1\n");
	free(out);

	/* a DNS query in a frame padded with 40 bytes of junk */
	dns(&pad, 47002);
	put(&pad, junk, sizeof(junk));
	assert_int_equal(send1(1 * NS, &pad, &out), SL_NEXT);
	assert_string_equal(out, "dpi: udp 10.67.0.1:47002 > 10.67.1.1:53 "
				 "app=DNS category=Network by=payload "
				 "host=example.com packets=1\n");
	free(out);
	free(fini_output());
}

/* Non-IP and malformed frames: counted, default edge, never parsed. */
static void
test_non_ip_malformed(void **state)
{
	struct frame arp, bad;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	memset(&arp, 0, sizeof(arp));
	put_eth(&arp, 0x0806, 0, NULL);
	put_zero(&arp, 28);
	http(&bad, 44000, http_get);
	bad.len = 14 + 20 + 10; /* TCP header cut short */
	assert_int_equal(send1(1 * NS, &arp, NULL), SL_NEXT);
	assert_int_equal(send1(1 * NS, &bad, NULL), SL_NEXT);
	out = fini_output();
	assert_has(out, " packets=2 bytes=86 ");
	assert_has(out, " non_ip=1 malformed=1 flows=0 ");
	free(out);
}

/* --quiet: no line per detection; the Message still goes. */
static void
test_quiet(void **state)
{
	struct frame d;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--quiet", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	dns(&d, 45500);
	assert_int_equal(send1(1 * NS, &d, &out), SL_NEXT);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_string_equal(g_msg[0].value,
			    "app=DNS category=Network by=payload "
			    "host=example.com flow=udp 10.67.0.1:45500 > "
			    "10.67.1.1:53");
	out = fini_output();
	assert_has(out, " detected=1 ");
	free(out);
}

/* A Message that cannot be queued, or that no instance took: counted. */
static void
test_messages_lost(void **state)
{
	struct frame d;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	g_msg_fail = 1;
	dns(&d, 45000);
	assert_int_equal(send1(1 * NS, &d, NULL), SL_NEXT);
	out = reply_output(3, ENOENT, "no instance of 'dpi' is running");
	assert_string_equal(out, "");
	free(out);
	out = fini_output();
	assert_has(out, " messages=0 messages_not_queued=1 "
			"messages_undelivered=1\n");
	free(out);
}

/* SIGHUP: a good file changes the verdicts of flows already detected; a
 * bad one keeps the current rules and says why. */
static void
test_reload(void **state)
{
	struct frame h;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--rules", rules_file("HTTP -> web\n"),
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	http(&h, 46000, http_get);
	assert_int_equal(send1(1 * NS, &h, NULL), SL_TO(7));

	rules_file("HTTP -> resolver\nnosuchapp -> web\n");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "sluice-dpi: reload failed, keeping the 1 current "
			"rules: /tmp/sl_dpi_test_");
	assert_has(out, ".rules:2: unknown application 'nosuchapp': nDPI "
			"4.2.0 has no protocol of that name\n");
	free(out);
	assert_int_equal(send1(1 * NS, &h, NULL), SL_TO(7));

	rules_file("HTTP -> resolver\n");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "dpi-stats: reason=reload ");
	assert_has(out, "dpi-rule: rule=1 line=1 app=HTTP to=web flows=1 "
			"packets=2\n");
	assert_has(out, "sluice-dpi: reloaded 1 rules from ");
	assert_has(out, "sluice-dpi:   rule 1: HTTP -> resolver\n");
	free(out);
	assert_int_equal(send1(1 * NS, &h, NULL), SL_TO(8));
	free(fini_output());
	unlink(rules_file(""));
}

/* Bad rules and options are refused at start, each naming the problem. */
static void
test_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"HTTP web\n", ":1: expected 'APP -> SERVICE' (or 'APP -> "
			       "drop')\n"},
		{"# c\nHTTP -> web extra\n", ":2: expected 'APP -> SERVICE'"},
		{"HTTP => web\n", ":1: expected 'APP -> SERVICE'"},
		{"Gopher -> web\n", ":1: unknown application 'Gopher': nDPI "
				    "4.2.0 has no protocol of that name\n"},
		{"Unknown -> web\n", ":1: 'Unknown' cannot be steered: flows "
				     "whose application is not detected "
				     "follow the default edge\n"},
		{"HTTP -> web\nDNS -> drop\nhttp -> drop\n",
		 ":3: application 'http' already has a rule (line 1)\n"},
		{"DNS -> dpi\n", ":1: 'dpi' is this NF's own service: its "
				 "packets would come back to it\n"},
		{"HTTP -> nosuch\n", ":1: no service 'nosuch' (sluiced knows "
				     "the services of its graphs and of the "
				     "NFs that registered; sluice status "
				     "lists them)\n"},
	};
	char want[256];

	(void)state;
	reset(1 * NS);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *path = rules_file(bad[i].text);

		snprintf(want, sizeof(want), "sluice-dpi: %s%s", path,
			 bad[i].want);
		expect_init_error("sluice-dpi", want, "--rules", path, NULL);
	}
	unlink(rules_file(""));
	expect_init_error("sluice-dpi",
			  "sluice-dpi: /nonexistent/rules: cannot open: No "
			  "such file or directory\n",
			  "--rules", "/nonexistent/rules", NULL);
	expect_init_error("sluice-dpi",
			  "sluice-dpi: --flows: '0' is not a whole number "
			  "from 1 to 4194304",
			  "--flows", "0", NULL);
	expect_init_error("sluice-dpi",
			  "sluice-dpi: --max-packets: '0' is not a whole "
			  "number from 1 to 1000",
			  "--max-packets", "0", NULL);
	expect_init_error("sluice-dpi",
			  "sluice-dpi: --notify 'nosuch': no such service",
			  "--notify", "nosuch", NULL);
	expect_init_error("sluice-dpi",
			  "sluice-dpi: unrecognized option '--bogus'",
			  "--bogus", NULL);
}

/* Hostile payloads: random bytes after valid headers, to the ports whose
 * dissectors nDPI tries first, and protocol beginnings with random tails.
 * Every packet gets a verdict and is left as it came, and nothing
 * crashes (in the sanitizer build ASan watches the NF and what nDPI asks
 * of the C library; Debian's libndpi itself is not instrumented). */
static void
test_random_payloads(void **state)
{
	static const uint16_t ports[] = {80, 443, 53, 8080, 5353, 123, 22, 0};
	static const char *const heads[] = {"GET / HTTP/1.1\r\nHost: ",
					    "\x16\x03\x01\x00\xc8\x01",
					    "HTTP/1.1 ", "SSH-2.0-", ""};
	uint32_t seed = 12345;
	uint8_t pl[180];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--max-packets", "4", "--flows", "64",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	for (unsigned i = 0; i < 3000; i++) {
		struct frame f;
		const char *head = heads[i % 5];
		uint32_t n, hl = (uint32_t)strlen(head);
		uint16_t dport;

		seed = seed * 1103515245u + 12345u;
		n = (seed >> 8) % sizeof(pl);
		for (uint32_t k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			pl[k] = (uint8_t)(seed >> 16);
		}
		if (hl <= n)
			memcpy(pl, head, hl);
		dport = ports[i % 8] ? ports[i % 8] : (uint16_t)(seed >> 4);
		frame_app(&f, i % 3 ? IPPROTO_TCP : IPPROTO_UDP, A,
			  (uint16_t)(1024 + i % 200), B, dport, pl, n);
		send1(1 * NS + i * MS, &f, NULL); /* checks the bytes */
	}
	out = fini_output();
	assert_has(out, " packets=3000 ");
	assert_has(out, " non_ip=0 malformed=0 ");
	free(out);
}

/* ---- the HTTP mix --------------------------------------------------- */

struct pcap_run {
	FILE *f;
	unsigned n;
	sl_verdict_t worst; /* any verdict but NEXT */
};

/* Sends every frame of the capture in bursts of 32 at its own time. */
static void
do_pcap(void *arg)
{
	struct pcap_run *c = arg;
	struct rte_mbuf *m[32];
	uint8_t hdr[16], buf[2048];
	unsigned k = 0;

	for (;;) {
		uint32_t sec, usec, len;
		int end = fread(hdr, 1, 16, c->f) != 16;

		if (!end) {
			memcpy(&sec, hdr, 4);
			memcpy(&usec, hdr + 4, 4);
			memcpy(&len, hdr + 8, 4);
			assert_true(len <= sizeof(buf));
			assert_int_equal(fread(buf, 1, len, c->f), len);
			m[k] = stub_mbuf(buf, len);
			assert_non_null(m[k]);
			k++;
			c->n++;
			stub_now_ns =
				(uint64_t)sec * NS + (uint64_t)usec * 1000;
		}
		if (k == 32 || (end && k > 0)) {
			stub_ops->process(stub_nf(), m, (uint16_t)k);
			for (unsigned i = 0; i < k; i++) {
				if (sl_pkt_verdict(m[i]) != SL_NEXT)
					c->worst = sl_pkt_verdict(m[i]);
				stub_mbuf_free(m[i]);
			}
			k = 0;
		}
		if (end)
			break;
	}
}

static void
test_http_mix(void **state)
{
	struct pcap_run c = {NULL, 0, SL_NEXT};
	uint8_t ghdr[24];
	char *out;
	int rc;

	(void)state;
	reset(0);
	c.f = fopen(SL_SOURCE_ROOT "/examples/traces/http-mix.pcap", "rb");
	assert_non_null(c.f);
	assert_int_equal(fread(ghdr, 1, 24, c.f), 24);
	out = init_with(&rc, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	out = stub_capture_stderr(do_pcap, &c);
	fclose(c.f);
	assert_int_equal(c.n, 4096);
	assert_int_equal(c.worst, SL_NEXT);
	/* one line per detection */
	{
		unsigned lines = 0;

		for (const char *l = strstr(out, "dpi: "); l != NULL;
		     l = strstr(l + 1, "\ndpi: "))
			lines++;
		assert_int_equal(lines, 338);
	}
	free(out);
	assert_int_equal(g_n_msg, 338);
	out = fini_output();
	assert_has(out, " packets=4096 bytes=2279772 ");
	assert_has(out, " non_ip=0 malformed=0 flows=512 flows_capacity=16384 "
			"flows_seen=512 table_full=0 detecting=169 "
			"detected=338 guessed=0 undetected=5 ");
	/* As tshark counts them: 81 UDP flows, all DNS; 257 TCP flows to
	 * port 80, HTTP (some start in the middle, with a response); 174
	 * to port 443 carry TLS records but no handshake, which nDPI needs:
	 * 5 reached --max-packets (undetected), 169 are shorter. */
	assert_has(out, "dpi-app: app=DNS flows=81 guessed=0 packets=567 "
			"bytes=375638\n");
	assert_has(out, "dpi-app: app=HTTP flows=257 guessed=0 "
			"packets=1862 bytes=1240508\n");
	free(out);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-dpi", sl_dpi_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_steer),
		cmocka_unit_test(test_giveup),
		cmocka_unit_test(test_table_and_idle),
		cmocka_unit_test(test_ipv6_vlan),
		cmocka_unit_test(test_non_ip_malformed),
		cmocka_unit_test(test_quiet),
		cmocka_unit_test(test_messages_lost),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_random_payloads),
		cmocka_unit_test(test_http_mix),
	};

	return cmocka_run_group_tests_name("dpi", tests, setup, stub_teardown);
}
