/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Bounds-checked packet header helpers.
 *
 * Every parser takes the bytes and their length and never reads past them:
 * a truncated or malformed header yields an error (negative errno), never an
 * out-of-bounds read. Only the first mbuf segment is parsed; headers that
 * straddle segments are reported as truncated.
 */
#ifndef SLUICE_PKT_H
#define SLUICE_PKT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;

#define SL_ETHER_TYPE_IPV4 0x0800
#define SL_ETHER_TYPE_IPV6 0x86DD
#define SL_ETHER_TYPE_VLAN 0x8100
#define SL_ETHER_TYPE_QINQ 0x88A8

/** What sl_parse() found. Offsets are from the start of the frame. */
struct sl_pkt_info {
	uint16_t ether_type; /**< after VLAN tags, host order */
	uint16_t vlan_tci;   /**< outermost VLAN TCI, host order; 0 if none */
	uint8_t n_vlans;     /**< number of VLAN tags (at most 2 parsed) */
	uint8_t ip_version;  /**< 4, 6, or 0 if not IP */
	uint8_t l4_proto;    /**< IPPROTO_* after IPv6 extension headers */
	uint8_t fragment;    /**< 1 if an IP fragment (first or later) */
	uint8_t later_fragment; /**< 1 if not the first fragment: no L4 ports */
	uint8_t ip_options;  /**< 1 if IPv4 options / IPv6 ext headers seen */
	uint16_t l3_off;     /**< offset of the IP header */
	uint16_t l4_off;     /**< offset of the L4 header (0 if none) */
	uint16_t l4_len;     /**< bytes available from l4_off to frame end */
	uint16_t frame_len;  /**< bytes parsed (data length) */
};

/** A flow key. Addresses and ports in network byte order. */
struct sl_5tuple {
	uint8_t family; /**< 4 or 6 */
	uint8_t proto;  /**< IPPROTO_* */
	uint16_t sport;
	uint16_t dport;
	uint16_t pad;
	union {
		uint32_t v4;
		uint8_t v6[16];
	} src, dst;
};

/**
 * Parses Ethernet, up to two VLAN tags, IPv4 or IPv6 (with extension
 * headers: hop-by-hop, routing, fragment, destination options) and locates
 * the L4 header.
 *
 * @return 0 on success (also for non-IP frames: ip_version is then 0);
 *   -EINVAL for malformed headers (bad IHL, bad version, total length
 *   shorter than the header); -EMSGSIZE for truncated ones.
 */
int sl_parse(const void *data, uint32_t len, struct sl_pkt_info *info);

/**
 * Extracts the 5-tuple of an IP packet. Ports are 0 for protocols without
 * ports and for later fragments.
 *
 * @return 0, -ENOENT if the frame is not IP, or an sl_parse() error.
 */
int sl_5tuple_get(const void *data, uint32_t len, struct sl_5tuple *t);

/**
 * Symmetric hash of a 5-tuple: both directions of a connection hash the
 * same. Never returns 0 for an IP 5-tuple.
 */
uint32_t sl_5tuple_hash(const struct sl_5tuple *t);

/** Formats a 5-tuple as "proto src:sport > dst:dport" into buf. */
int sl_5tuple_format(const struct sl_5tuple *t, char *buf, uint32_t size);

/**
 * Parses the form sl_5tuple_format() writes ("tcp 10.0.0.1:1234 >
 * 10.0.0.2:80", "udp [2001:db8::1]:53 > [2001:db8::2]:53",
 * "icmp 10.0.0.1 > 10.0.0.2").
 *
 * @return 0, or -EINVAL if the text is not in that form.
 */
int sl_5tuple_parse(const char *text, struct sl_5tuple *t);

/** sl_parse() on the first segment of an mbuf. */
int sl_pkt_parse(const struct rte_mbuf *m, struct sl_pkt_info *info);
/** sl_5tuple_get() on the first segment of an mbuf. */
int sl_pkt_5tuple(const struct rte_mbuf *m, struct sl_5tuple *t);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_PKT_H */
