/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-sampler: sends one packet in N to a service (SL_TO(--to)) and the
 * rest on along the default edge (SL_NEXT). By packet: each packet is
 * sampled with probability 1/N, drawn from a splitmix64 generator seeded
 * by --seed (so a run is reproducible). By flow: a flow is sampled, all
 * its packets, if a mix of sluiced's symmetric flow hash
 * (sl_pkt_flow_hash(), both directions alike) and the seed falls in the
 * same 1/N of the range; a packet without a flow hash (not IP) is never
 * sampled. The NF drops nothing. State is the private context.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"

#define SMP_PROG "sluice-sampler"
#define SMP_MS 1000000ull
#define SMP_MAX_N 1000000000u

enum smp_by {
	SMP_BY_PACKET = 0,
	SMP_BY_FLOW,
};

static const char *const smp_by_names[] = {"packet", "flow", NULL};

struct smp_state {
	/* options */
	int to;          /* --to: service id */
	uint32_t one_in; /* --one-in N */
	int by;          /* enum smp_by */
	uint64_t seed;
	uint64_t stats_ms;

	uint64_t prng;      /* splitmix64 state */
	uint64_t threshold; /* a draw <= threshold is sampled */
	sl_verdict_t to_verdict;
	struct sl_stats_line stats;

	/* counters, since init */
	uint64_t pkts, bytes, sampled, sampled_bytes, no_hash;
};

/* splitmix64's output function (Steele, Lea, Flood 2014). */
static inline uint64_t
smp_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t
smp_next(struct smp_state *st)
{
	st->prng += 0x9e3779b97f4a7c15ull;
	return smp_mix(st->prng);
}

/* 1 in n of the 2^64 draws is at most this. */
static uint64_t
smp_threshold(uint32_t n)
{
	return n == 1 ? UINT64_MAX : (uint64_t)(((__uint128_t)1 << 64) / n) - 1;
}

static void
smp_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct smp_state *st = sl_nf_priv(nf);
	uint16_t i;

	for (i = 0; i < n; i++) {
		uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
		uint64_t draw;

		st->pkts++;
		st->bytes += len;
		if (st->by == SMP_BY_PACKET) {
			draw = smp_next(st);
		} else {
			uint32_t h = sl_pkt_flow_hash(pkts[i]);

			if (h == 0) { /* not IP: no flow */
				st->no_hash++;
				sl_pkt_set_verdict(pkts[i], SL_NEXT);
				continue;
			}
			draw = smp_mix(st->seed ^ ((uint64_t)h << 32 | h));
		}
		if (draw <= st->threshold) {
			st->sampled++;
			st->sampled_bytes += len;
			sl_pkt_set_verdict(pkts[i], st->to_verdict);
		} else {
			sl_pkt_set_verdict(pkts[i], SL_NEXT);
		}
	}
}

/* The counters line; format documented in README.md. */
static void
smp_print(struct smp_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "sampler", reason,
			   now, st->pkts, st->bytes);
	fprintf(stderr,
		"%s by=%s one_in=%" PRIu32 " sampled=%" PRIu64
		" sampled_bytes=%" PRIu64 " passed=%" PRIu64 " no_hash=%" PRIu64
		"\n",
		head, smp_by_names[st->by], st->one_in, st->sampled,
		st->sampled_bytes, st->pkts - st->sampled, st->no_hash);
	fflush(stderr);
}

static void
smp_tick(struct sl_nf *nf, uint64_t now)
{
	struct smp_state *st = sl_nf_priv(nf);

	if (sl_stats_line_due(&st->stats, now))
		smp_print(st, "interval", now);
}

/*
 * Message(sampler, key, value): one-in changes N from the next packet on;
 * stats prints the counters now.
 */
static void
smp_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct smp_state *st = sl_nf_priv(nf);
	const char *result = "applied";
	double v;

	if (strcmp(key, "one-in") == 0) {
		if (sl_parse_number(value, 1, SMP_MAX_N, 0, &v) == 0) {
			st->one_in = (uint32_t)v;
			st->threshold = smp_threshold(st->one_in);
		} else {
			result =
				"invalid (a whole number from 1 to 1000000000)";
		}
	} else if (strcmp(key, "stats") == 0) {
		smp_print(st, "message", sl_now_ns());
	} else {
		result = "ignored (keys: one-in, stats)";
	}
	fprintf(stderr, "sampler-message: key=%s value=%s %s\n", key, value,
		result);
	fflush(stderr);
}

static const char smp_usage[] = "usage: " SMP_PROG
				" [EAL args] -- [libsluice args] --to SERVICE"
				" [--one-in N] [--by packet|flow]\n"
				"       [--seed N] [--stats-ms MS]\n";

_Static_assert(SMP_BY_PACKET == 0 && SMP_BY_FLOW == 1,
	       "smp_opts: choices are stored as their index");

static const struct sl_nf_opt smp_opts[] = {
	{.name = "to",
	 .type = SL_OPT_SERVICE,
	 .arg = "SERVICE",
	 .help = "where the sampled packets go (required)",
	 SL_OPT_AT(struct smp_state, to)},
	{.name = "one-in",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "sample 1 packet (or flow) in N (default 100)",
	 SL_OPT_AT(struct smp_state, one_in),
	 .min = 1,
	 .max = SMP_MAX_N,
	 .def = "100"},
	{.name = "by",
	 .type = SL_OPT_CHOICE,
	 .arg = "WHAT",
	 .help = "packet (random, default) or flow (by flow hash)",
	 SL_OPT_AT(struct smp_state, by),
	 .choices = smp_by_names,
	 .what = "packet or flow"},
	{.name = "seed",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "seed of the generator and of the flow choice (default 1)",
	 SL_OPT_AT(struct smp_state, seed),
	 .max = 1e15,
	 .def = "1"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print stats every MS (default 5000; 0 = only at exit)",
	 SL_OPT_AT(struct smp_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

static int
smp_init(struct sl_nf *nf, int argc, char **argv)
{
	struct smp_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();

	(void)argc;
	(void)argv;
	if (st->to < 0) {
		fprintf(stderr, SMP_PROG ": missing --to SERVICE\n");
		fputs(smp_usage, stderr);
		return EINVAL;
	}
	st->to_verdict = SL_TO((unsigned)st->to);
	st->prng = st->seed;
	st->threshold = smp_threshold(st->one_in);
	sl_stats_line_start(&st->stats, st->stats_ms * SMP_MS, now);
	fprintf(stderr,
		SMP_PROG ": sampling 1 %s in %" PRIu32 " to service %d, seed "
			 "%" PRIu64 "\n",
		st->by == SMP_BY_PACKET ? "packet" : "flow", st->one_in, st->to,
		st->seed);
	return 0;
}

static void
smp_fini(struct sl_nf *nf)
{
	struct smp_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	smp_print(st, "exit", sl_now_ns());
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops smp_ops = {
	.name = SMP_PROG,
	.service = "sampler",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = smp_init,
	.process = smp_process,
	.tick = smp_tick,
	.on_message = smp_message,
	.fini = smp_fini,
	.usage = smp_usage,
	.opts = smp_opts,
	.priv_size = sizeof(struct smp_state),
	.opts_help_col = 18,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&smp_ops, argc, argv);
}
