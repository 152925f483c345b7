/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall rule files and the linear matcher.
 *
 * A YAML file is first turned into the same jansson tree a JSON file
 * gives, so both formats go through one validator and give the same
 * messages. The match fields (proto, src, dst, sport, dport) are read by
 * sl_match_from_json() (src/common/sl_match.c), as sluiced's flow rules
 * are. Rule file format: see nfs/firewall/README.md.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <jansson.h>
#include <yaml.h>

#include "sluice/nf.h"

#include "rules.h"

#define FW_YAML_MAX_DEPTH 32
#define FW_YAML_MAX_NODES (1u << 20) /* after alias expansion */

/* Where a message is about, for fw_err(). */
struct fw_ctx {
	const char *origin;
	char *err;
	size_t err_size;
	long rule; /* 1-based, or 0 for the top level */
};

static const char *const fw_rule_keys[] = {
	"name", "action", "proto", "src", "dst", "sport", "dport", NULL,
};

static int fw_err(const struct fw_ctx *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "<origin>: rule N: 'key': <message>"; rule and key parts optional. */
static int
fw_err(const struct fw_ctx *c, const char *key, const char *fmt, ...)
{
	char msg[256], where[64] = "", field[64] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->rule > 0)
		snprintf(where, sizeof(where), "rule %ld: ", c->rule);
	if (key != NULL)
		snprintf(field, sizeof(field), "'%s': ", key);
	if (c->err_size > 0)
		snprintf(c->err, c->err_size, "%s: %s%s%s", c->origin, where,
			 field, msg);
	return -EINVAL;
}

static int
fw_get_action(const struct fw_ctx *c, const char *key, const json_t *v,
	      uint8_t *action)
{
	char d[96];

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "allow") == 0) {
			*action = FW_ALLOW;
			return 0;
		}
		if (strcmp(json_string_value(v), "deny") == 0) {
			*action = FW_DENY;
			return 0;
		}
	}
	return fw_err(c, key, "%s is not 'allow' or 'deny'",
		      sl_json_describe(v, d, sizeof(d)));
}

static int
fw_get_name(const struct fw_ctx *c, const json_t *v, struct fw_rule *r)
{
	const char *s;
	char d[96];
	size_t i, n;

	if (!json_is_string(v))
		return fw_err(c, "name", "%s is not a string",
			      sl_json_describe(v, d, sizeof(d)));
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0 || n >= FW_NAME_LEN)
		return fw_err(c, "name", "%s must have 1 to %d characters",
			      sl_json_describe(v, d, sizeof(d)),
			      FW_NAME_LEN - 1);
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.:-", s[i]))
			return fw_err(c, "name",
				      "%s may only contain letters, digits "
				      "and _ . : -",
				      sl_json_describe(v, d, sizeof(d)));
	memcpy(r->name, s, n + 1);
	return 0;
}

static int
fw_parse_rule(const struct fw_ctx *c, json_t *o, struct fw_rule *r)
{
	json_t *v;
	const char *key;
	char d[96], msg[320];
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	sl_match_init(&r->match);
	if (!json_is_object(o))
		return fw_err(c, NULL,
			      "expected a mapping of keys (action, src, ...), "
			      "got %s",
			      sl_json_describe(o, d, sizeof(d)));
	json_object_foreach(o, key, v)
	{
		for (i = 0; fw_rule_keys[i] != NULL; i++)
			if (strcmp(key, fw_rule_keys[i]) == 0)
				break;
		if (fw_rule_keys[i] == NULL)
			return fw_err(c, NULL,
				      "unknown key '%.32s' (expected name, "
				      "action, proto, src, dst, sport, dport)",
				      key);
	}
	v = json_object_get(o, "action");
	if (v == NULL)
		return fw_err(c, NULL, "missing 'action' (allow or deny)");
	rc = fw_get_action(c, "action", v, &r->action);
	if (rc == 0 && (v = json_object_get(o, "name")) != NULL)
		rc = fw_get_name(c, v, r);
	if (rc != 0)
		return rc;
	/* proto, src, dst, sport, dport: "'dst': ..." */
	if (sl_match_from_json(o, &r->match, msg, sizeof(msg)) != 0)
		return fw_err(c, NULL, "%s", msg);
	return 0;
}

static int
fw_from_json(const struct fw_ctx *top, json_t *root, struct fw_ruleset **out)
{
	struct fw_ctx c = *top;
	struct fw_ruleset *rs;
	json_t *rules, *v;
	const char *key;
	char d[96];
	size_t i, n;
	int rc = 0;

	if (!json_is_object(root))
		return fw_err(&c, NULL,
			      "expected a mapping with 'default' and 'rules' "
			      "at the top, got %s",
			      sl_json_describe(root, d, sizeof(d)));
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "default") != 0 && strcmp(key, "rules") != 0)
			return fw_err(&c, NULL,
				      "unknown key '%.32s' at the top "
				      "(expected default, rules)",
				      key);
	}
	rules = json_object_get(root, "rules");
	if (rules != NULL && !json_is_array(rules) && !json_is_null(rules))
		return fw_err(&c, "rules", "expected a list of rules, got %s",
			      sl_json_describe(rules, d, sizeof(d)));
	n = json_is_array(rules) ? json_array_size(rules) : 0;
	if (n > FW_MAX_RULES)
		return fw_err(&c, "rules", "%zu rules, at most %d are allowed",
			      n, FW_MAX_RULES);

	rs = calloc(1, sizeof(*rs));
	if (rs != NULL && n > 0)
		rs->rules = calloc(n, sizeof(rs->rules[0]));
	if (rs == NULL || (n > 0 && rs->rules == NULL)) {
		fw_rules_free(rs);
		snprintf(c.err, c.err_size, "%s: out of memory", c.origin);
		return -ENOMEM;
	}
	v = json_object_get(root, "default");
	if (v != NULL)
		rc = fw_get_action(&c, "default", v, &rs->default_action);
	for (i = 0; rc == 0 && i < n; i++) {
		c.rule = (long)i + 1;
		rc = fw_parse_rule(&c, json_array_get(rules, i), &rs->rules[i]);
	}
	if (rc != 0) {
		fw_rules_free(rs);
		return rc;
	}
	rs->n_rules = (uint32_t)n;
	*out = rs;
	return 0;
}

/* Plain YAML scalars that are integers become JSON integers. */
static json_t *
fw_yaml_scalar(const yaml_node_t *node)
{
	const char *s = (const char *)node->data.scalar.value;
	size_t n = node->data.scalar.length, i = 0;

	if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, n);
	if (n == 0 || (n == 1 && s[0] == '~') ||
	    (n == 4 && strncmp(s, "null", 4) == 0))
		return json_null();
	if (n > 0 && s[0] == '-')
		i = 1;
	if (n > i && n - i <= 18) {
		size_t j;

		for (j = i; j < n && isdigit((unsigned char)s[j]); j++)
			;
		if (j == n)
			return json_integer(strtoll(s, NULL, 10));
	}
	return json_stringn(s, n);
}

static int
fw_yaml_to_json(const struct fw_ctx *c, yaml_document_t *doc, yaml_node_t *node,
		unsigned depth, size_t *budget, json_t **out)
{
	json_t *j = NULL;
	int rc = 0;

	if (depth > FW_YAML_MAX_DEPTH)
		return fw_err(c, NULL, "nested deeper than %d levels",
			      FW_YAML_MAX_DEPTH);
	if (*budget == 0)
		return fw_err(c, NULL,
			      "more than %u values (after expanding aliases)",
			      FW_YAML_MAX_NODES);
	(*budget)--;
	switch (node->type) {
	case YAML_SCALAR_NODE:
		j = fw_yaml_scalar(node);
		break;
	case YAML_SEQUENCE_NODE: {
		yaml_node_item_t *it;

		j = json_array();
		for (it = node->data.sequence.items.start;
		     j != NULL && it < node->data.sequence.items.top; it++) {
			json_t *e = NULL;

			rc = fw_yaml_to_json(c, doc,
					     yaml_document_get_node(doc, *it),
					     depth + 1, budget, &e);
			if (rc != 0)
				break;
			if (json_array_append_new(j, e) != 0)
				rc = -ENOMEM;
		}
		break;
	}
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *p;

		j = json_object();
		for (p = node->data.mapping.pairs.start;
		     j != NULL && p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			json_t *e = NULL;
			char key[128];

			if (k->type != YAML_SCALAR_NODE) {
				rc = fw_err(c, NULL,
					    "line %zu: a key must be a plain "
					    "word",
					    k->start_mark.line + 1);
				break;
			}
			snprintf(key, sizeof(key), "%.*s",
				 (int)k->data.scalar.length,
				 (const char *)k->data.scalar.value);
			if (json_object_get(j, key) != NULL) {
				rc = fw_err(c, NULL,
					    "line %zu: duplicate key '%.32s'",
					    k->start_mark.line + 1, key);
				break;
			}
			rc = fw_yaml_to_json(c, doc,
					     yaml_document_get_node(doc,
								    p->value),
					     depth + 1, budget, &e);
			if (rc != 0)
				break;
			if (json_object_set_new(j, key, e) != 0)
				rc = -ENOMEM;
		}
		break;
	}
	default:
		break;
	}
	if (j == NULL && rc == 0)
		rc = -ENOMEM;
	if (rc == -ENOMEM && c->err_size > 0)
		snprintf(c->err, c->err_size, "%s: out of memory", c->origin);
	if (rc != 0) {
		json_decref(j);
		return rc;
	}
	*out = j;
	return 0;
}

static int
fw_parse_yaml(const struct fw_ctx *c, const char *text, size_t len,
	      json_t **root)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *node;
	size_t budget = FW_YAML_MAX_NODES;
	int rc;

	if (!yaml_parser_initialize(&parser)) {
		snprintf(c->err, c->err_size, "%s: out of memory", c->origin);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(c->err, c->err_size, "%s:%zu:%zu: YAML error: %s%s%s",
			 c->origin, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1,
			 parser.context ? parser.context : "",
			 parser.context ? ": " : "",
			 parser.problem ? parser.problem : "syntax error");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	node = yaml_document_get_root_node(&doc);
	if (node == NULL)
		rc = fw_err(c, NULL,
			    "the file is empty (expected 'default' "
			    "and 'rules')");
	else
		rc = fw_yaml_to_json(c, &doc, node, 0, &budget, root);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int
fw_rules_parse(const char *text, size_t len, enum fw_format format,
	       const char *origin, struct fw_ruleset **out, char *err,
	       size_t err_size)
{
	const struct fw_ctx c = {
		.origin = origin,
		.err = err,
		.err_size = err_size,
	};
	json_t *root = NULL;
	int rc;

	if (err_size > 0)
		err[0] = '\0';
	if (format == FW_FORMAT_JSON) {
		json_error_t je;

		root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
		if (root == NULL) {
			snprintf(err, err_size, "%s:%d:%d: JSON error: %s",
				 origin, je.line, je.column, je.text);
			return -EINVAL;
		}
	} else {
		rc = fw_parse_yaml(&c, text, len, &root);
		if (rc != 0)
			return rc;
	}
	rc = fw_from_json(&c, root, out);
	json_decref(root);
	return rc;
}

int
fw_rules_load(const char *path, struct fw_ruleset **out, char *err,
	      size_t err_size)
{
	const char *dot = strrchr(path, '.');
	enum fw_format format;
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (dot != NULL &&
	    (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0)) {
		format = FW_FORMAT_YAML;
	} else if (dot != NULL && strcmp(dot, ".json") == 0) {
		format = FW_FORMAT_JSON;
	} else {
		snprintf(err, err_size,
			 "%s: unknown rule file type (name it .yaml, .yml or "
			 ".json)",
			 path);
		return -EINVAL;
	}
	rc = sl_read_file(path, FW_MAX_FILE, &text, &len, err, err_size);
	if (rc != 0)
		return -rc; /* this file's convention: a negative errno */
	rc = fw_rules_parse(text, len, format, path, out, err, err_size);
	free(text);
	return rc;
}

void
fw_rules_free(struct fw_ruleset *rs)
{
	if (rs == NULL)
		return;
	free(rs->rules);
	free(rs);
}

int
fw_rule_matches(const struct fw_rule *r, const struct sl_5tuple *t)
{
	return sl_match_test(&r->match, t, 0);
}

int
fw_rules_match(const struct fw_ruleset *rs, const struct sl_5tuple *t)
{
	uint32_t i;

	for (i = 0; i < rs->n_rules; i++)
		if (fw_rule_matches(&rs->rules[i], t))
			return (int)i;
	return -1;
}

const char *
fw_action_name(unsigned action)
{
	return action == FW_DENY ? "deny" : "allow";
}

static size_t fw_put(char *buf, size_t size, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t
fw_put(char *buf, size_t size, size_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	if (off < size)
		n = vsnprintf(buf + off, size - off, fmt, ap);
	else
		n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	return off + (n > 0 ? (size_t)n : 0);
}

static size_t
fw_put_prefix(char *buf, size_t size, size_t off, const char *key,
	      const struct sl_match *m, const uint32_t *addr, uint8_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(m->family == 4 ? AF_INET : AF_INET6, addr, a, sizeof(a));
	return fw_put(buf, size, off, " %s %s/%u", key, a, len);
}

static size_t
fw_put_ports(char *buf, size_t size, size_t off, const char *key, uint16_t lo,
	     uint16_t hi)
{
	if (lo == 0 && hi == 65535)
		return off;
	if (lo == hi)
		return fw_put(buf, size, off, " %s %u", key, lo);
	return fw_put(buf, size, off, " %s %u-%u", key, lo, hi);
}

int
fw_rule_format(const struct fw_rule *r, char *buf, size_t size)
{
	const struct sl_match *m = &r->match;
	size_t off = 0;

	off = fw_put(buf, size, off, "%s", fw_action_name(r->action));
	if (!m->proto_any) {
		const char *name = sl_match_proto_name(m->proto);

		off = name ? fw_put(buf, size, off, " proto %s", name)
			   : fw_put(buf, size, off, " proto %u", m->proto);
	}
	if (m->family != 0 && m->src_len > 0)
		off = fw_put_prefix(buf, size, off, "src", m, m->src,
				    m->src_len);
	if (m->family != 0 && m->dst_len > 0)
		off = fw_put_prefix(buf, size, off, "dst", m, m->dst,
				    m->dst_len);
	off = fw_put_ports(buf, size, off, "sport", m->sport_lo, m->sport_hi);
	off = fw_put_ports(buf, size, off, "dport", m->dport_lo, m->dport_hi);
	if (m->family != 0 && m->src_len == 0 && m->dst_len == 0)
		off = fw_put(buf, size, off, " ipv%u", m->family);
	if (size > 0 && off >= size)
		buf[size - 1] = '\0';
	return (int)off;
}
