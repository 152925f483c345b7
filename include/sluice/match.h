/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wildcard matches over the 5-tuple and the ingress port: parsing (JSON
 * objects and "key=value" text), formatting and the reference linear
 * match. Used by sluiced's flow rules and by sluice-firewall; the rte_acl
 * classifier over many matches is sluice/classifier.h. Installed with
 * libsluice, so an NF built out of the tree can use both.
 *
 * No DPDK EAL dependency (only jansson), so unit tests use it directly.
 */
#ifndef SLUICE_MATCH_H
#define SLUICE_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sluice/pkt.h"

/*
 * One wildcard match. A field left out matches everything: family 0
 * matches IPv4 and IPv6, proto_any every protocol, port and in_port
 * ranges default to 0-65535 and prefix lengths to 0. sl_match_init()
 * gives the match-all; never compare matches with memcmp() unless both
 * were made by this file (it zeroes the padding).
 */
struct sl_match {
	uint32_t src[4]; /* network order, host bits zero */
	uint32_t dst[4];
	uint32_t src_mask[4]; /* network order */
	uint32_t dst_mask[4];
	uint16_t sport_lo, sport_hi; /* host order, inclusive */
	uint16_t dport_lo, dport_hi;
	uint16_t in_port_lo, in_port_hi; /* ethdev id range; 0-65535 = any */
	uint8_t family;                  /* 0 (any), 4 or 6: from src/dst */
	uint8_t proto;                   /* IPPROTO_*, unless proto_any */
	uint8_t proto_any;
	uint8_t src_len; /* prefix lengths (0 = any) */
	uint8_t dst_len;
	uint8_t pad[3]; /* zero */
};

/** Sets m to the match-all. */
void sl_match_init(struct sl_match *m);

/**
 * Parses the match fields of a JSON object into m (which is first set to
 * the match-all):
 *   proto  "tcp", "udp", "icmp", "icmp6" (or "icmpv6"), "sctp", "gre",
 *          "esp", "ah", "any" (case-insensitive) or a number 0-255
 *          (integer or string);
 *   src, dst  a prefix "10.0.0.0/8", "2001:db8::/32", an address (a /32
 *          or /128), or "any"; src and dst must be of the same family;
 *   sport, dport  a port (integer or string), "LO-HI" (inclusive) or
 *          "any"; only with proto tcp, udp, sctp or any.
 * Other keys are ignored: callers check their own keys. in_port is not
 * parsed here (callers resolve port names and set in_port_lo/hi).
 *
 * @param err receives one line naming the key and the bad value and
 *   saying what was expected, e.g.
 *   "'dst': '10.0.0.0/33' is not a valid prefix" or
 *   "'dport': 70000 is not a valid port or port range (0-65535, 'LO-HI'
 *   or 'any')".
 * @return 0, or -EINVAL with a message in err.
 */
int sl_match_from_json(const json_t *obj, struct sl_match *m, char *err,
		       size_t errlen);

/**
 * The same from text, for NF authors and command lines: space-separated
 * key=value, e.g. "proto=tcp src=10.0.0.0/8 dport=80-90". Keys are those
 * of sl_match_from_json() plus in_port (an ethdev id, "LO-HI" or "any");
 * an unknown or repeated key is an error. "" is the match-all.
 *
 * @return 0, or -EINVAL with a message in err (as sl_match_from_json(),
 *   or "unknown key 'x' (expected proto, src, dst, sport, dport,
 *   in_port)", "'x' is not key=value (e.g. proto=tcp dport=80)",
 *   "duplicate key 'src'").
 */
int sl_match_parse(const char *text, struct sl_match *m, char *err,
		   size_t errlen);

/**
 * Whether m matches the IPv4 or IPv6 5-tuple t arriving on ethdev
 * in_port. Ports of protocols without ports are 0 in t (see sl_pkt.h).
 *
 * @return 1 or 0 (also 0 if t is not IPv4/IPv6).
 */
int sl_match_test(const struct sl_match *m, const struct sl_5tuple *t,
		  uint16_t in_port);

/**
 * The reference linear lookup over n matches: the best matching rule is
 * the one with the highest priority, and among equal priorities the one
 * with the lowest index. priority NULL: all equal (first match wins).
 *
 * @return index + 1 of the best matching rule, 0 if none matches.
 */
uint32_t sl_match_find(const struct sl_match *const *rules,
		       const int32_t *priority, uint32_t n,
		       const struct sl_5tuple *t, uint16_t in_port);

/**
 * Writes the fields of m that are not wildcards into obj, as strings that
 * sl_match_from_json() reads back to the same match: proto ("tcp", or
 * "47" if it has no name), src and dst ("10.0.0.0/8", "2001:db8::1/128";
 * a match that gives only a family has "0.0.0.0/0" or "::/0" as src),
 * sport and dport ("80", "1024-65535"). in_port is not written (callers
 * write port names).
 *
 * @return 0, -EINVAL if obj is not an object, -ENOMEM.
 */
int sl_match_to_json(const struct sl_match *m, json_t *obj);

/**
 * Formats m as sl_match_parse() reads it, the non-wildcard fields only:
 * "proto=tcp dst=10.0.0.0/8 dport=80", with "in_port=N" or "in_port=LO-HI"
 * if it is not any; "" for the match-all.
 *
 * @return snprintf()'s result (the length it needed); buf is always
 *   terminated if size > 0.
 */
int sl_match_format(const struct sl_match *m, char *buf, size_t size);

/** "tcp", "udp", "icmp", "icmp6", "sctp", "gre", "esp", "ah" or NULL. */
const char *sl_match_proto_name(uint8_t proto);

/** Whether m may restrict ports: proto tcp, udp, sctp or any. */
int sl_match_has_ports(const struct sl_match *m);

/* A JSON value as it would appear in the input ('text', 42, "a list"...),
 * for error messages; writes into buf and returns it. */
const char *sl_json_describe(const json_t *v, char *buf, size_t size);

#endif /* SLUICE_MATCH_H */
