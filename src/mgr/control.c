/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: JSON-RPC on a Unix socket (one object per line),
 * NF death notices (pidfds become readable when the process exits), the
 * registration ring, quiescent-state actions, and event publication.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sluiced.h"

#define MAX_CONNS 64
#define MAX_LINE (64 * 1024)
#define TAG_LISTEN 1ull
#define TAG_CONN 2ull
#define TAG_PID 3ull
#define EP(tag, idx) (((tag) << 32) | (uint64_t)(idx))

struct conn {
	int fd;
	int subscribed;
	size_t len;
	char *buf; /* MAX_LINE + 1 */
};

static struct conn g_conns[MAX_CONNS];

static int
mkdir_p(const char *path)
{
	char tmp[256];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int
sl_control_init(struct sl_mgr *m, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct epoll_event ev = {.events = EPOLLIN};
	char dir[sizeof(sa.sun_path)];

	for (int i = 0; i < MAX_CONNS; i++)
		g_conns[i].fd = -1;
	snprintf(dir, sizeof(dir), "%s", m->o.socket_path);
	if (mkdir_p(dirname(dir)) != 0) {
		snprintf(err, errlen, "cannot create folder for %s: %s",
			 m->o.socket_path, strerror(errno));
		return -1;
	}
	unlink(m->o.socket_path); /* precheck() found it stale */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->o.socket_path);
	m->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 ||
	    bind(m->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(m->listen_fd, 16) != 0) {
		snprintf(err, errlen,
			 "cannot listen on %s: %s; pass --socket PATH",
			 m->o.socket_path, strerror(errno));
		return -1;
	}
	chmod(m->o.socket_path, 0660);
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.u64 = EP(TAG_LISTEN, 0);
	if (m->epfd < 0 ||
	    epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->listen_fd, &ev) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
sl_control_watch_pid(struct sl_mgr *m, uint16_t instance, int pidfd)
{
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u64 = EP(TAG_PID, instance)};

	epoll_ctl(m->epfd, EPOLL_CTL_ADD, pidfd, &ev);
}

static void
conn_close(struct sl_mgr *m, struct conn *c)
{
	epoll_ctl(m->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int
conn_send(struct conn *c, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	size_t len, off = 0;
	int rc = 0;

	if (s == NULL)
		return -1;
	len = strlen(s);
	s[len] = '\n'; /* json_dumps leaves room for the NUL we replace */
	while (off < len + 1) {
		ssize_t w = send(c->fd, s + off, len + 1 - off, MSG_NOSIGNAL);

		if (w <= 0) {
			rc = -1;
			break;
		}
		off += (size_t)w;
	}
	free(s);
	return rc;
}

void
sl_event(const char *kind, json_t *data)
{
	struct timespec ts;
	json_t *ev;

	clock_gettime(CLOCK_REALTIME, &ts);
	ev = json_pack("{s:s, s:s, s:{s:s, s:f, s:o}}", "jsonrpc", "2.0",
		       "method", "event", "params", "kind", kind, "ts",
		       (double)ts.tv_sec + ts.tv_nsec / 1e9, "data",
		       data != NULL ? data : json_object());
	if (ev == NULL)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		if (g_conns[i].fd >= 0 && g_conns[i].subscribed)
			conn_send(&g_conns[i], ev);
	json_decref(ev);
}

static void
accept_conn(struct sl_mgr *m)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct timeval tv = {.tv_sec = 1};
	int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	int i;

	if (fd < 0)
		return;
	for (i = 0; i < MAX_CONNS && g_conns[i].fd >= 0; i++)
		;
	if (i == MAX_CONNS) {
		static const char busy[] =
			"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
			"-32000,\"message\":\"too many control connections "
			"(64): close some\"}}\n";
		if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL) < 0)
			sl_log("control: refused a connection (too many)");
		close(fd);
		return;
	}
	g_conns[i].buf = malloc(MAX_LINE + 1);
	if (g_conns[i].buf == NULL) {
		close(fd);
		return;
	}
	/* A client that does not read must not stall the control thread. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	g_conns[i].fd = fd;
	g_conns[i].len = 0;
	g_conns[i].subscribed = 0;
	ev.data.u64 = EP(TAG_CONN, i);
	epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void
conn_read(struct sl_mgr *m, struct conn *c)
{
	ssize_t r = recv(c->fd, c->buf + c->len, MAX_LINE + 1 - c->len, 0);
	char *start, *nl;

	if (r <= 0) {
		conn_close(m, c);
		return;
	}
	c->len += (size_t)r;
	start = c->buf;
	while ((nl = memchr(start, '\n', c->len - (size_t)(start - c->buf))) !=
	       NULL) {
		size_t len = (size_t)(nl - start);
		int sub = 0;
		json_t *resp;

		if (len > 0 && start[len - 1] == '\r')
			len--;
		if (len > 0) {
			resp = sl_rpc_handle(m, start, len, &sub);
			if (sub)
				c->subscribed = 1;
			if (resp != NULL) {
				int rc = conn_send(c, resp);

				json_decref(resp);
				if (rc != 0) {
					conn_close(m, c);
					return;
				}
			}
			if (m->quit)
				return;
		}
		start = nl + 1;
	}
	c->len -= (size_t)(start - c->buf);
	memmove(c->buf, start, c->len);
	if (c->len > MAX_LINE) {
		json_t *e = json_pack(
			"{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			"error", "code", -32600, "message",
			"request line longer than 65536 bytes; closing");
		conn_send(c, e);
		json_decref(e);
		conn_close(m, c);
	}
}

void
sl_control_run(struct sl_mgr *m)
{
	struct epoll_event evs[32];

	while (!m->quit) {
		int n;

		/* Waiting holds no flow entry: quiescent for the RX thread. */
		__atomic_store_n(&m->shm->ctl_idle, 1, __ATOMIC_RELEASE);
		n = epoll_wait(m->epfd, evs, RTE_DIM(evs), 5);
		__atomic_store_n(&m->shm->ctl_idle, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&m->shm->ctl_heartbeat,
				 m->shm->ctl_heartbeat + 1, __ATOMIC_RELEASE);

		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64 >> 32;
			uint32_t idx = (uint32_t)evs[i].data.u64;

			if (tag == TAG_LISTEN)
				accept_conn(m);
			else if (tag == TAG_CONN && g_conns[idx].fd >= 0)
				conn_read(m, &g_conns[idx]);
			else if (tag == TAG_PID)
				sl_nf_died(m, (uint16_t)idx);
		}
		sl_registry_poll(m);
	}
}

void
sl_control_close(struct sl_mgr *m)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (g_conns[i].fd >= 0)
			conn_close(m, &g_conns[i]);
	if (m->listen_fd >= 0) {
		close(m->listen_fd);
		unlink(m->o.socket_path);
	}
	if (m->epfd >= 0)
		close(m->epfd);
}
