/* SPDX-License-Identifier: BSD-3-Clause */
/* Maglev lookup table population: see maglev.h. */
#include <stdlib.h>
#include <string.h>

#include "maglev.h"

#define LB_SEED_OFFSET UINT64_C(0x9e3779b97f4a7c15)
#define LB_SEED_SKIP UINT64_C(0xc2b2ae3d27d4eb4f)

int
lb_is_prime(uint32_t n)
{
	if (n < 2)
		return 0;
	if (n % 2 == 0)
		return n == 2;
	for (uint32_t d = 3; (uint64_t)d * d <= n; d += 2)
		if (n % d == 0)
			return 0;
	return 1;
}

uint64_t
lb_name_hash(const char *s, uint64_t seed)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ seed;

	for (; *s != '\0'; s++) {
		h ^= (uint8_t)*s;
		h *= UINT64_C(0x100000001b3);
	}
	/* A final mix (splitmix64's): FNV's low bits are weak for short
	 * names that differ in one character. */
	h ^= h >> 30;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	h ^= h >> 27;
	h *= UINT64_C(0x94d049bb133111eb);
	h ^= h >> 31;
	return h;
}

struct lb_perm {
	uint32_t offset, skip;
	uint32_t credit;
	const struct lb_maglev_in *in;
};

static int
lb_perm_cmp(const void *a, const void *b)
{
	const struct lb_perm *x = a, *y = b;

	return strcmp(x->in->name, y->in->name);
}

/* Backend p's next free preferred entry: it takes it. */
static void
lb_take(struct lb_perm *p, uint32_t *next, uint16_t *table, uint32_t size)
{
	uint32_t c;

	do {
		c = (uint32_t)(((uint64_t)p->offset +
				(uint64_t)(*next) * p->skip) %
			       size);
		(*next)++;
	} while (table[c] != LB_MAGLEV_NONE);
	table[c] = p->in->id;
}

uint32_t
lb_maglev_populate(const struct lb_maglev_in *in, uint32_t n, uint16_t *table,
		   uint32_t size, uint32_t *next)
{
	struct lb_perm *p;
	uint32_t live = 0, wmax = 0, filled = 0, i;

	for (i = 0; i < size; i++)
		table[i] = LB_MAGLEV_NONE;
	p = calloc(n ? n : 1, sizeof(*p));
	if (p == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (in[i].weight == 0)
			continue;
		p[live].in = &in[i];
		p[live].offset =
			(uint32_t)(lb_name_hash(in[i].name, LB_SEED_OFFSET) %
				   size);
		p[live].skip =
			(uint32_t)(lb_name_hash(in[i].name, LB_SEED_SKIP) %
				   (size - 1)) +
			1;
		if (in[i].weight > wmax)
			wmax = in[i].weight;
		live++;
	}
	qsort(p, live, sizeof(*p), lb_perm_cmp);
	for (i = 0; i < live; i++)
		next[i] = 0;
	while (live > 0 && filled < size) {
		for (i = 0; i < live && filled < size; i++) {
			p[i].credit += p[i].in->weight;
			while (p[i].credit >= wmax && filled < size) {
				p[i].credit -= wmax;
				lb_take(&p[i], &next[i], table, size);
				filled++;
			}
		}
	}
	free(p);
	return live;
}
