// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - tdb-bench: tdb through its client library (tdbd, rings)
 * against LMDB and Redis, end to end, with 1..N client processes.
 *
 * The driver makes a temp dir, the keys (N keys of 16 B: "key" and the
 * index in 13 digits) and starts every system: tdbd and redis-server on
 * Unix sockets in the temp dir, an LMDB environment there; each is
 * loaded with all N keys (100 B values).  Then, --runs times, for each
 * operation (get, put), process count (--procs) and batch (--batch) it
 * measures each system in turn (the order rotates between runs) on the
 * same keys: P forked workers, each with its own connection or
 * environment, released together, each doing --ops operations on keys
 * drawn uniformly from a fixed-seed stream of its own (the same stream
 * for every system).  Every value read is checked.
 *
 * Reported per row: the median over runs of ops/s (all workers' ops over
 * the span from the first start to the last end), of p50 and p99 latency
 * (batch 1: every operation, timed by CLOCK_MONOTONIC around the call;
 * batch B: each call of B operations, divided by B), the CPU the
 * workers and the server used (in CPUs), and ratios of tdb's ops/s to
 * the peers'.  Then the goals, each MET or MISSED.
 *
 * --ttl MS adds tdb+ttl and Redis+ttl: the same servers, tables (a
 * database) of their own loaded with that TTL, and the same put cells
 * with it (tdbc_put_ttl / TDBC_TTL; SET ... PX), measured in the same
 * runs as the plain puts, in the rotation; a table of puts with and
 * without the TTL follows, each ratio the median of the runs' ratios
 * (a run's two cells are measured one after the other).  LMDB has no
 * TTL: it has no such row.
 *
 * Children: servers die with us (PR_SET_PDEATHSIG); so do workers.
 * Errors stop the benchmark (exit 1) with the system's message; a
 * system that is missing or did not start is reported as skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdb/proto.h>

#include "bench.h"
#include "../../bench/common/csv.h"
#include "../../bench/common/machine.h"

#define SEED 0x7db5eedc0ffee123ull

struct options opt = {
	.keys = 1000000, .ops = 100000, .txn_ops = 10000, .sync_ops = 1000,
	.vsize = 100, .procs = { 1, 8 }, .nprocs = 2, .tables = 1,
	.batches = { 1, 32 }, .nbatches = 2, .runs = 3,
	.op_on = { true, true },
};
char *keys;
char tmpdir[4096];

/* The systems, in report order. */
static const struct peer *const peers[] = {
	&peer_tdb, &peer_tdb_rings, &peer_lmdb, &peer_lmdb_sync, &peer_redis,
	&peer_tdb_ttl, &peer_redis_ttl,
};
#define NPEERS (sizeof(peers) / sizeof(peers[0]))
enum { S_TDB, S_TDB_RINGS, S_LMDB, S_LMDB_SYNC, S_REDIS, S_TDB_TTL,
       S_REDIS_TTL };

static bool is_ttl(size_t s)
{
	return s == S_TDB_TTL || s == S_REDIS_TTL;
}

static const char *const op_name[OP_N] = { "get", "put" };

static struct {
	int started;            /* 0 yes, 1 absent, -1 failed */
	char why[MSG_LEN];
} sys[NPEERS];

/* One cell, one run. */
struct result {
	double ops_s, p50, p99;  /* ops/s; latency in us per op */
	double cli, srv;         /* CPUs used by workers, by the server */
	uint32_t ops;            /* per process */
	bool done;
};
static struct result res[NPEERS][OP_N][4][8][RUNS_MAX];

/* --- the shared slots the workers fill -------------------------------- */
struct slot {
	double t0, t1;
	double cpu;              /* the worker's CPU time between them */
	uint32_t nsamp;
	int failed;
	char msg[MSG_LEN];
};
static struct slot *slots;      /* [PROCS_MAX], MAP_SHARED */
static uint32_t *samples;       /* [PROCS_MAX][SAMPLES_MAX], MAP_SHARED */
static uint32_t *gather;        /* the driver's copy for sorting */

static volatile sig_atomic_t interrupted;
static pid_t workers[PROCS_MAX];

/* --- cleanup and errors --------------------------------------------------- */
static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void cleanup(void)
{
	for (size_t s = 0; s < NPEERS; s++)
		if (!sys[s].started) {
			sys[s].started = -1;
			peers[s]->stop();
		}
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = 0;
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench: error: ", stderr);
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

static void on_signal(int sig)
{
	interrupted = sig;
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGKILL);
}

static void check_interrupt(void)
{
	if (interrupted)
		die("interrupted by signal %d", (int)interrupted);
}

/* --- keys ------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void make_keys(void)
{
	char buf[32];

	keys = malloc((size_t)opt.keys * KEY_LEN);
	if (!keys)
		die("out of memory for %u keys", opt.keys);
	for (uint32_t i = 0; i < opt.keys; i++) {
		snprintf(buf, sizeof(buf), "key%013" PRIu32, i);
		memcpy(keys + (size_t)i * KEY_LEN, buf, KEY_LEN);
	}
}

/* --- a worker ----------------------------------------------------------- */
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

/* The work of process `proc` of a cell: its keys' stream depends on the
 * cell and run, never on the system. */
static __attribute__((noreturn))
void worker(const struct peer *p, struct work *w, unsigned int procs,
	    unsigned int run, uint32_t ops, int ready, int go)
{
	struct slot *sl = &slots[w->proc];
	uint32_t *smp = samples + (size_t)w->proc * SAMPLES_MAX;
	uint64_t seed = SEED ^ ((uint64_t)w->op << 56) ^
		((uint64_t)run << 48) ^ ((uint64_t)w->proc << 40) ^
		((uint64_t)w->batch << 32) ^ ((uint64_t)procs << 24);
	uint32_t calls = (ops + w->batch - 1) / w->batch;
	uint32_t step = (calls + SAMPLES_MAX - 1) / SAMPLES_MAX, done = 0;
	uint32_t idx[BATCH_MAX];
	void *h = NULL;
	double t;
	char c = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rc = p->open(w, &h);
	if (write(ready, &c, 1) != 1)
		rc = -1;
	close(ready);   /* a worker that dies early: EOF for the driver */
	if (rc) {
		sl->failed = 1;
		memcpy(sl->msg, w->msg, MSG_LEN);
		_exit(1);
	}
	/* The barrier: the driver closes its end of `go` to release all. */
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	sl->cpu = -self_cpu();
	sl->t0 = t = now();
	for (uint32_t k = 0; k < calls; k++) {
		unsigned int n = ops - done < w->batch ? ops - done : w->batch;
		double t1;

		for (unsigned int j = 0; j < n; j++)
			idx[j] = (uint32_t)(((splitmix64(&seed) >> 32) *
					     (uint64_t)opt.keys) >> 32);
		rc = w->op == OP_GET ? p->get(h, w, idx, n) :
			p->put(h, w, idx, n);
		t1 = now();
		if (rc) {
			sl->failed = 1;
			memcpy(sl->msg, w->msg, MSG_LEN);
			_exit(1);
		}
		/* Latency of whole batches only; the sample is every
		 * step-th call. */
		if (n == w->batch && k % step == 0 && sl->nsamp < SAMPLES_MAX)
			smp[sl->nsamp++] = (uint32_t)((t1 - t) * 1e9 + 0.5);
		t = t1;
		done += n;
	}
	sl->t1 = now();
	sl->cpu += self_cpu();
	p->close(h);
	_exit(0);
}

/* --- a cell ----------------------------------------------------------- */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank. */
static double pct(const uint32_t *s, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n + 0.999999);

	return n ? s[i ? i - 1 : 0] : 0;
}

/* --verbose: the whole distribution of the cell's samples (sorted in
 * gather[0, n)), per call. */
static void describe_latency(const struct peer *p, enum op op,
			     unsigned int procs, unsigned int batch, size_t n)
{
	static const double q[] = { 0.1, 0.5, 0.9, 0.99, 0.999, 1 };
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += gather[i];
	fprintf(stderr, "    %s %s procs %u batch %u: %zu samples of a call, "
		"us: mean %.2f", p->name, op_name[op], procs, batch, n,
		n ? sum / (double)n / 1000 : 0);
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		fprintf(stderr, " p%g %.2f", q[i] * 100,
			pct(gather, n, q[i]) / 1000);
	fprintf(stderr, "\n");
}

static void run_cell(size_t s, enum op op, unsigned int bi, unsigned int pi,
		     unsigned int run, uint32_t gen)
{
	const struct peer *p = peers[s];
	unsigned int procs = opt.procs[pi], batch = opt.batches[bi];
	uint32_t ops = p->ops(op, batch, procs);
	struct result *r = &res[s][op][bi][pi][run];
	int ready[2], go[2];
	double first = 1e300, last = 0, cli = 0, srv0, srv1, w0, w1;
	size_t n = 0;
	pid_t spid = p->server();
	char c;

	if (!ops)
		return;
	memset(slots, 0, sizeof(*slots) * procs);
	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	for (unsigned int i = 0; i < procs; i++) {
		struct work w = { .op = op, .batch = batch, .proc = i,
				  .gen = gen };

		workers[i] = fork();
		if (workers[i] < 0)
			die("fork: %s", strerror(errno));
		if (workers[i] == 0) {
			close(ready[0]);
			close(go[1]);
			worker(p, &w, procs, run, ops, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	/* Every worker has opened its handle (or failed) ... */
	for (unsigned int i = 0; i < procs; i++)
		while (read(ready[0], &c, 1) != 1) {
			if (errno == EINTR && !interrupted)
				continue;
			check_interrupt();
			die("%s: a worker died before the start", p->name);
		}
	close(ready[0]);
	srv0 = spid ? proc_cpu(spid) : 0;
	w0 = now();
	close(go[1]);           /* ... go */
	for (unsigned int i = 0; i < procs; i++) {
		int st;
		pid_t pid;

		while ((pid = waitpid(workers[i], &st, 0)) < 0 &&
		       errno == EINTR)
			check_interrupt();
		workers[i] = 0;
		if (pid < 0)
			die("wait: %s", strerror(errno));
		if (slots[i].failed)
			die("%s, %s, %u procs, batch %u, process %u: %s",
			    p->name, op_name[op], procs, batch, i,
			    slots[i].msg);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("%s, %s: worker %u ended with status %#x%s",
			    p->name, op_name[op], i, st,
			    spid && kill(spid, 0) ? " (the server is gone)" :
			    "");
	}
	w1 = now();
	srv1 = spid ? proc_cpu(spid) : 0;
	check_interrupt();
	for (unsigned int i = 0; i < procs; i++) {
		cli += slots[i].cpu;
		first = slots[i].t0 < first ? slots[i].t0 : first;
		last = slots[i].t1 > last ? slots[i].t1 : last;
		memcpy(gather + n, samples + (size_t)i * SAMPLES_MAX,
		       slots[i].nsamp * sizeof(*gather));
		n += slots[i].nsamp;
	}
	qsort(gather, n, sizeof(*gather), cmp_u32);
	if (opt.verbose)
		describe_latency(p, op, procs, batch, n);
	r->ops = ops;
	r->ops_s = (double)ops * procs / (last - first);
	r->p50 = pct(gather, n, 0.50) / 1000.0 / batch;
	r->p99 = pct(gather, n, 0.99) / 1000.0 / batch;
	r->cli = cli / (last - first);
	r->srv = spid && srv0 >= 0 && srv1 >= 0 ? (srv1 - srv0) / (w1 - w0) :
		0;
	r->done = true;
}

/* --- medians ----------------------------------------------------------- */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median over runs of the field at byte offset `off`; 0 if the cell
 * never ran (a skipped system or a cell it does not have). */
static double med(size_t s, int op, unsigned int bi, unsigned int pi,
		  size_t off)
{
	double v[RUNS_MAX];
	unsigned int n = 0;

	for (unsigned int r = 0; r < opt.runs; r++) {
		const struct result *x = &res[s][op][bi][pi][r];

		if (x->done)
			v[n++] = *(const double *)(const void *)
				((const char *)x + off);
	}
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MED(s, op, bi, pi, f) med(s, op, bi, pi, offsetof(struct result, f))

static int batch_index(unsigned int b)
{
	for (unsigned int i = 0; i < opt.nbatches; i++)
		if (opt.batches[i] == b)
			return (int)i;
	return -1;
}

/* The first batch > 1 (the pipelined / submitted one), or -1. */
static int big_batch(void)
{
	for (unsigned int i = 0; i < opt.nbatches; i++)
		if (opt.batches[i] > 1)
			return (int)i;
	return -1;
}

static bool wanted(size_t s);

/* --- the report -------------------------------------------------------- */
static void label(char *buf, size_t len, size_t s, int op, unsigned int b)
{
	const char *f = peers[s]->what[op][b > 1];

	if (b > 1)
		snprintf(buf, len, f, b);
	else
		snprintf(buf, len, "%s", f);
}

static FILE *csv;               /* --csv FILE, or NULL */

/* --csv: a row per cell; tdb's cells one per ratio printed (peer named). */
static void csv_cell(size_t s, int op, unsigned int bi, unsigned int pi,
		     const char *what)
{
	static const char *const pname[3] = { "LMDB", "Redis",
					      "Redis pipelined" };
	int b1 = batch_index(1), bb = big_batch();
	double v = MED(s, op, bi, pi, ops_s), peer[3];
	char o[96], param[32];

	snprintf(o, sizeof(o), "%s %s", op_name[op], what);
	snprintf(param, sizeof(param), "procs %u batch %u", opt.procs[pi],
		 opt.batches[bi]);
	if (s != S_TDB && s != S_TDB_RINGS) {
		bench_csv_row(csv, "daemon", peers[s]->name, NULL, o, param, v,
			      "ops/s", -1);
		return;
	}
	peer[0] = b1 < 0 ? 0 : MED(S_LMDB, op, b1, pi, ops_s);
	peer[1] = b1 < 0 ? 0 : MED(S_REDIS, op, b1, pi, ops_s);
	peer[2] = bb < 0 ? 0 : MED(S_REDIS, op, bb, pi, ops_s);
	for (int i = 0; i < 3; i++)
		if (v > 0 && peer[i] > 0)
			bench_csv_row(csv, "daemon", peers[s]->name, pname[i],
				      o, param, v, "ops/s", v / peer[i]);
}

static void ratio(double t, double peer)
{
	if (t > 0 && peer > 0)
		printf(" %8.1fx", t / peer);
	else
		printf(" %9s", "-");
}

static void print_table(int op)
{
	int b1 = batch_index(1), bb = big_batch();

	printf("\n%s: %s random keys of %u; every value %s\n",
	       op_name[op], op == OP_GET ? "read" : "replace the values of",
	       opt.keys, op == OP_GET ? "read is checked" :
	       "written is a new generation");
	printf("%-9s %-27s %5s %5s %11s %8s %8s %9s %9s %9s %9s\n",
	       "system", "call", "procs", "batch", "ops/s", "p50 us",
	       "p99 us", "CPU c+s", "tdb/LMDB", "tdb/Redis", "tdb/Rpipe");
	for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
		for (size_t s = 0; s < NPEERS; s++) {
			for (unsigned int bi = 0; bi < opt.nbatches; bi++) {
				unsigned int b = opt.batches[bi];
				double v = MED(s, op, bi, pi, ops_s);
				char what[64], cpu[16];

				if (!wanted(s) || is_ttl(s) ||
				    !peers[s]->ops(op, b, opt.procs[pi]))
					continue;
				label(what, sizeof(what), s, op, b);
				if (sys[s].started) {
					printf("%-9s %-27s %5u %5u %11s\n",
					       peers[s]->name, what,
					       opt.procs[pi], b, "skipped");
					continue;
				}
				snprintf(cpu, sizeof(cpu), "%.1f+%.1f",
					 MED(s, op, bi, pi, cli),
					 MED(s, op, bi, pi, srv));
				printf("%-9s %-27s %5u %5u %11.0f %8.2f %8.2f "
				       "%9s", peers[s]->name, what,
				       opt.procs[pi], b, v,
				       MED(s, op, bi, pi, p50),
				       MED(s, op, bi, pi, p99), cpu);
				csv_cell(s, op, bi, pi, what);
				if (s == S_TDB || s == S_TDB_RINGS) {
					ratio(v, b1 < 0 ? 0 :
					      MED(S_LMDB, op, b1, pi, ops_s));
					ratio(v, b1 < 0 ? 0 :
					      MED(S_REDIS, op, b1, pi, ops_s));
					ratio(v, bb < 0 ? 0 :
					      MED(S_REDIS, op, bb, pi, ops_s));
				}
				printf("\n");
			}
		}
	}
}

/* The median over runs of a/b of the runs' ops/s (both cells done). */
static double med_ratio(size_t a, size_t b, int op, unsigned int bi,
			unsigned int pi)
{
	double v[RUNS_MAX];
	unsigned int n = 0;

	for (unsigned int r = 0; r < opt.runs; r++) {
		const struct result *x = &res[a][op][bi][pi][r];
		const struct result *y = &res[b][op][bi][pi][r];

		if (x->done && y->done && y->ops_s > 0)
			v[n++] = x->ops_s / y->ops_s;
	}
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --ttl: puts with the TTL against the same puts without, per system
 * (the ratio: the median of the runs' ratios), and tdb's against
 * Redis's with the TTL. */
static void print_ttl_table(void)
{
	static const size_t pair[2][2] = { { S_TDB, S_TDB_TTL },
					   { S_REDIS, S_REDIS_TTL } };
	int b1 = batch_index(1), bb = big_batch();

	printf("\nput with a TTL of %llu ms (--ttl; nothing expires during "
	       "the run) against put without:\nthe same cells, tables "
	       "(tdb) or a database (Redis) of their own loaded with the "
	       "TTL\n", (unsigned long long)opt.ttl);
	printf("%-9s %-27s %5s %5s %11s %11s %7s %13s %13s %9s %9s\n",
	       "system", "call with TTL", "procs", "batch", "ops/s no TTL",
	       "ops/s TTL", "TTL/no", "p50 us no/TTL", "p99 us no/TTL",
	       "tdb/Redis", "tdb/Rpipe");
	for (unsigned int pi = 0; pi < opt.nprocs; pi++)
		for (size_t k = 0; k < 2; k++)
			for (unsigned int bi = 0; bi < opt.nbatches; bi++) {
				size_t s = pair[k][0], t = pair[k][1];
				unsigned int b = opt.batches[bi];
				double v = MED(t, OP_PUT, bi, pi, ops_s);
				double r = med_ratio(t, s, OP_PUT, bi, pi);
				char what[64], lat[2][32], param[48];

				if (!wanted(t))
					continue;
				label(what, sizeof(what), t, OP_PUT, b);
				if (sys[s].started || sys[t].started) {
					printf("%-9s %-27s %5u %5u %11s\n",
					       peers[t]->name, what,
					       opt.procs[pi], b, "skipped");
					continue;
				}
				snprintf(lat[0], sizeof(lat[0]), "%.2f/%.2f",
					 MED(s, OP_PUT, bi, pi, p50),
					 MED(t, OP_PUT, bi, pi, p50));
				snprintf(lat[1], sizeof(lat[1]), "%.2f/%.2f",
					 MED(s, OP_PUT, bi, pi, p99),
					 MED(t, OP_PUT, bi, pi, p99));
				printf("%-9s %-27s %5u %5u %11.0f %11.0f %6.3fx "
				       "%13s %13s", peers[t]->name, what,
				       opt.procs[pi], b,
				       MED(s, OP_PUT, bi, pi, ops_s), v, r,
				       lat[0], lat[1]);
				snprintf(param, sizeof(param),
					 "procs %u batch %u", opt.procs[pi], b);
				if (csv && r > 0)
					bench_csv_row(csv, "daemon",
						      peers[t]->name,
						      peers[s]->name,
						      "put TTL", param, v,
						      "ops/s", r);
				if (t == S_TDB_TTL) {
					ratio(v, b1 < 0 || sys[S_REDIS_TTL]
					      .started ? 0 :
					      MED(S_REDIS_TTL, OP_PUT, b1, pi,
						  ops_s));
					ratio(v, bb < 0 || sys[S_REDIS_TTL]
					      .started ? 0 :
					      MED(S_REDIS_TTL, OP_PUT, bb, pi,
						  ops_s));
				}
				printf("\n");
			}
}

static const char *verdict(bool met)
{
	return met ? "MET" : "MISSED";
}

/* tdb put / peer's batch-1 put >= goal, at every process count. */
static void goal_put(size_t peer, double goal, const char *what)
{
	int b1 = batch_index(1), bb = big_batch();
	bool all = true;

	printf("  put >= %.0fx %-28s", goal, what);
	if (sys[S_TDB].started || sys[peer].started || b1 < 0 ||
	    !opt.op_on[OP_PUT]) {
		printf(" not evaluated (%s)\n", b1 < 0 ? "no batch 1" :
		       !opt.op_on[OP_PUT] ? "no put" :
		       sys[S_TDB].started ? "tdb skipped" : "peer skipped");
		return;
	}
	for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
		double l = MED(peer, OP_PUT, b1, pi, ops_s);
		double t = MED(S_TDB, OP_PUT, b1, pi, ops_s);

		printf(" %u proc%s %.1fx", opt.procs[pi],
		       opt.procs[pi] == 1 ? "" : "s", t / l);
		if (bb >= 0)
			printf(" (batch %u: %.1fx)", opt.batches[bb],
			       MED(S_TDB, OP_PUT, bb, pi, ops_s) / l);
		all &= t / l >= goal;
		printf(";");
	}
	printf(" %s\n", verdict(all));
}

/* tdb's (mapped) batch-1 gets / the peer's batch-1 gets >= goal, at every
 * process count. */
static void goal_get(size_t me, size_t peer, double goal, const char *what)
{
	int b1 = batch_index(1);
	bool all = true;

	printf("  get >= %.0fx %-28s", goal, what);
	if (sys[me].started || sys[peer].started || b1 < 0 ||
	    !opt.op_on[OP_GET]) {
		printf(" not evaluated\n");
		return;
	}
	for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
		double r = MED(me, OP_GET, b1, pi, ops_s) /
			   MED(peer, OP_GET, b1, pi, ops_s);

		printf(" %u proc%s %.1fx;", opt.procs[pi],
		       opt.procs[pi] == 1 ? "" : "s", r);
		all &= r >= goal;
	}
	printf(" %s\n", verdict(all));
}

/* --ttl: tdb's puts with the TTL at least 0.9x those without, in every
 * cell (median of the runs' ratios). */
static void goal_ttl(void)
{
	bool all = true;

	printf("  put with TTL >= 0.9x without (tdb):    ");
	if (sys[S_TDB].started || sys[S_TDB_TTL].started ||
	    !opt.op_on[OP_PUT]) {
		printf(" not evaluated\n");
		return;
	}
	for (unsigned int pi = 0; pi < opt.nprocs; pi++)
		for (unsigned int bi = 0; bi < opt.nbatches; bi++) {
			double r = med_ratio(S_TDB_TTL, S_TDB, OP_PUT, bi, pi);

			printf(" p%u b%u %.3fx;", opt.procs[pi],
			       opt.batches[bi], r);
			all &= r >= 0.9;
		}
	printf(" %s\n", verdict(all));
}

static void print_goals(void)
{
	int b1 = batch_index(1);

	printf("\ngoals (tdb batch 1 = one blocking call per operation; "
	       "ratios of median ops/s):\n");
	goal_put(S_LMDB, 10, "LMDB, 1 write txn per put:");
	goal_put(S_REDIS, 20, "Redis SET, unpipelined:");

	goal_get(S_TDB, S_LMDB, 2, "LMDB, 1 read txn per get:");
	if (opt.ttl)
		goal_ttl();

	printf("  get round trip p50 < 2 us (tdbc_get):  ");
	if (sys[S_TDB].started || b1 < 0 || !opt.op_on[OP_GET]) {
		printf(" not evaluated\n");
	} else {
		for (unsigned int pi = 0; pi < opt.nprocs; pi++)
			printf(" %u proc%s %.2f us%s", opt.procs[pi],
			       opt.procs[pi] == 1 ? "" : "s",
			       MED(S_TDB, OP_GET, b1, pi, p50),
			       pi == 0 ? " (judged)" : "");
		printf("; %s\n",
		       verdict(MED(S_TDB, OP_GET, b1, 0, p50) < 2.0));
	}

	printf("  ops/s grow with processes (%u -> %u): ", opt.procs[0],
	       opt.procs[opt.nprocs - 1]);
	if (sys[S_TDB].started || opt.nprocs < 2) {
		printf(" not evaluated\n");
		return;
	}
	{
		bool all = true;

		for (int op = 0; op < OP_N; op++)
			for (unsigned int bi = 0; bi < opt.nbatches &&
			     opt.op_on[op]; bi++) {
				double a = MED(S_TDB, op, bi, 0, ops_s);
				double z = MED(S_TDB, op, bi, opt.nprocs - 1,
					       ops_s);

				printf(" %s b%u x%.2f;", op_name[op],
				       opt.batches[bi], z / a);
				all &= z > a;
			}
		printf(" %s\n", verdict(all));
	}
}

/* --- the header -------------------------------------------------------- */
static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void read_word(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "?");
	if (f) {
		if (!fgets(buf, (int)len, f))
			snprintf(buf, len, "?");
		buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

/* What one clock read costs here (the latency figures include one). */
static volatile double clock_sink;

static double clock_cost_ns(void)
{
	double t0 = now(), t = 0;

	for (int i = 0; i < 100000; i++)
		t += now();
	clock_sink = t;
	return (now() - t0) / 100000 * 1e9;
}

static struct cpu_sample cpu_at_start;
static double srv_cpu_at_start;

static double servers_cpu(void)
{
	double sum = 0;

	for (size_t s = 0; s < NPEERS; s++) {
		pid_t pid = sys[s].started ? 0 : peers[s]->server();
		double c = pid ? proc_cpu(pid) : 0;

		sum += c > 0 ? c : 0;
	}
	return sum;
}

static void print_list(const char *name, const unsigned int *v,
		       unsigned int n)
{
	printf("%s", name);
	for (unsigned int i = 0; i < n; i++)
		printf("%s%u", i ? "," : " ", v[i]);
}

static void print_header(void)
{
	char cpu[256], clk[64];
	struct utsname u;
	cpu_set_t set;
	struct cpu_sample a, b;
	double steal, o;

	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set))
		CPU_SET(0, &set);
	read_word("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource", clk, sizeof(clk));
	printf("tdb-bench: tdb through libtdbclient vs LMDB and Redis, "
	       "end to end\n");
	printf("  machine   %s, nproc %d, kernel %s, vm.nr_hugepages %ld\n",
	       cpu, CPU_COUNT(&set), u.release,
	       read_long("/proc/sys/vm/nr_hugepages"));
	printf("  clock     CLOCK_MONOTONIC (%s), %.0f ns per read\n", clk,
	       clock_cost_ns());
	cpu_sample(&a);
	usleep(300000);
	cpu_sample(&b);
	o = cpu_others(&a, &b, &steal);
	if (o >= 0)
		printf("  others    other processes used %.0f%% of the CPUs "
		       "just before the start%s\n", o * 100,
		       o > 0.1 ? " - the figures will be noisy" : "");
	printf("  build     gcc %s%s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimised",
#else
	       ", NOT optimised: the figures mean little",
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	       ", SANITIZER build: the figures mean little"
#else
	       ""
#endif
	       );
	printf("  keys      %u keys of %u B (\"key%%013u\"), values of %u B; "
	       "uniform random keys,\n            a fixed-seed stream per "
	       "process, the same for every system\n", opt.keys, KEY_LEN,
	       opt.vsize);
	printf("  ops       %u per process and cell (LMDB 1 txn per put: %u)"
	       "; ", opt.ops,
	       opt.txn_ops < opt.ops ? opt.txn_ops : opt.ops);
	print_list("procs", opt.procs, opt.nprocs);
	print_list("; batch", opt.batches, opt.nbatches);
	printf("; %u run%s\n", opt.runs, opt.runs == 1 ? "" : "s");
	for (size_t s = 0; s < NPEERS; s++) {
		if (is_ttl(s) && !opt.ttl)
			continue;
		if (!sys[s].started)
			peers[s]->describe();
		else
			printf("  %-9s skipped: %s\n", peers[s]->name,
			       sys[s].why);
	}
	fflush(stdout);
}

static void print_footer(double secs)
{
	struct cpu_sample end;
	double steal, o, srv = servers_cpu() - srv_cpu_at_start;

	cpu_sample(&end);
	o = cpu_others(&cpu_at_start, &end, &steal);
	printf("\nops/s: all processes' operations over the span from the "
	       "first one's start to the\nlast one's end; p50/p99: of every "
	       "operation's time (one clock read per call,\nso it includes "
	       "the loop's own work: ~1 clock read and a random number); "
	       "batch > 1:\nthe time of each call of a whole batch divided "
	       "by the batch.  CPU c+s: CPUs used by\nthe client processes "
	       "and by the server (tdbd, redis-server) during the cell.\n"
	       "Medians over %u run%s.  Total %.0f s", opt.runs,
	       opt.runs == 1 ? "" : "s", secs);
	if (o >= 0) {
		/* cpu_others counts the servers (not reaped yet) as
		 * others: take their time out. */
		o -= srv / (end.total - cpu_at_start.total);
		printf("; meanwhile other processes used %.0f%% of the CPUs, "
		       "the hypervisor stole %.0f%%%s", o < 0 ? 0 : o * 100,
		       steal * 100, o > 0.1 || steal > 0.05 ?
		       ": figures are noisy" : "");
	}
	printf(".\n");
}

/* --- options -------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench [options]\n"
"tdb through libtdbclient (tdbd, shared rings) against LMDB (MDB_NOSYNC,\n"
"one environment, several processes) and Redis (redis-server on a Unix\n"
"socket): get and put with 1..N client processes, batch 1 and B.  Prints\n"
"ops/s, p50/p99 latency, ratios and the goals.\n"
"\n"
"  -n, --keys N         keys in every store (default 1000000)\n"
"  -o, --ops N          operations per process and cell (default 100000)\n"
"  -t, --txn-ops N      per process where LMDB commits every put\n"
"                       (default 10000)\n"
"  -y, --sync-ops N     LMDB puts with a synced commit, one process; 0: none\n"
"                       (default 1000)\n"
"  -p, --procs LIST     client process counts (default 1,8)\n"
"  -b, --batch LIST     batches, 1 and at most one more (default 1,32)\n"
"  -r, --runs R         runs; medians are reported (default 3)\n"
"  -s, --value-size B   value size, %u..65536 (default 100)\n"
"  -m, --tables N       tdb only: N tables of --keys keys each; process i\n"
"                       works on table i %% N (default 1: all share one)\n"
"  -d, --dir DIR        where the temp dir goes (default $TMPDIR or /tmp)\n"
"  -T, --tdbd PATH      the tdbd to start (default: $TDBD, else the build\n"
"                       tree's)\n"
"  -A, --tdbd-arg ARG   one more argument for tdbd (repeat: -A --workers\n"
"                       -A 2)\n"
"  -R, --redis PATH     the redis-server to start (default: from $PATH)\n"
"  -O, --only LIST      systems to run: tdb (tdb and tdb-rings), lmdb,\n"
"                       redis (default all)\n"
"  -w, --op LIST        operations: get,put (default both)\n"
"  -S, --strict         exit 77 (skip) if tdbd or redis-server is missing\n"
"                       and 1 if a system fails to start (for the tests)\n"
"  -v, --verbose        each run's figures on stderr\n"
"      --ttl MS         also puts with a TTL of MS ms (1..%llu; e.g. 3600000:\n"
"                       nothing expires during the run) for tdb and Redis,\n"
"                       against the same puts without, in the same runs\n"
"      --csv FILE       also write the figures to FILE as CSV\n"
"                       (bench/common/csv.h; bench/summary/make-charts.sh)\n"
"      --evict POLICY   tdb only: bound the tables (--max-records) with\n"
"                       lru, lfu or ttl: mapped gets of lru/lfu tables\n"
"                       send TOUCH hints (what they cost readers)\n"
"      --max-records N  with --evict: the bound (default 2 x --keys:\n"
"                       nothing is evicted)\n"
"  -h, --help           this text\n", VAL_MIN,
		(unsigned long long)TDB_TTL_MAX);
}

static uint64_t parse_num(const char *s, const char *what, uint64_t min,
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
		fprintf(stderr, "tdb-bench: bad %s '%s' (%" PRIu64 "..%"
			PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static unsigned int parse_list(const char *s, const char *what,
			       unsigned int *v, unsigned int cap,
			       unsigned int max)
{
	char buf[256], *save = NULL;
	unsigned int n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == cap) {
			fprintf(stderr, "tdb-bench: at most %u %s\n", cap,
				what);
			exit(2);
		}
		v[n++] = (unsigned int)parse_num(t, what, 1, max);
	}
	if (!n) {
		fprintf(stderr, "tdb-bench: empty %s list\n", what);
		exit(2);
	}
	return n;
}

static void parse_ops(const char *s)
{
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	opt.op_on[OP_GET] = opt.op_on[OP_PUT] = false;
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		int op = !strcmp(t, "get") ? OP_GET :
			!strcmp(t, "put") ? OP_PUT : -1;

		if (op < 0) {
			fprintf(stderr, "tdb-bench: unknown operation '%s' "
				"(get, put)\n", t);
			exit(2);
		}
		opt.op_on[op] = true;
	}
}

static bool wanted(size_t s)
{
	const char *name = s == S_LMDB_SYNC ? "lmdb" :
			   s == S_TDB_RINGS || s == S_TDB_TTL ? "tdb" :
			   s == S_REDIS_TTL ? "redis" : peers[s]->name;
	char buf[256], *save = NULL;

	if (is_ttl(s) && (!opt.ttl || !opt.op_on[OP_PUT]))
		return false;
	if (!opt.only)
		return true;
	snprintf(buf, sizeof(buf), "%s", opt.only);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		if (!strcasecmp(t, name))
			return true;
	return false;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "keys", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ "txn-ops", required_argument, NULL, 't' },
		{ "sync-ops", required_argument, NULL, 'y' },
		{ "procs", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' },
		{ "runs", required_argument, NULL, 'r' },
		{ "value-size", required_argument, NULL, 's' },
		{ "tables", required_argument, NULL, 'm' },
		{ "dir", required_argument, NULL, 'd' },
		{ "tdbd", required_argument, NULL, 'T' },
		{ "tdbd-arg", required_argument, NULL, 'A' },
		{ "redis", required_argument, NULL, 'R' },
		{ "only", required_argument, NULL, 'O' },
		{ "op", required_argument, NULL, 'w' },
		{ "strict", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "csv", required_argument, NULL, 'C' },
		{ "ttl", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "evict", required_argument, NULL, 1000 },
		{ "max-records", required_argument, NULL, 1001 },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "n:o:t:y:p:b:r:s:m:d:T:A:R:O:w:Svh",
				lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt.keys = parse_num(optarg, "key count", 1,
					     UINT32_MAX);
			break;
		case 'o':
			opt.ops = parse_num(optarg, "op count", 1, UINT32_MAX);
			break;
		case 't':
			opt.txn_ops = parse_num(optarg, "op count", 1,
						UINT32_MAX);
			break;
		case 'y':
			opt.sync_ops = parse_num(optarg, "op count", 0,
						 UINT32_MAX);
			break;
		case 'p':
			opt.nprocs = parse_list(optarg, "procs", opt.procs, 8,
						PROCS_MAX);
			break;
		case 'b':
			opt.nbatches = parse_list(optarg, "batch",
						  opt.batches, 2, BATCH_MAX);
			break;
		case 'r':
			opt.runs = parse_num(optarg, "run count", 1, RUNS_MAX);
			break;
		case 's':
			opt.vsize = parse_num(optarg, "value size", VAL_MIN,
					      65536);
			break;
		case 'm':
			opt.tables = parse_num(optarg, "table count", 1, 64);
			break;
		case 'd': opt.dir = optarg; break;
		case 'T': opt.tdbd = optarg; break;
		case 'A':
			if (opt.ntdbd_args == 16) {
				fprintf(stderr, "tdb-bench: at most 16 "
					"--tdbd-arg\n");
				exit(2);
			}
			opt.tdbd_args[opt.ntdbd_args++] = optarg;
			break;
		case 'R': opt.redis = optarg; break;
		case 'O': opt.only = optarg; break;
		case 'w': parse_ops(optarg); break;
		case 'S': opt.strict = true; break;
		case 'v': opt.verbose = true; break;
		case 'C': opt.csv = optarg; break;
		case 'L':
			opt.ttl = parse_num(optarg, "TTL in ms", 1,
					    TDB_TTL_MAX);
			break;
		case 1000:
			opt.evict = !strcmp(optarg, "lru") ? TDB_EVICT_LRU :
				    !strcmp(optarg, "lfu") ? TDB_EVICT_LFU :
				    !strcmp(optarg, "ttl") ? TDB_EVICT_TTL : 0;
			if (!opt.evict) {
				fprintf(stderr, "tdb-bench: --evict %s: one "
					"of lru, lfu, ttl\n", optarg);
				exit(2);
			}
			break;
		case 1001:
			opt.max_records = parse_num(optarg, "max records", 1,
						    UINT64_MAX);
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(2);
	}
}

/* --- main --------------------------------------------------------------- */
static void start_all(void)
{
	for (size_t s = 0; s < NPEERS; s++) {
		if (!wanted(s)) {
			sys[s].started = 1;
			msgf(sys[s].why, "%s", is_ttl(s) && (!opt.ttl ||
			     !opt.op_on[OP_PUT]) ? "no --ttl or no put" :
			     "not asked for (--only)");
			continue;
		}
		sys[s].started = peers[s]->start(sys[s].why);
		check_interrupt();
		if (sys[s].started)
			fprintf(stderr, "tdb-bench: %s skipped: %s\n",
				peers[s]->name, sys[s].why);
		if (opt.strict && sys[s].started < 0)
			die("%s: %s", peers[s]->name, sys[s].why);
	}
}

static void progress(unsigned int run, int op, unsigned int bi,
		     unsigned int pi)
{
	fprintf(stderr, "  run %u %s procs %u batch %u:", run + 1,
		op_name[op], opt.procs[pi], opt.batches[bi]);
	for (size_t s = 0; s < NPEERS; s++) {
		const struct result *r = &res[s][op][bi][pi][run];

		if (r->done)
			fprintf(stderr, " %s %.0f/s p50 %.2f us;",
				peers[s]->name, r->ops_s, r->p50);
	}
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *base;
	uint32_t gen = 1;
	unsigned int maxp = 0;
	double t0;

	parse_args(argc, argv);
	for (unsigned int i = 0; i < opt.nprocs; i++)
		maxp = opt.procs[i] > maxp ? opt.procs[i] : maxp;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	base = opt.dir ? opt.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s/tdb-bench.XXXXXX",
			     base) >= sizeof(tmpdir) - 64)
		die("--dir is too long");
	if (!mkdtemp(tmpdir)) {
		int e = errno;

		tmpdir[0] = 0;
		die("cannot make a directory under %s: %s", base, strerror(e));
	}
	slots = mmap(NULL, sizeof(*slots) * PROCS_MAX, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	samples = mmap(NULL, sizeof(*samples) * SAMPLES_MAX * maxp,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	gather = malloc(sizeof(*gather) * SAMPLES_MAX * maxp);
	if (slots == MAP_FAILED || samples == MAP_FAILED || !gather)
		die("out of memory for the workers' results");
	make_keys();

	fprintf(stderr, "tdb-bench: loading %u keys into each system\n",
		opt.keys);
	start_all();
	if (opt.strict)
		for (size_t s = 0; s < NPEERS; s++)
			if (sys[s].started > 0 && wanted(s)) {
				fprintf(stderr, "tdb-bench: skipped: %s\n",
					sys[s].why);
				cleanup();
				return 77;
			}
	print_header();
	if (opt.csv && !(csv = bench_csv_open(opt.csv, argc, argv))) {
		cleanup();
		return 1;
	}

	cpu_sample(&cpu_at_start);
	srv_cpu_at_start = servers_cpu();
	t0 = now();
	for (unsigned int run = 0; run < opt.runs; run++)
		for (int op = 0; op < OP_N; op++)
			for (unsigned int pi = 0; pi < opt.nprocs &&
			     opt.op_on[op]; pi++)
				for (unsigned int bi = 0; bi < opt.nbatches;
				     bi++) {
					for (size_t k = 0; k < NPEERS; k++) {
						size_t s = (k + run) % NPEERS;

						if (!sys[s].started)
							run_cell(s, op, bi, pi,
								 run, ++gen);
					}
					progress(run, op, bi, pi);
				}
	for (int op = 0; op < OP_N; op++)
		if (opt.op_on[op])
			print_table(op);
	if (opt.ttl && opt.op_on[OP_PUT])
		print_ttl_table();
	print_goals();
	print_footer(now() - t0);
	bench_csv_note(csv, "medians of %u run(s), %u keys, %u ops per "
		       "process and cell", opt.runs, opt.keys, opt.ops);
	cleanup();
	return bench_csv_close(csv, opt.csv) ? 1 : 0;
}
