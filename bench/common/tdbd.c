// SPDX-License-Identifier: GPL-2.0-only
/*
 * tdbd.c - the tdbd a benchmark starts (tdbd.h): finding the binary and
 * the first connection.  Shared by tdb-bench and tdb-bench-ycsb.
 */
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tdb/client.h>

#include "proc.h"
#include "tdbd.h"

static bool runnable(const char *p)
{
	return p && *p && !access(p, X_OK);
}

const char *bench_find_tdbd(const char *given, const char *built,
			    char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;

	if (given)
		return given;
	if (runnable(getenv("TDBD")))
		return getenv("TDBD");
	if (runnable(built))
		return built;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(buf, len, "%s/../../src/daemon/tdbd", dirname(self));
		if (runnable(buf))
			return buf;
	}
	return NULL;
}

int bench_tdbd_connect(pid_t *pid, const char *sock, const char *log,
		       struct tdbc **c, char *msg, size_t len)
{
	char why[512] = "";

	for (int i = 0; i < 2000; i++) {
		if (bench_exited(*pid, why, sizeof(why))) {
			*pid = 0;
			snprintf(msg, len, "tdbd %s", why);
			bench_log_tail(log, msg, len);
			return -1;
		}
		if (!tdbc_connect(c, sock, 0, why, sizeof(why)))
			return 0;
		usleep(10000);
	}
	snprintf(msg, len, "tdbd did not accept on %s in 20 s: %s", sock, why);
	bench_log_tail(log, msg, len);
	return -1;
}
