// SPDX-License-Identifier: GPL-2.0-only
/*
 * durable.c - what makes tdbd's tables survive it: the WAL every change
 * is logged in before it is acknowledged, acknowledgements held until
 * their record is written or durable, checkpoints into LMDB, and
 * recovery at start (docs/DURABILITY.md).
 *
 * Invariants:
 *  - Every change (put, delete, transaction, create, drop) reserves its
 *    record's room in the WAL before it applies and appends the record
 *    after, under the changed tables' locks (the owner's log hooks,
 *    src/owner/change.c), so each table's records are in the order its
 *    changes applied; logging cannot fail once the room is reserved.
 *  - Every worker round ends with one wal_write of what was appended
 *    (tdbd_log_write) before its answers go out.  A change's answer is
 *    held (serve's FIFO per client, in LSN order; tdbd_hold_policy) until its
 *    record is written (sync batch, none) or durable (always).
 * *  - A checkpoint takes each table's dirty set and the WAL's last LSN
 *    under the write lock, then writes outside it: the values it reads
 *    may be newer than that LSN, which is harmless since replaying a put
 *    or a delete twice gives the same result.  It copies the keys to
 *    write and sorts them in LMDB's order, then reads their values under
 *    the table's write lock (briefly, 256 keys at a time), so it never
 *    sees a commit half-applied or a failed one before its undo.  And
 *    it syncs the WAL up to everything written before it commits, so the
 *    checkpoint never holds a change whose record could still be lost.
 *    Only then are segments wholly before its LSN removed.  A
 *    checkpoint that fails (or is abandoned because tdbd stops) gives its
 *    dirty sets back, and one that failed is not retried for the
 *    WAL-size trigger before CKPT_RETRY_NS.
 *  - SIGTERM never waits for a big checkpoint: the WAL is synced to its
 *    end, a running checkpoint is abandoned (its LMDB txn aborted), and
 *    the last one is written only if small (STOP_CKPT_MAX records) and
 *    within STOP_CKPT_NS; else the next start replays the WAL.
 *  - Recovery = load the checkpoint, replay the WAL after its LSN, then
 *    start a new segment; clients are accepted only after it.  On a full
 *    disk nothing of start-up needs to write: the replay only cuts (a
 *    torn tail), the WAL opens without a segment (wal_open: every change
 *    fails with ENOSPC until the first commit that finds room makes it),
 *    and the checkpoint after recovery fails softly and is retried like
 *    any failed checkpoint.
 *  - A table recovery cannot restore (its region cannot be made, a record
 *    it cannot take) is set aside, never a reason not to start: it stays
 *    in the registry without an engine table (dt->aside), its WAL
 *    records are skipped, and dt->from is the LSN its checkpoint data is
 *    as of.  Checkpoints write only its schema and "aside/<name>" =
 *    from, never its databases, and keep every WAL segment with records
 *    after the smallest such LSN.  At the next start a table with that
 *    mark is loaded and its WAL records after `from` are replayed, also
 *    those at or before the checkpoint's LSN (the "catch-up" range,
 *    where every other record is skipped: the checkpoint has it).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "ckpt.h"
#include "kernel.h"
#include "keysort.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "tdbd.h"
#include "wal.h"

#define DIRTY_MAX (1u << 20)    /* keys tracked per table; beyond, the
				 * table is rewritten whole */
#define CKPT_RETRY_NS 1000000000ull  /* a failed checkpoint's retry on the
				      * WAL-size trigger waits this long */
#define STOP_CKPT_MAX 1000000ull     /* records a stop checkpoint may write
				      * (TDBD_STOP_CKPT_MAX overrides) */
#define STOP_CKPT_NS 5000000000ull   /* and the time it may take */
#define COMPACT_MIN (16ull << 20)    /* no compaction of a smaller file
				      * (TDBD_CKPT_COMPACT_MIN overrides) */

/* --- dirty sets: keys changed since the last checkpoint ------------------ */

struct dkey {
	uint64_t h;
	uint32_t klen;
	unsigned char *key;     /* NULL: empty slot */
};

/* The keys' bytes, in chunks freed with the set (a malloc per key was
 * a fifth of a change's cost in tdbd). */
struct dchunk {
	struct dchunk *next;
	size_t used, cap;
	unsigned char data[];
};

#define DCHUNK (64u << 10)

struct dirty {
	struct dkey *v;
	uint32_t n, cap;        /* cap a power of two; n <= cap / 2 */
	struct dchunk *chunks;  /* the newest first */
};

void tdbd_dirty_free(struct dirty *s)
{
	if (!s)
		return;
	while (s->chunks) {
		struct dchunk *c = s->chunks;

		s->chunks = c->next;
		free(c);
	}
	free(s->v);
	free(s);
}

/* A copy of key in s's chunks, or NULL. */
static unsigned char *dirty_copy(struct dirty *s, const void *key,
				 size_t klen)
{
	struct dchunk *c = s->chunks;
	size_t n = klen ? klen : 1;     /* an empty key: a non-NULL slot */
	unsigned char *p;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > DCHUNK ? n : DCHUNK;

		if (!(c = malloc(sizeof(*c) + cap)))
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = s->chunks;
		s->chunks = c;
	}
	p = c->data + c->used;
	if (klen)
		memcpy(p, key, klen);
	c->used += n;
	return p;
}

static struct dkey *dirty_slot(struct dirty *s, uint64_t h, const void *key,
			       size_t klen)
{
	uint32_t i = (uint32_t)h & (s->cap - 1);

	while (s->v[i].key && !(s->v[i].h == h && s->v[i].klen == klen &&
				!memcmp(s->v[i].key, key, klen)))
		i = (i + 1) & (s->cap - 1);
	return &s->v[i];
}

static int dirty_grow(struct dirty *s)
{
	struct dirty t = { .cap = s->cap ? s->cap * 2 : 64 };
	uint32_t i;

	t.v = calloc(t.cap, sizeof(*t.v));
	if (!t.v)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->v[i].key)
			*dirty_slot(&t, s->v[i].h, s->v[i].key,
				    s->v[i].klen) = s->v[i];
	free(s->v);
	s->v = t.v;
	s->cap = t.cap;
	return 0;
}

/* The owner's dirty hook, under its write lock.  Out of memory or over
 * DIRTY_MAX: the table goes whole. */
void tdbd_dirty_add(void *arg, struct tdbo_table *dt, const void *key,
		    size_t klen)
{
	uint64_t h = XXH64(key, klen, 0);
	struct dirty *s = dt->ckpt_dirty;
	struct dkey *k;

	(void)arg;
	if (dt->ckpt_full)
		return;
	if (!s && !(s = dt->ckpt_dirty = calloc(1, sizeof(*s))))
		goto whole;
	if ((s->n + 1) * 2 > s->cap) {
		if (s->n >= DIRTY_MAX || dirty_grow(s))
			goto whole;
	}
	k = dirty_slot(s, h, key, klen);
	if (k->key)
		return;
	if (!(k->key = dirty_copy(s, key, klen)))
		goto whole;
	k->h = h;
	k->klen = (uint32_t)klen;
	s->n++;
	return;
whole:
	dt->ckpt_full = true;
	tdbd_dirty_free(dt->ckpt_dirty);
	dt->ckpt_dirty = NULL;
}

/* Give a checkpoint's set back to the table (the checkpoint failed). */
static void dirty_merge(struct tdbo_table *dt, struct dirty *s, bool full)
{
	uint32_t i;

	if (full)
		dt->ckpt_full = true;
	for (i = 0; s && i < s->cap; i++)
		if (s->v[i].key)
			tdbd_dirty_add(NULL, dt, s->v[i].key, s->v[i].klen);
	tdbd_dirty_free(s);
}

/* --- logging changes (the owner's log hooks) --------------------------------------- */

static void count_record(struct tdbd *d)
{
	__atomic_fetch_add(&d->ctr.wal_records, 1, __ATOMIC_RELAXED);
}

static size_t rec_size(const struct tdbo_log_size *sz)
{
	enum wal_type type = sz->kind == TDBO_LOG_CREATE ? WAL_CREATE :
			     sz->kind == TDBO_LOG_DROP ? WAL_DROP : WAL_OPS_V;

	return wal_rec_size(type, sz->nops, sz->bytes);
}

/* Room for a record, before its change applies; and a line in the log
 * when the first reservation after a start on a full disk could make
 * the WAL's segment (changes work again). */
int tdbd_log_reserve(void *arg, const struct tdbo_log_size *sz,
		     const char **msg)
{
	struct tdbd *d = arg;
	bool had = wal_has_segment(d->wal);
	int err = wal_reserve(d->wal, rec_size(sz), msg);

	if (!had && !err)
		tdbd_log(L_NOTICE, "WAL %s/wal: there is room again: a "
			 "segment is started, changes are accepted",
			 d->cfg.data_dir);
	return err;
}

void tdbd_log_cancel(void *arg, const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_unreserve(d->wal, rec_size(sz));
}

/* The record of a change that applied, under its tables' locks: a copy
 * into the WAL's buffer, written by the worker's round (tdbd_log_write)
 * before the answer goes out.  A WAL_OPS_V record: every op of it has
 * the write's version, which replay gives the keys back. */
void tdbd_log_begin(void *arg, uint64_t version)
{
	struct tdbd *d = arg;

	wal_begin_ops(d->wal, version);
}

void tdbd_log_op(void *arg, const struct tdbo_table *t, bool del,
		 const void *key, size_t klen, const void *val, size_t vlen)
{
	struct tdbd *d = arg;

	wal_add_op(d->wal, del ? WAL_OP_DEL : WAL_OP_PUT, t->name, key,
		   (uint32_t)klen, del ? NULL : val, del ? 0 : (uint32_t)vlen);
}

/* wal_commit; a record it could not take (it failed the log, which
 * tdbd_hold_policy then reports) gets an LSN no answer waits out. */
static uint64_t commit(struct tdbd *d, const struct tdbo_log_size *sz)
{
	uint64_t lsn;

	if (wal_commit(d->wal, rec_size(sz), &lsn)) {
		tdbd_log_rl(RL_WAL, L_ERR, "WAL: a change that applied could "
			    "not be logged (%s); tdbd needs a restart",
			    strerror(-wal_failed(d->wal)));
		return UINT64_MAX;
	}
	count_record(d);
	return lsn;
}

uint64_t tdbd_log_commit(void *arg, const struct tdbo_log_size *sz)
{
	return commit(arg, sz);
}

uint64_t tdbd_log_create(void *arg, const struct tdbo_table *t,
			 const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_begin(d->wal, WAL_CREATE);
	wal_add_create(d->wal, t->id, t->name, t->uid, t->gid, t->mode,
		       t->max_extents, d->cfg.sync);
	return commit(d, sz);
}

uint64_t tdbd_log_drop(void *arg, const struct tdbo_table *t,
		       const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_begin(d->wal, WAL_DROP);
	wal_add_drop(d->wal, t->name);
	return commit(d, sz);
}

/* A worker's round is over: write what it (and anyone) appended, before
 * its answers go out. */
void tdbd_log_write(struct tdbd *d)
{
	if (d->wal)
		wal_write(d->wal);
}

/* --- held acknowledgements ------------------------------------------------- */

/*
 * Every change's answer waits for its record: written (sync batch and
 * none: a crash of tdbd then loses nothing acknowledged) or durable
 * (always).  The queue is serve's (src/owner/serve.c: a FIFO per client
 * in LSN order, bounded by c->sv.held_max and held_bytes_max, worker.c);
 * the policy is here.
 */

/* The LSN answers may go out up to. */
static uint64_t ack_lsn(const struct tdbd *d)
{
	return d->cfg.sync == WAL_SYNC_ALWAYS ? wal_durable(d->wal) :
						wal_written(d->wal);
}

static bool hold_must(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;

	return d->wal && lsn > ack_lsn(d);
}

static uint64_t hold_upto(void *arg)
{
	return ack_lsn(arg);
}

static int hold_failed(void *arg, const char **msg)
{
	struct tdbd *d = arg;

	if (!wal_failed(d->wal))
		return 0;
	*msg = "the WAL could not be written or synced (a write or "
	       "fdatasync failed): this change is applied but may not "
	       "survive a crash; tdbd needs a restart";
	return -EIO;
}

static void hold_held(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;

	(void)lsn;
	if (d->cfg.sync == WAL_SYNC_ALWAYS)
		wal_kick(d->wal);
}

/* No memory to hold an answer: wait here, then it goes out. */
static int hold_no_room(void *arg, uint64_t lsn, const char **msg)
{
	struct tdbd *d = arg;

	(void)msg;
	wal_write(d->wal);
	if (d->cfg.sync == WAL_SYNC_ALWAYS)
		wal_sync_to(d->wal, lsn);
	return 0;
}

const struct tdbo_hold_policy tdbd_hold_policy = {
	.must_hold = hold_must,
	.upto = hold_upto,
	.failed = hold_failed,
	.held = hold_held,
	.no_room = hold_no_room,
};

/* The flusher thread: records became durable (or the log failed). */
static void on_durable(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;
	unsigned int i;

	if (d->kern && d->cfg.sync != WAL_SYNC_NONE)
		tdbd_kernel_durable(d, wal_durable(d->wal));
	(void)lsn;
	pthread_mutex_lock(&d->wake_lock);
	for (i = 0; d->wake_on && i < d->nworkers; i++)
		if (__atomic_load_n(&d->workers[i].nheld, __ATOMIC_SEQ_CST))
			tdbd_worker_wake(&d->workers[i]);
	pthread_mutex_unlock(&d->wake_lock);
}

/* --- checkpoints ------------------------------------------------------------ */

struct ck_tab {
	char name[TDBE_NAME_MAX + 1];
	uint64_t id;
};

struct durable {
	char wal_dir[PATH_MAX + 8];
	pthread_t thr;
	bool thr_started;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool stop, now;         /* under m */
	int cancel;             /* atomic: tdbd is stopping, abandon the
				 * running checkpoint */
	uint64_t deadline_ns;   /* the checkpoint's; 0: none */
	uint64_t ckpt_lsn;      /* the checkpointer's */
	uint64_t last_ns;
	bool failing;           /* the last checkpoint failed */
	bool must;              /* checkpoint even if no record is new (a
				 * table restored from aside: its catch-up
				 * is in no checkpoint yet) */
	struct ck_tab *tabs;    /* what the checkpoint holds */
	unsigned int ntabs;
	void *buf;              /* values read back */
	size_t bufcap;
	uint64_t written, tick_ns;      /* this checkpoint's progress */
	uint64_t steps;         /* records read or written: cancel checks */
	uint64_t ns_gather, ns_sort, ns_write;  /* this checkpoint's phases */
};

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
		err = append ? tdbd_ckpt_append(tx, dt->name, rq[i].key,
						rq[i].klen, val, rq[i].vlen,
						rq[i].version) :
			       tdbd_ckpt_put(tx, dt->name, rq[i].key,
					     rq[i].klen, val, rq[i].vlen,
					     rq[i].version);
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

static int gather_dirty(const struct dirty *s, struct keyset *ks)
{
	uint32_t i;
	int err = 0;

	for (i = 0; !err && s && i < s->cap; i++)
		if (s->v[i].key)
			err = keyset_add(ks, s->v[i].key, s->v[i].klen);
	return err;
}

/*
 * A table's records into the checkpoint, in LMDB's key order: written
 * whole (new since the last checkpoint, or too many changes) into its
 * reset databases with MDB_APPEND (full pages, no tree search), or its
 * dirty keys in order (each put or delete lands next to the one before).
 * The keys are copied and sorted first (keysort.c): the engine's own
 * order is its hash order.
 */
static int write_table(struct tdbd *d, struct durable *u,
		       struct ckpt_txn *tx, struct taken *k)
{
	struct tdbo_table *dt = k->dt;
	struct ckpt_table sch = { .id = dt->id, .uid = dt->uid, .gid = dt->gid,
		.mode = dt->mode, .max_extents = dt->max_extents };
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
	t = tdbd_now_ns();
	if (whole)
		err = gather_table(d, u, dt, &ks);
	else
		err = gather_dirty(k->dirty, &ks);
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
		dirty_merge(tk[i].dt, tk[i].dirty, tk[i].full);
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
				  1000000 && wal_appended(d->wal) != u->ckpt_lsn)
			why = "interval";
		if (why) {
			u->now = false;
			pthread_mutex_unlock(&u->m);
			checkpoint(d, why);
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

/* --- recovery ----------------------------------------------------------------- */

struct rec_state {
	struct tdbd *d;
	struct tdbo_table *dt;
	uint64_t records, last_report;
	uint64_t ckpt_lsn;      /* records at or before it: catch-up only */
	uint64_t skipped;       /* changes to set-aside tables not applied */
	uint64_t old_version;   /* the version of a record of a table
				 * checkpointed before versions */
	uint64_t max_version;   /* the highest version loaded */
	const char *phase;
	char why[TDB_PROTO_EXTACK_MAX];  /* why a record could not load */
};

static void report(struct rec_state *rs, bool force)
{
	uint64_t now = tdbd_now_ns();

	if (!force && now - rs->last_report < 1000000000ull)
		return;
	rs->last_report = now;
	tdbd_notify("STATUS=recovering: %s, %llu records so far\n"
		    "EXTEND_TIMEOUT_USEC=30000000", rs->phase,
		    (unsigned long long)rs->records);
	tdbd_log(L_INFO, "recovering: %s, %llu records so far", rs->phase,
		 (unsigned long long)rs->records);
}

/* --- setting a table aside (recovery) ---------------------------------- */

static void aside_log(const char *name, const char *why, uint64_t from)
{
	char esc[4 * TDB_PROTO_EXTACK_MAX];

	tdbd_log(L_WARNING, "table %s cannot be restored: %s; it is set "
		 "aside and tdbd starts without it: its checkpoint data and "
		 "its WAL records after LSN %llu are kept untouched, every "
		 "request on it fails with EIO.  Remove the cause (address "
		 "space: RLIMIT_AS/LimitAS=, memory, hugepages) and restart "
		 "tdbd to restore it with all its data, or drop it (tdb drop "
		 "%s) to discard it", ESC(name),
		 tdb_escape(esc, sizeof(esc), why, strlen(why)),
		 (unsigned long long)from, ESC(name));
}

/* A table that could not be made: into the registry set aside. */
static int aside_new(struct tdbd *d, const char *name, uint64_t id,
		     uint32_t max_ext, uint32_t uid, uint32_t gid,
		     uint32_t mode, uint64_t from, const char *why)
{
	int e = tdbo_table_add_aside(d->o, name, id, max_ext, uid, gid, mode,
				     from, why);

	if (!e)
		aside_log(name, why, from);
	return e;
}

/* A restored table that failed after all. */
static int aside_set(struct tdbd *d, struct tdbo_table *dt, const char *why)
{
	int e = tdbo_table_set_aside(d->o, dt, why);

	if (!e)
		aside_log(dt->name, why, dt->from);
	return e;
}

/* --- the checkpoint ----------------------------------------------------- */

/* A record of the checkpoint, with its version (0: its table was
 * checkpointed before versions; it gets the checkpoint's LSN, and the
 * counter is raised past that: docs/DURABILITY.md, "Versions"). */
static int load_record(void *arg, const void *key, size_t klen,
		       const void *val, size_t vlen, uint64_t version)
{
	struct rec_state *rs = arg;
	struct tdbe_extack ee = { 0 };
	int err;

	if (!version)
		version = rs->old_version;
	if (version > rs->max_version)
		rs->max_version = version;
	err = tdbe_put_ver(rs->dt->t, key, klen, val, vlen, 0, version, &ee);

	if (err) {
		snprintf(rs->why, sizeof(rs->why), "a record of its checkpoint "
			 "cannot be loaded: %s",
			 ee.msg ? ee.msg : tdbe_strerror(err));
		return err;
	}
	if (!(++rs->records & 0xffff))
		report(rs, false);
	return 0;
}

/* One table of the checkpoint: loaded, or set aside.  < 0 only if even
 * that failed (out of memory). */
static int load_table(struct tdbd *d, struct rec_state *rs,
		      const struct ckpt_table *t, uint64_t from)
{
	struct tdb_proto_extack ext = { 0 };
	char err[512] = "", why[TDB_PROTO_EXTACK_MAX];
	bool versioned = false;
	int e;

	e = tdbo_table_restore(d->o, t->name, t->id, t->max_extents, t->uid,
			       t->gid, t->mode, &rs->dt, &ext.msg);
	if (e) {
		snprintf(why, sizeof(why), "its region cannot be made: %s "
			 "(%s)", ext.msg ? ext.msg : "engine", ERRSTR(e));
		return aside_new(d, t->name, t->id, t->max_extents, t->uid,
				 t->gid, t->mode, from, why);
	}
	rs->dt->from = from;
	rs->why[0] = '\0';
	e = tdbd_ckpt_load_table(d->ckpt, t->name, load_record, rs,
				 &versioned, err, sizeof(err));
	if (e) {
		snprintf(why, sizeof(why), "%s", rs->why[0] ? rs->why :
			 err[0] ? err : ERRSTR(e));
		return aside_set(d, rs->dt, why);
	}
	/* the checkpoint has it; one from before versions is written
	 * whole next time (its versions beside it: ckpt.h) */
	rs->dt->ckpt_full = !versioned;
	rs->dt->catchup = t->aside;
	return 0;
}

/* Load every table; *after: where the WAL replay must start (before
 * the checkpoint's LSN if a table was set aside before). */
static int load_checkpoint(struct tdbd *d, uint64_t *lsn, uint64_t *after)
{
	struct durable *u = d->dur;
	struct rec_state rs = { .d = d, .phase = "loading the checkpoint" };
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0, i;
	uint64_t version = 0;
	char err[512], esc[4 * 512];    /* err names tables: escaped */
	int e = 0;

	if ((e = tdbd_ckpt_read_meta(d->ckpt, lsn, &tabs, &n, err,
				     sizeof(err))) ||
	    (e = tdbd_ckpt_read_version(d->ckpt, &version, err,
					sizeof(err)))) {
		free(tabs);
		tdbd_log(L_ERR, "%s", tdb_escape(esc, sizeof(esc), err,
					       strlen(err)));
		return e;
	}
	rs.old_version = *lsn ? *lsn : 1;
	u->tabs = calloc(n ? n : 1, sizeof(*u->tabs));
	if (!u->tabs) {
		free(tabs);
		return -ENOMEM;
	}
	*after = *lsn;
	for (i = 0; i < n; i++) {
		uint64_t from = tabs[i].aside ? tabs[i].from : *lsn;

		if ((e = load_table(d, &rs, &tabs[i], from)))
			break;
		if (tabs[i].aside) {
			u->must = true;
			if (from < *after)
				*after = from;
		}
		snprintf(u->tabs[i].name, sizeof(u->tabs[i].name), "%s",
			 tabs[i].name);
		u->tabs[i].id = tabs[i].id;
		u->ntabs = i + 1;
	}
	free(tabs);
	/* Every version given before the checkpoint (of a key deleted
	 * since too) is <= its "version"; the records' are <= max. */
	tdbo_version_floor(d->o, version > rs.max_version ? version :
			   rs.max_version);
	if (!e)
		tdbd_log(L_INFO, "checkpoint at LSN %llu: %u table(s), %llu "
			 "records; versions up to %llu",
			 (unsigned long long)*lsn, n,
			 (unsigned long long)rs.records,
			 (unsigned long long)tdbo_version_last(d->o));
	return e;
}

/* --- the WAL ------------------------------------------------------------- */

/* Is record r's change to dt one to apply?  In the catch-up range only
 * for a table restored from aside, after its `from`; a set-aside table
 * never. */
static bool replay_wants(const struct rec_state *rs, const struct tdbo_table *dt,
			 const struct wal_rec *r)
{
	if (dt->aside)
		return false;
	return r->lsn > rs->ckpt_lsn || (dt->catchup && r->lsn > dt->from);
}

/* One op on dt: 0 (applied, skipped, or dt set aside now) or < 0. */
static int replay_op(struct rec_state *rs, const struct wal_rec *r,
		     struct tdbo_table *dt, const struct wal_opv *op,
		     uint64_t version)
{
	struct tdbe_extack ee = { 0 };
	char why[TDB_PROTO_EXTACK_MAX];
	int err;

	if (!replay_wants(rs, dt, r)) {
		rs->skipped += !!dt->aside;
		return 0;
	}
	err = tdbo_replay(dt, op->op == WAL_OP_DEL, op->key, op->klen,
			  op->val, op->vlen, version, &ee.msg);
	if (!err) {
		rs->records++;
		return 0;
	}
	snprintf(why, sizeof(why), "WAL record %llu cannot be applied: %s",
		 (unsigned long long)r->lsn,
		 ee.msg ? ee.msg : tdbe_strerror(err));
	return aside_set(rs->d, dt, why);
}

static int replay_ops(struct rec_state *rs, const struct wal_rec *r)
{
	struct tdbd *d = rs->d;
	struct wal_opv op;
	uint64_t version;
	uint32_t pos = 0;
	int k, err;

	/* an old WAL_OPS record: its LSN (wal.h, "Files") */
	if ((k = wal_ops_version(r, &version)))
		goto bad;
	while ((k = wal_next_op(r, &pos, &op)) > 0) {
		struct tdbo_table *dt = tdbo_table_get(d->o, op.name);

		if (!dt && r->lsn <= rs->ckpt_lsn)
			continue;       /* catch-up: dropped since */
		if (!dt) {
			tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu "
				 "changes table %s, which does not exist",
				 r->file, (unsigned long long)r->off,
				 (unsigned long long)r->lsn, ESC(op.name));
			return -EUCLEAN;
		}
		err = replay_op(rs, r, dt, &op, version);
		tdbo_table_put(dt);
		if (err)
			return err;
	}
bad:
	if (k < 0)
		tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu is "
			 "malformed inside (its CRC is right: a bug?)",
			 r->file, (unsigned long long)r->off,
			 (unsigned long long)r->lsn);
	return k;
}

/* WAL_CREATE after the checkpoint: a table that cannot be made is set
 * aside with all of its changes in the WAL (from the record before). */
static int replay_create(struct rec_state *rs, const struct wal_rec *r,
			 struct tdb_proto_extack *ext)
{
	struct tdbd *d = rs->d;
	struct tdbo_table *dt = NULL;
	struct wal_create c;
	char why[TDB_PROTO_EXTACK_MAX];
	int err;

	if ((err = wal_get_create(r, &c)))
		return err;
	err = tdbo_table_restore(d->o, c.name, c.id, c.max_extents, c.uid,
				 c.gid, c.mode, &dt, &ext->msg);
	if (!err) {
		dt->from = r->lsn - 1;
		return 0;
	}
	if (err == -EEXIST)
		return err;
	snprintf(why, sizeof(why), "its region cannot be made: %s (%s)",
		 ext->msg ? ext->msg : "engine", ERRSTR(err));
	ext->msg = NULL;
	return aside_new(d, c.name, c.id, c.max_extents, c.uid, c.gid, c.mode,
			 r->lsn - 1, why);
}

static int replay_rec(void *arg, const struct wal_rec *r)
{
	struct rec_state *rs = arg;
	struct tdbd *d = rs->d;
	struct tdb_proto_extack ext = { 0 };
	char name[65];
	int err;

	report(rs, false);
	if (wal_is_ops(r))
		return replay_ops(rs, r);
	/* catch-up: the checkpoint has every create and drop up to its
	 * LSN (a table set aside was never dropped since its `from`) */
	if (r->lsn <= rs->ckpt_lsn &&
	    (r->type == WAL_CREATE || r->type == WAL_DROP))
		return 0;
	switch (r->type) {
	case WAL_CREATE:
		err = replay_create(rs, r, &ext);
		break;
	case WAL_DROP: {
		struct tdbo_table *dt;

		if ((err = wal_get_drop(r, name)))
			return err;
		if (!(dt = tdbo_table_get(d->o, name))) {
			err = -ENOENT;
			break;
		}
		err = tdbo_table_drop_replay(d->o, dt, &ext.msg);
		tdbo_table_put(dt);
		break;
	}
	default:
		return -EUCLEAN;
	}
	if (err)
		tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu: %s",
			 r->file, (unsigned long long)r->off,
			 (unsigned long long)r->lsn,
			 ext.msg ? ext.msg : strerror(-err));
	return err;
}

/* Kernel mode: a record of tdb.ko's log into the mirror, then the WAL
 * (kernel.c checks it follows the mirror's last LSN; so does the WAL). */
int tdbd_durable_apply(struct tdbd *d, const void *rec, size_t len,
		       const struct wal_rec *r, char *err, size_t errlen)
{
	struct rec_state rs = { .d = d, .phase = "following tdb.ko",
				.last_report = tdbd_now_ns() };
	uint64_t next = wal_appended(d->wal) + 1;
	int e;

	if (r->lsn != next) {
		snprintf(err, errlen, "record LSN %llu is not the WAL's next "
			 "LSN %llu", (unsigned long long)r->lsn,
			 (unsigned long long)next);
		return -EPROTO;
	}
	if ((e = replay_rec(&rs, r))) {
		snprintf(err, errlen, "it cannot be applied to the mirror: "
			 "%s", ERRSTR(e));
		return e;
	}
	if ((e = wal_append_rec(d->wal, rec, len, err, errlen)))
		return e;
	count_record(d);
	return 0;
}

static void replay_note(void *arg, const char *msg)
{
	(void)arg;
	tdbd_log(L_WARNING, "WAL: %s", msg);
}

static int mkdir_if(const char *path)
{
	if (mkdir(path, 0750) && errno != EEXIST)
		return -errno;
	return 0;
}

int tdbd_durable_start(struct tdbd *d)
{
	struct durable *u = calloc(1, sizeof(*u));
	struct rec_state rs = { .d = d, .phase = "replaying the WAL" };
	unsigned int naside;
	struct wal_replay_opts ro = { .fn = replay_rec, .arg = &rs,
		.note = replay_note,
		.truncate_damage = d->cfg.wal_truncate_damaged };
	struct wal_replay_result res;
	struct wal_opts wo = { .segment_size = d->cfg.wal_segment_size,
		.sync = (enum wal_sync)d->cfg.sync,
		.batch_ms = d->cfg.batch_ms, .on_durable = on_durable,
		.arg = d };
	uint64_t t0 = tdbd_now_ns(), lsn = 0;
	char err[PATH_MAX + 512];
	int e;

	if (!u)
		return -ENOMEM;
	d->dur = u;
	pthread_mutex_init(&u->m, NULL);
	pthread_cond_init(&u->cv, NULL);
	snprintf(u->wal_dir, sizeof(u->wal_dir), "%s/wal", d->cfg.data_dir);
	if ((e = mkdir_if(u->wal_dir))) {
		tdbd_log(L_ERR, "WAL directory %s: %s", u->wal_dir,
			 strerror(-e));
		return e;
	}
	if ((e = tdbd_ckpt_open(d->cfg.data_dir, &d->ckpt, err,
				sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	report(&(struct rec_state){ .phase = "loading the checkpoint" }, true);
	if ((e = load_checkpoint(d, &lsn, &ro.after)))
		return e;
	u->ckpt_lsn = lsn;
	d->ctr.ckpt_lsn = lsn;
	rs.ckpt_lsn = lsn;
	rs.last_report = tdbd_now_ns();
	if ((e = wal_replay(u->wal_dir, &ro, &res, err, sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (res.records)
		tdbd_log(L_INFO, "WAL: replayed %llu record(s) (%llu "
			 "change(s)) after LSN %llu from %u segment(s) in %llu "
			 "ms; now at LSN %llu",
			 (unsigned long long)res.records,
			 (unsigned long long)rs.records,
			 (unsigned long long)ro.after, res.segments,
			 (unsigned long long)((tdbd_now_ns() - t0) / 1000000),
			 (unsigned long long)res.last_lsn);
	if ((naside = tdbo_table_count_aside(d->o)))
		tdbd_log(L_WARNING, "recovery: %u table(s) set aside (see "
			 "above), %llu change(s) to them in the WAL not "
			 "applied; tdbd starts without them", naside,
			 (unsigned long long)rs.skipped);
	/* the catch-up range may have been all there was */
	if (res.last_lsn < lsn)
		res.last_lsn = lsn;
	/* Replay raised the version counter past every version it gave
	 * back; an old WAL_OPS record's version is its LSN (wal.h), so
	 * every version given from now on is above the log's LSNs too. */
	tdbo_version_floor(d->o, res.last_lsn);
	if ((e = wal_open(u->wal_dir, res.last_lsn + 1, &wo, &d->wal, err,
			  sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (!wal_has_segment(d->wal))
		tdbd_log(L_WARNING, "%s (tables are loaded and readable; "
			 "free space on that filesystem)", err);
	u->last_ns = tdbd_now_ns();
	u->now = res.records > 0;
	if ((e = -pthread_create(&u->thr, NULL, checkpointer, d))) {
		tdbd_log(L_ERR, "checkpoint thread: %s", strerror(-e));
		return e;
	}
	u->thr_started = true;
	return 0;
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
			sum += ((struct dirty *)dt->ckpt_dirty)->n;
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
static void stop_checkpoint(struct tdbd *d)
{
	struct durable *u = d->dur;
	uint64_t max = env_u64("TDBD_STOP_CKPT_MAX", STOP_CKPT_MAX), est;
	int e;

	if ((e = wal_sync_to(d->wal, wal_written(d->wal))))
		tdbd_log(L_ERR, "stopping: the WAL could not be synced: %s",
			 strerror(-e));
	if (wal_written(d->wal) == u->ckpt_lsn && !u->must)
		return;
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

void tdbd_durable_stop(struct tdbd *d)
{
	struct durable *u = d->dur;

	if (!u)
		return;
	if (u->thr_started) {
		pthread_mutex_lock(&u->m);
		u->stop = true;
		__atomic_store_n(&u->cancel, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&u->cv);
		pthread_mutex_unlock(&u->m);
		pthread_join(u->thr, NULL);
		__atomic_store_n(&u->cancel, 0, __ATOMIC_RELAXED);
	}
	if (d->wal && d->ckpt && !wal_failed(d->wal))
		stop_checkpoint(d);
	wal_close(d->wal);
	d->wal = NULL;
	tdbd_ckpt_close(d->ckpt);
	d->ckpt = NULL;
	free(u->tabs);
	free(u->buf);
	pthread_mutex_destroy(&u->m);
	pthread_cond_destroy(&u->cv);
	free(u);
	d->dur = NULL;
}
