/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-dpi: application detection with nDPI (Debian's libndpi 4.2), and
 * steering by application.
 *
 * Each flow (both directions one flow, the 5-tuple in a canonical
 * direction, as sluiced's flow table keys it) has an ndpi_flow_struct in
 * a bounded rte_hash table (--flows; a full table is counted and the
 * packet passes undetected). Its packets go to
 * ndpi_detection_process_packet() until nDPI names the protocol or
 * --max-packets were given (then ndpi_detection_giveup()). A detection is
 * printed and sent as a Message (key "dpi.app") to --notify's service
 * (this NF's own by default); sluiced publishes it to its event
 * subscribers as nf.message.
 *
 * Steering: the rules of --rules FILE ("APP -> SERVICE" or "APP -> drop")
 * give each packet of a detected flow the verdict SL_TO(SERVICE) (or
 * SL_DROP), from the packet on which the application was detected on, in
 * both directions; flows of other applications, and flows not (yet)
 * detected, get SL_NEXT (the default edge). Per packet rather than
 * ChangeDefault: the verdict takes effect at once, with no request in
 * flight while packets of the flow still take the old edge, and it costs
 * nothing more, since the NF looks the flow up anyway; README.md says
 * more. SIGHUP re-reads the file (a bad one keeps the current rules).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ndpi_api.h>
#include <rte_hash.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "dpi.h"

#define DPI_CHUNK 64 /* keys per bulk lookup */
#define DPI_TICK_MS 10
#define DPI_MS UINT64_C(1000000)
#define DPI_MAX_FLOWS (1u << 22)
#define DPI_HASH_BYTES_PER_FLOW 74 /* rte_hash, 40-byte keys (as monitor) */
#define DPI_MSG_KEY "dpi.app"
#define DPI_APP_NAME 64
#define DPI_HOST_LEN 80 /* nDPI 4.2: host_server_name[80] */

enum dpi_fstate { DPI_FREE = 0, DPI_DETECTING, DPI_DETECTED, DPI_UNDETECTED };

/* Per-flow state, indexed by the flow's rte_hash position. */
struct dpi_flow {
	struct ndpi_flow_struct nd; /* zeroed: a new flow for nDPI */
	uint64_t last_ns;
	uint16_t master, app; /* what nDPI said */
	uint16_t seen;        /* packets given to nDPI */
	uint8_t state;        /* enum dpi_fstate */
	uint8_t reversed;     /* first packet ran dst -> src of the key */
	uint32_t gen;         /* rules generation of verdict/rule */
	int32_t rule;         /* steering rule, -1 none */
	sl_verdict_t verdict;
};

/* Counters of one detected application (nDPI protocol id). */
struct dpi_app_count {
	uint64_t flows, guessed, pkts, bytes;
};

/* The NF's state: its private context (libsluice allocates it and stores
 * the options in it). */
struct dpi_state {
	/* options */
	const char *rules_path;
	uint32_t capacity;
	uint64_t idle_ms;
	uint32_t max_pkts;
	int guess;
	int quiet;  /* --quiet: no line per detection */
	int notify; /* service id; -1: own */
	uint64_t stats_ms;

	struct ndpi_detection_module_struct *nd;
	struct dpi_rules *rules; /* NULL: no steering */
	uint32_t gen;            /* bumped at each rules (re)load */
	struct rte_hash *h;
	struct dpi_flow *flows; /* [n_slots] */
	uint32_t n_slots;
	uint32_t n_flows, n_detecting;
	uint32_t n_protos;          /* per-application counters: */
	struct dpi_app_count *apps; /* [n_protos + 1], the last "other" */
	uint64_t idle_ns;
	uint32_t sweep_cursor;
	uint64_t last_sweep_ns;
	struct sl_stats_line stats;

	uint64_t pkts, bytes, non_ip, malformed, table_full;
	uint64_t flows_seen, detected, guessed, undetected, evicted;
	uint64_t steered, dropped;
	uint64_t messages, messages_not_queued, messages_undelivered;
};

/* ---- flows --------------------------------------------------------- */

/* The flow in the direction of its first packet. */
static void
dpi_format(const struct sl_5tuple *key, int reversed, char *buf, uint32_t sz)
{
	struct sl_5tuple t = *key;

	if (reversed)
		sl_5tuple_swap(&t);
	sl_5tuple_format(&t, buf, sz);
}

/* The counters of protocol id (out of range: the "other" slot). */
static struct dpi_app_count *
dpi_app(struct dpi_state *st, uint16_t id)
{
	return &st->apps[id < st->n_protos ? id : st->n_protos];
}

/* The id a flow's counters go to: the application, else its master. */
static uint16_t
dpi_app_id(const struct dpi_flow *f)
{
	return f->app != NDPI_PROTOCOL_UNKNOWN ? f->app : f->master;
}

/* The verdict of a detected flow under the current rules (cached). */
static sl_verdict_t
dpi_verdict(struct dpi_state *st, struct dpi_flow *f)
{
	if (f->gen != st->gen) {
		f->gen = st->gen;
		f->rule = dpi_rules_match(st->rules, f->master, f->app);
		f->verdict = f->rule < 0 ? SL_NEXT : st->rules->r[f->rule].to;
		if (f->rule >= 0)
			st->rules->r[f->rule].flows++;
	}
	return f->verdict;
}

/*
 * Sends the detection as a Message to --notify (or this service):
 * "app=A category=C by=B host=H flow=F", H cut short if the whole would
 * be longer than a Message value.
 */
static void
dpi_notify(struct dpi_state *st, struct sl_nf *nf, const char *app,
	   const char *cat, const char *by, const char *host, const char *flow)
{
	char value[SL_MESSAGE_VALUE_MAX + 1];
	int n, room;
	int64_t id;

	n = snprintf(value, sizeof(value),
		     "app=%s category=%s by=%s host= flow=%s", app, cat, by,
		     flow);
	room = n < SL_MESSAGE_VALUE_MAX ? SL_MESSAGE_VALUE_MAX - n : 0;
	if (snprintf(value, sizeof(value),
		     "app=%s category=%s by=%s host=%.*s flow=%s", app, cat, by,
		     room, host, flow) >= (int)sizeof(value))
		value[sizeof(value) - 1] = '\0'; /* cut (cannot happen) */
	id = sl_message(nf,
			st->notify >= 0 ? (uint16_t)st->notify
					: sl_nf_service(nf),
			DPI_MSG_KEY, value);
	if (id > 0)
		st->messages++;
	else
		st->messages_not_queued++;
}

/*
 * The host name nDPI took from the flow (HTTP Host, TLS SNI, DNS query),
 * or "-": at most DPI_HOST_LEN - 1 characters, and only letters, digits
 * and "-._:" (the rest, from the packets, becomes '?'), so that it is one
 * word of the line and the Message.
 */
static void
dpi_host(const struct ndpi_flow_struct *nd, char *buf)
{
	size_t i;

	for (i = 0; i < DPI_HOST_LEN - 1 && i < sizeof(nd->host_server_name) &&
		    nd->host_server_name[i] != '\0';
	     i++) {
		char c = nd->host_server_name[i];

		buf[i] = isalnum((unsigned char)c) || strchr("-._:", c) != NULL
				 ? c
				 : '?';
	}
	buf[i] = '\0';
	if (i == 0)
		snprintf(buf, DPI_HOST_LEN, "-");
}

/*
 * The end of detection for f, at packet (or eviction) with nDPI's answer
 * r: counts it, frees nDPI's data of the flow, and, when an application
 * was found, prints it and sends the Message.
 */
static void
dpi_finish(struct dpi_state *st, struct sl_nf *nf, struct dpi_flow *f,
	   const struct sl_5tuple *key, ndpi_protocol r, int guessed)
{
	char name[DPI_APP_NAME], flow[128], host[DPI_HOST_LEN];
	const char *cat, *by = guessed ? "guess" : "payload";
	struct dpi_app_count *c;

	st->n_detecting--;
	f->master = r.master_protocol;
	f->app = r.app_protocol;
	if (f->master == NDPI_PROTOCOL_UNKNOWN &&
	    f->app == NDPI_PROTOCOL_UNKNOWN) {
		f->state = DPI_UNDETECTED;
		st->undetected++;
		ndpi_free_flow_data(&f->nd);
		return;
	}
	f->state = DPI_DETECTED;
	ndpi_protocol2name(st->nd, r, name, sizeof(name));
	cat = ndpi_category_get_name(st->nd, r.category);
	if (cat == NULL)
		cat = "Unspecified";
	dpi_host(&f->nd, host);
	ndpi_free_flow_data(&f->nd);
	st->detected++;
	c = dpi_app(st, dpi_app_id(f));
	c->flows++;
	if (guessed) {
		st->guessed++;
		c->guessed++;
	}
	dpi_format(key, f->reversed, flow, sizeof(flow));
	if (!st->quiet) {
		fprintf(stderr,
			"dpi: %s app=%s category=%s by=%s host=%s packets=%u\n",
			flow, name, cat, by, host, f->seen);
		fflush(stderr);
	}
	dpi_notify(st, nf, name, cat, by, host, flow);
}

/*
 * Ends the detection of f without an answer from the packets:
 * ndpi_detection_giveup(), whose guess (by port and address) is taken
 * only with --guess; what it finds from the packets seen is taken always.
 */
static void
dpi_giveup(struct dpi_state *st, struct sl_nf *nf, struct dpi_flow *f,
	   const struct sl_5tuple *key)
{
	uint8_t was_guessed = 0;
	ndpi_protocol r = ndpi_detection_giveup(st->nd, &f->nd,
						(uint8_t)st->guess,
						&was_guessed);

	if (was_guessed && !st->guess) {
		r.master_protocol = NDPI_PROTOCOL_UNKNOWN;
		r.app_protocol = NDPI_PROTOCOL_UNKNOWN;
	}
	dpi_finish(st, nf, f, key, r, was_guessed);
}

/* The IP datagram of m for nDPI: its header, and its length without the
 * Ethernet padding (bounded by the first segment). */
static const uint8_t *
dpi_l3(const struct rte_mbuf *m, uint16_t *len)
{
	struct sl_pkt_info info;
	const struct rte_ipv4_hdr *ip4;
	const struct rte_ipv6_hdr *ip6;
	uint32_t avail, n;

	if (sl_pkt_parse(m, &info) != 0)
		return NULL;
	avail = rte_pktmbuf_data_len(m) - info.l3_off;
	if ((ip4 = sl_pkt_ipv4(m, &info)) != NULL)
		n = rte_be_to_cpu_16(ip4->total_length);
	else if ((ip6 = sl_pkt_ipv6(m, &info)) != NULL)
		n = 40u + rte_be_to_cpu_16(ip6->payload_len);
	else
		return NULL;
	*len = (uint16_t)(n < avail ? n : avail);
	return rte_pktmbuf_mtod_offset(m, const uint8_t *, info.l3_off);
}

/* Gives one packet of a flow being detected to nDPI. */
static void
dpi_detect(struct dpi_state *st, struct sl_nf *nf, struct dpi_flow *f,
	   const struct sl_5tuple *key, const struct rte_mbuf *m, uint64_t now)
{
	ndpi_protocol r;
	const uint8_t *l3;
	uint16_t len = 0;

	l3 = dpi_l3(m, &len);
	if (l3 == NULL) /* a 5-tuple but no whole header: cannot happen */
		return;
	f->seen++;
	r = ndpi_detection_process_packet(st->nd, &f->nd, l3, len,
					  now / DPI_MS);
	if (r.master_protocol != NDPI_PROTOCOL_UNKNOWN ||
	    r.app_protocol != NDPI_PROTOCOL_UNKNOWN) {
		dpi_finish(st, nf, f, key, r, 0);
		return;
	}
	if (f->seen >= st->max_pkts)
		dpi_giveup(st, nf, f, key);
}

/* A packet of a tracked flow: detection, then its verdict. */
static sl_verdict_t
dpi_flow_pkt(struct dpi_state *st, struct sl_nf *nf, struct dpi_flow *f,
	     const struct sl_5tuple *key, const struct rte_mbuf *m,
	     uint64_t now)
{
	struct dpi_app_count *c;
	sl_verdict_t v;

	f->last_ns = now;
	if (f->state == DPI_DETECTING)
		dpi_detect(st, nf, f, key, m, now);
	if (f->state != DPI_DETECTED)
		return SL_NEXT;
	c = dpi_app(st, dpi_app_id(f));
	c->pkts++;
	c->bytes += rte_pktmbuf_pkt_len(m);
	v = dpi_verdict(st, f);
	if (f->rule >= 0) {
		st->rules->r[f->rule].pkts++;
		if (v == SL_DROP)
			st->dropped++;
		else
			st->steered++;
	}
	return v;
}

/* The flow of a looked-up key: found (pos >= 0), else added if there is
 * room. NULL when the table is full (counted). */
static struct dpi_flow *
dpi_flow_get(struct dpi_state *st, const struct sl_5tuple *key, int32_t pos,
	     uint8_t reversed, uint64_t now)
{
	struct dpi_flow *f;

	/* A miss may be a flow an earlier packet of this chunk added:
	 * adding finds it, and when the table is full a lookup does. */
	if (unlikely(pos < 0))
		pos = st->n_flows < st->capacity ? rte_hash_add_key(st->h, key)
						 : rte_hash_lookup(st->h, key);
	if (unlikely(pos < 0)) {
		st->table_full++;
		return NULL;
	}
	f = &st->flows[pos];
	if (unlikely(f->state == DPI_FREE)) {
		memset(f, 0, sizeof(*f));
		f->state = DPI_DETECTING;
		f->reversed = reversed;
		f->last_ns = now;
		f->gen = st->gen - 1; /* verdict not computed yet */
		st->n_flows++;
		st->n_detecting++;
		st->flows_seen++;
	}
	return f;
}

static void
dpi_chunk(struct dpi_state *st, struct sl_nf *nf, struct rte_mbuf **pkts,
	  uint16_t n, uint64_t now)
{
	struct sl_5tuple keys[DPI_CHUNK];
	const void *kp[DPI_CHUNK];
	int32_t pos[DPI_CHUNK];
	uint8_t rev[DPI_CHUNK];
	uint16_t idx[DPI_CHUNK];
	uint16_t i, nk = 0;
	int rc;

	for (i = 0; i < n; i++) {
		st->pkts++;
		st->bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sl_pkt_set_verdict(pkts[i], SL_NEXT);
		rc = sl_pkt_flow_tuple(pkts[i], &keys[nk]);
		if (unlikely(rc != 0)) {
			if (rc == -ENOENT)
				st->non_ip++;
			else
				st->malformed++;
			continue;
		}
		rev[nk] = (uint8_t)sl_5tuple_canonical(&keys[nk]);
		kp[nk] = &keys[nk];
		idx[nk++] = i;
	}
	if (nk == 0)
		return;
	if (rte_hash_lookup_bulk(st->h, kp, nk, pos) != 0)
		for (i = 0; i < nk; i++)
			pos[i] = -ENOENT;
	for (i = 0; i < nk; i++) {
		struct dpi_flow *f =
			dpi_flow_get(st, &keys[i], pos[i], rev[i], now);

		if (f != NULL)
			sl_pkt_set_verdict(pkts[idx[i]],
					   dpi_flow_pkt(st, nf, f, &keys[i],
							pkts[idx[i]], now));
	}
}

static void
dpi_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct dpi_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();
	uint16_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < DPI_CHUNK ? n - done : DPI_CHUNK;
		dpi_chunk(st, nf, pkts + done, k, now);
	}
}

/* ---- eviction and counters ----------------------------------------- */

/* Forgets flow f at position p (key): one still being detected is given
 * up first, so that it is counted. */
static void
dpi_evict(struct dpi_state *st, struct sl_nf *nf, struct dpi_flow *f,
	  const struct sl_5tuple *key)
{
	if (f->state == DPI_DETECTING)
		dpi_giveup(st, nf, f, key);
	(void)rte_hash_del_key(st->h, key);
	st->n_flows--;
	st->evicted++;
	memset(f, 0, sizeof(*f));
}

/*
 * Evicts flows idle for --idle-ms. Visits every position of the table
 * once per half idle time, a slice per tick in proportion to the time
 * since the last one (so no tick holds packets up for a whole table).
 */
static void
dpi_sweep(struct dpi_state *st, struct sl_nf *nf, uint64_t now)
{
	uint64_t period = st->idle_ns / 2, dt = now - st->last_sweep_ns;
	uint32_t budget = st->n_slots;

	if (dt < period)
		budget = RTE_MIN(st->n_slots,
				 (uint32_t)((double)st->n_slots * (double)dt /
					    (double)period) +
					 1);
	st->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = st->sweep_cursor;
		struct dpi_flow *f = &st->flows[p];
		struct sl_5tuple key;
		void *kp;

		st->sweep_cursor = p + 1 == st->n_slots ? 0 : p + 1;
		if (f->state == DPI_FREE || now < f->last_ns ||
		    now - f->last_ns < st->idle_ns ||
		    rte_hash_get_key_with_position(st->h, (int32_t)p, &kp) != 0)
			continue;
		memcpy(&key, kp, sizeof(key));
		dpi_evict(st, nf, f, &key);
	}
}

/* The counters; format documented in README.md. */
static void
dpi_print(struct dpi_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "dpi", reason, now,
			   st->pkts, st->bytes);
	fprintf(stderr,
		"%s non_ip=%" PRIu64 " malformed=%" PRIu64 " flows=%" PRIu32
		" flows_capacity=%" PRIu32 " flows_seen=%" PRIu64
		" table_full=%" PRIu64 " detecting=%" PRIu32
		" detected=%" PRIu64 " guessed=%" PRIu64 " undetected=%" PRIu64
		" evicted=%" PRIu64 " steered=%" PRIu64 " dropped=%" PRIu64
		" messages=%" PRIu64 " messages_not_queued=%" PRIu64
		" messages_undelivered=%" PRIu64 "\n",
		head, st->non_ip, st->malformed, st->n_flows, st->capacity,
		st->flows_seen, st->table_full, st->n_detecting, st->detected,
		st->guessed, st->undetected, st->evicted, st->steered,
		st->dropped, st->messages, st->messages_not_queued,
		st->messages_undelivered);
	for (uint32_t i = 0; i <= st->n_protos; i++) {
		const struct dpi_app_count *c = &st->apps[i];

		if (c->flows == 0)
			continue;
		fprintf(stderr,
			"dpi-app: app=%s flows=%" PRIu64 " guessed=%" PRIu64
			" packets=%" PRIu64 " bytes=%" PRIu64 "\n",
			i < st->n_protos
				? ndpi_get_proto_name(st->nd, (uint16_t)i)
				: "other",
			c->flows, c->guessed, c->pkts, c->bytes);
	}
	for (uint32_t i = 0; st->rules != NULL && i < st->rules->n; i++) {
		const struct dpi_rule *r = &st->rules->r[i];

		fprintf(stderr,
			"dpi-rule: rule=%" PRIu32 " line=%" PRIu32
			" app=%s to=%s flows=%" PRIu64 " packets=%" PRIu64 "\n",
			i + 1, r->line, r->app, r->to_name, r->flows, r->pkts);
	}
	fflush(stderr);
}

static void
dpi_tick(struct sl_nf *nf, uint64_t now)
{
	struct dpi_state *st = sl_nf_priv(nf);

	dpi_sweep(st, nf, now);
	if (sl_stats_line_due(&st->stats, now))
		dpi_print(st, "interval", now);
}

/* ---- messages and replies ------------------------------------------ */

static void
dpi_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct dpi_state *st = sl_nf_priv(nf);

	if (st == NULL || strcmp(key, DPI_MSG_KEY) == 0)
		return; /* our own detections, when --notify is us */
	if (strcmp(key, "stats") == 0) {
		dpi_print(st, "message", sl_now_ns());
		return;
	}
	fprintf(stderr, "dpi-message: key=%s value=%s ignored (keys: stats)\n",
		key, value);
	fflush(stderr);
}

/* Only Messages are asked for: a refused one is logged by libsluice. */
static void
dpi_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	struct dpi_state *st = sl_nf_priv(nf);

	(void)id;
	(void)reason;
	if (st != NULL && result != 0)
		st->messages_undelivered++;
}

/* ---- rules --------------------------------------------------------- */

struct dpi_resolve_ctx {
	struct sl_nf *nf;
	unsigned wait_ms; /* at start, services may still be coming */
};

static int
dpi_resolve(void *ctx, const char *name, sl_verdict_t *to, char *err,
	    size_t err_size)
{
	const struct dpi_resolve_ctx *c = ctx;
	int id;

	if (strcmp(name, "drop") == 0) {
		*to = SL_DROP;
		return 0;
	}
	id = c->wait_ms ? sl_service_id_wait(c->nf, name, c->wait_ms)
			: sl_service_id(c->nf, name);
	if (id < 0) {
		snprintf(err, err_size,
			 "no service '%s' (sluiced knows the services of its "
			 "graphs and of the NFs that registered; sluice status "
			 "lists them)",
			 name);
		return ENOENT;
	}
	if (id == sl_nf_service(c->nf)) {
		snprintf(
			err, err_size,
			"'%s' is this NF's own service: its packets would come "
			"back to it",
			name);
		return EINVAL;
	}
	*to = SL_TO((uint16_t)id);
	return 0;
}

static void
dpi_print_rules(const struct dpi_state *st, const char *verb)
{
	fprintf(stderr, DPI_PROG ": %s %" PRIu32 " rules from %s\n", verb,
		st->rules->n, st->rules_path);
	for (uint32_t i = 0; i < st->rules->n; i++)
		fprintf(stderr, DPI_PROG ":   rule %" PRIu32 ": %s -> %s\n",
			i + 1, st->rules->r[i].app, st->rules->r[i].to_name);
	fflush(stderr);
}

static void
dpi_reload(struct sl_nf *nf)
{
	struct dpi_state *st = sl_nf_priv(nf);
	struct dpi_resolve_ctx ctx = {nf, 0};
	struct dpi_rules *rs;
	char err[DPI_ERR_LEN];

	if (st->rules_path == NULL) {
		fprintf(stderr, DPI_PROG ": SIGHUP: no --rules file to "
					 "reload\n");
		return;
	}
	if (dpi_rules_load(st->rules_path, st->nd, dpi_resolve, &ctx, &rs, err,
			   sizeof(err)) != 0) {
		fprintf(stderr,
			DPI_PROG ": reload failed, keeping the %" PRIu32
				 " current rules: %s\n",
			st->rules->n, err);
		fflush(stderr);
		return;
	}
	dpi_print(st, "reload", sl_now_ns());
	dpi_rules_free(st->rules);
	st->rules = rs;
	st->gen++; /* every flow's verdict is looked up again */
	dpi_print_rules(st, "reloaded");
}

/* ---- setup --------------------------------------------------------- */

static const char dpi_usage[] =
	"usage: " DPI_PROG " [EAL args] -- [libsluice args] [--rules FILE]"
	" [--flows N]\n"
	"       [--idle-ms MS] [--max-packets N] [--guess] [--quiet]"
	" [--notify SERVICE]\n       [--stats-ms MS]\n";

_Static_assert(DPI_MAX_FLOWS == 4194304, "dpi_opts: update --flows");
static const struct sl_nf_opt dpi_opts[] = {
	{.name = "rules",
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "steering rules, 'APP -> SERVICE' a line (README.md)",
	 SL_OPT_AT(struct dpi_state, rules_path)},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "flow table capacity (default 16384, max 4194304)",
	 SL_OPT_AT(struct dpi_state, capacity),
	 .min = 1,
	 .max = DPI_MAX_FLOWS,
	 .def = "16384"},
	{.name = "idle-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "forget flows idle this long (default 30000)",
	 SL_OPT_AT(struct dpi_state, idle_ms),
	 .min = 20,
	 .max = 86400000,
	 .def = "30000"},
	{.name = "max-packets",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "packets per flow given to nDPI before it gives up\n"
		 "(default 32)",
	 SL_OPT_AT(struct dpi_state, max_pkts),
	 .min = 1,
	 .max = 1000,
	 .def = "32"},
	{.name = "guess",
	 .type = SL_OPT_FLAG,
	 .help = "when nDPI gives up, take its guess (by port and address)",
	 SL_OPT_AT(struct dpi_state, guess)},
	{.name = "quiet",
	 .type = SL_OPT_FLAG,
	 .help = "no line per detection (the Messages are still sent)",
	 SL_OPT_AT(struct dpi_state, quiet)},
	{.name = "notify",
	 .type = SL_OPT_SERVICE,
	 .arg = "SERVICE",
	 .help = "send each detection as a Message to SERVICE (default: "
		 "this NF's)",
	 SL_OPT_AT(struct dpi_state, notify)},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS (default 5000; 0 = at exit)",
	 SL_OPT_AT(struct dpi_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

static void
dpi_state_free(struct dpi_state *st)
{
	if (st == NULL)
		return;
	for (uint32_t i = 0; st->flows != NULL && i < st->n_slots; i++)
		if (st->flows[i].state == DPI_DETECTING)
			ndpi_free_flow_data(&st->flows[i].nd);
	rte_hash_free(st->h);
	free(st->flows);
	free(st->apps);
	dpi_rules_free(st->rules);
	if (st->nd != NULL)
		ndpi_exit_detection_module(st->nd);
	st->h = NULL;
	st->flows = NULL;
	st->apps = NULL;
	st->rules = NULL;
	st->nd = NULL;
}

/* nDPI with every protocol it knows. */
static int
dpi_ndpi_init(struct dpi_state *st)
{
	NDPI_PROTOCOL_BITMASK all;

	if (ndpi_detection_get_sizeof_ndpi_flow_struct() !=
	    sizeof(struct ndpi_flow_struct)) {
		fprintf(stderr,
			DPI_PROG ": libndpi %s has a flow structure of %u "
				 "bytes, its headers %zu: rebuild against the "
				 "installed libndpi-dev\n",
			ndpi_revision(),
			ndpi_detection_get_sizeof_ndpi_flow_struct(),
			sizeof(struct ndpi_flow_struct));
		return EINVAL;
	}
	st->nd = ndpi_init_detection_module(ndpi_no_prefs);
	if (st->nd == NULL) {
		fprintf(stderr, DPI_PROG ": ndpi_init_detection_module failed "
					 "(out of memory?)\n");
		return ENOMEM;
	}
	NDPI_BITMASK_SET_ALL(all);
	ndpi_set_protocol_detection_bitmask2(st->nd, &all);
	ndpi_finalize_initialization(st->nd);
	st->n_protos = ndpi_get_num_supported_protocols(st->nd);
	st->apps = calloc(st->n_protos + 1, sizeof(st->apps[0]));
	if (st->apps == NULL) {
		fprintf(stderr, DPI_PROG ": out of memory\n");
		return ENOMEM;
	}
	return 0;
}

static int
dpi_create_table(struct dpi_state *st, struct sl_nf *nf)
{
	const struct sl_nf_table_spec spec = {
		.prog = DPI_PROG,
		.tag = "sldpi",
		.what = "flow",
		.whats = "flows",
		.entries = st->capacity,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = DPI_HASH_BYTES_PER_FLOW,
		.slot_size = sizeof(st->flows[0]),
	};
	void *flows;
	int rc;

	rc = sl_nf_table_create(nf, &spec, &st->h, &flows, &st->n_slots);
	if (rc == 0)
		st->flows = flows;
	return rc;
}

static int
dpi_init(struct sl_nf *nf, int argc, char **argv)
{
	struct dpi_state *st = sl_nf_priv(nf);
	struct dpi_resolve_ctx ctx = {nf, 5000};
	char err[DPI_ERR_LEN];
	int rc;

	(void)argc;
	(void)argv;
	st->idle_ns = st->idle_ms * DPI_MS;
	st->gen = 1;
	rc = dpi_ndpi_init(st);
	if (rc == 0 && st->rules_path != NULL) {
		rc = dpi_rules_load(st->rules_path, st->nd, dpi_resolve, &ctx,
				    &st->rules, err, sizeof(err));
		if (rc != 0)
			fprintf(stderr, DPI_PROG ": %s\n", err);
	}
	if (rc == 0)
		rc = dpi_create_table(st, nf);
	if (rc != 0) {
		dpi_state_free(st);
		return rc == ENOMEM ? ENOMEM : EINVAL;
	}
	st->last_sweep_ns = sl_now_ns();
	sl_stats_line_start(&st->stats, st->stats_ms * DPI_MS,
			    st->last_sweep_ns);
	fprintf(stderr,
		DPI_PROG ": nDPI %s, %" PRIu32 " protocols; up to %" PRIu32
			 " flows, idle after %" PRIu64 " ms, %" PRIu32
			 " packets per flow at most%s\n",
		ndpi_revision(), st->n_protos, st->capacity, st->idle_ms,
		st->max_pkts, st->guess ? ", then a guess" : "");
	if (st->rules != NULL)
		dpi_print_rules(st, "loaded");
	return 0;
}

static void
dpi_fini(struct sl_nf *nf)
{
	struct dpi_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	dpi_print(st, "exit", sl_now_ns());
	dpi_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops dpi_ops = {
	.name = DPI_PROG,
	.service = "dpi",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = dpi_init,
	.process = dpi_process,
	.tick = dpi_tick,
	.tick_ms = DPI_TICK_MS,
	.reload = dpi_reload,
	.on_message = dpi_message,
	.on_reply = dpi_reply,
	.fini = dpi_fini,
	.usage = dpi_usage,
	.opts = dpi_opts,
	.priv_size = sizeof(struct dpi_state),
	.opts_help_col = 22,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&dpi_ops, argc, argv);
}
