/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluiced's ports (src/mgr/ports/): any DPDK ethdev. sluiced probes each
 * --port device itself, so a wrong device string is reported with the
 * port's name. One RX queue (read by the RX thread), TX queue 0 written
 * only by sluiced's TX thread, and up to --nf-tx-queues more, one per NF.
 *   ports.c    the generic path: probe, configure, start, close, port.list
 *   pcap.c     the net_pcap class (capture files behind private links)
 *   classes.c  the net_ring and net_tap classes, the class table, lookup
 *
 * A driver that needs handling of its own is a port class: a const struct
 * sl_port_class whose hooks the generic path calls at fixed points. A
 * device with no class (PCI NICs, net_null, net_af_packet, net_memif...)
 * takes the generic path alone.
 *
 * State: struct sl_ports_state, m->ports (no file-scope state). Written by
 * the control thread at start and at shutdown only; the I/O threads read
 * rss_flow_hash once, when they start.
 *
 * Part of sluiced.h, which includes it: include "sluiced.h".
 */
#ifndef SL_MGR_PORTS_H
#define SL_MGR_PORTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sl_shared.h"

struct sl_mgr;
struct sl_port_class;

/* Length of sluiced's symmetric Toeplitz key (ports.c) */
#define SL_RSS_KEY_LEN 40

/* One --port, by its index in the options. */
struct sl_port_state {
	/* Its device's class (mgr_port_class_find), NULL: generic only */
	const struct sl_port_class *cls;
	/* net_pcap: the private folder of its capture links ("" if none)
	 * and a bit per link that is a tx_pcap file (pcap.c) */
	char pcap_dir[40];
	uint64_t pcap_tx_links;
};

struct sl_ports_state {
	struct sl_port_state port[SL_MAX_PORTS]; /* [o.n_ports] used */
	/* 1: every port hashes with sluiced's symmetric RSS key over the same
	 * fields, so a port's RSS hash can stand for the flow hash; else the
	 * flow hash is always computed in software. */
	int rss_flow_hash;
	/* The symmetric key the ports were configured with: ethdev keeps the
	 * pointer (a driver may read it again at start), so it lives as long
	 * as the ports. */
	uint8_t rss_key[SL_RSS_KEY_LEN];
};

/*
 * A port class: the special handling of one driver. Each hook is called
 * by the control thread, at the point it names; NULL means the class does
 * nothing there. A hook that fails fills err ("port 'NAME': ...") and
 * returns a positive errno; mgr_ports_close then undoes whatever was done.
 */
struct sl_port_class {
	/* Driver names (and aliases), NULL-terminated: a device is the
	 * class's when its name starts with one of them... */
	const char *const *drivers;
	/* ...and, if numbered, the next character is a digit (net_pcap0:
	 * net_pcapx0 is left to DPDK, whose own refusal names it). */
	int numbered;
	/* Once, in mgr_ports_init before any port is probed: cleans up what
	 * a sluiced that was killed left behind. Called whether or not a
	 * port of the class is configured. */
	void (*sweep)(void);
	/* Before sluiced probes the device (never for a device the EAL
	 * arguments already created): writes the device string to probe
	 * into out (outlen bytes) and may fill ps's class state. NULL: the
	 * device string is probed as written. */
	int (*probe_args)(struct sl_port_state *ps, const char *pname,
			  const char *device, char *out, size_t outlen,
			  char *err, size_t errlen);
	/* Configure: the number of TX queues the device may have, given the
	 * n (>= 1) the generic path would ask for; device is the --port
	 * string. NULL: n. */
	uint16_t (*tx_queues)(const char *device, uint16_t n);
	/* After the port started (a driver has its files open); m for its
	 * log lines. */
	void (*started)(const struct sl_mgr *m, struct sl_port_state *ps);
	/* In mgr_ports_close after every device is closed, for every --port
	 * of the class, whether its init got far or not. */
	void (*closed)(struct sl_port_state *ps);
};

/* The classes (classes.c, pcap.c) */
extern const struct sl_port_class mgr_port_class_pcap;
extern const struct sl_port_class mgr_port_class_ring;
extern const struct sl_port_class mgr_port_class_tap;
/* Every class, NULL-terminated */
extern const struct sl_port_class *const mgr_port_classes[];

/* The class of a device string ("net_pcap0,rx_pcap=..."), NULL: none */
const struct sl_port_class *mgr_port_class_find(const char *device);

/* Probes, configures and starts every --port. 0, or a positive errno with
 * err set (the caller's mgr_ports_close undoes it). */
int mgr_ports_init(struct sl_mgr *m, char *err, size_t errlen);
void mgr_ports_close(struct sl_mgr *m);
/* The ethdev id of the port named name, -1 if there is none (a lookup,
 * not an error) */
int mgr_port_by_name(const struct sl_mgr *m, const char *name);
json_t *mgr_ports_json(const struct sl_mgr *m);

#endif /* SL_MGR_PORTS_H */
