/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-pingpong CPU_A CPU_B [ROUND_TRIPS]: how long one cache line takes
 * to go from CPU_A to CPU_B and back, the cost every cross-core hand-off
 * pays (a ring's indexes, a packet buffer's lines). Two threads pinned to
 * the two CPUs take turns writing one counter each and waiting for the
 * other's. Prints one JSON object: the median of 5 batches, in TSC cycles
 * (x86 only) and in ns.
 *
 * bench/port.py runs it before and after each run: on this VM the two vCPUs
 * sit at times on cores that share an L3 (a round trip of about 300 cycles)
 * and at times not (about 1,300), and every pipeline over two cores runs at
 * a quarter of its rate in the second state (docs/performance.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_TSC 1
#endif

#define BATCHES 5

static _Alignas(64) _Atomic uint64_t g_ping;
static _Alignas(64) _Atomic uint64_t g_pong;
static _Atomic int g_ready; /* 1: ponger pinned, -1: it could not be */
static uint64_t g_rounds;

static int
pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *
ponger(void *arg)
{
	int cpu = *(int *)arg;
	uint64_t total = g_rounds * BATCHES;

	if (pin(cpu) != 0) {
		atomic_store(&g_ready, -1);
		return NULL;
	}
	atomic_store(&g_ready, 1);
	for (uint64_t i = 1; i <= total; i++) {
		while (atomic_load_explicit(&g_ping, memory_order_acquire) != i)
			;
		atomic_store_explicit(&g_pong, i, memory_order_release);
	}
	return NULL;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
parse_num(const char *what, const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || *out < lo ||
	    *out > hi) {
		fprintf(stderr, "sluice-pingpong: %s '%s' is not a number in "
				"%ld..%ld\n", what, s, lo, hi);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	double cyc[BATCHES], ns[BATCHES];
	long a, b, rounds = 20000;
	pthread_t t;
	int cpu_b, ready, rc;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: sluice-pingpong CPU_A CPU_B "
				"[ROUND_TRIPS per batch, 20000]\n");
		return 2;
	}
	if (parse_num("CPU_A", argv[1], 0, CPU_SETSIZE - 1, &a) ||
	    parse_num("CPU_B", argv[2], 0, CPU_SETSIZE - 1, &b) ||
	    (argc == 4 &&
	     parse_num("ROUND_TRIPS", argv[3], 1, 100000000, &rounds)))
		return 2;
	if (a == b) {
		fprintf(stderr, "sluice-pingpong: CPU_A and CPU_B are both %ld: "
				"give two different CPUs\n", a);
		return 2;
	}
	g_rounds = (uint64_t)rounds;
	cpu_b = (int)b;
	rc = pin((int)a); /* pthread calls return the error, errno is not set */
	if (rc != 0) {
		fprintf(stderr, "sluice-pingpong: cannot run on CPU %ld: %s "
				"(give CPUs this process may use: taskset -p $$)\n",
			a, strerror(rc));
		return 1;
	}
	rc = pthread_create(&t, NULL, ponger, &cpu_b);
	if (rc != 0) {
		fprintf(stderr, "sluice-pingpong: cannot start a thread: %s\n",
			strerror(rc));
		return 1;
	}
	while ((ready = atomic_load(&g_ready)) == 0)
		;
	if (ready < 0) {
		pthread_join(t, NULL);
		fprintf(stderr, "sluice-pingpong: cannot run on CPU %ld (give "
				"CPUs this process may use: taskset -p $$)\n", b);
		return 1;
	}
	for (int k = 0; k < BATCHES; k++) {
		uint64_t first = (uint64_t)k * g_rounds + 1;
		uint64_t t0 = now_ns();
#ifdef HAVE_TSC
		uint64_t c0 = __rdtsc();
#endif

		for (uint64_t i = first; i < first + g_rounds; i++) {
			atomic_store_explicit(&g_ping, i, memory_order_release);
			while (atomic_load_explicit(&g_pong,
						    memory_order_acquire) != i)
				;
		}
#ifdef HAVE_TSC
		cyc[k] = (double)(__rdtsc() - c0) / (double)g_rounds;
#else
		cyc[k] = 0;
#endif
		ns[k] = (double)(now_ns() - t0) / (double)g_rounds;
	}
	pthread_join(t, NULL);
	qsort(cyc, BATCHES, sizeof(cyc[0]), cmp_double);
	qsort(ns, BATCHES, sizeof(ns[0]), cmp_double);
	printf("{\"cpus\": [%ld, %ld], \"round_trips\": %" PRIu64
	       ", \"round_trip_ns\": %.1f",
	       a, b, g_rounds * BATCHES, ns[BATCHES / 2]);
#ifdef HAVE_TSC
	printf(", \"round_trip_cycles\": %.1f", cyc[BATCHES / 2]);
#else
	printf(", \"round_trip_cycles\": null");
#endif
	printf("}\n");
	return 0;
}
