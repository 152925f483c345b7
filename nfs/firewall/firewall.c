/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall: ordered allow/deny rules over the 5-tuple, first match
 * wins, with a default policy. Deny -> SL_DROP, allow -> SL_NEXT.
 *
 * Rules come from a YAML or JSON file (rules.c) and are compiled into two
 * DPDK rte_acl contexts, one for IPv4 and one for IPv6, classified a burst
 * at a time. The linear matcher of rules.c is the reference (the unit
 * tests compare both) and the fallback if rte_acl cannot be built.
 *
 * SIGHUP re-reads the file: the new rules replace the old ones only if the
 * whole file is valid. Counters are printed on reload and at exit in the
 * format documented in README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <rte_acl.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "rules.h"

#define FW_PROG "sluice-firewall"
#define FW_CHUNK 64        /* packets classified per rte_acl call */
#define FW_PRINT_RULES 32  /* rules listed at startup */

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
	struct rte_acl_ctx *acl4; /* NULL: no IPv4 rules, or linear */
	struct rte_acl_ctx *acl6; /* NULL: no IPv6 rules, or linear */
	enum fw_matcher matcher;  /* what is actually used */
	uint32_t slot_default;
	uint32_t slot_non_ip;
	uint32_t slot_malformed;
	uint8_t *deny;            /* [n_slots]: 1 = drop */
	struct fw_counter *cnt;   /* [n_slots] */
};

struct fw_state {
	char *rules_path;
	uint8_t non_ip_action;   /* enum fw_action for non-IP and malformed */
	enum fw_matcher matcher; /* what --matcher asked for */
	uint32_t generation;     /* tables built, for unique rte_acl names */
	struct fw_table *table;
};

/*
 * rte_acl input keys, built from the parsed 5-tuple so IPv4 options and
 * IPv6 extension headers do not move the fields. Addresses and ports in
 * network order, as rte_acl expects. The first field must be one byte;
 * the others are grouped in 4-byte input words.
 */
struct fw_key4 {
	uint8_t proto;
	uint8_t pad[3];
	uint32_t src;
	uint32_t dst;
	uint16_t sport;
	uint16_t dport;
};

struct fw_key6 {
	uint8_t proto;
	uint8_t pad[3];
	uint32_t src[4];
	uint32_t dst[4];
	uint16_t sport;
	uint16_t dport;
};

enum { F4_PROTO, F4_SRC, F4_DST, F4_SPORT, F4_DPORT, F4_NUM };
enum { F6_PROTO, F6_SRC, F6_DST = F6_SRC + 4, F6_SPORT = F6_DST + 4,
       F6_DPORT, F6_NUM };

RTE_ACL_RULE_DEF(fw_acl_rule4, F4_NUM);
RTE_ACL_RULE_DEF(fw_acl_rule6, F6_NUM);

static const struct rte_acl_field_def fw_defs4[F4_NUM] = {
	[F4_PROTO] = {.type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1,
		      .field_index = F4_PROTO, .input_index = 0,
		      .offset = offsetof(struct fw_key4, proto)},
	[F4_SRC] = {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
		    .field_index = F4_SRC, .input_index = 1,
		    .offset = offsetof(struct fw_key4, src)},
	[F4_DST] = {.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
		    .field_index = F4_DST, .input_index = 2,
		    .offset = offsetof(struct fw_key4, dst)},
	[F4_SPORT] = {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
		      .field_index = F4_SPORT, .input_index = 3,
		      .offset = offsetof(struct fw_key4, sport)},
	[F4_DPORT] = {.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
		      .field_index = F4_DPORT, .input_index = 3,
		      .offset = offsetof(struct fw_key4, dport)},
};

static void
fw_defs6(struct rte_acl_field_def *d)
{
	unsigned i;

	memset(d, 0, F6_NUM * sizeof(*d));
	d[F6_PROTO] = (struct rte_acl_field_def){
		.type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1,
		.field_index = F6_PROTO, .input_index = 0,
		.offset = offsetof(struct fw_key6, proto)};
	for (i = 0; i < 4; i++) {
		d[F6_SRC + i] = (struct rte_acl_field_def){
			.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
			.field_index = (uint8_t)(F6_SRC + i),
			.input_index = (uint8_t)(1 + i),
			.offset = (uint32_t)(offsetof(struct fw_key6, src) +
					     4 * i)};
		d[F6_DST + i] = (struct rte_acl_field_def){
			.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4,
			.field_index = (uint8_t)(F6_DST + i),
			.input_index = (uint8_t)(5 + i),
			.offset = (uint32_t)(offsetof(struct fw_key6, dst) +
					     4 * i)};
	}
	d[F6_SPORT] = (struct rte_acl_field_def){
		.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
		.field_index = F6_SPORT, .input_index = 9,
		.offset = offsetof(struct fw_key6, sport)};
	d[F6_DPORT] = (struct rte_acl_field_def){
		.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2,
		.field_index = F6_DPORT, .input_index = 9,
		.offset = offsetof(struct fw_key6, dport)};
}

/* Bits of a prefix of len bits that fall in 32-bit word i. */
static uint32_t
fw_word_bits(unsigned len, unsigned i)
{
	if (len <= 32 * i)
		return 0;
	return len - 32 * i >= 32 ? 32 : len - 32 * i;
}

/* Fields common to both families: proto, ports, priority, userdata. */
static void
fw_acl_common(const struct fw_rule *r, uint32_t index,
	      struct rte_acl_rule_data *data, struct rte_acl_field *proto,
	      struct rte_acl_field *sport, struct rte_acl_field *dport)
{
	data->category_mask = 1;
	/* First match wins: earlier rules get higher priority. */
	data->priority = (int32_t)(RTE_ACL_MAX_PRIORITY - index);
	data->userdata = index + 1; /* 0 means "no match" */
	proto->value.u8 = r->proto_any ? 0 : r->proto;
	proto->mask_range.u8 = r->proto_any ? 0 : 0xff;
	sport->value.u16 = r->sport_lo;
	sport->mask_range.u16 = r->sport_hi;
	dport->value.u16 = r->dport_lo;
	dport->mask_range.u16 = r->dport_hi;
}

/*
 * Builds the rte_acl context of one family from the rules that apply to it
 * (same family, or no address given). *out is NULL if there are none.
 */
static int
fw_acl_build(const struct fw_ruleset *rs, unsigned family, const char *name,
	     struct rte_acl_ctx **out, char *err, size_t err_size)
{
	struct rte_acl_param prm = {
		.name = name,
		.socket_id = SOCKET_ID_ANY,
		.rule_size = family == 4 ? RTE_ACL_RULE_SZ(F4_NUM) :
					   RTE_ACL_RULE_SZ(F6_NUM),
	};
	struct rte_acl_config cfg = {
		.num_categories = 1,
		.num_fields = family == 4 ? F4_NUM : F6_NUM,
	};
	struct rte_acl_ctx *ctx;
	uint32_t i, n = 0;
	int rc;

	*out = NULL;
	for (i = 0; i < rs->n_rules; i++)
		n += rs->rules[i].family == 0 || rs->rules[i].family == family;
	if (n == 0)
		return 0;
	prm.max_rule_num = n;

	/* Our pid is in the name: one left over is from a dead process. */
	ctx = rte_acl_find_existing(name);
	if (ctx != NULL)
		rte_acl_free(ctx);
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		snprintf(err, err_size, "rte_acl_create: %s",
			 rte_strerror(rte_errno));
		return -(rte_errno ? rte_errno : ENOMEM);
	}

	for (i = 0, rc = 0; rc == 0 && i < rs->n_rules; i++) {
		const struct fw_rule *r = &rs->rules[i];
		unsigned w;

		if (r->family != 0 && r->family != family)
			continue;
		if (family == 4) {
			struct fw_acl_rule4 a;

			memset(&a, 0, sizeof(a));
			fw_acl_common(r, i, &a.data, &a.field[F4_PROTO],
				      &a.field[F4_SPORT], &a.field[F4_DPORT]);
			a.field[F4_SRC].value.u32 = ntohl(r->src[0]);
			a.field[F4_SRC].mask_range.u32 = r->src_len;
			a.field[F4_DST].value.u32 = ntohl(r->dst[0]);
			a.field[F4_DST].mask_range.u32 = r->dst_len;
			rc = rte_acl_add_rules(ctx, (struct rte_acl_rule *)&a,
					       1);
		} else {
			struct fw_acl_rule6 a;

			memset(&a, 0, sizeof(a));
			fw_acl_common(r, i, &a.data, &a.field[F6_PROTO],
				      &a.field[F6_SPORT], &a.field[F6_DPORT]);
			for (w = 0; w < 4; w++) {
				struct rte_acl_field *s = &a.field[F6_SRC + w];
				struct rte_acl_field *d = &a.field[F6_DST + w];

				s->value.u32 = ntohl(r->src[w]);
				s->mask_range.u32 = fw_word_bits(r->src_len, w);
				d->value.u32 = ntohl(r->dst[w]);
				d->mask_range.u32 = fw_word_bits(r->dst_len, w);
			}
			rc = rte_acl_add_rules(ctx, (struct rte_acl_rule *)&a,
					       1);
		}
	}
	if (rc == 0) {
		if (family == 4)
			memcpy(cfg.defs, fw_defs4, sizeof(fw_defs4));
		else
			fw_defs6(cfg.defs);
		rc = rte_acl_build(ctx, &cfg);
	}
	if (rc != 0) {
		snprintf(err, err_size, "rte_acl (IPv%u): %s", family,
			 strerror(-rc));
		rte_acl_free(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

static void
fw_table_free(struct fw_table *tb)
{
	if (tb == NULL)
		return;
	rte_acl_free(tb->acl4);
	rte_acl_free(tb->acl6);
	fw_rules_free(tb->rs);
	free(tb->deny);
	free(tb->cnt);
	free(tb);
}

/*
 * Reads the rule file and compiles it. Nothing in fw changes, so a bad
 * file on reload leaves the running table alone.
 */
static int
fw_table_load(struct fw_state *fw, struct fw_table **out, char *err,
	      size_t err_size)
{
	struct fw_table *tb;
	uint32_t n_slots, i;
	int rc;

	tb = calloc(1, sizeof(*tb));
	if (tb == NULL)
		return -ENOMEM;
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
		char name[RTE_ACL_NAMESIZE], why[160];

		fw->generation++;
		snprintf(name, sizeof(name), "slfw%d_%" PRIu32 "_4",
			 (int)getpid(), fw->generation);
		rc = fw_acl_build(tb->rs, 4, name, &tb->acl4, why,
				  sizeof(why));
		if (rc == 0) {
			name[strlen(name) - 1] = '6';
			rc = fw_acl_build(tb->rs, 6, name, &tb->acl6, why,
					  sizeof(why));
		}
		if (rc != 0) {
			fprintf(stderr,
				FW_PROG ": cannot build rte_acl (%s; sluiced "
					"--nf-mem sets the memory NFs may "
					"use); using the linear matcher\n",
				why);
			rte_acl_free(tb->acl4);
			tb->acl4 = NULL;
			tb->matcher = FW_MATCH_LINEAR;
		}
	}
	*out = tb;
	return 0;
}

/* Classifies up to FW_CHUNK packets and sets their verdicts. */
static void
fw_classify(struct fw_table *tb, struct rte_mbuf **pkts, uint16_t n)
{
	struct fw_key4 k4[FW_CHUNK];
	struct fw_key6 k6[FW_CHUNK];
	const uint8_t *d4[FW_CHUNK], *d6[FW_CHUNK];
	uint32_t r4[FW_CHUNK], r6[FW_CHUNK];
	uint16_t i4[FW_CHUNK], i6[FW_CHUNK];
	uint32_t slot[FW_CHUNK];
	uint16_t i, n4 = 0, n6 = 0;
	struct sl_5tuple t;
	int rc;

	for (i = 0; i < n; i++) {
		rc = sl_pkt_5tuple(pkts[i], &t);
		if (unlikely(rc != 0)) {
			slot[i] = rc == -ENOENT ? tb->slot_non_ip :
						  tb->slot_malformed;
			continue;
		}
		slot[i] = tb->slot_default;
		if (tb->matcher == FW_MATCH_LINEAR) {
			int m = fw_rules_match(tb->rs, &t);

			if (m >= 0)
				slot[i] = (uint32_t)m;
		} else if (t.family == 4) {
			struct fw_key4 *k;

			if (tb->acl4 == NULL)
				continue;
			k = &k4[n4];
			memset(k, 0, sizeof(*k));
			k->proto = t.proto;
			k->src = t.src.v4;
			k->dst = t.dst.v4;
			k->sport = t.sport;
			k->dport = t.dport;
			d4[n4] = (const uint8_t *)k;
			i4[n4++] = i;
		} else {
			struct fw_key6 *k;

			if (tb->acl6 == NULL)
				continue;
			k = &k6[n6];
			memset(k->pad, 0, sizeof(k->pad));
			k->proto = t.proto;
			memcpy(k->src, t.src.v6, 16);
			memcpy(k->dst, t.dst.v6, 16);
			k->sport = t.sport;
			k->dport = t.dport;
			d6[n6] = (const uint8_t *)k;
			i6[n6++] = i;
		}
	}
	if (n4 > 0 && rte_acl_classify(tb->acl4, d4, r4, n4, 1) == 0)
		for (i = 0; i < n4; i++)
			if (r4[i] != 0)
				slot[i4[i]] = r4[i] - 1;
	if (n6 > 0 && rte_acl_classify(tb->acl6, d6, r6, n6, 1) == 0)
		for (i = 0; i < n6; i++)
			if (r6[i] != 0)
				slot[i6[i]] = r6[i] - 1;

	for (i = 0; i < n; i++) {
		struct fw_counter *c = &tb->cnt[slot[i]];

		c->pkts++;
		c->bytes += rte_pktmbuf_pkt_len(pkts[i]);
		sl_pkt_set_verdict(pkts[i],
				   tb->deny[slot[i]] ? SL_DROP : SL_NEXT);
	}
}

static void
fw_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct fw_state *fw = sl_nf_priv(nf);
	uint16_t done, k;

	for (done = 0; done < n; done += k) {
		k = n - done < FW_CHUNK ? n - done : FW_CHUNK;
		fw_classify(fw->table, pkts + done, k);
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

/* The counter report; format documented in README.md. */
static void
fw_print_counters(const struct fw_state *fw, const char *reason)
{
	const struct fw_table *tb = fw->table;
	uint64_t total = 0, denied = 0;
	char idx[16];
	uint32_t i;

	fprintf(stderr, "fw-counters: reason=%s file=%s rules=%" PRIu32
			" matcher=%s\n",
		reason, fw->rules_path, tb->rs->n_rules,
		fw_matcher_names[tb->matcher]);
	for (i = 0; i <= tb->slot_malformed; i++) {
		total += tb->cnt[i].pkts;
		if (tb->deny[i])
			denied += tb->cnt[i].pkts;
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

static void
fw_usage(FILE *f)
{
	fprintf(f,
		"usage: " FW_PROG " [EAL args] -- [libsluice args] --rules FILE"
		" [--non-ip allow|deny] [--matcher acl|linear]\n"
		"  --rules FILE      rule file, .yaml/.yml or .json (see "
		"nfs/firewall/README.md)\n"
		"  --non-ip ACTION   what to do with non-IP and malformed "
		"packets (default allow)\n"
		"  --matcher NAME    acl (rte_acl, default) or linear "
		"(reference scan)\n");
}

static void
fw_state_free(struct fw_state *fw)
{
	if (fw == NULL)
		return;
	fw_table_free(fw->table);
	free(fw->rules_path);
	free(fw);
}

static int
fw_parse_args(struct fw_state *fw, int argc, char **argv)
{
	static const struct option opts[] = {
		{"rules", required_argument, NULL, 'r'},
		{"non-ip", required_argument, NULL, 'n'},
		{"matcher", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 0; /* glibc: restart scanning (libsluice used getopt) */
	while ((c = getopt_long(argc, argv, "+r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			free(fw->rules_path);
			fw->rules_path = strdup(optarg);
			if (fw->rules_path == NULL)
				return ENOMEM;
			break;
		case 'n':
			if (strcmp(optarg, "allow") == 0) {
				fw->non_ip_action = FW_ALLOW;
			} else if (strcmp(optarg, "deny") == 0) {
				fw->non_ip_action = FW_DENY;
			} else {
				fprintf(stderr,
					FW_PROG ": --non-ip: '%s' is not allow "
						"or deny\n",
					optarg);
				return EINVAL;
			}
			break;
		case 'm':
			if (strcmp(optarg, "acl") == 0) {
				fw->matcher = FW_MATCH_ACL;
			} else if (strcmp(optarg, "linear") == 0) {
				fw->matcher = FW_MATCH_LINEAR;
			} else {
				fprintf(stderr,
					FW_PROG ": --matcher: '%s' is not acl "
						"or linear\n",
					optarg);
				return EINVAL;
			}
			break;
		case 'h':
			fw_usage(stdout);
			return ECANCELED;
		default: /* getopt_long has said what was wrong */
			fw_usage(stderr);
			return EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, FW_PROG ": unexpected argument '%s'\n",
			argv[optind]);
		fw_usage(stderr);
		return EINVAL;
	}
	if (fw->rules_path == NULL) {
		fprintf(stderr, FW_PROG ": missing --rules FILE\n");
		fw_usage(stderr);
		return EINVAL;
	}
	return 0;
}

static int
fw_init(struct sl_nf *nf, int argc, char **argv)
{
	struct fw_state *fw;
	char err[512];
	int rc;

	fw = calloc(1, sizeof(*fw));
	if (fw == NULL)
		return ENOMEM;
	fw->non_ip_action = FW_ALLOW;
	fw->matcher = FW_MATCH_ACL;
	rc = fw_parse_args(fw, argc, argv);
	if (rc == 0) {
		rc = fw_table_load(fw, &fw->table, err, sizeof(err));
		if (rc != 0) {
			fprintf(stderr, FW_PROG ": %s\n", err);
			rc = rc == -ENOMEM ? ENOMEM : -rc;
		}
	}
	if (rc != 0) {
		fw_state_free(fw);
		return rc;
	}
	sl_nf_set_priv(nf, fw);
	fw_print_table(fw, "loaded");
	return 0;
}

static void
fw_reload(struct sl_nf *nf)
{
	struct fw_state *fw = sl_nf_priv(nf);
	struct fw_table *tb = NULL;
	char err[512];
	int rc;

	fw_print_counters(fw, "reload");
	rc = fw_table_load(fw, &tb, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr,
			FW_PROG ": reload failed, keeping the %" PRIu32
				" current rules: %s\n",
			fw->table->rs->n_rules, err);
		fflush(stderr);
		return;
	}
	fw_table_free(fw->table);
	fw->table = tb;
	fw_print_table(fw, "reloaded");
}

static void
fw_fini(struct sl_nf *nf)
{
	struct fw_state *fw = sl_nf_priv(nf);

	if (fw == NULL)
		return;
	fw_print_counters(fw, "exit");
	fw_state_free(fw);
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops fw_ops = {
	.name = FW_PROG,
	.service = "firewall",
	.access = SL_ACCESS_READ,
	.init = fw_init,
	.process = fw_process,
	.reload = fw_reload,
	.fini = fw_fini,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&fw_ops, argc, argv);
}
