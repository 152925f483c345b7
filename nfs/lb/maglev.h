/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Maglev consistent hashing (Eisenbud et al., NSDI 2016, section 3.4):
 * the lookup table population of the paper's Pseudocode 1, with weights.
 * Pure code (no DPDK), so the unit tests check its properties directly.
 */
#ifndef SL_LB_MAGLEV_H
#define SL_LB_MAGLEV_H

#include <stdint.h>

/** An entry of the table that no backend owns (no live backend). */
#define LB_MAGLEV_NONE UINT16_MAX

/** One backend as the population sees it. */
struct lb_maglev_in {
	const char *name; /**< its permutation comes from its name only */
	uint32_t weight;  /**< 0: takes no entry */
	uint16_t id;      /**< what the table stores for it */
};

/** 1 if n is a prime, else 0. */
int lb_is_prime(uint32_t n);

/** The 64-bit FNV-1a hash of s with a seed mixed in (h1, h2 of the paper). */
uint64_t lb_name_hash(const char *s, uint64_t seed);

/**
 * Fills table[0..size) (size a prime) with the ids of the backends in
 * in[0..n), each taking a share of the entries in proportion to its
 * weight. Backend i's preference list is permutation[i][j] = (offset +
 * j * skip) mod size, offset = h1(name) mod size, skip = h2(name) mod
 * (size - 1) + 1 (the paper's); in each round every backend with weight w
 * earns w credits and takes its next free preferred entry for every
 * max-weight credits it holds. The backends are taken in order of their
 * names, so the table depends on the set, not on the order of in[].
 * next[] is scratch of n entries. Entries are LB_MAGLEV_NONE when no
 * backend has a weight. Returns the number of backends with a weight.
 */
uint32_t lb_maglev_populate(const struct lb_maglev_in *in, uint32_t n,
			    uint16_t *table, uint32_t size, uint32_t *next);

#endif /* SL_LB_MAGLEV_H */
