// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_memrec.c - tdb-bench-memrec: memory per record, tdb's engine
 * table against LMDB's data.mdb, and where tdb's bytes go.
 *
 * Loads N records into one engine table (tdbe_put) and into LMDB (1000
 * puts per write transaction, MDB_NOSYNC, a fresh directory under
 * $TMPDIR or /tmp, removed at exit), in the same order, then prints per
 * record: the raw key and value, the record header, the slack of the
 * allocator's size classes, the hash trie (entries, bucket room,
 * interior nodes), slab headers, tails and free objects, free pages and
 * extent headers, and LMDB's data.mdb in use ((me_last_pgno + 1) pages)
 * with its branch, leaf and overflow pages.
 *
 * Keys (--keys):
 *   tdb    "key%013u" of i: tdb-bench's 16-byte keys, in order i = 0..N-1
 *   ycsb   "user" + the decimal FNV-1a hash of i, as YCSB's CoreWorkload
 *          makes them (orderedinserts=false, zeropadding=1): about 23
 *          bytes, in hash (random) order
 * Values: --value bytes (100; YCSB's record is 10 fields x 100 B = 1000).
 *
 *   tdb-bench-memrec [-n RECORDS] [-v VALUE_BYTES] [-k tdb|ycsb]
 *
 * Every put is checked; a failure stops the run with what failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lmdb.h>

#include "core.h"
#include "internal.h"
#include "../../src/platform/user.h"

#define BATCH 1000u

static struct {
	uint64_t n;
	size_t vsize;
	int ycsb;
} opt = { .n = 1000000, .vsize = 100 };

static char envdir[4096];
static char envfile[2][4200];

static void cleanup(void)
{
	if (!envdir[0])
		return;
	unlink(envfile[0]);
	unlink(envfile[1]);
	rmdir(envdir);
	envdir[0] = 0;
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tdb-bench-memrec: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup();
	exit(1);
}

/* YCSB's Utils.fnvhash64 (FNV-1a over the 8 bytes of i, made positive). */
static uint64_t fnvhash64(uint64_t v)
{
	int64_t h = (int64_t)0xcbf29ce484222325ull;

	for (int i = 0; i < 8; i++) {
		h ^= (int64_t)(v & 0xff);
		v >>= 8;
		h = (int64_t)((uint64_t)h * 1099511628211ull);
	}
	return h < 0 ? (uint64_t)-h : (uint64_t)h;
}

static size_t make_key(uint64_t i, char *buf, size_t cap)
{
	int n = opt.ycsb ? snprintf(buf, cap, "user%" PRIu64, fnvhash64(i))
			 : snprintf(buf, cap, "key%013" PRIu64, i);

	return (size_t)n;
}

/* Bytes of the records as the allocator holds them (their classes). */
static uint64_t class_bytes(size_t klen)
{
	size_t r = tdb_rec_size(klen, opt.vsize, 0);

	return tdba_class_size(tdba_size_class(r));
}

struct load {
	uint64_t raw, hdr, cls;    /* sums over the records */
};

static void load_tdb(struct tdbe_table *t, const unsigned char *val,
		     struct load *ld)
{
	struct tdbe_extack ext = { 0 };
	char k[64];

	for (uint64_t i = 0; i < opt.n; i++) {
		size_t kl = make_key(i, k, sizeof(k));
		int err = tdbe_put(t, k, kl, val, opt.vsize, 0, &ext);

		if (err)
			die("tdb put of record %" PRIu64 ": %s (%s)", i,
			    strerror(-err), ext.msg ? ext.msg : "");
		ld->raw += kl + opt.vsize;
		ld->hdr += sizeof(struct tdb_rec);
		ld->cls += class_bytes(kl);
	}
}

static void mdb_check(int rc, const char *what)
{
	if (rc != MDB_SUCCESS)
		die("LMDB %s: %s", what, mdb_strerror(rc));
}

static void load_lmdb(MDB_env *env, MDB_dbi dbi, const unsigned char *val)
{
	MDB_txn *txn = NULL;
	char k[64];

	for (uint64_t i = 0; i < opt.n; i++) {
		MDB_val mk, mv = { opt.vsize, (void *)val };

		if (!txn)
			mdb_check(mdb_txn_begin(env, NULL, 0, &txn), "begin");
		mk.mv_size = make_key(i, k, sizeof(k));
		mk.mv_data = k;
		mdb_check(mdb_put(txn, dbi, &mk, &mv, 0), "put");
		if ((i + 1) % BATCH == 0 || i + 1 == opt.n) {
			mdb_check(mdb_txn_commit(txn), "commit");
			txn = NULL;
		}
	}
}

static MDB_env *lmdb_open(MDB_dbi *dbi)
{
	size_t map = (size_t)1 << 30;
	const char *base = getenv("TMPDIR");
	MDB_env *env;
	MDB_txn *txn;

	while (map < 4 * opt.n * (opt.vsize + 64))
		map <<= 1;
	if (!base || !*base)
		base = "/tmp";
	snprintf(envdir, sizeof(envdir), "%s/tdb-bench-memrec.XXXXXX", base);
	if (!mkdtemp(envdir)) {
		int e = errno;

		envdir[0] = 0;
		die("cannot make a directory under %s: %s", base, strerror(e));
	}
	snprintf(envfile[0], sizeof(envfile[0]), "%s/data.mdb", envdir);
	snprintf(envfile[1], sizeof(envfile[1]), "%s/lock.mdb", envdir);
	mdb_check(mdb_env_create(&env), "env create");
	mdb_check(mdb_env_set_mapsize(env, map), "set mapsize");
	mdb_check(mdb_env_open(env, envdir, MDB_NOSYNC, 0600), "env open");
	mdb_check(mdb_txn_begin(env, NULL, 0, &txn), "txn begin");
	mdb_check(mdb_dbi_open(txn, NULL, 0, dbi), "dbi open");
	mdb_check(mdb_txn_commit(txn), "txn commit");
	return env;
}

static void row(const char *what, double bytes, double raw, double lmdb)
{
	printf("  %-44s %9.1f %8.1f %7.3f %7.3f\n", what, bytes / 1048576.0,
	       bytes / (double)opt.n, bytes / raw, bytes / lmdb);
}

static void report(const struct tdbe_table_stat *st,
		   const struct tdbe_alloc_stat *as, const struct load *ld,
		   MDB_env *env)
{
	MDB_envinfo info;
	MDB_stat ms;
	double raw = (double)ld->raw, lmdb, index, ent, bkt, pages, ovf;
	double backed = (double)as->pages_backed * TDB_PAGE;

	mdb_check(mdb_env_info(env, &info), "env info");
	mdb_check(mdb_env_stat(env, &ms), "env stat");
	lmdb = (double)(info.me_last_pgno + 1) * ms.ms_psize;
	index = (double)st->bytes_allocated - (double)ld->cls;
	/* the index (layout.h "TDBI"): bucket pages (index_nodes) of
	 * TDBI_PAGE_BYTES, overflow buckets (index_buckets) of 64 B, and
	 * the directory, the rest */
	ent = 8.0 * (double)st->records;
	pages = (double)TDBI_PAGE_BYTES * (double)st->index_nodes;
	ovf = 64.0 * (double)st->index_buckets;
	bkt = pages + ovf - ent;

	printf("%" PRIu64 " records, keys %s, values %zu B; engine %s\n",
	       st->records, opt.ycsb ? "ycsb (user<fnv64>)" : "tdb (key%013u)",
	       opt.vsize, "tdbe_put");
	printf("  %-44s %9s %8s %7s %7s\n", "", "MiB", "B/rec", "x raw",
	       "x LMDB");
	row("raw keys + values", raw, raw, lmdb);
	row("record headers (struct tdb_rec)", (double)ld->hdr, raw, lmdb);
	row("size-class slack of records",
	    (double)(ld->cls - ld->raw - ld->hdr), raw, lmdb);
	row("index: entries (8 B each)", ent, raw, lmdb);
	row("index: bucket room unused + next links", bkt, raw, lmdb);
	row("index: directory (the rest)", index - ent - bkt, raw, lmdb);
	row("= bytes_allocated", (double)st->bytes_allocated, raw, lmdb);
	row("slab headers (64 B a slab)", (double)as->slab_headers, raw, lmdb);
	row("slab tails", (double)as->slab_tails, raw, lmdb);
	row("free objects in slabs", (double)as->slab_free, raw, lmdb);
	row("free pages in backed extents",
	    (double)as->pages_free * TDB_PAGE, raw, lmdb);
	row("extent headers (page 0 of each)",
	    (double)as->pages_header * TDB_PAGE, raw, lmdb);
	row("= extents backed", backed, raw, lmdb);
	row("LMDB data.mdb in use", lmdb, raw, lmdb);
	printf("  LMDB: depth %u, %zu branch, %zu leaf, %zu overflow pages "
	       "of %u B\n", ms.ms_depth, ms.ms_branch_pages,
	       ms.ms_leaf_pages, ms.ms_overflow_pages, ms.ms_psize);
	printf("  tdb: %" PRIu64 " extents, %" PRIu64 " slabs (%" PRIu64
	       " pages, %" PRIu64 " partial), %" PRIu64 " runs, %" PRIu64
	       " overflow buckets, %" PRIu64 " bucket pages; allocator "
	       "slab_used %.1f MiB\n",
	       as->pages_backed / TDB_EXT_PAGES, as->slabs, as->slab_pages,
	       as->partial_slabs, as->runs, st->index_buckets,
	       st->index_nodes, (double)as->slab_used / 1048576.0);
}

static void usage(void)
{
	fputs("usage: tdb-bench-memrec [-n RECORDS] [-v VALUE_BYTES] "
	      "[-k tdb|ycsb]\n", stderr);
	exit(2);
}

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "n:v:k:h")) != -1) {
		char *end;

		switch (c) {
		case 'n':
			opt.n = strtoull(optarg, &end, 10);
			if (*end || !opt.n || opt.n > 100000000)
				die("-n %s: records must be 1..100000000",
				    optarg);
			break;
		case 'v':
			opt.vsize = strtoull(optarg, &end, 10);
			if (*end || opt.vsize > TDBA_SMALL_MAX)
				die("-v %s: value bytes must be 0..%u", optarg,
				    TDBA_SMALL_MAX);
			break;
		case 'k':
			if (strcmp(optarg, "tdb") && strcmp(optarg, "ycsb"))
				die("-k %s: keys must be tdb or ycsb", optarg);
			opt.ycsb = !strcmp(optarg, "ycsb");
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	struct tdbe_table_opts to = { 0 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	struct tdbe_alloc_stat as;
	struct tdbe_engine *eng;
	struct tdbe_table *t;
	struct load ld = { 0 };
	unsigned char *val;
	MDB_env *env;
	MDB_dbi dbi;
	int err = 0;

	parse(argc, argv);
	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_INFO);
	val = malloc(opt.vsize + 1);
	if (!val)
		die("out of memory for a value of %zu B", opt.vsize);
	for (size_t i = 0; i < opt.vsize; i++)
		val[i] = (unsigned char)(i * 131 + 7);
	eng = tdbe_engine_new(&err);
	if (!eng)
		die("engine: %s", strerror(err ? -err : ENOMEM));
	to.max_extents = (unsigned int)((opt.n * (opt.vsize + 192) * 2 >> 21) +
					1024);
	if (to.max_extents > TDBE_EXTENTS_MAX)
		to.max_extents = TDBE_EXTENTS_MAX;
	if ((err = tdbe_table_create(eng, "memrec", &to, &ext)) < 0 ||
	    (err = tdbe_table_open(eng, "memrec", &t, &ext)) < 0)
		die("table: %s (%s)", strerror(-err), ext.msg ? ext.msg : "");
	load_tdb(t, val, &ld);
	tdbe_table_stat(t, &st);
	tdbe_table_alloc_stat(t, &as);
	env = lmdb_open(&dbi);
	load_lmdb(env, dbi, val);
	report(&st, &as, &ld, env);
	mdb_env_close(env);
	cleanup();
	tdbe_table_close(t);
	tdbe_engine_free(eng);
	free(val);
	return 0;
}
