/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of src/common/sl_match.c: parsing from JSON and text (every
 * error by its message), IPv4/IPv6 prefixes, port and in_port ranges,
 * the linear match and lookup, formatting and JSON output read back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <jansson.h>

#include "sl_match.h"

static json_t *
obj_of(const char *text)
{
	json_error_t je;
	json_t *o = json_loads(text, JSON_DECODE_ANY, &je);

	if (o == NULL)
		fail_msg("bad JSON in test: %s: %s", text, je.text);
	return o;
}

static void
json_ok(const char *text, struct sl_match *m)
{
	json_t *o = obj_of(text);
	char err[256];

	if (sl_match_from_json(o, m, err, sizeof(err)) != 0)
		fail_msg("%s: unexpected error: %s", text, err);
	json_decref(o);
}

/* JSON that must fail with exactly this message. */
static void
json_err(const char *text, const char *expect)
{
	json_t *o = obj_of(text);
	struct sl_match m, all;
	char err[256];

	assert_int_equal(sl_match_from_json(o, &m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, expect);
	/* A failed parse leaves the match-all, not half a match. */
	sl_match_init(&all);
	assert_memory_equal(&m, &all, sizeof(m));
	json_decref(o);
}

static void
text_ok(const char *text, struct sl_match *m)
{
	char err[256];

	if (sl_match_parse(text, m, err, sizeof(err)) != 0)
		fail_msg("'%s': unexpected error: %s", text ? text : "(null)",
			 err);
}

static void
text_err(const char *text, const char *expect)
{
	struct sl_match m;
	char err[256];

	assert_int_equal(sl_match_parse(text, &m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, expect);
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
test_init(void **state)
{
	struct sl_match m;
	struct sl_5tuple t;
	char buf[64];

	(void)state;
	memset(&m, 0xa5, sizeof(m));
	sl_match_init(&m);
	assert_int_equal(m.family, 0);
	assert_int_equal(m.proto_any, 1);
	assert_int_equal(m.sport_lo, 0);
	assert_int_equal(m.sport_hi, 65535);
	assert_int_equal(m.dport_hi, 65535);
	assert_int_equal(m.in_port_lo, 0);
	assert_int_equal(m.in_port_hi, 65535);
	assert_int_equal(m.src_len, 0);
	assert_int_equal(m.pad[0] | m.pad[1] | m.pad[2], 0);
	/* The match-all matches every IP tuple and port, nothing else. */
	tuple4(&t, 47, "1.2.3.4", 0, "5.6.7.8", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	assert_int_equal(sl_match_test(&m, &t, 65535), 1);
	tuple6(&t, IPPROTO_TCP, "::1", 1, "::2", 2);
	assert_int_equal(sl_match_test(&m, &t, 7), 1);
	t.family = 0;
	assert_int_equal(sl_match_test(&m, &t, 7), 0);
	assert_int_equal(sl_match_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_true(sl_match_has_ports(&m));
}

static void
test_from_json_fields(void **state)
{
	struct sl_match m;

	(void)state;
	json_ok("{\"proto\": \"tcp\", \"src\": \"10.0.1.0/24\", "
		"\"dst\": \"192.168.0.7\", \"sport\": \"1024-65535\", "
		"\"dport\": 80}",
		&m);
	assert_int_equal(m.family, 4);
	assert_int_equal(m.proto_any, 0);
	assert_int_equal(m.proto, IPPROTO_TCP);
	assert_int_equal(m.src[0], htonl(0x0a000100));
	assert_int_equal(m.src_mask[0], htonl(0xffffff00));
	assert_int_equal(m.src_len, 24);
	assert_int_equal(m.dst[0], htonl(0xc0a80007));
	assert_int_equal(m.dst_mask[0], 0xffffffffu);
	assert_int_equal(m.dst_len, 32);
	assert_int_equal(m.sport_lo, 1024);
	assert_int_equal(m.sport_hi, 65535);
	assert_int_equal(m.dport_lo, 80);
	assert_int_equal(m.dport_hi, 80);
	assert_int_equal(m.in_port_lo, 0);
	assert_int_equal(m.in_port_hi, 65535);

	/* IPv6, a prefix ending inside a 32-bit word; icmpv6 = icmp6. */
	json_ok("{\"proto\": \"ICMPv6\", \"dst\": \"2001:db8:0:8000::/49\"}",
		&m);
	assert_int_equal(m.family, 6);
	assert_int_equal(m.proto, IPPROTO_ICMPV6);
	assert_int_equal(m.dst_len, 49);
	assert_int_equal(m.dst_mask[0], 0xffffffffu);
	assert_int_equal(m.dst_mask[1], htonl(0xffff8000));
	assert_int_equal(m.dst_mask[2], 0);
	assert_int_equal(m.dst_mask[3], 0);
	assert_int_equal(m.dst[1], htonl(0x00008000));
	assert_int_equal(m.src_len, 0);

	/* Numbers, "any", /0 sets only the family, other keys ignored. */
	json_ok("{\"proto\": 47, \"src\": \"any\", \"dst\": \"::/0\", "
		"\"graph\": \"g\", \"in_port\": \"p0\", \"priority\": 3}",
		&m);
	assert_int_equal(m.proto, 47);
	assert_int_equal(m.family, 6);
	assert_int_equal(m.dst_len, 0);
	assert_int_equal(m.in_port_hi, 65535);
	json_ok("{\"proto\": \"17\", \"sport\": \"any\", \"dport\": \"7\"}",
		&m);
	assert_int_equal(m.proto, IPPROTO_UDP);
	assert_int_equal(m.sport_hi, 65535);
	assert_int_equal(m.dport_lo, 7);
	json_ok("{\"proto\": \"any\", \"dport\": 53}", &m);
	assert_int_equal(m.proto_any, 1);
	json_ok("{\"proto\": \"sctp\", \"sport\": 0}", &m);
	assert_int_equal(m.proto, IPPROTO_SCTP);
	assert_int_equal(m.sport_hi, 0);
	json_ok("{}", &m);
	assert_int_equal(m.proto_any, 1);
	assert_int_equal(m.family, 0);
	json_ok("{\"src\": \"::ffff:10.0.0.0/104\"}", &m);
	assert_int_equal(m.family, 6);
	assert_int_equal(m.src[2], htonl(0xffff));
}

static void
test_from_json_errors(void **state)
{
	(void)state;
	json_err("{\"dst\": \"10.0.0.0/33\"}",
		 "'dst': '10.0.0.0/33' is not a valid prefix");
	json_err("{\"src\": \"10.0.0.1/24\"}",
		 "'src': '10.0.0.1/24' has bits set after the prefix length "
		 "(did you mean '10.0.0.0/24'?)");
	json_err("{\"src\": \"2001:db8::1/32\"}",
		 "'src': '2001:db8::1/32' has bits set after the prefix "
		 "length (did you mean '2001:db8::/32'?)");
	json_err("{\"src\": \"10.0.0/24\"}",
		 "'src': '10.0.0/24' is not a valid prefix");
	json_err("{\"src\": \"10.0.0.0/+8\"}",
		 "'src': '10.0.0.0/+8' is not a valid prefix");
	json_err("{\"dst\": \"::/129\"}",
		 "'dst': '::/129' is not a valid prefix");
	json_err("{\"dst\": \"\"}", "'dst': '' is not a valid prefix");
	json_err("{\"src\": 10}", "'src': 10 is not a valid prefix");
	json_err("{\"src\": null}",
		 "'src': an empty value is not a valid prefix");
	json_err("{\"src\": \"10.0.0.0/8\", \"dst\": \"::1\"}",
		 "'dst': '::1' is an IPv6 prefix but 'src' is IPv4");
	json_err("{\"dst\": \"10.0.0.0/8\", \"src\": \"2001:db8::/32\"}",
		 "'dst': '10.0.0.0/8' is an IPv4 prefix but 'src' is IPv6");
	json_err("{\"proto\": \"tcp\", \"dport\": 70000}",
		 "'dport': 70000 is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"proto\": \"tcp\", \"dport\": -1}",
		 "'dport': -1 is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"proto\": \"tcp\", \"sport\": \"90-80\"}",
		 "'sport': '90-80' is an empty range (90 > 80)");
	json_err("{\"proto\": \"tcp\", \"sport\": \"1-2-3\"}",
		 "'sport': '1-2-3' is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"sport\": \"80-\"}",
		 "'sport': '80-' is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"dport\": [80, 443]}",
		 "'dport': a list is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"dport\": 1.5}",
		 "'dport': 1.5 is not a valid port or port range (0-65535, "
		 "'LO-HI' or 'any')");
	json_err("{\"proto\": \"tpc\"}",
		 "'proto': 'tpc' is not a protocol (tcp, udp, icmp, icmp6, "
		 "sctp, gre, esp, ah, any, or a number 0-255)");
	json_err("{\"proto\": 256}",
		 "'proto': 256 is not a protocol (tcp, udp, icmp, icmp6, "
		 "sctp, gre, esp, ah, any, or a number 0-255)");
	json_err("{\"proto\": true}",
		 "'proto': true is not a protocol (tcp, udp, icmp, icmp6, "
		 "sctp, gre, esp, ah, any, or a number 0-255)");
	json_err("{\"proto\": {}}",
		 "'proto': a mapping is not a protocol (tcp, udp, icmp, "
		 "icmp6, sctp, gre, esp, ah, any, or a number 0-255)");
	json_err("{\"proto\": \"icmp\", \"dport\": 80}",
		 "'dport': ports need proto tcp, udp, sctp or any");
	json_err("{\"proto\": 47, \"sport\": 1, \"dport\": 80}",
		 "'sport': ports need proto tcp, udp, sctp or any");
	json_err("[]", "expected a mapping of match fields (proto, src, dst, "
		       "sport, dport), got a list");
	json_err("\"tcp\"", "expected a mapping of match fields (proto, src, "
			    "dst, sport, dport), got 'tcp'");
}

static void
test_parse_text(void **state)
{
	struct sl_match m, j;

	(void)state;
	text_ok("proto=tcp src=10.0.0.0/8 dport=80-90", &m);
	json_ok("{\"proto\": \"tcp\", \"src\": \"10.0.0.0/8\", "
		"\"dport\": \"80-90\"}",
		&j);
	assert_memory_equal(&m, &j, sizeof(m));
	assert_int_equal(m.dport_lo, 80);
	assert_int_equal(m.dport_hi, 90);

	/* Tabs and repeated spaces; empty text is the match-all. */
	text_ok("  dst=2001:db8::/32\t\tproto=udp  ", &m);
	assert_int_equal(m.family, 6);
	assert_int_equal(m.proto, IPPROTO_UDP);
	text_ok("", &m);
	sl_match_init(&j);
	assert_memory_equal(&m, &j, sizeof(m));
	text_ok("   ", &m);
	assert_memory_equal(&m, &j, sizeof(m));
	text_ok(NULL, &m);
	assert_memory_equal(&m, &j, sizeof(m));

	/* in_port: an ethdev id, a range or any. */
	text_ok("in_port=3", &m);
	assert_int_equal(m.in_port_lo, 3);
	assert_int_equal(m.in_port_hi, 3);
	text_ok("in_port=2-5 proto=icmp", &m);
	assert_int_equal(m.in_port_lo, 2);
	assert_int_equal(m.in_port_hi, 5);
	assert_int_equal(m.proto, IPPROTO_ICMP);
	text_ok("in_port=any", &m);
	assert_int_equal(m.in_port_lo, 0);
	assert_int_equal(m.in_port_hi, 65535);

	text_err("proto=tcp dprot=80",
		 "unknown key 'dprot' (expected proto, src, dst, sport, dport, "
		 "in_port)");
	text_err("proto", "'proto' is not key=value (e.g. proto=tcp dport=80)");
	text_err("=tcp", "'=tcp' is not key=value (e.g. proto=tcp dport=80)");
	text_err("src=10.0.0.0/8 src=11.0.0.0/8", "duplicate key 'src'");
	text_err("dport=", "'dport': '' is not a valid port or port range "
			   "(0-65535, 'LO-HI' or 'any')");
	text_err("dport=70000", "'dport': '70000' is not a valid port or port "
				"range (0-65535, 'LO-HI' or 'any')");
	text_err("proto=tcp dst=10.1.2.3/8",
		 "'dst': '10.1.2.3/8' has bits set after the prefix length "
		 "(did you mean '10.0.0.0/8'?)");
	text_err("in_port=70000",
		 "'in_port': '70000' is not a valid port id or port id range "
		 "(0-65535, 'LO-HI' or 'any')");
	text_err("in_port=9-1", "'in_port': '9-1' is an empty range (9 > 1)");
	text_err("in_port=eth0",
		 "'in_port': 'eth0' is not a valid port id or port id range "
		 "(0-65535, 'LO-HI' or 'any')");
	text_err("proto=icmp dport=1",
		 "'dport': ports need proto tcp, udp, sctp or any");
}

static void
test_match_v4(void **state)
{
	struct sl_match m;
	struct sl_5tuple t;

	(void)state;
	text_ok("proto=tcp src=10.0.1.0/24 dst=192.168.0.0/16 sport=1024-2000 "
		"dport=80",
		&m);
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 1024, "192.168.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple4(&t, IPPROTO_TCP, "10.0.1.255", 2000, "192.168.255.255", 80);
	assert_int_equal(sl_match_test(&m, &t, 9), 1);
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 1023, "192.168.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 2001, "192.168.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 1500, "192.168.5.1", 81);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_TCP, "10.0.2.77", 1500, "192.168.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_TCP, "10.0.1.77", 1500, "192.169.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_UDP, "10.0.1.77", 1500, "192.168.5.1", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	/* An IPv4 match never matches IPv6. */
	tuple6(&t, IPPROTO_TCP, "::a00:14d", 1500, "::c0a8:501", 80);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);

	/* 0.0.0.0/0 is "any IPv4"; an address is a /32. */
	text_ok("src=0.0.0.0/0", &m);
	tuple4(&t, 1, "1.1.1.1", 0, "2.2.2.2", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple6(&t, 1, "::1", 0, "::2", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	text_ok("dst=192.168.0.7", &m);
	tuple4(&t, 6, "1.1.1.1", 0, "192.168.0.7", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple4(&t, 6, "1.1.1.1", 0, "192.168.0.6", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	/* Odd prefix lengths. */
	text_ok("src=10.0.128.0/17", &m);
	tuple4(&t, 6, "10.0.200.1", 0, "1.1.1.1", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple4(&t, 6, "10.0.127.255", 0, "1.1.1.1", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	/* Port-less packets have port 0: only a range with 0 matches. */
	text_ok("dport=0-10", &m);
	tuple4(&t, 47, "1.1.1.1", 0, "2.2.2.2", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	text_ok("dport=1-10", &m);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
}

static void
test_match_v6(void **state)
{
	struct sl_match m;
	struct sl_5tuple t;

	(void)state;
	text_ok("dst=2001:db8:0:8000::/49", &m);
	tuple6(&t, IPPROTO_UDP, "::5", 1, "2001:db8:0:ffff::1", 2);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple6(&t, IPPROTO_UDP, "::5", 1, "2001:db8:0:7fff::1", 2);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple4(&t, IPPROTO_UDP, "1.1.1.1", 1, "32.1.13.184", 2);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);

	text_ok("src=2001:db8::1 proto=tcp", &m);
	assert_int_equal(m.src_len, 128);
	tuple6(&t, IPPROTO_TCP, "2001:db8::1", 1, "::", 2);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple6(&t, IPPROTO_TCP, "2001:db8::2", 1, "::", 2);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);

	/* Prefixes at word boundaries and inside the last word. */
	text_ok("src=2001:db8:1:2::/64 dst=::ff00:0/104", &m);
	tuple6(&t, 6, "2001:db8:1:2:ffff::1", 0, "::ffab:cdef", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple6(&t, 6, "2001:db8:1:3::1", 0, "::ffab:cdef", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple6(&t, 6, "2001:db8:1:2::1", 0, "::feab:cdef", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);
	tuple6(&t, 6, "2001:db8:1:2::1", 0, "1::ffab:cdef", 0);
	assert_int_equal(sl_match_test(&m, &t, 0), 0);

	/* No address: both families. */
	text_ok("proto=udp dport=53", &m);
	tuple6(&t, IPPROTO_UDP, "::5", 1, "::6", 53);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	tuple4(&t, IPPROTO_UDP, "1.1.1.1", 1, "2.2.2.2", 53);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
}

static void
test_match_in_port(void **state)
{
	struct sl_match m;
	struct sl_5tuple t;

	(void)state;
	tuple4(&t, IPPROTO_TCP, "1.1.1.1", 1, "2.2.2.2", 80);
	text_ok("in_port=2-4 dport=80", &m);
	assert_int_equal(sl_match_test(&m, &t, 1), 0);
	assert_int_equal(sl_match_test(&m, &t, 2), 1);
	assert_int_equal(sl_match_test(&m, &t, 3), 1);
	assert_int_equal(sl_match_test(&m, &t, 4), 1);
	assert_int_equal(sl_match_test(&m, &t, 5), 0);
	text_ok("in_port=0", &m);
	assert_int_equal(sl_match_test(&m, &t, 0), 1);
	assert_int_equal(sl_match_test(&m, &t, 1), 0);
	text_ok("in_port=65535", &m);
	assert_int_equal(sl_match_test(&m, &t, 65535), 1);
	assert_int_equal(sl_match_test(&m, &t, 65534), 0);
	/* Set by hand, as sluiced does after resolving a port name. */
	text_ok("proto=tcp", &m);
	m.in_port_lo = m.in_port_hi = 7;
	assert_int_equal(sl_match_test(&m, &t, 7), 1);
	assert_int_equal(sl_match_test(&m, &t, 6), 0);
}

static void
test_find(void **state)
{
	struct sl_match m[4];
	const struct sl_match *p[4] = {&m[0], &m[1], &m[2], &m[3]};
	int32_t prio[4] = {0, 5, 5, -1};
	struct sl_5tuple t;

	(void)state;
	text_ok("proto=tcp", &m[0]);
	text_ok("dport=80", &m[1]);
	text_ok("dst=10.0.0.0/8", &m[2]);
	text_ok("", &m[3]);
	tuple4(&t, IPPROTO_TCP, "1.1.1.1", 1, "10.0.0.1", 80);
	/* First match; highest priority, then lowest index. */
	assert_int_equal(sl_match_find(p, NULL, 4, &t, 0), 1);
	assert_int_equal(sl_match_find(p, prio, 4, &t, 0), 2);
	tuple4(&t, IPPROTO_TCP, "1.1.1.1", 1, "10.0.0.1", 81);
	assert_int_equal(sl_match_find(p, prio, 4, &t, 0), 3);
	tuple4(&t, IPPROTO_TCP, "1.1.1.1", 1, "11.0.0.1", 81);
	assert_int_equal(sl_match_find(p, prio, 4, &t, 0), 1);
	tuple4(&t, IPPROTO_UDP, "1.1.1.1", 1, "11.0.0.1", 81);
	assert_int_equal(sl_match_find(p, prio, 4, &t, 0), 4);
	assert_int_equal(sl_match_find(p, prio, 3, &t, 0), 0);
	assert_int_equal(sl_match_find(p, prio, 0, &t, 0), 0);
}

static void
check_format(const char *text, const char *expect, const char *expect_json)
{
	struct sl_match m, back;
	json_t *o;
	char buf[256], *js;

	text_ok(text, &m);
	assert_int_equal(sl_match_format(&m, buf, sizeof(buf)),
			 (int)strlen(expect));
	assert_string_equal(buf, expect);
	/* What format writes, parse reads back to the same match. */
	text_ok(buf, &back);
	assert_memory_equal(&m, &back, sizeof(m));

	o = json_object();
	assert_int_equal(sl_match_to_json(&m, o), 0);
	js = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(js, expect_json);
	free(js);
	assert_int_equal(sl_match_from_json(o, &back, buf, sizeof(buf)), 0);
	back.in_port_lo = m.in_port_lo; /* not written to JSON */
	back.in_port_hi = m.in_port_hi;
	assert_memory_equal(&m, &back, sizeof(m));
	json_decref(o);
}

static void
test_format(void **state)
{
	struct sl_match m;
	char buf[256];

	(void)state;
	check_format("", "", "{}");
	check_format("dport=80 proto=TCP src=10.0.0.0/8",
		     "proto=tcp src=10.0.0.0/8 dport=80",
		     "{\"dport\":\"80\",\"proto\":\"tcp\","
		     "\"src\":\"10.0.0.0/8\"}");
	check_format("proto=udp dst=2001:db8::1 sport=1024-65535 in_port=3-4",
		     "proto=udp dst=2001:db8::1/128 sport=1024-65535 "
		     "in_port=3-4",
		     "{\"dst\":\"2001:db8::1/128\",\"proto\":\"udp\","
		     "\"sport\":\"1024-65535\"}");
	check_format("proto=99 src=0.0.0.0/0", "proto=99 src=0.0.0.0/0",
		     "{\"proto\":\"99\",\"src\":\"0.0.0.0/0\"}");
	check_format("dst=::/0", "src=::/0", "{\"src\":\"::/0\"}");
	check_format("proto=icmpv6 in_port=0", "proto=icmp6 in_port=0",
		     "{\"proto\":\"icmp6\"}");
	check_format("proto=any sport=any dport=0-65535", "", "{}");

	/* Truncation keeps the string terminated. */
	text_ok("proto=udp src=10.0.128.0/17 dport=53", &m);
	assert_int_equal(sl_match_format(&m, buf, 8), 36);
	assert_string_equal(buf, "proto=u");
	assert_int_equal(sl_match_format(&m, NULL, 0), 36);
	assert_int_equal(sl_match_to_json(&m, NULL), -EINVAL);

	assert_string_equal(sl_match_proto_name(IPPROTO_TCP), "tcp");
	assert_string_equal(sl_match_proto_name(IPPROTO_ICMPV6), "icmp6");
	assert_string_equal(sl_match_proto_name(47), "gre");
	assert_null(sl_match_proto_name(99));
}

/* Random matches survive format -> parse and to_json -> from_json. */
static void
test_round_trip_random(void **state)
{
	static const char *const protos[] = {"", "proto=tcp ", "proto=udp ",
					     "proto=icmp ", "proto=47 "};
	uint64_t x = 12345;
	unsigned i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		char text[256], a[INET6_ADDRSTRLEN];
		size_t off = 0;
		unsigned p, fam, len;
		uint8_t addr[16];
		unsigned k;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		p = (unsigned)(x >> 60) % 5;
		fam = (unsigned)(x >> 50) % 3;
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s",
					protos[p]);
		if (fam != 0) {
			for (k = 0; k < 16; k++)
				addr[k] = (uint8_t)(x >> (k * 3));
			len = (unsigned)(x >> 20) % (fam == 1 ? 33 : 129);
			for (k = 0; k < 16; k++) {
				unsigned bits = len > 8 * k ? len - 8 * k : 0;

				if (bits < 8)
					addr[k] &= (uint8_t)(0xff00 >> bits);
			}
			inet_ntop(fam == 1 ? AF_INET : AF_INET6, addr, a,
				  sizeof(a));
			off += (size_t)snprintf(text + off, sizeof(text) - off,
						"%s=%s/%u ",
						(x >> 9) & 1 ? "src" : "dst", a,
						len);
		}
		if (p < 3 && (x >> 11) % 2)
			off += (size_t)snprintf(text + off, sizeof(text) - off,
						"dport=%u-%u ",
						(unsigned)(x >> 30) % 100,
						100 + (unsigned)(x >> 40) %
								100);
		if ((x >> 13) % 2)
			off += (size_t)snprintf(text + off, sizeof(text) - off,
						"in_port=%u",
						(unsigned)(x >> 33) % 8);
		{
			struct sl_match m, back;
			char buf[256];
			json_t *o = json_object();

			text_ok(text, &m);
			sl_match_format(&m, buf, sizeof(buf));
			text_ok(buf, &back);
			assert_memory_equal(&m, &back, sizeof(m));
			assert_int_equal(sl_match_to_json(&m, o), 0);
			assert_int_equal(sl_match_from_json(o, &back, buf,
							    sizeof(buf)),
					 0);
			back.in_port_lo = m.in_port_lo;
			back.in_port_hi = m.in_port_hi;
			assert_memory_equal(&m, &back, sizeof(m));
			json_decref(o);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_from_json_fields),
		cmocka_unit_test(test_from_json_errors),
		cmocka_unit_test(test_parse_text),
		cmocka_unit_test(test_match_v4),
		cmocka_unit_test(test_match_v6),
		cmocka_unit_test(test_match_in_port),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip_random),
	};

	return cmocka_run_group_tests_name("match", tests, NULL, NULL);
}
