/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the packet header helpers (src/common/sl_pkt.c).
 *
 * Every frame under test is copied into a malloc'd buffer of exactly its
 * length, so an ASan build reports any read past the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sluice/pkt.h"

#include "pkt_build.h"
#include "test_pkt.h"

/* sl_parse() on an exact-size heap copy of the first len bytes of f. */
static int
parse_n(const struct frame *f, uint32_t len, struct sl_pkt_info *info)
{
	uint8_t *p = malloc(len); /* malloc(0): ASan flags any read */
	int rc;

	assert_non_null(p);
	memcpy(p, f->b, len);
	rc = sl_parse(p, len, info);
	free(p);
	return rc;
}

static int
tuple_n(const struct frame *f, uint32_t len, struct sl_5tuple *t)
{
	uint8_t *p = malloc(len); /* malloc(0): ASan flags any read */
	int rc;

	assert_non_null(p);
	memcpy(p, f->b, len);
	rc = sl_5tuple_get(p, len, t);
	free(p);
	return rc;
}

/* What a complete parse of a template frame must report. */
struct expect {
	uint16_t ether_type;
	uint16_t vlan_tci;
	uint8_t n_vlans;
	uint8_t ip_version;
	uint8_t l4_proto;
	uint8_t fragment;
	uint8_t later_fragment;
	uint8_t ip_options;
	uint16_t l3_off;
	uint16_t l4_off;
	uint32_t dgram_end; /* l4_len = min(len, dgram_end) - l4_off */
	uint32_t ok_from;   /* shortest length that parses */
	/* expected 5-tuple (ports in host order) */
	uint16_t sport, dport;
};

/*
 * Truncates f at every length 0..f->len and checks the exact result: below
 * e->ok_from -EMSGSIZE (with the L2 fields set once they are complete and
 * no IP version before the IP header is), from it on the exact fields.
 */
static void
check_truncations(const struct frame *f, const struct expect *e)
{
	struct sl_pkt_info info;
	struct sl_5tuple t;
	uint32_t len;

	for (len = 0; len <= f->len; len++) {
		int rc = parse_n(f, len, &info);
		int trc = tuple_n(f, len, &t);

		assert_int_equal(info.frame_len, len);
		if (len < e->ok_from) {
			assert_int_equal(rc, -EMSGSIZE);
			assert_int_equal(trc, -EMSGSIZE);
			if (len >= e->l3_off) {
				assert_int_equal(info.ether_type,
						 e->ether_type);
				assert_int_equal(info.n_vlans, e->n_vlans);
				assert_int_equal(info.vlan_tci, e->vlan_tci);
				assert_int_equal(info.l3_off, e->l3_off);
			}
			if (len < e->l3_off + 20u)
				assert_int_equal(info.ip_version, 0);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(info.ether_type, e->ether_type);
		assert_int_equal(info.vlan_tci, e->vlan_tci);
		assert_int_equal(info.n_vlans, e->n_vlans);
		assert_int_equal(info.ip_version, e->ip_version);
		assert_int_equal(info.l4_proto, e->l4_proto);
		assert_int_equal(info.fragment, e->fragment);
		assert_int_equal(info.later_fragment, e->later_fragment);
		assert_int_equal(info.ip_options, e->ip_options);
		assert_int_equal(info.l3_off, e->l3_off);
		assert_int_equal(info.l4_off, e->l4_off);
		if (e->l4_off == 0)
			assert_int_equal(info.l4_len, 0);
		else
			assert_int_equal(info.l4_len,
					 (len < e->dgram_end ? len
							     : e->dgram_end) -
						 e->l4_off);
		assert_int_equal(trc, 0);
		assert_int_equal(t.family, e->ip_version);
		assert_int_equal(t.proto, e->l4_proto);
		assert_int_equal(ntohs(t.sport), e->sport);
		assert_int_equal(ntohs(t.dport), e->dport);
	}
}

/* Ethernet / IPv4 / TCP, 10 bytes of payload, 4 bytes of padding. */
void
build_tcp4(struct frame *f)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(f, IPPROTO_TCP, IP4(10, 0, 1, 2), IP4(192, 168, 0, 10),
		 20 + 10, 0, 0);
	put_tcp(f, 40000, 80, 10);
	put_zero(f, 4);
}

static void
test_tcp4_truncations(void **state)
{
	struct frame f;
	const struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV4,
		.ip_version = 4,
		.l4_proto = IPPROTO_TCP,
		.l3_off = 14,
		.l4_off = 34,
		.dgram_end = 64,
		.ok_from = 54,
		.sport = 40000,
		.dport = 80,
	};
	struct sl_5tuple t;

	/* What build_tcp4() must write: the truncations below cut this. */
	static const uint8_t want[68] =
		{/* Ethernet: dst, src, IPv4 */
		 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
		 0x00, 0x02, 0x08, 0x00,
		 /* IPv4: IHL 5, total 50, id 0x1234, TTL 64, TCP, csum 0 */
		 0x45, 0x00, 0x00, 0x32, 0x12, 0x34, 0x00, 0x00, 0x40, 0x06,
		 0x00, 0x00, 10, 0, 1, 2, 192, 168, 0, 10,
		 /* TCP: 40000 > 80, seq 1, ack 0, offset 5, PSH ACK */
		 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		 0x00, 0x00, 0x50, 0x18, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
		 /* payload "abcdefghij", then 4 bytes of Ethernet padding */
		 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 0, 0, 0, 0};

	(void)state;
	build_tcp4(&f);
	assert_int_equal(f.len, sizeof(want));
	assert_memory_equal(f.b, want, sizeof(want));
	check_truncations(&f, &e);

	assert_int_equal(tuple_n(&f, f.len, &t), 0);
	assert_int_equal(t.src.v4, htonl(IP4(10, 0, 1, 2)));
	assert_int_equal(t.dst.v4, htonl(IP4(192, 168, 0, 10)));
	assert_int_equal(t.pad, 0);
}

/* Ethernet / IPv6 / HBH / routing / dest opts / UDP. */
void
build_udp6_ext(struct frame *f)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, SL_ETHER_TYPE_IPV6, 0, NULL);
	put_ipv6(f, IPPROTO_HOPOPTS, v6_a, v6_b, 8 + 24 + 16 + 8 + 8);
	put_ext(f, IPPROTO_ROUTING, 0); /* 54..62 */
	put_ext(f, IPPROTO_DSTOPTS, 2); /* 62..86 */
	put_ext(f, IPPROTO_UDP, 1);     /* 86..102 */
	put_udp(f, 5353, 53, 8);        /* 102..118 */
}

static void
test_udp6_ext_truncations(void **state)
{
	struct frame f;
	const struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV6,
		.ip_version = 6,
		.l4_proto = IPPROTO_UDP,
		.ip_options = 1,
		.l3_off = 14,
		.l4_off = 102,
		.dgram_end = 118,
		.ok_from = 110,
		.sport = 5353,
		.dport = 53,
	};
	struct sl_5tuple t;

	/* What build_udp6_ext() must write, header by header. */
	static const uint8_t want[118] =
		{/* Ethernet: dst, src, IPv6 */
		 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
		 0x00, 0x02, 0x86, 0xdd,
		 /* IPv6: payload 64, next hop-by-hop, hop limit 64 */
		 0x60, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x40, 0x20, 0x01,
		 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x20, 0x01,
		 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
		 /* 54: hop-by-hop, 8 bytes, next routing */
		 43, 0, 0, 0, 0, 0, 0, 0,
		 /* 62: routing, 24 bytes, next destination options */
		 60, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		 0, 0, 0,
		 /* 86: destination options, 16 bytes, next UDP */
		 17, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		 /* 102: UDP 5353 > 53, length 16, csum 0, payload 0..7 */
		 0x14, 0xe9, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00, 0, 1, 2, 3, 4,
		 5, 6, 7};

	(void)state;
	build_udp6_ext(&f);
	assert_int_equal(f.len, sizeof(want));
	assert_memory_equal(f.b, want, sizeof(want));
	check_truncations(&f, &e);

	assert_int_equal(tuple_n(&f, f.len, &t), 0);
	assert_memory_equal(t.src.v6, v6_a, 16);
	assert_memory_equal(t.dst.v6, v6_b, 16);
}

/* Ethernet / 802.1Q / IPv4 / UDP. */
static void
test_vlan_truncations(void **state)
{
	static const uint16_t tags[] = {SL_ETHER_TYPE_VLAN, 0x2064};
	struct frame f = {0};
	const struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV4,
		.vlan_tci = 0x2064,
		.n_vlans = 1,
		.ip_version = 4,
		.l4_proto = IPPROTO_UDP,
		.l3_off = 18,
		.l4_off = 38,
		.dgram_end = 50,
		.ok_from = 46,
		.sport = 1024,
		.dport = 4789,
	};

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 1, tags);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 12, 0, 0);
	put_udp(&f, 1024, 4789, 4);
	check_truncations(&f, &e);
}

/* Ethernet / 802.1ad / 802.1Q / IPv4 / TCP. */
static void
test_qinq_truncations(void **state)
{
	static const uint16_t tags[] = {SL_ETHER_TYPE_QINQ, 0x00c8,
					SL_ETHER_TYPE_VLAN, 0x0064};
	struct frame f = {0};
	const struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV4,
		.vlan_tci = 0x00c8,
		.n_vlans = 2,
		.ip_version = 4,
		.l4_proto = IPPROTO_TCP,
		.l3_off = 22,
		.l4_off = 42,
		.dgram_end = 62,
		.ok_from = 62,
		.sport = 443,
		.dport = 51000,
	};

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 2, tags);
	put_ipv4(&f, IPPROTO_TCP, IP4(192, 168, 0, 1), IP4(10, 0, 0, 9), 20, 0,
		 0);
	put_tcp(&f, 443, 51000, 0);
	check_truncations(&f, &e);
}

/* A third tag is not parsed: the frame is reported as non-IP. */
static void
test_three_tags(void **state)
{
	static const uint16_t tags[] = {SL_ETHER_TYPE_QINQ, 1,
					SL_ETHER_TYPE_VLAN, 2,
					SL_ETHER_TYPE_VLAN, 3};
	struct frame f = {0};
	struct sl_pkt_info info;
	struct sl_5tuple t;

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 3, tags);
	put_ipv4(&f, IPPROTO_UDP, 1, 2, 8, 0, 0);
	put_udp(&f, 1, 2, 0);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.n_vlans, 2);
	assert_int_equal(info.vlan_tci, 1);
	assert_int_equal(info.ether_type, SL_ETHER_TYPE_VLAN);
	assert_int_equal(info.ip_version, 0);
	assert_int_equal(info.l3_off, 22);
	assert_int_equal(tuple_n(&f, f.len, &t), -ENOENT);
}

static void
test_non_ip(void **state)
{
	struct frame f = {0};
	struct sl_pkt_info info;
	struct sl_5tuple t;

	(void)state;
	put_eth(&f, 0x0806, 0, NULL); /* ARP */
	put_zero(&f, 28);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.ether_type, 0x0806);
	assert_int_equal(info.ip_version, 0);
	assert_int_equal(info.l4_off, 0);
	assert_int_equal(info.frame_len, 42);
	assert_int_equal(tuple_n(&f, f.len, &t), -ENOENT);
	/* Just an Ethernet header is a valid non-IP frame. */
	assert_int_equal(parse_n(&f, 14, &info), 0);
	assert_int_equal(tuple_n(&f, 14, &t), -ENOENT);
}

static void
test_ip_version_mismatch(void **state)
{
	struct frame f;
	struct sl_pkt_info info;

	(void)state;
	build_tcp4(&f);
	f.b[14] = 0x65; /* version 6 under ethertype IPv4 */
	assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);
	f.b[14] = 0x45;
	wr16(&f, 12, SL_ETHER_TYPE_IPV6); /* version 4 under IPv6 */
	assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);
	/* Too short for an IPv6 header is a truncation, not a mismatch. */
	assert_int_equal(parse_n(&f, 53, &info), -EMSGSIZE);
}

static void
test_bad_ihl(void **state)
{
	struct frame f;
	struct sl_pkt_info info;
	struct sl_5tuple t;
	uint8_t ihl;

	(void)state;
	build_tcp4(&f);
	put_zero(&f, 32); /* 100 bytes: room for 60 bytes of IP header */
	for (ihl = 0; ihl < 5; ihl++) {
		f.b[14] = (uint8_t)(0x40 | ihl);
		assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);
		assert_int_equal(tuple_n(&f, f.len, &t), -EINVAL);
		assert_int_equal(info.ip_version, 0);
	}
	/* IHL 15 (60 bytes) does not fit in 34 bytes. */
	f.b[14] = 0x4f;
	assert_int_equal(parse_n(&f, 48, &info), -EMSGSIZE);
	/* It fits in the whole frame, but total length (50) < 60. */
	assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);
	/* IHL 8 fits and total length 50 >= 32: TCP needs 20, has 18. */
	f.b[14] = 0x48;
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
}

static void
test_bad_total_length(void **state)
{
	struct frame f;
	struct sl_pkt_info info;

	(void)state;
	build_tcp4(&f);
	wr16(&f, 16, 19);
	assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);
	/* Room for the IP header only: the TCP header is cut. */
	wr16(&f, 16, 20);
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
	wr16(&f, 16, 39);
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
	wr16(&f, 16, 40);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.l4_len, 20);
	/* Longer than the frame (a cut capture): parsed up to frame end. */
	wr16(&f, 16, 1500);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.l4_len, 68 - 34);
}

static void
test_ipv4_options(void **state)
{
	struct frame f = {0};
	const struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV4,
		.ip_version = 4,
		.l4_proto = IPPROTO_UDP,
		.ip_options = 1,
		.l3_off = 14,
		.l4_off = 14 + 24,
		.dgram_end = 14 + 24 + 8 + 2,
		.ok_from = 14 + 24 + 8,
		.sport = 68,
		.dport = 67,
	};

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(255, 255, 255, 255),
		 8 + 2, 0, 4);
	put_udp(&f, 68, 67, 2);
	check_truncations(&f, &e);

	/* Maximum options: IHL 15. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, 1, 2, 8, 0, 40);
	put_udp(&f, 7, 9, 0);
	{
		const struct expect e2 = {
			.ether_type = SL_ETHER_TYPE_IPV4,
			.ip_version = 4,
			.l4_proto = IPPROTO_UDP,
			.ip_options = 1,
			.l3_off = 14,
			.l4_off = 74,
			.dgram_end = 82,
			.ok_from = 82,
			.sport = 7,
			.dport = 9,
		};
		check_truncations(&f, &e2);
	}
}

static void
test_ipv4_fragments(void **state)
{
	struct frame f = {0};
	struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV4,
		.ip_version = 4,
		.l4_proto = IPPROTO_UDP,
		.fragment = 1,
		.l3_off = 14,
		.l4_off = 34,
		.dgram_end = 14 + 20 + 24,
		.ok_from = 42,
		.sport = 1000,
		.dport = 2000,
	};

	(void)state;
	/* First fragment: MF, offset 0: L4 header and ports present. */
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 24,
		 0x2000, 0);
	put_udp(&f, 1000, 2000, 16);
	check_truncations(&f, &e);

	/* Middle fragment: MF, offset 3 (24 bytes): no L4 header. */
	wr16(&f, 20, 0x2003);
	e.later_fragment = 1;
	e.l4_off = 0;
	e.ok_from = 34;
	e.sport = 0;
	e.dport = 0;
	check_truncations(&f, &e);

	/* Last fragment: no MF, offset != 0. Even a tiny one parses. */
	wr16(&f, 20, 0x0003);
	check_truncations(&f, &e);
	wr16(&f, 16, 21);
	check_truncations(&f, &e);

	/* DF alone is not a fragment. */
	wr16(&f, 16, 44);
	wr16(&f, 20, 0x4000);
	{
		struct sl_pkt_info info;

		assert_int_equal(parse_n(&f, f.len, &info), 0);
		assert_int_equal(info.fragment, 0);
		assert_int_equal(info.later_fragment, 0);
		assert_int_equal(info.l4_off, 34);
	}
}

static void
test_ipv6_fragments(void **state)
{
	struct frame f = {0};
	struct expect e = {
		.ether_type = SL_ETHER_TYPE_IPV6,
		.ip_version = 6,
		.l4_proto = IPPROTO_TCP,
		.fragment = 1,
		.ip_options = 1,
		.l3_off = 14,
		.l4_off = 62,
		.dgram_end = 62 + 20 + 8,
		.ok_from = 82,
		.sport = 22,
		.dport = 60000,
	};

	(void)state;
	/* First fragment: offset 0, M set. */
	put_eth(&f, SL_ETHER_TYPE_IPV6, 0, NULL);
	put_ipv6(&f, IPPROTO_FRAGMENT, v6_a, v6_b, 8 + 28);
	put_frag6(&f, IPPROTO_TCP, 0, 1);
	put_tcp(&f, 22, 60000, 8);
	check_truncations(&f, &e);

	/* Later fragment: offset 185, no M: no ports, nothing after it. */
	wr16(&f, 54 + 2, (uint16_t)(185 << 3));
	e.later_fragment = 1;
	e.l4_off = 0;
	e.ok_from = 62;
	e.sport = 0;
	e.dport = 0;
	check_truncations(&f, &e);

	/* Atomic fragment (offset 0, no M): not a fragment. */
	wr16(&f, 54 + 2, 0);
	{
		struct sl_pkt_info info;

		assert_int_equal(parse_n(&f, f.len, &info), 0);
		assert_int_equal(info.fragment, 0);
		assert_int_equal(info.later_fragment, 0);
		assert_int_equal(info.ip_options, 1);
		assert_int_equal(info.l4_off, 62);
	}
}

void
build_ext_chain(struct frame *f, unsigned n_ext)
{
	unsigned i;

	memset(f, 0, sizeof(*f));
	put_eth(f, SL_ETHER_TYPE_IPV6, 0, NULL);
	put_ipv6(f, n_ext ? IPPROTO_DSTOPTS : IPPROTO_UDP, v6_a, v6_b,
		 (uint16_t)(n_ext * 8 + 8));
	for (i = 0; i < n_ext; i++)
		put_ext(f, i + 1 < n_ext ? IPPROTO_DSTOPTS : IPPROTO_UDP, 0);
	put_udp(f, 1, 2, 0);
}

static void
test_ipv6_ext_bound(void **state)
{
	struct frame f;
	struct sl_pkt_info info;

	(void)state;
	build_ext_chain(&f, 0);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.ip_options, 0);
	assert_int_equal(info.l4_off, 54);

	build_ext_chain(&f, 8);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.ip_options, 1);
	assert_int_equal(info.l4_off, 54 + 64);
	assert_int_equal(info.l4_proto, IPPROTO_UDP);

	build_ext_chain(&f, 9);
	assert_int_equal(parse_n(&f, f.len, &info), -EINVAL);

	/* A fragment header counts towards the bound too. */
	{
		struct frame g;

		/* Fragment header (first fragment), then 8 more headers. */
		memset(&g, 0, sizeof(g));
		put_eth(&g, SL_ETHER_TYPE_IPV6, 0, NULL);
		put_ipv6(&g, IPPROTO_FRAGMENT, v6_a, v6_b, 8 + 64 + 8);
		put_frag6(&g, IPPROTO_DSTOPTS, 0, 1);
		for (unsigned i = 0; i < 8; i++)
			put_ext(&g, i < 7 ? IPPROTO_DSTOPTS : IPPROTO_UDP, 0);
		put_udp(&g, 1, 2, 0);
		assert_int_equal(parse_n(&g, g.len, &info), -EINVAL);
	}
}

static void
test_ipv6_payload_length(void **state)
{
	struct frame f;
	struct sl_pkt_info info;

	(void)state;
	build_udp6_ext(&f);
	/* Payload length ends inside the dest options header. */
	wr16(&f, 18, 8 + 24 + 8);
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
	/* Payload length ends inside the UDP header. */
	wr16(&f, 18, 8 + 24 + 16 + 7);
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
	/* Payload length 0 (jumbogram): the frame end counts. */
	wr16(&f, 18, 0);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.l4_len, 16);
	/* Ethernet padding after the datagram is not L4 data. */
	wr16(&f, 18, 8 + 24 + 16 + 8 + 2);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.l4_len, 10);
	/* Hop-by-hop with a length that runs past the frame. */
	build_udp6_ext(&f);
	f.b[55] = 200;
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
}

static void
test_icmp_and_others(void **state)
{
	struct frame f = {0};
	struct sl_pkt_info info;
	struct sl_5tuple t;

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_ICMP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 8, 0, 0);
	put32(&f, 0x08000000);
	put32(&f, 0x12340001);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(info.l4_proto, IPPROTO_ICMP);
	assert_int_equal(info.l4_len, 8);
	assert_int_equal(tuple_n(&f, f.len, &t), 0);
	assert_int_equal(t.sport, 0);
	assert_int_equal(t.dport, 0);
	assert_int_equal(parse_n(&f, 37, &info), -EMSGSIZE);
	assert_int_equal(parse_n(&f, 38, &info), 0);

	/* GRE: no minimum, no ports. */
	f.b[23] = 47;
	assert_int_equal(parse_n(&f, 34, &info), 0);
	assert_int_equal(info.l4_off, 34);
	assert_int_equal(info.l4_len, 0);
	assert_int_equal(tuple_n(&f, f.len, &t), 0);
	assert_int_equal(t.proto, 47);
	assert_int_equal(t.sport, 0);

	/* SCTP: ports, 12-byte minimum. */
	f.b[23] = IPPROTO_SCTP;
	wr16(&f, 16, 20 + 12);
	put32(&f, 0);
	assert_int_equal(parse_n(&f, f.len, &info), 0);
	assert_int_equal(tuple_n(&f, f.len, &t), 0);
	assert_int_equal(ntohs(t.sport), 0x0800);
	assert_int_equal(ntohs(t.dport), 0);
	wr16(&f, 16, 20 + 11);
	assert_int_equal(parse_n(&f, f.len, &info), -EMSGSIZE);
}

static void
make_tuple4(struct sl_5tuple *t, uint8_t proto, uint32_t s, uint16_t sp,
	    uint32_t d, uint16_t dp)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->proto = proto;
	t->src.v4 = htonl(s);
	t->dst.v4 = htonl(d);
	t->sport = htons(sp);
	t->dport = htons(dp);
}

static void
make_tuple6(struct sl_5tuple *t, uint8_t proto, const uint8_t *s, uint16_t sp,
	    const uint8_t *d, uint16_t dp)
{
	memset(t, 0, sizeof(*t));
	t->family = 6;
	t->proto = proto;
	memcpy(t->src.v6, s, 16);
	memcpy(t->dst.v6, d, 16);
	t->sport = htons(sp);
	t->dport = htons(dp);
}

static void
reverse(const struct sl_5tuple *t, struct sl_5tuple *r)
{
	*r = *t;
	r->src = t->dst;
	r->dst = t->src;
	r->sport = t->dport;
	r->dport = t->sport;
}

uint64_t rng_state;

uint64_t
rng(void)
{
	/* xorshift64*: fixed seed, same sequence on every run. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_hash_symmetric(void **state)
{
	enum { N = 4096 };
	struct sl_5tuple t, r;
	uint32_t *h = malloc(N * sizeof(*h));
	unsigned i, dup = 0;

	(void)state;
	assert_non_null(h);
	rng_state = 0x5eed5eed5eedull;
	for (i = 0; i < N; i++) {
		if (i & 1) {
			uint8_t s[16], d[16];
			uint64_t x = rng(), y = rng();

			memcpy(s, v6_a, 16);
			memcpy(d, v6_b, 16);
			memcpy(s + 8, &x, 8);
			memcpy(d + 8, &y, 8);
			make_tuple6(&t, IPPROTO_UDP, s, (uint16_t)rng(), d,
				    (uint16_t)rng());
		} else {
			make_tuple4(&t, IPPROTO_TCP, (uint32_t)rng(),
				    (uint16_t)rng(), (uint32_t)rng(),
				    (uint16_t)rng());
		}
		reverse(&t, &r);
		h[i] = sl_5tuple_hash(&t);
		assert_int_not_equal(h[i], 0);
		assert_int_equal(h[i], sl_5tuple_hash(&r));
	}
	/* Different flows hash differently (bar a rare CRC collision). */
	qsort(h, N, sizeof(*h), cmp_u32);
	for (i = 1; i < N; i++)
		dup += h[i] == h[i - 1];
	assert_true(dup <= 1);
	free(h);

	/* Same addresses and ports, only one thing differs each time. */
	make_tuple4(&t, IPPROTO_TCP, IP4(10, 0, 0, 1), 1000, IP4(10, 0, 0, 2),
		    80);
	make_tuple4(&r, IPPROTO_UDP, IP4(10, 0, 0, 1), 1000, IP4(10, 0, 0, 2),
		    80);
	assert_int_not_equal(sl_5tuple_hash(&t), sl_5tuple_hash(&r));
	make_tuple4(&r, IPPROTO_TCP, IP4(10, 0, 0, 1), 1001, IP4(10, 0, 0, 2),
		    80);
	assert_int_not_equal(sl_5tuple_hash(&t), sl_5tuple_hash(&r));
	/* Swapping only the ports is another flow. */
	make_tuple4(&r, IPPROTO_TCP, IP4(10, 0, 0, 1), 80, IP4(10, 0, 0, 2),
		    1000);
	assert_int_not_equal(sl_5tuple_hash(&t), sl_5tuple_hash(&r));
	/* Equal endpoints (both ends the same address): still symmetric. */
	make_tuple6(&t, IPPROTO_TCP, v6_a, 5, v6_a, 6);
	reverse(&t, &r);
	assert_int_equal(sl_5tuple_hash(&t), sl_5tuple_hash(&r));
	make_tuple4(&t, IPPROTO_TCP, 7, 5, 7, 6);
	reverse(&t, &r);
	assert_int_equal(sl_5tuple_hash(&t), sl_5tuple_hash(&r));
}

/* The tuple from a parsed frame and from its reply hash the same. */
static void
test_hash_from_frames(void **state)
{
	struct frame f;
	struct sl_5tuple a, b;

	(void)state;
	build_tcp4(&f);
	assert_int_equal(tuple_n(&f, f.len, &a), 0);
	/* Swap IP addresses and TCP ports in place. */
	{
		uint8_t tmp[4];

		memcpy(tmp, f.b + 26, 4);
		memcpy(f.b + 26, f.b + 30, 4);
		memcpy(f.b + 30, tmp, 4);
		memcpy(tmp, f.b + 34, 2);
		memcpy(f.b + 34, f.b + 36, 2);
		memcpy(f.b + 36, tmp, 2);
	}
	assert_int_equal(tuple_n(&f, f.len, &b), 0);
	assert_int_equal(a.src.v4, b.dst.v4);
	assert_int_equal(a.sport, b.dport);
	assert_int_equal(sl_5tuple_hash(&a), sl_5tuple_hash(&b));
}

/* sl_5tuple_parse() reads back what sl_5tuple_format() writes, and
 * refuses the rest, including words longer than its buffers (ASan build:
 * no overflow). */
static void
test_parse(void **state)
{
	static const char *const good[] = {
		"tcp 10.0.1.2:40000 > 192.168.0.10:80",
		"udp [2001:db8::1]:5353 > [2001:db8::2]:53",
	};
	static const char *const bad[] = {
		"",
		"tcp 10.0.1.2:1 192.168.0.10:80",
		"tcp 10.0.1.2:1 < 192.168.0.10:80",
		"xyz 10.0.1.2:1 > 192.168.0.10:80",
		"tcp 10.0.1.2:70000 > 192.168.0.10:80",
		"tcp 10.0.1.2:1 > 192.168.0.10:80 extra",
		/* 63 characters each: the most %63s takes */
		"udp 111111111111111111111111111111111111111111111111111111111111111"
		" > 222222222222222222222222222222222222222222222222222222222222222",
		/* and longer */
		"udp 1111111111111111111111111111111111111111111111111111111111111111"
		"1111 > 2:2",
	};
	struct sl_5tuple t;
	char buf[128];

	(void)state;
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(sl_5tuple_parse(good[i], &t), 0);
		sl_5tuple_format(&t, buf, sizeof(buf));
		assert_string_equal(buf, good[i]);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sl_5tuple_parse(bad[i], &t), -EINVAL);
}

static void
test_format(void **state)
{
	struct sl_5tuple t;
	char buf[128];

	(void)state;
	make_tuple4(&t, IPPROTO_TCP, IP4(10, 0, 1, 2), 40000,
		    IP4(192, 168, 0, 10), 80);
	assert_int_equal(sl_5tuple_format(&t, buf, sizeof(buf)),
			 strlen("tcp 10.0.1.2:40000 > 192.168.0.10:80"));
	assert_string_equal(buf, "tcp 10.0.1.2:40000 > 192.168.0.10:80");

	make_tuple6(&t, IPPROTO_UDP, v6_a, 5353, v6_b, 53);
	assert_int_equal(sl_5tuple_format(&t, buf, sizeof(buf)),
			 strlen("udp [2001:db8::1]:5353 > [2001:db8::2]:53"));
	assert_string_equal(buf, "udp [2001:db8::1]:5353 > [2001:db8::2]:53");

	make_tuple4(&t, IPPROTO_ICMP, IP4(10, 0, 0, 1), 0, IP4(10, 0, 0, 2), 0);
	sl_5tuple_format(&t, buf, sizeof(buf));
	assert_string_equal(buf, "icmp 10.0.0.1 > 10.0.0.2");

	make_tuple6(&t, IPPROTO_ICMPV6, v6_a, 0, v6_b, 0);
	sl_5tuple_format(&t, buf, sizeof(buf));
	assert_string_equal(buf, "icmp6 2001:db8::1 > 2001:db8::2");

	make_tuple4(&t, IPPROTO_SCTP, IP4(1, 2, 3, 4), 1, IP4(5, 6, 7, 8), 2);
	sl_5tuple_format(&t, buf, sizeof(buf));
	assert_string_equal(buf, "sctp 1.2.3.4:1 > 5.6.7.8:2");

	make_tuple4(&t, 47, IP4(1, 2, 3, 4), 0, IP4(5, 6, 7, 8), 0);
	sl_5tuple_format(&t, buf, sizeof(buf));
	assert_string_equal(buf, "proto-47 1.2.3.4 > 5.6.7.8");

	make_tuple4(&t, IPPROTO_UDP, IP4(255, 255, 255, 255), 65535,
		    IP4(0, 0, 0, 0), 0);
	sl_5tuple_format(&t, buf, sizeof(buf));
	assert_string_equal(buf, "udp 255.255.255.255:65535 > 0.0.0.0:0");

	/* Too small: truncated, NUL-terminated, -ENOSPC. */
	make_tuple4(&t, IPPROTO_TCP, IP4(10, 0, 1, 2), 40000,
		    IP4(192, 168, 0, 10), 80);
	assert_int_equal(sl_5tuple_format(&t, buf, 8), -ENOSPC);
	assert_string_equal(buf, "tcp 10.");
	assert_int_equal(sl_5tuple_format(&t, buf, 36), -ENOSPC);
	assert_int_equal(sl_5tuple_format(&t, buf, 37), 36);

	/* Not an IP tuple. */
	t.family = 0;
	assert_int_equal(sl_5tuple_format(&t, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(buf, "");
	assert_int_equal(sl_5tuple_format(&t, NULL, 10), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp4_truncations),
		cmocka_unit_test(test_udp6_ext_truncations),
		cmocka_unit_test(test_vlan_truncations),
		cmocka_unit_test(test_qinq_truncations),
		cmocka_unit_test(test_three_tags),
		cmocka_unit_test(test_non_ip),
		cmocka_unit_test(test_ip_version_mismatch),
		cmocka_unit_test(test_bad_ihl),
		cmocka_unit_test(test_bad_total_length),
		cmocka_unit_test(test_ipv4_options),
		cmocka_unit_test(test_ipv4_fragments),
		cmocka_unit_test(test_ipv6_fragments),
		cmocka_unit_test(test_ipv6_ext_bound),
		cmocka_unit_test(test_ipv6_payload_length),
		cmocka_unit_test(test_icmp_and_others),
		cmocka_unit_test(test_hash_symmetric),
		cmocka_unit_test(test_hash_from_frames),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_mbuf_wrappers),
		cmocka_unit_test(test_flow_tuple_of_fragments),
		cmocka_unit_test(test_hdr_tcp4),
		cmocka_unit_test(test_hdr_udp6_ext),
		cmocka_unit_test(test_hdr_vlans),
		cmocka_unit_test(test_hdr_ipv4_options),
		cmocka_unit_test(test_hdr_fragments),
		cmocka_unit_test(test_hdr_wrong_protocol),
		cmocka_unit_test(test_hdr_malformed),
		cmocka_unit_test(test_hdr_stale_info),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_cksum_addresses),
		cmocka_unit_test(test_cksum_word),
		cmocka_unit_test(test_cksum_host_order),
		cmocka_unit_test(test_cksum_udp_zero),
		cmocka_unit_test(test_5tuple_canonical),
	};

	return cmocka_run_group_tests_name("pkt", tests, NULL, NULL);
}
