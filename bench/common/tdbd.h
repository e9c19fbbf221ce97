/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tdbd.h - the tdbd a benchmark starts: which binary (the one asked for,
 * $TDBD, the build tree's) and the first connection once it listens.
 * Messages go into msg (len bytes); nothing here prints or exits.
 */
#ifndef TDB_BENCH_TDBD_H
#define TDB_BENCH_TDBD_H

#include <stddef.h>
#include <sys/types.h>

struct tdbc;

/* The tdbd to run: given (an option) if set, else $TDBD if runnable,
 * else built (the build tree's path, compiled in; may be NULL), else
 * up from this program's directory (<build>/X/Y/prog and
 * <build>/src/daemon/tdbd), written into buf.  NULL if none runs. */
const char *bench_find_tdbd(const char *given, const char *built,
			    char *buf, size_t len);
/* Connect to sock while the tdbd *pid (spawned, logging to log) runs:
 * retried for 20 s.  0, or -1 with msg saying why (its log's end); a
 * tdbd that ended is reaped and *pid set to 0. */
int bench_tdbd_connect(pid_t *pid, const char *sock, const char *log,
		       struct tdbc **c, char *msg, size_t len);

#endif
