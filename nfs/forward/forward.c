/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-forward: hands every packet on, along the default edge (NEXT), to
 * a named service (--to), out of a named port (--out), or between two ports
 * by ingress (--bridge A,B). By default it does not touch packet bytes;
 * --tag-src-mac writes the instance id into the last byte of the source
 * MAC address, to see which replica handled a packet.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <sluice/nf.h>
#include <sluice/pkt.h>

/* The options, for --help (libsluice prints them after its own). */
static const char fwd_usage[] =
	"usage: sluice-forward [EAL args] -- [libsluice args]\n"
	"       [--to SERVICE | --out PORT | --bridge PORT,PORT] "
	"[--tag-src-mac]\n"
	"  --to SERVICE     send every packet to SERVICE (default: along the "
	"chain)\n"
	"  --out PORT       send every packet out of PORT\n"
	"  --bridge A,B     packets from port A go out of B, those from B out "
	"of A\n"
	"  --tag-src-mac    write the instance id into the last byte of the "
	"source MAC\n";

static sl_verdict_t g_verdict = SL_NEXT;
static int g_bridge[2] = {-1, -1};
static int g_tag;

static int
port_arg(struct sl_nf *nf, const char *opt, const char *name)
{
	int id = sl_port_id(nf, name);

	if (id < 0)
		fprintf(stderr,
			"sluice-forward: %s '%s': no such port (sluice "
			"status lists them)\n",
			opt, name);
	return id;
}

static int
fwd_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option lo[] = {
		{"to", required_argument, NULL, 't'},
		{"out", required_argument, NULL, 'o'},
		{"bridge", required_argument, NULL, 'b'},
		{"tag-src-mac", no_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	char *comma;
	int c, id;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			/* Its NF may be starting beside us (sluice up). */
			id = sl_service_id_wait(nf, optarg, 5000);
			if (id < 0) {
				fprintf(stderr,
					"sluice-forward: --to '%s': no such "
					"service (sluice status lists them)\n",
					optarg);
				return EINVAL;
			}
			g_verdict = SL_TO(id);
			break;
		case 'o':
			id = port_arg(nf, "--out", optarg);
			if (id < 0)
				return EINVAL;
			g_verdict = SL_OUT(id);
			break;
		case 'b':
			comma = strchr(optarg, ',');
			if (comma == NULL) {
				fprintf(stderr,
					"sluice-forward: --bridge '%s': give "
					"two ports, e.g. --bridge left,right\n",
					optarg);
				return EINVAL;
			}
			*comma = '\0';
			g_bridge[0] = port_arg(nf, "--bridge", optarg);
			g_bridge[1] = port_arg(nf, "--bridge", comma + 1);
			if (g_bridge[0] < 0 || g_bridge[1] < 0)
				return EINVAL;
			break;
		case 'm':
			g_tag = 1;
			break;
		default:
			fprintf(stderr,
				"sluice-forward: unknown option; see "
				"sluice-forward -- --help\n");
			return EINVAL;
		}
	}
	return 0;
}

static void
fwd_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	if (g_tag) {
		uint8_t id = (uint8_t)sl_nf_instance(nf);

		for (uint16_t i = 0; i < n; i++) {
			struct rte_ether_hdr *eth = sl_pkt_eth(pkts[i]);

			if (eth != NULL) /* NULL: shorter than Ethernet */
				eth->src_addr.addr_bytes[5] = id;
		}
	}
	if (g_bridge[0] >= 0) {
		for (uint16_t i = 0; i < n; i++) {
			uint16_t in = sl_pkt_in_port(pkts[i]);

			if (in == g_bridge[0])
				sl_pkt_set_verdict(pkts[i], SL_OUT(g_bridge[1]));
			else if (in == g_bridge[1])
				sl_pkt_set_verdict(pkts[i], SL_OUT(g_bridge[0]));
		}
		return;
	}
	if (g_verdict == SL_NEXT)
		return; /* unset verdicts follow NEXT */
	for (uint16_t i = 0; i < n; i++)
		sl_pkt_set_verdict(pkts[i], g_verdict);
}

static const struct sl_nf_ops fwd_ops = {
	.name = "sluice-forward",
	.service = "forward",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = fwd_init,
	.process = fwd_burst,
	.usage = fwd_usage,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fwd_ops, argc, argv);
}
