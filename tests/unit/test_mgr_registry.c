/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of sluiced's registry (src/mgr/registry/), linked from the
 * static library sluiced_mgr on a real EAL (mgr_env.h): services are
 * created once and found by name; an NF registers through the message
 * ring (a child process standing for it, which maps a file of the node's
 * runtime folder as every NF does); once it is killed and seen dead, the
 * reclaim frees every packet it held (its rx ring, its hand, loose ones
 * tagged with it), counts them as nf_lost, gives back the answer it never
 * returned, and frees its slot.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "pkt_build.h"
#include "mgr_env.h"
#include "registry/registry.h"

#define RX_PKTS 3    /* in the dead NF's rx ring */
#define LOOSE_PKTS 2 /* tagged with it, in no ring: in its hands */

static int
group_setup(void **state)
{
	(void)state;
	return env_eal_setup("mgr_registry");
}

/* What the fake node lacks for the registry: the message ring and pool,
 * edge counters, the retired rows, one packet pool; then its state. */
static void
registry_env(struct env *e)
{
	struct sl_shm *shm = e->shm;
	struct sl_mgr *m = e->m;

	snprintf(shm->node, sizeof(shm->node), "ut");
	shm->ring_size = 64;
	shm->msg_ring = rte_ring_create("sl_ut_reg_msgs", 64, SOCKET_ID_ANY,
					RING_F_SC_DEQ);
	shm->msg_pool = rte_mempool_create("sl_ut_reg_msgp", 63,
					   sizeof(struct sl_msg), 0, 0, NULL,
					   NULL, NULL, NULL, SOCKET_ID_ANY, 0);
	assert_non_null(shm->msg_ring);
	assert_non_null(shm->msg_pool);
	shm->edges = calloc((size_t)SL_EDGE_ROWS(shm) * SL_EDGE_COLS(shm),
			    sizeof(*shm->edges));
	m->edge_retired = calloc((size_t)MGR_SVCS * SL_EDGE_COLS(shm),
				 sizeof(*m->edge_retired));
	assert_non_null(shm->edges);
	assert_non_null(m->edge_retired);
	for (uint16_t s = 0; s < MGR_SVCS; s++) {
		shm->services[s].live = calloc(MGR_NFS, sizeof(uint16_t));
		assert_non_null(shm->services[s].live);
	}
	shm->pools[0] = g_env_pool;
	shm->n_pools = 1;
	assert_int_equal(mgr_registry_init(m), 0);
	assert_non_null(m->registry);
}

static void
registry_env_free(struct env *e)
{
	struct sl_shm *shm = e->shm;

	for (uint16_t i = 0; i < MGR_NFS; i++) {
		rte_ring_free(shm->nfs[i].rx);
		rte_ring_free(shm->nfs[i].tx);
		rte_ring_free(shm->nfs[i].inbox);
	}
	mgr_registry_close(e->m);
	assert_null(e->m->registry);
	for (uint16_t s = 0; s < MGR_SVCS; s++)
		free(shm->services[s].live);
	rte_ring_free(shm->msg_ring);
	rte_mempool_free(shm->msg_pool);
	free(shm->edges);
	free(e->m->edge_retired);
	env_free(e);
}

/* Services: created once, then found by name; not created on lookup. */
static void
test_service(void **state)
{
	struct env *e = env_new(64, 10000);
	char err[128] = "";
	int id, got;

	(void)state;
	registry_env(e);
	assert_int_equal(mgr_service_get(e->m, "a", 1, &id, err, sizeof(err)),
			 0);
	assert_int_equal(id, 0);
	assert_int_equal(mgr_service_get(e->m, "c", 0, &id, err, sizeof(err)),
			 ENOENT);
	assert_int_equal(mgr_service_get(e->m, "c", 1, &id, err, sizeof(err)),
			 0);
	assert_int_equal(id, 2);
	assert_true(e->shm->services[id].used);
	assert_string_equal(e->shm->services[id].name, "c");
	assert_int_equal(e->shm->services[id].n_live, 0);
	assert_int_equal(mgr_service_get(e->m, "c", 0, &got, err, sizeof(err)),
			 0);
	assert_int_equal(got, id);
	mgr_service_release(e->m, (uint16_t)id);
	assert_int_equal(mgr_service_get(e->m, "c", 0, &got, err, sizeof(err)),
			 ENOENT);
	registry_env_free(e);
}

/* A child standing for an NF: it maps a file of the node's runtime
 * folder (as an NF maps the node's config), says so, and waits. */
static pid_t
fake_nf(const char *path)
{
	int pipefd[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR | O_CREAT, 0600);
		void *p = MAP_FAILED;

		/* gone with the test, whatever becomes of it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0 && ftruncate(fd, 4096) == 0)
			p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		c = p != MAP_FAILED ? 1 : 2;
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);
	assert_int_equal(c, 1);
	return pid;
}

/* Registers pid as service "c" through the message ring; the answer. */
static struct sl_msg *
register_nf(struct env *e, pid_t pid)
{
	struct sl_msg *msg;

	assert_int_equal(rte_mempool_get(e->shm->msg_pool, (void **)&msg), 0);
	memset(msg, 0, sizeof(*msg));
	msg->type = SL_MSG_REGISTER;
	msg->pid = (int32_t)pid;
	msg->mode = SL_MODE_SHARED;
	msg->instance = SL_INSTANCE_NONE;
	snprintf(msg->service_name, sizeof(msg->service_name), "c");
	snprintf(msg->prog, sizeof(msg->prog), "ut-nf");
	assert_int_equal(rte_ring_enqueue(e->shm->msg_ring, msg), 0);
	mgr_registry_poll(e->m);
	assert_int_equal(__atomic_load_n(&msg->done, __ATOMIC_ACQUIRE), 1);
	return msg;
}

static void
test_register_die_reclaim(void **state)
{
	struct env *e = env_new(64, 10000);
	struct sl_shm *shm = e->shm;
	struct rte_mbuf *p[RX_PKTS + LOOSE_PKTS + 1];
	unsigned int avail;
	char path[PATH_MAX + 16];
	struct sl_nf_slot *s;
	struct sl_msg *msg;
	uint16_t inst, svc, tag;
	uint32_t n_msgs;
	int got;
	pid_t pid;
	int k;

	(void)state;
	registry_env(e);
	snprintf(path, sizeof(path), "%s/ut_nf_map", g_env_runtime_dir);
	pid = fake_nf(path);
	msg = register_nf(e, pid);
	assert_int_equal(msg->result, 0);
	inst = msg->instance;
	svc = msg->service;
	/* slot 0 is the fake node's running NF; "a" and "b" are used */
	assert_int_equal(inst, 1);
	assert_int_equal(svc, 2);
	s = &shm->nfs[inst];
	assert_int_equal(s->state, SL_NF_RUNNING);
	assert_int_equal(s->pid, pid);
	assert_int_equal(s->service, svc);
	assert_non_null(s->rx);
	assert_non_null(s->tx);
	assert_non_null(s->inbox);
	assert_int_equal(shm->nf_hwm, 2);
	assert_int_equal(shm->services[svc].n_live, 1);
	assert_int_equal(shm->services[svc].live[0], inst);
	assert_int_equal(mgr_service_get(e->m, "c", 0, &got, NULL, 0), 0);
	assert_int_equal(got, svc);
	assert_true(e->m->registry->pidfd[inst] >= 0);
	/* A second registration of the same process is refused. */
	n_msgs = (uint32_t)e->m->msgs_refused;
	{
		struct sl_msg *again = register_nf(e, pid);

		assert_int_equal(again->result, EBUSY);
		assert_int_equal(e->m->msgs_refused, n_msgs + 1);
		sl_msg_put(shm, again);
	}

	/* What it holds: packets in its rx ring, one taken into its hand
	 * (not tagged yet), and loose ones tagged with it. */
	avail = rte_mempool_avail_count(g_env_pool);
	tag = (uint16_t)(inst + 1);
	for (k = 0; k < RX_PKTS + LOOSE_PKTS + 1; k++) {
		p[k] = env_udp(IP4(10, 0, 0, 1), (uint16_t)(4000 + k),
			       IP4(10, 0, 0, 2), 80);
		env_meta(p[k])->owner = k < RX_PKTS + LOOSE_PKTS ? tag : 0;
	}
	assert_int_equal(rte_ring_enqueue_bulk(s->rx, (void **)p, RX_PKTS,
					       NULL),
			 RX_PKTS);
	s->hand[0] = p[RX_PKTS + LOOSE_PKTS];

	/* It dies: out of its service at once, its slot freed later. */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	unlink(path);
	mgr_nf_died(e->m, inst);
	assert_int_equal(s->state, SL_NF_DEAD);
	assert_int_equal(shm->services[svc].n_live, 0);
	assert_int_equal(e->m->registry->pidfd[inst], -1);
	assert_non_null(e->m->qs.head);
	for (k = 0; k < 20 && s->state != SL_NF_FREE; k++) {
		env_grace_pass(e);
		mgr_registry_poll(e->m);
	}
	assert_int_equal(s->state, SL_NF_FREE);
	assert_null(e->m->qs.head);
	assert_int_equal(s->mgr.drop[SL_DROP_NF_LOST],
			 RX_PKTS + LOOSE_PKTS + 1);
	assert_int_equal(rte_ring_count(s->rx), 0);
	assert_null(s->hand[0]);
	assert_int_equal(rte_mempool_avail_count(g_env_pool), avail);
	/* Its registration's answer, never returned, is given back. */
	assert_int_equal(e->m->msgs_reclaimed, 1);
	assert_int_equal(msg->type, SL_MSG_FREE);
	assert_int_equal(rte_mempool_avail_count(shm->msg_pool),
			 shm->msg_pool->size);
	/* Its counters went to its service's retired row. */
	assert_int_equal(e->m->svc_retired[svc].drop[SL_DROP_NF_LOST],
			 RX_PKTS + LOOSE_PKTS + 1);
	registry_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service),
		cmocka_unit_test(test_register_die_reclaim),
	};

	return cmocka_run_group_tests(tests, group_setup, env_eal_teardown);
}
