/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Compiles sluice-ids rules into one Hyperscan stream-mode database.
 *
 * A rule's contents form chains: a content with distance or within joins
 * the chain of the content before it, any other content starts a chain.
 * A chain is one regular expression: each content a literal (\xHH for
 * every byte that is not a letter or digit; (?i:...) with nocase) and,
 * between two contents, a gap [\s\S]{DISTANCE,WITHIN-LEN} (or
 * {DISTANCE,} without within): the next content starts at least distance
 * bytes after the previous match ends and ends at most within bytes after
 * it. offset/depth on a chain's first content: for a chain of one content,
 * hs_expr_ext's min_offset (offset + length: Hyperscan's offsets are
 * those of the match's end) and max_offset (offset + depth); for a longer
 * chain, an anchored prefix ^[\s\S]{OFFSET,OFFSET+DEPTH-LEN} (^ is the
 * start of the stream). A pcre is one more expression with its flags.
 * A rule of one expression reports under the rule's index. A rule of
 * several (parts) reports each under an id of its own (n_rules + its
 * index in struct ids_parts, which names the rule and the part's bit):
 * the NF keeps, per flow direction, which parts of such rules have
 * matched and fires the rule when all have. (Not Hyperscan's logical
 * combinations: in stream mode 5.4 reports a combination only once a
 * later match or the end of the stream comes, so the packet that
 * completes it would go by.) Every expression has HS_FLAG_SINGLEMATCH: a
 * rule or part fires at most once per stream (one flow direction). No
 * start of match is needed (no HS_FLAG_SOM_LEFTMOST: it would cost
 * stream state), since every position constraint is in the expression.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hs.h>

#include "rules.h"

/* The expressions handed to hs_compile_ext_multi, and for each the rule
 * and the part of it it comes from (for errors). */
struct hs_build {
	char **expr;
	unsigned *flags, *ids;
	hs_expr_ext_t *ext;
	const hs_expr_ext_t **extp;
	uint32_t *rule;
	char (*what)[32];
	uint32_t n, cap;
};

static int
build_grow(struct hs_build *b)
{
	uint32_t cap = b->cap ? b->cap * 2 : 256;

#define GROW(f)                                                                \
	do {                                                                   \
		void *p = realloc(b->f, cap * sizeof(*b->f));                  \
		if (p == NULL)                                                 \
			return -ENOMEM;                                        \
		b->f = p;                                                      \
	} while (0)
	GROW(expr);
	GROW(flags);
	GROW(ids);
	GROW(ext);
	GROW(extp);
	GROW(rule);
	GROW(what);
#undef GROW
	b->cap = cap;
	return 0;
}

static void
build_free(struct hs_build *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		free(b->expr[i]);
	free(b->expr);
	free(b->flags);
	free(b->ids);
	free(b->ext);
	free(b->extp);
	free(b->rule);
	free(b->what);
}

/* Adds an expression (takes expr); ext may be NULL. */
static int
build_add(struct hs_build *b, char *expr, unsigned flags, unsigned id,
	  const hs_expr_ext_t *ext, uint32_t rule, const char *what)
{
	if (expr == NULL || (b->n == b->cap && build_grow(b) != 0)) {
		free(expr);
		return -ENOMEM;
	}
	b->expr[b->n] = expr;
	b->flags[b->n] = flags;
	b->ids[b->n] = id;
	if (ext != NULL)
		b->ext[b->n] = *ext;
	b->extp[b->n] = NULL; /* set once the arrays stop moving */
	b->rule[b->n] = rule;
	snprintf(b->what[b->n], sizeof(b->what[0]), "%s", what);
	if (ext == NULL)
		b->ext[b->n].flags = 0;
	b->n++;
	return 0;
}

/* A growing string. */
struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void
sb_add(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(sb->s ? sb->s + sb->len : NULL,
			      sb->s ? sb->cap - sb->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			sb->oom = 1;
			return;
		}
		if (sb->s != NULL && sb->len + (size_t)n < sb->cap) {
			sb->len += (size_t)n;
			return;
		}
		size_t cap = (sb->cap ? sb->cap * 2 : 128) + (size_t)n;
		char *p = realloc(sb->s, cap);

		if (p == NULL) {
			sb->oom = 1;
			return;
		}
		sb->s = p;
		sb->cap = cap;
	}
}

static void
sb_literal(struct sbuf *sb, const struct ids_content *c)
{
	if (c->nocase)
		sb_add(sb, "(?i:");
	for (unsigned i = 0; i < c->len; i++) {
		uint8_t ch = c->bytes[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9'))
			sb_add(sb, "%c", ch);
		else
			sb_add(sb, "\\x%02x", ch);
	}
	if (c->nocase)
		sb_add(sb, ")");
}

/* The chain of contents c[0..n) as one expression, with its ext. */
static char *
chain_expr(const struct ids_content *c, uint32_t n, hs_expr_ext_t *ext)
{
	struct sbuf sb = {0};

	memset(ext, 0, sizeof(*ext));
	if (n == 1 && (c[0].has_offset || c[0].has_depth)) {
		if (c[0].offset > 0) {
			ext->flags |= HS_EXT_FLAG_MIN_OFFSET;
			ext->min_offset = c[0].offset + c[0].len;
		}
		if (c[0].has_depth) {
			ext->flags |= HS_EXT_FLAG_MAX_OFFSET;
			ext->max_offset = c[0].offset + c[0].depth;
		}
	} else if (c[0].has_depth) {
		uint32_t hi = c[0].offset + c[0].depth - c[0].len;

		if (hi == 0)
			sb_add(&sb, "^");
		else if (hi == c[0].offset)
			sb_add(&sb, "^[\\s\\S]{%u}", hi);
		else
			sb_add(&sb, "^[\\s\\S]{%u,%u}", c[0].offset, hi);
	} else if (c[0].has_offset) {
		sb_add(&sb, "^[\\s\\S]{%u,}", c[0].offset);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0 && c[i].has_within)
			sb_add(&sb, "[\\s\\S]{%u,%u}", c[i].distance,
			       c[i].within - c[i].len);
		else if (i > 0 && c[i].distance > 0)
			sb_add(&sb, "[\\s\\S]{%u,}", c[i].distance);
		else if (i > 0)
			sb_add(&sb, "[\\s\\S]*");
		sb_literal(&sb, &c[i]);
	}
	if (sb.oom) {
		free(sb.s);
		return NULL;
	}
	return sb.s;
}

/* Records that expression id is part bit of rule ri. */
static int
parts_add(struct ids_parts *p, uint32_t ri, unsigned bit)
{
	if (p->n % 256 == 0) {
		void *r = realloc(p->rule, (p->n + 256) * sizeof(*p->rule));
		void *m;

		if (r == NULL)
			return -ENOMEM;
		p->rule = r;
		m = realloc(p->bit, (p->n + 256) * sizeof(*p->bit));
		if (m == NULL)
			return -ENOMEM;
		p->bit = m;
	}
	p->rule[p->n] = ri;
	p->bit[p->n] = (uint8_t)bit;
	p->n++;
	return 0;
}

/* Adds rule ri's expressions: one under id ri, or (several parts) each
 * under id n_rules + its index in p. */
static int
add_rule(struct hs_build *b, struct ids_parts *p, const struct ids_rule *r,
	 uint32_t ri, uint32_t n_rules)
{
	uint32_t parts = r->n_pcres, bit = 0, i, j;
	hs_expr_ext_t ext;
	char what[32];
	int rc;

	for (i = 0; i < r->n_contents; i++)
		parts += !(r->content[i].has_distance ||
			   r->content[i].has_within);
	p->mask[ri] = parts == 1 ? 0 : (uint32_t)((1ull << parts) - 1);
	for (i = 0; i < r->n_contents; i = j, bit++) {
		for (j = i + 1;
		     j < r->n_contents &&
		     (r->content[j].has_distance || r->content[j].has_within);
		     j++)
			;
		unsigned id = parts == 1 ? ri : n_rules + p->n;

		snprintf(what, sizeof(what), "content %u", i + 1);
		rc = build_add(b, chain_expr(&r->content[i], j - i, &ext),
			       HS_FLAG_SINGLEMATCH, id, &ext, ri, what);
		if (rc == 0 && parts > 1)
			rc = parts_add(p, ri, bit);
		if (rc != 0)
			return rc;
	}
	for (i = 0; i < r->n_pcres; i++, bit++) {
		unsigned id = parts == 1 ? ri : n_rules + p->n;

		snprintf(what, sizeof(what), "pcre %u", i + 1);
		rc = build_add(b, strdup(r->pcre[i].re),
			       r->pcre[i].flags | HS_FLAG_SINGLEMATCH, id, NULL,
			       ri, what);
		if (rc == 0 && parts > 1)
			rc = parts_add(p, ri, bit);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
ids_parts_free(struct ids_parts *p)
{
	free(p->rule);
	free(p->bit);
	free(p->mask);
	memset(p, 0, sizeof(*p));
}

int
ids_rules_compile(const struct ids_ruleset *rs, const char *path,
		  struct hs_database **db, struct ids_parts *parts, char *err,
		  size_t size)
{
	struct hs_build b = {0};
	hs_compile_error_t *ce = NULL;
	hs_database_t *out = NULL;
	int rc = 0;

	memset(parts, 0, sizeof(*parts));
	parts->mask = calloc(rs->n_rules, sizeof(*parts->mask));
	if (parts->mask == NULL)
		rc = -ENOMEM;
	for (uint32_t i = 0; i < rs->n_rules && rc == 0; i++)
		rc = add_rule(&b, parts, &rs->rules[i], i, rs->n_rules);
	if (rc != 0) {
		ids_parts_free(parts);
		build_free(&b);
		snprintf(err, size, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < b.n; i++)
		b.extp[i] = b.ext[i].flags ? &b.ext[i] : NULL;
	if (hs_compile_ext_multi((const char *const *)b.expr, b.flags, b.ids,
				 b.extp, b.n, HS_MODE_STREAM, NULL, &out,
				 &ce) != HS_SUCCESS) {
		if (ce != NULL && ce->expression >= 0 &&
		    (uint32_t)ce->expression < b.n) {
			const struct ids_rule *r =
				&rs->rules[b.rule[ce->expression]];

			snprintf(err, size,
				 "%s:%u: sid %u: Hyperscan cannot compile its "
				 "%s (%s): %s",
				 path, r->line, r->sid, b.what[ce->expression],
				 b.expr[ce->expression], ce->message);
		} else {
			snprintf(err, size,
				 "%s: Hyperscan cannot compile the "
				 "rules: %s",
				 path, ce ? ce->message : "unknown error");
		}
		hs_free_compile_error(ce);
		rc = -EINVAL;
	}
	build_free(&b);
	if (rc == 0)
		*db = out;
	else
		ids_parts_free(parts);
	return rc;
}
