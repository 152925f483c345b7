/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the files of test_pkt (test_pkt.c: parsing, tuples, hashes,
 * formatting; test_pkt_hdr.c: mbuf wrappers, header accessors, the fuzz)
 * share: one cmocka group, "pkt", whose list is in test_pkt.c's main.
 */
#ifndef SL_TEST_PKT_H
#define SL_TEST_PKT_H

#include <stdint.h>

#include "pkt_build.h"

/* Frames the tests of both files build (test_pkt.c). */
void build_tcp4(struct frame *f);
void build_udp6_ext(struct frame *f);
void build_ext_chain(struct frame *f, unsigned n_ext);

/* xorshift64* with a fixed seed: the same sequence on every run. */
extern uint64_t rng_state;
uint64_t rng(void);

/* The tests of test_pkt_hdr.c. */
void test_mbuf_wrappers(void **state);
void test_hdr_tcp4(void **state);
void test_hdr_udp6_ext(void **state);
void test_hdr_vlans(void **state);
void test_hdr_ipv4_options(void **state);
void test_hdr_fragments(void **state);
void test_flow_tuple_of_fragments(void **state);
void test_hdr_wrong_protocol(void **state);
void test_hdr_malformed(void **state);
void test_hdr_stale_info(void **state);
void test_fuzz(void **state);

/* The tests of test_pkt_cksum.c. */
void test_cksum_addresses(void **state);
void test_cksum_word(void **state);
void test_cksum_host_order(void **state);
void test_cksum_udp_zero(void **state);
void test_5tuple_canonical(void **state);

#endif
