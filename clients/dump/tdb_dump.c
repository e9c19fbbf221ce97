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
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
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
"  -M, --no-meta       leave out tdb's own header keywords (tdb_owner,\n"
"                      tdb_group, tdb_mode, tdb_max_extents), which\n"
"                      mdb_load warns about and ignores\n"
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
	bool all, list, print, no_meta, quiet, no_rings;
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
	while ((ch = getopt_long(argc, argv, ":as:lpf:MqvS:Vh", lo,
				 NULL)) != -1) {
		switch (ch) {
		case 'a': o->all = true; break;
		case 's': o->table = optarg; break;
		case 'l': o->list = true; break;
		case 'p': o->print = true; break;
		case 'f': o->file = optarg; break;
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

/*
 * One table, as one snapshot.  0, 1 if it went away before its scan
 * began (-a skips it), or exits.
 */
static int dump_one(struct tdbc *c, const struct opts *o, struct out *w,
		    const struct tdbc_table_stat *st, uint64_t mapsize,
		    struct dx_progress *pg)
{
	struct df_meta meta = { .have = !o->no_meta, .uid = st->uid,
				.gid = st->gid, .mode = st->mode,
				.max_extents = st->max_extents };
	struct tdbc_table *t;
	struct tdbc_scan *s;
	const void *k, *v;
	char e[DX_ESC_NAME];            /* the name, escaped for messages */
	size_t kl, vl;
	uint64_t n = 0;
	int err;

	err = tdbc_table_open(c, st->name, &t);
	if (!err) {
		err = tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT,
					   &s);
		if (err)
			tdbc_table_close(t);
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
	dx_progress_begin(pg);
	errno = 0;
	if (df_write_header(w->f, o->print, st->name, mapsize, &meta))
		write_failed(w);
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) > 0) {
		if (df_write_item(w->f, o->print, k, kl) ||
		    df_write_item(w->f, o->print, v, vl))
			write_failed(w);
		n++;
		pg->records++;
		pg->bytes += kl + vl;
		if (!(n & 255))
			dx_progress(pg, dx_esc(e, st->name), n, st->records,
				    "records");
	}
	if (err < 0) {
		dx_progress_clear(pg);
		dx_err("%s: %s", dx_esc(e, st->name), dx_why(c, err));
		exit(dx_exit_for(err));
	}
	tdbc_scan_close(s);
	tdbc_table_close(t);
	if (df_write_end(w->f))
		write_failed(w);
	return 0;
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
