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
 *     note the table's size (its owner's TDBO_Q_DATA charge,
 *     tdbo_table_data_note, and hooks->mem_note), and tell the feeds and
 *     the change hook (feed.c), published at the end of the change.
 * docs/DURABILITY.md states the order and what a crash at each step
 * leaves.
 *
 * Versions.  Every write takes the next value of one counter per owner
 * (o->version) under the lock of the table it writes, after its
 * conditions passed and before it applies; the record stores it, the
 * log record carries it, the feeds tell it.  Two writes of one key are
 * ordered by that key's table lock, so a key's versions only go up,
 * and the counter never goes back (replay and restore raise it past
 * every version they put back; a checkpoint keeps it), so a version
 * never repeats for a key.  A change that fails after taking one
 * leaves a gap: versions are unique and ordered, not dense.
 *
 * Conditions (IF_ABSENT = no-overwrite, IF_PRESENT, IF_VERSION) are
 * step 1: under t->wlock, against the key's version then, so nothing
 * can come between the check and the write.
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

/* --- versions ---------------------------------------------------------------- */

uint64_t tdbo_version_last(struct tdbo_owner *o)
{
	return tdb_load_acquire(&o->version);
}

void tdbo_version_floor(struct tdbo_owner *o, uint64_t v)
{
	uint64_t cur = tdb_load_relaxed(&o->version);

	while (cur < v &&
	       !__atomic_compare_exchange_n(&o->version, &cur, v, false,
					    __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED))
		;
}

uint64_t tdbo_version_take(struct tdbo_owner *o, uint64_t explicit_v)
{
	if (explicit_v) {
		tdbo_version_floor(o, explicit_v);
		return explicit_v;
	}
	return tdb_fetch_add(&o->version, 1) + 1;
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

/* An answer's VERSION: present unless the record has none (0: written
 * by the bare engine, never by the owner). */
void tdbo_set_version(struct tdb_proto_msg *a, uint64_t v)
{
	a->rec_version = v;
	if (v)
		a->attrs |= TDB_PROTO_BIT(TDB_A_VERSION);
	else
		a->attrs &= ~TDB_PROTO_BIT(TDB_A_VERSION);
}

/* An answer's DEADLINE: present when the record has one. */
void tdbo_set_deadline(struct tdb_proto_msg *a, uint64_t d)
{
	a->deadline = d;
	if (d)
		a->attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
	else
		a->attrs &= ~TDB_PROTO_BIT(TDB_A_DEADLINE);
}

static bool seq_read_retry(struct tdbo_table *t, uint64_t s)
{
	tdb_smp_rmb();
	return tdb_load_relaxed(&t->seq) != s;
}

/* --- GET -------------------------------------------------------------------- */

static int grow_buf(struct tdbo_client *c, size_t need);

/* GET inside a transaction of a key it has not changed: read the table
 * and join the read set with the version seen (0: absent), so the
 * commit fails if the key changes meanwhile (txn.c, "Validation"). */
static int get_txn_read(struct tdbo_client *c, struct tdbo_txn *x,
			struct tdbo_table *t, const struct tdb_proto_msg *m,
			struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	uint64_t ver = 0, dl = 0;
	long n;
	int err;

	for (;;) {
		uint64_t s = seq_read_begin(t);
		size_t need = 0;

		n = tdbe_get_ex(t->t, m->key, m->key_len, c->buf, c->buf_cap,
				&need, &ver, &dl);
		if (n == -ENOBUFS) {
			err = grow_buf(c, need);
			if (err)
				return err;
			continue;
		}
		if (!seq_read_retry(t, s))
			break;
	}
	if (n < 0 && n != -ENOENT)
		return (int)n;
	/* as tdbo_key_version says it at commit: a bare engine record
	 * (version 0) is present */
	err = tdbo_txn_read_add(x, t, m->key, m->key_len,
				n < 0 ? 0 : ver ? ver : 1, ext);
	if (err)
		return err;
	if (n < 0) {
		ext->msg = "no such key";
		return -ENOENT;
	}
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE) |
			TDB_PROTO_BIT(TDB_A_VERSION));
	a.value = c->buf;
	a.value_len = (uint32_t)n;
	tdbo_set_version(&a, ver);
	tdbo_set_deadline(&a, dl);
	return tdbo_reply(out, &a, ext);
}

/* GET inside a transaction: its own changes first. */
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
		return get_txn_read(c, x, t, m, out, ext);
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

	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE) |
			TDB_PROTO_BIT(TDB_A_VERSION));
	for (;;) {
		uint64_t s = seq_read_begin(t);
		const void *v;
		size_t vl;
		void *p = NULL;
		long len = 0;

		tdbe_read_lock();
		err = tdbe_lookup_ex(t->t, m->key, m->key_len, &v, &vl,
				     &a.rec_version, &a.deadline);
		if (!err) {
			a.value = v;
			a.value_len = (uint32_t)vl;
			tdbo_set_version(&a, a.rec_version);
			tdbo_set_deadline(&a, a.deadline);
			tdbo_evict_hit(t, v, m->key_len);
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
	uint64_t ver = 0, dl = 0;
	long n;

	for (;;) {
		uint64_t s = seq_read_begin(t);
		size_t need = 0;
		int err;

		n = tdbe_get_ex(t->t, m->key, m->key_len, c->buf, c->buf_cap,
				&need, &ver, &dl);
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
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE) |
			TDB_PROTO_BIT(TDB_A_VERSION));
	a.value = c->buf;
	a.value_len = (uint32_t)n;
	tdbo_set_version(&a, ver);
	tdbo_set_deadline(&a, dl);
	tdbo_evict_touch(t, m->key, m->key_len);
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
		goto out;
	}
	err = out->in_read_section ? get_direct(t, m, out, ext) :
				     get_copy(c, t, m, out, ext);
out:
	tdbo_table_put(t);
	return err;
}

/* --- the pipeline ----------------------------------------------------------- */

uint64_t tdbo_key_version(struct tdbo_table *t, const void *key,
			  size_t klen)
{
	uint64_t v = 0;
	size_t need;

	if (tdbe_get_ver(t->t, key, klen, NULL, 0, &need, &v) == -ENOENT)
		return 0;
	return v ? v : 1;       /* a bare engine record: present */
}

/* "version N", or what stands for one. */
static void text_version(char *why, uint64_t v)
{
	if (v == TDBO_VERSION_UNSET) {
		tdbo_text_add(why, "written earlier in this transaction");
		return;
	}
	tdbo_text_add(why, "version ");
	tdbo_text_u64(why, v);
}

int tdbo_cond_check(const struct tdbo_change *ch, uint64_t cur, char *why)
{
	why[0] = '\0';
	if (ch->noov && cur) {
		tdbo_text_add(why, "key exists (no-overwrite / if-absent "
			      "put): it is at ");
		text_version(why, cur);
		return -EEXIST;
	}
	if (ch->ifpresent && !cur) {
		tdbo_text_add(why, "no such key (if-present put)");
		return -ENOENT;
	}
	if (ch->ifver && cur != ch->ifver) {
		tdbo_text_add(why, "version condition failed: the key ");
		if (cur) {
			tdbo_text_add(why, "is at ");
			text_version(why, cur);
		} else {
			tdbo_text_add(why, "is absent");
		}
		tdbo_text_add(why, ", not ");
		tdbo_text_u64(why, ch->ifver);
		return -ECANCELED;
	}
	return 0;
}

/* Step 3: pre-image, engine.  Under t->wlock; nothing logged here.
 * ch->version is the write's (tdbo_version_take). */
int tdbo_apply(struct tdbo_table *t, const struct tdbo_change *ch,
	       struct tdbe_extack *ee)
{
	int err;

	unsigned int flags = ch->noov ? TDBE_NOOVERWRITE : 0;
	uint32_t access = 0;

	tdbo_snap_save(t, ch->key, ch->klen);
	if (ch->del) {
		err = tdbe_del_ex(t->t, ch->key, ch->klen,
				  ch->replay ? TDBE_DEL_ANY :
				  ch->expiry ? TDBE_DEL_EXPIRED : 0, ee);
		return err == -ENOENT && ch->quiet ? 0 : err;
	}
	if (tdbo_evict_access(t, ch->key, ch->klen, &access))
		flags |= TDBE_ACCESS;
	return tdbe_put_acc(t->t, ch->key, ch->klen, ch->val, ch->vlen, flags,
			    ch->version, ch->deadline, access, ee);
}

/* Step 4, for a change that is in: dirty, size, feeds (published by
 * the caller's tdbo_feeds_flush). */
void tdbo_applied(struct tdbo_table *t, const struct tdbo_change *ch)
{
	struct tdbo_owner *o = t->o;

	if (o->hooks.dirty)
		o->hooks.dirty(o->hooks.arg, t, ch->key, ch->klen);
	if (!ch->del) {
		tdbo_table_data_note(t);
		if (o->hooks.mem_note)
			o->hooks.mem_note(o->hooks.arg, t);
	}
	tdbo_notify(o, t, ch->del ? TDB_CMD_DEL : TDB_CMD_PUT, ch->key,
		    ch->klen, ch->val, ch->del ? 0 : ch->vlen, ch->version,
		    ch->del ? 0 : ch->deadline,
		    ch->expiry ? TDB_REASON_EXPIRED :
		    ch->evict ? TDB_REASON_EVICTED : 0);
}

/* A PUT's deadline, under t->wlock just before it applies: the one it
 * gave (or replay's), else now + its TTL, else now + the table's
 * default TTL, else none. */
void tdbo_change_deadline(struct tdbo_table *t, struct tdbo_change *ch)
{
	uint64_t ttl = ch->ttl ? ch->ttl : t->default_ttl;

	if (ch->has_deadline || ch->replay)
		return;
	ch->deadline = ttl ? tdbe_table_now_ms(t->t) + ttl : 0;
}

static bool keep_key(void *arg, const struct tdbo_table *t, const void *key,
		     size_t klen)
{
	const struct tdbo_change *ch = arg;

	(void)t;
	return klen == ch->klen && !memcmp(key, ch->key, klen);
}

/* A put's evictions, after it applied (evict.c): never its own key. */
static void evict_after(struct tdbo_table *t, const struct tdbo_change *ch,
			char *why)
{
	struct tdbo_evict_keep keep = { keep_key, (void *)ch };

	if (t->max_bytes || t->max_records)
		tdbo_evict(t, &keep, why);
}

/* Steps 1-4 for one change on its own (log: a client's, not replay).
 * why: TDBO_TEXT bytes for a condition's text (*msg then points at
 * it). */
static int change_one(struct tdbo_table *t, struct tdbo_change *ch,
		      bool log, uint64_t *lsn, const char **msg, char *why)
{
	struct tdbo_owner *o = t->o;
	struct tdbe_extack ee = { 0 };
	struct tdbo_log_size sz = { 0 };
	int err;

	if (t->dropped) {
		*msg = "no such table";
		return -ENOENT;
	}
	if (ch->noov || ch->ifpresent || ch->ifver ||
	    (ch->del && !ch->quiet)) {
		uint64_t cur = tdbo_key_version(t, ch->key, ch->klen);

		if (ch->del && !ch->quiet && !cur && !ch->ifver) {
			*msg = "no such key";
			return -ENOENT;
		}
		err = tdbo_cond_check(ch, cur, why);
		if (err) {
			*msg = why;
			return err;
		}
	}
	if (!ch->del)
		tdbo_change_deadline(t, ch);
	if (!ch->replay && (err = tdbo_bound_refuse(t, ch, msg, why)))
		return err;
	log = log && o->hooks.log_reserve;
	if (log) {
		tdbo_log_size_add(&sz, t, ch->klen, ch->del ? 0 : ch->vlen);
		if ((err = tdbo_log_reserve(o, &sz, msg)))
			return err;
	}
	ch->version = tdbo_version_take(o, ch->version);
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
				ch->val, ch->del ? 0 : ch->vlen,
				ch->del ? 0 : ch->deadline);
		*lsn = o->hooks.log_commit(o->hooks.arg, &sz);
	}
	tdbo_applied(t, ch);
	if (!ch->del && !ch->replay)
		evict_after(t, ch, why);
	return 0;
}

int tdbo_change_one(struct tdbo_table *t, struct tdbo_change *ch, bool log,
		    uint64_t *lsn, const char **msg, char *why)
{
	return change_one(t, ch, log, lsn, msg, why);
}

static int change_locked(struct tdbo_table *t, struct tdbo_change *ch,
			 bool log, uint64_t *lsn, const char **msg, char *why)
{
	int err;

	*lsn = 0;
	tdbp_mutex_lock(t->wlock);
	err = change_one(t, ch, log, lsn, msg, why);
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	return err;
}

/* A durable home's replay: the pipeline without the log. */
int tdbo_replay(struct tdbo_table *t, bool del, const void *key,
		size_t klen, const void *val, size_t vlen, uint64_t version,
		uint64_t deadline, const char **msg)
{
	struct tdbo_change ch = {
		.del = del, .quiet = true, .key = key, .klen = klen,
		.val = val, .vlen = vlen, .version = version,
		.deadline = deadline, .replay = true,
	};
	uint64_t lsn;
	char why[TDBO_TEXT];
	int err;

	err = change_locked(t, &ch, false, &lsn, msg, why);
	if (err && *msg == why)
		*msg = "a condition failed in replay";
	return err;
}

/* A request's TTL or DEADLINE (EXPIRY in tdb/proto.h) into ch, checked
 * against t's clock: 0, or -EINVAL (both), -ERANGE (a deadline over
 * TDB_TTL_MAX ahead) with ext set.  The codec checked TTL's range. */
int tdbo_expiry_of(struct tdbo_table *t, const struct tdb_proto_msg *m,
		   struct tdbo_change *ch, struct tdb_proto_extack *ext)
{
	if (TDB_PROTO_HAS(m, TDB_A_TTL) && TDB_PROTO_HAS(m, TDB_A_DEADLINE)) {
		ext->msg = "TTL and DEADLINE together (give one)";
		ext->offset = m->attr_off[TDB_A_DEADLINE];
		return -EINVAL;
	}
	if (TDB_PROTO_HAS(m, TDB_A_TTL))
		ch->ttl = m->ttl;
	if (TDB_PROTO_HAS(m, TDB_A_DEADLINE)) {
		if (m->deadline > tdbe_table_now_ms(t->t) + TDB_TTL_MAX) {
			ext->msg = "DEADLINE is more than 10 years ahead "
				   "(TDB_TTL_MAX)";
			ext->offset = m->attr_off[TDB_A_DEADLINE];
			return -ERANGE;
		}
		ch->deadline = m->deadline;
		ch->has_deadline = true;
	}
	return 0;
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

	ch.ifver = m->if_version;
	if (!del) {
		ch.noov = m->flags & TDB_PUT_NOOVERWRITE;
		ch.ifpresent = m->flags & TDB_PUT_IF_PRESENT;
	}
	if (ch.noov && ch.ifpresent) {
		ext->msg = "if-absent and if-present together";
		ext->offset = m->attr_off[TDB_A_FLAGS];
		return -EINVAL;
	}
	if (TDB_PROTO_HAS(m, TDB_A_SET_VERSION)) {
		ext->offset = m->attr_off[TDB_A_SET_VERSION];
		if (!c->may_set_version) {
			ext->msg = "SET_VERSION is the supervisor's restore "
				   "only";
			return -EPERM;
		}
		if (TDB_PROTO_HAS(m, TDB_A_TXN) || ch.noov || ch.ifpresent ||
		    ch.ifver) {
			ext->msg = "SET_VERSION with a transaction or a "
				   "condition";
			return -EINVAL;
		}
		ch.version = m->set_version;
		/* a restore puts back what was: the record's own deadline
		 * (or none), no default TTL, no bound checked or evicted */
		ch.replay = true;
	}
	/* A condition tells whether the key exists: a reader's right, so
	 * it needs read permission too (no oracle beyond GET's). */
	t = tdbo_resolve(c, m, TDBO_MAY_WRITE |
			 (ch.noov || ch.ifpresent || ch.ifver ?
			  TDBO_MAY_READ : 0), ext, &err);
	if (!t)
		return err;
	if (!del && (err = tdbo_expiry_of(t, m, &ch, ext)))
		goto out;
	/* past the home's memory limit, or the table owner's data bound
	 * (max-data-per-uid; root writes on), puts fail; deletes go on */
	if (!del && o->hooks.mem_check &&
	    (err = o->hooks.mem_check(o->hooks.arg, &ext->msg)))
		goto out;
	if (!del && (err = tdbo_table_data_check(o, c->uid, t, &ext->msg)))
		goto out;
	if (!del) {
		ch.val = value_of(m, &buf);
		ch.vlen = m->value_len;
		if (!ch.val) {
			err = -ENOMEM;
			goto out;
		}
	}
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		struct tdbo_txn *x = tdbo_txn_find(c, m, ext, &err);

		if (x)
			err = tdbo_txn_add(x, t, &ch, del ? 0 : m->flags,
					   ext);
	} else {
		err = change_locked(t, &ch, true, &res->lsn, &ext->msg,
				    c->why);
	}
out:
	tdbp_free(buf);
	tdbo_table_put(t);
	return err;
}

/* --- RESTORE_BULK ---------------------------------------------------------- */

/*
 * The supervisor's restore, many records in one request (tdb/proto.h,
 * TDB_A_RECORDS): each record goes exactly the way a PUT with
 * SET_VERSION (and DEADLINE when it has one) goes in tdbo_cmd_put_del()
 * (the same checks, in the same order, and the same change), so a batch
 * restores what the single PUTs would.  The codec checked the records'
 * shape; the first record that fails stops the batch, the ones before it
 * stay (as single PUTs would), and the message says which record.
 */
static void bulk_fail(struct tdbo_client *c, uint32_t i, const char *msg,
		      struct tdb_proto_extack *ext)
{
	char text[TDBO_TEXT];

	text[0] = '\0';
	tdbo_text_add(text, "RESTORE_BULK record ");
	tdbo_text_u64(text, i);
	tdbo_text_add(text, ": ");
	tdbo_text_add(text, msg ? msg : "failed");
	memcpy(c->why, text, sizeof(text));
	ext->msg = c->why;
}

/*
 * The batch's records straight into the engine, under t->wlock, when
 * the home logs nothing until restore_end (its restore_begin said so:
 * tdb.ko while the supervisor restores).  What change_one() would do
 * for each record with nothing to log, replay's rules (no condition, no
 * bound, no eviction after, the record's own deadline), with the
 * per-batch parts done once: the clock for the DEADLINE rule read once
 * (the batch's start: a deadline judged against it, not a later
 * instant), the version floor raised once to the batch's highest
 * applied version, the data bound's note once at the end.  Per record
 * stay the engine's own checks and its memory charge of each extent it
 * grows (tdbo_apply), the snapshot pre-image, the dirty hook and a
 * notification (tdbo_notify returns at once when nobody listens).
 * *i: the records in.
 */
static int restore_fast(struct tdbo_table *t, const struct tdb_proto_msg *m,
			uint32_t *i, const char **msg)
{
	struct tdbo_owner *o = t->o;
	struct tdb_proto_record r;
	uint64_t top = 0, far;
	uint32_t off = 0;
	int err = 0;

	if (t->dropped) {
		*msg = "no such table";
		return -ENOENT;
	}
	far = tdbe_table_now_ms(t->t) + TDB_TTL_MAX;
	while (tdb_proto_record_next(m, &off, &r)) {
		struct tdbo_change ch = {
			.key = r.key, .klen = r.klen,
			.val = r.val, .vlen = r.vlen,
			.version = r.version,   /* the codec: not 0 */
			.deadline = r.deadline,
			.has_deadline = r.deadline != 0,
			.replay = true,
		};
		struct tdbe_extack ee = { 0 };

		if (r.deadline > far) {   /* tdbo_expiry_of()'s DEADLINE rule */
			*msg = "its DEADLINE is more than 10 years ahead "
			       "(TDB_TTL_MAX)";
			err = -ERANGE;
			break;
		}
		if ((err = tdbo_apply(t, &ch, &ee))) {
			*msg = ee.msg;
			if (err == -ENOSPC && !ee.msg)
				*msg = "table is full (at its max-extents cap)";
			break;
		}
		if (r.version > top)
			top = r.version;
		if (o->hooks.dirty)
			o->hooks.dirty(o->hooks.arg, t, r.key, r.klen);
		tdbo_notify(o, t, TDB_CMD_PUT, r.key, r.klen, r.val, r.vlen,
			    r.version, r.deadline, 0);
		(*i)++;
	}
	if (top)
		tdbo_version_floor(o, top);
	if (*i) {
		tdbo_table_data_note(t);
		if (o->hooks.mem_note)
			o->hooks.mem_note(o->hooks.arg, t);
	}
	return err;
}

int tdbo_cmd_restore_bulk(struct tdbo_client *c,
			  const struct tdb_proto_msg *m,
			  struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	struct tdb_proto_record r;
	struct tdbo_table *t;
	uint32_t off = 0, i = 0;
	const char *msg = NULL;
	uint64_t lsn = 0;
	int err = 0, fast;

	ext->offset = m->attr_off[TDB_A_RECORDS];
	if (!c->may_set_version) {
		ext->msg = "RESTORE_BULK is the supervisor's restore only";
		return -EPERM;
	}
	t = tdbo_resolve(c, m, TDBO_MAY_WRITE, ext, &err);
	if (!t)
		return err;
	/*
	 * The limits once a batch, not once a record: the home's memory
	 * bound (mem_check: a soft check, what is in use against the
	 * bound; the hard one is the charge of each extent the inserts
	 * grow, which refuses the record that needs it) and the table
	 * owner's data bound.  A batch is at most TDB_RESTORE_BULK_MAX
	 * bytes, so a restore goes past them by at most one batch, as
	 * single PUTs in flight would.  And the table's write lock once a
	 * batch: a restore is its only writer (tdb.ko recovers).
	 */
	if ((o->hooks.mem_check &&
	     (err = o->hooks.mem_check(o->hooks.arg, &msg))) ||
	    (err = tdbo_table_data_check(o, c->uid, t, &msg))) {
		bulk_fail(c, 0, msg, ext);
		tdbo_table_put(t);
		return err;
	}
	tdbp_mutex_lock(t->wlock);
	fast = o->hooks.restore_begin ?
	       o->hooks.restore_begin(o->hooks.arg, &msg) : 0;
	if (fast < 0) {
		err = fast;
		goto out;
	}
	if (fast) {
		err = restore_fast(t, m, &i, &msg);
		o->hooks.restore_end(o->hooks.arg);
		goto out;
	}
	while (tdb_proto_record_next(m, &off, &r)) {
		struct tdbo_change ch = {
			.key = r.key, .klen = r.klen,
			.val = r.val, .vlen = r.vlen,
			.version = r.version,
			/* as a PUT with SET_VERSION: the record's own
			 * deadline (or none), no default TTL, no bound */
			.replay = true,
		};

		if (r.deadline) {       /* tdbo_expiry_of()'s DEADLINE rule */
			if (r.deadline > tdbe_table_now_ms(t->t) +
					  TDB_TTL_MAX) {
				err = -ERANGE;
				msg = "its DEADLINE is more than 10 years "
				      "ahead (TDB_TTL_MAX)";
				break;
			}
			ch.deadline = r.deadline;
			ch.has_deadline = true;
		}
		lsn = 0;
		if ((err = change_one(t, &ch, true, &lsn, &msg, c->why)))
			break;
		/* the answer waits for the last record that went in, also
		 * when a later one failed (those before it stay) */
		if (lsn)
			res->lsn = lsn;
		i++;
	}
out:
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	if (err)
		bulk_fail(c, i, msg, ext);
	tdbo_table_put(t);
	return err;
}

/* --- INCR ------------------------------------------------------------------ */

/*
 * The value as a signed 64-bit decimal integer (docs/PROTOCOL.md,
 * "INCR"): an optional '-', then digits, no leading zero but "0", no
 * "-0", at most 20 bytes; absent counts as 0.  Then the sum, checked.
 */
static bool parse_int(const unsigned char *p, size_t n, int64_t *out)
{
	uint64_t mag = 0, lim;
	bool neg = n && p[0] == '-';
	size_t i = neg;

	if (n == 0 || n > 20 || i == n)
		return false;
	if (p[i] == '0' && (n - i > 1 || neg))
		return false;
	lim = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		if (mag > (lim - (uint64_t)(p[i] - '0')) / 10)
			return false;
		mag = mag * 10 + (uint64_t)(p[i] - '0');
	}
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return true;
}

static size_t format_int(int64_t v, char *out)
{
	char d[TDBO_INT_TEXT];
	uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t i = sizeof(d), n = 0;

	do {
		d[--i] = (char)('0' + mag % 10);
		mag /= 10;
	} while (mag);
	if (v < 0)
		out[n++] = '-';
	while (i < sizeof(d))
		out[n++] = d[i++];
	return n;
}

int tdbo_int_add(const void *val, size_t vlen, bool present, int64_t delta,
		 char *out, int64_t *sum, const char **msg)
{
	int64_t v = 0;

	if (present && !parse_int(val, vlen, &v)) {
		*msg = "the value is not a signed 64-bit decimal integer";
		return -EDOM;
	}
	if (__builtin_add_overflow(v, delta, sum)) {
		*msg = "the sum overflows a signed 64-bit integer";
		return -ERANGE;
	}
	return (int)format_int(*sum, out);
}

/* INCR on its own: read, add and write under t->wlock, one change. */
static int incr_locked(struct tdbo_client *c, struct tdbo_table *t,
		       int64_t delta, const struct tdb_proto_msg *m,
		       int64_t *sum, uint64_t *version, uint64_t *lsn,
		       const char **msg)
{
	struct tdbo_change ch = { .key = m->key, .klen = m->key_len };
	char text[TDBO_INT_TEXT];
	size_t need = 0;
	long n;
	int err;

	*lsn = 0;
	tdbp_mutex_lock(t->wlock);
	if (t->dropped) {
		*msg = "no such table";
		err = -ENOENT;
		goto out;
	}
	n = tdbe_get_ex(t->t, m->key, m->key_len, text, sizeof(text), &need,
			NULL, &ch.deadline);
	/* INCR keeps the key's deadline (a rate-limit window stays one);
	 * an absent key gets the table's default */
	ch.has_deadline = n >= 0;      /* none stays none */
	if (n == -ENOBUFS) {
		*msg = "the value is not a signed 64-bit decimal integer "
		       "(too long)";
		err = -EDOM;
		goto out;
	}
	if (n < 0 && n != -ENOENT) {
		err = (int)n;
		goto out;
	}
	err = tdbo_int_add(text, n < 0 ? 0 : (size_t)n, n >= 0, delta, text,
			   sum, msg);
	if (err < 0)
		goto out;
	ch.val = text;
	ch.vlen = (size_t)err;
	err = change_one(t, &ch, true, lsn, msg, c->why);
	*version = ch.version;
out:
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	return err;
}

int tdbo_cmd_incr(struct tdbo_client *c, const struct tdb_proto_msg *m,
		  struct tdbo_sink *out, struct tdb_proto_extack *ext,
		  struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	int64_t delta = TDB_PROTO_HAS(m, TDB_A_DELTA) ? m->delta : 1;
	struct tdb_proto_msg a;
	struct tdbo_table *t;
	uint64_t version = 0;
	int64_t sum = 0;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ | TDBO_MAY_WRITE, ext, &err);
	if (!t)
		return err;
	if (o->hooks.mem_check &&
	    (err = o->hooks.mem_check(o->hooks.arg, &ext->msg)))
		goto out;
	if ((err = tdbo_table_data_check(o, c->uid, t, &ext->msg)))
		goto out;
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		struct tdbo_txn *x = tdbo_txn_find(c, m, ext, &err);

		if (x)
			err = tdbo_txn_incr(c, x, t, m, delta, &sum, ext);
	} else {
		err = incr_locked(c, t, delta, m, &sum, &version, &res->lsn,
				  &ext->msg);
	}
	if (err)
		goto out;
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_INT));
	a.ival = sum;
	tdbo_set_version(&a, version);
	err = tdbo_reply(out, &a, ext);
out:
	tdbo_table_put(t);
	return err;
}

/* --- EXPIRE ----------------------------------------------------------------- */

/* EXPIRE that only reads: the key's version and deadline. */
static int expire_read(struct tdbo_table *t, const struct tdb_proto_msg *m,
		       uint64_t *ver, uint64_t *dl, const char **msg)
{
	for (;;) {
		uint64_t s = seq_read_begin(t);
		const void *v;
		size_t vl;
		int err;

		tdbe_read_lock();
		err = tdbe_lookup_ex(t->t, m->key, m->key_len, &v, &vl, ver,
				     dl);
		tdbe_read_unlock();
		if (seq_read_retry(t, s))
			continue;
		if (err == -ENOENT)
			*msg = "no such key";
		return err;
	}
}

/* EXPIRE that sets or clears the deadline: the record written again
 * with the same value and its new deadline, one change (a new version,
 * logged, told to watchers as a PUT), under t->wlock. */
static int expire_write(struct tdbo_client *c, struct tdbo_table *t,
			struct tdbo_change *ch, uint64_t *lsn,
			const char **msg)
{
	size_t need = 0;
	long n;
	int err;

	*lsn = 0;
	tdbp_mutex_lock(t->wlock);
	for (;;) {
		n = t->dropped ? -ENOENT :
		    tdbe_get_ex(t->t, ch->key, ch->klen, c->buf, c->buf_cap,
				&need, NULL, NULL);
		if (n != -ENOBUFS)
			break;
		if ((err = grow_buf(c, need)))
			goto out;
	}
	if (n < 0) {
		err = (int)n;
		*msg = t->dropped ? "no such table" : "no such key";
		goto out;
	}
	ch->val = c->buf;
	ch->vlen = (size_t)n;
	err = change_one(t, ch, true, lsn, msg, c->why);
out:
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	return err;
}

int tdbo_cmd_expire(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext,
		    struct tdbo_out *res)
{
	struct tdbo_change ch = { .key = m->key, .klen = m->key_len };
	bool persist = m->expire_flags & TDB_EXPIRE_PERSIST;
	bool set = TDB_PROTO_HAS(m, TDB_A_TTL) ||
		   TDB_PROTO_HAS(m, TDB_A_DEADLINE);
	struct tdb_proto_msg a;
	struct tdbo_table *t;
	uint64_t ver = 0, dl = 0;
	int err = 0;

	if (persist && set) {
		ext->msg = "PERSIST with a TTL or DEADLINE";
		ext->offset = m->attr_off[TDB_A_EXPIRE_FLAGS];
		return -EINVAL;
	}
	t = tdbo_resolve(c, m, TDBO_MAY_READ |
			 (persist || set ? TDBO_MAY_WRITE : 0), ext, &err);
	if (!t)
		return err;
	if (!persist && !set) {
		err = expire_read(t, m, &ver, &dl, &ext->msg);
	} else {
		ch.has_deadline = persist;      /* and 0: none */
		err = tdbo_expiry_of(t, m, &ch, ext);
		if (!err)
			err = expire_write(c, t, &ch, &res->lsn, &ext->msg);
		ver = ch.version;
		dl = ch.deadline;
	}
	if (err)
		goto out;
	tdbo_reply_init(m, &a, 0);
	tdbo_set_version(&a, ver);
	tdbo_set_deadline(&a, dl);
	err = tdbo_reply(out, &a, ext);
out:
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
		tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE) |
				TDB_PROTO_BIT(TDB_A_VERSION));
		a.value = rq->val;
		a.value_len = (uint32_t)rq->vlen;
		tdbo_set_version(&a, rq->version);
		tdbo_set_deadline(&a, rq->deadline);
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
	for (i = 0; i < n; i++) {
		if (!rq[i].err)
			tdbo_evict_hit(t, rq[i].val, rq[i].klen);
		if (!get_answer(c, &m[i], &rq[i], out, fail, arg))
			break;
	}
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
