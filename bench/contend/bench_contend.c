// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_contend.c - tdb-bench-contend: read-modify-write under contention
 * and what validating a transaction's reads costs (issue 24).
 *
 * Part 1, contended increments (--only incr).  P client processes
 * (--procs, default 1 and 8) add 1 to counters for --seconds each:
 * either all to ONE key, or to one of --keys (default 1,000) keys chosen
 * by a zipfian distribution with YCSB's constant 0.99 (the generator of
 * YCSB's ZipfianGenerator, after Gray et al., "Quickly Generating
 * Billion-Record Synthetic Databases", SIGMOD 1994; key 0 is the
 * hottest).  Every process draws its keys from a fixed-seed stream of
 * its own, the same stream for every system.  The ways of incrementing:
 *
 *   tdb   tdbc_incr                 the owner adds (one blocking call)
 *   tdb   tdbc_submit B INCRs       B TDBC_OP_INCR per publish, all reaped
 *   tdb   tdbc_txn_run get+put      a transaction: tdbc_get, tdbc_put of
 *                                   the value + 1, commit; tdbc_txn_run
 *                                   retries on -ESTALE with its backoff
 *   tdb   CAS get_ver+put_if        tdbc_get_ver (the map), tdbc_put_if
 *                                   with TDBC_IF_VERSION; again on
 *                                   -ECANCELED, at once
 *   Redis INCR                      one request, one reply (unpipelined)
 *   Redis INCR pipelined by B       B INCRs written at once, B replies
 *   Redis WATCH/GET/MULTI/SET/EXEC  WATCH k + GET k in one write (two
 *                                   replies), then MULTI, SET k v+1, EXEC
 *                                   in one write; again when EXEC says
 *                                   nil (a watched key changed)
 *   LMDB  write txn get+put         mdb_txn_begin, mdb_get, mdb_put,
 *                                   mdb_txn_commit: one per increment
 *
 * Values are signed decimal text ("0", "41"), the encoding of tdb's INCR
 * and Redis's.  Before each cell the counters are set to "0"
 * (unmeasured); each process counts, per key, the increments that
 * succeeded; after the cell every counter is read back and must equal
 * the sum of those counts: otherwise FAIL is printed for the cell, and
 * the program exits 1 at the end.
 *
 * Durability, like with like: tdbd runs with --sync none (each change is
 * written to the WAL, not synced), LMDB with MDB_NOSYNC (the commit
 * writes the map, no msync), Redis without persistence (--save ""
 * --appendonly no: nothing is written).
 *
 * Part 2, uncontended transactions (--only txn).  One process (this
 * one), one connection, a table of --txn-keys keys (16 B, 100 B
 * values), transactions of k distinct keys (--txn-k, default 1 and 8;
 * the keys walk a random permutation, no two transactions in a row
 * share one):
 *   put   tdbc_txn_begin, k tdbc_put, tdbc_txn_commit (no reads)
 *   rw    tdbc_txn_begin, k tdbc_get, k tdbc_put of the same keys, commit
 *         (with issue 24: the k reads are validated at commit)
 *   ro    tdbc_txn_begin, k tdbc_get, commit (a read-only transaction)
 * txn/s and p50/p99 of a whole transaction, for --seconds each.  The
 * part uses only calls that predate issue 24, so this file also builds
 * against a tree from before it (the code of part 1 is left out there:
 * TDBC_IF_VERSION undefined) and the same transactions can be timed on
 * both: what validation costs is the "rw" and "ro" times now over then.
 *
 * Both parts: medians over --runs runs; the order of the ways rotates
 * between runs.  tdbd and redis-server are started on Unix sockets in a
 * temp dir, with the LMDB environment; they die with the benchmark.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>
#include <tdb/client.h>

#include "../common/machine.h"
#include "../common/proc.h"

#ifdef TDBC_IF_VERSION
/* The calls of issue 24.  Weak: this program links and runs against a
 * libtdbclient that declares them before it defines them (the ways that
 * need a missing one are reported as not available). */
#define HAVE_V24 1
#pragma weak tdbc_incr
#pragma weak tdbc_put_if
#pragma weak tdbc_get_ver
#pragma weak tdbc_txn_run
#define TXN_RUN_TRIES TDBC_TXN_RUN_TRIES
#else
#define HAVE_V24 0
#define TXN_RUN_TRIES 0
#endif

#define KEY_LEN      16u
#define PROCS_MAX    64u
#define RUNS_MAX     15u
#define PIPE_MAX     256u
#define KEYS_MAX     100000u
#define TXN_K_MAX    64u
#define SAMPLES_MAX  100000u        /* latency samples per process */
#define MSG_LEN      512u
#define NUM_LEN      24u            /* a decimal s64 and a NUL */
#define TXN_VLEN     100u
#define TABLE_CTR    "contend"
#define TABLE_TXN    "txn"
#define SEED         0x24c0ffee5eed1234ull
#define ZIPF_THETA   0.99           /* YCSB's ZIPFIAN_CONSTANT */

/* --- options --------------------------------------------------------- */
static struct {
	unsigned int procs[8], nprocs;
	uint32_t keys;                  /* zipf keys */
	unsigned int pipe;              /* B of the pipelined ways */
	double seconds;                 /* per cell */
	unsigned int runs;
	uint32_t txn_keys;
	unsigned int txn_k[8], ntxn_k;
	bool part_incr, part_txn;
	const char *only_sys;           /* tdb,redis,lmdb */
	const char *dir, *tdbd, *redis;
	const char *tdbd_args[16];
	unsigned int ntdbd_args;
	bool strict, verbose;
	double quiet_pct, quiet_wait;   /* --quiet, --quiet-wait */
} opt = {
	.procs = { 1, 8 }, .nprocs = 2, .keys = 1000, .pipe = 32,
	.seconds = 2, .runs = 3, .txn_keys = 100000,
	.txn_k = { 1, 8 }, .ntxn_k = 2, .part_incr = true, .part_txn = true,
	.quiet_pct = 20, .quiet_wait = 10,
};

static char tmpdir[4096];
static volatile sig_atomic_t interrupted;
static bool failed_verify;

/* --- small helpers ------------------------------------------------------ */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return tv(ru.ru_utime) + tv(ru.ru_stime);
}

static __attribute__((format(printf, 2, 3)))
void msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_LEN, fmt, ap);
	va_end(ap);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
	return (double)(splitmix64(s) >> 11) * 0x1.0p-53;
}

/* Counter key i: "ctr" and i in 13 digits (16 bytes, no NUL). */
static void ctr_key(char *k, uint32_t i)
{
	char b[32];

	snprintf(b, sizeof(b), "ctr%013" PRIu32, i);
	memcpy(k, b, KEY_LEN);
}

static void txn_key(char *k, uint32_t i)
{
	char b[32];

	snprintf(b, sizeof(b), "txn%013" PRIu32, i);
	memcpy(k, b, KEY_LEN);
}

/* A decimal value (not NUL-terminated, len bytes) -> *v; -1 if not one. */
static int parse_num(const void *p, size_t len, int64_t *v)
{
	char b[NUM_LEN], *end;

	if (!len || len >= sizeof(b))
		return -1;
	memcpy(b, p, len);
	b[len] = 0;
	errno = 0;
	*v = strtoll(b, &end, 10);
	return errno || *end ? -1 : 0;
}

/* --- the zipfian generator (YCSB's ZipfianGenerator) -------------------
 * items 0..n-1, P(i) proportional to 1/(i+1)^theta; zeta(n) summed once. */
struct zipf {
	uint32_t n;
	double theta, alpha, zetan, eta, half_pow_theta;
};

static void zipf_init(struct zipf *z, uint32_t n, double theta)
{
	double zeta2 = 1 + pow(0.5, theta);

	z->n = n;
	z->theta = theta;
	z->zetan = 0;
	for (uint32_t i = 1; i <= n; i++)
		z->zetan += 1 / pow((double)i, theta);
	z->alpha = 1 / (1 - theta);
	z->eta = (1 - pow(2.0 / n, 1 - theta)) / (1 - zeta2 / z->zetan);
	z->half_pow_theta = pow(0.5, theta);
}

static uint32_t zipf_next(const struct zipf *z, uint64_t *s)
{
	double u = uniform01(s), uz = u * z->zetan;
	uint64_t i;

	if (z->n == 1 || uz < 1)
		return 0;
	if (uz < 1 + z->half_pow_theta)
		return 1;
	i = (uint64_t)((double)z->n *
		       pow(z->eta * u - z->eta + 1, z->alpha));
	return i >= z->n ? z->n - 1 : (uint32_t)i;
}

static struct zipf zipf;

/* --- children: servers and workers -------------------------------------- */
static pid_t workers[PROCS_MAX];

/* The servers (bench/common/proc.c), with this program's messages. */
static pid_t spawn(const char *const argv[], const char *logpath, char *msg)
{
	return bench_spawn(argv, logpath, msg, MSG_LEN);
}

static bool exited(pid_t pid, char *msg)
{
	return bench_exited(pid, msg, MSG_LEN);
}

static int stop_server(pid_t pid)
{
	return bench_stop_server(pid);
}

/* 0 for no server or an unknown figure: the sum is what others took. */
static double proc_cpu(pid_t pid)
{
	double c = pid > 0 ? bench_proc_cpu(pid) : 0;

	return c < 0 ? 0 : c;
}

/* The servers' CPU time (they count as "others" in cpu_others). */
static double servers_cpu(void);

/* The share of the CPUs others used between a and b (servers' time
 * srv0 -> srv1 taken out); -1 if unknown. */
static double others(const struct cpu_sample *a, const struct cpu_sample *b,
		     double srv0, double srv1)
{
	double steal, o = cpu_others(a, b, &steal);

	if (o < 0 || b->total <= a->total)
		return -1;
	o -= (srv1 - srv0) / (b->total - a->total);
	return o < 0 ? 0 : o;
}

/* --quiet: wait (up to --quiet-wait s) for a quarter second in which
 * other processes used less than --quiet % of the CPUs. */
static void wait_quiet(void)
{
	double end = 0;

	if (opt.quiet_wait <= 0)
		return;
	for (;;) {
		struct cpu_sample a, b;
		double s0 = servers_cpu(), o, t;

		cpu_sample(&a);
		usleep(250000);
		cpu_sample(&b);
		o = others(&a, &b, s0, servers_cpu());
		t = b.total;
		(void)t;
		if (o < 0 || o * 100 < opt.quiet_pct)
			return;
		if (!end)
			end = (double)time(NULL) + opt.quiet_wait;
		else if ((double)time(NULL) >= end)
			return;
	}
}

static const char *find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/usr/bin",
		 path && *path ? path : "/usr/local/bin");
	for (char *s = NULL, *d = strtok_r(dirs, ":", &s); d;
	     d = strtok_r(NULL, ":", &s)) {
		if ((size_t)snprintf(buf, len, "%s/%s", *d ? d : ".", name) >=
		    len)
			continue;
		if (!access(buf, X_OK))
			return buf;
	}
	return NULL;
}

/* --- systems ------------------------------------------------------------ */
enum sysid { SYS_TDB, SYS_REDIS, SYS_LMDB, SYS_N };
static const char *const sys_name[SYS_N] = { "tdb", "Redis", "LMDB" };

static struct {
	int state;                      /* 0 up, 1 absent/not asked, -1 failed */
	char why[MSG_LEN];
	pid_t pid;                      /* server */
	char log[4200];
} sys[SYS_N];

static void cleanup(void);

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-contend: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGKILL);
	cleanup();
	exit(1);
}

/* --- tdb ------------------------------------------------------------------ */
static struct {
	char bin[PATH_MAX], sock[108], data[4200];
	struct tdbc *c;                 /* the driver's connection */
	struct tdbc_table *ctr, *txn;
} tdb;

static bool runnable(const char *p)
{
	return p && *p && !access(p, X_OK);
}

static const char *find_tdbd(void)
{
	char self[PATH_MAX];
	ssize_t n;

	if (opt.tdbd)
		return opt.tdbd;
	if (runnable(getenv("TDBD")))
		return getenv("TDBD");
#ifdef TDB_BENCH_TDBD
	if (runnable(TDB_BENCH_TDBD))
		return TDB_BENCH_TDBD;
#endif
	/* <build>/bench/contend/tdb-bench-contend, <build>/src/daemon/tdbd */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(tdb.bin, sizeof(tdb.bin), "%s/../../src/daemon/tdbd",
			 dirname(self));
		if (runnable(tdb.bin))
			return tdb.bin;
	}
	return NULL;
}

static int tdb_fail(char *msg, struct tdbc *c, const char *what, long err)
{
	msgf(msg, "tdb %s: %s%s%s", what, tdbc_strerror((int)err),
	     c && *tdbc_errmsg(c) ? ": " : "", c ? tdbc_errmsg(c) : "");
	return -1;
}

/* n puts on t through tdbc_submit, 256 at a time: key(i), val(i). */
static int tdb_put_many(struct tdbc *c, struct tdbc_table *t, uint32_t n,
			void (*key)(char *, uint32_t),
			size_t (*val)(uint8_t *, uint32_t), char *msg)
{
	static struct tdbc_req req[256];
	static struct tdbc_cqe cqe[256];
	static char kb[256][KEY_LEN];
	static uint8_t vb[256][TXN_VLEN];

	for (uint32_t i = 0; i < n; i += 256) {
		uint32_t m = n - i < 256 ? n - i : 256, sub = 0, done = 0;

		for (uint32_t j = 0; j < m; j++) {
			key(kb[j], i + j);
			req[j] = (struct tdbc_req){
				.op = TDBC_OP_PUT, .table = t, .key = kb[j],
				.klen = KEY_LEN, .val = vb[j],
				.vlen = val(vb[j], i + j), .user = j,
			};
		}
		while (done < m) {
			int r = sub < m ? tdbc_submit(c, req + sub, m - sub) :
				0;

			if (r > 0)
				sub += (uint32_t)r;
			else if (r < 0 && r != -EAGAIN)
				return tdb_fail(msg, c, "submit", r);
			r = tdbc_reap(c, cqe, 256, sub == m ? sub - done : 1,
				      -1);
			if (r < 0)
				return tdb_fail(msg, c, "reap", r);
			for (int k = 0; k < r; k++)
				if (cqe[k].res)
					return tdb_fail(msg, c, "put",
							cqe[k].res);
			done += (uint32_t)r;
		}
	}
	return 0;
}

static size_t val_zero(uint8_t *v, uint32_t i)
{
	(void)i;
	v[0] = '0';
	return 1;
}

/* Part 2's values: the index, a generation, fill. */
static size_t val_txn(uint8_t *v, uint32_t i)
{
	uint64_t w[2] = { i, 1 };

	memcpy(v, w, sizeof(w));
	memset(v + sizeof(w), 0x5a, TXN_VLEN - sizeof(w));
	return TXN_VLEN;
}

static int tdb_start(char *msg)
{
	const char *bin = find_tdbd();
	const char *argv[40];
	struct tdbc_table_opts to;
	char why[MSG_LEN] = "";
	unsigned int a = 0;
	int err = -1;

	if (!bin) {
		msgf(msg, "no tdbd (give --tdbd PATH or set $TDBD)");
		return 1;
	}
	if (bin != tdb.bin)
		snprintf(tdb.bin, sizeof(tdb.bin), "%s", bin);
	if ((size_t)snprintf(tdb.sock, sizeof(tdb.sock), "%s/tdbd.sock",
			     tmpdir) >= sizeof(tdb.sock)) {
		msgf(msg, "socket path under %s is too long", tmpdir);
		return -1;
	}
	snprintf(sys[SYS_TDB].log, sizeof(sys[SYS_TDB].log), "%s/tdbd.log",
		 tmpdir);
	snprintf(tdb.data, sizeof(tdb.data), "%s/tdbd.data", tmpdir);
	/* --config /dev/null: this machine's tdbd.conf changes nothing;
	 * --sync none: like LMDB's MDB_NOSYNC and Redis without
	 * persistence; --tdbd-arg comes last and wins. */
	argv[a++] = tdb.bin;
	argv[a++] = "--config";
	argv[a++] = "/dev/null";
	argv[a++] = "--sync";
	argv[a++] = "none";
	argv[a++] = "--socket";
	argv[a++] = tdb.sock;
	argv[a++] = "--data-dir";
	argv[a++] = tdb.data;
	for (unsigned int i = 0; i < opt.ntdbd_args; i++)
		argv[a++] = opt.tdbd_args[i];
	argv[a] = NULL;
	sys[SYS_TDB].pid = spawn(argv, sys[SYS_TDB].log, msg);
	if (sys[SYS_TDB].pid < 0) {
		sys[SYS_TDB].pid = 0;
		return -1;
	}
	for (int i = 0; i < 2000; i++) {
		if (exited(sys[SYS_TDB].pid, why)) {
			sys[SYS_TDB].pid = 0;
			msgf(msg, "tdbd %s (log %s)", why, sys[SYS_TDB].log);
			return -1;
		}
		if (!tdbc_connect(&tdb.c, tdb.sock, 0, why, sizeof(why)))
			break;
		tdb.c = NULL;
		usleep(10000);
	}
	if (!tdb.c) {
		msgf(msg, "tdbd did not accept on %s: %s", tdb.sock, why);
		return -1;
	}
	if (!tdbc_uses_rings(tdb.c)) {
		msgf(msg, "tdbd gave no rings (log %s)", sys[SYS_TDB].log);
		return -1;
	}
	tdbc_table_opts_init(&to);
	to.max_extents = 1024;
	if ((err = tdbc_table_create(tdb.c, TABLE_CTR, &to)) ||
	    (err = tdbc_table_create(tdb.c, TABLE_TXN, &to)))
		return tdb_fail(msg, tdb.c, "table create", err);
	if ((err = tdbc_table_open(tdb.c, TABLE_CTR, &tdb.ctr)) ||
	    (err = tdbc_table_open(tdb.c, TABLE_TXN, &tdb.txn)))
		return tdb_fail(msg, tdb.c, "table open", err);
	if (opt.part_txn && tdb_put_many(tdb.c, tdb.txn, opt.txn_keys,
					 txn_key, val_txn, msg))
		return -1;
	return 0;
}

static void tdb_stop(void)
{
	int st;

	if (tdb.ctr)
		tdbc_table_close(tdb.ctr);
	if (tdb.txn)
		tdbc_table_close(tdb.txn);
	if (tdb.c)
		tdbc_close(tdb.c);
	tdb.ctr = tdb.txn = NULL;
	tdb.c = NULL;
	st = stop_server(sys[SYS_TDB].pid);
	if (st)
		fprintf(stderr, "tdb-bench-contend: tdbd ended with status %d "
			"(log %s)\n", st, sys[SYS_TDB].log);
	sys[SYS_TDB].pid = 0;
}

/* --- Redis: a small RESP client over the Unix socket --------------------- */
static struct {
	char bin[4096], sock[108], dir[4200], version[32];
} rds;

struct resp {
	int fd;
	char w[PIPE_MAX * 64 + 256];
	size_t wlen;
	char r[1 << 16];
	size_t rpos, rlen;
};

static int resp_connect(struct resp *c, char *msg)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	c->wlen = c->rpos = c->rlen = 0;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", rds.sock);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		msgf(msg, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a))) {
		msgf(msg, "connect %s: %s", rds.sock, strerror(errno));
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

/* A command of n arguments (argument i: p[i], l[i] bytes) appended. */
static void resp_cmd(struct resp *c, unsigned int n, const void *const *p,
		     const size_t *l)
{
	c->wlen += (size_t)sprintf(c->w + c->wlen, "*%u\r\n", n);
	for (unsigned int i = 0; i < n; i++) {
		c->wlen += (size_t)sprintf(c->w + c->wlen, "$%zu\r\n", l[i]);
		memcpy(c->w + c->wlen, p[i], l[i]);
		c->wlen += l[i];
		memcpy(c->w + c->wlen, "\r\n", 2);
		c->wlen += 2;
	}
}

static void resp_cmd1(struct resp *c, const char *cmd, const char *key)
{
	const void *p[2] = { cmd, key };
	size_t l[2] = { strlen(cmd), KEY_LEN };

	resp_cmd(c, key ? 2 : 1, p, l);
}

static int resp_flush(struct resp *c, char *msg)
{
	size_t off = 0;

	while (off < c->wlen) {
		ssize_t n = write(c->fd, c->w + off, c->wlen - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			msgf(msg, "Redis: write: %s", strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	c->wlen = 0;
	return 0;
}

/* The next line, CRLF cut: *l (in the buffer), *len. */
static int resp_line(struct resp *c, const char **l, size_t *len, char *msg)
{
	for (;;) {
		char *s = c->r + c->rpos;
		char *e = memchr(s, '\n', c->rlen - c->rpos);
		ssize_t n;

		if (e && e > s && e[-1] == '\r') {
			*l = s;
			*len = (size_t)(e - 1 - s);
			c->rpos += (size_t)(e + 1 - s);
			return 0;
		}
		if (c->rpos) {
			memmove(c->r, s, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		if (c->rlen == sizeof(c->r)) {
			msgf(msg, "Redis: a reply line too long");
			return -1;
		}
		n = read(c->fd, c->r + c->rlen, sizeof(c->r) - c->rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			msgf(msg, "Redis: read: %s", n ? strerror(errno) :
			     "the server closed the connection");
			return -1;
		}
		c->rlen += (size_t)n;
	}
}

/*
 * One reply's first line: its type ('+', ':', '$', '*') and *num (the
 * integer, the bulk length, -1 for nil, the array count).  A bulk
 * string's bytes (short ones: every value here is) are copied to
 * out[cap] and consumed.  An error reply fails with its text.
 */
static int resp_reply(struct resp *c, int64_t *num, char *out, size_t cap,
		      char *msg)
{
	const char *l;
	size_t len;

	if (resp_line(c, &l, &len, msg))
		return -1;
	if (!len) {
		msgf(msg, "Redis: an empty reply line");
		return -1;
	}
	*num = 0;
	switch (l[0]) {
	case '-':
		msgf(msg, "Redis: %.*s", (int)len - 1, l + 1);
		return -1;
	case '+':
		return '+';
	case ':':
	case '*':
		*num = strtoll(l + 1, NULL, 10);
		return l[0];
	case '$':
		*num = strtoll(l + 1, NULL, 10);
		if (*num < 0)
			return '$';
		if ((size_t)*num + 2 > cap) {
			msgf(msg, "Redis: a value of %" PRId64 " bytes",
			     *num);
			return -1;
		}
		/* the value and its CRLF: read as a "line" */
		if (resp_line(c, &l, &len, msg))
			return -1;
		if (len != (size_t)*num) {
			msgf(msg, "Redis: a value of %zu bytes, %" PRId64
			     " announced", len, *num);
			return -1;
		}
		memcpy(out, l, len);
		out[len] = 0;
		return '$';
	default:
		msgf(msg, "Redis: unexpected reply '%.*s'", (int)len, l);
		return -1;
	}
}

static int redis_start(char *msg)
{
	struct resp *c = malloc(sizeof(*c));
	char why[MSG_LEN] = "", buf[NUM_LEN];
	int64_t n;
	int err = -1;

	if (!c) {
		msgf(msg, "out of memory");
		return -1;
	}
	if (opt.redis)
		snprintf(rds.bin, sizeof(rds.bin), "%s", opt.redis);
	else if (!find_in_path("redis-server", rds.bin, sizeof(rds.bin))) {
		msgf(msg, "no redis-server in $PATH (scripts/install-deps.sh "
		     "bench, or --redis PATH)");
		free(c);
		return 1;
	}
	snprintf(rds.dir, sizeof(rds.dir), "%s/redis", tmpdir);
	if ((size_t)snprintf(rds.sock, sizeof(rds.sock), "%s/redis.sock",
			     tmpdir) >= sizeof(rds.sock)) {
		msgf(msg, "socket path under %s is too long", tmpdir);
		free(c);
		return -1;
	}
	snprintf(sys[SYS_REDIS].log, sizeof(sys[SYS_REDIS].log),
		 "%s/redis.log", tmpdir);
	if (mkdir(rds.dir, 0700)) {
		msgf(msg, "mkdir %s: %s", rds.dir, strerror(errno));
		free(c);
		return -1;
	}
	{
		const char *argv[] = {
			rds.bin, "--port", "0", "--unixsocket", rds.sock,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--daemonize", "no",
			"--dir", rds.dir, NULL,
		};

		sys[SYS_REDIS].pid = spawn(argv, sys[SYS_REDIS].log, msg);
	}
	if (sys[SYS_REDIS].pid < 0) {
		sys[SYS_REDIS].pid = 0;
		free(c);
		return -1;
	}
	c->fd = -1;
	for (int i = 0; i < 1000 && c->fd < 0; i++) {
		if (exited(sys[SYS_REDIS].pid, why)) {
			sys[SYS_REDIS].pid = 0;
			msgf(msg, "redis-server %s (log %s)", why,
			     sys[SYS_REDIS].log);
			free(c);
			return -1;
		}
		if (resp_connect(c, why))
			usleep(10000);
	}
	if (c->fd < 0) {
		msgf(msg, "redis-server did not open %s: %s", rds.sock, why);
	} else {
		const void *p[2] = { "INFO", "server" };
		size_t l[2] = { 4, 6 };
		const char *s;
		size_t len;

		/* INFO's bulk is long: read its lines, keep the version. */
		resp_cmd(c, 2, p, l);
		if (!resp_flush(c, msg) && !resp_line(c, &s, &len, msg) &&
		    s[0] == '$') {
			long left = strtol(s + 1, NULL, 10);

			while (left > 0 && !resp_line(c, &s, &len, msg)) {
				if (len > 14 && !memcmp(s, "redis_version:",
							14))
					snprintf(rds.version,
						 sizeof(rds.version), "%.*s",
						 (int)(len - 14), s + 14);
				left -= (long)len + 2;
			}
			/* the bulk's own CRLF after its last line's */
			err = resp_line(c, &s, &len, msg);
		}
		resp_cmd1(c, "PING", NULL);
		if (!err && (resp_flush(c, msg) ||
			     resp_reply(c, &n, buf, sizeof(buf), msg) < 0))
			err = -1;
		close(c->fd);
	}
	free(c);
	return err;
}

static void redis_stop(void)
{
	int st = stop_server(sys[SYS_REDIS].pid);

	if (st)
		fprintf(stderr, "tdb-bench-contend: redis-server ended with "
			"status %d (log %s)\n", st, sys[SYS_REDIS].log);
	sys[SYS_REDIS].pid = 0;
}

/* --- LMDB ------------------------------------------------------------------ */
static char lmdb_dir[4200];

static int lmdb_open_env(MDB_env **env, MDB_dbi *dbi, char *msg)
{
	MDB_txn *txn;
	int rc;

	*env = NULL;
	rc = mdb_env_create(env);
	if (!rc)
		rc = mdb_env_set_mapsize(*env, (size_t)1 << 30);
	if (!rc)
		rc = mdb_env_open(*env, lmdb_dir, MDB_NOSYNC, 0600);
	if (!rc)
		rc = mdb_txn_begin(*env, NULL, 0, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, NULL, 0, dbi);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	if (rc) {
		msgf(msg, "LMDB environment %s: %s", lmdb_dir,
		     mdb_strerror(rc));
		if (*env)
			mdb_env_close(*env);
		*env = NULL;
		return -1;
	}
	return 0;
}

static int lmdb_start(char *msg)
{
	MDB_env *env;
	MDB_dbi dbi;

	snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/lmdb", tmpdir);
	if (mkdir(lmdb_dir, 0700)) {
		msgf(msg, "mkdir %s: %s", lmdb_dir, strerror(errno));
		return -1;
	}
	if (lmdb_open_env(&env, &dbi, msg))
		return -1;
	mdb_env_close(env);
	return 0;
}

/* ======================================================================
 * Part 1: contended increments
 * ====================================================================== */
enum way {
	W_TDB_INCR, W_TDB_PIPE, W_TDB_TXN, W_TDB_CAS,
	W_REDIS_INCR, W_REDIS_PIPE, W_REDIS_WATCH,
	W_LMDB,
	W_N
};

static const struct {
	enum sysid sys;
	const char *what;               /* %u: the pipeline */
	bool pipelined;
} ways[W_N] = {
	[W_TDB_INCR] = { SYS_TDB, "tdbc_incr", false },
	[W_TDB_PIPE] = { SYS_TDB, "tdbc_submit %u INCRs", true },
	[W_TDB_TXN] = { SYS_TDB, "tdbc_txn_run get+put", false },
	[W_TDB_CAS] = { SYS_TDB, "CAS get_ver+put_if", false },
	[W_REDIS_INCR] = { SYS_REDIS, "INCR", false },
	[W_REDIS_PIPE] = { SYS_REDIS, "INCR pipelined by %u", true },
	[W_REDIS_WATCH] = { SYS_REDIS, "WATCH/GET/MULTI/SET/EXEC", false },
	[W_LMDB] = { SYS_LMDB, "write txn get+put", false },
};

static struct {
	bool ok;
	char why[MSG_LEN];
} way_state[W_N];

/* A way's name, its pipeline filled in. */
static const char *wname(enum way w)
{
	static char buf[W_N][64];

	snprintf(buf[w], sizeof(buf[w]), ways[w].what, opt.pipe);
	return buf[w];
}

enum dist { D_ONE, D_ZIPF, D_N };

struct slot {
	double t0, t1, cpu;
	uint64_t incs, tries, giveups;
	uint32_t nsamp;
	int failed;
	char msg[MSG_LEN];
};

struct shared {
	volatile int stop;
	struct slot slot[PROCS_MAX];
};
static struct shared *sh;
static uint32_t *counts;        /* [PROCS_MAX][keys]: increments per key */
static uint32_t *samples;       /* [PROCS_MAX][SAMPLES_MAX], ns */
static uint32_t *gather;

struct cell {
	double ops_s, p50, p99, tries, cli, srv;
	double oth;                     /* others' share of the CPUs */
	uint64_t giveups;
	bool done, bad;
};
static struct cell cells[W_N][D_N][8][RUNS_MAX];

/* A worker's handles. */
struct wctx {
	enum way way;
	unsigned int proc;
	struct tdbc *c;
	struct tdbc_table *t;
	struct resp *r;
	MDB_env *env;
	MDB_dbi dbi;
	uint64_t tries;                 /* attempts, all increments */
	uint32_t key;                   /* the txn function's key */
	char kbuf[PIPE_MAX][KEY_LEN];
	char *msg;
};

static uint32_t keys_of(enum dist d)
{
	return d == D_ONE ? 1 : opt.keys;
}

#if HAVE_V24
static int txn_incr(struct tdbc_txn *txn, void *arg)
{
	struct wctx *w = arg;
	char v[NUM_LEN];
	int64_t n = 0;
	long len;

	w->tries++;
	len = tdbc_get(w->t, txn, w->kbuf[0], KEY_LEN, v, sizeof(v), NULL);
	if (len < 0 && len != -ENOENT)
		return (int)len;
	if (len >= 0 && parse_num(v, (size_t)len, &n))
		return -EDOM;
	len = snprintf(v, sizeof(v), "%" PRId64, n + 1);
	return tdbc_put(w->t, txn, w->kbuf[0], KEY_LEN, v, (size_t)len, 0);
}
#endif

/* n increments of keys k[] (n is 1, or the pipeline for the pipelined
 * ways); 0 or -1 with w->msg. */
static int do_incr(struct wctx *w, const uint32_t *k, unsigned int n,
		   uint64_t *giveups)
{
	char v[NUM_LEN];
	int64_t num;
#if HAVE_V24
	int err;
#endif

	for (unsigned int j = 0; j < n; j++)
		ctr_key(w->kbuf[j], k[j]);
	switch (w->way) {
#if HAVE_V24
	case W_TDB_INCR:
		w->tries++;
		err = tdbc_incr(w->t, NULL, w->kbuf[0], KEY_LEN, 1, &num);
		return err ? tdb_fail(w->msg, w->c, "incr", err) : 0;
	case W_TDB_PIPE: {
		struct tdbc_req req[PIPE_MAX];
		struct tdbc_cqe cqe[PIPE_MAX];
		unsigned int sub = 0, done = 0;

		for (unsigned int j = 0; j < n; j++)
			req[j] = (struct tdbc_req){
				.op = TDBC_OP_INCR, .table = w->t,
				.key = w->kbuf[j], .klen = KEY_LEN,
				.delta = 1, .user = j,
			};
		w->tries += n;
		while (done < n) {
			int r = sub < n ? tdbc_submit(w->c, req + sub,
						      n - sub) : 0;

			if (r > 0)
				sub += (unsigned int)r;
			else if (r < 0 && r != -EAGAIN)
				return tdb_fail(w->msg, w->c, "submit", r);
			r = tdbc_reap(w->c, cqe, n, sub == n ? sub - done : 1,
				      -1);
			if (r < 0)
				return tdb_fail(w->msg, w->c, "reap", r);
			for (int q = 0; q < r; q++)
				if (cqe[q].res)
					return tdb_fail(w->msg, w->c,
							"INCR (submit)",
							cqe[q].res);
			done += (unsigned int)r;
		}
		return 0;
	}
	case W_TDB_TXN:
		for (;;) {
			err = tdbc_txn_run(w->c, txn_incr, w, 0);
			if (err != -ESTALE)
				break;
			++*giveups;     /* TDBC_TXN_RUN_TRIES conflicts: again */
		}
		return err ? tdb_fail(w->msg, w->c, "txn_run", err) : 0;
	case W_TDB_CAS:
		for (;;) {
			uint64_t ver = 0;
			long len;

			w->tries++;
			len = tdbc_get_ver(w->t, NULL, w->kbuf[0], KEY_LEN, v,
					   sizeof(v), NULL, &ver);
			if (len < 0)
				return tdb_fail(w->msg, w->c, "get_ver", len);
			if (parse_num(v, (size_t)len, &num)) {
				msgf(w->msg, "tdb: a counter is not a number");
				return -1;
			}
			len = snprintf(v, sizeof(v), "%" PRId64, num + 1);
			err = tdbc_put_if(w->t, NULL, w->kbuf[0], KEY_LEN, v,
					  (size_t)len, TDBC_IF_VERSION, ver);
			if (err != -ECANCELED)
				return err ? tdb_fail(w->msg, w->c, "put_if",
						      err) : 0;
		}
#else
	case W_TDB_INCR:
	case W_TDB_PIPE:
	case W_TDB_TXN:
	case W_TDB_CAS:
		(void)giveups;
		msgf(w->msg, "not in this tree (before issue 24)");
		return -1;
#endif
	case W_REDIS_INCR:
	case W_REDIS_PIPE:
		for (unsigned int j = 0; j < n; j++)
			resp_cmd1(w->r, "INCR", w->kbuf[j]);
		w->tries += n;
		if (resp_flush(w->r, w->msg))
			return -1;
		for (unsigned int j = 0; j < n; j++)
			if (resp_reply(w->r, &num, v, sizeof(v), w->msg) !=
			    ':') {
				if (!w->msg[0])
					msgf(w->msg, "Redis INCR: not an "
					     "integer reply");
				return -1;
			}
		return 0;
	case W_REDIS_WATCH:
		for (;;) {
			const void *p[3] = { "SET", w->kbuf[0], v };
			size_t l[3] = { 3, KEY_LEN, 0 };
			int t;

			w->tries++;
			resp_cmd1(w->r, "WATCH", w->kbuf[0]);
			resp_cmd1(w->r, "GET", w->kbuf[0]);
			if (resp_flush(w->r, w->msg) ||
			    resp_reply(w->r, &num, v, sizeof(v), w->msg) != '+'
			    || resp_reply(w->r, &num, v, sizeof(v), w->msg) !=
			    '$')
				goto bad_reply;
			if (num < 0)
				num = 0;
			else if (parse_num(v, (size_t)num, &num))
				goto bad_reply;
			l[2] = (size_t)snprintf(v, sizeof(v), "%" PRId64,
						num + 1);
			resp_cmd1(w->r, "MULTI", NULL);
			resp_cmd(w->r, 3, p, l);
			resp_cmd1(w->r, "EXEC", NULL);
			if (resp_flush(w->r, w->msg) ||
			    resp_reply(w->r, &num, v, sizeof(v), w->msg) != '+'
			    || resp_reply(w->r, &num, v, sizeof(v), w->msg) !=
			    '+' ||
			    (t = resp_reply(w->r, &num, v, sizeof(v),
					    w->msg)) != '*')
				goto bad_reply;
			if (num < 0)
				continue;       /* nil: a watched key changed */
			if (num != 1 || resp_reply(w->r, &num, v, sizeof(v),
						   w->msg) != '+')
				goto bad_reply;
			return 0;
		}
bad_reply:
		if (!w->msg[0])
			msgf(w->msg, "Redis WATCH/MULTI/EXEC: unexpected "
			     "reply");
		return -1;
	case W_LMDB: {
		MDB_txn *txn;
		MDB_val mk = { KEY_LEN, w->kbuf[0] }, mv;
		int rc;

		w->tries++;
		rc = mdb_txn_begin(w->env, NULL, 0, &txn);
		if (rc) {
			msgf(w->msg, "LMDB txn begin: %s", mdb_strerror(rc));
			return -1;
		}
		num = 0;
		rc = mdb_get(txn, w->dbi, &mk, &mv);
		if (!rc && parse_num(mv.mv_data, mv.mv_size, &num))
			rc = MDB_CORRUPTED;
		if (!rc || rc == MDB_NOTFOUND) {
			mv.mv_size = (size_t)snprintf(v, sizeof(v), "%" PRId64,
						      num + 1);
			mv.mv_data = v;
			rc = mdb_put(txn, w->dbi, &mk, &mv, 0);
		}
		if (rc) {
			mdb_txn_abort(txn);
			msgf(w->msg, "LMDB get/put: %s", mdb_strerror(rc));
			return -1;
		}
		rc = mdb_txn_commit(txn);
		if (rc) {
			msgf(w->msg, "LMDB commit: %s", mdb_strerror(rc));
			return -1;
		}
		return 0;
	}
	default:
		break;
	}
	msgf(w->msg, "unknown way");
	return -1;
}

static int worker_open(struct wctx *w)
{
	char why[MSG_LEN];
	int err;

	switch (ways[w->way].sys) {
	case SYS_TDB:
		err = tdbc_connect(&w->c, tdb.sock, 0, why, sizeof(why));
		if (err) {
			msgf(w->msg, "tdbc_connect: %s", why);
			return -1;
		}
		err = tdbc_table_open(w->c, TABLE_CTR, &w->t);
		if (err)
			return tdb_fail(w->msg, w->c, "table open", err);
		return 0;
	case SYS_REDIS:
		w->r = malloc(sizeof(*w->r));
		if (!w->r) {
			msgf(w->msg, "out of memory");
			return -1;
		}
		return resp_connect(w->r, w->msg);
	case SYS_LMDB:
		return lmdb_open_env(&w->env, &w->dbi, w->msg);
	default:
		return -1;
	}
}

static void worker_close(struct wctx *w)
{
	if (w->t)
		tdbc_table_close(w->t);
	if (w->c)
		tdbc_close(w->c);
	if (w->r) {
		if (w->r->fd >= 0)
			close(w->r->fd);
		free(w->r);
	}
	if (w->env)
		mdb_env_close(w->env);
}

static __attribute__((noreturn))
void worker(enum way way, enum dist d, unsigned int proc, unsigned int procs,
	    unsigned int run, int ready, int go)
{
	struct slot *sl = &sh->slot[proc];
	uint32_t *cnt = counts + (size_t)proc * opt.keys;
	uint32_t *smp = samples + (size_t)proc * SAMPLES_MAX;
	unsigned int n = ways[way].pipelined ? opt.pipe : 1;
	uint64_t seed = SEED ^ ((uint64_t)d << 56) ^ ((uint64_t)run << 48) ^
		((uint64_t)proc << 40) ^ ((uint64_t)procs << 32);
	struct wctx *w = calloc(1, sizeof(*w));
	uint32_t k[PIPE_MAX];
	double t;
	char c = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (!w)
		_exit(1);
	w->way = way;
	w->proc = proc;
	w->msg = sl->msg;
	rc = worker_open(w);
	if (write(ready, &c, 1) != 1)
		rc = -1;
	close(ready);
	if (rc) {
		sl->failed = 1;
		_exit(1);
	}
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	sl->cpu = -self_cpu();
	sl->t0 = t = now();
	while (!sh->stop) {
		double t1;

		for (unsigned int j = 0; j < n; j++)
			k[j] = d == D_ONE ? 0 : zipf_next(&zipf, &seed);
		if (do_incr(w, k, n, &sl->giveups)) {
			sl->failed = 1;
			_exit(1);
		}
		t1 = now();
		for (unsigned int j = 0; j < n; j++)
			cnt[k[j]]++;
		sl->incs += n;
		if (sl->nsamp < SAMPLES_MAX)
			smp[sl->nsamp++] = (uint32_t)((t1 - t) * 1e9 / n +
						      0.5);
		t = t1;
	}
	sl->t1 = now();
	sl->cpu += self_cpu();
	sl->tries = w->tries;
	worker_close(w);
	_exit(0);
}

/* Set the counters of the cell to "0" (unmeasured). */
static int reset_counters(enum sysid s, uint32_t nk, char *msg)
{
	char k[KEY_LEN];

	switch (s) {
	case SYS_TDB:
		return tdb_put_many(tdb.c, tdb.ctr, nk, ctr_key, val_zero,
				    msg);
	case SYS_REDIS: {
		struct resp *c = malloc(sizeof(*c));
		int64_t n;
		char v[NUM_LEN];
		int err = 0;

		if (!c || resp_connect(c, msg)) {
			free(c);
			return -1;
		}
		for (uint32_t i = 0; i < nk && !err; i += PIPE_MAX) {
			uint32_t m = nk - i < PIPE_MAX ? nk - i : PIPE_MAX;

			for (uint32_t j = 0; j < m; j++) {
				const void *p[3] = { "SET", k, "0" };
				size_t l[3] = { 3, KEY_LEN, 1 };

				ctr_key(k, i + j);
				resp_cmd(c, 3, p, l);
			}
			err = resp_flush(c, msg);
			for (uint32_t j = 0; j < m && !err; j++)
				if (resp_reply(c, &n, v, sizeof(v), msg) !=
				    '+')
					err = -1;
		}
		close(c->fd);
		free(c);
		return err;
	}
	case SYS_LMDB: {
		MDB_env *env;
		MDB_dbi dbi;
		MDB_txn *txn;
		int rc;

		if (lmdb_open_env(&env, &dbi, msg))
			return -1;
		rc = mdb_txn_begin(env, NULL, 0, &txn);
		for (uint32_t i = 0; i < nk && !rc; i++) {
			MDB_val mk = { KEY_LEN, k }, mv = { 1, (void *)"0" };

			ctr_key(k, i);
			rc = mdb_put(txn, dbi, &mk, &mv, 0);
		}
		if (!rc)
			rc = mdb_txn_commit(txn);
		mdb_env_close(env);
		if (rc)
			msgf(msg, "LMDB reset: %s", mdb_strerror(rc));
		return rc ? -1 : 0;
	}
	default:
		return -1;
	}
}

/* Read counter i into *v. */
static int read_counter(enum sysid s, uint32_t i, int64_t *v, void *h,
			char *msg)
{
	char k[KEY_LEN], b[NUM_LEN];
	long len;

	ctr_key(k, i);
	switch (s) {
	case SYS_TDB:
		len = tdbc_get(tdb.ctr, NULL, k, KEY_LEN, b, sizeof(b), NULL);
		if (len < 0)
			return tdb_fail(msg, tdb.c, "get", len);
		break;
	case SYS_REDIS: {
		int64_t n;

		resp_cmd1(h, "GET", k);
		if (resp_flush(h, msg) ||
		    resp_reply(h, &n, b, sizeof(b), msg) != '$' || n < 0)
			return -1;
		len = (long)n;
		break;
	}
	case SYS_LMDB: {
		MDB_txn *txn;
		MDB_val mk = { KEY_LEN, k }, mv;
		int rc = mdb_txn_begin(((struct wctx *)h)->env, NULL,
				       MDB_RDONLY, &txn);

		if (!rc) {
			rc = mdb_get(txn, ((struct wctx *)h)->dbi, &mk, &mv);
			if (!rc && mv.mv_size < sizeof(b))
				memcpy(b, mv.mv_data, mv.mv_size);
			mdb_txn_abort(txn);
		}
		if (rc) {
			msgf(msg, "LMDB get: %s", mdb_strerror(rc));
			return -1;
		}
		len = (long)mv.mv_size;
		break;
	}
	default:
		return -1;
	}
	if (parse_num(b, (size_t)len, v)) {
		msgf(msg, "counter %" PRIu32 " is not a number", i);
		return -1;
	}
	return 0;
}

/* Every counter against the processes' counts; false: FAIL printed. */
static bool verify(enum way way, enum dist d, unsigned int procs,
		   unsigned int run, uint64_t *total)
{
	enum sysid s = ways[way].sys;
	uint32_t nk = keys_of(d), bad = 0;
	struct wctx h = { .way = way };
	char msg[MSG_LEN] = "";
	uint64_t sum = 0, got = 0;

	h.msg = msg;
	if ((s == SYS_REDIS || s == SYS_LMDB) && worker_open(&h))
		die("verify %s: %s", sys_name[s], msg);
	for (uint32_t i = 0; i < nk; i++) {
		uint64_t want = 0;
		int64_t v;

		for (unsigned int p = 0; p < procs; p++)
			want += counts[(size_t)p * opt.keys + i];
		if (read_counter(s, i, &v, s == SYS_REDIS ? (void *)h.r :
				 (void *)&h, msg))
			die("verify %s: %s", sys_name[s], msg);
		sum += want;
		got += (uint64_t)v;
		if ((uint64_t)v != want && bad++ < 3)
			printf("FAIL %s %s, %s, %u procs, run %u: counter %"
			       PRIu32 " is %" PRId64 ", %" PRIu64
			       " increments were acknowledged\n",
			       sys_name[s], wname(way),
			       d == D_ONE ? "1 key" : "zipf", procs, run + 1,
			       i, v, want);
	}
	worker_close(&h);
	if (bad)
		printf("FAIL %s %s: %" PRIu32 " of %" PRIu32 " counters wrong,"
		       " sum %" PRIu64 " for %" PRIu64 " increments\n",
		       sys_name[s], wname(way), bad, nk, got, sum);
	*total = sum;
	return !bad;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static double pct(const uint32_t *s, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n + 0.999999);

	return n ? s[i ? i - 1 : 0] : 0;
}

static void run_incr_cell(enum way way, enum dist d, unsigned int pi,
			  unsigned int run)
{
	unsigned int procs = opt.procs[pi];
	enum sysid s = ways[way].sys;
	struct cell *r = &cells[way][d][pi][run];
	double first = 1e300, last = 0, cli = 0, srv0, srv1, w0, w1;
	double all0, all1;
	struct cpu_sample ca, cb;
	uint64_t incs = 0, tries = 0, total;
	int ready[2], go[2];
	char msg[MSG_LEN] = "", c;
	size_t n = 0;

	if (reset_counters(s, keys_of(d), msg))
		die("%s: resetting the counters: %s", sys_name[s], msg);
	wait_quiet();
	memset(sh->slot, 0, sizeof(sh->slot[0]) * procs);
	memset(counts, 0, sizeof(*counts) * opt.keys * procs);
	sh->stop = 0;
	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	for (unsigned int i = 0; i < procs; i++) {
		workers[i] = fork();
		if (workers[i] < 0)
			die("fork: %s", strerror(errno));
		if (!workers[i]) {
			close(ready[0]);
			close(go[1]);
			worker(way, d, i, procs, run, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (unsigned int i = 0; i < procs; i++)
		while (read(ready[0], &c, 1) != 1) {
			if (errno == EINTR && !interrupted)
				continue;
			die("%s %s: a worker died before the start: %s",
			    sys_name[s], wname(way), sh->slot[i].msg);
		}
	close(ready[0]);
	srv0 = proc_cpu(sys[s].pid);
	all0 = servers_cpu();
	cpu_sample(&ca);
	w0 = now();
	close(go[1]);
	{
		struct timespec ts = {
			.tv_sec = (time_t)opt.seconds,
			.tv_nsec = (long)((opt.seconds -
					   (double)(time_t)opt.seconds) * 1e9),
		};

		while (nanosleep(&ts, &ts) && errno == EINTR && !interrupted)
			;
	}
	sh->stop = 1;
	for (unsigned int i = 0; i < procs; i++) {
		int st;

		while (waitpid(workers[i], &st, 0) < 0 && errno == EINTR)
			if (interrupted)
				die("interrupted");
		workers[i] = 0;
		if (sh->slot[i].failed || !WIFEXITED(st) || WEXITSTATUS(st))
			die("%s %s, %u procs, process %u: %s", sys_name[s],
			    wname(way), procs, i, sh->slot[i].failed ?
			    sh->slot[i].msg : "died");
	}
	w1 = now();
	srv1 = proc_cpu(sys[s].pid);
	all1 = servers_cpu();
	cpu_sample(&cb);
	r->oth = others(&ca, &cb, all0, all1);
	for (unsigned int i = 0; i < procs; i++) {
		const struct slot *sl = &sh->slot[i];

		cli += sl->cpu;
		incs += sl->incs;
		tries += sl->tries;
		r->giveups += sl->giveups;
		first = sl->t0 < first ? sl->t0 : first;
		last = sl->t1 > last ? sl->t1 : last;
		memcpy(gather + n, samples + (size_t)i * SAMPLES_MAX,
		       sl->nsamp * sizeof(*gather));
		n += sl->nsamp;
	}
	qsort(gather, n, sizeof(*gather), cmp_u32);
	r->bad = !verify(way, d, procs, run, &total);
	if (r->bad)
		failed_verify = true;
	if (total != incs)
		die("internal: %" PRIu64 " counted, %" PRIu64 " reported",
		    total, incs);
	r->ops_s = (double)incs / (last - first);
	r->p50 = pct(gather, n, 0.50) / 1000;
	r->p99 = pct(gather, n, 0.99) / 1000;
	r->tries = incs ? (double)tries / (double)incs : 0;
	r->cli = cli / (last - first);
	r->srv = (srv1 - srv0) / (w1 - w0);
	r->done = true;
	if (opt.verbose)
		fprintf(stderr, "    %s %s %s %u procs run %u: %.0f/s p50 "
			"%.2f p99 %.2f us, %.3f tries, %" PRIu64 " "
			"increments%s\n", sys_name[s], wname(way),
			d == D_ONE ? "1 key" : "zipf", procs, run + 1,
			r->ops_s, r->p50, r->p99, r->tries, incs,
			r->bad ? " FAIL" : "");
}

/* Does the way work here?  One increment of counter 0, by the driver's
 * own means (so a libtdbclient without a call says so, not a worker). */
static void probe_way(enum way w)
{
	enum sysid s = ways[w].sys;

	way_state[w].ok = false;
	if (sys[s].state) {
		msgf(way_state[w].why, "%s", sys[s].state > 0 ?
		     "not asked for" : "did not start");
		return;
	}
#if HAVE_V24
	if (s == SYS_TDB) {
		const char *miss =
			(w == W_TDB_INCR && !tdbc_incr) ? "tdbc_incr" :
			(w == W_TDB_TXN && !tdbc_txn_run) ? "tdbc_txn_run" :
			(w == W_TDB_CAS && !tdbc_get_ver) ? "tdbc_get_ver" :
			(w == W_TDB_CAS && !tdbc_put_if) ? "tdbc_put_if" :
			NULL;

		if (miss) {
			msgf(way_state[w].why, "this libtdbclient has no %s",
			     miss);
			return;
		}
	}
#else
	if (s == SYS_TDB) {
		msgf(way_state[w].why, "built before issue 24");
		return;
	}
#endif
	{
		/* A real run of the way for one increment, in a child. */
		struct wctx *x = calloc(1, sizeof(*x));
		char msg[MSG_LEN] = "";
		uint32_t k[PIPE_MAX] = { 0 };
		uint64_t g = 0;
		int ok;

		if (!x)
			die("out of memory");
		x->way = w;
		x->msg = msg;
		if (reset_counters(s, 1, msg))
			die("%s: %s", sys_name[s], msg);
		ok = !worker_open(x) &&
			!do_incr(x, k, ways[w].pipelined ? opt.pipe : 1, &g);
		worker_close(x);
		free(x);
		way_state[w].ok = ok;
		if (!ok)
			msgf(way_state[w].why, "%s", msg);
	}
}

/* ======================================================================
 * Part 2: uncontended transactions
 * ====================================================================== */
enum txw { T_PUT, T_RW, T_RO, T_N };
static const char *const txw_name[T_N] = {
	"put: k tdbc_put, commit",
	"rw: k tdbc_get, k tdbc_put, commit",
	"ro: k tdbc_get, commit",
};

struct tcell {
	double txn_s, p50, p99, oth;
	double srv_us, cli_us;          /* tdbd's, this process's CPU a txn */
	bool done;
};
static struct tcell tcells[T_N][8][RUNS_MAX];
static uint32_t *perm;          /* a random order of the txn keys */
static uint32_t perm_pos;

static int one_txn(enum txw w, unsigned int k, uint32_t gen, char *msg)
{
	struct tdbc_txn *txn;
	char key[TXN_K_MAX][KEY_LEN];
	uint8_t v[TXN_VLEN], rb[TXN_VLEN];
	int err;

	err = tdbc_txn_begin(tdb.c, &txn);
	if (err)
		return tdb_fail(msg, tdb.c, "txn begin", err);
	for (unsigned int j = 0; j < k; j++) {
		uint32_t i = perm[perm_pos];

		perm_pos = perm_pos + 1 == opt.txn_keys ? 0 : perm_pos + 1;
		txn_key(key[j], i);
		if (w == T_RW || w == T_RO) {
			long len = tdbc_get(tdb.txn, txn, key[j], KEY_LEN, rb,
					    sizeof(rb), NULL);
			uint64_t idx;

			if (len < 0) {
				tdbc_txn_abort(txn);
				return tdb_fail(msg, tdb.c, "get in txn", len);
			}
			memcpy(&idx, rb, sizeof(idx));
			if (len != TXN_VLEN || idx != i) {
				tdbc_txn_abort(txn);
				msgf(msg, "key %" PRIu32 ": a wrong value", i);
				return -1;
			}
		}
	}
	for (unsigned int j = 0; w != T_RO && j < k; j++) {
		uint64_t idx, word[2];

		idx = strtoull(key[j] + 3, NULL, 10);  /* "txn" and it */
		word[0] = idx;
		word[1] = gen;
		memcpy(v, word, sizeof(word));
		memset(v + sizeof(word), 0x5a, TXN_VLEN - sizeof(word));
		err = tdbc_put(tdb.txn, txn, key[j], KEY_LEN, v, TXN_VLEN, 0);
		if (err) {
			tdbc_txn_abort(txn);
			return tdb_fail(msg, tdb.c, "put in txn", err);
		}
	}
	err = tdbc_txn_commit(txn);
	return err ? tdb_fail(msg, tdb.c, "commit", err) : 0;
}

static void run_txn_cell(enum txw w, unsigned int ki, unsigned int run)
{
	unsigned int k = opt.txn_k[ki];
	struct tcell *r = &tcells[w][ki][run];
	char msg[MSG_LEN] = "";
	double t0, t, end;
	size_t n = 0;
	uint64_t txns = 0;
	static uint32_t gen = 1;
	struct cpu_sample ca, cb;
	double s0;

	double c0;

	wait_quiet();
	s0 = servers_cpu();
	c0 = self_cpu();
	cpu_sample(&ca);
	t0 = t = now();
	end = t0 + opt.seconds;
	while (t < end) {
		double t1;

		if (one_txn(w, k, ++gen, msg))
			die("transactions, %s, k %u: %s", txw_name[w], k, msg);
		t1 = now();
		if (n < SAMPLES_MAX)
			gather[n++] = (uint32_t)((t1 - t) * 1e9 + 0.5);
		t = t1;
		txns++;
		if (interrupted)
			die("interrupted");
	}
	cpu_sample(&cb);
	r->oth = others(&ca, &cb, s0, servers_cpu());
	r->srv_us = (servers_cpu() - s0) * 1e6 / (double)txns;
	r->cli_us = (self_cpu() - c0) * 1e6 / (double)txns;
	qsort(gather, n, sizeof(*gather), cmp_u32);
	r->txn_s = (double)txns / (t - t0);
	r->p50 = pct(gather, n, 0.5) / 1000;
	r->p99 = pct(gather, n, 0.99) / 1000;
	r->done = true;
	if (opt.verbose)
		fprintf(stderr, "    txn %s k %u run %u: %.0f txn/s p50 %.2f "
			"us\n", txw_name[w], k, run + 1, r->txn_s, r->p50);
}

/* ======================================================================
 * medians and the report
 * ====================================================================== */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double cmed(enum way w, enum dist d, unsigned int pi, size_t off)
{
	double v[RUNS_MAX];
	unsigned int n = 0;

	for (unsigned int r = 0; r < opt.runs; r++)
		if (cells[w][d][pi][r].done)
			v[n++] = *(const double *)(const void *)
				((const char *)&cells[w][d][pi][r] + off);
	return median(v, n);
}
#define CMED(w, d, pi, f) cmed(w, d, pi, offsetof(struct cell, f))

static double tmed(enum txw w, unsigned int ki, size_t off)
{
	double v[RUNS_MAX];
	unsigned int n = 0;

	for (unsigned int r = 0; r < opt.runs; r++)
		if (tcells[w][ki][r].done)
			v[n++] = *(const double *)(const void *)
				((const char *)&tcells[w][ki][r] + off);
	return median(v, n);
}
#define TMED(w, ki, f) tmed(w, ki, offsetof(struct tcell, f))

static void ratio(double a, double b)
{
	if (a > 0 && b > 0)
		printf(" %7.2fx", a / b);
	else
		printf(" %8s", "-");
}

static void print_incr(void)
{
	for (int d = 0; d < D_N; d++) {
		printf("\ncontended increments, %s:\n", d == D_ONE ?
		       "all on ONE key" : "zipfian (0.99) over the keys");
		printf("%-6s %-26s %5s %11s %8s %8s %7s %9s %5s %8s %8s %8s "
		       "%s\n", "system", "way", "procs", "incr/s", "p50 us",
		       "p99 us", "tries", "CPU c+s", "oth%", "/LMDB", "/INCR",
		       "/INCRp", "check");
		for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
			double lmdb = CMED(W_LMDB, d, pi, ops_s);
			double incr = CMED(W_REDIS_INCR, d, pi, ops_s);
			double incrp = CMED(W_REDIS_PIPE, d, pi, ops_s);

			for (int w = 0; w < W_N; w++) {
				char what[64], cpu[24];
				double v = CMED(w, d, pi, ops_s);
				bool bad = false;
				uint64_t gu = 0;

				snprintf(what, sizeof(what), ways[w].what,
					 opt.pipe);
				if (!way_state[w].ok) {
					if (pi == 0)
						printf("%-6s %-26s %5s %s\n",
						       sys_name[ways[w].sys],
						       what, "", "skipped");
					continue;
				}
				for (unsigned int r = 0; r < opt.runs; r++) {
					bad |= cells[w][d][pi][r].bad;
					gu += cells[w][d][pi][r].giveups;
				}
				snprintf(cpu, sizeof(cpu), "%.1f+%.1f",
					 CMED(w, d, pi, cli),
					 CMED(w, d, pi, srv));
				printf("%-6s %-26s %5u %11.0f %8.2f %8.2f "
				       "%7.3f %9s %5.0f", sys_name[ways[w].sys],
				       what, opt.procs[pi], v,
				       CMED(w, d, pi, p50),
				       CMED(w, d, pi, p99),
				       CMED(w, d, pi, tries), cpu,
				       CMED(w, d, pi, oth) * 100);
				ratio(v, lmdb);
				ratio(v, incr);
				ratio(v, incrp);
				printf(" %s", bad ? "FAIL" : "exact");
				if (gu)
					printf(" (%" PRIu64 " gave up after "
					       "%u tries, run again)", gu,
					       TXN_RUN_TRIES);
				printf("\n");
			}
		}
	}
}

static const char *verdict(bool m)
{
	return m ? "MET" : "MISSED";
}

/* way / peer >= goal in every (dist, procs) cell. */
static void goal(enum way w, enum way peer, double g, const char *what)
{
	bool all = true, any = false;

	printf("  %-44s", what);
	if (!way_state[w].ok || !way_state[peer].ok) {
		printf(" not evaluated\n");
		return;
	}
	for (int d = 0; d < D_N; d++)
		for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
			double a = CMED(w, d, pi, ops_s);
			double b = CMED(peer, d, pi, ops_s);

			if (!(a > 0 && b > 0))
				continue;
			printf(" %s/%u %.2fx;", d == D_ONE ? "1key" : "zipf",
			       opt.procs[pi], a / b);
			all &= a / b >= g;
			any = true;
		}
	printf(" %s\n", any ? verdict(all) : "not evaluated");
}

static void print_incr_goals(void)
{
	printf("\ngoals (issue 24; ratios of median incr/s, per key "
	       "distribution/procs):\n");
	goal(W_TDB_INCR, W_LMDB, 5, "atomic add (tdbc_incr) >= 5x LMDB:");
	goal(W_TDB_INCR, W_REDIS_INCR, 1,
	     "atomic add (tdbc_incr) >= Redis INCR:");
	goal(W_TDB_PIPE, W_REDIS_PIPE, 1,
	     "(pipelined INCR: tdb vs Redis, both by B)");
	goal(W_TDB_TXN, W_LMDB, 2, "transaction (tdbc_txn_run) >= 2x LMDB:");
}

static void print_txn(void)
{
	printf("\nuncontended transactions, one process, %u keys, %u B "
	       "values:\n", opt.txn_keys, TXN_VLEN);
	printf("%-3s %-36s %9s %8s %8s %8s %8s %8s %5s %7s\n", "k",
	       "transaction", "txn/s", "p50 us", "p99 us", "us/txn",
	       "srv us", "cli us", "oth%", "vs put");
	for (unsigned int ki = 0; ki < opt.ntxn_k; ki++) {
		double put = TMED(T_PUT, ki, txn_s);

		for (int w = 0; w < T_N; w++) {
			double v = TMED(w, ki, txn_s);

			printf("%-3u %-36s %9.0f %8.2f %8.2f %8.2f %8.2f "
			       "%8.2f %5.0f", opt.txn_k[ki], txw_name[w], v,
			       TMED(w, ki, p50), TMED(w, ki, p99),
			       v > 0 ? 1e6 / v : 0, TMED(w, ki, srv_us),
			       TMED(w, ki, cli_us), TMED(w, ki, oth) * 100);
			if (w != T_PUT && v > 0 && put > 0)
				printf(" %6.2fx", put / v);
			printf("\n");
		}
	}
	printf("(us/txn: wall time a transaction; srv us, cli us: tdbd's and "
	       "this process's CPU\ntime a transaction (tdbd's includes its "
	       "polling: -A --idle-spin -A 0 leaves it\nout); \"vs put\": "
	       "time of the transaction over the put-only one's.  The\n"
	       "validation alone is this tree's rw/ro over a pre-issue-24 "
	       "tree's: run both.)\n");
}

/* ======================================================================
 * main
 * ====================================================================== */
static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void cleanup(void)
{
	if (sys[SYS_TDB].pid || tdb.c)
		tdb_stop();
	if (sys[SYS_REDIS].pid)
		redis_stop();
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = 0;
}

static void on_signal(int sig)
{
	interrupted = sig;
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGKILL);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-contend [options]\n"
"Read-modify-write in tdb (through tdbd) vs Redis and LMDB (issue 24):\n"
"contended increments (atomic add, pipelined, transaction with retry,\n"
"CAS loop; Redis INCR, pipelined, WATCH/MULTI/EXEC; LMDB write\n"
"transactions) on 1 key and on zipf-chosen keys, every final counter\n"
"checked; and uncontended transactions (puts / reads+puts / reads).\n"
"\n"
"  -p, --procs LIST     client processes (default 1,8)\n"
"  -k, --keys N         keys of the zipfian cells (default 1000)\n"
"  -B, --pipe B         requests per pipelined call (default 32)\n"
"  -s, --seconds S      per cell (default 2)\n"
"  -r, --runs R         runs; medians are reported (default 3)\n"
"  -K, --txn-k LIST     keys per transaction in part 2 (default 1,8)\n"
"  -n, --txn-keys N     keys of part 2's table (default 100000)\n"
"  -o, --only PART      incr or txn (default both)\n"
"  -O, --systems LIST   tdb, redis, lmdb (default all)\n"
"  -q, --quick          0.3 s cells, 1 run, procs 1,2, 100 keys\n"
"  -d, --dir DIR        where the temp dir goes (default $TMPDIR, /tmp)\n"
"  -T, --tdbd PATH      the tdbd to start (default $TDBD, the build's)\n"
"  -A, --tdbd-arg ARG   one more argument for tdbd (repeat)\n"
"  -R, --redis PATH     the redis-server to start (default from $PATH)\n"
"  -Q, --quiet PCT      before each cell, wait for a quarter second in\n"
"                       which other processes used < PCT%% of the CPUs\n"
"                       (default 20) ...\n"
"  -W, --quiet-wait S   ... for at most S seconds (default 10; 0: never)\n"
"  -S, --strict         exit 77 if tdbd or redis-server is missing, 1 if\n"
"                       a way is not available\n"
"  -v, --verbose        each run's figures on stderr\n"
"  -h, --help           this text\n");
}

static uint64_t num_arg(const char *s, const char *what, uint64_t min,
			uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && (*end == 'k' || *end == 'K'))
		v *= 1000, end++;
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "tdb-bench-contend: bad %s '%s' (%" PRIu64
			"..%" PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static unsigned int list_arg(const char *s, const char *what, unsigned int *v,
			     unsigned int max)
{
	char buf[256], *save = NULL;
	unsigned int n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == 8) {
			fprintf(stderr, "tdb-bench-contend: at most 8 %s\n",
				what);
			exit(2);
		}
		v[n++] = (unsigned int)num_arg(t, what, 1, max);
	}
	if (!n) {
		fprintf(stderr, "tdb-bench-contend: empty %s\n", what);
		exit(2);
	}
	return n;
}

static bool sys_wanted(enum sysid s)
{
	char buf[256], *save = NULL;

	if (!opt.only_sys)
		return true;
	snprintf(buf, sizeof(buf), "%s", opt.only_sys);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		if (!strcasecmp(t, sys_name[s]))
			return true;
	return false;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "procs", required_argument, NULL, 'p' },
		{ "keys", required_argument, NULL, 'k' },
		{ "pipe", required_argument, NULL, 'B' },
		{ "seconds", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'r' },
		{ "txn-k", required_argument, NULL, 'K' },
		{ "txn-keys", required_argument, NULL, 'n' },
		{ "only", required_argument, NULL, 'o' },
		{ "systems", required_argument, NULL, 'O' },
		{ "quick", no_argument, NULL, 'q' },
		{ "dir", required_argument, NULL, 'd' },
		{ "tdbd", required_argument, NULL, 'T' },
		{ "tdbd-arg", required_argument, NULL, 'A' },
		{ "redis", required_argument, NULL, 'R' },
		{ "strict", no_argument, NULL, 'S' },
		{ "quiet", required_argument, NULL, 'Q' },
		{ "quiet-wait", required_argument, NULL, 'W' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	while ((c = getopt_long(argc, argv, "p:k:B:s:r:K:n:o:O:qd:T:A:R:SQ:W:vh",
				lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			opt.nprocs = list_arg(optarg, "procs", opt.procs,
					      PROCS_MAX);
			break;
		case 'k':
			opt.keys = (uint32_t)num_arg(optarg, "key count", 2,
						     KEYS_MAX);
			break;
		case 'B':
			opt.pipe = (unsigned int)num_arg(optarg, "pipeline", 2,
							 PIPE_MAX);
			break;
		case 's':
			opt.seconds = strtod(optarg, &end);
			if (*end || !(opt.seconds >= 0.05 &&
				      opt.seconds <= 3600)) {
				fprintf(stderr, "tdb-bench-contend: bad "
					"seconds '%s'\n", optarg);
				exit(2);
			}
			break;
		case 'r':
			opt.runs = (unsigned int)num_arg(optarg, "runs", 1,
							 RUNS_MAX);
			break;
		case 'K':
			opt.ntxn_k = list_arg(optarg, "txn-k", opt.txn_k,
					      TXN_K_MAX);
			break;
		case 'n':
			opt.txn_keys = (uint32_t)num_arg(optarg, "txn keys",
							 TXN_K_MAX, 10000000);
			break;
		case 'o':
			opt.part_incr = !strcmp(optarg, "incr");
			opt.part_txn = !strcmp(optarg, "txn");
			if (!opt.part_incr && !opt.part_txn) {
				fprintf(stderr, "tdb-bench-contend: --only "
					"incr or txn\n");
				exit(2);
			}
			break;
		case 'O': opt.only_sys = optarg; break;
		case 'q':
			opt.seconds = 0.3;
			opt.runs = 1;
			opt.procs[0] = 1;
			opt.procs[1] = 2;
			opt.nprocs = 2;
			opt.keys = 100;
			opt.txn_keys = 2000;
			opt.quiet_wait = 0;
			break;
		case 'd': opt.dir = optarg; break;
		case 'T': opt.tdbd = optarg; break;
		case 'A':
			if (opt.ntdbd_args == 16) {
				fprintf(stderr, "tdb-bench-contend: at most 16 "
					"--tdbd-arg\n");
				exit(2);
			}
			opt.tdbd_args[opt.ntdbd_args++] = optarg;
			break;
		case 'R': opt.redis = optarg; break;
		case 'S': opt.strict = true; break;
		case 'Q':
			opt.quiet_pct = strtod(optarg, &end);
			if (*end || !(opt.quiet_pct > 0 &&
				      opt.quiet_pct <= 100)) {
				fprintf(stderr, "tdb-bench-contend: bad "
					"--quiet '%s'\n", optarg);
				exit(2);
			}
			break;
		case 'W':
			opt.quiet_wait = strtod(optarg, &end);
			if (*end || !(opt.quiet_wait >= 0 &&
				      opt.quiet_wait <= 3600)) {
				fprintf(stderr, "tdb-bench-contend: bad "
					"--quiet-wait '%s'\n", optarg);
				exit(2);
			}
			break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench-contend: unexpected argument "
			"'%s'\n", argv[optind]);
		exit(2);
	}
}

static struct cpu_sample cpu_at_start;
static double srv_cpu_at_start;

static double servers_cpu(void)
{
	return proc_cpu(sys[SYS_TDB].pid) + proc_cpu(sys[SYS_REDIS].pid);
}

static void print_header(void)
{
	char cpu[256];
	struct utsname u;
	struct cpu_sample a, b;
	double steal, o;
	int mj, mn, pt;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int maxp = 0;

	for (unsigned int i = 0; i < opt.nprocs; i++)
		maxp = opt.procs[i] > maxp ? opt.procs[i] : maxp;
	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	printf("tdb-bench-contend: read-modify-write, tdb vs Redis and LMDB "
	       "(issue 24)\n");
	printf("  machine   %s, %ld CPUs online, kernel %s\n", cpu, ncpu,
	       u.release);
	if (maxp > (unsigned int)ncpu)
		printf("            %u client processes oversubscribe the %ld "
		       "CPUs (and the server shares them)\n", maxp, ncpu);
	cpu_sample(&a);
	usleep(300000);
	cpu_sample(&b);
	o = cpu_others(&a, &b, &steal);
	if (o >= 0)
		printf("  others    other processes used %.0f%% of the CPUs "
		       "just before the start%s\n", o * 100,
		       o > 0.1 ? " - the figures will be noisy" : "");
	printf("  build     gcc %s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimised"
#else
	       ", NOT optimised: the figures mean little"
#endif
	       );
	if (opt.part_incr) {
		printf("  incr      %.1f s a cell; procs", opt.seconds);
		for (unsigned int i = 0; i < opt.nprocs; i++)
			printf("%s%u", i ? "," : " ", opt.procs[i]);
		printf("; 1 key, and %u keys by zipf 0.99 (key 0 takes "
		       "%.1f%%);\n            pipelines of %u; values decimal "
		       "text; %u run%s\n", opt.keys, 100 / zipf.zetan, opt.pipe,
		       opt.runs, opt.runs == 1 ? "" : "s");
	}
	if (opt.part_txn)
		printf("  txn       %.1f s a cell, one process, %u keys, k "
		       "keys a transaction\n", opt.seconds, opt.txn_keys);
	if (!sys[SYS_TDB].state) {
		printf("  tdb       %s --config /dev/null --sync none", tdb.bin);
		for (unsigned int i = 0; i < opt.ntdbd_args; i++)
			printf(" %s", opt.tdbd_args[i]);
		printf("\n            (each change written to the WAL, not "
		       "synced)\n");
	}
	else
		printf("  tdb       skipped: %s\n", sys[SYS_TDB].why);
	if (!sys[SYS_REDIS].state)
		printf("  Redis     %s %s, Unix socket, no persistence "
		       "(--save \"\" --appendonly no)\n", rds.bin,
		       rds.version);
	else
		printf("  Redis     skipped: %s\n", sys[SYS_REDIS].why);
	mdb_version(&mj, &mn, &pt);
	if (!sys[SYS_LMDB].state)
		printf("  LMDB      %d.%d.%d, MDB_NOSYNC, one environment "
		       "opened by each process\n", mj, mn, pt);
	else
		printf("  LMDB      skipped: %s\n", sys[SYS_LMDB].why);
	for (int w = 0; w < W_N && opt.part_incr; w++)
		if (!way_state[w].ok && !sys[ways[w].sys].state) {
			char what[64];

			snprintf(what, sizeof(what), ways[w].what, opt.pipe);
			printf("  not available: %s %s: %s\n",
			       sys_name[ways[w].sys], what, way_state[w].why);
		}
	fflush(stdout);
}

static void print_footer(double secs)
{
	struct cpu_sample end;
	double steal, o, srv = servers_cpu() - srv_cpu_at_start;

	cpu_sample(&end);
	o = cpu_others(&cpu_at_start, &end, &steal);
	printf("\nincr/s: all processes' increments over the span from the "
	       "first one's start to\nthe last one's end; p50/p99: of one "
	       "increment, retries included (pipelined:\na call's time over "
	       "its B); tries: attempts per increment (a conflict costs\n"
	       "one more); CPU c+s: CPUs used by the clients and by the "
	       "server; /LMDB, /INCR,\n/INCRp: incr/s over LMDB's, Redis "
	       "INCR's, Redis pipelined INCR's at the same\nprocs; check: "
	       "every counter equal to the increments acknowledged; oth%%:\n"
	       "the share of the CPUs other processes used during the cell "
	       "(each cell waited\nup to %.0f s for a quarter second with less "
	       "than %.0f%%).\n", opt.quiet_wait, opt.quiet_pct);
	printf("Medians over %u run%s.  Total %.0f s", opt.runs,
	       opt.runs == 1 ? "" : "s", secs);
	if (o >= 0) {
		o -= srv / (end.total - cpu_at_start.total);
		printf("; meanwhile other processes used %.0f%% of the CPUs, "
		       "the hypervisor stole %.0f%%%s", o < 0 ? 0 : o * 100,
		       steal * 100, o > 0.1 || steal > 0.05 ?
		       ": figures are noisy" : "");
	}
	printf(".\n");
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *base;
	unsigned int maxp = 1;
	double t0;
	int (*const start[SYS_N])(char *) = { tdb_start, redis_start,
					      lmdb_start };

	parse_args(argc, argv);
	for (unsigned int i = 0; i < opt.nprocs; i++)
		maxp = opt.procs[i] > maxp ? opt.procs[i] : maxp;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	base = opt.dir ? opt.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/tdb-contend.XXXXXX",
			     base) >= sizeof(tmpdir) - 64)
		die("--dir is too long");
	if (!mkdtemp(tmpdir)) {
		tmpdir[0] = 0;
		die("cannot make a directory under %s: %s", base,
		    strerror(errno));
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	counts = mmap(NULL, sizeof(*counts) * opt.keys * maxp,
		      PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		      0);
	samples = mmap(NULL, sizeof(*samples) * SAMPLES_MAX * maxp,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	gather = malloc(sizeof(*gather) * SAMPLES_MAX * maxp);
	perm = malloc(sizeof(*perm) * opt.txn_keys);
	if (sh == MAP_FAILED || counts == MAP_FAILED ||
	    samples == MAP_FAILED || !gather || !perm)
		die("out of memory");
	zipf_init(&zipf, opt.keys, ZIPF_THETA);
	{
		uint64_t s = SEED;

		for (uint32_t i = 0; i < opt.txn_keys; i++)
			perm[i] = i;
		for (uint32_t i = opt.txn_keys - 1; i > 0; i--) {
			uint32_t j = (uint32_t)(splitmix64(&s) % (i + 1)), x;

			x = perm[i], perm[i] = perm[j], perm[j] = x;
		}
	}

	for (int s = 0; s < SYS_N; s++) {
		if (!sys_wanted(s) || (s != SYS_TDB && !opt.part_incr)) {
			sys[s].state = 1;
			msgf(sys[s].why, "not asked for");
			continue;
		}
		sys[s].state = start[s](sys[s].why);
		if (sys[s].state)
			fprintf(stderr, "tdb-bench-contend: %s skipped: %s\n",
				sys_name[s], sys[s].why);
		if (opt.strict && sys[s].state) {
			int st = sys[s].state;

			cleanup();
			return st > 0 ? 77 : 1;
		}
	}
	if (opt.part_incr)
		for (int w = 0; w < W_N; w++)
			probe_way(w);
	print_header();
	if (opt.strict && opt.part_incr)
		for (int w = 0; w < W_N; w++)
			if (!way_state[w].ok && !sys[ways[w].sys].state)
				die("%s: not available", wname(w));

	cpu_sample(&cpu_at_start);
	srv_cpu_at_start = servers_cpu();
	t0 = now();
	for (unsigned int run = 0; run < opt.runs; run++) {
		if (opt.part_incr)
			for (int d = 0; d < D_N; d++)
				for (unsigned int pi = 0; pi < opt.nprocs;
				     pi++) {
					for (int k = 0; k < W_N; k++) {
						int w = (k + (int)run) % W_N;

						if (way_state[w].ok)
							run_incr_cell(w, d, pi,
								      run);
					}
					fprintf(stderr, "  run %u %s procs %u"
						" done\n", run + 1,
						d == D_ONE ? "1 key" : "zipf",
						opt.procs[pi]);
				}
		if (opt.part_txn && !sys[SYS_TDB].state)
			for (unsigned int ki = 0; ki < opt.ntxn_k; ki++)
				for (int k = 0; k < T_N; k++)
					run_txn_cell((k + (int)run) % T_N, ki,
						     run);
	}
	if (opt.part_incr) {
		print_incr();
		print_incr_goals();
	}
	if (opt.part_txn && !sys[SYS_TDB].state)
		print_txn();
	print_footer(now() - t0);
	if (failed_verify)
		printf("FAIL: a counter did not equal the increments "
		       "acknowledged (above)\n");
	cleanup();
	return failed_verify ? 1 : 0;
}
