/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's NF loop: take a burst from the rx ring, run the NF on it,
 * hand it on (sl_dispatch) or transmit it, sleep when idle.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "sl_futex.h"
#include "sl_graph.h"
#include "sl_nf_int.h"
#include "sluice/flow.h"
#include "sluice/pkt.h"

/* ---- signals ------------------------------------------------------ */

/*
 * Process-wide, and so file-static rather than in struct sl_nf: a signal
 * is delivered to the process, and its handler has no NF handle (one NF
 * process runs one NF). Written only by on_signal(). They live beside the
 * loop so that its per-burst checks are plain loads, not calls into
 * another file; the rest of libsluice reads them through the functions
 * below.
 */
static volatile sig_atomic_t g_stop;   /* SIGINT, SIGTERM */
static volatile sig_atomic_t g_reload; /* SIGHUP, until taken */

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		g_reload = 1;
	else
		g_stop = 1;
}

void
nfi_signals_install(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
}

/* 1 once a stop signal came (it stays set). */
int
nfi_stop_asked(void)
{
	return g_stop != 0;
}

/* 1 while a SIGHUP is waiting to be taken by reload_take(). */
int
nfi_reload_asked(void)
{
	return g_reload != 0;
}

/* 1 if a SIGHUP came since the last call, clearing it: one reload for any
 * number of SIGHUPs before it. */
static inline int
reload_take(void)
{
	if (g_reload == 0)
		return 0;
	g_reload = 0;
	return 1;
}

/* A packet handed to port (SL_PORT_NONE: to sluiced, unresolved) that
 * the NF passes on, i.e. did not mark DROP. */
static inline int
nf_passes_on(const struct sl_nf *nf, uint16_t port, const struct rte_mbuf *m)
{
	return port != SL_PORT_NONE ||
	       sl_verdict_kind(nf_meta(nf, m)->verdict) != SL_VERDICT_DROP;
}

/*
 * OUT(port): straight out on this NF's own TX queue of the port when it
 * has one; otherwise (and for everything in "mgr" hand-off mode) into our
 * tx ring, for sluiced's TX thread.
 */
uint16_t
nfi_port_out(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	     uint16_t n)
{
	struct sl_nf *nf = d->port_arg;
	struct sl_shm *shm = nf->shm;
	struct sl_nf_slot *slot = nf->slot;
	uint64_t bytes = 0, on = 0;
	unsigned int k;

	/* Counted before the packets leave: once sent (or in sluiced's
	 * hands) an mbuf may be freed and in use again, with another
	 * length. What was not taken is still ours. In mgr hand-off every
	 * packet comes here unresolved (port NONE): those the NF dropped
	 * are sluiced's to drop and count as this NF's nf_verdict drops, not
	 * its tx, as in direct hand-off. */
	for (uint16_t i = 0; i < n; i++)
		if (nf_passes_on(nf, port, pkts[i])) {
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
			on++;
		}
	if (port != SL_PORT_NONE && slot->txq != 0 &&
	    slot->txq < shm->ports[port].n_txq) {
		struct sl_tx_call *c = &slot->tx_call;

		/* The driver frees what it sent into our mempool cache: free
		 * packets are tagged nobody's. The call is written down first
		 * (struct sl_tx_call): killed inside it, sluiced counts the
		 * burst as in doubt rather than lose it uncounted
		 * (docs/architecture.md, "Killed inside a hand-off"). */
		memcpy(slot->tx_hand, pkts, n * sizeof(pkts[0]));
		c->port = port;
		c->n = n;
		c->pkts_before = slot->port_tx[port].pkts;
		c->bytes_before = slot->port_tx[port].bytes;
		/* Written down before the first tag is cleared: a packet
		 * still tagged ours is found by sluiced's scan, one tagged
		 * nobody's only through this record. */
		__atomic_store_n(&c->phase, 1, __ATOMIC_RELEASE);
		rte_atomic_thread_fence(__ATOMIC_RELEASE);
		for (uint16_t i = 0; i < n; i++)
			nf_meta(nf, pkts[i])->owner = 0;
		NFI_TEST_KILL_TX(nf, 1);
		sl_pool_op_begin(d->pool_op);
		k = rte_eth_tx_burst(port, slot->txq, pkts, n);
		sl_pool_op_end(d->pool_op);
		for (unsigned int i = k; i < n; i++) {
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
			nf_meta(nf, pkts[i])->owner = d->self_owner;
		}
		c->k = (uint16_t)k;
		c->sent_bytes = bytes;
		__atomic_store_n(&c->phase, 2, __ATOMIC_RELEASE);
		NFI_TEST_KILL_TX(nf, 2);
		slot->port_tx[port].pkts += k;
		slot->port_tx[port].bytes += bytes;
		__atomic_store_n(&c->phase, 0, __ATOMIC_RELEASE);
		d->fwd->tx_pkts += k;
		d->fwd->tx_bytes += bytes;
		return (uint16_t)k;
	}
	k = rte_ring_sp_enqueue_burst(slot->tx, (void **)pkts, n, NULL);
	if (k == 0)
		return 0;
	for (unsigned int i = k; i < n; i++)
		if (nf_passes_on(nf, port, pkts[i])) {
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
			on--;
		}
	d->fwd->tx_pkts += on;
	d->fwd->tx_bytes += bytes;
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t t = 0; t < shm->n_io; t++) {
		if (__atomic_load_n(&shm->io_sleeping[t], __ATOMIC_RELAXED)) {
			sl_futex_wake(&shm->io_wake[t]);
			d->fwd->wakeups++;
		}
	}
	return (uint16_t)k;
}

void
sl_nf_send(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = nf_meta(nf, pkts[i]);
		sl_verdict_t v = m->verdict;

		memset(m, 0, sizeof(*m)); /* flow hash: computed if needed */
		m->verdict = v;
		m->service = nf->service;
		m->owner = (uint16_t)(nf->instance + 1);
		m->in_port = UINT16_MAX;
		m->flow = SL_FLOW_NONE; /* NF-made: the default graph */
	}
	while (n > 0) {
		uint16_t chunk = RTE_MIN(n, (uint16_t)nf->burst);

		while (sl_dispatch_pending(&nf->disp) &&
		       sl_dispatch_retry(&nf->disp, rte_rdtsc()) != 0)
			sched_yield();
		sl_dispatch(&nf->disp, pkts, chunk);
		pkts += chunk;
		n = (uint16_t)(n - chunk);
	}
}

/* ---- the loop ----------------------------------------------------- */

/* Processes one received burst and hands it on. Inlined into the loop
 * (nfi_handle() is the same for the other files): a chain of one NF is
 * this loop and little else, and the call costs there. */
static __rte_always_inline void
handle(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_ctx_stats *st = &nf->slot->nf;
	const struct sl_nf_ops *ops = nf->ops;
	uint64_t bytes = 0, t0;

	for (uint16_t i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	if (unlikely(st->rx_pkts == 0))
		__atomic_store_n(&nf->slot->first_pkt_tsc, rte_rdtsc(),
				 __ATOMIC_RELEASE);
	st->rx_pkts += n;
	st->rx_bytes += bytes;
	st->bursts++;
	t0 = rte_rdtsc();
	if (ops->process != NULL) {
		ops->process(nf, pkts, n);
	} else {
		for (uint16_t i = 0; i < n; i++)
			nf_meta(nf, pkts[i])->verdict =
				ops->process_pkt(nf, pkts[i]);
	}
	st->cycles += rte_rdtsc() - t0;
	sl_dispatch(&nf->disp, pkts, n);
}

/*
 * Takes a burst from our rx ring into pkts and tags it ours. The ring
 * copies the burst into slot->hand, in shared memory, before it moves its
 * tail, and the packets keep their producer's tag until retagged here;
 * hand is cleared only after. So if we are killed in between, sluiced
 * finds the burst in hand (or still in the ring) and reclaims it.
 */
static __rte_always_inline unsigned int
rx_burst(struct sl_nf *nf, struct rte_mbuf **pkts)
{
	struct sl_nf_slot *slot = nf->slot;
	uint16_t self = (uint16_t)(nf->instance + 1);
	unsigned int n;

	n = rte_ring_sc_dequeue_burst(slot->rx, (void **)slot->hand, nf->burst,
				      NULL);
	if (n == 0)
		return 0;
	NFI_TEST_KILL_TAKE(nf);
	/* The mbufs were last written on another core: ask for both lines
	 * we use (header, and the meta in the dynfield area) of the whole
	 * burst at once, so the misses overlap instead of queueing. */
	for (unsigned int i = 0; i < n; i++) {
		pkts[i] = slot->hand[i];
		rte_prefetch0(pkts[i]);
		rte_prefetch0(nf_meta(nf, pkts[i]));
	}
	for (unsigned int i = 0; i < n; i++)
		nf_meta(nf, pkts[i])->owner = self;
	sl_flow_prefetch(nf->shm, pkts, (uint16_t)n);
	/* The tags are stored before hand is cleared. */
	rte_atomic_thread_fence(__ATOMIC_RELEASE);
	memset(slot->hand, 0, n * sizeof(slot->hand[0]));
	return n;
}

void
nfi_handle(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	handle(nf, pkts, n);
}

unsigned int
nfi_rx_burst(struct sl_nf *nf, struct rte_mbuf **pkts)
{
	return rx_burst(nf, pkts);
}

static void
idle(struct sl_nf *nf, uint64_t now, uint64_t *idle_since)
{
	struct sl_nf_slot *slot = nf->slot;
	uint32_t w;

	if (nf->mode == SL_MODE_POLL) {
		rte_pause();
		return;
	}
	if (*idle_since == 0)
		*idle_since = now;
	if (now - *idle_since < nf->shm->idle_sleep_cycles ||
	    sl_dispatch_pending(&nf->disp)) {
		sched_yield();
		return;
	}
	w = __atomic_load_n(&slot->wake, __ATOMIC_ACQUIRE);
	__atomic_store_n(&slot->sleeping, 1, __ATOMIC_RELAXED);
	/* Pairs with the producer's fence in wake_if_sleeping(). */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rte_ring_count(slot->rx) == 0 && !g_stop && !g_reload) {
		slot->nf.sleeps++;
		sl_futex_wait(&slot->wake, w, SLEEP_TIMEOUT_NS);
	}
	__atomic_store_n(&slot->sleeping, 0, __ATOMIC_RELAXED);
}

/*
 * 1 once sluiced has gone away without a clean shutdown (killed). Its pid
 * alone does not say so: a killed sluiced that its parent has not reaped
 * yet is a zombie, which kill(pid, 0) still finds (and a pid may be reused).
 * The lock it held on its DPDK config file goes as soon as it dies.
 */
int
nfi_mgr_gone(const struct sl_nf *nf)
{
	return (kill(nf->shm->mgr_pid, 0) != 0 && errno == ESRCH) ||
	       !rte_eal_primary_proc_alive(nf->config);
}

static int
must_stop(const struct sl_nf *nf)
{
	return g_stop || nf->stop ||
	       __atomic_load_n(&nf->slot->stop, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE);
}

void
nfi_run(struct sl_nf *nf)
{
	const struct sl_nf_ops *ops = nf->ops;
	struct sl_nf_slot *slot = nf->slot;
	struct rte_mbuf *pkts[SL_BURST_MAX];
	uint64_t hz = rte_get_tsc_hz();
	uint64_t tick_cycles = hz / 1000 * (ops->tick_ms ? ops->tick_ms : 1000);
	uint64_t next_tick = rte_rdtsc() + tick_cycles;
	uint64_t mgr_check_cycles = hz / 10, next_mgr_check = 0;
	uint64_t inbox_cycles = hz / 1000, next_inbox = 0;
	uint64_t idle_since = 0;

	/* Online: from here on we read routing state (graphs, flow entries)
	 * and sluiced's grace periods and hang watchdog count our loops. */
	__atomic_store_n(&slot->sleeping, 0, __ATOMIC_RELAXED);
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (!must_stop(nf)) {
		uint64_t now = rte_rdtsc();
		unsigned int n;

		if (now >= next_mgr_check) {
			/* Every 100 ms: was sluiced killed? */
			if (nfi_mgr_gone(nf)) {
				fprintf(stderr,
					"%s: sluiced '%s' (pid %d) is gone "
					"(killed, or it crashed: see its log); "
					"stopping. Start sluiced again "
					"(sluiced -- --name %s, or sluice up), "
					"then this NF\n",
					nf->prog, nf->node, nf->shm->mgr_pid,
					nf->node);
				nf->mgr_dead = 1;
				break;
			}
			next_mgr_check = now + mgr_check_cycles;
		}
		if (now >= next_inbox) {
			nfi_inbox_poll(nf);
			next_inbox = now + inbox_cycles;
		}
		__atomic_store_n(&slot->heartbeat, slot->heartbeat + 1,
				 __ATOMIC_RELEASE);
		if (reload_take()) {
			if (ops->reload != NULL)
				ops->reload(nf);
		}
		if (ops->tick != NULL && now >= next_tick) {
			ops->tick(nf, sl_now_ns());
			next_tick = now + tick_cycles;
		}
		if (sl_dispatch_pending(&nf->disp) &&
		    sl_dispatch_retry(&nf->disp, now) != 0) {
			slot->nf.stalls++;
			idle(nf, now, &idle_since);
			continue;
		}
		n = rx_burst(nf, pkts);
		if (n == 0) {
			idle(nf, now, &idle_since);
			continue;
		}
		idle_since = 0;
		handle(nf, pkts, (uint16_t)n);
	}
}

/*
 * After deregistration no producer can reach our rx ring any more: serve
 * what is left in it, then hand on what waits on a full next hop (bounded
 * by the backpressure bound, after which it is dropped and counted).
 */
void
nfi_drain(struct sl_nf *nf)
{
	struct rte_mbuf *pkts[SL_BURST_MAX];
	unsigned int n;

	if (nf->mgr_dead ||
	    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE))
		return;
	for (;;) {
		__atomic_store_n(&nf->slot->heartbeat, nf->slot->heartbeat + 1,
				 __ATOMIC_RELEASE);
		if (sl_dispatch_pending(&nf->disp)) {
			if (sl_dispatch_retry(&nf->disp, rte_rdtsc()) != 0)
				sched_yield();
			continue;
		}
		n = nfi_rx_burst(nf, pkts);
		if (n == 0)
			break;
		nfi_handle(nf, pkts, (uint16_t)n);
	}
}
