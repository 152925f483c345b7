/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids: a signature IDS on Hyperscan in stream mode.
 *
 * Rules (rules.c: a subset of Snort/Suricata syntax) are compiled into
 * one stream-mode database (hsdb.c). Every flow has an entry in a bounded
 * per-instance table (sl_nf_table_create, keyed by the flow's 5-tuple in
 * a canonical direction) holding one hs_stream_t per direction, so a
 * signature split across packets is found: TCP payload is fed in
 * sequence order (retransmitted bytes are skipped, a gap is counted and
 * scanned across). A match whose rule header fits the packet's direction
 * raises an alert (a line on stderr and Message(--alert-to, "alert",
 * ...)) and the rule's action: alert (the packet goes on), drop (this and
 * every later packet of the flow, both ways, are dropped) or divert
 * (ChangeDefault of the flow at this service to the rule's service, and
 * the flow's packets are sent there from now on).
 *
 * SIGHUP reads and compiles the file aside, in a thread, while packets go
 * on through the old rules; only a whole valid file
 * replaces the rules (open streams are then restarted on the new
 * database), else the old rules stay and the NF says why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hs.h>
#include <rte_hash.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "ids.h"
#include "rules.h"

/* What the match callback needs about the packet being scanned. */
struct ids_scan {
	struct ids_state *st;
	struct sl_nf *nf;
	struct ids_flow *f;
	struct ids_dir *d;
	const struct rte_mbuf *m;
	const struct sl_5tuple *t; /* the packet's own direction */
};

/* ---- alerts and actions -------------------------------------------- */

/* Whether this alert may be printed and sent: at most --alert-rate a
 * second (the action is taken either way). */
static int
ids_alert_budget(struct ids_state *st, uint64_t now)
{
	uint64_t sec = now / IDS_NS;

	if (sec != st->alert_sec) {
		st->alert_sec = sec;
		st->alerts_in_sec = 0;
	}
	if (st->alerts_in_sec >= st->alert_rate)
		return 0;
	st->alerts_in_sec++;
	return 1;
}

static void
ids_alert(struct ids_scan *sc, const struct ids_rule *r)
{
	struct ids_state *st = sc->st;
	char flow[112], value[SL_MESSAGE_VALUE_MAX + 1];
	int service = st->alert_to >= 0 ? st->alert_to : sl_nf_service(sc->nf);

	st->c.alerts++;
	if (!ids_alert_budget(st, sl_now_ns())) {
		st->c.alerts_quiet++;
		return;
	}
	sl_5tuple_format(sc->t, flow, sizeof(flow));
	snprintf(value, sizeof(value),
		 "sid=%" PRIu32 " rev=%" PRIu32
		 " action=%s flow=%.110s msg=%.60s",
		 r->sid, r->rev, ids_action_name(r->action), flow, r->msg);
	fprintf(stderr,
		"ids-alert: sid=%" PRIu32 " rev=%" PRIu32
		" action=%s flow=%s msg=\"%s\"\n",
		r->sid, r->rev, ids_action_name(r->action), flow, r->msg);
	if (sl_message(sc->nf, (uint16_t)service, "alert", value) <= 0)
		st->c.messages_failed++;
}

/* Queues the ChangeDefault of a flow a divert rule matched; retried on
 * the flow's next packet if it could not be queued. */
static void
ids_divert(struct ids_state *st, struct sl_nf *nf, struct ids_flow *f,
	   const struct rte_mbuf *m)
{
	struct sl_flow_match fm;
	int64_t id;

	if (f->diverted || f->divert_to == 0)
		return;
	if (sl_flow_of_pkt(m, &fm) != 0 ||
	    (id = sl_change_default(nf, &fm, sl_nf_service(nf),
				    SL_TO((uint16_t)(f->divert_to - 1)))) <=
		    0) {
		st->c.divert_failed++;
		return;
	}
	f->diverted = 1;
	st->c.diverted++;
}

/* Part bit of rule ri matched: 1 when that completes the rule. A rule
 * with no room left in the direction's partials is counted and missed. */
static int
ids_part(struct ids_scan *sc, uint32_t ri, unsigned bit, uint32_t all)
{
	struct ids_dir *d = sc->d;
	unsigned i;

	for (i = 0; i < d->n_partials && d->partial[i].rule != ri; i++)
		;
	if (i == d->n_partials) {
		if (i == sc->st->partials) {
			sc->st->c.partials_full++;
			return 0;
		}
		d->partial[i].rule = ri;
		d->partial[i].mask = 0;
		d->n_partials++;
	}
	d->partial[i].mask |= 1u << bit;
	return d->partial[i].mask == all;
}

/* Hyperscan's match callback: id is a rule's index, or n_rules + the
 * index of one part of a rule of several. */
static int
ids_on_match(unsigned int id, unsigned long long from, unsigned long long to,
	     unsigned int flags, void *ctx)
{
	struct ids_scan *sc = ctx;
	const struct ids_db *d = sc->st->cur;
	uint32_t n = d->rs->n_rules, ri = id;
	const struct ids_rule *r;

	(void)from;
	(void)to;
	(void)flags;
	if (id >= n) {
		if (id - n >= d->parts.n)
			return 0; /* cannot happen */
		ri = d->parts.rule[id - n];
	}
	r = &d->rs->rules[ri];
	if (!ids_rule_header_match(r, sc->t))
		return 0;
	if (id >= n &&
	    !ids_part(sc, ri, d->parts.bit[id - n], d->parts.mask[ri]))
		return 0;
	d->hits[ri]++;
	ids_alert(sc, r);
	if (r->action == IDS_DROP)
		sc->f->dropped = 1;
	else if (r->action == IDS_DIVERT && sc->f->divert_to == 0)
		sc->f->divert_to = d->divert_to[ri] + 1;
	return 0;
}

/* ---- flows --------------------------------------------------------- */

/* The flow at table position pos: slots are slot_size bytes, a struct
 * ids_flow and its two directions' partials. */
static inline struct ids_flow *
ids_slot(const struct ids_state *st, uint32_t pos)
{
	return (struct ids_flow *)((char *)st->flows +
				   (size_t)pos * st->slot_size);
}

/* The flow's key (the smaller end first) and the packet's direction in
 * it. */
static int
ids_canon(const struct sl_5tuple *t, struct sl_5tuple *key)
{
	size_t alen = t->family == 4 ? 4 : 16;
	int c = memcmp(&t->src, &t->dst, alen);

	*key = *t;
	if (c < 0 || (c == 0 && ntohs(t->sport) <= ntohs(t->dport)))
		return 0;
	key->src = t->dst;
	key->dst = t->src;
	key->sport = t->dport;
	key->dport = t->sport;
	return 1;
}

/* The flow of t, made if new; NULL when the table is full (counted). */
static struct ids_flow *
ids_flow_get(struct ids_state *st, const struct sl_5tuple *t, int *dir,
	     uint64_t now)
{
	struct sl_5tuple key;
	struct ids_flow *f;
	int32_t pos;

	*dir = ids_canon(t, &key);
	pos = rte_hash_lookup(st->h, &key);
	if (pos < 0) {
		if (st->n_flows >= st->capacity) {
			st->c.flows_full++;
			return NULL;
		}
		pos = rte_hash_add_key(st->h, &key);
		if (pos < 0 || (uint32_t)pos >= st->n_slots) {
			st->c.flows_full++;
			return NULL;
		}
		f = ids_slot(st, (uint32_t)pos);
		for (int d = 0; d < 2; d++) {
			if (f->dir[d].s != NULL)
				hs_reset_stream(f->dir[d].s, 0, NULL, NULL,
						NULL);
			f->dir[d].seq_known = 0;
			f->dir[d].closed = 0;
			f->dir[d].n_partials = 0;
		}
		f->in_use = 1;
		f->dropped = 0;
		f->divert_to = 0;
		f->diverted = 0;
		st->n_flows++;
		st->c.flows_new++;
	}
	f = ids_slot(st, (uint32_t)pos);
	f->last_ns = now;
	return f;
}

/* The TCP payload bytes of this segment that are new in its direction:
 * *skip of them were seen already. 0: nothing new. */
static uint32_t
ids_tcp_new(struct ids_state *st, struct ids_dir *d,
	    const struct rte_tcp_hdr *tcp, uint32_t len, uint32_t *skip)
{
	uint32_t seq = ntohl(tcp->sent_seq);
	int32_t diff;

	*skip = 0;
	if (tcp->tcp_flags & RTE_TCP_RST_FLAG)
		d->closed = 2;
	else if (tcp->tcp_flags & RTE_TCP_FIN_FLAG && d->closed == 0)
		d->closed = 1;
	if (tcp->tcp_flags & RTE_TCP_SYN_FLAG) {
		seq++;
		d->seq_known = 1;
		d->next_seq = seq;
	} else if (!d->seq_known) {
		d->seq_known = 1;
		d->next_seq = seq;
	}
	if (len == 0)
		return 0;
	diff = (int32_t)(seq - d->next_seq);
	if (diff < 0) {
		if ((uint32_t)-diff >= len) {
			st->c.tcp_retrans++;
			return 0;
		}
		*skip = (uint32_t)-diff;
	} else if (diff > 0) {
		st->c.tcp_gaps++; /* bytes missed: scan on across the gap */
	}
	d->next_seq = seq + len;
	return len - *skip;
}

/* ---- the packet path ----------------------------------------------- */

/* Where the payload to scan starts and how long it is; -1 if the packet
 * is malformed, else the bytes to scan (0: none). */
static int
ids_payload(struct ids_state *st, const struct rte_mbuf *m,
	    const struct sl_pkt_info *info, struct ids_dir *d, uint32_t *off)
{
	const struct rte_tcp_hdr *tcp;
	uint32_t hl, skip;

	switch (info->l4_proto) {
	case IPPROTO_TCP:
		tcp = sl_pkt_tcp(m, info);
		hl = tcp ? (uint32_t)(tcp->data_off >> 4) * 4 : 0;
		if (tcp == NULL || hl < 20 || hl > info->l4_len)
			return -1;
		hl = ids_tcp_new(st, d, tcp, info->l4_len - hl, &skip) > 0
			     ? hl + skip
			     : info->l4_len;
		break;
	case IPPROTO_UDP:
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		hl = 8;
		break;
	default:
		hl = 0;
	}
	if (hl > info->l4_len)
		return info->l4_proto == IPPROTO_UDP ? -1 : 0;
	*off = info->l4_off + hl;
	return (int)(info->l4_len - hl);
}

/* Feeds len bytes at off to the stream of the packet's direction. */
static void
ids_scan(struct ids_scan *sc, struct ids_dir *d, uint32_t off, uint32_t len)
{
	struct ids_state *st = sc->st;
	const char *data = rte_pktmbuf_mtod_offset(sc->m, const char *, off);

	if (d->s == NULL &&
	    hs_open_stream(st->cur->db, 0, &d->s) != HS_SUCCESS) {
		d->s = NULL;
		st->c.hs_errors++;
		return;
	}
	if (hs_scan_stream(d->s, data, len, 0, st->cur->scratch, ids_on_match,
			   sc) != HS_SUCCESS)
		st->c.hs_errors++;
	st->c.scanned_bytes += len;
}

static sl_verdict_t
ids_pkt(struct sl_nf *nf, struct rte_mbuf *m)
{
	struct ids_state *st = sl_nf_priv(nf);
	struct sl_pkt_info info;
	struct sl_5tuple t;
	struct ids_flow *f;
	uint32_t off = 0;
	int dir, len, rc;

	if (unlikely(st->build != NULL))
		ids_reload_poll(st, nf); /* between two packets */
	st->c.pkts++;
	st->c.bytes += rte_pktmbuf_pkt_len(m);
	rc = sl_pkt_parse(m, &info);
	if (rc == 0 && info.ip_version == 0) {
		st->c.non_ip++;
		return SL_NEXT;
	}
	if (rc != 0 || sl_pkt_5tuple(m, &t) != 0) {
		st->c.malformed++;
		return SL_NEXT;
	}
	if (info.later_fragment) {
		st->c.fragments++;
		return SL_NEXT;
	}
	f = ids_flow_get(st, &t, &dir, sl_now_ns());
	if (f == NULL)
		return st->full_drop ? SL_DROP : SL_NEXT; /* flows_full */
	if (f->dropped) {
		st->c.dropped_flow++;
		return SL_DROP;
	}
	len = ids_payload(st, m, &info, &f->dir[dir], &off);
	if (len < 0) {
		st->c.malformed++;
	} else if (len == 0) {
		st->c.no_payload++;
	} else {
		struct ids_scan sc = {st, nf, f, &f->dir[dir], m, &t};

		ids_scan(&sc, &f->dir[dir], off, (uint32_t)len);
	}
	if (f->dropped) {
		st->c.dropped_rule++;
		return SL_DROP;
	}
	if (f->divert_to != 0) {
		ids_divert(st, nf, f, m);
		return SL_TO((uint16_t)(f->divert_to - 1));
	}
	return SL_NEXT;
}

/* ---- counters, expiry, reload -------------------------------------- */

/* The counters line and the rules that fired; format in README.md. */
void
ids_print(struct ids_state *st, const char *reason, uint64_t now)
{
	const struct ids_counters *c = &st->c;
	char head[SL_STATS_HEAD_LEN];

	sl_stats_line_head(&st->stats, head, sizeof(head), "ids", reason, now,
			   c->pkts, c->bytes);
	fprintf(stderr,
		"%s non_ip=%" PRIu64 " malformed=%" PRIu64 " fragments=%" PRIu64
		" no_payload=%" PRIu64 " scanned_bytes=%" PRIu64
		" alerts=%" PRIu64 " alerts_quiet=%" PRIu64
		" dropped_rule=%" PRIu64 " dropped_flow=%" PRIu64
		" diverted=%" PRIu64 " divert_failed=%" PRIu64
		" messages_failed=%" PRIu64 " flows=%" PRIu32
		" flows_new=%" PRIu64 " flows_expired=%" PRIu64
		" flows_full=%" PRIu64 " tcp_retrans=%" PRIu64
		" tcp_gaps=%" PRIu64 " hs_errors=%" PRIu64
		" partials_full=%" PRIu64 " requests_ok=%" PRIu64
		" requests_failed=%" PRIu64 " rules=%" PRIu32
		" reloads=%" PRIu64 " reloads_failed=%" PRIu64 "\n",
		head, c->non_ip, c->malformed, c->fragments, c->no_payload,
		c->scanned_bytes, c->alerts, c->alerts_quiet, c->dropped_rule,
		c->dropped_flow, c->diverted, c->divert_failed,
		c->messages_failed, st->n_flows, c->flows_new, c->flows_expired,
		c->flows_full, c->tcp_retrans, c->tcp_gaps, c->hs_errors,
		c->partials_full, c->requests_applied, c->requests_rejected,
		st->cur->rs->n_rules, c->reloads, c->reloads_failed);
	for (uint32_t i = 0; i < st->cur->rs->n_rules; i++) {
		const struct ids_rule *r = &st->cur->rs->rules[i];

		if (st->cur->hits[i] > 0)
			fprintf(stderr,
				"ids-rule: sid=%" PRIu32 " rev=%" PRIu32
				" action=%s hits=%" PRIu64 "\n",
				r->sid, r->rev, ids_action_name(r->action),
				st->cur->hits[i]);
	}
	fflush(stderr);
}

/* How long flow f may be idle: --closed-timeout once it was reset or
 * both directions sent a FIN, else --timeout. */
static uint64_t
ids_idle_ns(const struct ids_state *st, const struct ids_flow *f)
{
	int closed = f->dir[0].closed == 2 || f->dir[1].closed == 2 ||
		     (f->dir[0].closed && f->dir[1].closed);

	return closed && st->closed_ns < st->idle_ns ? st->closed_ns
						     : st->idle_ns;
}

/* Expires idle flows: the whole table is walked once a second, a share
 * of it every tick. Their streams stay in the slot for the next flow. */
static void
ids_sweep(struct ids_state *st, uint64_t now)
{
	uint64_t dt = now - st->last_sweep_ns;
	uint32_t budget = st->n_slots;

	if (dt < IDS_NS)
		budget = (uint32_t)((double)st->n_slots * (double)dt /
				    (double)IDS_NS) +
			 1;
	if (budget > st->n_slots)
		budget = st->n_slots;
	st->last_sweep_ns = now;
	for (; budget > 0; budget--) {
		uint32_t p = st->sweep_cursor;
		struct ids_flow *f = ids_slot(st, p);
		struct sl_5tuple key;
		void *kp;

		st->sweep_cursor = p + 1 == st->n_slots ? 0 : p + 1;
		if (!f->in_use || now - f->last_ns < ids_idle_ns(st, f) ||
		    rte_hash_get_key_with_position(st->h, (int32_t)p, &kp) != 0)
			continue;
		memcpy(&key, kp, sizeof(key));
		(void)rte_hash_del_key(st->h, &key);
		f->in_use = 0;
		st->n_flows--;
		st->c.flows_expired++;
	}
}

/* Closes every stream (they belong to the database being replaced or
 * freed); flows open new ones on their next packet. */
void
ids_close_streams(struct ids_state *st)
{
	for (uint32_t i = 0; i < st->n_slots; i++)
		for (int d = 0; d < 2; d++) {
			struct ids_dir *x = &ids_slot(st, i)->dir[d];

			if (x->s != NULL)
				hs_close_stream(x->s, NULL, NULL, NULL);
			x->s = NULL;
			x->n_partials = 0;
		}
}

/* ---- callbacks ----------------------------------------------------- */

static void
ids_tick(struct sl_nf *nf, uint64_t now)
{
	struct ids_state *st = sl_nf_priv(nf);

	if (st->build != NULL)
		ids_reload_poll(st, nf);
	ids_sweep(st, now);
	if (sl_stats_line_due(&st->stats, now))
		ids_print(st, "periodic", now);
}

/* "stats" prints the counters; "alert" is our own alerts when
 * --alert-to is this service. */
static void
ids_on_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct ids_state *st = sl_nf_priv(nf);

	(void)value;
	if (strcmp(key, "stats") == 0)
		ids_print(st, "message", sl_now_ns());
	else if (strcmp(key, "alert") != 0)
		fprintf(stderr,
			IDS_PROG ": message '%s' ignored (stats prints the "
				 "counters)\n",
			key);
}

/* Replies to alerts' Messages and to diverts' ChangeDefaults (libsluice
 * logs the rejected ones). */
static void
ids_on_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	struct ids_state *st = sl_nf_priv(nf);

	(void)id;
	(void)reason;
	if (result == 0)
		st->c.requests_applied++;
	else
		st->c.requests_rejected++;
}

static void
ids_state_free(struct ids_state *st)
{
	ids_reload_discard(st);
	if (st->flows != NULL)
		ids_close_streams(st);
	free(st->flows);
	st->flows = NULL;
	if (st->h != NULL)
		rte_hash_free(st->h);
	st->h = NULL;
	ids_db_free(st->cur);
	st->cur = NULL;
}

static int
ids_init(struct sl_nf *nf, int argc, char **argv)
{
	struct ids_state *st = sl_nf_priv(nf);
	struct sl_nf_table_spec spec = {
		.prog = IDS_PROG,
		.tag = "slids",
		.what = "flow",
		.whats = "flows",
		.entries = st->capacity,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = 74,
		.slot_size =
			sizeof(struct ids_flow) +
			2 * (size_t)st->partials * sizeof(struct ids_partial),
	};
	char err[IDS_ERR_LEN];
	void *slots = NULL;
	int rc;

	(void)argc;
	(void)argv;
	if (st->rules_path == NULL) {
		fprintf(stderr, IDS_PROG ": missing --rules FILE\n");
		return EINVAL;
	}
	rc = ids_db_build(st->rules_path, &st->cur, err, sizeof(err));
	if (rc == 0 && ids_db_resolve(nf, st->cur, st->rules_path, 1, err,
				      sizeof(err)) != 0) {
		ids_db_free(st->cur);
		st->cur = NULL;
		rc = -EINVAL;
	}
	if (rc != 0) {
		fprintf(stderr, IDS_PROG ": %s\n", err);
		return rc == -ENOMEM ? ENOMEM : EINVAL;
	}
	rc = sl_nf_table_create(nf, &spec, &st->h, &slots, &st->n_slots);
	if (rc != 0) {
		ids_state_free(st);
		return rc;
	}
	st->flows = slots;
	st->slot_size = spec.slot_size;
	for (uint32_t i = 0; i < st->n_slots; i++) {
		struct ids_flow *f = ids_slot(st, i);
		struct ids_partial *part = (struct ids_partial *)(f + 1);

		f->dir[0].partial = part;
		f->dir[1].partial = part + st->partials;
	}
	st->idle_ns = (uint64_t)(st->timeout_s * (double)IDS_NS);
	st->closed_ns = (uint64_t)(st->closed_s * (double)IDS_NS);
	st->last_sweep_ns = sl_now_ns();
	sl_stats_line_start(&st->stats, st->stats_ms * 1000000ull,
			    st->last_sweep_ns);
	ids_print_rules(st, "loaded");
	return 0;
}

static void
ids_fini(struct sl_nf *nf)
{
	struct ids_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	if (st->build != NULL) {
		st->reload_again = 0;
		ids_reload_poll(st, nf); /* a finished one is taken as usual */
	}
	if (st->build != NULL)
		fprintf(stderr,
			IDS_PROG
			": exiting during a reload: waiting for the "
			"compile of %s to end; its rules are not used\n",
			st->rules_path);
	ids_print(st, "exit", sl_now_ns());
	ids_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const char ids_usage[] =
	"usage: " IDS_PROG " [EAL args] -- [libsluice args] --rules FILE"
	" [--flows N] [--full pass|drop] [--partials N] [--timeout S]"
	" [--closed-timeout S]"
	" [--alert-to SERVICE]"
	" [--alert-rate N]"
	" [--stats-ms MS]\n";

static const char *const ids_full_choices[] = {"pass", "drop", NULL};

static const struct sl_nf_opt ids_opts[] = {
	{.name = "rules",
	 .letter = 'r',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "rule file, Snort/Suricata syntax (nfs/ids/README.md)",
	 SL_OPT_AT(struct ids_state, rules_path)},
	{.name = "flows",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "flow table capacity (default 65536); a new flow when it "
		 "is full\nis not inspected (flows_full)",
	 SL_OPT_AT(struct ids_state, capacity),
	 .min = 16,
	 .max = 4194304,
	 .def = "65536"},
	{.name = "partials",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "rules of several parts partly matched kept per flow "
		 "direction\n(default 8); a part beyond is lost (partials_full)",
	 SL_OPT_AT(struct ids_state, partials),
	 .min = 1,
	 .max = 64,
	 .def = "8"},
	{.name = "timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "a flow idle for S seconds is forgotten (default 60)",
	 SL_OPT_AT(struct ids_state, timeout_s),
	 .min = 0.01,
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "60"},
	{.name = "closed-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "a TCP flow reset, or closed both ways, is forgotten after S "
		 "idle\nseconds (default 2; at most --timeout)",
	 SL_OPT_AT(struct ids_state, closed_s),
	 .min = 0.01,
	 .max = 86400,
	 .frac = 1,
	 .what = "number of seconds",
	 .def = "2"},
	{.name = "alert-to",
	 .type = SL_OPT_SERVICE,
	 .arg = "SERVICE",
	 .help = "send each alert as Message(SERVICE, alert, ...) (default: "
		 "this NF's\nown service; sluiced publishes it as an event)",
	 SL_OPT_AT(struct ids_state, alert_to)},
	{.name = "alert-rate",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "print and send at most N alerts a second (default 1000; "
		 "the\nothers are counted as alerts_quiet, their action is "
		 "taken)",
	 SL_OPT_AT(struct ids_state, alert_rate),
	 .max = 1000000,
	 .def = "1000"},
	{.name = "full",
	 .type = SL_OPT_CHOICE,
	 .arg = "pass|drop",
	 .help = "what to do with packets of new flows when the table is "
		 "full:\npass them uninspected (default) or drop them",
	 SL_OPT_AT(struct ids_state, full_drop),
	 .choices = ids_full_choices,
	 .what = "pass or drop"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS ms (default 0: at exit, "
		 "reload and\non a 'stats' message only)",
	 SL_OPT_AT(struct ids_state, stats_ms),
	 .max = 86400000,
	 .def = "0"},
	{.name = NULL},
};

static const struct sl_nf_ops ids_ops = {
	.name = IDS_PROG,
	.service = "ids",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = ids_init,
	.process_pkt = ids_pkt,
	.tick = ids_tick,
	.tick_ms = IDS_TICK_MS,
	.reload = ids_reload,
	.on_message = ids_on_message,
	.on_reply = ids_on_reply,
	.fini = ids_fini,
	.usage = ids_usage,
	.opts = ids_opts,
	.priv_size = sizeof(struct ids_state),
	.opts_help_col = 22,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&ids_ops, argc, argv);
}
