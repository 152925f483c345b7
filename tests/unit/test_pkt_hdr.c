/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the packet header helpers (src/common/sl_pkt.c), second
 * part: the mbuf wrappers, the header accessors and the parser fuzz (the
 * group's list is in test_pkt.c's main).
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

void
test_mbuf_wrappers(void **state)
{
	struct frame f;
	struct rte_mbuf m;
	struct sl_pkt_info info;
	struct sl_5tuple t;
	uint8_t *p;

	(void)state;
	build_tcp4(&f);
	p = malloc(f.len + 128);
	assert_non_null(p);
	memcpy(p + 128, f.b, f.len);
	memset(&m, 0, sizeof(m));
	m.buf_addr = p;
	m.data_off = 128;
	m.data_len = (uint16_t)f.len;
	m.pkt_len = f.len;
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	assert_int_equal(info.l4_off, 34);
	assert_int_equal(info.frame_len, 68);
	assert_int_equal(sl_pkt_5tuple(&m, &t), 0);
	assert_int_equal(ntohs(t.dport), 80);
	/* Only the first segment counts: a short first segment truncates. */
	m.data_len = 40;
	m.pkt_len = f.len;
	assert_int_equal(sl_pkt_parse(&m, &info), -EMSGSIZE);
	assert_int_equal(sl_pkt_5tuple(&m, &t), -EMSGSIZE);
	free(p);
}

/*
 * The header pointers (sl_pkt_eth() ...). Each frame is truncated at every
 * length: the first segment is an exact-size heap copy of that many bytes
 * (ASan flags a read past it), pkt_len stays the whole frame's, as in a
 * chained mbuf whose first segment is short.
 */

/* Where a helper must find its header: off < 0 for never; else from
 * frames of at least need bytes on, at off, size bytes compared. */
struct hdr_at {
	int off;
	uint32_t need;
};

struct hdr_expect {
	struct hdr_at eth, vlan[3], ip4, ip6, tcp, udp;
};

#define HDR_NONE                                                               \
	{                                                                      \
		-1, 0                                                          \
	}

/* An mbuf whose single segment is an exact-size copy of f's first len
 * bytes. Free m->buf_addr. */
static void
mbuf_n(struct rte_mbuf *m, const struct frame *f, uint32_t len)
{
	uint8_t *p = malloc(len); /* malloc(0): ASan flags any read */

	assert_non_null(p);
	memcpy(p, f->b, len);
	memset(m, 0, sizeof(*m));
	m->buf_addr = p;
	m->data_off = 0;
	m->data_len = (uint16_t)len;
	m->pkt_len = f->len;
}

static void
check_hdr(const char *what, uint32_t len, const void *got,
	  const struct rte_mbuf *m, const struct frame *f, struct hdr_at a,
	  size_t size)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (a.off < 0 || len < a.need) {
		if (got != NULL)
			fail_msg("%s: a header at length %u, wanted NULL", what,
				 len);
		return;
	}
	if (got != p + a.off)
		fail_msg("%s: at length %u got offset %td, wanted %d", what,
			 len,
			 got == NULL ? (ptrdiff_t)-1 : (const uint8_t *)got - p,
			 a.off);
	/* Reads the whole header through the pointer. */
	assert_memory_equal(got, f->b + a.off, size);
}

static void
check_hdrs_at(const struct frame *f, uint32_t len, const struct hdr_expect *e)
{
	struct rte_mbuf m;
	struct sl_pkt_info info;
	unsigned i;

	mbuf_n(&m, f, len);
	(void)sl_pkt_parse(&m, &info); /* helpers answer per layer */
	check_hdr("eth", len, sl_pkt_eth(&m), &m, f, e->eth,
		  sizeof(struct rte_ether_hdr));
	for (i = 0; i < 3; i++)
		check_hdr(i == 0   ? "vlan0"
			  : i == 1 ? "vlan1"
				   : "vlan2",
			  len, sl_pkt_vlan(&m, &info, i), &m, f, e->vlan[i],
			  sizeof(struct rte_vlan_hdr));
	check_hdr("ipv4", len, sl_pkt_ipv4(&m, &info), &m, f, e->ip4,
		  sizeof(struct rte_ipv4_hdr));
	check_hdr("ipv6", len, sl_pkt_ipv6(&m, &info), &m, f, e->ip6,
		  sizeof(struct rte_ipv6_hdr));
	check_hdr("tcp", len, sl_pkt_tcp(&m, &info), &m, f, e->tcp,
		  sizeof(struct rte_tcp_hdr));
	check_hdr("udp", len, sl_pkt_udp(&m, &info), &m, f, e->udp,
		  sizeof(struct rte_udp_hdr));
	free(m.buf_addr);
}

static void
check_hdrs(const struct frame *f, const struct hdr_expect *e)
{
	uint32_t len;

	for (len = 0; len <= f->len; len++)
		check_hdrs_at(f, len, e);
}

void
test_hdr_tcp4(void **state)
{
	const struct hdr_expect e = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = {14, 34},
		.ip6 = HDR_NONE,
		.tcp = {34, 54},
		.udp = HDR_NONE,
	};
	struct frame f;
	struct rte_mbuf m;
	struct sl_pkt_info info;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_tcp_hdr *tcp;

	(void)state;
	build_tcp4(&f);
	check_hdrs(&f, &e);

	/* The fields, and the pointers are writable in place. */
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	eth = sl_pkt_eth(&m);
	ip = sl_pkt_ipv4(&m, &info);
	tcp = sl_pkt_tcp(&m, &info);
	assert_int_equal(eth->ether_type, htons(SL_ETHER_TYPE_IPV4));
	assert_int_equal(eth->dst_addr.addr_bytes[5], 1);
	assert_int_equal(ip->next_proto_id, IPPROTO_TCP);
	assert_int_equal(ip->src_addr, htonl(IP4(10, 0, 1, 2)));
	assert_int_equal(ip->dst_addr, htonl(IP4(192, 168, 0, 10)));
	assert_int_equal(tcp->src_port, htons(40000));
	assert_int_equal(tcp->dst_port, htons(80));
	assert_int_equal(tcp->tcp_flags, 0x18);
	ip->time_to_live = 7;
	assert_int_equal(((uint8_t *)m.buf_addr)[14 + 8], 7);
	free(m.buf_addr);
}

void
test_hdr_udp6_ext(void **state)
{
	const struct hdr_expect e = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = HDR_NONE,
		/* The IPv6 header is there while the extension headers
		 * are still cut (sl_pkt_parse() fails): per layer. */
		.ip6 = {14, 54},
		.tcp = HDR_NONE,
		.udp = {102, 110},
	};
	struct frame f;
	struct rte_mbuf m;
	struct sl_pkt_info info;
	struct rte_ipv6_hdr *ip6;
	struct rte_udp_hdr *udp;

	(void)state;
	build_udp6_ext(&f);
	check_hdrs(&f, &e);

	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	ip6 = sl_pkt_ipv6(&m, &info);
	udp = sl_pkt_udp(&m, &info);
	assert_int_equal(ip6->proto, IPPROTO_HOPOPTS);
	assert_memory_equal(ip6->src_addr, v6_a, 16);
	assert_memory_equal(ip6->dst_addr, v6_b, 16);
	assert_int_equal(udp->src_port, htons(5353));
	assert_int_equal(udp->dst_port, htons(53));
	assert_int_equal(udp->dgram_len, htons(16));
	free(m.buf_addr);
}

void
test_hdr_vlans(void **state)
{
	static const uint16_t tag1[] = {SL_ETHER_TYPE_VLAN, 0x2064};
	static const uint16_t tag2[] = {SL_ETHER_TYPE_QINQ, 0x00c8,
					SL_ETHER_TYPE_VLAN, 0x0064};
	static const uint16_t tag3[] = {SL_ETHER_TYPE_QINQ, 1,
					SL_ETHER_TYPE_VLAN, 2,
					SL_ETHER_TYPE_VLAN, 3};
	const struct hdr_expect e1 = {
		.eth = {0, 14},
		.vlan = {{14, 18}, HDR_NONE, HDR_NONE},
		.ip4 = {18, 38},
		.ip6 = HDR_NONE,
		.tcp = HDR_NONE,
		.udp = {38, 46},
	};
	const struct hdr_expect e2 = {
		.eth = {0, 14},
		.vlan = {{14, 18}, {18, 22}, HDR_NONE},
		.ip4 = {22, 42},
		.ip6 = HDR_NONE,
		.tcp = {42, 62},
		.udp = HDR_NONE,
	};
	/* A third tag is not parsed: two tags, then no IP. */
	const struct hdr_expect e3 = {
		.eth = {0, 14},
		.vlan = {{14, 18}, {18, 22}, HDR_NONE},
		.ip4 = HDR_NONE,
		.ip6 = HDR_NONE,
		.tcp = HDR_NONE,
		.udp = HDR_NONE,
	};
	struct frame f = {0};
	struct rte_mbuf m;
	struct sl_pkt_info info;
	struct rte_vlan_hdr *v0, *v1;

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 1, tag1);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 12, 0, 0);
	put_udp(&f, 1024, 4789, 4);
	check_hdrs(&f, &e1);

	memset(&f, 0, sizeof(f));
	put_eth(&f, SL_ETHER_TYPE_IPV4, 2, tag2);
	put_ipv4(&f, IPPROTO_TCP, IP4(192, 168, 0, 1), IP4(10, 0, 0, 9), 20, 0,
		 0);
	put_tcp(&f, 443, 51000, 0);
	check_hdrs(&f, &e2);

	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	assert_int_equal(sl_pkt_eth(&m)->ether_type, htons(SL_ETHER_TYPE_QINQ));
	v0 = sl_pkt_vlan(&m, &info, 0);
	v1 = sl_pkt_vlan(&m, &info, 1);
	assert_int_equal(v0->vlan_tci, htons(0x00c8));
	assert_int_equal(v0->eth_proto, htons(SL_ETHER_TYPE_VLAN));
	assert_int_equal(v1->vlan_tci, htons(0x0064));
	assert_int_equal(v1->eth_proto, htons(SL_ETHER_TYPE_IPV4));
	assert_null(sl_pkt_vlan(&m, &info, 2));
	assert_null(sl_pkt_vlan(&m, &info, ~0u));
	free(m.buf_addr);

	memset(&f, 0, sizeof(f));
	put_eth(&f, SL_ETHER_TYPE_IPV4, 3, tag3);
	put_ipv4(&f, IPPROTO_UDP, 1, 2, 8, 0, 0);
	put_udp(&f, 1, 2, 0);
	check_hdrs(&f, &e3);
}

void
test_hdr_ipv4_options(void **state)
{
	/* 4 bytes of options: no IPv4 header until they are all there. */
	const struct hdr_expect e = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = {14, 38},
		.ip6 = HDR_NONE,
		.tcp = HDR_NONE,
		.udp = {38, 46},
	};
	struct frame f = {0};

	(void)state;
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(255, 255, 255, 255),
		 8 + 2, 0, 4);
	put_udp(&f, 68, 67, 2);
	check_hdrs(&f, &e);
}

/* No L4 header in a later fragment, whatever bytes follow the IP header. */
void
test_hdr_fragments(void **state)
{
	struct hdr_expect e4 = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = {14, 34},
		.ip6 = HDR_NONE,
		.tcp = HDR_NONE,
		.udp = {34, 42},
	};
	struct hdr_expect e6 = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = HDR_NONE,
		.ip6 = {14, 54},
		.tcp = {62, 82},
		.udp = HDR_NONE,
	};
	struct frame f = {0};

	(void)state;
	/* IPv4 first fragment (MF, offset 0): UDP header present. */
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 24,
		 0x2000, 0);
	put_udp(&f, 1000, 2000, 16);
	check_hdrs(&f, &e4);
	/* Middle and last fragments. */
	e4.udp = (struct hdr_at)HDR_NONE;
	wr16(&f, 20, 0x2003);
	check_hdrs(&f, &e4);
	wr16(&f, 20, 0x0003);
	check_hdrs(&f, &e4);
	/* A later fragment of TCP: no TCP header either. */
	f.b[23] = IPPROTO_TCP;
	check_hdrs(&f, &e4);

	/* IPv6 first fragment, then a later one (offset 185). */
	memset(&f, 0, sizeof(f));
	put_eth(&f, SL_ETHER_TYPE_IPV6, 0, NULL);
	put_ipv6(&f, IPPROTO_FRAGMENT, v6_a, v6_b, 8 + 28);
	put_frag6(&f, IPPROTO_TCP, 0, 1);
	put_tcp(&f, 22, 60000, 8);
	check_hdrs(&f, &e6);
	wr16(&f, 54 + 2, (uint16_t)(185 << 3));
	e6.tcp = (struct hdr_at)HDR_NONE;
	check_hdrs(&f, &e6);
}

/* A frame copied into a heap mbuf's first segment (free m->buf_addr). */
static void
frame_mbuf(const struct frame *f, struct rte_mbuf *m)
{
	uint8_t *p = malloc(f->len + 128);

	assert_non_null(p);
	memcpy(p + 128, f->b, f->len);
	memset(m, 0, sizeof(*m));
	m->buf_addr = p;
	m->data_off = 128;
	m->data_len = (uint16_t)f->len;
	m->pkt_len = f->len;
}

/*
 * sl_pkt_flow_tuple: the flow director's key. Every piece of a fragmented
 * datagram, the first too, has ports 0 (one flow, one path); an unfragmented
 * packet and a DF one keep their ports; sl_pkt_5tuple keeps the first
 * fragment's ports (for NFs matching them).
 */
void
test_flow_tuple_of_fragments(void **state)
{
	struct sl_5tuple whole, first, later, nf_first;
	struct rte_mbuf m;
	struct frame f = {0};

	(void)state;
	/* IPv4 UDP, not fragmented (DF set): ports kept. */
	put_eth(&f, SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&f, IPPROTO_UDP, IP4(10, 0, 0, 1), IP4(10, 0, 0, 2), 24,
		 0x4000, 0);
	put_udp(&f, 1000, 53, 16);
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &whole), 0);
	assert_int_equal(ntohs(whole.sport), 1000);
	assert_int_equal(ntohs(whole.dport), 53);
	free(m.buf_addr);
	/* The first fragment (MF, offset 0) and a later one (offset 3). */
	wr16(&f, 20, 0x2000);
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &first), 0);
	assert_int_equal(sl_pkt_5tuple(&m, &nf_first), 0);
	free(m.buf_addr);
	wr16(&f, 20, 0x0003);
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &later), 0);
	free(m.buf_addr);
	assert_int_equal(first.sport, 0);
	assert_int_equal(first.dport, 0);
	assert_memory_equal(&first, &later, sizeof(first));
	assert_int_equal(first.proto, IPPROTO_UDP);
	assert_memory_equal(&first.src, &whole.src, sizeof(first.src));
	assert_int_equal(ntohs(nf_first.dport), 53);
	assert_int_equal(sl_5tuple_hash(&first), sl_5tuple_hash(&later));

	/* IPv6: the first fragment's TCP ports go too, as in a later one. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, SL_ETHER_TYPE_IPV6, 0, NULL);
	put_ipv6(&f, IPPROTO_FRAGMENT, v6_a, v6_b, 8 + 28);
	put_frag6(&f, IPPROTO_TCP, 0, 1);
	put_tcp(&f, 22, 60000, 8);
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &first), 0);
	assert_int_equal(sl_pkt_5tuple(&m, &nf_first), 0);
	free(m.buf_addr);
	wr16(&f, 54 + 2, (uint16_t)(185 << 3));
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &later), 0);
	free(m.buf_addr);
	assert_int_equal(first.family, 6);
	assert_int_equal(first.proto, IPPROTO_TCP);
	assert_int_equal(first.sport | first.dport, 0);
	assert_memory_equal(&first, &later, sizeof(first));
	assert_int_equal(ntohs(nf_first.sport), 22);
	/* Not IP: the same error as sl_pkt_5tuple. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 0, NULL);
	f.len = 60;
	frame_mbuf(&f, &m);
	assert_int_equal(sl_pkt_flow_tuple(&m, &first), -ENOENT);
	free(m.buf_addr);
}

/* Only the helper of the packet's own protocols answers. */
void
test_hdr_wrong_protocol(void **state)
{
	const struct hdr_expect only_eth = {
		.eth = {0, 14},
		.vlan = {HDR_NONE, HDR_NONE, HDR_NONE},
		.ip4 = HDR_NONE,
		.ip6 = HDR_NONE,
		.tcp = HDR_NONE,
		.udp = HDR_NONE,
	};
	struct hdr_expect ip4_only = only_eth;
	struct hdr_expect ip6_only = only_eth;
	struct hdr_expect e;
	struct frame f = {0};

	(void)state;
	ip4_only.ip4 = (struct hdr_at){14, 34};
	ip6_only.ip6 = (struct hdr_at){14, 54};

	/* ARP. */
	put_eth(&f, 0x0806, 0, NULL);
	put_zero(&f, 28);
	check_hdrs(&f, &only_eth);

	/* ICMP, GRE, SCTP over IPv4: no TCP or UDP header. */
	frame_ip4(&f, IPPROTO_ICMP, 1, 0, 2, 0, 20);
	check_hdrs(&f, &ip4_only);
	f.b[23] = 47;
	check_hdrs(&f, &ip4_only);
	f.b[23] = IPPROTO_SCTP;
	check_hdrs(&f, &ip4_only);

	/* ICMPv6. */
	frame_ip6(&f, IPPROTO_ICMPV6, v6_a, 0, v6_b, 0, 20);
	check_hdrs(&f, &ip6_only);

	/* UDP has no TCP header and TCP no UDP header, v4 and v6. */
	frame_ip4(&f, IPPROTO_UDP, 1, 53, 2, 53, 30);
	e = ip4_only;
	e.udp = (struct hdr_at){34, 42};
	check_hdrs(&f, &e);
	frame_ip4(&f, IPPROTO_TCP, 1, 80, 2, 1234, 30);
	e = ip4_only;
	e.tcp = (struct hdr_at){34, 54};
	check_hdrs(&f, &e);
	frame_ip6(&f, IPPROTO_UDP, v6_a, 53, v6_b, 53, 30);
	e = ip6_only;
	e.udp = (struct hdr_at){54, 62};
	check_hdrs(&f, &e);
	frame_ip6(&f, IPPROTO_TCP, v6_a, 80, v6_b, 1234, 30);
	e = ip6_only;
	e.tcp = (struct hdr_at){54, 74};
	check_hdrs(&f, &e);
}

/* Malformed IP: no IP header; an L4 header cut by the IP length, not by
 * the frame: no L4 header. */
void
test_hdr_malformed(void **state)
{
	struct frame f;
	struct rte_mbuf m;
	struct sl_pkt_info info;
	uint8_t ihl;

	(void)state;
	build_tcp4(&f);
	for (ihl = 0; ihl < 5; ihl++) {
		f.b[14] = (uint8_t)(0x40 | ihl);
		mbuf_n(&m, &f, f.len);
		assert_int_equal(sl_pkt_parse(&m, &info), -EINVAL);
		assert_ptr_equal(sl_pkt_eth(&m), m.buf_addr);
		assert_null(sl_pkt_ipv4(&m, &info));
		assert_null(sl_pkt_ipv6(&m, &info));
		assert_null(sl_pkt_tcp(&m, &info));
		free(m.buf_addr);
	}
	/* Version 6 under ethertype IPv4, and 4 under IPv6. */
	f.b[14] = 0x65;
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), -EINVAL);
	assert_null(sl_pkt_ipv4(&m, &info));
	assert_null(sl_pkt_ipv6(&m, &info));
	free(m.buf_addr);
	f.b[14] = 0x45;
	wr16(&f, 12, SL_ETHER_TYPE_IPV6);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), -EINVAL);
	assert_null(sl_pkt_ipv4(&m, &info));
	assert_null(sl_pkt_ipv6(&m, &info));
	free(m.buf_addr);
	/* Total length below the header. */
	build_tcp4(&f);
	wr16(&f, 16, 19);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), -EINVAL);
	assert_null(sl_pkt_ipv4(&m, &info));
	assert_null(sl_pkt_tcp(&m, &info));
	free(m.buf_addr);

	/* IPv4 total length 39: 19 bytes of TCP in the datagram, 34 in the
	 * frame. The IPv4 header is complete, the TCP header is not. */
	wr16(&f, 16, 39);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), -EMSGSIZE);
	assert_ptr_equal(sl_pkt_ipv4(&m, &info), (uint8_t *)m.buf_addr + 14);
	assert_null(sl_pkt_tcp(&m, &info));
	free(m.buf_addr);
	wr16(&f, 16, 40);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	assert_ptr_equal(sl_pkt_tcp(&m, &info), (uint8_t *)m.buf_addr + 34);
	free(m.buf_addr);

	/* IPv6 payload length ends inside the UDP header. */
	build_udp6_ext(&f);
	wr16(&f, 18, 8 + 24 + 16 + 7);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), -EMSGSIZE);
	assert_ptr_equal(sl_pkt_ipv6(&m, &info), (uint8_t *)m.buf_addr + 14);
	assert_null(sl_pkt_udp(&m, &info));
	free(m.buf_addr);
}

/* An info that does not describe the mbuf (stale, or made by hand) never
 * yields a header past the first segment. */
void
test_hdr_stale_info(void **state)
{
	static const uint16_t tags[] = {SL_ETHER_TYPE_QINQ, 1,
					SL_ETHER_TYPE_VLAN, 2};
	struct frame f;
	struct rte_mbuf m;
	struct sl_pkt_info info;

	(void)state;
	build_tcp4(&f);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	/* The first segment shrinks (adj/trim) after the parse. */
	m.data_len = 53;
	assert_ptr_equal(sl_pkt_ipv4(&m, &info), (uint8_t *)m.buf_addr + 14);
	assert_null(sl_pkt_tcp(&m, &info));
	m.data_len = 54;
	assert_ptr_equal(sl_pkt_tcp(&m, &info), (uint8_t *)m.buf_addr + 34);
	m.data_len = 33;
	assert_null(sl_pkt_ipv4(&m, &info));
	assert_null(sl_pkt_tcp(&m, &info));
	m.data_len = 13;
	assert_null(sl_pkt_eth(&m));
	/* A UDP info on it: l4_len is 30, but 7 bytes are left. */
	info.l4_proto = IPPROTO_UDP;
	m.data_len = 41;
	assert_null(sl_pkt_udp(&m, &info));
	m.data_len = 42;
	assert_ptr_equal(sl_pkt_udp(&m, &info), (uint8_t *)m.buf_addr + 34);
	/* Each of the L4 conditions alone refuses. */
	m.data_len = (uint16_t)f.len;
	info.later_fragment = 1;
	assert_null(sl_pkt_udp(&m, &info));
	info.later_fragment = 0;
	info.l4_off = 0;
	assert_null(sl_pkt_udp(&m, &info));
	info.l4_off = 34;
	info.ip_version = 0;
	assert_null(sl_pkt_udp(&m, &info));
	info.ip_version = 4;
	info.l4_len = 7;
	assert_null(sl_pkt_udp(&m, &info));
	info.l4_len = 8;
	assert_ptr_equal(sl_pkt_udp(&m, &info), (uint8_t *)m.buf_addr + 34);
	/* IPv6 at l3_off 14 needs 54 bytes. */
	info.ip_version = 6;
	m.data_len = 53;
	assert_null(sl_pkt_ipv6(&m, &info));
	m.data_len = 54;
	assert_ptr_equal(sl_pkt_ipv6(&m, &info), (uint8_t *)m.buf_addr + 14);
	free(m.buf_addr);

	/* Tags claimed beyond the segment, or more than two. */
	memset(&f, 0, sizeof(f));
	put_eth(&f, 0x0806, 2, tags);
	put_zero(&f, 28);
	mbuf_n(&m, &f, f.len);
	assert_int_equal(sl_pkt_parse(&m, &info), 0);
	m.data_len = 21;
	assert_ptr_equal(sl_pkt_vlan(&m, &info, 0), (uint8_t *)m.buf_addr + 14);
	assert_null(sl_pkt_vlan(&m, &info, 1));
	m.data_len = 22;
	assert_ptr_equal(sl_pkt_vlan(&m, &info, 1), (uint8_t *)m.buf_addr + 18);
	/* At most two tags are parsed: a third is never returned. */
	m.data_len = (uint16_t)f.len;
	info.n_vlans = 3;
	assert_null(sl_pkt_vlan(&m, &info, 2));
	free(m.buf_addr);
}

/* Invariants of any successful parse of len bytes. */
static void
check_info_sane(const struct sl_pkt_info *info, uint32_t len)
{
	assert_true(info->frame_len == len);
	assert_true(info->n_vlans <= 2);
	if (info->ip_version == 0)
		return;
	assert_true(info->ip_version == 4 || info->ip_version == 6);
	assert_true(info->l3_off >= 14 && info->l3_off <= 22);
	assert_true(info->l3_off + (info->ip_version == 4 ? 20u : 40u) <= len);
	if (info->l4_off == 0) {
		assert_true(info->later_fragment);
		assert_int_equal(info->l4_len, 0);
		return;
	}
	assert_true(info->l4_off >= info->l3_off + 20u);
	assert_true((uint32_t)info->l4_off + info->l4_len <= len);
	if (info->l4_proto == IPPROTO_TCP)
		assert_true(info->l4_len >= 20);
	if (info->l4_proto == IPPROTO_UDP)
		assert_true(info->l4_len >= 8);
}

static unsigned g_fuzz_common; /* frames of sl_5tuple_get()'s one pass */

/* A frame's 5-tuple as sl_parse()'s offsets give it: what every path
 * of sl_5tuple_get() must return (the one pass for the common IPv4 frame
 * included). */
static void
tuple_of_info(const uint8_t *p, const struct sl_pkt_info *info,
	      struct sl_5tuple *t)
{
	const uint8_t *ip = p + info->l3_off;
	int v4 = info->ip_version == 4;

	memset(t, 0, sizeof(*t));
	t->family = info->ip_version;
	t->proto = info->l4_proto;
	memcpy(&t->src, ip + (v4 ? 12 : 8), v4 ? 4 : 16);
	memcpy(&t->dst, ip + (v4 ? 16 : 24), v4 ? 4 : 16);
	if ((t->proto == IPPROTO_TCP || t->proto == IPPROTO_UDP ||
	     t->proto == IPPROTO_SCTP) &&
	    info->l4_off != 0) {
		memcpy(&t->sport, p + info->l4_off, 2);
		memcpy(&t->dport, p + info->l4_off + 2, 2);
	}
}

static void
fuzz_one(const uint8_t *bytes, uint32_t len, unsigned *n_ok)
{
	uint8_t *p = malloc(len); /* malloc(0): ASan flags any read */
	struct sl_pkt_info info;
	struct sl_5tuple t, mt, ft;
	struct rte_mbuf m;
	int rc, trc;

	assert_non_null(p);
	memcpy(p, bytes, len);
	rc = sl_parse(p, len, &info);
	assert_true(rc == 0 || rc == -EINVAL || rc == -EMSGSIZE);
	trc = sl_5tuple_get(p, len, &t);
	/* The same on an mbuf, and as the flow director keys it. */
	memset(&m, 0, sizeof(m));
	m.buf_addr = p;
	m.data_len = (uint16_t)len;
	m.pkt_len = len;
	assert_int_equal(sl_pkt_5tuple(&m, &mt), trc);
	assert_int_equal(sl_pkt_flow_tuple(&m, &ft), trc);
	if (rc == 0) {
		check_info_sane(&info, len);
		assert_int_equal(trc, info.ip_version ? 0 : -ENOENT);
		if (trc == 0) {
			char buf[128];
			struct sl_5tuple back, want;
			int n;

			tuple_of_info(p, &info, &want);
			assert_memory_equal(&t, &want, sizeof(t));
			assert_memory_equal(&mt, &want, sizeof(t));
			if (info.fragment)
				want.sport = want.dport = 0;
			assert_memory_equal(&ft, &want, sizeof(t));
			if (info.ip_version == 4 && info.n_vlans == 0 &&
			    !info.ip_options && !info.fragment &&
			    (info.l4_proto == IPPROTO_TCP ||
			     info.l4_proto == IPPROTO_UDP))
				g_fuzz_common++;
			assert_int_equal(t.family, info.ip_version);
			assert_int_not_equal(sl_5tuple_hash(&t), 0);
			/* The text is the whole tuple: it parses back. */
			n = sl_5tuple_format(&t, buf, sizeof(buf));
			assert_int_equal(n, strlen(buf));
			assert_int_equal(sl_5tuple_parse(buf, &back), 0);
			assert_int_equal(back.family, t.family);
			assert_int_equal(back.proto, t.proto);
			assert_int_equal(back.sport, t.sport);
			assert_int_equal(back.dport, t.dport);
			assert_memory_equal(&back.src, &t.src,
					    t.family == 4 ? 4 : 16);
			assert_memory_equal(&back.dst, &t.dst,
					    t.family == 4 ? 4 : 16);
			(*n_ok)++;
		}
	} else {
		assert_int_equal(trc, rc);
	}
	free(p);
}

/*
 * Random bytes and mutated valid frames (bit flips, overwritten bytes,
 * random ethertypes/versions, random truncation) through sl_parse() and
 * sl_5tuple_get() (and its mbuf forms). Must never fail an invariant or
 * read out of bounds, and the tuple must be the one sl_parse() locates.
 */
void
test_fuzz(void **state)
{
	enum { ROUNDS = 200000 };
	struct frame tmpl[7];
	static const uint16_t vlan[] = {SL_ETHER_TYPE_VLAN, 5};
	static const uint16_t qinq[] = {SL_ETHER_TYPE_QINQ, 6,
					SL_ETHER_TYPE_VLAN, 7};
	static const uint16_t types[] = {SL_ETHER_TYPE_IPV4, SL_ETHER_TYPE_IPV6,
					 SL_ETHER_TYPE_VLAN,
					 SL_ETHER_TYPE_QINQ};
	static const uint8_t nhs[] = {0, 43, 44, 60, 6, 17, 132, 1, 58, 59};
	unsigned i, n_ok = 0;

	(void)state;
	rng_state = 0xdecafbadull;
	build_tcp4(&tmpl[0]);
	build_udp6_ext(&tmpl[1]);
	memset(&tmpl[2], 0, sizeof(tmpl[2]));
	put_eth(&tmpl[2], SL_ETHER_TYPE_IPV4, 1, vlan);
	put_ipv4(&tmpl[2], IPPROTO_UDP, 1, 2, 8 + 20, 0, 8);
	put_udp(&tmpl[2], 1, 2, 20);
	memset(&tmpl[3], 0, sizeof(tmpl[3]));
	put_eth(&tmpl[3], SL_ETHER_TYPE_IPV6, 2, qinq);
	put_ipv6(&tmpl[3], IPPROTO_FRAGMENT, v6_a, v6_b, 8 + 20);
	put_frag6(&tmpl[3], IPPROTO_TCP, 0, 1);
	put_tcp(&tmpl[3], 1, 2, 0);
	build_ext_chain(&tmpl[4], 8);
	memset(&tmpl[5], 0, sizeof(tmpl[5]));
	put_eth(&tmpl[5], SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&tmpl[5], IPPROTO_TCP, 1, 2, 100, 0x2001, 0);
	put_zero(&tmpl[5], 100);
	memset(&tmpl[6], 0, sizeof(tmpl[6]));
	put_eth(&tmpl[6], SL_ETHER_TYPE_IPV4, 0, NULL);
	put_ipv4(&tmpl[6], IPPROTO_UDP, 3, 4, 8 + 6, 0x4000, 0); /* DF */
	put_udp(&tmpl[6], 53, 1053, 6);

	for (i = 0; i < ROUNDS; i++) {
		uint8_t b[MAX_FRAME];
		uint32_t len, k, n;
		uint64_t r = rng();

		if ((r & 7) == 0) {
			/* Pure noise, sometimes with an IP ethertype. */
			len = (uint32_t)(rng() % 160);
			for (k = 0; k < len; k++)
				b[k] = (uint8_t)rng();
			if (len >= 14 && (r & 8)) {
				uint16_t ty = types[rng() % 4];

				b[12] = (uint8_t)(ty >> 8);
				b[13] = (uint8_t)ty;
			}
		} else {
			const struct frame *t = &tmpl[(r >> 3) % 7];

			memcpy(b, t->b, t->len);
			len = t->len;
			n = 1 + (uint32_t)(rng() % 4);
			for (k = 0; k < n; k++) {
				uint32_t pos = (uint32_t)(rng() % len);
				uint64_t how = rng();

				uint8_t x = (uint8_t)(how >> 8);

				switch (how % 4) {
				case 0:
					b[pos] ^= (uint8_t)(1u << x % 8);
					break;
				case 1:
					b[pos] = x;
					break;
				case 2:
					b[pos] = nhs[x % sizeof(nhs)];
					break;
				default:
					/* an IPv4 version/IHL byte */
					b[pos] = (uint8_t)(0x40 | x % 16);
					break;
				}
			}
			if (r & (1u << 20))
				len = (uint32_t)(rng() % (len + 1));
		}
		fuzz_one(b, len, &n_ok);
	}
	/* The mutations must leave many frames parseable, or the test is
	 * not exercising the deep paths; and many of the common kind (the
	 * one-pass path), mutated close to its limits. */
	assert_true(n_ok > ROUNDS / 10);
	assert_true(g_fuzz_common > ROUNDS / 20);
}
