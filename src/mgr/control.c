/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread: JSON-RPC on a Unix socket (one object per line),
 * NF death notices (pidfds become readable when the process exits), the
 * registration ring, quiescent-state actions, and event publication.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "sluiced.h"

#define LINE_BUF0 4096 /* a connection's first read buffer; it grows */
#define TAG_LISTEN 1ull
#define TAG_CONN 2ull
#define TAG_PID 3ull
#define TAG_BUILD 4ull /* the rule builder finished a build */
#define EP(tag, idx) (((tag) << 32) | (uint64_t)(idx))

/*
 * A client. Replies and events are sent without blocking; what the socket
 * does not take waits in `out` (written out on EPOLLOUT), up to
 * --control-out-kb: a client that reads nothing, a stuck subscriber say,
 * is then closed rather than waited for, since the control thread also
 * notices dead NFs and must never stall on a client.
 */
struct sl_ctl_conn {
	int fd;
	int subscribed;
	int broken; /* failed or over its limit: closed at the next safe point */
	size_t len, cap;
	char *buf; /* grows up to --control-line-kb, + 1 */
	char *out;
	size_t out_off, out_len, out_cap; /* pending: [out_off, out_len) */
	int out_watched; /* EPOLLOUT asked for: something is pending */
	/* Held: no line is read. HELD_PARKED: its rule change is being
	 * built (the reply comes when it is committed); HELD_WAITING: a rule
	 * change came while another one builds: it waits its turn (by
	 * `turn`, the order it came in), still unread in buf. */
	int held;
	uint64_t turn;
	int muted; /* hung up while held: out of the epoll set until its turn */
};

enum { HELD_NONE, HELD_PARKED, HELD_WAITING };

/* 0, or the errno of the mkdir that failed (errno is left as it set it). */
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
			return errno;
		*p = '/';
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? errno : 0;
}

/* The bus's pid watcher: an NF's pidfd joins the epoll set, and its
 * exit is seen as TAG_PID (mgr_nf_died). */
static void
watch_pid(void *ctx, uint16_t instance, int pidfd)
{
	const struct sl_mgr *m = ctx;
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u64 = EP(TAG_PID, instance)};

	epoll_ctl(m->epfd, EPOLL_CTL_ADD, pidfd, &ev);
}

static void control_event(void *ctx, const char *kind, json_t *data);

static int
control_init(struct sl_mgr *m, char *err, size_t errlen)
{
	struct sl_ctl_state *ctl = &m->ctl;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct epoll_event ev = {.events = EPOLLIN};
	char dir[sizeof(sa.sun_path)];

	ctl->n_conns = m->o.ctl_conns;
	ctl->out_max = (size_t)m->o.ctl_out_kb * 1024;
	ctl->line_max = (size_t)m->o.ctl_line_kb * 1024;
	ctl->conns = calloc(ctl->n_conns, sizeof(*ctl->conns));
	if (ctl->conns == NULL) {
		snprintf(err, errlen,
			 "out of memory for %u control connections",
			 ctl->n_conns);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < ctl->n_conns; i++)
		ctl->conns[i].fd = -1;
	ctl->parked = -1;
	ctl->n_waiting = 0;
	ctl->turn = NULL;
	snprintf(dir, sizeof(dir), "%s", m->o.socket_path);
	if (mkdir_p(dirname(dir)) != 0) {
		snprintf(err, errlen, "cannot create folder for %s: %s",
			 m->o.socket_path, strerror(errno));
		return EIO;
	}
	unlink(m->o.socket_path); /* precheck() found it stale */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->o.socket_path);
	m->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 ||
	    bind(m->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(m->listen_fd, SOMAXCONN) != 0) {
		snprintf(err, errlen,
			 "cannot listen on %s: %s; pass --socket PATH",
			 m->o.socket_path, strerror(errno));
		return EIO;
	}
	chmod(m->o.socket_path, 0660);
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.u64 = EP(TAG_LISTEN, 0);
	if (m->epfd < 0 ||
	    epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->listen_fd, &ev) != 0) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		return EIO;
	}
	ctl->epfd = m->epfd;
	if (mgr_bus_subscribe(&m->bus, control_event, m) != 0) {
		snprintf(err, errlen,
			 "the event bus has no room for the "
			 "control socket");
		return EIO;
	}
	mgr_bus_set_pid_watch(&m->bus, watch_pid, m);
	return 0;
}


static void
conn_close(struct sl_mgr *m, struct sl_ctl_conn *c)
{
	struct sl_ctl_state *ctl = &m->ctl;
	/* A parked request was accepted: its build still commits, and its
	 * reply is dropped. */
	if (ctl->parked == (int)(c - ctl->conns))
		ctl->parked = -1;
	ctl->n_waiting -= c->held == HELD_WAITING;
	if (!c->muted)
		epoll_ctl(m->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->buf);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Sends what waits in c->out, as much as the socket takes, and asks for
 * EPOLLOUT while something is left; 0, or a positive errno when the
 * connection failed. */
static int
conn_flush(struct sl_ctl_state *ctl, struct sl_ctl_conn *c)
{
	int pending;

	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0)
			return w < 0 ? errno : EPIPE;
		c->out_off += (size_t)w;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	pending = c->out_len > 0;
	if (pending != c->out_watched && !c->muted) {
		struct epoll_event ev = {.events = (c->held ? 0 : EPOLLIN) |
						   (pending ? EPOLLOUT : 0),
					 .data.u64 =
						 EP(TAG_CONN, c - ctl->conns)};

		epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->out_watched = pending;
	}
	return 0;
}

/* Holds c (no line read until unheld) or lets it read again. */
static void
conn_hold(struct sl_ctl_state *ctl, struct sl_ctl_conn *c, int held)
{
	struct epoll_event ev = {.events = (held ? 0 : EPOLLIN) |
					   (c->out_watched ? EPOLLOUT : 0),
				 .data.u64 = EP(TAG_CONN, c - ctl->conns)};

	ctl->n_waiting -= c->held == HELD_WAITING;
	ctl->n_waiting += held == HELD_WAITING;
	c->held = held;
	if (held == HELD_WAITING)
		c->turn = ++ctl->turns;
	if (c->muted && !held) {
		epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, c->fd, &ev);
		c->muted = 0;
	} else if (!c->muted) {
		epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

/* Queues len bytes for c and sends what the socket takes. Marks c broken
 * (closed by the caller's loop, never here: c may be the connection being
 * read) when it fails or exceeds --control-out-kb. */
static void
conn_write(struct sl_ctl_state *ctl, struct sl_ctl_conn *c, const char *s,
	   size_t len)
{
	size_t pending = c->out_len - c->out_off;
	const struct sl_mgr *m = container_of(ctl, struct sl_mgr, ctl);

	if (c->broken)
		return;
	if (pending + len > ctl->out_max) {
		mgr_log(m,
			"control: closing a connection that left %zu bytes of "
			"replies and events unread (--control-out-kb %zu): a "
			"client must read what it asked or subscribed to",
			pending + len, ctl->out_max / 1024);
		ctl->closed_unread++;
		c->broken = 1;
		return;
	}
	if (c->out_off > 0) { /* keep the pending bytes at the start */
		memmove(c->out, c->out + c->out_off, pending);
		c->out_off = 0;
		c->out_len = pending;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		char *p;

		while (cap < c->out_len + len)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL) {
			mgr_log(m,
				"control: out of memory for a reply; closing "
				"that connection");
			c->broken = 1;
			return;
		}
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, s, len);
	c->out_len += len;
	if (conn_flush(ctl, c) != 0)
		c->broken = 1;
}

/* msg as one line (compact JSON and a newline), to free; NULL if out of
 * memory. */
static char *
json_line(json_t *msg, size_t *len)
{
	char *s = json_dumps(msg, JSON_COMPACT);

	if (s == NULL)
		return NULL;
	*len = strlen(s);
	s[(*len)++] = '\n'; /* json_dumps leaves room for the NUL we replace */
	return s;
}

static void
conn_send(struct sl_ctl_state *ctl, struct sl_ctl_conn *c, json_t *msg)
{
	size_t len;
	char *s = json_line(msg, &len);

	if (s == NULL) {
		c->broken = 1;
		return;
	}
	conn_write(ctl, c, s, len);
	free(s);
}

/* The bus's subscriber: an event (data borrowed, NULL for {}) as one
 * line to every subscribed connection. */
static void
control_event(void *ctx, const char *kind, json_t *data)
{
	struct sl_mgr *m = ctx;
	struct sl_ctl_state *ctl = &m->ctl;
	struct timespec ts;
	json_t *ev;
	char *s;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	ev = json_pack("{s:s, s:s, s:{s:s, s:f, s:o}}", "jsonrpc", "2.0",
		       "method", "event", "params", "kind", kind, "ts",
		       (double)ts.tv_sec + ts.tv_nsec / 1e9, "data",
		       data != NULL ? json_incref(data) : json_object());
	if (ev == NULL)
		return;
	s = json_line(ev, &len);
	json_decref(ev);
	if (s == NULL)
		return;
	for (uint32_t i = 0; i < ctl->n_conns; i++)
		if (ctl->conns[i].fd >= 0 && ctl->conns[i].subscribed)
			conn_write(ctl, &ctl->conns[i], s, len);
	free(s);
}

json_t *
mgr_control_json(const struct sl_mgr *m)
{
	const struct sl_ctl_state *ctl = &m->ctl;
	uint32_t n = 0;

	for (uint32_t i = 0; i < ctl->n_conns; i++)
		n += ctl->conns[i].fd >= 0;
	return json_pack("{s:i, s:i, s:i, s:i, s:I}", "connections", (int)n,
			 "max_connections", (int)m->o.ctl_conns, "out_kb",
			 (int)m->o.ctl_out_kb, "line_kb", (int)m->o.ctl_line_kb,
			 "closed_unread", (json_int_t)ctl->closed_unread);
}

static void
accept_conn(struct sl_mgr *m)
{
	struct sl_ctl_state *ctl = &m->ctl;
	struct epoll_event ev = {.events = EPOLLIN};
	int fd =
		accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	uint32_t i;

	if (fd < 0)
		return;
	for (i = 0; i < ctl->n_conns && ctl->conns[i].fd >= 0; i++)
		;
	if (i == ctl->n_conns) {
		char busy[200];
		int n = snprintf(busy, sizeof(busy),
				 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				 "{\"code\":-32000,\"message\":\"too many "
				 "control connections (%u): close some or "
				 "raise --control-conns\"}}\n",
				 ctl->n_conns);

		if (send(fd, busy, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			mgr_log(m, "control: refused a connection (too many)");
		close(fd);
		return;
	}
	memset(&ctl->conns[i], 0, sizeof(ctl->conns[i]));
	ctl->conns[i].cap = RTE_MIN((size_t)LINE_BUF0, ctl->line_max + 1);
	ctl->conns[i].buf = malloc(ctl->conns[i].cap);
	if (ctl->conns[i].buf == NULL) {
		ctl->conns[i].fd = -1;
		close(fd);
		return;
	}
	ctl->conns[i].fd = fd;
	ev.data.u64 = EP(TAG_CONN, i);
	epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Answers the whole lines read into c->buf, until c is held (a rule change
 * parked or waiting: the rest waits in buf) or closed. */
static void
conn_lines(struct sl_mgr *m, struct sl_ctl_conn *c)
{
	struct sl_ctl_state *ctl = &m->ctl;
	char *start = c->buf, *nl;

	while (!c->held &&
	       (nl = memchr(start, '\n', c->len - (size_t)(start - c->buf))) !=
		       NULL) {
		size_t len = (size_t)(nl - start);
		int sub = 0;
		json_t *resp = NULL;

		if (len > 0 && start[len - 1] == '\r')
			len--;
		if (len > 0) {
			/* Rule changes go one at a time, in turn. */
			int wait = mgr_rpc_busy(m) ||
				   (ctl->n_waiting > 0 && c != ctl->turn);
			enum sl_rpc_state st = mgr_rpc_handle_ctl(m, start, len,
								  wait, &sub,
								  &resp);

			if (st == SL_RPC_WAIT) {
				conn_hold(ctl, c, HELD_WAITING);
				break; /* the line stays for its turn */
			}
			if (st == SL_RPC_PARKED) {
				ctl->parked = (int)(c - ctl->conns);
				conn_hold(ctl, c, HELD_PARKED);
			}
			if (sub)
				c->subscribed = 1;
			if (resp != NULL) {
				conn_send(ctl, c, resp);
				json_decref(resp);
			}
			if (c->broken) {
				conn_close(m, c);
				return;
			}
			if (m->quit)
				return;
		}
		start = nl + 1;
	}
	c->len -= (size_t)(start - c->buf);
	memmove(c->buf, start, c->len);
	if (c->len > ctl->line_max) {
		char msg[160];
		json_t *e;

		snprintf(
			msg, sizeof(msg),
			"request line longer than %zu bytes (--control-line-kb "
			"%zu): send a smaller request or raise the option; "
			"closing",
			ctl->line_max, ctl->line_max / 1024);
		e = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0",
			      "id", "error", "code", -32600, "message", msg);
		conn_send(ctl, c, e);
		json_decref(e);
		conn_close(m, c);
	}
}

/*
 * The parked request's build, if it is done: committed (or refused), its
 * reply sent (dropped if its connection closed), and its connection reads
 * on (a rule change there waits behind those already waiting); then the
 * rule changes that waited get their turns, oldest first, until one starts
 * a build.
 */
static void
rules_turns(struct sl_mgr *m)
{
	struct sl_ctl_state *ctl = &m->ctl;
	json_t *resp;

	if (!mgr_rpc_poll(m, &resp))
		return;
	if (ctl->parked >= 0) {
		struct sl_ctl_conn *c = &ctl->conns[ctl->parked];

		ctl->parked = -1;
		if (resp != NULL)
			conn_send(ctl, c, resp);
		conn_hold(ctl, c, HELD_NONE);
		if (c->broken)
			conn_close(m, c);
		else
			conn_lines(m, c);
	}
	json_decref(resp);
	while (!mgr_rpc_busy(m) && !m->quit) {
		struct sl_ctl_conn *next = NULL;

		for (uint32_t i = 0; i < ctl->n_conns; i++) {
			struct sl_ctl_conn *c = &ctl->conns[i];

			if (c->fd >= 0 && c->held == HELD_WAITING &&
			    (next == NULL || c->turn < next->turn))
				next = c;
		}
		if (next == NULL)
			break;
		conn_hold(ctl, next, HELD_NONE);
		ctl->turn = next;
		if (next->broken)
			conn_close(m, next);
		else
			conn_lines(m, next);
		ctl->turn = NULL;
	}
}

static void
conn_read(struct sl_mgr *m, struct sl_ctl_conn *c)
{
	struct sl_ctl_state *ctl = &m->ctl;
	ssize_t r;

	if (c->len == c->cap && c->cap < ctl->line_max + 1) {
		/* a long request: grow, up to --control-line-kb (+ 1 byte to
		 * see that a line is longer than that) */
		size_t cap = RTE_MIN(c->cap * 2, ctl->line_max + 1);
		char *p = realloc(c->buf, cap);

		if (p == NULL) {
			mgr_log(m,
				"control: out of memory for a %zu-byte request "
				"line; closing the connection",
				cap);
			conn_close(m, c);
			return;
		}
		c->buf = p;
		c->cap = cap;
	}
	r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (r < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		conn_close(m, c);
		return;
	}
	c->len += (size_t)r;
	conn_lines(m, c);
}

void
mgr_control_run(struct sl_mgr *m)
{
	struct sl_ctl_state *ctl = &m->ctl;
	struct epoll_event evs[32];
	struct epoll_event bev = {.events = EPOLLIN,
				  .data.u64 = EP(TAG_BUILD, 0)};

	/* The rule builder's wake-ups (started just before). */
	if (mgr_rules_builder_fd(m->rules) >= 0)
		epoll_ctl(m->epfd, EPOLL_CTL_ADD,
			  mgr_rules_builder_fd(m->rules), &bev);
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

			if (tag == TAG_LISTEN) {
				accept_conn(m);
			} else if (tag == TAG_CONN && ctl->conns[idx].fd >= 0) {
				struct sl_ctl_conn *c = &ctl->conns[idx];

				if ((evs[i].events & EPOLLOUT) &&
				    conn_flush(ctl, c) != 0)
					c->broken = 1;
				if (!c->broken && c->held &&
				    (evs[i].events & (EPOLLHUP | EPOLLERR))) {
					/* Read (to its end) on its turn. */
					epoll_ctl(m->epfd, EPOLL_CTL_DEL, c->fd,
						  NULL);
					c->muted = 1;
				} else if (!c->broken && !c->held &&
					   (evs[i].events &
					    (EPOLLIN | EPOLLHUP | EPOLLERR))) {
					conn_read(m, c);
				}
			} else if (tag == TAG_PID) {
				mgr_nf_died(m, (uint16_t)idx);
			} else if (tag == TAG_BUILD) {
				uint64_t v;
				ssize_t r = read(mgr_rules_builder_fd(m->rules),
						 &v, sizeof(v));

				(void)r; /* rules_turns() below commits */
			}
		}
		rules_turns(m);
		for (size_t k = 0; k < m->n_modules; k++)
			if (m->modules[k]->poll != NULL)
				m->modules[k]->poll(m);
		/* Connections an event or a reply found failed or full. */
		for (uint32_t i = 0; i < ctl->n_conns; i++)
			if (ctl->conns[i].fd >= 0 && ctl->conns[i].broken)
				conn_close(m, &ctl->conns[i]);
	}
}

static void
control_close(struct sl_mgr *m)
{
	struct sl_ctl_state *ctl = &m->ctl;
	for (uint32_t i = 0; i < ctl->n_conns; i++) {
		struct sl_ctl_conn *c = &ctl->conns[i];

		if (c->fd < 0)
			continue;
		/* The last replies (shutdown's, say): a second at most. */
		for (int waited = 0;
		     !c->broken && c->out_off < c->out_len && waited < 1000;
		     waited += 10) {
			struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};

			if (poll(&pfd, 1, 10) < 0 || conn_flush(ctl, c) != 0)
				break;
		}
		conn_close(m, c);
	}
	ctl->parked = -1;
	mgr_rpc_close(); /* a parked request's reply: dropped */
	free(ctl->conns);
	ctl->conns = NULL;
	ctl->n_conns = 0;
	if (m->listen_fd >= 0) {
		close(m->listen_fd);
		unlink(m->o.socket_path);
	}
	if (m->epfd >= 0)
		close(m->epfd);
}

/* The control socket: last to close, so that the replies and events of
 * the shutdown (the shutdown method's, NFs' nf.down) are flushed. Its
 * loop is mgr_control_run; it has no poll of its own. */
const struct mgr_module mgr_control_module = {
	.name = "control",
	.init = control_init,
	.close = control_close,
};
