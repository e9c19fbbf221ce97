// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_unit.c - libtdbclient without tdbd: where the socket path
 * comes from, connecting to nothing, tdbc_strerror, arguments refused
 * locally before any byte is sent, and a connection whose peer hangs up.
 *
 * The "peer" here is a bare listening socket that accepts and never
 * answers (no protocol at all): it lets the tests see that nothing was
 * written, and hang up under the client.  A few tests make it break the
 * protocol on purpose (garbage, an answer to nothing, an answer of the
 * wrong kind, an fd nobody asked for): the connection must die with
 * -EPROTO, or (the fd) the library must close what it did not ask for.
 * One plays a scripted owner: the conditions, INCR and versions
 * (issue 24) as sent and as read back.
 * Table handles are made by hand through the library's internal header
 * (tdbclient_static_dep), since tdbc_table_open needs an owner to answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

/* --- a peer that never answers ------------------------------------------ */

struct peer {
	char dir[64];
	char path[128];
	int lfd, afd;
};

static void peer_listen(struct peer *p)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	strcpy(p->dir, "/tmp/tdbc-unit-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->path, sizeof(p->path), "%s/sock", p->dir);
	strcpy(sa.sun_path, p->path);
	p->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->lfd, 4), 0);
	p->afd = -1;
}

static void peer_accept(struct peer *p)
{
	p->afd = accept(p->lfd, NULL, NULL);
	assert_true(p->afd >= 0);
}

/* Bytes the client has written to us so far (without waiting). */
static ssize_t peer_bytes(struct peer *p)
{
	char buf[65536];
	ssize_t n = recv(p->afd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return n;
}

static void peer_close(struct peer *p)
{
	if (p->afd >= 0)
		close(p->afd);
	close(p->lfd);
	unlink(p->path);
	rmdir(p->dir);
}

/* A connection over the socket only (no ATTACH is sent) to the peer. */
static struct tdbc *peer_connect(struct peer *p)
{
	char msg[256];
	struct tdbc *c = NULL;

	peer_listen(p);
	assert_int_equal(tdbc_connect(&c, p->path, TDBC_NO_RINGS, msg,
				      sizeof(msg)), 0);
	assert_non_null(c);
	assert_int_equal(tdbc_uses_rings(c), 0);
	peer_accept(p);
	return c;
}

/* A table handle without asking an owner (white box). */
static void fake_table(struct tdbc *c, struct tdbc_table *t,
		       const char *name)
{
	memset(t, 0, sizeof(*t));
	t->h.c = c;
	strcpy(t->name, name);
}

/* --- the socket path ---------------------------------------------------- */

static void test_socket_path(void **state)
{
	(void)state;
	unsetenv(TDBC_SOCKET_ENV);
	assert_string_equal(tdbc_socket_path(NULL), TDBC_SOCKET_DEFAULT);
	assert_string_equal(tdbc_socket_path("/x/y.sock"), "/x/y.sock");
	setenv(TDBC_SOCKET_ENV, "/env/tdbd.sock", 1);
	assert_string_equal(tdbc_socket_path(NULL), "/env/tdbd.sock");
	/* the argument beats the environment */
	assert_string_equal(tdbc_socket_path("/arg.sock"), "/arg.sock");
	/* an empty variable counts as unset */
	setenv(TDBC_SOCKET_ENV, "", 1);
	assert_string_equal(tdbc_socket_path(NULL), TDBC_SOCKET_DEFAULT);
	unsetenv(TDBC_SOCKET_ENV);
}

/* --- connecting to nothing ---------------------------------------------- */

static void test_connect_missing(void **state)
{
	char dir[] = "/tmp/tdbc-unit-XXXXXX", path[128], msg[256];
	struct tdbc *c = (struct tdbc *)&c;   /* must come back NULL */
	int err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/no-such.sock", dir);
	err = tdbc_connect(&c, path, 0, msg, sizeof(msg));
	assert_int_equal(err, -ENOENT);
	assert_null(c);
	assert_non_null(strstr(msg, path));

	/* the same through $TDB_SOCKET, socket-only */
	setenv(TDBC_SOCKET_ENV, path, 1);
	msg[0] = 'x';
	err = tdbc_connect(&c, NULL, TDBC_NO_RINGS, msg, sizeof(msg));
	unsetenv(TDBC_SOCKET_ENV);
	assert_int_equal(err, -ENOENT);
	assert_non_null(strstr(msg, path));
	/* a NULL errmsg is fine */
	assert_int_equal(tdbc_connect(&c, path, 0, NULL, 0), -ENOENT);
	rmdir(dir);
}

static void test_connect_refused(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/tdbc-unit-XXXXXX", msg[256];
	struct tdbc *c = NULL;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/dead.sock", dir);
	/* a socket file nobody listens on any more */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(tdbc_connect(&c, sa.sun_path, 0, msg, sizeof(msg)),
			 -ECONNREFUSED);
	assert_null(c);
	assert_non_null(strstr(msg, sa.sun_path));
	/* worded as a connect failure, saying what to do */
	assert_non_null(strstr(msg, "cannot connect to tdbd at "));
	assert_non_null(strstr(msg, ": nothing listens there (is tdbd "
			       "running?)"));
	unlink(sa.sun_path);
	rmdir(dir);
}

static void test_connect_bad_args(void **state)
{
	char longpath[200], msg[256];
	struct tdbc *c = NULL;

	(void)state;
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(tdbc_connect(&c, longpath, 0, msg, sizeof(msg)),
			 -ENAMETOOLONG);
	assert_null(c);
	assert_non_null(strstr(msg, "longer than"));
	assert_int_equal(tdbc_connect(&c, "/tmp/x.sock", 0x80, msg,
				      sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "flags"));
	assert_int_equal(tdbc_connect(NULL, "/tmp/x.sock", 0, NULL, 0),
			 -EINVAL);
	/* no socket: a connect failure, not "no such table or key" */
	assert_int_equal(tdbc_connect(&c, "/nonexistent/dir/s.sock", 0,
				      msg, sizeof(msg)), -ENOENT);
	assert_string_equal(msg, "cannot connect to tdbd at "
			    "/nonexistent/dir/s.sock: no such socket (is "
			    "tdbd running?)");
	/* a short message buffer is cut, still NUL-terminated */
	assert_int_equal(tdbc_connect(&c, "/nonexistent/dir/s.sock", 0,
				      msg, 8), -ENOENT);
	assert_int_equal(strlen(msg), 7);
}

/* --- strerror ----------------------------------------------------------- */

static void test_strerror(void **state)
{
	static const int errs[] = { ENOENT, EEXIST, EACCES, ENOSPC, E2BIG,
				    EINVAL, ENOBUFS, ECONNREFUSED, EPIPE,
				    ECONNRESET, EPROTO, ETIMEDOUT, EOVERFLOW };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *a = tdbc_strerror(-errs[i]);

		assert_non_null(a);
		assert_true(strlen(a) > 3);
		/* sign does not matter */
		assert_string_equal(a, tdbc_strerror(errs[i]));
	}
	assert_non_null(strstr(tdbc_strerror(-ENOENT), "no such"));
	assert_non_null(strstr(tdbc_strerror(-ENOBUFS), "buffer"));
	assert_non_null(strstr(tdbc_strerror(-EPROTO), "protocol"));
	assert_string_equal(tdbc_strerror(0), "success");
	/* lower case, as tdb's other texts (not libc's "Operation...") */
	assert_string_equal(tdbc_strerror(-EPERM), "operation not permitted");
	assert_string_equal(tdbc_strerror(-EBADF), "bad file descriptor");
	/* errnos the table does not name fall back to the C library's */
	assert_string_equal(tdbc_strerror(-EXDEV), strerror(EXDEV));
	assert_string_equal(tdbc_strerror(99999), "unknown error");
	assert_string_equal(tdbc_strerror(-99999), "unknown error");
	/* issue 24's errnos say what happened, not libc's words */
	assert_non_null(strstr(tdbc_strerror(-ECANCELED),
			       "condition failed"));
	assert_non_null(strstr(tdbc_strerror(-ESTALE),
			       "a key this transaction read was changed by "
			       "another client; run it again"));
	assert_non_null(strstr(tdbc_strerror(-EDOM), "decimal integer"));
	assert_non_null(strstr(tdbc_strerror(-ERANGE), "64-bit"));
	assert_non_null(strstr(tdbc_strerror(-ERANGE), "TTL"));
}

/* Conditions that cannot hold, refused before anything is sent. */
static int never_called(struct tdbc_txn *txn, void *arg)
{
	(void)txn;
	(void)arg;
	fail();
	return 0;
}

static void test_bad_conditions(void **state)
{
	struct tdbc_table t;
	struct tdbc_req req = { .op = TDBC_OP_PUT, .key = "k", .klen = 1,
				.val = "v", .vlen = 1 };
	struct peer p;
	struct tdbc *c = peer_connect(&p);

	(void)state;
	fake_table(c, &t, "t1");
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1,
				     TDBC_IF_VERSION, 0), -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "version 0"));
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1,
				     TDBC_IF_ABSENT | TDBC_IF_PRESENT, 0),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "exclude"));
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1,
				     TDBC_IF_VERSION | TDBC_IF_ABSENT, 7),
			 -EINVAL);
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1, 1u << 5, 7),
			 -EINVAL);
	/* tdbc_put has no version to compare with */
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, "v", 1, TDBC_IF_VERSION),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "tdbc_put_if"));
	assert_int_equal(tdbc_del_if(&t, NULL, "k", 1, TDBC_IF_VERSION, 0),
			 -EINVAL);
	assert_int_equal(tdbc_del_if(&t, NULL, "k", 1, TDBC_IF_ABSENT, 0),
			 -EINVAL);
	assert_int_equal(tdbc_del_if(&t, NULL, "k", 0, TDBC_IF_VERSION, 3),
			 -EINVAL);
	assert_int_equal(tdbc_incr(&t, NULL, "k", 0, 1, NULL), -EINVAL);
	assert_int_equal(tdbc_incr(&t, NULL, "k", TDB_KEY_MAX + 1, 1, NULL),
			 -E2BIG);
	assert_int_equal(tdbc_incr(NULL, NULL, "k", 1, 1, NULL), -EINVAL);
	/* the same through tdbc_submit */
	req.table = &t;
	req.flags = TDBC_IF_VERSION;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.op = TDBC_OP_DEL;
	req.flags = TDBC_IF_PRESENT;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.op = TDBC_OP_INCR;
	req.flags = 0;
	req.klen = 0;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.op = TDBC_OP_INCR + 1;
	req.klen = 1;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	assert_int_equal(tdbc_inflight(c), 0);
	/* expiry (issue 27): TTLs and deadlines that cannot be, and the
	 * async flags where they do not belong; nothing sent */
	assert_int_equal(tdbc_put_ttl(&t, NULL, "k", 1, "v", 1, 0, 0, 0),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "TTL 0"));
	assert_int_equal(tdbc_put_ttl(&t, NULL, "k", 1, "v", 1, 0, 0,
				      TDB_TTL_MAX + 1), -ERANGE);
	assert_non_null(strstr(tdbc_errmsg(c), "10 years"));
	assert_int_equal(tdbc_put_ttl(&t, NULL, "k", 1, "v", 1,
				      TDBC_IF_VERSION, 0, 5), -EINVAL);
	assert_int_equal(tdbc_put_at(&t, NULL, "k", 1, "v", 1, 0, 0, 0),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "deadline 0"));
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1, TDBC_TTL, 0),
			 -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "TDBC_TTL"));
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, "v", 1, TDBC_DEADLINE),
			 -EINVAL);
	assert_int_equal(tdbc_put_ttl(&t, NULL, "k", 1, "v", 1, TDBC_TTL, 0,
				      5), -EINVAL);
	assert_int_equal(tdbc_expire(&t, "k", 1, 0, NULL), -EINVAL);
	assert_int_equal(tdbc_expire(&t, "k", 1, TDB_TTL_MAX + 1, NULL),
			 -ERANGE);
	assert_int_equal(tdbc_expire_at(&t, "k", 1, 0), -EINVAL);
	assert_int_equal(tdbc_expire(&t, "k", 0, 5, NULL), -EINVAL);
	assert_int_equal(tdbc_ttl(&t, "k", 0, NULL, NULL), -EINVAL);
	assert_int_equal(tdbc_persist(NULL, "k", 1), -EINVAL);
	req.op = TDBC_OP_PUT;
	req.flags = TDBC_TTL;
	req.expiry = 0;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.flags = TDBC_TTL | TDBC_DEADLINE;
	req.expiry = 5;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.flags = TDBC_DEADLINE;
	req.expiry = 0;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.op = TDBC_OP_DEL;
	req.flags = TDBC_TTL;
	req.expiry = 5;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	assert_int_equal(tdbc_inflight(c), 0);
	/* tdbc_txn_run: no function, unknown flags */
	assert_int_equal(tdbc_txn_run(c, NULL, NULL, 0), -EINVAL);
	assert_int_equal(tdbc_txn_run(c, never_called, NULL, 1), -EINVAL);
	assert_int_equal(peer_bytes(&p), 0);
	tdbc_close(c);
	peer_close(&p);
}

/* --- arguments refused before anything is sent -------------------------- */

static void test_bad_keys(void **state)
{
	static char big[TDB_VALUE_MAX + 2];
	struct tdbc_table t;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	char key[TDB_KEY_MAX + 1] = { 0 }, buf[8];
	void *val = NULL;

	(void)state;
	fake_table(c, &t, "t1");
	assert_int_equal(tdbc_put(&t, NULL, key, 0, "v", 1, 0), -EINVAL);
	assert_non_null(strstr(tdbc_errmsg(c), "empty"));
	assert_int_equal(tdbc_put(&t, NULL, key, TDB_KEY_MAX + 1, "v", 1, 0),
			 -E2BIG);
	assert_non_null(strstr(tdbc_errmsg(c), "4096"));
	assert_int_equal(tdbc_put(&t, NULL, NULL, 3, "v", 1, 0), -EINVAL);
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, big, TDB_VALUE_MAX + 1, 0),
			 -E2BIG);
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, NULL, 5, 0), -EINVAL);
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, "v", 1, 0x10), -EINVAL);
	assert_int_equal(tdbc_del(&t, NULL, key, 0), -EINVAL);
	assert_int_equal(tdbc_del(&t, NULL, key, TDB_KEY_MAX + 1), -E2BIG);
	assert_int_equal(tdbc_get(&t, NULL, key, 0, buf, sizeof(buf), NULL),
			 -EINVAL);
	assert_int_equal(tdbc_get(&t, NULL, key, (size_t)1 << 32, buf,
				  sizeof(buf), NULL), -E2BIG);
	assert_int_equal(tdbc_get_alloc(&t, NULL, key, TDB_KEY_MAX + 1, &val),
			 -E2BIG);
	assert_null(val);
	assert_int_equal(tdbc_get_alloc(&t, NULL, "k", 1, NULL), -EINVAL);
	/* nothing at all reached the socket */
	assert_int_equal(peer_bytes(&p), 0);
	tdbc_close(c);
	peer_close(&p);
}

static void test_bad_args(void **state)
{
	struct tdbc_table t;
	struct tdbc_scan *s = (struct tdbc_scan *)&s;
	struct tdbc_watch *w = (struct tdbc_watch *)&w;
	struct tdbc_req req = { .op = TDBC_OP_PUT, .key = "k", .klen = 1 };
	struct tdbc_cqe cqe;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	char name[80], prefix[TDB_KEY_MAX + 1] = { 0 };

	(void)state;
	fake_table(c, &t, "t1");
	/* table names: checked by the codec before sending */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(tdbc_table_create(c, name, NULL), -ENAMETOOLONG);
	assert_int_equal(tdbc_table_create(c, "a/b", NULL), -EINVAL);
	/* a new name: the safe set only (tdb_name_check), said why */
	assert_int_equal(tdbc_table_create(c, "-rf", NULL), -EINVAL);
	assert_string_equal(tdbc_errmsg(c),
			    "table name starts with '-' or '.'");
	assert_int_equal(tdbc_table_create(c, "caf\xc3\xa9", NULL), -EINVAL);
	assert_int_equal(tdbc_table_create(c, "a$b", NULL), -EINVAL);
	assert_int_equal(tdbc_table_create(c, "", NULL), -EINVAL);
	assert_int_equal(tdbc_table_create(c, NULL, NULL), -EINVAL);
	assert_int_equal(tdbc_table_drop(c, "a b"), -EINVAL);
	assert_int_equal(tdbc_table_stat(c, "t", NULL), -EINVAL);
	assert_int_equal(tdbc_table_list(c, NULL, NULL), -EINVAL);
	/* prefixes */
	assert_int_equal(tdbc_scan_open(&t, prefix, TDB_KEY_MAX + 1, 0, &s),
			 -E2BIG);
	assert_null(s);
	assert_int_equal(tdbc_watch(&t, NULL, 3, &w), -EINVAL);
	assert_null(w);
	/* async: a bad first request is refused, nothing queued */
	req.table = &t;
	req.klen = 0;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.klen = TDB_KEY_MAX + 1;
	assert_int_equal(tdbc_submit(c, &req, 1), -E2BIG);
	req.klen = 1;
	req.op = 9;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	req.op = TDBC_OP_GET;
	req.table = NULL;
	assert_int_equal(tdbc_submit(c, &req, 1), -EINVAL);
	assert_int_equal(tdbc_inflight(c), 0);
	assert_int_equal(tdbc_reap(c, &cqe, 1, 2, 0), -EINVAL);
	/* nothing in flight: reap returns at once with nothing */
	assert_int_equal(tdbc_reap(c, &cqe, 1, 1, -1), 0);
	assert_int_equal(peer_bytes(&p), 0);
	tdbc_close(c);
	peer_close(&p);
}

/* --- the peer goes away ------------------------------------------------- */

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void test_hangup(void **state)
{
	struct tdbc_stats st;
	struct tdbc_table t;
	struct timespec t0;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	int err;

	(void)state;
	fake_table(c, &t, "t1");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	close(p.afd);       /* the "daemon" dies */
	p.afd = -1;
	err = tdbc_stats(c, &st);
	assert_true(err == -ECONNRESET || err == -EPIPE);
	assert_true(strlen(tdbc_errmsg(c)) > 0);
	/* dead: every later call returns the same error, sending nothing */
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, "v", 1, 0), err);
	assert_int_equal(tdbc_stats(c, &st), err);
	assert_int_equal(tdbc_table_create(c, "x", NULL), err);
	assert_true(ms_since(&t0) < 2000);
	tdbc_close(c);
	peer_close(&p);
}

/* A peer that stays silent: a call waits, and the hang-up ends it. */
static void test_hangup_while_waiting(void **state)
{
	struct timespec t0;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	struct tdbc_stats st;
	pid_t pid;
	int err;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(200000);
		_exit(0);
	}
	/* the child holds a copy of the accepted socket until it exits */
	close(p.afd);
	p.afd = -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = tdbc_stats(c, &st);
	assert_true(err == -ECONNRESET || err == -EPIPE);
	assert_true(ms_since(&t0) >= 150);
	assert_true(ms_since(&t0) < 3000);
	tdbc_close(c);
	peer_close(&p);
}

/* --- a peer that breaks the protocol ------------------------------------ */

static void peer_send(struct peer *p, const void *buf, size_t len, int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = sizeof(cbuf.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	assert_int_equal(sendmsg(p->afd, &mh, 0), (ssize_t)len);
}

/* The request the client sent (its header), read by the peer. */
static void peer_request(struct peer *p, struct nlmsghdr *h)
{
	unsigned char buf[4096];
	ssize_t n = recv(p->afd, buf, sizeof(buf), 0);

	assert_true(n >= (ssize_t)NLMSG_HDRLEN);
	memcpy(h, buf, sizeof(*h));
	assert_int_equal(h->nlmsg_len, n);
}

static void test_garbage(void **state)
{
	struct nlmsghdr bad = { .nlmsg_len = 8 };
	struct tdbc_stats st;
	struct peer p;
	struct tdbc *c = peer_connect(&p);

	(void)state;
	peer_send(&p, &bad, sizeof(bad), -1);
	assert_int_equal(tdbc_stats(c, &st), -EPROTO);
	assert_non_null(strstr(tdbc_errmsg(c), "length"));
	/* dead for good: the same error at once, nothing sent */
	assert_int_equal(peer_bytes(&p) > 0, 1);       /* the STATS */
	assert_int_equal(tdbc_stats(c, &st), -EPROTO);
	assert_int_equal(tdbc_table_drop(c, "t"), -EPROTO);
	assert_int_equal(peer_bytes(&p), 0);
	tdbc_close(c);
	peer_close(&p);
}

static void test_unknown_seq(void **state)
{
	struct nlmsghdr req = { .nlmsg_len = NLMSG_HDRLEN, .nlmsg_seq = 999 };
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	struct tdbc_stats st;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	long n;

	(void)state;
	/* an ack, well formed, of a request never sent */
	n = tdb_proto_error(buf, sizeof(buf), &req, 0, NULL);
	assert_true(n > 0);
	peer_send(&p, buf, (size_t)n, -1);
	assert_int_equal(tdbc_stats(c, &st), -EPROTO);
	assert_non_null(strstr(tdbc_errmsg(c), "seq 999"));
	tdbc_close(c);
	peer_close(&p);
}

/* An answer of the wrong kind (an ack where a reply is due). */
static void test_wrong_answer(void **state)
{
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	struct nlmsghdr req;
	struct tdbc_stats st;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	long n;

	(void)state;
	if (fork() == 0) {      /* answers the STATS with an ack */
		peer_request(&p, &req);
		n = tdb_proto_error(buf, sizeof(buf), &req, 0, NULL);
		peer_send(&p, buf, (size_t)n, -1);
		_exit(0);
	}
	assert_int_equal(tdbc_stats(c, &st), -EPROTO);
	assert_non_null(strstr(tdbc_errmsg(c), "STATS"));
	wait(NULL);
	tdbc_close(c);
	peer_close(&p);
}

/* --- a scripted owner: what the new calls send and how they read answers --
 * A child reads each request, checks it against the script and answers
 * as the script says; it exits with the number of the step that went
 * wrong (0: all as expected).  So the requests' attributes (FLAGS,
 * IF_VERSION, DELTA) and the parsing of VERSION and INT are checked
 * without an owner. */
struct step {
	uint8_t cmd;
	uint32_t flags;         /* FLAGS expected (0: absent) */
	uint64_t if_version;    /* IF_VERSION expected (0: absent) */
	bool has_delta;
	int64_t delta;
	int error;              /* answer with this error (0: below) */
	const char *msg;
	uint64_t version;       /* the reply's VERSION (0: none) */
	int64_t ival;           /* INCR's INT */
	const char *value;      /* GET's VALUE */
};

/* The next request, framed by nlmsg_len (one recv may bring several:
 * tdbc_submit sends a batch back to back). */
static ssize_t next_request(struct peer *p, unsigned char *out, size_t cap)
{
	static unsigned char buf[16384] __attribute__((aligned(8)));
	static size_t have;
	const struct nlmsghdr *h = (const void *)buf;
	size_t len;
	ssize_t n;

	while (have < NLMSG_HDRLEN || have < h->nlmsg_len) {
		if (have >= NLMSG_HDRLEN && h->nlmsg_len > sizeof(buf))
			return -1;
		n = recv(p->afd, buf + have, sizeof(buf) - have, 0);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	len = h->nlmsg_len;
	if (len < NLMSG_HDRLEN || len > cap)
		return -1;
	memcpy(out, buf, len);
	memmove(buf, buf + len, have - len);
	have -= len;
	return (ssize_t)len;
}

static int scripted_step(struct peer *p, const struct step *s)
{
	unsigned char req[8192] __attribute__((aligned(8)));
	unsigned char out[4096] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { .msg = s->msg };
	struct tdb_proto_msg m, a = { 0 };
	ssize_t n = next_request(p, req, sizeof(req));
	long len;

	if (n < (ssize_t)NLMSG_HDRLEN ||
	    tdb_proto_parse(req, (size_t)n, TDB_PROTO_REQUEST, &m, &ext) ||
	    m.cmd != s->cmd)
		return 1;
	if (TDB_PROTO_HAS(&m, TDB_A_FLAGS) != !!s->flags ||
	    (s->flags && m.flags != s->flags))
		return 2;
	if (TDB_PROTO_HAS(&m, TDB_A_IF_VERSION) != !!s->if_version ||
	    (s->if_version && m.if_version != s->if_version))
		return 3;
	if (TDB_PROTO_HAS(&m, TDB_A_DELTA) != s->has_delta ||
	    (s->has_delta && m.delta != s->delta))
		return 4;
	if (s->error || tdb_proto_cmd_is_ack(s->cmd)) {
		ext.msg = s->msg;
		len = tdb_proto_error(out, sizeof(out), m.nlh, s->error,
				      &ext);
	} else {
		a.seq = m.seq;
		a.cmd = s->cmd;
		if (s->version) {
			a.attrs |= TDB_PROTO_BIT(TDB_A_VERSION);
			a.rec_version = s->version;
		}
		if (s->cmd == TDB_CMD_INCR) {
			a.attrs |= TDB_PROTO_BIT(TDB_A_INT);
			a.ival = s->ival;
		} else {
			a.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
			a.value = s->value;
			a.value_len = (uint32_t)strlen(s->value);
		}
		len = tdb_proto_build(out, sizeof(out), TDB_PROTO_ANSWER, &a,
				      &ext);
	}
	if (len <= 0 || send(p->afd, out, (size_t)len, 0) != len)
		return 5;
	return 0;
}

static void test_scripted_versions(void **state)
{
	static const struct step script[] = {
		{ .cmd = TDB_CMD_PUT, .if_version = 77 },
		{ .cmd = TDB_CMD_PUT, .flags = TDB_PUT_IF_PRESENT,
		  .error = -ENOENT, .msg = "no such key (if-present put)" },
		{ .cmd = TDB_CMD_PUT, .flags = TDB_PUT_IF_ABSENT },
		{ .cmd = TDB_CMD_DEL, .if_version = 5, .error = -ECANCELED,
		  .msg = "key k is at version 9" },
		{ .cmd = TDB_CMD_DEL },
		{ .cmd = TDB_CMD_INCR, .version = 100, .ival = 42 },
		{ .cmd = TDB_CMD_INCR, .has_delta = true, .delta = -3,
		  .ival = 39 },
		{ .cmd = TDB_CMD_INCR, .error = -EDOM,
		  .msg = "value is not an integer" },
		{ .cmd = TDB_CMD_GET, .version = 123, .value = "hi" },
		{ .cmd = TDB_CMD_GET, .value = "old" },
		{ .cmd = TDB_CMD_INCR, .has_delta = true, .delta = 7,
		  .version = 200, .ival = 46 },
		{ .cmd = TDB_CMD_PUT, .if_version = 200, .error = -ECANCELED,
		  .msg = "key k is absent" },
	};
	struct tdbc_req reqs[2];
	struct tdbc_cqe cqe[2];
	struct tdbc_table t;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	char buf[16];
	uint64_t v = 1;
	int64_t r = 0;
	pid_t pid;
	int st, i, n, got;

	(void)state;
	fake_table(c, &t, "t1");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);      /* never outlive a failed parent */
		for (i = 0; i < (int)(sizeof(script) / sizeof(script[0]));
		     i++)
			if (scripted_step(&p, &script[i]))
				_exit(10 + i);
		_exit(0);
	}
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1,
				     TDBC_IF_VERSION, 77), 0);
	assert_int_equal(tdbc_put(&t, NULL, "k", 1, "v", 1, TDBC_IF_PRESENT),
			 -ENOENT);
	assert_string_equal(tdbc_errmsg(c), "no such key (if-present put)");
	assert_int_equal(tdbc_put_if(&t, NULL, "k", 1, "v", 1, TDBC_IF_ABSENT,
				     0), 0);
	assert_int_equal(tdbc_del_if(&t, NULL, "k", 1, TDBC_IF_VERSION, 5),
			 -ECANCELED);
	assert_string_equal(tdbc_errmsg(c), "key k is at version 9");
	assert_int_equal(tdbc_del(&t, NULL, "k", 1), 0);
	assert_int_equal(tdbc_incr(&t, NULL, "k", 1, 1, &r), 0);
	assert_int_equal(r, 42);
	assert_int_equal(tdbc_incr(&t, NULL, "k", 1, -3, &r), 0);
	assert_int_equal(r, 39);
	r = 5;
	assert_int_equal(tdbc_incr(&t, NULL, "k", 1, 1, &r), -EDOM);
	assert_int_equal(r, 5);         /* untouched on failure */
	assert_int_equal(tdbc_get_ver(&t, NULL, "k", 1, buf, sizeof(buf),
				      NULL, &v), 2);
	assert_int_equal(v, 123);
	assert_memory_equal(buf, "hi", 2);
	/* an owner that sends no VERSION: 0 */
	assert_int_equal(tdbc_get_ver(&t, NULL, "k", 1, buf, sizeof(buf),
				      NULL, &v), 3);
	assert_int_equal(v, 0);
	/* asynchronous: INCR's number and version, a condition's error */
	reqs[0] = (struct tdbc_req){ .op = TDBC_OP_INCR, .table = &t,
				     .key = "k", .klen = 1, .delta = 7,
				     .user = 1 };
	reqs[1] = (struct tdbc_req){ .op = TDBC_OP_PUT, .table = &t,
				     .key = "k", .klen = 1, .val = "w",
				     .vlen = 1, .flags = TDBC_IF_VERSION,
				     .version = 200, .user = 2 };
	assert_int_equal(tdbc_submit(c, reqs, 2), 2);
	for (got = 0; got < 2; got += n) {
		n = tdbc_reap(c, cqe, 2, 1, 5000);
		assert_true(n > 0);
		for (i = 0; i < n; i++) {
			if (cqe[i].user == 1) {
				assert_int_equal(cqe[i].res, 0);
				assert_int_equal(cqe[i].num, 46);
				assert_int_equal(cqe[i].version, 200);
			} else {
				assert_int_equal(cqe[i].user, 2);
				assert_int_equal(cqe[i].res, -ECANCELED);
				assert_string_equal(tdbc_errmsg(c),
						    "key k is absent");
			}
		}
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	tdbc_close(c);
	peer_close(&p);
}

/* File descriptors nobody asked for are closed, not leaked. */
static int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void test_stray_fds(void **state)
{
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	struct nlmsghdr req;
	struct peer p;
	struct tdbc *c = peer_connect(&p);
	int before, pfd[2];
	long n;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	if (fork() == 0) {      /* acks the CREATE with an fd on it */
		peer_request(&p, &req);
		n = tdb_proto_error(buf, sizeof(buf), &req, 0, NULL);
		peer_send(&p, buf, (size_t)n, pfd[0]);
		_exit(0);
	}
	close(pfd[0]);
	close(pfd[1]);
	before = count_fds();
	assert_int_equal(tdbc_table_create(c, "t", NULL), 0);
	wait(NULL);
	assert_int_equal(count_fds(), before);
	tdbc_close(c);
	peer_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_connect_missing),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_connect_bad_args),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_bad_keys),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_bad_conditions),
		cmocka_unit_test(test_hangup),
		cmocka_unit_test(test_hangup_while_waiting),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_unknown_seq),
		cmocka_unit_test(test_wrong_answer),
		cmocka_unit_test(test_stray_fds),
		cmocka_unit_test(test_scripted_versions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
