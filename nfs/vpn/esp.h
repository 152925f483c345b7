/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ESP in tunnel mode (RFC 4303) with AES-GCM (RFC 4106) on one mbuf, in
 * place, and the anti-replay window (RFC 4303 appendix A, with 64-bit
 * extended sequence numbers).
 */
#ifndef SL_VPN_ESP_H
#define SL_VPN_ESP_H

#include <stdint.h>

#include "sa.h"

struct rte_mbuf;

/* What became of a packet: 0, or the reason it is dropped. */
enum vpn_reason {
	VPN_OK = 0,
	VPN_D_MALFORMED,      /* not a well-formed ESP packet or trailer */
	VPN_D_UNKNOWN_SPI,    /* no inbound SA has its SPI */
	VPN_D_BAD_ENDPOINT,   /* outer addresses are not the SA's */
	VPN_D_REPLAY,         /* its sequence number was seen already */
	VPN_D_OUTSIDE_WINDOW, /* older than the replay window */
	VPN_D_AUTH_FAILED,    /* the ICV does not verify */
	VPN_D_DUMMY,          /* next header 59: a dummy packet */
	VPN_D_SEQ_OVERFLOW,   /* the outbound SA used all its numbers */
	VPN_D_TOO_BIG,        /* no room in the buffer for ESP's bytes */
	VPN_D_NO_SA,    /* plain IP no policy takes (--unprotected drop) */
	VPN_D_SELECTOR, /* decrypted, but not what its SA may carry */
	VPN_D_CRYPTO,   /* OpenSSL refused (should not happen) */
	VPN_N_REASONS,
};

/* The reasons' names in the counters line, VPN_OK's is "". */
extern const char *const vpn_reason_names[VPN_N_REASONS];

/*
 * Encrypts the IP packet at l3_off (ip_len bytes, next header nh: 4 or
 * 41) into an ESP tunnel packet of sa: Ethernet, outer IPv4, ESP header,
 * IV, ciphertext, ICV. The Ethernet header before it is kept (its
 * addresses, or the SA's eth-src/eth-dst), VLAN tags are dropped.
 */
enum vpn_reason vpn_esp_encap(struct vpn_sa *sa, struct rte_mbuf *m,
			      uint32_t l3_off, uint32_t ip_len, uint8_t tos,
			      uint8_t nh);

/*
 * Checks and decrypts the ESP packet whose outer IPv4 header is at
 * l3_off; on VPN_OK m is Ethernet and the inner packet, and *sa_out its
 * SA (set from the SPI lookup on, also for a refusal).
 */
enum vpn_reason vpn_esp_decap(const struct vpn_sad *sad, struct rte_mbuf *m,
			      uint32_t l3_off, struct vpn_sa **sa_out);

/*
 * Anti-replay, exposed for the tests. check: the full sequence number of
 * the packet whose low 32 bits are seq_lo (ESN: inferred from the
 * window), and whether it may be accepted (VPN_OK, VPN_D_REPLAY or
 * VPN_D_OUTSIDE_WINDOW). update: after the ICV verified.
 */
enum vpn_reason vpn_replay_check(const struct vpn_sa *sa,
				 const struct vpn_sad *sad, uint32_t seq_lo,
				 uint64_t *seq);
void vpn_replay_update(struct vpn_sa *sa, const struct vpn_sad *sad,
		       uint64_t seq);

#endif /* SL_VPN_ESP_H */
