/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The SA file of sluice-vpn: one "sa" or "policy" per line, "#" starts a
 * comment (format in README.md). Every error names the file, the line and
 * the problem. The result is plain memory plus one OpenSSL context per SA
 * with its key already set, so the data path sets only the IV.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "sa.h"

#define VPN_LINE_MAX 1024
#define VPN_TOKENS 32

/* A file being read: where we are, for the messages. */
struct vpn_reader {
	const char *path;
	unsigned line;
	char *err;
	size_t err_size;
	const struct vpn_limits *lim;
	vpn_port_lookup ports;
	void *ports_arg;
	struct vpn_sad *sad;
	uint32_t cap_sas, cap_pols;
	uint32_t *pol_spi; /* a policy's SPI until the SAs are all known */
};

static int __attribute__((format(printf, 2, 3)))
vpn_fail(struct vpn_reader *r, const char *fmt, ...)
{
	char msg[VPN_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->line > 0)
		snprintf(r->err, r->err_size, "%s:%u: %s", r->path, r->line,
			 msg);
	else
		snprintf(r->err, r->err_size, "%s: %s", r->path, msg);
	return EINVAL;
}

static int
vpn_parse_u32(const char *s, uint64_t min, uint64_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (s[0] == '-' || s[0] == '+' || isspace((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
vpn_parse_ip(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

/* "A.B.C.D/N" or "A.B.C.D" (/32) or "any"; 0, or -1 (bad), -2 (host
 * bits set). */
static int
vpn_parse_prefix(const char *s, uint32_t *addr, uint32_t *mask)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	uint32_t len = 32;
	size_t n;

	if (strcmp(s, "any") == 0) {
		*addr = 0;
		*mask = 0;
		return 0;
	}
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (vpn_parse_ip(buf, addr) != 0)
		return -1;
	if (slash != NULL && (!isdigit((unsigned char)slash[1]) ||
			      vpn_parse_u32(slash + 1, 0, 32, &len) != 0))
		return -1;
	*mask = len == 0 ? 0 : ~0u << (32 - len);
	return (*addr & ~*mask) != 0 ? -2 : 0;
}

/* "X:Y::Z/N" or "X:Y::Z" (/128); 0, -1 (bad) or -2 (host bits set). */
static int
vpn_parse_prefix6(const char *s, uint8_t addr[16], uint8_t mask[16])
{
	char buf[64];
	const char *slash = strchr(s, '/');
	uint32_t len = 128;
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	int bad = 0;

	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET6, buf, addr) != 1)
		return -1;
	if (slash != NULL && (!isdigit((unsigned char)slash[1]) ||
			      vpn_parse_u32(slash + 1, 0, 128, &len) != 0))
		return -1;
	for (uint32_t i = 0; i < 16; i++) {
		uint32_t bits = len > i * 8 ? len - i * 8 : 0;

		mask[i] = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);
		bad |= addr[i] & ~mask[i];
	}
	return bad ? -2 : 0;
}

static int
vpn_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[3 * i]) ||
		    !isxdigit((unsigned char)s[3 * i + 1]))
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static int
vpn_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The key field: 0x and the key's then the salt's bytes in hex. */
static int
vpn_parse_key(struct vpn_reader *r, struct vpn_sa *sa, const char *s)
{
	size_t want = (size_t)sa->key_len + VPN_SALT_LEN, n;
	uint8_t b[VPN_KEY_MAX + VPN_SALT_LEN];

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	n = strlen(s);
	if (n != 2 * want)
		return vpn_fail(r,
				"sa: key for aes%u-gcm16 must be %zu bytes "
				"(%u of key, 4 of salt): 0x and %zu hex "
				"digits, not %zu",
				sa->key_len * 8u, want, sa->key_len, 2 * want,
				n);
	for (size_t i = 0; i < want; i++) {
		int hi = vpn_hex(s[2 * i]), lo = vpn_hex(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return vpn_fail(r, "sa: key: '%c' is not a hex digit",
					hi < 0 ? s[2 * i] : s[2 * i + 1]);
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(sa->key, b, sa->key_len);
	memcpy(sa->salt, b + sa->key_len, VPN_SALT_LEN);
	return 0;
}

/* Splits line into tokens (whitespace; "#" ends it). */
static int
vpn_tokens(char *line, char **tok)
{
	int n = 0;
	char *p = line, *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	while (n < VPN_TOKENS) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			break;
		tok[n++] = p;
		while (*p != '\0' && !isspace((unsigned char)*p))
			p++;
		if (*p != '\0')
			*p++ = '\0';
	}
	while (isspace((unsigned char)*p))
		p++;
	return *p != '\0' ? -1 : n;
}

enum {
	F_SPI = 1 << 0,
	F_LOCAL = 1 << 1,
	F_REMOTE = 1 << 2,
	F_CIPHER = 1 << 3,
	F_KEY = 1 << 4,
	F_ESN = 1 << 5,
	F_PORT = 1 << 6,
	F_SRC = 1 << 7,
	F_DST = 1 << 8,
	F_ISRC = 1 << 9,
	F_IDST = 1 << 10,
};

static const char *const vpn_sa_fields[] = {"spi",       "local",     "remote",
					    "cipher",    "key",       "esn",
					    "port",      "eth-src",   "eth-dst",
					    "inner-src", "inner-dst", NULL};

/* inner-src / inner-dst of an inbound SA: what its packets may carry. */
static int
vpn_sa_selector(struct vpn_reader *r, struct vpn_sa *sa, int src, const char *v)
{
	const char *name = src ? "inner-src" : "inner-dst";
	int rc;

	if (sa->dir != VPN_IN)
		return vpn_fail(r,
				"sa: %s is for 'sa in' (policy lines choose "
				"what goes into an 'sa out')",
				name);
	rc = vpn_parse_prefix(v, src ? &sa->sel_src : &sa->sel_dst,
			      src ? &sa->sel_src_mask : &sa->sel_dst_mask);
	if (rc == -2)
		return vpn_fail(r,
				"sa: %s '%s' has bits set after the prefix "
				"length",
				name, v);
	if (rc != 0)
		return vpn_fail(r,
				"sa: %s '%s' is not an IPv4 prefix (A.B.C.D/N, "
				"A.B.C.D or any)",
				name, v);
	sa->has_sel = 1;
	return 0;
}

/* One field of an sa line and its value (NULL for esn). */
static int
vpn_sa_field(struct vpn_reader *r, struct vpn_sa *sa, int f, const char *v,
	     const char **key_text)
{
	switch (f) {
	case F_SPI:
		if (vpn_parse_u32(v, 256, UINT32_MAX, &sa->spi) != 0)
			return vpn_fail(r,
					"sa: spi '%s' is not a number from "
					"256 to 4294967295 (0x100 to "
					"0xffffffff; 1-255 are reserved)",
					v);
		return 0;
	case F_LOCAL:
	case F_REMOTE:
		if (vpn_parse_ip(v, f == F_LOCAL ? &sa->local : &sa->remote))
			return vpn_fail(r, "sa: %s '%s' is not an IPv4 address",
					f == F_LOCAL ? "local" : "remote", v);
		return 0;
	case F_CIPHER:
		if (strcmp(v, "aes128-gcm16") == 0)
			sa->key_len = 16;
		else if (strcmp(v, "aes256-gcm16") == 0)
			sa->key_len = 32;
		else
			return vpn_fail(r,
					"sa: cipher '%s': use aes128-gcm16 or "
					"aes256-gcm16",
					v);
		return 0;
	case F_KEY:
		*key_text = v; /* read once the cipher is known */
		return 0;
	case F_ESN:
		sa->esn = 1;
		return 0;
	case F_PORT:
		snprintf(sa->port_name, sizeof(sa->port_name), "%s", v);
		sa->port = r->ports(r->ports_arg, v);
		if (sa->port < 0)
			return vpn_fail(r,
					"sa: port '%s': no such port (sluice "
					"status lists them)",
					v);
		return 0;
	case F_ISRC:
	case F_IDST:
		return vpn_sa_selector(r, sa, f == F_ISRC, v);
	case F_SRC:
	case F_DST:
		if (vpn_parse_mac(v, f == F_SRC ? sa->eth_src : sa->eth_dst))
			return vpn_fail(r,
					"sa: %s '%s' is not a MAC address "
					"(xx:xx:xx:xx:xx:xx)",
					f == F_SRC ? "eth-src" : "eth-dst", v);
		*(f == F_SRC ? &sa->set_src : &sa->set_dst) = 1;
		return 0;
	}
	return EINVAL;
}

static int
vpn_sa_fields_read(struct vpn_reader *r, struct vpn_sa *sa, char **tok, int n,
		   unsigned *seen, const char **key_text)
{
	for (int i = 2; i < n; i++) {
		int k, f;

		for (k = 0; vpn_sa_fields[k] != NULL; k++)
			if (strcmp(tok[i], vpn_sa_fields[k]) == 0)
				break;
		if (vpn_sa_fields[k] == NULL)
			return vpn_fail(r,
					"sa: unknown field '%s' (expected spi, "
					"local, remote, cipher, key, esn, "
					"port, eth-src, eth-dst, inner-src, "
					"inner-dst)",
					tok[i]);
		f = 1 << k;
		if (*seen & (unsigned)f)
			return vpn_fail(r, "sa: '%s' given twice", tok[i]);
		*seen |= (unsigned)f;
		if (f != F_ESN && ++i >= n)
			return vpn_fail(r, "sa: '%s' needs a value",
					tok[i - 1]);
		if (vpn_sa_field(r, sa, f, f == F_ESN ? NULL : tok[i],
				 key_text) != 0)
			return EINVAL;
	}
	return 0;
}

/* Makes the SA's OpenSSL context, its key set. */
static int
vpn_sa_ctx(struct vpn_reader *r, struct vpn_sa *sa)
{
	const EVP_CIPHER *c = sa->key_len == 16 ? EVP_aes_128_gcm()
						: EVP_aes_256_gcm();

	sa->ctx = EVP_CIPHER_CTX_new();
	if (sa->ctx == NULL ||
	    EVP_CipherInit_ex(sa->ctx, c, NULL, NULL, NULL,
			      sa->dir == VPN_OUT) != 1 ||
	    EVP_CIPHER_CTX_ctrl(sa->ctx, EVP_CTRL_GCM_SET_IVLEN,
				VPN_SALT_LEN + VPN_IV_LEN, NULL) != 1 ||
	    EVP_CipherInit_ex(sa->ctx, NULL, NULL, sa->key, NULL,
			      sa->dir == VPN_OUT) != 1)
		return vpn_fail(r, "sa: OpenSSL cannot set up AES-GCM");
	return 0;
}

static int
vpn_same_key(const struct vpn_sa *a, const struct vpn_sa *b)
{
	return a->key_len == b->key_len &&
	       memcmp(a->key, b->key, a->key_len) == 0 &&
	       memcmp(a->salt, b->salt, VPN_SALT_LEN) == 0;
}

static int
vpn_sa_line(struct vpn_reader *r, char **tok, int n)
{
	struct vpn_sad *sad = r->sad;
	struct vpn_sa *sa;
	const char *key_text = NULL, *miss = NULL;
	unsigned seen = 0;

	if (sad->n_sas >= r->lim->max_sas)
		return vpn_fail(r, "more than %" PRIu32 " SAs (--max-sas)",
				r->lim->max_sas);
	sa = &sad->sas[sad->n_sas];
	memset(sa, 0, sizeof(*sa));
	sa->port = -1;
	sa->line = r->line;
	if (n < 2 || (strcmp(tok[1], "out") != 0 && strcmp(tok[1], "in") != 0))
		return vpn_fail(r, "sa: the direction '%s' is not in or out",
				n < 2 ? "" : tok[1]);
	sa->dir = strcmp(tok[1], "in") == 0 ? VPN_IN : VPN_OUT;
	if (vpn_sa_fields_read(r, sa, tok, n, &seen, &key_text) != 0)
		return EINVAL;
	if (!(seen & F_SPI))
		miss = "spi";
	else if (!(seen & F_LOCAL))
		miss = "local";
	else if (!(seen & F_REMOTE))
		miss = "remote";
	else if (!(seen & F_CIPHER))
		miss = "cipher";
	else if (!(seen & F_KEY))
		miss = "key";
	if (miss != NULL)
		return vpn_fail(r, "sa: missing '%s'", miss);
	for (uint32_t i = 0; i < sad->n_sas; i++)
		if (sad->sas[i].spi == sa->spi && sad->sas[i].dir == sa->dir)
			return vpn_fail(r,
					"sa: %s SPI 0x%" PRIx32
					" is already defined on line %u",
					tok[1], sa->spi, sad->sas[i].line);
	if (vpn_parse_key(r, sa, key_text) != 0)
		return EINVAL;
	for (uint32_t i = 0; i < sad->n_sas; i++)
		if (sa->dir == VPN_OUT && sad->sas[i].dir == VPN_OUT &&
		    vpn_same_key(sa, &sad->sas[i]))
			return vpn_fail(r,
					"sa: the key and salt of the 'sa out' "
					"on line %u: their IVs would repeat "
					"(AES-GCM needs a nonce used once per "
					"key)",
					sad->sas[i].line);
	if (vpn_sa_ctx(r, sa) != 0) {
		EVP_CIPHER_CTX_free(sa->ctx);
		sa->ctx = NULL;
		return EINVAL;
	}
	sad->n_sas++;
	return 0;
}

static int
vpn_policy_field(struct vpn_reader *r, struct vpn_policy *p, const char *f,
		 const char *v, uint32_t *spi)
{
	if (strcmp(f, "src") == 0 || strcmp(f, "dst") == 0) {
		int s = strcmp(f, "src") == 0, rc, fam = 4;

		if (strchr(v, ':') != NULL) {
			fam = 6;
			rc = vpn_parse_prefix6(v, s ? p->src6 : p->dst6,
					       s ? p->src6_mask : p->dst6_mask);
		} else {
			rc = vpn_parse_prefix(v, s ? &p->src : &p->dst,
					      s ? &p->src_mask : &p->dst_mask);
			if (strcmp(v, "any") == 0)
				fam = 0;
		}
		if (rc == 0 && fam != 0 && p->family != 0 && p->family != fam)
			return vpn_fail(r,
					"policy: src and dst are of different "
					"address families");
		if (rc == 0 && fam != 0)
			p->family = (uint8_t)fam;

		if (rc == -2)
			return vpn_fail(r,
					"policy: %s '%s' has bits set after "
					"the prefix length",
					f, v);
		if (rc != 0)
			return vpn_fail(r,
					"policy: %s '%s' is not a prefix "
					"(A.B.C.D/N, A.B.C.D, X:Y::Z/N, X:Y::Z "
					"or any)",
					f, v);
	} else if (strcmp(f, "proto") == 0) {
		uint32_t n;

		if (strcmp(v, "any") == 0)
			p->proto = -1;
		else if (strcmp(v, "tcp") == 0)
			p->proto = IPPROTO_TCP;
		else if (strcmp(v, "udp") == 0)
			p->proto = IPPROTO_UDP;
		else if (strcmp(v, "icmp") == 0)
			p->proto = IPPROTO_ICMP;
		else if (vpn_parse_u32(v, 0, 255, &n) == 0)
			p->proto = (int)n;
		else
			return vpn_fail(r,
					"policy: proto '%s': use tcp, udp, "
					"icmp, any or a number 0-255",
					v);
	} else if (strcmp(f, "sa") == 0) {
		if (vpn_parse_u32(v, 256, UINT32_MAX, spi) != 0)
			return vpn_fail(r,
					"policy: sa '%s' is not an SPI (256 "
					"to 4294967295)",
					v);
	} else {
		return vpn_fail(r,
				"policy: unknown field '%s' (expected src, "
				"dst, proto, sa)",
				f);
	}
	return 0;
}

static int
vpn_policy_line(struct vpn_reader *r, char **tok, int n)
{
	struct vpn_sad *sad = r->sad;
	struct vpn_policy *p;
	uint32_t spi = 0;
	char seen[4] = {0};
	static const char *const names[] = {"src", "dst", "proto", "sa"};

	if (sad->n_pols >= r->lim->max_policies)
		return vpn_fail(r,
				"more than %" PRIu32 " policies "
				"(--max-policies)",
				r->lim->max_policies);
	p = &sad->pols[sad->n_pols];
	memset(p, 0, sizeof(*p));
	p->proto = -1;
	p->line = r->line;
	for (int i = 1; i < n; i += 2) {
		for (int k = 0; k < 4; k++) {
			if (strcmp(tok[i], names[k]) != 0)
				continue;
			if (seen[k]++)
				return vpn_fail(r, "policy: '%s' given twice",
						tok[i]);
		}
		if (i + 1 >= n &&
		    (strcmp(tok[i], "src") == 0 || strcmp(tok[i], "dst") == 0 ||
		     strcmp(tok[i], "proto") == 0 || strcmp(tok[i], "sa") == 0))
			return vpn_fail(r, "policy: '%s' needs a value",
					tok[i]);
		if (vpn_policy_field(r, p, tok[i], i + 1 < n ? tok[i + 1] : "",
				     &spi) != 0)
			return EINVAL;
	}
	if (!seen[3])
		return vpn_fail(r, "policy: missing 'sa'");
	r->pol_spi[sad->n_pols++] = spi;
	return 0;
}

/* After the last line: each policy's SA, the inbound SPI index. */
static int
vpn_sad_link(struct vpn_reader *r)
{
	struct vpn_sad *sad = r->sad;

	for (uint32_t i = 0; i < sad->n_pols; i++) {
		uint32_t k;

		for (k = 0; k < sad->n_sas; k++)
			if (sad->sas[k].dir == VPN_OUT &&
			    sad->sas[k].spi == r->pol_spi[i])
				break;
		if (k == sad->n_sas) {
			r->line = sad->pols[i].line;
			return vpn_fail(r,
					"policy: sa 0x%" PRIx32
					": no 'sa out' with that SPI",
					r->pol_spi[i]);
		}
		sad->pols[i].sa = k;
	}
	r->line = 0;
	if (sad->n_sas == 0)
		return vpn_fail(r, "no 'sa' line");
	for (uint32_t k = 0; k < sad->n_sas; k++) {
		if (sad->sas[k].dir != VPN_IN)
			continue;
		sad->sas[k].window =
			calloc(sad->window_words, sizeof(uint64_t));
		if (sad->sas[k].window == NULL)
			return vpn_fail(r, "out of memory");
		uint32_t j = sad->n_in++;

		/* insertion sort: the file's SAs are few */
		while (j > 0 &&
		       sad->sas[sad->in_by_spi[j - 1]].spi > sad->sas[k].spi) {
			sad->in_by_spi[j] = sad->in_by_spi[j - 1];
			j--;
		}
		sad->in_by_spi[j] = k;
	}
	return 0;
}

static int
vpn_read_lines(struct vpn_reader *r, FILE *f)
{
	char line[VPN_LINE_MAX + 1];
	char *tok[VPN_TOKENS];
	int n;

	while (fgets(line, sizeof(line), f) != NULL) {
		r->line++;
		if (strchr(line, '\n') == NULL && !feof(f))
			return vpn_fail(r, "line longer than %d characters",
					VPN_LINE_MAX - 1);
		n = vpn_tokens(line, tok);
		if (n < 0)
			return vpn_fail(r, "more than %d words", VPN_TOKENS);
		if (n == 0)
			continue;
		if (strcmp(tok[0], "sa") == 0)
			n = vpn_sa_line(r, tok, n);
		else if (strcmp(tok[0], "policy") == 0)
			n = vpn_policy_line(r, tok, n);
		else
			return vpn_fail(r,
					"unknown keyword '%s' (expected sa or "
					"policy)",
					tok[0]);
		if (n != 0)
			return n;
	}
	if (ferror(f))
		return vpn_fail(r, "read error");
	return 0;
}

int
vpn_sad_load(const char *path, const struct vpn_limits *lim,
	     vpn_port_lookup ports, void *ports_arg, struct vpn_sad **out,
	     char *err, size_t err_size)
{
	struct vpn_reader r = {.path = path,
			       .err = err,
			       .err_size = err_size,
			       .lim = lim,
			       .ports = ports,
			       .ports_arg = ports_arg};
	struct vpn_sad *sad = calloc(1, sizeof(*sad));
	FILE *f;
	int rc;

	*out = NULL;
	r.sad = sad;
	if (sad == NULL)
		return vpn_fail(&r, "out of memory") ? ENOMEM : ENOMEM;
	sad->window = lim->window;
	sad->window_words = lim->window / 64 + 1;
	sad->sas = calloc(lim->max_sas, sizeof(*sad->sas));
	sad->in_by_spi = calloc(lim->max_sas, sizeof(uint32_t));
	sad->pols = calloc(lim->max_policies ? lim->max_policies : 1,
			   sizeof(*sad->pols));
	r.pol_spi = calloc(lim->max_policies ? lim->max_policies : 1,
			   sizeof(uint32_t));
	if (sad->sas == NULL || sad->in_by_spi == NULL || sad->pols == NULL ||
	    r.pol_spi == NULL) {
		free(r.pol_spi);
		vpn_sad_free(sad);
		vpn_fail(&r, "out of memory");
		return ENOMEM;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		rc = errno;
		free(r.pol_spi);
		vpn_sad_free(sad);
		vpn_fail(&r, "cannot open: %s", strerror(rc));
		return rc ? rc : EINVAL;
	}
	rc = vpn_read_lines(&r, f);
	fclose(f);
	if (rc == 0)
		rc = vpn_sad_link(&r);
	free(r.pol_spi);
	if (rc != 0) {
		vpn_sad_free(sad);
		return rc;
	}
	*out = sad;
	return 0;
}

void
vpn_sad_free(struct vpn_sad *sad)
{
	if (sad == NULL)
		return;
	for (uint32_t i = 0; sad->sas != NULL && i < sad->n_sas; i++) {
		EVP_CIPHER_CTX_free(sad->sas[i].ctx);
		free(sad->sas[i].window);
	}
	free(sad->sas);
	free(sad->in_by_spi);
	free(sad->pols);
	free(sad);
}

struct vpn_sa *
vpn_sad_in(const struct vpn_sad *sad, uint32_t spi)
{
	uint32_t lo = 0, hi = sad->n_in;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct vpn_sa *sa = &sad->sas[sad->in_by_spi[mid]];

		if (sa->spi == spi)
			return sa;
		if (sa->spi < spi)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int
vpn_sa_same(const struct vpn_sa *a, const struct vpn_sa *b)
{
	return a->spi == b->spi && a->dir == b->dir && a->local == b->local &&
	       a->has_sel == b->has_sel && a->sel_src == b->sel_src &&
	       a->sel_src_mask == b->sel_src_mask && a->sel_dst == b->sel_dst &&
	       a->sel_dst_mask == b->sel_dst_mask && a->remote == b->remote &&
	       a->key_len == b->key_len && a->esn == b->esn &&
	       memcmp(a->key, b->key, a->key_len) == 0 &&
	       memcmp(a->salt, b->salt, VPN_SALT_LEN) == 0;
}

/* An outbound SA whose key an old one had goes on from that one's
 * sequence number, whatever else changed: its IVs never repeat. */
static void
vpn_carry_seq(struct vpn_sa *s, const struct vpn_sad *old)
{
	if (s->dir != VPN_OUT)
		return;
	for (uint32_t k = 0; k < old->n_sas; k++) {
		const struct vpn_sa *o = &old->sas[k];

		if (o->dir == VPN_OUT && vpn_same_key(s, o) && o->seq > s->seq)
			s->seq = o->seq;
	}
}

uint32_t
vpn_sad_carry(struct vpn_sad *new_sad, const struct vpn_sad *old)
{
	uint32_t n = 0, words;

	words = new_sad->window_words < old->window_words
			? new_sad->window_words
			: old->window_words;
	for (uint32_t i = 0; i < new_sad->n_sas; i++) {
		struct vpn_sa *s = &new_sad->sas[i];

		for (uint32_t k = 0; k < old->n_sas; k++) {
			const struct vpn_sa *o = &old->sas[k];

			if (!vpn_sa_same(s, o))
				continue;
			s->seq = o->seq;
			s->ip_id = o->ip_id;
			s->cnt = o->cnt;
			if (s->window != NULL && o->window != NULL &&
			    new_sad->window_words == old->window_words)
				memcpy(s->window, o->window,
				       words * sizeof(uint64_t));
			n++;
			break;
		}
		vpn_carry_seq(s, old);
	}
	return n;
}
