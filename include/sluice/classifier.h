/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A DPDK rte_acl classifier over wildcard matches (sluice/match.h) with
 * priorities: one rte_acl context for IPv4 and one for IPv6 (a match
 * without addresses goes into both), keyed by the 5-tuple and the ingress
 * port. Used by sluiced's flow rules and by sluice-firewall; the linear
 * sl_match_find() is its reference (tests/unit/test_classifier.c).
 *
 * Needs EAL (rte_acl allocates from the DPDK heap). A built classifier is
 * read-only: any number of threads may look up concurrently. Installed
 * with libsluice.
 */
#ifndef SLUICE_CLASSIFIER_H
#define SLUICE_CLASSIFIER_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/match.h"
#include "sluice/pkt.h"

/* name_prefix: at most this many characters. */
#define SL_CLASSIFIER_PREFIX_MAX 16

struct sl_classifier;

/**
 * Builds a classifier over rules[0..n). The best matching rule is the one
 * with the highest priority; among equal priorities, the one with the
 * lowest index (priority NULL: all equal, so the first match wins).
 * n = 0 is allowed: every lookup then gives 0.
 *
 * @param name_prefix names the rte_acl contexts: name_prefix, a counter
 *   and "_4" or "_6". rte_acl names are global to every process sharing
 *   the DPDK memory, so the prefix must be unique to the process (an NF
 *   puts its pid in it); a context found with the same name is taken to
 *   be left over by a dead process with the same pid, and freed. NULL:
 *   "slcls".
 * @param err receives a one-line message on failure.
 * @return 0 and *out (free with sl_classifier_free()), -EINVAL (bad
 *   arguments, name_prefix too long), -ENOMEM (rte_acl could not get the
 *   memory) or another negative errno from rte_acl.
 */
int sl_classifier_build(const struct sl_match *const *rules,
			const int32_t *priority, uint32_t n,
			const char *name_prefix, struct sl_classifier **out,
			char *err, size_t errlen);

/**
 * Bulk lookup: res[i] = index + 1 of the best matching rule for the
 * 5-tuple t[i] arriving on ethdev in_port[i], 0 if none matches (or t[i]
 * is NULL or not IPv4/IPv6). in_port NULL: every packet has port 0.
 * c NULL: no rules.
 */
void sl_classifier_lookup(const struct sl_classifier *c,
			  const struct sl_5tuple *const *t,
			  const uint16_t *in_port, uint32_t n, uint32_t *res);

/** The number of rules c was built with. */
uint32_t sl_classifier_n_rules(const struct sl_classifier *c);

/** Frees c and its rte_acl contexts; NULL is allowed. */
void sl_classifier_free(struct sl_classifier *c);

#endif /* SLUICE_CLASSIFIER_H */
