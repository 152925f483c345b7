/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ICMP errors sluice-l3fwd sends back to a packet's source: time
 * exceeded and destination unreachable, ICMPv4 (RFC 792, 1812) and ICMPv6
 * (RFC 4443), written into a buffer as a whole Ethernet frame.
 */
#ifndef SL_L3FWD_ICMP_H
#define SL_L3FWD_ICMP_H

#include <stdint.h>

#include <rte_ether.h>

struct rte_ipv4_hdr;
struct rte_ipv6_hdr;

/* ICMPv4 carries the original datagram up to 576 bytes of IP (RFC 1812
 * 4.3.2.3), ICMPv6 up to the minimum MTU, 1280 (RFC 4443 2.4 (c)). */
#define L3_ICMP4_MAX_IP 576
#define L3_ICMP6_MAX_IP 1280
#define L3_ICMP_MAX_FRAME (RTE_ETHER_HDR_LEN + L3_ICMP6_MAX_IP)

#define L3_ICMP4_TIME_EXCEEDED 11
#define L3_ICMP4_UNREACH 3
#define L3_ICMP6_UNREACH 1
#define L3_ICMP6_TIME_EXCEEDED 3

/* The frame's addresses; IPv4 ones in the first 4 bytes, network order. */
struct l3_icmp_addrs {
	struct rte_ether_addr src_mac, dst_mac;
	uint8_t src_ip[16], dst_ip[16];
};

/*
 * Writes into buf (at least L3_ICMP_MAX_FRAME bytes) an Ethernet frame
 * with an ICMP error of type and code about orig, the original IP
 * datagram (orig_len bytes of it are available), carrying as much of it
 * as the limit above allows. id is the IPv4 identification. Returns the
 * frame's length.
 */
uint32_t l3_icmp4_build(uint8_t *buf, const struct l3_icmp_addrs *a,
			uint8_t type, uint8_t code, uint16_t id,
			const uint8_t *orig, uint32_t orig_len);
uint32_t l3_icmp6_build(uint8_t *buf, const struct l3_icmp_addrs *a,
			uint8_t type, uint8_t code, const uint8_t *orig,
			uint32_t orig_len);

/*
 * Turns an echo request to the router into its echo reply, in place: MACs
 * (to the sender, from mac), addresses swapped, TTL / hop limit 64, type
 * 0 / 129, checksums updated. icmp is the ICMP header (8 bytes at least).
 */
void l3_echo4_reply(struct rte_ether_hdr *eth, struct rte_ipv4_hdr *ip,
		    uint8_t *icmp, const struct rte_ether_addr *mac);
void l3_echo6_reply(struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip,
		    uint8_t *icmp, const struct rte_ether_addr *mac);

/* An ARP request (untagged Ethernet, IPv4) and an IPv6 neighbour
 * solicitation with its source link-layer address option: the sizes of
 * the replies made in their place. */
#define L3_ARP_LEN 28
#define L3_NS_LEN 32 /* ICMPv6 header, target, the 8-byte option */

/*
 * If the ARP frame (len bytes) is a request for ip (network order), turns
 * it into the reply in place (from mac) and returns 1; else 0.
 */
int l3_arp_reply(uint8_t *frame, uint32_t len, uint32_t ip,
		 const struct rte_ether_addr *mac);

/*
 * If the IPv6 packet (its fixed header at ip, the ICMPv6 message after it,
 * icmp_len bytes) is a neighbour solicitation for addr with a source
 * link-layer address option, from a unicast address, turns it into the
 * solicited neighbour advertisement in place (router, solicited,
 * override; from mac) and returns 1; else 0.
 */
int l3_ns_reply(struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip,
		uint32_t icmp_len, const uint8_t *addr,
		const struct rte_ether_addr *mac);

#endif /* SL_L3FWD_ICMP_H */
