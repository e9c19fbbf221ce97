// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_owner.c - tdb-bench-owner: the owner (src/owner) on its own, in
 * user space, no transport: what a request costs inside it, for
 * measuring a change to the owner without the rings' and the scheduler's
 * noise.  One thread, one client, one table of --keys keys (16 B keys,
 * 100 B values).  Operations (--op):
 *
 *   get    --ops random GETs, each through tdbo_exec() (what a lone
 *          request gets), then the same keys 16 at a time through
 *          tdbo_get_many() (a ring round's run of GETs in tdbd);
 *   txn    transactions of --txn-size PUTs of random keys: TXN_BEGIN,
 *          the PUTs, TXN_COMMIT, each through tdbo_exec(), --ops PUTs
 *          in all;
 *   put2   two threads, each its own client, --ops PUTs each through
 *          tdbo_exec(): both to one table, then each to its own (tables
 *          "t" and "u"), alternating; ops/s of both together and the
 *          ratio: whether writers to different tables run in parallel.
 *          -L adds log hooks as tdbd's WAL has them: the record copied
 *          into one buffer under a mutex, after the change applied.
 *   ttl    --ops random PUTs through tdbo_exec() to table "t" (loaded
 *          without a TTL), and the same keys' PUTs with a TTL of 1 h
 *          to table "x" (loaded with it), alternating, the order
 *          swapped every run: what a TTL adds to the write path (no
 *          sweep runs: this owner has no home to call it).  -L too.
 *
 * Prints, per op, the median over --runs of ns per request.  The sink
 * parses nothing: it only takes the bytes (a transport copies them).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "owner.h"

static unsigned int nkeys = 1000000, nops = 1000000, runs = 5, txn_size = 16;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "tdb-bench-owner: %s: %s\n", what, strerror(-err));
	exit(1);
}

/* --- a sink that takes the bytes --------------------------------------- */

static unsigned char scratch[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
static uint64_t sink_bytes, fails;

static void *s_reserve(struct tdbo_sink *s, size_t len)
{
	(void)s;
	return len <= sizeof(scratch) ? scratch : NULL;
}

static void s_commit(struct tdbo_sink *s, void *p, size_t len)
{
	(void)s;
	sink_bytes += len + ((unsigned char *)p)[len - 1];
}

static void s_fail(void *arg, const struct tdb_proto_msg *m, int err,
		   const struct tdb_proto_extack *ext)
{
	(void)arg, (void)m, (void)err, (void)ext;
	fails++;
}

static struct tdbo_sink sink = {
	.reserve = s_reserve, .commit = s_commit, .in_read_section = true,
};

/* --- requests, built and parsed once ------------------------------------ */

#define REQ_ROOM 256
struct req {
	unsigned char buf[REQ_ROOM] __attribute__((aligned(8)));
	struct tdb_proto_msg m;
};

static void make(struct req *r, struct tdb_proto_msg *in)
{
	struct tdb_proto_extack ext = { 0 };
	long n = tdb_proto_build(r->buf, REQ_ROOM, TDB_PROTO_REQUEST, in, &ext);

	if (n < 0 || tdb_proto_parse(r->buf, (size_t)n, TDB_PROTO_REQUEST,
				     &r->m, &ext))
		die("building a request", n < 0 ? (int)n : -EINVAL);
}

static char val[100];
/* make_kv's table and, for PUTs, TTL (ms; 0: none). */
static const char *kv_table = "t";
static uint64_t kv_ttl;
#define TTL_MS 3600000ull

static void make_kv(struct req *r, uint8_t cmd, unsigned int k, uint64_t txn)
{
	char key[17];
	struct tdb_proto_msg in = {
		.cmd = cmd, .seq = k,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = kv_table, .table_len = (uint32_t)strlen(kv_table),
		.key = key, .key_len = 16,
	};

	snprintf(key, sizeof(key), "key%013u", k);
	if (cmd == TDB_CMD_PUT) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		in.value = val;
		in.value_len = sizeof(val);
	}
	if (cmd == TDB_CMD_PUT && kv_ttl) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		in.ttl = kv_ttl;
	}
	if (txn) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		in.txn = txn;
	}
	make(r, &in);
}

static int exec(struct tdbo_client *c, const struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext;
	struct tdbo_out res;

	return tdbo_exec(c, m, &sink, &ext, &res);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned int rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned int)(rng % nkeys);
}

/* --- the operations ---------------------------------------------------- */

static struct req *reqs;        /* nops GETs */

static double get_exec(struct tdbo_client *c)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	for (i = 0; i < nops; i++)
		if (exec(c, &reqs[i].m))
			die("GET", -EIO);
	return (double)(now_ns() - t0) / nops;
}

static double get_many(struct tdbo_client *c)
{
	static struct tdb_proto_msg m[16];
	uint64_t t0 = now_ns();
	unsigned int i, j;

	for (i = 0; i < nops; i += 16) {
		unsigned int n = nops - i < 16 ? nops - i : 16;

		for (j = 0; j < n; j++)
			m[j] = reqs[i + j].m;
		if (tdbo_get_many(c, m, n, &sink, s_fail, NULL) != n || fails)
			die("get_many", -EIO);
	}
	return (double)(now_ns() - t0) / nops;
}

/* nops requests through tdbo_exec, ns per request. */
static double exec_all(struct tdbo_client *c, const struct req *r)
{
	uint64_t t0 = now_ns();
	unsigned int i;

	for (i = 0; i < nops; i++)
		if (exec(c, &r[i].m))
			die("PUT", -EIO);
	return (double)(now_ns() - t0) / nops;
}

static uint64_t txn_id(struct tdbo_client *c, uint8_t cmd, uint64_t id)
{
	static unsigned char ans[512] __attribute__((aligned(8)));
	struct tdb_proto_msg in = { .cmd = cmd }, a;
	struct tdb_proto_extack ext = { 0 };
	struct req r;

	if (id) {
		in.attrs = TDB_PROTO_BIT(TDB_A_TXN);
		in.txn = id;
	}
	make(&r, &in);
	if (exec(c, &r.m))
		die("TXN", -EIO);
	if (cmd != TDB_CMD_TXN_BEGIN)
		return 0;
	memcpy(ans, scratch, sizeof(ans));
	if (tdb_proto_parse(ans, ((struct nlmsghdr *)ans)->nlmsg_len,
			    TDB_PROTO_ANSWER, &a, &ext))
		die("TXN_BEGIN's reply", -EINVAL);
	return a.txn;
}

static double txn(struct tdbo_client *c)
{
	static struct req r[4096];
	uint64_t t0, spent = 0;
	unsigned int i, j;

	for (i = 0; i < nops; i += txn_size) {
		uint64_t x = txn_id(c, TDB_CMD_TXN_BEGIN, 0);

		for (j = 0; j < txn_size; j++)
			make_kv(&r[j], TDB_CMD_PUT, rnd(), x);
		t0 = now_ns();
		for (j = 0; j < txn_size; j++)
			if (exec(c, &r[j].m))
				die("PUT in a txn", -EIO);
		txn_id(c, TDB_CMD_TXN_COMMIT, x);
		spent += now_ns() - t0;
	}
	return (double)spent / nops;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v)
{
	qsort(v, runs, sizeof(v[0]), cmp);
	return v[runs / 2];
}

/* --- put2: two writers ---------------------------------------------------- */

struct writer {
	pthread_t th;
	struct tdbo_client *c;
	struct req *r;          /* nops PUTs */
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct tdbo_sink s;
};

static void *w_reserve(struct tdbo_sink *s, size_t len)
{
	struct writer *w = (struct writer *)((char *)s -
					     offsetof(struct writer, s));

	return len <= sizeof(w->buf) ? w->buf : NULL;
}

static void w_commit(struct tdbo_sink *s, void *p, size_t len)
{
	(void)s, (void)p, (void)len;
}

static void *w_run(void *arg)
{
	struct writer *w = arg;
	struct tdb_proto_extack ext;
	struct tdbo_out res;
	unsigned int i;

	for (i = 0; i < nops; i++)
		if (tdbo_exec(w->c, &w->r[i].m, &w->s, &ext, &res))
			die("PUT", -EIO);
	return NULL;
}

/* ops/s of two writers putting nops random keys each to t0, t1. */
static double put2_run(struct writer *w, const char *t0, const char *t1)
{
	uint64_t t;
	unsigned int i, k;

	for (k = 0; k < 2; k++)
		for (i = 0; i < nops; i++) {
			w[k].r[i].m.table = k ? t1 : t0;
			w[k].r[i].m.table_len = 1;
		}
	t = now_ns();
	for (k = 0; k < 2; k++)
		pthread_create(&w[k].th, NULL, w_run, &w[k]);
	for (k = 0; k < 2; k++)
		pthread_join(w[k].th, NULL);
	return 2.0 * nops * 1e9 / (double)(now_ns() - t);
}

/* -L: a log like tdbd's WAL appender: room reserved before the apply,
 * the record copied into one buffer under a mutex after it. */
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned char log_buf[1u << 16];
static size_t log_len;

static int log_reserve(void *arg, const struct tdbo_log_size *sz,
		       const char **msg)
{
	(void)arg, (void)sz, (void)msg;
	return 0;
}

static void log_cancel(void *arg, const struct tdbo_log_size *sz)
{
	(void)arg, (void)sz;
}

static void log_begin(void *arg, uint64_t version)
{
	(void)arg, (void)version;
	pthread_mutex_lock(&log_mutex);
}

static void log_op(void *arg, const struct tdbo_table *t, bool del,
		   const void *key, size_t klen, const void *v, size_t vlen,
		   uint64_t deadline)
{
	(void)arg, (void)t, (void)del, (void)deadline;
	if (log_len + klen + vlen > sizeof(log_buf))
		log_len = 0;
	memcpy(log_buf + log_len, key, klen);
	memcpy(log_buf + log_len + klen, v, vlen);
	log_len += klen + vlen;
}

static uint64_t log_commit(void *arg, const struct tdbo_log_size *sz)
{
	static uint64_t n;
	uint64_t lsn = ++n;     /* under log_mutex */

	(void)arg, (void)sz;
	pthread_mutex_unlock(&log_mutex);
	return lsn;
}

static uint64_t log_table(void *arg, const struct tdbo_table *t,
			  const struct tdbo_log_size *sz)
{
	(void)t;
	log_begin(arg, 0);
	return log_commit(arg, sz);
}

static void put2(struct tdbo_owner *o, struct tdbo_cred *cr)
{
	static struct writer w[2];
	double one[64], two[64];
	unsigned int i, k;
	int err;

	for (k = 0; k < 2; k++) {
		w[k].c = tdbo_client_new(o, cr, false, NULL, NULL, &err);
		w[k].r = malloc((size_t)nops * sizeof(*w[k].r));
		if (!w[k].c || !w[k].r)
			die("writer", w[k].c ? -ENOMEM : err);
		w[k].s.reserve = w_reserve;
		w[k].s.commit = w_commit;
		w[k].s.in_read_section = true;
		for (i = 0; i < nops; i++)
			make_kv(&w[k].r[i], TDB_CMD_PUT, rnd(), 0);
	}
	for (i = 0; i < runs; i++) {            /* alternating */
		one[i] = put2_run(w, "t", "t");
		two[i] = put2_run(w, "t", "u");
	}
	printf("put2, 2 threads x %u PUTs, median of %u: one table %.0f "
	       "ops/s, two tables %.0f ops/s, ratio %.2f\n", nops, runs,
	       median(one), median(two), median(two) / median(one));
	for (k = 0; k < 2; k++) {
		tdbo_client_free(w[k].c);
		free(w[k].r);
	}
}

int main(int argc, char **argv)
{
	struct tdbo_hooks hooks = { 0 };
	struct tdbo_limits lim = {
		.default_mode = 0600, .feed_size = 1u << 16, .max_tables = 8,
		.max_watches = 8,
		.max_txns = 16, .max_txn_ops = 65536,
		.max_txn_bytes = 1u << 30,
	};
	struct tdbo_cred cr = { 0, 0, 0, NULL };
	const char *op = "get";
	struct tdbo_owner *o;
	struct tdbo_client *c;
	double a[64], b[64];
	struct req r;
	unsigned int i;
	int opt, err;

	while ((opt = getopt(argc, argv, "n:o:r:w:t:Lh")) != -1) {
		switch (opt) {
		case 'L':
			hooks.log_reserve = log_reserve;
			hooks.log_cancel = log_cancel;
			hooks.log_begin = log_begin;
			hooks.log_op = log_op;
			hooks.log_commit = log_commit;
			hooks.log_create = log_table;
			hooks.log_drop = log_table;
			break;
		case 'n': nkeys = (unsigned int)atoi(optarg); break;
		case 'o': nops = (unsigned int)atoi(optarg); break;
		case 'r': runs = (unsigned int)atoi(optarg); break;
		case 'w': op = optarg; break;
		case 't': txn_size = (unsigned int)atoi(optarg); break;
		default:
			printf("usage: tdb-bench-owner [-n keys] [-o ops] "
			       "[-r runs] [-w get|txn|put2|ttl] [-t txn-size] "
			       "[-L]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!nkeys || !nops || !runs || runs > 64 || !txn_size ||
	    txn_size > 4096)
		die("options", -EINVAL);
	memset(val, 'v', sizeof(val));
	o = tdbo_owner_new(&lim, &hooks, &err);
	if (!o)
		die("owner", err);
	c = tdbo_client_new(o, &cr, false, NULL, NULL, &err);
	if (!c)
		die("client", err);
	{
		struct tdb_proto_msg in = {
			.cmd = TDB_CMD_TABLE_CREATE,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
			.table = "t", .table_len = 1,
		};

		make(&r, &in);
		if ((err = exec(c, &r.m)))
			die("create", err);
	}
	if (!strcmp(op, "put2") || !strcmp(op, "ttl")) {
		struct tdb_proto_msg in = {
			.cmd = TDB_CMD_TABLE_CREATE,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
			.table = op[0] == 't' ? "x" : "u", .table_len = 1,
		};

		make(&r, &in);
		if ((err = exec(c, &r.m)))
			die("create", err);
	}
	for (i = 0; i < nkeys; i++) {
		make_kv(&r, TDB_CMD_PUT, i, 0);
		if ((err = exec(c, &r.m)))
			die("load", err);
	}
	if (!strcmp(op, "ttl")) {
		struct req *pa = malloc((size_t)nops * sizeof(*pa));
		struct req *pb = malloc((size_t)nops * sizeof(*pb));
		double q[64];

		if (!pa || !pb)
			die("memory", -ENOMEM);
		kv_table = "x";
		kv_ttl = TTL_MS;
		for (i = 0; i < nkeys; i++) {
			make_kv(&r, TDB_CMD_PUT, i, 0);
			if ((err = exec(c, &r.m)))
				die("load x", err);
		}
		for (i = 0; i < nops; i++) {
			unsigned int k = rnd();

			kv_table = "t";
			kv_ttl = 0;
			make_kv(&pa[i], TDB_CMD_PUT, k, 0);
			kv_table = "x";
			kv_ttl = TTL_MS;
			make_kv(&pb[i], TDB_CMD_PUT, k, 0);
		}
		for (i = 0; i < runs; i++) {    /* alternating, order swapped */
			if (i % 2) {
				b[i] = exec_all(c, pb);
				a[i] = exec_all(c, pa);
			} else {
				a[i] = exec_all(c, pa);
				b[i] = exec_all(c, pb);
			}
			q[i] = b[i] / a[i];
		}
		printf("put, %u keys, %u ops, median of %u: no TTL %.1f ns/PUT, "
		       "TTL %.1f ns/PUT, TTL/no (median of the runs' ratios) "
		       "%.3f%s\n", nkeys, nops, runs, median(a), median(b),
		       median(q), hooks.log_op ? " (with -L's log hooks)" : "");
		free(pa);
		free(pb);
	} else if (!strcmp(op, "put2")) {
		put2(o, &cr);
	} else if (!strcmp(op, "get")) {
		reqs = malloc((size_t)nops * sizeof(*reqs));
		if (!reqs)
			die("memory", -ENOMEM);
		for (i = 0; i < nops; i++)
			make_kv(&reqs[i], TDB_CMD_GET, rnd(), 0);
		for (i = 0; i < runs; i++) {    /* alternating */
			a[i] = get_exec(c);
			b[i] = get_many(c);
		}
		printf("get, %u keys, %u ops, median of %u: tdbo_exec %.1f "
		       "ns/GET, tdbo_get_many (16) %.1f ns/GET\n", nkeys,
		       nops, runs, median(a), median(b));
		free(reqs);
	} else {
		for (i = 0; i < runs; i++)
			a[i] = txn(c);
		printf("txn of %u puts, %u keys, %u puts, median of %u: %.1f "
		       "ns/PUT (the PUTs and COMMIT; BEGIN and building the "
		       "requests not timed)\n", txn_size, nkeys, nops, runs,
		       median(a));
	}
	tdbo_client_free(c);
	tdbo_owner_free(o);
	return 0;
}
