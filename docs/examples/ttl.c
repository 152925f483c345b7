/* SPDX-License-Identifier: BSD-3-Clause */
/* The NF of docs/nf-guide.md (kept identical by tests/integration/test_nf_guide.py). */
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <sluice/nf.h>
#include <sluice/pkt.h>

/* Decrements the IPv4 TTL; drops packets whose TTL runs out. */
static sl_verdict_t
ttl_pkt(struct sl_nf *nf, struct rte_mbuf *m)
{
	struct sl_pkt_info info;
	struct rte_ipv4_hdr *ip;

	(void)nf;
	if (sl_pkt_parse(m, &info) != 0 ||
	    (ip = sl_pkt_ipv4(m, &info)) == NULL)
		return SL_NEXT; /* not (valid) IPv4: pass it on */
	if (ip->time_to_live <= 1)
		return SL_DROP; /* counted as an nf_verdict drop */
	ip->time_to_live--;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	return SL_NEXT;
}

static const struct sl_nf_ops ttl_ops = {
	.name = "ttl",
	.service = "ttl",
	.access = SL_ACCESS_READ | SL_ACCESS_WRITE,
	.process_pkt = ttl_pkt,
};

int
main(int argc, char **argv)
{
	return sl_nf_main(&ttl_ops, argc, argv);
}
