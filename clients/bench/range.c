// SPDX-License-Identifier: GPL-2.0-only
/*
 * range.c - tdb-bench-range: ordered tables (issue 28) end to end.
 * docs/BENCHMARKS.md section 14; `tdb-bench-range --help`.
 *
 * One invocation, on the same data everywhere: N keys "key:%012llu" of
 * the even numbers 0, 2, ..., 2(N-1) (16 bytes, so byte order is number
 * order), 100-byte values (util.c's value_make: the key's index and a
 * generation), loaded in one random order (a fixed-seed permutation)
 * into
 *   - tdbd (started here, as tdb-bench does): table "ord" created
 *     ordered and table "hash" a plain one;
 *   - an engine in this process (src/core): ordered and hash tables for
 *     the memory figures (dropped after), and an ordered table loaded as
 *     tdbd's is for "engine view";
 *   - LMDB (MDB_NOSYNC, one environment in the temp dir);
 *   - redis-server (started here, Unix socket, no persistence): one
 *     sorted set whose members are the key, a 0 byte and the value, all
 *     at score 0, so that ZRANGEBYLEX returns keys and values in key
 *     order in one command (the cost model: one round trip a range,
 *     values included, as the other systems return them).
 *
 * Parts (--part):
 *   memory  the engine's tables' figures (tdbe_table_stat): order_nodes
 *           x TDBB_NODE_BYTES per key, and bytes_allocated of the
 *           ordered table against the hash table, loaded in random order
 *           and in key order; the time of the inserts and of as many
 *           replaces of random keys after them;
 *   range   ranges of L keys (--lens, default 10,100,1000) from a random
 *           start (a present key or, every other range, the absent odd
 *           number just before it), with P processes (--procs): tdb
 *           through the rings (a blocking range scan, TDBC_NO_MAP;
 *           "tdb submit": 8 at once, tdbc_scan_submit_range + reap),
 *           zero-copy in the client's map (tdbc_map_range), the engine's
 *           view iterator on a read-only map of the in-process table (no
 *           client, no read section: what the map walk costs at most),
 *           LMDB (a read txn, MDB_SET_RANGE then MDB_NEXT), Redis
 *           (ZRANGEBYLEX z [start + LIMIT 0 L).  Every key and value
 *           returned is checked (its key, its index, its length).
 *   point   get and put of random keys on tdbd's ordered table against
 *           its hash table and LMDB: gets through the rings (TDBC_NO_MAP)
 *           and in the map (tdbc_get), puts (tdbc_put); LMDB one read
 *           txn a get, one write txn a put.
 *
 * Each cell: P forked workers, each with its own connection or
 * environment, released together at a barrier; rate = all operations /
 * (last end - first start).  Medians of --runs runs; the systems' order
 * rotates between runs.  The tdb systems whose client API this tree
 * lacks are reported as not built (compiled in when include/tdb/client.h
 * has it).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>
#include <tdb/client.h>

#include "core.h"
#include "layout.h"

#include "bench.h"
#include "../../bench/common/machine.h"

#define SEED     0x0dde4edb5eed2801ull
#define KLEN     16u
#define LENS_MAX 4u
#define EXT      (2u << 20)
#define PIPE_N   256u
#define PIPE_MAX 8u             /* ranges in flight: tdb submit */

/* The client's range API (issue 28): TDBC_TABLE_ORDERED comes with
 * tdbc_table_opts.flags, the range scans and the map walk. */
#ifdef TDBC_TABLE_ORDERED
#define HAVE_TDBC_RANGE 1
#else
#define HAVE_TDBC_RANGE 0
#endif

struct options opt = { .vsize = 100 };   /* util.c's values */
char *keys;                              /* unused (bench.h) */
char tmpdir[4096];

static struct {
	uint32_t keys;
	unsigned int lens[LENS_MAX], nlens;
	unsigned int procs[4], nprocs;
	unsigned int runs;
	uint64_t budget;        /* keys per process per range cell */
	uint32_t point_ops;     /* per process per point cell */
	bool part_mem, part_range, part_point;
	bool strict, verbose;
	bool key_order;         /* --load-order key: no permutation */
	const char *tdbd, *redis, *dir;
} o = {
	.keys = 1000000, .lens = { 10, 100, 1000 }, .nlens = 3,
	.procs = { 1, 8 }, .nprocs = 2, .runs = 3, .budget = 300000,
	.point_ops = 50000, .part_mem = true, .part_range = true,
	.part_point = true,
};

static char *kbuf;              /* key i at kbuf + 16 i */
static uint32_t *perm;          /* the load order */

static const char *key_at(uint32_t i)
{
	return kbuf + (size_t)i * KLEN;
}

static void key_num(char *out, uint64_t n)
{
	char b[32];

	snprintf(b, sizeof(b), "key:%012" PRIu64, n);
	memcpy(out, b, KLEN);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((splitmix64(s) >> 32) * (uint64_t)n) >> 32);
}

/* --- errors and cleanup ------------------------------------------------ */
static pid_t tdbd_pid, redis_pid;
static char tdbd_sock[108], tdbd_log[4200], redis_sock[108], redis_log[4200];
static pid_t workers[PROCS_MAX];

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path), 0;
}

static void cleanup(void)
{
	stop_server(tdbd_pid);
	stop_server(redis_pid);
	tdbd_pid = redis_pid = 0;
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = 0;
}

static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-range: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGKILL);
	cleanup();
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	for (unsigned int i = 0; i < PROCS_MAX; i++)
		if (workers[i] > 0)
			kill(workers[i], SIGKILL);
	stop_server(tdbd_pid);
	stop_server(redis_pid);
	if (tmpdir[0])          /* LMDB's file and tdbd's data: not left */
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	_exit(130);
}

/* --- a checked record --------------------------------------------------
 * The k-th record of a range that starts at index s must be key s + k
 * with its value (index s + k, 100 bytes). */
static int check_rec(uint32_t want, const void *k, size_t klen,
		     const void *v, size_t vlen, char *msg)
{
	if (klen != KLEN || memcmp(k, key_at(want), KLEN)) {
		msgf(msg, "record %u of the range: key '%.*s' (%zu B), "
		     "expected '%.16s'", want, (int)(klen < 64 ? klen : 64),
		     (const char *)k, klen, key_at(want));
		return -1;
	}
	return value_check(want, v, vlen, msg);
}

/* --- the systems ------------------------------------------------------
 * A system opens a handle in the worker (after the fork), then runs
 * ops; each op is one range (from the start index s, key `from`: present
 * or the absent one before it, L records) or one point op. */
struct sys {
	const char *name, *call;
	bool built;             /* compiled in */
	int ready;              /* 0 started, else why not in `why` */
	char why[MSG_LEN];
	int (*open)(unsigned int proc, void **h, char *msg);
	int (*range)(void *h, const char *from, uint32_t s, unsigned int len,
		     char *msg);
	/* Or n ranges at once (pipe > 1: up to pipe in flight). */
	unsigned int pipe;
	int (*range_many)(void *h, const char (*from)[KLEN],
			  const uint32_t *s, unsigned int n, unsigned int len,
			  char *msg);
	int (*get)(void *h, uint32_t i, char *msg);
	int (*put)(void *h, uint32_t i, uint32_t gen, char *msg);
	void (*close)(void *h);
};

/* === LMDB ============================================================== */
static char lmdb_dir[4200];

struct lmdb_h {
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *rtxn;
	MDB_cursor *cur;
	uint8_t vbuf[256];
};

static int lmdb_env(MDB_env **env, MDB_dbi *dbi, char *msg)
{
	size_t map = (size_t)1 << 30;
	MDB_txn *txn;
	int rc;

	while (map < (size_t)o.keys * 1024)
		map <<= 1;
	rc = mdb_env_create(env);
	if (!rc)
		rc = mdb_env_set_mapsize(*env, map);
	if (!rc)
		rc = mdb_env_open(*env, lmdb_dir, MDB_NOSYNC, 0600);
	if (!rc && !(rc = mdb_txn_begin(*env, NULL, 0, &txn))) {
		rc = mdb_dbi_open(txn, NULL, 0, dbi);
		rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	}
	if (rc) {
		msgf(msg, "LMDB environment %s: %s", lmdb_dir,
		     mdb_strerror(rc));
		mdb_env_close(*env);
		*env = NULL;
	}
	return rc ? -1 : 0;
}

static int lmdb_start(char *msg)
{
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *txn = NULL;
	uint8_t v[256];
	int rc = 0;

	snprintf(lmdb_dir, sizeof(lmdb_dir), "%s/lmdb", tmpdir);
	if (mkdir(lmdb_dir, 0700)) {
		msgf(msg, "mkdir %s: %s", lmdb_dir, strerror(errno));
		return -1;
	}
	if (lmdb_env(&env, &dbi, msg))
		return -1;
	for (uint32_t j = 0; j < o.keys && !rc; j++) {
		uint32_t i = perm[j];
		MDB_val mk = { KLEN, (void *)key_at(i) }, mv = { opt.vsize, v };

		if (!txn && (rc = mdb_txn_begin(env, NULL, 0, &txn)))
			break;
		value_make(v, i, 1);
		rc = mdb_put(txn, dbi, &mk, &mv, 0);
		if (!rc && ((j + 1) % 1000 == 0 || j + 1 == o.keys)) {
			rc = mdb_txn_commit(txn);
			txn = NULL;
		}
	}
	if (txn)
		mdb_txn_abort(txn);
	mdb_env_close(env);
	if (rc)
		msgf(msg, "LMDB load: %s", mdb_strerror(rc));
	return rc ? -1 : 0;
}

static void lmdb_close(void *hv)
{
	struct lmdb_h *h = hv;

	if (h->cur)
		mdb_cursor_close(h->cur);
	if (h->rtxn)
		mdb_txn_abort(h->rtxn);
	if (h->env)
		mdb_env_close(h->env);
	free(h);
}

/* Each worker walks the whole database once before the barrier, so its
 * timed reads do not pay the first touch of each page of the map. */
static int lmdb_open(unsigned int proc, void **out, char *msg)
{
	struct lmdb_h *h = calloc(1, sizeof(*h));
	MDB_val k, v;
	int rc;

	(void)proc;
	if (!h || lmdb_env(&h->env, &h->dbi, msg)) {
		if (!h)
			msgf(msg, "out of memory");
		free(h);
		return -1;
	}
	rc = mdb_txn_begin(h->env, NULL, MDB_RDONLY, &h->rtxn);
	if (!rc)
		rc = mdb_cursor_open(h->rtxn, h->dbi, &h->cur);
	for (int r = rc ? rc : mdb_cursor_get(h->cur, &k, &v, MDB_FIRST);
	     !r; r = mdb_cursor_get(h->cur, &k, &v, MDB_NEXT))
		h->vbuf[0] ^= ((const uint8_t *)v.mv_data)[0];
	if (rc) {
		msgf(msg, "LMDB read txn: %s", mdb_strerror(rc));
		lmdb_close(h);
		return -1;
	}
	mdb_txn_reset(h->rtxn);
	*out = h;
	return 0;
}

static int lmdb_range(void *hv, const char *from, uint32_t s,
		      unsigned int len, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { KLEN, (void *)from }, v;
	int rc = mdb_txn_renew(h->rtxn);

	if (!rc)
		rc = mdb_cursor_renew(h->rtxn, h->cur);
	if (!rc)
		rc = mdb_cursor_get(h->cur, &k, &v, MDB_SET_RANGE);
	for (unsigned int n = 0; !rc && n < len; n++) {
		if (check_rec(s + n, k.mv_data, k.mv_size, v.mv_data,
			      v.mv_size, msg)) {
			mdb_txn_reset(h->rtxn);
			return -1;
		}
		if (n + 1 < len)
			rc = mdb_cursor_get(h->cur, &k, &v, MDB_NEXT);
	}
	mdb_txn_reset(h->rtxn);
	if (rc)
		msgf(msg, "LMDB cursor: %s", mdb_strerror(rc));
	return rc ? -1 : 0;
}

static int lmdb_get(void *hv, uint32_t i, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { KLEN, (void *)key_at(i) }, v;
	int rc = mdb_txn_renew(h->rtxn);

	if (!rc)
		rc = mdb_get(h->rtxn, h->dbi, &k, &v);
	if (!rc && v.mv_size <= sizeof(h->vbuf))
		memcpy(h->vbuf, v.mv_data, v.mv_size);
	mdb_txn_reset(h->rtxn);
	if (rc) {
		msgf(msg, "LMDB get: %s", mdb_strerror(rc));
		return -1;
	}
	return value_check(i, h->vbuf, v.mv_size, msg);
}

static int lmdb_put(void *hv, uint32_t i, uint32_t gen, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { KLEN, (void *)key_at(i) }, v = { opt.vsize, h->vbuf };
	MDB_txn *txn;
	int rc = mdb_txn_begin(h->env, NULL, 0, &txn);

	value_make(h->vbuf, i, gen);
	if (!rc) {
		rc = mdb_put(txn, h->dbi, &k, &v, 0);
		rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	}
	if (rc)
		msgf(msg, "LMDB put: %s", mdb_strerror(rc));
	return rc ? -1 : 0;
}

/* === Redis (RESP over a Unix socket, no hiredis) ======================= */
struct resp {
	int fd;
	char *w, *r;
	size_t wlen, wcap, rpos, rlen, rcap;
};

static int resp_open(struct resp *c, char *msg)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(c, 0, sizeof(*c));
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", redis_sock);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c->wcap = PIPE_N * 4 * (64 + KLEN + opt.vsize);
	c->rcap = 4u << 20;
	c->w = malloc(c->wcap);
	c->r = malloc(c->rcap);
	if (c->fd < 0 || !c->w || !c->r) {
		msgf(msg, "Redis connection: %s", strerror(errno));
		return -1;
	}
	if (connect(c->fd, (struct sockaddr *)&a, sizeof(a))) {
		msgf(msg, "connect %s: %s", redis_sock, strerror(errno));
		return -1;
	}
	return 0;
}

static void resp_close(struct resp *c)
{
	if (c->fd > 0)
		close(c->fd);
	free(c->w);
	free(c->r);
	c->fd = -1;
	c->w = c->r = NULL;
}

static void radd(struct resp *c, const void *p, size_t n)
{
	memcpy(c->w + c->wlen, p, n);
	c->wlen += n;
}

/* One bulk string argument. */
static void rarg(struct resp *c, const void *p, size_t n)
{
	char h[24];
	int l = snprintf(h, sizeof(h), "$%zu\r\n", n);

	radd(c, h, (size_t)l);
	radd(c, p, n);
	radd(c, "\r\n", 2);
}

static void rcmd(struct resp *c, unsigned int argc)
{
	char h[24];
	int l = snprintf(h, sizeof(h), "*%u\r\n", argc);

	radd(c, h, (size_t)l);
}

static int rflush(struct resp *c, char *msg)
{
	for (size_t off = 0; off < c->wlen;) {
		ssize_t n = write(c->fd, c->w + off, c->wlen - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			msgf(msg, "Redis: write: %s", strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	c->wlen = 0;
	return 0;
}

/* At least need unparsed bytes at c->r + c->rpos. */
static int rfill(struct resp *c, size_t need, char *msg)
{
	if (c->rpos + need > c->rcap) {
		memmove(c->r, c->r + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
		if (need > c->rcap) {
			msgf(msg, "Redis: a reply of %zu bytes", need);
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

/* The next reply's header line: its type byte and number (the length of
 * a bulk string or an array, an integer's value); -1 on an error reply
 * (its text in msg). */
static int rhead(struct resp *c, char *type, long long *num, char *msg)
{
	for (size_t have = 0;;) {
		const char *s = c->r + c->rpos;
		const char *e = memchr(s + have, '\n', c->rlen - c->rpos - have);

		if (e) {
			*type = s[0];
			*num = strtoll(s + 1, NULL, 10);
			c->rpos += (size_t)(e + 1 - s);
			if (*type == '-') {
				msgf(msg, "Redis: %.*s", (int)(e - s - 2),
				     s + 1);
				return -1;
			}
			return 0;
		}
		have = c->rlen - c->rpos;
		if (rfill(c, have + 1, msg))
			return -1;
	}
}

/* A bulk string of n bytes: its bytes at *p (valid until the next
 * read). */
static int rbulk(struct resp *c, long long n, const char **p, char *msg)
{
	if (rfill(c, (size_t)n + 2, msg))
		return -1;
	*p = c->r + c->rpos;
	c->rpos += (size_t)n + 2;
	return 0;
}

static int redis_start(char *msg)
{
	char bin[4096], dir[4200], why[MSG_LEN];
	struct resp c = { .fd = -1 };
	uint8_t m[KLEN + 1 + 256];
	long long n = 0;
	char t;
	int err = -1;

	if (o.redis)
		snprintf(bin, sizeof(bin), "%s", o.redis);
	else if (!find_in_path("redis-server", bin, sizeof(bin))) {
		msgf(msg, "no redis-server in $PATH (--redis PATH)");
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/redis", tmpdir);
	if ((size_t)snprintf(redis_sock, sizeof(redis_sock), "%s/redis.sock",
			     tmpdir) >= sizeof(redis_sock)) {
		msgf(msg, "the socket path under %s is too long", tmpdir);
		return -1;
	}
	snprintf(redis_log, sizeof(redis_log), "%s/redis.log", tmpdir);
	if (mkdir(dir, 0700)) {
		msgf(msg, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	{
		const char *argv[] = {
			bin, "--port", "0", "--unixsocket", redis_sock,
			"--unixsocketperm", "700", "--save", "",
			"--appendonly", "no", "--daemonize", "no",
			"--dir", dir, NULL,
		};

		redis_pid = spawn(argv, redis_log, msg);
	}
	if (redis_pid < 0) {
		redis_pid = 0;
		return -1;
	}
	for (int i = 0; i < 1000; i++) {
		if (exited(redis_pid, why)) {
			redis_pid = 0;
			msgf(msg, "redis-server %s", why);
			log_tail(redis_log, msg, MSG_LEN);
			return -1;
		}
		if (!resp_open(&c, why))
			break;
		resp_close(&c);
		usleep(10000);
	}
	if (c.fd < 0) {
		msgf(msg, "redis-server did not open %s in 10 s", redis_sock);
		return -1;
	}
	/* ZADD z 0 "key\0value", PIPE_N a write, in the load order. */
	for (uint32_t j = 0; j < o.keys; j += PIPE_N) {
		uint32_t k = o.keys - j < PIPE_N ? o.keys - j : PIPE_N;

		for (uint32_t q = 0; q < k; q++) {
			uint32_t i = perm[j + q];

			memcpy(m, key_at(i), KLEN);
			m[KLEN] = 0;
			value_make(m + KLEN + 1, i, 1);
			rcmd(&c, 4);
			rarg(&c, "ZADD", 4);
			rarg(&c, "z", 1);
			rarg(&c, "0", 1);
			rarg(&c, m, KLEN + 1 + opt.vsize);
		}
		if (rflush(&c, msg))
			goto out;
		for (uint32_t q = 0; q < k; q++)
			if (rhead(&c, &t, &n, msg))
				goto out;
	}
	rcmd(&c, 2);
	rarg(&c, "ZCARD", 5);
	rarg(&c, "z", 1);
	if (rflush(&c, msg) || rhead(&c, &t, &n, msg))
		goto out;
	if (n != o.keys) {
		msgf(msg, "Redis: ZCARD z is %lld after loading %u keys", n,
		     o.keys);
		goto out;
	}
	err = 0;
out:
	resp_close(&c);
	return err;
}

static int redis_open(unsigned int proc, void **out, char *msg)
{
	struct resp *c = malloc(sizeof(*c));

	(void)proc;
	if (!c) {
		msgf(msg, "out of memory");
		return -1;
	}
	if (resp_open(c, msg)) {
		resp_close(c);
		free(c);
		return -1;
	}
	*out = c;
	return 0;
}

static void redis_close(void *h)
{
	resp_close(h);
	free(h);
}

static int redis_range(void *hv, const char *from, uint32_t s,
		       unsigned int len, char *msg)
{
	struct resp *c = hv;
	char b[KLEN + 1], l[16];
	long long n;
	char t;

	b[0] = '[';
	memcpy(b + 1, from, KLEN);
	rcmd(c, 7);
	rarg(c, "ZRANGEBYLEX", 11);
	rarg(c, "z", 1);
	rarg(c, b, KLEN + 1);
	rarg(c, "+", 1);
	rarg(c, "LIMIT", 5);
	rarg(c, "0", 1);
	rarg(c, l, (size_t)snprintf(l, sizeof(l), "%u", len));
	if (rflush(c, msg) || rhead(c, &t, &n, msg))
		return -1;
	if (t != '*' || n != len) {
		msgf(msg, "Redis: ZRANGEBYLEX gave '%c' %lld, expected %u "
		     "members", t, n, len);
		return -1;
	}
	for (unsigned int k = 0; k < len; k++) {
		const char *p;

		if (rhead(c, &t, &n, msg) || t != '$' || n < KLEN + 1 ||
		    rbulk(c, n, &p, msg)) {
			if (!*msg)
				msgf(msg, "Redis: a member is not a string");
			return -1;
		}
		if (check_rec(s + k, p, KLEN, p + KLEN + 1,
			      (size_t)n - KLEN - 1, msg))
			return -1;
	}
	return 0;
}

/* === tdb through tdbd ================================================== */
static char tdbd_bin[PATH_MAX];

static const char *find_tdbd(void)
{
	char self[PATH_MAX];
	ssize_t n;

	if (o.tdbd)
		return o.tdbd;
	if (getenv("TDBD") && !access(getenv("TDBD"), X_OK))
		return getenv("TDBD");
#ifdef TDB_BENCH_TDBD
	if (!access(TDB_BENCH_TDBD, X_OK))
		return TDB_BENCH_TDBD;
#endif
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		snprintf(tdbd_bin, sizeof(tdbd_bin), "%s/../../src/daemon/tdbd",
			 dirname(self));
		if (!access(tdbd_bin, X_OK))
			return tdbd_bin;
	}
	return NULL;
}

static int tdbd_connect(struct tdbc **c, unsigned int flags, char *msg)
{
	char why[MSG_LEN] = "";

	for (int i = 0; i < 2000; i++) {
		if (exited(tdbd_pid, why)) {
			tdbd_pid = 0;
			msgf(msg, "tdbd %s", why);
			log_tail(tdbd_log, msg, MSG_LEN);
			return -1;
		}
		if (!tdbc_connect(c, tdbd_sock, flags, why, sizeof(why)))
			return 0;
		usleep(10000);
	}
	msgf(msg, "tdbd did not accept on %s in 20 s: %s", tdbd_sock, why);
	return -1;
}

static struct tdbc_table_stat tdbd_st[2];      /* ord, hash after load */
static const char *const tdbd_table[2] = { "ord", "hash" };

static int tdbd_load(struct tdbc *c, const char *name, bool ordered,
		     struct tdbc_table_stat *st, char *msg)
{
	uint64_t ext = ((uint64_t)o.keys * (KLEN + opt.vsize + 128) * 3 +
			EXT - 1) / EXT;
	struct tdbc_table_opts to;
	struct tdbc_table *t = NULL;
	struct tdbc_req req[PIPE_N];
	struct tdbc_cqe cqe[PIPE_N];
	static uint8_t v[PIPE_N][256];
	int err;

	tdbc_table_opts_init(&to);
	to.max_extents = ext < 1024 ? 1024 : ext > 32768 ? 32768 :
		(uint32_t)ext;
#if HAVE_TDBC_RANGE
	to.flags = ordered ? TDBC_TABLE_ORDERED : 0;
#else
	if (ordered) {
		msgf(msg, "this client library cannot create ordered tables");
		return 1;
	}
#endif
	err = tdbc_table_create(c, name, &to);
	if (!err)
		err = tdbc_table_open(c, name, &t);
	for (uint32_t j = 0; !err && j < o.keys; j += PIPE_N) {
		uint32_t n = o.keys - j < PIPE_N ? o.keys - j : PIPE_N;
		uint32_t sub = 0, done = 0;

		for (uint32_t q = 0; q < n; q++) {
			uint32_t i = perm[j + q];

			value_make(v[q], i, 1);
			req[q] = (struct tdbc_req){
				.op = TDBC_OP_PUT, .table = t,
				.key = key_at(i), .klen = KLEN, .val = v[q],
				.vlen = opt.vsize, .user = q,
			};
		}
		while (!err && done < n) {
			int r = sub < n ? tdbc_submit(c, req + sub, n - sub) :
				0;

			if (r > 0)
				sub += (uint32_t)r;
			else if (r < 0 && r != -EAGAIN)
				err = r;
			if (err)
				break;
			r = tdbc_reap(c, cqe, PIPE_N, sub == n ? sub - done : 1,
				      -1);
			if (r < 0)
				err = r;
			for (int q = 0; q < r && !err; q++)
				err = cqe[q].res;
			done += r > 0 ? (uint32_t)r : 0;
		}
	}
	if (!err)
		err = tdbc_table_stat(c, name, st);
	if (t)
		tdbc_table_close(t);
	if (err) {
		msgf(msg, "tdb table %s: %s: %s", name, tdbc_strerror(err),
		     tdbc_errmsg(c));
		return -1;
	}
#if HAVE_TDBC_RANGE
	if (ordered && !(st->flags & TDBC_TABLE_ORDERED)) {
		msgf(msg, "tdbd created table %s without TDBC_TABLE_ORDERED "
		     "(its owner has no ordered tables)", name);
		return 1;
	}
#endif
	if (st->records != o.keys) {
		msgf(msg, "tdb table %s holds %" PRIu64 " records after "
		     "loading %u", name, (uint64_t)st->records, o.keys);
		return -1;
	}
	return 0;
}

/* 0: both tables; 1: tdbd has no ordered tables (hash only loaded). */
static int tdbd_start(char *msg)
{
	const char *bin = find_tdbd();
	struct tdbc *c = NULL;
	int err, ord;

	if (!bin) {
		msgf(msg, "no tdbd (--tdbd PATH or $TDBD)");
		return 1;
	}
	if ((size_t)snprintf(tdbd_sock, sizeof(tdbd_sock), "%s/tdbd.sock",
			     tmpdir) >= sizeof(tdbd_sock)) {
		msgf(msg, "the socket path under %s is too long", tmpdir);
		return -1;
	}
	snprintf(tdbd_log, sizeof(tdbd_log), "%s/tdbd.log", tmpdir);
	{
		char data[4200];
		const char *argv[] = {
			bin, "--config", "/dev/null", "--sync", "none",
			"--socket", tdbd_sock, "--data-dir", data, NULL,
		};

		snprintf(data, sizeof(data), "%s/tdbd.data", tmpdir);
		tdbd_pid = spawn(argv, tdbd_log, msg);
	}
	if (tdbd_pid < 0) {
		tdbd_pid = 0;
		return -1;
	}
	if (tdbd_connect(&c, 0, msg))
		return -1;
	if (!tdbc_uses_rings(c)) {
		tdbc_close(c);
		msgf(msg, "tdbd gave no rings (%s)", tdbd_log);
		return -1;
	}
	err = tdbd_load(c, tdbd_table[1], false, &tdbd_st[1], msg);
	ord = err ? err : tdbd_load(c, tdbd_table[0], true, &tdbd_st[0], msg);
	tdbc_close(c);
	return err ? err : ord;
}

struct tdb_h {
	struct tdbc *c;
	struct tdbc_table *t;
	uint8_t buf[256];
	uint32_t want, got;     /* the map walk's check */
	char *msg;
};

static void tdb_close_h(void *hv)
{
	struct tdb_h *h = hv;

	if (h->t)
		tdbc_table_close(h->t);
	if (h->c)
		tdbc_close(h->c);
	free(h);
}

static int tdb_open_h(void **out, unsigned int flags, const char *table,
		      char *msg)
{
	struct tdb_h *h = calloc(1, sizeof(*h));
	int err;

	if (!h) {
		msgf(msg, "out of memory");
		return -1;
	}
	if (tdbd_connect(&h->c, flags, msg))
		goto fail;
	err = tdbc_table_open(h->c, table, &h->t);
	if (err) {
		msgf(msg, "tdbc_table_open %s: %s", table, tdbc_strerror(err));
		goto fail;
	}
	if (!(flags & TDBC_NO_MAP) && !tdbc_table_mapped(h->t)) {
		msgf(msg, "tdbd gave no map of table %s", table);
		goto fail;
	}
	*out = h;
	return 0;
fail:
	tdb_close_h(h);
	return -1;
}

static int open_ord_rings(unsigned int p, void **h, char *msg)
{
	(void)p;
	return tdb_open_h(h, TDBC_NO_MAP, tdbd_table[0], msg);
}

static int open_hash_rings(unsigned int p, void **h, char *msg)
{
	(void)p;
	return tdb_open_h(h, TDBC_NO_MAP, tdbd_table[1], msg);
}

static int open_ord_map(unsigned int p, void **h, char *msg)
{
	(void)p;
	return tdb_open_h(h, 0, tdbd_table[0], msg);
}

static int open_hash_map(unsigned int p, void **h, char *msg)
{
	(void)p;
	return tdb_open_h(h, 0, tdbd_table[1], msg);
}

static int tdb_get(void *hv, uint32_t i, char *msg)
{
	struct tdb_h *h = hv;
	size_t need = 0;
	long n = tdbc_get(h->t, NULL, key_at(i), KLEN, h->buf,
			  sizeof(h->buf), &need);

	if (n < 0) {
		msgf(msg, "tdbc_get: %s: %s", tdbc_strerror((int)n),
		     tdbc_errmsg(h->c));
		return -1;
	}
	return value_check(i, h->buf, (size_t)n, msg);
}

static int tdb_put(void *hv, uint32_t i, uint32_t gen, char *msg)
{
	struct tdb_h *h = hv;
	int err;

	value_make(h->buf, i, gen);
	err = tdbc_put(h->t, NULL, key_at(i), KLEN, h->buf, opt.vsize, 0);
	if (err)
		msgf(msg, "tdbc_put: %s: %s", tdbc_strerror(err),
		     tdbc_errmsg(h->c));
	return err ? -1 : 0;
}

#if HAVE_TDBC_RANGE
/* A blocking range scan through the rings: from inclusive, no end, the
 * limit L; every record read with tdbc_scan_next. */
static int tdb_range_rings(void *hv, const char *from, uint32_t s,
			   unsigned int len, char *msg)
{
	struct tdb_h *h = hv;
	struct tdbc_range r = { .from = from, .from_len = KLEN };
	struct tdbc_scan *sc;
	const void *k, *v;
	size_t kl, vl;
	unsigned int n = 0;
	int rc = tdbc_scan_range(h->t, &r, len, 0, &sc);

	if (rc) {
		msgf(msg, "tdbc_scan_range: %s: %s", tdbc_strerror(rc),
		     tdbc_errmsg(h->c));
		return -1;
	}
	while ((rc = tdbc_scan_next(sc, &k, &kl, &v, &vl)) == 1) {
		if (n >= len || check_rec(s + n, k, kl, v, vl, msg)) {
			if (n >= len)
				msgf(msg, "the scan gave more than its limit "
				     "%u", len);
			tdbc_scan_close(sc);
			return -1;
		}
		n++;
	}
	tdbc_scan_close(sc);
	if (rc < 0 || n != len) {
		msgf(msg, "range scan: %s after %u of %u records",
		     rc < 0 ? tdbc_strerror(rc) : "the end", n, len);
		return -1;
	}
	return 0;
}

static int map_rec(void *arg, const void *k, size_t kl, const void *v,
		   size_t vl, uint64_t version)
{
	struct tdb_h *h = arg;

	(void)version;
	if (check_rec(h->want + h->got, k, kl, v, vl, h->msg))
		return -1;
	h->got++;
	return 0;
}

/* n range scans submitted at once (tdbc_scan_submit_range, one publish
 * each), their batches reaped as they complete, each scan's records
 * read with tdbc_scan_next as its batches arrive. */
static int tdb_range_submit(void *hv, const char (*from)[KLEN],
			    const uint32_t *s, unsigned int n,
			    unsigned int len, char *msg)
{
	struct tdb_h *h = hv;
	struct tdbc_scan *sc[PIPE_MAX] = { NULL };
	struct tdbc_cqe cqe[PIPE_MAX];
	unsigned int got[PIPE_MAX] = { 0 }, left = n, j;
	int rc = 0;

	for (j = 0; j < n && !rc; j++) {
		struct tdbc_range r = { .from = from[j], .from_len = KLEN };

		rc = tdbc_scan_submit_range(h->t, &r, len, 0, j, &sc[j]);
		if (rc)
			msgf(msg, "tdbc_scan_submit_range: %s: %s",
			     tdbc_strerror(rc), tdbc_errmsg(h->c));
	}
	while (!rc && left) {
		int m = tdbc_reap(h->c, cqe, PIPE_MAX, 1, -1);

		if (m < 0) {
			msgf(msg, "tdbc_reap: %s", tdbc_strerror(m));
			rc = -1;
		}
		for (int q = 0; !rc && q < m; q++) {
			const void *k, *v;
			size_t kl, vl;
			int r;

			j = (unsigned int)cqe[q].user;
			if (j >= n || !sc[j] || cqe[q].res < 0) {
				msgf(msg, "a range scan's completion: user "
				     "%u, %s", j, j < n && sc[j] ?
				     tdbc_strerror(cqe[q].res) : "unknown");
				rc = -1;
				break;
			}
			while ((r = tdbc_scan_next(sc[j], &k, &kl, &v,
						   &vl)) == 1) {
				if (got[j] >= len ||
				    check_rec(s[j] + got[j], k, kl, v, vl,
					      msg)) {
					if (got[j] >= len)
						msgf(msg, "a scan gave more "
						     "than its limit %u", len);
					rc = -1;
					break;
				}
				got[j]++;
			}
			if (rc || r == -EAGAIN)
				continue;
			if (r < 0 || got[j] != len) {
				msgf(msg, "range scan: %s after %u of %u "
				     "records", r < 0 ? tdbc_strerror(r) :
				     "the end", got[j], len);
				rc = -1;
				break;
			}
			tdbc_scan_close(sc[j]);
			sc[j] = NULL;
			left--;
		}
	}
	for (j = 0; j < n; j++)
		if (sc[j])
			tdbc_scan_close(sc[j]);
	return rc ? -1 : 0;
}

static int map_count(void *arg, const void *k, size_t kl, const void *v,
		     size_t vl, uint64_t version)
{
	(void)k, (void)kl, (void)version;
	*(uint64_t *)arg += vl ? *(const uint8_t *)v : 0;
	return 0;
}

/* The map, walked whole once before the barrier (a record's first byte
 * read), as LMDB's workers walk their database: the timed ranges do not
 * pay the first touch of each page. */
static int open_ord_map_warm(unsigned int p, void **out, char *msg)
{
	struct tdbc_range all = { 0 };
	struct tdb_h *h;
	uint64_t sum = 0;
	int rc = open_ord_map(p, out, msg);

	if (rc)
		return rc;
	h = *out;
	rc = tdbc_map_range(h->t, &all, 0, map_count, &sum);
	if (rc) {
		msgf(msg, "tdbc_map_range over the whole table: %s: %s",
		     tdbc_strerror(rc), tdbc_errmsg(h->c));
		tdb_close_h(h);
		return -1;
	}
	return 0;
}

/* Zero-copy in the client's map: tdbc_map_range's callback sees each
 * record in place. */
static int tdb_range_map(void *hv, const char *from, uint32_t s,
			 unsigned int len, char *msg)
{
	struct tdb_h *h = hv;
	struct tdbc_range r = { .from = from, .from_len = KLEN };
	int rc;

	h->want = s;
	h->got = 0;
	h->msg = msg;
	rc = tdbc_map_range(h->t, &r, len, map_rec, h);
	if (rc < 0 || h->got != len) {
		if (!*msg)
			msgf(msg, "tdbc_map_range: %s after %u of %u records",
			     rc < 0 ? tdbc_strerror(rc) : "the end", h->got,
			     len);
		return -1;
	}
	return 0;
}
#endif

/* === the engine in this process ======================================== */
static struct tdbe_engine *eng;
static struct tdbe_table *eng_ord;      /* random order, for the view */
static uint32_t eng_extents;

struct mem_fig {
	struct tdbe_table_stat st;
	double load_s;          /* the inserts */
	double replace_s;       /* as many puts of random present keys */
};
static struct mem_fig mem[3];           /* ord random, ord key order, hash */
static const char *mem_name(int i)
{
	if (i == 1)
		return "ordered, key order";
	if (o.key_order)
		return i ? "hash, key order" : "ordered, key order (-k)";
	return i ? "hash, random order" : "ordered, random order";
}

/* A table of the engine loaded with every key (in key order or the load
 * order); f: its figures after the inserts and the time of as many
 * replaces after them (no replaces without f).  Kept open in *keep, else
 * dropped. */
static int eng_load(const char *name, bool ordered, bool key_order,
		    struct mem_fig *f, struct tdbe_table **keep, char *msg)
{
	uint64_t ext = ((uint64_t)o.keys * (KLEN + opt.vsize + 128) * 2 +
			EXT - 1) / EXT;
	struct tdbe_table_opts to = {
		.max_extents = ext < 64 ? 64 : ext > TDBE_EXTENTS_MAX ?
			TDBE_EXTENTS_MAX : (unsigned int)ext,
		.flags = ordered ? TDBE_TABLE_ORDERED : 0,
	};
	struct tdbe_extack ext_ = { 0 };
	struct tdbe_table *t = NULL;
	uint8_t v[256];
	double t0 = now();
	int err = tdbe_table_create(eng, name, &to, &ext_);

	if (!err)
		err = tdbe_table_open(eng, name, &t, &ext_);
	for (uint32_t j = 0; !err && j < o.keys; j++) {
		uint32_t i = key_order ? j : perm[j];

		value_make(v, i, 1);
		err = tdbe_put(t, key_at(i), KLEN, v, opt.vsize, 0, &ext_);
	}
	if (f)
		f->load_s = now() - t0;
	if (!err && f)
		tdbe_table_stat(t, &f->st);     /* before the replaces */
	t0 = now();
	for (uint32_t j = 0, i; !err && f && j < o.keys; j++) {
		uint64_t seed = SEED ^ j;

		i = below(&seed, o.keys);
		value_make(v, i, 2);
		err = tdbe_put(t, key_at(i), KLEN, v, opt.vsize, 0, &ext_);
	}
	if (f)
		f->replace_s = now() - t0;
	if (!err && ordered && !tdbe_table_ordered(t)) {
		msgf(msg, "engine table %s: created ordered, "
		     "tdbe_table_ordered says it is not", name);
		err = -1;
	}
	if (err) {
		if (!*msg)
			msgf(msg, "engine table %s: %s%s%s", name,
			     tdbe_strerror(err), ext_.msg ? ": " : "",
			     ext_.msg ? ext_.msg : "");
	} else if (f && f->st.records != o.keys) {
		msgf(msg, "engine table %s holds %" PRIu64 " records after "
		     "loading %u", name, f->st.records, o.keys);
		err = -1;
	}
	if (t && keep && !err)
		*keep = t;
	else if (t)
		tdbe_table_close(t);
	if (!keep || err)
		tdbe_table_drop(eng, name, NULL);
	return err ? -1 : 0;
}

static int engine_start(char *msg)
{
	int err;

	eng = tdbe_engine_new(&err);
	if (!eng) {
		msgf(msg, "tdbe_engine_new: %s", tdbe_strerror(err));
		return -1;
	}
	/* The memory part's tables, dropped after; then the view's, loaded
	 * as tdbd's table is (no replaces after the inserts). */
	if (o.part_mem &&
	    (eng_load("ord.keyorder", true, true, &mem[1], NULL, msg) ||
	     eng_load("hash", false, false, &mem[2], NULL, msg) ||
	     eng_load("ord", true, false, &mem[0], NULL, msg)))
		return -1;
	if (o.part_range && eng_load("view", true, false, NULL, &eng_ord, msg))
		return -1;
	if (!o.part_range)
		return 0;
	{
		struct tdbe_table_stat st;

		tdbe_table_stat(eng_ord, &st);
		eng_extents = st.extents;
		if (st.records != o.keys) {
			msgf(msg, "engine table view holds %" PRIu64
			     " records after loading %u", st.records, o.keys);
			return -1;
		}
	}
	return 0;
}

struct view_h {
	const void *ext[TDBE_EXTENTS_MAX];
	struct tdbe_view v;
	void *base;
	size_t len;
};

static void view_close(void *hv)
{
	struct view_h *h = hv;

	if (h->base)
		munmap(h->base, h->len);
	free(h);
}

/* A read-only map of the table's memfd, as a client maps it. */
static int view_open(unsigned int p, void **out, char *msg)
{
	struct view_h *h = calloc(1, sizeof(*h));
	struct tdbe_extack ext = { 0 };
	int fd = tdbe_table_fd(eng_ord);

	(void)p;
	if (!h || fd < 0) {
		msgf(msg, h ? "the engine table has no fd" : "out of memory");
		free(h);
		return -1;
	}
	h->len = (size_t)eng_extents * EXT;
	h->base = mmap(NULL, h->len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
		       0);
	if (h->base == MAP_FAILED) {
		h->base = NULL;
		msgf(msg, "mmap of the table: %s", strerror(errno));
		view_close(h);
		return -1;
	}
	for (uint32_t i = 0; i < eng_extents; i++)
		h->ext[i] = (const char *)h->base + (size_t)i * EXT;
	h->v.ext = h->ext;
	h->v.nextents = eng_extents;
	if (tdbe_view_check(&h->v, &ext)) {
		msgf(msg, "tdbe_view_check: %s", ext.msg ? ext.msg : "?");
		view_close(h);
		return -1;
	}
	*out = h;
	return 0;
}

static int view_range(void *hv, const char *from, uint32_t s,
		      unsigned int len, char *msg)
{
	struct view_h *h = hv;
	struct tdbe_range r = { .from = from, .from_len = KLEN };
	struct tdbe_view_iter it;
	const void *k, *v;
	size_t kl, vl;
	uint64_t ver;
	int rc = tdbe_view_range(&h->v, &r, &it);

	for (unsigned int n = 0; !rc && n < len; n++) {
		rc = tdbe_view_next(&it, &k, &kl, &v, &vl, &ver);
		if (rc == 1)
			rc = check_rec(s + n, k, kl, v, vl, msg) ? -1000 : 0;
		else if (!rc)
			rc = -ENODATA;
	}
	if (rc == -1000)
		return -1;
	if (rc) {
		msgf(msg, "tdbe_view_range/next: %s", tdbe_strerror(rc));
		return -1;
	}
	return 0;
}

/* --- the table of systems ---------------------------------------------- */
enum { R_RINGS, R_SUBMIT, R_MAP, R_VIEW, R_LMDB, R_REDIS, R_N };
static struct sys rsys[R_N] = {
	[R_RINGS] = { .name = "tdb rings", .call = "tdbc_scan_range, NO_MAP",
		      .built = HAVE_TDBC_RANGE, .open = open_ord_rings,
#if HAVE_TDBC_RANGE
		      .range = tdb_range_rings,
#endif
		      .close = tdb_close_h },
	[R_SUBMIT] = { .name = "tdb submit",
		       .call = "tdbc_scan_submit_range x8",
		       .built = HAVE_TDBC_RANGE, .open = open_ord_rings,
#if HAVE_TDBC_RANGE
		       .pipe = PIPE_MAX, .range_many = tdb_range_submit,
#endif
		       .close = tdb_close_h },
	[R_MAP] = { .name = "tdb map", .call = "tdbc_map_range (zero-copy)",
		    .built = HAVE_TDBC_RANGE,
#if HAVE_TDBC_RANGE
		    .open = open_ord_map_warm, .range = tdb_range_map,
#endif
		    .close = tdb_close_h },
	[R_VIEW] = { .name = "engine view", .call = "tdbe_view_range, no "
		     "client", .built = true, .open = view_open,
		     .range = view_range, .close = view_close },
	[R_LMDB] = { .name = "LMDB", .call = "SET_RANGE + NEXT, read txn",
		     .built = true, .open = lmdb_open, .range = lmdb_range,
		     .close = lmdb_close },
	[R_REDIS] = { .name = "Redis", .call = "ZRANGEBYLEX ... LIMIT 0 L",
		      .built = true, .open = redis_open, .range = redis_range,
		      .close = redis_close },
};

/* Point cells: systems x operations. */
enum { P_ORD, P_HASH, P_LMDB, P_N };
enum { PO_GET_RINGS, PO_GET_MAP, PO_PUT, PO_N };
static const char *const po_name[PO_N] = {
	"get, rings", "get, map", "put"
};
static struct sys psys[P_N][PO_N] = {
	[P_ORD] = {
		{ .name = "tdb ordered", .call = "tdbc_get, NO_MAP",
		  .built = HAVE_TDBC_RANGE, .open = open_ord_rings,
		  .get = tdb_get, .close = tdb_close_h },
		{ .name = "tdb ordered", .call = "tdbc_get (mapped)",
		  .built = HAVE_TDBC_RANGE, .open = open_ord_map,
		  .get = tdb_get, .close = tdb_close_h },
		{ .name = "tdb ordered", .call = "tdbc_put",
		  .built = HAVE_TDBC_RANGE, .open = open_ord_rings,
		  .put = tdb_put, .close = tdb_close_h },
	},
	[P_HASH] = {
		{ .name = "tdb hash", .call = "tdbc_get, NO_MAP",
		  .built = true, .open = open_hash_rings, .get = tdb_get,
		  .close = tdb_close_h },
		{ .name = "tdb hash", .call = "tdbc_get (mapped)",
		  .built = true, .open = open_hash_map, .get = tdb_get,
		  .close = tdb_close_h },
		{ .name = "tdb hash", .call = "tdbc_put", .built = true,
		  .open = open_hash_rings, .put = tdb_put,
		  .close = tdb_close_h },
	},
	[P_LMDB] = {
		{ .name = "LMDB", .call = "1 read txn per get", .built = true,
		  .open = lmdb_open, .get = lmdb_get, .close = lmdb_close },
		{ .name = "", .built = false },
		{ .name = "LMDB", .call = "1 write txn per put", .built = true,
		  .open = lmdb_open, .put = lmdb_put, .close = lmdb_close },
	},
};

/* === cells ============================================================= */
struct slot {
	double t0, t1;
	int failed;
	char msg[MSG_LEN];
};
static struct slot *slots;

/* What a cell's workers do: ranges of len keys, or a point op. */
struct cell {
	const struct sys *s;
	bool range;
	unsigned int len;       /* range */
	int pop;                /* point: PO_* */
	uint32_t ops;           /* per process */
	uint32_t gen;           /* puts */
	uint64_t seed;          /* the cell's, the same for every system */
};

static __attribute__((noreturn))
void worker(const struct cell *c, unsigned int proc, int ready, int go)
{
	struct slot *sl = &slots[proc];
	uint64_t seed = c->seed ^ ((uint64_t)proc << 40);
	uint32_t span = c->range ? o.keys - c->len + 1 : o.keys;
	void *h = NULL;
	char ch = 0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rc = c->s->open(proc, &h, sl->msg);
	if (write(ready, &ch, 1) != 1)
		rc = -1;
	close(ready);
	if (rc) {
		sl->failed = 1;
		_exit(1);
	}
	while (read(go, &ch, 1) < 0 && errno == EINTR)
		;
	sl->t0 = now();
	for (uint32_t k = 0; c->range && c->s->pipe > 1 && k < c->ops;) {
		char from[PIPE_MAX][KLEN];
		uint32_t st[PIPE_MAX];
		unsigned int n = 0;

		for (; n < c->s->pipe && k < c->ops; n++, k++) {
			st[n] = below(&seed, span);
			key_num(from[n], 2 * (uint64_t)st[n] -
				((k & 1) && st[n]));
		}
		if (c->s->range_many(h, (const char (*)[KLEN])from, st, n,
				     c->len, sl->msg)) {
			sl->failed = 1;
			_exit(1);
		}
	}
	for (uint32_t k = 0; !(c->range && c->s->pipe > 1) && k < c->ops;
	     k++) {
		uint32_t i = below(&seed, span);

		if (c->range) {
			char from[KLEN];
			/* every other range from the absent key just
			 * before key i (odd), else from key i */
			uint64_t num = 2 * (uint64_t)i - ((k & 1) && i);

			key_num(from, num);
			rc = c->s->range(h, from, i, c->len, sl->msg);
		} else if (c->pop == PO_PUT) {
			rc = c->s->put(h, i, c->gen, sl->msg);
		} else {
			rc = c->s->get(h, i, sl->msg);
		}
		if (rc) {
			sl->failed = 1;
			_exit(1);
		}
	}
	sl->t1 = now();
	c->s->close(h);
	_exit(0);
}

/* Operations per second of the cell. */
static double run_cell(const struct cell *c, unsigned int procs)
{
	double first = 1e300, last = 0;
	int ready[2], go[2];
	char ch;

	memset(slots, 0, sizeof(*slots) * procs);
	if (pipe2(ready, O_CLOEXEC) || pipe2(go, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	for (unsigned int i = 0; i < procs; i++) {
		workers[i] = fork();
		if (workers[i] < 0)
			die("fork: %s", strerror(errno));
		if (!workers[i]) {
			close(ready[0]);
			close(go[1]);
			worker(c, i, ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (unsigned int i = 0; i < procs; i++)
		if (read(ready[0], &ch, 1) != 1 && errno != EINTR)
			break;
	close(ready[0]);
	close(go[1]);
	for (unsigned int i = 0; i < procs; i++) {
		int st;

		while (waitpid(workers[i], &st, 0) < 0 && errno == EINTR)
			;
		workers[i] = 0;
		if (slots[i].failed)
			die("%s (%s), %u procs, process %u: %s", c->s->name,
			    c->s->call, procs, i, slots[i].msg);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("%s (%s): worker %u ended with status %#x",
			    c->s->name, c->s->call, i, st);
	}
	for (unsigned int i = 0; i < procs; i++) {
		first = slots[i].t0 < first ? slots[i].t0 : first;
		last = slots[i].t1 > last ? slots[i].t1 : last;
	}
	return (double)c->ops * procs / (last - first);
}

/* --- figures ------------------------------------------------------------ */
#define RUNS_CAP 15u
static double rres[R_N][LENS_MAX][4][RUNS_CAP];       /* ranges/s */
static double pres[P_N][PO_N][4][RUNS_CAP];           /* ops/s */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *r)
{
	double v[RUNS_CAP];
	unsigned int n = 0;

	for (unsigned int i = 0; i < o.runs; i++)
		if (r[i] > 0)
			v[n++] = r[i];
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint32_t range_ops(unsigned int len)
{
	uint64_t n = o.budget / len;

	return n < 20 ? 20 : n > 1000000 ? 1000000 : (uint32_t)n;
}

static bool usable(const struct sys *s)
{
	return s->built && !s->ready;
}

/* The median over runs of each run's ratio a/b (a run's two cells ran
 * one after the other: the machine's drift between runs cancels out);
 * 0 if no run has both. */
static double rmed(const double *a, const double *b)
{
	double q[RUNS_CAP];

	for (unsigned int i = 0; i < o.runs; i++)
		q[i] = a[i] > 0 && b[i] > 0 ? a[i] / b[i] : 0;
	return median(q);
}

/* Each run's ratio a/b. */
static void each_run(const double *a, const double *b)
{
	printf("  runs");
	for (unsigned int i = 0; i < o.runs; i++)
		printf(" %.2f", a[i] > 0 && b[i] > 0 ? a[i] / b[i] : 0);
}

static void ratio(double a, double b)
{
	if (a > 0 && b > 0)
		printf(" %8.2fx", a / b);
	else
		printf(" %9s", "-");
}

static unsigned int missing_ratios;

static void print_ranges(void)
{
	static const int tdbs[4] = { R_MAP, R_VIEW, R_RINGS, R_SUBMIT };

	printf("\nranges: L keys from a random start (a key, or every other "
	       "range the absent key\nbefore it), each key and value "
	       "checked; medians of %u run%s\n", o.runs,
	       o.runs == 1 ? "" : "s");
	printf("%-12s %-30s %5s %5s %12s %13s\n", "system", "call", "procs",
	       "L", "ranges/s", "keys/s");
	for (unsigned int pi = 0; pi < o.nprocs; pi++)
		for (unsigned int li = 0; li < o.nlens; li++) {
			for (int s = 0; s < R_N; s++) {
				double m = median(rres[s][li][pi]);

				if (!usable(&rsys[s]))
					continue;
				printf("%-12s %-30s %5u %5u %12.0f %13.0f\n",
				       rsys[s].name, rsys[s].call,
				       o.procs[pi], o.lens[li], m,
				       m * o.lens[li]);
			}
			printf("\n");
		}
	printf("ratios of ranges/s (the same as of keys/s): the median of "
	       "the runs' ratios;\nruns: each run's ratio to LMDB\n");
	printf("%-5s %5s %-12s %9s %9s\n", "procs", "L", "tdb", "/LMDB",
	       "/Redis");
	for (unsigned int pi = 0; pi < o.nprocs; pi++)
		for (unsigned int li = 0; li < o.nlens; li++)
			for (int k = 0; k < 4; k++) {
				int s = tdbs[k];
				double l = rmed(rres[s][li][pi],
						rres[R_LMDB][li][pi]);
				double r = rmed(rres[s][li][pi],
						rres[R_REDIS][li][pi]);

				if (!usable(&rsys[s]))
					continue;
				printf("ratio %5u %5u %-12s", o.procs[pi],
				       o.lens[li], rsys[s].name);
				ratio(l, 1);
				ratio(r, 1);
				if (o.runs > 1)
					each_run(rres[s][li][pi],
						 rres[R_LMDB][li][pi]);
				printf("\n");
				missing_ratios += !(l > 0) + !(r > 0);
			}
	/* The goal: zero-copy at least 2x LMDB's cursor. */
	{
		int s = usable(&rsys[R_MAP]) ? R_MAP : R_VIEW;
		double lo = 1e300, hi = 0;

		for (unsigned int pi = 0; pi < o.nprocs; pi++)
			for (unsigned int li = 0; li < o.nlens; li++) {
				double q = rmed(rres[s][li][pi],
						rres[R_LMDB][li][pi]);

				if (q > 0) {
					lo = q < lo ? q : lo;
					hi = q > hi ? q : hi;
				}
			}
		if (hi > 0)
			printf("goal: zero-copy ranges (%s) at least 2x "
			       "LMDB's cursor: %s (%.2fx to %.2fx)\n",
			       rsys[s].name, lo >= 2 ? "MET" : "MISSED", lo,
			       hi);
	}
}

static void print_points(void)
{
	printf("\npoint get and put of random keys (every value read "
	       "checked); medians of %u run%s\n", o.runs,
	       o.runs == 1 ? "" : "s");
	printf("%-12s %-22s %5s %12s\n", "system", "call", "procs", "ops/s");
	for (unsigned int pi = 0; pi < o.nprocs; pi++)
		for (int op = 0; op < PO_N; op++) {
			for (int s = 0; s < P_N; s++)
				if (usable(&psys[s][op]))
					printf("%-12s %-22s %5u %12.0f\n",
					       psys[s][op].name,
					       psys[s][op].call, o.procs[pi],
					       median(pres[s][op][pi]));
		}
	printf("ratios of ops/s: the median of the runs' ratios; runs: each "
	       "run's ordered/hash\n");
	printf("%-5s %-11s %14s %14s %14s\n", "procs", "op", "ordered/hash",
	       "ordered/LMDB", "hash/LMDB");
	for (unsigned int pi = 0; pi < o.nprocs; pi++)
		for (int op = 0; op < PO_N; op++) {
			const double *lr = pres[P_LMDB][op == PO_GET_MAP ?
						PO_GET_RINGS : op][pi];
			double oh = rmed(pres[P_ORD][op][pi],
					 pres[P_HASH][op][pi]);
			double ol = rmed(pres[P_ORD][op][pi], lr);
			double hl = rmed(pres[P_HASH][op][pi], lr);

			bool ord = usable(&psys[P_ORD][op]);

			printf("ratio %5u %-11s", o.procs[pi], po_name[op]);
			printf("      ");
			ratio(oh, 1);
			printf("      ");
			ratio(ol, 1);
			printf("      ");
			ratio(hl, 1);
			if (o.runs > 1 && ord)
				each_run(pres[P_ORD][op][pi],
					 pres[P_HASH][op][pi]);
			printf("\n");
			missing_ratios += (ord && !(oh > 0)) +
				(ord && !(ol > 0)) + !(hl > 0);
		}
}

static void print_memory(void)
{
	const struct tdbe_table_stat *h = &mem[2].st;

	printf("\nmemory of the ordered index: %u keys of %u B, values of %u "
	       "B (the engine's tables in this\nprocess, tdbe_table_stat "
	       "after the inserts; nodes of %u B); ins s: the %u inserts\n"
	       "(tdbe_put), rep s: as many puts of random present keys "
	       "after them, one run\n", o.keys, KLEN, opt.vsize,
	       TDBB_NODE_BYTES, o.keys);
	printf("%-24s %6s %6s %8s %7s %9s %7s %7s\n", "table", "ins s",
	       "rep s", "nodes", "nodes", "alloc", "alloc", "- hash");
	printf("%-24s %6s %6s %8s %7s %9s %7s %7s\n", "", "", "", "",
	       "B/key", "MiB", "B/key", "B/key");
	for (int i = 0; i < 3; i++) {
		const struct tdbe_table_stat *s = &mem[i].st;
		double nb = (double)s->order_nodes * TDBB_NODE_BYTES /
			    (double)o.keys;
		double ab = (double)s->bytes_allocated / (double)o.keys;

		printf("%-24s %6.2f %6.2f %8" PRIu64 " %7.1f %9.1f %7.1f "
		       "%+7.1f\n", mem_name(i), mem[i].load_s,
		       mem[i].replace_s,
		       s->order_nodes, nb, s->bytes_allocated / 1048576.0,
		       ab, ab - (double)h->bytes_allocated / o.keys);
	}
	for (int i = 0; i < 2; i++) {
		double d = ((double)mem[i].st.bytes_allocated -
			    (double)h->bytes_allocated) / o.keys;

		printf("goal: the ordered index at most 16 B a key beyond the "
		       "hash table's (%s): %s (%+.1f B)\n", mem_name(i),
		       d <= 16 ? "MET" : "MISSED", d);
	}
	if (tdbd_st[0].records && tdbd_st[1].records)
		printf("tdbd's tables after the load: ordered %.1f MiB, hash "
		       "%.1f MiB allocated (%+.1f B a key)\n",
		       tdbd_st[0].bytes_allocated / 1048576.0,
		       tdbd_st[1].bytes_allocated / 1048576.0,
		       ((double)tdbd_st[0].bytes_allocated -
			(double)tdbd_st[1].bytes_allocated) / o.keys);
}

/* --- options ------------------------------------------------------------ */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-range [options]\n"
"Ordered tables (issue 28): range scans of tdb (rings, zero-copy map, the\n"
"engine's view) against LMDB cursors and Redis ZRANGEBYLEX; point get/put\n"
"on an ordered table vs a hash table vs LMDB; the ordered index's memory.\n"
"\n"
"  -n, --keys N       keys everywhere (default 1000000)\n"
"  -l, --lens LIST    range lengths (default 10,100,1000)\n"
"  -p, --procs LIST   process counts (default 1,8)\n"
"  -r, --runs R       runs; medians are reported (default 3, at most %u)\n"
"  -b, --budget N     keys per process per range cell (ranges: N / L,\n"
"                     at least 20; default 300000)\n"
"  -o, --ops N        point ops per process per cell (default 50000)\n"
"  -P, --part LIST    memory,range,point (default all)\n"
"  -k, --load-order O random (default) or key: the order tdbd, LMDB,\n"
"                     Redis and the view's table are loaded in (the\n"
"                     memory part loads both orders anyway)\n"
"  -T, --tdbd PATH    the tdbd to start (default $TDBD, the build tree's)\n"
"  -R, --redis PATH   the redis-server (default from $PATH)\n"
"  -d, --dir DIR      where the temp dir goes (default $TMPDIR or /tmp)\n"
"  -S, --strict       every system must run and every ratio be printed:\n"
"                     exit 77 without tdbd or redis-server, else 1\n"
"  -v, --verbose      each cell's figure on stderr\n"
"  -h, --help         this text\n", RUNS_CAP);
}

static uint64_t num(const char *s, const char *what, uint64_t min,
		    uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end != s && (*end == 'k' || *end == 'K'))
		v *= 1000, end++;
	else if (end != s && (*end == 'm' || *end == 'M'))
		v *= 1000000, end++;
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "tdb-bench-range: bad %s '%s' (%" PRIu64
			"..%" PRIu64 ")\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static unsigned int list(const char *s, const char *what, unsigned int *v,
			 unsigned int cap, unsigned int max)
{
	char buf[128], *save = NULL;
	unsigned int n = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (n == cap) {
			fprintf(stderr, "tdb-bench-range: at most %u %s\n",
				cap, what);
			exit(2);
		}
		v[n++] = (unsigned int)num(t, what, 1, max);
	}
	if (!n) {
		fprintf(stderr, "tdb-bench-range: empty %s list\n", what);
		exit(2);
	}
	return n;
}

static void parts(const char *s)
{
	char buf[64], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	o.part_mem = o.part_range = o.part_point = false;
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "memory"))
			o.part_mem = true;
		else if (!strcmp(t, "range"))
			o.part_range = true;
		else if (!strcmp(t, "point"))
			o.part_point = true;
		else {
			fprintf(stderr, "tdb-bench-range: unknown part '%s' "
				"(memory, range, point)\n", t);
			exit(2);
		}
	}
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "keys", required_argument, NULL, 'n' },
		{ "lens", required_argument, NULL, 'l' },
		{ "procs", required_argument, NULL, 'p' },
		{ "runs", required_argument, NULL, 'r' },
		{ "budget", required_argument, NULL, 'b' },
		{ "ops", required_argument, NULL, 'o' },
		{ "part", required_argument, NULL, 'P' },
		{ "load-order", required_argument, NULL, 'k' },
		{ "tdbd", required_argument, NULL, 'T' },
		{ "redis", required_argument, NULL, 'R' },
		{ "dir", required_argument, NULL, 'd' },
		{ "strict", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int maxlen = 0;
	int c;

	while ((c = getopt_long(argc, argv, "n:l:p:r:b:o:P:k:T:R:d:Svh", lo,
				NULL)) != -1) {
		switch (c) {
		case 'n':
			o.keys = (uint32_t)num(optarg, "key count", 2,
					       100000000);
			break;
		case 'l':
			o.nlens = list(optarg, "range length", o.lens,
				       LENS_MAX, 100000);
			break;
		case 'p':
			o.nprocs = list(optarg, "procs", o.procs, 4,
					PROCS_MAX);
			break;
		case 'r':
			o.runs = (unsigned int)num(optarg, "run count", 1,
						   RUNS_CAP);
			break;
		case 'b':
			o.budget = num(optarg, "budget", 1, UINT32_MAX);
			break;
		case 'o':
			o.point_ops = (uint32_t)num(optarg, "op count", 1,
						    UINT32_MAX);
			break;
		case 'P': parts(optarg); break;
		case 'k':
			if (strcmp(optarg, "random") && strcmp(optarg, "key")) {
				fprintf(stderr, "tdb-bench-range: --load-order "
					"%s: random or key\n", optarg);
				exit(2);
			}
			o.key_order = !strcmp(optarg, "key");
			break;
		case 'T': o.tdbd = optarg; break;
		case 'R': o.redis = optarg; break;
		case 'd': o.dir = optarg; break;
		case 'S': o.strict = true; break;
		case 'v': o.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tdb-bench-range: unexpected argument '%s'\n",
			argv[optind]);
		exit(2);
	}
	for (unsigned int i = 0; i < o.nlens; i++)
		maxlen = o.lens[i] > maxlen ? o.lens[i] : maxlen;
	if (o.part_range && maxlen > o.keys) {
		fprintf(stderr, "tdb-bench-range: a range of %u keys in %u "
			"keys\n", maxlen, o.keys);
		exit(2);
	}
}

/* --- main --------------------------------------------------------------- */
static void make_data(void)
{
	uint64_t seed = SEED;

	kbuf = malloc((size_t)o.keys * KLEN);
	perm = malloc(sizeof(*perm) * o.keys);
	if (!kbuf || !perm)
		die("out of memory for %u keys", o.keys);
	for (uint32_t i = 0; i < o.keys; i++) {
		key_num(kbuf + (size_t)i * KLEN, 2 * (uint64_t)i);
		perm[i] = i;
	}
	for (uint32_t i = o.keys - 1; i > 0 && !o.key_order; i--) {
		/* Fisher-Yates */
		uint32_t j = below(&seed, i + 1), t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

/* Starts what the parts need; marks the systems that did not start. */
static void start_all(void)
{
	char msg[MSG_LEN] = "";
	int rc;
	double t0;

	if (o.part_mem || o.part_range) {
		t0 = now();
		if (engine_start(msg))
			die("%s", msg);
		fprintf(stderr, "  engine: tables loaded in %.1f s\n",
			now() - t0);
	}
	if (o.part_range || o.part_point) {
		t0 = now();
		msg[0] = 0;
		if (lmdb_start(msg))
			die("%s", msg);
		fprintf(stderr, "  LMDB: loaded in %.1f s\n", now() - t0);
		t0 = now();
		msg[0] = 0;
		rc = tdbd_start(msg);
		if (rc < 0 || (rc && o.strict && HAVE_TDBC_RANGE))
			die("tdbd: %s", msg);
		fprintf(stderr, "  tdbd: %s in %.1f s\n", rc ? msg : "loaded",
			now() - t0);
		if (rc) {
			for (int s = 0; s < P_N; s++)
				for (int op = 0; op < PO_N; op++)
					if (s != P_LMDB && (rc > 0 ? s ==
							    P_ORD : true)) {
						psys[s][op].ready = rc;
						snprintf(psys[s][op].why,
							 MSG_LEN, "%s", msg);
					}
			rsys[R_RINGS].ready = rsys[R_MAP].ready = rc;
			rsys[R_SUBMIT].ready = rc;
		}
		if (rc > 0 && o.strict) {
			fprintf(stderr, "tdb-bench-range: skipped: %s\n",
				msg);
			cleanup();
			exit(77);
		}
	}
	if (o.part_range) {
		t0 = now();
		msg[0] = 0;
		rc = redis_start(msg);
		if (rc < 0)
			die("Redis: %s", msg);
		if (rc) {
			if (o.strict) {
				fprintf(stderr, "tdb-bench-range: skipped: "
					"%s\n", msg);
				cleanup();
				exit(77);
			}
			rsys[R_REDIS].ready = 1;
			snprintf(rsys[R_REDIS].why, MSG_LEN, "%s", msg);
		}
		fprintf(stderr, "  Redis: %s in %.1f s\n", rc ? msg : "loaded",
			now() - t0);
	}
}

static void header(void)
{
	char cpu[256];
	struct utsname u;
	struct cpu_sample a, b;
	double steal, oth;
	int maj, min, pat;

	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	mdb_version(&maj, &min, &pat);
	printf("tdb-bench-range: ordered tables, ranges and points, against "
	       "LMDB %d.%d.%d and Redis\n", maj, min, pat);
	printf("  machine   %s, %ld CPUs online, kernel %s\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), u.release);
	cpu_sample(&a);
	usleep(300000);
	cpu_sample(&b);
	oth = cpu_others(&a, &b, &steal);
	if (oth >= 0)
		printf("  others    other processes used %.0f%% of the CPUs "
		       "just before the start\n", oth * 100);
	printf("  build     gcc %s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimised"
#else
	       ", NOT optimised: the figures mean little"
#endif
	       );
	printf("  data      %u keys \"key:%%012llu\" of 0, 2, 4, ... (16 B), "
	       "values of %u B, loaded in\n            %s everywhere\n",
	       o.keys, opt.vsize, o.key_order ? "key order (--load-order "
	       "key)" : "one random order");
	printf("  tdb       tdbd --config /dev/null --sync none (%s); tables "
	       "\"ord\" (ordered) and\n            \"hash\"; the engine's "
	       "view: an ordered table in this process, its memfd\n"
	       "            mapped read-only by each worker\n",
	       tdbd_pid ? "started" : "not started");
	printf("  LMDB      MDB_NOSYNC, each worker walks the whole database "
	       "once before the start\n");
	printf("  Redis     a sorted set, members \"key\\0value\" at score 0: "
	       "one ZRANGEBYLEX a range\n            returns keys and "
	       "values\n");
	for (int s = 0; s < R_N && o.part_range; s++)
		if (!usable(&rsys[s]))
			printf("  %-9s skipped: %s\n", rsys[s].name,
			       !rsys[s].built ? "not built: this tree's "
			       "include/tdb/client.h has no range API" :
			       rsys[s].why);
	fflush(stdout);
}

static void measure(void)
{
	uint32_t gen = 1;

	for (unsigned int run = 0; run < o.runs; run++) {
		for (unsigned int pi = 0; pi < o.nprocs && o.part_range; pi++)
			for (unsigned int li = 0; li < o.nlens; li++)
				for (int k = 0; k < R_N; k++) {
					int s = (k + (int)run) % R_N;
					struct cell c = {
						.s = &rsys[s], .range = true,
						.len = o.lens[li],
						.ops = range_ops(o.lens[li]),
						.seed = SEED ^ ((uint64_t)run
							<< 48) ^ ((uint64_t)li
							<< 32) ^ pi,
					};

					if (!usable(c.s))
						continue;
					rres[s][li][pi][run] =
						run_cell(&c, o.procs[pi]);
					if (o.verbose)
						fprintf(stderr, "  run %u %s "
							"procs %u L %u: %.0f "
							"ranges/s\n", run + 1,
							c.s->name, o.procs[pi],
							c.len,
							rres[s][li][pi][run]);
				}
		for (unsigned int pi = 0; pi < o.nprocs && o.part_point; pi++)
			for (int op = 0; op < PO_N; op++)
				for (int k = 0; k < P_N; k++) {
					int s = (k + (int)run) % P_N;
					struct cell c = {
						.s = &psys[s][op], .pop = op,
						.ops = o.point_ops,
						.gen = ++gen,
						.seed = SEED ^ ((uint64_t)run
							<< 48) ^ ((uint64_t)op
							<< 36) ^ pi,
					};

					if (!usable(c.s))
						continue;
					pres[s][op][pi][run] =
						run_cell(&c, o.procs[pi]);
					if (o.verbose)
						fprintf(stderr, "  run %u %s "
							"%s procs %u: %.0f "
							"ops/s\n", run + 1,
							c.s->name, c.s->call,
							o.procs[pi],
							pres[s][op][pi][run]);
				}
		fprintf(stderr, "  run %u done\n", run + 1);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *base;
	double t0 = now();

	parse_args(argc, argv);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	base = o.dir ? o.dir : getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(tmpdir, sizeof(tmpdir), "%s/tdb-bench-range.XXXXXX", base);
	if (strlen(tmpdir) > 80 || !mkdtemp(tmpdir)) {
		tmpdir[0] = 0;
		die("cannot make a temp dir under %s (or the path is too "
		    "long for a socket)", base);
	}
	slots = mmap(NULL, sizeof(*slots) * PROCS_MAX, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		die("out of memory for the workers' slots");
	make_data();
	fprintf(stderr, "tdb-bench-range: loading %u keys\n", o.keys);
	start_all();
	/* --strict: every system built in must have started. */
	if (o.strict)
		for (int s = 0; s < R_N && o.part_range; s++)
			if (rsys[s].built && rsys[s].ready)
				die("--strict: %s did not start: %s",
				    rsys[s].name, rsys[s].why);
	header();
	measure();
	if (o.part_mem)
		print_memory();
	if (o.part_range)
		print_ranges();
	if (o.part_point)
		print_points();
	printf("\ntotal %.0f s\n", now() - t0);
	cleanup();
	if (o.strict && missing_ratios)
		die("--strict: %u ratio(s) could not be computed",
		    missing_ratios);
	return 0;
}
