/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-fuzz, a test NF (built by tests/integration/test_nf_fuzz.py): a
 * buggy NF on purpose, to show that sluiced survives what an NF writes
 * into shared memory. It registers through libsluice like any NF, then:
 *
 *   --msgs N --seed S   sends N raw struct sl_msg through sluiced's message
 *                       ring, one at a time: each starts as one libsluice
 *                       would make (registration, deregistration, SkipMe,
 *                       RequestMe, ChangeDefault, Message) and has 1-3
 *                       fields mutated (enums, ids, pids, unterminated or
 *                       non-UTF-8 strings, flow key family, done preset).
 *                       It waits for each answer (in the message, done, or
 *                       as a reply in its inbox) and prints one line each:
 *
 *     fuzz-reply: n=3 type=3 id=17 via=inbox result=22 error=unknown ...
 *
 *                       and at the end "fuzz-done: sent=N replies=N
 *                       timeouts=0 stray=0".
 *   --verdicts --seed S sets random verdicts and metadata on the packets it
 *                       handles (TO/OUT out of range, random 32-bit values,
 *                       bad flow positions, graphs and services); with
 *                       sluiced --handoff mgr sluiced resolves them.
 *   --leak N --leak-then exit|hang|late
 *                       forks a child that never registers and sends N
 *                       messages sluiced refuses in the message itself, in
 *                       turn: a registration with mode 7, a request naming
 *                       this NF's instance (not the child's), a message of
 *                       unknown type 9 and a deregistration of an instance
 *                       that is not its own. It waits for each answer and
 *                       prints "fuzz-leak-reply: type=T result=R error=E",
 *                       then "fuzz-leak: pid=P held=N", and returns none:
 *                       exit: exits; hang: sleeps until killed; late: sleeps
 *                       2 s (longer than any timer of sluiced's), returns
 *                       them itself, prints "fuzz-leak: returned=N" and
 *                       exits.
 */
#include <signal.h>
#include <sys/wait.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <sluice/nf.h>

#include "sl_dispatch.h"
#include "sl_shared.h"

static struct sl_shm *g_shm;
static uint64_t g_rnd = 1;
static unsigned long g_n, g_sent, g_replies, g_timeouts, g_stray;
static int g_verdicts;
static struct sl_msg *g_out; /* the message waiting for its answer */
static int64_t g_out_id;
static uint64_t g_out_tsc;
static int g_got; /* set by on_reply for g_out */
static int32_t g_preset; /* the result a preset done came with, or 0 */

static uint64_t
rnd(void)
{
	/* xorshift64*: the same seed, the same run */
	g_rnd ^= g_rnd >> 12;
	g_rnd ^= g_rnd << 25;
	g_rnd ^= g_rnd >> 27;
	return g_rnd * 2685821657736338717ull;
}

static uint32_t
pick(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static void
find_shm(const struct rte_memzone *mz, void *arg)
{
	size_t n = strlen(mz->name);

	(void)arg;
	if (strncmp(mz->name, "sl_", 3) == 0 && n > 7 &&
	    strcmp(mz->name + n - 4, "_shm") == 0)
		g_shm = mz->addr;
}

/* Bytes that are neither terminated nor text. */
static void
junk(char *s, size_t len)
{
	switch (pick(4)) {
	case 0: /* unterminated printable */
		for (size_t i = 0; i < len; i++)
			s[i] = (char)('a' + pick(26));
		break;
	case 1: /* random bytes, no NUL */
		for (size_t i = 0; i < len; i++)
			s[i] = (char)(1 + pick(255));
		break;
	case 2: /* invalid UTF-8, terminated */
		memset(s, 0, len);
		s[0] = 'k';
		s[1] = (char)0xff;
		s[2] = (char)0xc3;
		break;
	default: /* empty */
		memset(s, 0, len);
	}
}

static void
make_valid(struct sl_nf *nf, struct sl_msg *m)
{
	uint32_t t = pick(6);

	memset(m, 0, sizeof(*m));
	m->pid = getpid();
	m->instance = sl_nf_instance(nf);
	switch (t) {
	case 0:
		m->type = SL_MSG_REGISTER;
		m->instance = SL_INSTANCE_NONE;
		m->access = SL_ACCESS_READ;
		snprintf(m->service_name, sizeof(m->service_name), "fz%u",
			 pick(3));
		snprintf(m->prog, sizeof(m->prog), "sluice-fuzz");
		break;
	case 1:
		m->type = SL_MSG_DEREGISTER;
		break;
	default:
		m->type = SL_MSG_REQUEST;
		m->req.id = (int64_t)(g_sent + 1);
		m->req.kind = t - 1; /* skip_me .. message */
		m->req.service = sl_nf_service(nf);
		m->req.to = pick(2) ? SL_DROP : SL_OUT(0);
		if (pick(2)) {
			m->req.exact = 1;
			m->req.key.family = 4;
			m->req.key.proto = 17;
			m->req.key.port_lo = 1000;
			m->req.key.port_hi = 53;
			m->req.key.addr_lo[0] = 10;
			m->req.key.addr_hi[0] = 10;
			m->req.key.addr_hi[3] = 1;
		} else {
			snprintf(m->req.match, sizeof(m->req.match),
				 "proto=tcp dport=%u", 1 + pick(60000));
		}
		snprintf(m->req.mkey, sizeof(m->req.mkey), "k");
		snprintf(m->req.value, sizeof(m->req.value), "v");
	}
}

static void
mutate(struct sl_msg *m)
{
	static const uint32_t types[] = {0, 1, 2, 3, 4, 5, 6, 0x80000003u};
	int32_t pids[] = {getpid(), 0, -1, INT32_MIN, 1, getppid(),
			  g_shm->mgr_pid};

	switch (pick(17)) {
	case 0:
		m->type = types[pick(RTE_DIM(types))];
		break;
	case 1:
		m->pid = pids[pick(RTE_DIM(pids))];
		break;
	case 2:
		m->mode = pick(2) ? (uint32_t)rnd() : 2;
		break;
	case 3:
		m->access = pick(2) ? (uint32_t)rnd() : 8;
		break;
	case 4: {
		uint16_t v[] = {SL_INSTANCE_NONE, 0, 1, 2, 3,
				g_shm->max_nfs, (uint16_t)rnd()};

		m->instance = v[pick(RTE_DIM(v))];
		break;
	}
	case 5:
		junk(m->service_name, sizeof(m->service_name));
		break;
	case 6:
		junk(m->prog, sizeof(m->prog));
		break;
	case 7:
		/* A negative result sluiced never writes: while it is there,
		 * done is ours, not an answer (sluiced clears it). */
		m->done = 1;
		m->result = (int32_t)(rnd() | 0x80000000u);
		junk(m->error, sizeof(m->error));
		break;
	case 8:
		m->req.kind = pick(2) ? pick(7) : (uint32_t)rnd();
		break;
	case 9:
		m->req.exact = (uint8_t)rnd();
		break;
	case 10: {
		uint16_t v[] = {SL_SERVICE_NONE, 0, 1, 2, 3,
				g_shm->max_services, (uint16_t)rnd()};

		m->req.service = v[pick(RTE_DIM(v))];
		break;
	}
	case 11: {
		sl_verdict_t v[] = {(sl_verdict_t)rnd(), SL_NEXT,
				    SL_TO(pick(8)), SL_TO((uint16_t)rnd()),
				    SL_OUT(g_shm->n_ports + pick(40)),
				    SL_DROP | 7, 0x04000000u | SL_DROP};

		m->req.to = v[pick(RTE_DIM(v))];
		break;
	}
	case 12:
		m->req.key.family = (uint8_t)(pick(2) ? rnd() : 6);
		for (size_t i = 0; i < sizeof(m->req.key.addr_lo); i++)
			m->req.key.addr_lo[i] = (uint8_t)rnd();
		break;
	case 13:
		junk(m->req.match, sizeof(m->req.match));
		break;
	case 14:
		junk(m->req.mkey, sizeof(m->req.mkey));
		break;
	case 15:
		junk(m->req.value, sizeof(m->req.value));
		break;
	default:
		m->req.id = (int64_t)rnd();
	}
}

static void
send_one(struct sl_nf *nf)
{
	struct sl_msg *m;
	uint32_t type;

	if (rte_mempool_get(g_shm->msg_pool, (void **)&m) != 0) {
		printf("fuzz-error: no free message\n");
		g_timeouts++;
		g_sent++;
		return;
	}
	make_valid(nf, m);
	for (uint32_t k = 1 + pick(3); k > 0; k--)
		mutate(m);
	/* Never a real deregistration of ourselves (the run would end). */
	if (m->type == SL_MSG_DEREGISTER && m->pid == getpid() &&
	    m->instance == sl_nf_instance(nf))
		m->instance = (uint16_t)(m->instance + 1);
	type = m->type;
	__atomic_store_n(&m->type, type, __ATOMIC_RELEASE);
	g_out = m;
	g_out_id = m->req.id;
	g_preset = m->done ? m->result : 0;
	g_got = 0;
	g_out_tsc = rte_rdtsc();
	g_sent++;
	while (rte_ring_mp_enqueue(g_shm->msg_ring, m) != 0)
		rte_pause();
}

static void
reply_line(const char *via, uint32_t type, int64_t id, int result,
	   const char *error)
{
	printf("fuzz-reply: n=%lu type=%u id=%" PRId64 " via=%s result=%d "
	       "error=%s\n",
	       g_sent, type, id, via, result, error);
	fflush(stdout);
	g_replies++;
}

static void
fz_tick(struct sl_nf *nf, uint64_t now_ns)
{
	(void)now_ns;
	for (int rounds = 0; rounds < 64; rounds++) {
		if (g_out == NULL) {
			if (g_sent == g_n)
				return;
			send_one(nf);
			continue;
		}
		if (g_got) { /* answered in our inbox (on_reply) */
			g_out = NULL;
			continue;
		}
		if (__atomic_load_n(&g_out->done, __ATOMIC_ACQUIRE) &&
		    (g_preset == 0 || g_out->result != g_preset)) {
			struct sl_msg *m = g_out;

			m->error[sizeof(m->error) - 1] = '\0';
			reply_line("done", m->type, m->req.id, m->result,
				   m->error);
			sl_msg_put(g_shm, m);
			g_out = NULL;
			if (g_sent == g_n)
				printf("fuzz-done: sent=%lu replies=%lu "
				       "timeouts=%lu stray=%lu\n",
				       g_sent, g_replies, g_timeouts, g_stray);
			continue;
		}
		if (rte_rdtsc() - g_out_tsc > rte_get_tsc_hz() * 3) {
			printf("fuzz-timeout: n=%lu\n", g_sent);
			g_timeouts++;
			g_out = NULL; /* left to sluiced */
		}
		return;
	}
}

static void
fz_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	(void)nf;
	if (g_out == NULL || g_got || id != g_out_id) {
		printf("fuzz-stray: id=%" PRId64 " result=%d error=%s\n", id,
		       result, reason);
		g_stray++;
		return;
	}
	g_got = 1;
	reply_line("inbox", SL_MSG_REPLY, id, result, reason);
	if (g_sent == g_n)
		printf("fuzz-done: sent=%lu replies=%lu timeouts=%lu "
		       "stray=%lu\n",
		       g_sent, g_replies, g_timeouts, g_stray);
}

static void
fz_process(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	(void)nf;
	if (!g_verdicts)
		return;
	for (uint16_t i = 0; i < n; i++) {
		struct sl_pkt_meta *meta =
			sl_meta(pkts[i], g_shm->dynfield_offset);
		sl_verdict_t v[] = {
			(sl_verdict_t)rnd(), SL_NEXT, SL_DROP,
			SL_TO((uint16_t)rnd()),
			SL_TO(g_shm->max_services + pick(100)),
			SL_TO(pick(g_shm->max_services)),
			SL_OUT(g_shm->n_ports + pick(SL_MAX_PORTS)),
			SL_OUT((uint16_t)rnd()), SL_OUT(pick(2)),
			(4u << SL_VERDICT_KIND_SHIFT) | pick(4)};

		meta->verdict = v[pick(RTE_DIM(v))];
		switch (pick(6)) {
		case 0:
			meta->flow = (uint32_t)rnd();
			meta->flow_gen = (uint16_t)rnd();
			break;
		case 1:
			meta->graph = (uint16_t)rnd();
			break;
		case 2:
			meta->service = (uint16_t)rnd();
			break;
		case 3:
			meta->flags ^= SL_META_PORT;
			break;
		default:
			break;
		}
	}
}

/* The child of --leak: see the top of the file. Never returns. */
static void
leak_child(struct sl_nf *nf, unsigned long n, const char *then)
{
	struct sl_msg *held[64];
	unsigned long k;

	for (k = 0; k < n && k < RTE_DIM(held); k++) {
		struct sl_msg *m;
		uint64_t deadline;

		if (rte_mempool_get(g_shm->msg_pool, (void **)&m) != 0) {
			printf("fuzz-leak-error: no free message\n");
			_exit(1);
		}
		memset(m, 0, sizeof(*m));
		m->pid = getpid();
		m->instance = sl_nf_instance(nf);
		switch (k % 4) {
		case 0:
			m->type = SL_MSG_REGISTER;
			m->mode = 7;
			m->instance = SL_INSTANCE_NONE;
			snprintf(m->service_name, sizeof(m->service_name),
				 "leak");
			snprintf(m->prog, sizeof(m->prog), "sluice-fuzz");
			break;
		case 1:
			m->type = SL_MSG_REQUEST;
			m->req.id = (int64_t)k + 1;
			m->req.kind = SL_REQ_MESSAGE;
			m->req.service = sl_nf_service(nf);
			snprintf(m->req.mkey, sizeof(m->req.mkey), "k");
			snprintf(m->req.value, sizeof(m->req.value), "v");
			break;
		case 2:
			m->type = 9;
			break;
		default:
			m->type = SL_MSG_DEREGISTER;
		}
		__atomic_store_n(&m->type, m->type, __ATOMIC_RELEASE);
		while (rte_ring_mp_enqueue(g_shm->msg_ring, m) != 0)
			rte_pause();
		deadline = rte_rdtsc() + rte_get_tsc_hz() * 5;
		while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) {
			if (rte_rdtsc() > deadline) {
				printf("fuzz-leak-error: no answer\n");
				_exit(1);
			}
			usleep(100);
		}
		m->error[sizeof(m->error) - 1] = '\0';
		printf("fuzz-leak-reply: type=%u result=%d error=%s\n",
		       m->type, m->result, m->error);
		held[k] = m;
	}
	printf("fuzz-leak: pid=%d held=%lu\n", getpid(), k);
	fflush(stdout);
	if (strcmp(then, "hang") == 0)
		for (;;)
			pause();
	if (strcmp(then, "late") == 0) {
		sleep(2);
		for (unsigned long i = 0; i < k; i++)
			sl_msg_put(g_shm, held[i]);
		printf("fuzz-leak: returned=%lu\n", k);
		fflush(stdout);
	}
	_exit(0);
}

static int
fz_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option lo[] = {
		{"msgs", required_argument, NULL, 'n'},
		{"seed", required_argument, NULL, 's'},
		{"verdicts", no_argument, NULL, 'v'},
		{"leak", required_argument, NULL, 'l'},
		{"leak-then", required_argument, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	unsigned long leak = 0;
	const char *then = "exit";
	int c;

	(void)nf;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			g_n = strtoul(optarg, NULL, 10);
			break;
		case 's':
			g_rnd = strtoull(optarg, NULL, 10) * 2 + 1;
			break;
		case 'v':
			g_verdicts = 1;
			break;
		case 'l':
			leak = strtoul(optarg, NULL, 10);
			break;
		case 't':
			then = optarg;
			break;
		default:
			fprintf(stderr, "sluice-fuzz: --msgs N --seed S "
					"--verdicts --leak N --leak-then "
					"exit|hang|late\n");
			return EINVAL;
		}
	}
	rte_memzone_walk(find_shm, NULL);
	if (g_shm == NULL) {
		fprintf(stderr, "sluice-fuzz: no sluiced shared memory\n");
		return ENOENT;
	}
	if (g_n == 0)
		printf("fuzz-done: sent=0 replies=0 timeouts=0 stray=0\n");
	fflush(stdout);
	if (leak > 0) {
		pid_t child = fork();

		if (child < 0) {
			fprintf(stderr, "sluice-fuzz: fork: %s\n",
				strerror(errno));
			return errno;
		}
		if (child == 0)
			leak_child(nf, leak, then);
		/* exit and late: reaped here; hang: it is killed by the test
		 * and stays a zombie, which counts as exited. */
		if (strcmp(then, "hang") != 0)
			waitpid(child, NULL, 0);
	}
	return 0;
}

static const struct sl_nf_ops ops = {
	.name = "sluice-fuzz",
	.service = "fuzz",
	.access = SL_ACCESS_READ | SL_ACCESS_ROUTE,
	.init = fz_init,
	.process = fz_process,
	.tick = fz_tick,
	.tick_ms = 1,
	.on_reply = fz_reply,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&ops, argc, argv);
}
