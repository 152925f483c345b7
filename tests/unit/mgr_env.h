/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The environment of sluiced's unit tests (tests/unit/test_mgr_*.c),
 * which link the static library sluiced_mgr: what main.c gives the
 * library (mgr_log, mgr_pool_for_socket), EAL started like the other
 * unit tests (no hugepages, PCI, shared files or telemetry), a fake
 * struct sl_shm in heap memory, a struct sl_mgr with sluiced's defaults
 * for the flow module, and packets from a real pool with the registered
 * sluice metadata field.
 *
 * Include once per test program, after <cmocka.h> and pkt_build.h.
 *
 * Fake node: MGR_NFS instance slots (slot 0 RUNNING, its heartbeat the
 * test's to move), MGR_SVCS services ("a", "b" used), two ports ("p0",
 * "p1"), one I/O thread; graph 0 ("default") is the chain a -> b -> p0
 * in gtab slot 0. The control and I/O threads wait idle (ctl_idle,
 * io_sleeping), so grace periods wait only for NF slot 0 and one
 * millisecond.
 */
#ifndef SL_TEST_MGR_ENV_H
#define SL_TEST_MGR_ENV_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_ring.h>

#include "eal_env.h"
#include "sluiced.h"

#define MGR_NFS 4
#define MGR_SVCS 4
#define MGR_GRAPHS 8
#define MGR_POOL 1023

/* ---- what main.c defines for the library ---------------------------- */

/* The tests' one sluiced state (main.c allocates sluiced's). */
static struct sl_mgr g_mgr;

void
mgr_log(const struct sl_mgr *m, const char *fmt, ...)
{
	va_list ap;

	(void)m;
	va_start(ap, fmt);
	fprintf(stderr, "sluiced[test]: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

struct rte_mempool *
mgr_pool_for_socket(struct sl_mgr *m, int socket, char *err, size_t errlen)
{
	(void)socket;
	if (m->shm->pktmbuf_pool == NULL)
		snprintf(err, errlen, "no pool in the test");
	return m->shm->pktmbuf_pool;
}

/* ---- EAL ------------------------------------------------------------ */

static struct rte_mempool *g_env_pool;
static int g_env_off = -1;
static char g_env_runtime_dir[PATH_MAX];

/* EAL as eal_env.h starts it, with a packet pool for the tests. */
static int
env_eal_setup(const char *name)
{
	g_env_off = eal_env_start(name, name, "256", g_env_runtime_dir,
				  sizeof(g_env_runtime_dir));
	if (g_env_off < 0)
		return -1;
	g_env_pool = rte_pktmbuf_pool_create("sl_ut_pkts", MGR_POOL, 0, 0,
					     RTE_MBUF_DEFAULT_BUF_SIZE,
					     SOCKET_ID_ANY);
	if (g_env_pool == NULL) {
		fprintf(stderr, "pool: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

struct env;
static void env_free(struct env *e);
static struct env *g_env_live;

static int
env_eal_teardown(void **state)
{
	int rc;

	(void)state;
	if (g_env_live != NULL)
		env_free(g_env_live);
	rte_mempool_free(g_env_pool);
	g_env_pool = NULL;
	rc = rte_eal_cleanup();
	if (g_env_runtime_dir[0] != '\0' && rmdir(g_env_runtime_dir) != 0)
		fprintf(stderr, "rmdir %s: %s\n", g_env_runtime_dir,
			strerror(errno));
	return rc == 0 ? 0 : -1;
}

/* ---- the fake node -------------------------------------------------- */

struct env {
	struct sl_mgr *m;
	struct sl_shm *shm;
	struct sl_graph chain; /* graph 0: a -> b -> port 0 */
	sl_hop_t next[MGR_SVCS];
	uint32_t edge_off[MGR_SVCS];
	uint16_t edge_n[MGR_SVCS];
	uint16_t nodes[2];
};

static void *
env_zalloc(size_t size)
{
	size_t sz = RTE_ALIGN_CEIL(size, RTE_CACHE_LINE_SIZE);
	void *p = aligned_alloc(RTE_CACHE_LINE_SIZE, sz);

	assert_non_null(p);
	memset(p, 0, sz);
	return p;
}

/* sluiced's defaults for the flow module, capacity and timeout given. */
static void
env_opts(struct sl_mgr_opts *o, uint32_t capacity, uint32_t timeout_ms)
{
	snprintf(o->name, sizeof(o->name), "ut");
	o->max_nfs = MGR_NFS;
	o->max_services = MGR_SVCS;
	o->flow_lookup = SL_LOOKUP_CACHED;
	o->flow_capacity = capacity;
	/* a quarter, as sluiced; rte_hash makes no table under 8 */
	o->flow_capacity6 = capacity / 4 < 8 ? 8 : capacity / 4;
	o->flow_timeout_ms = timeout_ms;
	o->flow_pins = 4;
	o->flow_ovr = 4;
	o->max_graphs = MGR_GRAPHS;
	o->max_rules = 64;
	o->max_wild = 8;
	o->n_ports = 2;
}

/* The chain a -> b -> port 0 as graph 0, in gtab slot 0. */
static void
env_chain(struct env *e)
{
	struct sl_graph *g = &e->chain;

	for (uint16_t s = 0; s < MGR_SVCS; s++)
		e->next[s] = SL_HOP_NONE;
	e->next[0] = SL_HOP_SERVICE(1);
	e->next[1] = SL_HOP_PORT(0);
	e->nodes[0] = 0;
	e->nodes[1] = 1;
	g->open = 1;
	g->n_nodes = 2;
	g->first = SL_HOP_SERVICE(0);
	snprintf(g->name, sizeof(g->name), "default");
	g->next = e->next;
	g->edge_off = e->edge_off;
	g->edge_n = e->edge_n;
	g->nodes = e->nodes;
	e->shm->gtab[0] = g;
	e->shm->graph_cur[0] = 0;
}

/* g_env_live: the node of the test running, one at a time (the tables'
 * names are fixed); a test that failed before env_free left it there. */

static struct env *
env_new(uint32_t capacity, uint32_t timeout_ms)
{
	struct env *e;
	struct sl_mgr *m = &g_mgr;
	struct sl_shm *shm;

	if (g_env_live != NULL)
		env_free(g_env_live);
	e = env_zalloc(sizeof(*e));
	shm = env_zalloc(sizeof(*shm));
	g_env_live = e;

	memset(m, 0, sizeof(*m));
	e->m = m;
	e->shm = shm;
	m->shm = shm;
	env_opts(&m->o, capacity, timeout_ms);
	m->start_tsc = rte_rdtsc();
	shm->magic = SL_SHM_MAGIC;
	shm->version = SL_SHM_VERSION;
	shm->max_nfs = MGR_NFS;
	shm->max_services = MGR_SVCS;
	shm->burst = SL_BURST;
	shm->dynfield_offset = g_env_off;
	shm->pktmbuf_pool = g_env_pool;
	shm->tsc_hz = rte_get_tsc_hz();
	shm->ms_hz = shm->tsc_hz / 1000;
	shm->n_io = 1;
	shm->ctl_idle = 1;
	shm->io_sleeping[0] = 1;
	shm->nfs = env_zalloc(sizeof(struct sl_nf_slot) * MGR_NFS);
	shm->nfs[0].state = SL_NF_RUNNING;
	shm->nf_hwm = 1;
	shm->services = env_zalloc(sizeof(struct sl_service) * MGR_SVCS);
	snprintf(shm->services[0].name, SL_NAME_LEN, "a");
	snprintf(shm->services[1].name, SL_NAME_LEN, "b");
	shm->services[0].used = 1;
	shm->services[1].used = 1;
	snprintf(shm->ports[0].name, sizeof(shm->ports[0].name), "p0");
	snprintf(shm->ports[1].name, sizeof(shm->ports[1].name), "p1");
	shm->max_graphs = MGR_GRAPHS;
	shm->graph_cur = env_zalloc(sizeof(uint16_t) * MGR_GRAPHS);
	for (uint16_t g = 0; g < MGR_GRAPHS; g++)
		shm->graph_cur[g] = SL_GRAPH_NONE;
	env_chain(e);
	/* main.c's list order: rules, requests, then flow */
	assert_int_equal(mgr_rules_init(m), 0);
	assert_int_equal(mgr_requests_init(m), 0);
	assert_int_equal(mgr_flow_init(m), 0);
	return e;
}

/* Lets every grace period started so far pass: NF 0 goes round its loop
 * and a millisecond goes by. */
static void
env_grace_pass(struct env *e)
{
	__atomic_fetch_add(&e->shm->nfs[0].heartbeat, 1, __ATOMIC_RELEASE);
	rte_delay_us_sleep(1500);
}

static void
env_free(struct env *e)
{
	struct sl_shm *shm = e->shm;
	struct sl_flow_table *ft = &shm->flow;

	mgr_rules_builder_stop(e->m->rules);
	env_grace_pass(e);
	sl_grace_drain(&e->m->qs, e->m);
	mgr_flow_rx_fini(e->m->flow);
	if (e->m->flow != NULL)
		rte_ring_free(e->m->flow->del_ring);
	mgr_rules_close(e->m);
	mgr_requests_close(e->m);
	mgr_flow_close(e->m);
	/* The tables go with EAL in sluiced; here each test makes its own. */
	rte_hash_free(ft->hash);
	rte_hash_free(ft->hash6);
	rte_free(ft->entries);
	free(shm->graph_cur);
	free(shm->services);
	free(shm->nfs);
	free(shm);
	free(e);
	g_env_live = NULL;
}

/* A UDP packet of flow (src:sport > dst:dport) that came in on port 0. */
static struct rte_mbuf *
env_udp(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g_env_pool);
	struct frame f;
	struct sl_pkt_meta *mt;
	char *d;

	assert_non_null(m);
	frame_ip4(&f, IPPROTO_UDP, src, sport, dst, dport, 16);
	d = rte_pktmbuf_append(m, (uint16_t)f.len);
	assert_non_null(d);
	memcpy(d, f.b, f.len);
	mt = sl_meta(m, g_env_off);
	memset(mt, 0, sizeof(*mt));
	mt->in_port = 0;
	return m;
}

static struct sl_pkt_meta *
env_meta(struct rte_mbuf *m)
{
	return sl_meta(m, g_env_off);
}

#endif /* SL_TEST_MGR_ENV_H */
