/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-micro: the per-packet cost of two data-path decisions, timed with
 * the TSC on one core, with the code sluiced and libsluice run:
 *
 *  - flow-table lookup (SDNFV reports 30 ns): the 16-byte key of a
 *    5-tuple in sluiced's IPv4 table and its CRC32-C signature
 *    (sl_flow_key4_make_hash, as ingress makes them) and
 *    rte_hash_lookup_with_hash_bulk in bursts of 32, on a table created
 *    with sluiced's parameters and filled with N flows; packets visit the
 *    flows in a random order, so at 1M flows most lookups miss the cache.
 *    Also the lookup alone (keys and signatures precomputed).
 *  - what one random cache line from memory costs this machine, the
 *    yardstick of a lookup at 1M flows: reads of random lines of a 256 MiB
 *    buffer, independent (as many in flight as the core allows: the price
 *    of one line in a bulk lookup) and dependent (one at a time: the
 *    latency). A lookup touches three such lines (rte_hash's primary and
 *    secondary buckets, which it fetches both, and the key), and ingress a
 *    fourth, the flow's entry.
 *  - shortest-queue instance choice (SDNFV reports 15 ns):
 *    sl_lb_pick_queue over n instances whose rx rings hold random counts,
 *    and the flow-hash bucket choice (sl_lb_pick) for comparison.
 *  - wildcard rules (sluiced's flow rules, sluice-firewall): the time to
 *    build the rte_acl classifier over N random IPv4 rules (prefixes,
 *    port ranges, protocols, priorities; sluiced builds one per rule.add
 *    call), and the classification of a 5-tuple in bursts of 32 with it
 *    against the linear reference sl_match_find() (the naive lookup),
 *    half of the tuples made to fall inside a rule. Both answers are
 *    compared for every tuple: a difference fails the run.
 *
 * Prints one JSON object. Usage: sluice-micro [EAL options] -- [--quick]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_ring.h>

#include "sl_classifier.h"
#include "sl_dispatch.h"
#include "sl_match.h"
#include "sl_shared.h"

#define BURST 32

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

static void
tuple_of(uint32_t i, struct sl_5tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->proto = 17;
	t->src.v4 = rte_cpu_to_be_32(0x0a000000u | (i & 0xffffff));
	t->dst.v4 = rte_cpu_to_be_32(0xc0a80001u);
	t->sport = rte_cpu_to_be_16((uint16_t)(1024 + (i >> 24)));
	t->dport = rte_cpu_to_be_16(5000);
}

static double
ns_of(uint64_t cycles, uint64_t n)
{
	return (double)cycles * 1e9 / (double)rte_get_tsc_hz() / (double)n;
}

/* One flow count: returns 0, prints a JSON object. */
static int
bench_lookup(uint32_t flows, uint64_t lookups, int first)
{
	struct rte_hash_parameters hp = {
		.name = "sl_micro_flows",
		.entries = flows < 1024 ? 1024 : flows * 2,
		.key_len = sizeof(struct sl_flow_key4),
		.socket_id = (int)rte_socket_id(),
		.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
			      RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct rte_hash *h = rte_hash_create(&hp);
	uint32_t n_order = flows < 65536 ? 65536 : flows;
	uint32_t *order = malloc(sizeof(*order) * n_order);
	struct sl_flow_key4 *keys = malloc(sizeof(*keys) * n_order);
	hash_sig_t *sigs = malloc(sizeof(*sigs) * n_order);
	uint64_t full = 0, only = 0, done = 0, hits = 0;

	if (h == NULL || order == NULL || keys == NULL || sigs == NULL) {
		fprintf(stderr, "sluice-micro: out of memory for %u flows "
				"(give EAL more with -m)\n", flows);
		return -1;
	}
	for (uint32_t i = 0; i < flows; i++) {
		struct sl_5tuple t;
		struct sl_flow_key4 k;

		tuple_of(i, &t);
		if (rte_hash_add_key_with_hash(h, &k,
					       sl_flow_key4_make_hash(&t, &k)) <
		    0) {
			fprintf(stderr, "sluice-micro: table full at %u\n", i);
			return -1;
		}
	}
	/* A random visiting order of the flows (each flow as often). */
	for (uint32_t i = 0; i < n_order; i++)
		order[i] = i % flows;
	for (uint32_t i = n_order - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rnd() % (i + 1)), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (uint32_t i = 0; i < n_order; i++) {
		struct sl_5tuple t;

		tuple_of(order[i], &t);
		sigs[i] = sl_flow_key4_make_hash(&t, &keys[i]);
	}

	/* Key + signature + lookup, from the 5-tuple (what ingress does
	 * after parsing). */
	for (uint32_t pos = 0; done < lookups; pos = (pos + BURST) % n_order) {
		struct sl_flow_key4 kb[BURST];
		const void *kp[BURST];
		hash_sig_t sg[BURST];
		int32_t res[BURST];
		uint64_t t0;

		t0 = rte_rdtsc_precise();
		for (int i = 0; i < BURST; i++) {
			struct sl_5tuple t;

			tuple_of(order[(pos + i) % n_order], &t);
			sg[i] = sl_flow_key4_make_hash(&t, &kb[i]);
			kp[i] = &kb[i];
		}
		rte_hash_lookup_with_hash_bulk(h, kp, sg, BURST, res);
		full += rte_rdtsc_precise() - t0;
		for (int i = 0; i < BURST; i++)
			hits += res[i] >= 0;
		done += BURST;
	}
	/* The lookup alone (keys and signatures ready). */
	for (uint32_t pos = 0, d = 0; d < lookups;
	     pos = (pos + BURST) % n_order, d += BURST) {
		const void *kp[BURST];
		hash_sig_t sg[BURST];
		int32_t res[BURST];
		uint64_t t0;

		for (int i = 0; i < BURST; i++) {
			uint32_t k = (pos + i) % n_order;

			kp[i] = &keys[k];
			sg[i] = sigs[k];
		}
		t0 = rte_rdtsc_precise();
		rte_hash_lookup_with_hash_bulk(h, kp, sg, BURST, res);
		only += rte_rdtsc_precise() - t0;
	}
	printf("%s    {\"flows\": %u, \"lookups\": %" PRIu64
	       ", \"hits\": %" PRIu64 ", \"key_hash_lookup_ns\": %.2f, "
	       "\"key_hash_lookup_cycles\": %.1f, \"lookup_only_ns\": %.2f, "
	       "\"lookup_only_cycles\": %.1f}",
	       first ? "" : ",\n", flows, done, hits, ns_of(full, done),
	       (double)full / (double)done, ns_of(only, done),
	       (double)only / (double)done);
	rte_hash_free(h);
	free(order);
	free(keys);
	free(sigs);
	return hits == done ? 0 : -1;
}

/* Shortest-queue and flow-bucket choices among n instances. */
static int
bench_lb(uint16_t n, uint64_t picks, int first)
{
	struct sl_shm shm;
	struct sl_service svc;
	struct sl_nf_slot *nfs = calloc(n, sizeof(*nfs));
	uint16_t *live = calloc(n, sizeof(*live));
	uint64_t c_queue = 0, c_flow = 0, sum = 0;
	uint32_t rr = 0;

	if (nfs == NULL || live == NULL)
		return -1;
	memset(&shm, 0, sizeof(shm));
	memset(&svc, 0, sizeof(svc));
	shm.nfs = nfs;
	shm.max_nfs = n;
	shm.services = &svc;
	shm.max_services = 1;
	svc.live = live;
	svc.n_live = n;
	svc.used = 1;
	svc.lb_mode = SL_LB_FLOW;
	for (uint16_t i = 0; i < n; i++) {
		char name[RTE_RING_NAMESIZE];
		void *obj = &shm;
		uint32_t fill = (uint32_t)(rnd() % 512);

		snprintf(name, sizeof(name), "sl_micro_%u_%u", n, i);
		nfs[i].rx = rte_ring_create(name, 1024, (int)rte_socket_id(),
					    RING_F_SC_DEQ);
		if (nfs[i].rx == NULL)
			return -1;
		for (uint32_t k = 0; k < fill; k++)
			rte_ring_enqueue(nfs[i].rx, obj);
		nfs[i].state = SL_NF_RUNNING;
		nfs[i].service = 0;
		live[i] = i;
	}
	for (uint16_t b = 0; b < SL_LB_BUCKETS; b++)
		svc.bucket[b] = (uint16_t)(b % n);

	for (uint64_t done = 0; done < picks; done += 1024) {
		uint64_t t0 = rte_rdtsc_precise();

		for (int i = 0; i < 1024; i++)
			sum += sl_lb_pick_queue(&shm, &svc, n);
		c_queue += rte_rdtsc_precise() - t0;
	}
	for (uint64_t done = 0; done < picks; done += 1024) {
		uint64_t t0 = rte_rdtsc_precise();

		for (uint32_t i = 0; i < 1024; i++)
			sum += sl_lb_pick(&shm, 0, (uint32_t)(done + i) * 2654435761u,
					  &rr);
		c_flow += rte_rdtsc_precise() - t0;
	}
	printf("%s    {\"instances\": %u, \"picks\": %" PRIu64
	       ", \"queue_ns\": %.2f, \"queue_cycles\": %.1f, "
	       "\"flow_bucket_ns\": %.2f, \"flow_bucket_cycles\": %.1f, "
	       "\"checksum\": %" PRIu64 "}",
	       first ? "" : ",\n", n, picks, ns_of(c_queue, picks),
	       (double)c_queue / (double)picks, ns_of(c_flow, picks),
	       (double)c_flow / (double)picks, sum);
	for (uint16_t i = 0; i < n; i++)
		rte_ring_free(nfs[i].rx);
	free(nfs);
	free(live);
	return 0;
}

#define RULE_TUPLES 4096

/* A random IPv4 prefix of 8-28 bits into addr/mask/len. */
static void
rand_prefix(uint32_t *addr, uint32_t *mask, uint8_t *len)
{
	uint8_t l = (uint8_t)(8 + rnd() % 21);
	uint32_t m = ~0u << (32 - l);

	*len = l;
	*mask = rte_cpu_to_be_32(m);
	*addr = rte_cpu_to_be_32((uint32_t)(0x0a000000u | (rnd() & 0xffffff)) & m);
}

/* N rules: returns 0, prints a JSON object. */
static int
bench_rules(uint32_t n, uint64_t lookups, int builds, int first)
{
	struct sl_match *m = calloc(n, sizeof(*m));
	const struct sl_match **mp = calloc(n, sizeof(*mp));
	int32_t *prio = calloc(n, sizeof(*prio));
	struct sl_5tuple *t = calloc(RULE_TUPLES, sizeof(*t));
	const struct sl_5tuple *tp[BURST];
	struct sl_classifier *c = NULL;
	uint32_t res[BURST], hits = 0;
	uint64_t build = UINT64_MAX, acl, lin, lin_n, lin_hits = 0, t0;
	char err[256];
	int rc = -1;

	if (m == NULL || mp == NULL || prio == NULL || t == NULL)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t lo = (uint16_t)(rnd() % 60000);

		sl_match_init(&m[i]);
		m[i].family = 4;
		m[i].proto_any = 0;
		m[i].proto = rnd() & 1 ? 17 : 6;
		rand_prefix(&m[i].src[0], &m[i].src_mask[0], &m[i].src_len);
		rand_prefix(&m[i].dst[0], &m[i].dst_mask[0], &m[i].dst_len);
		m[i].dport_lo = lo;
		m[i].dport_hi = (uint16_t)(lo + rnd() % 1000);
		mp[i] = &m[i];
		prio[i] = (int32_t)(rnd() % 100);
	}
	for (uint32_t i = 0; i < RULE_TUPLES; i++) {
		const struct sl_match *r = &m[rnd() % n];

		t[i].family = 4;
		t[i].proto = rnd() & 1 ? 17 : 6;
		t[i].src.v4 = rte_cpu_to_be_32(0x0a000000u | (rnd() & 0xffffff));
		t[i].dst.v4 = rte_cpu_to_be_32(0x0a000000u | (rnd() & 0xffffff));
		t[i].sport = rte_cpu_to_be_16((uint16_t)rnd());
		t[i].dport = rte_cpu_to_be_16((uint16_t)rnd());
		if (i & 1) { /* inside rule r */
			t[i].proto = r->proto;
			t[i].src.v4 = r->src[0] | ((uint32_t)rnd() & ~r->src_mask[0]);
			t[i].dst.v4 = r->dst[0] | ((uint32_t)rnd() & ~r->dst_mask[0]);
			t[i].dport = rte_cpu_to_be_16(
				(uint16_t)(r->dport_lo +
					   rnd() % (r->dport_hi - r->dport_lo + 1u)));
		}
	}
	for (int b = 0; b < builds; b++) {
		sl_classifier_free(c);
		c = NULL;
		t0 = rte_rdtsc_precise();
		if (sl_classifier_build(mp, prio, n, "micro", &c, err,
					sizeof(err)) != 0) {
			fprintf(stderr, "sluice-micro: %u rules: %s\n", n, err);
			goto out;
		}
		build = RTE_MIN(build, rte_rdtsc_precise() - t0);
	}
	/* Same answers, every tuple. */
	for (uint32_t i = 0; i < RULE_TUPLES; i += BURST) {
		for (uint32_t k = 0; k < BURST; k++)
			tp[k] = &t[i + k];
		sl_classifier_lookup(c, tp, NULL, BURST, res);
		for (uint32_t k = 0; k < BURST; k++) {
			uint32_t want = sl_match_find(mp, prio, n, &t[i + k], 0);

			if (res[k] != want) {
				fprintf(stderr,
					"sluice-micro: %u rules: rte_acl says %u, "
					"the linear lookup %u for tuple %u\n",
					n, res[k], want, i + k);
				goto out;
			}
			hits += want != 0;
		}
	}
	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < lookups; i += BURST) {
		uint32_t base = (uint32_t)(i % RULE_TUPLES);

		for (uint32_t k = 0; k < BURST; k++)
			tp[k] = &t[base + k];
		sl_classifier_lookup(c, tp, NULL, BURST, res);
	}
	acl = rte_rdtsc_precise() - t0;
	/* The linear lookup costs n compares: fewer of them at large n. */
	lin_n = RTE_MAX((uint64_t)BURST, RTE_MIN(lookups, 400000000ull / n) /
					     BURST * BURST);
	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < lin_n; i++)
		lin_hits += sl_match_find(mp, prio, n, &t[i % RULE_TUPLES],
					  0) != 0;
	lin = rte_rdtsc_precise() - t0;
	printf("%s    {\"rules\": %u, \"build_ms\": %.3f, \"lookups\": %" PRIu64
	       ", \"matched\": %.3f, \"acl_ns\": %.2f, \"acl_cycles\": %.1f, "
	       "\"linear_lookups\": %" PRIu64 ", \"linear_ns\": %.2f, "
	       "\"linear_cycles\": %.1f, \"linear_matched\": %.3f}",
	       first ? "" : ",\n", n,
	       (double)build * 1e3 / (double)rte_get_tsc_hz(), lookups,
	       (double)hits / RULE_TUPLES, ns_of(acl, lookups),
	       (double)acl / (double)lookups, lin_n, ns_of(lin, lin_n),
	       (double)lin / (double)lin_n, (double)lin_hits / (double)lin_n);
	rc = 0;
out:
	sl_classifier_free(c);
	free(m);
	free(mp);
	free(prio);
	free(t);
	return rc;
}

/* Random cache lines of a buffer larger than any cache: prints a JSON
 * object, returns 0. */
static int
bench_memory(uint64_t reads)
{
	const size_t size = (size_t)256 << 20, lines = size / 64;
	const uint32_t n_idx = 1u << 20;
	uint32_t *idx = malloc(sizeof(*idx) * n_idx);
	volatile uint8_t *buf = malloc(size);
	uint64_t t0, indep, dep;
	size_t j = 0;

	if (idx == NULL || buf == NULL) {
		fprintf(stderr, "sluice-micro: out of memory for the 256 MiB "
				"buffer\n");
		free(idx);
		free((void *)buf);
		return -1;
	}
	for (size_t i = 0; i < size; i += 4096)
		buf[i] = 0; /* every page present (and every byte 0) */
	for (uint32_t i = 0; i < n_idx; i++)
		idx[i] = (uint32_t)(rnd() % lines);
	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < reads; i++)
		(void)buf[(size_t)idx[i % n_idx] * 64]; /* volatile: read */
	indep = rte_rdtsc_precise() - t0;
	/* The next line depends on the last read (which is 0: the index
	 * stays random). */
	t0 = rte_rdtsc_precise();
	for (uint64_t i = 0; i < reads / 8; i++)
		j = (idx[i % n_idx] + buf[j * 64]) % lines;
	dep = rte_rdtsc_precise() - t0;
	printf("  \"memory\": {\"buffer_mib\": %zu, \"reads\": %" PRIu64
	       ", \"random_line_cycles\": %.1f, \"random_line_ns\": %.2f, "
	       "\"latency_cycles\": %.1f, \"latency_ns\": %.1f},\n",
	       size >> 20, reads, (double)indep / (double)reads,
	       ns_of(indep, reads), (double)dep / (double)(reads / 8),
	       ns_of(dep, reads / 8));
	free(idx);
	free((void *)buf);
	return 0;
}

int
main(int argc, char **argv)
{
	static const uint32_t flows[] = {1, 10000, 100000, 1000000};
	static const uint16_t insts[] = {2, 4, 8, 16};
	static const uint32_t rules[] = {1, 10, 100, 1000, 4096};
	uint64_t lookups = 20000000, picks = 20000000;
	int rc, bad = 0;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "sluice-micro: EAL init failed: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	for (int i = rc + 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			lookups = 2000000;
			picks = 2000000;
		} else {
			fprintf(stderr, "sluice-micro: unknown option %s "
					"(only --quick)\n", argv[i]);
			return 2;
		}
	}
	printf("{\"tsc_hz\": %" PRIu64 ", \"burst\": %d,\n", rte_get_tsc_hz(),
	       BURST);
	bad |= bench_memory(lookups);
	printf("  \"lookup\": [\n");
	for (size_t i = 0; i < RTE_DIM(flows); i++)
		bad |= bench_lookup(flows[i], lookups, i == 0);
	printf("\n  ],\n  \"lb\": [\n");
	for (size_t i = 0; i < RTE_DIM(insts); i++)
		bad |= bench_lb(insts[i], picks, i == 0);
	printf("\n  ],\n  \"rules\": [\n");
	for (size_t i = 0; i < RTE_DIM(rules); i++)
		bad |= bench_rules(rules[i], picks / 4,
				   rules[i] >= 1000 && picks < 20000000 ? 1 : 3,
				   i == 0);
	printf("\n  ]\n}\n");
	rte_eal_cleanup();
	return bad ? 1 : 0;
}
