/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The registry's own functions, shared by its files (src/mgr/registry/);
 * sluiced.h's "registry" section is what the rest of sluiced calls. All
 * run on the control thread.
 *   services.c  services, their live instances and load-balancer tables
 *   register.c  NF messages: registration, deregistration, death; the poll
 *   request.c   cross-layer requests from NFs
 *   reclaim.c   a dead or departed instance's packets, caches, counters
 *   answered.c  answered messages their (exited) senders never returned
 *   watchdog.c  the hang watchdog
 */
#ifndef SL_MGR_REGISTRY_H
#define SL_MGR_REGISTRY_H

#include <stdint.h>

#include "sluiced.h"

struct rte_ring;

/*
 * The registry's state of its own (m->registry), the control thread's
 * alone: what it allocates per instance and its timers. What other parts
 * read (counters, retired statistics, the grace-period queue m->qs) stays
 * in struct sl_mgr.
 */
struct sl_registry_state {
	int *pidfd;          /* [max_nfs]: the instance's pidfd, -1: none */
	uint16_t *txq_owner; /* [1 + nf_txq]: instance + 1 using it, 0 */
	/* [RTE_MAX_LCORE]: instance + 1 whose mempool cache that lcore id's
	 * is, 0: none */
	uint16_t *cache_owner;
	/* Hang watchdog: per instance, the heartbeat last seen and when it
	 * last moved (or the NF was last seen asleep); the next check. */
	uint64_t *hb_seen;
	uint64_t *hb_tsc;
	uint64_t hang_next;
	/* Answered-message sweep: its next run (TSC), room for every
	 * message of the pool (0: the sweep's, 1: a pid's reclaim), and
	 * for their senders' pids. */
	uint64_t sweep_next;
	struct sl_msg **answered[2];
	int32_t *pids;
	/* Applies a flow request an NF sent (request.c): the requests
	 * module's mgr_flow_request, set by its init (the registry, below it,
	 * does not call it by name); NULL: refused. */
	int (*flow_request)(struct sl_mgr *m, const struct sl_req *r,
			    uint32_t *applied, uint32_t *kept, char *err,
			    size_t errlen);
};

/* services.c: adds or removes inst from service s's live instances and
 * rebuilds its load-balancer table (published to the data path). */
void mgr_reg_live_add(struct sl_mgr *m, uint16_t s, uint16_t inst);
void mgr_reg_live_remove(struct sl_mgr *m, uint16_t s, uint16_t inst);

/* register.c: counts and logs one message refused for what it holds (the
 * reason is in msg->error). The log stops after 20, then says every
 * 1000th. */
void mgr_reg_refused(struct sl_mgr *m, const struct sl_msg *msg);
/* Answers a message (done) with a refusal, counted and logged. */
void mgr_reg_refuse(struct sl_mgr *m, struct sl_msg *msg, int result,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* request.c: a cross-layer request (SL_MSG_REQUEST), answered. */
void mgr_reg_handle_request(struct sl_mgr *m, struct sl_msg *msg);

/* reclaim.c */
/* Returns the messages left in an instance's inbox to the pool. */
void mgr_reg_inbox_drain(struct sl_mgr *m, struct sl_nf_slot *s);
/* Is p between r's consumer and producer tails: queued, or being taken? */
int mgr_reg_in_ring(const struct rte_ring *r, const void *p);
/* An lcore id for a new NF's mempool cache, or SL_CACHE_NONE. */
uint16_t mgr_reg_cache_lcore_take(struct sl_mgr *m, uint16_t inst);
/* The producer side of every ring a dead instance may have been enqueuing
 * into, for the reclaim to roll back; NULL if out of memory. */
struct sl_ring_prod *mgr_reg_rings_snapshot(struct sl_mgr *m, uint16_t dead);
/* A dead (or gone) NF's reclaim, queued on m->qs by mgr_nf_died. */
struct sl_reg_reclaim {
	struct sl_grace_action qa;
	uint16_t instance;
	void *ptr; /* mgr_reg_rings_snapshot's, undone by the first pass */
	/* Second pass: packets still tagged the dead instance's that were
	 * in no ring a grace period ago. */
	struct rte_mbuf **cand;
	uint32_t n_cand;
	uint32_t pass;
	uint64_t lost; /* counted by the first pass */
};
/* Its work: 0 when done; SL_GRACE_AGAIN after the first pass (the second
 * needs another grace period); EAGAIN to be retried at the next poll. */
int mgr_reg_reclaim(struct sl_mgr *m, struct sl_reg_reclaim *a);
/* Its grace-queue function (frees a once done). */
int mgr_reg_reclaim_run(void *ctx, struct sl_grace_action *qa, int draining);

/* answered.c */
/* Returns one message nobody will return, counted. */
void mgr_reg_msg_give_back(struct sl_mgr *m, struct sl_msg *msg);
/* Gives back the answered messages of pid, which has exited; how many. */
uint32_t mgr_reg_msgs_reclaim(struct sl_mgr *m, int32_t pid);
/* Every SWEEP_MS: the same for every exited sender that is no slot's. */
void mgr_reg_answered_sweep(struct sl_mgr *m);

/* register.c: 1 if a is a deregistration waiting for its grace period
 * that holds msg (its answer, which sluiced gives once it passes). */
int mgr_reg_dereg_holds(const struct sl_grace_action *a,
			const struct sl_msg *msg);

/* watchdog.c: kills NFs hung for --nf-hang-ms (checked every 10 ms). */
void mgr_reg_watchdog(struct sl_mgr *m);

#endif /* SL_MGR_REGISTRY_H */
