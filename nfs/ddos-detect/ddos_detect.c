/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ddos-detect: the DDoS detector of SDNFV's anomaly-detection graph
 * (§2, §5). A read-only NF: it counts packets (or TCP SYNs) per source
 * prefix (--prefix-len for IPv4, --prefix-len6 for IPv6) over a window of
 * --window-ms, and when a prefix reaches --threshold packets in one window
 * (or --pps on average over it) it sends one Message(alarm, "PREFIX/LEN")
 * (sluice/flow.h): the orchestrator reacts to it, for instance by starting
 * a scrubber for the prefix. A prefix alarms again only --rearm-ms after
 * its last alarm. Every packet goes on with SL_NEXT.
 *
 * Prefixes live in a DPDK rte_hash of --prefixes entries; when it is full,
 * packets of new prefixes are counted as untracked. Prefixes idle for
 * --idle-ms (and not within --rearm-ms of an alarm) are evicted.
 * Options and the output format: nfs/ddos-detect/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "prefix.h"

#define DD_PROG "sluice-ddos-detect"
#define DD_CHUNK 64 /* keys per bulk lookup */
#define DD_DEFAULT_PREFIXES 65536
#define DD_MAX_PREFIXES (1u << 24)
#define DD_MAX_PROTECT 16
#define DD_TICK_MS 10
#define DD_NS UINT64_C(1000000000)
#define DD_MS UINT64_C(1000000)
#define DD_NAME_LEN 64
#define DD_KEY_LEN 64 /* Message key, as sluiced holds it */
#define DD_PENDING 64 /* recent alarms remembered for on_reply */
#define DD_HASH_BYTES_PER_KEY 64

enum dd_count_mode { DD_COUNT_PACKETS, DD_COUNT_SYN };

/* Per-prefix state, indexed by the prefix's rte_hash position. */
struct dd_entry {
	uint64_t win_start_ns;
	uint64_t last_ns;
	uint64_t alarm_ns; /* last alarm */
	uint64_t count;    /* in the current window */
	uint8_t used;
	uint8_t alarmed; /* an alarm was sent */
};

struct dd_pending {
	int64_t id;
	struct ddos_prefix prefix;
};

/* The NF's state: its private context (libsluice allocates it). */
struct dd_state {
	struct rte_hash *h;
	struct dd_entry *ents; /* [n_slots] */
	uint32_t n_slots;
	uint32_t capacity; /* --prefixes */
	uint32_t n_prefixes;

	/* Options, as given (libsluice stores them), */
	uint64_t window_ms, rearm_ms, stats_ms;
	uint64_t threshold_opt; /* --threshold, or 0 */
	double idle_ms;
	int idle_set; /* --idle-ms given */
	/* and as used. */
	unsigned len4, len6;
	uint64_t window_ns;
	uint64_t threshold; /* packets per window */
	double pps;         /* --pps, or 0 */
	uint64_t rearm_ns;  /* 0: never again */
	uint64_t idle_ns;
	uint64_t stats_ns; /* 0: only at exit */
	int count_mode;
	char key[DD_KEY_LEN];
	char to_name[DD_NAME_LEN]; /* "" = own service */
	int to;                    /* service id, -1 until known */
	struct ddos_prefix protect[DD_MAX_PROTECT];
	unsigned n_protect;

	/* Counters, since init. */
	uint64_t pkts, bytes, non_ip;
	uint64_t counted;   /* packets counted against a prefix */
	uint64_t ignored;   /* not counted: --protect, or not a SYN */
	uint64_t untracked; /* counted packets of new prefixes, table full */
	uint64_t prefixes_seen, evicted;
	uint64_t alarms, not_queued, delivered, rejected;

	struct sl_stats_line stats;
	uint32_t sweep_cursor;
	uint64_t last_sweep_ns;
	struct dd_pending pend[DD_PENDING];
};

/* ---- alarms -------------------------------------------------------- */

/*
 * Sends the alarm for prefix p (entry e, which has just reached the
 * threshold) unless it alarmed less than --rearm-ms ago (or ever, with
 * --rearm-ms 0). A message that could not be queued is counted and tried
 * again at the prefix's next counted packet.
 */
static void
dd_alarm(struct dd_state *st, struct sl_nf *nf, struct dd_entry *e,
	 const struct ddos_prefix *p, uint64_t now)
{
	char text[DDOS_PREFIX_STRLEN];
	int64_t id;

	if (e->alarmed &&
	    (st->rearm_ns == 0 || now - e->alarm_ns < st->rearm_ns))
		return;
	if (st->to < 0) {
		st->to = sl_service_id(nf, st->to_name);
		if (st->to < 0) {
			st->not_queued++;
			return;
		}
	}
	ddos_prefix_format(p, text, sizeof(text));
	id = sl_message(nf, (uint16_t)st->to, st->key, text);
	if (id <= 0) {
		st->not_queued++;
		return;
	}
	e->alarmed = 1;
	e->alarm_ns = now;
	st->alarms++;
	st->pend[(uint64_t)id % DD_PENDING].id = id;
	st->pend[(uint64_t)id % DD_PENDING].prefix = *p;
	fprintf(stderr,
		"ddos-alarm: prefix=%s packets=%" PRIu64 " window_ms=%" PRIu64
		" threshold=%" PRIu64 " key=%s\n",
		text, e->count, st->window_ns / DD_MS, st->threshold, st->key);
	fflush(stderr);
}

/* ---- the packet path ----------------------------------------------- */

/* Whether the packet counts: its destination is protected (or nothing
 * is), and in SYN mode it is a TCP SYN without ACK. */
static int
dd_counts(const struct dd_state *st, struct rte_mbuf *m,
	  const struct sl_5tuple *t)
{
	if (st->n_protect > 0) {
		unsigned i;

		for (i = 0; i < st->n_protect; i++)
			if (ddos_prefix_has(&st->protect[i], t, 0))
				break;
		if (i == st->n_protect)
			return 0;
	}
	if (st->count_mode == DD_COUNT_SYN) {
		struct sl_pkt_info info;
		const struct rte_tcp_hdr *tcp;

		if (t->proto != IPPROTO_TCP || sl_pkt_parse(m, &info) != 0 ||
		    (tcp = sl_pkt_tcp(m, &info)) == NULL)
			return 0;
		/* SYN, not ACK */
		return (tcp->tcp_flags &
			(RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG)) ==
		       RTE_TCP_SYN_FLAG;
	}
	return 1;
}

static void
dd_chunk(struct dd_state *st, struct sl_nf *nf, struct rte_mbuf **pkts,
	 uint16_t n, uint64_t now)
{
	struct ddos_prefix keys[DD_CHUNK];
	const void *kp[DD_CHUNK];
	int32_t pos[DD_CHUNK];
	uint16_t i, nk = 0;

	for (i = 0; i < n; i++) {
		struct sl_5tuple t;

		st->pkts++;
		st->bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sl_pkt_set_verdict(pkts[i], SL_NEXT);
		if (unlikely(sl_pkt_5tuple(pkts[i], &t) != 0)) {
			st->non_ip++;
			continue;
		}
		if (!dd_counts(st, pkts[i], &t)) {
			st->ignored++;
			continue;
		}
		ddos_prefix_of(&t, 1, t.family == 4 ? st->len4 : st->len6,
			       &keys[nk]);
		kp[nk] = &keys[nk];
		nk++;
	}
	if (nk == 0)
		return;
	if (rte_hash_lookup_bulk(st->h, kp, nk, pos) != 0)
		for (i = 0; i < nk; i++)
			pos[i] = -ENOENT;
	for (i = 0; i < nk; i++) {
		int32_t p = pos[i];
		struct dd_entry *e;

		/* A miss may be a prefix an earlier packet of this chunk
		 * added: adding finds it; when full, a lookup does. */
		if (unlikely(p < 0))
			p = st->n_prefixes < st->capacity
				    ? rte_hash_add_key(st->h, kp[i])
				    : rte_hash_lookup(st->h, kp[i]);
		if (unlikely(p < 0)) {
			st->untracked++;
			continue;
		}
		st->counted++;
		e = &st->ents[p];
		if (unlikely(!e->used)) {
			memset(e, 0, sizeof(*e));
			e->used = 1;
			e->win_start_ns = now;
			st->n_prefixes++;
			st->prefixes_seen++;
		} else if (now - e->win_start_ns >= st->window_ns) {
			e->win_start_ns = now;
			e->count = 0;
		}
		e->count++;
		e->last_ns = now;
		if (e->count >= st->threshold)
			dd_alarm(st, nf, e, &keys[i], now);
	}
}

static void
dd_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct dd_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();
	uint16_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < DD_CHUNK ? n - done : DD_CHUNK;
		dd_chunk(st, nf, pkts + done, k, now);
	}
}

/* ---- periodic work ------------------------------------------------- */

/*
 * Evicts prefixes idle for --idle-ms, unless they alarmed less than
 * --rearm-ms ago (with --rearm-ms 0, an alarmed prefix is kept: it never
 * alarms again). Visits every position once per --idle-ms / 4, a slice
 * per tick.
 */
static void
dd_sweep(struct dd_state *st, uint64_t now)
{
	uint64_t period = st->idle_ns / 4, dt = now - st->last_sweep_ns;
	uint32_t budget = st->n_slots;

	if (dt < period)
		budget = RTE_MIN(st->n_slots,
				 (uint32_t)((double)st->n_slots * (double)dt /
					    (double)period) +
					 1);
	st->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = st->sweep_cursor;
		struct dd_entry *e = &st->ents[p];
		void *kp;

		st->sweep_cursor = p + 1 == st->n_slots ? 0 : p + 1;
		if (!e->used || now - e->last_ns < st->idle_ns)
			continue;
		if (e->alarmed &&
		    (st->rearm_ns == 0 || now - e->alarm_ns < st->rearm_ns))
			continue;
		if (rte_hash_get_key_with_position(st->h, (int32_t)p, &kp) != 0)
			continue;
		struct ddos_prefix key;

		memcpy(&key, kp, sizeof(key));
		(void)rte_hash_del_key(st->h, &key);
		memset(e, 0, sizeof(*e));
		st->n_prefixes--;
		st->evicted++;
	}
}

/* The report; format documented in README.md. */
static void
dd_print(struct dd_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "ddos", reason, now,
			   st->pkts, st->bytes);
	fprintf(stderr,
		"%s non_ip=%" PRIu64 " counted=%" PRIu64 " ignored=%" PRIu64
		" prefixes=%" PRIu32 " prefixes_capacity=%" PRIu32
		" untracked=%" PRIu64 " prefixes_seen=%" PRIu64
		" evicted=%" PRIu64 " alarms=%" PRIu64 " delivered=%" PRIu64
		" rejected=%" PRIu64 " not_queued=%" PRIu64 "\n",
		head, st->non_ip, st->counted, st->ignored, st->n_prefixes,
		st->capacity, st->untracked, st->prefixes_seen, st->evicted,
		st->alarms, st->delivered, st->rejected, st->not_queued);
	fflush(stderr);
}

static void
dd_tick(struct sl_nf *nf, uint64_t now)
{
	struct dd_state *st = sl_nf_priv(nf);

	dd_sweep(st, now);
	if (sl_stats_line_due(&st->stats, now))
		dd_print(st, "interval", now);
}

/* ---- replies and messages ------------------------------------------ */

static void
dd_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	struct dd_state *st = sl_nf_priv(nf);
	const struct dd_pending *p;
	char text[DDOS_PREFIX_STRLEN] = "?";

	if (st == NULL)
		return;
	if (result == 0) {
		st->delivered++;
		return;
	}
	st->rejected++;
	p = &st->pend[(uint64_t)id % DD_PENDING];
	if (p->id == id)
		ddos_prefix_format(&p->prefix, text, sizeof(text));
	fprintf(stderr, "ddos-rejected: id=%" PRId64 " prefix=%s reason=%s\n",
		id, text, reason);
	fflush(stderr);
}

/*
 * Message(ddos-detect, key, value): "stats" prints the report now;
 * "rearm" with a prefix (or "all") lets that prefix alarm again at once.
 * Its own alarms (sent to its own service by default) are ignored.
 */
static void
dd_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct dd_state *st = sl_nf_priv(nf);
	const char *result = "applied";
	char err[160];

	if (st == NULL || strcmp(key, st->key) == 0)
		return;
	if (strcmp(key, "stats") == 0) {
		dd_print(st, "message", sl_now_ns());
	} else if (strcmp(key, "rearm") == 0) {
		struct ddos_prefix p;
		int32_t pos;

		if (strcmp(value, "all") == 0) {
			for (uint32_t i = 0; i < st->n_slots; i++)
				st->ents[i].alarmed = 0;
		} else if (ddos_prefix_parse(value, &p, err, sizeof(err)) !=
			   0) {
			result = "invalid (a prefix such as 10.66.6.0/24, or "
				 "all)";
		} else if ((pos = rte_hash_lookup(st->h, &p)) < 0) {
			result = "ignored (no such prefix in the table)";
		} else {
			st->ents[pos].alarmed = 0;
		}
	} else {
		result = "ignored (keys: stats, rearm)";
	}
	fprintf(stderr, "ddos-message: key=%s value=%s %s\n", key, value,
		result);
	fflush(stderr);
}

/* ---- setup --------------------------------------------------------- */

static void
dd_state_free(struct dd_state *st)
{
	if (st == NULL)
		return;
	rte_hash_free(st->h);
	free(st->ents);
	st->h = NULL;
	st->ents = NULL;
}

/* The synopsis, for --help and after an error in the options; libsluice
 * prints dd_opts' lines after it. */
static const char dd_usage[] =
	"usage: " DD_PROG " [EAL args] -- [libsluice args] "
	"[--prefix-len N] [--prefix-len6 N]\n"
	"       [--window-ms MS] [--threshold N | --pps R] "
	"[--count packets|syn]\n"
	"       [--protect PREFIX]... [--rearm-ms MS] [--key KEY] "
	"[--alarm-to SERVICE]\n"
	"       [--prefixes N] [--idle-ms MS] [--stats-ms MS]\n";

static int
dd_opt_name(const char *opt, const char *s, char *dst, size_t size,
	    const char *what)
{
	if (s[0] == '\0' || strlen(s) >= size || strchr(s, ' ') != NULL) {
		fprintf(stderr,
			DD_PROG ": %s: '%s' is not %s (1 to %zu characters, "
				"no spaces)\n",
			opt, s, what, size - 1);
		return EINVAL;
	}
	snprintf(dst, size, "%s", s);
	return 0;
}

static int
dd_protect(struct sl_nf *nf, void *priv, const char *v)
{
	struct dd_state *st = priv;
	char err[200];

	(void)nf;
	if (st->n_protect == DD_MAX_PROTECT) {
		fprintf(stderr, DD_PROG ": --protect: at most %d prefixes\n",
			DD_MAX_PROTECT);
		return EINVAL;
	}
	if (ddos_prefix_parse(v, &st->protect[st->n_protect], err,
			      sizeof(err)) != 0) {
		fprintf(stderr, DD_PROG ": --protect: %s\n", err);
		return EINVAL;
	}
	st->n_protect++;
	return 0;
}

static int
dd_key(struct sl_nf *nf, void *priv, const char *v)
{
	struct dd_state *st = priv;

	(void)nf;
	return dd_opt_name("--key", v, st->key, sizeof(st->key),
			   "a message key");
}

static int
dd_alarm_to(struct sl_nf *nf, void *priv, const char *v)
{
	struct dd_state *st = priv;

	(void)nf;
	/* a service name is 1-31 characters, as sluiced's */
	return dd_opt_name("--alarm-to", v, st->to_name,
			   RTE_MIN(sizeof(st->to_name), (size_t)32),
			   "a service name");
}

/* --idle-ms: libsluice has checked it; its default depends on the window. */
static int
dd_idle(struct sl_nf *nf, void *priv, const char *v)
{
	struct dd_state *st = priv;

	(void)nf;
	st->idle_set = 1;
	return sl_parse_number(v, 1, 86400000, 0, &st->idle_ms) == 0 ? 0
								     : EINVAL;
}

static const char *const dd_count_names[] = {"packets", "syn", NULL};
_Static_assert(DD_COUNT_PACKETS == 0 && DD_COUNT_SYN == 1,
	       "dd_opts: --count is stored as its index");
_Static_assert(DD_DEFAULT_PREFIXES == 65536 && DD_MAX_PREFIXES == 16777216,
	       "dd_opts: update --prefixes");

static const struct sl_nf_opt dd_opts[] = {
	{.name = "prefix-len",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "IPv4 source prefix length counted (default 24)",
	 SL_OPT_AT(struct dd_state, len4),
	 .min = 1,
	 .max = 32,
	 .def = "24"},
	{.name = "prefix-len6",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "IPv6 source prefix length counted (default 64)",
	 SL_OPT_AT(struct dd_state, len6),
	 .min = 1,
	 .max = 128,
	 .def = "64"},
	{.name = "window-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "counting window (default 1000)",
	 SL_OPT_AT(struct dd_state, window_ms),
	 .min = 1,
	 .max = 3600000,
	 .def = "1000"},
	{.name = "threshold",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "alarm at N packets in one window (default 10000)",
	 SL_OPT_AT(struct dd_state, threshold_opt),
	 .min = 1,
	 .max = 1e12},
	{.name = "pps",
	 .type = SL_OPT_NUMBER,
	 .arg = "R",
	 .help = "or: alarm at R packets/s on average over a window",
	 SL_OPT_AT(struct dd_state, pps),
	 .min = 0.001,
	 .max = 1e12,
	 .frac = 1},
	{.name = "count",
	 .type = SL_OPT_CHOICE,
	 .arg = "WHAT",
	 .help = "packets (default) or syn (TCP SYNs without ACK)",
	 SL_OPT_AT(struct dd_state, count_mode),
	 .choices = dd_count_names,
	 .what = "packets or syn"},
	{.name = "protect",
	 .type = SL_OPT_STRING,
	 .arg = "PREFIX",
	 .help = "count only packets to this destination prefix (repeatable)",
	 .parse = dd_protect},
	{.name = "rearm-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "a prefix alarms again only this long after (default 60000;"
		 "\n0 = never again)",
	 SL_OPT_AT(struct dd_state, rearm_ms),
	 .max = 86400000,
	 .def = "60000"},
	{.name = "key",
	 .type = SL_OPT_STRING,
	 .arg = "KEY",
	 .help = "the Message key (default alarm)",
	 .def = "alarm",
	 .parse = dd_key},
	{.name = "alarm-to",
	 .type = SL_OPT_STRING,
	 .arg = "SERVICE",
	 .help = "the service the Message goes to (default: this NF's)",
	 .parse = dd_alarm_to},
	{.name = "prefixes",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "prefix table capacity (default 65536, max 16777216)",
	 SL_OPT_AT(struct dd_state, capacity),
	 .min = 1,
	 .max = DD_MAX_PREFIXES,
	 .def = "65536"},
	{.name = "idle-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "forget prefixes idle this long (default 10000, at least 2 "
		 "windows)",
	 .min = 1,
	 .max = 86400000,
	 .parse = dd_idle},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print stats every MS (default 5000; 0 = only at exit)",
	 SL_OPT_AT(struct dd_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

/* The options as used: in ns, the threshold from --threshold or --pps,
 * and --idle-ms's default and its lower bound. */
static int
dd_settle(struct dd_state *st)
{
	double threshold = (double)st->threshold_opt;
	double idle_ms = st->idle_set ? st->idle_ms : -1;

	st->window_ns = st->window_ms * DD_MS;
	st->rearm_ns = st->rearm_ms * DD_MS;
	st->stats_ns = st->stats_ms * DD_MS;
	st->threshold = 10000;
	if (threshold > 0 && st->pps > 0) {
		fprintf(stderr,
			DD_PROG ": give --threshold (packets per window) or "
				"--pps (packets per second), not both\n");
		return EINVAL;
	}
	if (threshold > 0) {
		st->threshold = (uint64_t)threshold;
	} else if (st->pps > 0) {
		/* R packets/s over the window, rounded up: at least 1. */
		double t = st->pps * (double)st->window_ns / DD_NS - 1e-9;
		uint64_t up = (uint64_t)t;

		if ((double)up < t)
			up++;
		st->threshold = up < 1 ? 1 : up;
	}
	if (idle_ms < 0) {
		st->idle_ns = 10000 * DD_MS;
		if (st->idle_ns < 2 * st->window_ns)
			st->idle_ns = 2 * st->window_ns;
	} else if ((uint64_t)idle_ms * DD_MS < 2 * st->window_ns) {
		fprintf(stderr,
			DD_PROG ": --idle-ms %.0f: give at least 2 windows "
				"(%" PRIu64 " ms), or a prefix is forgotten "
				"while it is counted\n",
			idle_ms, 2 * st->window_ns / DD_MS);
		return EINVAL;
	} else {
		st->idle_ns = (uint64_t)idle_ms * DD_MS;
	}
	return 0;
}

static int
dd_create_table(struct dd_state *st, struct sl_nf *nf)
{
	const struct sl_nf_table_spec spec = {
		.prog = DD_PROG,
		.tag = "sldd",
		.what = "prefix",
		.whats = "prefixes",
		.entries = st->capacity,
		.key_len = sizeof(struct ddos_prefix),
		.bytes_per_key = DD_HASH_BYTES_PER_KEY,
		.slot_size = sizeof(st->ents[0]),
	};
	void *ents;
	int rc;

	rc = sl_nf_table_create(nf, &spec, &st->h, &ents, &st->n_slots);
	if (rc == 0)
		st->ents = ents;
	return rc;
}

static int
dd_init(struct sl_nf *nf, int argc, char **argv)
{
	char protect[DD_MAX_PROTECT * (DDOS_PREFIX_STRLEN + 1)] = "";
	char rate[64], rearm[64];
	struct dd_state *st = sl_nf_priv(nf);
	int rc;

	(void)argc;
	(void)argv;
	for (int i = 0; i < DD_PENDING; i++)
		st->pend[i].id = -1;
	rc = dd_settle(st);
	if (rc == 0)
		rc = dd_create_table(st, nf);
	if (rc != 0) {
		dd_state_free(st);
		return rc;
	}
	if (st->to_name[0] == '\0') {
		st->to = sl_nf_service(nf);
	} else {
		st->to = sl_service_id(nf, st->to_name);
		if (st->to < 0)
			fprintf(stderr,
				DD_PROG ": --alarm-to '%s': sluiced has no "
					"such service yet; alarms wait until "
					"it has\n",
				st->to_name);
	}
	for (unsigned i = 0; i < st->n_protect; i++) {
		size_t l = strlen(protect);

		if (i > 0)
			protect[l++] = ',';
		ddos_prefix_format(&st->protect[i], protect + l,
				   sizeof(protect) - l);
	}
	if (st->pps > 0)
		snprintf(rate, sizeof(rate), " (%g pps)", st->pps);
	else
		rate[0] = '\0';
	if (st->rearm_ns > 0)
		snprintf(rearm, sizeof(rearm), "again after %" PRIu64 " ms",
			 st->rearm_ns / DD_MS);
	else
		snprintf(rearm, sizeof(rearm), "once (never again)");
	st->last_sweep_ns = sl_now_ns();
	sl_stats_line_start(&st->stats, st->stats_ns, st->last_sweep_ns);
	fprintf(stderr,
		DD_PROG ": %s per /%u (IPv4) and /%u (IPv6) source prefix to "
			"%s; alarm '%s' to %s at %" PRIu64 " in %" PRIu64
			" ms%s, %s; up to %" PRIu32
			" prefixes, idle after %" PRIu64 " ms\n",
		st->count_mode == DD_COUNT_SYN ? "TCP SYNs" : "packets",
		st->len4, st->len6, st->n_protect ? protect : "any destination",
		st->key, st->to_name[0] ? st->to_name : "(this service)",
		st->threshold, st->window_ns / DD_MS, rate, rearm, st->capacity,
		st->idle_ns / DD_MS);
	return 0;
}

static void
dd_fini(struct sl_nf *nf)
{
	struct dd_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	dd_print(st, "exit", sl_now_ns());
	dd_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops dd_ops = {
	.name = DD_PROG,
	.service = "ddos-detect",
	.access = SL_ACCESS_READ,
	.init = dd_init,
	.process = dd_process,
	.tick = dd_tick,
	.tick_ms = DD_TICK_MS,
	.on_message = dd_message,
	.on_reply = dd_reply,
	.fini = dd_fini,
	.usage = dd_usage,
	.opts = dd_opts,
	.priv_size = sizeof(struct dd_state),
	.opts_help_col = 22,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&dd_ops, argc, argv);
}
