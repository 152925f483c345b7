/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's counter descriptors (src/mgr/stats/counters.c):
 * a row, a table's rows and the schema built from descriptor tables over
 * fake row structs of this file. No EAL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "counters.h"

static const char *const why[] = {"full", "gone", "bad"};
static const char *const ring[] = {"count", "size"};
static const char *const modes[] = {"off", "on"};

struct fake_row {
	uint16_t id;
	const char *name;
	uint64_t pkts;
	uint32_t live;
	double rate;
	uint32_t mode;
	uint64_t drops[3];
	uint64_t ring[2];
	struct sl_ctr_ids members;
};

/* The rows `each` gives: ctx is a struct fake_ctx. */
struct fake_ctx {
	struct fake_row rows[4];
	int n;
	int calls; /* rows given */
};

static int
each_fake(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	struct fake_ctx *c = (struct fake_ctx *)(uintptr_t)ctx;
	int rc;

	for (int i = 0; i < c->n; i++) {
		c->calls++;
		rc = fn(arg, &c->rows[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

#define R(k, kind, type, unit, help)                                           \
	SL_CTR(#k, struct fake_row, k, kind, type, unit, help)
static const struct sl_ctr fake_ctrs[] = {
	R(id, SL_CTR_LABEL, SL_CT_U16, "", "row id"),
	R(name, SL_CTR_LABEL, SL_CT_STR, "", "row name"),
	R(pkts, SL_CTR_COUNTER, SL_CT_U64, "packets", "packets seen"),
	R(live, SL_CTR_GAUGE, SL_CT_U32, "flows", "flows now"),
	R(rate, SL_CTR_GAUGE, SL_CT_REAL, "cycles", "per packet"),
	SL_CTR_NAMED("mode", struct fake_row, mode, SL_CTR_LABEL, SL_CT_ENUM,
		     modes, "", "mode"),
	SL_CTR_NAMED("drops", struct fake_row, drops, SL_CTR_COUNTER,
		     SL_CT_REASONS, why, "packets", "drops by reason"),
	SL_CTR_NAMED("ring", struct fake_row, ring, SL_CTR_GAUGE, SL_CT_PARTS,
		     ring, "packets", "ring now"),
	R(members, SL_CTR_LABEL, SL_CT_IDS, "", "member ids"),
};
#undef R

static const struct sl_ctr_table fake_table = {"fake", fake_ctrs,
					       SL_CTR_N(fake_ctrs), each_fake};

/* A one-row table over the same context: its first row's id. */
struct head_row {
	uint64_t n;
};

static int
each_head(const void *ctx, sl_ctr_row_fn fn, void *arg)
{
	const struct fake_ctx *c = ctx;
	struct head_row r = {.n = (uint64_t)c->n};

	return fn(arg, &r);
}

static const struct sl_ctr head_ctrs[] = {
	SL_CTR("n", struct head_row, n, SL_CTR_GAUGE, SL_CT_U64, "", "rows"),
};
static const struct sl_ctr_table head_table = {"head", head_ctrs,
					       SL_CTR_N(head_ctrs), each_head};

static const struct sl_ctr root_ctrs[] = {
	SL_CTR("n", struct head_row, n, SL_CTR_GAUGE, SL_CT_U64, "", "rows"),
	SL_CTR_SUB("rows", SL_CTR_LIST, &fake_table, "every row"),
	SL_CTR_SUB("head", SL_CTR_OBJECT, &head_table, "the head"),
	SL_CTR_SUB("again", SL_CTR_LIST, &fake_table, "every row again"),
};
static const struct sl_ctr_table root_table = {"root", root_ctrs,
					       SL_CTR_N(root_ctrs), each_head};

static const uint16_t ids[] = {3, 7};

static void
fill(struct fake_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->rows[0] = (struct fake_row){.id = 1,
				       .name = "in",
				       .pkts = 600,
				       .live = 30,
				       .rate = 1.5,
				       .mode = 3,
				       .drops = {1, 2, 3},
				       .ring = {5, 4095},
				       .members = {ids, 2}};
	c->rows[1] = (struct fake_row){.id = 2, .name = NULL};
	c->n = 2;
}

static char *
dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	assert_non_null(s);
	json_decref(j);
	return s;
}

static void
test_row_json(void **state)
{
	struct fake_ctx c;
	char *s;

	(void)state;
	fill(&c);
	s = dump(mgr_ctr_row_json(&fake_table, &c.rows[0], &c));
	assert_string_equal(
		s, "{\"id\":1,\"name\":\"in\",\"pkts\":600,\"live\":30,"
		   "\"rate\":1.5,\"mode\":\"on\",\"drops\":{\"full\":1,"
		   "\"gone\":2,\"bad\":3},\"ring\":{\"count\":5,\"size\":4095},"
		   "\"members\":[3,7]}");
	free(s);
	/* a NULL string is "", no ids an empty array */
	s = dump(mgr_ctr_row_json(&fake_table, &c.rows[1], &c));
	assert_string_equal(
		s,
		"{\"id\":2,\"name\":\"\",\"pkts\":0,\"live\":0,\"rate\":0.0,"
		"\"mode\":\"off\",\"drops\":{\"full\":0,\"gone\":0,\"bad\":0},"
		"\"ring\":{\"count\":0,\"size\":0},\"members\":[]}");
	free(s);
}

static void
test_values(void **state)
{
	struct fake_ctx c;
	const struct sl_ctr *d, *e;

	(void)state;
	fill(&c);
	d = mgr_ctr_find(&fake_table, "drops");
	assert_non_null(d);
	assert_int_equal(mgr_ctr_u64(d, &c.rows[0]), 6);
	assert_int_equal(mgr_ctr_part(d, &c.rows[0], 2), 3);
	assert_int_equal(mgr_ctr_u64(mgr_ctr_find(&fake_table, "id"),
				     &c.rows[0]),
			 1);
	assert_int_equal(mgr_ctr_u64(mgr_ctr_find(&fake_table, "live"),
				     &c.rows[0]),
			 30);
	assert_int_equal(mgr_ctr_u64(mgr_ctr_find(&fake_table, "rate"),
				     &c.rows[0]),
			 0);
	e = mgr_ctr_find(&fake_table, "mode");
	assert_string_equal(mgr_ctr_str(e, &c.rows[0]), "on"); /* 3 % 2 */
	assert_null(mgr_ctr_str(d, &c.rows[0]));
	assert_null(mgr_ctr_find(&fake_table, "nope"));
}

static void
test_tables(void **state)
{
	struct fake_ctx c;
	char *s;

	(void)state;
	fill(&c);
	c.rows[1].pkts = 9;
	s = dump(mgr_ctr_table_json(&root_table, SL_CTR_OBJECT, &c));
	assert_string_equal(
		s,
		"{\"n\":2,\"rows\":[{\"id\":1,\"name\":\"in\",\"pkts\":600,"
		"\"live\":30,\"rate\":1.5,\"mode\":\"on\",\"drops\":{"
		"\"full\":1,\"gone\":2,\"bad\":3},\"ring\":{\"count\":5,"
		"\"size\":4095},\"members\":[3,7]},{\"id\":2,\"name\":\"\","
		"\"pkts\":9,\"live\":0,\"rate\":0.0,\"mode\":\"off\","
		"\"drops\":{\"full\":0,\"gone\":0,\"bad\":0},\"ring\":{"
		"\"count\":0,\"size\":0},\"members\":[]}],\"head\":{\"n\":2},"
		"\"again\":[{\"id\":1,\"name\":\"in\",\"pkts\":600,"
		"\"live\":30,\"rate\":1.5,\"mode\":\"on\",\"drops\":{"
		"\"full\":1,\"gone\":2,\"bad\":3},\"ring\":{\"count\":5,"
		"\"size\":4095},\"members\":[3,7]},{\"id\":2,\"name\":\"\","
		"\"pkts\":9,\"live\":0,\"rate\":0.0,\"mode\":\"off\","
		"\"drops\":{\"full\":0,\"gone\":0,\"bad\":0},\"ring\":{"
		"\"count\":0,\"size\":0},\"members\":[]}]}");
	free(s);
	assert_int_equal(c.calls, 4);
	/* no rows: an empty list; an object table's first row only */
	c.n = 0;
	s = dump(mgr_ctr_table_json(&fake_table, SL_CTR_LIST, &c));
	assert_string_equal(s, "[]");
	free(s);
	c.n = 2;
	c.calls = 0;
	s = dump(mgr_ctr_table_json(&fake_table, SL_CTR_OBJECT, &c));
	assert_int_equal(c.calls, 1);
	assert_true(strncmp(s, "{\"id\":1,", 8) == 0);
	free(s);
}

static void
test_schema(void **state)
{
	json_t *sc = mgr_ctr_schema(&root_table);
	json_t *tables = json_object_get(sc, "tables");
	const char *k;
	json_t *v;
	char *s;
	int i = 0;
	static const char *const order[] = {"root", "fake", "head"};

	(void)state;
	assert_string_equal(json_string_value(json_object_get(sc, "root")),
			    "root");
	/* each table once, in the order it is first reached */
	json_object_foreach(tables, k, v) assert_string_equal(k, order[i++]);
	assert_int_equal(i, 3);
	s = json_dumps(json_object_get(tables, "root"), JSON_COMPACT);
	assert_string_equal(
		s, "[{\"name\":\"n\",\"kind\":\"gauge\",\"type\":\"integer\","
		   "\"unit\":\"\",\"help\":\"rows\"},{\"name\":\"rows\","
		   "\"kind\":\"list\",\"unit\":\"\",\"help\":\"every row\","
		   "\"table\":\"fake\"},{\"name\":\"head\",\"kind\":\"object\","
		   "\"unit\":\"\",\"help\":\"the head\",\"table\":\"head\"},"
		   "{\"name\":\"again\",\"kind\":\"list\",\"unit\":\"\","
		   "\"help\":\"every row again\",\"table\":\"fake\"}]");
	free(s);
	s = json_dumps(json_object_get(tables, "fake"), JSON_COMPACT);
	assert_string_equal(
		s, "[{\"name\":\"id\",\"kind\":\"label\",\"type\":\"integer\","
		   "\"unit\":\"\",\"help\":\"row id\"},{\"name\":\"name\","
		   "\"kind\":\"label\",\"type\":\"string\",\"unit\":\"\","
		   "\"help\":\"row name\"},{\"name\":\"pkts\",\"kind\":"
		   "\"counter\",\"type\":\"integer\",\"unit\":\"packets\","
		   "\"help\":\"packets seen\"},{\"name\":\"live\",\"kind\":"
		   "\"gauge\",\"type\":\"integer\",\"unit\":\"flows\",\"help\":"
		   "\"flows now\"},{\"name\":\"rate\",\"kind\":\"gauge\","
		   "\"type\":\"number\",\"unit\":\"cycles\",\"help\":"
		   "\"per packet\"},{\"name\":\"mode\",\"kind\":\"label\","
		   "\"type\":\"string\",\"unit\":\"\",\"help\":\"mode\","
		   "\"values\":[\"off\",\"on\"]},{\"name\":\"drops\",\"kind\":"
		   "\"counter\",\"type\":\"object\",\"unit\":\"packets\","
		   "\"help\":\"drops by reason\",\"keys\":[\"full\",\"gone\","
		   "\"bad\"]},{\"name\":\"ring\",\"kind\":\"gauge\",\"type\":"
		   "\"object\",\"unit\":\"packets\",\"help\":\"ring now\","
		   "\"keys\":[\"count\",\"size\"]},{\"name\":\"members\","
		   "\"kind\":\"label\",\"type\":\"array\",\"unit\":\"\","
		   "\"help\":\"member ids\"}]");
	free(s);
	json_decref(sc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_row_json),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_schema),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
