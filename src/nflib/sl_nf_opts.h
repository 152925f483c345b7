/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An NF's option table (struct sl_nf_opt in sluice/nf.h): finding an
 * argument's entry, checking the table, --help lines, and storing the
 * options in the private context. It uses only the public NF API, so that
 * the unit tests' stand-in for libsluice (tests/unit/nf_stub.c) runs it
 * too; it is not installed.
 */
#ifndef SL_NF_OPTS_H
#define SL_NF_OPTS_H

#include "sluice/nf.h"

/*
 * The entry arg names: --name, --name=VALUE, a unique prefix of a long
 * name (--na), -x or -xVALUE; NULL if none (*ambiguous set to 1 if the
 * prefix fits several). *value is VALUE when the argument holds it, else
 * NULL.
 */
const struct sl_nf_opt *nfo_find(const struct sl_nf_opt *opts, const char *arg,
				 const char **value, int *ambiguous);

/* 1 if the option takes a value (the next argument, unless inline). */
int nfo_takes_value(const struct sl_nf_opt *o);

/* 0 if ops->opts is a table libsluice can use with ops->priv_size, else
 * EINVAL after saying what is wrong with it ("PROG: bad sl_nf_ops: ..."). */
int nfo_check(const struct sl_nf_ops *ops, const char *prog);

/* The --help lines of the table, to stdout. */
void nfo_usage(const struct sl_nf_ops *ops);

/*
 * Stores the defaults, then the options of argv[1..argc) (the NF's
 * arguments), in sl_nf_priv(nf), which holds ops->priv_size bytes. 0, or
 * a positive errno after saying what was wrong; ECANCELED after printing
 * the help for a -h or --help (which libsluice takes before: only a
 * caller without libsluice's parsing sees it).
 */
int nfo_parse(struct sl_nf *nf, const struct sl_nf_ops *ops, int argc,
	      char **argv);

#endif /* SL_NF_OPTS_H */
