// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner.c - the owner (owner.h): the engine and its table
 * registry (owner, group, mode of each table), clients and their
 * credentials, the access check, and running one request: GET, PUT, DEL,
 * TABLE_CREATE, TABLE_DROP, TABLE_STAT, STATS; transactions, dumps and
 * feeds are in txn.c, dump.c and feed.c.
 *
 * Behaviour, errnos and messages are tdbd's (src/daemon/exec.c,
 * tables.c, which move here next), so a client cannot tell the homes
 * apart but for what tdb.ko does not have (WAL, ATTACH).  Locking rules:
 * internal.h.  Access is checked on every request against the
 * client's credentials (fsuid, fsgid, supplementary groups, as numbers
 * in the initial user namespace), never against anything it says.
 */

#include "internal.h"

/* --- registry ------------------------------------------------------------- */

static unsigned int name_hash(const char *s)
{
	unsigned int h = 2166136261u;   /* FNV-1a: names are short */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h % TDBO_BUCKETS;
}

/* Under reg_lock. */
static struct tdbo_table *lookup(struct tdbo_owner *o, const char *name)
{
	struct tdbo_table *t;

	tdbo_list_for_each(t, &o->buckets[name_hash(name)], hnode)
		if (tdbo_streq(t->name, name))
			return t;
	return NULL;
}

struct tdbo_table *tdbo_table_get(struct tdbo_owner *o, const char *name)
{
	struct tdbo_table *t;

	tdbp_mutex_lock(o->reg_lock);
	t = lookup(o, name);
	if (t)
		tdbo_ref_get(&t->refs);
	tdbp_mutex_unlock(o->reg_lock);
	return t;
}

/* Process context only (closing the engine handle may sleep). */
void tdbo_table_put(struct tdbo_table *t)
{
	if (!t || !tdbo_ref_put(&t->refs))
		return;
	tdbo_table_feed_release(t);
	tdbe_table_close(t->t);
	tdbp_free(t);
}

/* Under wlock. */
static int table_create(struct tdbo_owner *o, const char *name, uint32_t max_ext,
			uint32_t uid, uint32_t gid, uint32_t mode,
			struct tdb_proto_extack *ext)
{
	struct tdbe_table_opts opts = { .max_extents = max_ext };
	struct tdbe_extack ee = { 0 };
	struct tdbo_table *t = tdbp_alloc(sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	err = tdbe_table_create(o->engine, name, &opts, &ee);
	if (!err) {
		err = tdbe_table_open(o->engine, name, &t->t, &ee);
		if (err)
			tdbe_table_drop(o->engine, name, NULL);
	}
	if (err) {
		ext->msg = err == -EEXIST ? "table exists" : ee.msg;
		tdbp_free(t);
		return err;
	}
	tdbo_strlcpy(t->name, name, sizeof(t->name));
	t->o = o;
	t->uid = uid;
	t->gid = gid;
	t->mode = mode & 0777;
	tdbo_ref_init(&t->refs, 1);      /* the registry's */
	tdbo_list_init(&t->watches);
	tdbo_list_init(&t->dirty);
	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_add(&t->hnode, &o->buckets[name_hash(name)]);
	tdbo_list_add_tail(&t->lnode, &o->tables);
	o->ntables++;
	tdbp_mutex_unlock(o->reg_lock);
	return 0;
}

/* Under wlock (or at owner_free): take t out of the registry. */
static void table_unlink(struct tdbo_owner *o, struct tdbo_table *t)
{
	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_del(&t->hnode);
	tdbo_list_del(&t->lnode);
	o->ntables--;
	tdbp_mutex_unlock(o->reg_lock);
}

/* --- access --------------------------------------------------------------- */

static bool in_groups(const struct tdbo_client *c, uint32_t gid)
{
	uint32_t i;

	if (c->gid == gid)
		return true;
	for (i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

/* tdbd_may(): root may do anything; else the owner's, the group's or
 * the others' bits, the first class the client is in. */
bool tdbo_may(const struct tdbo_client *c, const struct tdbo_table *t,
	      unsigned int want)
{
	unsigned int bits;

	if (c->uid == 0)
		return true;
	if (c->uid == t->uid)
		bits = t->mode >> 6;
	else
		bits = in_groups(c, t->gid) ? t->mode >> 3 : t->mode;
	return (bits & want) == want;
}

struct tdbo_table *tdbo_resolve(struct tdbo_client *c,
			    const struct tdb_proto_msg *m, unsigned int want,
			    struct tdb_proto_extack *ext, int *err)
{
	struct tdbo_table *t = tdbo_table_get(c->o, m->table);

	if (!t) {
		ext->msg = "no such table";
		ext->offset = m->attr_off[TDB_A_TABLE];
		*err = -ENOENT;
		return NULL;
	}
	if (want && !tdbo_may(c, t, want)) {
		ext->msg = want & TDBO_MAY_WRITE ?
			"permission denied: the table's mode does not let "
			"you write it" :
			"permission denied: the table's mode does not let "
			"you read it";
		tdbo_table_put(t);
		*err = -EACCES;
		return NULL;
	}
	return t;
}

/* --- answers -------------------------------------------------------------- */

int tdbo_answer(struct tdbo_sink *out, const struct tdb_proto_msg *a)
{
	struct tdb_proto_extack e = { 0 };
	long len = tdb_proto_size(TDB_PROTO_ANSWER, a, &e);
	void *p;

	if (len < 0)
		return (int)len;
	p = out->reserve(out, (size_t)len);
	if (!p)
		return -ENOBUFS;
	if (tdb_proto_build(p, (size_t)len, TDB_PROTO_ANSWER, a, &e) != len)
		return -EINVAL;         /* cannot happen: size said it fits */
	out->commit(out, p, (size_t)len);
	return 0;
}

static void reply_init(const struct tdb_proto_msg *m, struct tdb_proto_msg *a,
		       uint32_t attrs)
{
	memset(a, 0, sizeof(*a));
	a->cmd = m->cmd;
	a->seq = m->seq;
	a->pid = m->pid;
	a->attrs = attrs;
}

/* A reply the sink had no room for: the transport promised room for any
 * reply, so this is its fault; say so rather than answer nothing. */
static int reply(struct tdbo_sink *out, const struct tdb_proto_msg *a,
		 struct tdb_proto_extack *ext)
{
	int err = tdbo_answer(out, a);

	if (err == -ENOBUFS)
		ext->msg = "no room for the reply";
	return err;
}

void tdbo_fill_stat(struct tdbo_table *t, struct tdb_proto_stat *ps)
{
	struct tdbe_table_stat st;

	tdbe_table_stat(t->t, &st);
	ps->present = 0x3ffc;           /* TDB_STAT_A_RECORDS .. MODE */
	ps->records = st.records;
	ps->bytes_used = st.bytes_used;
	ps->bytes_allocated = st.bytes_allocated;
	ps->bytes_pending = st.bytes_pending;
	ps->extents = st.extents;
	ps->max_extents = st.max_extents;
	ps->page_size = st.page_size;
	ps->index_nodes = st.index_nodes;
	ps->index_buckets = st.index_buckets;
	ps->uid = t->uid;
	ps->gid = t->gid;
	ps->mode = t->mode;
}

/* --- the commit sequence count -------------------------------------------- */

void tdbo_seq_write_begin(struct tdbo_owner *o)
{
	tdb_store_relaxed(&o->txn_seq, o->txn_seq + 1);         /* odd */
	tdb_smp_wmb();
}

void tdbo_seq_write_end(struct tdbo_owner *o)
{
	tdb_store_release(&o->txn_seq, o->txn_seq + 1); /* even */
}

/* An even count; while a commit applies, wait for it on wlock rather
 * than spin (a commit may sleep in the engine). */
static uint64_t seq_read_begin(struct tdbo_owner *o)
{
	for (;;) {
		uint64_t s = tdb_load_acquire(&o->txn_seq);

		if (!(s & 1))
			return s;
		tdbp_mutex_lock(o->wlock);
		tdbp_mutex_unlock(o->wlock);
	}
}

static bool seq_read_retry(struct tdbo_owner *o, uint64_t s)
{
	tdb_smp_rmb();
	return tdb_load_relaxed(&o->txn_seq) != s;
}

/* --- GET ------------------------------------------------------------------ */

static int grow_buf(struct tdbo_client *c, size_t need)
{
	size_t cap = tdbo_max((size_t)((size_t)tdbo_roundup_pow2(need)), (size_t)(256));
	/* Kept for the client's life, as big as it asks: its memcg's. */
	void *n = tdbp_alloc(cap);

	if (!n)
		return -ENOMEM;
	tdbp_free(c->buf);
	c->buf = n;
	c->buf_cap = cap;
	return 0;
}

/* Copy the value out (whole, never part of a commit): its length, or a
 * negative errno. */
static long get_copy(struct tdbo_client *c, struct tdbo_table *t,
		     const struct tdb_proto_msg *m)
{
	for (;;) {
		uint64_t s = seq_read_begin(c->o);
		size_t need = 0;
		long n = tdbe_get(t->t, m->key, m->key_len, c->buf, c->buf_cap,
				  &need);
		int err;

		if (n == -ENOBUFS) {
			err = grow_buf(c, need);
			if (err)
				return err;
			continue;
		}
		if (!seq_read_retry(c->o, s))
			return n;
	}
}

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
	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	a.value = v;
	a.value_len = (uint32_t)vl;
	return reply(out, &a, ext);
}

static int do_get(struct tdbo_client *c, const struct tdb_proto_msg *m,
		  struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_table *t;
	int err = 0;
	long n;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		err = get_txn(c, t, m, out, ext);
		if (err <= 0)
			goto out;
	}
	n = get_copy(c, t, m);
	if (n < 0) {
		err = (int)n;
		if (err == -ENOENT)
			ext->msg = "no such key";
		goto out;
	}
	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	a.value = c->buf;
	a.value_len = (uint32_t)n;
	err = reply(out, &a, ext);
out:
	tdbo_table_put(t);
	return err;
}

/* --- PUT, DEL ------------------------------------------------------------- */

bool tdbo_key_exists(struct tdbo_table *t, const void *key, size_t klen)
{
	size_t need;

	return tdbe_get(t->t, key, klen, NULL, 0, &need) != -ENOENT;
}

/* Under wlock: refuse what is sure to fail, apply, tell the watchers. */
static int apply_put_del(struct tdbo_owner *o, struct tdbo_table *t, bool del,
			 const struct tdb_proto_msg *m, const void *val,
			 struct tdbe_extack *ee)
{
	bool noov = !del && (m->flags & TDB_PUT_NOOVERWRITE);
	int err;

	if (t->dropped) {
		ee->msg = "no such table";
		return -ENOENT;
	}
	if (del && !tdbo_key_exists(t, m->key, m->key_len))
		return -ENOENT;
	if (noov && tdbo_key_exists(t, m->key, m->key_len))
		return -EEXIST;
	tdbo_snap_save(t, m->key, m->key_len);  /* pre-image, first */
	if (del)
		err = tdbe_del(t->t, m->key, m->key_len, ee);
	else
		err = tdbe_put(t->t, m->key, m->key_len, val, m->value_len,
			       noov ? TDBE_NOOVERWRITE : 0, ee);
	if (err)
		return err;
	tdbo_notify(o, t, del ? TDB_CMD_DEL : TDB_CMD_PUT, m->key, m->key_len,
		    val, del ? 0 : m->value_len);
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

static int put_del_now(struct tdbo_owner *o, struct tdbo_table *t, bool del,
		       const struct tdb_proto_msg *m, const void *val,
		       struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	int err;

	tdbp_mutex_lock(o->wlock);
	err = apply_put_del(o, t, del, m, val, &ee);
	tdbo_feeds_flush(o);
	tdbp_mutex_unlock(o->wlock);
	if (err == -ENOENT && del && !ee.msg)
		ee.msg = "no such key";
	if (err == -EEXIST)
		ee.msg = "key exists (no-overwrite put)";
	if (err == -ENOSPC && !ee.msg)
		ee.msg = "table is full (at its max-extents cap)";
	ext->msg = ee.msg;
	return err;
}

static int do_put_del(struct tdbo_client *c, const struct tdb_proto_msg *m,
		      bool del, struct tdb_proto_extack *ext)
{
	const void *val = NULL;
	struct tdbo_table *t;
	void *buf = NULL;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_WRITE, ext, &err);
	if (!t)
		return err;
	if (!del && !(val = value_of(m, &buf))) {
		err = -ENOMEM;
		goto out;
	}
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		struct tdbo_txn *x = tdbo_txn_find(c, m, ext, &err);

		if (x)
			err = tdbo_txn_add(x, t, del, m->flags, m->key,
					   m->key_len, val,
					   del ? 0 : m->value_len, ext);
	} else {
		err = put_del_now(c->o, t, del, m, val, ext);
	}
out:
	tdbp_free(buf);
	tdbo_table_put(t);
	return err;
}

/* --- TABLE_CREATE, TABLE_DROP, TABLE_STAT --------------------------------- */

/* Under wlock.  The table is charged to its owner (uid) for a request of
 * `who` (root creates for anyone, exempt from max_tables_per_uid and
 * with max_tables' last eighth), from here until it is dropped. */
static int create_locked(struct tdbo_owner *o, const struct tdb_proto_msg *m,
			 uint32_t who, uint32_t uid, uint32_t gid, uint32_t mode,
			 struct tdb_proto_extack *ext)
{
	uint32_t max_ext = TDB_PROTO_HAS(m, TDB_A_MAX_EXTENTS) ? m->max_extents : 0;
	struct tdbo_table *t = tdbo_table_get(o, m->table);
	int err;

	if (t) {
		tdbo_table_put(t);
		ext->msg = "table exists";
		return -EEXIST;
	}
	if (tdbo_lim(o, max_tables) &&
	    tdb_load_relaxed(&o->ntables) >= tdbo_lim(o, max_tables)) {
		ext->msg = "too many tables (max-tables)";
		return -EMFILE;
	}
	err = tdbo_quota_charge(o, who, uid, TDBO_Q_TABLES, 1, &ext->msg);
	if (err)
		return err;
	err = table_create(o, m->table, max_ext, uid, gid, mode, ext);
	if (err)
		tdbo_quota_uncharge(o, uid, TDBO_Q_TABLES, 1);
	return err;
}

static int do_create(struct tdbo_client *c, const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	struct tdbo_owner *o = c->o;
	uint32_t uid = c->uid, gid = c->gid, mode = tdbo_lim(o, default_mode);
	int err;

	if (TDB_PROTO_HAS(m, TDB_A_UID))
		uid = m->uid;
	if (TDB_PROTO_HAS(m, TDB_A_GID))
		gid = m->gid;
	if (TDB_PROTO_HAS(m, TDB_A_MODE))
		mode = m->mode;
	if (c->uid != 0 && uid != c->uid) {
		ext->msg = "only root may create a table owned by another user";
		ext->offset = m->attr_off[TDB_A_UID];
		return -EPERM;
	}
	if (c->uid != 0 && !in_groups(c, gid)) {
		ext->msg = "the table's group must be one of yours";
		ext->offset = m->attr_off[TDB_A_GID];
		return -EPERM;
	}
	tdbp_mutex_lock(o->wlock);
	err = create_locked(o, m, c->uid, uid, gid, mode, ext);
	tdbp_mutex_unlock(o->wlock);
	return err;
}

static int drop_locked(struct tdbo_owner *o, struct tdbo_table *t,
		       struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	int err;

	if (t->dropped) {
		ext->msg = "no such table";
		return -ENOENT;
	}
	err = tdbe_table_drop(o->engine, t->name, &ee);
	if (err) {
		ext->msg = ee.msg;
		return err;
	}
	table_unlink(o, t);
	tdbo_quota_uncharge(o, t->uid, TDBO_Q_TABLES, 1);
	tdb_store_relaxed(&t->dropped, true);
	tdbo_snap_detach_all(t);        /* a dropped table changes no more */
	/* The last message its watchers get; then the feed is theirs. */
	tdbo_notify(o, t, TDB_CMD_TABLE_DROP, NULL, 0, NULL, 0);
	tdbo_feeds_flush(o);
	tdbo_table_feed_release(t);
	tdbo_table_put(t);              /* the registry's reference */
	return 0;
}

static int do_drop(struct tdbo_client *c, const struct tdb_proto_msg *m,
		   struct tdb_proto_extack *ext)
{
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, 0, ext, &err);
	if (!t)
		return err;
	if (c->uid != 0 && c->uid != t->uid) {
		ext->msg = "only the table's owner or root may drop it";
		err = -EPERM;
	} else {
		tdbp_mutex_lock(c->o->wlock);
		err = drop_locked(c->o, t, ext);
		tdbp_mutex_unlock(c->o->wlock);
	}
	tdbo_table_put(t);
	return err;
}

static int do_stat(struct tdbo_client *c, const struct tdb_proto_msg *m,
		   struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_TABLE) |
		   TDB_PROTO_BIT(TDB_A_STAT));
	a.table = t->name;
	a.table_len = (uint32_t)tdbo_strlen(t->name);
	tdbo_fill_stat(t, &a.stat);
	err = reply(out, &a, ext);
	tdbo_table_put(t);
	return err;
}

/* --- STATS ---------------------------------------------------------------- */

static int do_stats(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdbo_owner *o = c->o;
	struct tdb_proto_msg a;
	struct tdb_proto_counters *k = &a.counters;

	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_COUNTERS));
	/* TDB_CTR_A_TABLES .. DUMPS; no WAL or checkpoint figures: tdb.ko
	 * keeps nothing on disk (they are absent, not 0). */
	k->present = 0x7fffc;
	k->tables = tdb_load_relaxed(&o->ntables);
	k->clients = tdbo_read(&o->ctr.clients);
	k->watches = tdbo_read(&o->watches);
	k->txns = tdbo_read(&o->txns);
	k->requests = tdbo_read(&o->requests) +
		      tdbo_read(&o->ctr.requests);
	k->errors = tdbo_read(&o->errors) + tdbo_read(&o->ctr.errors);
	k->uptime_ms = (tdbp_now_ns() - o->start_ns) / 1000000;
	k->accepted = tdbo_read(&o->ctr.accepted);
	k->cleanups = tdbo_read(&o->cleanups);
	k->txns_aborted = tdbo_read(&o->txns_aborted);
	k->watches_dropped = tdbo_read(&o->watches_dropped);
	k->rings = tdbo_read(&o->ctr.rings);
	k->rings_freed = tdbo_read(&o->ctr.rings_freed);
	k->stuck = 0;
	k->violations = tdbo_read(&o->ctr.violations);
	k->throttled = 0;
	k->dumps = tdbo_read(&o->dumps);
	return reply(out, &a, ext);
}

/* --- dispatch ------------------------------------------------------------- */

static int dispatch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext,
		    struct tdbo_out *res)
{
	switch (m->cmd) {
	case TDB_CMD_GET:          return do_get(c, m, out, ext);
	case TDB_CMD_PUT:          return do_put_del(c, m, false, ext);
	case TDB_CMD_DEL:          return do_put_del(c, m, true, ext);
	case TDB_CMD_SCAN:         return tdbo_scan(c, m, ext, &res->dump);
	case TDB_CMD_TABLE_CREATE: return do_create(c, m, ext);
	case TDB_CMD_TABLE_DROP:   return do_drop(c, m, ext);
	case TDB_CMD_TABLE_LIST:   return tdbo_list(c, m, ext, &res->dump);
	case TDB_CMD_TABLE_STAT:   return do_stat(c, m, out, ext);
	case TDB_CMD_TXN_BEGIN:
	case TDB_CMD_TXN_COMMIT:
	case TDB_CMD_TXN_ABORT:    return tdbo_txn_cmd(c, m, out, ext);
	case TDB_CMD_WATCH:        return tdbo_watch(c, m, ext, res);
	case TDB_CMD_UNWATCH:      return tdbo_unwatch(c, m, ext);
	case TDB_CMD_STATS:        return do_stats(c, m, out, ext);
	case TDB_CMD_ATTACH:
		ext->msg = "ATTACH is tdbd's; use TDB_IOC_ATTACH on /dev/tdb";
		return -EOPNOTSUPP;
	}
	ext->msg = "unknown command";
	return -EOPNOTSUPP;
}

int tdbo_exec(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdbo_sink *out, struct tdb_proto_extack *ext,
	      struct tdbo_out *res)
{
	int err;

	memset(ext, 0, sizeof(*ext));
	memset(res, 0, sizeof(*res));
	tdbo_inc(&c->o->requests);
	err = dispatch(c, m, out, ext, res);
	if (err < 0) {
		tdbo_inc(&c->o->errors);
		if (!ext->msg)
			ext->msg = tdbe_strerror(err);
	}
	return err;
}

/* --- clients -------------------------------------------------------------- */

struct tdbo_client *tdbo_client_new(struct tdbo_owner *o,
				    const struct tdbo_cred *cred,
				    bool may_watch, void (*wake)(void *arg),
				    void *arg, int *err)
{
	struct tdbo_client *c = tdbp_alloc(sizeof(*c));

	*err = -ENOMEM;
	if (!c)
		return NULL;
	c->lock = tdbp_mutex_create();
	if (cred->ngroups)
		c->groups = tdbo_alloc_array(cred->ngroups,
					     sizeof(*c->groups));
	if (!c->lock || (cred->ngroups && !c->groups)) {
		if (c->lock)
			tdbp_mutex_destroy(c->lock);
		tdbp_free(c);
		return NULL;
	}
	if (cred->ngroups)
		memcpy(c->groups, cred->groups,
		       cred->ngroups * sizeof(*c->groups));
	c->ngroups = cred->ngroups;
	c->o = o;
	c->uid = cred->uid;
	c->gid = cred->gid;
	c->may_watch = may_watch;
	c->wake = wake;
	c->arg = arg;
	tdbo_ref_init(&c->refs, 1);
	tdbo_list_init(&c->watches);
	tdbo_list_init(&c->dumps);
	tdbo_list_init(&c->txns);
	*err = 0;
	return c;
}

int tdbo_client_attach_charge(struct tdbo_client *c, const char **msg)
{
	int err;

	if (c->ring_charged)
		return 0;
	err = tdbo_quota_charge(c->o, c->uid, c->uid, TDBO_Q_CLIENTS, 1, msg);
	if (!err)
		c->ring_charged = true;
	return err;
}

void tdbo_client_attach_uncharge(struct tdbo_client *c)
{
	if (!c->ring_charged)
		return;
	tdbo_quota_uncharge(c->o, c->uid, TDBO_Q_CLIENTS, 1);
	c->ring_charged = false;
}

uint32_t tdbo_client_uid(const struct tdbo_client *c)
{
	return c->uid;
}

void tdbo_client_put(struct tdbo_client *c)
{
	if (!tdbo_ref_put(&c->refs))
		return;
	tdbp_mutex_destroy(c->lock);
	tdbp_free(c->groups);
	tdbp_free(c->buf);
	tdbp_free(c);
}

/*
 * The dead-client hook.  Dumps the transport has not freed yet lose their
 * state here (cursor, table references) and end with -ECONNRESET if run
 * again; their memory goes with tdbo_dump_free(), in either order.
 */
void tdbo_client_free(struct tdbo_client *c)
{
	struct tdbo_owner *o;
	unsigned int ntx = 0, nw, nd;

	if (!c)
		return;
	o = c->o;
	while (!tdbo_list_empty(&c->txns)) {
		struct tdbo_txn *x = tdbo_list_first(&c->txns, struct tdbo_txn, node);

		tdbo_list_del(&x->node);
		tdbo_txn_free(x);
		tdbo_dec(&o->txns);
		tdbo_inc(&o->txns_aborted);
		ntx++;
	}
	c->ntxns = 0;
	tdbo_client_attach_uncharge(c);
	nw = tdbo_watches_drop(c);
	tdbo_add(&o->watches_dropped, nw);
	tdbp_mutex_lock(c->lock);
	nd = c->ndumps;
	c->dead = true;
	tdbp_mutex_unlock(c->lock);
	tdbo_dumps_release(c);
	if (ntx || nw || nd)
		tdbo_inc(&o->cleanups);
	tdbo_client_put(c);
}

/* --- the owner ------------------------------------------------------------ */

struct tdbo_owner *tdbo_owner_new(const struct tdbo_limits *lim,
				  const struct tdbo_hooks *hooks, int *err)
{
	struct tdbo_owner *o;
	unsigned int i;

	*err = -EINVAL;
	if (!tdbo_is_pow2(lim->feed_size) ||
	    lim->feed_size < TDB_RING_MIN_DATA ||
	    lim->feed_size > TDB_RING_MAX_DATA ||
	    (lim->default_mode & ~0777u))
		return NULL;
	*err = -ENOMEM;
	o = tdbp_alloc(sizeof(*o));
	if (!o)
		return NULL;
	o->lim = lim;
	o->hooks = *hooks;
	o->nbuf = tdbp_alloc(TDB_PROTO_MSG_MAX);
	o->wlock = tdbp_mutex_create();
	o->reg_lock = tdbp_mutex_create();
	if (!o->nbuf || !o->wlock || !o->reg_lock ||
	    tdbo_quota_init(&o->quota))
		goto fail;
	o->engine = tdbe_engine_new(err);
	if (!o->engine)
		goto fail;
	for (i = 0; i < TDBO_BUCKETS; i++)
		tdbo_list_init(&o->buckets[i]);
	tdbo_list_init(&o->tables);
	tdbo_list_init(&o->feeds);
	tdbo_list_init(&o->dirty);
	o->next_slot = 2;
	o->start_ns = tdbp_now_ns();
	*err = 0;
	return o;
fail:
	if (o->quota.lock)
		tdbo_quota_fini(&o->quota);
	if (o->reg_lock)
		tdbp_mutex_destroy(o->reg_lock);
	if (o->wlock)
		tdbp_mutex_destroy(o->wlock);
	tdbp_free(o->nbuf);
	tdbp_free(o);
	return NULL;
}

/* Under wlock: every notification is made under it (tdbo_notify). */
void tdbo_owner_on_change(struct tdbo_owner *o, tdbo_change_fn *fn,
			  void *arg)
{
	tdbp_mutex_lock(o->wlock);
	o->on_change = fn;
	o->change_arg = arg;
	tdbp_mutex_unlock(o->wlock);
}

struct tdbo_counters *tdbo_owner_counters(struct tdbo_owner *o)
{
	return &o->ctr;
}

void tdbo_owner_free(struct tdbo_owner *o)
{
	if (!o)
		return;
	while (!tdbo_list_empty(&o->tables)) {
		struct tdbo_table *t = tdbo_list_first(&o->tables,
						       struct tdbo_table,
						       lnode);

		table_unlink(o, t);
		tdbo_quota_uncharge(o, t->uid, TDBO_Q_TABLES, 1);
		tdbo_table_feed_release(t);
		tdbo_table_put(t);
	}
	tdbo_quota_fini(&o->quota);
	tdbe_engine_free(o->engine);
	tdbp_mutex_destroy(o->reg_lock);
	tdbp_mutex_destroy(o->wlock);
	tdbp_free(o->nbuf);
	tdbp_free(o);
}
