/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-lb's configuration file: the virtual IP and the backends
 * (format: nfs/lb/README.md). Pure code (no DPDK).
 */
#ifndef SL_LB_CONFIG_H
#define SL_LB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define LB_NAME_MAX 32  /* backend and port names, with the NUL */
#define LB_MAX_PORTS 16 /* VIP ports */
#define LB_WEIGHT_MAX 10000
#define LB_PROTO_TCP 0x1u
#define LB_PROTO_UDP 0x2u

/** One backend, as a file line or a backend.add message gives it. */
struct lb_backend_spec {
	char name[LB_NAME_MAX];
	uint32_t addr; /* IPv4, network byte order */
	uint32_t weight;
	uint8_t mac[6];
	uint8_t has_mac;
	char via[LB_NAME_MAX]; /* sluice port name, "" for none */
	uint32_t line;         /* in the file, for messages (0: a message) */
};

struct lb_config {
	uint32_t vip;   /* network byte order; 0: no vip line yet */
	uint32_t proto; /* LB_PROTO_* */
	uint16_t ports[LB_MAX_PORTS]; /* host order */
	uint32_t n_ports;             /* 0: every port */
	struct lb_backend_spec *backends;
	uint32_t n_backends;
};

/**
 * Parses "NAME ADDR [weight W] [mac MAC] [via PORT]" (a backend line
 * without its keyword, or a backend.add message) into *b. 0, or EINVAL
 * with the problem in err.
 */
int lb_backend_parse(const char *text, struct lb_backend_spec *b, char *err,
		     size_t errlen);

/**
 * Reads the file path into *c: at most max_backends backends, names and
 * addresses unique. 0, or a positive errno with "PATH:LINE: problem" (or
 * "PATH: problem") in err. *c is then empty (nothing to free).
 */
int lb_config_load(const char *path, uint32_t max_backends, struct lb_config *c,
		   char *err, size_t errlen);

void lb_config_free(struct lb_config *c);

/** Whether the config takes packets of protocol proto (IPPROTO_*) to
 * port (host order). */
int lb_config_takes(const struct lb_config *c, uint8_t proto, uint16_t port);

/** "a.b.c.d" for an address in network byte order (buf of 16). */
void lb_addr_format(uint32_t addr, char *buf, size_t size);

#endif /* SL_LB_CONFIG_H */
