/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cross-layer requests from NFs: checked, applied and answered.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sl_graph.h"
#include "sluice/pkt.h"
#include "sl_lb.h"
#include "sluiced.h"
#include "registry/registry.h"

/* 1 if s (terminated) is valid UTF-8 (events and replies carry it). */
static int
text_utf8(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/*
 * A request that names no registered sender (an instance that is not the
 * pid's, or not running) is answered in the message itself (done), as no
 * inbox is theirs: the sender's to return, or, once it is gone, the
 * answered-message sweep's (answered_sweep).
 */
static void
refuse_unattributed(struct sl_mgr *m, struct sl_msg *msg)
{
	msg->type = SL_MSG_REPLY;
	mgr_reg_refuse(
		m, msg, EPERM,
		"request refused: instance %u is not a running NF of pid %d; "
		"send requests between registration and deregistration",
		msg->instance, msg->pid);
}

/*
 * The fields of a request that sluiced reads, checked: 0, or a positive
 * errno with the reason in err. The graph checks come after
 * (mgr_flow_request).
 */
static int
request_check(const struct sl_shm *shm, const struct sl_msg *msg, char *err,
	      size_t errlen)
{
	uint32_t kind = msg->req.kind;
	sl_verdict_t to = msg->req.to;
	uint16_t id = (uint16_t)(to & 0xffffu);

	if (kind < SL_REQ_SKIP_ME || kind > SL_REQ_MESSAGE) {
		snprintf(err, errlen,
			 "unknown request kind %u: skip_me (1), request_me "
			 "(2), change_default (3) or message (4)",
			 kind);
		return EINVAL;
	}
	if (kind == SL_REQ_MESSAGE) {
		if (!text_utf8(msg->req.mkey) || !text_utf8(msg->req.value)) {
			snprintf(err, errlen,
				 "message key and value must be UTF-8 text");
			return EINVAL;
		}
		return 0;
	}
	if (msg->req.exact && msg->req.key.family != 4 &&
	    msg->req.key.family != 6) {
		snprintf(err, errlen,
			 "flow key family %u: 4 (IPv4) or 6 (IPv6); make the "
			 "key with sl_flow_of_pkt()",
			 msg->req.key.family);
		return EINVAL;
	}
	if (kind == SL_REQ_CHANGE_DEFAULT &&
	    !(to == SL_DROP ||
	      (to >> SL_VERDICT_KIND_SHIFT == SL_VERDICT_TO &&
	       id < shm->max_services && shm->services[id].used) ||
	      (to >> SL_VERDICT_KIND_SHIFT == SL_VERDICT_OUT &&
	       id < SL_MAX_PORTS && shm->ports[id].used))) {
		snprintf(err, errlen,
			 "ChangeDefault target 0x%08x is no service, port or "
			 "drop of this node: use SL_TO(service id), "
			 "SL_OUT(port id) or SL_DROP",
			 to);
		return EINVAL;
	}
	return 0;
}

/*
 * A cross-layer request from an NF: validated against the graph, applied
 * to the flow table, published as an event, and answered in the NF's
 * inbox (the same message object, as SL_MSG_REPLY).
 */
void
mgr_reg_handle_request(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	struct sl_req r;
	char err[160] = "", fk[160];
	uint32_t applied = 0, kept = 0;
	int rc;
	struct sl_nf_slot *s =
		msg->instance < shm->max_nfs ? &shm->nfs[msg->instance] : NULL;
	json_t *ev;

	if (s == NULL || s->pid != msg->pid || s->inbox == NULL ||
	    s->state != SL_NF_RUNNING) {
		refuse_unattributed(m, msg); /* no inbox to answer in */
		return;
	}
	memset(&r, 0, sizeof(r));
	r.kind = msg->req.kind;
	r.service = msg->req.service;
	r.to = msg->req.to;
	r.exact = msg->req.exact;
	msg->req.match[sizeof(msg->req.match) - 1] = '\0';
	msg->req.mkey[sizeof(msg->req.mkey) - 1] = '\0';
	msg->req.value[sizeof(msg->req.value) - 1] = '\0';
	snprintf(r.mkey, sizeof(r.mkey), "%s", msg->req.mkey);
	snprintf(r.value, sizeof(r.value), "%s", msg->req.value);
	rc = request_check(shm, msg, err, sizeof(err));
	if (rc != 0) {
		fk[0] = '\0';
		snprintf(msg->error, sizeof(msg->error), "%s", err);
		mgr_reg_refused(m, msg);
	} else if (r.kind != SL_REQ_MESSAGE && r.exact) {
		sl_flow_key_tuple(&msg->req.key, &r.tuple);
		sl_5tuple_format(&r.tuple, fk, sizeof(fk));
	} else if (r.kind != SL_REQ_MESSAGE) {
		snprintf(fk, sizeof(fk), "%s", msg->req.match);
		if (sl_match_parse(msg->req.match, &r.match, err,
				   sizeof(err)) != 0)
			rc = EINVAL;
	} else {
		fk[0] = '\0';
	}
	if (rc == 0 && m->registry->flow_request == NULL) {
		snprintf(err, sizeof(err), "flow requests are not served");
		rc = ENOTSUP;
	} else if (rc == 0) {
		rc = m->registry->flow_request(m, &r, &applied, &kept, err,
					       sizeof(err));
	}
	ev = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:I}", "nf",
		       shm->services[s->service].name, "instance",
		       (int)msg->instance, "type", sl_req_name(r.kind), "flow",
		       fk, "service",
		       r.service < shm->max_services
			       ? shm->services[r.service].name
			       : "?",
		       "result", rc == 0 ? "applied" : "rejected", "applied",
		       (json_int_t)applied);
	if (rc != 0)
		json_object_set_new(ev, "reason", json_string(err));
	if (kept != 0)
		json_object_set_new(ev, "kept", json_integer(kept));
	if (r.kind == SL_REQ_CHANGE_DEFAULT)
		json_object_set_new(ev, "to", mgr_hop_json(shm, r.to));
	if (r.kind == SL_REQ_MESSAGE) {
		json_object_set_new(ev, "key", json_string(r.mkey));
		json_object_set_new(ev, "value", json_string(r.value));
	}
	mgr_event(m, r.kind == SL_REQ_MESSAGE ? "nf.message" : "flow.request",
		  ev);
	msg->type = SL_MSG_REPLY;
	msg->result = rc;
	/* A Message some instances missed is sent (0) with a reason too. */
	snprintf(msg->error, sizeof(msg->error), "%s",
		 rc != 0 || r.kind == SL_REQ_MESSAGE ? err : "");
	if (rte_ring_enqueue(s->inbox, msg) != 0)
		sl_msg_put(shm, msg);
}
