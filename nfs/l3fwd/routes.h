/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-l3fwd's routes file (README.md, "Routes file") and the tables it
 * is compiled into: an rte_lpm for IPv4 and an rte_lpm6 for IPv6 whose
 * next hops index an array of {egress port, destination MAC, source MAC},
 * and each port's router addresses (the source of the ICMP errors sent
 * back through it). Loading only reads the file and builds new tables, so
 * it can run in a thread while the data path uses the old ones.
 */
#ifndef SL_L3FWD_ROUTES_H
#define SL_L3FWD_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include <rte_ether.h>

struct rte_lpm;
struct rte_lpm6;
struct sl_nf;

#define L3_MAX_PORTS 32 /* ethdev ids this NF routes to (SL_MAX_PORTS) */
#define L3_ERR_LEN 512

/* Where a route sends a packet. */
struct l3_nh {
	uint16_t port;             /* egress ethdev id */
	struct rte_ether_addr dst; /* the next hop's MAC */
	struct rte_ether_addr src; /* the egress port's MAC */
	uint8_t pad[2];
};

/* A port the file names. */
struct l3_port {
	uint8_t used;
	uint8_t has_v4, has_v6;
	uint32_t v4;    /* the router's IPv4 address, network order */
	uint8_t v6[16]; /* its IPv6 address */
	struct rte_ether_addr mac; /* the port's MAC */
	char name[32];
};

/* Bounds, from the options. */
struct l3_limits {
	uint32_t max_routes; /* per family, neighbours' host routes included */
	uint32_t tbl8_v4;    /* rte_lpm tbl8 groups */
	uint32_t tbl8_v6;    /* rte_lpm6 tbl8 groups */
};

/* A compiled routes file. */
struct l3_table {
	struct rte_lpm *lpm4;  /* NULL: no IPv4 route */
	struct rte_lpm6 *lpm6; /* NULL: no IPv6 route */
	struct l3_nh *nh;      /* [n_nh] */
	uint32_t n_nh;
	uint32_t n_routes4, n_routes6, n_neigh, n_ports;
	struct l3_port ports[L3_MAX_PORTS]; /* by ethdev id */
	int64_t def4, def6;        /* nh[] of the default route (rte_lpm takes
			       depths from 1), or -1 */
	uint32_t n_mine4, n_mine6; /* the router's addresses, packed */
	uint32_t mine4[L3_MAX_PORTS];
	uint8_t mine6[L3_MAX_PORTS][16];
	int any_v4, any_v6; /* ports[] index with an address of that family,
			       for ports without one; -1: none */
};

/*
 * Reads path and builds its tables into *out. nf looks the port names up
 * (sl_port_id) and gen makes the LPM names unique. Returns 0, or a
 * negative errno with err set to "PATH:LINE: problem" (or "PATH: ...").
 * Prints nothing.
 */
int l3_table_load(struct sl_nf *nf, const char *path,
		  const struct l3_limits *lim, unsigned gen,
		  struct l3_table **out, char *err, size_t err_size);
void l3_table_free(struct l3_table *t);

#endif /* SL_L3FWD_ROUTES_H */
