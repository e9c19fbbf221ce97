// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_evloop.c - libtdbclient in an event loop, in either home
 * (issue 17): tdbc_fd is readable for a completion and for a change to a
 * watched table, and not otherwise (a poll with timeout 0 after
 * tdbc_reap and tdbc_watch_next returned nothing); 10 000 asynchronous
 * puts and 10 000 changes another process makes are all seen through
 * epoll with no wake-up lost; TDBC_OP_COMMIT and tdbc_scan_submit give
 * what the blocking calls give.  On tdb.ko the descriptor is an epoll
 * set of /dev/tdb (generic netlink: its socket) and the library's own
 * eventfd; on tdbd of its socket and the eventfd tdbd passes at ATTACH.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>

#include "kt.h"

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	CHECK(n >= 0, "poll: %s", strerror(errno));
	return n > 0 && (p.revents & POLLIN);
}

/* Reap until nothing: how many; fails on an error completion. */
static unsigned int reap_all(struct tdbc *c)
{
	struct tdbc_cqe cq[64];
	unsigned int total = 0;
	int n, i;

	while ((n = tdbc_reap(c, cq, 64, 0, 0)) > 0) {
		for (i = 0; i < n; i++)
			CHECK(cq[i].res == 0, "completion %llu: %s (%s)",
			      (unsigned long long)cq[i].user,
			      h_errname(cq[i].res), tdbc_errmsg(c));
		total += (unsigned int)n;
	}
	CHECK(n == 0, "reap: %s", h_errname(n));
	return total;
}

/* One completion, waiting on tdbc_fd only. */
static struct tdbc_cqe reap_one(struct tdbc *c)
{
	struct tdbc_cqe cqe;
	int fd = tdbc_fd(c), n;

	for (;;) {
		n = tdbc_reap(c, &cqe, 1, 0, 0);
		CHECK(n >= 0, "reap: %s", h_errname(n));
		if (n == 1)
			return cqe;
		CHECK(readable(fd, 20000), "no completion in 20 s");
	}
}

static void completion_ready(unsigned int flags)
{
	struct tdbc *c = kt_connect(flags);
	struct tdbc_table *t = kt_open(c, "evl");
	struct tdbc_req rq = { .op = TDBC_OP_PUT, .table = t, .key = "k",
			       .klen = 1, .val = "v", .vlen = 1, .user = 3 };
	struct tdbc_cqe cqe;
	int fd = tdbc_fd(c), i;

	CHECK(fd >= 0, "tdbc_fd: %s (%s)", h_errname(fd), tdbc_errmsg(c));
	CHECK(!readable(fd, 0), "readable with nothing waiting");
	for (i = 0; i < 3; i++) {
		CHECK_EQ(tdbc_submit(c, &rq, 1), 1, "submit");
		CHECK(readable(fd, 5000), "not readable for a completion");
		cqe = reap_one(c);
		CHECK(cqe.user == 3 && cqe.res == 0, "completion");
		CHECK_EQ(tdbc_reap(c, &cqe, 1, 0, 0), 0, "reap after");
		CHECK(!readable(fd, 0), "readable after reaping all");
	}
	/* a completion a blocking call took in is announced */
	CHECK_EQ(tdbc_submit(c, &rq, 1), 1, "submit");
	CHECK_EQ(tdbc_put(t, NULL, "b", 1, "1", 1, 0), 0, "put");
	CHECK(readable(fd, 5000), "kept completion not announced");
	CHECK_EQ(reap_all(c), 1, "completions");
	CHECK(!readable(fd, 0), "readable after reaping all");
	tdbc_table_close(t);
	tdbc_close(c);
}

static void put_by_other(const char *table, const char *key)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, table);

	CHECK_EQ(tdbc_put(t, NULL, key, strlen(key), "x", 1, 0), 0, "put");
	tdbc_table_close(t);
	tdbc_close(c);
}

static void watch_ready(void)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "evl-w");
	struct tdbc_watch *w;
	struct tdbc_event ev;
	int fd, err;

	err = tdbc_watch(t, NULL, 0, &w);
	CHECK(err == 0, "watch: %s (%s)", h_errname(err), tdbc_errmsg(c));
	fd = tdbc_fd(c);
	CHECK(fd >= 0, "tdbc_fd: %s", h_errname(fd));
	CHECK_EQ(tdbc_watch_next(w, &ev, 0, NULL), 0, "watch_next");
	CHECK(!readable(fd, 0), "readable with nothing waiting");
	put_by_other("evl", "other");
	CHECK(!readable(fd, 200), "readable for an unwatched table");
	put_by_other("evl-w", "y");
	CHECK(readable(fd, 5000), "not readable for a watched change");
	CHECK_EQ(tdbc_reap(c, NULL, 0, 0, 0), 0, "reap");
	CHECK(readable(fd, 0), "unread change not announced after reap");
	CHECK_EQ(tdbc_watch_next(w, &ev, 0, NULL), 1, "watch_next");
	CHECK(ev.kind == TDBC_EV_PUT && ev.klen == 1, "event");
	CHECK_EQ(tdbc_watch_next(w, &ev, 0, NULL), 0, "watch_next");
	CHECK(!readable(fd, 0), "readable after reading all");
	tdbc_watch_close(w);
	tdbc_table_close(t);
	tdbc_close(c);
}

#define LOOP_N 10000u

static void writer(const char *table, unsigned int n)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, table);
	char k[32];
	unsigned int i;

	for (i = 0; i < n; i++) {
		int kl = snprintf(k, sizeof(k), "w%u", i);

		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)kl, "v", 1, 0), 0,
			 "writer's put");
	}
	tdbc_close(c);
	_exit(0);
}

/* The loop of the rule: reap and read until nothing, then epoll. */
static void no_lost_wakeup(void)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "evl-loop");
	struct tdbc_table *wt = kt_open(c, "evl-loopw");
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct tdbc_req rq[64];
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET };
	char keys[64][16];
	unsigned int n = LOOP_N, sent = 0, done = 0, events = 0, i, b;
	uint64_t lost;
	int ep, fd, r, st;
	pid_t pid;

	CHECK_EQ(tdbc_watch(wt, NULL, 0, &w), 0, "watch");
	fd = tdbc_fd(c);
	CHECK(fd >= 0, "tdbc_fd: %s", h_errname(fd));
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee) == 0,
	      "epoll: %s", strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		writer("evl-loopw", n);
	while (done < n || events < n) {
		while (sent < n && sent - done < 256) {
			b = n - sent < 64 ? n - sent : 64;
			for (i = 0; i < b; i++) {
				int kl = snprintf(keys[i], sizeof(keys[i]),
						  "p%u", sent + i);

				rq[i] = (struct tdbc_req){
					.op = TDBC_OP_PUT, .table = t,
					.key = keys[i], .klen = (size_t)kl,
					.val = "x", .vlen = 1,
					.user = sent + i };
			}
			r = tdbc_submit(c, rq, b);
			CHECK(r > 0, "submit: %s", h_errname(r));
			sent += (unsigned int)r;
		}
		done += reap_all(c);
		while ((r = tdbc_watch_next(w, &ev, 0, &lost)) != 0) {
			CHECK(r == 1 || r == -EOVERFLOW, "watch_next: %s",
			      h_errname(r));
			events += r == 1 ? 1 : (unsigned int)lost;
		}
		if (done >= n && events >= n)
			break;
		if (sent < n && sent - done < 256)
			continue;
		do {
			r = epoll_wait(ep, &ee, 1, 20000);
		} while (r < 0 && errno == EINTR);
		CHECK(r != 0, "lost wake-up: nothing in 20 s with %u of %u "
		      "completions and %u of %u changes", done, n, events, n);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the writer failed");
	CHECK(done == n && events == n, "%u completions, %u changes", done,
	      events);
	close(ep);
	tdbc_watch_close(w);
	tdbc_table_close(t);
	tdbc_table_close(wt);
	tdbc_close(c);
}

static void txn_puts(struct tdbc_table *t, struct tdbc_txn *x,
		     const char *base, unsigned int flags)
{
	char k[32];
	int i, kl;

	for (i = 0; i < 20; i++) {
		kl = snprintf(k, sizeof(k), "%s%d", base, i);
		CHECK_EQ(tdbc_put(t, x, k, (size_t)kl, k, (size_t)kl, flags),
			 0, "put in txn");
	}
}

static void async_commit(void)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "evl-txn");
	struct tdbc_req rq = { .op = TDBC_OP_COMMIT, .user = 42 };
	struct tdbc_txn *x;
	struct tdbc_cqe cqe;
	char buf[32];
	int blocking;

	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "begin");
	txn_puts(t, x, "a", 0);
	rq.txn = x;
	CHECK_EQ(tdbc_submit(c, &rq, 1), 1, "submit commit");
	cqe = reap_one(c);
	CHECK(cqe.user == 42 && cqe.res == 0, "commit: %s",
	      h_errname(cqe.res));
	CHECK_EQ(tdbc_get(t, NULL, "a7", 2, buf, sizeof(buf), NULL), 2,
		 "get after commit");
	/* a failing commit: the blocking call's error, nothing applied */
	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "begin");
	txn_puts(t, x, "b", 0);
	txn_puts(t, x, "a", TDBC_NOOVERWRITE);
	blocking = tdbc_txn_commit(x);
	CHECK_EQ(blocking, -EEXIST, "blocking commit");
	CHECK_EQ(tdbc_txn_begin(c, &x), 0, "begin");
	txn_puts(t, x, "c", 0);
	txn_puts(t, x, "a", TDBC_NOOVERWRITE);
	rq.txn = x;
	CHECK_EQ(tdbc_submit(c, &rq, 1), 1, "submit commit");
	cqe = reap_one(c);
	CHECK_EQ(cqe.res, blocking, "asynchronous commit");
	CHECK_EQ(tdbc_get(t, NULL, "c7", 2, buf, sizeof(buf), NULL), -ENOENT,
		 "get after a failed commit");
	tdbc_table_close(t);
	tdbc_close(c);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **scan_all(struct tdbc *c, struct tdbc_table *t, bool async,
		       unsigned int *n)
{
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	char **out = NULL;
	unsigned int cap = 0;
	int r;

	*n = 0;
	r = async ? tdbc_scan_submit(t, NULL, 0, 0, 0, 9, &s) :
		    tdbc_scan_open(t, NULL, 0, 0, &s);
	CHECK(r == 0, "scan: %s", h_errname(r));
	while ((r = tdbc_scan_next(s, &k, &kl, &v, &vl)) != 0) {
		if (r == -EAGAIN) {
			struct tdbc_cqe cqe = reap_one(c);

			CHECK(async && cqe.user == 9 && cqe.res >= 0,
			      "batch: %s", h_errname(cqe.res));
			continue;
		}
		CHECK(r == 1, "scan_next: %s", h_errname(r));
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			out = realloc(out, cap * sizeof(*out));
			CHECK(out, "out of memory");
		}
		out[*n] = malloc(kl + vl + 2);
		CHECK(out[*n], "out of memory");
		memcpy(out[*n], k, kl);
		out[*n][kl] = '=';
		memcpy(out[*n] + kl + 1, v, vl);
		out[*n][kl + vl + 1] = 0;
		(*n)++;
	}
	tdbc_scan_close(s);
	if (*n)
		qsort(out, *n, sizeof(*out), cmp_str);
	return out;
}

static void async_scan(void)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "evl-loop");  /* 10 000 keys */
	unsigned int na, nb, i;
	char **a = scan_all(c, t, false, &na);
	char **b = scan_all(c, t, true, &nb);

	CHECK(na == LOOP_N && nb == na, "scans: %u and %u records", na, nb);
	for (i = 0; i < na; i++) {
		CHECK(!strcmp(a[i], b[i]), "record %u: %s and %s", i, a[i],
		      b[i]);
		free(a[i]);
		free(b[i]);
	}
	free(a);
	free(b);
	tdbc_table_close(t);
	tdbc_close(c);
}

int main(void)
{
	struct tdbc *c;

	kt_init("evloop", 600);
	c = kt_connect(0);
	kt_create(c, "evl", 0600, 0);
	kt_create(c, "evl-w", 0600, 0);
	kt_create(c, "evl-loop", 0600, 0);
	kt_create(c, "evl-loopw", 0600, 0);
	kt_create(c, "evl-txn", 0600, 0);
	completion_ready(0);
	completion_ready(TDBC_NO_RINGS);
	watch_ready();
	no_lost_wakeup();
	async_commit();
	async_scan();
	tdbc_close(c);
	kt_done();
	return 0;
}
