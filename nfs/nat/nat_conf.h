/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-nat configuration: the address pool, the source port ranges and
 * the port forwards, read from a YAML file (format: nfs/nat/README.md).
 * No DPDK dependency. Every error names the file, the line and the entry.
 */
#ifndef SL_NAT_CONF_H
#define SL_NAT_CONF_H

#include <stddef.h>
#include <stdint.h>

#define NAT_MAX_POOL 1024       /* pool addresses */
#define NAT_MAX_FWD 1024        /* port forwards */
#define NAT_MAX_FILE (1u << 20) /* configuration file size, bytes */

/* The protocols NAT translates, as indexes. */
enum nat_proto {
	NAT_TCP = 0,
	NAT_UDP,
	NAT_ICMP, /* echo: the identifier is the "port" */
	NAT_PROTO_MAX
};

/* A source port range, host order, lo <= hi. */
struct nat_range {
	uint16_t lo, hi;
};

/* A port forward: packets to ext_addr:ext_port go to int_addr:int_port.
 * Addresses and ports in network order. */
struct nat_fwd {
	uint8_t proto; /* enum nat_proto: NAT_TCP or NAT_UDP */
	uint32_t ext_addr, int_addr;
	uint16_t ext_port, int_port;
	uint32_t line; /* where the file gave it */
};

struct nat_conf {
	uint32_t n_pool;
	uint32_t pool[NAT_MAX_POOL]; /* network order, no duplicates */
	struct nat_range range[NAT_PROTO_MAX];
	uint32_t n_fwd;
	struct nat_fwd *fwd; /* [n_fwd] */
};

/*
 * Parses a configuration from text; origin names it in messages. On error
 * err holds one line, "ORIGIN:LINE: ENTRY: PROBLEM", e.g.
 * "nat.yaml:4: pool entry 2: '10.61.9.300' is not an IPv4 address".
 * @return 0 and *out (nat_conf_free()), or -EINVAL, -ENOMEM.
 */
int nat_conf_parse(const char *text, size_t len, const char *origin,
		   struct nat_conf **out, char *err, size_t err_size);

/* Reads and parses a file: 0, or a negative errno with err set. */
int nat_conf_load(const char *path, struct nat_conf **out, char *err,
		  size_t err_size);

void nat_conf_free(struct nat_conf *c);

/* "tcp", "udp" or "icmp". */
const char *nat_proto_name(unsigned p);

#endif /* SL_NAT_CONF_H */
