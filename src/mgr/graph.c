/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Service graphs in sluiced (control thread): apply, get, remove, and the
 * default chain as graph 0.
 *
 * Each applied graph is a new immutable version in a free slot of the
 * version table (shm->gtab); the logical graph then points at that slot.
 * Packets carry the version they entered with, so a version that is
 * replaced (or removed) stays readable while packets may still use it: it
 * is retired, and its slot is recycled only once it is old (a second) and
 * a grace period has passed. A packet never sees half a graph, and a
 * change under traffic loses none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "sl_chain.h"
#include "sl_graph.h"
#include "sluiced.h"

#define RETIRE_MIN_MS 1000

/*
 * Services the resolver created for the graph or chain being applied
 * (m->graphs.created). A service is never freed once it has been used (it
 * keeps the counts of its instances, and flows and kept requests name it
 * by id), so one that a refused apply created (a typo, a cycle, no room)
 * is released at once: nothing has seen it yet, and otherwise every
 * refused apply with a new name would use one of --max-services up for
 * good.
 */
static int
resolve_service(void *arg, const char *name, char *err, size_t errlen)
{
	struct sl_mgr *m = arg;
	struct sl_graphs_state *gs = &m->graphs;
	int id;
	int rc = mgr_service_get(m, name, 0, &id, err, errlen);

	if (rc == ENOENT) {
		rc = mgr_service_get(m, name, 1, &id, err, errlen);
		if (rc == 0 && gs->created != NULL)
			gs->created[gs->n_created++] = (uint16_t)id;
	}
	/* sl_graph's resolver convention: an id, or a negative errno */
	return rc != 0 ? -rc : id;
}

static int
created_begin(struct sl_mgr *m, char *err, size_t errlen)
{
	struct sl_graphs_state *gs = &m->graphs;

	gs->n_created = 0;
	gs->created = malloc(sizeof(*gs->created) * m->shm->max_services);
	if (gs->created == NULL) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	return 0;
}

static void
created_end(struct sl_mgr *m, int failed)
{
	struct sl_graphs_state *gs = &m->graphs;

	for (uint16_t i = 0; failed && i < gs->n_created; i++)
		mgr_service_release(m, gs->created[i]);
	free(gs->created);
	gs->created = NULL;
	gs->n_created = 0;
}

static int
resolve_port(void *arg, const char *name)
{
	return mgr_port_by_name(arg, name);
}

/* Names of a graph or chain being applied to m's services and ports */
static struct sl_chain_resolver
resolver(struct sl_mgr *m)
{
	return (struct sl_chain_resolver){.service = resolve_service,
					  .port = resolve_port,
					  .arg = m};
}

/* A slot for a new version: an empty one, or the oldest retired one whose
 * time has come. -1 if none. */
static int
slot_get(struct sl_mgr *m)
{
	struct sl_shm *shm = m->shm;
	struct sl_graph_slot *gslot = m->graphs.slot;
	uint64_t now = rte_rdtsc();
	int best = -1;

	for (int i = 0; i < SL_GRAPH_SLOTS; i++)
		if (shm->gtab[i] == NULL)
			return i;
	for (int i = 0; i < SL_GRAPH_SLOTS; i++) {
		if (!gslot[i].retired ||
		    now - gslot[i].since < RETIRE_MIN_MS * shm->ms_hz ||
		    !sl_grace_passed(&gslot[i].grace, shm, -1, 1))
			continue;
		if (best < 0 || gslot[i].since < gslot[best].since)
			best = i;
	}
	if (best >= 0) {
		struct sl_graph *old = shm->gtab[best];

		__atomic_store_n(&shm->gtab[best], NULL, __ATOMIC_RELEASE);
		rte_free(old);
		gslot[best].retired = 0;
	}
	return best;
}

static void
slot_retire(struct sl_mgr *m, uint16_t slot)
{
	struct sl_graph_slot *gslot = m->graphs.slot;

	if (slot == SL_GRAPH_NONE)
		return;
	gslot[slot].retired = 1;
	gslot[slot].since = rte_rdtsc();
	(void)sl_grace_start(&gslot[slot].grace, m->shm);
}

/* Makes g the current version of logical graph id. */
static int
publish(struct sl_mgr *m, struct sl_graph *g, uint16_t id, char *err,
	size_t errlen)
{
	struct sl_shm *shm = m->shm;
	int slot = slot_get(m);
	uint16_t old;

	if (slot < 0) {
		snprintf(err, errlen,
			 "%d graph versions are still in use by packets in "
			 "flight: try again in a second",
			 SL_GRAPH_SLOTS);
		return EBUSY;
	}
	g->version = ++m->graphs.version;
	g->tag = (uint8_t)g->version;
	g->id = id;
	g->slot = (uint16_t)slot;
	__atomic_store_n(&shm->gtab[slot], g, __ATOMIC_RELEASE);
	old = shm->graph_cur[id];
	__atomic_store_n(&shm->graph_cur[id], (uint16_t)slot, __ATOMIC_RELEASE);
	slot_retire(m, old);
	return 0;
}

static int
graph_id(const struct sl_mgr *m, const char *name)
{
	return mgr_graph_lookup(m, name);
}

static const struct sl_graph *
current(const struct sl_mgr *m, uint16_t id)
{
	uint16_t slot = m->shm->graph_cur[id];

	return slot == SL_GRAPH_NONE ? NULL : m->shm->gtab[slot];
}

/* ---- the default chain (graph 0) ---------------------------------- */

int
mgr_chain_apply(struct sl_mgr *m, const char *const *hops, uint16_t n,
		char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	uint16_t ms = shm->max_services;
	const struct sl_chain_resolver r = resolver(m);
	sl_hop_t first, *next, *list;
	struct sl_graph *g;
	size_t sz;
	int rc;

	next = malloc(sizeof(*next) * ms);
	list = malloc(sizeof(*list) * (n ? n : 1));
	if (next == NULL || list == NULL) {
		free(next);
		free(list);
		snprintf(err, errlen, "out of memory for a chain of %u hops",
			 n);
		return ENOMEM;
	}
	rc = created_begin(m, err, errlen);
	if (rc != 0)
		goto out;
	rc = sl_chain_compile(hops, n, &r, ms, &first, next, list, err, errlen);
	if (rc != 0)
		goto out;
	sz = sl_graph_size(ms, n, ms, n);
	g = rte_zmalloc("sl_graph", sz, RTE_CACHE_LINE_SIZE);
	if (g == NULL) {
		snprintf(err, errlen, "out of memory for a chain of %u hops",
			 n);
		rc = ENOMEM;
		goto out;
	}
	sl_graph_layout(g, ms, n, ms, n);
	sl_graph_from_chain(g, ms, first, next, list, n);
	snprintf(g->name, sizeof(g->name), "default");
	rc = publish(m, g, 0, err, errlen);
	if (rc != 0) {
		rte_free(g);
		goto out;
	}
	mgr_maybe_enable_rx(m);
	mgr_event(m, "chain.set",
		  json_pack("{s:i, s:o}", "version", g->version, "hops",
			    mgr_chain_json(m)));
out:
	created_end(m, rc != 0);
	free(next);
	free(list);
	return rc;
}

json_t *
mgr_graph_idle_note(const struct sl_mgr *m, uint16_t id)
{
	enum { SHOWN = 8 };
	const struct sl_graph *g = current(m, id);
	char names[SHOWN * (SL_NAME_LEN + 4) + 32];
	size_t len = 0;
	uint16_t n = 0;

	for (uint16_t i = 0; g != NULL && i < g->n_nodes; i++) {
		const struct sl_service *s = &m->shm->services[g->nodes[i]];

		if (__atomic_load_n(&s->n_live, __ATOMIC_ACQUIRE) != 0)
			continue;
		/* (names holds SHOWN names of SL_NAME_LEN and the tail: the
		 * guard only keeps len in bounds if that ever changes) */
		if (n++ < SHOWN && len < sizeof(names))
			len += (size_t)snprintf(names + len,
						sizeof(names) - len, "%s'%s'",
						n > 1 ? ", " : "", s->name);
	}
	if (n == 0)
		return NULL;
	if (n > SHOWN && len < sizeof(names))
		snprintf(names + len, sizeof(names) - len, " and %u more",
			 n - SHOWN);
	return json_sprintf("%s %s %s no running instance: packets sent to %s "
			    "are dropped (no_instance) until one registers; "
			    "see nf.list",
			    n == 1 ? "service" : "services", names,
			    n == 1 ? "has" : "have", n == 1 ? "it" : "them");
}

json_t *
mgr_chain_json(const struct sl_mgr *m)
{
	const struct sl_graph *g = current(m, 0);
	json_t *a = json_array();

	for (uint16_t i = 0; g != NULL && i < g->n_hops; i++)
		json_array_append_new(a, mgr_hop_json(m->shm, g->hops[i]));
	return a;
}

uint32_t
mgr_chain_version(const struct sl_mgr *m)
{
	const struct sl_graph *g = current(m, 0);

	return g == NULL ? 0 : g->version;
}

/* ---- graphs ------------------------------------------------------- */

json_t *
mgr_graph_json(const struct sl_mgr *m, const struct sl_graph *g)
{
	const struct sl_shm *shm = m->shm;
	json_t *nodes = json_object();

	for (uint16_t i = 0; i < g->n_nodes; i++) {
		uint16_t s = g->nodes[i];
		json_t *e = json_array();

		for (uint16_t k = 0; k < g->edge_n[s]; k++)
			json_array_append_new(
				e, mgr_hop_json(shm,
						g->edges[g->edge_off[s] + k]));
		json_object_set_new(nodes, shm->services[s].name, e);
	}
	return json_pack("{s:s, s:i, s:i, s:o, s:o, s:b}", "name", g->name,
			 "id", g->id, "version", (int)g->version, "entry",
			 mgr_hop_json(shm, g->first), "nodes", nodes, "chain",
			 g->open);
}

json_t *
mgr_graphs_json(const struct sl_mgr *m, const char *name, char *err,
		size_t errlen)
{
	json_t *a;

	if (name != NULL) {
		int id = graph_id(m, name);

		if (id < 0) {
			snprintf(err, errlen,
				 "no graph named '%s'; see graph.get", name);
			return NULL;
		}
		return mgr_graph_json(m, current(m, (uint16_t)id));
	}
	a = json_array();
	for (uint16_t id = 0; id < m->shm->max_graphs; id++)
		if (current(m, id) != NULL)
			json_array_append_new(a,
					      mgr_graph_json(m,
							     current(m, id)));
	return json_pack("{s:o}", "graphs", a);
}

/* Reads {name, entry?, nodes: {svc: [hops]}} into spec (strings point
 * into the JSON). */
static int
spec_from_json(json_t *p, struct sl_graph_spec *spec,
	       struct sl_graph_spec_node **nodes_out, const char ***hops_out,
	       char *err, size_t errlen)
{
	json_t *nodes = json_object_get(p, "nodes"), *v, *entry;
	const char *key, **hops;
	struct sl_graph_spec_node *nodes_a;
	size_t n = 0, nh = 0, i = 0, h = 0;

	spec->name = json_string_value(json_object_get(p, "name"));
	if (spec->name == NULL) {
		snprintf(err, errlen, "graph.apply needs a \"name\" (string)");
		return EINVAL;
	}
	if (!json_is_object(nodes)) {
		snprintf(err, errlen,
			 "graph '%s': \"nodes\" must be an object mapping "
			 "each service to its list of next hops",
			 spec->name);
		return EINVAL;
	}
	entry = json_object_get(p, "entry");
	if (entry != NULL && !json_is_string(entry) && !json_is_null(entry)) {
		snprintf(err, errlen,
			 "graph '%s': \"entry\" must be a "
			 "service name",
			 spec->name);
		return EINVAL;
	}
	spec->entry = json_string_value(entry);
	json_object_foreach(nodes, key, v)
	{
		if (!json_is_array(v)) {
			snprintf(err, errlen,
				 "graph '%s': node '%s': next hops must be a "
				 "list, e.g. [\"port:out\"]",
				 spec->name, key);
			return EINVAL;
		}
		n++;
		nh += json_array_size(v);
	}
	if (n > UINT16_MAX || nh > UINT16_MAX * 4) {
		snprintf(err, errlen, "graph '%s' is too large", spec->name);
		return EINVAL;
	}
	nodes_a = calloc(n ? n : 1, sizeof(*nodes_a));
	hops = calloc(nh ? nh : 1, sizeof(*hops));
	if (nodes_a == NULL || hops == NULL) {
		free(nodes_a);
		free(hops);
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	json_object_foreach(nodes, key, v)
	{
		size_t k;
		json_t *x;

		nodes_a[i].service = key;
		nodes_a[i].hops = &hops[h];
		nodes_a[i].n_hops = (uint16_t)json_array_size(v);
		json_array_foreach(v, k, x)
		{
			if (!json_is_string(x)) {
				snprintf(err, errlen,
					 "graph '%s': node '%s': next hop %zu "
					 "is not a string",
					 spec->name, key, k + 1);
				free(nodes_a);
				free(hops);
				return EINVAL;
			}
			hops[h++] = json_string_value(x);
		}
		i++;
	}
	spec->nodes = nodes_a;
	spec->n_nodes = (uint16_t)n;
	*nodes_out = nodes_a;
	*hops_out = hops;
	return 0;
}

int
mgr_graph_apply_json(struct sl_mgr *m, json_t *p, json_t **out, char *err,
		     size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const struct sl_chain_resolver r = resolver(m);
	struct sl_graph_spec spec;
	struct sl_graph_spec_node *nodes = NULL;
	const char **hops = NULL;
	struct sl_graph *g = NULL;
	uint32_t ne;
	int id, rc;

	rc = spec_from_json(p, &spec, &nodes, &hops, err, errlen);
	if (rc != 0)
		return rc;
	rc = sl_graph_check(&spec, &r, err, errlen);
	if (rc != 0)
		goto out;
	id = graph_id(m, spec.name);
	if (id < 0) {
		for (uint16_t i = 1; i < shm->max_graphs && id < 0; i++)
			if (shm->graph_cur[i] == SL_GRAPH_NONE)
				id = i;
		if (strcmp(spec.name, "default") == 0)
			id = 0;
		if (id < 0) {
			snprintf(err, errlen,
				 "all %u graphs are in use: remove one or "
				 "raise --max-graphs",
				 shm->max_graphs);
			rc = ENOSPC;
			goto out;
		}
	}
	ne = sl_graph_spec_edges(&spec);
	g = rte_zmalloc("sl_graph",
			sl_graph_size(shm->max_services, spec.n_nodes, ne, 0),
			RTE_CACHE_LINE_SIZE);
	if (g == NULL) {
		snprintf(err, errlen, "out of memory for graph '%s'",
			 spec.name);
		rc = ENOMEM;
		goto out;
	}
	sl_graph_layout(g, shm->max_services, spec.n_nodes, ne, 0);
	rc = created_begin(m, err, errlen);
	if (rc == 0)
		rc = sl_graph_compile(&spec, &r, shm->max_services, g, err,
				      errlen);
	if (rc == 0)
		rc = publish(m, g, (uint16_t)id, err, errlen);
	created_end(m, rc != 0);
	if (rc != 0) {
		rte_free(g);
		goto out;
	}
	if (id == 0)
		mgr_maybe_enable_rx(m);
	if (shm->flow.hash != NULL && spec.n_nodes > shm->flow.n_pins)
		mgr_log(m,
			"graph '%s' has %u services but a flow is pinned to an "
			"instance at %u at most (--flow-pins): past that, its "
			"instance follows the hash buckets, which move when a "
			"replica joins; raise --flow-pins for sticky flows "
			"there",
			g->name, spec.n_nodes, shm->flow.n_pins);
	*out = json_pack("{s:s, s:i, s:i}", "name", g->name, "id", id,
			 "version", (int)g->version);
	if (*out != NULL) {
		json_t *note = mgr_graph_idle_note(m, (uint16_t)id);

		if (note != NULL)
			json_object_set_new(*out, "note", note);
	}
	mgr_event(m, "graph.applied",
		  json_pack("{s:s, s:i, s:i}", "name", g->name, "id", id,
			    "version", (int)g->version));
out:
	free(nodes);
	free(hops);
	return rc;
}

int
mgr_graph_remove(struct sl_mgr *m, const char *name, uint32_t *rules, char *err,
		 size_t errlen)
{
	int id = graph_id(m, name);
	uint16_t old;

	if (id < 0) {
		snprintf(err, errlen, "no graph named '%s'; see graph.get",
			 name);
		return ENOENT;
	}
	if (id == 0) {
		snprintf(err, errlen,
			 "graph 'default' is the default chain and cannot be "
			 "removed; replace it with chain.set or graph.apply");
		return EINVAL;
	}
	*rules = mgr_rules_remove_graph(m, (uint16_t)id);
	/* Before the id is free for another graph (release below). */
	mgr_flow_graph_removed(m->flow, (uint16_t)id);
	old = m->shm->graph_cur[id];
	__atomic_store_n(&m->shm->graph_cur[id], SL_GRAPH_NONE,
			 __ATOMIC_RELEASE);
	slot_retire(m, old);
	mgr_event(m, "graph.removed",
		  json_pack("{s:s, s:I}", "name", name, "rules_removed",
			    (json_int_t)*rules));
	return 0;
}

void
mgr_graphs_close(struct sl_mgr *m)
{
	struct sl_graph_slot *gslot = m->graphs.slot;

	for (int i = 0; i < SL_GRAPH_SLOTS; i++) {
		rte_free(m->shm->gtab[i]);
		m->shm->gtab[i] = NULL;
		sl_grace_fini(&gslot[i].grace);
	}
}
