/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The default chain: a list of hops ("firewall", "monitor", "port:out")
 * compiled into a default next hop per service. Pure code: no EAL, so the
 * unit tests exercise it directly.
 *
 * Rules: at least one hop; a hop is a service name, "port:NAME" or "drop";
 * a port or drop ends the chain (it must be last); a service appears once,
 * except that the last hop may name an earlier service to close a loop
 * (the speedtest chain "speedtest,forward,speedtest").
 */
#ifndef SL_CHAIN_H
#define SL_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "sl_shared.h"

#define SL_CHAIN_MAX_TEXT 4096

struct sl_chain_resolver {
	/* Service id for a name (sluiced creates the service if needed),
	 * or a negative errno with err filled (an id beside it: the one
	 * negative convention left here; -ENOSPC: no room). */
	int (*service)(void *arg, const char *name, char *err, size_t errlen);
	/* Port id for a sluice port name, or -ENOENT. */
	int (*port)(void *arg, const char *name);
	void *arg;
};

/*
 * Compiles hops[0..n) into first, next[0..max_services) (every entry not on
 * the chain is SL_HOP_NONE) and list[0..n). Returns 0, or EINVAL with a
 * message in err naming the hop and what to do. r->service (which may
 * create services) is called only once every check that needs no service
 * id has passed, so a malformed chain creates no service.
 */
int sl_chain_compile(const char *const *hops, uint16_t n,
		     const struct sl_chain_resolver *r, uint16_t max_services,
		     sl_hop_t *first, sl_hop_t *next, sl_hop_t *list, char *err,
		     size_t errlen);

/*
 * Splits "a,b,port:out" in place into at most max hops, their count in
 * *n_hops. Returns 0, or EINVAL (empty hop, too many hops) with err filled.
 */
int sl_chain_split(char *text, char **hops, uint16_t max, uint16_t *n_hops,
		   char *err, size_t errlen);

/* Checks a service or port name: 1..31 chars of [A-Za-z0-9_.-]. */
int sl_name_valid(const char *name);

#endif /* SL_CHAIN_H */
