/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's options: one table (name, type, range, default, help, field)
 * and the code it drives. Every message a bad value gets is the one
 * docs/sluiced.md states; tests/integration/test_sluiced_doc.py and
 * tests/unit/test_mgr_options.c hold them to it.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sl_chain.h"
#include "options.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#define FIELD(f)                                                               \
	.off = offsetof(struct sl_mgr_opts, f),                                \
	.size = sizeof(((struct sl_mgr_opts *)0)->f)

/* A number option: --NAME ARG in LO..HI, default DEF, into field F. */
#define NUM(n, a, f, lo, hi, d, h)                                             \
	.name = n, .arg = a, .type = MGR_OPT_NUM, FIELD(f), .min = lo,         \
	.max = hi, .def = d, .help = h

#define CHOICE(n, f, w, d, h)                                                  \
	.name = n, .type = MGR_OPT_CHOICE, FIELD(f), .words = w, .def = d,     \
	.help = h

static const char *const mode_words[] = {"shared", "poll", NULL};
static const char *const handoff_words[] = {"direct", "mgr", NULL};
static const char *const lookup_words[] = {"off", "cached", "naive", NULL};

static int set_name(const struct sl_mgr_opt *d, struct sl_mgr_opts *o,
		    const char *v, char *err, size_t errlen);
static int set_port(const struct sl_mgr_opt *d, struct sl_mgr_opts *o,
		    const char *v, char *err, size_t errlen);
static int set_chain(const struct sl_mgr_opt *d, struct sl_mgr_opts *o,
		     const char *v, char *err, size_t errlen);
static int set_socket(const struct sl_mgr_opt *d, struct sl_mgr_opts *o,
		      const char *v, char *err, size_t errlen);
static int check_pow2(const struct sl_mgr_opt *d, struct sl_mgr_opts *o,
		      const char *v, char *err, size_t errlen);

/* In --help order. The word index of a choice is its enum value
 * (enum sl_nf_mode, o->handoff, enum sl_flow_lookup). */
const struct sl_mgr_opt mgr_mgr_opt_table[] = {
	{.name = "name",
	 .arg = "NAME",
	 .type = MGR_OPT_TEXT,
	 FIELD(name),
	 .def_str = "sluice",
	 .pre = "default ",
	 .help = "node name: socket, file prefix",
	 .set = set_name},
	{.name = "port",
	 .arg = "NAME=DEVICE",
	 .type = MGR_OPT_TEXT,
	 FIELD(ports),
	 .pre = "repeat",
	 .repeat = 1,
	 .help = "a port, e.g. in=net_pcap0,rx_pcap=a.pcap",
	 .set = set_port},
	{.name = "chain",
	 .arg = "HOPS",
	 .type = MGR_OPT_TEXT,
	 FIELD(chain),
	 .help = "default chain, e.g. firewall,monitor,port:out",
	 .set = set_chain},
	{CHOICE("mode", mode, mode_words, SL_MODE_SHARED,
		"sluiced's I/O threads yield/sleep when idle, or busy poll")},
	{CHOICE("handoff", handoff, handoff_words, 0,
		"NF->NF: enqueue straight into the next NF, or via the I/O "
		"thread")},
	{.name = "socket",
	 .arg = "PATH",
	 .type = MGR_OPT_TEXT,
	 FIELD(socket_path),
	 .def_text = "/var/run/sluice/NAME.sock",
	 .help = "control socket",
	 .set = set_socket},
	{NUM("max-nfs", "N", max_nfs, 1, 4096, 128, "NF instances")},
	{NUM("max-services", "N", max_services, 1, 4096, 64, "services")},
	{NUM("ring-size", "N", ring_size, 64, 1u << 20, 4096,
	     "NF rx/tx ring entries, power of 2"),
	 .set = check_pow2},
	{NUM("mbufs", "N", mbufs, 1024, 1u << 24, 65535,
	     "packet buffers per pool")},
	{NUM("mbuf-cache", "N", mbuf_cache, 0, 512, 256,
	     "per-lcore pool cache")},
	{NUM("burst", "N", burst, 1, SL_BURST_MAX, 32,
	     "packets per burst taken from a ring and handed on, <= " STR(
		     SL_BURST_MAX))},
	/* Port reads: one call for up to 64 amortizes the poll (the driver
	 * call, the first hop's ring head and tail lines, the wake check)
	 * over twice the packets; NF rings stay at --burst, where 64 does
	 * not help a chain of NFs in shared mode (see docs/performance.md,
	 * port path, "Choices these measurements made", session 19). */
	{NUM("rx-burst", "N", rx_burst, 1, SL_BURST_MAX, 64,
	     "packets read from a port in one call, <= " STR(SL_BURST_MAX))},
	{NUM("backpressure-us", "N", backpressure_us, 0, 10000000, 100000,
	     "how long a full next hop is waited for before dropping")},
	{NUM("idle-sleep-us", "N", idle_sleep_us, 0, 10000000, 1000,
	     "idle time before a shared-mode thread sleeps")},
	{NUM("tx-retry-us", "N", tx_retry_us, 0, 10000000, 1000,
	     "how long a full port TX queue is retried")},
	{NUM("nf-hang-ms", "N", nf_hang_ms, 0, 3600u * 1000, 1000,
	     "an NF that is not asleep and has not looped for N ms is hung: "
	     "it is killed, so that its death frees what it holds"),
	 .post = "; 0: never"},
	{NUM("scale-register-ms", "N", scale_register_ms, 1, 3600u * 1000,
	     30000,
	     "a replica nf.scale started that has not registered within N ms "
	     "is stopped")},
	{NUM("scale-kill-ms", "N", scale_kill_ms, 1, 3600u * 1000, 5000,
	     "and killed if still there N ms after SIGTERM")},
	{NUM("rxd", "N", rxd, 32, 32768, 1024, "port descriptors per queue")},
	{NUM("txd", "N", txd, 32, 32768, 1024, "port descriptors per queue"),
	 .same_line = 1},
	{NUM("nf-mem", "MB", nf_mem_mb, 0, 1u << 20, 256,
	     "hugepage memory set aside for NFs' own tables")},
	/* NFs transmit on their own TX queues by default, so that the I/O
	 * thread, the port path's bottleneck, only reads ports (see
	 * docs/performance.md, port path, "Choices these measurements
	 * made", session 14). */
	{NUM("nf-tx-queues", "N", nf_txq, 0, 1023, 4,
	     "per port, TX queues NFs transmit on directly"),
	 .post = "; 0: all TX through sluiced's TX thread"},
	{NUM("nf-mbuf-cache", "0|1", nf_cache, 0, 1, 1,
	     "give each NF a packet-buffer cache of its own, returned to the "
	     "pool when the NF is gone")},
	{CHOICE("flow-lookup", flow_lookup, lookup_words, SL_LOOKUP_CACHED,
		"flow director: none (every packet takes the default graph), "
		"once at ingress cached in the packet, or again at every hop")},
	{NUM("flow-capacity", "N", flow_capacity, 64, 1u << 26, 1u << 18,
	     "flow-table entries")},
	/* 0 until the options are read, then derived (finish) */
	{NUM("flow-capacity-v6", "N", flow_capacity6, 64, 1u << 26, 0,
	     "of which IPv6 flows"),
	 .pre = "their own table; ",
	 .def_text = "a quarter of --flow-capacity"},
	{NUM("flow-timeout", "MS", flow_timeout_ms, 1, 24u * 3600 * 1000, 30000,
	     "idle flows age out after MS")},
	{NUM("flow-pins", "N", flow_pins, 0, 64, 4,
	     "pinned instances per flow")},
	{NUM("flow-overrides", "N", flow_ovr, 0, 64, 2,
	     "cross-layer overrides per flow")},
	{NUM("max-graphs", "N", max_graphs, 1, 200, 64, "service graphs")},
	{NUM("max-hops", "N", max_hops, 1, SL_MAX_HOPS, SL_MAX_HOPS,
	     "NF visits a port's packet may make; one more is dropped as "
	     "hop_limit: ends loops")},
	{NUM("max-rules", "N", max_rules, 1, 1u << 20, 4096, "flow rules")},
	{NUM("max-wildcards", "N", max_wild, 0, 4096, 64,
	     "wildcard cross-layer requests")},
	{NUM("control-conns", "N", ctl_conns, 1, 4096, 64,
	     "control-socket connections at once")},
	{NUM("control-out-kb", "N", ctl_out_kb, 4, 1u << 20, 4096,
	     "replies and events a control connection may leave unread; past "
	     "it sluiced closes it")},
	{NUM("control-line-kb", "N", ctl_line_kb, 1, 1u << 20, 1024,
	     "longest request line; a longer one is refused and its "
	     "connection closed")},
};

#define N_OPTS (sizeof(mgr_mgr_opt_table) / sizeof(mgr_mgr_opt_table[0]))

const size_t mgr_mgr_opt_count = N_OPTS;

/* getopt_long values: 256 + the table index, then these. */
#define OPT_BASE 256
#define OPT_HELP (OPT_BASE + 1000)
#define OPT_DEFAULTS_JSON (OPT_BASE + 1001)

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return EINVAL;
}

static void *
field(const struct sl_mgr_opt *d, struct sl_mgr_opts *o)
{
	return (char *)o + d->off;
}

static void
store_u32(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, uint32_t v)
{
	if (d->size == sizeof(uint16_t))
		*(uint16_t *)field(d, o) = (uint16_t)v;
	else
		*(uint32_t *)field(d, o) = v;
}

/* ---- the options that are not a plain number or word ---------------- */

static int
set_name(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	 char *err, size_t errlen)
{
	(void)d;
	if (!sl_name_valid(v) || strlen(v) > SL_NODE_NAME_MAX)
		return fail(err, errlen,
			    "--name '%s' is not valid: 1-%d characters of "
			    "A-Z a-z 0-9 _ - .",
			    v, SL_NODE_NAME_MAX);
	snprintf(o->name, sizeof(o->name), "%s", v);
	return 0;
}

static int
set_port(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	 char *err, size_t errlen)
{
	const char *eq = strchr(v, '=');
	struct sl_port_opt *p;
	char name[SL_NAME_LEN];
	size_t nlen;

	(void)d;
	if (o->n_ports == SL_MAX_PORTS)
		return fail(err, errlen, "more than %d ports", SL_MAX_PORTS);
	if (eq == NULL || eq == v || eq[1] == '\0')
		return fail(err, errlen,
			    "--port '%s' must be NAME=DEVICE, e.g. "
			    "out=net_null0,no-rx=1",
			    v);
	nlen = (size_t)(eq - v);
	/* a name this long is not valid: copied whole only when it fits */
	snprintf(name, sizeof(name), "%.*s", (int)nlen, v);
	if (nlen >= sizeof(name) || !sl_name_valid(name))
		return fail(err, errlen,
			    "port name '%.*s' is not valid: 1-%d characters "
			    "of A-Z a-z 0-9 _ - .",
			    (int)nlen, v, SL_NAME_LEN - 1);
	p = &o->ports[o->n_ports];
	if (strlen(eq + 1) >= sizeof(p->device))
		return fail(err, errlen,
			    "--port %s: the device string is %zu characters, "
			    "more than %zu: shorten its paths or arguments",
			    name, strlen(eq + 1), sizeof(p->device) - 1);
	for (uint16_t i = 0; i < o->n_ports; i++)
		if (strcmp(o->ports[i].name, name) == 0)
			return fail(err, errlen,
				    "port name '%s' is given twice", name);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->device, sizeof(p->device), "%s", eq + 1);
	o->n_ports++;
	return 0;
}

/* Checked once the ports are up (main.c), as chain.set checks it. */
static int
set_chain(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	  char *err, size_t errlen)
{
	(void)d;
	(void)err;
	(void)errlen;
	o->chain = v;
	return 0;
}

static int
set_socket(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	   char *err, size_t errlen)
{
	(void)d;
	if (strlen(v) >= sizeof(o->socket_path))
		return fail(err, errlen,
			    "--socket path is longer than %zu characters",
			    sizeof(o->socket_path) - 1);
	snprintf(o->socket_path, sizeof(o->socket_path), "%s", v);
	return 0;
}

/* rte_ring sizes are powers of 2: the nearest two are named. */
static int
check_pow2(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	   char *err, size_t errlen)
{
	uint32_t x = *(uint32_t *)field(d, o);

	(void)v;
	if (x & (x - 1))
		return fail(err, errlen,
			    "--%s %u is not a power of 2: use %u or %u",
			    d->name, x, 1u << (31 - __builtin_clz(x)),
			    1u << (32 - __builtin_clz(x)));
	return 0;
}

/* ---- generic parsing -------------------------------------------------- */

static int
parse_num(const struct sl_mgr_opt *d, const char *v, uint32_t *out, char *err,
	  size_t errlen)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	/* digits only: strtoul also takes blanks, a sign and "-1" (as
	 * ULONG_MAX) */
	if (!isdigit((unsigned char)v[0]) || errno != 0 || *end != '\0' ||
	    x < d->min || x > d->max)
		return fail(err, errlen, "--%s '%s' is not a number in %u..%u",
			    d->name, v, d->min, d->max);
	*out = (uint32_t)x;
	return 0;
}

/* "shared or poll", "off, cached or naive" */
static void
words_text(const struct sl_mgr_opt *d, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; d->words[i] != NULL && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      i == 0                    ? ""
				      : d->words[i + 1] == NULL ? " or "
								: ", ",
				      d->words[i]);
}

static int
set_one(const struct sl_mgr_opt *d, struct sl_mgr_opts *o, const char *v,
	char *err, size_t errlen)
{
	char words[128];
	uint32_t x = 0;
	int rc;

	switch (d->type) {
	case MGR_OPT_NUM:
		rc = parse_num(d, v, &x, err, errlen);
		if (rc != 0)
			return rc;
		break;
	case MGR_OPT_CHOICE:
		while (d->words[x] != NULL && strcmp(d->words[x], v) != 0)
			x++;
		if (d->words[x] == NULL) {
			words_text(d, words, sizeof(words));
			return fail(err, errlen, "--%s '%s': use %s", d->name,
				    v, words);
		}
		break;
	case MGR_OPT_TEXT:
		return d->set(d, o, v, err, errlen);
	}
	store_u32(d, o, x);
	return d->set != NULL ? d->set(d, o, v, err, errlen) : 0;
}

void
mgr_mgr_opts_defaults(struct sl_mgr_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];

		if (d->type != MGR_OPT_TEXT)
			store_u32(d, o, d->def);
		else if (d->def_str != NULL)
			snprintf(field(d, o), d->size, "%s", d->def_str);
	}
}

/* Defaults that follow from other options, and the checks between them. */
static int
finish(struct sl_mgr_opts *o, char *err, size_t errlen)
{
	if (o->socket_path[0] == '\0')
		snprintf(o->socket_path, sizeof(o->socket_path),
			 "/var/run/sluice/%s.sock", o->name);
	/* IPv6 flows: their own table, a share of the whole. */
	if (o->flow_capacity6 > o->flow_capacity)
		return fail(err, errlen,
			    "--flow-capacity-v6 %u is more than "
			    "--flow-capacity %u: IPv6 flows are a share of all "
			    "flows; lower it or raise --flow-capacity",
			    o->flow_capacity6, o->flow_capacity);
	/* An NF waits up to --backpressure-us on a full next hop without
	 * looping: that is not a hang. */
	if (o->nf_hang_ms != 0 &&
	    (uint64_t)o->nf_hang_ms * 1000 <= o->backpressure_us)
		return fail(err, errlen,
			    "--nf-hang-ms %u is not longer than "
			    "--backpressure-us %u (an NF may wait that long on "
			    "a full next hop): raise it, or 0 to never call an "
			    "NF hung",
			    o->nf_hang_ms, o->backpressure_us);
	if (o->flow_capacity6 == 0) {
		uint32_t q = o->flow_capacity / 4;

		q = q < 64 ? 64 : q;
		o->flow_capacity6 = q < o->flow_capacity ? q : o->flow_capacity;
	}
	return 0;
}

int
mgr_mgr_opts_parse(struct sl_mgr_opts *o, int argc, char **argv,
		   enum sl_mgr_ask *ask, char *err, size_t errlen)
{
	struct option lo[N_OPTS + 3]; /* + help, defaults-json, end */
	size_t n = 0;
	int c, rc;

	for (; n < N_OPTS; n++)
		lo[n] = (struct option){mgr_mgr_opt_table[n].name,
					required_argument, NULL,
					OPT_BASE + (int)n};
	lo[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
	lo[n++] = (struct option){"defaults-json", no_argument, NULL,
				  OPT_DEFAULTS_JSON};
	lo[n] = (struct option){NULL, 0, NULL, 0};

	*ask = SL_ASK_RUN;
	mgr_mgr_opts_defaults(o);
	optind = 0; /* GNU getopt: start afresh (argv[0] is skipped) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (c == 'h' || c == OPT_HELP) {
			*ask = SL_ASK_HELP;
			return 0;
		}
		if (c == OPT_DEFAULTS_JSON) {
			*ask = SL_ASK_DEFAULTS_JSON;
			return 0;
		}
		if (c < OPT_BASE || c >= OPT_BASE + (int)mgr_mgr_opt_count)
			return fail(err, errlen,
				    "unknown option '%s' (EAL options go "
				    "before '--'; see sluiced -- --help)",
				    argv[optind - 1]);
		rc = set_one(&mgr_mgr_opt_table[c - OPT_BASE], o, optarg, err,
			     errlen);
		if (rc != 0)
			return rc;
	}
	if (optind < argc)
		return fail(err, errlen, "unexpected argument '%s'",
			    argv[optind]);
	return finish(o, err, errlen);
}

/* ---- --help and --defaults-json ---------------------------------------- */

/* The default as --help states it, into buf; NULL when there is none. */
static const char *
default_text(const struct sl_mgr_opt *d, char *buf, size_t len)
{
	if (d->def_text != NULL)
		return d->def_text;
	switch (d->type) {
	case MGR_OPT_NUM:
		snprintf(buf, len, "%u", d->def);
		return buf;
	case MGR_OPT_CHOICE:
		return d->words[d->def];
	case MGR_OPT_TEXT:
		break;
	}
	return d->def_str;
}

/* "--mode shared|poll", "--max-nfs N" */
static void
name_arg(const struct sl_mgr_opt *d, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "--%s ", d->name);

	if (d->arg != NULL) {
		snprintf(buf + n, len - n, "%s", d->arg);
		return;
	}
	for (uint32_t i = 0; d->words[i] != NULL && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      i == 0 ? "" : "|", d->words[i]);
}

void
mgr_mgr_opts_usage(FILE *f)
{
	fputs("usage: sluiced [EAL args] -- [options]\n"
	      "EAL args: DPDK's own (-l, --lcores, --vdev, --file-prefix, "
	      "...; DPDK's EAL parameters guide); sluiced adds --file-prefix, "
	      "--no-pci, --log-level, --base-virtaddr and --socket-mem when "
	      "they are not given (docs/sluiced.md)\n"
	      "options (-h, --help: this text):\n",
	      f);
	for (size_t i = 0; i < mgr_mgr_opt_count; i++) {
		const struct sl_mgr_opt *d = &mgr_mgr_opt_table[i];
		char left[96], num[16];
		const char *def = default_text(d, num, sizeof(num));
		size_t n;

		if (d->same_line)
			continue;
		name_arg(d, left, sizeof(left));
		if (i + 1 < mgr_mgr_opt_count &&
		    mgr_mgr_opt_table[i + 1].same_line) {
			n = strlen(left);
			snprintf(left + n, sizeof(left) - n, " / ");
			n = strlen(left);
			name_arg(&mgr_mgr_opt_table[i + 1], left + n,
				 sizeof(left) - n);
		}
		fprintf(f, "  %-21s  %s", left, d->help);
		if (d->pre != NULL || def != NULL)
			fprintf(f, " (%s%s%s)", d->pre ? d->pre : "",
				def ? def : "", d->post ? d->post : "");
		fputc('\n', f);
	}
}

static const char *const type_names[] = {
	[MGR_OPT_NUM] = "number",
	[MGR_OPT_CHOICE] = "choice",
	[MGR_OPT_TEXT] = "text",
};

/* One option: {name, type, arg, default, default_text, min, max | values,
 * repeat, help}. */
static json_t *
opt_json(const struct sl_mgr_opt *d)
{
	char num[16], name[64];
	const char *shown = default_text(d, num, sizeof(num));
	json_t *j = json_object(), *def, *words;

	if (j == NULL)
		return NULL;
	if (d->type == MGR_OPT_NUM)
		def = d->def_text != NULL ? json_null() : json_integer(d->def);
	else if (d->type == MGR_OPT_CHOICE)
		def = json_string(d->words[d->def]);
	else
		def = d->def_str != NULL ? json_string(d->def_str)
					 : json_null();
	snprintf(name, sizeof(name), "--%s", d->name);
	json_object_set_new(j, "name", json_string(name));
	json_object_set_new(j, "type", json_string(type_names[d->type]));
	json_object_set_new(j, "default", def);
	json_object_set_new(j, "default_text",
			    shown != NULL ? json_string(shown) : json_null());
	if (d->type == MGR_OPT_NUM) {
		json_object_set_new(j, "min", json_integer(d->min));
		json_object_set_new(j, "max", json_integer(d->max));
	} else if (d->type == MGR_OPT_CHOICE) {
		words = json_array();
		for (uint32_t i = 0; d->words[i] != NULL; i++)
			json_array_append_new(words, json_string(d->words[i]));
		json_object_set_new(j, "values", words);
	}
	json_object_set_new(j, "repeat", json_boolean(d->repeat));
	json_object_set_new(j, "help", json_string(d->help));
	return j;
}

int
mgr_mgr_opts_json(FILE *f)
{
	json_t *all = json_object(), *opts = json_array();
	int rc = ENOMEM;

	if (all == NULL || opts == NULL)
		goto out;
	json_object_set_new(all, "program", json_string("sluiced"));
	json_object_set_new(all, "version", json_string(SL_VERSION));
	json_object_set(all, "options", opts);
	for (size_t i = 0; i < mgr_mgr_opt_count; i++)
		if (json_array_append_new(opts,
					  opt_json(&mgr_mgr_opt_table[i])) != 0)
			goto out;
	if (json_dumpf(all, f, JSON_INDENT(1)) == 0 && fputc('\n', f) != EOF)
		rc = 0;
out:
	json_decref(opts);
	json_decref(all);
	return rc;
}
