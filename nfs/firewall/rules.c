/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall rule files and the linear matcher.
 *
 * A YAML file is first turned into the same jansson tree a JSON file
 * gives, so both formats go through one validator and give the same
 * messages. Rule file format: see nfs/firewall/README.md.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>
#include <yaml.h>

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

static int
fw_err(const struct fw_ctx *c, const char *key, const char *fmt, ...)
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

/* A value as it would appear in the file, for messages. */
static const char *
fw_describe(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, size, "'%.64s'", json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		snprintf(buf, size, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, size, "false");
		break;
	case JSON_NULL:
		snprintf(buf, size, "an empty value");
		break;
	case JSON_ARRAY:
		snprintf(buf, size, "a list");
		break;
	case JSON_OBJECT:
	default:
		snprintf(buf, size, "a mapping");
		break;
	}
	return buf;
}

/* Parses "0".."max" made of digits only. */
static int
fw_parse_uint(const char *s, size_t n, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static void
fw_prefix_mask(unsigned family, unsigned len, uint32_t mask[4])
{
	unsigned i, words = family == 4 ? 1 : 4;

	memset(mask, 0, 4 * sizeof(mask[0]));
	for (i = 0; i < words; i++) {
		unsigned bits = len > 32 * i ? len - 32 * i : 0;

		if (bits >= 32)
			mask[i] = 0xffffffffu;
		else if (bits > 0)
			mask[i] = htonl(~0u << (32 - bits));
	}
}

/*
 * "any", "A.B.C.D", "A.B.C.D/N", "X:Y::Z", "X:Y::Z/N". Sets family 0 for
 * "any". Returns 0, -1 if not a prefix, -2 if host bits are set.
 */
static int
fw_parse_prefix(const char *s, uint8_t *family, uint32_t addr[4],
		uint32_t mask[4], uint8_t *len)
{
	char a[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long plen;
	unsigned fam, max, i;

	memset(addr, 0, 4 * sizeof(addr[0]));
	memset(mask, 0, 4 * sizeof(mask[0]));
	*len = 0;
	if (strcmp(s, "any") == 0) {
		*family = 0;
		return 0;
	}
	if (alen == 0 || alen >= sizeof(a))
		return -1;
	memcpy(a, s, alen);
	a[alen] = '\0';
	fam = strchr(a, ':') ? 6 : 4;
	max = fam == 4 ? 32 : 128;
	if (inet_pton(fam == 4 ? AF_INET : AF_INET6, a, addr) != 1)
		return -1;
	if (slash == NULL)
		plen = max;
	else if (fw_parse_uint(slash + 1, strlen(slash + 1), max, &plen) != 0)
		return -1;
	fw_prefix_mask(fam, (unsigned)plen, mask);
	*family = (uint8_t)fam;
	*len = (uint8_t)plen;
	for (i = 0; i < 4; i++)
		if (addr[i] & ~mask[i])
			return -2;
	return 0;
}

static int
fw_get_prefix(const struct fw_ctx *c, const char *key, const json_t *v,
	      struct fw_rule *r, int is_src)
{
	char d[96], fixed[INET6_ADDRSTRLEN];
	uint32_t *addr = is_src ? r->src : r->dst;
	uint32_t *mask = is_src ? r->src_mask : r->dst_mask;
	uint8_t *len = is_src ? &r->src_len : &r->dst_len;
	uint8_t fam;
	int rc;

	if (!json_is_string(v))
		return fw_err(c, key, "%s is not a valid prefix",
			      fw_describe(v, d, sizeof(d)));
	rc = fw_parse_prefix(json_string_value(v), &fam, addr, mask, len);
	if (rc == -2) {
		uint32_t net[4];
		unsigned i;

		for (i = 0; i < 4; i++)
			net[i] = addr[i] & mask[i];
		inet_ntop(fam == 4 ? AF_INET : AF_INET6, net, fixed,
			  sizeof(fixed));
		return fw_err(c, key,
			      "%s has bits set after the prefix length "
			      "(did you mean '%s/%u'?)",
			      fw_describe(v, d, sizeof(d)), fixed, *len);
	}
	if (rc != 0)
		return fw_err(c, key, "%s is not a valid prefix",
			      fw_describe(v, d, sizeof(d)));
	if (fam == 0)
		return 0;
	if (r->family != 0 && r->family != fam)
		return fw_err(c, key,
			      "%s is an IPv%u prefix but 'src' is IPv%u",
			      fw_describe(v, d, sizeof(d)), fam, r->family);
	r->family = fam;
	return 0;
}

/* A port (integer or string), "LO-HI" or "any". */
static int
fw_get_ports(const struct fw_ctx *c, const char *key, const json_t *v,
	     uint16_t *lo, uint16_t *hi)
{
	unsigned long a, b;
	char d[96];

	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x >= 0 && x <= 65535) {
			*lo = *hi = (uint16_t)x;
			return 0;
		}
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		const char *dash = strchr(s, '-');

		if (strcmp(s, "any") == 0) {
			*lo = 0;
			*hi = 65535;
			return 0;
		}
		if (dash == NULL &&
		    fw_parse_uint(s, strlen(s), 65535, &a) == 0) {
			*lo = *hi = (uint16_t)a;
			return 0;
		}
		if (dash != NULL &&
		    fw_parse_uint(s, (size_t)(dash - s), 65535, &a) == 0 &&
		    fw_parse_uint(dash + 1, strlen(dash + 1), 65535, &b) == 0) {
			if (a > b)
				return fw_err(c, key, "%s is an empty range "
						      "(%lu > %lu)",
					      fw_describe(v, d, sizeof(d)), a,
					      b);
			*lo = (uint16_t)a;
			*hi = (uint16_t)b;
			return 0;
		}
	}
	return fw_err(c, key,
		      "%s is not a valid port or port range "
		      "(0-65535, 'LO-HI' or 'any')",
		      fw_describe(v, d, sizeof(d)));
}

static const struct {
	const char *name;
	uint8_t proto;
} fw_protos[] = {
	{"tcp", IPPROTO_TCP},      {"udp", IPPROTO_UDP},
	{"icmp", IPPROTO_ICMP},    {"icmp6", IPPROTO_ICMPV6},
	{"icmpv6", IPPROTO_ICMPV6}, {"sctp", IPPROTO_SCTP},
	{"gre", IPPROTO_GRE},      {"esp", IPPROTO_ESP},
	{"ah", IPPROTO_AH},
};

static int
fw_get_proto(const struct fw_ctx *c, const json_t *v, struct fw_rule *r)
{
	unsigned long n;
	char d[96];
	size_t i;

	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x >= 0 && x <= 255) {
			r->proto = (uint8_t)x;
			return 0;
		}
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strcasecmp(s, "any") == 0) {
			r->proto_any = 1;
			return 0;
		}
		for (i = 0; i < sizeof(fw_protos) / sizeof(fw_protos[0]); i++)
			if (strcasecmp(s, fw_protos[i].name) == 0) {
				r->proto = fw_protos[i].proto;
				return 0;
			}
		if (fw_parse_uint(s, strlen(s), 255, &n) == 0) {
			r->proto = (uint8_t)n;
			return 0;
		}
	}
	return fw_err(c, "proto",
		      "%s is not a protocol (tcp, udp, icmp, icmp6, sctp, "
		      "gre, esp, ah, any, or a number 0-255)",
		      fw_describe(v, d, sizeof(d)));
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
		      fw_describe(v, d, sizeof(d)));
}

static int
fw_get_name(const struct fw_ctx *c, const json_t *v, struct fw_rule *r)
{
	const char *s;
	char d[96];
	size_t i, n;

	if (!json_is_string(v))
		return fw_err(c, "name", "%s is not a string",
			      fw_describe(v, d, sizeof(d)));
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0 || n >= FW_NAME_LEN)
		return fw_err(c, "name", "%s must have 1 to %d characters",
			      fw_describe(v, d, sizeof(d)), FW_NAME_LEN - 1);
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.:-", s[i]))
			return fw_err(c, "name",
				      "%s may only contain letters, digits "
				      "and _ . : -",
				      fw_describe(v, d, sizeof(d)));
	memcpy(r->name, s, n + 1);
	return 0;
}

static int
fw_has_ports(const struct fw_rule *r)
{
	return r->proto_any || r->proto == IPPROTO_TCP ||
	       r->proto == IPPROTO_UDP || r->proto == IPPROTO_SCTP;
}

static int
fw_parse_rule(const struct fw_ctx *c, json_t *o, struct fw_rule *r)
{
	json_t *v;
	const char *key;
	char d[96];
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	r->proto_any = 1;
	r->sport_hi = r->dport_hi = 65535;
	if (!json_is_object(o))
		return fw_err(c, NULL,
			      "expected a mapping of keys (action, src, ...), "
			      "got %s",
			      fw_describe(o, d, sizeof(d)));
	json_object_foreach(o, key, v) {
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
	if (rc == 0 && (v = json_object_get(o, "proto")) != NULL) {
		r->proto_any = 0;
		rc = fw_get_proto(c, v, r);
	}
	if (rc == 0 && (v = json_object_get(o, "src")) != NULL)
		rc = fw_get_prefix(c, "src", v, r, 1);
	if (rc == 0 && (v = json_object_get(o, "dst")) != NULL)
		rc = fw_get_prefix(c, "dst", v, r, 0);
	if (rc == 0 && (v = json_object_get(o, "sport")) != NULL)
		rc = fw_get_ports(c, "sport", v, &r->sport_lo, &r->sport_hi);
	if (rc == 0 && (v = json_object_get(o, "dport")) != NULL)
		rc = fw_get_ports(c, "dport", v, &r->dport_lo, &r->dport_hi);
	if (rc != 0)
		return rc;
	if (!fw_has_ports(r) && (json_object_get(o, "sport") != NULL ||
				 json_object_get(o, "dport") != NULL))
		return fw_err(c,
			      json_object_get(o, "sport") ? "sport" : "dport",
			      "ports need proto tcp, udp, sctp or any");
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
			      fw_describe(root, d, sizeof(d)));
	json_object_foreach(root, key, v) {
		if (strcmp(key, "default") != 0 && strcmp(key, "rules") != 0)
			return fw_err(&c, NULL,
				      "unknown key '%.32s' at the top "
				      "(expected default, rules)",
				      key);
	}
	rules = json_object_get(root, "rules");
	if (rules != NULL && !json_is_array(rules) && !json_is_null(rules))
		return fw_err(&c, "rules", "expected a list of rules, got %s",
			      fw_describe(rules, d, sizeof(d)));
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
fw_yaml_to_json(const struct fw_ctx *c, yaml_document_t *doc,
		yaml_node_t *node, unsigned depth, size_t *budget,
		json_t **out)
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
			rc = fw_yaml_to_json(
				c, doc, yaml_document_get_node(doc, p->value),
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
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
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
		rc = fw_err(c, NULL, "the file is empty (expected 'default' "
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
	FILE *f;
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
	f = fopen(path, "rb");
	if (f == NULL) {
		rc = -errno;
		snprintf(err, err_size, "%s: cannot open: %s", path,
			 strerror(errno));
		return rc;
	}
	text = malloc(FW_MAX_FILE + 1);
	if (text == NULL) {
		fclose(f);
		snprintf(err, err_size, "%s: out of memory", path);
		return -ENOMEM;
	}
	len = fread(text, 1, FW_MAX_FILE + 1, f);
	rc = ferror(f) ? -EIO : 0;
	fclose(f);
	if (rc != 0)
		snprintf(err, err_size, "%s: read error", path);
	else if (len > FW_MAX_FILE) {
		snprintf(err, err_size, "%s: larger than %u bytes", path,
			 FW_MAX_FILE);
		rc = -EFBIG;
	} else {
		rc = fw_rules_parse(text, len, format, path, out, err,
				    err_size);
	}
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
	uint16_t sp = ntohs(t->sport), dp = ntohs(t->dport);

	if (r->family != 0 && r->family != t->family)
		return 0;
	if (!r->proto_any && r->proto != t->proto)
		return 0;
	if (sp < r->sport_lo || sp > r->sport_hi || dp < r->dport_lo ||
	    dp > r->dport_hi)
		return 0;
	if (r->family == 4)
		return (t->src.v4 & r->src_mask[0]) == r->src[0] &&
		       (t->dst.v4 & r->dst_mask[0]) == r->dst[0];
	if (r->family == 6) {
		uint32_t s[4], d[4];
		unsigned i;

		memcpy(s, t->src.v6, sizeof(s));
		memcpy(d, t->dst.v6, sizeof(d));
		for (i = 0; i < 4; i++)
			if ((s[i] & r->src_mask[i]) != r->src[i] ||
			    (d[i] & r->dst_mask[i]) != r->dst[i])
				return 0;
	}
	return 1;
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

static size_t
fw_put(char *buf, size_t size, size_t off, const char *fmt, ...)
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
	      const struct fw_rule *r, const uint32_t *addr, uint8_t len)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(r->family == 4 ? AF_INET : AF_INET6, addr, a, sizeof(a));
	return fw_put(buf, size, off, " %s %s/%u", key, a, len);
}

static size_t
fw_put_ports(char *buf, size_t size, size_t off, const char *key,
	     uint16_t lo, uint16_t hi)
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
	size_t off = 0;
	size_t i;

	off = fw_put(buf, size, off, "%s", fw_action_name(r->action));
	if (!r->proto_any) {
		const char *name = NULL;

		for (i = 0; i < sizeof(fw_protos) / sizeof(fw_protos[0]); i++)
			if (fw_protos[i].proto == r->proto) {
				name = fw_protos[i].name;
				break;
			}
		off = name ? fw_put(buf, size, off, " proto %s", name) :
			     fw_put(buf, size, off, " proto %u", r->proto);
	}
	if (r->family != 0 && r->src_len > 0)
		off = fw_put_prefix(buf, size, off, "src", r, r->src,
				    r->src_len);
	if (r->family != 0 && r->dst_len > 0)
		off = fw_put_prefix(buf, size, off, "dst", r, r->dst,
				    r->dst_len);
	off = fw_put_ports(buf, size, off, "sport", r->sport_lo, r->sport_hi);
	off = fw_put_ports(buf, size, off, "dport", r->dport_lo, r->dport_hi);
	if (r->family != 0 && r->src_len == 0 && r->dst_len == 0)
		off = fw_put(buf, size, off, " ipv%u", r->family);
	if (size > 0 && off >= size)
		buf[size - 1] = '\0';
	return (int)off;
}
