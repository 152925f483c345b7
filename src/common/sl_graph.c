/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "sl_graph.h"

static size_t
align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

size_t
sl_graph_size(uint16_t max_services, uint16_t n_nodes, uint32_t n_edges,
	      uint16_t n_hops)
{
	return align8(sizeof(struct sl_graph)) +
	       align8(sizeof(sl_hop_t) * max_services) +
	       align8(sizeof(uint32_t) * max_services) +
	       align8(sizeof(uint16_t) * max_services) +
	       align8(sizeof(sl_hop_t) * n_edges) +
	       align8(sizeof(uint16_t) * n_nodes) +
	       align8(sizeof(sl_hop_t) * n_hops);
}

void
sl_graph_layout(struct sl_graph *g, uint16_t max_services, uint16_t n_nodes,
		uint32_t n_edges, uint16_t n_hops)
{
	uint8_t *p = (uint8_t *)g + align8(sizeof(*g));

	g->next = (sl_hop_t *)p;
	p += align8(sizeof(sl_hop_t) * max_services);
	g->edge_off = (uint32_t *)p;
	p += align8(sizeof(uint32_t) * max_services);
	g->edge_n = (uint16_t *)p;
	p += align8(sizeof(uint16_t) * max_services);
	g->edges = (sl_hop_t *)p;
	p += align8(sizeof(sl_hop_t) * n_edges);
	g->nodes = (uint16_t *)p;
	p += align8(sizeof(uint16_t) * n_nodes);
	g->hops = (sl_hop_t *)p;
	g->n_nodes = n_nodes;
	g->n_edges = n_edges;
	g->n_hops = n_hops;
	for (uint16_t s = 0; s < max_services; s++)
		g->next[s] = SL_HOP_NONE;
}

uint32_t
sl_graph_spec_edges(const struct sl_graph_spec *s)
{
	uint32_t n = 0;

	for (uint16_t i = 0; i < s->n_nodes; i++)
		n += s->nodes[i].n_hops;
	return n;
}

static int
is_sink(const char *h)
{
	return strcmp(h, "drop") == 0 || strncmp(h, "port:", 5) == 0;
}

/* Index of the node named name, or -1. */
static int
node_index(const struct sl_graph_spec *s, const char *name)
{
	for (uint16_t i = 0; i < s->n_nodes; i++)
		if (strcmp(s->nodes[i].service, name) == 0)
			return i;
	return -1; /* none */
}

enum { WHITE = 0, GREY, BLACK };

/*
 * Depth-first search from node u; on a back edge writes the cycle into
 * err. Iterative, so a long graph cannot overflow the stack.
 */
static int
find_cycle(const struct sl_graph_spec *s, uint16_t root, uint8_t *color,
	   int *parent, char *err, size_t errlen)
{
	uint16_t *stack = malloc(sizeof(*stack) * s->n_nodes);
	uint16_t *next_edge = calloc(s->n_nodes, sizeof(*next_edge));
	int sp = 0, rc = 0;

	if (stack == NULL || next_edge == NULL) {
		snprintf(err, errlen, "out of memory checking graph '%s'",
			 s->name);
		free(stack);
		free(next_edge);
		return ENOMEM;
	}
	stack[sp++] = root;
	color[root] = GREY;
	parent[root] = -1;
	while (sp > 0 && rc == 0) {
		uint16_t u = stack[sp - 1];
		const struct sl_graph_spec_node *n = &s->nodes[u];

		if (next_edge[u] == n->n_hops) {
			color[u] = BLACK;
			sp--;
			continue;
		}
		const char *h = n->hops[next_edge[u]++];
		int v;

		if (is_sink(h) || (v = node_index(s, h)) < 0)
			continue;
		if (color[v] == WHITE) {
			color[v] = GREY;
			parent[v] = u;
			stack[sp++] = (uint16_t)v;
		} else if (color[v] == GREY) {
			/* Cycle: v -> ... -> u -> v. */
			size_t off = 0;
			int np = 0;
			int *path = malloc(sizeof(int) * s->n_nodes);

			if (path == NULL) {
				snprintf(err, errlen, "graph '%s': cycle",
					 s->name);
				rc = EINVAL;
				break;
			}
			for (int w = u; w != v && w >= 0; w = parent[w])
				path[np++] = w;
			path[np++] = v;
			off += (size_t)snprintf(err, errlen,
						"graph '%s': cycle ", s->name);
			for (int k = np - 1; k >= 0 && off < errlen; k--)
				off += (size_t)
					snprintf(err + off, errlen - off,
						 "%s -> ",
						 s->nodes[path[k]].service);
			if (off < errlen)
				snprintf(err + off, errlen - off,
					 "%s; a graph must be acyclic: "
					 "remove one of these edges",
					 s->nodes[v].service);
			free(path);
			rc = EINVAL;
		}
	}
	free(stack);
	free(next_edge);
	return rc;
}

int
sl_graph_check(const struct sl_graph_spec *s, const struct sl_chain_resolver *r,
	       char *err, size_t errlen)
{
	const char *name = s->name;
	int entry, rc = 0;

	if (name == NULL || !sl_name_valid(name)) {
		snprintf(err, errlen,
			 "graph name '%s' is not valid: use 1-%d characters "
			 "of A-Z a-z 0-9 _ - .",
			 name ? name : "", SL_NAME_LEN - 1);
		return EINVAL;
	}
	if (s->n_nodes == 0) {
		snprintf(err, errlen,
			 "graph '%s' has no nodes: list services with their "
			 "next hops, e.g. nodes: {firewall: [\"port:out\"]}",
			 name);
		return EINVAL;
	}
	for (uint16_t i = 0; i < s->n_nodes; i++) {
		const struct sl_graph_spec_node *n = &s->nodes[i];

		if (!sl_name_valid(n->service) || is_sink(n->service)) {
			snprintf(err, errlen,
				 "graph '%s': node '%s' is not a valid "
				 "service name (1-%d characters of A-Z a-z "
				 "0-9 _ - .)",
				 name, n->service, SL_NAME_LEN - 1);
			return EINVAL;
		}
		if (node_index(s, n->service) != i) {
			snprintf(err, errlen,
				 "graph '%s': node '%s' is listed twice; "
				 "list each service once with all its next "
				 "hops",
				 name, n->service);
			return EINVAL;
		}
		if (n->n_hops == 0) {
			snprintf(err, errlen,
				 "graph '%s': node '%s' has no next hop: "
				 "list at least one (the first is the "
				 "default), e.g. [\"port:out\"] or [drop]",
				 name, n->service);
			return EINVAL;
		}
		for (uint16_t k = 0; k < n->n_hops; k++) {
			const char *h = n->hops[k];

			for (uint16_t j = 0; j < k; j++)
				if (strcmp(n->hops[j], h) == 0) {
					snprintf(err, errlen,
						 "graph '%s': node '%s' lists "
						 "next hop '%s' twice",
						 name, n->service, h);
					return EINVAL;
				}
			if (strncmp(h, "port:", 5) == 0) {
				if (r->port(r->arg, h + 5) < 0) {
					snprintf(err, errlen,
						 "graph '%s': node '%s': no "
						 "port named '%s'; use a name "
						 "from port.list",
						 name, n->service, h + 5);
					return EINVAL;
				}
				continue;
			}
			if (strcmp(h, "drop") == 0)
				continue;
			if (node_index(s, h) < 0) {
				snprintf(err, errlen,
					 "graph '%s': node '%s': edge to "
					 "'%s', which is not a node of this "
					 "graph (add it under nodes, or use "
					 "port:NAME or drop)",
					 name, n->service, h);
				return EINVAL;
			}
		}
	}
	entry = s->entry == NULL ? 0 : node_index(s, s->entry);
	if (entry < 0) {
		snprintf(err, errlen,
			 "graph '%s': entry '%s' is not a node of the graph: "
			 "name one of its nodes, or leave entry out to start "
			 "at the first node",
			 name, s->entry);
		return EINVAL;
	}

	uint8_t *color = calloc(s->n_nodes, 1);
	int *parent = malloc(sizeof(int) * s->n_nodes);

	if (color == NULL || parent == NULL) {
		free(color);
		free(parent);
		snprintf(err, errlen, "out of memory checking graph '%s'",
			 name);
		return ENOMEM;
	}
	/* Reachability first (from the entry only), then cycles anywhere. */
	rc = find_cycle(s, (uint16_t)entry, color, parent, err, errlen);
	for (uint16_t i = 0; rc == 0 && i < s->n_nodes; i++)
		if (color[i] == WHITE) {
			snprintf(err, errlen,
				 "graph '%s': node '%s' is not reachable "
				 "from entry '%s': add an edge to it or "
				 "remove it",
				 name, s->nodes[i].service,
				 s->nodes[entry].service);
			rc = EINVAL;
		}
	free(color);
	free(parent);
	return rc;
}

int
sl_graph_compile(const struct sl_graph_spec *s,
		 const struct sl_chain_resolver *r, uint16_t max_services,
		 struct sl_graph *g, char *err, size_t errlen)
{
	int *ids;
	uint32_t off = 0;
	char e[160];
	int rc = sl_graph_check(s, r, err, errlen);

	if (rc != 0)
		return rc;
	ids = malloc(sizeof(int) * s->n_nodes);
	if (ids == NULL) {
		snprintf(err, errlen, "out of memory compiling graph '%s'",
			 s->name);
		return ENOMEM;
	}
	for (uint16_t i = 0; i < s->n_nodes; i++) {
		e[0] = '\0';
		ids[i] = r->service(r->arg, s->nodes[i].service, e, sizeof(e));
		if (ids[i] < 0 || ids[i] >= max_services) {
			snprintf(err, errlen, "graph '%s': node '%s': %s",
				 s->name, s->nodes[i].service,
				 ids[i] < 0 ? e : "service id out of range");
			rc = ids[i] == -ENOSPC ? ENOSPC : EINVAL;
			free(ids);
			return rc;
		}
	}
	snprintf(g->name, sizeof(g->name), "%s", s->name);
	g->open = 0;
	for (uint16_t i = 0; i < s->n_nodes; i++) {
		const struct sl_graph_spec_node *n = &s->nodes[i];
		uint16_t sid = (uint16_t)ids[i];

		g->nodes[i] = sid;
		g->edge_off[sid] = off;
		g->edge_n[sid] = n->n_hops;
		for (uint16_t k = 0; k < n->n_hops; k++) {
			const char *h = n->hops[k];
			sl_hop_t hop;

			if (strcmp(h, "drop") == 0)
				hop = SL_HOP_DROP;
			else if (strncmp(h, "port:", 5) == 0)
				hop = SL_HOP_PORT(
					(uint16_t)r->port(r->arg, h + 5));
			else
				hop = SL_HOP_SERVICE(
					(uint16_t)ids[node_index(s, h)]);
			g->edges[off++] = hop;
		}
		g->next[sid] = g->edges[g->edge_off[sid]];
	}
	g->first = SL_HOP_SERVICE(
		(uint16_t)ids[s->entry == NULL ? 0 : node_index(s, s->entry)]);
	free(ids);
	return 0;
}

void
sl_graph_from_chain(struct sl_graph *g, uint16_t max_services, sl_hop_t first,
		    const sl_hop_t *next, const sl_hop_t *hops, uint16_t n_hops)
{
	uint32_t off = 0;
	uint16_t nn = 0;

	g->open = 1;
	g->first = first;
	for (uint16_t s = 0; s < max_services; s++) {
		g->next[s] = next[s];
		if (next[s] == SL_HOP_NONE)
			continue;
		g->edge_off[s] = off;
		g->edge_n[s] = 1;
		g->edges[off++] = next[s];
	}
	for (uint16_t i = 0; i < n_hops; i++) {
		g->hops[i] = hops[i];
		if (sl_verdict_kind(hops[i]) != SL_VERDICT_TO)
			continue;
		uint16_t sid = sl_verdict_id(hops[i]);
		int seen = 0;

		for (uint16_t k = 0; k < nn; k++)
			seen |= g->nodes[k] == sid;
		if (!seen && nn < g->n_nodes)
			g->nodes[nn++] = sid;
	}
	g->n_nodes = nn;
	g->n_edges = off;
}

void
sl_hop_format(const struct sl_shm *shm, sl_hop_t h, char *buf, size_t size)
{
	uint16_t id = sl_verdict_id(h);

	switch (sl_verdict_kind(h)) {
	case SL_VERDICT_TO:
		snprintf(buf, size, "%s",
			 id < shm->max_services ? shm->services[id].name : "?");
		break;
	case SL_VERDICT_OUT:
		snprintf(buf, size, "port:%s",
			 id < SL_MAX_PORTS ? shm->ports[id].name : "?");
		break;
	case SL_VERDICT_DROP:
		snprintf(buf, size, "drop");
		break;
	default:
		snprintf(buf, size, "next");
	}
}
