/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Bounds-checked packet header helpers.
 *
 * Every parser takes the bytes and their length and never reads past them:
 * a truncated or malformed header yields an error (negative errno), never an
 * out-of-bounds read. Only the first mbuf segment is parsed; headers that
 * straddle segments are reported as truncated.
 */
#ifndef SLUICE_PKT_H
#define SLUICE_PKT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;

#define SL_ETHER_TYPE_IPV4 0x0800
#define SL_ETHER_TYPE_IPV6 0x86DD
#define SL_ETHER_TYPE_VLAN 0x8100
#define SL_ETHER_TYPE_QINQ 0x88A8

/** What sl_parse() found. Offsets are from the start of the frame. */
struct sl_pkt_info {
	uint16_t ether_type; /**< after VLAN tags, host order */
	uint16_t vlan_tci;   /**< outermost VLAN TCI, host order; 0 if none */
	uint8_t n_vlans;     /**< number of VLAN tags (at most 2 parsed) */
	uint8_t ip_version;  /**< 4, 6, or 0 if not IP */
	uint8_t l4_proto;    /**< IPPROTO_* after IPv6 extension headers */
	uint8_t fragment;    /**< 1 if an IP fragment (first or later) */
	uint8_t later_fragment; /**< 1 if not the first fragment: no L4 ports */
	uint8_t ip_options; /**< 1 if IPv4 options / IPv6 ext headers seen */
	uint16_t l3_off;    /**< offset of the IP header */
	uint16_t l4_off;    /**< offset of the L4 header (0 if none) */
	uint16_t l4_len;    /**< bytes available from l4_off to frame end */
	uint16_t frame_len; /**< bytes parsed (data length) */
};

/** A flow key. Addresses and ports in network byte order. */
struct sl_5tuple {
	uint8_t family; /**< 4 or 6 */
	uint8_t proto;  /**< IPPROTO_* */
	uint16_t sport;
	uint16_t dport;
	uint16_t pad;
	union {
		uint32_t v4;
		uint8_t v6[16];
	} src, dst;
};

/**
 * Parses Ethernet, up to two VLAN tags, IPv4 or IPv6 (with extension
 * headers: hop-by-hop, routing, fragment, destination options) and locates
 * the L4 header.
 *
 * @return 0 on success (also for non-IP frames: ip_version is then 0);
 *   -EINVAL for malformed headers (bad IHL, bad version, total length
 *   shorter than the header); -EMSGSIZE for truncated ones.
 */
int sl_parse(const void *data, uint32_t len, struct sl_pkt_info *info);

/**
 * Extracts the 5-tuple of an IP packet. Ports are 0 for protocols without
 * ports and for later fragments. On success all of *t is written (pad and
 * the unused bytes of IPv4 addresses are 0), so it can be a hash key as
 * it is; the tuple is directional (sl_5tuple_hash() is not).
 *
 * @return 0, -ENOENT if the frame is not IP, or an sl_parse() error.
 */
int sl_5tuple_get(const void *data, uint32_t len, struct sl_5tuple *t);

/**
 * Symmetric hash of a 5-tuple: both directions of a connection hash the
 * same. Never returns 0 for an IP 5-tuple.
 */
uint32_t sl_5tuple_hash(const struct sl_5tuple *t);

/** Formats a 5-tuple as "proto src:sport > dst:dport" into buf. */
int sl_5tuple_format(const struct sl_5tuple *t, char *buf, uint32_t size);

/** Turns t around: source and destination (addresses and ports) swapped. */
static inline void
sl_5tuple_swap(struct sl_5tuple *t)
{
	uint16_t p;

	if (t->family == 4) {
		uint32_t v = t->src.v4;

		t->src.v4 = t->dst.v4;
		t->dst.v4 = v;
	} else {
		uint8_t x[16];

		__builtin_memcpy(x, t->src.v6, 16);
		__builtin_memcpy(t->src.v6, t->dst.v6, 16);
		__builtin_memcpy(t->dst.v6, x, 16);
	}
	p = t->sport;
	t->sport = t->dport;
	t->dport = p;
}

/**
 * Puts t in its canonical direction, the one both directions of a
 * connection share as a per-flow table key: the lower address (compared
 * as bytes, network order), then the lower port, as the source.
 *
 * @return 1 if t had to be turned around (sl_5tuple_swap()), else 0.
 */
static inline int
sl_5tuple_canonical(struct sl_5tuple *t)
{
	int c = t->family == 4 ? __builtin_memcmp(&t->src.v4, &t->dst.v4, 4)
			       : __builtin_memcmp(t->src.v6, t->dst.v6, 16);

	if (c < 0 || (c == 0 && t->sport <= t->dport))
		return 0;
	sl_5tuple_swap(t);
	return 1;
}

/**
 * Parses the form sl_5tuple_format() writes ("tcp 10.0.0.1:1234 >
 * 10.0.0.2:80", "udp [2001:db8::1]:53 > [2001:db8::2]:53",
 * "icmp 10.0.0.1 > 10.0.0.2").
 *
 * @return 0, or -EINVAL if the text is not in that form.
 */
int sl_5tuple_parse(const char *text, struct sl_5tuple *t);

/** sl_parse() on the first segment of an mbuf. */
int sl_pkt_parse(const struct rte_mbuf *m, struct sl_pkt_info *info);
/** sl_5tuple_get() on the first segment of an mbuf. */
int sl_pkt_5tuple(const struct rte_mbuf *m, struct sl_5tuple *t);
/**
 * The flow of a packet as sluiced's flow director keys it (flow table,
 * rules, flow-sticky instance choice, sl_flow_of_pkt()): sl_pkt_5tuple(),
 * except that every IP fragment, the first one too, has ports 0. So all
 * the pieces of a datagram are one flow and take one path and one
 * instance (later fragments carry no ports); Open vSwitch's "normal"
 * fragment handling and NICs' RSS hash fragments the same way. An NF
 * matching ports (a firewall) wants sl_pkt_5tuple(), whose first fragment
 * has them.
 *
 * @return 0, or the error of sl_pkt_5tuple().
 */
int sl_pkt_flow_tuple(const struct rte_mbuf *m, struct sl_5tuple *t);

/**
 * @name Header pointers
 *
 * Pointers to the headers sl_pkt_parse() found, inside the first segment
 * of m, or NULL. They do not parse again: pass the sl_pkt_info that
 * sl_pkt_parse() filled for this mbuf. Each helper answers for its own
 * layer: it returns the header if info says the packet has it and the
 * whole fixed-size header lies inside the first segment, else NULL. After
 * sl_pkt_parse() failed, info still describes the layers before the
 * failing one (see sl_parse()), so an IPv4 packet whose TCP header is cut
 * short gives its IPv4 header and no TCP header; check the return code of
 * sl_pkt_parse() if such packets must be left alone. Whatever info holds,
 * no helper returns a header that runs past the first segment.
 *
 * The mbuf is const because finding a header only reads it; the header is
 * returned writable (as strchr() does), for NFs that declare
 * SL_ACCESS_WRITE and rewrite headers in place. The structures are DPDK's
 * (rte_ether.h, rte_ip.h, rte_tcp.h, rte_udp.h): include those to use the
 * fields. Multi-byte fields are in network byte order.
 * @{
 */
struct rte_ether_hdr;
struct rte_vlan_hdr;
struct rte_ipv4_hdr;
struct rte_ipv6_hdr;
struct rte_tcp_hdr;
struct rte_udp_hdr;

/**
 * The Ethernet header: NULL if the first segment is shorter than 14 bytes.
 * Needs no sl_pkt_info. Its ether_type is the first one (a TPID if the
 * frame is tagged); sl_pkt_info.ether_type is the one after the tags.
 */
struct rte_ether_hdr *sl_pkt_eth(const struct rte_mbuf *m);

/**
 * VLAN tag idx (0 = outermost, just after the MAC addresses): its TCI and
 * the ethertype that follows it. NULL if idx >= info->n_vlans (at most 2
 * tags are parsed). The tag's own TPID (0x8100 or 0x88A8) is the
 * ethertype before it: the Ethernet header's for tag 0, tag 0's
 * eth_proto for tag 1.
 */
struct rte_vlan_hdr *sl_pkt_vlan(const struct rte_mbuf *m,
				 const struct sl_pkt_info *info,
				 unsigned int idx);

/**
 * The IPv4 header at info->l3_off: NULL unless info->ip_version is 4. The
 * parser accepted its version, IHL (the info->ip_options bytes of options
 * are present too) and total length.
 */
struct rte_ipv4_hdr *sl_pkt_ipv4(const struct rte_mbuf *m,
				 const struct sl_pkt_info *info);

/**
 * The fixed IPv6 header (40 bytes) at info->l3_off: NULL unless
 * info->ip_version is 6. Extension headers, if any (info->ip_options),
 * lie between it and info->l4_off.
 */
struct rte_ipv6_hdr *sl_pkt_ipv6(const struct rte_mbuf *m,
				 const struct sl_pkt_info *info);

/**
 * The TCP header at info->l4_off: NULL unless the packet is IPv4 or IPv6
 * carrying TCP (after any IPv6 extension headers), is not a later
 * fragment (which has no TCP header) and has the whole 20-byte fixed
 * header inside its datagram (info->l4_len >= 20). TCP options are not
 * checked: (data_off >> 4) * 4 may exceed info->l4_len.
 */
struct rte_tcp_hdr *sl_pkt_tcp(const struct rte_mbuf *m,
			       const struct sl_pkt_info *info);

/**
 * The UDP header at info->l4_off: as sl_pkt_tcp(), for UDP and its 8-byte
 * header. dgram_len is not checked against info->l4_len.
 */
struct rte_udp_hdr *sl_pkt_udp(const struct rte_mbuf *m,
			       const struct sl_pkt_info *info);
/** @} */

/**
 * @name Incremental checksum update (RFC 1624)
 *
 * An NF that rewrites a field an Internet checksum covers (an address,
 * a port, the TTL, the DSCP, an ICMP type) updates the checksum with
 * RFC 1624's eqn. 3, HC' = ~(~HC + ~m + m'), rather than summing the
 * whole header or datagram again. The one's complement sum does not care
 * about byte order (RFC 1071): the checksum, the old and the new words
 * only have to be in the same order, so words taken from the packet as
 * they are stored (memcpy of 2 bytes, network order) and the checksum
 * field as stored give the field to store. The caller guarantees that
 * the checksum was right before the change (as a full computation gave
 * it): then the result is to the bit what a full computation over the
 * changed bytes gives (RFC 1624 section 3; tests/unit/test_pkt_cksum.c
 * checks it). These read and write nothing: the caller rewrites the field
 * and stores the checksum.
 * @{
 */

/**
 * The sum of ~m + m' over a field of len bytes changing from old to new,
 * 16-bit words as they are in memory: computed once per rewrite, then
 * given to sl_cksum_apply() for each checksum that covers the field.
 * len is even and at most 65534 (the sum cannot overflow); old and new
 * may be unaligned and must not overlap the bytes being written (copy
 * the old field first). Constant lengths (4, 16) unroll at -O2.
 */
static inline uint32_t
sl_cksum_delta(const void *old, const void *new, unsigned int len)
{
	const uint8_t *o = (const uint8_t *)old, *n = (const uint8_t *)new;
	uint32_t s = 0;

	for (unsigned int i = 0; i < len; i += 2) {
		uint16_t ow, nw;

		__builtin_memcpy(&ow, o + i, 2);
		__builtin_memcpy(&nw, n + i, 2);
		s += (uint16_t)~ow;
		s += nw;
	}
	return s;
}

/**
 * The checksum cksum (in the order of the words summed into delta) after
 * the change whose sl_cksum_delta() is delta.
 */
static inline uint16_t
sl_cksum_apply(uint16_t cksum, uint32_t delta)
{
	uint32_t s = (uint32_t)(uint16_t)~cksum + delta;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/**
 * The checksum cksum after one 16-bit word changes from old_word to
 * new_word (all three in the same byte order, e.g. as stored).
 */
static inline uint16_t
sl_cksum_update16(uint16_t cksum, uint16_t old_word, uint16_t new_word)
{
	return sl_cksum_apply(cksum, (uint32_t)(uint16_t)~old_word + new_word);
}

/**
 * sl_cksum_apply() for a UDP checksum (RFC 768): 0 means the datagram
 * carries none and stays 0; a computed 0 is sent as 0xffff.
 */
static inline uint16_t
sl_cksum_apply_udp(uint16_t cksum, uint32_t delta)
{
	if (cksum == 0)
		return 0;
	cksum = sl_cksum_apply(cksum, delta);
	return cksum == 0 ? 0xffff : cksum;
}
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_PKT_H */
