/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-l3fwd's ICMP side through its ops (l3fwd_env.h): time exceeded
 * and unreachable errors, ICMP and ICMPv6, byte by byte (checksums
 * computed again here), their quoting limits, echo replies, ARP replies
 * and neighbour advertisements, the rate limit, what gets no error, and
 * every counter.
 */
#undef main /* meson.build renames l3fwd.c's main to sl_l3_main */

#include "l3fwd_env.h"

static void
want_icmp4(struct frame *w, const struct frame *orig, const uint8_t *smac,
	   uint32_t router, uint8_t type, uint16_t id)
{
	uint32_t quote = orig->len - 14, ip_off;
	uint16_t ck;

	memset(w, 0, sizeof(*w));
	put(w, orig->b + 6, 6); /* back to the sender's MAC */
	put(w, smac, 6);
	put16(w, 0x0800);
	ip_off = w->len;
	put8(w, 0x45);
	put8(w, 0xc0);
	put16(w, (uint16_t)(20 + 8 + quote));
	put16(w, id);
	put16(w, 0);
	put8(w, 64);
	put8(w, 1);
	put16(w, 0);
	put32(w, router);
	put(w, orig->b + 14 + 12, 4); /* to the original source */
	put8(w, type);
	put8(w, 0);
	put16(w, 0);
	put32(w, 0);
	put(w, orig->b + 14, quote);
	ck = rte_ipv4_cksum((const struct rte_ipv4_hdr *)(w->b + ip_off));
	memcpy(w->b + ip_off + 10, &ck, 2);
	ck = (uint16_t)~rte_raw_cksum(w->b + ip_off + 20, 8 + quote);
	memcpy(w->b + ip_off + 22, &ck, 2);
}

static void
check_sent(unsigned idx, const struct frame *want, uint16_t port)
{
	struct rte_mbuf *m = sent[idx];

	assert_true(idx < n_sent);
	assert_int_equal(sl_pkt_verdict(m), SL_OUT(port));
	assert_int_equal(m->data_len, want->len);
	assert_int_equal(m->pkt_len, want->len);
	assert_memory_equal(rte_pktmbuf_mtod(m, void *), want->b, want->len);
}

static void
test_ttl_exceeded_v4(void **state)
{
	struct frame f, w;
	uint8_t *ip;
	char *out;

	(void)state;
	start(routes, NULL, NULL);
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 3, 2), 1);
	memcpy(f.b + 6, (const uint8_t[]){2, 0xaa, 0, 0, 0, 2}, 6);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 1);
	want_icmp4(&w, &f, mac_a, IP4(10, 62, 1, 1), 11, 0);
	check_sent(0, &w, 0);
	/* The sums check out when computed over what was sent. */
	ip = rte_pktmbuf_mtod(sent[0], uint8_t *) + 14;
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	assert_int_equal(rte_raw_cksum(ip + 20, sent[0]->data_len - 34),
			 0xffff);
	/* A TTL of 0 too; the id goes up. */
	f.b[14 + 8] = 0;
	fix4(&f);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	want_icmp4(&w, &f, mac_a, IP4(10, 62, 1, 1), 11, 1);
	check_sent(1, &w, 0);
	/* A TTL of 2 goes through with 1. */
	f.b[14 + 8] = 2;
	fix4(&f);
	assert_int_equal(run(&f, 0, NULL), SL_OUT(2));
	assert_int_equal(n_sent, 2);
	out = stop();
	assert_has(
		out,
		" forwarded=1 no_route=0 ttl_exceeded=2 icmp_sent=2 "
		"icmp_ratelimited=0 icmp_failed=0 non_ip=0 "
		"malformed=0 local=0 echo_replies=0 neigh_replies=0 out.a=0 out.b=0 out.c=1\n");
	free(out);
}

/* No route: net unreachable; from the ingress port's address, or
 * another port's when it has none of the family. */
static void
test_no_route_v4(void **state)
{
	struct frame f, w;
	char *out;

	(void)state;
	start(routes, NULL, NULL);
	udp4(&f, IP4(10, 62, 1, 2), IP4(192, 0, 2, 1), 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	want_icmp4(&w, &f, mac_a, IP4(10, 62, 1, 1), 3, 0);
	check_sent(0, &w, 0);
	/* Port c has no IPv4 address: a's (the first with one). */
	assert_int_equal(run(&f, 2, NULL), SL_DROP);
	want_icmp4(&w, &f, mac_c, IP4(10, 62, 1, 1), 3, 1);
	check_sent(1, &w, 2);
	/* The quote stops at the IP datagram's end (no Ethernet padding). */
	f.len += 6;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	f.len -= 6;
	want_icmp4(&w, &f, mac_a, IP4(10, 62, 1, 1), 3, 2);
	check_sent(2, &w, 0);
	frame_ip4(&f, IPPROTO_UDP, IP4(10, 62, 1, 2), 1, IP4(192, 0, 2, 1), 2,
		  150);
	fix4(&f);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	want_icmp4(&w, &f, mac_a, IP4(10, 62, 1, 1), 3, 3);
	check_sent(3, &w, 0);
	out = stop();
	assert_has(out, " forwarded=0 no_route=4 ttl_exceeded=0 icmp_sent=4 ");
	free(out);
}

/* At most 576 bytes of ICMPv4 packet and 1280 of ICMPv6. */
static void
test_icmp_quote_limits(void **state)
{
	static uint8_t orig[1500], buf[L3_ICMP_MAX_FRAME];
	struct l3_icmp_addrs a;
	uint32_t len;

	(void)state;
	memset(&a, 0, sizeof(a));
	for (unsigned i = 0; i < sizeof(orig); i++)
		orig[i] = (uint8_t)i;
	len = l3_icmp4_build(buf, &a, 3, 0, 7, orig, sizeof(orig));
	assert_int_equal(len, 14 + 576);
	assert_int_equal(buf[16] << 8 | buf[17], 576);
	assert_memory_equal(buf + 14 + 28, orig, 576 - 28);
	assert_int_equal(rte_raw_cksum(buf + 14, 20), 0xffff);
	assert_int_equal(rte_raw_cksum(buf + 34, 576 - 20), 0xffff);
	len = l3_icmp6_build(buf, &a, 1, 0, orig, sizeof(orig));
	assert_int_equal(len, 14 + 1280);
	assert_int_equal(buf[18] << 8 | buf[19], 1280 - 40);
	assert_memory_equal(buf + 14 + 48, orig, 1280 - 48);
}

/* An expected ICMPv6 error; its checksum over the pseudo-header written
 * out here. */
static void
want_icmp6(struct frame *w, const struct frame *orig, const uint8_t *smac,
	   const uint8_t *router, uint8_t type)
{
	uint32_t quote = orig->len - 14, sum = 0;
	uint8_t phdr[40];

	memset(w, 0, sizeof(*w));
	put(w, orig->b + 6, 6);
	put(w, smac, 6);
	put16(w, 0x86dd);
	put32(w, 0x60000000);
	put16(w, (uint16_t)(8 + quote));
	put8(w, 58);
	put8(w, 64);
	put(w, router, 16);
	put(w, orig->b + 14 + 8, 16);
	put8(w, type);
	put8(w, 0);
	put16(w, 0);
	put32(w, 0);
	put(w, orig->b + 14, quote);
	memcpy(phdr, w->b + 22, 32);
	memset(phdr + 32, 0, 8);
	phdr[34] = (uint8_t)((8 + quote) >> 8);
	phdr[35] = (uint8_t)(8 + quote);
	phdr[39] = 58;
	for (unsigned i = 0; i < 40; i += 2)
		sum += (uint32_t)(phdr[i] << 8 | phdr[i + 1]);
	for (unsigned i = 0; i < 8 + quote; i += 2)
		sum += (uint32_t)(w->b[54 + i] << 8 |
				  (i + 1 < 8 + quote ? w->b[54 + i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	wr16(w, 56, (uint16_t)~sum);
}

static void
test_ipv6(void **state)
{
	struct frame f, out, want, w;
	char *text;

	(void)state;
	start(routes, NULL, NULL);
	/* fd62::/16 via fd62:3::2 on c: hop limit one lower, MACs. */
	udp6(&f, v6_host_a, v6_far, 64);
	assert_int_equal(run(&f, 0, &out), SL_OUT(2));
	want = f;
	memcpy(want.b, nb_c6, 6);
	memcpy(want.b + 6, mac_c, 6);
	want.b[14 + 7] = 63;
	assert_memory_equal(out.b, want.b, want.len);
	/* Hop limit 1: time exceeded from a's fd62:1::1. */
	udp6(&f, v6_host_a, v6_far, 1);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	want_icmp6(&w, &f, mac_a, v6_router_a, 3);
	check_sent(0, &w, 0);
	/* No route (2001:db8::2): unreachable, no route (type 1 code 0). */
	udp6(&f, v6_host_a, v6_b, 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	want_icmp6(&w, &f, mac_a, v6_router_a, 1);
	check_sent(1, &w, 0);
	/* Multicast and link-local: not forwarded, no error. */
	f.b[14 + 24] = 0xff;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	udp6(&f, v6_host_a, v6_far, 64);
	f.b[14 + 8] = 0xfe;
	f.b[14 + 9] = 0x80;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	/* To the router itself. */
	udp6(&f, v6_host_a, v6_router_a, 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 2);
	text = stop();
	assert_has(
		text,
		" forwarded=1 no_route=1 ttl_exceeded=1 icmp_sent=2 "
		"icmp_ratelimited=0 icmp_failed=0 non_ip=0 "
		"malformed=0 local=3 echo_replies=0 neigh_replies=0 out.a=0 out.b=0 out.c=1\n");
	free(text);
}

/* The ICMP checksum of a frame_ip4() ICMP frame of 16 bytes of data
 * (rte_raw_cksum's sum is in the bytes' own order: stored as it is). */
static void
icmp_ck(struct frame *f)
{
	uint16_t ck;

	memset(f->b + 36, 0, 2);
	ck = (uint16_t)~rte_raw_cksum(f->b + 34, 24);
	memcpy(f->b + 36, &ck, 2);
}

/* The folded sum of an ICMPv6 message and its pseudo-header, big-endian
 * words, in a frame with no extension headers: 0xffff when its checksum
 * is right. */
static uint32_t
icmp6_sum(const uint8_t *b)
{
	uint32_t len = (uint32_t)(b[18] << 8 | b[19]), sum = len + 58;

	for (unsigned i = 0; i < 32; i += 2)
		sum += (uint32_t)(b[22 + i] << 8 | b[23 + i]);
	for (unsigned i = 0; i < len; i += 2)
		sum += (uint32_t)(b[54 + i] << 8 |
				  (i + 1 < len ? b[55 + i] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/* Echo requests to the router's addresses are answered in place, out of
 * the ingress port; byte by byte, checksums computed again here. */
static void
test_echo_replies(void **state)
{
	struct frame f, out, w;
	char *text;

	(void)state;
	start(routes, NULL, NULL);
	/* To b's 10.62.2.1 from A, on port a: from 10.62.2.1, out of a. */
	frame_ip4(&f, IPPROTO_ICMP, IP4(10, 62, 1, 2), 0, IP4(10, 62, 2, 1), 0,
		  16);
	f.b[14 + 8] = 3; /* TTL: replies do not care */
	for (unsigned i = 0; i < 16; i++)
		f.b[42 + i] = (uint8_t)(i * 7);
	icmp_ck(&f);
	fix4(&f);
	assert_int_equal(run(&f, 0, &out), SL_OUT(0));
	w = f;
	memcpy(w.b, f.b + 6, 6);
	memcpy(w.b + 6, mac_a, 6);
	memcpy(w.b + 26, f.b + 30, 4);
	memcpy(w.b + 30, f.b + 26, 4);
	w.b[22] = 64;
	fix4(&w);
	w.b[34] = 0;
	icmp_ck(&w);
	assert_int_equal(out.len, w.len);
	assert_memory_equal(out.b, w.b, w.len);
	assert_int_equal(rte_raw_cksum(out.b + 34, 24), 0xffff);
	/* IPv6: to fd62:1::1, type 129, the checksum over the
	 * pseudo-header. */
	frame_ip6(&f, IPPROTO_ICMPV6, v6_host_a, 0, v6_router_a, 0, 8);
	wr16(&f, 56, (uint16_t)~icmp6_sum(f.b));
	assert_int_equal(icmp6_sum(f.b), 0xffff);
	assert_int_equal(run(&f, 0, &out), SL_OUT(0));
	w = f;
	memcpy(w.b, f.b + 6, 6);
	memcpy(w.b + 6, mac_a, 6);
	memcpy(w.b + 22, v6_router_a, 16);
	memcpy(w.b + 38, v6_host_a, 16);
	w.b[21] = 64;
	w.b[54] = 129;
	wr16(&w, 56, 0);
	wr16(&w, 56, (uint16_t)~icmp6_sum(w.b));
	assert_memory_equal(out.b, w.b, w.len);
	assert_int_equal(icmp6_sum(out.b), 0xffff);
	/* Not an echo request, or from a port the file does not name:
	 * dropped as local. */
	frame_ip4(&f, IPPROTO_ICMP, IP4(10, 62, 1, 2), 0, IP4(10, 62, 1, 1), 0,
		  0);
	fix4(&f);
	assert_int_equal(run(&f, 7, NULL), SL_DROP);
	f.b[34] = 13;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	text = stop();
	assert_has(
		text,
		" local=2 echo_replies=2 neigh_replies=0 out.a=0 out.b=0 out.c=0\n");
	free(text);
}

/* ARP requests and neighbour solicitations for the ingress port's
 * addresses are answered in place; byte by byte. */
static void
test_neigh_replies(void **state)
{
	static const uint8_t host[6] = {2, 0xaa, 0, 0, 0, 2};
	static const uint8_t ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
				       0,    0,    0, 0, 0, 0, 0, 2};
	struct frame f, out, w;
	char *text;

	(void)state;
	start(routes, NULL, NULL);
	/* who-has 10.62.1.1 tell 10.62.1.2, on port a */
	memset(&f, 0, sizeof(f));
	memset(f.b, 0xff, 6);
	f.len = 6;
	put(&f, host, 6);
	put16(&f, 0x0806);
	put32(&f, 0x00010800);
	put32(&f, 0x06040001);
	put(&f, host, 6);
	put32(&f, IP4(10, 62, 1, 2));
	put_zero(&f, 6);
	put32(&f, IP4(10, 62, 1, 1));
	put_zero(&f, 18); /* Ethernet padding to 60 */
	assert_int_equal(run(&f, 0, &out), SL_OUT(0));
	memset(&w, 0, sizeof(w));
	put(&w, host, 6);
	put(&w, mac_a, 6);
	put16(&w, 0x0806);
	put32(&w, 0x00010800);
	put32(&w, 0x06040002);
	put(&w, mac_a, 6);
	put32(&w, IP4(10, 62, 1, 1));
	put(&w, host, 6);
	put32(&w, IP4(10, 62, 1, 2));
	put_zero(&w, 18);
	assert_int_equal(out.len, w.len);
	assert_memory_equal(out.b, w.b, w.len);
	/* Another port's address, or a port with no IPv4 one: not ours to
	 * answer (non_ip). */
	assert_int_equal(run(&f, 1, NULL), SL_DROP);
	assert_int_equal(run(&f, 2, NULL), SL_DROP);

	/* NS for fd62:1::1 from fe80::2 (to its solicited-node address),
	 * with the source link-layer address option. */
	memset(&f, 0, sizeof(f));
	put(&f, (const uint8_t[]){0x33, 0x33, 0xff, 0, 0, 1}, 6);
	put(&f, host, 6);
	put16(&f, 0x86dd);
	put32(&f, 0x60000000);
	put16(&f, 32);
	put8(&f, 58);
	put8(&f, 255);
	put(&f, ll, 16);
	put(&f,
	    (const uint8_t[]){0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0,
			      1},
	    16);
	put32(&f, 0x87000000);
	put32(&f, 0);
	put(&f, v6_router_a, 16);
	put16(&f, 0x0101);
	put(&f, host, 6);
	wr16(&f, 56, (uint16_t)~icmp6_sum(f.b));
	assert_int_equal(run(&f, 0, &out), SL_OUT(0));
	memset(&w, 0, sizeof(w));
	put(&w, host, 6);
	put(&w, mac_a, 6);
	put16(&w, 0x86dd);
	put32(&w, 0x60000000);
	put16(&w, 32);
	put8(&w, 58);
	put8(&w, 255);
	put(&w, v6_router_a, 16);
	put(&w, ll, 16);
	put32(&w, 0x88000000);
	put32(&w, 0xe0000000);
	put(&w, v6_router_a, 16);
	put16(&w, 0x0201);
	put(&w, mac_a, 6);
	wr16(&w, 56, (uint16_t)~icmp6_sum(w.b));
	assert_int_equal(out.len, w.len);
	assert_memory_equal(out.b, w.b, w.len);
	assert_int_equal(icmp6_sum(out.b), 0xffff);
	/* A hop limit other than 255: not a valid NS (RFC 4861 7.1.1). */
	f.b[21] = 64;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	text = stop();
	assert_has(text, " non_ip=2 malformed=0 local=1 echo_replies=0 "
			 "neigh_replies=2 out.a=0 out.b=0 out.c=0\n");
	free(text);
}

/* A burst of 3, then 10 a second. */
static void
test_rate_limit(void **state)
{
	struct frame f;
	char *out;

	(void)state;
	stub_now_ns = 5 * NS;
	start(routes, "3", NULL); /* --icmp-burst 3 */
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 3, 2), 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 3);
	stub_now_ns += NS / 200; /* 5 ms: half a token at 100/s */
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 3);
	stub_now_ns += NS / 200; /* 10 ms: one token */
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 4);
	stub_now_ns += 100 * NS; /* full again: 3, not more */
	for (int i = 0; i < 5; i++)
		assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 7);
	out = stop();
	assert_has(out, " ttl_exceeded=12 icmp_sent=7 icmp_ratelimited=5 ");
	free(out);
	/* --icmp-rate 0: none at all. */
	{
		char *path = write_file(routes);
		int rc;

		out = stub_init_output(&rc, PROG, "--routes", path,
				       "--icmp-rate", "0", NULL);
		assert_int_equal(rc, 0);
		free(out);
		assert_int_equal(run(&f, 0, NULL), SL_DROP);
		assert_int_equal(n_sent, 0);
		out = stop();
		assert_has(out, " icmp_sent=0 icmp_ratelimited=1 ");
		free(out);
		unlink(path);
		free(path);
	}
}

/* What is never answered with an ICMP error, and what is not IP. */
static void
test_no_error_and_counters(void **state)
{
	struct frame f;
	char *out;

	(void)state;
	start(routes, NULL, NULL);
	/* An ICMP error about an ICMP error: no. An echo request: yes. */
	frame_ip4(&f, IPPROTO_ICMP, IP4(10, 62, 1, 2), 0, IP4(10, 62, 3, 2), 0,
		  8);
	f.b[14 + 8] = 1;
	f.b[34] = 11;
	fix4(&f);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 0);
	f.b[34] = 8;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 1);
	/* To a link-layer broadcast, or from 0.0.0.0: no error. */
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 3, 2), 1);
	memset(f.b, 0xff, 6);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	udp4(&f, 0, IP4(10, 62, 3, 2), 1);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	/* From a port the file does not name: counted, not sent. */
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 3, 2), 1);
	assert_int_equal(run(&f, 5, NULL), SL_DROP);
	assert_int_equal(n_sent, 1);
	/* Local: the router's address, multicast, broadcast, loopback. */
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 2, 1), 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	udp4(&f, IP4(10, 62, 1, 2), IP4(224, 0, 0, 5), 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	udp4(&f, IP4(10, 62, 1, 2), IP4(255, 255, 255, 255), 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	udp4(&f, IP4(10, 62, 1, 2), IP4(127, 0, 0, 1), 64);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	/* Malformed: a bad checksum, a cut header, a cut Ethernet header. */
	udp4(&f, IP4(10, 62, 1, 2), IP4(10, 62, 2, 2), 64);
	f.b[24] ^= 1;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	f.len = 30;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	f.len = 10;
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	/* Non-IP: ARP. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 0, NULL);
	put_zero(&f, 28);
	assert_int_equal(run(&f, 0, NULL), SL_DROP);
	assert_int_equal(n_sent, 1);
	out = stop();
	assert_has(out, "l3fwd-stats: reason=exit ");
	assert_has(out, " packets=13 bytes=614 ");
	assert_has(
		out,
		" forwarded=0 no_route=0 ttl_exceeded=5 icmp_sent=1 "
		"icmp_ratelimited=0 icmp_failed=1 non_ip=1 "
		"malformed=3 local=4 echo_replies=0 neigh_replies=0 out.a=0 out.b=0 out.c=0\n");
	free(out);
}

/* Hostile frames: random bytes, and valid IPv4, IPv6, ICMP and ARP
 * frames with random bytes changed and random lengths, from every port.
 * Nothing reads past a frame (ASan), every verdict is a drop or one of
 * the three ports, and the counters add up to the packets. */
static void
test_hostile_frames(void **state)
{
	unsigned long long sum = 0;
	struct frame f;
	char *text, *p;

	(void)state;
	start(routes, NULL, NULL);
	srand(29);
	for (unsigned i = 0; i < 20000; i++) {
		sl_verdict_t v;

		switch (i % 5) {
		case 0:
			udp4(&f, (uint32_t)rand(), IP4(10, 62, 3, 2),
			     (uint8_t)(i % 3));
			break;
		case 1:
			udp6(&f, v6_host_a, (i & 8) ? v6_far : v6_router_a,
			     (uint8_t)(i % 3));
			break;
		case 2:
			frame_ip4(&f, IPPROTO_ICMP, IP4(10, 62, 1, 2), 0,
				  IP4(10, 62, 1, 1), 0, 16);
			fix4(&f);
			break;
		case 3:
			frame_ip6(&f, IPPROTO_ICMPV6, v6_host_a, 0, v6_router_a,
				  0, 24);
			f.b[54] = (uint8_t)(128 + (i & 7));
			f.b[21] = 255;
			break;
		default:
			memset(&f, 0, sizeof(f));
			f.len = (uint32_t)(rand() % MAX_FRAME);
			for (uint32_t k = 0; k < f.len; k++)
				f.b[k] = (uint8_t)rand();
		}
		for (int k = rand() % 4; k > 0 && f.len > 0; k--)
			f.b[(uint32_t)rand() % f.len] = (uint8_t)rand();
		if (rand() % 3 == 0)
			f.len = (uint32_t)rand() % (f.len + 1);
		v = run(&f, (uint16_t)(rand() % 5), NULL);
		if (v != SL_DROP && v != SL_OUT(0) && v != SL_OUT(1) &&
		    v != SL_OUT(2))
			fail_msg("frame %u: verdict %#x", i, v);
		if (n_sent > MAX_SENT - 8)
			sent_free();
	}
	text = stop();
	p = strstr(text, " forwarded=");
	assert_non_null(p);
	/* forwarded no_route ttl_exceeded, then (after the ICMP counters)
	 * non_ip malformed local echo_replies neigh_replies */
	for (const char *k = p; (k = strchr(k, '=')) != NULL; k++) {
		const char *name = k;

		while (name > text && name[-1] != ' ')
			name--;
		if (strncmp(name, "icmp_", 5) == 0 ||
		    strncmp(name, "out.", 4) == 0)
			continue;
		sum += strtoull(k + 1, NULL, 10);
	}
	assert_has(text, " packets=20000 ");
	assert_int_equal(sum, 20000);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ttl_exceeded_v4),
		cmocka_unit_test(test_no_route_v4),
		cmocka_unit_test(test_icmp_quote_limits),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_echo_replies),
		cmocka_unit_test(test_neigh_replies),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_no_error_and_counters),
		cmocka_unit_test(test_hostile_frames),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
