/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sl_chain.h"

int
sl_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= SL_NAME_LEN)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!isalnum(c) && c != '_' && c != '-' && c != '.')
			return 0;
	}
	return 1;
}

int
sl_chain_split(char *text, char **hops, uint16_t max, uint16_t *n_hops,
	       char *err, size_t errlen)
{
	uint16_t n = 0;
	char *save = NULL;

	if (text[0] == '\0' || text[strlen(text) - 1] == ',' ||
	    text[0] == ',' || strstr(text, ",,") != NULL) {
		snprintf(err, errlen,
			 "chain '%s' has an empty hop; write hops separated "
			 "by single commas, e.g. firewall,monitor,port:out",
			 text);
		return EINVAL;
	}
	for (char *tok = strtok_r(text, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == max) {
			snprintf(err, errlen,
				 "chain has more than %u hops; raise "
				 "--max-services or shorten the chain",
				 max);
			return EINVAL;
		}
		hops[n++] = tok;
	}
	*n_hops = n;
	return 0;
}

/*
 * Checks everything that needs no service id: where ports and drop stand,
 * that ports exist, service names, and repeats. Runs before any service
 * is resolved, because sluiced's resolver creates services: a rejected
 * chain must not leave services behind.
 */
static int
chain_check(const char *const *hops, uint16_t n,
	    const struct sl_chain_resolver *r, int *port, char *err,
	    size_t errlen)
{
	for (uint16_t i = 0; i < n; i++) {
		const char *h = hops[i];
		int last = i == n - 1;

		if (strcmp(h, "drop") == 0 || strncmp(h, "port:", 5) == 0) {
			if (!last) {
				snprintf(err, errlen,
					 "chain hop %u '%s' ends the chain but "
					 "%u hop(s) follow it; a port or drop "
					 "must be the last hop",
					 i + 1, h, n - i - 1);
				return EINVAL;
			}
			if (h[0] == 'p' &&
			    (*port = r->port(r->arg, h + 5)) < 0) {
				snprintf(err, errlen,
					 "chain hop %u '%s': no port named "
					 "'%s'; use a name from port.list",
					 i + 1, h, h + 5);
				return EINVAL;
			}
			continue;
		}
		if (!sl_name_valid(h)) {
			snprintf(err, errlen,
				 "chain hop %u '%s' is not a valid service "
				 "name (1-%d characters of A-Z a-z 0-9 _ - .), "
				 "'port:NAME' or 'drop'",
				 i + 1, h, SL_NAME_LEN - 1);
			return EINVAL;
		}
		for (uint16_t j = 0; j < i && !last; j++) {
			if (strcmp(hops[j], h) != 0)
				continue;
			snprintf(err, errlen,
				 "chain: service '%s' appears twice (hops %u "
				 "and %u); only the last hop may repeat an "
				 "earlier service, to close a loop",
				 h, j + 1, i + 1);
			return EINVAL;
		}
	}
	return 0;
}

int
sl_chain_compile(const char *const *hops, uint16_t n,
		 const struct sl_chain_resolver *r, uint16_t max_services,
		 sl_hop_t *first, sl_hop_t *next, sl_hop_t *list, char *err,
		 size_t errlen)
{
	char e[160];
	int port = -1;

	if (n == 0) {
		snprintf(err, errlen,
			 "chain is empty; give at least one hop, e.g. "
			 "[forward, \"port:out\"]");
		return EINVAL;
	}
	if (chain_check(hops, n, r, &port, err, errlen) != 0)
		return EINVAL;
	for (uint16_t s = 0; s < max_services; s++)
		next[s] = SL_HOP_NONE;

	for (uint16_t i = 0; i < n; i++) {
		const char *h = hops[i];
		int id;

		if (strcmp(h, "drop") == 0) {
			list[i] = SL_HOP_DROP;
		} else if (strncmp(h, "port:", 5) == 0) {
			list[i] = SL_HOP_PORT((uint16_t)port); /* checked */
		} else {
			e[0] = '\0';
			id = r->service(r->arg, h, e, sizeof(e));
			if (id < 0) { /* the resolver's negative errno */
				snprintf(err, errlen, "chain hop %u '%s': %s",
					 i + 1, h, e);
				return EINVAL;
			}
			if (id >= max_services) {
				snprintf(err, errlen,
					 "chain hop %u '%s': service id %d "
					 "out of range",
					 i + 1, h, id);
				return EINVAL;
			}
			list[i] = SL_HOP_SERVICE((uint16_t)id);
		}
		if (i > 0 && sl_verdict_kind(list[i - 1]) == SL_VERDICT_TO)
			next[sl_verdict_id(list[i - 1])] = list[i];
	}
	*first = list[0];
	return 0;
}
