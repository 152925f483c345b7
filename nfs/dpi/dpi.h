/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-dpi: application detection with nDPI, and steering by
 * application. The pieces shared by dpi.c (the NF) and rules.c (the
 * steering file).
 */
#ifndef SLUICE_NF_DPI_H
#define SLUICE_NF_DPI_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/nf.h"

struct ndpi_detection_module_struct;

#define DPI_PROG "sluice-dpi"
#define DPI_MAX_RULES 256
#define DPI_NAME_LEN 64
#define DPI_ERR_LEN 512

/* One line of the steering file: flows of application app go to "to". */
struct dpi_rule {
	char app[DPI_NAME_LEN]; /* as written in the file */
	char to_name[DPI_NAME_LEN];
	uint16_t app_id; /* nDPI protocol id */
	uint32_t line;   /* in the file */
	sl_verdict_t to; /* SL_TO(service) or SL_DROP */
	uint64_t flows;  /* flows steered by it (counters) */
	uint64_t pkts;   /* packets steered by it */
};

struct dpi_rules {
	struct dpi_rule *r;
	uint32_t n;
};

/*
 * Resolves a rule's target: a service name or "drop". 0 with *to set,
 * or a positive errno after writing why into err.
 */
typedef int (*dpi_resolve_fn)(void *ctx, const char *name, sl_verdict_t *to,
			      char *err, size_t err_size);

/*
 * Reads the steering file at path: one rule a line, "APP -> TARGET", '#'
 * comments, blank lines ignored. APP is an nDPI protocol name (any case),
 * TARGET a service or "drop". 0 with *out set (free with
 * dpi_rules_free()), or a positive errno with "PATH:LINE: problem" (or
 * "PATH: problem") in err; nothing is kept then.
 */
int dpi_rules_load(const char *path, struct ndpi_detection_module_struct *nd,
		   dpi_resolve_fn resolve, void *ctx, struct dpi_rules **out,
		   char *err, size_t err_size);
void dpi_rules_free(struct dpi_rules *rs);

/* The first rule for a flow whose nDPI protocols are master and app, or
 * -1 when none matches. */
int dpi_rules_match(const struct dpi_rules *rs, uint16_t master, uint16_t app);

#endif /* SLUICE_NF_DPI_H */
