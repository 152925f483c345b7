/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-speedtest: creates N packets once, sends them along the chain and
 * counts them each time they come back (the chain must loop back to this
 * service, e.g-> "speedtest,forward,speedtest"). Every --report seconds it
 * prints (stderr) the rate of the interval in Mpps and in TSC cycles per
 * packet (TSC cycles elapsed / packets received back in that time: the
 * rate's inverse in wall-clock cycles, whatever the number of cores the
 * loop runs on; not one NF's CPU time, not the trip time, which --latency
 * measures), and at the end a one-line JSON summary (stdout) with both
 * measures over the whole run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include <sluice/nf.h>

#define MAX_SAMPLES 4096
#define ST_PROG "sluice-speedtest"
#define ST_MAX_PKTS 65536

/* The NF's state: its private context (libsluice allocates it). */
struct st {
	uint32_t n_pkts;
	uint32_t size;
	uint32_t flows;
	double duration_s;
	double report_s;
	int latency;
	int injected;
	uint64_t count;   /* packets received back */
	uint64_t t_start; /* TSC when the packets were sent */
	uint64_t last_tsc;
	uint64_t last_count;
	uint64_t hz;
	double samples[MAX_SAMPLES]; /* Mpps per report interval */
	uint32_t n_samples;
	uint64_t lat_sum, lat_n, lat_min, lat_max; /* TSC cycles */
	struct rte_mbuf *pkts[ST_MAX_PKTS];
};

/* The synopsis, for --help; libsluice prints st_opts' lines after it. */
static const char st_usage[] =
	"usage: sluice-speedtest [EAL args] -- [libsluice args] "
	"[--packets N] [--size B]\n"
	"       [--flows N] [--duration S] [--report S] [--latency]\n";

/* --report: more than 0 seconds (libsluice has checked 0 to 86400). */
static int
st_report(struct sl_nf *nf, void *priv, const char *value)
{
	struct st *g = priv;

	(void)nf;
	sl_parse_number(value, 0, 86400, 1, &g->report_s);
	if (g->report_s <= 0) {
		fprintf(stderr,
			ST_PROG ": --report: '%s' is not more than 0 seconds\n",
			value);
		return EINVAL;
	}
	return 0;
}

_Static_assert(ST_MAX_PKTS == 65536, "st_opts: update --packets");
static const struct sl_nf_opt st_opts[] = {
	{.name = "packets",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "packets made and kept in flight, 1 to 65536 (default 128)",
	 SL_OPT_AT(struct st, n_pkts),
	 .min = 1,
	 .max = ST_MAX_PKTS,
	 .def = "128"},
	{.name = "size",
	 .type = SL_OPT_NUMBER,
	 .arg = "B",
	 .help = "frame size in bytes, 64 to 1518 (default 64)",
	 SL_OPT_AT(struct st, size),
	 .min = 64,
	 .max = 1518,
	 .def = "64"},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "packet i belongs to flow i mod N (default 1)",
	 SL_OPT_AT(struct st, flows),
	 .min = 1,
	 .max = 4294967295.0,
	 .def = "1"},
	{.name = "duration",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "stop S seconds after the packets were sent (default 0: "
		 "until\nstopped)",
	 SL_OPT_AT(struct st, duration_s),
	 .max = 1e9,
	 .frac = 1},
	{.name = "report",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "print the rate every S seconds (default 1)",
	 .max = 86400,
	 .frac = 1,
	 .def = "1",
	 .parse = st_report},
	/* It stamps the packets it gets back: write access. */
	{.name = "latency",
	 .type = SL_OPT_FLAG,
	 .help = "measure each packet's time round the loop",
	 SL_OPT_AT(struct st, latency),
	 .access = SL_ACCESS_WRITE},
	{.name = NULL},
};

/* Latency stamp lives after the UDP header. */
#define STAMP_OFF                                                              \
	(sizeof(struct rte_ether_hdr) + sizeof(struct rte_ipv4_hdr) +          \
	 sizeof(struct rte_udp_hdr))

static int
build(struct sl_nf *nf)
{
	struct st *g = sl_nf_priv(nf);
	struct rte_mempool *mp = sl_nf_pktmbuf_pool(nf);

	for (uint32_t i = 0; i < g->n_pkts; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
		struct rte_ether_hdr *eth;
		struct rte_ipv4_hdr *ip;
		struct rte_udp_hdr *udp;
		uint32_t flow = i % g->flows;

		if (m == NULL) {
			fprintf(stderr,
				"sluice-speedtest: the packet pool ran out "
				"after %u packets; lower --packets\n",
				i);
			return ENOMEM;
		}
		eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, g->size);
		memset(eth, 0, g->size);
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		eth->src_addr.addr_bytes[0] = 0x02;
		eth->dst_addr.addr_bytes[0] = 0x02;
		eth->dst_addr.addr_bytes[5] = 0x01;
		ip = (struct rte_ipv4_hdr *)(eth + 1);
		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->total_length =
			rte_cpu_to_be_16((uint16_t)(g->size - sizeof(*eth)));
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_UDP;
		ip->src_addr = rte_cpu_to_be_32(0x0a000000u | flow);
		ip->dst_addr = rte_cpu_to_be_32(0xc0a80001u);
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp = (struct rte_udp_hdr *)(ip + 1);
		udp->src_port =
			rte_cpu_to_be_16((uint16_t)(1024 + flow % 60000));
		udp->dst_port = rte_cpu_to_be_16(9);
		udp->dgram_len = rte_cpu_to_be_16(
			(uint16_t)(g->size - sizeof(*eth) - sizeof(*ip)));
		sl_pkt_set_verdict(m, SL_NEXT);
		g->pkts[i] = m;
	}
	return 0;
}

static int
st_init(struct sl_nf *nf, int argc, char **argv)
{
	struct st *g = sl_nf_priv(nf);

	(void)argc;
	(void)argv;
	g->hz = rte_get_tsc_hz();
	g->lat_min = UINT64_MAX;
	return build(nf);
}

static void
st_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct st *g = sl_nf_priv(nf);

	g->count += n;
	if (g->latency) {
		uint64_t now = rte_rdtsc();

		for (uint16_t i = 0; i < n; i++) {
			uint64_t *stamp = rte_pktmbuf_mtod_offset(pkts[i],
								  uint64_t *,
								  STAMP_OFF);
			uint64_t d = now - *stamp;

			g->lat_sum += d;
			g->lat_n++;
			g->lat_min = RTE_MIN(g->lat_min, d);
			g->lat_max = RTE_MAX(g->lat_max, d);
			*stamp = now;
		}
	}
	/* verdicts stay NEXT: round the loop again */
}

static void
st_tick(struct sl_nf *nf, uint64_t now_ns)
{
	struct st *g = sl_nf_priv(nf);
	uint64_t now = rte_rdtsc();

	(void)now_ns;
	if (!g->injected) {
		if (!sl_nf_chain_ready(nf))
			return;
		g->injected = 1;
		g->t_start = g->last_tsc = now;
		if (g->latency)
			for (uint32_t i = 0; i < g->n_pkts; i++)
				*rte_pktmbuf_mtod_offset(g->pkts[i], uint64_t *,
							 STAMP_OFF) = now;
		for (uint32_t i = 0; i < g->n_pkts; i += 32)
			sl_nf_send(nf, &g->pkts[i],
				   (uint16_t)RTE_MIN(32u, g->n_pkts - i));
		fprintf(stderr,
			"sluice-speedtest: sent %u packets of %u bytes over "
			"%u flow(s)\n",
			g->n_pkts, g->size, g->flows);
		return;
	}
	if ((double)(now - g->last_tsc) / (double)g->hz >= g->report_s) {
		uint64_t cycles = now - g->last_tsc;
		uint64_t got = g->count - g->last_count;
		double secs = (double)cycles / (double)g->hz;
		double mpps = (double)got / secs / 1e6;

		if (g->n_samples < MAX_SAMPLES)
			g->samples[g->n_samples++] = mpps;
		if (got > 0)
			fprintf(stderr,
				"sluice-speedtest: %.2f Mpps, %.1f "
				"cycles/pkt\n",
				mpps, (double)cycles / (double)got);
		else
			fprintf(stderr,
				"sluice-speedtest: 0.00 Mpps, no packet came "
				"back in %.2f s\n",
				secs);
		g->last_tsc = now;
		g->last_count = g->count;
	}
	if (g->duration_s > 0 &&
	    (double)(now - g->t_start) / (double)g->hz >= g->duration_s)
		sl_nf_stop(nf);
}

static void
st_fini(struct sl_nf *nf)
{
	struct st *g = sl_nf_priv(nf);
	uint64_t cycles = g->injected ? rte_rdtsc() - g->t_start : 0;
	double secs = (double)cycles / (double)g->hz;

	printf("{\"packets\": %u, \"size\": %u, \"flows\": %u, "
	       "\"seconds\": %.3f, \"received\": %" PRIu64 ", \"mpps\": %.4f, ",
	       g->n_pkts, g->size, g->flows, secs, g->count,
	       secs > 0 ? (double)g->count / secs / 1e6 : 0.0);
	/* TSC cycles of the whole run per packet received back */
	if (g->count > 0)
		printf("\"cycles_per_pkt\": %.2f, ",
		       (double)cycles / (double)g->count);
	else
		printf("\"cycles_per_pkt\": null, ");
	printf("\"samples_mpps\": [");
	for (uint32_t i = 0; i < g->n_samples; i++)
		printf("%s%.4f", i ? ", " : "", g->samples[i]);
	printf("], \"tsc_hz\": %" PRIu64, g->hz);
	if (g->latency && g->lat_n > 0)
		printf(", \"latency_ns\": {\"min\": %.0f, \"avg\": %.0f, "
		       "\"max\": %.0f}",
		       (double)g->lat_min * 1e9 / (double)g->hz,
		       (double)g->lat_sum / (double)g->lat_n * 1e9 /
			       (double)g->hz,
		       (double)g->lat_max * 1e9 / (double)g->hz);
	printf("}\n");
	fflush(stdout);
}

static const struct sl_nf_ops st_ops = {
	.name = "sluice-speedtest",
	.service = "speedtest",
	.access = SL_ACCESS_READ, /* --latency adds SL_ACCESS_WRITE */
	.init = st_init,
	.process = st_burst,
	.tick = st_tick,
	.tick_ms = 50,
	.fini = st_fini,
	.usage = st_usage,
	.opts = st_opts,
	.priv_size = sizeof(struct st),
	.opts_help_col = 17,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&st_ops, argc, argv);
}
