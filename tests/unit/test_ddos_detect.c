/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ddos-detect driven through its ops (nfs/ddos-detect/ddos_detect.c)
 * with the libsluice stand-in of nf_stub.c and a stand-in for sl_message:
 * one alarm per prefix when it reaches the threshold in a window, windows,
 * re-arm, IPv4 and IPv6 prefix lengths, --protect and --count syn, the
 * bounded table (full, idle eviction), messages that cannot be queued,
 * replies, control messages, and option errors word for word. Also the
 * prefix helpers shared with sluice-scrubber (prefix.c).
 */
#undef main /* meson.build renames ddos_detect.c's main to sl_dd_main */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"
#include "prefix.h"

int sl_dd_main(int argc, char **argv);

#define init_with(rc, ...)                                                     \
	stub_init_output(rc, "sluice-ddos-detect", __VA_ARGS__)
#define NS 1000000000ull
#define MS 1000000ull

/* ---- stand-ins for sl_message and sl_service_id --------------------- */

#define MAX_MSG 32

struct msg {
	uint16_t service;
	char key[64];
	char value[256];
};

static struct msg g_msg[MAX_MSG];
static unsigned g_n_msg;
static int g_msg_fail; /* sl_message fails while set */

int64_t
sl_message(struct sl_nf *nf, uint16_t service, const char *key,
	   const char *value)
{
	(void)nf;
	if (g_msg_fail)
		return -ENOBUFS;
	assert_true(g_n_msg < MAX_MSG);
	g_msg[g_n_msg].service = service;
	snprintf(g_msg[g_n_msg].key, sizeof(g_msg[0].key), "%s", key);
	snprintf(g_msg[g_n_msg].value, sizeof(g_msg[0].value), "%s", value);
	return ++g_n_msg;
}

/* Services: 0 is the NF's own (nf_stub), "scrubber" is 5. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	if (strcmp(name, "ddos-detect") == 0)
		return 0;
	if (strcmp(name, "scrubber") == 0)
		return 5;
	return -1;
}

/* ---- helpers ------------------------------------------------------- */

static void
reset(uint64_t now)
{
	memset(g_msg, 0, sizeof(g_msg));
	g_n_msg = 0;
	g_msg_fail = 0;
	stub_now_ns = now;
}

static void
assert_msg(unsigned i, uint16_t service, const char *key, const char *value)
{
	assert_true(i < g_n_msg);
	assert_int_equal(g_msg[i].service, service);
	assert_string_equal(g_msg[i].key, key);
	assert_string_equal(g_msg[i].value, value);
}

/* n UDP frames from a.b.c.(1..n) to 192.168.0.1:80. */
static void
from24(struct frame *f, unsigned n, uint8_t a, uint8_t b, uint8_t c)
{
	for (unsigned i = 0; i < n; i++)
		frame_ip4(&f[i], IPPROTO_UDP, IP4(a, b, c, 1 + i % 250),
			  (uint16_t)(1000 + i), IP4(192, 168, 0, 1), 80, 18);
}

/* ---- tests --------------------------------------------------------- */

static void
test_threshold_alarm(void **state)
{
	struct frame atk[8], other[4];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "5", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(
		out, "sluice-ddos-detect: packets per /24 (IPv4) and /64 "
		     "(IPv6) source prefix to any destination; alarm 'alarm' "
		     "to (this service) at 5 in 1000 ms, again after 60000 "
		     "ms; up to 65536 prefixes, idle after 10000 ms\n");
	free(out);
	from24(atk, 8, 10, 66, 6);
	from24(other, 4, 10, 1, 2);

	/* 4 packets from the /24, 4 from another: below the threshold. */
	out = send_at(1 * NS, atk, 4);
	assert_string_equal(out, "");
	free(out);
	send_quiet(1 * NS + 1 * MS, other, 4);
	assert_int_equal(g_n_msg, 0);
	/* The 5th: one alarm, to its own service. */
	out = send_at(1 * NS + 2 * MS, &atk[4], 1);
	assert_string_equal(out, "ddos-alarm: prefix=10.66.6.0/24 packets=5 "
				 "window_ms=1000 threshold=5 key=alarm\n");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_msg(0, 0, "alarm", "10.66.6.0/24");
	/* More of the attack, in this window and the next: no new alarm
	 * (re-arm is 60 s). */
	send_quiet(1 * NS + 3 * MS, &atk[5], 3);
	send_quiet(2 * NS + 3 * MS, atk, 8);
	assert_int_equal(g_n_msg, 1);
	/* The delivery reply: counted, nothing printed. */
	out = reply_output(1, 0, "");
	assert_string_equal(out, "");
	free(out);

	out = fini_output();
	assert_has(out, "ddos-stats: reason=exit ");
	assert_has(out, " packets=20 bytes=1200 ");
	assert_has(out, " non_ip=0 counted=20 ignored=0 prefixes=2 "
			"prefixes_capacity=65536 untracked=0 prefixes_seen=2 "
			"evicted=0 alarms=1 delivered=1 rejected=0 "
			"not_queued=0\n");
	free(out);
}

static void
test_window_and_rearm(void **state)
{
	struct frame atk[6];
	char *out;
	int rc;

	(void)state;
	reset(10 * NS);
	out = init_with(&rc, "--threshold", "6", "--window-ms", "500",
			"--rearm-ms", "2000", "--alarm-to", "scrubber", "--key",
			"ddos", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "alarm 'ddos' to scrubber at 6 in 500 ms, again "
			"after 2000 ms;");
	free(out);
	from24(atk, 6, 10, 66, 6);

	/* 5 in a window, 5 in the next: a window starts at the first packet
	 * that comes 500 ms or more after the last one began. */
	send_quiet(10 * NS, atk, 5);
	send_quiet(10 * NS + 499 * MS, atk, 0);
	send_quiet(10 * NS + 500 * MS, atk, 5);
	assert_int_equal(g_n_msg, 0);
	/* 6 within the window (the 6th at 999 ms): alarm. */
	out = send_at(10 * NS + 999 * MS, &atk[5], 1);
	assert_string_equal(out, "ddos-alarm: prefix=10.66.6.0/24 packets=6 "
				 "window_ms=500 threshold=6 key=ddos\n");
	free(out);
	assert_int_equal(g_n_msg, 1);
	assert_msg(0, 5, "ddos", "10.66.6.0/24");
	/* Over the threshold again 1 s later: within the re-arm time. */
	send_quiet(11 * NS + 999 * MS, atk, 6);
	assert_int_equal(g_n_msg, 1);
	/* 2 s after the alarm: armed again. */
	send_quiet(12 * NS + 998 * MS, atk, 6);
	assert_int_equal(g_n_msg, 1);
	send_quiet(12 * NS + 999 * MS, atk, 6);
	assert_int_equal(g_n_msg, 2);
	assert_msg(1, 5, "ddos", "10.66.6.0/24");
	free(fini_output());

	/* --rearm-ms 0: once, never again. */
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "2", "--rearm-ms", "0",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "at 2 in 1000 ms, once (never again);");
	free(out);
	send_quiet(1 * NS, atk, 2);
	send_quiet(100 * NS, atk, 2);
	send_quiet(1000 * NS, atk, 2);
	assert_int_equal(g_n_msg, 1);
	free(fini_output());
}

static void
test_prefix_lengths_and_ipv6(void **state)
{
	static const uint8_t a1[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x66, 0, 1,
				       0,    0,    0,    0,    0, 0,    0, 1};
	static const uint8_t a2[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x66,
				       0xff, 0xff, 1,    2,    3, 4,
				       5,    6,    7,    8};
	static const uint8_t b1[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0x67, 0, 1,
				       0,    0,    0,    0,    0, 0,    0, 1};
	struct frame f[3], v4[3];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "2", "--prefix-len", "16",
			"--prefix-len6", "48", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "packets per /16 (IPv4) and /48 (IPv6) source "
			"prefix");
	free(out);
	frame_ip6(&f[0], IPPROTO_UDP, a1, 1000, v6_b, 53, 10);
	frame_ip6(&f[1], IPPROTO_TCP, b1, 1000, v6_b, 53, 10);
	frame_ip6(&f[2], IPPROTO_UDP, a2, 1001, v6_b, 53, 10);
	/* a1 and a2 share 2001:db8:66::/48; b1 is in :67. */
	send_quiet(1 * NS, f, 2);
	assert_int_equal(g_n_msg, 0);
	out = send_at(1 * NS, &f[2], 1);
	assert_string_equal(out, "ddos-alarm: prefix=2001:db8:66::/48 "
				 "packets=2 window_ms=1000 threshold=2 "
				 "key=alarm\n");
	free(out);
	assert_msg(0, 0, "alarm", "2001:db8:66::/48");
	/* IPv4 /16: 10.66.1.1 and 10.66.200.9 are one prefix. */
	frame_ip4(&v4[0], IPPROTO_UDP, IP4(10, 66, 1, 1), 1, IP4(1, 1, 1, 1), 2,
		  4);
	frame_ip4(&v4[1], IPPROTO_ICMP, IP4(10, 67, 1, 1), 1, IP4(1, 1, 1, 1),
		  2, 4);
	frame_ip4(&v4[2], IPPROTO_TCP, IP4(10, 66, 200, 9), 1, IP4(1, 1, 1, 1),
		  2, 4);
	send_quiet(1 * NS, v4, 3);
	assert_int_equal(g_n_msg, 2);
	assert_msg(1, 0, "alarm", "10.66.0.0/16");
	free(fini_output());
}

static void
test_protect_and_syn(void **state)
{
	struct frame f[4], arp;
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "2", "--count", "syn", "--protect",
			"192.168.0.0/24", "--protect", "2001:db8::/64",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out,
		   "sluice-ddos-detect: TCP SYNs per /24 (IPv4) and /64 "
		   "(IPv6) source prefix to 192.168.0.0/24,2001:db8::/64;");
	free(out);
	/* A SYN to a protected address, a SYN elsewhere, an ACK, a UDP. */
	frame_ip4(&f[0], IPPROTO_TCP, IP4(10, 66, 6, 1), 1000,
		  IP4(192, 168, 0, 7), 80, 0);
	frame_ip4(&f[1], IPPROTO_TCP, IP4(10, 66, 6, 2), 1000,
		  IP4(192, 168, 1, 7), 80, 0);
	frame_ip4(&f[2], IPPROTO_TCP, IP4(10, 66, 6, 3), 1000,
		  IP4(192, 168, 0, 7), 80, 0);
	frame_ip4(&f[3], IPPROTO_UDP, IP4(10, 66, 6, 4), 1000,
		  IP4(192, 168, 0, 7), 80, 0);
	f[0].b[14 + 20 + 13] = 0x02; /* SYN */
	f[1].b[14 + 20 + 13] = 0x02;
	f[2].b[14 + 20 + 13] = 0x12; /* SYN+ACK: a reply, not counted */
	memset(&arp, 0, sizeof(arp));
	put_eth(&arp, 0x0806, 0, NULL);
	put_zero(&arp, 28);

	send_quiet(1 * NS, f, 4);
	send_quiet(1 * NS, &arp, 1);
	assert_int_equal(g_n_msg, 0);
	send_quiet(1 * NS, f, 1);
	assert_int_equal(g_n_msg, 1);
	assert_msg(0, 0, "alarm", "10.66.6.0/24");
	out = fini_output();
	assert_has(out, " packets=6 ");
	assert_has(out, " non_ip=1 counted=2 ignored=3 prefixes=1 ");
	free(out);
}

static void
test_table_full_and_idle(void **state)
{
	struct frame a[3], b[1], c[2];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "3", "--prefixes", "2", "--idle-ms",
			"2000", "--rearm-ms", "5000", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "; up to 2 prefixes, idle after 2000 ms\n");
	free(out);
	from24(a, 3, 10, 66, 6);
	from24(b, 1, 10, 1, 1);
	from24(c, 2, 10, 2, 2);

	send_quiet(1 * NS, a, 3); /* alarms */
	send_quiet(1 * NS, b, 1);
	assert_int_equal(g_n_msg, 1);
	/* Full: the third prefix is not tracked; its packets pass. */
	send_quiet(1 * NS, c, 2);
	send_quiet(1 * NS, c, 2);
	assert_int_equal(g_n_msg, 1);
	out = msg_output("stats", "");
	assert_has(out, " counted=4 ignored=0 prefixes=2 prefixes_capacity=2 "
			"untracked=4 prefixes_seen=2 evicted=0 alarms=1 ");
	assert_has(out, "ddos-message: key=stats value= applied\n");
	free(out);

	/* 2 s idle: the quiet prefix goes; the one that alarmed stays until
	 * 5 s after its alarm (else it could alarm again at once). */
	out = tick_output(3 * NS);
	assert_string_equal(out, "");
	free(out);
	send_quiet(3 * NS, c, 2); /* takes the freed place */
	out = msg_output("stats", "");
	assert_has(out, " counted=6 ignored=0 prefixes=2 prefixes_capacity=2 "
			"untracked=4 prefixes_seen=3 evicted=1 ");
	free(out);
	free(tick_output(6 * NS));
	out = msg_output("stats", "");
	assert_has(out, " prefixes=0 prefixes_capacity=2 untracked=4 "
			"prefixes_seen=3 evicted=3 ");
	free(out);
	/* Forgotten and re-armed: alarms again. */
	send_quiet(6 * NS, a, 3);
	assert_int_equal(g_n_msg, 2);
	free(fini_output());
}

static void
test_not_queued_and_replies(void **state)
{
	struct frame a[4];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "2", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	from24(a, 4, 10, 66, 6);
	g_msg_fail = 1;
	out = send_at(1 * NS, a, 2);
	assert_string_equal(out, ""); /* not sent: no alarm line */
	free(out);
	assert_int_equal(g_n_msg, 0);
	g_msg_fail = 0;
	/* Tried again at the next packet over the threshold. */
	out = send_at(1 * NS, &a[2], 1);
	assert_has(out, "ddos-alarm: prefix=10.66.6.0/24 packets=3 ");
	free(out);
	assert_int_equal(g_n_msg, 1);
	out = reply_output(1, ENOENT,
			   "service 'scrubber' has no running instance");
	assert_string_equal(out, "ddos-rejected: id=1 prefix=10.66.6.0/24 "
				 "reason=service 'scrubber' has no running "
				 "instance\n");
	free(out);
	out = reply_output(77, EINVAL, "what");
	assert_string_equal(out, "ddos-rejected: id=77 prefix=? reason=what\n");
	free(out);
	out = fini_output();
	assert_has(out, " alarms=1 delivered=0 rejected=2 not_queued=1\n");
	free(out);
}

static void
test_messages(void **state)
{
	struct frame a[2];
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	out = init_with(&rc, "--threshold", "2", "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	from24(a, 2, 10, 66, 6);
	send_quiet(1 * NS, a, 2);
	send_quiet(1 * NS, a, 2);
	assert_int_equal(g_n_msg, 1);
	/* Its own alarm coming back: ignored, silently. */
	out = msg_output("alarm", "10.66.6.0/24");
	assert_string_equal(out, "");
	free(out);
	out = msg_output("rearm", "10.66.6.0/24");
	assert_string_equal(out, "ddos-message: key=rearm value=10.66.6.0/24 "
				 "applied\n");
	free(out);
	send_quiet(1 * NS, a, 1);
	assert_int_equal(g_n_msg, 2);
	out = msg_output("rearm", "all");
	assert_string_equal(out, "ddos-message: key=rearm value=all "
				 "applied\n");
	free(out);
	send_quiet(1 * NS, a, 1);
	assert_int_equal(g_n_msg, 3);
	out = msg_output("rearm", "10.9.9.0/24");
	assert_string_equal(out, "ddos-message: key=rearm value=10.9.9.0/24 "
				 "ignored (no such prefix in the table)\n");
	free(out);
	out = msg_output("rearm", "10.9.9.1/24");
	assert_string_equal(out, "ddos-message: key=rearm value=10.9.9.1/24 "
				 "invalid (a prefix such as 10.66.6.0/24, or "
				 "all)\n");
	free(out);
	out = msg_output("frobnicate", "1");
	assert_string_equal(out, "ddos-message: key=frobnicate value=1 "
				 "ignored (keys: stats, rearm)\n");
	free(out);
	free(fini_output());
}

#define expect_error(...) expect_init_error("sluice-ddos-detect", __VA_ARGS__)

static void
test_args(void **state)
{
	char *out;
	int rc;

	(void)state;
	reset(1 * NS);
	expect_error("sluice-ddos-detect: --prefix-len: '33' is not a whole "
		     "number from 1 to 32\n",
		     "--prefix-len", "33", NULL);
	expect_error("sluice-ddos-detect: --prefix-len6: '0' is not a whole "
		     "number from 1 to 128\n",
		     "--prefix-len6", "0", NULL);
	expect_error("sluice-ddos-detect: --threshold: '1.5' is not a whole "
		     "number from 1 to 1000000000000\n",
		     "--threshold", "1.5", NULL);
	expect_error("sluice-ddos-detect: give --threshold (packets per "
		     "window) or --pps (packets per second), not both\n",
		     "--threshold", "10", "--pps", "100", NULL);
	expect_error("sluice-ddos-detect: --count: 'bytes' is not packets or "
		     "syn\n",
		     "--count", "bytes", NULL);
	expect_error("sluice-ddos-detect: --protect: '192.168.0.1/24' has "
		     "bits set after the prefix length: write 192.168.0.0/24 "
		     "(or the address alone for one host)\n",
		     "--protect", "192.168.0.1/24", NULL);
	expect_error("sluice-ddos-detect: --protect: 'web' is not an address "
		     "prefix: write A.B.C.D/N (IPv4) or X:Y::Z/N (IPv6), e.g. "
		     "10.66.6.0/24\n",
		     "--protect", "web", NULL);
	expect_error("sluice-ddos-detect: --protect: '10.0.0.0/40': the "
		     "prefix length must be a number from 0 to 32 for an IPv4 "
		     "address\n",
		     "--protect", "10.0.0.0/40", NULL);
	expect_error("sluice-ddos-detect: --idle-ms 1500: give at least 2 "
		     "windows (2000 ms), or a prefix is forgotten while it is "
		     "counted\n",
		     "--idle-ms", "1500", NULL);
	expect_error("sluice-ddos-detect: --key: 'a b' is not a message key "
		     "(1 to 63 characters, no spaces)\n",
		     "--key", "a b", NULL);
	expect_error("sluice-ddos-detect: --alarm-to: "
		     "'ssssssssssssssssssssssssssssssss' is not a service name "
		     "(1 to 31 characters, no spaces)\n",
		     "--alarm-to", "ssssssssssssssssssssssssssssssss", NULL);
	expect_error("sluice-ddos-detect: unexpected argument 'extra'\n",
		     "--threshold", "3", "extra", NULL);
	expect_error("unrecognized option '--treshold'", "--treshold", "3",
		     NULL);

	/* --pps: the threshold is the rate over the window, rounded up. */
	out = init_with(&rc, "--pps", "2.5", "--window-ms", "2000",
			"--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, " at 5 in 2000 ms (2.5 pps), again after 60000 ms; ");
	free(out);
	free(fini_output());
	out = init_with(&rc, "--pps", "1000", "--window-ms", "1", "--stats-ms",
			"0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, " at 1 in 1 ms (1000 pps), ");
	assert_has(out, "idle after 10000 ms\n");
	free(out);
	free(fini_output());
	out = init_with(&rc, "--pps", "0.5", "--window-ms", "100", "--stats-ms",
			"0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, " at 1 in 100 ms (0.5 pps), ");
	free(out);
	free(fini_output());
	/* --help: ECANCELED, usage on stdout. */
	out = init_with(&rc, "--help", NULL);
	assert_int_equal(rc, ECANCELED);
	free(out);
}

static void
test_prefix_helpers(void **state)
{
	struct ddos_prefix p;
	struct sl_5tuple t;
	char err[200], buf[DDOS_PREFIX_STRLEN];

	(void)state;
	assert_int_equal(ddos_prefix_parse("10.66.6.0/24", &p, err,
					   sizeof(err)),
			 0);
	assert_int_equal(p.family, 4);
	assert_int_equal(p.len, 24);
	ddos_prefix_format(&p, buf, sizeof(buf));
	assert_string_equal(buf, "10.66.6.0/24");
	assert_int_equal(ddos_prefix_parse("10.66.6.7", &p, err, sizeof(err)),
			 0);
	assert_int_equal(p.len, 32);
	assert_int_equal(ddos_prefix_parse("0.0.0.0/0", &p, err, sizeof(err)),
			 0);
	assert_int_equal(ddos_prefix_parse("2001:db8:66::/48", &p, err,
					   sizeof(err)),
			 0);
	assert_int_equal(p.family, 6);
	ddos_prefix_format(&p, buf, sizeof(buf));
	assert_string_equal(buf, "2001:db8:66::/48");
	assert_int_equal(ddos_prefix_parse("2001:db8:66::1/47", &p, err,
					   sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "'2001:db8:66::1/47' has bits set after the "
				 "prefix length: write 2001:db8:66::/47 (or "
				 "the address alone for one host)");
	assert_int_equal(ddos_prefix_parse("::/129", &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "'::/129': the prefix length must be a "
				 "number from 0 to 128 for an IPv6 address");
	assert_int_equal(ddos_prefix_parse("10.0.0.0/", &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "'10.0.0.0/': the prefix length must be a "
				 "number from 0 to 32 for an IPv4 address");
	assert_int_equal(ddos_prefix_parse("10.0.0.0/-1", &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "'10.0.0.0/-1': the prefix length must be a "
				 "number from 0 to 32 for an IPv4 address");
	assert_int_equal(ddos_prefix_parse("/8", &p, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "'/8' is not an address prefix: write "
				 "A.B.C.D/N (IPv4) or X:Y::Z/N (IPv6), e.g. "
				 "10.66.6.0/24");
	assert_int_equal(ddos_prefix_parse("", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'' is not an address prefix: write "
				 "A.B.C.D/N (IPv4) or X:Y::Z/N (IPv6), e.g. "
				 "10.66.6.0/24");

	/* Membership by source or destination; families never mix. */
	memset(&t, 0, sizeof(t));
	t.family = 4;
	t.src.v4 = htonl(IP4(10, 66, 6, 200));
	t.dst.v4 = htonl(IP4(192, 168, 0, 1));
	assert_int_equal(ddos_prefix_parse("10.66.7.0/23", &p, err,
					   sizeof(err)),
			 -EINVAL);
	assert_int_equal(ddos_prefix_parse("10.66.6.128/25", &p, err,
					   sizeof(err)),
			 0);
	assert_true(ddos_prefix_has(&p, &t, 1));
	assert_false(ddos_prefix_has(&p, &t, 0));
	t.src.v4 = htonl(IP4(10, 66, 6, 127));
	assert_false(ddos_prefix_has(&p, &t, 1));
	assert_int_equal(ddos_prefix_parse("0.0.0.0/0", &p, err, sizeof(err)),
			 0);
	assert_true(ddos_prefix_has(&p, &t, 0));
	t.family = 6;
	assert_false(ddos_prefix_has(&p, &t, 0));
	ddos_prefix_of(&t, 1, 200, &p); /* clamped to 128 */
	assert_int_equal(p.len, 128);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-ddos-detect", sl_dd_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_alarm),
		cmocka_unit_test(test_window_and_rearm),
		cmocka_unit_test(test_prefix_lengths_and_ipv6),
		cmocka_unit_test(test_protect_and_syn),
		cmocka_unit_test(test_table_full_and_idle),
		cmocka_unit_test(test_not_queued_and_replies),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_prefix_helpers),
	};

	return cmocka_run_group_tests_name("ddos_detect", tests, setup,
					   stub_teardown);
}
