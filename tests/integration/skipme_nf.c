/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-skipme, a test NF (built by tests/integration/test_crosslayer.py):
 * it counts the packets of each flow (both directions one flow) and, at a
 * flow's --after'th packet, asks sluiced with SkipMe(flow, its service)
 * to send the flow's later packets past it. Like sluice-forward
 * --tag-src-mac it writes its instance id into the last byte of the
 * source MAC, so a capture shows which packets it handled. At exit it
 * prints, to stderr:
 *
 *   skipme-flow: flow=udp 10.0.0.1:1 > 10.0.0.2:2 packets=5 request=1
 *   skipme-stats: packets=9 untracked=0 requests=2 applied=1 rejected=1 not_queued=0
 *
 * (request: the SkipMe's id, 0 if none was asked) and for each answer
 * "skipme-reply: id=1 applied" or "skipme-reply: id=1 rejected reason=...".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include <sluice/flow.h>
#include <sluice/nf.h>
#include <sluice/pkt.h>

#define SK_FLOWS 64

struct sk_flow {
	struct sl_5tuple t;
	uint64_t pkts;
	int64_t req; /* the SkipMe's id; 0: not asked */
};

static struct sk_flow g_flows[SK_FLOWS];
static unsigned int g_n;
static uint64_t g_after = 1, g_pkts, g_untracked;
static uint64_t g_requests, g_applied, g_rejected, g_not_queued;

static int
sk_same(const struct sl_5tuple *a, const struct sl_5tuple *b)
{
	struct sl_5tuple r = *b;

	if (memcmp(a, b, sizeof(*a)) == 0)
		return 1;
	r.sport = b->dport;
	r.dport = b->sport;
	r.src = b->dst;
	r.dst = b->src;
	return memcmp(a, &r, sizeof(*a)) == 0;
}

static struct sk_flow *
sk_flow(const struct sl_5tuple *t)
{
	for (unsigned int i = 0; i < g_n; i++)
		if (sk_same(&g_flows[i].t, t))
			return &g_flows[i];
	if (g_n == SK_FLOWS)
		return NULL;
	g_flows[g_n].t = *t;
	return &g_flows[g_n++];
}

static int
sk_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option lo[] = {
		{"after", required_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	double v;
	int c;

	(void)nf;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c != 'a') {
			fprintf(stderr, "sluice-skipme: usage: --after N\n");
			return EINVAL;
		}
		if (sl_opt_number("sluice-skipme", "--after", optarg, 1, 1e9,
				  0, &v) != 0)
			return EINVAL;
		g_after = (uint64_t)v;
	}
	return 0;
}

static void
sk_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	uint8_t id = (uint8_t)sl_nf_instance(nf);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_ether_hdr *eth = sl_pkt_eth(pkts[i]);
		struct sl_flow_match fm;
		struct sk_flow *f;

		g_pkts++;
		if (eth != NULL)
			eth->src_addr.addr_bytes[5] = id;
		if (sl_flow_of_pkt(pkts[i], &fm) != 0)
			continue;
		f = sk_flow(&fm.tuple);
		if (f == NULL) {
			g_untracked++;
			continue;
		}
		if (++f->pkts != g_after)
			continue;
		f->req = sl_skip_me(nf, &fm, sl_nf_service(nf));
		if (f->req > 0) {
			g_requests++;
		} else {
			f->req = 0;
			g_not_queued++;
		}
	}
}

static void
sk_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	(void)nf;
	if (result == 0) {
		g_applied++;
		fprintf(stderr, "skipme-reply: id=%" PRId64 " applied\n", id);
	} else {
		g_rejected++;
		fprintf(stderr, "skipme-reply: id=%" PRId64 " rejected reason=%s\n",
			id, reason);
	}
}

static void
sk_fini(struct sl_nf *nf)
{
	char flow[128];

	(void)nf;
	for (unsigned int i = 0; i < g_n; i++) {
		sl_5tuple_format(&g_flows[i].t, flow, sizeof(flow));
		fprintf(stderr,
			"skipme-flow: flow=%s packets=%" PRIu64
			" request=%" PRId64 "\n",
			flow, g_flows[i].pkts, g_flows[i].req);
	}
	fprintf(stderr,
		"skipme-stats: packets=%" PRIu64 " untracked=%" PRIu64
		" requests=%" PRIu64 " applied=%" PRIu64 " rejected=%" PRIu64
		" not_queued=%" PRIu64 "\n",
		g_pkts, g_untracked, g_requests, g_applied, g_rejected,
		g_not_queued);
}

static const struct sl_nf_ops sk_ops = {
	.name = "skipme",
	.service = "skipme",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = sk_init,
	.process = sk_burst,
	.on_reply = sk_reply,
	.fini = sk_fini,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&sk_ops, argc, argv);
}
