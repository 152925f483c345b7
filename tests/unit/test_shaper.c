/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-shaper (nfs/shaper) through its ops with the libsluice stand-in
 * of nf_stub.c: srTCM and trTCM colours by packet times (stub_now_ns),
 * per class and per flow (and a full flow table), DSCP classes, DSCP
 * re-marking checked byte by byte (IPv4 checksum, IPv6 traffic class),
 * rates changed by a message and by a reload, bad files refused with
 * their messages, every counter as printed.
 */
#undef main /* meson.build renames shaper.c's main to sl_sh_main */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

int sl_sh_main(int argc, char **argv);

#define init_with(rc, ...) stub_init_output(rc, "sluice-shaper", __VA_ARGS__)
#define SEC 1000000000ull
#define G SL_NEXT
#define D SL_DROP

#define write_cfg(text) nf_test_write_file("sl_sh_test_", ".json", text)

#define rewrite nf_test_rewrite_file

/* The IPv4 header checksum of the header at off, from scratch. */
static uint16_t
ip4_sum(const uint8_t *h)
{
	uint32_t s = 0;

	for (unsigned i = 0; i < 20; i += 2)
		if (i != 10)
			s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* A 100-byte UDP/IPv4 frame with DSCP dscp, ECN 1 and a right checksum. */
static void
udp100(struct frame *f, uint16_t sport, uint8_t dscp)
{
	frame_ip4(f, IPPROTO_UDP, IP4(10, 66, 3, 1), sport, IP4(10, 66, 3, 2),
		  5001, 58);
	f->b[15] = (uint8_t)(dscp << 2 | 1);
	wr16(f, 24, ip4_sum(f->b + 14));
}

/* One frame at time now; its verdict, and the frame as it left in out. */
static sl_verdict_t
one(uint64_t now, const struct frame *f, struct frame *out)
{
	struct rte_mbuf *m = stub_mbuf(f->b, f->len);
	sl_verdict_t v;

	assert_non_null(m);
	stub_now_ns = now;
	stub_ops->process(stub_nf(), &m, 1);
	assert_true(stub_verdict_set(m));
	v = sl_pkt_verdict(m);
	if (out != NULL) {
		out->len = rte_pktmbuf_pkt_len(m);
		memcpy(out->b, rte_pktmbuf_mtod(m, void *), out->len);
	}
	stub_mbuf_free(m);
	return v;
}

/* n frames at time now must all get verdict want. */
static void
expect_n(uint64_t now, const struct frame *f, unsigned n, sl_verdict_t want)
{
	for (unsigned i = 0; i < n; i++) {
		sl_verdict_t v = one(now, f, NULL);

		if (v != want)
			fail_msg("packet %u of %u at %" PRIu64 " ns: verdict "
				 "%#x, want %#x",
				 i + 1, n, now, v, want);
	}
}

static char *
start(const char *path)
{
	char *out;
	int rc;

	stub_now_ns = 0;
	out = init_with(&rc, "--config", path, "--stats-ms", "0", "--flows",
			"16", NULL);
	if (rc != 0)
		fail_msg("init: %d: %s", rc, out);
	return out;
}

/* srTCM, RFC 2697: 1000 bytes/s, CBS 1000, EBS 500; yellow passes, red
 * is dropped. */
static void
test_srtcm_colours(void **state)
{
	char *path = write_cfg(
		"{\"classes\": [{\"name\": \"udp\", \"match\": {\"proto\": "
		"\"udp\"}, \"cir\": 8000, \"cbs\": 1000, \"ebs\": 500}]}");
	struct frame f, o;
	char *out;

	(void)state;
	udp100(&f, 1000, 0);
	assert_int_equal(f.len, 100);
	out = start(path);
	assert_has(out, "sluice-shaper: loaded 1 classes from ");
	assert_has(out, "sluice-shaper:   class 1 (udp): match 'proto=udp' "
			"dscp any, per class, srtcm cir=8000 cbs=1000 ebs=500, "
			"yellow pass, red drop\n");
	free(out);
	expect_n(0, &f, 10, G); /* CBS: 10 green */
	expect_n(0, &f, 5, G);  /* EBS: 5 yellow, passed */
	expect_n(0, &f, 3, D);  /* red */
	/* a second later, 1000 bytes more in the committed bucket */
	expect_n(1 * SEC, &f, 10, G);
	expect_n(1 * SEC, &f, 1, D);
	/* after 3 s idle both are full again: the surplus fills EBS */
	expect_n(4 * SEC, &f, 15, G);
	expect_n(4 * SEC, &f, 1, D);
	assert_int_equal(one(4 * SEC, &f, &o), D);
	assert_memory_equal(o.b, f.b, f.len); /* untouched */
	stub_now_ns = 5 * SEC;
	out = fini_output();
	assert_has(out, "shaper-class: class=1 name=udp per=class meter=srtcm "
			"cir=8000 cbs=1000 ebs=500 green=30 green_bytes=3000 "
			"yellow=10 yellow_bytes=1000 red=6 red_bytes=600 "
			"dropped=6 remarked=0 flows_full=0\n");
	assert_has(out, "shaper-stats: reason=exit uptime=5.0 packets=46 "
			"bytes=4600 pps=9 classes=1 non_ip=0 unclassified=0 "
			"dropped=6 remarked=0 flows=0 flows_capacity=0 "
			"flows_created=0 flows_evicted=0 flows_full=0\n");
	free(out);
	unlink(path);
	free(path);
}

/* trTCM, RFC 2698: CIR 1000 B/s CBS 1000, PIR 2000 B/s PBS 2000; yellow
 * re-marked to DSCP 10 (AF11), red dropped. Byte by byte. */
static void
test_trtcm_remark(void **state)
{
	char *path = write_cfg(
		"{\"classes\": [{\"name\": \"t\", \"meter\": \"trtcm\", "
		"\"cir\": 8000, \"cbs\": 1000, \"pir\": 16000, \"pbs\": 2000, "
		"\"yellow\": \"remark\", \"yellow_dscp\": 10}]}");
	struct frame f, o, want;
	char *out;

	(void)state;
	udp100(&f, 1000, 46); /* EF, ECN 1 */
	free(start(path));
	expect_n(0, &f, 10, G); /* green: unchanged */
	assert_int_equal(one(0, &f, &o), G);
	/* yellow: DSCP 10, ECN kept, checksum right */
	want = f;
	want.b[15] = 10 << 2 | 1;
	wr16(&want, 24, ip4_sum(want.b + 14));
	assert_int_equal(o.len, want.len);
	assert_memory_equal(o.b, want.b, want.len);
	expect_n(0, &f, 8, G); /* 9 yellow so far */
	expect_n(0, &f, 1, G); /* the 10th: PBS spent */
	expect_n(0, &f, 2, D); /* red */
	/* half a second: 500 committed bytes, 1000 peak bytes */
	expect_n(SEC / 2, &f, 5, G);
	assert_int_equal(one(SEC / 2, &f, &o), G);
	assert_memory_equal(o.b, want.b, want.len); /* yellow */
	out = fini_output();
	assert_has(out, "name=t per=class meter=trtcm cir=8000 pir=16000 "
			"cbs=1000 pbs=2000 green=15 green_bytes=1500 yellow=11 "
			"yellow_bytes=1100 red=2 red_bytes=200 dropped=2 "
			"remarked=11 flows_full=0\n");
	free(out);
	unlink(path);
	free(path);
}

/* IPv6: the traffic class's DSCP bits change, the flow label and ECN
 * stay (no checksum in IPv6). */
static void
test_ipv6_remark(void **state)
{
	char *path = write_cfg(
		"{\"classes\": [{\"name\": \"v6\", \"match\": {\"src\": "
		"\"2001:db8::/64\"}, \"cir\": 8, \"cbs\": 1, \"ebs\": 0, "
		"\"red\": \"remark\", \"red_dscp\": 8}]}");
	struct frame f, o, want;

	(void)state;
	frame_ip6(&f, IPPROTO_UDP, v6_a, 1, v6_b, 2, 10);
	wr16(&f, 14, 0x6b8a); /* TC 0xb8 (DSCP 46, ECN 0), flow label 0xabcde */
	wr16(&f, 16, 0xbcde);
	free(start(path));
	assert_int_equal(one(0, &f, &o), G);
	want = f;
	wr16(&want, 14, 0x620a); /* TC 8 << 2 = 0x20 */
	assert_memory_equal(o.b, want.b, f.len);
	free(fini_output());
	unlink(path);
	free(path);
}

/* Classes by DSCP and by match, first fit; unclassified and non-IP
 * packets pass unmetered. */
static void
test_dscp_classes(void **state)
{
	char *path = write_cfg(
		"{\"classes\": ["
		"{\"name\": \"ef\", \"dscp\": 46, \"cir\": 8, \"cbs\": 100},"
		"{\"name\": \"port9\", \"match\": {\"proto\": \"udp\", "
		"\"sport\": 9}, \"cir\": 8, \"cbs\": 100}]}");
	struct frame ef, be, p9, arp;
	char *out;

	(void)state;
	udp100(&ef, 9, 46);
	udp100(&be, 1000, 0);
	udp100(&p9, 9, 0);
	memset(&arp, 0, sizeof(arp));
	put_eth(&arp, 0x0806, 0, NULL);
	put_zero(&arp, 28);
	free(start(path));
	expect_n(0, &ef, 1, G);
	expect_n(0, &ef, 1, D); /* ef's 100 bytes are spent */
	expect_n(0, &p9, 1, G); /* port9's own bucket */
	expect_n(0, &p9, 1, D);
	expect_n(0, &be, 5, G); /* no class */
	expect_n(0, &arp, 2, G);
	out = fini_output();
	assert_has(out, "class=1 name=ef per=class meter=srtcm cir=8 cbs=100 "
			"ebs=0 green=1 green_bytes=100 yellow=0 yellow_bytes=0 "
			"red=1 red_bytes=100 dropped=1 ");
	assert_has(out, "class=2 name=port9 per=class meter=srtcm cir=8 "
			"cbs=100 ebs=0 green=1 ");
	assert_has(out, " packets=11 bytes=984 pps=0 classes=2 non_ip=2 "
			"unclassified=5 dropped=2 remarked=0 ");
	free(out);
	unlink(path);
	free(path);
}

/* Per flow: each flow its own bucket; the 17th flow of a 16-flow table
 * shares the class meter; idle flows are forgotten by the sweep. */
static void
test_per_flow(void **state)
{
	char *path = write_cfg(
		"{\"classes\": [{\"name\": \"pf\", \"per\": \"flow\", \"cir\": "
		"8000, \"cbs\": 200, \"ebs\": 0}]}");
	struct frame f[18];
	char *out;
	unsigned i;

	(void)state;
	for (i = 0; i < 18; i++)
		udp100(&f[i], (uint16_t)(2000 + i), 0);
	free(start(path));
	for (i = 0; i < 16; i++) {
		expect_n(0, &f[i], 2, G);
		expect_n(0, &f[i], 1, D);
	}
	/* the table is full: 16 and 17 share the class's 200 bytes */
	expect_n(0, &f[16], 2, G);
	expect_n(0, &f[17], 1, D);
	/* 0.1 s later every flow has 100 bytes more */
	expect_n(SEC / 10, &f[0], 1, G);
	expect_n(SEC / 10, &f[0], 1, D);
	/* idle 30 s (the default): all forgotten by the sweep at a tick */
	free(tick_output(40 * SEC));
	expect_n(40 * SEC, &f[17], 2, G); /* a new flow, full bucket */
	out = fini_output();
	assert_has(out, "name=pf per=flow meter=srtcm cir=8000 cbs=200 ebs=0 "
			"green=37 green_bytes=3700 yellow=0 yellow_bytes=0 "
			"red=18 red_bytes=1800 dropped=18 remarked=0 "
			"flows_full=3\n");
	assert_has(out, " flows=1 flows_capacity=16 flows_created=17 "
			"flows_evicted=16 flows_full=3\n");
	free(out);
	unlink(path);
	free(path);
}

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* Rates at run time: a message, and a reload (a bad file keeps the old
 * classes and says so). */
static void
test_rates_at_run_time(void **state)
{
	static const char cfg1[] =
		"{\"classes\": [{\"name\": \"c\", \"cir\": 8000, \"cbs\": 100, "
		"\"ebs\": 0}]}";
	char *path = write_cfg(cfg1), *out, line[512];
	struct frame f;

	(void)state;
	udp100(&f, 1, 0);
	free(start(path));
	expect_n(0, &f, 1, G);
	expect_n(0, &f, 1, D);
	out = msg_output("rate", "c cir=80000 cbs=500");
	assert_string_equal(out, "shaper-message: key=rate value=c cir=80000 "
				 "cbs=500 applied\n");
	free(out);
	expect_n(0, &f, 5, G); /* a full 500-byte bucket */
	expect_n(0, &f, 1, D);
	expect_n(SEC / 100, &f, 1, G); /* 10000 B/s: 100 bytes in 10 ms */
	expect_n(SEC / 100, &f, 1, D);
	out = msg_output("rate", "c cir=0");
	assert_string_equal(out, "shaper-message: key=rate value=c cir=0 "
				 "invalid (message: class 0: 'cir': 0 is not a "
				 "whole number from 8 to 100000000000 "
				 "bits/s)\n");
	free(out);
	out = msg_output("rate", "nope cir=8");
	assert_has(out, "invalid (give CLASS KEY=N ..., CLASS one of the "
			"classes)\n");
	free(out);
	out = msg_output("rate", "c pir=9");
	assert_has(out, "invalid (message: class 0: 'pir': only with meter "
			"trtcm)\n");
	free(out);
	out = msg_output("burst", "1");
	assert_has(out, "ignored (keys: rate, stats)\n");
	free(out);
	/* reload: a bad file */
	rewrite(path, "{\"classes\": [{\"name\": \"c\", \"cir\": 8000}]}");
	out = stub_capture_stderr(do_reload, NULL);
	snprintf(line, sizeof(line),
		 "sluice-shaper: reload failed, keeping the 1 current "
		 "classes: %s: class 1: missing 'cbs' (bytes)\n",
		 path);
	assert_has(out, line);
	assert_has(out, "shaper-stats: reason=reload ");
	free(out);
	expect_n(SEC / 100, &f, 1, D); /* the message's rates still */
	/* a good one: new meters, full */
	rewrite(path, "{\"classes\": [{\"name\": \"d\", \"cir\": 8000, "
		      "\"cbs\": 300}]}");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "sluice-shaper: reloaded 1 classes from ");
	assert_has(out, "sluice-shaper:   class 1 (d): ");
	free(out);
	expect_n(SEC / 100, &f, 3, G);
	expect_n(SEC / 100, &f, 1, D);
	free(fini_output());
	unlink(path);
	free(path);
}

/* Every truncation of an IPv4 and an IPv6 UDP frame through a class that
 * re-marks every packet: no access past the frame (ASan); a frame whose
 * IP header is whole gets the new DSCP (and a right IPv4 checksum), the
 * others pass untouched as non-IP. */
static void
test_truncations(void **state)
{
	char *path = write_cfg(
		"{\"classes\": [{\"name\": \"all\", \"cir\": 8, \"cbs\": 1, "
		"\"red\": \"remark\", \"red_dscp\": 12}]}");
	struct frame full[2], f, o;
	unsigned k, len, n = 0, marked = 0;
	char *out, line[160];

	(void)state;
	udp100(&full[0], 9, 0);
	frame_ip6(&full[1], IPPROTO_UDP, v6_a, 1, v6_b, 2, 10);
	free(start(path));
	for (k = 0; k < 2; k++)
		for (len = 0; len <= full[k].len; len++) {
			f = full[k];
			f.len = len;
			assert_int_equal(one(0, &f, &o), G);
			assert_int_equal(o.len, len);
			n++;
			if (memcmp(o.b, f.b, len) == 0)
				continue;
			marked++;
			if (k == 0) {
				assert_int_equal(o.b[15], 12 << 2 | 1);
				assert_int_equal(o.b[24] << 8 | o.b[25],
						 ip4_sum(o.b + 14));
			} else {
				assert_int_equal(o.b[14], 0x63);
				assert_int_equal(o.b[15], 0);
			}
			assert_memory_equal(o.b + 16 + (k == 0 ? 10 : 0),
					    f.b + 16 + (k == 0 ? 10 : 0),
					    len - 16 - (k == 0 ? 10 : 0));
		}
	out = fini_output();
	/* whole ones only: the frame's UDP header too (sl_pkt_5tuple) */
	snprintf(line, sizeof(line), "remarked=%u flows_full=0\n", marked);
	assert_has(out, line);
	snprintf(line, sizeof(line), " packets=%u ", n);
	assert_has(out, line);
	assert_true(marked > 0);
	free(out);
	unlink(path);
	free(path);
}

struct bad_cfg {
	const char *text, *want;
};

static void
test_bad_files(void **state)
{
	static const struct bad_cfg bad[] = {
		{"{\"classes\": [{\"cir\": 8, \"cbs\": 1}]}",
		 "class 1: 'name': give 1 to 31 characters, no blanks or '='"},
		{"{\"classes\": [{\"name\": \"a\", \"cbs\": 1}]}",
		 "class 1: missing 'cir' (bits/s)"},
		{"{\"classes\": [{\"name\": \"a\", \"cir\": 8, \"cbs\": 1}, "
		 "{\"name\": \"b\", \"cir\": 8, \"cbs\": 1, \"rate\": 3}]}",
		 "class 2: unknown key 'rate' (expected name, match, dscp, "
		 "meter, per, cir, cbs, ebs, pir, pbs, yellow, red, "
		 "yellow_dscp, red_dscp)"},
		{"{\"classes\": [{\"name\": \"a\", \"meter\": \"trtcm\", "
		 "\"cir\": 16, \"pir\": 8, \"cbs\": 1, \"pbs\": 1}]}",
		 "class 1: 'pir' 8 is below 'cir' 16 bits/s"},
		{"{\"classes\": [{\"name\": \"a\", \"cir\": 8, \"cbs\": 1, "
		 "\"match\": {\"dst\": \"10.0.0.0/33\"}}]}",
		 "class 1: 'match': 'dst': '10.0.0.0/33' is not a valid "
		 "prefix"},
		{"{\"classes\": [{\"name\": \"a\", \"cir\": 8, \"cbs\": 1, "
		 "\"dscp\": 64}]}",
		 "class 1: 'dscp': 64 is not a whole number from 0 to 63"},
		{"{\"classes\": [{\"name\": \"a\", \"cir\": 8, \"cbs\": 1, "
		 "\"red\": \"remark\"}]}",
		 "class 1: 'red': remark needs 'red_dscp'"},
		{"{\"classes\": [{\"name\": \"a\", \"cir\": 8, \"cbs\": 1}, "
		 "{\"name\": \"a\", \"cir\": 8, \"cbs\": 1}]}",
		 "class 2: 'name': 'a' is class 1's too"},
		{"{\"classes\": []}",
		 "'classes': give a list of 1 to 64 classes"},
		{"{\"classes\": [{\"name\": \"a\",\n \"cir\": 8,, }]}",
		 ":2:11: JSON error: "},
	};
	char line[512];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *path = write_cfg(bad[i].text);

		snprintf(line, sizeof(line), "sluice-shaper: %s%s%s", path,
			 bad[i].want[0] == ':' ? "" : ": ", bad[i].want);
		expect_init_error("sluice-shaper", line, "--config", path,
				  NULL);
		unlink(path);
		free(path);
	}
	expect_init_error("sluice-shaper",
			  "sluice-shaper: missing --config "
			  "FILE\n",
			  NULL);
	expect_init_error("sluice-shaper",
			  "sluice-shaper: /nonexistent.json: cannot read: ",
			  "--config", "/nonexistent.json", NULL);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-shaper", sl_sh_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srtcm_colours),
		cmocka_unit_test(test_trtcm_remark),
		cmocka_unit_test(test_ipv6_remark),
		cmocka_unit_test(test_dscp_classes),
		cmocka_unit_test(test_per_flow),
		cmocka_unit_test(test_rates_at_run_time),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_bad_files),
	};

	return cmocka_run_group_tests_name("shaper", tests, setup,
					   stub_teardown);
}
