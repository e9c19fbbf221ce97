// SPDX-License-Identifier: GPL-2.0-only
/*
 * sigbus.c - surviving a client that takes memory away from its own rings.
 *
 * A client's rings live in memfds it can write, so it can punch holes in
 * them (fallocate): seals cannot forbid that on memory we must both
 * write.  Our next touch of such a page then needs a fresh page, and on
 * a hugetlb memfd with the pool empty the kernel answers with SIGBUS.
 * Like Wayland compositors with their clients' shm pools, we catch it:
 * if the address is in a guarded mapping, the whole mapping is replaced
 * by private anonymous zero pages (the access then completes harmlessly)
 * and the guard is marked hit; the client's worker sees that and drops
 * the client.  A SIGBUS anywhere else is a real bug: the default action
 * runs (core dump).
 *
 * The table of guards is the daemon's one piece of global state: a
 * signal handler has no other way to find it.  Slots are taken and
 * given back under a mutex; the handler only reads them, with atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sigbus.h"

struct guard {
	uintptr_t start, end;   /* 0, 0: free */
	int hit;
};

static struct guard *guards;
static unsigned int nguards, high;      /* high: slots ever used */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	unsigned int i, n = __atomic_load_n(&high, __ATOMIC_ACQUIRE);

	(void)uc;
	for (i = 0; i < n; i++) {
		struct guard *g = &guards[i];
		uintptr_t s = __atomic_load_n(&g->start, __ATOMIC_ACQUIRE);
		uintptr_t e = __atomic_load_n(&g->end, __ATOMIC_ACQUIRE);

		if (!s || a < s || a >= e)
			continue;
		if (mmap((void *)s, e - s, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		__atomic_store_n(&g->hit, 1, __ATOMIC_RELEASE);
		return;         /* the faulting access runs again, on zeros */
	}
	signal(sig, SIG_DFL);   /* ours: fault again and dump core */
}

int tdbd_sigbus_init(unsigned int slots)
{
	struct sigaction sa;

	guards = calloc(slots, sizeof(*guards));
	if (!guards)
		return -ENOMEM;
	nguards = slots;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

void tdbd_sigbus_fini(void)
{
	signal(SIGBUS, SIG_DFL);
	free(guards);
	guards = NULL;
	nguards = high = 0;
}

int tdbd_sigbus_guard(void *addr, size_t len)
{
	unsigned int i;

	pthread_mutex_lock(&guard_lock);
	for (i = 0; i < nguards; i++) {
		struct guard *g = &guards[i];

		if (g->start)
			continue;
		__atomic_store_n(&g->hit, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&g->end, (uintptr_t)addr + len,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&g->start, (uintptr_t)addr, __ATOMIC_RELEASE);
		if (i >= high)
			__atomic_store_n(&high, i + 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&guard_lock);
		return (int)i;
	}
	pthread_mutex_unlock(&guard_lock);
	return -ENOSPC;
}

void tdbd_sigbus_unguard(int slot)
{
	if (slot < 0 || (unsigned int)slot >= nguards)
		return;
	pthread_mutex_lock(&guard_lock);
	__atomic_store_n(&guards[slot].start, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&guards[slot].end, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&guard_lock);
}

bool tdbd_sigbus_hit(int slot)
{
	return slot >= 0 && (unsigned int)slot < nguards &&
	       __atomic_load_n(&guards[slot].hit, __ATOMIC_ACQUIRE);
}
