/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-pipe: the bare two-process pipeline, bench/port.py's "pipe"
 * reference. What any design with the NF in its own process (Sluice's,
 * OpenNetVM's) pays on this host before doing anything: one thread of a
 * primary reads port 0 and enqueues each burst into a ring; a secondary
 * process dequeues and transmits on its own TX queue of port 1. No
 * metadata, no ownership, no statistics, no chain: sluiced's port path
 * (poll mode, --flow-lookup off) with everything Sluice does taken out.
 *
 *   sluice-pipe EAL_ARGS -- primary [OPTIONS]   ports 0 (in) and 1 (out)
 *   sluice-pipe EAL_ARGS -- nf                  --proc-type=secondary
 *
 * Layout as sluiced's in poll mode: the primary's main lcore prints once a
 * second, its second lcore is the reader; the secondary polls on its one
 * lcore. The primary waits for the secondary, then prints one JSON object
 * per second ({"second": i, "out_pps": ..., "reader_stalls": ...}: packets
 * port 1 sent, times the reader found the ring without room for a read),
 * then a last one with "done" and the totals, and tells the secondary to
 * stop. With a finite capture (no infinite_rx), --seconds 0 runs until
 * port 0 has given nothing for a second and everything read has left.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "sluice/nf.h"

#define PROG "sluice-pipe"
#define RING_NAME "sl_pipe_ring"
#define STATE_NAME "sl_pipe_state"
#define POOL_NAME "sl_pipe_pkts"
#define BURST_MAX 256
#define NF_TXQ 1 /* the secondary's TX queue of port 1 */

/*
 * Shared by the two processes. The nf polls stop in every loop: nothing
 * written often may share its cache line, or the two CPUs would trade
 * that line at every loop and the pipeline would measure that instead.
 */
struct pipe_state {
	volatile int stop;      /* the primary's, once */
	volatile int nf_ready;  /* the nf's, once */
	uint16_t out_port;      /* the port the nf transmits on */
	alignas(RTE_CACHE_LINE_SIZE) volatile uint64_t nf_pkts; /* the nf's */
};

struct pipe_opts {
	unsigned int mbufs;     /* sluiced --mbufs */
	unsigned int cache;     /* sluiced --mbuf-cache */
	unsigned int ring;      /* sluiced --ring-size */
	unsigned int rx_burst;  /* sluiced --rx-burst */
	unsigned int burst;     /* sluiced --burst: what the NF takes */
	unsigned int seconds;
	unsigned int wait_nf;   /* seconds to wait for the secondary */
};

static volatile int g_signal;

static void
on_signal(int sig)
{
	g_signal = sig;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: " PROG " EAL_ARGS -- primary [--mbufs N] [--mbuf-cache N] "
		"[--ring-size N] [--rx-burst N] [--burst N] [--seconds S] "
		"[--wait-nf S]\n"
		"       " PROG " EAL_ARGS --proc-type=secondary -- nf [--burst N]\n"
		"The primary needs two ports from its EAL arguments: port 0 is "
		"read, port 1 (with two TX queues) is written by the nf.\n");
}

/* libsluice's option parser (sl_opt_number), into an unsigned int. */
static int
parse_uint(const char *opt, const char *s, unsigned int lo, unsigned int hi,
	   unsigned int *out)
{
	double v;

	if (sl_opt_number(PROG, opt, s, lo, hi, 0, &v) != 0)
		return -1;
	*out = (unsigned int)v;
	return 0;
}

static int
parse_opts(int argc, char **argv, struct pipe_opts *o)
{
	static const struct option longopts[] = {
		{"mbufs", required_argument, NULL, 'm'},
		{"mbuf-cache", required_argument, NULL, 'c'},
		{"ring-size", required_argument, NULL, 'r'},
		{"rx-burst", required_argument, NULL, 'x'},
		{"burst", required_argument, NULL, 'b'},
		{"seconds", required_argument, NULL, 's'},
		{"wait-nf", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	int c, idx = 0;

	/* sluiced's defaults, so that the two differ only in what runs */
	*o = (struct pipe_opts){.mbufs = 65535, .cache = 256, .ring = 4096,
				.rx_burst = 64, .burst = 32, .seconds = 5,
				.wait_nf = 30};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
		char name[32];
		int rc = 0;

		snprintf(name, sizeof(name), "--%s", longopts[idx].name);
		switch (c) {
		case 'm': rc = parse_uint(name, optarg, 1023, 1u << 24, &o->mbufs); break;
		case 'c': rc = parse_uint(name, optarg, 0, RTE_MEMPOOL_CACHE_MAX_SIZE, &o->cache); break;
		case 'r': rc = parse_uint(name, optarg, 64, 1u << 20, &o->ring); break;
		case 'x': rc = parse_uint(name, optarg, 1, BURST_MAX, &o->rx_burst); break;
		case 'b': rc = parse_uint(name, optarg, 1, BURST_MAX, &o->burst); break;
		case 's': rc = parse_uint(name, optarg, 0, 86400, &o->seconds); break;
		case 'w': rc = parse_uint(name, optarg, 1, 3600, &o->wait_nf); break;
		default:
			fprintf(stderr, PROG ": unknown option or missing value: "
					"%s\n", argv[optind - 1]);
			usage();
			return -1;
		}
		if (rc != 0)
			return -1;
	}
	if (optind != argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n",
			argv[optind]);
		usage();
		return -1;
	}
	if (!rte_is_power_of_2(o->ring)) {
		fprintf(stderr, PROG ": --ring-size %u is not a power of 2\n",
			o->ring);
		return -1;
	}
	if (o->rx_burst >= o->ring) {
		fprintf(stderr, PROG ": --rx-burst %u must be below --ring-size "
				"%u\n", o->rx_burst, o->ring);
		return -1;
	}
	return 0;
}

/* -- primary ---------------------------------------------------------- */

/* The primary's, in its own memory: the reader's loop reads only this. */
struct reader {
	struct rte_ring *ring;
	struct pipe_state *st;
	unsigned int rx_burst;
	volatile int stop;         /* the main lcore's, once */
	volatile uint64_t rx_pkts; /* written by the reader only */
	volatile uint64_t stalls;
};

static int
reader_loop(void *arg)
{
	struct reader *r = arg;
	struct rte_mbuf *pkts[BURST_MAX];

	while (!r->stop) {
		uint16_t n;

		/* Backpressure as sluiced's: a port is read only when the
		 * ring can take the whole read (a single producer: room seen
		 * stays room). */
		if (rte_ring_free_count(r->ring) < r->rx_burst) {
			r->stalls++;
			rte_pause();
			continue;
		}
		n = rte_eth_rx_burst(0, 0, pkts, (uint16_t)r->rx_burst);
		if (n == 0)
			continue;
		rte_ring_sp_enqueue_bulk(r->ring, (void **)pkts, n, NULL);
		r->rx_pkts += n;
	}
	return 0;
}

static int
port_setup(uint16_t port, uint16_t ntx, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, 1, ntx, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 1024,
					    (unsigned int)rte_socket_id(), NULL,
					    mp);
	for (uint16_t q = 0; rc == 0 && q < ntx; q++)
		rc = rte_eth_tx_queue_setup(port, q, 1024,
					    (unsigned int)rte_socket_id(), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc != 0)
		fprintf(stderr, PROG ": cannot set up port %u: %s\n", port,
			rte_strerror(-rc));
	return rc;
}

static uint64_t
port_out_pkts(void)
{
	struct rte_eth_stats s;

	if (rte_eth_stats_get(1, &s) != 0)
		return 0;
	return s.opackets;
}

static int
run_primary(const struct pipe_opts *o)
{
	const struct rte_memzone *mz;
	struct rte_mempool *mp;
	struct reader r;
	unsigned int lc;
	uint64_t hz = rte_get_tsc_hz(), t0, last_out = 0, last_rx = 0;
	uint64_t last_stalls = 0, idle_since = 0;
	int rc = 1;

	memset(&r, 0, sizeof(r));
	if (rte_eth_dev_count_avail() != 2) {
		fprintf(stderr, PROG ": primary needs exactly 2 ports (--vdev "
				"...), has %u: port 0 is read, port 1 written\n",
			rte_eth_dev_count_avail());
		return 1;
	}
	lc = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
	if (lc >= RTE_MAX_LCORE) {
		fprintf(stderr, PROG ": primary needs two lcores (-l A,B): "
				"the main one prints, the second reads\n");
		return 1;
	}
	mp = rte_pktmbuf_pool_create(POOL_NAME, o->mbufs, o->cache, 0,
				     RTE_MBUF_DEFAULT_BUF_SIZE,
				     (int)rte_socket_id());
	if (mp == NULL) {
		fprintf(stderr, PROG ": cannot create a pool of %u packet "
				"buffers: %s; lower --mbufs or reserve more "
				"hugepages\n", o->mbufs, rte_strerror(rte_errno));
		return 1;
	}
	mz = rte_memzone_reserve(STATE_NAME, sizeof(struct pipe_state),
				 (int)rte_socket_id(), 0);
	r.ring = rte_ring_create(RING_NAME, o->ring, (int)rte_socket_id(),
				 RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (mz == NULL || r.ring == NULL) {
		fprintf(stderr, PROG ": cannot create the ring or state: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	r.st = mz->addr;
	memset(r.st, 0, sizeof(*r.st));
	r.st->out_port = 1;
	r.rx_burst = o->rx_burst;
	if (port_setup(0, 1, mp) != 0 || port_setup(1, NF_TXQ + 1, mp) != 0)
		goto out;
	printf("{\"ready\": true, \"pool\": %u, \"ring\": %u, \"rx_burst\": "
	       "%u}\n", o->mbufs, o->ring, o->rx_burst);
	fflush(stdout);
	t0 = rte_get_tsc_cycles();
	while (!r.st->nf_ready) {
		if (g_signal || rte_get_tsc_cycles() - t0 > o->wait_nf * hz) {
			fprintf(stderr, PROG ": no nf attached within %u s: "
					"start '" PROG " EAL_ARGS "
					"--proc-type=secondary -- nf' with the "
					"same --file-prefix\n", o->wait_nf);
			goto out;
		}
		usleep(10000);
	}
	if (rte_eal_remote_launch(reader_loop, &r, lc) != 0) {
		fprintf(stderr, PROG ": cannot start the reader on lcore %u\n",
			lc);
		goto out;
	}
	t0 = rte_get_tsc_cycles();
	for (unsigned int i = 1; !g_signal; i++) {
		uint64_t out, rx, stalls, until = t0 + i * hz;

		while (rte_get_tsc_cycles() < until && !g_signal)
			usleep(1000);
		out = port_out_pkts();
		rx = r.rx_pkts;
		stalls = r.stalls;
		printf("{\"second\": %u, \"out_pps\": %" PRIu64
		       ", \"reader_stalls\": %" PRIu64 "}\n",
		       i, out - last_out, stalls - last_stalls);
		fflush(stdout);
		if (o->seconds == 0) {
			/* finite capture: done once the port is dry and the
			 * nf sent all it was given */
			idle_since = rx == last_rx ? idle_since + 1 : 0;
			if (idle_since >= 1 && out == rx)
				break;
		} else if (i >= o->seconds) {
			break;
		}
		last_out = out;
		last_rx = rx;
		last_stalls = stalls;
	}
	r.stop = 1;
	rte_eal_wait_lcore(lc);
	r.st->stop = 1;
	printf("{\"done\": true, \"in_pkts\": %" PRIu64 ", \"out_pkts\": %"
	       PRIu64 ", \"nf_pkts\": %" PRIu64 ", \"reader_stalls\": %"
	       PRIu64 "}\n", r.rx_pkts, port_out_pkts(), r.st->nf_pkts,
	       r.stalls);
	fflush(stdout);
	rc = g_signal ? 1 : 0;
	sleep(1); /* the nf sees stop and detaches */
out:
	if (r.st != NULL)
		r.st->stop = 1;
	for (uint16_t p = 0; p < 2; p++) {
		rte_eth_dev_stop(p);
		rte_eth_dev_close(p);
	}
	return rc;
}

/* -- secondary -------------------------------------------------------- */

static int
run_nf(const struct pipe_opts *o)
{
	const struct rte_memzone *mz = rte_memzone_lookup(STATE_NAME);
	struct rte_ring *ring = rte_ring_lookup(RING_NAME);
	struct rte_mbuf *pkts[BURST_MAX];
	struct pipe_state *st;
	uint64_t sent_total = 0;

	if (rte_eal_process_type() != RTE_PROC_SECONDARY) {
		fprintf(stderr, PROG ": nf runs as a secondary: add "
				"--proc-type=secondary and the primary's "
				"--file-prefix to its EAL arguments\n");
		return 1;
	}
	if (mz == NULL || ring == NULL) {
		fprintf(stderr, PROG ": no primary's ring or state here: start "
				"'" PROG " ... -- primary' first, with the same "
				"--file-prefix\n");
		return 1;
	}
	st = mz->addr;
	/* Only the output port: the input one may fail to attach here
	 * (DPDK 22.11's pcap driver keeps 64 characters of its arguments
	 * for secondaries, and a longer capture path is cut), and the nf
	 * does not use it. */
	if (!rte_eth_dev_is_valid_port(st->out_port)) {
		fprintf(stderr, PROG ": port %u (out) is not attached here; see "
				"the EAL messages above\n", st->out_port);
		return 1;
	}
	st->nf_ready = 1;
	while (!st->stop && !g_signal) {
		unsigned int n = rte_ring_sc_dequeue_burst(ring, (void **)pkts,
							   o->burst, NULL);
		uint16_t sent = 0;

		if (n == 0) {
			rte_pause();
			continue;
		}
		/* Everything goes out: a full TX queue waits, nothing is
		 * dropped (net_null never is full). */
		while (sent < n)
			sent += rte_eth_tx_burst(st->out_port, NF_TXQ, pkts + sent,
						 (uint16_t)(n - sent));
		sent_total += n;
		st->nf_pkts = sent_total;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct pipe_opts o;
	const char *role;
	int ret, rc;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, PROG ": EAL init failed (the EAL messages above "
				"say why): check the EAL arguments before '--' "
				"and the hugepages; an nf needs its primary "
				"running, with the same --file-prefix\n");
		return 1;
	}
	argc -= ret;
	argv += ret;
	if (argc < 2 || (strcmp(argv[1], "primary") != 0 &&
			 strcmp(argv[1], "nf") != 0)) {
		usage();
		rte_eal_cleanup();
		return 2;
	}
	role = argv[1];
	if (parse_opts(argc - 1, argv + 1, &o) != 0) {
		rte_eal_cleanup();
		return 2;
	}
	rc = strcmp(role, "primary") == 0 ? run_primary(&o) : run_nf(&o);
	rte_eal_cleanup();
	return rc;
}
