/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-l3fwd: an IPv4 and IPv6 router (NetVM §5.1's L3 forwarder).
 * Longest-prefix match on rte_lpm / rte_lpm6 (routes.c) gives the egress
 * port and the next hop's MAC; the packet leaves with its destination MAC
 * set to the next hop, its source MAC to the port's, its TTL or hop limit
 * one lower (the IPv4 checksum updated incrementally, RFC 1624) and the
 * verdict SL_OUT(port). A TTL that runs out, or no route, drops the packet
 * and sends an ICMP time exceeded / destination unreachable back out of
 * the ingress port, from the router's address there (icmp.c), made in a
 * packet of sl_nf_pktmbuf_pool() and sent with sl_nf_send(), at most
 * --icmp-rate a second (a token bucket of --icmp-burst).
 *
 * SIGHUP re-reads the routes file: a thread reads it and builds new tables
 * while packets go on through the old ones, and the NF thread swaps them
 * between two bursts (l3_reload_poll(), from process and tick); a bad file
 * keeps the old routes and says why, naming the line.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "icmp.h"
#include "routes.h"

#define L3_PROG "sluice-l3fwd"
#define L3_TICK_MS 10 /* how often an idle NF looks for a finished build */
#define L3_ICMP_BATCH 32
#define L3_NS 1000000000ull
#define L3_MS 1000000ull

/* Counters; single writer (the NF thread). */
struct l3_counters {
	uint64_t pkts, bytes;
	uint64_t forwarded;
	uint64_t fwd_port[L3_MAX_PORTS];
	uint64_t no_route, ttl_exceeded, icmp_sent, icmp_ratelimited;
	uint64_t icmp_failed, non_ip, malformed, local, echo_replies;
	uint64_t neigh_replies;
};

/* A reload in progress, as the firewall's: the builder reads and builds
 * the file in its own thread; the NF thread sees done and takes table. */
struct l3_build {
	pthread_t thread;
	struct sl_nf *nf;
	const char *path;
	struct l3_limits lim;
	unsigned gen;
	int done; /* release/acquire */
	int rc;
	struct l3_table *table;
	char err[L3_ERR_LEN];
};

/* The NF's private context (libsluice stores the options in it). */
struct l3_state {
	const char *routes_path; /* --routes */
	uint32_t max_routes, tbl8_v4, tbl8_v6;
	uint32_t icmp_rate, icmp_burst;
	uint64_t stats_ms;
	struct sl_nf *nf;
	struct l3_table *table;
	struct l3_build *build;
	int reload_again;
	unsigned gen;
	/* the ICMP token bucket, in nanotokens (1e9 per ICMP) */
	uint64_t bucket, bucket_max, bucket_ns;
	uint16_t icmp_id;
	uint16_t n_icmp;
	struct rte_mbuf *icmp[L3_ICMP_BATCH];
	struct sl_stats_line stats;
	char port_name[L3_MAX_PORTS][32];
	struct l3_counters c;
};

/* ---- ICMP errors ---------------------------------------------------- */

/* Takes a token from the bucket, refilled at --icmp-rate: 1, or 0 (and
 * counted) when it is empty. */
static int
l3_icmp_token(struct l3_state *st)
{
	uint64_t now = sl_now_ns(), dt = now - st->bucket_ns;

	if (now < st->bucket_ns)
		dt = 0;
	if (dt > 1000 * L3_NS)
		dt = 1000 * L3_NS;
	st->bucket_ns = now;
	st->bucket += dt * st->icmp_rate;
	if (st->bucket > st->bucket_max)
		st->bucket = st->bucket_max;
	if (st->icmp_rate == 0 || st->bucket < L3_NS) {
		st->c.icmp_ratelimited++;
		return 0;
	}
	st->bucket -= L3_NS;
	return 1;
}

static void
l3_icmp_flush(struct l3_state *st)
{
	if (st->n_icmp == 0)
		return;
	sl_nf_send(st->nf, st->icmp, st->n_icmp);
	st->n_icmp = 0;
}

/* Whether an ICMP error may be sent about this packet (RFC 1812 4.3.2.7,
 * RFC 4443 2.4 (e)): not about an ICMP error, a later fragment, a
 * packet to a link-layer multicast or from a non-unicast source. */
static int
l3_icmp_allowed(const struct rte_mbuf *m, const struct sl_pkt_info *info,
		const uint8_t *src, int v6)
{
	const struct rte_ether_hdr *eth = sl_pkt_eth(m);
	const uint8_t *l4 = rte_pktmbuf_mtod(m, const uint8_t *) + info->l4_off;

	if (rte_is_multicast_ether_addr(&eth->dst_addr) || info->later_fragment)
		return 0;
	if (!v6) {
		if (src[0] == 0 || src[0] == 127 || src[0] >= 224)
			return 0;
		if (info->l4_proto == IPPROTO_ICMP &&
		    (info->l4_off == 0 || info->l4_len < 1 ||
		     (l4[0] != 0 && l4[0] != 8 && l4[0] != 13 && l4[0] != 14)))
			return 0; /* an error (or unknown): never answered */
		return 1;
	}
	static const uint8_t zero[16];

	if (src[0] == 0xff || memcmp(src, zero, 16) == 0)
		return 0;
	if (info->l4_proto == IPPROTO_ICMPV6 &&
	    (info->l4_off == 0 || info->l4_len < 1 || l4[0] < 128))
		return 0;
	return 1;
}

/*
 * Sends an ICMP error of type and code about m back out of its ingress
 * port, if allowed, a token is left, and the port has an address of the
 * family (else any port's); the frame goes with the next flush.
 */
static void
l3_icmp_error(struct l3_state *st, struct rte_mbuf *m,
	      const struct sl_pkt_info *info, int v6, uint8_t type,
	      uint8_t code)
{
	const struct l3_table *t = st->table;
	const uint8_t *ip = rte_pktmbuf_mtod(m, const uint8_t *) + info->l3_off;
	const uint8_t *src = ip + (v6 ? 8 : 12);
	uint16_t in = sl_pkt_in_port(m);
	uint32_t avail = info->frame_len - info->l3_off, len;
	struct l3_icmp_addrs a;
	const struct l3_port *pt;
	struct rte_mbuf *e;
	uint8_t *buf;
	int from;

	if (!l3_icmp_allowed(m, info, src, v6))
		return;
	from = in < L3_MAX_PORTS &&
			       (v6 ? t->ports[in].has_v6 : t->ports[in].has_v4)
		       ? in
		       : (v6 ? t->any_v6 : t->any_v4);
	if (in >= L3_MAX_PORTS || !t->ports[in].used || from < 0) {
		st->c.icmp_failed++;
		return;
	}
	if (!l3_icmp_token(st))
		return;
	e = rte_pktmbuf_alloc(sl_nf_pktmbuf_pool(st->nf));
	buf = e ? (uint8_t *)rte_pktmbuf_append(e, L3_ICMP_MAX_FRAME) : NULL;
	if (buf == NULL) {
		rte_pktmbuf_free(e);
		st->c.icmp_failed++;
		return;
	}
	pt = &t->ports[from];
	a.src_mac = t->ports[in].mac;
	a.dst_mac = sl_pkt_eth(m)->src_addr;
	memset(a.src_ip, 0, sizeof(a.src_ip));
	if (v6)
		memcpy(a.src_ip, pt->v6, 16);
	else
		memcpy(a.src_ip, &pt->v4, 4);
	memcpy(a.dst_ip, src, v6 ? 16 : 4);
	/* The datagram without the Ethernet padding after it. */
	len = v6 ? 40u + rte_be_to_cpu_16(
				 ((const struct rte_ipv6_hdr *)ip)->payload_len)
		 : rte_be_to_cpu_16(
			   ((const struct rte_ipv4_hdr *)ip)->total_length);
	if (len > avail)
		len = avail;
	e->data_len =
		(uint16_t)(v6 ? l3_icmp6_build(buf, &a, type, code, ip, len)
			      : l3_icmp4_build(buf, &a, type, code,
					       st->icmp_id++, ip, len));
	e->pkt_len = e->data_len;
	sl_pkt_set_verdict(e, SL_OUT(in));
	st->icmp[st->n_icmp++] = e;
	st->c.icmp_sent++;
	if (st->n_icmp == L3_ICMP_BATCH)
		l3_icmp_flush(st);
}

/* ---- forwarding ----------------------------------------------------- */

static inline sl_verdict_t
l3_out(struct l3_state *st, struct rte_mbuf *m, const struct l3_nh *nh)
{
	struct rte_ether_hdr *eth = sl_pkt_eth(m);

	eth->dst_addr = nh->dst;
	eth->src_addr = nh->src;
	st->c.forwarded++;
	st->c.fwd_port[nh->port]++;
	return SL_OUT(nh->port);
}

/* The router's own address on some port: not forwarded. */
static int
l3_is_mine4(const struct l3_table *t, uint32_t dst)
{
	for (uint32_t i = 0; i < t->n_mine4; i++)
		if (t->mine4[i] == dst)
			return 1;
	return 0;
}

static int
l3_is_mine6(const struct l3_table *t, const uint8_t *dst)
{
	for (uint32_t i = 0; i < t->n_mine6; i++)
		if (memcmp(t->mine6[i], dst, 16) == 0)
			return 1;
	return 0;
}

/* To the router: an echo request (no options or extension headers, not
 * a fragment) is answered in place, out of the ingress port; anything else
 * is dropped as local. */
static sl_verdict_t
l3_to_me(struct l3_state *st, struct rte_mbuf *m,
	 const struct sl_pkt_info *info, int v6)
{
	const struct l3_table *t = st->table;
	uint16_t in = sl_pkt_in_port(m);
	uint8_t *l4 = rte_pktmbuf_mtod(m, uint8_t *) + info->l4_off;

	if (in >= L3_MAX_PORTS || !t->ports[in].used || info->fragment ||
	    info->ip_options || info->l4_off == 0 || info->l4_len < 8 ||
	    info->l4_proto != (v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP) ||
	    l4[0] != (v6 ? 128 : 8) || l4[1] != 0) {
		st->c.local++;
		return SL_DROP;
	}
	if (v6)
		l3_echo6_reply(sl_pkt_eth(m), sl_pkt_ipv6(m, info), l4,
			       &t->ports[in].mac);
	else
		l3_echo4_reply(sl_pkt_eth(m), sl_pkt_ipv4(m, info), l4,
			       &t->ports[in].mac);
	st->c.echo_replies++;
	return SL_OUT(in);
}

/* The ingress port, if the routes file names it, else NULL. */
static const struct l3_port *
l3_in_port(const struct l3_state *st, const struct rte_mbuf *m)
{
	uint16_t in = sl_pkt_in_port(m);

	return in < L3_MAX_PORTS && st->table->ports[in].used
		       ? &st->table->ports[in]
		       : NULL;
}

/* An ARP request for the ingress port's IPv4 address: answered in place;
 * any other frame that is not IP is dropped. */
static sl_verdict_t
l3_not_ip(struct l3_state *st, struct rte_mbuf *m)
{
	const struct l3_port *p = l3_in_port(st, m);

	if (p != NULL && p->has_v4 &&
	    l3_arp_reply(rte_pktmbuf_mtod(m, uint8_t *), m->data_len, p->v4,
			 &p->mac)) {
		st->c.neigh_replies++;
		return SL_OUT(sl_pkt_in_port(m));
	}
	st->c.non_ip++;
	return SL_DROP;
}

/* A neighbour solicitation for the ingress port's IPv6 address: 1 when
 * it was turned into the advertisement. */
static int
l3_ns(struct l3_state *st, struct rte_mbuf *m, const struct sl_pkt_info *info,
      struct rte_ipv6_hdr *ip)
{
	const struct l3_port *p = l3_in_port(st, m);
	uint32_t len = rte_be_to_cpu_16(ip->payload_len);

	if (p == NULL || !p->has_v6 || info->ip_options || info->l4_len < len ||
	    !l3_ns_reply(sl_pkt_eth(m), ip, len, p->v6, &p->mac))
		return 0;
	st->c.neigh_replies++;
	return 1;
}

static sl_verdict_t
l3_route4(struct l3_state *st, struct rte_mbuf *m,
	  const struct sl_pkt_info *info)
{
	const struct l3_table *t = st->table;
	struct rte_ipv4_hdr *ip = sl_pkt_ipv4(m, info);
	uint32_t dst, nh;
	uint16_t old, new;

	if (ip == NULL || rte_raw_cksum(ip, rte_ipv4_hdr_len(ip)) != 0xffff) {
		st->c.malformed++;
		return SL_DROP;
	}
	dst = rte_be_to_cpu_32(ip->dst_addr);
	if (l3_is_mine4(t, ip->dst_addr))
		return l3_to_me(st, m, info, 0);
	/* 0/8, loopback, multicast and broadcast: never forwarded */
	if ((dst >> 24) == 0 || (dst >> 24) == 127 || (dst >> 28) >= 14) {
		st->c.local++;
		return SL_DROP;
	}
	if ((t->lpm4 == NULL || rte_lpm_lookup(t->lpm4, dst, &nh) != 0) &&
	    (nh = (uint32_t)t->def4, t->def4 < 0)) {
		st->c.no_route++;
		l3_icmp_error(st, m, info, 0, L3_ICMP4_UNREACH, 0);
		return SL_DROP;
	}
	if (ip->time_to_live <= 1) {
		st->c.ttl_exceeded++;
		l3_icmp_error(st, m, info, 0, L3_ICMP4_TIME_EXCEEDED, 0);
		return SL_DROP;
	}
	/* TTL is the high byte of the 16-bit word it shares with the
	 * protocol. */
	memcpy(&old, &ip->time_to_live, 2);
	ip->time_to_live--;
	memcpy(&new, &ip->time_to_live, 2);
	ip->hdr_checksum = sl_cksum_update16(ip->hdr_checksum, old, new);
	return l3_out(st, m, &t->nh[nh]);
}

static sl_verdict_t
l3_route6(struct l3_state *st, struct rte_mbuf *m,
	  const struct sl_pkt_info *info)
{
	const struct l3_table *t = st->table;
	struct rte_ipv6_hdr *ip = sl_pkt_ipv6(m, info);
	uint32_t nh;

	if (ip == NULL) {
		st->c.malformed++;
		return SL_DROP;
	}
	if (info->l4_proto == IPPROTO_ICMPV6 && info->l4_len > 0 &&
	    rte_pktmbuf_mtod(m, const uint8_t *)[info->l4_off] == 135 &&
	    l3_ns(st, m, info, ip))
		return SL_OUT(sl_pkt_in_port(m));
	if (l3_is_mine6(t, ip->dst_addr))
		return l3_to_me(st, m, info, 1);
	/* multicast, link-local either way, :: and ::1: not forwarded */
	if (ip->dst_addr[0] == 0xff ||
	    (ip->dst_addr[0] == 0xfe && (ip->dst_addr[1] & 0xc0) == 0x80) ||
	    (ip->src_addr[0] == 0xfe && (ip->src_addr[1] & 0xc0) == 0x80) ||
	    (memcmp(ip->dst_addr, (const uint8_t[15]){0}, 15) == 0 &&
	     ip->dst_addr[15] <= 1)) {
		st->c.local++;
		return SL_DROP;
	}
	if ((t->lpm6 == NULL ||
	     rte_lpm6_lookup(t->lpm6, ip->dst_addr, &nh) != 0) &&
	    (nh = (uint32_t)t->def6, t->def6 < 0)) {
		st->c.no_route++;
		l3_icmp_error(st, m, info, 1, L3_ICMP6_UNREACH, 0);
		return SL_DROP;
	}
	if (ip->hop_limits <= 1) {
		st->c.ttl_exceeded++;
		l3_icmp_error(st, m, info, 1, L3_ICMP6_TIME_EXCEEDED, 0);
		return SL_DROP;
	}
	ip->hop_limits--;
	return l3_out(st, m, &t->nh[nh]);
}

static sl_verdict_t
l3_route(struct l3_state *st, struct rte_mbuf *m)
{
	struct sl_pkt_info info;
	int rc = sl_pkt_parse(m, &info);

	if (info.ip_version == 4 && sl_pkt_eth(m) != NULL)
		return l3_route4(st, m, &info);
	if (info.ip_version == 6 && sl_pkt_eth(m) != NULL)
		return l3_route6(st, m, &info);
	if (rc == 0 && info.n_vlans == 0)
		return l3_not_ip(st, m);
	if (rc != 0)
		st->c.malformed++;
	else
		st->c.non_ip++;
	return SL_DROP;
}

static void l3_reload_poll(struct l3_state *st);

static void
l3_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct l3_state *st = sl_nf_priv(nf);

	/* A finished reload takes over before this burst, not inside it. */
	if (unlikely(st->build != NULL))
		l3_reload_poll(st);
	/* The headers were last written on sluiced's core: ask for all of
	 * them at once, so that the misses overlap. */
	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		st->c.pkts++;
		st->c.bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sl_pkt_set_verdict(pkts[i], l3_route(st, pkts[i]));
	}
	l3_icmp_flush(st);
}

/* ---- reports -------------------------------------------------------- */

/* The counters line; format documented in README.md. */
static void
l3_print(struct l3_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];
	const struct l3_counters *c = &st->c;

	sl_stats_line_head(&st->stats, head, sizeof(head), "l3fwd", reason, now,
			   c->pkts, c->bytes);
	fprintf(stderr,
		"%s forwarded=%" PRIu64 " no_route=%" PRIu64
		" ttl_exceeded=%" PRIu64 " icmp_sent=%" PRIu64
		" icmp_ratelimited=%" PRIu64 " icmp_failed=%" PRIu64
		" non_ip=%" PRIu64 " malformed=%" PRIu64 " local=%" PRIu64
		" echo_replies=%" PRIu64 " neigh_replies=%" PRIu64,
		head, c->forwarded, c->no_route, c->ttl_exceeded, c->icmp_sent,
		c->icmp_ratelimited, c->icmp_failed, c->non_ip, c->malformed,
		c->local, c->echo_replies, c->neigh_replies);
	for (int i = 0; i < L3_MAX_PORTS; i++)
		if (st->port_name[i][0] != '\0')
			fprintf(stderr, " out.%s=%" PRIu64, st->port_name[i],
				c->fwd_port[i]);
	fputc('\n', stderr);
	fflush(stderr);
}

static void
l3_print_table(struct l3_state *st, const char *verb)
{
	const struct l3_table *t = st->table;
	char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN];
	char mac[RTE_ETHER_ADDR_FMT_SIZE];

	fprintf(stderr,
		L3_PROG ": %s %s: %" PRIu32 " IPv4 and %" PRIu32
			" IPv6 routes (%" PRIu32
			" of them neighbours), %" PRIu32 " ports\n",
		verb, st->routes_path, t->n_routes4, t->n_routes6, t->n_neigh,
		t->n_ports);
	for (int i = 0; i < L3_MAX_PORTS; i++) {
		const struct l3_port *p = &t->ports[i];

		if (!p->used)
			continue;
		snprintf(st->port_name[i], sizeof(st->port_name[i]), "%s",
			 p->name);
		rte_ether_format_addr(mac, sizeof(mac), &p->mac);
		inet_ntop(AF_INET, &p->v4, v4, sizeof(v4));
		inet_ntop(AF_INET6, p->v6, v6, sizeof(v6));
		fprintf(stderr,
			L3_PROG ":   port %s (id %d): mac %s, address %s %s\n",
			p->name, i, mac, p->has_v4 ? v4 : "-",
			p->has_v6 ? v6 : "-");
	}
	fflush(stderr);
}

/* ---- reload --------------------------------------------------------- */

static void *
l3_builder(void *arg)
{
	struct l3_build *b = arg;

	b->rc = l3_table_load(b->nf, b->path, &b->lim, b->gen, &b->table,
			      b->err, sizeof(b->err));
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint32_t
l3_n_routes(const struct l3_table *t)
{
	return t->n_routes4 + t->n_routes6;
}

static void
l3_reload_failed(struct l3_state *st, const char *why)
{
	fprintf(stderr,
		L3_PROG ": reload failed, keeping the %" PRIu32
			" current routes: %s\n",
		l3_n_routes(st->table), why);
	fflush(stderr);
}

static void
l3_limits_of(const struct l3_state *st, struct l3_limits *lim)
{
	lim->max_routes = st->max_routes;
	lim->tbl8_v4 = st->tbl8_v4;
	lim->tbl8_v6 = st->tbl8_v6;
}

/* Starts a build in a thread with every signal blocked (they are for the
 * NF thread's handlers). */
static void
l3_reload_start(struct l3_state *st)
{
	struct l3_build *b = calloc(1, sizeof(*b));
	sigset_t all, old;
	char why[L3_ERR_LEN];
	int rc;

	if (b == NULL) {
		l3_reload_failed(st, "out of memory");
		return;
	}
	b->nf = st->nf;
	b->path = st->routes_path;
	l3_limits_of(st, &b->lim);
	b->gen = ++st->gen;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&b->thread, NULL, l3_builder, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		free(b);
		snprintf(why, sizeof(why),
			 "cannot start a thread to build them (%s); send "
			 "SIGHUP again",
			 strerror(rc));
		l3_reload_failed(st, why);
		return;
	}
	st->build = b;
	fprintf(stderr,
		L3_PROG ": reloading %s in the background; packets go on "
			"through the %" PRIu32 " current routes until it is "
			"built\n",
		st->routes_path, l3_n_routes(st->table));
	fflush(stderr);
}

static void
l3_reload_join(struct l3_state *st)
{
	int rc = pthread_join(st->build->thread, NULL);

	if (rc != 0) /* cannot happen: a joinable thread of ours */
		fprintf(stderr, L3_PROG ": pthread_join: %s\n", strerror(rc));
}

/* A finished build: swap in its table (between bursts) or say why not. */
static void
l3_reload_poll(struct l3_state *st)
{
	struct l3_build *b = st->build;

	if (b == NULL || !__atomic_load_n(&b->done, __ATOMIC_ACQUIRE))
		return;
	l3_reload_join(st);
	st->build = NULL;
	l3_print(st, "reload", sl_now_ns());
	if (b->rc != 0) {
		l3_reload_failed(st, b->err);
	} else {
		l3_table_free(st->table);
		st->table = b->table;
		l3_print_table(st, "reloaded");
	}
	free(b);
	if (st->reload_again) {
		st->reload_again = 0;
		l3_reload_start(st);
	}
}

static void
l3_reload(struct sl_nf *nf)
{
	struct l3_state *st = sl_nf_priv(nf);

	l3_reload_poll(st);
	if (st->build == NULL) {
		l3_reload_start(st);
		return;
	}
	st->reload_again = 1;
	fprintf(stderr,
		L3_PROG ": SIGHUP during a reload: %s will be read again "
			"once the current build ends\n",
		st->routes_path);
	fflush(stderr);
}

/* ---- options and lifecycle ------------------------------------------ */

static const char l3_usage[] =
	"usage: " L3_PROG " [EAL args] -- [libsluice args] --routes FILE\n"
	"       [--max-routes N] [--tbl8-v4 N] [--tbl8-v6 N]\n"
	"       [--icmp-rate N] [--icmp-burst N] [--stats-ms MS]\n";

static const struct sl_nf_opt l3_opts[] = {
	{.name = "routes",
	 .letter = 'r',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "routes file: port, neigh and route lines (see "
		 "nfs/l3fwd/README.md)",
	 SL_OPT_AT(struct l3_state, routes_path)},
	{.name = "max-routes",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "routes per family, neighbours included (default 1024)",
	 SL_OPT_AT(struct l3_state, max_routes),
	 .min = 1,
	 .max = 1048576,
	 .def = "1024"},
	{.name = "tbl8-v4",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "rte_lpm tbl8 groups: IPv4 routes longer than /24 "
		 "(default 256)",
	 SL_OPT_AT(struct l3_state, tbl8_v4),
	 .min = 1,
	 .max = 65536,
	 .def = "256"},
	{.name = "tbl8-v6",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "rte_lpm6 tbl8 groups: IPv6 routes longer than /24 "
		 "(default 4096)",
	 SL_OPT_AT(struct l3_state, tbl8_v6),
	 .min = 1,
	 .max = 262144,
	 .def = "4096"},
	{.name = "icmp-rate",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "ICMP errors sent per second at most (default 100; 0: "
		 "none)",
	 SL_OPT_AT(struct l3_state, icmp_rate),
	 .max = 1000000,
	 .def = "100"},
	{.name = "icmp-burst",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "ICMP errors sent back to back at most (default 20)",
	 SL_OPT_AT(struct l3_state, icmp_burst),
	 .min = 1,
	 .max = 1000000,
	 .def = "20"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS (default 5000; 0 = only at "
		 "exit)",
	 SL_OPT_AT(struct l3_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

static int
l3_init(struct sl_nf *nf, int argc, char **argv)
{
	struct l3_state *st = sl_nf_priv(nf);
	struct l3_limits lim;
	char err[L3_ERR_LEN];
	uint64_t now = sl_now_ns();
	int rc;

	(void)argc;
	(void)argv;
	st->nf = nf;
	if (st->routes_path == NULL) {
		fprintf(stderr, L3_PROG ": missing --routes FILE\n");
		fputs(l3_usage, stderr);
		return EINVAL;
	}
	l3_limits_of(st, &lim);
	rc = l3_table_load(nf, st->routes_path, &lim, st->gen, &st->table, err,
			   sizeof(err));
	if (rc != 0) {
		fprintf(stderr, L3_PROG ": %s\n", err);
		return -rc;
	}
	st->bucket_max = (uint64_t)st->icmp_burst * L3_NS;
	st->bucket = st->bucket_max;
	st->bucket_ns = now;
	sl_stats_line_start(&st->stats, st->stats_ms * L3_MS, now);
	l3_print_table(st, "loaded");
	return 0;
}

static void
l3_tick(struct sl_nf *nf, uint64_t now)
{
	struct l3_state *st = sl_nf_priv(nf);

	if (st->build != NULL)
		l3_reload_poll(st);
	if (sl_stats_line_due(&st->stats, now))
		l3_print(st, "interval", now);
}

/* Message "stats": the counters line now. */
static void
l3_message(struct sl_nf *nf, const char *key, const char *value)
{
	(void)value;
	if (strcmp(key, "stats") == 0)
		l3_print(sl_nf_priv(nf), "message", sl_now_ns());
}

static void
l3_fini(struct sl_nf *nf)
{
	struct l3_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	l3_icmp_flush(st);
	if (st->build != NULL) {
		fprintf(stderr,
			L3_PROG ": exiting during a reload: waiting for the "
				"build of %s to end; its routes are not used\n",
			st->routes_path);
		l3_reload_join(st);
		l3_table_free(st->build->table);
		free(st->build);
		st->build = NULL;
	}
	l3_print(st, "exit", sl_now_ns());
	l3_table_free(st->table);
	st->table = NULL;
}

static const struct sl_nf_ops l3_ops = {
	.name = L3_PROG,
	.service = "l3fwd",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = l3_init,
	.process = l3_process,
	.tick = l3_tick,
	.tick_ms = L3_TICK_MS,
	.reload = l3_reload,
	.on_message = l3_message,
	.fini = l3_fini,
	.usage = l3_usage,
	.opts = l3_opts,
	.priv_size = sizeof(struct l3_state),
	.opts_help_col = 20,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&l3_ops, argc, argv);
}
