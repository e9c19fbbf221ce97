// SPDX-License-Identifier: GPL-2.0-only
/*
 * ckpt.c - the checkpoint store (ckpt.h): the LMDB environment in
 * <data-dir>/checkpoint, its layout (table databases, "/long/<table>",
 * "/ver/<table>", "/lver/<table>", "/meta"), the on-disk encodings, and
 * the mapping of LMDB's errors to negative errnos and messages.
 *
 * Invariants:
 *  - "/meta" is opened once, in tdbd_ckpt_open's committed write txn, so
 *    its handle is valid for the life of the env; it is never dropped.
 *    Every other handle (table and "/long/" databases) is opened by name
 *    inside the transaction that uses it and is never kept past it (see
 *    "Database handles" below).
 *  - ck->lock is held from tdbd_ckpt_begin to commit/abort and for all of
 *    a tdbd_ckpt_load_table: at most one transaction of the process opens
 *    table handles at a time.  read_meta uses only "/meta" and does not
 *    take it.
 *  - A key of klen <= ck->maxkey lives in the table's database verbatim;
 *    a longer one lives only in "/long/<table>".  The two never hold the
 *    same key, so a record has exactly one place.  Its version lives
 *    beside it under the same LMDB key, in "/ver/<table>" or
 *    "/lver/<table>", and so is its deadline if it has one (the same
 *    value, 16 bytes instead of 8): every put, append and delete
 *    changes both in the
 *    same transaction, so the version databases hold exactly the keys
 *    of theirs (load checks it, walking both in order).  A table without
 *    "/ver/" was checkpointed before versions: loaded with version 0,
 *    written only after a reset (tx_dbis refuses it otherwise).
 *  - A write transaction that saw one failure is spoiled: every later
 *    call returns that failure and commit aborts.  A checkpoint therefore
 *    commits only if every change given to it was applied.
 *  - Nothing is printed, nothing is global; the only outside input is the
 *    TDBD_CKPT_MAPSIZE environment variable read by tdbd_ckpt_open.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ckpt.h"

/* 4: a schema record has its table's flags (TDB_TABLE_F_*: ordered
 * tables, issue 28); 3: a version entry may carry its record's
 * deadline, a schema record its table's default TTL, bounds and
 * eviction policy (issue 27); 2: tables may have versions ("/ver/",
 * "/lver/"); 1 (before issue 24): its tables have none.  All are still
 * read (3 is 4 without flags: every table a hash table; 2 is 3 without
 * deadlines and TTLs).  A commit writes 4, so a tdbd from before
 * ordered tables refuses the store rather than make them hash tables. */
#define CKPT_FORMAT 4u
#define CKPT_FORMAT_OLD 1u
#define CKPT_MAXDBS 16384u              /* 4 per table (4000) and /meta */
#define CKPT_MAPSIZE (1ULL << 40)       /* 1 TiB of address space */
#define NAME_MAX_LEN 64u                /* table name, bytes, no NUL */
#define LONG_PREFIX "/long/"
/* short key -> u64 LE version, then u64 LE deadline if it has one */
#define VER_PREFIX "/ver/"
#define LVER_PREFIX "/lver/"            /* long key's LMDB key -> same */
#define VER_SIZE 8u                     /* a version */
#define VER_DL_SIZE 16u                 /* a version and a deadline */
#define META_DB "/meta"
#define META_TABLE "table/"
#define META_ASIDE "aside/"
#define HASH_BYTES 16u                  /* xxh64 seed 1, seed 2, BE */
#define COMPACT_FILE "data.mdb.compact"  /* a compaction's copy */

/*
 * struct ckpt_table_rec, the value of "table/<name>" in "/meta": packed,
 * every field little-endian.  Written and read field by field, never by
 * copying struct ckpt_table, so the format does not follow the compiler.
 */
enum {
	REC_ID = 0,             /* u64 */
	REC_UID = 8,            /* u32 */
	REC_GID = 12,           /* u32 */
	REC_MODE = 16,          /* u32 */
	REC_MAX_EXTENTS = 20,   /* u32 */
	REC_SYNC = 24,          /* u32 */
	REC_SIZE_OLD = 28,      /* up to format 2: none of those below */
	REC_DEFAULT_TTL = 28,   /* u64, ms; 0 = none */
	REC_MAX_BYTES = 36,     /* u64; 0 = no bound */
	REC_MAX_RECORDS = 44,   /* u64; 0 = no bound */
	REC_EVICT = 52,         /* u32, TDB_EVICT_* */
	REC_SIZE_3 = 56,        /* format 3: none of those below */
	REC_FLAGS = 56,         /* u32, TDB_TABLE_F_* (issue 28) */
	REC_SIZE = 60,
};

struct ckpt {
	MDB_env *env;
	MDB_dbi meta;           /* "/meta", valid for the env's life */
	unsigned int maxkey;    /* mdb_env_get_maxkeysize() */
	uint64_t mapsize;       /* CKPT_MAPSIZE or TDBD_CKPT_MAPSIZE */
	pthread_mutex_t lock;   /* see the invariants above */
	char path[];            /* <dir>/checkpoint, for messages */
};

/*
 * Database handles.  LMDB makes a handle opened in a write txn valid for
 * the env only when that txn commits; if it aborts the handle is closed,
 * and mdb_drop(..., 1) closes a handle at once, even if its txn later
 * aborts.  A cache of handles in struct ckpt would have to follow all
 * of that.  Instead every transaction opens the handles it needs by name
 * (mdb_dbi_open of a name the env already has open is a scan of the open
 * names, no I/O), so no handle outlives the transaction that got it and
 * an abort cannot leave a stale one behind.  A write txn remembers the
 * handles of the last table it touched (puts come grouped by table);
 * that memory dies with the txn and drop_table clears it.
 *
 * mdb_dbi_open must not run in two transactions of a process at once,
 * and a handle a txn opened is published only when it ends, so ck->lock
 * is held for the whole of every transaction that opens one.
 */
struct ckpt_txn {
	struct ckpt *ck;
	MDB_txn *txn;
	int rc;                 /* first failure, 0 if none */
	bool cur_ok;            /* cur_* are the handles of cur_name */
	char cur_name[NAME_MAX_LEN + 1];
	MDB_dbi cur_dbi, cur_long, cur_ver, cur_lver;
	char err[512];          /* message for rc */
	unsigned char lkey[];   /* ck->maxkey bytes: a long key's LMDB key */
};

/* --- encodings --------------------------------------------------------- */

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The LMDB key of a long key (klen > maxkey): its first maxkey - 16
 * bytes, then xxh64(key, 1) and xxh64(key, 2) big-endian; maxkey bytes. */
static void long_key(unsigned int maxkey, unsigned char *out,
		     const void *key, size_t klen)
{
	size_t pre = maxkey - HASH_BYTES;

	memcpy(out, key, pre);
	put_be64(out + pre, XXH64(key, klen, 1));
	put_be64(out + pre + 8, XXH64(key, klen, 2));
}

/* 1..64 bytes, no '/' (the layout's separator); NUL-terminated. */
static bool name_ok(const char *name)
{
	size_t len;

	if (!name)
		return false;
	len = strnlen(name, NAME_MAX_LEN + 1);
	return len >= 1 && len <= NAME_MAX_LEN && !strchr(name, '/');
}

/* --- errors ------------------------------------------------------------ */

/*
 * LMDB returns either a system errno (positive) or one of its own codes
 * (MDB_KEYEXIST..MDB_LAST_ERRCODE, negative: -30799..-30780).  Map both
 * to a negative errno.
 */
static int mdb_errno(int rc)
{
	if (rc >= 0)
		return -rc;
	switch (rc) {
	case MDB_MAP_FULL:
		return -ENOSPC;         /* the map (TDBD_CKPT_MAPSIZE) is full */
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_PAGE_NOTFOUND:
	case MDB_CORRUPTED:
	case MDB_INCOMPATIBLE:         /* a name is not a database, or flags */
		return -EUCLEAN;
	case MDB_PANIC:
		return -EIO;
	case MDB_VERSION_MISMATCH:
	case MDB_INVALID:              /* not an LMDB file */
		return -EPROTO;
	case MDB_MAP_RESIZED:
	case MDB_READERS_FULL:
	case MDB_TLS_FULL:
		return -EAGAIN;
	case MDB_DBS_FULL:
		return -EMFILE;         /* over CKPT_MAXDBS databases */
	case MDB_TXN_FULL:
		return -E2BIG;          /* too many dirty pages in one txn */
	case MDB_CURSOR_FULL:
	case MDB_PAGE_FULL:
		return -EOVERFLOW;
	case MDB_BAD_RSLOT:
	case MDB_BAD_TXN:
	case MDB_BAD_VALSIZE:
		return -EINVAL;
	case MDB_BAD_DBI:
		return -EBADF;
	default:
		return -EIO;
	}
}

/* "checkpoint <path>: <what>[: <why>]" into err (if any); returns rc. */
static int vsay(char *err, size_t errlen, const char *path, int rc,
		const char *why, const char *fmt, va_list ap)
{
	int n;

	if (!err || !errlen)
		return rc;
	n = snprintf(err, errlen, "checkpoint %s: ", path);
	if (n < 0 || (size_t)n >= errlen)
		return rc;
	vsnprintf(err + n, errlen - n, fmt, ap);
	if (why) {
		size_t len = strlen(err);

		if (len < errlen)
			snprintf(err + len, errlen - len, ": %s", why);
	}
	return rc;
}

__attribute__((format(printf, 6, 7)))
static int say(char *err, size_t errlen, const char *path, int rc,
	       const char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(err, errlen, path, rc, why, fmt, ap);
	va_end(ap);
	return rc;
}

/* An LMDB failure: the mapped errno, and its mdb_strerror as the why. */
#define say_mdb(err, errlen, path, mrc, ...) \
	say(err, errlen, path, mdb_errno(mrc), mdb_strerror(mrc), __VA_ARGS__)

/* Record tx's first failure and its message; once tx has failed, every
 * call returns that first failure (see the invariants). */
__attribute__((format(printf, 4, 5)))
static int tx_fail(struct ckpt_txn *tx, int rc, const char *why,
		   const char *fmt, ...)
{
	va_list ap;

	if (tx->rc)
		return tx->rc;
	va_start(ap, fmt);
	tx->rc = vsay(tx->err, sizeof(tx->err), tx->ck->path, rc, why, fmt,
		      ap);
	va_end(ap);
	return tx->rc;
}

#define tx_fail_mdb(tx, mrc, ...) \
	tx_fail(tx, mdb_errno(mrc), mdb_strerror(mrc), __VA_ARGS__)

/* ck->lock; EDEADLK (an error-checking mutex) = this thread holds it. */
static int take_lock(struct ckpt *ck, char *err, size_t errlen,
		     const char *what)
{
	int rc = pthread_mutex_lock(&ck->lock);

	if (rc == EDEADLK)
		return say(err, errlen, ck->path, -EDEADLK, NULL,
			   "%s: this thread is writing a checkpoint", what);
	if (rc)
		return say(err, errlen, ck->path, -rc, strerror(rc),
			   "%s: lock", what);
	return 0;
}

/* --- open and close ---------------------------------------------------- */

static int mapsize_from_env(uint64_t *out)
{
	const char *s = getenv("TDBD_CKPT_MAPSIZE");
	unsigned long long v;
	char *end;

	*out = CKPT_MAPSIZE;
	if (!s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || s[0] == '-' ||
	    v > SIZE_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Open "/meta" in a write txn (so the handle is the env's once it
 * commits) and give a new store its format record. */
static int meta_init(struct ckpt *ck, char *err, size_t errlen)
{
	unsigned char fmt[4];
	MDB_val k = { 6, "format" }, v = { sizeof(fmt), fmt };
	MDB_txn *txn;
	MDB_stat st;
	int rc;

	rc = mdb_txn_begin(ck->env, NULL, 0, &txn);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc, "mdb_txn_begin");
	rc = mdb_dbi_open(txn, META_DB, MDB_CREATE, &ck->meta);
	if (rc) {
		mdb_txn_abort(txn);
		return say_mdb(err, errlen, ck->path, rc, "open " META_DB);
	}
	rc = mdb_stat(txn, ck->meta, &st);
	if (!rc && st.ms_entries == 0) {
		/* A new store.  An old one keeps its record, even a wrong
		 * one: read_meta and begin refuse it, open leaves it be. */
		put_le32(fmt, CKPT_FORMAT);
		rc = mdb_put(txn, ck->meta, &k, &v, 0);
	}
	if (rc) {
		mdb_txn_abort(txn);
		return say_mdb(err, errlen, ck->path, rc, "init " META_DB);
	}
	rc = mdb_txn_commit(txn);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc, "commit " META_DB);
	return 0;
}

/*
 * LMDB makes a missing lock.mdb with ftruncate and writes its header
 * through a shared mapping: on a full disk that is a SIGBUS, not an
 * error.  So make it here, with its room reserved (the size LMDB wants,
 * or more: it then just has room for more readers), and fail clearly
 * if there is none.  An existing one already has its pages.
 */
static int lock_file_reserve(struct ckpt *ck, char *err, size_t errlen)
{
	unsigned int readers = 126;     /* LMDB's default */
	char path[PATH_MAX];
	struct stat st;
	off_t size;
	int fd, rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock.mdb", ck->path) >=
	    sizeof(path))
		return 0;       /* LMDB will say */
	/* An empty one is what a crash between creating and reserving it
	 * leaves: reserve that too.  One with bytes in it is LMDB's. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0)
		return 0;       /* LMDB will say why */
	if (fstat(fd, &st) || st.st_size > 0) {
		close(fd);
		return 0;
	}
	mdb_env_get_maxreaders(ck->env, &readers);
	/* a reader slot and the header's cache lines are 64 bytes each */
	size = ((off_t)(readers + 4) * 64 + 4095) & ~(off_t)4095;
	rc = posix_fallocate(fd, 0, size);
	close(fd);
	if (!rc)
		return 0;
	unlink(path);           /* empty: LMDB would map it unreserved */
	if (rc != ENOSPC && rc != EDQUOT)
		return 0;       /* let LMDB make it its own way */
	return say(err, errlen, ck->path, -rc, strerror(rc), "lock.mdb is "
		   "missing and there is no room on the disk to make it "
		   "(%lld bytes); free some space", (long long)size);
}

/*
 * Make and open ck->env on ck->path: the env's settings, lock.mdb's room,
 * maxkey and "/meta".  ck->env is NULL unless it returns 0.
 */
static int env_open(struct ckpt *ck, char *err, size_t errlen)
{
	int rc;

	rc = mdb_env_create(&ck->env);
	if (rc) {
		ck->env = NULL;
		return say_mdb(err, errlen, ck->path, rc, "mdb_env_create");
	}
	rc = mdb_env_set_maxdbs(ck->env, CKPT_MAXDBS);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "mdb_env_set_maxdbs");
		goto out_env;
	}
	rc = mdb_env_set_mapsize(ck->env, (size_t)ck->mapsize);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "mdb_env_set_mapsize");
		goto out_env;
	}
	rc = lock_file_reserve(ck, err, errlen);
	if (rc)
		goto out_env;
	/* Full sync (no MDB_NOSYNC/NOMETASYNC): a commit is on disk when it
	 * returns.  MDB_NOTLS: read txns are not tied to a thread. */
	rc = mdb_env_open(ck->env, ck->path, MDB_NOTLS, 0640);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "mdb_env_open");
		goto out_env;
	}
	rc = mdb_env_get_maxkeysize(ck->env);
	if (rc <= (int)HASH_BYTES * 2) {
		rc = say(err, errlen, ck->path, -EINVAL, NULL,
			 "LMDB key size limit %d too small", rc);
		goto out_env;
	}
	ck->maxkey = (unsigned int)rc;
	rc = meta_init(ck, err, errlen);
	if (rc)
		goto out_env;
	return 0;
out_env:
	mdb_env_close(ck->env);     /* also after a failed mdb_env_open */
	ck->env = NULL;
	return rc;
}

/* <path>/data.mdb.compact: a compaction's copy (see tdbd_ckpt_compact). */
static int compact_path(const struct ckpt *ck, char *out, size_t len,
			const char *file)
{
	if ((size_t)snprintf(out, len, "%s/%s", ck->path, file) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int tdbd_ckpt_open(const char *dir, struct ckpt **out, char *err,
		   size_t errlen)
{
	pthread_mutexattr_t ma;
	char stale[PATH_MAX];
	struct ckpt *ck;
	size_t len;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	len = strlen(dir) + sizeof("/checkpoint");
	ck = calloc(1, sizeof(*ck) + len);
	if (!ck)
		return say(err, errlen, dir, -ENOMEM, NULL, "out of memory");
	snprintf(ck->path, len, "%s/checkpoint", dir);

	if (mapsize_from_env(&ck->mapsize) < 0) {
		rc = say(err, errlen, ck->path, -EINVAL, NULL,
			 "TDBD_CKPT_MAPSIZE=%s: not a size in bytes",
			 getenv("TDBD_CKPT_MAPSIZE"));
		goto out_free;
	}
	if (mkdir(ck->path, 0750) && errno != EEXIST) {
		rc = say(err, errlen, ck->path, -errno, strerror(errno),
			 "mkdir");
		goto out_free;
	}
	/* A compaction that did not get to its rename: its copy is not the
	 * store (data.mdb is), whole or not. */
	if (!compact_path(ck, stale, sizeof(stale), COMPACT_FILE))
		unlink(stale);
	rc = env_open(ck, err, errlen);
	if (rc)
		goto out_free;

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	rc = -pthread_mutex_init(&ck->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (rc) {
		rc = say(err, errlen, ck->path, rc, strerror(-rc),
			 "pthread_mutex_init");
		mdb_env_close(ck->env);
		goto out_free;
	}
	*out = ck;
	return 0;

out_free:
	free(ck);
	return rc;
}

void tdbd_ckpt_close(struct ckpt *ck)
{
	if (!ck)
		return;
	if (ck->env)
		mdb_env_close(ck->env);
	pthread_mutex_destroy(&ck->lock);
	free(ck);
}

/* The env, or -EIO if a compaction could not reopen it (and neither can
 * this try). */
static int env_ready(struct ckpt *ck, char *err, size_t errlen)
{
	if (ck->env)
		return 0;
	return env_open(ck, err, errlen);
}

/* --- reading ----------------------------------------------------------- */

/* The "format" record must say CKPT_FORMAT. */
static int check_format(struct ckpt *ck, MDB_txn *txn, char *err,
			size_t errlen)
{
	MDB_val k = { 6, "format" }, v;
	uint32_t fmt;
	int rc;

	rc = mdb_get(txn, ck->meta, &k, &v);
	if (rc == MDB_NOTFOUND)
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   META_DB ": no format record");
	if (rc)
		return say_mdb(err, errlen, ck->path, rc,
			       "read " META_DB " format");
	if (v.mv_size != 4)
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   META_DB ": format record of %zu bytes, expected 4",
			   v.mv_size);
	fmt = get_le32(v.mv_data);
	if (fmt < CKPT_FORMAT_OLD || fmt > CKPT_FORMAT)
		return say(err, errlen, ck->path, -EPROTO, NULL,
			   "format %" PRIu32 ", this tdbd reads formats %u "
			   "to %u", fmt, CKPT_FORMAT_OLD, CKPT_FORMAT);
	return 0;
}

/* "table/<name>" -> *t; the record must be REC_SIZE bytes (or
 * REC_SIZE_3: format 3, no flags; REC_SIZE_OLD: before format 3, none
 * of its attributes of expiry and eviction either). */
static int decode_table(struct ckpt *ck, const MDB_val *k, const MDB_val *v,
			struct ckpt_table *t, char *err, size_t errlen)
{
	const char *name = (const char *)k->mv_data + strlen(META_TABLE);
	size_t nlen = k->mv_size - strlen(META_TABLE);
	const unsigned char *p = v->mv_data;

	if (nlen < 1 || nlen > NAME_MAX_LEN || memchr(name, '/', nlen) ||
	    memchr(name, '\0', nlen))
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   META_DB ": schema key with a bad table name "
			   "(%zu bytes)", nlen);
	memset(t, 0, sizeof(*t));
	memcpy(t->name, name, nlen);
	if (v->mv_size != REC_SIZE && v->mv_size != REC_SIZE_3 &&
	    v->mv_size != REC_SIZE_OLD)
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   "table %s: schema record of %zu bytes, "
			   "expected %d (or %d, %d)", t->name, v->mv_size,
			   REC_SIZE, REC_SIZE_3, REC_SIZE_OLD);
	if (v->mv_size >= REC_SIZE_3) {
		t->default_ttl = get_le64(p + REC_DEFAULT_TTL);
		t->max_bytes = get_le64(p + REC_MAX_BYTES);
		t->max_records = get_le64(p + REC_MAX_RECORDS);
		t->evict = get_le32(p + REC_EVICT);
	}
	if (v->mv_size >= REC_SIZE)
		t->flags = get_le32(p + REC_FLAGS);
	t->id = get_le64(p + REC_ID);
	t->uid = get_le32(p + REC_UID);
	t->gid = get_le32(p + REC_GID);
	t->mode = get_le32(p + REC_MODE);
	t->max_extents = get_le32(p + REC_MAX_EXTENTS);
	t->sync = get_le32(p + REC_SYNC);
	return 0;
}

/* "aside/<name>" -> t->aside, t->from (a u64 LE, or none). */
static int read_aside(struct ckpt *ck, MDB_txn *txn, struct ckpt_table *t,
		      char *err, size_t errlen)
{
	char mkey[sizeof(META_ASIDE) + NAME_MAX_LEN];
	MDB_val k, v;
	int rc;

	k.mv_size = (size_t)snprintf(mkey, sizeof(mkey), META_ASIDE "%s",
				     t->name);
	k.mv_data = mkey;
	rc = mdb_get(txn, ck->meta, &k, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return say_mdb(err, errlen, ck->path, rc, "read " META_DB
			       " " META_ASIDE "%s", t->name);
	if (v.mv_size != 8)
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   "table %s: set-aside record of %zu bytes, "
			   "expected 8", t->name, v.mv_size);
	t->aside = true;
	t->from = get_le64(v.mv_data);
	return 0;
}

static int read_tables(struct ckpt *ck, MDB_txn *txn,
		       struct ckpt_table **tabs, unsigned int *n,
		       char *err, size_t errlen)
{
	const size_t plen = strlen(META_TABLE);
	struct ckpt_table *a = NULL, *na;
	unsigned int cap = 0, cnt = 0;
	MDB_cursor *cur;
	MDB_val k = { plen, META_TABLE }, v;
	int rc;

	rc = mdb_cursor_open(txn, ck->meta, &cur);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc,
			       "read " META_DB ": mdb_cursor_open");
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, META_TABLE, plen))
			break;          /* past the "table/" keys */
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			na = realloc(a, cap * sizeof(*a));
			if (!na) {
				rc = say(err, errlen, ck->path, -ENOMEM, NULL,
					 "read " META_DB ": out of memory");
				goto fail;
			}
			a = na;
		}
		rc = decode_table(ck, &k, &v, &a[cnt], err, errlen);
		if (!rc)
			rc = read_aside(ck, txn, &a[cnt], err, errlen);
		if (rc)
			goto fail;
		cnt++;
	}
	if (rc != MDB_NOTFOUND && rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "read " META_DB);
		goto fail;
	}
	mdb_cursor_close(cur);
	*tabs = a;
	*n = cnt;
	return 0;
fail:
	mdb_cursor_close(cur);
	free(a);
	return rc;
}

int tdbd_ckpt_read_meta(struct ckpt *ck, uint64_t *lsn,
			struct ckpt_table **tabs, unsigned int *n,
			char *err, size_t errlen)
{
	MDB_val k = { 3, "lsn" }, v;
	MDB_txn *txn;
	int rc;

	*lsn = 0;
	*tabs = NULL;
	*n = 0;
	/* Only "/meta", whose handle is the env's: no ck->lock needed (and
	 * no compaction runs: it is called before any checkpoint). */
	if (!ck->env)
		return say(err, errlen, ck->path, -EIO, NULL, "not open");
	rc = mdb_txn_begin(ck->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc, "mdb_txn_begin");
	rc = check_format(ck, txn, err, errlen);
	if (rc)
		goto out;
	rc = mdb_get(txn, ck->meta, &k, &v);
	if (rc == MDB_NOTFOUND) {
		rc = 0;                 /* no checkpoint written yet */
	} else if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "read " META_DB " lsn");
		goto out;
	} else if (v.mv_size != 8) {
		rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
			 META_DB ": lsn record of %zu bytes, expected 8",
			 v.mv_size);
		goto out;
	} else {
		*lsn = get_le64(v.mv_data);
	}
	rc = read_tables(ck, txn, tabs, n, err, errlen);
	if (rc)
		*lsn = 0;
out:
	mdb_txn_abort(txn);
	return rc;
}

/*
 * The version of the record whose LMDB key is k: the next entry of the
 * cursor vc on its version database ("/ver/" or "/lver/": keyed the same,
 * so in the same order), which must have exactly that key and a u64 LE
 * value that is not 0, then the record's deadline (u64 LE, not 0) if it
 * has one (*deadline, else 0).  vc at NULL position before the first
 * (*first).
 */
static int next_version(struct ckpt *ck, MDB_cursor *vc, bool *first,
			const MDB_val *k, const char *name, bool is_long,
			uint64_t *version, uint64_t *deadline, char *err,
			size_t errlen)
{
	const char *vpre = is_long ? LVER_PREFIX : VER_PREFIX;
	MDB_val vk, vv;
	int rc = mdb_cursor_get(vc, &vk, &vv, *first ? MDB_FIRST : MDB_NEXT);

	*first = false;
	if (rc && rc != MDB_NOTFOUND)
		return say_mdb(err, errlen, ck->path, rc, "load %s%s", vpre,
			       name);
	if (rc || vk.mv_size != k->mv_size ||
	    memcmp(vk.mv_data, k->mv_data, k->mv_size))
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   "table %s: %s%s and %s%s do not hold the same "
			   "keys (a record without its version, or a version "
			   "without its record)", name,
			   is_long ? LONG_PREFIX : "", name, vpre, name);
	if ((vv.mv_size != VER_SIZE && vv.mv_size != VER_DL_SIZE) ||
	    !get_le64(vv.mv_data))
		return say(err, errlen, ck->path, -EUCLEAN, NULL,
			   "table %s: %s%s holds a version of %zu bytes or "
			   "of 0 (must be a u64, not 0, and maybe a u64 "
			   "deadline)", name, vpre, name, vv.mv_size);
	*version = get_le64(vv.mv_data);
	*deadline = 0;
	if (vv.mv_size == VER_DL_SIZE) {
		*deadline = get_le64((const unsigned char *)vv.mv_data + 8);
		if (!*deadline)
			return say(err, errlen, ck->path, -EUCLEAN, NULL,
				   "table %s: %s%s holds a deadline of 0 "
				   "(a record without one has none there)",
				   name, vpre, name);
	}
	return 0;
}

/* Every record of one database: verbatim (short) or decoded (long), each
 * with its version from vdbi (the matching version database), or 0 if
 * !has_ver (a table written before versions). */
static int load_db(struct ckpt *ck, MDB_txn *txn, MDB_dbi dbi,
		   bool has_ver, MDB_dbi vdbi, const char *name, bool is_long,
		   ckpt_record_fn fn, void *arg, char *err, size_t errlen)
{
	const size_t pre = ck->maxkey - HASH_BYTES;
	MDB_cursor *cur, *vc = NULL;
	bool first = true;
	uint64_t version = 0, deadline = 0;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(txn, dbi, &cur);
	if (!rc && has_ver && (rc = mdb_cursor_open(txn, vdbi, &vc)))
		mdb_cursor_close(cur);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc,
			       "load %s: mdb_cursor_open", name);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const unsigned char *lk = k.mv_data, *p = v.mv_data, *key;
		unsigned char h[HASH_BYTES];
		uint32_t klen;

		if (!is_long) {
			if (vc && (rc = next_version(ck, vc, &first, &k, name,
						     false, &version,
						     &deadline, err, errlen)))
				goto out;
			rc = fn(arg, k.mv_data, k.mv_size, v.mv_data,
				v.mv_size, version, deadline);
			if (rc)
				goto out;
			continue;
		}
		/* LMDB key: prefix + 2 hashes (maxkey bytes); value: u32 LE
		 * klen, key, value.  All of it must agree. */
		if (k.mv_size != ck->maxkey) {
			rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
				 "table %s: " LONG_PREFIX "%s key of %zu "
				 "bytes, expected %u", name, name, k.mv_size,
				 ck->maxkey);
			goto out;
		}
		if (v.mv_size < 4) {
			rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
				 "table %s: " LONG_PREFIX "%s record of %zu "
				 "bytes has no key length", name, name,
				 v.mv_size);
			goto out;
		}
		klen = get_le32(p);
		if (klen <= ck->maxkey || klen > v.mv_size - 4) {
			rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
				 "table %s: " LONG_PREFIX "%s record of %zu "
				 "bytes gives a key of %" PRIu32 " bytes "
				 "(must be %u..%zu)", name, name, v.mv_size,
				 klen, ck->maxkey + 1, v.mv_size - 4);
			goto out;
		}
		key = p + 4;
		put_be64(h, XXH64(key, klen, 1));
		put_be64(h + 8, XXH64(key, klen, 2));
		if (memcmp(lk, key, pre) || memcmp(lk + pre, h, HASH_BYTES)) {
			rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
				 "table %s: " LONG_PREFIX "%s record's key "
				 "does not match its LMDB key", name, name);
			goto out;
		}
		if (vc && (rc = next_version(ck, vc, &first, &k, name, true,
					     &version, &deadline, err,
					     errlen)))
			goto out;
		rc = fn(arg, key, klen, key + klen, v.mv_size - 4 - klen,
			version, deadline);
		if (rc)
			goto out;
	}
	if (rc != MDB_NOTFOUND) {
		rc = say_mdb(err, errlen, ck->path, rc, "load %s%s",
			     is_long ? LONG_PREFIX : "", name);
		goto out;
	}
	rc = 0;
	/* no version left over (of a key the table does not hold) */
	if (vc && !mdb_cursor_get(vc, &k, &v, first ? MDB_FIRST : MDB_NEXT))
		rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
			 "table %s: %s%s holds the version of a key that "
			 "%s%s does not", name,
			 is_long ? LVER_PREFIX : VER_PREFIX, name,
			 is_long ? LONG_PREFIX : "", name);
out:
	if (vc)
		mdb_cursor_close(vc);
	mdb_cursor_close(cur);
	return rc;
}

int tdbd_ckpt_load_table(struct ckpt *ck, const char *name,
			 ckpt_record_fn fn, void *arg, bool *versioned,
			 char *err, size_t errlen)
{
	char lname[sizeof(LONG_PREFIX) + NAME_MAX_LEN];
	char vname[sizeof(LVER_PREFIX) + NAME_MAX_LEN];
	MDB_dbi dbi, ldbi, vdbi = 0, lvdbi = 0;
	bool has_ver = false;
	MDB_txn *txn;
	int rc;

	if (versioned)
		*versioned = false;
	if (!name_ok(name))
		return say(err, errlen, ck->path, -EINVAL, NULL,
			   "load_table: bad table name");
	rc = take_lock(ck, err, errlen, "load_table");
	if (rc)
		return rc;
	rc = env_ready(ck, err, errlen);
	if (rc)
		goto out_unlock;
	rc = mdb_txn_begin(ck->env, NULL, MDB_RDONLY, &txn);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "mdb_txn_begin");
		goto out_unlock;
	}
	rc = mdb_dbi_open(txn, name, 0, &dbi);
	if (rc == MDB_NOTFOUND) {
		rc = say(err, errlen, ck->path, -ENOENT, NULL,
			 "table %s: not in the checkpoint", name);
		goto out;
	}
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "open table %s", name);
		goto out;
	}
	snprintf(lname, sizeof(lname), LONG_PREFIX "%s", name);
	rc = mdb_dbi_open(txn, lname, 0, &ldbi);
	if (rc == MDB_NOTFOUND) {
		rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
			 "table %s: database %s missing", name, lname);
		goto out;
	}
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "open %s", lname);
		goto out;
	}
	/* "/ver/" says the table has versions ("/lver/" must be there
	 * too); without it, it was written before versions */
	snprintf(vname, sizeof(vname), VER_PREFIX "%s", name);
	rc = mdb_dbi_open(txn, vname, 0, &vdbi);
	if (!rc) {
		has_ver = true;
		snprintf(vname, sizeof(vname), LVER_PREFIX "%s", name);
		rc = mdb_dbi_open(txn, vname, 0, &lvdbi);
		if (rc == MDB_NOTFOUND) {
			rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
				 "table %s: database %s missing", name,
				 vname);
			goto out;
		}
	} else if (rc == MDB_NOTFOUND) {
		rc = 0;
	}
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "open %s", vname);
		goto out;
	}
	rc = load_db(ck, txn, dbi, has_ver, vdbi, name, false, fn, arg, err,
		     errlen);
	if (!rc)
		rc = load_db(ck, txn, ldbi, has_ver, lvdbi, name, true, fn,
			     arg, err, errlen);
	if (!rc && versioned)
		*versioned = has_ver;
out:
	/* Abort closes the handles this txn opened: none is kept. */
	mdb_txn_abort(txn);
out_unlock:
	pthread_mutex_unlock(&ck->lock);
	return rc;
}

/* --- writing ----------------------------------------------------------- */

int tdbd_ckpt_begin(struct ckpt *ck, struct ckpt_txn **out, char *err,
		    size_t errlen)
{
	struct ckpt_txn *tx;
	int rc;

	*out = NULL;
	tx = calloc(1, sizeof(*tx) + ck->maxkey);
	if (!tx)
		return say(err, errlen, ck->path, -ENOMEM, NULL,
			   "begin: out of memory");
	tx->ck = ck;
	rc = take_lock(ck, err, errlen, "begin");
	if (rc) {
		free(tx);
		return rc;
	}
	rc = env_ready(ck, err, errlen);
	if (rc)
		goto fail;
	rc = mdb_txn_begin(ck->env, NULL, 0, &tx->txn);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "mdb_txn_begin");
		goto fail;
	}
	rc = check_format(ck, tx->txn, err, errlen);
	if (rc) {
		mdb_txn_abort(tx->txn);
		goto fail;
	}
	*out = tx;
	return 0;
fail:
	pthread_mutex_unlock(&ck->lock);
	free(tx);
	return rc;
}

/*
 * The handles of table name, "/long/<name>", "/ver/<name>" and
 * "/lver/<name>" in tx (tx->cur_*), created if create.  A table without
 * its database is -ENOENT; one with it but without another
 * (reset_table makes them all) is -EUCLEAN: a table written before
 * versions must be written whole (reset) before any put or delete.
 */
static int tx_dbis(struct ckpt_txn *tx, const char *name, bool create,
		   const char *what)
{
	static const char *const pre[3] = { LONG_PREFIX, VER_PREFIX,
					    LVER_PREFIX };
	char oname[sizeof(LVER_PREFIX) + NAME_MAX_LEN];
	unsigned int flags = create ? MDB_CREATE : 0;
	MDB_dbi *h[3] = { &tx->cur_long, &tx->cur_ver, &tx->cur_lver };
	int rc;

	if (tx->cur_ok && !strcmp(tx->cur_name, name))
		return 0;
	tx->cur_ok = false;
	rc = mdb_dbi_open(tx->txn, name, flags, &tx->cur_dbi);
	if (rc == MDB_NOTFOUND)
		return tx_fail(tx, -ENOENT, NULL, "%s %s: no such table "
			       "(reset_table makes it)", what, name);
	if (rc)
		return tx_fail_mdb(tx, rc, "%s %s: open", what, name);
	for (int i = 0; i < 3; i++) {
		snprintf(oname, sizeof(oname), "%s%s", pre[i], name);
		rc = mdb_dbi_open(tx->txn, oname, flags, h[i]);
		if (rc == MDB_NOTFOUND)
			return tx_fail(tx, -EUCLEAN, NULL, "%s %s: database "
				       "%s missing%s", what, name, oname,
				       i ? " (a table written before "
				       "versions: reset_table first)" : "");
		if (rc)
			return tx_fail_mdb(tx, rc, "%s %s: open %s", what,
					   name, oname);
	}
	tx->cur_ok = true;
	strcpy(tx->cur_name, name);
	return 0;
}

int tdbd_ckpt_reset_table(struct ckpt_txn *tx, const char *name)
{
	int rc;

	if (tx->rc)
		return tx->rc;
	if (!name_ok(name))
		return tx_fail(tx, -EINVAL, NULL, "reset_table: bad table name");
	rc = tx_dbis(tx, name, true, "reset_table");
	if (rc)
		return rc;
	rc = mdb_drop(tx->txn, tx->cur_dbi, 0);
	if (!rc)
		rc = mdb_drop(tx->txn, tx->cur_long, 0);
	if (!rc)
		rc = mdb_drop(tx->txn, tx->cur_ver, 0);
	if (!rc)
		rc = mdb_drop(tx->txn, tx->cur_lver, 0);
	if (rc)
		return tx_fail_mdb(tx, rc, "reset_table %s: mdb_drop", name);
	return 0;
}

/* mdb_drop(..., 1) of one database if it exists. */
static int drop_db(struct ckpt_txn *tx, const char *table,
		   const char *dbname)
{
	MDB_dbi dbi;
	int rc;

	rc = mdb_dbi_open(tx->txn, dbname, 0, &dbi);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (!rc)
		rc = mdb_drop(tx->txn, dbi, 1);   /* closes dbi, even on abort */
	if (rc)
		return tx_fail_mdb(tx, rc, "drop_table %s: drop %s", table,
				   dbname);
	return 0;
}

/* Write "aside/<name>" (aside) or make sure it is not there. */
static int set_aside(struct ckpt_txn *tx, const char *name, bool aside,
		     uint64_t from)
{
	char mkey[sizeof(META_ASIDE) + NAME_MAX_LEN];
	unsigned char buf[8];
	MDB_val k, v = { sizeof(buf), buf };
	int rc;

	k.mv_size = (size_t)snprintf(mkey, sizeof(mkey), META_ASIDE "%s",
				     name);
	k.mv_data = mkey;
	put_le64(buf, from);
	rc = aside ? mdb_put(tx->txn, tx->ck->meta, &k, &v, 0) :
		     mdb_del(tx->txn, tx->ck->meta, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return tx_fail_mdb(tx, rc, "%s: set-aside mark of %s",
				   aside ? "put" : "delete", name);
	return 0;
}

int tdbd_ckpt_drop_table(struct ckpt_txn *tx, const char *name)
{
	char lname[sizeof(LONG_PREFIX) + NAME_MAX_LEN];
	char vname[sizeof(LVER_PREFIX) + NAME_MAX_LEN];
	char mkey[sizeof(META_TABLE) + NAME_MAX_LEN];
	MDB_val k;
	int rc;

	if (tx->rc)
		return tx->rc;
	if (!name_ok(name))
		return tx_fail(tx, -EINVAL, NULL, "drop_table: bad table name");
	if (tx->cur_ok && !strcmp(tx->cur_name, name))
		tx->cur_ok = false;     /* its handles are about to close */
	snprintf(lname, sizeof(lname), LONG_PREFIX "%s", name);
	rc = drop_db(tx, name, name);
	if (!rc)
		rc = drop_db(tx, name, lname);
	snprintf(vname, sizeof(vname), VER_PREFIX "%s", name);
	if (!rc)
		rc = drop_db(tx, name, vname);
	snprintf(vname, sizeof(vname), LVER_PREFIX "%s", name);
	if (!rc)
		rc = drop_db(tx, name, vname);
	if (rc)
		return rc;
	k.mv_size = (size_t)snprintf(mkey, sizeof(mkey), META_TABLE "%s",
				     name);
	k.mv_data = mkey;
	rc = mdb_del(tx->txn, tx->ck->meta, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return tx_fail_mdb(tx, rc, "drop_table %s: delete schema",
				   name);
	return set_aside(tx, name, false, 0);
}

/* Arguments common to put and del. */
static int check_key(struct ckpt_txn *tx, const char *what,
		     const char *name, size_t klen)
{
	if (!name_ok(name))
		return tx_fail(tx, -EINVAL, NULL, "%s: bad table name", what);
	if (klen == 0 || klen > UINT32_MAX)
		return tx_fail(tx, -EINVAL, NULL, "%s %s: key of %zu bytes",
			       what, name, klen);
	return 0;
}

/*
 * Look up a long key's record: 0 and *v if it holds exactly key,
 * MDB_NOTFOUND if there is none, -EEXIST if another key has the same
 * LMDB key (same prefix and both hashes; the format holds one of them).
 */
static int long_get(struct ckpt_txn *tx, MDB_dbi ldbi, MDB_val *lk,
		    const void *key, size_t klen, MDB_val *v)
{
	int rc = mdb_get(tx->txn, ldbi, lk, v);

	if (rc)
		return rc;
	if (v->mv_size < 4 + klen || get_le32(v->mv_data) != klen ||
	    memcmp((const unsigned char *)v->mv_data + 4, key, klen))
		return -EEXIST;
	return 0;
}

/* A record's version (and deadline, if it has one) beside it: key k
 * (the record's LMDB key) in the version database vdbi, with flags
 * (MDB_APPEND or 0). */
static int put_version(struct ckpt_txn *tx, MDB_dbi vdbi, MDB_val *k,
		       uint64_t version, uint64_t deadline,
		       unsigned int flags, const char *name)
{
	unsigned char buf[VER_DL_SIZE];
	MDB_val v = { deadline ? VER_DL_SIZE : VER_SIZE, buf };
	int rc;

	put_le64(buf, version);
	put_le64(buf + 8, deadline);
	rc = mdb_put(tx->txn, vdbi, k, &v, flags);
	if (rc)
		return tx_fail_mdb(tx, rc, "put %s: its version", name);
	return 0;
}

int tdbd_ckpt_put(struct ckpt_txn *tx, const char *name, const void *key,
		  size_t klen, const void *val, size_t vlen, uint64_t version)
{
	return tdbd_ckpt_put_dl(tx, name, key, klen, val, vlen, version, 0);
}

int tdbd_ckpt_put_dl(struct ckpt_txn *tx, const char *name,
		     const void *key, size_t klen, const void *val,
		     size_t vlen, uint64_t version, uint64_t deadline)
{
	struct ckpt *ck = tx->ck;
	MDB_val k, v;
	MDB_dbi ldbi;
	int rc;

	if (tx->rc)
		return tx->rc;
	rc = check_key(tx, "put", name, klen);
	if (!rc && !version)
		rc = tx_fail(tx, -EINVAL, NULL, "put %s: version 0", name);
	if (rc)
		return rc;
	rc = tx_dbis(tx, name, false, "put");
	if (rc)
		return rc;
	ldbi = tx->cur_long;
	if (klen <= ck->maxkey) {
		k.mv_size = klen;
		k.mv_data = (void *)key;
		v.mv_size = vlen;
		v.mv_data = (void *)val;
		rc = mdb_put(tx->txn, tx->cur_dbi, &k, &v, 0);
		if (rc)
			return tx_fail_mdb(tx, rc, "put %s", name);
		return put_version(tx, tx->cur_ver, &k, version, deadline, 0,
				   name);
	}
	if (vlen > SIZE_MAX - 4 - klen)
		return tx_fail(tx, -E2BIG, NULL, "put %s: record too big",
			       name);
	long_key(ck->maxkey, tx->lkey, key, klen);
	k.mv_size = ck->maxkey;
	k.mv_data = tx->lkey;
	rc = long_get(tx, ldbi, &k, key, klen, &v);
	if (rc == -EEXIST)
		return tx_fail(tx, -EEXIST, NULL, "put %s: a %zu-byte key "
			       "collides with another in " LONG_PREFIX "%s",
			       name, klen, name);
	if (rc && rc != MDB_NOTFOUND)
		return tx_fail_mdb(tx, rc, "put %s: read " LONG_PREFIX "%s",
				   name, name);
	v.mv_size = 4 + klen + vlen;
	v.mv_data = NULL;
	rc = mdb_put(tx->txn, ldbi, &k, &v, MDB_RESERVE);
	if (rc)
		return tx_fail_mdb(tx, rc, "put %s: " LONG_PREFIX "%s", name,
				   name);
	put_le32(v.mv_data, (uint32_t)klen);
	memcpy((unsigned char *)v.mv_data + 4, key, klen);
	if (vlen)
		memcpy((unsigned char *)v.mv_data + 4 + klen, val, vlen);
	return put_version(tx, tx->cur_lver, &k, version, deadline, 0, name);
}

int tdbd_ckpt_del(struct ckpt_txn *tx, const char *name, const void *key,
		  size_t klen)
{
	struct ckpt *ck = tx->ck;
	MDB_val k, v;
	int rc;

	if (tx->rc)
		return tx->rc;
	rc = check_key(tx, "del", name, klen);
	if (rc)
		return rc;
	rc = tx_dbis(tx, name, false, "del");
	if (rc)
		return rc;
	if (klen <= ck->maxkey) {
		k.mv_size = klen;
		k.mv_data = (void *)key;
		rc = mdb_del(tx->txn, tx->cur_dbi, &k, NULL);
		if (!rc || rc == MDB_NOTFOUND)
			rc = mdb_del(tx->txn, tx->cur_ver, &k, NULL);
	} else {
		long_key(ck->maxkey, tx->lkey, key, klen);
		k.mv_size = ck->maxkey;
		k.mv_data = tx->lkey;
		rc = long_get(tx, tx->cur_long, &k, key, klen, &v);
		if (rc == -EEXIST)
			return 0;       /* the slot holds another key */
		if (!rc)
			rc = mdb_del(tx->txn, tx->cur_long, &k, NULL);
		if (!rc)
			rc = mdb_del(tx->txn, tx->cur_lver, &k, NULL);
	}
	if (rc && rc != MDB_NOTFOUND)
		return tx_fail_mdb(tx, rc, "del %s", name);
	return 0;
}

int tdbd_ckpt_set_table(struct ckpt_txn *tx, const struct ckpt_table *t)
{
	char mkey[sizeof(META_TABLE) + NAME_MAX_LEN];
	unsigned char rec[REC_SIZE];
	MDB_val k, v = { sizeof(rec), rec };
	int rc;

	if (tx->rc)
		return tx->rc;
	if (!name_ok(t->name))
		return tx_fail(tx, -EINVAL, NULL, "set_table: bad table name");
	put_le64(rec + REC_ID, t->id);
	put_le32(rec + REC_UID, t->uid);
	put_le32(rec + REC_GID, t->gid);
	put_le32(rec + REC_MODE, t->mode);
	put_le32(rec + REC_MAX_EXTENTS, t->max_extents);
	put_le32(rec + REC_SYNC, t->sync);
	put_le64(rec + REC_DEFAULT_TTL, t->default_ttl);
	put_le64(rec + REC_MAX_BYTES, t->max_bytes);
	put_le64(rec + REC_MAX_RECORDS, t->max_records);
	put_le32(rec + REC_EVICT, t->evict);
	put_le32(rec + REC_FLAGS, t->flags);
	k.mv_size = (size_t)snprintf(mkey, sizeof(mkey), META_TABLE "%s",
				     t->name);
	k.mv_data = mkey;
	rc = mdb_put(tx->txn, tx->ck->meta, &k, &v, 0);
	if (rc)
		return tx_fail_mdb(tx, rc, "set_table %s", t->name);
	return set_aside(tx, t->name, t->aside, t->from);
}

/* End tx's LMDB txn (already ended if txn is NULL) and free it. */
static void tx_end(struct ckpt_txn *tx)
{
	struct ckpt *ck = tx->ck;

	if (tx->txn)
		mdb_txn_abort(tx->txn);
	pthread_mutex_unlock(&ck->lock);
	free(tx);
}

/* Has path's filesystem no block left (for an unprivileged writer)? */
static bool disk_full(const char *path)
{
	struct statvfs sv;

	return !statvfs(path, &sv) && (sv.f_bavail == 0 || sv.f_bfree == 0);
}

/*
 * LMDB reuses a page freed by transaction T only in transactions after
 * T + 1 (mdb_page_alloc takes free-list records older than the oldest
 * snapshot, which is the last committed one).  So a checkpoint that
 * rewrites a table whole could not reuse the pages the checkpoint before
 * freed, and the file would hold three copies of it.  One tiny write
 * transaction after each checkpoint (the format record written again)
 * is that T + 1: the next checkpoint can take every page freed up to
 * this one.  Its failure changes nothing but that.
 */
static void bump(struct ckpt *ck)
{
	unsigned char fmt[4];
	MDB_val k = { 6, "format" }, v = { sizeof(fmt), fmt };
	MDB_txn *txn;

	put_le32(fmt, CKPT_FORMAT);
	if (mdb_txn_begin(ck->env, NULL, 0, &txn))
		return;
	if (mdb_put(txn, ck->meta, &k, &v, 0))
		mdb_txn_abort(txn);
	else
		mdb_txn_commit(txn);
}

int tdbd_ckpt_set_version(struct ckpt_txn *tx, uint64_t version)
{
	unsigned char buf[8];
	MDB_val k = { 7, "version" }, v = { sizeof(buf), buf };
	int rc;

	if (tx->rc)
		return tx->rc;
	put_le64(buf, version);
	rc = mdb_put(tx->txn, tx->ck->meta, &k, &v, 0);
	if (rc)
		return tx_fail_mdb(tx, rc, "write " META_DB " version");
	return 0;
}

int tdbd_ckpt_read_version(struct ckpt *ck, uint64_t *version, char *err,
			   size_t errlen)
{
	MDB_val k = { 7, "version" }, v;
	MDB_txn *txn;
	int rc;

	*version = 0;
	if (!ck->env)
		return say(err, errlen, ck->path, -EIO, NULL, "not open");
	rc = mdb_txn_begin(ck->env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return say_mdb(err, errlen, ck->path, rc, "mdb_txn_begin");
	rc = mdb_get(txn, ck->meta, &k, &v);
	if (rc == MDB_NOTFOUND)
		rc = 0;                 /* none kept (yet) */
	else if (rc)
		rc = say_mdb(err, errlen, ck->path, rc,
			     "read " META_DB " version");
	else if (v.mv_size != 8)
		rc = say(err, errlen, ck->path, -EUCLEAN, NULL,
			 META_DB ": version record of %zu bytes, expected 8",
			 v.mv_size);
	else
		*version = get_le64(v.mv_data);
	mdb_txn_abort(txn);
	return rc;
}

int tdbd_ckpt_commit(struct ckpt_txn *tx, uint64_t lsn, char *err,
		     size_t errlen)
{
	unsigned char buf[8], fmt[4];
	MDB_val k = { 3, "lsn" }, v = { sizeof(buf), buf };
	MDB_val fk = { 6, "format" }, fv = { sizeof(fmt), fmt };
	int rc;

	if (!tx->rc) {
		put_le64(buf, lsn);
		put_le32(fmt, CKPT_FORMAT);     /* an old store's too */
		rc = mdb_put(tx->txn, tx->ck->meta, &k, &v, 0);
		if (!rc)
			rc = mdb_put(tx->txn, tx->ck->meta, &fk, &fv, 0);
		if (rc)
			tx_fail_mdb(tx, rc, "commit: write lsn");
	}
	if (!tx->rc) {
		rc = mdb_txn_commit(tx->txn);   /* frees the txn, even failing */
		tx->txn = NULL;
		if (rc == EIO && disk_full(tx->ck->path))
			/* LMDB calls a short write EIO: on a full disk it
			 * ran out of space part-way (nothing is committed) */
			tx_fail(tx, -ENOSPC, "no space left on the "
				"filesystem (LMDB: a short write, Input/output "
				"error)", "commit");
		else if (rc)
			tx_fail_mdb(tx, rc, "commit");
	}
	if (!tx->rc)
		bump(tx->ck);
	rc = tx->rc;
	if (rc && err && errlen)
		snprintf(err, errlen, "%s", tx->err);
	tx_end(tx);
	return rc;
}

const char *tdbd_ckpt_txn_error(const struct ckpt_txn *tx)
{
	return tx->rc ? tx->err : "";
}

void tdbd_ckpt_abort(struct ckpt_txn *tx)
{
	if (tx)
		tx_end(tx);
}

/* --- writing in order ---------------------------------------------------- */

int tdbd_ckpt_append(struct ckpt_txn *tx, const char *name, const void *key,
		     size_t klen, const void *val, size_t vlen,
		     uint64_t version)
{
	return tdbd_ckpt_append_dl(tx, name, key, klen, val, vlen, version,
				   0);
}

int tdbd_ckpt_append_dl(struct ckpt_txn *tx, const char *name,
			const void *key, size_t klen, const void *val,
			size_t vlen, uint64_t version, uint64_t deadline)
{
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	int rc;

	if (tx->rc)
		return tx->rc;
	if (klen > tx->ck->maxkey)      /* "/long/": hash order, not ours */
		return tdbd_ckpt_put_dl(tx, name, key, klen, val, vlen,
					version, deadline);
	rc = check_key(tx, "append", name, klen);
	if (!rc && !version)
		rc = tx_fail(tx, -EINVAL, NULL, "append %s: version 0", name);
	if (!rc)
		rc = tx_dbis(tx, name, false, "append");
	if (rc)
		return rc;
	rc = mdb_put(tx->txn, tx->cur_dbi, &k, &v, MDB_APPEND);
	if (rc == MDB_KEYEXIST)
		return tx_fail(tx, -EINVAL, NULL, "append %s: a %zu-byte key "
			       "not after the last one (keys must come in "
			       "LMDB's order)", name, klen);
	if (rc)
		return tx_fail_mdb(tx, rc, "append %s", name);
	/* "/ver/" in the same order: appended too */
	return put_version(tx, tx->cur_ver, &k, version, deadline,
			   MDB_APPEND, name);
}

/* --- space and compaction ------------------------------------------------ */

/* Pages on LMDB's free list: the sum of the freeDB's page lists (each
 * value is an MDB_IDL: its count, then the page numbers). */
static int free_pages(MDB_txn *txn, uint64_t *out)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*out = 0;
	rc = mdb_cursor_open(txn, 0, &cur);     /* 0: FREE_DBI */
	if (rc)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
		if (v.mv_size >= sizeof(size_t))
			*out += *(const size_t *)v.mv_data;
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int tdbd_ckpt_space(struct ckpt *ck, struct ckpt_space *sp, char *err,
		    size_t errlen)
{
	MDB_envinfo info;
	MDB_stat st;
	MDB_txn *txn;
	struct stat fst;
	uint64_t nfree;
	int rc, fd;

	memset(sp, 0, sizeof(*sp));
	rc = take_lock(ck, err, errlen, "space");
	if (rc)
		return rc;
	rc = env_ready(ck, err, errlen);
	if (rc)
		goto out;
	if ((rc = mdb_env_get_fd(ck->env, &fd)) || (rc = mdb_env_stat(ck->env,
								      &st)) ||
	    (rc = mdb_env_info(ck->env, &info))) {
		rc = say_mdb(err, errlen, ck->path, rc, "space: env");
		goto out;
	}
	if (fstat(fd, &fst)) {
		rc = say(err, errlen, ck->path, -errno, strerror(errno),
			 "space: fstat data.mdb");
		goto out;
	}
	rc = mdb_txn_begin(ck->env, NULL, MDB_RDONLY, &txn);
	if (!rc) {
		rc = free_pages(txn, &nfree);
		mdb_txn_abort(txn);
	}
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc, "space: free list");
		goto out;
	}
	sp->file_bytes = (uint64_t)fst.st_size;
	sp->page_size = st.ms_psize;
	sp->used_bytes = ((uint64_t)info.me_last_pgno + 1 - nfree) *
			 st.ms_psize;
	if (sp->used_bytes > sp->file_bytes)
		sp->used_bytes = sp->file_bytes;
out:
	pthread_mutex_unlock(&ck->lock);
	return rc;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * The copy: data.mdb.compact made anew, written by mdb_env_copyfd2 with
 * MDB_CP_COMPACT (the live pages only, renumbered), then fsync'd.  It is
 * not yet the store.
 */
static int compact_copy(struct ckpt *ck, const char *tmp, char *err,
			size_t errlen)
{
	int fd, rc;

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return say(err, errlen, ck->path, -errno, strerror(errno),
			   "compact: create %s", COMPACT_FILE);
	rc = mdb_env_copyfd2(ck->env, fd, MDB_CP_COMPACT);
	if (rc) {
		rc = say_mdb(err, errlen, ck->path, rc,
			     "compact: mdb_env_copyfd2");
	} else if (fsync(fd)) {
		rc = say(err, errlen, ck->path, -errno, strerror(errno),
			 "compact: fsync %s", COMPACT_FILE);
	}
	if (close(fd) && !rc)
		rc = say(err, errlen, ck->path, -errno, strerror(errno),
			 "compact: close %s", COMPACT_FILE);
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * The copy takes data.mdb's place: the env is closed (no transaction is
 * open: ck->lock is held), the rename is atomic, and the directory is
 * fsync'd so that the rename survives a crash.  Until the rename a crash
 * leaves the old store (open removes the copy); after it, the new one,
 * complete and synced.  The env is then opened again on it; LMDB resets
 * lock.mdb's transaction counter from the new file's meta page, as it
 * opens alone (tdbd holds the data directory).
 */
int tdbd_ckpt_compact(struct ckpt *ck, char *err, size_t errlen)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int rc;

	if (compact_path(ck, tmp, sizeof(tmp), COMPACT_FILE) ||
	    compact_path(ck, dst, sizeof(dst), "data.mdb"))
		return say(err, errlen, ck->path, -ENAMETOOLONG, NULL,
			   "compact: path too long");
	rc = take_lock(ck, err, errlen, "compact");
	if (rc)
		return rc;
	rc = env_ready(ck, err, errlen);
	if (!rc)
		rc = compact_copy(ck, tmp, err, errlen);
	if (rc)
		goto out;
	mdb_env_close(ck->env);
	ck->env = NULL;
	if (rename(tmp, dst)) {
		rc = say(err, errlen, ck->path, -errno, strerror(errno),
			 "compact: rename %s to data.mdb", COMPACT_FILE);
		unlink(tmp);
	} else if ((rc = fsync_path(ck->path, O_RDONLY | O_DIRECTORY))) {
		/* The rename may or may not survive a crash: either file
		 * is a whole store with the same contents. */
		say(err, errlen, ck->path, rc, strerror(-rc),
		    "compact: fsync the directory");
	}
	{
		char err2[512];
		int rc2 = env_open(ck, err2, sizeof(err2));

		if (rc2 && !rc) {
			rc = rc2;
			if (err && errlen)
				snprintf(err, errlen, "%s (compact: reopening "
					 "after the rename)", err2);
		}
	}
out:
	pthread_mutex_unlock(&ck->lock);
	return rc;
}
