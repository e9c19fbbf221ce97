// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_engine.c - tdb-bench-engine: the tdb engine against LMDB.
 *
 * Both engines run in this one process and thread, on the same keys, in
 * the same order.  The keys (16 bytes, binary) are made once from a fixed
 * seed; every phase of every run gets its own random permutation of them,
 * and both engines walk the same prefix of it:
 *
 *   load    insert all N keys into an empty store, once
 *           (tdb: tdbe_put; LMDB: 1000 puts per write transaction)
 *   get     W keys, copy-out: tdbe_get | mdb_get + memcpy
 *   lookup  W keys, zero-copy: tdbe_lookup under tdbe_read_lock taken per
 *           lookup, and (other W keys) once around the pass | mdb_get in
 *           one read transaction
 *   many    W keys, zero-copy, 16 per tdbe_lookup_many call and read lock
 *           (the walks' cache misses overlap) | the same mdb_get pass
 *   put     replace values: W1 keys, LMDB one write transaction per put;
 *           W keys, LMDB 1000 puts per transaction; tdb: tdbe_put
 *   del     W1 keys, LMDB one transaction per delete; W keys, 1000 deletes
 *           per transaction; tdb: tdbe_del.  The deleted keys are put back
 *           (unmeasured) so every phase starts from a store of N keys.
 *
 * W (--ops, default 100k) and W1 (--txn-ops, default 20k) keep the run
 * short: on a store of 1 M keys LMDB needs several seconds for 1 M random
 * writes, and tens of seconds with one transaction per write.  Both
 * engines do exactly the same operations, so each ratio compares like
 * with like; --ops 0 --txn-ops 0 runs every phase over all N keys.
 *
 * LMDB runs with MDB_NOSYNC (no fsync at commit: tdb has no disk at all)
 * in a fresh directory under $TMPDIR, /tmp or --dir.  Every value read is
 * checked (its first 8 bytes are the key's index); after each write phase
 * an unmeasured pass checks every written key's generation (the next 8
 * bytes) and the record count; a wrong answer or a failed call stops the
 * benchmark with an error.  Phases after the load run --runs times, the
 * engine that goes first alternating between runs; the report gives each
 * engine's median ops/s and the ratio of the medians.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

#include "core.h"
#include "../../src/platform/user.h"
#include "../common/csv.h"
#include "../common/machine.h"

#define KEY_LEN      16u
#define BATCH        1000u
#define DEF_KEYS     1000000u
#define DEF_OPS      100000u
#define DEF_TXN_OPS  20000u
#define QUICK_KEYS   200000u
#define QUICK_OPS    50000u
#define QUICK_TXN_OPS 10000u
#define DEF_RUNS     3u
#define DEF_VSIZE    100u
#define VAL_MIN      16u            /* index + generation */
#define MAX_RUNS     99u
#define SEED         0x7db5eedc0ffee123ull

/* --- options and state ---------------------------------------------- */
static struct {
	uint64_t keys;          /* N */
	uint64_t ops;           /* W */
	uint64_t txn_ops;       /* W1 */
	unsigned int runs;
	size_t vsize;
	const char *dir;
	unsigned int max_extents;
	bool writemap;
	bool verbose;
	const char *csv;        /* --csv FILE, or NULL */
} opt = {
	.keys = DEF_KEYS, .ops = DEF_OPS, .txn_ops = DEF_TXN_OPS,
	.runs = DEF_RUNS, .vsize = DEF_VSIZE,
};

static uint8_t *keys;           /* keys[i * KEY_LEN], i < N */
static uint32_t *egen;          /* expected generation of key i, 0: absent */
static uint64_t erecords;       /* expected record count */
static uint32_t *perm;          /* the current phase's order */
static uint8_t *vbuf;           /* the value being written */
static uint8_t *rbuf;           /* the value being read (copy-out) */

static struct tdbe_engine *eng;
static struct tdbe_table *tbl;

static char envdir[4096];       /* our temp dir, removed at exit */
static char envfile[2][4200];
static MDB_env *env;
static MDB_dbi dbi;

/* --- errors ----------------------------------------------------------- */
static void remove_envdir(void)
{
	if (envdir[0]) {
		unlink(envfile[0]);
		unlink(envfile[1]);
		rmdir(envdir);
		envdir[0] = 0;
	}
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-engine: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* Only the files: an engine may be mid-operation (a read lock or a
	 * transaction held); exit tears down the rest. */
	remove_envdir();
	exit(1);
}

static void tdb_fail(int err, const char *what, const struct tdbe_extack *ext)
{
	die("tdb %s: %s%s%s", what, tdbe_strerror(err),
	    ext && ext->msg ? ": " : "", ext && ext->msg ? ext->msg : "");
}

static void mdb_check(int rc, const char *what)
{
	if (rc != MDB_SUCCESS)
		die("LMDB %s: %s", what, mdb_strerror(rc));
}

/* --- keys, values, permutations ----------------------------------------- */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Key i: splitmix64 outputs 2i and 2i+1 of a fixed seed.  The mix is a
 * bijection and its inputs differ, so the first words (and keys) differ. */
static void make_keys(void)
{
	for (uint64_t i = 0; i < opt.keys; i++) {
		uint64_t s = SEED + 2 * i * 0x9e3779b97f4a7c15ull;
		uint64_t w[2];

		w[0] = splitmix64(&s);
		w[1] = splitmix64(&s);
		memcpy(keys + i * KEY_LEN, w, KEY_LEN);
	}
}

static inline const uint8_t *key(uint32_t i)
{
	return keys + (size_t)i * KEY_LEN;
}

/* Fisher-Yates, from a seed fixed by (phase, run). */
static void make_perm(unsigned int phase, unsigned int run)
{
	uint64_t s = SEED ^ ((uint64_t)(phase + 1) << 40) ^
		((uint64_t)run << 48);
	uint32_t n = (uint32_t)opt.keys;

	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(((splitmix64(&s) >> 32) *
					 (uint64_t)(i + 1)) >> 32);
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

/* Value of key i, generation gen: i, gen, then a fill byte. */
static void value_fill(uint32_t gen)
{
	memset(vbuf, (int)(0xa5 ^ gen), opt.vsize);
}

static inline void value_set(uint32_t i, uint32_t gen)
{
	uint64_t w[2] = { i, gen };

	memcpy(vbuf, w, sizeof(w));
}

/* In the timed loops: the length and the index (a cheap check that
 * touches the value); the unmeasured passes also check the generation. */
static inline void value_check(const char *who, uint32_t i, const void *v,
			       size_t vlen)
{
	uint64_t w;

	memcpy(&w, v, sizeof(w));
	if (tdb_unlikely(vlen != opt.vsize || w != i))
		die("%s: wrong value for key %" PRIu32 " (%zu bytes, index %"
		    PRIu64 "; expected %zu bytes, index %" PRIu32 ")",
		    who, i, vlen, w, opt.vsize, i);
}

static void value_check_gen(const char *who, uint32_t i, const void *v,
			    size_t vlen)
{
	uint64_t w[2];

	value_check(who, i, v, vlen);
	memcpy(w, v, sizeof(w));
	if (w[1] != egen[i])
		die("%s: key %" PRIu32 " has generation %" PRIu64
		    ", expected %" PRIu32, who, i, w[1], egen[i]);
}

/* Both engines did a write phase over perm[0, n): expect its result. */
static void expect(uint64_t n, uint32_t gen)
{
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];

		erecords += (gen != 0) - (egen[i] != 0);
		egen[i] = gen;
	}
}

/* --- timing ----------------------------------------------------------- */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Before each timed pass: bring the pass's keys and order into the cache,
 * so the engine measured second does not find them warmer than the first
 * did (100k keys and their order fit in L2). */
static volatile uint64_t warm_sink;

static void warm(uint64_t n)
{
	uint64_t x = 0;

	for (uint64_t k = 0; k < n; k++)
		x += *(const uint64_t *)(const void *)key(perm[k]);
	warm_sink = x;
}

/* --- tdb side ----------------------------------------------------------- */
/* perm[0, n): put generation gen, or delete (gen == 0). */
static double tdb_write(uint64_t n, uint32_t gen)
{
	struct tdbe_extack ext = { 0 };
	double t0;

	value_fill(gen);
	warm(n);
	t0 = now();
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];
		int err;

		if (gen) {
			value_set(i, gen);
			err = tdbe_put(tbl, key(i), KEY_LEN, vbuf, opt.vsize,
				       0, &ext);
		} else {
			err = tdbe_del(tbl, key(i), KEY_LEN, &ext);
		}
		if (tdb_unlikely(err < 0))
			tdb_fail(err, gen ? "put" : "del", &ext);
	}
	return n / (now() - t0);
}

static double tdb_get(uint64_t n)
{
	double t0;

	warm(n);
	t0 = now();

	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];
		size_t need = 0;
		long len = tdbe_get(tbl, key(i), KEY_LEN, rbuf, opt.vsize,
				    &need);

		if (tdb_unlikely(len < 0))
			tdb_fail((int)len, "get", NULL);
		value_check("tdb get", i, rbuf, (size_t)len);
	}
	return n / (now() - t0);
}

/* Zero-copy; lock_each: a read lock per lookup, else one around the whole
 * pass (like LMDB's single read transaction). */
static double tdb_lookup(uint64_t n, bool lock_each)
{
	double t0;

	warm(n);
	t0 = now();

	if (!lock_each)
		tdbe_read_lock();
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];
		const void *v;
		size_t vlen;
		int err;

		if (lock_each)
			tdbe_read_lock();
		err = tdbe_lookup(tbl, key(i), KEY_LEN, &v, &vlen);
		if (tdb_unlikely(err < 0)) {
			tdbe_read_unlock();
			tdb_fail(err, "lookup", NULL);
		}
		value_check("tdb lookup", i, v, vlen);
		if (lock_each)
			tdbe_read_unlock();
	}
	if (!lock_each)
		tdbe_read_unlock();
	return n / (now() - t0);
}

/* Zero-copy, TDBE_LOOKUP_GROUP keys per tdbe_lookup_many call and per
 * read lock: the way a server draining a ring of requests would look
 * them up (their cache misses overlap). */
static double tdb_lookup_many(uint64_t n)
{
	struct tdbe_lookup_req req[TDBE_LOOKUP_GROUP];
	double t0;

	warm(n);
	t0 = now();
	for (uint64_t k = 0; k < n; k += TDBE_LOOKUP_GROUP) {
		unsigned int m = n - k < TDBE_LOOKUP_GROUP
					 ? (unsigned int)(n - k)
					 : TDBE_LOOKUP_GROUP;

		for (unsigned int j = 0; j < m; j++) {
			req[j].key = key(perm[k + j]);
			req[j].klen = KEY_LEN;
		}
		tdbe_read_lock();
		tdbe_lookup_many(tbl, req, m);
		for (unsigned int j = 0; j < m; j++) {
			if (tdb_unlikely(req[j].err < 0)) {
				tdbe_read_unlock();
				tdb_fail(req[j].err, "lookup_many", NULL);
			}
			value_check("tdb lookup_many", perm[k + j],
				    req[j].val, req[j].vlen);
		}
		tdbe_read_unlock();
	}
	return n / (now() - t0);
}

/* Unmeasured: perm[0, n) (every step-th) are as expected; so is the count. */
static void tdb_verify(uint64_t n, unsigned int step)
{
	struct tdbe_table_stat st;

	for (uint64_t k = 0; k < n; k += step) {
		uint32_t i = perm[k];
		size_t need = 0;
		long len = tdbe_get(tbl, key(i), KEY_LEN, rbuf, opt.vsize,
				    &need);

		if (len == -ENOENT && !egen[i])
			continue;
		if (len < 0 || !egen[i])
			die("tdb get of key %" PRIu32 ": %s, expected %s", i,
			    len < 0 ? tdbe_strerror((int)len) : "found",
			    egen[i] ? "a value" : "no such key");
		value_check_gen("tdb get", i, rbuf, (size_t)len);
	}
	tdbe_table_stat(tbl, &st);
	if (st.records != erecords)
		die("tdb table has %" PRIu64 " records, expected %" PRIu64,
		    st.records, erecords);
}

/* --- LMDB side -------------------------------------------------------- */
static void lmdb_open_env(void)
{
	/* Room for the data several times over: copy-on-write and the free
	 * list need slack.  The map is only reserved address space. */
	size_t raw = (size_t)opt.keys * (KEY_LEN + opt.vsize + 16);
	size_t mapsize = (size_t)1 << 30;
	unsigned int flags = MDB_NOSYNC | (opt.writemap ? MDB_WRITEMAP : 0);
	MDB_txn *txn;

	while (mapsize < 8 * raw)
		mapsize <<= 1;
	mdb_check(mdb_env_create(&env), "env create");
	mdb_check(mdb_env_set_mapsize(env, mapsize), "set mapsize");
	mdb_check(mdb_env_open(env, envdir, flags, 0600), "env open");
	mdb_check(mdb_txn_begin(env, NULL, 0, &txn), "txn begin");
	mdb_check(mdb_dbi_open(txn, NULL, 0, &dbi), "dbi open");
	mdb_check(mdb_txn_commit(txn), "txn commit");
}

/* perm[0, n), per_txn operations per write transaction: put generation
 * gen, or delete (gen == 0). */
static double lmdb_write(uint64_t n, uint32_t gen, unsigned int per_txn)
{
	MDB_txn *txn = NULL;
	double t0;

	value_fill(gen);
	warm(n);
	t0 = now();
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];
		MDB_val mk = { KEY_LEN, (void *)key(i) };
		int rc;

		if (!txn)
			mdb_check(mdb_txn_begin(env, NULL, 0, &txn),
				  "txn begin");
		if (gen) {
			MDB_val mv = { opt.vsize, vbuf };

			value_set(i, gen);
			rc = mdb_put(txn, dbi, &mk, &mv, 0);
		} else {
			rc = mdb_del(txn, dbi, &mk, NULL);
		}
		if (tdb_unlikely(rc != MDB_SUCCESS))
			mdb_check(rc, gen ? "put" : "del");
		if ((k + 1) % per_txn == 0 || k + 1 == n) {
			mdb_check(mdb_txn_commit(txn), "txn commit");
			txn = NULL;
		}
	}
	return n / (now() - t0);
}

/* One read transaction for the pass; copy: memcpy the value out. */
static double lmdb_get(uint64_t n, bool copy)
{
	MDB_txn *txn;
	double t0;

	warm(n);
	t0 = now();
	mdb_check(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), "txn begin");
	for (uint64_t k = 0; k < n; k++) {
		uint32_t i = perm[k];
		MDB_val mk = { KEY_LEN, (void *)key(i) }, mv;
		int rc = mdb_get(txn, dbi, &mk, &mv);

		if (tdb_unlikely(rc != MDB_SUCCESS))
			mdb_check(rc, "get");
		if (copy) {
			if (tdb_unlikely(mv.mv_size > opt.vsize))
				die("LMDB get: %zu value bytes for key %"
				    PRIu32 ", expected %zu", mv.mv_size, i,
				    opt.vsize);
			memcpy(rbuf, mv.mv_data, mv.mv_size);
			value_check("LMDB get", i, rbuf, mv.mv_size);
		} else {
			value_check("LMDB get", i, mv.mv_data, mv.mv_size);
		}
	}
	mdb_txn_abort(txn);
	return n / (now() - t0);
}

static void lmdb_verify(uint64_t n, unsigned int step)
{
	MDB_txn *txn;
	MDB_stat st;

	mdb_check(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), "txn begin");
	for (uint64_t k = 0; k < n; k += step) {
		uint32_t i = perm[k];
		MDB_val mk = { KEY_LEN, (void *)key(i) }, mv;
		int rc = mdb_get(txn, dbi, &mk, &mv);

		if (rc == MDB_NOTFOUND && !egen[i])
			continue;
		if (rc != MDB_SUCCESS || !egen[i])
			die("LMDB get of key %" PRIu32 ": %s, expected %s", i,
			    rc ? mdb_strerror(rc) : "found",
			    egen[i] ? "a value" : "no such key");
		value_check_gen("LMDB get", i, mv.mv_data, mv.mv_size);
	}
	mdb_check(mdb_stat(txn, dbi, &st), "stat");
	mdb_txn_abort(txn);
	if (st.ms_entries != erecords)
		die("LMDB has %zu records, expected %" PRIu64,
		    st.ms_entries, erecords);
}

static uint64_t lmdb_file_bytes(void)
{
	MDB_envinfo info;
	MDB_stat st;

	mdb_check(mdb_env_info(env, &info), "env info");
	mdb_check(mdb_env_stat(env, &st), "env stat");
	return ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
}

/* --- phases and results --------------------------------------------- */
/* Phases after the load; each has its own permutation per run. */
enum { P_LOAD, P_GET, P_LOOKUP, P_LOOKUP_ALL, P_LOOKUP_MANY, P_PUT_1,
       P_PUT_B, P_DEL_1, P_DEL_B, P_N };

/* What each engine measured: [phase][run]; LMDB has no P_LOOKUP_ALL or
 * P_LOOKUP_MANY (both are compared with its P_LOOKUP pass). */
static double tres[P_N][MAX_RUNS], lres[P_N][MAX_RUNS];
static FILE *csv;               /* --csv, opened before the runs */

static const struct row {
	const char *phase, *tdb, *lmdb;
	int t, l;               /* phases compared */
	double goal;
} rows[] = {
	{ "load", "tdbe_put",             "mdb_put, 1000/txn",
	  P_LOAD, P_LOAD, 0 },
	{ "get",  "tdbe_get (copy)",      "mdb_get + memcpy",
	  P_GET, P_GET, 5 },
	{ "get",  "tdbe_lookup, lock/op", "mdb_get, 1 read txn",
	  P_LOOKUP, P_LOOKUP, 5 },
	{ "get",  "tdbe_lookup, 1 lock",  "mdb_get, 1 read txn",
	  P_LOOKUP_ALL, P_LOOKUP, 5 },
	{ "get",  "tdbe_lookup_many, 16", "mdb_get, 1 read txn",
	  P_LOOKUP_MANY, P_LOOKUP, 5 },
	{ "put",  "tdbe_put",             "mdb_put, 1 txn/put",
	  P_PUT_1, P_PUT_1, 10 },
	{ "put",  "tdbe_put",             "mdb_put, 1000/txn",
	  P_PUT_B, P_PUT_B, 0 },
	{ "del",  "tdbe_del",             "mdb_del, 1 txn/del",
	  P_DEL_1, P_DEL_1, 0 },
	{ "del",  "tdbe_del",             "mdb_del, 1000/txn",
	  P_DEL_B, P_DEL_B, 0 },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static uint64_t phase_ops(int p)
{
	return p == P_LOAD ? opt.keys :
		p == P_PUT_1 || p == P_DEL_1 ? opt.txn_ops : opt.ops;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, unsigned int n)
{
	double s[MAX_RUNS];

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One engine's share of phase p: n operations over perm[0, n). */
static double phase_tdb(int p, uint64_t n, uint32_t gen)
{
	switch (p) {
	case P_GET:        return tdb_get(n);
	case P_LOOKUP:     return tdb_lookup(n, true);
	case P_LOOKUP_ALL: return tdb_lookup(n, false);
	case P_LOOKUP_MANY: return tdb_lookup_many(n);
	case P_DEL_1:
	case P_DEL_B:      return tdb_write(n, 0);
	default:           return tdb_write(n, gen);
	}
}

static double phase_lmdb(int p, uint64_t n, uint32_t gen)
{
	switch (p) {
	case P_GET:        return lmdb_get(n, true);
	case P_LOOKUP:     return lmdb_get(n, false);
	case P_LOOKUP_ALL:
	case P_LOOKUP_MANY: return 0;  /* compared with P_LOOKUP's pass */
	case P_PUT_1:      return lmdb_write(n, gen, 1);
	case P_DEL_1:      return lmdb_write(n, 0, 1);
	case P_DEL_B:      return lmdb_write(n, 0, BATCH);
	default:           return lmdb_write(n, gen, BATCH);
	}
}

static void verify_both(uint64_t n, unsigned int step)
{
	tdb_verify(n, step);
	lmdb_verify(n, step);
}

static uint32_t generation;     /* of the last put */
static struct tdbe_table_stat tstat_loaded;
static uint64_t lmdb_bytes_loaded;

static void load(void)
{
	uint64_t n = opt.keys;
	uint32_t gen = ++generation;

	make_perm(P_LOAD, 0);
	tres[P_LOAD][0] = tdb_write(n, gen);
	lres[P_LOAD][0] = lmdb_write(n, gen, BATCH);
	expect(n, gen);
	verify_both(n, 7);
	tdbe_table_stat(tbl, &tstat_loaded);
	lmdb_bytes_loaded = lmdb_file_bytes();
	fprintf(stderr, "  load of %" PRIu64 " keys: tdb %.2f s, LMDB %.2f s\n",
		n, n / tres[P_LOAD][0], n / lres[P_LOAD][0]);
}

static void run(unsigned int r)
{
	bool tdb_first = r % 2 == 0;
	double t0 = now();

	for (int p = P_GET; p < P_N; p++) {
		uint64_t n = phase_ops(p);
		bool del = p == P_DEL_1 || p == P_DEL_B;
		bool put = p == P_PUT_1 || p == P_PUT_B;
		uint32_t gen = put ? ++generation : 0;

		make_perm((unsigned int)p, r);
		if (tdb_first)
			tres[p][r] = phase_tdb(p, n, gen);
		lres[p][r] = phase_lmdb(p, n, gen);
		if (!tdb_first)
			tres[p][r] = phase_tdb(p, n, gen);
		if (!put && !del)
			continue;
		expect(n, gen);
		verify_both(n, 1);
		if (del) {
			/* Put the deleted keys back, unmeasured. */
			gen = ++generation;
			tdb_write(n, gen);
			lmdb_write(n, gen, BATCH);
			expect(n, gen);
			verify_both(n, 1);
		}
	}
	fprintf(stderr, "  run %u/%u (%s first): %.1f s\n", r + 1, opt.runs,
		tdb_first ? "tdb" : "LMDB", now() - t0);
	if (opt.verbose) {
		for (size_t i = 0; i < NROWS; i++)
			fprintf(stderr, "    %-5s %-21s %11.0f | %-20s %11.0f\n",
				rows[i].phase, rows[i].tdb,
				tres[rows[i].t][rows[i].t == P_LOAD ? 0 : r],
				rows[i].lmdb,
				lres[rows[i].l][rows[i].l == P_LOAD ? 0 : r]);
	}
}

/* --- machine info ------------------------------------------------------ */
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

static struct cpu_sample cpu_at_start;

static void print_header(void)
{
	char cpu[256];
	struct utsname u;
	cpu_set_t set;
	int lmaj, lmin, lpat;

	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set))
		CPU_SET(0, &set);
	mdb_version(&lmaj, &lmin, &lpat);

	printf("tdb-bench-engine: the tdb engine vs LMDB, one process, one thread\n");
	printf("  machine   %s, nproc %d, kernel %s, vm.nr_hugepages %ld\n",
	       cpu, CPU_COUNT(&set), u.release,
	       read_long("/proc/sys/vm/nr_hugepages"));
	{
		struct cpu_sample a, b;
		double steal, o;

		cpu_sample(&a);
		usleep(300000);
		cpu_sample(&b);
		o = cpu_others(&a, &b, &steal);
		if (o >= 0)
			printf("  others    other processes used %.0f%% of the "
			       "CPUs just before the start%s\n", o * 100,
			       o > 0.1 ? " - the figures will be noisy" : "");
	}
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
	printf("  keys      %" PRIu64 " keys of %u B (binary), values of %zu B,"
	       " the same keys and order for both\n", opt.keys, KEY_LEN,
	       opt.vsize);
	printf("  ops       load: all %" PRIu64 " keys, once; then per run and "
	       "phase %" PRIu64 " random keys,\n            %" PRIu64
	       " where LMDB commits every op; %u run%s\n", opt.keys, opt.ops,
	       opt.txn_ops, opt.runs, opt.runs == 1 ? "" : "s");
	printf("  LMDB      %d.%d.%d, MDB_NOSYNC%s, in %s\n", lmaj, lmin, lpat,
	       opt.writemap ? "|MDB_WRITEMAP" : "", envdir);
	fflush(stdout);
}

/* --csv: one row per engine and phase; param is LMDB's side of the pair. */
static void csv_row(const struct row *w, double t, double l)
{
	char op[64];

	snprintf(op, sizeof(op), "%s %s", w->phase, w->tdb);
	bench_csv_row(csv, "engine", "tdb", "LMDB", op, w->lmdb, t, "ops/s",
		      t / l);
	snprintf(op, sizeof(op), "%s %s", w->phase, w->lmdb);
	bench_csv_row(csv, "engine", "LMDB", NULL, op, w->lmdb, l, "ops/s",
		      -1);
}

static void print_results(double secs)
{
	const struct tdbe_table_stat *st = &tstat_loaded;
	struct cpu_sample end;
	double steal, o;

	printf("  tdb       page size %s; after the load %" PRIu32 " of max %"
	       PRIu32 " extents (%.0f MiB), %.0f MiB allocated\n",
	       st->page_size == (2u << 20) ? "2 MiB (hugetlb)" :
	       st->page_size == 4096 ? "4 KiB (no hugetlb)" : "unknown",
	       st->extents, st->max_extents, st->extents * 2.0,
	       st->bytes_allocated / 1048576.0);
	printf("  LMDB      file after the load: %.0f MiB\n\n",
	       lmdb_bytes_loaded / 1048576.0);

	printf("%-5s %8s  %-21s %11s   %-20s %11s  %8s  %s\n", "phase", "ops",
	       "tdb", "ops/s", "LMDB", "ops/s", "tdb/LMDB", "goal");
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *w = &rows[i];
		unsigned int runs = w->t == P_LOAD ? 1 : opt.runs;
		double t = median(tres[w->t], runs);
		double l = median(lres[w->l], runs);
		char goal[32] = "";

		if (w->goal > 0)
			snprintf(goal, sizeof(goal), ">= %.0fx %s", w->goal,
				 t / l >= w->goal ? "met" : "MISSED");
		printf("%-5s %8" PRIu64 "  %-21s %11.0f   %-20s %11.0f  %7.1fx  %s\n",
		       w->phase, phase_ops(w->t), w->tdb, t, w->lmdb, l, t / l,
		       goal);
		csv_row(w, t, l);
	}
	cpu_sample(&end);
	o = cpu_others(&cpu_at_start, &end, &steal);
	bench_csv_note(csv, "median of %u run(s), %" PRIu64 " keys; others "
		       "used %.0f%% of the CPUs, steal %.0f%%", opt.runs,
		       opt.keys, o * 100, steal * 100);
	printf("\nops/s: median of %u run%s (load: one pass); tdb/LMDB: ratio "
	       "of the medians.\nTotal %.1f s", opt.runs,
	       opt.runs == 1 ? "" : "s", secs);
	if (o >= 0)
		printf("; meanwhile other processes and kernel threads (the "
		       "LMDB file's writeback too)\nused %.0f%% of the CPUs, "
		       "the hypervisor stole %.0f%%%s", o * 100, steal * 100,
		       o > 0.1 || steal > 0.05 ? ": figures are noisy" : "");
	printf(".\n");
}

/* --- main --------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-engine [options]\n"
"The tdb engine against LMDB (MDB_NOSYNC) in one process: the same keys in\n"
"the same random order for load, get, put (replace) and delete.  Prints\n"
"each engine's median ops/s and their ratio.\n"
"\n"
"  -n, --keys N         keys in the store (default %u)\n"
"  -o, --ops W          operations per phase after the load (default %u;\n"
"                       0: all N)\n"
"  -t, --txn-ops W1     operations in the phases where LMDB commits every\n"
"                       operation (default %u; 0: all N)\n"
"  -q, --quick          %u keys, %u ops, %u txn-ops (unless given)\n"
"  -r, --runs R         runs of each phase, median reported (default %u)\n"
"  -s, --value-size B   value size, %u..%u bytes (default %u)\n"
"  -d, --dir DIR        where to make the LMDB directory (default $TMPDIR\n"
"                       or /tmp); it is removed at the end\n"
"  -x, --max-extents E  tdb table cap in 2 MiB extents (default: enough, at\n"
"                       least 1024)\n"
"  -w, --lmdb-writemap  also give LMDB MDB_WRITEMAP\n"
"  -v, --verbose        each run's figures and the engine's debug log on\n"
"                       stderr\n"
"      --csv FILE       also write the figures to FILE as CSV\n"
"                       (bench/common/csv.h; bench/summary/make-charts.sh)\n"
"  -h, --help           this text\n",
		DEF_KEYS, DEF_OPS, DEF_TXN_OPS, QUICK_KEYS, QUICK_OPS,
		QUICK_TXN_OPS, DEF_RUNS, VAL_MIN, TDBE_VALUE_MAX, DEF_VSIZE);
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
		fprintf(stderr, "tdb-bench-engine: bad %s '%s' (%" PRIu64
			"..%" PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "keys", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ "txn-ops", required_argument, NULL, 't' },
		{ "quick", no_argument, NULL, 'q' },
		{ "runs", required_argument, NULL, 'r' },
		{ "value-size", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "max-extents", required_argument, NULL, 'x' },
		{ "lmdb-writemap", no_argument, NULL, 'w' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "csv", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool quick = false, keys_set = false, ops_set = false, txn_set = false;
	struct tdbe_table_opts to = { 0 };
	struct tdbe_extack ext = { 0 };
	const char *base;
	double t0;
	bool csv_bad;
	int c, err = 0;

	while ((c = getopt_long(argc, argv, "n:o:t:qr:s:d:x:wvh", lo,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			opt.keys = parse_num(optarg, "key count", 1,
					     UINT32_MAX);
			keys_set = true;
			break;
		case 'o':
			opt.ops = parse_num(optarg, "op count", 0, UINT32_MAX);
			ops_set = true;
			break;
		case 't':
			opt.txn_ops = parse_num(optarg, "op count", 0,
						UINT32_MAX);
			txn_set = true;
			break;
		case 'q': quick = true; break;
		case 'r':
			opt.runs = parse_num(optarg, "run count", 1, MAX_RUNS);
			break;
		case 's':
			opt.vsize = parse_num(optarg, "value size", VAL_MIN,
					      TDBE_VALUE_MAX);
			break;
		case 'd': opt.dir = optarg; break;
		case 'x':
			opt.max_extents = parse_num(optarg, "extent cap", 1,
						    TDBE_EXTENTS_MAX);
			break;
		case 'w': opt.writemap = true; break;
		case 'v': opt.verbose = true; break;
		case 'C': opt.csv = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench-engine: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (quick) {
		if (!keys_set)
			opt.keys = QUICK_KEYS;
		if (!ops_set)
			opt.ops = QUICK_OPS;
		if (!txn_set)
			opt.txn_ops = QUICK_TXN_OPS;
	}
	if (!opt.ops || opt.ops > opt.keys)
		opt.ops = opt.keys;
	if (!opt.txn_ops || opt.txn_ops > opt.keys)
		opt.txn_ops = opt.keys;
	if (!opt.max_extents) {
		/* The records, as many again waiting for a grace period, the
		 * index: with room to spare. */
		uint64_t need = opt.keys * (KEY_LEN + opt.vsize + 64) * 3;
		uint64_t n = (need + TDBP_EXTENT_SIZE - 1) / TDBP_EXTENT_SIZE;

		opt.max_extents = n < 1024 ? 1024 : n > TDBE_EXTENTS_MAX ?
			TDBE_EXTENTS_MAX : (unsigned int)n;
	}

	/* The engine's log (which pages back the table, failures) on
	 * stderr. */
	tdbp_set_log(tdbp_log_stderr,
		     (void *)(long)(opt.verbose ? TDBP_LOG_DEBUG :
				    TDBP_LOG_INFO));

	base = opt.dir ? opt.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(envdir, sizeof(envdir),
			     "%s/tdb-bench-engine.XXXXXX", base) >= sizeof(envdir))
		die("--dir too long");
	if (!mkdtemp(envdir)) {
		int e = errno;

		envdir[0] = 0;
		die("cannot make a directory under %s: %s", base, strerror(e));
	}
	snprintf(envfile[0], sizeof(envfile[0]), "%s/data.mdb", envdir);
	snprintf(envfile[1], sizeof(envfile[1]), "%s/lock.mdb", envdir);

	keys = malloc(opt.keys * KEY_LEN);
	egen = calloc(opt.keys, sizeof(*egen));
	perm = malloc(opt.keys * sizeof(*perm));
	vbuf = malloc(opt.vsize);
	rbuf = malloc(opt.vsize);
	if (!keys || !egen || !perm || !vbuf || !rbuf)
		die("out of memory for %" PRIu64 " keys", opt.keys);
	make_keys();

	print_header();
	if (opt.csv && !(csv = bench_csv_open(opt.csv, argc, argv)))
		die("--csv %s", opt.csv);
	eng = tdbe_engine_new(&err);
	if (!eng)
		tdb_fail(err ? err : -ENOMEM, "engine new", NULL);
	to.max_extents = opt.max_extents;
	if ((err = tdbe_table_create(eng, "bench", &to, &ext)) < 0)
		tdb_fail(err, "table create", &ext);
	if ((err = tdbe_table_open(eng, "bench", &tbl, &ext)) < 0)
		tdb_fail(err, "table open", &ext);
	lmdb_open_env();

	cpu_sample(&cpu_at_start);
	t0 = now();
	load();
	for (unsigned int r = 0; r < opt.runs; r++)
		run(r);
	print_results(now() - t0);
	csv_bad = bench_csv_close(csv, opt.csv) != 0;

	mdb_env_close(env);
	remove_envdir();
	tdbe_table_close(tbl);
	tdbe_engine_free(eng);
	free(keys);
	free(egen);
	free(perm);
	free(vbuf);
	free(rbuf);
	return csv_bad ? 1 : 0;
}
