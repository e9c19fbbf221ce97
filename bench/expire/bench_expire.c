// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_expire.c - tdb-bench-expire: what expiry costs tdbd when records
 * expire (the sweep), and the memory a record with a TTL takes against
 * Redis (docs/BENCHMARKS.md section 13).
 *
 * The sweep (per run).  tdbd is started as tdb-bench starts it (--config
 * /dev/null --sync none, a socket and data dir in a temp dir).  A table
 * "other" holds --other-keys keys without a TTL.  A table "exp" is
 * filled with --records records (16 B keys, 100 B values, batched
 * tdbc_submit) that all carry one deadline D, --ttl ms after the fill's
 * expected end (the fill time is estimated from a timed fill of a
 * scratch table first, then from the last run), so that nothing expires
 * during the fill and the sweep's work is not mixed with the fill's.
 * From the fill's end a second process does GETs of "other" in a loop
 * (through the rings, TDBC_NO_MAP, so that they wait for the owner the
 * sweep runs in; --mapped: mapped gets) and records every GET's
 * latency.  The driver polls TABLE_STAT of "exp" every 10 ms:
 *   before   fill end .. D: a full table, nothing expired (the sweep
 *            walks it and finds nothing)
 *   sweep    D .. the first poll that sees RECORDS 0
 * tdbd's CPU (utime + stime, /proc/PID/stat) in the sweep window minus
 * the before window's CPU rate times the sweep window's length (the
 * GET client, the polls and the idle sweep are in both), divided by the
 * records: CPU ns per expired record.  Also: the time to empty, the
 * table's memory at the fill's end and when empty, and the GETs' p50,
 * p99 and max in each window.  Medians over --runs.
 *
 * Memory per record.  N records (--mem-records, default --records) of
 * the same keys and values: tdb's TABLE_STAT bytes_allocated (records
 * and index, less the empty table's) and extents x 2 MiB, divided by N,
 * with a TTL (1 h) and without; Redis's INFO used_memory after SET ...
 * PX 3600000 and after plain SETs, less before, divided by N
 * (redis-server from $PATH or --redis; without it, tdb alone).
 *
 * Exit 0; 1 if anything failed (tdbd, a request, the table not emptied
 * within --max-wait, figures that do not add up: the expired count not
 * the records filled); 77 with --strict if tdbd or redis-server is not
 * there.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdb/client.h>

#include "../../clients/bench/bench.h"

#define EXTENT     (2u << 20)
#define FILL_PIPE  256u
#define POLL_US    10000u
#define SAMPLES    (8u << 20)   /* GET samples kept (64 MiB) */
/* Every how many GETs one is timed and kept: mapped gets run at
 * millions a second. */
#define STEP       (o.mapped ? 16u : 1u)
#define MEM_TTL    3600000ull   /* memory's TTL: nothing expires */
#define KEY_MAX    64u

/* What util.c (tdb-bench's helpers, compiled in) reads. */
struct options opt = { .vsize = 100 };
char *keys;

static struct {
	uint32_t records, other, mem_records;
	unsigned int mem_klen;
	uint64_t ttl;
	unsigned int runs;
	double max_wait;
	bool mapped, redis, strict, sweep, memory;
	const char *tdbd, *redis_bin, *dir;
} o = { .records = 1000000, .other = 10000, .ttl = 1000, .runs = 3,
	.redis = true, .sweep = true, .memory = true, .mem_klen = KEY_LEN };

static char tmp[4096];
static pid_t tdbd_pid, redis_pid, getter;
static char sock[108], tlog[4200], rsock[108], rlog[4200];

/* --- errors and cleanup ------------------------------------------------ */
static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void cleanup(void)
{
	if (getter > 0)
		kill(getter, SIGKILL), waitpid(getter, NULL, 0);
	getter = 0;
	if (tdbd_pid > 0)
		stop_server(tdbd_pid);
	if (redis_pid > 0)
		stop_server(redis_pid);
	tdbd_pid = redis_pid = 0;
	if (tmp[0])
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmp[0] = 0;
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-expire: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	if (getter > 0)
		kill(getter, SIGKILL);
	_exit(1);       /* the servers die with us (PR_SET_PDEATHSIG) */
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Key i: "key" and i in klen - 3 decimal digits (KEY_LEN: tdb-bench's). */
static void key_make_len(char *k, uint32_t i, unsigned int klen)
{
	char buf[KEY_MAX + 1];

	snprintf(buf, sizeof(buf), "key%0*" PRIu32, (int)klen - 3, i);
	memcpy(k, buf, klen);
}

static void key_make(char *k, uint32_t i)
{
	key_make_len(k, i, KEY_LEN);
}

/* --- tdbd ------------------------------------------------------------------ */
static const char *find_tdbd(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n;

	if (o.tdbd)
		return o.tdbd;
	if (getenv("TDBD") && *getenv("TDBD"))
		return getenv("TDBD");
#ifdef TDB_BENCH_TDBD
	if (!access(TDB_BENCH_TDBD, X_OK))
		return TDB_BENCH_TDBD;
#endif
	/* <build>/bench/tdb-bench-expire and <build>/src/daemon/tdbd */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(buf, len, "%s/../src/daemon/tdbd", dirname(self));
		if (!access(buf, X_OK))
			return buf;
	}
	return NULL;
}

static struct tdbc *tdb_connect(unsigned int flags)
{
	char why[MSG_LEN] = "", msg[MSG_LEN];
	struct tdbc *c;

	for (int i = 0; i < 2000; i++) {
		if (exited(tdbd_pid, msg)) {
			tdbd_pid = 0;
			log_tail(tlog, msg, sizeof(msg));
			die("tdbd %s", msg);
		}
		if (!tdbc_connect(&c, sock, flags, why, sizeof(why)))
			return c;
		usleep(10000);
	}
	die("tdbd did not accept on %s in 20 s: %s", sock, why);
}

static void tdbd_start(void)
{
	char bin[PATH_MAX], data[4200], msg[MSG_LEN] = "";
	const char *path = find_tdbd(bin, sizeof(bin));
	const char *argv[] = { path, "--config", "/dev/null", "--sync", "none",
			       "--socket", sock, "--data-dir", data, NULL };

	if (!path || access(path, X_OK)) {
		fprintf(stderr, "tdb-bench-expire: no tdbd%s%s (give --tdbd "
			"PATH or set $TDBD)\n", path ? " at " : "",
			path ? path : "");
		cleanup();
		exit(o.strict ? 77 : 1);
	}
	if ((size_t)snprintf(sock, sizeof(sock), "%s/tdbd.sock", tmp) >=
	    sizeof(sock))
		die("socket path under %s is too long", tmp);
	snprintf(tlog, sizeof(tlog), "%s/tdbd.log", tmp);
	snprintf(data, sizeof(data), "%s/tdbd.data", tmp);
	tdbd_pid = spawn(argv, tlog, msg);
	if (tdbd_pid < 0) {
		tdbd_pid = 0;
		die("cannot start %s: %s", path, msg);
	}
	printf("  tdb       %s --config /dev/null --sync none --socket ... "
	       "--data-dir ...\n", path);
}

static void table_create(struct tdbc *c, const char *name, uint32_t n)
{
	/* As tdb-bench: records, as many again in a grace period, the
	 * index, with room to spare. */
	uint64_t need = (uint64_t)n * (KEY_LEN + opt.vsize + 64) * 3;
	uint64_t ext = (need + EXTENT - 1) / EXTENT;
	struct tdbc_table_opts to;
	int err;

	tdbc_table_opts_init(&to);
	to.max_extents = ext < 1024 ? 1024 : ext > 32768 ? 32768 :
		(uint32_t)ext;
	err = tdbc_table_create(c, name, &to);
	if (err)
		die("creating table %s: %s: %s", name, tdbc_strerror(err),
		    tdbc_errmsg(c));
}

static void table_drop(struct tdbc *c, const char *name)
{
	int err = tdbc_table_drop(c, name);

	if (err)
		die("dropping table %s: %s: %s", name, tdbc_strerror(err),
		    tdbc_errmsg(c));
}

static void table_stat(struct tdbc *c, const char *name,
		       struct tdbc_table_stat *st)
{
	int err = tdbc_table_stat(c, name, st);

	if (err)
		die("TABLE_STAT %s: %s: %s", name, tdbc_strerror(err),
		    tdbc_errmsg(c));
}

/* Records 0..n-1 of table name (keys of klen bytes), batched; flags
 * TDBC_TTL or TDBC_DEADLINE with expiry, or 0. */
static void fill_len(struct tdbc *c, const char *name, uint32_t n,
		     unsigned int klen, unsigned int flags, uint64_t expiry)
{
	struct tdbc_req req[FILL_PIPE];
	struct tdbc_cqe cqe[FILL_PIPE];
	static uint8_t v[FILL_PIPE][128];      /* opt.vsize: 100 */
	static char k[FILL_PIPE][KEY_MAX];
	struct tdbc_table *t;
	int err = tdbc_table_open(c, name, &t);

	if (err)
		die("opening table %s: %s", name, tdbc_strerror(err));
	for (uint32_t i = 0; i < n && !err; i += FILL_PIPE) {
		uint32_t m = n - i < FILL_PIPE ? n - i : FILL_PIPE;
		uint32_t sub = 0, done = 0;

		for (uint32_t j = 0; j < m; j++) {
			key_make_len(k[j], i + j, klen);
			value_make(v[j], i + j, 1);
			req[j] = (struct tdbc_req){
				.op = TDBC_OP_PUT, .table = t, .key = k[j],
				.klen = klen, .val = v[j],
				.vlen = opt.vsize, .flags = flags,
				.expiry = expiry, .user = i + j,
			};
		}
		while (done < m && !err) {
			int r = sub < m ? tdbc_submit(c, req + sub, m - sub) :
				0;

			if (r > 0)
				sub += (uint32_t)r;
			else if (r < 0 && r != -EAGAIN)
				err = r;
			if (err)
				break;
			r = tdbc_reap(c, cqe, FILL_PIPE, sub == m ?
				      sub - done : 1, -1);
			if (r < 0)
				err = r;
			for (int q = 0; q < r && !err; q++)
				err = cqe[q].res;
			done += r > 0 ? (uint32_t)r : 0;
		}
	}
	if (err)
		die("filling table %s: %s: %s", name, tdbc_strerror(err),
		    tdbc_errmsg(c));
	tdbc_table_close(t);
}

static void fill(struct tdbc *c, const char *name, uint32_t n,
		 unsigned int flags, uint64_t expiry)
{
	fill_len(c, name, n, KEY_LEN, flags, expiry);
}

/* --- the GET client ----------------------------------------------------- */
struct sample {
	uint32_t t_us;          /* since the shared base */
	uint32_t ns;            /* the GET's latency */
};
static struct {
	volatile int stop, ready;
	volatile uint32_t n;
	volatile int failed;
	char msg[MSG_LEN];
} *gshared;
static struct sample *gsamp;    /* [SAMPLES], MAP_SHARED */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static __attribute__((noreturn)) void get_loop(double base, unsigned int run)
{
	struct tdbc *c;
	struct tdbc_table *t;
	uint8_t buf[65536];
	uint64_t seed = 0x5eedf00d ^ run;
	char key[KEY_LEN];
	int err;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	c = tdb_connect(o.mapped ? 0 : TDBC_NO_MAP);
	err = tdbc_table_open(c, "other", &t);
	if (err) {
		msgf(gshared->msg, "GET client: opening table other: %s",
		     tdbc_strerror(err));
		gshared->failed = 1;
		_exit(1);
	}
	gshared->ready = 1;
	for (uint64_t k = 0; !gshared->stop; k++) {
		uint32_t i = (uint32_t)(((splitmix64(&seed) >> 32) *
					 (uint64_t)o.other) >> 32);
		size_t need = 0;
		double t0, t1;
		long len;

		key_make(key, i);
		t0 = now();
		len = tdbc_get(t, NULL, key, KEY_LEN, buf, sizeof(buf), &need);
		t1 = now();
		if (len < 0) {
			msgf(gshared->msg, "GET client: get %.16s: %s", key,
			     tdbc_strerror((int)len));
			gshared->failed = 1;
			_exit(1);
		}
		if (value_check(i, buf, (size_t)len, gshared->msg)) {
			gshared->failed = 1;
			_exit(1);
		}
		if (gshared->n < SAMPLES && k % STEP == 0) {
			gsamp[gshared->n] = (struct sample){
				.t_us = (uint32_t)((t0 - base) * 1e6),
				.ns = (uint32_t)((t1 - t0) * 1e9 + 0.5),
			};
			gshared->n++;
		}
	}
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct lat {
	double p50, p99, p999, max, rate;      /* us; GETs/s */
	double n;
};

/* The GETs that started in [from, to) (seconds since base); if the
 * samples ran out, the window ends at the last one. */
static struct lat window(double from, double to, uint32_t *scratch)
{
	uint32_t n = 0, total = gshared->n;
	struct lat l = { 0 };

	if (total >= SAMPLES && gsamp[total - 1].t_us * 1e-6 < to)
		to = gsamp[total - 1].t_us * 1e-6;
	if (to <= from)
		return l;

	for (uint32_t i = 0; i < total; i++) {
		double t = gsamp[i].t_us * 1e-6;

		if (t >= from && t < to)
			scratch[n++] = gsamp[i].ns;
	}
	if (!n)
		return l;
	qsort(scratch, n, sizeof(*scratch), cmp_u32);
	l.n = n;
	l.p50 = scratch[(size_t)(0.50 * (n - 1))] / 1000.0;
	l.p99 = scratch[(size_t)(0.99 * (n - 1))] / 1000.0;
	l.p999 = scratch[(size_t)(0.999 * (n - 1))] / 1000.0;
	l.max = scratch[n - 1] / 1000.0;
	l.rate = (double)n * STEP / (to - from);
	return l;
}

/* --- the sweep ------------------------------------------------------------ */
/* One pass: fill, wait for the deadline, poll until empty. */
struct pass {
	double fill_s, before_s, empty_s;       /* seconds */
	double cpu_before, cpu_sweep;           /* tdbd CPU s in the windows */
	double mem_full, mem_empty, pend_empty, mem_table0; /* bytes */
	double ext_full, ext_empty;             /* extents */
	struct lat lb, ls;                      /* with the GET client */
};

/* A run: a quiet pass (the CPU figures) and one with the GET client (its
 * latencies; its CPU is mostly the GETs'). */
struct sweep_run {
	struct pass q, g;
	double ns_per_rec, raw_ns_per_rec;      /* of the quiet pass */
};

static double fill_estimate;    /* seconds for o.records */

static void calibrate(struct tdbc *c)
{
	uint32_t n = o.records < 50000 ? o.records : 50000;
	double t0;

	table_create(c, "calib", n);
	t0 = now();
	fill(c, "calib", n, 0, 0);
	fill_estimate = (now() - t0) * o.records / n;
	table_drop(c, "calib");
}

static void start_getter(double base, unsigned int run)
{
	memset((void *)gshared, 0, sizeof(*gshared));
	fflush(stdout);
	fflush(stderr);
	getter = fork();
	if (getter < 0)
		die("fork: %s", strerror(errno));
	if (!getter)
		get_loop(base, run);
	while (!gshared->ready && !gshared->failed)
		usleep(1000);
	if (gshared->failed)
		die("%s", gshared->msg);
}

static void stop_getter(void)
{
	int st;

	gshared->stop = 1;
	waitpid(getter, &st, 0);
	getter = 0;
	if (gshared->failed || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the GET client failed: %s", gshared->failed ?
		    gshared->msg : "it died");
}

/* false: the fill ran past the deadline (the table dropped; try again
 * with a longer estimate). */
static bool sweep_pass(struct tdbc *c, unsigned int run, bool gets,
		       struct pass *r, uint32_t *scratch)
{
	struct tdbc_table_stat st;
	struct tdbc_stats s0, s1;
	uint64_t deadline, exp0;
	double t0, t_fe, t_d = 0, t_z = 0, c_fe, c_d = 0, c_z = 0, base;
	double limit;
	int err;

	table_create(c, "exp", o.records);
	table_stat(c, "exp", &st);
	r->mem_table0 = (double)st.bytes_allocated;
	if ((err = tdbc_stats(c, &s0)))
		die("STATS: %s", tdbc_strerror(err));
	exp0 = s0.expired;
	/* One deadline for all: --ttl after the fill's expected end (twice
	 * the estimate and 0.5 s to spare: fills on a busy host vary). */
	deadline = real_ms() + (uint64_t)(fill_estimate * 2000 + 500) + o.ttl;
	t0 = now();
	fill(c, "exp", o.records, TDBC_DEADLINE, deadline);
	t_fe = now();
	r->fill_s = t_fe - t0;
	table_stat(c, "exp", &st);
	if (real_ms() >= deadline) {
		fprintf(stderr, "  the fill took %.1f s, past the deadline "
			"(%.1f s expected): again\n", r->fill_s,
			fill_estimate);
		fill_estimate = r->fill_s * 2;
		table_drop(c, "exp");
		return false;
	}
	fill_estimate = r->fill_s;
	if (st.records != o.records || st.expiring != o.records)
		die("table exp holds %llu records, %llu with a deadline, "
		    "after a fill of %u with one",
		    (unsigned long long)st.records,
		    (unsigned long long)st.expiring, o.records);
	r->mem_full = (double)st.bytes_allocated;
	r->ext_full = st.extents;

	base = now();
	if (gets)
		start_getter(base, run);
	t_fe = now();
	c_fe = proc_cpu(tdbd_pid);
	limit = t_fe + ((double)deadline - (double)real_ms()) / 1000.0 +
		o.max_wait;
	for (;;) {
		double t;

		if (gets && gshared->failed)
			die("%s", gshared->msg);
		usleep(POLL_US);
		table_stat(c, "exp", &st);
		t = now();
		if (!t_d && real_ms() >= deadline) {
			t_d = t;
			c_d = proc_cpu(tdbd_pid);
		}
		if (t_d && !st.records) {
			t_z = t;
			c_z = proc_cpu(tdbd_pid);
			break;
		}
		if (t > limit)
			die("table exp still holds %llu records %.0f s after "
			    "their deadline (--max-wait)",
			    (unsigned long long)st.records, o.max_wait);
	}
	if (gets)
		stop_getter();
	if (c_fe < 0 || c_d < 0 || c_z < 0)
		die("cannot read tdbd's CPU time from /proc/%d/stat",
		    (int)tdbd_pid);
	r->before_s = t_d - t_fe;
	r->empty_s = t_z - t_d;
	r->cpu_before = c_d - c_fe;
	r->cpu_sweep = c_z - c_d;
	if (gets) {
		r->lb = window(t_fe - base, t_d - base, scratch);
		r->ls = window(t_d - base, t_z - base, scratch);
	}

	/* The figures must add up: every record removed by the sweep. */
	if ((err = tdbc_stats(c, &s1)))
		die("STATS: %s", tdbc_strerror(err));
	table_stat(c, "exp", &st);
	if (s1.expired - exp0 != o.records || st.expired != o.records)
		die("the sweep removed %llu records (STATS EXPIRED; the table "
		    "says %llu), not the %u that expired",
		    (unsigned long long)(s1.expired - exp0),
		    (unsigned long long)st.expired, o.records);
	/* The memory a second later (past the grace period). */
	sleep(1);
	table_stat(c, "exp", &st);
	r->mem_empty = (double)st.bytes_allocated;
	r->pend_empty = (double)st.bytes_pending;
	r->ext_empty = st.extents;
	table_drop(c, "exp");
	return true;
}

static void sweep_run(struct tdbc *c, unsigned int run, struct sweep_run *r,
		      uint32_t *scratch)
{
	for (int k = 0; !sweep_pass(c, run, false, &r->q, scratch); k++)
		if (k == 3)
			die("4 fills of %u records ran past their deadline",
			    o.records);
	r->raw_ns_per_rec = r->q.cpu_sweep * 1e9 / o.records;
	r->ns_per_rec = (r->q.cpu_sweep - r->q.cpu_before / r->q.before_s *
			 r->q.empty_s) * 1e9 / o.records;
	for (int k = 0; !sweep_pass(c, run, true, &r->g, scratch); k++)
		if (k == 3)
			die("4 fills of %u records ran past their deadline",
			    o.records);
}

/* The median over n runs of the double at byte offset off. */
static double median(const struct sweep_run *runs, unsigned int n,
		     size_t off)
{
	double v[RUNS_MAX];

	for (unsigned int i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&runs[i] + off, sizeof(double));
	qsort(v, n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MEDIAN(runs, n, f) median(runs, n, offsetof(struct sweep_run, f))

static void part_sweep(void)
{
	struct sweep_run runs[RUNS_MAX];
	uint32_t *scratch = malloc(sizeof(*scratch) * SAMPLES);
	struct tdbc *c = tdb_connect(0);
	unsigned int n = o.runs;
	bool full = false;

	gshared = mmap(NULL, sizeof(*gshared), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	gsamp = mmap(NULL, sizeof(*gsamp) * SAMPLES, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!scratch || gshared == MAP_FAILED || gsamp == MAP_FAILED)
		die("out of memory for the GET samples");
	table_create(c, "other", o.other);
	fill(c, "other", o.other, 0, 0);
	calibrate(c);
	printf("\nthe sweep: %u records of %u B keys and %u B values, one "
	       "deadline --ttl %llu ms after\nthe fill's expected end, no "
	       "reads.  A run is two passes: a quiet one (tdbd's CPU) and\n"
	       "one where a client GETs random keys of a table of %u "
	       "without a TTL (%s)\nfrom the fill's end on (its latency%s); "
	       "%u run%s, medians\n", o.records, KEY_LEN, opt.vsize,
	       (unsigned long long)o.ttl, o.other,
	       o.mapped ? "mapped gets" : "through the rings, TDBC_NO_MAP",
	       o.mapped ? ", every 16th timed" : "", o.runs,
	       o.runs == 1 ? "" : "s");
	fflush(stdout);
	for (unsigned int i = 0; i < n; i++) {
		struct sweep_run *r = &runs[i];

		sweep_run(c, i, r, scratch);
		full |= gshared->n >= SAMPLES;
		fprintf(stderr, "  run %u: fill %.2f s; empty %.3f s after the "
			"deadline (%.3f s with GETs); tdbd CPU %.3f s in the "
			"sweep, %.3f s in the %.2f s before; %.0f ns per "
			"record; GET p99 %.1f -> %.1f us, max %.0f -> %.0f "
			"us\n", i + 1, r->q.fill_s, r->q.empty_s,
			r->g.empty_s, r->q.cpu_sweep, r->q.cpu_before,
			r->q.before_s, r->ns_per_rec, r->g.lb.p99,
			r->g.ls.p99, r->g.lb.max, r->g.ls.max);
	}
	printf("  fill                     %.2f s (%.0f records/s)\n",
	       MEDIAN(runs, n, q.fill_s),
	       o.records / MEDIAN(runs, n, q.fill_s));
	printf("  time to empty            %.3f s from the deadline to "
	       "RECORDS 0 (%.3f s with the GETs;\n"
	       "                           polled every %u ms): %.0f "
	       "records/s\n", MEDIAN(runs, n, q.empty_s),
	       MEDIAN(runs, n, g.empty_s), POLL_US / 1000,
	       o.records / MEDIAN(runs, n, q.empty_s));
	printf("  tdbd CPU                 %.3f s from the deadline to "
	       "empty; %.3f s in the %.2f s\n"
	       "                           from the fill's end to the "
	       "deadline (full table, nothing expired)\n",
	       MEDIAN(runs, n, q.cpu_sweep), MEDIAN(runs, n, q.cpu_before),
	       MEDIAN(runs, n, q.before_s));
	printf("  CPU per expired record   %.0f ns (less the window before's "
	       "rate; %.0f ns without)\n",
	       MEDIAN(runs, n, ns_per_rec), MEDIAN(runs, n, raw_ns_per_rec));
	printf("  table memory             full: %.1f MiB allocated, %.0f "
	       "extents; 1 s after empty: %.2f MiB\n"
	       "                           allocated, %.2f MiB pending, "
	       "%.0f extents (new table: %.2f MiB)\n",
	       MEDIAN(runs, n, q.mem_full) / 1048576,
	       MEDIAN(runs, n, q.ext_full),
	       MEDIAN(runs, n, q.mem_empty) / 1048576,
	       MEDIAN(runs, n, q.pend_empty) / 1048576,
	       MEDIAN(runs, n, q.ext_empty),
	       MEDIAN(runs, n, q.mem_table0) / 1048576);
	printf("  GETs of the other table  %-22s %-22s\n",
	       "before (full table)", "during the sweep");
	printf("    GETs/s                 %-22.0f %-22.0f\n",
	       MEDIAN(runs, n, g.lb.rate), MEDIAN(runs, n, g.ls.rate));
	printf("    p50 us                 %-22.2f %-22.2f\n",
	       MEDIAN(runs, n, g.lb.p50), MEDIAN(runs, n, g.ls.p50));
	printf("    p99 us                 %-22.2f %-22.2f\n",
	       MEDIAN(runs, n, g.lb.p99), MEDIAN(runs, n, g.ls.p99));
	printf("    p99.9 us               %-22.2f %-22.2f\n",
	       MEDIAN(runs, n, g.lb.p999), MEDIAN(runs, n, g.ls.p999));
	printf("    max us                 %-22.0f %-22.0f\n",
	       MEDIAN(runs, n, g.lb.max), MEDIAN(runs, n, g.ls.max));
	if (full)
		printf("    (the GET client kept its first %u samples: the "
		       "windows end at the last one)\n", SAMPLES);
	table_drop(c, "other");
	tdbc_close(c);
	free(scratch);
}

/* --- Redis (memory) ---------------------------------------------------- */
struct rconn {
	int fd;
	char *buf;
	size_t len, pos, cap;
};

static void r_write(struct rconn *r, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(r->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("Redis: write: %s", w ? strerror(errno) :
			    "nothing written");
		p += w;
		n -= (size_t)w;
	}
}

static void r_fill(struct rconn *r)
{
	ssize_t n;

	if (r->pos == r->len)
		r->pos = r->len = 0;
	if (r->len == r->cap) {
		r->cap *= 2;
		r->buf = realloc(r->buf, r->cap);
		if (!r->buf)
			die("out of memory for Redis's replies");
	}
	while ((n = read(r->fd, r->buf + r->len, r->cap - r->len)) < 0 &&
	       errno == EINTR)
		;
	if (n <= 0)
		die("Redis: read: %s", n ? strerror(errno) :
		    "the server closed the connection");
	r->len += (size_t)n;
}

/* One reply; a bulk string's bytes in *out (malloc'd, NUL ended) if out
 * is not NULL.  An error reply is fatal (its text). */
static void r_reply(struct rconn *r, char **out)
{
	char *e;
	long n;

	while (!(e = memchr(r->buf + r->pos, '\n', r->len - r->pos)))
		r_fill(r);
	if (r->buf[r->pos] == '-')
		die("Redis: %.*s", (int)(e - r->buf - r->pos - 2),
		    r->buf + r->pos + 1);
	if (r->buf[r->pos] != '$') {
		r->pos = (size_t)(e + 1 - r->buf);
		return;
	}
	n = strtol(r->buf + r->pos + 1, NULL, 10);
	r->pos = (size_t)(e + 1 - r->buf);
	if (n < 0)
		return;
	while (r->len - r->pos < (size_t)n + 2)
		r_fill(r);
	if (out) {
		*out = malloc((size_t)n + 1);
		if (!*out)
			die("out of memory");
		memcpy(*out, r->buf + r->pos, (size_t)n);
		(*out)[n] = 0;
	}
	r->pos += (size_t)n + 2;
}

/* A command of argc strings, its reply. */
static void r_cmd(struct rconn *r, char **out, int argc, ...)
{
	char b[512];
	va_list ap;
	int n = snprintf(b, sizeof(b), "*%d\r\n", argc);

	va_start(ap, argc);
	for (int i = 0; i < argc; i++) {
		const char *a = va_arg(ap, const char *);

		n += snprintf(b + n, sizeof(b) - (size_t)n, "$%zu\r\n%s\r\n",
			      strlen(a), a);
	}
	va_end(ap);
	r_write(r, b, (size_t)n);
	r_reply(r, out);
}

static double used_memory(struct rconn *r)
{
	char *info = NULL, *p;
	double v = -1;

	r_cmd(r, &info, 2, "INFO", "memory");
	p = info ? strstr(info, "used_memory:") : NULL;
	if (p)
		v = strtod(p + 12, NULL);
	free(info);
	if (v < 0)
		die("Redis: no used_memory in INFO memory");
	return v;
}

/* Records 0..n-1 with SET (PX ttl if not 0), pipelined by 1000. */
static void r_load(struct rconn *r, uint32_t n, uint64_t ttl)
{
	size_t cap = 1000 * (200 + (size_t)opt.vsize), len;
	char *b = malloc(cap);
	uint8_t v[65536];
	char k[KEY_MAX + 1], ms[24];

	if (!b)
		die("out of memory");
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)ttl);
	for (uint32_t i = 0; i < n; i += 1000) {
		uint32_t m = n - i < 1000 ? n - i : 1000;

		len = 0;
		for (uint32_t j = 0; j < m; j++) {
			key_make_len(k, i + j, o.mem_klen);
			value_make(v, i + j, 1);
			len += (size_t)snprintf(b + len, cap - len,
				"*%d\r\n$3\r\nSET\r\n$%u\r\n%.*s\r\n$%u\r\n",
				ttl ? 5 : 3, o.mem_klen, (int)o.mem_klen, k,
				opt.vsize);
			memcpy(b + len, v, opt.vsize);
			len += opt.vsize;
			len += (size_t)snprintf(b + len, cap - len, "\r\n");
			if (ttl)
				len += (size_t)snprintf(b + len, cap - len,
					"$2\r\nPX\r\n$%zu\r\n%s\r\n",
					strlen(ms), ms);
		}
		r_write(r, b, len);
		for (uint32_t j = 0; j < m; j++)
			r_reply(r, NULL);
	}
	free(b);
}

/* redis-server on a socket in the temp dir; false if there is none. */
static bool redis_start(struct rconn *r)
{
	char bin[4096], dir[4200], msg[MSG_LEN] = "", *ver = NULL, *p;
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	if (o.redis_bin)
		snprintf(bin, sizeof(bin), "%s", o.redis_bin);
	else if (!find_in_path("redis-server", bin, sizeof(bin)))
		return false;
	snprintf(dir, sizeof(dir), "%s/redis", tmp);
	if ((size_t)snprintf(rsock, sizeof(rsock), "%s/redis.sock", tmp) >=
	    sizeof(rsock))
		die("socket path under %s is too long", tmp);
	snprintf(rlog, sizeof(rlog), "%s/redis.log", tmp);
	if (mkdir(dir, 0700))
		die("mkdir %s: %s", dir, strerror(errno));
	{
		const char *argv[] = {
			bin, "--port", "0", "--unixsocket", rsock,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--daemonize", "no",
			"--dir", dir, NULL,
		};

		redis_pid = spawn(argv, rlog, msg);
	}
	if (redis_pid < 0) {
		redis_pid = 0;
		die("cannot start %s: %s", bin, msg);
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", rsock);
	r->fd = -1;
	for (int i = 0; i < 1000 && r->fd < 0; i++) {
		if (exited(redis_pid, msg)) {
			redis_pid = 0;
			log_tail(rlog, msg, sizeof(msg));
			die("redis-server %s", msg);
		}
		r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (r->fd >= 0 && connect(r->fd, (struct sockaddr *)&a,
					  sizeof(a))) {
			close(r->fd);
			r->fd = -1;
			usleep(10000);
		}
	}
	if (r->fd < 0)
		die("redis-server did not open %s in 10 s", rsock);
	r->cap = 1 << 16;
	r->buf = malloc(r->cap);
	if (!r->buf)
		die("out of memory");
	r_cmd(r, &ver, 2, "INFO", "server");
	p = ver ? strstr(ver, "redis_version:") : NULL;
	printf("  Redis     %s %.*s on a Unix socket, no persistence\n", bin,
	       p ? (int)strcspn(p + 14, "\r\n") : 0, p ? p + 14 : "");
	free(ver);
	return true;
}

/* --- memory per record ---------------------------------------------------- */
/* tdb: bytes_allocated less the empty table's, per record; extents. */
static void tdb_mem(struct tdbc *c, uint64_t ttl, double *per, double *ext)
{
	struct tdbc_table_stat st0, st;

	table_create(c, "mem", o.mem_records);
	table_stat(c, "mem", &st0);
	fill_len(c, "mem", o.mem_records, o.mem_klen, ttl ? TDBC_TTL : 0, ttl);
	table_stat(c, "mem", &st);
	if (st.records != o.mem_records ||
	    st.expiring != (ttl ? o.mem_records : 0))
		die("table mem holds %llu records, %llu with a deadline, "
		    "after %u puts %s a TTL", (unsigned long long)st.records,
		    (unsigned long long)st.expiring, o.mem_records,
		    ttl ? "with" : "without");
	*per = (double)(st.bytes_allocated - st0.bytes_allocated) /
		o.mem_records;
	*ext = st.extents * (double)EXTENT / o.mem_records;
	table_drop(c, "mem");
}

static double redis_mem(struct rconn *r, uint64_t ttl)
{
	double m0, m1;

	r_cmd(r, NULL, 2, "FLUSHALL", "SYNC");
	m0 = used_memory(r);
	r_load(r, o.mem_records, ttl);
	m1 = used_memory(r);
	r_cmd(r, NULL, 2, "FLUSHALL", "SYNC");
	return (m1 - m0) / o.mem_records;
}

static void part_memory(void)
{
	struct tdbc *c = tdb_connect(0);
	struct rconn r = { .fd = -1 };
	double t_ttl, t_no, e_ttl, e_no, r_ttl = 0, r_no = 0;
	bool have_redis = o.redis && redis_start(&r);

	if (o.redis && !have_redis) {
		printf("  Redis     skipped: no redis-server in $PATH (--redis "
		       "PATH)\n");
		if (o.strict) {
			cleanup();
			exit(77);
		}
	}
	tdb_mem(c, 0, &t_no, &e_no);
	tdb_mem(c, MEM_TTL, &t_ttl, &e_ttl);
	if (have_redis) {
		r_no = redis_mem(&r, 0);
		r_ttl = redis_mem(&r, MEM_TTL);
	}
	printf("\nmemory per record: %u records, %u B keys (\"key%%0%uu\"), "
	       "%u B values; TTL 1 h\n", o.mem_records, o.mem_klen,
	       o.mem_klen - 3, opt.vsize);
	printf("  %-34s %10s %10s %10s\n", "B per record", "no TTL",
	       "TTL", "TTL - no");
	printf("  %-34s %10.1f %10.1f %10.1f\n",
	       "tdb bytes_allocated (rec + index)", t_no, t_ttl, t_ttl - t_no);
	printf("  %-34s %10.1f %10.1f %10.1f\n", "tdb extents x 2 MiB", e_no,
	       e_ttl, e_ttl - e_no);
	if (have_redis) {
		printf("  %-34s %10.1f %10.1f %10.1f\n",
		       "Redis used_memory (SET / SET PX)", r_no, r_ttl,
		       r_ttl - r_no);
		printf("  %-34s %10.2fx %9.2fx\n", "tdb allocated / Redis",
		       t_no / r_no, t_ttl / r_ttl);
		printf("  %-34s %10.2fx %9.2fx\n", "tdb extents / Redis",
		       e_no / r_no, e_ttl / r_ttl);
		r_cmd(&r, NULL, 1, "PING");
		close(r.fd);
		free(r.buf);
	}
	tdbc_close(c);
}

/* --- options and main ---------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-expire [options]\n"
"What expiry costs tdbd: records that all expire at once removed by the\n"
"sweep with no reads (CPU per record, time to empty, another client's GET\n"
"latency before and during), and memory per record with a TTL and\n"
"without, against Redis's SET PX.  docs/BENCHMARKS.md section 13.\n"
"\n"
"  -n, --records N      records that expire (default 1000000)\n"
"  -l, --ttl MS         their deadline: MS after the fill's expected end\n"
"                       (default 1000)\n"
"  -k, --other-keys N   keys of the table the GET client reads (10000)\n"
"  -M, --mem-records N  records for memory per record (default --records)\n"
"  -K, --mem-key-len L  their keys' length, 16..64 (default 16)\n"
"  -r, --runs R         runs of the sweep; medians (default 3)\n"
"  -w, --max-wait S     fail if the table is not empty S s after the\n"
"                       deadline (default 60 + 1 s per 20000 records)\n"
"  -m, --mapped         the GET client reads through the map (default:\n"
"                       through the rings, TDBC_NO_MAP)\n"
"  -P, --part LIST      sweep,memory (default both)\n"
"  -T, --tdbd PATH      the tdbd to start (default $TDBD, the build tree's)\n"
"  -R, --redis PATH     the redis-server to start (default from $PATH)\n"
"      --no-redis       tdb alone\n"
"  -d, --dir DIR        where the temp dir goes (default $TMPDIR or /tmp)\n"
"  -S, --strict         exit 77 if tdbd or redis-server is missing\n"
"  -h, --help           this text\n");
}

static uint64_t num(const char *s, const char *what, uint64_t min,
		    uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && (*end == 'k' || *end == 'K'))
		v *= 1000, end++;
	else if (end != s && (*end == 'm' || *end == 'M'))
		v *= 1000000, end++;
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "tdb-bench-expire: bad %s '%s' (%" PRIu64
			"..%" PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static void parse_parts(const char *s)
{
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	o.sweep = o.memory = false;
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "sweep"))
			o.sweep = true;
		else if (!strcmp(t, "memory"))
			o.memory = true;
		else {
			fprintf(stderr, "tdb-bench-expire: unknown part '%s' "
				"(sweep, memory)\n", t);
			exit(2);
		}
	}
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "records", required_argument, NULL, 'n' },
		{ "ttl", required_argument, NULL, 'l' },
		{ "other-keys", required_argument, NULL, 'k' },
		{ "mem-records", required_argument, NULL, 'M' },
		{ "mem-key-len", required_argument, NULL, 'K' },
		{ "runs", required_argument, NULL, 'r' },
		{ "max-wait", required_argument, NULL, 'w' },
		{ "mapped", no_argument, NULL, 'm' },
		{ "part", required_argument, NULL, 'P' },
		{ "tdbd", required_argument, NULL, 'T' },
		{ "redis", required_argument, NULL, 'R' },
		{ "no-redis", no_argument, NULL, 'N' },
		{ "dir", required_argument, NULL, 'd' },
		{ "strict", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "n:l:k:M:K:r:w:mP:T:R:d:Sh", lo,
				 NULL)) != -1) {
		switch (ch) {
		case 'n':
			o.records = num(optarg, "record count", 1, 50000000);
			break;
		case 'l':
			o.ttl = num(optarg, "TTL in ms", 1, 3600000);
			break;
		case 'k':
			o.other = num(optarg, "key count", 1, 10000000);
			break;
		case 'M':
			o.mem_records = num(optarg, "record count", 1,
					    50000000);
			break;
		case 'K':
			o.mem_klen = num(optarg, "key length", KEY_LEN,
					 KEY_MAX);
			break;
		case 'r':
			o.runs = num(optarg, "run count", 1, RUNS_MAX);
			break;
		case 'w':
			o.max_wait = num(optarg, "wait in seconds", 1, 86400);
			break;
		case 'm': o.mapped = true; break;
		case 'P': parse_parts(optarg); break;
		case 'T': o.tdbd = optarg; break;
		case 'R': o.redis_bin = optarg; break;
		case 'N': o.redis = false; break;
		case 'd': o.dir = optarg; break;
		case 'S': o.strict = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench-expire: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (!o.mem_records)
		o.mem_records = o.records;
	if (!o.max_wait)
		o.max_wait = 60 + o.records / 20000.0;
}

static void header(void)
{
	double load[3] = { -1, -1, -1 };
	char cpu[256] = "?";
	FILE *f = fopen("/proc/cpuinfo", "r");
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);

	if (f) {
		char line[512];

		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10) &&
			    strchr(line, ':')) {
				snprintf(cpu, sizeof(cpu), "%s",
					 strchr(line, ':') + 2);
				cpu[strcspn(cpu, "\n")] = 0;
				break;
			}
		fclose(f);
	}
	getloadavg(load, 3);
	printf("tdb-bench-expire: the sweep's cost and memory per record "
	       "with a TTL\n");
	printf("  machine   %s, %ld CPUs online, load average %.2f %.2f "
	       "%.2f at the start\n", cpu, nproc, load[0], load[1], load[2]);
#ifndef __OPTIMIZE__
	printf("  build     NOT optimised: the figures mean little\n");
#endif
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *base;

	parse_args(argc, argv);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	base = o.dir ? o.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/tdb-bench-expire.XXXXXX",
			     base) >= sizeof(tmp) - 64)
		die("--dir is too long");
	if (!mkdtemp(tmp)) {
		int e = errno;

		tmp[0] = 0;
		die("cannot make a directory under %s: %s", base, strerror(e));
	}
	header();
	tdbd_start();
	if (o.sweep)
		part_sweep();
	if (o.memory)
		part_memory();
	{
		double load[3] = { -1, -1, -1 };

		getloadavg(load, 3);
		printf("\nload average %.2f %.2f %.2f at the end\n", load[0],
		       load[1], load[2]);
	}
	cleanup();
	return 0;
}
