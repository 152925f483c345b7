/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Read-only views of what sluiced has published in shared memory, used by
 * several modules, below all of them: a hop as JSON, a graph by name, and
 * whether the default chain is complete. graph.c publishes the graphs;
 * these only read the current versions (control thread).
 */
#include <string.h>

#include "sl_graph.h"
#include "sluiced.h"

json_t *
mgr_hop_json(const struct sl_shm *shm, sl_hop_t h)
{
	char buf[SL_NAME_LEN + 8];

	if (sl_verdict_kind(h) == SL_VERDICT_NEXT)
		return json_null();
	sl_hop_format(shm, h, buf, sizeof(buf));
	return json_string(buf);
}

int
mgr_graph_lookup(const struct sl_mgr *m, const char *name)
{
	const struct sl_shm *shm = m->shm;

	for (uint16_t id = 0; id < shm->max_graphs; id++) {
		uint16_t slot = shm->graph_cur[id];

		if (slot != SL_GRAPH_NONE &&
		    strcmp(shm->gtab[slot]->name, name) == 0)
			return id;
	}
	return -1; /* none */
}

int
mgr_chain_complete(const struct sl_mgr *m)
{
	uint16_t slot = m->shm->graph_cur[0];
	const struct sl_graph *g = slot == SL_GRAPH_NONE ? NULL
							 : m->shm->gtab[slot];

	if (g == NULL)
		return 0;
	for (uint16_t i = 0; i < g->n_nodes; i++)
		if (m->shm->services[g->nodes[i]].n_live == 0)
			return 0;
	return 1;
}
