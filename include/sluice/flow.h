/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Cross-layer requests: an NF asks sluiced to change how flows travel the
 * service graph (SDNFV §3.4).
 *
 *   SkipMe(F, S)           packets of F bypass service S (they go where S's
 *                          default edge leads)
 *   RequestMe(F, S)        packets of F are sent to S: every node with an
 *                          allowed edge to S makes it F's default
 *   ChangeDefault(F, S, T) F's default edge at S becomes T, which must be
 *                          one of the edges the graph allows at S
 *   Message(S, key, value) a free-form message to every instance of S
 *                          (its on_message callback) and to the control
 *                          socket's subscribers
 *
 * F is a single flow (the flow of a packet) or a wildcard (rule fields,
 * e.g. "proto=tcp dst=10.0.0.0/8 dport=80"; matched in either direction).
 * sluiced validates each request against the graph of each flow it
 * touches, applies it to the flow table (so every later packet of F
 * follows it) and publishes it as an event. A wildcard request also
 * applies to flows that start later.
 *
 * Requests are asynchronous: the call queues it and returns an id (> 0),
 * or a negative errno if it could not be queued. The outcome comes back
 * through ops->on_reply (if set) from the NF loop: 0, or a positive errno
 * and sluiced's reason. libsluice logs every rejected request to stderr
 * first, whether or not the NF has on_reply, as one line naming the
 * request and the reason:
 *
 *   PROG: request ID rejected by sluiced: KIND flow=F service=S[ to=T]: REASON
 *   PROG: request ID rejected by sluiced: message service=S key=K: REASON
 *
 * PROG is the NF's argv[0]; KIND skip_me, request_me or change_default; F
 * the flow (sl_5tuple_format() form) or the wildcard text; T the target
 * of a ChangeDefault (a service, port:NAME or drop). sluiced publishes the
 * same outcome as a flow.request (or nf.message) event with result
 * "rejected" and the reason.
 */
#ifndef SLUICE_FLOW_H
#define SLUICE_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** F: one flow, or a wildcard. */
struct sl_flow_match {
	uint8_t exact;          /**< 1: tuple; 0: text */
	struct sl_5tuple tuple; /**< the flow (either direction) */
	char text[160];         /**< wildcard, rule syntax */
};

/** F = the flow of this packet, as the flow table keys it
 * (sl_pkt_flow_tuple(): a fragment's ports are 0). 0, or -ENOENT if it is
 * not IP. */
int sl_flow_of_pkt(const struct rte_mbuf *m, struct sl_flow_match *f);

/**
 * F = a wildcard given as "key=value" fields separated by spaces: proto
 * (tcp, udp, icmp, number), src and dst (prefix or address), sport and
 * dport (N or N-M). 0, or -EINVAL with a message in err.
 */
int sl_flow_match_parse(const char *text, struct sl_flow_match *f, char *err,
			size_t errlen);

/**
 * The requests. service is a service id: sl_nf_service(nf) for the NF's
 * own, sl_service_id() for another. Call them from the NF's callbacks
 * (its one thread); not from fini, whose requests get no reply. Each
 * returns the request id (> 0), -EINVAL (nf or f NULL, no sluiced, or a
 * service id out of range, such as sl_service_id()'s -1) or -ENOBUFS
 * (sluiced's message pool or queue is busy: ask again later). A request
 * is applied after the call returns: packets of F already queued to this
 * NF still arrive, so remember which flows were asked for.
 */
int64_t sl_skip_me(struct sl_nf *nf, const struct sl_flow_match *f,
		   uint16_t service);
int64_t sl_request_me(struct sl_nf *nf, const struct sl_flow_match *f,
		      uint16_t service);
/** to: SL_TO(service), SL_OUT(port) or SL_DROP. */
int64_t sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
			  uint16_t service, sl_verdict_t to);
/** The longest Message key and value, in bytes (without the NUL). */
#define SL_MESSAGE_KEY_MAX 63
#define SL_MESSAGE_VALUE_MAX 255

/**
 * Message(service, key, value) to every live instance of service (the
 * sender too, if it is one). The reply is 0 when at least one instance's
 * inbox took it (with a reason saying how many missed it, if some
 * inboxes were full), ENOENT when the service has no running instance,
 * ENOBUFS when every inbox was full. -EINVAL also for a NULL or empty key
 * or a NULL value; -E2BIG for a key longer than SL_MESSAGE_KEY_MAX or a
 * value longer than SL_MESSAGE_VALUE_MAX bytes (nothing is sent: they
 * were cut silently before).
 */
int64_t sl_message(struct sl_nf *nf, uint16_t service, const char *key,
		   const char *value);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_FLOW_H */
