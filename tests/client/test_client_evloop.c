// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_evloop.c - libtdbclient in an event loop, against a real
 * tdbd (issue 17): tdbc_fd, asynchronous commit and scan.
 *
 * The daemon ($TDBD, set by meson) is started on a scratch socket;
 * without it the test is skipped (77).  What is checked:
 *  - tdbc_fd becomes readable for a completion and for a watched change,
 *    and not otherwise: after tdbc_reap and tdbc_watch_next returned
 *    nothing, a poll with timeout 0 says "not readable", also after a
 *    change to a table nobody watches;
 *  - no wake-up is lost: 10 000 asynchronous puts and 10 000 watched
 *    changes made by another thread, driven by epoll alone (a poll that
 *    sleeps 10 s with work outstanding is a lost wake-up);
 *  - TDBC_OP_COMMIT/ABORT and tdbc_scan_submit give what the blocking
 *    calls give;
 *  - the daemon's death makes the descriptor readable and the calls fail;
 *  - $TDBC_EVLOOP_EXAMPLE (the example in clients/examples, if built)
 *    runs to its end against the daemon.
 * Completions are also checked over the socket only (TDBC_NO_RINGS:
 * tdbc_fd is the socket there).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <tdb/client.h>

#include "daemon.h"

/* --- the daemon --------------------------------------------------------- */

static struct daemon g_daemon;

struct mode {
	unsigned int flags;
	const char *tag;
};
static const struct mode ring_mode = { 0, "r" };
static const struct mode sock_mode = { TDBC_NO_RINGS, "s" };

static int group_setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	return daemon_start(&g_daemon, "evl") ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	daemon_stop(&g_daemon, SIGTERM);
	return 0;
}

static struct tdbc *conn_at(const char *sock, unsigned int flags)
{
	char msg[256];
	struct tdbc *c = NULL;
	int err = tdbc_connect(&c, sock, flags, msg, sizeof(msg));

	if (err)
		fail_msg("connect %s: %d %s", sock, err, msg);
	return c;
}

static struct tdbc *conn(const struct mode *m)
{
	return conn_at(g_daemon.sock, m->flags);
}

static struct tdbc_table *fresh_table(struct tdbc *c, const char *base,
				      const struct mode *m, char *name)
{
	struct tdbc_table *t = NULL;
	int err;

	sprintf(name, "%s-%s", base, m->tag);
	err = tdbc_table_create(c, name, NULL);
	if (err)
		fail_msg("create %s: %d %s", name, err, tdbc_errmsg(c));
	assert_int_equal(tdbc_table_open(c, name, &t), 0);
	return t;
}

/* Is fd readable within ms? */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, ms);
	} while (n < 0 && errno == EINTR);
	assert_true(n >= 0);
	return n > 0 && (p.revents & POLLIN);
}

/* Reap (timeout 0) until nothing: the completions' count. */
static unsigned int reap_all(struct tdbc *c, int *first_err)
{
	struct tdbc_cqe cq[64];
	unsigned int total = 0;
	int n, i;

	while ((n = tdbc_reap(c, cq, 64, 0, 0)) > 0) {
		for (i = 0; i < n; i++)
			if (cq[i].res && first_err && !*first_err)
				*first_err = cq[i].res;
		total += (unsigned int)n;
	}
	assert_int_equal(n, 0);
	return total;
}

/* --- readable for a completion, and not otherwise ------------------------ */

static void test_fd_completion(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_req rq = { .op = TDBC_OP_PUT, .key = "k", .klen = 1,
			       .val = "v", .vlen = 1, .user = 7 };
	struct tdbc_cqe cqe;
	char name[64];
	int fd, i;

	assert_int_equal(tdbc_fd(NULL), -EINVAL);
	t = fresh_table(c, "evl-comp", m, name);
	rq.table = t;
	fd = tdbc_fd(c);
	assert_true(fd >= 0);
	assert_int_equal(tdbc_fd(c), fd);       /* the same each time */
	assert_false(readable(fd, 0));
	for (i = 0; i < 3; i++) {
		assert_int_equal(tdbc_submit(c, &rq, 1), 1);
		assert_true(readable(fd, 5000));
		assert_int_equal(tdbc_reap(c, &cqe, 1, 0, 0), 1);
		assert_int_equal(cqe.user, 7);
		assert_int_equal(cqe.res, 0);
		assert_int_equal(tdbc_reap(c, &cqe, 1, 0, 0), 0);
		assert_false(readable(fd, 0));
	}
	/* Blocking calls between polls leave it quiet once reaped. */
	assert_int_equal(tdbc_put(t, NULL, "b", 1, "1", 1, 0), 0);
	assert_int_equal(tdbc_reap(c, &cqe, 1, 0, 0), 0);
	assert_false(readable(fd, 0));
	/* A completion a blocking call took in is announced. */
	assert_int_equal(tdbc_submit(c, &rq, 1), 1);
	assert_int_equal(tdbc_put(t, NULL, "b", 1, "2", 1, 0), 0);
	assert_true(readable(fd, 5000));
	assert_int_equal(reap_all(c, NULL), 1);
	assert_false(readable(fd, 0));
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* --- readable for a watched change, and not otherwise -------------------- */

static void test_fd_watch(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m), *w2 = conn(m);
	struct tdbc_table *t, *u, *t2, *u2;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	char tn[64], un[64];
	int fd;

	t = fresh_table(c, "evl-watched", m, tn);
	u = fresh_table(c, "evl-other", m, un);
	assert_int_equal(tdbc_table_open(w2, tn, &t2), 0);
	assert_int_equal(tdbc_table_open(w2, un, &u2), 0);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
	fd = tdbc_fd(c);
	assert_true(fd >= 0);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	assert_false(readable(fd, 0));
	/* a change nobody here watches: quiet */
	assert_int_equal(tdbc_put(u2, NULL, "x", 1, "1", 1, 0), 0);
	assert_false(readable(fd, 200));
	/* a watched change, by another connection: readable */
	assert_int_equal(tdbc_put(t2, NULL, "y", 1, "2", 1, 0), 0);
	assert_true(readable(fd, 5000));
	assert_int_equal(tdbc_reap(c, NULL, 0, 0, 0), 0);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_memory_equal(ev.key, "y", 1);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	assert_false(readable(fd, 0));
	/* Unread changes stay announced even if only reap was called. */
	assert_int_equal(tdbc_put(t2, NULL, "z", 1, "3", 1, 0), 0);
	assert_true(readable(fd, 5000));
	assert_int_equal(tdbc_reap(c, NULL, 0, 0, 0), 0);
	assert_true(readable(fd, 0));
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 1);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	assert_false(readable(fd, 0));
	tdbc_watch_close(w);
	/* no watch, no wake-up */
	assert_int_equal(tdbc_reap(c, NULL, 0, 0, 0), 0);
	assert_int_equal(tdbc_put(t2, NULL, "q", 1, "4", 1, 0), 0);
	assert_false(readable(fd, 200));
	assert_int_equal(tdbc_table_drop(c, tn), 0);
	assert_int_equal(tdbc_table_drop(c, un), 0);
	tdbc_table_close(t);
	tdbc_table_close(u);
	tdbc_table_close(t2);
	tdbc_table_close(u2);
	tdbc_close(w2);
	tdbc_close(c);
}

/* --- no lost wake-up: 10 k operations ------------------------------------ */

#define LOOP_N 10000u

struct writer {
	const char *table;
	pthread_t th;
	int err;
};

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	struct tdbc *c;
	struct tdbc_table *t;
	char k[32];
	unsigned int i;

	if (tdbc_connect(&c, g_daemon.sock, 0, NULL, 0)) {
		wr->err = -1;
		return NULL;
	}
	wr->err = tdbc_table_open(c, wr->table, &t);
	for (i = 0; !wr->err && i < LOOP_N; i++) {
		int n = snprintf(k, sizeof(k), "w%u", i);

		wr->err = tdbc_put(t, NULL, k, (size_t)n, "v", 1, 0);
	}
	tdbc_close(c);
	return NULL;
}

static void test_no_lost_wakeup(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t, *wt;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct tdbc_req rq[64];
	struct epoll_event ee = { .events = EPOLLIN | EPOLLET };
	struct writer wr = { 0 };
	char tn[64], wn[64], keys[64][16];
	unsigned int sent = 0, done = 0, events = 0, i, b;
	uint64_t lost;
	int ep, fd, n, r, ferr = 0;

	t = fresh_table(c, "evl-loop", m, tn);
	wt = fresh_table(c, "evl-loopw", m, wn);
	assert_int_equal(tdbc_watch(wt, NULL, 0, &w), 0);
	fd = tdbc_fd(c);
	assert_true(fd >= 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);
	wr.table = wn;
	assert_int_equal(pthread_create(&wr.th, NULL, writer_main, &wr), 0);
	while (done < LOOP_N || events < LOOP_N) {
		/* keep up to 256 puts in flight */
		while (sent < LOOP_N && sent - done < 256) {
			b = LOOP_N - sent < 64 ? LOOP_N - sent : 64;
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
			assert_true(r > 0);
			sent += (unsigned int)r;
		}
		/* The rule: reap and read until nothing, then wait. */
		done += reap_all(c, &ferr);
		while ((r = tdbc_watch_next(w, &ev, 0, &lost)) != 0) {
			if (r == -EOVERFLOW) {
				events += (unsigned int)lost;
				continue;
			}
			assert_int_equal(r, 1);
			events++;
		}
		if (done >= LOOP_N && events >= LOOP_N)
			break;
		if (sent < LOOP_N && sent - done < 256)
			continue;
		do {
			n = epoll_wait(ep, &ee, 1, 10000);
		} while (n < 0 && errno == EINTR);
		if (n == 0)
			fail_msg("lost wake-up: no readiness in 10 s with %u "
				 "of %u completions and %u of %u changes",
				 done, LOOP_N, events, LOOP_N);
	}
	pthread_join(wr.th, NULL);
	assert_int_equal(wr.err, 0);
	assert_int_equal(ferr, 0);
	assert_int_equal(done, LOOP_N);
	assert_int_equal(events, LOOP_N);
	assert_int_equal(tdbc_inflight(c), 0);
	close(ep);
	tdbc_watch_close(w);
	assert_int_equal(tdbc_table_drop(c, tn), 0);
	assert_int_equal(tdbc_table_drop(c, wn), 0);
	tdbc_close(c);
}

/* --- asynchronous commit = blocking commit ------------------------------- */

/* One completion, waiting on tdbc_fd only. */
static struct tdbc_cqe reap_one(struct tdbc *c)
{
	struct tdbc_cqe cqe;
	int fd = tdbc_fd(c), n;

	for (;;) {
		n = tdbc_reap(c, &cqe, 1, 0, 0);
		assert_true(n >= 0);
		if (n == 1)
			return cqe;
		assert_true(readable(fd, 10000));
	}
}

static void txn_puts(struct tdbc_table *t, struct tdbc_txn *x,
		     const char *base, unsigned int flags)
{
	char k[32];
	unsigned int i;

	for (i = 0; i < 20; i++) {
		int n = snprintf(k, sizeof(k), "%s%u", base, i);

		assert_int_equal(tdbc_put(t, x, k, (size_t)n, k, (size_t)n,
					  flags), 0);
	}
}

static void test_async_commit(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_txn *x;
	struct tdbc_req rq = { .op = TDBC_OP_COMMIT, .user = 42 };
	struct tdbc_cqe cqe;
	char name[64], buf[64];
	int blocking;

	t = fresh_table(c, "evl-commit", m, name);
	/* a commit that applies: blocking, then asynchronous */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	txn_puts(t, x, "b", 0);
	assert_int_equal(tdbc_txn_commit(x), 0);
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	txn_puts(t, x, "a", 0);
	assert_int_equal(tdbc_get(t, NULL, "a3", 2, buf, sizeof(buf), NULL),
			 -ENOENT);
	rq.txn = x;
	assert_int_equal(tdbc_submit(c, &rq, 1), 1);   /* x is freed */
	cqe = reap_one(c);
	assert_int_equal(cqe.user, 42);
	assert_int_equal(cqe.res, 0);
	assert_int_equal(tdbc_get(t, NULL, "a3", 2, buf, sizeof(buf), NULL),
			 2);
	assert_int_equal(tdbc_get(t, NULL, "b3", 2, buf, sizeof(buf), NULL),
			 2);
	/* a commit that fails (-EEXIST): the same error, nothing applied */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	txn_puts(t, x, "c", 0);
	txn_puts(t, x, "b", TDBC_NOOVERWRITE);
	blocking = tdbc_txn_commit(x);
	assert_int_equal(blocking, -EEXIST);
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	txn_puts(t, x, "d", 0);
	txn_puts(t, x, "a", TDBC_NOOVERWRITE);
	rq.txn = x;
	assert_int_equal(tdbc_submit(c, &rq, 1), 1);
	cqe = reap_one(c);
	assert_int_equal(cqe.res, blocking);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	assert_int_equal(tdbc_get(t, NULL, "c1", 2, buf, sizeof(buf), NULL),
			 -ENOENT);
	assert_int_equal(tdbc_get(t, NULL, "d1", 2, buf, sizeof(buf), NULL),
			 -ENOENT);
	/* abort; and a request after the COMMIT naming the ended txn */
	assert_int_equal(tdbc_txn_begin(c, &x), 0);
	txn_puts(t, x, "e", 0);
	{
		struct tdbc_req two[2] = {
			{ .op = TDBC_OP_ABORT, .txn = x, .user = 1 },
			{ .op = TDBC_OP_PUT, .table = t, .txn = x,
			  .key = "f", .klen = 1, .val = "f", .vlen = 1 },
		};

		assert_int_equal(tdbc_submit(c, two, 2), 1);
	}
	cqe = reap_one(c);
	assert_int_equal(cqe.user, 1);
	assert_int_equal(cqe.res, 0);
	assert_int_equal(tdbc_get(t, NULL, "e1", 2, buf, sizeof(buf), NULL),
			 -ENOENT);
	/* COMMIT without a transaction */
	rq.txn = NULL;
	assert_int_equal(tdbc_submit(c, &rq, 1), -EINVAL);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* --- asynchronous scan = blocking scan ----------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every "key=value" of a scan, sorted: blocking (user 0) or not. */
static char **scan_all(struct tdbc_table *t, struct tdbc *c, bool async,
		       const char *prefix, uint64_t limit, unsigned int *n)
{
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl, plen = prefix ? strlen(prefix) : 0;
	char **out = NULL;
	unsigned int cap = 0, batches = 0;
	int r;

	*n = 0;
	if (async)
		assert_int_equal(tdbc_scan_submit(t, prefix, plen, limit, 0,
						  99, &s), 0);
	else
		assert_int_equal(tdbc_scan_open(t, prefix, plen, limit, &s),
				 0);
	for (;;) {
		r = tdbc_scan_next(s, &k, &kl, &v, &vl);
		if (r == -EAGAIN) {
			struct tdbc_cqe cqe = reap_one(c);

			assert_true(async);
			assert_int_equal(cqe.user, 99);
			assert_true(cqe.res >= 0);
			batches++;
			continue;
		}
		if (r == 0)
			break;
		assert_int_equal(r, 1);
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			out = realloc(out, cap * sizeof(*out));
			assert_non_null(out);
		}
		out[*n] = malloc(kl + vl + 2);
		assert_non_null(out[*n]);
		memcpy(out[*n], k, kl);
		out[*n][kl] = '=';
		memcpy(out[*n] + kl + 1, v, vl);
		out[*n][kl + vl + 1] = 0;
		(*n)++;
	}
	if (async)
		assert_true(batches >= 1);
	tdbc_scan_close(s);
	if (*n)
		qsort(out, *n, sizeof(*out), cmp_str);
	return out;
}

static void same_scans(struct tdbc_table *t, struct tdbc *c,
		       const char *prefix, uint64_t limit, unsigned int want)
{
	unsigned int na, nb, i;
	char **a = scan_all(t, c, false, prefix, limit, &na);
	char **b = scan_all(t, c, true, prefix, limit, &nb);

	assert_int_equal(na, want);
	assert_int_equal(nb, na);
	for (i = 0; i < na; i++) {
		if (!limit)     /* a limit may pick other records */
			assert_string_equal(a[i], b[i]);
		free(a[i]);
		free(b[i]);
	}
	free(a);
	free(b);
}

static void test_async_scan(void **state)
{
	const struct mode *m = *state;
	struct tdbc *c = conn(m);
	struct tdbc_table *t;
	struct tdbc_req rq[100];
	struct tdbc_scan *s, *s2;
	char name[64], keys[100][16], vals[100][16];
	unsigned int i, j, total = 3000;
	int r;

	t = fresh_table(c, "evl-scan", m, name);
	for (i = 0; i < total; i += 100) {
		for (j = 0; j < 100; j++) {
			int kl = snprintf(keys[j], 16, "%c%u",
					  (i + j) % 3 ? 'k' : 'q', i + j);
			int vl = snprintf(vals[j], 16, "v%u", (i + j) * 7);

			rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT,
				.table = t, .key = keys[j],
				.klen = (size_t)kl, .val = vals[j],
				.vlen = (size_t)vl };
		}
		assert_int_equal(tdbc_submit(c, rq, 100), 100);
		assert_int_equal(tdbc_reap(c, NULL, 0, 0, 0), 0);
		while (tdbc_inflight(c)) {
			struct tdbc_cqe cq[100];

			r = tdbc_reap(c, cq, 100, 1, 10000);
			assert_true(r > 0);
			for (j = 0; j < (unsigned int)r; j++)
				assert_int_equal(cq[j].res, 0);
		}
	}
	same_scans(t, c, NULL, 0, total);
	same_scans(t, c, "q", 0, total / 3);
	same_scans(t, c, NULL, 700, 700);
	same_scans(t, c, "zz", 0, 0);
	/* refused: snapshot; no such table fails in the completion */
	assert_int_equal(tdbc_scan_submit(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT,
					  1, &s), -EOPNOTSUPP);
	assert_int_equal(tdbc_scan_submit(t, NULL, 0, 0, 0, 5, &s), 0);
	assert_int_equal(tdbc_scan_submit(t, NULL, 0, 0, 0, 6, &s2), 0);
	tdbc_scan_close(s2);    /* closed in flight: no completion */
	{
		struct tdbc_cqe cqe = reap_one(c);

		assert_int_equal(cqe.user, 5);
		assert_true(cqe.res > 0);
	}
	tdbc_scan_close(s);
	for (i = 0; i < 200 && tdbc_inflight(c); i++) {
		assert_int_equal(reap_all(c, NULL), 0);
		usleep(10000);
	}
	assert_int_equal(tdbc_inflight(c), 0);
	assert_int_equal(tdbc_table_drop(c, name), 0);
	assert_int_equal(tdbc_scan_submit(t, NULL, 0, 0, 0, 8, &s), 0);
	{
		struct tdbc_cqe cqe = reap_one(c);

		assert_int_equal(cqe.user, 8);
		assert_int_equal(cqe.res, -ENOENT);
		assert_int_equal(tdbc_scan_next(s, NULL, NULL, NULL, NULL),
				 -ENOENT);
	}
	tdbc_scan_close(s);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* --- the daemon dies: readable, and the calls say so ---------------------- */

static void test_daemon_death(void **state)
{
	const struct mode *m = *state;
	struct daemon d;
	struct tdbc *c;
	struct tdbc_table *t;
	struct tdbc_cqe cqe;
	int fd, r;

	assert_int_equal(daemon_start(&d, "evl"), 0);
	c = conn_at(d.sock, m->flags);
	assert_int_equal(tdbc_table_create(c, "doomed", NULL), 0);
	assert_int_equal(tdbc_table_open(c, "doomed", &t), 0);
	fd = tdbc_fd(c);
	assert_true(fd >= 0);
	assert_false(readable(fd, 0));
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	d.pid = -1;
	assert_true(readable(fd, 5000));
	r = tdbc_reap(c, &cqe, 1, 0, 0);
	assert_true(r == -ECONNRESET || r == -EPIPE);
	tdbc_table_close(t);
	tdbc_close(c);
	daemon_stop(&d, SIGKILL);
}

/* --- the example ------------------------------------------------------- */

static void test_example(void **state)
{
	const char *ex = getenv("TDBC_EVLOOP_EXAMPLE");
	char cmd[1024];
	int st;

	(void)state;
	if (!ex || !*ex || access(ex, X_OK)) {
		skip();
		return;
	}
	snprintf(cmd, sizeof(cmd), "TDB_BACKEND=daemon %s %s", ex,
		 g_daemon.sock);
	st = system(cmd);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* sd-event, if built with it (2: it was not) */
	snprintf(cmd, sizeof(cmd), "TDB_BACKEND=daemon %s %s --sd-event", ex,
		 g_daemon.sock);
	st = system(cmd);
	assert_true(WIFEXITED(st));
	assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate(test_fd_completion,
					  (void *)&ring_mode),
		cmocka_unit_test_prestate(test_fd_completion,
					  (void *)&sock_mode),
		cmocka_unit_test_prestate(test_fd_watch, (void *)&ring_mode),
		cmocka_unit_test_prestate(test_no_lost_wakeup,
					  (void *)&ring_mode),
		cmocka_unit_test_prestate(test_async_commit,
					  (void *)&ring_mode),
		cmocka_unit_test_prestate(test_async_commit,
					  (void *)&sock_mode),
		cmocka_unit_test_prestate(test_async_scan, (void *)&ring_mode),
		cmocka_unit_test_prestate(test_async_scan, (void *)&sock_mode),
		cmocka_unit_test_prestate(test_daemon_death,
					  (void *)&ring_mode),
		cmocka_unit_test_prestate(test_daemon_death,
					  (void *)&sock_mode),
		cmocka_unit_test(test_example),
	};

	if (!tdbd_path()) {
		printf("test_client_evloop: $TDBD is not set to an "
		       "executable tdbd: skipped\n");
		return 77;
	}
	return cmocka_run_group_tests_name("client-evloop", tests,
					   group_setup, group_teardown);
}
