/* SPDX-License-Identifier: MIT */
/*
 * tdb/client.h - libtdbclient, the client library of tdb.
 *
 * A client connects to the owner (tdbd over its Unix socket, or tdb.ko
 * through /dev/tdb: see tdbc_connect), gets a submission and a completion
 * ring in shared memory (tdb/ring.h) and sends requests of the tdb
 * protocol (tdb/proto.h) through them.  Clients that cannot map rings
 * (TDBC_NO_RINGS) send the same messages over the socket (tdbd) or
 * generic netlink (tdb.ko): slower, same semantics.
 *
 * Names: everything public starts with tdbc_ / TDBC_ (never tdb_, which
 * belongs to Samba's libtdb); the library is libtdbclient.so.1, the
 * pkg-config module tdbclient, the headers live in <tdb/...>.
 *
 * THREADS: a struct tdbc (a connection) and everything made from it
 * (tables, transactions, scans, watches) is used by one thread at a time;
 * threads that work in parallel open one connection each (a connection
 * costs two rings, 8 MiB of mostly untouched shared memory by default).
 * Different connections are independent.  A client that forks keeps its
 * connection in the parent only; the child must connect anew.
 *
 * ERRORS: functions return 0 (or a count or length) on success and a
 * negative errno on failure.  tdbc_strerror() names an errno;
 * tdbc_errmsg() gives the owner's extended-ack text for the last failure
 * on a connection ("no such table", "key is longer than 4096 bytes"...),
 * or the library's own explanation for a local failure.  Common errnos:
 *   -ENOENT   no such table / key          -EEXIST  key or table exists
 *   -EACCES   the table's mode forbids it  -ENOSPC  the table is full
 *   -E2BIG    key or value over its limit  -EINVAL  bad argument
 *   -ENOBUFS  value bigger than the buffer (see tdbc_get), or a buffer of
 *             the owner full (transaction memory; tdb.ko's change log)
 *   -ECONNREFUSED / -ENOENT (connect)  no daemon at the socket path
 *   -EACCES (connect)  the socket's mode or directory refuses the caller
 * tdbc_strerror's words for ENOENT and EACCES are about tables; for a
 * failed connect show tdbc_connect's errmsg ("cannot connect to tdbd at
 * PATH: no such socket (is tdbd running?)"), which says what to do.
 *   -EPIPE / -ECONNRESET  the daemon went away; the connection is dead
 *   -EPROTO   the daemon broke the protocol; the connection is dead
 *   -ETIMEDOUT  a wait with a timeout ran out
 */
#ifndef TDB_CLIENT_H
#define TDB_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tdb/proto.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct tdbc_req and tdbc_cqe have an anonymous union (C11, C++); GCC
 * and Clang accept it in older C modes too, and this keeps -pedantic
 * quiet there. */
#if defined(__GNUC__) && !defined(__cplusplus)
#define TDBC_ANON_UNION __extension__ union
#else
#define TDBC_ANON_UNION union
#endif

/* Where the library looks for tdbd when given no path: the environment
 * variable TDBC_SOCKET_ENV, else TDBC_SOCKET_DEFAULT. */
#define TDBC_SOCKET_DEFAULT "/run/tdb/tdbd.sock"
#define TDBC_SOCKET_ENV     "TDB_SOCKET"

struct tdbc;            /* a connection */
struct tdbc_table;      /* a table handle: a name bound to a connection */
struct tdbc_txn;        /* an open transaction */
struct tdbc_scan;       /* a scan in progress */
struct tdbc_watch;      /* a watch on a table's change feed */

/* --- connecting -------------------------------------------------------- */

#define TDBC_NO_RINGS  (1u << 0)  /* talk over the socket only (slow path) */
#define TDBC_KERNEL    (1u << 1)  /* use tdb.ko, never tdbd */

/* Chooses the backend (tdbd or tdb.ko): "kernel" or "daemon". */
#define TDBC_BACKEND_ENV    "TDB_BACKEND"

/*
 * Connect to the owner and attach rings (unless TDBC_NO_RINGS).  0 and
 * *out, or a negative errno; on failure *out is NULL and, if errmsg is
 * not NULL, a message saying what went wrong (naming the path) is copied
 * there (errmsg_size bytes, NUL-terminated).
 *
 * The owner is tdbd or tdb.ko (the kernel module); every call below
 * works the same with both.  Which one:
 *  - TDBC_KERNEL in flags, or $TDB_BACKEND = "kernel": tdb.ko, always
 *    (-ENOENT naming /dev/tdb when the module is not loaded);
 *  - $TDB_BACKEND = "daemon": tdbd at `path`;
 *  - any other non-empty $TDB_BACKEND: -EINVAL (so is TDBC_KERNEL with
 *    TDB_BACKEND=daemon);
 *  - otherwise tdb.ko when /dev/tdb exists and no socket was named
 *    (path NULL or "", $TDB_SOCKET unset or empty), else tdbd.
 * tdbd: `path` (NULL: $TDB_SOCKET, else the default) is its socket.
 * tdb.ko: `path` is not used; the rings come from /dev/tdb (TDB_IOC_ATTACH
 * in <tdb/kdev.h>), and with TDBC_NO_RINGS requests go over generic
 * netlink (family "tdb"), where tdbc_watch fails with -EOPNOTSUPP
 * (generic netlink clients follow changes through the family's
 * multicast group instead).
 */
int tdbc_connect(struct tdbc **out, const char *path, unsigned int flags,
		 char *errmsg, size_t errmsg_size);
/* Close the connection: tdbd aborts its open transactions and drops its
 * watches.  Handles made from it must be closed before (or are freed
 * here: tables, transactions, scans, watches that are still open). */
void tdbc_close(struct tdbc *c);

/* The socket path a connect with `path` would use. */
const char *tdbc_socket_path(const char *path);
/* The owner's message for the last failure on c ("" if none). */
const char *tdbc_errmsg(const struct tdbc *c);
/* strerror() for tdb's errnos (never NULL). */
const char *tdbc_strerror(int err);
/* Does the connection use rings (1) or the socket only (0)? */
int tdbc_uses_rings(const struct tdbc *c);

/* --- tables ------------------------------------------------------------ */

struct tdbc_table_opts {
	uint32_t max_extents;   /* size cap in 2 MiB extents; 0 = default */
	uint32_t mode;          /* permission bits; (uint32_t)-1 = default
				 * (0600) */
	uint32_t uid, gid;      /* owner; (uint32_t)-1 = the caller's
				 * (others: root only) */
	/* Since TDBCLIENT_1.1 (expiry): the table's default TTL in ms
	 * (1..TDB_TTL_MAX), given to every put that names no TTL or
	 * deadline of its own and to an incr of an absent key; 0 = none */
	uint64_t default_ttl;
	/* Since TDBCLIENT_1.1 (eviction): bounds on the table's key and
	 * value bytes (tdbc_table_stat.bytes_used) and on its records (0 =
	 * none), and what a write that would pass one does (TDBC_EVICT_*;
	 * not TDBC_EVICT_REFUSE without a bound: -EINVAL) */
	uint64_t max_bytes, max_records;
	uint32_t evict;
	/* Since TDBCLIENT_1.2 (ordered tables): TDBC_TABLE_* (0: a hash
	 * table), fixed at create */
	uint32_t flags;
};
/* tdbc_table_opts.flags: the table also keeps its keys in order
 * (bytewise, a shorter key before the longer ones it starts: LMDB's
 * order), so that scans take ranges (tdbc_scan_range, tdbc_map_range)
 * and return keys in that order.  Point operations cost a little more
 * than on a hash table.  Unknown bits: -EOPNOTSUPP from the owner. */
#define TDBC_TABLE_ORDERED TDB_TABLE_F_ORDERED
/* tdbc_table_opts.evict: the write fails with -ENOSPC naming the bound
 * (the default); the least recently used, least frequently used, or
 * soonest to expire records are removed (approximately: a few sampled,
 * the best of them evicted; watchers see a DEL with reason
 * TDBC_REASON_EVICTED).  TTL evicts only records with a deadline: with
 * none left, writes past the bound fail as under REFUSE. */
#define TDBC_EVICT_REFUSE TDB_EVICT_REFUSE
#define TDBC_EVICT_LRU    TDB_EVICT_LRU
#define TDBC_EVICT_LFU    TDB_EVICT_LFU
#define TDBC_EVICT_TTL    TDB_EVICT_TTL
/* Fill opts with the defaults. */
void tdbc_table_opts_init(struct tdbc_table_opts *opts);

/* opts NULL = defaults.  -EEXIST if it exists. */
int tdbc_table_create(struct tdbc *c, const char *name,
		      const struct tdbc_table_opts *opts);
int tdbc_table_drop(struct tdbc *c, const char *name);

struct tdbc_table_stat {
	char name[TDB_NAME_MAX + 1];
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size;     /* 2097152 (hugetlb) or 4096 */
	uint64_t index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	/* 0, or TDB_TABLE_SET_ASIDE: tdbd could not restore the table at
	 * its start; its data is kept on disk, every call on it but
	 * tdbc_table_drop fails with -EIO, and the figures above but
	 * max_extents, uid, gid and mode are 0 */
	uint32_t state;
	/* Since TDBCLIENT_1.1 (expiry): the default TTL in ms (0: none),
	 * the records that carry a deadline (expired ones included until
	 * the owner's sweep removes them), and the records removed by
	 * expiry since the owner started */
	uint64_t default_ttl, expiring, expired;
	/* Since TDBCLIENT_1.1 (eviction): the bounds (0: none), the policy
	 * (TDBC_EVICT_*) and the records evicted since the owner started */
	uint64_t max_bytes, max_records;
	uint32_t evict;
	uint64_t evicted;
	/* Since TDBCLIENT_1.2 (ordered tables): TDBC_TABLE_* the table was
	 * created with (0 from an owner without ordered tables) */
	uint32_t flags;
};
int tdbc_table_stat(struct tdbc *c, const char *name,
		    struct tdbc_table_stat *st);
/* Call fn for each table the caller may read; fn returns nonzero to
 * stop (that value is returned).  Returns 0 or a negative errno. */
typedef int tdbc_table_fn(void *arg, const struct tdbc_table_stat *st);
int tdbc_table_list(struct tdbc *c, tdbc_table_fn *fn, void *arg);

/* A handle names a table for the data calls below; opening checks that
 * the table exists and may be read (-ENOENT, -EACCES).  The handle stays
 * valid if the table is dropped (calls then fail with -ENOENT). */
int tdbc_table_open(struct tdbc *c, const char *name,
		    struct tdbc_table **out);
void tdbc_table_close(struct tdbc_table *t);
const char *tdbc_table_name(const struct tdbc_table *t);

/* --- data (blocking) ---------------------------------------------------
 * txn NULL: the operation stands alone (applied and visible when the call
 * returns).  With a transaction: buffered by the owner until commit; a
 * get inside the transaction sees the transaction's own changes.
 */

#define TDBC_NOOVERWRITE TDB_PUT_NOOVERWRITE   /* put: -EEXIST if present */
/* tdbc_put's flags: 0, TDBC_NOOVERWRITE (= TDBC_IF_ABSENT) or
 * TDBC_IF_PRESENT (below); TDBC_IF_VERSION takes tdbc_put_if. */

int tdbc_put(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	     size_t klen, const void *val, size_t vlen, unsigned int flags);
int tdbc_del(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	     size_t klen);
/*
 * Copy the value into buf (cap bytes).  Returns the value's length; if
 * that is more than cap, returns -ENOBUFS and sets *need (if not NULL) to
 * the length, and buf holds nothing useful.  -ENOENT if absent.
 */
long tdbc_get(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	      size_t klen, void *buf, size_t cap, size_t *need);
/* The same into a malloc()ed buffer the caller frees. */
long tdbc_get_alloc(struct tdbc_table *t, struct tdbc_txn *txn,
		    const void *key, size_t klen, void **val);

/* --- versions, conditions, atomic updates -------------------------------
 * Every record carries a version: a 64-bit number that changes on every
 * write of its key and never repeats for it, kept across restarts (0 is
 * never a version).  docs/PROTOCOL.md, "Versions and conditions".
 *
 * Conditional writes (flags; in a transaction checked at commit):
 *   TDBC_IF_ABSENT   put only if the key is absent, else -EEXIST
 *                    (the same bit as TDBC_NOOVERWRITE)
 *   TDBC_IF_PRESENT  put only if the key is present, else -ENOENT
 *   TDBC_IF_VERSION  put/del only if the key is at `version`, else
 *                    -ECANCELED (tdbc_errmsg says the version it is at,
 *                    or that it is absent)
 * A failed condition changes nothing.  One condition at most (a del
 * takes TDBC_IF_VERSION only), TDBC_IF_VERSION with a version not 0:
 * else -EINVAL before anything is sent.  flags 0: tdbc_put, tdbc_del.
 */
#define TDBC_IF_ABSENT   TDB_PUT_IF_ABSENT
#define TDBC_IF_PRESENT  TDB_PUT_IF_PRESENT
#define TDBC_IF_VERSION  (1u << 16)
int tdbc_put_if(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, const void *val, size_t vlen, unsigned int flags,
		uint64_t version);
int tdbc_del_if(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, unsigned int flags, uint64_t version);
/* tdbc_get, and the record's version in *version (if not NULL).  In a
 * transaction, a key the transaction wrote has no version yet: 0. */
long tdbc_get_ver(struct tdbc_table *t, struct tdbc_txn *txn,
		  const void *key, size_t klen, void *buf, size_t cap,
		  size_t *need, uint64_t *version);
/*
 * Add delta to the key's value, a signed 64-bit integer in decimal
 * ASCII ("42", "-7"; an absent key counts as 0), done by the owner in
 * one step: never a lost update.  *result (if not NULL) gets the new
 * value.  -EDOM: the value is not such an integer; -ERANGE: the sum
 * overflows; nothing is changed then.  In a transaction the key is read
 * (it joins the read set) and the sum is written at commit.
 */
int tdbc_incr(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	      size_t klen, int64_t delta, int64_t *result);

/* --- expiry (TDBCLIENT_1.1) ---------------------------------------------
 * A record may have a deadline: a time of the wall clock (CLOCK_REALTIME,
 * milliseconds since the Unix epoch, uint64_t) from which it is absent
 * to every read, gets, scans, transactions and zero-copy maps alike; the
 * owner then removes it (watchers see a DEL with reason
 * TDBC_REASON_EXPIRED).  A TTL is milliseconds from when the owner
 * applies the write, 1..TDB_TTL_MAX (10 years): 0 is -EINVAL, more is
 * -ERANGE, before anything is sent; so is a deadline of 0.  A deadline
 * further than TDB_TTL_MAX ahead is refused by the owner (-ERANGE); one
 * already past writes a record no read sees.  A put without a TTL or
 * deadline (tdbc_put, tdbc_put_if) gets the table's default TTL if it
 * has one (tdbc_table_opts.default_ttl), else none: a put replaces the
 * deadline with the value.  tdbc_incr keeps the key's deadline.
 * docs/PROTOCOL.md, "Expiry".
 */
/* tdbc_put_if with a TTL (ms) or an absolute deadline (ms since the
 * epoch); flags and version as tdbc_put_if's. */
int tdbc_put_ttl(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		 size_t klen, const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, uint64_t ttl_ms);
int tdbc_put_at(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, const void *val, size_t vlen, unsigned int flags,
		uint64_t version, uint64_t deadline_ms);
/* tdbc_get_ver, and the record's deadline in *deadline (if not NULL;
 * 0: it has none). */
long tdbc_get_ex(struct tdbc_table *t, struct tdbc_txn *txn,
		 const void *key, size_t klen, void *buf, size_t cap,
		 size_t *need, uint64_t *version, uint64_t *deadline);
/*
 * A present key's deadline, outside any transaction (-ENOENT if the key
 * is absent or expired).  tdbc_expire sets it to ttl_ms from now (the
 * owner's now; *deadline, if not NULL, gets the deadline it set),
 * tdbc_expire_at to deadline_ms, tdbc_persist clears it (the key no
 * longer expires); each is a write (write permission; a new version,
 * sent to watchers as a put of the same value).  tdbc_ttl only reads:
 * *deadline (if not NULL) the key's deadline, 0 if it has none (the TTL
 * left is *deadline minus CLOCK_REALTIME's now in ms), *version (if not
 * NULL) the record's version.
 */
int tdbc_expire(struct tdbc_table *t, const void *key, size_t klen,
		uint64_t ttl_ms, uint64_t *deadline);
int tdbc_expire_at(struct tdbc_table *t, const void *key, size_t klen,
		   uint64_t deadline_ms);
int tdbc_persist(struct tdbc_table *t, const void *key, size_t klen);
int tdbc_ttl(struct tdbc_table *t, const void *key, size_t klen,
	     uint64_t *deadline, uint64_t *version);

/* --- zero-copy reads ----------------------------------------------------
 * A connection with rings maps each table it opens and may read
 * read-only (tdbd passes a read-only descriptor of the table's memory,
 * tdb.ko maps it from /dev/tdb), and tdbc_get, tdbc_get_alloc and the
 * GETs of tdbc_submit without a transaction look keys up in that map:
 * no message, no system call.  Results are the same as through the
 * rings: a get sees every change acknowledged before it started, never
 * part of a transaction, never a value that was not written for the key.
 * Where there is no map (refused, TDBC_NO_MAP, no rings, a map gone
 * stale after a drop, a mode change or a move of the table's memory,
 * or a reader that overstayed tdbd's reader-lease), reads take the
 * rings, with the same results.  Mapped reads of a table bounded with
 * TDBC_EVICT_LRU or TDBC_EVICT_LFU are reported to the owner as uses: a
 * sample of 1 hit in 16 per table, 64 key hashes a TOUCH message sent
 * without waiting (its answer is dropped by the library; best effort: a
 * full ring drops the batch).  Docs: docs/ARCHITECTURE.md, "Zero-copy
 * reads".
 */
#define TDBC_NO_MAP     (1u << 2)  /* connect: never map tables */
#define TDBC_NO_MAP_ENV "TDBC_NO_MAP"  /* set, not "0": the same */
/* Is the table read through a map now (1) or through the rings (0)? */
int tdbc_table_mapped(const struct tdbc_table *t);
/*
 * Values in place.  Between tdbc_read_begin and tdbc_read_end,
 * tdbc_get_ref gives a pointer to the value (no copy) valid until
 * tdbc_read_end; tdbc_read_end returns 0, or -ESTALE: a table read
 * changed meanwhile, and every value the section saw must be discarded
 * and the section done again.  Keep sections short (microseconds):
 * while one is open tdbd waits for it before it reuses memory, at most
 * its reader-lease.  Inside a section, tdbc_get and tdbc_get_alloc
 * without a transaction are part of it (what they return is good only
 * if tdbc_read_end returns 0); make no other call on the connection
 * there, and open one section at a time.  A table that is not mapped
 * is read through the rings into a buffer kept until tdbc_read_end, so
 * the calls work everywhere.  tdbc_get_ref returns 0, -ENOENT or
 * another negative errno.
 */
int tdbc_read_begin(struct tdbc *c);
int tdbc_get_ref(struct tdbc_table *t, const void *key, size_t klen,
		 const void **val, size_t *vlen);
/* tdbc_get_ref and the record's version (read from the map in place). */
int tdbc_get_ref_ver(struct tdbc_table *t, const void *key, size_t klen,
		     const void **val, size_t *vlen, uint64_t *version);
int tdbc_read_end(struct tdbc *c);

/* --- transactions ------------------------------------------------------
 * A transaction collects puts and deletes over any tables of the
 * connection; commit applies all of them atomically: readers see all of
 * it or none of it, and if one change fails (e.g. -EEXIST of a
 * no-overwrite put, -ENOSPC) none is applied and commit returns that
 * error.  Abort (or close, or the client's death) discards it.  The
 * handle is freed by commit and abort whatever they return.
 */
int tdbc_txn_begin(struct tdbc *c, struct tdbc_txn **out);
int tdbc_txn_commit(struct tdbc_txn *txn);
int tdbc_txn_abort(struct tdbc_txn *txn);
/*
 * Transactions are serializable: every key read in the transaction
 * (tdbc_get, tdbc_incr; found or absent) is checked at commit, and if
 * another client changed one since, commit applies nothing and returns
 * -ESTALE (tdbc_errmsg names the table and key): run the transaction
 * again.  A transaction without changes commits too: 0 says its reads
 * were one consistent state.
 *
 * tdbc_txn_run does the retrying: it begins a transaction, calls
 * fn(txn, arg), commits, and on -ESTALE waits a little (exponential
 * backoff with jitter, 50 us doubling up to 20 ms) and runs fn again in
 * a new transaction, up to TDBC_TXN_RUN_TRIES times in all.  fn returns
 * 0 to commit, or a negative errno: the transaction is aborted and
 * tdbc_txn_run returns it (fn must not commit or abort txn itself).
 * Returns 0, fn's error, the commit's error, or -ESTALE after the last
 * try.  flags: 0.  fn may run several times: it must not have effects
 * outside the transaction that a retry would repeat.
 */
#define TDBC_TXN_RUN_TRIES 100
typedef int tdbc_txn_fn(struct tdbc_txn *txn, void *arg);
int tdbc_txn_run(struct tdbc *c, tdbc_txn_fn *fn, void *arg,
		 unsigned int flags);

/* --- scans -------------------------------------------------------------
 * Every key present for the whole scan is returned exactly once, in the
 * owner's order (not sorted).  A scan is not a snapshot: keys written
 * meanwhile may or may not appear (TDBC_SCAN_SNAPSHOT below makes one
 * that is).  prefix NULL/0 = all keys; limit 0 =
 * no limit.  Records are fetched in batches; the pointers next() gives
 * stay valid until the following next() or close.
 */
int tdbc_scan_open(struct tdbc_table *t, const void *prefix, size_t plen,
		   uint64_t limit, struct tdbc_scan **out);
/*
 * The same with options (flags 0: tdbc_scan_open).
 *
 * TDBC_SCAN_SNAPSHOT: the scan returns the table exactly as it was when
 * the scan was opened: every record present then, with the value it had
 * then, each once, and nothing written since, while writers go on (tdbd
 * keeps the old values of the keys changed meanwhile; docs/PROTOCOL.md,
 * "Snapshot scans").  Records come in no particular order.  Unlike a
 * plain scan it is one request whose answer is read as next() asks for
 * records, so:
 *  - memory stays small whatever the table's size, and tdbd waits for
 *    the reader; but a reader that stops calling next() for tdbd's
 *    client-deadline (10 s by default) is cut off (-ECONNRESET), as for
 *    any answer not taken;
 *  - one snapshot scan at a time per connection (-EBUSY); other calls
 *    may be made meanwhile on the same connection;
 *  - closing it before its end reads and drops the rest of the dump
 *    (close the connection instead to stop at once);
 *  - -ENOBUFS from next(): too many keys changed during the scan for
 *    tdbd's max-snapshot-bytes (the records already returned are not a
 *    snapshot of anything); -EOPNOTSUPP at open: a tdbd without
 *    snapshot scans.
 */
#define TDBC_SCAN_SNAPSHOT (1u << 0)
int tdbc_scan_open_flags(struct tdbc_table *t, const void *prefix,
			 size_t plen, uint64_t limit, unsigned int flags,
			 struct tdbc_scan **out);
/* 1 and a record, 0 at the end, or a negative errno. */
int tdbc_scan_next(struct tdbc_scan *s, const void **key, size_t *klen,
		   const void **val, size_t *vlen);
/* The same, and the record's version in *version (if not NULL). */
int tdbc_scan_next_ver(struct tdbc_scan *s, const void **key, size_t *klen,
		       const void **val, size_t *vlen, uint64_t *version);
/* The same, and the record's deadline in *deadline (if not NULL; 0: it
 * has none).  TDBCLIENT_1.1 (expiry). */
int tdbc_scan_next_ex(struct tdbc_scan *s, const void **key, size_t *klen,
		      const void **val, size_t *vlen, uint64_t *version,
		      uint64_t *deadline);
void tdbc_scan_close(struct tdbc_scan *s);

/* --- ranges of ordered tables (TDBCLIENT_1.2) ----------------------------
 * A range of keys of an ordered table (TDBC_TABLE_ORDERED), in key order
 * (bytewise, shorter first): from (NULL: the first key) to (NULL: past
 * the last key), from inclusive and to exclusive as LMDB users write
 * ranges, unless flags say otherwise; TDBC_RANGE_REVERSE walks it from
 * the top down.  The bounds are the range's whatever the direction: a
 * reverse walk of [from, to) starts at the last key before to.  A bound
 * is a key (1..TDB_KEY_MAX bytes; -EINVAL, -E2BIG otherwise); a from
 * after to is -EINVAL, from == to with one side exclusive an empty
 * range.  A hash table refuses ranges: -EOPNOTSUPP.  The bounds' bytes
 * are copied: the caller may reuse them once the call returns.
 */
#define TDBC_RANGE_FROM_EXCL (1u << 0)  /* from itself is not in it */
#define TDBC_RANGE_TO_INCL   (1u << 1)  /* to itself is */
#define TDBC_RANGE_REVERSE   (1u << 2)  /* from the top down */
struct tdbc_range {
	const void *from;       /* NULL: from the first key */
	size_t from_len;
	const void *to;         /* NULL: to past the last key */
	size_t to_len;
	unsigned int flags;     /* TDBC_RANGE_* */
};
/*
 * A scan of a range (as tdbc_scan_open_flags, records handed out by
 * tdbc_scan_next*): every key present for the whole scan that lies in
 * the range is returned exactly once, in the range's order, across
 * batches and concurrent writers (each batch goes on after the last key
 * of the one before).  limit 0 = no limit.  flags: 0 or
 * TDBC_SCAN_SNAPSHOT (the range as it was when the scan was opened,
 * in order; a snapshot's rules above).
 */
int tdbc_scan_range(struct tdbc_table *t, const struct tdbc_range *r,
		    uint64_t limit, unsigned int flags,
		    struct tdbc_scan **out);
/*
 * A read of a transaction: the range (r NULL: the whole table, of either
 * kind) as tdbc_scan_range reads it, checked again at commit, phantoms
 * included: if another client added, changed or deleted a key in the
 * span the scan walked (to the range's end, or to its last record when
 * limit stopped it) before the transaction commits, tdbc_txn_commit
 * applies nothing and returns -ESTALE.  The scan reads the table as
 * committed, not the transaction's own changes: a range in which the
 * transaction already wrote a key is refused (-EOPNOTSUPP: scan before
 * writing).  Read it to its end (or close it) before committing.
 */
int tdbc_scan_range_txn(struct tdbc_table *t, struct tdbc_txn *txn,
			const struct tdbc_range *r, uint64_t limit,
			struct tdbc_scan **out);
/* The same, asynchronous: tdbc_scan_submit's rules (flags 0). */
int tdbc_scan_submit_range(struct tdbc_table *t, const struct tdbc_range *r,
			   uint64_t limit, unsigned int flags, uint64_t user,
			   struct tdbc_scan **out);
/*
 * Walk a range of a mapped ordered table in place: fn(arg, key, klen,
 * val, vlen, version) for each record, in the range's order, up to
 * limit records (0: all); fn returns 0 to go on, anything else to stop
 * (tdbc_map_range then returns that).  Pointers are good only during
 * the call: fn runs inside a read section (keep it short, as a
 * tdbc_read_begin section) and must make no call on the connection.
 * The walk is cut into parts of a bounded number of records, each read
 * whole in one section and checked (as a mapped get is: no part of a
 * transaction, nothing torn) before fn sees any of it; a part that
 * fails the checks is thrown away and read again after the last key fn
 * saw.  So fn sees every key present throughout once, in order, never
 * one twice; the walk as a whole is not a snapshot.  A table that is
 * not mapped is walked through the rings (tdbc_scan_range), with the
 * same results.  Returns 0 at the range's end (or the limit), fn's
 * value, or a negative errno: -EOPNOTSUPP a hash table; -EBUSY inside
 * a tdbc_read_begin section; -ESTALE the owner stopped waiting for a
 * section while fn ran (it outlived tdbd's reader-lease): what fn saw
 * in that part may have been overwritten.
 */
typedef int tdbc_range_fn(void *arg, const void *key, size_t klen,
			  const void *val, size_t vlen, uint64_t version);
int tdbc_map_range(struct tdbc_table *t, const struct tdbc_range *r,
		   uint64_t limit, tdbc_range_fn *fn, void *arg);

/* --- watching ----------------------------------------------------------
 * Follow a table's change feed: every put, delete (and the table's drop)
 * from the moment of the watch on, for keys starting with prefix
 * (NULL/0: all).  Needs read permission.  The feed is a broadcast ring
 * the owner writes once for all watchers; a watcher that falls more
 * than a ring's worth behind gets -EOVERFLOW once, with the number of
 * changes it lost, and should resynchronise (e.g. by scanning) before
 * reading on.  Watchers never slow down writers.
 */
enum tdbc_event_kind {
	TDBC_EV_PUT = 1,
	TDBC_EV_DEL = 2,
	TDBC_EV_DROP = 3,       /* the table was dropped; the watch ends */
};
/* tdbc_event.reason of a DEL: the owner removed the key because its
 * deadline passed, or to keep its bounded table within its bound (0: a
 * client deleted it). */
#define TDBC_REASON_EXPIRED TDB_REASON_EXPIRED
#define TDBC_REASON_EVICTED TDB_REASON_EVICTED
struct tdbc_event {
	enum tdbc_event_kind kind;
	uint32_t seq;           /* the feed's sequence number */
	const void *key;        /* PUT, DEL */
	size_t klen;
	const void *val;        /* PUT */
	size_t vlen;
	uint64_t version;       /* PUT, DEL: the write's version (0 from
				 * an owner that sends none) */
	/* Since TDBCLIENT_1.1 (expiry): */
	uint64_t deadline;      /* PUT: the record's deadline (0: none) */
	uint32_t reason;        /* DEL: 0, TDBC_REASON_EXPIRED or
				 * TDBC_REASON_EVICTED */
};
int tdbc_watch(struct tdbc_table *t, const void *prefix, size_t plen,
	       struct tdbc_watch **out);
/*
 * The next change: 1 and *ev (pointers valid until the next call), 0 if
 * none came within timeout_ms (0: do not wait; < 0: wait for ever),
 * -EOVERFLOW once after the watcher was lapped (*lost, if not NULL, gets
 * the number of changes missed; 0 if unknown), -ENOENT after a DROP
 * event, or another negative errno.
 */
int tdbc_watch_next(struct tdbc_watch *w, struct tdbc_event *ev,
		    int timeout_ms, uint64_t *lost);
void tdbc_watch_close(struct tdbc_watch *w);

/* --- stats ------------------------------------------------------------- */

struct tdbc_stats {
	uint32_t tables, clients, watches, txns;
	uint64_t requests, errors, uptime_ms;
	uint64_t accepted, cleanups, txns_aborted, watches_dropped;
	uint32_t rings, throttled, dumps;
	uint64_t rings_freed, stuck, violations;
	/* durability: changes logged, the WAL's last written and durable
	 * LSNs, checkpoints done and failed, the last checkpoint's LSN */
	uint64_t wal_records, wal_lsn, wal_durable;
	uint64_t checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t tables_aside;  /* of `tables`, set aside at start */
	uint64_t wal_syncs;     /* WAL fdatasyncs since the start */
	uint64_t readers_expired;       /* read sections the owner stopped
					 * waiting for (reader-lease) */
	/* Since TDBCLIENT_1.1: records removed by expiry since the start
	 * (all tables) */
	uint64_t expired;
	/* Since TDBCLIENT_1.1: records evicted since the start (all
	 * tables) */
	uint64_t evicted;
};
int tdbc_stats(struct tdbc *c, struct tdbc_stats *st);

/* --- asynchronous API --------------------------------------------------
 * Queue many requests, send them with one publish (one wake-up at most),
 * then reap completions.  Requests on one connection complete in any
 * order; match them by `user`.  Blocking calls may be mixed in: they
 * keep the completions of queued requests for tdbc_reap.
 */
enum tdbc_op {
	TDBC_OP_GET = 1,
	TDBC_OP_PUT = 2,
	TDBC_OP_DEL = 3,
	TDBC_OP_COMMIT = 4,     /* txn: commit it (the handle is freed) */
	TDBC_OP_ABORT = 5,      /* txn: abort it (the handle is freed) */
	TDBC_OP_INCR = 6,       /* add `delta` (tdbc_incr) */
};
/* tdbc_req.flags of a PUT (TDBCLIENT_1.1): `expiry` is a TTL in ms
 * (TDBC_TTL) or a deadline in ms since the epoch (TDBC_DEADLINE), as
 * tdbc_put_ttl and tdbc_put_at; not both.  A library older than 1.1
 * refuses them (-EINVAL, unknown flags). */
#define TDBC_TTL         (1u << 17)
#define TDBC_DEADLINE    (1u << 18)
struct tdbc_req {
	enum tdbc_op op;
	struct tdbc_table *table;
	struct tdbc_txn *txn;   /* NULL: stands alone */
	const void *key;
	size_t klen;
	const void *val;        /* PUT */
	size_t vlen;
	unsigned int flags;     /* PUT: TDBC_IF_*; DEL: TDBC_IF_VERSION */
	uint64_t user;          /* handed back in the completion */
	uint64_t version;       /* PUT, DEL with TDBC_IF_VERSION */
	/* One of (the layout of TDBCLIENT_1, whose delta it was): */
	TDBC_ANON_UNION {
		int64_t delta;  /* INCR: the addend (0 adds nothing, so
				 * set it: the 1 of tdbc_incr is not a
				 * default here) */
		uint64_t expiry;        /* PUT with TDBC_TTL or
					 * TDBC_DEADLINE */
	};
};
struct tdbc_cqe {
	uint64_t user;
	int res;                /* 0 or a negative errno */
	const void *val;        /* GET: the value, valid until the next
				 * tdbc_reap or blocking call */
	size_t vlen;
	uint64_t version;       /* GET, INCR: the record's version */
	/* One of (the layout of TDBCLIENT_1, whose num it was): */
	TDBC_ANON_UNION {
		int64_t num;            /* INCR: the new value */
		uint64_t deadline;      /* GET: the record's deadline (0:
					 * none; TDBCLIENT_1.1) */
	};
};
/*
 * Queue n requests and publish them.  Returns how many were queued (all
 * or, when the submission ring or the owner's in-flight limit is full, a
 * prefix: reap and submit the rest), or a negative errno if none was.
 * The key and value bytes are copied: the caller may reuse them at once.
 */
int tdbc_submit(struct tdbc *c, const struct tdbc_req *reqs, unsigned int n);
/*
 * Reap up to n completions into cqes.  Waits up to timeout_ms (< 0: for
 * ever, 0: not at all) for at least min completions (min <= n).
 * Returns the number reaped (possibly 0 after a timeout) or a negative
 * errno.
 */
int tdbc_reap(struct tdbc *c, struct tdbc_cqe *cqes, unsigned int n,
	      unsigned int min, int timeout_ms);
/* Requests submitted and not reaped yet. */
unsigned int tdbc_inflight(const struct tdbc *c);

/* --- event loops (epoll, sd-event, libuv) ------------------------------
 * tdbc_fd: one descriptor that becomes readable (POLLIN) when
 * completions or watched changes wait; add it to the loop, then on
 * POLLIN call tdbc_reap(c, ..., 0, 0) and tdbc_watch_next(w, ..., 0, ...)
 * until they return nothing (0), and poll again: no wake-up is lost.
 * It may be readable when nothing waits (those calls then return 0).
 * The descriptor is the connection's: do not read or close it.
 * TDBC_OP_COMMIT/TDBC_OP_ABORT in tdbc_submit end a transaction
 * without waiting; tdbc_scan_submit runs a scan whose batches complete
 * through tdbc_reap.  tdbc_fd(3), tdbc_scan_submit(3).
 */
int tdbc_fd(struct tdbc *c);
/*
 * A scan (as tdbc_scan_open; flags: 0, TDBC_SCAN_SNAPSHOT is refused
 * with -EOPNOTSUPP) whose batches come as completions of `user`: res is
 * the number of records the batch brought (0 is possible before the
 * end) or a negative errno.  Then tdbc_scan_next hands out the records
 * and, when the batch is used up, asks for the next one and returns
 * -EAGAIN (wait for its completion), or 0 at the scan's end.
 */
int tdbc_scan_submit(struct tdbc_table *t, const void *prefix, size_t plen,
		     uint64_t limit, unsigned int flags, uint64_t user,
		     struct tdbc_scan **out);

#ifdef __cplusplus
}
#endif
#endif
