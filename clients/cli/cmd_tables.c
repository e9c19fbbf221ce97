// SPDX-License-Identifier: GPL-2.0-only
/*
 * cmd_tables.c - the tdb CLI's table and daemon commands: tables, create,
 * drop, stat, stats.  Text output is NAME VALUE lines (stat, stats) or a
 * header and aligned columns (tables, sorted by name, owners by name);
 * --json gives the objects that `tdb --help` describes, with the field
 * names of the text output.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int ok_doc(const struct cli *cli)
{
	if (cli->json)
		cli_ok_doc();
	return EXIT_OK;
}

static const char *const evict_names[] = {
	[TDBC_EVICT_REFUSE] = "refuse", [TDBC_EVICT_LRU] = "lru",
	[TDBC_EVICT_LFU] = "lfu", [TDBC_EVICT_TTL] = "ttl",
};

int cli_evict_parse(const char *s, uint32_t *evict)
{
	uint32_t i;

	for (i = 0; i < sizeof(evict_names) / sizeof(evict_names[0]); i++)
		if (!strcmp(s, evict_names[i])) {
			*evict = i;
			return 0;
		}
	return -EINVAL;
}

const char *cli_evict_name(uint32_t evict)
{
	return evict < sizeof(evict_names) / sizeof(evict_names[0]) ?
	       evict_names[evict] : "unknown";
}

int cmd_create(struct cli *cli)
{
	struct tdbc_table_opts o;
	int err;

	tdbc_table_opts_init(&o);
	o.max_extents = cli->max_extents;
	if (cli->mode != (uint32_t)-1)
		o.mode = cli->mode;
	if (cli->uid != (uint32_t)-1)
		o.uid = cli->uid;
	if (cli->gid != (uint32_t)-1)
		o.gid = cli->gid;
	o.default_ttl = cli->ttl_ms;
	o.max_bytes = cli->max_bytes;
	o.max_records = cli->max_records;
	o.evict = cli->evict;
	o.flags = cli->table_flags;
	err = tdbc_table_create(cli->c, cli->table, &o);
	return err ? cli_fail(cli, err) : ok_doc(cli);
}

int cmd_drop(struct cli *cli)
{
	int err = tdbc_table_drop(cli->c, cli->table);

	return err ? cli_fail(cli, err) : ok_doc(cli);
}

/* --- one table's figures ------------------------------------------------ */

/* The figures of struct tdbc_table_stat, in output order, as u64. */
struct figure {
	const char *name;
	uint64_t v;
};

#define STAT_FIGURES 10

static void stat_figures(const struct tdbc_table_stat *st,
			 struct figure f[STAT_FIGURES])
{
	const struct figure all[STAT_FIGURES] = {
		{ "records", st->records },
		{ "bytes_used", st->bytes_used },
		{ "bytes_allocated", st->bytes_allocated },
		{ "bytes_pending", st->bytes_pending },
		{ "extents", st->extents },
		{ "max_extents", st->max_extents },
		{ "page_size", st->page_size },
		{ "index_nodes", st->index_nodes },
		{ "index_buckets", st->index_buckets },
		{ "uid", st->uid },
	};

	memcpy(f, all, sizeof(all));
}

/* "ok", or "aside": tdbd set the table aside at start (it could not be
 * restored; its data is kept on disk, its figures are 0). */
static const char *state_name(const struct tdbc_table_stat *st)
{
	return st->state & TDB_TABLE_SET_ASIDE ? "aside" : "ok";
}

/* "hash", or "ordered" (create --ordered): keys kept in order. */
static const char *kind_name(const struct tdbc_table_stat *st)
{
	return st->flags & TDBC_TABLE_ORDERED ? "ordered" : "hash";
}

static void stat_json(const struct tdbc_table_stat *st)
{
	struct figure f[STAT_FIGURES];
	int i;

	stat_figures(st, f);
	/* a name may hold bytes >= 0x80 (proto.h), so maybe "name_hex" */
	cli_doc_open();
	putchar('{');
	fmt_json_field(stdout, "name", st->name, strlen(st->name), false);
	for (i = 0; i < STAT_FIGURES; i++)
		printf(",\"%s\":%" PRIu64, f[i].name, f[i].v);
	printf(",\"gid\":%" PRIu32 ",\"mode\":\"%04" PRIo32 "\","
	       "\"state\":\"%s\"", st->gid, st->mode, state_name(st));
	/* expiry: the default TTL (0: none), records with a deadline,
	 * records removed at theirs */
	printf(",\"default_ttl_ms\":%" PRIu64 ",\"expiring\":%" PRIu64
	       ",\"expired\":%" PRIu64, st->default_ttl, st->expiring,
	       st->expired);
	/* eviction: the bounds (0: none), the policy, records evicted */
	printf(",\"max_bytes\":%" PRIu64 ",\"max_records\":%" PRIu64
	       ",\"evict\":\"%s\",\"evicted\":%" PRIu64,
	       st->max_bytes, st->max_records, cli_evict_name(st->evict),
	       st->evicted);
	printf(",\"kind\":\"%s\"}", kind_name(st));
	cli_doc_close();
}

static void stat_text(const struct tdbc_table_stat *st)
{
	struct figure f[STAT_FIGURES];
	int i;

	stat_figures(st, f);
	printf("%-16s ", "name");
	fmt_bytes(stdout, st->name, strlen(st->name), FMT_ESCAPE);
	putchar('\n');
	for (i = 0; i < STAT_FIGURES; i++)
		printf("%-16s %" PRIu64 "\n", f[i].name, f[i].v);
	printf("%-16s %" PRIu32 "\n%-16s %04" PRIo32 "\n%-16s %s\n", "gid",
	       st->gid, "mode", st->mode, "state", state_name(st));
	printf("%-16s %" PRIu64 "\n%-16s %" PRIu64 "\n%-16s %" PRIu64 "\n",
	       "default_ttl_ms", st->default_ttl, "expiring", st->expiring,
	       "expired", st->expired);
	printf("%-16s %" PRIu64 "\n%-16s %" PRIu64 "\n%-16s %s\n"
	       "%-16s %" PRIu64 "\n", "max_bytes", st->max_bytes,
	       "max_records", st->max_records, "evict",
	       cli_evict_name(st->evict), "evicted", st->evicted);
	printf("%-16s %s\n", "kind", kind_name(st));
}

int cmd_stat(struct cli *cli)
{
	struct tdbc_table_stat st;
	int err = tdbc_table_stat(cli->c, cli->table, &st);

	if (err)
		return cli_fail(cli, err);
	if (cli->json)
		stat_json(&st);
	else
		stat_text(&st);
	return EXIT_OK;
}

/* --- the list of tables ------------------------------------------------- */

/* Rows are collected, sorted by name and then printed (aligned). */
struct table_rows {
	struct tdbc_table_stat *v;
	size_t n, cap;
};

static int collect_row(void *arg, const struct tdbc_table_stat *st)
{
	struct table_rows *r = arg;
	struct tdbc_table_stat *nv;

	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 16;
		nv = realloc(r->v, r->cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		r->v = nv;
	}
	r->v[r->n++] = *st;
	return 0;
}

/* By name, byte by byte (strcmp: unsigned bytes, so the C locale's
 * order whatever LC_COLLATE says). */
static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tdbc_table_stat *)a)->name,
		      ((const struct tdbc_table_stat *)b)->name);
}

/* A name in the NAME column: escaped as scan escapes keys (every byte
 * outside printable ASCII as \xHH, UTF-8 too: so one byte of output is
 * one column, and columns never misalign), padded to w characters. */
static void print_name(const char *name, size_t w)
{
	size_t n = strlen(name), len = fmt_escaped_len(name, n);

	fmt_bytes(stdout, name, n, FMT_ESCAPE);
	while (len++ < w)
		putchar(' ');
}

/* A user's or group's name if it is plain printable ASCII (one
 * character a column, nothing to escape), else its number in num. */
static const char *id_text(const char *name, uint32_t id, char num[16])
{
	if (name && fmt_escaped_len(name, strlen(name)) == strlen(name))
		return name;
	snprintf(num, 16, "%" PRIu32, id);
	return num;
}

/* "user:group" by name (getpwuid, getgrgid), a number for either when
 * it has no name or one that would need escaping. */
static void owner_text(uint32_t uid, uint32_t gid, char *buf, size_t size)
{
	struct passwd *pw = getpwuid(uid);
	const char *un = pw ? pw->pw_name : NULL;
	char u[16], g[16];
	struct group *gr;

	un = id_text(un, uid, u);       /* before getgrgid reuses memory */
	snprintf(buf, size, "%s:", un);
	gr = getgrgid(gid);
	snprintf(buf + strlen(buf), size - strlen(buf), "%s",
		 id_text(gr ? gr->gr_name : NULL, gid, g));
}

#define OWNER_MAX 80
#define BOUND_MAX 48

/* The BOUND column: "1000r" (records), "64M" (key and value bytes, in
 * the unit --max-bytes reads back), both as "1000r,64M", or "-". */
static void bound_text(const struct tdbc_table_stat *st, char *buf,
		       size_t size)
{
	static const char units[] = "KMGT";
	uint64_t b = st->max_bytes;
	int u = 0, n = 0;

	buf[0] = '\0';
	if (st->max_records)
		n = snprintf(buf, size, "%" PRIu64 "r", st->max_records);
	if (b) {
		while (u < 4 && b >= 1024 && !(b % 1024)) {
			b /= 1024;
			u++;
		}
		snprintf(buf + n, size - (size_t)n, "%s%" PRIu64 "%.*s",
			 n ? "," : "", b, u ? 1 : 0, u ? &units[u - 1] : "");
	}
	if (!buf[0])
		snprintf(buf, size, "-");
}

static void print_rows(const struct table_rows *r)
{
	size_t w = 4, ow = 5;   /* strlen("NAME"), strlen("OWNER") */
	size_t tw = 3;          /* strlen("TTL") */
	size_t bw = 5;          /* strlen("BOUND") */
	size_t i;
	char ext[32], ttl[FMT_DURATION_MAX], bound[BOUND_MAX];
	char (*owner)[OWNER_MAX] = calloc(r->n + 1, OWNER_MAX);

	for (i = 0; i < r->n; i++) {
		const char *name = r->v[i].name;
		size_t len = fmt_escaped_len(name, strlen(name));

		if (len > w)
			w = len;
		if (r->v[i].default_ttl &&
		    strlen(fmt_format_duration(r->v[i].default_ttl, ttl)) > tw)
			tw = strlen(ttl);
		bound_text(&r->v[i], bound, sizeof(bound));
		if (strlen(bound) > bw)
			bw = strlen(bound);
		if (owner) {
			owner_text(r->v[i].uid, r->v[i].gid, owner[i],
				   OWNER_MAX);
			if (strlen(owner[i]) > ow)
				ow = strlen(owner[i]);
		}
	}
	printf("%-*s %10s %12s %11s %7s %*s %10s %*s %6s %-*s %4s %5s %7s\n",
	       (int)w, "NAME", "RECORDS", "BYTES", "EXTENTS", "PAGE", (int)tw,
	       "TTL", "EXPIRING", (int)bw, "BOUND", "EVICT", (int)ow,
	       "OWNER", "MODE", "STATE", "KIND");
	for (i = 0; i < r->n; i++) {
		const struct tdbc_table_stat *st = &r->v[i];
		char num[32];

		snprintf(ext, sizeof(ext), "%" PRIu32 "/%" PRIu32,
			 st->extents, st->max_extents);
		if (!owner)     /* out of memory: numbers, still aligned */
			snprintf(num, sizeof(num), "%" PRIu32 ":%" PRIu32,
				 st->uid, st->gid);
		if (st->default_ttl)
			fmt_format_duration(st->default_ttl, ttl);
		else
			snprintf(ttl, sizeof(ttl), "-");
		bound_text(st, bound, sizeof(bound));
		print_name(st->name, w);
		printf(" %10" PRIu64 " %12" PRIu64 " %11s %7" PRIu64
		       " %*s %10" PRIu64 " %*s %6s %-*s %04" PRIo32 " %5s"
		       " %7s\n",
		       st->records, st->bytes_used, ext, st->page_size,
		       (int)tw, ttl, st->expiring, (int)bw, bound,
		       st->max_bytes || st->max_records ?
		       cli_evict_name(st->evict) : "-", (int)ow,
		       owner ? owner[i] : num, st->mode, state_name(st),
		       kind_name(st));
	}
	free(owner);
}

int cmd_tables(struct cli *cli)
{
	struct table_rows r = { 0 };
	int err = tdbc_table_list(cli->c, collect_row, &r);
	size_t i;

	if (!err && r.n)
		qsort(r.v, r.n, sizeof(*r.v), by_name);
	if (!err && cli->json)
		for (i = 0; i < r.n; i++)
			stat_json(&r.v[i]);
	else if (!err)
		print_rows(&r);
	free(r.v);
	return err ? cli_fail(cli, err) : EXIT_OK;
}

/* --- the daemon's counters ---------------------------------------------- */

int cmd_stats(struct cli *cli)
{
	struct tdbc_stats s = { 0 };
	int err = tdbc_stats(cli->c, &s), i;
	/* every member of struct tdbc_stats, in its order */
	const struct figure f[] = {
		{ "tables", s.tables }, { "clients", s.clients },
		{ "watches", s.watches }, { "txns", s.txns },
		{ "requests", s.requests }, { "errors", s.errors },
		{ "uptime_ms", s.uptime_ms }, { "accepted", s.accepted },
		{ "cleanups", s.cleanups },
		{ "txns_aborted", s.txns_aborted },
		{ "watches_dropped", s.watches_dropped },
		{ "rings", s.rings }, { "throttled", s.throttled },
		{ "dumps", s.dumps }, { "rings_freed", s.rings_freed },
		{ "stuck", s.stuck }, { "violations", s.violations },
		{ "wal_records", s.wal_records }, { "wal_lsn", s.wal_lsn },
		{ "wal_durable", s.wal_durable }, { "wal_syncs", s.wal_syncs },
		{ "checkpoints", s.checkpoints },
		{ "ckpt_failures", s.ckpt_failures },
		{ "ckpt_lsn", s.ckpt_lsn },
		{ "tables_aside", s.tables_aside },
		{ "readers_expired", s.readers_expired },
		{ "expired", s.expired },
		{ "evicted", s.evicted },
	};
	const int n = (int)(sizeof(f) / sizeof(f[0]));

	if (err)
		return cli_fail(cli, err);
	if (cli->json)
		cli_doc_open();
	for (i = 0; i < n; i++) {
		if (cli->json)
			printf("%s\"%s\":%" PRIu64, i ? "," : "{", f[i].name,
			       f[i].v);
		else
			printf("%-16s %" PRIu64 "\n", f[i].name, f[i].v);
	}
	if (cli->json) {
		putchar('}');
		cli_doc_close();
	}
	return EXIT_OK;
}
