/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fake node test_dispatch runs on (dispatch_env.c builds it; the comment
 * there describes it) and what its test files share: test_dispatch.c (NEXT,
 * TO, OUT and DROP, the group's one list) and test_dispatch_handoff.c
 * (backpressure, hand-off via the manager, hop limit, sl_dispatch_alike).
 */
#ifndef SL_DISPATCH_ENV_H
#define SL_DISPATCH_ENV_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "sl_dispatch.h"
#include "sl_graph.h"
#include "sluice/pkt.h"
#include "sl_lb.h"

#define MAX_NFS 4
#define MAX_SVC 4
#define RING_CAP SL_BURST_MAX
#define BURST 64 /* a burst of the tests that spread over instances */
#define POOL_SIZE 2047
#define SELF_OWNER 1
#define BP_CYCLES 1000000u
#define IN_PORT 7
#define FLAGS                                                                  \
	(SL_META_HASH | 0x8u) /* a given (valid) hash and a spare flag bit */

extern struct rte_mempool *g_pool;
extern int g_off;
extern unsigned g_pool_full; /* avail count of the idle pool */
extern unsigned g_rings;     /* rings created, for unique names */

/* What the port_out callback saw. */
#define PORT_LOG 256
struct port_log {
	uint16_t take; /* how many of a run it accepts (UINT16_MAX: all) */
	unsigned calls;
	uint16_t port[PORT_LOG];
	uint16_t run[PORT_LOG]; /* run length offered */
	unsigned n_got;
	struct rte_mbuf *got[PORT_LOG]; /* accepted packets, in order */
	struct sl_dispatch *d;
};

struct env {
	struct sl_shm *shm;
	struct sl_graph chain; /* the default graph: an open chain */
	sl_hop_t next[MAX_SVC];
	uint32_t edge_off[MAX_SVC];
	uint16_t edge_n[MAX_SVC];
	uint16_t graph_cur[1];
	uint16_t live[MAX_SVC][MAX_NFS];
	struct sl_ctx_stats stats;
	struct sl_dispatch d;
};

extern struct port_log g_port;
extern char g_dummy[RING_CAP];
extern char g_runtime_dir[PATH_MAX];

struct sl_pkt_meta *meta(struct rte_mbuf *m);
void *zalloc_aligned(size_t size);
struct rte_mbuf *mk(sl_verdict_t v, uint16_t service, uint32_t hash,
		    uint16_t len);
void check_meta(struct rte_mbuf *m, sl_verdict_t v, uint16_t service,
		uint16_t owner, uint32_t hash);
unsigned hops(struct rte_mbuf *m);
struct rte_ring *rx_of(struct env *e, uint16_t inst);
unsigned take_rx(struct env *e, uint16_t inst, struct rte_mbuf **pkts,
		 unsigned n);
int is_dummy(const void *p);
void leave_room(struct env *e, uint16_t inst, unsigned k);
void drain_dummies(struct env *e, uint16_t inst, unsigned n);
uint64_t drops_total(const struct env *e);
void check_drops(const struct env *e, enum sl_drop_reason r, uint64_t n);
void check_pool_full(void);
uint16_t port_out(struct sl_dispatch *d, uint16_t port, struct rte_mbuf **pkts,
		  uint16_t n);
void free_port_got(void);
int group_setup(void **state);
int group_teardown(void **state);
void set_live(struct env *e, uint16_t s, int n, const uint16_t *ids);
int setup(void **state);
int teardown(void **state);

/* The tests of test_dispatch_handoff.c. */
void producer_killed_mid_enqueue(void **state);
void backpressure_partial_then_retry(void **state);
void backpressure_keeps_order_across_runs(void **state);
void backpressure_drops_after_bound(void **state);
void backpressure_partial_progress_then_bound(void **state);
void backpressure_forever_at_ingress(void **state);
void backpressure_port_out_partial(void **state);
void drop_pending_with_reason(void **state);
void all_out_sends_everything_unresolved(void **state);
void wakes_sleeping_shared_nf(void **state);
void full_burst(void **state);
void flow_hash_is_lazy(void **state);
void flow_key_make_hash_matches(void **state);
void hop_limit_drops_port_packets_only(void **state);
void hop_limit_count_undone_for_packets_that_wait(void **state);
void alike_lone_instance_one_write(void **state);
void alike_ring_full_keeps_rest_as_entered(void **state);
void alike_port_full_keeps_rest_as_entered(void **state);
void alike_other_first_hops_as_before(void **state);

#endif
