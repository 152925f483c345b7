/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Services and their load-balancer tables (the live instances of each),
 * and the registry's start: the control thread is the only writer of the
 * registry tables in shared memory.
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


static const char *const state_names[] = {"free", "running", "stopping",
					  "dead"};


const char *
mgr_nf_state_name(uint32_t state)
{
	return state < RTE_DIM(state_names) ? state_names[state] : "?";
}

int
mgr_registry_init(struct sl_mgr *m)
{
	struct sl_registry_state *r = calloc(1, sizeof(*r));

	m->registry = r;
	m->svc_retired = calloc(m->o.max_services, sizeof(*m->svc_retired));
	if (r == NULL || m->svc_retired == NULL)
		goto oom;
	r->pidfd = malloc(sizeof(*r->pidfd) * m->o.max_nfs);
	r->txq_owner = calloc(1 + m->o.nf_txq, sizeof(*r->txq_owner));
	r->cache_owner = calloc(RTE_MAX_LCORE, sizeof(*r->cache_owner));
	r->hb_seen = calloc(m->o.max_nfs, sizeof(*r->hb_seen));
	r->hb_tsc = calloc(m->o.max_nfs, sizeof(*r->hb_tsc));
	if (r->pidfd == NULL || r->txq_owner == NULL ||
	    r->cache_owner == NULL || r->hb_seen == NULL || r->hb_tsc == NULL)
		goto oom;
	for (uint16_t i = 0; i < m->o.max_nfs; i++)
		r->pidfd[i] = -1;
	return 0;
oom:
	fprintf(stderr, "sluiced: out of memory\n");
	return ENOMEM;
}

void
mgr_registry_close(struct sl_mgr *m)
{
	struct sl_registry_state *r = m->registry;

	if (r == NULL)
		return;
	free(r->pidfd);
	free(r->txq_owner);
	free(r->cache_owner);
	free(r->hb_seen);
	free(r->hb_tsc);
	free(r->answered[0]);
	free(r->answered[1]);
	free(r->pids);
	free(r);
	m->registry = NULL;
	free(m->svc_retired);
	m->svc_retired = NULL;
}

/* ---- services and load-balancer tables ----------------------------- */

int
mgr_service_get(struct sl_mgr *m, const char *name, int create, int *id,
		char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	int free_id = -1;

	for (uint16_t s = 0; s < shm->max_services; s++) {
		struct sl_service *svc = &shm->services[s];

		if (svc->used && strcmp(svc->name, name) == 0) {
			*id = s;
			return 0;
		}
		if (!svc->used && free_id < 0)
			free_id = s;
	}
	if (!create)
		return ENOENT;
	if (free_id < 0) {
		snprintf(err, errlen,
			 "all %u services are in use: raise --max-services",
			 shm->max_services);
		return ENOSPC;
	}
	struct sl_service *svc = &shm->services[free_id];

	snprintf(svc->name, sizeof(svc->name), "%s", name);
	svc->lb_mode = SL_LB_FLOW;
	svc->n_live = 0;
	memset(&m->svc_retired[free_id], 0, sizeof(m->svc_retired[free_id]));
	memset(m->edge_retired + (size_t)free_id * SL_EDGE_COLS(shm), 0,
	       SL_EDGE_COLS(shm) * sizeof(*m->edge_retired));
	__atomic_store_n(&svc->used, 1, __ATOMIC_RELEASE);
	*id = free_id;
	return 0;
}

void
mgr_service_release(struct sl_mgr *m, uint16_t id)
{
	struct sl_service *svc = &m->shm->services[id];

	__atomic_store_n(&svc->used, 0, __ATOMIC_RELEASE);
	memset(svc->name, 0, sizeof(svc->name));
}

void
mgr_reg_live_add(struct sl_mgr *m, uint16_t s, uint16_t inst)
{
	struct sl_service *svc = &m->shm->services[s];

	svc->live[svc->n_live] = inst;
	__atomic_store_n(&svc->n_live, (uint16_t)(svc->n_live + 1),
			 __ATOMIC_RELEASE);
	sl_lb_rebuild(svc);
}

void
mgr_reg_live_remove(struct sl_mgr *m, uint16_t s, uint16_t inst)
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
mgr_lb_set(struct sl_mgr *m, uint16_t service, enum sl_lb_mode mode)
{
	struct sl_service *svc = &m->shm->services[service];

	__atomic_store_n(&svc->lb_mode, (uint8_t)mode, __ATOMIC_RELEASE);
	return 0;
}

void
mgr_maybe_enable_rx(struct sl_mgr *m)
{
	if (m->rx_started || !mgr_chain_complete(m))
		return;
	m->rx_started = 1; /* only the first time: rx.pause sticks */
	__atomic_store_n(&m->shm->rx_enabled, 1, __ATOMIC_RELEASE);
	mgr_log(m, "chain complete: reading ports");
}
