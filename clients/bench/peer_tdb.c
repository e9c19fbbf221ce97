// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_tdb.c - tdb as a tdb-bench peer: tdbd (from --tdbd, $TDBD, the
 * build tree meson told us about, or next to this program in the build
 * tree) started on a socket in the benchmark's temp dir, reached through
 * libtdbclient (include/tdb/client.h) over its shared rings.
 *
 *   batch 1   tdbc_get into a buffer / tdbc_put: one blocking call per
 *             operation, a round trip through the rings
 *   batch B   tdbc_submit of B requests (one publish), tdbc_reap until
 *             all B are back
 *
 * The driver creates one table (--tables N: N of them, "bench",
 * "bench.1", ...) and loads it with batched asynchronous puts; every
 * worker process opens its own connection (a connection cannot cross a
 * fork) and its table (process i: table i % N), and refuses to run if it
 * did not get rings.
 *
 * tdb+ttl (--ttl MS): the same tdbd, tables of their own ("bench.ttl",
 * "bench.ttl.1", ...) loaded with puts carrying the TTL, and the same
 * puts with it: tdbc_put_ttl (batch 1), TDBC_TTL requests (batch B).
 * Its own tables so that the plain puts keep writing records without a
 * deadline and the TTL puts records with one.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tdb/client.h>

#include "bench.h"
#include "../../bench/common/tdbd.h"

#define TABLE     "bench"
#define TABLE_TTL "bench.ttl"
#define LOAD_PIPE 256u
#define EXTENT    (2u << 20)

static struct {
	pid_t pid;
	char bin[PATH_MAX];
	char sock[108];
	char log[4200];
	char data[4200];
	struct tdbc_table_stat st;      /* after the load */
	int rings;
} srv;

/* --- finding tdbd, connecting (bench/common/tdbd.c) ---------------------- */
static const char *find_tdbd(void)
{
#ifdef TDB_BENCH_TDBD
	const char *built = TDB_BENCH_TDBD;
#else
	const char *built = NULL;
#endif
	return bench_find_tdbd(opt.tdbd, built, srv.bin, sizeof(srv.bin));
}

static bool runnable(const char *p)
{
	return p && *p && !access(p, X_OK);
}

static int connect_retry(struct tdbc **c, char *msg)
{
	return bench_tdbd_connect(&srv.pid, srv.sock, srv.log, c, msg,
				  MSG_LEN);
}

/* The name of table i ("bench", then "bench.1", ...; with a TTL
 * "bench.ttl", "bench.ttl.1", ...). */
static const char *table_name(unsigned int i, bool ttl, char *buf,
			      size_t size)
{
	const char *base = ttl ? TABLE_TTL : TABLE;

	if (!i)
		return base;
	snprintf(buf, size, "%s.%u", base, i);
	return buf;
}

static int create_table(struct tdbc *c, const char *name, char *msg)
{
	/* The records, as many again waiting for a grace period, the
	 * index: with room to spare (as tdb-bench-engine does). */
	uint64_t need = (uint64_t)opt.keys * (KEY_LEN + opt.vsize + 64) * 3;
	uint64_t ext = (need + EXTENT - 1) / EXTENT;
	struct tdbc_table_opts to;
	int err;

	tdbc_table_opts_init(&to);
	to.max_extents = ext < 1024 ? 1024 : ext > 32768 ? 32768 :
		(uint32_t)ext;
	if (opt.evict) {        /* --evict: mapped reads then send hints */
		to.evict = opt.evict;
		to.max_records = opt.max_records ? opt.max_records :
				 2 * (uint64_t)opt.keys;
	}
	err = tdbc_table_create(c, name, &to);
	if (err)
		msgf(msg, "tdbc_table_create: %s: %s", tdbc_strerror(err),
		     tdbc_errmsg(c));
	return err;
}

/* Batched asynchronous puts of every key, generation 1; with a TTL in
 * ms if ttl is not 0. */
static int load(struct tdbc *c, struct tdbc_table *t, uint64_t ttl,
		char *msg)
{
	struct tdbc_req req[LOAD_PIPE];
	struct tdbc_cqe cqe[LOAD_PIPE];
	uint8_t *v = malloc((size_t)opt.vsize * LOAD_PIPE);
	int err = 0;

	if (!v) {
		msgf(msg, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < opt.keys && !err; i += LOAD_PIPE) {
		uint32_t n = opt.keys - i < LOAD_PIPE ? opt.keys - i :
			LOAD_PIPE, sub = 0, done = 0;

		for (uint32_t j = 0; j < n; j++) {
			value_make(v + (size_t)j * opt.vsize, i + j, 1);
			req[j] = (struct tdbc_req){
				.op = TDBC_OP_PUT, .table = t,
				.key = key_of(i + j), .klen = KEY_LEN,
				.val = v + (size_t)j * opt.vsize,
				.vlen = opt.vsize, .user = i + j,
				.flags = ttl ? TDBC_TTL : 0, .expiry = ttl,
			};
		}
		while (done < n && !err) {
			int r = sub < n ? tdbc_submit(c, req + sub, n - sub) :
				0;

			if (r > 0)
				sub += (uint32_t)r;
			else if (r < 0 && r != -EAGAIN)
				err = r;
			if (err)
				break;
			r = tdbc_reap(c, cqe, LOAD_PIPE, sub == n ?
				      sub - done : 1, -1);
			if (r < 0)
				err = r;
			for (int k = 0; k < r && !err; k++)
				err = cqe[k].res;
			done += r > 0 ? (uint32_t)r : 0;
		}
	}
	free(v);
	if (err)
		msgf(msg, "tdb load: %s: %s", tdbc_strerror(err),
		     tdbc_errmsg(c));
	return err ? -1 : 0;
}

/* The --tables tables (with a TTL: the TTL ones), created and loaded;
 * *st: the last one's figures after the load. */
static int make_tables(struct tdbc *c, bool ttl, struct tdbc_table_stat *st,
		       char *msg)
{
	struct tdbc_table *t = NULL;
	int err = 0;

	for (unsigned int i = 0; !err && i < opt.tables; i++) {
		char nb[32];
		const char *name = table_name(i, ttl, nb, sizeof(nb));

		err = create_table(c, name, msg);
		if (!err && (err = tdbc_table_open(c, name, &t)))
			msgf(msg, "tdbc_table_open %s: %s", name,
			     tdbc_strerror(err));
		if (!err)
			err = load(c, t, ttl ? opt.ttl : 0, msg);
		if (!err && (err = tdbc_table_stat(c, name, st)))
			msgf(msg, "tdbc_table_stat %s: %s", name,
			     tdbc_strerror(err));
		if (!err && st->records != opt.keys) {
			msgf(msg, "table %s holds %llu records after loading "
			     "%u keys", name, (unsigned long long)st->records,
			     opt.keys);
			err = -1;
		}
		if (t)
			tdbc_table_close(t);
		t = NULL;
	}
	return err;
}

static int tdb_start(char *msg)
{
	const char *bin = find_tdbd();
	const char *argv[32];
	struct tdbc *c = NULL;
	unsigned int a = 0;
	double t0 = now();
	int err;

	if (!bin) {
		msgf(msg, "no tdbd (give --tdbd PATH or set $TDBD)");
		return 1;
	}
	if (bin != srv.bin)
		snprintf(srv.bin, sizeof(srv.bin), "%s", bin);
	if (!runnable(srv.bin)) {
		msgf(msg, "cannot run tdbd %s: %s", srv.bin, strerror(errno));
		return errno == ENOENT ? 1 : -1;
	}
	if ((size_t)snprintf(srv.sock, sizeof(srv.sock), "%s/tdbd.sock",
			     tmpdir) >= sizeof(srv.sock)) {
		msgf(msg, "socket path under %s is too long", tmpdir);
		return -1;
	}
	snprintf(srv.log, sizeof(srv.log), "%s/tdbd.log", tmpdir);
	snprintf(srv.data, sizeof(srv.data), "%s/tdbd.data", tmpdir);
	/* --config /dev/null: this machine's tdbd.conf must not change
	 * what is measured; --sync none: the peers do not sync either
	 * (LMDB MDB_NOSYNC, Redis without fsync; tdb-bench-durable
	 * measures the synced modes); --tdbd-arg options come last and
	 * win. */
	argv[a++] = srv.bin;
	argv[a++] = "--config";
	argv[a++] = "/dev/null";
	argv[a++] = "--sync";
	argv[a++] = "none";
	argv[a++] = "--socket";
	argv[a++] = srv.sock;
	argv[a++] = "--data-dir";
	argv[a++] = srv.data;
	for (unsigned int i = 0; i < opt.ntdbd_args; i++)
		argv[a++] = opt.tdbd_args[i];
	argv[a] = NULL;
	srv.pid = spawn(argv, srv.log, msg);
	if (srv.pid < 0) {
		srv.pid = 0;
		return -1;
	}
	err = connect_retry(&c, msg);
	if (!err && !(srv.rings = tdbc_uses_rings(c))) {
		msgf(msg, "tdbd gave no rings (see %s)", srv.log);
		err = -1;
	}
	if (!err)
		err = make_tables(c, false, &srv.st, msg);
	if (c)
		tdbc_close(c);
	if (err) {
		stop_server(srv.pid);
		srv.pid = 0;
		return -1;
	}
	fprintf(stderr, "  tdb: loaded %u keys in %.1f s\n", opt.keys,
		now() - t0);
	return 0;
}

static void tdb_stop(void)
{
	int st = stop_server(srv.pid);

	if (st != 0)
		fprintf(stderr, "tdb-bench: tdbd ended with status %d (log "
			"%s)\n", st, srv.log);
	srv.pid = 0;
}

static pid_t tdb_server(void)
{
	return srv.pid;
}

/* The table's page size and memory after the load. */
static void describe_table(const struct tdbc_table_stat *st)
{
	double raw = (double)opt.keys * (KEY_LEN + opt.vsize);

	printf("\n            rings; table page size %s, %u extents "
	       "(%.0f MiB) after the load\n",
	       st->page_size == EXTENT ? "2 MiB (hugetlb)" :
	       st->page_size == 4096 ? "4 KiB (no hugetlb)" : "unknown",
	       st->extents, st->extents * 2.0);
	printf("            table memory after the load: %.1f MiB "
	       "allocated to records and index (%.2fx the raw\n"
	       "            keys + values, %.1f MiB), %.1f MiB of "
	       "extents (%.2fx)\n",
	       st->bytes_allocated / 1048576.0,
	       st->bytes_allocated / raw, raw / 1048576.0,
	       st->extents * 2.0, st->extents * 2.0 * 1048576.0 / raw);
}

static void tdb_describe(void)
{
	printf("  tdb       %s --config /dev/null --sync none --socket ... "
	       "--data-dir ...",
	       srv.bin);
	for (unsigned int i = 0; i < opt.ntdbd_args; i++)
		printf(" %s", opt.tdbd_args[i]);
	describe_table(&srv.st);
	printf("  tdb       gets in the table's read-only map (tdbc_get); "
	       "tdb-rings: the same\n            tdbd, connections with "
	       "TDBC_NO_MAP (gets through the rings)\n");
}

static uint32_t tdb_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)op, (void)batch, (void)procs;
	return opt.ops;
}

/* --- worker ------------------------------------------------------------ */
struct tdb_h {
	struct tdbc *c;
	struct tdbc_table *t;
	uint64_t ttl;           /* puts carry this TTL (tdb+ttl), or 0 */
	uint8_t *vbuf, *rbuf;
	struct tdbc_req req[BATCH_MAX];
	struct tdbc_cqe cqe[BATCH_MAX];
};

static int fail(struct tdb_h *h, struct work *w, const char *what, long err)
{
	msgf(w->msg, "tdb %s: %s%s%s", what, tdbc_strerror((int)err),
	     h && *tdbc_errmsg(h->c) ? ": " : "",
	     h ? tdbc_errmsg(h->c) : "");
	return -1;
}

static void tdb_close(void *hv)
{
	struct tdb_h *h = hv;

	if (h->t)
		tdbc_table_close(h->t);
	if (h->c)
		tdbc_close(h->c);
	free(h->vbuf);
	free(h->rbuf);
	free(h);
}

/* Connect flags of the peer this worker is: 0 (tdb, mapped gets) or
 * TDBC_NO_MAP (tdb-rings); whether it is tdb+ttl.  Set by the open
 * functions below. */
static unsigned int h_flags;
static bool h_ttl;

static int tdb_open(struct work *w, void **out)
{
	struct tdb_h *h = calloc(1, sizeof(*h));
	char why[MSG_LEN], nb[32];
	int err;

	if (!h || !(h->vbuf = malloc((size_t)opt.vsize * BATCH_MAX)) ||
	    !(h->rbuf = malloc(opt.vsize))) {
		msgf(w->msg, "out of memory");
		if (h)
			tdb_close(h);
		return -1;
	}
	err = tdbc_connect(&h->c, srv.sock, h_flags, why, sizeof(why));
	if (err) {
		msgf(w->msg, "tdbc_connect: %s", why);
		tdb_close(h);
		return -1;
	}
	if (!tdbc_uses_rings(h->c)) {
		msgf(w->msg, "tdbc_connect gave a connection without rings");
		tdb_close(h);
		return -1;
	}
	h->ttl = h_ttl ? opt.ttl : 0;
	err = tdbc_table_open(h->c, table_name(w->proc % opt.tables, h_ttl,
					       nb, sizeof(nb)), &h->t);
	if (err) {
		fail(h, w, "table open", err);
		tdb_close(h);
		return -1;
	}
	if (!(h_flags & TDBC_NO_MAP) && !tdbc_table_mapped(h->t)) {
		msgf(w->msg, "tdbd gave no map of the table (tdb-rings reads "
		     "through the rings)");
		tdb_close(h);
		return -1;
	}
	*out = h;
	return 0;
}

/* The n requests in h->req: submitted, all completions reaped and
 * checked (a GET's value against its key). */
static int run_batch(struct tdb_h *h, struct work *w, const uint32_t *idx,
		     unsigned int n)
{
	unsigned int sub = 0, done = 0;

	while (done < n) {
		int r = sub < n ? tdbc_submit(h->c, h->req + sub, n - sub) : 0;

		if (r > 0)
			sub += (unsigned int)r;
		else if (r < 0 && r != -EAGAIN)
			return fail(h, w, "submit", r);
		r = tdbc_reap(h->c, h->cqe, n, sub == n ? sub - done : 1, -1);
		if (r < 0)
			return fail(h, w, "reap", r);
		for (int k = 0; k < r; k++) {
			const struct tdbc_cqe *q = &h->cqe[k];

			if (q->res)
				return fail(h, w, w->op == OP_GET ? "get" :
					    "put", q->res);
			if (w->op == OP_GET &&
			    value_check(idx[q->user], q->val, q->vlen, w->msg))
				return -1;
		}
		done += (unsigned int)r;
	}
	return 0;
}

static int tdb_get(void *hv, struct work *w, const uint32_t *idx,
		   unsigned int n)
{
	struct tdb_h *h = hv;

	if (n == 1) {
		size_t need = 0;
		long len = tdbc_get(h->t, NULL, key_of(idx[0]), KEY_LEN,
				    h->rbuf, opt.vsize, &need);

		if (len < 0)
			return fail(h, w, "get", len);
		return value_check(idx[0], h->rbuf, (size_t)len, w->msg);
	}
	for (unsigned int j = 0; j < n; j++)
		h->req[j] = (struct tdbc_req){
			.op = TDBC_OP_GET, .table = h->t,
			.key = key_of(idx[j]), .klen = KEY_LEN, .user = j,
		};
	return run_batch(h, w, idx, n);
}

static int tdb_put(void *hv, struct work *w, const uint32_t *idx,
		   unsigned int n)
{
	struct tdb_h *h = hv;

	if (n == 1) {
		int err;

		value_make(h->vbuf, idx[0], w->gen);
		err = h->ttl ?
			tdbc_put_ttl(h->t, NULL, key_of(idx[0]), KEY_LEN,
				     h->vbuf, opt.vsize, 0, 0, h->ttl) :
			tdbc_put(h->t, NULL, key_of(idx[0]), KEY_LEN, h->vbuf,
				 opt.vsize, 0);
		return err ? fail(h, w, "put", err) : 0;
	}
	for (unsigned int j = 0; j < n; j++) {
		uint8_t *v = h->vbuf + (size_t)j * opt.vsize;

		value_make(v, idx[j], w->gen);
		h->req[j] = (struct tdbc_req){
			.op = TDBC_OP_PUT, .table = h->t,
			.key = key_of(idx[j]), .klen = KEY_LEN,
			.val = v, .vlen = opt.vsize, .user = j,
			.flags = h->ttl ? TDBC_TTL : 0, .expiry = h->ttl,
		};
	}
	return run_batch(h, w, idx, n);
}

static int tdb_open_map(struct work *w, void **out)
{
	h_flags = 0;
	h_ttl = false;
	return tdb_open(w, out);
}

/* --- tdb-rings: the same tdbd, gets through the rings ---------------------
 * Shares tdb's tdbd and table when tdb runs (else starts its own); puts
 * are not measured again (they do not use maps). */
static bool rings_own_srv;

static int rings_start(char *msg)
{
	int err;

	if (srv.pid)
		return 0;
	err = tdb_start(msg);
	rings_own_srv = !err;
	return err;
}

static void rings_stop(void)
{
	if (rings_own_srv && srv.pid)
		tdb_stop();
	rings_own_srv = false;
}

static void rings_describe(void)
{
	if (rings_own_srv)
		tdb_describe();
}

static uint32_t rings_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)batch, (void)procs;
	return op == OP_GET ? opt.ops : 0;
}

static int tdb_open_rings(struct work *w, void **out)
{
	h_flags = TDBC_NO_MAP;
	h_ttl = false;
	return tdb_open(w, out);
}

const struct peer peer_tdb_rings = {
	.name = "tdb-rings",
	.what = { { "tdbc_get, TDBC_NO_MAP", "tdbc_submit %u GETs, NO_MAP" },
		  { "", "" } },
	.start = rings_start, .stop = rings_stop, .server = tdb_server,
	.describe = rings_describe, .ops = rings_ops,
	.open = tdb_open_rings, .get = tdb_get, .put = tdb_put,
	.close = tdb_close,
};

const struct peer peer_tdb = {
	.name = "tdb",
	.what = { { "tdbc_get (mapped)", "tdbc_submit %u GETs (mapped)" },
		  { "tdbc_put", "tdbc_submit %u PUTs + reap" } },
	.start = tdb_start, .stop = tdb_stop, .server = tdb_server,
	.describe = tdb_describe, .ops = tdb_ops,
	.open = tdb_open_map, .get = tdb_get, .put = tdb_put,
	.close = tdb_close,
};

/* --- tdb+ttl: the same tdbd, puts with a TTL into tables of their own ----
 * Started after tdb (it shares its tdbd; else starts its own). */
static bool ttl_own_srv;
static struct tdbc_table_stat ttl_st;

static int ttl_start(char *msg)
{
	struct tdbc *c = NULL;
	double t0 = now();
	int err;

	if (!opt.ttl) {
		msgf(msg, "no --ttl");
		return 1;
	}
	if (!srv.pid) {
		err = tdb_start(msg);
		if (err)
			return err;
		ttl_own_srv = true;
	}
	err = connect_retry(&c, msg);
	if (!err)
		err = make_tables(c, true, &ttl_st, msg);
	if (c)
		tdbc_close(c);
	if (err) {
		if (ttl_own_srv)
			tdb_stop();
		ttl_own_srv = false;
		return -1;
	}
	if (ttl_st.expiring != opt.keys) {
		msgf(msg, "table %s has %llu records with a deadline after "
		     "loading %u keys with a TTL of %llu ms", TABLE_TTL,
		     (unsigned long long)ttl_st.expiring, opt.keys,
		     (unsigned long long)opt.ttl);
		if (ttl_own_srv)
			tdb_stop();
		ttl_own_srv = false;
		return -1;
	}
	fprintf(stderr, "  tdb+ttl: loaded %u keys with a TTL of %llu ms in "
		"%.1f s\n", opt.keys, (unsigned long long)opt.ttl,
		now() - t0);
	return 0;
}

static void ttl_stop(void)
{
	if (ttl_own_srv && srv.pid)
		tdb_stop();
	ttl_own_srv = false;
}

static void ttl_describe(void)
{
	printf("  tdb+ttl   the same tdbd; table%s %s%s loaded with a TTL of "
	       "%llu ms; tdbc_put_ttl,\n            TDBC_TTL requests",
	       opt.tables > 1 ? "s" : "", TABLE_TTL,
	       opt.tables > 1 ? ".N" : "", (unsigned long long)opt.ttl);
	describe_table(&ttl_st);
}

static uint32_t ttl_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)batch, (void)procs;
	return op == OP_PUT ? opt.ops : 0;
}

static int tdb_open_ttl(struct work *w, void **out)
{
	h_flags = 0;
	h_ttl = true;
	return tdb_open(w, out);
}

const struct peer peer_tdb_ttl = {
	.name = "tdb+ttl",
	.what = { { "", "" },
		  { "tdbc_put_ttl", "tdbc_submit %u PUTs TTL+reap" } },
	.start = ttl_start, .stop = ttl_stop, .server = tdb_server,
	.describe = ttl_describe, .ops = ttl_ops,
	.open = tdb_open_ttl, .get = tdb_get, .put = tdb_put,
	.close = tdb_close,
};
