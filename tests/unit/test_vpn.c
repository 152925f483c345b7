/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-vpn (nfs/vpn/) through its ops with the libsluice stand-in of
 * nf_stub.c, and its ESP and replay-window code directly: known answers
 * (frames made by scapy's own IPsec, AES-128-GCM and AES-256-GCM with an
 * ESN, byte by byte), decryption back to the exact plain frame, replayed,
 * old, tampered, unknown and malformed packets refused and counted,
 * sequence number overflow, the SA file's errors by their text, reload.
 */
#undef main /* meson.build renames vpn.c's main to sl_vpn_main */

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

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"

#include "esp.h"
#include "sa.h"

int sl_vpn_main(int argc, char **argv);

#define PROG "sluice-vpn"
#define init_with(rc, ...) stub_init_output(rc, PROG, __VA_ARGS__)

/*
 * Made by scapy 2.5 (scapy.layers.ipsec.SecurityAssociation, AES-GCM,
 * tunnel_header IP(src=10.64.9.1, dst=10.64.9.2, id=0, tos=0x28)) from
 * plain_frame's IP packet: kat128 with SPI 0x1001, key K128, seq 1, IV
 * 0000000000000001; kat256esn with SPI 0x1002, key K256, esn_en, ESN
 * 0x100000001, IV 0000000100000001. The Ethernet header is plain_frame's.
 */
static const uint8_t plain_frame[59] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00, 0x45, 0x28, 0x00, 0x2d, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11,
	0x50, 0xd9, 0x0a, 0x40, 0x01, 0x05, 0x0a, 0x40, 0x02, 0x07, 0x03, 0xe8,
	0x00, 0x09, 0x00, 0x19, 0x66, 0xf9, 0x6b, 0x6e, 0x6f, 0x77, 0x6e, 0x20,
	0x61, 0x6e, 0x73, 0x77, 0x65, 0x72, 0x20, 0x74, 0x65, 0x73, 0x74,
};
static const uint8_t kat128[114] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00, 0x45, 0x28, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x40, 0x32,
	0x53, 0xbe, 0x0a, 0x40, 0x09, 0x01, 0x0a, 0x40, 0x09, 0x02, 0x00, 0x00,
	0x10, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x03, 0x59, 0x1c, 0xdf, 0x7e, 0xb0, 0x77, 0x50, 0xc7, 0x7d,
	0x16, 0xce, 0xd1, 0x44, 0x95, 0x63, 0x1b, 0xb2, 0x1b, 0x84, 0x95, 0x1d,
	0x80, 0xab, 0x6d, 0xe8, 0xed, 0xe9, 0x77, 0xc8, 0x30, 0x65, 0x85, 0xdb,
	0xaf, 0xc5, 0x56, 0x46, 0xf5, 0xa5, 0x10, 0x7e, 0x81, 0xcb, 0xbb, 0x2d,
	0xbe, 0x10, 0x00, 0x94, 0x1a, 0xd6, 0x7b, 0xaf, 0x01, 0xca, 0x0a, 0xa4,
	0x94, 0xca, 0x98, 0xf2, 0x4f, 0xa7,
};
static const uint8_t kat256esn[114] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00, 0x45, 0x28, 0x00, 0x64, 0x00, 0x00, 0x00, 0x00, 0x40, 0x32,
	0x53, 0xbe, 0x0a, 0x40, 0x09, 0x01, 0x0a, 0x40, 0x09, 0x02, 0x00, 0x00,
	0x10, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	0x00, 0x01, 0x84, 0xa9, 0x99, 0x2c, 0x9c, 0x89, 0x48, 0x21, 0x5a, 0x2c,
	0x02, 0x2f, 0x7a, 0x00, 0x82, 0xcd, 0xfa, 0xcf, 0xf6, 0x82, 0x40, 0xd1,
	0xbf, 0x4b, 0x36, 0xc0, 0x31, 0xa8, 0x8d, 0x8c, 0xee, 0xea, 0x5b, 0x63,
	0xca, 0x39, 0xd8, 0xd7, 0x2c, 0x10, 0xc4, 0xe3, 0xf2, 0x04, 0xd7, 0xe0,
	0xd8, 0xdd, 0x00, 0xe2, 0xcc, 0x38, 0x77, 0xce, 0x85, 0xe3, 0x69, 0xaf,
	0x06, 0x9c, 0xd1, 0x32, 0x60, 0xef,
};

/* The same with an IPv6 inner packet (2001:db8:1::5 -> 2001:db8:2::7,
 * traffic class 0x28), SPI 0x1003, key K128, seq 1: next header 41. */
static const uint8_t plain6_frame[79] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x86, 0xdd, 0x62, 0x80, 0x00, 0x00, 0x00, 0x19, 0x11, 0x40, 0x20, 0x01,
	0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x05, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x03, 0xe8, 0x00, 0x09, 0x00, 0x19,
	0x23, 0x04, 0x6b, 0x6e, 0x6f, 0x77, 0x6e, 0x20, 0x61, 0x6e, 0x73, 0x77,
	0x65, 0x72, 0x20, 0x74, 0x65, 0x73, 0x74,
};
static const uint8_t kat6[134] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x00, 0x45, 0x28, 0x00, 0x78, 0x00, 0x00, 0x00, 0x00, 0x40, 0x32,
	0x53, 0xaa, 0x0a, 0x40, 0x09, 0x01, 0x0a, 0x40, 0x09, 0x02, 0x00, 0x00,
	0x10, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x01, 0x24, 0xf1, 0x1c, 0xf2, 0x6c, 0x9d, 0x66, 0x10, 0xa7, 0x6d,
	0x4b, 0xaf, 0xdb, 0x05, 0x94, 0x66, 0x11, 0xf2, 0x19, 0x83, 0x96, 0xf5,
	0x80, 0xa7, 0x4d, 0xf0, 0x86, 0xa8, 0x1c, 0xa4, 0x5f, 0x12, 0xeb, 0xfb,
	0xce, 0xab, 0x25, 0x31, 0x90, 0xd0, 0x33, 0xe2, 0xe4, 0xb1, 0xcf, 0x35,
	0x9c, 0x10, 0xd9, 0x3c, 0x82, 0xa1, 0x6f, 0x60, 0x98, 0xa9, 0xab, 0x55,
	0xa4, 0x61, 0x82, 0x2c, 0xf9, 0x43, 0x57, 0xcc, 0x4e, 0xf9, 0xb2, 0xef,
	0x53, 0xc3, 0xd7, 0x26, 0xc2, 0x51, 0xf0, 0x3f, 0x83, 0x30, 0x94, 0xab,
	0x7d, 0x4d,
};

#define K128 "0x000102030405060708090a0b0c0d0e0fa0a1a2a3"
#define K256                                                                   \
	"0x202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"   \
	"c0c1c2c3"
#define EP_A "local 10.64.9.1 remote 10.64.9.2"
#define EP_B "local 10.64.9.2 remote 10.64.9.1"
#define BUF_ROOM 2048
#define HEADROOM 128

#define write_file(text) nf_test_write_file("sl_vpn_test_", "", text)

#define rewrite_file nf_test_rewrite_file

static void
drop_file(char *path)
{
	unlink(path);
	free(path);
}

/* An mbuf as a port gives one: headroom before the frame, room after. */
static struct rte_mbuf *
mk(const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m =
		aligned_alloc(RTE_CACHE_LINE_SIZE,
			      RTE_ALIGN(sizeof(*m), RTE_CACHE_LINE_SIZE));
	uint8_t *buf = malloc(BUF_ROOM);

	assert_non_null(m);
	assert_non_null(buf);
	memset(m, 0, sizeof(*m));
	memset(buf, 0xee, BUF_ROOM);
	memcpy(buf + HEADROOM, frame, len);
	m->buf_addr = buf;
	m->buf_len = BUF_ROOM;
	m->data_off = HEADROOM;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->nb_segs = 1;
	return m;
}

static void
assert_frame(const struct rte_mbuf *m, const uint8_t *want, uint32_t len)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	assert_int_equal(rte_pktmbuf_pkt_len(m), len);
	assert_int_equal(rte_pktmbuf_data_len(m), len);
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != want[i])
			fail_msg("byte %u: %#04x, expected %#04x", i, p[i],
				 want[i]);
}

static int
no_ports(void *arg, const char *name)
{
	(void)arg;
	return strcmp(name, "wire") == 0 ? 3 : -1;
}

/* The test's ports: "wire" is port 3. */
int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	return no_ports((void *)(uintptr_t)nf, name);
}

static struct vpn_sad *
load_sad(const char *text, uint32_t window)
{
	const struct vpn_limits lim = {.max_sas = 16,
				       .max_policies = 16,
				       .window = window};
	char *path = write_file(text), err[VPN_ERR_LEN];
	struct vpn_sad *sad = NULL;
	int rc = vpn_sad_load(path, &lim, no_ports, NULL, &sad, err,
			      sizeof(err));

	if (rc != 0)
		fail_msg("%s", err);
	drop_file(path);
	return sad;
}

/* The NF's verdict for frame, and the frame it leaves in *out (caller
 * frees with stub_mbuf_free). */
static sl_verdict_t
nf_pkt(const uint8_t *frame, uint32_t len, struct rte_mbuf **out)
{
	struct rte_mbuf *m = mk(frame, len);
	sl_verdict_t v = stub_ops->process_pkt(stub_nf(), m);

	if (out != NULL)
		*out = m;
	else
		stub_mbuf_free(m);
	return v;
}

/* ---- known answers --------------------------------------------------- */

static void
test_kat_encrypt(void **state)
{
	char *path = write_file("sa out spi 0x1001 " EP_A
				" cipher aes128-gcm16 key " K128 "\n"
				"policy src 10.64.1.0/24 dst 10.64.2.0/24 "
				"proto udp sa 0x1001\n");
	struct rte_mbuf *m;
	char *out;
	int rc;

	(void)state;
	out = init_with(&rc, "--sa", path, NULL);
	assert_int_equal(rc, 0);
	assert_has(out, PROG ": loaded 1 SAs (0 in, 1 out) and 1 policies "
			     "from ");
	assert_has(out, ", replay window 128, unprotected traffic passed\n");
	assert_has(out, PROG ":   sa out spi 0x1001 local 10.64.9.1 remote "
			     "10.64.9.2 aes128-gcm16\n");
	free(out);
	assert_int_equal(nf_pkt(plain_frame, sizeof(plain_frame), &m), SL_NEXT);
	assert_frame(m, kat128, sizeof(kat128));
	stub_mbuf_free(m);
	out = fini_output();
	assert_has(out, " packets=1 bytes=59 ");
	assert_has(out, " encrypted=1 decrypted=0 bypass=0 non_ip=0 "
			"dropped=0 malformed=0 unknown_spi=0 bad_endpoint=0 "
			"replay=0 outside_window=0 auth_failed=0 dummy=0 "
			"seq_overflow=0 too_big=0 no_sa=0 selector=0 "
			"crypto_error=0\n");
	assert_has(out, "vpn-sa: dir=out spi=0x1001 line=1 packets=1 bytes=45 "
			"seq=1\n");
	assert_has(out, "vpn-policy: line=2 sa=0x1001 packets=1\n");
	free(out);
	drop_file(path);
}

/* IPv6 inside IPv4: a policy of IPv6 prefixes, next header 41. */
static void
test_kat_ipv6(void **state)
{
	char *path = write_file(
		"sa out spi 0x1003 " EP_A " cipher aes128-gcm16 key " K128 "\n"
		"policy src 10.64.1.0/24 sa 0x1003\n"
		"policy src 2001:db8:1::/48 dst 2001:db8:2::/48 "
		"proto udp sa 0x1003\n");
	struct vpn_sad *in_sad = load_sad("sa in spi 0x1003 " EP_B
					  " cipher aes128-gcm16 key " K128 "\n",
					  128);
	struct vpn_sa *sa;
	struct rte_mbuf *m;
	char *out;
	int rc;

	(void)state;
	free(init_with(&rc, "--sa", path, NULL));
	assert_int_equal(rc, 0);
	assert_int_equal(nf_pkt(plain6_frame, sizeof(plain6_frame), &m),
			 SL_NEXT);
	assert_frame(m, kat6, sizeof(kat6));
	assert_int_equal(vpn_esp_decap(in_sad, m, 14, &sa), VPN_OK);
	assert_frame(m, plain6_frame, sizeof(plain6_frame));
	stub_mbuf_free(m);
	out = fini_output();
	assert_has(out, "vpn-policy: line=2 sa=0x1003 packets=0\n");
	assert_has(out, "vpn-policy: line=3 sa=0x1003 packets=1\n");
	free(out);
	vpn_sad_free(in_sad);
	drop_file(path);
}

/* AES-256 with a 64-bit ESN, both ways, on the ESP code itself. */
static void
test_kat_esn(void **state)
{
	struct vpn_sad *out_sad = load_sad("sa out spi 0x1002 " EP_A
					   " cipher aes256-gcm16 key " K256
					   " esn\n",
					   128);
	struct vpn_sad *in_sad = load_sad("sa in spi 0x1002 " EP_B
					  " cipher aes256-gcm16 key " K256
					  " esn\n",
					  128);
	struct rte_mbuf *m = mk(plain_frame, sizeof(plain_frame));
	struct vpn_sa *sa;

	(void)state;
	out_sad->sas[0].seq = 0x100000000ull;
	assert_int_equal(vpn_esp_encap(&out_sad->sas[0], m, 14,
				       sizeof(plain_frame) - 14, 0x28, 4),
			 VPN_OK);
	assert_frame(m, kat256esn, sizeof(kat256esn));
	assert_int_equal(out_sad->sas[0].seq, 0x100000001ull);
	/* The receiver is at 2^32 + 0x10: low bits 1 belong to 2^32 + 1. */
	in_sad->sas[0].seq = 0x100000010ull;
	assert_int_equal(vpn_esp_decap(in_sad, m, 14, &sa), VPN_OK);
	assert_ptr_equal(sa, &in_sad->sas[0]);
	assert_frame(m, plain_frame, sizeof(plain_frame));
	stub_mbuf_free(m);
	/* Replayed: the same number again. */
	m = mk(kat256esn, sizeof(kat256esn));
	assert_int_equal(vpn_esp_decap(in_sad, m, 14, &sa), VPN_D_REPLAY);
	stub_mbuf_free(m);
	/* A receiver past 2^32 + 128 takes low bits 1 for 2^33 + 1 (RFC 4303
	 * A2.2): the ICV, computed over the true high half, fails. */
	m = mk(kat256esn, sizeof(kat256esn));
	in_sad->sas[0].seq = 0x100000081ull;
	assert_int_equal(vpn_esp_decap(in_sad, m, 14, &sa), VPN_D_AUTH_FAILED);
	stub_mbuf_free(m);
	/* So does a receiver without a window far ahead. */
	m = mk(kat256esn, sizeof(kat256esn));
	in_sad->sas[0].seq = 0x200000000ull;
	in_sad->window = 0;
	assert_int_equal(vpn_esp_decap(in_sad, m, 14, &sa), VPN_D_AUTH_FAILED);
	stub_mbuf_free(m);
	vpn_sad_free(out_sad);
	vpn_sad_free(in_sad);
}

/* ---- refusals, through the NF ---------------------------------------- */

struct esp_frame {
	uint8_t b[256];
	uint32_t len;
};

/* plain_frame encrypted by the SA of sad with sequence number seq and
 * next header nh. */
static void
make_esp(struct vpn_sad *sad, uint64_t seq, uint8_t nh, struct esp_frame *f)
{
	struct rte_mbuf *m = mk(plain_frame, sizeof(plain_frame));

	sad->sas[0].seq = seq - 1;
	assert_int_equal(vpn_esp_encap(&sad->sas[0], m, 14,
				       sizeof(plain_frame) - 14, 0x28, nh),
			 VPN_OK);
	f->len = rte_pktmbuf_pkt_len(m);
	assert_true(f->len <= sizeof(f->b));
	memcpy(f->b, rte_pktmbuf_mtod(m, uint8_t *), f->len);
	stub_mbuf_free(m);
}

static void
expect_drop(const struct esp_frame *f)
{
	assert_int_equal(nf_pkt(f->b, f->len, NULL), SL_DROP);
}

static void
expect_plain(const struct esp_frame *f)
{
	struct rte_mbuf *m;

	assert_int_equal(nf_pkt(f->b, f->len, &m), SL_OUT(3));
	assert_frame(m, plain_frame, sizeof(plain_frame));
	stub_mbuf_free(m);
}

/* Frames that are not what the SA sent, each refused for its reason. */
static void
send_forgeries(struct vpn_sad *snd)
{
	struct esp_frame f;

	make_esp(snd, 5, 4, &f);
	f.b[60] ^= 0x01; /* ciphertext */
	expect_drop(&f); /* auth_failed */
	f.b[60] ^= 0x01;
	f.b[f.len - 1] ^= 0x80; /* ICV */
	expect_drop(&f);        /* auth_failed */
	f.b[f.len - 1] ^= 0x80;
	f.b[40] ^= 0x01; /* sequence number: in the AAD */
	expect_drop(&f); /* auth_failed */
	f.b[40] ^= 0x01;
	expect_plain(&f); /* the failures left no trace in the window */
	f.b[37] = 0x99;   /* SPI 0x1099 */
	expect_drop(&f);  /* unknown_spi */
	f.b[37] = 0x01;
	f.b[29] = 3;     /* outer source 10.64.9.3 */
	expect_drop(&f); /* bad_endpoint */
	f.b[29] = 1;
	f.b[17] = 20 + 8 + 8 + 2 + 16 - 1; /* total length: one short */
	expect_drop(&f);                   /* malformed */
	make_esp(snd, 6, 59, &f);
	expect_drop(&f); /* dummy */
}

static void
test_refusals(void **state)
{
	struct vpn_sad *snd = load_sad("sa out spi 0x1001 " EP_A
				       " cipher aes128-gcm16 key " K128 "\n",
				       128);
	char *path = write_file("sa in spi 0x1001 " EP_B
				" cipher aes128-gcm16 key " K128
				" port wire\n");
	struct esp_frame f;
	static const uint8_t arp[42] = {2, 0, 0, 0, 0, 2,    2,
					0, 0, 0, 0, 1, 0x08, 0x06};
	char *out;
	int rc;

	(void)state;
	out = init_with(&rc, "--sa", path, "--unprotected", "drop", NULL);
	assert_int_equal(rc, 0);
	assert_has(out, PROG ":   sa in spi 0x1001 local 10.64.9.2 remote "
			     "10.64.9.1 aes128-gcm16 port wire\n");
	assert_has(out, "unprotected traffic dropped\n");
	free(out);
	memcpy(f.b, kat128, sizeof(kat128));
	f.len = sizeof(kat128);
	expect_plain(&f); /* scapy's packet, seq 1 */
	expect_drop(&f);  /* replay */
	send_forgeries(snd);
	make_esp(snd, 200, 4, &f);
	expect_plain(&f);
	make_esp(snd, 72, 4, &f); /* 200 - 128 */
	expect_drop(&f);          /* outside_window */
	make_esp(snd, 73, 4, &f); /* the oldest the window holds */
	expect_plain(&f);
	expect_drop(&f); /* replay */
	make_esp(snd, 199, 4, &f);
	expect_plain(&f); /* out of order, within the window */
	assert_int_equal(nf_pkt(plain_frame, sizeof(plain_frame), NULL),
			 SL_DROP); /* no_sa */
	assert_int_equal(nf_pkt(arp, sizeof(arp), NULL), SL_NEXT);
	out = fini_output();
	assert_has(out, " packets=17 ");
	assert_has(out, " encrypted=0 decrypted=5 bypass=0 non_ip=1 "
			"dropped=11 malformed=1 unknown_spi=1 bad_endpoint=1 "
			"replay=2 outside_window=1 auth_failed=3 dummy=1 "
			"seq_overflow=0 too_big=0 no_sa=1 selector=0 "
			"crypto_error=0\n");
	assert_has(out, "vpn-sa: dir=in spi=0x1001 line=1 packets=5 bytes=225 "
			"seq=200\n");
	free(out);
	drop_file(path);
	vpn_sad_free(snd);
}

/* An inbound SA's inner-src/inner-dst: what it may carry (RFC 4301 5.2).
 * kat128 carries 10.64.1.5 -> 10.64.2.7. */
static void
test_selector(void **state)
{
	static const char *const files[] = {
		"sa in spi 0x1001 " EP_B " cipher aes128-gcm16 key " K128
		" inner-src 10.64.1.0/24 inner-dst 10.64.2.7\n",
		"sa in spi 0x1001 " EP_B " cipher aes128-gcm16 key " K128
		" inner-src 10.64.3.0/24\n",
		"sa in spi 0x1001 " EP_B " cipher aes128-gcm16 key " K128
		" inner-dst 10.64.2.6\n",
	};
	char *out;
	int rc;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		char *path = write_file(files[i]);
		struct rte_mbuf *m;

		free(init_with(&rc, "--sa", path, NULL));
		assert_int_equal(rc, 0);
		assert_int_equal(nf_pkt(kat128, sizeof(kat128), &m),
				 i == 0 ? SL_NEXT : SL_DROP);
		if (i == 0)
			assert_frame(m, plain_frame, sizeof(plain_frame));
		stub_mbuf_free(m);
		/* authentic either way: the window took it */
		assert_int_equal(nf_pkt(kat128, sizeof(kat128), NULL), SL_DROP);
		out = fini_output();
		assert_has(out, i == 0 ? " decrypted=1 " : " decrypted=0 ");
		assert_has(out, i == 0 ? " selector=0 " : " selector=1 ");
		assert_has(out, " replay=1 ");
		free(out);
		drop_file(path);
	}
}

/* The bitmap on its own: the edges of the window as it moves. */
static void
test_window(void **state)
{
	struct vpn_sad *sad = load_sad("sa in spi 0x1001 " EP_B
				       " cipher aes128-gcm16 key " K128 "\n",
				       64);
	struct vpn_sa *sa = &sad->sas[0];
	uint64_t s;

	(void)state;
	assert_int_equal(vpn_replay_check(sa, sad, 0, &s),
			 VPN_D_OUTSIDE_WINDOW); /* 0 is never sent */
	for (uint64_t i = 1; i <= 300; i += 3) {
		assert_int_equal(vpn_replay_check(sa, sad, (uint32_t)i, &s),
				 VPN_OK);
		assert_int_equal(s, i);
		vpn_replay_update(sa, sad, i);
	}
	/* top 298: 235..298 are in the window, every third one seen */
	assert_int_equal(vpn_replay_check(sa, sad, 234, &s),
			 VPN_D_OUTSIDE_WINDOW);
	assert_int_equal(vpn_replay_check(sa, sad, 235, &s), VPN_D_REPLAY);
	assert_int_equal(vpn_replay_check(sa, sad, 236, &s), VPN_OK);
	assert_int_equal(vpn_replay_check(sa, sad, 298, &s), VPN_D_REPLAY);
	assert_int_equal(vpn_replay_check(sa, sad, 297, &s), VPN_OK);
	/* A jump of more than the bitmap clears it all. */
	vpn_replay_update(sa, sad, 100000);
	assert_int_equal(vpn_replay_check(sa, sad, 99937, &s), VPN_OK);
	assert_int_equal(vpn_replay_check(sa, sad, 99936, &s),
			 VPN_D_OUTSIDE_WINDOW);
	assert_int_equal(vpn_replay_check(sa, sad, 100000, &s), VPN_D_REPLAY);
	vpn_sad_free(sad);
	/* Words that come round again are cleared: 2 and 130 share a bit of
	 * the 128-bit map, 74 and 138 another. */
	sad = load_sad("sa in spi 0x1001 " EP_B " cipher aes128-gcm16 key " K128
		       "\n",
		       64);
	sa = &sad->sas[0];
	vpn_replay_update(sa, sad, 2);
	vpn_replay_update(sa, sad, 74);
	vpn_replay_update(sa, sad, 140);
	assert_int_equal(vpn_replay_check(sa, sad, 130, &s), VPN_OK);
	assert_int_equal(vpn_replay_check(sa, sad, 74, &s),
			 VPN_D_OUTSIDE_WINDOW); /* 140 - 74 >= 64 */
	assert_int_equal(vpn_replay_check(sa, sad, 77, &s), VPN_OK);
	assert_int_equal(vpn_replay_check(sa, sad, 140, &s), VPN_D_REPLAY);
	vpn_sad_free(sad);
}

/* Sequence numbers run out: 32 bits, and 64 with an ESN. */
static void
test_seq_overflow(void **state)
{
	struct vpn_sad *sad = load_sad("sa out spi 0x1001 " EP_A
				       " cipher aes128-gcm16 key " K128 "\n"
				       "sa out spi 0x1002 " EP_A
				       " cipher aes256-gcm16 key " K256
				       " esn\n",
				       128);
	struct rte_mbuf *m = mk(plain_frame, sizeof(plain_frame));
	struct rte_mbuf *m2 = mk(plain_frame, sizeof(plain_frame));
	const uint32_t ip_len = sizeof(plain_frame) - 14;

	(void)state;
	sad->sas[0].seq = UINT32_MAX - 1;
	assert_int_equal(vpn_esp_encap(&sad->sas[0], m, 14, ip_len, 0, 4),
			 VPN_OK);
	assert_int_equal(sad->sas[0].seq, UINT32_MAX);
	assert_int_equal(vpn_esp_encap(&sad->sas[0], m2, 14, ip_len, 0, 4),
			 VPN_D_SEQ_OVERFLOW);
	assert_frame(m2, plain_frame, sizeof(plain_frame)); /* untouched */
	sad->sas[1].seq = UINT32_MAX;
	assert_int_equal(vpn_esp_encap(&sad->sas[1], m2, 14, ip_len, 0, 4),
			 VPN_OK);
	assert_int_equal(sad->sas[1].seq, 1ull << 32);
	stub_mbuf_free(m2);
	m2 = mk(plain_frame, sizeof(plain_frame));
	sad->sas[1].seq = UINT64_MAX;
	assert_int_equal(vpn_esp_encap(&sad->sas[1], m2, 14, ip_len, 0, 4),
			 VPN_D_SEQ_OVERFLOW);
	stub_mbuf_free(m);
	stub_mbuf_free(m2);
	vpn_sad_free(sad);
}

/* A frame with no room around it cannot take ESP's bytes: too_big. */
static void
test_too_big(void **state)
{
	char *path = write_file("sa out spi 0x1001 " EP_A
				" cipher aes128-gcm16 key " K128 "\n"
				"policy sa 0x1001\n");
	struct rte_mbuf *m = stub_mbuf(plain_frame, sizeof(plain_frame));
	char *out;
	int rc;

	(void)state;
	free(init_with(&rc, "--sa", path, NULL));
	assert_int_equal(rc, 0);
	assert_int_equal(stub_ops->process_pkt(stub_nf(), m), SL_DROP);
	stub_mbuf_free(m);
	out = fini_output();
	assert_has(out, " too_big=1 ");
	free(out);
	drop_file(path);
}

/* The value of " NAME=" in the counters line. */
static uint64_t
counter(const char *out, const char *name)
{
	char key[40];
	const char *p;

	snprintf(key, sizeof(key), " %s=", name);
	p = strstr(out, key);
	if (p == NULL)
		fail_msg("no %s in:\n%s", key, out);
	return strtoull(p + strlen(key), NULL, 10);
}

/* Every truncation of an ESP frame and of a plain one, and random ESP
 * frames with the SA's SPI, in exact-size buffers (ASan sees an
 * overread): each is dropped with a reason or passed, and the counters
 * add up. */
static void
test_hostile(void **state)
{
	char *path = write_file(
		"sa in spi 0x1001 " EP_B " cipher aes128-gcm16 key " K128 "\n"
		"sa out spi 0x1002 " EP_A " cipher aes128-gcm16 key " K128 "\n"
		"policy sa 0x1002\n");
	uint8_t b[sizeof(kat128)];
	unsigned n = 0, seed = 7;
	char *out, line[64];
	int rc;

	(void)state;
	free(init_with(&rc, "--sa", path, "--replay-window", "0", NULL));
	assert_int_equal(rc, 0);
	for (uint32_t len = 0; len <= sizeof(kat128); len++, n += 2) {
		struct rte_mbuf *m = stub_mbuf(kat128, len);
		struct rte_mbuf *p =
			stub_mbuf(plain_frame, len < sizeof(plain_frame)
						       ? len
						       : sizeof(plain_frame));

		(void)stub_ops->process_pkt(stub_nf(), m);
		(void)stub_ops->process_pkt(stub_nf(), p);
		stub_mbuf_free(m);
		stub_mbuf_free(p);
	}
	for (int i = 0; i < 20000; i++, n++) {
		uint32_t len = 14 + (uint32_t)rand_r(&seed) % (sizeof(b) - 13);
		struct rte_mbuf *m;

		memcpy(b, kat128, sizeof(b));
		for (int k = 0; k < 1 + i % 4; k++)
			b[14 + (uint32_t)rand_r(&seed) % (sizeof(b) - 14)] =
				(uint8_t)rand_r(&seed);
		b[14] = 0x45;
		b[23] = 50; /* ESP */
		m = stub_mbuf(b, len);
		(void)stub_ops->process_pkt(stub_nf(), m);
		stub_mbuf_free(m);
	}
	out = fini_output();
	snprintf(line, sizeof(line), " packets=%u ", n);
	assert_has(out, line);
	/* Each one counted once; the mutations that decrypt changed only the
	 * outer header, which ESP does not authenticate (no replay window
	 * here). */
	assert_int_equal(counter(out, "encrypted") + counter(out, "decrypted") +
				 counter(out, "bypass") +
				 counter(out, "non_ip") +
				 counter(out, "dropped"),
			 n);
	assert_true(counter(out, "decrypted") >= 1);
	assert_true(counter(out, "auth_failed") > 100);
	assert_int_equal(counter(out, "crypto_error"), 0);
	free(out);
	drop_file(path);
}

/* ---- the SA file ----------------------------------------------------- */

struct bad_file {
	const char *text;
	const char *msg; /* after "sluice-vpn: PATH" */
};

#define SA_OK "sa out spi 0x1001 " EP_A " cipher aes128-gcm16 key " K128

static const struct bad_file bad_files[] = {
	{"", ": no 'sa' line"},
	{"# nothing\n\n", ": no 'sa' line"},
	{"tunnel x\n", ":1: unknown keyword 'tunnel' (expected sa or policy)"},
	{"sa sideways spi 1\n", ":1: sa: the direction 'sideways' is not in "
				"or out"},
	{"sa\n", ":1: sa: the direction '' is not in or out"},
	{"sa out spi 0x1001 colour blue\n",
	 ":1: sa: unknown field 'colour' (expected spi, local, remote, "
	 "cipher, key, esn, port, eth-src, eth-dst, inner-src, inner-dst)"},
	{"sa out spi 300 inner-src 10.64.2.0/24\n",
	 ":1: sa: inner-src is for 'sa in' (policy lines choose what goes into "
	 "an 'sa out')"},
	{"sa in spi 300 inner-dst 10.64.1.0/16\n",
	 ":1: sa: inner-dst '10.64.1.0/16' has bits set after the prefix "
	 "length"},
	{"sa in spi 300 inner-src 10.64.1.0/\n",
	 ":1: sa: inner-src '10.64.1.0/' is not an IPv4 prefix (A.B.C.D/N, "
	 "A.B.C.D or any)"},
	{"sa out spi 255\n", ":1: sa: spi '255' is not a number from 256 to "
			     "4294967295 (0x100 to 0xffffffff; 1-255 are "
			     "reserved)"},
	{"sa out spi 0x100000000\n", ":1: sa: spi '0x100000000' is not a "
				     "number from 256"},
	{"sa out spi\n", ":1: sa: 'spi' needs a value"},
	{"sa out spi 300 spi 301\n", ":1: sa: 'spi' given twice"},
	{"sa out spi 300 local 10.64.9.300\n",
	 ":1: sa: local '10.64.9.300' is not an IPv4 address"},
	{"sa out spi 300 " EP_A " cipher aes-cbc\n",
	 ":1: sa: cipher 'aes-cbc': use aes128-gcm16 or aes256-gcm16"},
	{"sa out spi 300 " EP_A " cipher aes128-gcm16 key 0x0011\n",
	 ":1: sa: key for aes128-gcm16 must be 20 bytes (16 of key, 4 of "
	 "salt): 0x and 40 hex digits, not 4"},
	{"sa out spi 300 " EP_A " cipher aes256-gcm16 key " K128 "\n",
	 ":1: sa: key for aes256-gcm16 must be 36 bytes (32 of key, 4 of "
	 "salt): 0x and 72 hex digits, not 40"},
	{"sa out spi 300 " EP_A " cipher aes128-gcm16 key "
	 "0x000102030405060708090a0b0c0d0e0fa0a1a2ZZ\n",
	 ":1: sa: key: 'Z' is not a hex digit"},
	{"sa out spi 300 " EP_A " key " K128 "\n", ":1: sa: missing 'cipher'"},
	{"sa in spi 300 local 10.64.9.1\n", ":1: sa: missing 'remote'"},
	{"sa out spi 300 " EP_A " cipher aes128-gcm16 key " K128 " port lan\n",
	 ":1: sa: port 'lan': no such port (sluice status lists them)"},
	{"sa out spi 300 " EP_A " cipher aes128-gcm16 key " K128
	 " eth-dst 02:00:00:00:00\n",
	 ":1: sa: eth-dst '02:00:00:00:00' is not a MAC address "
	 "(xx:xx:xx:xx:xx:xx)"},
	{SA_OK "\n# again\n" SA_OK "\n",
	 ":3: sa: out SPI 0x1001 is already defined on line 1"},
	{SA_OK "\npolicy src 10.64.1.0/33 sa 0x1001\n",
	 ":2: policy: src '10.64.1.0/33' is not a prefix (A.B.C.D/N, A.B.C.D, "
	 "X:Y::Z/N, X:Y::Z or any)"},
	{SA_OK "\npolicy src 2001:db8::/129 sa 0x1001\n",
	 ":2: policy: src '2001:db8::/129' is not a prefix"},
	{SA_OK "\npolicy dst 2001:db8::1/64 sa 0x1001\n",
	 ":2: policy: dst '2001:db8::1/64' has bits set after the prefix "
	 "length"},
	{SA_OK "\npolicy src 10.64.1.0/24 dst 2001:db8::/32 sa 0x1001\n",
	 ":2: policy: src and dst are of different address families"},
	{SA_OK "\npolicy dst 10.64.1.1/24 sa 0x1001\n",
	 ":2: policy: dst '10.64.1.1/24' has bits set after the prefix "
	 "length"},
	{SA_OK "\npolicy proto gre2 sa 0x1001\n",
	 ":2: policy: proto 'gre2': use tcp, udp, icmp, any or a number "
	 "0-255"},
	{SA_OK "\npolicy dport 80 sa 0x1001\n",
	 ":2: policy: unknown field 'dport' (expected src, dst, proto, sa)"},
	{SA_OK "\npolicy src any\n", ":2: policy: missing 'sa'"},
	{SA_OK "\npolicy sa\n", ":2: policy: 'sa' needs a value"},
	{SA_OK "\npolicy sa 0x1001 sa 0x1001\n", ":2: policy: 'sa' given "
						 "twice"},
	{SA_OK "\nsa out spi 0x1002 " EP_B " cipher aes128-gcm16 key " K128
	       "\n",
	 ":2: sa: the key and salt of the 'sa out' on line 1: their IVs would "
	 "repeat (AES-GCM needs a nonce used once per key)"},
	{"policy sa 0x2002\n" SA_OK "\n",
	 ":1: policy: sa 0x2002: no 'sa out' with that SPI"},
};

static void
test_file_errors(void **state)
{
	char want[VPN_ERR_LEN + 64];

	(void)state;
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		char *path = write_file(bad_files[i].text);

		snprintf(want, sizeof(want), PROG ": %s%s", path,
			 bad_files[i].msg);
		expect_init_error(PROG, want, "--sa", path, NULL);
		drop_file(path);
	}
	snprintf(want, sizeof(want),
		 PROG ": /nonexistent/sa.conf: cannot open: No such file or "
		      "directory\n");
	expect_init_error(PROG, want, "--sa", "/nonexistent/sa.conf", NULL);
}

/* Bounds: --max-sas and --max-policies, and the options' own checks. */
static void
test_limits(void **state)
{
	char *path = write_file(SA_OK "\nsa in spi 0x2001 " EP_A
				      " cipher aes128-gcm16 key " K128 "\n"
				      "policy sa 0x1001\npolicy sa 0x1001\n");
	char want[256];

	(void)state;
	snprintf(want, sizeof(want),
		 PROG ": %s:2: more than 1 SAs (--max-sas)\n", path);
	expect_init_error(PROG, want, "--sa", path, "--max-sas", "1", NULL);
	snprintf(want, sizeof(want),
		 PROG ": %s:4: more than 1 policies (--max-policies)\n", path);
	expect_init_error(PROG, want, "--sa", path, "--max-policies", "1",
			  NULL);
	expect_init_error(PROG, PROG ": missing --sa FILE\n", NULL);
	expect_init_error(PROG,
			  PROG ": --replay-window: '5000' is not a number "
			       "from 0 to 4096",
			  "--sa", path, "--replay-window", "5000", NULL);
	drop_file(path);
}

static void do_reload(void *arg);

/* An outbound SA reloaded with its key but other endpoints goes on
 * counting: no IV is used twice with one key. */
static void
test_reload_keeps_ivs(void **state)
{
	char *path = write_file(SA_OK "\npolicy sa 0x1001\n");
	struct rte_mbuf *m;
	const uint8_t *p;
	char *out;
	int rc;

	(void)state;
	free(init_with(&rc, "--sa", path, NULL));
	assert_int_equal(rc, 0);
	assert_int_equal(nf_pkt(plain_frame, sizeof(plain_frame), NULL),
			 SL_NEXT);
	rewrite_file(path,
		     "sa out spi 0x1005 local 10.64.9.1 remote 10.64.9.3 "
		     "cipher aes128-gcm16 key " K128 "\npolicy sa 0x1005\n");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, PROG ": 0 SAs kept their sequence numbers");
	free(out);
	assert_int_equal(nf_pkt(plain_frame, sizeof(plain_frame), &m), SL_NEXT);
	p = rte_pktmbuf_mtod(m, const uint8_t *);
	assert_int_equal(p[33], 3);                 /* the new remote */
	assert_int_equal(p[37], 0x05);              /* the new SPI */
	assert_int_equal(p[38] | p[39] | p[40], 0); /* sequence number 2 */
	assert_int_equal(p[41], 2);
	stub_mbuf_free(m);
	free(fini_output());
	drop_file(path);
}

/* --stats-ms: a counters line once the period is up, from tick; and one
 * on a "stats" message. */
static void
test_interval(void **state)
{
	char *path = write_file(SA_OK "\n");
	char *out;
	int rc;

	(void)state;
	stub_now_ns = 5000000000ull;
	free(init_with(&rc, "--sa", path, "--stats-ms", "1000", NULL));
	assert_int_equal(rc, 0);
	out = tick_output(5500000000ull);
	assert_string_equal(out, "");
	free(out);
	out = tick_output(6000000000ull);
	assert_has(out, "vpn-stats: reason=interval uptime=1.0 packets=0 ");
	assert_has(out, "vpn-sa: dir=out spi=0x1001 line=1 packets=0 bytes=0 "
			"seq=0\n");
	free(out);
	out = msg_output("stats", "");
	assert_has(out, "vpn-stats: reason=message ");
	free(out);
	out = msg_output("other", "");
	assert_string_equal(out, "");
	free(out);
	free(fini_output());
	drop_file(path);
}

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* A bad file keeps the SAs; a good one keeps unchanged SAs' state. */
static void
test_reload(void **state)
{
	char *path = write_file("sa in spi 0x1001 " EP_B
				" cipher aes128-gcm16 key " K128 "\n");
	char want[VPN_ERR_LEN];
	char *out;
	int rc;

	(void)state;
	free(init_with(&rc, "--sa", path, "--replay-window", "64", NULL));
	assert_int_equal(rc, 0);
	assert_int_equal(nf_pkt(kat128, sizeof(kat128), NULL), SL_NEXT);
	rewrite_file(path, "sa in spi 0x1001 " EP_B " cipher aes128-gcm16\n");
	out = stub_capture_stderr(do_reload, NULL);
	assert_has(out, "vpn-stats: reason=reload ");
	snprintf(want, sizeof(want),
		 PROG ": reload failed, keeping the 1 current SAs and 0 "
		      "policies: %s:1: sa: missing 'key'\n",
		 path);
	assert_has(out, want);
	free(out);
	assert_int_equal(nf_pkt(kat128, sizeof(kat128), NULL), SL_DROP);
	rewrite_file(path, "sa in spi 0x1001 " EP_B
			   " cipher aes128-gcm16 key " K128 "\n" SA_OK "\n");
	out = stub_capture_stderr(do_reload, NULL);
	snprintf(want, sizeof(want),
		 PROG ": reloaded 2 SAs (1 in, 1 out) and 0 policies from %s, "
		      "replay window 64, unprotected traffic passed\n",
		 path);
	assert_has(out, want);
	assert_has(out, PROG ": 1 SAs kept their sequence numbers and replay "
			     "windows\n");
	free(out);
	/* Still a replay: the window came along. */
	assert_int_equal(nf_pkt(kat128, sizeof(kat128), NULL), SL_DROP);
	out = fini_output();
	assert_has(out, " decrypted=1 ");
	assert_has(out, " replay=2 ");
	assert_has(out, "vpn-sa: dir=in spi=0x1001 line=1 packets=1 bytes=45 "
			"seq=1\n");
	assert_has(out, "vpn-sa: dir=out spi=0x1001 line=2 packets=0 bytes=0 "
			"seq=0\n");
	free(out);
	drop_file(path);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup(PROG, sl_vpn_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kat_encrypt),
		cmocka_unit_test(test_kat_esn),
		cmocka_unit_test(test_kat_ipv6),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_selector),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_seq_overflow),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_keeps_ivs),
	};

	return cmocka_run_group_tests_name("vpn", tests, setup, stub_teardown);
}
