/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-sampler (nfs/sampler/sampler.c) through its ops with the
 * libsluice stand-in of nf_stub.c: by packet, the verdicts are exactly
 * those of a splitmix64 generator with the given seed (and the count
 * within a binomial bound); by flow, every packet of a flow, both
 * directions, gets the same verdict, exactly the flows the seeded mix of
 * the flow hash picks; messages; arguments; every counter as printed.
 */
#undef main /* meson.build renames sampler.c's main to sl_smp_main */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

int sl_smp_main(int argc, char **argv);

#define SAMPLE_ID 7

/* The test's one service besides the NF's. */
int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	return strcmp(name, "sample") == 0 ? SAMPLE_ID : -1;
}

/* As sluiced computes it at ingress: the symmetric hash of the flow. */
uint32_t
sl_pkt_flow_hash(const struct rte_mbuf *m)
{
	struct sl_5tuple t;

	if (sl_pkt_flow_tuple(m, &t) != 0)
		return 0;
	return sl_5tuple_hash(&t);
}

#define init_with(rc, ...) stub_init_output(rc, "sluice-sampler", __VA_ARGS__)

/* The reference: splitmix64 (Steele, Lea, Flood 2014). */
static uint64_t
ref_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
ref_pick(uint64_t draw, uint32_t n)
{
	return n == 1 || draw < (uint64_t)(((__uint128_t)1 << 64) / n);
}

/* Sends frames in bursts of 32; verdicts into v. */
static void
run(const struct frame *f, unsigned n, sl_verdict_t *v)
{
	struct rte_mbuf *m[32];
	unsigned i, j, k;

	for (i = 0; i < n; i += k) {
		k = n - i < 32 ? n - i : 32;
		for (j = 0; j < k; j++)
			m[j] = stub_mbuf(f[i + j].b, f[i + j].len);
		stub_ops->process(stub_nf(), m, (uint16_t)k);
		for (j = 0; j < k; j++) {
			assert_true(stub_verdict_set(m[j]));
			v[i + j] = sl_pkt_verdict(m[j]);
			/* read only: the frame is unchanged */
			assert_memory_equal(rte_pktmbuf_mtod(m[j], void *),
					    f[i + j].b, f[i + j].len);
			stub_mbuf_free(m[j]);
		}
	}
}

#define N_PKTS 20000

static void
check_packets(uint32_t one_in, uint64_t seed)
{
	struct frame *f = calloc(N_PKTS, sizeof(*f));
	sl_verdict_t *v = calloc(N_PKTS, sizeof(*v));
	char a_n[16], a_seed[24], *out, line[256];
	uint64_t state = seed, bytes = 0, sbytes = 0;
	unsigned i, sampled = 0;
	double mean, sd;
	int rc;

	assert_non_null(f);
	assert_non_null(v);
	for (i = 0; i < N_PKTS; i++) {
		/* one flow: by packet, the flow does not matter */
		frame_ip4(&f[i], IPPROTO_UDP, IP4(10, 66, 2, 1), 1000,
			  IP4(10, 66, 2, 2), 2000, i % 50);
		bytes += f[i].len;
	}
	snprintf(a_n, sizeof(a_n), "%" PRIu32, one_in);
	snprintf(a_seed, sizeof(a_seed), "%" PRIu64, seed);
	stub_now_ns = 0;
	out = init_with(&rc, "--to", "sample", "--one-in", a_n, "--seed",
			a_seed, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	snprintf(line, sizeof(line),
		 "sluice-sampler: sampling 1 packet in %" PRIu32
		 " to service 7, seed %" PRIu64 "\n",
		 one_in, seed);
	assert_string_equal(out, line);
	free(out);
	run(f, N_PKTS, v);
	for (i = 0; i < N_PKTS; i++) {
		int want;

		state += 0x9e3779b97f4a7c15ull;
		want = ref_pick(ref_mix(state), one_in);
		if (v[i] != (want ? SL_TO(SAMPLE_ID) : SL_NEXT))
			fail_msg("packet %u: verdict %#x", i, v[i]);
		sampled += want;
		sbytes += want ? f[i].len : 0;
	}
	/* within 5 standard deviations of N/n */
	mean = (double)N_PKTS / one_in;
	sd = sqrt(N_PKTS * (1.0 / one_in) * (1 - 1.0 / one_in));
	if (fabs(sampled - mean) > 5 * sd + 1e-9)
		fail_msg("%u sampled of %u, expected %.1f +- %.1f", sampled,
			 N_PKTS, mean, 5 * sd);
	stub_now_ns = 2000000000ull;
	out = fini_output();
	snprintf(line, sizeof(line),
		 "sampler-stats: reason=exit uptime=2.0 packets=%u "
		 "bytes=%" PRIu64 " pps=%u by=packet one_in=%" PRIu32
		 " sampled=%u sampled_bytes=%" PRIu64 " passed=%u no_hash=0\n",
		 N_PKTS, bytes, N_PKTS / 2, one_in, sampled, sbytes,
		 N_PKTS - sampled);
	assert_string_equal(out, line);
	free(out);
	free(f);
	free(v);
}

static void
test_by_packet(void **state)
{
	(void)state;
	check_packets(10, 1);
	check_packets(10, 2);
	check_packets(3, 123456789);
	check_packets(1000, 7);
	check_packets(1, 1);
}

/* Flows of 4 packets, 2 each way, interleaved; a non-IP frame. */
#define N_FLOWS 2000

static void
check_flows(uint32_t one_in, uint64_t seed)
{
	unsigned n = N_FLOWS * 4 + 1, i, flows = 0, pk = 0;
	struct frame *f = calloc(n, sizeof(*f));
	sl_verdict_t *v = calloc(n, sizeof(*v));
	char a_n[16], a_seed[24], *out, line[256];
	int rc;

	assert_non_null(f);
	assert_non_null(v);
	for (i = 0; i < N_FLOWS * 4; i++) {
		unsigned fl = i % N_FLOWS, rev = (i / N_FLOWS) % 2;
		uint32_t a = IP4(10, 66, 4, 1), b = IP4(10, 66, 5, fl % 200);
		uint16_t pa = (uint16_t)(10000 + fl), pb = 80;

		if (rev)
			frame_ip4(&f[i], IPPROTO_TCP, b, pb, a, pa, 0);
		else
			frame_ip4(&f[i], IPPROTO_TCP, a, pa, b, pb, 0);
	}
	put_eth(&f[n - 1], 0x0806, 0, NULL);
	put_zero(&f[n - 1], 28);
	snprintf(a_n, sizeof(a_n), "%" PRIu32, one_in);
	snprintf(a_seed, sizeof(a_seed), "%" PRIu64, seed);
	stub_now_ns = 0;
	out = init_with(&rc, "--to", "sample", "--one-in", a_n, "--by", "flow",
			"--seed", a_seed, "--stats-ms", "0", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, "sluice-sampler: sampling 1 flow in ");
	free(out);
	run(f, n, v);
	for (i = 0; i < N_FLOWS; i++) {
		struct rte_mbuf *m = stub_mbuf(f[i].b, f[i].len);
		uint32_t h = sl_pkt_flow_hash(m);
		int want = ref_pick(ref_mix(seed ^ ((uint64_t)h << 32 | h)),
				    one_in);
		sl_verdict_t w = want ? SL_TO(SAMPLE_ID) : SL_NEXT;

		stub_mbuf_free(m);
		/* all four packets of the flow, both directions */
		for (unsigned k = 0; k < 4; k++)
			if (v[i + k * N_FLOWS] != w)
				fail_msg("flow %u packet %u: verdict %#x, want "
					 "%#x",
					 i, k, v[i + k * N_FLOWS], w);
		flows += want;
	}
	assert_int_equal(v[n - 1], SL_NEXT);
	pk = flows * 4;
	if (one_in > 1) { /* within 5 standard deviations */
		double mean = (double)N_FLOWS / one_in;
		double sd = sqrt(N_FLOWS * (1.0 / one_in) * (1 - 1.0 / one_in));

		if (fabs(flows - mean) > 5 * sd)
			fail_msg("%u flows sampled of %u, expected %.1f", flows,
				 N_FLOWS, mean);
	}
	out = fini_output();
	snprintf(line, sizeof(line),
		 " by=flow one_in=%" PRIu32 " sampled=%u sampled_bytes=%u "
		 "passed=%u no_hash=1\n",
		 one_in, pk, pk * 54, n - pk);
	assert_has(out, line);
	free(out);
	free(f);
	free(v);
}

static void
test_by_flow(void **state)
{
	(void)state;
	check_flows(10, 1);
	check_flows(10, 99);
	check_flows(4, 5);
	check_flows(1, 1);
}

static void
test_messages(void **state)
{
	struct frame f;
	sl_verdict_t v[1];
	char *out;
	int rc;

	(void)state;
	stub_now_ns = 0;
	free(init_with(&rc, "--to", "sample", "--one-in", "1000000000",
		       "--stats-ms", "1000", NULL));
	assert_int_equal(rc, 0);
	frame_ip4(&f, IPPROTO_UDP, 1, 2, 3, 4, 0);
	run(&f, 1, v);
	assert_int_equal(v[0], SL_NEXT);
	out = msg_output("one-in", "1");
	assert_string_equal(out,
			    "sampler-message: key=one-in value=1 applied\n");
	free(out);
	run(&f, 1, v);
	assert_int_equal(v[0], SL_TO(SAMPLE_ID));
	out = msg_output("one-in", "0");
	assert_string_equal(out, "sampler-message: key=one-in value=0 invalid "
				 "(a whole number from 1 to 1000000000)\n");
	free(out);
	out = msg_output("rate", "3");
	assert_string_equal(out, "sampler-message: key=rate value=3 ignored "
				 "(keys: one-in, stats)\n");
	free(out);
	stub_now_ns = 500000000ull;
	out = msg_output("stats", "");
	assert_has(out, "sampler-stats: reason=message uptime=0.5 packets=2 "
			"bytes=84 pps=4 by=packet one_in=1 sampled=1 "
			"sampled_bytes=42 passed=1 no_hash=0\n");
	free(out);
	out = tick_output(900000000ull);
	assert_string_equal(out, "");
	free(out);
	out = tick_output(1000000000ull);
	assert_has(out, "sampler-stats: reason=interval uptime=1.0 packets=2 ");
	free(out);
	free(fini_output());
}

static void
test_args(void **state)
{
	(void)state;
	expect_init_error("sluice-sampler",
			  "sluice-sampler: missing --to "
			  "SERVICE\n",
			  NULL);
	expect_init_error("sluice-sampler",
			  "sluice-sampler: --to 'nosuch': no such service "
			  "(sluice status lists them)\n",
			  "--to", "nosuch", NULL);
	expect_init_error("sluice-sampler",
			  "sluice-sampler: --one-in: '0' is not a whole number "
			  "from 1 to 1000000000\n",
			  "--to", "sample", "--one-in", "0", NULL);
	expect_init_error("sluice-sampler",
			  "sluice-sampler: --by: 'bytes' is not packet or "
			  "flow\n",
			  "--to", "sample", "--by", "bytes", NULL);
	expect_init_error("sluice-sampler",
			  "sluice-sampler: --seed: '-1' is not a whole number "
			  "from 0 to 1000000000000000\n",
			  "--to", "sample", "--seed", "-1", NULL);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-sampler", sl_smp_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_packet),
		cmocka_unit_test(test_by_flow),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_args),
	};

	return cmocka_run_group_tests_name("sampler", tests, setup,
					   stub_teardown);
}
