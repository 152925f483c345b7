/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter descriptors: each counter is described once, by one line of a
 * table (name, help, unit, kind, type) that also says where it sits in the
 * row struct holding it (offsetof). The `stats` reply, its schema and the
 * DPDK telemetry commands are all walks over these tables; none of them
 * names a counter. No DPDK here (tests/unit/test_mgr_stats.c builds it
 * over a struct of its own).
 *
 * A table's rows come from its `each`, which calls fn once per row with a
 * pointer to a filled row struct, valid during the call only; a table of
 * kind SL_CTR_OBJECT has one row. A field of type SL_CT_TABLE holds no
 * value in its row: its value is another table's rows (a list) or row (an
 * object), read from the same context.
 */
#ifndef SL_MGR_COUNTERS_H
#define SL_MGR_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum sl_ctr_kind {
	SL_CTR_LABEL,   /* names the row (id, name, state): not a number */
	SL_CTR_COUNTER, /* only grows */
	SL_CTR_GAUGE,   /* goes up and down */
	SL_CTR_LIST,    /* SL_CT_TABLE: an array of the table's rows */
	SL_CTR_OBJECT,  /* SL_CT_TABLE: the table's one row */
};

enum sl_ctr_type {
	SL_CT_U64,     /* uint64_t */
	SL_CT_U32,     /* uint32_t */
	SL_CT_U16,     /* uint16_t */
	SL_CT_STR,     /* const char *, NULL read as "" */
	SL_CT_REAL,    /* double */
	SL_CT_ENUM,    /* uint32_t, shown as parts[v % n_parts] */
	SL_CT_REASONS, /* uint64_t[n_parts], one per reason: an object */
	SL_CT_PARTS,   /* uint64_t[n_parts] that belong together: an object */
	SL_CT_IDS,     /* struct sl_ctr_ids: an array of integers */
	SL_CT_TABLE,   /* no value in the row: `table`'s rows (see above) */
};

struct sl_ctr_ids {
	const uint16_t *v;
	uint32_t n;
};

struct sl_ctr_table;

struct sl_ctr {
	const char *name; /* its key in `stats` */
	const char *help;
	const char *unit; /* "packets", "bytes", "cycles", ...; "" none */
	uint8_t kind;     /* enum sl_ctr_kind */
	uint8_t type;     /* enum sl_ctr_type */
	uint16_t n_parts;
	size_t off;                       /* in the row struct */
	const char *const *parts;         /* ENUM, REASONS, PARTS: the names */
	const struct sl_ctr_table *table; /* TABLE */
};

/* Calls of a table's rows: 0 to go on, else `each` stops and returns it. */
typedef int (*sl_ctr_row_fn)(void *arg, const void *row);

struct sl_ctr_table {
	const char *name; /* in the schema */
	const struct sl_ctr *c;
	size_t n;
	/* 0 (every row given), fn's non-zero, or ENOMEM (no row given) */
	int (*each)(const void *ctx, sl_ctr_row_fn fn, void *arg);
};

/* A descriptor line: key k, field f of row struct st. */
#define SL_CTR(k, st, f, kind_, type_, unit_, help_)                           \
	{                                                                      \
		.name = (k), .help = (help_), .unit = (unit_),                 \
		.kind = (kind_), .type = (type_), .off = offsetof(st, f),      \
	}
/* One with names (ENUM, REASONS, PARTS): names is an array. */
#define SL_CTR_NAMED(k, st, f, kind_, type_, names, unit_, help_)              \
	{                                                                      \
		.name = (k), .help = (help_), .unit = (unit_),                 \
		.kind = (kind_), .type = (type_),                              \
		.n_parts = sizeof(names) / sizeof((names)[0]),                 \
		.off = offsetof(st, f), .parts = (names),                      \
	}
/* Another table's rows, as a list (SL_CTR_LIST) or an object. */
#define SL_CTR_SUB(k, kind_, tab, help_)                                       \
	{                                                                      \
		.name = (k), .help = (help_), .unit = "", .kind = (kind_),     \
		.type = SL_CT_TABLE, .table = (tab),                           \
	}
#define SL_CTR_N(a) (sizeof(a) / sizeof((a)[0]))

/* Integer value of c in row (U64, U32, U16, ENUM; the sum for REASONS and
 * PARTS); 0 for the other types. */
uint64_t mgr_ctr_u64(const struct sl_ctr *c, const void *row);
/* Part i of a REASONS or PARTS field. */
uint64_t mgr_ctr_part(const struct sl_ctr *c, const void *row, uint16_t i);
/* The text of a STR or ENUM field, else NULL. */
const char *mgr_ctr_str(const struct sl_ctr *c, const void *row);
/* The field of t named name, or NULL. */
const struct sl_ctr *mgr_ctr_find(const struct sl_ctr_table *t,
				  const char *name);

/* Row `row` of t as a JSON object, keys in table order; TABLE fields read
 * ctx. NULL only without memory. */
json_t *mgr_ctr_row_json(const struct sl_ctr_table *t, const void *row,
			 const void *ctx);
/* t's rows from ctx: an array (kind SL_CTR_LIST) or its one row's object
 * (SL_CTR_OBJECT; an empty object if it gave none). */
json_t *mgr_ctr_table_json(const struct sl_ctr_table *t, int kind,
			   const void *ctx);
/* The schema of root and every table under it:
 * {"root": name, "tables": {name: [{name, kind, type, unit, help,
 * [keys], [table]}, ...], ...}}. */
json_t *mgr_ctr_schema(const struct sl_ctr_table *root);

#endif /* SL_MGR_COUNTERS_H */
