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
/* The options both tools take: -q, -S SOCKET, -R, -V, -h, and getopt's
 * complaints (':' missing argument, '?' unknown option: usage errors).
 * Returns false for any other ch, which is the caller's. */
bool dx_common_opt(int ch, char **argv, const char *usage, bool *quiet,
		   const char **sock, bool *no_rings);
/* After the options: at most one SOCKET operand (not with -S), and a
 * table name from -s (table may be NULL) that can be one. */
void dx_operands(int argc, char **argv, const char **sock,
		 const char *table);
/* Connect (path NULL: $TDB_SOCKET or the default) or exit DX_CONNECT. */
struct tdbc *dx_connect(const char *path, bool no_rings);

/* A progress bar on stderr, when stderr is a terminal (and the caller
 * says it may: not -q, not writing the dump to that terminal). */
struct dx_progress {
	bool on, drawn;
	uint64_t last_ns;
};
void dx_progress_init(struct dx_progress *p, bool allowed);
/* At most ten redraws a second; total 0 = unknown. */
void dx_progress(struct dx_progress *p, const char *label, uint64_t done,
		 uint64_t total, const char *unit);
/* Erase it (before anything else is printed, and at the end). */
void dx_progress_clear(struct dx_progress *p);

#endif
