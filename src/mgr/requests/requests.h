/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's cross-layer requests (src/mgr/requests/): what NFs (and the
 * control socket) ask of flows — SkipMe, ChangeDefault, RequestMe — and
 * messages to a service's instances.
 *   request.c  checks against a graph, applied to one flow; messages
 *   wild.c     wildcard requests: applied to live flows, kept for new ones
 *              (a set published in struct sl_flowdir_state's wild)
 *
 * Part of sluiced.h, which includes it: include "sluiced.h".
 */
#ifndef SL_MGR_REQUESTS_H
#define SL_MGR_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sl_dispatch.h"
#include "sl_match.h"
#include "sluiced.h"

struct sl_graph;

struct sl_req {
	uint32_t kind; /* enum sl_req_kind */
	uint8_t exact;
	struct sl_5tuple tuple; /* exact */
	struct sl_match match;  /* wildcard */
	uint16_t service;
	sl_verdict_t to;
	char mkey[64];
	char value[256];
};

/* The requests' state (m->requests; control thread). The kept set itself
 * is m->flow->wild, what ingress reads. */
struct sl_requests_state {
	uint32_t wild_id; /* the last kept request's id (never reused) */
};

/* m->requests (mgr_requests_module's init); 0 or -ENOMEM. */
int mgr_requests_init(struct sl_mgr *m);
/* Frees the kept requests (no reader is left). */
void mgr_requests_close(struct sl_mgr *m);

/* Validates and applies r; *applied: the flows (or, for a message, the
 * instances) it reached; *kept: the id of the kept wildcard request (the
 * existing one for a duplicate), 0 for one flow or a message. 0 or a
 * positive errno with the reason in err. */
int mgr_flow_request(struct sl_mgr *m, const struct sl_req *r,
		     uint32_t *applied, uint32_t *kept, char *err,
		     size_t errlen);
json_t *mgr_flow_requests_json(const struct sl_mgr *m);
/* Forgets kept request `id`: flows created from now on no longer get it;
 * live flows keep the overrides it gave them. 0, or ENOENT (no such id) or
 * ENOMEM with the reason in err. */
int mgr_flow_request_remove(struct sl_mgr *m, uint32_t id, char *err,
			    size_t errlen);

/* ---- inside requests/ ------------------------------------------------ */

/* Checks r against graph g and applies it to entry e (NULL: only check).
 * 0, or a positive errno with the reason in err. */
int mgr_req_apply(struct sl_mgr *m, const struct sl_req *r,
		  const struct sl_graph *g, struct sl_flow_entry *e, char *err,
		  size_t errlen);
/* The graph of id now, or NULL. */
const struct sl_graph *mgr_req_graph_now(const struct sl_shm *shm, uint16_t id);
/* A wildcard r (checked: valid in some graph): kept, applied to the live
 * flows it matches. */
int mgr_req_wild(struct sl_mgr *m, const struct sl_req *r, uint32_t *applied,
		 uint32_t *kept, char *err, size_t errlen);

#endif /* SL_MGR_REQUESTS_H */
