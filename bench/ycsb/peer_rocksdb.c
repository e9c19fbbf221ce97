// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_rocksdb.c - RocksDB as a tdb-bench-ycsb peer (ycsb_rocksdb),
 * through its C API (rocksdb/c.h, Debian 12's librocksdb-dev 7.8.3).
 * Built with YCSB_HAVE_ROCKSDB (meson, when pkg-config finds rocksdb);
 * without it, a stub whose start() says the peer is not built in
 * (skipped).
 *
 * One DB in <dir>/rocksdb.  RocksDB lets one process open a DB (its LOCK
 * file), so this peer is threads_only: the driver runs its client
 * "processes" as threads of one process, as YCSB runs its threads
 * against one DB object.  start() creates the DB and closes it again (so
 * a driver that forks after start() hands no RocksDB threads across the
 * fork); the first open() of a process opens the DB, each open() gets a
 * handle of its own (options, a write batch, buffers) on that shared DB,
 * and the last close() closes it.  That shared DB, its reference count
 * and the lock over both are this file's only state (struct shared).
 *
 * Settings (describe() prints them): RocksDB's defaults (level
 * compaction, 64 MiB memtables, block-based tables) plus the usual
 * tuning: a block cache (LRU) that holds the data set, full bloom
 * filters of 10 bits a key, background jobs and threads for every CPU
 * (increase_parallelism), no compression (tdb, LMDB and Redis keep the
 * bytes as given, and with the data set in the cache compressing only
 * spends CPU), the WAL on and never synced (the durability class of
 * tdb's --sync none and LMDB's MDB_NOSYNC: a crash of the process loses
 * nothing, one of the machine the last writes).
 *
 * Operations:
 *   insert   Put; while loading (c->loading), Puts gathered in a
 *            WriteBatch written every LOAD_BATCH records and by flush()
 *   read     Get (pinned, then copied out)
 *   update   Merge of the field (offset, bytes) through this file's merge
 *            operator: one write, no read, atomic (RocksDB applies the
 *            field when a read or a compaction meets it, or the write
 *            itself once a key has MERGES_MAX operands in the memtable:
 *            max_successive_merges, else a hot key's reads apply them
 *            all); a whole value (field -1) is a Put
 *   scan     an iterator: Seek(key), then Next until count records
 *   rmw      Get, then the update's Merge: each atomic, the pair not (as
 *            YCSB's RocksDB binding's read then update)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ycsb.h"

#ifdef YCSB_HAVE_ROCKSDB
#include <dlfcn.h>
#include <limits.h>
#include <rocksdb/c.h>

#define BLOOM_BITS      10
#define MERGES_MAX      8       /* max_successive_merges */
#define LOAD_BATCH      1000u   /* Puts a WriteBatch while loading */
#define CACHE_MIN       (64ull << 20)
#define REC_OVERHEAD    64u     /* key, block and index bytes a record */

/* A merge operand: the field's offset in the value (OFF_LEN bytes, host
 * order), then its bytes. */
#define OFF_LEN sizeof(uint32_t)

static struct {
	pthread_mutex_t lock;
	rocksdb_t *db;
	unsigned int refs;
	char path[4096];
} shared = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct handle {
	rocksdb_t *db;
	rocksdb_readoptions_t *ro;
	rocksdb_writeoptions_t *wo;
	rocksdb_writebatch_t *wb;       /* the load's batch */
	unsigned int inbatch;
	bool load;
	size_t vlen, flen;              /* a value's and a field's bytes */
	char *op;                       /* a merge operand; a value read */
	volatile unsigned char sink;    /* what a scan read */
};

/* Sets msg from RocksDB's error string (freed); -EIO. */
static int fail(char *msg, const char *what, char *err)
{
	snprintf(msg, YCSB_MSG, "RocksDB: %.200s: %.280s", what, err);
	rocksdb_free(err);
	return -EIO;
}

/* --- the merge operator: fields written over the value ------------------ */
static char *merge_full(void *state, const char *key, size_t klen,
			const char *old, size_t oldlen,
			const char *const *ops, const size_t *oplens, int nops,
			unsigned char *success, size_t *newlen)
{
	size_t len = old ? oldlen : 0;
	char *v;

	(void)state, (void)key, (void)klen;
	for (int i = 0; i < nops; i++) {
		uint32_t off;

		if (oplens[i] < OFF_LEN)
			goto bad;
		memcpy(&off, ops[i], OFF_LEN);
		if (off + oplens[i] - OFF_LEN > len)
			len = off + oplens[i] - OFF_LEN;
	}
	v = calloc(1, len ? len : 1);
	if (!v)
		goto bad;
	if (old)
		memcpy(v, old, oldlen);
	for (int i = 0; i < nops; i++) {
		uint32_t off;

		memcpy(&off, ops[i], OFF_LEN);
		memcpy(v + off, ops[i] + OFF_LEN, oplens[i] - OFF_LEN);
	}
	*newlen = len;
	*success = 1;
	return v;
bad:   /* as merge_partial(): a result, empty */
	*success = 0;
	*newlen = 0;
	return malloc(1);
}

/*
 * Operands are not combined ahead of a value: RocksDB keeps them.  The C
 * API (7.8) copies the result whatever *success says and frees it with
 * merge_free(): an empty one, never NULL with no length.
 */
static char *merge_partial(void *state, const char *key, size_t klen,
			   const char *const *ops, const size_t *oplens,
			   int nops, unsigned char *success, size_t *newlen)
{
	(void)state, (void)key, (void)klen, (void)ops, (void)oplens;
	(void)nops;
	*success = 0;
	*newlen = 0;
	return malloc(1);
}

static void merge_free(void *state, const char *v, size_t len)
{
	(void)state, (void)len;
	free((void *)v);
}

static void merge_destroy(void *state)
{
	(void)state;
}

static const char *merge_name(void *state)
{
	(void)state;
	return "tdb-bench-ycsb.field";
}

/* --- the DB ---------------------------------------------------------------- */
static size_t cache_bytes(const struct ycsb_conf *c)
{
	unsigned long long b = c->recordcount *
		((unsigned long long)ycsb_vlen(c) + YCSB_KEY_MAX +
		 REC_OVERHEAD);

	return (size_t)(b + b / 4 > CACHE_MIN ? b + b / 4 : CACHE_MIN);
}

/* Options as the header says; *cache to destroy after the open. */
static rocksdb_options_t *options(const struct ycsb_conf *c,
				  rocksdb_cache_t **cache)
{
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_block_based_table_options_t *t =
		rocksdb_block_based_options_create();
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	*cache = rocksdb_cache_create_lru(cache_bytes(c));
	rocksdb_block_based_options_set_block_cache(t, *cache);
	/* The table options own the policy from here. */
	rocksdb_block_based_options_set_filter_policy(t,
		rocksdb_filterpolicy_create_bloom_full(BLOOM_BITS));
	rocksdb_options_set_block_based_table_factory(o, t);
	rocksdb_block_based_options_destroy(t);
	rocksdb_options_increase_parallelism(o, cpus > 1 ? (int)cpus : 1);
	rocksdb_options_set_compression(o, rocksdb_no_compression);
	/* A hot key's operands folded into a value every MERGES_MAX in
	 * the memtable, not left for each read to apply (100 000 on one
	 * key: 50 reads of it a second). */
	rocksdb_options_set_max_successive_merges(o, MERGES_MAX);
	/* The options own the operator from here. */
	rocksdb_options_set_merge_operator(o, rocksdb_mergeoperator_create(
		NULL, merge_destroy, merge_full, merge_partial, merge_free,
		merge_name));
	return o;
}

static rocksdb_t *db_open(const struct ycsb_conf *c, bool create,
			  char *msg)
{
	rocksdb_cache_t *cache;
	rocksdb_options_t *o = options(c, &cache);
	char *err = NULL;
	rocksdb_t *db;

	rocksdb_options_set_create_if_missing(o, create);
	rocksdb_options_set_error_if_exists(o, create);
	db = rocksdb_open(o, shared.path, &err);
	rocksdb_options_destroy(o);
	rocksdb_cache_destroy(cache);
	if (!db) {
		char what[4200];

		snprintf(what, sizeof(what), "%s %s", create ? "create" :
			 "open", shared.path);
		fail(msg, what, err);
	}
	return db;
}

/* The library's version, from the file the dynamic linker loaded it from
 * (librocksdb.so.7.8.3): the C API has no call for it, version.h is C++,
 * and describe() comes before start(). */
static void lib_version(char *buf, size_t len)
{
	char path[4096];
	const char *v;
	Dl_info info;

	snprintf(buf, len, "?");
	if (!dladdr((void *)rocksdb_open, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, path))
		return;
	v = strstr(path, ".so.");
	if (v)
		snprintf(buf, len, "%s", v + 4);
}

static int rdb_start(const struct ycsb_conf *c, char *msg)
{
	rocksdb_t *db;

	if ((size_t)snprintf(shared.path, sizeof(shared.path), "%s/rocksdb",
			     c->dir) >= sizeof(shared.path)) {
		snprintf(msg, YCSB_MSG, "RocksDB: directory %s is too long",
			 c->dir);
		return -ENAMETOOLONG;
	}
	db = db_open(c, true, msg);
	if (!db)
		return -EIO;
	rocksdb_close(db);
	return 0;
}

static void rdb_stop(void)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *err = NULL;

	pthread_mutex_lock(&shared.lock);
	if (shared.db)
		rocksdb_close(shared.db);
	shared.db = NULL;
	shared.refs = 0;
	pthread_mutex_unlock(&shared.lock);
	if (shared.path[0])
		rocksdb_destroy_db(o, shared.path, &err);
	if (err) {
		fprintf(stderr, "tdb-bench-ycsb: RocksDB: cannot remove %s: "
			"%s\n", shared.path, err);
		rocksdb_free(err);
	}
	rocksdb_options_destroy(o);
	shared.path[0] = 0;
}

static pid_t rdb_server(void)
{
	return 0;
}

static void rdb_describe(const struct ycsb_conf *c, char *buf, size_t len)
{
	char version[64];

	lib_version(version, sizeof(version));
	snprintf(buf, len, "RocksDB %s C API, threads of one process on "
		 "one DB: level compaction, LRU block cache %zu MiB, full "
		 "bloom filter %d bits/key, no compression, WAL on, unsynced "
		 "(as tdb --sync none, LMDB NOSYNC); update = Merge of the "
		 "field (atomic; max_successive_merges %d), rmw = Get then "
		 "Merge (not atomic), scan = iterator Seek + Next, load in "
		 "WriteBatches of %u", version, cache_bytes(c) >> 20,
		 BLOOM_BITS, MERGES_MAX, LOAD_BATCH);
}

/* --- a handle ----------------------------------------------------------------- */
static void rdb_close(void *hv);

static rocksdb_t *db_get(const struct ycsb_conf *c, char *msg)
{
	rocksdb_t *db;

	pthread_mutex_lock(&shared.lock);
	if (!shared.db) {
		if (!shared.path[0])
			snprintf(shared.path, sizeof(shared.path),
				 "%s/rocksdb", c->dir);
		shared.db = db_open(c, false, msg);
	}
	if (shared.db)
		shared.refs++;
	db = shared.db;
	pthread_mutex_unlock(&shared.lock);
	return db;
}

static void db_put(void)
{
	pthread_mutex_lock(&shared.lock);
	if (shared.refs && !--shared.refs) {
		rocksdb_close(shared.db);
		shared.db = NULL;
	}
	pthread_mutex_unlock(&shared.lock);
}

static int rdb_open(const struct ycsb_conf *c, unsigned int proc, void **hp,
		    char *msg)
{
	struct handle *h = calloc(1, sizeof(*h));

	(void)proc;
	if (!h) {
		snprintf(msg, YCSB_MSG, "RocksDB: out of memory for a handle");
		return -ENOMEM;
	}
	h->vlen = ycsb_vlen(c);
	h->flen = c->fieldlength;
	h->load = c->loading;
	h->ro = rocksdb_readoptions_create();
	h->wo = rocksdb_writeoptions_create();
	h->wb = rocksdb_writebatch_create();
	h->op = malloc(OFF_LEN + h->vlen);
	if (!h->ro || !h->wo || !h->wb || !h->op) {
		snprintf(msg, YCSB_MSG, "RocksDB: out of memory for a handle");
		rdb_close(h);
		return -ENOMEM;
	}
	/* The WAL on, not synced: RocksDB's default, said for the reader. */
	rocksdb_writeoptions_set_sync(h->wo, 0);
	rocksdb_writeoptions_disable_WAL(h->wo, 0);
	h->db = db_get(c, msg);
	if (!h->db) {
		rdb_close(h);
		return -EIO;
	}
	*hp = h;
	return 0;
}

/* Writes the load's batch. */
static int rdb_flush(void *hv, char *msg)
{
	struct handle *h = hv;
	char *err = NULL;

	if (!h->inbatch)
		return 0;
	rocksdb_write(h->db, h->wo, h->wb, &err);
	rocksdb_writebatch_clear(h->wb);
	h->inbatch = 0;
	return err ? fail(msg, "write of the load's batch", err) : 0;
}

static int rdb_insert(void *hv, const char *key, size_t klen,
		      const void *val, size_t vlen, char *msg)
{
	struct handle *h = hv;
	char *err = NULL;

	if (h->load) {
		rocksdb_writebatch_put(h->wb, key, klen, val, vlen);
		if (++h->inbatch < LOAD_BATCH)
			return 0;
		return rdb_flush(h, msg);
	}
	rocksdb_put(h->db, h->wo, key, klen, val, vlen, &err);
	return err ? fail(msg, "put", err) : 0;
}

static int rdb_read(void *hv, const char *key, size_t klen, void *out,
		    size_t vlen, char *msg)
{
	struct handle *h = hv;
	char *err = NULL;
	rocksdb_pinnableslice_t *v = rocksdb_get_pinned(h->db, h->ro, key,
							klen, &err);
	const char *p;
	size_t len;

	if (err)
		return fail(msg, "get", err);
	if (!v) {
		snprintf(msg, YCSB_MSG, "RocksDB: no key %.*s", (int)klen,
			 key);
		return -ENOENT;
	}
	p = rocksdb_pinnableslice_value(v, &len);
	if (len != vlen) {
		snprintf(msg, YCSB_MSG, "RocksDB: key %.*s has %zu bytes, "
			 "not %zu", (int)klen, key, len, vlen);
		rocksdb_pinnableslice_destroy(v);
		return -EIO;
	}
	memcpy(out, p, len);
	rocksdb_pinnableslice_destroy(v);
	return 0;
}

static int rdb_update(void *hv, const char *key, size_t klen, int field,
		      const void *bytes, size_t len, char *msg)
{
	struct handle *h = hv;
	char *err = NULL;
	uint32_t off;

	if (field < 0) {
		rocksdb_put(h->db, h->wo, key, klen, bytes, len, &err);
		return err ? fail(msg, "put of a whole value", err) : 0;
	}
	off = (uint32_t)((size_t)field * h->flen);
	if (len > h->flen || off + len > h->vlen) {
		snprintf(msg, YCSB_MSG, "RocksDB: field %d of %zu bytes is "
			 "past the value's %zu", field, len, h->vlen);
		return -EINVAL;
	}
	memcpy(h->op, &off, OFF_LEN);
	memcpy(h->op + OFF_LEN, bytes, len);
	rocksdb_merge(h->db, h->wo, key, klen, h->op, OFF_LEN + len, &err);
	return err ? fail(msg, "merge of a field", err) : 0;
}

static int rdb_scan(void *hv, const char *key, size_t klen,
		    unsigned int count, unsigned int *got, char *msg)
{
	struct handle *h = hv;
	rocksdb_iterator_t *it = rocksdb_create_iterator(h->db, h->ro);
	char *err = NULL;
	unsigned int n = 0;

	for (rocksdb_iter_seek(it, key, klen);
	     n < count && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t len;
		const unsigned char *v = (const void *)rocksdb_iter_value(it,
									  &len);

		if (len)
			h->sink ^= v[0] ^ v[len - 1];
		n++;
	}
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	*got = n;
	return err ? fail(msg, "scan", err) : 0;
}

static int rdb_rmw(void *hv, const char *key, size_t klen, int field,
		   const void *bytes, size_t len, char *msg)
{
	struct handle *h = hv;
	int err = rdb_read(h, key, klen, h->op + OFF_LEN, h->vlen, msg);

	return err ? err : rdb_update(h, key, klen, field, bytes, len, msg);
}

/* Any load batch left is written (flush() should have been called). */
static void rdb_close(void *hv)
{
	struct handle *h = hv;
	char msg[YCSB_MSG];

	if (h->db) {
		if (rdb_flush(h, msg))
			fprintf(stderr, "tdb-bench-ycsb: %s\n", msg);
		db_put();
	}
	if (h->wb)
		rocksdb_writebatch_destroy(h->wb);
	if (h->wo)
		rocksdb_writeoptions_destroy(h->wo);
	if (h->ro)
		rocksdb_readoptions_destroy(h->ro);
	free(h->op);
	free(h);
}

const struct ycsb_peer ycsb_rocksdb = {
	.name = "RocksDB", .threads_only = true,
	.start = rdb_start, .stop = rdb_stop, .server = rdb_server,
	.describe = rdb_describe, .open = rdb_open, .insert = rdb_insert,
	.read = rdb_read, .update = rdb_update, .scan = rdb_scan,
	.rmw = rdb_rmw, .flush = rdb_flush, .close = rdb_close,
};

#else /* !YCSB_HAVE_ROCKSDB: built without librocksdb-dev */

static int rdb_missing(const struct ycsb_conf *c, char *msg)
{
	(void)c;
	snprintf(msg, YCSB_MSG, "RocksDB: built without librocksdb-dev "
		 "(scripts/install-deps.sh bench, then reconfigure)");
	return 1;
}

const struct ycsb_peer ycsb_rocksdb = {
	.name = "RocksDB", .threads_only = true, .start = rdb_missing,
};
#endif
