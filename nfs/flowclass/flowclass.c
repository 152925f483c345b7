/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-flowclass: the ant/elephant flow detector of SDNFV (§3.4, §5).
 *
 * It keeps per-flow state and, over a window (--window-ms), classifies each
 * flow by its packet rate and mean packet size: an "ant" (latency
 * sensitive: at most --ant-max-pps and at most --ant-max-size bytes per
 * packet on average) or an "elephant" (anything else). When a flow's class
 * changes it asks sluiced, with ChangeDefault, to make --ant-to or
 * --elephant-to the flow's default next hop at service --at (its own
 * service by default). Every packet goes on with SL_NEXT: the detector
 * never holds, drops or changes a packet; later packets of a re-routed flow
 * follow the new default edge.
 *
 * Flows are keyed by the 5-tuple in a canonical direction (both directions
 * of a connection are one flow, as in sluiced's flow table) in an rte_hash
 * of --flows entries; when it is full, packets of new flows are counted as
 * flows_untracked. Flows idle for --idle-ms are evicted. Output format and
 * options: nfs/flowclass/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash.h>
#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#define FC_PROG "sluice-flowclass"
#define FC_CHUNK 64 /* keys per bulk lookup */
#define FC_DEFAULT_FLOWS 65536
#define FC_MAX_FLOWS (1u << 24)
#define FC_TICK_MS 10
#define FC_NS UINT64_C(1000000000)
#define FC_MS UINT64_C(1000000)
#define FC_PENDING 256 /* recent requests remembered for on_reply */
#define FC_NAME_LEN 64
#define FC_HASH_BYTES_PER_FLOW 74 /* rte_hash, 40-byte keys (as monitor) */

enum fc_class { FC_NONE = 0, FC_ANT, FC_ELEPHANT, FC_CLASS_MAX };

static const char *const fc_class_names[FC_CLASS_MAX] = {"none", "ant",
							 "elephant"};

/* Per-flow state, indexed by the flow's rte_hash position. */
struct fc_flow {
	uint64_t win_start_ns; /* current window */
	uint64_t last_ns;      /* last packet */
	uint64_t win_bytes;
	uint32_t win_pkts;
	uint8_t used;
	uint8_t cls;      /* current class */
	uint8_t routed;   /* class whose target was last asked for */
	uint8_t cand;     /* class seen in the last windows (--confirm) */
	uint8_t streak;   /* windows in a row that saw cand */
	uint8_t reversed; /* first packet ran dst -> src of the key */
};

/* Where a class sends its flows: --ant-to / --elephant-to. */
struct fc_target {
	char name[FC_NAME_LEN]; /* as given; "" = no target */
	int resolved;
	sl_verdict_t to;
};

struct fc_pending {
	int64_t id;
	struct sl_5tuple key;
	uint8_t reversed;
	uint8_t cls;
};

/* The NF's state: its private context (libsluice allocates it and stores
 * the options in it). */
struct fc_state {
	struct rte_hash *h;
	struct fc_flow *flows; /* [max key id + 1] */
	uint32_t capacity;     /* --flows */
	uint32_t n_flows;
	uint32_t n_class[FC_CLASS_MAX]; /* flows per current class */

	uint64_t window_ms; /* --window-ms, --stats-ms, --idle-ms as given */
	uint64_t stats_ms;
	double idle_ms;
	int idle_set; /* --idle-ms given */
	uint64_t window_ns;
	uint64_t idle_ns;
	uint64_t stats_ns; /* 0: only at exit */
	double ant_max_pps;
	uint32_t ant_max_size;
	uint32_t confirm;
	char at_name[FC_NAME_LEN]; /* "" = own service */
	int at;                    /* service id, -1 until known */
	struct fc_target target[FC_CLASS_MAX];

	/* Counters, since init. */
	uint64_t pkts, bytes, non_ip;
	uint64_t untracked; /* packets of flows that found the table full */
	uint64_t flows_seen, evicted, changes;
	uint64_t requests, applied, rejected;
	uint64_t not_queued; /* sl_change_default failed: retried later */

	uint32_t n_slots;      /* table positions: max key id + 1 */
	uint32_t sweep_cursor; /* next position the sweep visits */
	uint64_t last_sweep_ns;
	struct sl_stats_line stats;
	struct fc_pending pend[FC_PENDING];
};

/* The flow in the direction of its first packet, formatted. */
static void
fc_format(const struct sl_5tuple *key, int reversed, char *buf, uint32_t sz)
{
	struct sl_5tuple t = *key;

	if (reversed)
		sl_5tuple_swap(&t);
	sl_5tuple_format(&t, buf, sz);
}

/* ---- targets ------------------------------------------------------- */

/*
 * Resolves a hop: a service name, "port:NAME" or "drop". 1 when resolved
 * (or no target), 0 for a service sluiced does not know yet (looked up
 * again later), -1 for an unknown port (ports never change).
 */
static int
fc_resolve(struct sl_nf *nf, struct fc_target *t)
{
	int id;

	if (t->name[0] == '\0' || t->resolved)
		return 1;
	if (strcmp(t->name, "drop") == 0) {
		t->to = SL_DROP;
	} else if (strncmp(t->name, "port:", 5) == 0) {
		id = sl_port_id(nf, t->name + 5);
		if (id < 0)
			return -1;
		t->to = SL_OUT((uint16_t)id);
	} else {
		id = sl_service_id(nf, t->name);
		if (id < 0)
			return 0;
		t->to = SL_TO((uint16_t)id);
	}
	t->resolved = 1;
	return 1;
}

/* Looks up what was not known yet; 1 once everything is. */
static int
fc_resolve_all(struct fc_state *st, struct sl_nf *nf)
{
	int done = 1;

	if (st->at < 0) {
		st->at = sl_service_id(nf, st->at_name);
		done &= st->at >= 0;
	}
	for (int c = FC_ANT; c < FC_CLASS_MAX; c++)
		done &= fc_resolve(nf, &st->target[c]) == 1;
	return done;
}

/* ---- classification ------------------------------------------------ */

/*
 * Asks sluiced to send flow f (key) to the target of its class, unless it
 * was already asked. Postponed while the target or --at is unknown, and
 * when the request could not be queued (counted; tried again at the next
 * window).
 */
static void
fc_route(struct fc_state *st, struct sl_nf *nf, struct fc_flow *f,
	 const struct sl_5tuple *key)
{
	const struct fc_target *t = &st->target[f->cls];
	struct sl_flow_match fm;
	struct fc_pending *p;
	int64_t id;

	if (f->routed == f->cls)
		return;
	if (t->name[0] == '\0') {
		f->routed = f->cls; /* no target for this class */
		return;
	}
	if (!t->resolved || st->at < 0)
		return;
	memset(&fm, 0, sizeof(fm));
	fm.exact = 1;
	fm.tuple = *key;
	id = sl_change_default(nf, &fm, (uint16_t)st->at, t->to);
	if (id <= 0) {
		st->not_queued++;
		return;
	}
	st->requests++;
	f->routed = f->cls;
	p = &st->pend[(uint64_t)id % FC_PENDING];
	p->id = id;
	p->key = *key;
	p->reversed = f->reversed;
	p->cls = f->cls;
}

/*
 * Ends the current window of f at now: classifies the flow by what the
 * window saw (a window without packets keeps the class), reports a class
 * change and re-routes the flow.
 */
static void
fc_close_window(struct fc_state *st, struct sl_nf *nf, struct fc_flow *f,
		const struct sl_5tuple *key, uint64_t now)
{
	uint64_t dt = now - f->win_start_ns;

	if (f->win_pkts > 0 && dt > 0) {
		double pps = (double)f->win_pkts * FC_NS / (double)dt;
		double size = (double)f->win_bytes / f->win_pkts;
		uint8_t c = pps <= st->ant_max_pps && size <= st->ant_max_size
				    ? FC_ANT
				    : FC_ELEPHANT;

		if (c == f->cls) {
			f->streak = 0;
		} else {
			if (c != f->cand) {
				f->cand = c;
				f->streak = 0;
			}
			f->streak++;
			if (f->cls == FC_NONE || f->streak >= st->confirm) {
				char flow[128];

				st->n_class[f->cls]--;
				st->n_class[c]++;
				f->cls = c;
				f->streak = 0;
				st->changes++;
				fc_format(key, f->reversed, flow, sizeof(flow));
				fprintf(stderr,
					"flowclass: %s %s pps=%.1f size=%.0f\n",
					flow, fc_class_names[c], pps, size);
			}
		}
	}
	f->win_start_ns = now;
	f->win_pkts = 0;
	f->win_bytes = 0;
	fc_route(st, nf, f, key);
}

/* ---- the packet path ----------------------------------------------- */

static void
fc_chunk(struct fc_state *st, struct sl_nf *nf, struct rte_mbuf **pkts,
	 uint16_t n, uint64_t now)
{
	struct sl_5tuple keys[FC_CHUNK];
	const void *kp[FC_CHUNK];
	uint32_t len[FC_CHUNK];
	int32_t pos[FC_CHUNK];
	uint8_t rev[FC_CHUNK];
	uint16_t i, nk = 0;
	int rc;

	for (i = 0; i < n; i++) {
		uint32_t bytes = rte_pktmbuf_pkt_len(pkts[i]);

		st->pkts++;
		st->bytes += bytes;
		sl_pkt_set_verdict(pkts[i], SL_NEXT);
		/* the flow sluiced's table has (a fragment's ports 0): the
		 * one a ChangeDefault for it must name */
		rc = sl_pkt_flow_tuple(pkts[i], &keys[nk]);
		if (unlikely(rc != 0)) {
			st->non_ip++;
			continue;
		}
		rev[nk] = (uint8_t)sl_5tuple_canonical(&keys[nk]);
		kp[nk] = &keys[nk];
		len[nk++] = bytes;
	}
	if (nk == 0)
		return;
	if (rte_hash_lookup_bulk(st->h, kp, nk, pos) != 0)
		for (i = 0; i < nk; i++)
			pos[i] = -ENOENT;
	for (i = 0; i < nk; i++) {
		int32_t p = pos[i];
		struct fc_flow *f;

		/* A miss may be a flow an earlier packet of this chunk
		 * added: adding finds it, and when the table is full a
		 * second lookup does. */
		if (unlikely(p < 0))
			p = st->n_flows < st->capacity
				    ? rte_hash_add_key(st->h, kp[i])
				    : rte_hash_lookup(st->h, kp[i]);
		if (unlikely(p < 0)) {
			st->untracked++;
			continue;
		}
		f = &st->flows[p];
		if (unlikely(!f->used)) {
			memset(f, 0, sizeof(*f));
			f->used = 1;
			f->win_start_ns = now;
			f->reversed = rev[i];
			st->n_flows++;
			st->n_class[FC_NONE]++;
			st->flows_seen++;
		} else if (now - f->win_start_ns >= st->window_ns) {
			fc_close_window(st, nf, f, &keys[i], now);
		}
		f->win_pkts++;
		f->win_bytes += len[i];
		f->last_ns = now;
	}
}

static void
fc_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct fc_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();
	uint16_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < FC_CHUNK ? n - done : FC_CHUNK;
		fc_chunk(st, nf, pkts + done, k, now);
	}
}

/* ---- periodic work ------------------------------------------------- */

/*
 * Closes the windows of flows that had no packet to close them, retries
 * postponed requests, and evicts flows idle for --idle-ms. Visits every
 * position of the table once per half window, a slice per tick in
 * proportion to the time since the last one (so no tick stalls the NF for
 * a whole table). Walks by position: an eviction never disturbs the walk.
 */
static void
fc_sweep(struct fc_state *st, struct sl_nf *nf, uint64_t now)
{
	uint64_t period = st->window_ns / 2, dt = now - st->last_sweep_ns;
	uint32_t budget = st->n_slots;

	if (dt < period) /* rounded up: the walk always moves on */
		budget = RTE_MIN(st->n_slots,
				 (uint32_t)((double)st->n_slots * (double)dt /
					    (double)period) +
					 1);

	st->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = st->sweep_cursor;
		struct fc_flow *f = &st->flows[p];
		struct sl_5tuple key;
		void *kp;

		st->sweep_cursor = p + 1 == st->n_slots ? 0 : p + 1;

		if (!f->used ||
		    rte_hash_get_key_with_position(st->h, (int32_t)p, &kp) != 0)
			continue;
		memcpy(&key, kp, sizeof(key));
		if (now - f->last_ns >= st->idle_ns) {
			(void)rte_hash_del_key(st->h, &key);
			st->n_class[f->cls]--;
			st->n_flows--;
			st->evicted++;
			memset(f, 0, sizeof(*f));
			continue;
		}
		if (now - f->win_start_ns >= st->window_ns)
			fc_close_window(st, nf, f, &key, now);
		else
			fc_route(st, nf, f, &key);
	}
}

/* The report; format documented in README.md. */
static void
fc_print(struct fc_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "flowclass", reason,
			   now, st->pkts, st->bytes);
	fprintf(stderr,
		"%s non_ip=%" PRIu64 " flows=%" PRIu32
		" flows_capacity=%" PRIu32 " flows_untracked=%" PRIu64
		" flows_seen=%" PRIu64 " evicted=%" PRIu64
		" unclassified=%" PRIu32 " ants=%" PRIu32 " elephants=%" PRIu32
		" changes=%" PRIu64 " requests=%" PRIu64 " applied=%" PRIu64
		" rejected=%" PRIu64 " not_queued=%" PRIu64 "\n",
		head, st->non_ip, st->n_flows, st->capacity, st->untracked,
		st->flows_seen, st->evicted, st->n_class[FC_NONE],
		st->n_class[FC_ANT], st->n_class[FC_ELEPHANT], st->changes,
		st->requests, st->applied, st->rejected, st->not_queued);
	fflush(stderr);
}

static void
fc_tick(struct sl_nf *nf, uint64_t now)
{
	struct fc_state *st = sl_nf_priv(nf);

	(void)fc_resolve_all(st, nf);
	fc_sweep(st, nf, now);
	if (sl_stats_line_due(&st->stats, now))
		fc_print(st, "interval", now);
}

/* ---- replies and messages ------------------------------------------ */

static void
fc_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	struct fc_state *st = sl_nf_priv(nf);
	const struct fc_pending *p;
	char flow[128];

	if (st == NULL)
		return;
	p = &st->pend[(uint64_t)id % FC_PENDING];
	if (result == 0) {
		st->applied++;
		return;
	}
	st->rejected++;
	if (p->id == id) {
		fc_format(&p->key, p->reversed, flow, sizeof(flow));
		fprintf(stderr,
			"flowclass-rejected: id=%" PRId64 " flow=%s class=%s "
			"to=%s reason=%s\n",
			id, flow, fc_class_names[p->cls],
			st->target[p->cls].name, reason);
	} else {
		fprintf(stderr,
			"flowclass-rejected: id=%" PRId64 " reason=%s\n", id,
			reason);
	}
	fflush(stderr);
}

/*
 * Message(flowclass, key, value) from the control plane: ant-max-pps and
 * ant-max-size change the thresholds from the next window on; "stats"
 * prints the report now.
 */
static void
fc_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct fc_state *st = sl_nf_priv(nf);
	const char *result = "applied";
	double v;

	if (st == NULL)
		return;
	if (strcmp(key, "ant-max-pps") == 0) {
		if (sl_parse_number(value, 0, 1e9, 1, &v) == 0)
			st->ant_max_pps = v;
		else
			result = "invalid (a rate from 0 to 1e9)";
	} else if (strcmp(key, "ant-max-size") == 0) {
		if (sl_parse_number(value, 1, 1000000, 0, &v) == 0)
			st->ant_max_size = (uint32_t)v;
		else
			result = "invalid (bytes from 1 to 1000000)";
	} else if (strcmp(key, "stats") == 0) {
		fc_print(st, "message", sl_now_ns());
	} else {
		result = "ignored (keys: ant-max-pps, ant-max-size, stats)";
	}
	fprintf(stderr, "flowclass-message: key=%s value=%s %s\n", key, value,
		result);
	fflush(stderr);
}

/* ---- setup --------------------------------------------------------- */

static void
fc_state_free(struct fc_state *st)
{
	if (st == NULL)
		return;
	rte_hash_free(st->h);
	free(st->flows);
	st->h = NULL;
	st->flows = NULL;
}

/* The synopsis, for --help and after an error in the options; libsluice
 * prints fc_opts' lines after it. */
static const char fc_usage[] =
	"usage: " FC_PROG " [EAL args] -- [libsluice args] "
	"[--window-ms MS]\n"
	"       [--ant-max-pps N] [--ant-max-size BYTES] [--ant-to HOP]"
	" [--elephant-to HOP]\n"
	"       [--at SERVICE] [--confirm N] [--flows N] [--idle-ms MS]"
	" [--stats-ms MS]\n";

static int
fc_opt_name(const char *opt, const char *s, char *dst)
{
	if (s[0] == '\0' || strlen(s) >= FC_NAME_LEN) {
		fprintf(stderr,
			FC_PROG ": %s: '%s' is not a service name, port:NAME "
				"or drop (1 to %d characters)\n",
			opt, s, FC_NAME_LEN - 1);
		return EINVAL;
	}
	snprintf(dst, FC_NAME_LEN, "%s", s);
	return 0;
}

static int
fc_ant_to(struct sl_nf *nf, void *priv, const char *v)
{
	(void)nf;
	return fc_opt_name("--ant-to", v,
			   ((struct fc_state *)priv)->target[FC_ANT].name);
}

static int
fc_elephant_to(struct sl_nf *nf, void *priv, const char *v)
{
	(void)nf;
	return fc_opt_name("--elephant-to", v,
			   ((struct fc_state *)priv)->target[FC_ELEPHANT].name);
}

static int
fc_at(struct sl_nf *nf, void *priv, const char *v)
{
	int rc = fc_opt_name("--at", v, ((struct fc_state *)priv)->at_name);

	(void)nf;
	if (rc == 0 &&
	    (strcmp(v, "drop") == 0 || strncmp(v, "port:", 5) == 0)) {
		fprintf(stderr,
			FC_PROG
			": --at '%s': give a service (where the default "
			"edge changes), not a port or drop\n",
			v);
		rc = EINVAL;
	}
	return rc;
}

/* --idle-ms: libsluice has checked it; its default depends on the window. */
static int
fc_idle(struct sl_nf *nf, void *priv, const char *v)
{
	struct fc_state *st = priv;

	(void)nf;
	st->idle_set = 1;
	return sl_parse_number(v, 30, 86400000, 0, &st->idle_ms) == 0 ? 0
								      : EINVAL;
}

_Static_assert(FC_DEFAULT_FLOWS == 65536 && FC_MAX_FLOWS == 16777216,
	       "fc_opts: update --flows");
static const struct sl_nf_opt fc_opts[] = {
	{.name = "window-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "classification window (default 1000)",
	 SL_OPT_AT(struct fc_state, window_ms),
	 .min = 10,
	 .max = 3600000,
	 .def = "1000"},
	{.name = "ant-max-pps",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "an ant sends at most N packets/s (default 1000)",
	 SL_OPT_AT(struct fc_state, ant_max_pps),
	 .max = 1e9,
	 .frac = 1,
	 .def = "1000"},
	{.name = "ant-max-size",
	 .type = SL_OPT_NUMBER,
	 .arg = "B",
	 .help = "and at most B bytes per packet on average (default 512)",
	 SL_OPT_AT(struct fc_state, ant_max_size),
	 .min = 1,
	 .max = 1000000,
	 .def = "512"},
	{.name = "ant-to",
	 .type = SL_OPT_STRING,
	 .arg = "HOP",
	 .help = "default next hop for ants: a service, port:NAME or drop",
	 .parse = fc_ant_to},
	{.name = "elephant-to",
	 .type = SL_OPT_STRING,
	 .arg = "HOP",
	 .help = "default next hop for elephants",
	 .parse = fc_elephant_to},
	{.name = "at",
	 .type = SL_OPT_STRING,
	 .arg = "SERVICE",
	 .help = "where the default changes (default: this NF's service)",
	 .parse = fc_at},
	{.name = "confirm",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "windows in a row before a class change (default 1)",
	 SL_OPT_AT(struct fc_state, confirm),
	 .min = 1,
	 .max = 100,
	 .def = "1"},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "flow table capacity (default 65536, max 16777216)",
	 SL_OPT_AT(struct fc_state, capacity),
	 .min = 1,
	 .max = FC_MAX_FLOWS,
	 .def = "65536"},
	{.name = "idle-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "evict flows idle this long (default 10000, at least 3 "
		 "windows)",
	 .min = 30,
	 .max = 86400000,
	 .parse = fc_idle},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print stats every MS (default 5000; 0 = only at exit)",
	 SL_OPT_AT(struct fc_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

/* The options in ns, and --idle-ms's default and its lower bound. */
static int
fc_settle(struct fc_state *st)
{
	st->window_ns = st->window_ms * FC_MS;
	st->stats_ns = st->stats_ms * FC_MS;
	if (!st->idle_set) {
		st->idle_ns = 10000 * FC_MS;
		if (st->idle_ns < 3 * st->window_ns)
			st->idle_ns = 3 * st->window_ns;
	} else if ((uint64_t)st->idle_ms * FC_MS < 3 * st->window_ns) {
		fprintf(stderr,
			FC_PROG ": --idle-ms %.0f: give at least 3 windows "
				"(%" PRIu64 " ms), or a flow is forgotten "
				"between its windows\n",
			st->idle_ms, 3 * st->window_ns / FC_MS);
		return EINVAL;
	} else {
		st->idle_ns = (uint64_t)st->idle_ms * FC_MS;
	}
	return 0;
}

static int
fc_create_table(struct fc_state *st, struct sl_nf *nf)
{
	const struct sl_nf_table_spec spec = {
		.prog = FC_PROG,
		.tag = "slfc",
		.what = "flow",
		.whats = "flows",
		.entries = st->capacity,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = FC_HASH_BYTES_PER_FLOW,
		.slot_size = sizeof(st->flows[0]),
	};
	void *flows;
	int rc;

	rc = sl_nf_table_create(nf, &spec, &st->h, &flows, &st->n_slots);
	if (rc == 0)
		st->flows = flows;
	return rc;
}

/* Resolves --at and the targets; a port that does not exist is an error,
 * a service sluiced does not know yet is looked up again from tick. */
static int
fc_check_targets(struct fc_state *st, struct sl_nf *nf)
{
	static const char *const opt[FC_CLASS_MAX] = {NULL, "--ant-to",
						      "--elephant-to"};

	if (st->at_name[0] == '\0')
		st->at = sl_nf_service(nf);
	else
		st->at = sl_service_id(nf, st->at_name);
	if (st->at < 0)
		fprintf(stderr,
			FC_PROG ": --at '%s': sluiced has no such service yet; "
				"re-routing waits until it has\n",
			st->at_name);
	for (int c = FC_ANT; c < FC_CLASS_MAX; c++) {
		int rc = fc_resolve(nf, &st->target[c]);

		if (rc < 0) {
			fprintf(stderr,
				FC_PROG ": %s '%s': no such port (sluice "
					"status lists them)\n",
				opt[c], st->target[c].name);
			return EINVAL;
		}
		if (rc == 0)
			fprintf(stderr,
				FC_PROG ": %s '%s': sluiced has no such "
					"service yet; %ss are re-routed once "
					"it has\n",
				opt[c], st->target[c].name, fc_class_names[c]);
	}
	return 0;
}

static int
fc_init(struct sl_nf *nf, int argc, char **argv)
{
	struct fc_state *st = sl_nf_priv(nf);
	int rc;

	(void)argc;
	(void)argv;
	for (int i = 0; i < FC_PENDING; i++)
		st->pend[i].id = -1;
	rc = fc_settle(st);
	if (rc == 0)
		rc = fc_check_targets(st, nf);
	if (rc == 0)
		rc = fc_create_table(st, nf);
	if (rc != 0) {
		fc_state_free(st);
		return rc;
	}
	st->last_sweep_ns = sl_now_ns();
	sl_stats_line_start(&st->stats, st->stats_ns, st->last_sweep_ns);
	fprintf(stderr,
		FC_PROG
		": window %" PRIu64 " ms; ant: at most %g pps and %" PRIu32
		" bytes per packet; ants -> %s, elephants -> %s, at "
		"%s; up to %" PRIu32 " flows, idle after %" PRIu64 " ms\n",
		st->window_ns / FC_MS, st->ant_max_pps, st->ant_max_size,
		st->target[FC_ANT].name[0] ? st->target[FC_ANT].name
					   : "(unchanged)",
		st->target[FC_ELEPHANT].name[0] ? st->target[FC_ELEPHANT].name
						: "(unchanged)",
		st->at_name[0] ? st->at_name : "(this service)", st->capacity,
		st->idle_ns / FC_MS);
	return 0;
}

static void
fc_fini(struct sl_nf *nf)
{
	struct fc_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	fc_print(st, "exit", sl_now_ns());
	fc_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops fc_ops = {
	.name = FC_PROG,
	.service = "flowclass",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = fc_init,
	.process = fc_process,
	.tick = fc_tick,
	.tick_ms = FC_TICK_MS,
	.on_message = fc_message,
	.on_reply = fc_reply,
	.fini = fc_fini,
	.usage = fc_usage,
	.opts = fc_opts,
	.priv_size = sizeof(struct fc_state),
	.opts_help_col = 22,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fc_ops, argc, argv);
}
