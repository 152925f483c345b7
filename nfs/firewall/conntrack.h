/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall --stateful: connection tracking. A bounded table of
 * connections (sl_nf_table_create(): an rte_hash keyed by the 5-tuple in
 * a canonical order, so both directions find the same entry) and a TCP
 * state machine in the style of Linux nf_conntrack's TCP tracking, without
 * its sequence-number window checks. UDP, ICMP and other protocols are
 * "connections" that live as long as packets keep coming (timeouts).
 * State lives in struct ct_table, inside the firewall's private context.
 */
#ifndef SL_FW_CONNTRACK_H
#define SL_FW_CONNTRACK_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/pkt.h"

struct rte_hash;
struct rte_mbuf;
struct sl_nf;

/* Connection states. TCP uses SYN_SENT .. CLOSE; the others NEW/EST. */
enum ct_state {
	CT_SYN_SENT = 0, /* a SYN from the originator */
	CT_SYN_RECV,     /* and the SYN+ACK of the responder */
	CT_ESTABLISHED,  /* and the originator's ACK */
	CT_FIN_WAIT,     /* one side sent FIN */
	CT_LAST_ACK,     /* both sides sent FIN */
	CT_TIME_WAIT,    /* the last FIN was acknowledged */
	CT_CLOSE,        /* reset */
	CT_UDP_NEW,      /* non-TCP, no reply seen yet */
	CT_UDP_EST,      /* non-TCP, a reply seen */
	CT_N_STATES,
};

/* What the counters group states into. */
enum ct_group {
	CT_G_NEW = 0,
	CT_G_ESTABLISHED,
	CT_G_CLOSING,
	CT_N_GROUPS,
};

/* The timeouts, from the options (seconds). */
enum ct_timeout {
	CT_T_SYN = 0,
	CT_T_EST,
	CT_T_CLOSE,
	CT_T_UDP,
	CT_T_ICMP,
	CT_N_TIMEOUTS,
};

/* One connection; indexed by the rte_hash position of its key. */
struct ct_conn {
	uint64_t last_ns; /* last packet */
	uint8_t used;
	uint8_t state;    /* enum ct_state */
	uint8_t orig_rev; /* the originator is the key's dst side */
	uint8_t fin;      /* bit d: direction d (0 orig, 1 reply) sent FIN */
	uint8_t icmp;     /* ICMP or ICMPv6: icmp timeout */
};

/* What ct_lookup() says about a packet. */
enum ct_result {
	CT_PASS = 0, /* a packet of a tracked connection: allowed */
	CT_INVALID,  /* not valid in its connection's state: dropped */
	CT_MISS,     /* no connection: the rules decide (ct_commit) */
};

/* A packet being judged: its key and what ct_commit() needs. */
struct ct_pkt {
	/* canonical order; 8-byte aligned for rte_hash_crc's 8-byte loads */
	_Alignas(8) struct sl_5tuple key;
	uint8_t rev;   /* the packet runs dst -> src of key */
	uint8_t flags; /* TCP flags, 0 for others */
	uint8_t tcp;
	uint8_t echo;     /* ICMP(v6) echo: CT_ECHO_REQUEST or _REPLY, else 0 */
	uint8_t no_track; /* ICMP(v6) but not an echo: rules only */
};

#define CT_ECHO_REQUEST 1
#define CT_ECHO_REPLY 2

/* Counters, since init (one writer: the NF). */
struct ct_counters {
	uint64_t pkts[CT_N_GROUPS]; /* packets of tracked connections, by
				       their state after the packet */
	uint64_t invalid;           /* dropped: invalid in their state */
	uint64_t table_full;        /* dropped: allowed, but no room */
	uint64_t created, expired, reopened;
};

struct ct_table {
	struct rte_hash *h;
	struct ct_conn *conns; /* [n_slots] */
	uint32_t n_slots;
	uint32_t capacity; /* --ct-max */
	uint32_t n_conns;
	uint32_t n_group[CT_N_GROUPS]; /* connections per group */
	uint64_t timeout_ns[CT_N_STATES];
	uint64_t icmp_ns; /* the timeout of ICMP connections */
	uint32_t sweep_cursor;
	uint64_t last_sweep_ns;
	uint64_t sweep_period_ns; /* every slot visited once per period */
	struct ct_counters c;
};

/**
 * Makes the table: capacity connections, timeouts in seconds indexed by
 * enum ct_timeout. 0, or a positive errno after printing why.
 */
int ct_create(struct sl_nf *nf, struct ct_table *ct, uint32_t capacity,
	      const uint32_t *timeout_s, uint64_t now);
void ct_free(struct ct_table *ct);

/**
 * Looks the packet up (t: its sl_pkt_5tuple()). CT_PASS and CT_INVALID
 * are counted; CT_MISS leaves cp for ct_commit(). An expired connection
 * is removed first (counted as expired), as is a closed TCP connection
 * that a new SYN reopens (reopened): both are CT_MISS. A TCP packet of no
 * connection that is not a SYN (without ACK, FIN or RST) cannot start one:
 * CT_INVALID, whatever the rules say.
 */
enum ct_result ct_lookup(struct ct_table *ct, const struct rte_mbuf *m,
			 const struct sl_5tuple *t, uint64_t now,
			 struct ct_pkt *cp);

/**
 * ct_lookup() again for a CT_MISS packet, after the packets before it in
 * its burst: one of them may have made its connection (then counted as
 * ct_lookup() counts); else CT_MISS.
 */
enum ct_result ct_relookup(struct ct_table *ct, const struct ct_pkt *cp,
			   uint64_t now);

/**
 * The rules allowed a CT_MISS packet: makes its connection. CT_PASS, or
 * CT_INVALID when the table is full (counted as table_full).
 */
enum ct_result ct_commit(struct ct_table *ct, const struct ct_pkt *cp,
			 uint64_t now);

/** Removes expired connections, a slice of the table per call. */
void ct_sweep(struct ct_table *ct, uint64_t now);

/** Appends " conns=N ..." (README.md) to buf. */
void ct_format(const struct ct_table *ct, char *buf, size_t size);

/** The group of a state. */
enum ct_group ct_group_of(enum ct_state s);

#endif /* SL_FW_CONNTRACK_H */
