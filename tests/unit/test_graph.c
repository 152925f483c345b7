/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the service-graph compiler (src/common/sl_graph.c): every
 * rejection with its exact message, and the compiled arrays of accepted
 * graphs (defaults, allowed edges, entry), plus a chain turned into an
 * open graph.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sl_graph.h"

#define MAX_SVC 16

struct fake {
	const char *svc[MAX_SVC];
	int n_svc;
	int service_calls;
};

static int
fake_service(void *arg, const char *name, char *err, size_t errlen)
{
	struct fake *f = arg;

	(void)err;
	(void)errlen;
	f->service_calls++;
	for (int i = 0; i < f->n_svc; i++)
		if (strcmp(f->svc[i], name) == 0)
			return i;
	f->svc[f->n_svc] = name;
	return f->n_svc++;
}

static int
fake_port(void *arg, const char *name)
{
	(void)arg;
	if (strcmp(name, "in") == 0)
		return 0;
	if (strcmp(name, "out") == 0)
		return 3;
	return -ENOENT;
}

#define NODE(s, ...)                                                           \
	{                                                                      \
		.service = (s), .hops = (const char *const[]){__VA_ARGS__},    \
		.n_hops = sizeof((const char *const[]){__VA_ARGS__}) /         \
			  sizeof(const char *)                                 \
	}

struct built {
	struct sl_graph *g;
	struct fake f;
	char err[512];
	int rc;
};

static void
build(struct built *b, const char *name, const char *entry,
      const struct sl_graph_spec_node *nodes, uint16_t n)
{
	struct sl_graph_spec spec = {.name = name,
				     .entry = entry,
				     .nodes = nodes,
				     .n_nodes = n};
	struct sl_chain_resolver r = {.service = fake_service,
				      .port = fake_port,
				      .arg = &b->f};
	uint32_t ne = sl_graph_spec_edges(&spec);

	memset(&b->f, 0, sizeof(b->f));
	b->err[0] = '\0';
	b->g = calloc(1, sl_graph_size(MAX_SVC, n, ne, 0));
	assert_non_null(b->g);
	sl_graph_layout(b->g, MAX_SVC, n, ne, 0);
	b->rc = sl_graph_compile(&spec, &r, MAX_SVC, b->g, b->err,
				 sizeof(b->err));
}

static void
expect_error(const char *name, const char *entry,
	     const struct sl_graph_spec_node *nodes, uint16_t n,
	     const char *msg)
{
	struct built b;

	build(&b, name, entry, nodes, n);
	assert_int_equal(b.rc, EINVAL);
	assert_string_equal(b.err, msg);
	/* A rejected graph creates no service. */
	assert_int_equal(b.f.service_calls, 0);
	free(b.g);
}

static void
test_anomaly_graph(void **state)
{
	(void)state;
	/* SDNFV anomaly detection: firewall -> sampler -> {ids, ddos} ->
	 * scrubber -> out. */
	const struct sl_graph_spec_node nodes[] = {
		NODE("firewall", "sampler", "drop"),
		NODE("sampler", "ids", "ddos"),
		NODE("ids", "scrubber"),
		NODE("ddos", "scrubber", "port:out"),
		NODE("scrubber", "port:out", "drop"),
	};
	struct built b;

	build(&b, "anomaly", NULL, nodes, 5);
	assert_int_equal(b.rc, 0);
	assert_string_equal(b.g->name, "anomaly");
	assert_int_equal(b.g->open, 0);
	assert_int_equal(b.g->n_nodes, 5);
	assert_int_equal(b.g->first, SL_HOP_SERVICE(0));
	/* ids: fw 0, sampler 1, ids 2, ddos 3, scrubber 4 */
	assert_int_equal(b.g->next[0], SL_HOP_SERVICE(1));
	assert_int_equal(b.g->next[1], SL_HOP_SERVICE(2));
	assert_int_equal(b.g->next[2], SL_HOP_SERVICE(4));
	assert_int_equal(b.g->next[3], SL_HOP_SERVICE(4));
	assert_int_equal(b.g->next[4], SL_HOP_PORT(3));
	assert_int_equal(b.g->next[5], SL_HOP_NONE);
	assert_int_equal(b.g->edge_n[1], 2);
	assert_true(sl_graph_allows(b.g, 1, SL_HOP_SERVICE(3)));
	assert_false(sl_graph_allows(b.g, 1, SL_HOP_SERVICE(4)));
	assert_true(sl_graph_allows(b.g, 0, SL_HOP_DROP));
	assert_false(sl_graph_allows(b.g, 2, SL_HOP_PORT(3)));
	assert_true(sl_graph_allows(b.g, 3, SL_HOP_PORT(3)));
	assert_true(sl_graph_has(b.g, 4));
	assert_false(sl_graph_has(b.g, 7));
	free(b.g);
}

static void
test_entry_other_than_first(void **state)
{
	(void)state;
	const struct sl_graph_spec_node nodes[] = {
		NODE("b", "port:out"),
		NODE("a", "b"),
	};
	struct built b;

	build(&b, "g", "a", nodes, 2);
	assert_int_equal(b.rc, 0);
	assert_int_equal(b.g->first, SL_HOP_SERVICE(1)); /* a */
	free(b.g);
}

static void
test_rejections(void **state)
{
	(void)state;
	const struct sl_graph_spec_node cyc[] = {NODE("a", "b"), NODE("b", "c"),
						 NODE("c", "a", "drop")};
	const struct sl_graph_spec_node unknown[] = {NODE("a", "x")};
	const struct sl_graph_spec_node noport[] = {NODE("a", "port:nope")};
	const struct sl_graph_spec_node unreach[] = {NODE("a", "drop"),
						     NODE("z", "drop")};
	const struct sl_graph_spec_node twice[] = {NODE("a", "drop"),
						   NODE("a", "drop")};
	const struct sl_graph_spec_node twice_hop[] = {
		NODE("a", "drop", "drop")};
	const struct sl_graph_spec_node empty[] = {
		{.service = "a", .hops = NULL, .n_hops = 0}};
	const struct sl_graph_spec_node badname[] = {NODE("a b", "drop")};
	const struct sl_graph_spec_node self[] = {NODE("a", "a")};

	expect_error("g", NULL, cyc, 3,
		     "graph 'g': cycle a -> b -> c -> a; a graph must be "
		     "acyclic: remove one of these edges");
	expect_error("g", NULL, self, 1,
		     "graph 'g': cycle a -> a; a graph must be acyclic: "
		     "remove one of these edges");
	expect_error(
		"g", NULL, unknown, 1,
		"graph 'g': node 'a': edge to 'x', which is not a node of "
		"this graph (add it under nodes, or use port:NAME or drop)");
	expect_error("g", NULL, noport, 1,
		     "graph 'g': node 'a': no port named 'nope'; use a name "
		     "from port.list");
	expect_error("g", NULL, unreach, 2,
		     "graph 'g': node 'z' is not reachable from entry 'a': "
		     "add an edge to it or remove it");
	expect_error("g", NULL, twice, 2,
		     "graph 'g': node 'a' is listed twice; list each service "
		     "once with all its next hops");
	expect_error("g", NULL, twice_hop, 1,
		     "graph 'g': node 'a' lists next hop 'drop' twice");
	expect_error("g", NULL, empty, 1,
		     "graph 'g': node 'a' has no next hop: list at least one "
		     "(the first is the default), e.g. [\"port:out\"] or "
		     "[drop]");
	expect_error("g", NULL, badname, 1,
		     "graph 'g': node 'a b' is not a valid service name (1-31 "
		     "characters of A-Z a-z 0-9 _ - .)");
	expect_error("bad name", NULL, unknown, 1,
		     "graph name 'bad name' is not valid: use 1-31 characters "
		     "of A-Z a-z 0-9 _ - .");
	expect_error("g", NULL, unknown, 0,
		     "graph 'g' has no nodes: list services with their next "
		     "hops, e.g. nodes: {firewall: [\"port:out\"]}");
	expect_error("g", "q", unreach, 2,
		     "graph 'g': entry 'q' is not a node of the graph: name "
		     "one of its nodes, or leave entry out to start at the "
		     "first node");
}

/* A long graph: no length limit, and no recursion to overflow. */
static void
test_long_graph(void **state)
{
	(void)state;
	enum { N = 5000 };
	static char names[N][12];
	static const char *hops[N];
	static struct sl_graph_spec_node nodes[N];
	struct sl_graph_spec spec = {.name = "long",
				     .nodes = nodes,
				     .n_nodes = N};
	char err[256];

	for (int i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "s%d", i);
	for (int i = 0; i < N; i++) {
		hops[i] = i + 1 < N ? names[i + 1] : "drop";
		nodes[i] = (struct sl_graph_spec_node){.service = names[i],
						       .hops = &hops[i],
						       .n_hops = 1};
	}
	struct sl_chain_resolver r = {.port = fake_port};

	assert_int_equal(sl_graph_check(&spec, &r, err, sizeof(err)), 0);
	hops[N - 1] = names[0]; /* close it: a cycle of 5000 */
	assert_int_equal(sl_graph_check(&spec, &r, err, sizeof(err)), EINVAL);
	/* The cycle from s0 on, cut at the end of err and terminated. */
	{
		char want[sizeof(err) + 16];
		size_t off = (size_t)snprintf(want, sizeof(want),
					      "graph 'long': cycle ");

		for (int i = 0; off < sizeof(err) - 1; i++)
			off += (size_t)snprintf(want + off, sizeof(want) - off,
						"s%d -> ", i);
		want[sizeof(err) - 1] = '\0';
		assert_int_equal(strlen(err), sizeof(err) - 1);
		assert_string_equal(err, want);
	}
}

static void
test_from_chain(void **state)
{
	(void)state;
	sl_hop_t next[MAX_SVC], hops[3] = {SL_HOP_SERVICE(2), SL_HOP_SERVICE(5),
					   SL_HOP_PORT(1)};
	struct sl_graph *g = calloc(1, sl_graph_size(MAX_SVC, 3, MAX_SVC, 3));

	for (int s = 0; s < MAX_SVC; s++)
		next[s] = SL_HOP_NONE;
	next[2] = SL_HOP_SERVICE(5);
	next[5] = SL_HOP_PORT(1);
	sl_graph_layout(g, MAX_SVC, 3, MAX_SVC, 3);
	sl_graph_from_chain(g, MAX_SVC, hops[0], next, hops, 3);
	assert_int_equal(g->open, 1);
	assert_int_equal(g->first, SL_HOP_SERVICE(2));
	assert_int_equal(g->n_nodes, 2);
	assert_int_equal(g->nodes[0], 2);
	assert_int_equal(g->nodes[1], 5);
	assert_int_equal(g->next[5], SL_HOP_PORT(1));
	assert_int_equal(g->hops[2], SL_HOP_PORT(1));
	/* Open: every edge is allowed. */
	assert_true(sl_graph_allows(g, 2, SL_HOP_SERVICE(9)));
	free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anomaly_graph),
		cmocka_unit_test(test_entry_other_than_first),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_long_graph),
		cmocka_unit_test(test_from_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
