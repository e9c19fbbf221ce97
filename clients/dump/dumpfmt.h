/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dumpfmt.h - the dump text format of tdb-dump and tdb-load: the
 * Berkeley DB db_dump / LMDB mdb_dump format, VERSION=3, byte for byte.
 *
 * A dump is one or more blocks:
 *
 *   VERSION=3
 *   format=bytevalue            (or format=print)
 *   database=TABLE
 *   type=btree
 *   mapsize=N                   (for mdb_load: room for the data)
 *   tdb_owner=UID               (tdb's own keywords; mdb_load warns
 *   tdb_group=GID                "unrecognized keyword ignored" and
 *   tdb_mode=0640                goes on; tdb-dump -M leaves them out)
 *   tdb_max_extents=N
 *   tdb_default_ttl=MS          (a table with a default TTL: ms)
 *   tdb_max_bytes=N             (a bounded table: its bounds, either
 *   tdb_max_records=N            or both, and its policy, refuse, lru,
 *   tdb_evict=lru                lfu or ttl; eviction, issue 27)
 *   tdb_ordered=1               (an ordered table: its keys kept in
 *                                order, issue 28; absent or 0: a hash
 *                                table)
 *   HEADER=END
 *    KEY                        (one leading space; key and value lines
 *    VALUE                       alternate)
 *   DATA=END
 *
 * Deadlines (expiry, issue 27).  A table's records that expire are
 * preceded, in the dump, by a block of their deadlines: its database=
 * is "/deadlines/TABLE" ('/' is in no table name), its items are KEY
 * and the deadline as decimal digits (ms of the wall clock since the
 * Unix epoch), or "0" for a record without one in a table with a
 * default TTL (which a plain put would give it).  It covers the keys
 * of the TABLE blocks that follow it, up to the next deadlines block of
 * the table; a key it does not name has no deadline of its own.  So a
 * dump streams: tdb-dump writes a table as blocks of at most a chunk
 * of records, a deadlines block before each chunk that has any (and a
 * table without them is the one block it always was); tdb-load holds
 * the deadlines until their records come.  mdb_load loads a deadlines
 * block as one more named database ("/deadlines/TABLE": key -> the
 * digits), the table's own database holds exactly its records, and
 * mdb_dump -a of that writes "/deadlines/TABLE" before "TABLE" (name
 * order), which tdb-load reads back the same.
 *
 * Encodings of a line's bytes: bytevalue, two lowercase hex digits per
 * byte; print, bytes 0x20..0x7e as they are except '\', and every other
 * byte (and '\') as '\' and two lowercase hex digits.  A backslash is
 * written "\5c", not "\\" as newer mdb_dump and db_dump write it: every
 * reader takes "\5c", while the mdb_load of LMDB 0.9.24 (Debian's
 * lmdb-utils) decodes "\\" into a stale byte once an escape came before
 * it on the line.  Readers take "\\" too, hex digits in either case, and
 * in print mode any other byte but '\n' as itself.  (mdb_dump -p of LMDB
 * 0.9.24 writes '\' unescaped, which no reader can tell from an escape:
 * its bytevalue output is the one to load.)
 *
 * Ordered tables (issue 28).  tdb-dump writes an ordered table's records
 * in key order (LMDB's: memcmp, the shorter first) as its scan gives
 * them, with no sort and nothing held but a chunk that needs its
 * deadlines: a table's blocks, one after the other, hold its records in
 * key order (a deadlines block, when one is needed, ends the block of
 * records before it, and the held chunk follows it in a block of its
 * own).  So its dump is sorted, with or without --sort.
 *
 * Everything here works on buffers and file descriptors and returns
 * errors with a static message: it never prints or exits.
 */
#ifndef TDB_DUMPFMT_H
#define TDB_DUMPFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <tdb/proto.h>

/* The longest line a reader takes: a 1 MiB value in print format, every
 * byte escaped, after its space. */
#define DF_LINE_MAX ((size_t)TDB_VALUE_MAX * 3 + 2)

/* --- writing ------------------------------------------------------------ */

/* Write " " + the bytes encoded + "\n" to f.  0, or -EIO (ferror). */
int df_write_item(FILE *f, bool print, const void *p, size_t len);

struct df_meta {
	bool have;              /* write the tdb_* keywords */
	uint32_t uid, gid, mode, max_extents;
	uint64_t default_ttl;   /* ms; 0: none, no tdb_default_ttl= */
	uint64_t max_bytes, max_records;        /* 0: none (no keyword) */
	uint32_t evict;         /* TDB_EVICT_*: tdb_evict= if bounded */
	bool ordered;           /* tdb_ordered=1 (an ordered table) */
};
/* tdb_evict='s words, by TDB_EVICT_* ("unknown" past them); -EINVAL if
 * a word is none of them. */
const char *df_evict_name(uint32_t evict);
int df_evict_parse(const char *p, size_t len, uint32_t *evict);
/* One block's header, VERSION=3 to HEADER=END (mapsize 0: none). */
int df_write_header(FILE *f, bool print, const char *table,
		    uint64_t mapsize, const struct df_meta *meta);
int df_write_end(FILE *f);

/* The database= of table's deadlines block. */
#define DF_DEADLINES "/deadlines/"
/* The header of table's deadlines block (no tdb_* keywords). */
int df_write_deadlines_header(FILE *f, bool print, const char *table,
			      uint64_t mapsize);
/* One item of a deadlines block: the key, then the deadline in decimal
 * (0: none).  0, or -EIO. */
int df_write_deadline(FILE *f, bool print, const void *key, size_t klen,
		      uint64_t deadline);
/* A deadlines block's value, decoded (its bytes after df_decode): 0 and
 * *deadline, or -EINVAL with *msg (not 1..20 decimal digits, over
 * UINT64_MAX). */
int df_parse_deadline(const unsigned char *p, size_t len,
		      uint64_t *deadline, const char **msg);

/* --- reading lines ------------------------------------------------------- */

struct df_in {
	int fd;
	unsigned char *buf;     /* read buffer */
	size_t cap, start, end;
	unsigned char *line;    /* a line that crossed the buffer's end */
	size_t line_cap;
	uint64_t lineno;        /* of the line last returned (1-based) */
	uint64_t bytes;         /* consumed so far */
	bool eof;
};
int df_in_init(struct df_in *in, int fd);
void df_in_free(struct df_in *in);
/*
 * The next line, without its '\n' (the last line may lack one): 1 and
 * *line and *len (valid until the next call), 0 at the end of input,
 * -EMSGSIZE for a line over DF_LINE_MAX, or -errno of read(2).
 */
int df_getline(struct df_in *in, const unsigned char **line, size_t *len);

/* --- decoding ------------------------------------------------------------ */

/*
 * Decode an item line's text (after its leading space) into dst, which
 * has room for cap bytes: the length, or -EINVAL (*msg: odd number of
 * hex digits, not a hex digit, bad escape) or -E2BIG (more than cap).
 */
long df_decode(bool print, const unsigned char *src, size_t len,
	       unsigned char *dst, size_t cap, const char **msg);

/* --- headers ------------------------------------------------------------- */

struct df_header {
	int version;            /* 0 until VERSION= */
	bool print;
	bool have_format;
	char table[TDB_NAME_MAX + 1];
	bool have_table;
	bool have_uid, have_gid, have_mode, have_max_extents;
	uint32_t uid, gid, mode, max_extents;
	uint64_t mapsize;       /* 0 if none (ignored by tdb-load) */
	bool have_default_ttl;
	uint64_t default_ttl;   /* tdb_default_ttl=, 1..TDB_TTL_MAX ms */
	uint64_t max_bytes, max_records;        /* tdb_max_bytes=, tdb_max_
						 * records= (>= 1; 0: none) */
	bool have_evict;
	uint32_t evict;         /* tdb_evict=, TDB_EVICT_* */
	bool ordered;           /* tdb_ordered=1 (0 or absent: a hash
				 * table) */
	bool deadlines;         /* database=/deadlines/TABLE: table is
				 * TABLE, the block its deadlines */
};
void df_header_init(struct df_header *h);
enum {
	DF_HDR_MORE = 0,        /* go on with the next line */
	DF_HDR_END = 1,         /* HEADER=END */
	DF_HDR_UNKNOWN = 2,     /* a keyword tdb-load ignores: warn */
};
/*
 * Take one header line.  Returns DF_HDR_*, or -EINVAL with *msg (a line
 * without '=', VERSION above 3, a format other than print/bytevalue, a
 * type other than btree/hash, a bad tdb_* value or database name (a
 * table's, or "/deadlines/" and a table's), a duplicate-key database:
 * tdb keeps one value per key).
 */
int df_header_line(struct df_header *h, const unsigned char *line,
		   size_t len, const char **msg);

#endif
