/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's options, described once (mgr_mgr_opt_table in options.c): the
 * table drives parsing (getopt_long), --help, --defaults-json and so the
 * checks of docs/sluiced.md and Python's copy of the defaults. Adding an
 * option is one table entry plus its field in struct sl_mgr_opts.
 */
#ifndef SL_MGR_OPTIONS_H
#define SL_MGR_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sluiced.h"

enum sl_mgr_opt_type {
	/* a decimal integer (digits only) in min..max, stored in a
	 * uint16_t or uint32_t field */
	MGR_OPT_NUM,
	/* one of words[]; the word's index is stored (a uint32_t field) */
	MGR_OPT_CHOICE,
	/* text, checked and stored by set() */
	MGR_OPT_TEXT,
};

struct sl_mgr_opt;

/* Stores v for option d in o: 0, or EINVAL with the reason in err. For a
 * number or a choice it runs after the range or word check, on o's field
 * already set (a further check); for text it does it all. */
typedef int (*sl_mgr_opt_set_fn)(const struct sl_mgr_opt *d,
				 struct sl_mgr_opts *o, const char *v,
				 char *err, size_t errlen);

struct sl_mgr_opt {
	const char *name; /* the long option, without "--" */
	const char *arg;  /* its value as --help names it: "N", "MS", ... */
	enum sl_mgr_opt_type type;
	size_t off;  /* where it is stored: offsetof(struct sl_mgr_opts, f) */
	size_t size; /* and the field's size (NUM: 2 or 4) */
	uint32_t min, max; /* NUM: the range */
	uint32_t def;      /* NUM, CHOICE: the default (CHOICE: an index) */
	const char *const *words; /* CHOICE: the values, NULL-terminated */
	/* TEXT: the literal default copied into the field, or NULL */
	const char *def_str;
	/* The default as --help states it when it is not the value above
	 * (derived, or a pattern); then --defaults-json says "default": null
	 * for a number. */
	const char *def_text;
	/* --help: "HELP (PRE DEFAULT POST)"; no parenthesis when there is
	 * neither PRE nor a default */
	const char *help;
	const char *pre;
	const char *post;
	/* --help prints it on the line of the option before it, as
	 * "--rxd N / --txd N"; the help is the one before's */
	int same_line;
	int repeat;            /* each time given adds one (--port) */
	sl_mgr_opt_set_fn set; /* may be NULL for NUM and CHOICE */
};

extern const struct sl_mgr_opt mgr_mgr_opt_table[];
extern const size_t mgr_mgr_opt_count;

/* What a command line asks for besides running. */
enum sl_mgr_ask {
	SL_ASK_RUN = 0,
	SL_ASK_HELP,          /* -h, --help */
	SL_ASK_DEFAULTS_JSON, /* --defaults-json */
};

/* Every option's default into o (the rest of o zeroed). */
void mgr_mgr_opts_defaults(struct sl_mgr_opts *o);

/*
 * sluiced's own options, argv[1..argc) (argv[0] is not read: it is the
 * "--" or the program). Returns 0 with *ask set, or EINVAL with err
 * holding the reason as sluiced prints it after "sluiced: ". Options
 * that are checked against each other are checked once all are read.
 * o->chain points into argv.
 */
int mgr_mgr_opts_parse(struct sl_mgr_opts *o, int argc, char **argv,
		       enum sl_mgr_ask *ask, char *err, size_t errlen);

/* The --help text, generated from the table. */
void mgr_mgr_opts_usage(FILE *f);

/* Every option (name, type, default, range or values, help) as one JSON
 * object: what `sluiced --defaults-json` prints. 0 or ENOMEM. */
int mgr_mgr_opts_json(FILE *f);

#endif
