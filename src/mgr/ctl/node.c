/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * JSON-RPC methods of the node itself: status, rx.pause, rx.resume,
 * subscribe (done by rpc.c), shutdown: mgr_node_module, first in main.c's
 * list, so status comes first in the methods status lists.
 */
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mempool.h>

#include "sl_chain.h"
#include "sluiced.h"

static json_t *
rpc_status(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *names = mgr_rpc_names(m), *pools = json_array();
	int n_nfs = 0, n_svc = 0, pool_size = 0, in_use = 0;

	(void)p;
	(void)e;
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		n_nfs += shm->nfs[i].state == SL_NF_RUNNING;
	for (uint16_t s = 0; s < shm->max_services; s++)
		n_svc += shm->services[s].used;
	for (uint32_t i = 0; i < shm->n_pools; i++) {
		const struct rte_mempool *mp = shm->pools[i];
		unsigned int used = rte_mempool_in_use_count(mp);

		pool_size += (int)mp->size;
		in_use += (int)used;
		json_array_append_new(pools, json_pack("{s:s, s:i, s:i, s:i}",
						       "name", mp->name,
						       "socket", mp->socket_id,
						       "size", (int)mp->size,
						       "in_use", (int)used));
	}
	return json_pack(
		"{s:s, s:s, s:i, s:s, s:s, s:f, s:b, s:i, s:i, s:i, s:i, s:i, "
		"s:i, s:i, s:i, s:i, s:i, s:o, s:{s:i, s:i, s:I, s:I, s:o}, s:I, s:I, "
		"s:{s:i, s:i, s:I, s:I, s:I}, s:o}",
		"node", shm->node, "version", SL_VERSION, "pid", (int)getpid(),
		"mode", m->o.mode == SL_MODE_POLL ? "poll" : "shared",
		"handoff", shm->handoff ? "mgr" : "direct", "uptime_s",
		(double)(rte_rdtsc() - m->start_tsc) / (double)shm->tsc_hz,
		"rx_enabled", shm->rx_enabled, "max_nfs", shm->max_nfs,
		"max_services", shm->max_services, "ring_size",
		(int)shm->ring_size, "burst", (int)shm->burst, "rx_burst",
		(int)m->o.rx_burst, "max_hops", (int)shm->max_hops, "n_nfs",
		n_nfs, "n_services", n_svc, "n_ports", shm->n_ports,
		"io_threads", (int)shm->n_io, "methods", names, "mbufs", "size",
		pool_size, "in_use", in_use, "leaked",
		(json_int_t)m->mbufs_leaked, "in_doubt",
		(json_int_t)m->mbufs_in_doubt, "pools", pools, "rings_unstuck",
		(json_int_t)m->rings_unstuck, "nfs_hung",
		(json_int_t)m->nfs_hung, "messages", "size",
		(int)shm->msg_pool->size, "free",
		(int)rte_mempool_avail_count(shm->msg_pool), "reclaimed",
		(json_int_t)m->msgs_reclaimed, "refused",
		(json_int_t)m->msgs_refused, "undelivered",
		(json_int_t)m->msgs_undelivered, "control",
		mgr_control_json(m));
}

static json_t *
rpc_rx_pause(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	__atomic_store_n(&m->shm->rx_enabled, 0, __ATOMIC_SEQ_CST);
	m->rx_started = 1; /* paused stays paused until rx.resume */
	/* Answer once no port is read any more: a caller that then waits
	 * for the chain to empty must not see a last burst come in after
	 * it has looked (the launcher's stop, whose summary says in = out
	 * + dropped). */
	if (mgr_io_rx_settle(m->shm) != 0)
		mgr_log(m, "rx.pause: the RX thread did not come round within "
			   "100 ms; a burst it was reading may still come in");
	mgr_log(m, "ports paused: not reading them");
	return json_pack("{s:b}", "rx_enabled", 0);
}

static json_t *
rpc_rx_resume(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	if (!mgr_chain_complete(m))
		return mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"the chain is not complete (a service on it has "
			"no NF): start the NFs or chain.set first");
	__atomic_store_n(&m->shm->rx_enabled, 1, __ATOMIC_RELEASE);
	return json_pack("{s:b}", "rx_enabled", 1);
}

static json_t *
rpc_shutdown(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	m->quit = 1;
	return json_object();
}

static const struct sl_rpc_method sl_node_methods[] = {
	{"status", rpc_status, 0},       {"rx.pause", rpc_rx_pause, 0},
	{"rx.resume", rpc_rx_resume, 0}, {"subscribe", NULL, SL_RPC_SUBSCRIBE},
	{"shutdown", rpc_shutdown, 0},   {NULL, NULL, 0},
};

/* The node's own methods: status, rx.*, subscribe, shutdown. */
const struct mgr_module mgr_node_module = {
	.name = "node",
	.methods = sl_node_methods,
};
