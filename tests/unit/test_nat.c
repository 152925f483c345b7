/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat driven through its ops (nfs/nat/) with the libsluice stand-in
 * of nf_stub.c: every translated packet is compared byte by byte with the
 * packet it must become, whose checksums are computed in full here (so
 * the NF's incremental updates are checked against a recomputation); the
 * reverse path, ICMP echo and ICMP errors, port forwards, timeouts by TCP
 * state and protocol, a full table and no free port, every drop reason,
 * reload and configuration errors by their text.
 */
#undef main /* meson.build renames nat.c's main to sl_nat_main */

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

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

#include "nat_frames.h"

int sl_nat_main(int argc, char **argv);

#define P_IN 2  /* the ports' ids */
#define P_OUT 5 /* (not 0 and 1: the NF must use the ids it was given) */
#define SEC 1000000000ull

#define H_IN IP4(10, 61, 1, 2) /* inside hosts */
#define H_IN2 IP4(10, 61, 1, 3)
#define H_OUT IP4(10, 61, 2, 1) /* an outside server */
#define ROUTER IP4(10, 61, 2, 254)
#define POOL1 IP4(10, 61, 9, 1)

int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	if (strcmp(name, "in") == 0)
		return P_IN;
	return strcmp(name, "out") == 0 ? P_OUT : -1;
}

/* sluiced's flow hash as the NAT sees it: NAT must be right whatever it
 * is, since it only uses it as a hint (a cache). */
enum { HASH_SOFT, HASH_SAME, HASH_NONE } g_hash = HASH_SOFT;

uint32_t
sl_pkt_flow_hash(const struct rte_mbuf *m)
{
	struct sl_5tuple t;

	if (g_hash == HASH_SAME)
		return 7; /* every flow collides */
	if (g_hash == HASH_NONE || sl_pkt_flow_tuple(m, &t) != 0)
		return 0;
	return sl_5tuple_hash(&t);
}

/* The stand-in has no ingress port: the tests keep it in m->port. */
uint16_t
sl_pkt_in_port(const struct rte_mbuf *m)
{
	return m->port;
}

static const char conf_basic[] = "pool: [10.61.9.1]\n"
				 "forwards:\n"
				 "  - proto: tcp\n"
				 "    outside: 10.61.9.1:8080\n"
				 "    inside: 10.61.1.2:80\n";

/* init with the file's text and more arguments (NULL-terminated, at most
 * 8); must succeed. Returns the file's path (caller unlinks, frees). */
static char *
start(const char *text, ...)
{
	const char *a[9] = {NULL};
	char *path = write_file(text);
	va_list ap;
	unsigned n = 0;
	char *out;
	int rc;

	va_start(ap, text);
	while (n < 8 && (a[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	stub_now_ns = 0; /* the counters line's uptime counts from here */
	out = stub_init_output(&rc, "sluice-nat", "--config", path, "--inside",
			       "in", "--outside", "out", a[0], a[1], a[2], a[3],
			       a[4], a[5], a[6], a[7], NULL);
	if (rc != 0)
		fail_msg("init failed (%d): %s", rc, out);
	free(out);
	return path;
}

static char *
stop(char *path)
{
	char *out = fini_output();

	unlink(path);
	free(path);
	return out;
}

/* ---- translation ------------------------------------------------------- */

static void
test_tcp_both_ways(void **state)
{
	struct frame a, want, b, back;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	mk(&a, IPPROTO_TCP, H_IN, 40000, H_OUT, 80);
	mk(&want, IPPROTO_TCP, POOL1, 40000, H_OUT, 80); /* port kept */
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	mk(&b, IPPROTO_TCP, H_OUT, 80, POOL1, 40000);
	mk(&back, IPPROTO_TCP, H_OUT, 80, H_IN, 40000);
	expect_xlate(SEC, P_OUT, &b, &back, P_IN);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT); /* the same mapping */
	out = stop(path);
	assert_has(out, "nat-stats: reason=exit");
	assert_has(out, " packets=3 bytes=198 ");
	assert_has(out, " out=2 in=1 icmp_errors=0 mappings=1 capacity=65536 "
			"created=1 expired=0 dropped=0 drop_table_full=0 ");
	free(out);
}

static void
test_udp_checksums(void **state)
{
	struct frame a, want, got;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	mk(&a, IPPROTO_UDP, H_IN, 5353, H_OUT, 53);
	mk(&want, IPPROTO_UDP, POOL1, 5353, H_OUT, 53);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	/* No checksum (0) stays none. */
	frame_ip4(&a, IPPROTO_UDP, H_IN, 5354, H_OUT, 53, 12);
	fix_cksums(&a, 1);
	frame_ip4(&want, IPPROTO_UDP, POOL1, 5354, H_OUT, 53, 12);
	fix_cksums(&want, 1);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	assert_int_equal(rd_port(&want, L3 + 26), 0);
	/* Many ports and addresses: each checksum as recomputed. */
	for (uint16_t i = 0; i < 200; i++) {
		mk(&a, IPPROTO_UDP, H_IN + (i % 7), (uint16_t)(1024 + i * 311),
		   H_OUT + i, (uint16_t)(i * 7 + 1));
		assert_int_equal(send1(SEC, P_IN, &a, &got), SL_OUT(P_OUT));
		mk(&want, IPPROTO_UDP, POOL1, rd_port(&got, L3 + 20), H_OUT + i,
		   (uint16_t)(i * 7 + 1));
		assert_frame(&got, &want);
	}
	out = stop(path);
	assert_has(out, " out=202 in=0 ");
	free(out);
}

static void
test_port_clash(void **state)
{
	struct frame a, b, got, r, want;
	char *path;
	uint16_t p2;

	(void)state;
	path = start("pool: 10.61.9.1\nports: {udp: 3000-3999}\n", NULL);
	/* Outside the range: not kept. Two hosts, same port, one server. */
	mk(&a, IPPROTO_UDP, H_IN, 5000, H_OUT, 53);
	mk(&b, IPPROTO_UDP, H_IN2, 5000, H_OUT, 53);
	assert_int_equal(send1(SEC, P_IN, &a, &got), SL_OUT(P_OUT));
	assert_true(rd_port(&got, L3 + 20) >= 3000 &&
		    rd_port(&got, L3 + 20) <= 3999);
	assert_int_equal(send1(SEC, P_IN, &b, &r), SL_OUT(P_OUT));
	p2 = rd_port(&r, L3 + 20);
	assert_true(p2 >= 3000 && p2 <= 3999);
	assert_int_not_equal(p2, rd_port(&got, L3 + 20));
	/* Each reply finds its own host. */
	mk(&a, IPPROTO_UDP, H_OUT, 53, POOL1, rd_port(&got, L3 + 20));
	mk(&want, IPPROTO_UDP, H_OUT, 53, H_IN, 5000);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	mk(&a, IPPROTO_UDP, H_OUT, 53, POOL1, p2);
	mk(&want, IPPROTO_UDP, H_OUT, 53, H_IN2, 5000);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	free(stop(path));
}

static void
test_icmp_echo(void **state)
{
	struct frame a, want;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	mk_echo(&a, 8, H_IN, H_OUT, 0x1234);
	mk_echo(&want, 8, POOL1, H_OUT, 0x1234);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	mk_echo(&a, 0, H_OUT, POOL1, 0x1234);
	mk_echo(&want, 0, H_OUT, H_IN, 0x1234);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	/* A request from outside, a reply of no mapping: dropped. */
	mk_echo(&a, 8, H_OUT, POOL1, 0x1234);
	expect_drop(SEC, P_OUT, &a);
	mk_echo(&a, 0, H_OUT, POOL1, 0x999);
	expect_drop(SEC, P_OUT, &a);
	out = stop(path);
	assert_has(out, " out=1 in=1 icmp_errors=0 mappings=1 ");
	assert_has(out, " drop_no_mapping=2 ");
	free(out);
}

/* An identifier outside the icmp range is translated, its checksum kept
 * right; two hosts with one identifier get two. */
static void
test_icmp_echo_ids(void **state)
{
	struct frame a, want, got;
	char *path, *out;
	uint16_t id2;

	(void)state;
	path = start("pool: 10.61.9.1\nports: {icmp: 2000-2001}\n", NULL);
	mk_echo(&a, 8, H_IN, H_OUT, 5);
	assert_int_equal(send1(SEC, P_IN, &a, &got), SL_OUT(P_OUT));
	id2 = rd_port(&got, L3 + 24);
	assert_true(id2 == 2000 || id2 == 2001);
	mk_echo(&want, 8, POOL1, H_OUT, id2);
	assert_frame(&got, &want);
	mk_echo(&a, 8, H_IN2, H_OUT, 5);
	assert_int_equal(send1(SEC, P_IN, &a, &got), SL_OUT(P_OUT));
	assert_int_equal(rd_port(&got, L3 + 24), id2 == 2000 ? 2001 : 2000);
	mk_echo(&a, 8, IP4(10, 61, 1, 4), H_OUT, 5); /* no third */
	expect_drop(SEC, P_IN, &a);
	mk_echo(&a, 0, H_OUT, POOL1, id2);
	mk_echo(&want, 0, H_OUT, H_IN, 5);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	out = stop(path);
	assert_has(out, " out=2 in=1 icmp_errors=0 mappings=2 ");
	assert_has(out, " drop_no_port=1 ");
	free(out);
}

static void
test_forward(void **state)
{
	struct frame a, want;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	mk(&a, IPPROTO_TCP, H_OUT, 5555, POOL1, 8080);
	mk(&want, IPPROTO_TCP, H_OUT, 5555, H_IN, 80);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	mk(&a, IPPROTO_TCP, H_IN, 80, H_OUT, 5555);
	mk(&want, IPPROTO_TCP, POOL1, 8080, H_OUT, 5555);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	/* No forward for UDP 8080, nor TCP 8081. */
	mk(&a, IPPROTO_UDP, H_OUT, 5555, POOL1, 8080);
	expect_drop(SEC, P_OUT, &a);
	mk(&a, IPPROTO_TCP, H_OUT, 5555, POOL1, 8081);
	expect_drop(SEC, P_OUT, &a);
	/* Source NAT never hands out the forward's port. */
	mk(&a, IPPROTO_TCP, IP4(10, 61, 1, 9), 8080, H_OUT, 5556);
	{
		struct frame got;

		assert_int_equal(send1(SEC, P_IN, &a, &got), SL_OUT(P_OUT));
		assert_int_not_equal(rd_port(&got, L3 + 20), 8080);
	}
	out = stop(path);
	assert_has(out, " out=2 in=1 icmp_errors=0 mappings=2 ");
	assert_has(out, " drop_no_mapping=2 ");
	free(out);
}

/* Inside to a forward's outside address: both translations, back to the
 * inside port (RFC 4787 REQ-9), and the reply the same way. */
static void
test_hairpin(void **state)
{
	struct frame a, want;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	mk(&a, IPPROTO_TCP, H_IN2, 5000, POOL1, 8080);
	mk(&want, IPPROTO_TCP, POOL1, 5000, H_IN, 80);
	swap_macs(&want);
	expect_xlate(SEC, P_IN, &a, &want, P_IN);
	mk(&a, IPPROTO_TCP, H_IN, 80, POOL1, 5000);
	mk(&want, IPPROTO_TCP, POOL1, 8080, H_IN2, 5000);
	swap_macs(&want);
	expect_xlate(SEC, P_IN, &a, &want, P_IN);
	expect_xlate(SEC, P_IN, &a, &want, P_IN);
	/* To a pool address with nothing behind it: dropped (its source
	 * already translated: the bytes of a dropped packet are not
	 * kept). */
	mk(&a, IPPROTO_UDP, H_IN2, 5000, POOL1, 9999);
	assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_DROP);
	/* Other traffic is not hairpinned. */
	mk(&a, IPPROTO_TCP, H_IN2, 5001, H_OUT, 8080);
	mk(&want, IPPROTO_TCP, POOL1, 5001, H_OUT, 8080);
	expect_xlate(SEC, P_IN, &a, &want, P_OUT);
	out = stop(path);
	assert_has(out, " out=4 in=0 icmp_errors=0 mappings=4 ");
	assert_has(out, " drop_no_mapping=1 ");
	assert_has(out, " hairpins=3\n");
	free(out);
}

/* ---- ICMP errors ------------------------------------------------------- */

static void
test_icmp_errors(void **state)
{
	struct frame a, sent, err, want;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	/* A UDP datagram goes out; a router says port unreachable about it
	 * (what it got: the translated one). Back inside, the error is
	 * about the datagram as the inside host sent it. */
	mk(&a, IPPROTO_UDP, H_IN, 40001, H_OUT, 53);
	assert_int_equal(send1(SEC, P_IN, &a, &sent), SL_OUT(P_OUT));
	mk_error(&err, 3, 3, ROUTER, POOL1, &sent);
	mk_error(&want, 3, 3, ROUTER, H_IN, &a);
	expect_xlate(SEC, P_OUT, &err, &want, P_IN);
	/* Time exceeded about TCP (its checksum is past the 8 bytes). */
	mk(&a, IPPROTO_TCP, H_IN, 40002, H_OUT, 443);
	assert_int_equal(send1(SEC, P_IN, &a, &sent), SL_OUT(P_OUT));
	mk_error(&err, 11, 0, ROUTER, POOL1, &sent);
	mk_error(&want, 11, 0, ROUTER, H_IN, &a);
	expect_xlate(SEC, P_OUT, &err, &want, P_IN);
	/* About an echo request (traceroute by ping). */
	mk_echo(&a, 8, H_IN, H_OUT, 0x4321);
	assert_int_equal(send1(SEC, P_IN, &a, &sent), SL_OUT(P_OUT));
	mk_error(&err, 11, 0, ROUTER, POOL1, &sent);
	mk_error(&want, 11, 0, ROUTER, H_IN, &a);
	expect_xlate(SEC, P_OUT, &err, &want, P_IN);
	/* The inside host's own error about a forwarded packet goes out
	 * as the pool's. */
	mk(&a, IPPROTO_TCP, H_OUT, 6000, POOL1, 8080);
	assert_int_equal(send1(SEC, P_OUT, &a, &sent), SL_OUT(P_IN));
	mk_error(&err, 3, 1, H_IN, H_OUT, &sent);
	mk_error(&want, 3, 1, POOL1, H_OUT, &a);
	expect_xlate(SEC, P_IN, &err, &want, P_OUT);
	/* About nothing NAT sent: dropped; cut short: malformed. */
	mk(&a, IPPROTO_UDP, POOL1, 1111, H_OUT, 53);
	mk_error(&err, 3, 3, ROUTER, POOL1, &a);
	expect_drop(SEC, P_OUT, &err);
	mk_error(&err, 3, 3, ROUTER, POOL1, &sent);
	err.len -= 10;
	wr16(&err, L3 + 2, (uint16_t)(20 + 8 + 18));
	fix_cksums(&err, 0);
	expect_drop(SEC, P_OUT, &err);
	out = stop(path);
	assert_has(out, " icmp_errors=4 ");
	assert_has(out, " drop_no_mapping=1 drop_fragment=0 drop_not_ipv4=0 "
			"drop_proto=0 drop_malformed=1 ");
	free(out);
}

/* ---- fragments --------------------------------------------------------- */

/* A fragmented datagram both ways: the first fragment's L4 checksum,
 * which covers the whole datagram, and the later fragment's address are
 * those of the translated datagram; a later fragment NAT has no first
 * one for is dropped. */
static void
test_fragments(void **state)
{
	struct frame full, xfull, f0, f1, w0, w1;
	char *path, *out;

	(void)state;
	path = start(conf_basic, NULL);
	frame_ip4(&full, IPPROTO_UDP, H_IN, 6000, H_OUT, 53, 40);
	fix_cksums(&full, 0);
	frame_ip4(&xfull, IPPROTO_UDP, POOL1, 6000, H_OUT, 53, 40);
	fix_cksums(&xfull, 0);
	fragment(&f0, &full, 24, 0);
	fragment(&f1, &full, 24, 1);
	fragment(&w0, &xfull, 24, 0);
	fragment(&w1, &xfull, 24, 1);
	expect_drop(SEC, P_IN, &f1); /* before its first: not followed */
	expect_xlate(SEC, P_IN, &f0, &w0, P_OUT);
	expect_xlate(SEC, P_IN, &f1, &w1, P_OUT);
	/* The reply, fragmented too. */
	frame_ip4(&full, IPPROTO_UDP, H_OUT, 53, POOL1, 6000, 40);
	fix_cksums(&full, 0);
	frame_ip4(&xfull, IPPROTO_UDP, H_OUT, 53, H_IN, 6000, 40);
	fix_cksums(&xfull, 0);
	fragment(&f0, &full, 32, 0);
	fragment(&f1, &full, 32, 1);
	fragment(&w0, &xfull, 32, 0);
	fragment(&w1, &xfull, 32, 1);
	expect_xlate(SEC, P_OUT, &f0, &w0, P_IN);
	expect_xlate(SEC, P_OUT, &f1, &w1, P_IN);
	/* 30 s later its fragments are no longer waited for. */
	expect_drop(31 * SEC, P_OUT, &f1);
	out = stop(path);
	assert_has(out, " out=2 in=2 icmp_errors=0 mappings=1 ");
	assert_has(out, " drop_fragment=2 ");
	free(out);
}

/* ---- timeouts ---------------------------------------------------------- */

static char *
tick_at(uint64_t now)
{
	char *out = tick_output(now);

	return out;
}

/* Sweeps the whole table at now (the tick looks at a part each time). */
static void
sweep_all(uint64_t now)
{
	for (int i = 0; i < 25; i++)
		free(tick_at(now));
}

static void
test_timeouts(void **state)
{
	struct frame a, r, got;
	char *path, *out;

	(void)state;
	path = start(conf_basic, "--udp-timeout", "30", "--tcp-syn-timeout",
		     "5", "--tcp-est-timeout", "100", "--tcp-fin-timeout", "7",
		     NULL);
	/* UDP: alive 29 s after the last packet, gone at 30. */
	mk(&a, IPPROTO_UDP, H_IN, 7000, H_OUT, 53);
	mk(&r, IPPROTO_UDP, H_OUT, 53, POOL1, 7000);
	assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	assert_int_equal(send1(30 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	sweep_all(59 * SEC);
	assert_int_equal(send1(59 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	sweep_all(89 * SEC + 1);
	expect_drop(89 * SEC + 1, P_OUT, &r);
	/* TCP, SYN unanswered: 5 s. */
	mk(&a, IPPROTO_TCP, H_IN, 7001, H_OUT, 80);
	a.b[L3 + 33] = 0x02; /* SYN */
	fix_cksums(&a, 0);
	mk(&r, IPPROTO_TCP, H_OUT, 80, POOL1, 7001);
	assert_int_equal(send1(100 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	expect_drop(105 * SEC, P_OUT, &r);
	/* Answered: established, 100 s; then a FIN: 7 s. */
	assert_int_equal(send1(200 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	r.b[L3 + 33] = 0x12; /* SYN ACK */
	fix_cksums(&r, 0);
	assert_int_equal(send1(201 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	assert_int_equal(send1(300 * SEC, P_OUT, &r, &got), SL_OUT(P_IN));
	a.b[L3 + 33] = 0x11; /* FIN ACK */
	fix_cksums(&a, 0);
	assert_int_equal(send1(301 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	assert_int_equal(send1(307 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	sweep_all(314 * SEC);
	expect_drop(314 * SEC, P_OUT, &r);
	/* An RST: 10 s (the default), and an RST never makes a mapping. */
	a.b[L3 + 33] = 0x02;
	fix_cksums(&a, 0);
	assert_int_equal(send1(400 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	r.b[L3 + 33] = 0x14; /* RST ACK */
	fix_cksums(&r, 0);
	assert_int_equal(send1(401 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	a.b[L3 + 33] = 0x10;
	fix_cksums(&a, 0);
	assert_int_equal(send1(410 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	expect_drop(420 * SEC, P_OUT, &r);
	mk(&a, IPPROTO_TCP, H_IN, 7002, H_OUT, 80);
	a.b[L3 + 33] = 0x04;
	fix_cksums(&a, 0);
	expect_drop(500 * SEC, P_IN, &a);
	out = stop(path);
	assert_has(out, " mappings=0 capacity=65536 created=4 expired=4 "
			"dropped=5 drop_table_full=0 drop_no_port=0 "
			"drop_no_mapping=5 ");
	free(out);
}

/* A SYN from the opening side after a FIN starts the mapping again: it
 * is then timed as a new connection's. */
static void
test_tcp_reuse(void **state)
{
	struct frame a, r;
	char *path, *out;

	(void)state;
	path = start(conf_basic, "--tcp-syn-timeout", "5", "--tcp-fin-timeout",
		     "100", NULL);
	mk(&a, IPPROTO_TCP, H_IN, 7100, H_OUT, 80);
	mk(&r, IPPROTO_TCP, H_OUT, 80, POOL1, 7100);
	a.b[L3 + 33] = 0x02; /* SYN */
	fix_cksums(&a, 0);
	assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	assert_int_equal(send1(2 * SEC, P_OUT, &r, NULL), SL_OUT(P_IN));
	a.b[L3 + 33] = 0x11; /* FIN ACK: 100 s */
	fix_cksums(&a, 0);
	assert_int_equal(send1(10 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	a.b[L3 + 33] = 0x02; /* SYN again: 5 s */
	fix_cksums(&a, 0);
	assert_int_equal(send1(20 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	a.b[L3 + 33] = 0x02; /* a SYN retransmitted: still 5 s from here */
	fix_cksums(&a, 0);
	assert_int_equal(send1(24 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	expect_drop(29 * SEC, P_OUT, &r);
	out = stop(path);
	assert_has(out, " created=1 expired=1 dropped=1 ");
	free(out);
}

/* ---- bounds ------------------------------------------------------------ */

static void
test_table_full(void **state)
{
	struct frame a;
	char *path, *out;

	(void)state;
	path = start(conf_basic, "--mappings", "16", NULL);
	for (uint16_t i = 0; i < 16; i++) {
		mk(&a, IPPROTO_UDP, H_IN, (uint16_t)(2000 + i), H_OUT, 53);
		assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	}
	mk(&a, IPPROTO_UDP, H_IN, 3000, H_OUT, 53);
	expect_drop(SEC, P_IN, &a);
	/* Once they expire (udp 300 s), there is room again. */
	sweep_all(302 * SEC);
	assert_int_equal(send1(302 * SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	out = stop(path);
	assert_has(out, " mappings=1 capacity=16 created=17 expired=16 "
			"dropped=1 drop_table_full=1 drop_no_port=0 ");
	free(out);
}

static void
test_no_port(void **state)
{
	struct frame a;
	char *path, *out;

	(void)state;
	path = start("pool: [10.61.9.1]\nports:\n  udp: 2000-2001\n", NULL);
	for (uint32_t h = 0; h < 2; h++) {
		mk(&a, IPPROTO_UDP, H_IN + h, 9, H_OUT, 53);
		assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	}
	mk(&a, IPPROTO_UDP, H_IN + 2, 9, H_OUT, 53);
	expect_drop(SEC, P_IN, &a);
	/* Another server: the same ports are free towards it. */
	mk(&a, IPPROTO_UDP, H_IN + 2, 9, H_OUT + 1, 53);
	assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	out = stop(path);
	assert_has(out, " mappings=3 capacity=65536 created=3 expired=0 "
			"dropped=1 drop_table_full=0 drop_no_port=1 ");
	free(out);
}

static void
test_drops(void **state)
{
	struct frame f;
	char *path, *out;
	struct rte_mbuf *m;

	(void)state;
	path = start(conf_basic, "--send", "next", NULL);
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 0, NULL); /* ARP */
	put_zero(&f, 28);
	expect_drop(SEC, P_IN, &f);
	frame_ip6(&f, IPPROTO_UDP, v6_a, 1, v6_b, 2, 4);
	expect_drop(SEC, P_IN, &f);
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0800, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, H_IN, H_OUT, 16, 0x0004, 0); /* later */
	put_zero(&f, 16);
	expect_drop(SEC, P_IN, &f);
	frame_ip4(&f, 47, H_IN, 0, H_OUT, 0, 8); /* GRE */
	expect_drop(SEC, P_IN, &f);
	mk(&f, IPPROTO_TCP, H_IN, 1, H_OUT, 2);
	f.len = L3 + 20 + 10; /* TCP cut short */
	wr16(&f, L3 + 2, 30);
	expect_drop(SEC, P_IN, &f);
	mk_echo(&f, 13, H_IN, H_OUT, 1); /* timestamp */
	expect_drop(SEC, P_IN, &f);
	mk(&f, IPPROTO_UDP, H_IN, 1, H_OUT, 2);
	expect_drop(SEC, 7, &f); /* neither port */
	/* --send next: translated packets follow the chain. */
	m = stub_mbuf(f.b, f.len);
	m->port = P_IN;
	stub_ops->process(stub_nf(), &m, 1);
	assert_int_equal(sl_pkt_verdict(m), SL_NEXT);
	stub_mbuf_free(m);
	out = stop(path);
	assert_has(out, " out=1 in=0 icmp_errors=0 mappings=1 capacity=65536 "
			"created=1 expired=0 dropped=7 drop_table_full=0 "
			"drop_no_port=0 drop_no_mapping=0 drop_fragment=1 "
			"drop_not_ipv4=2 drop_proto=1 drop_malformed=1 "
			"drop_icmp_type=1 drop_unknown_port=1 cache_hits=0 "
			"hairpins=0\n");
	free(out);
}

/* The counters line: every --stats-ms from tick, and on a message. */
static void
test_stats_line(void **state)
{
	struct frame a;
	char *path, *out;

	(void)state;
	path = start(conf_basic, "--stats-ms", "1000", NULL);
	mk(&a, IPPROTO_UDP, H_IN, 7000, H_OUT, 53);
	assert_int_equal(send1(SEC / 2, P_IN, &a, NULL), SL_OUT(P_OUT));
	out = tick_at(SEC / 2);
	assert_string_equal(out, "");
	free(out);
	out = tick_at(SEC + SEC / 2);
	assert_has(out, "nat-stats: reason=interval uptime=1.5 packets=1 "
			"bytes=54 ");
	assert_has(out, " out=1 in=0 ");
	free(out);
	out = msg_output("stats", "");
	assert_has(out, "nat-stats: reason=message ");
	free(out);
	out = msg_output("flush", "1");
	assert_string_equal(out, "nat-message: key=flush value=1 ignored "
				 "(keys: stats)\n");
	free(out);
	free(stop(path));
}

/* Random bytes changed in valid frames of every kind, random lengths,
 * both ports: never a crash or a read past the frame (ASan's exact-size
 * buffers), every packet judged and counted once. */
static void
test_mangled(void **state)
{
	struct frame base[6], f;
	char *path, *out, want[64];
	uint32_t seed = 12345, n = 0;

	(void)state;
	path = start(conf_basic, "--mappings", "64", NULL);
	mk(&base[0], IPPROTO_TCP, H_IN, 40000, H_OUT, 80);
	mk(&base[1], IPPROTO_UDP, H_IN, 40001, H_OUT, 53);
	mk_echo(&base[2], 8, H_IN, H_OUT, 77);
	mk(&base[3], IPPROTO_TCP, H_OUT, 80, POOL1, 40000);
	mk_error(&base[4], 3, 3, ROUTER, POOL1, &base[3]);
	mk(&f, IPPROTO_UDP, POOL1, 40001, H_OUT, 53);
	mk_error(&base[5], 11, 0, ROUTER, POOL1, &f);
	for (int i = 0; i < 20000; i++) {
		f = base[i % 6];
		for (int k = 0; k < 1 + i % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			f.b[(seed >> 8) % f.len] = (uint8_t)(seed >> 20);
		}
		seed = seed * 1103515245u + 12345u;
		if (seed % 3 == 0)
			f.len = (seed >> 10) % (f.len + 1);
		(void)send1(SEC, (seed >> 4) % 2 ? P_IN : P_OUT, &f, NULL);
		n++;
	}
	out = stop(path);
	snprintf(want, sizeof(want), " packets=%" PRIu32 " ", n);
	assert_has(out, want);
	free(out);
}

/* ---- the flow-hash cache ----------------------------------------------- */

/* Flows in both directions, interleaved, with sluiced's flow hash as it
 * may be: the software hash, one value for every flow, none. The same
 * translations each time; only the cache hits differ. */
static void
test_flow_hash_cache(void **state)
{
	/* Soft: each of the 8 tuples misses once. Same: the two ways hold
	 * the last mappings, which a reply (and at times the next flow)
	 * verifies as its own. */
	static const char *const want_hits[] = {" cache_hits=32 ",
						" cache_hits=24 ",
						" cache_hits=0 "};
	struct frame a, want;
	char *path, *out;

	(void)state;
	for (int mode = HASH_SOFT; mode <= HASH_NONE; mode++) {
		g_hash = mode;
		path = start(conf_basic, NULL);
		for (int round = 0; round < 5; round++) {
			for (uint16_t i = 0; i < 4; i++) {
				mk(&a, IPPROTO_UDP, H_IN, (uint16_t)(7000 + i),
				   H_OUT, 53);
				mk(&want, IPPROTO_UDP, POOL1,
				   (uint16_t)(7000 + i), H_OUT, 53);
				expect_xlate(SEC, P_IN, &a, &want, P_OUT);
				mk(&a, IPPROTO_UDP, H_OUT, 53, POOL1,
				   (uint16_t)(7000 + i));
				mk(&want, IPPROTO_UDP, H_OUT, 53, H_IN,
				   (uint16_t)(7000 + i));
				expect_xlate(SEC, P_OUT, &a, &want, P_IN);
			}
		}
		out = stop(path);
		assert_has(out, " out=20 in=20 icmp_errors=0 mappings=4 ");
		assert_has(out, want_hits[mode]);
		free(out);
	}
	g_hash = HASH_SOFT;
}

/* ---- configuration ----------------------------------------------------- */

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

static void
test_reload(void **state)
{
	struct frame a, want;
	char *path, *out;
	FILE *f;

	(void)state;
	path = start(conf_basic, NULL);
	mk(&a, IPPROTO_UDP, H_IN, 7000, H_OUT, 53);
	assert_int_equal(send1(SEC, P_IN, &a, NULL), SL_OUT(P_OUT));
	/* A bad file: the old configuration and the mapping stay. */
	f = fopen(path, "w");
	fputs("pool: [10.61.9.1]\nforwards:\n  - proto: sctp\n", f);
	fclose(f);
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "nat-stats: reason=reload");
	assert_has(out, "sluice-nat: reload failed, keeping the current "
			"configuration (1 pool address, 1 forward) and the 1 "
			"mappings: ");
	assert_has(out, ":3: forward 1: 'proto': 'sctp' is not tcp or udp\n");
	free(out);
	mk(&a, IPPROTO_TCP, H_OUT, 5555, POOL1, 8080);
	mk(&want, IPPROTO_TCP, H_OUT, 5555, H_IN, 80);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	/* A good one: a new pool and forward, the old mappings kept. */
	f = fopen(path, "w");
	fputs("pool: 10.61.9.4-10.61.9.5\nforwards:\n  - {proto: udp, "
	      "outside: '10.61.9.4:53', inside: '10.61.1.3:5353'}\n",
	      f);
	fclose(f);
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "sluice-nat: reloaded ");
	assert_has(out, ": 2 pool addresses (10.61.9.4 .. 10.61.9.5), ports "
			"tcp 1024-65535 udp 1024-65535 icmp 1024-65535, 1 "
			"forward\n");
	assert_has(out, "sluice-nat:   forward 1: udp 10.61.9.4:53 -> "
			"10.61.1.3:5353\n");
	free(out);
	mk(&a, IPPROTO_UDP, H_OUT, 53, POOL1, 7000);
	mk(&want, IPPROTO_UDP, H_OUT, 53, H_IN, 7000);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	mk(&a, IPPROTO_UDP, H_OUT, 99, IP4(10, 61, 9, 4), 53);
	mk(&want, IPPROTO_UDP, H_OUT, 99, H_IN2, 5353);
	expect_xlate(SEC, P_OUT, &a, &want, P_IN);
	/* The old forward is gone for new connections. */
	mk(&a, IPPROTO_TCP, H_OUT, 5556, POOL1, 8080);
	expect_drop(SEC, P_OUT, &a);
	free(stop(path));
}

/* init with a file of this text must fail, printing want. */
static void
bad_conf(const char *text, const char *want)
{
	char *path = write_file(text);
	char full[512];

	snprintf(full, sizeof(full), "sluice-nat: %s%s\n", path, want);
	expect_init_error("sluice-nat", full, "--config", path, "--inside",
			  "in", "--outside", "out", NULL);
	unlink(path);
	free(path);
}

static void
test_conf_errors(void **state)
{
	(void)state;
	bad_conf("", ":1: the file is empty (expected 'pool')");
	bad_conf("pool: [10.61.9.1\n",
		 ":2:1: YAML error: while parsing a flow sequence: did not "
		 "find expected ',' or ']'");
	bad_conf("- 1\n", ":1: expected a mapping with 'pool', 'ports' and "
			  "'forwards' at the top");
	bad_conf("ports: {tcp: 1-2}\n",
		 ":1: no 'pool' addresses (give at least one)");
	bad_conf("pool:\n  - 10.61.9.1\n  - 10.61.9.300\n",
		 ":3: pool entry 2: '10.61.9.300' is not an IPv4 address");
	bad_conf("pool: [10.61.9.1, 10.61.9.0/30]\n",
		 ":1: pool entry 2: 10.61.9.1 is already in the pool");
	bad_conf("pool: 10.0.0.0/8\n",
		 ":1: pool entry 1: '10.0.0.0/8' is not a prefix ADDR/LEN "
		 "with LEN from 22 to 32");
	bad_conf("pool: 10.61.9.5-10.61.9.1\n",
		 ":1: pool entry 1: range '10.61.9.5-10.61.9.1' is empty or "
		 "has more than 1024 addresses");
	bad_conf("pool: [10.61.9.1]\nports:\n  tcp: 0-100\n",
		 ":3: ports: tcp: '0-100' is not a port range LO-HI (numbers "
		 "from 1 to 65535)");
	bad_conf("pool: [10.61.9.1]\nports:\n  udp: 900-800\n",
		 ":3: ports: udp: the range 900-800 is empty");
	bad_conf("pool: [10.61.9.1]\nports:\n  gre: 1-2\n",
		 ":3: ports: unknown protocol 'gre' (expected tcp, udp or "
		 "icmp)");
	bad_conf("pool: [10.61.9.1]\nfowards: []\n",
		 ":2: unknown or repeated key 'fowards' at the top (expected "
		 "pool, ports, forwards)");
	bad_conf("pool: [10.61.9.1]\nforwards:\n  - proto: tcp\n"
		 "    outside: 10.61.9.1\n    inside: 10.61.1.2:80\n",
		 ":4: forward 1: 'outside': '10.61.9.1' is not ADDR:PORT (an "
		 "IPv4 address and a port from 1 to 65535)");
	bad_conf("pool: [10.61.9.1]\nforwards:\n  - proto: tcp\n"
		 "    inside: 10.61.1.2:80\n",
		 ":3: forward 1: missing 'outside'");
	bad_conf("pool: [10.61.9.1]\nforwards:\n  - proto: tcp\n"
		 "    outside: 10.61.9.1:1\n    inside: 10.61.1.2:80\n"
		 "    port: 3\n",
		 ":6: forward 1: unknown key 'port' (expected proto, outside, "
		 "inside)");
	bad_conf("pool: [10.61.9.1]\nforwards:\n"
		 "  - {proto: udp, outside: '10.61.9.1:53', inside: "
		 "'10.61.1.2:53'}\n"
		 "  - {proto: udp, outside: '10.61.9.1:53', inside: "
		 "'10.61.1.3:53'}\n",
		 ":4: forward 2: the same outside udp address and port as "
		 "forward 1 (line 3)");
	bad_conf("pool: [10.61.9.1]\nforwards: 3\n",
		 ":2: forwards: expected a list of forwards");
}

/* The example of README.md loads as it says. */
static void
test_readme_example(void **state)
{
	FILE *f = fopen(SL_SOURCE_ROOT "/nfs/nat/README.md", "r");
	char *text = calloc(1, 1 << 16), *a, *b, *path, *out;
	int rc;

	(void)state;
	assert_non_null(f);
	assert_non_null(text);
	assert_true(fread(text, 1, (1 << 16) - 1, f) > 0);
	fclose(f);
	a = strstr(text, "```yaml\n");
	assert_non_null(a);
	a += 8;
	b = strstr(a, "```");
	assert_non_null(b);
	*b = '\0';
	path = write_file(a);
	out = stub_init_output(&rc, "sluice-nat", "--config", path, "--inside",
			       "in", "--outside", "out", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, ": 10 pool addresses (10.61.9.0 .. 10.61.9.17), ports "
			"tcp 20000-40000 udp 20000-40000 icmp 1024-65535, 2 "
			"forwards\n");
	assert_has(out, "sluice-nat:   forward 2: udp 10.61.9.1:53 -> "
			"10.61.1.3:53\n");
	free(out);
	free(text);
	free(stop(path));
}

static void
test_args(void **state)
{
	char *path = write_file(conf_basic);

	(void)state;
	expect_init_error("sluice-nat", "sluice-nat: missing --config FILE\n",
			  "--inside", "in", "--outside", "out", NULL);
	expect_init_error("sluice-nat", "sluice-nat: missing --outside PORT\n",
			  "--config", path, "--inside", "in", NULL);
	expect_init_error("sluice-nat",
			  "sluice-nat: --inside and --outside are the same "
			  "port: give the two ports NAT is between\n",
			  "--config", path, "--inside", "in", "--outside", "in",
			  NULL);
	expect_init_error("sluice-nat",
			  "sluice-nat: /nonexistent/nat.yaml: cannot open: No "
			  "such file or directory\n",
			  "--config", "/nonexistent/nat.yaml", "--inside", "in",
			  "--outside", "out", NULL);
	expect_init_error("sluice-nat",
			  "sluice-nat: --udp-timeout: '0' is not a number of "
			  "seconds from 1 to 864000",
			  "--config", path, "--inside", "in", "--outside",
			  "out", "--udp-timeout", "0", NULL);
	unlink(path);
	free(path);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-nat", sl_nat_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp_both_ways),
		cmocka_unit_test(test_udp_checksums),
		cmocka_unit_test(test_port_clash),
		cmocka_unit_test(test_icmp_echo),
		cmocka_unit_test(test_icmp_echo_ids),
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_hairpin),
		cmocka_unit_test(test_icmp_errors),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_tcp_reuse),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_no_port),
		cmocka_unit_test(test_drops),
		cmocka_unit_test(test_stats_line),
		cmocka_unit_test(test_mangled),
		cmocka_unit_test(test_flow_hash_cache),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_conf_errors),
		cmocka_unit_test(test_readme_example),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests_name("nat", tests, setup, stub_teardown);
}
