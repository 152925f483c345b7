/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-monitor: a read-only NF that counts packets per protocol class
 * and per flow, and prints the top flows by bytes every --interval seconds
 * and at exit. Every packet goes on with SL_NEXT.
 *
 * Flows are keyed by the directional 5-tuple in an rte_hash of --flows
 * entries, created with the extendable-bucket option so that exactly that
 * many flows fit. When it is full, packets of new flows are counted as
 * flows_untracked. Output format: nfs/monitor/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <rte_hash.h>
#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#define MON_PROG "sluice-monitor"
#define MON_CHUNK 64 /* keys per bulk lookup */
#define MON_DEFAULT_FLOWS 65536
#define MON_MAX_FLOWS (1u << 24)
#define MON_DEFAULT_TOP 10
#define MON_MAX_TOP 1000
#define MON_TICK_MS 100
#define MON_NS 1000000000ull
#define MON_HASH_BYTES_PER_FLOW 74 /* rte_hash, 40-byte keys, measured */

/* Protocol classes: each packet is in exactly one. */
enum mon_class {
	MON_TCP = 0,    /* IPv4 or IPv6 */
	MON_UDP,        /* IPv4 or IPv6 */
	MON_ICMP,       /* ICMP or ICMPv6 */
	MON_OTHER_IPV4, /* IPv4, another protocol */
	MON_OTHER_IPV6, /* IPv6, another protocol */
	MON_NON_IP,
	MON_MALFORMED, /* sl_parse() refused it */
	MON_CLASS_MAX
};

static const char *const mon_class_names[MON_CLASS_MAX] = {
	"tcp", "udp", "icmp", "other_ipv4", "other_ipv6", "non_ip", "malformed",
};

struct mon_count {
	uint64_t pkts;
	uint64_t bytes;
};

/* The NF's state: its private context (libsluice allocates it). */
struct mon_state {
	struct rte_hash *h;
	struct mon_count *flows; /* by rte_hash position */
	uint32_t capacity;       /* --flows */
	uint32_t n_flows;
	struct mon_count cls[MON_CLASS_MAX];
	struct mon_count total;
	uint64_t ipv4, ipv6;        /* packets per IP version */
	struct mon_count untracked; /* packets of flows that did not fit */

	uint32_t top_n;
	double interval_s;    /* --interval */
	uint64_t interval_ns; /* 0: print only at exit */
	struct sl_stats_line stats;
	struct mon_top *top; /* [top_n], scratch for printing */
};

struct mon_top {
	const struct sl_5tuple *key;
	struct mon_count c;
};

static enum mon_class
mon_classify(const struct sl_5tuple *t)
{
	switch (t->proto) {
	case IPPROTO_TCP:
		return MON_TCP;
	case IPPROTO_UDP:
		return MON_UDP;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		return MON_ICMP;
	default:
		return t->family == 4 ? MON_OTHER_IPV4 : MON_OTHER_IPV6;
	}
}

static void
mon_count_chunk(struct mon_state *mon, struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_5tuple keys[MON_CHUNK];
	const void *kp[MON_CHUNK];
	uint32_t len[MON_CHUNK];
	int32_t pos[MON_CHUNK];
	uint16_t i, nk = 0;
	enum mon_class c;
	int rc;

	for (i = 0; i < n; i++) {
		uint32_t bytes = rte_pktmbuf_pkt_len(pkts[i]);
		struct sl_5tuple *t = &keys[nk];

		mon->total.pkts++;
		mon->total.bytes += bytes;
		sl_pkt_set_verdict(pkts[i], SL_NEXT);
		/* Keyed as the flow director keys it: every fragment of a
		 * datagram, the first too, in one flow with ports 0. */
		rc = sl_pkt_flow_tuple(pkts[i], t);
		if (unlikely(rc != 0)) {
			c = rc == -ENOENT ? MON_NON_IP : MON_MALFORMED;
		} else {
			c = mon_classify(t);
			if (t->family == 4)
				mon->ipv4++;
			else
				mon->ipv6++;
			kp[nk] = t;
			len[nk++] = bytes;
		}
		mon->cls[c].pkts++;
		mon->cls[c].bytes += bytes;
	}
	if (nk == 0)
		return;
	if (rte_hash_lookup_bulk(mon->h, kp, nk, pos) != 0)
		for (i = 0; i < nk; i++)
			pos[i] = -ENOENT;
	for (i = 0; i < nk; i++) {
		int32_t p = pos[i];

		/* A miss may be a flow an earlier packet of this chunk
		 * added: adding returns its position, and when the table
		 * is full a second lookup finds it. */
		if (unlikely(p < 0)) {
			if (mon->n_flows < mon->capacity) {
				p = rte_hash_add_key(mon->h, kp[i]);
				if (p >= 0 && mon->flows[p].pkts == 0)
					mon->n_flows++;
			} else {
				p = rte_hash_lookup(mon->h, kp[i]);
			}
		}
		if (likely(p >= 0)) {
			mon->flows[p].pkts++;
			mon->flows[p].bytes += len[i];
		} else {
			mon->untracked.pkts++;
			mon->untracked.bytes += len[i];
		}
	}
}

static void
mon_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct mon_state *mon = sl_nf_priv(nf);
	uint16_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < MON_CHUNK ? n - done : MON_CHUNK;
		mon_count_chunk(mon, pkts + done, k);
	}
}

/* Fills mon->top with the top_n flows by bytes; returns how many. */
static uint32_t
mon_top_flows(struct mon_state *mon)
{
	const void *key;
	void *data;
	uint32_t next = 0, n = 0, j;
	int32_t p;

	while ((p = rte_hash_iterate(mon->h, &key, &data, &next)) >= 0) {
		const struct mon_count *c = &mon->flows[p];

		if (n == mon->top_n && c->bytes <= mon->top[n - 1].c.bytes)
			continue;
		j = n < mon->top_n ? n++ : n - 1;
		/* Insertion into the sorted array, largest first. */
		while (j > 0 && mon->top[j - 1].c.bytes < c->bytes) {
			mon->top[j] = mon->top[j - 1];
			j--;
		}
		mon->top[j].key = key;
		mon->top[j].c = *c;
	}
	return n;
}

/* The report; format documented in README.md. */
static void
mon_print(struct mon_state *mon, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];
	char flow[128];
	uint32_t i, n;

	sl_stats_line_head(&mon->stats, head, sizeof(head), "mon", reason, now,
			   mon->total.pkts, mon->total.bytes);
	fprintf(stderr,
		"%s ipv4=%" PRIu64 " ipv6=%" PRIu64 " flows=%" PRIu32
		" flows_capacity=%" PRIu32 " flows_untracked=%" PRIu64
		" untracked_bytes=%" PRIu64 "\n",
		head, mon->ipv4, mon->ipv6, mon->n_flows, mon->capacity,
		mon->untracked.pkts, mon->untracked.bytes);
	fprintf(stderr, "mon-proto: packets");
	for (i = 0; i < MON_CLASS_MAX; i++)
		fprintf(stderr, " %s=%" PRIu64, mon_class_names[i],
			mon->cls[i].pkts);
	fprintf(stderr, "\nmon-proto: bytes");
	for (i = 0; i < MON_CLASS_MAX; i++)
		fprintf(stderr, " %s=%" PRIu64, mon_class_names[i],
			mon->cls[i].bytes);
	fprintf(stderr, "\n");
	n = mon_top_flows(mon);
	for (i = 0; i < n; i++) {
		sl_5tuple_format(mon->top[i].key, flow, sizeof(flow));
		fprintf(stderr,
			"mon-top: rank=%" PRIu32 " packets=%" PRIu64
			" bytes=%" PRIu64 " flow=%s\n",
			i + 1, mon->top[i].c.pkts, mon->top[i].c.bytes, flow);
	}
	fflush(stderr);
}

static void
mon_tick(struct sl_nf *nf, uint64_t now_ns)
{
	struct mon_state *mon = sl_nf_priv(nf);

	if (sl_stats_line_due(&mon->stats, now_ns))
		mon_print(mon, "interval", now_ns);
}

static void
mon_state_free(struct mon_state *mon)
{
	if (mon == NULL)
		return;
	rte_hash_free(mon->h);
	free(mon->flows);
	free(mon->top);
	mon->h = NULL;
	mon->flows = NULL;
	mon->top = NULL;
}

/* The synopsis, for --help and after an unknown option; libsluice prints
 * mon_opts' lines after it. */
static const char mon_usage[] = "usage: " MON_PROG
				" [EAL args] -- [libsluice args] [--flows N]"
				" [--interval S] [--top N]\n";
_Static_assert(MON_DEFAULT_FLOWS == 65536 && MON_MAX_FLOWS == 16777216 &&
		       MON_DEFAULT_TOP == 10 && MON_MAX_TOP == 1000,
	       "mon_opts: update --flows and --top");

static const struct sl_nf_opt mon_opts[] = {
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "flow table capacity (default 65536, max 16777216)",
	 SL_OPT_AT(struct mon_state, capacity),
	 .min = 1,
	 .max = MON_MAX_FLOWS,
	 .what = "number",
	 .def = "65536"},
	{.name = "interval",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "print every S seconds (default 5; 0 = only at exit)",
	 SL_OPT_AT(struct mon_state, interval_s),
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "5"},
	{.name = "top",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "flows listed, by bytes (default 10, max 1000)",
	 SL_OPT_AT(struct mon_state, top_n),
	 .min = 1,
	 .max = MON_MAX_TOP,
	 .what = "number",
	 .def = "10"},
	{.name = NULL},
};

static int
mon_create_table(struct mon_state *mon, struct sl_nf *nf)
{
	const struct sl_nf_table_spec spec = {
		.prog = MON_PROG,
		.tag = "slmon",
		.what = "flow",
		.whats = "flows",
		.entries = mon->capacity,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = MON_HASH_BYTES_PER_FLOW,
		.slot_size = sizeof(mon->flows[0]),
	};
	void *flows;
	int rc;

	rc = sl_nf_table_create(nf, &spec, &mon->h, &flows, NULL);
	if (rc != 0)
		return rc;
	mon->flows = flows;
	mon->top = calloc(mon->top_n, sizeof(mon->top[0]));
	if (mon->top == NULL) {
		fprintf(stderr, MON_PROG ": out of memory\n");
		return ENOMEM;
	}
	return 0;
}

static int
mon_init(struct sl_nf *nf, int argc, char **argv)
{
	struct mon_state *mon = sl_nf_priv(nf);
	int rc;

	(void)argc;
	(void)argv;
	mon->interval_ns = (uint64_t)(mon->interval_s * MON_NS);
	rc = mon_create_table(mon, nf);
	if (rc != 0) {
		mon_state_free(mon);
		return rc;
	}
	sl_stats_line_start(&mon->stats, mon->interval_ns, sl_now_ns());
	fprintf(stderr,
		MON_PROG ": tracking up to %" PRIu32 " flows, top %" PRIu32
			 " every %.1f s\n",
		mon->capacity, mon->top_n, (double)mon->interval_ns / MON_NS);
	return 0;
}

static void
mon_fini(struct sl_nf *nf)
{
	struct mon_state *mon = sl_nf_priv(nf);

	mon_print(mon, "exit", sl_now_ns());
	mon_state_free(mon);
}

static const struct sl_nf_ops mon_ops = {
	.name = MON_PROG,
	.service = "monitor",
	.access = SL_ACCESS_READ,
	.init = mon_init,
	.process = mon_process,
	.tick = mon_tick,
	.tick_ms = MON_TICK_MS,
	.fini = mon_fini,
	.usage = mon_usage,
	.opts = mon_opts,
	.priv_size = sizeof(struct mon_state),
	.opts_help_col = 18,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&mon_ops, argc, argv);
}
