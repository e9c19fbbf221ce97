// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_evict.c - tdb-bench-evict: hit ratios of tdb's eviction (src/owner
 * /evict.c) against Redis's on the same trace and the same capacity.
 *
 * The trace: YCSB's scrambled zipfian (constant 0.99) over --keys keys,
 * --ops requests, used as a read-through cache: a GET, and on a miss a
 * SET of the key (--value bytes).  The first --warm percent of the
 * requests fill the cache and are not counted.  The hit ratio is
 * hits / counted GETs.
 *
 * The capacity: --cap percent of the keys, in records.  tdb: a table
 * with MAX_RECORDS = capacity and EVICT lru or lfu, the owner in this
 * process (tdbo_exec, no transport: a hit ratio does not depend on it;
 * every GET is owner-served, so every use counts).  Redis (redis-server
 * from $PATH or --redis, on a Unix socket, no persistence): maxmemory
 * set to what the same number of such keys took in a calibration run
 * (used_memory after writing `capacity` keys), policy allkeys-lru or
 * allkeys-lfu with its defaults (maxmemory-samples 5, lfu-log-factor
 * 10, lfu-decay-time 1); its key count at the end (DBSIZE) is printed
 * to show the capacities agree.  An exact LRU run in this process is
 * the reference for what sampling loses.
 *
 *   tdb-bench-evict [--keys N] [--ops N] [--cap PCT] [--warm PCT]
 *                   [--value BYTES] [--seed S] [--redis PATH] [--no-redis]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "owner.h"

static uint64_t nkeys = 100000, nops = 400000, seed = 42;
static unsigned int cap_pct = 10, warm_pct = 20, vsize = 100;
static const char *redis_bin = "redis-server";
static bool no_redis;

/* --- YCSB's scrambled zipfian ------------------------------------------- */

#define ZIPF_ITEMS 10000000000ull               /* YCSB's ITEM_COUNT */
#define ZIPF_ZETAN 26.46902820178302            /* its zeta(ITEM_COUNT) */
#define ZIPF_THETA 0.99

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static uint64_t fnv64(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	int i;

	for (i = 0; i < 8; i++) {
		h ^= v & 0xff;
		h *= 1099511628211ull;
		v >>= 8;
	}
	return h;
}

static uint64_t zipf_next(void)
{
	static double alpha, eta, zeta2;
	double u = uniform(), uz = u * ZIPF_ZETAN;
	uint64_t v;

	if (!alpha) {
		zeta2 = 1.0 + pow(0.5, ZIPF_THETA);
		alpha = 1.0 / (1.0 - ZIPF_THETA);
		eta = (1.0 - pow(2.0 / (double)ZIPF_ITEMS, 1.0 - ZIPF_THETA)) /
		      (1.0 - zeta2 / ZIPF_ZETAN);
	}
	if (uz < 1.0)
		v = 0;
	else if (uz < 1.0 + pow(0.5, ZIPF_THETA))
		v = 1;
	else
		v = (uint64_t)((double)ZIPF_ITEMS *
			       pow(eta * u - eta + 1.0, alpha));
	/* YCSB takes |hash| (a Java long) modulo the items */
	return (fnv64(v) & 0x7fffffffffffffffull) % nkeys;
}

static uint64_t *trace;

static void make_trace(void)
{
	uint64_t i;

	rng = seed * 2654435761u + 1;
	trace = malloc(sizeof(*trace) * nops);
	if (!trace)
		exit(1);
	for (i = 0; i < nops; i++)
		trace[i] = zipf_next();
}

static int keyname(char *out, uint64_t k)
{
	return snprintf(out, 32, "user%llu", (unsigned long long)k);
}

struct result {
	uint64_t hits, gets;
	double secs;
	uint64_t final_keys;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- exact LRU (the reference) ---------------------------------------- */

static struct result run_exact_lru(uint64_t cap)
{
	uint64_t *prev = calloc(nkeys, 8), *next = calloc(nkeys, 8);
	unsigned char *in = calloc(nkeys, 1);
	uint64_t head = UINT64_MAX, tail = UINT64_MAX, n = 0, i;
	uint64_t warm = nops * warm_pct / 100;
	struct result r = { 0 };
	double t0 = now_s();

	if (!prev || !next || !in)
		exit(1);
	for (i = 0; i < nops; i++) {
		uint64_t k = trace[i];

		if (i >= warm)
			r.gets++;
		if (in[k]) {
			if (i >= warm)
				r.hits++;
			if (k == head)
				continue;
			/* unlink */
			next[prev[k]] = next[k];
			if (next[k] != UINT64_MAX)
				prev[next[k]] = prev[k];
			else
				tail = prev[k];
		} else {
			if (n == cap) {         /* the least recent goes */
				uint64_t v = tail;

				in[v] = 0;
				tail = prev[v];
				if (tail != UINT64_MAX)
					next[tail] = UINT64_MAX;
				else
					head = UINT64_MAX;
				n--;
			}
			in[k] = 1;
			n++;
		}
		prev[k] = UINT64_MAX;
		next[k] = head;
		if (head != UINT64_MAX)
			prev[head] = k;
		head = k;
		if (tail == UINT64_MAX)
			tail = k;
	}
	r.secs = now_s() - t0;
	r.final_keys = n;
	free(prev);
	free(next);
	free(in);
	return r;
}

/* --- tdb: the owner in this process ----------------------------------- */

static unsigned char sinkbuf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));

static void *s_reserve(struct tdbo_sink *s, size_t len)
{
	(void)s;
	return len <= sizeof(sinkbuf) ? sinkbuf : NULL;
}

static void s_commit(struct tdbo_sink *s, void *p, size_t len)
{
	(void)s, (void)p, (void)len;
}

static int exec(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	static unsigned char buf[4096] __attribute__((aligned(8)));
	struct tdbo_sink k = { .reserve = s_reserve, .commit = s_commit,
			       .in_read_section = true };
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out res;
	long n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, in,
				 &ext);

	if (n < 0 || tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST, &m,
				     &ext))
		return -EINVAL;
	return tdbo_exec(c, &m, &k, &ext, &res);
}

static struct tdb_proto_msg msg(uint8_t cmd, const char *key)
{
	struct tdb_proto_msg m = { .cmd = cmd };

	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE);
	m.table = "cache";
	m.table_len = 5;
	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (uint32_t)strlen(key);
	}
	return m;
}

static struct result run_tdb(uint64_t cap, uint32_t policy)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_limits lim = {
		.default_mode = 0644, .feed_size = 1u << 16,
		.max_tables = 4, .max_txns = 4, .max_txn_ops = 64,
		.max_txn_bytes = 1u << 20, .max_snapshot_bytes = 1u << 20,
		.max_snapshot_memory = 1u << 20,
		.max_snapshot_memory_per_uid = 1u << 20,
	};
	struct tdbo_cred root = { 0, 0, 0, NULL };
	unsigned char *val = calloc(1, vsize);
	uint64_t warm = nops * warm_pct / 100, i;
	struct tdbo_client *c;
	struct tdbo_owner *o;
	struct tdb_proto_msg m;
	struct result r = { 0 };
	double t0;
	int err;

	o = tdbo_owner_new(&lim, &hooks, &err);
	if (!o || !val)
		exit(1);
	c = tdbo_client_new(o, &root, false, NULL, NULL, &err);
	m = msg(TDB_CMD_TABLE_CREATE, NULL);
	m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS) |
		   TDB_PROTO_BIT(TDB_A_EVICT);
	m.max_records = cap;
	m.evict = policy;
	if (!c || (err = exec(c, &m))) {
		fprintf(stderr, "tdb-bench-evict: create: %s\n",
			strerror(-err));
		exit(1);
	}
	t0 = now_s();
	for (i = 0; i < nops; i++) {
		char k[32];

		keyname(k, trace[i]);
		m = msg(TDB_CMD_GET, k);
		err = exec(c, &m);
		if (i >= warm) {
			r.gets++;
			r.hits += !err;
		}
		if (err == -ENOENT) {
			m = msg(TDB_CMD_PUT, k);
			m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
			m.value = val;
			m.value_len = vsize;
			if ((err = exec(c, &m))) {
				fprintf(stderr, "tdb-bench-evict: put: %s\n",
					strerror(-err));
				exit(1);
			}
		}
	}
	r.secs = now_s() - t0;
	m = msg(TDB_CMD_TABLE_STAT, NULL);
	{
		/* the records left: a STAT answer parsed from the sink */
		struct tdb_proto_extack ext = { NULL };
		struct tdb_proto_msg a;

		if (!exec(c, &m) && !tdb_proto_parse(sinkbuf, sizeof(sinkbuf),
						     TDB_PROTO_ANSWER, &a,
						     &ext))
			r.final_keys = a.stat.records;
	}
	tdbo_client_free(c);
	tdbo_owner_free(o);
	free(val);
	return r;
}

/* --- Redis ------------------------------------------------------------------- */

static char rsock[108];
static pid_t rpid;
static int rfd = -1;
static char rbuf[1 << 16];
static size_t rlen, rpos;

static int rfill(void)
{
	ssize_t n;

	if (rpos == rlen)
		rpos = rlen = 0;
	n = read(rfd, rbuf + rlen, sizeof(rbuf) - rlen);
	if (n <= 0)
		return -1;
	rlen += (size_t)n;
	return 0;
}

/* One line of the reply (without CRLF) into line. */
static int rline(char *line, size_t cap)
{
	for (;;) {
		char *nl = memchr(rbuf + rpos, '\n', rlen - rpos);

		if (nl) {
			size_t n = (size_t)(nl - (rbuf + rpos));

			if (n && nl[-1] == '\r')
				n--;
			if (n >= cap)
				n = cap - 1;
			memcpy(line, rbuf + rpos, n);
			line[n] = '\0';
			rpos = (size_t)(nl - rbuf) + 1;
			return 0;
		}
		if (rpos) {
			memmove(rbuf, rbuf + rpos, rlen - rpos);
			rlen -= rpos;
			rpos = 0;
		}
		if (rfill())
			return -1;
	}
}

/* A reply: its first line in line; a bulk's body into body (if room). */
static long rreply(char *line, size_t cap, char *body, size_t bcap)
{
	long n;

	if (rline(line, cap))
		return -2;
	if (line[0] != '$')
		return line[0] == '-' ? -3 : 0;
	n = atol(line + 1);
	if (n < 0)
		return -1;              /* nil: a miss */
	while (rlen - rpos < (size_t)n + 2) {
		if (rpos) {
			memmove(rbuf, rbuf + rpos, rlen - rpos);
			rlen -= rpos;
			rpos = 0;
		}
		if ((size_t)n + 2 > sizeof(rbuf) || rfill())
			return -2;
	}
	if (body && (size_t)n < bcap) {
		memcpy(body, rbuf + rpos, (size_t)n);
		body[n] = '\0';
	}
	rpos += (size_t)n + 2;
	return n;
}

static void rsend(int argc, const char **argv, const size_t *len)
{
	static char w[1 << 14];
	size_t o = (size_t)snprintf(w, sizeof(w), "*%d\r\n", argc);
	int i;

	for (i = 0; i < argc; i++) {
		size_t l = len ? len[i] : strlen(argv[i]);

		o += (size_t)snprintf(w + o, sizeof(w) - o, "$%zu\r\n", l);
		memcpy(w + o, argv[i], l);
		o += l;
		memcpy(w + o, "\r\n", 2);
		o += 2;
	}
	if (write(rfd, w, o) != (ssize_t)o) {
		perror("tdb-bench-evict: redis write");
		exit(1);
	}
}

static long rcmd(char *body, size_t bcap, int argc, ...)
{
	const char *argv[8];
	char line[256];
	va_list ap;
	int i;

	va_start(ap, argc);
	for (i = 0; i < argc; i++)
		argv[i] = va_arg(ap, const char *);
	va_end(ap);
	rsend(argc, argv, NULL);
	return rreply(line, sizeof(line), body, bcap) == -3 ? -3 :
	       body ? (long)strlen(body) : atol(line + 1);
}

static int redis_start(char *version, size_t vcap)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/tdb-bench-evict.XXXXXX";
	int tries;

	if (!mkdtemp(dir))
		return -1;
	snprintf(rsock, sizeof(rsock), "%s/redis.sock", dir);
	rpid = fork();
	if (rpid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp(redis_bin, redis_bin, "--port", "0", "--unixsocket",
		       rsock, "--save", "", "--appendonly", "no",
		       "--daemonize", "no", "--loglevel", "warning",
		       (char *)NULL);
		_exit(127);
	}
	if (rpid < 0)
		return -1;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", rsock);
	for (tries = 0; tries < 200; tries++) {
		rfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (!connect(rfd, (struct sockaddr *)&a, sizeof(a)))
			break;
		close(rfd);
		rfd = -1;
		usleep(25000);
	}
	if (rfd < 0)
		return -1;
	{
		static char info[1 << 15];
		char *p;

		rcmd(info, sizeof(info), 2, "INFO", "server");
		p = strstr(info, "redis_version:");
		snprintf(version, vcap, "%.*s", p ? (int)strcspn(p + 14,
							"\r\n") : 1,
			 p ? p + 14 : "?");
	}
	return 0;
}

static void redis_stop(void)
{
	if (rfd >= 0)
		close(rfd);
	if (rpid > 0) {
		kill(rpid, SIGTERM);
		waitpid(rpid, NULL, 0);
	}
	unlink(rsock);
	*strrchr(rsock, '/') = '\0';
	rmdir(rsock);
}

static uint64_t redis_base;     /* used_memory of an empty Redis */

static uint64_t used_memory(void)
{
	static char info[1 << 15];
	char *p;

	rcmd(info, sizeof(info), 2, "INFO", "memory");
	p = strstr(info, "used_memory:");
	return p ? strtoull(p + 12, NULL, 10) : 0;
}

static void rset(const char *k, const unsigned char *val)
{
	const char *argv[3] = { "SET", k, (const char *)val };
	size_t len[3] = { 3, strlen(k), vsize };
	char line[256];

	rsend(3, argv, len);
	if (rreply(line, sizeof(line), NULL, 0) < -1) {
		fprintf(stderr, "tdb-bench-evict: redis SET: %s\n", line);
		exit(1);
	}
}

/* maxmemory that holds cap keys of this trace's shape. */
static uint64_t redis_calibrate(uint64_t cap, const unsigned char *val)
{
	uint64_t base, i;
	char k[32];

	rcmd(NULL, 0, 1, "FLUSHALL");
	base = used_memory();
	redis_base = base;
	for (i = 0; i < cap; i++) {
		keyname(k, nkeys + i);  /* same length class as the trace */
		rset(k, val);
	}
	(void)base;
	return used_memory();     /* with cap such keys in it */
}

static struct result run_redis(uint64_t maxmem, const char *policy,
			       const unsigned char *val)
{
	uint64_t warm = nops * warm_pct / 100, i;
	struct result r = { 0 };
	char mm[32], line[256];
	double t0;

	rcmd(NULL, 0, 1, "FLUSHALL");
	snprintf(mm, sizeof(mm), "%llu", (unsigned long long)maxmem);
	rcmd(NULL, 0, 4, "CONFIG", "SET", "maxmemory-policy", policy);
	rcmd(NULL, 0, 4, "CONFIG", "SET", "maxmemory", mm);
	t0 = now_s();
	for (i = 0; i < nops; i++) {
		const char *argv[2] = { "GET", NULL };
		char k[32];
		long n;

		keyname(k, trace[i]);
		argv[1] = k;
		rsend(2, argv, NULL);
		n = rreply(line, sizeof(line), NULL, 0);
		if (n < -1) {
			fprintf(stderr, "tdb-bench-evict: redis GET: %s\n",
				line);
			exit(1);
		}
		if (i >= warm) {
			r.gets++;
			r.hits += n >= 0;
		}
		if (n == -1)
			rset(k, val);
	}
	r.secs = now_s() - t0;
	rsend(1, (const char *[]){ "DBSIZE" }, NULL);
	rreply(line, sizeof(line), NULL, 0);
	r.final_keys = strtoull(line + 1, NULL, 10);
	rcmd(NULL, 0, 4, "CONFIG", "SET", "maxmemory", "0");
	return r;
}

/* --- main ---------------------------------------------------------------- */

static void row(const char *name, const struct result *r, double ref)
{
	double h = 100.0 * (double)r->hits / (double)(r->gets ? r->gets : 1);

	printf("%-26s %8.2f %% %+8.2f %10llu %9.2f\n", name, h,
	       ref < 0 ? 0.0 : h - ref, (unsigned long long)r->final_keys,
	       r->secs);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "keys", 1, 0, 'k' }, { "ops", 1, 0, 'n' },
		{ "cap", 1, 0, 'c' }, { "warm", 1, 0, 'w' },
		{ "value", 1, 0, 'v' }, { "seed", 1, 0, 's' },
		{ "redis", 1, 0, 'r' }, { "no-redis", 0, 0, 'N' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct result exact, tl, tf, rl = { 0 }, rf = { 0 };
	unsigned char *val;
	char version[64] = "";
	uint64_t cap, maxmem = 0;
	bool redis = false;
	int o;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'k': nkeys = strtoull(optarg, NULL, 10); break;
		case 'n': nops = strtoull(optarg, NULL, 10); break;
		case 'c': cap_pct = (unsigned int)atoi(optarg); break;
		case 'w': warm_pct = (unsigned int)atoi(optarg); break;
		case 'v': vsize = (unsigned int)atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'r': redis_bin = optarg; break;
		case 'N': no_redis = true; break;
		default:
			fprintf(stderr, "usage: tdb-bench-evict [--keys N] "
				"[--ops N] [--cap PCT] [--warm PCT] "
				"[--value BYTES] [--seed S] [--redis PATH] "
				"[--no-redis]\n");
			return o == 'h' ? 0 : 2;
		}
	}
	if (!nkeys || !nops || !cap_pct || cap_pct > 100 || warm_pct >= 100 ||
	    !vsize || vsize > 4096) {
		fprintf(stderr, "tdb-bench-evict: a bad option value\n");
		return 2;
	}
	cap = nkeys * cap_pct / 100;
	if (!cap)
		cap = 1;
	val = malloc(vsize);
	memset(val, 'v', vsize);
	make_trace();
	if (!no_redis) {
		redis = !redis_start(version, sizeof(version));
		if (!redis)
			fprintf(stderr, "tdb-bench-evict: no redis-server "
				"(%s): tdb only\n", redis_bin);
		else
			maxmem = redis_calibrate(cap, val);
	}
	if (redis) {
		/* evicting, Redis holds fewer keys than the calibration
		 * wrote (its own buffers count too): one pass on part of
		 * the trace says how many, and maxmemory grows to match */
		uint64_t keep = nops, base = redis_base;
		struct result probe;

		nops /= 4;
		probe = run_redis(maxmem, "allkeys-lru", val);
		nops = keep;
		if (probe.final_keys && probe.final_keys < cap)
			maxmem = base + (maxmem - base) * cap /
					probe.final_keys;
	}
	printf("# tdb-bench-evict: YCSB scrambled zipfian 0.99, %llu keys, "
	       "%llu requests (%u%% warm-up), read-through, %u B values\n"
	       "# capacity %llu records (%u%%)%s%s%s\n",
	       (unsigned long long)nkeys, (unsigned long long)nops, warm_pct,
	       vsize, (unsigned long long)cap, cap_pct,
	       redis ? "; Redis " : "", version,
	       redis ? " maxmemory calibrated to that many keys" : "");
	exact = run_exact_lru(cap);
	tl = run_tdb(cap, TDB_EVICT_LRU);
	tf = run_tdb(cap, TDB_EVICT_LFU);
	if (redis) {
		rl = run_redis(maxmem, "allkeys-lru", val);
		rf = run_redis(maxmem, "allkeys-lfu", val);
		redis_stop();
	}
	printf("%-26s %10s %8s %10s %9s\n", "policy", "hit ratio",
	       redis ? "vs Redis" : "", "keys left", "seconds");
	row("exact LRU (reference)", &exact, -1);
	row("tdb lru", &tl, redis ? 100.0 * (double)rl.hits /
		(double)rl.gets : -1);
	row("tdb lfu", &tf, redis ? 100.0 * (double)rf.hits /
		(double)rf.gets : -1);
	if (redis) {
		row("redis allkeys-lru", &rl, -1);
		row("redis allkeys-lfu", &rf, -1);
	}
	free(val);
	free(trace);
	return 0;
}
