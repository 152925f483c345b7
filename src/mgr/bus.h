/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's event bus. Modules emit events (mgr_event: "nf.up", "rule.added",
 * ...); whoever publishes them (the control socket, to its subscribed
 * connections) subscribes with a callback and a context at its init. The
 * bus also carries the one hook the registry needs from above it: who
 * watches a new NF's pidfd (the control loop's epoll set). So no module
 * below the control socket calls into it.
 *
 * The bus is m->bus (struct sl_mgr). Every member is used by the control
 * thread only: subscribers are added at start-up, before the control loop
 * runs, and events are emitted by the control thread (its RPC handlers and
 * its poll), in the order the subscriber then sees them.
 */
#ifndef SL_MGR_BUS_H
#define SL_MGR_BUS_H

#include <stdint.h>

#include <jansson.h>

struct sl_mgr;

#define MGR_BUS_SUBS 4

/* An event: kind ("nf.up"), data (an object, or NULL for {}) borrowed for
 * the call: a subscriber that keeps it takes a reference. */
typedef void (*mgr_bus_fn)(void *ctx, const char *kind, json_t *data);
/* A registered NF's pidfd, readable once the process exits: the watcher
 * reports that as mgr_nf_died(m, instance). */
typedef void (*mgr_bus_pid_fn)(void *ctx, uint16_t instance, int pidfd);

struct mgr_bus {
	struct {
		mgr_bus_fn fn;
		void *ctx;
	} sub[MGR_BUS_SUBS]; /* in the order they subscribed */
	uint32_t n_subs;
	mgr_bus_pid_fn watch_pid; /* NULL: nobody watches (unit tests) */
	void *watch_ctx;
};

/* Adds a subscriber: 0, or ENOSPC past MGR_BUS_SUBS. */
int mgr_bus_subscribe(struct mgr_bus *b, mgr_bus_fn fn, void *ctx);
/* Sets who watches NF pidfds (one watcher). */
void mgr_bus_set_pid_watch(struct mgr_bus *b, mgr_bus_pid_fn fn, void *ctx);
/* Hands pidfd of instance to the watcher, if any. */
void mgr_bus_watch_pid(const struct mgr_bus *b, uint16_t instance, int pidfd);

/* Logs nothing; publishes event kind with data (a reference it takes,
 * NULL for {}) to every subscriber, in subscription order. */
void mgr_event(const struct sl_mgr *m, const char *kind, json_t *data);

#endif /* SL_MGR_BUS_H */
