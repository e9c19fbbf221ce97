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
 *   HEADER=END
 *    KEY                        (one leading space; key and value lines
 *    VALUE                       alternate)
 *   DATA=END
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
};
/* One block's header, VERSION=3 to HEADER=END (mapsize 0: none). */
int df_write_header(FILE *f, bool print, const char *table,
		    uint64_t mapsize, const struct df_meta *meta);
int df_write_end(FILE *f);

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
 * type other than btree/hash, a bad tdb_* value or database name, a
 * duplicate-key database: tdb keeps one value per key).
 */
int df_header_line(struct df_header *h, const unsigned char *line,
		   size_t len, const char **msg);

#endif
