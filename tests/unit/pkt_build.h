/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame builders for the C unit tests, and checksums computed in full
 * (DPDK's) for the frames they build. Include after <cmocka.h>.
 */
#ifndef SL_TEST_PKT_BUILD_H
#define SL_TEST_PKT_BUILD_H

#include <stdint.h>
#include <string.h>

#include <netinet/in.h>

#include <rte_ip.h>

#define MAX_FRAME 256

/* A frame under construction. */
struct frame {
	uint8_t b[MAX_FRAME];
	uint32_t len;
};

static inline void
put(struct frame *f, const void *p, uint32_t n)
{
	assert_true(f->len + n <= MAX_FRAME);
	memcpy(f->b + f->len, p, n);
	f->len += n;
}

static inline void
put8(struct frame *f, uint8_t v)
{
	put(f, &v, 1);
}

static inline void
put16(struct frame *f, uint16_t v)
{
	put8(f, (uint8_t)(v >> 8));
	put8(f, (uint8_t)v);
}

static inline void
put32(struct frame *f, uint32_t v)
{
	put16(f, (uint16_t)(v >> 16));
	put16(f, (uint16_t)v);
}

static inline void
put_zero(struct frame *f, uint32_t n)
{
	assert_true(f->len + n <= MAX_FRAME);
	memset(f->b + f->len, 0, n);
	f->len += n;
}

static inline void
wr16(struct frame *f, uint32_t off, uint16_t v)
{
	f->b[off] = (uint8_t)(v >> 8);
	f->b[off + 1] = (uint8_t)v;
}

/* The IPv4 header checksum of the header at offset l3, in full. */
static inline void
frame_ip4_hdr_cksum(struct frame *f, uint32_t l3)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f->b + l3);

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

/* Every checksum of the IPv4 datagram at offset l3, in full: its header,
 * and TCP's, UDP's (udp_none: 0, none) or ICMP's over the whole datagram
 * (the total length's). */
static inline void
frame_ip4_cksums(struct frame *f, uint32_t l3, int udp_none)
{
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f->b + l3);
	uint32_t hl = (uint32_t)(ip->version_ihl & 0xf) * 4;
	uint8_t *l4 = f->b + l3 + hl;
	uint16_t len = (uint16_t)(ntohs(ip->total_length) - hl), ck;

	frame_ip4_hdr_cksum(f, l3);
	if (ip->next_proto_id == IPPROTO_TCP) {
		wr16(f, l3 + hl + 16, 0);
		ck = rte_ipv4_udptcp_cksum(ip, l4);
		memcpy(l4 + 16, &ck, 2);
	} else if (ip->next_proto_id == IPPROTO_UDP) {
		wr16(f, l3 + hl + 6, 0);
		if (!udp_none) {
			ck = rte_ipv4_udptcp_cksum(ip, l4);
			memcpy(l4 + 6, &ck, 2);
		}
	} else if (ip->next_proto_id == IPPROTO_ICMP) {
		wr16(f, l3 + hl + 2, 0);
		ck = (uint16_t)~rte_raw_cksum(l4, len);
		memcpy(l4 + 2, &ck, 2);
	}
}

/* Ethernet header with n_tags VLAN tags (tpid/tci pairs) then type. */
static inline void
put_eth(struct frame *f, uint16_t type, unsigned n_tags, const uint16_t *tags)
{
	static const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 1,
					 0x02, 0, 0, 0, 0, 2};
	unsigned i;

	put(f, macs, sizeof(macs));
	for (i = 0; i < n_tags; i++) {
		put16(f, tags[2 * i]);
		put16(f, tags[2 * i + 1]);
	}
	put16(f, type);
}

/* IPv4 header with opt_len bytes of options (NOPs); returns its offset. */
static inline uint32_t
put_ipv4(struct frame *f, uint8_t proto, uint32_t src, uint32_t dst,
	 uint16_t payload, uint16_t frag, uint8_t opt_len)
{
	uint32_t off = f->len;
	uint8_t ihl = (uint8_t)(5 + opt_len / 4);

	put8(f, (uint8_t)(0x40 | ihl));
	put8(f, 0);
	put16(f, (uint16_t)(ihl * 4 + payload));
	put16(f, 0x1234);
	put16(f, frag);
	put8(f, 64);
	put8(f, proto);
	put16(f, 0);
	put32(f, src);
	put32(f, dst);
	for (unsigned i = 0; i < opt_len; i++)
		put8(f, 1);
	return off;
}

static inline uint32_t
put_ipv6(struct frame *f, uint8_t nh, const uint8_t *src, const uint8_t *dst,
	 uint16_t payload)
{
	uint32_t off = f->len;

	put32(f, 0x60000000);
	put16(f, payload);
	put8(f, nh);
	put8(f, 64);
	put(f, src, 16);
	put(f, dst, 16);
	return off;
}

/* Hop-by-hop / routing / destination options header of len8 * 8 + 8. */
static inline void
put_ext(struct frame *f, uint8_t nh, uint8_t len8)
{
	put8(f, nh);
	put8(f, len8);
	put_zero(f, 6 + (uint32_t)len8 * 8);
}

static inline void
put_frag6(struct frame *f, uint8_t nh, uint16_t off8, int more)
{
	put8(f, nh);
	put8(f, 0);
	put16(f, (uint16_t)(off8 << 3 | (more ? 1 : 0)));
	put32(f, 0xabcdef01);
}

static inline void
put_tcp(struct frame *f, uint16_t sport, uint16_t dport, uint32_t payload)
{
	put16(f, sport);
	put16(f, dport);
	put32(f, 1);
	put32(f, 0);
	put8(f, 0x50);
	put8(f, 0x18);
	put16(f, 0xffff);
	put32(f, 0);
	for (uint32_t i = 0; i < payload; i++)
		put8(f, (uint8_t)('a' + i % 26));
}

static inline void
put_udp(struct frame *f, uint16_t sport, uint16_t dport, uint32_t payload)
{
	put16(f, sport);
	put16(f, dport);
	put16(f, (uint16_t)(8 + payload));
	put16(f, 0);
	for (uint32_t i = 0; i < payload; i++)
		put8(f, (uint8_t)i);
}

static const uint8_t v6_a[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				 0,    0,    0,    0,    0, 0, 0, 1};
static const uint8_t v6_b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
				 0,    0,    0,    0,    0, 0, 0, 2};

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (b) << 16 | (c) << 8 | (d))


/* Ethernet / IPv4 / TCP or UDP (or ICMP: ports ignored), payload bytes. */
static inline void
frame_ip4(struct frame *f, uint8_t proto, uint32_t src, uint16_t sport,
	  uint32_t dst, uint16_t dport, uint32_t payload)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, 0x0800, 0, NULL);
	if (proto == IPPROTO_TCP) {
		put_ipv4(f, proto, src, dst, (uint16_t)(20 + payload), 0, 0);
		put_tcp(f, sport, dport, payload);
	} else if (proto == IPPROTO_UDP) {
		put_ipv4(f, proto, src, dst, (uint16_t)(8 + payload), 0, 0);
		put_udp(f, sport, dport, payload);
	} else {
		put_ipv4(f, proto, src, dst, (uint16_t)(8 + payload), 0, 0);
		put32(f, 0x08000000);
		put32(f, 0);
		put_zero(f, payload);
	}
}

/* Ethernet / IPv6 / TCP or UDP (or ICMPv6), payload bytes. */
static inline void
frame_ip6(struct frame *f, uint8_t proto, const uint8_t *src, uint16_t sport,
	  const uint8_t *dst, uint16_t dport, uint32_t payload)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, 0x86DD, 0, NULL);
	if (proto == IPPROTO_TCP) {
		put_ipv6(f, proto, src, dst, (uint16_t)(20 + payload));
		put_tcp(f, sport, dport, payload);
	} else if (proto == IPPROTO_UDP) {
		put_ipv6(f, proto, src, dst, (uint16_t)(8 + payload));
		put_udp(f, sport, dport, payload);
	} else {
		put_ipv6(f, proto, src, dst, (uint16_t)(8 + payload));
		put32(f, 0x80000000);
		put32(f, 0);
		put_zero(f, payload);
	}
}

#endif /* SL_TEST_PKT_BUILD_H */
