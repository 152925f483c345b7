/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The RX thread's upkeep of the flow table, once per millisecond: idle
 * flows aged out, flows the control thread marked deleted removed, and
 * removed positions recycled once a grace period has passed (a packet
 * still in a ring may hold one: see flow/flow.h).
 */
#include <errno.h>
#include <stdint.h>

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "sluiced.h"

/* At most this much of the RX thread's time per millisecond goes to
 * removing deleted flows (ring and pass below): a delete of a million
 * flows takes seconds, and forwarding never stops for longer than this. */
#define DEL_WORK_US 50

/* Retires a position: deleted from the hash now, recycled after a grace
 * period. 0, EAGAIN if every limbo batch is waiting (try again later),
 * ENOENT if the hash has no such key (rte_hash_del_key_* < 0). */
static int
flow_retire(struct sl_flowdir_state *fs, struct sl_shm *shm, uint32_t p)
{
	struct sl_flow_table *ft = &shm->flow;
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	unsigned int open = (fs->head + fs->n_closed) % SL_FLOW_LIMBO_BATCHES;
	struct sl_flow_limbo *b = &fs->limbo[open];

	if (fs->n_closed == SL_FLOW_LIMBO_BATCHES)
		return EAGAIN;
	if (p < ft->base6) {
		struct sl_flow_key4 k4;

		sl_flow_key4_of(&fs->keys[p], &k4);
		if (rte_hash_del_key_with_hash(ft->hash, &k4, fs->side[p].sig) <
		    0)
			return ENOENT;
	} else {
		if (rte_hash_del_key_with_hash(ft->hash6, &fs->keys[p],
					       fs->side[p].sig) < 0)
			return ENOENT;
		ft->n_live6--;
	}
	__atomic_store_n(&e->state, SL_FLOW_FREE, __ATOMIC_RELEASE);
	ft->n_live--;
	if (b->n == 0)
		fs->open_since = rte_rdtsc();
	b->pos[b->n++] = p;
	if (b->n == SL_FLOW_LIMBO_BATCH) {
		(void)sl_grace_start(&b->grace, shm);
		fs->n_closed++;
	}
	return 0;
}

int
mgr_flow_retire_deleted(struct sl_flowdir_state *fs, struct sl_shm *shm,
			uint32_t p)
{
	struct sl_flow_entry *e = sl_flow_entry(shm, p);
	int rc;

	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != SL_FLOW_DELETE)
		return ENOENT;
	rc = flow_retire(fs, shm, p);
	if (rc != 0)
		return rc;
	shm->flow.st.deleted++;
	__atomic_fetch_sub(&fs->del_marked, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Removes the entries the control thread marked, until `until` (TSC):
 * those on the ring, then, if some were not (the ring was full), a pass
 * over the table that finds the rest, a bounded stretch per call. */
static void
delete_marked(struct sl_flowdir_state *fs, struct sl_shm *shm, uint64_t until)
{
	struct sl_flow_table *ft = &shm->flow;
	uint32_t p, missed;
	unsigned int i = 0;

	while (rte_ring_sc_dequeue_elem(fs->del_ring, &p, sizeof(p)) == 0) {
		if (mgr_flow_retire_deleted(fs, shm, p) == EAGAIN) {
			/* Off the ring but still marked: the pass finds it. */
			__atomic_fetch_add(&fs->del_missed, 1,
					   __ATOMIC_RELEASE);
			return;
		}
		if ((++i & 15) == 0 && rte_rdtsc() > until)
			return;
	}
	missed = __atomic_load_n(&fs->del_missed, __ATOMIC_ACQUIRE);
	if (!fs->pass_on) {
		if (missed == fs->pass_seen)
			return;
		fs->pass_on = 1;
		fs->pass_seen = missed;
		fs->pass = 0;
	}
	while (fs->pass < ft->capacity &&
	       __atomic_load_n(&fs->del_marked, __ATOMIC_ACQUIRE) != 0) {
		if (mgr_flow_retire_deleted(fs, shm, fs->pass) == EAGAIN)
			return; /* again from here once a batch is recycled */
		fs->pass++;
		if ((++i & 255) == 0 && rte_rdtsc() > until)
			return;
	}
	/* Done; if more were missed since it started (maybe behind it),
	 * del_missed != pass_seen starts another. */
	fs->pass_on = 0;
}

/* Recycles the positions of closed batches whose grace period has
 * passed; closes a half-full batch after 10 ms, so frees are not held
 * up. */
static void
limbo_recycle(struct sl_flowdir_state *fs, struct sl_shm *shm, uint64_t now)
{
	struct sl_flow_table *ft = &shm->flow;

	while (fs->n_closed > 0) {
		struct sl_flow_limbo *b = &fs->limbo[fs->head];

		if (!sl_grace_passed(&b->grace, shm, fs->self_io, 0))
			break;
		for (uint32_t i = 0; i < b->n; i++) {
			uint32_t p = b->pos[i];
			int v6 = p >= ft->base6;

			rte_hash_free_key_with_position(
				v6 ? ft->hash6 : ft->hash,
				(int32_t)(v6 ? p - ft->base6 : p));
		}
		b->n = 0;
		fs->head = (fs->head + 1) % SL_FLOW_LIMBO_BATCHES;
		fs->n_closed--;
	}
	if (fs->n_closed < SL_FLOW_LIMBO_BATCHES) {
		struct sl_flow_limbo *b = &fs->limbo[(fs->head + fs->n_closed) %
						     SL_FLOW_LIMBO_BATCHES];

		if (b->n > 0 && now - fs->open_since > 10 * shm->ms_hz) {
			(void)sl_grace_start(&b->grace, shm);
			fs->n_closed++;
		}
	}
}

void
mgr_flow_maintain(struct sl_flowdir_state *fs, struct sl_shm *shm, uint64_t now)
{
	struct sl_flow_table *ft = &shm->flow;
	uint32_t budget, p;

	if (ft->lookup == SL_LOOKUP_OFF)
		return;
	if (now - fs->last_tick < shm->ms_hz)
		return; /* once per millisecond */
	fs->last_tick = now;
	fs->now_ms = (uint32_t)((now - fs->start_tsc) / shm->ms_hz);

	limbo_recycle(fs, shm, now);
	/* Deletions asked for by the control thread. */
	delete_marked(fs, shm, now + DEL_WORK_US * shm->ms_hz / 1000);
	/* Aging: sweep the table twice per timeout. */
	budget = (uint32_t)RTE_MIN((uint64_t)ft->capacity,
				   2ull * ft->capacity / ft->timeout_ms + 16);
	for (uint32_t i = 0; i < budget; i++) {
		struct sl_flow_entry *e;
		uint8_t st;

		p = fs->cursor;
		fs->cursor = fs->cursor + 1 == ft->capacity ? 0
							    : fs->cursor + 1;
		e = sl_flow_entry(shm, p);
		st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (st == SL_FLOW_FREE)
			continue;
		if (st == SL_FLOW_DELETE) {
			(void)mgr_flow_retire_deleted(fs, shm, p);
			continue;
		}
		if ((uint32_t)(fs->now_ms - e->last_ms) >= ft->timeout_ms &&
		    flow_retire(fs, shm, p) == 0)
			ft->st.aged++;
	}
}

void
mgr_flow_rx_fini(struct sl_flowdir_state *fs)
{
	for (unsigned int i = 0; i < SL_FLOW_LIMBO_BATCHES; i++)
		sl_grace_fini(&fs->limbo[i].grace);
}
