// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_supervise.c - tdbd --backend kernel against the real tdb.ko (the
 * qemu guest; issue 15).  Needs $TDB_KTEST_TDBD (tdbd's path in the
 * guest) and a tdb.ko with the supervisor ioctls: skips (77) without
 * either, so it runs as soon as tdb.ko has them.
 *
 *  1. restore at start: a tdbd (data dir D, sync always) starts on a
 *     fresh tdb.ko (tables restored: none), a client writes through
 *     /dev/tdb; tdbd stops; tdb.ko is reloaded (its tables gone); a new
 *     tdbd restores them from D: every write is there, each key at the
 *     version it had (a CAS with the version read before the reload
 *     succeeds, one with a stale version fails -ECANCELED), and a key
 *     deleted before the reload, written again after it, gets a version
 *     above every one tdb.ko gave before (TDB_IOC_SUP_VERSION);
 *     then a bulk load (bulk(): ring wraps and WAL segment switches)
 *     is restored whole, in RESTORE_BULK batches (issue 29: tdbd's log
 *     says so), with 3 records too large for a batch (100 KB values)
 *     restored as PUTs, byte for byte, read from the checkpoint store
 *     (issue 29: tdbd's log says so); and expiry (issue 27): a table "supx" made
 *     with a default TTL of 1 h keeps it, a record with its own
 *     deadline and one with the default come back with the same
 *     deadlines to the millisecond (tdb.ko's log records, tdbd's WAL,
 *     the restore's DEADLINE beside SET_VERSION), and one that expired
 *     before the reload does not come back;
 *  2. SIGKILL: three writer processes make puts, deletes and
 *     transactions one at a time (sync always: each returns once tdbd
 *     made it durable) while tdbd is SIGKILLed at random moments and
 *     restarted, KILL_CYCLES times; the writers must still make
 *     progress after the last restart (no answer held for ever); then
 *     tdbd is SIGKILLed once more while they run, they are killed,
 *     tdb.ko is reloaded (its log ring dropped) and a last tdbd
 *     restores from D's WAL alone: every acknowledged change is there
 *     (or the one in flight after it), no transaction torn;
 *  3. it leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdb/client.h"
#include "tdb/kdev.h"
#include "ksup.h"

#define DATA_DIR    "/tmp/tdb-supervise"
#define LOG_FILE    "/tmp/tdb-supervise.log"
#define KILL_CYCLES 20
#define WRITER_PAUSE_US 200
#define BULK_KEYS   40000

static struct ksup_tdbd td = { .log = LOG_FILE, .ready = KSUP_SUPERVISING,
			       .pid = -1 };

#define FAIL(...) do { fprintf(stderr, "test_supervise: FAIL: " \
	__VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

/* tdbd in kernel mode, sync always, 1 MiB WAL segments (the bulk load
 * switches many), plus $TDB_KTEST_TDBD_ARGS split at spaces. */
static void tdbd_start(void)
{
	const char *av[32] = { td.path, "--backend", "kernel",
		"--data-dir", DATA_DIR, "--sync", "always",
		"--client-deadline", "60s", "--config", "/dev/null",
		"--wal-segment-size", "1M" };
	static char more[512];
	unsigned int n = 13;
	char *tok;

	snprintf(more, sizeof(more), "%s", getenv("TDB_KTEST_TDBD_ARGS") ?
		 getenv("TDB_KTEST_TDBD_ARGS") : "");
	for (tok = strtok(more, " "); tok && n < 31; tok = strtok(NULL, " "))
		av[n++] = tok;
	ksup_start(&td, av);
}

/* tdb.ko's parameters for this test: a log ring of 1 MiB, so that the
 * bulk load below wraps it several times ($TDB_KTEST_KO_ARGS to
 * override). */
static void reload_module(void)
{
	const char *a = getenv("TDB_KTEST_KO_ARGS");

	ksup_reload(a ? a : "log_ring_mb=1");
}

static void key_of(char *k, unsigned int i)
{
	snprintf(k, 16, "k%08u", i);
}

static void val_of(char *v, unsigned int i)
{
	snprintf(v, 32, "value-%u-%u", i, i * 2654435761u);
}

/* Every key below n (or marked in acked) is there, with its value. */
static unsigned int verify(const unsigned char *acked, unsigned int n)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	char k[16], v[32], got[64];
	unsigned int i, found = 0;
	long len;

	CHECK(!tdbc_table_open(c, "sup", &t), "open sup: %s",
	      tdbc_errmsg(c));
	for (i = 0; i < n; i++) {
		if (acked && !acked[i])
			continue;
		key_of(k, i);
		val_of(v, i);
		len = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got), NULL);
		CHECK(len == (long)strlen(v) && !memcmp(got, v, (size_t)len),
		      "acknowledged key %s lost or wrong (%ld)", k, len);
		found++;
	}
	tdbc_table_close(t);
	tdbc_close(c);
	return found;
}

/* Phase 1's expiry: "supx" (default TTL 1 h): "own" with a deadline of
 * its own, "dflt" with the table's, "gone" with 300 ms (expired before
 * the reload).  The deadlines read before the reload. */
#define HOUR_MS 3600000ull
static uint64_t dl_own, dl_dflt;

/* The wall clock, as deadlines count (ksup_now_ms is CLOCK_MONOTONIC) */
static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t deadline_of(struct tdbc_table *t, const char *key)
{
	char buf[32];
	uint64_t dl = 7;
	long n = tdbc_get_ex(t, NULL, key, strlen(key), buf, sizeof(buf),
			     NULL, NULL, &dl);

	CHECK(n == 1, "supx/%s: %ld", key, n);
	return dl;
}

static void expiry_before(struct tdbc *c)
{
	struct tdbc_table_opts to;
	struct tdbc_table *t = NULL;

	tdbc_table_opts_init(&to);
	to.default_ttl = HOUR_MS;
	CHECK(!tdbc_table_create(c, "supx", &to), "create supx: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_table_open(c, "supx", &t), "open supx: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_put_at(t, NULL, "own", 3, "o", 1, 0, 0,
			   real_ms() + 2 * HOUR_MS), "put own: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_put(t, NULL, "dflt", 4, "d", 1, 0), "put dflt: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_put_ttl(t, NULL, "gone", 4, "g", 1, 0, 0, 300),
	      "put gone: %s", tdbc_errmsg(c));
	dl_own = deadline_of(t, "own");
	dl_dflt = deadline_of(t, "dflt");
	CHECK(dl_own > real_ms() + HOUR_MS && dl_dflt,
	      "supx's deadlines before the reload: %llu, %llu",
	      (unsigned long long)dl_own, (unsigned long long)dl_dflt);
	tdbc_table_close(t);
	ksup_msleep(400);
}

static void expiry_after(void)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table_stat st;
	struct tdbc_table *t = NULL;
	char buf[8];

	CHECK(!tdbc_table_stat(c, "supx", &st), "stat supx: %s",
	      tdbc_errmsg(c));
	CHECK(st.default_ttl == HOUR_MS, "supx's default TTL %llu after "
	      "the restore", (unsigned long long)st.default_ttl);
	CHECK(!tdbc_table_open(c, "supx", &t), "open supx: %s",
	      tdbc_errmsg(c));
	CHECK(deadline_of(t, "own") == dl_own, "supx/own: deadline %llu "
	      "after the restore, %llu before",
	      (unsigned long long)deadline_of(t, "own"),
	      (unsigned long long)dl_own);
	CHECK(deadline_of(t, "dflt") == dl_dflt, "supx/dflt: deadline %llu "
	      "after the restore, %llu before",
	      (unsigned long long)deadline_of(t, "dflt"),
	      (unsigned long long)dl_dflt);
	CHECK(tdbc_get(t, NULL, "gone", 4, buf, sizeof(buf), NULL) ==
	      -ENOENT, "supx/gone, expired before the reload, came back");
	tdbc_table_close(t);
	tdbc_close(c);
}

/* Phase 1's versions: of keys 0..VKEYS-1 before the reload, and the
 * highest version seen. */
#define VKEYS 8
static uint64_t vers[VKEYS], vmax;

static uint64_t version_of(struct tdbc_table *t, unsigned int i)
{
	char k[16], got[64];
	uint64_t ver = 0;
	long len;

	key_of(k, i);
	len = tdbc_get_ver(t, NULL, k, strlen(k), got, sizeof(got), NULL,
			   &ver);
	CHECK(len > 0 && ver, "get %s: %ld, version %llu", k, len,
	      (unsigned long long)ver);
	if (ver > vmax)
		vmax = ver;
	return ver;
}

/* After the reload: the versions are back, they decide CASes, and a
 * version is not given again (key 999 was deleted before the reload). */
static void check_versions(void)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	char k[16], v[32];
	uint64_t ver;
	unsigned int i;
	int e;

	CHECK(!tdbc_table_open(c, "sup", &t), "open sup: %s",
	      tdbc_errmsg(c));
	for (i = 0; i < VKEYS; i++)
		CHECK(version_of(t, i) == vers[i], "key %u: version %llu "
		      "after the restore, %llu before", i,
		      (unsigned long long)version_of(t, i),
		      (unsigned long long)vers[i]);
	/* first, before any other write: tdb.ko's counter must already be
	 * past the version key 999 had (and its delete's) */
	key_of(k, 999);
	val_of(v, 999);
	ver = vmax;
	CHECK(!tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0),
	      "put %s: %s", k, tdbc_errmsg(c));
	CHECK(version_of(t, 999) > ver, "key 999, deleted before the reload "
	      "and written after it: version %llu, not above %llu",
	      (unsigned long long)version_of(t, 999), (unsigned long long)ver);
	key_of(k, 0);
	val_of(v, 0);
	e = tdbc_put_if(t, NULL, k, strlen(k), "x", 1, TDBC_IF_VERSION,
			vers[0] + 1);  /* not its version */
	CHECK(e == -ECANCELED, "CAS with a stale version: %d", e);
	e = tdbc_put_if(t, NULL, k, strlen(k), v, strlen(v), TDBC_IF_VERSION,
			vers[0]);
	CHECK(!e, "CAS with the version read before the reload: %s",
	      tdbc_errmsg(c));
	ver = version_of(t, 0);
	CHECK(ver > vers[0], "the CAS gave version %llu", (unsigned long long)ver);
	vers[0] = ver;
	tdbc_table_close(t);
	tdbc_close(c);
}

/*
 * Phase 2's writers.  Writer w owns WKEYS plain keys "w<w>-<k>" and a
 * transaction group of three keys "t<w>-0..2".  It runs one change at a
 * time (sync always: each returns once tdbd made it durable): a put of
 * a fresh version (value "w<w>-<k>-v<version>"), a delete of a key it
 * had put, or a transaction with serial s putting "s<s>" in t0 and t1
 * and, in t2, "s<s>" or (every third serial) a delete.  Its record
 * (shared memory, written by it alone) says what was acknowledged and
 * what is in flight; the checker allows, per key, exactly those two.
 * An answer of -ETIMEDOUT or -EAGAIN (tdbd away past the deadline)
 * is retried with the same change, which is idempotent.
 */
#define WRITERS     3
#define WKEYS       2048
#define DELETED     0x80000000u

struct wstate {
	uint32_t ver[WKEYS];    /* acked: 0 never, version | DELETED */
	uint32_t pend[WKEYS];   /* in flight: 0 none */
	uint32_t txn, txn_pend; /* serials: acked, in flight */
	uint64_t acks;
};

static void wkey(char *k, unsigned int w, unsigned int i)
{
	snprintf(k, 16, "w%u-%u", w, i);
}

static int wval(char *v, unsigned int w, unsigned int i, uint32_t ver)
{
	return snprintf(v, 48, "w%u-%u-v%u", w, i, ver);
}

static void ack(struct wstate *ws)
{
	__atomic_store_n(&ws->acks, ws->acks + 1, __ATOMIC_RELEASE);
}

/* Until acknowledged: e is what the change returned. */
static bool retry(int e, struct tdbc *c, const char *what)
{
	if (!e)
		return false;
	if (e == -ETIMEDOUT || e == -EAGAIN) {
		ksup_msleep(10);
		return true;
	}
	FAIL("writer: %s: %s", what, tdbc_errmsg(c));
}

static void plain_op(struct tdbc *c, struct tdbc_table *t, unsigned int w,
		     struct wstate *ws, uint32_t *version)
{
	unsigned int i = (unsigned int)rand() % WKEYS;
	uint32_t cur = ws->ver[i], next;
	bool del = cur && !(cur & DELETED) && rand() % 4 == 0;
	char k[16], v[48];
	unsigned int tries;
	int e, n;

	wkey(k, w, i);
	next = del ? (cur | DELETED) : ++*version;
	__atomic_store_n(&ws->pend[i], next, __ATOMIC_RELEASE);
	n = wval(v, w, i, next);
	for (tries = 0;; tries++) {
		e = del ? tdbc_del(t, NULL, k, strlen(k)) :
			  tdbc_put(t, NULL, k, strlen(k), v, (size_t)n, 0);
		if (del && e == -ENOENT && tries)   /* the first try did it */
			e = 0;
		if (!retry(e, c, del ? "del" : "put"))
			break;
	}
	__atomic_store_n(&ws->ver[i], next, __ATOMIC_RELEASE);
	__atomic_store_n(&ws->pend[i], 0, __ATOMIC_RELEASE);
	ack(ws);
}

static int txn_once(struct tdbc *c, struct tdbc_table *t, unsigned int w,
		    uint32_t s)
{
	struct tdbc_txn *x = NULL;
	char k[16], v[16];
	int e, i, n = snprintf(v, sizeof(v), "s%u", s);

	if ((e = tdbc_txn_begin(c, &x)))
		return e;
	for (i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), "t%u-%d", w, i);
		e = i == 2 && s % 3 == 0 ?
		    tdbc_del(t, x, k, strlen(k)) :
		    tdbc_put(t, x, k, strlen(k), v, (size_t)n, 0);
		if (e == -ENOENT)       /* deleting what is not there */
			e = 0;
		if (e) {
			tdbc_txn_abort(x);
			return e;
		}
	}
	return tdbc_txn_commit(x);
}

static void txn_op(struct tdbc *c, struct tdbc_table *t, unsigned int w,
		   struct wstate *ws)
{
	uint32_t s = ws->txn + 1;

	__atomic_store_n(&ws->txn_pend, s, __ATOMIC_RELEASE);
	while (retry(txn_once(c, t, w, s), c, "transaction"))
		;
	__atomic_store_n(&ws->txn, s, __ATOMIC_RELEASE);
	__atomic_store_n(&ws->txn_pend, 0, __ATOMIC_RELEASE);
	ack(ws);
}

static void writer(struct wstate *ws, unsigned int w)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	uint32_t version = 0;

	srand((unsigned int)getpid());
	CHECK(!tdbc_table_open(c, "sup", &t), "writer: open");
	for (;;) {
		if (rand() % 5 == 0)
			txn_op(c, t, w, ws);
		else
			plain_op(c, t, w, ws, &version);
		/* paced: the restore at the end (TCG) stays short */
		usleep(WRITER_PAUSE_US);
	}
}

static uint64_t count_acks(const struct wstate *ws)
{
	uint64_t n = 0;
	unsigned int w;

	for (w = 0; w < WRITERS; w++)
		n += __atomic_load_n(&ws[w].acks, __ATOMIC_ACQUIRE);
	return n;
}

/* Is the key in state st (0 never written / deleted: absent)? */
static bool key_is(struct tdbc_table *t, unsigned int w, unsigned int i,
		   uint32_t st)
{
	char k[16], v[48], got[64];
	long len;
	int n;

	wkey(k, w, i);
	len = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got), NULL);
	if (!st || (st & DELETED))
		return len == -ENOENT;
	n = wval(v, w, i, st);
	return len == n && !memcmp(got, v, (size_t)n);
}

/* The group holds serial s whole (0: never written). */
static bool group_is(struct tdbc_table *t, unsigned int w, uint32_t s)
{
	char k[16], v[16], got[16];
	long len;
	int i, n = snprintf(v, sizeof(v), "s%u", s);

	for (i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), "t%u-%d", w, i);
		len = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got), NULL);
		if (!s || (i == 2 && s % 3 == 0)) {
			if (len != -ENOENT)
				return false;
		} else if (len != n || memcmp(got, v, (size_t)n)) {
			return false;
		}
	}
	return true;
}

/* Every acknowledged change is there (or the one in flight after it),
 * no transaction torn; the acknowledged changes counted. */
static uint64_t verify_writers(const struct wstate *ws)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	unsigned int w, i;

	CHECK(!tdbc_table_open(c, "sup", &t), "open sup: %s",
	      tdbc_errmsg(c));
	for (w = 0; w < WRITERS; w++) {
		const struct wstate *s = &ws[w];

		for (i = 0; i < WKEYS; i++)
			CHECK(key_is(t, w, i, s->ver[i]) ||
			      (s->pend[i] && key_is(t, w, i, s->pend[i])),
			      "writer %u key %u: not its acknowledged state "
			      "(%#x) nor the change in flight (%#x)", w, i,
			      s->ver[i], s->pend[i]);
		CHECK(group_is(t, w, s->txn) ||
		      (s->txn_pend && group_is(t, w, s->txn_pend)),
		      "writer %u: transaction group torn or lost "
		      "(acknowledged serial %u, in flight %u)", w, s->txn,
		      s->txn_pend);
	}
	tdbc_table_close(t);
	tdbc_close(c);
	return count_acks(ws);
}

/* After a restore: tdb.ko's STATS show its log (the last LSN, at least
 * min) all durable, as the supervisor said at the restore. */
static void stats_check(uint64_t min)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_stats st;

	CHECK(!tdbc_stats(c, &st), "stats: %s", tdbc_errmsg(c));
	CHECK(st.wal_lsn >= min && st.wal_durable == st.wal_lsn,
	      "tdb.ko's stats: wal_lsn %llu, wal_durable %llu (want "
	      ">= %llu, equal)", (unsigned long long)st.wal_lsn,
	      (unsigned long long)st.wal_durable, (unsigned long long)min);
	tdbc_close(c);
}

/* n records, 256 in flight with sync always, through tdb.ko with tdbd
 * following, then tdb.ko reloaded and every record restored (its time
 * is tdbd's "restored ... records/s" line).  With the 1 MiB log ring
 * and WAL segments of this test, BULK_KEYS wraps the ring and switches
 * segments several times each: a switch once left tdb.ko's answers
 * held for ever (the WAL's rotation made records durable without
 * telling tdb.ko). */
#define BIG_N   3u
#define BIG_LEN 100000u

static void bulk(unsigned int n)
{
	static char bigv[BIG_LEN];
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	struct tdbc_req rq[256];
	struct tdbc_cqe cq[256];
	struct tdbc_table_stat st;
	static char keys[256][16];
	unsigned int i = 0, j;
	int e;

	CHECK(!tdbc_table_create(c, "bulk", NULL), "create bulk");
	CHECK(!tdbc_table_open(c, "bulk", &t), "open bulk");
	while (i < n) {
		for (j = 0; j < 256 && i + j < n; j++) {
			snprintf(keys[j], 16, "b%010u", i + j);
			rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT,
				.table = t, .key = keys[j], .klen = 11,
				.val = keys[j], .vlen = 11 };
		}
		e = tdbc_submit(c, rq, j);
		CHECK(e > 0, "bulk submit: %s", tdbc_errmsg(c));
		i += (unsigned int)e;
		if (i % (n / 10 ? n / 10 : 1) < (unsigned int)e) {
			printf("test_supervise: bulk: %u of %u put\n", i, n);
			fflush(stdout);
		}
		while (tdbc_inflight(c)) {
			e = tdbc_reap(c, cq, 256, 1, 60000);
			CHECK(e > 0, "bulk: no answer in 60 s after %u puts "
			      "(%d): answers held for ever?", i, e);
			for (j = 0; j < (unsigned int)e; j++)
				CHECK(!cq[j].res, "bulk put: %d", cq[j].res);
		}
	}
	/* records too large for a RESTORE_BULK batch (64 KiB): the
	 * restore sends each as a PUT, between batches */
	for (j = 0; j < BIG_N; j++) {
		char bk[8];

		snprintf(bk, sizeof(bk), "big%u", j);
		memset(bigv, 'a' + (int)j, BIG_LEN);
		CHECK(!tdbc_put(t, NULL, bk, strlen(bk), bigv, BIG_LEN - j, 0),
		      "put %s: %s", bk, tdbc_errmsg(c));
	}
	tdbc_table_close(t);
	tdbc_close(c);
	ksup_stop(&td, SIGTERM);
	reload_module();
	tdbd_start();
	c = ksup_connect(0);
	CHECK(!tdbc_table_stat(c, "bulk", &st) && st.records == n + BIG_N,
	      "bulk after the restore");
	CHECK(!tdbc_table_open(c, "bulk", &t), "open bulk");
	for (j = 0; j < BIG_N; j++) {
		static char got[BIG_LEN];
		char bk[8];
		long len;

		snprintf(bk, sizeof(bk), "big%u", j);
		memset(bigv, 'a' + (int)j, BIG_LEN);
		len = tdbc_get(t, NULL, bk, strlen(bk), got, sizeof(got),
			       NULL);
		CHECK(len == (long)(BIG_LEN - j) &&
		      !memcmp(got, bigv, BIG_LEN - j),
		      "%s after the restore: %ld bytes or other bytes", bk,
		      len);
	}
	for (j = 0; j < 256 && j < n; j++) {
		char got[16];

		snprintf(keys[j], 16, "b%010u", n - 1 - j);
		CHECK(tdbc_get(t, NULL, keys[j], 11, got, sizeof(got),
			       NULL) == 11 && !memcmp(got, keys[j], 11),
		      "%s after the restore", keys[j]);
	}
	tdbc_table_close(t);
	/* and the restore went in batches, the big ones as PUTs */
	CHECK(ksup_count_lines(LOG_FILE, "RESTORE_BULK request(s) and 3 "
			       "PUT(s)") >= 1, "no restore in batches with "
	      "%u PUTs in %s", BIG_N, LOG_FILE);
	/* read from the checkpoint store, not the mirror (issue 29) */
	CHECK(ksup_count_lines(LOG_FILE, "into tdb.ko from the checkpoint "
			       "store in") >= 1, "the restore did not read "
	      "the checkpoint store (%s)", LOG_FILE);
	CHECK(!tdbc_table_drop(c, "bulk"), "drop bulk");
	tdbc_close(c);
	printf("test_supervise: bulk: %u records restored:\n", n);
	system("grep -h 'restored .* records/s' " LOG_FILE " | tail -n 1");
}

int main(void)
{
	struct wstate *ws;
	pid_t wp[WRITERS];
	uint64_t acks;
	struct tdbc_stats st;
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	char k[16], v[32];
	unsigned int i;
	int status;

	td.path = getenv("TDB_KTEST_TDBD");
	if (!td.path || !*td.path) {
		fprintf(stderr, "test_supervise: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_supervise: SKIP: tdb.ko has no "
			"supervisor ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	system("rm -rf " DATA_DIR " " LOG_FILE);
	srand((unsigned int)time(NULL));
	reload_module();        /* with ko_args() */

	/* 1. restore at start */
	tdbd_start();
	c = ksup_connect(0);
	CHECK(!tdbc_table_create(c, "sup", NULL), "create: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_table_open(c, "sup", &t), "open: %s", tdbc_errmsg(c));
	for (i = 0; i < 1000; i++) {
		key_of(k, i);
		val_of(v, i);
		CHECK(!tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0),
		      "put %s: %s", k, tdbc_errmsg(c));
	}
	for (i = 0; i < VKEYS; i++)
		vers[i] = version_of(t, i);
	/* the last write before the reload: a delete (its version is the
	 * highest given; only TDB_IOC_SUP_VERSION tells tdb.ko of it) */
	(void)version_of(t, 999);
	key_of(k, 999);
	CHECK(!tdbc_del(t, NULL, k, strlen(k)), "del %s: %s", k,
	      tdbc_errmsg(c));
	tdbc_table_close(t);
	expiry_before(c);
	tdbc_close(c);
	ksup_stop(&td, SIGTERM);
	reload_module();
	tdbd_start();
	CHECK(ksup_count_lines(LOG_FILE, "restoring them") >= 2, "no restore at start");
	CHECK(verify(NULL, 999) == 999, "restore");
	check_versions();
	printf("test_supervise: versions restored, a CAS across the reload, "
	       "none given twice\n");
	expiry_after();
	printf("test_supervise: deadlines and the default TTL restored, an "
	       "expired record not\n");
	stats_check(1001);
	printf("test_supervise: restore at start: 1000 keys back\n");
	bulk(getenv("TDB_KTEST_SUP_BULK") ?
	     (unsigned int)strtoul(getenv("TDB_KTEST_SUP_BULK"), NULL, 10) :
	     BULK_KEYS);

	/* 2. SIGKILL while writers run */
	ws = mmap(NULL, WRITERS * sizeof(*ws), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(ws != MAP_FAILED, "mmap");
	for (i = 0; i < WRITERS; i++) {
		wp[i] = fork();
		CHECK(wp[i] >= 0, "fork");
		if (!wp[i])
			writer(&ws[i], i);
	}
	for (i = 0; i < KILL_CYCLES; i++) {
		ksup_msleep(50 + (unsigned int)rand() % 400);
		ksup_stop(&td, SIGKILL);
		ksup_msleep((unsigned int)rand() % 100);
		tdbd_start();
	}
	/* writes resume: a tdbd that died after its fdatasync but before
	 * it told tdb.ko must not leave an answer held for ever */
	acks = count_acks(ws);
	ksup_msleep(2000);
	CHECK(count_acks(ws) > acks, "the writers made no progress in 2 s "
	      "with tdbd running (%llu changes acknowledged): an answer "
	      "held for ever?", (unsigned long long)acks);
	/* the end: tdbd killed while the writers run (no clean stop that
	 * would write what it had read), then the writers; tdb.ko is
	 * reloaded, which drops its log ring, so what comes back is the
	 * WAL's alone: an answer released before its change was durable
	 * would show as a lost change */
	ksup_stop(&td, SIGKILL);
	ksup_msleep(50);
	for (i = 0; i < WRITERS; i++) {
		kill(wp[i], SIGKILL);
		CHECK(waitpid(wp[i], &status, 0) == wp[i], "waitpid writer");
	}
	acks = verify_writers(ws);      /* resident, before the reload */
	c = ksup_connect(0);
	CHECK(!tdbc_stats(c, &st), "stats: %s", tdbc_errmsg(c));
	CHECK(st.cleanups >= WRITERS, "tdb.ko's stats count %llu dead "
	      "clients cleaned up, not the %u writers killed",
	      (unsigned long long)st.cleanups, WRITERS);
	tdbc_close(c);
	reload_module();
	tdbd_start();
	verify_writers(ws);
	CHECK(verify(NULL, 1000) == 1000, "phase 1's keys after the reload");
	printf("test_supervise: %u SIGKILL cycles: %llu acknowledged changes "
	       "of %u writers (puts, deletes, transactions), all there "
	       "after a restore\n", KILL_CYCLES, (unsigned long long)acks,
	       WRITERS);
	system("grep -h 'restored .* records/s' " LOG_FILE);
	for (i = 0; i < WRITERS; i++)
		CHECK(ws[i].acks > 10 && ws[i].txn > 1, "writer %u: %llu "
		      "changes, %u transactions acknowledged: too few to "
		      "mean anything", i, (unsigned long long)ws[i].acks,
		      ws[i].txn);

	/* 3. leave a fresh tdb.ko */
	ksup_stop(&td, SIGTERM);
	reload_module();
	system("rm -rf " DATA_DIR);
	return 0;
}
