/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection tracking for sluice-firewall --stateful (conntrack.h). The
 * TCP states and transitions follow Linux nf_conntrack's TCP tracking
 * (net/netfilter/nf_conntrack_proto_tcp.c) with fewer states (its
 * CLOSE_WAIT is our FIN_WAIT: one side has sent FIN) and without its
 * sequence-number window checks, simultaneous open or mid-stream pickup
 * (nf_conntrack_tcp_loose=0): a TCP packet of no known connection other
 * than a SYN is invalid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <rte_common.h>
#include <rte_hash.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "conntrack.h"

#define CT_TCP_FLAGS                                                           \
	(RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG | RTE_TCP_FIN_FLAG |              \
	 RTE_TCP_RST_FLAG)
#define CT_SWEEP_NS 1000000000ull /* every slot visited once a second */

enum ct_group
ct_group_of(enum ct_state s)
{
	switch (s) {
	case CT_SYN_SENT:
	case CT_SYN_RECV:
	case CT_UDP_NEW:
		return CT_G_NEW;
	case CT_ESTABLISHED:
	case CT_UDP_EST:
		return CT_G_ESTABLISHED;
	default:
		return CT_G_CLOSING;
	}
}

int
ct_create(struct sl_nf *nf, struct ct_table *ct, uint32_t capacity,
	  const uint32_t *timeout_s, uint64_t now)
{
	const struct sl_nf_table_spec spec = {
		.prog = "sluice-firewall",
		.tag = "slct",
		.what = "connection",
		.whats = "connections",
		.entries = capacity,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = 74 + sizeof(struct ct_conn),
		.slot_size = sizeof(struct ct_conn),
	};
	static const uint8_t which[CT_N_STATES] = {
		[CT_SYN_SENT] = CT_T_SYN,    [CT_SYN_RECV] = CT_T_SYN,
		[CT_ESTABLISHED] = CT_T_EST, [CT_FIN_WAIT] = CT_T_CLOSE,
		[CT_LAST_ACK] = CT_T_CLOSE,  [CT_TIME_WAIT] = CT_T_CLOSE,
		[CT_CLOSE] = CT_T_CLOSE,     [CT_UDP_NEW] = CT_T_UDP,
		[CT_UDP_EST] = CT_T_UDP,
	};
	void *slots = NULL;
	unsigned s;
	int rc;

	memset(ct, 0, sizeof(*ct));
	rc = sl_nf_table_create(nf, &spec, &ct->h, &slots, &ct->n_slots);
	if (rc != 0)
		return rc;
	ct->conns = slots;
	ct->capacity = capacity;
	for (s = 0; s < CT_N_STATES; s++)
		ct->timeout_ns[s] =
			(uint64_t)timeout_s[which[s]] * 1000000000ull;
	ct->icmp_ns = (uint64_t)timeout_s[CT_T_ICMP] * 1000000000ull;
	ct->last_sweep_ns = now;
	ct->sweep_period_ns = CT_SWEEP_NS;
	return 0;
}

void
ct_free(struct ct_table *ct)
{
	rte_hash_free(ct->h);
	free(ct->conns);
	ct->h = NULL;
	ct->conns = NULL;
}

/* The TCP flags (SYN, ACK, FIN, RST) of m, or 0 if it has no TCP header. */
static uint8_t
ct_tcp_flags(const struct rte_mbuf *m)
{
	struct sl_pkt_info info;
	const struct rte_tcp_hdr *th;

	if (sl_pkt_parse(m, &info) != 0)
		return 0;
	th = sl_pkt_tcp(m, &info);
	return th == NULL ? 0 : (uint8_t)(th->tcp_flags & CT_TCP_FLAGS);
}

/*
 * ICMP and ICMPv6: an echo request or reply is a packet of the "connection"
 * of its identifier (put in the key's ports, as Linux keys it by id);
 * anything else (errors, ...) is tracked by no connection and goes to the
 * rules.
 */
static void
ct_icmp(const struct rte_mbuf *m, struct ct_pkt *cp)
{
	struct sl_pkt_info info;
	const uint8_t *l4;
	uint8_t type;

	cp->no_track = 1;
	if (sl_pkt_parse(m, &info) != 0 || info.l4_off == 0 ||
	    info.l4_len < 8 || info.later_fragment)
		return;
	l4 = rte_pktmbuf_mtod_offset(m, const uint8_t *, info.l4_off);
	type = l4[0];
	if (cp->key.proto == IPPROTO_ICMP)
		cp->echo = type == 8   ? CT_ECHO_REQUEST
			   : type == 0 ? CT_ECHO_REPLY
				       : 0;
	else
		cp->echo = type == 128   ? CT_ECHO_REQUEST
			   : type == 129 ? CT_ECHO_REPLY
					 : 0;
	if (cp->echo == 0)
		return;
	cp->no_track = 0;
	memcpy(&cp->key.sport, l4 + 4, 2); /* the identifier */
	cp->key.dport = cp->key.sport;
}

static uint64_t
ct_timeout(const struct ct_table *ct, const struct ct_conn *c)
{
	return c->icmp ? ct->icmp_ns : ct->timeout_ns[c->state];
}

static void
ct_set_state(struct ct_table *ct, struct ct_conn *c, enum ct_state s)
{
	ct->n_group[ct_group_of(c->state)]--;
	ct->n_group[ct_group_of(s)]++;
	c->state = (uint8_t)s;
}

static void
ct_remove(struct ct_table *ct, int32_t pos, const struct sl_5tuple *key)
{
	struct ct_conn *c = &ct->conns[pos];

	(void)rte_hash_del_key(ct->h, key);
	ct->n_group[ct_group_of(c->state)]--;
	ct->n_conns--;
	memset(c, 0, sizeof(*c));
}

/* A pure SYN (no ACK, FIN or RST). */
static int
ct_is_syn(uint8_t f)
{
	return f == RTE_TCP_SYN_FLAG;
}

/* After a FIN from dir: FIN_WAIT, or LAST_ACK once both sides sent one. */
static int
ct_tcp_fin(struct ct_conn *c, unsigned dir)
{
	if (c->state == CT_SYN_SENT)
		return -1;
	if (c->state == CT_TIME_WAIT || c->state == CT_CLOSE)
		return c->state;
	c->fin |= (uint8_t)(1u << dir);
	return c->fin == 3 ? CT_LAST_ACK : CT_FIN_WAIT;
}

/* A packet with ACK and neither SYN, FIN nor RST, from dir. */
static int
ct_tcp_ack(const struct ct_conn *c, unsigned dir)
{
	switch (c->state) {
	case CT_SYN_SENT:
		return -1;
	case CT_SYN_RECV: /* the originator's ACK of the SYN+ACK */
		return dir == 0 ? CT_ESTABLISHED : -1;
	case CT_LAST_ACK: /* the ACK of the last FIN */
		return CT_TIME_WAIT;
	default:
		return c->state;
	}
}

/*
 * The state after a packet with flags f from dir (0: originator) in
 * state c->state, or -1 if the packet is invalid there.
 */
static int
ct_tcp_next(struct ct_conn *c, unsigned dir, uint8_t f)
{
	if (f & RTE_TCP_RST_FLAG)
		return (f & RTE_TCP_SYN_FLAG) ? -1 : CT_CLOSE;
	if ((f & RTE_TCP_SYN_FLAG) && (f & RTE_TCP_FIN_FLAG))
		return -1;
	if (ct_is_syn(f)) /* a retransmitted SYN */
		return dir == 0 && (c->state == CT_SYN_SENT ||
				    c->state == CT_SYN_RECV)
			       ? c->state
			       : -1;
	if (f & RTE_TCP_SYN_FLAG) { /* SYN+ACK, from the responder */
		if (dir == 0)
			return -1;
		if (c->state == CT_SYN_SENT || c->state == CT_SYN_RECV)
			return CT_SYN_RECV;
		return c->state == CT_ESTABLISHED ? CT_ESTABLISHED : -1;
	}
	if (f & RTE_TCP_FIN_FLAG)
		return ct_tcp_fin(c, dir);
	if (f & RTE_TCP_ACK_FLAG)
		return ct_tcp_ack(c, dir);
	return -1; /* no flag at all */
}

/* A packet of the connection at pos: its new state, and counted. */
static enum ct_result
ct_track(struct ct_table *ct, int32_t pos, const struct ct_pkt *cp,
	 uint64_t now)
{
	struct ct_conn *c = &ct->conns[pos];
	unsigned dir = cp->rev != c->orig_rev;

	if (cp->tcp) {
		int s = ct_tcp_next(c, dir, cp->flags);

		if (s < 0) {
			ct->c.invalid++;
			return CT_INVALID;
		}
		if (s != c->state)
			ct_set_state(ct, c, (enum ct_state)s);
	} else {
		/* echo requests from the originator, replies from the other */
		if (cp->echo != 0 &&
		    cp->echo != (dir ? CT_ECHO_REPLY : CT_ECHO_REQUEST)) {
			ct->c.invalid++;
			return CT_INVALID;
		}
		if (dir == 1 && c->state == CT_UDP_NEW)
			ct_set_state(ct, c, CT_UDP_EST);
	}
	c->last_ns = now;
	ct->c.pkts[ct_group_of(c->state)]++;
	return CT_PASS;
}

enum ct_result
ct_lookup(struct ct_table *ct, const struct rte_mbuf *m,
	  const struct sl_5tuple *t, uint64_t now, struct ct_pkt *cp)
{
	int32_t pos;

	cp->key = *t;
	cp->rev = (uint8_t)sl_5tuple_canonical(&cp->key);
	cp->tcp = t->proto == IPPROTO_TCP;
	cp->flags = cp->tcp ? ct_tcp_flags(m) : 0;
	cp->echo = 0;
	cp->no_track = 0;
	if (t->proto == IPPROTO_ICMP || t->proto == IPPROTO_ICMPV6) {
		ct_icmp(m, cp);
		if (cp->no_track)
			return CT_MISS;
	}
	pos = rte_hash_lookup(ct->h, &cp->key);
	if (pos >= 0) {
		struct ct_conn *c = &ct->conns[pos];

		if (now - c->last_ns >= ct_timeout(ct, c)) {
			ct_remove(ct, pos, &cp->key);
			ct->c.expired++;
		} else if (cp->tcp && ct_is_syn(cp->flags) &&
			   (c->state == CT_TIME_WAIT || c->state == CT_CLOSE)) {
			ct_remove(ct, pos, &cp->key);
			ct->c.reopened++;
		} else {
			return ct_track(ct, pos, cp, now);
		}
	}
	/* only a SYN, or an echo request, may start a connection */
	if ((cp->tcp && !ct_is_syn(cp->flags)) || cp->echo == CT_ECHO_REPLY) {
		ct->c.invalid++;
		return CT_INVALID;
	}
	return CT_MISS;
}

enum ct_result
ct_relookup(struct ct_table *ct, const struct ct_pkt *cp, uint64_t now)
{
	int32_t pos = cp->no_track ? -1 : rte_hash_lookup(ct->h, &cp->key);

	return pos >= 0 ? ct_track(ct, pos, cp, now) : CT_MISS;
}

enum ct_result
ct_commit(struct ct_table *ct, const struct ct_pkt *cp, uint64_t now)
{
	struct ct_conn *c;
	int32_t pos;

	if (cp->no_track) /* allowed, and nothing to remember */
		return CT_PASS;
	if (ct->n_conns >= ct->capacity ||
	    (pos = rte_hash_add_key(ct->h, &cp->key)) < 0) {
		ct->c.table_full++;
		return CT_INVALID;
	}
	c = &ct->conns[pos];
	c->used = 1;
	c->state = cp->tcp ? CT_SYN_SENT : CT_UDP_NEW;
	c->orig_rev = cp->rev;
	c->fin = 0;
	c->icmp = cp->key.proto == IPPROTO_ICMP ||
		  cp->key.proto == IPPROTO_ICMPV6;
	c->last_ns = now;
	ct->n_conns++;
	ct->n_group[CT_G_NEW]++;
	ct->c.created++;
	return CT_PASS;
}

void
ct_sweep(struct ct_table *ct, uint64_t now)
{
	uint64_t dt = now - ct->last_sweep_ns;
	uint32_t budget = ct->n_slots;

	if (dt < ct->sweep_period_ns) /* rounded up: the walk moves on */
		budget = RTE_MIN(ct->n_slots,
				 (uint32_t)((double)ct->n_slots * (double)dt /
					    (double)ct->sweep_period_ns) +
					 1);
	ct->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = ct->sweep_cursor;
		struct ct_conn *c = &ct->conns[p];
		_Alignas(8) struct sl_5tuple key;
		void *kp;

		ct->sweep_cursor = p + 1 == ct->n_slots ? 0 : p + 1;
		if (!c->used || now - c->last_ns < ct_timeout(ct, c) ||
		    rte_hash_get_key_with_position(ct->h, (int32_t)p, &kp) != 0)
			continue;
		memcpy(&key, kp, sizeof(key));
		ct_remove(ct, (int32_t)p, &key);
		ct->c.expired++;
	}
}

void
ct_format(const struct ct_table *ct, char *buf, size_t size)
{
	const struct ct_counters *c = &ct->c;

	snprintf(buf, size,
		 " conns=%" PRIu32 " capacity=%" PRIu32 " conns_new=%" PRIu32
		 " conns_established=%" PRIu32 " conns_closing=%" PRIu32
		 " pkts_new=%" PRIu64 " pkts_established=%" PRIu64
		 " pkts_closing=%" PRIu64 " invalid=%" PRIu64
		 " table_full=%" PRIu64 " created=%" PRIu64 " expired=%" PRIu64
		 " reopened=%" PRIu64,
		 ct->n_conns, ct->capacity, ct->n_group[CT_G_NEW],
		 ct->n_group[CT_G_ESTABLISHED], ct->n_group[CT_G_CLOSING],
		 c->pkts[CT_G_NEW], c->pkts[CT_G_ESTABLISHED],
		 c->pkts[CT_G_CLOSING], c->invalid, c->table_full, c->created,
		 c->expired, c->reopened);
}
