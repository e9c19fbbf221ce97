// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_redis.c - Redis as tdb-bench-ycsb's peers ycsb_redis (one command
 * at a time: a round trip per operation) and ycsb_redis_pipelined
 * (writes pipelined up to c->batch; flush() reads the replies still
 * outstanding).  redis-server (from $PATH) is started by start() on a
 * Unix socket in c->dir, no persistence (--save "" --appendonly no), no
 * TCP, and spoken to in RESP by the small client below (copied from
 * clients/bench/peer_redis.c, whose binary is another program; no
 * hiredis).  The server of each peer is this file's only state (srv[]).
 *
 * Data model (describe() says it):
 *   a record     one string value, field i at offset i * fieldlength
 *   read         GET
 *   update       SETRANGE key offset field (atomic in Redis); a whole
 *                value (field -1) is SET
 *   insert       SET key value and ZADD ycsb:index 0 key, written
 *                together: every key is a member of one sorted set at
 *                score 0, as YCSB's Redis binding keeps its index
 *   scan         ZRANGEBYLEX ycsb:index [key + LIMIT 0 count, then one
 *                MGET of the keys it gave: two round trips (YCSB's
 *                binding: its index, then an HGETALL a record)
 *   rmw          GET, then SETRANGE: each atomic, the pair not (as
 *                YCSB's binding's read then update)
 * Pipelined: a write is queued and counted; at c->batch writes queued
 * they are sent and their replies read.  A read, scan or rmw sends the
 * queued writes ahead of its own request in one write() and reads their
 * replies before its own, so the order of one connection is kept.  While
 * loading (c->loading) both peers queue up to LOAD_BATCH inserts, as
 * tdb-bench loads Redis.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ycsb.h"
#include "../common/proc.h"

#define INDEX      "ycsb:index"
#define RBUF_MIN   (64u * 1024)
#define LOAD_BATCH 1000u        /* inserts in flight while loading */

enum { PLAIN, PIPELINED };

static struct server {
	pid_t pid;
	char bin[4096];
	char dir[4200];         /* its working directory */
	char sock[108];
	char log[4210];
	char version[32];
} srv[2];

/* A connection.  w[0, wlen): requests not yet sent; r[rpos, rlen):
 * replies read, not yet parsed; `owed` replies still to read for the
 * `queued` writes. */
struct conn {
	int fd;
	char *w, *r;
	size_t wlen, wcap, rpos, rlen, rcap;
	unsigned int queued;    /* writes queued (operations) */
	unsigned int owed;      /* replies owed for them */
	unsigned int limit;     /* queue at most this many writes */
	size_t vlen, flen;
	char *val;              /* a value read */
	volatile unsigned char sink;    /* what a scan read */
};

static int failf(char *msg, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int failf(char *msg, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, YCSB_MSG, fmt, ap);
	va_end(ap);
	return err;
}

/* The socket of peer `which` under dir. */
static int sock_path(const char *dir, int which, char *buf, size_t len,
		     char *msg)
{
	if ((size_t)snprintf(buf, len, "%s/redis%s.sock", dir,
			     which == PIPELINED ? "-p" : "") < len)
		return 0;
	return failf(msg, -ENAMETOOLONG, "Redis: socket path under %s is "
		     "too long for a Unix socket", dir);
}

/* --- a RESP connection ------------------------------------------------- */
/* Room for n more request bytes. */
static int room(struct conn *c, size_t n, char *msg)
{
	size_t cap = c->wcap ? c->wcap : RBUF_MIN;
	char *w;

	if (c->wlen + n <= c->wcap)
		return 0;
	while (cap < c->wlen + n)
		cap *= 2;
	w = realloc(c->w, cap);
	if (!w)
		return failf(msg, -ENOMEM, "Redis: out of memory for %zu "
			     "bytes of requests", cap);
	c->w = w;
	c->wcap = cap;
	return 0;
}

static void add(struct conn *c, const void *p, size_t n)
{
	memcpy(c->w + c->wlen, p, n);
	c->wlen += n;
}

/* A request of argc arguments ("*argc" and each "$len arg"). */
static int req(struct conn *c, int argc, const char *const *argv,
	       const size_t *lens, char *msg)
{
	size_t need = 16;
	char hd[32];

	for (int i = 0; i < argc; i++)
		need += lens[i] + 32;
	if (room(c, need, msg))
		return -ENOMEM;
	add(c, hd, (size_t)snprintf(hd, sizeof(hd), "*%d\r\n", argc));
	for (int i = 0; i < argc; i++) {
		add(c, hd, (size_t)snprintf(hd, sizeof(hd), "$%zu\r\n",
					    lens[i]));
		add(c, argv[i], lens[i]);
		add(c, "\r\n", 2);
	}
	return 0;
}

static int send_all(struct conn *c, char *msg)
{
	size_t off = 0;

	while (off < c->wlen) {
		ssize_t n = write(c->fd, c->w + off, c->wlen - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return failf(msg, n ? -errno : -EIO, "Redis: write: "
				     "%s", n ? strerror(errno) :
				     "nothing written");
		off += (size_t)n;
	}
	c->wlen = 0;
	return 0;
}

/* At least `need` unparsed bytes in the buffer (grown if need be). */
static int fill(struct conn *c, size_t need, char *msg)
{
	if (c->rpos + need > c->rcap) {
		memmove(c->r, c->r + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
		if (need > c->rcap) {
			char *r = realloc(c->r, need + RBUF_MIN);

			if (!r)
				return failf(msg, -ENOMEM, "Redis: out of "
					     "memory for a reply of %zu "
					     "bytes", need);
			c->r = r;
			c->rcap = need + RBUF_MIN;
		}
	}
	while (c->rlen - c->rpos < need) {
		ssize_t n = read(c->fd, c->r + c->rlen, c->rcap - c->rlen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return failf(msg, n ? -errno : -EIO, "Redis: read: %s",
				     n ? strerror(errno) : "the server "
				     "closed the connection");
		c->rlen += (size_t)n;
	}
	return 0;
}

/* The next line (without CRLF): *l, *len; consumed. */
static int line(struct conn *c, const char **l, size_t *len, char *msg)
{
	size_t have = 0;

	for (;;) {
		const char *s = c->r + c->rpos;
		const char *e = memchr(s + have, '\n',
				       c->rlen - c->rpos - have);

		if (e) {
			if (e == s || e[-1] != '\r')
				return failf(msg, -EPROTO, "Redis: malformed "
					     "reply line");
			*l = s;
			*len = (size_t)(e - 1 - s);
			c->rpos += (size_t)(e + 1 - s);
			return 0;
		}
		have = c->rlen - c->rpos;
		if (fill(c, have + 1, msg))
			return -EIO;
	}
}

/*
 * One reply.  A bulk string is pointed to by *p (valid until the next
 * read) with its length in *n (-1 for nil); an integer is *n; an array
 * header is *n with *p NULL; "+..." is *n 0; an error reply fails with
 * its text.
 */
static int reply(struct conn *c, const char **p, long *n, char *msg)
{
	const char *l = NULL;
	size_t len = 0;
	int err = line(c, &l, &len, msg);

	*p = NULL;
	if (err)
		return err;
	switch (l[0]) {
	case '+':
		*n = 0;
		return 0;
	case ':':
	case '*':
		*n = strtol(l + 1, NULL, 10);
		return 0;
	case '-':
		return failf(msg, -EIO, "Redis: %.*s", (int)(len - 1), l + 1);
	case '$':
		*n = strtol(l + 1, NULL, 10);
		if (*n < 0)
			return 0;
		err = fill(c, (size_t)*n + 2, msg);
		if (err)
			return err;
		*p = c->r + c->rpos;
		c->rpos += (size_t)*n + 2;
		return 0;
	default:
		return failf(msg, -EPROTO, "Redis: unexpected reply '%.*s'",
			     (int)len, l);
	}
}

/* Sends what is queued and reads the replies owed for queued writes. */
static int drain(struct conn *c, char *msg)
{
	const char *p;
	long n;
	int err = send_all(c, msg);

	for (; !err && c->owed; c->owed--)
		err = reply(c, &p, &n, msg);
	c->queued = 0;
	return err;
}

/* A write of `replies` replies was queued: sent once `limit` are. */
static int queued(struct conn *c, unsigned int replies, char *msg)
{
	c->owed += replies;
	return ++c->queued >= c->limit ? drain(c, msg) : 0;
}

static int conn_open(struct conn *c, const char *path, char *msg)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return failf(msg, -errno, "Redis: socket: %s",
			     strerror(errno));
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)))
		return failf(msg, -errno, "Redis: connect %s: %s", path,
			     strerror(errno));
	c->rcap = RBUF_MIN;
	c->r = malloc(c->rcap);
	if (!c->r)
		return failf(msg, -ENOMEM, "Redis: out of memory for a "
			     "connection");
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->w);
	free(c->r);
	free(c->val);
	c->fd = -1;
	c->w = c->r = c->val = NULL;
}

/* One command, its reply read (the driver's, before and after a run). */
static int command(struct conn *c, int argc, const char *const *argv,
		   const char **p, long *n, char *msg)
{
	size_t lens[4];
	int err;

	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	err = req(c, argc, argv, lens, msg);
	if (!err)
		err = send_all(c, msg);
	return err ? err : reply(c, p, n, msg);
}

/* --- the server ---------------------------------------------------------- */
static int find_redis(char *buf, size_t len)
{
	const char *path = getenv("PATH");

	for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
		size_t n = strcspn(d, ":");

		if ((size_t)snprintf(buf, len, "%.*s/redis-server", (int)n,
				     d) < len && !access(buf, X_OK))
			return 0;
		d += n + (d[n] == ':');
	}
	return -ENOENT;
}

static void stop_server(struct server *s)
{
	bench_stop_server(s->pid);
	s->pid = 0;
}

/* Connected and answering PING within 10 s, or why not (its log's
 * last line). */
static int wait_ready(struct server *s, struct conn *c, const char *path,
		      char *msg)
{
	static const char *const ping[] = { "PING" };
	const char *p;
	long n;
	int st;

	for (int i = 0; i < 1000; i++) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = 0;
			return failf(msg, -ECHILD, "Redis: redis-server ended "
				     "(status %#x) before it listened on %s; "
				     "its log: %s", st, path, s->log);
		}
		*c = (struct conn){ .fd = -1 };
		if (!conn_open(c, path, msg))
			return command(c, 1, ping, &p, &n, msg);
		conn_close(c);
		usleep(10000);
	}
	return failf(msg, -ETIMEDOUT, "Redis: redis-server did not open %s "
		     "in 10 s; its log: %s", path, s->log);
}

/* Before start(): what `redis-server --version` says ("v=7.0.15"). */
static void bin_version(struct server *s)
{
	char cmd[4200], out[256];
	const char *v;
	FILE *f;

	if ((!s->bin[0] && find_redis(s->bin, sizeof(s->bin))) ||
	    strchr(s->bin, '\''))
		return;
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", s->bin);
	f = popen(cmd, "r");
	if (!f)
		return;
	if (fgets(out, sizeof(out), f) && (v = strstr(out, " v=")))
		snprintf(s->version, sizeof(s->version), "%.*s",
			 (int)strcspn(v + 3, " \n"), v + 3);
	pclose(f);
}

static void read_version(struct server *s, struct conn *c)
{
	static const char *const info[] = { "INFO", "server" };
	char why[YCSB_MSG];
	const char *p, *v;
	long n;

	if (command(c, 2, info, &p, &n, why) || !p)
		return;
	v = memmem(p, (size_t)n, "redis_version:", 14);
	if (v)
		snprintf(s->version, sizeof(s->version), "%.*s",
			 (int)strcspn(v + 14, "\r\n"), v + 14);
}

static int start(const struct ycsb_conf *c, int which, char *msg)
{
	struct server *s = &srv[which];
	struct conn conn = { .fd = -1 };
	int err;

	if (find_redis(s->bin, sizeof(s->bin))) {
		snprintf(msg, YCSB_MSG, "Redis: no redis-server in $PATH "
			 "(scripts/install-deps.sh bench)");
		return 1;
	}
	err = sock_path(c->dir, which, s->sock, sizeof(s->sock), msg);
	if (err)
		return err;
	snprintf(s->dir, sizeof(s->dir), "%s/redis%s", c->dir,
		 which == PIPELINED ? "-p" : "");
	snprintf(s->log, sizeof(s->log), "%s/redis%s.log", c->dir,
		 which == PIPELINED ? "-p" : "");
	if (mkdir(s->dir, 0700))
		return failf(msg, -errno, "Redis: mkdir %s: %s", s->dir,
			     strerror(errno));
	{
		const char *argv[] = {
			s->bin, "--port", "0", "--unixsocket", s->sock,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--daemonize", "no",
			"--dir", s->dir, NULL,
		};

		s->pid = bench_spawn(argv, s->log, msg, YCSB_MSG);
	}
	if (s->pid < 0) {
		s->pid = 0;
		return -ECHILD;         /* msg says why */
	}
	err = wait_ready(s, &conn, s->sock, msg);
	if (!err)
		read_version(s, &conn);
	conn_close(&conn);
	if (err)
		stop_server(s);
	return err;
}

/* The server ended, its socket, log and (empty) directory removed. */
static void stop(int which)
{
	struct server *s = &srv[which];

	stop_server(s);
	if (s->sock[0])
		unlink(s->sock);
	if (s->dir[0] && rmdir(s->dir))
		fprintf(stderr, "tdb-bench-ycsb: Redis: cannot remove %s: "
			"%s\n", s->dir, strerror(errno));
	if (s->log[0])
		unlink(s->log);
	s->sock[0] = s->dir[0] = s->log[0] = 0;
}

/* --- a handle --------------------------------------------------------------- */
static int open_conn(const struct ycsb_conf *c, int which, void **hp,
		     char *msg)
{
	struct conn *h = calloc(1, sizeof(*h));
	char path[108];
	int err;

	if (!h)
		return failf(msg, -ENOMEM, "Redis: out of memory for a "
			     "connection");
	h->fd = -1;
	h->vlen = ycsb_vlen(c);
	h->flen = c->fieldlength;
	h->limit = c->loading ? LOAD_BATCH :
		which == PIPELINED && c->batch > 1 ? c->batch : 1;
	h->val = malloc(h->vlen ? h->vlen : 1);
	err = h->val ? sock_path(c->dir, which, path, sizeof(path), msg) :
		failf(msg, -ENOMEM, "Redis: out of memory for a value");
	if (!err)
		err = conn_open(h, path, msg);
	if (err) {
		conn_close(h);
		free(h);
		return err;
	}
	*hp = h;
	return 0;
}

static int r_insert(void *hv, const char *key, size_t klen, const void *val,
		    size_t vlen, char *msg)
{
	struct conn *h = hv;
	const char *set[] = { "SET", key, val };
	const char *zadd[] = { "ZADD", INDEX, "0", key };
	size_t set_l[] = { 3, klen, vlen };
	size_t zadd_l[] = { 4, sizeof(INDEX) - 1, 1, klen };
	int err = req(h, 3, set, set_l, msg);

	if (!err)
		err = req(h, 4, zadd, zadd_l, msg);
	return err ? err : queued(h, 2, msg);
}

/* Sends what is queued with a GET of key, reads the GET's value into
 * h->val. */
static int get(struct conn *h, const char *key, size_t klen, char *msg)
{
	const char *argv[] = { "GET", key };
	size_t lens[] = { 3, klen };
	const char *p;
	long n;
	int err = req(h, 2, argv, lens, msg);

	if (!err)
		err = drain(h, msg);
	if (!err)
		err = reply(h, &p, &n, msg);
	if (err)
		return err;
	if (n < 0)
		return failf(msg, -ENOENT, "Redis: no key %.*s", (int)klen,
			     key);
	if ((size_t)n != h->vlen)
		return failf(msg, -EIO, "Redis: key %.*s has %ld bytes, not "
			     "%zu", (int)klen, key, n, h->vlen);
	memcpy(h->val, p, h->vlen);
	return 0;
}

static int r_read(void *hv, const char *key, size_t klen, void *out,
		  size_t vlen, char *msg)
{
	struct conn *h = hv;
	int err = get(h, key, klen, msg);

	if (!err)
		memcpy(out, h->val, vlen < h->vlen ? vlen : h->vlen);
	return err;
}

static int r_update(void *hv, const char *key, size_t klen, int field,
		    const void *bytes, size_t len, char *msg)
{
	struct conn *h = hv;
	char off[24];
	const char *setrange[] = { "SETRANGE", key, off, bytes };
	size_t lens[] = { 8, klen, 0, len };
	int err;

	if (field < 0) {
		size_t set_l[] = { 3, klen, len };

		err = req(h, 3, (const char *const []){ "SET", key, bytes },
			  set_l, msg);
		return err ? err : queued(h, 1, msg);
	}
	if (len > h->flen || (size_t)field * h->flen + len > h->vlen)
		return failf(msg, -EINVAL, "Redis: field %d of %zu bytes is "
			     "past the value's %zu", field, len, h->vlen);
	lens[2] = (size_t)snprintf(off, sizeof(off), "%zu",
				   (size_t)field * h->flen);
	err = req(h, 4, setrange, lens, msg);
	return err ? err : queued(h, 1, msg);
}

/* The keys ZRANGEBYLEX gave, as an MGET queued; *n of them. */
static int index_range(struct conn *h, const char *key, size_t klen,
		       unsigned int count, long *n, char *msg)
{
	char from[YCSB_KEY_MAX + 1], lim[16], hd[32];
	const char *argv[] = { "ZRANGEBYLEX", INDEX, from, "+", "LIMIT", "0",
			       lim };
	size_t lens[] = { 11, sizeof(INDEX) - 1, klen + 1, 1, 5, 1, 0 };
	const char *p;
	int err;

	if (klen > YCSB_KEY_MAX)
		return failf(msg, -EINVAL, "Redis: key of %zu bytes", klen);
	from[0] = '[';
	memcpy(from + 1, key, klen);
	lens[6] = (size_t)snprintf(lim, sizeof(lim), "%u", count);
	err = req(h, 7, argv, lens, msg);
	if (!err)
		err = drain(h, msg);
	if (!err)
		err = reply(h, &p, n, msg);
	if (err || *n <= 0)
		return err;
	err = room(h, 32 + (size_t)*n * (YCSB_KEY_MAX + 32), msg);
	if (err)
		return err;
	add(h, hd, (size_t)snprintf(hd, sizeof(hd), "*%ld\r\n$4\r\nMGET\r\n",
				    *n + 1));
	for (long i = 0; i < *n; i++) {
		long kl;

		err = reply(h, &p, &kl, msg);
		if (err)
			return err;
		if (!p || kl < 0 || kl > (long)YCSB_KEY_MAX)
			return failf(msg, -EPROTO, "Redis: ZRANGEBYLEX gave "
				     "a member of %ld bytes", kl);
		add(h, hd, (size_t)snprintf(hd, sizeof(hd), "$%ld\r\n", kl));
		add(h, p, (size_t)kl);
		add(h, "\r\n", 2);
	}
	return 0;
}

static int r_scan(void *hv, const char *key, size_t klen,
		  unsigned int count, unsigned int *got, char *msg)
{
	struct conn *h = hv;
	const char *p;
	long n, m;
	int err = index_range(h, key, klen, count, &n, msg);

	*got = 0;
	if (err || n <= 0)
		return err;
	err = send_all(h, msg);
	if (!err)
		err = reply(h, &p, &m, msg);
	if (!err && m != n)
		err = failf(msg, -EPROTO, "Redis: MGET of %ld keys gave %ld "
			    "values", n, m);
	for (long i = 0; !err && i < n; i++) {
		err = reply(h, &p, &m, msg);
		if (!err && (size_t)m != h->vlen)
			err = failf(msg, -EIO, "Redis: a scan's record %ld "
				    "has %ld bytes, not %zu", i, m, h->vlen);
		if (!err)
			h->sink ^= (unsigned char)(p[0] ^ p[m - 1]);
	}
	if (!err)
		*got = (unsigned int)n;
	return err;
}

static int r_rmw(void *hv, const char *key, size_t klen, int field,
		 const void *bytes, size_t len, char *msg)
{
	struct conn *h = hv;
	int err = get(h, key, klen, msg);

	return err ? err : r_update(h, key, klen, field, bytes, len, msg);
}

static int r_flush(void *hv, char *msg)
{
	return drain(hv, msg);
}

/* Writes still queued are sent and their replies read (flush() should
 * have been called). */
static void r_close(void *hv)
{
	struct conn *h = hv;
	char msg[YCSB_MSG];

	if (h->fd >= 0 && (h->wlen || h->owed) && drain(h, msg))
		fprintf(stderr, "tdb-bench-ycsb: %s\n", msg);
	conn_close(h);
	free(h);
}

/* --- the two peers ------------------------------------------------------------ */
static void describe(const struct ycsb_conf *c, int which, char *buf,
		     size_t len)
{
	char how[64];

	if (!srv[which].version[0])
		bin_version(&srv[which]);
	if (which == PIPELINED && c->batch > 1)
		snprintf(how, sizeof(how), "writes pipelined by %u", c->batch);
	else
		snprintf(how, sizeof(how), "one command at a time");
	snprintf(buf, len, "Redis %s (%s) on a Unix socket, no persistence "
		 "(--save \"\" --appendonly no), %s: a record one string (GET; "
		 "SETRANGE a field, atomic), every key in sorted set %s at "
		 "score 0 (insert = SET + ZADD together; scan = ZRANGEBYLEX "
		 "then MGET, two round trips), rmw = GET then SETRANGE (not "
		 "atomic), load pipelined by %u", srv[which].version[0] ?
		 srv[which].version : "?", srv[which].bin, how, INDEX,
		 LOAD_BATCH);
}

static int plain_start(const struct ycsb_conf *c, char *msg)
{
	return start(c, PLAIN, msg);
}

static void plain_stop(void)
{
	stop(PLAIN);
}

static pid_t plain_server(void)
{
	return srv[PLAIN].pid;
}

static void plain_describe(const struct ycsb_conf *c, char *buf, size_t len)
{
	describe(c, PLAIN, buf, len);
}

static int plain_open(const struct ycsb_conf *c, unsigned int proc,
		      void **h, char *msg)
{
	(void)proc;
	return open_conn(c, PLAIN, h, msg);
}

static int pipe_start(const struct ycsb_conf *c, char *msg)
{
	return start(c, PIPELINED, msg);
}

static void pipe_stop(void)
{
	stop(PIPELINED);
}

static pid_t pipe_server(void)
{
	return srv[PIPELINED].pid;
}

static void pipe_describe(const struct ycsb_conf *c, char *buf, size_t len)
{
	describe(c, PIPELINED, buf, len);
}

static int pipe_open(const struct ycsb_conf *c, unsigned int proc, void **h,
		     char *msg)
{
	(void)proc;
	return open_conn(c, PIPELINED, h, msg);
}

const struct ycsb_peer ycsb_redis = {
	.name = "Redis", .start = plain_start, .stop = plain_stop,
	.server = plain_server, .describe = plain_describe,
	.open = plain_open, .insert = r_insert, .read = r_read,
	.update = r_update, .scan = r_scan, .rmw = r_rmw, .flush = r_flush,
	.close = r_close,
};

const struct ycsb_peer ycsb_redis_pipelined = {
	.name = "Redis pipelined", .start = pipe_start, .stop = pipe_stop,
	.server = pipe_server, .describe = pipe_describe,
	.open = pipe_open, .insert = r_insert, .read = r_read,
	.update = r_update, .scan = r_scan, .rmw = r_rmw, .flush = r_flush,
	.close = r_close,
};
