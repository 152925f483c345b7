/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The net_pcap port class: a port that replays a capture (rx_pcap) or
 * writes one (tx_pcap).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "sluiced.h"

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
 * The probe_args hook: rewrites device into out; ps->pcap_dir gets the
 * folder ("" if nothing was rewritten) and ps->pcap_tx_links a bit per
 * link that is a tx_pcap file. Returns 0, or a positive errno with err set.
 */
#define PCAP_ARGS_MAX 63 /* ETH_PCAP_ARG_MAXLEN - 1 */

static int
pcap_private(struct sl_port_state *ps, const char *pname, const char *device,
	     char *out, size_t outlen, char *err, size_t errlen)
{
	static const char *const keys[] = {"rx_pcap=", "tx_pcap="};
	char *dir = ps->pcap_dir;
	const size_t dirlen = sizeof(ps->pcap_dir);
	uint64_t *tx_links = &ps->pcap_tx_links;
	const char *p = device;
	const char *args;
	size_t o = 0;
	unsigned int n = 0;

	dir[0] = '\0';
	*tx_links = 0;
	if (strstr(device, keys[0]) == NULL && strstr(device, keys[1]) == NULL)
		goto check;
	snprintf(dir, dirlen, "/tmp/sl-%d-XXXXXX", (int)getpid());
	if (mkdtemp(dir) == NULL) {
		int e = errno;

		snprintf(err, errlen,
			 "port '%s': cannot create a private folder for its "
			 "capture (%s): %s; check that /tmp is writable",
			 pname, dir, strerror(e));
		dir[0] = '\0';
		return e;
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
					     getcwd(cwd, sizeof(cwd)) ? cwd
								      : ".",
					     (int)vlen, v);
			if (w < 0 || (size_t)w >= sizeof(target))
				goto too_long;
			/* Said here, with the user's path: the PMD's own
			 * message names the private link. */
			if (key == keys[0] && access(target, R_OK) != 0) {
				snprintf(
					err, errlen,
					"port '%s': rx_pcap file '%s' cannot "
					"be read: %s; give an existing capture "
					"(a relative path starts at sluiced's "
					"working directory)",
					pname, target, strerror(errno));
				return ENOENT;
			}
			if (key == keys[1] && n < 64)
				*tx_links |= UINT64_C(1) << n;
			snprintf(link, sizeof(link), "%s/%u.pcap", dir, n++);
			if (symlink(target, link) != 0) {
				snprintf(err, errlen,
					 "port '%s': cannot link %s to %s: %s",
					 pname, link, target, strerror(errno));
				return EIO;
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
		return E2BIG;
	}
	if (device != out)
		snprintf(out, outlen, "%s", device);
	return 0;
too_long:
	snprintf(err, errlen, "port '%s': device string '%s' is too long",
		 pname, device);
	return ENAMETOOLONG;
}

/* The started hook: sluiced has the port's files open, so its tx_pcap
 * links now lead to /dev/null, for the NFs' probes (see pcap_private). */
static void
pcap_private_settle(const struct sl_mgr *m, struct sl_port_state *ps)
{
	const char *dir = ps->pcap_dir;
	uint64_t tx_links = ps->pcap_tx_links;
	char link[PATH_MAX + 32];

	for (unsigned int n = 0; n < 64; n++) {
		if (!(tx_links & (UINT64_C(1) << n)))
			continue;
		snprintf(link, sizeof(link), "%s/%u.pcap", dir, n);
		if (unlink(link) != 0 || symlink("/dev/null", link) != 0)
			mgr_log(m,
				"cannot point %s at /dev/null: %s; NFs' probes "
				"of the port will fail and say so in their "
				"logs",
				link, strerror(errno));
	}
}

/* Removes a folder pcap_private made ("": none). */
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

		if (sscanf(e->d_name, "sl-%d-%*6[A-Za-z0-9]%n", &pid, &end) !=
			    1 ||
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

/* The closed hook: the port's private folder goes (its device is closed,
 * the capture written). */
static void
pcap_closed(struct sl_port_state *ps)
{
	pcap_private_remove(ps->pcap_dir);
	ps->pcap_dir[0] = '\0';
}

/* The tx_queues hook: NFs cannot open a port's capture (pcap_private), so
 * a port writing one has sluiced's queue alone. */
static uint16_t
pcap_tx_queues(const char *device, uint16_t n)
{
	return strstr(device, "tx_pcap=") != NULL ? 1 : n;
}

static const char *const pcap_drivers[] = {"net_pcap", "eth_pcap", NULL};

const struct sl_port_class mgr_port_class_pcap = {
	.drivers = pcap_drivers,
	.numbered = 1,
	.sweep = pcap_private_sweep,
	.probe_args = pcap_private,
	.tx_queues = pcap_tx_queues,
	.started = pcap_private_settle,
	.closed = pcap_closed,
};
