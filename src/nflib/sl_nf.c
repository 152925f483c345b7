/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice: runs an NF as a DPDK secondary process of sluiced.
 */
#include <ctype.h>
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_prefetch.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "sl_graph.h"
#include "sl_dispatch.h"
#include "sl_futex.h"
#include "sl_shared.h"
#include "sl_match.h"
#include "sluice/flow.h"
#include "sluice/nf.h"
#include "sluice/pkt.h"

#define REGISTER_TIMEOUT_MS 5000
#define DEREGISTER_TIMEOUT_MS 3000
#define SLEEP_TIMEOUT_NS 10000000ull /* re-check stop/ticks every 10 ms */
#define MAX_ARGS 256

struct sl_nf {
	const struct sl_nf_ops *ops;
	const char *prog;
	struct sl_shm *shm;
	struct sl_nf_slot *slot;
	uint16_t instance;
	uint16_t service;
	uint32_t mode;
	int core;
	uint32_t burst;
	void *priv;
	struct sl_dispatch disp;
	char node[SL_NAME_LEN];
	char service_name[SL_NAME_LEN];
	int stop;
	int mgr_dead; /* sluiced was killed: nobody to deregister with */
	char config[256]; /* /var/run/dpdk/sluice_NODE/config, see mgr_gone */
	int64_t req_id; /* last cross-layer request id */
	/* Tests only: SLUICE_TEST_KILL_AT=handoff:N, take:N, tx:N or
	 * sent:N, see test_kill_at(). */
	int kill_take;
	int kill_tx; /* 1: tx:N, 2: sent:N */
	uint64_t kill_left;
};

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_reload;
static int g_meta_off = -1;
static uint64_t g_start_tsc; /* when main() began: start-to-first-packet */

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		g_reload = 1;
	else
		g_stop = 1;
}

static inline struct sl_pkt_meta *
meta_of(const struct rte_mbuf *m)
{
	return sl_meta(m, g_meta_off);
}

void
sl_pkt_set_verdict(struct rte_mbuf *m, sl_verdict_t v)
{
	meta_of(m)->verdict = v;
}

sl_verdict_t
sl_pkt_verdict(const struct rte_mbuf *m)
{
	return meta_of(m)->verdict;
}

uint16_t
sl_pkt_in_port(const struct rte_mbuf *m)
{
	return meta_of(m)->in_port;
}

uint32_t
sl_pkt_flow_hash(const struct rte_mbuf *m)
{
	return sl_meta_flow_hash(m, meta_of(m));
}

int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	for (uint16_t s = 0; s < nf->shm->max_services; s++) {
		const struct sl_service *svc = &nf->shm->services[s];

		if (__atomic_load_n(&svc->used, __ATOMIC_ACQUIRE) &&
		    strcmp(svc->name, name) == 0)
			return s;
	}
	return -1;
}

static int mgr_gone(const struct sl_nf *nf);

int
sl_service_id_wait(const struct sl_nf *nf, const char *name,
		   unsigned int timeout_ms)
{
	uint64_t deadline;
	int s = sl_service_id(nf, name);

	if (s >= 0 || timeout_ms == 0)
		return s;
	fprintf(stderr, "%s: service '%s' is not known to sluiced yet: waiting "
			"up to %u ms for an NF of it to register\n",
		nf->prog, name, timeout_ms);
	deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
	while ((s = sl_service_id(nf, name)) < 0 && rte_rdtsc() < deadline &&
	       !g_stop && !mgr_gone(nf))
		rte_delay_us_sleep(10000);
	return s;
}

int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	for (uint16_t p = 0; p < SL_MAX_PORTS; p++)
		if (nf->shm->ports[p].used &&
		    strcmp(nf->shm->ports[p].name, name) == 0)
			return p;
	return -1;
}

uint16_t
sl_nf_instance(const struct sl_nf *nf)
{
	return nf->instance;
}

uint16_t
sl_nf_service(const struct sl_nf *nf)
{
	return nf->service;
}

void *
sl_nf_priv(const struct sl_nf *nf)
{
	return nf->priv;
}

void
sl_nf_set_priv(struct sl_nf *nf, void *priv)
{
	nf->priv = priv;
}

struct rte_mempool *
sl_nf_pktmbuf_pool(const struct sl_nf *nf)
{
	return nf->shm->pktmbuf_pool;
}

int
sl_nf_chain_ready(const struct sl_nf *nf)
{
	uint16_t gv = sl_graph_current(nf->shm, 0);
	const struct sl_graph *g =
		gv == SL_GRAPH_NONE ? NULL : sl_graph_of(nf->shm, gv);

	if (g == NULL || g->next[nf->service] == SL_HOP_NONE)
		return 0;
	for (uint16_t i = 0; i < g->n_nodes; i++)
		if (__atomic_load_n(&nf->shm->services[g->nodes[i]].n_live,
				    __ATOMIC_ACQUIRE) == 0)
			return 0;
	return 1;
}

void
sl_nf_stop(struct sl_nf *nf)
{
	nf->stop = 1;
}

uint64_t
sl_now_ns(void)
{
	static uint64_t hz;

	if (hz == 0)
		hz = rte_get_tsc_hz();
	return (uint64_t)((double)rte_rdtsc() * 1e9 / (double)hz);
}

/* A packet handed to port (SL_PORT_NONE: to sluiced, unresolved) that
 * the NF passes on, i.e. did not mark DROP. */
static inline int
nf_passes_on(uint16_t port, const struct rte_mbuf *m)
{
	return port != SL_PORT_NONE ||
	       sl_verdict_kind(meta_of(m)->verdict) != SL_VERDICT_DROP;
}

static void test_kill_count(struct sl_nf *nf);

/*
 * OUT(port): straight out on this NF's own TX queue of the port when it
 * has one; otherwise (and for everything in "mgr" hand-off mode) into our
 * tx ring, for sluiced's TX thread.
 */
static uint16_t
nf_port_out(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct sl_nf *nf = d->port_arg;
	struct sl_shm *shm = nf->shm;
	struct sl_nf_slot *slot = nf->slot;
	uint64_t bytes = 0, on = 0;
	unsigned int k;

	/* Counted before the packets leave: once sent (or in sluiced's
	 * hands) an mbuf may be freed and in use again, with another
	 * length. What was not taken is still ours. In mgr hand-off every
	 * packet comes here unresolved (port NONE): those the NF dropped
	 * are sluiced's to drop and count as this NF's nf_verdict drops, not
	 * its tx, as in direct hand-off. */
	for (uint16_t i = 0; i < n; i++)
		if (nf_passes_on(port, pkts[i])) {
			bytes += rte_pktmbuf_pkt_len(pkts[i]);
			on++;
		}
	if (port != SL_PORT_NONE && slot->txq != 0 &&
	    slot->txq < shm->ports[port].n_txq) {
		struct sl_tx_call *c = &slot->tx_call;

		/* The driver frees what it sent into our mempool cache: free
		 * packets are tagged nobody's. The call is written down first
		 * (struct sl_tx_call): killed inside it, sluiced counts the
		 * burst as in doubt rather than lose it uncounted
		 * (docs/architecture.md, "Killed inside a hand-off"). */
		memcpy(slot->tx_hand, pkts, n * sizeof(pkts[0]));
		c->port = port;
		c->n = n;
		c->pkts_before = slot->port_tx[port].pkts;
		c->bytes_before = slot->port_tx[port].bytes;
		/* Written down before the first tag is cleared: a packet
		 * still tagged ours is found by sluiced's scan, one tagged
		 * nobody's only through this record. */
		__atomic_store_n(&c->phase, 1, __ATOMIC_RELEASE);
		rte_atomic_thread_fence(__ATOMIC_RELEASE);
		for (uint16_t i = 0; i < n; i++)
			meta_of(pkts[i])->owner = 0;
		if (unlikely(nf->kill_tx == 1))
			test_kill_count(nf);
		sl_pool_op_begin(d->pool_op);
		k = rte_eth_tx_burst(port, slot->txq, pkts, n);
		sl_pool_op_end(d->pool_op);
		for (unsigned int i = k; i < n; i++) {
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
			meta_of(pkts[i])->owner = d->self_owner;
		}
		c->k = (uint16_t)k;
		c->sent_bytes = bytes;
		__atomic_store_n(&c->phase, 2, __ATOMIC_RELEASE);
		if (unlikely(nf->kill_tx == 2))
			test_kill_count(nf);
		slot->port_tx[port].pkts += k;
		slot->port_tx[port].bytes += bytes;
		__atomic_store_n(&c->phase, 0, __ATOMIC_RELEASE);
		d->fwd->tx_pkts += k;
		d->fwd->tx_bytes += bytes;
		return (uint16_t)k;
	}
	k = rte_ring_sp_enqueue_burst(slot->tx, (void **)pkts, n, NULL);
	if (k == 0)
		return 0;
	for (unsigned int i = k; i < n; i++)
		if (nf_passes_on(port, pkts[i])) {
			bytes -= rte_pktmbuf_pkt_len(pkts[i]);
			on--;
		}
	d->fwd->tx_pkts += on;
	d->fwd->tx_bytes += bytes;
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t t = 0; t < shm->n_io; t++) {
		if (__atomic_load_n(&shm->io_sleeping[t], __ATOMIC_RELAXED)) {
			sl_futex_wake(&shm->io_wake[t]);
			d->fwd->wakeups++;
		}
	}
	return (uint16_t)k;
}

void
sl_nf_send(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *m = meta_of(pkts[i]);
		sl_verdict_t v = m->verdict;

		memset(m, 0, sizeof(*m)); /* flow hash: computed if needed */
		m->verdict = v;
		m->service = nf->service;
		m->owner = (uint16_t)(nf->instance + 1);
		m->in_port = UINT16_MAX;
		m->flow = SL_FLOW_NONE; /* NF-made: the default graph */
	}
	while (n > 0) {
		uint16_t chunk = RTE_MIN(n, (uint16_t)nf->burst);

		while (sl_dispatch_pending(&nf->disp) &&
		       sl_dispatch_retry(&nf->disp, rte_rdtsc()) != 0)
			sched_yield();
		sl_dispatch(&nf->disp, pkts, chunk);
		pkts += chunk;
		n = (uint16_t)(n - chunk);
	}
}

/*
 * EAL's messages while the NF attaches. For any failure to set up memory,
 * rte_eal_init() says only "Cannot allocate memory"; the reason (a file it
 * could not open or lock, an area it could not map) is in EAL's debug
 * lines. Unless --log-level is given, EAL logs at debug level into this
 * stream during rte_eal_init(): EAL's warnings and worse, and every line
 * of other components, go to stderr as before; EAL's other lines are kept
 * (the last EAL_KEPT) and printed only if the attach fails.
 */
#define EAL_KEPT 40
static struct {
	char line[EAL_KEPT][240];
	unsigned int n; /* kept in all */
} g_eal_kept;

static ssize_t
eal_log_write(void *cookie, const char *buf, size_t size)
{
	char *l;

	(void)cookie;
	if (rte_log_cur_msg_logtype() != RTE_LOGTYPE_EAL ||
	    rte_log_cur_msg_loglevel() <= (int)RTE_LOG_WARNING)
		return (ssize_t)fwrite(buf, 1, size, stderr);
	l = g_eal_kept.line[g_eal_kept.n++ % EAL_KEPT];
	snprintf(l, sizeof(g_eal_kept.line[0]), "%.*s", (int)size, buf);
	l[strcspn(l, "\n")] = '\0';
	return (ssize_t)size;
}

static void
eal_kept_print(const char *prog)
{
	unsigned int n = RTE_MIN(g_eal_kept.n, (unsigned int)EAL_KEPT);

	if (n == 0)
		return;
	fprintf(stderr, "%s: EAL's last %u debug line(s) before it failed:\n",
		prog, n);
	for (unsigned int i = g_eal_kept.n - n; i < g_eal_kept.n; i++)
		fprintf(stderr, "  %s\n", g_eal_kept.line[i % EAL_KEPT]);
}

/*
 * One NF attaches at a time. At the end of rte_eal_init() every DPDK
 * process cleans the runtime folder: it opens each fbarray_* file in it
 * and deletes those it can lock (a dead process's). An NF that has just
 * created its own (fbarray_memseg-..._PID) and not locked it yet loses
 * it to a peer finishing its attach: its own lock then fails ("couldn't
 * lock ...: Resource temporarily unavailable"), and rte_eal_init() with
 * "Cannot allocate memory" (3 in 10 starts of 128 NFs at once, and twice
 * in CI). Returns the fd holding the folder's attach lock (flock: gone
 * with us if we die), -1 after saying why there is none, or -2 if a stop
 * signal came while waiting for it.
 */
#define ATTACH_WAIT_S 60

static int
attach_lock(const char *prog, const char *config)
{
	const char *slash = strrchr(config, '/');
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%.*s/sluice_attach.lock",
		 slash != NULL ? (int)(slash - config) : 0, config);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr,
			"%s: cannot open %s (%s): attaching without waiting for "
			"other NFs to finish theirs\n",
			prog, path, strerror(errno));
		return -1;
	}
	for (unsigned int ms = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; ms++) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			fprintf(stderr,
				"%s: cannot lock %s (%s): attaching without "
				"waiting for other NFs to finish theirs\n",
				prog, path, strerror(errno));
			break;
		}
		if (g_stop) { /* nothing attached yet: stop here */
			close(fd);
			return -2;
		}
		if (ms == ATTACH_WAIT_S * 1000u) {
			fprintf(stderr,
				"%s: another NF has held %s for %d s (stuck "
				"attaching?): attaching anyway\n",
				prog, path, ATTACH_WAIT_S);
			break;
		}
		usleep(1000);
	}
	return fd;
}

/* ---- argument handling -------------------------------------------- */

/* libsluice's usage, then the NF's own options (ops->usage), to stdout. */
static void
usage(const char *prog, const struct sl_nf_ops *ops)
{
	size_t len = ops->usage != NULL ? strlen(ops->usage) : 0;

	printf("usage: %s [EAL args] -- [--node NAME] [-s|--service NAME] "
	       "[--instance N] [--mode shared|poll] [--core N] [NF args]\n"
	       "  --node         the sluiced to attach to (default: "
	       "$SLUICE_NODE or 'sluice')\n"
	       "  -s, --service  service to register (default: the NF's "
	       "own)\n"
	       "  --instance     ask for this instance id (default: any "
	       "free)\n"
	       "  --mode         shared (yield/sleep when idle, default) or "
	       "poll\n"
	       "  --core         CPU to pin to (poll mode)\n"
	       "  -h, --help     print this help and exit\n",
	       prog);
	if (len > 0) {
		putchar('\n');
		fputs(ops->usage, stdout);
		if (ops->usage[len - 1] != '\n')
			putchar('\n');
	}
	fflush(stdout);
}

/* Matches OPT VALUE or OPT=VALUE at argv[*i] (and, if SHORT_OPT is not
 * NULL, SHORT_OPT VALUE); steps *i over the value. 1 if matched, 0 if not,
 * -1 (said why) if the value is missing. */
static int
take_value(int *i, int argc, char **argv, const char *opt,
	   const char *short_opt, const char **out)
{
	size_t len = strlen(opt);

	if (strcmp(argv[*i], opt) == 0 ||
	    (short_opt != NULL && strcmp(argv[*i], short_opt) == 0)) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s: option %s needs a value\n",
				argv[0], argv[*i]);
			return -1;
		}
		*out = argv[++*i];
		return 1;
	}
	if (strncmp(argv[*i], opt, len) == 0 && argv[*i][len] == '=') {
		*out = argv[*i] + len + 1;
		return 1;
	}
	return 0;
}

/* 1 if s, what follows an option in a usage text, names a value: a word
 * that starts with a capital or '<' (FILE, N, <path>), or alternatives
 * (allow|deny). */
static int
usage_is_value(const char *s)
{
	if ((*s >= 'A' && *s <= 'Z') || *s == '<')
		return 1;
	if (!isalnum((unsigned char)*s))
		return 0;
	for (; *s != '\0' && !isspace((unsigned char)*s) && *s != ']'; s++)
		if (*s == '|')
			return 1;
	return 0;
}

/*
 * 1 if arg, one of the NF's arguments, is an option of the NF that takes a
 * value as the NF's usage (ops->usage) spells it: somewhere in the text
 * the option starts a word and is followed by one space or '=' and a
 * value's name ("--rules FILE", "[--count packets|syn]"), not by two
 * spaces (a description) or ']'. A --name not in the text that begins
 * exactly one option there stands for it, as getopt_long() takes it.
 * libsluice knows the NF's options only from that text: what it does not
 * list is taken for an option without a value.
 */
static int
nf_opt_takes_value(const char *usage, const char *arg)
{
	size_t alen = strlen(arg), hit_len = 0;
	const char *p, *hit = NULL;
	int exact = 0, exact_value = 0, hit_value = 0, ambiguous = 0;

	if (usage == NULL || arg[0] != '-' || strchr(arg, '=') != NULL ||
	    (arg[1] != '-' && (arg[1] == '\0' || arg[2] != '\0')) ||
	    strcmp(arg, "--") == 0)
		return 0; /* not an option, --opt=VALUE, -xVALUE or -xyz */
	for (p = usage; (p = strchr(p, '-')) != NULL;) {
		const char *name = p, *e = p + 1;
		size_t len;
		int value;

		if (*e == '-')
			e++;
		if ((p > usage && strchr(" \t\n[|,(", p[-1]) == NULL) ||
		    !isalnum((unsigned char)*e)) {
			p = e; /* inside a word (sluice-x), or no option */
			continue;
		}
		while (isalnum((unsigned char)*e) || *e == '-' || *e == '_')
			e++;
		len = (size_t)(e - name);
		value = (*e == ' ' || *e == '=') && usage_is_value(e + 1);
		if (len == alen && memcmp(name, arg, alen) == 0) {
			exact = 1;
			exact_value |= value;
		} else if (arg[1] == '-' && alen > 2 && len > alen &&
			   memcmp(name, arg, alen) == 0) {
			if (hit == NULL) {
				hit = name;
				hit_len = len;
			} else if (hit_len != len ||
				   memcmp(hit, name, len) != 0) {
				ambiguous = 1;
			}
			hit_value |= value;
		}
		p = e;
	}
	if (exact)
		return exact_value;
	return hit != NULL && !ambiguous && hit_value;
}

static int
has_opt(char **argv, int argc, const char *a, const char *b)
{
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], a, strlen(a)) == 0 ||
		    (b != NULL && strncmp(argv[i], b, strlen(b)) == 0))
			return 1;
	return 0;
}

/* 1 if this process may run on CPU c, else 0; the CPUs it may run on
 * (its affinity mask) as "0-1,4" in buf. */
static int
cpu_allowed(int c, char *buf, size_t size)
{
	cpu_set_t set;
	size_t len = 0;

	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1; /* cannot tell: let EAL decide */
	for (int lo = 0; lo < CPU_SETSIZE && len < size; lo++) {
		int hi = lo;

		if (!CPU_ISSET(lo, &set))
			continue;
		while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, &set))
			hi++;
		len += (size_t)snprintf(buf + len, size - len,
					lo == hi ? "%s%d" : "%s%d-%d",
					len > 0 ? "," : "", lo, hi);
		lo = hi;
	}
	return CPU_ISSET(c, &set) ? 1 : 0;
}

struct nf_args {
	const char *node;
	const char *service;
	long instance;
	uint32_t mode;
	int core;
	int eal_argc;
	char *eal_argv[MAX_ARGS];
	int nf_argc;
	char *nf_argv[MAX_ARGS];
	char prefix_arg[64];
	char lcore_arg[32];
	int eal_capture; /* no --log-level given: see eal_log_write() */
};

/*
 * Splits argv into EAL's arguments (before a --), libsluice's and the
 * NF's. 0, or -1 after saying what was wrong, or 1 after printing the
 * usage for -h/--help (nothing else done: no EAL, no sluiced needed).
 * -h and --help are the help only where an option may stand: the value of
 * an option that takes one (libsluice's --service NAME, or the NF's as its
 * usage shows, see nf_opt_takes_value) is that value, whatever it reads.
 */
static int
parse_args(struct nf_args *a, const struct sl_nf_ops *ops, int argc,
	   char **argv)
{
	int sep = -1, i;
	const char *v;

	memset(a, 0, sizeof(*a));
	a->node = getenv("SLUICE_NODE") ? getenv("SLUICE_NODE") : "sluice";
	a->service = ops->service;
	a->instance = -1;
	a->mode = SL_MODE_SHARED;
	a->core = -1;
	if (argc + 8 > MAX_ARGS) {
		fprintf(stderr, "%s: too many arguments (%d)\n", argv[0], argc);
		return -1;
	}
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	a->eal_argv[a->eal_argc++] = argv[0];
	for (i = 1; sep > 0 && i < sep; i++)
		a->eal_argv[a->eal_argc++] = argv[i];

	a->nf_argv[a->nf_argc++] = argv[0];
	for (i = sep > 0 ? sep + 1 : 1; i < argc; i++) {
		int r;

		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(argv[0], ops);
			return 1;
		}
		if ((r = take_value(&i, argc, argv, "--node", NULL, &v)) != 0) {
			if (r < 0)
				return -1;
			a->node = v;
		} else if ((r = take_value(&i, argc, argv, "--service", "-s",
					   &v)) != 0) {
			if (r < 0)
				return -1;
			a->service = v;
		} else if ((r = take_value(&i, argc, argv, "--instance",
					   NULL, &v)) != 0) {
			char *end;

			if (r < 0)
				return -1;
			a->instance = strtol(v, &end, 10);
			if (*end != '\0' || a->instance < 0 ||
			    a->instance >= SL_INSTANCE_NONE) {
				fprintf(stderr,
					"%s: --instance '%s' is not an "
					"instance id (0..65534)\n",
					argv[0], v);
				return -1;
			}
		} else if ((r = take_value(&i, argc, argv, "--mode", NULL,
					   &v)) != 0) {
			if (r < 0)
				return -1;
			if (strcmp(v, "shared") == 0) {
				a->mode = SL_MODE_SHARED;
			} else if (strcmp(v, "poll") == 0) {
				a->mode = SL_MODE_POLL;
			} else {
				fprintf(stderr,
					"%s: --mode '%s': use shared or poll\n",
					argv[0], v);
				return -1;
			}
		} else if ((r = take_value(&i, argc, argv, "--core", NULL,
					   &v)) != 0) {
			char *end, cpus[128];
			long c;

			if (r < 0)
				return -1;
			c = strtol(v, &end, 10);
			if (*end != '\0' || c < 0 || c >= CPU_SETSIZE) {
				fprintf(stderr,
					"%s: --core '%s' is not a CPU number\n",
					argv[0], v);
				return -1;
			}
			if (!cpu_allowed((int)c, cpus, sizeof(cpus))) {
				/* EAL would print its whole usage and
				 * fail; say which CPUs there are. */
				fprintf(stderr,
					"%s: --core %ld: this process may not "
					"run on CPU %ld; give one of the CPUs "
					"it may run on: %s\n",
					argv[0], c, c, cpus);
				return -1;
			}
			a->core = (int)c;
		} else {
			a->nf_argv[a->nf_argc++] = argv[i];
			/* Its value goes with it, even a -h (a file so
			 * named, say): the NF's getopt takes it so too. */
			if (i + 1 < argc &&
			    nf_opt_takes_value(ops->usage, argv[i]))
				a->nf_argv[a->nf_argc++] = argv[++i];
		}
	}
	a->nf_argv[a->nf_argc] = NULL;
	/* Without init nothing would read them: a mistyped --mdoe poll
	 * would run silently in shared mode. */
	if (ops->init == NULL && a->nf_argc > 1) {
		fprintf(stderr,
			"%s: unknown option '%s': this NF takes no options of "
			"its own (it has no init); libsluice's are --node, "
			"--service (-s), --instance, --mode and --core "
			"(--help)\n",
			argv[0], a->nf_argv[1]);
		return -1;
	}

	if (a->service == NULL || !sl_name_valid(a->service)) {
		fprintf(stderr,
			"%s: service name '%s' is not valid (1-%d characters "
			"of A-Z a-z 0-9 _ - .); pass --service (-s) NAME\n",
			argv[0], a->service ? a->service : "", SL_NAME_LEN - 1);
		return -1;
	}
	if (!sl_name_valid(a->node) || strlen(a->node) > SL_NODE_NAME_MAX) {
		fprintf(stderr, "%s: node name '%s' is not valid\n", argv[0],
			a->node);
		return -1;
	}

	/* EAL arguments libsluice adds unless given. */
	a->eal_argv[a->eal_argc++] = "--proc-type=secondary";
	if (!has_opt(a->eal_argv, a->eal_argc, "--file-prefix", NULL)) {
		snprintf(a->prefix_arg, sizeof(a->prefix_arg),
			 "--file-prefix=sluice_%.16s", a->node);
		a->eal_argv[a->eal_argc++] = a->prefix_arg;
	}
	if (!has_opt(a->eal_argv, a->eal_argc, "-a", "--allow") &&
	    !has_opt(a->eal_argv, a->eal_argc, "--no-pci", NULL))
		a->eal_argv[a->eal_argc++] = "--no-pci";
	if (!has_opt(a->eal_argv, a->eal_argc, "--no-telemetry", NULL) &&
	    !has_opt(a->eal_argv, a->eal_argc, "--telemetry", NULL))
		a->eal_argv[a->eal_argc++] = "--no-telemetry";
	if (!has_opt(a->eal_argv, a->eal_argc, "--log-level", NULL)) {
		a->eal_argv[a->eal_argc++] = "--log-level=lib.eal:debug";
		a->eal_capture = 1;
	}
	if (!has_opt(a->eal_argv, a->eal_argc, "-l", "--lcores") &&
	    !has_opt(a->eal_argv, a->eal_argc, "-c", NULL)) {
		/* One lcore: libsluice restores the CPU affinity after EAL
		 * init, so the NF runs wherever it was allowed to. */
		cpu_set_t set;
		int first = 0;

		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			for (first = 0; first < CPU_SETSIZE; first++)
				if (CPU_ISSET(first, &set))
					break;
		snprintf(a->lcore_arg, sizeof(a->lcore_arg), "--lcores=0@%d",
			 a->core >= 0 ? a->core : first);
		a->eal_argv[a->eal_argc++] = a->lcore_arg;
	}
	a->eal_argv[a->eal_argc] = NULL;
	return 0;
}

/* ---- registration ------------------------------------------------- */

static int
attach(struct sl_nf *nf)
{
	char name[RTE_MEMZONE_NAMESIZE];
	const struct rte_memzone *mz;

	snprintf(name, sizeof(name), SL_MZ_SHM, nf->node);
	mz = rte_memzone_lookup(name);
	if (mz == NULL) {
		fprintf(stderr,
			"%s: sluiced '%s' has no shared state (memzone %s); "
			"is it a sluiced of this version?\n",
			nf->prog, nf->node, name);
		return -1;
	}
	nf->shm = mz->addr;
	if (nf->shm->magic != SL_SHM_MAGIC ||
	    nf->shm->version != SL_SHM_VERSION) {
		fprintf(stderr,
			"%s: sluiced '%s' speaks shared-memory version %u, this "
			"NF was built for %u: rebuild the NF and sluiced from "
			"the same tree\n",
			nf->prog, nf->node, nf->shm->version, SL_SHM_VERSION);
		return -1;
	}
	g_meta_off = rte_mbuf_dynfield_lookup(SL_DYNFIELD_NAME, NULL);
	if (g_meta_off < 0 || g_meta_off != nf->shm->dynfield_offset) {
		fprintf(stderr, "%s: packet metadata field '%s' not found\n",
			nf->prog, SL_DYNFIELD_NAME);
		return -1;
	}
	nf->burst = nf->shm->burst;
	return 0;
}

static void nf_handle(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n);
static unsigned int nf_rx_burst(struct sl_nf *nf, struct rte_mbuf **pkts);
static int mgr_gone(const struct sl_nf *nf);

/*
 * Posts a message on sluiced's message ring (0, or -1 if the ring stays
 * full or busy for timeout_ms; 0 ms: for 10 us, without sleeping, as the
 * data path posts requests). Another NF inside a post, or killed in one,
 * is waited for here, never inside rte_ring (sl_ring_prod_busy); sluiced
 * rolls back a killed one's reservation.
 */
static int
msg_post(struct sl_nf *nf, struct sl_msg *m, unsigned int timeout_ms)
{
	struct rte_ring *r = nf->shm->msg_ring;
	uint64_t hz = rte_get_tsc_hz();
	uint64_t deadline = rte_rdtsc() + (timeout_ms > 0
						   ? hz / 1000 * timeout_ms
						   : hz / 100000);

	for (;;) {
		if (!sl_ring_prod_busy(r) && rte_ring_mp_enqueue(r, m) == 0)
			return 0;
		if (rte_rdtsc() > deadline ||
		    (timeout_ms > 0 && mgr_gone(nf)))
			return -1;
		if (timeout_ms > 0)
			usleep(50);
		else
			rte_pause();
	}
}

/* Sends a message to sluiced and waits for the answer. */
static int
ask_sluiced(struct sl_nf *nf, struct sl_msg *m, unsigned int timeout_ms,
	    int keep_running)
{
	uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz() / 1000 * timeout_ms;
	struct rte_mbuf *pkts[SL_BURST_MAX];

	if (msg_post(nf, m, timeout_ms) != 0) {
		fprintf(stderr, "%s: sluiced '%s' message ring stayed full "
				"for %u ms\n",
			nf->prog, nf->node, timeout_ms);
		return -1;
	}
	while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
		/* Asked to stop while registering (a replica cancelled by
		 * nf.scale): give up; if sluiced did register us, it sees us
		 * exit like any dead NF. */
		if (rte_rdtsc() > deadline ||
		    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE) ||
		    mgr_gone(nf) || (!keep_running && g_stop))
			return -1;
		if (keep_running && nf->slot != NULL) {
			/* Deregistering: keep serving what is queued. */
			unsigned int n;

			nf->slot->heartbeat++;
			if (sl_dispatch_pending(&nf->disp) &&
			    sl_dispatch_retry(&nf->disp, rte_rdtsc()))
				continue;
			n = nf_rx_burst(nf, pkts);
			if (n > 0) {
				nf_handle(nf, pkts, (uint16_t)n);
				continue;
			}
		}
		usleep(100);
	}
	return 0;
}

/* A message just taken from the pool: zeroed, then typed with release, so
 * that sluiced, seeing it not free, also sees it unanswered (done 0). */
static void
msg_init(struct sl_msg *m, uint32_t type)
{
	memset(m, 0, sizeof(*m));
	__atomic_store_n(&m->type, type, __ATOMIC_RELEASE);
}

static int
do_register(struct sl_nf *nf, const struct nf_args *a)
{
	struct sl_msg *m;
	void *obj;
	int rc = 0;

	if (rte_mempool_get(nf->shm->msg_pool, &obj) != 0) {
		fprintf(stderr, "%s: sluiced '%s' has no free message\n",
			nf->prog, nf->node);
		return -1;
	}
	m = obj;
	msg_init(m, SL_MSG_REGISTER);
	m->pid = getpid();
	m->start_tsc = g_start_tsc;
	m->mode = a->mode;
	m->access = nf->ops->access;
	m->instance = a->instance < 0 ? SL_INSTANCE_NONE
				      : (uint16_t)a->instance;
	snprintf(m->service_name, sizeof(m->service_name), "%s", a->service);
	snprintf(m->prog, sizeof(m->prog), "%s", nf->ops->name);
	if (ask_sluiced(nf, m, REGISTER_TIMEOUT_MS, 0) != 0) {
		if (g_stop) {
			fprintf(stderr,
				"%s: stopped by a signal while registering\n",
				nf->prog);
			return -1;
		}
		if (mgr_gone(nf) ||
		    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE)) {
			fprintf(stderr,
				"%s: sluiced '%s' (pid %d) stopped or was "
				"killed while this NF registered; start "
				"sluiced again (sluiced -- --name %s, or "
				"sluice up), then this NF\n",
				nf->prog, nf->node, nf->shm->mgr_pid,
				nf->node);
			return -1;
		}
		fprintf(stderr,
			"%s: sluiced '%s' did not answer the registration "
			"within %d ms; is it running and not overloaded?\n",
			nf->prog, nf->node, REGISTER_TIMEOUT_MS);
		return -1; /* the message is left to sluiced */
	}
	if (m->result != 0) {
		fprintf(stderr, "%s: sluiced refused the registration: %s\n",
			nf->prog, m->error);
		rc = -1;
	} else {
		nf->instance = m->instance;
		nf->service = m->service;
		nf->slot = &nf->shm->nfs[nf->instance];
		snprintf(nf->service_name, sizeof(nf->service_name), "%s",
			 a->service);
	}
	sl_msg_put(nf->shm, m);
	return rc;
}

static void
do_deregister(struct sl_nf *nf)
{
	struct sl_msg *m;
	void *obj;

	if (nf->mgr_dead ||
	    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE) ||
	    rte_mempool_get(nf->shm->msg_pool, &obj) != 0)
		return;
	m = obj;
	msg_init(m, SL_MSG_DEREGISTER);
	m->pid = getpid();
	m->instance = nf->instance;
	/* sluiced stops sending to us, waits until no producer can still
	 * hold our ring, then answers; we keep serving until then. */
	if (ask_sluiced(nf, m, DEREGISTER_TIMEOUT_MS, 1) == 0)
		sl_msg_put(nf->shm, m);
}

/* ---- cross-layer requests and messages ---------------------------- */

int
sl_flow_of_pkt(const struct rte_mbuf *m, struct sl_flow_match *f)
{
	memset(f, 0, sizeof(*f));
	f->exact = 1;
	return sl_pkt_flow_tuple(m, &f->tuple) == 0 ? 0 : -ENOENT;
}

int
sl_flow_match_parse(const char *text, struct sl_flow_match *f, char *err,
		    size_t errlen)
{
	struct sl_match mt;

	memset(f, 0, sizeof(*f));
	if (text == NULL || strlen(text) >= sizeof(f->text)) {
		snprintf(err, errlen, "a wildcard holds at most %zu characters",
			 sizeof(f->text) - 1);
		return -EINVAL;
	}
	if (sl_match_parse(text, &mt, err, errlen) != 0)
		return -EINVAL;
	snprintf(f->text, sizeof(f->text), "%s", text);
	return 0;
}

/* Queues a request to sluiced; the reply comes to our inbox. */
static int64_t
nf_request(struct sl_nf *nf, uint32_t kind, const struct sl_flow_match *f,
	   uint16_t service, sl_verdict_t to, const char *key,
	   const char *value)
{
	struct sl_msg *m;
	void *obj;

	if (nf == NULL || nf->slot == NULL)
		return -EINVAL;
	if (service >= nf->shm->max_services)
		return -EINVAL;
	if (rte_mempool_get(nf->shm->msg_pool, &obj) != 0)
		return -ENOBUFS;
	m = obj;
	msg_init(m, SL_MSG_REQUEST);
	m->pid = getpid();
	m->instance = nf->instance;
	m->req.id = ++nf->req_id;
	m->req.kind = kind;
	m->req.service = service;
	m->req.to = to;
	if (f != NULL && f->exact) {
		m->req.exact = 1;
		sl_flow_key_make(&f->tuple, &m->req.key);
	} else if (f != NULL) {
		snprintf(m->req.match, sizeof(m->req.match), "%s", f->text);
	}
	if (key != NULL)
		snprintf(m->req.mkey, sizeof(m->req.mkey), "%s", key);
	if (value != NULL)
		snprintf(m->req.value, sizeof(m->req.value), "%s", value);
	if (msg_post(nf, m, 0) != 0) {
		sl_msg_put(nf->shm, m);
		return -ENOBUFS;
	}
	return m->req.id;
}

int64_t
sl_skip_me(struct sl_nf *nf, const struct sl_flow_match *f, uint16_t service)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_SKIP_ME, f, service, 0, NULL,
				      NULL);
}

int64_t
sl_request_me(struct sl_nf *nf, const struct sl_flow_match *f,
	      uint16_t service)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_REQUEST_ME, f, service, 0,
				      NULL, NULL);
}

int64_t
sl_change_default(struct sl_nf *nf, const struct sl_flow_match *f,
		  uint16_t service, sl_verdict_t to)
{
	return f == NULL ? -EINVAL
			 : nf_request(nf, SL_REQ_CHANGE_DEFAULT, f, service,
				      to, NULL, NULL);
}

_Static_assert(sizeof(((struct sl_msg *)0)->req.mkey) == SL_MESSAGE_KEY_MAX + 1 &&
		       sizeof(((struct sl_msg *)0)->req.value) ==
			       SL_MESSAGE_VALUE_MAX + 1,
	       "SL_MESSAGE_*_MAX must match struct sl_msg");

int64_t
sl_message(struct sl_nf *nf, uint16_t service, const char *key,
	   const char *value)
{
	if (key == NULL || value == NULL || key[0] == '\0')
		return -EINVAL;
	if (strlen(key) > SL_MESSAGE_KEY_MAX ||
	    strlen(value) > SL_MESSAGE_VALUE_MAX)
		return -E2BIG;
	return nf_request(nf, SL_REQ_MESSAGE, NULL, service, 0, key, value);
}

/*
 * Logs a rejected request, one line: which request (its id, kind, flow,
 * service and target, from the reply, which is the request's own message)
 * and sluiced's reason.
 */
static void
reply_log_rejected(const struct sl_nf *nf, struct sl_msg *m)
{
	char flow[176] = "", to[SL_NAME_LEN + 16] = "";
	const char *svc = m->req.service < nf->shm->max_services
				  ? nf->shm->services[m->req.service].name
				  : "?";
	uint32_t kind = m->req.kind;

	if (kind == SL_REQ_MESSAGE) {
		m->req.mkey[sizeof(m->req.mkey) - 1] = '\0';
		fprintf(stderr,
			"%s: request %" PRId64 " rejected by sluiced: "
			"message service=%s key=%s: %s\n",
			nf->prog, m->req.id, svc, m->req.mkey, m->error);
		return;
	}
	if (m->req.exact) {
		struct sl_5tuple t;

		sl_flow_key_tuple(&m->req.key, &t);
		sl_5tuple_format(&t, flow, sizeof(flow));
	} else {
		m->req.match[sizeof(m->req.match) - 1] = '\0';
		snprintf(flow, sizeof(flow), "%s", m->req.match);
	}
	if (kind == SL_REQ_CHANGE_DEFAULT) {
		char hop[SL_NAME_LEN + 8];

		sl_hop_format(nf->shm, m->req.to, hop, sizeof(hop));
		snprintf(to, sizeof(to), " to=%s", hop);
	}
	fprintf(stderr,
		"%s: request %" PRId64 " rejected by sluiced: %s flow=%s "
		"service=%s%s: %s\n",
		nf->prog, m->req.id, sl_req_name(kind), flow, svc, to,
		m->error);
}

/* Replies to our requests and messages to our service, from the inbox. */
static void
inbox_poll(struct sl_nf *nf)
{
	const struct sl_nf_ops *ops = nf->ops;
	void *objs[16];
	unsigned int n;

	if (nf->slot->inbox == NULL)
		return;
	n = rte_ring_sc_dequeue_burst(nf->slot->inbox, objs, RTE_DIM(objs),
				      NULL);
	for (unsigned int i = 0; i < n; i++) {
		struct sl_msg *m = objs[i];

		if (m->type == SL_MSG_MESSAGE) {
			m->req.mkey[sizeof(m->req.mkey) - 1] = '\0';
			m->req.value[sizeof(m->req.value) - 1] = '\0';
			if (ops->on_message != NULL)
				ops->on_message(nf, m->req.mkey, m->req.value);
		} else if (m->type == SL_MSG_REPLY) {
			m->error[sizeof(m->error) - 1] = '\0';
			if (m->result != 0)
				reply_log_rejected(nf, m);
			else if (m->error[0] != '\0') /* a Message, not to all */
				fprintf(stderr,
					"%s: request %" PRId64 " (message): "
					"%s\n",
					nf->prog, m->req.id, m->error);
			if (ops->on_reply != NULL)
				ops->on_reply(nf, m->req.id, m->result,
					      m->error);
		}
		sl_msg_put(nf->shm, m);
	}
}

/* ---- the loop ----------------------------------------------------- */

/* Processes one received burst and hands it on. */
static void
nf_handle(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	struct sl_ctx_stats *st = &nf->slot->nf;
	const struct sl_nf_ops *ops = nf->ops;
	uint64_t bytes = 0, t0;

	for (uint16_t i = 0; i < n; i++)
		bytes += rte_pktmbuf_pkt_len(pkts[i]);
	if (unlikely(st->rx_pkts == 0))
		__atomic_store_n(&nf->slot->first_pkt_tsc, rte_rdtsc(),
				 __ATOMIC_RELEASE);
	st->rx_pkts += n;
	st->rx_bytes += bytes;
	st->bursts++;
	t0 = rte_rdtsc();
	if (ops->process != NULL) {
		ops->process(nf, pkts, n);
	} else {
		for (uint16_t i = 0; i < n; i++)
			meta_of(pkts[i])->verdict =
				ops->process_pkt(nf, pkts[i]);
	}
	st->cycles += rte_rdtsc() - t0;
	sl_dispatch(&nf->disp, pkts, n);
}

/*
 * Tests only. SLUICE_TEST_KILL_AT=handoff:N makes the NF kill itself (SIGKILL)
 * at its Nth run handed to a next hop, once the run is ready and before it
 * is enqueued (or given to port_out); take:N, at its Nth burst taken from
 * its rx ring, before the burst is tagged as its own; tx:N, at its Nth
 * transmit call on its own TX queue, written down and not made yet (as if
 * killed inside the driver); sent:N, just after the Nth such call
 * returned, before its packets are counted. Those are the moments a death
 * is hardest to clean up after (docs/architecture.md, "Killed inside a
 * hand-off"); tests/integration/test_failure.py uses them.
 */
static void
test_kill_count(struct sl_nf *nf)
{
	if (--nf->kill_left == 0) {
		fprintf(stderr, "%s: SLUICE_TEST_KILL_AT reached: killing "
				"myself\n",
			nf->prog);
		raise(SIGKILL);
	}
}

static void
test_kill_fault(struct sl_dispatch *d)
{
	test_kill_count(container_of(d, struct sl_nf, disp));
}

static void
test_kill_at(struct sl_nf *nf)
{
	const char *v = getenv("SLUICE_TEST_KILL_AT");
	char *end;
	unsigned long long n;

	if (v == NULL || *v == '\0')
		return;
	if (strncmp(v, "handoff:", 8) == 0)
		v += 8;
	else if (strncmp(v, "take:", 5) == 0)
		v += 5, nf->kill_take = 1;
	else if (strncmp(v, "tx:", 3) == 0)
		v += 3, nf->kill_tx = 1;
	else if (strncmp(v, "sent:", 5) == 0)
		v += 5, nf->kill_tx = 2;
	else
		v = "";
	n = strtoull(v, &end, 10);
	if (*v == '\0' || *end != '\0' || n == 0) {
		fprintf(stderr, "%s: SLUICE_TEST_KILL_AT='%s' ignored: use "
				"handoff:N, take:N, tx:N or sent:N, N >= 1\n",
			nf->prog, getenv("SLUICE_TEST_KILL_AT"));
		nf->kill_take = 0;
		nf->kill_tx = 0;
		return;
	}
	nf->kill_left = n;
	if (!nf->kill_take && !nf->kill_tx)
		nf->disp.fault = test_kill_fault;
}

/*
 * Takes a burst from our rx ring into pkts and tags it ours. The ring
 * copies the burst into slot->hand, in shared memory, before it moves its
 * tail, and the packets keep their producer's tag until retagged here;
 * hand is cleared only after. So if we are killed in between, sluiced
 * finds the burst in hand (or still in the ring) and reclaims it.
 */
static unsigned int
nf_rx_burst(struct sl_nf *nf, struct rte_mbuf **pkts)
{
	struct sl_nf_slot *slot = nf->slot;
	uint16_t self = (uint16_t)(nf->instance + 1);
	unsigned int n;

	n = rte_ring_sc_dequeue_burst(slot->rx, (void **)slot->hand, nf->burst,
				      NULL);
	if (n == 0)
		return 0;
	if (unlikely(nf->kill_take))
		test_kill_count(nf);
	/* The mbufs were last written on another core: ask for both lines
	 * we use (header, and the meta in the dynfield area) of the whole
	 * burst at once, so the misses overlap instead of queueing. */
	for (unsigned int i = 0; i < n; i++) {
		pkts[i] = slot->hand[i];
		rte_prefetch0(pkts[i]);
		rte_prefetch0(meta_of(pkts[i]));
	}
	for (unsigned int i = 0; i < n; i++)
		meta_of(pkts[i])->owner = self;
	sl_flow_prefetch(nf->shm, pkts, (uint16_t)n);
	/* The tags are stored before hand is cleared. */
	rte_atomic_thread_fence(__ATOMIC_RELEASE);
	memset(slot->hand, 0, n * sizeof(slot->hand[0]));
	return n;
}

static void
idle(struct sl_nf *nf, uint64_t now, uint64_t *idle_since)
{
	struct sl_nf_slot *slot = nf->slot;
	uint32_t w;

	if (nf->mode == SL_MODE_POLL) {
		rte_pause();
		return;
	}
	if (*idle_since == 0)
		*idle_since = now;
	if (now - *idle_since < nf->shm->idle_sleep_cycles ||
	    sl_dispatch_pending(&nf->disp)) {
		sched_yield();
		return;
	}
	w = __atomic_load_n(&slot->wake, __ATOMIC_ACQUIRE);
	__atomic_store_n(&slot->sleeping, 1, __ATOMIC_RELAXED);
	/* Pairs with the producer's fence in wake_if_sleeping(). */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (rte_ring_count(slot->rx) == 0 && !g_stop && !g_reload) {
		slot->nf.sleeps++;
		sl_futex_wait(&slot->wake, w, SLEEP_TIMEOUT_NS);
	}
	__atomic_store_n(&slot->sleeping, 0, __ATOMIC_RELAXED);
}

/*
 * 1 once sluiced has gone away without a clean shutdown (killed). Its pid
 * alone does not say so: a killed sluiced that its parent has not reaped
 * yet is a zombie, which kill(pid, 0) still finds (and a pid may be reused).
 * The lock it held on its DPDK config file goes as soon as it dies.
 */
static int
mgr_gone(const struct sl_nf *nf)
{
	return (kill(nf->shm->mgr_pid, 0) != 0 && errno == ESRCH) ||
	       !rte_eal_primary_proc_alive(nf->config);
}

static int
must_stop(const struct sl_nf *nf)
{
	return g_stop || nf->stop ||
	       __atomic_load_n(&nf->slot->stop, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE);
}

static void
run(struct sl_nf *nf)
{
	const struct sl_nf_ops *ops = nf->ops;
	struct sl_nf_slot *slot = nf->slot;
	struct rte_mbuf *pkts[SL_BURST_MAX];
	uint64_t hz = rte_get_tsc_hz();
	uint64_t tick_cycles = hz / 1000 * (ops->tick_ms ? ops->tick_ms : 1000);
	uint64_t next_tick = rte_rdtsc() + tick_cycles;
	uint64_t mgr_check_cycles = hz / 10, next_mgr_check = 0;
	uint64_t inbox_cycles = hz / 1000, next_inbox = 0;
	uint64_t idle_since = 0;

	/* Online: from here on we read routing state (graphs, flow entries)
	 * and sluiced's grace periods and hang watchdog count our loops. */
	__atomic_store_n(&slot->sleeping, 0, __ATOMIC_RELAXED);
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (!must_stop(nf)) {
		uint64_t now = rte_rdtsc();
		unsigned int n;

		if (now >= next_mgr_check) {
			/* Every 100 ms: was sluiced killed? */
			if (mgr_gone(nf)) {
				fprintf(stderr,
					"%s: sluiced '%s' (pid %d) is gone "
					"(killed, or it crashed: see its log); "
					"stopping. Start sluiced again "
					"(sluiced -- --name %s, or sluice up), "
					"then this NF\n",
					nf->prog, nf->node, nf->shm->mgr_pid,
					nf->node);
				nf->mgr_dead = 1;
				break;
			}
			next_mgr_check = now + mgr_check_cycles;
		}
		if (now >= next_inbox) {
			inbox_poll(nf);
			next_inbox = now + inbox_cycles;
		}
		__atomic_store_n(&slot->heartbeat, slot->heartbeat + 1,
				 __ATOMIC_RELEASE);
		if (g_reload) {
			g_reload = 0;
			if (ops->reload != NULL)
				ops->reload(nf);
		}
		if (ops->tick != NULL && now >= next_tick) {
			ops->tick(nf, sl_now_ns());
			next_tick = now + tick_cycles;
		}
		if (sl_dispatch_pending(&nf->disp) &&
		    sl_dispatch_retry(&nf->disp, now) != 0) {
			slot->nf.stalls++;
			idle(nf, now, &idle_since);
			continue;
		}
		n = nf_rx_burst(nf, pkts);
		if (n == 0) {
			idle(nf, now, &idle_since);
			continue;
		}
		idle_since = 0;
		nf_handle(nf, pkts, (uint16_t)n);
	}
}

/*
 * After deregistration no producer can reach our rx ring any more: serve
 * what is left in it, then hand on what waits on a full next hop (bounded
 * by the backpressure bound, after which it is dropped and counted).
 */
static void
drain(struct sl_nf *nf)
{
	struct rte_mbuf *pkts[SL_BURST_MAX];
	unsigned int n;

	if (nf->mgr_dead ||
	    __atomic_load_n(&nf->shm->shutdown, __ATOMIC_ACQUIRE))
		return;
	for (;;) {
		__atomic_store_n(&nf->slot->heartbeat, nf->slot->heartbeat + 1,
				 __ATOMIC_RELEASE);
		if (sl_dispatch_pending(&nf->disp)) {
			if (sl_dispatch_retry(&nf->disp, rte_rdtsc()) != 0)
				sched_yield();
			continue;
		}
		n = nf_rx_burst(nf, pkts);
		if (n == 0)
			break;
		nf_handle(nf, pkts, (uint16_t)n);
	}
}

int
sl_nf_main(const struct sl_nf_ops *ops, int argc, char **argv)
{
	static struct nf_args a;
	struct sl_nf nf;
	char path[256];
	struct stat st;
	cpu_set_t saved;
	int rc, lock_fd;

	g_start_tsc = rte_rdtsc();
	/* Logs go to files: keep each line whole even if the NF is killed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&nf, 0, sizeof(nf));
	nf.ops = ops;
	nf.prog = argv[0];
	if (ops == NULL || ops->name == NULL ||
	    (ops->process == NULL) == (ops->process_pkt == NULL)) {
		fprintf(stderr,
			"%s: bad sl_nf_ops: set name and exactly one of "
			"process and process_pkt\n",
			argv[0]);
		return 1;
	}
	rc = parse_args(&a, ops, argc, argv);
	if (rc != 0)
		return rc < 0 ? 1 : 0; /* 1: the help was printed */
	snprintf(nf.node, sizeof(nf.node), "%s", a.node);
	nf.mode = a.mode;
	nf.core = a.core;

	snprintf(path, sizeof(path), "/var/run/dpdk/sluice_%s/config",
		 a.node);
	snprintf(nf.config, sizeof(nf.config), "%s", path);
	if (stat(path, &st) != 0) {
		fprintf(stderr,
			"%s: no sluiced named '%s' is running (%s not found): "
			"start it first (sluiced -- --name %s), or pass "
			"--node NAME\n",
			argv[0], a.node, path, a.node);
		return 1;
	}
	/* sluiced (the DPDK primary) holds a lock on that file while it
	 * runs: without it, the folder is what a killed sluiced left, and
	 * attaching would only end in EAL errors and a timeout. */
	if (!rte_eal_primary_proc_alive(path)) {
		fprintf(stderr,
			"%s: no sluiced named '%s' is running: /var/run/dpdk/"
			"sluice_%s is left from one that was killed; start "
			"sluiced again (sluiced -- --name %s, or sluice up), "
			"which replaces it, or remove it with "
			"scripts/cleanup.sh %s\n",
			argv[0], a.node, a.node, a.node, a.node);
		return 1;
	}

	/* Our handlers before rte_eal_init: a SIGTERM (nf.scale cancelling a
	 * replica that is starting, a launcher stopping) or Ctrl-C while EAL
	 * attaches must not end us there. Killed inside EAL's shared
	 * read-locked sections, we would leave a reader on the shared
	 * memory-hotplug lock for good, and sluiced's rte_eal_cleanup() at
	 * exit would spin on it for ever. We attach, then stop below. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	sched_getaffinity(0, sizeof(saved), &saved);
	if (a.eal_capture) {
		/* Never closed: an EAL thread may still hold it. */
		static FILE *eal_log;

		eal_log = fopencookie(NULL, "w", (cookie_io_functions_t){
							 .write = eal_log_write});
		if (eal_log != NULL)
			rte_openlog_stream(eal_log);
	}
	lock_fd = attach_lock(argv[0], path);
	if (lock_fd == -2) {
		fprintf(stderr, "%s: stopped by a signal while waiting to "
				"attach\n", argv[0]);
		return 0;
	}
	rc = rte_eal_init(a.eal_argc, a.eal_argv);
	if (lock_fd >= 0)
		close(lock_fd);
	if (a.eal_capture) {
		rte_log_set_level(RTE_LOGTYPE_EAL, RTE_LOG_WARNING);
		rte_openlog_stream(NULL);
	}
	if (rc < 0) {
		int err = rte_errno;

		fprintf(stderr,
			"%s: cannot attach to sluiced '%s' as a DPDK secondary "
			"process: %s\n",
			argv[0], a.node,
			err != 0 ? rte_strerror(err)
				 : "see the EAL messages above (is this "
				   "NF built from the same tree?)");
		eal_kept_print(argv[0]);
		return 1;
	}
	/* No per-lcore mempool cache until sluiced gives us an lcore id of
	 * our own at registration: several NF processes may share an EAL
	 * lcore id, and a shared cache would be corrupted. */
	RTE_PER_LCORE(_lcore_id) = LCORE_ID_ANY;
	if (a.core >= 0) {
		CPU_ZERO(&saved);
		CPU_SET(a.core, &saved);
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);

	if (attach(&nf) != 0)
		return 1;
	if (g_stop) {
		fprintf(stderr, "%s: stopped by a signal while starting\n",
			argv[0]);
		return 0;
	}

	if (do_register(&nf, &a) != 0)
		return 1;
	if (sl_dispatch_init(&nf.disp, nf.shm, (uint16_t)(nf.instance + 1),
			     &nf.slot->nf, nf.slot->nf.drop, nf_port_out,
			     &nf) != 0) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		rc = 1;
		goto out;
	}
	nf.disp.all_out = nf.shm->handoff != 0;
	test_kill_at(&nf);
	nf.disp.edge = sl_edge_row_nf(nf.shm, nf.instance, 0);
	/* Our own mempool cache, if sluiced gave us one: frees and
	 * allocations then stay off the pool's shared ring most of the time. */
	if (nf.slot->cache_lcore != SL_CACHE_NONE) {
		RTE_PER_LCORE(_lcore_id) = nf.slot->cache_lcore;
		nf.disp.pool_op = &nf.slot->pool_op;
	}

	rc = 0;
	/* init may take its time (compiling patterns, loading tables) and
	 * reads no routing state: neither a grace period nor the hang
	 * watchdog waits for it. run() comes online. */
	__atomic_store_n(&nf.slot->sleeping, 1, __ATOMIC_RELEASE);
	if (ops->init != NULL) {
		optind = 1;
		rc = ops->init(&nf, a.nf_argc, a.nf_argv);
		if (rc != 0) {
			fprintf(stderr, "%s: initialisation failed (%s)\n",
				argv[0], strerror(rc));
			rc = 1;
			do_deregister(&nf);
			goto out;
		}
	}
	run(&nf);
	do_deregister(&nf);
	drain(&nf);
	/* From here on this NF reads no shared routing state: tell sluiced's
	 * quiescence checks not to wait for it (it may take a while to exit). */
	__atomic_store_n(&nf.slot->sleeping, 1, __ATOMIC_RELEASE);
	if (ops->fini != NULL)
		ops->fini(&nf);
out:
	if (nf.disp.pool_op != NULL) {
		/* Hand our cached packets back to the pool (sluiced would do it
		 * after we exit; doing it now keeps the pool's count exact). */
		sl_pool_op_begin(nf.disp.pool_op);
		for (uint32_t i = 0; i < nf.shm->n_pools; i++) {
			struct rte_mempool *mp = nf.shm->pools[i];

			rte_mempool_cache_flush(
				rte_mempool_default_cache(mp, rte_lcore_id()),
				mp);
		}
		sl_pool_op_end(nf.disp.pool_op);
		RTE_PER_LCORE(_lcore_id) = LCORE_ID_ANY;
	}
	sl_dispatch_fini(&nf.disp);
	/*
	 * No rte_eal_cleanup() here: in a secondary it takes the shared
	 * memory-hotplug lock for writing to unmap memory, and at shutdown it
	 * was seen to spin on that lock for ever. The process's mappings go
	 * with it, and sluiced removes the runtime files when it exits.
	 */
	fflush(NULL);
	return rc;
}
