// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_crash.c - crash torture: tdbd SIGKILLed at random moments, over
 * and over, on one data directory; nothing it acknowledged may be lost
 * and no transaction may come back half-applied.  Two parts
 * (TDB_ITEST_ONLY=undone or torture runs one):
 *
 * undone: transactions that fail (tdbd applies and undoes them) while
 * checkpoints run, then SIGKILL and restart: no checkpoint may keep what
 * they did (see undone() below).
 *
 * torture:
 * tdbd runs with --sync always (or $TDB_CRASH_SYNC: test
 * tdbd-crash-none), --checkpoint-wal-size 1M and
 * --checkpoint-interval 1s, so checkpoints come often and kills land in
 * them too.  Four writer processes (two over rings, two socket-only)
 * each own NKEYS keys of table "crash" and loop: put a key, delete one,
 * or commit a transaction putting 2-4 keys with one generation tag;
 * now and then a transaction that must fail (-EEXIST: a no-overwrite
 * put of a present key after puts of others), which tdbd applies and
 * undoes, and of which nothing may ever be seen, not even after a
 * restart (a checkpoint must not keep it).
 * A value names its writer, key and generation and its bytes follow
 * from them, so a read value is checked byte for byte.  After every
 * acknowledgement (the call returned 0) the writer appends a line to its
 * side file (write(2) before the next call).  A call that fails because
 * tdbd died is not recorded: it is the writer's one change in flight,
 * whose outcome is unknown.
 *
 * After every restart each writer reconnects and reads all its keys:
 * every key must hold exactly its last acknowledged state, except the
 * keys of the change in flight, which may hold the old or the new
 * state -- all of them the same one (a transaction wholly there or
 * wholly absent).  What it finds settles the change in flight for good
 * (the recovered state is what the files hold; later recoveries must
 * agree); if it was applied the writer records it in its side file.
 *
 * The parent meanwhile runs the cycles: start tdbd on the data
 * directory, kill it with SIGKILL
 *  - after it is ready, 0-300 ms later (most cycles),
 *  - right after it is ready, 0-10 ms (the checkpoint that follows a
 *    recovery runs then),
 *  - before it is ready: 0..T ms after exec, T the time it took to get
 *    ready lately (in recovery, while loading the checkpoint or
 *    replaying the WAL).
 * It counts the kills that landed in recovery (tdbd had one thread --
 * the WAL flusher starts when recovery ends -- and its log said
 * "recovering" and not "serving") and in a checkpoint (the checkpoint
 * thread was not idle in /proc when sampled just before the kill, or
 * the checkpoint that follows a recovery had not logged its end).
 *
 * At the end: stop the writers (each reconnects and verifies once more
 * first), SIGTERM tdbd (exit 0, the last checkpoint), check the whole
 * log (no error line; warnings only "torn tail" and the like), start it
 * again (nothing to replay after a clean stop) and verify every key of
 * every writer against its side file, then stop it again.
 *
 * Cycles: 500 x TDB_ITEST_SCALE (or $TDB_CRASH_CYCLES), at least 50,
 * and no new one after 30 s (60 s under the sanitizers) once 50 are
 * done: CI's share.  A cycle takes ~0.12 s, so the test takes about
 * half a minute; a torture run by hand sets $TDB_CRASH_CYCLES and
 * $TDB_CRASH_SECONDS (the cap) higher.  TDB_ITEST_SEED=n repeats
 * a run's random choices (the parent's; the timing is what it is).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NWRITERS  4
#define NKEYS     48
#define TXN_MAX   4
#define VAL_MAX   2048
#define TABLE     "crash"
#define WORKERS   2
#define WORKERS_S "2"

/* --- values --------------------------------------------------------------- */

static int key_name(char *buf, size_t size, int w, unsigned int k)
{
	return snprintf(buf, size, "w%d/key%02u", w, k);
}

/* The value of key k of writer w at generation g: 48..1547 bytes, all
 * following from (w, k, g); the last 16 are a hash of the rest. */
static size_t make_val(char *buf, int w, unsigned int k, uint64_t g)
{
	uint64_t id[3] = { (uint64_t)w, k, g };
	uint64_t h = h_fnv(0, id, sizeof(id)), s = h | 1;
	size_t len = 48 + h % 1500, i;
	int n;

	n = snprintf(buf, 64, "w%d k%u g%llu n%zu|", w, k,
		     (unsigned long long)g, len);
	for (i = (size_t)n; i < len - 16; i++)
		buf[i] = (char)('a' + h_rand(&s) % 26);
	snprintf(buf + len - 16, 17, "%016llx",
		 (unsigned long long)h_fnv(0, buf, len - 16));
	return len;
}

/* A key's state: absent, or present with the value of generation gen. */
struct kst {
	bool present;
	uint64_t gen;
};

static bool kst_eq(struct kst a, struct kst b)
{
	return a.present == b.present && (!a.present || a.gen == b.gen);
}

static const char *kst_str(struct kst s, char *buf, size_t size)
{
	if (!s.present)
		snprintf(buf, size, "absent");
	else
		snprintf(buf, size, "g%llu", (unsigned long long)s.gen);
	return buf;
}

/*
 * Read key k of writer w: 0 and *out, or the call's negative errno (a
 * dead connection).  A value that is not exactly one make_val() gives
 * fails the check (who: for the message).
 */
static int read_key(struct tdbc_table *t, int w, unsigned int k,
		    struct kst *out, const char *who)
{
	char key[32], got[VAL_MAX], want[VAL_MAX];
	unsigned long long g;
	int kl = key_name(key, sizeof(key), w, k), ww;
	unsigned int kk;
	long n;

	n = tdbc_get(t, NULL, key, (size_t)kl, got, sizeof(got) - 1, NULL);
	if (n == -ENOENT) {
		out->present = false;
		out->gen = 0;
		return 0;
	}
	if (n < 0)
		return (int)n;
	got[n] = 0;
	CHECK(sscanf(got, "w%d k%u g%llu", &ww, &kk, &g) == 3 && ww == w &&
	      kk == k, "%s: key %s holds a value of someone else: %.60s", who,
	      key, got);
	CHECK(make_val(want, w, k, g) == (size_t)n &&
	      !memcmp(want, got, (size_t)n), "%s: key %s: the value of g%llu "
	      "is damaged (%ld bytes): %.60s", who, key, g, n, got);
	out->present = true;
	out->gen = g;
	return 0;
}

/* --- the writers ---------------------------------------------------------- */

struct wstat {
	uint64_t acks, puts, dels, txns;
	uint64_t failed_txns;   /* refused (EEXIST) as meant */
	uint64_t refused;       /* ENOMEM: see one_change() */
	uint64_t passes;        /* verification passes completed */
	uint64_t checks;        /* keys checked */
	uint64_t applied, lost; /* changes in flight, settled */
	uint64_t connects;
	uint64_t max_reconnect_ms;
};

struct shared {
	int stop;               /* atomic: the parent says finish */
	struct wstat w[NWRITERS];
};

enum fl_kind { FL_NONE, FL_PUT, FL_DEL, FL_TXN };

/* The change whose answer never came. */
struct inflight {
	enum fl_kind kind;
	unsigned int nk;
	unsigned int keys[TXN_MAX];
	uint64_t gen;
	bool settled, applied;  /* settled: by the first key read back */
	unsigned int first_key; /* the key that settled it */
};

struct writer {
	int id;
	const char *sock;
	unsigned int flags;
	struct tdbc *c;
	struct tdbc_table *t;
	struct kst model[NKEYS];
	struct inflight fl;
	uint64_t gen, rnd;
	int side;
	struct wstat *st;
	char who[32];
};

static bool dead_conn(int err)
{
	return err == -EPIPE || err == -ECONNRESET;
}

static void side_write(struct writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void side_write(struct writer *w, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	CHECK(n > 0 && (size_t)n < sizeof(line) &&
	      write(w->side, line, (size_t)n) == n, "%s: side file: %s",
	      w->who, strerror(errno));
}

/* The change fl is known to be applied (or acknowledged): model and
 * side file follow it. */
static void record(struct writer *w, const struct inflight *fl)
{
	unsigned int i;

	switch (fl->kind) {
	case FL_PUT:
		w->model[fl->keys[0]] = (struct kst){ true, fl->gen };
		side_write(w, "P %u %llu\n", fl->keys[0],
			   (unsigned long long)fl->gen);
		break;
	case FL_DEL:
		w->model[fl->keys[0]] = (struct kst){ false, 0 };
		side_write(w, "D %u\n", fl->keys[0]);
		break;
	case FL_TXN: {
		char line[96];
		int n;

		n = snprintf(line, sizeof(line), "T %llu %u",
			     (unsigned long long)fl->gen, fl->nk);
		for (i = 0; i < fl->nk; i++) {
			w->model[fl->keys[i]] = (struct kst){ true, fl->gen };
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %u", fl->keys[i]);
		}
		side_write(w, "%s\n", line);
		break;
	}
	case FL_NONE:
		break;
	}
}

static void drop_conn(struct writer *w)
{
	if (w->t)
		tdbc_table_close(w->t);
	if (w->c)
		tdbc_close(w->c);
	w->t = NULL;
	w->c = NULL;
}

/* Connect and open the table, retrying while tdbd is away (up to 60 s). */
static void reconnect(struct writer *w)
{
	uint64_t t0 = h_now_ms(), dt;
	char msg[256];
	int err;

	drop_conn(w);
	for (;;) {
		err = tdbc_connect(&w->c, w->sock, w->flags, msg, sizeof(msg));
		if (!err) {
			err = tdbc_table_open(w->c, TABLE, &w->t);
			if (!err)
				break;
			CHECK(dead_conn(err), "%s: open %s: %s (%s)", w->who,
			      TABLE, h_errname(err), tdbc_errmsg(w->c));
			drop_conn(w);
		}
		CHECK(h_now_ms() - t0 < 60000, "%s: no tdbd to connect to "
		      "for 60 s: %s (%s)", w->who, h_errname(err), msg);
		h_sleep_ms(2);
	}
	dt = h_now_ms() - t0;
	if (dt > w->st->max_reconnect_ms)
		w->st->max_reconnect_ms = dt;
	w->st->connects++;
}

static bool in_flight(const struct inflight *fl, unsigned int k)
{
	unsigned int i;

	for (i = 0; fl->kind != FL_NONE && i < fl->nk; i++)
		if (fl->keys[i] == k)
			return true;
	return false;
}

/* Key k of the change in flight holds got: settle the change or check
 * that k agrees with how it was settled. */
static void check_inflight_key(struct writer *w, unsigned int k,
			       struct kst got)
{
	struct inflight *fl = &w->fl;
	struct kst old = w->model[k], nw = { fl->kind != FL_DEL, fl->gen };
	char a[32], b[32], c[32];
	bool is_new = kst_eq(got, nw);

	CHECK(is_new || kst_eq(got, old), "%s: key %u of the change in "
	      "flight (%s g%llu) holds %s: neither its old state %s nor the "
	      "new one %s", w->who, k, fl->kind == FL_TXN ? "transaction" :
	      fl->kind == FL_PUT ? "put" : "delete",
	      (unsigned long long)fl->gen, kst_str(got, a, sizeof(a)),
	      kst_str(old, b, sizeof(b)), kst_str(nw, c, sizeof(c)));
	if (!fl->settled) {
		fl->settled = true;
		fl->applied = is_new;
		fl->first_key = k;
		return;
	}
	CHECK(fl->applied == is_new, "%s: transaction g%llu is half-applied: "
	      "key %u holds its %s state, key %u its %s state", w->who,
	      (unsigned long long)fl->gen, fl->first_key,
	      fl->applied ? "new" : "old", k, is_new ? "new" : "old");
}

/* Read back every key: 0, or the errno of a dead connection (the pass
 * is then incomplete; what it saw still counted). */
static int verify(struct writer *w)
{
	unsigned int order[NKEYS], n = 0, i, k;
	int err;

	/* the keys of the change in flight first */
	for (i = 0; w->fl.kind != FL_NONE && i < w->fl.nk; i++)
		order[n++] = w->fl.keys[i];
	for (k = 0; k < NKEYS; k++)
		if (!in_flight(&w->fl, k))
			order[n++] = k;
	for (i = 0; i < n; i++) {
		struct kst got = { 0 };
		char a[32], b[32];

		k = order[i];
		err = read_key(w->t, w->id, k, &got, w->who);
		if (err) {
			CHECK(dead_conn(err), "%s: get key %u: %s (%s)",
			      w->who, k, h_errname(err), tdbc_errmsg(w->c));
			return err;
		}
		w->st->checks++;
		if (in_flight(&w->fl, k)) {
			check_inflight_key(w, k, got);
			continue;
		}
		CHECK(kst_eq(got, w->model[k]), "%s: key %u holds %s, but "
		      "its last acknowledged state is %s", w->who, k,
		      kst_str(got, a, sizeof(a)),
		      kst_str(w->model[k], b, sizeof(b)));
	}
	if (w->fl.kind != FL_NONE) {
		CHECK(w->fl.settled, "%s: the change in flight was not read",
		      w->who);
		if (w->fl.applied) {
			record(w, &w->fl);
			w->st->applied++;
		} else {
			w->st->lost++;
		}
		w->fl.kind = FL_NONE;
	}
	w->st->passes++;
	return 0;
}

/*
 * A transaction that must fail: puts of new values to up to 3 keys, then
 * a no-overwrite put of a present key: -EEXIST, and nothing of it may
 * ever be seen (tdbd applies and undoes it; a checkpoint must not keep
 * it).  Not a change in flight if tdbd dies: its outcome is known.
 * 0, or the errno of a dead connection.
 */
static int failing_txn(struct writer *w, unsigned int present)
{
	char key[32], val[VAL_MAX];
	struct tdbc_txn *x = NULL;
	uint64_t gen = ++w->gen;
	unsigned int n = 1 + (unsigned int)(h_rand(&w->rnd) % 3), i, k;
	int kl, err;
	size_t vl;

	err = tdbc_txn_begin(w->c, &x);
	for (i = 0; !err && i < n; i++) {
		do
			k = (unsigned int)(h_rand(&w->rnd) % NKEYS);
		while (k == present);
		kl = key_name(key, sizeof(key), w->id, k);
		vl = make_val(val, w->id, k, gen);
		err = tdbc_put(w->t, x, key, (size_t)kl, val, vl, 0);
	}
	if (!err) {
		kl = key_name(key, sizeof(key), w->id, present);
		vl = make_val(val, w->id, present, gen);
		err = tdbc_put(w->t, x, key, (size_t)kl, val, vl,
			       TDBC_NOOVERWRITE);
	}
	if (err) {
		if (x)
			tdbc_txn_abort(x);
	} else {
		err = tdbc_txn_commit(x);
		if (err == -EEXIST || err == -ENOMEM) {
			w->st->failed_txns++;
			return 0;
		}
		CHECK(err, "%s: a transaction with a no-overwrite put of "
		      "present key %u committed", w->who, present);
	}
	CHECK(dead_conn(err), "%s: failing transaction g%llu: %s (%s)",
	      w->who, (unsigned long long)gen, h_errname(err),
	      tdbc_errmsg(w->c));
	return err;
}

/* One change; 0 if acknowledged, or the errno of a dead connection. */
static int one_change(struct writer *w)
{
	struct inflight *fl = &w->fl;
	char key[32], val[VAL_MAX];
	unsigned int r = (unsigned int)(h_rand(&w->rnd) % 100), k, i;
	unsigned int present[NKEYS], np = 0;
	struct tdbc_txn *x = NULL;
	size_t vl;
	int kl, err;

	for (k = 0; k < NKEYS; k++)
		if (w->model[k].present)
			present[np++] = k;
	memset(fl, 0, sizeof(*fl));
	if (r < 5 && np)
		return failing_txn(w, present[h_rand(&w->rnd) % np]);
	fl->gen = ++w->gen;
	if (r < 15 && np) {
		fl->kind = FL_DEL;
		fl->nk = 1;
		fl->keys[0] = present[h_rand(&w->rnd) % np];
		kl = key_name(key, sizeof(key), w->id, fl->keys[0]);
		err = tdbc_del(w->t, NULL, key, (size_t)kl);
		w->st->dels += !err;
	} else if (r < 40) {
		fl->nk = 2 + (unsigned int)(h_rand(&w->rnd) % (TXN_MAX - 1));
		for (i = 0; i < fl->nk; i++) {
			unsigned int j;

			do {
				k = (unsigned int)(h_rand(&w->rnd) % NKEYS);
				for (j = 0; j < i && fl->keys[j] != k; j++)
					;
			} while (j < i);
			fl->keys[i] = k;
		}
		err = tdbc_txn_begin(w->c, &x);
		for (i = 0; !err && i < fl->nk; i++) {
			kl = key_name(key, sizeof(key), w->id, fl->keys[i]);
			vl = make_val(val, w->id, fl->keys[i], fl->gen);
			err = tdbc_put(w->t, x, key, (size_t)kl, val, vl, 0);
		}
		if (err) {
			/* never committed: nothing can have changed */
			if (x)
				tdbc_txn_abort(x);
			fl->kind = FL_NONE;
		} else {
			fl->kind = FL_TXN;
			err = tdbc_txn_commit(x);
			w->st->txns += !err;
		}
	} else {
		fl->kind = FL_PUT;
		fl->nk = 1;
		fl->keys[0] = (unsigned int)(h_rand(&w->rnd) % NKEYS);
		kl = key_name(key, sizeof(key), w->id, fl->keys[0]);
		vl = make_val(val, w->id, fl->keys[0], fl->gen);
		err = tdbc_put(w->t, NULL, key, (size_t)kl, val, vl, 0);
		w->st->puts += !err;
	}
	if (!err) {
		record(w, fl);
		fl->kind = FL_NONE;
		w->st->acks++;
		return 0;
	}
	if (err == -ENOMEM) {
		/* refused, so not applied: the engine found no memory (the
		 * hugepage pool taken by someone else); checked like any
		 * other state */
		fl->kind = FL_NONE;
		w->st->refused++;
		return 0;
	}
	CHECK(dead_conn(err), "%s: change g%llu failed: %s (%s)", w->who,
	      (unsigned long long)fl->gen, h_errname(err), tdbc_errmsg(w->c));
	return err;
}

static void __attribute__((noreturn)) writer_main(int id, const char *sock,
						  struct shared *sh)
{
	struct writer w = { .id = id, .sock = sock,
		.flags = id & 1 ? TDBC_NO_RINGS : 0, .st = &sh->w[id] };
	char path[H_PATH], name[32];
	bool stopping = false;

	snprintf(w.who, sizeof(w.who), "writer %d", id);
	snprintf(name, sizeof(name), "w%d.side", id);
	h_path(path, sizeof(path), name);
	w.side = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND |
		      O_CLOEXEC, 0644);
	CHECK(w.side >= 0, "%s: %s: %s", w.who, path, strerror(errno));
	w.rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1) ^ (uint64_t)getpid();
	for (;;) {
		/* (re)connect and read everything back before writing */
		reconnect(&w);
		if (verify(&w))
			continue;
		if (stopping)
			break;
		while (!one_change(&w)) {
			if (__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
				/* one more pass, on a connection made after
				 * the stop: to the last tdbd */
				stopping = true;
				break;
			}
		}
	}
	drop_conn(&w);
	close(w.side);
	_exit(0);
}

/* --- the parent: tdbd's lives --------------------------------------------- */

/* --sync: always, or TDB_CRASH_SYNC (batch, none: a crash of tdbd
 * alone must lose nothing acknowledged in those modes either: an answer
 * goes out only after its record is written). */
static const char *opts[] = {
	"--sync", "always",
	"--checkpoint-wal-size", "1M",
	"--checkpoint-interval", "1s",
	"--workers", WORKERS_S,
	"--log-level", "info",
	NULL };

/* Start tdbd on the test's data directory (the same each time); *off
 * is where this run's lines begin in the log. */
static void spawn(struct h_daemon *d, long *off)
{
	const char *argv[32];
	struct stat st;
	unsigned int n, i;

	h_base_args(d, "tdbd", argv);
	for (n = 0; argv[n]; n++)
		;
	for (i = 0; opts[i]; i++)
		argv[n++] = opts[i];
	argv[n] = NULL;
	*off = stat(d->log, &st) ? 0 : (long)st.st_size;
	h_spawn(d, d->log, argv, NULL);
}

/* The log of this run (from off). */
static char *run_log(const struct h_daemon *d, long off)
{
	char *all = h_read_file(d->log);
	size_t len = strlen(all);
	char *s;

	if ((size_t)off > len)
		off = (long)len;
	s = strdup(all + off);
	CHECK(s, "out of memory");
	free(all);
	return s;
}

static void fail_run(struct h_daemon *d, long off, const char *what)
{
	char *log = run_log(d, off);

	fprintf(stderr, "----- this run of tdbd -----\n%s-----\n", log);
	free(log);
	h_fail(__FILE__, __LINE__, "tdbd ran", "%s (status %#x)", what,
	       d->status);
}

/* Wait until tdbd accepts; fails the test if it exits first. */
static void wait_ready(struct h_daemon *d, long off, unsigned int ms)
{
	uint64_t end = h_now_ms() + ms;

	for (;;) {
		if (h_wait_exit(d, 0))
			fail_run(d, off, "tdbd exited before it was ready");
		if (h_sock_accepts(d->sock))
			return;
		if (h_now_ms() >= end)
			fail_run(d, off, "tdbd was not ready in time");
		h_sleep_ms(1);
	}
}

/*
 * Is the checkpoint thread busy?  Its threads, in the order they are
 * made: main, WAL flusher, checkpointer, then the workers; the
 * checkpointer idles in a futex wait (its condition variable).  -1 if
 * the threads are not all there yet.
 */
static int ckpt_busy(pid_t pid)
{
	char path[64], buf[64];
	long tids[64], t;
	unsigned int n = 0, i, j;
	struct dirent *de;
	DIR *dp;
	int fd;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dp = opendir(path)))
		return -1;
	while ((de = readdir(dp)) && n < 64)
		if (de->d_name[0] != '.')
			tids[n++] = strtol(de->d_name, NULL, 10);
	closedir(dp);
	if (n != WORKERS + 3)
		return -1;
	for (i = 1; i < n; i++)         /* sort: creation order */
		for (j = i; j > 0 && tids[j - 1] > tids[j]; j--) {
			t = tids[j];
			tids[j] = tids[j - 1];
			tids[j - 1] = t;
		}
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/syscall", (int)pid,
		 tids[2]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	return strncmp(buf, "202 ", 4) != 0;   /* futex: idle */
}

static void kill_it(struct h_daemon *d, long off)
{
	CHECK(kill(d->pid, SIGKILL) == 0, "kill: %s", strerror(errno));
	CHECK(h_wait_exit(d, 10000), "tdbd did not die of SIGKILL");
	if (!WIFSIGNALED(d->status) || WTERMSIG(d->status) != SIGKILL)
		fail_run(d, off, "tdbd ended before the SIGKILL");
}

static unsigned int count(const char *s, const char *what)
{
	unsigned int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* The whole log: no error line, no sanitizer report; warnings only the
 * ones crashes bring (and hugepages).  Returns the number of other
 * warnings (printed; not a failure). */
static unsigned int check_log(const struct h_daemon *d)
{
	static const char *const bad[] = { "tdbd: error:", "tdbd: crit:",
		"tdbd: alert:", "tdbd: emerg:", "ERROR", "Sanitizer",
		"runtime error", "itest: cannot run", NULL };
	static const char *const ok_warn[] = { "torn tail",
		"unfinished segment header", "no 2 MiB hugepages", NULL };
	char *log = h_read_file(d->log), *line, *save = NULL;
	unsigned int warnings = 0, i;
	bool found = false;

	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* not tdbd's doing: another test on the machine took the
		 * hugepages back (vm.nr_hugepages) */
		if (strstr(line, "the hugepage pool is exhausted")) {
			h_note("not counted as an error: %s", line);
			continue;
		}
		for (i = 0; bad[i]; i++)
			if (strstr(line, bad[i])) {
				h_note("bad line in the log: %s", line);
				found = true;
			}
		if (!strstr(line, "tdbd: warning:"))
			continue;
		for (i = 0; ok_warn[i] && !strstr(line, ok_warn[i]); i++)
			;
		if (!ok_warn[i]) {
			h_note("unexpected warning: %s", line);
			warnings++;
		}
	}
	free(log);
	CHECK(!found, "tdbd's log %s has error lines (above)", d->log);
	return warnings;
}

/* --- the parent: the final check ------------------------------------------ */

/* Replay writer w's side file into model. */
static uint64_t load_side(int w, struct kst *model)
{
	char path[H_PATH], name[32], *buf, *line, *save = NULL;
	uint64_t lines = 0;

	snprintf(name, sizeof(name), "w%d.side", w);
	h_path(path, sizeof(path), name);
	buf = h_read_file(path);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long g;
		unsigned int k, n, i;
		int pos;

		if (sscanf(line, "P %u %llu", &k, &g) == 2 && k < NKEYS) {
			model[k] = (struct kst){ true, g };
		} else if (sscanf(line, "D %u", &k) == 1 && k < NKEYS) {
			model[k] = (struct kst){ false, 0 };
		} else if (sscanf(line, "T %llu %u%n", &g, &n, &pos) == 2 &&
			   n <= TXN_MAX) {
			const char *p = line + pos;

			for (i = 0; i < n; i++) {
				int used;

				CHECK(sscanf(p, " %u%n", &k, &used) == 1 &&
				      k < NKEYS, "side file %s: bad line %s",
				      path, line);
				model[k] = (struct kst){ true, g };
				p += used;
			}
		} else {
			h_fail(__FILE__, __LINE__, "side line", "side file "
			       "%s: bad line: %s", path, line);
		}
		lines++;
	}
	free(buf);
	return lines;
}

static uint64_t final_verify(const struct h_daemon *d)
{
	struct tdbc *c = h_connect(d, 0);
	struct tdbc_table *t = NULL;
	uint64_t lines = 0;
	int w, err;

	err = tdbc_table_open(c, TABLE, &t);
	CHECK(err == 0, "open %s: %s", TABLE, h_errname(err));
	for (w = 0; w < NWRITERS; w++) {
		struct kst model[NKEYS] = { { 0 } };
		unsigned int k;

		lines += load_side(w, model);
		for (k = 0; k < NKEYS; k++) {
			struct kst got = { 0 };
			char a[32], b[32];

			err = read_key(t, w, k, &got, "final check");
			CHECK(err == 0, "final check: get: %s", h_errname(err));
			CHECK(kst_eq(got, model[k]), "final check: key %u of "
			      "writer %d holds %s, its side file says %s", k,
			      w, kst_str(got, a, sizeof(a)),
			      kst_str(model[k], b, sizeof(b)));
		}
	}
	tdbc_table_close(t);
	tdbc_close(c);
	return lines;
}

static void stop_clean(struct h_daemon *d, long off)
{
	unsigned int budget = h_sanitized() ? 60000 : 20000;

	CHECK(kill(d->pid, SIGTERM) == 0, "kill: %s", strerror(errno));
	if (!h_wait_exit(d, budget)) {
		kill(d->pid, SIGKILL);
		h_wait_exit(d, 10000);
		fail_run(d, off, "tdbd did not exit after SIGTERM");
	}
	if (!WIFEXITED(d->status) || WEXITSTATUS(d->status) != 0)
		fail_run(d, off, "tdbd did not exit 0 after SIGTERM");
}

/* --- a failed commit and a checkpoint ------------------------------------ */

#define UN_KEYS  1000           /* keys put, keys deleted */
#define UN_VAL   (32u << 10)
#define UN_BATCH 250

static int un_key(char *buf, unsigned int i)
{
	return snprintf(buf, 32, "%c%u", i < UN_KEYS ? 'p' : 'd',
			i % UN_KEYS);
}

/* Submit n requests and reap them; each must succeed. */
static void un_batch(struct tdbc *c, const struct tdbc_req *rq,
		     unsigned int n)
{
	struct tdbc_cqe cq[UN_BATCH];
	unsigned int sent = 0, done = 0;
	int k, i;

	while (done < n) {
		if (sent < n) {
			k = tdbc_submit(c, rq + sent, n - sent);
			CHECK(k >= 0, "submit: %s", h_errname(k));
			sent += (unsigned int)k;
		}
		k = tdbc_reap(c, cq, UN_BATCH, 1, 10000);
		CHECK(k > 0, "reap: %s", h_errname(k));
		for (i = 0; i < k; i++)
			CHECK(cq[i].res == 0, "request %llu: %s",
			      (unsigned long long)cq[i].user,
			      h_errname(cq[i].res));
		done += (unsigned int)k;
	}
}

/*
 * A transaction commit applies its changes, then logs them, and undoes
 * them if one fails -- all under tdbd's write lock.  A checkpoint that
 * read values without that lock kept the changes of failed commits:
 * after a restart acknowledged keys held values never acknowledged, or
 * were gone.  So: put p* and d* (32 KiB each: dirty, and the next
 * checkpoint takes a while), then for ~3 s commit transactions
 * { put p* = phantom, del d*, no-overwrite put of a present key } that
 * fail with -EEXIST, while checkpoints (every second) run; SIGKILL,
 * restart: every p* and d* must hold its acknowledged value.
 */
static void undone(void)
{
	static const char *const args[] = { "--checkpoint-interval", "1s",
		"--log-level", "info", NULL };
	static char good[UN_VAL], got[UN_VAL], keys[UN_BATCH][32];
	static struct tdbc_req rq[UN_BATCH];
	struct tdbc_stats st0, st;
	struct tdbc_table *t = NULL;
	struct h_daemon d;
	struct tdbc *c;
	unsigned int i, j, n, fails = 0, wrong = 0;
	uint64_t end;
	int err;

	memset(good, 'g', sizeof(good));
	h_start(&d, "undone", args);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_create(c, "undone", NULL) == 0, "create undone");
	CHECK(tdbc_table_open(c, "undone", &t) == 0, "open undone");
	CHECK(tdbc_put(t, NULL, "x", 1, "x", 1, 0) == 0, "put x");
	for (i = 0; i < 2 * UN_KEYS; i += n) {
		n = 2 * UN_KEYS - i < UN_BATCH ? 2 * UN_KEYS - i : UN_BATCH;
		for (j = 0; j < n; j++)
			rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT,
				.table = t, .key = keys[j],
				.klen = (size_t)un_key(keys[j], i + j),
				.val = good, .vlen = UN_VAL, .user = i + j };
		un_batch(c, rq, n);
	}
	h_stats(c, &st0);
	end = h_now_ms() + 3000;
	do {
		struct tdbc_txn *x = NULL;

		CHECK(tdbc_txn_begin(c, &x) == 0, "txn_begin");
		for (i = 0; i < 2 * UN_KEYS; i += n) {
			n = 2 * UN_KEYS - i < UN_BATCH ? 2 * UN_KEYS - i :
			    UN_BATCH;
			for (j = 0; j < n; j++) {
				bool put = i + j < UN_KEYS;

				rq[j] = (struct tdbc_req){
					.op = put ? TDBC_OP_PUT : TDBC_OP_DEL,
					.table = t, .txn = x, .key = keys[j],
					.klen = (size_t)un_key(keys[j], i + j),
					.val = put ? "phantom" : NULL,
					.vlen = put ? 7 : 0, .user = i + j };
			}
			un_batch(c, rq, n);
		}
		err = tdbc_put(t, x, "x", 1, "y", 1, TDBC_NOOVERWRITE);
		CHECK(err == 0, "put x in the transaction: %s",
		      h_errname(err));
		err = tdbc_txn_commit(x);
		CHECK_EQ(err, -EEXIST, "a commit with a no-overwrite put of a "
			 "present key");
		fails++;
		h_stats(c, &st);
		/* until a checkpoint has taken all the puts */
		CHECK(h_now_ms() < end + 30000, "no checkpoint took LSN %llu "
		      "(checkpoint LSN %llu)", (unsigned long long)st0.wal_lsn,
		      (unsigned long long)st.ckpt_lsn);
	} while (h_now_ms() < end || st.ckpt_lsn < st0.wal_lsn);
	tdbc_table_close(t);
	tdbc_close(c);
	CHECK(kill(d.pid, SIGKILL) == 0, "kill: %s", strerror(errno));
	CHECK(h_wait_exit(&d, 10000), "tdbd did not die");

	h_start(&d, "undone", args);
	c = h_connect(&d, TDBC_NO_RINGS);
	CHECK(tdbc_table_open(c, "undone", &t) == 0, "open undone");
	for (i = 0; i < 2 * UN_KEYS; i++) {
		int kl = un_key(keys[0], i);
		long len = tdbc_get(t, NULL, keys[0], (size_t)kl, got,
				    sizeof(got), NULL);

		if (len == UN_VAL && !memcmp(got, good, UN_VAL))
			continue;
		if (wrong++ < 5)
			h_note("undone: key %s: %s", keys[0],
			       len == -ENOENT ? "gone" : len < 0 ?
			       h_errname((int)len) :
			       "holds a value never acknowledged");
	}
	CHECK(wrong == 0, "after %u failed commits, %llu checkpoints and a "
	      "restart, %u of %u acknowledged keys are wrong: a checkpoint "
	      "kept what failed commits did before their undo", fails,
	      (unsigned long long)(st.checkpoints - st0.checkpoints), wrong,
	      2 * UN_KEYS);
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	h_note("undone: %u failed commits, %llu checkpoints meanwhile; all "
	       "%u keys right after a restart", fails,
	       (unsigned long long)(st.checkpoints - st0.checkpoints),
	       2 * UN_KEYS);
}

/* --- main ----------------------------------------------------------------- */

enum { K_READY, K_EARLY, K_RECOVERY };

static void torture(void)
{
	const char *seed_env = getenv("TDB_ITEST_SEED");
	const char *cyc_env = getenv("TDB_CRASH_CYCLES");
	long ncycles = cyc_env && atol(cyc_env) >= 50 ? atol(cyc_env) :
		       h_scaled(500, 50), cyc;
	uint64_t seed, rnd, t_start, deadline;
	unsigned int ready_ms = 20, in_recovery = 0, before_ready = 0;
	unsigned int took, slowest = 0;
	unsigned int in_ckpt = 0, in_ckpt_after_rec = 0, replays = 0;
	unsigned int torn = 0, killed[3] = { 0 }, warnings;
	struct wstat tot = { 0 };
	pid_t writers[NWRITERS];
	struct h_daemon d;
	struct shared *sh;
	struct tdbc *c;
	long off;
	uint64_t lines;
	int i, err;

	seed = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) :
	       (uint64_t)h_now_ms() ^ ((uint64_t)getpid() << 32);
	rnd = seed | 1;
	h_note("seed %llu (TDB_ITEST_SEED repeats it), %ld cycles",
	       (unsigned long long)seed, ncycles);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(sh, 0, sizeof(*sh));

	/* the table, acknowledged before anything else */
	spawn(&d, &off);
	wait_ready(&d, off, 20000);
	c = h_connect(&d, TDBC_NO_RINGS);
	err = tdbc_table_create(c, TABLE, NULL);
	CHECK(err == 0, "create %s: %s", TABLE, h_errname(err));
	tdbc_close(c);

	for (i = 0; i < NWRITERS; i++) {
		fflush(NULL);
		writers[i] = fork();
		CHECK(writers[i] >= 0, "fork: %s", strerror(errno));
		if (writers[i] == 0)
			writer_main(i, d.sock, sh);
		h_track(writers[i]);
	}

	t_start = h_now_ms();
	/* bounded: at least 50 cycles whatever the scale, and no more
	 * after ~30 s (x2 under the sanitizers; $TDB_CRASH_SECONDS) */
	deadline = t_start + (getenv("TDB_CRASH_SECONDS") ?
			      strtoull(getenv("TDB_CRASH_SECONDS"), NULL, 10) *
			      1000 : h_sanitized() ? 60000 : 30000);
	for (cyc = 0; cyc < ncycles && (cyc < 50 || h_now_ms() < deadline);
	     cyc++) {
		int kind = cyc % 5 == 2 ? K_RECOVERY :
			   cyc % 5 == 4 ? K_EARLY : K_READY;
		bool replayed, ready, busy = false;
		unsigned int delay, nthreads = 0;
		uint64_t t0;
		char *log;

		for (i = 0; i < NWRITERS; i++) {
			int st;

			if (waitpid(writers[i], &st, WNOHANG) == writers[i]) {
				h_untrack(writers[i]);
				h_fail(__FILE__, __LINE__, "writer running",
				       "writer %d ended (status %#x) in cycle "
				       "%ld", i, st, cyc);
			}
		}
		if (cyc) {
			spawn(&d, &off);
		}
		t0 = h_now_ms();
		if (kind == K_RECOVERY) {
			/* somewhere between exec and ready */
			delay = (unsigned int)(h_rand(&rnd) % (ready_ms + 1));
			h_sleep_ms(delay);
			nthreads = h_proc_count(d.pid, "task");
		} else {
			if (cyc)
				wait_ready(&d, off, 30000);
			/* how long recovery takes, for K_RECOVERY */
			took = (unsigned int)(h_now_ms() - t0);
			ready_ms = (ready_ms * 3 + took) / 4;
			if (took > slowest)
				slowest = took;
			delay = (unsigned int)(h_rand(&rnd) %
					       (kind == K_EARLY ? 11 : 301));
			h_sleep_ms(delay);
			busy = ckpt_busy(d.pid) > 0;
		}
		kill_it(&d, off);
		killed[kind]++;

		log = run_log(&d, off);
		ready = strstr(log, "serving on") != NULL;
		replayed = strstr(log, "WAL: replayed") != NULL;
		replays += replayed;
		torn += count(log, "torn tail");
		if (kind == K_RECOVERY && !ready) {
			before_ready++;
			/* recovery runs on the main thread alone: the WAL's
			 * flusher starts when it is over */
			in_recovery += nthreads == 1 &&
				       strstr(log, "recovering:") != NULL;
		} else if (replayed && !strstr(log, "(after recovery)")) {
			/* the checkpoint after a recovery starts at once
			 * and had not finished */
			in_ckpt_after_rec++;
			busy = true;
		}
		in_ckpt += busy;
		free(log);
	}
	h_note("%ld cycles in %.1f s: %u killed 0-300 ms after ready, %u "
	       "0-10 ms after, %u 0-%u ms after exec; slowest start %u ms",
	       cyc, (double)(h_now_ms() - t_start) / 1000.0,
	       killed[K_READY], killed[K_EARLY], killed[K_RECOVERY], ready_ms,
	       slowest);

	/* the last life: writers verify once more and finish */
	spawn(&d, &off);
	wait_ready(&d, off, 30000);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NWRITERS; i++) {
		uint64_t end = h_now_ms() + 60000;
		int st;
		pid_t r;

		while ((r = waitpid(writers[i], &st, WNOHANG)) == 0) {
			CHECK(h_now_ms() < end, "writer %d did not finish", i);
			h_sleep_ms(5);
		}
		h_untrack(writers[i]);
		CHECK(r == writers[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "writer %d failed (status %#x)", i, st);
	}
	stop_clean(&d, off);
	warnings = check_log(&d);

	/* a clean restart: nothing to replay; everything acknowledged */
	spawn(&d, &off);
	wait_ready(&d, off, 30000);
	{
		char *log = run_log(&d, off);

		CHECK(!strstr(log, "WAL: replayed"), "a restart after a "
		      "clean stop replayed the WAL:\n%s", log);
		free(log);
	}
	lines = final_verify(&d);
	stop_clean(&d, off);
	check_log(&d);

	for (i = 0; i < NWRITERS; i++) {
		struct wstat *s = &sh->w[i];

		h_note("writer %d (%s): %llu acks (%llu puts, %llu deletes, "
		       "%llu txns; %llu txns failed as meant), %llu connects (slowest %llu ms), %llu "
		       "passes checked %llu keys; in flight at a kill: %llu "
		       "applied, %llu lost", i, i & 1 ? "socket" : "rings",
		       (unsigned long long)s->acks,
		       (unsigned long long)s->puts,
		       (unsigned long long)s->dels,
		       (unsigned long long)s->txns,
		       (unsigned long long)s->failed_txns,
		       (unsigned long long)s->connects,
		       (unsigned long long)s->max_reconnect_ms,
		       (unsigned long long)s->passes,
		       (unsigned long long)s->checks,
		       (unsigned long long)s->applied,
		       (unsigned long long)s->lost);
		tot.acks += s->acks;
		tot.passes += s->passes;
		tot.checks += s->checks;
		tot.applied += s->applied;
		tot.lost += s->lost;
		if (s->refused)
			h_note("writer %d: %llu changes refused with ENOMEM "
			       "(no memory for the table)", i,
			       (unsigned long long)s->refused);
		CHECK(s->passes >= 2, "writer %d verified only %llu times", i,
		      (unsigned long long)s->passes);
		CHECK(s->acks >= 100, "writer %d got only %llu changes "
		      "acknowledged", i, (unsigned long long)s->acks);
	}
	printf("tdbd-crash: %ld cycles; %llu changes acknowledged, %llu "
	       "side-file lines verified at the end; %llu verification "
	       "passes read %llu keys; in flight at a kill: %llu applied, "
	       "%llu lost; kills: %u before ready (%u in recovery), %u in a "
	       "checkpoint (%u in the one after recovery); %u recoveries "
	       "replayed WAL, %u torn tails cut, %u other warnings\n", cyc,
	       (unsigned long long)tot.acks, (unsigned long long)lines,
	       (unsigned long long)tot.passes,
	       (unsigned long long)tot.checks,
	       (unsigned long long)tot.applied, (unsigned long long)tot.lost,
	       before_ready, in_recovery, in_ckpt, in_ckpt_after_rec,
	       replays, torn, warnings);
	CHECK(cyc >= 50, "only %ld cycles", cyc);
	munmap(sh, sizeof(*sh));
}

int main(void)
{
	h_init("tdbd-crash", h_sanitized() ? 900 : 230);
	if (getenv("TDB_CRASH_SYNC") && *getenv("TDB_CRASH_SYNC"))
		opts[1] = getenv("TDB_CRASH_SYNC");
	if (h_want("undone"))
		undone();
	if (h_want("torture"))
		torture();
	h_done();
	return 0;
}
