/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rte_acl classifier over sl_match rules. See sl_classifier.h.
 *
 * Keys are built from the parsed 5-tuple (so IPv4 options and IPv6
 * extension headers do not move the fields) plus the ingress port.
 * rte_acl's input rules: the first field is one byte; every other field
 * lies in a group of 4 consecutive input bytes (one input_index each),
 * read in network order. So: proto | src | dst | sport+dport | in_port,
 * with IPv6 addresses as four 32-bit words each and in_port as a 32-bit
 * range. A field group that every rule leaves wild (a full range, prefix
 * length 0, mask 0) is dropped by rte_acl_build() and costs nothing: rules
 * without in_port use 0-UINT32_MAX for it, not 0-65535.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include <rte_acl.h>
#include <rte_errno.h>
#include <rte_memory.h>

#include "sl_classifier.h"

#define SL_CLS_CHUNK 64 /* keys per rte_acl_classify() call */

struct sl_classifier {
	struct rte_acl_ctx *acl[2]; /* IPv4, IPv6; NULL: no rule for it */
	uint32_t n_rules;
};

struct sl_cls_key4 {
	uint8_t proto;
	uint8_t pad[3];
	uint32_t src;
	uint32_t dst;
	uint16_t sport;
	uint16_t dport;
	uint32_t in_port; /* network order */
};

struct sl_cls_key6 {
	uint8_t proto;
	uint8_t pad[3];
	uint32_t src[4];
	uint32_t dst[4];
	uint16_t sport;
	uint16_t dport;
	uint32_t in_port; /* network order */
};

enum { F4_PROTO, F4_SRC, F4_DST, F4_SPORT, F4_DPORT, F4_INPORT, F4_NUM };
enum {
	F6_PROTO,
	F6_SRC,
	F6_DST = F6_SRC + 4,
	F6_SPORT = F6_DST + 4,
	F6_DPORT,
	F6_INPORT,
	F6_NUM
};

RTE_ACL_RULE_DEF(sl_cls_rule4, F4_NUM);
RTE_ACL_RULE_DEF(sl_cls_rule6, F6_NUM);

/* For unique rte_acl names (classifier.h: name_prefix, then this counter).
 * Process-wide, as rte_acl's names are: any thread may build (atomic). */
static uint32_t sl_cls_counter;

static void
sl_cls_def(struct rte_acl_field_def *d, uint8_t type, uint8_t size,
	   unsigned field, unsigned input, size_t offset)
{
	d->type = type;
	d->size = size;
	d->field_index = (uint8_t)field;
	d->input_index = (uint8_t)input;
	d->offset = (uint32_t)offset;
}

static void
sl_cls_defs4(struct rte_acl_field_def *d)
{
	memset(d, 0, F4_NUM * sizeof(*d));
	sl_cls_def(&d[F4_PROTO], RTE_ACL_FIELD_TYPE_BITMASK, 1, F4_PROTO, 0,
		   offsetof(struct sl_cls_key4, proto));
	sl_cls_def(&d[F4_SRC], RTE_ACL_FIELD_TYPE_MASK, 4, F4_SRC, 1,
		   offsetof(struct sl_cls_key4, src));
	sl_cls_def(&d[F4_DST], RTE_ACL_FIELD_TYPE_MASK, 4, F4_DST, 2,
		   offsetof(struct sl_cls_key4, dst));
	sl_cls_def(&d[F4_SPORT], RTE_ACL_FIELD_TYPE_RANGE, 2, F4_SPORT, 3,
		   offsetof(struct sl_cls_key4, sport));
	sl_cls_def(&d[F4_DPORT], RTE_ACL_FIELD_TYPE_RANGE, 2, F4_DPORT, 3,
		   offsetof(struct sl_cls_key4, dport));
	sl_cls_def(&d[F4_INPORT], RTE_ACL_FIELD_TYPE_RANGE, 4, F4_INPORT, 4,
		   offsetof(struct sl_cls_key4, in_port));
}

static void
sl_cls_defs6(struct rte_acl_field_def *d)
{
	unsigned i;

	memset(d, 0, F6_NUM * sizeof(*d));
	sl_cls_def(&d[F6_PROTO], RTE_ACL_FIELD_TYPE_BITMASK, 1, F6_PROTO, 0,
		   offsetof(struct sl_cls_key6, proto));
	for (i = 0; i < 4; i++) {
		sl_cls_def(&d[F6_SRC + i], RTE_ACL_FIELD_TYPE_MASK, 4,
			   F6_SRC + i, 1 + i,
			   offsetof(struct sl_cls_key6, src) + 4 * i);
		sl_cls_def(&d[F6_DST + i], RTE_ACL_FIELD_TYPE_MASK, 4,
			   F6_DST + i, 5 + i,
			   offsetof(struct sl_cls_key6, dst) + 4 * i);
	}
	sl_cls_def(&d[F6_SPORT], RTE_ACL_FIELD_TYPE_RANGE, 2, F6_SPORT, 9,
		   offsetof(struct sl_cls_key6, sport));
	sl_cls_def(&d[F6_DPORT], RTE_ACL_FIELD_TYPE_RANGE, 2, F6_DPORT, 9,
		   offsetof(struct sl_cls_key6, dport));
	sl_cls_def(&d[F6_INPORT], RTE_ACL_FIELD_TYPE_RANGE, 4, F6_INPORT, 10,
		   offsetof(struct sl_cls_key6, in_port));
}

/* Bits of a prefix of len bits that fall in 32-bit word i. */
static uint32_t
sl_cls_word_bits(unsigned len, unsigned i)
{
	if (len <= 32 * i)
		return 0;
	return len - 32 * i >= 32 ? 32 : len - 32 * i;
}

/* Fields common to both families. */
static void
sl_cls_common(const struct sl_match *m, uint32_t index, int32_t prio,
	      struct rte_acl_rule_data *data, struct rte_acl_field *proto,
	      struct rte_acl_field *sport, struct rte_acl_field *dport,
	      struct rte_acl_field *in_port)
{
	data->category_mask = 1;
	data->priority = prio;
	data->userdata = index + 1; /* 0 means "no match" */
	proto->value.u8 = m->proto_any ? 0 : m->proto;
	proto->mask_range.u8 = m->proto_any ? 0 : 0xff;
	sport->value.u16 = m->sport_lo;
	sport->mask_range.u16 = m->sport_hi;
	dport->value.u16 = m->dport_lo;
	dport->mask_range.u16 = m->dport_hi;
	in_port->value.u32 = m->in_port_lo;
	in_port->mask_range.u32 = m->in_port_hi;
	if (m->in_port_lo == 0 && m->in_port_hi == UINT16_MAX)
		in_port->mask_range.u32 = UINT32_MAX; /* wild: see above */
}

static void
sl_cls_rule4(const struct sl_match *m, uint32_t index, int32_t prio,
	     struct sl_cls_rule4 *a)
{
	memset(a, 0, sizeof(*a));
	sl_cls_common(m, index, prio, &a->data, &a->field[F4_PROTO],
		      &a->field[F4_SPORT], &a->field[F4_DPORT],
		      &a->field[F4_INPORT]);
	a->field[F4_SRC].value.u32 = ntohl(m->src[0]);
	a->field[F4_SRC].mask_range.u32 = m->family == 4 ? m->src_len : 0;
	a->field[F4_DST].value.u32 = ntohl(m->dst[0]);
	a->field[F4_DST].mask_range.u32 = m->family == 4 ? m->dst_len : 0;
}

static void
sl_cls_rule6(const struct sl_match *m, uint32_t index, int32_t prio,
	     struct sl_cls_rule6 *a)
{
	unsigned w;

	memset(a, 0, sizeof(*a));
	sl_cls_common(m, index, prio, &a->data, &a->field[F6_PROTO],
		      &a->field[F6_SPORT], &a->field[F6_DPORT],
		      &a->field[F6_INPORT]);
	for (w = 0; m->family == 6 && w < 4; w++) {
		struct rte_acl_field *s = &a->field[F6_SRC + w];
		struct rte_acl_field *d = &a->field[F6_DST + w];

		s->value.u32 = ntohl(m->src[w]);
		s->mask_range.u32 = sl_cls_word_bits(m->src_len, w);
		d->value.u32 = ntohl(m->dst[w]);
		d->mask_range.u32 = sl_cls_word_bits(m->dst_len, w);
	}
}

struct sl_cls_rank {
	int32_t prio;
	uint32_t index;
};

/* Best first: higher priority, then lower index. */
static int
sl_cls_rank_cmp(const void *a, const void *b)
{
	const struct sl_cls_rank *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * acl_prio[i]: rte_acl priority of rule i, distinct for all rules, in the
 * order of sl_cls_rank_cmp() (rte_acl leaves ties undefined).
 */
static int
sl_cls_priorities(const int32_t *priority, uint32_t n, int32_t *acl_prio)
{
	struct sl_cls_rank *r;
	uint32_t i;

	if (priority == NULL) {
		for (i = 0; i < n; i++)
			acl_prio[i] = (int32_t)(RTE_ACL_MAX_PRIORITY - i);
		return 0;
	}
	r = malloc((size_t)n * sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		r[i].prio = priority[i];
		r[i].index = i;
	}
	qsort(r, n, sizeof(*r), sl_cls_rank_cmp);
	for (i = 0; i < n; i++)
		acl_prio[r[i].index] = (int32_t)(RTE_ACL_MAX_PRIORITY - i);
	free(r);
	return 0;
}

/*
 * Builds the context of one family from the rules that apply to it (same
 * family, or no address). *out stays NULL if there are none.
 */
static int
sl_cls_build_family(const struct sl_match *const *rules,
		    const int32_t *acl_prio, uint32_t n, unsigned family,
		    const char *name, struct rte_acl_ctx **out, char *err,
		    size_t errlen)
{
	size_t rule_size = family == 4 ? RTE_ACL_RULE_SZ(F4_NUM)
				       : RTE_ACL_RULE_SZ(F6_NUM);
	struct rte_acl_param prm = {
		.name = name,
		.socket_id = SOCKET_ID_ANY,
		.rule_size = (uint32_t)rule_size,
	};
	struct rte_acl_config cfg = {
		.num_categories = 1,
		.num_fields = family == 4 ? F4_NUM : F6_NUM,
	};
	struct rte_acl_ctx *ctx;
	uint32_t i, k = 0;
	uint8_t *buf;
	int rc;

	*out = NULL;
	for (i = 0; i < n; i++)
		k += rules[i]->family == 0 || rules[i]->family == family;
	if (k == 0)
		return 0;
	buf = calloc(k, rule_size);
	if (buf == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0, k = 0; i < n; i++) {
		const struct sl_match *m = rules[i];

		if (m->family != 0 && m->family != family)
			continue;
		if (family == 4)
			sl_cls_rule4(m, i, acl_prio[i],
				     (struct sl_cls_rule4 *)(buf +
							     k * rule_size));
		else
			sl_cls_rule6(m, i, acl_prio[i],
				     (struct sl_cls_rule6 *)(buf +
							     k * rule_size));
		k++;
	}
	prm.max_rule_num = k;

	/* The name is unique to this process: one found is a leftover. */
	ctx = rte_acl_find_existing(name);
	if (ctx != NULL)
		rte_acl_free(ctx);
	ctx = rte_acl_create(&prm);
	if (ctx == NULL) {
		rc = -(rte_errno ? rte_errno : ENOMEM);
		snprintf(err, errlen, "rte_acl_create(%s): %s", name,
			 rte_strerror(-rc));
		free(buf);
		return rc;
	}
	rc = rte_acl_add_rules(ctx, (const struct rte_acl_rule *)buf, k);
	free(buf);
	if (rc == 0) {
		if (family == 4)
			sl_cls_defs4(cfg.defs);
		else
			sl_cls_defs6(cfg.defs);
		rc = rte_acl_build(ctx, &cfg);
	}
	if (rc != 0) {
		snprintf(err, errlen, "rte_acl (IPv%u, %" PRIu32 " rules): %s",
			 family, k, strerror(rc < 0 ? -rc : rc));
		rte_acl_free(ctx);
		return rc < 0 ? rc : -rc;
	}
	*out = ctx;
	return 0;
}

int
sl_classifier_build(const struct sl_match *const *rules,
		    const int32_t *priority, uint32_t n,
		    const char *name_prefix, struct sl_classifier **out,
		    char *err, size_t errlen)
{
	char name[RTE_ACL_NAMESIZE], dummy[1];
	struct sl_classifier *c;
	int32_t *acl_prio = NULL;
	uint32_t id, i;
	int rc = 0;

	if (err == NULL || errlen == 0) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (out == NULL || (n > 0 && rules == NULL)) {
		snprintf(err, errlen,
			 "sl_classifier_build: no rules or no output");
		return -EINVAL;
	}
	*out = NULL;
	if (name_prefix == NULL)
		name_prefix = "slcls";
	if (strlen(name_prefix) > SL_CLASSIFIER_PREFIX_MAX) {
		snprintf(err, errlen,
			 "rte_acl name prefix '%.32s' is longer than %d "
			 "characters",
			 name_prefix, SL_CLASSIFIER_PREFIX_MAX);
		return -EINVAL;
	}
	if (n > (uint32_t)(RTE_ACL_MAX_PRIORITY - RTE_ACL_MIN_PRIORITY)) {
		snprintf(err, errlen, "%" PRIu32 " rules, at most %d allowed",
			 n, RTE_ACL_MAX_PRIORITY - RTE_ACL_MIN_PRIORITY);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		if (rules[i] == NULL) {
			snprintf(err, errlen, "rule %" PRIu32 " is NULL", i);
			return -EINVAL;
		}
	c = calloc(1, sizeof(*c));
	if (c == NULL ||
	    (n > 0 &&
	     (acl_prio = malloc((size_t)n * sizeof(*acl_prio))) == NULL)) {
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->n_rules = n;
	if (n > 0)
		rc = sl_cls_priorities(priority, n, acl_prio);
	if (rc == 0 && n > 0) {
		id = __atomic_add_fetch(&sl_cls_counter, 1, __ATOMIC_RELAXED);
		snprintf(name, sizeof(name), "%s%" PRIu32 "_4", name_prefix,
			 id);
		rc = sl_cls_build_family(rules, acl_prio, n, 4, name,
					 &c->acl[0], err, errlen);
		if (rc == 0) {
			name[strlen(name) - 1] = '6';
			rc = sl_cls_build_family(rules, acl_prio, n, 6, name,
						 &c->acl[1], err, errlen);
		}
	}
	if (rc == -ENOMEM && err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	free(acl_prio);
	if (rc != 0) {
		sl_classifier_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Classifies keys[0..k) of one family; res[idx[j]] gets the result. */
static void
sl_cls_run(struct rte_acl_ctx *ctx, const uint8_t **keys, uint32_t k,
	   const uint32_t *idx, uint32_t *res)
{
	uint32_t r[SL_CLS_CHUNK], j;

	if (k == 0)
		return;
	if (rte_acl_classify(ctx, keys, r, k, 1) != 0)
		return; /* results stay 0: no match */
	for (j = 0; j < k; j++)
		res[idx[j]] = r[j];
}

void
sl_classifier_lookup(const struct sl_classifier *c,
		     const struct sl_5tuple *const *t, const uint16_t *in_port,
		     uint32_t n, uint32_t *res)
{
	struct sl_cls_key4 k4[SL_CLS_CHUNK];
	struct sl_cls_key6 k6[SL_CLS_CHUNK];
	const uint8_t *d4[SL_CLS_CHUNK], *d6[SL_CLS_CHUNK];
	uint32_t i4[SL_CLS_CHUNK], i6[SL_CLS_CHUNK];
	uint32_t base, i;

	memset(res, 0, (size_t)n * sizeof(*res));
	if (c == NULL || (c->acl[0] == NULL && c->acl[1] == NULL))
		return;
	for (base = 0; base < n; base += SL_CLS_CHUNK) {
		uint32_t end = n - base < SL_CLS_CHUNK ? n
						       : base + SL_CLS_CHUNK;
		uint32_t n4 = 0, n6 = 0;

		for (i = base; i < end; i++) {
			const struct sl_5tuple *x = t[i];
			uint32_t port = htonl(in_port ? in_port[i] : 0);

			if (x == NULL)
				continue;
			if (x->family == 4 && c->acl[0] != NULL) {
				struct sl_cls_key4 *k = &k4[n4];

				memset(k->pad, 0, sizeof(k->pad));
				k->proto = x->proto;
				k->src = x->src.v4;
				k->dst = x->dst.v4;
				k->sport = x->sport;
				k->dport = x->dport;
				k->in_port = port;
				d4[n4] = (const uint8_t *)k;
				i4[n4++] = i;
			} else if (x->family == 6 && c->acl[1] != NULL) {
				struct sl_cls_key6 *k = &k6[n6];

				memset(k->pad, 0, sizeof(k->pad));
				k->proto = x->proto;
				memcpy(k->src, x->src.v6, 16);
				memcpy(k->dst, x->dst.v6, 16);
				k->sport = x->sport;
				k->dport = x->dport;
				k->in_port = port;
				d6[n6] = (const uint8_t *)k;
				i6[n6++] = i;
			}
		}
		sl_cls_run(c->acl[0], d4, n4, i4, res);
		sl_cls_run(c->acl[1], d6, n6, i6, res);
	}
}

uint32_t
sl_classifier_n_rules(const struct sl_classifier *c)
{
	return c ? c->n_rules : 0;
}

void
sl_classifier_free(struct sl_classifier *c)
{
	if (c == NULL)
		return;
	rte_acl_free(c->acl[0]);
	rte_acl_free(c->acl[1]);
	free(c);
}
