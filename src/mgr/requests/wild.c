/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wildcard requests (control thread): a request for every flow matching
 * a pattern. Applied to the live flows at once, and kept, for new flows,
 * in an immutable set published in m->flow->wild (ingress applies it
 * when it creates an entry; a RequestMe is expanded for each new flow's
 * graph). A set replaced is freed after a grace period.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_graph.h"
#include "sluiced.h"

static int
free_wildset(struct sl_mgr *m, void *p)
{
	(void)m;
	free(p);
	return 0;
}

/* Valid in at least one graph: 0, or a positive errno and err. */
static int
wild_check(struct sl_mgr *m, const struct sl_req *r, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	int valid = 0;
	char first_err[256] = "";

	for (uint16_t id = 0; id < shm->max_graphs; id++) {
		const struct sl_graph *g = mgr_req_graph_now(shm, id);

		if (g == NULL)
			continue;
		if (mgr_req_apply(m, r, g, NULL, first_err[0] ? err : first_err,
				  first_err[0] ? errlen : sizeof(first_err)) ==
		    0)
			valid = 1;
	}
	if (!valid && first_err[0] == '\0') { /* not even a chain yet */
		snprintf(err, errlen,
			 "no chain or graph is set yet to check %s against: "
			 "ask again once the chain is set (chain.set)",
			 sl_req_name(r->kind));
		return EAGAIN;
	}
	if (!valid) {
		snprintf(err, errlen, "%s", first_err);
		return EINVAL;
	}
	return 0;
}

/* Keeps r for new flows (once: the same request again, an NF restarted
 * say, is the kept one): *kept its id. 0, or a positive errno and err. */
static int
wild_keep(struct sl_mgr *m, const struct sl_req *r, uint32_t *kept, char *err,
	  size_t errlen)
{
	struct sl_flowdir_state *fs = m->flow;
	const struct sl_wildset *old = fs->wild;
	uint32_t n = old ? old->n : 0;
	struct sl_wildset *ws;
	struct sl_wild w = {.match = r->match,
			    .request_me = r->kind == SL_REQ_REQUEST_ME};

	w.ovr.f.service = r->service;
	w.ovr.f.kind = r->kind == SL_REQ_SKIP_ME ? SL_OVR_SKIP : SL_OVR_DEFAULT;
	w.ovr.f.hop = r->kind == SL_REQ_CHANGE_DEFAULT ? r->to : 0;
	/* It would only use up --max-wildcards. */
	for (uint32_t i = 0; i < n; i++)
		if (old->w[i].ovr.u64 == w.ovr.u64 &&
		    old->w[i].request_me == w.request_me &&
		    memcmp(&old->w[i].match, &w.match, sizeof(w.match)) == 0) {
			*kept = old->w[i].id;
			return 0;
		}
	if (n == m->o.max_wild) {
		snprintf(err, errlen,
			 "all %u wildcard requests are in use: remove one "
			 "(flow.requests lists them, flow.request.remove) or "
			 "raise --max-wildcards",
			 m->o.max_wild);
		return ENOSPC;
	}
	ws = malloc(sizeof(*ws) + sizeof(ws->w[0]) * (n + 1));
	if (ws == NULL) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	ws->n = n + 1;
	if (n > 0)
		memcpy(ws->w, old->w, sizeof(ws->w[0]) * n);
	ws->w[n] = w;
	/* Stable (oldest first, never reused): removing one does not rename
	 * the others. */
	ws->w[n].id = ++m->requests->wild_id;
	*kept = ws->w[n].id;
	__atomic_store_n(&fs->wild, ws, __ATOMIC_RELEASE);
	if (old != NULL)
		mgr_flow_defer(m, free_wildset, (void *)(uintptr_t)old);
	return 0;
}

int
mgr_req_wild(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
	     uint32_t *kept, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	struct sl_flow_filter f = {.graph = SL_GRAPH_NONE,
				   .service = SL_SERVICE_NONE,
				   .has_match = 1,
				   .match = r->match};
	int rc = wild_check(m, r, err, errlen);

	if (rc == 0)
		rc = wild_keep(m, r, kept, err, errlen);
	if (rc != 0)
		return rc;
	for (uint32_t p = 0; p < shm->flow.capacity; p++) {
		struct sl_flow_entry *e = sl_flow_entry(shm, p);
		const struct sl_graph *g;
		char e2[256];

		if (!mgr_flow_filter_ok(m->flow, shm, p, &f))
			continue;
		g = mgr_req_graph_now(shm,
				      mgr_flow_entry_graph(m->flow, shm, e));
		if (g != NULL && mgr_req_apply(m, r, g, e, e2, sizeof(e2)) == 0)
			(*applied)++;
	}
	return 0;
}

static json_t *
wild_json(const struct sl_shm *shm, const struct sl_wild *w)
{
	json_t *o = json_object(), *mt = json_object();
	uint32_t kind = w->request_me                  ? SL_REQ_REQUEST_ME
			: w->ovr.f.kind == SL_OVR_SKIP ? SL_REQ_SKIP_ME
						       : SL_REQ_CHANGE_DEFAULT;

	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "type", json_string(sl_req_name(kind)));
	json_object_set_new(o, "service",
			    json_string(
				    w->ovr.f.service < shm->max_services
					    ? shm->services[w->ovr.f.service]
						      .name
					    : "?"));
	if (!w->request_me && w->ovr.f.kind == SL_OVR_DEFAULT)
		json_object_set_new(o, "to", mgr_hop_json(shm, w->ovr.f.hop));
	mgr_flow_match_json(shm, &w->match, mt);
	json_object_set_new(o, "match", mt);
	return o;
}

json_t *
mgr_flow_requests_json(const struct sl_mgr *m)
{
	const struct sl_wildset *ws = m->flow->wild;
	json_t *a = json_array();

	for (uint32_t i = 0; ws != NULL && i < ws->n; i++)
		json_array_append_new(a, wild_json(m->shm, &ws->w[i]));
	return json_pack("{s:o}", "requests", a);
}

int
mgr_flow_request_remove(struct sl_mgr *m, uint32_t id, char *err, size_t errlen)
{
	struct sl_flowdir_state *fs = m->flow;
	const struct sl_wildset *old = fs->wild;
	struct sl_wildset *ws;
	uint32_t n = old ? old->n : 0, i, j = 0;

	for (i = 0; i < n && old->w[i].id != id; i++)
		;
	if (i == n) {
		snprintf(err, errlen,
			 "no kept wildcard request with id %u; see "
			 "flow.requests",
			 id);
		return ENOENT;
	}
	ws = malloc(sizeof(*ws) + sizeof(ws->w[0]) * (n - 1));
	if (ws == NULL) {
		snprintf(err, errlen, "out of memory");
		return ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (old->w[i].id != id)
			ws->w[j++] = old->w[i];
	ws->n = j;
	__atomic_store_n(&fs->wild, ws, __ATOMIC_RELEASE);
	mgr_flow_defer(m, free_wildset, (void *)(uintptr_t)old);
	mgr_event(m, "flow.request.removed",
		  json_pack("{s:I}", "id", (json_int_t)id));
	return 0;
}
