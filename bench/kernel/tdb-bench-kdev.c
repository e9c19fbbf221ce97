// SPDX-License-Identifier: GPL-2.0-only
/*
 * tdb-bench-kdev.c - tdb-bench-kdev: tdb.ko against tdbd through the same
 * client library, meant to run inside one qemu guest (run-bench.sh).
 *
 * One backend (default): the one libtdbclient picks from $TDB_BACKEND
 * ("kernel": tdb.ko through /dev/tdb; "daemon": tdbd at $TDB_SOCKET).
 * It creates a table, loads --keys keys (16 B "key%013u", 100 B values;
 * untimed, async puts), then times --ops operations of each case:
 *   get        blocking tdbc_get, one at a time, over the rings
 *   put        blocking tdbc_put (overwrites), one at a time
 *   aput       tdbc_submit of --batch puts, tdbc_reap of them, repeated
 *   aget       the same with gets
 *   scan       one full scan (tdbc_scan_open/next); records/s
 *   get-norings  the gets of "get" on a TDBC_NO_RINGS connection
 *                (generic netlink for tdb.ko, the Unix socket for tdbd)
 * and prints ops/s per case: the median over --runs runs, and each run.
 * Keys are drawn uniformly at random, the same sequence for every run
 * and backend.  Every answer is checked (a get returns the key's value,
 * whose first 16 bytes are its key); a wrong one stops the benchmark.
 *
 * --compare --tdbd PATH: both backends in this one process: tdb.ko, and
 * a tdbd started here in the foreground (--sync none, data and socket in
 * a tmpfs directory, --dir, default /dev/shm/tdb-bench-kdev) with
 * TDB_SOCKET pointing at its socket.  Each run times every case on both,
 * the backend that goes first alternating between runs (so slow drift of
 * the machine does not favour one).  Prints per case the medians, their
 * ratio kernel/tdbd and the range of the per-run ratios.  tdbd is stopped
 * and its directory removed at the end (run-qemu.sh checks the guest's
 * memory afterwards).
 *
 * Options come from the command line or, when there is none (run-qemu.sh
 * runs guest binaries without arguments), from $TDB_BENCH_KDEV_ARGS,
 * split at commas (run-qemu.sh's --env cannot carry spaces).
 * The report sits between the lines KDEV-BEGIN and KDEV-END.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include <tdb/client.h>

#include "../common/csv.h"
#include "../common/machine.h"

#define KLEN      16
#define VLEN      100
#define MAX_RUNS  101
#define MAX_BATCH 1024
#define TABLE     "kdevbench"

enum { C_GET, C_PUT, C_APUT, C_AGET, C_SCAN, C_GETNR, NCASES };
static const char *const case_name[NCASES] = {
	"get", "put", "aput", "aget", "scan", "get-norings",
};
static const char *const case_what[NCASES] = {
	"blocking gets over the rings",
	"blocking puts (overwrites) over the rings",
	"async puts, batches of --batch (submit, reap)",
	"async gets, batches of --batch (submit, reap)",
	"full scan, records/s",
	"blocking gets, TDBC_NO_RINGS (netlink / socket)",
};

static struct {
	unsigned long keys, ops;
	unsigned int runs, batch;
	bool compare;
	const char *tdbd, *dir;
	const char *csv;        /* --csv FILE ("-": stdout, between markers) */
} opt = { 100000, 20000, 5, 32, false, NULL, "/dev/shm/tdb-bench-kdev",
	  NULL };

static pid_t tdbd_pid;
static char tdbd_log[512], tdbd_sock[512], tdbd_data[512];

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "tdb-bench-kdev: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (tdbd_pid > 0) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "tail -n 20 '%s' >&2", tdbd_log);
		if (system(cmd) < 0)
			(void)0;
		kill(tdbd_pid, SIGKILL);
	}
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- keys and values ------------------------------------------------------ */

static uint32_t *seq;   /* opt.ops key indexes, the same for every case */

static void make_key(char *k, unsigned long i)
{
	char tmp[KLEN + 1];

	snprintf(tmp, sizeof(tmp), "key%013lu", i);
	memcpy(k, tmp, KLEN);
}

/* The value of key i, generation g: the key, then g's byte. */
static void make_val(char *v, unsigned long i, unsigned int g)
{
	make_key(v, i);
	memset(v + KLEN, 'a' + g % 26, VLEN - KLEN);
}

static void check_val(const void *v, size_t vlen, unsigned long i,
		      const char *what)
{
	char k[KLEN];

	make_key(k, i);
	if (vlen != VLEN || memcmp(v, k, KLEN))
		die("%s: key %lu gave a wrong value (%zu bytes)", what, i,
		    vlen);
}

static void make_seq(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	seq = malloc(opt.ops * sizeof(*seq));
	if (!seq)
		die("out of memory");
	for (unsigned long i = 0; i < opt.ops; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		seq[i] = x % opt.keys;
	}
}

/* --- one backend ------------------------------------------------------------ */

struct backend {
	const char *name;       /* "kernel" or "daemon" */
	const char *label;      /* "tdb.ko" or "tdbd" */
	struct tdbc *c, *cn;    /* rings; TDBC_NO_RINGS */
	struct tdbc_table *t, *tn;
	unsigned int gen;       /* generation of the values */
	double res[NCASES][MAX_RUNS];
};

static struct tdbc *bconnect(struct backend *b, unsigned int flags)
{
	char msg[256];
	struct tdbc *c;
	int err;

	/* The library reads TDB_BACKEND (and TDB_SOCKET) at connect. */
	if (setenv(TDBC_BACKEND_ENV, b->name, 1))
		die("setenv: %s", strerror(errno));
	err = tdbc_connect(&c, NULL, flags, msg, sizeof(msg));
	if (err)
		die("%s: tdbc_connect%s: %s", b->label,
		    flags & TDBC_NO_RINGS ? " (TDBC_NO_RINGS)" : "", msg);
	if (!(flags & TDBC_NO_RINGS) && !tdbc_uses_rings(c))
		die("%s: the connection has no rings", b->label);
	return c;
}

/* n async requests of one kind for keys idx[0..n), batches of opt.batch,
 * each batch submitted and reaped whole before the next. */
static void async_ops(struct backend *b, enum tdbc_op op, const uint32_t *idx,
		      unsigned long n, const char *what)
{
	static struct tdbc_req reqs[MAX_BATCH];
	static struct tdbc_cqe cqes[MAX_BATCH];
	static char keys[MAX_BATCH][KLEN], vals[MAX_BATCH][VLEN];

	for (unsigned long done = 0; done < n;) {
		unsigned int m = opt.batch, sent = 0, got = 0;

		if (n - done < m)
			m = n - done;
		for (unsigned int j = 0; j < m; j++) {
			unsigned long i = idx ? idx[done + j] : done + j;

			make_key(keys[j], i);
			reqs[j] = (struct tdbc_req){
				.op = op, .table = b->t, .key = keys[j],
				.klen = KLEN, .user = i,
			};
			if (op == TDBC_OP_PUT) {
				make_val(vals[j], i, b->gen);
				reqs[j].val = vals[j];
				reqs[j].vlen = VLEN;
			}
		}
		while (got < m) {
			if (sent < m) {
				int r = tdbc_submit(b->c, reqs + sent,
						    m - sent);

				if (r < 0)
					die("%s: %s: tdbc_submit: %s (%s)",
					    b->label, what, tdbc_strerror(r),
					    tdbc_errmsg(b->c));
				sent += r;
			}
			/* all sent: wait for all; else for one, to make
			 * room (none in flight: do not wait) */
			unsigned int min = sent == got ? 0 :
					   sent < m ? 1 : sent - got;
			int r = tdbc_reap(b->c, cqes, m, min, -1);

			if (r < 0)
				die("%s: %s: tdbc_reap: %s", b->label, what,
				    tdbc_strerror(r));
			for (int j = 0; j < r; j++) {
				if (cqes[j].res)
					die("%s: %s: key %" PRIu64 ": %s",
					    b->label, what, cqes[j].user,
					    tdbc_strerror(cqes[j].res));
				if (op == TDBC_OP_GET)
					check_val(cqes[j].val, cqes[j].vlen,
						  cqes[j].user, what);
			}
			got += r;
		}
		done += m;
	}
}

static void setup(struct backend *b)
{
	int err;

	b->c = bconnect(b, 0);
	b->cn = bconnect(b, TDBC_NO_RINGS);
	err = tdbc_table_drop(b->c, TABLE);
	if (err && err != -ENOENT)
		die("%s: drop %s: %s", b->label, TABLE, tdbc_errmsg(b->c));
	err = tdbc_table_create(b->c, TABLE, NULL);
	if (err)
		die("%s: create %s: %s (%s)", b->label, TABLE,
		    tdbc_strerror(err), tdbc_errmsg(b->c));
	if ((err = tdbc_table_open(b->c, TABLE, &b->t)) ||
	    (err = tdbc_table_open(b->cn, TABLE, &b->tn)))
		die("%s: open %s: %s", b->label, TABLE, tdbc_strerror(err));
	async_ops(b, TDBC_OP_PUT, NULL, opt.keys, "load");
}

static void teardown(struct backend *b)
{
	int err;

	tdbc_table_close(b->tn);
	tdbc_table_close(b->t);
	err = tdbc_table_drop(b->c, TABLE);
	if (err)
		die("%s: drop %s: %s", b->label, TABLE, tdbc_strerror(err));
	tdbc_close(b->cn);
	tdbc_close(b->c);
}

static double run_case(struct backend *b, int cs)
{
	char k[KLEN], v[VLEN + 28];
	unsigned long n = opt.ops;
	double t0 = now(), t;

	switch (cs) {
	case C_GET:
	case C_GETNR: {
		struct tdbc_table *tbl = cs == C_GET ? b->t : b->tn;

		for (unsigned long i = 0; i < n; i++) {
			long r;

			make_key(k, seq[i]);
			r = tdbc_get(tbl, NULL, k, KLEN, v, sizeof(v), NULL);
			if (r < 0)
				die("%s: %s: key %u: %s", b->label,
				    case_name[cs], seq[i], tdbc_strerror(r));
			check_val(v, r, seq[i], case_name[cs]);
		}
		break;
	}
	case C_PUT:
		b->gen++;
		for (unsigned long i = 0; i < n; i++) {
			int r;

			make_key(k, seq[i]);
			make_val(v, seq[i], b->gen);
			r = tdbc_put(b->t, NULL, k, KLEN, v, VLEN, 0);
			if (r)
				die("%s: put: key %u: %s", b->label, seq[i],
				    tdbc_strerror(r));
		}
		break;
	case C_APUT:
		b->gen++;
		async_ops(b, TDBC_OP_PUT, seq, n, "aput");
		break;
	case C_AGET:
		async_ops(b, TDBC_OP_GET, seq, n, "aget");
		break;
	case C_SCAN: {
		struct tdbc_scan *s;
		const void *key, *val;
		size_t klen, vlen;
		int r;

		n = 0;
		r = tdbc_scan_open(b->t, NULL, 0, 0, &s);
		if (r)
			die("%s: scan_open: %s", b->label, tdbc_strerror(r));
		while ((r = tdbc_scan_next(s, &key, &klen, &val, &vlen)) > 0) {
			if (klen != KLEN || vlen != VLEN ||
			    memcmp(key, val, KLEN))
				die("%s: scan: a wrong record", b->label);
			n++;
		}
		tdbc_scan_close(s);
		if (r < 0)
			die("%s: scan_next: %s", b->label, tdbc_strerror(r));
		if (n != opt.keys)
			die("%s: scan returned %lu records, not %lu",
			    b->label, n, opt.keys);
		break;
	}
	}
	t = now() - t0;
	return n / (t > 0 ? t : 1e-9);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned int n)
{
	double s[MAX_RUNS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_d);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* --- tdbd ---------------------------------------------------------------- */

static void tdbd_start(void)
{
	const char *argv[16];
	unsigned int a = 0;
	char msg[256] = "";
	struct tdbc *c;
	double t0;
	int fd, st;

	if (mkdir(opt.dir, 0700) && errno != EEXIST)
		die("mkdir %s: %s", opt.dir, strerror(errno));
	snprintf(tdbd_data, sizeof(tdbd_data), "%s/data", opt.dir);
	snprintf(tdbd_sock, sizeof(tdbd_sock), "%s/tdbd.sock", opt.dir);
	snprintf(tdbd_log, sizeof(tdbd_log), "%s/tdbd.log", opt.dir);
	if (strlen(tdbd_sock) >= 108)
		die("--dir %s is too long for a Unix socket path", opt.dir);
	unlink(tdbd_sock);
	argv[a++] = opt.tdbd;
	argv[a++] = "--config";
	argv[a++] = "/dev/null";
	argv[a++] = "--socket";
	argv[a++] = tdbd_sock;
	argv[a++] = "--data-dir";
	argv[a++] = tdbd_data;
	argv[a++] = "--sync";
	argv[a++] = "none";
	argv[a++] = "--log-level";
	argv[a++] = "warning";
	argv[a] = NULL;
	fd = open(tdbd_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create %s: %s", tdbd_log, strerror(errno));
	fflush(stdout);
	fflush(stderr);
	tdbd_pid = fork();
	if (tdbd_pid < 0)
		die("fork: %s", strerror(errno));
	if (tdbd_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	if (setenv(TDBC_SOCKET_ENV, tdbd_sock, 1) ||
	    setenv(TDBC_BACKEND_ENV, "daemon", 1))
		die("setenv: %s", strerror(errno));
	/* Wait until the socket accepts (tdbd runs in the foreground). */
	for (t0 = now();; usleep(10000)) {
		if (waitpid(tdbd_pid, &st, WNOHANG) == tdbd_pid) {
			tdbd_pid = 0;
			die("tdbd exited while starting (status %#x); log %s",
			    st, tdbd_log);
		}
		if (!tdbc_connect(&c, NULL, 0, msg, sizeof(msg))) {
			tdbc_close(c);
			return;
		}
		if (now() - t0 > 120)
			die("tdbd did not accept on %s in 120 s: %s",
			    tdbd_sock, msg);
	}
}

static void tdbd_stop(void)
{
	char cmd[600];
	int st;

	kill(tdbd_pid, SIGTERM);
	while (waitpid(tdbd_pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid tdbd: %s", strerror(errno));
	tdbd_pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("tdbd ended badly at SIGTERM (status %#x); log %s", st,
		    tdbd_log);
	/* The guest's tmpfs memory is counted by run-qemu.sh. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", opt.dir);
	if (system(cmd))
		die("could not remove %s", opt.dir);
}

/* --- reports --------------------------------------------------------------- */

static void header(void)
{
	char cpu[256];

	cpu_model(cpu, sizeof(cpu));
	printf("KDEV-BEGIN\n");
	printf("tdb-bench-kdev: %lu keys (%d B keys, %d B values), %lu ops "
	       "per case, batch %u, %u runs; medians of ops/s\n", opt.keys,
	       KLEN, VLEN, opt.ops, opt.batch, opt.runs);
	printf("cpu: %s, %ld online\n", cpu, sysconf(_SC_NPROCESSORS_ONLN));
	for (int cs = 0; cs < NCASES; cs++)
		printf("  %-12s %s\n", case_name[cs], case_what[cs]);
}

static void report_one(struct backend *b)
{
	printf("\nbackend %s (TDB_BACKEND=%s)\n", b->label, b->name);
	printf("%-12s %12s   runs\n", "case", "ops/s");
	for (int cs = 0; cs < NCASES; cs++) {
		printf("%-12s %12.0f  ", case_name[cs],
		       median(b->res[cs], opt.runs));
		for (unsigned int r = 0; r < opt.runs; r++)
			printf(" %.0f", b->res[cs][r]);
		printf("\n");
	}
}

static void report_compare(struct backend *k, struct backend *d)
{
	printf("\n%-12s %12s %12s %8s   %s\n", "case", "tdb.ko ops/s",
	       "tdbd ops/s", "ratio", "per-run ratios (min..max)");
	for (int cs = 0; cs < NCASES; cs++) {
		double mk = median(k->res[cs], opt.runs);
		double md = median(d->res[cs], opt.runs);
		double lo = 1e300, hi = 0;

		for (unsigned int r = 0; r < opt.runs; r++) {
			double x = k->res[cs][r] / d->res[cs][r];

			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		printf("%-12s %12.0f %12.0f %8.2f   %.2f..%.2f\n",
		       case_name[cs], mk, md, mk / md, lo, hi);
	}
	report_one(k);
	report_one(d);
}

/* --csv, --compare only: a row per case and backend, tdb.ko's with its
 * ratio to tdbd.  "-" writes to stdout between KDEV-CSV-BEGIN and
 * KDEV-CSV-END lines, which run-bench.sh --csv cuts from the serial log. */
static int write_csv(struct backend *k, struct backend *d, int argc,
		     char **argv)
{
	bool out = !strcmp(opt.csv, "-");
	FILE *f;
	char param[32];

	if (out)
		printf("KDEV-CSV-BEGIN\n");
	f = bench_csv_open(opt.csv, argc, argv);
	if (!f)
		return -1;
	snprintf(param, sizeof(param), "batch %u", opt.batch);
	for (int cs = 0; cs < NCASES; cs++) {
		double mk = median(k->res[cs], opt.runs);
		double md = median(d->res[cs], opt.runs);
		const char *unit = cs == C_SCAN ? "records/s" : "ops/s";

		bench_csv_row(f, "kernel", "tdb.ko", "tdbd", case_name[cs],
			      param, mk, unit, mk / md);
		bench_csv_row(f, "kernel", "tdbd", NULL, case_name[cs],
			      param, md, unit, -1);
	}
	bench_csv_note(f, "medians of %u run(s), %lu keys, %lu ops a case",
		       opt.runs, opt.keys, opt.ops);
	if (bench_csv_close(f, opt.csv))
		return -1;
	if (out)
		printf("KDEV-CSV-END\n");
	return 0;
}

/* --- options ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: tdb-bench-kdev [--keys N] [--ops N] [--runs R] [--batch B]\n"
"                      [--compare --tdbd PATH [--dir DIR] [--csv FILE]]\n"
"Times gets, puts, async puts/gets, a scan and no-rings gets against the\n"
"backend $TDB_BACKEND names (kernel or daemon), or with --compare against\n"
"tdb.ko and a tdbd started here.  Defaults: --keys 100000 --ops 20000\n"
"--runs 5 --batch 32 --dir /dev/shm/tdb-bench-kdev.  Without arguments,\n"
"reads them from $TDB_BENCH_KDEV_ARGS, split at commas.  --csv FILE\n"
"also writes the --compare figures as CSV (bench/common/csv.h); FILE -:\n"
"on stdout between KDEV-CSV-BEGIN and KDEV-CSV-END lines.\n");
}

static unsigned long num(const char *s, const char *name, unsigned long lo,
			 unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("%s must be a number in %lu..%lu, not \"%s\"", name, lo,
		    hi, s);
	return v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "keys", 1, NULL, 'k' }, { "ops", 1, NULL, 'o' },
		{ "runs", 1, NULL, 'r' }, { "batch", 1, NULL, 'b' },
		{ "compare", 0, NULL, 'c' }, { "tdbd", 1, NULL, 't' },
		{ "dir", 1, NULL, 'd' }, { "csv", 1, NULL, 'C' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'k': opt.keys = num(optarg, "--keys", 1, 100000000); break;
		case 'o': opt.ops = num(optarg, "--ops", 1, 100000000); break;
		case 'r': opt.runs = num(optarg, "--runs", 1, MAX_RUNS); break;
		case 'b': opt.batch = num(optarg, "--batch", 1, MAX_BATCH);
			break;
		case 'c': opt.compare = true; break;
		case 't': opt.tdbd = optarg; break;
		case 'd': opt.dir = optarg; break;
		case 'C': opt.csv = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument \"%s\"", argv[optind]);
	if (opt.compare && !opt.tdbd)
		die("--compare needs --tdbd PATH (the tdbd to start)");
	if (!opt.compare && opt.tdbd)
		die("--tdbd is for --compare");
	if (!opt.compare && opt.csv)
		die("--csv is for --compare");
}

int main(int argc, char **argv)
{
	static struct backend k = { .name = "kernel", .label = "tdb.ko" };
	static struct backend d = { .name = "daemon", .label = "tdbd" };
	const char *env = getenv("TDB_BENCH_KDEV_ARGS");
	char *eargv[64];

	if (argc == 1 && env && *env) {
		char *s = strdup(env), *tok, *save = NULL;
		int n = 0;

		if (!s)
			die("out of memory");
		eargv[n++] = argv[0];
		for (tok = strtok_r(s, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (n == 63)
				die("too many options in TDB_BENCH_KDEV_ARGS");
			eargv[n++] = tok;
		}
		eargv[n] = NULL;
		argc = n;
		argv = eargv;
	}
	parse(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	make_seq();

	if (!opt.compare) {
		const char *be = getenv(TDBC_BACKEND_ENV);
		struct backend *b = be && !strcmp(be, "daemon") ? &d : &k;

		if (!be || (strcmp(be, "kernel") && strcmp(be, "daemon")))
			die("set TDB_BACKEND to kernel or daemon (or use "
			    "--compare)");
		header();
		setup(b);
		for (unsigned int r = 0; r < opt.runs; r++)
			for (int cs = 0; cs < NCASES; cs++)
				b->res[cs][r] = run_case(b, cs);
		teardown(b);
		report_one(b);
		printf("KDEV-END\n");
		return 0;
	}

	header();
	printf("tdbd: %s --config /dev/null --socket %s/tdbd.sock "
	       "--data-dir %s/data --sync none --log-level warning\n",
	       opt.tdbd, opt.dir, opt.dir);
	tdbd_start();
	setup(&k);
	setup(&d);
	for (unsigned int r = 0; r < opt.runs; r++) {
		/* odd runs: tdbd first */
		struct backend *first = r % 2 ? &d : &k;
		struct backend *second = r % 2 ? &k : &d;

		for (int cs = 0; cs < NCASES; cs++) {
			first->res[cs][r] = run_case(first, cs);
			second->res[cs][r] = run_case(second, cs);
		}
		printf("run %u/%u done (%s first)\n", r + 1, opt.runs,
		       first->label);
	}
	teardown(&k);
	teardown(&d);
	tdbd_stop();
	report_compare(&k, &d);
	if (opt.csv && write_csv(&k, &d, argc, argv))
		die("--csv %s: cannot write it", opt.csv);
	printf("KDEV-END\n");
	return 0;
}
