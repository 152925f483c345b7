/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat's packet rewriting: addresses, ports and ICMP echo
 * identifiers, with every checksum they are in updated incrementally
 * (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')), the IPv4 header's, TCP's
 * and UDP's (whose pseudo-header holds the addresses; a UDP checksum of 0,
 * "none", stays 0 and a computed 0 is sent as 0xffff), ICMP's; and ICMP
 * errors (unreachable, time exceeded, parameter problem) whose embedded
 * header belongs to a mapping: the embedded header, its checksums, the
 * outer ICMP checksum and the outer address. Fields are read and written
 * through memcpy: a header may sit at any alignment.
 */
#include <string.h>

#include <netinet/in.h>

#include <rte_mbuf.h>

#include "sluice/pkt.h"

#include "nat.h"

#define NAT_TCP_FIN 0x01
#define NAT_TCP_SYN 0x02
#define NAT_TCP_RST 0x04
#define NAT_TCP_ACK 0x10

#define NAT_ICMP_ECHO_REPLY 0
#define NAT_ICMP_UNREACH 3
#define NAT_ICMP_ECHO 8
#define NAT_ICMP_TIME_EXCEEDED 11
#define NAT_ICMP_PARAM_PROBLEM 12

/* A checksum to keep right while fields change; udp: 0 means none. */
struct nat_ck {
	uint8_t *p;
	int udp;
};

static inline uint16_t
rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline void
wr16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline uint32_t
rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* RFC 1624 eqn. 3 for one 16-bit word (any byte order, as stored):
 * sl_cksum_*() of sluice/pkt.h. */
static inline void
ck_fix(const struct nat_ck *c, uint16_t old, uint16_t new)
{
	uint16_t v;

	if (c->p == NULL)
		return;
	v = rd16(c->p);
	if (c->udp && v == 0)
		return; /* no checksum */
	v = sl_cksum_update16(v, old, new);
	if (c->udp && v == 0)
		v = 0xffff;
	wr16(c->p, v);
}

/* Writes v at f and updates the n checksums over it. */
static inline void
set16(uint8_t *f, uint16_t v, const struct nat_ck *cks, unsigned n)
{
	uint16_t old = rd16(f);

	wr16(f, v);
	for (unsigned i = 0; i < n; i++)
		ck_fix(&cks[i], old, v);
}

static inline void
set32(uint8_t *f, uint32_t v, const struct nat_ck *cks, unsigned n)
{
	uint8_t b[4];

	memcpy(b, &v, 4);
	set16(f, rd16(b), cks, n);
	set16(f + 2, rd16(b + 2), cks, n);
}

/* TCP: the timer class after a packet with these flags going dir. */
static void
nat_tcp_track(struct nat_map *mp, uint8_t flags, enum nat_dir dir)
{
	if (flags & NAT_TCP_RST)
		mp->timer = NAT_T_TCP_RST;
	else if (flags & NAT_TCP_FIN)
		mp->timer = mp->timer == NAT_T_TCP_RST ? NAT_T_TCP_RST
						       : NAT_T_TCP_FIN;
	/* A SYN of the opening side after a close: the same ports, a new
	 * connection. */
	else if ((flags & (NAT_TCP_SYN | NAT_TCP_ACK)) == NAT_TCP_SYN &&
		 dir == mp->orig && mp->timer >= NAT_T_TCP_FIN)
		mp->timer = NAT_T_TCP_SYN;
	else if (mp->timer == NAT_T_TCP_SYN && dir != mp->orig)
		mp->timer = NAT_T_TCP_EST;
}

/* Rewrites a TCP or UDP packet of mapping mp going dir. */
static void
nat_rewrite_l4(uint8_t *ip, uint8_t *l4, uint8_t proto,
	       const struct nat_map *mp, enum nat_dir dir)
{
	struct nat_ck ck[2] = {
		{ip + 10, 0},
		{proto == IPPROTO_TCP ? l4 + 16 : l4 + 6, proto == IPPROTO_UDP},
	};

	if (dir == NAT_OUT) {
		set32(ip + 12, mp->ext_addr, ck, 2);
		set16(l4, mp->ext_port, ck + 1, 1);
	} else {
		set32(ip + 16, mp->int_addr, ck, 2);
		set16(l4 + 2, mp->int_port, ck + 1, 1);
	}
}

static int
nat_tcp_udp(struct nat_state *st, uint8_t *ip, uint8_t *l4, uint8_t proto,
	    enum nat_dir dir, uint64_t now, uint32_t fh)
{
	uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
	uint16_t sport = rd16(l4), dport = rd16(l4 + 2);
	uint8_t flags = proto == IPPROTO_TCP ? l4[13] : 0;
	enum nat_drop why = NAT_D_NO_MAPPING;
	struct nat_map *mp;

	mp = nat_find_pkt(st, dir, proto, src, sport, dst, dport, now, fh);
	if (mp == NULL && !(flags & NAT_TCP_RST)) {
		mp = dir == NAT_OUT ? nat_snat_new(st, proto, src, sport, dst,
						   dport, now, &why)
				    : nat_dnat_new(st, proto, src, sport, dst,
						   dport, now, &why);
		if (mp != NULL)
			nat_cache_put(st, fh, mp);
	}
	if (mp == NULL)
		return (int)why;
	if (proto == IPPROTO_TCP)
		nat_tcp_track(mp, flags, dir);
	mp->expire_ns = now + st->timeout_ns[mp->timer];
	mp->pkts[dir]++;
	nat_rewrite_l4(ip, l4, proto, mp, dir);
	if (dir == NAT_OUT && mp->hairpin) {
		/* To one of NAT's own addresses: it comes in again, as if
		 * from outside (a forward, or the mapping of the inside host
		 * that sent it), and goes back inside (RFC 4787 REQ-9). */
		int rc = nat_tcp_udp(st, ip, l4, proto, NAT_IN, now, 0);

		if (rc != NAT_D_MAX)
			return rc;
		st->cnt.hairpins++;
		return NAT_HAIRPIN;
	}
	return NAT_D_MAX;
}

/* An echo request going out or its reply coming in. */
static int
nat_echo(struct nat_state *st, uint8_t *ip, uint8_t *l4, enum nat_dir dir,
	 uint64_t now, uint32_t fh)
{
	uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
	uint16_t id = rd16(l4 + 4);
	enum nat_drop why = NAT_D_NO_MAPPING;
	struct nat_ck ipck = {ip + 10, 0}, icmpck = {l4 + 2, 0};
	struct nat_map *mp;

	if (dir == NAT_OUT) {
		mp = nat_find_pkt(st, dir, IPPROTO_ICMP, src, id, dst, 0, now,
				  fh);
		if (mp == NULL) {
			mp = nat_snat_new(st, IPPROTO_ICMP, src, id, dst, 0,
					  now, &why);
			if (mp != NULL)
				nat_cache_put(st, fh, mp);
		}
	} else {
		mp = nat_find_pkt(st, dir, IPPROTO_ICMP, src, 0, dst, id, now,
				  fh);
	}
	if (mp == NULL)
		return (int)why;
	mp->expire_ns = now + st->timeout_ns[NAT_T_ICMP];
	mp->pkts[dir]++;
	if (dir == NAT_OUT) {
		set32(ip + 12, mp->ext_addr, &ipck, 1);
		set16(l4 + 4, mp->ext_port, &icmpck, 1);
	} else {
		set32(ip + 16, mp->int_addr, &ipck, 1);
		set16(l4 + 4, mp->int_port, &icmpck, 1);
	}
	return NAT_D_MAX;
}

/* The header an ICMP error carries: the packet that caused it. */
struct nat_inner {
	uint8_t *ip, *l4;
	uint8_t proto;
	uint16_t sport, dport; /* echo: the identifier as sport (request) or
				  dport (reply) */
	uint8_t *port;         /* the field nat rewrites */
	struct nat_ck l4ck;    /* the embedded L4 checksum, if carried */
};

static int
nat_inner_parse(uint8_t *l4, uint32_t avail, enum nat_dir dir,
		struct nat_inner *in)
{
	uint32_t ihl, left;

	if (avail < 8 + 20)
		return NAT_D_MALFORMED;
	in->ip = l4 + 8;
	ihl = (uint32_t)(in->ip[0] & 0xf) * 4;
	if ((in->ip[0] >> 4) != 4 || ihl < 20 || avail < 8 + ihl + 8)
		return NAT_D_MALFORMED;
	in->l4 = in->ip + ihl;
	left = avail - 8 - ihl;
	in->proto = in->ip[9];
	if (in->proto == IPPROTO_TCP || in->proto == IPPROTO_UDP) {
		in->sport = rd16(in->l4);
		in->dport = rd16(in->l4 + 2);
		/* The ports the mapping changed: the source of what went
		 * out, the destination of what came in. */
		in->port = dir == NAT_IN ? in->l4 : in->l4 + 2;
		in->l4ck.udp = in->proto == IPPROTO_UDP;
		in->l4ck.p = in->proto == IPPROTO_UDP ? in->l4 + 6
			     : left >= 18             ? in->l4 + 16
						      : NULL;
		return NAT_D_MAX;
	}
	if (in->proto != IPPROTO_ICMP)
		return NAT_D_PROTO;
	if (in->l4[0] == NAT_ICMP_ECHO) {
		in->sport = rd16(in->l4 + 4);
		in->dport = 0;
	} else if (in->l4[0] == NAT_ICMP_ECHO_REPLY) {
		in->sport = 0;
		in->dport = rd16(in->l4 + 4);
	} else {
		return NAT_D_ICMP_TYPE;
	}
	in->port = in->l4 + 4;
	in->l4ck = (struct nat_ck){in->l4 + 2, 0};
	return NAT_D_MAX;
}

/*
 * An ICMP error about a translated packet: coming in, it is about one
 * that went out (embedded source = ext_addr:ext_port), going out about
 * one that came in (embedded destination = int_addr:int_port). The
 * embedded packet, reversed, is a key of the mapping.
 */
static int
nat_icmp_error(struct nat_state *st, uint8_t *ip, uint8_t *l4, uint32_t avail,
	       enum nat_dir dir, uint64_t now)
{
	struct nat_ck outer = {l4 + 2, 0}, oip = {ip + 10, 0};
	struct nat_ck cks[3];
	struct nat_inner in;
	struct nat_map *mp;
	uint16_t old_ipck, old_l4ck = 0;
	uint32_t addr;
	uint16_t port;
	int rc = nat_inner_parse(l4, avail, dir, &in);

	if (rc != NAT_D_MAX)
		return rc;
	mp = nat_find(st, dir, in.proto, rd32(in.ip + 16), in.dport,
		      rd32(in.ip + 12), in.sport, now);
	/* The error is addressed to the packet's sender. */
	if (mp == NULL || rd32(dir == NAT_IN ? ip + 16 : ip + 12) !=
				  rd32(dir == NAT_IN ? in.ip + 12 : in.ip + 16))
		return NAT_D_NO_MAPPING;
	addr = dir == NAT_IN ? mp->int_addr : mp->ext_addr;
	port = dir == NAT_IN ? mp->int_port : mp->ext_port;
	old_ipck = rd16(in.ip + 10);
	if (in.l4ck.p != NULL)
		old_l4ck = rd16(in.l4ck.p);
	cks[0] = (struct nat_ck){in.ip + 10, 0};
	cks[1] = outer;
	cks[2] = in.proto == IPPROTO_ICMP ? (struct nat_ck){NULL, 0} : in.l4ck;
	set32(dir == NAT_IN ? in.ip + 12 : in.ip + 16, addr, cks, 3);
	cks[0] = outer;
	cks[1] = in.l4ck;
	set16(in.port, port, cks, 2);
	/* The embedded checksums are words of the outer ICMP message too. */
	ck_fix(&outer, old_ipck, rd16(in.ip + 10));
	if (in.l4ck.p != NULL)
		ck_fix(&outer, old_l4ck, rd16(in.l4ck.p));
	set32(dir == NAT_IN ? ip + 16 : ip + 12, addr, &oip, 1);
	st->cnt.icmp_errors++;
	return NAT_D_MAX;
}

static int
nat_icmp(struct nat_state *st, uint8_t *ip, uint8_t *l4, uint32_t avail,
	 enum nat_dir dir, uint64_t now, uint32_t fh)
{
	if (avail < 8)
		return NAT_D_MALFORMED;
	switch (l4[0]) {
	case NAT_ICMP_ECHO:
		return dir == NAT_OUT ? nat_echo(st, ip, l4, dir, now, fh)
				      : NAT_D_NO_MAPPING;
	case NAT_ICMP_ECHO_REPLY:
		return dir == NAT_IN ? nat_echo(st, ip, l4, dir, now, fh)
				     : NAT_D_NO_MAPPING;
	case NAT_ICMP_UNREACH:
	case NAT_ICMP_TIME_EXCEEDED:
	case NAT_ICMP_PARAM_PROBLEM:
		return nat_icmp_error(st, ip, l4, avail, dir, now);
	default:
		return NAT_D_ICMP_TYPE;
	}
}

/* How long a datagram's later fragments are waited for (Linux's
 * ipfrag_time). */
#define NAT_FRAG_NS (30ull * 1000000000ull)

/* A later fragment: the address its first fragment got, or a drop. */
static int
nat_frag_later(struct nat_state *st, uint8_t *ip, uint8_t proto,
	       enum nat_dir dir, uint64_t now)
{
	uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
	uint16_t id = rd16(ip + 4);
	struct nat_frag *f = nat_frag_slot(st, src, dst, id, proto, dir);
	struct nat_ck ipck = {ip + 10, 0};

	if (f->expire_ns <= now || f->src != src || f->dst != dst ||
	    f->ip_id != id || f->proto != proto || f->dir != dir)
		return NAT_D_FRAGMENT;
	set32(dir == NAT_OUT ? ip + 12 : ip + 16, f->new_addr, &ipck, 1);
	return NAT_D_MAX;
}

/* A first fragment was translated: remember it for the later ones (an
 * entry another datagram held is taken over). */
static void
nat_frag_first(struct nat_state *st, const uint8_t *ip, uint32_t src,
	       uint32_t dst, uint8_t proto, enum nat_dir dir, uint64_t now)
{
	uint16_t id = rd16(ip + 4);
	struct nat_frag *f = nat_frag_slot(st, src, dst, id, proto, dir);

	*f = (struct nat_frag){
		.src = src,
		.dst = dst,
		.ip_id = id,
		.proto = proto,
		.dir = (uint8_t)dir,
		.new_addr = rd32(dir == NAT_OUT ? ip + 12 : ip + 16),
		.expire_ns = now + NAT_FRAG_NS,
	};
}

static int
nat_l4(struct nat_state *st, struct rte_mbuf *m, const struct sl_pkt_info *info,
       uint8_t *ip, uint8_t *l4, enum nat_dir dir, uint64_t now)
{
	uint32_t fh = sl_pkt_flow_hash(m); /* computed once, by sluiced */

	switch (info->l4_proto) {
	case IPPROTO_TCP:
		if (sl_pkt_tcp(m, info) == NULL)
			return NAT_D_MALFORMED;
		return nat_tcp_udp(st, ip, l4, IPPROTO_TCP, dir, now, fh);
	case IPPROTO_UDP:
		if (sl_pkt_udp(m, info) == NULL)
			return NAT_D_MALFORMED;
		return nat_tcp_udp(st, ip, l4, IPPROTO_UDP, dir, now, fh);
	case IPPROTO_ICMP:
		return nat_icmp(st, ip, l4, info->l4_len, dir, now, fh);
	default:
		return NAT_D_PROTO;
	}
}

int
nat_xlate(struct nat_state *st, struct rte_mbuf *m, enum nat_dir dir,
	  uint64_t now)
{
	struct sl_pkt_info info;
	uint8_t *data, *ip, *l4, proto;
	uint32_t src, dst;
	int rc;

	if (sl_pkt_parse(m, &info) != 0)
		return info.ip_version == 4 || info.ip_version == 0
			       ? NAT_D_MALFORMED
			       : NAT_D_NOT_IPV4;
	if (info.ip_version != 4)
		return NAT_D_NOT_IPV4;
	data = rte_pktmbuf_mtod(m, uint8_t *);
	ip = data + info.l3_off;
	l4 = data + info.l4_off;
	proto = ip[9];
	if (info.later_fragment)
		return proto == IPPROTO_TCP || proto == IPPROTO_UDP ||
				       proto == IPPROTO_ICMP
			       ? nat_frag_later(st, ip, proto, dir, now)
			       : NAT_D_PROTO;
	src = rd32(ip + 12);
	dst = rd32(ip + 16);
	rc = nat_l4(st, m, &info, ip, l4, dir, now);
	if (rc >= NAT_D_MAX && info.fragment)
		nat_frag_first(st, ip, src, dst, proto, dir, now);
	return rc;
}
