// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_dumpeq.c - tdb-dump of tdb.ko's tables equals tdb-dump of the
 * same data loaded into tdbd alone (the qemu guest; issue 15).  Needs
 * $TDB_KTEST_TDBD, $TDB_KTEST_DUMP and a tdb.ko with the supervisor
 * ioctls: skips (77) without any of them.
 *
 * One sequence of changes (load(): several tables with their own modes
 * and caps, thousands of records with binary keys and values, empty
 * and 1 MiB values, 4096-byte keys, overwrites, deletes, no-overwrite
 * puts refused, transactions committed and aborted, a table dropped, a
 * table dropped and made again) goes, call for call with the same
 * answers, into tdb.ko under a supervising tdbd (sync always) and into
 * a tdbd of its own (daemon mode: own data directory and socket).
 * tdb-dump --sort -a of both, in the default (bytevalue) and the print
 * form, must be the same bytes: --sort writes each table in key order
 * (a plain dump follows the table's hash, whose seed each table draws
 * at its creation, so two homes give two orders for the same data).
 * Then again after tdb.ko is reloaded and its tdbd restores the tables
 * from its WAL and checkpoint, and after the daemon-mode tdbd
 * restarts.  Then the WAL's tail (issue 29): both homes get more
 * changes (a hash and an ordered table made, records with deadlines,
 * keys deleted, tables made and dropped), the supervising tdbd is
 * SIGKILLed (no stop checkpoint), tdb.ko reloaded: its start applies
 * the tail to the checkpoint store and restores from the store; the
 * dumps and every deadline must be equal.  Last, tdb.ko reloaded with
 * too small a max_memory_mb: the start fails, its error naming the
 * table and the key refused; with room again it restores everything.
 *
 * It leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdb/client.h"
#include "tdb/kdev.h"
#include "ksup.h"

#define DIR         "/tmp/tdb-dumpeq"
#define KDATA       DIR "/kernel"       /* the supervisor's data dir */
#define DDATA       DIR "/daemon"       /* tdbd alone */
#define DSOCK       DIR "/tdbd.sock"
#define KLOG        DIR "/kernel.log"
#define DLOG        DIR "/daemon.log"
#define KO_ARGS     "log_ring_mb=8"     /* a 1 MiB value fits */
#define SMALL_MB    "14"                /* the rings, less than the tables */

#define FAIL(...) do { fprintf(stderr, "test_dumpeq: FAIL: " __VA_ARGS__); \
	fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static const char *dump;

/* tdbd supervising tdb.ko, and tdbd alone */
static struct ksup_tdbd kd = { .log = KLOG, .ready = KSUP_SUPERVISING,
			       .pid = -1 };
static struct ksup_tdbd dd = { .log = DLOG, .ready = "serving on " DSOCK,
			       .pid = -1 };

static void start(struct ksup_tdbd *d)
{
	const char *kav[] = { kd.path, "--backend", "kernel",
		"--data-dir", KDATA, "--sync", "always",
		"--config", "/dev/null", NULL };
	const char *dav[] = { dd.path, "--socket", DSOCK,
		"--data-dir", DDATA, "--sync", "always",
		"--config", "/dev/null", NULL };

	ksup_start(d, d == &kd ? kav : dav);
}

/* A connection to tdb.ko (/dev/tdb, rings) or to tdbd alone. */
static struct tdbc *conn(bool kernel)
{
	struct tdbc *c = NULL;
	char err[256];
	int e, i;

	setenv(TDBC_BACKEND_ENV, kernel ? "kernel" : "daemon", 1);
	if (kernel)
		return ksup_connect(0);
	for (i = 0; i < 600; i++) {
		e = tdbc_connect(&c, DSOCK, 0, err, sizeof(err));
		if (!e)
			return c;
		if (e != -ENOENT && e != -ECONNREFUSED)
			break;
		ksup_msleep(100);       /* the socket is not there yet */
	}
	FAIL("connect to tdbd at " DSOCK ": %s", err);
}

/* --- the load: the same calls, the same answers, in both homes --------- */

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void fill(unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
}

#define BIGVAL (1u << 20)

struct load {
	struct tdbc *c;
	const char *home;
	unsigned char k[4096], v[8192];
	unsigned char *big;
	unsigned int ops;
};

static struct tdbc_table *topen(struct load *l, const char *name)
{
	struct tdbc_table *t = NULL;

	CHECK(!tdbc_table_open(l->c, name, &t), "%s: open %s: %s", l->home,
	      name, tdbc_errmsg(l->c));
	return t;
}

static void create(struct load *l, const char *name, uint32_t mode,
		   uint32_t max_extents)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	if (mode)
		o.mode = mode;
	o.max_extents = max_extents;
	CHECK(!tdbc_table_create(l->c, name, &o), "%s: create %s: %s",
	      l->home, name, tdbc_errmsg(l->c));
}

/* A put whose answer must be want (0 or an errno). */
static void put(struct load *l, struct tdbc_table *t, struct tdbc_txn *x,
		const void *k, size_t kl, const void *v, size_t vl,
		unsigned int flags, int want)
{
	int e = tdbc_put(t, x, k, kl, v, vl, flags);

	CHECK(e == want, "%s: put #%u in %s (%zu-byte key, %zu-byte value): "
	      "%d (%s), want %d", l->home, l->ops, tdbc_table_name(t), kl, vl,
	      e, tdbc_errmsg(l->c), want);
	l->ops++;
}

static void del(struct load *l, struct tdbc_table *t, struct tdbc_txn *x,
		const void *k, size_t kl, int want)
{
	int e = tdbc_del(t, x, k, kl);

	CHECK(e == want, "%s: delete #%u in %s: %d (%s), want %d", l->home,
	      l->ops, tdbc_table_name(t), e, tdbc_errmsg(l->c), want);
	l->ops++;
}

/* key i of the text table: printable, some with spaces and '=' */
static size_t text_key(char *k, unsigned int i)
{
	return (size_t)sprintf(k, i % 11 ? "user:%05u" : "cfg = %u\t#", i);
}

static void load_text(struct load *l)
{
	struct tdbc_table *t;
	char k[64];
	unsigned int i;
	size_t vl;

	create(l, "eq_text", 0, 0);
	t = topen(l, "eq_text");
	for (i = 0; i < 2000; i++) {
		vl = rnd() % 120;               /* 0: empty values too */
		fill(l->v, vl);
		if (i % 3 == 0)                 /* some printable ones */
			for (size_t j = 0; j < vl; j++)
				l->v[j] = (unsigned char)(' ' + l->v[j] % 95);
		put(l, t, NULL, k, text_key(k, i), l->v, vl, 0, 0);
	}
	for (i = 0; i < 2000; i += 7)           /* deletes */
		del(l, t, NULL, k, text_key(k, i), 0);
	del(l, t, NULL, "absent", 6, -ENOENT);
	for (i = 1; i < 2000; i += 5) {         /* overwrites */
		vl = rnd() % 300;
		fill(l->v, vl);
		put(l, t, NULL, k, text_key(k, i), l->v, vl, 0, 0);
	}
	/* no-overwrite: refused on a present key, taken on a deleted one */
	put(l, t, NULL, k, text_key(k, 1), "x", 1, TDBC_NOOVERWRITE, -EEXIST);
	put(l, t, NULL, k, text_key(k, 7), "back", 4, TDBC_NOOVERWRITE, 0);
	tdbc_table_close(t);
}

/* binary keys (every byte value, NUL and newline too), a 4096-byte key,
 * values up to 8 KiB, and one of 1 MiB */
static void load_bin(struct load *l)
{
	struct tdbc_table *t;
	unsigned int i;
	size_t kl, vl;

	create(l, "eq_bin", 0640, 64);
	t = topen(l, "eq_bin");
	for (i = 0; i < 1500; i++) {
		kl = 1 + rnd() % 48;
		fill(l->k, kl);
		l->k[0] = (unsigned char)i;     /* distinct keys */
		l->k[kl > 1 ? 1 : 0] ^= (unsigned char)(i >> 8);
		vl = rnd() % 2 ? rnd() % 64 : rnd() % sizeof(l->v);
		fill(l->v, vl);
		put(l, t, NULL, l->k, kl, l->v, vl, 0, 0);
		if (i % 13 == 0)
			del(l, t, NULL, l->k, kl, 0);
	}
	memset(l->k, 0, 4096);
	put(l, t, NULL, l->k, 4096, "nul key", 7, 0, 0);
	memset(l->k, 0xff, 4096);
	put(l, t, NULL, l->k, 4096, "", 0, 0, 0);
	put(l, t, NULL, "\n", 1, "\n\n", 2, 0, 0);
	put(l, t, NULL, "big", 3, l->big, BIGVAL, 0, 0);
	tdbc_table_close(t);
}

/* Does load_txns commit its transaction i? */
static bool committed(unsigned int i)
{
	return i % 4 != 3 && i != 10;
}

/* transactions over two tables: every fourth aborted, one that fails
 * whole (a no-overwrite put of a present key) */
static void load_txns(struct load *l)
{
	struct tdbc_table *a, *b;
	struct tdbc_txn *x;
	char k[64];
	unsigned int i, j;
	size_t vl;
	int e;

	create(l, "eq_txn", 0644, 0);
	a = topen(l, "eq_txn");
	b = topen(l, "eq_text");
	for (i = 0; i < 60; i++) {
		CHECK(!tdbc_txn_begin(l->c, &x), "%s: begin: %s", l->home,
		      tdbc_errmsg(l->c));
		for (j = 0; j < 12; j++) {
			unsigned int m = i * 12 + j;    /* an eq_text key */

			snprintf(k, sizeof(k), "t%02u.%02u", i, j);
			vl = rnd() % 200;
			fill(l->v, vl);
			put(l, a, x, k, strlen(k), l->v, vl, 0, 0);
			/* present keys only (load_text deleted every 7th
			 * and put 7 back) */
			if (j % 4 == 3 && (m % 7 || m == 7))
				del(l, b, x, k, text_key(k, m), 0);
			if (j == 5 && i > 0 && committed(i - 1)) {
				snprintf(k, sizeof(k), "t%02u.%02u", i - 1, j);
				del(l, a, x, k, strlen(k), 0);
			}
		}
		if (i % 4 == 3) {
			e = tdbc_txn_abort(x);
		} else if (i == 10) {
			/* t09.00 is present: the whole commit fails */
			put(l, a, x, "t09.00", 6, "no", 2, TDBC_NOOVERWRITE,
			    0);
			e = tdbc_txn_commit(x);
			CHECK(e == -EEXIST, "%s: a failing commit: %d (%s)",
			      l->home, e, tdbc_errmsg(l->c));
			e = 0;
		} else {
			e = tdbc_txn_commit(x);
		}
		CHECK(!e, "%s: txn %u: %d (%s)", l->home, i, e,
		      tdbc_errmsg(l->c));
	}
	tdbc_table_close(a);
	tdbc_table_close(b);
}

/* a table dropped, and one dropped and made again (other content) */
static void load_drops(struct load *l)
{
	struct tdbc_table *t;
	char k[32];
	unsigned int i, round;

	for (round = 0; round < 2; round++) {
		create(l, "eq_again", round ? 0 : 0600, round ? 8 : 0);
		create(l, "eq_gone", 0, 0);
		t = topen(l, round ? "eq_again" : "eq_gone");
		for (i = 0; i < 300; i++) {
			snprintf(k, sizeof(k), "r%u-%u", round, i);
			put(l, t, NULL, k, strlen(k), k, strlen(k), 0, 0);
		}
		tdbc_table_close(t);
		CHECK(!tdbc_table_drop(l->c, "eq_gone"), "%s: drop: %s",
		      l->home, tdbc_errmsg(l->c));
		if (!round)
			CHECK(!tdbc_table_drop(l->c, "eq_again"),
			      "%s: drop: %s", l->home, tdbc_errmsg(l->c));
	}
}

/* A deadline far ahead (a year), the same instant in both homes: set
 * once in main(). */
static uint64_t FAR_AT;

static void create_ordered(struct load *l, const char *name)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK(!tdbc_table_create(l->c, name, &o), "%s: create %s: %s",
	      l->home, name, tdbc_errmsg(l->c));
}

static void put_at(struct load *l, struct tdbc_table *t, const void *k,
		   size_t kl, const void *v, size_t vl, uint64_t at)
{
	int e = tdbc_put_at(t, NULL, k, kl, v, vl, 0, 0, at);

	CHECK(!e, "%s: put #%u in %s with a deadline: %d (%s)", l->home,
	      l->ops, tdbc_table_name(t), e, tdbc_errmsg(l->c));
	l->ops++;
}

/*
 * The WAL's tail (issue 29): changes after the checkpoint that a
 * kernel-mode start applies to the checkpoint store before restoring
 * from it: a hash table and an ordered one made, with records with
 * deadlines, a table made and dropped, a table of load() dropped, keys
 * of eq_text deleted and overwritten.
 */
static void load_tail(bool kernel)
{
	struct load *l = calloc(1, sizeof(*l));
	struct tdbc_table *h, *o, *t;
	char k[64];
	unsigned int i;
	size_t vl;

	CHECK(l, "calloc");
	rng = 0x2545f4914f6cdd1dull;    /* the same sequence in both */
	l->c = conn(kernel);
	l->home = kernel ? "tdb.ko" : "tdbd";
	create(l, "tail_hash", 0, 0);
	create_ordered(l, "tail_ord");
	h = topen(l, "tail_hash");
	o = topen(l, "tail_ord");
	for (i = 0; i < 1500; i++) {
		size_t kl = (size_t)sprintf(k, "tail:%05u", (i * 7919u) % 1500);

		vl = rnd() % 200;
		fill(l->v, vl);
		if (i % 3 == 0)
			put_at(l, h, k, kl, l->v, vl, FAR_AT + i);
		else
			put(l, h, NULL, k, kl, l->v, vl, 0, 0);
		if (i % 5 == 0)
			put_at(l, o, k, kl, l->v, vl, FAR_AT + 2 * i);
		else
			put(l, o, NULL, k, kl, l->v, vl, 0, 0);
	}
	for (i = 0; i < 1500; i += 4) {         /* deletes in both */
		size_t kl = (size_t)sprintf(k, "tail:%05u", i);

		del(l, h, NULL, k, kl, 0);
		del(l, o, NULL, k, kl, 0);
	}
	tdbc_table_close(h);
	tdbc_table_close(o);
	t = topen(l, "eq_text");
	for (i = 1; i < 2000; i += 9) {         /* deletes, overwrites */
		int e = tdbc_del(t, NULL, k, text_key(k, i));

		CHECK(!e || e == -ENOENT, "%s: delete in eq_text: %d (%s)",
		      l->home, e, tdbc_errmsg(l->c));
		l->ops++;
	}
	for (i = 2; i < 2000; i += 13) {
		vl = rnd() % 50;
		fill(l->v, vl);
		put(l, t, NULL, k, text_key(k, i), l->v, vl, 0, 0);
	}
	tdbc_table_close(t);
	create(l, "tail_gone", 0, 0);           /* made, dropped */
	t = topen(l, "tail_gone");
	put(l, t, NULL, "x", 1, "y", 1, 0, 0);
	tdbc_table_close(t);
	CHECK(!tdbc_table_drop(l->c, "tail_gone"), "%s: drop: %s", l->home,
	      tdbc_errmsg(l->c));
	CHECK(!tdbc_table_drop(l->c, "eq_again"), "%s: drop eq_again: %s",
	      l->home, tdbc_errmsg(l->c));
	printf("test_dumpeq: %s: %u changes of the WAL's tail\n", l->home,
	       l->ops);
	tdbc_close(l->c);
	free(l);
}

/* Every key of the tail's tables has the same deadline in both homes
 * (tdb-dump does not write deadlines). */
static void deadlines_equal(const char *when)
{
	static const char *const tabs[] = { "tail_hash", "tail_ord" };
	struct tdbc *ck = conn(true), *cd = conn(false);
	unsigned int i, ti, with = 0;
	char k[64];

	for (ti = 0; ti < 2; ti++) {
		struct tdbc_table *a = NULL, *b = NULL;

		CHECK(!tdbc_table_open(ck, tabs[ti], &a) &&
		      !tdbc_table_open(cd, tabs[ti], &b), "%s: open %s",
		      when, tabs[ti]);
		for (i = 0; i < 1500; i++) {
			size_t kl = (size_t)sprintf(k, "tail:%05u", i);
			uint64_t da = 1, db = 2;
			int ea = tdbc_ttl(a, k, kl, &da, NULL);
			int eb = tdbc_ttl(b, k, kl, &db, NULL);

			CHECK(ea == eb && (ea || da == db), "%s: %s key %s: "
			      "tdb.ko %d deadline %llu, tdbd %d deadline %llu",
			      when, tabs[ti], k, ea, (unsigned long long)da, eb,
			      (unsigned long long)db);
			with += !ea && da;
		}
		tdbc_table_close(a);
		tdbc_table_close(b);
	}
	CHECK(with > 300, "%s: only %u keys with a deadline", when, with);
	printf("test_dumpeq: %s: deadlines the same in both homes (%u keys "
	       "with one)\n", when, with);
	tdbc_close(ck);
	tdbc_close(cd);
}

static void load(bool kernel)
{
	struct load *l = calloc(1, sizeof(*l));

	CHECK(l, "calloc");
	l->big = malloc(BIGVAL);
	CHECK(l->big, "malloc");
	rng = 0x9e3779b97f4a7c15ull;    /* the same sequence in both */
	fill(l->big, BIGVAL);
	l->c = conn(kernel);
	l->home = kernel ? "tdb.ko" : "tdbd";
	load_text(l);
	load_bin(l);
	load_txns(l);
	load_drops(l);
	printf("test_dumpeq: %s: %u changes loaded\n", l->home, l->ops);
	tdbc_close(l->c);
	free(l->big);
	free(l);
}

/* --- dumps ---------------------------------------------------------------- */

struct text {
	char *buf;
	size_t len;
	char **line;            /* into buf, NUL-terminated */
	size_t n;
};

static void slurp(const char *path, struct text *t)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0, i;
	char *p;

	CHECK(f, "%s: %s", path, strerror(errno));
	memset(t, 0, sizeof(*t));
	CHECK(fseek(f, 0, SEEK_END) == 0, "seek");
	t->len = (size_t)ftell(f);
	rewind(f);
	t->buf = malloc(t->len + 1);
	CHECK(t->buf && fread(t->buf, 1, t->len, f) == t->len, "read %s",
	      path);
	fclose(f);
	t->buf[t->len] = 0;
	CHECK(t->len && t->buf[t->len - 1] == '\n', "%s: no final newline",
	      path);
	for (p = t->buf, i = 0; p < t->buf + t->len; i++) {
		char *nl = strchr(p, '\n');

		if (t->n == cap) {
			cap = cap ? 2 * cap : 4096;
			t->line = realloc(t->line, cap * sizeof(*t->line));
			CHECK(t->line, "realloc");
		}
		*nl = 0;
		t->line[t->n++] = p;
		p = nl + 1;
	}
}

static void text_free(struct text *t)
{
	free(t->buf);
	free(t->line);
}

/* The records of a dump (item line pairs), checking that every block
 * ends in DATA=END after whole pairs. */
static size_t count_records(const struct text *t, const char *path)
{
	size_t i = 0, start, records = 0;

	while (i < t->n) {
		if (strcmp(t->line[i++], "HEADER=END"))
			continue;
		start = i;
		while (i < t->n && t->line[i][0] == ' ')
			i++;
		CHECK(i < t->n && !strcmp(t->line[i], "DATA=END") &&
		      !((i - start) % 2), "%s: line %zu: a block does not end "
		      "in DATA=END after key/value pairs", path, i + 1);
		records += (i - start) / 2;
	}
	return records;
}

/* tdb-dump --sort -a of one home (opts: "" or "-p") into path. */
static void run_dump(bool kernel, const char *opts, const char *path)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "TDB_BACKEND=%s %s -q --sort -a %s -f %s "
		 "%s%s",
		 kernel ? "kernel" : "daemon", dump, opts, path,
		 kernel ? "" : "-S ", kernel ? "" : DSOCK);
	ksup_sh(cmd);
}

/* Both homes' sorted dumps (the default form and -p) are the same
 * bytes; the first line that differs is shown. */
static void compare(const char *when)
{
	static const char *const forms[] = { "", "-p" };
	unsigned int f;

	for (f = 0; f < 2; f++) {
		struct text k, d;
		size_t i, nk;

		run_dump(true, forms[f], DIR "/kernel.dump");
		run_dump(false, forms[f], DIR "/daemon.dump");
		slurp(DIR "/kernel.dump", &k);
		slurp(DIR "/daemon.dump", &d);
		for (i = 0; i < k.n && i < d.n; i++) {
			if (strcmp(k.line[i], d.line[i])) {
				fprintf(stderr, "tdb.ko: %.200s\ntdbd:   "
					"%.200s\n", k.line[i], d.line[i]);
				FAIL("%s: tdb-dump --sort %s: line %zu differs",
				     when, forms[f], i + 1);
			}
		}
		CHECK(k.n == d.n, "%s: tdb-dump --sort %s: %zu lines of "
		      "tdb.ko's tables, %zu of tdbd's", when, forms[f], k.n,
		      d.n);
		/* the same lines, so the same bytes (slurp checked the final
		 * newline): said again in full */
		CHECK(k.len == d.len && !memcmp(k.buf, d.buf, k.len),
		      "%s: not the same bytes", when);
		nk = count_records(&k, "the dumps");
		CHECK(nk > 3000, "only %zu records dumped", nk);
		printf("test_dumpeq: %s: tdb-dump --sort -a %s: %zu records, "
		       "%zu bytes, the same in both homes\n", when,
		       f ? "-p" : "(bytevalue)", nk, k.len);
		text_free(&k);
		text_free(&d);
	}
}

/* A failed test leaves no tdbd behind (the supervising one would keep
 * tdb.ko from unloading for the tests after this one). */
static pid_t main_pid;

static void cleanup(void)
{
	struct ksup_tdbd *d[] = { &kd, &dd };
	unsigned int i;

	if (getpid() != main_pid)
		return;
	for (i = 0; i < 2; i++) {
		if (d[i]->pid <= 0)
			continue;
		kill(d[i]->pid, SIGKILL);
		waitpid(d[i]->pid, NULL, 0);
		d[i]->pid = -1;
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	atexit(cleanup);
	kd.path = dd.path = getenv("TDB_KTEST_TDBD");
	dump = getenv("TDB_KTEST_DUMP");
	if (!kd.path || !*kd.path || !dump || !*dump) {
		fprintf(stderr, "test_dumpeq: SKIP: no $TDB_KTEST_TDBD or "
			"$TDB_KTEST_DUMP\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_dumpeq: SKIP: tdb.ko has no supervisor "
			"ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		FAR_AT = ((uint64_t)ts.tv_sec + 365ull * 86400) * 1000;
	}
	system("rm -rf " DIR);
	CHECK(!mkdir(DIR, 0755), "mkdir " DIR ": %s", strerror(errno));
	ksup_reload(KO_ARGS);
	start(&kd);
	start(&dd);
	load(true);
	load(false);
	compare("loaded");

	/* tdb.ko's tables gone and restored by its tdbd */
	ksup_stop(&kd, SIGTERM);
	ksup_reload(KO_ARGS);
	start(&kd);
	CHECK(ksup_count_lines(KLOG, "restoring them") >= 2, "no restore");
	compare("tdb.ko reloaded, restored");

	/* tdbd alone restarted (its own recovery) */
	ksup_stop(&dd, SIGTERM);
	start(&dd);
	compare("tdbd restarted");

	/* The WAL's tail: changes after the checkpoint, then the
	 * supervisor killed (no checkpoint at its stop; the interval's is
	 * 5 minutes away): the next start applies the tail to the store
	 * and restores from the store (issue 29). */
	CHECK(ksup_count_lines(KLOG, "from the checkpoint store in") >= 1,
	      "the restore did not read the checkpoint store");
	load_tail(true);
	load_tail(false);
	compare("the WAL's tail loaded");
	ksup_stop(&kd, SIGKILL);
	ksup_reload(KO_ARGS);
	start(&kd);
	CHECK(ksup_count_lines(KLOG, "the WAL applied to the checkpoint "
			       "store: now at LSN") >= 1,
	      "the WAL's tail was not applied to the checkpoint store");
	CHECK(ksup_count_lines(KLOG, "from the checkpoint store in") >= 2,
	      "the restore after the tail did not read the checkpoint store");
	compare("killed with a WAL tail, tdb.ko reloaded, restored from the "
		"checkpoint store");
	deadlines_equal("restored from the checkpoint store");

	/* A record tdb.ko refuses (over its max_memory_mb) stops the
	 * start, the error naming the table and the key; the data
	 * directory is left as it was: a start with room restores it. */
	ksup_stop(&kd, SIGTERM);
	ksup_reload("log_ring_mb=1 max_memory_mb=" SMALL_MB);
	{
		char cmd[1024];
		int st;

		snprintf(cmd, sizeof(cmd), "timeout 300 %s --backend kernel "
			 "--data-dir " KDATA " --sync always --config /dev/null "
			 "> " DIR "/refused.log 2>&1", kd.path);
		st = system(cmd);
		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) &&
		      WEXITSTATUS(st) != 124, "tdbd started with tdb.ko's "
		      "max_memory_mb=" SMALL_MB " (status %#x)", st);
		ksup_sh("grep -h 'restoring the tables' " DIR "/refused.log");
		CHECK(ksup_count_lines(DIR "/refused.log", "restoring the "
				       "tables into tdb.ko from the checkpoint "
				       "store: table ") == 1 &&
		      ksup_count_lines(DIR "/refused.log", ", key \"") == 1 &&
		      ksup_count_lines(DIR "/refused.log",
				       "cannot allocate memory") == 1,
		      "the refused restore's error does not name the table, "
		      "the key and the memory that ran out");
	}
	ksup_reload(KO_ARGS);
	start(&kd);
	compare("restored after a refused restore");

	ksup_stop(&kd, SIGTERM);
	ksup_stop(&dd, SIGTERM);
	ksup_reload("");
	system("rm -rf " DIR);
	return 0;
}
