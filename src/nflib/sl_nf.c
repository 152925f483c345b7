/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice: runs an NF as a DPDK secondary process of sluiced
 * (sl_nf_main), and the accessors the NF API gives an NF. The parts are
 * listed in sl_nf_int.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mempool.h>

#include "sl_graph.h"
#include "sl_nf_int.h"
#include "sl_nf_opts.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

/*
 * Offset of struct sl_pkt_meta in an mbuf, for the packet accessors below:
 * they take only the mbuf (sl_pkt_verdict(m)), so it cannot come from an
 * NF handle. Process-wide (one NF process attaches to one sluiced, whose
 * dynfield it is), written once by nfi_attach() before any packet, read
 * per packet; -1 until then. The loop reads struct sl_nf's meta_off.
 */
static int g_meta_off = -1;

void
nfi_set_pkt_meta_off(int off)
{
	g_meta_off = off;
}

static inline struct sl_pkt_meta *
meta_of(const struct rte_mbuf *m)
{
	return sl_meta(m, g_meta_off);
}

void
sl_pkt_set_verdict(struct rte_mbuf *m, sl_verdict_t v)
{
	meta_of(m)->verdict = v;
}

sl_verdict_t
sl_pkt_verdict(const struct rte_mbuf *m)
{
	return meta_of(m)->verdict;
}

uint16_t
sl_pkt_in_port(const struct rte_mbuf *m)
{
	return meta_of(m)->in_port;
}

uint32_t
sl_pkt_flow_hash(const struct rte_mbuf *m)
{
	return sl_meta_flow_hash(m, meta_of(m));
}

int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	for (uint16_t s = 0; s < nf->shm->max_services; s++) {
		const struct sl_service *svc = &nf->shm->services[s];

		if (__atomic_load_n(&svc->used, __ATOMIC_ACQUIRE) &&
		    strcmp(svc->name, name) == 0)
			return s;
	}
	return -1; /* none (NF API) */
}

int
sl_service_id_wait(const struct sl_nf *nf, const char *name,
		   unsigned int timeout_ms)
{
	uint64_t deadline;
	int s = sl_service_id(nf, name);

	if (s >= 0 || timeout_ms == 0)
		return s;
	fprintf(stderr,
		"%s: service '%s' is not known to sluiced yet: waiting "
		"up to %u ms for an NF of it to register\n",
		nf->prog, name, timeout_ms);
	deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
	while ((s = sl_service_id(nf, name)) < 0 && rte_rdtsc() < deadline &&
	       !nfi_stop_asked() && !nfi_mgr_gone(nf))
		rte_delay_us_sleep(10000);
	return s;
}

int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	for (uint16_t p = 0; p < SL_MAX_PORTS; p++)
		if (nf->shm->ports[p].used &&
		    strcmp(nf->shm->ports[p].name, name) == 0)
			return p;
	return -1; /* none (NF API) */
}

uint16_t
sl_nf_instance(const struct sl_nf *nf)
{
	return nf->instance;
}

uint16_t
sl_nf_service(const struct sl_nf *nf)
{
	return nf->service;
}

void *
sl_nf_priv(const struct sl_nf *nf)
{
	return nf->priv;
}

void
sl_nf_set_priv(struct sl_nf *nf, void *priv)
{
	nf->priv = priv;
}

struct rte_mempool *
sl_nf_pktmbuf_pool(const struct sl_nf *nf)
{
	return nf->shm->pktmbuf_pool;
}

int
sl_nf_chain_ready(const struct sl_nf *nf)
{
	uint16_t gv = sl_graph_current(nf->shm, 0);
	const struct sl_graph *g =
		gv == SL_GRAPH_NONE ? NULL : sl_graph_of(nf->shm, gv);

	if (g == NULL || g->next[nf->service] == SL_HOP_NONE)
		return 0;
	for (uint16_t i = 0; i < g->n_nodes; i++)
		if (__atomic_load_n(&nf->shm->services[g->nodes[i]].n_live,
				    __ATOMIC_ACQUIRE) == 0)
			return 0;
	return 1;
}

void
sl_nf_stop(struct sl_nf *nf)
{
	nf->stop = 1;
}

uint64_t
sl_now_ns(void)
{
	return (uint64_t)((double)rte_rdtsc() * 1e9 / (double)rte_get_tsc_hz());
}

/*
 * Sets up the hand-off once registered (dispatch, our mempool
 * cache if sluiced gave us one). 0, or ENOMEM after saying so.
 */
static int
nf_start(struct sl_nf *nf)
{
	if (sl_dispatch_init(&nf->disp, nf->shm, (uint16_t)(nf->instance + 1),
			     &nf->slot->nf, nf->slot->nf.drop, nfi_port_out,
			     nf) != 0) {
		fprintf(stderr, "%s: out of memory\n", nf->prog);
		return ENOMEM;
	}
	nf->disp.all_out = nf->shm->handoff != 0;
	nfi_test_kill_at(nf);
	nf->disp.edge = sl_edge_row_nf(nf->shm, nf->instance, 0);
	/* Our own mempool cache, if sluiced gave us one: frees and
	 * allocations then stay off the pool's shared ring most of the time. */
	if (nf->slot->cache_lcore != SL_CACHE_NONE) {
		RTE_PER_LCORE(_lcore_id) = nf->slot->cache_lcore;
		nf->disp.pool_op = &nf->slot->pool_op;
	}
	return 0;
}

/* Hands our cached packets back to the pool (sluiced would do it after we
 * exit; doing it now keeps the pool's count exact) and frees the hand-off. */
static void
nf_end(struct sl_nf *nf)
{
	if (nf->disp.pool_op != NULL) {
		sl_pool_op_begin(nf->disp.pool_op);
		for (uint32_t i = 0; i < nf->shm->n_pools; i++) {
			struct rte_mempool *mp = nf->shm->pools[i];

			rte_mempool_cache_flush(
				rte_mempool_default_cache(mp, rte_lcore_id()),
				mp);
		}
		sl_pool_op_end(nf->disp.pool_op);
		RTE_PER_LCORE(_lcore_id) = LCORE_ID_ANY;
	}
	sl_dispatch_fini(&nf->disp);
}

/*
 * The private context (ops->priv_size bytes, zeroed) with the options of
 * ops->opts stored in it, then init. 0, or a positive errno after saying
 * what was wrong (nothing is then left allocated).
 */
static int
nf_init(struct sl_nf *nf, struct nf_args *a)
{
	const struct sl_nf_ops *ops = nf->ops;
	int rc = 0;

	if (ops->priv_size > 0) {
		nf->priv = nf->own_priv = calloc(1, ops->priv_size);
		if (nf->priv == NULL) {
			fprintf(stderr, "%s: out of memory\n", nf->prog);
			return ENOMEM;
		}
	}
	if (ops->opts != NULL)
		rc = nfo_parse(nf, ops, a->nf_argc, a->nf_argv);
	if (rc == 0 && ops->init != NULL) {
		optind = 1;
		rc = ops->init(nf, a->nf_argc, a->nf_argv);
	}
	if (rc != 0) {
		free(nf->own_priv);
		nf->own_priv = nf->priv = NULL;
	}
	return rc;
}

/*
 * Calls init, runs the loop until a stop, deregisters, serves what is left
 * and calls fini. 0, or init's positive errno when it failed (said so;
 * deregistered).
 */
static int
nf_serve(struct sl_nf *nf, struct nf_args *a)
{
	const struct sl_nf_ops *ops = nf->ops;
	int rc;

	/* init may take its time (compiling patterns, loading tables) and
	 * reads no routing state: neither a grace period nor the hang
	 * watchdog waits for it. nfi_run() comes online. */
	__atomic_store_n(&nf->slot->sleeping, 1, __ATOMIC_RELEASE);
	rc = nf_init(nf, a);
	if (rc != 0) {
		fprintf(stderr, "%s: initialisation failed (%s)\n", nf->prog,
			strerror(rc));
		nfi_deregister(nf);
		return rc;
	}
	nfi_run(nf);
	nfi_deregister(nf);
	nfi_drain(nf);
	/* From here on this NF reads no shared routing state: tell sluiced's
	 * quiescence checks not to wait for it (it may take a while to exit). */
	__atomic_store_n(&nf->slot->sleeping, 1, __ATOMIC_RELEASE);
	if (ops->fini != NULL)
		ops->fini(nf);
	free(nf->own_priv);
	return 0;
}

int
sl_nf_main(const struct sl_nf_ops *ops, int argc, char **argv)
{
	static struct nf_args a;
	struct sl_nf nf;
	int rc;

	memset(&nf, 0, sizeof(nf));
	nf.start_tsc = rte_rdtsc();
	/* Logs go to files: keep each line whole even if the NF is killed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	nf.ops = ops;
	nf.prog = argv[0];
	if (ops == NULL || ops->name == NULL ||
	    (ops->process == NULL) == (ops->process_pkt == NULL)) {
		fprintf(stderr,
			"%s: bad sl_nf_ops: set name and exactly one of "
			"process and process_pkt\n",
			argv[0]);
		return 1;
	}
	if (nfo_check(ops, argv[0]) != 0)
		return 1;
	/* The internal calls answer 0 or a positive errno, ECANCELED when
	 * nothing failed but nothing is to be done (the help was printed, a
	 * signal stopped the attach): exit status 0 for that, 1 for an
	 * error. */
	rc = nfi_parse_args(&a, ops, argc, argv);
	if (rc != 0)
		return rc == ECANCELED ? 0 : 1;
	snprintf(nf.node, sizeof(nf.node), "%s", a.node);
	nf.mode = a.mode;
	nf.core = a.core;

	rc = nfi_eal_attach(&nf, &a);
	if (rc != 0)
		return rc == ECANCELED ? 0 : 1;
	if (nfi_attach(&nf) != 0)
		return 1;
	if (nfi_stop_asked()) {
		fprintf(stderr, "%s: stopped by a signal while starting\n",
			argv[0]);
		return 0;
	}
	if (nfi_register(&nf, &a) != 0)
		return 1;
	rc = nf_start(&nf);
	if (rc == 0)
		rc = nf_serve(&nf, &a);
	nf_end(&nf);
	/*
	 * No rte_eal_cleanup() here: in a secondary it takes the shared
	 * memory-hotplug lock for writing to unmap memory, and at shutdown it
	 * was seen to spin on that lock for ever. The process's mappings go
	 * with it, and sluiced removes the runtime files when it exits.
	 */
	fflush(NULL);
	return rc != 0;
}
