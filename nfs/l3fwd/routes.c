/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-l3fwd's routes file, read and compiled into rte_lpm / rte_lpm6
 * (routes.h). The whole file is read first (a route may name a neighbour
 * given further down), then checked and built; any error leaves nothing
 * behind and names the line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include "sluice/nf.h"

#include "routes.h"

#define L3_LINE_MAX 1024
#define L3_TOKENS 12

/* One neigh or route line. */
struct l3_entry {
	int line;
	uint8_t family; /* 4 or 6 */
	uint8_t depth;
	uint8_t is_neigh;
	uint8_t has_via;
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, network order */
	uint8_t via[16];  /* has_via: the neighbour to resolve */
	int port;         /* ethdev id, or -1 until via is resolved */
	struct rte_ether_addr mac;
};

/* What a file holds, before it is built. */
struct l3_parse {
	struct sl_nf *nf;
	const char *path;
	int line;
	struct l3_entry *e;
	uint32_t n, cap;
	struct l3_table *t;
	int port_line[L3_MAX_PORTS];  /* the port line of each port, or 0 */
	int port_first[L3_MAX_PORTS]; /* the first line naming it */
	char *err;
	size_t err_size;
};

static int perr(struct l3_parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
perr(struct l3_parse *p, const char *fmt, ...)
{
	char msg[L3_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->line > 0)
		snprintf(p->err, p->err_size, "%s:%d: %s", p->path, p->line,
			 msg);
	else
		snprintf(p->err, p->err_size, "%s: %s", p->path, msg);
	return -EINVAL;
}

/* An address of either family: 4 or 6, or 0. */
static int
parse_addr(const char *s, uint8_t *out)
{
	memset(out, 0, 16);
	if (strchr(s, ':') != NULL)
		return inet_pton(AF_INET6, s, out) == 1 ? 6 : 0;
	return inet_pton(AF_INET, s, out) == 1 ? 4 : 0;
}

/* A.B.C.D/N or X:Y::Z/N (or an address: its host route). */
static int
parse_prefix(struct l3_parse *p, const char *s, struct l3_entry *e)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	unsigned long depth;
	char *end;
	int fam, max;

	if (strlen(s) >= sizeof(buf))
		return perr(p, "'%s' is not a prefix (A.B.C.D/N or X:Y::Z/N)",
			    s);
	snprintf(buf, sizeof(buf), "%.*s",
		 (int)(slash ? (size_t)(slash - s) : strlen(s)), s);
	fam = parse_addr(buf, e->addr);
	if (fam == 0)
		return perr(p, "'%s' is not a prefix (A.B.C.D/N or X:Y::Z/N)",
			    s);
	max = fam == 4 ? 32 : 128;
	depth = (unsigned long)max;
	if (slash != NULL) {
		errno = 0;
		depth = strtoul(slash + 1, &end, 10);
		if (slash[1] < '0' || slash[1] > '9' || *end != '\0' ||
		    depth > (unsigned long)max)
			return perr(p, "'%s': the prefix length is not 0 to %d",
				    s, max);
	}
	e->family = (uint8_t)fam;
	e->depth = (uint8_t)depth;
	for (int bit = (int)depth; bit < max; bit++)
		if (e->addr[bit / 8] & (0x80 >> (bit % 8)))
			return perr(p,
				    "'%s' has host bits set (the prefix is "
				    "the network's first address)",
				    s);
	return 0;
}

static int
parse_mac(struct l3_parse *p, const char *s, struct rte_ether_addr *mac)
{
	if (rte_ether_unformat_addr(s, mac) != 0 || strlen(s) != 17)
		return perr(p, "'%s' is not a MAC address (xx:xx:xx:xx:xx:xx)",
			    s);
	return 0;
}

/*
 * The ethdev id of a port name, which the table then knows; its MAC from
 * the ethdev (a port line's mac overrides it later).
 */
static int
parse_port(struct l3_parse *p, const char *name)
{
	struct l3_port *pt;
	int id = sl_port_id(p->nf, name);

	if (id < 0 || id >= L3_MAX_PORTS)
		return perr(p,
			    "port '%s': no such port (sluice status lists "
			    "them)",
			    name);
	pt = &p->t->ports[id];
	if (!pt->used) {
		pt->used = 1;
		p->port_first[id] = p->line;
		snprintf(pt->name, sizeof(pt->name), "%s", name);
		if (rte_eth_macaddr_get((uint16_t)id, &pt->mac) != 0)
			memset(&pt->mac, 0, sizeof(pt->mac));
		p->t->n_ports++;
	}
	return id;
}

static struct l3_entry *
new_entry(struct l3_parse *p)
{
	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 64;
		struct l3_entry *e = realloc(p->e, cap * sizeof(*e));

		if (e == NULL)
			return NULL;
		p->e = e;
		p->cap = cap;
	}
	memset(&p->e[p->n], 0, sizeof(p->e[0]));
	p->e[p->n].line = p->line;
	p->e[p->n].port = -1;
	return &p->e[p->n++];
}

/* port NAME [address ADDR]... [mac MAC] */
static int
line_port(struct l3_parse *p, char **tok, int n)
{
	struct l3_port *pt;
	uint8_t a[16];
	int id, i, fam;

	if (n < 2)
		return perr(p, "port: give its name (port NAME [address ADDR] "
			       "[mac MAC])");
	id = parse_port(p, tok[1]);
	if (id < 0)
		return id;
	if (p->port_line[id] != 0)
		return perr(p, "port '%s' is already given on line %d", tok[1],
			    p->port_line[id]);
	p->port_line[id] = p->line;
	pt = &p->t->ports[id];
	for (i = 2; i < n; i += 2) {
		if (i + 1 >= n)
			return perr(p, "port '%s': '%s' wants a value", tok[1],
				    tok[i]);
		if (strcmp(tok[i], "mac") == 0) {
			if (parse_mac(p, tok[i + 1], &pt->mac) != 0)
				return -EINVAL;
			continue;
		}
		if (strcmp(tok[i], "address") != 0)
			return perr(p,
				    "port '%s': unknown word '%s' (use "
				    "address or mac)",
				    tok[1], tok[i]);
		fam = parse_addr(tok[i + 1], a);
		if (fam == 0)
			return perr(p, "'%s' is not an IPv4 or IPv6 address",
				    tok[i + 1]);
		if ((fam == 4 && pt->has_v4) || (fam == 6 && pt->has_v6))
			return perr(p, "port '%s': a second IPv%d address",
				    tok[1], fam);
		if (fam == 4) {
			pt->has_v4 = 1;
			memcpy(&pt->v4, a, 4);
		} else {
			pt->has_v6 = 1;
			memcpy(pt->v6, a, 16);
		}
	}
	return 0;
}

/* neigh ADDR MAC port NAME */
static int
line_neigh(struct l3_parse *p, char **tok, int n)
{
	struct l3_entry *e;
	int fam;

	if (n != 5 || strcmp(tok[3], "port") != 0)
		return perr(p, "neigh: use neigh ADDR MAC port NAME");
	e = new_entry(p);
	if (e == NULL)
		return perr(p, "out of memory");
	fam = parse_addr(tok[1], e->addr);
	if (fam == 0)
		return perr(p, "'%s' is not an IPv4 or IPv6 address", tok[1]);
	e->family = (uint8_t)fam;
	e->depth = fam == 4 ? 32 : 128;
	e->is_neigh = 1;
	if (parse_mac(p, tok[2], &e->mac) != 0)
		return -EINVAL;
	e->port = parse_port(p, tok[4]);
	if (e->port < 0)
		return -EINVAL;
	p->t->n_neigh++;
	return 0;
}

/* route PREFIX via ADDR | route PREFIX port NAME mac MAC */
static int
line_route(struct l3_parse *p, char **tok, int n)
{
	struct l3_entry *e;

	if (n < 2)
		return perr(p, "route: use route PREFIX via ADDR, or route "
			       "PREFIX port NAME mac MAC");
	e = new_entry(p);
	if (e == NULL)
		return perr(p, "out of memory");
	if (parse_prefix(p, tok[1], e) != 0)
		return -EINVAL;
	if (n == 4 && strcmp(tok[2], "via") == 0) {
		int fam = parse_addr(tok[3], e->via);

		if (fam == 0)
			return perr(p, "'%s' is not an IPv4 or IPv6 address",
				    tok[3]);
		if (fam != e->family)
			return perr(p,
				    "route %s via %s: the next hop is not "
				    "of the route's family",
				    tok[1], tok[3]);
		e->has_via = 1;
		return 0;
	}
	if (n == 6 && strcmp(tok[2], "port") == 0 &&
	    strcmp(tok[4], "mac") == 0) {
		e->port = parse_port(p, tok[3]);
		if (e->port < 0)
			return -EINVAL;
		return parse_mac(p, tok[5], &e->mac);
	}
	return perr(p, "route: use route PREFIX via ADDR, or route PREFIX "
		       "port NAME mac MAC");
}

static int
parse_line(struct l3_parse *p, char *buf)
{
	char *tok[L3_TOKENS + 1], *save = NULL, *s;
	char *hash = strchr(buf, '#');
	int n = 0;

	if (hash != NULL)
		*hash = '\0';
	for (s = strtok_r(buf, " \t\r\n", &save); s != NULL;
	     s = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == L3_TOKENS)
			return perr(p, "more than %d words", L3_TOKENS);
		tok[n++] = s;
	}
	if (n == 0)
		return 0;
	if (strcmp(tok[0], "port") == 0)
		return line_port(p, tok, n);
	if (strcmp(tok[0], "neigh") == 0)
		return line_neigh(p, tok, n);
	if (strcmp(tok[0], "route") == 0)
		return line_route(p, tok, n);
	return perr(p, "unknown keyword '%s' (use port, neigh or route)",
		    tok[0]);
}

static int
read_file(struct l3_parse *p)
{
	char buf[L3_LINE_MAX];
	FILE *f = fopen(p->path, "r");
	int rc = 0;

	if (f == NULL)
		return perr(p, "cannot open: %s", strerror(errno));
	while (rc == 0 && fgets(buf, sizeof(buf), f) != NULL) {
		p->line++;
		if (strchr(buf, '\n') == NULL && !feof(f)) {
			rc = perr(p, "longer than %d characters",
				  L3_LINE_MAX - 2);
			break;
		}
		rc = parse_line(p, buf);
	}
	if (rc == 0 && ferror(f))
		rc = perr(p, "read error");
	fclose(f);
	return rc;
}

/* Neighbours by family and address, for bsearch. */
static int
neigh_cmp(const void *a, const void *b)
{
	const struct l3_entry *x = *(const struct l3_entry *const *)a;
	const struct l3_entry *y = *(const struct l3_entry *const *)b;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, 16);
}

/* The neigh line for a route's via (among the sorted neighbours), or
 * NULL. */
static const struct l3_entry *
find_neigh(struct l3_entry *const *sorted, uint32_t n, const struct l3_entry *r)
{
	struct l3_entry key = {.family = r->family};
	const struct l3_entry *kp = &key;
	struct l3_entry *const *hit;

	memcpy(key.addr, r->via, 16);
	hit = bsearch(&kp, sorted, n, sizeof(sorted[0]), neigh_cmp);
	return hit ? *hit : NULL;
}

/* The neighbours, sorted: *out (free it), their number in *n. */
static int
sort_neigh(struct l3_parse *p, struct l3_entry ***out, uint32_t *n)
{
	struct l3_entry **v = calloc(p->n ? p->n : 1, sizeof(*v));

	if (v == NULL)
		return perr(p, "out of memory");
	*n = 0;
	for (uint32_t i = 0; i < p->n; i++)
		if (p->e[i].is_neigh)
			v[(*n)++] = &p->e[i];
	qsort(v, *n, sizeof(v[0]), neigh_cmp);
	*out = v;
	return 0;
}

/* Gives every via route its neighbour's port and MAC; fills nh[]. */
static int
resolve(struct l3_parse *p, uint32_t *n_lpm)
{
	struct l3_table *t = p->t;
	char text[INET6_ADDRSTRLEN];
	struct l3_entry **sorted = NULL;
	uint32_t n_sorted = 0;

	t->nh = calloc(p->n ? p->n : 1, sizeof(t->nh[0]));
	if (t->nh == NULL)
		return perr(p, "out of memory");
	if (sort_neigh(p, &sorted, &n_sorted) != 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->n; i++) {
		struct l3_entry *e = &p->e[i];

		if (e->has_via) {
			const struct l3_entry *ne =
				find_neigh(sorted, n_sorted, e);

			if (ne == NULL) {
				free(sorted);
				p->line = e->line;
				inet_ntop(e->family == 4 ? AF_INET : AF_INET6,
					  e->via, text, sizeof(text));
				return perr(p,
					    "route via %s: no neigh line "
					    "gives its MAC and port",
					    text);
			}
			e->port = ne->port;
			e->mac = ne->mac;
		}
		t->nh[i].port = (uint16_t)e->port;
		t->nh[i].dst = e->mac;
		t->nh[i].src = t->ports[e->port].mac;
		if (e->family == 4)
			t->n_routes4++;
		else
			t->n_routes6++;
		if (e->depth > 0)
			n_lpm[e->family == 6]++;
	}
	free(sorted);
	t->n_nh = p->n;
	return 0;
}

/* Ports whose MAC neither the ethdev nor the file gives. */
static int
check_ports(struct l3_parse *p)
{
	static const struct rte_ether_addr zero;

	p->t->any_v4 = -1;
	p->t->any_v6 = -1;
	for (int i = 0; i < L3_MAX_PORTS; i++) {
		const struct l3_port *pt = &p->t->ports[i];

		if (!pt->used)
			continue;
		if (memcmp(&pt->mac, &zero, sizeof(zero)) == 0) {
			p->line = p->port_line[i] ? p->port_line[i]
						  : p->port_first[i];
			return perr(p,
				    "port '%s': cannot read its MAC address "
				    "(rte_eth_macaddr_get); give it: port %s "
				    "mac MAC",
				    pt->name, pt->name);
		}
		if (pt->has_v4 && p->t->any_v4 < 0)
			p->t->any_v4 = i;
		if (pt->has_v6 && p->t->any_v6 < 0)
			p->t->any_v6 = i;
		if (pt->has_v4)
			p->t->mine4[p->t->n_mine4++] = pt->v4;
		if (pt->has_v6)
			memcpy(p->t->mine6[p->t->n_mine6++], pt->v6, 16);
	}
	return 0;
}

/* An LPM named after our pid and the load: one of that name left by a
 * dead process with our pid is freed first. */
static int
make_lpms(struct l3_parse *p, const struct l3_limits *lim, unsigned gen,
	  const uint32_t *n_lpm)
{
	struct l3_table *t = p->t;
	char name[RTE_LPM_NAMESIZE];

	p->line = 0;
	if (n_lpm[0] > 0) {
		struct rte_lpm_config c = {.max_rules = lim->max_routes,
					   .number_tbl8s = lim->tbl8_v4};

		snprintf(name, sizeof(name), "l3v4_%d_%u", (int)getpid(), gen);
		rte_lpm_free(rte_lpm_find_existing(name));
		t->lpm4 = rte_lpm_create(name, SOCKET_ID_ANY, &c);
		if (t->lpm4 == NULL)
			return perr(p,
				    "cannot create the IPv4 table of %u "
				    "routes (about 67 MB of the hugepage "
				    "memory sluiced sets aside with "
				    "--nf-mem): %s",
				    lim->max_routes, rte_strerror(rte_errno));
	}
	if (n_lpm[1] > 0) {
		struct rte_lpm6_config c = {.max_rules = lim->max_routes,
					    .number_tbl8s = lim->tbl8_v6};

		snprintf(name, sizeof(name), "l3v6_%d_%u", (int)getpid(), gen);
		rte_lpm6_free(rte_lpm6_find_existing(name));
		t->lpm6 = rte_lpm6_create(name, SOCKET_ID_ANY, &c);
		if (t->lpm6 == NULL)
			return perr(p,
				    "cannot create the IPv6 table of %u "
				    "routes (about 67 MB of the hugepage "
				    "memory sluiced sets aside with "
				    "--nf-mem): %s",
				    lim->max_routes, rte_strerror(rte_errno));
	}
	return 0;
}

/* Routes by family, prefix and line, for finding duplicates. */
static int
route_cmp(const void *a, const void *b)
{
	const struct l3_entry *x = *(const struct l3_entry *const *)a;
	const struct l3_entry *y = *(const struct l3_entry *const *)b;
	int c;

	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	c = memcmp(x->addr, y->addr, 16);
	if (c != 0)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/*
 * A prefix given twice is refused at its second line (the first such line
 * of the file), sorted rather than asked of the LPM: rte_lpm searches its
 * rules linearly, so asking would double the cost of a large file.
 */
static int
check_dups(struct l3_parse *p)
{
	const struct l3_entry **v = calloc(p->n ? p->n : 1, sizeof(*v));
	const struct l3_entry *dup = NULL, *first = NULL;
	char text[INET6_ADDRSTRLEN];

	if (v == NULL)
		return perr(p, "out of memory");
	for (uint32_t i = 0; i < p->n; i++)
		v[i] = &p->e[i];
	qsort(v, p->n, sizeof(v[0]), route_cmp);
	for (uint32_t i = 1, g = 0; i < p->n; i++) {
		if (v[i]->family != v[g]->family ||
		    v[i]->depth != v[g]->depth ||
		    memcmp(v[i]->addr, v[g]->addr, 16) != 0) {
			g = i; /* a new prefix: v[g] is its first line */
			continue;
		}
		if (dup == NULL || v[i]->line < dup->line) {
			dup = v[i];
			first = v[g];
		}
	}
	free(v);
	if (dup == NULL)
		return 0;
	p->line = dup->line;
	inet_ntop(dup->family == 4 ? AF_INET : AF_INET6, dup->addr, text,
		  sizeof(text));
	return perr(p, "%s/%u is given twice (first on line %d)", text,
		    dup->depth, first->line);
}

/* Adds entry i, after checking the family's count. */
static int
add_one(struct l3_parse *p, const struct l3_limits *lim, uint32_t i,
	uint32_t *count)
{
	const struct l3_entry *e = &p->e[i];
	struct l3_table *t = p->t;
	char text[INET6_ADDRSTRLEN];
	int rc = 0;

	p->line = e->line;
	inet_ntop(e->family == 4 ? AF_INET : AF_INET6, e->addr, text,
		  sizeof(text));
	if (++count[e->family == 6] > lim->max_routes)
		return perr(p,
			    "more than --max-routes %u IPv%d routes (neigh "
			    "lines count as host routes)",
			    lim->max_routes, e->family);
	if (e->depth == 0) /* the default route, kept beside the LPM */
		*(e->family == 4 ? &t->def4 : &t->def6) = i;
	else if (e->family == 4)
		rc = rte_lpm_add(t->lpm4,
				 rte_be_to_cpu_32(*(const uint32_t *)e->addr),
				 e->depth, i);
	else
		rc = rte_lpm6_add(t->lpm6, e->addr, e->depth, i);
	if (rc == -ENOSPC)
		return perr(p,
			    "cannot add %s/%u: the IPv%d table has no tbl8 "
			    "group left (--tbl8-v%d %u)",
			    text, e->depth, e->family, e->family,
			    e->family == 4 ? lim->tbl8_v4 : lim->tbl8_v6);
	if (rc != 0)
		return perr(p, "cannot add %s/%u: %s", text, e->depth,
			    strerror(-rc));
	return 0;
}

void
l3_table_free(struct l3_table *t)
{
	if (t == NULL)
		return;
	rte_lpm_free(t->lpm4);
	rte_lpm6_free(t->lpm6);
	free(t->nh);
	free(t);
}

int
l3_table_load(struct sl_nf *nf, const char *path, const struct l3_limits *lim,
	      unsigned gen, struct l3_table **out, char *err, size_t err_size)
{
	struct l3_parse p = {.nf = nf,
			     .path = path,
			     .err = err,
			     .err_size = err_size};
	uint32_t count[2] = {0, 0}, n_lpm[2] = {0, 0};
	int rc;

	*out = NULL;
	p.t = calloc(1, sizeof(*p.t));
	if (p.t == NULL) {
		snprintf(err, err_size, "%s: out of memory", path);
		return -ENOMEM;
	}
	p.t->def4 = -1;
	p.t->def6 = -1;
	rc = read_file(&p);
	if (rc == 0)
		rc = check_ports(&p);
	if (rc == 0)
		rc = resolve(&p, n_lpm);
	if (rc == 0)
		rc = check_dups(&p);
	if (rc == 0)
		rc = make_lpms(&p, lim, gen, n_lpm);
	for (uint32_t i = 0; rc == 0 && i < p.n; i++)
		rc = add_one(&p, lim, i, count);
	free(p.e);
	if (rc != 0) {
		l3_table_free(p.t);
		return rc;
	}
	*out = p.t;
	return 0;
}
