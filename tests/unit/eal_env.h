/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * EAL for the unit tests that need a real one (dispatch_env.c, mgr_env.h):
 * a DPDK primary with no hugepages, no PCI, no shared config files and no
 * telemetry, on one lcore this process may run on, with libsluice's packet
 * metadata field registered as sluiced and the NFs register it.
 */
#ifndef SL_UT_EAL_ENV_H
#define SL_UT_EAL_ENV_H

#include <stddef.h>

/*
 * Starts EAL with argv[0] argv0, mem_mb MB of ordinary memory and the file
 * prefix sl_ut_NAME_PID (unique per test and process, so tests may run in
 * parallel), copies EAL's runtime directory into runtime_dir (len bytes;
 * EAL creates it even with --no-shconf, and the caller removes it after
 * rte_eal_cleanup()), then registers the sluice dynfield.
 * Returns the dynfield's offset, or -1 with the reason on stderr.
 */
int eal_env_start(const char *argv0, const char *name, const char *mem_mb,
		  char *runtime_dir, size_t len);

#endif
