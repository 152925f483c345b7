/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluice-firewall's rule files and linear matcher
 * (nfs/firewall/rules.c): every error message exactly, and matching.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "rules.h"

#ifndef SL_SOURCE_ROOT
#define SL_SOURCE_ROOT "."
#endif

static struct fw_ruleset *
parse_ok(const char *text, enum fw_format format)
{
	struct fw_ruleset *rs = NULL;
	char err[512];
	int rc;

	rc = fw_rules_parse(text, strlen(text), format, "t", &rs, err,
			    sizeof(err));
	if (rc != 0)
		fail_msg("unexpected error %d: %s", rc, err);
	assert_non_null(rs);
	return rs;
}

/* Parses YAML that must fail with exactly this message. */
static void
yaml_err(const char *text, const char *expect)
{
	struct fw_ruleset *rs = NULL;
	char err[512];

	assert_int_equal(fw_rules_parse(text, strlen(text), FW_FORMAT_YAML,
					"fw-rules.yaml", &rs, err, sizeof(err)),
			 -EINVAL);
	assert_null(rs);
	assert_string_equal(err, expect);
}

static void
json_err(const char *text, const char *expect)
{
	struct fw_ruleset *rs = NULL;
	char err[512];

	assert_int_equal(fw_rules_parse(text, strlen(text), FW_FORMAT_JSON,
					"fw.json", &rs, err, sizeof(err)),
			 -EINVAL);
	assert_null(rs);
	assert_string_equal(err, expect);
}

static const char sample_yaml[] =
	"# comment\n"
	"default: deny\n"
	"rules:\n"
	"  - name: quarantine\n"
	"    action: deny\n"
	"    src: 10.0.1.0/24\n"
	"  - {action: deny, proto: udp, src: 10.0.128.0/17, dport: 53}\n"
	"  - action: allow\n"
	"    proto: tcp\n"
	"    dst: 192.168.0.0/24\n"
	"    dport: \"80-443\"\n"
	"    sport: 1024-65535\n"
	"  - action: allow\n"
	"    proto: icmp6\n"
	"    src: 2001:db8::/32\n"
	"  - action: allow\n"
	"    proto: 47\n"
	"  - action: allow\n"
	"    dst: 192.168.0.7\n"
	"    sport: any\n";

static const char sample_json[] =
	"{\"default\": \"deny\", \"rules\": [\n"
	" {\"name\": \"quarantine\", \"action\": \"deny\", "
	"\"src\": \"10.0.1.0/24\"},\n"
	" {\"action\": \"deny\", \"proto\": \"udp\", \"src\": "
	"\"10.0.128.0/17\", \"dport\": 53},\n"
	" {\"action\": \"allow\", \"proto\": \"tcp\", \"dst\": "
	"\"192.168.0.0/24\", \"dport\": \"80-443\", \"sport\": "
	"\"1024-65535\"},\n"
	" {\"action\": \"allow\", \"proto\": \"icmp6\", \"src\": "
	"\"2001:db8::/32\"},\n"
	" {\"action\": \"allow\", \"proto\": 47},\n"
	" {\"action\": \"allow\", \"dst\": \"192.168.0.7\", \"sport\": "
	"\"any\"}\n"
	"]}\n";

static void
test_parse_fields(void **state)
{
	struct fw_ruleset *rs = parse_ok(sample_yaml, FW_FORMAT_YAML);
	const struct fw_rule *r = rs->rules;

	(void)state;
	assert_int_equal(rs->n_rules, 6);
	assert_int_equal(rs->default_action, FW_DENY);

	assert_string_equal(r[0].name, "quarantine");
	assert_int_equal(r[0].action, FW_DENY);
	assert_int_equal(r[0].match.family, 4);
	assert_int_equal(r[0].match.proto_any, 1);
	assert_int_equal(r[0].match.src[0], htonl(0x0a000100));
	assert_int_equal(r[0].match.src_mask[0], htonl(0xffffff00));
	assert_int_equal(r[0].match.src_len, 24);
	assert_int_equal(r[0].match.dst_len, 0);
	assert_int_equal(r[0].match.dst_mask[0], 0);
	assert_int_equal(r[0].match.sport_lo, 0);
	assert_int_equal(r[0].match.sport_hi, 65535);

	assert_string_equal(r[1].name, "");
	assert_int_equal(r[1].match.proto, IPPROTO_UDP);
	assert_int_equal(r[1].match.proto_any, 0);
	assert_int_equal(r[1].match.src_len, 17);
	assert_int_equal(r[1].match.dport_lo, 53);
	assert_int_equal(r[1].match.dport_hi, 53);

	assert_int_equal(r[2].action, FW_ALLOW);
	assert_int_equal(r[2].match.dport_lo, 80);
	assert_int_equal(r[2].match.dport_hi, 443);
	assert_int_equal(r[2].match.sport_lo, 1024);
	assert_int_equal(r[2].match.sport_hi, 65535);

	assert_int_equal(r[3].match.family, 6);
	assert_int_equal(r[3].match.proto, IPPROTO_ICMPV6);
	assert_int_equal(r[3].match.src_len, 32);
	assert_int_equal(r[3].match.src_mask[0], 0xffffffffu);
	assert_int_equal(r[3].match.src_mask[1], 0);

	assert_int_equal(r[4].match.family, 0);
	assert_int_equal(r[4].match.proto, 47);

	assert_int_equal(r[5].match.dst_len, 32);
	assert_int_equal(r[5].match.dst_mask[0], 0xffffffffu);
	fw_rules_free(rs);
}

/* YAML and JSON give the same rule set. */
static void
test_yaml_equals_json(void **state)
{
	struct fw_ruleset *a = parse_ok(sample_yaml, FW_FORMAT_YAML);
	struct fw_ruleset *b = parse_ok(sample_json, FW_FORMAT_JSON);

	(void)state;
	assert_int_equal(a->n_rules, b->n_rules);
	assert_int_equal(a->default_action, b->default_action);
	assert_memory_equal(a->rules, b->rules,
			    a->n_rules * sizeof(a->rules[0]));
	fw_rules_free(a);
	fw_rules_free(b);
}

static void
test_defaults(void **state)
{
	struct fw_ruleset *rs;

	(void)state;
	/* No default: allow. No rules: an empty rule set. */
	rs = parse_ok("rules: []\n", FW_FORMAT_YAML);
	assert_int_equal(rs->n_rules, 0);
	assert_int_equal(rs->default_action, FW_ALLOW);
	fw_rules_free(rs);
	rs = parse_ok("default: deny\n", FW_FORMAT_YAML);
	assert_int_equal(rs->n_rules, 0);
	assert_int_equal(rs->default_action, FW_DENY);
	fw_rules_free(rs);
	rs = parse_ok("{\"rules\": null}", FW_FORMAT_JSON);
	assert_int_equal(rs->n_rules, 0);
	fw_rules_free(rs);
	/* Protocol names are case-insensitive; numbers as strings. */
	rs = parse_ok("rules: [{action: allow, proto: TCP}, "
		      "{action: allow, proto: '17'}, "
		      "{action: allow, proto: any, dport: 53}, "
		      "{action: allow, src: any, dst: '::/0'}]\n",
		      FW_FORMAT_YAML);
	assert_int_equal(rs->rules[0].match.proto, IPPROTO_TCP);
	assert_int_equal(rs->rules[1].match.proto, IPPROTO_UDP);
	assert_int_equal(rs->rules[2].match.proto_any, 1);
	assert_int_equal(rs->rules[3].match.family, 6);
	assert_int_equal(rs->rules[3].match.dst_len, 0);
	fw_rules_free(rs);
}

static void
test_errors_rules(void **state)
{
	(void)state;
	yaml_err("rules:\n"
		 "  - {action: allow}\n"
		 "  - {action: allow}\n"
		 "  - {action: deny, dst: 10.0.0.0/33}\n",
		 "fw-rules.yaml: rule 3: 'dst': '10.0.0.0/33' is not a valid "
		 "prefix");
	yaml_err("rules: [{action: deny, src: 10.0.0.1/24}]\n",
		 "fw-rules.yaml: rule 1: 'src': '10.0.0.1/24' has bits set "
		 "after the prefix length (did you mean '10.0.0.0/24'?)");
	yaml_err("rules: [{action: deny, src: '2001:db8::1/32'}]\n",
		 "fw-rules.yaml: rule 1: 'src': '2001:db8::1/32' has bits set "
		 "after the prefix length (did you mean '2001:db8::/32'?)");
	yaml_err("rules: [{action: deny, src: 10.0.0/24}]\n",
		 "fw-rules.yaml: rule 1: 'src': '10.0.0/24' is not a valid "
		 "prefix");
	yaml_err("rules: [{action: deny, src: 10.0.0.0/}]\n",
		 "fw-rules.yaml: rule 1: 'src': '10.0.0.0/' is not a valid "
		 "prefix");
	yaml_err("rules: [{action: deny, src: 10.0.0.0/+8}]\n",
		 "fw-rules.yaml: rule 1: 'src': '10.0.0.0/+8' is not a valid "
		 "prefix");
	yaml_err("rules: [{action: deny, src: '::/129'}]\n",
		 "fw-rules.yaml: rule 1: 'src': '::/129' is not a valid "
		 "prefix");
	yaml_err("rules: [{action: deny, src: 10}]\n",
		 "fw-rules.yaml: rule 1: 'src': 10 is not a valid prefix");
	yaml_err("rules: [{action: deny, src: 10.0.0.0/8, dst: '::1'}]\n",
		 "fw-rules.yaml: rule 1: 'dst': '::1' is an IPv6 prefix but "
		 "'src' is IPv4");
	yaml_err("rules: [{action: permit}]\n",
		 "fw-rules.yaml: rule 1: 'action': 'permit' is not 'allow' or "
		 "'deny'");
	yaml_err("rules: [{src: 10.0.0.0/8}]\n",
		 "fw-rules.yaml: rule 1: missing 'action' (allow or deny)");
	yaml_err("rules: [{action: deny, dprot: 80}]\n",
		 "fw-rules.yaml: rule 1: unknown key 'dprot' (expected name, "
		 "action, proto, src, dst, sport, dport)");
	yaml_err("rules: [{action: deny, proto: tcp, dport: 70000}]\n",
		 "fw-rules.yaml: rule 1: 'dport': 70000 is not a valid port or "
		 "port range (0-65535, 'LO-HI' or 'any')");
	yaml_err("rules: [{action: deny, proto: tcp, dport: -1}]\n",
		 "fw-rules.yaml: rule 1: 'dport': -1 is not a valid port or "
		 "port range (0-65535, 'LO-HI' or 'any')");
	yaml_err("rules: [{action: deny, proto: tcp, sport: 90-80}]\n",
		 "fw-rules.yaml: rule 1: 'sport': '90-80' is an empty range "
		 "(90 > 80)");
	yaml_err("rules: [{action: deny, proto: tcp, sport: 1-2-3}]\n",
		 "fw-rules.yaml: rule 1: 'sport': '1-2-3' is not a valid port "
		 "or port range (0-65535, 'LO-HI' or 'any')");
	yaml_err("rules: [{action: deny, proto: tcp, dport: [80, 443]}]\n",
		 "fw-rules.yaml: rule 1: 'dport': a list is not a valid port "
		 "or port range (0-65535, 'LO-HI' or 'any')");
	yaml_err("rules: [{action: deny, proto: tcp, dport: }]\n",
		 "fw-rules.yaml: rule 1: 'dport': an empty value is not a "
		 "valid port or port range (0-65535, 'LO-HI' or 'any')");
	yaml_err("rules: [{action: deny, proto: tpc}]\n",
		 "fw-rules.yaml: rule 1: 'proto': 'tpc' is not a protocol "
		 "(tcp, udp, icmp, icmp6, sctp, gre, esp, ah, any, or a "
		 "number 0-255)");
	yaml_err("rules: [{action: deny, proto: 256}]\n",
		 "fw-rules.yaml: rule 1: 'proto': 256 is not a protocol "
		 "(tcp, udp, icmp, icmp6, sctp, gre, esp, ah, any, or a "
		 "number 0-255)");
	yaml_err("rules: [{action: deny, proto: icmp, dport: 80}]\n",
		 "fw-rules.yaml: rule 1: 'dport': ports need proto tcp, udp, "
		 "sctp or any");
	yaml_err("rules: [{action: deny, name: 'has space'}]\n",
		 "fw-rules.yaml: rule 1: 'name': 'has space' may only contain "
		 "letters, digits and _ . : -");
	yaml_err("rules: [{action: deny, name: "
		 "abcdefghijklmnopqrstuvwxyz0123456}]\n",
		 "fw-rules.yaml: rule 1: 'name': "
		 "'abcdefghijklmnopqrstuvwxyz0123456' must have 1 to 31 "
		 "characters");
	yaml_err("rules: [{action: deny}, [1, 2]]\n",
		 "fw-rules.yaml: rule 2: expected a mapping of keys (action, "
		 "src, ...), got a list");
	yaml_err("rules: [{action: deny}, just-a-word]\n",
		 "fw-rules.yaml: rule 2: expected a mapping of keys (action, "
		 "src, ...), got 'just-a-word'");
}

static void
test_errors_top(void **state)
{
	(void)state;
	yaml_err("default: maybe\n",
		 "fw-rules.yaml: 'default': 'maybe' is not 'allow' or 'deny'");
	yaml_err("defaults: deny\n",
		 "fw-rules.yaml: unknown key 'defaults' at the top (expected "
		 "default, rules)");
	yaml_err("rules: {action: deny}\n",
		 "fw-rules.yaml: 'rules': expected a list of rules, got a "
		 "mapping");
	yaml_err("- {action: deny}\n",
		 "fw-rules.yaml: expected a mapping with 'default' and "
		 "'rules' at the top, got a list");
	yaml_err("", "fw-rules.yaml: the file is empty (expected 'default' "
		     "and 'rules')");
	yaml_err("# only a comment\n",
		 "fw-rules.yaml: the file is empty (expected 'default' and "
		 "'rules')");
	yaml_err("default: deny\ndefault: allow\n",
		 "fw-rules.yaml: line 2: duplicate key 'default'");
	yaml_err("rules: [{action: deny, action: allow}]\n",
		 "fw-rules.yaml: line 1: duplicate key 'action'");
	yaml_err("? [a]\n: b\n",
		 "fw-rules.yaml: line 1: a key must be a plain word");
	yaml_err("rules:\n  - action: deny\n   src: 1.2.3.4\n",
		 "fw-rules.yaml:3:4: YAML error: while parsing a block "
		 "collection: did not find expected '-' indicator");
	yaml_err("rules: [\n",
		 "fw-rules.yaml:2:1: YAML error: while parsing a flow node: "
		 "did not find expected node content");
	yaml_err("rules: *nope\n",
		 "fw-rules.yaml:1:8: YAML error: found undefined alias");

	json_err("{\"rules\": [{\"action\": \"deny\",}]}",
		 "fw.json:1:30: JSON error: string or '}' expected near '}'");
	json_err("{\"default\": \"deny\", \"default\": \"allow\"}",
		 "fw.json:1:29: JSON error: duplicate object key near "
		 "'\"default\"'");
	json_err("{\"rules\": [{\"action\": \"deny\", "
		 "\"src\": \"1.2.3.4/40\"}]}",
		 "fw.json: rule 1: 'src': '1.2.3.4/40' is not a valid prefix");
	json_err("[]", "fw.json: expected a mapping with 'default' and 'rules' "
		       "at the top, got a list");
	json_err("{\"rules\": [{\"action\": true}]}",
		 "fw.json: rule 1: 'action': true is not 'allow' or 'deny'");
	json_err("{\"rules\": [{\"action\": \"deny\", \"proto\": \"tcp\", "
		 "\"dport\": 1.5}]}",
		 "fw.json: rule 1: 'dport': 1.5 is not a valid port or port "
		 "range (0-65535, 'LO-HI' or 'any')");
}

/* Nesting and alias expansion are bounded. */
static void
test_yaml_bounds(void **state)
{
	char text[512];
	size_t i, n = 0;
	struct fw_ruleset *rs = NULL;
	char err[512];

	(void)state;
	for (i = 0; i < 40; i++)
		text[n++] = '[';
	for (i = 0; i < 40; i++)
		text[n++] = ']';
	text[n] = '\0';
	yaml_err(text, "fw-rules.yaml: nested deeper than 32 levels");

	/* A "billion laughs" of aliases. */
	n = (size_t)snprintf(text, sizeof(text), "a: &a [x,x,x,x,x,x,x,x]\n");
	for (i = 0; i < 9; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,"
				      "*%c]\n",
				      (int)('b' + i), (int)('b' + i),
				      (int)('a' + i), (int)('a' + i),
				      (int)('a' + i), (int)('a' + i),
				      (int)('a' + i), (int)('a' + i),
				      (int)('a' + i), (int)('a' + i));
	assert_int_equal(fw_rules_parse(text, n, FW_FORMAT_YAML, "bomb.yaml",
					&rs, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "bomb.yaml: more than 1048576 values (after "
				 "expanding aliases)");
	/* Self-reference is not allowed by libyaml or stopped by depth. */
	rs = NULL;
	assert_int_equal(fw_rules_parse("a: &a [*a]\n", 11, FW_FORMAT_YAML,
					"self.yaml", &rs, err, sizeof(err)),
			 -EINVAL);
	assert_null(rs);
}

static char *
write_tmp(const char *suffix, const char *text)
{
	char *path = malloc(64);
	int fd;

	assert_non_null(path);
	snprintf(path, 64, "/tmp/sl_fw_rules_XXXXXX%s", suffix);
	fd = mkstemps(path, (int)strlen(suffix));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* examples/fw-rules.yaml: each rule's name and fw_rule_format(). */
static const char *const example[][2] = {
	{"quarantine-out", "deny src 10.0.19.0/24"},
	{"quarantine-in", "deny dst 10.0.19.0/24"},
	{"no-dns-upper",
	 "deny proto udp src 10.0.128.0/17 dst 192.168.0.0/24 dport 53"},
	{"web", "allow proto tcp dst 192.168.0.0/24 dport 80"},
	{"web-tls", "allow proto tcp dst 192.168.0.0/24 dport 443"},
	{"web-replies", "allow proto tcp src 192.168.0.0/24 sport 80-443"},
	{"servers-tcp-other", "deny proto tcp dst 192.168.0.0/24"},
	{"udp-to-servers", "allow proto udp dst 192.168.0.0/24"},
	{"ping", "allow proto icmp"},
	{"quarantine6", "deny src 2001:db8:bad::/48"},
};

static void
test_load_files(void **state)
{
	struct fw_ruleset *rs = NULL;
	char err[512], expect[600];
	char *path;

	(void)state;
	path = write_tmp(".yml", sample_yaml);
	assert_int_equal(fw_rules_load(path, &rs, err, sizeof(err)), 0);
	assert_int_equal(rs->n_rules, 6);
	fw_rules_free(rs);
	unlink(path);
	free(path);

	path = write_tmp(".json", sample_json);
	assert_int_equal(fw_rules_load(path, &rs, err, sizeof(err)), 0);
	assert_int_equal(rs->n_rules, 6);
	fw_rules_free(rs);
	unlink(path);
	free(path);

	/* The error names the file as given. */
	path = write_tmp(".yaml", "rules: [{action: deny, dst: 1.2.3.4/33}]\n");
	assert_int_equal(fw_rules_load(path, &rs, err, sizeof(err)), -EINVAL);
	snprintf(expect, sizeof(expect),
		 "%s: rule 1: 'dst': '1.2.3.4/33' is not a valid prefix", path);
	assert_string_equal(err, expect);
	unlink(path);
	free(path);

	assert_int_equal(fw_rules_load("/nonexistent/fw.yaml", &rs, err,
				       sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "/nonexistent/fw.yaml: cannot open: No such "
				 "file or directory");
	assert_int_equal(fw_rules_load("rules.txt", &rs, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "rules.txt: unknown rule file type (name it "
				 ".yaml, .yml or .json)");
	assert_int_equal(fw_rules_load("/tmp", &rs, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/tmp: unknown rule file type (name it .yaml, "
				 ".yml or .json)");

	/* The example shipped with Sluice is valid: all its rules, in order. */
	rs = NULL;
	if (fw_rules_load(SL_SOURCE_ROOT "/examples/fw-rules.yaml", &rs, err,
			  sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(rs->n_rules, sizeof(example) / sizeof(example[0]));
	assert_int_equal(rs->default_action, FW_ALLOW);
	for (uint32_t i = 0; i < rs->n_rules; i++) {
		char buf[160];

		assert_string_equal(rs->rules[i].name, example[i][0]);
		fw_rule_format(&rs->rules[i], buf, sizeof(buf));
		assert_string_equal(buf, example[i][1]);
	}
	fw_rules_free(rs);
}

static void
tuple4(struct sl_5tuple *t, uint8_t proto, const char *src, uint16_t sp,
       const char *dst, uint16_t dp)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->proto = proto;
	assert_int_equal(inet_pton(AF_INET, src, &t->src.v4), 1);
	assert_int_equal(inet_pton(AF_INET, dst, &t->dst.v4), 1);
	t->sport = htons(sp);
	t->dport = htons(dp);
}

static void
tuple6(struct sl_5tuple *t, uint8_t proto, const char *src, uint16_t sp,
       const char *dst, uint16_t dp)
{
	memset(t, 0, sizeof(*t));
	t->family = 6;
	t->proto = proto;
	assert_int_equal(inet_pton(AF_INET6, src, t->src.v6), 1);
	assert_int_equal(inet_pton(AF_INET6, dst, t->dst.v6), 1);
	t->sport = htons(sp);
	t->dport = htons(dp);
}

static void
test_match(void **state)
{
	struct fw_ruleset *rs = parse_ok(sample_yaml, FW_FORMAT_YAML);
	struct sl_5tuple t;

	(void)state;
	/* Rule 1 (deny src 10.0.1.0/24) wins over rule 3 (allow web). */
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 40000, "192.168.0.10", 80);
	assert_int_equal(fw_rules_match(rs, &t), 0);
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 40000, "192.168.0.10", 80);
	assert_int_equal(fw_rules_match(rs, &t), 2);
	/* Range ends are inclusive. */
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 1024, "192.168.0.10", 443);
	assert_int_equal(fw_rules_match(rs, &t), 2);
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 1023, "192.168.0.10", 443);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 2000, "192.168.0.10", 444);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 2000, "192.168.1.10", 80);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	/* UDP 53 from the /17 only. */
	tuple4(&t, IPPROTO_UDP, "10.0.200.1", 5000, "192.168.0.53", 53);
	assert_int_equal(fw_rules_match(rs, &t), 1);
	tuple4(&t, IPPROTO_UDP, "10.0.127.255", 5000, "192.168.0.53", 53);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	tuple4(&t, IPPROTO_TCP, "10.0.200.1", 5000, "8.8.8.8", 53);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	/* IPv4 rules never match IPv6 and vice versa. */
	tuple6(&t, IPPROTO_ICMPV6, "2001:db8:ffff::1", 0, "::1", 0);
	assert_int_equal(fw_rules_match(rs, &t), 3);
	tuple6(&t, IPPROTO_ICMPV6, "2001:db9::1", 0, "::1", 0);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	tuple4(&t, IPPROTO_ICMPV6, "10.0.5.5", 0, "10.0.0.1", 0);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	/* A rule without addresses matches both families. */
	tuple4(&t, 47, "1.1.1.1", 0, "2.2.2.2", 0);
	assert_int_equal(fw_rules_match(rs, &t), 4);
	tuple6(&t, 47, "::1", 0, "::2", 0);
	assert_int_equal(fw_rules_match(rs, &t), 4);
	/* Host prefix. */
	tuple4(&t, IPPROTO_UDP, "1.1.1.1", 1, "192.168.0.7", 2);
	assert_int_equal(fw_rules_match(rs, &t), 5);
	tuple4(&t, IPPROTO_UDP, "1.1.1.1", 1, "192.168.0.8", 2);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	fw_rules_free(rs);

	/* IPv6 prefixes that end inside a 32-bit word, and /0. */
	rs = parse_ok("rules:\n"
		      "  - {action: deny, dst: '2001:db8:0:8000::/49'}\n"
		      "  - {action: deny, src: '::/0', proto: tcp}\n"
		      "  - {action: allow, src: 0.0.0.0/0}\n",
		      FW_FORMAT_YAML);
	tuple6(&t, IPPROTO_UDP, "::5", 1, "2001:db8:0:ffff::1", 2);
	assert_int_equal(fw_rules_match(rs, &t), 0);
	tuple6(&t, IPPROTO_UDP, "::5", 1, "2001:db8:0:7fff::1", 2);
	assert_int_equal(fw_rules_match(rs, &t), -1);
	tuple6(&t, IPPROTO_TCP, "::5", 1, "2001:db8:0:7fff::1", 2);
	assert_int_equal(fw_rules_match(rs, &t), 1);
	tuple4(&t, IPPROTO_TCP, "9.9.9.9", 1, "8.8.8.8", 2);
	assert_int_equal(fw_rules_match(rs, &t), 2);
	fw_rules_free(rs);
}

static void
test_format(void **state)
{
	struct fw_ruleset *rs = parse_ok(sample_yaml, FW_FORMAT_YAML);
	static const char *const expect[] = {
		"deny src 10.0.1.0/24",
		"deny proto udp src 10.0.128.0/17 dport 53",
		"allow proto tcp dst 192.168.0.0/24 sport 1024-65535 "
		"dport 80-443",
		"allow proto icmp6 src 2001:db8::/32",
		"allow proto gre",
		"allow dst 192.168.0.7/32",
	};
	char buf[256];
	uint32_t i;

	(void)state;
	for (i = 0; i < rs->n_rules; i++) {
		fw_rule_format(&rs->rules[i], buf, sizeof(buf));
		assert_string_equal(buf, expect[i]);
	}
	/* Truncation keeps the string terminated, and returns the whole
	 * length, as snprintf() does. */
	assert_int_equal(fw_rule_format(&rs->rules[1], buf, 8),
			 strlen(expect[1]));
	assert_string_equal(buf, "deny pr");
	assert_int_equal(fw_rule_format(&rs->rules[1], buf, 1),
			 strlen(expect[1]));
	assert_string_equal(buf, "");
	fw_rules_free(rs);
	rs = parse_ok("rules: [{action: allow, src: 0.0.0.0/0}]\n",
		      FW_FORMAT_YAML);
	fw_rule_format(&rs->rules[0], buf, sizeof(buf));
	assert_string_equal(buf, "allow ipv4");
	fw_rules_free(rs);
	assert_string_equal(fw_action_name(FW_DENY), "deny");
	assert_string_equal(fw_action_name(FW_ALLOW), "allow");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_yaml_equals_json),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_errors_rules),
		cmocka_unit_test(test_errors_top),
		cmocka_unit_test(test_yaml_bounds),
		cmocka_unit_test(test_load_files),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_format),
	};

	return cmocka_run_group_tests_name("fw_rules", tests, NULL, NULL);
}
