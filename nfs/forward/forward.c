/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-forward: hands every packet on, along the default edge (NEXT), to
 * a named service (--to), out of a named port (--out), or between two ports
 * by ingress (--bridge A,B). By default it does not touch packet bytes;
 * --tag-src-mac writes the instance id into the last byte of the source
 * MAC address, to see which replica handled a packet (and so declares
 * write access).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <sluice/nf.h>
#include <sluice/pkt.h>

/* The synopsis, for --help; libsluice prints fwd_opts' lines after it. */
static const char fwd_usage[] =
	"usage: sluice-forward [EAL args] -- [libsluice args]\n"
	"       [--to SERVICE | --out PORT | --bridge PORT,PORT] "
	"[--tag-src-mac]\n";

/* The NF's state: its private context (libsluice allocates it). */
struct fwd {
	sl_verdict_t verdict; /* --to, --out (the last given); 0 is NEXT */
	int bridged;          /* --bridge given: */
	int bridge[2];        /* its two ports */
	int tag;              /* --tag-src-mac */
};

/* --to and --out: libsluice has checked the name; the last one wins. */
static int
fwd_to(struct sl_nf *nf, void *priv, const char *name)
{
	((struct fwd *)priv)->verdict = SL_TO(sl_service_id(nf, name));
	return 0;
}

static int
fwd_out(struct sl_nf *nf, void *priv, const char *name)
{
	((struct fwd *)priv)->verdict = SL_OUT(sl_port_id(nf, name));
	return 0;
}

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
fwd_bridge(struct sl_nf *nf, void *priv, const char *value)
{
	struct fwd *f = priv;
	const char *comma = strchr(value, ',');
	char first[256];

	if (comma == NULL) {
		fprintf(stderr,
			"sluice-forward: --bridge '%s': give two ports, e.g. "
			"--bridge left,right\n",
			value);
		return EINVAL;
	}
	snprintf(first, sizeof(first), "%.*s", (int)(comma - value), value);
	f->bridge[0] = port_arg(nf, "--bridge", first);
	f->bridge[1] = port_arg(nf, "--bridge", comma + 1);
	if (f->bridge[0] < 0 || f->bridge[1] < 0)
		return EINVAL;
	f->bridged = 1;
	return 0;
}

static const struct sl_nf_opt fwd_opts[] = {
	{.name = "to",
	 .type = SL_OPT_SERVICE,
	 .arg = "SERVICE",
	 .help = "send every packet to SERVICE (default: along the chain)",
	 .parse = fwd_to},
	{.name = "out",
	 .type = SL_OPT_PORT,
	 .arg = "PORT",
	 .help = "send every packet out of PORT",
	 .parse = fwd_out},
	{.name = "bridge",
	 .type = SL_OPT_STRING,
	 .arg = "A,B",
	 .help = "packets from port A go out of B, those from B out of A",
	 .parse = fwd_bridge},
	/* It rewrites the source MAC: write access. */
	{.name = "tag-src-mac",
	 .type = SL_OPT_FLAG,
	 .help = "write the instance id into the last byte of the source MAC",
	 SL_OPT_AT(struct fwd, tag),
	 .access = SL_ACCESS_WRITE},
	{.name = NULL},
};

static void
fwd_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	const struct fwd *f = sl_nf_priv(nf);

	if (f->tag) {
		uint8_t id = (uint8_t)sl_nf_instance(nf);

		for (uint16_t i = 0; i < n; i++) {
			struct rte_ether_hdr *eth = sl_pkt_eth(pkts[i]);

			if (eth != NULL) /* NULL: shorter than Ethernet */
				eth->src_addr.addr_bytes[5] = id;
		}
	}
	if (f->bridged) {
		for (uint16_t i = 0; i < n; i++) {
			uint16_t in = sl_pkt_in_port(pkts[i]);

			if (in == f->bridge[0])
				sl_pkt_set_verdict(pkts[i],
						   SL_OUT(f->bridge[1]));
			else if (in == f->bridge[1])
				sl_pkt_set_verdict(pkts[i],
						   SL_OUT(f->bridge[0]));
		}
		return;
	}
	if (f->verdict == SL_NEXT)
		return; /* unset verdicts follow NEXT */
	for (uint16_t i = 0; i < n; i++)
		sl_pkt_set_verdict(pkts[i], f->verdict);
}

static const struct sl_nf_ops fwd_ops = {
	.name = "sluice-forward",
	.service = "forward",
	/* --tag-src-mac adds SL_ACCESS_WRITE (fwd_opts) */
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.process = fwd_burst,
	.usage = fwd_usage,
	.opts = fwd_opts,
	.priv_size = sizeof(struct fwd),
	.opts_help_col = 19,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fwd_ops, argc, argv);
}
