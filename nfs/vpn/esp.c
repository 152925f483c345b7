/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ESP tunnel mode with AES-GCM-16 (RFC 4303, RFC 4106), in place on a
 * single-segment mbuf, with OpenSSL's EVP AEAD interface. The IV of an
 * outbound packet is its 64-bit sequence number (unique per key, as RFC
 * 4106 section 3.1 asks). The replay window is a bitmap of window / 64 + 1
 * words indexed by the sequence number modulo its size; whole words are
 * cleared as the window moves (RFC 6479), so an update is O(1) per word.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <openssl/evp.h>

#include "esp.h"

#define VPN_ETH_LEN 14
#define VPN_OUTER_LEN 20 /* outer IPv4 header, no options */
#define VPN_ESP_PROTO 50
#define VPN_NH_IPV4 4
#define VPN_NH_IPV6 41
#define VPN_NH_DUMMY 59

const char *const vpn_reason_names[VPN_N_REASONS] = {
	[VPN_OK] = "",
	[VPN_D_MALFORMED] = "malformed",
	[VPN_D_UNKNOWN_SPI] = "unknown_spi",
	[VPN_D_BAD_ENDPOINT] = "bad_endpoint",
	[VPN_D_REPLAY] = "replay",
	[VPN_D_OUTSIDE_WINDOW] = "outside_window",
	[VPN_D_AUTH_FAILED] = "auth_failed",
	[VPN_D_DUMMY] = "dummy",
	[VPN_D_SEQ_OVERFLOW] = "seq_overflow",
	[VPN_D_TOO_BIG] = "too_big",
	[VPN_D_NO_SA] = "no_sa",
	[VPN_D_SELECTOR] = "selector",
	[VPN_D_CRYPTO] = "crypto_error",
};

static inline void
vpn_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t
vpn_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* RFC 4106 section 5: SPI, [high 32 bits of the ESN,] low 32 bits. */
static inline int
vpn_aad(const struct vpn_sa *sa, uint64_t seq, uint8_t aad[12])
{
	vpn_put32(aad, sa->spi);
	if (!sa->esn) {
		vpn_put32(aad + 4, (uint32_t)seq);
		return 8;
	}
	vpn_put32(aad + 4, (uint32_t)(seq >> 32));
	vpn_put32(aad + 8, (uint32_t)seq);
	return 12;
}

/* Encrypts (enc) or decrypts and verifies len bytes at p in place; the
 * ICV follows them. 0 or -1. */
static int
vpn_gcm(const struct vpn_sa *sa, int enc, const uint8_t *iv, uint64_t seq,
	uint8_t *p, int len)
{
	uint8_t nonce[VPN_SALT_LEN + VPN_IV_LEN], aad[12];
	int aad_len = vpn_aad(sa, seq, aad), out;

	memcpy(nonce, sa->salt, VPN_SALT_LEN);
	memcpy(nonce + VPN_SALT_LEN, iv, VPN_IV_LEN);
	if (EVP_CipherInit_ex(sa->ctx, NULL, NULL, NULL, nonce, enc) != 1 ||
	    EVP_CipherUpdate(sa->ctx, NULL, &out, aad, aad_len) != 1 ||
	    EVP_CipherUpdate(sa->ctx, p, &out, p, len) != 1)
		return -1;
	if (enc)
		return EVP_CipherFinal_ex(sa->ctx, p + len, &out) == 1 &&
				       EVP_CIPHER_CTX_ctrl(sa->ctx,
							   EVP_CTRL_GCM_GET_TAG,
							   VPN_ICV_LEN,
							   p + len) == 1
			       ? 0
			       : -1;
	if (EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_GCM_SET_TAG, VPN_ICV_LEN,
				p + len) != 1)
		return -1;
	return EVP_CipherFinal_ex(sa->ctx, p + len, &out) == 1 ? 0 : -1;
}

static void
vpn_outer_ipv4(const struct vpn_sa *sa, uint8_t *ip, uint32_t total,
	       uint8_t tos)
{
	struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)ip;

	h->version_ihl = 0x45;
	h->type_of_service = tos;
	h->total_length = rte_cpu_to_be_16((uint16_t)total);
	h->packet_id = rte_cpu_to_be_16(sa->ip_id);
	h->fragment_offset = 0;
	h->time_to_live = 64;
	h->next_proto_id = VPN_ESP_PROTO;
	h->hdr_checksum = 0;
	h->src_addr = rte_cpu_to_be_32(sa->local);
	h->dst_addr = rte_cpu_to_be_32(sa->remote);
	h->hdr_checksum = rte_ipv4_cksum(h);
}

/* Writes the Ethernet header at eth: addresses saved from the frame (or
 * the SA's), then type. */
static void
vpn_eth(const struct vpn_sa *sa, uint8_t *eth, const uint8_t addrs[12],
	uint16_t type)
{
	memcpy(eth, sa->set_dst ? sa->eth_dst : addrs, 6);
	memcpy(eth + 6, sa->set_src ? sa->eth_src : addrs + 6, 6);
	eth[12] = (uint8_t)(type >> 8);
	eth[13] = (uint8_t)type;
}

enum vpn_reason
vpn_esp_encap(struct vpn_sa *sa, struct rte_mbuf *m, uint32_t l3_off,
	      uint32_t ip_len, uint8_t tos, uint8_t nh)
{
	const uint32_t hdr =
		VPN_ETH_LEN + VPN_OUTER_LEN + VPN_ESP_HDR_LEN + VPN_IV_LEN;
	uint32_t pad = (4 - (ip_len + 2) % 4) % 4;
	uint32_t trailer = pad + 2 + VPN_ICV_LEN, total;
	uint8_t addrs[12], *p, *t;
	uint64_t seq = sa->seq + 1;

	if (!rte_pktmbuf_is_contiguous(m) || l3_off > hdr ||
	    rte_pktmbuf_data_len(m) < l3_off + ip_len)
		return VPN_D_TOO_BIG;
	total = VPN_OUTER_LEN + VPN_ESP_HDR_LEN + VPN_IV_LEN + ip_len + trailer;
	if (total > UINT16_MAX || rte_pktmbuf_headroom(m) < hdr - l3_off ||
	    rte_pktmbuf_tailroom(m) +
			    (rte_pktmbuf_data_len(m) - l3_off - ip_len) <
		    trailer)
		return VPN_D_TOO_BIG;
	if ((!sa->esn && seq > UINT32_MAX) || seq == 0)
		return VPN_D_SEQ_OVERFLOW;
	memcpy(addrs, rte_pktmbuf_mtod(m, uint8_t *), sizeof(addrs));
	/* Ethernet padding and anything after the IP packet go. */
	rte_pktmbuf_trim(m,
			 (uint16_t)(rte_pktmbuf_data_len(m) - l3_off - ip_len));
	p = (uint8_t *)rte_pktmbuf_prepend(m, (uint16_t)(hdr - l3_off));
	t = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)trailer);
	if (p == NULL || t == NULL)
		return VPN_D_TOO_BIG; /* cannot happen: room checked */
	for (uint32_t i = 0; i < pad; i++)
		t[i] = (uint8_t)(i + 1);
	t[pad] = (uint8_t)pad;
	t[pad + 1] = nh;
	sa->seq = seq;
	vpn_eth(sa, p, addrs, RTE_ETHER_TYPE_IPV4);
	vpn_outer_ipv4(sa, p + VPN_ETH_LEN, total, tos);
	sa->ip_id++;
	uint8_t *esp = p + VPN_ETH_LEN + VPN_OUTER_LEN;

	vpn_put32(esp, sa->spi);
	vpn_put32(esp + 4, (uint32_t)seq);
	vpn_put32(esp + 8, (uint32_t)(seq >> 32)); /* the IV */
	vpn_put32(esp + 12, (uint32_t)seq);
	if (vpn_gcm(sa, 1, esp + 8, seq, p + hdr, (int)(ip_len + pad + 2)))
		return VPN_D_CRYPTO;
	sa->cnt.pkts++;
	sa->cnt.bytes += ip_len;
	return VPN_OK;
}

enum vpn_reason
vpn_replay_check(const struct vpn_sa *sa, const struct vpn_sad *sad,
		 uint32_t seq_lo, uint64_t *seq)
{
	uint64_t t = sa->seq, s;
	uint32_t w = sad->window ? sad->window : 1;
	uint32_t tl = (uint32_t)t, th = (uint32_t)(t >> 32), sh = th;

	if (sa->esn) { /* RFC 4303 appendix A2.2 */
		if (tl >= w - 1)
			sh = seq_lo >= tl - w + 1 ? th : th + 1;
		else if (seq_lo >= tl - w + 1) /* wraps around 2^32 */
			sh = th > 0 ? th - 1 : 0;
	}
	s = (uint64_t)sh << 32 | seq_lo;
	*seq = s;
	if (s == 0)
		return VPN_D_OUTSIDE_WINDOW; /* never sent */
	if (sad->window == 0 || s > t)
		return VPN_OK;
	if (t - s >= sad->window)
		return VPN_D_OUTSIDE_WINDOW;
	uint64_t bits = (uint64_t)sad->window_words * 64, b = s % bits;

	return sa->window[b / 64] >> (b % 64) & 1 ? VPN_D_REPLAY : VPN_OK;
}

void
vpn_replay_update(struct vpn_sa *sa, const struct vpn_sad *sad, uint64_t seq)
{
	uint32_t nw = sad->window_words;
	uint64_t bits = (uint64_t)nw * 64, b;

	if (sad->window == 0) {
		if (seq > sa->seq)
			sa->seq = seq;
		return;
	}
	if (seq > sa->seq) {
		uint64_t from = sa->seq / 64, to = seq / 64;

		if (to - from >= nw)
			memset(sa->window, 0, nw * sizeof(uint64_t));
		else
			for (uint64_t i = from + 1; i <= to; i++)
				sa->window[i % nw] = 0;
		sa->seq = seq;
	}
	b = seq % bits;
	sa->window[b / 64] |= 1ull << (b % 64);
}

/* The decrypted payload: strips the trailer, checks the inner header;
 * its length, or 0 with *why set. */
static uint32_t
vpn_inner(const uint8_t *ct, uint32_t ct_len, uint16_t *type,
	  enum vpn_reason *why)
{
	uint8_t nh = ct[ct_len - 1], pad = ct[ct_len - 2];
	uint32_t len, ip_len;

	*why = VPN_D_MALFORMED;
	if ((uint32_t)pad + 2 > ct_len)
		return 0;
	len = ct_len - 2 - pad;
	for (uint32_t i = 0; i < pad; i++)
		if (ct[len + i] != i + 1)
			return 0;
	if (nh == VPN_NH_DUMMY) {
		*why = VPN_D_DUMMY;
		return 0;
	}
	if (nh == VPN_NH_IPV4 && len >= 20 && ct[0] >> 4 == 4) {
		ip_len = (uint32_t)ct[2] << 8 | ct[3];
		*type = RTE_ETHER_TYPE_IPV4;
	} else if (nh == VPN_NH_IPV6 && len >= 40 && ct[0] >> 4 == 6) {
		ip_len = 40 + ((uint32_t)ct[4] << 8 | ct[5]);
		*type = RTE_ETHER_TYPE_IPV6;
	} else {
		return 0;
	}
	/* Shorter than the payload: TFC padding (RFC 4303 2.4), dropped. */
	return ip_len <= len && ip_len >= 20 ? ip_len : 0;
}

/* RFC 4301 5.2: the inner packet's addresses must be the SA's. */
static int
vpn_selected(const struct vpn_sa *sa, const uint8_t *ip, uint16_t type)
{
	if (type != RTE_ETHER_TYPE_IPV4)
		return 0;
	return (vpn_get32(ip + 12) & sa->sel_src_mask) == sa->sel_src &&
	       (vpn_get32(ip + 16) & sa->sel_dst_mask) == sa->sel_dst;
}

/* The outer header: the ESP bytes' offset and length, or 0. */
static uint32_t
vpn_outer(struct rte_mbuf *m, uint32_t l3_off, uint32_t *esp_len)
{
	const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off);
	uint32_t ihl, total;

	if (!rte_pktmbuf_is_contiguous(m) ||
	    rte_pktmbuf_data_len(m) < l3_off + VPN_OUTER_LEN)
		return 0;
	ihl = (ip[0] & 0xf) * 4u;
	total = (uint32_t)ip[2] << 8 | ip[3];
	if (ip[0] >> 4 != 4 || ihl < 20 || total < ihl ||
	    rte_pktmbuf_data_len(m) < l3_off + total ||
	    (((uint32_t)ip[6] << 8 | ip[7]) & 0x3fff) != 0 /* a fragment */)
		return 0;
	*esp_len = total - ihl;
	if (*esp_len < VPN_ESP_HDR_LEN + VPN_IV_LEN + 2 + VPN_ICV_LEN)
		return 0;
	return l3_off + ihl;
}

enum vpn_reason
vpn_esp_decap(const struct vpn_sad *sad, struct rte_mbuf *m, uint32_t l3_off,
	      struct vpn_sa **sa_out)
{
	uint32_t esp_len = 0, esp_off = vpn_outer(m, l3_off, &esp_len);
	uint8_t *esp, *ip, addrs[12];
	struct vpn_sa *sa;
	uint32_t ct_len, inner_len;
	enum vpn_reason why;
	uint16_t type = 0;
	uint64_t seq;

	*sa_out = NULL;
	if (esp_off == 0)
		return VPN_D_MALFORMED;
	ip = rte_pktmbuf_mtod_offset(m, uint8_t *, l3_off);
	esp = ip + (esp_off - l3_off);
	sa = vpn_sad_in(sad, vpn_get32(esp));
	if (sa == NULL)
		return VPN_D_UNKNOWN_SPI;
	*sa_out = sa;
	if (vpn_get32(ip + 12) != sa->remote || vpn_get32(ip + 16) != sa->local)
		return VPN_D_BAD_ENDPOINT;
	why = vpn_replay_check(sa, sad, vpn_get32(esp + 4), &seq);
	if (why != VPN_OK)
		return why;
	ct_len = esp_len - VPN_ESP_HDR_LEN - VPN_IV_LEN - VPN_ICV_LEN;
	if (vpn_gcm(sa, 0, esp + VPN_ESP_HDR_LEN, seq, esp + 16, (int)ct_len))
		return VPN_D_AUTH_FAILED;
	vpn_replay_update(sa, sad, seq); /* only once it is authentic */
	inner_len = vpn_inner(esp + 16, ct_len, &type, &why);
	if (inner_len == 0)
		return why;
	if (sa->has_sel && !vpn_selected(sa, esp + 16, type))
		return VPN_D_SELECTOR;
	/* [eth][outer][esp][iv][inner][pad][icv] -> [eth][inner] */
	memcpy(addrs, rte_pktmbuf_mtod(m, uint8_t *), sizeof(addrs));
	rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - esp_off - 16 -
				       inner_len));
	rte_pktmbuf_adj(m, (uint16_t)(esp_off + 16 - VPN_ETH_LEN));
	vpn_eth(sa, rte_pktmbuf_mtod(m, uint8_t *), addrs, type);
	sa->cnt.pkts++;
	sa->cnt.bytes += inner_len;
	return VPN_OK;
}
