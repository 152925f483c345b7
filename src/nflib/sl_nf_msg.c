/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's messages to sluiced: registration and deregistration (asked
 * and waited for), cross-layer requests (posted; the reply comes to the
 * inbox), and the inbox (replies, and Messages to this NF's service).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_graph.h"
#include "sl_match.h"
#include "sl_nf_int.h"
#include "sluice/flow.h"

/*
 * Posts a message on sluiced's message ring (0, or ENOBUFS if the ring stays
 * full or busy for timeout_ms; 0 ms: for 10 us, without sleeping, as the
 * data path posts requests). Another NF inside a post, or killed in one,
 * is waited for here, never inside rte_ring (sl_ring_prod_busy); sluiced
 * rolls back a killed one's reservation.
 */
static int
msg_post(struct sl_nf *nf, struct sl_msg *m, unsigned int timeout_ms)
{
	struct rte_ring *r = nf->shm->msg_ring;
	uint64_t hz = rte_get_tsc_hz();
	uint64_t deadline =
		rte_rdtsc() +
		(timeout_ms > 0 ? hz / 1000 * timeout_ms : hz / 100000);

	for (;;) {
		if (!sl_ring_prod_busy(r) && rte_ring_mp_enqueue(r, m) == 0)
			return 0;
		if (rte_rdtsc() > deadline ||
		    (timeout_ms > 0 && nfi_mgr_gone(nf)))
			return ENOBUFS;
		if (timeout_ms > 0)
			usleep(50);
		else
			rte_pause();
	}
}

/* Sends a message to sluiced and waits for the answer: 0, or ENOBUFS (the
 * ring stayed full, said so), ETIMEDOUT (no answer by timeout_ms), ESRCH
 * (sluiced stops or is gone) or ECANCELED (a stop signal, unless
 * keep_running). */
static int
ask_sluiced(struct sl_nf *nf, struct sl_msg *m, unsigned int timeout_ms,
	    int keep_running)
{
	uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
	struct rte_mbuf *pkts[SL_BURST_MAX];

	if (msg_post(nf, m, timeout_ms) != 0) {
		fprintf(stderr,
			"%s: sluiced '%s' message ring stayed full "
			"for %u ms\n",
			nf->prog, nf->node, timeout_ms);
		return ENOBUFS;
	}
	while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
		/* Asked to stop while registering (a replica cancelled by
		 * nf.scale): give up; if sluiced did register us, it sees us
		 * exit like any dead NF. */
		if (rte_rdtsc() > deadline)
			return ETIMEDOUT;
		if (__atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE) ||
		    nfi_mgr_gone(nf))
			return ESRCH;
		if (!keep_running && nfi_stop_asked())
			return ECANCELED;
		if (keep_running && nf->slot != NULL) {
			/* Deregistering: keep serving what is queued. */
			unsigned int n;

			nf->slot->heartbeat++;
			if (sl_dispatch_pending(&nf->disp) &&
			    sl_dispatch_retry(&nf->disp, rte_rdtsc()))
				continue;
			n = nfi_rx_burst(nf, pkts);
			if (n > 0) {
				nfi_handle(nf, pkts, (uint16_t)n);
				continue;
			}
		}
		usleep(100);
	}
	return 0;
}

/* A message just taken from the pool: zeroed, then typed with release, so
 * that sluiced, seeing it not free, also sees it unanswered (done 0). */
static void
msg_init(struct sl_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	__atomic_store_n(&m->type, type, __ATOMIC_RELEASE);
}

int
nfi_register(struct sl_nf *nf, const struct nf_args *a)
{
	struct sl_msg *m;
	void *obj;
	int rc;

	if (rte_mempool_get(nf->shm->msg_pool, &obj) != 0) {
		fprintf(stderr, "%s: sluiced '%s' has no free message\n",
			nf->prog, nf->node);
		return ENOBUFS;
	}
	m = obj;
	msg_init(m, SL_MSG_REGISTER);
	m->pid = getpid();
	m->start_tsc = nf->start_tsc;
	m->mode = a->mode;
	m->access = a->access;
	m->instance = a->instance < 0 ? SL_INSTANCE_NONE
				      : (uint16_t)a->instance;
	snprintf(m->service_name, sizeof(m->service_name), "%s", a->service);
	snprintf(m->prog, sizeof(m->prog), "%s", nf->ops->name);
	rc = ask_sluiced(nf, m, REGISTER_TIMEOUT_MS, 0);
	if (rc != 0) {
		if (nfi_stop_asked()) {
			fprintf(stderr,
				"%s: stopped by a signal while registering\n",
				nf->prog);
			return ECANCELED;
		}
		if (nfi_mgr_gone(nf) ||
		    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE)) {
			fprintf(stderr,
				"%s: sluiced '%s' (pid %d) stopped or was "
				"killed while this NF registered; start "
				"sluiced again (sluiced -- --name %s, or "
				"sluice up), then this NF\n",
				nf->prog, nf->node, nf->shm->mgr_pid, nf->node);
			return ESRCH;
		}
		fprintf(stderr,
			"%s: sluiced '%s' did not answer the registration "
			"within %d ms; is it running and not overloaded?\n",
			nf->prog, nf->node, REGISTER_TIMEOUT_MS);
		return rc; /* the message is left to sluiced */
	}
	if (m->result != 0) {
		fprintf(stderr, "%s: sluiced refused the registration: %s\n",
			nf->prog, m->error);
		rc = EPERM;
	} else {
		nf->instance = m->instance;
		nf->service = m->service;
		nf->slot = &nf->shm->nfs[nf->instance];
		snprintf(nf->service_name, sizeof(nf->service_name), "%s",
			 a->service);
	}
	sl_msg_put(nf->shm, m);
	return rc;
}

void
nfi_deregister(struct sl_nf *nf)
{
	struct sl_msg *m;
	void *obj;

	if (nf->mgr_dead ||
	    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE) ||
	    rte_mempool_get(nf->shm->msg_pool, &obj) != 0)
		return;
	m = obj;
	msg_init(m, SL_MSG_DEREGISTER);
	m->pid = getpid();
	m->instance = nf->instance;
	/* sluiced stops sending to us, waits until no producer can still
	 * hold our ring, then answers; we keep serving until then. */
	if (ask_sluiced(nf, m, DEREGISTER_TIMEOUT_MS, 1) == 0)
		sl_msg_put(nf->shm, m);
}

/* ---- cross-layer requests and messages ---------------------------- */

int
sl_flow_of_pkt(const struct rte_mbuf *m, struct sl_flow_match *f)
{
	memset(f, 0, sizeof(*f));
	f->exact = 1;
	return sl_pkt_flow_tuple(m, &f->tuple) == 0 ? 0 : -ENOENT;
}

int
sl_flow_match_parse(const char *text, struct sl_flow_match *f, char *err,
		    size_t errlen)
{
	struct sl_match mt;

	memset(f, 0, sizeof(*f));
	if (text == NULL || strlen(text) >= sizeof(f->text)) {
		snprintf(err, errlen, "a wildcard holds at most %zu characters",
			 sizeof(f->text) - 1);
		return -EINVAL; /* NF API: -errno */
	}
	if (sl_match_parse(text, &mt, err, errlen) != 0)
		return -EINVAL; /* NF API: -errno */
	snprintf(f->text, sizeof(f->text), "%s", text);
	return 0;
}

/* Queues a request to sluiced; the reply comes to our inbox. */
static int64_t
nf_request(struct sl_nf *nf, uint32_t kind, const struct sl_flow_match *f,
	   uint16_t service, sl_verdict_t to, const char *key,
	   const char *value)
{
	struct sl_msg *m;
	void *obj;

	if (nf == NULL || nf->slot == NULL)
		return -EINVAL; /* NF API: -errno */
	if (service >= nf->shm->max_services)
		return -EINVAL; /* NF API: -errno */
	if (rte_mempool_get(nf->shm->msg_pool, &obj) != 0)
		return -ENOBUFS; /* NF API: -errno */
	m = obj;
	msg_init(m, SL_MSG_REQUEST);
	m->pid = getpid();
	m->instance = nf->instance;
	m->req.id = ++nf->req_id;
	m->req.kind = kind;
	m->req.service = service;
	m->req.to = to;
	if (f != NULL && f->exact) {
		m->req.exact = 1;
		sl_flow_key_make(&f->tuple, &m->req.key);
	} else if (f != NULL) {
		snprintf(m->req.match, sizeof(m->req.match), "%s", f->text);
	}
	if (key != NULL)
		snprintf(m->req.mkey, sizeof(m->req.mkey), "%s", key);
	if (value != NULL)
		snprintf(m->req.value, sizeof(m->req.value), "%s", value);
	if (msg_post(nf, m, 0) != 0) {
		sl_msg_put(nf->shm, m);
		return -ENOBUFS; /* NF API: -errno */
	}
	return m->req.id;
}

int64_t
sl_skip_me(struct sl_nf *nf, const struct sl_flow_match *f, uint16_t service)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_SKIP_ME, f, service, 0, NULL,
				      NULL);
}

int64_t
sl_request_me(struct sl_nf *nf, const struct sl_flow_match *f, uint16_t service)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_REQUEST_ME, f, service, 0,
				      NULL, NULL);
}

int64_t
sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
		  uint16_t service, sl_verdict_t to)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_CHANGE_DEFAULT, f, service, to,
				      NULL, NULL);
}

_Static_assert(sizeof(((struct sl_msg *)0)->req.mkey) ==
			       SL_MESSAGE_KEY_MAX + 1 &&
		       sizeof(((struct sl_msg *)0)->req.value) ==
			       SL_MESSAGE_VALUE_MAX + 1,
	       "SL_MESSAGE_*_MAX must match struct sl_msg");

int64_t
sl_message(struct sl_nf *nf, uint16_t service, const char *key,
	   const char *value)
{
	if (key == NULL || value == NULL || key[0] == '\0')
		return -EINVAL; /* NF API: -errno */
	if (strlen(key) > SL_MESSAGE_KEY_MAX ||
	    strlen(value) > SL_MESSAGE_VALUE_MAX)
		return -E2BIG; /* NF API: -errno */
	return nf_request(nf, SL_REQ_MESSAGE, NULL, service, 0, key, value);
}

/*
 * Logs a rejected request, one line: which request (its id, kind, flow,
 * service and target, from the reply, which is the request's own message)
 * and sluiced's reason.
 */
static void
reply_log_rejected(const struct sl_nf *nf, struct sl_msg *m)
{
	char flow[176] = "", to[SL_NAME_LEN + 16] = "";
	const char *svc = m->req.service < nf->shm->max_services
				  ? nf->shm->services[m->req.service].name
				  : "?";
	uint32_t kind = m->req.kind;

	if (kind == SL_REQ_MESSAGE) {
		m->req.mkey[sizeof(m->req.mkey) - 1] = '\0';
		fprintf(stderr,
			"%s: request %" PRId64 " rejected by sluiced: "
			"message service=%s key=%s: %s\n",
			nf->prog, m->req.id, svc, m->req.mkey, m->error);
		return;
	}
	if (m->req.exact) {
		struct sl_5tuple t;

		sl_flow_key_tuple(&m->req.key, &t);
		sl_5tuple_format(&t, flow, sizeof(flow));
	} else {
		m->req.match[sizeof(m->req.match) - 1] = '\0';
		snprintf(flow, sizeof(flow), "%s", m->req.match);
	}
	if (kind == SL_REQ_CHANGE_DEFAULT) {
		char hop[SL_NAME_LEN + 8];

		sl_hop_format(nf->shm, m->req.to, hop, sizeof(hop));
		snprintf(to, sizeof(to), " to=%s", hop);
	}
	fprintf(stderr,
		"%s: request %" PRId64 " rejected by sluiced: %s flow=%s "
		"service=%s%s: %s\n",
		nf->prog, m->req.id, sl_req_name(kind), flow, svc, to,
		m->error);
}

/* Replies to our requests and messages to our service, from the inbox. */
void
nfi_inbox_poll(struct sl_nf *nf)
{
	const struct sl_nf_ops *ops = nf->ops;
	void *objs[16];
	unsigned int n;

	if (nf->slot->inbox == NULL)
		return;
	n = rte_ring_sc_dequeue_burst(nf->slot->inbox, objs, RTE_DIM(objs),
				      NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct sl_msg *m = objs[i];

		if (m->type == SL_MSG_MESSAGE) {
			m->req.mkey[sizeof(m->req.mkey) - 1] = '\0';
			m->req.value[sizeof(m->req.value) - 1] = '\0';
			if (ops->on_message != NULL)
				ops->on_message(nf, m->req.mkey, m->req.value);
		} else if (m->type == SL_MSG_REPLY) {
			m->error[sizeof(m->error) - 1] = '\0';
			if (m->result != 0)
				reply_log_rejected(nf, m);
			else if (m->error[0] !=
				 '\0') /* a Message, not to all */
				fprintf(stderr,
					"%s: request %" PRId64 " (message): "
					"%s\n",
					nf->prog, m->req.id, m->error);
			if (ops->on_reply != NULL)
				ops->on_reply(nf, m->req.id, m->result,
					      m->error);
		}
		sl_msg_put(nf->shm, m);
	}
}
