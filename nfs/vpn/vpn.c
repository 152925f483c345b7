/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-vpn: an IPsec gateway. Plain IPv4 that a policy of the SA file
 * selects is encrypted into its outbound SA's ESP tunnel (RFC 4303,
 * AES-GCM-16 of RFC 4106); ESP packets are looked up by SPI, checked
 * against the replay window, authenticated, decrypted and stripped. The
 * crypto is OpenSSL's EVP AES-GCM, called directly (README.md says why not
 * rte_ipsec with a cryptodev). Every refusal is dropped with its reason
 * counted. SIGHUP re-reads the SA file; a bad file keeps the old one, and
 * SAs the new file keeps unchanged keep their sequence numbers and replay
 * windows.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "esp.h"
#include "sa.h"

#define VPN_PROG "sluice-vpn"
#define VPN_MS 1000000ull
#define VPN_TICK_MS 100 /* how often --stats-ms is looked at */

enum vpn_unprotected {
	VPN_UNPROT_PASS = 0,
	VPN_UNPROT_DROP = 1,
};

/* The NF's state: its private context (options first). */
struct vpn_state {
	const char *sa_path;   /* --sa */
	uint32_t window;       /* --replay-window */
	uint32_t max_sas;      /* --max-sas */
	uint32_t max_policies; /* --max-policies */
	int unprotected;       /* --unprotected */
	uint64_t stats_ms;     /* --stats-ms */
	struct sl_nf *nf;      /* for sl_port_id() while loading */
	struct vpn_sad *sad;   /* the SAs and policies in use */
	struct sl_stats_line stats;
	uint64_t pkts, bytes; /* every packet seen */
	uint64_t encrypted, decrypted, bypass, non_ip;
	uint64_t drops[VPN_N_REASONS];
};

static int
vpn_port_of(void *arg, const char *name)
{
	return sl_port_id(arg, name);
}

static int
vpn_load(struct vpn_state *st, struct vpn_sad **out, char *err, size_t n)
{
	const struct vpn_limits lim = {.max_sas = st->max_sas,
				       .max_policies = st->max_policies,
				       .window = st->window};

	return vpn_sad_load(st->sa_path, &lim, vpn_port_of, st->nf, out, err,
			    n);
}

/* The plain packet as policies see it. */
struct vpn_plain {
	uint8_t family; /* 4 or 6 */
	uint8_t proto;  /* after IPv6 extension headers */
	uint8_t tos;    /* IPv4 TOS or IPv6 traffic class */
	uint32_t len;   /* the IP packet's length */
	uint32_t src, dst;
	const uint8_t *src6, *dst6;
};

static int
vpn_match6(const uint8_t *a, const uint8_t *want, const uint8_t *mask)
{
	for (int i = 0; i < 16; i++)
		if ((a[i] & mask[i]) != want[i])
			return 0;
	return 1;
}

/* First policy that takes the packet, or NULL. */
static const struct vpn_policy *
vpn_policy_find(struct vpn_sad *sad, const struct vpn_plain *x)
{
	for (uint32_t i = 0; i < sad->n_pols; i++) {
		struct vpn_policy *p = &sad->pols[i];

		if (p->family != 0 && p->family != x->family)
			continue;
		if (p->proto >= 0 && p->proto != x->proto)
			continue;
		if (x->family == 4
			    ? (x->src & p->src_mask) == p->src &&
				      (x->dst & p->dst_mask) == p->dst
			    : p->family == 0 || (vpn_match6(x->src6, p->src6,
							    p->src6_mask) &&
						 vpn_match6(x->dst6, p->dst6,
							    p->dst6_mask))) {
			p->pkts++;
			return p;
		}
	}
	return NULL;
}

/* What policies look at, from the IPv4 or IPv6 header; -1 if neither. */
static int
vpn_plain_of(struct rte_mbuf *m, const struct sl_pkt_info *info,
	     const struct rte_ipv4_hdr *ip, struct vpn_plain *x)
{
	const struct rte_ipv6_hdr *ip6;

	if (ip != NULL) {
		x->family = 4;
		x->proto = ip->next_proto_id;
		x->tos = ip->type_of_service;
		x->len = rte_be_to_cpu_16(ip->total_length);
		x->src = rte_be_to_cpu_32(ip->src_addr);
		x->dst = rte_be_to_cpu_32(ip->dst_addr);
		return 0;
	}
	ip6 = info->ip_version == 6 ? sl_pkt_ipv6(m, info) : NULL;
	if (ip6 == NULL)
		return -1;
	x->family = 6;
	x->proto = info->l4_proto;
	x->tos = (uint8_t)(rte_be_to_cpu_32(ip6->vtc_flow) >> 20);
	x->len = 40u + rte_be_to_cpu_16(ip6->payload_len);
	x->src6 = (const uint8_t *)&ip6->src_addr;
	x->dst6 = (const uint8_t *)&ip6->dst_addr;
	return 0;
}

static sl_verdict_t
vpn_drop(struct vpn_state *st, enum vpn_reason why)
{
	st->drops[why]++;
	return SL_DROP;
}

static sl_verdict_t
vpn_to(const struct vpn_sa *sa)
{
	return sa->port >= 0 ? SL_OUT((unsigned)sa->port) : SL_NEXT;
}

/* Plain IP: into the tunnel a policy names, or bypass / no_sa. */
static sl_verdict_t
vpn_outbound(struct vpn_state *st, struct rte_mbuf *m,
	     const struct sl_pkt_info *info, const struct rte_ipv4_hdr *ip)
{
	const struct vpn_policy *p = NULL;
	struct vpn_plain x = {0};
	struct vpn_sa *sa;
	enum vpn_reason why;

	if (vpn_plain_of(m, info, ip, &x) == 0)
		p = vpn_policy_find(st->sad, &x);
	if (p == NULL) {
		if (st->unprotected == VPN_UNPROT_DROP)
			return vpn_drop(st, VPN_D_NO_SA);
		st->bypass++;
		return SL_NEXT;
	}
	if (info->l3_off + x.len > rte_pktmbuf_pkt_len(m))
		return vpn_drop(st, VPN_D_MALFORMED); /* cut short */
	sa = &st->sad->sas[p->sa];
	why = vpn_esp_encap(sa, m, info->l3_off, x.len, x.tos,
			    x.family == 4 ? 4 : 41);
	if (why != VPN_OK)
		return vpn_drop(st, why);
	st->encrypted++;
	return vpn_to(sa);
}

static sl_verdict_t
vpn_pkt(struct sl_nf *nf, struct rte_mbuf *m)
{
	struct vpn_state *st = sl_nf_priv(nf);
	struct sl_pkt_info info;
	const struct rte_ipv4_hdr *ip;
	struct vpn_sa *sa;
	enum vpn_reason why;
	int rc;

	st->pkts++;
	st->bytes += rte_pktmbuf_pkt_len(m);
	rc = sl_pkt_parse(m, &info);
	if (rc == 0 && info.ip_version == 0) {
		st->non_ip++;
		return SL_NEXT;
	}
	ip = info.ip_version == 4 ? sl_pkt_ipv4(m, &info) : NULL;
	if (info.ip_version == 0 || (info.ip_version == 4 && ip == NULL))
		return vpn_drop(st, VPN_D_MALFORMED);
	if (ip == NULL || ip->next_proto_id != 50) /* not ESP */
		return vpn_outbound(st, m, &info, ip);
	why = vpn_esp_decap(st->sad, m, info.l3_off, &sa);
	if (why != VPN_OK)
		return vpn_drop(st, why);
	st->decrypted++;
	return vpn_to(sa);
}

/* The counters; format in README.md. */
static void
vpn_print(struct vpn_state *st, const char *reason, uint64_t now)
{
	char head[SL_STATS_HEAD_LEN];
	uint64_t dropped = 0;

	for (int i = 1; i < VPN_N_REASONS; i++)
		dropped += st->drops[i];
	sl_stats_line_head(&st->stats, head, sizeof(head), "vpn", reason, now,
			   st->pkts, st->bytes);
	fprintf(stderr,
		"%s encrypted=%" PRIu64 " decrypted=%" PRIu64 " bypass=%" PRIu64
		" non_ip=%" PRIu64 " dropped=%" PRIu64,
		head, st->encrypted, st->decrypted, st->bypass, st->non_ip,
		dropped);
	for (int i = 1; i < VPN_N_REASONS; i++)
		fprintf(stderr, " %s=%" PRIu64, vpn_reason_names[i],
			st->drops[i]);
	fputc('\n', stderr);
	for (uint32_t i = 0; i < st->sad->n_sas; i++) {
		const struct vpn_sa *sa = &st->sad->sas[i];

		fprintf(stderr,
			"vpn-sa: dir=%s spi=0x%" PRIx32
			" line=%u packets=%" PRIu64 " bytes=%" PRIu64
			" seq=%" PRIu64 "\n",
			sa->dir == VPN_OUT ? "out" : "in", sa->spi, sa->line,
			sa->cnt.pkts, sa->cnt.bytes, sa->seq);
	}
	for (uint32_t i = 0; i < st->sad->n_pols; i++) {
		const struct vpn_policy *p = &st->sad->pols[i];

		fprintf(stderr,
			"vpn-policy: line=%u sa=0x%" PRIx32 " packets=%" PRIu64
			"\n",
			p->line, st->sad->sas[p->sa].spi, p->pkts);
	}
	fflush(stderr);
}

static void
vpn_print_loaded(const struct vpn_state *st, const char *verb)
{
	const struct vpn_sad *sad = st->sad;

	fprintf(stderr,
		VPN_PROG ": %s %" PRIu32 " SAs (%" PRIu32 " in, %" PRIu32
			 " out) and %" PRIu32
			 " policies from %s, replay window %" PRIu32
			 ", unprotected traffic %s\n",
		verb, sad->n_sas, sad->n_in, sad->n_sas - sad->n_in,
		sad->n_pols, st->sa_path, sad->window,
		st->unprotected == VPN_UNPROT_DROP ? "dropped" : "passed");
	for (uint32_t i = 0; i < sad->n_sas; i++) {
		const struct vpn_sa *sa = &sad->sas[i];

		fprintf(stderr,
			VPN_PROG ":   sa %s spi 0x%" PRIx32
				 " local %u.%u.%u.%u remote %u.%u.%u.%u "
				 "aes%u-gcm16%s%s%s\n",
			sa->dir == VPN_OUT ? "out" : "in", sa->spi,
			sa->local >> 24, sa->local >> 16 & 255,
			sa->local >> 8 & 255, sa->local & 255, sa->remote >> 24,
			sa->remote >> 16 & 255, sa->remote >> 8 & 255,
			sa->remote & 255, sa->key_len * 8u,
			sa->esn ? " esn" : "", sa->port >= 0 ? " port " : "",
			sa->port >= 0 ? sa->port_name : "");
	}
	fflush(stderr);
}

static const char vpn_usage[] =
	"usage: " VPN_PROG " [EAL args] -- [libsluice args] --sa FILE"
	" [--replay-window N] [--unprotected pass|drop] [--max-sas N]"
	" [--max-policies N] [--stats-ms MS]\n";

static const char *const vpn_unprot_names[] = {"pass", "drop", NULL};

static const struct sl_nf_opt vpn_opts[] = {
	{.name = "sa",
	 .type = SL_OPT_FILE,
	 .arg = "FILE",
	 .help = "the SAs and policies (see nfs/vpn/README.md)",
	 SL_OPT_AT(struct vpn_state, sa_path)},
	{.name = "replay-window",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "anti-replay window in packets (default 128; 0: off)",
	 SL_OPT_AT(struct vpn_state, window),
	 .max = 4096, /* VPN_WINDOW_MAX */
	 .what = "number",
	 .def = "128"},
	{.name = "unprotected",
	 .type = SL_OPT_CHOICE,
	 .arg = "ACTION",
	 .help = "plain IP no policy takes: pass (pass it on, default) or "
		 "drop",
	 SL_OPT_AT(struct vpn_state, unprotected),
	 .choices = vpn_unprot_names,
	 .what = "pass or drop"},
	{.name = "max-sas",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "most SAs the file may have (default 256)",
	 SL_OPT_AT(struct vpn_state, max_sas),
	 .min = 1,
	 .max = 65536,
	 .what = "number",
	 .def = "256"},
	{.name = "max-policies",
	 .type = SL_OPT_NUMBER,
	 .arg = "N",
	 .help = "most policies the file may have (default 1024)",
	 SL_OPT_AT(struct vpn_state, max_policies),
	 .min = 1,
	 .max = 65536,
	 .what = "number",
	 .def = "1024"},
	{.name = "stats-ms",
	 .type = SL_OPT_NUMBER,
	 .arg = "MS",
	 .help = "print the counters every MS ms (default 0: at reload and "
		 "exit only)",
	 SL_OPT_AT(struct vpn_state, stats_ms),
	 .max = 86400000,
	 .what = "number of ms",
	 .def = "0"},
	{.name = NULL},
};

static int
vpn_init(struct sl_nf *nf, int argc, char **argv)
{
	struct vpn_state *st = sl_nf_priv(nf);
	char err[VPN_ERR_LEN];
	int rc;

	(void)argc;
	(void)argv;
	st->nf = nf;
	if (st->sa_path == NULL) {
		fprintf(stderr, VPN_PROG ": missing --sa FILE\n");
		fputs(vpn_usage, stderr);
		return EINVAL;
	}
	rc = vpn_load(st, &st->sad, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, VPN_PROG ": %s\n", err);
		return rc == ENOMEM ? ENOMEM : EINVAL;
	}
	sl_stats_line_start(&st->stats, st->stats_ms * VPN_MS, sl_now_ns());
	vpn_print_loaded(st, "loaded");
	return 0;
}

static void
vpn_reload(struct sl_nf *nf)
{
	struct vpn_state *st = sl_nf_priv(nf);
	struct vpn_sad *sad;
	char err[VPN_ERR_LEN];
	uint32_t kept;

	vpn_print(st, "reload", sl_now_ns());
	if (vpn_load(st, &sad, err, sizeof(err)) != 0) {
		fprintf(stderr,
			VPN_PROG ": reload failed, keeping the %" PRIu32
				 " current SAs and %" PRIu32 " policies: %s\n",
			st->sad->n_sas, st->sad->n_pols, err);
		fflush(stderr);
		return;
	}
	kept = vpn_sad_carry(sad, st->sad);
	vpn_sad_free(st->sad);
	st->sad = sad;
	vpn_print_loaded(st, "reloaded");
	fprintf(stderr,
		VPN_PROG ": %" PRIu32 " SAs kept their sequence numbers and "
			 "replay windows\n",
		kept);
	fflush(stderr);
}

static void
vpn_tick(struct sl_nf *nf, uint64_t now)
{
	struct vpn_state *st = sl_nf_priv(nf);

	if (sl_stats_line_due(&st->stats, now))
		vpn_print(st, "interval", now);
}

static void
vpn_message(struct sl_nf *nf, const char *key, const char *value)
{
	(void)value;
	if (strcmp(key, "stats") == 0)
		vpn_print(sl_nf_priv(nf), "message", sl_now_ns());
}

static void
vpn_fini(struct sl_nf *nf)
{
	struct vpn_state *st = sl_nf_priv(nf);

	if (st != NULL && st->sad != NULL) {
		vpn_print(st, "exit", sl_now_ns());
		vpn_sad_free(st->sad);
		st->sad = NULL;
	}
	sl_nf_set_priv(nf, NULL);
}

static const struct sl_nf_ops vpn_ops = {
	.name = VPN_PROG,
	.service = "vpn",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE | SL_ACCESS_ROUTE,
	.init = vpn_init,
	.process_pkt = vpn_pkt,
	.tick = vpn_tick,
	.tick_ms = VPN_TICK_MS,
	.reload = vpn_reload,
	.on_message = vpn_message,
	.fini = vpn_fini,
	.usage = vpn_usage,
	.opts = vpn_opts,
	.priv_size = sizeof(struct vpn_state),
	.opts_help_col = 24,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&vpn_ops, argc, argv);
}
