// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - tdb-bench-ycsb's helpers (driver.h): the clock, messages, and
 * the servers a peer starts (spawn, stop, logs, CPU time).  Nothing here
 * knows a peer.
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "../common/proc.h"

const char *ycsb_tdbd_path;

double ycsb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ycsb_msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, YCSB_MSG, fmt, ap);
	va_end(ap);
}

/* The servers a peer starts: bench/common/proc.c, YCSB_MSG-byte messages. */
pid_t ycsb_spawn(const char *const argv[], const char *logpath, char *msg)
{
	return bench_spawn(argv, logpath, msg, YCSB_MSG);
}

bool ycsb_exited(pid_t pid, char *msg)
{
	return bench_exited(pid, msg, YCSB_MSG);
}

int ycsb_stop_server(pid_t pid)
{
	return bench_stop_server(pid);
}

void ycsb_log_tail(const char *path, char *msg)
{
	bench_log_tail(path, msg, YCSB_MSG);
}

double ycsb_proc_cpu(pid_t pid)
{
	return bench_proc_cpu(pid);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

int ycsb_rm_tree(const char *path)
{
	if (access(path, F_OK))
		return 0;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}
