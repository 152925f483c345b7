/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice: helpers for NF code (sluice/nf.h, "helpers for NF code"): an
 * NF-private rte_hash with per-position state, numeric options, the
 * counters line and reading a configuration file. They use only the public NF API, so that the NF unit tests
 * can link this file beside their libsluice stand-in (tests/unit/nf_stub.c).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_memory.h>
#include <rte_ring.h>

#include "sluice/nf.h"

#define SL_TABLE_MIN_ENTRIES 16 /* rte_hash wants at least a bucket */
#define SL_NS 1000000000.0

static uint32_t
table_hash(const void *key, uint32_t len, uint32_t init)
{
	return rte_hash_crc(key, len, init);
}

_Static_assert(sizeof("HT_EXT_") - 1 + SL_NF_TABLE_TAG_MAX + 7 + 1 + 4 <=
		       RTE_RING_NAMESIZE - 1,
	       "SL_NF_TABLE_TAG_MAX no longer fits DPDK's ring names");

int
sl_nf_table_create(struct sl_nf *nf, const struct sl_nf_table_spec *spec,
		   struct rte_hash **h, void **slots, uint32_t *n_slots)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters p = {
		.name = name,
		.entries = spec->entries < SL_TABLE_MIN_ENTRIES
				   ? SL_TABLE_MIN_ENTRIES
				   : spec->entries,
		.key_len = spec->key_len,
		.hash_func = table_hash,
		.socket_id = SOCKET_ID_ANY,
		.extra_flag = RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
	};
	struct rte_hash *old;
	int32_t max_id;
	uint32_t n;
	void *s;

	/* A longer tag used to fail only for the second instance, whose cut
	 * ring name clashed with the first's (EEXIST, blamed on memory). */
	if (spec->tag == NULL || spec->tag[0] == '\0' ||
	    strlen(spec->tag) > SL_NF_TABLE_TAG_MAX) {
		fprintf(stderr,
			"%s: the %s table's tag '%s' is not 1 to %d characters: "
			"DPDK keeps 28 of the names rte_hash makes from it "
			"(HT_EXT_<tag><pid>_<instance>); use a shorter "
			"sl_nf_table_spec.tag\n",
			spec->prog, spec->what, spec->tag ? spec->tag : "",
			SL_NF_TABLE_TAG_MAX);
		*h = NULL;
		return EINVAL;
	}
	snprintf(name, sizeof(name), "%s%d_%u", spec->tag, (int)getpid(),
		 sl_nf_instance(nf));
	/* Our pid is in the name: one left over is from a dead process. */
	old = rte_hash_find_existing(name);
	if (old != NULL)
		rte_hash_free(old);
	*h = rte_hash_create(&p);
	if (*h == NULL) {
		int err = rte_errno;
		uint64_t mb =
			((uint64_t)p.entries * spec->bytes_per_key >> 20) + 1;

		fprintf(stderr,
			"%s: cannot create a %s table of %" PRIu32 " %s (about "
			"%" PRIu64 " MB of the hugepage memory sluiced sets "
			"aside with --nf-mem): %s\n",
			spec->prog, spec->what, spec->entries, spec->whats, mb,
			rte_strerror(err));
		return err ? err : ENOMEM;
	}
	if (spec->slot_size == 0)
		return 0;
	max_id = rte_hash_max_key_id(*h);
	n = max_id < 0 ? 0 : (uint32_t)max_id + 1;
	s = n == 0 ? NULL : calloc(n, spec->slot_size);
	if (s == NULL) {
		fprintf(stderr, "%s: out of memory\n", spec->prog);
		rte_hash_free(*h);
		*h = NULL;
		return ENOMEM;
	}
	*slots = s;
	if (n_slots != NULL)
		*n_slots = n;
	return 0;
}

int
sl_parse_number(const char *s, double min, double max, int frac, double *out)
{
	const char *c = s[0] == '-' ? s + 1 : s;
	int dots = 0, digits = 0;
	char *end;
	double v;

	/* Plain decimal only: strtod also takes blanks, '+', hex, exponents
	 * and "inf", none of which a user means in an option. */
	for (; *c != '\0'; c++) {
		if (*c == '.')
			dots++;
		else if (isdigit((unsigned char)*c))
			digits++;
		else
			return -EINVAL; /* NF API: -errno */
	}
	if (digits == 0 || dots > 1 || (!frac && dots != 0))
		return -EINVAL; /* NF API: -errno */
	errno = 0;
	v = strtod(s, &end);
	if (*end != '\0' || errno != 0 || !isfinite(v) || v < min || v > max ||
	    (!frac && v != (double)(uint64_t)v))
		return -EINVAL; /* NF API: -errno */
	*out = v;
	return 0;
}

int
sl_opt_number(const char *prog, const char *opt, const char *s, double min,
	      double max, int frac, double *out)
{
	if (sl_parse_number(s, min, max, frac, out) == 0)
		return 0;
	fprintf(stderr, "%s: %s: '%s' is not a %s from %.0f to %.0f\n", prog,
		opt, s, frac ? "number" : "whole number", min, max);
	return EINVAL;
}

void
sl_stats_line_start(struct sl_stats_line *l, uint64_t every_ns, uint64_t now)
{
	l->start_ns = l->last_ns = now;
	l->every_ns = every_ns;
	l->next_ns = now + every_ns;
	l->last_pkts = 0;
}

int
sl_stats_line_due(struct sl_stats_line *l, uint64_t now)
{
	if (l->every_ns == 0 || now < l->next_ns)
		return 0;
	l->next_ns = now + l->every_ns;
	return 1;
}

void
sl_stats_line_head(struct sl_stats_line *l, char *buf, size_t size,
		   const char *tag, const char *reason, uint64_t now,
		   uint64_t pkts, uint64_t bytes)
{
	double up = (double)(now - l->start_ns) / SL_NS;
	double dt = (double)(now - l->last_ns) / SL_NS;
	double pps = dt > 0 ? (double)(pkts - l->last_pkts) / dt : 0;

	snprintf(buf, size,
		 "%s-stats: reason=%s uptime=%.1f packets=%" PRIu64
		 " bytes=%" PRIu64 " pps=%.0f",
		 tag, reason, up, pkts, bytes, pps);
	l->last_ns = now;
	l->last_pkts = pkts;
}

int
sl_read_file(const char *path, size_t max, char **text, size_t *len, char *err,
	     size_t err_size)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	int rc;

	*text = NULL;
	*len = 0;
	if (f == NULL) {
		rc = errno;
		snprintf(err, err_size, "%s: cannot open: %s", path,
			 strerror(errno));
		return rc;
	}
	buf = malloc(max + 1);
	if (buf == NULL) {
		fclose(f);
		snprintf(err, err_size, "%s: out of memory", path);
		return ENOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	rc = ferror(f) ? EIO : 0;
	fclose(f);
	if (rc != 0) {
		snprintf(err, err_size, "%s: read error", path);
	} else if (n > max) {
		snprintf(err, err_size, "%s: larger than %zu bytes", path, max);
		rc = EFBIG;
	}
	if (rc != 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}
