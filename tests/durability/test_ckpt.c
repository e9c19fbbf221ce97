// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ckpt.c - tests of the checkpoint store (src/daemon/durable/ckpt.c,
 * declared in src/daemon/durable/ckpt.h).
 *
 * Every test works in its own scratch data directory and checks real
 * outcomes: what tdbd_ckpt_read_meta and tdbd_ckpt_load_table give after
 * the store was closed and opened again, and what LMDB itself holds
 * (opened raw, beside the store, to check the documented layout and to
 * plant bad records).  Covered: the empty store; records of every shape
 * (1-byte and binary keys, keys of maxkey, maxkey + 1 and 4096 bytes,
 * empty and 1 MiB values); del, drop, reset, abort; the txn spoiled by a
 * failure; versions (every record's, beside it in "/ver/" and "/lver/",
 * through puts, deletes, drops and a compaction; the counter in /meta;
 * a table from before versions; mismatched version databases refused);
 * a foreign format, bad schema and long records; a full map
 * (TDBD_CKPT_MAPSIZE); open errors; mdb_dump on the result; a writer and
 * a reader in two threads; a full disk (a small tmpfs, root only): open
 * and read work, a commit fails with ENOSPC and loses nothing, a missing
 * lock.mdb is an error, not a SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "smallfs.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ckpt.h"

#define MiB (1u << 20)
#define TV 5u           /* the version of a record a test puts directly */

static unsigned int maxkey;     /* mdb_env_get_maxkeysize() */
static char err[4096];

/* --- scratch directories ------------------------------------------------ */

struct scratch {
	char dir[64];
};

static int setup(void **state)
{
	struct scratch *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/tdb-ckpt-XXXXXX");
	if (!mkdtemp(s->dir)) {
		free(s);
		return -1;
	}
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	struct scratch *s = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	if (system(cmd) != 0)
		return -1;
	free(s);
	return 0;
}

static const char *dir_of(void **state)
{
	return ((struct scratch *)*state)->dir;
}

static struct ckpt *open_ok(const char *dir)
{
	struct ckpt *ck = NULL;
	int rc = tdbd_ckpt_open(dir, &ck, err, sizeof(err));

	if (rc)
		fail_msg("open %s: %d %s", dir, rc, err);
	assert_non_null(ck);
	return ck;
}

static struct ckpt_txn *begin_ok(struct ckpt *ck)
{
	struct ckpt_txn *tx = NULL;
	int rc = tdbd_ckpt_begin(ck, &tx, err, sizeof(err));

	if (rc)
		fail_msg("begin: %d %s", rc, err);
	assert_non_null(tx);
	return tx;
}

static void commit_ok(struct ckpt_txn *tx, uint64_t lsn)
{
	int rc = tdbd_ckpt_commit(tx, lsn, err, sizeof(err));

	if (rc)
		fail_msg("commit: %d %s", rc, err);
}

/* --- a model of a table: the records it must hold ------------------------ */

struct rec {
	unsigned char *k, *v;
	size_t kl, vl;
	uint64_t ver;           /* its version (ckpt.h: "/ver/", "/lver/") */
	uint64_t dl;            /* its deadline (beside the version), 0 */
};

struct recset {
	struct rec *r;
	size_t n, cap;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	size_t m = x->kl < y->kl ? x->kl : y->kl;
	int c = memcmp(x->k, y->k, m);

	if (c)
		return c;
	return x->kl < y->kl ? -1 : x->kl > y->kl;
}

static void *dup_bytes(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	assert_non_null(d);
	if (n)
		memcpy(d, p, n);
	return d;
}

static struct rec *rs_find(struct recset *rs, const void *k, size_t kl)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].kl == kl && !memcmp(rs->r[i].k, k, kl))
			return &rs->r[i];
	return NULL;
}

/* Add without looking for the key (loading: every record once). */
static void rs_add(struct recset *rs, const void *k, size_t kl,
		   const void *v, size_t vl, uint64_t ver)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 64;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		assert_non_null(rs->r);
	}
	rs->r[rs->n++] = (struct rec){ dup_bytes(k, kl), dup_bytes(v, vl),
				       kl, vl, ver, 0 };
}

static void rs_put(struct recset *rs, const void *k, size_t kl,
		   const void *v, size_t vl, uint64_t ver)
{
	struct rec *r = rs_find(rs, k, kl);

	if (!r) {
		rs_add(rs, k, kl, v, vl, ver);
		return;
	}
	free(r->v);
	r->v = dup_bytes(v, vl);
	r->vl = vl;
	r->ver = ver;
}

static void rs_del(struct recset *rs, const void *k, size_t kl)
{
	struct rec *r = rs_find(rs, k, kl);

	if (!r)
		return;
	free(r->k);
	free(r->v);
	*r = rs->r[--rs->n];
}

static void rs_free(struct recset *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		free(rs->r[i].k);
		free(rs->r[i].v);
	}
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

static int collect(void *arg, const void *key, size_t klen, const void *val,
		   size_t vlen, uint64_t ver, uint64_t dl)
{
	struct recset *rs = arg;

	rs_add(rs, key, klen, val, vlen, ver);
	rs->r[rs->n - 1].dl = dl;
	return 0;
}

/* The two sets hold exactly the same records. */
/* An empty set for a load expected to fail: what it collected before
 * failing is freed here, or at the next rs_fresh. */
static struct recset *rs_fresh(struct recset *rs)
{
	rs_free(rs);
	memset(rs, 0, sizeof(*rs));
	return rs;
}

static void rs_assert_equal(struct recset *want, struct recset *got)
{
	if (want->n)
		qsort(want->r, want->n, sizeof(*want->r), rec_cmp);
	if (got->n)
		qsort(got->r, got->n, sizeof(*got->r), rec_cmp);
	assert_int_equal(got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		assert_int_equal(got->r[i].kl, want->r[i].kl);
		assert_memory_equal(got->r[i].k, want->r[i].k, want->r[i].kl);
		if (got->r[i].vl != want->r[i].vl)
			fail_msg("key #%zu (%zu bytes): value of %zu bytes, "
				 "want %zu", i, want->r[i].kl, got->r[i].vl,
				 want->r[i].vl);
		if (want->r[i].vl)
			assert_memory_equal(got->r[i].v, want->r[i].v,
					    want->r[i].vl);
		if (got->r[i].ver != want->r[i].ver)
			fail_msg("key #%zu (%zu bytes): version %" PRIu64
				 ", want %" PRIu64, i, want->r[i].kl,
				 got->r[i].ver, want->r[i].ver);
		if (got->r[i].dl != want->r[i].dl)
			fail_msg("key #%zu (%zu bytes): deadline %" PRIu64
				 ", want %" PRIu64, i, want->r[i].kl,
				 got->r[i].dl, want->r[i].dl);
	}
}

/* load_table(name) must give exactly want. */
static void assert_table(struct ckpt *ck, const char *name,
			 struct recset *want)
{
	struct recset got = { 0 };
	int rc = tdbd_ckpt_load_table(ck, name, collect, &got, NULL, err,
				      sizeof(err));

	if (rc)
		fail_msg("load_table %s: %d %s", name, rc, err);
	rs_assert_equal(want, &got);
	rs_free(&got);
}

/* A deterministic byte pattern. */
static unsigned char *pattern(size_t n, unsigned int seed)
{
	unsigned char *p = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
	return p;
}

/* tx put + model put, each record with a version of its own. */
static uint64_t ver_seq = 1000;

static void put2(struct ckpt_txn *tx, struct recset *rs, const char *name,
		 const void *k, size_t kl, const void *v, size_t vl)
{
	uint64_t ver = ++ver_seq * 0x10001ull;  /* bytes beyond the first */
	int rc = tdbd_ckpt_put(tx, name, k, kl, v, vl, ver);

	if (rc)
		fail_msg("put %s (key %zu bytes): %d", name, kl, rc);
	rs_put(rs, k, kl, v, vl, ver);
}

/* --- the standard data set ------------------------------------------------ */

static const struct ckpt_table schema_t1 = {
	.name = "t1", .id = 7, .uid = 1000, .gid = 100, .mode = 0640,
	.max_extents = 16, .sync = 1, .default_ttl = 30000,
	.max_bytes = 0x0102030405060708ull, .max_records = 1000, .evict = 2,
	.flags = 1,     /* TDB_TABLE_F_ORDERED: an ordered table */
};
static const struct ckpt_table schema_t2 = {
	.name = "t2", .id = 0xfedcba9876543210ULL, .uid = 0xfffffffe,
	.gid = 0, .mode = 0600, .max_extents = 1, .sync = 2,
};

struct dataset {
	struct recset t1, t2;
	unsigned char *kmax, *klong, *ktwin, *k4096, *big;
};

static void dataset_free(struct dataset *ds)
{
	rs_free(&ds->t1);
	rs_free(&ds->t2);
	free(ds->kmax);
	free(ds->klong);
	free(ds->ktwin);
	free(ds->k4096);
	free(ds->big);
}

/*
 * t1 and t2 with their schemas, committed at LSN 42.  t1: a 1-byte key
 * with an empty value, a NUL key, a binary key and value with NULs, keys
 * of maxkey, maxkey + 1 (two sharing their first maxkey bytes) and 4096
 * bytes, 1 MiB values under a short and a long key, 100 plain records.
 */
static void populate(struct ckpt *ck, struct dataset *ds)
{
	static const unsigned char bink[] = { 'k', 0, 'e', 0, 'y' };
	static const unsigned char binv[] = { 0, 1, 0, 2, 0 };
	struct ckpt_txn *tx = begin_ok(ck);
	char k[32], v[32];

	memset(ds, 0, sizeof(*ds));
	ds->kmax = pattern(maxkey, 1);
	ds->klong = pattern(maxkey + 1, 2);
	ds->ktwin = dup_bytes(ds->klong, maxkey + 1);
	ds->ktwin[maxkey] ^= 0x5a;      /* same LMDB prefix, other hashes */
	ds->k4096 = pattern(4096, 3);
	ds->big = pattern(MiB, 4);

	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t2"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t1), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t2), 0);

	put2(tx, &ds->t1, "t1", "a", 1, "", 0);
	put2(tx, &ds->t1, "t1", "\0", 1, "nul", 3);
	put2(tx, &ds->t1, "t1", bink, sizeof(bink), binv, sizeof(binv));
	put2(tx, &ds->t1, "t1", ds->kmax, maxkey, "max", 3);
	put2(tx, &ds->t1, "t1", ds->klong, maxkey + 1, "", 0);
	put2(tx, &ds->t1, "t1", ds->ktwin, maxkey + 1, "twin", 4);
	put2(tx, &ds->t1, "t1", ds->k4096, 4096, ds->big, MiB);
	put2(tx, &ds->t1, "t1", "big", 3, ds->big + 1, MiB - 1);
	for (int i = 0; i < 100; i++) {
		int kl = snprintf(k, sizeof(k), "key%03d", i);
		int vl = snprintf(v, sizeof(v), "val%d", i);

		put2(tx, &ds->t1, "t1", k, kl, v, vl);
	}
	/* Overwrites: short and long. */
	put2(tx, &ds->t1, "t1", "key000", 6, "val0", 4);
	put2(tx, &ds->t1, "t1", "key001", 6, "again", 5);
	put2(tx, &ds->t1, "t1", ds->ktwin, maxkey + 1, "twin2", 5);

	put2(tx, &ds->t2, "t2", "x", 1, "y", 1);
	put2(tx, &ds->t2, "t2", ds->k4096, 4096, "", 0);
	commit_ok(tx, 42);
}

static void assert_schema(const struct ckpt_table *got,
			  const struct ckpt_table *want)
{
	assert_string_equal(got->name, want->name);
	assert_int_equal(got->id, want->id);
	assert_int_equal(got->uid, want->uid);
	assert_int_equal(got->gid, want->gid);
	assert_int_equal(got->mode, want->mode);
	assert_int_equal(got->max_extents, want->max_extents);
	assert_int_equal(got->sync, want->sync);
	assert_int_equal(got->default_ttl, want->default_ttl);
	assert_int_equal(got->max_bytes, want->max_bytes);
	assert_int_equal(got->max_records, want->max_records);
	assert_int_equal(got->evict, want->evict);
	assert_int_equal(got->flags, want->flags);
	assert_int_equal(got->aside, want->aside);
	assert_int_equal(got->from, want->from);
}

/* read_meta gives lsn and exactly the schemas want[0..n) (name order). */
static void assert_meta(struct ckpt *ck, uint64_t lsn,
			const struct ckpt_table *const *want, unsigned int n)
{
	struct ckpt_table *tabs = NULL;
	unsigned int got_n = 99;
	uint64_t got_lsn = 99;
	int rc;

	rc = tdbd_ckpt_read_meta(ck, &got_lsn, &tabs, &got_n, err,
				 sizeof(err));
	if (rc)
		fail_msg("read_meta: %d %s", rc, err);
	assert_int_equal(got_lsn, lsn);
	assert_int_equal(got_n, n);
	for (unsigned int i = 0; i < n; i++)
		assert_schema(&tabs[i], want[i]);
	free(tabs);
}

static const struct ckpt_table *const both[] = { &schema_t1, &schema_t2 };

/* --- raw LMDB, beside the store (which must be closed) ------------------- */

static MDB_env *raw_open(const char *dir)
{
	char path[128];
	MDB_env *env;

	snprintf(path, sizeof(path), "%s/checkpoint", dir);
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 8192), 0);
	assert_int_equal(mdb_env_open(env, path, 0, 0640), 0);
	return env;
}

/* Put one record into database db (created if missing). */
static void raw_put(const char *dir, const char *db, const void *k,
		    size_t kl, const void *v, size_t vl)
{
	MDB_env *env = raw_open(dir);
	MDB_val key = { kl, (void *)k }, val = { vl, (void *)v };
	MDB_txn *txn;
	MDB_dbi dbi;

	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, db, MDB_CREATE, &dbi), 0);
	assert_int_equal(mdb_put(txn, dbi, &key, &val, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/* Entries of database db, or -1 if it does not exist. */
static long raw_count(const char *dir, const char *db)
{
	MDB_env *env = raw_open(dir);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_stat st;
	long n;
	int rc;

	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	rc = mdb_dbi_open(txn, db, 0, &dbi);
	if (rc == MDB_NOTFOUND) {
		n = -1;
	} else {
		assert_int_equal(rc, 0);
		assert_int_equal(mdb_stat(txn, dbi, &st), 0);
		n = (long)st.ms_entries;
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return n;
}

/* The raw value of db/key into a malloc'd buffer, or NULL. */
static unsigned char *raw_get(const char *dir, const char *db, const void *k,
			      size_t kl, size_t *vl)
{
	MDB_env *env = raw_open(dir);
	MDB_val key = { kl, (void *)k }, val;
	unsigned char *out = NULL;
	MDB_txn *txn;
	MDB_dbi dbi;

	assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	if (mdb_dbi_open(txn, db, 0, &dbi) == 0 &&
	    mdb_get(txn, dbi, &key, &val) == 0) {
		out = dup_bytes(val.mv_data, val.mv_size);
		*vl = val.mv_size;
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return out;
}

static void be64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

/* --- tests ------------------------------------------------------------ */

static void test_empty(void **state)
{
	struct ckpt *ck = open_ok(dir_of(state));
	struct recset none = { 0 };
	char path[128];
	struct stat st;

	assert_meta(ck, 0, NULL, 0);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &none, NULL, err,
					      sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "t1"));
	assert_int_equal(none.n, 0);
	tdbd_ckpt_close(ck);

	snprintf(path, sizeof(path), "%s/checkpoint", dir_of(state));
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);

	/* Opening again is the same empty store. */
	ck = open_ok(dir_of(state));
	assert_meta(ck, 0, NULL, 0);
	tdbd_ckpt_close(ck);
}

static void test_roundtrip(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct dataset ds;

	populate(ck, &ds);
	/* Same handle, then a fresh one. */
	assert_meta(ck, 42, both, 2);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);
	assert_meta(ck, 42, both, 2);
	assert_table(ck, "t1", &ds.t1);
	assert_table(ck, "t2", &ds.t2);
	tdbd_ckpt_close(ck);
	dataset_free(&ds);
}

/* The documented layout, read with LMDB itself. */
static void test_layout(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	unsigned char *lk = malloc(maxkey), *v;
	const unsigned char want_t2[60] = {
		0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, /* id */
		0xfe, 0xff, 0xff, 0xff,                         /* uid */
		0, 0, 0, 0,                                     /* gid */
		0x80, 0x01, 0, 0,                               /* 0600 */
		1, 0, 0, 0,                                     /* extents */
		2, 0, 0, 0,                                     /* sync */
		0, 0, 0, 0, 0, 0, 0, 0,                         /* no TTL */
		0, 0, 0, 0, 0, 0, 0, 0,                         /* no bound */
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0,                                     /* refuse */
		0, 0, 0, 0,                                     /* hash */
	};
	const unsigned char want_t1_ext[28] = {
		0x30, 0x75, 0, 0, 0, 0, 0, 0,                   /* 30000 */
		8, 7, 6, 5, 4, 3, 2, 1,                         /* max_bytes */
		0xe8, 0x03, 0, 0, 0, 0, 0, 0,                   /* 1000 */
		2, 0, 0, 0,                                     /* lfu */
	};
	struct dataset ds;
	size_t vl;

	assert_non_null(lk);
	populate(ck, &ds);
	tdbd_ckpt_close(ck);

	/* Short keys, maxkey included, verbatim in the table's database. */
	v = raw_get(dir, "t1", ds.kmax, maxkey, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 3);
	assert_memory_equal(v, "max", 3);
	free(v);
	v = raw_get(dir, "t1", "big", 3, &vl);
	assert_non_null(v);
	assert_int_equal(vl, MiB - 1);
	assert_memory_equal(v, ds.big + 1, MiB - 1);
	free(v);
	/* 100 plain + a, NUL, binary, kmax, big. */
	assert_int_equal(raw_count(dir, "t1"), 105);
	assert_int_equal(raw_count(dir, "/long/t1"), 3);
	assert_int_equal(raw_count(dir, "t2"), 1);
	assert_int_equal(raw_count(dir, "/long/t2"), 1);

	/* A long key: prefix, xxh64 seeds 1 and 2 BE; u32 LE klen, key,
	 * value. */
	memcpy(lk, ds.ktwin, maxkey - 16);
	be64(lk + maxkey - 16, XXH64(ds.ktwin, maxkey + 1, 1));
	be64(lk + maxkey - 8, XXH64(ds.ktwin, maxkey + 1, 2));
	v = raw_get(dir, "/long/t1", lk, maxkey, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 4 + maxkey + 1 + 5);
	assert_int_equal(v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24,
			 maxkey + 1);
	assert_memory_equal(v + 4, ds.ktwin, maxkey + 1);
	assert_memory_equal(v + 4 + maxkey + 1, "twin2", 5);
	free(v);
	/* ... and not in the table's own database. */
	assert_null(raw_get(dir, "t1", ds.ktwin, maxkey, &vl));

	/* /meta. */
	v = raw_get(dir, "/meta", "format", 6, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 4);
	assert_memory_equal(v, "\4\0\0\0", 4);
	free(v);
	v = raw_get(dir, "/meta", "lsn", 3, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 8);
	assert_memory_equal(v, "\x2a\0\0\0\0\0\0\0", 8);
	free(v);
	v = raw_get(dir, "/meta", "table/t2", 8, &vl);
	assert_non_null(v);
	assert_int_equal(vl, sizeof(want_t2));
	assert_memory_equal(v, want_t2, sizeof(want_t2));
	free(v);
	v = raw_get(dir, "/meta", "table/t1", 8, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 60);
	assert_memory_equal(v + 28, want_t1_ext, 28);
	assert_memory_equal(v + 56, "\1\0\0\0", 4);    /* ordered */
	free(v);

	free(lk);
	dataset_free(&ds);
}

static void test_del(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct ckpt_txn *tx;
	struct dataset ds;
	unsigned char *nokey = pattern(4000, 9);

	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "a", 1), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.kmax, maxkey), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.klong, maxkey + 1), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.k4096, 4096), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t2", ds.k4096, 4096), 0);
	/* Not there: short, long, and long sharing ktwin's prefix. */
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "nope", 4), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "a", 1), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", nokey, 4000), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.klong, maxkey + 1), 0);
	commit_ok(tx, 43);
	rs_del(&ds.t1, "a", 1);
	rs_del(&ds.t1, ds.kmax, maxkey);
	rs_del(&ds.t1, ds.klong, maxkey + 1);
	rs_del(&ds.t1, ds.k4096, 4096);
	rs_del(&ds.t2, ds.k4096, 4096);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);
	assert_meta(ck, 43, both, 2);
	assert_table(ck, "t1", &ds.t1);
	assert_table(ck, "t2", &ds.t2);
	tdbd_ckpt_close(ck);
	assert_int_equal(raw_count(dir, "/long/t1"), 1);     /* ktwin */
	assert_int_equal(raw_count(dir, "/long/t2"), 0);
	free(nokey);
	dataset_free(&ds);
}

static void test_drop(void **state)
{
	const char *dir = dir_of(state);
	static const struct ckpt_table *const only_t1[] = { &schema_t1 };
	struct ckpt *ck = open_ok(dir);
	struct recset none = { 0 };
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t2", "z", 1, "z", 1, TV), 0);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t2"), 0);
	/* Dropping what is not there is fine; using it after is not. */
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t3"), 0);
	commit_ok(tx, 50);

	assert_meta(ck, 50, only_t1, 1);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t2", collect, &none, NULL, err,
					      sizeof(err)), -ENOENT);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);

	assert_int_equal(raw_count(dir, "t2"), -1);
	assert_int_equal(raw_count(dir, "/long/t2"), -1);
	ck = open_ok(dir);
	assert_meta(ck, 50, only_t1, 1);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);
	dataset_free(&ds);
}

/*
 * The set-aside mark ("aside/<name>" in /meta): set_table writes it with
 * the schema and read_meta gives it back; a checkpoint that only sets the
 * schema of a table set aside leaves its records alone; set_table without
 * the mark removes it, and so does drop_table.
 */
static void test_aside_mark(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt_table t1 = schema_t1;
	const struct ckpt_table *const marked[] = { &t1, &schema_t2 };
	static const struct ckpt_table *const only_t2[] = { &schema_t2 };
	struct ckpt *ck = open_ok(dir);
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	t1.aside = true;
	t1.from = 0x123456789aULL;      /* may be below the LSN */
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_table(tx, &t1), 0);
	put2(tx, &ds.t2, "t2", "new", 3, "v", 1);
	commit_ok(tx, 0x123456789bULL);
	assert_meta(ck, 0x123456789bULL, marked, 2);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);              /* it is on disk */
	assert_meta(ck, 0x123456789bULL, marked, 2);
	t1.aside = false;
	t1.from = 0;
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_table(tx, &t1), 0);
	commit_ok(tx, 0x123456789cULL);
	assert_meta(ck, 0x123456789cULL, both, 2);
	assert_table(ck, "t1", &ds.t1);

	t1.aside = true;
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_table(tx, &t1), 0);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t1"), 0);
	commit_ok(tx, 0x123456789dULL);
	assert_meta(ck, 0x123456789dULL, only_t2, 1);
	tdbd_ckpt_close(ck);
	assert_int_equal(raw_count(dir, "t1"), -1);
	dataset_free(&ds);
}

/* Drop and make again in one txn, then use the table in the next one. */
static void test_drop_then_reset(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct recset want = { 0 };
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	tx = begin_ok(ck);
	/* The put makes t1 the txn's current table: its handles, which the
	 * drop closes, must not be used by what follows. */
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "gone", 4, "g", 1, TV), 0);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t1"), 0);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t1), 0);
	put2(tx, &want, "t1", ds.klong, maxkey + 1, "new", 3);
	put2(tx, &want, "t1", "n", 1, "new", 3);
	commit_ok(tx, 60);
	assert_table(ck, "t1", &want);

	tx = begin_ok(ck);
	put2(tx, &want, "t1", "m", 1, "more", 4);
	commit_ok(tx, 61);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);
	assert_meta(ck, 61, both, 2);
	assert_table(ck, "t1", &want);
	assert_table(ck, "t2", &ds.t2);
	tdbd_ckpt_close(ck);
	rs_free(&want);
	dataset_free(&ds);
}

static void test_reset(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct recset none = { 0 };
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	commit_ok(tx, 44);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);
	assert_meta(ck, 44, both, 2);      /* the schema stays */
	assert_table(ck, "t1", &none);
	assert_table(ck, "t2", &ds.t2);
	tdbd_ckpt_close(ck);
	assert_int_equal(raw_count(dir, "t1"), 0);
	assert_int_equal(raw_count(dir, "/long/t1"), 0);
	dataset_free(&ds);
}

/* Every kind of change, then abort: nothing of it is there, and the
 * handle works on (the aborted drop closed LMDB handles). */
static void test_abort(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct ckpt_table t3 = { .name = "t3", .id = 3 };
	struct recset t3want = { 0 };
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "a", 1, "changed", 7, TV), 0);
	assert_int_equal(tdbd_ckpt_put(tx, "t1", ds.klong, maxkey + 1, "c",
				       1, TV), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "key005", 6), 0);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t2"), 0);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t3"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &t3), 0);
	assert_int_equal(tdbd_ckpt_put(tx, "t3", "q", 1, "q", 1, TV), 0);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	tdbd_ckpt_abort(tx);
	tdbd_ckpt_abort(NULL);

	assert_meta(ck, 42, both, 2);
	assert_table(ck, "t1", &ds.t1);
	assert_table(ck, "t2", &ds.t2);

	/* The same tables in a new txn, after the aborted one. */
	tx = begin_ok(ck);
	put2(tx, &ds.t2, "t2", "after", 5, "abort", 5);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t3"), 0);
	put2(tx, &t3want, "t3", "q", 1, "q2", 2);
	commit_ok(tx, 45);
	tdbd_ckpt_close(ck);

	ck = open_ok(dir);
	assert_meta(ck, 45, both, 2);      /* t3 has no schema: not set */
	assert_table(ck, "t1", &ds.t1);
	assert_table(ck, "t2", &ds.t2);
	assert_table(ck, "t3", &t3want);
	tdbd_ckpt_close(ck);
	rs_free(&t3want);
	dataset_free(&ds);
}

/* Bad arguments fail, and spoil the txn: commit returns the first
 * failure and writes nothing. */
static void test_spoiled(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct ckpt_table bad = { .name = "a/b" };
	char name65[66];
	struct ckpt_txn *tx;
	struct dataset ds;

	populate(ck, &ds);
	memset(name65, 'n', 65);
	name65[65] = '\0';

	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, ""), -EINVAL);
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "x", 1, "x", 1, TV), -EINVAL);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_commit(tx, 99, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad table name"));

	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, name65, "x", 1, "x", 1, TV), -EINVAL);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_table(tx, &bad), -EINVAL);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "a/b"), -EINVAL);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "", 0, "x", 1, TV), -EINVAL);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "", 0), -EINVAL);
	tdbd_ckpt_abort(tx);

	/* A table never reset. */
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "ok", 2, "ok", 2, TV), 0);
	assert_int_equal(tdbd_ckpt_put(tx, "t9", "x", 1, "x", 1, TV), -ENOENT);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "a", 1), -ENOENT);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_commit(tx, 99, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "t9"));
	assert_non_null(strstr(err, dir));

	/* Nothing of any of it. */
	assert_meta(ck, 42, both, 2);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);
	dataset_free(&ds);
}

/* One thread: a second begin, or a load_table, during a write txn. */
static void test_same_thread(void **state)
{
	struct ckpt *ck = open_ok(dir_of(state));
	struct ckpt_txn *tx, *tx2 = NULL;
	struct recset got = { 0 };
	struct dataset ds;

	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_begin(ck, &tx2, err, sizeof(err)),
			 -EDEADLK);
	assert_null(tx2);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL, err,
					      sizeof(err)), -EDEADLK);
	assert_non_null(strstr(err, "load_table"));
	assert_int_equal(got.n, 0);
	/* read_meta takes no lock: it sees the last checkpoint. */
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "a", 1, "z", 1, TV), 0);
	assert_meta(ck, 42, both, 2);
	tdbd_ckpt_abort(tx);
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);
	dataset_free(&ds);
}

struct stopper {
	int seen, stop_at;
};

static int stop_after(void *arg, const void *key, size_t klen,
		      const void *val, size_t vlen, uint64_t ver, uint64_t dl)
{
	struct stopper *s = arg;

	(void)ver;
	(void)dl;
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	return ++s->seen == s->stop_at ? 7 : 0;
}

static void test_load_stops(void **state)
{
	struct ckpt *ck = open_ok(dir_of(state));
	struct stopper s = { 0, 3 };
	struct dataset ds;

	populate(ck, &ds);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", stop_after, &s, NULL, err,
					      sizeof(err)), 7);
	assert_int_equal(s.seen, 3);
	/* Stopping in the long records too. */
	s = (struct stopper){ 0, (int)ds.t1.n };
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", stop_after, &s, NULL, err,
					      sizeof(err)), 7);
	assert_int_equal(s.seen, (int)ds.t1.n);
	/* The lock was released each time. */
	assert_table(ck, "t1", &ds.t1);
	tdbd_ckpt_close(ck);
	dataset_free(&ds);
}

static void test_format(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct ckpt_table *tabs = (void *)1;
	struct ckpt_txn *tx = NULL;
	unsigned int n = 9;
	uint64_t lsn = 9;

	tdbd_ckpt_close(ck);
	raw_put(dir, "/meta", "format", 6, "\5\0\0\0", 4);

	ck = open_ok(dir);      /* opens, leaves the record alone... */
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), -EPROTO);
	assert_int_equal(lsn, 0);
	assert_null(tabs);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "format 5"));
	assert_non_null(strstr(err, dir));
	/* ...and writes nothing into it. */
	assert_int_equal(tdbd_ckpt_begin(ck, &tx, err, sizeof(err)), -EPROTO);
	assert_null(tx);
	tdbd_ckpt_close(ck);
	assert_int_equal(raw_count(dir, "/meta"), 1);

	/* A format record of the wrong size. */
	raw_put(dir, "/meta", "format", 6, "\1\0\0\0\0", 5);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), -EUCLEAN);
	tdbd_ckpt_close(ck);
}

static void test_bad_records(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	unsigned char lk[2048] = { 0 }, kk[2048], rec[4096 + 8];
	struct recset got = { 0 };
	struct ckpt_table *tabs;
	struct dataset ds;
	unsigned int n;
	uint64_t lsn;

	populate(ck, &ds);
	tdbd_ckpt_close(ck);

	/* A schema record one byte short. */
	raw_put(dir, "/meta", "table/t2", 8, "0123456789abcdef0123456789a",
		27);
	ck = open_ok(dir);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "t2"));
	assert_non_null(strstr(err, "27 bytes"));
	assert_table(ck, "t2", &ds.t2); /* the records are still fine */
	tdbd_ckpt_close(ck);

	/* Long records, all under the LMDB key of K = 'L' x (maxkey + 1):
	 * too short for a length; a length past the end; a key that is
	 * short; a key (K' = 'M' x (maxkey + 1)) that is not K. */
	assert_true(maxkey + 1 <= sizeof(lk));
	memset(kk, 'L', maxkey + 1);
	memcpy(lk, kk, maxkey - 16);
	be64(lk + maxkey - 16, XXH64(kk, maxkey + 1, 1));
	be64(lk + maxkey - 8, XXH64(kk, maxkey + 1, 2));
	raw_put(dir, "/long/t1", lk, maxkey, "\1\0", 2);
	ck = open_ok(dir);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL, err,
					      sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "table t1"));
	assert_non_null(strstr(err, "no key length"));
	tdbd_ckpt_close(ck);
	rs_free(&got);

	rec[0] = 0xff;
	rec[1] = 0x0f;
	rec[2] = rec[3] = 0;            /* 4095 bytes, only 10 there */
	raw_put(dir, "/long/t1", lk, maxkey, rec, 14);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL, err,
					      sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "table t1"));
	assert_non_null(strstr(err, "4095"));
	tdbd_ckpt_close(ck);
	rs_free(&got);

	rec[0] = 4;
	rec[1] = 0;                     /* a 4-byte key in /long */
	memcpy(rec + 4, "shrt", 4);
	raw_put(dir, "/long/t1", lk, maxkey, rec, 8);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL, err,
					      sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "table t1"));
	tdbd_ckpt_close(ck);
	rs_free(&got);

	rec[0] = (unsigned char)(maxkey + 1);
	rec[1] = (unsigned char)((maxkey + 1) >> 8);
	memset(rec + 4, 'M', maxkey + 1);
	raw_put(dir, "/long/t1", lk, maxkey, rec, 4 + maxkey + 1);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL, err,
					      sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "table t1"));
	assert_non_null(strstr(err, "does not match"));
	/* K's slot holds K': a del of K is of a key not there (K' stays),
	 * a put of K is refused rather than replacing K'. */
	{
		struct ckpt_txn *tx = begin_ok(ck);

		assert_int_equal(tdbd_ckpt_del(tx, "t1", kk, maxkey + 1), 0);
		commit_ok(tx, 43);
		tx = begin_ok(ck);
		assert_int_equal(tdbd_ckpt_put(tx, "t1", kk, maxkey + 1, "v",
					       1, TV), -EEXIST);
		tdbd_ckpt_abort(tx);
	}
	tdbd_ckpt_close(ck);
	rs_free(&got);
	assert_int_equal(raw_count(dir, "/long/t1"), 4);
	{
		size_t vl;
		unsigned char *v = raw_get(dir, "/long/t1", lk, maxkey, &vl);

		assert_non_null(v);
		assert_int_equal(vl, 4 + maxkey + 1);
		assert_memory_equal(v, rec, vl);
		free(v);
	}

	/* A table whose /long database is gone. */
	{
		MDB_env *env = raw_open(dir);
		MDB_txn *txn;
		MDB_dbi dbi;

		assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
		assert_int_equal(mdb_dbi_open(txn, "/long/t2", 0, &dbi), 0);
		assert_int_equal(mdb_drop(txn, dbi, 1), 0);
		assert_int_equal(mdb_txn_commit(txn), 0);
		mdb_env_close(env);
	}
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t2", collect, &got, NULL, err,
					      sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "/long/t2"));
	tdbd_ckpt_close(ck);
	rs_free(&got);
	dataset_free(&ds);
}

static void test_map_full(void **state)
{
	const char *dir = dir_of(state);
	unsigned char *chunk = pattern(64 * 1024, 5);
	struct recset want = { 0 };
	struct ckpt_txn *tx;
	struct ckpt *ck;
	int rc = 0, i;

	assert_int_equal(setenv("TDBD_CKPT_MAPSIZE", "1048576", 1), 0);
	ck = open_ok(dir);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t"), 0);
	put2(tx, &want, "t", "k", 1, "v", 1);
	commit_ok(tx, 5);

	/* 2 MiB in 32 records of 64 KiB into a 1 MiB map. */
	tx = begin_ok(ck);
	for (i = 0; i < 32 && !rc; i++) {
		char k[16];

		snprintf(k, sizeof(k), "big%02d", i);
		rc = tdbd_ckpt_put(tx, "t", k, strlen(k), chunk, 64 * 1024, TV);
	}
	assert_int_equal(rc, -ENOSPC);
	assert_true(i < 32);
	/* Spoiled: everything after says the same. */
	assert_int_equal(tdbd_ckpt_put(tx, "t", "s", 1, "s", 1, TV), -ENOSPC);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_commit(tx, 6, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "MDB_MAP_FULL"));
	assert_non_null(strstr(err, dir));

	/* The previous checkpoint, before and after a reopen. */
	assert_meta(ck, 5, NULL, 0);
	assert_table(ck, "t", &want);
	tdbd_ckpt_close(ck);
	ck = open_ok(dir);
	assert_meta(ck, 5, NULL, 0);
	assert_table(ck, "t", &want);

	/* The same in a long key, and the store still takes small ones. */
	tx = begin_ok(ck);
	{
		unsigned char *lkey = pattern(maxkey + 100, 6);

		rc = 0;
		for (i = 0; i < 32 && !rc; i++) {
			lkey[0] = (unsigned char)i;
			rc = tdbd_ckpt_put(tx, "t", lkey, maxkey + 100, chunk,
					   64 * 1024, TV);
		}
		free(lkey);
	}
	assert_int_equal(rc, -ENOSPC);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	put2(tx, &want, "t", "k2", 2, "v2", 2);
	commit_ok(tx, 7);
	tdbd_ckpt_close(ck);
	assert_int_equal(unsetenv("TDBD_CKPT_MAPSIZE"), 0);

	ck = open_ok(dir);
	assert_meta(ck, 7, NULL, 0);
	assert_table(ck, "t", &want);
	tdbd_ckpt_close(ck);
	rs_free(&want);
	free(chunk);
}

/* --- a full disk ---------------------------------------------------------- */

static int teardown_mnt(void **state)
{
	char mnt[128];

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir_of(state));
	umount2(mnt, MNT_DETACH);       /* if a failure left it mounted */
	return teardown(state);
}

/*
 * tdbd starts on a full disk: an existing store opens and reads (no
 * write at open), a commit fails with ENOSPC and a message saying so and
 * leaves the store as it was; a missing lock.mdb (LMDB would make it
 * through a mapping: SIGBUS) fails the open clearly and leaves nothing.
 */
static void test_disk_full(void **state)
{
	unsigned char *chunk = pattern(64 * 1024, 6);
	const struct ckpt_table *const one[] = { &schema_t1 };
	char mnt[128], filler[160], lock[160];
	struct recset want = { 0 };
	struct ckpt_txn *tx;
	struct ckpt *ck = NULL;
	int rc = 0;

	if (!smallfs_mount(dir_of(state), "1m", mnt, sizeof(mnt))) {
		free(chunk);
		skip();
	}
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	snprintf(lock, sizeof(lock), "%s/checkpoint/lock.mdb", mnt);
	ck = open_ok(mnt);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t1), 0);
	for (int i = 0; i < 20; i++) {
		char k[16], v[16];
		int kl = snprintf(k, sizeof(k), "k%02d", i);
		int vl = snprintf(v, sizeof(v), "v%d", i);

		put2(tx, &want, "t1", k, kl, v, vl);
	}
	commit_ok(tx, 7);
	tdbd_ckpt_close(ck);

	smallfs_fill(filler);
	ck = open_ok(mnt);
	assert_meta(ck, 7, one, 1);
	assert_table(ck, "t1", &want);
	tx = begin_ok(ck);
	for (int i = 0; i < 16 && !rc; i++) {
		char k[16];

		snprintf(k, sizeof(k), "big%02d", i);
		rc = tdbd_ckpt_put(tx, "t1", k, strlen(k), chunk, 64 * 1024, TV);
	}
	if (!rc)
		rc = tdbd_ckpt_commit(tx, 8, err, sizeof(err));
	else
		tdbd_ckpt_abort(tx);
	assert_int_equal(rc, -ENOSPC);
	if (!strcasestr(err, "no space"))
		fail_msg("the commit's message says nothing of space: %s",
			 err);
	assert_meta(ck, 7, one, 1);
	assert_table(ck, "t1", &want);
	tdbd_ckpt_close(ck);

	/* no lock.mdb, no room to make one */
	assert_int_equal(unlink(lock), 0);
	smallfs_fill(filler);
	ck = NULL;
	rc = tdbd_ckpt_open(mnt, &ck, err, sizeof(err));
	assert_int_equal(rc, -ENOSPC);
	assert_null(ck);
	if (!strstr(err, "lock.mdb") || !strcasestr(err, "no space"))
		fail_msg("not a clear message: %s", err);
	assert_int_equal(access(lock, F_OK), -1);

	/* room again: it all works */
	assert_int_equal(unlink(filler), 0);
	ck = open_ok(mnt);
	assert_meta(ck, 7, one, 1);
	assert_table(ck, "t1", &want);
	tx = begin_ok(ck);
	put2(tx, &want, "t1", "after", 5, chunk, 64 * 1024);
	commit_ok(tx, 9);
	assert_meta(ck, 9, one, 1);
	assert_table(ck, "t1", &want);
	tdbd_ckpt_close(ck);
	assert_int_equal(umount(mnt), 0);
	rs_free(&want);
	free(chunk);
}

static void test_open_errors(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = (void *)1;
	char file[128], sub[160];
	FILE *f;

	snprintf(file, sizeof(file), "%s/plainfile", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(sub, sizeof(sub), "%s/x", file);

	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_open(sub, &ck, err, sizeof(err)),
			 -ENOTDIR);
	assert_null(ck);
	assert_non_null(strstr(err, sub));
	assert_non_null(strstr(err, "Not a directory"));

	/* <dir>/checkpoint is a file. */
	snprintf(sub, sizeof(sub), "%s/d", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(file, sizeof(file), "%s/d/checkpoint", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_open(sub, &ck, err, sizeof(err)),
			 -ENOTDIR);
	assert_non_null(strstr(err, file));

	/* A missing parent. */
	snprintf(sub, sizeof(sub), "%s/no/such", dir);
	assert_int_equal(tdbd_ckpt_open(sub, &ck, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, sub));

	/* A bad TDBD_CKPT_MAPSIZE. */
	assert_int_equal(setenv("TDBD_CKPT_MAPSIZE", "1M", 1), 0);
	err[0] = '\0';
	assert_int_equal(tdbd_ckpt_open(dir, &ck, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "TDBD_CKPT_MAPSIZE"));
	assert_int_equal(setenv("TDBD_CKPT_MAPSIZE", "", 1), 0);
	assert_int_equal(tdbd_ckpt_open(dir, &ck, err, sizeof(err)), -EINVAL);
	assert_int_equal(unsetenv("TDBD_CKPT_MAPSIZE"), 0);
	assert_null(ck);
}

/* Run cmd, return its output (malloc'd) and exit status. */
static char *run(const char *cmd, int *status)
{
	size_t len = 0, cap = 1 << 16, got;
	char *out = malloc(cap);
	FILE *p = popen(cmd, "r");

	assert_non_null(out);
	assert_non_null(p);
	while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += got;
		if (cap - len < 2) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = '\0';
	*status = pclose(p);
	return out;
}

static void test_mdb_dump(void **state)
{
	const char *dir = dir_of(state);
	const char *tool = getenv("TDB_MDB_DUMP");
	struct ckpt *ck = open_ok(dir);
	char cmd[512], *out;
	struct dataset ds;
	int status;

	if (!tool || !*tool)
		tool = "/usr/bin/mdb_dump";
	populate(ck, &ds);
	tdbd_ckpt_close(ck);
	if (access(tool, X_OK)) {
		print_message("%s not there (lmdb-utils): mdb_dump not "
			      "checked\n", tool);
		dataset_free(&ds);
		skip();
	}

	/* key "key007" -> "val7", hex, one per line with a leading blank. */
	snprintf(cmd, sizeof(cmd), "'%s' -s t1 '%s/checkpoint'", tool, dir);
	out = run(cmd, &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "\n 6b6579303037\n 76616c37\n"));
	assert_non_null(strstr(out, "\n 61\n \n"));     /* "a" -> "" */
	free(out);

	snprintf(cmd, sizeof(cmd), "'%s' -a '%s/checkpoint'", tool, dir);
	out = run(cmd, &status);
	assert_int_equal(status, 0);
	assert_non_null(strstr(out, "database=t1\n"));
	assert_non_null(strstr(out, "database=t2\n"));
	assert_non_null(strstr(out, "database=/long/t1\n"));
	assert_non_null(strstr(out, "database=/ver/t1\n"));
	assert_non_null(strstr(out, "database=/lver/t1\n"));
	assert_non_null(strstr(out, "database=/meta\n"));
	free(out);
	dataset_free(&ds);
}

/*
 * A writer thread commits checkpoints 1..ROUNDS; each rewrites table g
 * (G_RECS records and one long key, all with value "gen=<lsn>") and
 * drops table h when lsn % 3 == 0, else rewrites it with one record and
 * its schema.  The reader thread meanwhile checks every load of g holds
 * one generation, complete, and that read_meta and h agree with an LSN.
 */
#define ROUNDS 60
#define G_RECS 40

struct threads {
	struct ckpt *ck;
	int done, reads;        /* __atomic */
	char why[1024];
};

struct gen_check {
	long gen;
	int n;
	bool mixed;
};

static int check_gen(void *arg, const void *key, size_t klen,
		     const void *val, size_t vlen, uint64_t ver, uint64_t dl)
{
	(void)ver;
	(void)dl;
	struct gen_check *g = arg;
	char buf[32];
	long gen;

	(void)key;
	(void)klen;
	if (vlen >= sizeof(buf))
		return -1;
	memcpy(buf, val, vlen);
	buf[vlen] = '\0';
	if (sscanf(buf, "gen=%ld", &gen) != 1)
		return -1;
	if (g->n++ == 0)
		g->gen = gen;
	else if (gen != g->gen)
		g->mixed = true;
	return 0;
}

static void *reader(void *arg)
{
	struct threads *t = arg;
	char rerr[512];

	while (!__atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
		struct ckpt_table *tabs;
		struct gen_check g = { 0 };
		unsigned int n;
		uint64_t lsn;
		int rc;

		rc = tdbd_ckpt_read_meta(t->ck, &lsn, &tabs, &n, rerr,
					 sizeof(rerr));
		if (rc) {
			snprintf(t->why, sizeof(t->why), "read_meta: %s", rerr);
			return NULL;
		}
		/* g always; h unless this checkpoint dropped it. */
		if (lsn && n != (lsn % 3 == 0 ? 1u : 2u)) {
			snprintf(t->why, sizeof(t->why), "lsn %" PRIu64
				 ": %u tables", lsn, n);
			free(tabs);
			return NULL;
		}
		free(tabs);
		rc = tdbd_ckpt_load_table(t->ck, "g", check_gen, &g, NULL, rerr,
					  sizeof(rerr));
		if (rc == -ENOENT && lsn == 0)
			continue;
		if (rc || g.mixed || g.n != G_RECS + 1) {
			snprintf(t->why, sizeof(t->why), "load g: rc %d, %d "
				 "records, mixed %d: %s", rc, g.n, g.mixed,
				 rc ? rerr : "");
			return NULL;
		}
		if ((uint64_t)g.gen < lsn) {
			snprintf(t->why, sizeof(t->why), "g gen %ld older "
				 "than lsn %" PRIu64, g.gen, lsn);
			return NULL;
		}
		__atomic_fetch_add(&t->reads, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_threads(void **state)
{
	struct threads t = { .ck = open_ok(dir_of(state)) };
	unsigned char *lkey = pattern(maxkey + 50, 8);
	struct ckpt_table g = { .name = "g", .id = 1 };
	struct ckpt_table h = { .name = "h", .id = 2 };
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, reader, &t), 0);
	for (uint64_t lsn = 1; lsn <= ROUNDS; lsn++) {
		struct ckpt_txn *tx = begin_ok(t.ck);
		char k[16], v[32];
		int vl = snprintf(v, sizeof(v), "gen=%" PRIu64, lsn);

		assert_int_equal(tdbd_ckpt_reset_table(tx, "g"), 0);
		for (int i = 0; i < G_RECS; i++) {
			snprintf(k, sizeof(k), "r%02d", i);
			assert_int_equal(tdbd_ckpt_put(tx, "g", k, strlen(k),
						       v, vl, TV), 0);
		}
		assert_int_equal(tdbd_ckpt_put(tx, "g", lkey, maxkey + 50, v,
					       vl, TV), 0);
		assert_int_equal(tdbd_ckpt_set_table(tx, &g), 0);
		if (lsn % 3 == 0) {
			assert_int_equal(tdbd_ckpt_drop_table(tx, "h"), 0);
		} else {
			assert_int_equal(tdbd_ckpt_reset_table(tx, "h"), 0);
			assert_int_equal(tdbd_ckpt_put(tx, "h", "x", 1, v,
						       vl, TV), 0);
			assert_int_equal(tdbd_ckpt_set_table(tx, &h), 0);
		}
		commit_ok(tx, lsn);
		/* The writer would take the lock again at once: every few
		 * rounds let the reader in (for up to 5 s; it may have
		 * stopped on a failure). */
		if (lsn % 4 == 0) {
			int seen = __atomic_load_n(&t.reads, __ATOMIC_ACQUIRE);

			for (int w = 0; w < 50000 && !t.why[0] &&
			     __atomic_load_n(&t.reads, __ATOMIC_ACQUIRE) == seen;
			     w++)
				usleep(100);
		}
	}
	__atomic_store_n(&t.done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (t.why[0])
		fail_msg("reader: %s", t.why);
	print_message("reader: %d consistent loads\n", t.reads);
	assert_true(t.reads >= ROUNDS / 4);
	tdbd_ckpt_close(t.ck);
	free(lkey);
}

/* --- writing in order, space, compaction -------------------------------- */

static uint64_t file_bytes(const char *dir)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/checkpoint/data.mdb", dir);
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* Keys "k%07u" (ascending), one long key (maxkey + 10, goes to
 * "/long/"), values of gen, each its own version; written whole with
 * append; the version counter kept is above them all. */
#define APPEND_VER(gen, i) ((uint64_t)(gen) << 32 | ((uint64_t)(i) + 1))

static void append_table(struct ckpt *ck, struct recset *want,
			 unsigned int n, unsigned int gen)
{
	struct ckpt_txn *tx = begin_ok(ck);
	unsigned char *v = pattern(200, gen);
	unsigned char *lk = pattern(maxkey + 10, 7);

	rs_free(want);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t"), 0);
	for (unsigned int i = 0; i < n; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%07u", i);
		v[0] = (unsigned char)i;
		assert_int_equal(tdbd_ckpt_append(tx, "t", k, 8, v, 200,
						  APPEND_VER(gen, i)), 0);
		rs_add(want, k, 8, v, 200, APPEND_VER(gen, i));
		if (i == n / 2) {       /* a long key among them */
			assert_int_equal(tdbd_ckpt_append(tx, "t", lk,
							  maxkey + 10, v, 3,
							  APPEND_VER(gen, n)),
					 0);
			rs_add(want, lk, maxkey + 10, v, 3,
			       APPEND_VER(gen, n));
		}
	}
	assert_int_equal(tdbd_ckpt_set_table(tx, &(struct ckpt_table){
		.name = "t", .id = 1, .mode = 0600 }), 0);
	assert_int_equal(tdbd_ckpt_set_version(tx, APPEND_VER(gen, n + 1)), 0);
	commit_ok(tx, gen);
	free(v);
	free(lk);
}

/*
 * Expiry (format 3): a record's deadline lives beside its version in
 * "/ver/" or "/lver/" (16 bytes; 8 without one), put or appended, short
 * key or long, and comes back with it; the table's database holds the
 * value alone, so mdb_dump shows it as before.  A plain put over a
 * record with a deadline takes it away.  A deadline of 0 written there
 * is damage.  A schema record of 28 bytes (format 2) has no default TTL.
 */
static void test_deadlines(void **state)
{
	const char *dir = dir_of(state);
	const char *tool = getenv("TDB_MDB_DUMP");
	const uint64_t d1 = 1893456000000ull, d2 = 0x0102030405060708ull;
	unsigned char *lk = pattern(maxkey + 5, 11), *v, old[28] = { 1 };
	unsigned char f3[56] = { 1 };
	struct ckpt *ck = open_ok(dir);
	struct recset want = { 0 }, want2 = { 0 }, got = { 0 };
	struct ckpt_table *tabs = NULL;
	struct ckpt_txn *tx;
	unsigned int n;
	uint64_t lsn;
	char cmd[512], *out;
	size_t vl;
	int status;

	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t1"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t1), 0);
	assert_int_equal(tdbd_ckpt_put_dl(tx, "t1", "d1", 2, "dv", 2, 11, d1),
			 0);
	rs_put(&want, "d1", 2, "dv", 2, 11);
	want.r[want.n - 1].dl = d1;
	assert_int_equal(tdbd_ckpt_put_dl(tx, "t1", "p1", 2, "pv", 2, 12, 0),
			 0);
	rs_put(&want, "p1", 2, "pv", 2, 12);
	assert_int_equal(tdbd_ckpt_put_dl(tx, "t1", lk, maxkey + 5, "lv", 2,
					  13, d2), 0);
	rs_put(&want, lk, maxkey + 5, "lv", 2, 13);
	want.r[want.n - 1].dl = d2;
	/* appended, with and without, and a long key among them */
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t2"), 0);
	assert_int_equal(tdbd_ckpt_set_table(tx, &schema_t2), 0);
	assert_int_equal(tdbd_ckpt_append_dl(tx, "t2", "a", 1, "1", 1, 21, d1),
			 0);
	rs_add(&want2, "a", 1, "1", 1, 21);
	want2.r[want2.n - 1].dl = d1;
	assert_int_equal(tdbd_ckpt_append_dl(tx, "t2", "b", 1, "2", 1, 22, 0),
			 0);
	rs_add(&want2, "b", 1, "2", 1, 22);
	assert_int_equal(tdbd_ckpt_append_dl(tx, "t2", lk, maxkey + 5, "3", 1,
					     23, d2 + 1), 0);
	rs_add(&want2, lk, maxkey + 5, "3", 1, 23);
	want2.r[want2.n - 1].dl = d2 + 1;
	assert_int_equal(tdbd_ckpt_append_dl(tx, "t2", "c", 1, "4", 1, 24,
					     d1 + 1), 0);
	rs_add(&want2, "c", 1, "4", 1, 24);
	want2.r[want2.n - 1].dl = d1 + 1;
	commit_ok(tx, 50);
	assert_table(ck, "t1", &want);
	assert_table(ck, "t2", &want2);
	assert_meta(ck, 50, both, 2);   /* t1's default TTL included */

	/* a plain put over it: no deadline any more */
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t2", "a", 1, "5", 1, 25), 0);
	rs_put(&want2, "a", 1, "5", 1, 25);
	rs_find(&want2, "a", 1)->dl = 0;
	commit_ok(tx, 51);
	assert_table(ck, "t2", &want2);
	tdbd_ckpt_close(ck);

	/* the layout: the value alone in the table, the deadline after
	 * the version */
	v = raw_get(dir, "t1", "d1", 2, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 2);
	assert_memory_equal(v, "dv", 2);
	free(v);
	v = raw_get(dir, "/ver/t1", "d1", 2, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 16);
	assert_memory_equal(v, "\x0b\0\0\0\0\0\0\0", 8);
	assert_memory_equal(v + 8, "\x00\xb4\xc5\xda\xb8\x01\0\0", 8);
	free(v);
	v = raw_get(dir, "/ver/t1", "p1", 2, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 8);
	free(v);
	v = raw_get(dir, "/ver/t2", "a", 1, &vl);
	assert_non_null(v);
	assert_int_equal(vl, 8);
	free(v);

	if (!tool || !*tool)
		tool = "/usr/bin/mdb_dump";
	if (!access(tool, X_OK)) {
		/* "d1" -> "dv" and "p1" -> "pv", plain */
		snprintf(cmd, sizeof(cmd), "'%s' -s t1 '%s/checkpoint'", tool,
			 dir);
		out = run(cmd, &status);
		assert_int_equal(status, 0);
		assert_non_null(strstr(out, "\n 6431\n 6476\n 7031\n 7076\n"));
		free(out);
	} else {
		print_message("%s not there (lmdb-utils): mdb_dump not "
			      "checked\n", tool);
	}

	/* a deadline of 0 beside a version: damage, said so */
	raw_put(dir, "/ver/t1", "p1", 2, "\x0c\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
		16);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect, &got, NULL,
					      err, sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "deadline of 0"));
	rs_free(&got);
	tdbd_ckpt_close(ck);

	/* a schema record from before default TTLs: none */
	raw_put(dir, "/meta", "table/t1", 8, old, sizeof(old));
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(tabs[0].name, "t1");
	assert_int_equal(tabs[0].id, 1);
	assert_int_equal(tabs[0].default_ttl, 0);
	assert_int_equal(tabs[0].max_bytes, 0);
	assert_int_equal(tabs[0].max_records, 0);
	assert_int_equal(tabs[0].evict, 0);
	assert_int_equal(tabs[0].flags, 0);
	assert_int_equal(tabs[1].default_ttl, schema_t2.default_ttl);
	free(tabs);
	tdbd_ckpt_close(ck);

	/* a schema record of format 3 (56 bytes, before table flags): its
	 * attributes, and flags 0 (a hash table) */
	f3[28] = 0x30;  /* default TTL 0x30 ms */
	f3[52] = 3;     /* evict */
	raw_put(dir, "/meta", "table/t1", 8, f3, sizeof(f3));
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(tabs[0].name, "t1");
	assert_int_equal(tabs[0].default_ttl, 0x30);
	assert_int_equal(tabs[0].evict, 3);
	assert_int_equal(tabs[0].flags, 0);
	free(tabs);
	tdbd_ckpt_close(ck);
	rs_free(&want);
	rs_free(&want2);
	free(lk);
}

/* Append writes in order; a key not after the last fails the txn. */
static void test_append(void **state)
{
	struct ckpt *ck = open_ok(dir_of(state));
	struct recset want = { 0 };
	struct ckpt_txn *tx;
	int rc;

	append_table(ck, &want, 5000, 1);
	assert_table(ck, "t", &want);

	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t"), 0);
	assert_int_equal(tdbd_ckpt_append(tx, "t", "b", 1, "1", 1, TV), 0);
	assert_int_equal(tdbd_ckpt_append(tx, "t", "bb", 2, "2", 1, TV), 0);
	rc = tdbd_ckpt_append(tx, "t", "ba", 2, "3", 1, TV);
	assert_int_equal(rc, -EINVAL);
	rc = tdbd_ckpt_commit(tx, 9, err, sizeof(err));
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, "LMDB's order"));
	/* the store is as before */
	assert_table(ck, "t", &want);
	tdbd_ckpt_close(ck);
	rs_free(&want);
}

/*
 * A table rewritten whole again and again: the file holds its old and
 * new copies (never three: the transaction after each checkpoint lets
 * the next reuse the pages it freed); tdbd_ckpt_space sees the free
 * part; compaction gives a file of the pages in use, with the same
 * records, also after the store is opened again, and a stale copy is
 * removed at open.
 */
static void test_compact(void **state)
{
	const char *dir = dir_of(state);
	struct ckpt *ck = open_ok(dir);
	struct recset want = { 0 };
	struct ckpt_space sp, sp2;
	uint64_t lsn, one, most = 0;
	struct ckpt_table *tabs;
	unsigned int n;
	char path[128];
	int fd;

	append_table(ck, &want, 20000, 1);
	one = file_bytes(dir);
	for (unsigned int g = 2; g <= 8; g++) {
		append_table(ck, &want, 20000, g);
		if (file_bytes(dir) > most)
			most = file_bytes(dir);
	}
	/* old + new copies and a margin (branch pages, /meta, free list) */
	if (most > one * 2 + one / 4)
		fail_msg("file grew to %llu bytes, one copy is %llu",
			 (unsigned long long)most, (unsigned long long)one);
	assert_int_equal(tdbd_ckpt_space(ck, &sp, err, sizeof(err)), 0);
	assert_int_equal(sp.file_bytes, file_bytes(dir));
	assert_true(sp.used_bytes < sp.file_bytes);
	assert_true(sp.used_bytes * 10 >= one * 9);
	assert_int_equal(tdbd_ckpt_compact(ck, err, sizeof(err)), 0);
	assert_int_equal(tdbd_ckpt_space(ck, &sp2, err, sizeof(err)), 0);
	assert_true(sp2.file_bytes < sp.file_bytes);
	assert_true(sp2.file_bytes <= sp.used_bytes);
	assert_table(ck, "t", &want);
	/* it still takes checkpoints */
	append_table(ck, &want, 20000, 9);
	assert_table(ck, "t", &want);
	tdbd_ckpt_close(ck);

	/* a stale copy (a crash before the rename) is removed at open */
	snprintf(path, sizeof(path), "%s/checkpoint/data.mdb.compact", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "junk", 4), 4);
	close(fd);
	ck = open_ok(dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(tdbd_ckpt_read_meta(ck, &lsn, &tabs, &n, err,
					     sizeof(err)), 0);
	assert_int_equal(lsn, 9);
	assert_int_equal(n, 1);
	free(tabs);
	assert_table(ck, "t", &want);   /* versions too */
	assert_int_equal(tdbd_ckpt_read_version(ck, &lsn, err, sizeof(err)),
			 0);
	assert_int_equal(lsn, APPEND_VER(9, 20001));
	tdbd_ckpt_close(ck);
	rs_free(&want);
}

/* The u64 LE at db/key, or 0 if it is not there. */
static uint64_t raw_ver(const char *dir, const char *db, const void *k,
			size_t kl)
{
	size_t vl = 0;
	unsigned char *v = raw_get(dir, db, k, kl, &vl);
	uint64_t x = 0;

	if (!v)
		return 0;
	assert_int_equal(vl, 8);
	for (int i = 7; i >= 0; i--)
		x = x << 8 | v[i];
	free(v);
	return x;
}

/* Remove database db (raw). */
static void raw_drop(const char *dir, const char *db)
{
	MDB_env *env = raw_open(dir);
	MDB_txn *txn;
	MDB_dbi dbi;

	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, db, 0, &dbi), 0);
	assert_int_equal(mdb_drop(txn, dbi, 1), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

/*
 * Versions (issue 24): beside the values, not in them ("/ver/<t>" for
 * the table's own keys, "/lver/<t>" for the "/long/" ones, u64 LE); the
 * table's database still holds the plain values; a put or delete moves
 * or removes the version with the record; the counter kept in /meta;
 * version 0 refused; a table written before versions (no "/ver/") loads
 * with version 0 and must be reset before a put; mismatched version
 * databases are refused.
 */
static void test_versions(void **state)
{
	const char *dir = dir_of(state);
	struct recset junk = { 0 };     /* what failed loads collected */
	struct ckpt *ck = open_ok(dir);
	unsigned char *lk = malloc(maxkey);
	struct ckpt_txn *tx;
	struct dataset ds;
	struct rec *r;
	bool versioned = true;
	uint64_t v;
	size_t vl;
	unsigned char *val;

	assert_non_null(lk);
	assert_int_equal(tdbd_ckpt_read_version(ck, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0);         /* none kept yet */
	populate(ck, &ds);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_version(tx, 0x123456789abcull), 0);
	/* a put moves the version, a delete takes it away */
	put2(tx, &ds.t1, "t1", "key005", 6, "new5", 4);
	put2(tx, &ds.t1, "t1", ds.ktwin, maxkey + 1, "twin3", 5);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "key006", 6), 0);
	rs_del(&ds.t1, "key006", 6);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.klong, maxkey + 1), 0);
	rs_del(&ds.t1, ds.klong, maxkey + 1);
	/* version 0 is no version */
	assert_int_equal(tdbd_ckpt_put(tx, "t1", "z", 1, "z", 1, 0), -EINVAL);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_set_version(tx, 0x123456789abcull), 0);
	put2(tx, &ds.t1, "t1", "key005", 6, "new5", 4);
	put2(tx, &ds.t1, "t1", ds.ktwin, maxkey + 1, "twin3", 5);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", "key006", 6), 0);
	assert_int_equal(tdbd_ckpt_del(tx, "t1", ds.klong, maxkey + 1), 0);
	commit_ok(tx, 43);
	assert_table(ck, "t1", &ds.t1);
	assert_table(ck, "t2", &ds.t2);
	assert_int_equal(tdbd_ckpt_read_version(ck, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0x123456789abcull);
	tdbd_ckpt_close(ck);

	/* the raw layout: plain values, versions beside them */
	val = raw_get(dir, "t1", "key005", 6, &vl);
	assert_non_null(val);
	assert_int_equal(vl, 4);
	assert_memory_equal(val, "new5", 4);    /* nothing but the value */
	free(val);
	r = rs_find(&ds.t1, "key005", 6);
	assert_non_null(r);
	assert_int_equal(raw_ver(dir, "/ver/t1", "key005", 6), r->ver);
	assert_int_equal(raw_ver(dir, "/ver/t1", "key006", 6), 0);
	memcpy(lk, ds.ktwin, maxkey - 16);
	be64(lk + maxkey - 16, XXH64(ds.ktwin, maxkey + 1, 1));
	be64(lk + maxkey - 8, XXH64(ds.ktwin, maxkey + 1, 2));
	r = rs_find(&ds.t1, ds.ktwin, maxkey + 1);
	assert_non_null(r);
	assert_int_equal(raw_ver(dir, "/lver/t1", lk, maxkey), r->ver);
	assert_int_equal(raw_count(dir, "/ver/t1"), raw_count(dir, "t1"));
	assert_int_equal(raw_count(dir, "/lver/t1"),
			 raw_count(dir, "/long/t1"));
	assert_int_equal(raw_count(dir, "/lver/t1"), 2);

	/* a version missing, one too many, a 0: refused */
	raw_put(dir, "t1", "key006", 6, "x", 1);        /* no version */
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect,
					      rs_fresh(&junk), NULL,
					      err, sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "/ver/t1"));
	tdbd_ckpt_close(ck);
	raw_put(dir, "/ver/t1", "key006", 6, "\0\0\0\0\0\0\0\0", 8);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t1", collect,
					      rs_fresh(&junk), NULL,
					      err, sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "of 0"));
	tdbd_ckpt_close(ck);
	raw_put(dir, "/ver/t2", "zz", 2, "\1\0\0\0\0\0\0\0", 8);
	ck = open_ok(dir);
	assert_int_equal(tdbd_ckpt_load_table(ck, "t2", collect,
					      rs_fresh(&junk), NULL,
					      err, sizeof(err)), -EUCLEAN);
	assert_non_null(strstr(err, "/ver/t2"));
	tdbd_ckpt_close(ck);

	/* a table written before versions: no "/ver/", "/lver/" */
	raw_drop(dir, "/ver/t2");
	raw_drop(dir, "/lver/t2");
	raw_put(dir, "/meta", "format", 6, "\1\0\0\0", 4);
	ck = open_ok(dir);
	for (size_t i = 0; i < ds.t2.n; i++)
		ds.t2.r[i].ver = 0;
	{
		struct recset got = { 0 };

		assert_int_equal(tdbd_ckpt_load_table(ck, "t2", collect, &got,
						      &versioned, err,
						      sizeof(err)), 0);
		assert_false(versioned);
		rs_assert_equal(&ds.t2, &got);  /* version 0 each */
		rs_free(&got);
	}
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_put(tx, "t2", "q", 1, "q", 1, 9), -EUCLEAN);
	tdbd_ckpt_abort(tx);
	tx = begin_ok(ck);      /* written whole, it has them */
	assert_int_equal(tdbd_ckpt_reset_table(tx, "t2"), 0);
	rs_free(&ds.t2);
	put2(tx, &ds.t2, "t2", "x", 1, "y", 1);
	put2(tx, &ds.t2, "t2", ds.k4096, 4096, "", 0);
	commit_ok(tx, 44);
	versioned = false;
	{
		struct recset got = { 0 };

		assert_int_equal(tdbd_ckpt_load_table(ck, "t2", collect, &got,
						      &versioned, err,
						      sizeof(err)), 0);
		assert_true(versioned);
		rs_assert_equal(&ds.t2, &got);
		rs_free(&got);
	}
	tdbd_ckpt_close(ck);
	val = raw_get(dir, "/meta", "format", 6, &vl);
	assert_non_null(val);
	assert_memory_equal(val, "\4\0\0\0", 4);    /* the commit's */
	free(val);

	/* dropping a table takes its version databases */
	ck = open_ok(dir);
	tx = begin_ok(ck);
	assert_int_equal(tdbd_ckpt_drop_table(tx, "t2"), 0);
	commit_ok(tx, 45);
	tdbd_ckpt_close(ck);
	assert_int_equal(raw_count(dir, "/ver/t2"), -1);
	assert_int_equal(raw_count(dir, "/lver/t2"), -1);
	rs_free(&junk);
	free(lk);
	dataset_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadlines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_compact, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_versions, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_aside_mark, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_drop_then_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spoiled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_thread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_load_stops, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_records, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_map_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_disk_full, setup,
						teardown_mnt),
		cmocka_unit_test_setup_teardown(test_open_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mdb_dump, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};
	MDB_env *env;
	int rc;

	/* LMDB's key limit is fixed at build time; the store uses the
	 * same library, so the same number. */
	if (mdb_env_create(&env))
		return 1;
	rc = mdb_env_get_maxkeysize(env);
	mdb_env_close(env);
	if (rc <= 32 || rc + 100 > 4096)
		return 1;
	maxkey = (unsigned int)rc;
	umask(022);
	unsetenv("TDBD_CKPT_MAPSIZE");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
