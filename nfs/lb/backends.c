/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb's backend set: slots, the Maglev table built from them, and
 * the changes to it at run time (messages backend.add, backend.remove,
 * backend.weight; SIGHUP re-reading the file). A change rebuilds the
 * table at once, between two bursts; tracked connections keep their
 * backend unless it is removed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/nf.h"

#include "lb.h"

int
lb_backends_alloc(struct lb_state *st)
{
	st->backends = calloc(st->max_backends, sizeof(*st->backends));
	st->scratch = calloc(st->max_backends, sizeof(*st->scratch));
	st->min = calloc(st->max_backends, sizeof(*st->min));
	st->table = calloc(st->table_size, sizeof(*st->table));
	if (st->backends == NULL || st->scratch == NULL || st->min == NULL ||
	    st->table == NULL) {
		fprintf(stderr, LB_PROG ": out of memory\n");
		lb_backends_free(st);
		return ENOMEM;
	}
	return 0;
}

void
lb_backends_free(struct lb_state *st)
{
	free(st->backends);
	free(st->scratch);
	free(st->min);
	free(st->table);
	st->backends = NULL;
	st->scratch = NULL;
	st->min = NULL;
	st->table = NULL;
}

void
lb_rebuild(struct lb_state *st)
{
	uint32_t n = 0, i;

	for (i = 0; i < st->max_backends; i++) {
		struct lb_backend *b = &st->backends[i];

		b->entries = 0;
		if (!b->live)
			continue;
		st->min[n].name = b->spec.name;
		st->min[n].weight = b->spec.weight;
		st->min[n].id = (uint16_t)i;
		n++;
	}
	st->n_live = n;
	lb_maglev_populate(st->min, n, st->table, st->table_size, st->scratch);
	for (i = 0; i < st->table_size; i++)
		if (st->table[i] != LB_MAGLEV_NONE)
			st->backends[st->table[i]].entries++;
}

static struct lb_backend *
lb_find(struct lb_state *st, const char *name)
{
	for (uint32_t i = 0; i < st->max_backends; i++)
		if (st->backends[i].live &&
		    strcmp(st->backends[i].spec.name, name) == 0)
			return &st->backends[i];
	return NULL;
}

/* The port of a backend's via, or -1 for none: 0, or EINVAL. */
static int
lb_resolve(struct lb_state *st, const struct lb_backend_spec *b, int *port,
	   char *err, size_t errlen)
{
	*port = -1;
	if (b->via[0] == '\0')
		return 0;
	*port = sl_port_id(st->nf, b->via);
	if (*port < 0) {
		snprintf(err, errlen,
			 "backend '%s': via '%s': no such port (sluice status "
			 "lists them)",
			 b->name, b->via);
		return EINVAL;
	}
	return 0;
}

/* Puts spec in a free slot (a new gen). */
static struct lb_backend *
lb_take_slot(struct lb_state *st, const struct lb_backend_spec *spec, int port)
{
	for (uint32_t i = 0; i < st->max_backends; i++) {
		struct lb_backend *b = &st->backends[i];
		uint16_t gen = b->gen;

		if (b->live)
			continue;
		memset(b, 0, sizeof(*b));
		b->spec = *spec;
		b->gen = (uint16_t)(gen + 1);
		b->port = port;
		b->live = 1;
		return b;
	}
	return NULL;
}

static void
lb_empty_slot(struct lb_backend *b)
{
	b->live = 0;
	b->gen++;
}

int
lb_backends_set(struct lb_state *st, const struct lb_config *cfg, char *err,
		size_t errlen)
{
	int ports[cfg->n_backends ? cfg->n_backends : 1];
	char why[LB_ERR_LEN - 64];
	uint32_t i;

	for (i = 0; i < cfg->n_backends; i++)
		if (lb_resolve(st, &cfg->backends[i], &ports[i], why,
			       sizeof(why))) {
			snprintf(err, errlen, "%s:%u: %s", st->config_path,
				 cfg->backends[i].line, why);
			return EINVAL;
		}
	/* The same backend (name, address, port) keeps its slot, and its
	 * connections; any other is a new one. */
	for (i = 0; i < st->max_backends; i++) {
		struct lb_backend *b = &st->backends[i];
		int keep = 0;

		for (uint32_t j = 0; b->live && j < cfg->n_backends; j++) {
			const struct lb_backend_spec *s = &cfg->backends[j];

			if (strcmp(s->name, b->spec.name) == 0 &&
			    lb_ip_eq(&s->addr, &b->spec.addr) &&
			    ports[j] == b->port) {
				b->spec = *s;
				keep = 1;
			}
		}
		if (b->live && !keep)
			lb_empty_slot(b);
	}
	for (i = 0; i < cfg->n_backends; i++)
		if (lb_find(st, cfg->backends[i].name) == NULL)
			lb_take_slot(st, &cfg->backends[i], ports[i]);
	lb_rebuild(st);
	return 0;
}

int
lb_backend_add(struct lb_state *st, const char *text, char *err, size_t errlen)
{
	struct lb_backend_spec s;
	char a[LB_ADDR_STRLEN];
	int port;

	if (lb_backend_parse(text, &s, err, errlen) != 0)
		return EINVAL;
	if (s.addr.family != st->cfg.vip.family) {
		lb_addr_format(&s.addr, a, sizeof(a));
		snprintf(err, errlen, "%s is IPv%u but the vip is IPv%u", a,
			 s.addr.family, st->cfg.vip.family);
		return EINVAL;
	}
	if (lb_find(st, s.name) != NULL) {
		snprintf(err, errlen, "backend '%s' exists", s.name);
		return EEXIST;
	}
	for (uint32_t i = 0; i < st->max_backends; i++)
		if (st->backends[i].live &&
		    lb_ip_eq(&st->backends[i].spec.addr, &s.addr)) {
			lb_addr_format(&s.addr, a, sizeof(a));
			snprintf(err, errlen, "address %s is backend '%s'", a,
				 st->backends[i].spec.name);
			return EEXIST;
		}
	if (lb_resolve(st, &s, &port, err, errlen) != 0)
		return EINVAL;
	if (lb_take_slot(st, &s, port) == NULL) {
		snprintf(err, errlen,
			 "already %" PRIu32 " backends (--max-backends)",
			 st->max_backends);
		return ENOSPC;
	}
	lb_rebuild(st);
	return 0;
}

int
lb_backend_remove(struct lb_state *st, const char *name, char *err,
		  size_t errlen)
{
	struct lb_backend *b = lb_find(st, name);

	if (b == NULL) {
		snprintf(err, errlen, "no backend '%s'", name);
		return ENOENT;
	}
	lb_empty_slot(b);
	lb_rebuild(st);
	return 0;
}

/* "NAME W" */
int
lb_backend_weight(struct lb_state *st, const char *text, char *err,
		  size_t errlen)
{
	char name[LB_NAME_MAX], w[16], extra;
	struct lb_backend *b;
	double v;

	if (sscanf(text, "%31s %15s %c", name, w, &extra) != 2) {
		snprintf(err, errlen, "give NAME WEIGHT");
		return EINVAL;
	}
	b = lb_find(st, name);
	if (b == NULL) {
		snprintf(err, errlen, "no backend '%s'", name);
		return ENOENT;
	}
	if (sl_parse_number(w, 0, LB_WEIGHT_MAX, 0, &v) != 0) {
		snprintf(err, errlen,
			 "weight '%s' is not a whole number from 0 to %d", w,
			 LB_WEIGHT_MAX);
		return EINVAL;
	}
	b->spec.weight = (uint32_t)v;
	lb_rebuild(st);
	return 0;
}

void
lb_print_backends(const struct lb_state *st)
{
	char a[LB_ADDR_STRLEN];

	for (uint32_t i = 0; i < st->max_backends; i++) {
		const struct lb_backend *b = &st->backends[i];

		if (!b->live)
			continue;
		lb_addr_format(&b->spec.addr, a, sizeof(a));
		fprintf(stderr,
			"lb-backend: name=%s addr=%s weight=%" PRIu32
			" entries=%" PRIu32 " flows=%" PRIu64
			" packets=%" PRIu64 " bytes=%" PRIu64 "\n",
			b->spec.name, a, b->spec.weight, b->entries, b->flows,
			b->pkts, b->bytes);
	}
}

/* "sluice-lb: VERB vip 10.63.0.100 proto tcp ports 80: 3 backends,
 * Maglev table of 65537 entries" and the backends. */
static void
lb_print_config(const struct lb_state *st, const char *verb)
{
	char a[LB_ADDR_STRLEN], ports[LB_MAX_PORTS * 6 + 8] = "";
	const char *proto = st->cfg.proto == LB_PROTO_TCP   ? "tcp"
			    : st->cfg.proto == LB_PROTO_UDP ? "udp"
							    : "any";

	lb_addr_format(&st->cfg.vip, a, sizeof(a));
	for (uint32_t i = 0; i < st->cfg.n_ports; i++) {
		size_t l = strlen(ports);

		snprintf(ports + l, sizeof(ports) - l, "%s%u", i ? "," : "",
			 st->cfg.ports[i]);
	}
	fprintf(stderr,
		LB_PROG ": %s %s: vip %s proto %s ports %s, %" PRIu32
			" backends, Maglev table of %" PRIu32 " entries\n",
		verb, st->config_path, a, proto,
		st->cfg.n_ports ? ports : "all", st->n_live, st->table_size);
	lb_print_backends(st);
	fflush(stderr);
}

/* Reads the file and takes it; st is unchanged on an error. */
static int
lb_load_file(struct lb_state *st, char *err, size_t errlen)
{
	struct lb_config cfg;
	int rc = lb_config_load(st->config_path, st->max_backends, &cfg, err,
				errlen);

	if (rc != 0)
		return rc;
	rc = lb_backends_set(st, &cfg, err, errlen);
	if (rc == 0) {
		free(st->cfg.backends);
		st->cfg = cfg;
		st->cfg.backends = NULL;
		st->cfg.n_backends = 0;
	}
	free(cfg.backends);
	return rc;
}

int
lb_load(struct lb_state *st)
{
	char err[LB_ERR_LEN];
	int rc = lb_load_file(st, err, sizeof(err));

	if (rc != 0) {
		fprintf(stderr, LB_PROG ": %s\n", err);
		return rc == ENOMEM ? ENOMEM : EINVAL;
	}
	lb_print_config(st, "loaded");
	return 0;
}

void
lb_reload(struct sl_nf *nf)
{
	struct lb_state *st = sl_nf_priv(nf);
	char err[LB_ERR_LEN];

	if (lb_load_file(st, err, sizeof(err)) != 0) {
		fprintf(stderr,
			LB_PROG ": reload failed, keeping the current "
				"configuration (%" PRIu32 " backends): %s\n",
			st->n_live, err);
		fflush(stderr);
		return;
	}
	lb_print_config(st, "reloaded");
}

/*
 * Message(lb, key, value): backend.add "NAME ADDR [weight W] [mac MAC]
 * [via PORT]", backend.remove "NAME", backend.weight "NAME W", stats.
 * The answer is a line on stderr: "lb-message: key=K value=V result=...".
 */
void
lb_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct lb_state *st = sl_nf_priv(nf);
	char err[LB_ERR_LEN] = "";
	int rc;

	if (st == NULL)
		return;
	if (strcmp(key, "backend.add") == 0) {
		rc = lb_backend_add(st, value, err, sizeof(err));
	} else if (strcmp(key, "backend.remove") == 0) {
		rc = lb_backend_remove(st, value, err, sizeof(err));
	} else if (strcmp(key, "backend.weight") == 0) {
		rc = lb_backend_weight(st, value, err, sizeof(err));
	} else if (strcmp(key, "stats") == 0) {
		lb_print(st, "message", sl_now_ns());
		rc = 0;
	} else {
		snprintf(err, sizeof(err),
			 "unknown key (keys: backend.add, backend.remove, "
			 "backend.weight, stats)");
		rc = EINVAL;
	}
	if (rc == 0)
		fprintf(stderr,
			"lb-message: key=%s value=%s result=applied "
			"backends=%" PRIu32 "\n",
			key, value, st->n_live);
	else
		fprintf(stderr,
			"lb-message: key=%s value=%s result=error: %s\n", key,
			value, err);
	if (rc == 0 && strncmp(key, "backend.", 8) == 0)
		lb_print_backends(st);
	fflush(stderr);
}
