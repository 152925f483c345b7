/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address prefixes for the DDoS sample NFs (sluice-ddos-detect and
 * sluice-scrubber): parsing with one-line errors, the prefix of an
 * address, membership, and the text form ("10.66.6.0/24",
 * "2001:db8:66::/48") that the detector's alarm carries and the
 * scrubber's --prefix reads. Plain C, no DPDK.
 */
#ifndef SL_DDOS_PREFIX_H
#define SL_DDOS_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/pkt.h"

/* Longest text of a prefix: an IPv6 address, '/', 3 digits. */
#define DDOS_PREFIX_STRLEN 50

/*
 * A prefix. Host bits are zero and pad is zero, so a prefix is also a hash
 * key compared byte for byte; 24 bytes, 8-aligned, so that arrays of keys
 * suit rte_hash_crc's 8-byte loads.
 */
struct ddos_prefix {
	_Alignas(8) uint8_t family; /* 4 or 6 */
	uint8_t len;                /* 0..32 or 0..128 */
	uint8_t pad[6];
	uint8_t addr[16]; /* network order; IPv4 in addr[0..3] */
};

/*
 * Parses "A.B.C.D/N", "X:Y::Z/N" or an address alone (a /32 or /128).
 * 0, or -EINVAL with one line in err saying what is wrong, e.g.
 * "'10.66.6.1/24' has bits set after the prefix length: write
 * 10.66.6.0/24 (or the address alone for one host)".
 */
int ddos_prefix_parse(const char *s, struct ddos_prefix *p, char *err,
		      size_t errlen);

/* The prefix of length len (clamped to the family's width) of an
 * address of t: its source if src, else its destination. */
void ddos_prefix_of(const struct sl_5tuple *t, int src, unsigned len,
		    struct ddos_prefix *p);

/* 1 if the source (src) or destination address of t is in p. */
int ddos_prefix_has(const struct ddos_prefix *p, const struct sl_5tuple *t,
		    int src);

/* Writes "10.66.6.0/24"; returns snprintf()'s result. */
int ddos_prefix_format(const struct ddos_prefix *p, char *buf, size_t size);

#endif /* SL_DDOS_PREFIX_H */
