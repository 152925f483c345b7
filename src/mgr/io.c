/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's I/O thread(s). With one I/O lcore, one thread does RX (ports
 * -> first hop) and TX (NF tx rings -> next hop or port). With two, thread
 * 0 does RX and thread 1 TX; RX hands port-bound packets to TX through a
 * ring, so only the TX thread ever writes a port's TX queue.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "sl_futex.h"
#include "sluice/pkt.h"
#include "sluiced.h"

#define TXBUF_CAP (2 * SL_BURST_MAX)
#define SLEEP_PORTS_NS 200000ull /* ports cannot wake us: poll them */
#define SLEEP_NOPORTS_NS 20000000ull

struct io_txbuf {
	uint16_t n;
	struct rte_mbuf *pkts[TXBUF_CAP];
};

struct io_ctx {
	struct sl_mgr *m;
	unsigned int idx;
	int do_rx;
	int do_tx;
	struct sl_shm *shm;
	uint64_t tx_retry_cycles;
	uint16_t rx_burst; /* --rx-burst: packets per port read */
	int rss_flow_hash; /* the ports' RSS hash is the flow hash (ports/) */
	struct sl_dispatch ingress[SL_MAX_PORTS];
	struct sl_dispatch *from_nf; /* [max_nfs]: NF tx rings */
	struct sl_dispatch from_rx;  /* split mode: the RX->TX ring */
	struct rte_ring *rx2tx;      /* m->io.rx2tx */
	struct io_txbuf txbuf[SL_MAX_PORTS];
	/* The ports sluiced set up (before any I/O thread starts; none is
	 * added later): the loops visit these, not all SL_MAX_PORTS ids. */
	uint16_t n_ports;
	uint16_t ports[SL_MAX_PORTS];
};

static void
txbuf_flush(struct io_ctx *c, uint16_t port)
{
	struct io_txbuf *b = &c->txbuf[port];
	struct sl_ctx_stats *ps = &c->shm->port_stats[c->idx][port];
	uint64_t deadline = 0, bytes = 0;
	uint16_t sent = 0;

	/* Lengths before the driver has the packets: a sent mbuf may be
	 * freed and in use again (another length) by the time it returns. */
	for (uint16_t i = 0; i < b->n; i++)
		bytes += rte_pktmbuf_pkt_len(b->pkts[i]);
	while (sent < b->n) {
		sent += rte_eth_tx_burst(port, 0, b->pkts + sent,
					 (uint16_t)(b->n - sent));
		if (sent == b->n)
			break;
		if (deadline == 0)
			deadline = rte_rdtsc() + c->tx_retry_cycles;
		else if (rte_rdtsc() > deadline)
			break;
	}
	for (uint16_t i = sent; i < b->n; i++) /* still ours */
		bytes -= rte_pktmbuf_pkt_len(b->pkts[i]);
	ps->tx_bytes += bytes;
	ps->tx_pkts += sent;
	if (sent < b->n)
		sl_drop_pkts(c->shm, ps->drop, SL_DROP_TX_FULL, b->pkts + sent,
			     (uint16_t)(b->n - sent));
	b->n = 0;
}

/* TX thread: buffer for the port; always takes everything. */
static uint16_t
io_port_out(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct io_ctx *c = d->port_arg;
	struct io_txbuf *b = &c->txbuf[port];

	if (b->n + n > TXBUF_CAP)
		txbuf_flush(c, port);
	memcpy(b->pkts + b->n, pkts, n * sizeof(*pkts));
	b->n = (uint16_t)(b->n + n);
	if (b->n >= c->shm->burst)
		txbuf_flush(c, port);
	return n;
}

/* RX thread in split mode: hand port-bound packets to the TX thread. */
static uint16_t
io_port_out_split(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
		  uint16_t n)
{
	struct io_ctx *c = d->port_arg;
	struct sl_shm *shm = d->shm;
	unsigned int k;

	(void)port;
	k = rte_ring_sp_enqueue_burst(c->rx2tx, (void **)pkts, n, NULL);
	if (k > 0) {
		rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&shm->io_sleeping[1], __ATOMIC_RELAXED))
			sl_futex_wake(&shm->io_wake[1]);
	}
	return (uint16_t)k;
}

static unsigned int
do_rx(struct io_ctx *c, uint64_t now)
{
	struct sl_shm *shm = c->shm;
	struct rte_mbuf *pkts[SL_BURST_MAX];
	unsigned int work = 0;
	/* Paused (or not started): read nothing new, but still hand on what
	 * was read and waits on a full first hop. */
	int enabled = __atomic_load_n(&shm->rx_enabled, __ATOMIC_SEQ_CST);
	/* A packet's meta as it enters (verdict NEXT at no service yet,
	 * sluiced's, no flow entry), but for its port and flow hash. */
	struct sl_pkt_meta pre = {
		.verdict = SL_NEXT,
		.flow = SL_FLOW_NONE,
		.service = SL_SERVICE_NONE,
	};

	for (uint16_t k = 0; k < c->n_ports; k++) {
		uint16_t p = c->ports[k];
		struct sl_ctx_stats *ps = &shm->port_stats[c->idx][p];
		uint64_t bytes = 0, t0;
		uint16_t n;

		if (!shm->ports[p].used ||
		    !__atomic_load_n(&shm->ports[p].started, __ATOMIC_ACQUIRE))
			continue;
		if (sl_dispatch_pending(&c->ingress[p])) {
			/* Backpressure at ingress: do not read the port
			 * until the first hop has room. */
			if (sl_dispatch_retry(&c->ingress[p], now) != 0) {
				ps->stalls++;
				continue;
			}
			work++;
		}
		if (!enabled)
			continue;
		n = rte_eth_rx_burst(p, 0, pkts, c->rx_burst);
		if (n == 0)
			continue;
		work += n;
		pre.in_port = p;
		if (shm->flow.lookup == SL_LOOKUP_OFF) {
			/* Every packet enters alike: resolved once, its meta
			 * written once (the port path's I/O thread is its
			 * bottleneck: docs/performance.md, session 16). */
			sl_dispatch_alike(&c->ingress[p], pkts, n, &pre,
					  c->rss_flow_hash, ps);
			continue;
		}
		for (uint16_t i = 0; i < n; i++) {
			sl_meta_enter(sl_meta(pkts[i], shm->dynfield_offset),
				      &pre, pkts[i], c->rss_flow_hash);
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
		}
		ps->rx_pkts += n;
		ps->rx_bytes += bytes;
		/* The flow director: entry and graph, once per packet. */
		t0 = rte_rdtsc();
		mgr_flow_ingress(c->m->flow, shm, pkts, n);
		shm->flow.st.cycles += rte_rdtsc() - t0;
		sl_dispatch(&c->ingress[p], pkts, n);
	}
	return work;
}

static unsigned int
drain_ring(struct io_ctx *c, struct sl_dispatch *d, struct rte_ring *r,
	   struct sl_ctx_stats *st, uint64_t now)
{
	struct rte_mbuf *pkts[SL_BURST_MAX];
	unsigned int n;

	if (sl_dispatch_pending(d) && sl_dispatch_retry(d, now) != 0) {
		st->stalls++;
		return 0;
	}
	n = rte_ring_sc_dequeue_burst(r, (void **)pkts, c->shm->burst, NULL);
	if (n == 0)
		return 0;
	/* Last written by an NF on another core: fetch the header and meta
	 * lines of the whole burst at once. */
	for (unsigned int i = 0; i < n; i++) {
		rte_prefetch0(pkts[i]);
		rte_prefetch0(sl_meta(pkts[i], c->shm->dynfield_offset));
	}
	/* Ours now: the NF's tag goes (see to_instance). */
	for (unsigned int i = 0; i < n; i++)
		sl_meta(pkts[i], c->shm->dynfield_offset)->owner = 0;
	sl_flow_prefetch(c->shm, pkts, (uint16_t)n);
	st->rx_pkts += n;
	sl_dispatch(d, pkts, (uint16_t)n);
	return n;
}

static unsigned int
do_tx(struct io_ctx *c, uint64_t now)
{
	struct sl_shm *shm = c->shm;
	uint16_t hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);
	unsigned int work = 0;

	for (uint16_t i = 0; i < hwm; i++) {
		struct sl_nf_slot *s = &shm->nfs[i];

		/* A freed slot may still have packets pending here. */
		if ((__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) ==
			     SL_NF_FREE &&
		     !sl_dispatch_pending(&c->from_nf[i])) ||
		    s->tx == NULL)
			continue;
		work += drain_ring(c, &c->from_nf[i], s->tx, &s->mgr, now);
	}
	if (c->rx2tx != NULL)
		work += drain_ring(c, &c->from_rx, c->rx2tx, &shm->io[c->idx],
				   now);
	for (uint16_t k = 0; k < c->n_ports; k++)
		if (c->txbuf[c->ports[k]].n > 0)
			txbuf_flush(c, c->ports[k]);
	return work;
}

/* Something queued for us that a sleeping thread would miss? */
static int
has_input(const struct io_ctx *c)
{
	const struct sl_shm *shm = c->shm;
	uint16_t hwm = __atomic_load_n(&shm->nf_hwm, __ATOMIC_ACQUIRE);

	if (c->do_tx) {
		for (uint16_t i = 0; i < hwm; i++)
			if (shm->nfs[i].state != SL_NF_FREE &&
			    shm->nfs[i].tx != NULL &&
			    rte_ring_count(shm->nfs[i].tx) > 0)
				return 1;
		if (c->rx2tx != NULL && rte_ring_count(c->rx2tx) > 0)
			return 1;
	}
	return 0;
}

static void
io_idle(struct io_ctx *c, uint64_t now, uint64_t *idle_since)
{
	struct sl_shm *shm = c->shm;
	uint32_t w;

	if (c->m->o.mode == SL_MODE_POLL) {
		rte_pause();
		return;
	}
	if (*idle_since == 0)
		*idle_since = now;
	if (now - *idle_since < shm->idle_sleep_cycles) {
		sched_yield();
		return;
	}
	w = __atomic_load_n(&shm->io_wake[c->idx], __ATOMIC_ACQUIRE);
	__atomic_store_n(&shm->io_sleeping[c->idx], 1, __ATOMIC_RELAXED);
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!has_input(c) &&
	    !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE)) {
		shm->io[c->idx].sleeps++;
		sl_futex_wait(&shm->io_wake[c->idx], w,
			      c->do_rx && shm->n_ports > 0 && shm->rx_enabled
				      ? SLEEP_PORTS_NS
				      : SLEEP_NOPORTS_NS);
	}
	__atomic_store_n(&shm->io_sleeping[c->idx], 0, __ATOMIC_RELAXED);
}

/* 0, or ENOMEM (sl_dispatch_init's only failure, as a positive errno). */
static int
io_ctx_init(struct io_ctx *c, struct sl_mgr *m, unsigned int idx)
{
	struct sl_shm *shm = m->shm;
	sl_port_out_fn out;

	memset(c, 0, sizeof(*c));
	c->m = m;
	c->idx = idx;
	c->rx2tx = m->io.rx2tx;
	c->shm = shm;
	c->do_rx = idx == 0;
	c->do_tx = idx == shm->n_io - 1;
	c->tx_retry_cycles = shm->tsc_hz / 1000000 * m->o.tx_retry_us;
	c->rx_burst = (uint16_t)m->o.rx_burst;
	c->rss_flow_hash = m->ports.rss_flow_hash;
	out = c->do_tx ? io_port_out : io_port_out_split;
	for (uint16_t p = 0; p < SL_MAX_PORTS; p++) {
		if (sl_dispatch_init(&c->ingress[p], shm, 0, &shm->io[idx],
				     shm->port_stats[idx][p].drop, out, c))
			return ENOMEM; /* its -ENOMEM */
		/* Never drop at ingress for waiting: stop reading instead. */
		c->ingress[p].bp_cycles = UINT64_MAX;
		c->ingress[p].edge = sl_edge_row_port(shm, idx, p);
		if (shm->ports[p].used)
			c->ports[c->n_ports++] = p;
	}
	c->from_nf = calloc(shm->max_nfs, sizeof(*c->from_nf));
	if (c->from_nf == NULL)
		return ENOMEM;
	for (uint16_t i = 0; i < shm->max_nfs; i++)
		if (sl_dispatch_init(&c->from_nf[i], shm, 0, &shm->nfs[i].mgr,
				     shm->nfs[i].mgr.drop, io_port_out, c))
			return ENOMEM; /* its -ENOMEM */
		else {
			c->from_nf[i].edge = sl_edge_row_nf(shm, i, 1);
			c->from_nf[i].undo_tx = 1;
		}
	if (sl_dispatch_init(&c->from_rx, shm, 0, &shm->io[idx],
			     shm->io[idx].drop, io_port_out, c))
		return ENOMEM; /* its -ENOMEM */
	return 0;
}

static void
io_ctx_fini(struct io_ctx *c)
{
	for (uint16_t p = 0; p < SL_MAX_PORTS; p++) {
		sl_dispatch_drop_pending(&c->ingress[p], SL_DROP_NF_LOST);
		sl_dispatch_fini(&c->ingress[p]);
		if (c->txbuf[p].n > 0)
			txbuf_flush(c, p);
	}
	for (uint16_t i = 0; c->from_nf != NULL && i < c->shm->max_nfs; i++) {
		sl_dispatch_drop_pending(&c->from_nf[i], SL_DROP_NF_LOST);
		sl_dispatch_fini(&c->from_nf[i]);
	}
	free(c->from_nf);
	sl_dispatch_drop_pending(&c->from_rx, SL_DROP_NF_LOST);
	sl_dispatch_fini(&c->from_rx);
}

/* Fills m->io (the RX->TX ring in split mode, the threads' arguments)
 * before the threads start. */
static int
io_init(struct sl_mgr *m, char *err, size_t errlen)
{
	char name[RTE_RING_NAMESIZE];

	for (unsigned int i = 0; i < SL_MAX_IO_THREADS; i++)
		m->io.arg[i] = (struct sl_io_arg){.m = m, .idx = i};
	m->io.rx2tx = NULL;
	if (m->shm->n_io < 2)
		return 0;
	snprintf(name, sizeof(name), "sl_%.16s_rx2tx", m->shm->node);
	m->io.rx2tx = rte_ring_create(name, m->shm->ring_size, rte_socket_id(),
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (m->io.rx2tx != NULL)
		return 0;
	snprintf(err, errlen, "cannot create the RX->TX ring");
	return ENOMEM;
}

static void
io_start(struct sl_mgr *m)
{
	for (uint32_t i = 0; i < m->shm->n_io; i++)
		rte_eal_remote_launch(mgr_io_thread, &m->io.arg[i],
				      m->io_lcores[i]);
}

/* After the NFs are gone: the I/O threads see shutdown and return. */
static void
io_stop(struct sl_mgr *m)
{
	__atomic_store_n(&m->shm->shutdown, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < m->shm->n_io; i++)
		sl_futex_wake(&m->shm->io_wake[i]);
	rte_eal_mp_wait_lcore();
}

/* The I/O threads. First in main.c's list after the node's methods, so
 * that it stops last: after every NF has gone. */
const struct mgr_module mgr_io_module = {
	.name = "io",
	.init = io_init,
	.start = io_start,
	.stop = io_stop,
};

int
mgr_io_rx_settle(struct sl_shm *shm)
{
	/* The RX thread is I/O thread 0. Whatever it reads with rx_enabled
	 * still 1 it has counted and handed on by the time it starts its
	 * next loop (heartbeat) or goes to sleep, and from then on it reads
	 * 0: the caller stored 0 before this load (both sequentially
	 * consistent), so the next heartbeat is after that store. */
	uint64_t hb0 = __atomic_load_n(&shm->io_heartbeat[0], __ATOMIC_SEQ_CST);
	uint64_t deadline = rte_rdtsc() + shm->tsc_hz / 10;

	while (__atomic_load_n(&shm->io_heartbeat[0], __ATOMIC_SEQ_CST) ==
		       hb0 &&
	       !__atomic_load_n(&shm->io_sleeping[0], __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE)) {
		if (rte_rdtsc() > deadline)
			return ETIMEDOUT;
		rte_delay_us_sleep(20);
	}
	return 0;
}

int
mgr_io_thread(void *arg)
{
	const struct sl_io_arg *a = arg;
	struct sl_mgr *m = a->m;
	unsigned int idx = a->idx;
	struct sl_shm *shm = m->shm;
	struct io_ctx *c;
	uint64_t idle_since = 0;

	c = rte_zmalloc("sl_io_ctx", sizeof(*c), RTE_CACHE_LINE_SIZE);
	if (c == NULL || io_ctx_init(c, m, idx) != 0) {
		mgr_log(m, "I/O thread %u: out of memory; stopping", idx);
		m->quit = 1;
		return ENOMEM; /* io_stop's rte_eal_mp_wait_lcore ignores it */
	}
	while (!__atomic_load_n(&shm->shutdown, __ATOMIC_ACQUIRE)) {
		uint64_t now = rte_rdtsc();
		unsigned int work = 0;

		/* A locked add, a full barrier: do_rx() reads rx_enabled
		 * after it (mgr_io_rx_settle()). */
		__atomic_fetch_add(&shm->io_heartbeat[idx], 1,
				   __ATOMIC_SEQ_CST);
		if (c->do_rx) {
			work += do_rx(c, now);
			mgr_flow_maintain(m->flow, shm, now);
		}
		if (c->do_tx)
			work += do_tx(c, now);
		if (work == 0) {
			io_idle(c, now, &idle_since);
		} else {
			idle_since = 0;
			shm->io[idx].bursts++;
		}
	}
	if (c->do_rx)
		mgr_flow_rx_fini(m->flow);
	io_ctx_fini(c);
	rte_free(c);
	return 0;
}
