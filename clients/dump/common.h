/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * common.h - what tdb-dump and tdb-load share: exit codes, messages on
 * stderr, the options and operand both take, connecting to tdbd, and
 * the progress bar.
 *
 * Exit codes (both tools; scripts rely on them, both --help texts list
 * them):
 *   0  ok
 *   1  not found: no such table (-s); a table dropped while tdb-load
 *      loads it
 *   2  usage error: bad command line (nothing was done)
 *   4  permission denied by a table's owner and mode
 *   5  cannot connect to tdbd
 *   6  any other error: from tdbd (a snapshot that grew past
 *      max-snapshot-bytes, a full table...), reading or writing a file
 *   7  tdb-load: malformed input; the message names the file and line
 * Messages: "PROG: error text" on stderr; input errors
 * "PROG: FILE:LINE: error text"; warnings "PROG: ...: warning: ...".
 */
#ifndef TDB_DUMP_COMMON_H
#define TDB_DUMP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tdb/client.h>

enum {
	DX_OK = 0,
	DX_NOTFOUND = 1,
	DX_USAGE = 2,
	DX_PERM = 4,
	DX_CONNECT = 5,
	DX_OTHER = 6,
	DX_INPUT = 7,
};

extern const char *dx_prog;

void dx_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A table name (from a dump or tdbd: any bytes but NUL) for a message:
 * printable ASCII as is, '\\' doubled, any other byte as \xHH. */
#define DX_ESC_NAME (4 * TDB_NAME_MAX + 1)
const char *dx_esc(char out[DX_ESC_NAME], const char *name);
/* The exit code for a failure with this errno. */
int dx_exit_for(int err);
/* What the last failure on c was: the owner's message, else
 * tdbc_strerror(err) (never both: they would say it twice). */
const char *dx_why(struct tdbc *c, int err);
/* A usage error: "PROG: " fmt (with arg), a hint at --help, exit
 * DX_USAGE. */
void dx_usage_error(const char *fmt, const char *arg)
	__attribute__((noreturn));
/* The options both tools take: -q, -v, -S SOCKET, -R, -V, -h, and
 * getopt's complaints (':' missing argument, '?' unknown option: usage
 * errors).
 * Returns false for any other ch, which is the caller's. */
bool dx_common_opt(int ch, char **argv, const char *usage, bool *quiet,
		   const char **sock, bool *no_rings);
/* After the options: at most one SOCKET operand (not with -S), and a
 * table name from -s (table may be NULL) that can be one. */
void dx_operands(int argc, char **argv, const char **sock,
		 const char *table);
/* Connect (path NULL: $TDB_SOCKET or the default) or exit DX_CONNECT. */
struct tdbc *dx_connect(const char *path, bool no_rings);

/* -v, --verbose: the summary line even when stderr is not a terminal. */
extern bool dx_verbose;

/*
 * A progress bar on stderr, when stderr is a terminal (and the caller
 * says it may: not -q, not writing the dump to that terminal): the
 * table, the share done, the rate and the time left, in KiB/MiB/GiB and
 * s/min.  At the end dx_progress_summary() prints one line, "PROG: dumped
 * N records, X MiB in Y s (Z MiB/s)", when the bar was allowed or with
 * -v.  The caller counts records and bytes (keys and values) as they go.
 */
struct dx_progress {
	bool on, drawn, summary;
	uint64_t start_ns, last_ns;
	uint64_t seg_ns, seg_bytes;     /* the current table's start */
	uint64_t records, bytes;        /* so far, all tables */
};
void dx_progress_init(struct dx_progress *p, bool allowed);
/* A new table starts: rate and time left count from here. */
void dx_progress_begin(struct dx_progress *p);
/* At most ten redraws a second; total 0 = unknown.  unit "bytes": done
 * and total are bytes (shown as KiB...), else counts of unit. */
void dx_progress(struct dx_progress *p, const char *label, uint64_t done,
		 uint64_t total, const char *unit);
/* Erase it (before anything else is printed, and at the end). */
void dx_progress_clear(struct dx_progress *p);
/* The summary line (verb: "dumped", "loaded"; extra: NULL, or more to
 * say after it, e.g. "3 existing keys kept"). */
void dx_progress_summary(struct dx_progress *p, const char *verb,
			 const char *extra);

/* The formatting behind them (tests/dump/test_progress.c). */
/* 512 B, 1.50 KiB, 12.3 MiB, 512 MiB, 2.00 GiB (three digits). */
void dx_fmt_bytes(char *buf, size_t n, uint64_t bytes);
/* bytes over ns as dx_fmt_bytes per second: "4.10 MiB/s". */
void dx_fmt_rate(char *buf, size_t n, uint64_t bytes, uint64_t ns);
/* 0.4 s, 9.5 s, 42 s, 3 min 05 s, 2 h 07 min. */
void dx_fmt_duration(char *buf, size_t n, uint64_t ns);
/* One state of the bar, without the escape codes, at most n - 1 bytes;
 * bar: its width in characters (0: no bar).  bytes and ns: since the
 * table's start, for the rate; the time left is ns scaled by what is
 * left of total, once a tenth of a second has passed. */
void dx_progress_line(char *buf, size_t n, const char *label,
		      uint64_t done, uint64_t total, const char *unit,
		      uint64_t bytes, uint64_t ns, unsigned int bar);

#endif
