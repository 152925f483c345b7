/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runtime scaling (nf.scale): sluiced starts new replicas of a service as
 * copies of its newest running instance — same executable, arguments
 * (without --instance), working directory, CPU affinity, and stdout /
 * stderr appended to the same files — and scales in by asking the newest
 * instances to stop (they deregister and drain: nothing is lost).
 *
 * A replica that cannot start (its program or directory gone) fails the
 * nf.scale call; one that exits before it registers, or has not registered
 * within --scale-register-ms, is logged and published (nf.scale.failed),
 * and the latter is stopped: none is left waiting, or forgotten, silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "sluiced.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define MAX_ARGV 256
#define MAX_CMDLINE (64 * 1024)
#define DELETED " (deleted)" /* readlink of a program replaced since */

extern char **environ;

/* Reads /proc/PID/cmdline into argv (pointers into buf), *argc of them:
 * 0, or a positive errno. */
static int
read_cmdline(int pid, char *buf, size_t size, char **argv, int max, int *argcp)
{
	char path[64];
	ssize_t n;
	int fd, argc = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return EIO;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n && argc < max - 1;) {
		argv[argc++] = &buf[i];
		i += (ssize_t)strlen(&buf[i]) + 1;
	}
	argv[argc] = NULL;
	*argcp = argc;
	return 0;
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

/* Cuts DELETED off the end of a path readlink gave: 1 if it was there. */
static int
strip_deleted(char *path)
{
	size_t len = strlen(path), d = strlen(DELETED);

	if (len <= d || strcmp(&path[len - d], DELETED) != 0)
		return 0;
	path[len - d] = '\0';
	return 1;
}

/*
 * The child of spawn_like, between fork and exec: only async-signal-safe
 * calls. Runs exe_fd with argv in cwd ("": sluiced's) on cpus (NULL: as
 * inherited), stdout and stderr to out_fd and err_fd (-1: /dev/null);
 * if it cannot, writes {step, errno} to status_fd (step 1: the working
 * directory, 2: exec) and exits.
 */
static void __attribute__((noreturn))
spawn_child(int exe_fd, char **argv, const char *cwd, const cpu_set_t *cpus,
	    int out_fd, int err_fd, int status_fd)
{
	int null_fd = open("/dev/null", O_RDWR);
	int report[2] = {0, 0};
	sigset_t none;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* pending ones act now */
	setsid(); /* Ctrl-C at sluiced's terminal is sluiced's */
	dup2(null_fd, 0);
	dup2(out_fd >= 0 ? out_fd : null_fd, 1);
	dup2(err_fd >= 0 ? err_fd : null_fd, 2);
	/* None of sluiced's own descriptors goes to the replica: its
	 * hugepage and memseg files (with their locks), its control and DPDK
	 * sockets, its DPDK config file, whose lock is how NFs see that
	 * sluiced is gone. A replica held ~300 of them (twice a launched
	 * NF's count), and kept them, locks included, after sluiced died. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
		for (int fd = 3; fd < 4096; fd++)
			(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	report[0] = 1;
	if (cwd[0] == '\0' || chdir(cwd) == 0) {
		if (cpus != NULL)
			sched_setaffinity(0, sizeof(*cpus), cpus);
		report[0] = 2;
		fexecve(exe_fd, argv, environ);
	}
	report[1] = errno;
	if (write(status_fd, report, sizeof(report)) < 0)
		_exit(125);
	_exit(report[0] == 1 ? 126 : 127);
}

/* Starts a copy of instance `model`; `log` gets where its stderr goes.
 * 0 with *pidp the child's pid, once it has exec'd the program, or a
 * positive errno with err filled. */
static int
spawn_like(const struct sl_mgr *m, const struct sl_nf_slot *model, char *log,
	   size_t loglen, int *pidp, char *err, size_t errlen)
{
	static char buf[MAX_CMDLINE];
	char *argv[MAX_ARGV], exe[PATH_MAX], cwd[PATH_MAX], path[64];
	cpu_set_t cpus;
	sigset_t all, old;
	int argc = 0, out_fd = -1, err_fd = -1, exe_fd, has_cpus, status[2];
	int rc = 0;
	int report[2] = {0, 0}; /* from the child: {step, errno} */
	ssize_t n;
	pid_t pid;

	if (read_cmdline(model->pid, buf, sizeof(buf), argv, MAX_ARGV, &argc) !=
	    0)
		argc = 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", model->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	/* The model's program itself, exec'd by descriptor: the same one
	 * even if its file was replaced since (a rebuild unlinks it, and the
	 * path would then name nothing, or another build). */
	exe_fd = open(path, O_PATH | O_CLOEXEC);
	if (argc <= 0 || n <= 0 || exe_fd < 0) {
		if (exe_fd >= 0)
			close(exe_fd);
		snprintf(err, errlen,
			 "cannot read the command line of instance %u (pid "
			 "%d) to copy it",
			 model->instance, model->pid);
		return EIO;
	}
	exe[n] = '\0';
	if (strip_deleted(exe))
		mgr_log(m,
			"nf.scale: %s was replaced or removed since instance %u "
			"started; its replicas run instance %u's program (restart "
			"the service to run the new one)",
			exe, model->instance, model->instance);
	strip_instance(argv, argc);
	snprintf(path, sizeof(path), "/proc/%d/cwd", model->pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	cwd[n > 0 ? n : 0] = '\0';
	(void)strip_deleted(cwd); /* removed: chdir says so */
	snprintf(path, sizeof(path), "/proc/%d/fd/2", model->pid);
	n = readlink(path, log, loglen - 1);
	log[n > 0 ? n : 0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/fd/1", model->pid);
	out_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/fd/2", model->pid);
	err_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	has_cpus = sched_getaffinity(model->pid, sizeof(cpus), &cpus) == 0;
	/* The child reports here why it could not exec; exec closes it. */
	if (pipe2(status, O_CLOEXEC) != 0) {
		rc = errno;
		snprintf(err, errlen, "pipe: %s", strerror(rc));
		goto out;
	}

	/* Signals stay blocked from fork until the child has put back the
	 * default actions: a SIGTERM from nf.scale cancelling the replica at
	 * once (before the child has even run) would otherwise reach a copy of
	 * sluiced's handler, be lost, and the replica would run on. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		spawn_child(exe_fd, argv, cwd, has_cpus ? &cpus : NULL, out_fd,
			    err_fd, status[1]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(status[1]);
	if (pid < 0) {
		rc = errno;
		snprintf(err, errlen, "fork: %s", strerror(rc));
		close(status[0]);
		goto out;
	}
	/* Until it has exec'd (the pipe closes) or said why not. */
	do
		n = read(status[0], report, sizeof(report));
	while (n < 0 && errno == EINTR);
	close(status[0]);
	*pidp = pid;
	if (n == (ssize_t)sizeof(report)) {
		if (report[0] == 1)
			snprintf(err, errlen,
				 "cannot start a copy of instance %u: its "
				 "working directory %s: %s; start the service "
				 "again from a directory that exists",
				 model->instance, cwd, strerror(report[1]));
		else
			snprintf(err, errlen,
				 "cannot start a copy of instance %u: exec %s: "
				 "%s",
				 model->instance, exe, strerror(report[1]));
		rc = report[1] > 0 ? report[1] : EIO;
	}
out:
	close(exe_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	return rc;
}

static int
pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* 1 once the process behind pidfd has exited. */
static int
pidfd_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return poll(&p, 1, 0) == 1;
}

/* 1 if pid took a slot (registered; it may be leaving since). */
static int
registered(const struct sl_shm *shm, int pid)
{
	for (uint16_t i = 0; i < shm->nf_hwm; i++)
		if (shm->nfs[i].state != SL_NF_FREE && shm->nfs[i].pid == pid)
			return 1;
	return 0;
}

static void
failed_event(const struct sl_mgr *m, const struct sl_scale_pending *p,
	     const char *reason)
{
	mgr_event(m, "nf.scale.failed",
		  json_pack("{s:s, s:i, s:i, s:s, s:s}", "service",
			    m->shm->services[p->service].name, "pid", p->pid,
			    "model", (int)p->model, "reason", reason, "log",
			    p->log));
}

/* A duration of milliseconds as a log line says it: "30 s", "1500 ms". */
static const char *
ms_text(char *buf, size_t len, uint32_t ms)
{
	if (ms % 1000 == 0)
		snprintf(buf, len, "%u s", ms / 1000);
	else
		snprintf(buf, len, "%u ms", ms);
	return buf;
}

/*
 * Looks at the replicas still starting: forgets those that registered;
 * reports those that exited first (their reason is in their log); reports
 * and stops (SIGTERM, then SIGKILL) those that have not registered in
 * --scale-register-ms (stuck attaching, say). `force`: look now, else at
 * most every 50 ms (registrations are looked at every time: this runs
 * right after they are handled, before a replica could also have left).
 */
static void
pending_poll(struct sl_mgr *m, int force)
{
	char reg[24], grace[24];
	const struct sl_shm *shm = m->shm;
	uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
	int look = force || now >= m->scale_next_tsc;
	uint16_t j = 0;

	if (m->n_scale_pending == 0)
		return;
	if (look)
		m->scale_next_tsc = now + hz / 20;
	for (uint16_t k = 0; k < m->n_scale_pending; k++) {
		struct sl_scale_pending *p = &m->scale_pending[k];
		const char *svc = shm->services[p->service].name;
		int keep = 0;

		if (registered(shm, p->pid)) {
			keep = 0; /* it took a slot: no longer starting */
		} else if (!look) {
			keep = 1;
		} else if (pidfd_exited(p->pidfd)) {
			if (!p->given_up) {
				mgr_log(m,
					"nf.scale %s: replica pid %d (copy of "
					"instance %u) exited before it "
					"registered: why is in its log, %s",
					svc, p->pid, p->model,
					p->log[0] != '\0' ? p->log : "(none)");
				failed_event(m, p, "exited");
			}
		} else if (!p->given_up && now > p->until_tsc) {
			mgr_log(m,
				"nf.scale %s: replica pid %d (copy of instance "
				"%u) has not registered within %s: stopping "
				"it (SIGTERM, SIGKILL after %s). What it said "
				"is in %s; if this repeats, look where the next "
				"one waits: gdb -p PID -batch -ex 'thread apply "
				"all bt'",
				svc, p->pid, p->model,
				ms_text(reg, sizeof(reg),
					m->o.scale_register_ms),
				ms_text(grace, sizeof(grace),
					m->o.scale_kill_ms),
				p->log[0] != '\0' ? p->log : "(no log)");
			failed_event(m, p, "timeout");
			pidfd_signal(p->pidfd, SIGTERM);
			p->given_up = 1;
			p->until_tsc = now + m->o.scale_kill_ms * hz / 1000;
			keep = 1;
		} else if (p->given_up && now > p->until_tsc) {
			mgr_log(m,
				"nf.scale %s: replica pid %d did not stop within "
				"%s of SIGTERM: killed it (SIGKILL)",
				svc, p->pid,
				ms_text(grace, sizeof(grace),
					m->o.scale_kill_ms));
			pidfd_signal(p->pidfd, SIGKILL);
		} else {
			keep = 1;
		}
		if (keep)
			m->scale_pending[j++] = *p;
		else
			close(p->pidfd);
	}
	m->n_scale_pending = j;
}


/* 1 once every pending replica has exited or registered (mgr_stop_all_nfs
 * stops those). */
static int
pending_all_gone(const struct sl_mgr *m)
{
	for (uint16_t k = 0; k < m->n_scale_pending; k++) {
		const struct sl_scale_pending *p = &m->scale_pending[k];

		if (!registered(m->shm, p->pid) && !pidfd_exited(p->pidfd))
			return 0;
	}
	return 1;
}

/*
 * A replica still attaching while sluiced cleans up would ask it for
 * memory after the clean-up, and the hugepage files made for it would
 * outlive both processes: every replica that has not registered is
 * stopped and waited for before the NFs and EAL go. Registrations are
 * answered meanwhile, so that one registering now is stopped as an NF.
 */
static void
stop_pending(struct sl_mgr *m, unsigned int timeout_ms)
{
	uint64_t hz = rte_get_tsc_hz();
	uint64_t deadline = rte_rdtsc() + hz / 1000 * timeout_ms;
	int killed = 0;

	for (uint16_t k = 0; k < m->n_scale_pending; k++)
		if (!registered(m->shm, m->scale_pending[k].pid))
			pidfd_signal(m->scale_pending[k].pidfd, SIGTERM);
	while (!pending_all_gone(m)) {
		if (rte_rdtsc() >= deadline) {
			if (killed)
				break;
			for (uint16_t k = 0; k < m->n_scale_pending; k++) {
				struct sl_scale_pending *p =
					&m->scale_pending[k];

				if (registered(m->shm, p->pid) ||
				    pidfd_exited(p->pidfd))
					continue;
				mgr_log(m,
					"shutting down: replica pid %d did not "
					"stop within %u ms of SIGTERM: killed it "
					"(SIGKILL)",
					p->pid, timeout_ms);
				pidfd_signal(p->pidfd, SIGKILL);
			}
			killed = 1;
			deadline = rte_rdtsc() + hz / 1000 * timeout_ms;
		}
		mgr_registry_poll(m);
		pending_poll(m, 0);
		usleep(1000);
	}
	for (uint16_t k = 0; k < m->n_scale_pending; k++)
		close(m->scale_pending[k].pidfd);
	m->n_scale_pending = 0;
}

/* Starts one copy of instance j->model for j->service, its pid appended
 * to j->started. 0, or a positive errno with err filled (those started
 * so far stay pending). */
static int
scale_out_one(struct sl_mgr *m, struct sl_scale_job *j, char *err,
	      size_t errlen)
{
	const struct sl_service *svc = &m->shm->services[j->service];
	const struct sl_nf_slot *model = &m->shm->nfs[j->model];
	struct sl_scale_pending *p;
	int pid = -1, rc;

	if (m->n_scale_pending == SL_SCALE_PENDING_MAX) {
		snprintf(err, errlen,
			 "%u replicas are still starting: wait until "
			 "they register (nf.list)",
			 (unsigned int)m->n_scale_pending);
		return EBUSY;
	}
	p = &m->scale_pending[m->n_scale_pending];
	rc = spawn_like(m, model, p->log, sizeof(p->log), &pid, err, errlen);
	if (rc != 0) {
		mgr_log(m, "nf.scale %s: %s", svc->name, err);
		return rc;
	}
	/* It has exec'd (not exited: nothing reaped it yet, as its end is
	 * first seen by a later look). */
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0) {
		snprintf(err, errlen, "started pid %d but cannot watch it: %s",
			 pid, strerror(errno));
		mgr_log(m, "nf.scale %s: %s", svc->name, err);
		return EMFILE;
	}
	p->pid = pid;
	p->service = j->service;
	p->model = model->instance;
	p->given_up = 0;
	p->until_tsc =
		rte_rdtsc() + m->o.scale_register_ms * rte_get_tsc_hz() / 1000;
	m->n_scale_pending++;
	json_array_append_new(j->started, json_integer(pid));
	mgr_log(m, "nf.scale %s: started pid %d (copy of instance %u)",
		svc->name, pid, model->instance);
	return 0;
}

/* The job's replicas are started: scales in if asked to, and makes the
 * reply (published as nf.scale too). */
static json_t *
scale_finish(struct sl_mgr *m, struct sl_scale_job *j)
{
	struct sl_shm *shm = m->shm;
	const struct sl_service *svc = &shm->services[j->service];
	json_t *stopping = json_array(), *cancelled = json_array(), *out;
	uint32_t running = j->running, starting = j->starting;

	/* Scale in: replicas still starting go first (newest first), as
	 * they hold no traffic yet; then running instances. */
	for (int k = (int)m->n_scale_pending - 1;
	     k >= 0 && running + starting > j->replicas && starting > 0; k--) {
		struct sl_scale_pending *p = &m->scale_pending[k];

		if (p->service != j->service || p->given_up)
			continue;
		pidfd_signal(p->pidfd, SIGTERM);
		close(p->pidfd);
		json_array_append_new(cancelled, json_integer(p->pid));
		mgr_log(m, "nf.scale %s: stopped pid %d before it registered",
			svc->name, p->pid);
		*p = m->scale_pending[--m->n_scale_pending];
		starting--;
	}
	/* Scale in: the newest first. */
	while (running > j->replicas) {
		struct sl_nf_slot *newest = NULL;

		for (uint16_t i = 0; i < shm->nf_hwm; i++) {
			struct sl_nf_slot *s = &shm->nfs[i];

			if (s->service == j->service &&
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
	out = json_pack("{s:s, s:i, s:o, s:o, s:o}", "service", svc->name,
			"replicas", (int)j->replicas, "started_pids",
			j->started, "stopping", stopping, "cancelled_pids",
			cancelled);
	j->started = NULL;
	mgr_event(m, "nf.scale", json_deep_copy(out));
	return out;
}

/*
 * A parked nf.scale, one step per control-loop turn, after the registry's
 * poll: the next replica is started, or, all started, the scale-in and the
 * reply are made. Between two forks (30-80 ms each) the control loop
 * turns, so the replicas already waiting to register are answered: 70 of
 * them started in one go would otherwise wait longer than an NF waits for
 * its answer (5 s), and the first ones would give up and exit.
 */
static void
job_step(struct sl_mgr *m)
{
	struct sl_scale_job *j = &m->scale_job;

	if (!j->active || j->done)
		return;
	if (j->left > 0) {
		j->rc = scale_out_one(m, j, j->err, sizeof(j->err));
		j->left--;
		if (j->rc == 0)
			return;
		json_decref(j->started);
		j->started = NULL;
		j->done = 1;
		return;
	}
	j->out = scale_finish(m, j);
	j->done = 1;
}

/* The park's ready: 1 once the job is done, its reply in rc, out (a
 * reference passed on) or err. */
static int
job_ready(struct sl_mgr *m, int *rc, json_t **out, char *err, size_t errlen)
{
	struct sl_scale_job *j = &m->scale_job;

	if (!j->active || !j->done)
		return 0;
	*rc = j->rc;
	*out = j->out;
	snprintf(err, errlen, "%s", j->err);
	memset(j, 0, sizeof(*j));
	return 1;
}

static json_t *
job_done(struct sl_mgr *m, const struct sl_rpc_park *pk, int rc, json_t *out,
	 const char *err, struct sl_rpc_err *e)
{
	(void)m;
	(void)pk;
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	return json_incref(out);
}

/* Starts (or plans) nf.scale of service to replicas: 0 with *out the
 * reply when nothing is to start, or with *parked 1 when replicas are to
 * start (the first started, the rest by job_step: the request parks); or
 * a positive errno with err filled. */
static int
scale(struct sl_mgr *m, uint16_t service, uint32_t replicas, json_t **out,
      int *parked, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	const struct sl_service *svc = &shm->services[service];
	struct sl_scale_job *j = &m->scale_job;
	const struct sl_nf_slot *model = NULL;
	uint32_t running = 0, starting = 0;
	int rc;

	pending_poll(m, 1);
	for (uint16_t k = 0; k < m->n_scale_pending; k++)
		starting += m->scale_pending[k].service == service &&
			    !m->scale_pending[k].given_up;

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
		snprintf(err, errlen,
			 "service '%s' has no running instance to copy: start "
			 "one first (sluice apply DEPLOYMENT.yaml starts the "
			 "file's replicas; or run its program)",
			 svc->name);
		return ENOENT;
	}
	if (replicas > shm->max_nfs) {
		snprintf(err, errlen, "%u replicas is more than --max-nfs %u",
			 replicas, shm->max_nfs);
		return ENOSPC;
	}
	memset(j, 0, sizeof(*j));
	j->service = service;
	j->replicas = replicas;
	j->running = running;
	j->starting = starting;
	j->started = json_array();
	if (replicas <= running + starting) {
		*out = scale_finish(m, j);
		return 0;
	}
	j->model = (uint16_t)(model - shm->nfs);
	j->left = replicas - (running + starting);
	rc = scale_out_one(m, j, err, errlen);
	if (rc != 0) {
		json_decref(j->started);
		j->started = NULL;
		return rc;
	}
	j->left--;
	j->active = 1;
	*parked = 1;
	return 0;
}

static json_t *
rpc_nf_scale(struct sl_mgr *m, json_t *p, struct sl_rpc_err *e)
{
	json_t *r = json_object_get(p, "replicas"), *out = NULL;
	char err[512];
	int s = mgr_rpc_param_service(m, p, "service", e), rc, parked = 0;

	if (s < 0)
		return NULL;
	if (!json_is_integer(r) || json_integer_value(r) < 0)
		return mgr_rpc_fail(
			e, SL_RPC_E_PARAMS,
			"param 'replicas' (integer >= 0) is missing");
	rc = scale(m, (uint16_t)s, (uint32_t)json_integer_value(r), &out,
		   &parked, err, sizeof(err));
	if (rc != 0)
		return mgr_rpc_fail(e, SL_RPC_E_FAILED, "%s", err);
	if (parked) /* replicas to start: answered once job_step is done */
		return mgr_rpc_park(&(struct sl_rpc_park){.done = job_done,
							  .ready = job_ready});
	return out;
}

/* After the registry's poll (main.c's list): registrations handled. */
static void
scale_poll(struct sl_mgr *m)
{
	pending_poll(m, 0);
	job_step(m);
}

/* Before the NFs are stopped: replicas still starting get SIGTERM, then
 * SIGKILL after 2 s, and are waited for. */
static void
scale_stop(struct sl_mgr *m)
{
	struct sl_scale_job *j = &m->scale_job;

	/* A parked nf.scale: its reply is dropped (rpc.c), its replicas
	 * stopped below with the others still starting. */
	json_decref(j->started);
	json_decref(j->out);
	memset(j, 0, sizeof(*j));
	stop_pending(m, 2000);
}

static const struct sl_rpc_method sl_scale_methods[] = {
	{"nf.scale", rpc_nf_scale, SL_RPC_PARKS},
	{NULL, NULL, 0},
};

const struct mgr_module mgr_scale_module = {
	.name = "scale",
	.poll = scale_poll,
	.stop = scale_stop,
	.methods = sl_scale_methods,
};
