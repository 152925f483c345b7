/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids rules: a subset of Snort/Suricata rule syntax (README.md),
 * parsed into ids_rule and compiled into one Hyperscan stream-mode
 * database (expression id = rule index).
 */
#ifndef SL_IDS_RULES_H
#define SL_IDS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/pkt.h"

struct hs_database;

#define IDS_SET_MAX 16      /* entries of one address or port set */
#define IDS_CONTENT_MAX 255 /* bytes of one content */
#define IDS_CONTENTS_MAX 16 /* contents of one rule */
#define IDS_PCRES_MAX 4     /* pcres of one rule */
#define IDS_MSG_MAX 128
#define IDS_SERVICE_MAX 64
#define IDS_NUM_MAX 65535 /* offset, depth, distance, within */

enum ids_action { IDS_ALERT = 0, IDS_DROP, IDS_DIVERT };

struct ids_addr {
	uint8_t family; /* 4 or 6 */
	uint8_t len;    /* prefix length */
	uint8_t neg;
	uint8_t addr[16];
};

struct ids_addr_set {
	uint8_t any; /* 1: every address (the set is empty) */
	uint8_t neg; /* the whole set is negated: ![...] */
	uint8_t n;
	struct ids_addr a[IDS_SET_MAX];
};

struct ids_port {
	uint16_t lo, hi;
	uint8_t neg;
};

struct ids_port_set {
	uint8_t any;
	uint8_t neg;
	uint8_t n;
	struct ids_port p[IDS_SET_MAX];
};

struct ids_content {
	uint8_t bytes[IDS_CONTENT_MAX];
	uint16_t len;
	uint8_t nocase;
	uint8_t has_offset, has_depth, has_distance, has_within;
	uint32_t offset, depth, distance, within;
};

struct ids_pcre {
	char *re;       /* the expression between the slashes */
	unsigned flags; /* HS_FLAG_* of its modifiers */
};

struct ids_rule {
	uint32_t line;
	enum ids_action action;
	uint8_t proto; /* IPPROTO_TCP, _UDP, _ICMP, or 0 for ip (any) */
	uint8_t bidir; /* <> */
	struct ids_addr_set src, dst;
	struct ids_port_set sport, dport;
	char msg[IDS_MSG_MAX];
	uint32_t sid, rev;
	char divert[IDS_SERVICE_MAX]; /* divert:SERVICE */
	uint32_t n_contents, n_pcres;
	struct ids_content content[IDS_CONTENTS_MAX];
	struct ids_pcre pcre[IDS_PCRES_MAX];
};

struct ids_ruleset {
	struct ids_rule *rules;
	uint32_t n_rules;
};

/* Parses the rule text of one line (no comment) into r. 0, or -EINVAL
 * with the problem in err (without the file and line). */
int ids_rule_parse(const char *text, struct ids_rule *r, char *err,
		   size_t err_size);

/* Reads a rule file: 0 with *out set, or a negative errno with
 * "FILE:LINE: PROBLEM" (or "FILE: PROBLEM") in err. */
int ids_rules_load(const char *path, struct ids_ruleset **out, char *err,
		   size_t err_size);
/* The same on text in memory (path only names it in errors). */
int ids_rules_parse_text(const char *path, const char *text,
			 struct ids_ruleset **out, char *err, size_t err_size);
void ids_rules_free(struct ids_ruleset *rs);

/* The expressions of rules of several parts: expression id n_rules + k
 * is part bit[k] of rule rule[k]; mask[r] is all of rule r's parts (0 for
 * a rule of one expression, which reports under id r). */
struct ids_parts {
	uint32_t n;
	uint32_t *rule;
	uint8_t *bit;
	uint32_t *mask; /* [n_rules] */
};

/* Compiles the rules into a stream-mode database and its parts: 0, or
 * -EINVAL with "FILE:LINE: sid N: PROBLEM" in err. */
int ids_rules_compile(const struct ids_ruleset *rs, const char *path,
		      struct hs_database **db, struct ids_parts *parts,
		      char *err, size_t err_size);
void ids_parts_free(struct ids_parts *p);

/* Whether rule r applies to a packet going from t's src to its dst (for
 * <> rules, also the other way). */
int ids_rule_header_match(const struct ids_rule *r, const struct sl_5tuple *t);

const char *ids_action_name(enum ids_action a);

#endif /* SL_IDS_RULES_H */
