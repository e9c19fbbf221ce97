/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * harness.h - what every tdbd integration test shares: a scratch
 * directory, starting and stopping a real tdbd (fork/exec of $TDBD),
 * reading its log, waiting for its counters, failing loudly, and a raw
 * protocol client (a socket and tdb_proto_*, no libtdbclient) for tests
 * that must send what the library never would.
 *
 * Rules the helpers keep:
 *  - Every tdbd a test starts is killed if the test fails, times out or
 *    is killed itself (PR_SET_PDEATHSIG in the child, and h_fail() kills
 *    every process registered with h_track()).
 *  - A test ends with h_stop(): SIGTERM, tdbd must exit 0 within the
 *    stop budget (under ASan a leak makes the exit code non-zero), and
 *    its log must hold no "ERROR", sanitizer report or "tdbd: error:".
 *  - CHECK() in a forked child only ends that child (_exit(1)); the
 *    parent sees the status.  In the test's own process it fails the test.
 *  - Work is scaled by TDB_ITEST_SCALE (default 1.0; the ASan build runs
 *    with less) through h_scaled().
 */
#ifndef TDB_ITEST_HARNESS_H
#define TDB_ITEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tdb/client.h>

#include "proto.h"

#define H_PATH 256

struct h_daemon {
	pid_t pid;              /* 0 once reaped */
	int status;             /* waitpid status after reaping */
	char sock[108];         /* --socket */
	char data[H_PATH];      /* --data-dir */
	char log[H_PATH];       /* tdbd's stdout and stderr */
};

/* --- the test ----------------------------------------------------------- */

/* Start a test: remember the main pid, make the scratch directory, arm a
 * watchdog of `budget_s` seconds (scaled for sanitizers by the caller). */
void h_init(const char *name, unsigned int budget_s);
/* The scratch directory (removed by h_done() when the test passed). */
const char *h_dir(void);
/* h_dir()/name into out. */
void h_path(char *out, size_t size, const char *name);
/* Remove the scratch directory; print "<name>: passed". */
void h_done(void);
/* The tdbd program: $TDBD. */
const char *h_tdbd(void);
/* n * TDB_ITEST_SCALE, at least 1 (at least `min` when min > 0). */
long h_scaled(long n, long min);
/*
 * Is this daemon bug still open (relax the check that found it)?  True
 * when `name` is in $TDB_ITEST_KNOWN_BUGS (comma-separated; meson.build
 * lists the open ones) and TDB_ITEST_STRICT is not 1.  A test keeps the
 * check behind this, with a comment naming the bug, until it is fixed;
 * then the name leaves the list and the check is strict again.
 */
bool h_known_bug(const char *name);
/* Run the part of a test named so?  (TDB_ITEST_ONLY=name runs only
 * that part, when debugging by hand.) */
bool h_want(const char *part);
/* Is this the ASan/UBSan build (TDB_ITEST_SANITIZED=1)? */
bool h_sanitized(void);
uint64_t h_now_ms(void);
/* Entries of /proc/<pid>/<dir> ("fd": descriptors, "task": threads);
 * 0 if the process is gone. */
unsigned int h_proc_count(pid_t pid, const char *dir);
void h_sleep_ms(unsigned int ms);

/* Kill pid (SIGKILL) if the test fails; h_untrack when it is reaped. */
void h_track(pid_t pid);
void h_untrack(pid_t pid);
/* In a forked child: drop to uid (its gid the same, no supplementary
 * groups) and die with the parent; fails the test if it cannot. */
void h_become(uid_t uid);

__attribute__((noreturn, format(printf, 4, 5)))
void h_fail(const char *file, int line, const char *cond, const char *fmt,
	    ...);
#define CHECK(cond, ...) do {                                           \
		if (!(cond))                                            \
			h_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)
/* An int expression that must equal want (errnos: print both). */
#define CHECK_EQ(expr, want, what) do {                                 \
		long long h_v_ = (long long)(expr);                     \
		long long h_w_ = (long long)(want);                     \
		if (h_v_ != h_w_)                                       \
			h_fail(__FILE__, __LINE__, #expr, "%s: got %lld " \
			       "(%s), want %lld (%s)", what, h_v_,       \
			       h_errname((int)h_v_), h_w_,                \
			       h_errname((int)h_w_));                     \
	} while (0)
/* "EACCES" for -EACCES (or a number). */
const char *h_errname(int err);
void h_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- the daemon ---------------------------------------------------------- */

/*
 * Start tdbd on <dir>/<tag>.sock with --data-dir <dir>/<tag>.data, the
 * log in <dir>/<tag>.log, and the extra args (NULL-terminated, may be
 * NULL).  Waits until the socket accepts a connection; fails the test if
 * tdbd exits first or takes over 20 s.
 */
void h_start(struct h_daemon *d, const char *tag, const char *const *args);
/* The same with extra environment (as h_spawn takes it). */
void h_start_env(struct h_daemon *d, const char *tag,
		 const char *const *args, const char *const *env);
/* The arguments h_start gives before the caller's: --config <empty
 * file> --socket d->sock --data-dir d->data (and sets those and d->log
 * from tag); NULL-terminated in argv (room for 8). */
void h_base_args(struct h_daemon *d, const char *tag, const char **argv);
/* Fork/exec tdbd with exactly these args after argv[0] (nothing added),
 * stdout+stderr to d->log; no waiting.  env: extra "K=V" strings (NULL-
 * terminated, may be NULL), or "K" alone to unset K; a value "$PID"
 * becomes the child's own pid (WATCHDOG_PID). */
void h_spawn(struct h_daemon *d, const char *log, const char *const *args,
	     const char *const *env);
/* The same with another program as argv[0] (e.g. a wrapper). */
void h_spawn_prog(struct h_daemon *d, const char *prog, const char *log,
		  const char *const *args, const char *const *env);
/* Wait until d->sock accepts (fails the test after timeout_ms or if the
 * process exits). */
/* Does something accept connections on the Unix socket at path? */
bool h_sock_accepts(const char *path);
void h_wait_socket(struct h_daemon *d, unsigned int timeout_ms);
/* Wait for the process to exit within timeout_ms: true and d->status, or
 * false (still running). */
bool h_wait_exit(struct h_daemon *d, unsigned int timeout_ms);
/* SIGTERM; must exit 0 within the stop budget; the log must be clean.
 * Returns the milliseconds it took to exit. */
unsigned int h_stop(struct h_daemon *d);
/* Fail the test if the log has "ERROR", a sanitizer report or a
 * "tdbd: error:" line. */
void h_check_log(const struct h_daemon *d);
/* Does the log contain s?  How often (it holds every start's)? */
bool h_log_has(const struct h_daemon *d, const char *s);
unsigned int h_log_count(const struct h_daemon *d, const char *s);
/* The whole log (malloc'ed, NUL-terminated; "" if none). */
char *h_read_file(const char *path);
/* Print the log's last lines to stderr (on failure). */
void h_dump_log(const struct h_daemon *d);

/* --- the library ----------------------------------------------------------- */

/* Connect or fail the test. */
struct tdbc *h_connect(const struct h_daemon *d, unsigned int flags);
/* STATS or fail. */
void h_stats(struct tdbc *c, struct tdbc_stats *st);
/*
 * Poll STATS (every 10 ms) until ok(st, arg) or timeout_ms; the last
 * stats are left in *st.  Returns whether ok() held.
 */
typedef bool h_stats_fn(const struct tdbc_stats *st, const void *arg);
bool h_wait_stats(struct tdbc *c, struct tdbc_stats *st, h_stats_fn *ok,
		  const void *arg, unsigned int timeout_ms);
/* The gauges that must return to where they were after a client goes. */
bool h_gauges_equal(const struct tdbc_stats *a, const struct tdbc_stats *b);
void h_print_stats(const char *what, const struct tdbc_stats *st);

/* --- a well-behaved client ---------------------------------------------------
 * A pinger is a child process that puts and gets back its own keys (table
 * "ping<n>", which it creates) for as long as the test runs, timing each
 * put+get pair; its GETs go through tdbd (TDBC_NO_MAP: never in a map
 * of the table).  h_pinger_finish() stops it and fails the test if it saw
 * an error or a wrong value, did fewer than 100 pairs, or a pair took
 * longer than the stall limit (1 s; 2 s under the sanitizers).
 */
/* GET latencies a pinger saw (microseconds). */
struct h_lat {
	uint64_t n, p50_us, p99_us, max_us;
};

struct h_pinger {
	pid_t pid;
	int n;
	unsigned int flags;
	int stop_wr, rep_rd;
};
void h_pinger_start(struct h_pinger *pg, const char *sock,
		    unsigned int flags, int n);
void h_pinger_finish(struct h_pinger *pg);
/* The same, and its GET latencies in *get (may be NULL); also printed. */
void h_pinger_finish_lat(struct h_pinger *pg, struct h_lat *get);
/* Report l and fail the test unless a well-behaved client beside an
 * attacker kept GET p99 and max near their targets (10 ms, 100 ms; the
 * limits checked are wider, for a noisy machine and sanitizers). */
void h_check_latency(const struct h_lat *l, const char *what);

/* --- other programs --- */

/* Run argv (argv[0] a path; as the caller), its stdout and stderr into
 * the scratch files out and err (h_path); its exit code.  Fails the
 * test if it is killed. */
int h_run(const char *const *argv, const char *out, const char *err);

/* --- a raw client ------------------------------------------------------------ */

struct h_raw {
	int fd;
	uint32_t seq;
	unsigned char *buf;     /* received bytes not yet taken */
	size_t len, cap;
	int fds[8];             /* SCM_RIGHTS descriptors received */
	unsigned int nfds;
};

/* Connect or fail the test. */
void h_raw_connect(struct h_raw *r, const char *sock);
void h_raw_close(struct h_raw *r);
/* Send all bytes: 0, or a negative errno (the daemon hung up). */
int h_raw_send(struct h_raw *r, const void *buf, size_t len);
/* Build *m as a request (seq assigned, returned) and send it. */
uint32_t h_raw_send_msg(struct h_raw *r, struct tdb_proto_msg *m);
/*
 * Receive one whole message into out (cap bytes; aligned): its length,
 * 0 if the daemon closed the connection, or -ETIMEDOUT / -errno.
 */
long h_raw_recv(struct h_raw *r, void *out, size_t cap, int timeout_ms);
/*
 * Send *m and read its whole answer (parts, then the end).  Returns the
 * answer's errno (0 on success) and the number of parts in *parts (may
 * be NULL); the extack text goes to msg (may be NULL).  part(arg, m) is
 * called on each reply or part (may be NULL).  Fails the test if the
 * answer does not come within 10 s or does not parse.
 */
typedef void h_part_fn(void *arg, const struct tdb_proto_msg *m);
int h_raw_call(struct h_raw *r, struct tdb_proto_msg *m, h_part_fn *part,
	       void *arg, unsigned int *parts, char *msg, size_t msglen);
/* Did the daemon close the connection within timeout_ms (anything it
 * sent first is discarded)? */
bool h_raw_wait_closed(struct h_raw *r, int timeout_ms);
/* The same without reading anything (a client that reads nothing must
 * stay one that reads nothing): poll for the hang-up only. */
bool h_raw_wait_hup(struct h_raw *r, int timeout_ms);
/* Take the descriptors received so far (up to max); returns how many. */
unsigned int h_raw_take_fds(struct h_raw *r, int *fds, unsigned int max);

/* --- small things ----------------------------------------------------------- */

/* xorshift64*: deterministic per seed. */
static inline uint64_t h_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* FNV-1a 64. */
static inline uint64_t h_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	if (!h)
		h = 0xcbf29ce484222325ULL;
	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

#endif
