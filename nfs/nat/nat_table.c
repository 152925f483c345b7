/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat's mapping table: one rte_hash (sl_nf_table_create) holding
 * two keys per mapping, the tuple its packets have on the inside going
 * out and the one they have on the outside coming in (the key's pad byte
 * says which), both pointing at the mapping through the table's slots.
 * The signature of a key is sl_5tuple_hash() of it, computed here: see
 * README.md ("The mapping table") for why it is not sl_pkt_flow_hash().
 * That hash indexes a cache in front of the table instead: a packet whose
 * flow hash names a mapping with its own tuple needs no table lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>

#include "nat.h"

#define NAT_BYTES_PER_KEY 74 /* for sl_nf_table_create's message */
#define NAT_NO_MAP UINT32_MAX

static void
nat_key(struct sl_5tuple *k, enum nat_dir dir, uint8_t proto, uint32_t src,
	uint16_t sport, uint32_t dst, uint16_t dport)
{
	memset(k, 0, sizeof(*k));
	k->family = 4;
	k->proto = proto;
	k->pad = (uint16_t)dir;
	k->src.v4 = src;
	k->dst.v4 = dst;
	k->sport = sport;
	k->dport = dport;
}

/* The two keys of a mapping. */
static void
nat_map_keys(const struct nat_map *mp, struct sl_5tuple *kin,
	     struct sl_5tuple *kout)
{
	nat_key(kin, NAT_OUT, mp->proto, mp->int_addr, mp->int_port,
		mp->rem_addr, mp->rem_port);
	nat_key(kout, NAT_IN, mp->proto, mp->rem_addr, mp->rem_port,
		mp->ext_addr, mp->ext_port);
}

int
nat_table_init(struct sl_nf *nf, struct nat_state *st)
{
	const struct sl_nf_table_spec spec = {
		.prog = NAT_PROG,
		.tag = "slnat",
		.what = "mapping",
		.whats = "keys (two per mapping)",
		.entries = st->max_maps * 2,
		.key_len = sizeof(struct sl_5tuple),
		.bytes_per_key = NAT_BYTES_PER_KEY,
		.slot_size = sizeof(uint32_t),
	};
	void *slots = NULL;
	int rc;

	uint32_t n_cache = 1;

	rc = sl_nf_table_create(nf, &spec, &st->h, &slots, &st->n_slots);
	if (rc != 0)
		return rc;
	st->slot = slots;
	while (n_cache < st->max_maps * 2u)
		n_cache <<= 1; /* a power of two: a mask picks the entry */
	st->cache_mask = n_cache - 1;
	st->cache = malloc(n_cache * sizeof(st->cache[0]));
	st->frag_mask = 1;
	while (st->frag_mask < st->n_frags)
		st->frag_mask <<= 1;
	st->frags = calloc(st->frag_mask, sizeof(st->frags[0]));
	st->frag_mask--;
	st->maps = calloc(st->max_maps, sizeof(st->maps[0]));
	st->free_idx = calloc(st->max_maps, sizeof(st->free_idx[0]));
	if (st->maps == NULL || st->free_idx == NULL || st->cache == NULL ||
	    st->frags == NULL) {
		fprintf(stderr, NAT_PROG ": out of memory\n");
		nat_table_free(st);
		return ENOMEM;
	}
	memset(st->cache, 0xff, n_cache * sizeof(st->cache[0])); /* none */
	/* Popped from the top: mapping 0 first. */
	for (uint32_t i = 0; i < st->max_maps; i++)
		st->free_idx[i] = st->max_maps - 1 - i;
	st->n_free = st->max_maps;
	return 0;
}

void
nat_table_free(struct nat_state *st)
{
	rte_hash_free(st->h);
	st->h = NULL;
	free(st->slot);
	free(st->maps);
	free(st->free_idx);
	free(st->cache);
	free(st->frags);
	st->cache = NULL;
	st->frags = NULL;
	st->slot = NULL;
	st->maps = NULL;
	st->free_idx = NULL;
}

uint32_t
nat_active(const struct nat_state *st)
{
	return st->max_maps - st->n_free;
}

static void
nat_remove(struct nat_state *st, struct nat_map *mp)
{
	struct sl_5tuple kin, kout;

	nat_map_keys(mp, &kin, &kout);
	rte_hash_del_key_with_hash(st->h, &kin, sl_5tuple_hash(&kin));
	rte_hash_del_key_with_hash(st->h, &kout, sl_5tuple_hash(&kout));
	mp->used = 0;
	st->free_idx[st->n_free++] = (uint32_t)(mp - st->maps);
	st->cnt.expired++;
}

static struct nat_map *
nat_lookup(struct nat_state *st, const struct sl_5tuple *k, uint64_t now)
{
	int32_t pos = rte_hash_lookup_with_hash(st->h, k, sl_5tuple_hash(k));
	struct nat_map *mp;

	if (pos < 0 || (uint32_t)pos >= st->n_slots)
		return NULL;
	mp = &st->maps[st->slot[pos]];
	if (mp->expire_ns <= now) {
		nat_remove(st, mp);
		return NULL;
	}
	return mp;
}

struct nat_map *
nat_find(struct nat_state *st, enum nat_dir dir, uint8_t proto, uint32_t src,
	 uint16_t sport, uint32_t dst, uint16_t dport, uint64_t now)
{
	struct sl_5tuple k;

	nat_key(&k, dir, proto, src, sport, dst, dport);
	return nat_lookup(st, &k, now);
}

struct nat_frag *
nat_frag_slot(struct nat_state *st, uint32_t src, uint32_t dst, uint16_t ip_id,
	      uint8_t proto, enum nat_dir dir)
{
	uint32_t h = rte_hash_crc_4byte(src, 0x7f4a7c15u);

	h = rte_hash_crc_4byte(dst, h);
	h = rte_hash_crc_4byte((uint32_t)ip_id << 16 | proto << 8 | dir, h);
	return &st->frags[h & st->frag_mask];
}

/* Whether mp's packets going dir have this tuple. */
static inline int
nat_map_is(const struct nat_map *mp, enum nat_dir dir, uint8_t proto,
	   uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport)
{
	if (!mp->used || mp->proto != proto)
		return 0;
	if (dir == NAT_OUT)
		return mp->int_addr == src && mp->int_port == sport &&
		       mp->rem_addr == dst && mp->rem_port == dport;
	return mp->rem_addr == src && mp->rem_port == sport &&
	       mp->ext_addr == dst && mp->ext_port == dport;
}

/*
 * The cache is 2-way: a hash's entries are i and i ^ 1. Sluiced's hash is
 * symmetric, so the two directions of a connection that both enter by the
 * inside (a capture replayed into one port, or two inside hosts talking
 * through the NAT) share it: each gets a way. A new mapping takes way i
 * unless a live mapping holds it, then way i ^ 1.
 */
void
nat_cache_put(struct nat_state *st, uint32_t fh, const struct nat_map *mp)
{
	uint32_t i = fh & st->cache_mask, old;

	if (fh == 0)
		return;
	old = st->cache[i];
	if (old < st->max_maps && st->maps[old].used && &st->maps[old] != mp)
		i ^= 1;
	st->cache[i] = (uint32_t)(mp - st->maps);
}

/* The mapping of way i if it is this packet's, else NULL. */
static inline struct nat_map *
nat_cache_way(struct nat_state *st, uint32_t i, enum nat_dir dir, uint8_t proto,
	      uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport)
{
	uint32_t idx = st->cache[i];
	struct nat_map *mp = idx < st->max_maps ? &st->maps[idx] : NULL;

	return mp != NULL && nat_map_is(mp, dir, proto, src, sport, dst, dport)
		       ? mp
		       : NULL;
}

struct nat_map *
nat_find_pkt(struct nat_state *st, enum nat_dir dir, uint8_t proto,
	     uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport,
	     uint64_t now, uint32_t fh)
{
	struct nat_map *mp = NULL;
	uint32_t i = fh & st->cache_mask;

	if (fh != 0) {
		mp = nat_cache_way(st, i, dir, proto, src, sport, dst, dport);
		if (mp == NULL)
			mp = nat_cache_way(st, i ^ 1, dir, proto, src, sport,
					   dst, dport);
	}
	if (mp != NULL) {
		if (mp->expire_ns <= now) {
			nat_remove(st, mp);
			return NULL;
		}
		st->cnt.cache_hits++;
		return mp;
	}
	mp = nat_find(st, dir, proto, src, sport, dst, dport, now);
	if (mp != NULL)
		nat_cache_put(st, fh, mp);
	return mp;
}

static int
nat_add_key(struct nat_state *st, const struct sl_5tuple *k, uint32_t idx)
{
	int32_t pos = rte_hash_add_key_with_hash(st->h, k, sl_5tuple_hash(k));

	if (pos < 0 || (uint32_t)pos >= st->n_slots)
		return -1;
	st->slot[pos] = idx;
	return 0;
}

/* Enters mp (filled but for used) in the table: 0, or -1 if full. */
static int
nat_insert(struct nat_state *st, struct nat_map *mp, uint64_t now)
{
	struct sl_5tuple kin, kout;
	uint32_t idx = (uint32_t)(mp - st->maps);

	nat_map_keys(mp, &kin, &kout);
	/* An add of a key that is there would take its place. */
	if (rte_hash_lookup_with_hash(st->h, &kin, sl_5tuple_hash(&kin)) >= 0 ||
	    rte_hash_lookup_with_hash(st->h, &kout, sl_5tuple_hash(&kout)) >= 0)
		return -1;
	if (nat_add_key(st, &kin, idx) != 0)
		return -1;
	if (nat_add_key(st, &kout, idx) != 0) {
		rte_hash_del_key_with_hash(st->h, &kin, sl_5tuple_hash(&kin));
		return -1;
	}
	mp->used = 1;
	mp->pkts[0] = mp->pkts[1] = 0;
	mp->expire_ns = now; /* the caller's first packet sets the timer */
	st->cnt.created++;
	return 0;
}

/* Takes a free mapping off the stack (zeroed), or NULL. */
static struct nat_map *
nat_alloc(struct nat_state *st)
{
	struct nat_map *mp;

	if (st->n_free == 0)
		return NULL;
	mp = &st->maps[st->free_idx[--st->n_free]];
	memset(mp, 0, sizeof(*mp));
	return mp;
}

/* Gives back a mapping nat_alloc() took and that was not inserted. */
static void
nat_release(struct nat_state *st, struct nat_map *mp)
{
	st->free_idx[st->n_free++] = (uint32_t)(mp - st->maps);
}

static enum nat_timer
nat_first_timer(uint8_t proto)
{
	return proto == IPPROTO_TCP   ? NAT_T_TCP_SYN
	       : proto == IPPROTO_UDP ? NAT_T_UDP
				      : NAT_T_ICMP;
}

static const struct nat_fwd *
nat_fwd_match(const struct nat_conf *c, unsigned p, uint32_t addr,
	      uint16_t port)
{
	for (uint32_t i = 0; i < c->n_fwd; i++)
		if (c->fwd[i].proto == p && c->fwd[i].ext_addr == addr &&
		    c->fwd[i].ext_port == port)
			return &c->fwd[i];
	return NULL;
}

/* Whether addr is one of NAT's own outside addresses (the pool's, the
 * forwards'): a mapping towards it hairpins. Once per new mapping. */
static int
nat_is_ours(const struct nat_conf *c, uint32_t addr)
{
	for (uint32_t i = 0; i < c->n_pool; i++)
		if (c->pool[i] == addr)
			return 1;
	for (uint32_t i = 0; i < c->n_fwd; i++)
		if (c->fwd[i].ext_addr == addr)
			return 1;
	return 0;
}

static unsigned
nat_pidx(uint8_t proto)
{
	return proto == IPPROTO_TCP   ? NAT_TCP
	       : proto == IPPROTO_UDP ? NAT_UDP
				      : NAT_ICMP;
}

/*
 * An outside port for (ext:? > rem:rport): the inside port itself if it
 * is in the range and free, else the first free one from a place that
 * the flow's hash picks, at most port_tries candidates. Free: no live
 * mapping has the outside key, and no forward uses it.
 */
static int
nat_pick_port(struct nat_state *st, struct nat_map *mp, uint16_t int_port,
	      uint32_t h, uint64_t now)
{
	const struct nat_range *r = &st->conf->range[nat_pidx(mp->proto)];
	uint32_t size = (uint32_t)r->hi - r->lo + 1;
	uint32_t want = ntohs(int_port);
	struct sl_5tuple k;

	for (uint32_t i = 0; i < st->port_tries && i <= size; i++) {
		uint32_t cand;

		if (i == 0 && want >= r->lo && want <= r->hi)
			cand = want;
		else
			cand = r->lo + (h + i) % size;
		nat_key(&k, NAT_IN, mp->proto, mp->rem_addr, mp->rem_port,
			mp->ext_addr, htons((uint16_t)cand));
		if (nat_lookup(st, &k, now) != NULL)
			continue;
		if (mp->proto != IPPROTO_ICMP &&
		    nat_fwd_match(st->conf, nat_pidx(mp->proto), mp->ext_addr,
				  htons((uint16_t)cand)) != NULL)
			continue;
		mp->ext_port = htons((uint16_t)cand);
		return 0;
	}
	return -1;
}

struct nat_map *
nat_snat_new(struct nat_state *st, uint8_t proto, uint32_t src, uint16_t sport,
	     uint32_t dst, uint16_t dport, uint64_t now, enum nat_drop *why)
{
	struct sl_5tuple k;
	struct nat_map *mp;
	uint32_t h;

	mp = nat_alloc(st);
	if (mp == NULL) {
		*why = NAT_D_TABLE_FULL;
		return NULL;
	}
	mp->proto = proto;
	mp->int_addr = src;
	mp->int_port = sport;
	mp->rem_addr = dst;
	mp->rem_port = dport;
	mp->timer = (uint8_t)nat_first_timer(proto);
	mp->orig = NAT_OUT;
	mp->hairpin = (uint8_t)nat_is_ours(st->conf, dst);
	/* One inside host, one outside address (RFC 4787 REQ-2). */
	mp->ext_addr = st->conf->pool[rte_hash_crc_4byte(src, 0x9e3779b9u) %
				      st->conf->n_pool];
	nat_key(&k, NAT_OUT, proto, src, sport, dst, dport);
	h = sl_5tuple_hash(&k);
	if (nat_pick_port(st, mp, sport, h, now) != 0) {
		nat_release(st, mp);
		*why = NAT_D_NO_PORT;
		return NULL;
	}
	if (nat_insert(st, mp, now) != 0) {
		nat_release(st, mp);
		*why = NAT_D_TABLE_FULL;
		return NULL;
	}
	return mp;
}

struct nat_map *
nat_dnat_new(struct nat_state *st, uint8_t proto, uint32_t src, uint16_t sport,
	     uint32_t dst, uint16_t dport, uint64_t now, enum nat_drop *why)
{
	const struct nat_fwd *f = NULL;
	struct nat_map *mp;

	if (proto != IPPROTO_ICMP)
		f = nat_fwd_match(st->conf, nat_pidx(proto), dst, dport);
	if (f == NULL) {
		*why = NAT_D_NO_MAPPING;
		return NULL;
	}
	mp = nat_alloc(st);
	if (mp == NULL) {
		*why = NAT_D_TABLE_FULL;
		return NULL;
	}
	mp->proto = proto;
	mp->int_addr = f->int_addr;
	mp->int_port = f->int_port;
	mp->ext_addr = dst;
	mp->ext_port = dport;
	mp->rem_addr = src;
	mp->rem_port = sport;
	mp->timer = (uint8_t)nat_first_timer(proto);
	mp->orig = NAT_IN;
	mp->hairpin = (uint8_t)nat_is_ours(st->conf, src);
	if (nat_insert(st, mp, now) != 0) {
		nat_release(st, mp);
		*why = NAT_D_TABLE_FULL;
		return NULL;
	}
	return mp;
}

void
nat_sweep(struct nat_state *st, uint64_t now, uint32_t budget)
{
	for (uint32_t i = 0; i < budget && i < st->max_maps; i++) {
		struct nat_map *mp = &st->maps[st->sweep_pos];

		if (mp->used && mp->expire_ns <= now)
			nat_remove(st, mp);
		if (++st->sweep_pos == st->max_maps)
			st->sweep_pos = 0;
	}
}
