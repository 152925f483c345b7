/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall rule sets: parsing (YAML or JSON) and the reference
 * linear first-match matcher. The match fields of a rule are those of
 * sl_match (src/common/sl_match.h), shared with sluiced's flow rules. No
 * DPDK EAL dependency, so the unit tests use it directly
 * (tests/unit/test_fw_rules.c).
 */
#ifndef SL_FW_RULES_H
#define SL_FW_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/pkt.h"

#include "sluice/match.h"

#define FW_NAME_LEN 32          /* rule names: at most 31 characters */
#define FW_MAX_RULES 65536      /* rules per file */
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
 * One rule: a match (src/common/sl_match.h; a field left out of the rule
 * file matches everything), an action and a name.
 */
struct fw_rule {
	struct sl_match match;
	uint8_t action;         /* enum fw_action */
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
