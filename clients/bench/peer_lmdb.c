// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_lmdb.c - LMDB as a tdb-bench peer: one environment in the
 * benchmark's temp dir, opened by every worker process on its own (LMDB
 * environments must not cross a fork), MDB_NOSYNC like the engine
 * benchmark (tdb keeps no disk copy yet), and a second peer, "LMDB
 * synced", with the default durable commit, for a small sample of puts.
 *
 *   get, batch 1   mdb_txn_renew, mdb_get, memcpy of the value, reset:
 *                  one read transaction per get
 *   get, batch B   one read transaction around B gets
 *   put, batch 1   mdb_txn_begin, mdb_put, mdb_txn_commit: one write
 *                  transaction per put (writers of all processes queue on
 *                  LMDB's writer lock)
 *   put, batch B   B puts per write transaction
 *
 * Each worker reads every page of the map once after opening it (before
 * the barrier), so its timed gets do not pay the page faults a freshly
 * forked process takes on its first touch of each page; a long-running
 * LMDB reader would have them mapped.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "bench.h"

#define LOAD_PER_TXN 1000u

static char envdir[4200];
static bool loaded;             /* envdir holds the keys */

struct lmdb_h {
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *rtxn;           /* reset between gets, renewed per get */
	uint8_t *vbuf, *rbuf;
};

static int fail(struct work *w, const char *what, int rc)
{
	msgf(w->msg, "LMDB %s: %s", what, mdb_strerror(rc));
	return -1;
}

static size_t map_size(void)
{
	size_t raw = (size_t)opt.keys * (KEY_LEN + opt.vsize + 16);
	size_t m = (size_t)1 << 30;

	while (m < 8 * raw)
		m <<= 1;
	return m;
}

static int env_open(MDB_env **env, MDB_dbi *dbi, bool sync, char *msg)
{
	MDB_txn *txn;
	int rc;

	*env = NULL;
	rc = mdb_env_create(env);
	if (!rc)
		rc = mdb_env_set_mapsize(*env, map_size());
	if (!rc)
		rc = mdb_env_open(*env, envdir, sync ? 0 : MDB_NOSYNC, 0600);
	if (!rc)
		rc = mdb_txn_begin(*env, NULL, MDB_RDONLY, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, NULL, 0, dbi);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	if (rc) {
		msgf(msg, "LMDB environment in %s: %s", envdir,
		     mdb_strerror(rc));
		if (*env)
			mdb_env_close(*env);
		*env = NULL;
		return -1;
	}
	return 0;
}

/* --- driver ---------------------------------------------------------- */
static int load(MDB_env *env, MDB_dbi dbi, char *msg)
{
	uint8_t *v = malloc(opt.vsize);
	MDB_txn *txn = NULL;
	int rc = 0;

	if (!v) {
		msgf(msg, "out of memory");
		return -1;
	}
	for (uint32_t i = 0; i < opt.keys && !rc; i++) {
		MDB_val mk = { KEY_LEN, (void *)key_of(i) };
		MDB_val mv = { opt.vsize, v };

		if (!txn && (rc = mdb_txn_begin(env, NULL, 0, &txn)))
			break;
		value_make(v, i, 1);
		rc = mdb_put(txn, dbi, &mk, &mv, 0);
		if (!rc && ((i + 1) % LOAD_PER_TXN == 0 || i + 1 == opt.keys)) {
			rc = mdb_txn_commit(txn);
			txn = NULL;
		}
	}
	if (txn)
		mdb_txn_abort(txn);
	free(v);
	if (rc)
		msgf(msg, "LMDB load: %s", mdb_strerror(rc));
	return rc ? -1 : 0;
}

/* data.mdb's pages in use after the load (me_last_pgno + 1 pages). */
static uint64_t loaded_bytes;

static int lmdb_start(char *msg)
{
	MDB_env *env;
	MDB_dbi dbi;
	double t0 = now();
	int err;

	snprintf(envdir, sizeof(envdir), "%s/lmdb", tmpdir);
	if (mkdir(envdir, 0700)) {
		msgf(msg, "mkdir %s: %s", envdir, strerror(errno));
		return -1;
	}
	/* /proc/self/maps names the file by its real path (map_base). */
	{
		char real[PATH_MAX];

		if (realpath(envdir, real))
			snprintf(envdir, sizeof(envdir), "%s", real);
	}
	if (env_open(&env, &dbi, false, msg))
		return -1;
	err = load(env, dbi, msg);
	if (!err) {
		MDB_envinfo ei;
		MDB_stat ms;

		if (!mdb_env_info(env, &ei) && !mdb_env_stat(env, &ms))
			loaded_bytes = (uint64_t)(ei.me_last_pgno + 1) *
				       ms.ms_psize;
	}
	mdb_env_close(env);     /* the workers open their own */
	loaded = !err;
	if (!err)
		fprintf(stderr, "  LMDB: loaded %u keys in %.1f s\n",
			opt.keys, now() - t0);
	return err;
}

static void lmdb_stop(void)
{
}

static pid_t lmdb_server(void)
{
	return 0;
}

static void lmdb_describe(void)
{
	int maj, min, pat;

	mdb_version(&maj, &min, &pat);
	printf("  LMDB      %d.%d.%d, MDB_NOSYNC, one environment in %s "
	       "opened by each process;\n"
	       "            each worker touches the map's pages once before "
	       "the barrier\n", maj, min, pat, envdir);
	printf("            data.mdb after the load: %.1f MiB in use "
	       "(%.2fx the raw keys + values)\n", loaded_bytes / 1048576.0,
	       loaded_bytes / ((double)opt.keys * (KEY_LEN + opt.vsize)));
}

static uint32_t lmdb_ops(enum op op, unsigned int batch, unsigned int procs)
{
	(void)procs;
	if (op == OP_PUT && batch == 1)
		return opt.txn_ops < opt.ops ? opt.txn_ops : opt.ops;
	return opt.ops;
}

static void lmdb_sync_describe(void)
{
	printf("  LMDB sync the same environment opened without MDB_NOSYNC "
	       "(fsync at every commit):\n"
	       "            %u puts, one process, one transaction per put\n",
	       opt.sync_ops);
}

static uint32_t lmdb_sync_ops(enum op op, unsigned int batch,
			      unsigned int procs)
{
	return op == OP_PUT && batch == 1 && procs == 1 ? opt.sync_ops : 0;
}

/* --- worker ------------------------------------------------------------ */
static volatile uint8_t touch_sink;

/* Where this process mapped the data file (LMDB does not say unless
 * MDB_FIXEDMAP): from /proc/self/maps; NULL if not found. */
static const volatile uint8_t *map_base(void)
{
	char line[4400], path[4300];
	unsigned long lo = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return NULL;
	snprintf(path, sizeof(path), "%s/data.mdb", envdir);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strlen(line) > strlen(path) &&
		    !strcmp(line + strlen(line) - strlen(path), path) &&
		    sscanf(line, "%lx-", &lo) == 1)
			break;
		lo = 0;
	}
	fclose(f);
	return (const volatile uint8_t *)lo;
}

/* Fault in every page of the data file's map (read only). */
static void touch_map(MDB_env *env)
{
	const volatile uint8_t *base = map_base();
	MDB_envinfo info;
	MDB_stat st;
	uint8_t x = 0;

	if (!base || mdb_env_info(env, &info) || mdb_env_stat(env, &st))
		return;
	for (size_t pg = 0; pg <= info.me_last_pgno; pg++)
		x ^= base[pg * st.ms_psize];
	touch_sink = x;
}

static int open_common(struct work *w, void **out, bool sync)
{
	struct lmdb_h *h = calloc(1, sizeof(*h));
	int rc;

	if (!h) {
		msgf(w->msg, "out of memory");
		return -1;
	}
	h->vbuf = malloc((size_t)opt.vsize * BATCH_MAX);
	h->rbuf = malloc(opt.vsize);
	if (!h->vbuf || !h->rbuf) {
		msgf(w->msg, "out of memory");
		goto fail;
	}
	if (env_open(&h->env, &h->dbi, sync, w->msg))
		goto fail;
	rc = mdb_txn_begin(h->env, NULL, MDB_RDONLY, &h->rtxn);
	if (rc) {
		fail(w, "read txn", rc);
		goto fail;
	}
	mdb_txn_reset(h->rtxn);
	touch_map(h->env);
	*out = h;
	return 0;
fail:
	if (h->env)
		mdb_env_close(h->env);
	free(h->vbuf);
	free(h->rbuf);
	free(h);
	return -1;
}

static int lmdb_open(struct work *w, void **out)
{
	return open_common(w, out, false);
}

static int lmdb_sync_open(struct work *w, void **out)
{
	return open_common(w, out, true);
}

static int lmdb_get(void *hv, struct work *w, const uint32_t *idx,
		    unsigned int n)
{
	struct lmdb_h *h = hv;
	int rc = mdb_txn_renew(h->rtxn);

	if (rc)
		return fail(w, "txn renew", rc);
	for (unsigned int j = 0; j < n; j++) {
		MDB_val mk = { KEY_LEN, (void *)key_of(idx[j]) }, mv;

		rc = mdb_get(h->rtxn, h->dbi, &mk, &mv);
		if (rc) {
			mdb_txn_reset(h->rtxn);
			return fail(w, "get", rc);
		}
		if (mv.mv_size <= opt.vsize)
			memcpy(h->rbuf, mv.mv_data, mv.mv_size);
		if (value_check(idx[j], h->rbuf, mv.mv_size, w->msg)) {
			mdb_txn_reset(h->rtxn);
			return -1;
		}
	}
	mdb_txn_reset(h->rtxn);
	return 0;
}

static int lmdb_put(void *hv, struct work *w, const uint32_t *idx,
		    unsigned int n)
{
	struct lmdb_h *h = hv;
	MDB_txn *txn;
	int rc = mdb_txn_begin(h->env, NULL, 0, &txn);

	if (rc)
		return fail(w, "txn begin", rc);
	for (unsigned int j = 0; j < n; j++) {
		MDB_val mk = { KEY_LEN, (void *)key_of(idx[j]) };
		MDB_val mv = { opt.vsize, h->vbuf };

		value_make(h->vbuf, idx[j], w->gen);
		rc = mdb_put(txn, h->dbi, &mk, &mv, 0);
		if (rc) {
			mdb_txn_abort(txn);
			return fail(w, "put", rc);
		}
	}
	rc = mdb_txn_commit(txn);
	return rc ? fail(w, "commit", rc) : 0;
}

static void lmdb_close(void *hv)
{
	struct lmdb_h *h = hv;

	mdb_txn_abort(h->rtxn);
	mdb_env_close(h->env);
	free(h->vbuf);
	free(h->rbuf);
	free(h);
}

const struct peer peer_lmdb = {
	.name = "LMDB",
	.what = { { "1 read txn per get", "1 read txn per %u gets" },
		  { "1 write txn per put", "%u puts per write txn" } },
	.start = lmdb_start, .stop = lmdb_stop, .server = lmdb_server,
	.describe = lmdb_describe, .ops = lmdb_ops,
	.open = lmdb_open, .get = lmdb_get, .put = lmdb_put,
	.close = lmdb_close,
};

/* Needs peer_lmdb's environment: listed after it, skipped without it. */
static int lmdb_sync_start(char *msg)
{
	if (!loaded) {
		msgf(msg, "LMDB did not start");
		return 1;
	}
	return 0;
}

const struct peer peer_lmdb_sync = {
	.name = "LMDB sync",
	.what = { { "", "" }, { "1 synced txn per put", "" } },
	.start = lmdb_sync_start, .stop = lmdb_stop, .server = lmdb_server,
	.describe = lmdb_sync_describe, .ops = lmdb_sync_ops,
	.open = lmdb_sync_open, .get = lmdb_get, .put = lmdb_put,
	.close = lmdb_close,
};
