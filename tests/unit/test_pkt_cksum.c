/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the incremental checksum update of sluice/pkt.h
 * (sl_cksum_*, RFC 1624), third part of the group "pkt" (its list is in
 * test_pkt.c's main): random IPv4 and IPv6 TCP/UDP headers whose fields
 * change as the NFs change them (a 16-bit word: TTL, DSCP, a port, an
 * ICMP type; a 4-byte and a 16-byte address), each checksum updated and
 * compared with DPDK's full recomputation, in network and in host order;
 * and the 5-tuple direction helpers (sl_5tuple_swap, sl_5tuple_canonical).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <netinet/in.h>

#include <cmocka.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "sluice/pkt.h"

#include "test_pkt.h"

#define CK_ROUNDS 20000
#define CK_L4_LEN 64 /* the L4 header and its payload */

/* An IPv4 or IPv6 header followed by a TCP or UDP datagram. */
struct ck_pkt {
	union {
		struct rte_ipv4_hdr v4;
		struct rte_ipv6_hdr v6;
	} ip;
	uint8_t l4[CK_L4_LEN];
	int v6;
	uint8_t proto;
};

static void
fill_random(void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rng();
}

static uint16_t
rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* The L4 checksum field: TCP's at byte 16, UDP's at byte 6. */
static uint8_t *
l4_cksum(struct ck_pkt *k)
{
	return k->l4 + (k->proto == IPPROTO_TCP ? 16 : 6);
}

static void
st16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* The L4 checksum as a full computation gives it (UDP: 0 as 0xffff). */
static uint16_t
full_l4(struct ck_pkt *k)
{
	uint8_t *ck = l4_cksum(k);
	uint16_t saved = rd16(ck), r;

	st16(ck, 0);
	r = k->v6 ? rte_ipv6_udptcp_cksum(&k->ip.v6, k->l4)
		  : rte_ipv4_udptcp_cksum(&k->ip.v4, k->l4);
	st16(ck, saved);
	return r;
}

static uint16_t
full_ip4(struct ck_pkt *k)
{
	uint16_t saved = k->ip.v4.hdr_checksum, r;

	k->ip.v4.hdr_checksum = 0;
	r = rte_ipv4_cksum(&k->ip.v4);
	k->ip.v4.hdr_checksum = saved;
	return r;
}

/* A random packet with right checksums. */
static void
random_pkt(struct ck_pkt *k, int v6, uint8_t proto)
{
	memset(k, 0, sizeof(*k));
	k->v6 = v6;
	k->proto = proto;
	fill_random(k->l4, sizeof(k->l4));
	if (proto == IPPROTO_UDP)
		((struct rte_udp_hdr *)(void *)k->l4)->dgram_len =
			rte_cpu_to_be_16(CK_L4_LEN);
	else
		((struct rte_tcp_hdr *)(void *)k->l4)->data_off = 5 << 4;
	if (v6) {
		fill_random(&k->ip.v6, sizeof(k->ip.v6));
		k->ip.v6.payload_len = rte_cpu_to_be_16(CK_L4_LEN);
		k->ip.v6.proto = proto;
	} else {
		fill_random(&k->ip.v4, sizeof(k->ip.v4));
		k->ip.v4.version_ihl = 0x45;
		k->ip.v4.total_length = rte_cpu_to_be_16(20 + CK_L4_LEN);
		k->ip.v4.next_proto_id = proto;
		k->ip.v4.hdr_checksum = full_ip4(k);
	}
	st16(l4_cksum(k), full_l4(k));
}

static void
check_pkt(struct ck_pkt *k)
{
	assert_int_equal(rd16(l4_cksum(k)), full_l4(k));
	if (!k->v6)
		assert_int_equal(k->ip.v4.hdr_checksum, full_ip4(k));
}

/* Applies a change of an address (4 or 16 bytes) to both checksums. */
static void
apply_addr(struct ck_pkt *k, uint32_t d)
{
	uint8_t *ck = l4_cksum(k);
	uint16_t v = rd16(ck);

	if (!k->v6)
		k->ip.v4.hdr_checksum =
			sl_cksum_apply(k->ip.v4.hdr_checksum, d);
	st16(ck, k->proto == IPPROTO_UDP ? sl_cksum_apply_udp(v, d)
					 : sl_cksum_apply(v, d));
}

/* Addresses (lb, nat): one delta over 4 or 16 bytes, two checksums. */
void
test_cksum_addresses(void **state)
{
	static const uint8_t protos[2] = {IPPROTO_TCP, IPPROTO_UDP};

	(void)state;
	for (unsigned r = 0; r < CK_ROUNDS; r++) {
		struct ck_pkt k;
		uint8_t old[16], new[16], *f;
		int v6 = (int)(r & 1);
		unsigned len = v6 ? 16 : 4;
		uint32_t d;

		random_pkt(&k, v6, protos[(r >> 1) & 1]);
		if (v6)
			f = (r & 4) ? k.ip.v6.src_addr : k.ip.v6.dst_addr;
		else
			f = (r & 4) ? (uint8_t *)&k.ip.v4.src_addr
				    : (uint8_t *)&k.ip.v4.dst_addr;
		fill_random(new, len);
		memcpy(old, f, len);
		memcpy(f, new, len);
		d = sl_cksum_delta(old, new, len);
		/* The delta of the whole field is the sum of its words'. */
		if (len == 4)
			assert_int_equal(sl_cksum_apply(0x1234, d),
					 sl_cksum_update16(
						 sl_cksum_update16(0x1234,
								   rd16(old),
								   rd16(new)),
						 rd16(old + 2), rd16(new + 2)));
		apply_addr(&k, d);
		check_pkt(&k);
	}
}

/* One 16-bit word as stored (nat's ports, l3fwd's TTL, an ICMP type). */
void
test_cksum_word(void **state)
{
	(void)state;
	for (unsigned r = 0; r < CK_ROUNDS; r++) {
		struct ck_pkt k;
		uint16_t old, new, ck;
		uint8_t *f;

		random_pkt(&k, 0, (r & 1) ? IPPROTO_UDP : IPPROTO_TCP);
		/* A word of the IPv4 header (not its checksum): TTL/proto. */
		f = &k.ip.v4.time_to_live;
		memcpy(&old, f, 2);
		k.ip.v4.time_to_live = (uint8_t)rng();
		memcpy(&new, f, 2);
		k.ip.v4.hdr_checksum =
			sl_cksum_update16(k.ip.v4.hdr_checksum, old, new);
		/* A port, covered by the L4 checksum only. */
		f = k.l4 + ((r & 2) ? 0 : 2);
		memcpy(&old, f, 2);
		new = (uint16_t)rng();
		memcpy(f, &new, 2);
		ck = rd16(l4_cksum(&k));
		ck = k.proto == IPPROTO_UDP
			     ? sl_cksum_apply_udp(ck,
						  sl_cksum_delta(&old, &new, 2))
			     : sl_cksum_update16(ck, old, new);
		st16(l4_cksum(&k), ck);
		check_pkt(&k);
	}
}

/* Host order throughout (the shaper's DSCP): the same checksum. */
void
test_cksum_host_order(void **state)
{
	(void)state;
	for (unsigned r = 0; r < CK_ROUNDS; r++) {
		struct ck_pkt k;
		struct rte_ipv4_hdr *ip;
		uint16_t old, new, ck;

		random_pkt(&k, 0, IPPROTO_TCP);
		ip = &k.ip.v4;
		old = (uint16_t)(ip->version_ihl << 8 | ip->type_of_service);
		ip->type_of_service = (uint8_t)rng();
		new = (uint16_t)(ip->version_ihl << 8 | ip->type_of_service);
		ck = rte_be_to_cpu_16(ip->hdr_checksum);
		ip->hdr_checksum =
			rte_cpu_to_be_16(sl_cksum_update16(ck, old, new));
		check_pkt(&k);
	}
}

/* UDP's 0: none, kept; a computed 0 sent as 0xffff. */
void
test_cksum_udp_zero(void **state)
{
	(void)state;
	assert_int_equal(sl_cksum_apply_udp(0, 0x1234), 0);
	/* ~0x1234 + 0x1234 = 0xffff: the update computes 0. */
	assert_int_equal(sl_cksum_apply(0x1234, 0x1234), 0);
	assert_int_equal(sl_cksum_apply_udp(0x1234, 0x1234), 0xffff);
	assert_int_equal(sl_cksum_apply_udp(0x1234, 0), 0x1234);
	/* No change, no new checksum; the delta of equal bytes is neutral. */
	assert_int_equal(sl_cksum_apply(0xabcd, sl_cksum_delta("ab", "ab", 2)),
			 0xabcd);
	assert_int_equal(sl_cksum_update16(0xabcd, 0x1111, 0x1111), 0xabcd);
}

/* sl_5tuple_canonical(): both directions give one key; the flag says
 * which was turned around; sl_5tuple_swap() twice is the identity. */
void
test_5tuple_canonical(void **state)
{
	(void)state;
	for (unsigned r = 0; r < CK_ROUNDS; r++) {
		struct sl_5tuple t, back, rev, a, b;
		int ra, rb, c;

		memset(&t, 0, sizeof(t));
		t.family = (r & 1) ? 6 : 4;
		t.proto = IPPROTO_TCP;
		t.sport = (uint16_t)rng();
		t.dport = (r & 6) == 0 ? t.sport : (uint16_t)rng();
		if (t.family == 4) {
			t.src.v4 = (uint32_t)rng();
			t.dst.v4 = (r & 8) ? t.src.v4 : (uint32_t)rng();
		} else {
			fill_random(t.src.v6, 16);
			if (r & 8)
				memcpy(t.dst.v6, t.src.v6, 16);
			else
				fill_random(t.dst.v6, 16);
		}
		back = t;
		sl_5tuple_swap(&back);
		sl_5tuple_swap(&back);
		assert_memory_equal(&back, &t, sizeof(t));
		rev = t;
		sl_5tuple_swap(&rev);
		a = t;
		b = rev;
		ra = sl_5tuple_canonical(&a);
		rb = sl_5tuple_canonical(&b);
		assert_memory_equal(&a, &b, sizeof(a));
		/* The lower address, then the lower port, as the source. */
		c = t.family == 4 ? memcmp(&a.src.v4, &a.dst.v4, 4)
				  : memcmp(a.src.v6, a.dst.v6, 16);
		assert_true(c < 0 || (c == 0 && a.sport <= a.dport));
		/* Exactly one direction is turned around, none if the tuple
		 * is its own reverse (same address, same port). */
		assert_int_equal(ra + rb,
				 memcmp(&t, &rev, sizeof(t)) == 0 ? 0 : 1);
		/* Turning a back by its flag gives t. */
		if (ra)
			sl_5tuple_swap(&a);
		assert_memory_equal(&a, &t, sizeof(t));
	}
}
