/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frames for tests/unit/test_nat.c: Ethernet/IPv4 packets with every
 * checksum computed in full (so that sluice-nat's incremental updates are
 * checked against a recomputation), ICMP echo and errors, fragments, and
 * sending one through the NF's ops; the configuration files. Include after <cmocka.h>, nf_stub.h
 * and pkt_build.h.
 */
#ifndef SL_TEST_NAT_FRAMES_H
#define SL_TEST_NAT_FRAMES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "sluice/nf.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

#define L3 14

/* Computes every checksum of an Ethernet/IPv4 frame in full: IPv4, and
 * TCP, UDP (unless udp_none) or ICMP over the whole datagram. */
#define fix_cksums(f, udp_none) frame_ip4_cksums(f, L3, udp_none)

static inline void
mk(struct frame *f, uint8_t proto, uint32_t src, uint16_t sport, uint32_t dst,
   uint16_t dport)
{
	frame_ip4(f, proto, src, sport, dst, dport, 12);
	fix_cksums(f, 0);
}

/* ICMP echo request (type 8) or reply (0) with identifier id. */
static inline void
mk_echo(struct frame *f, uint8_t type, uint32_t src, uint32_t dst, uint16_t id)
{
	frame_ip4(f, IPPROTO_ICMP, src, 0, dst, 0, 16);
	f->b[L3 + 20] = type;
	wr16(f, L3 + 24, id);
	wr16(f, L3 + 26, 7); /* sequence */
	fix_cksums(f, 0);
}

/* An ICMP error (type, code) from src to dst carrying the first 28 bytes
 * of the IP datagram of *about. */
static inline void
mk_error(struct frame *f, uint8_t type, uint8_t code, uint32_t src,
	 uint32_t dst, const struct frame *about)
{
	memset(f, 0, sizeof(*f));
	put_eth(f, 0x0800, 0, NULL);
	put_ipv4(f, IPPROTO_ICMP, src, dst, 8 + 28, 0, 0);
	put8(f, type);
	put8(f, code);
	put16(f, 0);
	put32(f, 0);
	put(f, about->b + L3, 28);
	fix_cksums(f, 0);
}

/* Sends f in by port; returns the verdict, the packet as it left in
 * *got. */
static inline sl_verdict_t
send1(uint64_t now, uint16_t port, const struct frame *f, struct frame *got)
{
	struct rte_mbuf *m = stub_mbuf(f->b, f->len);
	sl_verdict_t v;

	assert_non_null(m);
	m->port = port;
	stub_now_ns = now;
	stub_ops->process(stub_nf(), &m, 1);
	assert_true(stub_verdict_set(m));
	v = sl_pkt_verdict(m);
	if (got != NULL) {
		got->len = f->len;
		memcpy(got->b, rte_pktmbuf_mtod(m, void *), f->len);
	}
	stub_mbuf_free(m);
	return v;
}

static inline void
assert_frame(const struct frame *got, const struct frame *want)
{
	assert_int_equal(got->len, want->len);
	for (uint32_t i = 0; i < want->len; i++)
		if (got->b[i] != want->b[i])
			fail_msg("byte %u: got %02x, want %02x", i, got->b[i],
				 want->b[i]);
}

/* in by port, must leave translated as want, by port to. */
static inline void
expect_xlate(uint64_t now, uint16_t port, const struct frame *f,
	     const struct frame *want, uint16_t to)
{
	struct frame got;

	assert_int_equal(send1(now, port, f, &got), SL_OUT(to));
	assert_frame(&got, want);
}

static inline void
expect_drop(uint64_t now, uint16_t port, const struct frame *f)
{
	struct frame got;

	assert_int_equal(send1(now, port, f, &got), SL_DROP);
	assert_frame(&got, f); /* untouched */
}

static inline uint16_t
rd_port(const struct frame *f, uint32_t off)
{
	return (uint16_t)(f->b[off] << 8 | f->b[off + 1]);
}

/* Fragment k (0 or 1) of the datagram in *full, split after `cut` bytes
 * of its L4 part (a multiple of 8): its own IPv4 header and checksum. */
static inline void
fragment(struct frame *f, const struct frame *full, uint32_t cut, int k)
{
	uint32_t l4len = full->len - L3 - 20;
	uint32_t from = k == 0 ? 0 : cut, n = k == 0 ? cut : l4len - cut;

	memset(f, 0, sizeof(*f));
	put(f, full->b, L3 + 20);
	put(f, full->b + L3 + 20 + from, n);
	wr16(f, L3 + 2, (uint16_t)(20 + n));
	wr16(f, L3 + 6, (uint16_t)(k == 0 ? 0x2000 : cut / 8));
	frame_ip4_hdr_cksum(f, L3);
}

/* A hairpinned frame goes back to the MAC it came from. */
static inline void
swap_macs(struct frame *f)
{
	uint8_t t[6];

	memcpy(t, f->b, 6);
	memcpy(f->b, f->b + 6, 6);
	memcpy(f->b + 6, t, 6);
}

/* A temporary .yaml file holding text (the caller unlinks and frees its
 * path). */
#define write_file(text) nf_test_write_file("sl_nat_test_", ".yaml", text)

#endif /* SL_TEST_NAT_FRAMES_H */
