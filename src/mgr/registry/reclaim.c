/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A dead or departed instance's packets, caches, counters and rings
 * given back (the SL_QS_RECLAIM action).
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

/* Returns the messages left in an instance's inbox to the pool. */
void
mgr_reg_inbox_drain(struct sl_mgr *m, struct sl_nf_slot *s)
{
	void *obj;

	while (s->inbox != NULL && rte_ring_dequeue(s->inbox, &obj) == 0)
		sl_msg_put(m->shm, obj);
}

/* Packets tagged owner, collected from the pool (pass 1 of reclaim). */
struct tagged_arg {
	int off;
	uint16_t owner;
	int oom; /* out of memory: v is NULL and n 0 */
	uint32_t n, cap;
	struct rte_mbuf **v;
};

static void
tagged_one(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	struct tagged_arg *t = arg;
	struct rte_mbuf *mb = obj;

	(void)mp;
	(void)idx;
	if (sl_meta(mb, t->off)->owner != t->owner || t->oom)
		return;
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct rte_mbuf **v = realloc(t->v, cap * sizeof(*v));

		if (v == NULL) {
			free(t->v);
			t->v = NULL;
			t->n = 0;
			t->oom = 1;
			return;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = mb;
}

static int
ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;

	return (x > y) - (x < y);
}

/* The entries of a ring of pointers (rte_ring_create, 8-byte elements). */
static inline void *const *
ring_entries(const struct rte_ring *r)
{
	return (void *const *)(const void *)&r[1];
}

/* Is p between r's consumer and producer tails: queued, or being taken? */
int
mgr_reg_in_ring(const struct rte_ring *r, const void *p)
{
	uint32_t t = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
	uint32_t h = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);

	for (; t != h; t++)
		if (ring_entries(r)[t & r->mask] == p)
			return 1;
	return 0;
}

/* Keeps in c[0..n) the packets that are in no NF's rx ring and in no
 * NF's hand (a packet there is its consumer's to retag, or, if that
 * consumer is dead too, to claim: see reclaim); returns how many. The
 * rings are read before the hands: a packet taken meanwhile is in a hand
 * until it is retagged. Out of memory: none (a packet left out leaks; one
 * wrongly kept could be freed under its consumer). */
static uint32_t
not_in_rings(const struct sl_shm *shm, struct rte_mbuf **c, uint32_t n)
{
	uint8_t *in;
	uint32_t k = 0;

	if (n == 0)
		return 0;
	in = calloc(n, 1);
	if (in == NULL)
		return 0;
	qsort(c, n, sizeof(*c), ptr_cmp);
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct rte_ring *r = shm->nfs[i].rx;
		uint32_t t, h;

		if (r == NULL || shm->nfs[i].state == SL_NF_FREE)
			continue;
		t = __atomic_load_n(&r->cons.tail, __ATOMIC_ACQUIRE);
		h = __atomic_load_n(&r->prod.tail, __ATOMIC_ACQUIRE);
		for (; t != h; t++) {
			void *p = ring_entries(r)[t & r->mask];
			struct rte_mbuf **f =
				bsearch(&p, c, n, sizeof(*c), ptr_cmp);

			if (f != NULL)
				in[f - c] = 1;
		}
	}
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		if (shm->nfs[i].state == SL_NF_FREE)
			continue;
		for (int j = 0; j < SL_BURST_MAX; j++) {
			void *p = __atomic_load_n(&shm->nfs[i].hand[j],
						  __ATOMIC_RELAXED);
			struct rte_mbuf **f;

			if (p == NULL)
				continue;
			f = bsearch(&p, c, n, sizeof(*c), ptr_cmp);
			if (f != NULL)
				in[f - c] = 1;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (!in[i])
			c[k++] = c[i];
	free(in);
	return k;
}

/* Frees, as lost, the packets in a dead NF's rx ring (nobody produces
 * into it any more) and empties it. */
static uint64_t
rx_ring_free(const struct sl_shm *shm, struct rte_ring *r)
{
	uint32_t t = r->cons.tail, h = r->prod.tail;
	uint64_t n = 0;

	for (; t != h; t++, n++) {
		struct rte_mbuf *p = ring_entries(r)[t & r->mask];

		sl_meta(p, shm->dynfield_offset)->owner = 0;
		rte_pktmbuf_free(p);
	}
	rte_ring_reset(r);
	return n;
}

/*
 * An lcore id for a new NF's mempool cache: one no EAL thread of sluiced
 * uses and no other NF holds, from the top down (NFs' own EAL lcore is
 * 0, and they leave it right after EAL init); SL_CACHE_NONE if the pool
 * has no caches, --nf-mbuf-cache 0, or none is left (the NF then frees to
 * the pool's ring directly, as before, and the log says so: with the
 * default --max-nfs 128 and RTE_MAX_LCORE 128, the last instances).
 */
uint16_t
mgr_reg_cache_lcore_take(struct sl_mgr *m, uint16_t inst)
{
	const struct sl_shm *shm = m->shm;

	if (!m->o.nf_cache || shm->pktmbuf_pool->cache_size == 0)
		return SL_CACHE_NONE;
	for (int id = RTE_MAX_LCORE - 1; id >= 0; id--) {
		if (rte_lcore_is_enabled((unsigned int)id) ||
		    m->registry->cache_owner[id] != 0)
			continue;
		/* The NF frees into this lcore's cache of every pool. */
		for (uint32_t p = 0; p < shm->n_pools; p++) {
			struct rte_mempool *mp = shm->pools[p];
			struct rte_mempool_cache *c =
				rte_mempool_default_cache(mp, (unsigned int)id);

			if (c == NULL)
				return SL_CACHE_NONE;
			if (c->len != 0) /* nobody's: should not happen */
				rte_mempool_cache_flush(c, mp);
		}
		m->registry->cache_owner[id] = (uint16_t)(inst + 1);
		return (uint16_t)id;
	}
	/* More instances than ids (RTE_MAX_LCORE less sluiced's lcores):
	 * defined, and said when it happens (not at every start: the
	 * default --max-nfs 128 is above the 126 ids of a 2-lcore sluiced,
	 * and few nodes run that many). */
	mgr_log(m,
		"instance %u gets no packet-buffer cache: all %u lcore ids for "
		"them are taken (nf.list mbuf_cache null); it frees straight "
		"to the pool, which is slower: run fewer instances, or "
		"--nf-mbuf-cache 0 for none at all",
		inst, (unsigned int)RTE_MAX_LCORE - rte_lcore_count());
	return SL_CACHE_NONE;
}

/*
 * A gone NF's cache goes back to the pool. If the NF died inside a
 * mempool put (pool_op), the cache may hold a length bumped before its
 * pointers were written, or pointers already handed to the pool's ring:
 * returning them could put one buffer in the pool twice. Then the cache
 * is left out instead (at most its length of buffers), counted and
 * logged.
 */
static void
cache_lcore_release(struct sl_mgr *m, struct sl_nf_slot *s, uint16_t inst)
{
	const struct sl_shm *shm = m->shm;
	uint16_t id = s->cache_lcore;
	int died_in_put;

	if (id == SL_CACHE_NONE || id >= RTE_MAX_LCORE)
		return;
	died_in_put = __atomic_load_n(&s->pool_op, __ATOMIC_ACQUIRE) != 0;
	for (uint32_t p = 0; p < shm->n_pools; p++) {
		struct rte_mempool *mp = shm->pools[p];
		struct rte_mempool_cache *c = rte_mempool_default_cache(mp, id);

		if (died_in_put) {
			m->mbufs_leaked += c->len;
			mgr_log(m,
				"instance %u died inside a mempool put: the %u "
				"packet buffer(s) of its cache are left out of "
				"the pool%s%s (status mbufs.leaked)",
				inst, c->len, shm->n_pools > 1 ? " " : "",
				shm->n_pools > 1 ? mp->name : "");
			c->len = 0;
		} else if (c->len > 0) {
			rte_mempool_cache_flush(c, mp);
		}
	}
	m->registry->cache_owner[id] = 0;
	s->cache_lcore = SL_CACHE_NONE;
}

static void
slot_retire_stats(struct sl_mgr *m, struct sl_nf_slot *s)
{
	struct sl_ctx_stats *r = &m->svc_retired[s->service];
	const struct sl_ctx_stats *src[2] = {&s->nf, &s->mgr};

	uint32_t cols = SL_EDGE_COLS(m->shm);
	struct sl_edge_ctr *er = m->edge_retired + (size_t)s->service * cols;

	for (int side = 0; side < 2; side++) {
		const struct sl_edge_ctr *row =
			sl_edge_row_nf(m->shm, s->instance, side);

		for (uint32_t c = 0; c < cols; c++) {
			er[c].pkts += row[c].pkts;
			er[c].bytes += row[c].bytes;
		}
	}
	for (int p = 0; p < SL_MAX_PORTS; p++) {
		m->port_tx_retired[p][0] += s->port_tx[p].pkts;
		m->port_tx_retired[p][1] += s->port_tx[p].bytes;
	}

	for (int k = 0; k < 2; k++) {
		r->rx_pkts += k == 0 ? src[k]->rx_pkts : 0;
		r->rx_bytes += k == 0 ? src[k]->rx_bytes : 0;
		r->tx_pkts += src[k]->tx_pkts;
		r->tx_bytes += src[k]->tx_bytes;
		r->cycles += src[k]->cycles;
		for (int d = 0; d < SL_DROP_MAX; d++)
			r->drop[d] += src[k]->drop[d];
	}
}

/*
 * The producer side of every ring a dead instance may have been enqueuing
 * into (other instances' rx rings, then the message ring), as it stood
 * when the death was seen: [max_nfs + 1], for unstick() a grace period
 * later. NULL if out of memory (nothing is then rolled back).
 */
struct sl_ring_prod *
mgr_reg_rings_snapshot(struct sl_mgr *m, uint16_t dead)
{
	struct sl_shm *shm = m->shm;
	struct sl_ring_prod *snap = calloc(shm->max_nfs + 1u, sizeof(*snap));

	if (snap == NULL)
		return NULL;
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (i != dead && shm->nfs[i].rx != NULL &&
		    shm->nfs[i].state != SL_NF_FREE)
			sl_ring_prod_get(shm->nfs[i].rx, &snap[i]);
	sl_ring_prod_get(shm->msg_ring, &snap[shm->max_nfs]);
	return snap;
}

/* Rolls back what the dead instance had reserved and never finished in
 * another's ring (see sl_ring_unstick); frees the snapshot. */
static void
unstick(struct sl_mgr *m, uint16_t dead, struct sl_ring_prod *snap)
{
	struct sl_shm *shm = m->shm;
	uint32_t n;

	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		if (i == dead || shm->nfs[i].rx == NULL ||
		    shm->nfs[i].state == SL_NF_FREE)
			continue;
		n = sl_ring_unstick(shm->nfs[i].rx, &snap[i]);
		if (n > 0) {
			m->rings_unstuck++;
			mgr_log(m,
				"instance %u died inside an enqueue into instance "
				"%u's rx ring: its reservation of %u slot(s) "
				"was rolled back (those packets stay counted "
				"to instance %u until it is gone)",
				dead, i, n, i);
		}
	}
	n = sl_ring_unstick(shm->msg_ring, &snap[shm->max_nfs]);
	if (n > 0) {
		m->rings_unstuck++;
		mgr_log(m,
			"instance %u died inside a post to the message ring: "
			"its reservation of %u slot(s) was rolled back",
			dead, n);
	}
	free(snap);
}

/*
 * A dead NF's call into a port's driver (struct sl_tx_call). Returned
 * (phase 2): what it sent is added to its port_tx if it had not done so
 * (the packets not sent are tagged with it again, for the scan). Inside
 * the call (phase 1): the packets of the burst not tagged with it again
 * may have left or not, and their buffers, if the driver had not freed
 * them yet, are out of the pool for good; they count as nf_lost (so
 * that every packet read is still sent or dropped) and in
 * mbufs.in_doubt. Returns the nf_lost count.
 */
static uint32_t
tx_call_settle(struct sl_mgr *m, struct sl_nf_slot *s, uint16_t inst)
{
	struct sl_shm *shm = m->shm;
	struct sl_tx_call *c = &s->tx_call;
	uint32_t phase = __atomic_load_n(&c->phase, __ATOMIC_ACQUIRE);
	uint16_t tag = (uint16_t)(inst + 1);
	uint32_t doubt = 0;

	if (phase == 0 || c->port >= SL_MAX_PORTS || c->n > SL_BURST_MAX) {
		c->phase = 0;
		return 0;
	}
	if (phase == 2) {
		if (s->port_tx[c->port].pkts == c->pkts_before)
			s->port_tx[c->port].pkts += c->k;
		if (s->port_tx[c->port].bytes == c->bytes_before)
			s->port_tx[c->port].bytes += c->sent_bytes;
		c->phase = 0;
		return 0;
	}
	for (uint16_t i = 0; i < c->n; i++)
		if (sl_meta(s->tx_hand[i], shm->dynfield_offset)->owner != tag)
			doubt++;
	c->phase = 0;
	m->mbufs_in_doubt += doubt;
	if (doubt > 0)
		mgr_log(m,
			"instance %u (%s) died inside its transmit call on port "
			"%s: %u packet(s) it had handed to the driver may have "
			"left or not; counted as nf_lost, and their buffers, "
			"those the driver had not freed yet, stay out of the "
			"pool (status mbufs.in_doubt)",
			inst, shm->services[s->service].name,
			shm->ports[c->port].name, doubt);
	return doubt;
}

/*
 * A dead or departed instance: roll back what a dead one left half
 * enqueued in others' rings (unstick), free every packet it held, then,
 * once sluiced has drained its tx ring, free the slot.
 *
 * What it held: its rx ring; the burst it was taking from the ring and
 * had not tagged yet (slot->hand); and the packets tagged with it. A tag
 * outlives the hand-off (the consumer retags what it takes, see
 * to_instance), so a packet tagged with it is in its hands, in a ring, or
 * just taken by a consumer that is retagging it. Pass 1 keeps those in no
 * ring; a grace period later every consumer has retagged what it took,
 * and pass 2 frees those still tagged: they were in its hands.
 * Returns 0 when done, SL_GRACE_AGAIN for pass 2, EAGAIN to be retried
 * at the next poll.
 */
int
mgr_reg_reclaim(struct sl_mgr *m, struct sl_reg_reclaim *a)
{
	struct sl_shm *shm = m->shm;
	uint16_t inst = a->instance;
	uint16_t tag = (uint16_t)(inst + 1);
	struct sl_nf_slot *s = &shm->nfs[inst];
	uint64_t lost;
	uint32_t n_msgs;

	if (a->ptr != NULL) {
		unstick(m, inst, a->ptr);
		a->ptr = NULL;
	}
	if (s->tx != NULL && rte_ring_count(s->tx) > 0)
		return EAGAIN; /* the TX thread still hands those on */
	if (a->pass == 0) {
		struct tagged_arg t = {.off = shm->dynfield_offset,
				       .owner = tag};

		for (int i = 0; i < SL_BURST_MAX; i++) {
			struct rte_mbuf *p = s->hand[i];

			if (p != NULL && !mgr_reg_in_ring(s->rx, p))
				sl_meta(p, t.off)->owner = tag;
			s->hand[i] = NULL;
		}
		a->lost = rx_ring_free(shm, s->rx);
		s->mgr.drop[SL_DROP_NF_LOST] += tx_call_settle(m, s, inst);
		for (uint32_t p = 0; p < shm->n_pools; p++)
			rte_mempool_obj_iter(shm->pools[p], tagged_one, &t);
		if (t.oom)
			mgr_log(m,
				"instance %u: out of memory looking for the "
				"packets it held; they stay out of the pool",
				inst);
		a->cand = t.v;
		a->n_cand = not_in_rings(shm, t.v, t.n);
		a->pass = 1;
		if (a->n_cand > 0)
			return SL_GRACE_AGAIN;
	}
	for (uint32_t i = 0; i < a->n_cand; i++) {
		struct sl_pkt_meta *meta =
			sl_meta(a->cand[i], shm->dynfield_offset);

		if (meta->owner != tag)
			continue; /* a consumer's now */
		meta->owner = 0;
		rte_pktmbuf_free(a->cand[i]);
		a->lost++;
	}
	free(a->cand);
	a->cand = NULL;
	a->n_cand = 0;
	lost = a->lost;
	mgr_reg_inbox_drain(m, s);
	n_msgs = mgr_reg_msgs_reclaim(m, s->pid);
	if (n_msgs > 0)
		mgr_log(m,
			"pid %d: %u message(s) it left unreturned given back",
			s->pid, n_msgs);
	s->mgr.drop[SL_DROP_NF_LOST] += lost;
	if (lost > 0)
		mgr_log(m,
			"instance %u (%s): %" PRIu64
			" packet(s) it held were lost",
			inst, shm->services[s->service].name, lost);
	slot_retire_stats(m, s);
	cache_lcore_release(m, s, inst);
	if (s->txq != 0)
		m->registry->txq_owner[s->txq] = 0;
	__atomic_store_n(&s->state, SL_NF_FREE, __ATOMIC_RELEASE);
	mgr_event(m, "nf.freed",
		  json_pack("{s:i, s:s, s:I}", "instance", inst, "service",
			    shm->services[s->service].name, "lost",
			    (json_int_t)lost));
	return 0;
}

int
mgr_reg_reclaim_run(void *ctx, struct sl_grace_action *qa, int draining)
{
	struct sl_mgr *m = ctx;
	struct sl_reg_reclaim *a = container_of(qa, struct sl_reg_reclaim, qa);
	struct sl_nf_slot *s = &m->shm->nfs[a->instance];
	void *obj;
	int rc;

	if (!draining) {
		rc = mgr_reg_reclaim(m, a);
		if (rc == 0)
			free(a);
		return rc;
	}
	/* At shutdown: tx rings are no longer drained: drop as lost */
	while (s->tx != NULL && rte_ring_sc_dequeue(s->tx, &obj) == 0) {
		rte_pktmbuf_free(obj);
		s->mgr.drop[SL_DROP_NF_LOST]++;
	}
	/* Every reader has stopped: pass 2 needs no grace period now. */
	for (int k = 0; k < 3 && mgr_reg_reclaim(m, a) != 0; k++)
		;
	free(a->cand);
	free(a);
	return 0;
}
