/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The unit tests' EAL start (eal_env.h). Not --in-memory: in DPDK 22.11
 * --no-huge turns on legacy memory mode, which --in-memory refuses
 * ("Option --legacy-mem is not compatible with --in-memory"), so
 * rte_eal_init() would fail with EINVAL. --no-shconf writes no files and
 * opens no IPC socket, but EAL still creates an empty runtime directory.
 */
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf_dyn.h>

#include "eal_env.h"
#include "sl_shared.h"

int
eal_env_start(const char *argv0, const char *name, const char *mem_mb,
	      char *runtime_dir, size_t len)
{
	static const struct rte_mbuf_dynfield desc = {
		.name = SL_DYNFIELD_NAME,
		.size = sizeof(struct sl_pkt_meta),
		.align = __alignof__(struct sl_pkt_meta),
	};
	char lcore[16], prefix[64];
	cpu_set_t cpus;
	int cpu = 0, off;
	char *argv[] = {
		(char *)argv0,
		"--no-huge",
		"-m",
		(char *)mem_mb,
		"--no-pci",
		"--no-shconf",
		"--no-telemetry",
		"--log-level=*:error",
		"-l",
		lcore,
		prefix,
		NULL,
	};

	/* One lcore, one we may run on. */
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
		while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &cpus))
			cpu++;
	snprintf(lcore, sizeof(lcore), "%d", cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=sl_ut_%s_%d", name,
		 (int)getpid());
	if (rte_eal_init((int)RTE_DIM(argv) - 1, argv) < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	snprintf(runtime_dir, len, "%s", rte_eal_get_runtime_dir());
	off = rte_mbuf_dynfield_register(&desc);
	if (off < 0)
		fprintf(stderr, "dynfield: %s\n", rte_strerror(rte_errno));
	return off;
}
