/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb (nfs/lb/) driven through its ops with the libsluice stand-in
 * of nf_stub.c: both directions of the rewriting byte by byte (addresses,
 * MACs, IPv4 and TCP/UDP checksums recomputed from scratch), connection
 * tracking (a connection keeps its backend across changes of the Maglev
 * table, timeouts, a full table), the spread of connections by weight,
 * run-time changes by message and SIGHUP reload, and every configuration
 * error by its text, hostile frames. The Maglev table alone:
 * test_nf_lb_maglev.c. (test_lb.c is sluiced's own instance balancer.)
 */
#undef main /* meson.build renames lb.c's main to sl_lb_main */

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

#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

#include "lb.h"
#include "maglev.h"

int sl_lb_main(int argc, char **argv);

#define PROG "sluice-lb"
#define NS UINT64_C(1000000000)
#define CLIENT IP4(10, 63, 0, 1)
#define VIP IP4(10, 63, 0, 100)
#define B1 IP4(10, 63, 0, 11)
#define B2 IP4(10, 63, 0, 12)
#define B3 IP4(10, 63, 0, 13)
#define TCP_SYN 0x02
#define TCP_ACK 0x10
#define TCP_FIN 0x01
#define TCP_RST 0x04

/* libsluice's sl_pkt_in_port(), which nf_stub.c leaves to the tests
 * that need it: here the mbuf's port field (0 from stub_mbuf). */
uint16_t
sl_pkt_in_port(const struct rte_mbuf *m)
{
	return m->port;
}

static const uint8_t mac_client[6] = {0x02, 0x63, 0, 0, 0, 0x01};
static const uint8_t mac_vip[6] = {0x02, 0x63, 0, 0, 0, 0x64};
static const uint8_t mac_lb[6] = {0x02, 0x63, 0, 0, 0, 0x65};
static const uint8_t mac_b1[6] = {0x02, 0x63, 0, 0, 0, 0x0b};

#define write_file(text) nf_test_write_file("sl_lb_test_", "", text)

#define rewrite_file nf_test_rewrite_file

/* A whole frame, both checksums right: Ethernet, IPv4, TCP (flags) or
 * UDP (udp_csum 0: none), 10 bytes of payload. */
static void
build(struct frame *f, const uint8_t *smac, const uint8_t *dmac, uint8_t proto,
      uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uint8_t flags,
      int udp_csum)
{
	uint32_t l3, l4;

	memset(f, 0, sizeof(*f));
	put(f, dmac, 6);
	put(f, smac, 6);
	put16(f, 0x0800);
	l3 = f->len;
	put_ipv4(f, proto, src, dst, proto == IPPROTO_TCP ? 30 : 18, 0, 0);
	l4 = f->len;
	if (proto == IPPROTO_TCP) {
		put_tcp(f, sport, dport, 10);
		f->b[l4 + 13] = flags;
	} else {
		put_udp(f, sport, dport, 10);
	}
	frame_ip4_cksums(f, l3, !udp_csum);
}

/* One frame that came in on port in_port through ops->process: its
 * verdict, and the frame as the NF left it in *out. */
static sl_verdict_t
run1_on(uint16_t in_port, const struct frame *f, struct frame *out)
{
	struct rte_mbuf *m = stub_mbuf(f->b, f->len);
	sl_verdict_t v;

	assert_non_null(m);
	m->port = in_port;
	stub_ops->process(stub_nf(), &m, 1);
	assert_true(stub_verdict_set(m));
	v = sl_pkt_verdict(m);
	if (out != NULL) {
		out->len = f->len;
		memcpy(out->b, rte_pktmbuf_mtod(m, void *), f->len);
	}
	stub_mbuf_free(m);
	return v;
}

static sl_verdict_t
run1(const struct frame *f, struct frame *out)
{
	return run1_on(0, f, out);
}

static void
assert_frame(const struct frame *got, const struct frame *want)
{
	assert_int_equal(got->len, want->len);
	for (uint32_t i = 0; i < want->len; i++)
		if (got->b[i] != want->b[i])
			fail_msg("byte %u: got 0x%02x, want 0x%02x", i,
				 got->b[i], want->b[i]);
}

/* The backend a client's TCP packet from port sport went to (its
 * destination address after the NF), or 0 if dropped. */
static uint32_t
backend_of(uint16_t sport, uint8_t flags, uint64_t now)
{
	struct frame f, out;
	uint32_t a;

	build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT, sport, VIP, 80,
	      flags, 0);
	stub_now_ns = now;
	if (run1(&f, &out) == SL_DROP)
		return 0;
	memcpy(&a, out.b + 14 + 16, 4);
	return ntohl(a);
}

static void expect_msg(const char *key, const char *value, const char *want);

static struct lb_state *
lb(void)
{
	return sl_nf_priv(stub_nf());
}

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

static char *
init_ok(const char *path, ...)
{
	const char *a[8] = {NULL};
	unsigned n = 0;
	va_list ap;
	char *out;
	int rc;

	va_start(ap, path);
	while (n < 7 && (a[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	out = stub_init_output(&rc, PROG, "--config", path, "--stats-ms", "0",
			       a[0], a[1], a[2], a[3], a[4], a[5], a[6], NULL);
	if (rc != 0)
		fail_msg("init failed (%d): %s", rc, out);
	return out;
}

static const char one_backend[] =
	"# the VIP and one backend\n"
	"vip 10.63.0.100 proto any ports 80,53\n"
	"backend b1 10.63.0.11 mac 02:63:00:00:00:0b\n";

/* Client -> VIP and back, TCP and UDP (with and without a checksum). */
static void
test_rewrite_both_ways(void **state)
{
	char *path = write_file(one_backend), *out;
	struct frame f, got, want;
	struct {
		uint8_t proto;
		uint16_t port;
		int csum;
	} cases[] = {{IPPROTO_TCP, 80, 1},
		     {IPPROTO_UDP, 53, 1},
		     {IPPROTO_UDP, 53, 0}};

	(void)state;
	out = init_ok(path, "--mac", "02:63:00:00:00:65", NULL);
	assert_has(out, PROG ": loaded ");
	assert_has(out, ": vip 10.63.0.100 proto any ports 80,53, 1 backends, "
			"Maglev table of 65537 entries\n");
	assert_has(out, "lb-backend: name=b1 addr=10.63.0.11 weight=1 "
			"entries=65537 flows=0 packets=0 bytes=0\n");
	free(out);
	for (unsigned i = 0; i < 3; i++) {
		uint16_t sport = (uint16_t)(40000 + i);

		/* The client's packet: to b1's address and MAC, from the
		 * NF's --mac. */
		build(&f, mac_client, mac_vip, cases[i].proto, CLIENT, sport,
		      VIP, cases[i].port, TCP_SYN, cases[i].csum);
		build(&want, mac_lb, mac_b1, cases[i].proto, CLIENT, sport, B1,
		      cases[i].port, TCP_SYN, cases[i].csum);
		assert_int_equal(run1(&f, &got), SL_NEXT);
		assert_frame(&got, &want);
		/* b1's reply: from the VIP and the MAC the client used. */
		build(&f, mac_b1, mac_client, cases[i].proto, B1, cases[i].port,
		      CLIENT, sport, TCP_SYN | TCP_ACK, cases[i].csum);
		build(&want, mac_vip, mac_client, cases[i].proto, VIP,
		      cases[i].port, CLIENT, sport, TCP_SYN | TCP_ACK,
		      cases[i].csum);
		assert_int_equal(run1(&f, &got), SL_NEXT);
		assert_frame(&got, &want);
	}
	/* A packet from b1 of no tracked connection is left alone. */
	build(&f, mac_b1, mac_client, IPPROTO_TCP, B1, 80, CLIENT, 41000,
	      TCP_ACK, 1);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	assert_frame(&got, &f);
	out = fini_output();
	assert_has(out, "lb-stats: reason=exit ");
	assert_has(out, " packets=7 bytes=");
	assert_has(out, " to_backend=3 to_client=3 new_flows=3 moved=0 "
			"expired=0 flows=3 other=1 non_ip=0 drop_no_backend=0 "
			"drop_table_full=0 drop_fragment=0 drop_malformed=0 "
			"drop_other=0 backends=1\n");
	assert_has(out, "lb-backend: name=b1 addr=10.63.0.11 weight=1 "
			"entries=65537 flows=3 packets=3 bytes=");
	free(out);
	unlink(path);
	free(path);
}

static const uint8_t v6_client[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x63, 0, 0,
				      0,    0,    0,    0,    0, 0,    0, 1};
static const uint8_t v6_vip[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x63, 0, 0,
				   0,    0,    0,    0,    0, 0,    0, 0x64};
static const uint8_t v6_b1[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x63, 0, 0,
				  0,    0,    0,    0,    0, 0,    0, 0x0b};

/* The same over IPv6 (no header checksum; the TCP/UDP one covers the
 * 16-byte addresses). */
static void
build6(struct frame *f, const uint8_t *smac, const uint8_t *dmac, uint8_t proto,
       const uint8_t *src, uint16_t sport, const uint8_t *dst, uint16_t dport,
       uint8_t flags)
{
	uint32_t l3, l4;
	struct rte_ipv6_hdr *ip;

	memset(f, 0, sizeof(*f));
	put(f, dmac, 6);
	put(f, smac, 6);
	put16(f, 0x86DD);
	l3 = f->len;
	put_ipv6(f, proto, src, dst, proto == IPPROTO_TCP ? 30 : 18);
	l4 = f->len;
	if (proto == IPPROTO_TCP) {
		put_tcp(f, sport, dport, 10);
		f->b[l4 + 13] = flags;
	} else {
		put_udp(f, sport, dport, 10);
	}
	ip = (struct rte_ipv6_hdr *)(f->b + l3);
	if (proto == IPPROTO_TCP)
		((struct rte_tcp_hdr *)(f->b + l4))->cksum =
			rte_ipv6_udptcp_cksum(ip, f->b + l4);
	else
		((struct rte_udp_hdr *)(f->b + l4))->dgram_cksum =
			rte_ipv6_udptcp_cksum(ip, f->b + l4);
}

/* An IPv6 VIP: both directions, TCP and UDP; IPv4 is not its. */
static void
test_rewrite_ipv6(void **state)
{
	char *path = write_file("vip 2001:db8:63::64 ports 80\n"
				"backend b1 2001:db8:63::b mac "
				"02:63:00:00:00:0b\n");
	struct frame f, got, want;
	const uint8_t protos[2] = {IPPROTO_TCP, IPPROTO_UDP};
	char *out;

	(void)state;
	out = init_ok(path, "--mac", "02:63:00:00:00:65", NULL);
	assert_has(out, ": vip 2001:db8:63::64 proto any ports 80, 1 backends");
	assert_has(out, "lb-backend: name=b1 addr=2001:db8:63::b weight=1 ");
	free(out);
	for (unsigned i = 0; i < 2; i++) {
		uint16_t sport = (uint16_t)(40000 + i);

		build6(&f, mac_client, mac_vip, protos[i], v6_client, sport,
		       v6_vip, 80, TCP_SYN);
		build6(&want, mac_lb, mac_b1, protos[i], v6_client, sport,
		       v6_b1, 80, TCP_SYN);
		assert_int_equal(run1(&f, &got), SL_NEXT);
		assert_frame(&got, &want);
		build6(&f, mac_b1, mac_client, protos[i], v6_b1, 80, v6_client,
		       sport, TCP_SYN | TCP_ACK);
		build6(&want, mac_vip, mac_client, protos[i], v6_vip, 80,
		       v6_client, sport, TCP_SYN | TCP_ACK);
		assert_int_equal(run1(&f, &got), SL_NEXT);
		assert_frame(&got, &want);
	}
	/* IPv4 to an IPv6 LB: not its family, passed unchanged. */
	build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT, 5000, VIP, 80,
	      TCP_SYN, 1);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	assert_frame(&got, &f);
	expect_msg("backend.add", "b2 10.63.0.12",
		   "result=error: 10.63.0.12 is IPv4 but the vip is IPv6\n");
	out = fini_output();
	assert_has(out, " packets=5 ");
	assert_has(out, " to_backend=2 to_client=2 new_flows=2 moved=0 "
			"expired=0 flows=2 other=1 non_ip=1 ");
	free(out);
	unlink(path);
	free(path);
}

/* --replies in-port: a reply leaves through the port its connection's
 * client came in on; by default it follows the default edge. */
static void
test_replies_in_port(void **state)
{
	char *path = write_file(one_backend);
	struct frame f;

	(void)state;
	for (int in = 0; in < 2; in++) {
		free(init_ok(path, in ? "--replies" : NULL, "in-port", NULL));
		for (uint16_t p = 0; p < 3; p++) {
			build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT,
			      (uint16_t)(40000 + p), VIP, 80, TCP_SYN, 1);
			assert_int_equal(run1_on((uint16_t)(5 + p), &f, NULL),
					 SL_NEXT);
		}
		for (uint16_t p = 0; p < 3; p++) {
			build(&f, mac_b1, mac_client, IPPROTO_TCP, B1, 80,
			      CLIENT, (uint16_t)(40000 + p), TCP_ACK, 1);
			assert_int_equal(run1_on(9, &f, NULL),
					 in ? SL_OUT(5 + p) : SL_NEXT);
		}
		free(fini_output());
	}
	expect_init_error(PROG, PROG ": --replies: 'in' is not next or in-port",
			  "--config", path, "--replies", "in", NULL);
	unlink(path);
	free(path);
}

/* Packets that are not the VIP's: passed or dropped, each counted. */
static void
test_other_packets(void **state)
{
	char *path = write_file("vip 10.63.0.100 proto tcp ports 80\n"
				"backend b1 10.63.0.11\n");
	struct frame f, got;
	char *out;

	(void)state;
	free(init_ok(path, NULL));
	/* ARP (non-IP), UDP to the VIP (not its protocol), TCP to port 81,
	 * ICMP to the VIP: passed, unchanged. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 0, NULL);
	put_zero(&f, 28);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	build(&f, mac_client, mac_vip, IPPROTO_UDP, CLIENT, 5000, VIP, 80, 0,
	      1);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	assert_frame(&got, &f);
	build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT, 5000, VIP, 81,
	      TCP_SYN, 1);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	assert_frame(&got, &f);
	frame_ip4(&f, IPPROTO_ICMP, CLIENT, 0, VIP, 0, 8);
	assert_int_equal(run1(&f, &got), SL_NEXT);
	/* A fragment to the VIP, and a TCP header cut short: dropped. */
	build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT, 5000, VIP, 80,
	      TCP_SYN, 1);
	f.b[14 + 6] = 0x20; /* more fragments */
	assert_int_equal(run1(&f, NULL), SL_DROP);
	build(&f, mac_client, mac_vip, IPPROTO_TCP, CLIENT, 5000, VIP, 80,
	      TCP_SYN, 1);
	f.len = 14 + 20 + 12;
	assert_int_equal(run1(&f, NULL), SL_DROP);
	out = fini_output();
	assert_has(out, " packets=6 ");
	assert_has(out, " to_backend=0 to_client=0 new_flows=0 moved=0 "
			"expired=0 flows=0 other=4 non_ip=1 drop_no_backend=0 "
			"drop_table_full=0 drop_fragment=1 drop_malformed=1 "
			"drop_other=0 backends=1\n");
	free(out);

	/* --other drop: the same ARP frame is a counted drop. */
	free(init_ok(path, "--other", "drop", NULL));
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 0, NULL);
	put_zero(&f, 28);
	assert_int_equal(run1(&f, NULL), SL_DROP);
	out = fini_output();
	assert_has(out, " other=0 non_ip=1 ");
	assert_has(out, " drop_other=1 backends=1\n");
	free(out);
	unlink(path);
	free(path);
}

static const char three_backends[] = "vip 10.63.0.100 proto tcp ports 80\n"
				     "backend b1 10.63.0.11 weight 1\n"
				     "backend b2 10.63.0.12 weight 1\n"
				     "backend b3 10.63.0.13 weight 1\n";

/* A connection keeps its backend while the Maglev table changes; it
 * moves only when its backend is removed. */
static void
test_connection_keeps_backend(void **state)
{
	char *path = write_file(three_backends), *out;
	uint32_t first[200], b;
	unsigned on_b2 = 0, kept = 0, i;

	(void)state;
	free(init_ok(path, NULL));
	for (i = 0; i < 200; i++)
		first[i] = backend_of((uint16_t)(30000 + i), TCP_SYN, NS);
	/* b2 drained (weight 0): no new connection goes there, the
	 * established ones stay. */
	out = msg_output("backend.weight", "b2 0");
	assert_has(out, "lb-message: key=backend.weight value=b2 0 "
			"result=applied backends=3\n");
	assert_has(out, "lb-backend: name=b2 addr=10.63.0.12 weight=0 "
			"entries=0 ");
	free(out);
	for (i = 0; i < 200; i++) {
		b = backend_of((uint16_t)(30000 + i), TCP_ACK, 2 * NS);
		assert_int_equal(b, first[i]);
		on_b2 += first[i] == B2;
		/* New connections: never b2. */
		assert_int_not_equal(backend_of((uint16_t)(50000 + i), TCP_SYN,
						2 * NS),
				     B2);
	}
	assert_true(on_b2 > 30 && on_b2 < 110);
	/* b2 removed: its connections move, the others stay. */
	free(msg_output("backend.remove", "b2"));
	for (i = 0; i < 200; i++) {
		b = backend_of((uint16_t)(30000 + i), TCP_ACK, 3 * NS);
		if (first[i] == B2)
			assert_true(b == B1 || b == B3);
		else
			kept += b == first[i];
	}
	assert_int_equal(kept, 200 - on_b2);
	out = fini_output();
	{
		char line[160];

		snprintf(line, sizeof(line), " new_flows=%u moved=%u ",
			 400 + on_b2, on_b2);
		assert_has(out, line);
	}
	free(out);
	unlink(path);
	free(path);
}

/* Idle and closed timeouts; the tick forgets expired connections. */
static void
test_timeouts(void **state)
{
	char *path = write_file(three_backends), *out;
	struct frame f;

	(void)state;
	free(init_ok(path, "--timeout", "5", "--closed-timeout", "1", NULL));
	assert_int_not_equal(backend_of(40000, TCP_SYN, NS), 0);
	assert_int_not_equal(backend_of(40001, TCP_SYN, NS), 0);
	/* 40000 closes: FIN from the client, FIN from the backend. */
	assert_int_not_equal(backend_of(40000, TCP_FIN | TCP_ACK, 2 * NS), 0);
	{
		struct sl_5tuple k;
		int32_t pos;
		uint32_t ba;

		memset(&k, 0, sizeof(k));
		k.family = 4;
		k.proto = IPPROTO_TCP;
		k.sport = htons(40000);
		k.dport = htons(80);
		k.src.v4 = htonl(CLIENT);
		k.dst.v4 = htonl(VIP);
		pos = rte_hash_lookup(lb()->h, &k);
		assert_true(pos >= 0);
		ba = ntohl(lb()->conns[pos].backend.u.v4);
		build(&f, mac_b1, mac_client, IPPROTO_TCP, ba, 80, CLIENT,
		      40000, TCP_FIN | TCP_ACK, 1);
	}
	stub_now_ns = 2 * NS;
	assert_int_equal(run1(&f, NULL), SL_NEXT);
	assert_int_equal(lb()->c.to_client, 1);
	/* 2.5 s later the closed one is gone (1 s), the idle one (5 s) not. */
	free(tick_output(4 * NS + NS / 2));
	assert_int_equal(rte_hash_count(lb()->h), 1);
	assert_int_equal(lb()->c.expired, 1);
	/* A packet of an expired connection that was not swept yet is a new
	 * connection. */
	free(tick_output(7 * NS));
	assert_int_equal(rte_hash_count(lb()->h), 0);
	assert_int_equal(lb()->c.expired, 2);
	out = fini_output();
	assert_has(out, " new_flows=2 moved=0 expired=2 flows=0 ");
	free(out);

	/* Expired but not swept: looked up, counted, taken as new. */
	free(init_ok(path, "--timeout", "5", NULL));
	assert_int_not_equal(backend_of(40000, TCP_SYN, NS), 0);
	assert_int_not_equal(backend_of(40000, TCP_ACK, 7 * NS), 0);
	out = fini_output();
	assert_has(out, " new_flows=2 moved=0 expired=1 flows=1 ");
	free(out);
	unlink(path);
	free(path);
}

/* --flows bounds the table: the connections over it are counted drops,
 * those in it keep going. */
static void
test_table_full(void **state)
{
	char *path = write_file(three_backends), *out, line[96];
	unsigned dropped = 0, i;
	int32_t n;

	(void)state;
	free(init_ok(path, "--flows", "16", NULL));
	for (i = 0; i < 64; i++)
		dropped += backend_of((uint16_t)(20000 + i), TCP_SYN, NS) == 0;
	n = rte_hash_count(lb()->h);
	assert_true(n >= 16 && n < 64);
	assert_int_equal(dropped, 64 - (unsigned)n);
	assert_int_not_equal(backend_of(20000, TCP_ACK, NS), 0);
	out = fini_output();
	snprintf(line, sizeof(line), " drop_table_full=%u ", dropped);
	assert_has(out, line);
	free(out);
	unlink(path);
	free(path);
}

/* Real flows through the NF: the spread follows the weights. 30,000
 * connections over weights 1:2:3 (expected 5,000, 10,000, 15,000; the
 * binomial standard deviation is at most 87): each within 3%, 450. */
static void
test_spread_by_weight(void **state)
{
	char *path = write_file("vip 10.63.0.100 proto tcp ports 80\n"
				"backend b1 10.63.0.11 weight 1\n"
				"backend b2 10.63.0.12 weight 2\n"
				"backend b3 10.63.0.13 weight 3\n");
	struct frame f;
	unsigned n[3] = {0, 0, 0}, i;
	char *out;

	(void)state;
	free(init_ok(path, "--flows", "32768", NULL));
	for (i = 0; i < 30000; i++) {
		uint32_t src = CLIENT + (i / 10000) * 256;
		struct frame got;
		uint32_t a;

		build(&f, mac_client, mac_vip, IPPROTO_TCP, src,
		      (uint16_t)(10000 + i % 10000), VIP, 80, TCP_SYN, 1);
		assert_int_equal(run1(&f, &got), SL_NEXT);
		memcpy(&a, got.b + 30, 4);
		a = ntohl(a);
		assert_true(a >= B1 && a <= B3);
		n[a - B1]++;
	}
	print_message("spread over weights 1:2:3 of 30000 connections: %u %u "
		      "%u\n",
		      n[0], n[1], n[2]);
	assert_true(n[0] > 5000 - 450 && n[0] < 5000 + 450);
	assert_true(n[1] > 10000 - 450 && n[1] < 10000 + 450);
	assert_true(n[2] > 15000 - 450 && n[2] < 15000 + 450);
	out = fini_output();
	assert_has(out, "lb-backend: name=b1 addr=10.63.0.11 weight=1 "
			"entries=10923 ");
	assert_has(out, "lb-backend: name=b2 addr=10.63.0.12 weight=2 "
			"entries=21846 ");
	assert_has(out, "lb-backend: name=b3 addr=10.63.0.13 weight=3 "
			"entries=32768 ");
	free(out);
	unlink(path);
	free(path);
}

/* ---- run-time changes ---------------------------------------------- */

static void
expect_msg(const char *key, const char *value, const char *want)
{
	char *out = msg_output(key, value);

	assert_has(out, want);
	free(out);
}

static void
test_messages(void **state)
{
	char *path = write_file(three_backends), *out;

	(void)state;
	free(init_ok(path, "--max-backends", "4", NULL));
	expect_msg("backend.add", "b4 10.63.0.14 weight 2",
		   "lb-message: key=backend.add value=b4 10.63.0.14 weight 2 "
		   "result=applied backends=4\n");
	assert_int_equal(lb()->n_live, 4);
	expect_msg("backend.add", "b5 10.63.0.15",
		   "result=error: already 4 backends (--max-backends)\n");
	expect_msg("backend.add", "b1 10.63.0.19",
		   "result=error: backend 'b1' exists\n");
	expect_msg("backend.add", "b9 10.63.0.11",
		   "result=error: address 10.63.0.11 is backend 'b1'\n");
	expect_msg(
		"backend.add", "b9 10.63.0.300",
		"result=error: '10.63.0.300' is not an IPv4 or IPv6 address\n");
	expect_msg("backend.add", "b9 10.63.0.19 via nowhere",
		   "result=error: backend 'b9': via 'nowhere': no such port "
		   "(sluice status lists them)\n");
	expect_msg("backend.add", "b9",
		   "result=error: a backend is NAME ADDR [weight W] [mac MAC] "
		   "[via PORT]\n");
	expect_msg("backend.remove", "b7", "result=error: no backend 'b7'\n");
	expect_msg("backend.weight", "b1", "result=error: give NAME WEIGHT\n");
	expect_msg("backend.weight", "b1 x",
		   "result=error: weight 'x' is not a whole number from 0 to "
		   "10000\n");
	expect_msg("backend.weight", "b8 1", "result=error: no backend 'b8'\n");
	expect_msg("backend.drain", "b1",
		   "lb-message: key=backend.drain value=b1 result=error: "
		   "unknown key (keys: backend.add, backend.remove, "
		   "backend.weight, stats)\n");
	expect_msg("backend.remove", "b4",
		   "lb-message: key=backend.remove value=b4 result=applied "
		   "backends=3\n");
	expect_msg("stats", "", "lb-stats: reason=message ");
	/* The last backend gone: every new connection is a counted drop. */
	free(msg_output("backend.remove", "b1"));
	free(msg_output("backend.remove", "b2"));
	free(msg_output("backend.remove", "b3"));
	assert_int_equal(backend_of(40000, TCP_SYN, NS), 0);
	out = fini_output();
	assert_has(out, " drop_no_backend=1 ");
	assert_has(out, " backends=0\n");
	free(out);
	unlink(path);
	free(path);
}

static void
test_reload(void **state)
{
	char *path = write_file(three_backends), *out;
	uint32_t b;

	(void)state;
	free(init_ok(path, NULL));
	b = backend_of(40000, TCP_SYN, NS);
	/* A bad file: the current configuration stays. */
	rewrite_file(path, "vip 10.63.0.100\nbackend b1 10.63.0.11 weight "
			   "heavy\n");
	out = stub_capture_stderr(do_reload, NULL);
	{
		char want[256];

		snprintf(want, sizeof(want),
			 PROG ": reload failed, keeping the current "
			      "configuration (3 backends): %s:2: weight "
			      "'heavy' is not a whole number from 0 to "
			      "10000\n",
			 path);
		assert_has(out, want);
	}
	free(out);
	assert_int_equal(lb()->n_live, 3);
	/* A good one: b1 weight 5, b3 gone, b4 new; the kept backends keep
	 * their connections. */
	rewrite_file(path, "vip 10.63.0.100 proto tcp ports 80\n"
			   "backend b1 10.63.0.11 weight 5\n"
			   "backend b2 10.63.0.12\n"
			   "backend b4 10.63.0.14\n");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, PROG ": reloaded ");
	assert_has(out, ": vip 10.63.0.100 proto tcp ports 80, 3 backends, "
			"Maglev table of 65537 entries\n");
	assert_has(out, "lb-backend: name=b1 addr=10.63.0.11 weight=5 ");
	assert_has(out, "lb-backend: name=b4 addr=10.63.0.14 weight=1 ");
	free(out);
	if (b != B3)
		assert_int_equal(backend_of(40000, TCP_ACK, NS), b);
	else
		assert_int_not_equal(backend_of(40000, TCP_ACK, NS), B3);
	free(fini_output());
	unlink(path);
	free(path);
}

/* ---- configuration errors ------------------------------------------ */

static void
expect_file_error(const char *text, const char *want)
{
	char *path = write_file(text), line[512];

	snprintf(line, sizeof(line), PROG ": %s%s\n", path, want);
	expect_init_error(PROG, line, "--config", path, NULL);
	unlink(path);
	free(path);
}

static void
test_config_errors(void **state)
{
	(void)state;
	expect_file_error("vip 10.63.0.100\n", ": no backend line (backend "
					       "NAME ADDR [weight W] [mac MAC] "
					       "[via PORT])");
	expect_file_error("backend b1 10.63.0.11\n",
			  ": no vip line (vip ADDR [proto tcp|udp|any] [ports "
			  "P,P...])");
	expect_file_error("vip 10.63.0.100\nvip 10.63.0.101\n",
			  ":2: a second vip line (the first is line 1)");
	expect_file_error("# c\nvip 10.63.0.1000\n",
			  ":2: '10.63.0.1000' is not an IPv4 or IPv6 address");
	expect_file_error("vip 10.63.0.100 proto sctp\n",
			  ":1: proto 'sctp': use tcp, udp or any");
	expect_file_error("vip 10.63.0.100 ports 80,0\n",
			  ":1: port '0' is not a whole number from 1 to 65535");
	expect_file_error("vip 10.63.0.100 port 80\n",
			  ":1: unknown vip option 'port' (use proto or ports)");
	expect_file_error("vip 10.63.0.100 ports\n",
			  ":1: 'ports' needs a value");
	expect_file_error("vip\n", ":1: vip needs an address: vip ADDR [proto "
				   "tcp|udp|any] [ports P,P...]");
	expect_file_error("backend b1 2001:db8::1\nvip 10.63.0.100\n",
			  ":1: backend 'b1': 2001:db8::1 is IPv6 but the vip "
			  "(line 2) is IPv4");
	expect_file_error("vip 10.63.0.100\nserver a 10.63.0.1\n",
			  ":2: unknown keyword 'server' (use vip or backend)");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11\n"
			  "backend b1 10.63.0.12\n",
			  ":3: backend 'b1' given twice (first on line 2)");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11\n"
			  "backend b2 10.63.0.11\n",
			  ":3: address 10.63.0.11 given twice (backend 'b1' on "
			  "line 2)");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11 weight "
			  "10001\n",
			  ":2: weight '10001' is not a whole number from 0 to "
			  "10000");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11 mac 02:00\n",
			  ":2: mac '02:00' is not a MAC address (like "
			  "02:00:00:00:00:01)");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11 colour red\n",
			  ":2: unknown backend option 'colour' (use weight, "
			  "mac or via)");
	expect_file_error("vip 10.63.0.100\nbackend b1 10.63.0.11 via x\n",
			  ":2: backend 'b1': via 'x': no such port (sluice "
			  "status lists them)");
	expect_file_error(
		"vip 10.63.0.100\nbackend "
		"abcdefghijabcdefghijabcdefghijabc 10.63.0.11\n",
		":2: backend name 'abcdefghijabcdefghijabcdefghijabc' "
		"is longer than 31 characters");
}

static void
test_option_errors(void **state)
{
	char *path = write_file(three_backends), line[256];

	(void)state;
	expect_init_error(PROG, PROG ": missing --config FILE\n", NULL);
	expect_init_error(PROG,
			  PROG ": --table-size 65536 is not a prime (Maglev "
			       "needs one; the next is 65537)\n",
			  "--config", path, "--table-size", "65536", NULL);
	expect_init_error(PROG,
			  PROG ": --mac 'zz' is not a MAC address (like "
			       "02:00:00:00:00:01)\n",
			  "--config", path, "--mac", "zz", NULL);
	expect_init_error(PROG, PROG ": --other: 'keep' is not pass or drop",
			  "--config", path, "--other", "keep", NULL);
	snprintf(line, sizeof(line),
		 PROG ": /nonexistent/lb.conf: No such file or directory\n");
	expect_init_error(PROG, line, "--config", "/nonexistent/lb.conf", NULL);
	unlink(path);
	free(path);
}

/* Hostile frames: every cut of a few valid frames and thousands of
 * random corruptions of them. Nothing is read past a frame (ASan sees an
 * overread: the stub's buffers are exact), and every packet is counted
 * exactly once: to a backend, to a client, passed, or dropped by reason. */
static void
test_hostile_frames(void **state)
{
	char *path = write_file(three_backends);
	struct frame base[4], f;
	const struct lb_counters *c;
	uint64_t sum, n = 0;
	uint32_t seed = 12345, ba;

	(void)state;
	free(init_ok(path, NULL));
	build(&base[0], mac_client, mac_vip, IPPROTO_TCP, CLIENT, 40000, VIP,
	      80, TCP_SYN, 1);
	assert_int_not_equal(run1(&base[0], &f), SL_DROP);
	memcpy(&ba, f.b + 30, 4); /* the backend it went to */
	build(&base[1], mac_b1, mac_client, IPPROTO_TCP, ntohl(ba), 80, CLIENT,
	      40000, TCP_ACK, 1);
	build6(&base[2], mac_client, mac_vip, IPPROTO_UDP, v6_client, 5000,
	       v6_vip, 80, 0);
	frame_ip4(&base[3], IPPROTO_ICMP, CLIENT, 0, VIP, 0, 8);
	stub_now_ns = NS;
	for (unsigned b = 0; b < 4; b++) {
		for (uint32_t len = 0; len <= base[b].len; len++) {
			f = base[b];
			f.len = len;
			run1(&f, NULL);
			n++;
		}
		for (unsigned r = 0; r < 3000; r++) {
			f = base[b];
			for (unsigned k = 0; k < 3; k++) {
				seed = seed * 1103515245 + 12345;
				f.b[(seed >> 8) % f.len] =
					(uint8_t)(seed >> 20);
			}
			run1(&f, NULL);
			n++;
		}
	}
	c = &lb()->c;
	sum = c->to_backend + c->to_client + c->other + c->drop_no_backend +
	      c->drop_table_full + c->drop_fragment + c->drop_malformed +
	      c->drop_other;
	assert_int_equal(c->pkts, n + 1);
	assert_int_equal(sum, c->pkts);
	print_message("hostile: %" PRIu64 " frames: to_backend=%" PRIu64
		      " to_client=%" PRIu64 " other=%" PRIu64
		      " drop_fragment=%" PRIu64 " drop_malformed=%" PRIu64 "\n",
		      c->pkts, c->to_backend, c->to_client, c->other,
		      c->drop_fragment, c->drop_malformed);
	/* The corruptions reach every path. */
	assert_true(c->to_backend > 100 && c->to_client > 100 &&
		    c->other > 100 && c->drop_fragment > 0 &&
		    c->drop_malformed > 0);
	free(fini_output());
	unlink(path);
	free(path);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup(PROG, sl_lb_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rewrite_both_ways),
		cmocka_unit_test(test_rewrite_ipv6),
		cmocka_unit_test(test_replies_in_port),
		cmocka_unit_test(test_other_packets),
		cmocka_unit_test(test_connection_keeps_backend),
		cmocka_unit_test(test_timeouts),
		cmocka_unit_test(test_table_full),
		cmocka_unit_test(test_spread_by_weight),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_option_errors),
		cmocka_unit_test(test_hostile_frames),
	};

	return cmocka_run_group_tests_name("nf_lb", tests, setup,
					   stub_teardown);
}
