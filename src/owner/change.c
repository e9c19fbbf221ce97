/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * change.c - reading and changing records: GET, and the one change
 * pipeline every change goes through, whether a client's PUT or DEL, an
 * op of a committed transaction (txn.c) or a durable home's replay.
 *
 * The pipeline, for one key of table t, under t->wlock (changes to
 * other tables run in parallel):
 *  1. refuse what is sure to fail (a dropped table, deleting a missing
 *     key, a no-overwrite put of a present one) before anything is
 *     logged;
 *  2. reserve its log record's room (hooks->log_reserve: the home's
 *     WAL; a full disk fails the change here, before anything applies;
 *     replay logs nothing);
 *  3. save its pre-image in t's running snapshots (snap.c), then apply
 *     it to the engine; a change the engine refuses gives its room back
 *     (log_cancel) and, in a transaction, the ops applied before it are
 *     undone; one that applied is logged (log_begin/op/commit: a copy
 *     into the home's log buffer; a transaction is one record), still
 *     under t->wlock, so t's records are in the order its changes
 *     applied;
 *  4. mark the key dirty (hooks->dirty: the home's next checkpoint),
 *     note the table's size (hooks->mem_note), and tell the feeds and
 *     the change hook (feed.c), published at the end of the change.
 * docs/DURABILITY.md states the order and what a crash at each step
 * leaves.
 *
 * Readers take no owner lock: a GET reads its table's seqcount
 * (t->seq) before and after the lookup and retries if a commit to that
 * table applied meanwhile, so it sees a transaction whole or not at
 * all.  While the count is odd the reader sleeps on t->wlock instead of
 * spinning: the count is odd only while a commit applies (no log write
 * happens under t->wlock, only a copy into the log's buffer), so a
 * reader never waits for a log write, nor for a change to another
 * table.
 */
#include "internal.h"

/* --- the seqcount ----------------------------------------------------------- */

/* The region header gets each value too: mapped readers follow it. */
void tdbo_seq_write_begin(struct tdbo_table *t)
{
	tdb_store_relaxed(&t->seq, t->seq + 1);         /* odd */
	tdb_smp_wmb();
	if (t->t)
		tdbe_table_publish_seq(t->t, t->seq);
}

void tdbo_seq_write_end(struct tdbo_table *t)
{
	tdb_store_release(&t->seq, t->seq + 1);         /* even */
	if (t->t)
		tdbe_table_publish_seq(t->t, t->seq);
}

/* An even count: while a commit to t applies, wait for it on t->wlock. */
static uint64_t seq_read_begin(struct tdbo_table *t)
{
	for (;;) {
		uint64_t s = tdb_load_acquire(&t->seq);

		if (!(s & 1))
			return s;
		tdbp_mutex_lock(t->wlock);
		tdbp_mutex_unlock(t->wlock);
	}
}

/* --- the log hooks ----------------------------------------------------------- */

/* Add one op of table t to a record's size. */
void tdbo_log_size_add(struct tdbo_log_size *sz, const struct tdbo_table *t,
		       size_t klen, size_t vlen)
{
	sz->kind = TDBO_LOG_OPS;
	sz->nops++;
	sz->bytes += tdbo_strlen(t->name) + klen + vlen;
}

int tdbo_log_reserve(struct tdbo_owner *o, const struct tdbo_log_size *sz,
		     const char **msg)
{
	return o->hooks.log_reserve ?
	       o->hooks.log_reserve(o->hooks.arg, sz, msg) : 0;
}

void tdbo_log_cancel(struct tdbo_owner *o, const struct tdbo_log_size *sz)
{
	if (o->hooks.log_reserve)
		o->hooks.log_cancel(o->hooks.arg, sz);
}

static bool seq_read_retry(struct tdbo_table *t, uint64_t s)
{
	tdb_smp_rmb();
	return tdb_load_relaxed(&t->seq) != s;
}

/* --- GET -------------------------------------------------------------------- */

/* GET inside a transaction: its own changes first. 1 = not touched. */
static int get_txn(struct tdbo_client *c, struct tdbo_table *t,
		   const struct tdb_proto_msg *m, struct tdbo_sink *out,
		   struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_txn *x;
	const void *v;
	size_t vl;
	int err = 0;

	x = tdbo_txn_find(c, m, ext, &err);
	if (!x)
		return err;
	err = tdbo_txn_lookup(x, t, m->key, m->key_len, &v, &vl);
	if (err == 0) {
		ext->msg = "no such key (deleted in this transaction)";
		return -ENOENT;
	}
	if (err < 0)
		return 1;
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	a.value = v;
	a.value_len = (uint32_t)vl;
	return tdbo_reply(out, &a, ext);
}

/*
 * A sink whose reserve() may run inside a read-side section (a private
 * buffer: tdbd) gets the reply built straight from the record: one copy.
 * Another (a ring that may wait, an skb that may be allocated: tdb.ko)
 * gets it from a copy of the value in the client's buffer.
 */
static int get_direct(struct tdbo_table *t, const struct tdb_proto_msg *m,
		      struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	int err;

	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	for (;;) {
		uint64_t s = seq_read_begin(t);
		const void *v;
		size_t vl;
		void *p = NULL;
		long len = 0;

		tdbe_read_lock();
		err = tdbe_lookup(t->t, m->key, m->key_len, &v, &vl);
		if (!err) {
			a.value = v;
			a.value_len = (uint32_t)vl;
			len = tdb_proto_size(TDB_PROTO_ANSWER, &a, NULL);
			p = len < 0 ? NULL : out->reserve(out, (size_t)len);
			if (!p || tdb_proto_build(p, (size_t)len,
					TDB_PROTO_ANSWER, &a, NULL) != len)
				err = p ? -EINVAL : -ENOBUFS;
		}
		tdbe_read_unlock();
		if (seq_read_retry(t, s))
			continue;       /* nothing was committed to out */
		if (err) {
			ext->msg = err == -ENOENT ? "no such key" :
				   err == -ENOBUFS ? "no room for the reply" :
				   NULL;
			return err;
		}
		out->commit(out, p, (size_t)len);
		return 0;
	}
}

static int grow_buf(struct tdbo_client *c, size_t need)
{
	size_t cap = tdbo_max((size_t)tdbo_roundup_pow2(need), (size_t)256);
	void *n = tdbp_alloc(cap);

	if (!n)
		return -ENOMEM;
	tdbp_free(c->buf);
	c->buf = n;
	c->buf_cap = cap;
	return 0;
}

static int get_copy(struct tdbo_client *c, struct tdbo_table *t,
		    const struct tdb_proto_msg *m, struct tdbo_sink *out,
		    struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	long n;

	for (;;) {
		uint64_t s = seq_read_begin(t);
		size_t need = 0;
		int err;

		n = tdbe_get(t->t, m->key, m->key_len, c->buf, c->buf_cap,
			     &need);
		if (n == -ENOBUFS) {
			err = grow_buf(c, need);
			if (err)
				return err;
			continue;
		}
		if (!seq_read_retry(t, s))
			break;
	}
	if (n < 0) {
		if (n == -ENOENT)
			ext->msg = "no such key";
		return (int)n;
	}
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	a.value = c->buf;
	a.value_len = (uint32_t)n;
	return tdbo_reply(out, &a, ext);
}

int tdbo_cmd_get(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		err = get_txn(c, t, m, out, ext);
		if (err <= 0)
			goto out;
	}
	err = out->in_read_section ? get_direct(t, m, out, ext) :
				     get_copy(c, t, m, out, ext);
out:
	tdbo_table_put(t);
	return err;
}

/* --- the pipeline ----------------------------------------------------------- */

bool tdbo_key_exists(struct tdbo_table *t, const void *key, size_t klen)
{
	size_t need;

	return tdbe_get(t->t, key, klen, NULL, 0, &need) != -ENOENT;
}

/* Step 3: pre-image, engine.  Under t->wlock; nothing logged here. */
int tdbo_apply(struct tdbo_table *t, const struct tdbo_change *ch,
	       struct tdbe_extack *ee)
{
	int err;

	tdbo_snap_save(t, ch->key, ch->klen);
	if (ch->del) {
		err = tdbe_del(t->t, ch->key, ch->klen, ee);
		return err == -ENOENT && ch->quiet ? 0 : err;
	}
	return tdbe_put(t->t, ch->key, ch->klen, ch->val, ch->vlen,
			ch->noov ? TDBE_NOOVERWRITE : 0, ee);
}

/* Step 4, for a change that is in: dirty, size, feeds (published by
 * the caller's tdbo_feeds_flush). */
void tdbo_applied(struct tdbo_table *t, const struct tdbo_change *ch)
{
	struct tdbo_owner *o = t->o;

	if (o->hooks.dirty)
		o->hooks.dirty(o->hooks.arg, t, ch->key, ch->klen);
	if (!ch->del && o->hooks.mem_note)
		o->hooks.mem_note(o->hooks.arg, t);
	tdbo_notify(o, t, ch->del ? TDB_CMD_DEL : TDB_CMD_PUT, ch->key,
		    ch->klen, ch->val, ch->del ? 0 : ch->vlen);
}

/* Steps 1-4 for one change on its own (log: a client's, not replay). */
static int change_one(struct tdbo_table *t, const struct tdbo_change *ch,
		      bool log, uint64_t *lsn, const char **msg)
{
	struct tdbo_owner *o = t->o;
	struct tdbe_extack ee = { 0 };
	struct tdbo_log_size sz = { 0 };
	int err;

	if (t->dropped) {
		*msg = "no such table";
		return -ENOENT;
	}
	if (ch->del && !ch->quiet && !tdbo_key_exists(t, ch->key, ch->klen)) {
		*msg = "no such key";
		return -ENOENT;
	}
	if (ch->noov && tdbo_key_exists(t, ch->key, ch->klen)) {
		*msg = "key exists (no-overwrite put)";
		return -EEXIST;
	}
	log = log && o->hooks.log_reserve;
	if (log) {
		tdbo_log_size_add(&sz, t, ch->klen, ch->del ? 0 : ch->vlen);
		if ((err = tdbo_log_reserve(o, &sz, msg)))
			return err;
	}
	err = tdbo_apply(t, ch, &ee);
	if (err) {
		if (log)
			tdbo_log_cancel(o, &sz);
		*msg = ee.msg;
		if (err == -ENOSPC && !ee.msg)
			*msg = "table is full (at its max-extents cap)";
		return err;
	}
	if (log) {
		o->hooks.log_begin(o->hooks.arg, ch->version);
		o->hooks.log_op(o->hooks.arg, t, ch->del, ch->key, ch->klen,
				ch->val, ch->del ? 0 : ch->vlen);
		*lsn = o->hooks.log_commit(o->hooks.arg, &sz);
	}
	tdbo_applied(t, ch);
	return 0;
}

static int change_locked(struct tdbo_table *t, const struct tdbo_change *ch,
			 bool log, uint64_t *lsn, const char **msg)
{
	int err;

	*lsn = 0;
	tdbp_mutex_lock(t->wlock);
	err = change_one(t, ch, log, lsn, msg);
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	return err;
}

/* A durable home's replay: the pipeline without the log. */
int tdbo_replay(struct tdbo_table *t, bool del, const void *key,
		size_t klen, const void *val, size_t vlen, uint64_t version,
		const char **msg)
{
	struct tdbo_change ch = {
		.del = del, .quiet = true, .key = key, .klen = klen,
		.val = val, .vlen = vlen, .version = version,
	};
	uint64_t lsn;

	return change_locked(t, &ch, false, &lsn, msg);
}

/* The value in one piece: m's own bytes, or its fragments gathered into
 * *buf (tdbp_free()d by the caller). */
static const void *value_of(const struct tdb_proto_msg *m, void **buf)
{
	*buf = NULL;
	if (m->value_frags <= 1)
		return m->value;
	*buf = tdbp_alloc(m->value_len);
	if (*buf)
		tdb_proto_value_copy(m, *buf);
	return *buf;
}

int tdbo_cmd_put_del(struct tdbo_client *c, const struct tdb_proto_msg *m,
		     bool del, struct tdb_proto_extack *ext,
		     struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_change ch = { .del = del, .key = m->key,
				  .klen = m->key_len };
	struct tdbo_table *t;
	void *buf = NULL;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_WRITE, ext, &err);
	if (!t)
		return err;
	/* past the home's memory limit puts fail; deletes go on */
	if (!del && o->hooks.mem_check &&
	    (err = o->hooks.mem_check(o->hooks.arg, &ext->msg)))
		goto out;
	if (!del) {
		ch.val = value_of(m, &buf);
		ch.vlen = m->value_len;
		ch.noov = m->flags & TDB_PUT_NOOVERWRITE;
		if (!ch.val) {
			err = -ENOMEM;
			goto out;
		}
	}
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		struct tdbo_txn *x = tdbo_txn_find(c, m, ext, &err);

		if (x)
			err = tdbo_txn_add(x, t, del, m->flags, ch.key,
					   ch.klen, ch.val, ch.vlen, ext);
	} else {
		err = change_locked(t, &ch, true, &res->lsn, &ext->msg);
	}
out:
	tdbp_free(buf);
	tdbo_table_put(t);
	return err;
}

/* --- GETs in a run (tdbo_get_many) --------------------------------------- */

static bool plain_get(const struct tdb_proto_msg *m)
{
	return m->cmd == TDB_CMD_GET && !TDB_PROTO_HAS(m, TDB_A_TXN);
}

/* A GET that failed: counted and answered as tdbo_exec() would. */
static void get_failed(struct tdbo_client *c, const struct tdb_proto_msg *m,
		       int err, struct tdb_proto_extack *ext,
		       tdbo_get_fail_fn *fail, void *arg)
{
	tdbo_inc(&c->o->requests);
	tdbo_inc(&c->o->errors);
	if (!ext->msg)
		ext->msg = tdbe_strerror(err);
	fail(arg, m, err, ext);
}

/* One GET's answer from its lookup, inside the read-side section: what
 * get_direct() answers.  false: out has no room for the reply (nothing
 * answered, nothing counted). */
static bool get_answer(struct tdbo_client *c, const struct tdb_proto_msg *m,
		       const struct tdbe_lookup_req *rq, struct tdbo_sink *out,
		       tdbo_get_fail_fn *fail, void *arg)
{
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg a;
	int err = rq->err;
	long len;
	void *p;

	if (!err) {
		tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
		a.value = rq->val;
		a.value_len = (uint32_t)rq->vlen;
		len = tdb_proto_size(TDB_PROTO_ANSWER, &a, NULL);
		err = -ENOBUFS;
		if (len >= 0) {
			p = out->reserve(out, (size_t)len);
			if (!p)
				return false;
			err = tdb_proto_build(p, (size_t)len, TDB_PROTO_ANSWER,
					      &a, NULL) == len ? 0 : -EINVAL;
			if (!err) {
				out->commit(out, p, (size_t)len);
				tdbo_inc(&c->o->requests);
				return true;
			}
		}
	}
	ext.msg = err == -ENOENT ? "no such key" :
		  err == -ENOBUFS ? "no room for the reply" : NULL;
	get_failed(c, m, err, &ext, fail, arg);
	return true;
}

/*
 * n (<= TDBE_LOOKUP_GROUP) plain GETs of table t: one tdbe_lookup_many
 * inside one read-side section, retried whole while a commit to t
 * applies (the seqcount is checked before any answer is given, so the
 * run sees a transaction whole or not at all, and nothing is answered
 * twice); then the answers, in order, from the records themselves.
 * Returns how many were answered.
 */
static unsigned int get_run(struct tdbo_client *c, struct tdbo_table *t,
			    const struct tdb_proto_msg *m, unsigned int n,
			    struct tdbo_sink *out, tdbo_get_fail_fn *fail,
			    void *arg)
{
	struct tdbe_lookup_req rq[TDBE_LOOKUP_GROUP];
	unsigned int i;

	for (i = 0; i < n; i++) {
		rq[i].key = m[i].key;
		rq[i].klen = m[i].key_len;
	}
	for (;;) {
		uint64_t s = seq_read_begin(t);

		tdbe_read_lock();
		tdbe_lookup_many(t->t, rq, n);
		if (!seq_read_retry(t, s))
			break;
		tdbe_read_unlock();
	}
	for (i = 0; i < n; i++)
		if (!get_answer(c, &m[i], &rq[i], out, fail, arg))
			break;
	tdbe_read_unlock();
	return i;
}

/* How many of m[0..n) from the first are plain GETs of m[0]'s table, at
 * most a lookup group. */
static unsigned int run_len(const struct tdb_proto_msg *m, unsigned int n)
{
	unsigned int j = 1;

	while (j < n && j < TDBE_LOOKUP_GROUP && plain_get(&m[j]) &&
	       tdbo_streq(m[j].table, m[0].table))
		j++;
	return j;
}

unsigned int tdbo_get_many(struct tdbo_client *c,
			   const struct tdb_proto_msg *m, unsigned int n,
			   struct tdbo_sink *out, tdbo_get_fail_fn *fail,
			   void *arg)
{
	unsigned int i = 0, k, done;

	while (i < n) {
		struct tdb_proto_extack ext = { 0 };
		struct tdbo_table *t;
		int err = 0;

		if (!plain_get(&m[i]) || !out->in_read_section)
			break;  /* the caller's, with tdbo_exec() */
		k = run_len(&m[i], n - i);
		t = tdbo_resolve(c, &m[i], TDBO_MAY_READ, &ext, &err);
		if (!t) {
			get_failed(c, &m[i++], err, &ext, fail, arg);
			continue;
		}
		done = get_run(c, t, &m[i], k, out, fail, arg);
		tdbo_table_put(t);
		i += done;
		if (done < k)
			break;  /* no room: the rest is the caller's */
	}
	return i;
}
