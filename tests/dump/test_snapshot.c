// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_snapshot.c - snapshot scans (SCAN with TDB_SCAN_SNAPSHOT,
 * tdbc_scan_open_flags(TDBC_SCAN_SNAPSHOT)) against a real tdbd.
 *
 * Parts (TDB_ITEST_ONLY=name runs one):
 *  writers   A table in a fully known starting state (N keys "key:NNN"
 *            with values derived from NNN, some empty, some 20 KB; keys
 *            "new:NNN" absent).  Two snapshot scans open (two snapshots
 *            on the table at once, read in turns); then four writer
 *            threads (own connections) replace, delete, re-insert and
 *            insert keys, alone and in transactions (some of which fail
 *            and are undone), for as long as the scans run.  Each scan
 *            must be exactly the starting state: every "key:" record
 *            once with its starting value (nothing missing), no "new:"
 *            record and no changed value (no post-snapshot change leaks
 *            in).  Several rounds: whole table over rings, a PREFIX over
 *            rings, whole table over the socket (TDBC_NO_RINGS).  The
 *            writers must have changed many keys while the scan ran.
 *  overflow  tdbd with a small max-snapshot-bytes: a writer replaces the
 *            whole table under an open snapshot scan; every write
 *            succeeds, the scan fails with -ENOBUFS and "snapshot grew
 *            past max-snapshot-bytes"; a later snapshot scan works.
 *  drop      The table is changed and then dropped under an open
 *            snapshot scan: the scan still returns the table as of its
 *            start, whole.
 *  death     A client dies in the middle of a snapshot scan: tdbd frees
 *            the snapshot (dumps gauge back, ASan leak check at stop) and
 *            writers are not disturbed.
 *  api       CURSOR with a snapshot is refused (-EINVAL), unknown SCAN
 *            flags too (-EOPNOTSUPP); LIMIT and PREFIX apply; one snapshot
 *            scan per connection (-EBUSY); other calls on the same
 *            connection while one is open; closing one early.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define BIGV   (20u << 10)
#define NWRITERS 4

static unsigned int nkeys;      /* "key:" records in the starting state */
static unsigned int nnew;       /* "new:" keys the writers may insert */

/* --- the starting state ---------------------------------------------------- */

static size_t v0_len(unsigned int i)
{
	if (i % 997 == 5)
		return BIGV;
	return (i * 37u) % 301u;        /* 0 (empty) .. 300 */
}

static void v0(unsigned int i, unsigned char *out, size_t len)
{
	size_t j;

	for (j = 0; j < len; j++)
		out[j] = (unsigned char)(i * 131u + j * 7u + (j >> 8));
	if (len >= 4)
		memcpy(out, &i, 4);
}

static int keyname(char *out, const char *kind, unsigned int i)
{
	return sprintf(out, "%s%07u", kind, i);
}

/* Create `name` and fill it with the starting state. */
static void fill(struct tdbc *c, const char *name)
{
	static unsigned char val[BIGV];
	struct tdbc_table *t;
	struct tdbc_txn *x = NULL;
	unsigned int i;
	char k[32];
	int err;

	err = tdbc_table_create(c, name, NULL);
	CHECK(err == 0, "create %s: %s", name, tdbc_errmsg(c));
	CHECK_EQ(tdbc_table_open(c, name, &t), 0, "open");
	for (i = 0; i < nkeys; i++) {
		size_t len = v0_len(i);

		if (!x)
			CHECK_EQ(tdbc_txn_begin(c, &x), 0, "txn begin");
		v0(i, val, len);
		err = tdbc_put(t, x, k, (size_t)keyname(k, "key:", i), val,
			       len, 0);
		CHECK(err == 0, "fill put: %s", tdbc_errmsg(c));
		if (i % 1000 == 999) {
			CHECK_EQ(tdbc_txn_commit(x), 0, "fill commit");
			x = NULL;
		}
	}
	if (x)
		CHECK_EQ(tdbc_txn_commit(x), 0, "fill commit");
	tdbc_table_close(t);
}

/* --- writers --------------------------------------------------------------- */

struct writer {
	pthread_t th;
	int id;
	const char *sock, *table;
	volatile int *stop;
	struct tdbc *c;
	uint64_t ops, txns, failed_txns;
};

static void rand_val(uint64_t *r, unsigned char *buf, size_t *len)
{
	size_t i;

	*len = h_rand(r) % 8 == 0 ? 0 : h_rand(r) % 2000;
	for (i = 0; i < *len; i++)
		buf[i] = (unsigned char)h_rand(r);
	if (*len)
		buf[0] = 0xee;  /* never a starting value's first byte... */
	if (*len >= 4)
		memcpy(buf, "\xee\xee\xee\xee", 4);     /* ...nor 4 bytes */
}

/* One change: put/del of a "key:" or "new:" key, in x or alone. */
static void one_change(struct writer *w, uint64_t *r, struct tdbc_table *t,
		       struct tdbc_txn *x, unsigned char *buf)
{
	unsigned int p = (unsigned int)(h_rand(r) % 100);
	bool old = p < 60;
	unsigned int i = (unsigned int)(h_rand(r) % (old ? nkeys : nnew));
	/* an eighth of the changes hit 64 hot keys, again and again: only
	 * the first change after the snapshot may keep the old value */
	if (h_rand(r) % 8 == 0)
		i %= 64;
	char k[32];
	size_t kl = (size_t)keyname(k, old ? "key:" : "new:", i), vl;
	int err;

	if (p % 3 == 0) {
		err = tdbc_del(t, x, k, kl);
		CHECK(err == 0 || err == -ENOENT, "writer %d del: %s", w->id,
		      h_errname(err));
	} else {
		rand_val(r, buf, &vl);
		err = tdbc_put(t, x, k, kl, buf, vl, 0);
		CHECK(err == 0, "writer %d put: %s (%s)", w->id,
		      h_errname(err), tdbc_errmsg(w->c));
	}
	__atomic_fetch_add(&w->ops, 1, __ATOMIC_RELAXED);
}

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	uint64_t r = 0x1234567ull * (uint64_t)(w->id + 7);
	unsigned char *buf = malloc(4096);
	struct tdbc_table *t;
	struct tdbc *c;
	char msg[256];
	int err;

	CHECK(buf, "out of memory");
	err = tdbc_connect(&c, w->sock, w->id & 1 ? TDBC_NO_RINGS : 0, msg,
			   sizeof(msg));
	CHECK(err == 0, "writer connect: %s", msg);
	w->c = c;
	CHECK_EQ(tdbc_table_open(c, w->table, &t), 0, "writer open");
	while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE)) {
		if (h_rand(&r) % 5 == 0) {
			struct tdbc_txn *x;
			unsigned int n = 2 + (unsigned int)(h_rand(&r) % 7), j;
			bool doomed = h_rand(&r) % 4 == 0;

			CHECK_EQ(tdbc_txn_begin(c, &x), 0, "txn begin");
			for (j = 0; j < n; j++)
				one_change(w, &r, t, x, buf);
			if (doomed) {
				/* a no-overwrite put of a key the transaction
				 * wrote: the commit fails, all is undone */
				char k[32];
				size_t kl = (size_t)keyname(k, "key:",
					(unsigned int)(h_rand(&r) % nkeys));

				CHECK_EQ(tdbc_put(t, x, k, kl, "x", 1, 0), 0,
					 "txn put");
				CHECK_EQ(tdbc_put(t, x, k, kl, "y", 1,
						  TDBC_NOOVERWRITE), 0,
					 "txn put");
				err = tdbc_txn_commit(x);
				CHECK_EQ(err, -EEXIST, "doomed commit");
				w->failed_txns++;
			} else {
				err = tdbc_txn_commit(x);
				CHECK_EQ(err, 0, "commit");
			}
			w->txns++;
		} else {
			one_change(w, &r, t, NULL, buf);
		}
	}
	tdbc_table_close(t);
	tdbc_close(c);
	free(buf);
	return NULL;
}

/* --- checking a snapshot ------------------------------------------------- */

/* One snapshot scan being checked against the starting state. */
struct checker {
	struct tdbc_scan *s;
	unsigned char *seen;
	uint64_t n;
	bool done;
};

/* Take one record of k's scan and check it; the end checks that nothing
 * of the starting state (keys with `prefix`) was missed. */
static void check_step(struct checker *k, const char *prefix)
{
	static unsigned char want[BIGV];
	size_t plen = prefix ? strlen(prefix) : 0;
	const void *key, *v;
	size_t kl, vl;
	char name[32];
	unsigned int i;
	uint64_t expect = 0;
	int rc;

	rc = tdbc_scan_next(k->s, &key, &kl, &v, &vl);
	if (rc > 0) {
		CHECK(kl == 11 && !memcmp(key, "key:", 4), "record %llu: key "
		      "'%.*s' was not in the table at snapshot time (a later "
		      "insert leaked in)", (unsigned long long)k->n, (int)kl,
		      (const char *)key);
		memcpy(name, key, kl);
		name[kl] = '\0';
		i = (unsigned int)strtoul(name + 4, NULL, 10);
		CHECK(i < nkeys, "key %s out of range", name);
		CHECK(!plen || !strncmp(name, prefix, plen), "key %s outside "
		      "the prefix %s", name, prefix);
		CHECK(!k->seen[i], "key %s returned twice", name);
		k->seen[i] = 1;
		v0(i, want, v0_len(i));
		CHECK(vl == v0_len(i) && !memcmp(v, want, vl), "key %s: value "
		      "of %zu bytes is not its value at snapshot time (%zu "
		      "bytes): a later change leaked in", name, vl,
		      v0_len(i));
		k->n++;
		return;
	}
	CHECK_EQ(rc, 0, "snapshot scan end");
	for (i = 0; i < nkeys; i++) {
		keyname(name, "key:", i);
		if (plen && strncmp(name, prefix, plen))
			continue;
		expect++;
		CHECK(k->seen[i], "key %s was in the table at snapshot time "
		      "but the scan missed it", name);
	}
	CHECK_EQ(k->n, expect, "records");
	k->done = true;
}

/*
 * Read the snapshot scans (in turns, a record of each) and check each is
 * the starting state (keys with `prefix` only).  Returns the records
 * read by the first.
 */
static uint64_t check_snapshots(struct tdbc_scan **s, int ns,
				const char *prefix)
{
	struct checker k[2];
	uint64_t steps = 0, n;
	int i, left = ns;

	CHECK(ns <= 2, "ns");
	for (i = 0; i < ns; i++) {
		k[i] = (struct checker){ .s = s[i],
					 .seen = calloc(nkeys, 1) };
		CHECK(k[i].seen, "out of memory");
	}
	while (left) {
		for (i = 0; i < ns; i++) {
			if (k[i].done)
				continue;
			check_step(&k[i], prefix);
			left -= k[i].done;
		}
		if (!(++steps % 500))
			h_sleep_ms(1);  /* the writers get ahead of us */
	}
	n = k[0].n;
	for (i = 0; i < ns; i++)
		free(k[i].seen);
	return n;
}

/* One round: fill, snapshot, writers during the scan, check. */
static void round_writers(const struct h_daemon *d, struct tdbc *admin,
			  int round, const char *prefix, unsigned int flags)
{
	struct writer w[NWRITERS];
	struct tdbc_table *t, *t2;
	struct tdbc_scan *s, *ss[2];
	struct tdbc *c, *c2;
	volatile int stop = 0;
	uint64_t ops = 0, txns = 0, failed = 0, n;
	char name[32];
	int i;

	snprintf(name, sizeof(name), "snap%d", round);
	fill(admin, name);
	c = h_connect(d, flags);
	c2 = h_connect(d, 0);
	CHECK_EQ(tdbc_table_open(c, name, &t), 0, "open");
	CHECK_EQ(tdbc_table_open(c2, name, &t2), 0, "open");
	/* two snapshots of the same state, registered together */
	CHECK_EQ(tdbc_scan_open_flags(t, prefix, prefix ? strlen(prefix) : 0,
				      0, TDBC_SCAN_SNAPSHOT, &ss[0]), 0,
		 "snapshot scan open");
	CHECK_EQ(tdbc_scan_open_flags(t2, prefix, prefix ? strlen(prefix) : 0,
				      0, TDBC_SCAN_SNAPSHOT, &ss[1]), 0,
		 "second snapshot scan open");
	/* The snapshot is registered (its first part came): go. */
	for (i = 0; i < NWRITERS; i++) {
		w[i] = (struct writer){ .id = i, .sock = d->sock,
					.table = name, .stop = &stop };
		CHECK(!pthread_create(&w[i].th, NULL, writer_run, &w[i]),
		      "pthread_create");
	}
	/* Let the writers get going before the walk is far (at most 3 s:
	 * tdbd cuts off a reader that takes nothing for client-deadline). */
	for (i = 0; i < 300; i++) {
		uint64_t sum = 0;
		int j;

		for (j = 0; j < NWRITERS; j++)
			sum += __atomic_load_n(&w[j].ops, __ATOMIC_RELAXED);
		if (sum >= 500)
			break;
		h_sleep_ms(10);
	}
	n = check_snapshots(ss, 2, prefix);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NWRITERS; i++) {
		pthread_join(w[i].th, NULL);
		ops += w[i].ops;
		txns += w[i].txns;
		failed += w[i].failed_txns;
	}
	tdbc_scan_close(ss[0]);
	tdbc_scan_close(ss[1]);
	tdbc_table_close(t2);
	tdbc_close(c2);
	h_note("round %d (%s%s%s): 2 x %llu records, %llu changes by %d "
	       "writers (%llu transactions, %llu failed) during the scans",
	       round,
	       prefix ? "prefix " : "whole table", prefix ? prefix : "",
	       flags & TDBC_NO_RINGS ? ", socket" : ", rings",
	       (unsigned long long)n, (unsigned long long)ops, NWRITERS,
	       (unsigned long long)txns, (unsigned long long)failed);
	CHECK(ops >= 200, "the writers made only %llu changes during the "
	      "scan: nothing was tested", (unsigned long long)ops);
	/* The table did change (a plain scan sees it): the snapshot was
	 * not just a quiet table. */
	CHECK_EQ(tdbc_scan_open(t, "new:", 4, 0, &s), 0, "scan");
	for (n = 0; tdbc_scan_next(s, NULL, NULL, NULL, NULL) > 0; n++)
		;
	tdbc_scan_close(s);
	CHECK(n > 0, "no new: key after the writers");
	tdbc_table_close(t);
	tdbc_close(c);
	CHECK_EQ(tdbc_table_drop(admin, name), 0, "drop");
}

static void part_writers(void)
{
	static const char *const args[] = { "--workers", "2", NULL };
	struct h_daemon d;
	struct tdbc *admin;
	int rounds = (int)h_scaled(3, 3), r;

	h_start(&d, "writers", args);
	admin = h_connect(&d, 0);
	for (r = 0; r < rounds; r++)
		round_writers(&d, admin, r, r % 3 == 1 ? "key:001" : NULL,
			      r % 3 == 2 ? TDBC_NO_RINGS : 0);
	tdbc_close(admin);
	h_stop(&d);
}

/* --- overflow, drop, death ------------------------------------------------- */

#define BIG_N   4000u
#define BIG_V   2048u

/* A table of BIG_N records of BIG_V bytes: more than a ring holds, so an
 * unread snapshot scan stays in the middle of its walk. */
static void fill_big(struct tdbc *c, const char *name, unsigned char tag)
{
	static unsigned char val[BIG_V];
	struct tdbc_table *t;
	struct tdbc_txn *x;
	unsigned int i;
	char k[32];

	CHECK_EQ(tdbc_table_create(c, name, NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, name, &t), 0, "open");
	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "begin");
	for (i = 0; i < BIG_N; i++) {
		memset(val, tag, sizeof(val));
		memcpy(val, &i, 4);
		CHECK_EQ(tdbc_put(t, x, k, (size_t)keyname(k, "big:", i), val,
				  BIG_V, 0), 0, "put");
	}
	CHECK_EQ(tdbc_txn_commit(x), 0, "commit");
	tdbc_table_close(t);
}

/* Check a record of fill_big's table (tag); returns its index. */
static unsigned int check_big(const void *k, size_t kl, const void *v,
			      size_t vl, unsigned char tag)
{
	unsigned char want[BIG_V];
	char key[32];
	unsigned int i;

	CHECK(kl == 11 && !memcmp(k, "big:", 4), "unexpected key %.*s",
	      (int)kl, (const char *)k);
	memcpy(key, k, kl);
	key[kl] = '\0';
	i = (unsigned int)strtoul(key + 4, NULL, 10);
	CHECK(i < BIG_N, "key out of range");
	memset(want, tag, sizeof(want));
	memcpy(want, &i, 4);
	CHECK(vl == BIG_V && !memcmp(v, want, BIG_V), "key %s: not its "
	      "value at snapshot time", key);
	return i;
}

static void change_all(struct tdbc *c, const char *name, size_t vlen)
{
	static char z[256];
	struct tdbc_table *t;
	unsigned int i;
	char k[32];

	CHECK(vlen <= sizeof(z), "vlen");
	memset(z, 'z', sizeof(z));
	CHECK_EQ(tdbc_table_open(c, name, &t), 0, "open");
	for (i = 0; i < BIG_N; i++)
		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)keyname(k, "big:", i),
				  z, vlen, 0), 0,
			 "a write under a snapshot");
	tdbc_table_close(t);
}

static bool no_dumps(const struct tdbc_stats *st, const void *arg)
{
	(void)arg;
	return st->dumps == 0;
}

static void part_overflow(void)
{
	static const char *const args[] = { "--workers", "2",
		"--max-snapshot-bytes", "256K", NULL };
	struct tdbc *c, *w;
	struct tdbc_table *t;
	struct tdbc_scan *s;
	struct tdbc_stats st;
	const void *k, *v;
	size_t kl, vl;
	uint64_t n = 0;
	struct h_daemon d;
	int rc;

	h_start(&d, "overflow", args);
	c = h_connect(&d, 0);
	w = h_connect(&d, 0);
	fill_big(c, "big", 'a');
	CHECK_EQ(tdbc_table_open(c, "big", &t), 0, "open");
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "snapshot scan");
	/* 4000 x 2 KB of pre-images, far past 256K: every write still
	 * succeeds. */
	change_all(w, "big", 40);
	while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0) {
		check_big(k, kl, v, vl, 'a');
		n++;
	}
	CHECK_EQ(rc, -ENOBUFS, "the overflowing snapshot's end");
	CHECK(strstr(tdbc_errmsg(c), "snapshot grew past max-snapshot-bytes"),
	      "message: %s", tdbc_errmsg(c));
	CHECK(n < BIG_N, "all %llu records came", (unsigned long long)n);
	h_note("overflow: -ENOBUFS after %llu records: %s",
	       (unsigned long long)n, tdbc_errmsg(c));
	tdbc_scan_close(s);
	CHECK(h_wait_stats(c, &st, no_dumps, NULL, 5000), "dumps stay");
	/* Quiet now: a new snapshot scan is whole. */
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "snapshot scan");
	for (n = 0; (rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0; n++)
		CHECK(vl == 40, "value length %zu", vl);
	CHECK_EQ(rc, 0, "end");
	CHECK_EQ(n, BIG_N, "records");
	tdbc_scan_close(s);
	tdbc_table_close(t);
	tdbc_close(w);
	tdbc_close(c);
	h_stop(&d);
}

static void part_drop(const struct h_daemon *d)
{
	unsigned char *seen = calloc(BIG_N, 1);
	struct tdbc *c, *w;
	struct tdbc_table *t, *wt;
	struct tdbc_scan *s;
	struct tdbc_stats st;
	const void *k, *v;
	size_t kl, vl;
	unsigned int i;
	uint64_t n = 0;
	char key[32];
	int rc;

	CHECK(seen, "out of memory");
	c = h_connect(d, 0);
	w = h_connect(d, 0);
	fill_big(c, "dropme", 'd');
	CHECK_EQ(tdbc_table_open(c, "dropme", &t), 0, "open");
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "snapshot scan");
	CHECK_EQ(tdbc_table_open(w, "dropme", &wt), 0, "open");
	for (i = 0; i < 300; i++) {
		size_t kl2 = (size_t)keyname(key, "big:", i * 13 % BIG_N);

		if (i % 3 == 0)
			CHECK_EQ(tdbc_del(wt, NULL, key, kl2), 0, "del");
		else
			CHECK_EQ(tdbc_put(wt, NULL, key, kl2, "new", 3, 0), 0,
				 "put");
		kl2 = (size_t)keyname(key, "ins:", i);
		CHECK_EQ(tdbc_put(wt, NULL, key, kl2, "ins", 3, 0), 0, "put");
	}
	CHECK_EQ(tdbc_table_drop(w, "dropme"), 0, "drop");
	tdbc_table_close(wt);
	while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0) {
		i = check_big(k, kl, v, vl, 'd');
		CHECK(!seen[i], "twice");
		seen[i] = 1;
		n++;
	}
	CHECK_EQ(rc, 0, "the dropped table's snapshot scan");
	CHECK_EQ(n, BIG_N, "records of the dropped table's snapshot");
	tdbc_scan_close(s);
	tdbc_table_close(t);
	CHECK(h_wait_stats(c, &st, no_dumps, NULL, 5000), "dumps stay");
	tdbc_close(w);
	tdbc_close(c);
	free(seen);
}

static bool one_client_no_dumps(const struct tdbc_stats *st, const void *arg)
{
	(void)arg;
	return st->dumps == 0 && st->clients == 1;
}

static void part_death(const struct h_daemon *d)
{
	struct tdbc *c;
	struct tdbc_stats st;
	int pfd[2], status, k;
	pid_t pid;
	char b;

	c = h_connect(d, 0);
	fill_big(c, "death", 'x');
	CHECK(pipe(pfd) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc_table *t;
		struct tdbc_scan *s;
		struct tdbc *cc;
		char msg[256];
		int i;

		close(pfd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);       /* never outlive us */
		CHECK(tdbc_connect(&cc, d->sock, 0, msg, sizeof(msg)) == 0,
		      "connect: %s", msg);
		CHECK_EQ(tdbc_table_open(cc, "death", &t), 0, "open");
		CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0,
					      TDBC_SCAN_SNAPSHOT, &s), 0,
			 "snapshot scan");
		for (i = 0; i < 5; i++)
			CHECK_EQ(tdbc_scan_next(s, NULL, NULL, NULL, NULL), 1,
				 "next");
		CHECK(write(pfd[1], "r", 1) == 1, "write");
		pause();        /* killed */
		_exit(0);
	}
	h_track(pid);
	close(pfd[1]);
	CHECK(read(pfd[0], &b, 1) == 1, "child did not start its scan");
	/* The snapshot takes changes, then its client dies mid-scan. */
	for (k = 0; k < 2; k++) {
		change_all(c, "death", 100 + (size_t)k);
		if (k == 0) {
			kill(pid, SIGKILL);
			CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
			h_untrack(pid);
		}
	}
	CHECK(h_wait_stats(c, &st, one_client_no_dumps, NULL, 10000),
	      "the dead client's snapshot scan stays: dumps %u clients %u",
	      st.dumps, st.clients);
	change_all(c, "death", 7);      /* writers go on as ever */
	close(pfd[0]);
	tdbc_close(c);
}

/* --- the API and the protocol ---------------------------------------------- */

static void part_api(const struct h_daemon *d)
{
	struct tdb_proto_msg m;
	struct tdbc *c;
	struct tdbc_table *t;
	struct tdbc_scan *s, *s2;
	struct tdbc_stats st;
	struct h_raw raw;
	const void *k, *v;
	size_t kl, vl;
	unsigned char cur[] = { 1, 'b', 'i', 'g' };
	char msg[256], val[64];
	uint64_t n;
	int rc;

	c = h_connect(d, 0);
	fill_big(c, "api", 'p');
	/* the protocol: no CURSOR with a snapshot, no unknown flags */
	h_raw_connect(&raw, d->sock);
	memset(&m, 0, sizeof(m));
	m.cmd = TDB_CMD_SCAN;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_SCAN_FLAGS) |
		  TDB_PROTO_BIT(TDB_A_CURSOR);
	m.table = "api";
	m.scan_flags = TDB_SCAN_SNAPSHOT;
	m.cursor = cur;
	m.cursor_len = sizeof(cur);
	rc = h_raw_call(&raw, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK_EQ(rc, -EINVAL, "snapshot with CURSOR");
	CHECK(strstr(msg, "takes no CURSOR"), "message: %s", msg);
	m.attrs &= ~TDB_PROTO_BIT(TDB_A_CURSOR);
	m.scan_flags = 1u << 4;     /* no such flag (2, 4, 8: ranges) */
	{
		/* the builder refuses unknown flags as the parser does: send
		 * a valid message and patch the flag's bits */
		unsigned char buf[256];
		struct tdb_proto_msg ok = m;
		long len;
		size_t off;

		ok.scan_flags = TDB_SCAN_SNAPSHOT;
		ok.seq = 77;
		len = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST,
				      &ok, NULL);
		CHECK(len > 0, "build");
		for (off = 20; off + 8 <= (size_t)len; ) {
			struct nlattr *a = (struct nlattr *)(buf + off);

			if ((a->nla_type & NLA_TYPE_MASK) == TDB_A_SCAN_FLAGS)
				memcpy(buf + off + 4, "\x10\0\0\0", 4);
			off += NLA_ALIGN(a->nla_len);
		}
		CHECK_EQ(h_raw_send(&raw, buf, (size_t)len), 0, "send");
		len = h_raw_recv(&raw, buf, sizeof(buf), 5000);
		CHECK(len > 0, "no answer");
		CHECK(tdb_proto_parse(buf, (size_t)len, TDB_PROTO_ANSWER, &ok,
				      NULL) == 0, "parse");
		CHECK_EQ(ok.error, -EOPNOTSUPP, "unknown SCAN flag");
	}
	h_raw_close(&raw);

	CHECK_EQ(tdbc_table_open(c, "api", &t), 0, "open");
	/* LIMIT */
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 10, TDBC_SCAN_SNAPSHOT, &s),
		 0, "snapshot scan");
	for (n = 0; (rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0; n++)
		check_big(k, kl, v, vl, 'p');
	CHECK_EQ(rc, 0, "end");
	CHECK_EQ(n, 10, "LIMIT 10");
	tdbc_scan_close(s);
	/* PREFIX: big:00NNNNN is 100 keys */
	CHECK_EQ(tdbc_scan_open_flags(t, "big:00000", 9, 0,
				      TDBC_SCAN_SNAPSHOT, &s), 0, "scan");
	for (n = 0; (rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0; n++)
		check_big(k, kl, v, vl, 'p');
	CHECK_EQ(rc, 0, "end");
	CHECK_EQ(n, 100, "PREFIX big:00000");
	tdbc_scan_close(s);
	/* one at a time; other calls meanwhile on the same connection; a
	 * put made meanwhile is not in the snapshot */
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "scan");
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s2),
		 -EBUSY, "a second snapshot scan");
	CHECK_EQ(tdbc_put(t, NULL, "zz-late", 7, "late", 4, 0), 0, "put");
	CHECK_EQ(tdbc_get(t, NULL, "zz-late", 7, val, sizeof(val), NULL), 4,
		 "get");
	CHECK_EQ(tdbc_scan_open(t, "zz-", 3, 0, &s2), 0, "a plain scan too");
	CHECK_EQ(tdbc_scan_next(s2, NULL, NULL, NULL, NULL), 1, "plain next");
	tdbc_scan_close(s2);
	for (n = 0; (rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0; n++) {
		check_big(k, kl, v, vl, 'p');
		if (n == 100)
			CHECK_EQ(tdbc_stats(c, &st), 0, "stats meanwhile");
	}
	CHECK_EQ(rc, 0, "end");
	CHECK_EQ(n, BIG_N, "records");
	tdbc_scan_close(s);
	/* closing one early: the connection goes on, the dump is gone */
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "scan");
	CHECK_EQ(tdbc_scan_next(s, NULL, NULL, NULL, NULL), 1, "next");
	tdbc_scan_close(s);
	CHECK_EQ(tdbc_get(t, NULL, "zz-late", 7, val, sizeof(val), NULL), 4,
		 "get after an early close");
	CHECK(h_wait_stats(c, &st, no_dumps, NULL, 5000), "dumps stay");
	/* a refusal comes at open, not at the first next() */
	CHECK_EQ(tdbc_table_drop(c, "api"), 0, "drop");
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 -ENOENT, "snapshot scan of a dropped table");
	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, 0x80, &s), -EINVAL,
		 "unknown scan flags");
	tdbc_table_close(t);
	tdbc_close(c);
}

int main(void)
{
	struct h_daemon d;

	h_init("dump-snapshot", h_sanitized() ? 1200 : 300);
	nkeys = (unsigned int)h_scaled(100000, 20000);
	nnew = nkeys / 4;
	if (h_want("writers"))
		part_writers();
	if (h_want("overflow"))
		part_overflow();
	if (h_want("drop") || h_want("death") || h_want("api")) {
		h_start(&d, "misc", NULL);
		if (h_want("drop"))
			part_drop(&d);
		if (h_want("death"))
			part_death(&d);
		if (h_want("api"))
			part_api(&d);
		h_stop(&d);
	}
	h_done();
	return 0;
}
