/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-monitor driven through its ops (nfs/monitor/monitor.c) with the
 * libsluice stand-in of nf_stub.c: protocol classes, the bounded flow
 * table, top flows, the periodic report, arguments, malformed packets.
 */
#undef main /* meson.build renames monitor.c's main to sl_mon_main */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

int sl_mon_main(int argc, char **argv);

#define MAX_ARGS 16
/* init with the given arguments (NULL-terminated); returns its stderr. */
#define init_with(rc, ...) stub_init_output(rc, "sluice-monitor", __VA_ARGS__)
#define NS 1000000000ull

/* Sends n frames in bursts of up to 64; every one must get SL_NEXT. */
static void
send_frames(const struct frame *f, unsigned n)
{
	struct rte_mbuf *m[64];
	unsigned i, j, k;

	for (i = 0; i < n; i += k) {
		k = n - i < 64 ? n - i : 64;
		for (j = 0; j < k; j++) {
			m[j] = stub_mbuf(f[i + j].b, f[i + j].len);
			assert_non_null(m[j]);
		}
		stub_ops->process(stub_nf(), m, (uint16_t)k);
		for (j = 0; j < k; j++) {
			assert_true(stub_verdict_set(m[j]));
			assert_int_equal(sl_pkt_verdict(m[j]), SL_NEXT);
			stub_mbuf_free(m[j]);
		}
	}
}

static void
test_counts(void **state)
{
	struct frame f[16];
	unsigned n = 0, i;
	uint64_t bytes = 0;
	char *out, line[256];
	int rc;

	(void)state;
	out = init_with(&rc, "--flows", "4", "--interval", "0", "--top", "3",
			NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-monitor: tracking up to 4 flows, top 3 every "
			"0.0 s\n");
	free(out);

	/* A: 3 x TCP, the biggest flow. */
	for (i = 0; i < 3; i++)
		frame_ip4(&f[n++], IPPROTO_TCP, IP4(10, 0, 0, 1), 1000,
			  IP4(192, 168, 0, 1), 80, 100);
	/* B: 1 x UDP. C: 2 x ICMP. D: 1 x UDP/IPv6. */
	frame_ip4(&f[n++], IPPROTO_UDP, IP4(10, 0, 0, 2), 5353,
		  IP4(192, 168, 0, 53), 53, 200);
	frame_ip4(&f[n++], IPPROTO_ICMP, IP4(10, 0, 0, 3), 0,
		  IP4(192, 168, 0, 1), 0, 20);
	frame_ip4(&f[n++], IPPROTO_ICMP, IP4(10, 0, 0, 3), 0,
		  IP4(192, 168, 0, 1), 0, 20);
	frame_ip6(&f[n++], IPPROTO_UDP, v6_a, 1, v6_b, 2, 10);
	/* E: TCP/IPv6 x 2 and F: GRE: table full, untracked. */
	frame_ip6(&f[n++], IPPROTO_TCP, v6_a, 1, v6_b, 2, 0);
	frame_ip6(&f[n++], IPPROTO_TCP, v6_a, 1, v6_b, 2, 0);
	frame_ip4(&f[n++], IPPROTO_ICMP, IP4(1, 1, 1, 1), 0, IP4(2, 2, 2, 2), 0,
		  0);
	f[n - 1].b[23] = 47;
	/* Flow A again, after the table filled up: still tracked. */
	frame_ip4(&f[n++], IPPROTO_TCP, IP4(10, 0, 0, 1), 1000,
		  IP4(192, 168, 0, 1), 80, 100);
	/* Non-IP and malformed. */
	memset(&f[n], 0, sizeof(f[n]));
	put_eth(&f[n], 0x0806, 0, NULL);
	put_zero(&f[n++], 28);
	frame_ip4(&f[n], IPPROTO_TCP, 1, 2, 3, 4, 0);
	f[n++].len = 30;
	for (i = 0; i < n; i++)
		bytes += f[i].len;
	send_frames(f, n);

	out = fini_output();
	snprintf(line, sizeof(line),
		 "mon-stats: reason=exit uptime=0.0 packets=%u bytes=%" PRIu64
		 " pps=0 ipv4=8 ipv6=3 flows=4 flows_capacity=4 "
		 "flows_untracked=3 untracked_bytes=%u\n",
		 n, bytes, 2 * f[7].len + f[9].len);
	assert_has(out, line);
	assert_has(out, "mon-proto: packets tcp=6 udp=2 icmp=2 other_ipv4=1 "
			"other_ipv6=0 non_ip=1 malformed=1\n");
	snprintf(line, sizeof(line),
		 "mon-proto: bytes tcp=%u udp=%u icmp=%u other_ipv4=%u "
		 "other_ipv6=0 non_ip=42 malformed=30\n",
		 4 * f[0].len + 2 * f[7].len, f[3].len + f[6].len, 2 * f[4].len,
		 f[9].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "mon-top: rank=1 packets=4 bytes=%u flow=tcp 10.0.0.1:1000 > "
		 "192.168.0.1:80\n",
		 4 * f[0].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "mon-top: rank=2 packets=1 bytes=%u flow=udp 10.0.0.2:5353 > "
		 "192.168.0.53:53\n",
		 f[3].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "mon-top: rank=3 packets=2 bytes=%u flow=icmp 10.0.0.3 > "
		 "192.168.0.1\n",
		 2 * f[4].len);
	assert_has(out, line);
	assert_null(strstr(out, "rank=4"));
	free(out);
}

static void
test_interval(void **state)
{
	struct frame f[2];
	char *out;
	int rc;

	(void)state;
	stub_now_ns = 10 * NS;
	out = init_with(&rc, "--interval", "1.5", NULL);
	assert_int_equal(rc, 0);
	free(out);
	frame_ip4(&f[0], IPPROTO_UDP, 1, 2, 3, 4, 0);
	frame_ip4(&f[1], IPPROTO_UDP, 1, 2, 3, 5, 0);
	send_frames(f, 2);

	out = tick_output(11 * NS);
	assert_string_equal(out, "");
	free(out);
	out = tick_output(11 * NS + NS / 2);
	assert_has(out, "mon-stats: reason=interval uptime=1.5 packets=2 "
			"bytes=84 pps=1 ");
	assert_has(out, "mon-top: rank=2 ");
	free(out);
	out = tick_output(12 * NS);
	assert_string_equal(out, "");
	free(out);
	send_frames(f, 2);
	send_frames(f, 2);
	out = tick_output(13 * NS + NS / 2);
	assert_has(out, "mon-stats: reason=interval uptime=3.5 packets=6 "
			"bytes=252 pps=2 ");
	free(out);
	stub_now_ns = 14 * NS;
	out = fini_output();
	assert_has(out, "mon-stats: reason=exit uptime=4.0 packets=6 ");
	free(out);

	/* --interval 0: ticks print nothing. */
	stub_now_ns = 0;
	out = init_with(&rc, "--interval", "0", NULL);
	assert_int_equal(rc, 0);
	free(out);
	out = tick_output(1000 * NS);
	assert_string_equal(out, "");
	free(out);
	free(fini_output());
}

/* The table holds exactly --flows flows; top-N is sorted by bytes. */
static void
test_capacity_and_top(void **state)
{
	enum { FLOWS = 3000, CAP = 1000 };
	struct frame *f = calloc(FLOWS, sizeof(*f));
	char *out, line[256];
	unsigned i;
	int rc;

	(void)state;
	assert_non_null(f);
	out = init_with(&rc, "--flows", "1000", "--top", "5", NULL);
	assert_int_equal(rc, 0);
	free(out);
	/* Flow i has i bytes of payload (mod 200): the biggest of the
	 * tracked ones (the first 1000) are 199, 198, ... */
	for (i = 0; i < FLOWS; i++)
		frame_ip4(&f[i], IPPROTO_UDP, IP4(10, 1, i >> 8, i & 0xff),
			  (uint16_t)(1024 + i), IP4(192, 168, 0, 1), 9,
			  i % 200);
	send_frames(f, FLOWS);
	send_frames(f, FLOWS);
	out = fini_output();
	assert_has(out, "flows=1000 flows_capacity=1000 flows_untracked=4000 ");
	/* Flows 199, 399, 599, 799, 999 have 199 bytes of payload: equal
	 * bytes, so check the size and that 5 lines are there. */
	snprintf(line, sizeof(line), "mon-top: rank=1 packets=2 bytes=%u ",
		 2 * (42 + 199));
	assert_has(out, line);
	snprintf(line, sizeof(line), "mon-top: rank=5 packets=2 bytes=%u ",
		 2 * (42 + 199));
	assert_has(out, line);
	assert_null(strstr(out, "rank=6"));
	free(out);

	/* Distinct sizes: the exact order. */
	out = init_with(&rc, "--top", "3", NULL);
	assert_int_equal(rc, 0);
	free(out);
	for (i = 0; i < 10; i++)
		frame_ip4(&f[i], IPPROTO_TCP, IP4(10, 2, 0, i), 1,
			  IP4(10, 3, 0, 1), 2, (i * 7) % 10 * 10);
	send_frames(f, 10);
	out = fini_output();
	assert_has(out, "mon-top: rank=1 packets=1 bytes=144 flow=tcp "
			"10.2.0.7:1 > 10.3.0.1:2\n");
	assert_has(out, "mon-top: rank=2 packets=1 bytes=134 flow=tcp "
			"10.2.0.4:1 > 10.3.0.1:2\n");
	assert_has(out, "mon-top: rank=3 packets=1 bytes=124 flow=tcp "
			"10.2.0.1:1 > 10.3.0.1:2\n");
	free(out);
	free(f);
}

static void
test_malformed(void **state)
{
	struct frame f, *all = calloc(256, sizeof(*all));
	unsigned n = 0, len;
	char *out;
	int rc;

	(void)state;
	assert_non_null(all);
	out = init_with(&rc, NULL);
	assert_int_equal(rc, 0);
	free(out);
	frame_ip4(&f, IPPROTO_TCP, 1, 2, 3, 4, 8);
	for (len = 0; len <= f.len; len++) {
		all[n] = f;
		all[n++].len = len;
	}
	frame_ip6(&f, IPPROTO_UDP, v6_a, 1, v6_b, 2, 8);
	for (len = 0; len <= f.len; len++) {
		all[n] = f;
		all[n++].len = len;
	}
	send_frames(all, n);
	out = fini_output();
	assert_has(out, "mon-proto: packets tcp=9 udp=9 icmp=0 other_ipv4=0 "
			"other_ipv6=0 non_ip=0 malformed=116\n");
	assert_has(out, "flows=2 ");
	free(out);
	free(all);
}

static void
test_args(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = init_with(&rc, "--flows", "0", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-monitor: --flows: '0' is not a number from 1 "
			"to 16777216\n");
	free(out);
	out = init_with(&rc, "--flows", "12k", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-monitor: --flows: '12k' is not a number");
	free(out);
	out = init_with(&rc, "--flows", "-5", NULL);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(out,
			    "sluice-monitor: --flows: '-5' is not a number "
			    "from 1 to 16777216\n");
	free(out);
	out = init_with(&rc, "--top", "1001", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-monitor: --top: '1001' is not a number from 1 "
			"to 1000\n");
	free(out);
	out = init_with(&rc, "--interval", "-1", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-monitor: --interval: '-1' is not a number of "
			"seconds from 0 to 86400\n");
	free(out);
	out = init_with(&rc, "--interval", "nan", NULL);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(out, "sluice-monitor: --interval: 'nan' is not a "
				 "number of seconds from 0 to 86400\n");
	free(out);
	out = init_with(&rc, "--bogus", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "unrecognized option '--bogus'");
	assert_has(out, "usage: sluice-monitor");
	free(out);
	out = init_with(&rc, "stray", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-monitor: unexpected argument 'stray'\n");
	free(out);
	/* A table bigger than the EAL heap (128 MB here): a clear refusal. */
	out = init_with(&rc, "--flows", "16777216", NULL);
	assert_int_equal(rc, ENOMEM);
	assert_has(out, "sluice-monitor: cannot create a flow table of "
			"16777216 flows (about 1185 MB of the hugepage memory "
			"sluiced sets aside with --nf-mem): Cannot allocate "
			"memory\n");
	free(out);
	assert_null(sl_nf_priv(stub_nf()));
	/* Defaults. */
	out = init_with(&rc, NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-monitor: tracking up to 65536 flows, top 10 "
			"every 5.0 s\n");
	free(out);
	free(fini_output());
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-monitor", sl_mon_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_capacity_and_top),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests_name("monitor", tests, setup,
					   stub_teardown);
}
