// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_versions.c - versions across a restart (issue 24, "conditions
 * across a restart"; docs/DURABILITY.md, "Versions"): a version read
 * before a restart of tdbd still decides a compare-and-swap after it,
 * and no version is given twice to a key, whether the restart is clean
 * (SIGTERM: the start loads the checkpoint it wrote) or a SIGKILL (the
 * start replays the WAL), and after a start that loaded the checkpoint
 * and replayed the WAL on top of it.
 *
 * Parts (TDB_ITEST_ONLY=name):
 *  - restart: put, read the version, restart (clean, then SIGKILL,
 *    then SIGKILL after a checkpoint and more writes); each time the
 *    value and version are as before, PUT IF_VERSION with the old
 *    version succeeds and one with a stale version fails with
 *    -ECANCELED and changes nothing, a DEL IF_VERSION likewise; a key
 *    deleted and written again after the restart gets a version above
 *    every one seen before it.
 *  - legacy: a data directory from before versions (its WAL's records
 *    of changes are WAL_OPS, without a version, written here with
 *    src/wal): each key's version is the LSN of the record that wrote
 *    it, and every version given after the start is above the log's
 *    last LSN.
 *  - oldckpt: a checkpoint from before versions (format 1, no "/ver/"
 *    or "/lver/" databases, no "version" in /meta: made here from a new
 *    one with LMDB): its records load at the checkpoint's LSN as their
 *    version, later versions are above it, and the checkpoint after
 *    that start writes the table whole with its versions (format 3,
 *    which has deadlines beside them too),
 *    which the next start gives back unchanged.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "harness.h"
#include "wal.h"

#define TABLE "ver"

static uint64_t max_seen;

/* The key's value (must be want) and its version (not 0, noted). */
static uint64_t get_ver(struct tdbc_table *t, const char *key,
			const char *want)
{
	char buf[64];
	size_t need = 0;
	uint64_t v = 0;
	long n = tdbc_get_ver(t, NULL, key, strlen(key), buf, sizeof(buf),
			      &need, &v);

	CHECK(n == (long)strlen(want) && !memcmp(buf, want, (size_t)n),
	      "get %s: %ld (%s), want '%s'", key, n, h_errname((int)n), want);
	CHECK(v != 0, "get %s: version 0", key);
	if (v > max_seen)
		max_seen = v;
	return v;
}

static void put_ok(struct tdbc_table *t, const char *key, const char *val)
{
	int e = tdbc_put(t, NULL, key, strlen(key), val, strlen(val), 0);

	CHECK(e == 0, "put %s: %s", key, h_errname(e));
}

/* A restart of kind "clean" (SIGTERM) or "kill" (SIGKILL), and a new
 * connection and table handle. */
static void restart(struct h_daemon *d, const char *tag, const char *how,
		    struct tdbc **c, struct tdbc_table **t)
{
	int e;

	tdbc_table_close(*t);
	tdbc_close(*c);
	if (!strcmp(how, "clean")) {
		h_stop(d);
	} else {
		CHECK(kill(d->pid, SIGKILL) == 0, "kill");
		CHECK(h_wait_exit(d, 10000), "tdbd did not die of SIGKILL");
		CHECK(WIFSIGNALED(d->status) &&
		      WTERMSIG(d->status) == SIGKILL,
		      "tdbd ended before the SIGKILL");
	}
	h_start(d, tag, NULL);
	*c = h_connect(d, 0);
	e = tdbc_table_open(*c, TABLE, t);
	CHECK(!e, "open after a %s restart: %s", how, h_errname(e));
	/* records that take an LSN and no version: from here on a version
	 * is not the LSN of its record (a replay that took the one for the
	 * other would show) */
	e = tdbc_table_create(*c, "pad", NULL);
	CHECK(!e, "create pad: %s", h_errname(e));
	e = tdbc_table_drop(*c, "pad");
	CHECK(!e, "drop pad: %s", h_errname(e));
}

/* After a restart: key is at version v with value val; a stale CAS and
 * a stale DEL fail and change nothing; the CAS with v succeeds and
 * gives a higher version; returns it. */
static uint64_t cas_round(struct tdbc_table *t, const char *key,
			  const char *val, uint64_t v, uint64_t stale,
			  const char *newval, const char *how)
{
	uint64_t nv;
	int e;

	CHECK(get_ver(t, key, val) == v, "%s restart: %s's version changed",
	      how, key);
	e = tdbc_put_if(t, NULL, key, strlen(key), "stale", 5,
			TDBC_IF_VERSION, stale);
	CHECK_EQ(e, -ECANCELED, "put if-version with a stale version");
	e = tdbc_del_if(t, NULL, key, strlen(key), TDBC_IF_VERSION, stale);
	CHECK_EQ(e, -ECANCELED, "del if-version with a stale version");
	CHECK(get_ver(t, key, val) == v, "a failed condition changed %s",
	      key);
	e = tdbc_put_if(t, NULL, key, strlen(key), newval, strlen(newval),
			TDBC_IF_VERSION, v);
	CHECK_EQ(e, 0, "put if-version with the version read before the "
		 "restart");
	nv = get_ver(t, key, newval);
	CHECK(nv > v, "%s restart: the CAS gave version %llu after %llu",
	      how, (unsigned long long)nv, (unsigned long long)v);
	return nv;
}

/* Delete key and write it again: its new version is above every version
 * seen so far (none is given twice, a deleted key's included). */
static void recreate(struct tdbc_table *t, const char *key, const char *how)
{
	uint64_t before = max_seen, v;
	int e = tdbc_del(t, NULL, key, strlen(key));

	CHECK(e == 0, "del %s: %s", key, h_errname(e));
	put_ok(t, key, "again");
	v = get_ver(t, key, "again");
	CHECK(v > before, "%s restart: %s re-created at version %llu, not "
	      "above %llu", how, key, (unsigned long long)v,
	      (unsigned long long)before);
}

static void part_restart(void)
{
	struct h_daemon d;
	struct tdbc *c;
	struct tdbc_table *t;
	uint64_t v1, v2, v3, vd;
	int e;

	max_seen = 0;
	h_start(&d, "v", NULL);
	c = h_connect(&d, 0);
	e = tdbc_table_create(c, TABLE, NULL);
	CHECK(!e, "create: %s", h_errname(e));
	e = tdbc_table_open(c, TABLE, &t);
	CHECK(!e, "open: %s", h_errname(e));
	put_ok(t, "k", "one");
	v1 = get_ver(t, "k", "one");
	put_ok(t, "gone", "x");
	vd = get_ver(t, "gone", "x");
	e = tdbc_del(t, NULL, "gone", 4);
	CHECK(!e, "del gone: %s", h_errname(e));
	put_ok(t, "other", "o");
	(void)get_ver(t, "other", "o");

	/* clean: SIGTERM writes a checkpoint, the start loads it */
	restart(&d, "v", "clean", &c, &t);
	CHECK(h_log_has(&d, "versions up to"), "no 'versions up to' line");
	v2 = cas_round(t, "k", "one", v1, v1 + 1000, "two", "clean");
	put_ok(t, "gone", "back");      /* the key deleted before it */
	CHECK(get_ver(t, "gone", "back") > vd, "a deleted key's version "
	      "given again after a restart");
	recreate(t, "other", "clean");

	/* SIGKILL: the start replays the WAL */
	restart(&d, "v", "kill", &c, &t);
	v3 = cas_round(t, "k", "two", v2, v1, "three", "SIGKILL");
	recreate(t, "other", "SIGKILL");

	/* a checkpoint, more changes in the WAL only, SIGKILL: loaded and
	 * replayed on top */
	restart(&d, "v", "clean", &c, &t);
	put_ok(t, "w", "wal only");
	(void)get_ver(t, "w", "wal only");
	restart(&d, "v", "kill", &c, &t);
	(void)cas_round(t, "k", "three", v3, v2, "four", "checkpoint+WAL");
	(void)get_ver(t, "w", "wal only");
	recreate(t, "other", "checkpoint+WAL");
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
}

/* --- a data directory from before versions --------------------------- */

static void add_op_rec(struct wal *w, const char *key, const char *val,
		       uint64_t want_lsn)
{
	const char *emsg = NULL;
	uint64_t lsn;
	size_t sz = wal_rec_size(WAL_OPS, 1, strlen(TABLE) + strlen(key) +
				 (val ? strlen(val) : 0));

	CHECK(wal_reserve(w, sz, &emsg) == 0, "wal_reserve: %s", emsg);
	wal_begin(w, WAL_OPS);          /* the old kind: no version */
	CHECK(wal_add_op(w, val ? WAL_OP_PUT : WAL_OP_DEL, TABLE, key,
			 (uint32_t)strlen(key), val,
			 val ? (uint32_t)strlen(val) : 0) == 0, "wal_add_op");
	CHECK(wal_commit(w, sz, &lsn) == 0 && lsn == want_lsn,
	      "wal_commit: LSN %llu", (unsigned long long)lsn);
}

static void part_legacy(void)
{
	char dir[H_PATH], err[256];
	const char *emsg = NULL;
	struct wal_opts o = { .segment_size = 1u << 20, .batch_ms = 1 };
	struct wal *w = NULL;
	struct h_daemon d;
	struct tdbc *c;
	struct tdbc_table *t;
	uint64_t lsn, v;
	size_t sz;
	int e;

	snprintf(dir, sizeof(dir), "%s/old.data", h_dir());
	CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
	strcat(dir, "/wal");
	CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
	e = wal_open(dir, 1, &o, &w, err, sizeof(err));
	CHECK(e == 0, "wal_open: %s", err);
	sz = wal_rec_size(WAL_CREATE, 0, strlen(TABLE));
	CHECK(wal_reserve(w, sz, &emsg) == 0, "wal_reserve: %s", emsg);
	wal_begin(w, WAL_CREATE);
	CHECK(wal_add_create(w, 1, TABLE, 0, 0, 0600, 0, WAL_SYNC_ALWAYS)
	      == 0, "wal_add_create");
	CHECK(wal_commit(w, sz, &lsn) == 0 && lsn == 1, "wal_commit");
	add_op_rec(w, "a", "A", 2);
	add_op_rec(w, "b", "B", 3);
	add_op_rec(w, "a", "A2", 4);
	add_op_rec(w, "b", NULL, 5);
	add_op_rec(w, "c", "C", 6);
	CHECK(wal_sync_to(w, 6) == 0, "wal_sync_to");
	wal_close(w);

	h_start(&d, "old", NULL);
	c = h_connect(&d, 0);
	e = tdbc_table_open(c, TABLE, &t);
	CHECK(!e, "open: %s", h_errname(e));
	CHECK_EQ(get_ver(t, "a", "A2"), 4, "an old record's version (LSN)");
	CHECK_EQ(get_ver(t, "c", "C"), 6, "an old record's version (LSN)");
	put_ok(t, "b", "new");
	v = get_ver(t, "b", "new");
	CHECK(v > 6, "a version given after an old log: %llu, not above its "
	      "last LSN 6", (unsigned long long)v);
	/* and through the checkpoint that start wrote, a clean restart */
	restart(&d, "old", "clean", &c, &t);
	CHECK_EQ(get_ver(t, "a", "A2"), 4, "version after the checkpoint");
	CHECK_EQ(get_ver(t, "b", "new"), v, "version after the checkpoint");
	e = tdbc_put_if(t, NULL, "a", 1, "A3", 2, TDBC_IF_VERSION, 4);
	CHECK_EQ(e, 0, "CAS with an old record's version");
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
}

/* --- a checkpoint from before versions -------------------------------- */

/* Make d's (stopped) checkpoint one from before versions. */
static void make_old_checkpoint(const struct h_daemon *d)
{
	static const char *const dbs[] = { "/ver/" TABLE, "/lver/" TABLE };
	char path[H_PATH + 16];
	MDB_val k = { 7, "version" }, fk = { 6, "format" };
	MDB_val fv = { 4, "\1\0\0\0" };
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi, meta;

	snprintf(path, sizeof(path), "%s/checkpoint", d->data);
	CHECK(!mdb_env_create(&env) && !mdb_env_set_maxdbs(env, 64) &&
	      !mdb_env_open(env, path, 0, 0640), "open %s", path);
	CHECK(!mdb_txn_begin(env, NULL, 0, &txn), "mdb_txn_begin");
	for (unsigned int i = 0; i < 2; i++) {
		CHECK(!mdb_dbi_open(txn, dbs[i], 0, &dbi), "no %s", dbs[i]);
		CHECK(!mdb_drop(txn, dbi, 1), "drop %s", dbs[i]);
	}
	CHECK(!mdb_dbi_open(txn, "/meta", 0, &meta), "/meta");
	CHECK(!mdb_del(txn, meta, &k, NULL), "no version in /meta");
	CHECK(!mdb_put(txn, meta, &fk, &fv, 0), "format 1");
	CHECK(!mdb_txn_commit(txn), "commit");
	mdb_env_close(env);
}

static void part_oldckpt(void)
{
	static const char *const args[] = { "--log-level", "debug", NULL };
	struct h_daemon d;
	struct tdbc *c;
	struct tdbc_table *t;
	uint64_t lsn, va, vb, vc;
	const char *p;
	char *log;
	int e;

	h_start(&d, "oc", args);
	c = h_connect(&d, 0);
	e = tdbc_table_create(c, TABLE, NULL);
	CHECK(!e, "create: %s", h_errname(e));
	e = tdbc_table_open(c, TABLE, &t);
	CHECK(!e, "open: %s", h_errname(e));
	put_ok(t, "a", "A");
	put_ok(t, "b", "B");
	e = tdbc_del(t, NULL, "b", 1);
	CHECK(!e, "del: %s", h_errname(e));
	put_ok(t, "c", "C");
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);                     /* writes the checkpoint */
	make_old_checkpoint(&d);

	h_start(&d, "oc", args);
	log = h_read_file(d.log);
	p = strrchr(log, '\0');
	while (p > log && strncmp(p, "checkpoint at LSN ", 18))
		p--;
	CHECK(sscanf(p, "checkpoint at LSN %llu:", (unsigned long long *)&lsn)
	      == 1 && lsn >= 4, "no 'checkpoint at LSN' line");
	free(log);
	c = h_connect(&d, 0);
	e = tdbc_table_open(c, TABLE, &t);
	CHECK(!e, "open: %s", h_errname(e));
	CHECK_EQ(get_ver(t, "a", "A"), lsn, "a record of an old checkpoint");
	CHECK_EQ(get_ver(t, "c", "C"), lsn, "a record of an old checkpoint");
	put_ok(t, "b", "B2");
	vb = get_ver(t, "b", "B2");
	CHECK(vb > lsn, "a version after an old checkpoint: %llu, not above "
	      "its LSN %llu", (unsigned long long)vb, (unsigned long long)lsn);
	e = tdbc_put_if(t, NULL, "c", 1, "C2", 2, TDBC_IF_VERSION, lsn);
	CHECK_EQ(e, 0, "CAS with an old checkpoint's version");
	vc = get_ver(t, "c", "C2");
	va = get_ver(t, "a", "A");

	/* that start's stop writes the table whole, with versions */
	restart(&d, "oc", "clean", &c, &t);
	CHECK_EQ(get_ver(t, "a", "A"), va, "version after the rewrite");
	CHECK_EQ(get_ver(t, "b", "B2"), vb, "version after the rewrite");
	CHECK_EQ(get_ver(t, "c", "C2"), vc, "version after the rewrite");
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	{
		char path[H_PATH + 32];
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_val k = { 6, "format" }, v;

		snprintf(path, sizeof(path), "%s/checkpoint", d.data);
		CHECK(!mdb_env_create(&env) && !mdb_env_set_maxdbs(env, 64) &&
		      !mdb_env_open(env, path, MDB_RDONLY, 0640), "open");
		CHECK(!mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), "txn");
		CHECK(!mdb_dbi_open(txn, "/ver/" TABLE, 0, &dbi),
		      "no /ver/ after the rewrite");
		CHECK(!mdb_dbi_open(txn, "/meta", 0, &dbi) &&
		      !mdb_get(txn, dbi, &k, &v) && v.mv_size == 4 &&
		      !memcmp(v.mv_data, "\4\0\0\0", 4),
		      "format 4 (versions, deadlines, table flags) after the "
		      "rewrite");
		mdb_txn_abort(txn);
		mdb_env_close(env);
	}
}

int main(void)
{
	h_init("versions", h_sanitized() ? 480 : 120);
	if (h_want("restart"))
		part_restart();
	if (h_want("legacy"))
		part_legacy();
	if (h_want("oldckpt"))
		part_oldckpt();
	h_done();
	return 0;
}
