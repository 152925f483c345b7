/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter descriptors (counters.h): a row as JSON, a table's rows as
 * JSON, and the schema, all from the tables alone.
 */
#include <string.h>

#include "counters.h"

static const void *
at(const struct sl_ctr *c, const void *row)
{
	return (const char *)row + c->off;
}

uint64_t
mgr_ctr_part(const struct sl_ctr *c, const void *row, uint16_t i)
{
	return ((const uint64_t *)at(c, row))[i];
}

uint64_t
mgr_ctr_u64(const struct sl_ctr *c, const void *row)
{
	uint64_t s = 0;

	switch (c->type) {
	case SL_CT_U64:
		return *(const uint64_t *)at(c, row);
	case SL_CT_U32:
	case SL_CT_ENUM:
		return *(const uint32_t *)at(c, row);
	case SL_CT_U16:
		return *(const uint16_t *)at(c, row);
	case SL_CT_REASONS:
	case SL_CT_PARTS:
		for (uint16_t i = 0; i < c->n_parts; i++)
			s += mgr_ctr_part(c, row, i);
		return s;
	default:
		return 0;
	}
}

const char *
mgr_ctr_str(const struct sl_ctr *c, const void *row)
{
	const char *s;

	switch (c->type) {
	case SL_CT_STR:
		s = *(const char *const *)at(c, row);
		return s != NULL ? s : "";
	case SL_CT_ENUM:
		return c->parts[mgr_ctr_u64(c, row) % c->n_parts];
	default:
		return NULL;
	}
}

const struct sl_ctr *
mgr_ctr_find(const struct sl_ctr_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->c[i].name, name) == 0)
			return &t->c[i];
	return NULL;
}

static json_t *
value_json(const struct sl_ctr *c, const void *row, const void *ctx)
{
	const struct sl_ctr_ids *ids;
	json_t *v;

	switch (c->type) {
	case SL_CT_U64:
	case SL_CT_U32:
	case SL_CT_U16:
		return json_integer((json_int_t)mgr_ctr_u64(c, row));
	case SL_CT_STR:
	case SL_CT_ENUM:
		return json_string(mgr_ctr_str(c, row));
	case SL_CT_REAL:
		return json_real(*(const double *)at(c, row));
	case SL_CT_REASONS:
	case SL_CT_PARTS:
		v = json_object();
		for (uint16_t i = 0; i < c->n_parts; i++)
			json_object_set_new(v, c->parts[i],
					    json_integer(
						    (json_int_t)
							    mgr_ctr_part(c, row,
									 i)));
		return v;
	case SL_CT_IDS:
		ids = at(c, row);
		v = json_array();
		for (uint32_t i = 0; i < ids->n; i++)
			json_array_append_new(v, json_integer(ids->v[i]));
		return v;
	case SL_CT_TABLE:
		return mgr_ctr_table_json(c->table, c->kind, ctx);
	default:
		return json_null();
	}
}

json_t *
mgr_ctr_row_json(const struct sl_ctr_table *t, const void *row, const void *ctx)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		json_object_set_new(o, t->c[i].name,
				    value_json(&t->c[i], row, ctx));
	return o;
}

struct rows {
	const struct sl_ctr_table *t;
	const void *ctx;
	json_t *out; /* the array, or the one row's object */
	int list;
};

static int
add_row(void *arg, const void *row)
{
	struct rows *r = arg;
	json_t *o = mgr_ctr_row_json(r->t, row, r->ctx);

	if (!r->list) {
		r->out = o;
		return 1;
	}
	json_array_append_new(r->out, o);
	return 0;
}

json_t *
mgr_ctr_table_json(const struct sl_ctr_table *t, int kind, const void *ctx)
{
	struct rows r = {.t = t, .ctx = ctx, .list = kind == SL_CTR_LIST};

	r.out = r.list ? json_array() : NULL;
	t->each(ctx, add_row, &r);
	return r.out != NULL ? r.out : json_object();
}

static const char *const kind_names[] = {"label", "counter", "gauge", "list",
					 "object"};
static const char *const type_names[] = {"integer", "integer", "integer",
					 "string",  "number",  "string",
					 "object",  "object",  "array",
					 "table"};

static void
schema_add(json_t *tables, const struct sl_ctr_table *t)
{
	json_t *fields;

	if (json_object_get(tables, t->name) != NULL)
		return;
	fields = json_array();
	json_object_set_new(tables, t->name, fields);
	for (size_t i = 0; i < t->n; i++) {
		const struct sl_ctr *c = &t->c[i];
		json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name",
				      c->name, "kind", kind_names[c->kind],
				      "type", type_names[c->type], "unit",
				      c->unit, "help", c->help);

		if (c->parts != NULL) {
			json_t *k = json_array();

			for (uint16_t j = 0; j < c->n_parts; j++)
				json_array_append_new(k,
						      json_string(c->parts[j]));
			json_object_set_new(f,
					    c->type == SL_CT_ENUM ? "values"
								  : "keys",
					    k);
		}
		if (c->type == SL_CT_TABLE) {
			json_object_set_new(f, "table",
					    json_string(c->table->name));
			json_object_del(f, "type");
		}
		json_array_append_new(fields, f);
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->c[i].type == SL_CT_TABLE)
			schema_add(tables, t->c[i].table);
}

json_t *
mgr_ctr_schema(const struct sl_ctr_table *root)
{
	json_t *tables = json_object();

	schema_add(tables, root);
	return json_pack("{s:s, s:o}", "root", root->name, "tables", tables);
}
