/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-shaper: per-class or per-flow rate limits on DPDK rte_meter
 * (srTCM, RFC 2697; trTCM, RFC 2698, colour-blind). Each packet is
 * classified (config.c: the first class whose 5-tuple match and DSCP fit),
 * metered by its class's meter or by its flow's (a bounded rte_hash table,
 * sl_nf_table_create()), and its colour decides: green passes, yellow and
 * red pass, are dropped or get a new DSCP (IPv4 header checksum updated
 * incrementally, RFC 1624). Rates change at run time by a Message and by
 * SIGHUP (the file is read again; a bad one is refused and the old
 * classes stay). State lives in the private context.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_meter.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "config.h"

#define SH_PROG "sluice-shaper"
#define SH_MS 1000000ull
#define SH_ERR_LEN 512
#define SH_SWEEP_NS 1000000000ull /* every flow slot visited once a second */


union sh_profile {
	struct rte_meter_srtcm_profile sr;
	struct rte_meter_trtcm_profile tr;
};

union sh_meter {
	struct rte_meter_srtcm sr;
	struct rte_meter_trtcm tr;
};

/* A class at run time: its profile, its meter (per class), counters. */
struct sh_cls_rt {
	union sh_profile prof;
	union sh_meter meter;
	uint64_t pkts[3], bytes[3]; /* by colour */
	uint64_t dropped, remarked, flows_full;
};

/* A configuration in use; replaced whole by a reload. */
struct sh_table {
	struct sh_config cfg;
	struct sh_cls_rt rt[SH_MAX_CLASSES];
	int per_flow; /* some class meters per flow */
};

struct sh_flow {
	union sh_meter m;
	uint64_t last_ns;
	uint8_t used;
	uint8_t cls;
};

struct sh_state {
	/* options */
	const char *path;
	uint32_t max_flows;
	uint64_t idle_ms, stats_ms;

	struct sh_table *tb;
	struct rte_hash *h; /* per-flow meters, made when a class needs it */
	struct sh_flow *flows;
	uint32_t n_slots, n_flows, sweep_cursor;
	uint64_t last_sweep_ns;
	uint64_t hz;
	struct sl_stats_line stats;

	/* counters, since init */
	uint64_t pkts, bytes, non_ip, unclassified, dropped, remarked;
	uint64_t flows_created, flows_evicted, flows_full;
};

/* ---- meters -------------------------------------------------------- */

static uint64_t
sh_cycles(const struct sh_state *st, uint64_t ns)
{
	return (uint64_t)((__uint128_t)ns * st->hz / 1000000000u);
}

static int
sh_profile(const struct sh_class *k, union sh_profile *p)
{
	if (k->kind == SH_SRTCM) {
		struct rte_meter_srtcm_params sp = {k->r.cir, k->r.cbs,
						    k->r.ebs};

		return rte_meter_srtcm_profile_config(&p->sr, &sp);
	}
	struct rte_meter_trtcm_params tp = {k->r.cir, k->r.pir, k->r.cbs,
					    k->r.pbs};

	return rte_meter_trtcm_profile_config(&p->tr, &tp);
}

/* A full meter (its buckets full) whose clock starts at cyc. */
static void
sh_meter_init(const struct sh_class *k, union sh_profile *p, union sh_meter *m,
	      uint64_t cyc)
{
	if (k->kind == SH_SRTCM) {
		(void)rte_meter_srtcm_config(&m->sr, &p->sr);
		m->sr.time = cyc; /* config set the real TSC: ours may be a
				     test's clock */
	} else {
		(void)rte_meter_trtcm_config(&m->tr, &p->tr);
		m->tr.time_tc = cyc;
		m->tr.time_tp = cyc;
	}
}

static enum rte_color
sh_meter_check(const struct sh_class *k, union sh_profile *p, union sh_meter *m,
	       uint64_t cyc, uint32_t len)
{
	if (k->kind == SH_SRTCM)
		return rte_meter_srtcm_color_blind_check(&m->sr, &p->sr, cyc,
							 len);
	return rte_meter_trtcm_color_blind_check(&m->tr, &p->tr, cyc, len);
}

/* ---- per-flow meters ----------------------------------------------- */

static int
sh_flows_create(struct sl_nf *nf, struct sh_state *st)
{
	const struct sl_nf_table_spec spec = {
		.prog = SH_PROG,
		.tag = "slsh",
		.what = "flow",
		.whats = "flows",
		.entries = st->max_flows,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = 74 + sizeof(struct sh_flow),
		.slot_size = sizeof(struct sh_flow),
	};
	void *slots = NULL;
	int rc = sl_nf_table_create(nf, &spec, &st->h, &slots, &st->n_slots);

	st->flows = slots;
	return rc;
}

static void
sh_flows_flush(struct sh_state *st)
{
	if (st->h == NULL)
		return;
	rte_hash_reset(st->h);
	memset(st->flows, 0, (size_t)st->n_slots * sizeof(st->flows[0]));
	st->n_flows = 0;
}

/* The colour of a packet of a per-flow class c; a flow that finds the
 * table full is metered by the class's meter (counted). */
static enum rte_color
sh_flow_colour(struct sh_state *st, uint32_t c, const struct sl_5tuple *t,
	       uint64_t now, uint64_t cyc, uint32_t len)
{
	struct sh_table *tb = st->tb;
	const struct sh_class *k = &tb->cfg.classes[c];
	struct sh_cls_rt *rt = &tb->rt[c];
	_Alignas(8) struct sl_5tuple key = *t;
	struct sh_flow *f;
	int32_t pos = rte_hash_lookup(st->h, &key);

	if (pos < 0 && st->n_flows < st->max_flows)
		pos = rte_hash_add_key(st->h, &key);
	if (pos < 0) {
		st->flows_full++;
		rt->flows_full++;
		return sh_meter_check(k, &rt->prof, &rt->meter, cyc, len);
	}
	f = &st->flows[pos];
	if (!f->used || f->cls != c) { /* new, or its class changed */
		if (!f->used) {
			st->n_flows++;
			st->flows_created++;
		}
		f->used = 1;
		f->cls = (uint8_t)c;
		sh_meter_init(k, &rt->prof, &f->m, cyc);
	}
	f->last_ns = now;
	return sh_meter_check(k, &rt->prof, &f->m, cyc, len);
}

/* Forgets flows idle for --flow-idle-ms, a slice of the table a tick. */
static void
sh_sweep(struct sh_state *st, uint64_t now)
{
	uint64_t dt = now - st->last_sweep_ns, idle = st->idle_ms * SH_MS;
	uint32_t budget = st->n_slots;

	if (st->h == NULL)
		return;
	if (dt < SH_SWEEP_NS)
		budget = RTE_MIN(st->n_slots,
				 (uint32_t)((double)st->n_slots * (double)dt /
					    (double)SH_SWEEP_NS) +
					 1);
	st->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = st->sweep_cursor;
		struct sh_flow *f = &st->flows[p];
		_Alignas(8) struct sl_5tuple key;
		void *kp;

		st->sweep_cursor = p + 1 == st->n_slots ? 0 : p + 1;
		if (!f->used || now - f->last_ns < idle ||
		    rte_hash_get_key_with_position(st->h, (int32_t)p, &kp) != 0)
			continue;
		memcpy(&key, kp, sizeof(key));
		(void)rte_hash_del_key(st->h, &key);
		memset(f, 0, sizeof(*f));
		st->n_flows--;
		st->flows_evicted++;
	}
}

/* ---- the packet path ----------------------------------------------- */

/* The DSCP of an IP packet (info from sl_pkt_parse()). */
static uint8_t
sh_dscp(const struct rte_mbuf *m, const struct sl_pkt_info *info)
{
	const struct rte_ipv4_hdr *ip4 = sl_pkt_ipv4(m, info);
	const struct rte_ipv6_hdr *ip6;

	if (ip4 != NULL)
		return ip4->type_of_service >> 2;
	ip6 = sl_pkt_ipv6(m, info);
	return ip6 == NULL ? 0
			   : (uint8_t)((rte_be_to_cpu_32(ip6->vtc_flow) >> 22) &
				       0x3f);
}

/* Sets the DSCP, keeping ECN; IPv4's checksum by RFC 1624 (eqn. 3). */
static void
sh_set_dscp(struct rte_mbuf *m, const struct sl_pkt_info *info, uint8_t dscp)
{
	struct rte_ipv4_hdr *ip4 = sl_pkt_ipv4(m, info);
	struct rte_ipv6_hdr *ip6;

	if (ip4 != NULL) {
		uint16_t old = (uint16_t)(ip4->version_ihl << 8 |
					  ip4->type_of_service);
		uint8_t tos = (uint8_t)(dscp << 2 | (ip4->type_of_service & 3));
		uint16_t new = (uint16_t)(ip4->version_ihl << 8 | tos);
		uint16_t ck = rte_be_to_cpu_16(ip4->hdr_checksum);

		ip4->type_of_service = tos;
		ip4->hdr_checksum =
			rte_cpu_to_be_16(sl_cksum_update16(ck, old, new));
		return;
	}
	ip6 = sl_pkt_ipv6(m, info);
	if (ip6 != NULL) {
		uint32_t v = rte_be_to_cpu_32(ip6->vtc_flow);

		v = (v & ~(0x3fu << 22)) | (uint32_t)dscp << 22;
		ip6->vtc_flow = rte_cpu_to_be_32(v);
	}
}

static sl_verdict_t
sh_pkt(struct sh_state *st, struct rte_mbuf *m, uint64_t now, uint64_t cyc)
{
	struct sh_table *tb = st->tb;
	uint32_t len = rte_pktmbuf_pkt_len(m);
	struct sl_pkt_info info;
	struct sl_5tuple t;
	const struct sh_class *k;
	struct sh_cls_rt *rt;
	enum rte_color col;
	int c;

	st->pkts++;
	st->bytes += len;
	if (sl_pkt_parse(m, &info) != 0 || sl_pkt_5tuple(m, &t) != 0) {
		st->non_ip++; /* not IP, or malformed: not metered */
		return SL_NEXT;
	}
	c = sh_classify(&tb->cfg, &t, sh_dscp(m, &info));
	if (c < 0) {
		st->unclassified++;
		return SL_NEXT;
	}
	k = &tb->cfg.classes[c];
	rt = &tb->rt[c];
	col = k->per_flow ? sh_flow_colour(st, (uint32_t)c, &t, now, cyc, len)
			  : sh_meter_check(k, &rt->prof, &rt->meter, cyc, len);
	rt->pkts[col]++;
	rt->bytes[col] += len;
	switch (k->act[col]) {
	case SH_DROP:
		rt->dropped++;
		st->dropped++;
		return SL_DROP;
	case SH_REMARK:
		sh_set_dscp(m, &info, k->mark[col]);
		rt->remarked++;
		st->remarked++;
		return SL_NEXT;
	default:
		return SL_NEXT;
	}
}

static void
sh_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct sh_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns(), cyc = sh_cycles(st, now);
	uint16_t i;

	for (i = 0; i < n; i++)
		sl_pkt_set_verdict(pkts[i], sh_pkt(st, pkts[i], now, cyc));
}

/* ---- counters ------------------------------------------------------ */

/* The report; format documented in README.md. */
static void
sh_print(struct sh_state *st, const char *reason, uint64_t now)
{
	const struct sh_table *tb = st->tb;
	char head[SL_STATS_HEAD_LEN], meter[160];
	uint32_t i;

	for (i = 0; i < tb->cfg.n_classes; i++) {
		const struct sh_class *k = &tb->cfg.classes[i];
		const struct sh_cls_rt *rt = &tb->rt[i];

		sh_class_format(k, meter, sizeof(meter));
		fprintf(stderr,
			"shaper-class: class=%" PRIu32 " name=%s per=%s "
			"meter=%s green=%" PRIu64 " green_bytes=%" PRIu64
			" yellow=%" PRIu64 " yellow_bytes=%" PRIu64
			" red=%" PRIu64 " red_bytes=%" PRIu64
			" dropped=%" PRIu64 " remarked=%" PRIu64
			" flows_full=%" PRIu64 "\n",
			i + 1, k->name, k->per_flow ? "flow" : "class", meter,
			rt->pkts[0], rt->bytes[0], rt->pkts[1], rt->bytes[1],
			rt->pkts[2], rt->bytes[2], rt->dropped, rt->remarked,
			rt->flows_full);
	}
	sl_stats_line_head(&st->stats, head, sizeof(head), "shaper", reason,
			   now, st->pkts, st->bytes);
	fprintf(stderr,
		"%s classes=%" PRIu32 " non_ip=%" PRIu64
		" unclassified=%" PRIu64 " dropped=%" PRIu64
		" remarked=%" PRIu64 " flows=%" PRIu32
		" flows_capacity=%" PRIu32 " flows_created=%" PRIu64
		" flows_evicted=%" PRIu64 " flows_full=%" PRIu64 "\n",
		head, tb->cfg.n_classes, st->non_ip, st->unclassified,
		st->dropped, st->remarked, st->n_flows,
		st->h != NULL ? st->max_flows : 0, st->flows_created,
		st->flows_evicted, st->flows_full);
	fflush(stderr);
}

static void
sh_print_classes(const struct sh_state *st, const char *verb)
{
	const struct sh_table *tb = st->tb;
	char meter[160];
	uint32_t i;

	fprintf(stderr, SH_PROG ": %s %" PRIu32 " classes from %s\n", verb,
		tb->cfg.n_classes, st->path);
	for (i = 0; i < tb->cfg.n_classes; i++) {
		const struct sh_class *k = &tb->cfg.classes[i];
		char match[200], dscp[8] = "any";

		if (k->dscp != SH_NO_DSCP)
			snprintf(dscp, sizeof(dscp), "%u", k->dscp);
		sl_match_format(&k->match, match, sizeof(match));
		sh_class_format(k, meter, sizeof(meter));
		fprintf(stderr,
			SH_PROG ":   class %" PRIu32 " (%s): match '%s' dscp "
				"%s, per %s, %s, yellow %s, red %s\n",
			i + 1, k->name, match, dscp,
			k->per_flow ? "flow" : "class", meter,
			sh_act_name(k->act[1]), sh_act_name(k->act[2]));
	}
	fflush(stderr);
}

/* ---- configuration ------------------------------------------------- */

/* Reads the file into a new table with its meters, or says why not. */
static int
sh_table_load(struct sl_nf *nf, struct sh_state *st, struct sh_table **out,
	      char *err, size_t err_size)
{
	struct sh_table *tb = calloc(1, sizeof(*tb));
	uint64_t cyc = sh_cycles(st, sl_now_ns());
	uint32_t i;
	int rc;

	if (tb == NULL) {
		snprintf(err, err_size, "out of memory");
		return ENOMEM;
	}
	rc = sh_config_load(st->path, &tb->cfg, err, err_size);
	for (i = 0; rc == 0 && i < tb->cfg.n_classes; i++) {
		const struct sh_class *k = &tb->cfg.classes[i];

		if (sh_profile(k, &tb->rt[i].prof) != 0) {
			snprintf(err, err_size,
				 "%s: class %" PRIu32 ": rte_meter refuses "
				 "these rates",
				 st->path, i + 1);
			rc = -EINVAL;
			break;
		}
		sh_meter_init(k, &tb->rt[i].prof, &tb->rt[i].meter, cyc);
		tb->per_flow |= k->per_flow;
	}
	if (rc == 0 && tb->per_flow && st->h == NULL &&
	    sh_flows_create(nf, st) != 0) {
		snprintf(err, err_size, "no per-flow table (said above)");
		rc = -ENOMEM;
	}
	if (rc != 0) {
		free(tb);
		return -rc;
	}
	*out = tb;
	return 0;
}

static void
sh_reload(struct sl_nf *nf)
{
	struct sh_state *st = sl_nf_priv(nf);
	struct sh_table *tb = NULL;
	char err[SH_ERR_LEN];

	sh_print(st, "reload", sl_now_ns());
	if (sh_table_load(nf, st, &tb, err, sizeof(err)) != 0) {
		fprintf(stderr,
			SH_PROG ": reload failed, keeping the %" PRIu32
				" current classes: %s\n",
			st->tb->cfg.n_classes, err);
		fflush(stderr);
		return;
	}
	free(st->tb);
	st->tb = tb;
	sh_flows_flush(st); /* their meters were the old classes' */
	sh_print_classes(st, "reloaded");
}

static int
sh_class_named(const struct sh_state *st, const char *name, size_t len)
{
	uint32_t i;

	for (i = 0; i < st->tb->cfg.n_classes; i++)
		if (strlen(st->tb->cfg.classes[i].name) == len &&
		    strncmp(st->tb->cfg.classes[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

/* rate "CLASS cir=N ...": the class's new rates, from now on. */
static int
sh_rate_message(struct sh_state *st, const char *value, char *why, size_t size)
{
	const char *sp = strchr(value, ' ');
	struct sh_class *k, nk;
	int c = sp == NULL ? -1
			   : sh_class_named(st, value, (size_t)(sp - value));

	if (c < 0) {
		snprintf(why, size,
			 "invalid (give CLASS KEY=N ..., CLASS one "
			 "of the classes)");
		return EINVAL;
	}
	k = &st->tb->cfg.classes[c];
	nk = *k;
	if (sh_rates_parse(sp + 1, k->kind, &nk.r, why, size) != 0) {
		char e[SH_ERR_LEN];

		snprintf(e, sizeof(e), "invalid (%s)", why);
		snprintf(why, size, "%s", e);
		return EINVAL;
	}
	if (sh_profile(&nk, &st->tb->rt[c].prof) != 0) { /* checked: cannot */
		snprintf(why, size, "invalid (rte_meter refuses the rates)");
		(void)sh_profile(k, &st->tb->rt[c].prof);
		return EINVAL;
	}
	*k = nk;
	/* the class meter starts full at the new rates; per-flow meters go
	 * on with the new profile */
	sh_meter_init(k, &st->tb->rt[c].prof, &st->tb->rt[c].meter,
		      sh_cycles(st, sl_now_ns()));
	return 0;
}

static void
sh_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct sh_state *st = sl_nf_priv(nf);
	char why[SH_ERR_LEN] = "applied";

	if (strcmp(key, "rate") == 0)
		(void)sh_rate_message(st, value, why, sizeof(why));
	else if (strcmp(key, "stats") == 0)
		sh_print(st, "message", sl_now_ns());
	else
		snprintf(why, sizeof(why), "ignored (keys: rate, stats)");
	fprintf(stderr, "shaper-message: key=%s value=%s %s\n", key, value,
		why);
	fflush(stderr);
}

static void
sh_tick(struct sl_nf *nf, uint64_t now)
{
	struct sh_state *st = sl_nf_priv(nf);

	sh_sweep(st, now);
	if (sl_stats_line_due(&st->stats, now))
		sh_print(st, "interval", now);
}

static const char sh_usage[] = "usage: " SH_PROG
			       " [EAL args] -- [libsluice args] --config FILE"
			       " [--flows N] [--flow-idle-ms MS]\n"
			       "       [--stats-ms MS]\n";

static const struct sl_nf_opt sh_opts[] = {
	{.name = "config",
	 .letter = 'c',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "the classes, a JSON file (see nfs/shaper/README.md)",
	 SL_OPT_AT(struct sh_state, path)},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "per-flow meters at most (default 65536)",
	 SL_OPT_AT(struct sh_state, max_flows),
	 .min = 16,
	 .max = 16777216,
	 .def = "65536"},
	{.name = "flow-idle-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "forget a flow's meter after MS without a packet "
		 "(default 30000)",
	 SL_OPT_AT(struct sh_state, idle_ms),
	 .min = 1,
	 .max = 86400000,
	 .def = "30000"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print stats every MS (default 5000; 0 = only at exit)",
	 SL_OPT_AT(struct sh_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

static void
sh_state_free(struct sh_state *st)
{
	free(st->tb);
	st->tb = NULL;
	rte_hash_free(st->h);
	st->h = NULL;
	free(st->flows);
	st->flows = NULL;
}

static int
sh_init(struct sl_nf *nf, int argc, char **argv)
{
	struct sh_state *st = sl_nf_priv(nf);
	char err[SH_ERR_LEN];
	uint64_t now = sl_now_ns();
	int rc;

	(void)argc;
	(void)argv;
	if (st->path == NULL) {
		fprintf(stderr, SH_PROG ": missing --config FILE\n");
		fputs(sh_usage, stderr);
		return EINVAL;
	}
	st->hz = rte_get_tsc_hz();
	st->last_sweep_ns = now;
	rc = sh_table_load(nf, st, &st->tb, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, SH_PROG ": %s\n", err);
		sh_state_free(st);
		return rc;
	}
	sl_stats_line_start(&st->stats, st->stats_ms * SH_MS, now);
	sh_print_classes(st, "loaded");
	return 0;
}

static void
sh_fini(struct sl_nf *nf)
{
	struct sh_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	sh_print(st, "exit", sl_now_ns());
	sh_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops sh_ops = {
	.name = SH_PROG,
	.service = "shaper",
	/* it rewrites the DSCP of the classes that say remark */
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE,
	.init = sh_init,
	.process = sh_process,
	.tick = sh_tick,
	.tick_ms = 100,
	.reload = sh_reload,
	.on_message = sh_message,
	.fini = sh_fini,
	.usage = sh_usage,
	.opts = sh_opts,
	.priv_size = sizeof(struct sh_state),
	.opts_help_col = 22,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&sh_ops, argc, argv);
}
