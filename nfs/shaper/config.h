/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-shaper's configuration: traffic classes (a 5-tuple match from
 * sl_match, a DSCP, or both), each with an rte_meter (srTCM, RFC 2697, or
 * trTCM, RFC 2698), per class or per flow, and what yellow and red
 * packets get (pass, drop or a new DSCP). Read from a JSON file
 * (README.md). No DPDK EAL dependency.
 */
#ifndef SL_SHAPER_CONFIG_H
#define SL_SHAPER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/match.h"

#define SH_NAME_LEN 32
#define SH_MAX_CLASSES 64
#define SH_NO_DSCP 0xff

enum sh_meter_kind {
	SH_SRTCM = 0, /* RFC 2697: cir, cbs, ebs */
	SH_TRTCM,     /* RFC 2698: cir, pir, cbs, pbs */
};

enum sh_act {
	SH_PASS = 0,
	SH_DROP,
	SH_REMARK, /* set the DSCP to the class's yellow_dscp / red_dscp */
};

/* Rates of a meter: bits per second in the file, bytes per second here
 * (what rte_meter takes); bursts in bytes. */
struct sh_rates {
	uint64_t cir, pir; /* bytes/s; pir only for trTCM */
	uint64_t cbs, ebs, pbs;
};

struct sh_class {
	char name[SH_NAME_LEN];
	struct sl_match match; /* the match-all if the file gave none */
	uint8_t dscp;          /* SH_NO_DSCP: any */
	uint8_t kind;          /* enum sh_meter_kind */
	uint8_t per_flow;      /* one meter per flow, else one per class */
	uint8_t act[3];        /* enum sh_act for green (always pass),
				  yellow and red */
	uint8_t mark[3];       /* the DSCP for SH_REMARK, by colour */
	struct sh_rates r;
};

struct sh_config {
	uint32_t n_classes;
	struct sh_class classes[SH_MAX_CLASSES];
};

/**
 * Parses the file: 0, or -errno with one line in err naming the file,
 * the class (from 1) or the line, and the problem, e.g.
 * "shaper.json: class 2: 'cir': 0 is not a rate from 8 to 100000000000
 * bits/s".
 */
int sh_config_load(const char *path, struct sh_config *cfg, char *err,
		   size_t err_size);

/** Parses "KEY=N ..." (cir, cbs, ebs, pir, pbs; rates in bits/s) into
 * rates r of a class of kind, checked as in the file. 0, or -EINVAL with
 * a message in err. */
int sh_rates_parse(const char *text, unsigned kind, struct sh_rates *r,
		   char *err, size_t err_size);

/** Formats a class's meter: "srtcm cir=8000000 cbs=10000 ebs=0" (rates
 * in bits/s). */
int sh_class_format(const struct sh_class *c, char *buf, size_t size);

/** "pass", "drop", "remark". */
const char *sh_act_name(unsigned act);

/** First class matching t with DSCP dscp, or -1. */
int sh_classify(const struct sh_config *cfg, const struct sl_5tuple *t,
		uint8_t dscp);

#endif /* SL_SHAPER_CONFIG_H */
