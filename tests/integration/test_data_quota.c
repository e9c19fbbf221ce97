// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_data_quota.c - table data per uid (issue 25, item 4): the bytes
 * of the extents of the tables a uid owns are charged to it
 * (TDBO_Q_DATA, src/owner/registry.c), bounded by max-data-per-uid, and
 * all tables' by max-memory with its last eighth kept for root.
 *
 * One tdbd, --max-memory 64M --max-data-per-uid 32M:
 *  - pinned: uid 65532 fills a table to 16 MiB, watches it from a second
 *    connection and drops it: the watch keeps its region in tdbd, and
 *    it stays charged, so a new table of the uid is refused (-EDQUOT)
 *    at 32 - 16 MiB (within an extent); once the watcher is gone the
 *    charge is back and the put goes;
 *  - uid 65534 fills two tables of its own (64 KiB values) until
 *    refused: -EDQUOT naming max-data-per-uid, its extents then at the
 *    bound (within one extent);
 *  - uid 65533 may not write into 65534's table (mode 0666) either
 *    (-EDQUOT: the owner's bound), then fills its own until refused
 *    with -ENOMEM by the bound in all, at 7/8 of max-memory (56M,
 *    within one extent, counting the 16M of the two open connections'
 *    rings: max-memory counts rings too), not by max-memory itself;
 *  - root still creates a table and puts 4 MiB into it;
 *  - after a restart (recovery loads the tables) uid 65534 is still
 *    refused (-EDQUOT); root drops its table and writes a new one.
 * The old code let 65534 fill max-memory: its refusal was -ENOMEM
 * ("over max-memory"), and root's create failed too.
 * Skipped (77) when not run as root.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1ull << 20)
#define EXT (2ull << 20)
#define VAL (64u << 10)
#define MAX_DATA_PER_UID (32 * MiB)
#define MAX_MEMORY (64 * MiB)
/* A connection's rings, 2 x ring-size (4M), count in max-memory too
 * (src/owner/limtable.h): root's and 65533's are open while 65533 fills
 * its table. */
#define CONN_RINGS (8 * MiB)

static struct h_daemon g_d;
static const char *const g_args[] = { "--socket-mode", "0666",
	"--max-memory", "64M", "--max-data-per-uid", "32M", NULL };

struct report {
	int err;                /* the refusal (0: none) */
	char msg[256];          /* its message */
	int shared_err;         /* 65533's put into 65534's table */
	char shared_msg[256];
	uint64_t puts;          /* puts that worked */
	uint64_t pinned;        /* pinned: the dropped table's extents */
};

/* Put 64 KiB values into t (keys from *next) until refused or `max`
 * puts: the refusal, 0 if none. */
static int fill(struct tdbc *c, struct tdbc_table *t, unsigned int *next,
		unsigned int max, struct report *r)
{
	static unsigned char v[VAL];
	unsigned int i;

	memset(v, 'v', sizeof(v));
	for (i = 0; i < max; i++, (*next)++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "k%07u", *next), err;

		err = tdbc_put(t, NULL, k, (size_t)n, v, sizeof(v), 0);
		if (err) {
			r->err = err;
			snprintf(r->msg, sizeof(r->msg), "%s",
				 tdbc_errmsg(c));
			return err;
		}
		r->puts++;
	}
	return 0;
}

/* The bytes of extents of the tables named prefix0 .. prefix<n-1>. */
static uint64_t extent_bytes(struct tdbc *c, const char *prefix,
			     unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct tdbc_table_stat st;
		char name[32];

		snprintf(name, sizeof(name), "%s%u", prefix, i);
		CHECK_EQ(tdbc_table_stat(c, name, &st), 0, name);
		sum += (uint64_t)st.extents * EXT;
	}
	return sum;
}

/* As uid 65534: "a0" (mode 0666) to 12 MiB, then "a1" until refused. */
static void fill_a(struct report *r)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table_opts o;
	struct tdbc_table *t;
	unsigned int next = 0;

	tdbc_table_opts_init(&o);
	o.mode = 0666;
	CHECK_EQ(tdbc_table_create(c, "a0", &o), 0, "create a0");
	CHECK_EQ(tdbc_table_open(c, "a0", &t), 0, "open a0");
	CHECK_EQ(fill(c, t, &next, (12 * MiB) / VAL, r), 0, "fill a0");
	tdbc_table_close(t);
	CHECK_EQ(tdbc_table_create(c, "a1", NULL), 0, "create a1");
	CHECK_EQ(tdbc_table_open(c, "a1", &t), 0, "open a1");
	fill(c, t, &next, 1u << 20, r);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* As uid 65533: a put into a0 (65534's), then "b0" until refused. */
static void fill_b(struct report *r)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct report s = { 0 };
	struct tdbc_table *t;
	unsigned int next = 1u << 24;

	CHECK_EQ(tdbc_table_open(c, "a0", &t), 0, "open a0");
	fill(c, t, &next, 1, &s);
	r->shared_err = s.err;
	memcpy(r->shared_msg, s.msg, sizeof(s.msg));
	tdbc_table_close(t);
	CHECK_EQ(tdbc_table_create(c, "b0", NULL), 0, "create b0");
	CHECK_EQ(tdbc_table_open(c, "b0", &t), 0, "open b0");
	next = 0;
	fill(c, t, &next, 1u << 20, r);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* As uid 65534 after a restart: one more put into "a1". */
static void put_again(struct report *r)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table *t;
	unsigned int next = 1u << 24;

	CHECK_EQ(tdbc_table_open(c, "a1", &t), 0, "open a1");
	fill(c, t, &next, 1, r);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* As uid 65532: the "pinned" part (see the top); r->puts counts the
 * puts into p1, r->shared_err is the put's after the watcher left. */
static void pinned(struct report *r)
{
	struct tdbc *c = h_connect(&g_d, 0), *wc = h_connect(&g_d, 0);
	struct report s = { 0 };
	struct tdbc_table_stat st;
	struct tdbc_table *t, *wt;
	struct tdbc_watch *w;
	unsigned int next = 0;
	uint64_t t0;

	CHECK_EQ(tdbc_table_create(c, "p0", NULL), 0, "create p0");
	CHECK_EQ(tdbc_table_open(c, "p0", &t), 0, "open p0");
	CHECK_EQ(fill(c, t, &next, (16 * MiB) / VAL, &s), 0, "fill p0");
	tdbc_table_close(t);
	CHECK_EQ(tdbc_table_stat(c, "p0", &st), 0, "stat p0");
	r->pinned = (uint64_t)st.extents * EXT;
	CHECK_EQ(tdbc_table_open(wc, "p0", &wt), 0, "open p0 (watcher)");
	CHECK_EQ(tdbc_watch(wt, "", 0, &w), 0, "watch p0");
	CHECK_EQ(tdbc_table_drop(c, "p0"), 0, "drop p0");
	CHECK_EQ(tdbc_table_create(c, "p1", NULL), 0, "create p1");
	CHECK_EQ(tdbc_table_open(c, "p1", &t), 0, "open p1");
	next = 0;
	fill(c, t, &next, 1u << 20, r);
	CHECK_EQ(tdbc_table_stat(c, "p1", &st), 0, "stat p1");
	r->puts = (uint64_t)st.extents * EXT;   /* its extents, here */
	/* the watcher goes: the dropped table's last reference */
	tdbc_watch_close(w);
	tdbc_table_close(wt);
	tdbc_close(wc);
	t0 = h_now_ms();
	do {
		memset(&s, 0, sizeof(s));
		fill(c, t, &next, 1, &s);
		if (!s.err)
			break;
		h_sleep_ms(20);
	} while (h_now_ms() - t0 < 3000);
	r->shared_err = s.err;
	memcpy(r->shared_msg, s.msg, sizeof(s.msg));
	tdbc_table_close(t);
	CHECK_EQ(tdbc_table_drop(c, "p1"), 0, "drop p1");
	tdbc_close(c);
}

/* Run fn in a child as uid; its report. */
static void as_uid(uid_t uid, void (*fn)(struct report *r), struct report *r)
{
	int p[2], st;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		h_become(uid);
		fn(r);
		CHECK(write(p[1], r, sizeof(*r)) == (ssize_t)sizeof(*r),
		      "report");
		_exit(0);
	}
	h_track(pid);
	close(p[1]);
	CHECK(read(p[0], r, sizeof(*r)) == (ssize_t)sizeof(*r),
	      "the child (uid %u) failed", (unsigned int)uid);
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "child");
	h_untrack(pid);
}

/* Root makes table name and puts 4 MiB into it. */
static void root_writes(struct tdbc *c, const char *name)
{
	struct report r = { 0 };
	struct tdbc_table *t;
	unsigned int next = 0;
	int err;

	err = tdbc_table_create(c, name, NULL);
	CHECK(err == 0, "root's create of %s: %s (%s)", name, h_errname(err),
	      tdbc_errmsg(c));
	CHECK_EQ(tdbc_table_open(c, name, &t), 0, name);
	err = fill(c, t, &next, (4 * MiB) / VAL, &r);
	CHECK(err == 0, "root's puts into %s: %s (%s) after %llu", name,
	      h_errname(err), r.msg, (unsigned long long)r.puts);
	tdbc_table_close(t);
}

int main(void)
{
	struct report a, b;
	struct tdbc *root;
	uint64_t ua, ub;

	if (getuid() != 0) {
		printf("tdbd-data-quota: not root, skipped\n");
		return 77;
	}
	h_init("tdbd-data-quota", 60);
	chmod(h_dir(), 0755);   /* the setuid children's way in */
	h_start(&g_d, "dq", g_args);
	root = h_connect(&g_d, 0);

	as_uid(65532, pinned, &a);
	h_note("pinned: uid 65532 dropped a table of %llu KiB of extents a "
	       "watch kept; its next table was refused (%s: %s) at %llu KiB "
	       "of extents; once the watcher left: %s %s",
	       (unsigned long long)(a.pinned >> 10), h_errname(a.err), a.msg,
	       (unsigned long long)(a.puts >> 10), h_errname(a.shared_err),
	       a.shared_msg);
	CHECK(a.err == -EDQUOT && strstr(a.msg, "max-data-per-uid"),
	      "uid 65532 refused with %s (%s), want EDQUOT", h_errname(a.err),
	      a.msg);
	CHECK(a.pinned >= 16 * MiB && a.pinned < MAX_DATA_PER_UID,
	      "the first table has %llu bytes of extents",
	      (unsigned long long)a.pinned);
	CHECK(a.puts + a.pinned >= MAX_DATA_PER_UID &&
	      a.puts + a.pinned <= MAX_DATA_PER_UID + EXT,
	      "uid 65532's second table reached %llu bytes of extents beside "
	      "a dropped one of %llu a watch pins, want their sum at "
	      "max-data-per-uid", (unsigned long long)a.puts,
	      (unsigned long long)a.pinned);
	CHECK_EQ(a.shared_err, 0, "uid 65532's put once the watcher left");

	as_uid(65534, fill_a, &a);
	ua = extent_bytes(root, "a", 2);
	h_note("uid 65534: %llu puts of 64 KiB, then %s: %s; its tables' "
	       "extents: %llu KiB (max-data-per-uid %llu KiB)",
	       (unsigned long long)a.puts, h_errname(a.err), a.msg,
	       (unsigned long long)(ua >> 10),
	       (unsigned long long)(MAX_DATA_PER_UID >> 10));
	CHECK(a.err == -EDQUOT && strstr(a.msg, "max-data-per-uid"),
	      "uid 65534 refused with %s (%s), want EDQUOT naming "
	      "max-data-per-uid", h_errname(a.err), a.msg);
	CHECK(ua >= MAX_DATA_PER_UID && ua <= MAX_DATA_PER_UID + EXT,
	      "uid 65534 refused at %llu bytes of extents, want %llu + at "
	      "most an extent", (unsigned long long)ua,
	      (unsigned long long)MAX_DATA_PER_UID);

	as_uid(65533, fill_b, &b);
	ub = extent_bytes(root, "b", 1);
	h_note("uid 65533: its put into 65534's table: %s (%s); then %llu "
	       "puts into its own, then %s: %s; all tables' extents: %llu "
	       "KiB (7/8 of max-memory: %llu KiB)", h_errname(b.shared_err),
	       b.shared_msg, (unsigned long long)b.puts, h_errname(b.err),
	       b.msg, (unsigned long long)((ua + ub) >> 10),
	       (unsigned long long)((MAX_MEMORY / 8 * 7) >> 10));
	CHECK(b.shared_err == -EDQUOT &&
	      strstr(b.shared_msg, "max-data-per-uid"), "uid 65533's put "
	      "into a table of 65534 at its bound: %s (%s), want EDQUOT",
	      h_errname(b.shared_err), b.shared_msg);
	CHECK(b.err == -ENOMEM && strstr(b.msg, "last eighth"),
	      "uid 65533 refused with %s (%s), want ENOMEM by the bound in "
	      "all (the last eighth is root's)", h_errname(b.err), b.msg);
	CHECK(ua + ub + 2 * CONN_RINGS >= MAX_MEMORY / 8 * 7 &&
	      ua + ub + 2 * CONN_RINGS <= MAX_MEMORY / 8 * 7 + EXT,
	      "the others were cut at %llu bytes of extents beside two "
	      "connections' rings, want 7/8 of %llu + at most an extent",
	      (unsigned long long)(ua + ub), (unsigned long long)MAX_MEMORY);

	root_writes(root, "r0");
	h_note("root: created r0 and put 4 MiB into it");
	tdbc_close(root);

	if (h_want("restart")) {
		h_stop(&g_d);
		h_start(&g_d, "dq", g_args);
		as_uid(65534, put_again, &a);
		h_note("restart: uid 65534's put: %s (%s)", h_errname(a.err),
		       a.msg);
		CHECK(a.err == -EDQUOT && strstr(a.msg, "max-data-per-uid"),
		      "uid 65534 after the restart: %s (%s), want EDQUOT",
		      h_errname(a.err), a.msg);
		/* at 7/8 + root's 6 MiB the tables are near max-memory:
		 * root's drop gives r0's extents back for its next table */
		root = h_connect(&g_d, 0);
		CHECK_EQ(tdbc_table_drop(root, "r0"), 0, "drop r0");
		root_writes(root, "r1");
		tdbc_close(root);
	}
	h_stop(&g_d);
	h_done();
	return 0;
}
