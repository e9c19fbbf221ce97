// SPDX-License-Identifier: GPL-2.0-only
/*
 * tdb_dump.c - tdb-dump: tables of a running tdbd written in the text
 * format of db_dump and mdb_dump (VERSION=3, dumpfmt.h), which tdb-load
 * and LMDB's mdb_load read back.
 *
 * Each table is read with one snapshot scan (TDBC_SCAN_SNAPSHOT): the
 * block is the table exactly as it was when its scan began, while
 * writers go on.  With -a the tables are dumped one after another, each
 * its own snapshot (not one snapshot of all of them).  Memory stays small
 * whatever the tables' size: records are written as they come, and tdbd
 * paces the scan to us.  Options follow mdb_dump where they mean the same
 * (-a, -s, -l, -p, -f, -V); exit codes are in common.h.
 *
 * -o, --sort: each table's records in key order (LMDB's default order:
 * memcmp of the raw keys, a prefix before the longer keys), so that two
 * dumps of the same data are the same bytes whatever the tables' hash
 * seeds.  The whole snapshot is read into memory first (struct held: the
 * keys and values, one table at a time, plus 16 bytes a record), sorted,
 * then written: no external sort.  The snapshot is closed before the
 * first record is written, so a slow reader of the dump holds nothing
 * of tdbd's.
 *
 * Expiry (dumpfmt.h, "Deadlines"): a record that expires goes with its
 * deadline into a "/deadlines/TABLE" block written before the block of
 * records that holds it; so does, in a table with a default TTL, a
 * record without a deadline (as 0), which a plain put would give one.
 * Those records are held (struct held, at most PEND_RECS records or
 * PEND_BYTES bytes) while the others are written as they come; when
 * the hold is full, the open block of records ends, the deadlines block
 * of the held ones is written, then a new block of the table with them,
 * which stays open for what follows.  A table without such records is
 * the one block it always was.  With --sort: one deadlines block (key
 * order), then the table's one block.  A table's default TTL is its
 * header's tdb_default_ttl= (not with -M).  The snapshot never holds a
 * record whose deadline had passed when tdbd read it: none is dumped.
 *
 * Ordered tables (issue 28; the header's tdb_ordered=1, not with -M):
 * their snapshot scan comes in key order, so their records are written
 * as they come, sorted, with no sort and no table held (--sort changes
 * nothing for them).  To keep that order across blocks, once a record
 * that needs its deadline is held every record after it is held too,
 * up to the hold's bounds: the held chunk is written after its
 * deadlines block in a block of its own, and the table's blocks, one
 * after the other, are in key order (dumpfmt.h, "Ordered tables").
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "dumpfmt.h"

#ifndef TDB_VERSION
#define TDB_VERSION "unknown"
#endif

static const char usage_text[] =
"Usage: tdb-dump [OPTION]... -a|-s TABLE|-l [SOCKET]\n"
"Write tables of tdbd in the text format of db_dump and mdb_dump\n"
"(VERSION=3), which tdb-load and mdb_load read.  Each table is a\n"
"consistent snapshot, taken while writers go on.\n"
"\n"
"  -a, --all           every table one may read, one block each (in name\n"
"                      order; each table its own snapshot)\n"
"  -s, --table TABLE   this table only\n"
"  -l, --list          list the tables one may read, one a line\n"
"  -p, --print         format=print: printable bytes as they are, others\n"
"                      as \\xx (default format=bytevalue: all in hex)\n"
"  -f, --file FILE     write to FILE (default: standard output)\n"
"  -o, --sort          each table's records in key order (bytewise, a\n"
"                      prefix first: mdb_dump's order), so dumps of the\n"
"                      same data are the same bytes; holds a table's\n"
"                      whole snapshot in memory (its keys and values,\n"
"                      about 16 bytes a record; one table at a time).\n"
"                      An ordered table is dumped in key order anyway,\n"
"                      without holding it\n"
"  -M, --no-meta       leave out tdb's own header keywords (tdb_owner,\n"
"                      tdb_group, tdb_mode, tdb_max_extents,\n"
"                      tdb_default_ttl, tdb_ordered...), which mdb_load\n"
"                      warns about and ignores\n"
"  -q, --quiet         no progress bar and no summary (there are only\n"
"                      when stderr is a terminal and the dump does not\n"
"                      go to it)\n"
"  -v, --verbose       the summary line on stderr even when it is not a\n"
"                      terminal (\"dumped N records, X MiB in Y s\")\n"
"  -S, --socket PATH   tdbd's socket, also given as SOCKET (default\n"
"                      $TDB_SOCKET, else " TDBC_SOCKET_DEFAULT ")\n"
"      --no-rings      talk over the socket only (no shared rings)\n"
"  -V, --version       print the version and exit\n"
"  -h, --help          print this help and exit\n"
"\n"
"Records that expire have their deadlines (ms since the epoch) in a\n"
"block \"database=/deadlines/TABLE\" before them, which tdb-load applies\n"
"and mdb_load stores as one more database; an expired record is not\n"
"dumped.\n"
"\n"
"Each block's header has mapsize= (room for all the blocks written, so\n"
"that mdb_load can hold them; LMDB's own default is 1 MiB).  LMDB takes\n"
"keys of at most 511 bytes; tdb's may be 4096.\n"
"\n"
"Exit codes: 0 ok, 1 no such table, 2 usage error, 4 permission denied,\n"
"5 cannot connect to tdbd, 6 any other error (e.g. the snapshot grew\n"
"past tdbd's max-snapshot-bytes, a write error).\n";

struct tab {
	struct tdbc_table_stat st;
};

struct tabs {
	struct tab *v;
	size_t n, cap;
};

/* May this process read the table?  tdbd's rule (the class bits that
 * apply: owner, else group, else others; root always), with the ids
 * tdbd saw when we connected.  Tables one may only write are listed by
 * tdbd too (they can be opened and written), but there is nothing to
 * dump from them. */
static bool may_read(const struct tdbc_table_stat *st)
{
	gid_t groups[256];
	int i, n;

	if (geteuid() == 0)
		return true;
	if (geteuid() == st->uid)
		return st->mode & 0400;
	if (getegid() == st->gid)
		return st->mode & 0040;
	n = getgroups(256, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == st->gid)
			return st->mode & 0040;
	return st->mode & 0004;
}

static int collect(void *arg, const struct tdbc_table_stat *st)
{
	struct tabs *ts = arg;

	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 64;
		struct tab *v = realloc(ts->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ts->v = v;
		ts->cap = cap;
	}
	ts->v[ts->n++].st = *st;
	return 0;
}

/* tdbc_table_list's callback: the tables there is something to dump
 * from (-s TABLE takes the one named, and its scan says why not). */
static int collect_readable(void *arg, const struct tdbc_table_stat *st)
{
	return may_read(st) ? collect(arg, st) : 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tab *)a)->st.name,
		      ((const struct tab *)b)->st.name);
}

/* Room enough in an LMDB map for these tables, generously: B-tree pages
 * half full, node headers, overflow pages of big values, free pages of
 * mdb_load's commits.  A bigger map costs LMDB nothing (sparse). */
static uint64_t map_size(const struct tabs *ts)
{
	uint64_t b = 0;
	size_t i;

	for (i = 0; i < ts->n; i++)
		b += ts->v[i].st.bytes_used + ts->v[i].st.records * 64;
	b = b * 3 + (32ull << 20);
	return (b + (1ull << 20) - 1) & ~((1ull << 20) - 1);
}

struct opts {
	bool all, list, print, no_meta, quiet, no_rings, sort;
	const char *table, *file, *sock;
};

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "table", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "print", no_argument, NULL, 'p' },
		{ "file", required_argument, NULL, 'f' },
		{ "sort", no_argument, NULL, 'o' },
		{ "no-meta", no_argument, NULL, 'M' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "socket", required_argument, NULL, 'S' },
		{ "no-rings", no_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(o, 0, sizeof(*o));
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":as:lpf:oMqvS:Vh", lo,
				 NULL)) != -1) {
		switch (ch) {
		case 'a': o->all = true; break;
		case 's': o->table = optarg; break;
		case 'l': o->list = true; break;
		case 'p': o->print = true; break;
		case 'f': o->file = optarg; break;
		case 'o': o->sort = true; break;
		case 'M': o->no_meta = true; break;
		default:
			if (!dx_common_opt(ch, argv, usage_text, &o->quiet,
					   &o->sock, &o->no_rings))
				dx_usage_error("unknown option %s",
					       argv[optind - 1]);
		}
	}
	dx_operands(argc, argv, &o->sock, o->table);
	if (!o->list && !o->all && !o->table)
		dx_usage_error("%s", "give -a (all tables), -s TABLE or -l");
	if (o->all && o->table)
		dx_usage_error("%s", "-a and -s exclude each other");
}

struct out {
	FILE *f;
	const char *name;       /* for messages */
};

static void write_failed(struct out *w)
{
	int e = errno ? errno : EIO;

	dx_err("writing %s: %s", w->name, strerror(e));
	exit(DX_OTHER);
}

/* --- --sort: a table's records held in memory ---------------------------- */

/* One record: its key, its value right after it, in a chunk; its
 * deadline (0: none). */
struct rec {
	const unsigned char *p;
	uint32_t kl, vl;
	uint64_t dl;
};

/* Records of up to BIG bytes are packed into chunks of CHUNK bytes (at
 * most BIG wasted at each chunk's end, under 1%); bigger ones (values up
 * to 1 MiB) get a chunk of their own size. */
#define CHUNK (8u << 20)
#define BIG   (64u << 10)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	unsigned char data[];
};

/* A table's records as its snapshot gave them; bytes: all allocated. */
struct held {
	struct rec *v;
	size_t n, cap;
	struct chunk *small, *big;      /* small: the one being filled */
	uint64_t bytes;
};

static struct chunk *chunk_new(struct chunk **list, size_t cap,
			       uint64_t *bytes)
{
	struct chunk *c = malloc(sizeof(*c) + cap);

	if (!c)
		return NULL;
	c->next = *list;
	c->used = 0;
	c->cap = cap;
	*list = c;
	*bytes += sizeof(*c) + cap;
	return c;
}

/* Room for n more records in h->v (reserved from the table's record
 * count, so a table that did not grow is never copied). */
static int held_reserve(struct held *h, size_t n)
{
	struct rec *v;
	size_t cap;

	if (h->cap - h->n >= n)
		return 0;
	if (n > SIZE_MAX / sizeof(*v) - h->n)
		return -ENOMEM;
	cap = h->n + n > 2 * h->cap ? h->n + n : 2 * h->cap;
	if (cap > SIZE_MAX / sizeof(*v))
		cap = h->n + n;
	v = realloc(h->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	h->bytes += (cap - h->cap) * sizeof(*v);
	h->v = v;
	h->cap = cap;
	return 0;
}

/* Copy one record in (the scan's pointers die at its next call). */
static int held_add(struct held *h, const void *k, size_t kl,
		    const void *v, size_t vl, uint64_t dl)
{
	size_t need = kl + vl;
	struct chunk *c = h->small;
	struct rec *r;

	if (held_reserve(h, 1))
		return -ENOMEM;
	if (need > BIG)
		c = chunk_new(&h->big, need, &h->bytes);
	else if (!c || c->cap - c->used < need)
		c = chunk_new(&h->small, CHUNK, &h->bytes);
	if (!c)
		return -ENOMEM;
	r = &h->v[h->n++];
	r->p = c->data + c->used;
	r->kl = (uint32_t)kl;
	r->vl = (uint32_t)vl;
	r->dl = dl;
	memcpy(c->data + c->used, k, kl);
	if (vl)
		memcpy(c->data + c->used + kl, v, vl);
	c->used += need;
	return 0;
}

static void held_free(struct held *h)
{
	struct chunk *c, *next;

	for (c = h->small; c; c = next) {
		next = c->next;
		free(c);
	}
	for (c = h->big; c; c = next) {
		next = c->next;
		free(c);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

/* LMDB's default order (mdb_cmp_memn): memcmp of the common length,
 * then the shorter key first.  Keys are unique in a table, so the order
 * is total and the sort's instability does not show. */
static int by_key(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = memcmp(x->p, y->p, x->kl < y->kl ? x->kl : y->kl);

	if (c)
		return c;
	return (x->kl > y->kl) - (x->kl < y->kl);
}

/* --- one table ------------------------------------------------------------ */

/* Open st's table and a snapshot scan of it: 0, 1 if it went away (-a
 * skips it), or exits. */
static int open_scan(struct tdbc *c, const struct opts *o,
		     const struct tdbc_table_stat *st, struct tdbc_table **t,
		     struct tdbc_scan **s, struct dx_progress *pg)
{
	char e[DX_ESC_NAME];            /* the name, escaped for messages */
	int err;

	err = tdbc_table_open(c, st->name, t);
	if (!err) {
		err = tdbc_scan_open_flags(*t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT,
					   s);
		if (err)
			tdbc_table_close(*t);
	}
	if (err == -ENOENT && o->all) {
		dx_progress_clear(pg);
		dx_warn("table %s was dropped meanwhile: skipped",
			dx_esc(e, st->name));
		return 1;
	}
	if (err) {
		dx_progress_clear(pg);
		if (err == -EOPNOTSUPP)
			dx_err("%s: this tdbd cannot take snapshots (%s)",
			       dx_esc(e, st->name), dx_why(c, err));
		else
			dx_err("%s: %s", dx_esc(e, st->name),
			       dx_why(c, err));
		exit(dx_exit_for(err));
	}
	return 0;
}

/* The records held whose deadline must go with them: each with its
 * deadline, or in a table with a default TTL (dflt) each, 0 for none. */
static bool needs_dl(uint64_t dl, uint64_t dflt)
{
	return dl || dflt;
}

/* The deadlines block of h's records that need it, if any. */
static void write_deadlines(const struct opts *o, struct out *w,
			    const struct held *h, const char *table,
			    uint64_t mapsize, uint64_t dflt)
{
	size_t i;
	bool any = false;

	for (i = 0; i < h->n && !any; i++)
		any = needs_dl(h->v[i].dl, dflt);
	if (!any)
		return;
	if (df_write_deadlines_header(w->f, o->print, table, mapsize))
		write_failed(w);
	for (i = 0; i < h->n; i++)
		if (needs_dl(h->v[i].dl, dflt) &&
		    df_write_deadline(w->f, o->print, h->v[i].p, h->v[i].kl,
				      h->v[i].dl))
			write_failed(w);
	if (df_write_end(w->f))
		write_failed(w);
}

/* --sort: write h's records in key order, the bar showing the bytes
 * written of the table's. */
static void write_sorted(const struct opts *o, struct out *w,
			 struct held *h, const char *label,
			 struct dx_progress *pg)
{
	uint64_t done = 0, total = 0;
	size_t i;

	errno = 0;      /* write_failed() names the write's errno, not the
			 * scan's */
	for (i = 0; i < h->n; i++)
		total += h->v[i].kl + h->v[i].vl;
	dx_progress_begin(pg);
	for (i = 0; i < h->n; i++) {
		const struct rec *r = &h->v[i];

		if (df_write_item(w->f, o->print, r->p, r->kl) ||
		    df_write_item(w->f, o->print, r->p + r->kl, r->vl))
			write_failed(w);
		done += r->kl + r->vl;
		if (!(i & 255))
			dx_progress(pg, label, done, total, "bytes");
	}
}

/* Held records that need their deadlines (not --sort) are written at
 * most this many at a time. */
#define PEND_RECS  4096u
#define PEND_BYTES (4u << 20)

/* The held records (their deadlines block first): the open block of
 * records ends, a new one of the table is opened with them, and stays
 * open. */
static void flush_pending(const struct opts *o, struct out *w,
			  struct held *h, const char *table,
			  uint64_t mapsize, uint64_t dflt)
{
	size_t i;

	if (!h->n)
		return;
	if (df_write_end(w->f))
		write_failed(w);
	write_deadlines(o, w, h, table, mapsize, dflt);
	if (df_write_header(w->f, o->print, table, mapsize, NULL))
		write_failed(w);
	for (i = 0; i < h->n; i++)
		if (df_write_item(w->f, o->print, h->v[i].p, h->v[i].kl) ||
		    df_write_item(w->f, o->print, h->v[i].p + h->v[i].kl,
				  h->v[i].vl))
			write_failed(w);
	held_free(h);
}

/*
 * One table, as one snapshot: its records written as the scan gives
 * them (those that need their deadlines held a while: above), or with
 * --sort held, then sorted and written after the scan is closed.  0, 1
 * if it went away before its scan began (-a skips it), or exits.
 */
static int dump_one(struct tdbc *c, const struct opts *o, struct out *w,
		    const struct tdbc_table_stat *st, uint64_t mapsize,
		    struct dx_progress *pg)
{
	struct df_meta meta = { .have = !o->no_meta, .uid = st->uid,
				.gid = st->gid, .mode = st->mode,
				.max_extents = st->max_extents,
				.default_ttl = st->default_ttl,
				.max_bytes = st->max_bytes,
				.max_records = st->max_records,
				.evict = st->evict,
				.ordered = st->flags & TDBC_TABLE_ORDERED };
	/* an ordered table's scan is in key order already: no sort */
	bool sort = o->sort && !meta.ordered;
	struct held h = { 0 };
	struct tdbc_table *t;
	struct tdbc_scan *s;
	const void *k, *v;
	char e[DX_ESC_NAME];            /* the name, escaped for messages */
	char size[32];
	size_t kl, vl;
	uint64_t n = 0, dl, dflt = st->default_ttl, pend = 0;
	int err;

	if (open_scan(c, o, st, &t, &s, pg))
		return 1;
	dx_esc(e, st->name);
	dx_progress_begin(pg);
	errno = 0;
	/* with --sort the header follows the deadlines block */
	if (!sort &&
	    df_write_header(w->f, o->print, st->name, mapsize, &meta))
		write_failed(w);
	if (sort && held_reserve(&h, st->records > SIZE_MAX / 2 ?
				     SIZE_MAX / 2 : (size_t)(st->records +
				     st->records / 8 + 64)))
		goto nomem;
	while ((err = tdbc_scan_next_ex(s, &k, &kl, &v, &vl, NULL,
					&dl)) > 0) {
		if (sort) {
			if (held_add(&h, k, kl, v, vl, dl))
				goto nomem;
		} else if (needs_dl(dl, dflt) || (meta.ordered && h.n)) {
			/* an ordered table's records after a held one are
			 * held too: they stay in key order */
			if (held_add(&h, k, kl, v, vl, dl))
				goto nomem;
			pend += kl + vl;
			if (h.n >= PEND_RECS || pend >= PEND_BYTES) {
				flush_pending(o, w, &h, st->name, mapsize,
					      dflt);
				pend = 0;
			}
		} else if (df_write_item(w->f, o->print, k, kl) ||
			   df_write_item(w->f, o->print, v, vl)) {
			write_failed(w);
		}
		n++;
		pg->records++;
		pg->bytes += kl + vl;
		if (!(n & 255))
			dx_progress(pg, e, n, st->records, "records");
	}
	if (err < 0) {
		dx_progress_clear(pg);
		dx_err("%s: %s", e, dx_why(c, err));
		exit(dx_exit_for(err));
	}
	tdbc_scan_close(s);
	tdbc_table_close(t);
	if (sort) {
		if (h.n)
			qsort(h.v, h.n, sizeof(*h.v), by_key);
		errno = 0;
		write_deadlines(o, w, &h, st->name, mapsize, dflt);
		if (df_write_header(w->f, o->print, st->name, mapsize, &meta))
			write_failed(w);
		write_sorted(o, w, &h, e, pg);
		held_free(&h);
	} else {
		errno = 0;
		flush_pending(o, w, &h, st->name, mapsize, dflt);
	}
	if (df_write_end(w->f))
		write_failed(w);
	return 0;
nomem:
	dx_progress_clear(pg);
	dx_fmt_bytes(size, sizeof(size), h.bytes);
	if (sort)
		dx_err("%s: out of memory holding its records for --sort (%s "
		       "held after %llu records): dump it without --sort", e,
		       size, (unsigned long long)n);
	else
		dx_err("%s: out of memory holding records with deadlines "
		       "(%s held after %llu records)", e, size,
		       (unsigned long long)n);
	exit(DX_OTHER);
}

int main(int argc, char **argv)
{
	struct tabs ts = { 0 };
	struct dx_progress pg;
	struct out w;
	struct opts o;
	struct tdbc *c;
	uint64_t mapsize;
	char e[DX_ESC_NAME];
	size_t i;
	int err, rc = DX_OK;

	dx_prog = "tdb-dump";
	parse(argc, argv, &o);
	c = dx_connect(o.sock, o.no_rings);
	if (o.table && !o.list) {
		struct tdbc_table_stat st;

		err = tdbc_table_stat(c, o.table, &st);
		if (err) {
			dx_err("%s: %s", dx_esc(e, o.table), dx_why(c, err));
			rc = dx_exit_for(err);
			goto out;
		}
		if (collect(&ts, &st))
			err = -ENOMEM;
	} else {
		err = tdbc_table_list(c, collect_readable, &ts);
		if (err) {
			dx_err("listing the tables: %s", dx_why(c, err));
			rc = dx_exit_for(err);
			goto out;
		}
		if (ts.n)
			qsort(ts.v, ts.n, sizeof(*ts.v), by_name);
	}
	if (err) {
		dx_err("out of memory");
		rc = DX_OTHER;
		goto out;
	}
	if (o.list) {
		for (i = 0; i < ts.n; i++)     /* escaped: see tdb-dump(1) */
			printf("%s\n", dx_esc(e, ts.v[i].st.name));
		if (fflush(stdout) || ferror(stdout)) {
			dx_err("writing standard output: %s", strerror(errno));
			rc = DX_OTHER;
		}
		goto out;
	}
	w.name = o.file ? o.file : "standard output";
	w.f = o.file ? fopen(o.file, "w") : stdout;
	if (!w.f) {
		dx_err("cannot open %s: %s", o.file, strerror(errno));
		rc = DX_OTHER;
		goto out;
	}
	setvbuf(w.f, NULL, _IOFBF, 1u << 20);
	dx_progress_init(&pg, !o.quiet && (o.file || !isatty(STDOUT_FILENO)));
	mapsize = map_size(&ts);
	for (i = 0; i < ts.n; i++) {
		/* A table tdbd set aside at its start has no data to scan:
		 * with -a the others are dumped and the exit status says the
		 * dump is not whole. */
		if (o.all && ts.v[i].st.state == TDB_TABLE_SET_ASIDE) {
			dx_progress_clear(&pg);
			dx_warn("table %s was set aside by tdbd at its start "
				"(its data is on tdbd's disk, not served): not "
				"dumped", dx_esc(e, ts.v[i].st.name));
			rc = DX_OTHER;
			continue;
		}
		dump_one(c, &o, &w, &ts.v[i].st, mapsize, &pg);
	}
	dx_progress_clear(&pg);
	errno = 0;
	if (fflush(w.f) || ferror(w.f))
		write_failed(&w);
	if (w.f != stdout && fclose(w.f))
		write_failed(&w);
	dx_progress_summary(&pg, "dumped", NULL);
out:
	tdbc_close(c);
	free(ts.v);
	return rc;
}
