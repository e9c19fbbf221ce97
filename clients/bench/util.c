// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - tdb-bench's helpers: clock, values, servers it starts (spawn,
 * stop, logs, CPU time), $PATH lookup.  Nothing here knows a peer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "../../bench/common/proc.h"

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_LEN, fmt, ap);
	va_end(ap);
}

void value_make(uint8_t *v, uint32_t i, uint32_t gen)
{
	uint64_t w[2] = { i, gen };

	memcpy(v, w, sizeof(w));
	memset(v + sizeof(w), 0xa5 ^ (int)(gen & 0xff),
	       opt.vsize - sizeof(w));
}

int value_check(uint32_t i, const void *v, size_t vlen, char *msg)
{
	uint64_t w = UINT64_MAX;

	if (vlen >= sizeof(w))
		memcpy(&w, v, sizeof(w));
	if (__builtin_expect(vlen == opt.vsize && w == i, 1))
		return 0;
	msgf(msg, "wrong value for key %" PRIu32 ": %zu bytes, index %"
	     PRIu64 " (expected %" PRIu32 " bytes, index %" PRIu32 ")", i,
	     vlen, w, opt.vsize, i);
	return -1;
}

/* --- servers (bench/common/proc.c) ------------------------------------- */
pid_t spawn(const char *const argv[], const char *logpath, char *msg)
{
	return bench_spawn(argv, logpath, msg, MSG_LEN);
}

bool exited(pid_t pid, char *msg)
{
	return bench_exited(pid, msg, MSG_LEN);
}

int stop_server(pid_t pid)
{
	return bench_stop_server(pid);
}

void log_tail(const char *path, char *msg, size_t len)
{
	bench_log_tail(path, msg, len);
}

double proc_cpu(pid_t pid)
{
	return bench_proc_cpu(pid);
}

const char *find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/usr/bin",
		 path && *path ? path : "/usr/local/bin");
	for (char *s = NULL, *d = strtok_r(dirs, ":", &s); d;
	     d = strtok_r(NULL, ":", &s)) {
		struct stat st;

		if ((size_t)snprintf(buf, len, "%s/%s", *d ? d : ".", name) >=
		    len)
			continue;
		if (!stat(buf, &st) && S_ISREG(st.st_mode) &&
		    !access(buf, X_OK))
			return buf;
	}
	return NULL;
}
