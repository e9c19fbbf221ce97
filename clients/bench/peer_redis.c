// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_redis.c - Redis as a tdb-bench peer: redis-server (found in $PATH
 * or given with --redis) started by the benchmark on a Unix socket in its
 * temp dir, no persistence, no TCP; spoken to in RESP over the socket by
 * the small client below (no hiredis).
 *
 *   batch 1   one GET or SET written, its reply read: a round trip per
 *             operation (unpipelined)
 *   batch B   B requests written with one write(), then B replies read
 *             (pipelined)
 *
 * Values are binary (100 bytes by default); a GET's value is copied out
 * of the reply buffer and checked like every peer's.
 *
 * Redis+ttl (--ttl MS): the same redis-server, database 1 (SELECT 1 on
 * every connection) loaded with SET key value PX ms, and the same SETs
 * with PX: as tdb+ttl, plain SETs keep writing keys without a TTL and
 * these keys with one.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench.h"

#define RBUF_MIN  (64u * 1024)
#define LOAD_PIPE 1000u

static struct {
	pid_t pid;
	char bin[4096];
	char sock[108];
	char log[4200];
	char version[32];
} srv;

/* --- a RESP connection ------------------------------------------------- */
struct resp {
	int fd;
	char *w;                 /* requests being built */
	size_t wlen, wcap;
	char *r;                 /* replies read, r[rpos, rlen) unparsed */
	size_t rpos, rlen, rcap;
	uint8_t *vbuf, *out;     /* a value to write; a value read */
};

static int resp_connect(struct resp *c, char *msg)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", srv.sock);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		msgf(msg, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a))) {
		msgf(msg, "connect %s: %s", srv.sock, strerror(errno));
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	c->wcap = (size_t)LOAD_PIPE * (128 + opt.vsize);  /* SET ... PX ms */
	c->rcap = RBUF_MIN + 2 * (size_t)LOAD_PIPE * (32 + opt.vsize);
	c->w = malloc(c->wcap);
	c->r = malloc(c->rcap);
	c->vbuf = malloc(opt.vsize);
	c->out = malloc(opt.vsize);
	if (!c->w || !c->r || !c->vbuf || !c->out) {
		msgf(msg, "out of memory");
		return -1;
	}
	return 0;
}

static void resp_close(struct resp *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->w);
	free(c->r);
	free(c->vbuf);
	free(c->out);
}

static void add(struct resp *c, const void *p, size_t n)
{
	memcpy(c->w + c->wlen, p, n);
	c->wlen += n;
}

/* "*2 GET key" and "*3 SET key value", "*5 SET key value PX ms" with a
 * TTL (the key is always 16 bytes). */
static void req_get(struct resp *c, uint32_t i)
{
	static const char hd[] = "*2\r\n$3\r\nGET\r\n$16\r\n";

	add(c, hd, sizeof(hd) - 1);
	add(c, key_of(i), KEY_LEN);
	add(c, "\r\n", 2);
}

static void req_set(struct resp *c, uint32_t i, uint32_t gen, uint64_t ttl)
{
	static const char hd[] = "*3\r\n$3\r\nSET\r\n$16\r\n";
	static const char hd_px[] = "*5\r\n$3\r\nSET\r\n$16\r\n";
	char len[48];
	int n = snprintf(len, sizeof(len), "\r\n$%u\r\n", opt.vsize);

	if (ttl)
		add(c, hd_px, sizeof(hd_px) - 1);
	else
		add(c, hd, sizeof(hd) - 1);
	add(c, key_of(i), KEY_LEN);
	add(c, len, (size_t)n);
	value_make(c->vbuf, i, gen);
	add(c, c->vbuf, opt.vsize);
	add(c, "\r\n", 2);
	if (ttl) {
		char ms[24];
		int m = snprintf(ms, sizeof(ms), "%llu",
				 (unsigned long long)ttl);

		n = snprintf(len, sizeof(len), "$2\r\nPX\r\n$%d\r\n", m);
		add(c, len, (size_t)n);
		add(c, ms, (size_t)m);
		add(c, "\r\n", 2);
	}
}


static int flush(struct resp *c, char *msg)
{
	size_t off = 0;

	while (off < c->wlen) {
		ssize_t n = write(c->fd, c->w + off, c->wlen - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			msgf(msg, "Redis: write: %s", n ? strerror(errno) :
			     "nothing written");
			return -1;
		}
		off += (size_t)n;
	}
	c->wlen = 0;
	return 0;
}

/* At least `need` unparsed bytes in the buffer. */
static int fill(struct resp *c, size_t need, char *msg)
{
	if (c->rpos + need > c->rcap) {
		memmove(c->r, c->r + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
		if (need > c->rcap) {
			msgf(msg, "Redis: reply of %zu bytes is too big", need);
			return -1;
		}
	}
	while (c->rlen - c->rpos < need) {
		ssize_t n = read(c->fd, c->r + c->rlen, c->rcap - c->rlen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			msgf(msg, "Redis: read: %s", n ? strerror(errno) :
			     "the server closed the connection");
			return -1;
		}
		c->rlen += (size_t)n;
	}
	return 0;
}

/* The next line (without CRLF): *line, *len; consumed. */
static int line(struct resp *c, const char **l, size_t *len, char *msg)
{
	size_t have = 0;

	for (;;) {
		const char *s = c->r + c->rpos;
		const char *e = memchr(s + have, '\n', c->rlen - c->rpos - have);

		if (e) {
			if (e == s || e[-1] != '\r') {
				msgf(msg, "Redis: malformed reply line");
				return -1;
			}
			*l = s;
			*len = (size_t)(e - 1 - s);
			c->rpos += (size_t)(e + 1 - s);
			return 0;
		}
		have = c->rlen - c->rpos;
		if (fill(c, have + 1, msg))
			return -1;
	}
}

/*
 * One reply.  A bulk string is copied to c->out (up to cap bytes; its
 * length in *vlen, -1 for nil); a simple string must be "OK" or "PONG";
 * an error reply fails with its text.
 */
static int reply(struct resp *c, char *out, size_t cap, long *vlen,
		 char *msg)
{
	const char *l;
	size_t len;
	long n;

	if (line(c, &l, &len, msg))
		return -1;
	switch (l[0]) {
	case '+':
		*vlen = 0;
		return 0;
	case ':':
		*vlen = strtol(l + 1, NULL, 10);
		return 0;
	case '-':
		msgf(msg, "Redis: %.*s", (int)(len - 1), l + 1);
		return -1;
	case '$':
		n = strtol(l + 1, NULL, 10);
		*vlen = n;
		if (n < 0)
			return 0;
		if (fill(c, (size_t)n + 2, msg))
			return -1;
		if (cap)
			memcpy(out, c->r + c->rpos,
			       (size_t)n < cap ? (size_t)n : cap);
		c->rpos += (size_t)n + 2;
		return 0;
	default:
		msgf(msg, "Redis: unexpected reply '%.*s'", (int)len, l);
		return -1;
	}
}

/* SELECT db, its reply read. */
static int select_db(struct resp *c, unsigned int db, char *msg)
{
	char cmd[48];
	long vlen;
	int n = snprintf(cmd, sizeof(cmd), "*2\r\n$6\r\nSELECT\r\n$1\r\n%u"
			 "\r\n", db);

	add(c, cmd, (size_t)n);
	return flush(c, msg) || reply(c, NULL, 0, &vlen, msg) ? -1 : 0;
}

/* --- driver ---------------------------------------------------------- */
static int wait_ready(struct resp *c, char *msg)
{
	static const char ping[] = "*1\r\n$4\r\nPING\r\n";
	char why[MSG_LEN];
	long vlen;

	for (int i = 0; i < 1000; i++) {
		if (exited(srv.pid, why)) {
			srv.pid = 0;
			msgf(msg, "redis-server %s", why);
			log_tail(srv.log, msg, MSG_LEN);
			return -1;
		}
		if (!resp_connect(c, why))
			break;
		resp_close(c);
		c->fd = -1;
		usleep(10000);
	}
	if (c->fd < 0) {
		msgf(msg, "redis-server did not open %s in 10 s", srv.sock);
		return -1;
	}
	add(c, ping, sizeof(ping) - 1);
	return flush(c, msg) || reply(c, NULL, 0, &vlen, msg) ? -1 : 0;
}

static void read_version(struct resp *c)
{
	static const char info[] = "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
	char buf[8192], why[MSG_LEN], *v;
	long n;

	add(c, info, sizeof(info) - 1);
	if (flush(c, why) || reply(c, buf, sizeof(buf) - 1, &n, why) || n < 0)
		return;
	buf[n < (long)sizeof(buf) ? n : (long)sizeof(buf) - 1] = 0;
	v = strstr(buf, "redis_version:");
	if (v)
		snprintf(srv.version, sizeof(srv.version), "%.*s",
			 (int)strcspn(v + 14, "\r\n"), v + 14);
}

static int load(struct resp *c, uint64_t ttl, char *msg)
{
	long vlen;

	for (uint32_t i = 0; i < opt.keys; i += LOAD_PIPE) {
		uint32_t n = opt.keys - i < LOAD_PIPE ? opt.keys - i :
			LOAD_PIPE;

		for (uint32_t j = 0; j < n; j++)
			req_set(c, i + j, 1, ttl);
		if (flush(c, msg))
			return -1;
		for (uint32_t j = 0; j < n; j++)
			if (reply(c, NULL, 0, &vlen, msg))
				return -1;
	}
	return 0;
}

static int redis_start(char *msg)
{
	char dir[4200];
	struct resp c = { .fd = -1 };
	double t0 = now();
	int err;

	if (opt.redis) {
		snprintf(srv.bin, sizeof(srv.bin), "%s", opt.redis);
		if (access(srv.bin, X_OK)) {
			msgf(msg, "cannot run %s: %s", srv.bin,
			     strerror(errno));
			return errno == ENOENT ? 1 : -1;
		}
	} else if (!find_in_path("redis-server", srv.bin, sizeof(srv.bin))) {
		msgf(msg, "no redis-server in $PATH (apt-get install "
		     "redis-server, or --redis PATH)");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/redis", tmpdir);
	if ((size_t)snprintf(srv.sock, sizeof(srv.sock), "%s/redis.sock",
			     tmpdir) >= sizeof(srv.sock)) {
		msgf(msg, "socket path under %s is too long", tmpdir);
		return -1;
	}
	snprintf(srv.log, sizeof(srv.log), "%s/redis.log", tmpdir);
	if (mkdir(dir, 0700)) {
		msgf(msg, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	{
		const char *argv[] = {
			srv.bin, "--port", "0", "--unixsocket", srv.sock,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--daemonize", "no",
			"--dir", dir, NULL,
		};

		srv.pid = spawn(argv, srv.log, msg);
	}
	if (srv.pid < 0) {
		srv.pid = 0;
		return -1;
	}
	err = wait_ready(&c, msg);
	if (!err) {
		read_version(&c);
		err = load(&c, 0, msg);
	}
	resp_close(&c);
	if (err) {
		stop_server(srv.pid);
		srv.pid = 0;
		return -1;
	}
	fprintf(stderr, "  Redis: loaded %u keys in %.1f s\n", opt.keys,
		now() - t0);
	return 0;
}

static void redis_stop(void)
{
	int st = stop_server(srv.pid);

	if (st != 0)
		fprintf(stderr, "tdb-bench: redis-server ended with status %d "
			"(log %s)\n", st, srv.log);
	srv.pid = 0;
}

static pid_t redis_server(void)
{
	return srv.pid;
}

static void redis_describe(void)
{
	printf("  Redis     %s %s on a Unix socket, no persistence "
	       "(--save \"\" --appendonly no)\n", srv.bin,
	       srv.version[0] ? srv.version : "(version unknown)");
}

static uint32_t redis_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)op, (void)batch, (void)procs;
	return opt.ops;
}

/* --- worker ------------------------------------------------------------ */
static bool h_ttl;      /* this worker is Redis+ttl (set by its open) */

static int redis_open(struct work *w, void **out)
{
	struct resp *c = malloc(sizeof(*c));

	if (!c) {
		msgf(w->msg, "out of memory");
		return -1;
	}
	if (resp_connect(c, w->msg) || (h_ttl && select_db(c, 1, w->msg))) {
		resp_close(c);
		free(c);
		return -1;
	}
	*out = c;
	return 0;
}

static int redis_get(void *h, struct work *w, const uint32_t *idx,
		     unsigned int n)
{
	struct resp *c = h;
	long vlen;

	for (unsigned int j = 0; j < n; j++)
		req_get(c, idx[j]);
	if (flush(c, w->msg))
		return -1;
	for (unsigned int j = 0; j < n; j++) {
		if (reply(c, (char *)c->out, opt.vsize, &vlen, w->msg))
			return -1;
		if (vlen < 0) {
			msgf(w->msg, "Redis: no key %.16s", key_of(idx[j]));
			return -1;
		}
		if (value_check(idx[j], c->out, (size_t)vlen, w->msg))
			return -1;
	}
	return 0;
}

static int redis_put(void *h, struct work *w, const uint32_t *idx,
		     unsigned int n)
{
	struct resp *c = h;
	long vlen;

	for (unsigned int j = 0; j < n; j++)
		req_set(c, idx[j], w->gen, h_ttl ? opt.ttl : 0);
	if (flush(c, w->msg))
		return -1;
	for (unsigned int j = 0; j < n; j++)
		if (reply(c, NULL, 0, &vlen, w->msg))
			return -1;
	return 0;
}

static void redis_close(void *h)
{
	resp_close(h);
	free(h);
}

const struct peer peer_redis = {
	.name = "Redis",
	.what = { { "GET, unpipelined", "GET, pipelined by %u" },
		  { "SET, unpipelined", "SET, pipelined by %u" } },
	.start = redis_start, .stop = redis_stop, .server = redis_server,
	.describe = redis_describe, .ops = redis_ops,
	.open = redis_open, .get = redis_get, .put = redis_put,
	.close = redis_close,
};

/* --- Redis+ttl: the same redis-server, database 1, SET ... PX ------------
 * Started after Redis (it shares its redis-server; else starts its own). */
static bool ttl_own_srv;

static int ttl_start(char *msg)
{
	struct resp c = { .fd = -1 };
	double t0 = now();
	int err;

	if (!opt.ttl) {
		msgf(msg, "no --ttl");
		return 1;
	}
	if (!srv.pid) {
		err = redis_start(msg);
		if (err)
			return err;
		ttl_own_srv = true;
	}
	err = resp_connect(&c, msg);
	if (!err)
		err = select_db(&c, 1, msg);
	if (!err)
		err = load(&c, opt.ttl, msg);
	if (!err) {
		/* The keys have the TTL: PTTL of the first one. */
		static const char pttl[] = "*2\r\n$4\r\nPTTL\r\n$16\r\n";
		long ms = 0;

		add(&c, pttl, sizeof(pttl) - 1);
		add(&c, key_of(0), KEY_LEN);
		add(&c, "\r\n", 2);
		err = flush(&c, msg) || reply(&c, NULL, 0, &ms, msg) ? -1 : 0;
		if (!err && (ms <= 0 || (uint64_t)ms > opt.ttl)) {
			msgf(msg, "Redis: PTTL %.16s is %ld after SET ... PX "
			     "%llu", key_of(0), ms,
			     (unsigned long long)opt.ttl);
			err = -1;
		}
	}
	resp_close(&c);
	if (err) {
		if (ttl_own_srv)
			redis_stop();
		ttl_own_srv = false;
		return -1;
	}
	fprintf(stderr, "  Redis+ttl: loaded %u keys with PX %llu in %.1f s\n",
		opt.keys, (unsigned long long)opt.ttl, now() - t0);
	return 0;
}

static void ttl_stop(void)
{
	if (ttl_own_srv && srv.pid)
		redis_stop();
	ttl_own_srv = false;
}

static void ttl_describe(void)
{
	printf("  Redis+ttl the same redis-server, database 1 loaded with SET "
	       "... PX %llu; SET ... PX\n", (unsigned long long)opt.ttl);
}

static uint32_t ttl_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)batch, (void)procs;
	return op == OP_PUT ? opt.ops : 0;
}

static int redis_open_ttl(struct work *w, void **out)
{
	h_ttl = true;
	return redis_open(w, out);
}

const struct peer peer_redis_ttl = {
	.name = "Redis+ttl",
	.what = { { "", "" },
		  { "SET PX, unpipelined", "SET PX, pipelined by %u" } },
	.start = ttl_start, .stop = ttl_stop, .server = redis_server,
	.describe = ttl_describe, .ops = ttl_ops,
	.open = redis_open_ttl, .get = redis_get, .put = redis_put,
	.close = redis_close,
};
