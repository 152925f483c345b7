/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cross-layer requests (control thread): a request checked against a
 * graph and applied to one flow's overrides; messages delivered to a
 * service's instances. Wildcard requests are wild.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_graph.h"
#include "sluiced.h"

int
mgr_requests_init(struct sl_mgr *m)
{
	m->requests = calloc(1, sizeof(*m->requests));
	return m->requests == NULL ? -ENOMEM : 0;
}

void
mgr_requests_close(struct sl_mgr *m)
{
	if (m->flow != NULL) {
		free(m->flow->wild);
		m->flow->wild = NULL;
	}
	free(m->requests);
	m->requests = NULL;
}

const struct sl_graph *
mgr_req_graph_now(const struct sl_shm *shm, uint16_t id)
{
	uint16_t gv = id < shm->max_graphs ? sl_graph_current(shm, id)
					   : SL_GRAPH_NONE;

	return gv == SL_GRAPH_NONE ? NULL : sl_graph_of(shm, gv);
}

/* ChangeDefault: the hop must be one of the node's allowed next hops
 * and, on a chain, must not lead back to the service. 0 or EINVAL. */
static int
check_change_default(const struct sl_shm *shm, const struct sl_req *r,
		     const struct sl_graph *g, const char *sname, char *err,
		     size_t errlen)
{
	char to[SL_NAME_LEN + 8];
	sl_hop_t h = r->to;

	if (!sl_graph_allows(g, r->service, r->to) ||
	    sl_verdict_kind(r->to) == SL_VERDICT_NEXT) {
		sl_hop_format(shm, r->to, to, sizeof(to));
		snprintf(err, errlen,
			 "graph '%s' has no edge from '%s' to '%s': "
			 "ChangeDefault may only pick one of the node's "
			 "allowed next hops",
			 g->name, sname, to);
		return EINVAL;
	}
	/* A chain allows any hop: refuse one that leads back to the service
	 * along the chain, which would send the flow round a loop for ever
	 * (the hop limit would drop every packet). */
	for (uint32_t steps = 0; g->open && sl_verdict_kind(h) == SL_VERDICT_TO;
	     steps++) {
		uint16_t t = sl_verdict_id(h);

		if (t >= shm->max_services || steps > shm->max_services)
			break;
		if (t != r->service) {
			h = g->next[t];
			continue;
		}
		sl_hop_format(shm, r->to, to, sizeof(to));
		snprintf(err, errlen,
			 "graph '%s' is a chain, and '%s' leads back to "
			 "'%s' along it: ChangeDefault from '%s' to '%s' "
			 "would send the flow round a loop; pick a hop "
			 "after '%s' (a later service, a port or drop)",
			 g->name, to, sname, sname, to, sname);
		return EINVAL;
	}
	return 0;
}

/* RequestMe: the nodes with an edge to the service into preds[]
 * (*np), as many as a flow's overrides hold. 0 or a positive errno. */
static int
check_request_me(const struct sl_shm *shm, const struct sl_req *r,
		 const struct sl_graph *g, const char *sname, uint16_t *preds,
		 uint16_t max, uint16_t *np, char *err, size_t errlen)
{
	if (g->open) {
		snprintf(err, errlen,
			 "graph '%s' is a chain (no allowed edges to choose "
			 "from): RequestMe needs a graph with an edge to '%s'",
			 g->name, sname);
		return EINVAL;
	}
	for (uint16_t i = 0; i < g->n_nodes && *np < max; i++)
		if (sl_graph_allows(g, g->nodes[i], SL_HOP_SERVICE(r->service)))
			preds[(*np)++] = g->nodes[i];
	if (*np == 0) {
		snprintf(err, errlen,
			 "no node of graph '%s' has an edge to '%s'", g->name,
			 sname);
		return EINVAL;
	}
	if (*np > shm->flow.n_ovr) {
		snprintf(err, errlen,
			 "'%s' has %u predecessors in graph '%s' but a flow "
			 "holds %u overrides: raise --flow-overrides",
			 sname, *np, g->name, shm->flow.n_ovr);
		return ENOSPC;
	}
	return 0;
}

/* RequestMe on entry e: undo a SkipMe of the same service, then route
 * every predecessor to it. 0 or ENOSPC. */
static int
put_request_me(const struct sl_shm *shm, const struct sl_req *r,
	       struct sl_flow_entry *e, const uint16_t *preds, uint16_t np)
{
	union sl_flow_ovr *o = sl_flow_ovrs(shm, e);

	for (uint16_t k = 0; k < shm->flow.n_ovr; k++)
		if (o[k].f.kind == SL_OVR_SKIP &&
		    o[k].f.service == r->service) {
			__atomic_store_n(&o[k].u64, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&e->n_ovr, (uint8_t)(e->n_ovr - 1),
					 __ATOMIC_RELEASE);
		}
	for (uint16_t i = 0; i < np; i++) {
		union sl_flow_ovr d = {.u64 = 0};

		d.f.service = preds[i];
		d.f.kind = SL_OVR_DEFAULT;
		d.f.hop = SL_HOP_SERVICE(r->service);
		if (mgr_flow_ovr_put(shm, e, d) != 0)
			return ENOSPC;
	}
	return 0;
}

int
mgr_req_apply(struct sl_mgr *m, const struct sl_req *r,
	      const struct sl_graph *g, struct sl_flow_entry *e, char *err,
	      size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const char *sname = shm->services[r->service].name;
	union sl_flow_ovr v = {.u64 = 0};
	uint16_t preds[256], np = 0;
	int rc;

	if (!sl_graph_has(g, r->service) &&
	    !(g->open && r->kind == SL_REQ_CHANGE_DEFAULT)) {
		snprintf(err, errlen,
			 "service '%s' is not a node of graph '%s': name one "
			 "of its nodes (see graph.get)",
			 sname, g->name);
		return EINVAL;
	}
	switch (r->kind) {
	case SL_REQ_SKIP_ME:
		if (g->next[r->service] == SL_HOP_NONE) {
			snprintf(err, errlen,
				 "service '%s' has no default edge in graph "
				 "'%s' to skip to",
				 sname, g->name);
			return EINVAL;
		}
		v.f.service = r->service;
		v.f.kind = SL_OVR_SKIP;
		break;
	case SL_REQ_CHANGE_DEFAULT:
		rc = check_change_default(shm, r, g, sname, err, errlen);
		if (rc != 0)
			return rc;
		v.f.service = r->service;
		v.f.kind = SL_OVR_DEFAULT;
		v.f.hop = r->to;
		break;
	case SL_REQ_REQUEST_ME:
		rc = check_request_me(shm, r, g, sname, preds,
				      (uint16_t)RTE_DIM(preds), &np, err,
				      errlen);
		if (rc != 0)
			return rc;
		break;
	default:
		snprintf(err, errlen, "unknown request kind %u", r->kind);
		return EINVAL;
	}
	if (e == NULL)
		return 0;
	if (r->kind == SL_REQ_REQUEST_ME
		    ? put_request_me(shm, r, e, preds, np) == 0
		    : mgr_flow_ovr_put(shm, e, v) == 0)
		return 0;
	snprintf(err, errlen,
		 "the flow already holds %u overrides: raise "
		 "--flow-overrides",
		 shm->flow.n_ovr);
	return ENOSPC;
}

/* Logs and counts the instances of svc a message did not reach. */
static void
note_undelivered(struct sl_mgr *m, const struct sl_req *r,
		 const struct sl_service *svc, uint16_t n, uint32_t applied)
{
	m->msgs_undelivered += n - applied;
	if (m->msgs_undelivered <= 20 || m->msgs_undelivered % 1000 == 0)
		mgr_log(m,
			"message '%s' to service '%s': %u of its %u "
			"instances had a full inbox and did not get it "
			"(status messages.undelivered %" PRIu64 ")",
			r->mkey, svc->name, n - applied, n,
			m->msgs_undelivered);
}

static int
deliver_message(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
		char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const struct sl_service *svc = &shm->services[r->service];
	uint16_t n = svc->n_live;

	if (n == 0) {
		snprintf(err, errlen,
			 "service '%s' has no running instance to take the "
			 "message",
			 svc->name);
		return ENOENT;
	}
	for (uint16_t k = 0; k < n; k++) {
		struct sl_nf_slot *s = &shm->nfs[svc->live[k]];
		struct sl_msg *msg;

		if (s->inbox == NULL ||
		    rte_mempool_get(shm->msg_pool, (void **)&msg) != 0)
			continue;
		memset(msg, 0, sizeof(*msg));
		msg->type = SL_MSG_MESSAGE;
		msg->req.kind = SL_REQ_MESSAGE;
		msg->req.service = r->service;
		snprintf(msg->req.mkey, sizeof(msg->req.mkey), "%s", r->mkey);
		snprintf(msg->req.value, sizeof(msg->req.value), "%s",
			 r->value);
		if (rte_ring_enqueue(s->inbox, msg) != 0) {
			sl_msg_put(shm, msg);
			continue;
		}
		(*applied)++;
	}
	if (*applied < n)
		note_undelivered(m, r, svc, n, *applied);
	if (*applied == 0) {
		snprintf(err, errlen,
			 "no instance of '%s' could take the message (inboxes "
			 "full)",
			 svc->name);
		return ENOBUFS;
	}
	/* Sent, but not to all: the sender hears which (the reply's reason,
	 * the control socket's note). */
	if (*applied < n)
		snprintf(err, errlen,
			 "%u of the %u instances of '%s' had a full inbox and "
			 "did not get it (status messages.undelivered)",
			 n - *applied, n, svc->name);
	return 0;
}

/* A request for one flow (r->tuple): applied to its entry. */
static int
exact_request(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
	      char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	struct sl_flow_entry *e;
	const struct sl_graph *g;
	uint32_t p;
	int rc;

	if (mgr_flow_find(m, &r->tuple, &p) != 0) {
		snprintf(err, errlen,
			 "no such flow in the table (it may have aged out)");
		return ENOENT;
	}
	e = sl_flow_entry(shm, p);
	g = mgr_req_graph_now(shm, mgr_flow_entry_graph(m->flow, shm, e));
	if (g == NULL) {
		snprintf(err, errlen, "the flow's graph was removed");
		return ENOENT;
	}
	rc = mgr_req_apply(m, r, g, e, err, errlen);
	if (rc == 0)
		*applied = 1;
	return rc;
}

int
mgr_flow_request(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
		 uint32_t *kept, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;

	*applied = 0;
	*kept = 0;
	if (r->service >= shm->max_services ||
	    !shm->services[r->service].used) {
		snprintf(err, errlen, "no such service (id %u)", r->service);
		return ENOENT;
	}
	if (r->kind == SL_REQ_MESSAGE)
		return deliver_message(m, r, applied, err, errlen);
	if (shm->flow.hash == NULL) {
		snprintf(err, errlen,
			 "%s needs the flow table, and sluiced runs with "
			 "--flow-lookup off",
			 sl_req_name(r->kind));
		return ENOTSUP;
	}
	if (r->exact)
		return exact_request(m, r, applied, err, errlen);
	return mgr_req_wild(m, r, applied, kept, err, errlen);
}
