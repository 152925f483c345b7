/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flows as JSON (control thread): flow.get, flow.list, and the match
 * form rules and requests share.
 */
#include <errno.h>
#include <stdint.h>

#include <rte_cycles.h>

#include "sl_match.h"
#include "sluiced.h"

void
mgr_flow_match_json(const struct sl_shm *shm, const struct sl_match *mt,
		    json_t *obj)
{
	sl_match_to_json(mt, obj);
	if (mt->in_port_lo == mt->in_port_hi && mt->in_port_lo < SL_MAX_PORTS)
		json_object_set_new(obj, "in_port",
				    json_string(
					    shm->ports[mt->in_port_lo].name));
}

static const char *
graph_name(const struct sl_shm *shm, uint16_t id)
{
	uint16_t slot;

	if (id == SL_GRAPH_NONE)
		return "(removed)";
	if (id >= shm->max_graphs)
		return "?";
	slot = shm->graph_cur[id];
	return slot != SL_GRAPH_NONE && shm->gtab[slot] != NULL
		       ? shm->gtab[slot]->name
		       : "(removed)";
}

/* The entry's pins, {service: instance}. */
static json_t *
pins_json(const struct sl_shm *shm, struct sl_flow_entry *e)
{
	const uint32_t *pin = sl_flow_pins(shm, e);
	json_t *pins = json_object();

	for (uint16_t k = 0; k < shm->flow.n_pins; k++) {
		uint32_t v = __atomic_load_n(&pin[k], __ATOMIC_ACQUIRE);

		if (v != UINT32_MAX && (v >> 16) < shm->max_services)
			json_object_set_new(pins, shm->services[v >> 16].name,
					    json_integer(v & 0xffff));
	}
	return pins;
}

/* The entry's overrides, [{service, type[, to]}]. */
static json_t *
ovrs_json(const struct sl_shm *shm, struct sl_flow_entry *e)
{
	const union sl_flow_ovr *o = sl_flow_ovrs(shm, e);
	json_t *ovr = json_array();

	for (uint16_t k = 0; k < shm->flow.n_ovr; k++) {
		union sl_flow_ovr v = {
			.u64 = __atomic_load_n(&o[k].u64, __ATOMIC_ACQUIRE)};

		if (v.f.kind == SL_OVR_FREE || v.f.service >= shm->max_services)
			continue;
		json_t *x =
			json_pack("{s:s, s:s}", "service",
				  shm->services[v.f.service].name, "type",
				  v.f.kind == SL_OVR_SKIP ? "skip" : "default");
		if (v.f.kind == SL_OVR_DEFAULT)
			json_object_set_new(x, "to",
					    mgr_hop_json(shm, v.f.hop));
		json_array_append_new(ovr, x);
	}
	return ovr;
}

json_t *
mgr_flow_json(const struct sl_mgr *m, uint32_t p)
{
	const struct sl_flowdir_state *fs = m->flow;
	struct sl_shm *shm = m->shm;
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	struct sl_5tuple t;
	char key[128];
	uint32_t now_ms = (uint32_t)((rte_rdtsc() - m->start_tsc) / shm->ms_hz);

	if (shm->flow.hash == NULL || p >= shm->flow.capacity)
		return NULL; /* gone meanwhile (the RX thread removed it) */
	/* The entry's key as a 5-tuple (canonical direction). */
	sl_flow_key_tuple(&fs->keys[p], &t);
	sl_5tuple_format(&t, key, sizeof(key));
	return json_pack(
		"{s:I, s:s, s:i, s:i, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:s}",
		"id", (json_int_t)p, "key", key, "family", t.family, "proto",
		t.proto, "in_port",
		fs->side[p].in_port < m->o.n_ports
			? shm->ports[fs->side[p].in_port].name
			: "?",
		"graph", graph_name(shm, mgr_flow_entry_graph(fs, shm, e)),
		"pkts", (json_int_t)e->pkts, "bytes", (json_int_t)e->bytes,
		"idle_ms", (json_int_t)(uint32_t)(now_ms - e->last_ms), "pins",
		pins_json(shm, e), "overrides", ovrs_json(shm, e), "state",
		e->state == SL_FLOW_DELETE ? "deleting" : "live");
}

json_t *
mgr_flows_list(struct sl_mgr *m, const struct sl_flow_filter *f, uint32_t limit)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();
	uint32_t matched = 0;

	for (uint32_t p = 0; shm->flow.hash != NULL && p < shm->flow.capacity;
	     p++) {
		if (!mgr_flow_filter_ok(m->flow, shm, p, f))
			continue;
		matched++;
		if (json_array_size(a) < limit) {
			json_t *x = mgr_flow_json(m, p);

			if (x != NULL)
				json_array_append_new(a, x);
			else
				matched--; /* gone since the filter passed it */
		}
	}
	return json_pack("{s:I, s:I, s:o, s:b}", "total",
			 (json_int_t)shm->flow.n_live, "matched",
			 (json_int_t)matched, "flows", a, "truncated",
			 matched > json_array_size(a));
}
