/* SPDX-License-Identifier: BSD-3-Clause */
/* Address prefixes for the DDoS sample NFs: see prefix.h. */
#include "prefix.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Clears the bits of a after the first len. */
static void
mask_bits(uint8_t *a, unsigned width, unsigned len)
{
	for (unsigned i = 0; i < width / 8; i++) {
		unsigned keep = len >= 8 * (i + 1) ? 8
				: len <= 8 * i     ? 0
						   : len - 8 * i;

		a[i] &= (uint8_t)(0xff00u >> keep);
	}
}

int
ddos_prefix_parse(const char *s, struct ddos_prefix *p, char *err,
		  size_t errlen)
{
	char a[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash != NULL ? (size_t)(slash - s) : strlen(s);
	unsigned width;
	unsigned long len;
	uint8_t net[16];
	char *end;

	memset(p, 0, sizeof(*p));
	if (alen == 0 || alen >= sizeof(a))
		goto bad;
	memcpy(a, s, alen);
	a[alen] = '\0';
	p->family = strchr(a, ':') != NULL ? 6 : 4;
	width = p->family == 4 ? 32 : 128;
	if (inet_pton(p->family == 4 ? AF_INET : AF_INET6, a, p->addr) != 1)
		goto bad;
	if (slash == NULL) {
		len = width;
	} else {
		errno = 0;
		if (slash[1] < '0' || slash[1] > '9')
			goto bad_len;
		len = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || errno != 0 || len > width)
			goto bad_len;
	}
	p->len = (uint8_t)len;
	memcpy(net, p->addr, sizeof(net));
	mask_bits(net, width, (unsigned)len);
	if (memcmp(net, p->addr, width / 8) != 0) {
		char fixed[INET6_ADDRSTRLEN];

		inet_ntop(p->family == 4 ? AF_INET : AF_INET6, net, fixed,
			  sizeof(fixed));
		snprintf(err, errlen,
			 "'%s' has bits set after the prefix length: write "
			 "%s/%lu (or the address alone for one host)",
			 s, fixed, len);
		memset(p, 0, sizeof(*p));
		return -EINVAL;
	}
	return 0;
bad_len:
	snprintf(err, errlen,
		 "'%s': the prefix length must be a number from 0 to %u for "
		 "an IPv%u address",
		 s, width, (unsigned)p->family);
	memset(p, 0, sizeof(*p));
	return -EINVAL;
bad:
	snprintf(err, errlen,
		 "'%s' is not an address prefix: write A.B.C.D/N (IPv4) or "
		 "X:Y::Z/N (IPv6), e.g. 10.66.6.0/24",
		 s);
	memset(p, 0, sizeof(*p));
	return -EINVAL;
}

void
ddos_prefix_of(const struct sl_5tuple *t, int src, unsigned len,
	       struct ddos_prefix *p)
{
	unsigned width = t->family == 4 ? 32 : 128;

	memset(p, 0, sizeof(*p));
	p->family = t->family;
	p->len = (uint8_t)(len < width ? len : width);
	if (t->family == 4)
		memcpy(p->addr, src ? &t->src.v4 : &t->dst.v4, 4);
	else
		memcpy(p->addr, src ? t->src.v6 : t->dst.v6, 16);
	mask_bits(p->addr, width, p->len);
}

int
ddos_prefix_has(const struct ddos_prefix *p, const struct sl_5tuple *t, int src)
{
	struct ddos_prefix q;

	if (t->family != p->family)
		return 0;
	ddos_prefix_of(t, src, p->len, &q);
	return memcmp(q.addr, p->addr, sizeof(q.addr)) == 0;
}

int
ddos_prefix_format(const struct ddos_prefix *p, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (inet_ntop(p->family == 4 ? AF_INET : AF_INET6, p->addr, a,
		      sizeof(a)) == NULL)
		snprintf(a, sizeof(a), "?");
	return snprintf(buf, size, "%s/%u", a, (unsigned)p->len);
}
