/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat: its state (the NF's private context), the mapping table
 * (nat_table.c) and the packet rewriting (nat_xlate.c). See README.md.
 */
#ifndef SL_NAT_H
#define SL_NAT_H

#include <stdint.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nat_conf.h"

#define NAT_PROG "sluice-nat"

/* Which way a packet goes: from the inside port out, or back in. */
enum nat_dir {
	NAT_OUT = 0, /* inside -> outside: source rewritten */
	NAT_IN = 1,  /* outside -> inside: destination rewritten */
};

/* A mapping's timer class: its timeout is nat_state.timeout_ns[class]. */
enum nat_timer {
	NAT_T_TCP_SYN = 0, /* TCP, only the opening side seen so far */
	NAT_T_TCP_EST,     /* TCP, both sides seen, no FIN or RST */
	NAT_T_TCP_FIN,     /* TCP, a FIN seen */
	NAT_T_TCP_RST,     /* TCP, an RST seen */
	NAT_T_UDP,
	NAT_T_ICMP,
	NAT_T_MAX
};

/* Drop reasons, each a counter (README.md lists them). */
enum nat_drop {
	NAT_D_TABLE_FULL = 0, /* no free mapping or table slot */
	NAT_D_NO_PORT,        /* no free outside port for a new mapping */
	NAT_D_NO_MAPPING,     /* from outside, matching no mapping/forward */
	NAT_D_FRAGMENT,       /* a later fragment whose first one NAT has
				 not translated (not seen yet, or its entry
				 was taken by another datagram's) */
	NAT_D_NOT_IPV4,       /* non-IP or IPv6 */
	NAT_D_PROTO,          /* IPv4 but not TCP, UDP or ICMP */
	NAT_D_MALFORMED,      /* a header cut short or invalid */
	NAT_D_ICMP_TYPE,      /* ICMP other than echo, unreachable, time
				 exceeded */
	NAT_D_UNKNOWN_PORT,   /* entered by neither --inside nor --outside */
	NAT_D_MAX
};

/*
 * One translation: inside int_addr:int_port talks to remote
 * rem_addr:rem_port as ext_addr:ext_port. Network order. For ICMP echo
 * the ports are the identifiers (rem_port 0).
 */
struct nat_map {
	uint32_t int_addr, ext_addr, rem_addr;
	uint16_t int_port, ext_port, rem_port;
	uint8_t proto; /* IPPROTO_TCP, _UDP, _ICMP */
	uint8_t timer; /* enum nat_timer */
	uint8_t orig;  /* enum nat_dir of the packet that made it */
	uint8_t used;
	uint8_t hairpin; /* rem_addr is NAT's own (a pool or forward
			    address): going out it comes back in */
	uint64_t expire_ns;
	uint64_t pkts[2]; /* per enum nat_dir */
};

struct nat_counters {
	uint64_t pkts, bytes;
	uint64_t xlated[2]; /* per enum nat_dir */
	uint64_t icmp_errors;
	uint64_t created, expired;
	uint64_t drops[NAT_D_MAX];
	uint64_t cache_hits; /* found through the flow-hash cache */
	uint64_t hairpins;   /* inside to inside through NAT's addresses */
};

/* A fragmented datagram whose first fragment NAT translated: its later
 * fragments (no L4 header) get the same address. As they arrive: the
 * addresses before translation, network order. */
struct nat_frag {
	uint32_t src, dst;
	uint16_t ip_id;
	uint8_t proto, dir;
	uint32_t new_addr; /* the source (out) or destination (in) */
	uint64_t expire_ns;
};

/* The NF's private context: options first (libsluice stores them). */
struct nat_state {
	const char *conf_path; /* --config */
	int in_port, out_port; /* --inside, --outside */
	int next;              /* --send: 0 out of the other port, 1 NEXT */
	uint32_t max_maps;     /* --mappings */
	uint32_t port_tries;   /* --port-tries */
	uint32_t timeout_s[NAT_T_MAX];
	uint64_t stats_ms; /* --stats-ms */
	uint32_t n_frags;  /* --fragments */

	uint64_t timeout_ns[NAT_T_MAX];
	struct nat_conf *conf;
	struct rte_hash *h;
	uint32_t *slot; /* table position -> mapping index */
	uint32_t n_slots;
	struct nat_map *maps; /* [max_maps] */
	uint32_t *free_idx;   /* a stack of free mapping indexes */
	uint32_t *cache;      /* sl_pkt_flow_hash() & cache_mask -> a
				 mapping index (a hint, checked) */
	uint32_t cache_mask;
	struct nat_frag *frags; /* [frag_mask + 1], by a hash of the key */
	uint32_t frag_mask;
	uint32_t n_free;
	uint32_t sweep_pos;
	struct sl_stats_line line;
	struct nat_counters cnt;
};

/* nat_table.c */
int nat_table_init(struct sl_nf *nf, struct nat_state *st);
void nat_table_free(struct nat_state *st);
/* The mapping whose key is (src:sport > dst:dport) seen going dir, live
 * at now (an expired one is removed and not returned), or NULL. */
struct nat_map *nat_find(struct nat_state *st, enum nat_dir dir, uint8_t proto,
			 uint32_t src, uint16_t sport, uint32_t dst,
			 uint16_t dport, uint64_t now);
/* nat_find() for a packet whose tuple that is, with flow hash fh
 * (sl_pkt_flow_hash(), 0: none): the cache's mapping for fh when it is
 * the packet's, else the table's (then cached). */
struct nat_map *nat_find_pkt(struct nat_state *st, enum nat_dir dir,
			     uint8_t proto, uint32_t src, uint16_t sport,
			     uint32_t dst, uint16_t dport, uint64_t now,
			     uint32_t fh);
/* Remembers mp as flow hash fh's mapping. */
void nat_cache_put(struct nat_state *st, uint32_t fh, const struct nat_map *mp);
/* A new source NAT mapping for an inside packet; NULL with *why set
 * (NAT_D_TABLE_FULL or NAT_D_NO_PORT). */
struct nat_map *nat_snat_new(struct nat_state *st, uint8_t proto, uint32_t src,
			     uint16_t sport, uint32_t dst, uint16_t dport,
			     uint64_t now, enum nat_drop *why);
/* A new mapping for a packet from outside to a forward; NULL if none
 * matches (*why NAT_D_NO_MAPPING) or the table is full. */
struct nat_map *nat_dnat_new(struct nat_state *st, uint8_t proto, uint32_t src,
			     uint16_t sport, uint32_t dst, uint16_t dport,
			     uint64_t now, enum nat_drop *why);
/* Removes up to budget expired mappings, from where the last call
 * stopped. */
void nat_sweep(struct nat_state *st, uint64_t now, uint32_t budget);
uint32_t nat_active(const struct nat_state *st);

/* The entry of a datagram's fragments (nat_table.c). */
struct nat_frag *nat_frag_slot(struct nat_state *st, uint32_t src, uint32_t dst,
			       uint16_t ip_id, uint8_t proto, enum nat_dir dir);

/* nat_xlate.c's result for a packet from inside that was translated
 * both ways (hairpinning) and goes back to the inside port. */
#define NAT_HAIRPIN (NAT_D_MAX + 1)

/* nat_xlate.c: NAT_D_MAX (translated) or NAT_HAIRPIN, or a drop
 * reason. */
int nat_xlate(struct nat_state *st, struct rte_mbuf *m, enum nat_dir dir,
	      uint64_t now);

#endif /* SL_NAT_H */
