/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-ids rule parser: a documented subset of Snort/Suricata syntax
 * (README.md, "Rules"), one rule per line:
 *
 *   ACTION PROTO SRC SPORT DIR DST DPORT (OPTION; OPTION:VALUE; ...)
 *
 * Every problem is refused with a message naming the option; the caller
 * adds the file and the line. The Hyperscan side is in hsdb.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hs.h>

#include "rules.h"

#define IDS_LINE_MAX 8192
#define IDS_RULES_MAX 100000

static int
fail(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *
ids_action_name(enum ids_action a)
{
	static const char *const names[] = {"alert", "drop", "divert"};

	return (unsigned)a < 3 ? names[a] : "?";
}

/* ---- the header ---------------------------------------------------- */

static int
parse_uint(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int
parse_addr(const char *s, struct ids_addr *a, char *err, size_t size)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint32_t len;

	if (n >= sizeof(buf))
		return fail(err, size, "bad address '%s'", s);
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(a->addr, 0, sizeof(a->addr));
	if (inet_pton(AF_INET, buf, a->addr) == 1)
		a->family = 4;
	else if (inet_pton(AF_INET6, buf, a->addr) == 1)
		a->family = 6;
	else if (buf[0] == '$')
		return fail(err, size,
			    "address '%s': variables are not supported, "
			    "write the addresses",
			    s);
	else
		return fail(err, size,
			    "bad address '%s' (an IPv4 or IPv6 address or "
			    "prefix, [a,b], !a or any)",
			    s);
	len = a->family == 4 ? 32 : 128;
	if (slash && parse_uint(slash + 1, len, &len) != 0)
		return fail(err, size, "bad prefix length in '%s'", s);
	a->len = (uint8_t)len;
	return 0;
}

static int
parse_port(const char *s, struct ids_port *p, char *err, size_t size)
{
	const char *colon = strchr(s, ':');
	uint32_t lo = 0, hi = 65535;
	char buf[16];

	if (strlen(s) >= sizeof(buf) || s[0] == '\0')
		return fail(err, size, "bad port '%s'", s);
	snprintf(buf, sizeof(buf), "%s", s);
	if (colon != NULL) {
		buf[colon - s] = '\0';
		if ((buf[0] && parse_uint(buf, 65535, &lo) != 0) ||
		    (colon[1] && parse_uint(colon + 1, 65535, &hi) != 0))
			return fail(err, size,
				    "bad port range '%s' (LO:HI, LO: or :HI)",
				    s);
	} else if (parse_uint(buf, 65535, &lo) == 0) {
		hi = lo;
	} else {
		return fail(err, size,
			    "bad port '%s' (0 to 65535, LO:HI, [a,b], !a or "
			    "any)",
			    s);
	}
	if (lo > hi)
		return fail(err, size, "port range '%s' runs backwards", s);
	p->lo = (uint16_t)lo;
	p->hi = (uint16_t)hi;
	return 0;
}

/*
 * An address or port set: any, X, !X, [X,!Y,...] or ![...]. One level of
 * brackets. is_port chooses which.
 */
static int
parse_set(const char *s, int is_port, void *set, char *err, size_t size)
{
	struct ids_addr_set *as = set;
	struct ids_port_set *ps = set;
	char buf[1024], *item, *save = NULL;
	uint8_t *n = is_port ? &ps->n : &as->n;
	int neg = 0, rc;

	memset(set, 0, is_port ? sizeof(*ps) : sizeof(*as));
	if (strcmp(s, "any") == 0) {
		*(is_port ? &ps->any : &as->any) = 1;
		return 0;
	}
	if (s[0] == '!' && s[1] == '[') {
		neg = 1;
		s++;
	}
	if (strlen(s) >= sizeof(buf))
		return fail(err, size, "set '%s' is too long", s);
	snprintf(buf, sizeof(buf), "%s", s);
	item = buf;
	if (buf[0] == '[') {
		size_t l = strlen(buf);

		if (buf[l - 1] != ']')
			return fail(err, size, "set '%s' has no closing ']'",
				    s);
		buf[l - 1] = '\0';
		item = buf + 1;
		if (strchr(item, '[') != NULL)
			return fail(err, size,
				    "set '%s': nested brackets are not "
				    "supported",
				    s);
	}
	*(is_port ? &ps->neg : &as->neg) = (uint8_t)neg;
	for (item = strtok_r(item, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		int not = item[0] == '!';

		if (*n >= IDS_SET_MAX)
			return fail(err, size,
				    "set '%s' has more than %d entries", s,
				    IDS_SET_MAX);
		if (strcmp(item + not, "any") == 0)
			return fail(err, size,
				    "set '%s': 'any' is not allowed inside a "
				    "set",
				    s);
		if (is_port) {
			rc = parse_port(item + not, &ps->p[*n], err, size);
			ps->p[*n].neg = (uint8_t) not ;
		} else {
			rc = parse_addr(item + not, &as->a[*n], err, size);
			as->a[*n].neg = (uint8_t) not ;
		}
		if (rc != 0)
			return rc;
		(*n)++;
	}
	if (*n == 0)
		return fail(err, size, "empty set '%s'", s);
	return 0;
}

/* Splits the header into its 7 words (brackets may hold blanks, which are
 * dropped); returns the number of words, or -1 if too long. */
static int
header_words(const char *h, size_t len, char words[7][1024])
{
	int n = 0, depth = 0;
	size_t i, k = 0;

	for (i = 0; i <= len; i++) {
		char c = i < len ? h[i] : ' ';

		if (isspace((unsigned char)c) && depth == 0) {
			if (k > 0) {
				if (n >= 7)
					return 8;
				words[n++][k] = '\0';
				k = 0;
			}
			continue;
		}
		if (isspace((unsigned char)c))
			continue;
		depth += c == '[' ? 1 : c == ']' ? -1 : 0;
		if (n >= 7)
			return 8;
		if (k + 1 >= 1024)
			return -1;
		words[n][k++] = c;
	}
	return n;
}

static int
parse_header(const char *h, size_t len, struct ids_rule *r, char *err,
	     size_t size)
{
	char w[7][1024];
	int n = header_words(h, len, w), rc;

	if (n != 7)
		return fail(err, size,
			    "the header is not 'ACTION PROTO SRC SPORT -> DST "
			    "DPORT' (%d words)",
			    n < 0 ? 0 : n);
	if (strcmp(w[0], "alert") == 0)
		r->action = IDS_ALERT;
	else if (strcmp(w[0], "drop") == 0)
		r->action = IDS_DROP;
	else if (strcmp(w[0], "divert") == 0)
		r->action = IDS_DIVERT;
	else
		return fail(err, size,
			    "unknown action '%s' (alert, drop or divert)",
			    w[0]);
	if (strcmp(w[1], "tcp") == 0)
		r->proto = IPPROTO_TCP;
	else if (strcmp(w[1], "udp") == 0)
		r->proto = IPPROTO_UDP;
	else if (strcmp(w[1], "icmp") == 0)
		r->proto = IPPROTO_ICMP;
	else if (strcmp(w[1], "ip") == 0)
		r->proto = 0;
	else
		return fail(err, size,
			    "unknown protocol '%s' (tcp, udp, icmp or ip)",
			    w[1]);
	if (strcmp(w[4], "->") == 0)
		r->bidir = 0;
	else if (strcmp(w[4], "<>") == 0)
		r->bidir = 1;
	else
		return fail(err, size, "unknown direction '%s' (-> or <>)",
			    w[4]);
	if ((rc = parse_set(w[2], 0, &r->src, err, size)) != 0 ||
	    (rc = parse_set(w[3], 1, &r->sport, err, size)) != 0 ||
	    (rc = parse_set(w[5], 0, &r->dst, err, size)) != 0 ||
	    (rc = parse_set(w[6], 1, &r->dport, err, size)) != 0)
		return rc;
	if ((r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP) &&
	    (!r->sport.any || !r->dport.any))
		return fail(err, size, "ports must be 'any' for protocol %s",
			    w[1]);
	return 0;
}

/* ---- the options --------------------------------------------------- */

/* The text of a quoted value: backslash escapes any character. */
static int
unquote(const char *v, char *out, size_t out_size, const char *opt, char *err,
	size_t size)
{
	size_t k = 0, i;

	if (v[0] != '"')
		return fail(err, size, "option '%s': the value must be quoted",
			    opt);
	for (i = 1; v[i] != '"'; i++) {
		if (v[i] == '\0')
			return fail(err, size, "option '%s': no closing quote",
				    opt);
		if (v[i] == '\\' && v[i + 1] != '\0')
			i++;
		if (k + 1 >= out_size)
			return fail(err, size, "option '%s': value too long",
				    opt);
		out[k++] = v[i];
	}
	if (v[i + 1] != '\0')
		return fail(err, size,
			    "option '%s': text after the closing quote", opt);
	out[k] = '\0';
	return 0;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* content:"text|41 42|text": bytes into c. */
static int
parse_content(const char *v, struct ids_content *c, char *err, size_t size)
{
	char text[1024];
	int hex = 0, rc;
	size_t i;

	if (v[0] == '!')
		return fail(err, size,
			    "option 'content': negated content is not "
			    "supported");
	if ((rc = unquote(v, text, sizeof(text), "content", err, size)) != 0)
		return rc;
	for (i = 0; text[i] != '\0'; i++) {
		int hi, lo;

		if (text[i] == '|') {
			hex = !hex;
			continue;
		}
		if (hex && isspace((unsigned char)text[i]))
			continue;
		if (c->len >= IDS_CONTENT_MAX)
			return fail(err, size,
				    "option 'content': longer than %d bytes",
				    IDS_CONTENT_MAX);
		if (!hex) {
			c->bytes[c->len++] = (uint8_t)text[i];
			continue;
		}
		hi = hexval((unsigned char)text[i]);
		lo = hi < 0 ? -1 : hexval((unsigned char)text[i + 1]);
		if (lo < 0)
			return fail(err, size,
				    "option 'content': bad hex byte at '%.8s' "
				    "(two hex digits, blanks between bytes)",
				    text + i);
		c->bytes[c->len++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	if (hex)
		return fail(err, size, "option 'content': unclosed '|'");
	if (c->len == 0)
		return fail(err, size, "option 'content': empty");
	return 0;
}

/* pcre:"/RE/FLAGS" */
static int
parse_pcre(const char *v, struct ids_pcre *p, char *err, size_t size)
{
	char text[2048], *end;
	const char *f;
	int rc;

	if (v[0] == '!')
		return fail(err, size,
			    "option 'pcre': negated pcre is not supported");
	if ((rc = unquote(v, text, sizeof(text), "pcre", err, size)) != 0)
		return rc;
	end = strrchr(text, '/');
	if (text[0] != '/' || end == text)
		return fail(err, size,
			    "option 'pcre': not in the form /RE/FLAGS");
	*end = '\0';
	if (text[1] == '\0')
		return fail(err, size, "option 'pcre': empty expression");
	p->flags = 0;
	for (f = end + 1; *f; f++) {
		switch (*f) {
		case 'i':
			p->flags |= HS_FLAG_CASELESS;
			break;
		case 's':
			p->flags |= HS_FLAG_DOTALL;
			break;
		case 'm':
			p->flags |= HS_FLAG_MULTILINE;
			break;
		default:
			return fail(err, size,
				    "option 'pcre': modifier '%c' is not "
				    "supported (i, s and m are)",
				    *f);
		}
	}
	p->re = strdup(text + 1);
	if (p->re == NULL)
		return fail(err, size, "out of memory");
	return 0;
}

/* A numeric content modifier on the last content. */
static int
parse_modifier(struct ids_rule *r, const char *name, const char *v, char *err,
	       size_t size)
{
	struct ids_content *c;
	uint32_t n;

	if (r->n_contents == 0)
		return fail(err, size, "option '%s' before any content", name);
	c = &r->content[r->n_contents - 1];
	if (strcmp(name, "nocase") == 0) {
		if (v != NULL)
			return fail(err, size,
				    "option 'nocase' takes no value");
		c->nocase = 1;
		return 0;
	}
	if (v == NULL || parse_uint(v, IDS_NUM_MAX, &n) != 0)
		return fail(err, size,
			    "option '%s': '%s' is not a whole number from 0 "
			    "to %d",
			    name, v ? v : "", IDS_NUM_MAX);
	if (strcmp(name, "offset") == 0) {
		c->has_offset = 1;
		c->offset = n;
	} else if (strcmp(name, "depth") == 0) {
		if (n < c->len)
			return fail(err, size,
				    "option 'depth': %u is shorter than the "
				    "content (%u bytes)",
				    n, c->len);
		c->has_depth = 1;
		c->depth = n;
	} else if (strcmp(name, "distance") == 0) {
		c->has_distance = 1;
		c->distance = n;
	} else {
		c->has_within = 1;
		c->within = n;
	}
	if ((c->has_offset || c->has_depth) &&
	    (c->has_distance || c->has_within))
		return fail(err, size,
			    "option '%s': offset/depth and distance/within on "
			    "one content are not supported",
			    name);
	if ((c->has_distance || c->has_within) && r->n_contents == 1)
		return fail(err, size,
			    "option '%s': the first content has no previous "
			    "match to be relative to (use offset/depth)",
			    name);
	if (c->has_within && c->within < c->distance + c->len)
		return fail(err, size,
			    "option '%s': within %u is shorter than distance "
			    "%u plus the content (%u bytes)",
			    name, c->within, c->distance, c->len);
	return 0;
}

static int
parse_option(struct ids_rule *r, const char *name, const char *v, char *err,
	     size_t size)
{
	static const char *const ignored[] = {"classtype", "reference",
					      "metadata", "priority", NULL};
	char text[IDS_MSG_MAX + IDS_SERVICE_MAX];
	int rc;

	for (unsigned i = 0; ignored[i] != NULL; i++)
		if (strcmp(name, ignored[i]) == 0)
			return 0;
	if (strcmp(name, "msg") == 0) {
		if (v == NULL)
			return fail(err, size, "option 'msg' needs a value");
		rc = unquote(v, text, sizeof(text), "msg", err, size);
		if (rc == 0 && strlen(text) >= IDS_MSG_MAX)
			return fail(err, size,
				    "option 'msg': longer than %d bytes",
				    IDS_MSG_MAX - 1);
		if (rc == 0)
			memcpy(r->msg, text, strlen(text) + 1);
		return rc;
	}
	if (strcmp(name, "content") == 0) {
		if (v == NULL)
			return fail(err, size,
				    "option 'content' needs a value");
		if (r->n_contents >= IDS_CONTENTS_MAX)
			return fail(err, size,
				    "option 'content': more than %d in a rule",
				    IDS_CONTENTS_MAX);
		return parse_content(v, &r->content[r->n_contents++], err,
				     size);
	}
	if (strcmp(name, "pcre") == 0) {
		if (v == NULL)
			return fail(err, size, "option 'pcre' needs a value");
		if (r->n_pcres >= IDS_PCRES_MAX)
			return fail(err, size,
				    "option 'pcre': more than %d in a rule",
				    IDS_PCRES_MAX);
		rc = parse_pcre(v, &r->pcre[r->n_pcres], err, size);
		if (rc == 0)
			r->n_pcres++;
		return rc;
	}
	if (strcmp(name, "sid") == 0 || strcmp(name, "rev") == 0) {
		uint32_t *dst = name[0] == 's' ? &r->sid : &r->rev;

		if (v == NULL || parse_uint(v, UINT32_MAX, dst) != 0 ||
		    (name[0] == 's' && *dst == 0))
			return fail(err, size,
				    "option '%s': '%s' is not a whole number "
				    "from %d to 4294967295",
				    name, v ? v : "", name[0] == 's');
		return 0;
	}
	if (strcmp(name, "divert") == 0) {
		if (v == NULL || v[0] == '\0' || strlen(v) >= IDS_SERVICE_MAX)
			return fail(err, size,
				    "option 'divert' needs a service name (1 "
				    "to %d characters)",
				    IDS_SERVICE_MAX - 1);
		snprintf(r->divert, sizeof(r->divert), "%s", v);
		return 0;
	}
	if (strcmp(name, "nocase") == 0 || strcmp(name, "offset") == 0 ||
	    strcmp(name, "depth") == 0 || strcmp(name, "distance") == 0 ||
	    strcmp(name, "within") == 0)
		return parse_modifier(r, name, v, err, size);
	return fail(err, size,
		    "option '%s' is not supported (README.md lists "
		    "the options)",
		    name);
}

/* Trims blanks on both ends in place. */
static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Finds the ';' that ends the option at s (outside quotes, not escaped);
 * NULL if none. */
static char *
option_end(char *s)
{
	int quoted = 0;

	for (; *s; s++) {
		if (*s == '\\' && s[1] != '\0')
			s++;
		else if (*s == '"')
			quoted = !quoted;
		else if (*s == ';' && !quoted)
			return s;
	}
	return NULL;
}

static int
parse_options(char *opts, struct ids_rule *r, char *err, size_t size)
{
	char *p = opts, *end, *name, *colon, *v;
	int rc;

	while (*(p = trim(p)) != '\0') {
		end = option_end(p);
		if (end == NULL)
			return fail(err, size,
				    "option '%.32s' is not ended by ';'", p);
		*end = '\0';
		colon = strchr(p, ':');
		v = NULL;
		if (colon != NULL) {
			*colon = '\0';
			v = trim(colon + 1);
		}
		name = trim(p);
		if ((rc = parse_option(r, name, v, err, size)) != 0)
			return rc;
		p = end + 1;
	}
	return 0;
}

static void
rule_clear(struct ids_rule *r)
{
	for (uint32_t i = 0; i < r->n_pcres; i++)
		free(r->pcre[i].re);
	r->n_pcres = 0;
}

int
ids_rule_parse(const char *text, struct ids_rule *r, char *err, size_t size)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	char *opts;
	int rc;

	memset(r, 0, sizeof(*r));
	if (open == NULL || close == NULL || close < open)
		return fail(err, size,
			    "no options in parentheses: ACTION PROTO SRC "
			    "SPORT -> DST DPORT (OPTIONS;)");
	if (strspn(close + 1, " \t\r\n") != strlen(close + 1))
		return fail(err, size, "text after the closing ')'");
	rc = parse_header(text, (size_t)(open - text), r, err, size);
	if (rc != 0)
		return rc;
	opts = strndup(open + 1, (size_t)(close - open - 1));
	if (opts == NULL)
		return fail(err, size, "out of memory");
	rc = parse_options(opts, r, err, size);
	free(opts);
	if (rc == 0 && r->sid == 0)
		rc = fail(err, size, "no sid option (every rule needs one)");
	else if (rc == 0 && r->n_contents == 0 && r->n_pcres == 0)
		rc = fail(err, size,
			  "no content or pcre option: a rule must "
			  "match something");
	else if (rc == 0 && r->action == IDS_DIVERT && r->divert[0] == '\0')
		rc = fail(err, size,
			  "action divert needs a divert:SERVICE option");
	else if (rc == 0 && r->action != IDS_DIVERT && r->divert[0] != '\0')
		rc = fail(err, size,
			  "option 'divert' is only for action divert");
	if (rc != 0)
		rule_clear(r);
	return rc;
}

void
ids_rules_free(struct ids_ruleset *rs)
{
	if (rs == NULL)
		return;
	for (uint32_t i = 0; i < rs->n_rules; i++)
		rule_clear(&rs->rules[i]);
	free(rs->rules);
	free(rs);
}

/* Adds the rule of one line to rs; a duplicate sid is refused. */
static int
add_line(struct ids_ruleset *rs, uint32_t *cap, char *line, uint32_t lineno,
	 const char *path, char *err, size_t size)
{
	char why[512];
	struct ids_rule *r;

	line = trim(line);
	if (line[0] == '\0' || line[0] == '#')
		return 0;
	if (rs->n_rules >= IDS_RULES_MAX)
		return fail(err, size, "%s:%u: more than %d rules", path,
			    lineno, IDS_RULES_MAX);
	if (rs->n_rules == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 64;
		void *n = realloc(rs->rules, ncap * sizeof(*rs->rules));

		if (n == NULL)
			return fail(err, size, "out of memory");
		rs->rules = n;
		*cap = ncap;
	}
	r = &rs->rules[rs->n_rules];
	if (ids_rule_parse(line, r, why, sizeof(why)) != 0)
		return fail(err, size, "%s:%u: %s", path, lineno, why);
	r->line = lineno;
	for (uint32_t i = 0; i < rs->n_rules; i++)
		if (rs->rules[i].sid == r->sid) {
			rule_clear(r);
			return fail(err, size,
				    "%s:%u: sid %u is already used by the rule "
				    "on line %u",
				    path, lineno, r->sid, rs->rules[i].line);
		}
	rs->n_rules++;
	return 0;
}

int
ids_rules_parse_text(const char *path, const char *text,
		     struct ids_ruleset **out, char *err, size_t size)
{
	struct ids_ruleset *rs = calloc(1, sizeof(*rs));
	char *copy = strdup(text), *line, *next;
	uint32_t lineno = 0, cap = 0;
	int rc = 0;

	if (rs == NULL || copy == NULL) {
		free(rs);
		free(copy);
		return fail(err, size, "out of memory");
	}
	for (line = copy; line != NULL && rc == 0; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		if (strlen(line) >= IDS_LINE_MAX)
			rc = fail(err, size, "%s:%u: line longer than %d bytes",
				  path, lineno, IDS_LINE_MAX - 1);
		else
			rc = add_line(rs, &cap, line, lineno, path, err, size);
	}
	free(copy);
	if (rc == 0 && rs->n_rules == 0)
		rc = fail(err, size,
			  "%s: no rules (a rule per line; # starts "
			  "a comment)",
			  path);
	if (rc != 0) {
		ids_rules_free(rs);
		return rc;
	}
	*out = rs;
	return 0;
}

int
ids_rules_load(const char *path, struct ids_ruleset **out, char *err,
	       size_t size)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (f == NULL) {
		rc = errno;
		fail(err, size, "%s: %s", path, strerror(rc));
		return -rc;
	}
	{
		FILE *mem = open_memstream(&text, &len);
		char buf[65536];
		size_t n;

		if (mem == NULL) {
			fclose(f);
			return fail(err, size, "out of memory");
		}
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, mem);
		fclose(mem);
	}
	rc = ferror(f) ? fail(err, size, "%s: read error", path) : 0;
	fclose(f);
	if (rc == 0 && memchr(text, '\0', len) != NULL)
		rc = fail(err, size, "%s: not a text file (a NUL byte)", path);
	if (rc == 0)
		rc = ids_rules_parse_text(path, text, out, err, size);
	free(text);
	return rc;
}

/* ---- header matching ----------------------------------------------- */

static int
addr_in(const struct ids_addr *a, const struct sl_5tuple *t, int src)
{
	const uint8_t *x =
		src ? (t->family == 4 ? (const uint8_t *)&t->src.v4 : t->src.v6)
		    : (t->family == 4 ? (const uint8_t *)&t->dst.v4
				      : t->dst.v6);
	unsigned full = a->len / 8, rest = a->len % 8;

	if (a->family != t->family || memcmp(a->addr, x, full) != 0)
		return 0;
	return rest == 0 ||
	       ((a->addr[full] ^ x[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static int
addr_set_has(const struct ids_addr_set *s, const struct sl_5tuple *t, int src)
{
	int pos = 0, any_pos = 0, in;

	if (s->any)
		return 1;
	for (unsigned i = 0; i < s->n; i++) {
		in = addr_in(&s->a[i], t, src);
		if (s->a[i].neg && in)
			return s->neg;
		if (!s->a[i].neg) {
			any_pos = 1;
			pos |= in;
		}
	}
	in = any_pos ? pos : 1;
	return s->neg ? !in : in;
}

static int
port_set_has(const struct ids_port_set *s, uint16_t port_be)
{
	uint16_t p = ntohs(port_be);
	int pos = 0, any_pos = 0, in;

	if (s->any)
		return 1;
	for (unsigned i = 0; i < s->n; i++) {
		in = p >= s->p[i].lo && p <= s->p[i].hi;
		if (s->p[i].neg && in)
			return s->neg;
		if (!s->p[i].neg) {
			any_pos = 1;
			pos |= in;
		}
	}
	in = any_pos ? pos : 1;
	return s->neg ? !in : in;
}

static int
header_one_way(const struct ids_rule *r, const struct sl_5tuple *t, int fwd)
{
	return addr_set_has(&r->src, t, fwd) &&
	       addr_set_has(&r->dst, t, !fwd) &&
	       port_set_has(&r->sport, fwd ? t->sport : t->dport) &&
	       port_set_has(&r->dport, fwd ? t->dport : t->sport);
}

int
ids_rule_header_match(const struct ids_rule *r, const struct sl_5tuple *t)
{
	if (r->proto != 0 && r->proto != t->proto)
		return 0;
	return header_one_way(r, t, 1) || (r->bidir && header_one_way(r, t, 0));
}
