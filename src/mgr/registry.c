/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Services and NF instances, from the control thread (the only writer of
 * the registry tables in shared memory).
 *
 * Removing anything that a data-path thread may still be using (an old
 * chain, a leaving or dead instance's rings) is deferred to a quiescent
 * point: every running NF and I/O thread has gone round its loop (or is
 * asleep) since the change was published.
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

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static const char *const state_names[] = {"free", "running", "stopping",
					  "dead"};

/*
 * Is pid a process attached to this node's DPDK memory (it maps a file of
 * the node's runtime folder, as every secondary maps its config)? An NF
 * names its pid itself; from another pid namespace (a container without
 * --pid host) that number is some other host process, which sluiced would
 * then watch as the NF, and stop at shutdown.
 */
static int
pid_maps_node(int pid, char *err, size_t errlen)
{
	const char *dir = rte_eal_get_runtime_dir();
	const char *base = strrchr(dir, '/');
	char path[64], line[1024], needle[128];
	int found = 0;
	FILE *f;

	/* The folder's own name (dpdk/sluice_NODE): /proc/PID/maps shows
	 * paths as the process sees them (/run for /var/run; a container's
	 * own mount of the folder). */
	snprintf(needle, sizeof(needle), "/dpdk%s/", base != NULL ? base : dir);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (f == NULL) {
		snprintf(err, errlen,
			 "cannot read %s (%s): not the NF that asked (another "
			 "pid namespace? run containers with --pid host)",
			 path, strerror(errno));
		return -1;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, needle) != NULL;
	fclose(f);
	if (!found)
		snprintf(err, errlen,
			 "pid %d does not map %s: not the NF that asked "
			 "(another pid namespace? run containers with --pid "
			 "host)",
			 pid, dir);
	return found ? 0 : -1;
}

const char *
sl_nf_state_name(uint32_t state)
{
	return state < RTE_DIM(state_names) ? state_names[state] : "?";
}

int
sl_registry_init(struct sl_mgr *m)
{
	m->pidfd = malloc(sizeof(*m->pidfd) * m->o.max_nfs);
	m->svc_retired = calloc(m->o.max_services, sizeof(*m->svc_retired));
	m->txq_owner = calloc(1 + m->o.nf_txq, sizeof(*m->txq_owner));
	m->cache_owner = calloc(RTE_MAX_LCORE, sizeof(*m->cache_owner));
	m->hb_seen = calloc(m->o.max_nfs, sizeof(*m->hb_seen));
	m->hb_tsc = calloc(m->o.max_nfs, sizeof(*m->hb_tsc));
	if (m->pidfd == NULL || m->svc_retired == NULL || m->txq_owner == NULL ||
	    m->cache_owner == NULL || m->hb_seen == NULL || m->hb_tsc == NULL) {
		fprintf(stderr, "sluiced: out of memory\n");
		return -1;
	}
	for (uint16_t i = 0; i < m->o.max_nfs; i++)
		m->pidfd[i] = -1;
	return 0;
}

/* ---- services and load-balancer tables ----------------------------- */

int
sl_service_get(struct sl_mgr *m, const char *name, int create, char *err,
	       size_t errlen)
{
	struct sl_shm *shm = m->shm;
	int free_id = -1;

	for (uint16_t s = 0; s < shm->max_services; s++) {
		struct sl_service *svc = &shm->services[s];

		if (svc->used && strcmp(svc->name, name) == 0)
			return s;
		if (!svc->used && free_id < 0)
			free_id = s;
	}
	if (!create)
		return -ENOENT;
	if (free_id < 0) {
		snprintf(err, errlen,
			 "all %u services are in use: raise --max-services",
			 shm->max_services);
		return -ENOSPC;
	}
	struct sl_service *svc = &shm->services[free_id];

	snprintf(svc->name, sizeof(svc->name), "%s", name);
	svc->lb_mode = SL_LB_FLOW;
	svc->n_live = 0;
	memset(&m->svc_retired[free_id], 0, sizeof(m->svc_retired[free_id]));
	memset(m->edge_retired + (size_t)free_id * SL_EDGE_COLS(shm), 0,
	       SL_EDGE_COLS(shm) * sizeof(*m->edge_retired));
	__atomic_store_n(&svc->used, 1, __ATOMIC_RELEASE);
	return free_id;
}

void
sl_service_release(struct sl_mgr *m, uint16_t id)
{
	struct sl_service *svc = &m->shm->services[id];

	__atomic_store_n(&svc->used, 0, __ATOMIC_RELEASE);
	memset(svc->name, 0, sizeof(svc->name));
}

static void
live_add(struct sl_mgr *m, uint16_t s, uint16_t inst)
{
	struct sl_service *svc = &m->shm->services[s];

	svc->live[svc->n_live] = inst;
	__atomic_store_n(&svc->n_live, (uint16_t)(svc->n_live + 1),
			 __ATOMIC_RELEASE);
	sl_lb_rebuild(svc);
}

static void
live_remove(struct sl_mgr *m, uint16_t s, uint16_t inst)
{
	struct sl_service *svc = &m->shm->services[s];
	uint16_t n = svc->n_live;

	for (uint16_t k = 0; k < n; k++) {
		if (svc->live[k] != inst)
			continue;
		svc->live[k] = svc->live[n - 1];
		__atomic_store_n(&svc->n_live, (uint16_t)(n - 1),
				 __ATOMIC_RELEASE);
		sl_lb_rebuild(svc);
		return;
	}
}

int
sl_lb_set(struct sl_mgr *m, uint16_t service, enum sl_lb_mode mode)
{
	struct sl_service *svc = &m->shm->services[service];

	__atomic_store_n(&svc->lb_mode, (uint8_t)mode, __ATOMIC_RELEASE);
	return 0;
}

void
sl_maybe_enable_rx(struct sl_mgr *m)
{
	if (m->rx_started || !sl_chain_complete(m))
		return;
	m->rx_started = 1; /* only the first time: rx.pause sticks */
	__atomic_store_n(&m->shm->rx_enabled, 1, __ATOMIC_RELEASE);
	sl_log("chain complete: reading ports");
}

/* Returns the messages left in an instance's inbox to the pool. */
static void
inbox_drain(struct sl_mgr *m, struct sl_nf_slot *s)
{
	void *obj;

	while (s->inbox != NULL && rte_ring_dequeue(s->inbox, &obj) == 0)
		sl_msg_put(m->shm, obj);
}

/*
 * Gives back the messages a dead process was answered and never returned
 * (it died waiting for the answer, or gave up on it: a replica cancelled
 * while registering). A message with its pid, answered (done) and not free
 * is one: nothing else reads it. Its unanswered messages are still
 * sluiced's (the message ring, a deregistration in progress) or lost in
 * its own hands for good (taken, not yet posted: a short window).
 */
/* Returns one message nobody will return, counted. */
static void
msg_give_back(struct sl_mgr *m, struct sl_msg *msg)
{
	sl_msg_put(m->shm, msg);
	m->msgs_reclaimed++;
}

static int in_ring(const struct rte_ring *r, const void *p);

/*
 * Messages answered in the message itself (done) belong to their sender
 * until it returns them: every registration and deregistration answer, and
 * refused messages of any type (a bad registration, an unknown type, a
 * request from no running NF of its pid). A sender that never registered,
 * or not as that pid, is watched by no slot, so nothing above returns what
 * it keeps: a process that gives up or dies after its answer, or a bad NF
 * that never returns refused messages. Every SWEEP_MS the pool is scanned
 * for answered messages (not free, done, pid > 0) whose pid has exited and
 * is no slot's (a slot's are msgs_reclaim's, after its reclaim): nobody can
 * return those any more, so they are given back, once (a message given back
 * is marked free, and the scan skips the free). Never before the process
 * has exited: a slow sender returns its own. Skipped as not in the
 * sender's hands: a message still queued in the message ring (its done set
 * by the sender itself), and a deregistration waiting for its quiescent
 * point (sluiced's). Limits: the pid is the one the message names; a
 * message naming a pid not its sender's (0, another live process) is
 * reclaimed when that pid exits, or never.
 */
#define SWEEP_MS 100

static uint64_t g_sweep_next;

struct answered {
	int32_t pid; /* only this sender's; 0: any sender's */
	uint32_t n, max;
	struct sl_msg **msg;
};

static void
answered_find(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	struct answered *a = arg;
	struct sl_msg *msg = obj;

	(void)mp;
	(void)idx;
	if (__atomic_load_n(&msg->type, __ATOMIC_ACQUIRE) != SL_MSG_FREE &&
	    __atomic_load_n(&msg->done, __ATOMIC_ACQUIRE) == 1 &&
	    msg->pid > 0 && (a->pid == 0 || msg->pid == a->pid) &&
	    a->n < a->max)
		a->msg[a->n++] = msg;
}

/* Room for every message of the pool (control thread only). */
static struct sl_msg **
answered_room(const struct sl_mgr *m, int which)
{
	static struct sl_msg **room[2];

	if (room[which] == NULL)
		room[which] = calloc(m->shm->msg_pool->size, sizeof(**room));
	return room[which];
}

/* 1 once pid has exited (a zombie counts), not a process reusing it. */
static int
pid_exited(int32_t pid)
{
	struct pollfd p = {.events = POLLIN};
	int r;

	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p.fd < 0)
		return errno == ESRCH;
	r = poll(&p, 1, 0);
	close(p.fd);
	return r > 0;
}

/* 1 if sluiced holds msg itself: a deregistration in a quiescent action. */
static int
held_by_qs(const struct sl_mgr *m, const struct sl_msg *msg)
{
	for (const struct sl_qs_action *a = m->qs; a != NULL; a = a->next)
		if (a->kind == SL_QS_DEREGISTER && a->ptr == msg)
			return 1;
	return 0;
}

/* 1 if pid is a slot's that is not free (its reclaim returns its own). */
static int
pid_of_slot(const struct sl_mgr *m, int32_t pid)
{
	const struct sl_shm *shm = m->shm;

	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].pid == pid &&
		    __atomic_load_n(&shm->nfs[i].state, __ATOMIC_ACQUIRE) !=
			    SL_NF_FREE)
			return 1;
	return 0;
}

/*
 * Gives back the answered messages of pid, which has exited (a dead NF's,
 * or a sender's the sweep below found): gathered now, so none it returned
 * before it exited is taken for its. Not given back: one still queued in
 * the message ring (done set by the sender itself: the ring's reader
 * answers and returns it) and a deregistration sluiced holds for its
 * quiescent point. Returns how many.
 */
static uint32_t
msgs_reclaim(struct sl_mgr *m, int32_t pid)
{
	struct rte_mempool *mp = m->shm->msg_pool;
	struct answered a = {.pid = pid, .max = mp->size,
			     .msg = answered_room(m, 1)};
	uint32_t n = 0;

	if (a.msg == NULL || pid <= 0)
		return 0;
	rte_mempool_obj_iter(mp, answered_find, &a);
	for (uint32_t i = 0; i < a.n; i++) {
		if (in_ring(m->shm->msg_ring, a.msg[i]) ||
		    held_by_qs(m, a.msg[i]))
			continue;
		msg_give_back(m, a.msg[i]);
		n++;
	}
	return n;
}

static int
pid_cmp(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;

	return (a > b) - (a < b);
}

static void
answered_sweep(struct sl_mgr *m)
{
	static int32_t *pids;
	struct rte_mempool *mp = m->shm->msg_pool;
	struct answered a = {.max = mp->size, .msg = answered_room(m, 0)};
	uint64_t now = rte_rdtsc();

	if (now < g_sweep_next)
		return;
	g_sweep_next = now + m->shm->tsc_hz / 1000 * SWEEP_MS;
	if (pids == NULL)
		pids = calloc(mp->size, sizeof(*pids));
	if (pids == NULL || a.msg == NULL)
		return;
	rte_mempool_obj_iter(mp, answered_find, &a);
	/* Their senders, each once (read once: a live sender may reuse its
	 * messages meanwhile). */
	for (uint32_t i = 0; i < a.n; i++)
		pids[i] = a.msg[i]->pid;
	qsort(pids, a.n, sizeof(*pids), pid_cmp);
	for (uint32_t i = 0; i < a.n; i++) {
		int32_t pid = pids[i];
		uint32_t n;

		if ((i > 0 && pids[i - 1] == pid) || pid <= 0 ||
		    pid_of_slot(m, pid) || !pid_exited(pid))
			continue;
		n = msgs_reclaim(m, pid);
		if (n > 0)
			sl_log("pid %d (no registered NF): %u answered "
			       "message(s) it left unreturned given back "
			       "(status messages.reclaimed)",
			       pid, n);
	}
}

/* ---- quiescent-state actions --------------------------------------- */

int
sl_grace_start(struct sl_grace *g, const struct sl_shm *shm)
{
	if (g->nf_hb == NULL) {
		g->nf_hb = malloc(sizeof(uint64_t) * shm->max_nfs);
		if (g->nf_hb == NULL)
			return -ENOMEM;
	}
	g->t0 = rte_rdtsc();
	for (uint16_t i = 0; i < shm->max_nfs; i++)
		g->nf_hb[i] = __atomic_load_n(&shm->nfs[i].heartbeat,
					      __ATOMIC_ACQUIRE);
	for (uint32_t t = 0; t < shm->n_io; t++)
		g->io_hb[t] = __atomic_load_n(&shm->io_heartbeat[t],
					      __ATOMIC_ACQUIRE);
	g->ctl_hb = __atomic_load_n(&shm->ctl_heartbeat, __ATOMIC_ACQUIRE);
	return 0;
}

void
sl_grace_fini(struct sl_grace *g)
{
	free(g->nf_hb);
	g->nf_hb = NULL;
}

int
sl_grace_passed(const struct sl_grace *g, const struct sl_shm *shm,
		int self_io, int self_ctl)
{
	uint16_t hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);

	if (rte_rdtsc() - g->t0 < shm->tsc_hz / 1000)
		return 0;
	for (uint16_t i = 0; i < hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
			continue;
		if (__atomic_load_n(&s->heartbeat, __ATOMIC_ACQUIRE) ==
			    g->nf_hb[i] &&
		    !__atomic_load_n(&s->sleeping, __ATOMIC_ACQUIRE))
			return 0;
	}
	for (uint32_t t = 0; t < shm->n_io; t++)
		if ((int)t != self_io &&
		    __atomic_load_n(&shm->io_heartbeat[t], __ATOMIC_ACQUIRE) ==
			    g->io_hb[t] &&
		    !__atomic_load_n(&shm->io_sleeping[t], __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE))
			return 0;
	if (!self_ctl &&
	    __atomic_load_n(&shm->ctl_heartbeat, __ATOMIC_ACQUIRE) ==
		    g->ctl_hb &&
	    !__atomic_load_n(&shm->ctl_idle, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE))
		return 0;
	return 1;
}

struct sl_qs_action *
sl_qs_new(struct sl_mgr *m, enum sl_qs_kind kind)
{
	struct sl_qs_action *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	if (sl_grace_start(&a->grace, m->shm) != 0) {
		free(a);
		return NULL;
	}
	a->kind = kind;
	/* Append: actions complete in order. */
	struct sl_qs_action **pp = &m->qs;

	while (*pp != NULL)
		pp = &(*pp)->next;
	*pp = a;
	return a;
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
	uintptr_t x = (uintptr_t)*(void *const *)a;
	uintptr_t y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/* The entries of a ring of pointers (rte_ring_create, 8-byte elements). */
static inline void *const *
ring_entries(const struct rte_ring *r)
{
	return (void *const *)(const void *)&r[1];
}

/* Is p between r's consumer and producer tails: queued, or being taken? */
static int
in_ring(const struct rte_ring *r, const void *p)
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
static uint16_t
cache_lcore_take(struct sl_mgr *m, uint16_t inst)
{
	const struct sl_shm *shm = m->shm;

	if (!m->o.nf_cache || shm->pktmbuf_pool->cache_size == 0)
		return SL_CACHE_NONE;
	for (int id = RTE_MAX_LCORE - 1; id >= 0; id--) {
		if (rte_lcore_is_enabled((unsigned int)id) ||
		    m->cache_owner[id] != 0)
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
		m->cache_owner[id] = (uint16_t)(inst + 1);
		return (uint16_t)id;
	}
	/* More instances than ids (RTE_MAX_LCORE less sluiced's lcores):
	 * defined, and said when it happens (not at every start: the
	 * default --max-nfs 128 is above the 126 ids of a 2-lcore sluiced,
	 * and few nodes run that many). */
	sl_log("instance %u gets no packet-buffer cache: all %u lcore ids for "
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
			sl_log("instance %u died inside a mempool put: the %u "
			       "packet buffer(s) of its cache are left out of "
			       "the pool%s%s (status mbufs.leaked)",
			       inst, c->len, shm->n_pools > 1 ? " " : "",
			       shm->n_pools > 1 ? mp->name : "");
			c->len = 0;
		} else if (c->len > 0) {
			rte_mempool_cache_flush(c, mp);
		}
	}
	m->cache_owner[id] = 0;
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
static struct sl_ring_prod *
rings_snapshot(struct sl_mgr *m, uint16_t dead)
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
			sl_log("instance %u died inside an enqueue into instance "
			       "%u's rx ring: its reservation of %u slot(s) "
			       "was rolled back (those packets stay counted "
			       "to instance %u until it is gone)",
			       dead, i, n, i);
		}
	}
	n = sl_ring_unstick(shm->msg_ring, &snap[shm->max_nfs]);
	if (n > 0) {
		m->rings_unstuck++;
		sl_log("instance %u died inside a post to the message ring: "
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
		sl_log("instance %u (%s) died inside its transmit call on port "
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
 * Returns 0 when done, -EAGAIN to be retried later.
 */
static int
reclaim(struct sl_mgr *m, struct sl_qs_action *a)
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
		return -EAGAIN; /* the TX thread still hands those on */
	if (a->pass == 0) {
		struct tagged_arg t = {.off = shm->dynfield_offset,
				       .owner = tag};

		for (int i = 0; i < SL_BURST_MAX; i++) {
			struct rte_mbuf *p = s->hand[i];

			if (p != NULL && !in_ring(s->rx, p))
				sl_meta(p, t.off)->owner = tag;
			s->hand[i] = NULL;
		}
		a->lost = rx_ring_free(shm, s->rx);
		s->mgr.drop[SL_DROP_NF_LOST] += tx_call_settle(m, s, inst);
		for (uint32_t p = 0; p < shm->n_pools; p++)
			rte_mempool_obj_iter(shm->pools[p], tagged_one, &t);
		if (t.oom)
			sl_log("instance %u: out of memory looking for the "
			       "packets it held; they stay out of the pool",
			       inst);
		a->cand = t.v;
		a->n_cand = not_in_rings(shm, t.v, t.n);
		a->pass = 1;
		if (a->n_cand > 0) {
			(void)sl_grace_start(&a->grace, shm);
			return -EAGAIN;
		}
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
	inbox_drain(m, s);
	n_msgs = msgs_reclaim(m, s->pid);
	if (n_msgs > 0)
		sl_log("pid %d: %u message(s) it left unreturned given back",
		       s->pid, n_msgs);
	s->mgr.drop[SL_DROP_NF_LOST] += lost;
	if (lost > 0)
		sl_log("instance %u (%s): %" PRIu64
		       " packet(s) it held were lost",
		       inst, shm->services[s->service].name, lost);
	slot_retire_stats(m, s);
	cache_lcore_release(m, s, inst);
	if (s->txq != 0)
		m->txq_owner[s->txq] = 0;
	__atomic_store_n(&s->state, SL_NF_FREE, __ATOMIC_RELEASE);
	sl_event("nf.freed",
		 json_pack("{s:i, s:s, s:I}", "instance", inst, "service",
			   shm->services[s->service].name, "lost",
			   (json_int_t)lost));
	return 0;
}

static int
qs_run(struct sl_mgr *m, struct sl_qs_action *a)
{
	struct sl_msg *msg;

	switch (a->kind) {
	case SL_QS_FREE_CHAIN:
		rte_free(a->ptr);
		return 0;
	case SL_QS_CALL:
		return a->fn(m, a->ptr);
	case SL_QS_DEREGISTER:
		msg = a->ptr;
		if (m->shm->nfs[a->instance].pid != msg->pid ||
		    m->shm->nfs[a->instance].state != SL_NF_STOPPING) {
			/* It died while waiting: nobody reads the answer. */
			msg_give_back(m, msg);
			return 0;
		}
		msg->result = 0;
		__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
		return 0;
	case SL_QS_RECLAIM:
		return reclaim(m, a);
	}
	return 0;
}

static void
qs_poll(struct sl_mgr *m)
{
	struct sl_qs_action **pp = &m->qs;

	while (*pp != NULL) {
		struct sl_qs_action *a = *pp;

		if (!sl_grace_passed(&a->grace, m->shm, -1, 1) ||
		    qs_run(m, a) != 0) {
			pp = &a->next;
			continue;
		}
		*pp = a->next;
		sl_grace_fini(&a->grace);
		free(a);
	}
}

void
sl_qs_drain_all(struct sl_mgr *m)
{
	/* At shutdown every data-path thread has stopped. */
	while (m->qs != NULL) {
		struct sl_qs_action *a = m->qs;

		m->qs = a->next;
		if (a->kind == SL_QS_RECLAIM) {
			/* tx rings are no longer drained: drop as lost */
			struct sl_nf_slot *s = &m->shm->nfs[a->instance];
			void *obj;

			while (s->tx != NULL &&
			       rte_ring_sc_dequeue(s->tx, &obj) == 0) {
				rte_pktmbuf_free(obj);
				s->mgr.drop[SL_DROP_NF_LOST]++;
			}
		}
		/* A reclaim's second pass needs no grace period now. */
		for (int k = 0; k < 3 && qs_run(m, a) != 0; k++)
			;
		free(a->cand);
		sl_grace_fini(&a->grace);
		free(a);
	}
}

/* ---- registration ------------------------------------------------- */

static void
reply(struct sl_msg *msg, int result, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
reply(struct sl_msg *msg, int result, const char *fmt, ...)
{
	va_list ap;

	msg->result = result;
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg->error, sizeof(msg->error), fmt, ap);
		va_end(ap);
	}
	__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
}

/* ---- what an NF's message may hold ---------------------------------- */

/* Counts and logs one message refused for what it holds (the reason is
 * in msg->error). The log stops after 20, then says every 1000th. */
static void
refused(struct sl_mgr *m, const struct sl_msg *msg)
{
	m->msgs_refused++;
	if (m->msgs_refused <= 20 || m->msgs_refused % 1000 == 0)
		sl_log("NF message refused (%" PRIu64 " so far; status "
		       "messages.refused): pid %d, type %u: %.*s",
		       m->msgs_refused, msg->pid, msg->type,
		       (int)sizeof(msg->error), msg->error);
}

/* Answers a message (done) with a refusal, counted and logged. */
static void
refuse(struct sl_mgr *m, struct sl_msg *msg, int result, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
refuse(struct sl_mgr *m, struct sl_msg *msg, int result, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg->error, sizeof(msg->error), fmt, ap);
	va_end(ap);
	msg->result = result;
	refused(m, msg);
	__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
}

/* 1 if s (terminated) is printable ASCII only. */
static int
text_printable(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s < 0x20 || *s > 0x7e)
			return 0;
	return 1;
}

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
	refuse(m, msg, EPERM,
	       "request refused: instance %u is not a running NF of pid %d; "
	       "send requests between registration and deregistration",
	       msg->instance, msg->pid);
}

/*
 * The fields of a request that sluiced reads, checked: 0, or a positive
 * errno with the reason in err. The graph checks come after
 * (sl_flow_request).
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

static int
slot_rings(struct sl_mgr *m, struct sl_nf_slot *s, uint16_t inst)
{
	struct sl_shm *shm = m->shm;
	char name[RTE_RING_NAMESIZE];

	if (s->rx == NULL) {
		snprintf(name, sizeof(name), "sl_%.16s_rx%u", shm->node, inst);
		s->rx = rte_ring_create(name, shm->ring_size, rte_socket_id(),
					RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "sl_%.16s_tx%u", shm->node, inst);
		s->tx = rte_ring_create(name, shm->ring_size, rte_socket_id(),
					RING_F_SP_ENQ | RING_F_SC_DEQ);
		snprintf(name, sizeof(name), "sl_%.16s_ib%u", shm->node, inst);
		s->inbox = rte_ring_create(name, SL_INBOX_SIZE, rte_socket_id(),
					   RING_F_SC_DEQ);
		if (s->rx == NULL || s->tx == NULL || s->inbox == NULL)
			return -ENOMEM;
	} else {
		rte_ring_reset(s->rx);
		rte_ring_reset(s->tx);
		inbox_drain(m, s);
	}
	return 0;
}

static void
handle_register(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	char err[256] = "";
	struct sl_nf_slot *s;
	int svc, inst = -1, pidfd;

	msg->service_name[sizeof(msg->service_name) - 1] = '\0';
	msg->prog[sizeof(msg->prog) - 1] = '\0';
	if (!sl_name_valid(msg->service_name) || msg->pid <= 0) {
		reply(msg, EINVAL, "bad registration (service '%s', pid %d)",
		      msg->service_name, msg->pid);
		return;
	}
	if (msg->mode > SL_MODE_POLL) {
		refuse(m, msg, EINVAL,
		       "bad registration: mode %u is neither 0 (shared) nor 1 "
		       "(poll)",
		       msg->mode);
		return;
	}
	if (msg->access & ~(SL_ACCESS_READ | SL_ACCESS_WRITE |
			    SL_ACCESS_ROUTE)) {
		refuse(m, msg, EINVAL,
		       "bad registration: access 0x%x has bits other than "
		       "SL_ACCESS_READ, _WRITE and _ROUTE",
		       msg->access);
		return;
	}
	if (!text_printable(msg->prog)) {
		refuse(m, msg, EINVAL,
		       "bad registration: the program name must be printable "
		       "ASCII");
		return;
	}
	if (msg->pid == (int32_t)getpid()) {
		refuse(m, msg, EPERM,
		       "bad registration: pid %d is sluiced's own", msg->pid);
		return;
	}
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].pid == msg->pid &&
		    __atomic_load_n(&shm->nfs[i].state, __ATOMIC_ACQUIRE) ==
			    SL_NF_RUNNING) {
			refuse(m, msg, EBUSY,
			       "pid %d is registered already, as instance "
			       "%u: one registration per process",
			       msg->pid, i);
			return;
		}
	if (pid_maps_node(msg->pid, err, sizeof(err)) != 0) {
		reply(msg, EPERM, "%s", err);
		sl_log("registration refused: %s", err);
		return;
	}
	if (msg->instance != SL_INSTANCE_NONE) {
		if (msg->instance >= shm->max_nfs) {
			reply(msg, EINVAL,
			      "instance %u is above --max-nfs %u; omit "
			      "--instance to get a free one",
			      msg->instance, shm->max_nfs);
			return;
		}
		if (shm->nfs[msg->instance].state != SL_NF_FREE) {
			reply(msg, EBUSY,
			      "instance %u is in use by pid %d; omit "
			      "--instance to get a free one",
			      msg->instance, shm->nfs[msg->instance].pid);
			return;
		}
		inst = msg->instance;
	} else {
		for (uint16_t i = 0; i < shm->max_nfs; i++)
			if (shm->nfs[i].state == SL_NF_FREE) {
				inst = i;
				break;
			}
		if (inst < 0) {
			reply(msg, ENOSPC,
			      "all %u NF instances are in use: raise "
			      "sluiced --max-nfs",
			      shm->max_nfs);
			return;
		}
	}
	svc = sl_service_get(m, msg->service_name, 1, err, sizeof(err));
	if (svc < 0) {
		reply(msg, ENOSPC, "%s", err);
		return;
	}
	pidfd = (int)syscall(SYS_pidfd_open, msg->pid, 0);
	if (pidfd < 0) {
		reply(msg, errno, "cannot watch pid %d: %s", msg->pid,
		      strerror(errno));
		return;
	}
	s = &shm->nfs[inst];
	if (slot_rings(m, s, (uint16_t)inst) != 0) {
		close(pidfd);
		reply(msg, ENOMEM,
		      "cannot create rings of %u entries: reserve more "
		      "hugepages or lower --ring-size",
		      shm->ring_size);
		return;
	}
	memset(&s->nf, 0, sizeof(s->nf));
	memset(&s->mgr, 0, sizeof(s->mgr));
	memset(sl_edge_row_nf(shm, (uint16_t)inst, 0), 0,
	       2 * SL_EDGE_COLS(shm) * sizeof(struct sl_edge_ctr));
	memset(s->port_tx, 0, sizeof(s->port_tx));
	/* Its own TX queue on the ports, if one is free (else the tx ring). */
	s->txq = 0;
	for (uint16_t q = 1; !m->o.handoff && q <= m->o.nf_txq; q++)
		if (m->txq_owner[q] == 0) {
			m->txq_owner[q] = (uint16_t)(inst + 1);
			s->txq = q;
			break;
		}
	s->pool_op = 0;
	memset(&s->tx_call, 0, sizeof(s->tx_call));
	s->cache_lcore = cache_lcore_take(m, (uint16_t)inst);
	s->instance = (uint16_t)inst;
	s->service = (uint16_t)svc;
	s->pid = msg->pid;
	s->mode = msg->mode;
	s->access = msg->access;
	snprintf(s->prog, sizeof(s->prog), "%s", msg->prog);
	s->stop = 0;
	s->sleeping = 0;
	s->first_pkt_tsc = 0;
	/* 0 until its loop runs (the NF's init may take its time); the
	 * watchdog starts from its next look. */
	__atomic_store_n(&s->heartbeat, 0, __ATOMIC_RELEASE);
	m->hb_tsc[inst] = 0;
	s->started_tsc = rte_rdtsc();
	s->proc_start_tsc = msg->start_tsc != 0 && msg->start_tsc < s->started_tsc
				    ? msg->start_tsc
				    : s->started_tsc;
	__atomic_store_n(&s->state, SL_NF_RUNNING, __ATOMIC_RELEASE);
	if (inst + 1 > shm->nf_hwm)
		__atomic_store_n(&shm->nf_hwm, (uint16_t)(inst + 1),
				 __ATOMIC_RELEASE);
	live_add(m, (uint16_t)svc, (uint16_t)inst);
	m->pidfd[inst] = pidfd;
	sl_control_watch_pid(m, (uint16_t)inst, pidfd);

	msg->instance = (uint16_t)inst;
	msg->service = (uint16_t)svc;
	reply(msg, 0, NULL);
	sl_log("NF up: instance %d, service %s (%d), pid %d, %s", inst,
	       msg->service_name, svc, msg->pid, msg->prog);
	sl_event("nf.up", json_pack("{s:i, s:s, s:i, s:s}", "instance", inst,
				    "service", msg->service_name, "pid",
				    msg->pid, "prog", msg->prog));
	sl_maybe_enable_rx(m);
}

static void
handle_deregister(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	struct sl_nf_slot *s;
	struct sl_qs_action *a;

	if (msg->instance >= shm->max_nfs ||
	    shm->nfs[msg->instance].pid != msg->pid ||
	    shm->nfs[msg->instance].state != SL_NF_RUNNING) {
		reply(msg, EINVAL, "instance %u is not registered to pid %d",
		      msg->instance, msg->pid);
		return;
	}
	s = &shm->nfs[msg->instance];
	__atomic_store_n(&s->state, SL_NF_STOPPING, __ATOMIC_RELEASE);
	live_remove(m, s->service, msg->instance);
	a = sl_qs_new(m, SL_QS_DEREGISTER);
	if (a == NULL) {
		reply(msg, 0, NULL);
		return;
	}
	a->ptr = msg;
	a->instance = msg->instance;
	sl_log("NF stopping: instance %u, service %s", msg->instance,
	       shm->services[s->service].name);
}

void
sl_nf_died(struct sl_mgr *m, uint16_t inst)
{
	struct sl_shm *shm = m->shm;
	struct sl_nf_slot *s = &shm->nfs[inst];
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	struct sl_qs_action *a;

	if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
		return;
	if (st == SL_NF_RUNNING)
		live_remove(m, s->service, inst);
	__atomic_store_n(&s->state, SL_NF_DEAD, __ATOMIC_RELEASE);
	if (m->pidfd[inst] >= 0) {
		close(m->pidfd[inst]);
		m->pidfd[inst] = -1;
	}
	a = sl_qs_new(m, SL_QS_RECLAIM);
	if (a != NULL) {
		a->instance = inst;
		/* Killed inside an enqueue? Seen and undone a grace period
		 * later, in reclaim(). */
		a->ptr = rings_snapshot(m, inst);
	}
	if (st == SL_NF_RUNNING)
		sl_log("NF died: instance %u, service %s, pid %d; its flows "
		       "move to %u remaining instance(s)",
		       inst, shm->services[s->service].name, s->pid,
		       shm->services[s->service].n_live);
	else
		sl_log("NF exited: instance %u, service %s, pid %d", inst,
		       shm->services[s->service].name, s->pid);
	sl_event("nf.down",
		 json_pack("{s:i, s:s, s:i, s:s}", "instance", inst, "service",
			   shm->services[s->service].name, "pid", s->pid,
			   "reason", st == SL_NF_RUNNING ? "died" : "stopped"));
}

/*
 * A cross-layer request from an NF: validated against the graph, applied
 * to the flow table, published as an event, and answered in the NF's
 * inbox (the same message object, as SL_MSG_REPLY).
 */
static void
handle_request(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	struct sl_req r;
	char err[160] = "", fk[160];
	uint32_t applied = 0, kept = 0;
	int rc;
	struct sl_nf_slot *s = msg->instance < shm->max_nfs
				       ? &shm->nfs[msg->instance]
				       : NULL;
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
		refused(m, msg);
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
	if (rc == 0)
		rc = sl_flow_request(m, &r, &applied, &kept, err, sizeof(err));
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
		json_object_set_new(ev, "to", sl_hop_json(shm, r.to));
	if (r.kind == SL_REQ_MESSAGE) {
		json_object_set_new(ev, "key", json_string(r.mkey));
		json_object_set_new(ev, "value", json_string(r.value));
	}
	sl_event(r.kind == SL_REQ_MESSAGE ? "nf.message" : "flow.request", ev);
	msg->type = SL_MSG_REPLY;
	msg->result = rc;
	/* A Message some instances missed is sent (0) with a reason too. */
	snprintf(msg->error, sizeof(msg->error), "%s",
		 rc != 0 || r.kind == SL_REQ_MESSAGE ? err : "");
	if (rte_ring_enqueue(s->inbox, msg) != 0)
		sl_msg_put(shm, msg);
}

/*
 * The hang watchdog: an NF that is registered, not asleep and has not
 * looped for --nf-hang-ms holds whatever grace periods wait for (buffers
 * of dead NFs, old graph versions, retired flow entries) for as long as it
 * is stuck. It is killed; its death (pidfd) then frees what it held like
 * any other. So is a running NF asleep with packets waiting in its ring,
 * which a live NF wakes up for at once. An NF in its init (no loop yet)
 * or fini, or idle, is not hung.
 */
static void
watchdog(struct sl_mgr *m)
{
	struct sl_shm *shm = m->shm;
	uint64_t now = rte_rdtsc(), limit;
	uint16_t hwm;

	if (m->o.nf_hang_ms == 0 || now < m->hang_next)
		return;
	m->hang_next = now + shm->tsc_hz / 100; /* every 10 ms */
	limit = shm->tsc_hz / 1000 * m->o.nf_hang_ms;
	hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);
	for (uint16_t i = 0; i < hwm; i++) {
		struct sl_nf_slot *s = &shm->nfs[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		uint64_t hb = __atomic_load_n(&s->heartbeat, __ATOMIC_ACQUIRE);

		if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
			continue;
		if (m->hb_tsc[i] == 0 || hb != m->hb_seen[i] || hb == 0 ||
		    (__atomic_load_n(&s->sleeping, __ATOMIC_ACQUIRE) &&
		     (st != SL_NF_RUNNING || rte_ring_count(s->rx) == 0))) {
			m->hb_seen[i] = hb;
			m->hb_tsc[i] = now;
			continue;
		}
		if (now - m->hb_tsc[i] < limit)
			continue;
		sl_log("NF hung: instance %u, service %s, pid %d: not one "
		       "loop in %u ms with work to do; killing it (sluiced "
		       "--nf-hang-ms; 0 never does)",
		       i, shm->services[s->service].name, s->pid,
		       m->o.nf_hang_ms);
		sl_event("nf.hung",
			 json_pack("{s:i, s:s, s:i, s:i}", "instance", i,
				   "service", shm->services[s->service].name,
				   "pid", s->pid, "hang_ms", m->o.nf_hang_ms));
		if ((m->pidfd[i] >= 0
			     ? syscall(SYS_pidfd_send_signal, m->pidfd[i],
				       SIGKILL, NULL, 0)
			     : kill(s->pid, SIGKILL)) != 0)
			sl_log("cannot kill pid %d: %s", s->pid,
			       strerror(errno));
		m->nfs_hung++;
		m->hb_tsc[i] = now; /* its death follows; not again at once */
	}
}

void
sl_registry_poll(struct sl_mgr *m)
{
	void *msgs[32];
	unsigned int n;

	n = rte_ring_sc_dequeue_burst(m->shm->msg_ring, msgs, RTE_DIM(msgs),
				      NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct sl_msg *msg = msgs[i];

		/* Unanswered until answered here, whatever the NF left. */
		__atomic_store_n(&msg->done, 0, __ATOMIC_RELAXED);
		switch (msg->type) {
		case SL_MSG_REGISTER:
			handle_register(m, msg);
			/* Refused, and the sender is gone already (killed while
			 * it waited, or it gave up): nobody reads the answer.
			 * (Registered, its death frees the slot and this.) */
			if (msg->result != 0 && msg->pid > 0 &&
			    kill(msg->pid, 0) != 0 && errno == ESRCH)
				msg_give_back(m, msg);
			break;
		case SL_MSG_DEREGISTER:
			handle_deregister(m, msg);
			break;
		case SL_MSG_REQUEST:
			handle_request(m, msg);
			break;
		default:
			refuse(m, msg, EINVAL,
			       "unknown message type %u: register (1), "
			       "deregister (2) or request (3)",
			       msg->type);
		}
	}
	answered_sweep(m);
	sl_scale_poll(m); /* after the registrations above */
	watchdog(m);
	qs_poll(m);
}

/* 1 when the process has exited (a zombie counts as exited). */
static int
pid_gone(const struct sl_mgr *m, uint16_t inst)
{
	struct pollfd p = {.fd = m->pidfd[inst], .events = POLLIN};

	if (m->pidfd[inst] < 0)
		return kill(m->shm->nfs[inst].pid, 0) != 0 && errno == ESRCH;
	return poll(&p, 1, 0) > 0;
}

void
sl_stop_all_nfs(struct sl_mgr *m, unsigned int timeout_ms)
{
	struct sl_shm *shm = m->shm;
	uint64_t deadline = rte_rdtsc() + shm->tsc_hz / 1000 * timeout_ms;
	int left;

	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		__atomic_store_n(&shm->nfs[i].stop, 1, __ATOMIC_RELEASE);
	do {
		left = 0;
		sl_registry_poll(m); /* answer deregistrations */
		for (uint16_t i = 0; i < shm->nf_hwm; i++) {
			struct sl_nf_slot *s = &shm->nfs[i];
			uint32_t st = __atomic_load_n(&s->state,
						      __ATOMIC_ACQUIRE);

			if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
				continue;
			if (pid_gone(m, i))
				sl_nf_died(m, i);
			else
				left++;
		}
		if (left > 0)
			usleep(1000);
	} while (left > 0 && rte_rdtsc() < deadline);
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		struct sl_nf_slot *s = &shm->nfs[i];
		uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st == SL_NF_RUNNING || st == SL_NF_STOPPING) {
			sl_log("NF instance %u (pid %d) did not stop within "
			       "%u ms: killing it",
			       i, s->pid, timeout_ms);
			kill(s->pid, SIGKILL);
			sl_nf_died(m, i);
		}
	}
}
