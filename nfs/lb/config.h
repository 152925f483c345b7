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

/** An IPv4 or IPv6 address, network byte order; unused bytes zero (so
 * two compare with memcmp). */
struct lb_ip {
	uint8_t family; /* 4 or 6; 0: none */
	uint8_t pad[3];
	union {
		uint32_t v4;
		uint8_t v6[16];
	} u;
};

/** Room for lb_addr_format(). */
#define LB_ADDR_STRLEN 46

/** One backend, as a file line or a backend.add message gives it. */
struct lb_backend_spec {
	char name[LB_NAME_MAX];
	struct lb_ip addr;
	uint32_t weight;
	uint8_t mac[6];
	uint8_t has_mac;
	char via[LB_NAME_MAX]; /* sluice port name, "" for none */
	uint32_t line;         /* in the file, for messages (0: a message) */
};

struct lb_config {
	struct lb_ip vip;             /* family 0: no vip line yet */
	uint32_t proto;               /* LB_PROTO_* */
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
 * addresses unique, of the VIP's family. 0, or a positive errno with "PATH:LINE: problem" (or
 * "PATH: problem") in err. *c is then empty (nothing to free).
 */
int lb_config_load(const char *path, uint32_t max_backends, struct lb_config *c,
		   char *err, size_t errlen);

void lb_config_free(struct lb_config *c);

/** Whether the config takes packets of protocol proto (IPPROTO_*) to
 * port (host order). */
int lb_config_takes(const struct lb_config *c, uint8_t proto, uint16_t port);

/** The address as text (buf of LB_ADDR_STRLEN). */
void lb_addr_format(const struct lb_ip *addr, char *buf, size_t size);

/** 1 if a and b are the same address. */
int lb_ip_eq(const struct lb_ip *a, const struct lb_ip *b);

#endif /* SL_LB_CONFIG_H */
