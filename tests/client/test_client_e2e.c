// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_e2e.c - libtdbclient against a real tdbd.
 *
 * The daemon ($TDBD, set by meson to the built binary) is started on a
 * socket in a scratch directory; without $TDBD the test is skipped (77).
 * Every test of the main group runs twice: over rings and socket-only
 * (TDBC_NO_RINGS).  The last test starts a daemon of its own and kills
 * it under calls in progress: they must fail, not hang (an alarm() is
 * the watchdog).  Expiry (issue 27): test_expiry, test_async_expiry,
 * test_scan_expiry and test_table_ttl wait past short TTLs (300 ms to
 * 1.5 s) and check that nothing reads an expired key, and that the
 * sweep's removal reaches a watcher marked TDBC_REASON_EXPIRED.
 *
 * TDBC_E2E_KEYS scales the scan and async tests (default 3000).
 * TDBC_E2E_EXPECT_HUGEPAGES=1 (the -hugepages run) asserts that the
 * rings tdbd passed really are hugetlb memfds (/proc/self/smaps).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <tdb/client.h>

#include "daemon.h"

#ifdef TDBC_E2E_WHITEBOX
/* This build runs only the white-box test at the end. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-const-variable"
#endif

/* --- per-group state ---------------------------------------------------- */

static struct daemon g_daemon;

struct mode {
	unsigned int flags;     /* TDBC_NO_MAP (rings), TDBC_NO_RINGS or 0
				 * (rings, and gets in the tables' maps) */
	const char *tag;        /* makes table names unique per mode */
};
static const struct mode ring_mode = { TDBC_NO_MAP, "r" };
static const struct mode sock_mode = { TDBC_NO_RINGS, "s" };
static const struct mode map_mode = { 0, "m" };
#define RINGS(m) (!((m)->flags & TDBC_NO_RINGS))

static unsigned int n_keys(void)
{
	const char *e = getenv("TDBC_E2E_KEYS");

	return e && atoi(e) > 0 ? (unsigned int)atoi(e) : 3000;
}

static int group_setup(void **state)
{
	(void)state;
	return daemon_start(&g_daemon, "e2e") ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	daemon_stop(&g_daemon, SIGTERM);
	return 0;
}

static struct tdbc *conn(const struct mode *m)
{
	char msg[256];
	struct tdbc *c = NULL;
	int err = tdbc_connect(&c, g_daemon.sock, m->flags, msg, sizeof(msg));

	if (err)
		fail_msg("connect %s: %d %s", g_daemon.sock, err, msg);
	assert_int_equal(tdbc_uses_rings(c), RINGS(m));
	return c;
}

/* A fresh table "<base>-<mode>" and a handle to it. */
static struct tdbc_table *fresh_table(struct tdbc *c, const struct mode *m,
				      const char *base, char *name)
{
	struct tdbc_table *t = NULL;
	int err;

	sprintf(name, "%s-%s", base, m->tag);
	err = tdbc_table_create(c, name, NULL);
	if (err)
		fail_msg("create %s: %d %s", name, err, tdbc_errmsg(c));
	assert_int_equal(tdbc_table_open(c, name, &t), 0);
	assert_string_equal(tdbc_table_name(t), name);
	return t;
}

static void put_ok(struct tdbc_table *t, const char *k, const char *v)
{
	int err = tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0);

	if (err)
		fail_msg("put %s: %d", k, err);
}

/* The value of k as a string ("" if absent: then *err gets the errno). */
static long get_str(struct tdbc_table *t, struct tdbc_txn *x, const char *k,
		    char *buf, size_t cap)
{
	long n = tdbc_get(t, x, k, strlen(k), buf, cap - 1, NULL);

	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* --- tables ------------------------------------------------------------- */

struct list_find {
	const char *name;
	int seen;
	struct tdbc_table_stat st;
};

static int list_fn(void *arg, const struct tdbc_table_stat *st)
{
	struct list_find *f = arg;

	if (!strcmp(st->name, f->name)) {
		f->seen++;
		f->st = *st;
	}
	return 0;
}

static int list_stop(void *arg, const struct tdbc_table_stat *st)
{
	(void)st;
	++*(int *)arg;
	return 42;
}

static void test_tables(void **state)
{
	const struct mode *m = *state;
	struct tdbc_table_opts o;
	struct tdbc_table_stat st;
	struct tdbc_table *t = NULL, *t2;
	struct list_find f = { 0 };
	struct tdbc *c = conn(m);
	char name[80], buf[16];
	int calls = 0;

	sprintf(name, "tables-%s", m->tag);
	tdbc_table_opts_init(&o);
	assert_int_equal(o.max_extents, 0);
	assert_int_equal(o.mode, (uint32_t)-1);
	o.max_extents = 4;
	o.mode = 0640;
	assert_int_equal(tdbc_table_create(c, name, &o), 0);
	assert_int_equal(tdbc_table_create(c, name, NULL), -EEXIST);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_string_equal(st.name, name);
	assert_int_equal(st.max_extents, 4);
	assert_int_equal(st.mode, 0640);
	assert_int_equal(st.uid, getuid());
	assert_int_equal(st.records, 0);
	assert_true(st.page_size == 4096 || st.page_size == 2097152);

	assert_int_equal(tdbc_table_open(c, name, &t), 0);
	put_ok(t, "a", "1");
	put_ok(t, "b", "22");
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_int_equal(st.records, 2);
	assert_true(st.bytes_used >= 5);

	f.name = name;
	assert_int_equal(tdbc_table_list(c, list_fn, &f), 0);
	assert_int_equal(f.seen, 1);
	assert_int_equal(f.st.records, 2);
	/* fn's nonzero stops the walk and is returned */
	assert_int_equal(tdbc_table_list(c, list_stop, &calls), 42);
	assert_int_equal(calls, 1);

	assert_int_equal(tdbc_table_open(c, "no-such-table", &t2), -ENOENT);
	assert_null(t2);
	assert_int_equal(tdbc_table_stat(c, "no-such-table", &st), -ENOENT);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(tdbc_table_drop(c, "no-such-table"), -ENOENT);

	assert_int_equal(tdbc_table_drop(c, name), 0);
	assert_int_equal(tdbc_table_stat(c, name, &st), -ENOENT);
	/* the handle outlives its table: calls fail with -ENOENT */
	assert_int_equal(get_str(t, NULL, "a", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tdbc_put(t, NULL, "a", 1, "x", 1, 0), -ENOENT);
	f.seen = 0;
	assert_int_equal(tdbc_table_list(c, list_fn, &f), 0);
	assert_int_equal(f.seen, 0);
	tdbc_table_close(t);
	/* re-created under the same name: empty */
	assert_int_equal(tdbc_table_create(c, name, NULL), 0);
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.mode, 0600);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* --- put, get, del ------------------------------------------------------ */

static void test_data(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	char name[80], buf[64];
	void *v = NULL;
	size_t need = 0;
	long n;

	t = fresh_table(c, m, "data", name);
	put_ok(t, "key", "hello world");
	assert_int_equal(get_str(t, NULL, "key", buf, sizeof(buf)), 11);
	assert_string_equal(buf, "hello world");
	/* a buffer too small: -ENOBUFS and the length */
	assert_int_equal(tdbc_get(t, NULL, "key", 3, buf, 4, &need), -ENOBUFS);
	assert_int_equal(need, 11);
	assert_int_equal(tdbc_get(t, NULL, "key", 3, NULL, 0, &need),
			 -ENOBUFS);
	assert_int_equal(need, 11);
	assert_int_equal(tdbc_get(t, NULL, "key", 3, buf, 11, NULL), 11);
	/* get_alloc */
	n = tdbc_get_alloc(t, NULL, "key", 3, &v);
	assert_int_equal(n, 11);
	assert_memory_equal(v, "hello world", 11);
	free(v);
	/* replace; NOOVERWRITE refuses a present key */
	put_ok(t, "key", "v2");
	assert_int_equal(tdbc_put(t, NULL, "key", 3, "v3", 2, TDBC_NOOVERWRITE),
			 -EEXIST);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(get_str(t, NULL, "key", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "v2");
	assert_int_equal(tdbc_put(t, NULL, "new", 3, "n", 1, TDBC_NOOVERWRITE),
			 0);
	/* the empty value */
	assert_int_equal(tdbc_put(t, NULL, "empty", 5, NULL, 0, 0), 0);
	assert_int_equal(tdbc_get(t, NULL, "empty", 5, buf, sizeof(buf), NULL),
			 0);
	assert_int_equal(tdbc_get_alloc(t, NULL, "empty", 5, &v), 0);
	assert_non_null(v);
	free(v);
	/* binary keys, the longest key */
	{
		unsigned char k[4096];
		size_t i;

		for (i = 0; i < sizeof(k); i++)
			k[i] = (unsigned char)(i * 7);
		assert_int_equal(tdbc_put(t, NULL, k, sizeof(k), "long", 4, 0),
				 0);
		assert_int_equal(tdbc_get(t, NULL, k, sizeof(k), buf,
					  sizeof(buf), NULL), 4);
		assert_int_equal(tdbc_del(t, NULL, k, sizeof(k)), 0);
	}
	/* delete */
	assert_int_equal(tdbc_del(t, NULL, "key", 3), 0);
	assert_int_equal(tdbc_get(t, NULL, "key", 3, buf, sizeof(buf), NULL),
			 -ENOENT);
	assert_int_equal(tdbc_get_alloc(t, NULL, "key", 3, &v), -ENOENT);
	assert_null(v);
	assert_int_equal(tdbc_del(t, NULL, "key", 3), -ENOENT);
	/* errmsg is kept until the next failure */
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* 1 MiB values, the largest there are: 17 fragments each way. */
static void test_big_values(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned char *val = malloc(TDB_VALUE_MAX + 1), *out;
	struct tdbc_table *t;
	char name[80];
	size_t i, need = 0;
	void *v = NULL;
	int round;

	assert_non_null(val);
	out = malloc(TDB_VALUE_MAX);
	assert_non_null(out);
	t = fresh_table(c, m, "big", name);
	for (round = 0; round < 3; round++) {
		char k[16];

		for (i = 0; i < TDB_VALUE_MAX; i++)
			val[i] = (unsigned char)(i * 31 + round);
		sprintf(k, "big%d", round);
		assert_int_equal(tdbc_put(t, NULL, k, strlen(k), val,
					  TDB_VALUE_MAX, 0), 0);
		assert_int_equal(tdbc_get_alloc(t, NULL, k, strlen(k), &v),
				 TDB_VALUE_MAX);
		assert_memory_equal(v, val, TDB_VALUE_MAX);
		free(v);
		memset(out, 0, TDB_VALUE_MAX);
		assert_int_equal(tdbc_get(t, NULL, k, strlen(k), out,
					  TDB_VALUE_MAX, NULL), TDB_VALUE_MAX);
		assert_memory_equal(out, val, TDB_VALUE_MAX);
		assert_int_equal(tdbc_get(t, NULL, k, strlen(k), out,
					  TDB_VALUE_MAX - 1, &need), -ENOBUFS);
		assert_int_equal(need, TDB_VALUE_MAX);
	}
	/* one byte more is refused here, not by the daemon */
	assert_int_equal(tdbc_put(t, NULL, "over", 4, val, TDB_VALUE_MAX + 1,
				  0), -E2BIG);
	/* a value that is exactly one fragment, and one byte more */
	assert_int_equal(tdbc_put(t, NULL, "f1", 2, val, 65528, 0), 0);
	assert_int_equal(tdbc_put(t, NULL, "f2", 2, val, 65529, 0), 0);
	assert_int_equal(tdbc_get(t, NULL, "f1", 2, out, TDB_VALUE_MAX, NULL),
			 65528);
	assert_int_equal(tdbc_get(t, NULL, "f2", 2, out, TDB_VALUE_MAX, NULL),
			 65529);
	assert_memory_equal(out, val, 65529);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_table_close(t);
	free(val);
	free(out);
	tdbc_close(c);
}

/* --- transactions ------------------------------------------------------- */

static void test_txn(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	struct tdbc_table *t, *t2, *u;
	struct tdbc_txn *x;
	char name[80], name2[80], buf[32];

	t = fresh_table(c, m, "txn", name);
	u = fresh_table(c, m, "txn2", name2);
	assert_int_equal(tdbc_table_open(c2, name, &t2), 0);

	/* commit: all visible, over two tables */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "a", 1, "1", 1, 0), 0);
	assert_int_equal(tdbc_put(u, x, "b", 1, "2", 1, 0), 0);
	/* the transaction sees its own change; nobody else does yet */
	assert_int_equal(get_str(t, x, "a", buf, sizeof(buf)), 1);
	assert_int_equal(get_str(t, NULL, "a", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(get_str(t2, NULL, "a", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(get_str(t2, NULL, "a", buf, sizeof(buf)), 1);
	assert_int_equal(get_str(u, NULL, "b", buf, sizeof(buf)), 1);

	/* abort: nothing */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "c", 1, "3", 1, 0), 0);
	assert_int_equal(tdbc_del(t, x, "a", 1), 0);
	assert_int_equal(get_str(t, x, "a", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tdbc_txn_abort(x), 0);
	assert_int_equal(get_str(t, NULL, "c", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(get_str(t, NULL, "a", buf, sizeof(buf)), 1);

	/* a no-overwrite conflict fails the whole commit */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "y", 1, "new", 3, 0), 0);
	assert_int_equal(tdbc_del(u, x, "b", 1), 0);
	assert_int_equal(tdbc_put(t, x, "a", 1, "9", 1, TDBC_NOOVERWRITE), 0);
	assert_int_equal(tdbc_txn_commit(x), -EEXIST);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(get_str(t, NULL, "y", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(get_str(u, NULL, "b", buf, sizeof(buf)), 1);
	assert_int_equal(get_str(t, NULL, "a", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1");

	/* a transaction of another connection is refused locally */
	assert_int_equal(tdbc_txn_begin(c2, &x), 0);
	assert_int_equal(tdbc_put(t, x, "z", 1, "z", 1, 0), -EINVAL);
	assert_int_equal(tdbc_txn_abort(x), 0);
	/* left open: freed (and aborted by tdbd) at close */
	assert_int_equal(tdbc_txn_begin(c2, &x), 0);
	assert_int_equal(tdbc_put(t2, x, "open", 4, "o", 1, 0), 0);
	tdbc_close(c2);
	assert_int_equal(get_str(t, NULL, "open", buf, sizeof(buf)), -ENOENT);

	assert_int_equal(tdbc_table_drop(c, name), 0);
	assert_int_equal(tdbc_table_drop(c, name2), 0);
	tdbc_close(c);     /* frees t and u */
}

/* --- scans -------------------------------------------------------------- */

struct scan_count {
	unsigned int n, dup, bad;
};

/* Scan t (prefix, limit) and count keys k%05u (seen[] marks them). */
static void scan_keys(struct tdbc_table *t, const char *prefix,
		      uint64_t limit, unsigned int nk, unsigned char *seen,
		      struct scan_count *sc)
{
	struct tdbc_scan *s = NULL;
	const void *k, *v;
	size_t kl, vl;
	int r;

	memset(sc, 0, sizeof(*sc));
	memset(seen, 0, nk);
	assert_int_equal(tdbc_scan_open(t, prefix, prefix ? strlen(prefix) : 0,
					limit, &s), 0);
	while ((r = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		char key[32], want[32];
		unsigned int i;

		sc->n++;
		if (kl >= sizeof(key) || kl < 6 || ((const char *)k)[0] != 'k') {
			sc->bad++;
			continue;
		}
		memcpy(key, k, kl);
		key[kl] = '\0';
		i = (unsigned int)atoi(key + 1);
		sprintf(want, "value-%u", i);
		if (i >= nk || vl != strlen(want) || memcmp(v, want, vl) ||
		    (prefix && strncmp(key, prefix, strlen(prefix))))
			sc->bad++;
		else if (seen[i]++)
			sc->dup++;
	}
	assert_int_equal(r, 0);
	/* after the end it stays at the end */
	assert_int_equal(tdbc_scan_next(s, &k, &kl, &v, &vl), 0);
	tdbc_scan_close(s);
}

static void test_scan(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned int nk = n_keys(), i, want;
	unsigned char *seen = calloc(nk, 1);
	struct tdbc_table *t;
	struct scan_count sc;
	struct tdbc_scan *s;
	char name[80], buf[32];
	const void *k;
	size_t kl;

	assert_non_null(seen);
	t = fresh_table(c, m, "scan", name);
	for (i = 0; i < nk; i++) {
		char key[16], val[32];

		sprintf(key, "k%05u", i);
		sprintf(val, "value-%u", i);
		put_ok(t, key, val);
	}
	for (i = 0; i < 100; i++) {     /* keys no prefix below matches */
		char key[16];

		sprintf(key, "other%u", i);
		put_ok(t, key, "x");
	}
	/* everything: each key exactly once */
	scan_keys(t, NULL, 0, nk, seen, &sc);
	assert_int_equal(sc.n, nk + 100);
	assert_int_equal(sc.bad, 100);   /* the "other" keys */
	assert_int_equal(sc.dup, 0);
	assert_null(memchr(seen, 0, nk));
	/* a prefix: k01... = keys 1000..1999 */
	scan_keys(t, "k01", 0, nk, seen, &sc);
	want = nk > 2000 ? 1000 : nk > 1000 ? nk - 1000 : 0;
	assert_int_equal(sc.n, want);
	assert_int_equal(sc.bad + sc.dup, 0);
	/* a limit: exactly that many, different keys (crosses batches) */
	scan_keys(t, "k", 1000, nk, seen, &sc);
	assert_int_equal(sc.n, nk < 1000 ? nk : 1000);
	assert_int_equal(sc.bad + sc.dup, 0);
	scan_keys(t, "k", 257, nk, seen, &sc);
	assert_int_equal(sc.n, nk < 257 ? nk : 257);
	assert_int_equal(sc.bad + sc.dup, 0);
	/* a prefix nothing has */
	scan_keys(t, "zzz", 0, nk, seen, &sc);
	assert_int_equal(sc.n, 0);
	/* close early, then the connection works as before */
	assert_int_equal(tdbc_scan_open(t, NULL, 0, 0, &s), 0);
	assert_int_equal(tdbc_scan_next(s, &k, &kl, NULL, NULL), 1);
	assert_int_equal(tdbc_scan_next(s, &k, &kl, NULL, NULL), 1);
	tdbc_scan_close(s);
	assert_int_equal(get_str(t, NULL, "k00001", buf, sizeof(buf)), 7);
	/* several scans open at once, interleaved */
	{
		struct tdbc_scan *a, *b;
		unsigned int na = 0, nb = 0;

		assert_int_equal(tdbc_scan_open(t, "k00", 3, 0, &a), 0);
		assert_int_equal(tdbc_scan_open(t, "other", 5, 0, &b), 0);
		for (;;) {
			int ra = tdbc_scan_next(a, &k, &kl, NULL, NULL);
			int rb = tdbc_scan_next(b, &k, &kl, NULL, NULL);

			assert_true(ra >= 0 && rb >= 0);
			na += (unsigned int)ra;
			nb += (unsigned int)rb;
			if (!ra && !rb)
				break;
		}
		assert_int_equal(na, nk < 1000 ? nk : 1000);
		assert_int_equal(nb, 100);
		tdbc_scan_close(a);
		/* b is left open: tdbc_close frees it */
	}
	/* the scan of a missing table fails at open */
	assert_int_equal(tdbc_table_drop(c, name), 0);
	assert_int_equal(tdbc_scan_open(t, NULL, 0, 0, &s), -ENOENT);
	assert_null(s);
	free(seen);
	tdbc_close(c);
}

/* Keys deleted and added while a scan runs: every key present for the
 * whole scan comes exactly once.  Each key is deleted (by another
 * connection) as soon as the scan returns it, so the key each batch's
 * cursor names is always gone when the next batch starts. */
static void test_scan_concurrent(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	unsigned int nk = n_keys(), i, n = 0, dup = 0, added = 0;
	unsigned char *seen = calloc(nk, 1);
	struct tdbc_table *t, *t2;
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	char name[80];
	int r;

	assert_non_null(seen);
	t = fresh_table(c, m, "scanc", name);
	assert_int_equal(tdbc_table_open(c2, name, &t2), 0);
	for (i = 0; i < nk; i++) {
		char key[16];

		sprintf(key, "k%05u", i);
		put_ok(t, key, "v");
	}
	assert_int_equal(tdbc_scan_open(t, NULL, 0, 0, &s), 0);
	while ((r = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		char key[16];

		assert_true(kl == 6);
		memcpy(key, k, kl);
		key[kl] = '\0';
		if (key[0] == 'n')
			continue;       /* added meanwhile: may come or not */
		i = (unsigned int)atoi(key + 1);
		assert_true(i < nk);
		dup += seen[i]++ > 0;
		n++;
		assert_int_equal(tdbc_del(t2, NULL, key, kl), 0);
		if (i % 3 == 0) {
			sprintf(key, "n%05u", i);
			put_ok(t2, key, "new");
			added++;
		}
	}
	assert_int_equal(r, 0);
	tdbc_scan_close(s);
	assert_int_equal(dup, 0);
	assert_int_equal(n, nk);
	assert_null(memchr(seen, 0, nk));
	{
		struct tdbc_table_stat st;

		assert_int_equal(tdbc_table_stat(c, name, &st), 0);
		assert_int_equal(st.records, added);
	}
	assert_int_equal(tdbc_table_drop(c, name), 0);
	free(seen);
	tdbc_close(c2);
	tdbc_close(c);
}

/* --- watches ------------------------------------------------------------ */

static void expect_event(struct tdbc_watch *w, enum tdbc_event_kind kind,
			 const char *key, const char *val, uint32_t *seq)
{
	struct tdbc_event ev;
	int r = tdbc_watch_next(w, &ev, 5000, NULL);

	if (r != 1)
		fail_msg("watch_next: %d, waiting for %s", r, key ? key : "-");
	assert_int_equal(ev.kind, kind);
	if (key) {
		assert_int_equal(ev.klen, strlen(key));
		assert_memory_equal(ev.key, key, ev.klen);
	}
	if (val) {
		assert_int_equal(ev.vlen, strlen(val));
		assert_memory_equal(ev.val, val, ev.vlen);
	}
	/* in order */
	if (*seq)
		assert_true((int32_t)(ev.seq - *seq) > 0);
	*seq = ev.seq;
}

static void test_watch(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	struct tdbc_watch *w, *all;
	struct tdbc_table *t, *t2;
	struct tdbc_event ev;
	struct timespec t0, t1;
	uint32_t seq = 0, seq_all = 0;
	char name[80];
	int i;

	t = fresh_table(c, m, "watch", name);
	assert_int_equal(tdbc_table_open(c2, name, &t2), 0);
	assert_int_equal(tdbc_watch(t, "w/", 2, &w), 0);
	assert_int_equal(tdbc_watch(t, NULL, 0, &all), 0);
	/* nothing yet: 0 at once, and 0 after a timeout */
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tdbc_watch_next(w, &ev, 150, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 140);

	/* changes from this connection and another, in order */
	put_ok(t, "w/1", "one");
	put_ok(t2, "x/1", "filtered");
	assert_int_equal(tdbc_del(t2, NULL, "w/1", 3), 0);
	put_ok(t2, "w/2", "two");
	expect_event(w, TDBC_EV_PUT, "w/1", "one", &seq);
	expect_event(w, TDBC_EV_DEL, "w/1", NULL, &seq);
	expect_event(w, TDBC_EV_PUT, "w/2", "two", &seq);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	/* the unfiltered watch saw all four */
	expect_event(all, TDBC_EV_PUT, "w/1", "one", &seq_all);
	expect_event(all, TDBC_EV_PUT, "x/1", "filtered", &seq_all);
	expect_event(all, TDBC_EV_DEL, "w/1", NULL, &seq_all);
	expect_event(all, TDBC_EV_PUT, "w/2", "two", &seq_all);

	/* a committed transaction shows up too */
	{
		struct tdbc_txn *x;

		assert_int_equal(tdbc_txn_begin(c2, &x), 0);
		assert_int_equal(tdbc_put(t2, x, "w/3", 3, "three", 5, 0), 0);
		assert_int_equal(tdbc_put(t2, x, "w/4", 3, "four", 4, 0), 0);
		assert_int_equal(tdbc_watch_next(w, &ev, 50, NULL), 0);
		assert_int_equal(tdbc_txn_commit(x), 0);
		expect_event(w, TDBC_EV_PUT, "w/3", "three", &seq);
		expect_event(w, TDBC_EV_PUT, "w/4", "four", &seq);
	}
	/* many, with a 1 MiB value among them */
	{
		unsigned char *big = calloc(1, TDB_VALUE_MAX);

		assert_non_null(big);
		big[TDB_VALUE_MAX - 1] = 7;
		assert_int_equal(tdbc_put(t2, NULL, "w/big", 5, big,
					  TDB_VALUE_MAX, 0), 0);
		for (i = 0; i < 200; i++) {
			char k[16];

			sprintf(k, "w/n%d", i);
			put_ok(t2, k, "n");
		}
		assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
		assert_int_equal(ev.kind, TDBC_EV_PUT);
		assert_int_equal(ev.vlen, TDB_VALUE_MAX);
		assert_memory_equal(ev.val, big, TDB_VALUE_MAX);
		for (i = 0; i < 200; i++) {
			char k[16];

			sprintf(k, "w/n%d", i);
			expect_event(w, TDBC_EV_PUT, k, "n", &seq);
		}
		free(big);
	}
	tdbc_watch_close(all);
	/* drop: a DROP event, then -ENOENT */
	assert_int_equal(tdbc_table_drop(c2, name), 0);
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_DROP);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), -ENOENT);
	tdbc_watch_close(w);
	/* watching a missing table fails */
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), -ENOENT);
	assert_null(w);
	/* the connection still works after all that */
	{
		struct tdbc_stats st;

		assert_int_equal(tdbc_stats(c, &st), 0);
	}
	tdbc_close(c2);
	tdbc_close(c);
}

/* A watcher that falls a feed behind gets -EOVERFLOW once, then goes on. */
static void test_watch_overflow(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned char *val = calloc(1, 65536);
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	uint64_t lost = 0;
	char name[80];
	int i, r, n = 0;

	assert_non_null(val);
	t = fresh_table(c, m, "lap", name);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
	/* one change read first: the reader then knows where it is, so
	 * it can count what it loses (a reader lapped before its first
	 * message gets -EOVERFLOW with lost = 0, "unknown") */
	put_ok(t, "first", "1");
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	/* 64 MiB of changes through a feed of a few MiB */
	for (i = 0; i < 1024; i++) {
		char k[16];

		sprintf(k, "k%d", i);
		assert_int_equal(tdbc_put(t, NULL, k, strlen(k), val, 65536, 0),
				 0);
	}
	r = tdbc_watch_next(w, &ev, 1000, &lost);
	assert_int_equal(r, -EOVERFLOW);
	assert_true(lost > 0);
	assert_true(lost < 1024);
	assert_non_null(strstr(tdbc_errmsg(c), "lost"));
	/* once: then the intact rest, in order, up to the last change */
	while ((r = tdbc_watch_next(w, &ev, 0, NULL)) == 1) {
		n++;
		if (ev.klen == 5 && !memcmp(ev.key, "k1023", 5))
			break;
	}
	assert_int_equal(r, 1);
	assert_true(n > 0);
	assert_true(n + lost <= 1024);
	tdbc_watch_close(w);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	free(val);
	tdbc_close(c);
}

/* --- stats -------------------------------------------------------------- */

static void test_stats(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_stats a, b;
	struct tdbc_table *t;
	char name[80];

	t = fresh_table(c, m, "stats", name);
	assert_int_equal(tdbc_stats(c, &a), 0);
	assert_true(a.tables >= 1);
	assert_true(a.clients >= 1);
	assert_true(a.requests >= 2);
	assert_true(a.uptime_ms > 0);
	assert_true(a.accepted >= 1);
	if (RINGS(m))
		assert_true(a.rings >= 2);
	assert_int_equal(tdbc_put(t, NULL, "", 0, "v", 1, 0), -EINVAL);
	assert_int_equal(tdbc_get(t, NULL, "nope", 4, NULL, 0, NULL), -ENOENT);
	assert_int_equal(tdbc_stats(c, &b), 0);
	/* the GET and the STATS itself; the empty key never left */
	assert_true(b.requests >= a.requests + 2);
	assert_true(b.errors >= a.errors + 1);
	assert_true(b.uptime_ms >= a.uptime_ms);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* --- async -------------------------------------------------------------- */

struct expect {
	int res;
	char val[24];
	bool done;
};

/* Submit all of reqs (partial submits: reap and retry), reaping into
 * ex[] (indexed by user), mixing in blocking GETs of "probe". */
static void run_async(struct tdbc *c, struct tdbc_table *t,
		      struct tdbc_req *reqs, unsigned int n,
		      struct expect *ex)
{
	struct tdbc_cqe cqe[64];
	unsigned int sent = 0, got = 0, i;
	int k;

	while (got < n) {
		if (sent < n) {
			unsigned int chunk = n - sent < 500 ? n - sent : 500;

			k = tdbc_submit(c, reqs + sent, chunk);
			assert_true(k > 0 || k == -EAGAIN);
			if (k > 0)
				sent += (unsigned int)k;
		}
		assert_int_equal(tdbc_inflight(c), sent - got);
		if (sent % 7 == 0) {
			char buf[16];

			/* a blocking call with requests in flight */
			assert_int_equal(get_str(t, NULL, "probe", buf,
						 sizeof(buf)), 5);
		}
		k = tdbc_reap(c, cqe, 64, sent > got ? 1 : 0, 5000);
		assert_true(k >= 0);
		for (i = 0; i < (unsigned int)k; i++) {
			struct expect *e = &ex[cqe[i].user];

			assert_true(cqe[i].user < n);
			assert_false(e->done);
			e->done = true;
			if (cqe[i].res != e->res)
				fail_msg("req %llu: res %d, want %d",
					 (unsigned long long)cqe[i].user,
					 cqe[i].res, e->res);
			if (e->val[0]) {
				assert_int_equal(cqe[i].vlen, strlen(e->val));
				assert_memory_equal(cqe[i].val, e->val,
						    cqe[i].vlen);
			}
		}
		got += (unsigned int)k;
	}
	assert_int_equal(tdbc_inflight(c), 0);
}

static void test_async(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned int nk = n_keys(), i;
	struct tdbc_req *reqs = calloc(nk, sizeof(*reqs));
	struct expect *ex = calloc(nk, sizeof(*ex));
	char (*keys)[16] = calloc(nk, 16), (*vals)[24] = calloc(nk, 24);
	struct tdbc_cqe cqe[4];
	struct tdbc_table *t;
	char name[80], buf[32];

	assert_true(reqs && ex && keys && vals);
	t = fresh_table(c, m, "async", name);
	put_ok(t, "probe", "probe");
	/* round 1: puts (every 10th no-overwrite of a present key) */
	for (i = 0; i < nk; i++) {
		sprintf(keys[i], "a%u", i);
		sprintf(vals[i], "val-%u", i);
		reqs[i] = (struct tdbc_req){ .op = TDBC_OP_PUT, .table = t,
			.key = keys[i], .klen = strlen(keys[i]),
			.val = vals[i], .vlen = strlen(vals[i]), .user = i };
		ex[i].res = 0;
		if (i % 10 == 9) {
			reqs[i].key = "probe";
			reqs[i].klen = 5;
			reqs[i].flags = TDBC_NOOVERWRITE;
			ex[i].res = -EEXIST;
		}
	}
	run_async(c, t, reqs, nk, ex);
	/* round 2: mixed gets (present, absent), dels, puts */
	memset(ex, 0, nk * sizeof(*ex));
	for (i = 0; i < nk; i++) {
		unsigned int j = i;

		reqs[i] = (struct tdbc_req){ .table = t, .key = keys[j],
			.klen = strlen(keys[j]), .user = i };
		switch (i % 4) {
		case 0:         /* get of a present key */
			reqs[i].op = TDBC_OP_GET;
			if (j % 10 == 9) {
				ex[i].res = -ENOENT;
			} else {
				strcpy(ex[i].val, vals[j]);
			}
			break;
		case 1:         /* get of an absent key */
			reqs[i].op = TDBC_OP_GET;
			reqs[i].key = "absent";
			reqs[i].klen = 6;
			ex[i].res = -ENOENT;
			break;
		case 2:         /* del */
			reqs[i].op = TDBC_OP_DEL;
			ex[i].res = j % 10 == 9 ? -ENOENT : 0;
			break;
		case 3:         /* put */
			reqs[i].op = TDBC_OP_PUT;
			reqs[i].val = "new";
			reqs[i].vlen = 3;
			break;
		}
	}
	run_async(c, t, reqs, nk, ex);
	for (i = 0; i < nk; i++) {
		long n = get_str(t, NULL, keys[i], buf, sizeof(buf));

		if (i % 10 == 9 && i % 4 != 3)
			assert_int_equal(n, -ENOENT);
		else if (i % 4 == 2)
			assert_int_equal(n, -ENOENT);
		else if (i % 4 == 3)
			assert_string_equal(buf, "new");
		else
			assert_string_equal(buf, vals[i]);
	}
	/* in a transaction: invisible until the commit */
	{
		struct tdbc_txn *x;
		struct tdbc_req r = { .op = TDBC_OP_PUT, .table = t,
				      .key = "tx", .klen = 2, .val = "v",
				      .vlen = 1, .user = 77 };

		assert_int_equal(tdbc_txn_begin(c, &x), 0);
		r.txn = x;
		assert_int_equal(tdbc_submit(c, &r, 1), 1);
		assert_int_equal(tdbc_reap(c, cqe, 4, 1, 5000), 1);
		assert_int_equal(cqe[0].user, 77);
		assert_int_equal(cqe[0].res, 0);
		assert_int_equal(get_str(t, NULL, "tx", buf, sizeof(buf)),
				 -ENOENT);
		assert_int_equal(tdbc_txn_commit(x), 0);
		assert_int_equal(get_str(t, NULL, "tx", buf, sizeof(buf)), 1);
	}
	/* a bad request after good ones: the good prefix is queued */
	{
		struct tdbc_req r[3] = {
			{ .op = TDBC_OP_GET, .table = t, .key = "tx",
			  .klen = 2, .user = 1 },
			{ .op = TDBC_OP_GET, .table = t, .key = "tx",
			  .klen = 2, .user = 2 },
			{ .op = TDBC_OP_GET, .table = t, .key = "", .klen = 0,
			  .user = 3 },
		};

		assert_int_equal(tdbc_submit(c, r, 3), 2);
		assert_int_equal(tdbc_submit(c, r + 2, 1), -EINVAL);
		assert_int_equal(tdbc_reap(c, cqe, 4, 2, 5000), 2);
		assert_int_equal(cqe[0].res + cqe[1].res, 0);
		assert_int_equal(cqe[0].user + cqe[1].user, 3);
		/* nothing in flight: no wait at all */
		assert_int_equal(tdbc_reap(c, cqe, 4, 4, -1), 0);
	}
	/* a timeout with nothing to reap yet is not an error */
	{
		struct tdbc_req r = { .op = TDBC_OP_GET, .table = t,
				      .key = "tx", .klen = 2, .user = 5 };

		assert_int_equal(tdbc_submit(c, &r, 1), 1);
		assert_int_equal(tdbc_reap(c, cqe, 4, 1, 5000), 1);
		assert_int_equal(tdbc_reap(c, cqe, 4, 0, 20), 0);
	}
	/* left in flight at close: fine */
	assert_int_equal(tdbc_submit(c, reqs, 10), 10);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
	free(reqs);
	free(ex);
	free(keys);
	free(vals);
}

static int count_ring_maps(int *huge);

/* 1 MiB values through submit/reap: the submission ring (4 MiB) takes
 * only a few at once, so submits come back short and completions wait
 * for room in the completion ring. */
static void test_async_big(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned char *val = malloc(TDB_VALUE_MAX);
	struct tdbc_req reqs[24];
	struct tdbc_cqe cqe[8];
	struct tdbc_table *t;
	unsigned int i, sent, got, shorts = 0;
	char keys[24][8], name[80];
	int k, round;

	assert_non_null(val);
	t = fresh_table(c, m, "asyncbig", name);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 24; i++) {
			sprintf(keys[i], "b%u", i);
			reqs[i] = (struct tdbc_req){ .table = t,
				.op = round ? TDBC_OP_GET : TDBC_OP_PUT,
				.key = keys[i], .klen = strlen(keys[i]),
				.val = val, .vlen = TDB_VALUE_MAX, .user = i };
		}
		memset(val, round + 1, TDB_VALUE_MAX);
		sent = got = 0;
		while (got < 24) {
			if (sent < 24) {
				k = tdbc_submit(c, reqs + sent, 24 - sent);
				assert_true(k > 0 || k == -EAGAIN);
				if (k > 0)
					sent += (unsigned int)k;
				shorts += sent < 24;
			}
			k = tdbc_reap(c, cqe, 8, 1, 10000);
			assert_true(k > 0);
			for (i = 0; i < (unsigned int)k; i++) {
				assert_int_equal(cqe[i].res, 0);
				if (!round)
					continue;
				/* the values written in round 0 */
				assert_int_equal(cqe[i].vlen, TDB_VALUE_MAX);
				memset(val, 1, TDB_VALUE_MAX);
				assert_memory_equal(cqe[i].val, val,
						    TDB_VALUE_MAX);
			}
			got += (unsigned int)k;
		}
	}
	/* rings: 24 MiB cannot have fitted a 4 MiB ring at once */
	if (RINGS(m))
		assert_true(shorts > 0);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	free(val);
	tdbc_close(c);
}

/*
 * GETs in flight together (tdbd serves a ring round's consecutive GETs
 * as one batch): every one answered, in the order sent, with misses in
 * the middle, a second table and a GET inside a transaction between,
 * and values big enough (every 8th 512 KiB) that a batch's replies
 * cannot all fit the 4 MiB completion ring at once.
 */
#define AG_N 96
static void test_async_gets(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	size_t big = 512u << 10;
	unsigned char *val = malloc(big);
	struct tdbc_req reqs[AG_N];
	struct tdbc_cqe cqe[16];
	struct tdbc_table *t, *u;
	struct tdbc_txn *x;
	char keys[AG_N][8], name[80], name2[80];
	unsigned int i, sent = 0, got = 0;
	int k;

	assert_non_null(val);
	t = fresh_table(c, m, "agets", name);
	u = fresh_table(c, m, "agets2", name2);
	for (i = 0; i < AG_N; i++) {
		sprintf(keys[i], "g%u", i);
		memset(val, (int)(i & 0xff), big);
		if (i % 5 != 3)         /* g3, g8, ...: missing */
			assert_int_equal(tdbc_put(t, NULL, keys[i],
					 strlen(keys[i]), val,
					 i % 8 ? 16 + i : big, 0), 0);
	}
	put_ok(u, "g40", "other");
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "g50", 3, "mine", 4, 0), 0);
	for (i = 0; i < AG_N; i++)
		reqs[i] = (struct tdbc_req){ .op = TDBC_OP_GET,
			.table = i == 40 ? u : t, .txn = i == 50 ? x : NULL,
			.key = keys[i], .klen = strlen(keys[i]), .user = i };
	while (got < AG_N) {
		if (sent < AG_N) {
			k = tdbc_submit(c, reqs + sent, AG_N - sent);
			assert_true(k > 0 || k == -EAGAIN);
			if (k > 0)
				sent += (unsigned int)k;
		}
		k = tdbc_reap(c, cqe, 16, 1, 10000);
		assert_true(k > 0);
		for (i = 0; i < (unsigned int)k; i++, got++) {
			const struct tdbc_cqe *e = &cqe[i];
			size_t want = got % 8 ? 16 + got : big;

			assert_int_equal(e->user, got);         /* in order */
			if (got == 40) {
				assert_int_equal(e->res, 0);
				assert_int_equal(e->vlen, 5);
				assert_memory_equal(e->val, "other", 5);
			} else if (got == 50) {
				assert_int_equal(e->res, 0);
				assert_int_equal(e->vlen, 4);
				assert_memory_equal(e->val, "mine", 4);
			} else if (got % 5 == 3) {
				assert_int_equal(e->res, -ENOENT);
			} else {
				assert_int_equal(e->res, 0);
				assert_int_equal(e->vlen, want);
				memset(val, (int)(got & 0xff), want);
				assert_memory_equal(e->val, val, want);
			}
		}
	}
	assert_int_equal(tdbc_txn_abort(x), 0);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	assert_int_equal(tdbc_table_drop(c, name2), 0);
	free(val);
	tdbc_close(c);
}

/* The rings are mapped (header and data, each ring), unmapped at close,
 * and with hugepages they are hugetlb memfds. */
static void test_ring_pages(void **state)
{
	const struct mode *m = *state;
	const char *want = getenv("TDBC_E2E_EXPECT_HUGEPAGES");
	struct tdbc *c;
	int before, rings, huge;

	if (!RINGS(m))
		skip();
	before = count_ring_maps(&huge);
	c = conn(m);
	rings = count_ring_maps(&huge) - before;
	/* header and data of each ring */
	assert_int_equal(rings, 4);
	if (want && !strcmp(want, "1"))
		assert_true(huge >= 4);
	tdbc_close(c);
	assert_int_equal(count_ring_maps(&huge), before);
}

/* Mappings of ring memfds in this process; *huge: how many of them are
 * backed by 2 MiB pages. */
static int count_ring_maps(int *huge)
{
	char line[512];
	bool in_ring = false;
	int rings = 0;
	FILE *f;

	*huge = 0;
	f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in_ring = strstr(line, "tdb-sub") ||
				  strstr(line, "tdb-comp");
			rings += in_ring;
			continue;
		}
		if (in_ring && !strncmp(line, "KernelPageSize:", 15))
			*huge += strstr(line, " 2048 kB") != NULL;
	}
	fclose(f);
	return rings;
}

/* --- versions, conditions, atomic updates (issue 24) ---------------------- */

/* The version of k (0 if absent), through tdbc_get_ver. */
static uint64_t ver_of(struct tdbc_table *t, struct tdbc_txn *x,
		       const char *k)
{
	char buf[64];
	uint64_t v = 77;
	long n = tdbc_get_ver(t, x, k, strlen(k), buf, sizeof(buf), NULL, &v);

	if (n < 0) {
		assert_int_equal(n, -ENOENT);
		assert_int_equal(v, 0);
	} else {
		assert_true(v > 0);
	}
	return n < 0 ? 0 : v;
}

/* tdbc_get_ref_ver in a read section: the value and version of k. */
static uint64_t ref_ver_of(struct tdbc *c, struct tdbc_table *t,
			   const char *k, const char *want)
{
	const void *val = NULL;
	size_t vlen = 0;
	uint64_t v = 0;
	int err, tries;

	for (tries = 0; tries < 100; tries++) {
		assert_int_equal(tdbc_read_begin(c), 0);
		err = tdbc_get_ref_ver(t, k, strlen(k), &val, &vlen, &v);
		if (!err && want) {
			assert_int_equal(vlen, strlen(want));
			assert_memory_equal(val, want, vlen);
		}
		if (tdbc_read_end(c) == 0)
			break;
	}
	if (want)
		assert_int_equal(err, 0);
	else
		assert_int_equal(err, -ENOENT);
	return v;
}

static void test_versions(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *cr;
	struct tdbc_table *t, *tr;
	struct tdbc_txn *x;
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kn, vn;
	uint64_t v1, v2, v3, v4, sv;
	char name[80], buf[64], msg[256];
	int found = 0;

	t = fresh_table(c, m, "ver", name);
	/* another connection reading through the rings only */
	assert_int_equal(tdbc_connect(&cr, g_daemon.sock,
				      RINGS(m) ? TDBC_NO_MAP : TDBC_NO_RINGS,
				      msg, sizeof(msg)), 0);
	assert_int_equal(tdbc_table_open(cr, name, &tr), 0);
	assert_false(tdbc_table_mapped(tr));

	assert_int_equal(ver_of(t, NULL, "k"), 0);
	put_ok(t, "k", "one");
	v1 = ver_of(t, NULL, "k");
	assert_true(v1 > 0);
	/* the map and the rings agree */
	assert_int_equal(ver_of(tr, NULL, "k"), v1);
	assert_int_equal(ref_ver_of(c, t, "k", "one"), v1);
	assert_int_equal(ref_ver_of(cr, tr, "k", "one"), v1);
	/* every write moves it up */
	put_ok(t, "k", "two");
	v2 = ver_of(t, NULL, "k");
	assert_true(v2 > v1);
	put_ok(t, "k", "two");          /* the same bytes: a write still */
	v3 = ver_of(t, NULL, "k");
	assert_true(v3 > v2);
	assert_int_equal(ver_of(tr, NULL, "k"), v3);
	assert_int_equal(ref_ver_of(c, t, "k", "two"), v3);
	/* deleted, then written again: a new, higher one */
	assert_int_equal(tdbc_del(t, NULL, "k", 1), 0);
	assert_int_equal(ver_of(t, NULL, "k"), 0);
	assert_int_equal(ref_ver_of(c, t, "k", NULL), 0);
	put_ok(t, "k", "one");
	v4 = ver_of(t, NULL, "k");
	assert_true(v4 > v3);
	/* get_ver with a small buffer: -ENOBUFS, no version */
	v1 = 5;
	assert_int_equal(tdbc_get_ver(t, NULL, "k", 1, buf, 1, NULL, &v1),
			 -ENOBUFS);
	assert_int_equal(v1, 0);
	/* NULL version: plain tdbc_get */
	assert_int_equal(tdbc_get_ver(t, NULL, "k", 1, buf, sizeof(buf), NULL,
				      NULL), 3);

	/* a scan carries them */
	put_ok(t, "other", "o");
	assert_int_equal(tdbc_scan_open(t, NULL, 0, 0, &s), 0);
	while (tdbc_scan_next_ver(s, &k, &kn, &v, &vn, &sv) == 1) {
		char key[16] = "";

		assert_true(kn < sizeof(key));
		memcpy(key, k, kn);
		assert_int_equal(sv, ver_of(t, NULL, key));
		found++;
	}
	tdbc_scan_close(s);
	assert_int_equal(found, 2);

	/* a commit's changes share one version; in the transaction, a key
	 * it wrote has none yet, one it did not has the table's */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "a", 1, "1", 1, 0), 0);
	assert_int_equal(tdbc_put(t, x, "b", 1, "2", 1, 0), 0);
	assert_int_equal(tdbc_get_ver(t, x, "a", 1, buf, sizeof(buf), NULL,
				      &v1), 1);
	assert_int_equal(v1, 0);
	assert_int_equal(ver_of(t, x, "k"), v4);
	assert_int_equal(tdbc_txn_commit(x), 0);
	v1 = ver_of(t, NULL, "a");
	assert_true(v1 > v4);
	assert_int_equal(ver_of(t, NULL, "b"), v1);

	tdbc_close(cr);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

static void expect_event_ver(struct tdbc_watch *w, enum tdbc_event_kind kind,
			     const char *key, uint64_t *version)
{
	struct tdbc_event ev;
	int r = tdbc_watch_next(w, &ev, 5000, NULL);

	if (r != 1)
		fail_msg("watch_next: %d, waiting for %s", r, key);
	assert_int_equal(ev.kind, kind);
	assert_int_equal(ev.klen, strlen(key));
	assert_memory_equal(ev.key, key, ev.klen);
	*version = ev.version;
}

/* Watch events carry the write's version (tdbd only: WATCH). */
static void test_watch_versions(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_watch *w;
	uint64_t ev1, ev2, ev3;
	char name[80];

	t = fresh_table(c, m, "wver", name);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
	put_ok(t, "k", "v1");
	expect_event_ver(w, TDBC_EV_PUT, "k", &ev1);
	assert_int_equal(ev1, ver_of(t, NULL, "k"));
	assert_int_equal(tdbc_incr(t, NULL, "n", 1, 5, NULL), 0);
	expect_event_ver(w, TDBC_EV_PUT, "n", &ev2);
	assert_int_equal(ev2, ver_of(t, NULL, "n"));
	assert_true(ev2 > ev1);
	assert_int_equal(tdbc_del(t, NULL, "k", 1), 0);
	expect_event_ver(w, TDBC_EV_DEL, "k", &ev3);
	assert_true(ev3 > ev2);
	tdbc_watch_close(w);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

static void test_conditions(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_txn *x;
	uint64_t v1, v2;
	char name[80], buf[64];

	t = fresh_table(c, m, "cond", name);
	/* if-absent */
	assert_int_equal(tdbc_put_if(t, NULL, "k", 1, "a", 1, TDBC_IF_ABSENT,
				     0), 0);
	assert_int_equal(tdbc_put_if(t, NULL, "k", 1, "b", 1, TDBC_IF_ABSENT,
				     0), -EEXIST);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "a");
	/* if-present */
	assert_int_equal(tdbc_put_if(t, NULL, "nokey", 5, "b", 1,
				     TDBC_IF_PRESENT, 0), -ENOENT);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(get_str(t, NULL, "nokey", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tdbc_put(t, NULL, "k", 1, "b", 1, TDBC_IF_PRESENT),
			 0);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "b");
	/* if-version: compare and swap */
	v1 = ver_of(t, NULL, "k");
	assert_int_equal(tdbc_put_if(t, NULL, "k", 1, "c", 1, TDBC_IF_VERSION,
				     v1), 0);
	v2 = ver_of(t, NULL, "k");
	assert_true(v2 > v1);
	/* the old version no longer holds: nothing changes */
	assert_int_equal(tdbc_put_if(t, NULL, "k", 1, "d", 1, TDBC_IF_VERSION,
				     v1), -ECANCELED);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "c");
	assert_int_equal(ver_of(t, NULL, "k"), v2);
	/* an absent key has no version */
	assert_int_equal(tdbc_put_if(t, NULL, "nokey", 5, "d", 1,
				     TDBC_IF_VERSION, v2), -ECANCELED);
	assert_int_equal(get_str(t, NULL, "nokey", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(tdbc_del_if(t, NULL, "nokey", 5, TDBC_IF_VERSION,
				     v2), -ECANCELED);
	/* delete at a version */
	assert_int_equal(tdbc_del_if(t, NULL, "k", 1, TDBC_IF_VERSION, v1),
			 -ECANCELED);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_int_equal(tdbc_del_if(t, NULL, "k", 1, TDBC_IF_VERSION, v2), 0);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), -ENOENT);
	/* re-put: the old version does not come back */
	put_ok(t, "k", "e");
	assert_int_equal(tdbc_put_if(t, NULL, "k", 1, "f", 1, TDBC_IF_VERSION,
				     v2), -ECANCELED);

	/* in a transaction: checked at commit, with the rest */
	v1 = ver_of(t, NULL, "k");
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "side", 4, "s", 1, 0), 0);
	assert_int_equal(tdbc_put_if(t, x, "k", 1, "g", 1, TDBC_IF_VERSION,
				     v1 + 1000), 0);
	assert_int_equal(tdbc_txn_commit(x), -ECANCELED);
	assert_int_equal(get_str(t, NULL, "side", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "e");
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "side", 4, "s", 1, 0), 0);
	assert_int_equal(tdbc_put_if(t, x, "k", 1, "g", 1, TDBC_IF_VERSION,
				     v1), 0);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "g");
	assert_int_equal(get_str(t, NULL, "side", buf, sizeof(buf)), 1);
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "k2", 2, "s", 1, TDBC_IF_PRESENT), 0);
	assert_int_equal(tdbc_txn_commit(x), -ENOENT);
	assert_int_equal(get_str(t, NULL, "k2", buf, sizeof(buf)), -ENOENT);

	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

static void test_incr(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	struct tdbc_table *t, *t2;
	struct tdbc_txn *x;
	int64_t r = 0;
	uint64_t v1, v2;
	char name[80], buf[64];

	t = fresh_table(c, m, "incr", name);
	assert_int_equal(tdbc_table_open(c2, name, &t2), 0);
	/* absent counts as 0; the value is decimal text */
	assert_int_equal(tdbc_incr(t, NULL, "n", 1, 1, &r), 0);
	assert_int_equal(r, 1);
	assert_int_equal(get_str(t, NULL, "n", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1");
	v1 = ver_of(t, NULL, "n");
	assert_int_equal(tdbc_incr(t, NULL, "n", 1, 41, &r), 0);
	assert_int_equal(r, 42);
	v2 = ver_of(t, NULL, "n");
	assert_true(v2 > v1);
	assert_int_equal(tdbc_incr(t, NULL, "n", 1, -50, NULL), 0);
	assert_int_equal(get_str(t2, NULL, "n", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "-8");
	assert_int_equal(tdbc_incr(t, NULL, "n", 1, 0, &r), 0);
	assert_int_equal(r, -8);
	/* a value that is not such an integer: -EDOM, unchanged */
	put_ok(t, "s", "abc");
	v1 = ver_of(t, NULL, "s");
	assert_int_equal(tdbc_incr(t, NULL, "s", 1, 1, &r), -EDOM);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(get_str(t, NULL, "s", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "abc");
	assert_int_equal(ver_of(t, NULL, "s"), v1);
	put_ok(t, "s", "1.5");
	assert_int_equal(tdbc_incr(t, NULL, "s", 1, 1, NULL), -EDOM);
	/* overflow: -ERANGE, unchanged */
	put_ok(t, "big", "9223372036854775807");
	assert_int_equal(tdbc_incr(t, NULL, "big", 3, 1, NULL), -ERANGE);
	assert_int_equal(tdbc_incr(t, NULL, "big", 3, -1, &r), 0);
	assert_int_equal(r, INT64_MAX - 1);
	put_ok(t, "small", "-9223372036854775808");
	assert_int_equal(tdbc_incr(t, NULL, "small", 5, -1, NULL), -ERANGE);
	assert_int_equal(get_str(t, NULL, "small", buf, sizeof(buf)), 20);
	assert_string_equal(buf, "-9223372036854775808");
	assert_int_equal(tdbc_incr(t, NULL, "zero", 4, INT64_MIN, &r), 0);
	assert_int_equal(r, INT64_MIN);
	/* in a transaction: the sum at commit, not before */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_incr(t, x, "n", 1, 10, &r), 0);
	assert_int_equal(r, 2);
	assert_int_equal(tdbc_incr(t, x, "n", 1, 10, &r), 0);
	assert_int_equal(r, 12);
	assert_int_equal(get_str(t2, NULL, "n", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "-8");
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(get_str(t2, NULL, "n", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "12");
	/* interleaved from two connections: none lost */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(tdbc_incr(t, NULL, "c", 1, 1, NULL), 0);
		assert_int_equal(tdbc_incr(t2, NULL, "c", 1, 2, NULL), 0);
	}
	assert_int_equal(tdbc_incr(t, NULL, "c", 1, 0, &r), 0);
	assert_int_equal(r, 600);

	tdbc_close(c2);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* Serializable transactions: a key read and changed by another client
 * since fails the commit with -ESTALE, naming the table and key. */
static void test_txn_conflict(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	struct tdbc_table *t, *t2;
	struct tdbc_txn *x;
	char name[80], buf[64];
	int64_t r;

	t = fresh_table(c, m, "conflict", name);
	assert_int_equal(tdbc_table_open(c2, name, &t2), 0);
	put_ok(t, "acct", "100");
	put_ok(t, "other", "1");

	/* read, someone else writes, our commit fails: nothing applied */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(get_str(t, x, "acct", buf, sizeof(buf)), 3);
	assert_int_equal(tdbc_put(t2, NULL, "acct", 4, "90", 2, 0), 0);
	assert_int_equal(tdbc_put(t, x, "acct", 4, "110", 3, 0), 0);
	assert_int_equal(tdbc_put(t, x, "log", 3, "x", 1, 0), 0);
	assert_int_equal(tdbc_txn_commit(x), -ESTALE);
	assert_non_null(strstr(tdbc_errmsg(c), name));
	assert_non_null(strstr(tdbc_errmsg(c), "acct"));
	assert_int_equal(get_str(t, NULL, "acct", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "90");
	assert_int_equal(get_str(t, NULL, "log", buf, sizeof(buf)), -ENOENT);

	/* a key read as absent counts too */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(get_str(t, x, "ghost", buf, sizeof(buf)), -ENOENT);
	put_ok(t2, "ghost", "boo");
	assert_int_equal(tdbc_put(t, x, "log", 3, "x", 1, 0), 0);
	assert_int_equal(tdbc_txn_commit(x), -ESTALE);
	assert_non_null(strstr(tdbc_errmsg(c), "ghost"));
	assert_int_equal(get_str(t, NULL, "log", buf, sizeof(buf)), -ENOENT);

	/* read-only transactions validate too */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(get_str(t, x, "acct", buf, sizeof(buf)), 2);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(get_str(t, x, "acct", buf, sizeof(buf)), 2);
	assert_int_equal(tdbc_del(t2, NULL, "acct", 4), 0);
	assert_int_equal(tdbc_txn_commit(x), -ESTALE);

	/* INCR in a transaction reads its key */
	put_ok(t, "acct", "5");
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_incr(t, x, "acct", 4, 1, &r), 0);
	assert_int_equal(r, 6);
	assert_int_equal(tdbc_incr(t2, NULL, "acct", 4, 100, NULL), 0);
	assert_int_equal(tdbc_txn_commit(x), -ESTALE);
	assert_int_equal(get_str(t, NULL, "acct", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "105");

	/* a change to a key not read is no conflict */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(get_str(t, x, "acct", buf, sizeof(buf)), 3);
	assert_int_equal(tdbc_put(t2, NULL, "other", 5, "2", 1, 0), 0);
	assert_int_equal(tdbc_put(t, x, "acct", 4, "106", 3, 0), 0);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(get_str(t2, NULL, "acct", buf, sizeof(buf)), 3);
	assert_string_equal(buf, "106");
	/* nor is a blind write (nothing read) */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	assert_int_equal(tdbc_put(t, x, "other", 5, "3", 1, 0), 0);
	assert_int_equal(tdbc_put(t2, NULL, "other", 5, "4", 1, 0), 0);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(get_str(t2, NULL, "other", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "3");
	/* tdbc_strerror says what to do */
	assert_non_null(strstr(tdbc_strerror(-ESTALE), "run it again"));

	tdbc_close(c2);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* tdbc_txn_run: the counter example, with a second connection changing
 * the counter under the first tries. */
struct run_arg {
	struct tdbc_table *t;   /* the transaction's */
	struct tdbc_table *t2;  /* the meddler's */
	int meddle;             /* first tries to spoil */
	int calls;
	int fail;               /* fn's error, 0: none */
};

static int run_fn(struct tdbc_txn *txn, void *p)
{
	struct run_arg *a = p;
	char buf[32];
	long n;

	a->calls++;
	n = tdbc_get(a->t, txn, "ctr", 3, buf, sizeof(buf) - 1, NULL);
	if (n < 0 && n != -ENOENT)
		return (int)n;
	buf[n > 0 ? n : 0] = '\0';
	if (a->meddle-- > 0 && tdbc_incr(a->t2, NULL, "ctr", 3, 1000, NULL))
		return -EIO;
	if (a->fail)
		return a->fail;
	snprintf(buf, sizeof(buf), "%lld", atoll(buf) + 1);
	return tdbc_put(a->t, txn, "ctr", 3, buf, strlen(buf), 0);
}

static void test_txn_run(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *c2 = conn(m);
	struct run_arg a = { 0 };
	struct timespec t0, t1;
	char name[80], buf[32];

	a.t = fresh_table(c, m, "run", name);
	assert_int_equal(tdbc_table_open(c2, name, &a.t2), 0);
	/* no conflict: one call */
	assert_int_equal(tdbc_txn_run(c, run_fn, &a, 0), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(get_str(a.t, NULL, "ctr", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "1");
	/* spoiled twice: run three times, the last commits */
	a.calls = 0;
	a.meddle = 2;
	assert_int_equal(tdbc_txn_run(c, run_fn, &a, 0), 0);
	assert_int_equal(a.calls, 3);
	assert_int_equal(get_str(a.t, NULL, "ctr", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "2002");
	/* fn fails: aborted, its error returned, nothing applied */
	a.calls = 0;
	a.fail = -EINTR;
	assert_int_equal(tdbc_txn_run(c, run_fn, &a, 0), -EINTR);
	assert_int_equal(a.calls, 1);
	assert_int_equal(get_str(a.t, NULL, "ctr", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "2002");
	/* spoiled every time: -ESTALE after TDBC_TXN_RUN_TRIES, having
	 * backed off (50 us doubling to 20 ms, with jitter) */
	a.calls = 0;
	a.fail = 0;
	a.meddle = 1 << 30;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tdbc_txn_run(c, run_fn, &a, 0), -ESTALE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(a.calls, TDBC_TXN_RUN_TRIES);
	assert_non_null(strstr(tdbc_errmsg(c), "100 tries"));
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 500);
	/* the connection is fine after all that */
	assert_int_equal(tdbc_txn_run(c, run_fn, &(struct run_arg){
		.t = a.t, .t2 = a.t2 }, 0), 0);

	tdbc_close(c2);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* INCR and conditional writes through tdbc_submit. */
static void test_async_versions(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_cqe cqe[8];
	uint64_t v;
	char name[80], buf[32];
	int n, got = 0, i;

	t = fresh_table(c, m, "aver", name);
	put_ok(t, "k", "v");
	v = ver_of(t, NULL, "k");
	{
		struct tdbc_req reqs[] = {
			{ .op = TDBC_OP_INCR, .table = t, .key = "n",
			  .klen = 1, .delta = 5, .user = 0 },
			{ .op = TDBC_OP_GET, .table = t, .key = "k",
			  .klen = 1, .user = 1 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "k",
			  .klen = 1, .val = "w", .vlen = 1,
			  .flags = TDBC_IF_VERSION, .version = v + 100,
			  .user = 2 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "a",
			  .klen = 1, .val = "x", .vlen = 1,
			  .flags = TDBC_IF_PRESENT, .user = 3 },
			{ .op = TDBC_OP_DEL, .table = t, .key = "k",
			  .klen = 1, .flags = TDBC_IF_VERSION,
			  .version = v + 100, .user = 4 },
			{ .op = TDBC_OP_INCR, .table = t, .key = "k",
			  .klen = 1, .user = 5 },
		};

		assert_int_equal(tdbc_submit(c, reqs, 6), 6);
	}
	while (got < 6) {
		n = tdbc_reap(c, cqe, 8, 1, 5000);
		assert_true(n > 0);
		for (i = 0; i < n; i++) {
			switch (cqe[i].user) {
			case 0:
				assert_int_equal(cqe[i].res, 0);
				assert_int_equal(cqe[i].num, 5);
				assert_true(cqe[i].version > v);
				break;
			case 1:
				assert_int_equal(cqe[i].res, 0);
				assert_int_equal(cqe[i].version, v);
				break;
			case 2:
			case 4:
				assert_int_equal(cqe[i].res, -ECANCELED);
				break;
			case 3:
				assert_int_equal(cqe[i].res, -ENOENT);
				break;
			case 5:
				assert_int_equal(cqe[i].res, -EDOM);
				break;
			default:
				fail();
			}
		}
		got += n;
	}
	/* the right version: applied, in order */
	{
		struct tdbc_req reqs[] = {
			{ .op = TDBC_OP_PUT, .table = t, .key = "k",
			  .klen = 1, .val = "w", .vlen = 1,
			  .flags = TDBC_IF_VERSION, .version = v,
			  .user = 10 },
		};

		assert_int_equal(tdbc_submit(c, reqs, 1), 1);
		assert_int_equal(tdbc_reap(c, cqe, 8, 1, 5000), 1);
		assert_int_equal(cqe[0].res, 0);
	}
	assert_int_equal(get_str(t, NULL, "k", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "w");
	assert_int_equal(get_str(t, NULL, "n", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "5");
	/* in a transaction: INCR's completion has the sum, no version */
	{
		struct tdbc_txn *x;
		struct tdbc_req reqs[] = {
			{ .op = TDBC_OP_INCR, .table = t, .key = "n",
			  .klen = 1, .delta = -7, .user = 20 },
			{ .op = TDBC_OP_COMMIT, .user = 21 },
		};

		assert_int_equal(tdbc_txn_begin(c, &x), 0);
		reqs[0].txn = reqs[1].txn = x;
		assert_int_equal(tdbc_submit(c, reqs, 2), 2);
		for (got = 0; got < 2; got += n) {
			n = tdbc_reap(c, cqe, 8, 1, 5000);
			assert_true(n > 0);
			for (i = 0; i < n; i++) {
				assert_int_equal(cqe[i].res, 0);
				if (cqe[i].user == 20) {
					assert_int_equal(cqe[i].num, -2);
					assert_int_equal(cqe[i].version, 0);
				}
			}
		}
	}
	assert_int_equal(get_str(t, NULL, "n", buf, sizeof(buf)), 2);
	assert_string_equal(buf, "-2");
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* Contended counters: PROCS processes x ROUNDS increments of one key
 * each way, (a) INCR, (b) tdbc_txn_run get + put, (c) a CAS loop
 * (get_ver, put_if TDBC_IF_VERSION): exactly PROCS * ROUNDS each. */
#define PROCS 4
#define ROUNDS 150

static int cas_add(struct tdbc_table *t, const char *k)
{
	char buf[32];
	uint64_t v;
	long n;
	int err;

	for (;;) {
		n = tdbc_get_ver(t, NULL, k, strlen(k), buf, sizeof(buf) - 1,
				 NULL, &v);
		if (n < 0 && n != -ENOENT)
			return (int)n;
		buf[n > 0 ? n : 0] = '\0';
		snprintf(buf, sizeof(buf), "%lld", atoll(buf) + 1);
		if (n == -ENOENT)
			err = tdbc_put_if(t, NULL, k, strlen(k), buf,
					  strlen(buf), TDBC_IF_ABSENT, 0);
		else
			err = tdbc_put_if(t, NULL, k, strlen(k), buf,
					  strlen(buf), TDBC_IF_VERSION, v);
		if (err != -ECANCELED && err != -EEXIST)
			return err;
	}
}

static int add_fn(struct tdbc_txn *txn, void *p)
{
	struct tdbc_table *t = p;
	char buf[32];
	long n = tdbc_get(t, txn, "txn", 3, buf, sizeof(buf) - 1, NULL);

	if (n < 0 && n != -ENOENT)
		return (int)n;
	buf[n > 0 ? n : 0] = '\0';
	snprintf(buf, sizeof(buf), "%lld", atoll(buf) + 1);
	return tdbc_put(t, txn, "txn", 3, buf, strlen(buf), 0);
}

static int contend_child(const struct mode *m, const char *name)
{
	struct tdbc *c = NULL;
	struct tdbc_table *t;
	char msg[256];
	int i;

	if (tdbc_connect(&c, g_daemon.sock, m->flags, msg, sizeof(msg)) ||
	    tdbc_table_open(c, name, &t))
		return 10;
	for (i = 0; i < ROUNDS; i++) {
		if (tdbc_incr(t, NULL, "incr", 4, 1, NULL))
			return 11;
		if (tdbc_txn_run(c, add_fn, t, 0))
			return 12;
		if (cas_add(t, "cas"))
			return 13;
	}
	tdbc_close(c);
	return 0;
}

/* clients/examples/counter.c ($TDBC_COUNTER_EXAMPLE; skipped without):
 * the example's own check that no update was lost, 4 x 200. */
/* --- expiry (issue 27) --------------------------------------------------- */

/* CLOCK_REALTIME in ms: the clock deadlines are of (the owner's, on the
 * same host). */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* k's deadline by tdbc_get_ex (checking the value), 0 if it has none;
 * ~0 if it is absent. */
static uint64_t deadline_of(struct tdbc_table *t, const char *k,
			    const char *want)
{
	char buf[64];
	uint64_t v = 77, d = 77;
	long n = tdbc_get_ex(t, NULL, k, strlen(k), buf, sizeof(buf), NULL,
			     &v, &d);

	if (n < 0) {
		assert_int_equal(n, -ENOENT);
		assert_int_equal(v, 0);
		assert_int_equal(d, 0);
		return ~0ull;
	}
	assert_int_equal(n, strlen(want));
	assert_memory_equal(buf, want, (size_t)n);
	assert_true(v > 0);
	return d;
}

/* The blocking calls: put with a TTL and a deadline, get_ex, the
 * EXPIRE family, and an expired key absent to all of them. */
static void test_expiry(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	uint64_t t0, d, d2, da, dc, v, v2, far;
	char name[80], buf[32];

	t = fresh_table(c, m, "exp", name);
	/* refused before anything is sent, saying why */
	assert_int_equal(tdbc_put_ttl(t, NULL, "k", 1, "v", 1, 0, 0, 0),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "TTL 0"));
	assert_int_equal(tdbc_put_ttl(t, NULL, "k", 1, "v", 1, 0, 0,
				      TDB_TTL_MAX + 1), -ERANGE);
	assert_non_null(strstr(tdbc_errmsg(c), "10 years"));
	assert_int_equal(tdbc_put_at(t, NULL, "k", 1, "v", 1, 0, 0, 0),
			 -EINVAL);
	assert_int_equal(tdbc_put(t, NULL, "k", 1, "v", 1, TDBC_TTL),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "tdbc_submit"));
	assert_int_equal(tdbc_expire(t, "k", 1, 0, NULL), -EINVAL);
	assert_int_equal(tdbc_expire_at(t, "k", 1, 0), -EINVAL);
	assert_int_equal(tdbc_get(t, NULL, "k", 1, buf, sizeof(buf), NULL),
			 -ENOENT);

	/* put with a TTL: the deadline is now + TTL, by the owner's clock */
	t0 = now_ms();
	assert_int_equal(tdbc_put_ttl(t, NULL, "a", 1, "va", 2, 0, 0, 800),
			 0);
	da = deadline_of(t, "a", "va");
	assert_true(da >= t0 + 800 && da <= now_ms() + 800);
	assert_int_equal(tdbc_ttl(t, "a", 1, &d2, &v), 0);
	assert_int_equal(d2, da);
	assert_int_equal(v, ver_of(t, NULL, "a"));
	/* with an absolute deadline, and the max TTL */
	far = now_ms() + 3600000;
	assert_int_equal(tdbc_put_at(t, NULL, "b", 1, "vb", 2, 0, 0, far), 0);
	assert_int_equal(deadline_of(t, "b", "vb"), far);
	assert_int_equal(tdbc_put_ttl(t, NULL, "x", 1, "vx", 2, 0, 0,
				      TDB_TTL_MAX), 0);
	assert_true(deadline_of(t, "x", "vx") >= t0 + TDB_TTL_MAX);
	/* a deadline beyond the max is the owner's -ERANGE */
	assert_int_equal(tdbc_put_at(t, NULL, "y", 1, "v", 1, 0, 0,
				     now_ms() + TDB_TTL_MAX + 600000),
			 -ERANGE);
	/* a plain put has none, and replaces a deadline with the value */
	put_ok(t, "c", "vc");
	assert_int_equal(deadline_of(t, "c", "vc"), 0);
	assert_int_equal(tdbc_ttl(t, "c", 1, &d2, NULL), 0);
	assert_int_equal(d2, 0);
	put_ok(t, "b", "vb2");
	assert_int_equal(deadline_of(t, "b", "vb2"), 0);
	/* conditions go with a TTL */
	assert_int_equal(tdbc_put_ttl(t, NULL, "c", 1, "no", 2,
				      TDBC_IF_ABSENT, 0, 1000), -EEXIST);
	v = ver_of(t, NULL, "c");
	assert_int_equal(tdbc_put_ttl(t, NULL, "c", 1, "vc2", 3,
				      TDBC_IF_VERSION, v, 60000), 0);
	assert_true(deadline_of(t, "c", "vc2") > now_ms());

	/* EXPIRE: set (a write: a new version), read, clear */
	v = ver_of(t, NULL, "b");
	assert_int_equal(tdbc_expire(t, "b", 1, 60000, &d), 0);
	assert_true(d > now_ms() + 50000 && d <= now_ms() + 60000);
	assert_int_equal(deadline_of(t, "b", "vb2"), d);
	v2 = ver_of(t, NULL, "b");
	assert_true(v2 > v);
	assert_int_equal(tdbc_ttl(t, "b", 1, &d2, &v), 0);
	assert_int_equal(d2, d);
	assert_int_equal(v, v2);
	assert_int_equal(tdbc_expire_at(t, "b", 1, far + 5), 0);
	assert_int_equal(deadline_of(t, "b", "vb2"), far + 5);
	assert_int_equal(tdbc_persist(t, "b", 1), 0);
	assert_int_equal(deadline_of(t, "b", "vb2"), 0);
	assert_int_equal(tdbc_ttl(t, "b", 1, &d2, NULL), 0);
	assert_int_equal(d2, 0);
	/* absent keys: -ENOENT, and the outputs zeroed */
	d2 = v = 9;
	assert_int_equal(tdbc_ttl(t, "nosuch", 6, &d2, &v), -ENOENT);
	assert_int_equal(d2, 0);
	assert_int_equal(v, 0);
	assert_int_equal(tdbc_expire(t, "nosuch", 6, 1000, &d2), -ENOENT);
	assert_int_equal(tdbc_expire_at(t, "nosuch", 6, far), -ENOENT);
	assert_int_equal(tdbc_persist(t, "nosuch", 6), -ENOENT);

	/* past its deadline a key is absent to every call */
	assert_int_equal(tdbc_expire(t, "c", 1, 300, &dc), 0);
	assert_int_equal(deadline_of(t, "c", "vc2"), dc);
	while (now_ms() <= da + 20 || now_ms() <= dc + 20)
		sleep_ms(50);
	assert_int_equal(deadline_of(t, "a", NULL), ~0ull);
	assert_int_equal(deadline_of(t, "c", NULL), ~0ull);
	assert_int_equal(tdbc_get(t, NULL, "a", 1, buf, sizeof(buf), NULL),
			 -ENOENT);
	assert_int_equal(tdbc_ttl(t, "a", 1, &d2, NULL), -ENOENT);
	assert_int_equal(tdbc_persist(t, "a", 1), -ENOENT);
	assert_int_equal(tdbc_expire(t, "c", 1, 1000, NULL), -ENOENT);
	/* and absent to conditions: an if-absent put goes in */
	assert_int_equal(tdbc_put_if(t, NULL, "a", 1, "new", 3,
				     TDBC_IF_ABSENT, 0), 0);
	assert_int_equal(deadline_of(t, "a", "new"), 0);
	/* a deadline already past writes a record no read sees */
	assert_int_equal(tdbc_put_at(t, NULL, "p", 1, "v", 1, 0, 0, 1), 0);
	assert_int_equal(deadline_of(t, "p", NULL), ~0ull);
	assert_int_equal(deadline_of(t, "b", "vb2"), 0);
	tdbc_table_close(t);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* Scans (plain and snapshot) give each record's deadline, and no
 * record past it. */
static void scan_deadlines(struct tdbc_table *t, unsigned int flags,
			   uint64_t ds, uint64_t df, int want)
{
	struct tdbc_scan *sc;
	const void *k;
	size_t kn;
	uint64_t v, d;
	int r, n = 0;

	assert_int_equal(tdbc_scan_open_flags(t, NULL, 0, 0, flags, &sc), 0);
	while ((r = tdbc_scan_next_ex(sc, &k, &kn, NULL, NULL, &v, &d)) > 0) {
		assert_int_equal(kn, 1);
		assert_true(v > 0);
		switch (*(const char *)k) {
		case 's': assert_int_equal(d, ds); break;
		case 'f': assert_int_equal(d, df); break;
		case 'n': assert_int_equal(d, 0); break;
		default: fail_msg("scan: key %.*s", (int)kn, (const char *)k);
		}
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, want);
	tdbc_scan_close(sc);
}

static void test_scan_expiry(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	uint64_t ds, far = now_ms() + 3600000;
	char name[80];

	t = fresh_table(c, m, "sexp", name);
	assert_int_equal(tdbc_put_ttl(t, NULL, "s", 1, "v", 1, 0, 0, 1000),
			 0);
	ds = deadline_of(t, "s", "v");
	assert_int_equal(tdbc_put_at(t, NULL, "f", 1, "v", 1, 0, 0, far), 0);
	put_ok(t, "n", "v");
	scan_deadlines(t, 0, ds, far, 3);
	scan_deadlines(t, TDBC_SCAN_SNAPSHOT, ds, far, 3);
	while (now_ms() <= ds + 20)
		sleep_ms(50);
	scan_deadlines(t, 0, ds, far, 2);
	scan_deadlines(t, TDBC_SCAN_SNAPSHOT, ds, far, 2);
	tdbc_table_close(t);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* tdbc_submit: PUT with TDBC_TTL / TDBC_DEADLINE, GET's deadline in its
 * completion (through the map too), an expired key -ENOENT. */
static void test_async_expiry(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_cqe cqe[8];
	uint64_t t0, far, dl[8] = { 0 };
	int res[8], n, got, i;
	char name[80];

	t = fresh_table(c, m, "aexp", name);
	t0 = now_ms();
	far = t0 + 3600000;
	{
		struct tdbc_req reqs[] = {
			{ .op = TDBC_OP_PUT, .table = t, .key = "s",
			  .klen = 1, .val = "v", .vlen = 1,
			  .flags = TDBC_TTL, .expiry = 1000, .user = 0 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "f",
			  .klen = 1, .val = "w", .vlen = 1,
			  .flags = TDBC_DEADLINE, .expiry = far, .user = 1 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "n",
			  .klen = 1, .val = "x", .vlen = 1, .user = 2 },
		};

		assert_int_equal(tdbc_submit(c, reqs, 3), 3);
		for (got = 0; got < 3; got += n) {
			n = tdbc_reap(c, cqe, 8, 1, 5000);
			assert_true(n > 0);
			for (i = 0; i < n; i++)
				assert_int_equal(cqe[i].res, 0);
		}
	}
	/* refused in the submit, before anything is sent */
	{
		struct tdbc_req bad[] = {
			{ .op = TDBC_OP_PUT, .table = t, .key = "z",
			  .klen = 1, .val = "v", .vlen = 1,
			  .flags = TDBC_TTL, .expiry = 0 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "z",
			  .klen = 1, .val = "v", .vlen = 1,
			  .flags = TDBC_TTL | TDBC_DEADLINE, .expiry = 5 },
			{ .op = TDBC_OP_PUT, .table = t, .key = "z",
			  .klen = 1, .val = "v", .vlen = 1,
			  .flags = TDBC_TTL, .expiry = TDB_TTL_MAX + 1 },
		};

		assert_int_equal(tdbc_submit(c, &bad[0], 1), -EINVAL);
		assert_int_equal(tdbc_submit(c, &bad[1], 1), -EINVAL);
		assert_non_null(strstr(tdbc_errmsg(c), "exclude"));
		assert_int_equal(tdbc_submit(c, &bad[2], 1), -ERANGE);
		assert_int_equal(tdbc_inflight(c), 0);
	}
	{
		struct tdbc_req gets[] = {
			{ .op = TDBC_OP_GET, .table = t, .key = "s",
			  .klen = 1, .user = 0 },
			{ .op = TDBC_OP_GET, .table = t, .key = "f",
			  .klen = 1, .user = 1 },
			{ .op = TDBC_OP_GET, .table = t, .key = "n",
			  .klen = 1, .user = 2 },
		};

		assert_int_equal(tdbc_submit(c, gets, 3), 3);
		for (got = 0; got < 3; got += n) {
			n = tdbc_reap(c, cqe, 8, 1, 5000);
			assert_true(n > 0);
			for (i = 0; i < n; i++) {
				assert_true(cqe[i].user < 3);
				res[cqe[i].user] = cqe[i].res;
				dl[cqe[i].user] = cqe[i].deadline;
			}
		}
		assert_int_equal(res[0], 0);
		assert_true(dl[0] >= t0 + 1000 && dl[0] <= now_ms() + 1000);
		assert_int_equal(res[1], 0);
		assert_int_equal(dl[1], far);
		assert_int_equal(res[2], 0);
		assert_int_equal(dl[2], 0);
		assert_int_equal(deadline_of(t, "s", "v"), dl[0]);
		/* past the deadline: -ENOENT, through the map as well */
		while (now_ms() <= dl[0] + 20)
			sleep_ms(50);
		assert_int_equal(tdbc_submit(c, gets, 1), 1);
		assert_int_equal(tdbc_reap(c, cqe, 8, 1, 5000), 1);
		assert_int_equal(cqe[0].res, -ENOENT);
	}
	tdbc_table_close(t);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* A table's default TTL (create), its figures (stat, list, stats), and
 * what watchers see: a PUT's deadline, the sweep's DEL with its reason. */
static void test_table_ttl(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table_opts o;
	struct tdbc_table_stat st;
	struct tdbc_stats s0, s1;
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct list_find f = { 0 };
	uint64_t t0, d;
	char name[80];
	int r;

	sprintf(name, "dttl-%s", m->tag);
	tdbc_table_opts_init(&o);
	assert_int_equal(o.default_ttl, 0);
	o.default_ttl = TDB_TTL_MAX + 1;
	assert_int_equal(tdbc_table_create(c, name, &o), -ERANGE);
	assert_non_null(strstr(tdbc_errmsg(c), "default TTL"));
	o.default_ttl = 1500;
	assert_int_equal(tdbc_table_create(c, name, &o), 0);
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_int_equal(st.default_ttl, 1500);
	assert_int_equal(st.expiring, 0);
	assert_int_equal(tdbc_stats(c, &s0), 0);
	assert_int_equal(tdbc_table_open(c, name, &t), 0);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);

	/* a put without its own TTL gets the table's; one with, its own;
	 * tdbc_persist keeps one for good */
	t0 = now_ms();
	put_ok(t, "d", "v");
	d = deadline_of(t, "d", "v");
	assert_true(d >= t0 + 1500 && d <= now_ms() + 1500);
	assert_int_equal(tdbc_put_ttl(t, NULL, "own", 3, "v", 1, 0, 0,
				      3600000), 0);
	assert_true(deadline_of(t, "own", "v") > now_ms() + 3500000);
	put_ok(t, "kept", "v");
	assert_int_equal(tdbc_persist(t, "kept", 4), 0);
	assert_int_equal(deadline_of(t, "kept", "v"), 0);
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.expiring, 2);
	f.name = name;
	assert_int_equal(tdbc_table_list(c, list_fn, &f), 0);
	assert_int_equal(f.seen, 1);
	assert_int_equal(f.st.default_ttl, 1500);
	assert_int_equal(f.st.expiring, 2);

	/* the watcher: PUTs with their deadlines (persist is a PUT of the
	 * same value without one), then the sweep's DEL of "d" */
	r = tdbc_watch_next(w, &ev, 5000, NULL);
	assert_int_equal(r, 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_int_equal(ev.deadline, d);
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_true(ev.deadline > now_ms() + 3500000);
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_memory_equal(ev.key, "kept", 4);
	assert_true(ev.deadline > 0);   /* the table's default */
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_memory_equal(ev.key, "kept", 4);
	assert_int_equal(ev.deadline, 0);
	assert_int_equal(tdbc_del(t, NULL, "own", 3), 0);
	/* a client's DEL (no reason) and, within a few seconds of the
	 * deadline, the sweep's (expired) */
	for (r = 0; r < 2; r++) {
		assert_int_equal(tdbc_watch_next(w, &ev, 10000, NULL), 1);
		assert_int_equal(ev.kind, TDBC_EV_DEL);
		if (ev.klen == 3) {
			assert_memory_equal(ev.key, "own", 3);
			assert_int_equal(ev.reason, 0);
		} else {
			assert_int_equal(ev.klen, 1);
			assert_memory_equal(ev.key, "d", 1);
			assert_int_equal(ev.reason, TDBC_REASON_EXPIRED);
			assert_true(now_ms() >= d);
		}
	}
	/* counted: the table's and the owner's */
	assert_int_equal(tdbc_table_stat(c, name, &st), 0);
	assert_int_equal(st.records, 1);
	assert_int_equal(st.expiring, 0);
	assert_int_equal(st.expired, 1);
	assert_int_equal(tdbc_stats(c, &s1), 0);
	assert_true(s1.expired >= s0.expired + 1);
	tdbc_watch_close(w);
	tdbc_table_close(t);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

static void test_counter_example(void **state)
{
	const char *exe = getenv("TDBC_COUNTER_EXAMPLE");
	pid_t pid;
	int st;

	(void)state;
	if (!exe || !*exe)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(exe, "counter", g_daemon.sock, "4", "200", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_contended(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	pid_t pids[PROCS];
	char name[80], buf[32], want[32];
	int i, st;

	t = fresh_table(c, m, "contend", name);
	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(contend_child(m, name));
	}
	for (i = 0; i < PROCS; i++) {
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fail_msg("child %d: status %#x", i, st);
	}
	snprintf(want, sizeof(want), "%d", PROCS * ROUNDS);
	assert_true(get_str(t, NULL, "incr", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, want);
	assert_true(get_str(t, NULL, "txn", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, want);
	assert_true(get_str(t, NULL, "cas", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, want);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_close(c);
}

/* --- the daemon dies ---------------------------------------------------- */

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "test_client_e2e: a call hung after the daemon "
		"died\n");
	_exit(1);
}

/* Kill d (SIGKILL) after ms, from a child process. */
static pid_t kill_later(pid_t target, int ms)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		usleep((useconds_t)ms * 1000);
		kill(target, SIGKILL);
		_exit(0);
	}
	return pid;
}

static bool dead_err(int err)
{
	return err == -ECONNRESET || err == -EPIPE;
}

static struct daemon g_doomed;

static void test_daemon_killed(void **state)
{
	const struct mode *m = *state;
	struct tdbc_req r = { .op = TDBC_OP_GET, .key = "k", .klen = 1 };
	struct tdbc *c, *cw, *ca;
	struct tdbc_table *t, *tw, *ta;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct tdbc_cqe cqe;
	struct tdbc_stats st;
	struct daemon *dp = &g_doomed, d;
	pid_t killer;
	char buf[8];
	int err, wst;

	assert_int_equal(daemon_start(dp, "e2e"), 0);
	d = *dp;
	signal(SIGALRM, on_alarm);
	alarm(30);
	assert_int_equal(tdbc_connect(&c, d.sock, m->flags, NULL, 0), 0);
	assert_int_equal(tdbc_connect(&cw, d.sock, m->flags, NULL, 0), 0);
	assert_int_equal(tdbc_connect(&ca, d.sock, m->flags, NULL, 0), 0);
	assert_int_equal(tdbc_table_create(c, "doomed", NULL), 0);
	assert_int_equal(tdbc_table_open(c, "doomed", &t), 0);
	assert_int_equal(tdbc_table_open(cw, "doomed", &tw), 0);
	assert_int_equal(tdbc_table_open(ca, "doomed", &ta), 0);
	assert_int_equal(tdbc_put(t, NULL, "k", 1, "v", 1, 0), 0);
	assert_int_equal(tdbc_watch(tw, NULL, 0, &w), 0);

	/* frozen (all its threads: waitpid says when): requests wait;
	 * then killed while we wait */
	kill(d.pid, SIGSTOP);
	assert_int_equal(waitpid(d.pid, &wst, WUNTRACED), d.pid);
	assert_true(WIFSTOPPED(wst));
	r.table = ta;
	assert_int_equal(tdbc_submit(ca, &r, 1), 1);
	killer = kill_later(d.pid, 300);
	err = (int)tdbc_get(t, NULL, "k", 1, buf, sizeof(buf), NULL);
	if (!dead_err(err))
		fail_msg("get with the daemon killed: %d", err);
	/* the connection is dead for good, and says why */
	assert_int_equal(tdbc_stats(c, &st), err);
	assert_int_equal(tdbc_put(t, NULL, "k", 1, "v", 1, 0), err);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	/* a watcher waiting for ever and a reaper waiting for ever wake */
	err = tdbc_watch_next(w, &ev, -1, NULL);
	assert_true(dead_err(err));
	err = tdbc_reap(ca, &cqe, 1, 1, -1);
	assert_true(dead_err(err));
	assert_int_equal(tdbc_submit(ca, &r, 1), err);
	waitpid(killer, NULL, 0);
	waitpid(d.pid, NULL, 0);
	dp->pid = -1;
	alarm(0);
	tdbc_watch_close(w);
	tdbc_close(c);
	tdbc_close(cw);
	tdbc_close(ca);
	/* no daemon now: connect says so */
	{
		char msg[256];

		assert_int_equal(tdbc_connect(&c, d.sock, m->flags, msg,
					      sizeof(msg)), -ECONNREFUSED);
		assert_non_null(strstr(msg, d.sock));
	}
}

/* Also after a failure: the doomed daemon goes, its directory too. */
static int doomed_teardown(void **state)
{
	(void)state;
	if (g_doomed.dir[0])
		daemon_stop(&g_doomed, SIGKILL);
	memset(&g_doomed, 0, sizeof(g_doomed));
	return 0;
}

#ifdef TDBC_E2E_WHITEBOX
/*
 * White box (the test_client_e2e_whitebox build, linked with the static
 * library and its internal header): a request bigger than the submission
 * ring's max_msg goes over the socket while the rings carry the rest.
 * tdbd's rings are at least 4 MiB (max_msg 2 MiB), so the test lowers
 * our private copy of max_msg instead.
 */
#include "internal.h"

static void test_oversize_socket(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	unsigned char *val = malloc(TDB_VALUE_MAX);
	struct tdbc_req reqs[16];
	struct tdbc_cqe cqe[16];
	struct tdbc_table *t;
	unsigned int i, got = 0;
	char name[80], keys[16][8];
	void *v = NULL;
	int k;

	assert_non_null(val);
	memset(val, 0x5a, TDB_VALUE_MAX);
	t = fresh_table(c, m, "oversize", name);
	c->sq.max_msg = 65536;
	assert_int_equal(tdbc_put(t, NULL, "big", 3, val, TDB_VALUE_MAX, 0), 0);
	assert_int_equal(c->sock_pending, 0);
	assert_int_equal(tdbc_get_alloc(t, NULL, "big", 3, &v), TDB_VALUE_MAX);
	assert_memory_equal(v, val, TDB_VALUE_MAX);
	free(v);
	/* async: big puts over the socket, small gets on the ring */
	for (i = 0; i < 16; i++) {
		sprintf(keys[i], "k%u", i);
		reqs[i] = (struct tdbc_req){ .table = t, .user = i,
			.op = i % 2 ? TDBC_OP_GET : TDBC_OP_PUT,
			.key = i % 2 ? "big" : keys[i],
			.klen = i % 2 ? 3 : strlen(keys[i]),
			.val = val, .vlen = TDB_VALUE_MAX };
	}
	assert_int_equal(tdbc_submit(c, reqs, 16), 16);
	while (got < 16) {
		k = tdbc_reap(c, cqe, 16, 1, 10000);
		assert_true(k > 0);
		for (i = 0; i < (unsigned int)k; i++) {
			assert_int_equal(cqe[i].res, 0);
			if (cqe[i].user % 2)
				assert_int_equal(cqe[i].vlen, TDB_VALUE_MAX);
		}
		got += (unsigned int)k;
	}
	assert_int_equal(c->sock_pending, 0);
	assert_int_equal(tdbc_get(t, NULL, "k14", 3, NULL, 0, NULL), -ENOBUFS);
	/* waiting on a watch takes in the answers to requests in flight
	 * (tdbd cuts off clients that leave them undrained) */
	{
		struct tdbc_req r = { .op = TDBC_OP_GET, .table = t,
				      .key = "nope", .klen = 4, .user = 9 };
		struct tdbc_watch *w;
		struct tdbc_event ev;

		assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
		assert_int_equal(tdbc_submit(c, &r, 1), 1);
		assert_int_equal(c->done_len, 0);
		assert_int_equal(tdbc_watch_next(w, &ev, 200, NULL), 0);
		assert_int_equal(c->done_len, 1);
		assert_int_equal(c->slot_used, 0);
		assert_int_equal(tdbc_reap(c, cqe, 1, 0, 0), 1);
		assert_int_equal(cqe[0].res, -ENOENT);
		tdbc_watch_close(w);
	}
	assert_int_equal(tdbc_table_drop(c, name), 0);
	free(val);
	tdbc_close(c);
}

/*
 * A read section (tdbc_read_begin) that handed out a pointer into a map
 * keeps its reader slot odd through a read of an unmapped table through
 * the ring: a put outside a transaction moves no commit_seq, so only the
 * slot keeps the record the pointer names from being reused meanwhile.
 * Before it holds a pointer, the section leaves the slot even during
 * the ring call (the owner may be waiting for it).
 */
static void test_section_slot(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *a, *b;
	char na[80], nb[80];
	const void *v;
	size_t n;
	uint64_t s;

	a = fresh_table(c, m, "slot-a", na);
	b = fresh_table(c, m, "slot-b", nb);
	assert_int_equal(tdbc_put(a, NULL, "k", 1, "va", 2, 0), 0);
	assert_int_equal(tdbc_put(b, NULL, "k", 1, "vb", 2, 0), 0);
	assert_int_equal(tdbc_table_mapped(a), 1);
	tdbc__map_close(b);     /* b reads through the ring from now on */
	assert_int_equal(tdbc_table_mapped(b), 0);

	/* no pointer yet: the ring call leaves the slot even meanwhile */
	assert_int_equal(tdbc_read_begin(c), 0);
	s = c->sq.hdr->read_section;
	assert_true(s & 1);
	assert_int_equal(tdbc_get_ref(b, "k", 1, &v, &n), 0);
	assert_true(n == 2 && !memcmp(v, "vb", 2));
	assert_true(c->sq.hdr->read_section == s + 2);
	/* a pointer into a's map: the slot stays as it is through the
	 * ring call */
	assert_int_equal(tdbc_get_ref(a, "k", 1, &v, &n), 0);
	assert_true(n == 2 && !memcmp(v, "va", 2));
	s = c->sq.hdr->read_section;
	assert_int_equal(tdbc_get_ref(b, "k", 1, &v, &n), 0);
	assert_true(c->sq.hdr->read_section == s);
	assert_int_equal(tdbc_read_end(c), 0);
	assert_true(!(c->sq.hdr->read_section & 1));
	assert_int_equal(tdbc_table_drop(c, na), 0);
	assert_int_equal(tdbc_table_drop(c, nb), 0);
	tdbc_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_oversize_socket,
					  (void *)&ring_mode),
		cmocka_unit_test_prestate(test_section_slot,
					  (void *)&map_mode),
	};

	if (!tdbd_path())
		return 77;
	return cmocka_run_group_tests_name("client-e2e-whitebox", tests,
					   group_setup, group_teardown);
}
#else
int main(void)
{
#define BOTH(fn) \
	cmocka_unit_test_prestate(fn, (void *)&ring_mode), \
	cmocka_unit_test_prestate(fn, (void *)&sock_mode)
/* and again with the tables mapped (zero-copy gets, src/client/map.c) */
#define MAPPED(fn) cmocka_unit_test_prestate(fn, (void *)&map_mode)
	const struct CMUnitTest tests[] = {
		BOTH(test_tables),
		BOTH(test_data),
		BOTH(test_big_values),
		BOTH(test_txn),
		BOTH(test_scan),
		BOTH(test_scan_concurrent),
		BOTH(test_watch),
		BOTH(test_watch_overflow),
		BOTH(test_stats),
		BOTH(test_async),
		BOTH(test_async_big),
		BOTH(test_async_gets),
		BOTH(test_ring_pages),
		BOTH(test_versions),
		BOTH(test_watch_versions),
		BOTH(test_conditions),
		BOTH(test_incr),
		BOTH(test_txn_conflict),
		BOTH(test_txn_run),
		BOTH(test_async_versions),
		BOTH(test_expiry),
		BOTH(test_async_expiry),
		BOTH(test_scan_expiry),
		BOTH(test_table_ttl),
		BOTH(test_contended),
		MAPPED(test_counter_example),
		MAPPED(test_tables),
		MAPPED(test_data),
		MAPPED(test_big_values),
		MAPPED(test_txn),
		MAPPED(test_scan),
		MAPPED(test_watch),
		MAPPED(test_async),
		MAPPED(test_async_big),
		MAPPED(test_versions),
		MAPPED(test_watch_versions),
		MAPPED(test_conditions),
		MAPPED(test_async_versions),
		MAPPED(test_txn_conflict),
		MAPPED(test_expiry),
		MAPPED(test_async_expiry),
	};
	const struct CMUnitTest killed[] = {
		cmocka_unit_test_prestate_setup_teardown(test_daemon_killed,
			NULL, doomed_teardown, (void *)&ring_mode),
		cmocka_unit_test_prestate_setup_teardown(test_daemon_killed,
			NULL, doomed_teardown, (void *)&sock_mode),
	};
	int rc;

	if (!tdbd_path()) {
		printf("test_client_e2e: $TDBD is not set to an executable "
		       "tdbd: skipped\n");
		return 77;
	}
	rc = cmocka_run_group_tests_name("client-e2e", tests, group_setup,
					 group_teardown);
	rc |= cmocka_run_group_tests_name("client-e2e-killed", killed, NULL,
					  NULL);
	return rc;
}
#endif
