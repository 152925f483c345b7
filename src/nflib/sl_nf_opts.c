/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An NF's option table: see sl_nf_opts.h. Messages begin with ops->name,
 * as the NFs' own do.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sl_nf_opts.h"

/* How long a service option waits for its service: its NF may be
 * starting beside this one (sluice up starts a deployment's NFs at once). */
#define NFO_SERVICE_WAIT_MS 5000

const struct sl_nf_opt *
nfo_find(const struct sl_nf_opt *opts, const char *arg, const char **value,
	 int *ambiguous)
{
	const struct sl_nf_opt *hit = NULL;
	const char *eq;
	size_t len;

	*value = NULL;
	*ambiguous = 0;
	if (opts == NULL || arg[0] != '-' || arg[1] == '\0')
		return NULL;
	if (arg[1] != '-') { /* -x or -xVALUE */
		for (const struct sl_nf_opt *o = opts; o->name != NULL; o++)
			if (o->letter != 0 && o->letter == arg[1]) {
				if (arg[2] != '\0')
					*value = arg + 2;
				return o;
			}
		return NULL;
	}
	arg += 2;
	eq = strchr(arg, '=');
	len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
	if (len == 0)
		return NULL; /* "--" or "--=x" */
	for (const struct sl_nf_opt *o = opts; o->name != NULL; o++) {
		if (strncmp(o->name, arg, len) != 0)
			continue;
		if (o->name[len] == '\0') { /* exact */
			hit = o;
			*ambiguous = 0;
			break;
		}
		if (hit != NULL)
			*ambiguous = 1;
		hit = o;
	}
	if (*ambiguous)
		return NULL;
	if (hit != NULL && eq != NULL)
		*value = eq + 1;
	return hit;
}

int
nfo_takes_value(const struct sl_nf_opt *o)
{
	return o->type != SL_OPT_FLAG;
}

/* Why entry o does not fit its type or the context, or NULL if it does. */
static const char *
opt_bad(const struct sl_nf_opt *o, size_t priv_size)
{
	if (o->letter == 'h' || o->letter == 's')
		return "-h and -s are libsluice's";
	if (o->type == SL_OPT_CHOICE && o->choices == NULL)
		return "a choice needs choices";
	if (o->type == SL_OPT_NUMBER && (o->min < 0 || o->max < o->min))
		return "its range is not 0 <= min <= max";
	if (o->type < SL_OPT_FLAG || o->type > SL_OPT_CHOICE)
		return "its type is not an SL_OPT_*";
	if (o->parse != NULL)
		return NULL; /* nothing stored */
	if (o->offset + o->size > priv_size || o->size == 0)
		return "its member is not inside priv_size";
	switch (o->type) {
	case SL_OPT_STRING:
	case SL_OPT_FILE:
		return o->size == sizeof(const char *)
			       ? NULL
			       : "its member is not a const char *";
	case SL_OPT_NUMBER:
		if (o->frac)
			return o->size == sizeof(double)
				       ? NULL
				       : "its member is not a double";
		if (o->size != 1 && o->size != 2 && o->size != 4 &&
		    o->size != 8)
			return "its member is not an unsigned integer";
		if (o->size < 8 &&
		    o->max > (double)((1ull << (8 * o->size)) - 1))
			return "its max does not fit its member";
		return NULL;
	default:
		return o->size == sizeof(int) ? NULL
					      : "its member is not an int";
	}
}

int
nfo_check(const struct sl_nf_ops *ops, const char *prog)
{
	if (ops->opts == NULL)
		return 0;
	for (const struct sl_nf_opt *o = ops->opts; o->name != NULL; o++) {
		const char *why = opt_bad(o, ops->priv_size);

		if (why != NULL) {
			fprintf(stderr, "%s: bad sl_nf_ops: option --%s: %s\n",
				prog, o->name, why);
			return EINVAL;
		}
	}
	return 0;
}

void
nfo_usage(const struct sl_nf_ops *ops)
{
	size_t col = ops->opts_help_col;

	if (col == 0)
		for (const struct sl_nf_opt *o = ops->opts; o->name != NULL;
		     o++) {
			size_t len = 2 + 2 + strlen(o->name) +
				     (o->arg ? 1 + strlen(o->arg) : 0) + 2;

			col = len > col ? len : col;
		}
	for (const struct sl_nf_opt *o = ops->opts; o->name != NULL; o++) {
		const char *h = o->help != NULL ? o->help : "";
		int len;

		len = printf("  --%s",
			     o->name); /* letters: aliases, unlisted */
		if (o->arg != NULL && nfo_takes_value(o))
			len += printf(" %s", o->arg);
		printf("%*s", (size_t)len + 2 > col ? 2 : (int)col - len, "");
		for (const char *nl; (nl = strchr(h, '\n')) != NULL; h = nl + 1)
			printf("%.*s\n%*s", (int)(nl - h), h, (int)col, "");
		printf("%s\n", h);
	}
}

/* min or max as the message shows it: %.0f, as sl_opt_number() does. */
static void
fmt_bound(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.0f", v);
}

static int
store_number(const char *prog, const struct sl_nf_opt *o, const char *v,
	     void *at)
{
	char lo[32], hi[32];
	double d;

	if (sl_parse_number(v, o->min, o->max, o->frac, &d) != 0) {
		fmt_bound(lo, sizeof(lo), o->min);
		fmt_bound(hi, sizeof(hi), o->max);
		fprintf(stderr, "%s: --%s: '%s' is not a %s from %s to %s\n",
			prog, o->name, v,
			o->what   ? o->what
			: o->frac ? "number"
				  : "whole number",
			lo, hi);
		return EINVAL;
	}
	if (at == NULL)
		return 0;
	if (o->frac)
		memcpy(at, &d, sizeof(d));
	else if (o->size == 1)
		*(uint8_t *)at = (uint8_t)d;
	else if (o->size == 2)
		*(uint16_t *)at = (uint16_t)d;
	else if (o->size == 4)
		*(uint32_t *)at = (uint32_t)d;
	else
		*(uint64_t *)at = (uint64_t)d;
	return 0;
}

static int
store_choice(const char *prog, const struct sl_nf_opt *o, const char *v,
	     int *at)
{
	for (int i = 0; o->choices[i] != NULL; i++)
		if (strcmp(o->choices[i], v) == 0) {
			if (at != NULL)
				*at = i;
			return 0;
		}
	if (o->what != NULL) {
		fprintf(stderr, "%s: --%s: '%s' is not %s\n", prog, o->name, v,
			o->what);
		return EINVAL;
	}
	fprintf(stderr, "%s: --%s '%s': use ", prog, o->name, v);
	for (int i = 0; o->choices[i] != NULL; i++)
		fprintf(stderr, "%s%s", o->choices[i],
			o->choices[i + 1] == NULL   ? "\n"
			: o->choices[i + 2] == NULL ? " or "
						    : ", ");
	return EINVAL;
}

/* Checks value v of option o and stores it in priv (or hands it to
 * o->parse). 0 or a positive errno after saying what was wrong. */
static int
store(struct sl_nf *nf, const struct sl_nf_ops *ops, const struct sl_nf_opt *o,
      const char *v)
{
	char *priv = sl_nf_priv(nf);
	void *at = o->parse != NULL ? NULL : priv + o->offset;
	int id, rc;

	switch (o->type) {
	case SL_OPT_FLAG:
		if (at != NULL)
			*(int *)at = 1;
		break;
	case SL_OPT_NUMBER:
		rc = store_number(ops->name, o, v, at);
		if (rc != 0)
			return rc;
		break;
	case SL_OPT_CHOICE:
		rc = store_choice(ops->name, o, v, at);
		if (rc != 0)
			return rc;
		break;
	case SL_OPT_STRING:
	case SL_OPT_FILE:
		if (at != NULL)
			memcpy(at, &v, sizeof(v));
		break;
	case SL_OPT_PORT:
	case SL_OPT_SERVICE:
		id = o->type == SL_OPT_PORT
			     ? sl_port_id(nf, v)
			     : sl_service_id_wait(nf, v, NFO_SERVICE_WAIT_MS);
		if (id < 0) {
			fprintf(stderr,
				"%s: --%s '%s': no such %s (sluice status "
				"lists them)\n",
				ops->name, o->name, v,
				o->type == SL_OPT_PORT ? "port" : "service");
			return EINVAL;
		}
		if (at != NULL)
			*(int *)at = id;
		break;
	}
	return o->parse != NULL ? o->parse(nf, priv, v) : 0;
}

static int
defaults(struct sl_nf *nf, const struct sl_nf_ops *ops)
{
	char *priv = sl_nf_priv(nf);

	for (const struct sl_nf_opt *o = ops->opts; o->name != NULL; o++) {
		int rc;

		if (o->def != NULL) {
			rc = store(nf, ops, o, o->def);
			if (rc != 0)
				return rc;
		} else if ((o->type == SL_OPT_PORT ||
			    o->type == SL_OPT_SERVICE) &&
			   o->parse == NULL) {
			*(int *)(priv + o->offset) = -1;
		}
	}
	return 0;
}

/* The option at argv[*i] and its value: 0, or EINVAL after saying why
 * (ECANCELED after printing the help for -h or --help). */
static int
one_opt(struct sl_nf *nf, const struct sl_nf_ops *ops, int *i, int argc,
	char **argv)
{
	const char *arg = argv[*i], *v;
	const struct sl_nf_opt *o;
	int ambiguous;

	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
		/* Only when called without libsluice's own parsing before
		 * (a unit test's stand-in): libsluice takes the help first. */
		if (ops->usage != NULL)
			fputs(ops->usage, stdout);
		nfo_usage(ops);
		return ECANCELED;
	}
	o = nfo_find(ops->opts, arg, &v, &ambiguous);
	if (o == NULL) {
		/* getopt_long's words, then the synopsis, as the NFs printed
		 * before they had a table. */
		fprintf(stderr,
			ambiguous ? "%s: option '%s' is ambiguous\n"
				  : "%s: unrecognized option '%s'\n",
			ops->name, arg);
		if (ops->usage != NULL)
			fputs(ops->usage, stderr);
		return EINVAL;
	}
	if (!nfo_takes_value(o)) {
		if (v != NULL) {
			fprintf(stderr, "%s: option --%s takes no value\n",
				ops->name, o->name);
			return EINVAL;
		}
		return store(nf, ops, o, NULL);
	}
	if (v == NULL) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s: option --%s needs a value\n",
				ops->name, o->name);
			return EINVAL;
		}
		v = argv[++*i];
	}
	return store(nf, ops, o, v);
}

int
nfo_parse(struct sl_nf *nf, const struct sl_nf_ops *ops, int argc, char **argv)
{
	int rc = defaults(nf, ops);

	for (int i = 1; rc == 0 && i < argc; i++) {
		if (argv[i][0] != '-' || argv[i][1] == '\0' ||
		    strcmp(argv[i], "--") == 0) {
			fprintf(stderr, "%s: unexpected argument '%s'\n",
				ops->name, argv[i]);
			return EINVAL;
		}
		rc = one_opt(nf, ops, &i, argc, argv);
	}
	return rc;
}
