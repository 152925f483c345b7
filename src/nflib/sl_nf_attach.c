/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's attach: EAL init as a secondary process of the sluiced named
 * by --node (one NF at a time, EAL's debug lines kept for a failure), then
 * sluiced's shared state.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf_dyn.h>
#include <rte_memzone.h>

#include "sl_nf_int.h"

/*
 * EAL's messages while the NF attaches. For any failure to set up memory,
 * rte_eal_init() says only "Cannot allocate memory"; the reason (a file it
 * could not open or lock, an area it could not map) is in EAL's debug
 * lines. Unless --log-level is given, EAL logs at debug level into this
 * stream during rte_eal_init(): EAL's warnings and worse, and every line
 * of other components, go to stderr as before; EAL's other lines are kept
 * (the last EAL_KEPT) and printed only if the attach fails. File-static:
 * EAL's log stream is process-wide, and it may write here from any of its
 * threads while rte_eal_init() runs, with no NF handle at hand.
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
 * in CI). 0 with *fd the fd holding the folder's attach lock (flock: gone
 * with us if we die) or -1 after saying why there is none (the attach goes
 * on without it), or ECANCELED if a stop signal came while waiting for it.
 */
#define ATTACH_WAIT_S 60

static int
attach_lock(const char *prog, const char *config, int *lock_fd)
{
	const char *slash = strrchr(config, '/');
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%.*s/sluice_attach.lock",
		 slash != NULL ? (int)(slash - config) : 0, config);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	*lock_fd = fd;
	if (fd < 0) {
		fprintf(stderr,
			"%s: cannot open %s (%s): attaching without waiting for "
			"other NFs to finish theirs\n",
			prog, path, strerror(errno));
		return 0;
	}
	for (unsigned int ms = 0; flock(fd, LOCK_EX | LOCK_NB) != 0; ms++) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			fprintf(stderr,
				"%s: cannot lock %s (%s): attaching without "
				"waiting for other NFs to finish theirs\n",
				prog, path, strerror(errno));
			break;
		}
		if (nfi_stop_asked()) { /* nothing attached yet: stop here */
			close(fd);
			*lock_fd = -1;
			return ECANCELED;
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
	return 0;
}

/*
 * The sluiced named by --node must be running: its DPDK config file is
 * there and locked (sluiced, the DPDK primary, holds a lock on it while
 * it runs; without it the folder is what a killed sluiced left, and
 * attaching would only end in EAL errors and a timeout). 0, or ENOENT (no
 * config file) or ESRCH (a killed sluiced's) after saying why not.
 */
static int
node_running(struct sl_nf *nf, const char *node)
{
	struct stat st;

	snprintf(nf->config, sizeof(nf->config),
		 "/var/run/dpdk/sluice_%s/config", node);
	if (stat(nf->config, &st) != 0) {
		fprintf(stderr,
			"%s: no sluiced named '%s' is running (%s not found): "
			"start it first (sluiced -- --name %s), or pass "
			"--node NAME\n",
			nf->prog, node, nf->config, node);
		return ENOENT;
	}
	if (!rte_eal_primary_proc_alive(nf->config)) {
		fprintf(stderr,
			"%s: no sluiced named '%s' is running: /var/run/dpdk/"
			"sluice_%s is left from one that was killed; start "
			"sluiced again (sluiced -- --name %s, or sluice up), "
			"which replaces it, or remove it with "
			"scripts/cleanup.sh %s\n",
			nf->prog, node, node, node, node);
		return ESRCH;
	}
	return 0;
}

/*
 * rte_eal_init() as a secondary of the sluiced of a->node, with our signal
 * handlers set and the CPU affinity we had (or --core) restored after.
 * 0; ECANCELED after a stop signal while waiting to attach (said so);
 * another positive errno after saying what failed.
 */
int
nfi_eal_attach(struct sl_nf *nf, struct nf_args *a)
{
	cpu_set_t saved;
	int rc, lock_fd;

	rc = node_running(nf, a->node);
	if (rc != 0)
		return rc;
	/* Our handlers before rte_eal_init: a SIGTERM (nf.scale cancelling a
	 * replica that is starting, a launcher stopping) or Ctrl-C while EAL
	 * attaches must not end us there. Killed inside EAL's shared
	 * read-locked sections, we would leave a reader on the shared
	 * memory-hotplug lock for good, and sluiced's rte_eal_cleanup() at
	 * exit would spin on it for ever. We attach, then stop after. */
	nfi_signals_install();
	sched_getaffinity(0, sizeof(saved), &saved);
	if (a->eal_capture) {
		/* Never closed: an EAL thread may still hold it. Static,
		 * so that it stays reachable once EAL lets it go. */
		static FILE *eal_log;

		eal_log = fopencookie(NULL, "w",
				      (cookie_io_functions_t){
					      .write = eal_log_write});
		if (eal_log != NULL)
			rte_openlog_stream(eal_log);
	}
	if (attach_lock(nf->prog, nf->config, &lock_fd) != 0) {
		fprintf(stderr,
			"%s: stopped by a signal while waiting to "
			"attach\n",
			nf->prog);
		return ECANCELED;
	}
	/* rte_eal_init: -1 with rte_errno, turned into a positive errno */
	rc = rte_eal_init(a->eal_argc, a->eal_argv);
	if (lock_fd >= 0)
		close(lock_fd);
	if (a->eal_capture) {
		rte_log_set_level(RTE_LOGTYPE_EAL, RTE_LOG_WARNING);
		rte_openlog_stream(NULL);
	}
	if (rc < 0) {
		int err = rte_errno;

		fprintf(stderr,
			"%s: cannot attach to sluiced '%s' as a DPDK secondary "
			"process: %s\n",
			nf->prog, a->node,
			err != 0 ? rte_strerror(err)
				 : "see the EAL messages above (is this "
				   "NF built from the same tree?)");
		eal_kept_print(nf->prog);
		return err != 0 ? err : EIO;
	}
	/* No per-lcore mempool cache until sluiced gives us an lcore id of
	 * our own at registration: several NF processes may share an EAL
	 * lcore id, and a shared cache would be corrupted. */
	RTE_PER_LCORE(_lcore_id) = LCORE_ID_ANY;
	if (a->core >= 0) {
		CPU_ZERO(&saved);
		CPU_SET(a->core, &saved);
	}
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	return 0;
}

int
nfi_attach(struct sl_nf *nf)
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
		return ENOENT;
	}
	nf->shm = mz->addr;
	if (nf->shm->magic != SL_SHM_MAGIC ||
	    nf->shm->version != SL_SHM_VERSION) {
		fprintf(stderr,
			"%s: sluiced '%s' speaks shared-memory version %u, this "
			"NF was built for %u: rebuild the NF and sluiced from "
			"the same tree\n",
			nf->prog, nf->node, nf->shm->version, SL_SHM_VERSION);
		return EPROTO;
	}
	nf->meta_off = rte_mbuf_dynfield_lookup(SL_DYNFIELD_NAME, NULL);
	if (nf->meta_off < 0 || nf->meta_off != nf->shm->dynfield_offset) {
		fprintf(stderr, "%s: packet metadata field '%s' not found\n",
			nf->prog, SL_DYNFIELD_NAME);
		return ENOENT;
	}
	nfi_set_pkt_meta_off(nf->meta_off);
	nf->burst = nf->shm->burst;
	return 0;
}
