/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ckpt.h - the checkpoint store: an LMDB environment in the data
 * directory that holds every table as of some WAL position (the
 * checkpoint LSN).
 *
 * Layout of <data-dir>/checkpoint/ (data.mdb, lock.mdb), readable with
 * the standard tools (mdb_stat -a, mdb_dump -s TABLE):
 *   - one named database per table, named exactly as the table, holding
 *     its records key -> value, for keys up to LMDB's key limit
 *     (mdb_env_get_maxkeysize(), 511 bytes in Debian's liblmdb);
 *   - "/long/<table>" (table names cannot contain '/'): records whose key
 *     is longer than that.  LMDB key: the first (maxkey - 16) bytes of
 *     the key, then xxh64(key, 1) and xxh64(key, 2) big-endian; LMDB
 *     value: u32 little-endian key length, the key, then the value;
 *   - "/ver/<table>": key -> u64 LE, the record's version (never 0), for
 *     every key of the table's own database (the same keys: written in
 *     the same order, with MDB_APPEND when the table is written whole),
 *     followed, for a record that expires (issue 27), by its u64 LE
 *     deadline (ms of the wall clock since the Unix epoch, never 0):
 *     8 bytes without one, 16 with; "/lver/<table>": the same for
 *     "/long/<table>", keyed by the LMDB key of the long record.  So
 *     the table's database holds only the values (mdb_dump shows them
 *     plain, deadlines or not).  A record already expired when the
 *     checkpoint reads it is not written (to the engine it is absent:
 *     a delete); one that expires after is loaded with its deadline,
 *     absent to every read, and removed by the sweep (a logged
 *     delete).  A table without "/ver/" was
 *     written before versions (format 1): its records load with version
 *     0 (the caller's fallback) and it must be written whole (reset)
 *     before a put or delete;
 *   - "/meta": "lsn" -> u64 LE, the checkpoint LSN; "format" -> u32 LE 4
 *     (3: before table flags, 2: before deadlines and default TTLs, 1:
 *     before versions, all still read; a commit writes 4); "version" ->
 *     u64 LE, the owner's version counter (tdbo_version_last) when the
 *     checkpoint was written: every version given before is <= it;
 *     "table/<name>" -> struct ckpt_table_rec (little-endian fields:
 *     u64 id, u32 uid, gid, mode, max_extents, sync, u64 default TTL
 *     in ms, u64 max_bytes, u64 max_records, u32 evict, u32 flags
 *     (TDB_TABLE_F_*: TDB_TABLE_F_ORDERED for an ordered table): 60
 *     bytes; 56, without flags (a hash table), in format 3; 28, without
 *     the last five, before format 3), one per table present
 *     at the checkpoint; "aside/<name>" -> u64 LE,
 *     for a table tdbd set aside (it could not be restored at a start):
 *     the LSN its databases here are as of.  Its changes are the WAL
 *     records after that LSN, which may be before the checkpoint LSN;
 *     its databases are not written while it is set aside.
 *
 * A checkpoint is one LMDB write transaction: either all of it (records,
 * drops, schemas and the LSN) is there after a crash, or none of it.
 *
 * Functions never print or exit; they return 0 or a negative errno and,
 * where they take one, fill err with what went wrong ("checkpoint
 * /var/lib/tdb/checkpoint: mdb_env_open: Permission denied").
 */
#ifndef TDBD_CKPT_H
#define TDBD_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ckpt;
struct ckpt_txn;

/* A table's schema as the checkpoint keeps it. */
struct ckpt_table {
	char name[65];          /* NUL-terminated, 1..64 bytes */
	uint64_t id;            /* tdbd's table id: a new id = a new table */
	uint32_t uid, gid, mode;
	uint32_t max_extents;
	uint32_t sync;          /* enum tdbd_sync of the table */
	uint64_t default_ttl;   /* ms, 0 = none (TABLE_CREATE's TTL) */
	uint64_t max_bytes, max_records;        /* 0 = no bound */
	uint32_t evict;         /* TDB_EVICT_* */
	uint32_t flags;         /* TDB_TABLE_F_*: an ordered table (0 in a
				 * store before format 4) */
	/* set aside ("aside/<name>"): its data here is as of LSN `from`,
	 * its changes are the WAL records after it */
	bool aside;
	uint64_t from;
};

/* Open (creating if needed) <dir>/checkpoint. */
int tdbd_ckpt_open(const char *dir, struct ckpt **out, char *err,
		   size_t errlen);
void tdbd_ckpt_close(struct ckpt *ck);

/* The checkpoint LSN (0 for an empty store) and the tables in it (a
 * malloc'd array the caller frees; *n may be 0). */
int tdbd_ckpt_read_meta(struct ckpt *ck, uint64_t *lsn,
			struct ckpt_table **tabs, unsigned int *n,
			char *err, size_t errlen);

/* The "version" of /meta (0 if none: a store from before versions, or
 * no checkpoint yet). */
int tdbd_ckpt_read_version(struct ckpt *ck, uint64_t *version, char *err,
			   size_t errlen);

/* Call fn for every record of the table (short and long keys) with its
 * deadline (0: none) and version (0 for every record of a table
 * written before versions: then
 * *versioned, if not NULL, is false); stops at the first non-zero
 * return of fn and returns it.  A versioned table whose "/ver/" or
 * "/lver/" does not hold exactly its keys, each with a u64 not 0, is
 * -EUCLEAN. */
typedef int (*ckpt_record_fn)(void *arg, const void *key, size_t klen,
			      const void *val, size_t vlen,
			      uint64_t version, uint64_t deadline);
int tdbd_ckpt_load_table(struct ckpt *ck, const char *name,
			 ckpt_record_fn fn, void *arg, bool *versioned,
			 char *err, size_t errlen);

/* Writing a checkpoint: begin, any number of changes, commit or abort. */
int tdbd_ckpt_begin(struct ckpt *ck, struct ckpt_txn **out, char *err,
		    size_t errlen);
/* Make the table's databases ("/ver/" and "/lver/" too) exist and be
 * empty (a new or rewritten table). */
int tdbd_ckpt_reset_table(struct ckpt_txn *tx, const char *name);
/* Remove the table's databases, schema and set-aside mark. */
int tdbd_ckpt_drop_table(struct ckpt_txn *tx, const char *name);
/* A record and its version (not 0: -EINVAL). */
int tdbd_ckpt_put(struct ckpt_txn *tx, const char *name, const void *key,
		  size_t klen, const void *val, size_t vlen, uint64_t version);
/* The same for a record that expires at deadline (ms since the epoch;
 * 0: never, tdbd_ckpt_put's). */
int tdbd_ckpt_put_dl(struct ckpt_txn *tx, const char *name,
		     const void *key, size_t klen, const void *val,
		     size_t vlen, uint64_t version, uint64_t deadline);
/* Deleting a key that is not there is not an error.  Its version goes
 * with it. */
int tdbd_ckpt_del(struct ckpt_txn *tx, const char *name, const void *key,
		  size_t klen);
/* Store the schema of a table (replacing the one there) and its
 * set-aside mark (t->aside, t->from; removed if not aside). */
int tdbd_ckpt_set_table(struct ckpt_txn *tx, const struct ckpt_table *t);
/* The owner's version counter ("version" in /meta), to be committed. */
int tdbd_ckpt_set_version(struct ckpt_txn *tx, uint64_t version);
/* Set the LSN (and the format, 4), commit (fsync'd by LMDB) and free tx. */
int tdbd_ckpt_commit(struct ckpt_txn *tx, uint64_t lsn, char *err,
		     size_t errlen);
void tdbd_ckpt_abort(struct ckpt_txn *tx);
/* Why tx failed (the first failure's text, naming the store and the
 * table), or "" while it has not. */
const char *tdbd_ckpt_txn_error(const struct ckpt_txn *tx);

/*
 * tdbd_ckpt_put for keys that come in ascending order (LMDB's default
 * order: memcmp, then the shorter first) into a table reset in this
 * transaction: written with MDB_APPEND, which fills each page and never
 * searches the tree.  A key not after the one before fails the
 * transaction (-EINVAL).  Keys longer than LMDB's limit go to
 * "/long/<table>" as with tdbd_ckpt_put (their LMDB keys are in hash
 * order; they are rare).
 */
int tdbd_ckpt_append(struct ckpt_txn *tx, const char *name, const void *key,
		     size_t klen, const void *val, size_t vlen,
		     uint64_t version);
int tdbd_ckpt_append_dl(struct ckpt_txn *tx, const char *name,
			const void *key, size_t klen, const void *val,
			size_t vlen, uint64_t version, uint64_t deadline);

/* How big the store is and how much of it holds data. */
struct ckpt_space {
	uint64_t file_bytes;    /* data.mdb */
	uint64_t used_bytes;    /* pages in use: up to LMDB's last page,
				 * less those on its free list */
	uint32_t page_size;
};
int tdbd_ckpt_space(struct ckpt *ck, struct ckpt_space *sp, char *err,
		    size_t errlen);

/*
 * Rewrite data.mdb without its free pages (LMDB's file never shrinks):
 * a compacted copy is written beside it, fsync'd, renamed over it and
 * the directory fsync'd; the env is reopened on it.  Needs room for the
 * copy (the used pages).  Not while a transaction of ck is open (it
 * takes ck->lock).  On failure the store is the old one, or the new one
 * if only the directory fsync or the reopen failed; after a failed
 * reopen the next call that needs the env tries again.
 */
int tdbd_ckpt_compact(struct ckpt *ck, char *err, size_t errlen);

#endif
