/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runtime scaling (nf.scale): sluiced starts new replicas of a service as
 * copies of its newest running instance — same executable, arguments
 * (without --instance), working directory, CPU affinity, and stdout /
 * stderr appended to the same files — and scales in by asking the newest
 * instances to stop (they deregister and drain: nothing is lost).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "sluiced.h"

#define MAX_ARGV 256
#define MAX_CMDLINE (64 * 1024)

/* Reads /proc/PID/cmdline into argv (pointers into buf). */
static int
read_cmdline(int pid, char *buf, size_t size, char **argv, int max)
{
	char path[64];
	ssize_t n;
	int fd, argc = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n && argc < max - 1;) {
		argv[argc++] = &buf[i];
		i += (ssize_t)strlen(&buf[i]) + 1;
	}
	argv[argc] = NULL;
	return argc;
}

/* Drops "--instance N" / "--instance=N" (after the "--" of EAL args). */
static int
strip_instance(char **argv, int argc)
{
	int j = 0;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--instance=", 11) == 0)
			continue;
		argv[j++] = argv[i];
	}
	argv[j] = NULL;
	return j;
}

/* Starts a copy of instance `model`. Returns the child's pid or -errno. */
static int
spawn_like(const struct sl_nf_slot *model, char *err, size_t errlen)
{
	static char buf[MAX_CMDLINE];
	char *argv[MAX_ARGV], exe[PATH_MAX], cwd[PATH_MAX], path[64];
	cpu_set_t cpus;
	sigset_t all, old;
	int argc, out_fd = -1, err_fd = -1, has_cpus;
	ssize_t n;
	pid_t pid;

	argc = read_cmdline(model->pid, buf, sizeof(buf), argv, MAX_ARGV);
	snprintf(path, sizeof(path), "/proc/%d/exe", model->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (argc <= 0 || n <= 0) {
		snprintf(err, errlen,
			 "cannot read the command line of instance %u (pid "
			 "%d) to copy it",
			 model->instance, model->pid);
		return -EIO;
	}
	exe[n] = '\0';
	strip_instance(argv, argc);
	snprintf(path, sizeof(path), "/proc/%d/cwd", model->pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	cwd[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/fd/1", model->pid);
	out_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/fd/2", model->pid);
	err_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	has_cpus = sched_getaffinity(model->pid, sizeof(cpus), &cpus) == 0;

	/* Signals stay blocked from fork until the child has put back the
	 * default actions: a SIGTERM from nf.scale cancelling the replica at
	 * once (before the child has even run) would otherwise reach a copy of
	 * sluiced's handler, be lost, and the replica would run on. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		/* The child: only async-signal-safe calls until exec. */
		int null_fd = open("/dev/null", O_RDWR);

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL); /* pending ones act now */
		setsid(); /* Ctrl-C at sluiced's terminal is sluiced's */
		dup2(null_fd, 0);
		dup2(out_fd >= 0 ? out_fd : null_fd, 1);
		dup2(err_fd >= 0 ? err_fd : null_fd, 2);
		if (cwd[0] != '\0' && chdir(cwd) != 0)
			_exit(126);
		if (has_cpus)
			sched_setaffinity(0, sizeof(cpus), &cpus);
		execv(exe, argv);
		_exit(127);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	return pid;
}

/* Forgets started replicas that registered, died or timed out. */
static void
pending_prune(struct sl_mgr *m)
{
	const struct sl_shm *shm = m->shm;
	uint64_t now = rte_rdtsc();
	uint16_t j = 0;

	for (uint16_t k = 0; k < m->n_scale_pending; k++) {
		const struct sl_scale_pending *p = &m->scale_pending[k];
		int gone = now > p->until_tsc ||
			   (kill(p->pid, 0) != 0 && errno == ESRCH);

		for (uint16_t i = 0; !gone && i < shm->nf_hwm; i++)
			gone = shm->nfs[i].state != SL_NF_FREE &&
			       shm->nfs[i].pid == p->pid;
		if (!gone)
			m->scale_pending[j++] = *p;
	}
	m->n_scale_pending = j;
}

int
sl_scale(struct sl_mgr *m, uint16_t service, uint32_t replicas, json_t **out,
	 char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const struct sl_service *svc = &shm->services[service];
	json_t *started = json_array(), *stopping = json_array();
	json_t *cancelled = json_array();
	const struct sl_nf_slot *model = NULL;
	uint32_t running = 0, starting = 0;

	pending_prune(m);
	for (uint16_t k = 0; k < m->n_scale_pending; k++)
		starting += m->scale_pending[k].service == service;

	/* Instances that count: running and not already asked to stop. */
	for (uint16_t i = 0; i < shm->nf_hwm; i++) {
		const struct sl_nf_slot *s = &shm->nfs[i];

		if (s->service != service || s->state != SL_NF_RUNNING ||
		    s->stop)
			continue;
		running++;
		if (model == NULL || s->started_tsc > model->started_tsc)
			model = s;
	}
	if (replicas > running + starting && model == NULL) {
		json_decref(started);
		json_decref(stopping);
		json_decref(cancelled);
		snprintf(err, errlen,
			 "service '%s' has no running instance to copy: start "
			 "one first (sluice up, or run its program)",
			 svc->name);
		return -ENOENT;
	}
	if (replicas > shm->max_nfs) {
		json_decref(started);
		json_decref(stopping);
		json_decref(cancelled);
		snprintf(err, errlen,
			 "%u replicas is more than --max-nfs %u", replicas,
			 shm->max_nfs);
		return -ENOSPC;
	}
	for (uint32_t k = running + starting; k < replicas; k++) {
		int pid;

		if (m->n_scale_pending == SL_SCALE_PENDING_MAX) {
			snprintf(err, errlen,
				 "%u replicas are still starting: wait until "
				 "they register (nf.list)",
				 (unsigned int)m->n_scale_pending);
			json_decref(started);
			json_decref(stopping);
			json_decref(cancelled);
			return -EBUSY;
		}
		pid = spawn_like(model, err, errlen);
		if (pid < 0) {
			json_decref(started);
			json_decref(stopping);
			json_decref(cancelled);
			return pid;
		}
		m->scale_pending[m->n_scale_pending++] =
			(struct sl_scale_pending){
				.pid = pid,
				.service = service,
				.until_tsc = rte_rdtsc() + SL_SCALE_REGISTER_S *
								  rte_get_tsc_hz(),
			};
		json_array_append_new(started, json_integer(pid));
		sl_log("nf.scale %s: started pid %d (copy of instance %u)",
		       svc->name, pid, model->instance);
	}
	/* Scale in: replicas still starting go first (newest first), as
	 * they hold no traffic yet; then running instances. */
	for (int k = (int)m->n_scale_pending - 1;
	     k >= 0 && running + starting > replicas && starting > 0; k--) {
		struct sl_scale_pending *p = &m->scale_pending[k];

		if (p->service != service)
			continue;
		kill(p->pid, SIGTERM);
		json_array_append_new(cancelled, json_integer(p->pid));
		sl_log("nf.scale %s: stopped pid %d before it registered",
		       svc->name, p->pid);
		*p = m->scale_pending[--m->n_scale_pending];
		starting--;
	}
	/* Scale in: the newest first. */
	while (running > replicas) {
		struct sl_nf_slot *newest = NULL;

		for (uint16_t i = 0; i < shm->nf_hwm; i++) {
			struct sl_nf_slot *s = &shm->nfs[i];

			if (s->service == service &&
			    s->state == SL_NF_RUNNING && !s->stop &&
			    (newest == NULL ||
			     s->started_tsc > newest->started_tsc))
				newest = s;
		}
		if (newest == NULL)
			break;
		__atomic_store_n(&newest->stop, 1, __ATOMIC_RELEASE);
		json_array_append_new(stopping, json_integer(newest->instance));
		running--;
	}
	*out = json_pack("{s:s, s:i, s:o, s:o, s:o}", "service", svc->name,
			 "replicas", (int)replicas, "started_pids", started,
			 "stopping", stopping, "cancelled_pids", cancelled);
	sl_event("nf.scale", json_deep_copy(*out));
	return 0;
}
