/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall rule sets: parsing (YAML or JSON) and the reference
 * linear first-match matcher. No DPDK EAL dependency, so the unit tests
 * use it directly (tests/unit/test_fw_rules.c).
 */
#ifndef SL_FW_RULES_H
#define SL_FW_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/pkt.h"

#define FW_NAME_LEN 32       /* rule names: at most 31 characters */
#define FW_MAX_RULES 65536   /* rules per file */
#define FW_MAX_FILE (16u << 20) /* rule file size limit, bytes */

enum fw_action {
	FW_ALLOW = 0,
	FW_DENY = 1,
};

enum fw_format {
	FW_FORMAT_YAML = 0,
	FW_FORMAT_JSON,
};

/*
 * One rule. A field left out of the rule file matches everything: family
 * 0 (no address given) matches IPv4 and IPv6, proto_any every protocol,
 * port ranges default to 0-65535 and prefix lengths to 0.
 */
struct fw_rule {
	uint32_t src[4];      /* network order, host bits zero */
	uint32_t dst[4];
	uint32_t src_mask[4]; /* network order */
	uint32_t dst_mask[4];
	uint16_t sport_lo, sport_hi; /* host order, inclusive */
	uint16_t dport_lo, dport_hi;
	uint8_t family;    /* 0 (any), 4 or 6: from src/dst */
	uint8_t proto;     /* IPPROTO_*, unless proto_any */
	uint8_t proto_any;
	uint8_t action;    /* enum fw_action */
	uint8_t src_len;   /* prefix lengths (0 = any) */
	uint8_t dst_len;
	char name[FW_NAME_LEN]; /* "" if the file gave none */
};

struct fw_ruleset {
	uint32_t n_rules;
	uint8_t default_action; /* enum fw_action */
	struct fw_rule *rules;  /* [n_rules], in file order */
};

/**
 * Parses a rule set from text.
 *
 * @param origin file name used in error messages.
 * @param err receives a one-line message naming the file, the rule
 *   (1-based) and the field on failure, e.g.
 *   "fw-rules.yaml: rule 3: 'dst': '10.0.0.0/33' is not a valid prefix".
 * @return 0 and *out (free with fw_rules_free()), or -EINVAL for a bad
 *   rule set, -ENOMEM.
 */
int fw_rules_parse(const char *text, size_t len, enum fw_format format,
		   const char *origin, struct fw_ruleset **out, char *err,
		   size_t err_size);

/**
 * Reads and parses a rule file; the format comes from the extension
 * (.yaml, .yml or .json).
 *
 * @return 0, or a negative errno with a message in err (-ENOENT etc. if
 *   the file cannot be read, -EINVAL if it is not a valid rule set).
 */
int fw_rules_load(const char *path, struct fw_ruleset **out, char *err,
		  size_t err_size);

/** Frees a rule set; NULL is allowed. */
void fw_rules_free(struct fw_ruleset *rs);

/**
 * Linear first-match lookup: the reference matcher.
 *
 * @return the index of the first rule matching t, or -1 if none does
 *   (the default policy applies).
 */
int fw_rules_match(const struct fw_ruleset *rs, const struct sl_5tuple *t);

/** Whether rule r matches t. */
int fw_rule_matches(const struct fw_rule *r, const struct sl_5tuple *t);

/**
 * Formats a rule's match as in the rule file, e.g.
 * "deny proto udp src 10.0.128.0/17 dport 53".
 *
 * @return snprintf()'s result.
 */
int fw_rule_format(const struct fw_rule *r, char *buf, size_t size);

/** "allow" or "deny". */
const char *fw_action_name(unsigned action);

#endif /* SL_FW_RULES_H */
