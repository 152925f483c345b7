/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The steering file of sluice-dpi: "APP -> TARGET" lines (README.md).
 * Every error names the file and the line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ndpi_api.h>

#include "dpi.h"

#define DPI_LINE_MAX 512

struct dpi_parse {
	const char *path;
	struct ndpi_detection_module_struct *nd;
	dpi_resolve_fn resolve;
	void *ctx;
	struct dpi_rules *rs;
	char *err;
	size_t err_size;
};

/* Splits s into at most max blank-separated words; returns how many
 * there were (more than max: max + 1). */
static int
dpi_words(char *s, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		w[n++] = t;
	}
	return n;
}

/* Checks one rule's application name against nDPI's protocols. */
static int
dpi_rule_app(struct dpi_parse *p, uint32_t line, const char *app,
	     struct dpi_rule *r)
{
	char name[DPI_NAME_LEN];
	int id;

	if (strlen(app) >= DPI_NAME_LEN) {
		snprintf(p->err, p->err_size,
			 "%s:%u: application name '%.20s...' is longer than "
			 "%d characters",
			 p->path, line, app, DPI_NAME_LEN - 1);
		return EINVAL;
	}
	snprintf(name, sizeof(name), "%s", app);
	id = ndpi_get_protocol_id(p->nd, name);
	if (id < 0) {
		snprintf(p->err, p->err_size,
			 "%s:%u: unknown application '%s': nDPI %s has no "
			 "protocol of that name",
			 p->path, line, app, ndpi_revision());
		return EINVAL;
	}
	if (id == NDPI_PROTOCOL_UNKNOWN) {
		snprintf(p->err, p->err_size,
			 "%s:%u: '%s' cannot be steered: flows whose "
			 "application is not detected follow the default edge",
			 p->path, line, app);
		return EINVAL;
	}
	for (uint32_t i = 0; i < p->rs->n; i++) {
		if (p->rs->r[i].app_id == (uint16_t)id) {
			snprintf(p->err, p->err_size,
				 "%s:%u: application '%s' already has a rule "
				 "(line %u)",
				 p->path, line, app, p->rs->r[i].line);
			return EINVAL;
		}
	}
	snprintf(r->app, sizeof(r->app), "%s", app);
	r->app_id = (uint16_t)id;
	return 0;
}

/* One line of the file; blank and comment lines add nothing. */
static int
dpi_rule_line(struct dpi_parse *p, uint32_t line, char *text)
{
	struct dpi_rule r;
	char *w[3], *hash = strchr(text, '#');
	char why[DPI_ERR_LEN];
	int n, rc;

	if (hash != NULL)
		*hash = '\0';
	n = dpi_words(text, w, 3);
	if (n == 0)
		return 0;
	if (n != 3 || strcmp(w[1], "->") != 0) {
		snprintf(p->err, p->err_size,
			 "%s:%u: expected 'APP -> SERVICE' (or 'APP -> "
			 "drop')",
			 p->path, line);
		return EINVAL;
	}
	if (p->rs->n == DPI_MAX_RULES) {
		snprintf(p->err, p->err_size, "%s:%u: more than %d rules",
			 p->path, line, DPI_MAX_RULES);
		return EINVAL;
	}
	memset(&r, 0, sizeof(r));
	r.line = line;
	rc = dpi_rule_app(p, line, w[0], &r);
	if (rc != 0)
		return rc;
	if (strlen(w[2]) >= DPI_NAME_LEN) {
		snprintf(p->err, p->err_size,
			 "%s:%u: target '%.20s...' is longer than %d "
			 "characters",
			 p->path, line, w[2], DPI_NAME_LEN - 1);
		return EINVAL;
	}
	snprintf(r.to_name, sizeof(r.to_name), "%s", w[2]);
	rc = p->resolve(p->ctx, w[2], &r.to, why, sizeof(why));
	if (rc != 0) {
		snprintf(p->err, p->err_size, "%s:%u: %s", p->path, line, why);
		return rc;
	}
	p->rs->r[p->rs->n++] = r;
	return 0;
}

static int
dpi_rules_read(struct dpi_parse *p, FILE *f)
{
	char buf[DPI_LINE_MAX + 2];
	uint32_t line = 0;
	int rc;

	while (fgets(buf, sizeof(buf), f) != NULL) {
		size_t len = strlen(buf);

		line++;
		if (len > DPI_LINE_MAX && buf[len - 1] != '\n' && !feof(f)) {
			snprintf(p->err, p->err_size,
				 "%s:%u: line longer than %d characters",
				 p->path, line, DPI_LINE_MAX);
			return EINVAL;
		}
		rc = dpi_rule_line(p, line, buf);
		if (rc != 0)
			return rc;
	}
	if (ferror(f)) {
		snprintf(p->err, p->err_size, "%s: read error after line %u",
			 p->path, line);
		return EIO;
	}
	return 0;
}

int
dpi_rules_load(const char *path, struct ndpi_detection_module_struct *nd,
	       dpi_resolve_fn resolve, void *ctx, struct dpi_rules **out,
	       char *err, size_t err_size)
{
	struct dpi_parse p = {path, nd, resolve, ctx, NULL, err, err_size};
	FILE *f;
	int rc;

	*out = NULL;
	p.rs = calloc(1, sizeof(*p.rs));
	if (p.rs != NULL)
		p.rs->r = calloc(DPI_MAX_RULES, sizeof(p.rs->r[0]));
	if (p.rs == NULL || p.rs->r == NULL) {
		dpi_rules_free(p.rs);
		snprintf(err, err_size, "%s: out of memory", path);
		return ENOMEM;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		rc = errno;
		snprintf(err, err_size, "%s: cannot open: %s", path,
			 strerror(rc));
		dpi_rules_free(p.rs);
		return rc;
	}
	rc = dpi_rules_read(&p, f);
	fclose(f);
	if (rc != 0) {
		dpi_rules_free(p.rs);
		return rc;
	}
	*out = p.rs;
	return 0;
}

void
dpi_rules_free(struct dpi_rules *rs)
{
	if (rs == NULL)
		return;
	free(rs->r);
	free(rs);
}

int
dpi_rules_match(const struct dpi_rules *rs, uint16_t master, uint16_t app)
{
	if (rs == NULL)
		return -1;
	for (uint32_t i = 0; i < rs->n; i++) {
		uint16_t id = rs->r[i].app_id;

		if ((id == app && app != NDPI_PROTOCOL_UNKNOWN) ||
		    (id == master && master != NDPI_PROTOCOL_UNKNOWN))
			return (int)i;
	}
	return -1;
}
