// SPDX-License-Identifier: GPL-2.0-only
/*
 * harness.c - the shared helpers of the tdbd integration tests (see
 * harness.h): scratch directory, tdbd processes and their logs, failing,
 * counters, and a raw protocol client.
 *
 * This is test code: it keeps a little process-wide state (the main pid,
 * the scratch directory, the processes to kill on failure) because a
 * failing CHECK anywhere must be able to clean up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TRACKED 256
#define MAX_DAEMONS 16

static const char *test_name = "itest";
static pid_t main_pid;
static char scratch[H_PATH];
static pid_t tracked[MAX_TRACKED];
static unsigned int ntracked;
static struct h_daemon *daemons[MAX_DAEMONS];
static unsigned int ndaemons;

/* --- time, scale ------------------------------------------------------- */

unsigned int h_proc_count(pid_t pid, const char *dir)
{
	char path[64];
	struct dirent *de;
	unsigned int n = 0;
	DIR *dp;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, dir);
	if (!(dp = opendir(path)))
		return 0;
	while ((de = readdir(dp)))
		n += de->d_name[0] != '.';
	closedir(dp);
	return n;
}

uint64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void h_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

long h_scaled(long n, long min)
{
	const char *s = getenv("TDB_ITEST_SCALE");
	double f = s && *s ? strtod(s, NULL) : 1.0;
	long v;

	if (f <= 0)
		f = 1.0;
	v = (long)((double)n * f);
	if (min <= 0)
		min = 1;
	return v < min ? min : v;
}

bool h_want(const char *part)
{
	const char *s = getenv("TDB_ITEST_ONLY");

	return !s || !*s || !strcmp(s, part);
}

bool h_known_bug(const char *name)
{
	const char *strict = getenv("TDB_ITEST_STRICT");
	const char *list = getenv("TDB_ITEST_KNOWN_BUGS");
	size_t n = strlen(name);

	if ((strict && *strict == '1') || !list)
		return false;
	while (*list) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncmp(list, name, n))
			return true;
		list += len;
		list += *list == ',';
	}
	return false;
}

bool h_sanitized(void)
{
	const char *s = getenv("TDB_ITEST_SANITIZED");

	return s && *s == '1';
}

const char *h_tdbd(void)
{
	const char *p = getenv("TDBD");

	if (!p || !*p) {
		fprintf(stderr, "%s: TDBD is not set (the path of tdbd)\n",
			test_name);
		exit(1);
	}
	return p;
}

/* --- failing --------------------------------------------------------------- */

const char *h_errname(int err)
{
	static char buf[32];
	const char *n;

	if (err == 0)
		return "0";
	if (err > 0)
		return "positive";
	n = strerrorname_np(-err);
	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", -err);
	return buf;
}

void h_note(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", test_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void kill_tracked(void)
{
	unsigned int i;

	for (i = 0; i < ntracked; i++)
		if (tracked[i] > 0)
			kill(tracked[i], SIGKILL);
	for (i = 0; i < ndaemons; i++)
		if (daemons[i]->pid > 0)
			kill(daemons[i]->pid, SIGKILL);
}

void h_fail(const char *file, int line, const char *cond, const char *fmt,
	    ...)
{
	unsigned int i;
	va_list ap;

	fflush(stdout);
	if (getpid() != main_pid) {
		fprintf(stderr, "%s [child %d]: %s:%d: CHECK(%s) failed: ",
			test_name, (int)getpid(), file, line, cond);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
		_exit(1);
	}
	fprintf(stderr, "%s: %s:%d: CHECK(%s) failed: ", test_name, file,
		line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	kill_tracked();
	for (i = 0; i < ndaemons; i++) {
		if (daemons[i]->pid > 0)
			waitpid(daemons[i]->pid, NULL, 0);
		h_dump_log(daemons[i]);
	}
	fprintf(stderr, "%s: FAILED (scratch directory kept: %s)\n",
		test_name, scratch);
	/* _exit: the sanitizers' leak report of a failing test is noise */
	_exit(1);
}

static void on_alarm(int sig)
{
	static const char msg[] = "itest: the test's watchdog ran out "
				  "(hung?); killing its processes\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		(void)0;
	kill_tracked();
	_exit(1);
}

void h_track(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < ntracked; i++)
		if (tracked[i] <= 0) {
			tracked[i] = pid;
			return;
		}
	if (ntracked < MAX_TRACKED)
		tracked[ntracked++] = pid;
}

void h_untrack(pid_t pid)
{
	unsigned int i;

	for (i = 0; i < ntracked; i++)
		if (tracked[i] == pid)
			tracked[i] = 0;
}

void h_become(uid_t uid)
{
	CHECK(setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
	      setresuid(uid, uid, uid) == 0, "become uid %u: %s",
	      (unsigned int)uid, strerror(errno));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* --- the scratch directory -------------------------------------------------- */

void h_init(const char *name, unsigned int budget_s)
{
	char tmpl[] = "/tmp/tdbi-XXXXXX";

	test_name = name;
	main_pid = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(budget_s);
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		exit(1);
	}
	/* Other users' processes (the access test) must reach sockets. */
	chmod(tmpl, 0755);
	snprintf(scratch, sizeof(scratch), "%s", tmpl);
}

const char *h_dir(void)
{
	return scratch;
}

void h_path(char *out, size_t size, const char *name)
{
	int n = snprintf(out, size, "%s/%s", scratch, name);

	CHECK(n > 0 && (size_t)n < size, "path too long: %s/%s", scratch,
	      name);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void h_done(void)
{
	alarm(0);
	if (scratch[0])
		nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	printf("%s: passed\n", test_name);
}

/* --- logs ------------------------------------------------------------------ */

char *h_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return strdup("");
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			CHECK(buf, "out of memory");
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = 0;
	return buf;
}

bool h_log_has(const struct h_daemon *d, const char *s)
{
	char *log = h_read_file(d->log);
	bool has = strstr(log, s) != NULL;

	free(log);
	return has;
}

unsigned int h_log_count(const struct h_daemon *d, const char *s)
{
	char *log = h_read_file(d->log), *p = log;
	unsigned int n = 0;

	while ((p = strstr(p, s))) {
		n++;
		p += strlen(s);
	}
	free(log);
	return n;
}

void h_dump_log(const struct h_daemon *d)
{
	char *log = h_read_file(d->log);
	size_t len = strlen(log);
	const char *from = log;
	unsigned int lines = 0;

	/* the last 60 lines: walk back over 61 newlines (the log ends
	 * with one) */
	while (len > 0) {
		if (log[len - 1] == '\n' && ++lines > 60) {
			from = log + len;
			break;
		}
		len--;
	}
	fprintf(stderr, "----- %s (%s) -----\n%s----- end of log -----\n",
		d->log, from == log ? "whole" : "last lines", from);
	free(log);
}

void h_check_log(const struct h_daemon *d)
{
	static const char *const bad[] = {
		"ERROR", "AddressSanitizer", "LeakSanitizer",
		"runtime error", "tdbd: error:", NULL };
	char *log = h_read_file(d->log);
	char *line, *save = NULL;
	bool found = false;
	unsigned int i;

	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		for (i = 0; bad[i]; i++)
			if (strstr(line, bad[i])) {
				fprintf(stderr, "%s: bad line in %s: %s\n",
					test_name, d->log, line);
				found = true;
				break;
			}
	free(log);
	CHECK(!found, "tdbd's log %s reports errors (above)", d->log);
}

/* --- the daemon ------------------------------------------------------------- */

static void remember(struct h_daemon *d)
{
	unsigned int i;

	for (i = 0; i < ndaemons; i++)
		if (daemons[i] == d)
			return;
	if (ndaemons < MAX_DAEMONS)
		daemons[ndaemons++] = d;
}

void h_spawn_prog(struct h_daemon *d, const char *prog, const char *log,
		  const char *const *args, const char *const *env)
{
	static const char *const systemd_env[] = { "NOTIFY_SOCKET",
		"WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID",
		"LISTEN_FDNAMES", "JOURNAL_STREAM", NULL };
	const char *argv[64];
	unsigned int n = 0, i;
	pid_t parent = getpid(), pid;
	int fd;

	argv[n++] = prog;
	for (i = 0; args && args[i]; i++) {
		CHECK(n < 63, "too many arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	if (log != d->log)
		snprintf(d->log, sizeof(d->log), "%s", log);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	CHECK(fd >= 0, "cannot open %s: %s", log, strerror(errno));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(fd, 1);
		dup2(fd, 2);
		/* Hermetic: nothing of a systemd the test may run under
		 * (JOURNAL_STREAM would also change the log's format). */
		for (i = 0; systemd_env[i]; i++)
			unsetenv(systemd_env[i]);
		for (i = 0; env && env[i]; i++) {
			char kv[512], *eq;

			snprintf(kv, sizeof(kv), "%s", env[i]);
			eq = strchr(kv, '=');
			if (eq && !strcmp(eq + 1, "$PID")) {
				char pid_s[16];

				*eq = 0;
				snprintf(pid_s, sizeof(pid_s), "%d",
					 (int)getpid());
				setenv(kv, pid_s, 1);
			} else if (eq) {
				*eq = 0;
				setenv(kv, eq + 1, 1);
			} else {
				unsetenv(kv);
			}
		}
		execv(prog, (char *const *)argv);
		dprintf(2, "itest: cannot run %s: %s\n", prog,
			strerror(errno));
		_exit(127);
	}
	close(fd);
	d->pid = pid;
	d->status = 0;
	remember(d);
}

void h_spawn(struct h_daemon *d, const char *log, const char *const *args,
	     const char *const *env)
{
	h_spawn_prog(d, h_tdbd(), log, args, env);
}

static bool reap(struct h_daemon *d, int flags)
{
	int st;
	pid_t r;

	if (d->pid <= 0)
		return true;
	do
		r = waitpid(d->pid, &st, flags);
	while (r < 0 && errno == EINTR);
	if (r == d->pid) {
		d->status = st;
		d->pid = 0;
		return true;
	}
	return false;
}

bool h_wait_exit(struct h_daemon *d, unsigned int timeout_ms)
{
	uint64_t end = h_now_ms() + timeout_ms;

	for (;;) {
		if (reap(d, WNOHANG))
			return true;
		if (h_now_ms() >= end)
			return false;
		h_sleep_ms(2);
	}
}

bool h_sock_accepts(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

void h_wait_socket(struct h_daemon *d, unsigned int timeout_ms)
{
	uint64_t end = h_now_ms() + timeout_ms;

	for (;;) {
		if (reap(d, WNOHANG))
			h_fail(__FILE__, __LINE__, "tdbd running",
			       "tdbd exited before serving (status %#x); "
			       "log %s", d->status, d->log);
		if (h_sock_accepts(d->sock))
			return;
		CHECK(h_now_ms() < end, "tdbd did not accept on %s within "
		      "%u ms", d->sock, timeout_ms);
		h_sleep_ms(5);
	}
}

void h_base_args(struct h_daemon *d, const char *tag, const char **argv)
{
	char conf[H_PATH];
	static char confs[H_PATH];
	FILE *f;

	memset(d, 0, sizeof(*d));
	h_path(d->sock, sizeof(d->sock), tag);
	CHECK(strlen(d->sock) + 5 < sizeof(d->sock), "socket path too long");
	strcat(d->sock, ".sock");
	h_path(d->data, sizeof(d->data), tag);
	strcat(d->data, ".data");
	h_path(d->log, sizeof(d->log), tag);
	strcat(d->log, ".log");
	/* An empty file of our own, so /etc/tdb/tdbd.conf never counts. */
	h_path(conf, sizeof(conf), "empty.conf");
	f = fopen(conf, "a");
	CHECK(f, "cannot make %s", conf);
	fclose(f);
	snprintf(confs, sizeof(confs), "%s", conf);
	argv[0] = "--config";
	argv[1] = confs;
	argv[2] = "--socket";
	argv[3] = d->sock;
	argv[4] = "--data-dir";
	argv[5] = d->data;
	argv[6] = NULL;
}

void h_start_env(struct h_daemon *d, const char *tag,
		 const char *const *args, const char *const *env)
{
	const char *argv[64];
	char log[H_PATH];
	unsigned int n, i;
	bool level = false;

	h_base_args(d, tag, argv);
	for (n = 0; argv[n]; n++)
		;
	for (i = 0; args && args[i]; i++) {
		CHECK(n < 60, "too many arguments");
		if (!strcmp(args[i], "--log-level"))
			level = true;
		argv[n++] = args[i];
	}
	if (!level) {
		argv[n++] = "--log-level";
		argv[n++] = "debug";
	}
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s", d->log);
	h_spawn(d, log, argv, env);
	h_wait_socket(d, 20000);
}

void h_start(struct h_daemon *d, const char *tag, const char *const *args)
{
	h_start_env(d, tag, args, NULL);
}

unsigned int h_stop(struct h_daemon *d)
{
	uint64_t t0 = h_now_ms();
	unsigned int budget = h_sanitized() ? 30000 : 10000;
	unsigned int ms;

	CHECK(d->pid > 0, "tdbd is not running");
	CHECK(kill(d->pid, SIGTERM) == 0, "kill: %s", strerror(errno));
	if (!h_wait_exit(d, budget)) {
		kill(d->pid, SIGKILL);
		reap(d, 0);
		h_fail(__FILE__, __LINE__, "exit", "tdbd did not exit within "
		       "%u ms of SIGTERM", budget);
	}
	ms = (unsigned int)(h_now_ms() - t0);
	if (!WIFEXITED(d->status) || WEXITSTATUS(d->status) != 0) {
		if (WIFSIGNALED(d->status))
			h_fail(__FILE__, __LINE__, "exit 0", "tdbd died of "
			       "signal %d (%s) after SIGTERM",
			       WTERMSIG(d->status),
			       strsignal(WTERMSIG(d->status)));
		h_fail(__FILE__, __LINE__, "exit 0", "tdbd exited %d after "
		       "SIGTERM (a sanitizer report?)",
		       WEXITSTATUS(d->status));
	}
	h_check_log(d);
	return ms;
}

/* --- the library ---------------------------------------------------------- */

struct tdbc *h_connect(const struct h_daemon *d, unsigned int flags)
{
	char msg[256];
	struct tdbc *c = NULL;
	int err = tdbc_connect(&c, d->sock, flags, msg, sizeof(msg));

	CHECK(err == 0, "connect to %s: %s (%s)", d->sock, h_errname(err),
	      msg);
	CHECK(tdbc_uses_rings(c) == !(flags & TDBC_NO_RINGS),
	      "connection uses rings: %d, flags %#x", tdbc_uses_rings(c),
	      flags);
	return c;
}

void h_stats(struct tdbc *c, struct tdbc_stats *st)
{
	int err = tdbc_stats(c, st);

	CHECK(err == 0, "STATS: %s (%s)", h_errname(err), tdbc_errmsg(c));
}

bool h_wait_stats(struct tdbc *c, struct tdbc_stats *st, h_stats_fn *ok,
		  const void *arg, unsigned int timeout_ms)
{
	uint64_t end = h_now_ms() + timeout_ms;

	for (;;) {
		h_stats(c, st);
		if (ok(st, arg))
			return true;
		if (h_now_ms() >= end)
			return false;
		h_sleep_ms(10);
	}
}

bool h_gauges_equal(const struct tdbc_stats *a, const struct tdbc_stats *b)
{
	return a->clients == b->clients && a->rings == b->rings &&
	       a->watches == b->watches && a->txns == b->txns &&
	       a->dumps == b->dumps && a->throttled == b->throttled;
}

void h_print_stats(const char *what, const struct tdbc_stats *st)
{
	h_note("%s: tables %u clients %u rings %u watches %u txns %u dumps %u "
	       "throttled %u | accepted %llu cleanups %llu txns_aborted %llu "
	       "watches_dropped %llu rings_freed %llu stuck %llu "
	       "violations %llu requests %llu errors %llu", what, st->tables,
	       st->clients, st->rings, st->watches, st->txns, st->dumps,
	       st->throttled, (unsigned long long)st->accepted,
	       (unsigned long long)st->cleanups,
	       (unsigned long long)st->txns_aborted,
	       (unsigned long long)st->watches_dropped,
	       (unsigned long long)st->rings_freed,
	       (unsigned long long)st->stuck,
	       (unsigned long long)st->violations,
	       (unsigned long long)st->requests,
	       (unsigned long long)st->errors);
}

/* --- a well-behaved client ------------------------------------------------------ */

struct ping_report {
	uint64_t ops, max_us;
	struct h_lat get;       /* the GETs alone */
	int err;                /* the first failure, or 0 */
	char what[200];
};

#define PING_SAMPLES 65536u     /* GET latencies kept (the first ones) */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* p50, p99 and max of n samples (sorts them). */
static void lat_sum(uint32_t *v, size_t n, uint64_t max_us, struct h_lat *l)
{
	memset(l, 0, sizeof(*l));
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_u32);
	l->n = n;
	l->p50_us = v[n / 2];
	l->p99_us = v[(n * 99) / 100];
	l->max_us = max_us;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Put and get back own keys until stop_rd becomes readable. */
static void ping_loop(const char *sock, unsigned int flags, int n,
		      int ready_wr, int stop_rd, int rep_wr)
{
	struct ping_report rep = { 0 };
	struct tdbc_table *t = NULL;
	struct tdbc *c = NULL;
	char name[16], msg[256];
	uint64_t rnd = 77 + (uint64_t)n, get_max = 0;
	uint32_t *lat = calloc(PING_SAMPLES, sizeof(*lat));
	size_t nlat = 0;
	int err;

	CHECK(lat, "out of memory");
	snprintf(name, sizeof(name), "ping%d", n);
	/* TDBC_NO_MAP: its GETs measure tdbd (a mapped GET never reaches
	 * it, so a stalled worker would go unseen) */
	err = tdbc_connect(&c, sock, flags | TDBC_NO_MAP, msg, sizeof(msg));
	CHECK(err == 0, "pinger connect: %s (%s)", h_errname(err), msg);
	err = tdbc_table_create(c, name, NULL);
	CHECK(err == 0, "create %s: %s", name, h_errname(err));
	CHECK(tdbc_table_open(c, name, &t) == 0, "open %s", name);
	CHECK(write(ready_wr, "r", 1) == 1, "ready pipe");
	for (;;) {
		struct pollfd pfd = { .fd = stop_rd, .events = POLLIN };
		char key[16], val[64], got[64];
		uint64_t t0, t1, dt;
		long len;
		int kl, vl;

		if (poll(&pfd, 1, 0) > 0)
			break;
		kl = snprintf(key, sizeof(key), "k%u",
			      (unsigned int)(h_rand(&rnd) % 100));
		vl = snprintf(val, sizeof(val), "v%llu",
			      (unsigned long long)h_rand(&rnd));
		t0 = now_us();
		err = tdbc_put(t, NULL, key, (size_t)kl, val, (size_t)vl, 0);
		if (err) {
			rep.err = err;
			snprintf(rep.what, sizeof(rep.what), "put: %s",
				 tdbc_errmsg(c));
			break;
		}
		t1 = now_us();
		len = tdbc_get(t, NULL, key, (size_t)kl, got, sizeof(got),
			       NULL);
		dt = now_us() - t1;
		if (dt > get_max)
			get_max = dt;
		if (nlat < PING_SAMPLES)
			lat[nlat++] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
		if (len != vl || memcmp(got, val, (size_t)vl)) {
			rep.err = len < 0 ? (int)len : -EIO;
			snprintf(rep.what, sizeof(rep.what), "get: %ld (%s)",
				 len, len < 0 ? tdbc_errmsg(c) :
				 "wrong value");
			break;
		}
		dt = now_us() - t0;
		if (dt > rep.max_us)
			rep.max_us = dt;
		rep.ops++;
		/* a client that waits a little between calls, as most do */
		if (rep.ops % 16 == 0)
			h_sleep_ms(1);
	}
	lat_sum(lat, nlat, get_max, &rep.get);
	free(lat);
	CHECK(write(rep_wr, &rep, sizeof(rep)) == (ssize_t)sizeof(rep),
	      "report pipe");
	tdbc_close(c);
}

void h_pinger_start(struct h_pinger *pg, const char *sock,
		    unsigned int flags, int n)
{
	int ready[2], stop[2], rep[2];
	char b;

	CHECK(pipe(ready) == 0 && pipe(stop) == 0 && pipe(rep) == 0, "pipe");
	fflush(NULL);
	pg->pid = fork();
	CHECK(pg->pid >= 0, "fork");
	if (pg->pid == 0) {
		close(ready[0]);
		close(stop[1]);
		close(rep[0]);
		ping_loop(sock, flags, n, ready[1], stop[0], rep[1]);
		_exit(0);
	}
	h_track(pg->pid);
	close(ready[1]);
	close(stop[0]);
	close(rep[1]);
	CHECK(read(ready[0], &b, 1) == 1, "pinger %d did not start", n);
	close(ready[0]);
	pg->n = n;
	pg->flags = flags;
	pg->stop_wr = stop[1];
	pg->rep_rd = rep[0];
}

void h_pinger_finish(struct h_pinger *pg)
{
	h_pinger_finish_lat(pg, NULL);
}

void h_pinger_finish_lat(struct h_pinger *pg, struct h_lat *get)
{
	struct ping_report rep;
	uint64_t limit = h_sanitized() ? 2000000 : 1000000;
	int st, n = pg->n;

	CHECK(write(pg->stop_wr, "s", 1) == 1, "stop pipe");
	CHECK(read(pg->rep_rd, &rep, sizeof(rep)) == (ssize_t)sizeof(rep),
	      "pinger %d's report", n);
	CHECK(waitpid(pg->pid, &st, 0) == pg->pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "pinger %d failed", n);
	h_untrack(pg->pid);
	close(pg->stop_wr);
	close(pg->rep_rd);
	h_note("pinger %d (%s): %llu put+get pairs, slowest %llu us; GET "
	       "p50 %llu us, p99 %llu us, max %llu us", n,
	       pg->flags & TDBC_NO_RINGS ? "socket" : "rings",
	       (unsigned long long)rep.ops, (unsigned long long)rep.max_us,
	       (unsigned long long)rep.get.p50_us,
	       (unsigned long long)rep.get.p99_us,
	       (unsigned long long)rep.get.max_us);
	if (get)
		*get = rep.get;
	CHECK(rep.err == 0, "pinger %d saw %s: %s", n, h_errname(rep.err),
	      rep.what);
	CHECK(rep.ops >= 20, "pinger %d did only %llu calls", n,
	      (unsigned long long)rep.ops);
	CHECK(rep.max_us < limit, "pinger %d stalled: a put+get took %llu "
	      "us", n, (unsigned long long)rep.max_us);
}

void h_check_latency(const struct h_lat *l, const char *what)
{
	/* The targets are 10 ms and 100 ms; the checks allow for a shared,
	 * noisy 2-CPU machine (and sanitizers) so that they only catch a
	 * client that really waits behind an attacker. */
	uint64_t p99 = h_sanitized() ? 200000 : 50000;
	uint64_t max = h_sanitized() ? 2000000 : 500000;

	h_note("%s: well-behaved GET p50 %llu us, p99 %llu us, max %llu us "
	       "(%llu GETs; targets p99 < 10 ms, max < 100 ms)", what,
	       (unsigned long long)l->p50_us, (unsigned long long)l->p99_us,
	       (unsigned long long)l->max_us, (unsigned long long)l->n);
	CHECK(l->n >= 20, "%s: only %llu GETs measured", what,
	      (unsigned long long)l->n);
	CHECK(l->p99_us < p99, "%s: GET p99 %llu us (limit %llu)", what,
	      (unsigned long long)l->p99_us, (unsigned long long)p99);
	CHECK(l->max_us < max, "%s: GET max %llu us (limit %llu)", what,
	      (unsigned long long)l->max_us, (unsigned long long)max);
}

/* --- other programs --- */

int h_run(const char *const *argv, const char *out, const char *err)
{
	char po[H_PATH], pe[H_PATH];
	int st;
	pid_t pid;

	h_path(po, sizeof(po), out);
	h_path(pe, sizeof(pe), err);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	h_track(pid);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(st), "%s: killed (status %#x)", argv[0], st);
	return WEXITSTATUS(st);
}

/* --- a raw client ------------------------------------------------------------- */

void h_raw_connect(struct h_raw *r, const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(r, 0, sizeof(*r));
	r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(r->fd >= 0, "socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	CHECK(connect(r->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
	      "connect %s: %s", sock, strerror(errno));
}

void h_raw_close(struct h_raw *r)
{
	unsigned int i;

	for (i = 0; i < r->nfds; i++)
		close(r->fds[i]);
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int h_raw_send(struct h_raw *r, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = send(r->fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint32_t h_raw_send_msg(struct h_raw *r, struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext = { 0 };
	long size, len;
	void *buf;
	int err;

	m->seq = ++r->seq;
	size = tdb_proto_size(TDB_PROTO_REQUEST, m, &ext);
	CHECK(size > 0, "cannot size a request: %s", ext.msg);
	buf = malloc((size_t)size);
	CHECK(buf, "out of memory");
	len = tdb_proto_build(buf, (size_t)size, TDB_PROTO_REQUEST, m, &ext);
	CHECK(len == size, "cannot build a request: %s", ext.msg);
	err = h_raw_send(r, buf, (size_t)len);
	free(buf);
	CHECK(err == 0, "send to tdbd: %s", h_errname(err));
	return m->seq;
}

static void take_cmsg(struct h_raw *r, struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t i, n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(fd));
			if (r->nfds < 8)
				r->fds[r->nfds++] = fd;
			else
				close(fd);
		}
	}
}

/* Read more bytes: > 0, 0 at EOF, -ETIMEDOUT, -errno. */
static long raw_fill(struct h_raw *r, int timeout_ms)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} cbuf;
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int pr;

	if (r->cap - r->len < 65536) {
		size_t cap = r->cap ? r->cap * 2 : 262144;

		r->buf = realloc(r->buf, cap);
		CHECK(r->buf, "out of memory");
		r->cap = cap;
	}
	do
		pr = poll(&pfd, 1, timeout_ms);
	while (pr < 0 && errno == EINTR);
	if (pr == 0)
		return -ETIMEDOUT;
	iov.iov_base = r->buf + r->len;
	iov.iov_len = r->cap - r->len;
	mh.msg_control = cbuf.b;
	mh.msg_controllen = sizeof(cbuf.b);
	do
		n = recvmsg(r->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	take_cmsg(r, &mh);
	r->len += (size_t)n;
	return n;
}

long h_raw_recv(struct h_raw *r, void *out, size_t cap, int timeout_ms)
{
	uint64_t end = h_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (r->len >= NLMSG_HDRLEN) {
			struct nlmsghdr nh;

			memcpy(&nh, r->buf, sizeof(nh));
			CHECK(nh.nlmsg_len >= NLMSG_HDRLEN &&
			      nh.nlmsg_len <= TDB_PROTO_MSG_MAX &&
			      !(nh.nlmsg_len & 3), "tdbd sent a message of "
			      "impossible length %u", nh.nlmsg_len);
			if (r->len >= nh.nlmsg_len) {
				CHECK(nh.nlmsg_len <= cap, "an answer of %u "
				      "bytes does not fit %zu", nh.nlmsg_len,
				      cap);
				memcpy(out, r->buf, nh.nlmsg_len);
				r->len -= nh.nlmsg_len;
				memmove(r->buf, r->buf + nh.nlmsg_len, r->len);
				return nh.nlmsg_len;
			}
		}
		{
			uint64_t now = h_now_ms();
			long n = raw_fill(r, now >= end ? 0 :
					  (int)(end - now));

			if (n <= 0)
				return n;
		}
	}
}

int h_raw_call(struct h_raw *r, struct tdb_proto_msg *m, h_part_fn *part,
	       void *arg, unsigned int *parts, char *msg, size_t msglen)
{
	void *buf = malloc(TDB_PROTO_MSG_MAX);
	unsigned int np = 0;
	uint8_t cmd = m->cmd;
	uint32_t seq;
	int res;

	CHECK(buf, "out of memory");
	if (msg && msglen)
		msg[0] = 0;
	seq = h_raw_send_msg(r, m);
	for (;;) {
		struct tdb_proto_extack ext = { 0 };
		struct tdb_proto_msg a;
		long n = h_raw_recv(r, buf, TDB_PROTO_MSG_MAX, 10000);
		int err;

		CHECK(n > 0, "no answer to %s (seq %u): %s",
		      tdb_proto_cmd_name(cmd), seq,
		      n == 0 ? "tdbd closed the connection" :
		      h_errname((int)n));
		err = tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a,
				      &ext);
		CHECK(err == 0, "an answer to %s does not parse: %s (%s)",
		      tdb_proto_cmd_name(cmd), h_errname(err), ext.msg);
		CHECK(a.seq == seq, "answer seq %u, want %u", a.seq, seq);
		if (a.type == NLMSG_ERROR || a.type == NLMSG_DONE) {
			if (msg && msglen && a.ext.msg)
				snprintf(msg, msglen, "%s", a.ext.msg);
			res = a.error;
			break;
		}
		CHECK(a.type == TDB_PROTO_FAMILY && a.cmd == cmd,
		      "answer type %u cmd %u to %s", a.type, a.cmd,
		      tdb_proto_cmd_name(cmd));
		np++;
		if (part)
			part(arg, &a);
		if (!tdb_proto_cmd_is_dump(cmd)) {
			res = 0;
			break;
		}
	}
	free(buf);
	if (parts)
		*parts = np;
	return res;
}

bool h_raw_wait_closed(struct h_raw *r, int timeout_ms)
{
	uint64_t end = h_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		uint64_t now = h_now_ms();
		long n;

		r->len = 0;     /* whatever came is not looked at */
		if (now >= end)
			return false;
		n = raw_fill(r, (int)(end - now));
		if (n == 0 || n == -ECONNRESET || n == -EPIPE)
			return true;
		if (n == -ETIMEDOUT)
			return false;
		CHECK(n > 0, "recv: %s", h_errname((int)n));
	}
}

bool h_raw_wait_hup(struct h_raw *r, int timeout_ms)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLRDHUP };
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

unsigned int h_raw_take_fds(struct h_raw *r, int *fds, unsigned int max)
{
	unsigned int n = r->nfds < max ? r->nfds : max, i;

	for (i = 0; i < n; i++)
		fds[i] = r->fds[i];
	memmove(r->fds, r->fds + n, (r->nfds - n) * sizeof(int));
	r->nfds -= n;
	return n;
}
