/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * docs/nf-guide.md's TTL NF, extended as a vendor would: options of its
 * own after the -- (--skip-port N, --stats-ms MS), the header pointers of
 * sluice/pkt.h, a SkipMe request (sluice/flow.h) for the first UDP flow to
 * port N, on_message (key "stats" prints the counters line), on_reply,
 * and a counters line every --stats-ms and at exit. Built out of the tree
 * and run in a chain by tests/integration/test_vendor_nf.py.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>
#include <sluice/flow.h>
#include <sluice/nf.h>
#include <sluice/pkt.h>

static const char ttlx_usage[] =
	"usage: sluice-ttlx [EAL args] -- [libsluice args] [--skip-port N]"
	" [--stats-ms MS]\n"
	"  --skip-port N   SkipMe for the first UDP flow to port N\n"
	"  --stats-ms MS   a counters line every MS ms (default 0: none)\n";

struct ttlx {
	double skip_port;       /* -1: none */
	int64_t skip_id;        /* the SkipMe request, once made */
	uint64_t pkts, bytes, tcp, udp, vlan;
	struct sl_stats_line line;
};

static struct ttlx state; /* one instance per process */

static int
ttlx_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option opts[] = {
		{"skip-port", required_argument, NULL, 'p'},
		{"stats-ms", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	struct ttlx *s = &state;
	double ms = 0;
	int c;

	s->skip_port = -1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p' && sl_opt_number(argv[0], "--skip-port", optarg,
					      0, 65535, 0, &s->skip_port) == 0)
			continue;
		if (c == 'm' && sl_opt_number(argv[0], "--stats-ms", optarg,
					      0, 3600000, 0, &ms) == 0)
			continue;
		if (c != 'p' && c != 'm') /* getopt said what was wrong */
			fputs(ttlx_usage, stderr);
		return EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		fputs(ttlx_usage, stderr);
		return EINVAL;
	}
	sl_nf_set_priv(nf, s);
	sl_stats_line_start(&s->line, (uint64_t)ms * 1000000u, sl_now_ns());
	printf("ttlx: instance %u of service %u\n", sl_nf_instance(nf),
	       sl_nf_service(nf));
	fflush(stdout);
	return 0;
}

static sl_verdict_t
ttlx_pkt(struct sl_nf *nf, struct rte_mbuf *m)
{
	struct ttlx *s = sl_nf_priv(nf);
	struct sl_pkt_info info;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	int rc = sl_pkt_parse(m, &info);

	s->pkts++;
	s->bytes += rte_pktmbuf_pkt_len(m);
	/* Each pointer answers for its own layer, even if rc != 0. */
	if (sl_pkt_vlan(m, &info, 0) != NULL)
		s->vlan++;
	if (sl_pkt_tcp(m, &info) != NULL)
		s->tcp++;
	if ((udp = sl_pkt_udp(m, &info)) != NULL) {
		s->udp++;
		if (s->skip_port >= 0 && s->skip_id == 0 &&
		    ntohs(udp->dst_port) == (uint16_t)s->skip_port) {
			struct sl_flow_match f;

			if (sl_flow_of_pkt(m, &f) == 0) {
				s->skip_id = sl_skip_me(nf, &f,
							sl_nf_service(nf));
				printf("ttlx: skip_me request %" PRId64 "\n",
				       s->skip_id);
				fflush(stdout);
			}
		}
	}
	if (rc != 0 || (ip = sl_pkt_ipv4(m, &info)) == NULL)
		return SL_NEXT;
	if (ip->time_to_live <= 1)
		return SL_DROP;
	ip->time_to_live--;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return SL_NEXT;
}

static void
ttlx_stats(struct ttlx *s, const char *reason)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&s->line, head, sizeof(head), "ttlx", reason,
			   sl_now_ns(), s->pkts, s->bytes);
	printf("%s tcp=%" PRIu64 " udp=%" PRIu64 " vlan=%" PRIu64 "\n", head,
	       s->tcp, s->udp, s->vlan);
	fflush(stdout);
}

static void
ttlx_tick(struct sl_nf *nf, uint64_t now_ns)
{
	struct ttlx *s = sl_nf_priv(nf);

	if (sl_stats_line_due(&s->line, now_ns))
		ttlx_stats(s, "periodic");
}

static void
ttlx_message(struct sl_nf *nf, const char *key, const char *value)
{
	printf("ttlx: message %s=%s\n", key, value);
	fflush(stdout);
	if (strcmp(key, "stats") == 0)
		ttlx_stats(sl_nf_priv(nf), "message");
}

static void
ttlx_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	(void)nf;
	printf("ttlx: reply to %" PRId64 ": %d '%s'\n", id, result, reason);
	fflush(stdout);
}

static void
ttlx_fini(struct sl_nf *nf)
{
	ttlx_stats(sl_nf_priv(nf), "exit");
}

static const struct sl_nf_ops ttlx_ops = {
	.name = "ttlx",
	.service = "ttlx",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = ttlx_init,
	.process_pkt = ttlx_pkt,
	.tick = ttlx_tick,
	.tick_ms = 100,
	.on_message = ttlx_message,
	.on_reply = ttlx_reply,
	.fini = ttlx_fini,
	.usage = ttlx_usage,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&ttlx_ops, argc, argv);
}
