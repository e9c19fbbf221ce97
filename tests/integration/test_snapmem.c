// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_snapmem.c - memory a client can make tdbd hold through snapshot
 * scans, and the global memory limit (issue 12, item 5).
 *
 * Parts (TDB_ITEST_ONLY=name runs one):
 *  snapshots  The attack, scaled down: 4 raw connections each
 *             open 8 snapshot scans of a table of 24 values of 1 MiB
 *             and read nothing; a writer overwrites every value twice
 *             (48 MiB of puts) with a pinger beside.  Asserts: every put
 *             succeeds; tdbd's VmRSS grows by less than
 *             max-snapshot-memory (16M) + the table's own growth + a
 *             slack (before: one copy per snapshot, 32 x 24 MiB); every
 *             one of the 32 scans ends with -ENOBUFS and a message
 *             naming max-snapshot-memory and the key; root still
 *             reads; the pinger passes h_check_latency; once the
 *             attackers are gone their memory is back: a new snapshot
 *             scan with 8 MiB of its keys overwritten meanwhile is whole.
 *             The writer's time per put is reported.
 *  maxmem     tdbd with max-memory 48M (from its config file): 1 MiB
 *             puts until one fails: -ENOMEM and "tdbd is over
 *             max-memory", once the table's extents reach the limit,
 *             and they stay within it (+ the one put that crossed it);
 *             root is not exempt, nor is an ordinary user; puts in
 *             a transaction and TABLE_CREATE are refused too; gets,
 *             deletes and a commit of deletes go on; after a reload with
 *             max-memory 1G, puts work again.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1u << 20)

/* --- helpers --------------------------------------------------------------- */

/* tdbd's VmRSS in bytes (/proc/<pid>/status). */
static uint64_t rss_of(pid_t pid)
{
	char path[64], line[256];
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	CHECK(f, "cannot open %s", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB",
			   (unsigned long long *)&kb) == 1)
			break;
	fclose(f);
	CHECK(kb, "no VmRSS in %s", path);
	return kb << 10;
}

static uint32_t extents_of(struct tdbc *c, const char *name)
{
	struct tdbc_table_stat st;

	CHECK_EQ(tdbc_table_stat(c, name, &st), 0, "table stat");
	return st.extents;
}

static void fill_val(unsigned char *v, size_t len, unsigned int i, char gen)
{
	memset(v, gen, len);
	memcpy(v, &i, sizeof(i));
}

static bool dumps_at_least(const struct tdbc_stats *st, const void *arg)
{
	return st->dumps >= *(const uint32_t *)arg;
}

/* --- snapshots --------------------------------------------------------------- */

#define NCONN  4        /* attacking connections */
#define NSCANS 8        /* snapshot scans each (MAX_DUMPS) */
#define NKEYS  24       /* values of 1 MiB */
#define SNAPMEM (16ull << 20)

/* Open NSCANS snapshot scans of "victim" on r, reading nothing. */
static void open_scans(struct h_raw *r, uint32_t *seqs)
{
	struct tdb_proto_msg m;
	int i;

	for (i = 0; i < NSCANS; i++) {
		memset(&m, 0, sizeof(m));
		m.cmd = TDB_CMD_SCAN;
		m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			  TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		m.table = "victim";
		m.table_len = 6;
		m.scan_flags = TDB_SCAN_SNAPSHOT;
		seqs[i] = h_raw_send_msg(r, &m);
	}
}

/*
 * Read r's answers until all its scans ended; each must end with
 * -ENOBUFS and a message naming max-snapshot-memory and the key.
 */
static void drain_scans(struct h_raw *r, const uint32_t *seqs, int conn)
{
	void *buf = malloc(TDB_PROTO_MSG_MAX);
	unsigned int ended = 0, parts = 0;
	int i;

	CHECK(buf, "out of memory");
	while (ended < NSCANS) {
		struct tdb_proto_extack ext = { 0 };
		struct tdb_proto_msg a;
		long n = h_raw_recv(r, buf, TDB_PROTO_MSG_MAX, 10000);

		CHECK(n > 0, "connection %d: %s", conn,
		      n == 0 ? "closed by tdbd" : h_errname((int)n));
		CHECK_EQ(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a,
					 &ext), 0, "answer parses");
		for (i = 0; i < NSCANS && seqs[i] != a.seq; i++)
			;
		CHECK(i < NSCANS, "answer seq %u is no scan's", a.seq);
		if (a.type != NLMSG_DONE && a.type != NLMSG_ERROR) {
			parts++;
			continue;
		}
		ended++;
		CHECK_EQ(a.error, -ENOBUFS, "an attacker's snapshot scan");
		CHECK(a.ext.msg && strstr(a.ext.msg, "max-snapshot-memory") &&
		      strstr(a.ext.msg, "at key 'k"),
		      "message: %s", a.ext.msg ? a.ext.msg : "(none)");
		if (conn == 0 && ended == 1)
			h_note("scan end: %s", a.ext.msg);
	}
	h_note("connection %d: %u scans ended with ENOBUFS after %u parts",
	       conn, ended, parts);
	free(buf);
}

/* The writer: overwrite every key twice; every put must succeed. */
static void overwrite(struct tdbc_table *t, unsigned char *val)
{
	uint64_t t0 = h_now_ms(), worst = 0;
	unsigned int round, i;
	char key[16];

	for (round = 0; round < 2; round++)
		for (i = 0; i < NKEYS; i++) {
			uint64_t p0 = h_now_ms(), dt;

			snprintf(key, sizeof(key), "k%03u", i);
			fill_val(val, MiB, i, (char)('b' + round));
			CHECK_EQ(tdbc_put(t, NULL, key, 4, val, MiB, 0), 0,
				 "a writer's put beside the snapshots");
			dt = h_now_ms() - p0;
			if (dt > worst)
				worst = dt;
		}
	h_note("writer: %u puts of 1 MiB under %d snapshots: %.2f ms per "
	       "put, slowest %llu ms", 2 * NKEYS, NCONN * NSCANS,
	       (double)(h_now_ms() - t0) / (2 * NKEYS),
	       (unsigned long long)worst);
}

static bool no_dumps(const struct tdbc_stats *st, const void *arg)
{
	(void)arg;
	return st->dumps == 0;
}

/*
 * After the attackers are gone their snapshot memory is given back: a
 * new snapshot scan, with 8 of its keys overwritten while it is open
 * (8 MiB of old values, under the 16M bound only if the attackers'
 * charges were returned), is whole and shows the values of its start.
 */
static void snapshot_after(struct tdbc *c, struct tdbc_table *t,
			   unsigned char *val)
{
	unsigned int n = 0, i;
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	char key[16];
	int rc;

	CHECK_EQ(tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &s),
		 0, "a snapshot scan after the attack");
	CHECK((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1, "first: %d",
	      rc);
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%03u", i);
		fill_val(val, MiB, i, 'z');
		CHECK_EQ(tdbc_put(t, NULL, key, 4, val, MiB, 0), 0, "put");
	}
	do {
		unsigned int j;

		CHECK(kl == 4 && vl == MiB, "record %.*s", (int)kl,
		      (const char *)k);
		memcpy(&j, v, sizeof(j));
		CHECK(j < NKEYS && ((const unsigned char *)v)[4] == 'c',
		      "%.*s: not its value at the snapshot", (int)kl,
		      (const char *)k);
		n++;
	} while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1);
	CHECK(rc == 0, "the scan after the attack ended with %s: %s",
	      h_errname(rc), tdbc_errmsg(c));
	CHECK_EQ(n, NKEYS, "records of the scan after the attack");
	tdbc_scan_close(s);
}

static void part_snapshots(void)
{
	static const char *const args[] = { "--max-snapshot-memory", "16M",
		"--client-deadline", "60s", NULL };
	struct h_raw raw[NCONN];
	uint32_t seqs[NCONN][NSCANS], want = NCONN * NSCANS, ext0;
	unsigned char *val = malloc(MiB);
	uint64_t rss0, rss1, grew, table_grew, bound;
	struct tdbc_table *t;
	struct tdbc_stats st;
	struct h_pinger pg;
	struct h_daemon d;
	struct h_lat lat;
	struct tdbc *c;
	char key[16];
	unsigned int i;

	CHECK(val, "out of memory");
	h_start(&d, "snapshots", args);
	c = h_connect(&d, 0);
	CHECK_EQ(tdbc_table_create(c, "victim", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "victim", &t), 0, "open");
	for (i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "k%03u", i);
		fill_val(val, MiB, i, 'a');
		CHECK_EQ(tdbc_put(t, NULL, key, 4, val, MiB, 0), 0, "fill");
	}
	h_pinger_start(&pg, d.sock, 0, 0);
	for (i = 0; i < NCONN; i++) {
		h_raw_connect(&raw[i], d.sock);
		open_scans(&raw[i], seqs[i]);
	}
	CHECK(h_wait_stats(c, &st, dumps_at_least, &want, 10000),
	      "%u dumps open, want %u", st.dumps, want);
	h_sleep_ms(300);        /* the first parts fill the sockets */
	ext0 = extents_of(c, "victim");
	rss0 = rss_of(d.pid);

	overwrite(t, val);

	rss1 = rss_of(d.pid);
	grew = rss1 > rss0 ? rss1 - rss0 : 0;
	table_grew = (uint64_t)(extents_of(c, "victim") - ext0) * 2 * MiB;
	/* slack: heap and the sockets; under ASan also its quarantine of
	 * freed blocks (each put's 1 MiB request buffer) */
	bound = SNAPMEM + table_grew + (h_sanitized() ? 160 : 16) *
					(uint64_t)MiB;
	h_note("tdbd VmRSS %llu MiB -> %llu MiB (+%llu MiB; the table's "
	       "extents +%llu MiB; bound %llu MiB)",
	       (unsigned long long)(rss0 >> 20),
	       (unsigned long long)(rss1 >> 20),
	       (unsigned long long)(grew >> 20),
	       (unsigned long long)(table_grew >> 20),
	       (unsigned long long)(bound >> 20));
	CHECK(grew < bound, "tdbd grew %llu MiB under %d snapshots, bound "
	      "%llu MiB", (unsigned long long)(grew >> 20), NCONN * NSCANS,
	      (unsigned long long)(bound >> 20));

	for (i = 0; i < NCONN; i++) {
		drain_scans(&raw[i], seqs[i], (int)i);
		h_raw_close(&raw[i]);
	}
	/* root still reads what the writer wrote */
	CHECK_EQ(tdbc_get(t, NULL, "k000", 4, val, MiB, NULL), (long)MiB,
		 "get");
	CHECK(val[4] == 'c', "k000 holds the second round");
	CHECK(h_wait_stats(c, &st, no_dumps, NULL, 10000), "%u dumps left",
	      st.dumps);
	snapshot_after(c, t, val);
	h_pinger_finish_lat(&pg, &lat);
	h_check_latency(&lat, "beside 32 snapshots and a writer");
	tdbc_table_close(t);
	tdbc_close(c);
	free(val);
	h_stop(&d);
}

/* --- maxmem ------------------------------------------------------------------ */

#define MAXMEM_MSG "tdbd is over max-memory"

static void conf_write(const char *text)
{
	char conf[H_PATH];
	FILE *f;

	h_path(conf, sizeof(conf), "empty.conf");   /* h_start's --config */
	f = fopen(conf, "w");
	CHECK(f, "cannot write %s", conf);
	fputs(text, f);
	fclose(f);
}

/* An ordinary user is refused the same; its reads go on. */
static void as_user(const struct h_daemon *d)
{
	pid_t pid;
	int st;

	if (geteuid() != 0) {
		h_note("maxmem: not root: no ordinary-user part");
		return;
	}
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc_table *t;
		struct tdbc *c;
		char v[8];

		CHECK(setgroups(0, NULL) == 0 &&
		      setresgid(65534, 65534, 65534) == 0 &&
		      setresuid(65533, 65533, 65533) == 0, "setresuid");
		c = h_connect(d, 0);
		CHECK_EQ(tdbc_table_open(c, "fill", &t), 0, "user open");
		CHECK_EQ(tdbc_put(t, NULL, "u", 1, "x", 1, 0), -ENOMEM,
			 "a user's put past max-memory");
		CHECK(strstr(tdbc_errmsg(c), MAXMEM_MSG), "message: %s",
		      tdbc_errmsg(c));
		CHECK_EQ(tdbc_get(t, NULL, "small", 5, v, sizeof(v), NULL), 2,
			 "a user's get past max-memory");
		tdbc_table_close(t);
		tdbc_close(c);
		_exit(0);
	}
	h_track(pid);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the ordinary user's part failed");
	h_untrack(pid);
}

/* Puts, in and out of a transaction, and TABLE_CREATE are refused;
 * gets, deletes and a commit of deletes go on. */
static void refused(struct tdbc *c, struct tdbc_table *t, unsigned int n)
{
	struct tdbc_txn *x;
	char key[16];
	void *v;

	CHECK_EQ(tdbc_put(t, NULL, "x", 1, "y", 1, 0), -ENOMEM, "small put");
	CHECK(strstr(tdbc_errmsg(c), MAXMEM_MSG), "message: %s",
	      tdbc_errmsg(c));
	CHECK_EQ(tdbc_table_create(c, "more", NULL), -ENOMEM, "create");
	CHECK(strstr(tdbc_errmsg(c), "max-memory"), "message: %s",
	      tdbc_errmsg(c));
	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "txn begin");
	CHECK_EQ(tdbc_put(t, x, "x", 1, "y", 1, 0), -ENOMEM, "put in a txn");
	CHECK_EQ(tdbc_txn_abort(x), 0, "txn abort");
	/* reads and deletes go on */
	CHECK_EQ(tdbc_get_alloc(t, NULL, "f000", 4, &v), (long)MiB, "get");
	CHECK(((unsigned char *)v)[4] == 'f', "f000's value");
	free(v);
	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "txn begin");
	for (unsigned int i = n - 2; i < n; i++) {
		snprintf(key, sizeof(key), "f%03u", i);
		CHECK_EQ(tdbc_del(t, x, key, 4), 0, "del in a txn");
	}
	CHECK_EQ(tdbc_txn_commit(x), 0, "commit of deletes past max-memory");
	for (unsigned int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "f%03u", i);
		CHECK_EQ(tdbc_del(t, NULL, key, 4), 0, "del past max-memory");
	}
	/* extents are not given back: still refused */
	CHECK_EQ(tdbc_put(t, NULL, "x", 1, "y", 1, 0), -ENOMEM,
		 "put after deletes");
}

static void part_maxmem(void)
{
	static const char *const args[] = { "--socket-mode", "0666", NULL };
	struct tdbc_table_opts o;
	unsigned char *val = malloc(MiB);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	struct h_daemon d;
	struct tdbc *c;
	unsigned int n;
	char key[16];
	int err = 0;

	CHECK(val, "out of memory");
	conf_write("max-memory = 48M\n");
	h_start(&d, "maxmem", args);
	c = h_connect(&d, 0);
	tdbc_table_opts_init(&o);
	o.mode = 0666;
	CHECK_EQ(tdbc_table_create(c, "fill", &o), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "fill", &t), 0, "open");
	CHECK_EQ(tdbc_put(t, NULL, "small", 5, "ok", 2, 0), 0, "small put");
	for (n = 0; n < 200; n++) {
		snprintf(key, sizeof(key), "f%03u", n);
		fill_val(val, MiB, n, 'f');
		err = tdbc_put(t, NULL, key, 4, val, MiB, 0);
		if (err)
			break;
	}
	CHECK_EQ(err, -ENOMEM, "a put past max-memory");
	CHECK(strstr(tdbc_errmsg(c), MAXMEM_MSG), "message: %s",
	      tdbc_errmsg(c));
	CHECK_EQ(tdbc_table_stat(c, "fill", &st), 0, "stat");
	h_note("refused after %u puts of 1 MiB (%u extents): %s", n,
	       st.extents, tdbc_errmsg(c));
	/* a 1 MiB value takes an extent of 2 MiB: the limit is reached,
	 * and passed by one put at most; the connection's rings (2 x
	 * ring-size, 8 MiB) count in max-memory too */
	CHECK((uint64_t)st.extents * 2 * MiB >= (48 - 4 - 8) * (uint64_t)MiB,
	      "refused too early: %u extents", st.extents);
	CHECK((uint64_t)st.extents * 2 * MiB <= (48 + 4) * (uint64_t)MiB,
	      "the table holds %u extents, past max-memory", st.extents);
	refused(c, t, n);
	as_user(&d);

	/* a reload with more room: puts go again */
	conf_write("max-memory = 1G\n");
	CHECK(kill(d.pid, SIGHUP) == 0, "SIGHUP");
	for (n = 0; n < 500 && !h_log_has(&d, "reloaded"); n++)
		h_sleep_ms(10);
	CHECK(h_log_has(&d, "reloaded"), "no reload in the log");
	CHECK_EQ(tdbc_put(t, NULL, "x", 1, "y", 1, 0), 0, "put after reload");
	CHECK_EQ(tdbc_table_create(c, "more", NULL), 0, "create after reload");
	conf_write("");
	tdbc_table_close(t);
	tdbc_close(c);
	free(val);
	h_stop(&d);
}

int main(void)
{
	h_init("tdbd-snapmem", h_sanitized() ? 400 : 100);
	if (h_want("snapshots"))
		part_snapshots();
	if (h_want("maxmem"))
		part_maxmem();
	h_done();
	return 0;
}
