/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * notify.h - tdbd's log lines and its messages to systemd (notify.c):
 * the level filter, one rate limiter per kind of line a client can
 * cause, the escaping of what clients supplied, sd_notify.  Every part
 * of tdbd logs through these (serving, durability, kernel mode); they
 * need nothing of struct tdbd.
 *
 * Invariant: a byte a client (or an old checkpoint or WAL) supplied
 * reaches a log line only through ESC() (tdb_escape, tdb/proto.h), and
 * a line a client can provoke only through tdbd_log_rl().
 */
#ifndef TDBD_NOTIFY_H
#define TDBD_NOTIFY_H

#include "core.h"               /* TDBE_NAME_MAX */

enum { L_ERR = 3, L_WARNING = 4, L_NOTICE = 5, L_INFO = 6, L_DEBUG = 7 };
void tdbd_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tdbd_log_set_level(int level);
/*
 * Log lines a client can cause go through a rate limiter per kind (as
 * the kernel's printk_ratelimit): a burst of TDBD_RL_BURST lines, then
 * none until TDBD_RL_INTERVAL_MS has passed since the burst began; the
 * next line of that kind (or tdbd_log_rl_flush(), from main's tick)
 * first says how many were suppressed.  A flood of hostile clients thus
 * costs a few lines per interval, not one per attempt.
 */
enum tdbd_rl {
	RL_CLIENT,              /* a client came, or went and why */
	RL_VIOLATION,           /* protocol and ring violations */
	RL_REFUSED,             /* connections refused (max-clients, creds) */
	RL_ACCEPT,              /* accept() failing (EMFILE, ENFILE, ...) */
	RL_RINGS,               /* rings or feeds that cannot be made */
	RL_TABLES,              /* tables created and dropped, feeds, scans */
	RL_WAL,                 /* the WAL failing */
	RL_NKINDS
};
#define TDBD_RL_BURST        10u
#define TDBD_RL_INTERVAL_MS  5000u
void tdbd_log_rl(enum tdbd_rl kind, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Say how many lines were suppressed in intervals that are over. */
void tdbd_log_rl_flush(void);
/* sd_notify(), if NOTIFY_SOCKET is set; formatted. */
void tdbd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Escaping for log lines.  Whatever a client (or a checkpoint or WAL
 * from before names were restricted) supplied goes into a log line only
 * through these: printable ASCII as is, '\' as "\\", every other byte
 * as "\xHH", so a line never holds a newline, a terminal escape (C0, DEL,
 * C1) or bytes that are not UTF-8, and the bytes can be read back.
 * tdb_escape() (tdb/proto.h) is the rule, shared with the dump tools.
 */
/* A NUL-terminated string escaped whole (a table name: 4 * 64 + 1). */
struct tdbd_escaped {
	char s[4 * TDBE_NAME_MAX + 1];
};
struct tdbd_escaped tdbd_esc_name(const char *name);
/* Use: tdbd_log(L_INFO, "table %s ...", ESC(dt->name)); the temporary
 * lives until the end of the full expression (C11 6.2.4). */
#define ESC(name) (tdbd_esc_name(name).s)

/* libc's text for an errno (either sign) with its first letter in lower
 * case, as tdb's other texts: "cannot allocate memory" (a word's capital
 * only: "I/O"-like acronyms stay).  Use: ERRSTR(errno), a temporary as
 * ESC's, so a line may hold several and threads do not share it. */
struct tdbd_errtext {
	char s[128];
};
struct tdbd_errtext tdbd_errtext(int err);
#define ERRSTR(err) (tdbd_errtext(err).s)

#endif
