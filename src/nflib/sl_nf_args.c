/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's command line: EAL's arguments (before a --), libsluice's own
 * options and the NF's, and libsluice's --help.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_chain.h"
#include "sl_nf_int.h"
#include "sl_nf_opts.h"

/* libsluice's usage, then the NF's own options (ops->usage, then the
 * lines of ops->opts), to stdout. */
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
	if (ops->opts != NULL) {
		if (len == 0)
			putchar('\n');
		nfo_usage(ops);
	}
	fflush(stdout);
}

/* Matches OPT VALUE or OPT=VALUE at argv[*i] (and, if SHORT_OPT is not
 * NULL, SHORT_OPT VALUE); steps *i over the value. 0 with *out the value
 * if matched, 0 with *out NULL if not, EINVAL (said why) if the value is
 * missing. */
static int
take_value(int *i, int argc, char **argv, const char *opt,
	   const char *short_opt, const char **out)
{
	size_t len = strlen(opt);

	*out = NULL;
	if (strcmp(argv[*i], opt) == 0 ||
	    (short_opt != NULL && strcmp(argv[*i], short_opt) == 0)) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "%s: option %s needs a value\n",
				argv[0], argv[*i]);
			return EINVAL;
		}
		*out = argv[++*i];
		return 0;
	}
	if (strncmp(argv[*i], opt, len) == 0 && argv[*i][len] == '=')
		*out = argv[*i] + len + 1;
	return 0;
}

/*
 * 1 if arg, one of the NF's arguments, is an option of the NF whose value
 * is the next argument, as the NF's table says (the access bits of an
 * option given go into a->access). An NF without a table has its
 * arguments passed on one by one: a -h among them is the help.
 */
static int
nf_opt_value(struct nf_args *a, const struct sl_nf_ops *ops, const char *arg)
{
	const struct sl_nf_opt *o;
	const char *v;
	int ambiguous;

	if (ops->opts == NULL)
		return 0;
	o = nfo_find(ops->opts, arg, &v, &ambiguous);
	if (o == NULL)
		return 0;
	a->access |= o->access;
	return nfo_takes_value(o) && v == NULL;
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

/* --instance V into a: 0, or EINVAL after saying why. */
static int
instance_opt(struct nf_args *a, const char *prog, const char *v)
{
	char *end;

	a->instance = strtol(v, &end, 10);
	if (*end != '\0' || a->instance < 0 ||
	    a->instance >= SL_INSTANCE_NONE) {
		fprintf(stderr,
			"%s: --instance '%s' is not an "
			"instance id (0..65534)\n",
			prog, v);
		return EINVAL;
	}
	return 0;
}

/* --mode V into a: 0, or EINVAL after saying why. */
static int
mode_opt(struct nf_args *a, const char *prog, const char *v)
{
	if (strcmp(v, "shared") == 0) {
		a->mode = SL_MODE_SHARED;
	} else if (strcmp(v, "poll") == 0) {
		a->mode = SL_MODE_POLL;
	} else {
		fprintf(stderr, "%s: --mode '%s': use shared or poll\n", prog,
			v);
		return EINVAL;
	}
	return 0;
}

/* --core V into a: 0, or EINVAL after saying why. */
static int
core_opt(struct nf_args *a, const char *prog, const char *v)
{
	char *end, cpus[128];
	long c;

	c = strtol(v, &end, 10);
	if (*end != '\0' || c < 0 || c >= CPU_SETSIZE) {
		fprintf(stderr, "%s: --core '%s' is not a CPU number\n", prog,
			v);
		return EINVAL;
	}
	if (!cpu_allowed((int)c, cpus, sizeof(cpus))) {
		/* EAL would print its whole usage and
		 * fail; say which CPUs there are. */
		fprintf(stderr,
			"%s: --core %ld: this process may not "
			"run on CPU %ld; give one of the CPUs "
			"it may run on: %s\n",
			prog, c, c, cpus);
		return EINVAL;
	}
	a->core = (int)c;
	return 0;
}

/* Takes libsluice's own option at argv[*i] (and its value) into a: 0 with
 * *taken 1 if it is one, 0 with *taken 0 if not, EINVAL after saying what
 * was wrong with it. */
static int
lib_opt(struct nf_args *a, int *ip, int argc, char **argv, int *taken)
{
	const char *v;
	int rc;

	*taken = 1;
	rc = take_value(ip, argc, argv, "--node", NULL, &v);
	if (rc != 0 || v != NULL) {
		if (v != NULL)
			a->node = v;
		return rc;
	}
	rc = take_value(ip, argc, argv, "--service", "-s", &v);
	if (rc != 0 || v != NULL) {
		if (v != NULL)
			a->service = v;
		return rc;
	}
	rc = take_value(ip, argc, argv, "--instance", NULL, &v);
	if (rc != 0 || v != NULL)
		return rc != 0 ? rc : instance_opt(a, argv[0], v);
	rc = take_value(ip, argc, argv, "--mode", NULL, &v);
	if (rc != 0 || v != NULL)
		return rc != 0 ? rc : mode_opt(a, argv[0], v);
	rc = take_value(ip, argc, argv, "--core", NULL, &v);
	if (rc != 0 || v != NULL)
		return rc != 0 ? rc : core_opt(a, argv[0], v);
	*taken = 0;
	return 0;
}

/* EAL arguments libsluice adds unless given. */
static void
eal_defaults(struct nf_args *a)
{
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
}

/*
 * Splits argv into EAL's arguments (before a --), libsluice's and the
 * NF's. 0, or a positive errno after saying what was wrong (E2BIG, EINVAL),
 * or ECANCELED after printing the usage for -h/--help (nothing else done:
 * no EAL, no sluiced needed).
 * -h and --help are the help only where an option may stand: the value of
 * an option that takes one (libsluice's --service NAME, or the NF's, see
 * nf_opt_value) is that value, whatever it reads.
 */
int
nfi_parse_args(struct nf_args *a, const struct sl_nf_ops *ops, int argc,
	       char **argv)
{
	int sep = -1, i;

	memset(a, 0, sizeof(*a));
	a->node = getenv("SLUICE_NODE") ? getenv("SLUICE_NODE") : "sluice";
	a->service = ops->service;
	a->instance = -1;
	a->mode = SL_MODE_SHARED;
	a->core = -1;
	a->access = ops->access;
	if (argc + 8 > MAX_ARGS) {
		fprintf(stderr, "%s: too many arguments (%d)\n", argv[0], argc);
		return E2BIG;
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
		int rc, taken;

		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(argv[0], ops);
			return ECANCELED;
		}
		rc = lib_opt(a, &i, argc, argv, &taken);
		if (rc != 0)
			return rc;
		if (!taken) {
			a->nf_argv[a->nf_argc++] = argv[i];
			/* Its value goes with it, even a -h (a file so
			 * named, say): the NF's parsing takes it so too. */
			if (nf_opt_value(a, ops, argv[i]) && i + 1 < argc)
				a->nf_argv[a->nf_argc++] = argv[++i];
		}
	}
	a->nf_argv[a->nf_argc] = NULL;
	/* Without init nothing would read them: a mistyped --mdoe poll
	 * would run silently in shared mode. */
	if (ops->init == NULL && ops->opts == NULL && a->nf_argc > 1) {
		fprintf(stderr,
			"%s: unknown option '%s': this NF takes no options of "
			"its own (it has no init); libsluice's are --node, "
			"--service (-s), --instance, --mode and --core "
			"(--help)\n",
			argv[0], a->nf_argv[1]);
		return EINVAL;
	}

	if (a->service == NULL || !sl_name_valid(a->service)) {
		fprintf(stderr,
			"%s: service name '%s' is not valid (1-%d characters "
			"of A-Z a-z 0-9 _ - .); pass --service (-s) NAME\n",
			argv[0], a->service ? a->service : "", SL_NAME_LEN - 1);
		return EINVAL;
	}
	if (!sl_name_valid(a->node) || strlen(a->node) > SL_NODE_NAME_MAX) {
		fprintf(stderr, "%s: node name '%s' is not valid\n", argv[0],
			a->node);
		return EINVAL;
	}

	eal_defaults(a);
	return 0;
}
