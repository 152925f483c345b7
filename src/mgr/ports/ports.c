/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports, the generic path (ports.h): probe, configure, start and close
 * any ethdev, calling its port class's hooks where it has one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "sluiced.h"

/* Symmetric Toeplitz key: both directions of a flow get the same hash. */
static const uint8_t sym_rss_key[SL_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
	0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
};

/* Probes device (unless the EAL arguments did), through its class's
 * probe_args hook if it has one. */
static int
find_or_probe(struct sl_port_state *ps, const char *pname, const char *device,
	      uint16_t *port_id, char *err, size_t errlen)
{
	char devname[128], probe_dev[1024];
	size_t len = strcspn(device, ",");
	int rc;

	if (len == 0 || len >= sizeof(devname)) {
		snprintf(err, errlen,
			 "port '%s': device '%s' has no driver name; write "
			 "e.g. net_pcap0,rx_pcap=in.pcap or a PCI address",
			 pname, device);
		return EINVAL;
	}
	memcpy(devname, device, len);
	devname[len] = '\0';
	if (rte_eth_dev_get_port_by_name(devname, port_id) == 0)
		return 0; /* given in the EAL arguments */
	if (ps->cls != NULL && ps->cls->probe_args != NULL) {
		rc = ps->cls->probe_args(ps, pname, device, probe_dev,
					 sizeof(probe_dev), err, errlen);
		if (rc != 0)
			return rc;
	} else {
		snprintf(probe_dev, sizeof(probe_dev), "%s", device);
	}
	/* DPDK's calls here return a negative errno (or -1): the errors this
	 * file returns are positive (-rc, or EIO for a bare -1). */
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
		return ENXIO;
	}
	if (rc == -ENODEV) {
		snprintf(err, errlen,
			 "port '%s': no device '%s' on this machine: a PCI "
			 "device must be bound to vfio-pci (dpdk-devbind.py "
			 "--status) and the EAL arguments must not say "
			 "--no-pci",
			 pname, devname);
		return ENODEV;
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
		return rc == -1 ? EIO : -rc;
	}
	if (rte_eth_dev_get_port_by_name(devname, port_id) != 0) {
		snprintf(err, errlen,
			 "port '%s': device '%s' was created but has no "
			 "ethdev named '%s'",
			 pname, device, devname);
		return ENODEV;
	}
	return 0;
}

static int
port_setup(struct sl_mgr *m, const struct sl_port_state *ps, uint16_t pid,
	   const char *pname, uint64_t *rss_hf, char *err, size_t errlen)
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
		return -rc;
	}
	/* Ask only for what the device says it can do. */
	if (info.flow_type_rss_offloads &
	    (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP)) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
		if (info.hash_key_size == sizeof(sym_rss_key)) {
			conf.rx_adv_conf.rss_conf.rss_key = m->ports.rss_key;
			conf.rx_adv_conf.rss_conf.rss_key_len =
				sizeof(m->ports.rss_key);
			*rss_hf = conf.rx_adv_conf.rss_conf.rss_hf;
		} else {
			mgr_log(m,
				"port '%s': its RSS key is %u bytes, not the %zu "
				"of sluiced's symmetric key: its hash would "
				"differ between a flow's two directions, so "
				"flows are hashed in software",
				pname, info.hash_key_size, sizeof(sym_rss_key));
		}
	}
	/* Queue 0 is sluiced's; NFs get their own where the device has more
	 * and its class allows them. */
	n_txq = (uint16_t)(1 + RTE_MIN(m->o.nf_txq,
				       info.max_tx_queues > 1
					       ? info.max_tx_queues - 1u
					       : 0u));
	if (m->o.handoff)
		n_txq = 1; /* mgr hand-off: NFs touch nothing but their rings */
	if (ps->cls != NULL && ps->cls->tx_queues != NULL)
		n_txq = ps->cls->tx_queues(m->shm->ports[pid].device, n_txq);
	rc = rte_eth_dev_configure(pid, 1, n_txq, &conf);
	if (rc != 0 && n_txq > 1) {
		/* A device of no class may want as many RX as TX queues (as
		 * net_tap does), and an RX queue nobody reads would lose
		 * packets: NFs then send through sluiced instead of their own
		 * queues. */
		n_txq = 1;
		rc = rte_eth_dev_configure(pid, 1, n_txq, &conf);
	}
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': configure failed: %s", pname,
			 rte_strerror(-rc));
		return -rc;
	}
	pool = mgr_pool_for_socket(m, rte_eth_dev_socket_id(pid), err, errlen);
	if (pool == NULL) {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "port '%s': %s", pname, why);
		return ENOMEM;
	}
	rc = rte_eth_rx_queue_setup(pid, 0, m->o.rxd,
				    rte_eth_dev_socket_id(pid), NULL, pool);
	for (uint16_t q = 0; rc == 0 && q < n_txq; q++)
		rc = rte_eth_tx_queue_setup(pid, q, m->o.txd,
					    rte_eth_dev_socket_id(pid), NULL);
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': queue setup failed: %s",
			 pname, rte_strerror(-rc));
		return -rc;
	}
	m->shm->ports[pid].n_txq = n_txq;
	rte_eth_promiscuous_enable(pid); /* best effort: not all can */
	rc = rte_eth_dev_start(pid);
	if (rc != 0) {
		snprintf(err, errlen, "port '%s': start failed: %s", pname,
			 rte_strerror(-rc));
		return -rc;
	}
	return 0;
}

/* Records a probed port, sets it up and starts it. */
static int
port_init(struct sl_mgr *m, const struct sl_port_state *ps, uint16_t pid,
	  const struct sl_port_opt *po, uint64_t *rss_hf, char *err,
	  size_t errlen)
{
	struct sl_shm *shm = m->shm;
	struct sl_port *p;
	int rc;

	if (pid >= SL_MAX_PORTS) {
		snprintf(err, errlen,
			 "port '%s': ethdev id %u is above the limit of %d "
			 "ports",
			 po->name, pid, SL_MAX_PORTS);
		return ERANGE;
	}
	p = &shm->ports[pid];
	if (p->used) {
		snprintf(err, errlen,
			 "port '%s': device '%s' is already port '%s'",
			 po->name, po->device, p->name);
		return EEXIST;
	}
	snprintf(p->name, sizeof(p->name), "%s", po->name);
	snprintf(p->device, sizeof(p->device), "%s", po->device);
	p->used = 1;
	shm->n_ports++;
	rc = port_setup(m, ps, pid, po->name, rss_hf, err, errlen);
	if (rc != 0)
		return rc;
	__atomic_store_n(&p->started, 1, __ATOMIC_RELEASE);
	return 0;
}

int
mgr_ports_init(struct sl_mgr *m, char *err, size_t errlen)
{
	uint64_t hf0 = 0;

	/* A flow's hash must be the same whichever port it enters by (it is
	 * the flow table's signature and the balancer's input): the ports'
	 * RSS hash is used only if every port has one, with the symmetric
	 * key over the same fields. */
	m->ports.rss_flow_hash = m->o.n_ports > 0;
	memcpy(m->ports.rss_key, sym_rss_key, sizeof(sym_rss_key));
	for (size_t c = 0; mgr_port_classes[c] != NULL; c++)
		if (mgr_port_classes[c]->sweep != NULL)
			mgr_port_classes[c]->sweep();

	for (uint16_t i = 0; i < m->o.n_ports; i++) {
		const struct sl_port_opt *po = &m->o.ports[i];
		struct sl_port_state *ps = &m->ports.port[i];
		uint64_t hf = 0;
		uint16_t pid;
		int rc;

		ps->cls = mgr_port_class_find(po->device);
		rc = find_or_probe(ps, po->name, po->device, &pid, err, errlen);
		if (rc == 0)
			rc = port_init(m, ps, pid, po, &hf, err, errlen);
		if (rc != 0)
			return rc; /* the caller's mgr_ports_close undoes it */
		if (ps->cls != NULL && ps->cls->started != NULL)
			ps->cls->started(m, ps);
		if (i == 0)
			hf0 = hf;
		if (hf == 0 || hf != hf0)
			m->ports.rss_flow_hash = 0;
	}
	return 0;
}

void
mgr_ports_close(struct sl_mgr *m)
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
		struct sl_port_state *ps = &m->ports.port[i];

		if (ps->cls != NULL && ps->cls->closed != NULL)
			ps->cls->closed(ps);
		ps->cls = NULL;
	}
}

int
mgr_port_by_name(const struct sl_mgr *m, const char *name)
{
	for (uint16_t pid = 0; pid < SL_MAX_PORTS; pid++)
		if (m->shm->ports[pid].used &&
		    strcmp(m->shm->ports[pid].name, name) == 0)
			return pid;
	return -1; /* none */
}

json_t *
mgr_ports_json(const struct sl_mgr *m)
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
			a,
			json_pack("{s:i, s:s, s:s, s:b, s:b, s:i, s:i, s:i}",
				  "id", pid, "name", p->name, "device",
				  p->device, "started", p->started, "link_up",
				  link.link_status == RTE_ETH_LINK_UP,
				  "rx_queues", 1, "tx_queues", p->n_txq,
				  "socket", rte_eth_dev_socket_id(pid)));
	}
	return a;
}
