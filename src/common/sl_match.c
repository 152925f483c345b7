/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wildcard matches: parsing, formatting, the linear reference match.
 * See sl_match.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>

#include "sl_match.h"

#define SL_MATCH_PORTS_EXPECT "(0-65535, 'LO-HI' or 'any')"

static const char *const sl_match_text_keys[] = {
	"proto", "src", "dst", "sport", "dport", "in_port", NULL,
};

static const struct {
	const char *name;
	uint8_t proto;
} sl_match_protos[] = {
	{"tcp", IPPROTO_TCP},       {"udp", IPPROTO_UDP},
	{"icmp", IPPROTO_ICMP},     {"icmp6", IPPROTO_ICMPV6},
	{"icmpv6", IPPROTO_ICMPV6}, {"sctp", IPPROTO_SCTP},
	{"gre", IPPROTO_GRE},       {"esp", IPPROTO_ESP},
	{"ah", IPPROTO_AH},
};

#define SL_MATCH_N_PROTOS (sizeof(sl_match_protos) / sizeof(sl_match_protos[0]))

static int sl_match_err(char *err, size_t errlen, const char *key,
			const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "'key': <message>", or just the message if key is NULL. */
static int
sl_match_err(char *err, size_t errlen, const char *key, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err != NULL && errlen > 0) {
		if (key != NULL)
			snprintf(err, errlen, "'%s': %s", key, msg);
		else
			snprintf(err, errlen, "%s", msg);
	}
	return -EINVAL;
}

const char *
sl_json_describe(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, size, "'%.64s'", json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(v));
		break;
	case JSON_TRUE:
		snprintf(buf, size, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, size, "false");
		break;
	case JSON_NULL:
		snprintf(buf, size, "an empty value");
		break;
	case JSON_ARRAY:
		snprintf(buf, size, "a list");
		break;
	case JSON_OBJECT:
	default:
		snprintf(buf, size, "a mapping");
		break;
	}
	return buf;
}

/* Parses "0".."max" made of digits only. */
static int
sl_match_uint(const char *s, size_t n, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 10)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static void
sl_match_prefix_mask(unsigned family, unsigned len, uint32_t mask[4])
{
	unsigned i, words = family == 4 ? 1 : 4;

	memset(mask, 0, 4 * sizeof(mask[0]));
	for (i = 0; i < words; i++) {
		unsigned bits = len > 32 * i ? len - 32 * i : 0;

		if (bits >= 32)
			mask[i] = 0xffffffffu;
		else if (bits > 0)
			mask[i] = htonl(~0u << (32 - bits));
	}
}

/*
 * "any", "A.B.C.D", "A.B.C.D/N", "X:Y::Z", "X:Y::Z/N". Sets family 0 for
 * "any". Returns 0, -1 if not a prefix, -2 if host bits are set.
 */
static int
sl_match_parse_prefix(const char *s, uint8_t *family, uint32_t addr[4],
		      uint32_t mask[4], uint8_t *len)
{
	char a[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	unsigned long plen;
	unsigned fam, max, i;

	memset(addr, 0, 4 * sizeof(addr[0]));
	memset(mask, 0, 4 * sizeof(mask[0]));
	*len = 0;
	if (strcmp(s, "any") == 0) {
		*family = 0;
		return 0;
	}
	if (alen == 0 || alen >= sizeof(a))
		return -1;
	memcpy(a, s, alen);
	a[alen] = '\0';
	fam = strchr(a, ':') ? 6 : 4;
	max = fam == 4 ? 32 : 128;
	if (inet_pton(fam == 4 ? AF_INET : AF_INET6, a, addr) != 1)
		return -1;
	if (slash == NULL)
		plen = max;
	else if (sl_match_uint(slash + 1, strlen(slash + 1), max, &plen) != 0)
		return -1;
	sl_match_prefix_mask(fam, (unsigned)plen, mask);
	*family = (uint8_t)fam;
	*len = (uint8_t)plen;
	for (i = 0; i < 4; i++)
		if (addr[i] & ~mask[i])
			return -2;
	return 0;
}

static int
sl_match_get_prefix(const char *key, const json_t *v, struct sl_match *m,
		    int is_src, char *err, size_t errlen)
{
	char d[96], fixed[INET6_ADDRSTRLEN];
	uint32_t *addr = is_src ? m->src : m->dst;
	uint32_t *mask = is_src ? m->src_mask : m->dst_mask;
	uint8_t *len = is_src ? &m->src_len : &m->dst_len;
	uint8_t fam;
	int rc;

	if (!json_is_string(v))
		return sl_match_err(err, errlen, key,
				    "%s is not a valid prefix",
				    sl_json_describe(v, d, sizeof(d)));
	rc = sl_match_parse_prefix(json_string_value(v), &fam, addr, mask, len);
	if (rc == -2) {
		uint32_t net[4];
		unsigned i;

		for (i = 0; i < 4; i++)
			net[i] = addr[i] & mask[i];
		inet_ntop(fam == 4 ? AF_INET : AF_INET6, net, fixed,
			  sizeof(fixed));
		return sl_match_err(err, errlen, key,
				    "%s has bits set after the prefix length "
				    "(did you mean '%s/%u'?)",
				    sl_json_describe(v, d, sizeof(d)), fixed,
				    *len);
	}
	if (rc != 0)
		return sl_match_err(err, errlen, key,
				    "%s is not a valid prefix",
				    sl_json_describe(v, d, sizeof(d)));
	if (fam == 0)
		return 0;
	if (m->family != 0 && m->family != fam)
		return sl_match_err(err, errlen, key,
				    "%s is an IPv%u prefix but 'src' is IPv%u",
				    sl_json_describe(v, d, sizeof(d)), fam,
				    m->family);
	m->family = fam;
	return 0;
}

/* A number (integer or string) 0-65535, "LO-HI" or "any". */
static int
sl_match_get_range(const char *key, const json_t *v, const char *what,
		   uint16_t *lo, uint16_t *hi, char *err, size_t errlen)
{
	unsigned long a, b;
	char d[96];

	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x >= 0 && x <= 65535) {
			*lo = *hi = (uint16_t)x;
			return 0;
		}
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		const char *dash = strchr(s, '-');

		if (strcmp(s, "any") == 0) {
			*lo = 0;
			*hi = 65535;
			return 0;
		}
		if (dash == NULL &&
		    sl_match_uint(s, strlen(s), 65535, &a) == 0) {
			*lo = *hi = (uint16_t)a;
			return 0;
		}
		if (dash != NULL &&
		    sl_match_uint(s, (size_t)(dash - s), 65535, &a) == 0 &&
		    sl_match_uint(dash + 1, strlen(dash + 1), 65535, &b) == 0) {
			if (a > b)
				return sl_match_err(
					err, errlen, key,
					"%s is an empty range (%lu > %lu)",
					sl_json_describe(v, d, sizeof(d)), a,
					b);
			*lo = (uint16_t)a;
			*hi = (uint16_t)b;
			return 0;
		}
	}
	return sl_match_err(err, errlen, key,
			    "%s is not a valid %s " SL_MATCH_PORTS_EXPECT,
			    sl_json_describe(v, d, sizeof(d)), what);
}

static int
sl_match_get_proto(const json_t *v, struct sl_match *m, char *err,
		   size_t errlen)
{
	unsigned long n;
	char d[96];
	size_t i;

	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x >= 0 && x <= 255) {
			m->proto = (uint8_t)x;
			m->proto_any = 0;
			return 0;
		}
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (strcasecmp(s, "any") == 0) {
			m->proto_any = 1;
			return 0;
		}
		for (i = 0; i < SL_MATCH_N_PROTOS; i++)
			if (strcasecmp(s, sl_match_protos[i].name) == 0) {
				m->proto = sl_match_protos[i].proto;
				m->proto_any = 0;
				return 0;
			}
		if (sl_match_uint(s, strlen(s), 255, &n) == 0) {
			m->proto = (uint8_t)n;
			m->proto_any = 0;
			return 0;
		}
	}
	return sl_match_err(err, errlen, "proto",
			    "%s is not a protocol (tcp, udp, icmp, icmp6, "
			    "sctp, gre, esp, ah, any, or a number 0-255)",
			    sl_json_describe(v, d, sizeof(d)));
}

void
sl_match_init(struct sl_match *m)
{
	memset(m, 0, sizeof(*m));
	m->proto_any = 1;
	m->sport_hi = m->dport_hi = m->in_port_hi = 65535;
}

int
sl_match_has_ports(const struct sl_match *m)
{
	return m->proto_any || m->proto == IPPROTO_TCP ||
	       m->proto == IPPROTO_UDP || m->proto == IPPROTO_SCTP;
}

int
sl_match_from_json(const json_t *obj, struct sl_match *m, char *err,
		   size_t errlen)
{
	const json_t *v;
	char d[96];
	int rc = 0;

	sl_match_init(m);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (!json_is_object(obj))
		return sl_match_err(err, errlen, NULL,
				    "expected a mapping of match fields "
				    "(proto, src, dst, sport, dport), got %s",
				    obj ? sl_json_describe(obj, d, sizeof(d))
					: "nothing");
	if ((v = json_object_get(obj, "proto")) != NULL)
		rc = sl_match_get_proto(v, m, err, errlen);
	if (rc == 0 && (v = json_object_get(obj, "src")) != NULL)
		rc = sl_match_get_prefix("src", v, m, 1, err, errlen);
	if (rc == 0 && (v = json_object_get(obj, "dst")) != NULL)
		rc = sl_match_get_prefix("dst", v, m, 0, err, errlen);
	if (rc == 0 && (v = json_object_get(obj, "sport")) != NULL)
		rc = sl_match_get_range("sport", v, "port or port range",
					&m->sport_lo, &m->sport_hi, err,
					errlen);
	if (rc == 0 && (v = json_object_get(obj, "dport")) != NULL)
		rc = sl_match_get_range("dport", v, "port or port range",
					&m->dport_lo, &m->dport_hi, err,
					errlen);
	if (rc == 0 && !sl_match_has_ports(m) &&
	    (json_object_get(obj, "sport") != NULL ||
	     json_object_get(obj, "dport") != NULL))
		rc = sl_match_err(err, errlen,
				  json_object_get(obj, "sport") ? "sport"
								: "dport",
				  "ports need proto tcp, udp, sctp or any");
	if (rc != 0)
		sl_match_init(m);
	return rc;
}

int
sl_match_parse(const char *text, struct sl_match *m, char *err, size_t errlen)
{
	json_t *obj, *in_port = NULL;
	const char *p = text ? text : "";
	int rc = 0;

	sl_match_init(m);
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	obj = json_object();
	if (obj == NULL)
		return -ENOMEM;
	while (rc == 0) {
		const char *tok, *eq;
		char key[64];
		size_t n, klen, i;
		json_t *v;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (*p == '\0')
			break;
		tok = p;
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		n = (size_t)(p - tok);
		eq = memchr(tok, '=', n);
		if (eq == NULL || eq == tok) {
			rc = sl_match_err(err, errlen, NULL,
					  "'%.*s' is not key=value (e.g. "
					  "proto=tcp dport=80)",
					  (int)(n > 64 ? 64 : n), tok);
			break;
		}
		klen = (size_t)(eq - tok);
		snprintf(key, sizeof(key), "%.*s", (int)klen, tok);
		for (i = 0; sl_match_text_keys[i] != NULL; i++)
			if (klen == strlen(sl_match_text_keys[i]) &&
			    strncmp(tok, sl_match_text_keys[i], klen) == 0)
				break;
		if (sl_match_text_keys[i] == NULL) {
			rc = sl_match_err(err, errlen, NULL,
					  "unknown key '%.32s' (expected "
					  "proto, src, dst, sport, dport, "
					  "in_port)",
					  key);
			break;
		}
		if (json_object_get(obj, key) != NULL) {
			rc = sl_match_err(err, errlen, NULL,
					  "duplicate key '%s'", key);
			break;
		}
		v = json_stringn_nocheck(eq + 1, n - klen - 1);
		if (v == NULL || json_object_set_new(obj, key, v) != 0) {
			rc = -ENOMEM;
			break;
		}
		if (strcmp(key, "in_port") == 0)
			in_port = v;
	}
	if (rc == 0)
		rc = sl_match_from_json(obj, m, err, errlen);
	if (rc == 0 && in_port != NULL)
		rc = sl_match_get_range("in_port", in_port,
					"port id or port id range",
					&m->in_port_lo, &m->in_port_hi, err,
					errlen);
	if (rc == -ENOMEM && err != NULL && errlen > 0)
		snprintf(err, errlen, "out of memory");
	if (rc != 0)
		sl_match_init(m);
	json_decref(obj);
	return rc;
}

int
sl_match_test(const struct sl_match *m, const struct sl_5tuple *t,
	      uint16_t in_port)
{
	uint16_t sp = ntohs(t->sport), dp = ntohs(t->dport);

	if (t->family != 4 && t->family != 6)
		return 0;
	if (m->family != 0 && m->family != t->family)
		return 0;
	if (!m->proto_any && m->proto != t->proto)
		return 0;
	if (sp < m->sport_lo || sp > m->sport_hi || dp < m->dport_lo ||
	    dp > m->dport_hi)
		return 0;
	if (in_port < m->in_port_lo || in_port > m->in_port_hi)
		return 0;
	if (m->family == 4)
		return (t->src.v4 & m->src_mask[0]) == m->src[0] &&
		       (t->dst.v4 & m->dst_mask[0]) == m->dst[0];
	if (m->family == 6) {
		uint32_t s[4], d[4];
		unsigned i;

		memcpy(s, t->src.v6, sizeof(s));
		memcpy(d, t->dst.v6, sizeof(d));
		for (i = 0; i < 4; i++)
			if ((s[i] & m->src_mask[i]) != m->src[i] ||
			    (d[i] & m->dst_mask[i]) != m->dst[i])
				return 0;
	}
	return 1;
}

uint32_t
sl_match_find(const struct sl_match *const *rules, const int32_t *priority,
	      uint32_t n, const struct sl_5tuple *t, uint16_t in_port)
{
	uint32_t i, best = 0;

	for (i = 0; i < n; i++) {
		if (best != 0 &&
		    (priority == NULL || priority[i] <= priority[best - 1]))
			continue;
		if (sl_match_test(rules[i], t, in_port))
			best = i + 1;
		if (best != 0 && priority == NULL)
			break;
	}
	return best;
}

const char *
sl_match_proto_name(uint8_t proto)
{
	size_t i;

	for (i = 0; i < SL_MATCH_N_PROTOS; i++)
		if (sl_match_protos[i].proto == proto)
			return sl_match_protos[i].name;
	return NULL;
}

/* "A.B.C.D/N" or "X:Y::Z/N" of a side of m (family 4 or 6). */
static void
sl_match_prefix_str(const struct sl_match *m, int is_src, char *buf,
		    size_t size)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(m->family == 4 ? AF_INET : AF_INET6, is_src ? m->src : m->dst,
		  a, sizeof(a));
	snprintf(buf, size, "%s/%u", a, is_src ? m->src_len : m->dst_len);
}

static void
sl_match_range_str(uint16_t lo, uint16_t hi, char *buf, size_t size)
{
	if (lo == hi)
		snprintf(buf, size, "%u", lo);
	else
		snprintf(buf, size, "%u-%u", lo, hi);
}

static int
sl_match_is_all(uint16_t lo, uint16_t hi)
{
	return lo == 0 && hi == 65535;
}

/*
 * Calls put(key, value) for each non-wildcard field in the order proto,
 * src, dst, sport, dport (and in_port if with_in_port).
 */
static int
sl_match_fields(const struct sl_match *m, int with_in_port,
		int (*put)(void *arg, const char *key, const char *value),
		void *arg)
{
	char v[INET6_ADDRSTRLEN + 8];
	int rc = 0;

	if (!m->proto_any) {
		const char *name = sl_match_proto_name(m->proto);

		if (name == NULL)
			snprintf(v, sizeof(v), "%u", m->proto);
		rc = put(arg, "proto", name ? name : v);
	}
	if (rc == 0 && m->family != 0 && (m->src_len > 0 || m->dst_len == 0)) {
		/* A family without prefixes shows as src 0.0.0.0/0 or ::/0. */
		sl_match_prefix_str(m, 1, v, sizeof(v));
		rc = put(arg, "src", v);
	}
	if (rc == 0 && m->family != 0 && m->dst_len > 0) {
		sl_match_prefix_str(m, 0, v, sizeof(v));
		rc = put(arg, "dst", v);
	}
	if (rc == 0 && !sl_match_is_all(m->sport_lo, m->sport_hi)) {
		sl_match_range_str(m->sport_lo, m->sport_hi, v, sizeof(v));
		rc = put(arg, "sport", v);
	}
	if (rc == 0 && !sl_match_is_all(m->dport_lo, m->dport_hi)) {
		sl_match_range_str(m->dport_lo, m->dport_hi, v, sizeof(v));
		rc = put(arg, "dport", v);
	}
	if (rc == 0 && with_in_port &&
	    !sl_match_is_all(m->in_port_lo, m->in_port_hi)) {
		sl_match_range_str(m->in_port_lo, m->in_port_hi, v, sizeof(v));
		rc = put(arg, "in_port", v);
	}
	return rc;
}

static int
sl_match_put_json(void *arg, const char *key, const char *value)
{
	json_t *s = json_string(value);

	if (s == NULL || json_object_set_new((json_t *)arg, key, s) != 0)
		return -ENOMEM;
	return 0;
}

int
sl_match_to_json(const struct sl_match *m, json_t *obj)
{
	if (!json_is_object(obj))
		return -EINVAL;
	return sl_match_fields(m, 0, sl_match_put_json, obj);
}

struct sl_match_buf {
	char *buf;
	size_t size;
	size_t off;
};

static int
sl_match_put_text(void *arg, const char *key, const char *value)
{
	struct sl_match_buf *b = arg;
	const char *sep = b->off > 0 ? " " : "";
	int n;

	if (b->off < b->size)
		n = snprintf(b->buf + b->off, b->size - b->off, "%s%s=%s", sep,
			     key, value);
	else
		n = snprintf(NULL, 0, "%s%s=%s", sep, key, value);
	b->off += n > 0 ? (size_t)n : 0;
	return 0;
}

int
sl_match_format(const struct sl_match *m, char *buf, size_t size)
{
	struct sl_match_buf b = {.buf = buf, .size = size, .off = 0};

	if (size > 0)
		buf[0] = '\0';
	sl_match_fields(m, 1, sl_match_put_text, &b);
	if (size > 0 && b.off >= size)
		buf[size - 1] = '\0';
	return (int)b.off;
}
