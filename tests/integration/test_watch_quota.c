// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_watch_quota.c - watches bounded per uid and in all (issue 25,
 * item 5; src/owner/feed.c charges TDBO_Q_WATCHES, quota.c): before, a
 * uid's watches were bounded only per connection, so one uid with many
 * connections could hold any number of them.  tdbd runs with
 * --max-watches 16 --max-watches-per-uid 40 --max-watches-total 64
 * (others stop at 56, 7/8 of it):
 *
 *  - uid A watches one table on 4 connections until refused: the
 *    refusal is EDQUOT naming max-watches-per-uid after exactly 40
 *    (16 + 16 + 8: the per-connection limit still holds, EMFILE);
 *  - an UNWATCH gives one back (a watch is made again, the next one is
 *    EDQUOT again); closing a connection with 16 gives 16 back (another
 *    connection of A makes 16 more, then A is at 40 again);
 *  - uid B, with A holding 40, gets 16 and is refused ENOSPC naming
 *    max-watches-total and root's eighth; root then makes the last 8
 *    (to 64) and is refused ENOSPC ("max-watches-total");
 *  - once A and B are gone, STATS counts only root's watches, and a new
 *    process of A makes 40 again: every watch ended gave its charge back
 *    (tdbd at its stop also reports any charge left: none).
 * Skipped (77) when not run as root (it acts as other uids).
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define UID_A    65534
#define UID_B    65533
#define PER_CONN 16             /* --max-watches */
#define PER_UID  40             /* --max-watches-per-uid */
#define TOTAL    64             /* --max-watches-total */
#define NCONN    4
#define TABLE    "wq"

/* What an actor got. */
struct report {
	int made;               /* watches made before the first refusal
				 * other than a connection's EMFILE */
	int err;                /* that refusal */
	char msg[256];
	/* the give-back checks (uid A's first run) */
	int again_err;          /* a watch after an UNWATCH */
	int again_next_err;     /* the one after it */
	int after_close;        /* made on a fresh connection after one
				 * with PER_CONN watches was closed */
	int after_close_err;    /* what ended that (EMFILE) */
	int last_err;           /* then on another connection (EDQUOT) */
};

struct actor {
	pid_t pid;
	int go_wr;
	struct report rep;
};

/* An actor's connections, each with the table open and its watches. */
struct conns {
	struct tdbc *c[NCONN];
	struct tdbc_table *t[NCONN];
	struct tdbc_watch *w[NCONN][PER_CONN + 1];
	int n[NCONN];
};

static void conns_open(struct conns *s, const char *sock)
{
	char msg[256];
	int i, err;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < NCONN; i++) {
		err = tdbc_connect(&s->c[i], sock, 0, msg, sizeof(msg));
		CHECK(err == 0, "uid %u: connect %d: %s", (unsigned)getuid(),
		      i, msg);
		err = tdbc_table_open(s->c[i], TABLE, &s->t[i]);
		CHECK(err == 0, "open " TABLE ": %s", tdbc_errmsg(s->c[i]));
	}
}

/* One more watch on connection i (a prefix of its own): 0 or the error,
 * its message in msg. */
static int watch_one(struct conns *s, int i, char *msg, size_t size)
{
	char p[16];
	int err;

	CHECK(s->n[i] <= PER_CONN, "connection %d holds %d watches, more "
	      "than max-watches %d", i, s->n[i], PER_CONN);
	snprintf(p, sizeof(p), "%d.%d.%u", i, s->n[i], (unsigned)getpid());
	err = tdbc_watch(s->t[i], p, strlen(p), &s->w[i][s->n[i]]);
	if (!err)
		s->n[i]++;
	else if (msg)
		snprintf(msg, size, "%s", tdbc_errmsg(s->c[i]));
	return err;
}

/* Watch on connections from..NCONN-1 until refused other than by a
 * connection's own limit (EMFILE: go on with the next one). */
static void fill(struct conns *s, int from, struct report *r)
{
	int i, err = 0;

	for (i = from; i < NCONN; i++) {
		while (!(err = watch_one(s, i, r->msg, sizeof(r->msg))))
			r->made++;
		if (err != -EMFILE)
			break;
	}
	r->err = err == -EMFILE ? 0 : err;
}

/* UNWATCH gives one back; so does closing a connection (tdbd frees it
 * when it reads the close: try for up to 5 s). */
static void give_back(struct conns *s, struct report *r)
{
	int last = 0, i, err;
	uint64_t end;

	for (i = 0; i < NCONN; i++)
		if (s->n[i] && s->n[i] < PER_CONN)
			last = i;       /* the connection refused EDQUOT */
	tdbc_watch_close(s->w[last][--s->n[last]]);
	r->again_err = watch_one(s, last, NULL, 0);
	r->again_next_err = watch_one(s, last, NULL, 0);
	/* connection 0 holds PER_CONN; connection NCONN-1 none */
	CHECK(s->n[0] == PER_CONN && s->n[NCONN - 1] == 0,
	      "uid A's watches are not where the test expects them");
	tdbc_close(s->c[0]);
	s->c[0] = NULL;
	end = h_now_ms() + 5000;
	while ((err = watch_one(s, NCONN - 1, NULL, 0)) == -EDQUOT &&
	       h_now_ms() < end)
		h_sleep_ms(10);
	if (!err) {
		r->after_close = 1;
		while (!(err = watch_one(s, NCONN - 1, NULL, 0)))
			r->after_close++;
	}
	r->after_close_err = err;
	r->last_err = watch_one(s, last, NULL, 0);
}

enum mode { FILL, FILL_GIVE_BACK };

/* Fork; the child becomes uid (gid uid, no groups), watches, reports,
 * and holds its watches until actor_end(). */
static void actor_run(struct actor *a, uid_t uid, const char *sock,
		      enum mode mode)
{
	int go[2], rep[2];
	char b;

	CHECK(pipe(go) == 0 && pipe(rep) == 0, "pipe");
	fflush(NULL);
	a->pid = fork();
	CHECK(a->pid >= 0, "fork");
	if (a->pid == 0) {
		static struct conns s;
		struct report r;

		memset(&r, 0, sizeof(r));
		close(go[1]);
		close(rep[0]);
		h_become(uid);
		conns_open(&s, sock);
		fill(&s, 0, &r);
		if (mode == FILL_GIVE_BACK && r.err == -EDQUOT)
			give_back(&s, &r);
		CHECK(write(rep[1], &r, sizeof(r)) == (ssize_t)sizeof(r),
		      "report");
		if (read(go[0], &b, 1) < 0)
			(void)0;
		_exit(0);       /* closing everything is the clean-up */
	}
	h_track(a->pid);
	close(go[0]);
	close(rep[1]);
	CHECK(read(rep[0], &a->rep, sizeof(a->rep)) ==
	      (ssize_t)sizeof(a->rep), "actor uid %u failed",
	      (unsigned int)uid);
	close(rep[0]);
	a->go_wr = go[1];
}

static void actor_end(struct actor *a)
{
	int st;

	CHECK(write(a->go_wr, "g", 1) == 1, "go pipe");
	close(a->go_wr);
	CHECK(waitpid(a->pid, &st, 0) == a->pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "actor failed");
	h_untrack(a->pid);
}

static bool watches_are(const struct tdbc_stats *st, const void *arg)
{
	return st->watches == *(const uint32_t *)arg;
}

static void wait_watches(struct tdbc *ctl, uint32_t n)
{
	struct tdbc_stats st;

	CHECK(h_wait_stats(ctl, &st, watches_are, &n, 10000),
	      "STATS watches %u, want %u", st.watches, n);
}

static void check_a(const struct report *r)
{
	CHECK(r->made == PER_UID && r->err == -EDQUOT,
	      "uid %d made %d watches on %d connections, then %s (\"%s\"); "
	      "want %d (max-watches-per-uid) then EDQUOT", UID_A, r->made,
	      NCONN, h_errname(r->err), r->msg, PER_UID);
	CHECK(strstr(r->msg, "max-watches-per-uid"), "the refusal does not "
	      "name max-watches-per-uid: \"%s\"", r->msg);
	CHECK(r->again_err == 0, "a watch after an UNWATCH: %s",
	      h_errname(r->again_err));
	CHECK(r->again_next_err == -EDQUOT, "the watch after that: %s, "
	      "want EDQUOT", h_errname(r->again_next_err));
	CHECK(r->after_close == PER_CONN && r->after_close_err == -EMFILE,
	      "after closing a connection with %d watches, another made %d "
	      "(then %s), want %d then EMFILE", PER_CONN, r->after_close,
	      h_errname(r->after_close_err), PER_CONN);
	CHECK(r->last_err == -EDQUOT, "uid %d back at %d: %s, want EDQUOT",
	      UID_A, PER_UID, h_errname(r->last_err));
}

/* Root watches on a connection of its own until refused: the count. */
static int root_fill(struct conns *s, const char *sock, char *msg,
		     size_t size, int *err)
{
	int n = 0;

	conns_open(s, sock);
	while (!(*err = watch_one(s, 0, msg, size)))
		n++;
	return n;
}

int main(void)
{
	static const char *const args[] = { "--socket-mode", "0666",
		"--max-watches", "16", "--max-watches-per-uid", "40",
		"--max-watches-total", "64", NULL };
	struct tdbc_table_opts o;
	static struct conns rs;
	struct actor a, b;
	struct h_daemon d;
	struct tdbc *ctl;
	char msg[256];
	int n, err, i;

	if (geteuid() != 0) {
		printf("tdbd-watch-quota: skipped (needs root to act as "
		       "other users)\n");
		return 77;
	}
	h_init("tdbd-watch-quota", 120);
	h_start(&d, "wq", args);
	ctl = h_connect(&d, 0);
	tdbc_table_opts_init(&o);
	o.mode = 0666;
	CHECK(tdbc_table_create(ctl, TABLE, &o) == 0, "create: %s",
	      tdbc_errmsg(ctl));

	/* per uid, and what ending watches gives back */
	actor_run(&a, UID_A, d.sock, FILL_GIVE_BACK);
	check_a(&a.rep);
	wait_watches(ctl, PER_UID);
	printf("watch-quota: uid %d refused EDQUOT at %d watches on %d "
	       "connections; UNWATCH and a close gave them back\n", UID_A,
	       a.rep.made, NCONN);

	/* in all: B stops at 7/8 of 64, root gets the rest */
	actor_run(&b, UID_B, d.sock, FILL);
	CHECK(b.rep.made == TOTAL - TOTAL / 8 - PER_UID &&
	      b.rep.err == -ENOSPC, "uid %d made %d beside uid %d's %d, "
	      "then %s (\"%s\"); want %d then ENOSPC", UID_B, b.rep.made,
	      UID_A, PER_UID, h_errname(b.rep.err), b.rep.msg,
	      TOTAL - TOTAL / 8 - PER_UID);
	CHECK(strstr(b.rep.msg, "max-watches-total; the last eighth is "
		     "kept for root"), "the refusal does not name "
	      "max-watches-total and root's eighth: \"%s\"", b.rep.msg);
	n = root_fill(&rs, d.sock, msg, sizeof(msg), &err);
	CHECK(n == TOTAL / 8 && err == -ENOSPC &&
	      strstr(msg, "max-watches-total"), "root made %d more (then %s "
	      "\"%s\"), want %d then ENOSPC", n, h_errname(err), msg,
	      TOTAL / 8);
	printf("watch-quota: uid %d refused ENOSPC at %d (7/8 of %d in "
	       "all); root made the last %d\n", UID_B, PER_UID + b.rep.made,
	       TOTAL, n);

	/* everything ended is given back */
	actor_end(&a);
	actor_end(&b);
	wait_watches(ctl, (uint32_t)n);
	for (i = 0; i < NCONN; i++)
		tdbc_close(rs.c[i]);
	wait_watches(ctl, 0);
	actor_run(&a, UID_A, d.sock, FILL);
	CHECK(a.rep.made == PER_UID && a.rep.err == -EDQUOT, "uid %d anew: "
	      "%d watches then %s, want %d then EDQUOT", UID_A, a.rep.made,
	      h_errname(a.rep.err), PER_UID);
	actor_end(&a);
	wait_watches(ctl, 0);
	tdbc_close(ctl);
	h_stop(&d);
	CHECK(!h_log_has(&d, "still charged") && !h_log_has(&d, "a bug"),
	      "tdbd reports a quota charge left or given back twice");
	printf("watch-quota: all given back; uid %d made %d again\n", UID_A,
	       a.rep.made);
	h_done();
	return 0;
}
