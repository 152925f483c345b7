/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounds-checked packet header parsing (include/sluice/pkt.h).
 *
 * sluiced runs this on every packet at ingress, so it is written to be
 * cheap: no allocation, no loops except the bounded IPv6 extension-header
 * walk, byte loads only (no alignment assumptions), and the whole parse
 * inlined into each public function so that info stays in registers.
 *
 * Rules, in the order they are checked:
 * - Ethernet needs 14 bytes; up to two VLAN tags (0x8100, 0x88A8) of 4
 *   bytes each follow. A third tag is not parsed: the frame is then
 *   reported as non-IP with ether_type 0x8100/0x88A8.
 * - IPv4: 20 bytes, version 4, IHL >= 5, IHL*4 bytes present, total
 *   length >= IHL*4. Fragment: MF set or offset != 0; later fragment:
 *   offset != 0 (no L4 header: l4_off = l4_len = 0).
 * - IPv6: 40 bytes, version 6, then hop-by-hop (0), routing (43),
 *   fragment (44) and destination options (60) headers, at most
 *   SL_IPV6_MAX_EXT of them (more is -EINVAL). A fragment header with
 *   offset != 0 marks a later fragment and ends the walk.
 * - The IP datagram ends at the IP total/payload length when that is
 *   inside the frame (the rest is Ethernet padding), else at the frame
 *   end (a capture cut short is still parsed). l4_len counts the bytes
 *   from l4_off to that end.
 * - The L4 header must have its base size in the datagram: TCP 20,
 *   UDP 8, SCTP 12, ICMP/ICMPv6 4; other protocols 0. So after a
 *   successful parse the TCP/UDP/SCTP ports are always readable.
 *
 * On error the fields of info describe the layers parsed before the
 * failing one; the others are 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sluice/pkt.h"

#define SL_ETH_HLEN 14
#define SL_VLAN_HLEN 4
#define SL_IPV4_HLEN 20
#define SL_IPV6_HLEN 40
#define SL_IPV6_EXT_MIN 8
#define SL_IPV6_MAX_EXT 8 /* extension headers walked before giving up */

#define SL_IPV4_MF 0x2000
#define SL_IPV4_OFF_MASK 0x1fff
#define SL_IPV6_FRAG_OFF_MASK 0xfff8
#define SL_IPV6_FRAG_M 0x0001

#define SL_HASH_SEED 0x736c7563u /* "sluc" */

/* The header pointers (sl_pkt_eth() ...) hand out DPDK's structures for
 * the bytes the parser checked: they must be the same sizes. */
_Static_assert(sizeof(struct rte_ether_hdr) == SL_ETH_HLEN, "Ethernet");
_Static_assert(sizeof(struct rte_vlan_hdr) == SL_VLAN_HLEN, "VLAN tag");
_Static_assert(sizeof(struct rte_ipv4_hdr) == SL_IPV4_HLEN, "IPv4");
_Static_assert(sizeof(struct rte_ipv6_hdr) == SL_IPV6_HLEN, "IPv6");
_Static_assert(sizeof(struct rte_tcp_hdr) == 20, "TCP");
_Static_assert(sizeof(struct rte_udp_hdr) == 8, "UDP");

/* Minimum L4 header bytes that must be present, by IP protocol. */
static const uint8_t sl_l4_min[256] = {
	[IPPROTO_TCP] = 20, [IPPROTO_UDP] = 8,    [IPPROTO_SCTP] = 12,
	[IPPROTO_ICMP] = 4, [IPPROTO_ICMPV6] = 4,
};

static inline uint16_t
sl_rd16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline int
sl_has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP ||
	       proto == IPPROTO_SCTP;
}

/* Locates the L4 header at off in a datagram ending at end (off <= end). */
static __rte_always_inline int
sl_parse_l4(struct sl_pkt_info *info, uint32_t off, uint32_t end)
{
	info->l4_off = (uint16_t)off;
	info->l4_len = (uint16_t)(end - off);
	if (unlikely(info->l4_len < sl_l4_min[info->l4_proto]))
		return -EMSGSIZE;
	return 0;
}

static __rte_always_inline int
sl_parse_ipv4(const uint8_t *p, uint32_t off, uint32_t len,
	      struct sl_pkt_info *info)
{
	const uint8_t *ip = p + off;
	uint32_t avail = len - off;
	uint32_t ihl, tot, frag, end;

	if (unlikely(avail < SL_IPV4_HLEN))
		return -EMSGSIZE;
	if (unlikely((ip[0] >> 4) != 4))
		return -EINVAL;
	ihl = (uint32_t)(ip[0] & 0xf) * 4;
	if (unlikely(ihl < SL_IPV4_HLEN))
		return -EINVAL;
	if (unlikely(ihl > avail))
		return -EMSGSIZE;
	tot = sl_rd16(ip + 2);
	if (unlikely(tot < ihl))
		return -EINVAL;

	info->ip_version = 4;
	info->l4_proto = ip[9];
	info->ip_options = ihl > SL_IPV4_HLEN;
	frag = sl_rd16(ip + 6);
	if (unlikely(frag & (SL_IPV4_MF | SL_IPV4_OFF_MASK))) {
		info->fragment = 1;
		if (frag & SL_IPV4_OFF_MASK) {
			info->later_fragment = 1;
			return 0;
		}
	}
	end = tot < avail ? off + tot : len;
	return sl_parse_l4(info, off + ihl, end);
}

static __rte_always_inline int
sl_parse_ipv6(const uint8_t *p, uint32_t off, uint32_t len,
	      struct sl_pkt_info *info)
{
	const uint8_t *ip = p + off;
	uint32_t avail = len - off;
	uint32_t plen, end, hl, i;
	uint16_t fo;
	uint8_t nh;

	if (unlikely(avail < SL_IPV6_HLEN))
		return -EMSGSIZE;
	if (unlikely((ip[0] >> 4) != 6))
		return -EINVAL;
	/* Payload length 0 is a jumbogram (or a lie): trust the frame. */
	plen = sl_rd16(ip + 4);
	end = plen != 0 && plen < avail - SL_IPV6_HLEN
		      ? off + SL_IPV6_HLEN + plen
		      : len;
	info->ip_version = 6;
	nh = ip[6];
	off += SL_IPV6_HLEN;

	for (i = 0;; i++) {
		switch (nh) {
		case IPPROTO_HOPOPTS:
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
			if (unlikely(i == SL_IPV6_MAX_EXT))
				return -EINVAL;
			if (unlikely(end - off < SL_IPV6_EXT_MIN))
				return -EMSGSIZE;
			hl = ((uint32_t)p[off + 1] + 1) * 8;
			if (unlikely(end - off < hl))
				return -EMSGSIZE;
			nh = p[off];
			off += hl;
			info->ip_options = 1;
			break;
		case IPPROTO_FRAGMENT:
			if (unlikely(i == SL_IPV6_MAX_EXT))
				return -EINVAL;
			if (unlikely(end - off < SL_IPV6_EXT_MIN))
				return -EMSGSIZE;
			fo = sl_rd16(p + off + 2);
			nh = p[off];
			off += SL_IPV6_EXT_MIN;
			info->ip_options = 1;
			if (fo & (SL_IPV6_FRAG_OFF_MASK | SL_IPV6_FRAG_M))
				info->fragment = 1;
			if (fo & SL_IPV6_FRAG_OFF_MASK) {
				info->l4_proto = nh;
				info->later_fragment = 1;
				return 0;
			}
			break;
		default:
			info->l4_proto = nh;
			return sl_parse_l4(info, off, end);
		}
	}
}

static __rte_always_inline int
sl_parse_inline(const uint8_t *p, uint32_t len, struct sl_pkt_info *info)
{
	uint32_t off = SL_ETH_HLEN;
	uint16_t type;

	memset(info, 0, sizeof(*info));
	if (unlikely(len > UINT16_MAX))
		len = UINT16_MAX;
	info->frame_len = (uint16_t)len;
	if (unlikely(len < SL_ETH_HLEN))
		return -EMSGSIZE;
	type = sl_rd16(p + 12);
	if (type == SL_ETHER_TYPE_VLAN || type == SL_ETHER_TYPE_QINQ) {
		if (unlikely(len < off + SL_VLAN_HLEN))
			return -EMSGSIZE;
		info->vlan_tci = sl_rd16(p + off);
		type = sl_rd16(p + off + 2);
		off += SL_VLAN_HLEN;
		info->n_vlans = 1;
		if (type == SL_ETHER_TYPE_VLAN || type == SL_ETHER_TYPE_QINQ) {
			if (unlikely(len < off + SL_VLAN_HLEN))
				return -EMSGSIZE;
			type = sl_rd16(p + off + 2);
			off += SL_VLAN_HLEN;
			info->n_vlans = 2;
		}
	}
	info->ether_type = type;
	info->l3_off = (uint16_t)off;
	if (likely(type == SL_ETHER_TYPE_IPV4))
		return sl_parse_ipv4(p, off, len, info);
	if (type == SL_ETHER_TYPE_IPV6)
		return sl_parse_ipv6(p, off, len, info);
	return 0;
}

static __rte_always_inline int
sl_5tuple_from_info(const uint8_t *p, const struct sl_pkt_info *info,
		    struct sl_5tuple *t)
{
	const uint8_t *ip = p + info->l3_off;

	if (info->ip_version == 0)
		return -ENOENT;
	memset(t, 0, sizeof(*t));
	t->proto = info->l4_proto;
	if (info->ip_version == 4) {
		t->family = 4;
		memcpy(&t->src.v4, ip + 12, 4);
		memcpy(&t->dst.v4, ip + 16, 4);
	} else {
		t->family = 6;
		memcpy(t->src.v6, ip + 8, 16);
		memcpy(t->dst.v6, ip + 24, 16);
	}
	/* l4_off is 0 for later fragments; sl_l4_min guarantees 4 bytes. */
	if (sl_has_ports(t->proto) && info->l4_off != 0) {
		memcpy(&t->sport, p + info->l4_off, 2);
		memcpy(&t->dport, p + info->l4_off + 2, 2);
	}
	return 0;
}

/*
 * The common frame in one pass: untagged IPv4 without options, not a
 * fragment, carrying a whole TCP or UDP header. For such a frame it gives
 * exactly what sl_parse_inline() and sl_5tuple_from_info() give (test_pkt's
 * fuzz compares every frame's tuple with one built from sl_parse()); for
 * any other it returns 1 and the caller takes that path. Every packet of a
 * flow-table ingress is parsed on the I/O thread, the port path's
 * bottleneck, so the common frame must not pay for the general parser
 * (see docs/performance.md, port path, "Choices these measurements made",
 * session 18).
 */
static __rte_always_inline int
sl_5tuple_fast(const uint8_t *p, uint32_t len, struct sl_5tuple *t)
{
	const uint8_t *ip = p + SL_ETH_HLEN;
	uint32_t tot, dgram;
	uint8_t proto;

	if (unlikely(len < SL_ETH_HLEN + SL_IPV4_HLEN + 8) ||
	    sl_rd16(p + 12) != SL_ETHER_TYPE_IPV4 ||
	    ip[0] != (4 << 4 | SL_IPV4_HLEN / 4))
		return 1;
	tot = sl_rd16(ip + 2);
	dgram = RTE_MIN(tot, len - SL_ETH_HLEN);
	proto = ip[9];
	if (unlikely(tot < SL_IPV4_HLEN ||
		     (sl_rd16(ip + 6) & (SL_IPV4_MF | SL_IPV4_OFF_MASK)) ||
		     dgram < SL_IPV4_HLEN + (uint32_t)sl_l4_min[proto] ||
		     (proto != IPPROTO_TCP && proto != IPPROTO_UDP)))
		return 1;
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->proto = proto;
	memcpy(&t->src.v4, ip + 12, 4);
	memcpy(&t->dst.v4, ip + 16, 4);
	memcpy(&t->sport, ip + SL_IPV4_HLEN, 2);
	memcpy(&t->dport, ip + SL_IPV4_HLEN + 2, 2);
	return 0;
}

int
sl_parse(const void *data, uint32_t len, struct sl_pkt_info *info)
{
	return sl_parse_inline(data, len, info);
}

/* The 5-tuple of a frame; flow: as the flow director keys it, a
 * fragment's ports 0 (every piece of a datagram: one flow). */
static __rte_always_inline int
tuple_of(const uint8_t *p, uint32_t len, struct sl_5tuple *t, int flow)
{
	struct sl_pkt_info info;
	int rc;

	/* (Not a fragment: nothing to zero for the flow director.) */
	if (likely(sl_5tuple_fast(p, len, t) == 0))
		return 0;
	rc = sl_parse_inline(p, len, &info);
	if (unlikely(rc != 0))
		return rc;
	rc = sl_5tuple_from_info(p, &info, t);
	if (flow && rc == 0 && unlikely(info.fragment))
		t->sport = t->dport = 0;
	return rc;
}

/*
 * On error t is left unspecified (it may be partly written or untouched).
 */
int
sl_5tuple_get(const void *data, uint32_t len, struct sl_5tuple *t)
{
	return tuple_of(data, len, t, 0);
}

/*
 * Symmetric: the (address, port) ends are put in a fixed order before
 * hashing, so A->B and B->A hash the same. Any total order works as long
 * as it depends only on the pair, so raw loads are compared. The two ends
 * are hashed in independent CRC32C chains (the instruction has a latency
 * of several cycles, so two chains run in parallel) and then combined.
 */
uint32_t
sl_5tuple_hash(const struct sl_5tuple *t)
{
	uint32_t seed = SL_HASH_SEED ^ t->proto ^ (uint32_t)t->family << 8;
	uint32_t h1, h2, h;

	if (t->family == 6) {
		uint64_t a[2], b[2], x;
		uint32_t pa = t->sport, pb = t->dport, y;
		int swap;

		memcpy(a, t->src.v6, 16);
		memcpy(b, t->dst.v6, 16);
		swap = a[0] != b[0]   ? a[0] > b[0]
		       : a[1] != b[1] ? a[1] > b[1]
				      : pa > pb;
		if (swap) {
			x = a[0], a[0] = b[0], b[0] = x;
			x = a[1], a[1] = b[1], b[1] = x;
			y = pa, pa = pb, pb = y;
		}
		h1 = rte_hash_crc_8byte(a[0], seed);
		h2 = rte_hash_crc_8byte(b[0], ~seed);
		h1 = rte_hash_crc_8byte(a[1], h1);
		h2 = rte_hash_crc_8byte(b[1], h2);
		h1 = rte_hash_crc_4byte(pa, h1);
		h2 = rte_hash_crc_4byte(pb, h2);
	} else {
		uint64_t a = (uint64_t)t->src.v4 << 16 | t->sport;
		uint64_t b = (uint64_t)t->dst.v4 << 16 | t->dport;

		if (a > b) {
			uint64_t x = a;

			a = b;
			b = x;
		}
		h1 = rte_hash_crc_8byte(a, seed);
		h2 = rte_hash_crc_8byte(b, ~seed);
	}
	h = h1 ^ (h2 << 16 | h2 >> 16);
	return h != 0 ? h : 1;
}

static const char *
sl_proto_name(uint8_t proto, char *tmp, size_t size)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_SCTP:
		return "sctp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmp6";
	default:
		snprintf(tmp, size, "proto-%u", proto);
		return tmp;
	}
}

static void
sl_addr_format(const struct sl_5tuple *t, int src, int port, char *out,
	       size_t size)
{
	char a[INET6_ADDRSTRLEN];
	const void *addr = src ? (const void *)&t->src : (const void *)&t->dst;
	uint16_t p = ntohs(src ? t->sport : t->dport);

	inet_ntop(t->family == 4 ? AF_INET : AF_INET6, addr, a, sizeof(a));
	if (!port)
		snprintf(out, size, "%s", a);
	else if (t->family == 4)
		snprintf(out, size, "%s:%u", a, p);
	else
		snprintf(out, size, "[%s]:%u", a, p);
}

/*
 * Output: "tcp 10.0.0.1:1234 > 192.168.0.1:80",
 * "udp [2001:db8::1]:53 > [2001:db8::2]:5353", "icmp 10.0.0.1 > 10.0.0.2"
 * (ports only for TCP, UDP and SCTP; other protocols as "proto-N").
 *
 * @return the length of the string (without the NUL); -EINVAL if t is not
 *   an IPv4/IPv6 5-tuple or buf is NULL/size 0; -ENOSPC if it was cut
 *   short (buf then holds the truncated, NUL-terminated string).
 */
int
sl_5tuple_format(const struct sl_5tuple *t, char *buf, uint32_t size)
{
	char tmp[16], src[INET6_ADDRSTRLEN + 8], dst[INET6_ADDRSTRLEN + 8];
	int ports, n;

	if (buf == NULL || size == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (t == NULL || (t->family != 4 && t->family != 6))
		return -EINVAL;
	ports = sl_has_ports(t->proto);
	sl_addr_format(t, 1, ports, src, sizeof(src));
	sl_addr_format(t, 0, ports, dst, sizeof(dst));
	n = snprintf(buf, size, "%s %s > %s",
		     sl_proto_name(t->proto, tmp, sizeof(tmp)), src, dst);
	if (n < 0)
		return -EINVAL;
	return (uint32_t)n < size ? n : -ENOSPC;
}

/* "1.2.3.4:80", "[2001:db8::1]:53", or an address alone (no ports). */
static int
sl_addr_parse(const char *s, int ports, struct sl_5tuple *t, int src)
{
	char a[INET6_ADDRSTRLEN + 8];
	const char *colon = NULL;
	unsigned long port = 0;
	void *addr = src ? (void *)&t->src : (void *)&t->dst;
	char *end;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || (size_t)(rb - s - 1) >= sizeof(a))
			return -EINVAL;
		memcpy(a, s + 1, (size_t)(rb - s - 1));
		a[rb - s - 1] = '\0';
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (rb[1] != '\0' && colon == NULL)
			return -EINVAL;
	} else {
		colon = strrchr(s, ':');
		if (colon != NULL && strchr(s, ':') != colon)
			colon = NULL; /* a bare IPv6 address */
		size_t n = colon ? (size_t)(colon - s) : strlen(s);

		if (n >= sizeof(a))
			return -EINVAL;
		memcpy(a, s, n);
		a[n] = '\0';
	}
	if (inet_pton(AF_INET, a, addr) == 1) {
		if (t->family == 6)
			return -EINVAL;
		t->family = 4;
	} else if (inet_pton(AF_INET6, a, addr) == 1) {
		if (t->family == 4)
			return -EINVAL;
		t->family = 6;
	} else {
		return -EINVAL;
	}
	if (ports != (colon != NULL))
		return -EINVAL;
	if (colon != NULL) {
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (errno != 0 || *end != '\0' || colon[1] == '\0' ||
		    port > 65535)
			return -EINVAL;
	}
	if (src)
		t->sport = htons((uint16_t)port);
	else
		t->dport = htons((uint16_t)port);
	return 0;
}

int
sl_5tuple_parse(const char *text, struct sl_5tuple *t)
{
	/* 64 bytes: %63s writes up to 63 characters and the NUL (these were
	 * 62 bytes, and a long address in a flow key overflowed them). */
	char proto[16], src[64], dst[64];
	char gt[4], extra;
	unsigned int pn;

	if (text == NULL || t == NULL)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	if (sscanf(text, "%15s %63s %3s %63s %c", proto, src, gt, dst,
		   &extra) != 4 ||
	    strcmp(gt, ">") != 0)
		return -EINVAL;
	if (strcmp(proto, "tcp") == 0)
		t->proto = IPPROTO_TCP;
	else if (strcmp(proto, "udp") == 0)
		t->proto = IPPROTO_UDP;
	else if (strcmp(proto, "sctp") == 0)
		t->proto = IPPROTO_SCTP;
	else if (strcmp(proto, "icmp") == 0)
		t->proto = IPPROTO_ICMP;
	else if (strcmp(proto, "icmp6") == 0)
		t->proto = IPPROTO_ICMPV6;
	else if (sscanf(proto, "proto-%u%c", &pn, &extra) == 1 && pn < 256)
		t->proto = (uint8_t)pn;
	else
		return -EINVAL;
	if (sl_addr_parse(src, sl_has_ports(t->proto), t, 1) != 0 ||
	    sl_addr_parse(dst, sl_has_ports(t->proto), t, 0) != 0)
		return -EINVAL;
	return 0;
}

int
sl_pkt_parse(const struct rte_mbuf *m, struct sl_pkt_info *info)
{
	return sl_parse_inline(rte_pktmbuf_mtod(m, const uint8_t *),
			       rte_pktmbuf_data_len(m), info);
}

int
sl_pkt_5tuple(const struct rte_mbuf *m, struct sl_5tuple *t)
{
	return tuple_of(rte_pktmbuf_mtod(m, const uint8_t *),
			rte_pktmbuf_data_len(m), t, 0);
}

int
sl_pkt_flow_tuple(const struct rte_mbuf *m, struct sl_5tuple *t)
{
	return tuple_of(rte_pktmbuf_mtod(m, const uint8_t *),
			rte_pktmbuf_data_len(m), t, 1);
}

/*
 * Header pointers. They trust info only to say where a header is and that
 * the parser accepted it; that it lies inside the first segment is checked
 * here, so a stale or hand-made info cannot make them point past the data.
 */
static inline void *
sl_pkt_hdr(const struct rte_mbuf *m, uint32_t off, uint32_t size)
{
	if (unlikely(off + size > rte_pktmbuf_data_len(m)))
		return NULL;
	return rte_pktmbuf_mtod_offset(m, uint8_t *, off);
}

struct rte_ether_hdr *
sl_pkt_eth(const struct rte_mbuf *m)
{
	return sl_pkt_hdr(m, 0, sizeof(struct rte_ether_hdr));
}

struct rte_vlan_hdr *
sl_pkt_vlan(const struct rte_mbuf *m, const struct sl_pkt_info *info,
	    unsigned int idx)
{
	if (idx >= info->n_vlans || idx >= 2)
		return NULL;
	return sl_pkt_hdr(m, SL_ETH_HLEN + idx * SL_VLAN_HLEN,
			  sizeof(struct rte_vlan_hdr));
}

struct rte_ipv4_hdr *
sl_pkt_ipv4(const struct rte_mbuf *m, const struct sl_pkt_info *info)
{
	if (info->ip_version != 4)
		return NULL;
	return sl_pkt_hdr(m, info->l3_off, sizeof(struct rte_ipv4_hdr));
}

struct rte_ipv6_hdr *
sl_pkt_ipv6(const struct rte_mbuf *m, const struct sl_pkt_info *info)
{
	if (info->ip_version != 6)
		return NULL;
	return sl_pkt_hdr(m, info->l3_off, sizeof(struct rte_ipv6_hdr));
}

/* The L4 header of protocol proto and fixed size size, or NULL. l4_off is
 * 0 for later fragments and for packets whose parse stopped before L4. */
static inline void *
sl_pkt_l4(const struct rte_mbuf *m, const struct sl_pkt_info *info,
	  uint8_t proto, uint32_t size)
{
	if (info->ip_version == 0 || info->l4_proto != proto ||
	    info->later_fragment || info->l4_off == 0 || info->l4_len < size)
		return NULL;
	return sl_pkt_hdr(m, info->l4_off, size);
}

struct rte_tcp_hdr *
sl_pkt_tcp(const struct rte_mbuf *m, const struct sl_pkt_info *info)
{
	return sl_pkt_l4(m, info, IPPROTO_TCP, sizeof(struct rte_tcp_hdr));
}

struct rte_udp_hdr *
sl_pkt_udp(const struct rte_mbuf *m, const struct sl_pkt_info *info)
{
	return sl_pkt_l4(m, info, IPPROTO_UDP, sizeof(struct rte_udp_hdr));
}
