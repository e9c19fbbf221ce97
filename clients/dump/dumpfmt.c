// SPDX-License-Identifier: GPL-2.0-only
/*
 * dumpfmt.c - the db_dump / mdb_dump text format (dumpfmt.h): writing
 * headers and items, reading lines in bounded memory, decoding items,
 * taking header keywords.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpfmt.h"

#define IN_BUF   (256u << 10)
#define OUT_CHUNK 8192u

static const char hexd[] = "0123456789abcdef";

/* --- writing ------------------------------------------------------------ */

int df_write_item(FILE *f, bool print, const void *p, size_t len)
{
	const unsigned char *s = p;
	unsigned char buf[OUT_CHUNK + 8];
	size_t n = 0, i;

	buf[n++] = ' ';
	for (i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (n > OUT_CHUNK) {
			if (fwrite(buf, 1, n, f) != n)
				return -EIO;
			n = 0;
		}
		if (!print) {
			buf[n++] = (unsigned char)hexd[c >> 4];
			buf[n++] = (unsigned char)hexd[c & 15];
		} else if (c >= 0x20 && c < 0x7f && c != '\\') {
			buf[n++] = c;
		} else {
			buf[n++] = '\\';
			buf[n++] = (unsigned char)hexd[c >> 4];
			buf[n++] = (unsigned char)hexd[c & 15];
		}
	}
	buf[n++] = '\n';
	if (fwrite(buf, 1, n, f) != n)
		return -EIO;
	return 0;
}

static const char *const evict_names[] = {
	[TDB_EVICT_REFUSE] = "refuse", [TDB_EVICT_LRU] = "lru",
	[TDB_EVICT_LFU] = "lfu", [TDB_EVICT_TTL] = "ttl",
};

const char *df_evict_name(uint32_t evict)
{
	return evict <= TDB_EVICT_MAX ? evict_names[evict] : "unknown";
}

int df_evict_parse(const char *p, size_t len, uint32_t *evict)
{
	uint32_t i;

	for (i = 0; i <= TDB_EVICT_MAX; i++)
		if (strlen(evict_names[i]) == len &&
		    !memcmp(p, evict_names[i], len)) {
			*evict = i;
			return 0;
		}
	return -EINVAL;
}

int df_write_header(FILE *f, bool print, const char *table,
		    uint64_t mapsize, const struct df_meta *meta)
{
	fprintf(f, "VERSION=3\nformat=%s\ndatabase=%s\ntype=btree\n",
		print ? "print" : "bytevalue", table);
	if (mapsize)
		fprintf(f, "mapsize=%" PRIu64 "\n", mapsize);
	if (meta && meta->have)
		fprintf(f, "tdb_owner=%" PRIu32 "\ntdb_group=%" PRIu32
			"\ntdb_mode=%04" PRIo32 "\ntdb_max_extents=%" PRIu32
			"\n", meta->uid, meta->gid, meta->mode,
			meta->max_extents);
	if (meta && meta->have && meta->default_ttl)
		fprintf(f, "tdb_default_ttl=%" PRIu64 "\n", meta->default_ttl);
	if (meta && meta->have && meta->max_bytes)
		fprintf(f, "tdb_max_bytes=%" PRIu64 "\n", meta->max_bytes);
	if (meta && meta->have && meta->max_records)
		fprintf(f, "tdb_max_records=%" PRIu64 "\n",
			meta->max_records);
	if (meta && meta->have && (meta->max_bytes || meta->max_records))
		fprintf(f, "tdb_evict=%s\n", df_evict_name(meta->evict));
	if (meta && meta->have && meta->ordered)
		fputs("tdb_ordered=1\n", f);
	fputs("HEADER=END\n", f);
	return ferror(f) ? -EIO : 0;
}

int df_write_deadlines_header(FILE *f, bool print, const char *table,
			      uint64_t mapsize)
{
	char name[sizeof(DF_DEADLINES) + TDB_NAME_MAX];

	snprintf(name, sizeof(name), DF_DEADLINES "%s", table);
	return df_write_header(f, print, name, mapsize, NULL);
}

int df_write_deadline(FILE *f, bool print, const void *key, size_t klen,
		      uint64_t deadline)
{
	char d[24];
	int n = snprintf(d, sizeof(d), "%" PRIu64, deadline);
	int err = df_write_item(f, print, key, klen);

	return err ? err : df_write_item(f, print, d, (size_t)n);
}

int df_write_end(FILE *f)
{
	fputs("DATA=END\n", f);
	return ferror(f) ? -EIO : 0;
}

/* --- reading lines ------------------------------------------------------- */

int df_in_init(struct df_in *in, int fd)
{
	memset(in, 0, sizeof(*in));
	in->fd = fd;
	in->buf = malloc(IN_BUF);
	if (!in->buf)
		return -ENOMEM;
	in->cap = IN_BUF;
	return 0;
}

void df_in_free(struct df_in *in)
{
	free(in->buf);
	free(in->line);
	in->buf = in->line = NULL;
}

/* Append n bytes to the line being assembled (have bytes so far). */
static int line_append(struct df_in *in, size_t have, const void *p,
		       size_t n)
{
	if (have + n > DF_LINE_MAX)
		return -EMSGSIZE;
	if (have + n > in->line_cap) {
		size_t cap = in->line_cap ? in->line_cap : 4096;
		unsigned char *l;

		while (cap < have + n)
			cap *= 2;
		l = realloc(in->line, cap);
		if (!l)
			return -ENOMEM;
		in->line = l;
		in->line_cap = cap;
	}
	memcpy(in->line + have, p, n);
	return 0;
}

int df_getline(struct df_in *in, const unsigned char **line, size_t *len)
{
	bool assembling = false;
	size_t have = 0;
	ssize_t r;
	int err;

	for (;;) {
		if (in->start < in->end) {
			unsigned char *p = in->buf + in->start;
			size_t n = in->end - in->start;
			unsigned char *nl = memchr(p, '\n', n);
			size_t take = nl ? (size_t)(nl - p) : n;

			in->start += take + (nl != NULL);
			in->bytes += take + (nl != NULL);
			if (nl && !assembling) {
				in->lineno++;
				*line = p;
				*len = take;
				return 1;
			}
			err = line_append(in, have, p, take);
			if (err) {
				in->lineno++;
				return err;
			}
			have += take;
			assembling = true;
			if (nl) {
				in->lineno++;
				*line = in->line;
				*len = have;
				return 1;
			}
			continue;
		}
		if (in->eof) {
			if (!assembling)
				return 0;
			in->lineno++;           /* the last line, no '\n' */
			*line = in->line;
			*len = have;
			return 1;
		}
		in->start = in->end = 0;
		do {
			r = read(in->fd, in->buf, in->cap);
		} while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		if (r == 0)
			in->eof = true;
		in->end = (size_t)r;
	}
}

/* --- decoding ------------------------------------------------------------ */

static int unhex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long df_decode(bool print, const unsigned char *src, size_t len,
	       unsigned char *dst, size_t cap, const char **msg)
{
	size_t i = 0, n = 0;

	if (!print) {
		if (len & 1) {
			*msg = "odd number of hex digits (format=bytevalue "
			       "takes two per byte)";
			return -EINVAL;
		}
		if (len / 2 > cap) {
			*msg = "item too long";
			return -E2BIG;
		}
		for (i = 0; i < len; i += 2) {
			int hi = unhex(src[i]), lo = unhex(src[i + 1]);

			if (hi < 0 || lo < 0) {
				*msg = "not a hex digit (format=bytevalue)";
				return -EINVAL;
			}
			dst[n++] = (unsigned char)(hi << 4 | lo);
		}
		return (long)n;
	}
	while (i < len) {
		unsigned char c = src[i];

		if (n == cap) {
			*msg = "item too long";
			return -E2BIG;
		}
		if (c != '\\') {
			dst[n++] = c;
			i++;
			continue;
		}
		if (i + 1 < len && src[i + 1] == '\\') {
			dst[n++] = '\\';
			i += 2;
			continue;
		}
		if (i + 2 >= len || unhex(src[i + 1]) < 0 ||
		    unhex(src[i + 2]) < 0) {
			*msg = "bad escape: '\\' must be followed by two hex "
			       "digits or another '\\' (format=print; the "
			       "mdb_dump -p of LMDB 0.9.24 writes '\\' "
			       "unescaped: load its bytevalue dump instead)";
			return -EINVAL;
		}
		dst[n++] = (unsigned char)(unhex(src[i + 1]) << 4 |
					   unhex(src[i + 2]));
		i += 3;
	}
	return (long)n;
}

/* --- headers ------------------------------------------------------------- */

void df_header_init(struct df_header *h)
{
	memset(h, 0, sizeof(*h));
}

static bool is(const unsigned char *k, size_t kl, const char *name)
{
	return strlen(name) == kl && !memcmp(k, name, kl);
}

/* A decimal or (base 8) octal number of v bytes: 0 and *out, or -1. */
static int number(const unsigned char *v, size_t vl, int base,
		  uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (!vl || vl > 20)
		return -1;
	for (i = 0; i < vl; i++) {
		int d = v[i] - '0';

		if (d < 0 || d >= base)
			return -1;
		if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -1;
		x = x * (uint64_t)base + (uint64_t)d;
	}
	if (x > max)
		return -1;
	*out = x;
	return 0;
}

/* LMDB and Berkeley DB keywords that change nothing tdb keeps. */
static const char *const harmless[] = {
	"mapsize", "mapaddr", "maxreaders", "db_pagesize", "db_lorder",
	"bt_minkey", "chksum", "extentsize", "h_ffactor", "h_nelem",
	"reversekey", "integerkey", "recnum", "re_len", "re_pad",
	"renumber", NULL,
};

/* Keywords that mean a key may have several values. */
static const char *const dupkeys[] = {
	"duplicates", "dupsort", "dupfixed", "integerdup", "reversedup",
	NULL,
};

int df_parse_deadline(const unsigned char *p, size_t len,
		      uint64_t *deadline, const char **msg)
{
	if (number(p, len, 10, UINT64_MAX, deadline)) {
		*msg = "a deadline must be 1 to 20 decimal digits (ms since "
		       "the epoch; 0: none), at most 18446744073709551615";
		return -EINVAL;
	}
	return 0;
}

static bool in_list(const char *const *list, const unsigned char *k,
		    size_t kl)
{
	for (; *list; list++)
		if (is(k, kl, *list))
			return true;
	return false;
}

static int bad(const char **msg, const char *m)
{
	*msg = m;
	return -EINVAL;
}

int df_header_line(struct df_header *h, const unsigned char *line,
		   size_t len, const char **msg)
{
	const unsigned char *eq = memchr(line, '=', len), *v;
	size_t kl, vl, i;
	uint64_t x;

	if (!eq || eq == line)
		return bad(msg, "a header line must be KEYWORD=VALUE (a dump "
			   "begins with VERSION=3 and its header ends with "
			   "HEADER=END)");
	kl = (size_t)(eq - line);
	v = eq + 1;
	vl = len - kl - 1;
	if (is(line, kl, "HEADER")) {
		if (!is(v, vl, "END"))
			return bad(msg, "HEADER= must be HEADER=END");
		if (!h->version)
			return bad(msg, "HEADER=END without VERSION= before "
				   "it");
		return DF_HDR_END;
	}
	if (is(line, kl, "VERSION")) {
		if (number(v, vl, 10, 1000, &x) || x == 0)
			return bad(msg, "VERSION= is not a number");
		if (x > 3)
			return bad(msg, "VERSION above 3: a dump format this "
				   "tool does not know");
		h->version = (int)x;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "format")) {
		if (is(v, vl, "print"))
			h->print = true;
		else if (is(v, vl, "bytevalue"))
			h->print = false;
		else
			return bad(msg, "format= must be bytevalue or print");
		h->have_format = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "type")) {
		if (is(v, vl, "btree") || is(v, vl, "hash"))
			return DF_HDR_MORE;
		return bad(msg, "type= must be btree (or hash): other "
			   "Berkeley DB types do not hold key/value pairs");
	}
	if (is(line, kl, "database") || is(line, kl, "subdatabase")) {
		size_t pl = strlen(DF_DEADLINES);

		/* "/deadlines/TABLE": the deadlines of TABLE's records */
		h->deadlines = vl > pl && !memcmp(v, DF_DEADLINES, pl);
		if (h->deadlines) {
			v += pl;
			vl -= pl;
		}
		if (!vl)
			return bad(msg, "database= is empty");
		if (vl > TDB_NAME_MAX)
			return bad(msg, "database= name is longer than 64 "
				   "bytes (tdb's table name limit)");
		for (i = 0; i < vl; i++)
			if (v[i] < 0x21 || v[i] == 0x7f || v[i] == '/')
				return bad(msg, "database= name has a space, "
					   "control character or '/' (not "
					   "a tdb table name)");
		memcpy(h->table, v, vl);
		h->table[vl] = '\0';
		h->have_table = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_owner") || is(line, kl, "tdb_group")) {
		if (number(v, vl, 10, UINT32_MAX - 1, &x))
			return bad(msg, "tdb_owner= / tdb_group= must be a "
				   "number below 4294967295");
		if (line[4] == 'o') {
			h->uid = (uint32_t)x;
			h->have_uid = true;
		} else {
			h->gid = (uint32_t)x;
			h->have_gid = true;
		}
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_mode")) {
		if (number(v, vl, 8, 0777, &x))
			return bad(msg, "tdb_mode= must be octal, at most "
				   "0777");
		h->mode = (uint32_t)x;
		h->have_mode = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_max_extents")) {
		if (number(v, vl, 10, TDB_EXTENTS_MAX, &x) || x == 0)
			return bad(msg, "tdb_max_extents= must be 1..32768");
		h->max_extents = (uint32_t)x;
		h->have_max_extents = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_default_ttl")) {
		if (number(v, vl, 10, TDB_TTL_MAX, &x) || x == 0)
			return bad(msg, "tdb_default_ttl= must be 1.."
				   "315360000000 (ms: 10 years)");
		h->default_ttl = x;
		h->have_default_ttl = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_max_bytes") || is(line, kl, "tdb_max_records")) {
		if (number(v, vl, 10, UINT64_MAX, &x) || x == 0)
			return bad(msg, "tdb_max_bytes= / tdb_max_records= "
				   "must be a number, at least 1");
		if (line[8] == 'b')
			h->max_bytes = x;
		else
			h->max_records = x;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_evict")) {
		if (df_evict_parse((const char *)v, vl, &h->evict))
			return bad(msg, "tdb_evict= must be refuse, lru, lfu "
				   "or ttl");
		h->have_evict = true;
		return DF_HDR_MORE;
	}
	if (is(line, kl, "tdb_ordered")) {
		if (!is(v, vl, "0") && !is(v, vl, "1"))
			return bad(msg, "tdb_ordered= must be 0 (a hash table) "
				   "or 1 (an ordered table)");
		h->ordered = v[0] == '1';
		return DF_HDR_MORE;
	}
	if (is(line, kl, "keys")) {
		if (is(v, vl, "1"))
			return DF_HDR_MORE;
		return bad(msg, "keys=0: a dump without keys (recno, queue) "
			   "cannot be loaded");
	}
	if (in_list(dupkeys, line, kl)) {
		if (is(v, vl, "0"))
			return DF_HDR_MORE;
		return bad(msg, "a database with duplicate keys (duplicates=, "
			   "dupsort=...) cannot be loaded: a tdb table keeps "
			   "one value per key");
	}
	if (is(line, kl, "mapsize")) {
		if (!number(v, vl, 10, UINT64_MAX, &x))
			h->mapsize = x;
		return DF_HDR_MORE;
	}
	if (in_list(harmless, line, kl))
		return DF_HDR_MORE;
	return DF_HDR_UNKNOWN;
}
