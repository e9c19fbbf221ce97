/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wal.h - the write-ahead log: segment files of checksummed records in
 * one directory, a group-commit flusher, and the reader recovery uses.
 *
 * Files.  <dir>/wal-<first LSN, 16 hex digits>.log.  A segment starts
 * with a 32-byte header (magic "TDBWAL01", version, first LSN, CRC32C of
 * the header) followed by records, each 8-byte aligned:
 *
 *   u32 crc     CRC32C of everything after this field up to len
 *   u32 len     bytes of the record from crc on (not counting padding)
 *   u64 lsn     log sequence number: the previous record's + 1, across
 *               segments; the first record of a log is the first LSN of
 *               its first segment
 *   u8  type    WAL_OPS_V, WAL_CREATE, WAL_DROP (WAL_OPS: read only)
 *   u8  pad[7]  zero
 *   payload     (below), then zeros up to the next multiple of 8
 *
 * All integers little-endian.  Payloads:
 *   WAL_OPS_V   u32 nops, u32 0, u64 version (not 0), then nops times:
 *               u8 op (WAL_OP_PUT/DEL/PUT_DL), u8 name_len, u16 0,
 *               u32 klen, u32 vlen, for WAL_OP_PUT_DL only a u64
 *               deadline (not 0), then name, key, value.  PUT_DL is a
 *               put whose record expires at the deadline (ms of the
 *               wall clock since the Unix epoch; issue 27), which replay
 *               gives back; a put without one is a plain PUT, so a log
 *               without expiry is byte for byte what it was before, and
 *               a log from before reads as puts without deadlines.  A
 *               deadline may be past at replay: the record is then
 *               absent to every read, and the sweep removes it (a
 *               logged delete).  One record is one atomic
 *               unit: a single put or delete, or a whole transaction;
 *               every op of it has the record's version (the owner's
 *               version of that write: docs/PROTOCOL.md, "Versions"),
 *               which replay gives the key back.
 *   WAL_OPS     the same without the u32 0 and the version: what tdbd
 *               wrote before versions (issue 24).  Still read, so an old
 *               data directory recovers: its ops' version is the
 *               record's LSN (wal_ops_version), and recovery raises the
 *               version counter past the log's last LSN, so every
 *               version given after is above any such one.
 *   WAL_CREATE  u64 table id, u32 uid, gid, mode, max_extents, sync,
 *               u8 name_len, name, and for a table with a default TTL
 *               or a bound (TABLE_CREATE's TTL, MAX_BYTES, MAX_RECORDS,
 *               EVICT; issue 27) u64 default TTL (ms), u64 max_bytes,
 *               u64 max_records, u32 evict (all 0 but one, maybe);
 *               without them (as before issue 27) the table has none;
 *               for a table created with flags (TDB_TABLE_F_*: ordered,
 *               issue 28) u32 flags after them (32 bytes of attributes
 *               instead of 28); without (28 or none) its flags are 0.
 *               A reader tells which by the record's length
 *   WAL_DROP    u8 name_len, name
 *
 * Writing.  A change is applied first and appended after, by its owner,
 * under the locks that order changes to its table; a record cannot fail
 * to be appended, since its room was reserved before the change was
 * applied: wal_reserve makes sure of memory in the append buffer and of
 * blocks on disk (the segment is preallocated, FALLOC_FL_KEEP_SIZE), and
 * fails the change (ENOSPC, ...) while nothing is applied yet.  Appending
 * (wal_begin .. wal_commit) is a copy into the buffer under a short lock,
 * which gives the record its LSN; so changes to different tables append
 * in parallel, and no lock is held across an apply or a write.
 * wal_write writes everything appended so far with one write(2) (the
 * buffer is swapped out, so appends go on meanwhile): tdbd calls it
 * once per worker round, before the round's answers go out.  A write
 * that fails (EIO, or ENOSPC where the filesystem cannot preallocate)
 * fails the log: the changes are applied and cannot be taken back.
 *
 * Syncing.  The flusher thread makes written records durable with
 * fdatasync(2) and announces it through wal_durable() and a callback:
 *  - always: when kicked (a writer waits).  It first waits, bounded,
 *    until as many records are appended as the last sync carried (group
 *    commit that fills: the writers it released come back).
 *  - batch: at most batch_ms after the first record written since the
 *    last sync.
 *  - none: only when asked (wal_sync_to), at rotation and at close.
 * On a full disk the log may have no current segment at all (wal_open
 * could not make one); every reservation then tries to make it first.
 *
 * Reading (recovery).  wal_replay() walks the segments in LSN order and
 * hands every intact record after a given LSN to a callback.  A bad
 * record (short, bad length, bad CRC, wrong LSN) at the end of the last
 * segment with nothing valid after it is a torn tail: it is cut off and
 * logged.  Anything else is damage: replay stops with an error naming the
 * file and offset, unless truncation was asked for, in which case the
 * log is cut there (later segments are renamed *.damaged).
 *
 * No global state; functions return 0 or a negative errno and fill an
 * error text where they take one.
 */
#ifndef TDB_WAL_H
#define TDB_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wal_type { WAL_OPS = 1, WAL_CREATE = 2, WAL_DROP = 3, WAL_OPS_V = 4 };
/* WAL_OP_PUT_DL is on disk only: wal_next_op gives it as a WAL_OP_PUT
 * with its deadline. */
enum wal_op { WAL_OP_PUT = 1, WAL_OP_DEL = 2, WAL_OP_PUT_DL = 3 };

/* When an acknowledgement may go out (per daemon or per table). */
enum wal_sync {
	WAL_SYNC_ALWAYS = 0,    /* after the record is on disk */
	WAL_SYNC_BATCH = 1,     /* after the next group fsync, <= batch ms */
	WAL_SYNC_NONE = 2,      /* at once; lost on a crash, never corrupt */
};
const char *wal_sync_name(enum wal_sync s);
int wal_sync_parse(const char *s, enum wal_sync *out);

#define WAL_SEG_HDR 32u
#define WAL_REC_HDR 24u
#define WAL_REC_MAX (1u << 30)  /* a record is at most 1 GiB */

uint32_t wal_crc32c(uint32_t crc, const void *buf, size_t len);

/* --- writing ------------------------------------------------------------ */

struct wal;

struct wal_opts {
	uint64_t segment_size;  /* rotate after this many bytes */
	enum wal_sync sync;     /* when the flusher syncs (above) */
	uint32_t batch_ms;      /* batch: longest a written record waits */
	/* called by the flusher thread after durable LSN advances, or when
	 * the log fails (wal_failed() then says why) */
	void (*on_durable)(void *arg, uint64_t lsn);
	void *arg;
};

/* Start a new segment at next_lsn in dir and the flusher thread.
 * If there is no room for the segment (ENOSPC, EDQUOT: a full disk) the
 * log opens anyway, without one, so a daemon can start and serve what
 * it recovered: wal_has_segment() is then false and err says why (it is
 * "" otherwise).  wal_reserve makes the segment first, and fails with
 * -ENOSPC (nothing written, no file left behind) while there is still
 * no room; nothing needs syncing meanwhile, since nothing was written. */
int wal_open(const char *dir, uint64_t next_lsn, const struct wal_opts *o,
	     struct wal **out, char *err, size_t errlen);
bool wal_has_segment(const struct wal *w);
/* Write what is appended, stop the flusher after a last fdatasync,
 * close. */
void wal_close(struct wal *w);

/* The size of a record (padded) of nops ops whose table names, keys and
 * values add up to bytes (WAL_OPS_V, or the old WAL_OPS), or of a create or drop of a table
 * whose name has bytes bytes: what wal_reserve is asked for. */
size_t wal_rec_size(enum wal_type type, uint32_t nops, size_t bytes);
/* The most such a record can take when its puts may carry deadlines
 * and a create a default TTL and flags (walrec_size_max): what a home that cannot
 * tell reserves; wal_commit takes a smaller record for it. */
size_t wal_rec_size_max(enum wal_type type, uint32_t nops, size_t bytes);
/* Room for a record of size bytes: 0, or -ENOSPC/-EDQUOT (a full disk),
 * -EIO (the log failed), -E2BIG (over WAL_REC_MAX), -ENOMEM, with *msg
 * saying so.  Before the change is applied. */
int wal_reserve(struct wal *w, size_t size, const char **msg);
/* The change was not applied after all: give the room back. */
void wal_unreserve(struct wal *w, size_t size);

/* Appending a record whose room is reserved: wal_begin (takes the
 * append lock; wal_begin_ops for a WAL_OPS_V record of that version),
 * the ops (WAL_OPS_V, WAL_OPS) or the one-call helpers, then
 * wal_commit(w, the reserved size, &lsn), which gives the record its LSN
 * and lets go of the lock.  wal_commit fails only on a caller's bug (a
 * bad name, more built than reserved and no memory): the record is
 * dropped and the log failed, since its change is applied. */
void wal_begin(struct wal *w, enum wal_type type);
/* wal_begin(w, WAL_OPS_V) with the record's version; a WAL_OPS_V
 * record whose version is 0 fails at wal_commit (-EINVAL). */
void wal_begin_ops(struct wal *w, uint64_t version);
int wal_add_op(struct wal *w, enum wal_op op, const char *name,
	       const void *key, uint32_t klen, const void *val,
	       uint32_t vlen);
/* The same, a put's record expiring at deadline (ms since the epoch;
 * 0: never, a plain WAL_OP_PUT; a DEL takes none: -EINVAL). */
int wal_add_op_dl(struct wal *w, enum wal_op op, const char *name,
		  const void *key, uint32_t klen, const void *val,
		  uint32_t vlen, uint64_t deadline);
int wal_add_create(struct wal *w, uint64_t id, const char *name,
		   uint32_t uid, uint32_t gid, uint32_t mode,
		   uint32_t max_extents, uint32_t sync);
/* The same for a table with a default TTL (ms) or bounds and an
 * eviction policy, or flags (TDB_TABLE_F_*) (all 0: none, the record is
 * wal_add_create's). */
int wal_add_create_ex(struct wal *w, uint64_t id, const char *name,
		      uint32_t uid, uint32_t gid, uint32_t mode,
		      uint32_t max_extents, uint32_t sync,
		      uint64_t default_ttl, uint64_t max_bytes,
		      uint64_t max_records, uint32_t evict, uint32_t flags);
int wal_add_drop(struct wal *w, const char *name);
int wal_commit(struct wal *w, size_t reserved, uint64_t *lsn);

/* Append a record encoded whole (crc .. payload, len bytes, unpadded:
 * tdb.ko's log ring carries them so, tdbd in kernel mode appends them).
 * It is checked (wal_rec_check) and its LSN must be the log's next:
 * else -EPROTO and err "record LSN A is not the WAL's next LSN B".
 * -EUCLEAN for a bad record; wal_reserve's errors.  Nothing is appended
 * on an error. */
int wal_append_rec(struct wal *w, const void *rec, size_t len, char *err,
		   size_t errlen);

/* Write every record appended so far (one write; one writer at a time,
 * in LSN order): 0, or the error that failed the log. */
int wal_write(struct wal *w);

/* fdatasyncs of the log that returned 0, since the open. */
uint64_t wal_syncs(const struct wal *w);
/* The LSN of the last record appended / written / made durable. */
uint64_t wal_appended(const struct wal *w);
uint64_t wal_written(const struct wal *w);
uint64_t wal_durable(const struct wal *w);
/* Someone waits for a record in always mode: sync soon. */
void wal_kick(struct wal *w);
/* Write and sync until lsn is durable (or the log failed): 0 or -errno. */
int wal_sync_to(struct wal *w, uint64_t lsn);
/* 0, or the negative errno that broke the log (a failed write or
 * fdatasync: the kernel may have dropped written pages, so durability
 * is unknown and no later record is trusted until a restart). */
int wal_failed(const struct wal *w);
/* Bytes appended since the last wal_remove_before (checkpoint trigger). */
uint64_t wal_bytes_since(const struct wal *w);

/* After a checkpoint at lsn: delete segments whose records are all
 * <= lsn.  Returns the number removed. */
int wal_remove_before(struct wal *w, uint64_t lsn);

/* --- reading --------------------------------------------------------------- */

/* A decoded record, pointing into the reader's buffer. */
struct wal_rec {
	uint64_t lsn;
	enum wal_type type;
	const unsigned char *payload;
	uint32_t len;
	const char *file;       /* segment name (for messages) */
	uint64_t off;
};

/* An op of a WAL_OPS_V (or WAL_OPS) record; iterate with wal_next_op. */
struct wal_opv {
	enum wal_op op;         /* WAL_OP_PUT or WAL_OP_DEL */
	char name[65];
	const void *key, *val;
	uint32_t klen, vlen;
	uint64_t deadline;      /* a put's (PUT_DL), else 0 */
};
struct wal_create {
	uint64_t id;
	uint32_t uid, gid, mode, max_extents, sync;
	char name[65];
	/* 0 = none (or a record from before) */
	uint64_t default_ttl;   /* ms */
	uint64_t max_bytes, max_records;
	uint32_t evict;         /* TDB_EVICT_* */
	uint32_t flags;         /* TDB_TABLE_F_* (0 in a record from before) */
};
/* One encoded record of len bytes (no padding, nothing after): its
 * length field, CRC and type checked, *r filled (file: "tdb.ko's log",
 * off 0).  0, or -EUCLEAN with *why naming the fault. */
int wal_rec_check(const void *buf, size_t len, struct wal_rec *r,
		  const char **why);
/* Decoders check every length against the payload: -EUCLEAN if bad. */
int wal_ops_count(const struct wal_rec *r, uint32_t *n);
/* The version of every op of an ops record: WAL_OPS_V's (never 0), or
 * for an old WAL_OPS record its LSN.  0, or -EUCLEAN. */
int wal_ops_version(const struct wal_rec *r, uint64_t *version);
/* Is r a record of ops (WAL_OPS_V or WAL_OPS)? */
static inline int wal_is_ops(const struct wal_rec *r)
{
	return r->type == WAL_OPS_V || r->type == WAL_OPS;
}
/* *pos starts at 0. 1 and an op, 0 at the end, -EUCLEAN. */
int wal_next_op(const struct wal_rec *r, uint32_t *pos, struct wal_opv *op);
int wal_get_create(const struct wal_rec *r, struct wal_create *c);
int wal_get_drop(const struct wal_rec *r, char name[65]);

struct wal_replay_opts {
	uint64_t after;         /* hand over records with lsn > after */
	bool truncate_damage;   /* cut the log at damage instead of failing */
	/* fn returns 0 to go on, or a negative errno to stop */
	int (*fn)(void *arg, const struct wal_rec *r);
	void *arg;
	/* progress: called about every 64 MiB read */
	void (*progress)(void *arg, uint64_t bytes_done, uint64_t bytes_all);
	/* what was found, in words (torn tail cut, damage cut); may be NULL */
	void (*note)(void *arg, const char *msg);
};
struct wal_replay_result {
	uint64_t last_lsn;      /* last intact record (or opts->after) */
	uint64_t records;       /* records handed over */
	uint64_t bytes;         /* bytes of log read */
	uint32_t segments;
};
/*
 * A live log read back, read only (issue 29: a checkpoint applies the
 * records to its store): fn gets every record with after < LSN <= upto,
 * in order.  They were made durable, so each must be there and intact:
 * else -ENODATA (a record in no segment, the log ending before upto) or
 * -EUCLEAN (a bad header, record or LSN where one was to be), err
 * naming the file and offset.  Nothing is cut, synced or renamed; what
 * follows upto (a tail being written) is not read.  fn's non-zero
 * return stops the reading and is returned.
 */
int wal_read_range(const char *dir, uint64_t after, uint64_t upto,
		   int (*fn)(void *arg, const struct wal_rec *r), void *arg,
		   char *err, size_t errlen);
/*
 * Replay dir's log.  -EUCLEAN for damage (err: "wal-...log: offset N:
 * bad CRC (record LSN M); ..."), -ENOENT-like errors for missing
 * segments (a gap in LSNs), or fn's error.
 */
int wal_replay(const char *dir, const struct wal_replay_opts *o,
	       struct wal_replay_result *res, char *err, size_t errlen);

#endif
