/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proc.h - the servers a benchmark starts, for every benchmark program:
 * spawn one with its output in a log file (it dies with the benchmark),
 * see whether it ended and how, stop it, quote its log's last lines in
 * a message, its CPU time.  Messages are written into msg (len bytes);
 * nothing here prints or exits.
 */
#ifndef TDB_BENCH_PROC_H
#define TDB_BENCH_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Fork/exec argv with stdout+stderr to logpath; the child dies with us
 * (PR_SET_PDEATHSIG).  The pid, or -1 (msg says why). */
pid_t bench_spawn(const char *const argv[], const char *logpath, char *msg,
		  size_t len);
/* Has the server exited?  Reaps it; fills msg with how it ended. */
bool bench_exited(pid_t pid, char *msg, size_t len);
/* SIGTERM, wait up to 5 s, then SIGKILL; the exit status (or 128+sig);
 * 0 for pid <= 0. */
int bench_stop_server(pid_t pid);
/* The last lines of a log file appended to msg (for a failed start). */
void bench_log_tail(const char *path, char *msg, size_t len);
/* utime + stime of a process in seconds, -1 if unknown. */
double bench_proc_cpu(pid_t pid);

#endif
