/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What sluice-l3fwd's unit tests (test_l3fwd.c, test_l3fwd_icmp.c) share:
 * the libsluice calls the NF makes that nf_stub.c does not have, a packet
 * pool, the test's routes file and frames, and running a frame through
 * ops->process. Ports a, b, c are ethdevs 0, 1, 2 with MAC
 * 02:00:00:00:0N:fe; d (3) has none. Include once per test program.
 */
#ifndef SL_TEST_L3FWD_ENV_H
#define SL_TEST_L3FWD_ENV_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

#include "icmp.h"

int sl_l3_main(int argc, char **argv);

#define PROG "sluice-l3fwd"
#define MAX_SENT 64
#define NS 1000000000ull

/* ---- what libsluice would give the NF --------------------------------- */

static struct rte_mempool *pool;
static struct rte_mbuf *sent[MAX_SENT];
static unsigned n_sent;

int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	static const char *const names[] = {"a", "b", "c", "d"};

	(void)nf;
	for (int i = 0; i < 4; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* The NF reads port MACs through DPDK's call, which this test stands in
 * for (the executable's definition wins over librte_ethdev's). */
int
rte_eth_macaddr_get(uint16_t port_id, struct rte_ether_addr *mac)
{
	if (port_id >= 3)
		return -ENODEV;
	memset(mac, 0, sizeof(*mac));
	mac->addr_bytes[0] = 0x02;
	mac->addr_bytes[4] = (uint8_t)(port_id + 1);
	mac->addr_bytes[5] = 0xfe;
	return 0;
}

/* The ingress port is kept in the dynfield area, next to the stub's
 * verdict. */
uint16_t
sl_pkt_in_port(const struct rte_mbuf *m)
{
	return (uint16_t)m->dynfield1[2];
}

struct rte_mempool *
sl_nf_pktmbuf_pool(const struct sl_nf *nf)
{
	(void)nf;
	return pool;
}

void
sl_nf_send(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n)
{
	(void)nf;
	for (uint16_t i = 0; i < n; i++) {
		assert_true(n_sent < MAX_SENT);
		sent[n_sent++] = pkts[i];
	}
}

static inline void
sent_free(void)
{
	for (unsigned i = 0; i < n_sent; i++)
		rte_pktmbuf_free(sent[i]);
	n_sent = 0;
}

/* ---- files and frames ------------------------------------------------- */

#define write_file(text) nf_test_write_file("sl_l3_test_", "", text)

#define rewrite_file nf_test_rewrite_file

static const char __attribute__((unused))
routes[] = "# the test's router\n"
	   "port a address 10.62.1.1 address fd62:1::1\n"
	   "port b address 10.62.2.1\n"
	   "port c address fd62:3::1 mac 02:cc:cc:cc:cc:01\n"
	   "neigh 10.62.1.2 02:aa:00:00:00:02 port a\n"
	   "neigh 10.62.2.2 02:bb:00:00:00:02 port b   # host B\n"
	   "neigh 10.62.3.2 02:c0:00:00:00:02 port c\n"
	   "neigh fd62:3::2 02:c6:00:00:00:02 port c\n"
	   "route 10.62.0.0/16 via 10.62.2.2\n"
	   "route 10.62.3.0/24 via 10.62.3.2\n"
	   "route 10.62.3.128/25 port a mac 02:aa:00:00:01:28\n"
	   "route fd62::/16 via fd62:3::2\n"
	   "\n";

static const uint8_t __attribute__((unused)) mac_a[6] = {2, 0, 0, 0, 1, 0xfe};
static const uint8_t __attribute__((unused)) mac_b[6] = {2, 0, 0, 0, 2, 0xfe};
static const uint8_t __attribute__((unused))
mac_c[6] = {2, 0xcc, 0xcc, 0xcc, 0xcc, 1};
static const uint8_t __attribute__((unused)) nb_b[6] = {2, 0xbb, 0, 0, 0, 2};
static const uint8_t __attribute__((unused)) nb_c[6] = {2, 0xc0, 0, 0, 0, 2};
static const uint8_t __attribute__((unused)) nb_c6[6] = {2, 0xc6, 0, 0, 0, 2};
static const uint8_t __attribute__((unused))
nb_128[6] = {2, 0xaa, 0, 0, 1, 0x28};

static const uint8_t __attribute__((unused))
v6_host_a[16] = {0xfd, 0x62, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
static const uint8_t __attribute__((unused))
v6_far[16] = {0xfd, 0x62, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
static const uint8_t __attribute__((unused))
v6_router_a[16] = {0xfd, 0x62, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

/* Sets the IPv4 header checksum of a frame built by frame_ip4(). */
#define fix4(f) frame_ip4_hdr_cksum(f, 14)

static inline void
udp4(struct frame *f, uint32_t src, uint32_t dst, uint8_t ttl)
{
	frame_ip4(f, IPPROTO_UDP, src, 33434, dst, 33435, 12);
	f->b[14 + 8] = ttl;
	fix4(f);
}

static inline void
udp6(struct frame *f, const uint8_t *src, const uint8_t *dst, uint8_t hl)
{
	frame_ip6(f, IPPROTO_UDP, src, 33434, dst, 33435, 12);
	f->b[14 + 7] = hl;
}

/* Runs one frame from in_port through process: its verdict, and the
 * frame as it is after (into out, if not NULL). */
static inline sl_verdict_t
run(const struct frame *f, uint16_t in_port, struct frame *out)
{
	struct rte_mbuf *m = stub_mbuf(f->b, f->len);
	sl_verdict_t v;

	assert_non_null(m);
	m->dynfield1[2] = in_port;
	stub_ops->process(stub_nf(), &m, 1);
	assert_true(stub_verdict_set(m));
	v = sl_pkt_verdict(m);
	if (out != NULL) {
		out->len = m->data_len;
		memcpy(out->b, rte_pktmbuf_mtod(m, void *), m->data_len);
	}
	stub_mbuf_free(m);
	return v;
}

static inline void
start(const char *text, const char *extra, char **path_out)
{
	char *path = write_file(text);
	char *out;
	int rc;

	out = stub_init_output(&rc, PROG, "--routes", path, "--stats-ms", "0",
			       extra ? "--icmp-burst" : NULL, extra, NULL);
	if (rc != 0)
		fail_msg("init failed: %s", out);
	free(out);
	if (path_out != NULL) {
		*path_out = path; /* the caller unlinks it */
	} else {
		unlink(path); /* read: only a reload would read it again */
		free(path);
	}
}

static inline char *
stop(void)
{
	char *out = fini_output();

	sent_free();
	return out;
}

static inline void
expect_file_error(const char *text, const char *want)
{
	char *path = write_file(text), line[512];

	snprintf(line, sizeof(line), PROG ": %s:%s\n", path, want);
	expect_init_error(PROG, line, "--routes", path, NULL);
	unlink(path);
	free(path);
}

static inline int
setup(void **state)
{
	(void)state;
	stub_eal_mem_mb = 512; /* two LPMs of each family: 4 x 67 MB */
	if (stub_setup(PROG, sl_l3_main) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("l3test", 255, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE,
				       SOCKET_ID_ANY);
	return pool == NULL ? -1 : 0;
}

static inline int
teardown(void **state)
{
	rte_mempool_free(pool);
	return stub_teardown(state);
}

#endif /* SL_TEST_L3FWD_ENV_H */
