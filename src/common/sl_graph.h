/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service graphs: validation and compilation of a graph description into
 * the shared struct sl_graph. Pure code (no EAL): the unit tests call it
 * directly, sluiced allocates the result in hugepages.
 *
 * A graph is a DAG of services from an entry node to sinks. Each node
 * lists its allowed next hops, the first being its default; a hop is a
 * service that is a node of the same graph, "port:NAME" or "drop".
 * Rejected: no nodes, a bad or repeated name, a node without next hop, an
 * edge to a service that is not a node, an unknown port, a cycle, a node
 * not reachable from the entry. Messages name the graph and the node.
 */
#ifndef SL_GRAPH_H
#define SL_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "sl_chain.h"
#include "sl_shared.h"

struct sl_graph_spec_node {
	const char *service;
	const char *const *hops; /* [n_hops], hops[0] is the default */
	uint16_t n_hops;
};

struct sl_graph_spec {
	const char *name;
	const char *entry; /* NULL: nodes[0] */
	const struct sl_graph_spec_node *nodes;
	uint16_t n_nodes;
};

/* Bytes an sl_graph with these counts needs (arrays included). */
size_t sl_graph_size(uint16_t max_services, uint16_t n_nodes, uint32_t n_edges,
		     uint16_t n_hops);

/* Points the arrays of g (allocated with sl_graph_size bytes, zeroed) at
 * the memory that follows it. */
void sl_graph_layout(struct sl_graph *g, uint16_t max_services,
		     uint16_t n_nodes, uint32_t n_edges, uint16_t n_hops);

/* Total edges of a spec (for sl_graph_size). */
uint32_t sl_graph_spec_edges(const struct sl_graph_spec *s);

/*
 * Checks the spec (everything that needs no service id: names, ports,
 * edges, defaults, cycles, reachability). Runs before r->service is
 * called, so a rejected graph creates no service. 0, or EINVAL (ENOMEM)
 * with err filled.
 */
int sl_graph_check(const struct sl_graph_spec *s,
		   const struct sl_chain_resolver *r, char *err, size_t errlen);

/*
 * Checks and compiles s into g (laid out by sl_graph_layout). Services are
 * resolved (and created) through r. 0, or EINVAL (ENOSPC: no room for a
 * service; ENOMEM) with err filled.
 */
int sl_graph_compile(const struct sl_graph_spec *s,
		     const struct sl_chain_resolver *r, uint16_t max_services,
		     struct sl_graph *g, char *err, size_t errlen);

/*
 * Fills g (laid out for n chain hops) from a compiled chain: an open graph
 * whose node s has the single edge next[s].
 */
void sl_graph_from_chain(struct sl_graph *g, uint16_t max_services,
			 sl_hop_t first, const sl_hop_t *next,
			 const sl_hop_t *hops, uint16_t n_hops);

/* 1 if hop is an allowed next hop of service s in g (always, if open). */
static inline int
sl_graph_allows(const struct sl_graph *g, uint16_t s, sl_hop_t hop)
{
	if (g->open)
		return 1;
	for (uint16_t i = 0; i < g->edge_n[s]; i++)
		if (g->edges[g->edge_off[s] + i] == hop)
			return 1;
	return 0;
}

/* 1 if service s is a node of g. */
static inline int
sl_graph_has(const struct sl_graph *g, uint16_t s)
{
	return g->edge_n[s] > 0 || g->next[s] != SL_HOP_NONE;
}

/* Hop h's name into buf: a service, "port:NAME", "drop" or "next" ("?"
 * for a service or port that does not exist). */
void sl_hop_format(const struct sl_shm *shm, sl_hop_t h, char *buf,
		   size_t size);

#endif /* SL_GRAPH_H */
