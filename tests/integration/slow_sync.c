// SPDX-License-Identifier: GPL-2.0-only
/*
 * slow_sync.c - an LD_PRELOAD shim for the integration tests: a slow
 * disk.  fdatasync(2) sleeps $TDB_TEST_SYNC_DELAY_MS milliseconds before
 * it does its work, so that a test can keep tdbd's answers waiting for
 * the disk (sync always) as long as it needs (test_fairness: the cap on
 * answers held per client).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int fdatasync(int fd)
{
	static int (*real)(int);
	const char *s = getenv("TDB_TEST_SYNC_DELAY_MS");
	long ms = s ? atol(s) : 0;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	if (ms > 0) {
		struct timespec ts = { .tv_sec = ms / 1000,
				       .tv_nsec = (ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return real ? real(fd) : -1;
}
