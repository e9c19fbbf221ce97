// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_names.c - table names and restores across the trust boundary
 * (issue 12, items 7 and 8): a real tdbd, the tdb CLI and tdb-load.
 *
 *  create  TABLE_CREATE with names outside the safe set (leading '-' or
 *          '.', C1 and C0 control bytes, a space, punctuation), sent raw
 *          (the builder refuses them) beside a pinger: each gets -EINVAL
 *          with the rule's text at the TABLE attribute's offset, no table
 *          is made, tdbd serves on (root attaches and reads; the pinger's
 *          latency holds).  libtdbclient refuses them without sending;
 *          `tdb create` exits 2 (usage error) saying why.
 *  legacy  a table whose name predates the rule ("-old", a C1 CSI byte,
 *          "..", a backslash), made by writing its CREATE record into
 *          the WAL by hand before tdbd starts: it is recovered and is
 *          looked up, written, read and dropped by that name; `tdb
 *          tables`, `tdb stat` and `tdb-dump -l` print it escaped
 *          (--json: name_hex; a UTF-8 legacy name: a string), and no log
 *          line of tdbd holds its raw bytes (escaped ones instead).
 *  squat   an ordinary user (uid 65534) makes "payroll" mode 0666 before
 *          root restores a dump: tdb-load refuses to load into it (exit
 *          4, naming the table, its owner and mode) and loads nothing;
 *          --into-existing loads; a fresh load makes its table 0600 (or
 *          --mode); root's own table wider than the mode asked for is
 *          refused too, and accepted with --mode.
 *
 * The CLI, tdb-load and tdb-dump come from $TDB_CLI, $TDB_LOAD and
 * $TDB_DUMP (meson.build);
 * the parts that need them are skipped without.  Needs root (setresuid
 * children, a WAL written as tdbd's): skipped (77) otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "harness.h"
#include "wal.h"

#define NOBODY 65534u
#define GENL_LEN 20u    /* nlmsghdr + genlmsghdr: the first attribute */

/* Allowed: letters, digits, '_', '.', '-', ':' (tdb/proto.h, NAMES). */
#define ALLOWED "(allowed: letters, digits, '_', '.', '-', ':')"

static const struct {
	const char *name, *msg;
} bad_names[] = {
	{ "-rf", "table name starts with '-' or '.'" },
	{ "..", "table name starts with '-' or '.'" },
	{ ".hidden", "table name starts with '-' or '.'" },
	{ "a\x9b" "31m", "table name has a byte over 0x7f, not ASCII "
	  ALLOWED },
	{ "caf\xc3\xa9", "table name has a byte over 0x7f, not ASCII "
	  ALLOWED },
	{ "a\x1b[2J", "table name has a control character " ALLOWED },
	{ "a\nb", "table name has a control character " ALLOWED },
	{ "pay roll", "table name has a space " ALLOWED },
	{ "a/b", "table name has a punctuation character other than '_', "
	  "'.', '-', ':'" },
	{ "$(id)", "table name has a punctuation character other than "
	  "'_', '.', '-', ':'" },
};
#define NBAD (sizeof(bad_names) / sizeof(bad_names[0]))

/* The legacy name: allowed before the rule (bytes 0x21..0xff but 0x7f
 * and '/'), and everything the escapes must handle. */
static const char legacy[] = "-old\x9b" "31m..\\";
static const char legacy_esc[] = "-old\\x9b31m..\\\\";
static const char legacy_hex[] = "2d6f6c649b33316d2e2e5c";
/* and one in UTF-8 ("té"), a JSON string */
static const char legacy_utf8[] = "t\xc3\xa9";

/* --- helpers ------------------------------------------------------------- */

/* Fork, become uid/gid NOBODY (no groups), run fn; fail on its failure. */
static void as_nobody(void (*fn)(const char *), const char *sock)
{
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		CHECK(setgroups(0, NULL) == 0, "setgroups");
		CHECK(setresgid(NOBODY, NOBODY, NOBODY) == 0, "setresgid");
		CHECK(setresuid(NOBODY, NOBODY, NOBODY) == 0, "setresuid");
		fn(sock);
		_exit(0);
	}
	h_track(pid);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the uid %u child "
	      "failed (status %#x)", NOBODY, st);
}

static char *scratch(const char *name)
{
	char p[H_PATH];

	h_path(p, sizeof(p), name);
	return h_read_file(p);
}

static void write_scratch(const char *name, const char *text)
{
	char p[H_PATH];
	FILE *f;

	h_path(p, sizeof(p), name);
	f = fopen(p, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", p);
}

/* A TABLE_CREATE for name, sent raw: built with a stand-in name of the
 * same length, which is then overwritten (the builder would refuse
 * name).  Returns the answer's errno; its text into msg, its offset. */
static int raw_create(struct h_raw *r, const char *name, char *msg,
		      size_t msglen, uint32_t *off)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_CREATE,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE) };
	struct tdb_proto_extack ext = { 0 };
	static unsigned char buf[TDB_PROTO_ERROR_MAX + 256];
	struct tdb_proto_msg a;
	char stand_in[TDB_NAME_MAX + 1];
	size_t n = strlen(name);
	long len;
	int err;

	memset(stand_in, 'x', n);
	stand_in[n] = '\0';
	m.table = stand_in;
	m.seq = ++r->seq;
	len = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &m, &ext);
	CHECK(len > 0, "build: %s", ext.msg);
	memcpy(buf + GENL_LEN + MNL_ATTR_HDRLEN, name, n);
	CHECK(h_raw_send(r, buf, (size_t)len) == 0, "send");
	len = h_raw_recv(r, buf, sizeof(buf), 10000);
	CHECK(len > 0, "no answer to a raw CREATE: %s",
	      h_errname((int)len));
	err = tdb_proto_parse(buf, (size_t)len, TDB_PROTO_ANSWER, &a, &ext);
	CHECK(err == 0 && a.type == NLMSG_ERROR && a.seq == m.seq,
	      "the answer to a raw CREATE: %s", h_errname(err));
	snprintf(msg, msglen, "%s", a.ext.msg ? a.ext.msg : "");
	*off = a.ext.offset;
	return a.error;
}

/* --- create --------------------------------------------------------------- */

static void part_create(const struct h_daemon *d, const char *cli)
{
	struct tdbc_table_stat st;
	struct tdbc_stats s0, s1;
	struct tdbc_table *t;
	struct h_pinger pg;
	struct h_lat lat;
	struct h_raw r;
	struct tdbc *c;
	char msg[TDB_PROTO_EXTACK_MAX + 1], val[8];
	uint32_t off;
	unsigned int i, k, rounds = (unsigned int)h_scaled(200, 20);
	uint64_t end;
	int err;

	c = h_connect(d, 0);
	h_stats(c, &s0);
	h_pinger_start(&pg, d->sock, 0, 0);
	h_raw_connect(&r, d->sock);
	/* the attack runs for 1.5 s at least, so the pinger beside it
	 * gets enough GETs to measure (a length, not an assertion) */
	end = h_now_ms() + 1500;
	for (k = 0; k < rounds || h_now_ms() < end; k++) {
		for (i = 0; i < NBAD; i++) {
			err = raw_create(&r, bad_names[i].name, msg,
					 sizeof(msg), &off);
			CHECK_EQ(err, -EINVAL, "a raw CREATE of a bad name");
			CHECK(!strcmp(msg, bad_names[i].msg), "name %zu: "
			      "'%s', want '%s'", (size_t)i, msg,
			      bad_names[i].msg);
			CHECK_EQ(off, GENL_LEN, "the offset of TABLE");
		}
	}
	/* the same connection goes on; a safe name is made */
	err = raw_create(&r, "payroll-2024:q1.v_2", msg, sizeof(msg), &off);
	CHECK(err == 0, "a safe name: %s (%s)", h_errname(err), msg);
	h_raw_close(&r);
	h_pinger_finish_lat(&pg, &lat);
	h_check_latency(&lat, "GETs beside bad-name CREATEs");
	h_note("%u raw CREATEs with %zu kinds of bad name: -EINVAL, the "
	       "rule's text, offset %u", k * (unsigned int)NBAD, NBAD,
	       GENL_LEN);

	/* nothing was made of them: one table more (and the pinger's) */
	h_stats(c, &s1);
	CHECK(s1.tables == s0.tables + 2, "tables %llu -> %llu, want +2 "
	      "(the safe name and the pinger's)",
	      (unsigned long long)s0.tables, (unsigned long long)s1.tables);
	for (i = 0; i < NBAD; i++) {
		/* -EINVAL: not even a name lookups take (a space...) */
		err = tdbc_table_stat(c, bad_names[i].name, &st);
		CHECK(err == -ENOENT || err == -EINVAL, "a refused name "
		      "exists: %s", h_errname(err));
	}

	/* root attaches (rings: flags 0), writes and reads */
	CHECK(tdbc_table_open(c, "payroll-2024:q1.v_2", &t) == 0, "open");
	CHECK(tdbc_put(t, NULL, "k", 1, "v1", 2, 0) == 0, "put");
	CHECK(tdbc_get(t, NULL, "k", 1, val, sizeof(val), NULL) == 2 &&
	      !memcmp(val, "v1", 2), "get");
	tdbc_table_close(t);

	/* libtdbclient: refused before anything is sent */
	for (i = 0; i < NBAD; i++) {
		err = tdbc_table_create(c, bad_names[i].name, NULL);
		CHECK_EQ(err, -EINVAL, "tdbc_table_create of a bad name");
		CHECK(!strcmp(tdbc_errmsg(c), bad_names[i].msg),
		      "tdbc_errmsg '%s', want '%s'", tdbc_errmsg(c),
		      bad_names[i].msg);
	}
	h_stats(c, &s0);
	for (i = 0; i < NBAD; i++)
		tdbc_table_create(c, bad_names[i].name, NULL);
	h_stats(c, &s1);
	CHECK(s1.requests == s0.requests + 1, "requests %llu -> %llu: the "
	      "library sent bad names (only STATS should count)",
	      (unsigned long long)s0.requests,
	      (unsigned long long)s1.requests);
	tdbc_close(c);
	h_note("libtdbclient: -EINVAL and the rule, nothing sent");

	if (!cli)
		return;
	for (i = 0; i < NBAD; i++) {
		const char *const argv[] = { cli, "--socket", d->sock,
			"create", "--", bad_names[i].name, NULL };
		char *e;

		CHECK_EQ(h_run(argv, "cli.out", "cli.err"), 2,
			 "tdb create of a bad name: exit code");
		e = scratch("cli.err");
		CHECK(strstr(e, bad_names[i].msg), "tdb create: stderr '%s'",
		      e);
		free(e);
	}
	h_note("tdb create: exit 2 (usage error) with the rule");
}

/* --- legacy --------------------------------------------------------------- */

/* Before tdbd starts: <tag>.data/wal with one CREATE of the legacy name,
 * as an older tdbd (which took such names) would have logged it. */
static void write_legacy_wal(const char *tag)
{
	char dir[H_PATH], err[256];
	const char *emsg = NULL;
	struct wal_opts o = { .segment_size = 1u << 20, .batch_ms = 1 };
	struct wal *w = NULL;
	uint64_t lsn;
	size_t sz;
	int e;

	snprintf(dir, sizeof(dir), "%s/%s.data", h_dir(), tag);
	CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
	strcat(dir, "/wal");
	CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
	e = wal_open(dir, 1, &o, &w, err, sizeof(err));
	CHECK(e == 0, "wal_open: %s", err);
	sz = wal_rec_size(WAL_CREATE, 0, strlen(legacy));
	CHECK(wal_reserve(w, sz, &emsg) == 0, "wal_reserve: %s", emsg);
	wal_begin(w, WAL_CREATE);
	CHECK(wal_add_create(w, 1, legacy, 0, 0, 0600, 4, WAL_SYNC_ALWAYS)
	      == 0, "wal_add_create");
	e = wal_commit(w, sz, &lsn);
	CHECK(e == 0, "wal_commit: %d", e);
	sz = wal_rec_size(WAL_CREATE, 0, strlen(legacy_utf8));
	CHECK(wal_reserve(w, sz, &emsg) == 0, "wal_reserve: %s", emsg);
	wal_begin(w, WAL_CREATE);
	CHECK(wal_add_create(w, 2, legacy_utf8, 0, 0, 0600, 4,
			     WAL_SYNC_ALWAYS) == 0, "wal_add_create");
	e = wal_commit(w, sz, &lsn);
	CHECK(e == 0, "wal_commit: %d", e);
	CHECK(wal_sync_to(w, lsn) == 0, "wal_sync_to");
	wal_close(w);
}

/*
 * `tdb tables` lists the names sorted (bytes: "-old..." before "t\xc3...")
 * and escaped as scan escapes keys, UTF-8 too, so that every byte is a
 * column: all lines (header, two tables) are plain ASCII of one length.
 */
static void check_table_lines(const char *out, const char *first)
{
	const char *p = out, *nl, *q;
	size_t len0 = 0, n = 0;
	bool aligned = true;

	for (; (nl = strchr(p, '\n')); p = nl + 1, n++) {
		if (!n)
			len0 = (size_t)(nl - p);
		else if ((size_t)(nl - p) != len0)
			aligned = false;
		for (q = p; q < nl; q++)
			if (*q < 0x20 || *q >= 0x7f)    /* char: signed */
				aligned = false;
	}
	CHECK(aligned && n == 3, "tdb tables: lines not ASCII of one "
	      "length: '%s'", out);
	p = strchr(out, '\n');
	CHECK(p && !strncmp(p + 1, first, strlen(first)) &&
	      (p = strchr(p + 1, '\n')) && !strncmp(p + 1, "t\\xc3\\xa9 ", 10),
	      "tdb tables: not sorted by name: '%s'", out);
}

static void part_legacy(const char *cli, const char *dump)
{
	static const char *const args[] = { "--log-level", "debug", NULL };
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	struct h_daemon d;
	struct tdbc *c;
	char val[8], *out, *log, line[128];

	write_legacy_wal("legacy");
	h_start(&d, "legacy", args);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_stat(c, legacy, &st) == 0 &&
	      !strcmp(st.name, legacy), "the legacy table was not "
	      "recovered: %s", tdbc_errmsg(c));
	CHECK(tdbc_table_open(c, legacy, &t) == 0, "open the legacy table");
	CHECK(tdbc_put(t, NULL, "k", 1, "old", 3, 0) == 0, "put");
	CHECK(tdbc_get(t, NULL, "k", 1, val, sizeof(val), NULL) == 3 &&
	      !memcmp(val, "old", 3), "get");
	tdbc_table_close(t);
	h_note("a table named before the rule is recovered, written, read");

	if (cli) {
		const char *const tables[] = { cli, "--socket", d.sock,
			"tables", NULL };
		const char *const stat[] = { cli, "--socket", d.sock, "stat",
			"--", legacy, NULL };
		const char *const json[] = { cli, "--socket", d.sock,
			"--json", "tables", NULL };

		CHECK_EQ(h_run(tables, "tables.out", "tables.err"), 0,
			 "tdb tables");
		out = scratch("tables.out");
		CHECK(strstr(out, legacy_esc) && !strchr(out, '\x9b'),
		      "tdb tables does not escape the name: '%s'", out);
		check_table_lines(out, legacy_esc);
		free(out);
		CHECK_EQ(h_run(stat, "stat.out", "stat.err"), 0, "tdb stat");
		out = scratch("stat.out");
		snprintf(line, sizeof(line), "%-16s %s\n", "name",
			 legacy_esc);
		CHECK(strstr(out, line) && !strchr(out, '\x9b'),
		      "tdb stat does not escape the name: '%s'", out);
		free(out);
		/* JSON: not UTF-8, so name_hex; UTF-8 a string */
		CHECK_EQ(h_run(json, "json.out", "json.err"), 0,
			 "tdb --json tables");
		out = scratch("json.out");
		snprintf(line, sizeof(line), "{\"name_hex\":\"%s\",",
			 legacy_hex);
		CHECK(strstr(out, line) &&
		      strstr(out, "{\"name\":\"t\xc3\xa9\","),
		      "tdb --json tables: '%s'", out);
		free(out);
		h_note("tdb tables, tdb stat: %s; --json: name_hex, and a "
		       "UTF-8 name as a string", legacy_esc);
	}

	if (dump) {
		const char *const list[] = { dump, "--socket", d.sock, "-l",
			NULL };

		CHECK_EQ(h_run(list, "list.out", "list.err"), 0, "tdb-dump -l");
		out = scratch("list.out");
		snprintf(line, sizeof(line), "%s\n", legacy_esc);
		CHECK(strstr(out, line) && !strchr(out, '\x9b'),
		      "tdb-dump -l does not escape the name: '%s'", out);
		free(out);
		h_note("tdb-dump -l: %s", legacy_esc);
	}
	CHECK(tdbc_table_drop(c, legacy) == 0, "drop the legacy table: %s",
	      tdbc_errmsg(c));
	tdbc_close(c);
	h_stop(&d);
	log = h_read_file(d.log);
	snprintf(line, sizeof(line), "table %s restored", legacy_esc);
	CHECK(strstr(log, line), "no '%s' in the log", line);
	snprintf(line, sizeof(line), "table %s dropped", legacy_esc);
	CHECK(strstr(log, line), "no '%s' in the log", line);
	CHECK(!strchr(log, '\x9b'), "a raw C1 byte in tdbd's log");
	free(log);
	h_note("tdbd's log: the name escaped, never raw");
}

/* --- squat ---------------------------------------------------------------- */

static void squat(const char *sock)
{
	struct tdbc_table_opts o;
	struct tdbc *c = NULL;
	char msg[256];
	int err;

	err = tdbc_connect(&c, sock, TDBC_NO_RINGS, msg, sizeof(msg));
	CHECK(err == 0, "connect as uid %u: %s", NOBODY, msg);
	tdbc_table_opts_init(&o);
	o.mode = 0666;
	err = tdbc_table_create(c, "payroll", &o);
	CHECK(err == 0, "squatting payroll: %s", tdbc_errmsg(c));
	tdbc_close(c);
}

/* A dump of one record in table name (format=print, no tdb_mode). */
static void dump_file(const char *file, const char *name)
{
	char text[256];

	snprintf(text, sizeof(text), "VERSION=3\nformat=print\n"
		 "database=%s\ntype=btree\nHEADER=END\n salary\n 100\n"
		 "DATA=END\n", name);
	write_scratch(file, text);
}

/* tdb-load [opt] -f file: its exit code (stderr in load.err). */
static int load(const char *prog, const char *sock, const char *file,
		const char *opt, const char *arg)
{
	char path[H_PATH];
	const char *argv[10];
	int n = 0;

	h_path(path, sizeof(path), file);
	argv[n++] = prog;
	argv[n++] = "-q";
	argv[n++] = "--socket";
	argv[n++] = sock;
	if (opt)
		argv[n++] = opt;
	if (arg)
		argv[n++] = arg;
	argv[n++] = "-f";
	argv[n++] = path;
	argv[n] = NULL;
	return h_run(argv, "load.out", "load.err");
}

static void check_table(struct tdbc *c, const char *name, uint64_t records,
			uint32_t uid, uint32_t mode)
{
	struct tdbc_table_stat st;
	int err = tdbc_table_stat(c, name, &st);

	CHECK(err == 0, "stat %s: %s", name, tdbc_errmsg(c));
	CHECK(st.records == records && st.uid == uid && st.mode == mode,
	      "%s: %llu records, uid %u, mode %04o; want %llu, %u, %04o",
	      name, (unsigned long long)st.records, st.uid, st.mode,
	      (unsigned long long)records, uid, mode);
}

static void expect_refused(const char *what, const char *want)
{
	char *e = scratch("load.err");

	CHECK(strstr(e, want), "%s: stderr '%s', want '%s'", what, e, want);
	free(e);
}

static void part_squat(const struct h_daemon *d, const char *prog)
{
	struct tdbc_table_opts o;
	struct tdbc *c;

	as_nobody(squat, d->sock);
	c = h_connect(d, 0);
	check_table(c, "payroll", 0, NOBODY, 0666);
	dump_file("payroll.txt", "payroll");

	CHECK_EQ(load(prog, d->sock, "payroll.txt", NULL, NULL), 4,
		 "tdb-load into a squatted table");
	expect_refused("squatted", "tdb-load: payroll: the table exists, "
		       "owned by uid 65534 (not you: uid 0), mode 0666 (wider "
		       "than 0600): not loading into it (--into-existing to "
		       "load anyway)");
	check_table(c, "payroll", 0, NOBODY, 0666);
	/* the same with the mode asked for: still not root's */
	CHECK_EQ(load(prog, d->sock, "payroll.txt", "--mode", "0666"), 4,
		 "tdb-load --mode 0666 into someone else's table");
	expect_refused("squatted, --mode 0666", "owned by uid 65534 (not "
		       "you: uid 0), mode 0666: not loading");
	check_table(c, "payroll", 0, NOBODY, 0666);
	h_note("tdb-load: a squatted payroll (uid %u, 0666) refused, exit "
	       "4, nothing loaded", NOBODY);

	CHECK_EQ(load(prog, d->sock, "payroll.txt", "--into-existing", NULL),
		 0, "tdb-load --into-existing");
	check_table(c, "payroll", 1, NOBODY, 0666);

	/* a fresh load: 0600, or --mode */
	dump_file("fresh.txt", "fresh");
	CHECK_EQ(load(prog, d->sock, "fresh.txt", NULL, NULL), 0,
		 "tdb-load of a new table");
	check_table(c, "fresh", 1, 0, 0600);
	/* and again into it: ours, 0600 */
	CHECK_EQ(load(prog, d->sock, "fresh.txt", NULL, NULL), 0,
		 "tdb-load into our own 0600 table");
	dump_file("fresh2.txt", "fresh2");
	CHECK_EQ(load(prog, d->sock, "fresh2.txt", "--mode", "0640"), 0,
		 "tdb-load --mode 0640 of a new table");
	check_table(c, "fresh2", 1, 0, 0640);

	/* root's own table, wider than asked for */
	tdbc_table_opts_init(&o);
	o.mode = 0644;
	CHECK(tdbc_table_create(c, "wide", &o) == 0, "create wide");
	dump_file("wide.txt", "wide");
	CHECK_EQ(load(prog, d->sock, "wide.txt", NULL, NULL), 4,
		 "tdb-load into our own 0644 table, asking 0600");
	expect_refused("wide", "tdb-load: wide: the table exists, owned by "
		       "uid 0, mode 0644 (wider than 0600): not loading");
	check_table(c, "wide", 0, 0, 0644);
	CHECK_EQ(load(prog, d->sock, "wide.txt", "--mode", "0644"), 0,
		 "tdb-load --mode 0644 into our own 0644 table");
	check_table(c, "wide", 1, 0, 0644);
	tdbc_close(c);
	h_note("tdb-load: --into-existing loads; new tables 0600 (--mode "
	       "0640: 0640); our own 0644 table needs --mode 0644");
}

int main(void)
{
	static const char *const args[] = { "--socket-mode", "0666",
		"--workers", "2", NULL };
	const char *cli = getenv("TDB_CLI"), *load_prog = getenv("TDB_LOAD");
	const char *dump = getenv("TDB_DUMP");
	struct h_daemon d;

	if (geteuid() != 0) {
		printf("tdbd-names: skipped: needs root (setuid children)\n");
		return 77;
	}
	if (cli && access(cli, X_OK))
		cli = NULL;
	if (load_prog && access(load_prog, X_OK))
		load_prog = NULL;
	if (dump && access(dump, X_OK))
		dump = NULL;
	h_init("tdbd-names", 300);
	h_start(&d, "tdbd", args);
	if (h_want("create"))
		part_create(&d, cli);
	if (h_want("squat")) {
		if (load_prog)
			part_squat(&d, load_prog);
		else
			h_note("squat: skipped (no $TDB_LOAD)");
	}
	h_stop(&d);
	if (h_want("legacy"))
		part_legacy(cli, dump);
	h_done();
	return 0;
}
