/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMP errors as whole frames: see icmp.h. */
#include <string.h>

#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_ip.h>

#include "sluice/pkt.h"

#include "icmp.h"

#define L3_ICMP_HDR 8 /* type, code, checksum, 4 unused bytes */
#define L3_ICMP_TTL 64

static uint8_t *
put_eth(uint8_t *buf, const struct l3_icmp_addrs *a, uint16_t type)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)buf;

	eth->dst_addr = a->dst_mac;
	eth->src_addr = a->src_mac;
	eth->ether_type = rte_cpu_to_be_16(type);
	return buf + RTE_ETHER_HDR_LEN;
}

uint32_t
l3_icmp4_build(uint8_t *buf, const struct l3_icmp_addrs *a, uint8_t type,
	       uint8_t code, uint16_t id, const uint8_t *orig,
	       uint32_t orig_len)
{
	uint32_t quote = orig_len;
	uint8_t *p = put_eth(buf, a, RTE_ETHER_TYPE_IPV4);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)p;
	uint8_t *icmp = p + sizeof(*ip);
	uint16_t ck;

	if (quote > L3_ICMP4_MAX_IP - sizeof(*ip) - L3_ICMP_HDR)
		quote = L3_ICMP4_MAX_IP - sizeof(*ip) - L3_ICMP_HDR;
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0xc0; /* internetwork control (RFC 1812) */
	ip->total_length =
		rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + L3_ICMP_HDR + quote));
	ip->packet_id = rte_cpu_to_be_16(id);
	ip->time_to_live = L3_ICMP_TTL;
	ip->next_proto_id = IPPROTO_ICMP;
	memcpy(&ip->src_addr, a->src_ip, 4);
	memcpy(&ip->dst_addr, a->dst_ip, 4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	memset(icmp, 0, L3_ICMP_HDR);
	icmp[0] = type;
	icmp[1] = code;
	memcpy(icmp + L3_ICMP_HDR, orig, quote);
	ck = (uint16_t)~rte_raw_cksum(icmp, L3_ICMP_HDR + quote);
	memcpy(icmp + 2, &ck, 2); /* the sum is byte-order independent */
	return RTE_ETHER_HDR_LEN + (uint32_t)sizeof(*ip) + L3_ICMP_HDR + quote;
}

uint32_t
l3_icmp6_build(uint8_t *buf, const struct l3_icmp_addrs *a, uint8_t type,
	       uint8_t code, const uint8_t *orig, uint32_t orig_len)
{
	uint32_t quote = orig_len, sum;
	uint8_t *p = put_eth(buf, a, RTE_ETHER_TYPE_IPV6);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)p;
	uint8_t *icmp = p + sizeof(*ip);
	uint16_t ck;

	if (quote > L3_ICMP6_MAX_IP - sizeof(*ip) - L3_ICMP_HDR)
		quote = L3_ICMP6_MAX_IP - sizeof(*ip) - L3_ICMP_HDR;
	memset(ip, 0, sizeof(*ip));
	ip->vtc_flow = rte_cpu_to_be_32(0x60000000);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(L3_ICMP_HDR + quote));
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = L3_ICMP_TTL;
	memcpy(ip->src_addr, a->src_ip, 16);
	memcpy(ip->dst_addr, a->dst_ip, 16);
	memset(icmp, 0, L3_ICMP_HDR);
	icmp[0] = type;
	icmp[1] = code;
	memcpy(icmp + L3_ICMP_HDR, orig, quote);
	/* The pseudo-header (addresses, length, next header) and the
	 * message, folded to 16 bits. */
	sum = rte_ipv6_phdr_cksum(ip, 0);
	sum += rte_raw_cksum(icmp, L3_ICMP_HDR + quote);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ck = (uint16_t)~sum;
	memcpy(icmp + 2, &ck, 2);
	return RTE_ETHER_HDR_LEN + (uint32_t)sizeof(*ip) + L3_ICMP_HDR + quote;
}

static void
echo_eth(struct rte_ether_hdr *eth, const struct rte_ether_addr *mac)
{
	eth->dst_addr = eth->src_addr;
	eth->src_addr = *mac;
}

/* The type (high byte of the first word) changes: the ICMP checksum
 * follows (RFC 1624). */
static void
echo_type(uint8_t *icmp, uint8_t type)
{
	uint16_t old, new, ck;

	memcpy(&old, icmp, 2);
	icmp[0] = type;
	memcpy(&new, icmp, 2);
	memcpy(&ck, icmp + 2, 2);
	ck = sl_cksum_update16(ck, old, new);
	memcpy(icmp + 2, &ck, 2);
}

void
l3_echo4_reply(struct rte_ether_hdr *eth, struct rte_ipv4_hdr *ip,
	       uint8_t *icmp, const struct rte_ether_addr *mac)
{
	uint32_t a = ip->src_addr;

	echo_eth(eth, mac);
	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->time_to_live = L3_ICMP_TTL;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	echo_type(icmp, 0);
}

void
l3_echo6_reply(struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip,
	       uint8_t *icmp, const struct rte_ether_addr *mac)
{
	uint8_t a[16];

	echo_eth(eth, mac);
	/* The pseudo-header's sum does not change when the addresses swap. */
	memcpy(a, ip->src_addr, 16);
	memcpy(ip->src_addr, ip->dst_addr, 16);
	memcpy(ip->dst_addr, a, 16);
	ip->hop_limits = L3_ICMP_TTL;
	echo_type(icmp, 129);
}

int
l3_arp_reply(uint8_t *frame, uint32_t len, uint32_t ip,
	     const struct rte_ether_addr *mac)
{
	static const uint8_t req[8] = {0, 1, 8, 0, 6, 4, 0, 1};
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	uint8_t *arp = frame + RTE_ETHER_HDR_LEN;

	if (len < RTE_ETHER_HDR_LEN + L3_ARP_LEN ||
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) ||
	    memcmp(arp, req, sizeof(req)) != 0 || memcmp(arp + 24, &ip, 4) != 0)
		return 0;
	arp[7] = 2;                    /* reply */
	memcpy(arp + 18, arp + 8, 10); /* target: the asker */
	memcpy(arp + 8, mac, 6);
	memcpy(arp + 14, &ip, 4);
	eth->dst_addr = eth->src_addr;
	eth->src_addr = *mac;
	return 1;
}

int
l3_ns_reply(struct rte_ether_hdr *eth, struct rte_ipv6_hdr *ip,
	    uint32_t icmp_len, const uint8_t *addr,
	    const struct rte_ether_addr *mac)
{
	uint8_t *icmp = (uint8_t *)(ip + 1);
	uint32_t sum;
	uint16_t ck;

	if (icmp_len != L3_NS_LEN || ip->proto != IPPROTO_ICMPV6 ||
	    ip->hop_limits != 255 || icmp[0] != 135 || icmp[1] != 0 ||
	    memcmp(icmp + 8, addr, 16) != 0 || icmp[24] != 1 || icmp[25] != 1 ||
	    ip->src_addr[0] == 0xff ||
	    memcmp(ip->src_addr, (const uint8_t[16]){0}, 16) == 0)
		return 0;
	eth->dst_addr = eth->src_addr;
	eth->src_addr = *mac;
	memcpy(ip->dst_addr, ip->src_addr, 16);
	memcpy(ip->src_addr, addr, 16);
	icmp[0] = 136;
	icmp[2] = icmp[3] = 0;
	icmp[4] = 0xe0; /* router, solicited, override */
	icmp[5] = icmp[6] = icmp[7] = 0;
	icmp[24] = 2; /* target link-layer address */
	memcpy(icmp + 26, mac, 6);
	sum = rte_ipv6_phdr_cksum(ip, 0);
	sum += rte_raw_cksum(icmp, L3_NS_LEN);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ck = (uint16_t)~sum;
	memcpy(icmp + 2, &ck, 2);
	return 1;
}
