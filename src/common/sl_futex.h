/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sleeping and waking on a 32-bit word in shared memory (shared mode).
 * Shared futexes (no FUTEX_PRIVATE_FLAG): waiter and waker are different
 * processes mapping the same hugepage.
 */
#ifndef SL_FUTEX_H
#define SL_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word == val, at most timeout_ns. */
static inline void
sl_futex_wait(uint32_t *word, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / 1000000000ull),
		.tv_nsec = (long)(timeout_ns % 1000000000ull),
	};
	syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* Wakes every sleeper on word after bumping it. */
static inline void
sl_futex_wake(uint32_t *word)
{
	__atomic_fetch_add(word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

#endif /* SL_FUTEX_H */
