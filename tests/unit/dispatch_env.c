/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of verdict validation and hand-off (src/common/sl_dispatch.c)
 * on a real EAL: this process is a DPDK primary without hugepages, PCI,
 * shared files or telemetry. Packets are real mbufs from a real pktmbuf
 * pool with the registered sluice metadata field; the NF rx rings are real
 * rte_rings; struct sl_shm is a fake in heap memory.
 *
 * Fake node used by every test:
 *   services: 0 "fw"    live {0}          (flow-sticky)
 *             1 "mon"   live {1, 2}       (flow-sticky; RR or shortest queue
 *                                          in one test each)
 *             2 "empty" used, no live instance
 *             3         not used
 *   instances 0..2 RUNNING (mode poll), 3 free; rx rings hold RING_CAP
 *   ports:    0 used + started, 1 used + stopped, 2.. unused
 *   chain:    first = fw; next[fw] = mon; next[mon] = port 0;
 *             next[empty] = drop; next[3] = none
 * The dispatching context is instance 0 (owner tag 1).
 */
#include "dispatch_env.h"
#include "eal_env.h"

struct rte_mempool *g_pool;
int g_off = -1;
unsigned g_pool_full;
unsigned g_rings;
struct port_log g_port;

/* ---- helpers -------------------------------------------------------- */

struct sl_pkt_meta *
meta(struct rte_mbuf *m)
{
	return sl_meta(m, g_off);
}

void *
zalloc_aligned(size_t size)
{
	size_t sz = RTE_ALIGN_CEIL(size, SL_CACHE_LINE);
	void *p = aligned_alloc(SL_CACHE_LINE, sz);

	assert_non_null(p);
	memset(p, 0, sz);
	return p;
}

/* A packet of len bytes with the given metadata, held by SELF_OWNER. */
struct rte_mbuf *
mk(sl_verdict_t v, uint16_t service, uint32_t hash, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
	struct sl_pkt_meta *mt;

	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, len));
	mt = meta(m);
	mt->verdict = v;
	mt->flow_hash = hash;
	mt->service = service;
	mt->owner = SELF_OWNER;
	mt->in_port = IN_PORT;
	mt->flags = FLAGS;
	mt->flow = SL_FLOW_NONE;
	return m;
}

void
check_meta(struct rte_mbuf *m, sl_verdict_t v, uint16_t service, uint16_t owner,
	   uint32_t hash)
{
	struct sl_pkt_meta *mt = meta(m);

	assert_int_equal(mt->verdict, v);
	assert_int_equal(mt->service, service);
	assert_int_equal(mt->owner, owner);
	assert_int_equal(mt->flow_hash, hash);
	assert_int_equal(mt->in_port, IN_PORT);
	/* Dispatch stamps the graph version on packets that had none, and
	 * counts hand-offs to NFs in the hop bits (hop_limit_* tests). */
	assert_int_equal(mt->flags & ~(SL_META_GRAPH | SL_META_PORT) &
				 (SL_META_HOP - 1),
			 FLAGS);
}

unsigned
hops(struct rte_mbuf *m)
{
	return meta(m)->flags >> SL_META_HOPS_SHIFT;
}

struct rte_ring *
rx_of(struct env *e, uint16_t inst)
{
	return e->shm->nfs[inst].rx;
}

/* Dequeues up to n packets from instance inst's rx ring. */
unsigned
take_rx(struct env *e, uint16_t inst, struct rte_mbuf **pkts, unsigned n)
{
	return rte_ring_dequeue_burst(rx_of(e, inst), (void **)pkts, n, NULL);
}

/* Fills instance inst's rx ring with dummies, leaving room for k. */
char g_dummy[RING_CAP];

int
is_dummy(const void *p)
{
	return (const char *)p >= g_dummy &&
	       (const char *)p < g_dummy + RING_CAP;
}

void
leave_room(struct env *e, uint16_t inst, unsigned k)
{
	unsigned fill = rte_ring_free_count(rx_of(e, inst)) - k;
	void *objs[RING_CAP];

	for (unsigned i = 0; i < fill; i++)
		objs[i] = &g_dummy[i];
	assert_int_equal(rte_ring_enqueue_bulk(rx_of(e, inst), objs, fill,
					       NULL),
			 fill);
	assert_int_equal(rte_ring_free_count(rx_of(e, inst)), k);
}

/* Dequeues n dummies from the head of instance inst's rx ring. */
void
drain_dummies(struct env *e, uint16_t inst, unsigned n)
{
	void *objs[RING_CAP];

	assert_int_equal(rte_ring_dequeue_bulk(rx_of(e, inst), objs, n, NULL),
			 n);
	for (unsigned i = 0; i < n; i++)
		assert_true(is_dummy(objs[i]));
}

uint64_t
drops_total(const struct env *e)
{
	uint64_t t = 0;

	for (int r = 0; r < SL_DROP_MAX; r++)
		t += e->stats.drop[r];
	return t;
}

/* Exactly n drops, all with reason r. */
void
check_drops(const struct env *e, enum sl_drop_reason r, uint64_t n)
{
	assert_int_equal(e->stats.drop[r], n);
	assert_int_equal(drops_total(e), n);
}

void
check_pool_full(void)
{
	assert_int_equal(rte_mempool_avail_count(g_pool), g_pool_full);
}

uint16_t
port_out(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	 uint16_t n)
{
	uint16_t k = n < g_port.take ? n : g_port.take;

	assert_ptr_equal(d, g_port.d);
	assert_true(g_port.calls < PORT_LOG);
	g_port.port[g_port.calls] = port;
	g_port.run[g_port.calls] = n;
	g_port.calls++;
	/* Dispatch leaves the tag to port_out (a driver needs 0). */
	for (uint16_t i = 0; i < n; i++)
		assert_int_equal(meta(pkts[i])->owner, SELF_OWNER);
	for (uint16_t i = 0; i < k; i++) {
		assert_true(g_port.n_got < PORT_LOG);
		g_port.got[g_port.n_got++] = pkts[i];
	}
	return k;
}

void
free_port_got(void)
{
	rte_pktmbuf_free_bulk(g_port.got, g_port.n_got);
	g_port.n_got = 0;
}

/* ---- fixtures ------------------------------------------------------- */

/* EAL as eal_env.h starts it; group_teardown removes the runtime
 * directory EAL creates. */
char g_runtime_dir[PATH_MAX];

int
group_setup(void **state)
{
	(void)state;
	g_off = eal_env_start("test_dispatch", "dispatch", "128", g_runtime_dir,
			      sizeof(g_runtime_dir));
	if (g_off < 0)
		return -1;
	/* No per-lcore cache: rte_mempool_avail_count() is exact. */
	g_pool = rte_pktmbuf_pool_create("sl_ut_pkts", POOL_SIZE, 0, 0,
					 RTE_MBUF_DEFAULT_BUF_SIZE,
					 SOCKET_ID_ANY);
	if (g_pool == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	g_pool_full = rte_mempool_avail_count(g_pool);
	return g_pool_full == POOL_SIZE ? 0 : -1;
}

int
group_teardown(void **state)
{
	int rc;

	(void)state;
	rte_mempool_free(g_pool);
	g_pool = NULL;
	rc = rte_eal_cleanup();
	if (g_runtime_dir[0] != '\0' && rmdir(g_runtime_dir) != 0)
		fprintf(stderr, "rmdir %s: %s\n", g_runtime_dir,
			strerror(errno));
	return rc == 0 ? 0 : -1;
}

void
set_live(struct env *e, uint16_t s, int n, const uint16_t *ids)
{
	struct sl_service *svc = &e->shm->services[s];

	for (int k = 0; k < n; k++)
		svc->live[k] = ids[k];
	svc->n_live = (uint16_t)n;
	sl_lb_rebuild(svc);
}

int
setup(void **state)
{
	static const uint16_t fw[] = {0}, mon[] = {1, 2};
	struct env *e = zalloc_aligned(sizeof(*e));
	struct sl_shm *shm = zalloc_aligned(sizeof(*shm));

	e->shm = shm;
	shm->magic = SL_SHM_MAGIC;
	shm->version = SL_SHM_VERSION;
	shm->max_nfs = MAX_NFS;
	shm->max_services = MAX_SVC;
	shm->ring_size = RING_CAP;
	shm->burst = SL_BURST;
	shm->backpressure_cycles = BP_CYCLES;
	shm->max_hops = SL_MAX_HOPS;
	shm->dynfield_offset = g_off;
	shm->pktmbuf_pool = g_pool;
	shm->nfs = zalloc_aligned(sizeof(struct sl_nf_slot) * MAX_NFS);
	shm->services = zalloc_aligned(sizeof(struct sl_service) * MAX_SVC);
	shm->nf_hwm = 3;

	for (uint16_t i = 0; i < MAX_NFS; i++) {
		struct sl_nf_slot *s = &shm->nfs[i];
		char name[RTE_RING_NAMESIZE];

		s->instance = i;
		s->mode = SL_MODE_POLL;
		s->state = i < 3 ? SL_NF_RUNNING : SL_NF_FREE;
		s->service = i == 0 ? 0 : 1;
		/* unique: a failed test may leave its rings behind */
		snprintf(name, sizeof(name), "sl_ut_rx%u_%u", i, g_rings++);
		s->rx = rte_ring_create(name, RING_CAP, SOCKET_ID_ANY,
					RING_F_SC_DEQ | RING_F_EXACT_SZ);
		assert_non_null(s->rx);
		assert_int_equal(rte_ring_get_capacity(s->rx), RING_CAP);
	}
	for (uint16_t s = 0; s < MAX_SVC; s++)
		shm->services[s].live = e->live[s];
	snprintf(shm->services[0].name, SL_NAME_LEN, "fw");
	snprintf(shm->services[1].name, SL_NAME_LEN, "mon");
	snprintf(shm->services[2].name, SL_NAME_LEN, "empty");
	for (uint16_t s = 0; s < 3; s++)
		shm->services[s].used = 1;
	set_live(e, 0, 1, fw);
	set_live(e, 1, 2, mon);

	shm->ports[0].used = 1;
	shm->ports[0].started = 1;
	shm->ports[1].used = 1;
	shm->n_ports = 2;

	e->next[0] = SL_HOP_SERVICE(1);
	e->next[1] = SL_HOP_PORT(0);
	e->next[2] = SL_HOP_DROP;
	e->next[3] = SL_HOP_NONE;
	e->chain.version = 1;
	e->chain.tag = 1;
	e->chain.open = 1;
	e->chain.first = SL_HOP_SERVICE(0);
	e->chain.next = e->next;
	e->chain.edge_off = e->edge_off;
	e->chain.edge_n = e->edge_n;
	e->graph_cur[0] = 0;
	shm->graph_cur = e->graph_cur;
	shm->max_graphs = 1;
	shm->gtab[0] = &e->chain;

	memset(&g_port, 0, sizeof(g_port));
	g_port.take = UINT16_MAX;
	g_port.d = &e->d;
	assert_int_equal(sl_dispatch_init(&e->d, shm, SELF_OWNER, &e->stats,
					  e->stats.drop, port_out, NULL),
			 0);
	assert_int_equal(e->d.bp_cycles, BP_CYCLES);
	assert_int_equal(e->d.meta_off, g_off);
	*state = e;
	return 0;
}

int
teardown(void **state)
{
	struct env *e = *state;
	struct rte_mbuf *pkts[RING_CAP];

	free_port_got();
	sl_dispatch_drop_pending(&e->d, SL_DROP_NF_LOST);
	for (uint16_t i = 0; i < MAX_NFS; i++) {
		unsigned n;

		/* Tests drain their dummies; skip any a failed test left. */
		while ((n = take_rx(e, i, pkts, RING_CAP)) > 0)
			for (unsigned k = 0; k < n; k++)
				if (!is_dummy(pkts[k]))
					rte_pktmbuf_free(pkts[k]);
		rte_ring_free(e->shm->nfs[i].rx);
	}
	sl_dispatch_fini(&e->d);
	assert_null(e->d.rr);
	free(e->shm->nfs);
	free(e->shm->services);
	free(e->shm);
	free(e);
	/* Every test gives back every packet. A test that failed half-way
	 * may not have: report it once, without failing the next tests. */
	{
		unsigned avail = rte_mempool_avail_count(g_pool);

		if (avail != g_pool_full) {
			unsigned want = g_pool_full;

			g_pool_full = avail;
			fail_msg("%u packet(s) not returned to the pool",
				 want - avail);
		}
	}
	return 0;
}
