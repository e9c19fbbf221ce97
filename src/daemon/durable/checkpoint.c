// SPDX-License-Identifier: GPL-2.0-only
/*
 * checkpoint.c - checkpoints (durable_int.h): the checkpointer thread
 * and each checkpoint into the LMDB store (ckpt.c), the last one when
 * tdbd stops, the store's compaction.  Owns struct durable.
 *
 * Invariants:
 *  - A checkpoint takes each table's dirty set and the WAL's last LSN
 *    under the write lock, then writes outside it: the values it reads
 *    may be newer than that LSN, which is harmless since replaying a put
 *    or a delete twice gives the same result.  It copies the keys to
 *    write and sorts them in LMDB's order (keysort.c), then reads their
 *    values under the table's write lock (briefly, 256 keys at a time),
 *    so it never sees a commit half-applied or a failed one before its
 *    undo.  And it syncs the WAL up to everything written before it
 *    commits, so the checkpoint never holds a change whose record could
 *    still be lost.  Only then are segments wholly before its LSN
 *    removed.  A checkpoint that fails (or is abandoned because tdbd
 *    stops) gives its dirty sets back, and one that failed is not
 *    retried for the WAL-size trigger before CKPT_RETRY_NS.
 *  - SIGTERM never waits for a big checkpoint: the WAL is synced to its
 *    end, a running checkpoint is abandoned (its LMDB txn aborted), and
 *    the last one is written only if small (STOP_CKPT_MAX records) and
 *    within STOP_CKPT_NS; else the next start replays the WAL.
 *  - A table set aside at start (recover.c) is never written: only its
 *    schema and "aside/<name>" = from; every WAL segment with records
 *    after the smallest such LSN is kept.
 *  - Kernel mode (u->kernel: no tables in tdbd) checkpoints with
 *    checkpoint_k instead: the WAL's durable records after the store's
 *    LSN applied to the store (ckapply.c) in runs of
 *    checkpoint-run-size, each a commit, after which the segments it
 *    covers go.  Same triggers, same failure handling.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckapply.h"
#include "ckpt.h"
#include "durable_int.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "keysort.h"
#include "notify.h"
#include "tdbd.h"
#include "wal.h"

#define CKPT_RETRY_NS 1000000000ull  /* a failed checkpoint's retry on the
				      * WAL-size trigger waits this long */
#define STOP_CKPT_MAX 1000000ull     /* records a stop checkpoint may write
				      * (TDBD_STOP_CKPT_MAX overrides) */
#define STOP_CKPT_NS 5000000000ull   /* and the time it may take */
#define COMPACT_MIN (16ull << 20)    /* no compaction of a smaller file
				      * (TDBD_CKPT_COMPACT_MIN overrides) */

struct durable *dur_new(const char *data_dir)
{
	struct durable *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	pthread_mutex_init(&u->m, NULL);
	pthread_cond_init(&u->cv, NULL);
	snprintf(u->wal_dir, sizeof(u->wal_dir), "%s/wal", data_dir);
	return u;
}

void dur_free(struct durable *u)
{
	if (!u)
		return;
	free(u->tabs);
	free(u->buf);
	pthread_mutex_destroy(&u->m);
	free(u->names);
	pthread_cond_destroy(&u->cv);
	free(u);
}

/* Is this checkpoint to be abandoned?  SIGTERM abandons a running one
 * (u->cancel) and the stop checkpoint has a deadline; its transaction is
 * then aborted (the store stays as of the last checkpoint, the WAL has
 * every change since).  While stopping, tell systemd once a second. */
static int ckpt_step(struct tdbd *d, struct durable *u)
{
	uint64_t now;

	if (__atomic_load_n(&u->cancel, __ATOMIC_RELAXED))
		return -ECANCELED;
	if (++u->steps & 0xfff)
		return 0;
	if (!u->deadline_ns && !__atomic_load_n(&d->stopping, __ATOMIC_RELAXED))
		return 0;
	now = tdbd_now_ns();
	if (u->deadline_ns && now > u->deadline_ns)
		return -ECANCELED;
	if (now - u->tick_ns >= 1000000000ull) {
		u->tick_ns = now;
		tdbd_notify("STATUS=stopping: last checkpoint, %llu records "
			    "written\nEXTEND_TIMEOUT_USEC=10000000",
			    (unsigned long long)u->written);
	}
	return 0;
}

struct taken {
	struct tdbo_table *dt;      /* counted */
	struct dirty *dirty;
	bool full;
};

static int ck_tab_find(const struct durable *u, const char *name,
		       uint64_t id)
{
	unsigned int i;

	for (i = 0; i < u->ntabs; i++)
		if (!strcmp(u->tabs[i].name, name))
			return u->tabs[i].id == id ? 1 : 0;
	return -1;
}

#define READ_BATCH 256u        /* keys looked up under one lock hold */

/*
 * Values are read under the table's write lock: a transaction commit
 * logs its changes, applies them and undoes them (taking its record
 * back) if one fails, all under that lock, so a read outside it could
 * see a commit half-applied, or a failed one not yet undone, and the
 * checkpoint would keep changes whose record was taken back.  The lock
 * is held for READ_BATCH lookups at a time (tdbe_lookup_many: their
 * cache misses overlap) and the values copied out (u->buf), a few tens
 * of microseconds; then they go to LMDB outside it.
 *
 * Keys ks[from, from + n), in order.  append: the table's databases were
 * reset in this checkpoint (MDB_APPEND; a key gone since is simply not
 * written); else a key gone is deleted.
 */
static int write_batch(struct durable *u, struct ckpt_txn *tx,
		       struct tdbo_table *dt, const struct keyset *ks,
		       size_t from, unsigned int n, bool append)
{
	struct tdbe_lookup_req rq[READ_BATCH];
	size_t off[READ_BATCH], need = 0, at = 0;
	unsigned int i;
	int err = 0;

	for (i = 0; i < n; i++)
		rq[i].key = keyset_key(ks, from + i, &rq[i].klen);
	tdbo_table_lock(dt);
	tdbe_read_lock();
	tdbe_lookup_many(dt->t, rq, n);
	for (i = 0; i < n; i++)
		if (!rq[i].err)
			need += rq[i].vlen;
	if (need > u->bufcap) {
		void *nb = realloc(u->buf, need);

		if (nb) {
			u->buf = nb;
			u->bufcap = need;
		} else {
			err = -ENOMEM;
		}
	}
	for (i = 0; !err && i < n; i++) {
		off[i] = at;
		if (rq[i].err)
			continue;
		memcpy((char *)u->buf + at, rq[i].val, rq[i].vlen);
		at += rq[i].vlen;
	}
	tdbe_read_unlock();
	tdbo_table_unlock(dt);
	for (i = 0; !err && i < n; i++) {
		const void *val = (char *)u->buf + off[i];

		if (rq[i].err == -ENOENT) {
			if (!append)
				err = tdbd_ckpt_del(tx, dt->name, rq[i].key,
						    rq[i].klen);
			continue;
		}
		if (rq[i].err) {
			err = rq[i].err;
			break;
		}
		u->written++;
		/* with its deadline; one expired already was absent to
		 * the lookup (-ENOENT above): not written */
		err = append ? tdbd_ckpt_append_dl(tx, dt->name, rq[i].key,
						   rq[i].klen, val,
						   rq[i].vlen, rq[i].version,
						   rq[i].deadline) :
			       tdbd_ckpt_put_dl(tx, dt->name, rq[i].key,
						rq[i].klen, val, rq[i].vlen,
						rq[i].version,
						rq[i].deadline);
	}
	return err;
}

/* Every key of the table, copied (under its lock, TDBE_CURSOR_MANY
 * records at a time: keys only, the values are read again in order). */
static int gather_table(struct tdbd *d, struct durable *u,
			struct tdbo_table *dt, struct keyset *ks)
{
	struct tdbe_cursor_rec rec[TDBE_CURSOR_MANY];
	struct tdbe_table_stat st;
	struct tdbe_cursor *cur;
	int err = 0, r;

	tdbe_table_stat(dt->t, &st);
	if ((err = keyset_reserve(ks, st.records)))
		return err;
	if (!(cur = tdbe_cursor_open(dt->t, &err)))
		return err;
	do {
		/* one bounded batch per lock hold, whole index buckets */
		tdbo_table_lock(dt);
		r = tdbe_cursor_next_many(cur, rec, TDBE_CURSOR_MANY,
					  TDBE_CURSOR_KEYS);
		for (int j = 0; j < r && !err; j++)
			err = keyset_add(ks, rec[j].key, rec[j].klen);
		tdbo_table_unlock(dt);
		if (!err)
			err = ckpt_step(d, u);
	} while (!err && r > 0);
	if (!err && r < 0)
		err = r;
	tdbe_cursor_close(cur);
	return err;
}

/*
 * An ordered table written whole: its cursor walks it in key order,
 * which is LMDB's (memcmp, the shorter first: tdbe_key_order), so its
 * records go from the cursor straight into the reset databases with
 * MDB_APPEND: no copy of the keys, no sort, no second lookup (the
 * issue's "straight append").  Read under the table's write lock,
 * TDBE_CURSOR_MANY records at a time, as write_batch reads (a commit
 * half-applied or a failed one not yet undone is never seen); written
 * to LMDB outside it (the records stay in the cursor's buffer until its
 * next call).  The cursor's guarantee is the one gather_table relies
 * on: a key present for the whole walk is written once; one put or
 * deleted meanwhile may or may not be, and its WAL record (after the
 * checkpoint's LSN) is replayed over it.  It skips records already
 * expired (absent to the engine).  Keys come in increasing order: one
 * that did not would fail the append (-EINVAL), the checkpoint and not
 * the data (retried later, the WAL kept).
 */
static int write_ordered(struct tdbd *d, struct durable *u,
			 struct ckpt_txn *tx, struct tdbo_table *dt)
{
	struct tdbe_cursor_rec rec[TDBE_CURSOR_MANY];
	struct tdbe_cursor *cur;
	int err = 0, r, j;

	if ((err = tdbd_ckpt_reset_table(tx, dt->name)))
		return err;
	if (!(cur = tdbe_cursor_open(dt->t, &err)))
		return err;
	do {
		tdbo_table_lock(dt);
		r = tdbe_cursor_next_many(cur, rec, TDBE_CURSOR_MANY, 0);
		tdbo_table_unlock(dt);
		for (j = 0; j < r && !err; j++) {
			u->written++;
			err = tdbd_ckpt_append_dl(tx, dt->name, rec[j].key,
						  rec[j].klen, rec[j].val,
						  rec[j].vlen, rec[j].version,
						  rec[j].deadline);
		}
		if (!err)
			err = ckpt_step(d, u);
	} while (!err && r > 0);
	if (!err && r < 0)
		err = r;
	tdbe_cursor_close(cur);
	return err;
}

/*
 * A table's records into the checkpoint, in LMDB's key order: written
 * whole (new since the last checkpoint, or too many changes) into its
 * reset databases with MDB_APPEND (full pages, no tree search), or its
 * dirty keys in order (each put or delete lands next to the one before).
 * The keys are copied and sorted first (keysort.c): the engine's own
 * order is its hash order; an ordered table written whole needs neither
 * (write_ordered), its dirty keys are sorted as any.
 */
static int write_table(struct tdbd *d, struct durable *u,
		       struct ckpt_txn *tx, struct taken *k)
{
	struct tdbo_table *dt = k->dt;
	struct ckpt_table sch = { .id = dt->id, .uid = dt->uid, .gid = dt->gid,
		.mode = dt->mode, .max_extents = dt->max_extents,
		.default_ttl = dt->default_ttl, .max_bytes = dt->max_bytes,
		.max_records = dt->max_records, .evict = dt->evict,
		.flags = dt->tflags };
	struct keyset ks = KEYSET_INIT;
	uint64_t t;
	bool whole;
	size_t i;
	int err = 0;

	snprintf(sch.name, sizeof(sch.name), "%s", dt->name);
	if (dt->aside) {
		/* Its databases stay as they are (they are its data as of
		 * dt->from), unless they are not this table's: a table set
		 * aside when its WAL CREATE failed gets empty ones. */
		sch.aside = true;
		sch.from = dt->from;
		if (ck_tab_find(u, dt->name, dt->id) != 1 &&
		    (err = tdbd_ckpt_reset_table(tx, dt->name)))
			return err;
		return tdbd_ckpt_set_table(tx, &sch);
	}
	whole = k->full || ck_tab_find(u, dt->name, dt->id) != 1;
	if (whole && tdbe_table_ordered(dt->t)) {
		t = tdbd_now_ns();
		err = write_ordered(d, u, tx, dt);
		u->ns_write += tdbd_now_ns() - t;
		return err ? err : tdbd_ckpt_set_table(tx, &sch);
	}
	t = tdbd_now_ns();
	if (whole)
		err = gather_table(d, u, dt, &ks);
	else
		err = dur_dirty_keys(k->dirty, &ks);
	u->ns_gather += tdbd_now_ns() - t;
	t = tdbd_now_ns();
	if (!err)
		err = keyset_sort(&ks);
	u->ns_sort += tdbd_now_ns() - t;
	t = tdbd_now_ns();
	if (!err && whole)
		err = tdbd_ckpt_reset_table(tx, dt->name);
	for (i = 0; !err && i < ks.n; i += READ_BATCH) {
		unsigned int m = ks.n - i < READ_BATCH ?
				 (unsigned int)(ks.n - i) : READ_BATCH;

		err = write_batch(u, tx, dt, &ks, i, m, whole);
		for (unsigned int j = 0; !err && j < m; j++)
			err = ckpt_step(d, u);
	}
	keyset_free(&ks);
	u->ns_write += tdbd_now_ns() - t;
	return err ? err : tdbd_ckpt_set_table(tx, &sch);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	v = strtoull(s, &end, 10);
	return *end ? dflt : v;
}

/*
 * After a checkpoint: the store's size against its records' (keys and
 * values, as the engine counts them).  LMDB's file never shrinks and a
 * page freed by a transaction is reused only from the next-but-one
 * transaction on, so a table rewritten whole leaves its old copy free in
 * the file and, checkpoint after checkpoint, the file holds two or three
 * copies.  When the file is over 1.5x the records and at least a quarter
 * of it is free, compact it (tdbd_ckpt_compact: the live pages into a
 * new file, renamed over it).  Not when tdbd is stopping.
 */
static void ckpt_size(struct tdbd *d, const struct taken *tk, unsigned int n)
{
	struct durable *u = d->dur;
	struct ckpt_space sp, sp2;
	uint64_t rec = 0, t0;
	char err[512], esc[4 * 512];
	unsigned int i;
	bool compact;
	int e;

	for (i = 0; i < n; i++) {
		struct tdbe_table_stat st;

		if (tk[i].dt->aside || !tk[i].dt->t)
			continue;
		tdbe_table_stat(tk[i].dt->t, &st);
		/* keys and values, and each record's 8-byte version in the
		 * table's /ver/ database (its key there again is not
		 * counted: compaction may come a little early) */
		rec += st.bytes_used + st.records * 8;
	}
	if (tdbd_ckpt_space(d->ckpt, &sp, err, sizeof(err)))
		return;
	compact = sp.file_bytes >= env_u64("TDBD_CKPT_COMPACT_MIN",
					   COMPACT_MIN) &&
		  sp.file_bytes * 2 > rec * 3 &&
		  (sp.file_bytes - sp.used_bytes) * 4 >= sp.file_bytes &&
		  !__atomic_load_n(&u->cancel, __ATOMIC_RELAXED) &&
		  !__atomic_load_n(&d->stopping, __ATOMIC_RELAXED);
	tdbd_log(L_INFO, "checkpoint: file %llu MiB, %llu MiB of it in use; "
		 "records %llu MiB%s", (unsigned long long)(sp.file_bytes >> 20),
		 (unsigned long long)(sp.used_bytes >> 20),
		 (unsigned long long)(rec >> 20), compact ? "; compacting" : "");
	if (!compact)
		return;
	t0 = tdbd_now_ns();
	if ((e = tdbd_ckpt_compact(d->ckpt, err, sizeof(err)))) {
		__atomic_fetch_add(&d->ctr.ckpt_failures, 1, __ATOMIC_RELAXED);
		tdbd_log(L_ERR, "checkpoint: compaction failed: %s; the "
			 "checkpoint is intact, its file stays as big",
			 tdb_escape(esc, sizeof(esc), err, strlen(err)));
		return;
	}
	if (tdbd_ckpt_space(d->ckpt, &sp2, err, sizeof(err)))
		sp2.file_bytes = 0;
	tdbd_log(L_INFO, "checkpoint: compacted: file %llu MiB -> %llu MiB in "
		 "%llu ms", (unsigned long long)(sp.file_bytes >> 20),
		 (unsigned long long)(sp2.file_bytes >> 20),
		 (unsigned long long)((tdbd_now_ns() - t0) / 1000000));
}

/* One checkpoint; 0 if done or nothing to do. */
static int checkpoint(struct tdbd *d, const char *why)
{
	struct durable *u = d->dur;
	struct taken *tk = NULL;
	struct tdbo_table **tabs = NULL;
	struct ckpt_txn *tx = NULL;
	struct ck_tab *nt = NULL;
	unsigned int n = 0, i, naside = 0;
	uint64_t lsn, keep, ms, t1, t0 = tdbd_now_ns();
	const char *aside1 = NULL;
	char err[512] = "", esc[4 * 512];
	int e;

	tdbo_write_lock(d->o);
	lsn = wal_appended(d->wal);
	if (lsn == u->ckpt_lsn && !u->must) {
		tdbo_write_unlock(d->o);
		return 0;
	}
	e = tdbo_tables_snapshot(d->o, &tabs, &n);
	if (!e && !(tk = calloc(n ? n : 1, sizeof(*tk))))
		e = -ENOMEM;
	for (i = 0; !e && i < n; i++) {
		tk[i].dt = tabs[i];
		tk[i].dirty = tabs[i]->ckpt_dirty;
		tk[i].full = tabs[i]->ckpt_full;
		tabs[i]->ckpt_dirty = NULL;
		tabs[i]->ckpt_full = false;
	}
	tdbo_write_unlock(d->o);
	if (e) {
		for (i = 0; i < n; i++)
			tdbo_table_put(tabs[i]);
		free(tabs);
		snprintf(err, sizeof(err), "%s", strerror(-e));
		goto fail_logged;
	}
	if (!(nt = calloc(n ? n : 1, sizeof(*nt)))) {
		e = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	u->written = 0;
	u->ns_gather = u->ns_sort = u->ns_write = 0;
	if ((e = tdbd_ckpt_begin(d->ckpt, &tx, err, sizeof(err))))
		goto fail;
	for (i = 0; i < u->ntabs; i++) {
		unsigned int j;

		for (j = 0; j < n; j++)
			if (!strcmp(tk[j].dt->name, u->tabs[i].name))
				break;
		if (j == n && (e = tdbd_ckpt_drop_table(tx, u->tabs[i].name))) {
			snprintf(err, sizeof(err), "dropping %s: %s",
				 u->tabs[i].name, strerror(-e));
			goto fail;
		}
	}
	for (i = 0; i < n; i++) {
		if ((e = write_table(d, u, tx, &tk[i]))) {
			snprintf(err, sizeof(err), "table %s: %s",
				 tk[i].dt->name, strerror(-e));
			goto fail;
		}
		snprintf(nt[i].name, sizeof(nt[i].name), "%s", tk[i].dt->name);
		nt[i].id = tk[i].dt->id;
	}
	/* Nothing the checkpoint holds may be lost from the WAL. */
	if ((e = wal_sync_to(d->wal, wal_appended(d->wal)))) {
		snprintf(err, sizeof(err), "the WAL could not be synced: %s",
			 strerror(-e));
		goto fail;
	}
	/* The version counter, taken after the LSN was fixed (every
	 * change at or before it took its version before): a restart
	 * gives no version at or below it again, even to a key whose
	 * delete is in no record it keeps. */
	if ((e = tdbd_ckpt_set_version(tx, tdbo_version_last(d->o)))) {
		snprintf(err, sizeof(err), "writing the version counter: %s",
			 strerror(-e));
		goto fail;
	}
	t1 = tdbd_now_ns();
	e = tdbd_ckpt_commit(tx, lsn, err, sizeof(err));
	t1 = tdbd_now_ns() - t1;
	tx = NULL;
	if (e)
		goto fail;
	free(u->tabs);
	u->tabs = nt;
	u->ntabs = n;
	u->ckpt_lsn = lsn;
	__atomic_store_n(&d->ctr.ckpt_lsn, lsn, __ATOMIC_RELAXED);
	u->last_ns = tdbd_now_ns();
	u->failing = false;
	u->must = false;
	/* the WAL a set-aside table's changes are in stays */
	keep = lsn;
	for (i = 0; i < n; i++) {
		if (tk[i].dt->aside) {
			if (!naside++)
				aside1 = tk[i].dt->name;
			if (tk[i].dt->from < keep)
				keep = tk[i].dt->from;
		}
	}
	e = wal_remove_before(d->wal, keep);
	__atomic_fetch_add(&d->ctr.checkpoints, 1, __ATOMIC_RELAXED);
	ms = (tdbd_now_ns() - t0) / 1000000;
	tdbd_log(L_INFO, "checkpoint at LSN %llu (%s): %u table(s), %llu ms; "
		 "%llu record(s) written (%llu/s; ms: keys %llu, sort %llu, "
		 "write %llu, commit %llu); %d WAL segment(s) removed",
		 (unsigned long long)lsn, why, n, (unsigned long long)ms,
		 (unsigned long long)u->written,
		 (unsigned long long)(u->written * 1000 / (ms ? ms : 1)),
		 (unsigned long long)(u->ns_gather / 1000000),
		 (unsigned long long)(u->ns_sort / 1000000),
		 (unsigned long long)(u->ns_write / 1000000),
		 (unsigned long long)(t1 / 1000000), e);
	ckpt_size(d, tk, n);
	if (naside)
		tdbd_log(L_WARNING, "checkpoint: %u table(s) set aside at "
			 "start (%s%s) are not written; the WAL after LSN %llu "
			 "is kept for them and grows until they are restored "
			 "(restart tdbd once the cause is gone) or dropped",
			 naside, ESC(aside1), naside > 1 ? ", ..." : "",
			 (unsigned long long)keep);
	for (i = 0; i < n; i++) {
		tdbd_dirty_free(tk[i].dirty);
		tdbo_table_put(tk[i].dt);
	}
	free(tk);
	free(tabs);
	return 0;
fail:
	if (tx)
		tdbd_ckpt_abort(tx);
	free(nt);
	tdbo_write_lock(d->o);
	for (i = 0; i < n; i++) {
		dur_dirty_merge(tk[i].dt, tk[i].dirty, tk[i].full);
		tdbo_table_put(tk[i].dt);
	}
	tdbo_write_unlock(d->o);
	free(tk);
	free(tabs);
fail_logged:
	u->last_ns = tdbd_now_ns();     /* retry at the next trigger */
	if (e == -ECANCELED) {
		tdbd_log(L_NOTICE, "checkpoint (%s) abandoned after %llu "
			 "record(s), %llu ms: tdbd is stopping; the checkpoint "
			 "stays at LSN %llu, the WAL has every change since "
			 "and the next start replays it", why,
			 (unsigned long long)u->written,
			 (unsigned long long)((tdbd_now_ns() - t0) / 1000000),
			 (unsigned long long)u->ckpt_lsn);
		return e;
	}
	u->failing = true;
	__atomic_fetch_add(&d->ctr.ckpt_failures, 1, __ATOMIC_RELAXED);
	tdbd_log(L_ERR, "checkpoint (%s) failed: %s; the WAL is kept, "
		 "nothing is lost; trying again later", why,
		 tdb_escape(esc, sizeof(esc), err, strlen(err)));
	return e ? e : -EIO;
}

/* --- kernel mode: a checkpoint from the WAL (no mirror) ------------------ */

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Before each record: abandoned when tdbd stops (or past the stop
 * checkpoint's deadline). */
static int k_step(void *arg)
{
	struct tdbd *d = arg;

	return ckpt_step(d, d->dur);
}

/* After each run's commit: the store is at lsn; the segments it covers
 * go (never before: the WAL keeps every record after the store's LSN). */
static void k_committed(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;
	struct durable *u = d->dur;
	int n;

	u->ckpt_lsn = lsn;
	__atomic_store_n(&d->ctr.ckpt_lsn, lsn, __ATOMIC_RELAXED);
	n = wal_remove_before(d->wal, lsn);
	u->k_runs++;
	if (n > 0)
		u->k_removed += n;
}

/*
 * Kernel mode's checkpoint (docs/KERNEL.md, "Without a mirror"): the
 * WAL's records after the store's LSN up to T = wal_durable() applied to
 * the store (ckapply.c) in runs of checkpoint-run-size, each a commit
 * after which the segments it covers are removed.  Only durable
 * records: the store is never ahead of the WAL.  A failure keeps the
 * WAL (what the runs before it committed stays committed) and is
 * retried like any failed checkpoint.
 */
static int checkpoint_k(struct tdbd *d, const char *why, uint64_t upto)
{
	struct durable *u = d->dur;
	struct ckapply_opts o = { .run_size = d->cfg.checkpoint_run_size,
		.now_ms = wall_ms(), .step = k_step,
		.on_commit = k_committed, .arg = d };
	uint64_t from = u->ckpt_lsn, lsn = from, ms, t0 = tdbd_now_ns();
	char err[768] = "", esc[4 * 768];
	int e;

	if (upto <= u->ckpt_lsn)
		return 0;
	u->k_runs = 0;
	u->k_removed = 0;
	e = tdbd_ckapply_wal(d->ckpt, u->wal_dir, upto, &o, &lsn, err,
			     sizeof(err));
	/* the runs' gathered changes and LMDB's dirty pages (up to about
	 * 3 x checkpoint-run-size) go back to the system, not kept in the
	 * heap until the next checkpoint: tdbd's memory between
	 * checkpoints is its buffers */
	malloc_trim(0);
	u->last_ns = tdbd_now_ns();
	ms = (u->last_ns - t0) / 1000000;
	if (!e) {
		u->failing = false;
		__atomic_fetch_add(&d->ctr.checkpoints, 1, __ATOMIC_RELAXED);
		tdbd_log(L_INFO, "checkpoint at LSN %llu (%s): %llu WAL "
			 "record(s) after LSN %llu applied to the store in "
			 "%llu run(s), %llu ms; %d WAL segment(s) removed",
			 (unsigned long long)lsn, why,
			 (unsigned long long)(lsn - from),
			 (unsigned long long)from,
			 (unsigned long long)u->k_runs,
			 (unsigned long long)ms, u->k_removed);
		return 0;
	}
	if (e == -ECANCELED) {
		tdbd_log(L_NOTICE, "checkpoint (%s) abandoned after %llu ms: "
			 "tdbd is stopping; the store is at LSN %llu, the WAL "
			 "has every change since and the next start applies "
			 "it", why, (unsigned long long)ms,
			 (unsigned long long)u->ckpt_lsn);
		return e;
	}
	u->failing = true;
	__atomic_fetch_add(&d->ctr.ckpt_failures, 1, __ATOMIC_RELAXED);
	tdbd_log(L_ERR, "checkpoint (%s) failed: %s; the store is at LSN "
		 "%llu, the WAL is kept, nothing is lost; trying again later",
		 why, tdb_escape(esc, sizeof(esc), err, strlen(err)),
		 (unsigned long long)u->ckpt_lsn);
	return e;
}

/* The checkpoint the triggers ask for, in either mode.  Kernel mode's
 * takes what is durable after a sync of what the follower wrote (with
 * `sync none` nothing else would make it durable but a segment's end). */
static int checkpoint_any(struct tdbd *d, const char *why)
{
	int e;

	if (!d->dur->kernel)
		return checkpoint(d, why);
	if ((e = wal_sync_to(d->wal, wal_written(d->wal))))
		tdbd_log_rl(RL_WAL, L_ERR, "checkpoint (%s): the WAL could not "
			    "be synced: %s; only what was durable before is "
			    "checkpointed", why, strerror(-e));
	return checkpoint_k(d, why, wal_durable(d->wal));
}

/* Records not yet in a checkpoint: the WAL's appended ones in daemon
 * mode, its written ones in kernel mode (a checkpoint syncs and takes
 * those). */
static uint64_t ckpt_upto(struct tdbd *d)
{
	return d->dur->kernel ? wal_written(d->wal) : wal_appended(d->wal);
}

static void *checkpointer(void *arg)
{
	struct tdbd *d = arg;
	struct durable *u = d->dur;

	pthread_mutex_lock(&u->m);
	while (!u->stop) {
		struct timespec ts;
		uint64_t since = tdbd_now_ns() - u->last_ns;
		const char *why = NULL;

		if (u->now)
			why = "after recovery";
		/* after a failure (a full disk) not at once again: the
		 * WAL is still over the size, and a retry in a loop would
		 * spin and flood the log */
		else if (wal_bytes_since(d->wal) >=
			 d->cfg.checkpoint_wal_size &&
			 (!u->failing || since >= CKPT_RETRY_NS))
			why = "WAL size";
		else if (since >= (uint64_t)d->cfg.checkpoint_interval_ms *
				  1000000 && ckpt_upto(d) != u->ckpt_lsn)
			why = "interval";
		if (why) {
			u->now = false;
			pthread_mutex_unlock(&u->m);
			checkpoint_any(d, why);
			pthread_mutex_lock(&u->m);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&u->cv, &u->m, &ts);
	}
	pthread_mutex_unlock(&u->m);
	return NULL;
}

int dur_checkpointer_start(struct tdbd *d, bool now)
{
	struct durable *u = d->dur;
	int e;

	u->last_ns = tdbd_now_ns();
	u->now = now;
	if ((e = -pthread_create(&u->thr, NULL, checkpointer, d))) {
		tdbd_log(L_ERR, "checkpoint thread: %s", strerror(-e));
		return e;
	}
	u->thr_started = true;
	return 0;
}

void dur_checkpointer_stop(struct tdbd *d)
{
	struct durable *u = d->dur;

	if (!u->thr_started)
		return;
	pthread_mutex_lock(&u->m);
	u->stop = true;
	__atomic_store_n(&u->cancel, 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->m);
	pthread_join(u->thr, NULL);
	u->thr_started = false;
	__atomic_store_n(&u->cancel, 0, __ATOMIC_RELAXED);
}

void tdbd_durable_checkpoint_soon(struct tdbd *d)
{
	struct durable *u = d->dur;

	pthread_mutex_lock(&u->m);
	u->now = true;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->m);
}

/* Records a checkpoint now would write: a table written whole counts
 * its records, another its changed keys. */
static uint64_t ckpt_estimate(struct tdbd *d)
{
	struct durable *u = d->dur;
	struct tdbo_table **tabs = NULL;
	unsigned int n = 0, i;
	uint64_t sum = 0;

	tdbo_write_lock(d->o);
	if (tdbo_tables_snapshot(d->o, &tabs, &n)) {
		tdbo_write_unlock(d->o);
		return UINT64_MAX;
	}
	for (i = 0; i < n; i++) {
		struct tdbo_table *dt = tabs[i];
		struct tdbe_table_stat st;

		if (dt->aside)
			continue;
		if (dt->ckpt_full || ck_tab_find(u, dt->name, dt->id) != 1) {
			tdbe_table_stat(dt->t, &st);
			sum += st.records;
		} else if (dt->ckpt_dirty) {
			sum += dur_dirty_count(dt->ckpt_dirty);
		}
	}
	tdbo_write_unlock(d->o);
	for (i = 0; i < n; i++)
		tdbo_table_put(tabs[i]);
	free(tabs);
	return sum;
}

/*
 * SIGTERM never waits for a big checkpoint: every change is in the WAL
 * already, so the last checkpoint only saves the next start a replay.
 * It is written if it has at most STOP_CKPT_MAX records to write (about
 * a second) and abandoned if it still runs after STOP_CKPT_NS; else tdbd
 * stops without it.  Either way the WAL is synced to its end first, so
 * that with sync none too a clean stop loses nothing.
 */
void dur_last_checkpoint(struct tdbd *d)
{
	struct durable *u = d->dur;
	uint64_t max = env_u64("TDBD_STOP_CKPT_MAX", STOP_CKPT_MAX), est;
	int e;

	if ((e = wal_sync_to(d->wal, wal_written(d->wal))))
		tdbd_log(L_ERR, "stopping: the WAL could not be synced: %s",
			 strerror(-e));
	if (wal_written(d->wal) == u->ckpt_lsn && !u->must)
		return;
	if (u->kernel) {
		/* records to apply: what is durable past the store */
		uint64_t upto = wal_durable(d->wal);

		est = upto > u->ckpt_lsn ? upto - u->ckpt_lsn : 0;
		if (!est)
			return;
		if (est > max) {
			tdbd_log(L_NOTICE, "stopping without a checkpoint: it "
				 "would apply %llu WAL record(s), over %llu; the "
				 "WAL has every change after LSN %llu and the "
				 "next start applies it",
				 (unsigned long long)est,
				 (unsigned long long)max,
				 (unsigned long long)u->ckpt_lsn);
			return;
		}
		tdbd_notify("STATUS=stopping: last checkpoint");
		u->deadline_ns = tdbd_now_ns() + STOP_CKPT_NS;
		checkpoint_k(d, "stopping", upto);
		u->deadline_ns = 0;
		return;
	}
	est = ckpt_estimate(d);
	if (est > max) {
		tdbd_log(L_NOTICE, "stopping without a checkpoint: it would "
			 "write %llu record(s), over %llu; the WAL has every "
			 "change after LSN %llu and the next start replays it",
			 (unsigned long long)est, (unsigned long long)max,
			 (unsigned long long)u->ckpt_lsn);
		return;
	}
	tdbd_notify("STATUS=stopping: last checkpoint");
	u->deadline_ns = tdbd_now_ns() + STOP_CKPT_NS;
	checkpoint(d, "stopping");
	u->deadline_ns = 0;
}
