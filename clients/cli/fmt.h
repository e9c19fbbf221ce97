/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fmt.h - the tdb CLI's byte formats: how keys and values are printed
 * (raw, C-style escapes, hex, JSON strings) and read (hex), and the
 * strict number and input parsing the commands share, and the word
 * splitting of batch and shell lines (fmt_split).  Pure functions
 * on buffers and FILE streams, no connection: tested alone by test_fmt.c.
 *
 * Every function here takes a length with its bytes: keys and values
 * may hold NUL bytes, so nothing is ever measured with strlen().
 */
#ifndef TDB_CLI_FMT_H
#define TDB_CLI_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum fmt_enc {
	FMT_RAW,        /* the bytes as they are */
	FMT_ESCAPE,     /* printable ASCII as is; \\ \n \t \r; else \xHH */
	FMT_HEX,        /* two lowercase hex digits a byte */
};

/* Write n bytes at p to f in enc.  Write errors stay in ferror(f). */
void fmt_bytes(FILE *f, const void *p, size_t n, enum fmt_enc enc);

/* How many characters fmt_bytes(FMT_ESCAPE) writes for the n bytes at
 * p (to align columns of escaped text). */
size_t fmt_escaped_len(const void *p, size_t n);

/*
 * May the bytes be shown as a JSON string?  Yes if they are valid UTF-8
 * (shortest forms, no surrogates, at most U+10FFFF) and hold no control
 * character other than tab, newline and carriage return (so no NUL and
 * no DEL).  Otherwise the JSON output gives them in hex.
 */
bool fmt_json_ok(const void *p, size_t n);
/* Write the bytes as a JSON string, quotes included (fmt_json_ok). */
void fmt_json_str(FILE *f, const void *p, size_t n);
/*
 * Write one member "name":"..." if the bytes are fmt_json_ok and hex is
 * false, else "name_hex":"<hex>".  No separator before or after.
 */
void fmt_json_field(FILE *f, const char *name, const void *p, size_t n,
		    bool hex);

/*
 * Decode hex digits (either case; ASCII white space between digits is
 * skipped, so `tdb --hex get` output with its newline reads back) into
 * a malloc()ed buffer.  0 and *out, *outlen (*out is never NULL, even
 * for 0 bytes), -EINVAL for a stray character or an odd number of
 * digits, -ENOMEM.
 */
int fmt_hex_decode(const char *s, size_t n, uint8_t **out, size_t *outlen);

/*
 * A whole unsigned number in base (10, or 8 for modes): digits only (no
 * sign, no white space, nothing after), at most max.  0 and *out,
 * -EINVAL if it is not a number, -ERANGE if it is over max.
 */
int fmt_parse_u64(const char *s, int base, uint64_t max, uint64_t *out);
/* A whole signed decimal number: an optional '-', then digits (nothing
 * else), within int64_t.  0 and *out, -EINVAL, or -ERANGE. */
int fmt_parse_s64(const char *s, int64_t *out);

/*
 * A duration (put --ttl, expire, create --ttl): one or more parts
 * <digits><unit>, units ms, s, m, h, d (a day is 86400 s), summed in
 * milliseconds: "500ms", "30s", "2h", "1d", "1h30m".  A lone number
 * without a unit is seconds ("30" = "30s"), as for sleep(1) and Redis's
 * EXPIRE.  No sign, white space or fraction.  0 and *ms; -EINVAL (not a
 * duration) with *why saying what is wrong, -EDOM for a duration of 0,
 * -ERANGE if it is over max_ms.
 */
int fmt_parse_duration(const char *s, uint64_t max_ms, uint64_t *ms,
		       const char **why);
/*
 * A size in bytes (create --max-bytes): a whole number, optionally with
 * a suffix K, M, G or T (powers of 1024; KiB, MiB, GiB, TiB and lower
 * case accepted too).  No sign, space or fraction.  0 and *out;
 * -EINVAL (not a size), -ERANGE if it is over max.
 */
int fmt_parse_size(const char *s, uint64_t max, uint64_t *out);
/* The longest text fmt_format_duration writes, NUL included
 * ("213503982334d...": any uint64_t of ms). */
#define FMT_DURATION_MAX 48
/* ms as a duration fmt_parse_duration reads back as ms: its parts from
 * days down to milliseconds, the zero ones left out ("1h30m", "1s500ms",
 * "0s" for 0).  buf has FMT_DURATION_MAX bytes; returns buf. */
char *fmt_format_duration(uint64_t ms, char *buf);

/*
 * Read fd to its end into a malloc()ed buffer (*out never NULL).  Stops
 * with -E2BIG once more than cap bytes came (so /dev/zero cannot eat
 * the memory), or returns -errno of a failed read, -ENOMEM.
 */
int fmt_read_all(int fd, size_t cap, uint8_t **out, size_t *len);

/* The words of one line (fmt_split). */
struct fmt_words {
	char **word;            /* n words, each NUL-terminated too */
	size_t *len;            /* their lengths (a word may hold NULs) */
	int n;
	char *buf;              /* the bytes behind word[] */
};

/*
 * Split the n bytes at s into words, quoted as sh quotes them so that
 * commands printed for a shell can be pasted: blanks (space, tab, a
 * CR or LF) separate words; 'single quotes' keep every byte as it is;
 * outside quotes a backslash keeps the next byte as it is; a '#' that
 * starts a word comments out the rest of the line.  In "double quotes"
 * a backslash takes the escapes scan prints (\\ \n \t \r \xHH) and
 * \0, so a key scan printed, in double quotes, reads back as the same
 * bytes; before any other byte (\" \$ ...) it keeps that byte.
 * 0 and *w (free with fmt_words_free), -EINVAL with *why for an
 * unclosed quote or a bad \x, -ENOMEM.
 */
int fmt_split(const char *s, size_t n, struct fmt_words *w,
	      const char **why);
void fmt_words_free(struct fmt_words *w);

#endif
