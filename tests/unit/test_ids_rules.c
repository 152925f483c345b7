/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids's rule parser and compiler (nfs/ids/rules.c, hsdb.c) on
 * their own: every refusal word for word, with the line it names, and
 * the header matching of address and port sets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <hs.h>

#include "rules.h"

/* The text must be refused with "r.rules" + where. */
static void
refused(const char *text, const char *where)
{
	struct ids_ruleset *rs = NULL;
	struct hs_database *db = NULL;
	struct ids_parts parts;
	char err[1024], want[1024];
	int rc;

	snprintf(want, sizeof(want), "r.rules%s", where);
	rc = ids_rules_parse_text("r.rules", text, &rs, err, sizeof(err));
	if (rc == 0) {
		rc = ids_rules_compile(rs, "r.rules", &db, &parts, err,
				       sizeof(err));
		ids_rules_free(rs);
		if (rc == 0) {
			hs_free_database(db);
			ids_parts_free(&parts);
			fail_msg("accepted: %s", text);
		}
	}
	assert_int_equal(rc, -EINVAL);
	assert_string_equal(err, want);
}

#define OK_OPTS "(content:\"x\"; sid:1;)\n"

static void
test_rule_errors(void **state)
{
	(void)state;
	refused("bogus tcp any any -> any any " OK_OPTS,
		":1: unknown action 'bogus' (alert, drop or divert)");
	refused("alert tcp any any -> any any (content:\"ab\"; depth:1; "
		"sid:1;)\n",
		":1: option 'depth': 1 is shorter than the content (2 bytes)");
	refused("alert sctp any any -> any any " OK_OPTS,
		":1: unknown protocol 'sctp' (tcp, udp, icmp or ip)");
	refused("alert tcp any any => any any " OK_OPTS,
		":1: unknown direction '=>' (-> or <>)");
	refused("alert tcp any any -> any " OK_OPTS,
		":1: the header is not 'ACTION PROTO SRC SPORT -> DST DPORT' "
		"(6 words)");
	refused("alert tcp $HOME_NET any -> any any " OK_OPTS,
		":1: address '$HOME_NET': variables are not supported, write "
		"the addresses");
	refused("alert tcp 10.0.0.0/33 any -> any any " OK_OPTS,
		":1: bad prefix length in '10.0.0.0/33'");
	refused("alert tcp [10.0.0.1,[10.0.0.2]] any -> any any " OK_OPTS,
		":1: set '[10.0.0.1,[10.0.0.2]]': nested brackets are not "
		"supported");
	refused("alert tcp any 70000 -> any any " OK_OPTS,
		":1: bad port '70000' (0 to 65535, LO:HI, [a,b], !a or any)");
	refused("alert tcp any 90:80 -> any any " OK_OPTS,
		":1: port range '90:80' runs backwards");
	refused("alert icmp any 80 -> any any " OK_OPTS,
		":1: ports must be 'any' for protocol icmp");
	refused("alert tcp any any -> any any content:\"x\"; sid:1;\n",
		":1: no options in parentheses: ACTION PROTO SRC SPORT -> DST "
		"DPORT (OPTIONS;)");
	refused("\n# two\nalert tcp any any -> any any (content:\"x\"; sid:1)\n",
		":3: option 'sid:1' is not ended by ';'");
	refused("alert tcp any any -> any any (content:\"ab\"; offset:x; "
		"sid:1;)\n",
		":1: option 'offset': 'x' is not a whole number from 0 to "
		"65535");
	refused("alert tcp any any -> any any (content:\"a\"; distance:1; "
		"sid:1;)\n",
		":1: option 'distance': the first content has no previous "
		"match to be relative to (use offset/depth)");
	refused("alert tcp any any -> any any (content:\"a\"; content:\"b\"; "
		"offset:1; within:3; sid:1;)\n",
		":1: option 'within': offset/depth and distance/within on one "
		"content are not supported");
	refused("alert tcp any any -> any any (content:\"a\"; "
		"content:\"bcd\"; distance:2; within:4; sid:1;)\n",
		":1: option 'within': within 4 is shorter than distance 2 plus "
		"the content (3 bytes)");
	refused("alert tcp any any -> any any (nocase; content:\"a\"; sid:1;)\n",
		":1: option 'nocase' before any content");
	refused("alert tcp any any -> any any (content:\"|4|\"; sid:1;)\n",
		":1: option 'content': bad hex byte at '4|' (two hex digits, "
		"blanks between bytes)");
	refused("alert tcp any any -> any any (content:\"|41\"; sid:1;)\n",
		":1: option 'content': unclosed '|'");
	refused("alert tcp any any -> any any (content:!\"a\"; sid:1;)\n",
		":1: option 'content': negated content is not supported");
	refused("alert tcp any any -> any any (content:\"\"; sid:1;)\n",
		":1: option 'content': empty");
	refused("alert tcp any any -> any any (content:abc; sid:1;)\n",
		":1: option 'content': the value must be quoted");
	refused("alert tcp any any -> any any (pcre:\"/a/R\"; sid:1;)\n",
		":1: option 'pcre': modifier 'R' is not supported (i, s and m "
		"are)");
	refused("alert tcp any any -> any any (pcre:\"a\"; sid:1;)\n",
		":1: option 'pcre': not in the form /RE/FLAGS");
	refused("alert tcp any any -> any any (content:\"a\"; "
		"flow:established; sid:1;)\n",
		":1: option 'flow' is not supported (README.md lists the "
		"options)");
	refused("alert tcp any any -> any any (content:\"a\"; sid:0;)\n",
		":1: option 'sid': '0' is not a whole number from 1 to "
		"4294967295");
	refused("alert tcp any any -> any any (content:\"a\";)\n",
		":1: no sid option (every rule needs one)");
	refused("alert tcp any any -> any any (msg:\"m\"; sid:1;)\n",
		":1: no content or pcre option: a rule must match something");
	refused("alert tcp any any -> any any " OK_OPTS
		"alert udp any any -> any any " OK_OPTS,
		":2: sid 1 is already used by the rule on line 1");
	refused("divert tcp any any -> any any " OK_OPTS,
		":1: action divert needs a divert:SERVICE option");
	refused("alert tcp any any -> any any (content:\"a\"; divert:sandbox; "
		"sid:1;)\n",
		":1: option 'divert' is only for action divert");
	refused("alert tcp any any -> any any (pcre:\"/a*/\"; sid:6;)\n",
		":1: sid 6: Hyperscan cannot compile its pcre 1 (a*): Pattern "
		"matches empty buffer; use HS_FLAG_ALLOWEMPTY to enable "
		"support.");
}

/* Address and port sets: positive entries, negated ones, a negated set,
 * and <>. */
static void
test_header_match(void **state)
{
	struct ids_ruleset *rs;
	struct sl_5tuple t;
	char err[256];

	(void)state;
	assert_int_equal(
		ids_rules_parse_text(
			"r.rules",
			"alert tcp [10.0.0.0/8, !10.1.0.0/16] any -> any "
			"[80,1000:2000,!1500] (content:\"x\"; sid:1;)\n"
			"alert tcp ![10.0.0.0/8,192.168.1.1] 1024: <> any :100 "
			"(content:\"x\"; sid:2;)\n"
			"alert udp 10.2.3.4/31 any -> any any (content:\"x\"; "
			"sid:3;)\n",
			&rs, err, sizeof(err)),
		0);
	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.proto = IPPROTO_TCP;
	t.src.v4 = htonl(0x0a020304); /* 10.2.3.4 */
	t.dst.v4 = htonl(0xc0a80101);
	t.sport = htons(5000);
	t.dport = htons(80);
	assert_true(ids_rule_header_match(&rs->rules[0], &t));
	t.dport = htons(1500);
	assert_false(ids_rule_header_match(&rs->rules[0], &t));
	t.dport = htons(1499);
	assert_true(ids_rule_header_match(&rs->rules[0], &t));
	t.src.v4 = htonl(0x0a010001); /* 10.1.0.1: excluded */
	assert_false(ids_rule_header_match(&rs->rules[0], &t));
	/* Rule 2, <>: 192.168.1.1 is excluded as the source, but the reply
	 * direction (src 10.1.0.1 excluded too) fails as well; a source
	 * outside the set with sport >= 1024 and dport <= 100 matches. */
	t.dport = htons(99);
	assert_false(ids_rule_header_match(&rs->rules[1], &t));
	t.src.v4 = htonl(0x0b000001); /* 11.0.0.1 */
	assert_true(ids_rule_header_match(&rs->rules[1], &t));
	t.sport = htons(99); /* 11.0.0.1:99 -> 192.168.1.1:5000: neither way */
	t.dport = htons(5000);
	assert_false(ids_rule_header_match(&rs->rules[1], &t));
	/* /31 and the protocol. */
	t.proto = IPPROTO_UDP;
	t.src.v4 = htonl(0x0a020305);
	assert_true(ids_rule_header_match(&rs->rules[2], &t));
	t.src.v4 = htonl(0x0a020306);
	assert_false(ids_rule_header_match(&rs->rules[2], &t));
	t.proto = IPPROTO_TCP;
	t.src.v4 = htonl(0x0a020305);
	assert_false(ids_rule_header_match(&rs->rules[2], &t));
	ids_rules_free(rs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_errors),
		cmocka_unit_test(test_header_match),
	};

	return cmocka_run_group_tests_name("ids_rules", tests, NULL, NULL);
}
