/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced: the Sluice node manager (DPDK primary process).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_memzone.h>
#include <rte_ring.h>

#include "sl_chain.h"
#include "sl_futex.h"
#include "options.h"
#include "sluiced.h"

#define MAX_EAL_ARGS 128

void
mgr_log(const struct sl_mgr *m, const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "sluiced[%s] %ld.%03ld: %s\n", m->o.name,
		(long)ts.tv_sec, ts.tv_nsec / 1000000, buf);
}

/* A lock-free atomic is safe to store from a signal handler. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics must be lock-free");

/* Where on_signal stores: the m->quit of main's struct sl_mgr, set before
 * the handlers are installed and never changed after.
 * check_structure: no-context (a POSIX signal handler gets no argument) */
static _Atomic int *g_quit;

/* SIGINT, SIGTERM: only says so; the control loop sees m->quit and
 * returns, and main tears down (stop_modules). */
static void
on_signal(int sig)
{
	atomic_store_explicit(g_quit, sig, memory_order_relaxed);
}

/* ---- start-up checks: each says what is wrong and what to do ------- */

/* /proc/meminfo's value of key in *val: 0, or ENOENT. */
static int
meminfo(const char *key, unsigned long *val)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");
	size_t klen = strlen(key);

	if (f == NULL)
		return ENOENT;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			*val = strtoul(line + klen + 1, NULL, 10);
			fclose(f);
			return 0;
		}
	fclose(f);
	return ENOENT;
}

static int
hugetlbfs_mounted(void)
{
	char line[512];
	FILE *f = fopen("/proc/mounts", "r");
	int found = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, " hugetlbfs ") != NULL)
			found = 1;
	fclose(f);
	return found;
}

/*
 * Hugepage memory sluiced needs: packet pool, rings, slack for DPDK's own
 * structures, and --nf-mem for NFs' tables. It is all reserved at start-up
 * (--socket-mem): NFs are secondary processes, and a secondary that makes
 * the shared heap grow or shrink goes through DPDK's multi-process
 * memory hotplug, an IPC round trip with every process that was seen to
 * stall NFs at shutdown. Preallocated memory is never hot-plugged.
 */
static unsigned long long
memory_need(const struct sl_mgr_opts *o)
{
	return (unsigned long long)o->mbufs * (RTE_MBUF_DEFAULT_BUF_SIZE +
					       sizeof(struct rte_mbuf) + 128) +
	       (unsigned long long)o->max_nfs * 2 * o->ring_size * 8 +
	       (64ull << 20) + ((unsigned long long)o->nf_mem_mb << 20) +
	       (o->flow_lookup == SL_LOOKUP_OFF
			? 0
			: ((unsigned long long)o->flow_capacity +
			   o->flow_capacity6) *
				  (mgr_flow_entry_bytes(o) + 200));
}

/* What EAL would fail on less clearly: 0, or a positive errno having
 * said on stderr what is wrong and what to do. */
static int
precheck(const struct sl_mgr_opts *o)
{
	unsigned long free_pages = 0, page_kb = 0;
	unsigned long long need;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (geteuid() != 0) {
		fprintf(stderr,
			"sluiced: must run as root: it maps hugepages and owns "
			"the ports; run it with sudo\n");
		return EPERM;
	}
	if (!hugetlbfs_mounted()) {
		fprintf(stderr,
			"sluiced: hugetlbfs is not mounted: run "
			"scripts/hugepages.sh (or: mount -t hugetlbfs nodev "
			"/dev/hugepages)\n");
		return ENOENT;
	}
	if (meminfo("HugePages_Free", &free_pages) != 0 ||
	    meminfo("Hugepagesize", &page_kb) != 0 || free_pages == 0) {
		fprintf(stderr,
			"sluiced: no free hugepages (HugePages_Free is 0): "
			"reserve some with scripts/hugepages.sh (or: echo 1024 "
			"> /proc/sys/vm/nr_hugepages), or stop what holds "
			"them\n");
		return ENOMEM;
	}
	need = memory_need(o);
	if ((unsigned long long)free_pages * page_kb * 1024 < need) {
		fprintf(stderr,
			"sluiced: %lu free hugepages of %lu kB hold %llu MiB, "
			"but --mbufs %u, --ring-size %u and --nf-mem need about "
			"%llu MiB: reserve more (scripts/hugepages.sh PAGES) "
			"or lower --mbufs / --nf-mem / --flow-capacity\n",
			free_pages, page_kb,
			(unsigned long long)free_pages * page_kb / 1024,
			o->mbufs, o->ring_size, need >> 20);
		return ENOMEM;
	}

	/* The control socket: in use by a live sluiced, or stale. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		fprintf(stderr,
			"sluiced: control socket %s is in use by a running "
			"sluiced: stop it, or start this one with another "
			"--name\n",
			o->socket_path);
		return EADDRINUSE;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ---- shared memory ------------------------------------------------- */

static void
zero_meta(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	(void)mp;
	(void)idx;
	memset(sl_meta(obj, *(int *)arg), 0, sizeof(struct sl_pkt_meta));
}

/*
 * The packet pool of a NUMA socket, created on first use: a port receives
 * into the pool of its own socket, so a NIC never writes packets into
 * another socket's memory (SOCKET_ID_ANY, a socket unknown, means the
 * main pool). Every pool has --mbufs buffers. Called before any NF
 * attaches (shm_init, then the ports), so NFs see a complete list.
 */
struct rte_mempool *
mgr_pool_for_socket(struct sl_mgr *m, int socket, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	char name[64]; /* at most 26 characters: fits RTE_MEMPOOL_NAMESIZE */
	struct rte_mempool *mp;

	if (shm->n_pools > 0 && (socket < 0 || socket >= RTE_MAX_NUMA_NODES))
		return shm->pktmbuf_pool;
	for (uint32_t i = 0; i < shm->n_pools; i++)
		if (shm->pools[i]->socket_id == socket)
			return shm->pools[i];
	if (shm->n_pools == 0)
		snprintf(name, sizeof(name), "sl_%.16s_pkts", m->o.name);
	else
		snprintf(name, sizeof(name), "sl_%.16s_pkts%d", m->o.name,
			 socket);
	mp = rte_pktmbuf_pool_create(name, m->o.mbufs, m->o.mbuf_cache, 0,
				     RTE_MBUF_DEFAULT_BUF_SIZE, socket);
	if (mp == NULL) {
		snprintf(err, errlen,
			 "cannot create a pool of %u packet buffers on NUMA "
			 "socket %d: %s; lower --mbufs or reserve more "
			 "hugepages on that socket",
			 m->o.mbufs, socket, rte_strerror(rte_errno));
		return NULL;
	}
	rte_mempool_obj_iter(mp, zero_meta, &shm->dynfield_offset);
	shm->pools[shm->n_pools++] = mp;
	return mp;
}

/* The node's shared memory, pools and message ring: 0, or ENOMEM having
 * said on stderr what could not be made. */
static int
shm_init(struct sl_mgr *m)
{
	const struct sl_mgr_opts *o = &m->o;
	static const struct rte_mbuf_dynfield meta_desc = {
		.name = SL_DYNFIELD_NAME,
		.size = sizeof(struct sl_pkt_meta),
		.align = __alignof__(struct sl_pkt_meta),
	};
	char name[RTE_MEMZONE_NAMESIZE], err[256];
	const struct rte_memzone *mz;
	struct sl_shm *shm;
	size_t sz_nfs = sizeof(struct sl_nf_slot) * o->max_nfs;
	size_t sz_svc = sizeof(struct sl_service) * o->max_services;
	size_t sz_live = sizeof(uint16_t) * o->max_nfs * o->max_services;
	size_t off_nfs = RTE_ALIGN_CEIL(sizeof(struct sl_shm), 64);
	size_t off_svc = RTE_ALIGN_CEIL(off_nfs + sz_nfs, 64);
	size_t off_live = RTE_ALIGN_CEIL(off_svc + sz_svc, 64);
	int off;

	snprintf(name, sizeof(name), SL_MZ_SHM, o->name);
	mz = rte_memzone_reserve_aligned(name, off_live + sz_live,
					 rte_socket_id(), 0, 64);
	if (mz == NULL) {
		fprintf(stderr, "sluiced: cannot reserve shared memory: %s\n",
			rte_strerror(rte_errno));
		return ENOMEM;
	}
	shm = mz->addr;
	memset(shm, 0, off_live + sz_live);
	m->shm = shm;
	shm->magic = SL_SHM_MAGIC;
	shm->version = SL_SHM_VERSION;
	snprintf(shm->node, sizeof(shm->node), "%s", o->name);
	shm->mgr_pid = getpid();
	shm->max_nfs = o->max_nfs;
	shm->max_services = o->max_services;
	shm->ring_size = o->ring_size;
	shm->burst = o->burst;
	shm->handoff = o->handoff;
	shm->tsc_hz = rte_get_tsc_hz();
	shm->backpressure_cycles = shm->tsc_hz / 1000000 * o->backpressure_us;
	shm->idle_sleep_cycles = shm->tsc_hz / 1000000 * o->idle_sleep_us;
	shm->nfs = (struct sl_nf_slot *)((char *)shm + off_nfs);
	shm->services = (struct sl_service *)((char *)shm + off_svc);
	for (uint16_t s = 0; s < o->max_services; s++)
		shm->services[s].live =
			(uint16_t *)((char *)shm + off_live) + s * o->max_nfs;

	off = rte_mbuf_dynfield_register(&meta_desc);
	if (off < 0) {
		fprintf(stderr, "sluiced: cannot register mbuf field %s: %s\n",
			SL_DYNFIELD_NAME, rte_strerror(rte_errno));
		return ENOMEM;
	}
	shm->dynfield_offset = off;

	shm->pktmbuf_pool =
		mgr_pool_for_socket(m, (int)rte_socket_id(), err, sizeof(err));
	if (shm->pktmbuf_pool == NULL) {
		fprintf(stderr, "sluiced: %s\n", err);
		return ENOMEM;
	}

	snprintf(name, sizeof(name), SL_MZ_MSG_RING, o->name);
	shm->msg_ring =
		rte_ring_create(name, 1024, rte_socket_id(), RING_F_SC_DEQ);
	snprintf(name, sizeof(name), SL_MZ_MSG_POOL, o->name);
	shm->msg_pool = rte_mempool_create(name, 1023, sizeof(struct sl_msg), 0,
					   0, NULL, NULL, NULL, NULL,
					   rte_socket_id(), 0);
	if (shm->msg_ring == NULL || shm->msg_pool == NULL) {
		fprintf(stderr, "sluiced: cannot create the message ring: %s\n",
			rte_strerror(rte_errno));
		return ENOMEM;
	}
	shm->edges = rte_zmalloc("sl_edges",
				 sizeof(struct sl_edge_ctr) *
					 SL_EDGE_ROWS(shm) * SL_EDGE_COLS(shm),
				 RTE_CACHE_LINE_SIZE);
	m->edge_retired = calloc((size_t)o->max_services * SL_EDGE_COLS(shm),
				 sizeof(*m->edge_retired));
	if (shm->edges == NULL || m->edge_retired == NULL) {
		fprintf(stderr, "sluiced: out of memory for the edge counters: "
				"lower --max-nfs or --max-services\n");
		return ENOMEM;
	}
	shm->ms_hz = shm->tsc_hz / 1000;
	shm->max_graphs = o->max_graphs;
	shm->max_hops = o->max_hops;
	shm->graph_cur =
		rte_malloc("sl_graph_cur", sizeof(uint16_t) * o->max_graphs, 0);
	if (shm->graph_cur == NULL) {
		fprintf(stderr, "sluiced: out of memory for the graph table\n");
		return ENOMEM;
	}
	for (uint16_t g = 0; g < o->max_graphs; g++)
		shm->graph_cur[g] = SL_GRAPH_NONE;
	return 0;
}

/* ---- clean-up of DPDK files ---------------------------------------- */

static void
remove_dpdk_files(const char *prefix)
{
	char path[512], line[512];
	FILE *f = fopen("/proc/mounts", "r");
	DIR *d;
	struct dirent *e;
	size_t plen = strlen(prefix);

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char dev[128], dir[256], type[64];

		if (sscanf(line, "%127s %255s %63s", dev, dir, type) != 3 ||
		    strcmp(type, "hugetlbfs") != 0)
			continue;
		d = opendir(dir);
		while (d != NULL && (e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, prefix, plen) == 0 &&
			    strncmp(e->d_name + plen, "map_", 4) == 0) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 e->d_name);
				unlink(path);
			}
		}
		if (d != NULL)
			closedir(d);
	}
	if (f != NULL)
		fclose(f);
	snprintf(path, sizeof(path), "/var/run/dpdk/%s", prefix);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p2[1024];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p2, sizeof(p2), "%s/%s", path, e->d_name);
		unlink(p2);
	}
	if (d != NULL)
		closedir(d);
	rmdir(path);
}

/*
 * rte_eal_cleanup() takes DPDK's shared memory-hotplug lock for writing. A
 * process killed inside its own rte_eal_init (an NF SIGKILLed while it
 * attaches) can leave a reader on that lock for good, and the clean-up
 * would spin for ever. So it gets CLEANUP_WAIT_S; past that, sluiced says
 * so, removes its files itself and exits.
 */
#define CLEANUP_WAIT_S 3

static void *
cleanup_watchdog(void *arg)
{
	const struct sl_mgr *m = arg;

	sleep(CLEANUP_WAIT_S);
	mgr_log(m,
		"DPDK's clean-up has not returned in %d s: a process killed "
		"inside its own DPDK start-up (an NF killed while it attached) "
		"left DPDK's shared memory lock held; removing the hugepage "
		"and runtime files and exiting without it",
		CLEANUP_WAIT_S);
	remove_dpdk_files(m->cleanup.prefix);
	_exit(m->cleanup.rc);
	return NULL;
}

static void
eal_cleanup(struct sl_mgr *m, const char *prefix, int rc)
{
	pthread_t t;

	m->cleanup.prefix = prefix;
	m->cleanup.rc = rc;
	if (pthread_create(&t, NULL, cleanup_watchdog, m) == 0)
		pthread_detach(t);
	rte_eal_cleanup();
}

/* ---- main ------------------------------------------------------------ */

static int
has_eal_opt(int argc, char **argv, const char *a, const char *b)
{
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], a, strlen(a)) == 0 ||
		    (b != NULL && strncmp(argv[i], b, strlen(b)) == 0))
			return 1;
	return 0;
}

/* The --file-prefix given to EAL (--file-prefix=P or --file-prefix P),
 * if any, into prefix; else prefix is left as it is. */
static void
eal_file_prefix(int argc, char **argv, char *prefix, size_t len)
{
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--file-prefix=", 14) == 0)
			snprintf(prefix, len, "%s", argv[i] + 14);
		else if (strcmp(argv[i], "--file-prefix") == 0 && i + 1 < argc)
			snprintf(prefix, len, "%s", argv[++i]);
	}
}

/* "0000:01:00.0" or "01:00.0", optionally followed by ",args". */
static int
is_pci_addr(const char *dev)
{
	unsigned int a, b, c, d;
	char tail;

	return sscanf(dev, "%x:%x:%x.%x%c", &a, &b, &c, &d, &tail) >= 4 ||
	       sscanf(dev, "%x:%x.%x%c", &a, &b, &c, &tail) >= 3;
}

/* The first "--": EAL's arguments before it, sluiced's after; argc if
 * there is none. */
static int
find_sep(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i;
	return argc;
}

#define RUN (-1)

/*
 * Options, then the start-up checks: RUN, or the status to exit with.
 * -h, --help and --defaults-json are sluiced's also before "--", and need
 * no root or hugepages (EAL's own help is DPDK's guide).
 */
static int
read_options(struct sl_mgr_opts *o, int argc, char **argv, int sep)
{
	enum sl_mgr_ask ask = SL_ASK_RUN;
	char err[512];

	for (int i = 1; i < sep && ask == SL_ASK_RUN; i++)
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0)
			ask = SL_ASK_HELP;
		else if (strcmp(argv[i], "--defaults-json") == 0)
			ask = SL_ASK_DEFAULTS_JSON;
	if (ask == SL_ASK_RUN) {
		if (sep + 1 > MAX_EAL_ARGS - 8) {
			fprintf(stderr, "sluiced: too many EAL arguments\n");
			return 1;
		}
		if (mgr_mgr_opts_parse(o, sep < argc ? argc - sep : 1,
				       sep < argc ? argv + sep : argv, &ask,
				       err, sizeof(err)) != 0) {
			fprintf(stderr, "sluiced: %s\n", err);
			return 1;
		}
	}
	/* On stdout: asked for, never printed on an error. */
	if (ask == SL_ASK_HELP) {
		mgr_mgr_opts_usage(stdout);
		return 0;
	}
	if (ask == SL_ASK_DEFAULTS_JSON)
		return mgr_mgr_opts_json(stdout) == 0 ? 0 : 1;
	return precheck(o) == 0 ? RUN : 1;
}

/* EAL's arguments: the ones given before "--" and those sluiced adds;
 * the strings it makes live here, for as long as EAL runs. */
struct eal_args {
	char *argv[MAX_EAL_ARGS];
	int argc;
	char prefix_arg[64];
	char mem_arg[48];
};

static void
eal_args_build(struct eal_args *ea, const struct sl_mgr_opts *o, int sep,
	       char **argv, const char *prefix)
{
	ea->argc = 0;
	ea->argv[ea->argc++] = argv[0];
	for (int i = 1; i < sep; i++)
		ea->argv[ea->argc++] = argv[i];
	if (!has_eal_opt(ea->argc, ea->argv, "--file-prefix", NULL)) {
		snprintf(ea->prefix_arg, sizeof(ea->prefix_arg),
			 "--file-prefix=%.40s", prefix);
		ea->argv[ea->argc++] = ea->prefix_arg;
	}
	/* Do not grab the machine's own NICs unless asked to. */
	if (!has_eal_opt(ea->argc, ea->argv, "-a", "--allow") &&
	    !has_eal_opt(ea->argc, ea->argv, "-b", "--block") &&
	    !has_eal_opt(ea->argc, ea->argv, "--no-pci", NULL)) {
		int pci = 0;

		for (uint16_t i = 0; i < o->n_ports; i++)
			pci |= is_pci_addr(o->ports[i].device);
		if (!pci)
			ea->argv[ea->argc++] = "--no-pci";
	}
	if (!has_eal_opt(ea->argc, ea->argv, "--log-level", NULL))
		ea->argv[ea->argc++] = "--log-level=lib.eal:warning";
	/*
	 * A fixed base address far from where the kernel and sanitizers map
	 * things: every NF (a secondary) must map sluiced's memory at the
	 * same addresses, and DPDK's default (4 GiB) falls inside the region
	 * ASan reserves, so ASan-built NFs often failed to attach.
	 */
	if (!has_eal_opt(ea->argc, ea->argv, "--base-virtaddr", NULL))
		ea->argv[ea->argc++] = "--base-virtaddr=0x200000000000";
	if (!has_eal_opt(ea->argc, ea->argv, "--socket-mem", "-m") &&
	    !has_eal_opt(ea->argc, ea->argv, "--legacy-mem", NULL)) {
		snprintf(ea->mem_arg, sizeof(ea->mem_arg), "--socket-mem=%llu",
			 (memory_need(o) >> 20) + 1);
		ea->argv[ea->argc++] = ea->mem_arg;
	}
	ea->argv[ea->argc] = NULL;
}

/* EAL started with ea's arguments: 0, or a positive errno having said
 * why (nothing to clean up then). prefix: the DPDK file prefix EAL uses. */
static int
start_eal(struct sl_mgr *m, struct eal_args *ea, char **argv, int sep,
	  char *prefix, size_t plen)
{
	char config[128];
	int e;

	snprintf(prefix, plen, "sluice_%.16s", m->o.name);
	eal_args_build(ea, &m->o, sep, argv, prefix);
	/*
	 * The prefix's config file is locked by its DPDK primary while that
	 * runs: a sluiced of another --name given the same --file-prefix, or
	 * one of this name still starting (its socket not up yet). EAL would
	 * only fail with rte_errno 0 ("Success").
	 */
	eal_file_prefix(ea->argc, ea->argv, prefix, plen);
	snprintf(config, sizeof(config), "/var/run/dpdk/%s/config", prefix);
	if (rte_eal_primary_proc_alive(config)) {
		fprintf(stderr,
			"sluiced: DPDK file prefix %s is in use by a running "
			"DPDK primary process (it holds %s): stop that "
			"process, or start this one with another --name (or "
			"--file-prefix)\n",
			prefix, config);
		return EBUSY;
	}
	if (rte_eal_init(ea->argc, ea->argv) >= 0) {
		m->start_tsc = rte_rdtsc();
		return 0;
	}
	e = rte_errno;
	fprintf(stderr,
		"sluiced: DPDK EAL initialisation failed: %s; check the "
		"EAL arguments before '--' (and that no other "
		"sluiced uses --name %s)\n",
		e == EACCES ? "it found no usable hugepages (a --huge-dir "
			      "that is not a mounted hugetlbfs, or one "
			      "with no free pages?)"
		: e == 0    ? "see the EAL lines above"
			    : rte_strerror(e),
		m->o.name);
	/* What EAL made before it failed (the runtime folder, maybe
	 * hugepage files): ours, unless a primary took the prefix
	 * meanwhile. */
	if (!rte_eal_primary_proc_alive(config))
		remove_dpdk_files(prefix);
	return e != 0 ? e : EIO; /* rte_errno, positive */
}

/*
 * sluiced's modules in start order (module.h says how each phase walks
 * it). The order is what the modules need of each other:
 *   node      no state; first, so that status leads the methods listed
 *   io        the RX->TX ring; stops last (reverse order): after the NFs
 *   registry  services, NFs; its poll answers registrations, then scale's
 *             poll sees them; stops NFs after scale stopped the replicas;
 *             closes first (the quiescent-state actions left)
 *   scale     replicas nf.scale started
 *   rules     before flow: its close reads the flow state
 *   requests  likewise
 *   flow      the flow table
 *   ports     after the registry; released last
 *   graph     the default chain of --chain, once the ports are up
 *   control   the socket, once there is something to serve; closes last
 *   stats     counters (methods only)
 *   telemetry started last, stopped first
 */
static const struct mgr_module *const modules[] = {
	&mgr_node_module,    &mgr_io_module,    &mgr_registry_module,
	&mgr_scale_module,   &mgr_rules_module, &mgr_requests_module,
	&mgr_flow_module,    &mgr_ports_module, &mgr_graph_module,
	&mgr_control_module, &mgr_stats_module, &mgr_telemetry_module,
};

/* Signals, the I/O lcores, shared memory, then each module's init in list
 * order: 0 when every one succeeded, else a positive errno having said why
 * on stderr.
 * *inited: how many of the list had their init called (what
 * release_modules undoes). */
static int
start_modules(struct sl_mgr *m, size_t *inited)
{
	char err[512];
	unsigned int lc;
	int n_io = 0, rc;

	*inited = 0;
	g_quit = &m->quit;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	/* Replicas started by nf.scale are reaped by the kernel (their end
	 * is seen through pidfds, like every NF's). */
	signal(SIGCHLD, SIG_IGN);

	RTE_LCORE_FOREACH_WORKER(lc)
	{
		if (n_io < 2)
			m->io_lcores[n_io++] = lc;
	}
	if (n_io == 0) {
		fprintf(stderr,
			"sluiced: needs at least 2 lcores (control + I/O): "
			"pass e.g. -l 0,1 or --lcores=0@(0,1),1@(0,1) before "
			"'--'\n");
		return EINVAL;
	}
	rc = shm_init(m);
	if (rc != 0)
		return rc;
	m->shm->n_io = (uint32_t)n_io;
	m->modules = modules;
	m->n_modules = RTE_DIM(modules);
	for (size_t k = 0; k < m->n_modules; k++) {
		const struct mgr_module *mod = m->modules[k];

		if (mod->init == NULL)
			continue;
		*inited = k + 1;
		err[0] = '\0';
		rc = mod->init(m, err, sizeof(err));
		if (rc != 0) {
			if (err[0] != '\0')
				fprintf(stderr, "sluiced: %s\n", err);
			return rc;
		}
	}
	*inited = m->n_modules;
	return 0;
}

/* Every module's start (the I/O threads, the rule builder, telemetry),
 * then the control loop until SIGINT/SIGTERM or the shutdown method. */
static void
run(struct sl_mgr *m)
{
	for (size_t k = 0; k < m->n_modules; k++)
		if (m->modules[k]->start != NULL)
			m->modules[k]->start(m);
	mgr_log(m,
		"ready: %u port(s), %u I/O thread(s), %s mode, %s hand-off, "
		"socket %s",
		m->o.n_ports, m->shm->n_io,
		m->o.mode == SL_MODE_POLL ? "poll" : "shared",
		m->o.handoff ? "mgr" : "direct", m->o.socket_path);

	mgr_control_run(m);
}

/* After a complete start: every module's stop in reverse list order, then
 * every close in list order (module.h). */
static void
stop_modules(struct sl_mgr *m)
{
	int why = atomic_load(&m->quit);

	if (why > 1)
		mgr_log(m, "shutting down: %s",
			why == SIGINT ? "SIGINT" : "SIGTERM");
	else
		mgr_log(m, "shutting down: asked over the control socket");
	for (size_t k = m->n_modules; k-- > 0;)
		if (m->modules[k]->stop != NULL)
			m->modules[k]->stop(m);
	for (size_t k = 0; k < m->n_modules; k++)
		if (m->modules[k]->close != NULL)
			m->modules[k]->close(m);
}

/* Last, after a complete or a failed start: the release of every module
 * whose init was called (the first `inited` of the list). */
static void
release_modules(struct sl_mgr *m, size_t inited)
{
	for (size_t k = 0; k < inited; k++)
		if (m->modules[k]->release != NULL)
			m->modules[k]->release(m);
}

/* options -> EAL -> modules in order -> control loop -> teardown */
int
main(int argc, char **argv)
{
	/* sluiced's one state, local to main (no other function names it):
	 * static storage, so zeroed as every module's init expects and
	 * reachable until exit, as what EAL and the modules still hold is. */
	static struct sl_mgr mgr;
	struct sl_mgr *m = &mgr;
	struct eal_args ea;
	char prefix[64];
	int sep = find_sep(argc, argv), rc;
	size_t inited;

	rc = read_options(&m->o, argc, argv, sep);
	if (rc != RUN)
		return rc;
	if (start_eal(m, &ea, argv, sep, prefix, sizeof(prefix)) != 0)
		return 1;
	rc = 1;
	if (start_modules(m, &inited) == 0) {
		run(m);
		stop_modules(m);
		rc = 0;
	}
	release_modules(m, inited);
	eal_cleanup(m, prefix, rc);
	remove_dpdk_files(prefix);
	return rc;
}
