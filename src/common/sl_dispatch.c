/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_atomic.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include "sl_dispatch.h"
#include "sl_futex.h"
#include "sluice/pkt.h"

/* A resolved destination: kind in bits 32..39. */
enum { DEST_DROP = 1, DEST_INST, DEST_PORT };
#define DEST(kind, svc, id)                                                    \
	(((uint64_t)(kind) << 32) | ((uint64_t)(svc) << 16) | (uint64_t)(id))
#define DEST_KIND(d) ((unsigned)((d) >> 32))
#define DEST_SVC(d) ((uint16_t)((d) >> 16))
#define DEST_ID(d) ((uint16_t)(d))

int
sl_dispatch_init(struct sl_dispatch *d, struct sl_shm *shm,
		 uint16_t self_owner, struct sl_ctx_stats *fwd, uint64_t *drops,
		 sl_port_out_fn port_out, void *port_arg)
{
	memset(d, 0, sizeof(*d));
	d->shm = shm;
	d->meta_off = shm->dynfield_offset;
	d->self_owner = self_owner;
	d->fwd = fwd;
	d->drops = drops;
	d->port_out = port_out;
	d->port_arg = port_arg;
	d->bp_cycles = shm->backpressure_cycles;
	d->rr = calloc(shm->max_services, sizeof(*d->rr));
	return d->rr == NULL ? -ENOMEM : 0;
}

void
sl_dispatch_fini(struct sl_dispatch *d)
{
	free(d->rr);
	d->rr = NULL;
}

void
sl_drop_pkts(struct sl_shm *shm, uint64_t *drops, enum sl_drop_reason r,
	     struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		sl_meta(pkts[i], shm->dynfield_offset)->owner = 0;
	rte_pktmbuf_free_bulk(pkts, n);
	drops[r] += n;
}

uint32_t
sl_meta_flow_hash(const struct rte_mbuf *m, struct sl_pkt_meta *meta)
{
	struct sl_5tuple t;

	if (!(meta->flags & SL_META_HASH)) {
		meta->flow_hash =
			sl_pkt_5tuple(m, &t) == 0 ? sl_5tuple_hash(&t) : 0;
		meta->flags |= SL_META_HASH;
	}
	return meta->flow_hash;
}

/* The instance of service s for this packet (SL_INSTANCE_NONE if none). */
static inline uint16_t
pick(struct sl_dispatch *d, uint16_t s, const struct rte_mbuf *m,
     struct sl_pkt_meta *meta)
{
	const struct sl_service *svc = &d->shm->services[s];
	uint16_t n = __atomic_load_n(&svc->n_live, __ATOMIC_ACQUIRE);

	if (n <= 1) /* no choice to make: no hash needed */
		return n == 0 ? SL_INSTANCE_NONE : svc->live[0];
	return sl_lb_pick(d->shm, s,
			  svc->lb_mode == SL_LB_FLOW ? sl_meta_flow_hash(m, meta)
						     : 0,
			  &d->rr[s]);
}

/* Where one packet goes. Reads its meta (and may cache its flow hash). */
static inline uint64_t
resolve(struct sl_dispatch *d, const struct sl_chain *chain,
	const struct rte_mbuf *m, struct sl_pkt_meta *meta)
{
	const struct sl_shm *shm = d->shm;
	sl_hop_t hop = meta->verdict;
	uint16_t id, inst;

	if (d->all_out)
		return DEST(DEST_PORT, 0, SL_PORT_NONE);
	if (sl_verdict_kind(hop) == SL_VERDICT_NEXT) {
		if (chain == NULL)
			return DEST(DEST_DROP, 0, SL_DROP_END_OF_CHAIN);
		if (meta->service == SL_SERVICE_NONE)
			hop = chain->first;
		else if (meta->service < shm->max_services)
			hop = chain->next[meta->service];
		else
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
	}
	id = sl_verdict_id(hop);
	switch (sl_verdict_kind(hop)) {
	case SL_VERDICT_NEXT:
		return DEST(DEST_DROP, 0, SL_DROP_END_OF_CHAIN);
	case SL_VERDICT_TO:
		if (id >= shm->max_services ||
		    !__atomic_load_n(&shm->services[id].used, __ATOMIC_ACQUIRE))
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
		inst = pick(d, id, m, meta);
		if (inst == SL_INSTANCE_NONE)
			return DEST(DEST_DROP, 0, SL_DROP_NO_INSTANCE);
		return DEST(DEST_INST, id, inst);
	case SL_VERDICT_OUT:
		if (id >= SL_MAX_PORTS || !shm->ports[id].used)
			return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
		if (!__atomic_load_n(&shm->ports[id].started, __ATOMIC_ACQUIRE))
			return DEST(DEST_DROP, 0, SL_DROP_PORT_DOWN);
		return DEST(DEST_PORT, 0, id);
	case SL_VERDICT_DROP:
		/* An NF's DROP, or the graph's "drop" sink reached by NEXT. */
		return sl_verdict_kind(meta->verdict) == SL_VERDICT_DROP
			       ? DEST(DEST_DROP, 0, SL_DROP_NF_VERDICT)
			       : DEST(DEST_DROP, 0, SL_DROP_GRAPH);
	default:
		return DEST(DEST_DROP, 0, SL_DROP_INVALID_DEST);
	}
}

static inline void
wake_if_sleeping(struct sl_dispatch *d, struct sl_nf_slot *slot)
{
	if (slot->mode != SL_MODE_SHARED)
		return;
	/* Pairs with the fence in the NF between storing sleeping = 1 and
	 * re-checking its rx ring: one of the two sides sees the other. */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&slot->sleeping, __ATOMIC_RELAXED)) {
		sl_futex_wake(&slot->wake);
		if (d->fwd != NULL)
			d->fwd->wakeups++;
	}
}

static inline void
count_fwd(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n)
{
	uint64_t bytes = 0;

	if (d->fwd == NULL)
		return;
	for (uint16_t i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	d->fwd->tx_pkts += n;
	d->fwd->tx_bytes += bytes;
}

/*
 * Enqueues a run [0, n) to an instance. The metadata is written before the
 * enqueue (the consumer may read it at once) and restored on the packets
 * that did not fit, so that a pending packet still looks like ours.
 */
static uint16_t
to_instance(struct sl_dispatch *d, uint16_t svc, uint16_t inst,
	    struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_nf_slot *slot = &d->shm->nfs[inst];
	sl_verdict_t saved_v[SL_BURST_MAX];
	uint16_t saved_s[SL_BURST_MAX];
	unsigned int k;

	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		saved_v[i] = m->verdict;
		saved_s[i] = m->service;
		m->verdict = SL_NEXT;
		m->service = svc;
		m->owner = (uint16_t)(inst + 1);
	}
	k = rte_ring_enqueue_burst(slot->rx, (void **)pkts, n, NULL);
	if (k > 0) {
		count_fwd(d, pkts, (uint16_t)k);
		wake_if_sleeping(d, slot);
	}
	for (uint16_t i = (uint16_t)k; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		m->verdict = saved_v[i];
		m->service = saved_s[i];
		m->owner = d->self_owner;
	}
	return (uint16_t)k;
}

/*
 * Hands a run to port_out. A resolved port is written into the verdict, so
 * that whoever transmits (sluiced's TX thread, for an NF) uses this
 * resolution and not a newer chain's: a packet sees one chain version.
 * Unresolved runs (all_out) keep their verdict for sluiced to resolve.
 */
static uint16_t
to_port(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	uint16_t n)
{
	sl_verdict_t saved_v[SL_BURST_MAX];
	uint16_t k;

	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		saved_v[i] = m->verdict;
		if (port != SL_PORT_NONE)
			m->verdict = SL_OUT(port);
		m->owner = 0;
	}
	k = d->port_out(d, port, pkts, n);
	for (uint16_t i = k; i < n; i++) {
		struct sl_pkt_meta *m = sl_meta(pkts[i], d->meta_off);

		m->verdict = saved_v[i];
		m->owner = d->self_owner;
	}
	return k;
}

uint16_t
sl_dispatch(struct sl_dispatch *d, struct rte_mbuf **pkts, uint16_t n)
{
	const struct sl_chain *chain =
		__atomic_load_n(&d->shm->chain, __ATOMIC_ACQUIRE);
	uint64_t dest[SL_BURST_MAX];
	uint16_t i, j, k;

	RTE_ASSERT(d->n_pending == 0 && n <= SL_BURST_MAX);
	for (i = 0; i < n; i++)
		dest[i] = resolve(d, chain, pkts[i], sl_meta(pkts[i], d->meta_off));

	for (i = 0; i < n; i = j) {
		for (j = (uint16_t)(i + 1); j < n && dest[j] == dest[i]; j++)
			;
		switch (DEST_KIND(dest[i])) {
		case DEST_DROP:
			sl_drop_pkts(d->shm, d->drops,
				     (enum sl_drop_reason)DEST_ID(dest[i]),
				     &pkts[i], (uint16_t)(j - i));
			continue;
		case DEST_INST:
			k = to_instance(d, DEST_SVC(dest[i]), DEST_ID(dest[i]),
					&pkts[i], (uint16_t)(j - i));
			break;
		default:
			k = to_port(d, DEST_ID(dest[i]), &pkts[i],
				    (uint16_t)(j - i));
			break;
		}
		if (k < j - i) {
			/* Backpressure: keep the rest, in order. */
			uint16_t rest = (uint16_t)(n - i - k);

			memcpy(d->pending, &pkts[i + k], rest * sizeof(*pkts));
			d->n_pending = rest;
			d->pending_reason = DEST_KIND(dest[i]) == DEST_INST
						    ? SL_DROP_RING_FULL
						    : SL_DROP_TX_FULL;
			d->pending_since = rte_rdtsc();
			return rest;
		}
	}
	return 0;
}

uint16_t
sl_dispatch_retry(struct sl_dispatch *d, uint64_t now)
{
	struct rte_mbuf *pkts[SL_BURST_MAX];
	uint64_t since = d->pending_since;
	uint16_t n = d->n_pending;

	if (n == 0)
		return 0;
	memcpy(pkts, d->pending, n * sizeof(*pkts));
	d->n_pending = 0;
	if (sl_dispatch(d, pkts, n) == 0)
		return 0;
	d->pending_since = since; /* the wait counts from the first try */
	if (now - since > d->bp_cycles)
		sl_dispatch_drop_pending(d, (enum sl_drop_reason)d->pending_reason);
	return d->n_pending;
}

void
sl_dispatch_drop_pending(struct sl_dispatch *d, enum sl_drop_reason r)
{
	sl_drop_pkts(d->shm, d->drops, r, d->pending, d->n_pending);
	d->n_pending = 0;
}
