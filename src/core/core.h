/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * core.h - the tdb engine: named tables of key/value records.
 *
 * An engine (struct tdbe_engine) owns a set of named tables.  Each table
 * lives in its own region: up to max_extents extents of 2 MiB, backed by
 * hugetlb pages when the host has them, else 4 KiB pages (see
 * tdbe_table_stat()).  Everything inside a region is addressed by byte
 * offsets from the region start, never by pointers, so a region can be
 * mapped read-only at any address in another process and walked there
 * (tdbe_view_*).
 *
 * Concurrency rules:
 *  - Readers (tdbe_get, tdbe_lookup, cursors) never block and never see a
 *    torn or half-written record: records are immutable once published,
 *    a replace publishes a new record, and memory is reused only after an
 *    RCU grace period.
 *  - Writers (put, del) to one table are serialised by a per-table mutex;
 *    writers to different tables run in parallel.  A writer may wait for a
 *    grace period, so it must not be called inside tdbe_read_lock().
 *  - Table create/drop/open are serialised by the engine's mutex.
 *
 * Errors are negative errno values; tdbe_strerror() names them, and
 * functions taking a struct tdbe_extack * also leave a static message
 * saying exactly what was wrong (the netlink extended-ack idea).
 */
#ifndef TDB_CORE_CORE_H
#define TDB_CORE_CORE_H

#include "platform.h"

#include "view.h"                /* key and value limits, extack, views */

/* Limits.  Anything beyond them is refused (-ENAMETOOLONG for a long
 * table name), never truncated; keys and values: view.h. */
#define TDBE_NAME_MAX       64u              /* table name, bytes, no NUL */
#define TDBE_EXTENTS_MAX    32768u           /* 64 GiB per table */
#define TDBE_EXTENTS_DEFAULT 512u            /* 1 GiB per table */


struct tdbe_engine;
struct tdbe_table;

struct tdbe_table_opts {
	unsigned int max_extents;   /* size cap; 0 = TDBE_EXTENTS_DEFAULT */
	unsigned int flags;         /* TDBE_TABLE_*, fixed at create */
};
/* The table also keeps its keys in order (layout.h, "ordered index"):
 * cursors walk it in key order and take ranges (tdbe_cursor_range). */
#define TDBE_TABLE_ORDERED 1u
#define TDBE_TABLE_FLAGS_ALL TDBE_TABLE_ORDERED

struct tdbe_table_stat {
	uint64_t records;           /* keys present */
	uint64_t bytes_used;        /* key + value bytes of those records */
	uint64_t bytes_allocated;   /* allocator bytes in use (records, index) */
	uint64_t bytes_pending;     /* freed, waiting for a grace period */
	uint32_t extents;           /* extents backed now */
	uint32_t max_extents;       /* the cap */
	uint64_t page_size;         /* 2097152 (hugetlb) or 4096 */
	uint64_t index_nodes;       /* bucket pages of the hash index */
	uint64_t index_buckets;     /* its overflow buckets */
	uint64_t expiring;          /* records with a deadline (expired
				     * ones included until removed) */
	unsigned int flags;         /* TDBE_TABLE_* it was created with */
	uint64_t order_nodes;       /* nodes of the ordered index */
};

/* --- engine and tables ---------------------------------------------- */
struct tdbe_engine *tdbe_engine_new(int *err);
/* Frees every table; no handle may be in use. */
void tdbe_engine_free(struct tdbe_engine *e);
/* The engine's log lines a client can provoke (a table created) are
 * rate limited: write the count of those suppressed in a window that is
 * over (platform.h, tdbp_log_rl_flush).  Never sleeps. */
void tdbe_engine_log_flush(struct tdbe_engine *e);

/* -EEXIST if the name is taken, -ENAMETOOLONG for a name over
 * TDBE_NAME_MAX, -EINVAL for another bad name (empty, a space, a control
 * character or '/') or a bad option. */
int tdbe_table_create(struct tdbe_engine *e, const char *name,
		      const struct tdbe_table_opts *opts,
		      struct tdbe_extack *ext);
/*
 * Remove the name at once; the table's memory is released when the last
 * handle is closed and readers are gone.  Handles still open keep
 * working on the dropped table.  -ENOENT if there is no such table.
 */
int tdbe_table_drop(struct tdbe_engine *e, const char *name,
		    struct tdbe_extack *ext);
/* A counted handle; -ENOENT if there is no such table. */
int tdbe_table_open(struct tdbe_engine *e, const char *name,
		    struct tdbe_table **out, struct tdbe_extack *ext);
void tdbe_table_close(struct tdbe_table *t);
/* Calls fn for each table in creation order; stops if fn returns non-0
 * and returns that value. */
int tdbe_table_list(struct tdbe_engine *e,
		    int (*fn)(void *arg, const char *name,
			      const struct tdbe_table_stat *st),
		    void *arg);
void tdbe_table_stat(struct tdbe_table *t, struct tdbe_table_stat *st);

/* Where the table's backed pages go (src/core/alloc.c), for measuring
 * memory per record: walks every extent under the table's write lock, so
 * it takes time in proportion to the table's size. */
struct tdbe_alloc_stat {
	uint64_t pages_backed;      /* 4 KiB pages of the backed extents */
	uint64_t pages_header;      /* page 0 of each: region/extent header */
	uint64_t pages_free;        /* backed and not in a slab or run */
	uint64_t slabs, slab_pages; /* slabs of small objects */
	uint64_t partial_slabs;     /* slabs with a free object */
	uint64_t slab_headers;      /* bytes: 64 at each slab's start */
	uint64_t slab_tails;        /* bytes at a slab's end, too few for an
				     * object of its class */
	uint64_t slab_free;         /* bytes of free objects in slabs */
	uint64_t slab_used;         /* bytes of objects given out (their
				     * class's size) */
	uint64_t runs, run_pages;   /* objects over 32 KiB: page runs */
};
void tdbe_table_alloc_stat(struct tdbe_table *t, struct tdbe_alloc_stat *st);
const char *tdbe_table_name(const struct tdbe_table *t);
/* Created with TDBE_TABLE_ORDERED. */
bool tdbe_table_ordered(const struct tdbe_table *t);
/*
 * For mapping the table elsewhere (tdbe_view_*); -1 if none.  The
 * descriptor can change: a table on hugepages whose pool runs dry moves
 * to 4 KiB pages in a new memfd (stat.page_size becomes 4096) and the old
 * one is closed, so a mapping of the old descriptor stops seeing changes
 * from then on.  Re-fetch it after such a move (today only
 * tests/test_view.c maps it, on a table that is not changing).
 */
int tdbe_table_fd(const struct tdbe_table *t);
/* The table's region, for a home's own region calls (tdbd: a read-only
 * descriptor of it, tdbp_region_ro_fd in src/platform/user.h). */
const struct tdbp_region *tdbe_table_region(const struct tdbe_table *t);

/*
 * Readers in other processes (zero-copy maps of the region, through
 * tdbe_view_*) follow what the owner publishes in the region header:
 * the table's commit seqcount (odd while a commit applies to it; the
 * owner calls publish with each value it stores in its own count, under
 * the table's lock), and map_gen, bumped when existing maps must no
 * longer be used (the table is dropped).
 */
void tdbe_table_publish_seq(struct tdbe_table *t, uint64_t seq);
/* The region header's reader_flags (layout.h, TDB_HDR_F_*):
 * TDBE_READER_TOUCH = TDB_HDR_F_TOUCH. */
#define TDBE_READER_TOUCH 1u
void tdbe_table_reader_flags(struct tdbe_table *t, uint32_t flags);
void tdbe_table_revoke_maps(struct tdbe_table *t);
uint32_t tdbe_table_map_gen(const struct tdbe_table *t);
/* The region's cap in extents (a map's length). */
uint32_t tdbe_table_max_extents(const struct tdbe_table *t);
/*
 * The owner's address of extent idx of the region, or NULL when it is
 * not backed (idx at or past the header's nextents, read with acquire):
 * for a home that maps the region into clients itself (tdb.ko's /dev/tdb
 * fault handler).  Valid while the caller holds the table.
 */
const void *tdbe_table_extent(const struct tdbe_table *t, uint32_t idx);
/*
 * Memory a writer frees is reused only after a grace period: every
 * read-side section of this process that could see it has ended
 * (tdbp_rcu_synchronize), and then fn(arg) has returned, which waits for
 * readers the engine cannot see (the owner's mapped readers).  Set once,
 * before any table changes; fn may sleep.
 */
void tdbe_engine_set_grace(struct tdbe_engine *e, void (*fn)(void *arg),
			   void *arg);

/* --- expiry ------------------------------------------------------------
 * A record may carry a deadline: ms of the wall clock since the Unix
 * epoch (layout.h, TDB_REC_F_DEADLINE).  From that millisecond on it is
 * absent to every read of the engine (lookups, gets, cursors), to a
 * no-overwrite put (which may then replace it) and to tdbe_del; its
 * memory comes back when a write replaces it or the owner's sweep
 * removes it (tdbe_cursor_expired, tdbe_del_ex with TDBE_DEL_EXPIRED).
 * The clock is tdbp_realtime_ms() unless a test sets its own (tests
 * only: a home never does); it is read only when a record that has a
 * deadline is met.
 */
void tdbe_engine_set_clock(struct tdbe_engine *e, uint64_t (*now)(void *arg),
			   void *arg);
uint64_t tdbe_engine_now_ms(const struct tdbe_engine *e);
uint64_t tdbe_table_now_ms(const struct tdbe_table *t);

/* --- records --------------------------------------------------------- */
enum {
	TDBE_NOOVERWRITE = 1u << 0,  /* put fails with -EEXIST if key exists */
	TDBE_ACCESS      = 1u << 1,  /* the record keeps an access word */
};
enum {
	TDBE_DEL_EXPIRED = 1u << 0,  /* del only an expired record (sweep) */
	TDBE_DEL_ANY     = 1u << 1,  /* del the record, expired or not
				      * (replay: the log says it went) */
};

/*
 * Insert or replace.  -EINVAL/-E2BIG for keys or values out of limits,
 * -EEXIST with TDBE_NOOVERWRITE, -ENOSPC when the table is at its cap
 * (the table is unchanged and stays usable), -ENOMEM when the host is out
 * of memory.
 */
int tdbe_put(struct tdbe_table *t, const void *key, size_t klen,
	     const void *val, size_t vlen, unsigned int flags,
	     struct tdbe_extack *ext);
/* The same, the record carrying `version` (layout.h, struct tdb_rec;
 * tdbe_put writes 0): the owner's version of this write. */
int tdbe_put_ver(struct tdbe_table *t, const void *key, size_t klen,
		 const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, struct tdbe_extack *ext);
/* The same, the record expiring at deadline (ms since the epoch; 0 =
 * never).  A deadline already past makes a record that no read sees. */
int tdbe_put_ex(struct tdbe_table *t, const void *key, size_t klen,
		const void *val, size_t vlen, unsigned int flags,
		uint64_t version, uint64_t deadline, struct tdbe_extack *ext);
/* The same, with TDBE_ACCESS in flags: the record has an access word
 * (layout.h, TDB_REC_F_ACCESS) starting at `access`. */
int tdbe_put_acc(struct tdbe_table *t, const void *key, size_t klen,
		 const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, uint64_t deadline, uint32_t access,
		 struct tdbe_extack *ext);
/* 0 if deleted, -ENOENT if absent (an expired record is). */
int tdbe_del(struct tdbe_table *t, const void *key, size_t klen,
	     struct tdbe_extack *ext);
/* With TDBE_DEL_EXPIRED: remove the record only if it has expired (the
 * owner's sweep, which must not take a record written again since it
 * looked); -ENOENT if there is none or it has not.  With TDBE_DEL_ANY:
 * remove it whether it has expired or not (replay of a logged DEL: an
 * expired record the sweep removed must not stay behind). */
int tdbe_del_ex(struct tdbe_table *t, const void *key, size_t klen,
		unsigned int flags, struct tdbe_extack *ext);
/*
 * Copy the value out.  Returns the value length (>= 0); -ENOENT if absent;
 * -ENOBUFS if cap is too small, with *need set to the length.
 */
long tdbe_get(struct tdbe_table *t, const void *key, size_t klen,
	      void *buf, size_t cap, size_t *need);
/* The same, and the record's version in *version (if not NULL). */
long tdbe_get_ver(struct tdbe_table *t, const void *key, size_t klen,
		  void *buf, size_t cap, size_t *need, uint64_t *version);
/* The same, and its deadline in *deadline (0: none; if not NULL). */
long tdbe_get_ex(struct tdbe_table *t, const void *key, size_t klen,
		 void *buf, size_t cap, size_t *need, uint64_t *version,
		 uint64_t *deadline);

/*
 * Zero-copy lookup: between tdbe_read_lock() and tdbe_read_unlock() the
 * returned pointers stay valid (the record may be replaced or deleted
 * meanwhile; the caller keeps seeing the old one).  0 or -ENOENT.
 */
void tdbe_read_lock(void);
void tdbe_read_unlock(void);
int tdbe_lookup(struct tdbe_table *t, const void *key, size_t klen,
		const void **val, size_t *vlen);
int tdbe_lookup_ver(struct tdbe_table *t, const void *key, size_t klen,
		    const void **val, size_t *vlen, uint64_t *version);
int tdbe_lookup_ex(struct tdbe_table *t, const void *key, size_t klen,
		   const void **val, size_t *vlen, uint64_t *version,
		   uint64_t *deadline);

/*
 * Many lookups at once, inside tdbe_read_lock(): the same answers as
 * calling tdbe_lookup() on each, faster because the cache misses of the
 * n walks overlap instead of following one another.  Sets each req's
 * err (0, -ENOENT, -EINVAL, -E2BIG) and val/vlen; returns how many were
 * found.  Any n works; they are walked TDBE_LOOKUP_GROUP at a time.
 */
#define TDBE_LOOKUP_GROUP 16u
struct tdbe_lookup_req {
	const void *key;
	size_t klen;
	const void *val;            /* out */
	size_t vlen;                /* out */
	uint64_t version;           /* out: the record's version */
	uint64_t deadline;          /* out: its deadline, 0 = none */
	int err;                    /* out */
};
unsigned int tdbe_lookup_many(struct tdbe_table *t,
			      struct tdbe_lookup_req *req, unsigned int n);

/* --- eviction ----------------------------------------------------------
 * The owner's eviction (src/owner/evict.c) keeps an access word in the
 * records of tables with an LRU or LFU policy and picks victims from
 * random samples.
 *
 * tdbe_rec_access: the access word of the record whose value a lookup
 * returned at val (its key klen bytes long), or NULL if it has none;
 * valid, like val, inside the read-side section.  The owner updates it
 * with relaxed stores; nobody else writes it.
 *
 * tdbe_sample: a record of t picked with the random rnd (another rnd,
 * most likely another record; records in sparse buckets are likelier),
 * its key copied into keybuf (TDBE_KEY_MAX bytes); -ENOENT if the walk
 * found none (an empty table, or holes: try another rnd).  Expired
 * records are returned too (expired set).  For a writer of t.
 */
struct tdbe_sample {
	const void *key;
	size_t klen;
	uint64_t version, deadline;
	uint32_t access;
	bool has_access, expired;
};
uint32_t *tdbe_rec_access(const void *val, size_t klen);
/* Each record of t whose key's hash is `hash` (by its index tag: one
 * that only shares the tag's 24 bits is called too) and that has an
 * access word: fn(arg, word).  Inside tdbe_read_lock().  How many. */
unsigned int tdbe_touch_hash(struct tdbe_table *t, uint64_t hash,
			     void (*fn)(void *arg, uint32_t *word), void *arg);
/* Free now what deletes left waiting for a grace period (they are
 * freed in batches as writes go on; a table no one writes any more
 * keeps its last batch otherwise): the expiry sweep at the end of a
 * pass.  Waits for the grace period (may sleep). */
void tdbe_table_reclaim(struct tdbe_table *t);
/* The key has a record that has expired (absent to readers, there until
 * the sweep or a write removes it). */
bool tdbe_expired(struct tdbe_table *t, const void *key, size_t klen);
int tdbe_sample(struct tdbe_table *t, uint64_t rnd, void *keybuf,
		struct tdbe_sample *out);

/* --- cursors ----------------------------------------------------------
 * A cursor walks a whole table in hash order, or an ordered table
 * (TDBE_TABLE_ORDERED) in key order (LMDB's: tdbe_key_order).  Every key present for the
 * whole walk is returned exactly once, whatever writers do meanwhile;
 * keys inserted or deleted during the walk may or may not be returned.
 * The cursor copies each record into its own buffer: the pointers it
 * returns stay valid until the next call.  A cursor holds no lock between
 * calls and may be used from any single thread at a time.
 */
struct tdbe_cursor;
struct tdbe_cursor *tdbe_cursor_open(struct tdbe_table *t, int *err);
/* 1 and a record; 0 at the end; -ENOMEM if a buffer cannot grow. */
int tdbe_cursor_next(struct tdbe_cursor *c, const void **key, size_t *klen,
		     const void **val, size_t *vlen);
/* The same, and the record's version in *version (if not NULL). */
int tdbe_cursor_next_ver(struct tdbe_cursor *c, const void **key,
			 size_t *klen, const void **val, size_t *vlen,
			 uint64_t *version);
/* The same, and its deadline in *deadline (0: none; if not NULL). */
int tdbe_cursor_next_ex(struct tdbe_cursor *c, const void **key,
			size_t *klen, const void **val, size_t *vlen,
			uint64_t *version, uint64_t *deadline);
void tdbe_cursor_close(struct tdbe_cursor *c);
/*
 * Up to max records at once (at most TDBE_CURSOR_MANY): the records
 * that as many tdbe_cursor_next calls would return, in the same order,
 * had no writer run between them, so the guarantees above hold for a
 * walk made of any mix of the two calls.  Taken in one read-side
 * section, a whole index bucket at a time (it may return fewer than
 * max before the end).  Each out[i] points into the cursor's buffer,
 * valid until the cursor's next call.  With TDBE_CURSOR_KEYS only keys
 * are copied (val is NULL, vlen is still the value's length).  Returns
 * how many (>= 1); 0 at the end; -ENOMEM if a buffer cannot grow.
 */
#define TDBE_CURSOR_MANY 256u
enum {
	TDBE_CURSOR_KEYS = 1u << 0,
};
struct tdbe_cursor_rec {
	const void *key, *val;
	size_t klen, vlen;
	uint64_t version;           /* the record's (struct tdb_rec) */
	uint64_t deadline;          /* its deadline, 0 = none */
};
int tdbe_cursor_next_many(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
			  unsigned int max, unsigned int flags);
/*
 * The sweep's walk: visit up to max records (at most TDBE_CURSOR_MANY)
 * from the cursor's place, expired or not, and return the keys of those
 * expired at now_ms in out (val NULL; deadline set), how many (0 when
 * none of those visited had expired); *visited gets how many were
 * visited, 0 at the end of the table.  The cursor goes past every
 * record visited.  -ENOMEM if a buffer cannot grow.  Plain cursor calls
 * skip expired records; this one returns only them.
 */
int tdbe_cursor_expired(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
			unsigned int max, uint64_t now_ms,
			unsigned int *visited);
/* Back to the start of the table (the sweep's next pass). */
void tdbe_cursor_rewind(struct tdbe_cursor *c);
/* Go on after `key` (present or not): the next tdbe_cursor_next returns
 * the record after it in the cursor's order, so a walk can be resumed
 * in a new cursor from the last key returned.  -EINVAL/-E2BIG for a key
 * out of limits, -ENOMEM. */
int tdbe_cursor_seek(struct tdbe_cursor *c, const void *key, size_t klen);
/* The cursors' order of two keys of table t (hash order, or key order
 * in an ordered table): < 0, 0 or > 0 as a comes
 * before b, is b, or comes after it (tdbe_cursor_next returns records
 * in increasing order).  For a caller that must tell whether a walk has
 * already gone past a key (tdbd's snapshots).  Any key lengths. */
int tdbe_key_order(const struct tdbe_table *t, const void *a, size_t alen,
		   const void *b, size_t blen);

/*
 * Ranges (ordered tables only): the walk returns the keys of r (view.h,
 * struct tdbe_range: bounds and direction; the bounds' bytes are
 * copied) in key order, or in reverse with TDBE_RANGE_REVERSE, and
 * rewinds to the range's first key in that direction.  The guarantee
 * above holds for the range.  tdbe_cursor_seek then goes on after the
 * key in the walk's direction.  -EOPNOTSUPP on a hash table (its
 * cursors walk in hash order only), -EINVAL/-E2BIG for a bound out of
 * the key limits, -ENOMEM.  A range whose from is after its to is
 * empty.
 */
int tdbe_cursor_range(struct tdbe_cursor *c, const struct tdbe_range *r);
/* The walk's order of two keys, as tdbe_key_order but for this cursor
 * (a reverse range walks backwards): < 0 when a comes first. */
int tdbe_cursor_order(const struct tdbe_cursor *c, const void *a,
		      size_t alen, const void *b, size_t blen);

/* --- views: a region mapped elsewhere: view.h (included above) ----- */

const char *tdbe_strerror(int err);

#endif
