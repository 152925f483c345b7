/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb: an L4 load balancer for one virtual IP (and its ports) over
 * backends, with Maglev consistent hashing (maglev.c) and connection
 * tracking (an rte_hash made by sl_nf_table_create, keyed by the client's
 * 5-tuple), so an established connection keeps its backend when the
 * backend set changes. A client's packet to the VIP gets the backend's
 * address as destination (and its MAC, and leaves through its port); the
 * backend's reply gets the VIP back as source (and the MACs the client
 * used). Checksums are updated incrementally (RFC 1624). Backends change
 * at run time by SIGHUP (the file again) or by messages (backends.c).
 * Options, file, counters: nfs/lb/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "lb.h"

#define LB_TICK_MS 100
#define LB_SWEEP 4096 /* table positions looked at per tick */
#define LB_NS 1000000000.0
#define LB_CHUNK 32 /* packets looked up at once (rte_hash: at most 64) */

/* ---- the packet path ----------------------------------------------- */

/* A packet's addresses and L4 header: ports in network byte order; src
 * and dst point at the addresses in the IPv4 or IPv6 header. */
struct lb_l4 {
	struct rte_ipv4_hdr *ip4; /* NULL for IPv6 */
	uint8_t *src, *dst;
	struct rte_tcp_hdr *tcp;
	struct rte_udp_hdr *udp;
	uint16_t sport, dport;
	uint8_t proto;
	uint8_t alen; /* 4 or 16 */
};

/* Rewrites the destination (dst 1) or source address to addr (alen
 * bytes), with the IPv4 header's and the TCP/UDP checksums. */
static void
lb_set_addr(struct lb_l4 *l, int dst, const uint8_t *addr)
{
	uint8_t *f = dst ? l->dst : l->src, old[16];
	uint32_t d;

	if (l->alen == 4) { /* constant lengths: unrolled, no memcpy call */
		memcpy(old, f, 4);
		memcpy(f, addr, 4);
		d = sl_cksum_delta(old, addr, 4);
		l->ip4->hdr_checksum = sl_cksum_apply(l->ip4->hdr_checksum, d);
	} else {
		memcpy(old, f, 16);
		memcpy(f, addr, 16);
		d = sl_cksum_delta(old, addr, 16);
	}
	if (l->tcp != NULL) {
		l->tcp->cksum = sl_cksum_apply(l->tcp->cksum, d);
	} else if (l->udp != NULL) {
		l->udp->dgram_cksum =
			sl_cksum_apply_udp(l->udp->dgram_cksum, d);
	}
}

/* Whether the alen bytes at p are the address a. */
static inline int
lb_addr_is(const uint8_t *p, const struct lb_ip *a, unsigned alen)
{
	uint32_t v;

	if (alen == 4) {
		memcpy(&v, p, 4);
		return v == a->u.v4;
	}
	return memcmp(p, a->u.v6, 16) == 0;
}

static void
lb_key(struct sl_5tuple *k, const struct lb_l4 *l, const uint8_t *src,
       uint16_t sport, const uint8_t *dst, uint16_t dport)
{
	memset(k, 0, sizeof(*k));
	k->proto = l->proto;
	k->sport = sport;
	k->dport = dport;
	if (l->alen == 4) { /* constant lengths: no memcpy call */
		k->family = 4;
		memcpy(&k->src.v4, src, 4);
		memcpy(&k->dst.v4, dst, 4);
	} else {
		k->family = 6;
		memcpy(k->src.v6, src, 16);
		memcpy(k->dst.v6, dst, 16);
	}
}

static int
lb_expired(const struct lb_state *st, const struct lb_conn *c, uint64_t now)
{
	uint64_t idle = c->rst || (c->fin_client && c->fin_backend)
				? st->closed_ns
				: st->timeout_ns;

	return now > c->last_ns && now - c->last_ns > idle;
}

static void
lb_tcp_flags(struct lb_conn *c, const struct rte_tcp_hdr *tcp, int client)
{
	if (tcp == NULL)
		return;
	if (tcp->tcp_flags & RTE_TCP_RST_FLAG)
		c->rst = 1;
	if (tcp->tcp_flags & RTE_TCP_FIN_FLAG) {
		if (client)
			c->fin_client = 1;
		else
			c->fin_backend = 1;
	}
	/* A new connection on the same 5-tuple (a SYN alone) starts over. */
	if ((tcp->tcp_flags & (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG)) ==
	    RTE_TCP_SYN_FLAG)
		c->rst = c->fin_client = c->fin_backend = 0;
}

/* A new connection: its backend from the Maglev table. NULL when no
 * backend has a weight. */
static struct lb_backend *
lb_pick(struct lb_state *st, const struct sl_5tuple *k)
{
	uint16_t s = st->table[sl_5tuple_hash(k) % st->table_size];

	return s == LB_MAGLEV_NONE ? NULL : &st->backends[s];
}

/* The tracked connection of a client's packet at pos (rte_hash's
 * answer for its key), made if new; NULL (the packet counted as a drop)
 * when it cannot be. */
static struct lb_conn *
lb_conn_of(struct lb_state *st, const struct sl_5tuple *k, int32_t pos,
	   const struct rte_ether_hdr *eth, uint16_t in_port, uint64_t now)
{
	struct lb_backend *b;
	struct lb_conn *c = NULL;

	if (pos < 0) /* maybe made by a packet before it in the burst */
		pos = rte_hash_lookup(st->h, k);
	if (pos >= 0) {
		c = &st->conns[pos];
		b = &st->backends[c->slot];
		if (lb_expired(st, c, now))
			st->c.expired++;
		else if (b->live && b->gen == c->gen)
			return c;
		else
			st->c.moved++; /* its backend is gone */
	}
	b = lb_pick(st, k);
	if (b == NULL) {
		if (pos >= 0)
			rte_hash_del_key(st->h, k);
		st->c.drop_no_backend++;
		return NULL;
	}
	if (pos < 0) {
		pos = rte_hash_add_key(st->h, k);
		if (pos < 0) {
			st->c.drop_table_full++;
			return NULL;
		}
		c = &st->conns[pos];
	}
	memset(c, 0, sizeof(*c));
	c->backend = b->spec.addr;
	c->slot = (uint16_t)(b - st->backends);
	c->gen = b->gen;
	memcpy(c->client_mac, eth->src_addr.addr_bytes, 6);
	memcpy(c->vip_mac, eth->dst_addr.addr_bytes, 6);
	c->in_port = in_port;
	st->c.new_flows++;
	b->flows++;
	return c;
}

/* Client -> VIP: to the connection's backend. */
static sl_verdict_t
lb_to_backend(struct lb_state *st, struct rte_mbuf *m, struct lb_l4 *l,
	      const struct sl_5tuple *k, int32_t pos, uint64_t now)
{
	struct rte_ether_hdr *eth = sl_pkt_eth(m);
	struct lb_backend *b;
	struct lb_conn *c;

	c = lb_conn_of(st, k, pos, eth, sl_pkt_in_port(m), now);
	if (c == NULL)
		return SL_DROP;
	c->last_ns = now;
	lb_tcp_flags(c, l->tcp, 1);
	b = &st->backends[c->slot];
	lb_set_addr(l, 1, b->spec.addr.u.v6);
	if (b->spec.has_mac)
		memcpy(eth->dst_addr.addr_bytes, b->spec.mac, 6);
	if (st->has_mac)
		memcpy(eth->src_addr.addr_bytes, st->mac, 6);
	b->pkts++;
	b->bytes += rte_pktmbuf_pkt_len(m);
	st->c.to_backend++;
	return b->port >= 0 ? SL_OUT(b->port) : SL_NEXT;
}

static sl_verdict_t
lb_other(struct lb_state *st)
{
	if (st->other == LB_OTHER_DROP) {
		st->c.drop_other++;
		return SL_DROP;
	}
	st->c.other++;
	return SL_NEXT;
}

/* Backend -> client, of the tracked connection at pos: from the VIP
 * again. Any other packet is lb_other's. */
static sl_verdict_t
lb_to_client(struct lb_state *st, struct rte_mbuf *m, struct lb_l4 *l,
	     int32_t pos, uint64_t now)
{
	struct rte_ether_hdr *eth;
	struct lb_conn *c;

	if (pos < 0)
		return lb_other(st);
	c = &st->conns[pos];
	if (!lb_addr_is(l->src, &c->backend, l->alen) || lb_expired(st, c, now))
		return lb_other(st);
	c->last_ns = now;
	lb_tcp_flags(c, l->tcp, 0);
	lb_set_addr(l, 0, st->cfg.vip.u.v6);
	eth = sl_pkt_eth(m);
	memcpy(eth->src_addr.addr_bytes, c->vip_mac, 6);
	memcpy(eth->dst_addr.addr_bytes, c->client_mac, 6);
	st->c.to_client++;
	if (st->client_port >= 0)
		return SL_OUT(st->client_port);
	if (st->replies == LB_REPLIES_IN_PORT && c->in_port != UINT16_MAX)
		return SL_OUT(c->in_port);
	return SL_NEXT;
}

/* The L4 header of a TCP or UDP packet: 0, or -1 if it has none. */
static int
lb_l4_of(struct rte_mbuf *m, struct sl_pkt_info *info, struct lb_l4 *l)
{
	l->tcp = NULL;
	l->udp = NULL;
	l->proto = info->l4_proto;
	if (l->proto == IPPROTO_TCP && (l->tcp = sl_pkt_tcp(m, info)) != NULL) {
		l->sport = l->tcp->src_port;
		l->dport = l->tcp->dst_port;
		return 0;
	}
	if (l->proto == IPPROTO_UDP && (l->udp = sl_pkt_udp(m, info)) != NULL) {
		l->sport = l->udp->src_port;
		l->dport = l->udp->dst_port;
		return 0;
	}
	return -1;
}

/* What a packet needs: a verdict now, or a lookup of its key. */
enum lb_kind { LB_DONE, LB_FWD, LB_REPLY };

/* Parses m and decides: LB_DONE with *v set (counted), or LB_FWD (to
 * the VIP; k is the connection's key) or LB_REPLY (maybe a backend's
 * reply; k is the key its connection would have). */
static enum lb_kind
lb_classify(struct lb_state *st, struct rte_mbuf *m, struct lb_l4 *l,
	    struct sl_5tuple *k, sl_verdict_t *v)
{
	struct sl_pkt_info info;
	int rc;

	st->c.pkts++;
	st->c.bytes += rte_pktmbuf_pkt_len(m);
	rc = sl_pkt_parse(m, &info);
	if (st->cfg.vip.family == 4) {
		struct rte_ipv4_hdr *ip = sl_pkt_ipv4(m, &info);

		l->ip4 = ip;
		l->alen = 4;
		l->src =
			(uint8_t *)ip + offsetof(struct rte_ipv4_hdr, src_addr);
		l->dst =
			(uint8_t *)ip + offsetof(struct rte_ipv4_hdr, dst_addr);
	} else {
		struct rte_ipv6_hdr *ip = sl_pkt_ipv6(m, &info);

		l->ip4 = NULL;
		l->alen = 16;
		l->src = ip == NULL ? NULL : ip->src_addr;
		l->dst = ip == NULL ? NULL : ip->dst_addr;
	}
	if ((st->cfg.vip.family == 4 && l->ip4 == NULL) ||
	    (st->cfg.vip.family == 6 && l->dst == NULL)) {
		st->c.non_ip++;
		*v = lb_other(st);
		return LB_DONE;
	}
	if (!lb_addr_is(l->dst, &st->cfg.vip, l->alen)) {
		if (rc != 0 || info.fragment || lb_l4_of(m, &info, l) != 0) {
			*v = lb_other(st);
			return LB_DONE;
		}
		lb_key(k, l, l->dst, l->dport, st->cfg.vip.u.v6, l->sport);
		return LB_REPLY;
	}
	if (info.fragment) {
		st->c.drop_fragment++;
		*v = SL_DROP;
	} else if (rc != 0 || lb_l4_of(m, &info, l) != 0) {
		if (info.l4_proto == IPPROTO_TCP ||
		    info.l4_proto == IPPROTO_UDP) {
			st->c.drop_malformed++;
			*v = SL_DROP;
		} else {
			*v = lb_other(st);
		}
	} else if (!lb_config_takes(&st->cfg, l->proto,
				    rte_be_to_cpu_16(l->dport))) {
		*v = lb_other(st);
	} else {
		lb_key(k, l, l->src, l->sport, l->dst, l->dport);
		return LB_FWD;
	}
	return LB_DONE;
}

/* Up to LB_CHUNK packets: classified, their keys looked up at once
 * (rte_hash_lookup_bulk), then rewritten. */
static void
lb_chunk(struct lb_state *st, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	struct sl_5tuple keys[LB_CHUNK];
	const void *kp[LB_CHUNK];
	struct lb_l4 l[LB_CHUNK];
	uint8_t kind[LB_CHUNK], at[LB_CHUNK];
	int32_t pos[LB_CHUNK];
	sl_verdict_t v;
	uint32_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		kind[i] =
			(uint8_t)lb_classify(st, pkts[i], &l[i], &keys[k], &v);
		if (kind[i] == LB_DONE) {
			sl_pkt_set_verdict(pkts[i], v);
			continue;
		}
		at[i] = (uint8_t)k;
		kp[k] = &keys[k];
		k++;
	}
	if (k == 0)
		return;
	if (rte_hash_lookup_bulk(st->h, kp, k, pos) != 0)
		for (uint32_t j = 0; j < k; j++) /* cannot happen */
			pos[j] = rte_hash_lookup(st->h, kp[j]);
	for (uint16_t i = 0; i < n; i++) {
		if (kind[i] == LB_FWD)
			v = lb_to_backend(st, pkts[i], &l[i], &keys[at[i]],
					  pos[at[i]], now);
		else if (kind[i] == LB_REPLY)
			v = lb_to_client(st, pkts[i], &l[i], pos[at[i]], now);
		else
			continue;
		sl_pkt_set_verdict(pkts[i], v);
	}
}

static void
lb_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct lb_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();

	for (uint16_t i = 0; i < n; i += LB_CHUNK)
		lb_chunk(st, pkts + i, n - i < LB_CHUNK ? n - i : LB_CHUNK,
			 now);
}

/* ---- periodic work ------------------------------------------------- */

/* Forgets up to LB_SWEEP positions' worth of expired connections. */
static void
lb_sweep(struct lb_state *st, uint64_t now)
{
	struct sl_5tuple dead[64];
	const void *key;
	void *data;
	uint32_t n = 0, seen = 0;
	int32_t pos;

	while (seen < LB_SWEEP && n < 64) {
		pos = rte_hash_iterate(st->h, &key, &data, &st->sweep_next);
		if (pos < 0) {
			st->sweep_next = 0;
			break;
		}
		seen++;
		if (lb_expired(st, &st->conns[pos], now))
			memcpy(&dead[n++], key, sizeof(dead[0]));
	}
	for (uint32_t i = 0; i < n; i++)
		if (rte_hash_del_key(st->h, &dead[i]) >= 0)
			st->c.expired++;
}

void
lb_print(struct lb_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];
	const struct lb_counters *c = &st->c;

	sl_stats_line_head(&st->stats, head, sizeof(head), "lb", reason, now,
			   c->pkts, c->bytes);
	fprintf(stderr,
		"%s to_backend=%" PRIu64 " to_client=%" PRIu64
		" new_flows=%" PRIu64 " moved=%" PRIu64 " expired=%" PRIu64
		" flows=%" PRIi32 " other=%" PRIu64 " non_ip=%" PRIu64
		" drop_no_backend=%" PRIu64 " drop_table_full=%" PRIu64
		" drop_fragment=%" PRIu64 " drop_malformed=%" PRIu64
		" drop_other=%" PRIu64 " backends=%" PRIu32 "\n",
		head, c->to_backend, c->to_client, c->new_flows, c->moved,
		c->expired, rte_hash_count(st->h), c->other, c->non_ip,
		c->drop_no_backend, c->drop_table_full, c->drop_fragment,
		c->drop_malformed, c->drop_other, st->n_live);
	lb_print_backends(st);
	fflush(stderr);
}

static void
lb_tick(struct sl_nf *nf, uint64_t now)
{
	struct lb_state *st = sl_nf_priv(nf);

	lb_sweep(st, now);
	if (sl_stats_line_due(&st->stats, now))
		lb_print(st, "interval", now);
}

/* ---- setup --------------------------------------------------------- */

static const char lb_usage[] =
	"usage: " LB_PROG " [EAL args] -- [libsluice args] --config FILE\n"
	"       [--table-size PRIME] [--flows N] [--max-backends N]\n"
	"       [--timeout S] [--closed-timeout S] [--mac MAC]\n"
	"       [--client-port PORT] [--replies next|in-port]\n"
	"       [--other pass|drop] [--stats-ms MS]\n";

static const char *const lb_others[] = {"pass", "drop", NULL};
static const char *const lb_replies[] = {"next", "in-port", NULL};
_Static_assert(LB_OTHER_PASS == 0 && LB_OTHER_DROP == 1 &&
		       LB_REPLIES_NEXT == 0 && LB_REPLIES_IN_PORT == 1,
	       "lb_opts: choices are stored as their index");

static const struct sl_nf_opt lb_opts[] = {
	{.name = "config",
	 .letter = 'c',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "the VIP and the backends (nfs/lb/README.md); SIGHUP "
		 "re-reads it",
	 SL_OPT_AT(struct lb_state, config_path)},
	{.name = "table-size",
	 .type = SL_OPT_NUMBER,
	 .arg = "PRIME",
	 .help = "Maglev lookup table entries, a prime (default 65537)",
	 SL_OPT_AT(struct lb_state, table_size),
	 .min = 3,
	 .max = 16777213,
	 .def = "65537"},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "tracked connections at most (default 65536); a new one "
		 "over it\nis dropped (drop_table_full)",
	 SL_OPT_AT(struct lb_state, flows_max),
	 .min = 16,
	 .max = 16777216,
	 .def = "65536"},
	{.name = "max-backends",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "backends at most, from the file and messages (default 64)",
	 SL_OPT_AT(struct lb_state, max_backends),
	 .min = 1,
	 .max = 4096,
	 .def = "64"},
	{.name = "timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "a connection idle this long is forgotten (default 300)",
	 SL_OPT_AT(struct lb_state, timeout_s),
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "300"},
	{.name = "closed-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "... and a TCP one after a RST or FINs both ways (default "
		 "10)",
	 SL_OPT_AT(struct lb_state, closed_timeout_s),
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "10"},
	{.name = "mac",
	 .type = SL_OPT_STRING,
	 .arg = "MAC",
	 .help = "source MAC of packets sent to backends (default: kept)",
	 SL_OPT_AT(struct lb_state, mac_text)},
	{.name = "client-port",
	 .type = SL_OPT_PORT,
	 .arg = "PORT",
	 .help = "replies to clients leave through PORT (default: the "
		 "default edge)",
	 SL_OPT_AT(struct lb_state, client_port)},
	{.name = "replies",
	 .type = SL_OPT_CHOICE,
	 .arg = "WHERE",
	 .help = "without --client-port, replies follow the default edge "
		 "(next,\ndefault) or leave through the port their "
		 "connection came in on\n(in-port)",
	 SL_OPT_AT(struct lb_state, replies),
	 .choices = lb_replies,
	 .what = "next or in-port"},
	{.name = "other",
	 .type = SL_OPT_CHOICE,
	 .arg = "ACTION",
	 .help = "packets neither for the VIP nor replies: pass (default) "
		 "or drop",
	 SL_OPT_AT(struct lb_state, other),
	 .choices = lb_others,
	 .what = "pass or drop"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS (default 5000; 0 = only at "
		 "exit)",
	 SL_OPT_AT(struct lb_state, stats_ms),
	 .max = 86400000,
	 .frac = 1,
	 .def = "5000"},
	{.name = NULL},
};

static uint32_t
lb_next_prime(uint32_t n)
{
	while (!lb_is_prime(n))
		n++;
	return n;
}

static int
lb_check_opts(struct lb_state *st)
{
	unsigned v[6];
	char end;

	if (st->config_path == NULL) {
		fprintf(stderr, LB_PROG ": missing --config FILE\n%s",
			lb_usage);
		return EINVAL;
	}
	if (!lb_is_prime(st->table_size)) {
		fprintf(stderr,
			LB_PROG ": --table-size %" PRIu32 " is not a prime "
				"(Maglev needs one; the next is %" PRIu32 ")\n",
			st->table_size, lb_next_prime(st->table_size));
		return EINVAL;
	}
	if (st->mac_text != NULL) {
		if (strlen(st->mac_text) != 17 ||
		    sscanf(st->mac_text, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0],
			   &v[1], &v[2], &v[3], &v[4], &v[5], &end) != 6) {
			fprintf(stderr,
				LB_PROG ": --mac '%s' is not a MAC address "
					"(like 02:00:00:00:00:01)\n",
				st->mac_text);
			return EINVAL;
		}
		for (int i = 0; i < 6; i++)
			st->mac[i] = (uint8_t)v[i];
		st->has_mac = 1;
	}
	st->timeout_ns = (uint64_t)(st->timeout_s * LB_NS);
	st->closed_ns = (uint64_t)(st->closed_timeout_s * LB_NS);
	return 0;
}

static void
lb_state_free(struct lb_state *st)
{
	rte_hash_free(st->h);
	st->h = NULL;
	free(st->conns);
	st->conns = NULL;
	lb_backends_free(st);
}

static int
lb_init(struct sl_nf *nf, int argc, char **argv)
{
	struct lb_state *st = sl_nf_priv(nf);
	struct sl_nf_table_spec spec = {
		.prog = LB_PROG,
		.tag = "sllb",
		.what = "connection",
		.whats = "connections",
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = 74,
		.slot_size = sizeof(struct lb_conn),
	};
	void *conns = NULL;
	int rc;

	(void)argc;
	(void)argv;
	st->nf = nf;
	rc = lb_check_opts(st);
	if (rc != 0)
		return rc;
	rc = lb_backends_alloc(st);
	if (rc == 0)
		rc = lb_load(st);
	if (rc == 0) {
		spec.entries = st->flows_max;
		rc = sl_nf_table_create(nf, &spec, &st->h, &conns,
					&st->n_conns);
		st->conns = conns;
	}
	if (rc != 0) {
		lb_state_free(st);
		return rc;
	}
	sl_stats_line_start(&st->stats, (uint64_t)(st->stats_ms * 1e6),
			    sl_now_ns());
	return 0;
}

static void
lb_fini(struct sl_nf *nf)
{
	struct lb_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	lb_print(st, "exit", sl_now_ns());
	lb_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops lb_ops = {
	.name = LB_PROG,
	.service = "lb",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = lb_init,
	.process = lb_process,
	.tick = lb_tick,
	.tick_ms = LB_TICK_MS,
	.reload = lb_reload,
	.on_message = lb_message,
	.fini = lb_fini,
	.usage = lb_usage,
	.opts = lb_opts,
	.priv_size = sizeof(struct lb_state),
	.opts_help_col = 24,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&lb_ops, argc, argv);
}
