// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_watch.c - changes reach watchers: a watcher (tdbc_watch: on
 * tdb.ko a feed mapped from /dev/tdb) sees every PUT and DEL another
 * process makes, in order, with keys and values; on tdb.ko a generic
 * netlink socket in the "changes" multicast group (root) sees them too,
 * each naming the table.  Then the table's drop ends the watch.
 *
 * A table's feed lives while anyone watches it: after the last UNWATCH
 * a mapping of the old feed (kept by a child forked while it was mapped)
 * sees no later change, while a new WATCH's feed does.  And one client
 * holding many watches (a hash in both owners) gets WATCH, UNWATCH and
 * prefix filtering right for each, without slowing down.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>

#include "kt.h"

#define NPUT 200
#define NDEL 80
#define NMANY 1000      /* < max-watches' default, 1024 */

static void writer(const char *table)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, table);
	char key[32], val[64];
	int i, err;

	for (i = 0; i < NPUT; i++) {
		int kl = snprintf(key, sizeof(key), "w-%d", i);
		int vl = snprintf(val, sizeof(val), "val-%d", i * 7);

		err = tdbc_put(t, NULL, key, kl, val, vl, 0);
		CHECK(err == 0, "put: %s", h_errname(err));
	}
	for (i = 0; i < NDEL; i++) {
		int kl = snprintf(key, sizeof(key), "w-%d", i * 2);

		err = tdbc_del(t, NULL, key, kl);
		CHECK(err == 0, "del: %s", h_errname(err));
	}
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

/* Read the multicast group until NPUT + NDEL changes of table came (or
 * 10 s): count them, check each names the table and its kind. */
static void check_mcast(struct kt_genl *g, const char *table)
{
	static char buf[1 << 16] __attribute__((aligned(4)));
	int puts = 0, dels = 0, next = 0;
	uint64_t end = h_now_ms() + 10000;

	while (puts + dels < NPUT + NDEL) {
		struct pollfd pfd = { .fd = g->fd, .events = POLLIN };
		struct nlmsghdr *nlh;
		long n;
		int left = (int)(end - h_now_ms());

		CHECK(left > 0 && poll(&pfd, 1, left) == 1,
		      "multicast: %d puts, %d dels after 10 s", puts, dels);
		n = recv(g->fd, buf, sizeof(buf), 0);
		CHECK(n > 0, "recv: %s", strerror(errno));
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, (int)n);
		     nlh = mnl_nlmsg_next(nlh, (int *)&n)) {
			struct genlmsghdr *gh = mnl_nlmsg_get_payload(nlh);
			const struct nlattr *a;
			const char *tname = NULL;
			char want[32];
			const void *key = NULL;
			size_t klen = 0;

			CHECK(nlh->nlmsg_type == g->family,
			      "multicast message of type %u", nlh->nlmsg_type);
			CHECK(!(nlh->nlmsg_flags & NLM_F_REQUEST),
			      "a notification with NLM_F_REQUEST");
			mnl_attr_for_each(a, nlh, sizeof(*gh)) {
				if (mnl_attr_get_type(a) == TDB_A_TABLE)
					tname = mnl_attr_get_str(a);
				if (mnl_attr_get_type(a) == TDB_A_KEY) {
					key = mnl_attr_get_payload(a);
					klen = mnl_attr_get_payload_len(a);
				}
			}
			CHECK(tname, "a notification without TDB_A_TABLE");
			if (strcmp(tname, table))
				continue;
			CHECK(key, "a notification without a key");
			if (gh->cmd == TDB_CMD_PUT) {
				snprintf(want, sizeof(want), "w-%d", next++);
				CHECK(klen == strlen(want) &&
				      !memcmp(key, want, klen),
				      "multicast PUT %d out of order", next);
				puts++;
			} else if (gh->cmd == TDB_CMD_DEL) {
				dels++;
			} else {
				CHECK(0, "unexpected notification cmd %u",
				      gh->cmd);
			}
		}
	}
	CHECK(puts == NPUT && dels == NDEL, "multicast: %d puts %d dels",
	      puts, dels);
}

static void put_str(struct tdbc_table *t, const char *key, const char *val)
{
	int err = tdbc_put(t, NULL, key, strlen(key), val, strlen(val), 0);

	CHECK(err == 0, "put %s: %s", key, h_errname(err));
}

static bool is_put(const struct tdbc_event *ev, const char *key)
{
	return ev->kind == TDBC_EV_PUT && ev->klen == strlen(key) &&
	       !memcmp(ev->key, key, ev->klen);
}

/* The child of check_refeed: read the old feed (its mapping, copied by
 * fork; the connection is the parent's) once the parent says so.  It
 * must hold "before" and nothing after it.  The exit code says what was
 * wrong. */
static void refeed_child(struct tdbc_watch *old, int go)
{
	struct tdbc_event ev;
	char b;
	int i;

	if (read(go, &b, 1) != 1)
		_exit(2);
	if (tdbc_watch_next(old, &ev, 0, NULL) != 1 || !is_put(&ev, "before"))
		_exit(3);
	for (i = 0; i < 30; i++) {
		if (tdbc_watch_next(old, &ev, 0, NULL) != 0)
			_exit(4);
		usleep(10000);
	}
	_exit(0);
}

static void check_refeed(struct tdbc *c)
{
	static const char *const why[] = {
		[2] = "no go from the parent",
		[3] = "the old feed lacks the change made while watched",
		[4] = "the old feed got a change made after the last UNWATCH",
	};
	const char *table = "refeed";
	struct tdbc_table *t;
	struct tdbc_watch *w1, *w2;
	struct tdbc_event ev;
	int go[2], status, err;
	pid_t pid;

	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	err = tdbc_watch(t, NULL, 0, &w1);
	CHECK(err == 0, "watch: %s (%s)", h_errname(err), tdbc_errmsg(c));
	CHECK(pipe(go) == 0, "pipe: %s", strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(go[1]);
		refeed_child(w1, go[0]);
	}
	h_track(pid);
	close(go[0]);
	put_str(t, "before", "1");
	/* the last watch of the table ends: its feed is retired */
	tdbc_watch_close(w1);
	err = tdbc_watch(t, NULL, 0, &w2);
	CHECK(err == 0, "watch again: %s (%s)", h_errname(err),
	      tdbc_errmsg(c));
	put_str(t, "after", "2");
	err = tdbc_watch_next(w2, &ev, 5000, NULL);
	CHECK(err == 1 && is_put(&ev, "after"),
	      "the new watch: %d, not the PUT of \"after\"", err);
	err = tdbc_watch_next(w2, &ev, 0, NULL);
	CHECK(err == 0, "the new watch: an extra event (%d)", err);
	CHECK(write(go[1], "g", 1) == 1, "write: %s", strerror(errno));
	close(go[1]);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the old feed's mapping: %s (status %#x)",
	      WIFEXITED(status) && WEXITSTATUS(status) < 5 &&
	      why[WEXITSTATUS(status)] ? why[WEXITSTATUS(status)] : "?",
	      status);
	tdbc_watch_close(w2);
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	CHECK(err == 0, "drop %s: %s", table, h_errname(err));
}

/* NMANY watches (prefixes) of one table on one client: each is made,
 * filters its own keys and is ended by UNWATCH, in a scrambled order;
 * the owner counts them all.  Prints what they cost. */
static void check_many(struct tdbc *c)
{
	static struct tdbc_watch *w[NMANY];
	struct tdbc_watch *dup;
	const char *table = "many";
	struct tdbc_stats st;
	struct tdbc_table *t;
	struct tdbc_event ev;
	uint32_t base;
	uint64_t t0, t1, t2;
	char p[16];
	int i, err;

	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	err = tdbc_stats(c, &st);
	CHECK(err == 0, "stats: %s", h_errname(err));
	base = st.watches;
	t0 = h_now_ms();
	for (i = 0; i < NMANY; i++) {
		int n = snprintf(p, sizeof(p), "p%04d/", i);

		err = tdbc_watch(t, p, n, &w[i]);
		CHECK(err == 0, "watch %d of %d: %s (%s)", i + 1, NMANY,
		      h_errname(err), tdbc_errmsg(c));
	}
	t1 = h_now_ms();
	err = tdbc_watch(t, "p0007/", 6, &dup);
	CHECK(err == -EEXIST, "the same watch again: %s", h_errname(err));
	err = tdbc_stats(c, &st);
	CHECK(err == 0 && st.watches == base + NMANY,
	      "stats: %s, %u watches, not %u", h_errname(err), st.watches,
	      base + NMANY);
	put_str(t, "p0500/k", "v");
	err = tdbc_watch_next(w[500], &ev, 5000, NULL);
	CHECK(err == 1 && is_put(&ev, "p0500/k"), "watch p0500/: %d", err);
	for (i = 499; i <= 501; i += 2) {
		err = tdbc_watch_next(w[i], &ev, 0, NULL);
		CHECK(err == 0, "watch %d got another prefix's key (%d)", i,
		      err);
	}
	t2 = h_now_ms();
	for (i = 0; i < NMANY; i++)     /* 7 and NMANY are coprime */
		tdbc_watch_close(w[i * 7 % NMANY]);
	err = tdbc_stats(c, &st);
	CHECK(err == 0 && st.watches == base, "stats after UNWATCH: %s, %u "
	      "watches, not %u", h_errname(err), st.watches, base);
	printf("watch: %d watches on one client: WATCH %.1f us, UNWATCH "
	       "%.1f us each\n", NMANY, (t1 - t0) * 1000.0 / NMANY,
	       (h_now_ms() - t2) * 1000.0 / NMANY);
	/* generous: a cost growing with the watches held would be ~n^2 */
	CHECK(t1 - t0 < 30000, "%d watches took %llu ms", NMANY,
	      (unsigned long long)(t1 - t0));
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	CHECK(err == 0, "drop %s: %s", table, h_errname(err));
}

int main(void)
{
	const char *table = "watched";
	struct tdbc *c;
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct kt_genl g = { .fd = -1 };
	char want[64];
	uint64_t lost = 0;
	int i, err, status;
	pid_t pid;

	kt_init("watch", 300);
	c = kt_connect(0);
	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	err = tdbc_watch(t, NULL, 0, &w);
	CHECK(err == 0, "watch: %s (%s)", h_errname(err), tdbc_errmsg(c));
	if (kt_kernel) {
		unsigned int grp;

		kt_genl_open(&g);
		CHECK(g.mcgrp, "family %s has no group \"%s\"", TDB_GENL_NAME,
		      TDB_GENL_MCGRP);
		grp = g.mcgrp;
		/* room for every notification of the test (each skb costs
		 * its truesize against the buffer) while nobody reads */
		{
			int sz = 32 << 20;

			CHECK(setsockopt(g.fd, SOL_SOCKET, SO_RCVBUFFORCE,
					 &sz, sizeof(sz)) == 0,
			      "SO_RCVBUFFORCE: %s", strerror(errno));
		}
		CHECK(setsockopt(g.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				 &grp, sizeof(grp)) == 0,
		      "root joining the multicast group: %s",
		      strerror(errno));
	}

	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		writer(table);
	h_track(pid);

	for (i = 0; i < NPUT + NDEL; i++) {
		err = tdbc_watch_next(w, &ev, 10000, &lost);
		CHECK(err == 1, "event %d: %s (lost %llu)", i,
		      err ? h_errname(err) : "none within 10 s",
		      (unsigned long long)lost);
		if (i < NPUT) {
			int kl = snprintf(want, sizeof(want), "w-%d", i);
			int vl;

			CHECK(ev.kind == TDBC_EV_PUT, "event %d kind %d", i,
			      ev.kind);
			CHECK(ev.klen == (size_t)kl &&
			      !memcmp(ev.key, want, kl), "PUT %d: wrong key", i);
			vl = snprintf(want, sizeof(want), "val-%d", i * 7);
			CHECK(ev.vlen == (size_t)vl &&
			      !memcmp(ev.val, want, vl), "PUT %d: wrong value",
			      i);
		} else {
			int kl = snprintf(want, sizeof(want), "w-%d",
					  (i - NPUT) * 2);

			CHECK(ev.kind == TDBC_EV_DEL, "event %d kind %d", i,
			      ev.kind);
			CHECK(ev.klen == (size_t)kl &&
			      !memcmp(ev.key, want, kl), "DEL %d: wrong key", i);
		}
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "writer failed: %#x", status);
	h_untrack(pid);
	err = tdbc_watch_next(w, &ev, 200, NULL);
	CHECK(err == 0, "an extra event: %d", err);
	if (kt_kernel) {
		check_mcast(&g, table);
		kt_genl_close(&g);
	}

	/* the drop ends the watch */
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	CHECK(err == 0, "drop: %s", h_errname(err));
	err = tdbc_watch_next(w, &ev, 5000, NULL);
	CHECK(err == 1 && ev.kind == TDBC_EV_DROP, "after the drop: %d kind %d",
	      err, err == 1 ? (int)ev.kind : 0);
	err = tdbc_watch_next(w, &ev, 0, NULL);
	CHECK(err == -ENOENT, "after DROP: %s", h_errname(err));
	tdbc_watch_close(w);
	check_refeed(c);
	check_many(c);
	tdbc_close(c);
	printf("watch: %d puts and %d dels seen by the watcher%s\n", NPUT,
	       NDEL, kt_kernel ? " and the multicast group" : "");
	kt_done();
	return 0;
}
