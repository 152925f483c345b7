/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-forward: hands every packet on, along the default edge (NEXT), to
 * a named service (--to), or out of a named port (--out). Does not touch
 * packet bytes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <sluice/nf.h>

static sl_verdict_t g_verdict = SL_NEXT;

static int
fwd_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option lo[] = {
		{"to", required_argument, NULL, 't'},
		{"out", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, id;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			id = sl_service_id(nf, optarg);
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
			id = sl_port_id(nf, optarg);
			if (id < 0) {
				fprintf(stderr,
					"sluice-forward: --out '%s': no such "
					"port (sluice status lists them)\n",
					optarg);
				return EINVAL;
			}
			g_verdict = SL_OUT(id);
			break;
		case 'h':
			fprintf(stderr, "sluice-forward options: [--to SERVICE "
					"| --out PORT]\n");
			exit(0);
		default:
			fprintf(stderr,
				"sluice-forward: unknown option; use --to "
				"SERVICE or --out PORT\n");
			return EINVAL;
		}
	}
	return 0;
}

static void
fwd_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	(void)nf;
	if (g_verdict == SL_NEXT)
		return; /* unset verdicts follow NEXT */
	for (uint16_t i = 0; i < n; i++)
		sl_pkt_set_verdict(pkts[i], g_verdict);
}

static const struct sl_nf_ops fwd_ops = {
	.name = "forward",
	.service = "forward",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = fwd_init,
	.process = fwd_burst,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fwd_ops, argc, argv);
}
