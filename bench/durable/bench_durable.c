// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_durable.c - tdb-bench-durable: what durability costs and how fast
 * tdbd comes back.
 *
 * Part 1, durable puts.  tdbd (through libtdbclient and its rings) with
 * --sync always, batch and none against LMDB with full sync (no
 * MDB_NOSYNC, no MDB_NOMETASYNC), one put per call / per write
 * transaction, with 1, 8 and 32 client processes (--procs), on the same
 * filesystem (one temp dir under --dir, default /var/tmp; tmpfs is
 * refused).  Both stores hold --keys keys (16 B "key%013u", 100 B values)
 * before any timing; a cell runs P forked processes released together,
 * each doing blocking puts of uniform random keys for --seconds, then
 * reports ops/s (all processes' puts over the span from the first start
 * to the last end), p50/p99 latency of a put, CPU used, disk flushes
 * (/proc/diskstats) and tdbd's checkpoints during the cell.  tdbd is
 * restarted for each sync mode (the setting takes effect at restart only)
 * on the same data dir: each start recovers the keys from the checkpoint.
 * The order of the systems rotates between runs; medians over --runs.
 *
 * Part 2, recovery.  A fresh data dir: --records puts (async, from
 * --load-procs processes, --sync none), SIGTERM (tdbd writes its
 * checkpoint), a start from the checkpoint alone, --wal-records more puts
 * of new keys with checkpoints held off (--checkpoint-interval 1440m
 * --checkpoint-wal-size 64G), SIGKILL, so those are only in the WAL.
 * Then, --recovery-runs times, a timed start: spawn -> the socket
 * accepts a connection, with tdbd's log read every millisecond for the
 * moment the checkpoint is loaded ("checkpoint at LSN ...: ... records")
 * and the WAL replayed ("WAL: replayed N record(s) ... in X ms").  Every
 * run but the last is SIGKILLed as soon as it answers, before the
 * checkpoint it starts after recovery can commit (each run's log must
 * show the same counts: a run that finds others is flagged and is the
 * last); the last checks the record count and a sample of values and
 * waits for that checkpoint.  Files are in the page cache unless
 * --drop-caches.
 *
 * Also in the header: the filesystem and disk of the temp dir, and what
 * an append + fdatasync costs there (the floor of a synced put).  Per
 * cell: CPU other processes took meanwhile (noisy machines).
 *
 * Children (tdbd, workers, loaders) die with the benchmark
 * (PR_SET_PDEATHSIG).  Errors stop it (exit 1) with tdbd's log tail.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
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
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>
#include <tdb/client.h>

#include "../common/csv.h"
#include "../common/machine.h"
#include "../common/proc.h"

#define KEY_LEN       16u
#define VAL_MIN       16u
#define PROCS_MAX     64u
#define RUNS_MAX      15u
#define MSG_LEN       512u
#define SAMPLE_BUDGET (4u << 20)    /* latency samples per cell, shared */
#define LOAD_PIPE     256u
#define EXTENT        (2u << 20)
#define TABLE         "bench"
#define CSV_TMP       "/tmp/tdb-bench-durable.csv"
#define SEED          0x7db5eedc0ffee123ull
#define NO_CKPT_ARGS  "--checkpoint-interval", "1440m", \
		      "--checkpoint-wal-size", "64G"

/* S_KERNEL: tdb.ko with tdbd --backend kernel --sync always as its
 * supervisor, clients through /dev/tdb (TDBC_KERNEL); only when asked
 * (--systems kernel), in a guest with tdb.ko loaded (run-bench.sh
 * --durable). */
enum sys { S_ALWAYS, S_BATCH, S_NONE, S_KERNEL, S_LMDB, S_N };
static const char *const sys_key[S_N] = { "always", "batch", "none",
					  "kernel", "lmdb" };
static const char *const sys_name[S_N] = { "tdb", "tdb", "tdb", "tdb.ko",
					   "LMDB" };
static const char *const sys_what[S_N] = {
	"sync always: ack after fdatasync",
	"sync batch: ack once written",
	"sync none: ack once written",
	"tdbd --backend kernel, sync always",
	"full sync, 1 put per write txn",
};
#define IS_TDB(s) ((s) != S_LMDB)

static struct {
	uint32_t keys;
	double secs;
	unsigned int procs[8], nprocs;
	bool sys_on[S_N];
	unsigned int runs;
	uint64_t records, wal_records;
	unsigned int rec_runs, load_procs;
	uint32_t vsize;
	const char *dir;
	const char *tdbd;
	const char *tdbd_args[16];
	unsigned int ntdbd_args;
	bool do_puts, do_recovery, do_ckpt, do_restore, do_memory;
	uint64_t mem_records;            /* --memory-records */
	uint64_t rst_records[4];        /* --restore-records */
	bool rst_put;                   /* --restore-put: also the old way */
	bool rst_mirror;                /* --restore-mirror: from the mirror */
	bool rst_slow;                  /* --restore-slow: restore_fast=0 */
	unsigned int nrst, rst_runs;
	const char *ko;                 /* --ko: tdb.ko to insmod afresh */
	const char *ko_args[9];         /* --ko-arg (8), and --restore-slow's */
	unsigned int nko_args;
	bool markers;                   /* options from the environment */
	unsigned int ckpt_rounds;
	bool allow_tmpfs, drop_caches, keep, strict, verbose;
	const char *csv;        /* --csv FILE: part 1's figures as CSV too */
} opt = {
	.keys = 1000000, .secs = 3, .procs = { 1, 8, 32 }, .nprocs = 3,
	.sys_on = { [S_ALWAYS] = true, [S_BATCH] = true, [S_NONE] = true,
		    [S_LMDB] = true }, .runs = 3,
	.rst_records = { 1000000, 10000000 }, .nrst = 2, .rst_runs = 3,
	.mem_records = 1000000,
	.ko = "/lib/modules/tdb.ko",
	.records = 10000000, .wal_records = 1000000, .rec_runs = 3,
	.load_procs = 2, .vsize = 100, .dir = "/var/tmp",
	.do_puts = true, .do_recovery = true, .ckpt_rounds = 3,
};

static FILE *csv;               /* --csv, opened before the runs */
static char tmpdir[PATH_MAX];
static char tdbd_bin[PATH_MAX];
static volatile sig_atomic_t interrupted;
static pid_t kids[PROCS_MAX];           /* workers, loaders */
static volatile pid_t daemon_pid;       /* the tdbd running, if any */
static char disk_name[64];              /* for /proc/diskstats */
static unsigned int anomalies;
static unsigned int pages_seen;         /* tables on 4 KiB pages: 1,
					 * on 2 MiB hugepages: 2 */

/* --- small helpers --------------------------------------------------------- */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void msgf(char *msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_LEN, fmt, ap);
	va_end(ap);
}

/* snprintf without gcc's truncation guesses (the buffers are sized for
 * real paths; a longer one is cut). */
static void strf(char *dst, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void strf(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void kill_all(void)
{
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	if (daemon_pid > 0)
		kill(daemon_pid, SIGKILL);
}

static void cleanup(void)
{
	kill_all();
	while (wait(NULL) > 0 || errno == EINTR)
		;
	daemon_pid = 0;
	if (tmpdir[0] && !opt.keep)
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else if (tmpdir[0])
		fprintf(stderr, "tdb-bench-durable: kept %s\n", tmpdir);
	tmpdir[0] = 0;
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-durable: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(1);
}

static void on_signal(int sig)
{
	interrupted = sig;
	kill_all();
}

static void check_interrupt(void)
{
	if (interrupted)
		die("interrupted by signal %d", (int)interrupted);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint64_t rnd(uint64_t *s, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)splitmix64(s) * n) >> 64);
}

/* Key i: "key" and i in 13 decimal digits (16 bytes, no NUL). */
static void key_make(char *k, uint64_t i)
{
	memcpy(k, "key", 3);
	for (int j = KEY_LEN - 1; j >= 3; j--) {
		k[j] = (char)('0' + i % 10);
		i /= 10;
	}
}

/* Value of key i, generation gen: i and gen as little-endian u64, then
 * a fill byte. */
static void value_make(uint8_t *v, uint64_t i, uint32_t gen)
{
	uint64_t w[2] = { i, gen };

	memcpy(v, w, sizeof(w));
	memset(v + sizeof(w), 0xa5 ^ (int)(gen & 0xff), opt.vsize - sizeof(w));
}

static int value_check(uint64_t i, const void *v, size_t vlen, char *msg)
{
	uint64_t w = UINT64_MAX;

	if (vlen >= sizeof(w))
		memcpy(&w, v, sizeof(w));
	if (vlen == opt.vsize && w == i)
		return 0;
	msgf(msg, "wrong value for key %" PRIu64 ": %zu bytes, index %" PRIu64
	     " (expected %u bytes, index %" PRIu64 ")", i, vlen, w,
	     opt.vsize, i);
	return -1;
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

/* utime + stime of a process in seconds, -1 if unknown. */
static double proc_cpu(pid_t pid)
{
	return bench_proc_cpu(pid);
}

static void read_line(const char *path, char *buf, size_t len)
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

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Bytes used by the files under path (st_blocks). */
static uint64_t du_sum;

static int du_one(const char *p, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)p, (void)f;
	if (flag == FTW_F)
		du_sum += (uint64_t)st->st_blocks * 512;
	return 0;
}

static uint64_t du(const char *path)
{
	du_sum = 0;
	nftw(path, du_one, 16, FTW_PHYS);
	return du_sum;
}

/* Files in dir whose name starts with prefix. */
static unsigned int count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

static const char *mib(uint64_t b, char *buf, size_t len)
{
	if (b >= (10ull << 30))
		snprintf(buf, len, "%.1f GiB", (double)b / (1 << 30));
	else
		snprintf(buf, len, "%.0f MiB", (double)b / (1 << 20));
	return buf;
}

/* --- the disk: flushes from /proc/diskstats -------------------------------- */

/* Flush requests completed on disk_name, or -1 (kernels before 5.5, or
 * no such device). */
static long long disk_flushes(void)
{
	char line[512], name[64];
	long long v[17];
	FILE *f;
	long long r = -1;

	if (!disk_name[0] || !(f = fopen("/proc/diskstats", "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%*u %*u %63s %lld %lld %lld %lld %lld "
			       "%lld %lld %lld %lld %lld %lld %lld %lld %lld "
			       "%lld %lld %lld", name, &v[0], &v[1], &v[2],
			       &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			       &v[10], &v[11], &v[12], &v[13], &v[14], &v[15],
			       &v[16]);

		if (n >= 17 && !strcmp(name, disk_name)) {
			r = v[15];
			break;
		}
	}
	fclose(f);
	return r;
}

/* --- tdbd's log, read as it grows ------------------------------------------ */
struct logw {
	int fd;
	char buf[16384];
	size_t len;
	/* when a line was first seen (now()), 0 if not yet */
	double t_recover, t_ckload, t_replayed, t_serving, t_ckpt;
	uint64_t ck_lsn, ck_records;
	uint64_t rp_records, rp_changes, rp_after, rp_ms;
	unsigned int rp_segs;
	uint64_t ckpt_ms;               /* the last "checkpoint at ... (why)" */
	char ckpt_why[32];
	unsigned int nckpt;
	uint64_t ckpt_written;          /* its "N record(s) written" */
	/* "checkpoint: file X MiB, ...; compacting", "compacted: ... -> Y
	 * MiB in Z ms", "abandoned", "stopping without a checkpoint" */
	double t_size, t_compacted;
	bool compacting, stop_skip;
	uint64_t file_mib, compact_mib, compact_ms;
	unsigned int abandoned;
	bool hugepool;                  /* "the hugepage pool is exhausted" */
	/* kernel mode: "kernel mode: restored N table(s), M record(s) into
	 * tdb.ko in X ms" */
	double t_kclaim, t_krestored;   /* "... no tables yet", "restored" */
	uint64_t kr_records, kr_ms;
	char bad[4][300];               /* error and warning lines */
	char kr_stages[400];            /* krestore's "restore sent ..." */
	unsigned int nbad;
};

static void logw_line(struct logw *w, const char *line, double t)
{
	unsigned long long a, b, c, d;
	unsigned int u;
	char why[32];
	const char *p;

	if ((p = strstr(line, "checkpoint at LSN "))) {
		if (sscanf(p, "checkpoint at LSN %llu: %u table(s), %llu "
			   "records", &a, &u, &b) == 3) {
			w->t_ckload = t;
			w->ck_lsn = a;
			w->ck_records = b;
		} else if (sscanf(p, "checkpoint at LSN %llu (%31[^)]): %u "
				  "table(s), %llu ms", &a, why, &u, &b) == 4 ||
			   /* kernel mode's: the WAL applied to the store */
			   sscanf(p, "checkpoint at LSN %llu (%31[^)]): %llu "
				  "WAL record(s) after LSN %llu applied to the "
				  "store in %u run(s), %llu ms", &a, why, &c, &d,
				  &u, &b) == 6) {
			w->t_ckpt = t;
			w->ckpt_ms = b;
			snprintf(w->ckpt_why, sizeof(w->ckpt_why), "%s", why);
			w->nckpt++;
			w->ckpt_written = 0;
			if ((p = strstr(p, " ms; ")) &&
			    sscanf(p, " ms; %llu record(s) written", &c) == 1)
				w->ckpt_written = c;
		}
	}
	if ((p = strstr(line, "checkpoint: file ")) &&
	    sscanf(p, "checkpoint: file %llu MiB", &a) == 1) {
		w->t_size = t;
		w->file_mib = a;
		w->compacting = strstr(p, "; compacting") != NULL;
	}
	if ((p = strstr(line, "checkpoint: compacted: file ")) &&
	    sscanf(p, "checkpoint: compacted: file %llu MiB -> %llu MiB in "
		   "%llu ms", &a, &b, &c) == 3) {
		w->t_compacted = t;
		w->compact_mib = b;
		w->compact_ms = c;
	}
	if (strstr(line, ") abandoned after "))
		w->abandoned++;
	if (strstr(line, "stopping without a checkpoint"))
		w->stop_skip = true;
	if ((p = strstr(line, "WAL: replayed ")) &&
	    sscanf(p, "WAL: replayed %llu record(s) (%llu change(s)) after "
		   "LSN %llu from %u segment(s) in %llu ms", &a, &b, &c, &u,
		   &d) == 5) {
		w->t_replayed = t;
		w->rp_records = a;
		w->rp_changes = b;
		w->rp_after = c;
		w->rp_segs = u;
		w->rp_ms = d;
	}
	if (strstr(line, "serving on") || strstr(line, "supervising tdb.ko"))
		w->t_serving = t;
	if (strstr(line, "kernel mode: tdb.ko has no tables yet"))
		w->t_kclaim = t;
	/* "... into tdb.ko [from the checkpoint store|mirror] in X ms" */
	if ((p = strstr(line, "kernel mode: restored ")) &&
	    sscanf(p, "kernel mode: restored %u table(s), %llu record(s) ",
		   &u, &a) == 2 && (p = strstr(p, " into tdb.ko")) &&
	    (p = strstr(p, " in ")) && sscanf(p, " in %llu ms", &b) == 1) {
		w->t_krestored = t;
		w->kr_records = a;
		w->kr_ms = b;
	}
	/* where the restore's time went (krestore.c, kr_end) */
	if ((p = strstr(line, "kernel mode: restore sent ")))
		strf(w->kr_stages, sizeof(w->kr_stages), "%s",
		     p + strlen("kernel mode: "));
	if (strstr(line, "recovering: loading the checkpoint") &&
	    !w->t_recover)
		w->t_recover = t;
	/* kernel mode loads nothing (issue 29): its recovery is the read
	 * of the store's LSN, then the WAL after it applied to the store */
	if (strstr(line, "checkpoint store at LSN ") && !w->t_recover)
		w->t_recover = t;
	if ((p = strstr(line, "WAL: ")) && strstr(p, " after LSN ") &&
	    strstr(p, " checked in ") && !w->t_ckload)
		w->t_ckload = t;
	/* the engine's fallback to 4 KiB pages is the machine's setting
	 * (vm.nr_hugepages), said once at the end */
	if (strstr(line, "the hugepage pool is exhausted"))
		w->hugepool = true;
	if (strstr(line, "no 2 MiB hugepages"))
		;
	else if ((strstr(line, ": error: ") || strstr(line, ": warning: ") ||
		  strstr(line, ": crit: ") || strstr(line, ": alert: ") ||
		  strstr(line, ": emerg: ")) && w->nbad < 4)
		strf(w->bad[w->nbad++], sizeof(w->bad[0]), "%s", line);
	if (opt.verbose)
		fprintf(stderr, "    [%s]\n", line);
}

static void logw_poll(struct logw *w)
{
	double t = now();
	ssize_t n;

	if (w->fd < 0)
		return;
	while ((n = read(w->fd, w->buf + w->len,
			 sizeof(w->buf) - 1 - w->len)) > 0) {
		char *s = w->buf, *nl;

		w->len += (size_t)n;
		w->buf[w->len] = 0;
		while ((nl = strchr(s, '\n'))) {
			*nl = 0;
			logw_line(w, s, t);
			s = nl + 1;
		}
		w->len -= (size_t)(s - w->buf);
		memmove(w->buf, s, w->len);
		if (w->len == sizeof(w->buf) - 1)
			w->len = 0;     /* a line this long: drop it */
	}
}

/* --- tdbd ------------------------------------------------------------------ */
struct tdbd {
	const char *tag;
	bool kernel;            /* --backend kernel: no socket, /dev/tdb */
	char data[PATH_MAX];
	char sock[108];
	char log[PATH_MAX + 64];
	pid_t pid;
	unsigned int starts;
	double t_spawn, t_ready;
	struct logw lw;
	char args[512];         /* what it was started with, for the header */
};

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
	/* <build>/bench/durable/tdb-bench-durable, <build>/src/daemon/tdbd */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(tdbd_bin, sizeof(tdbd_bin),
			 "%s/../../src/daemon/tdbd", dirname(self));
		if (runnable(tdbd_bin))
			return tdbd_bin;
	}
	return NULL;
}

static void tdbd_init(struct tdbd *d, const char *tag)
{
	memset(d, 0, sizeof(*d));
	d->tag = tag;
	d->lw.fd = -1;
	strf(d->data, sizeof(d->data), "%s/%s", tmpdir, tag);
	if ((size_t)snprintf(d->sock, sizeof(d->sock), "%s/%s.sock", tmpdir,
			     tag) >= sizeof(d->sock))
		die("socket path under %s is too long (--dir)", tmpdir);
}

static void tdbd_start(struct tdbd *d, const char *sync, bool no_ckpt)
{
	const char *argv[48];
	unsigned int a = 0;
	pid_t parent = getpid();
	int fd;

	argv[a++] = tdbd_bin;
	argv[a++] = "--config";
	argv[a++] = "/dev/null";
	if (d->kernel) {
		argv[a++] = "--backend";
		argv[a++] = "kernel";
	} else {
		argv[a++] = "--socket";
		argv[a++] = d->sock;
	}
	argv[a++] = "--data-dir";
	argv[a++] = d->data;
	argv[a++] = "--sync";
	argv[a++] = sync;
	if (no_ckpt) {
		static const char *const nc[] = { NO_CKPT_ARGS };

		for (unsigned int i = 0; i < 4; i++)
			argv[a++] = nc[i];
	}
	for (unsigned int i = 0; i < opt.ntdbd_args; i++)
		argv[a++] = opt.tdbd_args[i];
	argv[a] = NULL;
	d->args[0] = 0;
	for (unsigned int i = 7; i < a; i++)
		snprintf(d->args + strlen(d->args),
			 sizeof(d->args) - strlen(d->args), " %s", argv[i]);

	unlink(d->sock);        /* a SIGKILLed tdbd leaves it */
	snprintf(d->log, sizeof(d->log), "%s/%s.%u.log", tmpdir, d->tag,
		 ++d->starts);
	fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create %s: %s", d->log, strerror(errno));
	if (d->lw.fd >= 0)
		close(d->lw.fd);
	memset(&d->lw, 0, sizeof(d->lw));
	d->lw.fd = open(d->log, O_RDONLY | O_CLOEXEC);
	fflush(stdout);
	fflush(stderr);
	d->t_spawn = now();
	d->t_ready = 0;
	d->pid = fork();
	if (d->pid < 0)
		die("fork: %s", strerror(errno));
	if (d->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "tdb-bench-durable: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fd);
	daemon_pid = d->pid;
}

static void describe_status(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "ended (status %#x)", st);
}

static __attribute__((noreturn))
void tdbd_died(struct tdbd *d, const char *when, int st)
{
	char how[128], cmd[PATH_MAX + 64];

	describe_status(st, how, sizeof(how));
	d->pid = 0;
	daemon_pid = 0;
	fprintf(stderr, "tdb-bench-durable: tdbd %s %s; the end of %s:\n",
		when, how, d->log);
	strf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", d->log);
	if (system(cmd) < 0)
		(void)0;
	opt.keep = true;
	if (d->lw.hugepool)
		die("tdbd %s %s: its table was on 2 MiB hugepages and the "
		    "pool ran out (vm.nr_hugepages is now %s; the engine does "
		    "not fall back to 4 KiB pages after a table's first "
		    "extent): run with vm.nr_hugepages 0 or big enough", when,
		    how, (read_line("/proc/sys/vm/nr_hugepages", how,
				    sizeof(how)), how));
	die("tdbd %s %s", when, how);
}

/* A connection to d's tables: its socket, or tdb.ko's /dev/tdb for a
 * kernel-mode tdbd; 0 or -1 with msg. */
static int tdb_conn(const struct tdbd *d, struct tdbc **c, char *msg)
{
	return tdbc_connect(c, d->kernel ? NULL : d->sock,
			    d->kernel ? TDBC_KERNEL : 0, msg, MSG_LEN) ?
		-1 : 0;
}

/* Poll: the log every ms, a connection attempt every ms, until the
 * socket accepts (t_ready); in kernel mode until tdbd logs that it
 * supervises tdb.ko (restore done, clients admitted).  Returns the
 * connection. */
static struct tdbc *tdbd_wait_ready(struct tdbd *d, double timeout)
{
	char why[MSG_LEN] = "";
	struct tdbc *c = NULL;
	int st;

	for (;;) {
		logw_poll(&d->lw);
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			tdbd_died(d, "starting", st);
		if (d->kernel && !d->lw.t_serving)
			snprintf(why, sizeof(why), "no \"supervising tdb.ko\" "
				 "line in its log");
		else if (!tdb_conn(d, &c, why)) {
			d->t_ready = now();
			logw_poll(&d->lw);
			if (!tdbc_uses_rings(c))
				die("tdbd gave no rings (see %s)", d->log);
			return c;
		}
		check_interrupt();
		if (now() - d->t_spawn > timeout) {
			opt.keep = true;
			die("tdbd did not accept on %s in %.0f s: %s (log %s)",
			    d->sock, timeout, why, d->log);
		}
		usleep(1000);
	}
}

static struct tdbc *tdbd_connect(struct tdbd *d)
{
	char why[MSG_LEN];
	struct tdbc *c;

	if (tdb_conn(d, &c, why))
		die("tdbc_connect: %s", why);
	return c;
}

/* SIGTERM; wait (reading the log) until it exits.  Seconds it took. */
static double tdbd_stop(struct tdbd *d)
{
	double t0 = now();
	int st;

	kill(d->pid, SIGTERM);
	for (;;) {
		pid_t r = waitpid(d->pid, &st, WNOHANG);

		logw_poll(&d->lw);
		if (r == d->pid)
			break;
		if (r < 0 && errno != EINTR)
			die("waitpid tdbd: %s", strerror(errno));
		check_interrupt();
		if (now() - t0 > 3600)
			die("tdbd did not stop in an hour (log %s)", d->log);
		usleep(2000);
	}
	d->pid = 0;
	daemon_pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tdbd_died(d, "stopping (SIGTERM)", st);
	return now() - t0;
}

static void tdbd_kill(struct tdbd *d)
{
	kill(d->pid, SIGKILL);
	while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
		;
	d->pid = 0;
	daemon_pid = 0;
}

/* Anything tdbd logged as an error or warning, flagged. */
static void tdbd_report_bad(struct tdbd *d)
{
	for (unsigned int i = 0; i < d->lw.nbad; i++) {
		printf("  ANOMALY: tdbd logged: %s\n", d->lw.bad[i]);
		anomalies++;
	}
	d->lw.nbad = 0;
}

static void table_create(struct tdbc *c, uint64_t records)
{
	uint64_t need = records * (KEY_LEN + opt.vsize + 64) * 3;
	uint64_t ext = (need + EXTENT - 1) / EXTENT;
	struct tdbc_table_opts to;
	int err;

	tdbc_table_opts_init(&to);
	to.max_extents = ext < 1024 ? 1024 : ext > 32768 ? 32768 :
		(uint32_t)ext;
	if ((err = tdbc_table_create(c, TABLE, &to)))
		die("tdbc_table_create: %s: %s", tdbc_strerror(err),
		    tdbc_errmsg(c));
}

/* Records in the table; notes its page size (pages_seen) if it is
 * tdbd's (tdb.ko's extents are its own compound pages). */
static uint64_t table_count(struct tdbc *c, bool kernel)
{
	struct tdbc_table_stat st;
	int err = tdbc_table_stat(c, TABLE, &st);

	if (err)
		die("tdbc_table_stat: %s: %s", tdbc_strerror(err),
		    tdbc_errmsg(c));
	if (!kernel)
		pages_seen |= st.page_size == EXTENT ? 2 : 1;
	return st.records;
}

static uint64_t table_records(struct tdbc *c)
{
	return table_count(c, false);
}

static void stats(struct tdbc *c, struct tdbc_stats *st)
{
	int err = tdbc_stats(c, st);

	if (err)
		die("tdbc_stats: %s", tdbc_strerror(err));
}

/* Asynchronous puts of keys [lo, hi), generation 1, 256 in flight; 0 or
 * -1 with msg. */
static int tdb_load(struct tdbc *c, struct tdbc_table *t, uint64_t lo,
		    uint64_t hi, char *msg)
{
	static struct tdbc_req req[LOAD_PIPE];
	static struct tdbc_cqe cqe[LOAD_PIPE];
	static char k[LOAD_PIPE][KEY_LEN];
	uint8_t *v = malloc((size_t)opt.vsize * LOAD_PIPE);
	int err = 0;

	if (!v) {
		msgf(msg, "out of memory");
		return -1;
	}
	for (uint64_t i = lo; i < hi && !err; i += LOAD_PIPE) {
		uint32_t n = hi - i < LOAD_PIPE ? (uint32_t)(hi - i) :
			LOAD_PIPE, sub = 0, done = 0;

		for (uint32_t j = 0; j < n; j++) {
			key_make(k[j], i + j);
			value_make(v + (size_t)j * opt.vsize, i + j, 1);
			req[j] = (struct tdbc_req){
				.op = TDBC_OP_PUT, .table = t, .key = k[j],
				.klen = KEY_LEN,
				.val = v + (size_t)j * opt.vsize,
				.vlen = opt.vsize, .user = i + j,
			};
		}
		while (done < n && !err) {
			int r = sub < n ? tdbc_submit(c, req + sub, n - sub) :
				0;

			if (r > 0)
				sub += (uint32_t)r;
			else if (r < 0 && r != -EAGAIN)
				err = r;
			if (err)
				break;
			r = tdbc_reap(c, cqe, LOAD_PIPE, sub == n ?
				      sub - done : 1, -1);
			if (r < 0)
				err = r;
			for (int j = 0; j < r && !err; j++)
				err = cqe[j].res;
			done += r > 0 ? (uint32_t)r : 0;
		}
	}
	free(v);
	if (err)
		msgf(msg, "tdb load: %s: %s", tdbc_strerror(err),
		     tdbc_errmsg(c));
	return err ? -1 : 0;
}

/* --- shared slots of the forked processes ---------------------------------- */
struct slot {
	double t0, t1, cpu;
	uint64_t ops;
	uint32_t nsamp;
	int failed;
	char msg[MSG_LEN];
};
struct shared {
	int stop;
	struct slot slot[PROCS_MAX];
};
static struct shared *sh;
static uint32_t *samples;               /* [SAMPLE_BUDGET], MAP_SHARED */

static void child_fail(struct slot *sl, const char *msg)
{
	snprintf(sl->msg, sizeof(sl->msg), "%s", msg);
	sl->failed = 1;
	_exit(1);
}

/* Wait for the n kids; die with the first one's message if any failed. */
static void reap_kids(unsigned int n, const char *what)
{
	for (unsigned int i = 0; i < n; i++) {
		int st;

		while (waitpid(kids[i], &st, 0) < 0) {
			check_interrupt();
			if (errno != EINTR)
				die("waitpid: %s", strerror(errno));
		}
		kids[i] = 0;
		if (sh->slot[i].failed)
			die("%s %u: %s", what, i, sh->slot[i].msg);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			char how[128];

			describe_status(st, how, sizeof(how));
			die("%s %u %s", what, i, how);
		}
	}
}

/* Parallel load of [lo, hi) into d's table by opt.load_procs processes. */
static double parallel_load(struct tdbd *d, uint64_t lo, uint64_t hi)
{
	unsigned int p = opt.load_procs;
	double t0 = now();

	memset(sh, 0, sizeof(*sh));
	fflush(stdout);
	fflush(stderr);
	for (unsigned int i = 0; i < p; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork: %s", strerror(errno));
		if (kids[i] == 0) {
			struct slot *sl = &sh->slot[i];
			uint64_t a = lo + (hi - lo) * i / p;
			uint64_t b = lo + (hi - lo) * (i + 1) / p;
			struct tdbc *c;
			struct tdbc_table *t;
			char msg[MSG_LEN];
			int err;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			if (tdb_conn(d, &c, msg))
				child_fail(sl, msg);
			if ((err = tdbc_table_open(c, TABLE, &t))) {
				msgf(msg, "table open: %s", tdbc_strerror(err));
				child_fail(sl, msg);
			}
			if (tdb_load(c, t, a, b, msg))
				child_fail(sl, msg);
			tdbc_table_close(t);
			tdbc_close(c);
			_exit(0);
		}
	}
	reap_kids(p, "loader");
	return now() - t0;
}

/* --- part 1: durable puts ---------------------------------------------------- */
static char lmdb_dir[PATH_MAX + 16];

static size_t lmdb_map_size(void)
{
	size_t raw = (size_t)opt.keys * (KEY_LEN + opt.vsize + 16);
	size_t m = (size_t)1 << 30;

	while (m < 8 * raw)
		m <<= 1;
	return m;
}

static int lmdb_open(MDB_env **env, MDB_dbi *dbi, unsigned int flags,
		     char *msg)
{
	MDB_txn *txn;
	int rc;

	*env = NULL;
	rc = mdb_env_create(env);
	if (!rc)
		rc = mdb_env_set_mapsize(*env, lmdb_map_size());
	if (!rc)
		rc = mdb_env_set_maxreaders(*env, 256);
	if (!rc)
		rc = mdb_env_open(*env, lmdb_dir, flags, 0600);
	if (!rc && !(rc = mdb_txn_begin(*env, NULL, 0, &txn))) {
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

/* All keys, 1000 per transaction, MDB_NOSYNC, then one mdb_env_sync
 * (the load is not timed). */
static void lmdb_load(void)
{
	uint8_t *v = malloc(opt.vsize);
	char msg[MSG_LEN], k[KEY_LEN];
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *txn = NULL;
	double t0 = now();
	int rc = 0;

	snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/lmdb", tmpdir);
	if (!v || mkdir(lmdb_dir, 0700))
		die("mkdir %s: %s", lmdb_dir, strerror(errno));
	if (lmdb_open(&env, &dbi, MDB_NOSYNC, msg))
		die("%s", msg);
	for (uint32_t i = 0; i < opt.keys && !rc; i++) {
		MDB_val mk = { KEY_LEN, k }, mv = { opt.vsize, v };

		if (!txn && (rc = mdb_txn_begin(env, NULL, 0, &txn)))
			break;
		key_make(k, i);
		value_make(v, i, 1);
		rc = mdb_put(txn, dbi, &mk, &mv, 0);
		if (!rc && ((i + 1) % 1000 == 0 || i + 1 == opt.keys)) {
			rc = mdb_txn_commit(txn);
			txn = NULL;
		}
	}
	if (txn)
		mdb_txn_abort(txn);
	if (!rc)
		rc = mdb_env_sync(env, 1);
	mdb_env_close(env);
	free(v);
	if (rc)
		die("LMDB load: %s", mdb_strerror(rc));
	fprintf(stderr, "  LMDB: loaded %u keys in %.1f s\n", opt.keys,
		now() - t0);
}

struct handle {
	struct tdbc *c;
	struct tdbc_table *t;
	MDB_env *env;
	MDB_dbi dbi;
};

static int handle_open(enum sys s, struct tdbd *d, struct handle *h,
		       char *msg)
{
	int err;

	memset(h, 0, sizeof(*h));
	if (!IS_TDB(s))
		return lmdb_open(&h->env, &h->dbi, 0, msg);   /* full sync */
	if (tdb_conn(d, &h->c, msg))
		return -1;
	if (!tdbc_uses_rings(h->c)) {
		msgf(msg, "tdbc_connect gave a connection without rings");
		return -1;
	}
	if ((err = tdbc_table_open(h->c, TABLE, &h->t))) {
		msgf(msg, "tdbc_table_open: %s", tdbc_strerror(err));
		return -1;
	}
	return 0;
}

static int handle_put(enum sys s, struct handle *h, const char *k,
		      const uint8_t *v, char *msg)
{
	MDB_val mk = { KEY_LEN, (void *)k }, mv = { opt.vsize, (void *)v };
	MDB_txn *txn;
	int rc;

	if (IS_TDB(s)) {
		rc = tdbc_put(h->t, NULL, k, KEY_LEN, v, opt.vsize, 0);
		if (rc)
			msgf(msg, "tdbc_put: %s: %s", tdbc_strerror(rc),
			     tdbc_errmsg(h->c));
		return rc ? -1 : 0;
	}
	if ((rc = mdb_txn_begin(h->env, NULL, 0, &txn))) {
		msgf(msg, "mdb_txn_begin: %s", mdb_strerror(rc));
		return -1;
	}
	if ((rc = mdb_put(txn, h->dbi, &mk, &mv, 0))) {
		mdb_txn_abort(txn);
		msgf(msg, "mdb_put: %s", mdb_strerror(rc));
		return -1;
	}
	if ((rc = mdb_txn_commit(txn))) {
		msgf(msg, "mdb_txn_commit: %s", mdb_strerror(rc));
		return -1;
	}
	return 0;
}

static void handle_close(struct handle *h)
{
	if (h->t)
		tdbc_table_close(h->t);
	if (h->c)
		tdbc_close(h->c);
	if (h->env)
		mdb_env_close(h->env);
}

/* One worker of a cell: blocking puts of random keys until told to
 * stop; latency samples kept by reservoir sampling. */
static __attribute__((noreturn))
void put_worker(enum sys s, struct tdbd *d, unsigned int proc,
		unsigned int procs, unsigned int run, uint32_t gen, int ready,
		int go)
{
	struct slot *sl = &sh->slot[proc];
	uint32_t cap = SAMPLE_BUDGET / procs;
	uint32_t *smp = samples + (size_t)proc * cap;
	/* the key stream depends on the cell and run, not the system */
	uint64_t seed = SEED ^ ((uint64_t)run << 48) ^
		((uint64_t)proc << 40) ^ ((uint64_t)procs << 24);
	uint64_t rs = seed ^ 0x5a5a5a5a5a5a5a5aull, n = 0;
	uint8_t *v = malloc(opt.vsize);
	struct handle h;
	char k[KEY_LEN], msg[MSG_LEN], c = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rc = v ? handle_open(s, d, &h, msg) : (msgf(msg, "no memory"), -1);
	if (write(ready, &c, 1) != 1)
		rc = -1;
	close(ready);
	if (rc)
		child_fail(sl, msg);
	while (read(go, &c, 1) < 0 && errno == EINTR)
		;
	sl->cpu = -self_cpu();
	sl->t0 = now();
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		uint64_t i = rnd(&seed, opt.keys);
		double t, t1;

		key_make(k, i);
		value_make(v, i, gen);
		t = now();
		rc = handle_put(s, &h, k, v, msg);
		t1 = now();
		if (rc)
			child_fail(sl, msg);
		n++;
		if (n <= cap) {
			smp[n - 1] = (uint32_t)((t1 - t) * 1e9 + 0.5);
		} else {
			uint64_t j = rnd(&rs, n);

			if (j < cap)
				smp[j] = (uint32_t)((t1 - t) * 1e9 + 0.5);
		}
	}
	sl->t1 = now();
	sl->cpu += self_cpu();
	sl->ops = n;
	sl->nsamp = n < cap ? (uint32_t)n : cap;
	handle_close(&h);
	_exit(0);
}

struct result {
	double ops_s, p50, p99, cli, srv, flush_s, ops_flush, others;
	double disk_s;          /* the disk's flushes/s, whoever asked */
	uint64_t ops;
	unsigned int ckpts;
	bool done;
};
static struct result res[S_N][8][RUNS_MAX];
static uint32_t *gather;

static void run_cell(enum sys s, struct tdbd *d, unsigned int pi,
		     unsigned int run, uint32_t gen)
{
	unsigned int procs = opt.procs[pi];
	struct result *r = &res[s][pi][run];
	struct tdbc_stats st0 = { 0 }, st1 = { 0 };
	double srv0 = 0, srv1 = 0, first = 1e300, last = 0, cli = 0, steal;
	struct cpu_sample m0, m1;
	long long fl0, fl1;
	uint64_t ops = 0;
	size_t ns = 0;
	int ready[2], go[2];
	char c;

	/* tdbd's STATS (WAL syncs) come over its socket: none in kernel
	 * mode, whose flushes are the disk's (/proc/diskstats) */
	if (IS_TDB(s) && !d->kernel) {
		struct tdbc *cn = tdbd_connect(d);

		stats(cn, &st0);
		tdbc_close(cn);
	}
	memset(sh, 0, sizeof(*sh));
	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	for (unsigned int i = 0; i < procs; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork: %s", strerror(errno));
		if (kids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			put_worker(s, d, i, procs, run, gen, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (unsigned int i = 0; i < procs; i++)
		while (read(ready[0], &c, 1) != 1) {
			if (errno == EINTR && !interrupted)
				continue;
			check_interrupt();
			/* EOF: a worker died before saying it was ready */
			close(go[1]);
			reap_kids(procs, "worker");
			die("a worker died before starting");
		}
	close(ready[0]);
	if (IS_TDB(s))
		srv0 = proc_cpu(d->pid);
	fl0 = disk_flushes();
	cpu_sample(&m0);
	close(go[1]);           /* go */
	{
		double end = now() + opt.secs;

		while (now() < end) {
			double left = end - now();
			struct timespec ts = {
				.tv_sec = (time_t)left,
				.tv_nsec = (long)((left - (double)(time_t)left)
						  * 1e9) };

			nanosleep(&ts, NULL);
			check_interrupt();
		}
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	reap_kids(procs, "worker");
	cpu_sample(&m1);
	fl1 = disk_flushes();
	if (IS_TDB(s)) {
		struct tdbc *cn;

		srv1 = proc_cpu(d->pid);
		if (!d->kernel) {
			cn = tdbd_connect(d);
			stats(cn, &st1);
			tdbc_close(cn);
		}
		logw_poll(&d->lw);
	}
	for (unsigned int i = 0; i < procs; i++) {
		struct slot *sl = &sh->slot[i];
		uint32_t cap = SAMPLE_BUDGET / procs;

		first = sl->t0 < first ? sl->t0 : first;
		last = sl->t1 > last ? sl->t1 : last;
		cli += sl->cpu;
		ops += sl->ops;
		memcpy(gather + ns, samples + (size_t)i * cap,
		       sizeof(*gather) * sl->nsamp);
		ns += sl->nsamp;
	}
	qsort(gather, ns, sizeof(*gather), cmp_u32);
	r->ops = ops;
	r->ops_s = (double)ops / (last - first);
	r->p50 = ns ? gather[(size_t)(0.50 * (double)(ns - 1))] / 1e3 : 0;
	r->p99 = ns ? gather[(size_t)(0.99 * (double)(ns - 1))] / 1e3 : 0;
	r->cli = cli / (last - first);
	r->srv = IS_TDB(s) && srv0 >= 0 && srv1 >= 0 ?
		(srv1 - srv0) / (last - first) : 0;
	r->flush_s = fl0 >= 0 && fl1 >= 0 ?
		(double)(fl1 - fl0) / (last - first) : -1;
	r->ops_flush = fl0 >= 0 && fl1 > fl0 ?
		(double)ops / (double)(fl1 - fl0) : -1;
	r->disk_s = r->flush_s;
	/* tdbd counts its own fdatasyncs (STATS wal_syncs; 0 from a tdbd
	 * before it): exact, where the disk's count takes in every flush
	 * on the machine */
	if (IS_TDB(s) && st1.wal_syncs > st0.wal_syncs) {
		r->flush_s = (double)(st1.wal_syncs - st0.wal_syncs) /
			     (last - first);
		r->ops_flush = (double)(st1.wal_records - st0.wal_records) /
			       (double)(st1.wal_syncs - st0.wal_syncs);
	}
	r->ckpts = (unsigned int)(st1.checkpoints - st0.checkpoints);
	/* sync always fdatasyncs for every group of puts: a STATS without
	 * wal_syncs (the flush figures fall back to the disk's) is flagged */
	if (s == S_ALWAYS && ops && st1.wal_syncs == st0.wal_syncs) {
		printf("  ANOMALY: tdbd's STATS wal_syncs did not move during "
		       "%" PRIu64 " synced puts (flush/s is the disk's)\n",
		       ops);
		anomalies++;
	}
	/* others: the machine's busy time less ours (the workers are
	 * reaped, so counted as ours; tdbd is not yet: take it out) */
	r->others = cpu_others(&m0, &m1, &steal);
	if (r->others >= 0 && m1.total > m0.total) {
		r->others -= r->srv * (last - first) / (m1.total - m0.total);
		r->others = r->others < 0 ? 0 : r->others;
	}
	r->done = true;
	fprintf(stderr, "  run %u %-4s %-6s procs %2u: %9.0f puts/s p50 %8.1f "
		"us p99 %8.1f us, %.0f flushes/s (disk: %.0f/s), others "
		"%.0f%%%s\n", run + 1,
		sys_name[s], IS_TDB(s) ? sys_key[s] : "", procs, r->ops_s,
		r->p50, r->p99, r->flush_s, r->disk_s, r->others * 100,
		r->ckpts ? ", checkpointed" : "");
}

#define MED(s, pi, f) ({ \
	double v_[RUNS_MAX]; unsigned int n_ = 0; \
	for (unsigned int r_ = 0; r_ < opt.runs; r_++) \
		if (res[s][pi][r_].done) v_[n_++] = res[s][pi][r_].f; \
	median(v_, n_); })

/* --csv: one row per system and process count of part 1. */
static void csv_put(int s, unsigned int pi, double v)
{
	bool vs = IS_TDB(s) && opt.sys_on[S_LMDB];
	char o[64], param[16];

	snprintf(o, sizeof(o), "put %s", sys_what[s]);
	snprintf(param, sizeof(param), "procs %u", opt.procs[pi]);
	bench_csv_row(csv, "durability", sys_name[s], vs ? "LMDB" : NULL,
		      o, param, v, "ops/s",
		      vs ? v / MED(S_LMDB, pi, ops_s) : -1);
}

/* tdb.ko with its supervisor against tdbd alone, both sync always. */
static void print_kernel_ratio(void)
{
	printf("\ntdb.ko/tdbd (both sync always): ratio of the medians "
	       "[range of the per-run\nratios]\n%5s  %-26s\n", "procs",
	       "kernel/always");
	for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
		double lo = 1e300, hi = 0, m;
		char b[64];

		for (unsigned int r = 0; r < opt.runs; r++) {
			double x = res[S_KERNEL][pi][r].ops_s /
				res[S_ALWAYS][pi][r].ops_s;

			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		m = MED(S_KERNEL, pi, ops_s) / MED(S_ALWAYS, pi, ops_s);
		snprintf(b, sizeof(b), "%.2fx [%.2f-%.2f]", m, lo, hi);
		printf("%5u  %-26s\n", opt.procs[pi], b);
		{
			char param[16];

			snprintf(param, sizeof(param), "procs %u",
				 opt.procs[pi]);
			bench_csv_row(csv, "durability", "tdb.ko", "tdbd",
				      "put sync always: tdb.ko/tdbd", param,
				      MED(S_KERNEL, pi, ops_s), "ops/s", m);
		}
	}
}

static void print_puts(double restart_s[S_N], double stop_s[S_N],
		       unsigned int nrestart[S_N])
{
	bool any_tdb = opt.sys_on[S_ALWAYS] || opt.sys_on[S_BATCH] ||
		opt.sys_on[S_NONE] || opt.sys_on[S_KERNEL];

	printf("\ndurable puts: one blocking put per call (tdb) or per write "
	       "transaction (LMDB),\nuniform random keys of %u, %u B values, "
	       "%.1f s per cell; medians of %u run%s\n", opt.keys, opt.vsize,
	       opt.secs, opt.runs, opt.runs == 1 ? "" : "s");
	printf("%-6s %-34s %5s %10s %9s %9s %9s %8s %9s %5s %5s %8s\n",
	       "sys", "mode", "procs", "ops/s", "p50 us", "p99 us", "CPU c+s",
	       "flush/s", "ops/flush", "oth%", "ckpts", "tdb/LMDB");
	for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
		for (int s = 0; s < S_N; s++) {
			char cpu[24], fl[16], of[16], ck[16] = "";
			unsigned int nck = 0;
			double v;

			if (!opt.sys_on[s])
				continue;
			v = MED(s, pi, ops_s);
			for (unsigned int r = 0; r < opt.runs; r++)
				nck += res[s][pi][r].ckpts;
			if (IS_TDB(s))
				snprintf(ck, sizeof(ck), "%u", nck);
			snprintf(cpu, sizeof(cpu), "%.2f+%.2f", MED(s, pi, cli),
				 MED(s, pi, srv));
			if (MED(s, pi, flush_s) >= 0)
				snprintf(fl, sizeof(fl), "%.0f",
					 MED(s, pi, flush_s));
			else
				snprintf(fl, sizeof(fl), "-");
			if (MED(s, pi, ops_flush) >= 0)
				snprintf(of, sizeof(of), "%.2f",
					 MED(s, pi, ops_flush));
			else
				snprintf(of, sizeof(of), "-");
			printf("%-6s %-34s %5u %10.0f %9.1f %9.1f %9s %8s "
			       "%9s %5.0f %5s", sys_name[s], sys_what[s],
			       opt.procs[pi], v, MED(s, pi, p50),
			       MED(s, pi, p99), cpu, fl, of,
			       MED(s, pi, others) * 100, ck);
			if (IS_TDB(s) && opt.sys_on[S_LMDB])
				printf(" %7.2fx", v / MED(S_LMDB, pi, ops_s));
			printf("\n");
			csv_put(s, pi, v);
		}
	}
	if (opt.sys_on[S_LMDB] && any_tdb) {
		printf("\ntdb/LMDB: ratio of the medians [range of the "
		       "per-run ratios]\n%5s", "procs");
		for (int s = 0; s < S_LMDB; s++)
			if (opt.sys_on[s])
				printf("  %-26s", sys_key[s]);
		printf("\n");
		for (unsigned int pi = 0; pi < opt.nprocs; pi++) {
			printf("%5u", opt.procs[pi]);
			for (int s = 0; s < S_LMDB; s++) {
				double lo = 1e300, hi = 0;
				char b[64];

				if (!opt.sys_on[s])
					continue;
				for (unsigned int r = 0; r < opt.runs; r++) {
					double x = res[s][pi][r].ops_s /
						res[S_LMDB][pi][r].ops_s;

					lo = x < lo ? x : lo;
					hi = x > hi ? x : hi;
				}
				snprintf(b, sizeof(b), "%.2fx [%.2f-%.2f]",
					 MED(s, pi, ops_s) /
					 MED(S_LMDB, pi, ops_s), lo, hi);
				printf("  %-26s", b);
			}
			printf("\n");
		}
	}
	if (opt.sys_on[S_KERNEL] && opt.sys_on[S_ALWAYS])
		print_kernel_ratio();
	if (any_tdb)
		printf("\ntdbd restarts (one per mode and run, same data dir, "
		       "%u keys recovered from the checkpoint):\n", opt.keys);
	for (int s = 0; s < S_LMDB; s++)
		if (opt.sys_on[s] && nrestart[s])
			printf("  %-6s start -> ready (socket accepts; kernel: "
			       "supervising): mean %.2f s;\n         "
			       "SIGTERM -> exit (last checkpoint): mean %.2f s\n",
			       sys_key[s], restart_s[s] / nrestart[s],
			       stop_s[s] / nrestart[s]);
	printf("ops/s: all processes' puts over the span from the first "
	       "one's start to the last\none's end.  p50/p99: of every put "
	       "(reservoir sample of <= %u per cell).\nCPU c+s: CPUs used by "
	       "the client processes and by tdbd.  flush/s, ops/flush:\ntdb: "
	       "tdbd's own WAL fdatasyncs and changes per fdatasync (STATS "
	       "wal_syncs);\nLMDB: flush requests completed by the disk "
	       "(/proc/diskstats; anything else\non the machine that flushes "
	       "counts too).  oth%%: CPU time "
	       "other processes took\nduring the cell, %% of the machine "
	       "(over ~5%%: a noisy cell).  ckpts: tdbd\ncheckpoints during "
	       "the cells (all runs; tdbd's defaults: every 5 min or 256\n"
	       "MiB of WAL).\n", SAMPLE_BUDGET);
}

/* The keys into d's table (a tdbd started with sync none, stopped
 * after: it checkpoints; in kernel mode the table stays in tdb.ko). */
static void tdb_preload(struct tdbd *d)
{
	struct tdbc *c;
	struct tdbc_table *t;
	char msg[MSG_LEN];
	double t0 = now();
	int err;

	tdbd_start(d, "none", false);
	c = tdbd_wait_ready(d, 300);
	table_create(c, opt.keys);
	if ((err = tdbc_table_open(c, TABLE, &t)))
		die("tdbc_table_open: %s", tdbc_strerror(err));
	if (tdb_load(c, t, 0, opt.keys, msg))
		die("%s", msg);
	tdbc_table_close(t);
	if (table_count(c, d->kernel) != opt.keys)
		die("tdb holds %" PRIu64 " records after loading %u",
		    table_count(c, d->kernel), opt.keys);
	tdbc_close(c);
	tdbd_stop(d);
	tdbd_report_bad(d);
	fprintf(stderr, "  %s: loaded %u keys and checkpointed them in %.1f "
		"s\n", d->kernel ? "tdb.ko" : "tdb", opt.keys, now() - t0);
}

static void puts_phase(void)
{
	static struct tdbd dd, kd;
	double restart_s[S_N] = { 0 }, stop_s[S_N] = { 0 };
	unsigned int nrestart[S_N] = { 0 };
	bool any_tdb = opt.sys_on[S_ALWAYS] || opt.sys_on[S_BATCH] ||
		opt.sys_on[S_NONE];
	uint32_t gen = 1;

	fprintf(stderr, "tdb-bench-durable: loading %u keys\n", opt.keys);
	if (opt.sys_on[S_LMDB])
		lmdb_load();
	tdbd_init(&dd, "puts");
	tdbd_init(&kd, "kputs");
	kd.kernel = true;
	if (any_tdb)
		tdb_preload(&dd);
	if (opt.sys_on[S_KERNEL])
		tdb_preload(&kd);
	for (unsigned int run = 0; run < opt.runs; run++) {
		for (int k = 0; k < S_N; k++) {
			enum sys s = (enum sys)((k + run) % S_N);
			struct tdbd *d = s == S_KERNEL ? &kd : &dd;

			if (!opt.sys_on[s])
				continue;
			if (IS_TDB(s)) {
				struct tdbc *c;
				uint64_t n;

				tdbd_start(d, s == S_KERNEL ? "always" :
					   sys_key[s], false);
				c = tdbd_wait_ready(d, 300);
				restart_s[s] += d->t_ready - d->t_spawn;
				nrestart[s]++;
				n = table_count(c, d->kernel);
				if (n != opt.keys)
					die("tdb holds %" PRIu64 " records "
					    "after a restart, not %u", n,
					    opt.keys);
				tdbc_close(c);
			}
			for (unsigned int pi = 0; pi < opt.nprocs; pi++)
				run_cell(s, d, pi, run, ++gen);
			if (IS_TDB(s)) {
				struct tdbc *c = tdbd_connect(d);
				uint64_t n = table_count(c, d->kernel);

				tdbc_close(c);
				if (n != opt.keys)
					die("tdb holds %" PRIu64 " records "
					    "after the puts, not %u", n,
					    opt.keys);
				stop_s[s] += tdbd_stop(d);
				tdbd_report_bad(d);
			}
		}
	}
	print_puts(restart_s, stop_s, nrestart);
	fflush(stdout);
}

/* --- part 2: recovery ------------------------------------------------------- */
struct rec_run {
	double ready, pre, ckload, replay, log_ms, others;
	uint64_t ck_records, changes;
	bool ok;
};

static void drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		die("--drop-caches: /proc/sys/vm/drop_caches: %s",
		    strerror(errno));
	close(fd);
}

/* Sample n keys of [lo, hi) with tdbc_get; dies on a wrong value. */
static void check_values(struct tdbc *c, uint64_t lo, uint64_t hi,
			 unsigned int n)
{
	struct tdbc_table *t;
	uint8_t *buf = malloc(opt.vsize);
	uint64_t seed = SEED ^ lo;
	char k[KEY_LEN], msg[MSG_LEN];
	int err;

	if (!buf)
		die("out of memory");
	if ((err = tdbc_table_open(c, TABLE, &t)))
		die("tdbc_table_open: %s", tdbc_strerror(err));
	for (unsigned int j = 0; j < n && hi > lo; j++) {
		uint64_t i = lo + rnd(&seed, hi - lo);
		size_t need = 0;
		long len;

		key_make(k, i);
		len = tdbc_get(t, NULL, k, KEY_LEN, buf, opt.vsize, &need);
		if (len < 0)
			die("after recovery: get of key %" PRIu64 ": %s", i,
			    tdbc_strerror((int)len));
		if (value_check(i, buf, (size_t)len, msg))
			die("after recovery: %s", msg);
	}
	tdbc_table_close(t);
	free(buf);
}

/* Wait (reading the log) until d's checkpoint number `after` + 1 is
 * logged and, with a tdbd that says so, its file size and compaction
 * are done.  Seconds waited. */
static double wait_checkpoint(struct tdbd *d, unsigned int after)
{
	double t0 = now();
	int st;

	for (;;) {
		logw_poll(&d->lw);
		if (d->lw.nckpt > after &&
		    (d->lw.t_size >= d->lw.t_ckpt || (d->lw.t_ckpt &&
		     now() - d->lw.t_ckpt > 2)) &&
		    (!d->lw.compacting || d->lw.t_compacted >= d->lw.t_size))
			break;
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			tdbd_died(d, "checkpointing", st);
		check_interrupt();
		if (now() - t0 > 3600)
			die("no checkpoint in an hour (log %s)", d->log);
		usleep(2000);
	}
	return now() - t0;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

static void recovery_phase(void)
{
	static struct tdbd d;
	struct rec_run rr[RUNS_MAX] = { { 0 } };
	struct tdbc_stats s0, s1;
	struct tdbc *c;
	uint64_t n0 = opt.records, n1 = opt.records + opt.wal_records;
	char path[PATH_MAX + 32], b1[32], b2[32];
	double t_load, t_stop, t_wal, start0, ck0;
	unsigned int segs, nruns = 0;
	struct cpu_sample m0, m1;
	double steal;

	tdbd_init(&d, "recovery");
	printf("\nrecovery: %" PRIu64 " records in the checkpoint + %" PRIu64
	       " in the WAL (%u B keys, %u B values)\n", n0, opt.wal_records,
	       KEY_LEN, opt.vsize);
	fflush(stdout);

	/* 1. the records, with no checkpoint until the end */
	fprintf(stderr, "tdb-bench-durable: recovery: loading %" PRIu64
		" records\n", n0);
	tdbd_start(&d, "none", true);
	c = tdbd_wait_ready(&d, 60);
	printf("  tdbd%s\n", d.args);
	table_create(c, n1);
	tdbc_close(c);
	t_load = parallel_load(&d, 0, n0);
	c = tdbd_connect(&d);
	stats(c, &s0);
	if (table_records(c) != n0)
		die("tdb holds %" PRIu64 " records after loading %" PRIu64,
		    table_records(c), n0);
	tdbc_close(c);
	snprintf(path, sizeof(path), "%s/wal", d.data);
	printf("  load:     %" PRIu64 " puts from %u processes (async, %u in "
	       "flight each): %.1f s, %.0f/s; WAL %s, %" PRIu64 " records, "
	       "%" PRIu64 " checkpoints\n", n0, opt.load_procs, LOAD_PIPE,
	       t_load, (double)n0 / t_load, mib(du(path), b1, sizeof(b1)),
	       s0.wal_records, s0.checkpoints);

	/* 2. SIGTERM: tdbd checkpoints everything */
	fprintf(stderr, "tdb-bench-durable: recovery: SIGTERM (checkpoint "
		"of %" PRIu64 " records)\n", n0);
	t_stop = tdbd_stop(&d);
	tdbd_report_bad(&d);
	snprintf(path, sizeof(path), "%s/checkpoint", d.data);
	printf("  stop:     SIGTERM -> exit %.1f s; its checkpoint (%s): %"
	       PRIu64 " ms by tdbd's log; checkpoint dir %s\n", t_stop,
	       d.lw.nckpt ? d.lw.ckpt_why : "none logged!", d.lw.ckpt_ms,
	       mib(du(path), b1, sizeof(b1)));
	if (!d.lw.nckpt && d.lw.stop_skip) {
		/* this tdbd stops at once, the WAL has it: its start replays
		 * it and checkpoints after recovery */
		double t1;

		tdbd_start(&d, "none", true);
		c = tdbd_wait_ready(&d, 3600);
		t1 = d.t_ready - d.t_spawn;
		tdbc_close(c);
		wait_checkpoint(&d, 0);
		tdbd_stop(&d);
		tdbd_report_bad(&d);
		printf("  start:    WAL replay of %" PRIu64 " changes, ready "
		       "after %.1f s; checkpoint (%s): %" PRIu64 " ms, %"
		       PRIu64 " records written; checkpoint dir %s\n",
		       d.lw.rp_changes, t1, d.lw.ckpt_why, d.lw.ckpt_ms,
		       d.lw.ckpt_written, mib(du(path), b1, sizeof(b1)));
	} else if (!d.lw.nckpt) {
		printf("  ANOMALY: no checkpoint logged at SIGTERM\n");
		anomalies++;
	}

	/* 3. a start from the checkpoint alone */
	fprintf(stderr, "tdb-bench-durable: recovery: start from the "
		"checkpoint\n");
	tdbd_start(&d, "none", true);
	c = tdbd_wait_ready(&d, 3600);
	start0 = d.t_ready - d.t_spawn;
	ck0 = d.lw.t_ckload ? d.lw.t_ckload - d.t_spawn : -1;
	if (table_records(c) != n0)
		die("tdb holds %" PRIu64 " records after a restart, not %"
		    PRIu64, table_records(c), n0);
	printf("  start:    checkpoint only (%" PRIu64 " records, WAL: %"
	       PRIu64 " after it): socket accepts after %.2f s; checkpoint "
	       "loaded at %.2f s (%.0f records/s)\n", d.lw.ck_records,
	       d.lw.rp_changes, start0, ck0,
	       ck0 > 0 ? (double)d.lw.ck_records / ck0 : 0);
	stats(c, &s0);
	tdbc_close(c);

	/* 4. the WAL records: new keys, no checkpoint */
	fprintf(stderr, "tdb-bench-durable: recovery: %" PRIu64 " puts into "
		"the WAL\n", opt.wal_records);
	t_wal = parallel_load(&d, n0, n1);
	c = tdbd_connect(&d);
	stats(c, &s1);
	if (table_records(c) != n1)
		die("tdb holds %" PRIu64 " records, not %" PRIu64,
		    table_records(c), n1);
	tdbc_close(c);
	if (s1.checkpoints != s0.checkpoints || s1.ckpt_lsn != s0.ckpt_lsn)
		die("tdbd checkpointed while the WAL was filled (%" PRIu64
		    " checkpoints, LSN %" PRIu64 " -> %" PRIu64 ")",
		    s1.checkpoints - s0.checkpoints, s0.ckpt_lsn,
		    s1.ckpt_lsn);

	/* 5. SIGKILL: those are in the WAL only */
	tdbd_kill(&d);
	tdbd_report_bad(&d);
	snprintf(path, sizeof(path), "%s/wal", d.data);
	segs = count_files(path, "wal-");
	printf("  WAL:      %" PRIu64 " more puts (new keys): %.1f s, %.0f/s; "
	       "checkpoint still at LSN %" PRIu64 ", WAL at LSN %" PRIu64
	       "; SIGKILL; WAL dir %s in %u segment%s\n", opt.wal_records,
	       t_wal, (double)opt.wal_records / t_wal, s1.ckpt_lsn,
	       s1.wal_lsn, mib(du(path), b2, sizeof(b2)), segs,
	       segs == 1 ? "" : "s");
	fflush(stdout);

	/* 6. timed restarts */
	for (unsigned int r = 0; r < opt.rec_runs; r++) {
		struct rec_run *x = &rr[r];
		bool last;

		fprintf(stderr, "tdb-bench-durable: recovery: timed restart "
			"%u\n", r + 1);
		if (opt.drop_caches)
			drop_caches();
		cpu_sample(&m0);
		tdbd_start(&d, "none", true);
		c = tdbd_wait_ready(&d, 3600);
		cpu_sample(&m1);
		x->others = cpu_others(&m0, &m1, &steal);
		if (x->others >= 0 && m1.total > m0.total) {
			/* tdbd is not reaped yet: its time is not "other" */
			x->others -= proc_cpu(d.pid) / (m1.total - m0.total);
			x->others = x->others < 0 ? 0 : x->others;
		}
		x->ready = d.t_ready - d.t_spawn;
		x->pre = d.lw.t_recover ? d.lw.t_recover - d.t_spawn : -1;
		x->ckload = d.lw.t_ckload && d.lw.t_recover ?
			d.lw.t_ckload - d.lw.t_recover : -1;
		x->replay = d.lw.t_replayed && d.lw.t_ckload ?
			d.lw.t_replayed - d.lw.t_ckload : -1;
		x->log_ms = (double)d.lw.rp_ms;
		x->ck_records = d.lw.ck_records;
		x->changes = d.lw.rp_changes;
		x->ok = x->ck_records == n0 &&
			x->changes == opt.wal_records && x->replay >= 0;
		/* a run that found other counts is the last */
		last = r + 1 == opt.rec_runs || !x->ok;
		nruns++;
		if (!last) {
			tdbd_kill(&d);  /* before its checkpoint commits */
			tdbc_close(c);
			c = NULL;
		}
		tdbd_report_bad(&d);
		fprintf(stderr, "  ready %.2f s, checkpoint %.2f s (%" PRIu64
			"), replay %.3f s (%" PRIu64 ")\n", x->ready,
			x->ckload, x->ck_records, x->replay, x->changes);
		if (last) {
			double t0 = now();
			uint64_t n = table_records(c);

			if (n != n1)
				die("after recovery tdb holds %" PRIu64
				    " records, not %" PRIu64, n, n1);
			check_values(c, 0, n0, 1000);
			check_values(c, n0, n1, 1000);
			tdbc_close(c);
			/* the checkpoint it starts after recovery */
			while (!d.lw.nckpt && now() - t0 < 3600) {
				int st;

				if (waitpid(d.pid, &st, WNOHANG) == d.pid)
					tdbd_died(&d, "after recovery", st);
				check_interrupt();
				usleep(2000);
				logw_poll(&d.lw);
			}
			printf("  verified: %" PRIu64 " records after recovery, "
			       "2000 values read back and checked\n", n);
			printf("  after recovery: tdbd's checkpoint (%s) %"
			       PRIu64 " ms by its log, done %.1f s after the "
			       "socket accepted\n", d.lw.nckpt ?
			       d.lw.ckpt_why : "none", d.lw.ckpt_ms,
			       d.lw.t_ckpt ? d.lw.t_ckpt - d.t_ready : -1);
			tdbd_stop(&d);
			tdbd_report_bad(&d);
			break;
		}
	}

	printf("\n  restart after SIGKILL (%" PRIu64 " in the checkpoint, %"
	       PRIu64 " in the WAL)%s:\n", n0, opt.wal_records,
	       opt.drop_caches ? ", page cache dropped before each" :
	       ", files in the page cache");
	printf("  %-6s %8s %6s %11s %11s %9s %12s %7s %5s\n", "run",
	       "ready s", "pre s", "ckpt load s", "ckpt rec/s", "replay s",
	       "replay rec/s", "log ms", "oth%");
	{
		double v[8][RUNS_MAX];
		unsigned int n = 0;

		for (unsigned int r = 0; r < nruns; r++) {
			struct rec_run *x = &rr[r];
			double ckr = x->ckload > 0 ?
				(double)x->ck_records / x->ckload : 0;
			double rpr = x->replay > 0.001 ?
				(double)x->changes / x->replay : 0;

			printf("  %-6u %8.2f %6.2f %11.2f %11.0f %9.3f %12.0f "
			       "%7.0f %5.0f%s\n", r + 1, x->ready, x->pre,
			       x->ckload, ckr, x->replay, rpr, x->log_ms,
			       x->others * 100,
			       x->ok ? "" : x->ck_records == n1 &&
			       !x->changes ? "  not a WAL recovery: the run "
			       "before checkpointed before its SIGKILL" :
			       "  ANOMALY: unexpected counts");
			if (!x->ok) {
				if (x->ck_records != n1 || x->changes)
					anomalies++;
				continue;
			}
			v[0][n] = x->ready;
			v[1][n] = x->pre;
			v[2][n] = x->ckload;
			v[3][n] = ckr;
			v[4][n] = x->replay;
			v[5][n] = rpr;
			v[6][n] = x->log_ms;
			v[7][n] = x->others * 100;
			n++;
		}
		if (n)
			printf("  %-6s %8.2f %6.2f %11.2f %11.0f %9.3f %12.0f "
			       "%7.0f %5.0f\n", "median", median(v[0], n),
			       median(v[1], n), median(v[2], n),
			       median(v[3], n), median(v[4], n),
			       median(v[5], n), median(v[6], n),
			       median(v[7], n));
	}
	printf("  ready: spawn -> tdbc_connect succeeds (tried every ms).  "
	       "pre: spawn -> tdbd logs\n  \"recovering: loading the "
	       "checkpoint\".  ckpt load: that -> \"checkpoint at LSN ...: "
	       "N\n  records\".  replay: that -> \"WAL: replayed\" (the log "
	       "is read every ms).  log ms:\n  the \"in X ms\" of that line "
	       "(tdbd's recovery start -> replay done).  oth%%: CPU\n  time "
	       "other processes took meanwhile, %% of the machine.\n");
	fflush(stdout);
}

/* --- header ------------------------------------------------------------------ */
static const char *fs_magic_name(long t)
{
	switch ((unsigned long)t) {
	case 0xEF53: return "ext2/3/4";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x01021994: return "tmpfs";
	case 0x858458F6: return "ramfs";
	case 0x2FC12FC1: return "zfs";
	case 0xF2F52010: return "f2fs";
	case 0x6969: return "nfs";
	case 0x794C7630: return "overlayfs";
	default: return "?";
	}
}

/* The filesystem of dir: type, device, mount point, options; true if it
 * is memory (tmpfs, ramfs). */
static bool describe_fs(const char *dir, char *out, size_t len)
{
	char real[PATH_MAX], line[4096], best_dev[256] = "?",
	     best_type[64] = "?", best_mnt[PATH_MAX] = "", best_opts[512] = "";
	size_t best = 0;
	struct statfs sf;
	FILE *f;
	bool mem = false;

	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	if (statfs(real, &sf))
		die("statfs %s: %s", real, strerror(errno));
	mem = (unsigned long)sf.f_type == 0x01021994 ||
	      (unsigned long)sf.f_type == 0x858458F6;
	if ((f = fopen("/proc/mounts", "r"))) {
		while (fgets(line, sizeof(line), f)) {
			char dev[256], mnt[PATH_MAX], type[64], opts[512];
			size_t l;

			if (sscanf(line, "%255s %4095s %63s %511s", dev, mnt,
				   type, opts) != 4)
				continue;
			l = strlen(mnt);
			if (strncmp(real, mnt, l) ||
			    (real[l] && real[l] != '/' && l > 1) || l < best)
				continue;
			best = l;
			snprintf(best_dev, sizeof(best_dev), "%s", dev);
			snprintf(best_type, sizeof(best_type), "%s", type);
			snprintf(best_mnt, sizeof(best_mnt), "%s", mnt);
			snprintf(best_opts, sizeof(best_opts), "%s", opts);
		}
		fclose(f);
	}
	snprintf(out, len, "%s (statfs: %s) on %s, mounted at %s (%s)",
		 best_type, fs_magic_name((long)sf.f_type), best_dev, best_mnt,
		 best_opts);
	if (!strncmp(best_dev, "/dev/", 5))
		strf(disk_name, sizeof(disk_name), "%s", best_dev + 5);
	return mem || !strcmp(best_type, "tmpfs");
}

static void describe_disk(char *out, size_t len)
{
	char p[PATH_MAX], real[PATH_MAX], q[PATH_MAX + 32], size[64], rot[16],
	     wc[64], sched[128], drv[PATH_MAX] = "?";
	ssize_t n;

	if (!disk_name[0]) {
		snprintf(out, len, "unknown");
		return;
	}
	snprintf(p, sizeof(p), "/sys/class/block/%s", disk_name);
	if (!realpath(p, real)) {
		snprintf(out, len, "%s (not in /sys/class/block)", disk_name);
		return;
	}
	/* a partition: the queue is its parent's */
	snprintf(q, sizeof(q), "%s/queue", real);
	if (access(q, F_OK)) {
		char *s = strrchr(real, '/');

		if (s)
			*s = 0;
	}
	snprintf(q, sizeof(q), "%s/size", p);
	read_line(q, size, sizeof(size));
	snprintf(q, sizeof(q), "%s/queue/rotational", real);
	read_line(q, rot, sizeof(rot));
	snprintf(q, sizeof(q), "%s/queue/write_cache", real);
	read_line(q, wc, sizeof(wc));
	snprintf(q, sizeof(q), "%s/queue/scheduler", real);
	read_line(q, sched, sizeof(sched));
	snprintf(q, sizeof(q), "%s/device/driver", real);
	if ((n = readlink(q, drv, sizeof(drv) - 1)) > 0) {
		drv[n] = 0;
		memmove(drv, basename(drv), strlen(basename(drv)) + 1);
	}
	snprintf(out, len, "%s: driver %s, %.0f GiB, write cache \"%s\", "
		 "rotational flag %s, scheduler %s", disk_name, drv,
		 atof(size) * 512 / (1 << 30), wc, rot, sched);
}

/* fdatasync's floor here: p50/p99 of a small append + fdatasync (what a
 * WAL does) and of a 4 KiB overwrite + fdatasync, 200 of each. */
static void fsync_probe(void)
{
	char path[PATH_MAX + 16], buf[4096];
	double a[200], o[200];
	int fd;

	memset(buf, 0x5a, sizeof(buf));
	snprintf(path, sizeof(path), "%s/probe", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	for (int i = 0; i < 200; i++) {
		double t = now();

		if (pwrite(fd, buf, 168, (off_t)i * 168) != 168 ||
		    fdatasync(fd))
			die("%s: %s", path, strerror(errno));
		a[i] = (now() - t) * 1e6;
	}
	if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
	    fsync(fd))
		die("%s: %s", path, strerror(errno));
	for (int i = 0; i < 200; i++) {
		double t = now();

		if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
		    fdatasync(fd))
			die("%s: %s", path, strerror(errno));
		o[i] = (now() - t) * 1e6;
	}
	close(fd);
	unlink(path);
	qsort(a, 200, sizeof(*a), cmp_dbl);
	qsort(o, 200, sizeof(*o), cmp_dbl);
	printf("  fsync     fdatasync floor, 200 each: append 168 B + "
	       "fdatasync p50 %.0f us p99 %.0f us;\n            overwrite "
	       "4 KiB + fdatasync p50 %.0f us p99 %.0f us\n", a[99], a[197],
	       o[99], o[197]);
}

/* --- part 3: checkpoints --------------------------------------------------- */

struct ck_round {
	double stop, ready, ckpt_s;
	uint64_t ckpt_ms, written, file;
	bool at_stop, skipped;
	char why[32];
};

/* SIGTERM, a start, and the checkpoint that holds the table: the stop's
 * (a tdbd that writes it at SIGTERM) or the one after recovery. */
static void ck_cycle(struct tdbd *d, struct ck_round *r, const char *file)
{
	unsigned int n0 = d->lw.nckpt;
	struct tdbc *c;

	r->stop = tdbd_stop(d);
	tdbd_report_bad(d);
	r->at_stop = d->lw.nckpt > n0;
	r->skipped = d->lw.stop_skip;
	if (r->at_stop) {
		r->ckpt_ms = d->lw.ckpt_ms;
		r->written = d->lw.ckpt_written;
		snprintf(r->why, sizeof(r->why), "%s", d->lw.ckpt_why);
	}
	tdbd_start(d, "none", true);
	c = tdbd_wait_ready(d, 3600);
	r->ready = d->t_ready - d->t_spawn;
	if (table_records(c) != opt.records)
		die("tdb holds %" PRIu64 " records after a restart, not %"
		    PRIu64, table_records(c), opt.records);
	tdbc_close(c);
	if (!r->at_stop) {
		wait_checkpoint(d, 0);
		r->ckpt_ms = d->lw.ckpt_ms;
		r->written = d->lw.ckpt_written;
		snprintf(r->why, sizeof(r->why), "%s", d->lw.ckpt_why);
	}
	r->file = file_size(file);
}

static void ck_print(const char *what, const struct ck_round *r)
{
	double recb = (double)opt.records * (KEY_LEN + opt.vsize);

	printf("  %-14s %7.2f %-16s %9" PRIu64 " %10.0f %8.2f %9.0f %6.2fx\n",
	       what, r->stop, r->why, r->ckpt_ms,
	       r->ckpt_ms ? (double)opt.records * 1000 / (double)r->ckpt_ms :
	       0, r->ready, (double)r->file / 1048576, (double)r->file / recb);
	fflush(stdout);
}

static void ckpt_phase(void)
{
	static struct tdbd d;
	struct ck_round r;
	struct tdbc *c;
	char file[PATH_MAX + 64];
	double t_load, t_stop;
	uint64_t n = opt.records;

	tdbd_init(&d, "ckpt");
	snprintf(file, sizeof(file), "%s/checkpoint/data.mdb", d.data);
	printf("\ncheckpoints: %" PRIu64 " records (%u B keys, %u B values: "
	       "%.0f MiB of records), written whole, then rewritten %u "
	       "times\n", n, KEY_LEN, opt.vsize,
	       (double)n * (KEY_LEN + opt.vsize) / 1048576, opt.ckpt_rounds);
	tdbd_start(&d, "none", true);
	c = tdbd_wait_ready(&d, 60);
	printf("  tdbd%s\n", d.args);
	table_create(c, n);
	tdbc_close(c);
	t_load = parallel_load(&d, 0, n);
	printf("  load:  %" PRIu64 " puts from %u processes: %.1f s\n", n,
	       opt.load_procs, t_load);
	printf("  %-14s %7s %-16s %9s %10s %8s %9s %7s\n", "step", "stop s",
	       "checkpoint", "ckpt ms", "records/s", "ready s", "file MiB",
	       "/recs");
	memset(&r, 0, sizeof(r));
	ck_cycle(&d, &r, file);
	ck_print("new table", &r);
	for (unsigned int i = 0; i < opt.ckpt_rounds; i++) {
		char what[32];

		parallel_load(&d, 0, n);
		memset(&r, 0, sizeof(r));
		ck_cycle(&d, &r, file);
		snprintf(what, sizeof(what), "rewrite %u", i + 1);
		ck_print(what, &r);
	}
	/* SIGTERM while the checkpoint after a recovery runs */
	parallel_load(&d, 0, n);
	tdbd_stop(&d);
	tdbd_start(&d, "none", true);
	c = tdbd_wait_ready(&d, 3600);
	tdbc_close(c);
	usleep(300000);
	logw_poll(&d.lw);
	{
		bool replayed = d.lw.rp_changes > 0;
		bool running = replayed && !d.lw.nckpt;

		t_stop = tdbd_stop(&d);
		tdbd_report_bad(&d);
		printf("  SIGTERM 0.3 s after a start that replayed %" PRIu64
		       " changes (%s): exit after %.2f s; %s\n",
		       d.lw.rp_changes, running ? "its checkpoint running" :
		       replayed ? "its checkpoint done" :
		       "the stop before wrote the checkpoint", t_stop,
		       d.lw.abandoned ? "checkpoint abandoned" :
		       d.lw.nckpt ? "checkpoint completed" : "no checkpoint");
	}
	tdbd_start(&d, "none", true);
	c = tdbd_wait_ready(&d, 3600);
	if (table_records(c) != n)
		die("tdb holds %" PRIu64 " records after that, not %" PRIu64,
		    table_records(c), n);
	check_values(c, 0, n, 2000);
	tdbc_close(c);
	printf("  then:  a start has all %" PRIu64 " records (2000 values "
	       "checked), ready after %.2f s\n", n, d.t_ready - d.t_spawn);
	if (d.lw.rp_changes)
		wait_checkpoint(&d, 0);
	tdbd_stop(&d);
	tdbd_report_bad(&d);
}

/* --- part 4: restore into tdb.ko (kernel mode) vs tdbd's recovery --------- */

/* tdb.ko afresh: rmmod (no supervisor, no client may hold it) and
 * insmod opt.ko with the --ko-arg parameters. */
static void ko_reload(void)
{
	char cmd[PATH_MAX + 512];

	strf(cmd, sizeof(cmd), "rmmod tdb && insmod '%s'", opt.ko);
	for (unsigned int i = 0; i < opt.nko_args; i++)
		strf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " '%s'",
		     opt.ko_args[i]);
	fflush(stdout);
	fflush(stderr);
	if (system(cmd))
		die("reloading tdb.ko failed: %s", cmd);
}

/* d's data dir: a copy of src (cp -a; the copy is not timed). */
static void copy_dir(const char *src, struct tdbd *d)
{
	char cmd[3 * PATH_MAX];

	nftw(d->data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	strf(cmd, sizeof(cmd), "cp -a '%s' '%s' && sync", src, d->data);
	if (system(cmd))
		die("copying the data dir failed: %s", cmd);
}

/* A timed start's phases, seconds, from tdbd's log lines as they came
 * (read every ms): pre: spawn -> "recovering: loading the checkpoint"
 * (kernel mode: "checkpoint store at LSN"); ckpt: -> "checkpoint at LSN
 * ...: N records" (tdbd's recovery; kernel mode: "WAL: ... checked", the
 * WAL after the store applied to it, nothing loaded); claim (kernel): -> "tdb.ko has no tables
 * yet" (/dev/tdb opened, the role claimed, the log ring mapped);
 * restore (kernel): its log's "restored ... in X ms"; ready: spawn ->
 * the socket accepts (tdbd) or "supervising tdb.ko" (kernel mode). */
enum { P_PRE, P_CKPT, P_CLAIM, P_RESTORE, P_READY, P_N };

struct rst_run {
	double p[P_N];
	uint64_t records;       /* daemon: checkpoint's; kernel: restored */
};

/* One timed start of d on a copy of src; checks n records and a sample
 * of values; SIGKILLs it (the copy is thrown away). */
static void rst_start(struct tdbd *d, const char *src, uint64_t n,
		      struct rst_run *x)
{
	struct logw *w = &d->lw;
	struct tdbc *c;

	copy_dir(src, d);
	if (d->kernel)
		ko_reload();
	if (opt.drop_caches)
		drop_caches();
	tdbd_start(d, "always", false);
	c = tdbd_wait_ready(d, 7200);
	memset(x, 0, sizeof(*x));
	x->p[P_PRE] = w->t_recover ? w->t_recover - d->t_spawn : -1;
	x->p[P_CKPT] = w->t_ckload && w->t_recover ?
		w->t_ckload - w->t_recover : -1;
	x->p[P_CLAIM] = w->t_kclaim && w->t_ckload ?
		w->t_kclaim - w->t_ckload : -1;
	x->p[P_RESTORE] = d->kernel ? (double)w->kr_ms / 1000 : -1;
	x->p[P_READY] = d->t_ready - d->t_spawn;
	x->records = d->kernel ? w->kr_records : w->ck_records;
	if (table_count(c, d->kernel) != n)
		die("%s holds %" PRIu64 " records after its start, not %"
		    PRIu64, d->kernel ? "tdb.ko" : "tdbd",
		    table_count(c, d->kernel), n);
	if (x->records != n || x->p[P_CKPT] < 0 ||
	    (d->kernel && (!w->t_krestored || x->p[P_CLAIM] < 0)))
		die("%s's log lacks a line or says %" PRIu64 " records %s, "
		    "not %" PRIu64 " (log %s)", d->kernel ?
		    "kernel-mode tdbd" : "tdbd", x->records, d->kernel ?
		    "restored" : "in the checkpoint", n, d->log);
	check_values(c, 0, n, 1000);
	tdbc_close(c);
	tdbd_kill(d);
	tdbd_report_bad(d);
	fprintf(stderr, "  %-6s pre %.2f s, checkpoint %.2f s, claim %.2f s, "
		"restore %.2f s, ready %.2f s\n", d->kernel ? "tdb.ko" :
		"tdbd", x->p[P_PRE], x->p[P_CKPT], x->p[P_CLAIM],
		x->p[P_RESTORE], x->p[P_READY]);
	if (d->kernel && w->kr_stages[0])
		fprintf(stderr, "         %s\n", w->kr_stages);
}

/* The data dir of n records, made once: tdbd, sync none, a parallel
 * load, SIGTERM (its checkpoint into LMDB: nothing in the WAL). */
static void rst_make(struct tdbd *src, uint64_t n)
{
	struct tdbc *c;
	double t_load, t_stop;
	char b1[32], path[PATH_MAX + 32];

	tdbd_start(src, "none", true);
	c = tdbd_wait_ready(src, 60);
	table_create(c, n);
	tdbc_close(c);
	t_load = parallel_load(src, 0, n);
	t_stop = tdbd_stop(src);
	tdbd_report_bad(src);
	snprintf(path, sizeof(path), "%s/checkpoint", src->data);
	printf("  made:     %" PRIu64 " puts (sync none, %u processes) %.1f "
	       "s; SIGTERM -> exit %.1f s (%s)\n", n, opt.load_procs, t_load,
	       t_stop, src->lw.nckpt ? "its checkpoint" : src->lw.stop_skip ?
	       "too big for a stop checkpoint" : "its checkpoint abandoned");
	if (!src->lw.nckpt) {
		/* a stop writes at most 1M records within 5 s: the start
		 * after replays the WAL and checkpoints (no deadline) */
		tdbd_start(src, "none", true);
		c = tdbd_wait_ready(src, 7200);
		tdbc_close(c);
		wait_checkpoint(src, 0);
		printf("  made:     a start replayed %" PRIu64 " changes and "
		       "checkpointed them: %" PRIu64 " ms by its log\n",
		       src->lw.rp_changes, src->lw.ckpt_ms);
		tdbd_stop(src);
		tdbd_report_bad(src);
	}
	printf("  made:     checkpoint dir %s\n",
	       mib(du(path), b1, sizeof(b1)));
}

static void rst_row(const char *what, const double *dp, const double *kp)
{
	printf("  %-4s %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f %8.2f %7.2f\n",
	       what, dp[P_PRE], dp[P_CKPT], dp[P_READY], kp[P_PRE],
	       kp[P_CKPT], kp[P_CLAIM], kp[P_RESTORE], kp[P_READY]);
}

static void rst_print(uint64_t n, struct rst_run *dr, struct rst_run *kr,
		      unsigned int runs)
{
	double v[2][P_N][RUNS_MAX], dm[P_N], km[P_N], lo = 1e300, hi = 0;
	double rrec, rrst, r1, r2;
	char param[32];

	printf("  %-4s %7s %7s %7s | %7s %7s %7s %8s %7s\n", "", "tdbd:",
	       "", "", "tdb.ko:", "", "", "", "");
	printf("  %-4s %7s %7s %7s | %7s %7s %7s %8s %7s\n", "run", "pre s",
	       "ckpt s", "ready s", "pre s", "ckpt s", "claim s", "restore",
	       "ready s");
	for (unsigned int r = 0; r < runs; r++) {
		/* restore rate against recovery rate, this run */
		double x = dr[r].p[P_CKPT] / kr[r].p[P_RESTORE];
		char what[16];

		snprintf(what, sizeof(what), "%u", r + 1);
		rst_row(what, dr[r].p, kr[r].p);
		for (int i = 0; i < P_N; i++) {
			v[0][i][r] = dr[r].p[i];
			v[1][i][r] = kr[r].p[i];
		}
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
	}
	for (int i = 0; i < P_N; i++) {
		dm[i] = median(v[0][i], runs);
		km[i] = median(v[1][i], runs);
	}
	rst_row("med", dm, km);
	rrec = (double)n / dm[P_CKPT];
	rrst = (double)n / km[P_RESTORE];
	r1 = rrst / rrec;
	r2 = dm[P_READY] / km[P_READY];
	printf("  records/s (medians): tdbd's recovery (ckpt) %.0f; tdb.ko's "
	       "restore %.0f:\n    restore/recovery %.2fx [per run %.2f-%.2f]."
	       "  Whole start: tdbd %.2f s, kernel\n    mode %.2f s (the "
	       "store brought up to date + claim + restore): %.2fx tdbd's "
	       "speed\n",
	       rrec, rrst, r1, lo, hi, dm[P_READY], km[P_READY], r2);
	snprintf(param, sizeof(param), "records %" PRIu64, n);
	bench_csv_row(csv, "durability", "tdbd", NULL,
		      "recovery (checkpoint load)", param, rrec, "records/s",
		      -1);
	bench_csv_row(csv, "durability", "tdb.ko", "tdbd",
		      "restore into tdb.ko", param, rrst, "records/s", r1);
	bench_csv_row(csv, "durability", "tdbd", NULL, "start to ready",
		      param, dm[P_READY], "s", -1);
	bench_csv_row(csv, "durability", "tdb.ko", "tdbd",
		      "kernel-mode start to supervising", param, km[P_READY],
		      "s", r2);
	fflush(stdout);
}

static void restore_phase(void)
{
	static struct tdbd src, dd, kd;

	printf("\nrestore: a data dir of N records (checkpoint only), copied "
	       "for each start;\ntdbd (daemon mode) recovers it; tdbd "
	       "--backend kernel brings the store up to date\nand restores "
	       "it into a fresh tdb.ko (%s", opt.ko);
	for (unsigned int i = 0; i < opt.nko_args; i++)
		printf(" %s", opt.ko_args[i]);
	printf("); medians of %u run%s\n", opt.rst_runs,
	       opt.rst_runs == 1 ? "" : "s");
	for (unsigned int i = 0; i < opt.nrst; i++) {
		uint64_t n = opt.rst_records[i];
		struct rst_run dr[RUNS_MAX], kr[RUNS_MAX], pr[RUNS_MAX];
		struct rst_run mr[RUNS_MAX], sr[RUNS_MAX];

		printf("\n%" PRIu64 " records (%u B keys, %u B values)\n", n,
		       KEY_LEN, opt.vsize);
		fprintf(stderr, "tdb-bench-durable: restore: making %" PRIu64
			" records\n", n);
		tdbd_init(&src, "rsrc");
		tdbd_init(&dd, "rdaemon");
		tdbd_init(&kd, "rkernel");
		kd.kernel = true;
		rst_make(&src, n);
		for (unsigned int r = 0; r < opt.rst_runs; r++) {
			/* alternate which goes first */
			if (r % 2) {
				rst_start(&kd, src.data, n, &kr[r]);
				rst_start(&dd, src.data, n, &dr[r]);
			} else {
				rst_start(&dd, src.data, n, &dr[r]);
				rst_start(&kd, src.data, n, &kr[r]);
			}
			if (opt.rst_put) {
				/* the same start, one PUT a record */
				if (setenv("TDBD_KERNEL_RESTORE", "put", 1))
					die("setenv: %s", strerror(errno));
				rst_start(&kd, src.data, n, &pr[r]);
				unsetenv("TDBD_KERNEL_RESTORE");
			}
			if (opt.rst_mirror) {
				/* the same start, from the mirror */
				if (setenv("TDBD_KERNEL_RESTORE_FROM", "mirror",
					   1))
					die("setenv: %s", strerror(errno));
				rst_start(&kd, src.data, n, &mr[r]);
				unsetenv("TDBD_KERNEL_RESTORE_FROM");
			}
			if (opt.rst_slow) {
				/* the same start, without the fast path */
				opt.ko_args[opt.nko_args++] = "restore_fast=0";
				rst_start(&kd, src.data, n, &sr[r]);
				opt.nko_args--;
			}
			nftw(dd.data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
			nftw(kd.data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		}
		ko_reload();    /* its tables' memory back */
		nftw(src.data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		rst_print(n, dr, kr, opt.rst_runs);
		if (opt.rst_put) {
			printf("  RESTORE_BULK (above) against one PUT a record "
			       "(TDBD_KERNEL_RESTORE=put), same boot:\n");
			rst_print(n, dr, pr, opt.rst_runs);
		}
		if (opt.rst_mirror) {
			printf("  From the checkpoint store (first table) against "
			       "from the mirror\n  (TDBD_KERNEL_RESTORE_FROM="
			       "mirror), same boot:\n");
			rst_print(n, dr, mr, opt.rst_runs);
		}
		if (opt.rst_slow) {
			printf("  Without the fast path (tdb.ko restore_fast=0: "
			       "each record through the\n  change pipeline), "
			       "same boot:\n");
			rst_print(n, dr, sr, opt.rst_runs);
		}
	}
	printf("  From tdbd's log lines as they came (read every ms): pre: "
	       "spawn -> \"recovering:\n  loading the checkpoint\".  ckpt: "
	       "-> \"checkpoint at LSN ...: N records\" (tdbd's\n  recovery; "
	       "kernel mode: \"WAL: ... checked\").  claim: -> \"tdb.ko has no "
	       "tables yet\"\n  (/dev/tdb opened, role claimed, log ring "
	       "mapped).  restore: kernel mode's\n  \"restored ... into tdb.ko "
	       "in X ms\".  ready: spawn -> the socket accepts (tdbd) or\n  "
	       "\"supervising tdb.ko\" (kernel mode: clients admitted).  A "
	       "checkpoint-only data\n  dir: tdbd logs no duration for that "
	       "recovery (only WAL replays say \"in X ms\").\n  Files in the "
	       "page cache unless --drop-caches.\n");
	fflush(stdout);
}

static void print_header(void)
{
	char cpu[256], fs[1024], disk[512], load[128], huge[32];
	struct cpu_sample a, b;
	struct utsname u;
	double steal, o;
	int maj, min, pat;

	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	read_line("/proc/loadavg", load, sizeof(load));
	printf("tdb-bench-durable: durable puts (tdbd --sync always/batch/"
	       "none vs LMDB full sync) and recovery\n");
	read_line("/proc/sys/vm/nr_hugepages", huge, sizeof(huge));
	printf("  machine   %s, nproc %ld, kernel %s, vm.nr_hugepages %s\n"
	       "  load      load average %s\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), u.release, huge, load);
	cpu_sample(&a);
	usleep(300000);
	cpu_sample(&b);
	if ((o = cpu_others(&a, &b, &steal)) >= 0)
		printf("  others    other processes used %.0f%% of the CPUs "
		       "just before the start%s\n", o * 100,
		       o > 0.1 ? " - the figures will be noisy" : "");
	describe_fs(tmpdir, fs, sizeof(fs));
	describe_disk(disk, sizeof(disk));
	printf("  dir       %s (tdb's data dirs and the LMDB env)\n  fs       "
	       " %s\n  disk      %s\n", tmpdir, fs, disk);
	fsync_probe();
	mdb_version(&maj, &min, &pat);
	printf("  tdbd      %s --config /dev/null --socket ... --data-dir ... "
	       "--sync MODE", tdbd_bin);
	for (unsigned int i = 0; i < opt.ntdbd_args; i++)
		printf(" %s", opt.tdbd_args[i]);
	printf("\n  LMDB      %d.%d.%d, flags 0 (full sync: no MDB_NOSYNC, no "
	       "MDB_NOMETASYNC), one env opened by every process\n", maj, min,
	       pat);
	printf("  build     gcc %s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimised"
#else
	       ", NOT optimised"
#endif
	       );
	fflush(stdout);
}

/* --- options ------------------------------------------------------------------ */
/* --- part 5: memory: kernel mode's tdbd and tdb.ko's tables vs tdbd alone - */

/* What a process holds, from /proc/PID/status (kB there, bytes here):
 * anonymous and shared memory (tdbd's tables are a memfd: RssShmem, or
 * hugetlb pages, which RSS does not count), file pages (LMDB's map,
 * page cache, reclaimable), and the peak. */
struct memfig {
	uint64_t anon, shmem, file, hwm;
	uint64_t tables;        /* the table's bytes_allocated (STAT) */
	uint64_t page_size;
};

static void proc_mem(pid_t pid, struct memfig *m)
{
	static const char *const keys[] = { "RssAnon:", "RssShmem:",
					    "RssFile:", "VmHWM:" };
	uint64_t *out[] = { &m->anon, &m->shmem, &m->file, &m->hwm };
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		for (unsigned int i = 0; i < 4; i++) {
			unsigned long long kb;
			size_t n = strlen(keys[i]);

			if (!strncmp(line, keys[i], n) &&
			    sscanf(line + n, "%llu", &kb) == 1)
				*out[i] = (uint64_t)kb << 10;
		}
	fclose(f);
}

static void mem_take(struct tdbd *d, struct tdbc *c, struct memfig *m)
{
	struct tdbc_table_stat st;
	int err = tdbc_table_stat(c, TABLE, &st);

	if (err)
		die("tdbc_table_stat: %s: %s", tdbc_strerror(err),
		    tdbc_errmsg(c));
	memset(m, 0, sizeof(*m));
	proc_mem(d->pid, m);
	m->tables = st.bytes_allocated;
	m->page_size = st.page_size;
}

/* The data's memory on the host: tdbd's anonymous and shared pages, and
 * the tables where RSS does not show them (tdb.ko's; hugetlb). */
static uint64_t mem_total(const struct memfig *m, bool kernel)
{
	uint64_t t = m->anon + m->shmem;

	if (kernel || m->page_size == EXTENT)
		t += m->tables;
	return t;
}

static void mem_row(const char *mode, const char *when,
		    const struct memfig *m, bool kernel)
{
	char a[32], s[32], f[32], h[32], t[32], all[32];

	printf("  %-7s %-22s %9s %9s %9s %9s %10s %10s\n", mode, when,
	       mib(m->anon, a, sizeof(a)), mib(m->shmem, s, sizeof(s)),
	       mib(m->file, f, sizeof(f)), mib(m->hwm, h, sizeof(h)),
	       mib(m->tables, t, sizeof(t)),
	       mib(mem_total(m, kernel), all, sizeof(all)));
}

/* One mode: load n records, wait for a checkpoint, measure; SIGTERM
 * (its stop checkpoint) and start again, measure. */
static void mem_mode(struct tdbd *d, uint64_t n, struct memfig *loaded,
		     struct memfig *restarted)
{
	struct tdbc *c;

	static char wal[32];
	unsigned int nargs = opt.ntdbd_args;

	/* checkpoints during the load: one per quarter of the data */
	snprintf(wal, sizeof(wal), "%lluM", (unsigned long long)
		 ((n * (KEY_LEN + opt.vsize) / 4 >> 20) + 1));
	if (nargs + 2 > sizeof(opt.tdbd_args) / sizeof(opt.tdbd_args[0]))
		die("too many --tdbd-arg for --only memory");
	opt.tdbd_args[opt.ntdbd_args++] = "--checkpoint-wal-size";
	opt.tdbd_args[opt.ntdbd_args++] = wal;
	nftw(d->data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (d->kernel)
		ko_reload();
	tdbd_start(d, "none", false);
	c = tdbd_wait_ready(d, 600);
	table_create(c, n);
	tdbc_close(c);
	parallel_load(d, 0, n);
	c = tdbd_connect(d);
	if (table_count(c, d->kernel) != n)
		die("%s holds %" PRIu64 " records after the load, not %"
		    PRIu64, d->kernel ? "tdb.ko" : "tdbd",
		    table_count(c, d->kernel), n);
	wait_checkpoint(d, 0);  /* at least one came */
	mem_take(d, c, loaded);
	tdbc_close(c);
	tdbd_stop(d);
	tdbd_report_bad(d);
	tdbd_start(d, "none", false);
	c = tdbd_wait_ready(d, 7200);
	if (table_count(c, d->kernel) != n)
		die("%s holds %" PRIu64 " records after a restart, not %"
		    PRIu64, d->kernel ? "tdb.ko" : "tdbd",
		    table_count(c, d->kernel), n);
	check_values(c, 0, n, 1000);
	mem_take(d, c, restarted);
	tdbc_close(c);
	tdbd_stop(d);
	tdbd_report_bad(d);
	nftw(d->data, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	opt.ntdbd_args = nargs;
}

static void memory_phase(void)
{
	static struct tdbd dd, kd;
	struct memfig dl, dr, kl, kr;
	uint64_t n = opt.mem_records;
	double raw = (double)n * (KEY_LEN + opt.vsize);
	char b[32];

	printf("\nmemory: %" PRIu64 " records (%u B keys, %u B values, %s "
	       "raw) loaded by %u processes\ninto tdbd alone and into "
	       "tdbd --backend kernel (a fresh tdb.ko), checkpoints every "
	       "quarter of\nthe data's bytes of WAL, then SIGTERM and a start "
	       "again (kernel mode: the\ntables stay resident in tdb.ko)\n", n, KEY_LEN, opt.vsize,
	       mib((uint64_t)raw, b, sizeof(b)), opt.load_procs);
	tdbd_init(&dd, "mdaemon");
	tdbd_init(&kd, "mkernel");
	kd.kernel = true;
	mem_mode(&dd, n, &dl, &dr);
	mem_mode(&kd, n, &kl, &kr);
	ko_reload();            /* its tables' memory back */
	printf("  %-7s %-22s %9s %9s %9s %9s %10s %10s\n", "mode", "when",
	       "RssAnon", "RssShmem", "RssFile", "VmHWM", "tables",
	       "total");
	mem_row("tdbd", "loaded, checkpointed", &dl, false);
	mem_row("tdbd", "restarted", &dr, false);
	mem_row("kernel", "loaded, checkpointed", &kl, true);
	mem_row("kernel", "restarted", &kr, true);
	printf("  total: tdbd's RssAnon + RssShmem, plus the table's "
	       "bytes_allocated (STAT)\n  where RSS does not hold it "
	       "(tdb.ko's, or hugetlb pages).  RssFile (LMDB's map, page\n"
	       "  cache) is reclaimable and left out.  VmHWM: tdbd's peak "
	       "RSS, checkpoints included.\n");
	{
		char l[32], r[32], pk[32];

		printf("  kernel mode / tdbd alone (total): loaded %.2fx, "
		       "restarted %.2fx\n  kernel-mode tdbd alone (RssAnon + "
		       "RssShmem): loaded %s, restarted %s, peak\n  (VmHWM) "
		       "%s\n", (double)mem_total(&kl, true) /
		       (double)mem_total(&dl, false),
		       (double)mem_total(&kr, true) /
		       (double)mem_total(&dr, false),
		       mib(kl.anon + kl.shmem, l, sizeof(l)),
		       mib(kr.anon + kr.shmem, r, sizeof(r)),
		       mib(kr.hwm > kl.hwm ? kr.hwm : kl.hwm, pk,
			   sizeof(pk)));
	}
	bench_csv_row(csv, "durability", "tdb.ko", "tdbd",
		      "memory: kernel-mode tdbd + tdb.ko's tables (loaded)",
		      "records", (double)mem_total(&kl, true), "bytes",
		      (double)mem_total(&kl, true) /
		      (double)mem_total(&dl, false));
	bench_csv_row(csv, "durability", "tdb.ko", "tdbd",
		      "memory: kernel-mode tdbd + tdb.ko's tables (restarted)",
		      "records", (double)mem_total(&kr, true), "bytes",
		      (double)mem_total(&kr, true) /
		      (double)mem_total(&dr, false));
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-durable [options]\n"
"What tdbd's durability costs and how fast it recovers.  Part 1: blocking\n"
"puts with 1, 8 and 32 client processes, tdbd --sync always, batch and none\n"
"(restarted per mode) vs LMDB with full sync and one put per write\n"
"transaction, on the same filesystem: ops/s, p50/p99, ratios.  Part 2:\n"
"start time with N records in the checkpoint and M in the WAL: checkpoint\n"
"load, WAL replay, records/s.\n"
"\n"
"  -d, --dir DIR          where the temp dir goes; not tmpfs (default\n"
"                         /var/tmp)\n"
"  -n, --keys N           keys in both stores for part 1 (default 1000000)\n"
"  -s, --seconds S        length of a put cell (default 3)\n"
"  -p, --procs LIST       client processes (default 1,8,32)\n"
"  -m, --systems LIST     always,batch,none,kernel,lmdb (default all but\n"
"                         kernel: tdb.ko with tdbd --backend kernel --sync\n"
"                         always as its supervisor, clients on /dev/tdb;\n"
"                         root, tdb.ko loaded: run-bench.sh --durable)\n"
"  -r, --runs R           part 1 runs; medians (default 3)\n"
"  -N, --records N        records in the checkpoint (default 10M)\n"
"  -W, --wal-records N    records in the WAL only (default 1M)\n"
"  -R, --recovery-runs R  timed restarts (default 3)\n"
"  -L, --load-procs P     processes loading part 2's records (default 2)\n"
"  -o, --only PARTS       puts, recovery, ckpt, restore, memory, or several\n"
"                         joined by '+' (default puts+recovery).\n"
"                         ckpt: --records written whole, then rewritten\n"
"                         --ckpt-rounds times: checkpoint time and\n"
"                         records/s, file size, SIGTERM time, also in\n"
"                         the middle of a checkpoint.  restore: a data\n"
"                         dir of N records made once per size, then per\n"
"                         run a start of tdbd on a copy against one of\n"
"                         tdbd --backend kernel on a copy into a fresh\n"
"                         tdb.ko: times, records/s, ratios\n"
"      --ckpt-rounds N    rewrites in --only ckpt (default 3)\n"
"      --restore-records LIST  sizes for --only restore (default 1M,10M)\n"
"      --restore-runs R   starts of each per size (default 3)\n"
"      --restore-put      each run also restores into tdb.ko one PUT a\n"
"                         record (TDBD_KERNEL_RESTORE=put, the way before\n"
"                         RESTORE_BULK): both against tdbd's recovery\n"
"      --memory-records N  records for --only memory (default 1M): loaded\n"
"                         into tdbd alone and into kernel mode, then\n"
"                         checkpointed and restarted: tdbd's RSS (and\n"
"                         tdb.ko's tables) against tdbd alone's\n"
"      --value-size B     value bytes of every record (default 100)\n"
"      --restore-mirror   each run also restores into tdb.ko from tdbd's\n"
"                         mirror (TDBD_KERNEL_RESTORE_FROM=mirror, the way\n"
"                         before the restore read the checkpoint store)\n"
"      --restore-slow     each run also restores into tdb.ko with tdb.ko's\n"
"                         restore_fast=0 (each RESTORE_BULK record through\n"
"                         the change pipeline, the way before the fast path)\n"
"      --ko PATH          tdb.ko, insmod'ed afresh (after rmmod tdb) before\n"
"                         each kernel-mode restore (default\n"
"                         /lib/modules/tdb.ko, the qemu guest's)\n"
"      --ko-arg P=V       a module parameter for that insmod (repeatable;\n"
"                         e.g. max_memory_mb=8192 for 10M records)\n"
"  -q, --quick            small: 20k keys, 1 s cells, 1 run, 200k + 20k\n"
"                         records, 2 restarts (options after it override)\n"
"  -T, --tdbd PATH        the tdbd (default: $TDBD, else the build tree's)\n"
"  -A, --tdbd-arg ARG     one more tdbd argument (repeat: -A --workers -A 2)\n"
"      --drop-caches      drop the page cache before each timed restart\n"
"                         (root; affects everything on the machine)\n"
"      --allow-tmpfs      run on tmpfs anyway (fsync costs nothing there)\n"
"  -k, --keep             keep the temp dir (data dirs, tdbd logs)\n"
"  -S, --strict           exit 77 if there is no tdbd (for the tests)\n"
"  -v, --verbose          tdbd's log lines on stderr\n"
"      --csv FILE         also write part 1's and restore's figures to\n"
"                         FILE as CSV\n"
"                         (bench/common/csv.h, bench/summary/make-charts.sh)\n"
"  -h, --help             this text\n"
"Lists are split at ',' or '+'.  With no arguments, the options come from\n"
"$TDB_BENCH_DURABLE_ARGS split at ',' (the qemu guest's way) and the\n"
"report is framed by DURABLE-BEGIN / DURABLE-END lines.\n"
"Numbers take k/K (1000) and m/M (10^6).  --tdbd-arg goes to every tdbd\n"
"start, after the benchmark's own options (the later wins: -A\n"
"--checkpoint-wal-size -A 256M lifts part 2's checkpoint hold-off).\n"
"Exit status: 0; 1 an error (tdbd's log tail on stderr); 3 tdbd logged an\n"
"error or a recovery found other counts (ANOMALY lines); 77 no tdbd\n"
"with --strict.\n");
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
		fprintf(stderr, "tdb-bench-durable: bad %s '%s' (%" PRIu64
			"..%" PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static void parse_systems(const char *s)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(opt.sys_on, 0, sizeof(opt.sys_on));
	for (char *t = strtok_r(buf, ",+", &save); t;
	     t = strtok_r(NULL, ",+", &save)) {
		int k;

		for (k = 0; k < S_N && strcmp(t, sys_key[k]); k++)
			;
		if (k == S_N) {
			fprintf(stderr, "tdb-bench-durable: unknown system "
				"'%s' (always, batch, none, kernel, "
				"lmdb)\n", t);
			exit(2);
		}
		opt.sys_on[k] = true;
	}
}

/* --only: parts, split at ',' or '+'. */
static void parse_parts(const char *s)
{
	static const char *const names[] = { "puts", "recovery", "ckpt",
					      "restore", "memory" };
	bool *flags[] = { &opt.do_puts, &opt.do_recovery, &opt.do_ckpt,
			  &opt.do_restore, &opt.do_memory };
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (unsigned int i = 0; i < 5; i++)
		*flags[i] = false;
	for (char *t = strtok_r(buf, ",+", &save); t;
	     t = strtok_r(NULL, ",+", &save)) {
		unsigned int i;

		for (i = 0; i < 5 && strcmp(t, names[i]); i++)
			;
		if (i == 5) {
			fprintf(stderr, "tdb-bench-durable: --only puts, "
				"recovery, ckpt, restore or memory (or "
				"several: puts+restore)\n");
			exit(2);
		}
		*flags[i] = true;
	}
}

/* A list of numbers in [lo, hi] separated by ',' or '+', at most max:
 * how many, or exit(2) naming what is wrong. */
static unsigned int parse_list(const char *s, const char *what,
			       uint64_t *out, unsigned int max, uint64_t lo,
			       uint64_t hi)
{
	char buf[128], *save = NULL;
	unsigned int n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",+", &save); t;
	     t = strtok_r(NULL, ",+", &save)) {
		if (n == max) {
			fprintf(stderr, "tdb-bench-durable: at most %u %s\n",
				max, what);
			exit(2);
		}
		out[n++] = parse_num(t, what, lo, hi);
	}
	return n;
}

static void parse_sizes(const char *s)
{
	opt.nrst = parse_list(s, "--restore-records sizes", opt.rst_records,
			      4, 1, 1000000000ull);
	if (!opt.nrst)
		exit(2);
}

/* No arguments and $TDB_BENCH_DURABLE_ARGS: those, split at commas
 * (run-qemu.sh's --env cannot carry spaces); the report is framed. */
static void env_args(int *argc, char ***argv)
{
	static char *eargv[64];
	const char *env = getenv("TDB_BENCH_DURABLE_ARGS");
	char *s, *tok, *save = NULL;
	int n = 0;

	if (*argc != 1 || !env || !*env)
		return;
	if (!(s = strdup(env)))
		exit(1);
	eargv[n++] = (*argv)[0];
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == 63) {
			fprintf(stderr, "tdb-bench-durable: too many options "
				"in TDB_BENCH_DURABLE_ARGS\n");
			exit(2);
		}
		eargv[n++] = tok;
	}
	eargv[n] = NULL;
	*argc = n;
	*argv = eargv;
	opt.markers = true;
}

static void parse_args(int argc, char **argv)
{
	enum { O_DROP = 256, O_TMPFS, O_CSV, O_RREC, O_RRUNS, O_KO,
	       O_KOARG, O_RPUT, O_MREC, O_VSIZE, O_RMIRROR, O_RSLOW };
	static const struct option lo[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "keys", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "procs", required_argument, NULL, 'p' },
		{ "systems", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ "records", required_argument, NULL, 'N' },
		{ "wal-records", required_argument, NULL, 'W' },
		{ "recovery-runs", required_argument, NULL, 'R' },
		{ "load-procs", required_argument, NULL, 'L' },
		{ "only", required_argument, NULL, 'o' },
		{ "ckpt-rounds", required_argument, NULL, 'C' },
		{ "quick", no_argument, NULL, 'q' },
		{ "tdbd", required_argument, NULL, 'T' },
		{ "tdbd-arg", required_argument, NULL, 'A' },
		{ "drop-caches", no_argument, NULL, O_DROP },
		{ "allow-tmpfs", no_argument, NULL, O_TMPFS },
		{ "keep", no_argument, NULL, 'k' },
		{ "strict", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "csv", required_argument, NULL, O_CSV },
		{ "restore-records", required_argument, NULL, O_RREC },
		{ "restore-runs", required_argument, NULL, O_RRUNS },
		{ "restore-put", no_argument, NULL, O_RPUT },
		{ "memory-records", required_argument, NULL, O_MREC },
		{ "value-size", required_argument, NULL, O_VSIZE },
		{ "restore-mirror", no_argument, NULL, O_RMIRROR },
		{ "restore-slow", no_argument, NULL, O_RSLOW },
		{ "ko", required_argument, NULL, O_KO },
		{ "ko-arg", required_argument, NULL, O_KOARG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:n:s:p:m:r:N:W:R:L:o:C:qT:A:kSvh",
				lo, NULL)) != -1) {
		switch (c) {
		case 'd': opt.dir = optarg; break;
		case 'n':
			opt.keys = (uint32_t)parse_num(optarg, "key count", 1,
						       1000000000);
			break;
		case 's': {
			char *end;

			opt.secs = strtod(optarg, &end);
			if (*end || !(opt.secs >= 0.05 && opt.secs <= 3600)) {
				fprintf(stderr, "tdb-bench-durable: bad "
					"seconds '%s' (0.05..3600)\n", optarg);
				exit(2);
			}
			break;
		}
		case 'p': {
			uint64_t v[8];

			opt.nprocs = parse_list(optarg, "process counts", v, 8,
						1, PROCS_MAX);
			for (unsigned int i = 0; i < opt.nprocs; i++)
				opt.procs[i] = (unsigned int)v[i];
			if (!opt.nprocs)
				exit(2);
			break;
		}
		case 'm': parse_systems(optarg); break;
		case 'r':
			opt.runs = (unsigned int)parse_num(optarg, "runs", 1,
							   RUNS_MAX);
			break;
		case 'N':
			opt.records = parse_num(optarg, "records", 1,
						1000000000000ull);
			break;
		case 'W':
			opt.wal_records = parse_num(optarg, "WAL records", 1,
						    1000000000000ull);
			break;
		case 'R':
			opt.rec_runs = (unsigned int)parse_num(optarg, "runs",
							       1, RUNS_MAX);
			break;
		case 'L':
			opt.load_procs = (unsigned int)parse_num(optarg,
						"load procs", 1, PROCS_MAX);
			break;
		case 'o': parse_parts(optarg); break;
		case 'q':
			opt.keys = 20000;
			opt.secs = 1;
			opt.runs = 1;
			opt.records = 200000;
			opt.wal_records = 20000;
			opt.rec_runs = 2;
			break;
		case 'C':
			opt.ckpt_rounds = (unsigned int)parse_num(optarg,
						"ckpt rounds", 1, 100);
			break;
		case 'T': opt.tdbd = optarg; break;
		case 'A':
			if (opt.ntdbd_args == 16) {
				fprintf(stderr, "tdb-bench-durable: at most 16 "
					"--tdbd-arg\n");
				exit(2);
			}
			opt.tdbd_args[opt.ntdbd_args++] = optarg;
			break;
		case O_DROP: opt.drop_caches = true; break;
		case O_TMPFS: opt.allow_tmpfs = true; break;
		case O_CSV: opt.csv = optarg; break;
		case O_RREC: parse_sizes(optarg); break;
		case O_RRUNS:
			opt.rst_runs = (unsigned int)parse_num(optarg, "runs",
							       1, RUNS_MAX);
			break;
		case O_KO: opt.ko = optarg; break;
		case O_RPUT: opt.rst_put = true; break;
		case O_MREC:
			opt.mem_records = parse_num(optarg, "--memory-records",
						    1000, 100000000);
			break;
		case O_VSIZE:
			opt.vsize = (uint32_t)parse_num(optarg, "--value-size",
							16, 65536);
			break;
		case O_RMIRROR: opt.rst_mirror = true; break;
		case O_RSLOW: opt.rst_slow = true; break;
		case O_KOARG:
			if (opt.nko_args == 8) {
				fprintf(stderr, "tdb-bench-durable: at most 8 "
					"--ko-arg\n");
				exit(2);
			}
			opt.ko_args[opt.nko_args++] = optarg;
			break;
		case 'k': opt.keep = true; break;
		case 'S': opt.strict = true; break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench-durable: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(2);
	}
	if (opt.records + opt.wal_records >= 10000000000000ull) {
		fprintf(stderr, "tdb-bench-durable: at most 10^13 keys\n");
		exit(2);
	}
}

/* tdbd warns when RLIMIT_NOFILE cannot hold max-clients (1024)
 * clients' descriptors (the qemu guest's is 4096): as root, raise it
 * (as systemd's LimitNOFILE= would), else take the hard limit. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < 65536) {
		struct rlimit want = { 65536, 65536 };

		if (rl.rlim_max > 65536)
			want.rlim_max = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &want)) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	char base[PATH_MAX], fs[1024];
	const char *bin;
	double t0 = now();
	struct cpu_sample c0, c1;
	double steal, o;
	int rc;

	env_args(&argc, &argv);
	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* the qemu guest exports TDB_BACKEND=kernel: tdbd's clients name
	 * its socket, tdb.ko's ask for TDBC_KERNEL */
	unsetenv(TDBC_BACKEND_ENV);
	if (opt.markers)
		printf("DURABLE-BEGIN\n");
	if (!(bin = find_tdbd())) {
		fprintf(stderr, "tdb-bench-durable: no tdbd (give --tdbd PATH "
			"or set $TDBD)\n");
		return opt.strict ? 77 : 1;
	}
	if (bin != tdbd_bin)
		snprintf(tdbd_bin, sizeof(tdbd_bin), "%s", bin);
	if (!realpath(tdbd_bin, base) || !runnable(base)) {
		fprintf(stderr, "tdb-bench-durable: cannot run %s\n", tdbd_bin);
		return opt.strict ? 77 : 1;
	}
	snprintf(tdbd_bin, sizeof(tdbd_bin), "%s", base);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	raise_nofile();

	if (!realpath(opt.dir, base))
		die("--dir %s: %s", opt.dir, strerror(errno));
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir),
			     "%s/tdb-bench-durable.XXXXXX", base) >= 80) {
		tmpdir[0] = 0;
		die("--dir %s is too long for the Unix sockets in it", base);
	}
	if (!mkdtemp(tmpdir)) {
		int e = errno;

		tmpdir[0] = 0;
		die("cannot make a directory under %s: %s", base, strerror(e));
	}
	if (describe_fs(tmpdir, fs, sizeof(fs)) && !opt.allow_tmpfs)
		die("%s is on %s: fsync costs nothing there; give --dir on a "
		    "disk (or --allow-tmpfs)", tmpdir, fs);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	samples = mmap(NULL, sizeof(*samples) * SAMPLE_BUDGET,
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		       0);
	gather = malloc(sizeof(*gather) * SAMPLE_BUDGET);
	if (sh == MAP_FAILED || samples == MAP_FAILED || !gather)
		die("out of memory for the workers' results");

	print_header();
	/* framed, "-" goes to a file printed at the end (its rows would
	 * come in the middle of the report) */
	if (opt.markers && opt.csv && !strcmp(opt.csv, "-"))
		opt.csv = CSV_TMP;
	if (opt.csv && !(csv = bench_csv_open(opt.csv, argc, argv)))
		die("--csv %s", opt.csv);
	cpu_sample(&c0);
	if (opt.do_puts)
		puts_phase();
	if (opt.do_recovery)
		recovery_phase();
	if (opt.do_ckpt)
		ckpt_phase();
	if (opt.do_restore)
		restore_phase();
	if (opt.do_memory)
		memory_phase();
	cpu_sample(&c1);
	o = cpu_others(&c0, &c1, &steal);
	printf("\nTotal %.0f s", now() - t0);
	if (o >= 0)
		printf("; other processes (and kernel threads: writeback, "
		       "the journal) used %.0f%%\nof the CPUs, the hypervisor "
		       "stole %.0f%%", o * 100, steal * 100);
	printf(".  %u anomal%s.\n", anomalies, anomalies == 1 ? "y" : "ies");
	{
		char huge[32];

		read_line("/proc/sys/vm/nr_hugepages", huge, sizeof(huge));
		printf("tdbd's tables were on %s (vm.nr_hugepages now %s)%s\n",
		       pages_seen == 1 ? "4 KiB pages" :
		       pages_seen == 2 ? "2 MiB hugepages" :
		       pages_seen == 3 ? "4 KiB pages in some starts, 2 MiB "
		       "hugepages in others" : "?", huge,
		       pages_seen == 3 ? ": the figures are not comparable" :
		       ".");
	}
	if (opt.do_puts)
		bench_csv_note(csv, "part 1 (puts): medians of %u run(s), %u "
			       "keys, %.1f s cells", opt.runs, opt.keys,
			       opt.secs);
	if (opt.do_restore)
		bench_csv_note(csv, "restore: medians of %u run(s) per size",
			       opt.rst_runs);
	bench_csv_note(csv, "%u anomalies", anomalies);
	rc = anomalies ? 3 : 0;
	if (bench_csv_close(csv, opt.csv))
		rc = 1;
	if (opt.markers && csv && !strcmp(opt.csv, CSV_TMP)) {
		FILE *f = fopen(CSV_TMP, "r");
		char line[1024];

		printf("DURABLE-CSV-BEGIN\n");
		while (f && fgets(line, sizeof(line), f))
			fputs(line, stdout);
		printf("DURABLE-CSV-END\n");
		if (f)
			fclose(f);
		unlink(CSV_TMP);
	}
	cleanup();
	if (opt.markers)
		printf("DURABLE-END\n");
	return rc;
}
