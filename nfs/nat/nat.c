/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat: stateful source NAT of an inside network behind a pool of
 * outside addresses, with port forwards, for TCP, UDP and ICMP echo, and
 * the ICMP errors about them. Packets from the --inside port have their
 * source translated, those from the --outside port their destination;
 * each leaves by the other port (or follows the chain with --send next).
 * The configuration (pool, port ranges, forwards) is a YAML file
 * (nat_conf.c), re-read on SIGHUP: a bad file keeps the running one, and
 * existing mappings are kept either way. Mappings: nat_table.c; packet
 * rewriting: nat_xlate.c; everything is described in README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include "nat.h"

#define NAT_TICK_MS 100
#define NAT_MS 1000000ull
#define NAT_S 1000000000ull
#define NAT_SWEEP_S 2 /* every mapping is looked at within this */
#define NAT_ERR_LEN 512

static const char *const nat_drop_names[NAT_D_MAX] = {
	"table_full", "no_port",   "no_mapping", "fragment",     "not_ipv4",
	"proto",      "malformed", "icmp_type",  "unknown_port",
};


/* The counters line; format documented in README.md. */
static void
nat_print(struct nat_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];
	uint64_t drops = 0;

	for (unsigned i = 0; i < NAT_D_MAX; i++)
		drops += st->cnt.drops[i];
	sl_stats_line_head(&st->line, head, sizeof(head), "nat", reason, now,
			   st->cnt.pkts, st->cnt.bytes);
	fprintf(stderr,
		"%s out=%" PRIu64 " in=%" PRIu64 " icmp_errors=%" PRIu64
		" mappings=%" PRIu32 " capacity=%" PRIu32 " created=%" PRIu64
		" expired=%" PRIu64 " dropped=%" PRIu64,
		head, st->cnt.xlated[NAT_OUT], st->cnt.xlated[NAT_IN],
		st->cnt.icmp_errors, nat_active(st), st->max_maps,
		st->cnt.created, st->cnt.expired, drops);
	for (unsigned i = 0; i < NAT_D_MAX; i++)
		fprintf(stderr, " drop_%s=%" PRIu64, nat_drop_names[i],
			st->cnt.drops[i]);
	fprintf(stderr, " cache_hits=%" PRIu64 " hairpins=%" PRIu64 "\n",
		st->cnt.cache_hits, st->cnt.hairpins);
	fflush(stderr);
}

/*
 * A hairpinned packet goes back by the port it came by, to the MAC
 * address it came from: the two addresses are swapped. Right when the
 * inside port leads to a router (or the sender is the destination);
 * NAT keeps no neighbour table for the hosts behind it.
 */
static void
nat_hairpin_l2(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = sl_pkt_eth(m);
	struct rte_ether_addr a;

	if (eth == NULL)
		return;
	a = eth->dst_addr;
	eth->dst_addr = eth->src_addr;
	eth->src_addr = a;
}

static void
nat_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct nat_state *st = sl_nf_priv(nf);
	uint64_t now = sl_now_ns();
	sl_verdict_t to[2];

	to[NAT_OUT] = st->next ? SL_NEXT : SL_OUT(st->out_port);
	to[NAT_IN] = st->next ? SL_NEXT : SL_OUT(st->in_port);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint16_t port = sl_pkt_in_port(m);
		int rc = NAT_D_UNKNOWN_PORT;
		enum nat_dir dir = NAT_OUT;

		st->cnt.pkts++;
		st->cnt.bytes += rte_pktmbuf_pkt_len(m);
		if (port == (uint16_t)st->in_port || port == st->out_port) {
			dir = port == (uint16_t)st->in_port ? NAT_OUT : NAT_IN;
			rc = nat_xlate(st, m, dir, now);
		}
		if (rc < NAT_D_MAX) {
			st->cnt.drops[rc]++;
			sl_pkt_set_verdict(m, SL_DROP);
			continue;
		}
		st->cnt.xlated[dir]++;
		if (rc == NAT_HAIRPIN) {
			nat_hairpin_l2(m);
			sl_pkt_set_verdict(m, to[NAT_IN]);
			continue;
		}
		sl_pkt_set_verdict(m, to[dir]);
	}
}

static void
nat_tick(struct sl_nf *nf, uint64_t now_ns)
{
	struct nat_state *st = sl_nf_priv(nf);
	uint32_t budget = (uint32_t)((uint64_t)st->max_maps * NAT_TICK_MS /
				     (NAT_SWEEP_S * 1000)) +
			  1;

	nat_sweep(st, now_ns, budget);
	if (sl_stats_line_due(&st->line, now_ns))
		nat_print(st, "interval", now_ns);
}

static void
nat_print_conf(const struct nat_state *st, const char *verb)
{
	const struct nat_conf *c = st->conf;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	struct in_addr ia;

	ia.s_addr = c->pool[0];
	inet_ntop(AF_INET, &ia, a, sizeof(a));
	ia.s_addr = c->pool[c->n_pool - 1];
	inet_ntop(AF_INET, &ia, b, sizeof(b));
	fprintf(stderr,
		NAT_PROG ": %s %s: %" PRIu32 " pool address%s (%s .. %s), "
			 "ports tcp %u-%u udp %u-%u icmp %u-%u, %" PRIu32
			 " forward%s\n",
		verb, st->conf_path, c->n_pool, c->n_pool == 1 ? "" : "es", a,
		b, c->range[NAT_TCP].lo, c->range[NAT_TCP].hi,
		c->range[NAT_UDP].lo, c->range[NAT_UDP].hi,
		c->range[NAT_ICMP].lo, c->range[NAT_ICMP].hi, c->n_fwd,
		c->n_fwd == 1 ? "" : "s");
	for (uint32_t i = 0; i < c->n_fwd; i++) {
		const struct nat_fwd *f = &c->fwd[i];

		ia.s_addr = f->ext_addr;
		inet_ntop(AF_INET, &ia, a, sizeof(a));
		ia.s_addr = f->int_addr;
		inet_ntop(AF_INET, &ia, b, sizeof(b));
		fprintf(stderr,
			NAT_PROG ":   forward %" PRIu32 ": %s %s:%u -> %s:%u\n",
			i + 1, nat_proto_name(f->proto), a, ntohs(f->ext_port),
			b, ntohs(f->int_port));
	}
	fflush(stderr);
}

/* SIGHUP: the new file replaces the configuration only if it is valid;
 * mappings stay either way (they hold their own addresses). */
static void
nat_reload(struct sl_nf *nf)
{
	struct nat_state *st = sl_nf_priv(nf);
	char err[NAT_ERR_LEN];
	struct nat_conf *c = NULL;

	nat_print(st, "reload", sl_now_ns());
	if (nat_conf_load(st->conf_path, &c, err, sizeof(err)) != 0) {
		fprintf(stderr,
			NAT_PROG ": reload failed, keeping the current "
				 "configuration (%" PRIu32 " pool address%s, "
				 "%" PRIu32 " forward%s) and the %" PRIu32
				 " mappings: %s\n",
			st->conf->n_pool, st->conf->n_pool == 1 ? "" : "es",
			st->conf->n_fwd, st->conf->n_fwd == 1 ? "" : "s",
			nat_active(st), err);
		fflush(stderr);
		return;
	}
	nat_conf_free(st->conf);
	st->conf = c;
	nat_print_conf(st, "reloaded");
}

static void
nat_message(struct sl_nf *nf, const char *key, const char *value)
{
	struct nat_state *st = sl_nf_priv(nf);

	if (strcmp(key, "stats") == 0) {
		nat_print(st, "message", sl_now_ns());
		return;
	}
	fprintf(stderr, "nat-message: key=%s value=%s ignored (keys: stats)\n",
		key, value);
	fflush(stderr);
}

static void
nat_state_free(struct nat_state *st)
{
	nat_table_free(st);
	nat_conf_free(st->conf);
	st->conf = NULL;
}

static int
nat_init(struct sl_nf *nf, int argc, char **argv)
{
	struct nat_state *st = sl_nf_priv(nf);
	char err[NAT_ERR_LEN];
	int rc;

	(void)argc;
	(void)argv;
	if (st->conf_path == NULL || st->in_port < 0 || st->out_port < 0) {
		fprintf(stderr, NAT_PROG ": missing %s\n",
			st->conf_path == NULL ? "--config FILE"
			: st->in_port < 0     ? "--inside PORT"
					      : "--outside PORT");
		return EINVAL;
	}
	if (st->in_port == st->out_port) {
		fprintf(stderr,
			NAT_PROG ": --inside and --outside are the same port: "
				 "give the two ports NAT is between\n");
		return EINVAL;
	}
	for (unsigned i = 0; i < NAT_T_MAX; i++)
		st->timeout_ns[i] = st->timeout_s[i] * NAT_S;
	rc = nat_conf_load(st->conf_path, &st->conf, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, NAT_PROG ": %s\n", err);
		return rc == -ENOMEM ? ENOMEM : EINVAL;
	}
	rc = nat_table_init(nf, st);
	if (rc != 0) {
		nat_state_free(st);
		return rc;
	}
	sl_stats_line_start(&st->line, st->stats_ms * NAT_MS, sl_now_ns());
	nat_print_conf(st, "loaded");
	return 0;
}

static void
nat_fini(struct sl_nf *nf)
{
	struct nat_state *st = sl_nf_priv(nf);

	if (st == NULL)
		return;
	nat_print(st, "exit", sl_now_ns());
	nat_state_free(st);
	sl_nf_set_priv(nf, NULL);
}

static const char nat_usage[] = "usage: " NAT_PROG
				" [EAL args] -- [libsluice args] --config FILE"
				" --inside PORT --outside PORT [options]\n";

static const char *const nat_sends[] = {"out", "next", NULL};

static const struct sl_nf_opt nat_opts[] = {
	{.name = "config",
	 .letter = 'c',
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "pool, port ranges and forwards, YAML (nfs/nat/README.md)",
	 SL_OPT_AT(struct nat_state, conf_path)},
	{.name = "inside",
	 .type = SL_OPT_PORT,
	 .arg = "PORT",
	 .help = "the port of the inside network (sources translated)",
	 SL_OPT_AT(struct nat_state, in_port)},
	{.name = "outside",
	 .type = SL_OPT_PORT,
	 .arg = "PORT",
	 .help = "the port of the outside network (destinations translated)",
	 SL_OPT_AT(struct nat_state, out_port)},
	{.name = "send",
	 .type = SL_OPT_CHOICE,
	 .arg = "HOW",
	 .help = "out: a translated packet leaves by the other port "
		 "(default);\nnext: it follows the chain's default edge",
	 SL_OPT_AT(struct nat_state, next),
	 .choices = nat_sends,
	 .what = "out or next"},
	{.name = "mappings",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "the most mappings at once (default 65536)",
	 SL_OPT_AT(struct nat_state, max_maps),
	 .min = 16,
	 .max = 8388608,
	 .def = "65536"},
	{.name = "port-tries",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "outside ports tried for a new mapping (default 128)",
	 SL_OPT_AT(struct nat_state, port_tries),
	 .min = 1,
	 .max = 65536,
	 .def = "128"},
	{.name = "tcp-syn-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "TCP mapping until the other side answers (seconds, default 60)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_TCP_SYN]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "60"},
	{.name = "tcp-est-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "TCP mapping, established, idle (seconds, default 7440)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_TCP_EST]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "7440"},
	{.name = "tcp-fin-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "TCP mapping after a FIN (seconds, default 120)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_TCP_FIN]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "120"},
	{.name = "tcp-rst-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "TCP mapping after an RST (seconds, default 10)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_TCP_RST]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "10"},
	{.name = "udp-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "UDP mapping, idle (seconds, default 300)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_UDP]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "300"},
	{.name = "icmp-timeout",
	 .type = SL_OPT_NUMBER,
	 .arg = "S",
	 .help = "ICMP echo mapping, idle (seconds, default 60)",
	 SL_OPT_AT(struct nat_state, timeout_s[NAT_T_ICMP]),
	 .min = 1,
	 .max = 864000,
	 .what = "number of seconds",
	 .def = "60"},
	{.name = "fragments",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "fragmented datagrams followed at once (default 4096)",
	 SL_OPT_AT(struct nat_state, n_frags),
	 .min = 16,
	 .max = 1048576,
	 .def = "4096"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS ms (default 0: at exit, on "
		 "SIGHUP\nand on a 'stats' message only)",
	 SL_OPT_AT(struct nat_state, stats_ms),
	 .max = 86400000,
	 .def = "0"},
	{.name = NULL},
};

static const struct sl_nf_ops nat_ops = {
	.name = NAT_PROG,
	.service = "nat",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = nat_init,
	.process = nat_process,
	.tick = nat_tick,
	.tick_ms = NAT_TICK_MS,
	.reload = nat_reload,
	.on_message = nat_message,
	.fini = nat_fini,
	.usage = nat_usage,
	.opts = nat_opts,
	.priv_size = sizeof(struct nat_state),
	.opts_help_col = 24,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&nat_ops, argc, argv);
}
