/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports: any DPDK ethdev. sluiced probes each --port device itself, so a
 * wrong device string is reported with the port's name. One RX queue (read
 * by the RX thread) and one TX queue (written only by the TX thread).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "sluiced.h"

/* Symmetric Toeplitz key: both directions of a flow get the same hash. */
static uint8_t sym_rss_key[40] = {
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

/*
 * Every NF (a DPDK secondary process) probes sluiced's net_pcap devices
 * again when it starts, from a copy of the device's arguments that DPDK
 * 22.11's driver keeps in 64 bytes (ETH_PCAP_ARG_MAXLEN): longer arguments
 * are cut, and cut right before the '=' of "infinite_rx" they crash every
 * NF in the driver (atoi(NULL)). And a probe of tx_pcap=FILE opens FILE
 * for writing: it truncates the capture sluiced is writing (what was
 * written before became zeros).
 *
 * So sluiced probes a pcap device with its files (rx_pcap, tx_pcap) as
 * short symlinks in a private folder, and the arguments NFs see are
 * short. Once the port is started (sluiced has the files open), each
 * tx_pcap link is turned to /dev/null (pcap_private_settle): an NF's
 * probe then opens the capture to read and /dev/null to write, and
 * succeeds without touching what sluiced writes. (When the folder was
 * removed instead, every NF's log began with three DPDK error lines
 * about a missing capture, above the NF's own errors.) NFs never use a
 * pcap port themselves (it has one TX queue, sluiced's). The folder goes
 * at sluiced's exit, or at the next start after a crash
 * (pcap_private_sweep). Arguments still too long are refused.
 *
 * Rewrites device into out; *dir gets the folder ("" if nothing was
 * rewritten) and *tx_links a bit per link that is a tx_pcap file.
 * Returns 0, or -1 with err set.
 */
#define PCAP_ARGS_MAX 63 /* ETH_PCAP_ARG_MAXLEN - 1 */

static int
pcap_private(const char *pname, const char *device, char *out,
	     size_t outlen, char *dir, size_t dirlen, uint64_t *tx_links,
	     char *err, size_t errlen)
{
	static const char *const keys[] = {"rx_pcap=", "tx_pcap="};
	const char *p = device;
	const char *args;
	size_t o = 0;
	unsigned int n = 0;

	dir[0] = '\0';
	*tx_links = 0;
	if ((strncmp(device, "net_pcap", 8) != 0 &&
	     strncmp(device, "eth_pcap", 8) != 0) ||
	    !isdigit((unsigned char)device[8]))
		goto verbatim; /* not the pcap driver (net_pcapx0 is none) */
	if (strstr(device, keys[0]) == NULL && strstr(device, keys[1]) == NULL)
		goto check;
	snprintf(dir, dirlen, "/tmp/sl-%d-XXXXXX", (int)getpid());
	if (mkdtemp(dir) == NULL) {
		snprintf(err, errlen,
			 "port '%s': cannot create a private folder for its "
			 "capture (%s): %s; check that /tmp is writable",
			 pname, dir, strerror(errno));
		dir[0] = '\0';
		return -1;
	}
	while (*p != '\0') {
		size_t seg = strcspn(p, ",");
		char target[PATH_MAX], link[PATH_MAX + 32], cwd[PATH_MAX];
		const char *key = NULL;
		int w;

		for (unsigned int k = 0; k < RTE_DIM(keys) && o > 0; k++)
			if (seg > strlen(keys[k]) &&
			    strncmp(p, keys[k], strlen(keys[k])) == 0)
				key = keys[k];
		if (key != NULL) {
			const char *v = p + strlen(key);
			size_t vlen = seg - strlen(key);

			if (*v == '/')
				w = snprintf(target, sizeof(target), "%.*s",
					     (int)vlen, v);
			else
				w = snprintf(target, sizeof(target), "%s/%.*s",
					     getcwd(cwd, sizeof(cwd)) ? cwd : ".",
					     (int)vlen, v);
			if (w < 0 || (size_t)w >= sizeof(target))
				goto too_long;
			/* Said here, with the user's path: the PMD's own
			 * message names the private link. */
			if (key == keys[0] && access(target, R_OK) != 0) {
				snprintf(err, errlen,
					 "port '%s': rx_pcap file '%s' cannot "
					 "be read: %s; give an existing capture "
					 "(a relative path starts at sluiced's "
					 "working directory)",
					 pname, target, strerror(errno));
				return -1;
			}
			if (key == keys[1] && n < 64)
				*tx_links |= UINT64_C(1) << n;
			snprintf(link, sizeof(link), "%s/%u.pcap", dir, n++);
			if (symlink(target, link) != 0) {
				snprintf(err, errlen,
					 "port '%s': cannot link %s to %s: %s",
					 pname, link, target, strerror(errno));
				return -1;
			}
			w = snprintf(out + o, outlen - o, "%s%s%s",
				     o ? "," : "", key, link);
		} else {
			w = snprintf(out + o, outlen - o, "%s%.*s",
				     o ? "," : "", (int)seg, p);
		}
		if (w < 0 || (size_t)w >= outlen - o)
			goto too_long;
		o += (size_t)w;
		p += seg;
		if (*p == ',')
			p++;
	}
	device = out;
check:
	args = strchr(device, ',');
	if (args != NULL && strlen(args + 1) > PCAP_ARGS_MAX) {
		snprintf(err, errlen,
			 "port '%s': the arguments of '%s' are %zu characters "
			 "(capture files counted as sluiced renames them); "
			 "DPDK's net_pcap keeps %d for the NFs' processes: "
			 "use fewer files or arguments",
			 pname, device, strlen(args + 1), PCAP_ARGS_MAX);
		return -1;
	}
	if (device != out)
		snprintf(out, outlen, "%s", device);
	return 0;
too_long:
	snprintf(err, errlen, "port '%s': device string '%s' is too long",
		 pname, device);
	return -1;
verbatim:
	snprintf(out, outlen, "%s", device);
	return 0;
}

/* The port is started and sluiced has its files open: tx_pcap links
 * now lead to /dev/null, for the NFs' probes (see pcap_private). */
static void
pcap_private_settle(const char *dir, uint64_t tx_links)
{
	char link[PATH_MAX + 32];

	for (unsigned int n = 0; n < 64; n++) {
		if (!(tx_links & (UINT64_C(1) << n)))
			continue;
		snprintf(link, sizeof(link), "%s/%u.pcap", dir, n);
		if (unlink(link) != 0 || symlink("/dev/null", link) != 0)
			sl_log("cannot point %s at /dev/null: %s; NFs' probes "
			       "of the port will fail and say so in their "
			       "logs",
			       link, strerror(errno));
	}
}

/* Removes a folder pcap_private made. */
static void
pcap_private_remove(const char *dir)
{
	char link[PATH_MAX + 32];

	if (dir[0] == '\0')
		return;
	for (unsigned int n = 0; n < 64; n++) {
		snprintf(link, sizeof(link), "%s/%u.pcap", dir, n);
		if (unlink(link) != 0)
			break;
	}
	rmdir(dir);
}

/* Folders of sluiced processes that are gone (killed before their exit
 * removed them): /tmp/sl-PID-XXXXXX with no process PID. */
static void
pcap_private_sweep(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char dir[PATH_MAX];
		int pid, end = 0;

		if (sscanf(e->d_name, "sl-%d-%*6[A-Za-z0-9]%n", &pid,
			   &end) != 1 ||
		    end == 0 || e->d_name[end] != '\0' || pid <= 0 ||
		    pid == (int)getpid())
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue; /* its sluiced is alive */
		snprintf(dir, sizeof(dir), "/tmp/%s", e->d_name);
		pcap_private_remove(dir);
	}
	closedir(d);
}

/* Probes device (unless the EAL arguments did); *dir and *tx_links: as
 * pcap_private says. */
static int
find_or_probe(const char *pname, const char *device, uint16_t *port_id,
	      char *dir, size_t dirlen, uint64_t *tx_links, char *err,
	      size_t errlen)
{
	char devname[128], probe_dev[1024];
	size_t len = strcspn(device, ",");
	int rc;

	if (len == 0 || len >= sizeof(devname)) {
		snprintf(err, errlen,
			 "port '%s': device '%s' has no driver name; write "
			 "e.g. net_pcap0,rx_pcap=in.pcap or a PCI address",
			 pname, device);
		return -1;
	}
	memcpy(devname, device, len);
	devname[len] = '\0';
	dir[0] = '\0';
	*tx_links = 0;
	if (rte_eth_dev_get_port_by_name(devname, port_id) == 0)
		return 0; /* given in the EAL arguments */
	if (pcap_private(pname, device, probe_dev, sizeof(probe_dev), dir,
			 dirlen, tx_links, err, errlen) != 0)
		return -1;
	rc = rte_dev_probe(probe_dev);
	if (rc == -EFAULT) {
		/* rte_devargs_parse: no bus took the name, i.e. no driver
		 * (a virtual device's name starts with its driver's). */
		snprintf(err, errlen,
			 "port '%s': no DPDK driver knows the device name "
			 "'%s': name a virtual device after its driver and a "
			 "number (net_pcap0, net_tap0, net_af_packet0, "
			 "net_null0, net_ring0, net_memif0) or give a PCI "
			 "address",
			 pname, devname);
		return -1;
	}
	if (rc == -ENODEV) {
		snprintf(err, errlen,
			 "port '%s': no device '%s' on this machine: a PCI "
			 "device must be bound to vfio-pci (dpdk-devbind.py "
			 "--status) and the EAL arguments must not say "
			 "--no-pci",
			 pname, devname);
		return -1;
	}
	if (rc < 0) {
		/* Drivers mostly return -1, which is no errno worth
		 * printing ("Operation not permitted"): their reason is the
		 * line they logged above. */
		snprintf(err, errlen,
			 "port '%s': cannot create device '%s': %s; check the "
			 "driver name (net_pcap, net_tap, net_af_packet, "
			 "net_null, net_ring, net_memif, or a PCI address) "
			 "and its arguments, and that files it names exist",
			 pname, device,
			 rc == -1 ? "the driver refused it (its reason is "
				    "in the lines above)"
				  : rte_strerror(-rc));
		return -1;
	}
	if (rte_eth_dev_get_port_by_name(devname, port_id) != 0) {
		snprintf(err, errlen,
			 "port '%s': device '%s' was created but has no "
			 "ethdev named '%s'",
			 pname, device, devname);
		return -1;
	}
	return 0;
}

static int
port_setup(struct sl_mgr *m, uint16_t pid, const char *pname,
	   uint64_t *rss_hf, char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct rte_mempool *pool;
	uint16_t n_txq;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': cannot read device info: %s",
			 pname, rte_strerror(-rc));
		return -1;
	}
	/* Ask only for what the device says it can do. */
	if (info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP |
					   RTE_ETH_RSS_UDP)) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
		if (info.hash_key_size == sizeof(sym_rss_key)) {
			conf.rx_adv_conf.rss_conf.rss_key = sym_rss_key;
			conf.rx_adv_conf.rss_conf.rss_key_len =
				sizeof(sym_rss_key);
			*rss_hf = conf.rx_adv_conf.rss_conf.rss_hf;
		} else {
			sl_log("port '%s': its RSS key is %u bytes, not the %zu "
			       "of sluiced's symmetric key: its hash would "
			       "differ between a flow's two directions, so "
			       "flows are hashed in software",
			       pname, info.hash_key_size, sizeof(sym_rss_key));
		}
	}
	/* Queue 0 is sluiced's; NFs get their own where the device has more
	 * (a net_pcap port writing one file has one). */
	n_txq = (uint16_t)(1 + RTE_MIN(m->o.nf_txq,
				       info.max_tx_queues > 1
					       ? info.max_tx_queues - 1u
					       : 0u));
	if (m->o.handoff)
		n_txq = 1; /* mgr hand-off: NFs touch nothing but their rings */
	if (strstr(m->shm->ports[pid].device, "tx_pcap=") != NULL)
		n_txq = 1; /* NFs cannot open its capture (pcap_private) */
	if (strncmp(m->shm->ports[pid].device, "net_ring", 8) == 0)
		n_txq = 1; /* TX queue q feeds RX queue q: only 0 is read */
	rc = rte_eth_dev_configure(pid, 1, n_txq, &conf);
	if (rc != 0 && n_txq > 1) {
		/* Some devices (net_tap) want as many RX as TX queues, and an
		 * RX queue nobody reads would lose packets: NFs then send
		 * through sluiced instead of their own queues. */
		n_txq = 1;
		rc = rte_eth_dev_configure(pid, 1, n_txq, &conf);
	}
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': configure failed: %s", pname,
			 rte_strerror(-rc));
		return -1;
	}
	pool = sl_pool_for_socket(m, rte_eth_dev_socket_id(pid), err, errlen);
	if (pool == NULL) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "port '%s': %s", pname, why);
		return -1;
	}
	rc = rte_eth_rx_queue_setup(pid, 0, m->o.rxd, rte_eth_dev_socket_id(pid),
				    NULL, pool);
	for (uint16_t q = 0; rc == 0 && q < n_txq; q++)
		rc = rte_eth_tx_queue_setup(pid, q, m->o.txd,
					    rte_eth_dev_socket_id(pid), NULL);
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': queue setup failed: %s",
			 pname, rte_strerror(-rc));
		return -1;
	}
	m->shm->ports[pid].n_txq = n_txq;
	rte_eth_promiscuous_enable(pid); /* best effort: not all can */
	rc = rte_eth_dev_start(pid);
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': start failed: %s", pname,
			 rte_strerror(-rc));
		return -1;
	}
	return 0;
}

/* Records a probed port, sets it up and starts it. */
static int
port_init(struct sl_mgr *m, uint16_t pid, const struct sl_port_opt *po,
	  uint64_t *rss_hf, char *err, size_t errlen)
{
	struct sl_shm *shm = m->shm;
	struct sl_port *p;

	if (pid >= SL_MAX_PORTS) {
		snprintf(err, errlen,
			 "port '%s': ethdev id %u is above the limit of %d "
			 "ports",
			 po->name, pid, SL_MAX_PORTS);
		return -1;
	}
	p = &shm->ports[pid];
	if (p->used) {
		snprintf(err, errlen,
			 "port '%s': device '%s' is already port '%s'",
			 po->name, po->device, p->name);
		return -1;
	}
	snprintf(p->name, sizeof(p->name), "%s", po->name);
	snprintf(p->device, sizeof(p->device), "%s", po->device);
	p->used = 1;
	shm->n_ports++;
	if (port_setup(m, pid, po->name, rss_hf, err, errlen) != 0)
		return -1;
	__atomic_store_n(&p->started, 1, __ATOMIC_RELEASE);
	return 0;
}

int
sl_ports_init(struct sl_mgr *m, char *err, size_t errlen)
{
	uint64_t hf0 = 0;

	/* A flow's hash must be the same whichever port it enters by (it is
	 * the flow table's signature and the balancer's input): the ports'
	 * RSS hash is used only if every port has one, with the symmetric
	 * key over the same fields. */
	m->rss_flow_hash = m->o.n_ports > 0;
	pcap_private_sweep();

	for (uint16_t i = 0; i < m->o.n_ports; i++) {
		const struct sl_port_opt *po = &m->o.ports[i];
		char *dir = m->pcap_dir[i];
		uint64_t hf = 0, tx_links;
		uint16_t pid;
		int rc;

		rc = find_or_probe(po->name, po->device, &pid, dir,
				   sizeof(m->pcap_dir[i]), &tx_links, err,
				   errlen);
		if (rc == 0)
			rc = port_init(m, pid, po, &hf, err, errlen);
		if (rc != 0)
			return -1; /* the caller's sl_ports_close undoes it */
		pcap_private_settle(dir, tx_links); /* the files are open */
		if (i == 0)
			hf0 = hf;
		if (hf == 0 || hf != hf0)
			m->rss_flow_hash = 0;
	}
	return 0;
}

void
sl_ports_close(struct sl_mgr *m)
{
	if (m->shm == NULL)
		return;
	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++) {
		struct sl_port *p = &m->shm->ports[pid];

		if (!p->used)
			continue;
		if (p->started) {
			__atomic_store_n(&p->started, 0, __ATOMIC_RELEASE);
			rte_eth_dev_stop(pid);
		}
		rte_eth_dev_close(pid); /* flushes e.g. a pcap being written */
		p->used = 0;
	}
	for (uint16_t i = 0; i < SL_MAX_PORTS; i++) {
		pcap_private_remove(m->pcap_dir[i]);
		m->pcap_dir[i][0] = '\0';
	}
}

int
sl_port_by_name(const struct sl_mgr *m, const char *name)
{
	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++)
		if (m->shm->ports[pid].used &&
		    strcmp(m->shm->ports[pid].name, name) == 0)
			return pid;
	return -ENOENT;
}

json_t *
sl_ports_json(const struct sl_mgr *m)
{
	json_t *a = json_array();

	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++) {
		const struct sl_port *p = &m->shm->ports[pid];
		struct rte_eth_link link;

		if (!p->used)
			continue;
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(pid, &link);
		json_array_append_new(
			a, json_pack("{s:i, s:s, s:s, s:b, s:b, s:i, s:i, s:i}",
				     "id", pid, "name", p->name, "device",
				     p->device, "started", p->started,
				     "link_up",
				     link.link_status == RTE_ETH_LINK_UP,
				     "rx_queues", 1, "tx_queues", p->n_txq,
				     "socket", rte_eth_dev_socket_id(pid)));
	}
	return a;
}
