/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-scrubber: the DDoS scrubber of SDNFV's anomaly-detection graph.
 * Given the attacking prefixes (--prefix, repeatable), it asks sluiced at
 * start, with a cross-layer RequestMe for the wildcard "src=PREFIX"
 * (sluice/flow.h), to send it the flows of each prefix, and with
 * ChangeDefault at each --at SERVICE, to make it that node's default for
 * flows of the prefix that start later (a RequestMe with a wildcard moves
 * only the flows that are live when it arrives). It drops every packet
 * whose source is in one of the prefixes (SL_DROP: sluiced counts it as an
 * nf_verdict drop of this NF) — or, with --rate, lets up to that many
 * packets per second of each prefix through — and passes everything else
 * (SL_NEXT). Options and output: nfs/scrubber/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "prefix.h"

#define SC_PROG "sluice-scrubber"
#define SC_MAX_PREFIXES 16
#define SC_MAX_AT 8
#define SC_NAME_LEN 64
#define SC_TICK_MS 10
#define SC_NS UINT64_C(1000000000)
#define SC_MS UINT64_C(1000000)
/* One RequestMe per prefix and one ChangeDefault per prefix and --at. */
#define SC_MAX_REQS (SC_MAX_PREFIXES * (1 + SC_MAX_AT))

struct sc_prefix {
	struct ddos_prefix p;
	char text[DDOS_PREFIX_STRLEN];
	double tokens; /* --rate: packets that may pass now */
	uint64_t refill_ns;
	uint8_t bucket_started;
	uint64_t pkts, dropped, passed;
};

enum sc_req_state { SC_REQ_TODO, SC_REQ_SENT, SC_REQ_APPLIED, SC_REQ_REJECTED };

struct sc_req {
	uint8_t prefix; /* index into prefixes */
	int8_t at;      /* index into at[], -1 for RequestMe */
	uint8_t state;
	int64_t id;
};

/* The NF's state: its private context (libsluice allocates it). */
struct sc_state {
	struct sc_prefix prefixes[SC_MAX_PREFIXES];
	unsigned n_prefixes;
	char at[SC_MAX_AT][SC_NAME_LEN];
	unsigned n_at;
	struct sc_req reqs[SC_MAX_REQS];
	unsigned n_reqs;
	double rate;  /* packets/s per prefix that pass; 0 = drop all */
	double burst; /* bucket size */
	uint64_t stats_ns;
	/* Options as given, before they are checked together. */
	struct ddos_prefix given[SC_MAX_PREFIXES]; /* --prefix */
	unsigned n_given;
	double burst_opt; /* --burst, or 0 */
	double stats_ms;

	/* Counters, since init. */
	uint64_t pkts, bytes, non_ip;
	uint64_t passed;         /* not from a prefix */
	uint64_t passed_rate;    /* from a prefix, within --rate */
	uint64_t dropped_prefix; /* from a prefix (no --rate) */
	uint64_t dropped_rate;   /* from a prefix, over --rate */
	uint64_t requests, applied, rejected, not_queued;

	struct sl_stats_line stats;
};

/* ---- requests ------------------------------------------------------ */

static const char *
sc_req_type(const struct sc_req *r)
{
	return r->at < 0 ? "request_me" : "change_default";
}

/*
 * Sends the requests not sent yet: RequestMe(src=PREFIX, this service)
 * and ChangeDefault(src=PREFIX, AT, this service). A service sluiced does
 * not know yet, or a request that cannot be queued, is tried again at the
 * next tick.
 */
static void
sc_send_requests(struct sc_state *st, struct sl_nf *nf)
{
	uint16_t self = sl_nf_service(nf);

	for (unsigned i = 0; i < st->n_reqs; i++) {
		struct sc_req *r = &st->reqs[i];
		const struct sc_prefix *p = &st->prefixes[r->prefix];
		struct sl_flow_match f;
		char text[DDOS_PREFIX_STRLEN + 8], err[160];
		int64_t id;

		if (r->state != SC_REQ_TODO)
			continue;
		snprintf(text, sizeof(text), "src=%s", p->text);
		if (sl_flow_match_parse(text, &f, err, sizeof(err)) != 0) {
			/* Cannot happen for a prefix ddos_prefix_parse
			 * took; say so rather than retry for ever. */
			fprintf(stderr, SC_PROG ": %s: %s\n", text, err);
			r->state = SC_REQ_REJECTED;
			st->rejected++;
			continue;
		}
		if (r->at < 0) {
			id = sl_request_me(nf, &f, self);
		} else {
			int at = sl_service_id(nf, st->at[r->at]);

			if (at < 0)
				continue; /* not known yet */
			id = sl_change_default(nf, &f, (uint16_t)at,
					       SL_TO(self));
		}
		if (id <= 0) {
			st->not_queued++;
			continue;
		}
		r->id = id;
		r->state = SC_REQ_SENT;
		st->requests++;
	}
}

static void
sc_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	struct sc_state *st = sl_nf_priv(nf);
	struct sc_req *r = NULL;

	if (st == NULL)
		return;
	for (unsigned i = 0; i < st->n_reqs; i++)
		if (st->reqs[i].state == SC_REQ_SENT && st->reqs[i].id == id)
			r = &st->reqs[i];
	if (r == NULL)
		return; /* not ours (cannot happen) */
	r->state = result == 0 ? SC_REQ_APPLIED : SC_REQ_REJECTED;
	if (result == 0)
		st->applied++;
	else
		st->rejected++;
	fprintf(stderr,
		"scrubber-request: id=%" PRId64 " type=%s prefix=%s%s%s "
		"result=%s%s%s\n",
		id, sc_req_type(r), st->prefixes[r->prefix].text,
		r->at < 0 ? "" : " at=", r->at < 0 ? "" : st->at[r->at],
		result == 0 ? "applied" : "rejected",
		result == 0 ? "" : " reason=", result == 0 ? "" : reason);
	fflush(stderr);
}

/*
 * Adds a prefix and queues its requests. 0, or EEXIST, or ENOSPC with a
 * message in err.
 */
static int
sc_add_prefix(struct sc_state *st, const struct ddos_prefix *p, char *err,
	      size_t errlen)
{
	struct sc_prefix *sp;

	for (unsigned i = 0; i < st->n_prefixes; i++)
		if (memcmp(&st->prefixes[i].p, p, sizeof(*p)) == 0) {
			snprintf(err, errlen, "already scrubbed");
			return EEXIST;
		}
	if (st->n_prefixes == SC_MAX_PREFIXES) {
		snprintf(err, errlen, "at most %d prefixes", SC_MAX_PREFIXES);
		return ENOSPC;
	}
	sp = &st->prefixes[st->n_prefixes];
	memset(sp, 0, sizeof(*sp));
	sp->p = *p;
	ddos_prefix_format(p, sp->text, sizeof(sp->text));
	sp->tokens = st->burst;
	for (int a = -1; a < (int)st->n_at; a++) {
		struct sc_req *r = &st->reqs[st->n_reqs++];

		memset(r, 0, sizeof(*r));
		r->prefix = (uint8_t)st->n_prefixes;
		r->at = (int8_t)a;
		r->state = SC_REQ_TODO;
	}
	st->n_prefixes++;
	return 0;
}

/* ---- the packet path ----------------------------------------------- */

/* Whether a packet of prefix p passes --rate (a token bucket per prefix
 * of --burst packets, refilled at --rate per second). */
static int
sc_rate_ok(struct sc_state *st, struct sc_prefix *p, uint64_t now)
{
	if (st->rate <= 0)
		return 0;
	if (!p->bucket_started) {
		p->bucket_started = 1;
		p->refill_ns = now;
	} else if (now > p->refill_ns) {
		p->tokens += st->rate * (double)(now - p->refill_ns) / SC_NS;
		if (p->tokens > st->burst)
			p->tokens = st->burst;
		p->refill_ns = now;
	}
	if (p->tokens < 1)
		return 0;
	p->tokens -= 1;
	return 1;
}

static sl_verdict_t
sc_pkt(struct sl_nf *nf, struct rte_mbuf *m)
{
	struct sc_state *st = sl_nf_priv(nf);
	struct sl_5tuple t;
	struct sc_prefix *p = NULL;

	st->pkts++;
	st->bytes += rte_pktmbuf_pkt_len(m);
	if (unlikely(sl_pkt_5tuple(m, &t) != 0)) {
		st->non_ip++;
		st->passed++;
		return SL_NEXT;
	}
	for (unsigned i = 0; i < st->n_prefixes; i++)
		if (ddos_prefix_has(&st->prefixes[i].p, &t, 1)) {
			p = &st->prefixes[i];
			break;
		}
	if (p == NULL) {
		st->passed++;
		return SL_NEXT;
	}
	p->pkts++;
	if (sc_rate_ok(st, p, sl_now_ns())) {
		p->passed++;
		st->passed_rate++;
		return SL_NEXT;
	}
	p->dropped++;
	if (st->rate > 0)
		st->dropped_rate++;
	else
		st->dropped_prefix++;
	return SL_DROP;
}

/* ---- periodic work, messages --------------------------------------- */

/* The report; format documented in README.md. */
static void
sc_print(struct sc_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "scrubber", reason,
			   now, st->pkts, st->bytes);
	fprintf(stderr,
		"%s non_ip=%" PRIu64 " passed=%" PRIu64 " passed_rate=%" PRIu64
		" dropped_prefix=%" PRIu64 " dropped_rate=%" PRIu64
		" prefixes=%u requests=%" PRIu64 " applied=%" PRIu64
		" rejected=%" PRIu64 " not_queued=%" PRIu64 "\n",
		head, st->non_ip, st->passed, st->passed_rate,
		st->dropped_prefix, st->dropped_rate, st->n_prefixes,
		st->requests, st->applied, st->rejected, st->not_queued);
	for (unsigned i = 0; i < st->n_prefixes; i++)
		fprintf(stderr,
			"scrubber-prefix: prefix=%s packets=%" PRIu64
			" dropped=%" PRIu64 " passed=%" PRIu64 "\n",
			st->prefixes[i].text, st->prefixes[i].pkts,
			st->prefixes[i].dropped, st->prefixes[i].passed);
	fflush(stderr);
}

static void
sc_tick(struct sl_nf *nf, uint64_t now)
{
	struct sc_state *st = sl_nf_priv(nf);

	sc_send_requests(st, nf);
	if (sl_stats_line_due(&st->stats, now))
		sc_print(st, "interval", now);
}

/*
 * Message(scrubber, key, value): "alarm" or "add" with a prefix scrubs
 * that prefix too (sluice-ddos-detect --alarm-to scrubber sends its next
 * alarms here); "stats" prints the report now.
 */
static void
sc_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct sc_state *st = sl_nf_priv(nf);
	char err[200], res[260] = "applied";
	struct ddos_prefix p;

	if (st == NULL)
		return;
	if (strcmp(key, "alarm") == 0 || strcmp(key, "add") == 0) {
		if (ddos_prefix_parse(value, &p, err, sizeof(err)) != 0)
			snprintf(res, sizeof(res), "invalid: %s", err);
		else if (sc_add_prefix(st, &p, err, sizeof(err)) != 0)
			snprintf(res, sizeof(res), "ignored: %s", err);
		else
			sc_send_requests(st, nf);
	} else if (strcmp(key, "stats") == 0) {
		sc_print(st, "message", sl_now_ns());
	} else {
		snprintf(res, sizeof(res), "ignored (keys: alarm, add, stats)");
	}
	fprintf(stderr, "scrubber-message: key=%s value=%s %s\n", key, value,
		res);
	fflush(stderr);
}

/* ---- setup --------------------------------------------------------- */

/* The synopsis, for --help and after an error in the options; libsluice
 * prints sc_opts' lines after it. */
static const char sc_usage[] =
	"usage: " SC_PROG " [EAL args] -- [libsluice args] --prefix "
	"PREFIX [--prefix PREFIX]...\n"
	"       [--at SERVICE]... [--rate PPS [--burst N]] "
	"[--stats-ms MS]\n";

static int
sc_prefix_opt(struct sl_nf *nf, void *priv, const char *v)
{
	struct sc_state *st = priv;
	char err[200];

	(void)nf;
	if (st->n_given == SC_MAX_PREFIXES) {
		fprintf(stderr, SC_PROG ": --prefix: at most %d prefixes\n",
			SC_MAX_PREFIXES);
		return EINVAL;
	}
	if (ddos_prefix_parse(v, &st->given[st->n_given], err, sizeof(err)) !=
	    0) {
		fprintf(stderr, SC_PROG ": --prefix: %s\n", err);
		return EINVAL;
	}
	st->n_given++;
	return 0;
}

static int
sc_at_opt(struct sl_nf *nf, void *priv, const char *v)
{
	struct sc_state *st = priv;

	(void)nf;
	if (st->n_at == SC_MAX_AT) {
		fprintf(stderr, SC_PROG ": --at: at most %d services\n",
			SC_MAX_AT);
		return EINVAL;
	}
	if (v[0] == '\0' || strlen(v) >= SC_NAME_LEN ||
	    strcmp(v, "drop") == 0 || strncmp(v, "port:", 5) == 0) {
		fprintf(stderr,
			SC_PROG ": --at: '%s' is not a service name (1 to %d "
				"characters; the graph node in front of the "
				"scrubber)\n",
			v, SC_NAME_LEN - 1);
		return EINVAL;
	}
	snprintf(st->at[st->n_at++], SC_NAME_LEN, "%s", v);
	return 0;
}

static const struct sl_nf_opt sc_opts[] = {
	{.name = "prefix",
	 .type = SL_OPT_STRING,
	 .arg = "PREFIX",
	 .help = "scrub packets from this source prefix, e.g. 10.66.6.0/24 "
		 "or\n2001:db8:66::/48 (repeatable, up to 16)",
	 .parse = sc_prefix_opt},
	{.name = "at",
	 .type = SL_OPT_STRING,
	 .arg = "SERVICE",
	 .help = "also make this scrubber the default next hop at SERVICE "
		 "for\nflows of the prefixes that start later (repeatable, "
		 "up to 8)",
	 .parse = sc_at_opt},
	{.name = "rate",
	 .type = SL_OPT_NUMBER,
	 .arg = "PPS",
	 .help = "let up to PPS packets per second of each prefix through\n"
		 "(default 0: drop them all)",
	 SL_OPT_AT(struct sc_state, rate),
	 .max = 1e12,
	 .frac = 1},
	{.name = "burst",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "packets a prefix may send at once under --rate (default: "
		 "PPS)",
	 SL_OPT_AT(struct sc_state, burst_opt),
	 .min = 1,
	 .max = 1e12,
	 .frac = 1},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print stats every MS (default 5000; 0 = only at exit)",
	 SL_OPT_AT(struct sc_state, stats_ms),
	 .max = 86400000,
	 .frac = 1,
	 .def = "5000"},
	{.name = NULL},
};
_Static_assert(SC_MAX_PREFIXES == 16 && SC_MAX_AT == 8,
	       "sc_opts: update --prefix and --at");
_Static_assert(SC_MAX_PREFIXES == 16 && SC_MAX_AT == 8,
	       "sc_usage: update --prefix and --at");

/* The options checked together, and the prefixes taken. */
static int
sc_settle(struct sc_state *st)
{
	double burst = st->burst_opt;
	char err[200];

	st->stats_ns = (uint64_t)st->stats_ms * SC_MS;
	if (st->n_given == 0) {
		fprintf(stderr,
			SC_PROG ": give at least one --prefix PREFIX (the "
				"source prefix to scrub, e.g. 10.66.6.0/24)\n");
		return EINVAL;
	}
	if (burst > 0 && st->rate <= 0) {
		fprintf(stderr,
			SC_PROG ": --burst needs --rate (without it every "
				"packet of the prefixes is dropped)\n");
		return EINVAL;
	}
	st->burst = burst > 0 ? burst : (st->rate >= 1 ? st->rate : 1);
	for (unsigned i = 0; i < st->n_given; i++)
		if (sc_add_prefix(st, &st->given[i], err, sizeof(err)) != 0) {
			char text[DDOS_PREFIX_STRLEN];

			ddos_prefix_format(&st->given[i], text, sizeof(text));
			fprintf(stderr,
				SC_PROG ": --prefix %s: given twice; give each "
					"prefix once\n",
				text);
			return EINVAL;
		}
	return 0;
}

static int
sc_init(struct sl_nf *nf, int argc, char **argv)
{
	char list[SC_MAX_PREFIXES * (DDOS_PREFIX_STRLEN + 1)] = "";
	char at[SC_MAX_AT * SC_NAME_LEN + 16] = "";
	char rate[96];
	struct sc_state *st = sl_nf_priv(nf);
	int rc;

	(void)argc;
	(void)argv;
	rc = sc_settle(st);
	if (rc != 0)
		return rc;
	for (unsigned i = 0; i < st->n_prefixes; i++) {
		size_t l = strlen(list);

		snprintf(list + l, sizeof(list) - l, "%s%s", i ? "," : "",
			 st->prefixes[i].text);
	}
	for (unsigned i = 0; i < st->n_at; i++) {
		size_t l = strlen(at);

		snprintf(at + l, sizeof(at) - l, "%s%s",
			 i ? "," : "; later flows via ", st->at[i]);
	}
	if (st->rate > 0)
		snprintf(rate, sizeof(rate),
			 "lets %g pps per prefix through (burst %g)", st->rate,
			 st->burst);
	else
		snprintf(rate, sizeof(rate), "drops them");
	sl_stats_line_start(&st->stats, st->stats_ns, sl_now_ns());
	fprintf(stderr, SC_PROG ": scrubs %s (RequestMe%s); %s\n", list, at,
		rate);
	fflush(stderr);
	sc_send_requests(st, nf);
	return 0;
}

static void
sc_fini(struct sl_nf *nf)
{
	struct sc_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	sc_print(st, "exit", sl_now_ns());
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops sc_ops = {
	.name = SC_PROG,
	.service = "scrubber",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = sc_init,
	.process_pkt = sc_pkt,
	.tick = sc_tick,
	.tick_ms = SC_TICK_MS,
	.on_message = sc_message,
	.on_reply = sc_reply,
	.fini = sc_fini,
	.usage = sc_usage,
	.opts = sc_opts,
	.priv_size = sizeof(struct sc_state),
	.opts_help_col = 19,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&sc_ops, argc, argv);
}
