/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice-firewall driven through its ops (nfs/firewall/firewall.c) with the
 * libsluice stand-in of nf_stub.c: verdicts, counters as printed, reload
 * (built in the background, swapped at a tick or a burst),
 * arguments, malformed packets, and rte_acl against the linear reference
 * matcher on random rule sets and packets.
 */
#undef main /* meson.build renames firewall.c's main to sl_fw_main */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "sluice/nf.h"
#include "sluice/pkt.h"

#include "nf_stub.h"
#include "nf_test.h"
#include "pkt_build.h"
#include "rules.h"

int sl_fw_main(int argc, char **argv);

#define MAX_ARGS 16
/* init with the given arguments (NULL-terminated); returns its stderr. */
#define init_with(rc, ...) stub_init_output(rc, "sluice-firewall", __VA_ARGS__)

#define write_file(suffix, text) nf_test_write_file("sl_fw_test_", suffix, text)

#define rewrite_file nf_test_rewrite_file

static void
do_reload(void *arg)
{
	(void)arg;
	stub_ops->reload(stub_nf());
}

/* Runs frames through ops->process in one burst; returns verdicts. */
static void
run_frames(struct frame *f, unsigned n, sl_verdict_t *v)
{
	struct rte_mbuf *m[64];
	unsigned i;

	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		m[i] = stub_mbuf(f[i].b, f[i].len);
		assert_non_null(m[i]);
	}
	stub_ops->process(stub_nf(), m, (uint16_t)n);
	for (i = 0; i < n; i++) {
		assert_true(stub_verdict_set(m[i]));
		v[i] = sl_pkt_verdict(m[i]);
		stub_mbuf_free(m[i]);
	}
}

static const char basic_rules[] =
	"default: allow\n"
	"rules:\n"
	"  - {name: quarantine, action: deny, src: 10.0.1.0/24}\n"
	"  - {name: no-dns, action: deny, proto: udp, src: 10.0.128.0/17,"
	" dport: 53}\n"
	"  - {name: web, action: allow, proto: tcp, dport: 80}\n"
	"  - {action: deny, proto: tcp}\n"
	"  - {name: v6-block, action: deny, src: '2001:db8::/32'}\n";

static const uint8_t v6_other[16] = {0x20, 0x01, 0x0d, 0xb9, 0, 0, 0, 0,
				     0,    0,    0,    0,    0, 0, 0, 9};

/* Frames of the basic test, and what each must get. */
static unsigned
basic_frames(struct frame *f, sl_verdict_t *expect, int non_ip_deny)
{
	unsigned n = 0;

	frame_ip4(&f[n], IPPROTO_TCP, IP4(10, 0, 1, 5), 1000,
		  IP4(192, 168, 0, 1), 80, 0);
	expect[n++] = SL_DROP; /* rule 1 */
	frame_ip4(&f[n], IPPROTO_TCP, IP4(10, 0, 2, 5), 1000,
		  IP4(192, 168, 0, 1), 80, 10);
	expect[n++] = SL_NEXT; /* rule 3 */
	frame_ip4(&f[n], IPPROTO_TCP, IP4(10, 0, 2, 5), 1000,
		  IP4(192, 168, 0, 1), 22, 0);
	expect[n++] = SL_DROP; /* rule 4 */
	frame_ip4(&f[n], IPPROTO_UDP, IP4(10, 0, 200, 1), 999,
		  IP4(192, 168, 0, 1), 53, 4);
	expect[n++] = SL_DROP; /* rule 2 */
	frame_ip4(&f[n], IPPROTO_UDP, IP4(10, 0, 2, 1), 999,
		  IP4(192, 168, 0, 1), 53, 4);
	expect[n++] = SL_NEXT; /* default */
	frame_ip6(&f[n], IPPROTO_UDP, v6_a, 1, v6_b, 2, 0);
	expect[n++] = SL_DROP; /* rule 5 */
	frame_ip6(&f[n], IPPROTO_TCP, v6_other, 5000, v6_b, 80, 0);
	expect[n++] = SL_NEXT; /* rule 3: no address, both families */
	frame_ip6(&f[n], IPPROTO_TCP, v6_other, 5000, v6_b, 22, 0);
	expect[n++] = SL_DROP; /* rule 4 */
	memset(&f[n], 0, sizeof(f[n]));
	put_eth(&f[n], 0x0806, 0, NULL);
	put_zero(&f[n], 28);
	expect[n++] = non_ip_deny ? SL_DROP : SL_NEXT; /* non-IP */
	frame_ip4(&f[n], IPPROTO_TCP, 1, 2, 3, 4, 0);
	f[n].len = 20;
	expect[n++] = non_ip_deny ? SL_DROP : SL_NEXT; /* malformed */
	return n;
}

static void
check_basic(const char *matcher, int non_ip_deny)
{
	struct frame f[16];
	sl_verdict_t expect[16], v[16];
	char *path = write_file(".yaml", basic_rules);
	char *out, line[256];
	unsigned n, i;
	int rc;

	n = basic_frames(f, expect, non_ip_deny);
	out = init_with(&rc, "--rules", path, "--matcher", matcher, "--non-ip",
			non_ip_deny ? "deny" : "allow", NULL);
	assert_int_equal(rc, 0);
	snprintf(line, sizeof(line),
		 "sluice-firewall: loaded 5 rules from %s, default allow, "
		 "non-IP %s, matcher %s\n",
		 path, non_ip_deny ? "deny" : "allow", matcher);
	assert_has(out, line);
	assert_has(out, "sluice-firewall:   rule 2 (no-dns): deny proto udp "
			"src 10.0.128.0/17 dport 53\n");
	assert_has(out, "sluice-firewall:   rule 4: deny proto tcp\n");
	free(out);

	/* Twice: counters add up across bursts. */
	run_frames(f, n, v);
	for (i = 0; i < n; i++)
		if (v[i] != expect[i])
			fail_msg("%s: frame %u: verdict %#x, expected %#x",
				 matcher, i, v[i], expect[i]);
	run_frames(f, n, v);

	out = fini_output();
	snprintf(line, sizeof(line),
		 "fw-counters: reason=exit file=%s rules=5 matcher=%s\n", path,
		 matcher);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=1 name=quarantine action=deny packets=2 "
		 "bytes=%u\n",
		 2 * f[0].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=2 name=no-dns action=deny packets=2 "
		 "bytes=%u\n",
		 2 * f[3].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=3 name=web action=allow packets=4 "
		 "bytes=%u\n",
		 2 * (f[1].len + f[6].len));
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=4 name=- action=deny packets=4 bytes=%u\n",
		 2 * (f[2].len + f[7].len));
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=5 name=v6-block action=deny packets=2 "
		 "bytes=%u\n",
		 2 * f[5].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=default name=- action=allow packets=2 "
		 "bytes=%u\n",
		 2 * f[4].len);
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=non-ip name=- action=%s packets=2 "
		 "bytes=84\n",
		 non_ip_deny ? "deny" : "allow");
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=malformed name=- action=%s packets=2 "
		 "bytes=40\n",
		 non_ip_deny ? "deny" : "allow");
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counters: end packets=20 allowed=%u denied=%u\n",
		 non_ip_deny ? 6 : 10, non_ip_deny ? 14 : 10);
	assert_has(out, line);
	free(out);
	unlink(path);
	free(path);
}

static void
test_basic_acl(void **state)
{
	(void)state;
	check_basic("acl", 0);
	check_basic("acl", 1);
}

static void
test_basic_linear(void **state)
{
	(void)state;
	check_basic("linear", 0);
	check_basic("linear", 1);
}

static void
test_args(void **state)
{
	char *path = write_file(".yaml", basic_rules);
	char *bad = write_file(".yaml",
			       "rules:\n  - {action: allow}\n"
			       "  - {action: allow}\n"
			       "  - {action: deny, dst: 10.0.0.0/33}\n");
	char *out, line[512];
	int rc;

	(void)state;
	out = init_with(&rc, NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-firewall: missing --rules FILE\n");
	free(out);
	out = init_with(&rc, "--rules", path, "--bogus", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "unrecognized option '--bogus'");
	assert_has(out, "usage: sluice-firewall");
	free(out);
	out = init_with(&rc, "--rules", path, "extra", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-firewall: unexpected argument 'extra'\n");
	free(out);
	out = init_with(&rc, "--rules", path, "--non-ip", "maybe", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-firewall: --non-ip: 'maybe' is not allow or "
			"deny\n");
	free(out);
	out = init_with(&rc, "--rules", path, "--matcher", "tree", NULL);
	assert_int_equal(rc, EINVAL);
	assert_has(out, "sluice-firewall: --matcher: 'tree' is not acl or "
			"linear\n");
	free(out);
	out = init_with(&rc, "--rules", "/nonexistent/fw.yaml", NULL);
	assert_int_equal(rc, ENOENT);
	assert_has(out, "sluice-firewall: /nonexistent/fw.yaml: cannot open: "
			"No such file or directory\n");
	free(out);
	out = init_with(&rc, "--rules", bad, NULL);
	assert_int_equal(rc, EINVAL);
	snprintf(line, sizeof(line),
		 "sluice-firewall: %s: rule 3: 'dst': '10.0.0.0/33' is not a "
		 "valid prefix\n",
		 bad);
	assert_has(out, line);
	free(out);
	assert_null(sl_nf_priv(stub_nf()));
	unlink(path);
	unlink(bad);
	free(path);
	free(bad);
}

static void
do_tick(void *arg)
{
	(void)arg;
	stub_ops->tick(stub_nf(), stub_now_ns);
}

/*
 * The reload runs in a thread of its own; the NF takes its outcome at a
 * tick or at the start of a burst. Ticks until that happens (at most 10 s)
 * and returns what the NF printed then.
 */
static char *
tick_until_reloaded(void)
{
	char *out;
	int i;

	for (i = 0; i < 10000; i++) {
		out = stub_capture_stderr(do_tick, NULL);
		assert_non_null(out);
		if (out[0] != '\0')
			return out;
		free(out);
		usleep(1000);
	}
	fail_msg("the firewall's reload thread did not finish within 10 s");
	return NULL;
}

/* The rule file becomes a FIFO: the reload thread waits in fopen() or
 * fread() until the test writes the rules with fifo_write(). */
static void
make_fifo(const char *path)
{
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
}

static void
fifo_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY); /* waits for the reader */
	size_t len = strlen(text);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void
expect_started(const char *out, const char *path, unsigned n_rules)
{
	char line[512];

	snprintf(line, sizeof(line),
		 "sluice-firewall: reloading %s in the background; packets go "
		 "on through the %u current rules until it is built\n",
		 path, n_rules);
	assert_string_equal(out, line);
}

struct burst_call {
	struct frame *f;
	sl_verdict_t v[2];
};

static void
do_burst(void *arg)
{
	struct burst_call *c = arg;

	run_frames(c->f, 2, c->v);
}

static void
reload_bad_file(char *path, struct frame *f)
{
	sl_verdict_t v[2];
	char *out, line[1024];

	/* A bad file: the reload starts in the background, then the
	 * counters are printed, the error named, the old rules kept. */
	rewrite_file(path, "{\"rules\": [{\"action\": \"deny\", \"proto\": "
			   "\"tcp\", \"dport\": 99999}]}");
	out = stub_capture_stderr(do_reload, NULL);
	expect_started(out, path, 1);
	free(out);
	out = tick_until_reloaded();
	assert_has(out, "fw-counters: reason=reload");
	assert_has(out, "fw-counter: rule=1 name=- action=deny packets=1 "
			"bytes=54\n");
	snprintf(line, sizeof(line),
		 "sluice-firewall: reload failed, keeping the 1 current "
		 "rules: %s: rule 1: 'dport': 99999 is not a valid port or "
		 "port range (0-65535, 'LO-HI' or 'any')\n",
		 path);
	assert_has(out, line);
	assert_null(strstr(out, "reloaded"));
	free(out);
	run_frames(f, 2, v);
	assert_int_equal(v[0], SL_DROP);
	assert_int_equal(v[1], SL_NEXT);
}

/* A reload from a FIFO that a SIGHUP interrupts: the old rules judge
 * until the swap, which prints their counters, and another reload
 * starts. The new rules: default deny, allow tcp dport 22. */
static void
reload_from_fifo(char *path, struct frame *f)
{
	sl_verdict_t v[2];
	char *out, line[1024];
	unsigned k;

	/* A good file that the reload thread waits for: packets go on
	 * through the old rules meanwhile, and a tick takes nothing. */
	make_fifo(path);
	out = stub_capture_stderr(do_reload, NULL);
	expect_started(out, path, 1);
	free(out);
	for (k = 0; k < 2; k++) {
		run_frames(f, 2, v);
		assert_int_equal(v[0], SL_DROP);
		assert_int_equal(v[1], SL_NEXT);
	}
	out = stub_capture_stderr(do_tick, NULL);
	assert_string_equal(out, "");
	free(out);
	/* SIGHUP during the build: another reload once it ends. */
	out = stub_capture_stderr(do_reload, NULL);
	snprintf(line, sizeof(line),
		 "sluice-firewall: SIGHUP during a reload: %s will be read "
		 "again once the current build ends\n",
		 path);
	assert_string_equal(out, line);
	free(out);
	fifo_write(path, "{\"default\": \"deny\", \"rules\": [{\"action\": "
			 "\"allow\", \"name\": \"ssh\", \"proto\": \"tcp\", "
			 "\"dport\": 22}]}");
	/* At the swap: the old counters with every packet the old rules
	 * judged, the new rules, and the reload asked for meanwhile. */
	out = tick_until_reloaded();
	snprintf(line, sizeof(line),
		 "fw-counters: reason=reload file=%s rules=1 matcher=acl\n"
		 "fw-counter: rule=1 name=- action=deny packets=4 "
		 "bytes=216\n"
		 "fw-counter: rule=default name=- action=allow packets=4 "
		 "bytes=216\n"
		 "fw-counter: rule=non-ip name=- action=allow packets=0 "
		 "bytes=0\n"
		 "fw-counter: rule=malformed name=- action=allow packets=0 "
		 "bytes=0\n"
		 "fw-counters: end packets=8 allowed=4 denied=4\n"
		 "sluice-firewall: reloaded 1 rules from %s, default deny, "
		 "non-IP allow, matcher acl\n"
		 "sluice-firewall:   rule 1 (ssh): allow proto tcp dport 22\n",
		 path, path);
	if (strncmp(out, line, strlen(line)) != 0)
		fail_msg("expected:\n%s\nat the start of:\n%s", line, out);
	expect_started(out + strlen(line), path, 1);
	free(out);
}

/* The reload SIGHUP asked for during the last one: the burst that finds
 * its build done is judged by its rules (deny tcp dport 22). */
static void
reload_swap_in_burst(char *path, struct frame *f)
{
	struct burst_call c;
	sl_verdict_t v[2];
	char *out, line[1024];
	unsigned k;

	/* The second reload waits for its file too: the new rules judge. */
	run_frames(f, 2, v);
	assert_int_equal(v[0], SL_NEXT);
	assert_int_equal(v[1], SL_DROP);
	fifo_write(path, "{\"rules\": [{\"action\": \"deny\", \"name\": "
			 "\"ssh-off\", \"proto\": \"tcp\", \"dport\": 22}]}");
	/* Bursts go through the rules in force until one finds the build
	 * done: that one is judged by the newest rules, after the swap. */
	c.f = f;
	for (k = 0; k < 10000; k++) {
		out = stub_capture_stderr(do_burst, &c);
		if (out[0] != '\0')
			break;
		free(out);
		assert_int_equal(c.v[0], SL_NEXT);
		assert_int_equal(c.v[1], SL_DROP);
		usleep(1000);
	}
	assert_true(k < 10000);
	assert_int_equal(c.v[0], SL_DROP);
	assert_int_equal(c.v[1], SL_NEXT);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=1 name=ssh action=allow packets=%u "
		 "bytes=%u\n",
		 1 + k, 54 * (1 + k));
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "fw-counter: rule=default name=- action=deny packets=%u "
		 "bytes=%u\n",
		 1 + k, 54 * (1 + k));
	assert_has(out, line);
	snprintf(line, sizeof(line),
		 "sluice-firewall: reloaded 1 rules from %s, default allow, "
		 "non-IP allow, matcher acl\n",
		 path);
	assert_has(out, line);
	free(out);
}

static void
test_reload(void **state)
{
	char *path = write_file(".json",
				"{\"rules\": [{\"action\": \"deny\", "
				"\"proto\": \"tcp\", \"dport\": 22}]}");
	struct frame f[2];
	sl_verdict_t v[2];
	char *out;
	int rc;

	(void)state;
	frame_ip4(&f[0], IPPROTO_TCP, IP4(10, 0, 0, 1), 5000,
		  IP4(192, 168, 0, 1), 22, 0);
	frame_ip4(&f[1], IPPROTO_TCP, IP4(10, 0, 0, 1), 5000,
		  IP4(192, 168, 0, 1), 80, 0);
	out = init_with(&rc, "--rules", path, NULL);
	assert_int_equal(rc, 0);
	free(out);
	run_frames(f, 2, v);
	assert_int_equal(v[0], SL_DROP);
	assert_int_equal(v[1], SL_NEXT);

	reload_bad_file(path, f);
	reload_from_fifo(path, f);
	reload_swap_in_burst(path, f);

	out = fini_output();
	assert_has(out, "fw-counter: rule=1 name=ssh-off action=deny packets=1 "
			"bytes=54\n");
	assert_has(out, "fw-counter: rule=default name=- action=allow "
			"packets=1 bytes=54\n");
	assert_has(out, "fw-counters: end packets=2 allowed=1 denied=1\n");
	assert_null(strstr(out, "reason=reload"));
	free(out);
	unlink(path);
	free(path);
}

/*
 * Writes rules into the FIFO that fini's builder reads, but only once
 * fini has said (on fd 2, the captured stderr) that it waits for it.
 */
struct late_writer {
	const char *path;
	int saw; /* the line was there */
};

static void *
late_writer_main(void *arg)
{
	static const char wait_line[] = "exiting during a reload";
	struct late_writer *w = arg;
	int fd = open(w->path, O_WRONLY); /* the builder has opened it */
	char buf[4096];
	ssize_t n;
	int i;

	if (fd < 0)
		return NULL;
	for (i = 0; i < 10000 && !w->saw; i++) {
		n = pread(STDERR_FILENO, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = '\0';
			w->saw = strstr(buf, wait_line) != NULL;
		}
		if (!w->saw)
			usleep(1000);
	}
	n = write(fd, "{\"rules\": []}", 13);
	(void)n;
	close(fd);
	return NULL;
}

/* fini during a build waits for the builder and frees its table (LSan
 * in the ASan build checks that nothing is left). */
static void
test_reload_fini_during_build(void **state)
{
	char *path = write_file(".json",
				"{\"rules\": [{\"action\": \"deny\", "
				"\"proto\": \"tcp\", \"dport\": 22}]}");
	struct late_writer w = {.saw = 0};
	pthread_t writer;
	struct frame f[2];
	sl_verdict_t v[2];
	char *out, line[512];
	int rc;

	(void)state;
	frame_ip4(&f[0], IPPROTO_TCP, IP4(10, 0, 0, 1), 5000,
		  IP4(192, 168, 0, 1), 22, 0);
	frame_ip4(&f[1], IPPROTO_TCP, IP4(10, 0, 0, 1), 5000,
		  IP4(192, 168, 0, 1), 80, 0);
	out = init_with(&rc, "--rules", path, NULL);
	assert_int_equal(rc, 0);
	free(out);
	make_fifo(path);
	out = stub_capture_stderr(do_reload, NULL);
	expect_started(out, path, 1);
	free(out);
	run_frames(f, 2, v);
	assert_int_equal(v[0], SL_DROP);
	assert_int_equal(v[1], SL_NEXT);
	w.path = path;
	assert_int_equal(pthread_create(&writer, NULL, late_writer_main, &w),
			 0);
	out = fini_output();
	assert_int_equal(pthread_join(writer, NULL), 0);
	assert_true(w.saw);
	snprintf(line, sizeof(line),
		 "sluice-firewall: exiting during a reload: waiting for the "
		 "build of %s to end; its rules are not used\n"
		 "fw-counters: reason=exit file=%s rules=1 matcher=acl\n"
		 "fw-counter: rule=1 name=- action=deny packets=1 bytes=54\n",
		 path, path);
	assert_has(out, line);
	assert_has(out, "fw-counters: end packets=2 allowed=1 denied=1\n");
	assert_null(strstr(out, "reloaded"));
	free(out);
	assert_null(sl_nf_priv(stub_nf()));
	unlink(path);
	free(path);
}

/* Every truncation of some frames goes through without a crash. */
static void
test_malformed(void **state)
{
	char *path = write_file(".yaml", basic_rules);
	struct rte_mbuf *m[256];
	sl_verdict_t expect[256];
	struct frame f;
	uint32_t len, n = 0, i;
	char *out;
	int rc;

	(void)state;
	out = init_with(&rc, "--rules", path, NULL);
	assert_int_equal(rc, 0);
	free(out);
	/* Dropped by a rule once the headers are whole (54 and 62 bytes);
	 * shorter ones are malformed, and --non-ip allow (the default) lets
	 * them through. */
	frame_ip4(&f, IPPROTO_TCP, IP4(10, 0, 1, 5), 1, IP4(1, 2, 3, 4), 2, 8);
	assert_int_equal(f.len, 62);
	for (len = 0; len <= f.len; len++) {
		expect[n] = len >= 54 ? SL_DROP : SL_NEXT;
		m[n++] = stub_mbuf(f.b, len);
	}
	frame_ip6(&f, IPPROTO_UDP, v6_a, 1, v6_b, 2, 8);
	assert_int_equal(f.len, 70);
	for (len = 0; len <= f.len; len++) {
		expect[n] = len >= 62 ? SL_DROP : SL_NEXT;
		m[n++] = stub_mbuf(f.b, len);
	}
	assert_int_equal(n, 63 + 71);
	stub_ops->process(stub_nf(), m, (uint16_t)n);
	for (i = 0; i < n; i++) {
		assert_true(stub_verdict_set(m[i]));
		if (sl_pkt_verdict(m[i]) != expect[i])
			fail_msg("frame %u (%u bytes): verdict %#x, want %#x",
				 i, i < 63 ? i : i - 63,
				 (unsigned)sl_pkt_verdict(m[i]),
				 (unsigned)expect[i]);
		stub_mbuf_free(m[i]);
	}
	out = fini_output();
	/* 63 + 71 frames; those with complete headers (54..62 and 62..70
	 * bytes) match rules 1 and 5, all shorter ones are malformed. */
	assert_has(out, "fw-counter: rule=1 name=quarantine action=deny "
			"packets=9 ");
	assert_has(out, "fw-counter: rule=5 name=v6-block action=deny "
			"packets=9 ");
	assert_has(out, "fw-counter: rule=malformed name=- action=allow "
			"packets=116 ");
	assert_has(out, "fw-counter: rule=non-ip name=- action=allow "
			"packets=0 ");
	assert_has(out, "fw-counters: end packets=134 allowed=116 "
			"denied=18\n");
	free(out);
	unlink(path);
	free(path);
}

static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Addresses come from small pools so that rules and packets meet. */
static uint32_t
rand_v4(void)
{
	static const uint32_t bases[] = {IP4(10, 0, 0, 0), IP4(10, 0, 128, 0),
					 IP4(192, 168, 0, 0),
					 IP4(172, 16, 0, 0)};

	return bases[rng() % 4] | (uint32_t)(rng() & 0x1ff);
}

static void
rand_v6(uint8_t *a)
{
	memcpy(a, v6_a, 16);
	a[4] = (uint8_t)(rng() % 3);
	a[7] = (uint8_t)(rng() % 2);
	a[14] = (uint8_t)(rng() % 4);
	a[15] = (uint8_t)rng();
}

static uint16_t
rand_port(void)
{
	static const uint16_t common[] = {22, 53, 80, 443, 1024, 8080};

	return rng() % 3 ? common[rng() % 6] : (uint16_t)rng();
}

static int
put_prefix(char *buf, size_t size, unsigned family)
{
	char a[INET6_ADDRSTRLEN];
	unsigned len;

	if (family == 4) {
		static const unsigned lens[] = {0, 8, 16, 23, 24, 27, 32};
		uint32_t x, mask;

		len = lens[rng() % 7];
		mask = len ? ~0u << (32 - len) : 0;
		x = htonl(rand_v4() & mask);
		inet_ntop(AF_INET, &x, a, sizeof(a));
	} else {
		static const unsigned lens[] = {0,  32,  37,  48, 63,
						64, 100, 127, 128};
		uint8_t x[16];
		unsigned i;

		len = lens[rng() % 9];
		rand_v6(x);
		for (i = 0; i < 16; i++) {
			unsigned bits = len > 8 * i ? len - 8 * i : 0;

			if (bits < 8)
				x[i] &= (uint8_t)(0xff00 >> bits);
		}
		inet_ntop(AF_INET6, x, a, sizeof(a));
	}
	return snprintf(buf, size, "\"%s/%u\"", a, len);
}

/* A random rule set in JSON. */
static char *
random_rules(unsigned n)
{
	static const char *const protos[] = {"\"any\"", "\"tcp\"",
					     "\"udp\"", "\"icmp\"",
					     "47",      "\"icmp6\""};
	size_t size = 256 + (size_t)n * 256, off = 0;
	char *text = malloc(size);
	unsigned i;

	assert_non_null(text);
	off += (size_t)snprintf(text + off, size - off,
				"{\"default\": \"%s\", \"rules\": [\n",
				rng() % 2 ? "allow" : "deny");
	for (i = 0; i < n; i++) {
		unsigned family = (unsigned)(rng() % 10);
		unsigned p = (unsigned)(rng() % 6);
		char pre[80];

		family = family < 4 ? 4 : family < 7 ? 6 : 0;
		off += (size_t)snprintf(text + off, size - off,
					"%s{\"action\": \"%s\"", i ? ",\n" : "",
					rng() % 2 ? "allow" : "deny");
		if (rng() % 3)
			off += (size_t)snprintf(text + off, size - off,
						", \"proto\": %s", protos[p]);
		else
			p = 0;
		if (family && rng() % 2) {
			put_prefix(pre, sizeof(pre), family);
			off += (size_t)snprintf(text + off, size - off,
						", \"src\": %s", pre);
		}
		if (family && rng() % 2) {
			put_prefix(pre, sizeof(pre), family);
			off += (size_t)snprintf(text + off, size - off,
						", \"dst\": %s", pre);
		}
		if (p <= 2 && rng() % 2) {
			uint16_t a = rand_port(), b = rand_port();

			off += (size_t)snprintf(text + off, size - off,
						", \"sport\": \"%u-%u\"",
						a < b ? a : b, a < b ? b : a);
		}
		if (p <= 2 && rng() % 2) {
			uint16_t a = rand_port(), b = rand_port();

			if (rng() % 2)
				b = a;
			off += (size_t)snprintf(text + off, size - off,
						", \"dport\": \"%u-%u\"",
						a < b ? a : b, a < b ? b : a);
		}
		off += (size_t)snprintf(text + off, size - off, "}");
		assert_true(off < size);
	}
	snprintf(text + off, size - off, "\n]}\n");
	return text;
}

static void
random_frame(struct frame *f)
{
	static const uint8_t protos[] = {IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP,
					 47};
	uint8_t proto = protos[rng() % 4];
	uint32_t payload = (uint32_t)(rng() % 64);

	if (rng() % 10 < 6) {
		frame_ip4(f, proto, rand_v4(), rand_port(), rand_v4(),
			  rand_port(), payload);
	} else {
		uint8_t s[16], d[16];

		rand_v6(s);
		rand_v6(d);
		if (proto == IPPROTO_ICMP)
			proto = IPPROTO_ICMPV6;
		frame_ip6(f, proto, s, rand_port(), d, rand_port(), payload);
	}
	if (proto == 47)
		f->b[f->b[12] == 0x08 ? 23 : 20] = 47; /* GRE, no ports */
}

/*
 * Random rule sets and packets: the NF's verdicts and printed counters
 * must equal what the reference linear matcher says, for both matchers.
 */
static void
check_random(unsigned seed, unsigned n_rules, unsigned n_pkts)
{
	static const char *const matchers[] = {"acl", "linear"};
	char *text, *path, *out, line[256], err[512];
	struct fw_ruleset *rs = NULL;
	struct frame *frames;
	uint64_t *expect;
	unsigned k, i;

	rng_state = 0x9e3779b97f4a7c15ull * (seed + 1);
	text = random_rules(n_rules);
	path = write_file(".json", text);
	free(text);
	if (fw_rules_load(path, &rs, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	frames = calloc(n_pkts, sizeof(*frames));
	expect = calloc(n_rules + 1, sizeof(*expect));
	assert_non_null(frames);
	assert_non_null(expect);
	for (i = 0; i < n_pkts; i++) {
		struct sl_5tuple t;
		int m;

		random_frame(&frames[i]);
		assert_int_equal(sl_5tuple_get(frames[i].b, frames[i].len, &t),
				 0);
		m = fw_rules_match(rs, &t);
		expect[m < 0 ? n_rules : (unsigned)m]++;
	}

	for (k = 0; k < 2; k++) {
		int rc;

		out = init_with(&rc, "--rules", path, "--matcher", matchers[k],
				NULL);
		assert_int_equal(rc, 0);
		snprintf(line, sizeof(line), "matcher %s\n", matchers[k]);
		assert_has(out, line);
		free(out);
		for (i = 0; i < n_pkts;) {
			struct rte_mbuf *m[150];
			unsigned n = 1 + (unsigned)(rng() % 150), j;

			if (n > n_pkts - i)
				n = n_pkts - i;
			for (j = 0; j < n; j++)
				m[j] = stub_mbuf(frames[i + j].b,
						 frames[i + j].len);
			stub_ops->process(stub_nf(), m, (uint16_t)n);
			for (j = 0; j < n; j++) {
				struct sl_5tuple t;
				int r, deny;

				sl_5tuple_get(frames[i + j].b,
					      frames[i + j].len, &t);
				r = fw_rules_match(rs, &t);
				deny = (r < 0 ? rs->default_action
					      : rs->rules[r].action) == FW_DENY;
				if (sl_pkt_verdict(m[j]) !=
				    (deny ? SL_DROP : SL_NEXT))
					fail_msg("seed %u %s packet %u: rule "
						 "%d, verdict %#x",
						 seed, matchers[k], i + j, r,
						 sl_pkt_verdict(m[j]));
				stub_mbuf_free(m[j]);
			}
			i += n;
		}
		out = fini_output();
		for (i = 0; i < n_rules; i++) {
			snprintf(line, sizeof(line),
				 "fw-counter: rule=%u name=- action=%s "
				 "packets=%" PRIu64 " ",
				 i + 1, fw_action_name(rs->rules[i].action),
				 expect[i]);
			assert_has(out, line);
		}
		snprintf(line, sizeof(line),
			 "fw-counter: rule=default name=- action=%s "
			 "packets=%" PRIu64 " ",
			 fw_action_name(rs->default_action), expect[n_rules]);
		assert_has(out, line);
		free(out);
	}
	fw_rules_free(rs);
	free(frames);
	free(expect);
	unlink(path);
	free(path);
}

static void
test_acl_vs_linear(void **state)
{
	unsigned seed;

	(void)state;
	for (seed = 0; seed < 6; seed++)
		check_random(seed, 1 + seed * 40, 3000);
	check_random(99, 2000, 5000);
}

static int
setup(void **state)
{
	(void)state;
	return stub_setup("sluice-firewall", sl_fw_main);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_acl),
		cmocka_unit_test(test_basic_linear),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_reload_fini_during_build),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_acl_vs_linear),
	};

	return cmocka_run_group_tests_name("firewall", tests, setup,
					   stub_teardown);
}
