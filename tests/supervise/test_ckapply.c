// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ckapply.c - kernel mode's checkpoint without a mirror (issue 29;
 * src/daemon/durable/ckapply.c): a run of records as tdb.ko logs them
 * applied straight to a checkpoint store gives the store that the
 * mirror's checkpoint of the same records gives (tdbd in kernel mode:
 * tdbd_durable_apply, then the last checkpoint at stop).  Compared
 * through the store's own reader (tdbd_ckpt_read_meta, _read_version,
 * _load_table): the LSN, every table's schema, the version counter, and
 * every record with its version and deadline.  The records cover hash,
 * bounded and ordered tables, a transaction over three tables, puts over
 * puts, deletes (of a key that is not there too), a key over LMDB's key
 * limit, a deadline to come and one past, a table dropped and a name
 * made again.  Also: the run split into several commits gives the same
 * store; a run again after its commit (a crash before the WAL was cut)
 * skips what the store has; a gap, a change to a table the store lacks,
 * a create of one it has and a drop of one it lacks are refused, naming
 * the LSN and the table, with nothing committed; an abandoned run (a
 * power cut before the commit) leaves the store as it was.  And the
 * checkpoint from a WAL (tdbd_ckapply_wal: wal_read_range, runs): the
 * records appended to a WAL of several segments, read back and applied,
 * give the mirror's store too.
 *
 * Linked with tdbd's objects (src/daemon, without main.c).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "durable/ckapply.h"
#include "durable/ckpt.h"
#include "durable/durable.h"
#include "rec.h"
#include "tdb/proto.h"
#include "tdbd.h"
#include "wal.h"
#include "walrec.h"

uint64_t tdbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000;
}

static char err[1024];

/* --- the records -------------------------------------------------------- */

#define NREC_MAX 512

struct recs {
	unsigned char *r[NREC_MAX];
	size_t len[NREC_MAX];
	unsigned int n;
	uint64_t lsn;           /* the last one's */
};

static unsigned char *slot(struct recs *s)
{
	assert_true(s->n < NREC_MAX);
	s->r[s->n] = calloc(1, 8192);
	assert_non_null(s->r[s->n]);
	return s->r[s->n];
}

static void done(struct recs *s, size_t len)
{
	s->len[s->n++] = len;
}

static void create(struct recs *s, const char *tab, uint64_t id,
		   uint64_t ttl, uint64_t max_records, uint32_t evict,
		   uint32_t flags)
{
	unsigned char *r = slot(s);
	size_t len = walrec_begin(r, WALREC_CREATE), n = strlen(tab);

	walrec_create(r + len, id, 1000, 1001, 0640, 3, 1);  /* sync 1 */
	len += WALREC_CREATE_FIX;
	r[len++] = (unsigned char)n;
	memcpy(r + len, tab, n);
	len += n;
	len += walrec_create_ext(r + len, ttl, 0, max_records, evict, flags);
	walrec_seal(r, (uint32_t)len, ++s->lsn, 0);
	walrec_set_crc(r, walrec_crc(r, (uint32_t)len));
	done(s, len);
}

static void drop(struct recs *s, const char *tab)
{
	unsigned char *r = slot(s);

	s->lsn++;
	done(s, rec_drop(r, s->lsn, tab));
}

/* A record of ops: begin, op..., end. */
static unsigned char *cur;
static size_t curlen;
static uint32_t curops;

static void begin(struct recs *s)
{
	cur = slot(s);
	s->lsn++;
	curlen = walrec_begin_v(cur, REC_VERSION(s->lsn));
	curops = 0;
}

static void opk(const char *tab, const void *key, size_t kl, const char *val,
		uint64_t dl)
{
	size_t n = strlen(tab), vl = val ? strlen(val) : 0;
	size_t h = walrec_op_dl(cur + curlen, val ? WALREC_OP_PUT :
				WALREC_OP_DEL, (uint8_t)n, (uint32_t)kl,
				(uint32_t)vl, dl);

	assert_true(curlen + h + n + kl + vl <= 8192);
	memcpy(cur + curlen + h, tab, n);
	memcpy(cur + curlen + h + n, key, kl);
	memcpy(cur + curlen + h + n + kl, val ? val : "", vl);
	curlen += h + n + kl + vl;
	curops++;
}

static void op(const char *tab, const char *key, const char *val,
	       uint64_t dl)
{
	opk(tab, key, strlen(key), val, dl);
}

static void end(struct recs *s)
{
	walrec_seal(cur, (uint32_t)curlen, s->lsn, curops);
	walrec_set_crc(cur, walrec_crc(cur, (uint32_t)curlen));
	done(s, curlen);
}

static void put1(struct recs *s, const char *tab, const char *key,
		 const char *val, uint64_t dl)
{
	begin(s);
	op(tab, key, val, dl);
	end(s);
}

/* The history both stores are made of. */
static void history(struct recs *s)
{
	static char longkey[700], v[64];
	const uint64_t later = 4102444800000ull;        /* 2100-01-01 */
	char k[32];
	int i;

	memset(s, 0, sizeof(*s));
	create(s, "kt", 77, 0, 0, 0, 0);
	create(s, "ke", 78, 60000, 50, TDB_EVICT_TTL, 0);
	create(s, "ko", 79, 0, 0, 0, TDB_TABLE_F_ORDERED);
	for (i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "key-%03d", (i * 17) % 40);
		snprintf(v, sizeof(v), "value %d of kt", i);
		put1(s, "kt", k, v, 0);
		put1(s, "ko", k, v, 0);
	}
	for (i = 0; i < 40; i += 3) {           /* puts over puts */
		snprintf(k, sizeof(k), "key-%03d", i);
		snprintf(v, sizeof(v), "again %d", i);
		put1(s, "kt", k, v, 0);
	}
	for (i = 1; i < 40; i += 4) {           /* deletes */
		snprintf(k, sizeof(k), "key-%03d", i);
		put1(s, "kt", k, NULL, 0);
		put1(s, "ko", k, NULL, 0);
	}
	put1(s, "kt", "never-there", NULL, 0);
	begin(s);                               /* a transaction */
	op("kt", "txn-a", "A", 0);
	op("ke", "txn-b", "B", later);
	op("ko", "key-000", NULL, 0);
	op("kt", "key-003", NULL, 0);
	end(s);
	put1(s, "ke", "soon", "expires in 2100", later);
	put1(s, "ke", "past", "expired already", 1000);   /* 1970 */
	put1(s, "ke", "plain", "no deadline", 0);
	memset(longkey, 'L', sizeof(longkey));
	begin(s);                               /* over LMDB's key limit */
	opk("kt", longkey, sizeof(longkey), "long one", 0);
	end(s);
	begin(s);
	opk("kt", longkey, sizeof(longkey), "long two", 0);
	end(s);
	longkey[0] = 'M';
	begin(s);
	opk("kt", longkey, sizeof(longkey), "long gone", 0);
	end(s);
	begin(s);
	opk("kt", longkey, sizeof(longkey), NULL, 0);
	end(s);
	create(s, "kd", 80, 0, 0, 0, 0);        /* made and dropped */
	put1(s, "kd", "x", "gone with kd", 0);
	drop(s, "kd");
	create(s, "kr", 81, 0, 0, 0, 0);        /* a name made again */
	put1(s, "kr", "old", "of the first kr", 0);
	drop(s, "kr");
	create(s, "kr", 82, 0, 0, 0, TDB_TABLE_F_ORDERED);
	put1(s, "kr", "new", "of the second kr", 0);
}

static void recs_free(struct recs *s)
{
	for (unsigned int i = 0; i < s->n; i++)
		free(s->r[i]);
	s->n = 0;
}

static struct wal_rec decode(const struct recs *s, unsigned int i)
{
	struct wal_rec wr;
	const char *why = "";

	if (wal_rec_check(s->r[i], s->len[i], &wr, &why))
		fail_msg("record %u: %s", i, why);
	return wr;
}

/* --- the two stores ------------------------------------------------------ */

static void tmpdir(char *d, size_t n, const char *what)
{
	snprintf(d, n, "/tmp/tdb-ckapply-%s-XXXXXX", what);
	assert_non_null(mkdtemp(d));
}

static void rmdir_r(const char *d)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", d);
	assert_int_equal(system(cmd), 0);
}

/* Daemon mode's store for the same changes (what the mirror's checkpoint
 * wrote before issue 29): the records in dir's WAL, then tdbd in daemon
 * mode recovers its tables from it (a replay into its engine) and writes
 * its checkpoint of them, from its tables (after recovery or at stop). */
static void mirror_store(const char *dir, const struct recs *s)
{
	struct wal_opts wo = { .segment_size = 1 << 20,
			       .sync = WAL_SYNC_NONE };
	static struct tdbd d;
	struct wal *w = NULL;
	char wdir[128];

	snprintf(wdir, sizeof(wdir), "%s/wal", dir);
	assert_int_equal(mkdir(wdir, 0700), 0);
	if (wal_open(wdir, 1, &wo, &w, err, sizeof(err)))
		fail_msg("wal_open: %s", err);
	for (unsigned int i = 0; i < s->n; i++)
		if (wal_append_rec(w, s->r[i], s->len[i], err, sizeof(err)))
			fail_msg("daemon's WAL: record %u: %s", i, err);
	assert_int_equal(wal_sync_to(w, wal_appended(w)), 0);
	wal_close(w);

	memset(&d, 0, sizeof(d));
	tdbd_config_defaults(&d.cfg);
	d.cfg.hugepages = false;
	d.cfg.backend = TDBD_BACKEND_DAEMON;
	snprintf(d.cfg.data_dir, sizeof(d.cfg.data_dir), "%s", dir);
	pthread_mutex_init(&d.wake_lock, NULL);
	assert_int_equal(tdbd_owner_start(&d), 0);
	assert_int_equal(tdbd_durable_start(&d, tdbd_on_durable), 0);
	assert_int_equal(wal_appended(d.wal), s->lsn);
	tdbd_durable_stop(&d);
	tdbd_owner_stop(&d);
	pthread_mutex_destroy(&d.wake_lock);
}

static uint64_t last_written;   /* the last run's puts and deletes */

/* Records [from, to) in one run: what tdbd_ckapply_rec said of each
 * counted into *applied, *skipped; the first error returned (after
 * which the run is aborted, not committed). */
static int run(struct ckpt *ck, const struct recs *s, unsigned int from,
	       unsigned int to, unsigned int *applied, unsigned int *skipped)
{
	struct ckapply *a = NULL;
	int e;

	*applied = *skipped = 0;
	err[0] = '\0';
	if ((e = tdbd_ckapply_begin(ck, wall_ms(), 0, &a, err, sizeof(err))))
		return e;
	for (unsigned int i = from; i < to; i++) {
		struct wal_rec wr = decode(s, i);

		e = tdbd_ckapply_rec(a, &wr);
		if (e < 0) {
			snprintf(err, sizeof(err), "%s",
				 tdbd_ckapply_error(a));
			tdbd_ckapply_abort(a);
			return e;
		}
		*applied += e;
		*skipped += !e;
	}
	if ((e = tdbd_ckapply_flush(a)) < 0) {
		snprintf(err, sizeof(err), "%s", tdbd_ckapply_error(a));
		tdbd_ckapply_abort(a);
		return e;
	}
	last_written = tdbd_ckapply_written(a);
	return tdbd_ckapply_commit(a, err, sizeof(err));
}

static struct ckpt *open_store(const char *dir)
{
	struct ckpt *ck = NULL;

	if (tdbd_ckpt_open(dir, &ck, err, sizeof(err)))
		fail_msg("open %s: %s", dir, err);
	return ck;
}

/* --- comparing two stores ------------------------------------------------- */

struct item {
	unsigned char *k, *v;
	size_t kl, vl;
	uint64_t ver, dl;
};

struct items {
	struct item *v;
	size_t n, cap;
};

static int collect(void *arg, const void *key, size_t klen, const void *val,
		   size_t vlen, uint64_t version, uint64_t deadline)
{
	struct items *it = arg;
	struct item *x;

	if (it->n == it->cap) {
		it->cap = it->cap ? it->cap * 2 : 64;
		it->v = realloc(it->v, it->cap * sizeof(*it->v));
		assert_non_null(it->v);
	}
	x = &it->v[it->n++];
	x->k = malloc(klen + 1);
	x->v = malloc(vlen + 1);
	assert_true(x->k && x->v);
	memcpy(x->k, key, klen);
	memcpy(x->v, val, vlen);
	x->kl = klen;
	x->vl = vlen;
	x->ver = version;
	x->dl = deadline;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	size_t n = x->kl < y->kl ? x->kl : y->kl;
	int c = memcmp(x->k, y->k, n);

	return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].k);
		free(it->v[i].v);
	}
	free(it->v);
	memset(it, 0, sizeof(*it));
}

static int tab_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ckpt_table *)a)->name,
		      ((const struct ckpt_table *)b)->name);
}

/* The stores at a and b are equal; how many records they hold. */
static size_t assert_stores_equal(const char *da, const char *db)
{
	struct ckpt *a = open_store(da), *b = open_store(db);
	struct ckpt_table *ta = NULL, *tb = NULL;
	unsigned int na = 0, nb = 0;
	uint64_t la, lb, va, vb;
	size_t total = 0;

	if (tdbd_ckpt_read_meta(a, &la, &ta, &na, err, sizeof(err)) ||
	    tdbd_ckpt_read_meta(b, &lb, &tb, &nb, err, sizeof(err)) ||
	    tdbd_ckpt_read_version(a, &va, err, sizeof(err)) ||
	    tdbd_ckpt_read_version(b, &vb, err, sizeof(err)))
		fail_msg("reading the stores: %s", err);
	if (la != lb)
		fail_msg("LSN: %llu (mirror) vs %llu (applied)",
			 (unsigned long long)la, (unsigned long long)lb);
	if (va != vb)
		fail_msg("version: %llu (mirror) vs %llu (applied)",
			 (unsigned long long)va, (unsigned long long)vb);
	if (na != nb)
		fail_msg("tables: %u (mirror) vs %u (applied)", na, nb);
	qsort(ta, na, sizeof(*ta), tab_cmp);
	qsort(tb, nb, sizeof(*tb), tab_cmp);
	for (unsigned int i = 0; i < na; i++) {
		struct items ia = { 0 }, ib = { 0 };
		const struct ckpt_table *x = &ta[i], *y = &tb[i];

		if (strcmp(x->name, y->name) || x->id != y->id ||
		    x->uid != y->uid || x->gid != y->gid ||
		    x->mode != y->mode || x->max_extents != y->max_extents ||
		    x->sync != y->sync || x->default_ttl != y->default_ttl ||
		    x->max_bytes != y->max_bytes ||
		    x->max_records != y->max_records ||
		    x->evict != y->evict || x->flags != y->flags ||
		    x->aside != y->aside)
			fail_msg("table %s/%s: schemas differ (id %llu/%llu, "
				 "mode %o/%o, max_extents %u/%u, sync %u/%u, "
				 "ttl %llu/%llu, max_records %llu/%llu, "
				 "evict %u/%u, flags %u/%u)", x->name, y->name,
				 (unsigned long long)x->id,
				 (unsigned long long)y->id, x->mode, y->mode,
				 x->max_extents, y->max_extents, x->sync,
				 y->sync, (unsigned long long)x->default_ttl,
				 (unsigned long long)y->default_ttl,
				 (unsigned long long)x->max_records,
				 (unsigned long long)y->max_records,
				 x->evict, y->evict, x->flags, y->flags);
		if (tdbd_ckpt_load_table(a, x->name, collect, &ia, NULL, err,
					 sizeof(err)) ||
		    tdbd_ckpt_load_table(b, y->name, collect, &ib, NULL, err,
					 sizeof(err)))
			fail_msg("loading table %s: %s", x->name, err);
		qsort(ia.v, ia.n, sizeof(*ia.v), item_cmp);
		qsort(ib.v, ib.n, sizeof(*ib.v), item_cmp);
		if (ia.n != ib.n)
			fail_msg("table %s: %zu records (mirror) vs %zu "
				 "(applied)", x->name, ia.n, ib.n);
		for (size_t j = 0; j < ia.n; j++) {
			const struct item *p = &ia.v[j], *q = &ib.v[j];

			if (item_cmp(p, q) || p->vl != q->vl ||
			    memcmp(p->v, q->v, p->vl) || p->ver != q->ver ||
			    p->dl != q->dl)
				fail_msg("table %s, record %zu (key %.*s, %zu "
					 "bytes): value %.*s/%.*s, version "
					 "%llu/%llu, deadline %llu/%llu "
					 "(mirror/applied)", x->name, j,
					 (int)(p->kl > 40 ? 40 : p->kl), p->k,
					 p->kl, (int)p->vl, p->v, (int)q->vl,
					 q->v, (unsigned long long)p->ver,
					 (unsigned long long)q->ver,
					 (unsigned long long)p->dl,
					 (unsigned long long)q->dl);
		}
		total += ia.n;
		items_free(&ia);
		items_free(&ib);
	}
	free(ta);
	free(tb);
	tdbd_ckpt_close(a);
	tdbd_ckpt_close(b);
	return total;
}

static uint64_t store_lsn(const char *dir)
{
	struct ckpt *ck = open_store(dir);
	struct ckpt_table *t = NULL;
	unsigned int n = 0;
	uint64_t lsn;

	if (tdbd_ckpt_read_meta(ck, &lsn, &t, &n, err, sizeof(err)))
		fail_msg("%s: %s", dir, err);
	free(t);
	tdbd_ckpt_close(ck);
	return lsn;
}

/* --- tests ------------------------------------------------------------------ */

static char mdir[64], adir[64];
static struct recs hist;

static int setup(void **state)
{
	(void)state;
	history(&hist);
	tmpdir(mdir, sizeof(mdir), "mirror");
	mirror_store(mdir, &hist);
	return 0;
}

static int one_setup(void **state)
{
	(void)state;
	tmpdir(adir, sizeof(adir), "applied");
	return 0;
}

static int one_teardown(void **state)
{
	(void)state;
	rmdir_r(adir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rmdir_r(mdir);
	recs_free(&hist);
	return 0;
}

/* One run of every record: the mirror's store. */
static void test_one_run(void **state)
{
	struct ckpt *ck;
	unsigned int ap, sk;
	size_t n;

	(void)state;
	ck = open_store(adir);
	if (run(ck, &hist, 0, hist.n, &ap, &sk))
		fail_msg("run: %s", err);
	assert_int_equal(ap, hist.n);
	assert_int_equal(sk, 0);
	/* 129 changes in the history, written as the last change of each
	 * key between creates and drops: kt's 44 keys, ko's 40, ke's 4
	 * (until kd's create), kd's x, the first kr's and the second's: 91;
	 * less the 25 whose last change is a delete (the past deadline's
	 * put too) in tables created in the run (nothing to delete) */
	if (last_written != 66)
		fail_msg("%llu puts and deletes written, not 66",
			 (unsigned long long)last_written);
	tdbd_ckpt_close(ck);
	assert_int_equal(store_lsn(mdir), hist.lsn);
	n = assert_stores_equal(mdir, adir);
	assert_true(n > 60);
}

/* One run written every 300 bytes of changes gathered
 * (TDBD_CKAPPLY_PEND_MAX; 64 MiB in tdbd): a key changed in two
 * batches is written twice, the last last: the mirror's store. */
static void test_small_batches(void **state)
{
	struct ckpt *ck;
	unsigned int ap, sk;

	(void)state;
	setenv("TDBD_CKAPPLY_PEND_MAX", "300", 1);
	ck = open_store(adir);
	if (run(ck, &hist, 0, hist.n, &ap, &sk))
		fail_msg("run: %s", err);
	unsetenv("TDBD_CKAPPLY_PEND_MAX");
	assert_int_equal(ap, hist.n);
	if (last_written <= 66)
		fail_msg("%llu puts and deletes written: not more than in one "
			 "batch (66)", (unsigned long long)last_written);
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, adir);
}

/* Runs of 7 records (each a commit), one run again over the last two
 * commits' records: the same store; what the store had was skipped. */
static void test_runs(void **state)
{
	struct ckpt *ck;
	unsigned int ap, sk, i, to;

	(void)state;
	ck = open_store(adir);
	for (i = 0; i < hist.n; i = to) {
		to = i + 7 < hist.n ? i + 7 : hist.n;
		if (run(ck, &hist, i, to, &ap, &sk))
			fail_msg("run %u..%u: %s", i, to, err);
		assert_int_equal(ap, to - i);
		if (i >= 14 && to < hist.n) {   /* again, and 3 more */
			unsigned int more = to + 3 < hist.n ? to + 3 : hist.n;

			if (run(ck, &hist, i - 14, more, &ap, &sk))
				fail_msg("run again %u..%u: %s", i - 14, more,
					 err);
			assert_int_equal(sk, to - (i - 14));
			assert_int_equal(ap, more - to);
			to = more;
		}
	}
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, adir);
}

/* Refusals and an abandoned run: the store stays at its LSN. */
static void test_refused(void **state)
{
	struct ckpt *ck;
	struct ckapply *a;
	struct recs bad;
	struct wal_rec wr;
	unsigned int ap, sk;
	uint64_t at;

	(void)state;
	ck = open_store(adir);
	if (run(ck, &hist, 0, 10, &ap, &sk))
		fail_msg("run: %s", err);
	at = 10;
	/* a gap: record 12 after the store's 10 */
	assert_int_equal(run(ck, &hist, 11, 13, &ap, &sk), -EPROTO);
	assert_non_null(strstr(err, "WAL record 12 does not follow LSN 10"));
	/* within a run too, after one applied */
	assert_int_equal(tdbd_ckapply_begin(ck, wall_ms(), 0, &a, err,
					    sizeof(err)), 0);
	wr = decode(&hist, 10);
	assert_int_equal(tdbd_ckapply_rec(a, &wr), 1);
	wr = decode(&hist, 12);
	assert_int_equal(tdbd_ckapply_rec(a, &wr), -EPROTO);
	assert_non_null(strstr(tdbd_ckapply_error(a), "WAL record 13 does "
			       "not follow LSN 11"));
	wr = decode(&hist, 11);         /* and nothing after the failure */
	assert_int_equal(tdbd_ckapply_rec(a, &wr), -EPROTO);
	assert_int_equal(tdbd_ckapply_commit(a, err, sizeof(err)), -EPROTO);
	tdbd_ckpt_close(ck);
	assert_int_equal(store_lsn(adir), at);
	ck = open_store(adir);

	/* a change to a table the store lacks, a create of one it has, a
	 * drop of one it lacks */
	memset(&bad, 0, sizeof(bad));
	bad.lsn = at;
	put1(&bad, "nosuch", "k", "v", 0);
	assert_int_equal(run(ck, &bad, 0, 1, &ap, &sk), -EUCLEAN);
	assert_non_null(strstr(err, "WAL record 11 changes table nosuch, "
			       "which the checkpoint store does not hold at "
			       "LSN 10"));
	recs_free(&bad);
	bad.lsn = at;
	create(&bad, "kt", 90, 0, 0, 0, 0);
	assert_int_equal(run(ck, &bad, 0, 1, &ap, &sk), -EUCLEAN);
	assert_non_null(strstr(err, "WAL record 11 creates table kt, which "
			       "the checkpoint store holds"));
	recs_free(&bad);
	bad.lsn = at;
	drop(&bad, "nosuch");
	assert_int_equal(run(ck, &bad, 0, 1, &ap, &sk), -EUCLEAN);
	assert_non_null(strstr(err, "WAL record 11 drops table nosuch"));
	recs_free(&bad);

	/* abandoned (a power cut before the commit): nothing of it */
	assert_int_equal(tdbd_ckapply_begin(ck, wall_ms(), 0, &a, err,
					    sizeof(err)), 0);
	for (unsigned int i = 10; i < 20; i++) {
		wr = decode(&hist, i);
		assert_int_equal(tdbd_ckapply_rec(a, &wr), 1);
	}
	assert_int_equal(tdbd_ckapply_lsn(a), 20);
	tdbd_ckapply_abort(a);
	tdbd_ckpt_close(ck);
	assert_int_equal(store_lsn(adir), at);

	/* and the rest, as recovery would finish it: the mirror's store */
	ck = open_store(adir);
	if (run(ck, &hist, 0, hist.n, &ap, &sk))
		fail_msg("run: %s", err);
	assert_int_equal(sk, 10);
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, adir);
}


/* The same records in a WAL (several segments, tdb.ko's records
 * appended as the follower appends them), read back and applied in
 * runs of 7 and in one: the mirror's store; and read again: nothing
 * to do.  A WAL that ends before the LSN asked for: an error naming the
 * records, the runs before it committed. */
static unsigned int commits;
static uint64_t last_commit;
static int cancel_now(void *arg)
{
	(void)arg;
	return -ECANCELED;
}

static void count_commit(void *arg, uint64_t lsn)
{
	(void)arg;
	commits++;
	last_commit = lsn;
}

static void test_from_wal(void **state)
{
	struct ckapply_opts o = { 0 };
	struct wal_opts wo = { .segment_size = 4096, .sync = WAL_SYNC_NONE };
	char wdir[80], sdir[80];
	struct wal *w = NULL;
	struct ckpt *ck;
	uint64_t lsn;

	(void)state;
	snprintf(wdir, sizeof(wdir), "%s/wal", adir);
	snprintf(sdir, sizeof(sdir), "%s/s1", adir);
	assert_int_equal(mkdir(wdir, 0700), 0);
	assert_int_equal(mkdir(sdir, 0700), 0);
	if (wal_open(wdir, 1, &wo, &w, err, sizeof(err)))
		fail_msg("wal_open: %s", err);
	for (unsigned int i = 0; i < hist.n; i++)
		if (wal_append_rec(w, hist.r[i], hist.len[i], err,
				   sizeof(err)) || wal_write(w))
			fail_msg("append %u: %s", i, err);
	assert_int_equal(wal_sync_to(w, hist.lsn), 0);
	assert_int_equal(wal_durable(w), hist.lsn);
	{
		DIR *dp = opendir(wdir);
		struct dirent *de;
		unsigned int segs = 0;

		assert_non_null(dp);
		while ((de = readdir(dp)))
			segs += !strncmp(de->d_name, "wal-", 4);
		closedir(dp);
		assert_true(segs >= 3);
	}

	ck = open_store(sdir);
	o.run_max = 7;
	o.now_ms = wall_ms();
	if (tdbd_ckapply_wal(ck, wdir, hist.lsn, &o, &lsn, err, sizeof(err)))
		fail_msg("from the WAL: %s", err);
	assert_int_equal(lsn, hist.lsn);
	assert_int_equal(tdbd_ckapply_wal(ck, wdir, hist.lsn, &o, &lsn, err,
					  sizeof(err)), 0);
	assert_int_equal(lsn, hist.lsn);
	/* past the log's end: the records named, nothing lost */
	assert_int_equal(tdbd_ckapply_wal(ck, wdir, hist.lsn + 3, &o, &lsn,
					  err, sizeof(err)), -ENODATA);
	assert_non_null(strstr(err, "the log ends at record"));
	assert_int_equal(lsn, hist.lsn);
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, sdir);

	snprintf(sdir, sizeof(sdir), "%s/s2", adir);
	assert_int_equal(mkdir(sdir, 0700), 0);
	ck = open_store(sdir);
	o.run_max = 0;
	o.on_commit = count_commit;
	commits = 0;
	if (tdbd_ckapply_wal(ck, wdir, hist.lsn, &o, &lsn, err, sizeof(err)))
		fail_msg("from the WAL, one run: %s", err);
	assert_int_equal(commits, 1);
	assert_int_equal(last_commit, hist.lsn);
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, sdir);

	/* checkpoint-run-size: a run ends once it gathered that many bytes
	 * (here 2000 bytes, through the opts; tdbd's setting is 1M at
	 * least),
	 * each run a commit told to on_commit, the same store */
	snprintf(sdir, sizeof(sdir), "%s/s3", adir);
	assert_int_equal(mkdir(sdir, 0700), 0);
	ck = open_store(sdir);
	o.run_size = 2000;
	commits = 0;
	if (tdbd_ckapply_wal(ck, wdir, hist.lsn, &o, &lsn, err, sizeof(err)))
		fail_msg("from the WAL, runs of 2000 bytes: %s", err);
	assert_true(commits > 3);
	assert_int_equal(last_commit, hist.lsn);
	tdbd_ckpt_close(ck);
	assert_stores_equal(mdir, sdir);

	/* cancelled: -ECANCELED before the first record, nothing applied */
	snprintf(sdir, sizeof(sdir), "%s/s4", adir);
	assert_int_equal(mkdir(sdir, 0700), 0);
	ck = open_store(sdir);
	o.step = cancel_now;
	commits = 0;
	assert_int_equal(tdbd_ckapply_wal(ck, wdir, hist.lsn, &o, &lsn, err,
					  sizeof(err)), -ECANCELED);
	assert_non_null(strstr(err, "abandoned at WAL record"));
	assert_int_equal(commits, 0);
	tdbd_ckpt_close(ck);
	wal_close(w);
}

/* --- tdbd in kernel mode (no mirror) ------------------------------------- */

static uint64_t kseg;   /* the WAL's segment size if not 0 */

static void kstart(struct tdbd *d, const char *dir)
{
	memset(d, 0, sizeof(*d));
	tdbd_config_defaults(&d->cfg);
	d->cfg.hugepages = false;
	if (kseg)
		d->cfg.wal_segment_size = kseg;
	d->cfg.backend = TDBD_BACKEND_KERNEL;
	snprintf(d->cfg.data_dir, sizeof(d->cfg.data_dir), "%s", dir);
	pthread_mutex_init(&d->wake_lock, NULL);
	assert_int_equal(tdbd_owner_start(d), 0);
	assert_int_equal(tdbd_durable_start(d, tdbd_on_durable), 0);
	assert_int_equal(tdbo_table_count(d->o), 0);    /* nothing loaded */
}

static void kstop(struct tdbd *d)
{
	tdbd_durable_stop(d);
	tdbd_owner_stop(d);
	pthread_mutex_destroy(&d->wake_lock);
}

/* Records [from, to) of s through the follower's step, then its write. */
static void kfollow(struct tdbd *d, const struct recs *s, unsigned int from,
		    unsigned int to)
{
	for (unsigned int i = from; i < to; i++) {
		struct wal_rec wr = decode(s, i);

		err[0] = '\0';
		if (tdbd_durable_apply(d, s->r[i], s->len[i], &wr, err,
				       sizeof(err)))
			fail_msg("kernel mode: record %u: %s", i, err);
	}
	tdbd_log_write(d);
}

static uint64_t ckpt_count(struct tdbd *d, bool failures)
{
	return failures ?
	       __atomic_load_n(&d->ctr.ckpt_failures, __ATOMIC_RELAXED) :
	       __atomic_load_n(&d->ctr.checkpoints, __ATOMIC_RELAXED);
}

static bool wait_count(struct tdbd *d, bool failures, uint64_t above,
		       int ms)
{
	for (int i = 0; i < ms && ckpt_count(d, failures) <= above; i++)
		usleep(1000);
	return ckpt_count(d, failures) > above;
}

/*
 * tdbd in kernel mode follows the history (tdbd_durable_apply: checked,
 * into the WAL), is restarted alone half way (tables resident in tdb.ko:
 * nothing loaded, it goes on from the WAL's last LSN), checkpoints in
 * runs (checkpoint-run-size, its least: 1M; the history is far smaller,
 * and TDBD_CKAPPLY_PEND_MAX makes each run write in batches of 300
 * bytes) on its own thread after a recovery and at stop: the store is
 * daemon mode's for the same changes (mdir).
 */
static void test_kernel_mode(void **state)
{
	static struct tdbd d;
	unsigned int half = hist.n / 2;

	(void)state;
	setenv("TDBD_CKAPPLY_PEND_MAX", "300", 1);
	kstart(&d, adir);
	assert_int_equal(tdbd_durable_kernel_ready(&d), 0);
	kfollow(&d, &hist, 0, half);
	assert_int_equal(wal_sync_to(d.wal, wal_appended(d.wal)), 0);
	tdbd_durable_checkpoint_soon(&d);
	assert_true(wait_count(&d, false, 0, 10000));
	assert_int_equal(d.ctr.ckpt_lsn, half);
	assert_int_equal(ckpt_count(&d, true), 0);
	kfollow(&d, &hist, half, half + 5);
	setenv("TDBD_STOP_CKPT_MAX", "0", 1);   /* stop without one */
	kstop(&d);
	unsetenv("TDBD_STOP_CKPT_MAX");
	assert_int_equal(store_lsn(adir), half);

	kstart(&d, adir);       /* restarted alone: nothing loaded */
	assert_int_equal(wal_appended(d.wal), half + 5);
	assert_int_equal(tdbd_durable_kernel_ready(&d), 0);
	kfollow(&d, &hist, half + 5, hist.n);
	kstop(&d);              /* the last checkpoint, from the WAL */
	unsetenv("TDBD_CKAPPLY_PEND_MAX");
	assert_int_equal(store_lsn(adir), hist.lsn);
	assert_stores_equal(mdir, adir);
}

/* 300 records of a 7000-byte put each: about 2 MiB. */
static void big_history(struct recs *s)
{
	static char v[7001];
	char k[32];

	memset(s, 0, sizeof(*s));
	create(s, "kb", 90, 0, 0, 0, 0);
	for (int i = 0; i < 299; i++) {
		snprintf(k, sizeof(k), "big-%04d", i);
		memset(v, 'a' + i % 26, 7000);
		v[7000] = '\0';
		put1(s, "kb", k, v, 0);
	}
}

static int dir_segments(const char *wdir)
{
	DIR *dp = opendir(wdir);
	struct dirent *de;
	int n = 0;

	assert_non_null(dp);
	while ((de = readdir(dp)))
		n += !strncmp(de->d_name, "wal-", 4);
	closedir(dp);
	return n;
}

/*
 * A checkpoint that fails: the store's map is 1 MiB (TDBD_CKPT_MAPSIZE)
 * and the WAL holds 2 MiB of puts, so a run fails with ENOSPC.  It is
 * counted (ckpt_failures), nothing of the failed run is committed, the
 * WAL keeps every record after the store's LSN (segments are removed
 * only after a commit that covers them), and the checkpointer tries
 * again (the WAL-size trigger, a second after a failure).  Then tdbd
 * restarts with room: the start finds the records in the WAL, the
 * checkpoint after recovery applies them, and the store is daemon
 * mode's for the same changes.
 */
static int count_rec(void *arg, const struct wal_rec *r)
{
	(void)r;
	++*(uint64_t *)arg;
	return 0;
}

static void test_kernel_ckpt_fails(void **state)
{
	static struct tdbd d;
	struct recs big;
	char ddir[80], wdir[128];
	uint64_t lsn;

	(void)state;
	big_history(&big);
	snprintf(ddir, sizeof(ddir), "%s/daemon", adir);
	assert_int_equal(mkdir(ddir, 0700), 0);
	mirror_store(ddir, &big);
	snprintf(wdir, sizeof(wdir), "%s/wal", adir);

	setenv("TDBD_CKPT_MAPSIZE", "1048576", 1);
	kseg = 256 << 10;
	kstart(&d, adir);
	kseg = 0;
	unsetenv("TDBD_CKPT_MAPSIZE");
	d.cfg.checkpoint_wal_size = 512 << 10;
	assert_int_equal(tdbd_durable_kernel_ready(&d), 0);
	kfollow(&d, &big, 0, big.n);
	assert_int_equal(wal_sync_to(d.wal, wal_appended(d.wal)), 0);
	assert_true(wait_count(&d, true, 0, 10000));    /* failed */
	assert_true(wait_count(&d, true, 1, 10000));    /* and again */
	lsn = d.ctr.ckpt_lsn;
	assert_true(lsn < big.lsn);
	assert_int_equal(store_lsn(adir), lsn);
	/* every record after the store's LSN is still in the WAL */
	assert_true(dir_segments(wdir) >= 2);
	{
		uint64_t seen = 0;

		assert_int_equal(wal_read_range(wdir, lsn, big.lsn, count_rec,
						&seen, err, sizeof(err)), 0);
		assert_int_equal(seen, big.lsn - lsn);
	}
	setenv("TDBD_STOP_CKPT_MAX", "0", 1);
	kstop(&d);
	unsetenv("TDBD_STOP_CKPT_MAX");

	/* room now: the start applies the WAL to the store (recovery
	 * finishes the checkpoint), before tdb.ko is restored */
	kstart(&d, adir);
	assert_int_equal(wal_appended(d.wal), big.lsn);
	assert_int_equal(store_lsn(adir), big.lsn);
	assert_int_equal(tdbd_durable_kernel_ready(&d), 0);
	assert_int_equal(d.ctr.ckpt_lsn, big.lsn);
	assert_int_equal(ckpt_count(&d, true), 0);
	kstop(&d);
	assert_int_equal(store_lsn(adir), big.lsn);
	assert_stores_equal(ddir, adir);
	recs_free(&big);
}

/* --- a measurement (TDB_CKAPPLY_BENCH=N; not part of the test) ------------
 * N records of one 100-byte put each over N/4 keys in random order, in
 * one table: the mirror's way (tdbd_durable_apply of each, then its
 * checkpoint at stop: the table new, written whole in key order) and
 * ckapply's (one run of all N, in log order), then ckapply again over
 * N more records on the store that has the keys (a checkpoint's steady
 * state).  TDB_CKAPPLY_RUN=R: ckapply commits every R records (a
 * checkpoint of several runs).  Peak RSS of each phase from VmHWM after
 * clear_refs 5; RssAnon (LMDB's dirty pages are malloc'd) before the
 * last commit. */

static void gen(unsigned char *r, size_t *len, uint64_t lsn, uint64_t nkeys,
		uint64_t *seed)
{
	char k[24], v[101];
	size_t n = 0;

	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	snprintf(k, sizeof(k), "k%010llu",
		 (unsigned long long)((*seed >> 17) % nkeys));
	memset(v, 'a' + (int)(lsn % 26), 100);
	v[100] = '\0';
	cur = r;
	curlen = walrec_begin_v(cur, REC_VERSION(lsn));
	curops = 0;
	op("kb", k, v, 0);
	walrec_seal(cur, (uint32_t)curlen, lsn, curops);
	walrec_set_crc(cur, walrec_crc(cur, (uint32_t)curlen));
	n = curlen;
	*len = n;
}

static long hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static long rss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void hwm_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f) {
		fputs("5", f);
		fclose(f);
	}
}

static void test_bench(void **state)
{
	uint64_t n = strtoull(getenv("TDB_CKAPPLY_BENCH"), NULL, 10);
	uint64_t nkeys = n / 4 ? n / 4 : 1, seed, t0, t1, t2;
	static unsigned char r[512];
	static struct tdbd d;
	struct recs c0;
	struct ckapply *a;
	struct ckpt *ck;
	struct wal_rec wr;
	const char *why;
	size_t len;
	long h0, h1, h2, h3, a0, a1;
	const char *rm = getenv("TDB_CKAPPLY_RUN");     /* records a run */
	uint64_t runmax = rm ? strtoull(rm, NULL, 10) : 0;

	(void)state;
	/* tdbd in kernel mode: the follower's step (before issue 29 the
	 * mirror's apply, an engine put and a dirty set; now the checks and
	 * the WAL append), then its stop (WAL sync and the last checkpoint:
	 * from the mirror before, from the WAL now) */
	memset(&d, 0, sizeof(d));
	tdbd_config_defaults(&d.cfg);
	d.cfg.hugepages = false;
	d.cfg.backend = TDBD_BACKEND_KERNEL;
	d.cfg.checkpoint_interval_ms = 3600000;
	d.cfg.checkpoint_wal_size = 1ull << 40;
	snprintf(d.cfg.data_dir, sizeof(d.cfg.data_dir), "%s", adir);
	pthread_mutex_init(&d.wake_lock, NULL);
	assert_int_equal(tdbd_owner_start(&d), 0);
	assert_int_equal(tdbd_durable_start(&d, tdbd_on_durable), 0);
	memset(&c0, 0, sizeof(c0));
	c0.lsn = 1;     /* max_extents 0: the default, room for the data */
	done(&c0, rec_create(slot(&c0), 1, 99, "kb"));
	wr = decode(&c0, 0);
	assert_int_equal(tdbd_durable_apply(&d, c0.r[0], c0.len[0], &wr, err,
					    sizeof(err)), 0);
	hwm_reset();
	h0 = hwm_kib();
	t0 = tdbd_now_ns();
	seed = 1;
	for (uint64_t l = 2; l <= n + 1; l++) {
		gen(r, &len, l, nkeys, &seed);
		assert_int_equal(wal_rec_check(r, len, &wr, &why), 0);
		if (tdbd_durable_apply(&d, r, len, &wr, err, sizeof(err)))
			fail_msg("follower: %s", err);
		if (!(l & 1023))
			tdbd_log_write(&d);
	}
	tdbd_log_write(&d);
	t1 = tdbd_now_ns();
	h1 = hwm_kib();
	a1 = rss_anon_kib();
	tdbd_durable_stop(&d);
	t2 = tdbd_now_ns();
	tdbd_owner_stop(&d);
	pthread_mutex_destroy(&d.wake_lock);
	printf("bench: %llu records over %llu keys, ckapply runs of %llu "
	       "records (0: all)\n"
	       "  follower: tdbd_durable_apply %llu ns/record (VmHWM %ld -> "
	       "%ld KiB, RssAnon "
	       "%ld KiB after), "
	       "stop (WAL sync + checkpoint) %llu ms\n",
	       (unsigned long long)n, (unsigned long long)nkeys,
	       (unsigned long long)runmax,
	       (unsigned long long)((t1 - t0) / n), h0, h1, a1,
	       (unsigned long long)((t2 - t1) / 1000000));
	rmdir_r(adir);
	tmpdir(adir, sizeof(adir), "applied");

	/* ckapply: one run, then a second of as many on the full store */
	ck = open_store(adir);
	for (int pass = 0; pass < 2; pass++) {
		hwm_reset();
		h2 = hwm_kib();
		a0 = rss_anon_kib();
		t0 = tdbd_now_ns();
		assert_int_equal(tdbd_ckapply_begin(ck, wall_ms(), 0, &a, err,
						    sizeof(err)), 0);
		if (!pass) {
			wr = decode(&c0, 0);
			assert_int_equal(tdbd_ckapply_rec(a, &wr), 1);
		}
		seed = pass ? 2 : 1;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t l = 2 + pass * n + i;

			if (runmax && i && !(i % runmax)) {     /* a commit */
				if (tdbd_ckapply_commit(a, err, sizeof(err)))
					fail_msg("commit: %s", err);
				assert_int_equal(tdbd_ckapply_begin(ck,
						 wall_ms(), 0, &a, err,
						 sizeof(err)), 0);
			}

			gen(r, &len, l, nkeys, &seed);
			assert_int_equal(wal_rec_check(r, len, &wr, &why), 0);
			if (tdbd_ckapply_rec(a, &wr) != 1)
				fail_msg("ckapply: %s", tdbd_ckapply_error(a));
		}
		t1 = tdbd_now_ns();
		a1 = rss_anon_kib();
		if (tdbd_ckapply_commit(a, err, sizeof(err)))
			fail_msg("commit: %s", err);
		t2 = tdbd_now_ns();
		h3 = hwm_kib();
		printf("  ckapply %s: %llu ns/record applying, commit %llu ms, "
		       "%llu ms in all (VmHWM %ld -> %ld KiB, RssAnon %ld -> "
		       "%ld KiB before the commit)\n",
		       pass ? "again (store full)" : "one run",
		       (unsigned long long)((t1 - t0) / n),
		       (unsigned long long)((t2 - t1) / 1000000),
		       (unsigned long long)((t2 - t0) / 1000000), h2, h3, a0,
		       a1);
	}
	tdbd_ckpt_close(ck);
	recs_free(&c0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_run, one_setup,
						one_teardown),
		cmocka_unit_test_setup_teardown(test_small_batches, one_setup,
						one_teardown),
		cmocka_unit_test_setup_teardown(test_runs, one_setup,
						one_teardown),
		cmocka_unit_test_setup_teardown(test_refused, one_setup,
						one_teardown),
		cmocka_unit_test_setup_teardown(test_kernel_mode, one_setup,
						one_teardown),
		cmocka_unit_test_setup_teardown(test_kernel_ckpt_fails,
						one_setup, one_teardown),
		cmocka_unit_test_setup_teardown(test_from_wal, one_setup,
						one_teardown),
	};

	const struct CMUnitTest bench[] = {
		cmocka_unit_test_setup_teardown(test_bench, one_setup,
						one_teardown),
	};

	if (getenv("TDB_CKAPPLY_BENCH"))
		return cmocka_run_group_tests(bench, NULL, NULL);
	return cmocka_run_group_tests(tests, setup, teardown);
}
