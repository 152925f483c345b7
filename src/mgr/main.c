/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced: the Sluice node manager (DPDK primary process).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sl_futex.h"
#include "sluiced.h"

#define MAX_EAL_ARGS 128

struct sl_mgr g_mgr;

void
sl_log(const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "sluiced[%s] %ld.%03ld: %s\n", g_mgr.o.name,
		(long)ts.tv_sec, ts.tv_nsec / 1000000, buf);
}

static void
on_signal(int sig)
{
	g_mgr.quit = sig;
}

/* On stdout: it is asked for (-h, --help), never printed on an error. */
static void
usage(void)
{
	printf("usage: sluiced [EAL args] -- [options]\n"
		"EAL args: DPDK's own (-l, --lcores, --vdev, --file-prefix, "
		"...; DPDK's EAL parameters guide); sluiced adds --file-prefix, "
		"--no-pci, --log-level, --base-virtaddr and --socket-mem when "
		"they are not given (docs/sluiced.md)\n"
		"options (-h, --help: this text):\n"
		"  --name NAME            node name: socket, file prefix "
		"(default sluice)\n"
		"  --port NAME=DEVICE     a port, e.g. in=net_pcap0,rx_pcap=a.pcap "
		"(repeat)\n"
		"  --chain HOPS           default chain, e.g. "
		"firewall,monitor,port:out\n"
		"  --mode shared|poll     sluiced's I/O threads yield/sleep when "
		"idle, or busy poll (shared)\n"
		"  --handoff direct|mgr   NF->NF: enqueue straight into the next "
		"NF, or via the I/O thread (direct)\n"
		"  --socket PATH          control socket "
		"(/var/run/sluice/NAME.sock)\n"
		"  --max-nfs N            NF instances (128)\n"
		"  --max-services N       services (64)\n"
		"  --ring-size N          NF rx/tx ring entries, power of 2 "
		"(4096)\n"
		"  --mbufs N              packet buffers per pool (65535)\n"
		"  --mbuf-cache N         per-lcore pool cache (256)\n"
		"  --burst N              packets per burst taken from a ring "
		"and handed on, <= %d (32)\n"
		"  --rx-burst N           packets read from a port in one call, "
		"<= %d (64)\n"
		"  --backpressure-us N    how long a full next hop is waited "
		"for before dropping (100000)\n"
		"  --idle-sleep-us N      idle time before a shared-mode thread "
		"sleeps (1000)\n"
		"  --tx-retry-us N        how long a full port TX queue is "
		"retried (1000)\n"
		"  --nf-hang-ms N         an NF that is not asleep and has not "
		"looped for N ms is hung: it is killed, so that its death "
		"frees what it holds (1000; 0: never)\n"
		"  --scale-register-ms N  a replica nf.scale started that has "
		"not registered within N ms is stopped (30000)\n"
		"  --scale-kill-ms N      and killed if still there N ms after "
		"SIGTERM (5000)\n"
		"  --rxd N / --txd N      port descriptors per queue (1024)\n"
		"  --nf-mem MB            hugepage memory set aside for NFs' "
		"own tables (256)\n"
		"  --nf-tx-queues N       per port, TX queues NFs transmit on "
		"directly (4; 0: all TX through sluiced's TX thread)\n"
		"  --nf-mbuf-cache 0|1    give each NF a packet-buffer cache of "
		"its own, returned to the pool when the NF is gone (1)\n"
		"  --flow-lookup off|cached|naive  flow director: none (every "
		"packet takes the default graph), once at ingress cached in "
		"the packet, or again at every hop (cached)\n"
		"  --flow-capacity N      flow-table entries (262144)\n"
		"  --flow-capacity-v6 N   of which IPv6 flows (their own table; "
		"a quarter of --flow-capacity)\n"
		"  --flow-timeout MS      idle flows age out after MS (30000)\n"
		"  --flow-pins N          pinned instances per flow (4)\n"
		"  --flow-overrides N     cross-layer overrides per flow (2)\n"
		"  --max-graphs N         service graphs (64)\n"
		"  --max-hops N           NF visits a port's packet may make; "
		"one more is dropped as hop_limit: ends loops (4095)\n"
		"  --max-rules N          flow rules (4096)\n"
		"  --max-wildcards N      wildcard cross-layer requests (64)\n"
		"  --control-conns N      control-socket connections at once "
		"(64)\n"
		"  --control-out-kb N     replies and events a control "
		"connection may leave unread; past it sluiced closes it "
		"(4096)\n"
		"  --control-line-kb N    longest request line; a longer "
		"one is refused and its connection closed (1024)\n",
		SL_BURST_MAX, SL_BURST_MAX);
}

static int
parse_u32(const char *opt, const char *v, uint32_t min, uint32_t max,
	  uint32_t *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	/* digits only: strtoul also takes blanks, a sign and "-1" (as ULONG_MAX) */
	if (!isdigit((unsigned char)v[0]) || errno != 0 || *end != '\0' ||
	    x < min || x > max) {
		fprintf(stderr,
			"sluiced: %s '%s' is not a number in %u..%u\n", opt, v,
			min, max);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

static int
parse_opts(struct sl_mgr_opts *o, int argc, char **argv)
{
	enum {
		O_NAME = 256, O_PORT, O_CHAIN, O_MODE, O_HANDOFF, O_SOCKET,
		O_MAXNFS, O_MAXSVC, O_RING, O_MBUFS, O_CACHE, O_BURST, O_RXBURST, O_BP,
		O_IDLE, O_TXRETRY, O_HANG, O_SCALEREG, O_SCALEKILL, O_RXD, O_TXD, O_NFMEM, O_NFTXQ, O_NFCACHE, O_FLOOKUP,
		O_FCAP, O_FCAP6, O_FTIMEOUT, O_FPINS, O_FOVR, O_MAXGRAPHS, O_MAXHOPS, O_MAXRULES,
		O_MAXWILD, O_CTLCONNS, O_CTLOUT, O_CTLLINE, O_HELP
	};
	static const struct option lo[] = {
		{"name", required_argument, NULL, O_NAME},
		{"port", required_argument, NULL, O_PORT},
		{"chain", required_argument, NULL, O_CHAIN},
		{"mode", required_argument, NULL, O_MODE},
		{"handoff", required_argument, NULL, O_HANDOFF},
		{"socket", required_argument, NULL, O_SOCKET},
		{"max-nfs", required_argument, NULL, O_MAXNFS},
		{"max-services", required_argument, NULL, O_MAXSVC},
		{"ring-size", required_argument, NULL, O_RING},
		{"mbufs", required_argument, NULL, O_MBUFS},
		{"mbuf-cache", required_argument, NULL, O_CACHE},
		{"burst", required_argument, NULL, O_BURST},
		{"rx-burst", required_argument, NULL, O_RXBURST},
		{"backpressure-us", required_argument, NULL, O_BP},
		{"idle-sleep-us", required_argument, NULL, O_IDLE},
		{"nf-hang-ms", required_argument, NULL, O_HANG},
		{"scale-register-ms", required_argument, NULL, O_SCALEREG},
		{"scale-kill-ms", required_argument, NULL, O_SCALEKILL},
		{"tx-retry-us", required_argument, NULL, O_TXRETRY},
		{"rxd", required_argument, NULL, O_RXD},
		{"txd", required_argument, NULL, O_TXD},
		{"nf-mem", required_argument, NULL, O_NFMEM},
		{"nf-tx-queues", required_argument, NULL, O_NFTXQ},
		{"nf-mbuf-cache", required_argument, NULL, O_NFCACHE},
		{"flow-lookup", required_argument, NULL, O_FLOOKUP},
		{"flow-capacity", required_argument, NULL, O_FCAP},
		{"flow-capacity-v6", required_argument, NULL, O_FCAP6},
		{"flow-timeout", required_argument, NULL, O_FTIMEOUT},
		{"flow-pins", required_argument, NULL, O_FPINS},
		{"flow-overrides", required_argument, NULL, O_FOVR},
		{"max-graphs", required_argument, NULL, O_MAXGRAPHS},
		{"max-hops", required_argument, NULL, O_MAXHOPS},
		{"max-rules", required_argument, NULL, O_MAXRULES},
		{"max-wildcards", required_argument, NULL, O_MAXWILD},
		{"control-conns", required_argument, NULL, O_CTLCONNS},
		{"control-out-kb", required_argument, NULL, O_CTLOUT},
		{"control-line-kb", required_argument, NULL, O_CTLLINE},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	uint32_t v;
	int c;

	snprintf(o->name, sizeof(o->name), "sluice");
	o->mode = SL_MODE_SHARED;
	o->max_nfs = 128;
	o->max_services = 64;
	o->ring_size = 4096;
	o->mbufs = 65535;
	o->mbuf_cache = 256;
	o->burst = 32;
	/* Port reads: one call for up to 64 amortizes the poll (the driver
	 * call, the first hop's ring head and tail lines, the wake check)
	 * over twice the packets; NF rings stay at --burst, where 64 does
	 * not help a chain of NFs in shared mode (see docs/performance.md,
	 * port path, "Choices these measurements made", session 19). */
	o->rx_burst = 64;
	o->backpressure_us = 100000;
	o->idle_sleep_us = 1000;
	o->nf_hang_ms = 1000;
	o->scale_register_ms = 30000;
	o->scale_kill_ms = 5000;
	o->tx_retry_us = 1000;
	o->rxd = 1024;
	o->txd = 1024;
	o->nf_mem_mb = 256;
	/* NFs transmit on their own TX queues by default, so that the I/O
	 * thread, the port path's bottleneck, only reads ports (see
	 * docs/performance.md, port path, "Choices these measurements
	 * made", session 14). */
	o->nf_txq = 4;
	o->nf_cache = 1;
	o->flow_lookup = SL_LOOKUP_CACHED;
	o->flow_capacity = 1u << 18;
	o->flow_timeout_ms = 30000;
	o->flow_pins = 4;
	o->flow_ovr = 2;
	o->max_graphs = 64;
	o->max_hops = SL_MAX_HOPS;
	o->max_rules = 4096;
	o->max_wild = 64;
	o->ctl_conns = 64;
	o->ctl_out_kb = 4096;
	o->ctl_line_kb = 1024;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_NAME:
			if (!sl_name_valid(optarg) ||
			    strlen(optarg) > SL_NODE_NAME_MAX) {
				fprintf(stderr,
					"sluiced: --name '%s' is not valid: "
					"1-%d characters of A-Z a-z 0-9 _ - .\n",
					optarg, SL_NODE_NAME_MAX);
				return -1;
			}
			snprintf(o->name, sizeof(o->name), "%s", optarg);
			break;
		case O_PORT: {
			char *eq = strchr(optarg, '=');
			struct sl_port_opt *p;

			if (o->n_ports == SL_MAX_PORTS) {
				fprintf(stderr, "sluiced: more than %d ports\n",
					SL_MAX_PORTS);
				return -1;
			}
			if (eq == NULL || eq == optarg || eq[1] == '\0') {
				fprintf(stderr,
					"sluiced: --port '%s' must be "
					"NAME=DEVICE, e.g. "
					"out=net_null0,no-rx=1\n",
					optarg);
				return -1;
			}
			p = &o->ports[o->n_ports];
			*eq = '\0';
			if (!sl_name_valid(optarg)) {
				fprintf(stderr,
					"sluiced: port name '%s' is not valid: "
					"1-%d characters of A-Z a-z 0-9 _ - .\n",
					optarg, SL_NAME_LEN - 1);
				return -1;
			}
			if (strlen(eq + 1) >= sizeof(p->device)) {
				fprintf(stderr,
					"sluiced: --port %s: the device string "
					"is %zu characters, more than %zu: "
					"shorten its paths or arguments\n",
					optarg, strlen(eq + 1),
					sizeof(p->device) - 1);
				return -1;
			}
			for (uint16_t i = 0; i < o->n_ports; i++)
				if (strcmp(o->ports[i].name, optarg) == 0) {
					fprintf(stderr,
						"sluiced: port name '%s' is "
						"given twice\n",
						optarg);
					return -1;
				}
			snprintf(p->name, sizeof(p->name), "%s", optarg);
			snprintf(p->device, sizeof(p->device), "%s", eq + 1);
			o->n_ports++;
			break;
		}
		case O_CHAIN:
			o->chain = optarg;
			break;
		case O_MODE:
			if (strcmp(optarg, "shared") == 0) {
				o->mode = SL_MODE_SHARED;
			} else if (strcmp(optarg, "poll") == 0) {
				o->mode = SL_MODE_POLL;
			} else {
				fprintf(stderr,
					"sluiced: --mode '%s': use shared or "
					"poll\n",
					optarg);
				return -1;
			}
			break;
		case O_HANDOFF:
			if (strcmp(optarg, "direct") == 0) {
				o->handoff = 0;
			} else if (strcmp(optarg, "mgr") == 0) {
				o->handoff = 1;
			} else {
				fprintf(stderr,
					"sluiced: --handoff '%s': use direct or "
					"mgr\n",
					optarg);
				return -1;
			}
			break;
		case O_SOCKET:
			if (strlen(optarg) >= sizeof(o->socket_path)) {
				fprintf(stderr,
					"sluiced: --socket path is longer than "
					"%zu characters\n",
					sizeof(o->socket_path) - 1);
				return -1;
			}
			snprintf(o->socket_path, sizeof(o->socket_path), "%s",
				 optarg);
			break;
		case O_MAXNFS:
			if (parse_u32("--max-nfs", optarg, 1, 4096, &v))
				return -1;
			o->max_nfs = (uint16_t)v;
			break;
		case O_MAXSVC:
			if (parse_u32("--max-services", optarg, 1, 4096, &v))
				return -1;
			o->max_services = (uint16_t)v;
			break;
		case O_RING:
			if (parse_u32("--ring-size", optarg, 64, 1u << 20, &v))
				return -1;
			if (v & (v - 1)) {
				fprintf(stderr,
					"sluiced: --ring-size %u is not a power "
					"of 2: use %u or %u\n",
					v, 1u << (31 - __builtin_clz(v)),
					1u << (32 - __builtin_clz(v)));
				return -1;
			}
			o->ring_size = v;
			break;
		case O_MBUFS:
			if (parse_u32("--mbufs", optarg, 1024, 1u << 24,
				      &o->mbufs))
				return -1;
			break;
		case O_CACHE:
			if (parse_u32("--mbuf-cache", optarg, 0, 512,
				      &o->mbuf_cache))
				return -1;
			break;
		case O_BURST:
			if (parse_u32("--burst", optarg, 1, SL_BURST_MAX,
				      &o->burst))
				return -1;
			break;
		case O_RXBURST:
			if (parse_u32("--rx-burst", optarg, 1, SL_BURST_MAX,
				      &o->rx_burst))
				return -1;
			break;
		case O_BP:
			if (parse_u32("--backpressure-us", optarg, 0, 10000000,
				      &o->backpressure_us))
				return -1;
			break;
		case O_IDLE:
			if (parse_u32("--idle-sleep-us", optarg, 0, 10000000,
				      &o->idle_sleep_us))
				return -1;
			break;
		case O_HANG:
			if (parse_u32("--nf-hang-ms", optarg, 0, 3600u * 1000,
				      &o->nf_hang_ms))
				return -1;
			break;
		case O_SCALEREG:
			if (parse_u32("--scale-register-ms", optarg, 1,
				      3600u * 1000, &o->scale_register_ms))
				return -1;
			break;
		case O_SCALEKILL:
			if (parse_u32("--scale-kill-ms", optarg, 1, 3600u * 1000,
				      &o->scale_kill_ms))
				return -1;
			break;
		case O_TXRETRY:
			if (parse_u32("--tx-retry-us", optarg, 0, 10000000,
				      &o->tx_retry_us))
				return -1;
			break;
		case O_RXD:
			if (parse_u32("--rxd", optarg, 32, 32768, &v))
				return -1;
			o->rxd = (uint16_t)v;
			break;
		case O_TXD:
			if (parse_u32("--txd", optarg, 32, 32768, &v))
				return -1;
			o->txd = (uint16_t)v;
			break;
		case O_NFMEM:
			if (parse_u32("--nf-mem", optarg, 0, 1u << 20,
				      &o->nf_mem_mb))
				return -1;
			break;
		case O_NFTXQ:
			if (parse_u32("--nf-tx-queues", optarg, 0, 1023,
				      &o->nf_txq))
				return -1;
			break;
		case O_NFCACHE:
			if (parse_u32("--nf-mbuf-cache", optarg, 0, 1,
				      &o->nf_cache))
				return -1;
			break;
		case O_FLOOKUP:
			if (strcmp(optarg, "off") == 0)
				o->flow_lookup = SL_LOOKUP_OFF;
			else if (strcmp(optarg, "cached") == 0)
				o->flow_lookup = SL_LOOKUP_CACHED;
			else if (strcmp(optarg, "naive") == 0)
				o->flow_lookup = SL_LOOKUP_NAIVE;
			else {
				fprintf(stderr,
					"sluiced: --flow-lookup '%s': use off, "
					"cached or naive\n",
					optarg);
				return -1;
			}
			break;
		case O_FCAP:
			if (parse_u32("--flow-capacity", optarg, 64, 1u << 26,
				      &o->flow_capacity))
				return -1;
			break;
		case O_FCAP6:
			if (parse_u32("--flow-capacity-v6", optarg, 64,
				      1u << 26, &o->flow_capacity6))
				return -1;
			break;
		case O_FTIMEOUT:
			if (parse_u32("--flow-timeout", optarg, 1,
				      24u * 3600 * 1000, &o->flow_timeout_ms))
				return -1;
			break;
		case O_FPINS:
			if (parse_u32("--flow-pins", optarg, 0, 64,
				      &o->flow_pins))
				return -1;
			break;
		case O_FOVR:
			if (parse_u32("--flow-overrides", optarg, 0, 64,
				      &o->flow_ovr))
				return -1;
			break;
		case O_MAXGRAPHS:
			if (parse_u32("--max-graphs", optarg, 1, 200, &v))
				return -1;
			o->max_graphs = (uint16_t)v;
			break;
		case O_MAXHOPS:
			if (parse_u32("--max-hops", optarg, 1, SL_MAX_HOPS, &v))
				return -1;
			o->max_hops = (uint16_t)v;
			break;
		case O_MAXRULES:
			if (parse_u32("--max-rules", optarg, 1, 1u << 20,
				      &o->max_rules))
				return -1;
			break;
		case O_MAXWILD:
			if (parse_u32("--max-wildcards", optarg, 0, 4096,
				      &o->max_wild))
				return -1;
			break;
		case O_CTLCONNS:
			if (parse_u32("--control-conns", optarg, 1, 4096,
				      &o->ctl_conns))
				return -1;
			break;
		case O_CTLOUT:
			if (parse_u32("--control-out-kb", optarg, 4, 1u << 20,
				      &o->ctl_out_kb))
				return -1;
			break;
		case O_CTLLINE:
			if (parse_u32("--control-line-kb", optarg, 1, 1u << 20,
				      &o->ctl_line_kb))
				return -1;
			break;
		case 'h':
		case O_HELP:
			usage();
			exit(0);
		default:
			fprintf(stderr,
				"sluiced: unknown option '%s' (EAL options go "
				"before '--'; see sluiced -- --help)\n",
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sluiced: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	if (o->socket_path[0] == '\0')
		snprintf(o->socket_path, sizeof(o->socket_path),
			 "/var/run/sluice/%s.sock", o->name);
	/* IPv6 flows: their own table, a share of the whole. */
	if (o->flow_capacity6 > o->flow_capacity) {
		fprintf(stderr,
			"sluiced: --flow-capacity-v6 %u is more than "
			"--flow-capacity %u: IPv6 flows are a share of all "
			"flows; lower it or raise --flow-capacity\n",
			o->flow_capacity6, o->flow_capacity);
		return -1;
	}
	/* An NF waits up to --backpressure-us on a full next hop without
	 * looping: that is not a hang. */
	if (o->nf_hang_ms != 0 &&
	    (uint64_t)o->nf_hang_ms * 1000 <= o->backpressure_us) {
		fprintf(stderr,
			"sluiced: --nf-hang-ms %u is not longer than "
			"--backpressure-us %u (an NF may wait that long on a "
			"full next hop): raise it, or 0 to never call an NF "
			"hung\n",
			o->nf_hang_ms, o->backpressure_us);
		return -1;
	}
	if (o->flow_capacity6 == 0)
		o->flow_capacity6 = RTE_MIN(o->flow_capacity,
					    RTE_MAX(64u, o->flow_capacity / 4));
	return 0;
}

/* ---- start-up checks: each says what is wrong and what to do ------- */

static int
meminfo(const char *key, unsigned long *val)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");
	size_t klen = strlen(key);

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			*val = strtoul(line + klen + 1, NULL, 10);
			fclose(f);
			return 0;
		}
	fclose(f);
	return -1;
}

static int
hugetlbfs_mounted(void)
{
	char line[512];
	FILE *f = fopen("/proc/mounts", "r");
	int found = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, " hugetlbfs ") != NULL)
			found = 1;
	fclose(f);
	return found;
}

/*
 * Hugepage memory sluiced needs: packet pool, rings, slack for DPDK's own
 * structures, and --nf-mem for NFs' tables. It is all reserved at start-up
 * (--socket-mem): NFs are secondary processes, and a secondary that makes
 * the shared heap grow or shrink goes through DPDK's multi-process
 * memory hotplug, an IPC round trip with every process that was seen to
 * stall NFs at shutdown. Preallocated memory is never hot-plugged.
 */
static unsigned long long
memory_need(const struct sl_mgr_opts *o)
{
	return (unsigned long long)o->mbufs *
		       (RTE_MBUF_DEFAULT_BUF_SIZE + sizeof(struct rte_mbuf) +
			128) +
	       (unsigned long long)o->max_nfs * 2 * o->ring_size * 8 +
	       (64ull << 20) + ((unsigned long long)o->nf_mem_mb << 20) +
	       (o->flow_lookup == SL_LOOKUP_OFF
			? 0
			: ((unsigned long long)o->flow_capacity +
			   o->flow_capacity6) *
				  (sl_flow_entry_bytes(o) + 200));
}

static int
precheck(const struct sl_mgr_opts *o)
{
	unsigned long free_pages = 0, page_kb = 0;
	unsigned long long need;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr,
			"sluiced: must run as root: it maps hugepages and owns "
			"the ports; run it with sudo\n");
		return -1;
	}
	if (!hugetlbfs_mounted()) {
		fprintf(stderr,
			"sluiced: hugetlbfs is not mounted: run "
			"scripts/hugepages.sh (or: mount -t hugetlbfs nodev "
			"/dev/hugepages)\n");
		return -1;
	}
	if (meminfo("HugePages_Free", &free_pages) != 0 ||
	    meminfo("Hugepagesize", &page_kb) != 0 || free_pages == 0) {
		fprintf(stderr,
			"sluiced: no free hugepages (HugePages_Free is 0): "
			"reserve some with scripts/hugepages.sh (or: echo 1024 "
			"> /proc/sys/vm/nr_hugepages), or stop what holds "
			"them\n");
		return -1;
	}
	need = memory_need(o);
	if ((unsigned long long)free_pages * page_kb * 1024 < need) {
		fprintf(stderr,
			"sluiced: %lu free hugepages of %lu kB hold %llu MiB, "
			"but --mbufs %u, --ring-size %u and --nf-mem need about "
			"%llu MiB: reserve more (scripts/hugepages.sh PAGES) "
			"or lower --mbufs / --nf-mem / --flow-capacity\n",
			free_pages, page_kb,
			(unsigned long long)free_pages * page_kb / 1024,
			o->mbufs, o->ring_size, need >> 20);
		return -1;
	}

	/* The control socket: in use by a live sluiced, or stale. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd >= 0 &&
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		fprintf(stderr,
			"sluiced: control socket %s is in use by a running "
			"sluiced: stop it, or start this one with another "
			"--name\n",
			o->socket_path);
		return -1;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ---- shared memory ------------------------------------------------- */

static void
zero_meta(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	(void)mp;
	(void)idx;
	memset(sl_meta(obj, *(int *)arg), 0, sizeof(struct sl_pkt_meta));
}

/*
 * The packet pool of a NUMA socket, created on first use: a port receives
 * into the pool of its own socket, so a NIC never writes packets into
 * another socket's memory (SOCKET_ID_ANY, a socket unknown, means the
 * main pool). Every pool has --mbufs buffers. Called before any NF
 * attaches (shm_init, then the ports), so NFs see a complete list.
 */
struct rte_mempool *
sl_pool_for_socket(struct sl_mgr *m, int socket, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	char name[64]; /* at most 26 characters: fits RTE_MEMPOOL_NAMESIZE */
	struct rte_mempool *mp;

	if (shm->n_pools > 0 && (socket < 0 || socket >= RTE_MAX_NUMA_NODES))
		return shm->pktmbuf_pool;
	for (uint32_t i = 0; i < shm->n_pools; i++)
		if (shm->pools[i]->socket_id == socket)
			return shm->pools[i];
	if (shm->n_pools == 0)
		snprintf(name, sizeof(name), "sl_%.16s_pkts", m->o.name);
	else
		snprintf(name, sizeof(name), "sl_%.16s_pkts%d", m->o.name,
			 socket);
	mp = rte_pktmbuf_pool_create(name, m->o.mbufs, m->o.mbuf_cache, 0,
				     RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (mp == NULL) {
		snprintf(err, errlen,
			 "cannot create a pool of %u packet buffers on NUMA "
			 "socket %d: %s; lower --mbufs or reserve more "
			 "hugepages on that socket",
			 m->o.mbufs, socket, rte_strerror(rte_errno));
		return NULL;
	}
	rte_mempool_obj_iter(mp, zero_meta, &shm->dynfield_offset);
	shm->pools[shm->n_pools++] = mp;
	return mp;
}

static int
shm_init(struct sl_mgr *m)
{
	const struct sl_mgr_opts *o = &m->o;
	static const struct rte_mbuf_dynfield meta_desc = {
		.name = SL_DYNFIELD_NAME,
		.size = sizeof(struct sl_pkt_meta),
		.align = __alignof__(struct sl_pkt_meta),
	};
	char name[RTE_MEMZONE_NAMESIZE], err[256];
	const struct rte_memzone *mz;
	struct sl_shm *shm;
	size_t sz_nfs = sizeof(struct sl_nf_slot) * o->max_nfs;
	size_t sz_svc = sizeof(struct sl_service) * o->max_services;
	size_t sz_live = sizeof(uint16_t) * o->max_nfs * o->max_services;
	size_t off_nfs = RTE_ALIGN_CEIL(sizeof(struct sl_shm), 64);
	size_t off_svc = RTE_ALIGN_CEIL(off_nfs + sz_nfs, 64);
	size_t off_live = RTE_ALIGN_CEIL(off_svc + sz_svc, 64);
	int off;

	snprintf(name, sizeof(name), SL_MZ_SHM, o->name);
	mz = rte_memzone_reserve_aligned(name, off_live + sz_live,
					 rte_socket_id(), 0, 64);
	if (mz == NULL) {
		fprintf(stderr, "sluiced: cannot reserve shared memory: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	shm = mz->addr;
	memset(shm, 0, off_live + sz_live);
	m->shm = shm;
	shm->magic = SL_SHM_MAGIC;
	shm->version = SL_SHM_VERSION;
	snprintf(shm->node, sizeof(shm->node), "%s", o->name);
	shm->mgr_pid = getpid();
	shm->max_nfs = o->max_nfs;
	shm->max_services = o->max_services;
	shm->ring_size = o->ring_size;
	shm->burst = o->burst;
	shm->handoff = o->handoff;
	shm->tsc_hz = rte_get_tsc_hz();
	shm->backpressure_cycles = shm->tsc_hz / 1000000 * o->backpressure_us;
	shm->idle_sleep_cycles = shm->tsc_hz / 1000000 * o->idle_sleep_us;
	shm->nfs = (struct sl_nf_slot *)((char *)shm + off_nfs);
	shm->services = (struct sl_service *)((char *)shm + off_svc);
	for (uint16_t s = 0; s < o->max_services; s++)
		shm->services[s].live =
			(uint16_t *)((char *)shm + off_live) + s * o->max_nfs;

	off = rte_mbuf_dynfield_register(&meta_desc);
	if (off < 0) {
		fprintf(stderr,
			"sluiced: cannot register mbuf field %s: %s\n",
			SL_DYNFIELD_NAME, rte_strerror(rte_errno));
		return -1;
	}
	shm->dynfield_offset = off;

	shm->pktmbuf_pool = sl_pool_for_socket(m, (int)rte_socket_id(), err,
					       sizeof(err));
	if (shm->pktmbuf_pool == NULL) {
		fprintf(stderr, "sluiced: %s\n", err);
		return -1;
	}

	snprintf(name, sizeof(name), SL_MZ_MSG_RING, o->name);
	shm->msg_ring = rte_ring_create(name, 1024, rte_socket_id(),
					RING_F_SC_DEQ);
	snprintf(name, sizeof(name), SL_MZ_MSG_POOL, o->name);
	shm->msg_pool = rte_mempool_create(name, 1023, sizeof(struct sl_msg),
					   0, 0, NULL, NULL, NULL, NULL,
					   rte_socket_id(), 0);
	if (shm->msg_ring == NULL || shm->msg_pool == NULL) {
		fprintf(stderr, "sluiced: cannot create the message ring: %s\n",
			rte_strerror(rte_errno));
		return -1;
	}
	shm->edges = rte_zmalloc("sl_edges",
				 sizeof(struct sl_edge_ctr) * SL_EDGE_ROWS(shm) *
					 SL_EDGE_COLS(shm),
				 RTE_CACHE_LINE_SIZE);
	m->edge_retired = calloc((size_t)o->max_services * SL_EDGE_COLS(shm),
				 sizeof(*m->edge_retired));
	if (shm->edges == NULL || m->edge_retired == NULL) {
		fprintf(stderr, "sluiced: out of memory for the edge counters: "
				"lower --max-nfs or --max-services\n");
		return -1;
	}
	shm->ms_hz = shm->tsc_hz / 1000;
	shm->max_graphs = o->max_graphs;
	shm->max_hops = o->max_hops;
	shm->graph_cur = rte_malloc("sl_graph_cur",
				    sizeof(uint16_t) * o->max_graphs, 0);
	if (shm->graph_cur == NULL) {
		fprintf(stderr, "sluiced: out of memory for the graph table\n");
		return -1;
	}
	for (uint16_t g = 0; g < o->max_graphs; g++)
		shm->graph_cur[g] = SL_GRAPH_NONE;
	return sl_flow_init(m);
}

/* ---- clean-up of DPDK files ---------------------------------------- */

static void
remove_dpdk_files(const char *prefix)
{
	char path[512], line[512];
	FILE *f = fopen("/proc/mounts", "r");
	DIR *d;
	struct dirent *e;
	size_t plen = strlen(prefix);

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char dev[128], dir[256], type[64];

		if (sscanf(line, "%127s %255s %63s", dev, dir, type) != 3 ||
		    strcmp(type, "hugetlbfs") != 0)
			continue;
		d = opendir(dir);
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, prefix, plen) == 0 &&
			    strncmp(e->d_name + plen, "map_", 4) == 0) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 e->d_name);
				unlink(path);
			}
		}
		if (d != NULL)
			closedir(d);
	}
	if (f != NULL)
		fclose(f);
	snprintf(path, sizeof(path), "/var/run/dpdk/%s", prefix);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p2[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p2, sizeof(p2), "%s/%s", path, e->d_name);
		unlink(p2);
	}
	if (d != NULL)
		closedir(d);
	rmdir(path);
}

/*
 * rte_eal_cleanup() takes DPDK's shared memory-hotplug lock for writing. A
 * process killed inside its own rte_eal_init (an NF SIGKILLed while it
 * attaches) can leave a reader on that lock for good, and the clean-up
 * would spin for ever. So it gets CLEANUP_WAIT_S; past that, sluiced says
 * so, removes its files itself and exits.
 */
#define CLEANUP_WAIT_S 3

static struct {
	const char *prefix;
	int rc;
} g_cleanup;

static void *
cleanup_watchdog(void *arg)
{
	(void)arg;
	sleep(CLEANUP_WAIT_S);
	sl_log("DPDK's clean-up has not returned in %d s: a process killed "
	       "inside its own DPDK start-up (an NF killed while it attached) "
	       "left DPDK's shared memory lock held; removing the hugepage "
	       "and runtime files and exiting without it",
	       CLEANUP_WAIT_S);
	remove_dpdk_files(g_cleanup.prefix);
	_exit(g_cleanup.rc);
	return NULL;
}

static void
eal_cleanup(const char *prefix, int rc)
{
	pthread_t t;

	g_cleanup.prefix = prefix;
	g_cleanup.rc = rc;
	if (pthread_create(&t, NULL, cleanup_watchdog, NULL) == 0)
		pthread_detach(t);
	rte_eal_cleanup();
}

/* ---- main ------------------------------------------------------------ */

static int
has_eal_opt(int argc, char **argv, const char *a, const char *b)
{
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], a, strlen(a)) == 0 ||
		    (b != NULL && strncmp(argv[i], b, strlen(b)) == 0))
			return 1;
	return 0;
}

/* The --file-prefix given to EAL (--file-prefix=P or --file-prefix P),
 * if any, into prefix; else prefix is left as it is. */
static void
eal_file_prefix(int argc, char **argv, char *prefix, size_t len)
{
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--file-prefix=", 14) == 0)
			snprintf(prefix, len, "%s", argv[i] + 14);
		else if (strcmp(argv[i], "--file-prefix") == 0 &&
			 i + 1 < argc)
			snprintf(prefix, len, "%s", argv[++i]);
	}
}

/* "0000:01:00.0" or "01:00.0", optionally followed by ",args". */
static int
is_pci_addr(const char *dev)
{
	unsigned int a, b, c, d;
	char tail;

	return sscanf(dev, "%x:%x:%x.%x%c", &a, &b, &c, &d, &tail) >= 4 ||
	       sscanf(dev, "%x:%x.%x%c", &a, &b, &c, &tail) >= 3;
}

int
main(int argc, char **argv)
{
	struct sl_mgr *m = &g_mgr;
	char *eal_argv[MAX_EAL_ARGS];
	char prefix_arg[64], prefix[64], err[512], mem_arg[48], config[128];
	int sep = argc, eal_argc = 0, rc = 1, n_io = 0;
	unsigned int lc;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	for (int i = 1; i < sep; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			/* before the root and hugepage checks: help needs
			 * neither (and EAL's own help is DPDK's guide) */
			usage();
			return 0;
		}
	if (sep + 1 > MAX_EAL_ARGS - 8) {
		fprintf(stderr, "sluiced: too many EAL arguments\n");
		return 1;
	}
	if (parse_opts(&m->o, sep < argc ? argc - sep : 1,
		       sep < argc ? argv + sep : argv) != 0)
		return 1;
	if (precheck(&m->o) != 0)
		return 1;

	snprintf(prefix, sizeof(prefix), "sluice_%.16s", m->o.name);
	eal_argv[eal_argc++] = argv[0];
	for (int i = 1; i < sep; i++)
		eal_argv[eal_argc++] = argv[i];
	if (!has_eal_opt(eal_argc, eal_argv, "--file-prefix", NULL)) {
		snprintf(prefix_arg, sizeof(prefix_arg), "--file-prefix=%.40s",
			 prefix);
		eal_argv[eal_argc++] = prefix_arg;
	}
	/* Do not grab the machine's own NICs unless asked to. */
	if (!has_eal_opt(eal_argc, eal_argv, "-a", "--allow") &&
	    !has_eal_opt(eal_argc, eal_argv, "-b", "--block") &&
	    !has_eal_opt(eal_argc, eal_argv, "--no-pci", NULL)) {
		int pci = 0;

		for (uint16_t i = 0; i < m->o.n_ports; i++)
			pci |= is_pci_addr(m->o.ports[i].device);
		if (!pci)
			eal_argv[eal_argc++] = "--no-pci";
	}
	if (!has_eal_opt(eal_argc, eal_argv, "--log-level", NULL))
		eal_argv[eal_argc++] = "--log-level=lib.eal:warning";
	/*
	 * A fixed base address far from where the kernel and sanitizers map
	 * things: every NF (a secondary) must map sluiced's memory at the
	 * same addresses, and DPDK's default (4 GiB) falls inside the region
	 * ASan reserves, so ASan-built NFs often failed to attach.
	 */
	if (!has_eal_opt(eal_argc, eal_argv, "--base-virtaddr", NULL))
		eal_argv[eal_argc++] = "--base-virtaddr=0x200000000000";
	if (!has_eal_opt(eal_argc, eal_argv, "--socket-mem", "-m") &&
	    !has_eal_opt(eal_argc, eal_argv, "--legacy-mem", NULL)) {
		snprintf(mem_arg, sizeof(mem_arg), "--socket-mem=%llu",
			 (memory_need(&m->o) >> 20) + 1);
		eal_argv[eal_argc++] = mem_arg;
	}
	eal_argv[eal_argc] = NULL;

	/*
	 * The prefix's config file is locked by its DPDK primary while that
	 * runs: a sluiced of another --name given the same --file-prefix, or
	 * one of this name still starting (its socket not up yet). EAL would
	 * only fail with rte_errno 0 ("Success").
	 */
	eal_file_prefix(eal_argc, eal_argv, prefix, sizeof(prefix));
	snprintf(config, sizeof(config), "/var/run/dpdk/%s/config", prefix);
	if (rte_eal_primary_proc_alive(config)) {
		fprintf(stderr,
			"sluiced: DPDK file prefix %s is in use by a running "
			"DPDK primary process (it holds %s): stop that "
			"process, or start this one with another --name (or "
			"--file-prefix)\n",
			prefix, config);
		return 1;
	}
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		int e = rte_errno;

		fprintf(stderr,
			"sluiced: DPDK EAL initialisation failed: %s; check the "
			"EAL arguments before '--' (and that no other "
			"sluiced uses --name %s)\n",
			e == EACCES
				? "it found no usable hugepages (a --huge-dir "
				  "that is not a mounted hugetlbfs, or one "
				  "with no free pages?)"
			: e == 0 ? "see the EAL lines above"
				 : rte_strerror(e),
			m->o.name);
		/* What EAL made before it failed (the runtime folder, maybe
		 * hugepage files): ours, unless a primary took the prefix
		 * meanwhile. */
		if (!rte_eal_primary_proc_alive(config))
			remove_dpdk_files(prefix);
		return 1;
	}
	m->start_tsc = rte_rdtsc();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	/* Replicas started by nf.scale are reaped by the kernel (their end
	 * is seen through pidfds, like every NF's). */
	signal(SIGCHLD, SIG_IGN);

	RTE_LCORE_FOREACH_WORKER(lc)
	{
		if (n_io < 2)
			m->io_lcores[n_io++] = lc;
	}
	if (n_io == 0) {
		fprintf(stderr,
			"sluiced: needs at least 2 lcores (control + I/O): "
			"pass e.g. -l 0,1 or --lcores=0@(0,1),1@(0,1) before "
			"'--'\n");
		goto out_eal;
	}
	if (shm_init(m) != 0)
		goto out_eal;
	m->shm->n_io = (uint32_t)n_io;
	if (sl_registry_init(m) != 0)
		goto out_eal;
	if (sl_ports_init(m, err, sizeof(err)) != 0) {
		fprintf(stderr, "sluiced: %s\n", err);
		goto out_ports; /* the ports made so far, their folders */
	}
	if (m->o.chain != NULL) {
		char text[SL_CHAIN_MAX_TEXT], *hops[1024];
		int n;

		if (strlen(m->o.chain) >= sizeof(text)) {
			fprintf(stderr, "sluiced: --chain is longer than %zu "
				"characters\n", sizeof(text) - 1);
			goto out_ports;
		}
		strcpy(text, m->o.chain);
		n = sl_chain_split(text, hops, 1024, err, sizeof(err));
		if (n < 0 || sl_chain_apply(m, (const char *const *)hops,
					    (uint16_t)n, err,
					    sizeof(err)) != 0) {
			fprintf(stderr, "sluiced: --chain: %s\n", err);
			goto out_ports;
		}
	}
	if (sl_control_init(m, err, sizeof(err)) != 0) {
		fprintf(stderr, "sluiced: %s\n", err);
		goto out_ports;
	}
	if (sl_io_init(m) != 0) {
		fprintf(stderr, "sluiced: cannot create the RX->TX ring\n");
		goto out_ports;
	}
	for (int i = 0; i < n_io; i++)
		rte_eal_remote_launch(sl_io_thread, (void *)(uintptr_t)i,
				      m->io_lcores[i]);
	/* Telemetry is optional: a command that cannot be registered is
	 * logged and sluiced runs on. */
	(void)sl_telemetry_init(m);
	/* Rule changes are built off the control thread (rules.h). */
	if (sl_rules_builder_start(m->rules, err, sizeof(err)) != 0)
		sl_log("%s: rule changes will be refused", err);
	sl_log("ready: %u port(s), %d I/O thread(s), %s mode, %s hand-off, "
	       "socket %s",
	       m->o.n_ports, n_io,
	       m->o.mode == SL_MODE_POLL ? "poll" : "shared",
	       m->o.handoff ? "mgr" : "direct", m->o.socket_path);

	sl_control_run(m); /* until SIGINT/SIGTERM or the shutdown method */

	if (m->quit > 1)
		sl_log("shutting down: %s",
		       m->quit == SIGINT ? "SIGINT" : "SIGTERM");
	else
		sl_log("shutting down: asked over the control socket");
	sl_telemetry_close();
	sl_rules_builder_stop(m->rules); /* a build under way finishes first */
	sl_stop_all_nfs(m, 2000);
	__atomic_store_n(&m->shm->shutdown, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < n_io; i++)
		sl_futex_wake(&m->shm->io_wake[i]);
	rte_eal_mp_wait_lcore();
	sl_qs_drain_all(m);
	sl_flow_close(m);
	sl_graphs_close(m);
	sl_control_close(m);
	rc = 0;
out_ports:
	sl_ports_close(m);
out_eal:
	eal_cleanup(prefix, rc);
	remove_dpdk_files(prefix);
	return rc;
}
