/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-shaper's configuration file (config.h, README.md): JSON read by
 * jansson, the classes' matches by sl_match_from_json() (the firewall's
 * and sluiced's rule fields).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sluice/match.h"
#include "sluice/nf.h"

#include "config.h"

#define SH_MAX_RATE 100000000000.0 /* bits/s: 100 Gbit/s */
#define SH_MAX_BURST 1000000000.0  /* bytes */

static const char *const sh_act_names[] = {"pass", "drop", "remark"};

const char *
sh_act_name(unsigned act)
{
	return act < 3 ? sh_act_names[act] : "?";
}

struct sh_ctx {
	const char *path;
	uint32_t idx; /* class number from 1 */
	char *err;
	size_t err_size;
};

static int sh_err(const struct sh_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
sh_err(const struct sh_ctx *c, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->err_size, "%s: class %" PRIu32 ": %s", c->path,
		 c->idx, msg);
	return -EINVAL;
}

/* A whole number from lo to hi in v (JSON integer), into *out. */
static int
sh_number(const struct sh_ctx *c, const char *key, const json_t *v, double lo,
	  double hi, const char *unit, uint64_t *out)
{
	if (!json_is_integer(v) || (double)json_integer_value(v) < lo ||
	    (double)json_integer_value(v) > hi) {
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		int rc = sh_err(c,
				"'%s': %s is not a whole number from %.0f "
				"to %.0f%s",
				key, t ? t : "?", lo, hi, unit);

		free(t);
		return rc;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* pass / drop / remark for colour col (1 yellow, 2 red). */
static int
sh_action(const struct sh_ctx *c, const char *key, const json_t *v,
	  struct sh_class *k, unsigned col)
{
	const char *s = json_string_value(v);
	unsigned a;

	for (a = 0; s != NULL && a < 3; a++)
		if (strcmp(s, sh_act_names[a]) == 0) {
			k->act[col] = (uint8_t)a;
			return 0;
		}
	return sh_err(c, "'%s': give pass, drop or remark", key);
}

static int
sh_choice(const struct sh_ctx *c, const char *key, const json_t *v,
	  const char *a, const char *b, uint8_t *out)
{
	const char *s = json_string_value(v);

	if (s != NULL && strcmp(s, a) == 0)
		*out = 0;
	else if (s != NULL && strcmp(s, b) == 0)
		*out = 1;
	else
		return sh_err(c, "'%s': give %s or %s", key, a, b);
	return 0;
}

static int
sh_match(const struct sh_ctx *c, const json_t *v, struct sh_class *k)
{
	const char *key;
	const json_t *x;
	char why[256];

	if (!json_is_object(v))
		return sh_err(c, "'match': not an object");
	json_object_foreach((json_t *)v, key, x)
	{
		(void)x;
		if (strcmp(key, "proto") && strcmp(key, "src") &&
		    strcmp(key, "dst") && strcmp(key, "sport") &&
		    strcmp(key, "dport"))
			return sh_err(c,
				      "'match': unknown key '%s' (expected "
				      "proto, src, dst, sport, dport)",
				      key);
	}
	if (sl_match_from_json(v, &k->match, why, sizeof(why)) != 0)
		return sh_err(c, "'match': %s", why);
	return 0;
}

/* The meter's numbers: rates in bits/s (stored as bytes/s). */
static int
sh_rate_key(const struct sh_ctx *c, const char *key, const json_t *v,
	    struct sh_rates *r, unsigned kind)
{
	uint64_t x = 0;
	int rc;

	if (strcmp(key, "cir") == 0 || strcmp(key, "pir") == 0) {
		if (strcmp(key, "pir") == 0 && kind != SH_TRTCM)
			return sh_err(c, "'pir': only with meter trtcm");
		rc = sh_number(c, key, v, 8, SH_MAX_RATE, " bits/s", &x);
		if (rc == 0)
			*(key[0] == 'c' ? &r->cir : &r->pir) = x / 8;
		return rc;
	}
	if (strcmp(key, "ebs") == 0 && kind != SH_SRTCM)
		return sh_err(c, "'ebs': only with meter srtcm");
	if (strcmp(key, "pbs") == 0 && kind != SH_TRTCM)
		return sh_err(c, "'pbs': only with meter trtcm");
	rc = sh_number(c, key, v, strcmp(key, "ebs") == 0 ? 0 : 1, SH_MAX_BURST,
		       " bytes", &x);
	if (rc == 0)
		*(key[0] == 'c'   ? &r->cbs
		  : key[0] == 'e' ? &r->ebs
				  : &r->pbs) = x;
	return rc;
}

/* What a meter must have, once all its keys are read. */
static int
sh_rates_check(const struct sh_ctx *c, unsigned kind, const struct sh_rates *r)
{
	if (r->cir == 0)
		return sh_err(c, "missing 'cir' (bits/s)");
	if (r->cbs == 0)
		return sh_err(c, "missing 'cbs' (bytes)");
	if (kind == SH_TRTCM) {
		if (r->pir == 0 || r->pbs == 0)
			return sh_err(c, "meter trtcm needs 'pir' and 'pbs'");
		if (r->pir < r->cir)
			return sh_err(c,
				      "'pir' %" PRIu64 " is below 'cir' "
				      "%" PRIu64 " bits/s",
				      r->pir * 8, r->cir * 8);
	}
	return 0;
}

static int
sh_class_key(const struct sh_ctx *c, const char *key, const json_t *v,
	     struct sh_class *k)
{
	uint64_t x = 0;
	int rc;

	if (strcmp(key, "match") == 0)
		return sh_match(c, v, k);
	if (strcmp(key, "per") == 0)
		return sh_choice(c, key, v, "class", "flow", &k->per_flow);
	if (strcmp(key, "yellow") == 0 || strcmp(key, "red") == 0)
		return sh_action(c, key, v, k, key[0] == 'y' ? 1 : 2);
	if (strcmp(key, "dscp") == 0 || strcmp(key, "yellow_dscp") == 0 ||
	    strcmp(key, "red_dscp") == 0) {
		rc = sh_number(c, key, v, 0, 63, "", &x);
		if (rc == 0 && key[0] == 'd')
			k->dscp = (uint8_t)x;
		else if (rc == 0)
			k->mark[key[0] == 'y' ? 1 : 2] = (uint8_t)x;
		return rc;
	}
	if (strcmp(key, "cir") == 0 || strcmp(key, "pir") == 0 ||
	    strcmp(key, "cbs") == 0 || strcmp(key, "ebs") == 0 ||
	    strcmp(key, "pbs") == 0)
		return sh_rate_key(c, key, v, &k->r, k->kind);
	return sh_err(c,
		      "unknown key '%s' (expected name, match, dscp, meter, "
		      "per, cir, cbs, ebs, pir, pbs, yellow, red, yellow_dscp, "
		      "red_dscp)",
		      key);
}

static int
sh_class(const struct sh_ctx *c, const json_t *o, struct sh_class *k)
{
	const json_t *v, *name = json_object_get(o, "name");
	const char *key, *s;
	int rc;

	if (!json_is_object(o))
		return sh_err(c, "not an object");
	memset(k, 0, sizeof(*k));
	sl_match_init(&k->match);
	k->dscp = SH_NO_DSCP;
	k->act[2] = SH_DROP;
	s = json_string_value(name);
	if (s == NULL || s[0] == '\0' || strlen(s) >= SH_NAME_LEN ||
	    strpbrk(s, " \t\n=") != NULL)
		return sh_err(c,
			      "'name': give 1 to %d characters, no blanks "
			      "or '='",
			      SH_NAME_LEN - 1);
	snprintf(k->name, sizeof(k->name), "%s", s);
	v = json_object_get(o, "meter");
	if (v != NULL &&
	    (rc = sh_choice(c, "meter", v, "srtcm", "trtcm", &k->kind)) != 0)
		return rc;
	json_object_foreach((json_t *)o, key, v)
	{
		if (strcmp(key, "name") == 0 || strcmp(key, "meter") == 0)
			continue;
		if ((rc = sh_class_key(c, key, v, k)) != 0)
			return rc;
	}
	for (unsigned col = 1; col < 3; col++)
		if (k->act[col] == SH_REMARK &&
		    json_object_get(o, col == 1 ? "yellow_dscp" : "red_dscp") ==
			    NULL)
			return sh_err(c, "'%s': remark needs '%s'",
				      col == 1 ? "yellow" : "red",
				      col == 1 ? "yellow_dscp" : "red_dscp");
	return sh_rates_check(c, k->kind, &k->r);
}

static int
sh_config_json(const struct sh_ctx *top, json_t *root, struct sh_config *cfg)
{
	struct sh_ctx c = *top;
	const json_t *classes;
	const char *key;
	json_t *v;
	size_t i;
	int rc;

	if (!json_is_object(root)) {
		snprintf(c.err, c.err_size,
			 "%s: the top level is not an object", c.path);
		return -EINVAL;
	}
	json_object_foreach(root, key, v)
	{
		(void)v;
		if (strcmp(key, "classes") != 0) {
			snprintf(c.err, c.err_size,
				 "%s: unknown key '%s' (expected classes)",
				 c.path, key);
			return -EINVAL;
		}
	}
	classes = json_object_get(root, "classes");
	if (!json_is_array(classes) || json_array_size(classes) == 0 ||
	    json_array_size(classes) > SH_MAX_CLASSES) {
		snprintf(c.err, c.err_size,
			 "%s: 'classes': give a list of 1 to %d classes",
			 c.path, SH_MAX_CLASSES);
		return -EINVAL;
	}
	memset(cfg, 0, sizeof(*cfg));
	json_array_foreach(classes, i, v)
	{
		c.idx = (uint32_t)i + 1;
		rc = sh_class(&c, v, &cfg->classes[i]);
		if (rc != 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(cfg->classes[j].name,
				   cfg->classes[i].name) == 0)
				return sh_err(&c,
					      "'name': '%s' is class %zu's "
					      "too",
					      cfg->classes[i].name, j + 1);
	}
	cfg->n_classes = (uint32_t)json_array_size(classes);
	return 0;
}

int
sh_config_load(const char *path, struct sh_config *cfg, char *err,
	       size_t err_size)
{
	const struct sh_ctx c = {path, 0, err, err_size};
	json_error_t je;
	json_t *root;
	int rc;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL) {
		if (je.line <= 0)
			snprintf(err, err_size, "%s: cannot read: %s", path,
				 je.text);
		else
			snprintf(err, err_size, "%s:%d:%d: JSON error: %s",
				 path, je.line, je.column, je.text);
		return -EINVAL;
	}
	rc = sh_config_json(&c, root, cfg);
	json_decref(root);
	return rc;
}

int
sh_rates_parse(const char *text, unsigned kind, struct sh_rates *r, char *err,
	       size_t err_size)
{
	const struct sh_ctx c = {"message", 0, err, err_size};
	char buf[256], *save = NULL, *tok;
	struct sh_rates nr = *r;

	snprintf(buf, sizeof(buf), "%s", text);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		double d;
		json_t *v;
		int rc;

		if (eq == NULL ||
		    sl_parse_number(eq + 1, 0, 1e15, 0, &d) != 0) {
			snprintf(err, err_size,
				 "'%s' is not KEY=N (cir, cbs, ebs, pir, pbs)",
				 tok);
			return -EINVAL;
		}
		*eq = '\0';
		v = json_integer((json_int_t)d);
		rc = strcmp(tok, "cir") && strcmp(tok, "pir") &&
				     strcmp(tok, "cbs") && strcmp(tok, "ebs") &&
				     strcmp(tok, "pbs")
			     ? sh_err(&c,
				      "unknown key '%s' (cir, cbs, ebs, "
				      "pir, pbs)",
				      tok)
			     : sh_rate_key(&c, tok, v, &nr, kind);
		json_decref(v);
		if (rc != 0)
			return rc;
	}
	if (sh_rates_check(&c, kind, &nr) != 0)
		return -EINVAL;
	*r = nr;
	return 0;
}

int
sh_class_format(const struct sh_class *c, char *buf, size_t size)
{
	if (c->kind == SH_SRTCM)
		return snprintf(buf, size,
				"srtcm cir=%" PRIu64 " cbs=%" PRIu64
				" ebs=%" PRIu64,
				c->r.cir * 8, c->r.cbs, c->r.ebs);
	return snprintf(buf, size,
			"trtcm cir=%" PRIu64 " pir=%" PRIu64 " cbs=%" PRIu64
			" pbs=%" PRIu64,
			c->r.cir * 8, c->r.pir * 8, c->r.cbs, c->r.pbs);
}

int
sh_classify(const struct sh_config *cfg, const struct sl_5tuple *t,
	    uint8_t dscp)
{
	uint32_t i;

	for (i = 0; i < cfg->n_classes; i++) {
		const struct sh_class *k = &cfg->classes[i];

		if ((k->dscp == SH_NO_DSCP || k->dscp == dscp) &&
		    sl_match_test(&k->match, t, 0))
			return (int)i;
	}
	return -1;
}
