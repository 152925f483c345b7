/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry module (mgr_registry_module) and its JSON-RPC methods:
 * nf.list, nf.stop, port.list, service.list, lb.set.
 */
#include <errno.h>
#include <string.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sluiced.h"

static const char *const lb_names[SL_LB_MAX] = {"flow", "rr", "queue"};

static json_t *
ring_json(const struct rte_ring *r)
{
	if (r == NULL)
		return json_pack("{s:i, s:i}", "count", 0, "size", 0);
	return json_pack("{s:I, s:I}", "count", (json_int_t)rte_ring_count(r),
			 "size", (json_int_t)rte_ring_get_capacity(r));
}

/* Free buffers an NF's cache holds now, over every pool (a racy read). */
static unsigned int
cache_len(const struct sl_shm *shm, uint16_t lcore)
{
	unsigned int n = 0;

	for (uint32_t i = 0; i < shm->n_pools; i++)
		n += rte_mempool_default_cache(shm->pools[i], lcore)->len;
	return n;
}

/* Looks up a service given by name or id in params[key]. */
int
mgr_rpc_param_service(struct sl_mgr *m, json_t *params, const char *key,
		      struct sl_rpc_err *e)
{
	json_t *v = json_object_get(params, key);
	int s;

	if (json_is_integer(v)) {
		s = (int)json_integer_value(v);
		if (s >= 0 && s < m->shm->max_services &&
		    m->shm->services[s].used)
			return s;
	} else if (json_is_string(v)) {
		char dummy[8];

		if (mgr_service_get(m, json_string_value(v), 0, &s, dummy,
				    sizeof(dummy)) == 0)
			return s;
	} else {
		mgr_rpc_fail(e, SL_RPC_E_PARAMS,
			     "param '%s' (service name or id) is missing", key);
		return -1; /* none: e says why */
	}
	mgr_rpc_fail(e, SL_RPC_E_FAILED,
		     "no service %s; service.list shows the services",
		     json_is_string(v) ? json_string_value(v) : "with that id");
	return -1; /* none: e says why */
}

static json_t *
rpc_nf_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();

	(void)p;
	(void)e;
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->state == SL_NF_FREE)
			continue;
		json_array_append_new(
			a,
			json_pack("{s:i, s:s, s:i, s:s, s:i, s:s, s:s, s:i, "
				  "s:o, s:o}",
				  "instance", i, "service",
				  shm->services[s->service].name, "service_id",
				  s->service, "prog", s->prog, "pid", s->pid,
				  "state", mgr_nf_state_name(s->state), "mode",
				  s->mode == SL_MODE_POLL ? "poll" : "shared",
				  "access", s->access, "rx_ring",
				  ring_json(s->rx), "tx_ring",
				  ring_json(s->tx)));
		uint64_t fp =
			__atomic_load_n(&s->first_pkt_tsc, __ATOMIC_ACQUIRE);

		json_object_set_new(
			json_array_get(a, json_array_size(a) - 1),
			"start_to_first_pkt_ms",
			fp == 0 || fp < s->proc_start_tsc
				? json_null()
				: json_real((double)(fp - s->proc_start_tsc) *
					    1e3 / (double)shm->tsc_hz));
		json_object_set_new(json_array_get(a, json_array_size(a) - 1),
				    "start_to_register_ms",
				    json_real((double)(s->started_tsc -
						       s->proc_start_tsc) *
					      1e3 / (double)shm->tsc_hz));
		/* Its own mempool cache: the lcore id and how many free
		 * buffers it holds now (a racy read: a gauge). */
		json_object_set_new(
			json_array_get(a, json_array_size(a) - 1), "mbuf_cache",
			s->cache_lcore == SL_CACHE_NONE
				? json_null()
				: json_pack("{s:i, s:i}", "lcore",
					    (int)s->cache_lcore, "len",
					    (int)cache_len(shm,
							   s->cache_lcore)));
	}
	return a;
}

static json_t *
rpc_nf_stop(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *v = json_object_get(p, "instance");
	json_int_t i;

	if (!json_is_integer(v))
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'instance' (integer) is missing");
	i = json_integer_value(v);
	if (i < 0 || i >= m->shm->max_nfs ||
	    m->shm->nfs[i].state != SL_NF_RUNNING)
		return mgr_rpc_fail(
			e, SL_RPC_E_FAILED,
			"no running NF instance %lld; nf.list shows them",
			(long long)i);
	__atomic_store_n(&m->shm->nfs[i].stop, 1, __ATOMIC_RELEASE);
	return json_pack("{s:I, s:s}", "instance", i, "state", "stopping");
}

static json_t *
rpc_port_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	(void)p;
	(void)e;
	return mgr_ports_json(m);
}

static json_t *
rpc_service_list(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	struct sl_shm *shm = m->shm;
	json_t *a = json_array();

	(void)p;
	(void)e;
	for (uint16_t s = 0; s < shm->max_services; s++) {
		const struct sl_service *svc = &shm->services[s];
		json_t *inst = json_array();

		if (!svc->used) {
			json_decref(inst);
			continue;
		}
		for (uint16_t k = 0; k < svc->n_live; k++)
			json_array_append_new(inst, json_integer(svc->live[k]));
		json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:o}", "id",
						   s, "name", svc->name, "lb",
						   lb_names[svc->lb_mode],
						   "instances", inst));
	}
	return a;
}

static json_t *
rpc_lb_set(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	const char *mode = json_string_value(json_object_get(p, "mode"));
	int s, md = -1;

	if (mode == NULL)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'mode' is missing: use flow, queue or rr");
	for (int i = 0; i < SL_LB_MAX; i++)
		if (strcmp(mode, lb_names[i]) == 0)
			md = i;
	if (md < 0)
		return mgr_rpc_fail(e, SL_RPC_E_PARAMS,
				    "param 'mode' '%s': use flow, queue or rr",
				    mode);
	s = mgr_rpc_param_service(m, p, "service", e);
	if (s < 0)
		return NULL;
	mgr_lb_set(m, (uint16_t)s, (enum sl_lb_mode)md);
	return json_pack("{s:s, s:s}", "service", m->shm->services[s].name,
			 "mode", mode);
}

static const struct sl_rpc_method sl_registry_methods[] = {
	{"nf.list", rpc_nf_list, 0},     {"nf.stop", rpc_nf_stop, 0},
	{"port.list", rpc_port_list, 0}, {"service.list", rpc_service_list, 0},
	{"lb.set", rpc_lb_set, 0},       {NULL, NULL, 0},
};

static int
registry_init(struct sl_mgr *m, char *err, size_t errlen)
{
	(void)errlen;
	err[0] = '\0'; /* mgr_registry_init says why */
	return mgr_registry_init(m);
}

/* NFs asked to stop (2 s, then SIGKILL) before the I/O threads end. */
static void
registry_stop(struct sl_mgr *m)
{
	mgr_stop_all_nfs(m, 2000);
}

/* Every reader has stopped: the quiescent-state actions left run now. */
static void
registry_close(struct sl_mgr *m)
{
	sl_grace_drain(&m->qs, m);
}

const struct mgr_module mgr_registry_module = {
	.name = "registry",
	.init = registry_init,
	.poll = mgr_registry_poll,
	.stop = registry_stop,
	.close = registry_close,
	.methods = sl_registry_methods,
};
