/* SPDX-License-Identifier: BSD-3-Clause */
/* sluice-lb's configuration file: see config.h and README.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define LB_LINE_MAX 512
#define LB_MAX_WORDS 16

void
lb_addr_format(const struct lb_ip *addr, char *buf, size_t size)
{
	if (inet_ntop(addr->family == 6 ? AF_INET6 : AF_INET, &addr->u, buf,
		      (socklen_t)size) == NULL)
		snprintf(buf, size, "?");
}

int
lb_ip_eq(const struct lb_ip *a, const struct lb_ip *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static int
lb_parse_addr(const char *s, struct lb_ip *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &out->u.v4) == 1) {
		out->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, out->u.v6) == 1) {
		out->family = 6;
		return 0;
	}
	snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", s);
	return EINVAL;
}

/* A whole number from min to max, digits only. */
static int
lb_parse_uint(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long v = 0;

	if (*s == '\0' || strlen(s) > 9)
		return EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return EINVAL;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < min || v > max)
		return EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int
lb_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char end;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &end) != 6)
		return EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

/* Splits s (modified) into at most LB_MAX_WORDS words; -1 if more. */
static int
lb_split(char *s, char **w)
{
	char *save = NULL, *t;
	int n = 0;

	for (t = strtok_r(s, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == LB_MAX_WORDS)
			return -1;
		w[n++] = t;
	}
	return n;
}

static int
lb_name_ok(const char *s, const char *what, char *err, size_t errlen)
{
	if (strlen(s) >= LB_NAME_MAX) {
		snprintf(err, errlen, "%s '%s' is longer than %d characters",
			 what, s, LB_NAME_MAX - 1);
		return EINVAL;
	}
	return 0;
}

/* The words of a backend after NAME ADDR: weight, mac and via. */
static int
lb_backend_words(char **w, int n, struct lb_backend_spec *b, char *err,
		 size_t errlen)
{
	for (int i = 2; i < n; i += 2) {
		if (i + 1 >= n) {
			snprintf(err, errlen, "'%s' needs a value", w[i]);
			return EINVAL;
		}
		if (strcmp(w[i], "weight") == 0) {
			if (lb_parse_uint(w[i + 1], 0, LB_WEIGHT_MAX,
					  &b->weight) != 0) {
				snprintf(err, errlen,
					 "weight '%s' is not a whole number "
					 "from 0 to %d",
					 w[i + 1], LB_WEIGHT_MAX);
				return EINVAL;
			}
		} else if (strcmp(w[i], "mac") == 0) {
			if (lb_parse_mac(w[i + 1], b->mac) != 0) {
				snprintf(err, errlen,
					 "mac '%s' is not a MAC address (like "
					 "02:00:00:00:00:01)",
					 w[i + 1]);
				return EINVAL;
			}
			b->has_mac = 1;
		} else if (strcmp(w[i], "via") == 0) {
			if (lb_name_ok(w[i + 1], "port", err, errlen) != 0)
				return EINVAL;
			snprintf(b->via, sizeof(b->via), "%s", w[i + 1]);
		} else {
			snprintf(err, errlen,
				 "unknown backend option '%s' (use weight, "
				 "mac or via)",
				 w[i]);
			return EINVAL;
		}
	}
	return 0;
}

static int
lb_backend_parse_words(char **w, int n, struct lb_backend_spec *b, char *err,
		       size_t errlen)
{
	memset(b, 0, sizeof(*b));
	b->weight = 1;
	if (n < 2) {
		snprintf(err, errlen,
			 "a backend is NAME ADDR [weight W] [mac MAC] "
			 "[via PORT]");
		return EINVAL;
	}
	if (lb_name_ok(w[0], "backend name", err, errlen) != 0)
		return EINVAL;
	snprintf(b->name, sizeof(b->name), "%s", w[0]);
	if (lb_parse_addr(w[1], &b->addr, err, errlen) != 0)
		return EINVAL;
	return lb_backend_words(w, n, b, err, errlen);
}

int
lb_backend_parse(const char *text, struct lb_backend_spec *b, char *err,
		 size_t errlen)
{
	char buf[LB_LINE_MAX], *w[LB_MAX_WORDS];
	int n;

	if (strlen(text) >= sizeof(buf)) {
		snprintf(err, errlen, "too long");
		return EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	n = lb_split(buf, w);
	if (n < 0) {
		snprintf(err, errlen, "too many words");
		return EINVAL;
	}
	return lb_backend_parse_words(w, n, b, err, errlen);
}

/* "80,443" into c->ports. */
static int
lb_parse_ports(char *s, struct lb_config *c, char *err, size_t errlen)
{
	char *save = NULL, *t;
	uint32_t v;

	for (t = strtok_r(s, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		if (lb_parse_uint(t, 1, 65535, &v) != 0) {
			snprintf(err, errlen,
				 "port '%s' is not a whole number from 1 to "
				 "65535",
				 t);
			return EINVAL;
		}
		if (c->n_ports == LB_MAX_PORTS) {
			snprintf(err, errlen, "more than %d ports",
				 LB_MAX_PORTS);
			return EINVAL;
		}
		c->ports[c->n_ports++] = (uint16_t)v;
	}
	if (c->n_ports == 0) {
		snprintf(err, errlen, "ports needs a list like 80,443");
		return EINVAL;
	}
	return 0;
}

/* vip ADDR [proto tcp|udp|any] [ports P[,P]...] */
static int
lb_parse_vip(char **w, int n, struct lb_config *c, char *err, size_t errlen)
{
	if (n < 2) {
		snprintf(err, errlen,
			 "vip needs an address: vip ADDR [proto tcp|udp|any] "
			 "[ports P,P...]");
		return EINVAL;
	}
	if (lb_parse_addr(w[1], &c->vip, err, errlen) != 0)
		return EINVAL;
	for (int i = 2; i < n; i += 2) {
		if (i + 1 >= n) {
			snprintf(err, errlen, "'%s' needs a value", w[i]);
			return EINVAL;
		}
		if (strcmp(w[i], "proto") == 0) {
			if (strcmp(w[i + 1], "tcp") == 0)
				c->proto = LB_PROTO_TCP;
			else if (strcmp(w[i + 1], "udp") == 0)
				c->proto = LB_PROTO_UDP;
			else if (strcmp(w[i + 1], "any") == 0)
				c->proto = LB_PROTO_TCP | LB_PROTO_UDP;
			else {
				snprintf(err, errlen,
					 "proto '%s': use tcp, udp or any",
					 w[i + 1]);
				return EINVAL;
			}
		} else if (strcmp(w[i], "ports") == 0) {
			if (lb_parse_ports(w[i + 1], c, err, errlen) != 0)
				return EINVAL;
		} else {
			snprintf(err, errlen,
				 "unknown vip option '%s' (use proto or ports)",
				 w[i]);
			return EINVAL;
		}
	}
	return 0;
}

/* A backend line: checked against those before it. */
static int
lb_add_backend(char **w, int n, uint32_t line, uint32_t max,
	       struct lb_config *c, char *err, size_t errlen)
{
	struct lb_backend_spec b;
	char a[LB_ADDR_STRLEN];

	if (lb_backend_parse_words(w + 1, n - 1, &b, err, errlen) != 0)
		return EINVAL;
	b.line = line;
	for (uint32_t i = 0; i < c->n_backends; i++) {
		const struct lb_backend_spec *o = &c->backends[i];

		if (strcmp(o->name, b.name) == 0) {
			snprintf(err, errlen,
				 "backend '%s' given twice (first on line %u)",
				 b.name, o->line);
			return EINVAL;
		}
		if (lb_ip_eq(&o->addr, &b.addr)) {
			lb_addr_format(&b.addr, a, sizeof(a));
			snprintf(err, errlen,
				 "address %s given twice (backend '%s' on "
				 "line %u)",
				 a, o->name, o->line);
			return EINVAL;
		}
	}
	if (c->n_backends == max) {
		snprintf(err, errlen, "more than %u backends (--max-backends)",
			 max);
		return ENOSPC;
	}
	c->backends[c->n_backends++] = b;
	return 0;
}

static int
lb_parse_line(char *s, uint32_t line, uint32_t max, struct lb_config *c,
	      uint32_t *vip_line, char *err, size_t errlen)
{
	char *w[LB_MAX_WORDS], *hash = strchr(s, '#');
	int n;

	if (hash != NULL)
		*hash = '\0';
	n = lb_split(s, w);
	if (n < 0) {
		snprintf(err, errlen, "more than %d words", LB_MAX_WORDS);
		return EINVAL;
	}
	if (n == 0)
		return 0;
	if (strcmp(w[0], "vip") == 0) {
		if (*vip_line != 0) {
			snprintf(err, errlen,
				 "a second vip line (the first is line %u)",
				 *vip_line);
			return EINVAL;
		}
		*vip_line = line;
		return lb_parse_vip(w, n, c, err, errlen);
	}
	if (strcmp(w[0], "backend") == 0)
		return lb_add_backend(w, n, line, max, c, err, errlen);
	snprintf(err, errlen, "unknown keyword '%s' (use vip or backend)",
		 w[0]);
	return EINVAL;
}

static int
lb_config_read(FILE *f, const char *path, uint32_t max, struct lb_config *c,
	       char *err, size_t errlen)
{
	char buf[LB_LINE_MAX], why[256];
	uint32_t line = 0, vip_line = 0;
	int rc;

	while (fgets(buf, sizeof(buf), f) != NULL) {
		line++;
		if (strchr(buf, '\n') == NULL && !feof(f)) {
			snprintf(err, errlen,
				 "%s:%u: line longer than %d characters", path,
				 line, LB_LINE_MAX - 2);
			return EINVAL;
		}
		rc = lb_parse_line(buf, line, max, c, &vip_line, why,
				   sizeof(why));
		if (rc != 0) {
			snprintf(err, errlen, "%s:%u: %s", path, line, why);
			return rc;
		}
	}
	if (vip_line == 0) {
		snprintf(err, errlen,
			 "%s: no vip line (vip ADDR [proto tcp|udp|any] "
			 "[ports P,P...])",
			 path);
		return EINVAL;
	}
	if (c->n_backends == 0) {
		snprintf(err, errlen,
			 "%s: no backend line (backend NAME ADDR [weight W] "
			 "[mac MAC] [via PORT])",
			 path);
		return EINVAL;
	}
	for (uint32_t i = 0; i < c->n_backends; i++) {
		const struct lb_backend_spec *b = &c->backends[i];
		char a[LB_ADDR_STRLEN];

		if (b->addr.family == c->vip.family)
			continue;
		lb_addr_format(&b->addr, a, sizeof(a));
		snprintf(err, errlen,
			 "%s:%u: backend '%s': %s is IPv%u but the vip (line "
			 "%u) is IPv%u",
			 path, b->line, b->name, a, b->addr.family, vip_line,
			 c->vip.family);
		return EINVAL;
	}
	return 0;
}

int
lb_config_load(const char *path, uint32_t max_backends, struct lb_config *c,
	       char *err, size_t errlen)
{
	FILE *f;
	int rc;

	memset(c, 0, sizeof(*c));
	c->proto = LB_PROTO_TCP | LB_PROTO_UDP;
	c->backends =
		calloc(max_backends ? max_backends : 1, sizeof(*c->backends));
	if (c->backends == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		return ENOMEM;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		rc = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(rc));
		lb_config_free(c);
		return rc;
	}
	rc = lb_config_read(f, path, max_backends, c, err, errlen);
	if (rc == 0 && ferror(f)) {
		rc = EIO;
		snprintf(err, errlen, "%s: read error", path);
	}
	fclose(f);
	if (rc != 0)
		lb_config_free(c);
	return rc;
}

void
lb_config_free(struct lb_config *c)
{
	free(c->backends);
	memset(c, 0, sizeof(*c));
}

int
lb_config_takes(const struct lb_config *c, uint8_t proto, uint16_t port)
{
	if (proto == IPPROTO_TCP) {
		if (!(c->proto & LB_PROTO_TCP))
			return 0;
	} else if (proto == IPPROTO_UDP) {
		if (!(c->proto & LB_PROTO_UDP))
			return 0;
	} else {
		return 0;
	}
	if (c->n_ports == 0)
		return 1;
	for (uint32_t i = 0; i < c->n_ports; i++)
		if (c->ports[i] == port)
			return 1;
	return 0;
}
