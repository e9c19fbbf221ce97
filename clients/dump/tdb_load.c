// SPDX-License-Identifier: GPL-2.0-only
/*
 * tdb_load.c - tdb-load: dumps in the text format of db_dump and
 * mdb_dump (VERSION=3, dumpfmt.h), from tdb-dump or LMDB's mdb_dump,
 * loaded into a running tdbd.
 *
 * The input is read a line at a time (bounded memory whatever its size:
 * a line is at most one item, DF_LINE_MAX bytes).  Records are gathered
 * into batches of at most --batch records and BATCH_BYTES bytes, each
 * committed as one transaction whose puts are pipelined (tdbc_submit,
 * tdbc_reap) rather than one round trip each.  A batch the daemon refuses
 * as too big
 * for its max-txn-ops / max-txn-bytes is split; with -N, a batch whose
 * commit meets an existing key is put again record by record with
 * no-overwrite, skipping the keys that exist.
 *
 * Each block goes into the table its database= names, or -s TABLE; a
 * missing table is created with the dump's tdb_owner, tdb_group and
 * tdb_max_extents (an owner or group only root may give is dropped with
 * a warning) and the mode asked for: --mode, else the dump's tdb_mode,
 * else 0600.  Unknown header keywords are warned about and ignored, as
 * mdb_load does.
 *
 * Squatting: table names are global and first come, so a table that
 * exists already may be someone else's, made (say, mode 0666) to read
 * what is restored into it.  An existing table is loaded into only if
 * the invoking user (effective uid) owns it and its mode is no wider
 * than the mode asked for, or with --into-existing; otherwise tdb-load
 * stops (exit 4) naming the table, its owner and mode.  Tables this run
 * created are its own whatever owner the dump gave them.
 *
 * Malformed input stops the load with "tdb-load: FILE:LINE: why" and
 * exit 7: the records before the bad line's record are committed; that
 * record (never part of it) and everything after are not loaded.
 *
 * Expiry (dumpfmt.h, "Deadlines"): a table is created with the dump's
 * tdb_default_ttl=; a "/deadlines/TABLE" block is held in memory (a
 * hash of table and key: struct dlmap) until the records it names
 * come, each put with its deadline (TDBC_DEADLINE, the same instant),
 * or, for a 0 (no deadline in a table with a default TTL), put and then
 * persisted (tdbc_persist, after its batch commits: a put names no "no
 * deadline"), or skipped if its deadline has passed by the loader's
 * clock (counted as expired).  A record no deadline names is put
 * plainly: the table's default TTL, if any, applies.
 *
 * Ordered tables (issue 28): a table is created ordered if the dump's
 * header says tdb_ordered=1, or with --ordered (every table it creates;
 * a dump from mdb_dump has no such line).  A table that exists keeps its
 * kind: a dump of the other kind is loaded into it with a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "dumpfmt.h"

#ifndef TDB_VERSION
#define TDB_VERSION "unknown"
#endif

#define BATCH_DEFAULT 1000u
#define BATCH_MAX     65536u
#define BATCH_BYTES   (4u << 20)
#define PIPE          64u       /* puts submitted per tdbc_submit */

static const char usage_text[] =
"Usage: tdb-load [OPTION]... [SOCKET]\n"
"Load dumps in the text format of db_dump and mdb_dump (VERSION=3), as\n"
"tdb-dump and mdb_dump write them, into tdbd.  Each block goes into the\n"
"table its database= line names; a missing table is created (with the\n"
"dump's tdb_owner, tdb_group, tdb_mode, tdb_max_extents and\n"
"tdb_default_ttl, if any; ordered if the dump's tdb_ordered=1 says so).\n"
"\n"
"  -f, --file FILE     read FILE (default: standard input)\n"
"  -s, --table TABLE   load every block into TABLE, whatever its\n"
"                      database= says (needed for a block without one,\n"
"                      as mdb_dump writes LMDB's main database)\n"
"  -N, --no-overwrite  keep the values of keys that exist already\n"
"      --ordered       create the missing tables ordered (keys kept in\n"
"                      order: range scans), whatever the dump says\n"
"      --mode MODE     permission bits (octal) of the tables it creates,\n"
"                      and the widest an existing table may have\n"
"                      (default: the dump's tdb_mode, else 0600)\n"
"      --into-existing load into a table that exists even if it is not\n"
"                      yours or its mode is wider than MODE (without it,\n"
"                      such a table stops the load: exit 4)\n"
"  -b, --batch N       records per transaction, 1..65536 (default 1000;\n"
"                      a transaction also holds at most 4 MiB)\n"
"  -q, --quiet         no progress bar and no summary (there are only\n"
"                      when stderr is a terminal)\n"
"  -v, --verbose       the summary line on stderr even when it is not a\n"
"                      terminal (\"loaded N records, X MiB in Y s\")\n"
"  -S, --socket PATH   tdbd's socket, also given as SOCKET (default\n"
"                      $TDB_SOCKET, else " TDBC_SOCKET_DEFAULT ")\n"
"      --no-rings      talk over the socket only (no shared rings)\n"
"  -V, --version       print the version and exit\n"
"  -h, --help          print this help and exit\n"
"\n"
"Input: format=bytevalue or print; type=btree (or hash); keys 1..4096\n"
"bytes, values up to 1 MiB; unknown keywords are ignored with a warning;\n"
"databases with duplicate keys (dupsort) are refused.  A block\n"
"\"database=/deadlines/TABLE\" (tdb-dump's) gives the deadlines of the\n"
"records that follow it; one already past skips its record.  Malformed input\n"
"stops the load with FILE:LINE and why: the records before the bad one\n"
"are loaded, it and the rest are not.\n"
"\n"
"Exit codes: 0 ok, 1 a table went away, 2 usage error, 4 permission\n"
"denied (or an existing table that is not yours, or wider than MODE),\n"
"5 cannot connect to tdbd, 6 any other error (from tdbd, reading the\n"
"input), 7 malformed input.\n";

struct opts {
	bool noov, quiet, no_rings;
	bool into_existing;             /* --into-existing */
	bool ordered;                   /* --ordered */
	const char *table, *file, *sock;
	unsigned int batch;
	uint32_t mode;                  /* --mode, or (uint32_t)-1 */
};

/* A record of the batch: offsets into the arena; its deadline
 * (TDBC_DEADLINE if not 0) and whether to persist it once put. */
struct brec {
	size_t off;
	uint32_t klen, vlen;
	uint64_t dl;
	bool persist;
};

/* Deadlines waiting for their records: table name, NUL, key -> ms. */
struct dlent {
	struct dlent *next;
	uint64_t dl;
	size_t len;
	unsigned char id[];
};
struct dlmap {
	struct dlent **b;
	size_t nb, n;
};

struct load {
	struct opts o;
	struct tdbc *c;
	const char *fname;              /* for messages */
	struct df_in in;
	struct dx_progress pg;
	uint64_t size;                  /* of the input, 0 if unknown */
	/* the table being loaded */
	struct tdbc_table *t;
	char tname[TDB_NAME_MAX + 1];
	char tesc[DX_ESC_NAME];         /* tname escaped, for messages */
	/* the tables this run created (loaded into without a check) */
	char (*made)[TDB_NAME_MAX + 1];
	unsigned int nmade;
	/* the batch */
	struct brec *recs;
	unsigned int n;
	unsigned char *arena;
	size_t used;
	uint64_t loaded, skipped, expired;
	struct dlmap dl;
	char why[512];                  /* tdbd's text of a pipelined
					 * failure ("" if none) */
};

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "table", required_argument, NULL, 's' },
		{ "no-overwrite", no_argument, NULL, 'N' },
		{ "mode", required_argument, NULL, 'm' },
		{ "into-existing", no_argument, NULL, 'E' },
		{ "ordered", no_argument, NULL, 'O' },
		{ "batch", required_argument, NULL, 'b' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "socket", required_argument, NULL, 'S' },
		{ "no-rings", no_argument, NULL, 'R' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	unsigned long v;
	int ch;

	memset(o, 0, sizeof(*o));
	o->batch = BATCH_DEFAULT;
	o->mode = (uint32_t)-1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":f:s:Nb:qvS:Vh", lo,
				 NULL)) != -1) {
		switch (ch) {
		case 'f': o->file = optarg; break;
		case 's': o->table = optarg; break;
		case 'N': o->noov = true; break;
		case 'b':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !optarg[0] || v < 1 ||
			    v > BATCH_MAX)
				dx_usage_error("-b: not a number in 1..65536: "
					    "'%s'", optarg);
			o->batch = (unsigned int)v;
			break;
		case 'm':
			errno = 0;
			v = strtoul(optarg, &end, 8);
			if (errno || *end || !optarg[0] || optarg[0] == '-' ||
			    optarg[0] == '+' || v > 0777)
				dx_usage_error("--mode: not an octal mode in "
					       "0..0777: '%s'", optarg);
			o->mode = (uint32_t)v;
			break;
		case 'E': o->into_existing = true; break;
		case 'O': o->ordered = true; break;
		default:
			if (!dx_common_opt(ch, argv, usage_text, &o->quiet,
					   &o->sock, &o->no_rings))
				dx_usage_error("unknown option %s",
					       argv[optind - 1]);
		}
	}
	dx_operands(argc, argv, &o->sock, o->table);
}

/* --- committing ----------------------------------------------------------- */

static void daemon_error(struct load *L, int err, const char *what)
{
	dx_progress_clear(&L->pg);
	if (L->why[0])
		dx_err("%s: %s: %s: %s", L->tesc, what, tdbc_strerror(err),
		       L->why);
	else
		dx_err("%s: %s: %s", L->tesc, what, dx_why(L->c, err));
	exit(dx_exit_for(err));
}

static const void *rec_key(const struct load *L, const struct brec *r)
{
	return L->arena + r->off;
}

static const void *rec_val(const struct load *L, const struct brec *r)
{
	return L->arena + r->off + r->klen;
}

/* One by one, no-overwrite: an existing key is skipped. */
static int put_each(struct load *L, unsigned int lo, unsigned int hi)
{
	unsigned int i;
	int err;

	for (i = lo; i < hi; i++) {
		const struct brec *r = &L->recs[i];

		if (r->dl)
			err = tdbc_put_at(L->t, NULL, rec_key(L, r), r->klen,
					  rec_val(L, r), r->vlen,
					  L->o.noov ? TDBC_NOOVERWRITE : 0, 0,
					  r->dl);
		else
			err = tdbc_put(L->t, NULL, rec_key(L, r), r->klen,
				       rec_val(L, r), r->vlen,
				       L->o.noov ? TDBC_NOOVERWRITE : 0);
		if (err == -EEXIST && L->o.noov) {
			L->skipped++;
			continue;
		}
		if (!err && r->persist)
			err = tdbc_persist(L->t, rec_key(L, r), r->klen);
		if (err)
			return err;
		L->loaded++;
	}
	return 0;
}

/* Records [lo, hi) put into x, pipelined: 0 or the first failure. */
static int put_all(struct load *L, struct tdbc_txn *x, unsigned int lo,
		   unsigned int hi, unsigned int flags)
{
	struct tdbc_req rq[PIPE];
	struct tdbc_cqe cq[PIPE];
	unsigned int next = lo, done = 0, m, j;
	int first = 0, r;

	while (done < hi - lo) {
		while (next < hi) {
			m = hi - next < PIPE ? hi - next : PIPE;
			for (j = 0; j < m; j++) {
				const struct brec *b = &L->recs[next + j];

				rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT,
					.table = L->t, .txn = x,
					.key = rec_key(L, b), .klen = b->klen,
					.val = rec_val(L, b), .vlen = b->vlen,
					.flags = flags, .user = next + j };
				if (b->dl) {    /* as it was: the same instant */
					rq[j].flags |= TDBC_DEADLINE;
					rq[j].expiry = b->dl;
				}
			}
			r = tdbc_submit(L->c, rq, m);
			if (r == -EAGAIN)
				break;          /* full: reap first */
			if (r < 0)
				return r;
			next += (unsigned int)r;
			if ((unsigned int)r < m)
				break;
		}
		r = tdbc_reap(L->c, cq, PIPE, 1, -1);
		if (r < 0)
			return r;
		for (j = 0; j < (unsigned int)r; j++) {
			if (cq[j].res && !first) {
				first = cq[j].res;
				snprintf(L->why, sizeof(L->why), "%s",
					 tdbc_errmsg(L->c));
			}
		}
		done += (unsigned int)r;
	}
	return first;
}

/* Records [lo, hi), committed: those without a deadline in a table with
 * a default TTL lose the one their put gave them. */
static int persist_range(struct load *L, unsigned int lo, unsigned int hi)
{
	unsigned int i;
	int err;

	for (i = lo; i < hi; i++) {
		const struct brec *r = &L->recs[i];

		if (r->persist &&
		    (err = tdbc_persist(L->t, rec_key(L, r), r->klen))) {
			L->why[0] = '\0';
			return err;
		}
	}
	return 0;
}

/* Records [lo, hi) of the batch as one transaction (or split). */
static int commit_range(struct load *L, unsigned int lo, unsigned int hi)
{
	unsigned int flags = L->o.noov ? TDBC_NOOVERWRITE : 0;
	struct tdbc_txn *x;
	int err;

	if (lo == hi)
		return 0;
	L->why[0] = '\0';
	err = tdbc_txn_begin(L->c, &x);
	if (err)
		return err;
	err = put_all(L, x, lo, hi, flags);
	if (err)
		tdbc_txn_abort(x);
	else
		err = tdbc_txn_commit(x);
	if (!err) {
		L->loaded += hi - lo;
		return persist_range(L, lo, hi);
	}
	/* Over tdbd's max-txn-ops / max-txn-bytes: halve it; a record too
	 * big for a transaction alone goes in alone. */
	if (err == -E2BIG && hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		err = commit_range(L, lo, mid);
		return err ? err : commit_range(L, mid, hi);
	}
	if (err == -E2BIG || (err == -EEXIST && L->o.noov)) {
		L->why[0] = '\0';
		return put_each(L, lo, hi);
	}
	return err;
}

static void flush(struct load *L)
{
	int err = commit_range(L, 0, L->n);

	if (err)
		daemon_error(L, err, "loading");
	L->n = 0;
	L->used = 0;
}

/* --- input errors ------------------------------------------------------------ */

/* Stop at a bad line: commit the records before it, then exit 7. */
__attribute__((noreturn))
static void input_error(struct load *L, uint64_t line, const char *why)
{
	dx_progress_clear(&L->pg);
	dx_err("%s:%llu: %s", L->fname, (unsigned long long)line, why);
	if (L->t && L->n)
		flush(L);
	exit(DX_INPUT);
}

/* The next line, or exit on a read error / an over-long line. */
static int next_line(struct load *L, const unsigned char **line,
		     size_t *len)
{
	int rc = df_getline(&L->in, line, len);

	if (rc == -EMSGSIZE)
		input_error(L, L->in.lineno, "line longer than any item can "
			    "be (3 MiB)");
	if (rc == -ENOMEM)
		input_error(L, L->in.lineno, "out of memory for a line");
	if (rc < 0) {
		dx_progress_clear(&L->pg);
		dx_err("reading %s: %s", L->fname, strerror(-rc));
		if (L->t && L->n)
			flush(L);
		exit(DX_OTHER);
	}
	return rc;
}

/* --- tables ------------------------------------------------------------------ */

/* The mode a block's table is asked for: --mode, else the dump's
 * tdb_mode, else 0600 (its owner only). */
static uint32_t want_mode(const struct load *L, const struct df_header *h)
{
	if (L->o.mode != (uint32_t)-1)
		return L->o.mode;
	return h->have_mode ? h->mode : 0600;
}

static bool made_here(const struct load *L, const char *name)
{
	unsigned int i;

	for (i = 0; i < L->nmade; i++)
		if (!strcmp(L->made[i], name))
			return true;
	return false;
}

static void remember_made(struct load *L, const char *name)
{
	char (*m)[TDB_NAME_MAX + 1];

	m = realloc(L->made, (L->nmade + 1) * sizeof(*m));
	if (!m) {
		dx_progress_clear(&L->pg);
		dx_err("out of memory");
		exit(DX_OTHER);
	}
	L->made = m;
	snprintf(m[L->nmade++], sizeof(*m), "%s", name);
}

/*
 * An existing table (not made by this run): load into it only if it is
 * ours and no wider than want, or with --into-existing; else stop.
 * Someone else's table, or one others may read, could be a squatter's
 * trap for the data (tdb-load(1), SECURITY).
 */
static void check_existing(struct load *L, const char *name, uint32_t want,
			   bool ordered)
{
	struct tdbc_table_stat st;
	uint32_t me = (uint32_t)geteuid();
	bool theirs, wider;
	char whose[64], how[64];
	int err;

	if (made_here(L, name))
		return;
	err = tdbc_table_stat(L->c, name, &st);
	if (err)
		daemon_error(L, err, "checking the existing table");
	/* its kind is fixed at create: the records go in all the same */
	if (!(st.flags & TDBC_TABLE_ORDERED) != !ordered) {
		dx_progress_clear(&L->pg);
		dx_warn("%s: the table exists as %s table, the dump's is %s: "
			"loading into it as it is", L->tesc,
			ordered ? "a hash" : "an ordered",
			ordered ? "ordered" : "a hash table");
	}
	if (L->o.into_existing)
		return;
	theirs = st.uid != me;
	wider = (st.mode & 0777 & ~want) != 0;
	if (!theirs && !wider)
		return;
	whose[0] = how[0] = '\0';
	if (theirs)
		snprintf(whose, sizeof(whose), " (not you: uid %u)", me);
	if (wider)
		snprintf(how, sizeof(how), " (wider than %04o)", want);
	dx_progress_clear(&L->pg);
	dx_err("%s: the table exists, owned by uid %u%s, mode %04o%s: not "
	       "loading into it (--into-existing to load anyway)", L->tesc,
	       st.uid, whose, st.mode, how);
	exit(DX_PERM);
}

/* Create the missing table name for block h; 0, or -EEXIST if someone
 * else made it meanwhile, or another failure. */
static int create_table(struct load *L, const struct df_header *h,
			const char *name, uint32_t want)
{
	struct tdbc_table_opts to;
	int err;

	tdbc_table_opts_init(&to);
	to.mode = want;
	if (h->have_max_extents)
		to.max_extents = h->max_extents;
	if (h->have_uid)
		to.uid = h->uid;
	if (h->have_gid)
		to.gid = h->gid;
	if (h->have_default_ttl)
		to.default_ttl = h->default_ttl;
	to.max_bytes = h->max_bytes;
	to.max_records = h->max_records;
	if (h->have_evict)
		to.evict = h->evict;
	if (h->ordered || L->o.ordered)
		to.flags |= TDBC_TABLE_ORDERED;
	err = tdbc_table_create(L->c, name, &to);
	if (err == -EPERM && (h->have_uid || h->have_gid)) {
		dx_progress_clear(&L->pg);
		dx_warn("%s: the dump's owner %u, group %u: %s; created as "
			"yours", L->tesc, h->uid, h->gid, tdbc_errmsg(L->c));
		to.uid = to.gid = (uint32_t)-1;
		err = tdbc_table_create(L->c, name, &to);
	}
	if (!err)
		remember_made(L, name);
	return err;
}

static void open_table(struct load *L, const struct df_header *h,
		       uint64_t hdr_line)
{
	const char *name = L->o.table ? L->o.table :
			   h->have_table ? h->table : NULL;
	uint32_t want = want_mode(L, h);
	int err;

	if (!name)
		input_error(L, hdr_line, "this block's header has no "
			    "database= line: name the table with -s TABLE");
	if (L->t && !strcmp(L->tname, name))
		return;
	if (L->t)
		tdbc_table_close(L->t);
	L->t = NULL;
	snprintf(L->tname, sizeof(L->tname), "%s", name);
	dx_esc(L->tesc, name);
	err = tdbc_table_open(L->c, name, &L->t);
	if (err == -ENOENT) {
		err = create_table(L, h, name, want);
		/* made meanwhile by someone else: checked like any other
		 * existing table (this is the squatter's race) */
		if (!err || err == -EEXIST)
			err = tdbc_table_open(L->c, name, &L->t);
	}
	if (err)
		daemon_error(L, err, "opening the table");
	check_existing(L, name, want, h->ordered || L->o.ordered);
}

/* --- deadlines ------------------------------------------------------------------ */

static uint64_t dl_hash(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */

	while (n--)
		h = (h ^ *p++) * 1099511628211ull;
	return h;
}

/* table NUL key into buf (TDB_NAME_MAX + 1 + TDB_KEY_MAX): its length */
static size_t dl_id(unsigned char *buf, const char *table, const void *key,
		    size_t klen)
{
	size_t tl = strlen(table);

	memcpy(buf, table, tl + 1);
	memcpy(buf + tl + 1, key, klen);
	return tl + 1 + klen;
}

static struct dlent **dl_find(struct dlmap *m, const unsigned char *id,
			      size_t len)
{
	struct dlent **e = &m->b[dl_hash(id, len) & (m->nb - 1)];

	for (; *e; e = &(*e)->next)
		if ((*e)->len == len && !memcmp((*e)->id, id, len))
			break;
	return e;
}

static void dl_oom(struct load *L)
{
	dx_progress_clear(&L->pg);
	dx_err("out of memory holding the dump's deadlines");
	exit(DX_OTHER);
}

/* Hold (or replace) a deadline until its record comes. */
static void dl_put(struct load *L, const unsigned char *id, size_t len,
		   uint64_t dl)
{
	struct dlmap *m = &L->dl;
	struct dlent **e, *n;

	if (m->n >= m->nb) {            /* grow: load factor 1 */
		size_t nb = m->nb ? m->nb * 2 : 1024, i;
		struct dlent **b = calloc(nb, sizeof(*b));

		if (!b)
			dl_oom(L);
		for (i = 0; i < m->nb; i++)
			while (m->b[i]) {
				n = m->b[i];
				m->b[i] = n->next;
				e = &b[dl_hash(n->id, n->len) & (nb - 1)];
				n->next = *e;
				*e = n;
			}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	e = dl_find(m, id, len);
	if (*e) {
		(*e)->dl = dl;
		return;
	}
	n = malloc(sizeof(*n) + len);
	if (!n)
		dl_oom(L);
	n->next = NULL;
	n->dl = dl;
	n->len = len;
	memcpy(n->id, id, len);
	*e = n;
	m->n++;
}

/* The deadline held for id, taken out: 1 and *dl, or 0 if none. */
static int dl_take(struct dlmap *m, const unsigned char *id, size_t len,
		   uint64_t *dl)
{
	struct dlent **e, *n;

	if (!m->n)
		return 0;
	e = dl_find(m, id, len);
	if (!*e)
		return 0;
	n = *e;
	*e = n->next;
	*dl = n->dl;
	free(n);
	m->n--;
	return 1;
}

static void dl_free(struct dlmap *m)
{
	size_t i;

	for (i = 0; i < m->nb; i++)
		while (m->b[i]) {
			struct dlent *n = m->b[i];

			m->b[i] = n->next;
			free(n);
		}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* --- the input ------------------------------------------------------------------ */

static void progress(struct load *L)
{
	if (L->size)
		dx_progress(&L->pg, L->tesc, L->in.bytes, L->size, "bytes");
	else
		dx_progress(&L->pg, L->tesc, L->loaded + L->n, 0, "records");
}

static bool is_data_end(const unsigned char *line, size_t len)
{
	return len == 8 && !memcmp(line, "DATA=END", 8);
}

/* An item line: " " and the item. */
static void item_line(struct load *L, const unsigned char *line, size_t len,
		      const char *what_missing)
{
	if (!len || line[0] != ' ')
		input_error(L, L->in.lineno, what_missing);
}

/* A deadlines block, up to DATA=END: held for the records of table
 * (-s TABLE's, else the block's). */
static void load_deadlines(struct load *L, const struct df_header *h,
			   uint64_t hdr_line)
{
	static unsigned char id[TDB_NAME_MAX + 1 + TDB_KEY_MAX];
	unsigned char key[TDB_KEY_MAX], digits[24];
	const char *table = L->o.table ? L->o.table :
			    h->have_table ? h->table : NULL;
	const unsigned char *line;
	const char *msg = NULL;
	size_t len;
	long kl, dn;
	uint64_t dl;

	if (!table)
		input_error(L, hdr_line, "this deadlines block names no "
			    "table");
	for (;;) {
		uint64_t kline;

		if (!next_line(L, &line, &len))
			input_error(L, L->in.lineno + 1, "unexpected end of "
				    "input: no DATA=END");
		if (is_data_end(line, len))
			break;
		item_line(L, line, len, "expected a key line (a space, then "
			  "the key) or DATA=END");
		kline = L->in.lineno;
		kl = df_decode(h->print, line + 1, len - 1, key, sizeof(key),
			       &msg);
		if (kl == -E2BIG)
			input_error(L, kline, "key longer than 4096 bytes "
				    "(tdb's limit)");
		if (kl < 0)
			input_error(L, kline, msg);
		if (kl == 0)
			input_error(L, kline, "empty key (tdb keys are 1..4096 "
				    "bytes)");
		if (!next_line(L, &line, &len) || is_data_end(line, len))
			input_error(L, kline, "a key of a deadlines block "
				    "without its deadline");
		item_line(L, line, len, "expected a deadline line (a space, "
			  "then the deadline)");
		dn = df_decode(h->print, line + 1, len - 1, digits,
			       sizeof(digits), &msg);
		if (dn == -E2BIG)
			msg = "a deadline longer than 20 digits";
		if (dn < 0 || df_parse_deadline(digits, (size_t)(dn < 0 ? 0 :
							      dn), &dl, &msg))
			input_error(L, L->in.lineno, msg);
		dl_put(L, id, dl_id(id, table, key, (size_t)kl), dl);
	}
}

/* One block's records, up to DATA=END. */
static void load_data(struct load *L, const struct df_header *h)
{
	static unsigned char id[TDB_NAME_MAX + 1 + TDB_KEY_MAX];
	uint64_t now = now_ms();

	const unsigned char *line;
	const char *msg = NULL;
	size_t len;
	long kl, vl;

	for (;;) {
		unsigned char *dst;
		uint64_t kline;

		if (!next_line(L, &line, &len))
			input_error(L, L->in.lineno + 1, "unexpected end of "
				    "input: no DATA=END");
		if (is_data_end(line, len))
			break;
		item_line(L, line, len, "expected a key line (a space, then "
			  "the key) or DATA=END");
		kline = L->in.lineno;
		dst = L->arena + L->used;
		kl = df_decode(h->print, line + 1, len - 1, dst, TDB_KEY_MAX,
			       &msg);
		if (kl == -E2BIG)
			input_error(L, kline, "key longer than 4096 bytes "
				    "(tdb's limit)");
		if (kl < 0)
			input_error(L, kline, msg);
		if (kl == 0)
			input_error(L, kline, "empty key (tdb keys are 1..4096 "
				    "bytes)");
		if (!next_line(L, &line, &len))
			input_error(L, kline, "unexpected end of input: a key "
				    "without its value");
		if (is_data_end(line, len))
			input_error(L, kline, "a key without its value "
				    "(DATA=END follows it)");
		item_line(L, line, len, "expected a value line (a space, "
			  "then the value)");
		vl = df_decode(h->print, line + 1, len - 1, dst + kl,
			       TDB_VALUE_MAX, &msg);
		if (vl == -E2BIG)
			input_error(L, L->in.lineno, "value longer than 1 MiB "
				    "(tdb's limit)");
		if (vl < 0)
			input_error(L, L->in.lineno, msg);
		L->recs[L->n].dl = 0;
		L->recs[L->n].persist = false;
		if (dl_take(&L->dl, id, dl_id(id, L->tname, dst, (size_t)kl),
			    &L->recs[L->n].dl)) {
			uint64_t d = L->recs[L->n].dl;

			if (!(L->n & 1023))
				now = now_ms();
			if (d && d <= now) {    /* expired since the dump */
				L->expired++;
				continue;
			}
			L->recs[L->n].persist = !d;
		}
		L->recs[L->n].off = L->used;
		L->recs[L->n].klen = (uint32_t)kl;
		L->recs[L->n].vlen = (uint32_t)vl;
		L->n++;
		L->used += (size_t)(kl + vl);
		L->pg.bytes += (uint64_t)(kl + vl);
		if (L->n >= L->o.batch || L->used >= BATCH_BYTES)
			flush(L);
		progress(L);
	}
	flush(L);
}

/* Blocks until the end of input. */
static void load_all(struct load *L)
{
	const unsigned char *line;
	struct df_header h;
	const char *msg = NULL;
	size_t len;
	int r;

	for (;;) {
		uint64_t start = 0;

		df_header_init(&h);
		for (;;) {
			if (!next_line(L, &line, &len)) {
				if (!start)
					return;         /* between blocks */
				input_error(L, L->in.lineno + 1, "unexpected "
					    "end of input in a header (no "
					    "HEADER=END)");
			}
			if (!start)
				start = L->in.lineno;
			r = df_header_line(&h, line, len, &msg);
			if (r < 0)
				input_error(L, L->in.lineno, msg);
			if (r == DF_HDR_END)
				break;
			if (r == DF_HDR_UNKNOWN) {
				const unsigned char *eq = memchr(line, '=',
								 len);

				dx_progress_clear(&L->pg);
				dx_warn("%s:%llu: unrecognized keyword ignored: "
					"%.*s", L->fname,
					(unsigned long long)L->in.lineno,
					(int)(eq - line), (const char *)line);
			}
		}
		if (h.deadlines) {
			load_deadlines(L, &h, start);
			continue;
		}
		open_table(L, &h, start);
		load_data(L, &h);
	}
}

int main(int argc, char **argv)
{
	struct load L;
	struct stat sb;
	char kept[128];
	int kn = 0;
	int fd = STDIN_FILENO;

	dx_prog = "tdb-load";
	memset(&L, 0, sizeof(L));
	parse(argc, argv, &L.o);
	L.fname = L.o.file ? L.o.file : "-";
	if (L.o.file) {
		fd = open(L.o.file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			dx_err("cannot open %s: %s", L.o.file,
			       strerror(errno));
			return DX_OTHER;
		}
	}
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode))
		L.size = (uint64_t)sb.st_size;
	L.recs = calloc(L.o.batch, sizeof(*L.recs));
	L.arena = malloc(BATCH_BYTES + TDB_KEY_MAX + TDB_VALUE_MAX);
	if (!L.recs || !L.arena || df_in_init(&L.in, fd)) {
		dx_err("out of memory");
		return DX_OTHER;
	}
	L.c = dx_connect(L.o.sock, L.o.no_rings);
	dx_progress_init(&L.pg, !L.o.quiet);
	load_all(&L);
	dx_progress_clear(&L.pg);
	/* Records counts those written; keys -N kept are said apart. */
	L.pg.records = L.loaded;
	kept[0] = '\0';
	if (L.skipped)
		kn = snprintf(kept, sizeof(kept), "%llu existing key%s kept",
			      (unsigned long long)L.skipped,
			      L.skipped == 1 ? "" : "s");
	if (L.expired)
		snprintf(kept + kn, sizeof(kept) - (size_t)kn, "%s%llu "
			 "expired since the dump skipped", kn ? ", " : "",
			 (unsigned long long)L.expired);
	dx_progress_summary(&L.pg, "loaded", kept[0] ? kept : NULL);
	if (L.t)
		tdbc_table_close(L.t);
	tdbc_close(L.c);
	df_in_free(&L.in);
	free(L.recs);
	free(L.arena);
	free(L.made);
	dl_free(&L.dl);
	if (fd != STDIN_FILENO)
		close(fd);
	return DX_OK;
}
