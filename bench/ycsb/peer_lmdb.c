// SPDX-License-Identifier: GPL-2.0-only
/*
 * peer_lmdb.c - LMDB as a tdb-bench-ycsb peer: one environment in the
 * run's directory, created by start() and opened by every client
 * process on its own after the fork (an environment must not cross
 * one), with MDB_NOSYNC | MDB_NOMETASYNC as tdb-bench's LMDB peer (tdbd
 * runs --sync none: neither side syncs).  The map size is set from
 * recordcount and the run's inserts.
 *
 *   read     one read transaction per read (mdb_txn_renew, mdb_get,
 *            the value copied out, mdb_txn_reset)
 *   insert   one write transaction per insert; the load puts 1000
 *            inserts in a transaction (flush() commits the last)
 *   update   one write transaction: mdb_get, the field patched in a
 *            copy, mdb_put: atomic (LMDB has one writer at a time)
 *   rmw      the same: atomic
 *   scan     a read transaction, a cursor: MDB_SET_RANGE then MDB_NEXT,
 *            each value's first and last byte read
 * LMDB keeps keys in bytewise order, as tdb's ordered table does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "driver.h"

#define LOAD_PER_TXN 1000u
#define ENV_FLAGS    (MDB_NOSYNC | MDB_NOMETASYNC)

static char envdir[4200];

static int fail(const char *what, int rc, char *msg)
{
	ycsb_msgf(msg, "LMDB %s: %s", what, mdb_strerror(rc));
	return rc == MDB_NOTFOUND ? -ENOENT : -EIO;
}

static size_t map_size(const struct ycsb_conf *c)
{
	uint64_t recs = c->recordcount + (uint64_t)(c->insertproportion *
		(double)c->operationcount) + 1;
	uint64_t raw = recs * (YCSB_KEY_MAX + ycsb_vlen(c) + 64);
	uint64_t m = 256ull << 20;

	while (m < 4 * raw)
		m <<= 1;
	return (size_t)m;
}

static int env_open(const struct ycsb_conf *c, MDB_env **env, MDB_dbi *dbi,
		    char *msg)
{
	MDB_txn *txn;
	int rc;

	*env = NULL;
	rc = mdb_env_create(env);
	if (!rc)
		rc = mdb_env_set_mapsize(*env, map_size(c));
	if (!rc)
		rc = mdb_env_set_maxreaders(*env, 2 * YCSB_PROCS_MAX + 16);
	if (!rc)
		rc = mdb_env_open(*env, envdir, ENV_FLAGS, 0600);
	if (!rc)
		rc = mdb_txn_begin(*env, NULL, 0, &txn);
	if (!rc) {
		rc = mdb_dbi_open(txn, NULL, 0, dbi);
		if (!rc)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
	}
	if (rc) {
		ycsb_msgf(msg, "LMDB environment in %s: %s", envdir,
			  mdb_strerror(rc));
		if (*env)
			mdb_env_close(*env);
		*env = NULL;
		return -EIO;
	}
	return 0;
}

/* --- driver ------------------------------------------------------------ */
static int lmdb_start(const struct ycsb_conf *c, char *msg)
{
	MDB_env *env;
	MDB_dbi dbi;

	snprintf(envdir, sizeof(envdir), "%s/lmdb", c->dir);
	if (mkdir(envdir, 0700)) {
		ycsb_msgf(msg, "mkdir %s: %s", envdir, strerror(errno));
		return -1;
	}
	if (env_open(c, &env, &dbi, msg))
		return -1;
	mdb_env_close(env);     /* the clients open their own */
	return 0;
}

static void lmdb_stop(void)
{
	if (envdir[0] && ycsb_rm_tree(envdir))
		fprintf(stderr, "tdb-bench-ycsb: could not remove %s\n",
			envdir);
}

static pid_t lmdb_server(void)
{
	return 0;
}

static void lmdb_describe(const struct ycsb_conf *c, char *buf, size_t len)
{
	int maj, min, pat;

	mdb_version(&maj, &min, &pat);
	snprintf(buf, len, "%d.%d.%d, MDB_NOSYNC|MDB_NOMETASYNC, map %zu MiB, "
		 "one environment opened by each process; read: a read txn "
		 "per get; update/rmw: one write txn get+put (atomic); "
		 "insert: a write txn each (load: %u per txn); scan: cursor "
		 "SET_RANGE+NEXT", maj, min, pat, map_size(c) >> 20,
		 LOAD_PER_TXN);
}

/* --- client ----------------------------------------------------------- */
struct lmdb_h {
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *rtxn;          /* reset between reads, renewed per read */
	MDB_txn *ltxn;          /* the load's open write transaction */
	unsigned int lcount;    /* inserts in it */
	const struct ycsb_conf *conf;
	uint8_t *rec;
};

static void lmdb_close(void *hv)
{
	struct lmdb_h *h = hv;

	if (h->ltxn)
		mdb_txn_abort(h->ltxn);
	if (h->rtxn)
		mdb_txn_abort(h->rtxn);
	if (h->env)
		mdb_env_close(h->env);
	free(h->rec);
	free(h);
}

static int lmdb_open(const struct ycsb_conf *c, unsigned int proc, void **out,
		     char *msg)
{
	struct lmdb_h *h = calloc(1, sizeof(*h));
	int rc;

	(void)proc;
	if (!h || !(h->rec = malloc(ycsb_vlen(c)))) {
		free(h);
		ycsb_msgf(msg, "out of memory");
		return -ENOMEM;
	}
	h->conf = c;
	if (env_open(c, &h->env, &h->dbi, msg)) {
		lmdb_close(h);
		return -EIO;
	}
	rc = mdb_txn_begin(h->env, NULL, MDB_RDONLY, &h->rtxn);
	if (rc) {
		fail("read txn", rc, msg);
		lmdb_close(h);
		return -EIO;
	}
	mdb_txn_reset(h->rtxn);
	*out = h;
	return 0;
}

static int load_insert(struct lmdb_h *h, MDB_val *k, MDB_val *v, char *msg)
{
	int rc;

	if (!h->ltxn && (rc = mdb_txn_begin(h->env, NULL, 0, &h->ltxn)))
		return fail("txn_begin (load)", rc, msg);
	rc = mdb_put(h->ltxn, h->dbi, k, v, 0);
	if (rc)
		return fail("put (load)", rc, msg);
	if (++h->lcount < LOAD_PER_TXN)
		return 0;
	h->lcount = 0;
	rc = mdb_txn_commit(h->ltxn);
	h->ltxn = NULL;
	return rc ? fail("commit (load)", rc, msg) : 0;
}

static int lmdb_insert(void *hv, const char *key, size_t klen,
		       const void *val, size_t vlen, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
	MDB_txn *txn;
	int rc;

	if (h->conf->loading)
		return load_insert(h, &k, &v, msg);
	rc = mdb_txn_begin(h->env, NULL, 0, &txn);
	if (rc)
		return fail("txn_begin", rc, msg);
	rc = mdb_put(txn, h->dbi, &k, &v, 0);
	if (rc) {
		mdb_txn_abort(txn);
		return fail("put", rc, msg);
	}
	rc = mdb_txn_commit(txn);
	return rc ? fail("commit", rc, msg) : 0;
}

static int lmdb_read(void *hv, const char *key, size_t klen, void *out,
		     size_t vlen, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { klen, (void *)key }, v;
	int rc = mdb_txn_renew(h->rtxn);

	if (rc)
		return fail("txn_renew", rc, msg);
	rc = mdb_get(h->rtxn, h->dbi, &k, &v);
	if (!rc && v.mv_size == vlen)
		memcpy(out, v.mv_data, vlen);
	mdb_txn_reset(h->rtxn);
	if (rc)
		return fail("get", rc, msg);
	if (v.mv_size != vlen) {
		ycsb_msgf(msg, "LMDB get: %zu bytes, not %zu", v.mv_size, vlen);
		return -EIO;
	}
	return 0;
}

/* One write transaction: the record, the field patched, put back. */
static int patch(struct lmdb_h *h, const char *key, size_t klen, int field,
		 const void *bytes, size_t len, char *msg)
{
	size_t vl = ycsb_vlen(h->conf);
	MDB_val k = { klen, (void *)key }, v;
	MDB_txn *txn;
	int rc = mdb_txn_begin(h->env, NULL, 0, &txn);

	if (rc)
		return fail("txn_begin", rc, msg);
	rc = mdb_get(txn, h->dbi, &k, &v);
	if (rc) {
		mdb_txn_abort(txn);
		return fail("get (for an update)", rc, msg);
	}
	if (v.mv_size != vl) {
		mdb_txn_abort(txn);
		ycsb_msgf(msg, "LMDB: the record has %zu bytes, not %zu",
			  v.mv_size, vl);
		return -EIO;
	}
	memcpy(h->rec, v.mv_data, vl);
	if (field >= 0)
		memcpy(h->rec + (size_t)field * h->conf->fieldlength, bytes,
		       len);
	else
		memcpy(h->rec, bytes, vl);
	v = (MDB_val){ vl, h->rec };
	rc = mdb_put(txn, h->dbi, &k, &v, 0);
	if (rc) {
		mdb_txn_abort(txn);
		return fail("put", rc, msg);
	}
	rc = mdb_txn_commit(txn);
	return rc ? fail("commit", rc, msg) : 0;
}

static int lmdb_update(void *hv, const char *key, size_t klen, int field,
		       const void *bytes, size_t len, char *msg)
{
	if (field < 0)
		return lmdb_insert(hv, key, klen, bytes, len, msg);
	return patch(hv, key, klen, field, bytes, len, msg);
}

static int lmdb_rmw(void *hv, const char *key, size_t klen, int field,
		    const void *bytes, size_t len, char *msg)
{
	return patch(hv, key, klen, field, bytes, len, msg);
}

static volatile unsigned int scan_sink;

static int lmdb_scan(void *hv, const char *key, size_t klen,
		     unsigned int count, unsigned int *got, char *msg)
{
	struct lmdb_h *h = hv;
	MDB_val k = { klen, (void *)key }, v;
	MDB_cursor *cur;
	unsigned int sum = 0, n = 0;
	int rc = mdb_txn_renew(h->rtxn);

	*got = 0;
	if (rc)
		return fail("txn_renew", rc, msg);
	rc = mdb_cursor_open(h->rtxn, h->dbi, &cur);
	if (rc) {
		mdb_txn_reset(h->rtxn);
		return fail("cursor_open", rc, msg);
	}
	rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
	while (!rc) {
		const uint8_t *b = v.mv_data;

		if (v.mv_size)
			sum += b[0] + b[v.mv_size - 1];
		if (++n == count)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(cur);
	mdb_txn_reset(h->rtxn);
	scan_sink = sum;
	*got = n;
	if (rc && rc != MDB_NOTFOUND)
		return fail("cursor_get", rc, msg);
	return 0;
}

static int lmdb_flush(void *hv, char *msg)
{
	struct lmdb_h *h = hv;
	int rc;

	if (!h->ltxn)
		return 0;
	rc = mdb_txn_commit(h->ltxn);
	h->ltxn = NULL;
	h->lcount = 0;
	return rc ? fail("commit (load)", rc, msg) : 0;
}

const struct ycsb_peer ycsb_lmdb = {
	.name = "LMDB",
	.start = lmdb_start, .stop = lmdb_stop, .server = lmdb_server,
	.describe = lmdb_describe, .open = lmdb_open, .insert = lmdb_insert,
	.read = lmdb_read, .update = lmdb_update, .scan = lmdb_scan,
	.rmw = lmdb_rmw, .flush = lmdb_flush, .close = lmdb_close,
};
