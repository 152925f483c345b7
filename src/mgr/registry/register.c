/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NF messages: registration, deregistration, death, and the registry's
 * poll from the control thread; stopping every NF at shutdown.
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

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/*
 * Is pid a process attached to this node's DPDK memory (it maps a file of
 * the node's runtime folder, as every secondary maps its config)? An NF
 * names its pid itself; from another pid namespace (a container without
 * --pid host) that number is some other host process, which sluiced would
 * then watch as the NF, and stop at shutdown. 0, or EPERM with err
 * saying why.
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
		return EPERM;
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
	return found ? 0 : EPERM;
}
/* ---- registration ------------------------------------------------- */

static void reply(struct sl_msg *msg, int result, const char *fmt, ...)
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

void
mgr_reg_refused(struct sl_mgr *m, const struct sl_msg *msg)
{
	m->msgs_refused++;
	if (m->msgs_refused <= 20 || m->msgs_refused % 1000 == 0)
		mgr_log(m,
			"NF message refused (%" PRIu64 " so far; status "
			"messages.refused): pid %d, type %u: %.*s",
			m->msgs_refused, msg->pid, msg->type,
			(int)sizeof(msg->error), msg->error);
}

void
mgr_reg_refuse(struct sl_mgr *m, struct sl_msg *msg, int result,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg->error, sizeof(msg->error), fmt, ap);
	va_end(ap);
	msg->result = result;
	mgr_reg_refused(m, msg);
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
			return ENOMEM;
	} else {
		rte_ring_reset(s->rx);
		rte_ring_reset(s->tx);
		mgr_reg_inbox_drain(m, s);
	}
	return 0;
}

/*
 * A registration checked before an instance is chosen: 0, or 1 when it
 * was refused (answered). err is a scratch buffer.
 */
static int
register_refused(struct sl_mgr *m, struct sl_msg *msg, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;

	msg->service_name[sizeof(msg->service_name) - 1] = '\0';
	msg->prog[sizeof(msg->prog) - 1] = '\0';
	if (!sl_name_valid(msg->service_name) || msg->pid <= 0) {
		reply(msg, EINVAL, "bad registration (service '%s', pid %d)",
		      msg->service_name, msg->pid);
		return 1;
	}
	if (msg->mode > SL_MODE_POLL) {
		mgr_reg_refuse(
			m, msg, EINVAL,
			"bad registration: mode %u is neither 0 (shared) nor 1 "
			"(poll)",
			msg->mode);
		return 1;
	}
	if (msg->access &
	    ~(SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE)) {
		mgr_reg_refuse(
			m, msg, EINVAL,
			"bad registration: access 0x%x has bits other than "
			"SL_ACCESS_READ, _WRITE and _ROUTE",
			msg->access);
		return 1;
	}
	if (!text_printable(msg->prog)) {
		mgr_reg_refuse(
			m, msg, EINVAL,
			"bad registration: the program name must be printable "
			"ASCII");
		return 1;
	}
	if (msg->pid == (int32_t)getpid()) {
		mgr_reg_refuse(m, msg, EPERM,
			       "bad registration: pid %d is sluiced's own",
			       msg->pid);
		return 1;
	}
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].pid == msg->pid &&
		    __atomic_load_n(&shm->nfs[i].state, __ATOMIC_ACQUIRE) ==
			    SL_NF_RUNNING) {
			mgr_reg_refuse(
				m, msg, EBUSY,
				"pid %d is registered already, as instance "
				"%u: one registration per process",
				msg->pid, i);
			return 1;
		}
	if (pid_maps_node(msg->pid, err, errlen) != 0) {
		reply(msg, EPERM, "%s", err);
		mgr_log(m, "registration refused: %s", err);
		return 1;
	}
	return 0;
}

/* A free slot made instance inst of service svc, for msg's sender; not
 * published yet (its state is set after). */
static void
slot_fill(struct sl_mgr *m, struct sl_nf_slot *s, const struct sl_msg *msg,
	  uint16_t inst, uint16_t svc)
{
	struct sl_shm *shm = m->shm;

	memset(&s->nf, 0, sizeof(s->nf));
	memset(&s->mgr, 0, sizeof(s->mgr));
	memset(sl_edge_row_nf(shm, inst, 0), 0,
	       2 * SL_EDGE_COLS(shm) * sizeof(struct sl_edge_ctr));
	memset(s->port_tx, 0, sizeof(s->port_tx));
	/* Its own TX queue on the ports, if one is free (else the tx ring). */
	s->txq = 0;
	for (uint16_t q = 1; !m->o.handoff && q <= m->o.nf_txq; q++)
		if (m->registry->txq_owner[q] == 0) {
			m->registry->txq_owner[q] = (uint16_t)(inst + 1);
			s->txq = q;
			break;
		}
	s->pool_op = 0;
	memset(&s->tx_call, 0, sizeof(s->tx_call));
	s->cache_lcore = mgr_reg_cache_lcore_take(m, inst);
	s->instance = inst;
	s->service = svc;
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
	m->registry->hb_tsc[inst] = 0;
	s->started_tsc = rte_rdtsc();
	s->proc_start_tsc = msg->start_tsc != 0 &&
					    msg->start_tsc < s->started_tsc
				    ? msg->start_tsc
				    : s->started_tsc;
}

static void
handle_register(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	char err[256] = "";
	struct sl_nf_slot *s;
	int svc, inst = -1, pidfd;

	if (register_refused(m, msg, err, sizeof(err)))
		return;
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
	if (mgr_service_get(m, msg->service_name, 1, &svc, err, sizeof(err)) !=
	    0) {
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
	slot_fill(m, s, msg, (uint16_t)inst, (uint16_t)svc);
	__atomic_store_n(&s->state, SL_NF_RUNNING, __ATOMIC_RELEASE);
	if (inst + 1 > shm->nf_hwm)
		__atomic_store_n(&shm->nf_hwm, (uint16_t)(inst + 1),
				 __ATOMIC_RELEASE);
	mgr_reg_live_add(m, (uint16_t)svc, (uint16_t)inst);
	m->registry->pidfd[inst] = pidfd;
	mgr_bus_watch_pid(&m->bus, (uint16_t)inst, pidfd);

	msg->instance = (uint16_t)inst;
	msg->service = (uint16_t)svc;
	reply(msg, 0, NULL);
	mgr_log(m, "NF up: instance %d, service %s (%d), pid %d, %s", inst,
		msg->service_name, svc, msg->pid, msg->prog);
	mgr_event(m, "nf.up",
		  json_pack("{s:i, s:s, s:i, s:s}", "instance", inst, "service",
			    msg->service_name, "pid", msg->pid, "prog",
			    msg->prog));
	mgr_maybe_enable_rx(m);
}

/* A deregistration, answered once a grace period has passed: no reader
 * can then still send to the instance. */
struct reg_dereg {
	struct sl_grace_action qa;
	struct sl_msg *msg;
	uint16_t instance;
};

static int
dereg_run(void *ctx, struct sl_grace_action *qa, int draining)
{
	struct sl_mgr *m = ctx;
	struct reg_dereg *d = container_of(qa, struct reg_dereg, qa);
	struct sl_msg *msg = d->msg;

	(void)draining; /* the same at shutdown */
	if (m->shm->nfs[d->instance].pid != msg->pid ||
	    m->shm->nfs[d->instance].state != SL_NF_STOPPING) {
		/* It died while waiting: nobody reads the answer. */
		mgr_reg_msg_give_back(m, msg);
	} else {
		msg->result = 0;
		__atomic_store_n(&msg->done, 1, __ATOMIC_RELEASE);
	}
	free(d);
	return 0;
}

int
mgr_reg_dereg_holds(const struct sl_grace_action *a, const struct sl_msg *msg)
{
	return a->fn == dereg_run &&
	       container_of(a, const struct reg_dereg, qa)->msg == msg;
}

static void
handle_deregister(struct sl_mgr *m, struct sl_msg *msg)
{
	struct sl_shm *shm = m->shm;
	struct sl_nf_slot *s;
	struct reg_dereg *d;

	if (msg->instance >= shm->max_nfs ||
	    shm->nfs[msg->instance].pid != msg->pid ||
	    shm->nfs[msg->instance].state != SL_NF_RUNNING) {
		reply(msg, EINVAL, "instance %u is not registered to pid %d",
		      msg->instance, msg->pid);
		return;
	}
	s = &shm->nfs[msg->instance];
	__atomic_store_n(&s->state, SL_NF_STOPPING, __ATOMIC_RELEASE);
	mgr_reg_live_remove(m, s->service, msg->instance);
	d = calloc(1, sizeof(*d));
	if (d == NULL || sl_grace_defer(&m->qs, &d->qa, dereg_run, shm) != 0) {
		free(d);
		reply(msg, 0, NULL);
		return;
	}
	d->msg = msg;
	d->instance = msg->instance;
	mgr_log(m, "NF stopping: instance %u, service %s", msg->instance,
		shm->services[s->service].name);
}

void
mgr_nf_died(struct sl_mgr *m, uint16_t inst)
{
	struct sl_shm *shm = m->shm;
	struct sl_nf_slot *s = &shm->nfs[inst];
	uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	struct sl_reg_reclaim *a;

	if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
		return;
	if (st == SL_NF_RUNNING)
		mgr_reg_live_remove(m, s->service, inst);
	__atomic_store_n(&s->state, SL_NF_DEAD, __ATOMIC_RELEASE);
	if (m->registry->pidfd[inst] >= 0) {
		close(m->registry->pidfd[inst]);
		m->registry->pidfd[inst] = -1;
	}
	a = calloc(1, sizeof(*a));
	if (a != NULL &&
	    sl_grace_defer(&m->qs, &a->qa, mgr_reg_reclaim_run, shm) != 0) {
		free(a);
		a = NULL;
	}
	if (a == NULL) {
		mgr_log(m,
			"instance %u: no room to queue its reclaim: its slot "
			"stays dead",
			inst);
	} else {
		a->instance = inst;
		/* Killed inside an enqueue? Seen and undone a grace period
		 * later, in mgr_reg_reclaim(). */
		a->ptr = mgr_reg_rings_snapshot(m, inst);
	}
	if (st == SL_NF_RUNNING)
		mgr_log(m,
			"NF died: instance %u, service %s, pid %d; its flows "
			"move to %u remaining instance(s)",
			inst, shm->services[s->service].name, s->pid,
			shm->services[s->service].n_live);
	else
		mgr_log(m, "NF exited: instance %u, service %s, pid %d", inst,
			shm->services[s->service].name, s->pid);
	mgr_event(m, "nf.down",
		  json_pack("{s:i, s:s, s:i, s:s}", "instance", inst, "service",
			    shm->services[s->service].name, "pid", s->pid,
			    "reason",
			    st == SL_NF_RUNNING ? "died" : "stopped"));
}

void
mgr_registry_poll(struct sl_mgr *m)
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
				mgr_reg_msg_give_back(m, msg);
			break;
		case SL_MSG_DEREGISTER:
			handle_deregister(m, msg);
			break;
		case SL_MSG_REQUEST:
			mgr_reg_handle_request(m, msg);
			break;
		default:
			mgr_reg_refuse(m, msg, EINVAL,
				       "unknown message type %u: register (1), "
				       "deregister (2) or request (3)",
				       msg->type);
		}
	}
	mgr_reg_answered_sweep(m);
	mgr_reg_watchdog(m);
	sl_grace_poll(&m->qs, m->shm, m, -1, 1);
}

/* 1 when the process has exited (a zombie counts as exited). */
static int
pid_gone(const struct sl_mgr *m, uint16_t inst)
{
	struct pollfd p = {.fd = m->registry->pidfd[inst], .events = POLLIN};

	if (m->registry->pidfd[inst] < 0)
		return kill(m->shm->nfs[inst].pid, 0) != 0 && errno == ESRCH;
	return poll(&p, 1, 0) > 0;
}

void
mgr_stop_all_nfs(struct sl_mgr *m, unsigned int timeout_ms)
{
	struct sl_shm *shm = m->shm;
	uint64_t deadline = rte_rdtsc() + shm->tsc_hz / 1000 * timeout_ms;
	int left;

	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		__atomic_store_n(&shm->nfs[i].stop, 1, __ATOMIC_RELEASE);
	do {
		left = 0;
		mgr_registry_poll(m); /* answer deregistrations */
		for (uint16_t i = 0; i < shm->nf_hwm; i++) {
			struct sl_nf_slot *s = &shm->nfs[i];
			uint32_t st =
				__atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

			if (st != SL_NF_RUNNING && st != SL_NF_STOPPING)
				continue;
			if (pid_gone(m, i))
				mgr_nf_died(m, i);
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
			mgr_log(m,
				"NF instance %u (pid %d) did not stop within "
				"%u ms: killing it",
				i, s->pid, timeout_ms);
			kill(s->pid, SIGKILL);
			mgr_nf_died(m, i);
		}
	}
}
