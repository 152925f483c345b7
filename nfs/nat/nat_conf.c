/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat configuration files (nat_conf.h; format: README.md). Read
 * with libyaml's document API, whose nodes keep their line, so that every
 * message names the line of the value it is about.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <yaml.h>

#include "sluice/nf.h"

#include "nat_conf.h"

#define NAT_DEFAULT_LO 1024
#define NAT_DEFAULT_HI 65535

static const char *const nat_proto_names[NAT_PROTO_MAX] = {"tcp", "udp",
							   "icmp"};

const char *
nat_proto_name(unsigned p)
{
	return p < NAT_PROTO_MAX ? nat_proto_names[p] : "?";
}

/* Where a message is about. */
struct nat_ctx {
	const char *origin;
	char *err;
	size_t err_size;
	yaml_document_t *doc;
};

static int nat_err(const struct nat_ctx *c, const yaml_node_t *n,
		   const char *entry, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "ORIGIN:LINE: ENTRY: message" (ENTRY optional). */
static int
nat_err(const struct nat_ctx *c, const yaml_node_t *n, const char *entry,
	const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->err_size > 0)
		snprintf(c->err, c->err_size, "%s:%zu: %s%s%s", c->origin,
			 n != NULL ? n->start_mark.line + 1 : (size_t)1,
			 entry != NULL ? entry : "", entry != NULL ? ": " : "",
			 msg);
	return -EINVAL;
}

/* The text of a scalar node (NUL-terminated copy in buf), or NULL. */
static const char *
nat_scalar(const yaml_node_t *n, char *buf, size_t size)
{
	if (n == NULL || n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.length >= size)
		return NULL;
	memcpy(buf, n->data.scalar.value, n->data.scalar.length);
	buf[n->data.scalar.length] = '\0';
	return buf;
}

/* What a node is, for messages: 'text', a list or a mapping. */
static const char *
nat_describe(const yaml_node_t *n, char *buf, size_t size)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	snprintf(buf, size, "'%.*s'",
		 (int)(n->data.scalar.length > 64 ? 64 : n->data.scalar.length),
		 (const char *)n->data.scalar.value);
	return buf;
}

static int
nat_addr(const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = a.s_addr;
	return 0;
}

/* A whole number from lo to hi, digits only. */
static int
nat_num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (s[0] == '\0' || strlen(s) > 10)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	v = strtoul(s, &end, 10);
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Adds host-order addresses first..last to the pool. */
static int
nat_pool_add(const struct nat_ctx *c, const yaml_node_t *n, const char *entry,
	     struct nat_conf *conf, uint32_t first, uint32_t last)
{
	for (uint64_t a = first; a <= last; a++) {
		uint32_t be = htonl((uint32_t)a);

		for (uint32_t i = 0; i < conf->n_pool; i++)
			if (conf->pool[i] == be) {
				struct in_addr ia = {.s_addr = be};

				return nat_err(c, n, entry,
					       "%s is already in the pool",
					       inet_ntoa(ia));
			}
		if (conf->n_pool == NAT_MAX_POOL)
			return nat_err(c, n, entry,
				       "the pool has more than %d addresses",
				       NAT_MAX_POOL);
		conf->pool[conf->n_pool++] = be;
	}
	return 0;
}

/* One pool entry: ADDR, ADDR/LEN (every address of the prefix) or
 * ADDR-ADDR. */
static int
nat_pool_entry(const struct nat_ctx *c, const yaml_node_t *n, unsigned idx,
	       struct nat_conf *conf)
{
	char buf[64], entry[32], d[96];
	const char *s = nat_scalar(n, buf, sizeof(buf));
	uint32_t a, b;
	char *sep;

	snprintf(entry, sizeof(entry), "pool entry %u", idx);
	if (s == NULL)
		return nat_err(c, n, entry,
			       "%s is not an address, ADDR/LEN or ADDR-ADDR",
			       nat_describe(n, d, sizeof(d)));
	if ((sep = strchr(buf, '/')) != NULL) {
		unsigned long len;

		*sep = '\0';
		if (nat_addr(buf, &a) != 0 || nat_num(sep + 1, 22, 32, &len))
			return nat_err(c, n, entry,
				       "'%.*s' is not a prefix ADDR/LEN with "
				       "LEN from 22 to 32",
				       (int)n->data.scalar.length,
				       (const char *)n->data.scalar.value);
		a = ntohl(a) & (uint32_t)(0xffffffffull << (32 - len));
		return nat_pool_add(c, n, entry, conf, a,
				    a | (uint32_t)((1ull << (32 - len)) - 1));
	}
	if ((sep = strchr(buf, '-')) != NULL) {
		*sep = '\0';
		if (nat_addr(buf, &a) != 0 || nat_addr(sep + 1, &b) != 0)
			return nat_err(c, n, entry,
				       "'%.*s' is not a range ADDR-ADDR",
				       (int)n->data.scalar.length,
				       (const char *)n->data.scalar.value);
		a = ntohl(a);
		b = ntohl(b);
		if (a > b || b - a >= NAT_MAX_POOL)
			return nat_err(c, n, entry,
				       "range '%.*s' is empty or has more than "
				       "%d addresses",
				       (int)n->data.scalar.length,
				       (const char *)n->data.scalar.value,
				       NAT_MAX_POOL);
		return nat_pool_add(c, n, entry, conf, a, b);
	}
	if (nat_addr(buf, &a) != 0)
		return nat_err(c, n, entry, "'%s' is not an IPv4 address", buf);
	return nat_pool_add(c, n, entry, conf, ntohl(a), ntohl(a));
}

static int
nat_pool(const struct nat_ctx *c, yaml_node_t *n, struct nat_conf *conf)
{
	yaml_node_item_t *it;
	unsigned idx = 1;
	int rc;

	if (n->type == YAML_SCALAR_NODE)
		return nat_pool_entry(c, n, 1, conf);
	if (n->type != YAML_SEQUENCE_NODE)
		return nat_err(c, n, "pool",
			       "expected a list of addresses, got a mapping");
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, idx++) {
		rc = nat_pool_entry(c, yaml_document_get_node(c->doc, *it), idx,
				    conf);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* "LO-HI" or "N" for protocol p. */
static int
nat_range_value(const struct nat_ctx *c, const yaml_node_t *n, unsigned p,
		struct nat_range *r)
{
	char buf[32], entry[32], d[96];
	const char *s = nat_scalar(n, buf, sizeof(buf));
	unsigned long lo, hi, min = p == NAT_ICMP ? 0 : 1;
	char *dash;

	snprintf(entry, sizeof(entry), "ports: %s", nat_proto_name(p));
	if (s == NULL)
		goto bad;
	dash = strchr(buf, '-');
	if (dash != NULL)
		*dash = '\0';
	if (nat_num(buf, min, 65535, &lo) != 0 ||
	    nat_num(dash ? dash + 1 : buf, min, 65535, &hi) != 0)
		goto bad;
	if (lo > hi)
		return nat_err(c, n, entry, "the range %lu-%lu is empty", lo,
			       hi);
	r->lo = (uint16_t)lo;
	r->hi = (uint16_t)hi;
	return 0;
bad:
	return nat_err(c, n, entry,
		       "%s is not a port range LO-HI (numbers from %lu to "
		       "65535)",
		       nat_describe(n, d, sizeof(d)), min);
}

static int
nat_ports(const struct nat_ctx *c, yaml_node_t *n, struct nat_conf *conf)
{
	yaml_node_pair_t *pr;
	char key[32];

	if (n->type != YAML_MAPPING_NODE)
		return nat_err(c, n, "ports",
			       "expected a mapping of tcp, udp, icmp to "
			       "ranges");
	for (pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
		unsigned p;
		int rc;

		if (nat_scalar(k, key, sizeof(key)) == NULL)
			key[0] = '\0';
		for (p = 0; p < NAT_PROTO_MAX; p++)
			if (strcmp(key, nat_proto_names[p]) == 0)
				break;
		if (p == NAT_PROTO_MAX)
			return nat_err(c, k, "ports",
				       "unknown protocol '%.32s' (expected "
				       "tcp, udp or icmp)",
				       key);
		rc = nat_range_value(c,
				     yaml_document_get_node(c->doc, pr->value),
				     p, &conf->range[p]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* "ADDR:PORT" of a forward. */
static int
nat_endpoint(const struct nat_ctx *c, const yaml_node_t *n, const char *entry,
	     const char *key, uint32_t *addr, uint16_t *port)
{
	char buf[64], d[96];
	const char *s = nat_scalar(n, buf, sizeof(buf));
	char *colon = s ? strrchr(buf, ':') : NULL;
	unsigned long p;

	if (colon != NULL)
		*colon = '\0';
	if (colon == NULL || nat_addr(buf, addr) != 0 ||
	    nat_num(colon + 1, 1, 65535, &p) != 0)
		return nat_err(c, n, entry,
			       "'%s': %s is not ADDR:PORT (an IPv4 address "
			       "and a port from 1 to 65535)",
			       key, nat_describe(n, d, sizeof(d)));
	*port = htons((uint16_t)p);
	return 0;
}

/* One key of a forward's mapping. */
static int
nat_fwd_field(const struct nat_ctx *c, const char *entry, const char *key,
	      const yaml_node_t *k, const yaml_node_t *v, struct nat_fwd *f,
	      unsigned *seen)
{
	char buf[16], d[96];

	if (strcmp(key, "proto") == 0) {
		const char *s = nat_scalar(v, buf, sizeof(buf));

		*seen |= 1;
		if (s != NULL && strcmp(s, "tcp") == 0)
			f->proto = NAT_TCP;
		else if (s != NULL && strcmp(s, "udp") == 0)
			f->proto = NAT_UDP;
		else
			return nat_err(c, v, entry,
				       "'proto': %s is not tcp or udp",
				       nat_describe(v, d, sizeof(d)));
		return 0;
	}
	if (strcmp(key, "outside") == 0) {
		*seen |= 2;
		return nat_endpoint(c, v, entry, key, &f->ext_addr,
				    &f->ext_port);
	}
	if (strcmp(key, "inside") == 0) {
		*seen |= 4;
		return nat_endpoint(c, v, entry, key, &f->int_addr,
				    &f->int_port);
	}
	return nat_err(c, k, entry,
		       "unknown key '%.32s' (expected proto, outside, inside)",
		       key);
}

static int
nat_fwd_entry(const struct nat_ctx *c, const yaml_node_t *n, unsigned idx,
	      struct nat_conf *conf)
{
	struct nat_fwd *f = &conf->fwd[conf->n_fwd];
	yaml_node_pair_t *pr;
	char entry[32], key[32], d[96];
	unsigned seen = 0;
	int rc;

	snprintf(entry, sizeof(entry), "forward %u", idx);
	if (n->type != YAML_MAPPING_NODE)
		return nat_err(c, n, entry,
			       "expected a mapping of proto, outside, inside, "
			       "got %s",
			       nat_describe(n, d, sizeof(d)));
	memset(f, 0, sizeof(*f));
	f->line = (uint32_t)n->start_mark.line + 1;
	for (pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	     pr++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);

		if (nat_scalar(k, key, sizeof(key)) == NULL)
			key[0] = '\0';
		rc = nat_fwd_field(c, entry, key, k,
				   yaml_document_get_node(c->doc, pr->value), f,
				   &seen);
		if (rc != 0)
			return rc;
	}
	if (seen != 7)
		return nat_err(c, n, entry, "missing '%s'",
			       !(seen & 1)   ? "proto"
			       : !(seen & 2) ? "outside"
					     : "inside");
	for (uint32_t i = 0; i < conf->n_fwd; i++) {
		const struct nat_fwd *g = &conf->fwd[i];

		if (g->proto == f->proto && g->ext_addr == f->ext_addr &&
		    g->ext_port == f->ext_port)
			return nat_err(c, n, entry,
				       "the same outside %s address and port "
				       "as forward %u (line %u)",
				       nat_proto_name(f->proto), i + 1,
				       g->line);
	}
	conf->n_fwd++;
	return 0;
}

static int
nat_forwards(const struct nat_ctx *c, yaml_node_t *n, struct nat_conf *conf)
{
	yaml_node_item_t *it;
	size_t count;
	unsigned idx = 1;
	int rc;

	if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0)
		return 0; /* "forwards:" with nothing */
	if (n->type != YAML_SEQUENCE_NODE)
		return nat_err(c, n, "forwards", "expected a list of forwards");
	count = (size_t)(n->data.sequence.items.top -
			 n->data.sequence.items.start);
	if (count > NAT_MAX_FWD)
		return nat_err(c, n, "forwards",
			       "%zu forwards, at most %d are allowed", count,
			       NAT_MAX_FWD);
	conf->fwd = calloc(count ? count : 1, sizeof(conf->fwd[0]));
	if (conf->fwd == NULL)
		return -ENOMEM;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++, idx++) {
		rc = nat_fwd_entry(c, yaml_document_get_node(c->doc, *it), idx,
				   conf);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int
nat_top(const struct nat_ctx *c, yaml_node_t *root, struct nat_conf *conf)
{
	yaml_node_pair_t *pr;
	char key[32];
	int rc = 0, have_pool = 0;

	if (root == NULL)
		return nat_err(c, NULL, NULL,
			       "the file is empty (expected 'pool')");
	if (root->type != YAML_MAPPING_NODE)
		return nat_err(c, root, NULL,
			       "expected a mapping with 'pool', 'ports' and "
			       "'forwards' at the top");
	for (pr = root->data.mapping.pairs.start;
	     rc == 0 && pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(c->doc, pr->value);

		if (nat_scalar(k, key, sizeof(key)) == NULL)
			key[0] = '\0';
		if (strcmp(key, "pool") == 0) {
			rc = nat_pool(c, v, conf);
			have_pool = 1;
		} else if (strcmp(key, "ports") == 0) {
			rc = nat_ports(c, v, conf);
		} else if (strcmp(key, "forwards") == 0 && conf->fwd == NULL) {
			rc = nat_forwards(c, v, conf);
		} else {
			rc = nat_err(c, k, NULL,
				     "unknown or repeated key '%.32s' at the "
				     "top (expected pool, ports, forwards)",
				     key);
		}
	}
	if (rc == 0 && (!have_pool || conf->n_pool == 0))
		rc = nat_err(c, root, NULL,
			     "no 'pool' addresses (give at least one)");
	return rc;
}

int
nat_conf_parse(const char *text, size_t len, const char *origin,
	       struct nat_conf **out, char *err, size_t err_size)
{
	struct nat_ctx c = {.origin = origin, .err = err, .err_size = err_size};
	yaml_parser_t parser;
	yaml_document_t doc;
	struct nat_conf *conf;
	int rc;

	if (err_size > 0)
		err[0] = '\0';
	conf = calloc(1, sizeof(*conf));
	if (conf == NULL || !yaml_parser_initialize(&parser)) {
		free(conf);
		snprintf(err, err_size, "%s: out of memory", origin);
		return -ENOMEM;
	}
	for (unsigned p = 0; p < NAT_PROTO_MAX; p++)
		conf->range[p] =
			(struct nat_range){NAT_DEFAULT_LO, NAT_DEFAULT_HI};
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, err_size, "%s:%zu:%zu: YAML error: %s%s%s",
			 origin, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1,
			 parser.context ? parser.context : "",
			 parser.context ? ": " : "",
			 parser.problem ? parser.problem : "syntax error");
		yaml_parser_delete(&parser);
		nat_conf_free(conf);
		return -EINVAL;
	}
	c.doc = &doc;
	rc = nat_top(&c, yaml_document_get_root_node(&doc), conf);
	if (rc == -ENOMEM)
		snprintf(err, err_size, "%s: out of memory", origin);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc != 0) {
		nat_conf_free(conf);
		return rc;
	}
	*out = conf;
	return 0;
}

int
nat_conf_load(const char *path, struct nat_conf **out, char *err,
	      size_t err_size)
{
	char *text;
	size_t len;
	int rc;

	rc = sl_read_file(path, NAT_MAX_FILE, &text, &len, err, err_size);
	if (rc != 0)
		return -rc; /* this file's convention: a negative errno */
	rc = nat_conf_parse(text, len, path, out, err, err_size);
	free(text);
	return rc;
}

void
nat_conf_free(struct nat_conf *c)
{
	if (c == NULL)
		return;
	free(c->fwd);
	free(c);
}
