/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in for libsluice, so that a sample NF's ops can be driven by a
 * unit test without sluiced: sl_nf_main() only records the ops, the
 * verdict and private-pointer calls work on plain memory, and mbufs are
 * made by hand around exact-size heap buffers (ASan sees any overread).
 *
 * The NF's own main() is renamed by tests/unit/meson.build (-Dmain=...).
 */
#ifndef SL_TEST_NF_STUB_H
#define SL_TEST_NF_STUB_H

#include <stdint.h>
#include <stdio.h>

#include "sluice/nf.h"

struct rte_mbuf;

/** The ops passed to the last sl_nf_main() call. */
extern const struct sl_nf_ops *stub_ops;
/** What sl_now_ns() returns. */
extern uint64_t stub_now_ns;
/** EAL's memory (-m, MB) for stub_eal_init(): 128 unless a test that
 * needs more (sluice-l3fwd's LPM tables) sets it before. */
extern unsigned int stub_eal_mem_mb;

/** The NF handle to pass to ops. */
struct sl_nf *stub_nf(void);

/**
 * Initialises EAL once, without hugepages, PCI, shared config or
 * telemetry (for rte_acl / rte_hash). Returns 0 or a negative errno.
 */
int stub_eal_init(void);
/** Undoes stub_eal_init(), removing EAL's runtime directory. */
void stub_eal_cleanup(void);

/**
 * A cmocka group setup's work: stub_eal_init(), then the NF's renamed
 * main with argv[0] = prog, which records its ops. 0, or -1 after saying
 * why.
 */
int stub_setup(const char *prog, int (*nf_main)(int argc, char **argv));
/** A cmocka group teardown: stub_eal_cleanup(). */
int stub_teardown(void **state);

/** An mbuf whose data is an exact-size heap copy of frame[0..len). */
struct rte_mbuf *stub_mbuf(const void *frame, uint32_t len);
void stub_mbuf_free(struct rte_mbuf *m);
/** Whether the NF set a verdict on m since it was made. */
int stub_verdict_set(const struct rte_mbuf *m);

/**
 * Calls ops->init with "prog" and the given arguments (NULL-terminated).
 * Returns init's result.
 */
int stub_init(const char *arg, ...);

/**
 * Captures what fn writes to stderr into a malloc'd string (caller frees).
 */
char *stub_capture_stderr(void (*fn)(void *), void *arg);

/**
 * Calls ops->init with argv[0] = prog and the given arguments
 * (NULL-terminated), capturing its stderr: returns that (caller frees)
 * and init's result in *rc.
 */
char *stub_init_output(int *rc, const char *prog, ...);
/** Calls ops->fini, capturing its stderr (caller frees). */
char *stub_fini_output(void);

#endif /* SL_TEST_NF_STUB_H */
