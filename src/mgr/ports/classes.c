/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port classes other than net_pcap's (pcap.c), the table of them all
 * and the lookup of a device's class.
 */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "sluiced.h"

/* Always one TX queue: the one the device may have (see each class). */
static uint16_t
one_tx_queue(const char *device, uint16_t n)
{
	(void)device;
	(void)n;
	return 1;
}

/* net_ring: TX queue q feeds RX queue q, and sluiced reads RX queue 0
 * only, so what NFs sent on queues of their own would never be read. */
static const char *const ring_drivers[] = {"net_ring", NULL};

const struct sl_port_class mgr_port_class_ring = {
	.drivers = ring_drivers,
	.tx_queues = one_tx_queue,
};

/* net_tap wants as many RX as TX queues (its configure refuses others),
 * and an RX queue nobody reads would lose packets: NFs send through
 * sluiced instead of queues of their own. */
static const char *const tap_drivers[] = {"net_tap", "eth_tap", NULL};

const struct sl_port_class mgr_port_class_tap = {
	.drivers = tap_drivers,
	.tx_queues = one_tx_queue,
};

const struct sl_port_class *const mgr_port_classes[] = {
	&mgr_port_class_pcap,
	&mgr_port_class_ring,
	&mgr_port_class_tap,
	NULL,
};

const struct sl_port_class *
mgr_port_class_find(const char *device)
{
	for (size_t c = 0; mgr_port_classes[c] != NULL; c++) {
		const struct sl_port_class *cls = mgr_port_classes[c];

		for (size_t d = 0; cls->drivers[d] != NULL; d++) {
			size_t len = strlen(cls->drivers[d]);

			if (strncmp(device, cls->drivers[d], len) == 0 &&
			    (!cls->numbered ||
			     isdigit((unsigned char)device[len])))
				return cls;
		}
	}
	return NULL;
}
