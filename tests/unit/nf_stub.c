/* SPDX-License-Identifier: BSD-3-Clause */
/* libsluice stand-in for NF unit tests: see nf_stub.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "nf_stub.h"
#include "../../src/nflib/sl_nf_opts.h"

#define STUB_MAX_ARGS 32
#define STUB_VERDICT_SET 0x5e7u

const struct sl_nf_ops *stub_ops;
uint64_t stub_now_ns;
unsigned int stub_eal_mem_mb = 128;
static void *stub_priv;
static void *stub_own_priv; /* ops->priv_size bytes, as libsluice makes */
static int stub_fake_nf;

int
sl_nf_main(const struct sl_nf_ops *ops, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	stub_ops = ops;
	return 0;
}

struct sl_nf *
stub_nf(void)
{
	return (struct sl_nf *)&stub_fake_nf;
}

void *
sl_nf_priv(const struct sl_nf *nf)
{
	(void)nf;
	return stub_priv;
}

void
sl_nf_set_priv(struct sl_nf *nf, void *priv)
{
	(void)nf;
	stub_priv = priv;
}

/* No ports or services here unless a test defines these (a test of an
 * NF that looks them up has its own, which win over these weak ones). */
__attribute__((weak)) int
sl_port_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	(void)name;
	return -1;
}

__attribute__((weak)) int
sl_service_id(const struct sl_nf *nf, const char *name)
{
	(void)nf;
	(void)name;
	return -1;
}

/* Never waits: the test's services are known or not. */
__attribute__((weak)) int
sl_service_id_wait(const struct sl_nf *nf, const char *name,
		   unsigned int timeout_ms)
{
	(void)timeout_ms;
	return sl_service_id(nf, name);
}

/* What libsluice does before init: a fresh private context of
 * ops->priv_size bytes with the option table's values in it, then init. */
static int
stub_call_init(int argc, char **argv)
{
	int rc = 0;

	free(stub_own_priv);
	stub_own_priv = NULL;
	if (stub_ops->priv_size > 0) {
		stub_own_priv = calloc(1, stub_ops->priv_size);
		if (stub_own_priv == NULL)
			return ENOMEM;
		stub_priv = stub_own_priv;
	}
	if (stub_ops->opts != NULL && nfo_check(stub_ops, argv[0]) != 0)
		rc = EINVAL;
	if (rc == 0 && stub_ops->opts != NULL)
		rc = nfo_parse(stub_nf(), stub_ops, argc, argv);
	if (rc == 0 && stub_ops->init != NULL)
		rc = stub_ops->init(stub_nf(), argc, argv);
	if (rc != 0 && stub_own_priv != NULL) { /* as libsluice: gone */
		free(stub_own_priv);
		stub_own_priv = NULL;
		stub_priv = NULL;
	}
	return rc;
}

uint16_t
sl_nf_instance(const struct sl_nf *nf)
{
	(void)nf;
	return 0;
}

uint16_t
sl_nf_service(const struct sl_nf *nf)
{
	(void)nf;
	return 0;
}

uint64_t
sl_now_ns(void)
{
	return stub_now_ns;
}

/* The verdict lives in the mbuf's dynamic field area, as in libsluice. */
void
sl_pkt_set_verdict(struct rte_mbuf *m, sl_verdict_t v)
{
	m->dynfield1[0] = v;
	m->dynfield1[1] = STUB_VERDICT_SET;
}

sl_verdict_t
sl_pkt_verdict(const struct rte_mbuf *m)
{
	return m->dynfield1[0];
}

int
stub_verdict_set(const struct rte_mbuf *m)
{
	return m->dynfield1[1] == STUB_VERDICT_SET;
}

/* EAL leaves an empty runtime directory even without shared config. */
static void
stub_rmdir_runtime(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	if (strstr(dir, "sl_unit_") != NULL)
		rmdir(dir);
}

int
stub_eal_init(void)
{
	static int done;
	static int rc;
	char prefix[64], mem[16];
	char *argv[] = {
		"unit-test",
		"--no-huge",
		"--no-pci",
		"--no-shconf",
		"--no-telemetry",
		"-l",
		"0",
		"-m",
		mem,
		"--log-level=error",
		prefix,
		NULL,
	};

	if (done)
		return rc;
	done = 1;
	snprintf(mem, sizeof(mem), "%u", stub_eal_mem_mb);
	snprintf(prefix, sizeof(prefix), "--file-prefix=sl_unit_%d",
		 (int)getpid());
	rc = rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
	if (rc < 0) {
		rc = -rte_errno;
		stub_rmdir_runtime();
		return rc;
	}
	rc = 0;
	return rc;
}

void
stub_eal_cleanup(void)
{
	rte_eal_cleanup();
	stub_rmdir_runtime();
}

int
stub_setup(const char *prog, int (*nf_main)(int argc, char **argv))
{
	char *argv[] = {(char *)(uintptr_t)prog, NULL};
	int rc = stub_eal_init();

	if (rc != 0) {
		fprintf(stderr, "EAL init failed: %s\n", strerror(-rc));
		return -1;
	}
	rc = nf_main(1, argv);
	if (rc != 0) {
		fprintf(stderr, "%s: main returned %d\n", prog, rc);
		return -1;
	}
	return stub_ops == NULL ? -1 : 0;
}

int
stub_teardown(void **state)
{
	(void)state;
	stub_eal_cleanup();
	return 0;
}

struct rte_mbuf *
stub_mbuf(const void *frame, uint32_t len)
{
	struct rte_mbuf *m =
		aligned_alloc(RTE_CACHE_LINE_SIZE,
			      RTE_ALIGN(sizeof(*m), RTE_CACHE_LINE_SIZE));
	uint8_t *data = malloc(len); /* malloc(0): ASan flags any read */

	if (m == NULL || data == NULL) {
		free(m);
		free(data);
		return NULL;
	}
	memset(m, 0, sizeof(*m));
	memcpy(data, frame, len);
	m->buf_addr = data;
	m->data_off = 0;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->nb_segs = 1;
	return m;
}

void
stub_mbuf_free(struct rte_mbuf *m)
{
	if (m == NULL)
		return;
	free(m->buf_addr);
	free(m);
}

int
stub_init(const char *arg, ...)
{
	char *argv[STUB_MAX_ARGS + 2];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)(uintptr_t) "prog";
	va_start(ap, arg);
	while (arg != NULL && argc < STUB_MAX_ARGS) {
		argv[argc++] = (char *)(uintptr_t)arg;
		arg = va_arg(ap, const char *);
	}
	va_end(ap);
	argv[argc] = NULL;
	return stub_call_init(argc, argv);
}

char *
stub_capture_stderr(void (*fn)(void *), void *arg)
{
	FILE *tmp = tmpfile();
	char *out;
	long size;
	int saved;

	if (tmp == NULL)
		return NULL;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fileno(tmp), STDERR_FILENO);
	fn(arg);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	size = (long)lseek(fileno(tmp), 0, SEEK_END);
	if (size < 0)
		size = 0;
	out = calloc(1, (size_t)size + 1);
	if (out != NULL && size > 0 &&
	    pread(fileno(tmp), out, (size_t)size, 0) != size)
		out[0] = '\0';
	fclose(tmp);
	return out;
}

struct init_call {
	char *argv[STUB_MAX_ARGS + 2];
	int argc;
	int rc;
};

static void
do_init(void *arg)
{
	struct init_call *c = arg;

	c->rc = stub_call_init(c->argc, c->argv);
}

char *
stub_init_output(int *rc, const char *prog, ...)
{
	struct init_call c = {.argc = 0};
	const char *a;
	va_list ap;
	char *out;

	c.argv[c.argc++] = (char *)(uintptr_t)prog;
	va_start(ap, prog);
	while ((a = va_arg(ap, const char *)) != NULL && c.argc < STUB_MAX_ARGS)
		c.argv[c.argc++] = (char *)(uintptr_t)a;
	va_end(ap);
	c.argv[c.argc] = NULL;
	out = stub_capture_stderr(do_init, &c);
	*rc = c.rc;
	return out;
}

static void
do_fini(void *arg)
{
	(void)arg;
	if (stub_ops->fini != NULL)
		stub_ops->fini(stub_nf());
	if (stub_own_priv != NULL && stub_priv == stub_own_priv)
		stub_priv = NULL;
	free(stub_own_priv);
	stub_own_priv = NULL;
}

char *
stub_fini_output(void)
{
	return stub_capture_stderr(do_fini, NULL);
}
