/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsluice's internals, shared by its files and by nothing else:
 *
 *   sl_nf.c         sl_nf_main() and the NF-facing accessors
 *   sl_nf_args.c    the command line: libsluice's options, EAL's, the NF's
 *   sl_nf_opts.c    the NF's option table (struct sl_nf_opt, sl_nf_opts.h)
 *   sl_nf_attach.c  EAL attach as a secondary, the shared state
 *   sl_nf_msg.c     messages to sluiced: registration, requests, inbox
 *   sl_nf_loop.c    the receive / dispatch / transmit loop
 *   sl_nf_test.c    fault injection for tests (libsluice_test)
 */
#ifndef SL_NF_INT_H
#define SL_NF_INT_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "sl_dispatch.h"
#include "sl_shared.h"
#include "sluice/nf.h"

#define REGISTER_TIMEOUT_MS 5000
#define DEREGISTER_TIMEOUT_MS 3000
#define SLEEP_TIMEOUT_NS 10000000ull /* re-check stop/ticks every 10 ms */
#define MAX_ARGS 256

struct sl_nf {
	const struct sl_nf_ops *ops;
	const char *prog;
	struct sl_shm *shm;
	struct sl_nf_slot *slot;
	uint16_t instance;
	uint16_t service;
	uint32_t mode;
	int core;
	uint32_t burst;
	void *priv;
	void *own_priv; /* the ops->priv_size bytes libsluice allocated */
	struct sl_dispatch disp;
	char node[SL_NAME_LEN];
	char service_name[SL_NAME_LEN];
	int stop;
	int mgr_dead;       /* sluiced was killed: nobody to deregister with */
	char config[256];   /* /var/run/dpdk/sluice_NODE/config, see mgr_gone */
	int64_t req_id;     /* last cross-layer request id */
	uint64_t start_tsc; /* when main() began: start-to-first-packet */
	int meta_off; /* of struct sl_pkt_meta in an mbuf, set by nfi_attach */
#ifdef SL_NF_TEST_HOOKS
	/* SLUICE_TEST_KILL_AT=handoff:N, take:N, tx:N or sent:N, see
	 * sl_nf_test.c. */
	int kill_take;
	int kill_tx; /* 1: tx:N, 2: sent:N */
	uint64_t kill_left;
#endif
};

/* What parse_args() makes of the command line. */
struct nf_args {
	const char *node;
	const char *service;
	long instance;
	uint32_t mode;
	int core;
	int eal_argc;
	char *eal_argv[MAX_ARGS];
	int nf_argc;
	char *nf_argv[MAX_ARGS];
	char prefix_arg[64];
	char lcore_arg[32];
	int eal_capture; /* no --log-level given: see eal_log_write() */
	uint32_t access; /* ops->access and that of the options given */
};

/* The NF's view of a packet's struct sl_pkt_meta (sluiced's dynfield), at
 * the offset nfi_attach() found. The packet accessors of the NF API
 * (sl_pkt_verdict(m)...) have no NF handle: sl_nf.c keeps its own copy. */
static inline struct sl_pkt_meta *
nf_meta(const struct sl_nf *nf, const struct rte_mbuf *m)
{
	return sl_meta(m, nf->meta_off);
}

/* sl_nf.c */
void nfi_set_pkt_meta_off(int off);

/* sl_nf_args.c */
int nfi_parse_args(struct nf_args *a, const struct sl_nf_ops *ops, int argc,
		   char **argv);

/* sl_nf_attach.c */
int nfi_eal_attach(struct sl_nf *nf, struct nf_args *a);
int nfi_attach(struct sl_nf *nf);

/* sl_nf_msg.c */
int nfi_register(struct sl_nf *nf, const struct nf_args *a);
void nfi_deregister(struct sl_nf *nf);
void nfi_inbox_poll(struct sl_nf *nf);

/* sl_nf_loop.c */
void nfi_signals_install(void);
int nfi_stop_asked(void);
int nfi_reload_asked(void);
uint16_t nfi_port_out(struct sl_dispatch *d, uint16_t port,
		      struct rte_mbuf **pkts, uint16_t n);
void nfi_handle(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n);
unsigned int nfi_rx_burst(struct sl_nf *nf, struct rte_mbuf **pkts);
int nfi_mgr_gone(const struct sl_nf *nf);
void nfi_run(struct sl_nf *nf);
void nfi_drain(struct sl_nf *nf);

/*
 * Fault injection, for tests only (tests/integration/test_failure.py):
 * built into libsluice_test (the NFs the tests kill link it) and, with
 * meson -Dnf_test_hooks=true, into libsluice; without SL_NF_TEST_HOOKS the
 * hooks are empty and struct sl_nf has no counters for them.
 */
#ifdef SL_NF_TEST_HOOKS
void nfi_test_kill_at(struct sl_nf *nf);
void nfi_test_kill_count(struct sl_nf *nf);
/* At a kill point: take (what == 0 and kill_take) or tx/sent (kill_tx
 * == what). */
#define NFI_TEST_KILL_TAKE(nf)                                                 \
	do {                                                                   \
		if (unlikely((nf)->kill_take))                                 \
			nfi_test_kill_count(nf);                               \
	} while (0)
#define NFI_TEST_KILL_TX(nf, what)                                             \
	do {                                                                   \
		if (unlikely((nf)->kill_tx == (what)))                         \
			nfi_test_kill_count(nf);                               \
	} while (0)
#else
static inline void
nfi_test_kill_at(struct sl_nf *nf)
{
	(void)nf;
}
#define NFI_TEST_KILL_TAKE(nf) ((void)(nf))
#define NFI_TEST_KILL_TX(nf, what) ((void)(nf))
#endif

#endif /* SL_NF_INT_H */
