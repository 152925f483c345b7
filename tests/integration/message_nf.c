/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-msgnf, a test NF (built by tests/integration/test_message_reply.py)
 * for Message(service, key, value) from an NF (sluice/flow.h).
 *
 * With --to SERVICE it is a sender: the Message send=N (from the control
 * socket) makes it send N Messages noop=0 .. noop=N-1 to SERVICE, up to
 * --per-tick of them every millisecond, and print sluiced's answer to
 * each, to stderr:
 *
 *   msgnf-reply: n=3 id=4 result=0 reason=
 *   msgnf-reply: n=300 id=301 result=0 reason=1 of the 2 instances ...
 *   msgnf-done: sent=400 replies=400
 *
 * (n: the message's value; id: the request id sl_message returned; the
 * done line when every message has its answer). A message sluiced could
 * not queue prints "msgnf-not-queued: n=N error=E" and is sent again at
 * the next tick.
 *
 * Without --to it is a receiver: it prints each Message it gets,
 * "msgnf-received: key=noop value=3".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sluice/flow.h>
#include <sluice/nf.h>

#define MN_PROG "sluice-msgnf"
#define MN_MAX 100000

static char g_to[64];  /* "": a receiver */
static unsigned long g_per_tick = 1;
static unsigned long g_want, g_sent, g_replies;
static int64_t *g_ids; /* [g_want]: the request id of message n */

static int
mn_init(struct sl_nf *nf, int argc, char **argv)
{
	static const struct option lo[] = {
		{"to", required_argument, NULL, 't'},
		{"per-tick", required_argument, NULL, 'p'},
		{NULL, 0, NULL, 0},
	};
	double v;
	int c;

	(void)nf;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 't' && strlen(optarg) < sizeof(g_to)) {
			snprintf(g_to, sizeof(g_to), "%s", optarg);
		} else if (c == 'p') {
			if (sl_opt_number(MN_PROG, "--per-tick", optarg, 1,
					  1000, 0, &v) != 0)
				return EINVAL;
			g_per_tick = (unsigned long)v;
		} else {
			fprintf(stderr, MN_PROG ": usage: [--to SERVICE] "
					"[--per-tick N]\n");
			return EINVAL;
		}
	}
	return 0;
}

static void
mn_burst(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	(void)nf;
	(void)pkts;
	(void)n; /* packets follow NEXT */
}

static void
mn_message(struct sl_nf *nf, const char *key, const char *value)
{
	double v;

	(void)nf;
	if (g_to[0] == '\0') {
		fprintf(stderr, "msgnf-received: key=%s value=%s\n", key,
			value);
		return;
	}
	if (strcmp(key, "send") != 0 || g_ids != NULL ||
	    sl_parse_number(value, 1, MN_MAX, 0, &v) != 0) {
		fprintf(stderr,
			"msgnf-ignored: key=%s value=%s (send=1..%d, once)\n",
			key, value, MN_MAX);
		return;
	}
	g_ids = calloc((size_t)v, sizeof(*g_ids));
	if (g_ids == NULL) {
		fprintf(stderr, "msgnf-ignored: out of memory\n");
		return;
	}
	g_want = (unsigned long)v;
}

static void
mn_tick(struct sl_nf *nf, uint64_t now_ns)
{
	char value[32];
	int svc;

	(void)now_ns;
	if (g_ids == NULL || g_sent == g_want)
		return;
	svc = sl_service_id(nf, g_to);
	if (svc < 0) {
		fprintf(stderr, "msgnf-not-queued: n=%lu error=no service %s\n",
			g_sent, g_to);
		return;
	}
	for (unsigned long k = 0; k < g_per_tick && g_sent < g_want; k++) {
		int64_t id;

		snprintf(value, sizeof(value), "%lu", g_sent);
		id = sl_message(nf, (uint16_t)svc, "noop", value);
		if (id <= 0) {
			fprintf(stderr, "msgnf-not-queued: n=%lu error=%d\n",
				g_sent, (int)-id);
			return;
		}
		g_ids[g_sent++] = id;
	}
}

static void
mn_reply(struct sl_nf *nf, int64_t id, int result, const char *reason)
{
	unsigned long n = 0;

	(void)nf;
	while (n < g_sent && g_ids[n] != id)
		n++;
	if (n == g_sent) {
		fprintf(stderr, "msgnf-stray: id=%" PRId64 "\n", id);
		return;
	}
	fprintf(stderr, "msgnf-reply: n=%lu id=%" PRId64 " result=%d reason=%s\n",
		n, id, result, reason);
	if (++g_replies == g_want)
		fprintf(stderr, "msgnf-done: sent=%lu replies=%lu\n", g_sent,
			g_replies);
}

static void
mn_fini(struct sl_nf *nf)
{
	(void)nf;
	free(g_ids);
	g_ids = NULL;
}

static const struct sl_nf_ops mn_ops = {
	.name = "msgnf",
	.service = "msgnf",
	.access = SL_ACCESS_READ,
	.init = mn_init,
	.process = mn_burst,
	.tick = mn_tick,
	.tick_ms = 1,
	.on_message = mn_message,
	.on_reply = mn_reply,
	.fini = mn_fini,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&mn_ops, argc, argv);
}
