/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall: ordered allow/deny rules over the 5-tuple, first match
 * wins, with a default policy. Deny -> SL_DROP, allow -> SL_NEXT.
 *
 * Rules come from a YAML or JSON file (rules.c) and are compiled into an
 * sl_classifier (src/common/sl_classifier.c: two DPDK rte_acl contexts,
 * one for IPv4 and one for IPv6; common code written for sluiced's flow
 * rules too), classified a burst at a time. The linear matcher of rules.c
 * is the reference (the unit tests compare both) and the fallback if
 * rte_acl cannot be built.
 *
 * SIGHUP re-reads the file: the new rules replace the old ones only if the
 * whole file is valid. The file is read and its classifier built by a
 * background thread (an rte_acl build of thousands of rules takes seconds)
 * while packets go on through the old rules; the NF thread swaps the
 * tables between two bursts (fw_reload_poll(), from process and tick).
 * Counters are printed at that swap and at exit in the format documented
 * in README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "sluice/classifier.h"

#include "conntrack.h"
#include "rules.h"

#define FW_PROG "sluice-firewall"
#define FW_CHUNK 64       /* packets classified per lookup */
#define FW_PRINT_RULES 32 /* rules listed at startup */
#define FW_TICK_MS 10     /* how often an idle NF looks for a finished build */
#define FW_ERR_LEN 512
#define FW_NOTE_LEN 320

enum fw_matcher {
	FW_MATCH_ACL = 0,
	FW_MATCH_LINEAR,
};

static const char *const fw_matcher_names[] = {"acl", "linear"};

struct fw_counter {
	uint64_t pkts;
	uint64_t bytes;
};

/*
 * A rule set compiled for the data path. Counter/action slots: one per
 * rule, then the default policy, non-IP and malformed packets.
 */
struct fw_table {
	struct fw_ruleset *rs;
	struct sl_classifier *cls; /* NULL: linear */
	enum fw_matcher matcher;   /* what is actually used */
	uint32_t slot_default;
	uint32_t slot_non_ip;
	uint32_t slot_malformed;
	uint8_t *deny;          /* [n_slots]: 1 = drop */
	struct fw_counter *cnt; /* [n_slots] */
};

struct fw_state;

/*
 * A reload in progress: fw_builder() reads and compiles the file in its
 * own thread; the NF thread sees done (release/acquire), joins it and
 * takes table, or err. The builder only reads the fields of fw_state that
 * init set and nothing changes after.
 */
struct fw_build {
	pthread_t thread;
	const struct fw_state *fw;
	int done;               /* set by the builder when it has finished */
	int rc;                 /* fw_table_load()'s result */
	struct fw_table *table; /* the new table, when rc == 0 */
	char err[FW_ERR_LEN];   /* why not, when rc != 0 */
	char note[FW_NOTE_LEN]; /* a fallback to the linear matcher, or "" */
};

/* The NF's state: its private context (libsluice allocates it and stores
 * the options in it). */
struct fw_state {
	const char *rules_path; /* --rules */
	int non_ip_action;      /* enum fw_action for non-IP and malformed */
	int matcher;            /* enum fw_matcher --matcher asked for */
	struct fw_table *table;
	struct fw_build *build; /* the reload being built, or NULL */
	int reload_again;       /* SIGHUP during a build: reload after it */

	/* --stateful (conntrack.h): options, then state. */
	int stateful;
	uint32_t ct_max;
	uint32_t ct_timeout[CT_N_TIMEOUTS]; /* seconds, enum ct_timeout */
	uint64_t stats_ms;
	struct ct_table ct;
	struct sl_stats_line stats;
	uint64_t pkts, bytes; /* every packet, with --stateful */
};

/* Builds the classifier of a rule set: first match wins. */
static int
fw_acl_build(const struct fw_ruleset *rs, struct sl_classifier **out, char *err,
	     size_t err_size)
{
	const struct sl_match **m;
	char prefix[SL_CLASSIFIER_PREFIX_MAX + 1];
	uint32_t i;
	int rc;

	m = calloc(rs->n_rules ? rs->n_rules : 1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < rs->n_rules; i++)
		m[i] = &rs->rules[i].match;
	/* Our pid in the names: one left over is from a dead process. */
	snprintf(prefix, sizeof(prefix), "slfw%d_", (int)getpid());
	rc = sl_classifier_build(m, NULL, rs->n_rules, prefix, out, err,
				 err_size);
	free(m);
	return rc;
}

static void
fw_table_free(struct fw_table *tb)
{
	if (tb == NULL)
		return;
	sl_classifier_free(tb->cls);
	fw_rules_free(tb->rs);
	free(tb->deny);
	free(tb->cnt);
	free(tb);
}

/*
 * Reads the rule file and compiles it. Nothing in fw changes, so a bad
 * file on reload leaves the running table alone, and a reload can run it
 * in another thread. It prints nothing: when rte_acl cannot be built, note
 * says so (else it is ""), for the caller to print.
 */
static int
fw_table_load(const struct fw_state *fw, struct fw_table **out, char *err,
	      size_t err_size, char *note, size_t note_size)
{
	struct fw_table *tb;
	uint32_t n_slots, i;
	int rc;

	note[0] = '\0';
	tb = calloc(1, sizeof(*tb));
	if (tb == NULL) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	rc = fw_rules_load(fw->rules_path, &tb->rs, err, err_size);
	if (rc != 0) {
		free(tb);
		return rc;
	}
	n_slots = tb->rs->n_rules + 3;
	tb->slot_default = tb->rs->n_rules;
	tb->slot_non_ip = tb->rs->n_rules + 1;
	tb->slot_malformed = tb->rs->n_rules + 2;
	tb->deny = calloc(n_slots, sizeof(tb->deny[0]));
	tb->cnt = calloc(n_slots, sizeof(tb->cnt[0]));
	if (tb->deny == NULL || tb->cnt == NULL) {
		fw_table_free(tb);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < tb->rs->n_rules; i++)
		tb->deny[i] = tb->rs->rules[i].action == FW_DENY;
	tb->deny[tb->slot_default] = tb->rs->default_action == FW_DENY;
	tb->deny[tb->slot_non_ip] = fw->non_ip_action == FW_DENY;
	tb->deny[tb->slot_malformed] = fw->non_ip_action == FW_DENY;

	tb->matcher = fw->matcher;
	if (tb->matcher == FW_MATCH_ACL) {
		char why[160];

		rc = fw_acl_build(tb->rs, &tb->cls, why, sizeof(why));
		if (rc != 0) {
			snprintf(note, note_size,
				 FW_PROG ": cannot build rte_acl (%s; sluiced "
					 "--nf-mem sets the memory NFs may "
					 "use); using the linear matcher\n",
				 why);
			tb->cls = NULL;
			tb->matcher = FW_MATCH_LINEAR;
		}
	}
	*out = tb;
	return 0;
}

/* The verdict of a packet the rules judged, in slot: with --stateful, an
 * allowed one starts a connection, or is dropped when the table is full. */
static sl_verdict_t
fw_rule_verdict(struct fw_state *fw, struct fw_table *tb, uint32_t slot,
		const struct ct_pkt *cp, uint64_t now)
{
	if (tb->deny[slot])
		return SL_DROP;
	if (cp == NULL)
		return SL_NEXT;
	return ct_commit(&fw->ct, cp, now) == CT_PASS ? SL_NEXT : SL_DROP;
}

/*
 * Classifies up to FW_CHUNK packets and sets their verdicts. With
 * --stateful, a packet of a tracked connection (or an invalid one) is
 * decided by conntrack.c and never reaches the rules.
 */
static void
fw_classify(struct fw_state *fw, struct rte_mbuf **pkts, uint16_t n,
	    uint64_t now)
{
	struct fw_table *tb = fw->table;
	struct sl_5tuple t[FW_CHUNK];
	const struct sl_5tuple *tp[FW_CHUNK];
	uint32_t slot[FW_CHUNK], res[FW_CHUNK];
	uint16_t idx[FW_CHUNK];
	struct ct_pkt cp[FW_CHUNK];
	uint8_t ct[FW_CHUNK]; /* enum ct_result; CT_MISS: judged by rules */
	uint16_t i, k = 0;
	int rc;

	for (i = 0; i < n; i++) {
		ct[i] = CT_MISS;
		rc = sl_pkt_5tuple(pkts[i], &t[i]);
		if (unlikely(rc != 0)) {
			slot[i] = rc == -ENOENT ? tb->slot_non_ip
						: tb->slot_malformed;
			continue;
		}
		if (fw->stateful) {
			ct[i] = (uint8_t)ct_lookup(&fw->ct, pkts[i], &t[i], now,
						   &cp[i]);
			if (ct[i] != CT_MISS)
				continue;
		}
		slot[i] = tb->slot_default;
		if (tb->matcher == FW_MATCH_LINEAR) {
			int m = fw_rules_match(tb->rs, &t[i]);

			if (m >= 0)
				slot[i] = (uint32_t)m;
		} else {
			tp[k] = &t[i];
			idx[k++] = i;
		}
	}
	if (k > 0) {
		sl_classifier_lookup(tb->cls, tp, NULL, k, res);
		for (i = 0; i < k; i++)
			if (res[i] != 0)
				slot[idx[i]] = res[i] - 1;
	}

	for (i = 0; i < n; i++) {
		struct fw_counter *c;
		int tracked = fw->stateful && ct[i] == CT_MISS &&
			      slot[i] < tb->slot_non_ip;

		/* an earlier packet of this burst may have made its
		 * connection: a packet of it, not one for the rules */
		if (tracked)
			ct[i] = (uint8_t)ct_relookup(&fw->ct, &cp[i], now);
		if (ct[i] != CT_MISS) {
			sl_pkt_set_verdict(pkts[i], ct[i] == CT_PASS ? SL_NEXT
								     : SL_DROP);
			continue;
		}
		c = &tb->cnt[slot[i]];
		c->pkts++;
		c->bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sl_pkt_set_verdict(pkts[i],
				   fw_rule_verdict(fw, tb, slot[i],
						   tracked ? &cp[i] : NULL,
						   now));
	}
}

static void fw_reload_poll(struct fw_state *fw);

static void
fw_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct fw_state *fw = sl_nf_priv(nf);
	uint64_t now = 0;
	uint16_t done, k;

	/* A finished reload takes over before this burst, not inside it. */
	if (unlikely(fw->build != NULL))
		fw_reload_poll(fw);
	if (fw->stateful) {
		now = sl_now_ns();
		fw->pkts += n;
		for (done = 0; done < n; done++)
			fw->bytes += rte_pktmbuf_pkt_len(pkts[done]);
	}
	for (done = 0; done < n; done += k) {
		k = n - done < FW_CHUNK ? n - done : FW_CHUNK;
		fw_classify(fw, pkts + done, k, now);
	}
}

static void
fw_print_counter(const char *rule, const char *name, unsigned deny,
		 const struct fw_counter *c)
{
	fprintf(stderr,
		"fw-counter: rule=%s name=%s action=%s packets=%" PRIu64
		" bytes=%" PRIu64 "\n",
		rule, name, fw_action_name(deny ? FW_DENY : FW_ALLOW), c->pkts,
		c->bytes);
}

/* The --stateful line: the common head and the connection counters. */
static void
fw_print_stats(struct fw_state *fw, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN], ct[512];

	sl_stats_line_head(&fw->stats, head, sizeof(head), "fw", reason, now,
			   fw->pkts, fw->bytes);
	ct_format(&fw->ct, ct, sizeof(ct));
	fprintf(stderr, "%s%s\n", head, ct);
	fflush(stderr);
}

/* The counter report; format documented in README.md. */
static void
fw_print_counters(struct fw_state *fw, const char *reason)
{
	const struct fw_table *tb = fw->table;
	uint64_t total = 0, denied = 0;
	char idx[16];
	uint32_t i;

	fprintf(stderr,
		"fw-counters: reason=%s file=%s rules=%" PRIu32 " matcher=%s\n",
		reason, fw->rules_path, tb->rs->n_rules,
		fw_matcher_names[tb->matcher]);
	for (i = 0; i <= tb->slot_malformed; i++) {
		total += tb->cnt[i].pkts;
		if (tb->deny[i])
			denied += tb->cnt[i].pkts;
	}
	if (fw->stateful) {
		const struct ct_counters *c = &fw->ct.c;

		total += c->pkts[CT_G_NEW] + c->pkts[CT_G_ESTABLISHED] +
			 c->pkts[CT_G_CLOSING] + c->invalid;
		denied += c->invalid + c->table_full;
	}
	for (i = 0; i < tb->rs->n_rules; i++) {
		const char *name = tb->rs->rules[i].name;

		snprintf(idx, sizeof(idx), "%" PRIu32, i + 1);
		fw_print_counter(idx, name[0] ? name : "-", tb->deny[i],
				 &tb->cnt[i]);
	}
	fw_print_counter("default", "-", tb->deny[tb->slot_default],
			 &tb->cnt[tb->slot_default]);
	fw_print_counter("non-ip", "-", tb->deny[tb->slot_non_ip],
			 &tb->cnt[tb->slot_non_ip]);
	fw_print_counter("malformed", "-", tb->deny[tb->slot_malformed],
			 &tb->cnt[tb->slot_malformed]);
	fprintf(stderr,
		"fw-counters: end packets=%" PRIu64 " allowed=%" PRIu64
		" denied=%" PRIu64 "\n",
		total, total - denied, denied);
	if (fw->stateful)
		fw_print_stats(fw, reason, sl_now_ns());
	fflush(stderr);
}

static void
fw_print_table(const struct fw_state *fw, const char *verb)
{
	const struct fw_table *tb = fw->table;
	const struct fw_ruleset *rs = tb->rs;
	char text[256];
	uint32_t i;

	fprintf(stderr,
		FW_PROG ": %s %" PRIu32 " rules from %s, default %s, non-IP "
			"%s, matcher %s\n",
		verb, rs->n_rules, fw->rules_path,
		fw_action_name(rs->default_action),
		fw_action_name(fw->non_ip_action),
		fw_matcher_names[tb->matcher]);
	for (i = 0; i < rs->n_rules && i < FW_PRINT_RULES; i++) {
		fw_rule_format(&rs->rules[i], text, sizeof(text));
		fprintf(stderr, FW_PROG ":   rule %" PRIu32 "%s%s%s: %s\n",
			i + 1, rs->rules[i].name[0] ? " (" : "",
			rs->rules[i].name, rs->rules[i].name[0] ? ")" : "",
			text);
	}
	if (rs->n_rules > FW_PRINT_RULES)
		fprintf(stderr, FW_PROG ":   ... and %" PRIu32 " more\n",
			rs->n_rules - FW_PRINT_RULES);
	fflush(stderr);
}

/* The synopsis, for --help and after an error in the options; libsluice
 * prints fw_opts' lines after it. */
static const char fw_usage[] =
	"usage: " FW_PROG " [EAL args] -- [libsluice args] --rules FILE"
	" [--non-ip allow|deny] [--matcher acl|linear]\n"
	"       [--stateful [--ct-max N] [--ct-syn-timeout S]"
	" [--ct-established-timeout S]\n"
	"        [--ct-closing-timeout S] [--ct-udp-timeout S]"
	" [--ct-icmp-timeout S] [--stats-ms MS]]\n";

static const char *const fw_actions[] = {"allow", "deny", NULL};
static const char *const fw_matchers[] = {"acl", "linear", NULL};
_Static_assert(FW_ALLOW == 0 && FW_DENY == 1 && FW_MATCH_ACL == 0 &&
		       FW_MATCH_LINEAR == 1,
	       "fw_opts: choices are stored as their index");

static const struct sl_nf_opt fw_opts[] = {
	{.name = "rules",
	 .letter = 'r',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "rule file, .yaml/.yml or .json (see nfs/firewall/README.md)",
	 SL_OPT_AT(struct fw_state, rules_path)},
	{.name = "non-ip",
	 .type = SL_OPT_CHOICE,
	 .arg = "ACTION",
	 .help = "what to do with non-IP and malformed packets (default "
		 "allow)",
	 SL_OPT_AT(struct fw_state, non_ip_action),
	 .choices = fw_actions,
	 .what = "allow or deny"},
	{.name = "matcher",
	 .type = SL_OPT_CHOICE,
	 .arg = "NAME",
	 .help = "acl (rte_acl, default) or linear (reference scan)",
	 SL_OPT_AT(struct fw_state, matcher),
	 .choices = fw_matchers,
	 .what = "acl or linear"},
	{.name = "stateful",
	 .type = SL_OPT_FLAG,
	 .help = "track connections: the rules judge only a connection's "
		 "first packet",
	 SL_OPT_AT(struct fw_state, stateful)},
	{.name = "ct-max",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "connection table capacity (default 65536)",
	 SL_OPT_AT(struct fw_state, ct_max),
	 .min = 16,
	 .max = 16777216,
	 .def = "65536"},
	{.name = "ct-syn-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "idle timeout in SYN_SENT, SYN_RECV, seconds (default 60)",
	 SL_OPT_AT(struct fw_state, ct_timeout[CT_T_SYN]),
	 .min = 1,
	 .max = 8640000,
	 .what = "number of seconds",
	 .def = "60"},
	{.name = "ct-established-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "idle timeout in ESTABLISHED, seconds (default 432000)",
	 SL_OPT_AT(struct fw_state, ct_timeout[CT_T_EST]),
	 .min = 1,
	 .max = 8640000,
	 .what = "number of seconds",
	 .def = "432000"},
	{.name = "ct-closing-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "idle timeout in FIN_WAIT .. CLOSE, seconds (default 120)",
	 SL_OPT_AT(struct fw_state, ct_timeout[CT_T_CLOSE]),
	 .min = 1,
	 .max = 8640000,
	 .what = "number of seconds",
	 .def = "120"},
	{.name = "ct-udp-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "idle timeout in UDP, other non-TCP, seconds (default 60)",
	 SL_OPT_AT(struct fw_state, ct_timeout[CT_T_UDP]),
	 .min = 1,
	 .max = 8640000,
	 .what = "number of seconds",
	 .def = "60"},
	{.name = "ct-icmp-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "idle timeout in ICMP, ICMPv6, seconds (default 30)",
	 SL_OPT_AT(struct fw_state, ct_timeout[CT_T_ICMP]),
	 .min = 1,
	 .max = 8640000,
	 .what = "number of seconds",
	 .def = "30"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "with --stateful, print fw-stats every MS (default 5000; "
		 "0 = at reload and exit only)",
	 SL_OPT_AT(struct fw_state, stats_ms),
	 .max = 86400000,
	 .def = "5000"},
	{.name = NULL},
};

static void fw_reload_join(struct fw_state *fw);

static void
fw_state_free(struct fw_state *fw)
{
	if (fw == NULL)
		return;
	if (fw->build != NULL) {
		fw_reload_join(fw);
		fw_table_free(fw->build->table);
		free(fw->build);
	}
	fw_table_free(fw->table);
	fw->table = NULL;
	if (fw->ct.h != NULL)
		ct_free(&fw->ct);
}

/* --stateful: the connection table, and what it was made with. */
static int
fw_ct_init(struct sl_nf *nf, struct fw_state *fw)
{
	const uint32_t *t = fw->ct_timeout;
	uint64_t now = sl_now_ns();
	int rc;

	rc = ct_create(nf, &fw->ct, fw->ct_max, t, now);
	if (rc != 0)
		return rc;
	sl_stats_line_start(&fw->stats, fw->stats_ms * 1000000ull, now);
	fprintf(stderr,
		FW_PROG ": stateful: up to %" PRIu32 " connections; timeouts "
			"syn %" PRIu32 " s, established %" PRIu32
			" s, closing %" PRIu32 " s, udp %" PRIu32 " s, "
			"icmp %" PRIu32 " s\n",
		fw->ct_max, t[CT_T_SYN], t[CT_T_EST], t[CT_T_CLOSE],
		t[CT_T_UDP], t[CT_T_ICMP]);
	return 0;
}

static int
fw_init(struct sl_nf *nf, int argc, char **argv)
{
	struct fw_state *fw = sl_nf_priv(nf);
	char err[FW_ERR_LEN], note[FW_NOTE_LEN];
	int rc;

	for (int i = 1; i < argc && !fw->stateful; i++)
		if (strncmp(argv[i], "--ct", 4) == 0) {
			fprintf(stderr,
				FW_PROG ": %s: the --ct-* options need "
					"--stateful\n",
				argv[i]);
			return EINVAL;
		}
	if (fw->rules_path == NULL) {
		fprintf(stderr, FW_PROG ": missing --rules FILE\n");
		fputs(fw_usage, stderr);
		return EINVAL;
	}
	rc = fw_table_load(fw, &fw->table, err, sizeof(err), note,
			   sizeof(note));
	fputs(note, stderr);
	if (rc != 0) {
		fprintf(stderr, FW_PROG ": %s\n", err);
		fw_state_free(fw);
		return rc == -ENOMEM ? ENOMEM : -rc;
	}
	if (fw->stateful && (rc = fw_ct_init(nf, fw)) != 0) {
		fw_state_free(fw);
		return rc;
	}
	fw_print_table(fw, "loaded");
	return 0;
}

/* The reload thread: reads and compiles the file, then says it is done. */
static void *
fw_builder(void *arg)
{
	struct fw_build *b = arg;

	b->rc = fw_table_load(b->fw, &b->table, b->err, sizeof(b->err), b->note,
			      sizeof(b->note));
	__atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Prints the counters and why a reload failed; the table stays. */
static void
fw_reload_failed(struct fw_state *fw, const char *why)
{
	fw_print_counters(fw, "reload");
	fprintf(stderr,
		FW_PROG ": reload failed, keeping the %" PRIu32
			" current rules: %s\n",
		fw->table->rs->n_rules, why);
	fflush(stderr);
}

/*
 * Starts a reload: a thread reads and builds the file while packets go on
 * through fw->table. Signals are blocked in it, so that SIGHUP and SIGTERM
 * reach the NF thread (libsluice's handlers).
 */
static void
fw_reload_start(struct fw_state *fw)
{
	struct fw_build *b = calloc(1, sizeof(*b));
	sigset_t all, old;
	char why[FW_ERR_LEN];
	int rc;

	if (b == NULL) {
		fw_reload_failed(fw, "out of memory");
		return;
	}
	b->fw = fw;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&b->thread, NULL, fw_builder, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		free(b);
		snprintf(why, sizeof(why),
			 "cannot start a thread to build them (%s); send "
			 "SIGHUP again",
			 strerror(rc));
		fw_reload_failed(fw, why);
		return;
	}
	fw->build = b;
	fprintf(stderr,
		FW_PROG ": reloading %s in the background; packets go on "
			"through the %" PRIu32 " current rules until it is "
			"built\n",
		fw->rules_path, fw->table->rs->n_rules);
	fflush(stderr);
}

/* Waits for the builder to end (fini, or once it said it is done). */
static void
fw_reload_join(struct fw_state *fw)
{
	int rc = pthread_join(fw->build->thread, NULL);

	if (rc != 0) /* cannot happen: a joinable thread of ours */
		fprintf(stderr, FW_PROG ": pthread_join: %s\n", strerror(rc));
}

/*
 * If the reload thread has finished: between two bursts, prints the old
 * table's counters (every packet it judged is in them) and swaps in the
 * new table, or says why not and keeps the old one. Then starts the
 * reload a SIGHUP asked for during the build.
 */
static void
fw_reload_poll(struct fw_state *fw)
{
	struct fw_build *b = fw->build;

	if (b == NULL || !__atomic_load_n(&b->done, __ATOMIC_ACQUIRE))
		return;
	fw_reload_join(fw);
	fw->build = NULL;
	if (b->rc != 0) {
		fw_reload_failed(fw, b->err);
	} else {
		fw_print_counters(fw, "reload");
		fputs(b->note, stderr);
		fw_table_free(fw->table);
		fw->table = b->table;
		/* the connections stay; their counters start again with the
		 * rules' */
		memset(&fw->ct.c, 0, sizeof(fw->ct.c));
		fw_print_table(fw, "reloaded");
	}
	free(b);
	if (fw->reload_again) {
		fw->reload_again = 0;
		fw_reload_start(fw);
	}
}

static void
fw_reload(struct sl_nf *nf)
{
	struct fw_state *fw = sl_nf_priv(nf);

	fw_reload_poll(fw);
	if (fw->build == NULL) {
		fw_reload_start(fw);
		return;
	}
	/* The file may have changed again since the builder read it. */
	fw->reload_again = 1;
	fprintf(stderr,
		FW_PROG ": SIGHUP during a reload: %s will be read again "
			"once the current build ends\n",
		fw->rules_path);
	fflush(stderr);
}

/* With no traffic, process is not called: a finished reload is taken
 * here. */
static void
fw_tick(struct sl_nf *nf, uint64_t now_ns)
{
	struct fw_state *fw = sl_nf_priv(nf);

	if (fw->build != NULL)
		fw_reload_poll(fw);
	if (fw->stateful) {
		ct_sweep(&fw->ct, now_ns);
		if (sl_stats_line_due(&fw->stats, now_ns))
			fw_print_stats(fw, "interval", now_ns);
	}
}

static void
fw_fini(struct sl_nf *nf)
{
	struct fw_state *fw = sl_nf_priv(nf);

	if (fw == NULL)
		return;
	if (fw->build != NULL) {
		fw->reload_again = 0;
		fw_reload_poll(fw); /* a finished one is taken as usual */
	}
	if (fw->build != NULL) {
		fprintf(stderr,
			FW_PROG ": exiting during a reload: waiting for the "
				"build of %s to end; its rules are not used\n",
			fw->rules_path);
	}
	fw_print_counters(fw, "exit");
	fw_state_free(fw); /* joins the builder */
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops fw_ops = {
	.name = FW_PROG,
	.service = "firewall",
	.access = SL_ACCESS_READ,
	.init = fw_init,
	.process = fw_process,
	.tick = fw_tick,
	.tick_ms = FW_TICK_MS,
	.reload = fw_reload,
	.fini = fw_fini,
	.usage = fw_usage,
	.opts = fw_opts,
	.priv_size = sizeof(struct fw_state),
	.opts_help_col = 20,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fw_ops, argc, argv);
}
