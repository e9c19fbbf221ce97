// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_setaside.c - a table recovery cannot restore is set aside, and
 * tdbd starts anyway (issue 12, item 3).
 *
 *  fill     tdbd without limits; V0 = its address space (VmSize) once
 *           up.  Tables "small" (default cap, 1 GiB of address space),
 *           "big" and "doomed" (max_extents 32768: 64 GiB each) get
 *           NKEYS keys; a checkpoint takes them; then more changes to
 *           small and big (new keys, overwrites, a delete) and a new
 *           table "late" (64 GiB, with keys) that are only in the WAL;
 *           SIGKILL, so no checkpoint at stop takes them.
 *  limited  tdbd under RLIMIT_AS = V0 + 16 GiB (prlimit --as): small
 *           fits, no 64 GiB table does.  tdbd must start; the log names
 *           each of big, doomed and late as set aside and says what to
 *           do; small holds all its data (checkpoint and WAL);
 *           TABLE_LIST shows the three with state TDB_TABLE_SET_ASIDE,
 *           STATS counts 3 set aside; opening big, and a GET, a PUT, a
 *           STAT of it fail with -EIO and the "was set aside at start"
 *           message; CREATE big is -EEXIST; an ordinary user may not
 *           DROP big (-EPERM); root DROPs doomed.  A new table new1 and
 *           a put to it, then a checkpoint that says it keeps the WAL
 *           for the set-aside tables.  A pinger beside, from the
 *           refusals on, must pass h_check_latency.  SIGTERM exits 0
 *           with a clean log, and big's database in the checkpoint
 *           (mdb_dump -s big) is byte for byte what the fill left.
 *  again    limited once more, after those checkpoints: big and late
 *           are set aside again, big's data still as of the LSN of the
 *           fill's checkpoint (the log says which), the rest serves; a
 *           checkpoint; SIGTERM; big's database still the same.
 *  restored tdbd without limits: big and late hold every key they had,
 *           the WAL-only changes included (the WAL kept for them);
 *           new1 its puts; doomed is gone (and its name is free); no
 *           table is set aside.  SIGTERM (its checkpoint
 *           now holds the restored tables), and one more start: all
 *           still there, from the checkpoint alone.
 *
 * "big" and "late" are ordered tables (issue 28): TABLE_LIST shows them
 * ordered while set aside, and restored they are ordered again with
 * their keys in order (a range walk of each).
 *
 * Fails on the code before the change: the limited start exited 1
 * ("checkpoint: table big cannot be made").  Skips (77) without
 * /usr/bin/prlimit; without /usr/bin/mdb_dump big's database is not
 * compared.  V0 is measured, so the limit fits the ASan build too (its
 * shadow memory is in V0).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define PRLIMIT "/usr/bin/prlimit"
#define MDB_DUMP "/usr/bin/mdb_dump"
#define TAG     "sa"
#define NKEYS   200
#define NLATE   50
#define BIG_EXT 32768u
#define MARGIN  (16ull << 30)   /* over V0: 1 GiB table fits, 64 GiB not */

static uint64_t ckpt_at_kill;   /* the checkpoint big's data is as of */
static uint64_t big_dump;       /* FNV of mdb_dump of big's database */

static const char *const fast[] = { "--checkpoint-interval", "1s",
	"--socket-mode", "0666", NULL };

/* --- the daemon ----------------------------------------------------------- */

static uint64_t vm_size(pid_t pid)
{
	char path[64], *s, *p;
	unsigned long long kb = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	s = h_read_file(path);
	p = strstr(s, "VmSize:");
	CHECK(p && sscanf(p + 7, "%llu", &kb) == 1, "no VmSize in %s", path);
	free(s);
	return (uint64_t)kb << 10;
}

/* Start tdbd on TAG's data directory (a fresh log), under RLIMIT_AS
 * limit bytes if limit. */
static void start(struct h_daemon *d, uint64_t limit)
{
	const char *argv[64];
	char as[64];
	unsigned int n = 0, i;

	h_base_args(d, TAG, argv + 3);
	truncate(d->log, 0);
	if (!limit) {
		h_start(d, TAG, fast);
		return;
	}
	snprintf(as, sizeof(as), "--as=%llu", (unsigned long long)limit);
	argv[n++] = as;
	argv[n++] = "--";
	argv[n++] = h_tdbd();
	while (argv[n])
		n++;
	for (i = 0; fast[i]; i++)
		argv[n++] = fast[i];
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	argv[n] = NULL;
	h_spawn_prog(d, PRLIMIT, d->log, argv, NULL);
	h_wait_socket(d, 20000);
}

/* FNV-1a of `mdb_dump -s big` of the checkpoint (tdbd stopped), or 0
 * without mdb_dump. */
static uint64_t dump_big(const struct h_daemon *d)
{
	char cmd[2 * H_PATH], buf[4096];
	uint64_t h = 0;
	size_t n, all = 0;
	FILE *f;

	if (access(MDB_DUMP, X_OK))
		return 0;
	snprintf(cmd, sizeof(cmd), MDB_DUMP " -s big %s/checkpoint", d->data);
	f = popen(cmd, "r");
	CHECK(f, "popen %s", cmd);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		h = h_fnv(h, buf, n);
		all += n;
	}
	CHECK(pclose(f) == 0 && all > 0, "%s failed", cmd);
	return h;
}

/* big's database in the checkpoint is byte for byte what it was. */
static void check_big_untouched(const struct h_daemon *d)
{
	CHECK(dump_big(d) == big_dump, "a checkpoint wrote big's database "
	      "while it was set aside");
}

static void kill9(struct h_daemon *d)
{
	kill(d->pid, SIGKILL);
	CHECK(h_wait_exit(d, 10000), "tdbd did not die");
}

/* --- data ----------------------------------------------------------------- */

/* What key i of a table holds after the fill, version 0 (checkpoint)
 * or 1 (the WAL-only changes); NULL if deleted. */
static const char *want_val(const char *table, int i, char *buf, size_t n)
{
	if (!strcmp(table, "late")) {
		snprintf(buf, n, "late-%d", i);
		return i < NLATE ? buf : NULL;
	}
	if (i == 7)
		return NULL;                    /* deleted after the ckpt */
	if (i % 10 == 3 || i >= NKEYS)          /* overwritten, or new */
		snprintf(buf, n, "%s-v1-%d", table, i);
	else
		snprintf(buf, n, "%s-v0-%d", table, i);
	return i < NKEYS + NLATE ? buf : NULL;
}

static void put(struct tdbc_table *t, const char *k, const char *v)
{
	int err = tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0);

	CHECK_EQ(err, 0, "put");
}

static struct tdbc_table *open_t(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = NULL;
	int err = tdbc_table_open(c, name, &t);

	CHECK(!err, "open %s: %s (%s)", name, h_errname(err),
	      tdbc_errmsg(c));
	return t;
}

/* big and late are ordered tables (issue 28): set aside, their kind is
 * kept (TABLE_LIST's flags, the checkpoint's schema, the WAL's create)
 * and they come back ordered, their keys in order. */
static bool ordered(const char *name)
{
	return !strcmp(name, "big") || !strcmp(name, "late");
}

static void fill_v0(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = open_t(c, name);
	char k[32], v[64];
	int i;

	for (i = 0; i < NKEYS; i++) {
		snprintf(k, sizeof(k), "k%04d", i);
		snprintf(v, sizeof(v), "%s-v0-%d", name, i);
		put(t, k, v);
	}
	tdbc_table_close(t);
}

/* The changes after the checkpoint: overwrites, new keys, a delete. */
static void fill_v1(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = open_t(c, name);
	char k[32], v[64];
	int i;

	for (i = 3; i < NKEYS; i += 10) {
		snprintf(k, sizeof(k), "k%04d", i);
		snprintf(v, sizeof(v), "%s-v1-%d", name, i);
		put(t, k, v);
	}
	for (i = NKEYS; i < NKEYS + NLATE; i++) {
		snprintf(k, sizeof(k), "k%04d", i);
		snprintf(v, sizeof(v), "%s-v1-%d", name, i);
		put(t, k, v);
	}
	CHECK_EQ(tdbc_del(t, NULL, "k0007", 5), 0, "del");
	tdbc_table_close(t);
}

/* Every key of the table holds what it must, and no other key. */
static void verify(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = open_t(c, name);
	struct tdbc_table_stat st;
	char k[32], v[64], got[128];
	int i, n = 0;

	for (i = 0; i < NKEYS + NLATE; i++) {
		const char *w = want_val(name, i, v, sizeof(v));
		long r;

		snprintf(k, sizeof(k), "k%04d", i);
		r = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got) - 1, NULL);
		if (!w) {
			CHECK_EQ(r, -ENOENT, "get of a deleted key");
			continue;
		}
		CHECK(r == (long)strlen(w) && !memcmp(got, w, (size_t)r),
		      "%s %s: got %ld (%.*s), want %s", name, k, r,
		      r > 0 ? (int)r : 0, got, w);
		n++;
	}
	CHECK_EQ(tdbc_table_stat(c, name, &st), 0, "stat");
	CHECK(st.records == (uint64_t)n && st.state == 0,
	      "%s: %llu records (want %d), state %u", name,
	      (unsigned long long)st.records, n, st.state);
	CHECK(!(st.flags & TDBC_TABLE_ORDERED) == !ordered(name),
	      "%s: flags %u: its kind changed", name, st.flags);
	if (ordered(name)) {
		/* its keys in order: k0000 < k0001 < ... (fixed width) */
		struct tdbc_range rg = { 0 };
		struct tdbc_scan *sc;
		const void *key, *val;
		size_t kl, vl;
		char prev[32] = "";
		int m = 0, e;

		CHECK_EQ(tdbc_scan_range(t, &rg, 0, 0, &sc), 0, "range");
		while ((e = tdbc_scan_next(sc, &key, &kl, &val, &vl)) == 1) {
			CHECK(kl < sizeof(prev) && (!m ||
			      memcmp(prev, key, kl) < 0), "%s: key %d out of "
			      "order", name, m);
			memcpy(prev, key, kl);
			m++;
		}
		CHECK(e == 0 && m == n, "%s: the range walk: %d, %d keys of "
		      "%d", name, e, m, n);
		tdbc_scan_close(sc);
	}
	tdbc_table_close(t);
}

/* --- phases --------------------------------------------------------------- */

static bool ckpt_covers(const struct tdbc_stats *st, const void *arg)
{
	const uint64_t *lsn = arg;

	return st->checkpoints > 0 && st->ckpt_lsn >= *lsn;
}

static bool more_ckpts(const struct tdbc_stats *st, const void *arg)
{
	const uint64_t *n = arg;

	return st->checkpoints > *n;
}

static void make_table(struct tdbc *c, const char *name, uint32_t ext)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.max_extents = ext;
	if (ordered(name))
		o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, name, &o), 0, "create");
}

static uint64_t phase_fill(void)
{
	struct h_daemon d;
	struct tdbc_stats st;
	struct tdbc *c;
	struct tdbc_table *t;
	uint64_t v0, lsn;
	char k[32], v[64];
	int i;

	start(&d, 0);
	v0 = vm_size(d.pid);
	c = h_connect(&d, 0);
	make_table(c, "small", 0);
	make_table(c, "big", BIG_EXT);
	make_table(c, "doomed", BIG_EXT);
	fill_v0(c, "small");
	fill_v0(c, "big");
	fill_v0(c, "doomed");
	h_stats(c, &st);
	lsn = st.wal_lsn;
	CHECK(h_wait_stats(c, &st, ckpt_covers, &lsn, 20000),
	      "no checkpoint of LSN %llu", (unsigned long long)lsn);
	fill_v1(c, "small");
	fill_v1(c, "big");
	make_table(c, "late", BIG_EXT);
	t = open_t(c, "late");
	for (i = 0; i < NLATE; i++) {
		snprintf(k, sizeof(k), "k%04d", i);
		snprintf(v, sizeof(v), "late-%d", i);
		put(t, k, v);
	}
	tdbc_table_close(t);
	h_stats(c, &st);
	CHECK(st.ckpt_lsn < st.wal_lsn, "a checkpoint took the WAL-only "
	      "changes (LSN %llu of %llu): too slow a machine?",
	      (unsigned long long)st.ckpt_lsn,
	      (unsigned long long)st.wal_lsn);
	ckpt_at_kill = st.ckpt_lsn;
	tdbc_close(c);
	kill9(&d);
	big_dump = dump_big(&d);
	if (!big_dump)
		h_note("no %s: big's database is not compared", MDB_DUMP);
	h_note("fill: V0 %llu MiB, checkpoint at LSN %llu, WAL at %llu",
	       (unsigned long long)(v0 >> 20),
	       (unsigned long long)st.ckpt_lsn,
	       (unsigned long long)st.wal_lsn);
	return v0;
}

struct listed {
	unsigned int n, aside;
	char names[8][TDB_NAME_MAX + 1];
};

static int list_one(void *arg, const struct tdbc_table_stat *st)
{
	struct listed *l = arg;

	if (st->state & TDB_TABLE_SET_ASIDE) {
		CHECK(l->aside < 8, "too many set aside");
		snprintf(l->names[l->aside++], sizeof(l->names[0]), "%s",
			 st->name);
		CHECK(st->max_extents == BIG_EXT && st->records == 0 &&
		      st->uid == 0 && st->mode == 0600,
		      "%s: max_extents %u records %llu uid %u mode %o",
		      st->name, st->max_extents,
		      (unsigned long long)st->records, st->uid, st->mode);
		/* set aside, an ordered table still says so */
		CHECK(!(st->flags & TDBC_TABLE_ORDERED) == !ordered(st->name),
		      "%s set aside: flags %u", st->name, st->flags);
	}
	l->n++;
	return 0;
}

static bool listed(const struct listed *l, const char *name)
{
	unsigned int i;

	for (i = 0; i < l->aside; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

/* One request on a set-aside table over the raw protocol. */
static void refused(struct h_raw *r, uint8_t cmd, int want)
{
	struct tdb_proto_msg m = { .cmd = cmd,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = "big" };
	char msg[512] = "";
	int err;

	if (cmd == TDB_CMD_GET || cmd == TDB_CMD_PUT) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = "k0001";
		m.key_len = 5;
	}
	if (cmd == TDB_CMD_PUT) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		m.value = "x";
		m.value_len = 1;
	}
	err = h_raw_call(r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK_EQ(err, want, "request on a set-aside table");
	if (want == -EIO)
		CHECK(strstr(msg, "table big was set aside at start") &&
		      strstr(msg, "kept on disk"), "message: %s", msg);
	h_note("cmd %u on big: %s: %s", cmd, h_errname(err), msg);
}

/* An ordinary user may not drop root's table, set aside or not. */
static void drop_as_user(const struct h_daemon *d)
{
	pid_t pid;
	int status;

	if (geteuid() != 0) {
		h_note("not root: no drop as an ordinary user");
		return;
	}
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc *c;
		int err;

		CHECK(!setresgid(65534, 65534, 65534) &&
		      !setresuid(65533, 65533, 65533), "setresuid");
		err = tdbc_connect(&c, d->sock, 0, NULL, 0);
		CHECK(!err, "connect as a user: %s", h_errname(err));
		err = tdbc_table_drop(c, "big");
		CHECK(err == -EPERM, "drop as a user: %s", h_errname(err));
		tdbc_close(c);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      !WEXITSTATUS(status), "the user's drop");
}

/* A put, and a checkpoint after it. */
static void put_and_checkpoint(struct tdbc *c, const char *k)
{
	struct tdbc_table *t = open_t(c, "new1");
	struct tdbc_stats st;
	uint64_t n;

	h_stats(c, &st);
	n = st.checkpoints;
	put(t, k, "limited");
	tdbc_table_close(t);
	CHECK(h_wait_stats(c, &st, more_ckpts, &n, 20000),
	      "no checkpoint while tables are set aside");
	CHECK(st.ckpt_failures == 0, "a checkpoint failed");
}

static void phase_limited(uint64_t v0)
{
	struct h_daemon d;
	struct tdbc_stats st;
	struct listed l = { 0 };
	struct tdbc_table *t = NULL;
	struct tdbc *c;
	struct h_pinger pg;
	struct h_lat lat;
	struct h_raw r;
	int err;

	start(&d, v0 + MARGIN);
	CHECK(h_log_has(&d, "table big cannot be restored") &&
	      h_log_has(&d, "table doomed cannot be restored") &&
	      h_log_has(&d, "table late cannot be restored") &&
	      !h_log_has(&d, "table small cannot be restored"),
	      "the log does not name the tables set aside");
	CHECK(h_log_has(&d, "restart tdbd to restore it"),
	      "the log does not say what to do");
	/* libc's text in lower case, as tdb's own: "(cannot allocate
	 * memory)", not "(Cannot allocate memory)" */
	CHECK(h_log_has(&d, "(cannot allocate memory)") &&
	      !h_log_has(&d, "(Cannot allocate memory)"), "the set-aside "
	      "message's errno text is not libc's in lower case");
	c = h_connect(&d, 0);
	verify(c, "small");
	CHECK_EQ(tdbc_table_list(c, list_one, &l), 0, "list");
	CHECK(l.n == 4 && l.aside == 3 && listed(&l, "big") &&
	      listed(&l, "doomed") && listed(&l, "late"),
	      "listed %u tables, %u set aside", l.n, l.aside);
	h_stats(c, &st);
	CHECK(st.tables == 4 && st.tables_aside == 3,
	      "stats: %u tables, %u set aside", st.tables, st.tables_aside);
	err = tdbc_table_open(c, "big", &t);
	CHECK(err == -EIO && strstr(tdbc_errmsg(c), "set aside"),
	      "open big: %s (%s)", h_errname(err), tdbc_errmsg(c));

	/* a well-behaved client beside, from here to the end */
	h_pinger_start(&pg, d.sock, 0, 0);
	h_raw_connect(&r, d.sock);
	refused(&r, TDB_CMD_GET, -EIO);
	refused(&r, TDB_CMD_PUT, -EIO);
	refused(&r, TDB_CMD_TABLE_STAT, -EIO);
	refused(&r, TDB_CMD_TABLE_CREATE, -EEXIST);
	h_raw_close(&r);
	drop_as_user(&d);
	CHECK_EQ(tdbc_table_drop(c, "doomed"), 0, "root drops doomed");

	/* a checkpoint with tables set aside: it keeps their WAL */
	make_table(c, "new1", 0);
	put_and_checkpoint(c, "after");
	CHECK(h_log_has(&d, "table(s) set aside at start (") &&
	      h_log_has(&d, "is kept for them"),
	      "the checkpoint did not say it keeps the WAL");
	h_pinger_finish_lat(&pg, &lat);
	h_check_latency(&lat, "a pinger beside tables set aside");
	tdbc_close(c);
	h_stop(&d);
	check_big_untouched(&d);
}

/* Limited again, after checkpoints that did not write big: still set
 * aside, its data still as of the same LSN (the mark in the
 * checkpoint), and the WAL since still kept. */
/* tdb-dump -a ($TDB_DUMP) dumps the tables it can, names each table
 * set aside on stderr and exits 6: a backup that is not whole says so. */
static void dump_all(const struct h_daemon *d)
{
	const char *dump = getenv("TDB_DUMP");
	char file[H_PATH], *out, *err;

	if (!dump || access(dump, X_OK)) {
		h_note("tdb-dump -a not checked (no $TDB_DUMP)");
		return;
	}
	h_path(file, sizeof(file), "all.dump");
	{
		const char *const argv[] = { dump, "--socket", d->sock, "-a",
					     "-q", "-f", file, NULL };

		CHECK_EQ(h_run(argv, "dump.out", "dump.err"), 6,
			 "tdb-dump -a with tables set aside");
	}
	out = h_read_file(file);
	h_path(file, sizeof(file), "dump.err");
	err = h_read_file(file);
	CHECK(strstr(out, "database=small\n") &&
	      !strstr(out, "database=big\n"), "tdb-dump -a: small must be "
	      "in the dump, big not");
	CHECK(strstr(err, "table big was set aside") &&
	      strstr(err, "table late was set aside"), "tdb-dump -a does not "
	      "name the tables set aside: %s", err);
	free(out);
	free(err);
}

static void phase_limited_again(uint64_t v0)
{
	struct h_daemon d;
	struct tdbc_stats st;
	struct listed l = { 0 };
	char line[128];
	struct tdbc *c;

	start(&d, v0 + MARGIN);
	snprintf(line, sizeof(line), "its WAL records after LSN %llu are kept",
		 (unsigned long long)ckpt_at_kill);
	CHECK(h_log_has(&d, "table big cannot be restored") &&
	      h_log_has(&d, line) &&
	      h_log_has(&d, "table late cannot be restored") &&
	      !h_log_has(&d, "table doomed"),
	      "the log does not name big and late as set aside (%s)", line);
	c = h_connect(&d, 0);
	verify(c, "small");
	CHECK_EQ(tdbc_table_list(c, list_one, &l), 0, "list");
	/* small, big, late, new1 and the pinger's ping0 */
	CHECK(l.n == 5 && l.aside == 2 && listed(&l, "big") &&
	      listed(&l, "late"), "listed %u tables, %u set aside", l.n,
	      l.aside);
	h_stats(c, &st);
	CHECK(st.tables_aside == 2, "stats: %u set aside", st.tables_aside);
	dump_all(&d);
	put_and_checkpoint(c, "again");
	tdbc_close(c);
	h_stop(&d);
	check_big_untouched(&d);
}

static void check_restored(struct tdbc *c, bool first)
{
	struct tdbc_table *t = NULL;
	struct tdbc_stats st;
	char got[64];

	verify(c, "small");
	verify(c, "big");
	verify(c, "late");
	t = open_t(c, "new1");
	CHECK(tdbc_get(t, NULL, "after", 5, got, sizeof(got), NULL) == 7 &&
	      !memcmp(got, "limited", 7) &&
	      tdbc_get(t, NULL, "again", 5, got, sizeof(got), NULL) == 7,
	      "new1's puts while limited");
	tdbc_table_close(t);
	t = NULL;
	if (first)
		CHECK_EQ(tdbc_table_open(c, "doomed", &t), -ENOENT,
			 "doomed dropped");
	h_stats(c, &st);
	CHECK(st.tables_aside == 0, "%u set aside", st.tables_aside);
}

static void phase_restored(void)
{
	struct h_daemon d;
	struct tdbc *c;

	start(&d, 0);
	CHECK(!h_log_has(&d, "cannot be restored"), "set aside again");
	c = h_connect(&d, 0);
	check_restored(c, true);
	make_table(c, "doomed", 0);     /* its name is free */
	tdbc_close(c);
	h_stop(&d);

	/* the checkpoint at stop has the restored tables whole */
	start(&d, 0);
	c = h_connect(&d, 0);
	check_restored(c, false);
	tdbc_close(c);
	h_stop(&d);
}

int main(void)
{
	uint64_t v0;

	h_init("setaside", 180);
	if (access(PRLIMIT, X_OK)) {
		h_note("no %s: skipped", PRLIMIT);
		return 77;
	}
	v0 = phase_fill();
	phase_limited(v0);
	phase_limited_again(v0);
	phase_restored();
	h_done();
	return 0;
}
