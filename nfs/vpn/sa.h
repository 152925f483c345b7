/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-vpn's security associations and policies: the SA file's parser
 * (sa.c) and the tables it fills. Nothing here touches packets.
 */
#ifndef SL_VPN_SA_H
#define SL_VPN_SA_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#define VPN_KEY_MAX 32 /* AES-256 */
#define VPN_SALT_LEN 4
#define VPN_IV_LEN 8
#define VPN_ICV_LEN 16
#define VPN_ESP_HDR_LEN 8
#define VPN_WINDOW_MAX 4096
#define VPN_ERR_LEN 512

enum vpn_dir {
	VPN_OUT = 0,
	VPN_IN = 1,
};

/* Counters of one SA (one writer: the NF thread). */
struct vpn_sa_cnt {
	uint64_t pkts;
	uint64_t bytes; /* inner IP bytes encrypted or decrypted */
};

/* One SA: what the file says, then its running state. */
struct vpn_sa {
	uint32_t spi;
	enum vpn_dir dir;
	uint32_t local, remote; /* tunnel endpoints, host order */
	uint8_t key[VPN_KEY_MAX];
	uint8_t key_len; /* 16 or 32 */
	uint8_t salt[VPN_SALT_LEN];
	uint8_t esn; /* 64-bit extended sequence numbers */
	int port;    /* SL_OUT(port) after processing; -1: SL_NEXT */
	char port_name[32];
	uint8_t eth_src[6], eth_dst[6];
	uint8_t set_src, set_dst; /* rewrite the Ethernet addresses */
	uint8_t has_sel;          /* in: inner-src or inner-dst given */
	uint32_t sel_src, sel_src_mask, sel_dst, sel_dst_mask; /* in */
	unsigned line; /* where it was defined */
	/* running state */
	EVP_CIPHER_CTX *ctx; /* key set once; the IV per packet */
	uint64_t seq;        /* out: last sent; in: highest authenticated */
	uint16_t ip_id;      /* out: the outer header's identification */
	uint64_t *window;    /* in: the replay bitmap, window_words words */
	struct vpn_sa_cnt cnt;
};

/* Which plain traffic goes into which outbound SA; first match wins. */
struct vpn_policy {
	uint8_t family;                        /* 4, 6, or 0: both */
	uint32_t src, src_mask, dst, dst_mask; /* IPv4, host order */
	uint8_t src6[16], src6_mask[16], dst6[16], dst6_mask[16]; /* IPv6 */
	int proto;                                                /* -1: any */
	uint32_t sa; /* index into vpn_sad.sas */
	unsigned line;
	uint64_t pkts;
};

/* The whole file, compiled. */
struct vpn_sad {
	struct vpn_sa *sas;
	uint32_t n_sas;
	uint32_t *in_by_spi; /* indexes of the inbound SAs sorted by SPI */
	uint32_t n_in;
	struct vpn_policy *pols;
	uint32_t n_pols;
	uint32_t window;       /* replay window in bits (0: off) */
	uint32_t window_words; /* its bitmap's words (window / 64 + 1) */
};

/* Limits the file must keep, from the NF's options. */
struct vpn_limits {
	uint32_t max_sas;
	uint32_t max_policies;
	uint32_t window;
};

/*
 * Port names to ids (sl_port_id() in the NF); returns -1 for an unknown
 * name.
 */
typedef int (*vpn_port_lookup)(void *arg, const char *name);

/*
 * Reads the SA file at path into *out. On error returns a positive errno
 * and writes "PATH:LINE: PROBLEM" (or "PATH: PROBLEM") into err.
 */
int vpn_sad_load(const char *path, const struct vpn_limits *lim,
		 vpn_port_lookup ports, void *ports_arg, struct vpn_sad **out,
		 char *err, size_t err_size);
void vpn_sad_free(struct vpn_sad *sad);
/* The inbound SA with this SPI, or NULL. */
struct vpn_sa *vpn_sad_in(const struct vpn_sad *sad, uint32_t spi);
/*
 * Carries the sequence numbers, replay windows and counters of the SAs of
 * old that new has too (same SPI, direction, endpoints and key) over to
 * new, so a reload does not restart them; returns how many.
 */
uint32_t vpn_sad_carry(struct vpn_sad *new_sad, const struct vpn_sad *old);

#endif /* SL_VPN_SA_H */
