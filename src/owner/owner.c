// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner.c - tdb.ko's owner (kmod/owner.h): the engine and its table
 * registry (owner, group, mode of each table), clients and their
 * credentials, the access check, and running one request: GET, PUT, DEL,
 * TABLE_CREATE, TABLE_DROP, TABLE_STAT, STATS; transactions, dumps and
 * feeds are in owner_txn.c, owner_dump.c and owner_feed.c.
 *
 * Behaviour, errnos and messages are tdbd's (src/daemon/exec.c,
 * tables.c), so a client cannot tell the owners apart but for what
 * tdb.ko does not have (WAL, snapshot scans, ATTACH).  Locking rules:
 * owner_int.h.  Access is checked on every request against the
 * client's credentials (fsuid, fsgid, supplementary groups, as numbers
 * in the initial user namespace), never against anything it says.
 */
#include <linux/cred.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/string.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>

#include "owner_int.h"

/* --- registry ------------------------------------------------------------- */

static unsigned int name_hash(const char *s)
{
	unsigned int h = 2166136261u;   /* FNV-1a: names are short */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h % TDBK_BUCKETS;
}

/* Under reg_lock. */
static struct ktable *lookup(struct tdbk_owner *o, const char *name)
{
	struct ktable *t;

	hlist_for_each_entry(t, &o->buckets[name_hash(name)], hnode)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

struct ktable *tdbk_table_get(struct tdbk_owner *o, const char *name)
{
	struct ktable *t;

	spin_lock(&o->reg_lock);
	t = lookup(o, name);
	if (t)
		refcount_inc(&t->refs);
	spin_unlock(&o->reg_lock);
	return t;
}

/* Process context only (closing the engine handle may sleep). */
void tdbk_table_put(struct ktable *t)
{
	if (!t || !refcount_dec_and_test(&t->refs))
		return;
	tdbk_table_feed_release(t);
	tdbe_table_close(t->t);
	kfree(t);
}

/* Under wlock. */
static int table_create(struct tdbk_owner *o, const char *name, u32 max_ext,
			u32 uid, u32 gid, u32 mode,
			struct tdb_proto_extack *ext)
{
	struct tdbe_table_opts opts = { .max_extents = max_ext };
	struct tdbe_extack ee = { 0 };
	struct ktable *t = kzalloc(sizeof(*t), GFP_KERNEL);
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
		kfree(t);
		return err;
	}
	strscpy(t->name, name, sizeof(t->name));
	t->uid = uid;
	t->gid = gid;
	t->mode = mode & 0777;
	refcount_set(&t->refs, 1);      /* the registry's */
	INIT_LIST_HEAD(&t->watches);
	INIT_LIST_HEAD(&t->dirty);
	spin_lock(&o->reg_lock);
	hlist_add_head(&t->hnode, &o->buckets[name_hash(name)]);
	list_add_tail(&t->lnode, &o->tables);
	o->ntables++;
	spin_unlock(&o->reg_lock);
	return 0;
}

/* Under wlock (or at owner_free): take t out of the registry. */
static void table_unlink(struct tdbk_owner *o, struct ktable *t)
{
	spin_lock(&o->reg_lock);
	hlist_del_init(&t->hnode);
	list_del_init(&t->lnode);
	o->ntables--;
	spin_unlock(&o->reg_lock);
}

/* --- access --------------------------------------------------------------- */

static bool in_groups(const struct tdbk_client *c, u32 gid)
{
	const struct group_info *gi = c->cred->group_info;
	kgid_t k = make_kgid(&init_user_ns, gid);
	int i;

	if (c->gid == gid)
		return true;
	if (!gid_valid(k) || !gi)
		return false;
	for (i = 0; i < gi->ngroups; i++)
		if (gid_eq(gi->gid[i], k))
			return true;
	return false;
}

/* tdbd_may(): root may do anything; else the owner's, the group's or
 * the others' bits, the first class the client is in. */
bool tdbk_may(const struct tdbk_client *c, const struct ktable *t,
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

struct ktable *tdbk_resolve(struct tdbk_client *c,
			    const struct tdb_proto_msg *m, unsigned int want,
			    struct tdb_proto_extack *ext, int *err)
{
	struct ktable *t = tdbk_table_get(c->o, m->table);

	if (!t) {
		ext->msg = "no such table";
		ext->offset = m->attr_off[TDB_A_TABLE];
		*err = -ENOENT;
		return NULL;
	}
	if (want && !tdbk_may(c, t, want)) {
		ext->msg = want & TDBK_MAY_WRITE ?
			"permission denied: the table's mode does not let "
			"you write it" :
			"permission denied: the table's mode does not let "
			"you read it";
		tdbk_table_put(t);
		*err = -EACCES;
		return NULL;
	}
	return t;
}

/* --- answers -------------------------------------------------------------- */

int tdbk_answer(struct tdbk_sink *out, const struct tdb_proto_msg *a)
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
		       u32 attrs)
{
	memset(a, 0, sizeof(*a));
	a->cmd = m->cmd;
	a->seq = m->seq;
	a->pid = m->pid;
	a->attrs = attrs;
}

/* A reply the sink had no room for: the transport promised room for any
 * reply, so this is its fault; say so rather than answer nothing. */
static int reply(struct tdbk_sink *out, const struct tdb_proto_msg *a,
		 struct tdb_proto_extack *ext)
{
	int err = tdbk_answer(out, a);

	if (err == -ENOBUFS)
		ext->msg = "no room for the reply";
	return err;
}

void tdbk_fill_stat(struct ktable *t, struct tdb_proto_stat *ps)
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

void tdbk_seq_write_begin(struct tdbk_owner *o)
{
	WRITE_ONCE(o->txn_seq, o->txn_seq + 1);         /* odd */
	smp_wmb();
}

void tdbk_seq_write_end(struct tdbk_owner *o)
{
	smp_store_release(&o->txn_seq, o->txn_seq + 1); /* even */
}

/* An even count; while a commit applies, wait for it on wlock rather
 * than spin (a commit may sleep in the engine). */
static u64 seq_read_begin(struct tdbk_owner *o)
{
	for (;;) {
		u64 s = smp_load_acquire(&o->txn_seq);

		if (!(s & 1))
			return s;
		mutex_lock(&o->wlock);
		mutex_unlock(&o->wlock);
	}
}

static bool seq_read_retry(struct tdbk_owner *o, u64 s)
{
	smp_rmb();
	return READ_ONCE(o->txn_seq) != s;
}

/* --- GET ------------------------------------------------------------------ */

static int grow_buf(struct tdbk_client *c, size_t need)
{
	size_t cap = max_t(size_t, roundup_pow_of_two(need), 256);
	/* Kept for the client's life, as big as it asks: its memcg's. */
	void *n = kvmalloc(cap, GFP_KERNEL_ACCOUNT);

	if (!n)
		return -ENOMEM;
	kvfree(c->buf);
	c->buf = n;
	c->buf_cap = cap;
	return 0;
}

/* Copy the value out (whole, never part of a commit): its length, or a
 * negative errno. */
static long get_copy(struct tdbk_client *c, struct ktable *t,
		     const struct tdb_proto_msg *m)
{
	for (;;) {
		u64 s = seq_read_begin(c->o);
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
static int get_txn(struct tdbk_client *c, struct ktable *t,
		   const struct tdb_proto_msg *m, struct tdbk_sink *out,
		   struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct ktxn *x;
	const void *v;
	size_t vl;
	int err = 0;

	x = tdbk_txn_find(c, m, ext, &err);
	if (!x)
		return err;
	err = tdbk_txn_lookup(x, t, m->key, m->key_len, &v, &vl);
	if (err == 0) {
		ext->msg = "no such key (deleted in this transaction)";
		return -ENOENT;
	}
	if (err < 0)
		return 1;
	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	a.value = v;
	a.value_len = (u32)vl;
	return reply(out, &a, ext);
}

static int do_get(struct tdbk_client *c, const struct tdb_proto_msg *m,
		  struct tdbk_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct ktable *t;
	int err = 0;
	long n;

	t = tdbk_resolve(c, m, TDBK_MAY_READ, ext, &err);
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
	a.value_len = (u32)n;
	err = reply(out, &a, ext);
out:
	tdbk_table_put(t);
	return err;
}

/* --- PUT, DEL ------------------------------------------------------------- */

bool tdbk_key_exists(struct ktable *t, const void *key, size_t klen)
{
	size_t need;

	return tdbe_get(t->t, key, klen, NULL, 0, &need) != -ENOENT;
}

/* Under wlock: refuse what is sure to fail, apply, tell the watchers. */
static int apply_put_del(struct tdbk_owner *o, struct ktable *t, bool del,
			 const struct tdb_proto_msg *m, const void *val,
			 struct tdbe_extack *ee)
{
	bool noov = !del && (m->flags & TDB_PUT_NOOVERWRITE);
	int err;

	if (t->dropped) {
		ee->msg = "no such table";
		return -ENOENT;
	}
	if (del && !tdbk_key_exists(t, m->key, m->key_len))
		return -ENOENT;
	if (noov && tdbk_key_exists(t, m->key, m->key_len))
		return -EEXIST;
	tdbk_snap_save(t, m->key, m->key_len);  /* pre-image, first */
	if (del)
		err = tdbe_del(t->t, m->key, m->key_len, ee);
	else
		err = tdbe_put(t->t, m->key, m->key_len, val, m->value_len,
			       noov ? TDBE_NOOVERWRITE : 0, ee);
	if (err)
		return err;
	tdbk_notify(o, t, del ? TDB_CMD_DEL : TDB_CMD_PUT, m->key, m->key_len,
		    val, del ? 0 : m->value_len);
	return 0;
}

/* The value in one piece: m's own bytes, or its fragments gathered into
 * *buf (kvfree()d by the caller). */
static const void *value_of(const struct tdb_proto_msg *m, void **buf)
{
	*buf = NULL;
	if (m->value_frags <= 1)
		return m->value;
	*buf = kvmalloc(m->value_len, GFP_KERNEL);
	if (*buf)
		tdb_proto_value_copy(m, *buf);
	return *buf;
}

static int put_del_now(struct tdbk_owner *o, struct ktable *t, bool del,
		       const struct tdb_proto_msg *m, const void *val,
		       struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	int err;

	mutex_lock(&o->wlock);
	err = apply_put_del(o, t, del, m, val, &ee);
	tdbk_feeds_flush(o);
	mutex_unlock(&o->wlock);
	if (err == -ENOENT && del && !ee.msg)
		ee.msg = "no such key";
	if (err == -EEXIST)
		ee.msg = "key exists (no-overwrite put)";
	if (err == -ENOSPC && !ee.msg)
		ee.msg = "table is full (at its max-extents cap)";
	ext->msg = ee.msg;
	return err;
}

static int do_put_del(struct tdbk_client *c, const struct tdb_proto_msg *m,
		      bool del, struct tdb_proto_extack *ext)
{
	const void *val = NULL;
	struct ktable *t;
	void *buf = NULL;
	int err = 0;

	t = tdbk_resolve(c, m, TDBK_MAY_WRITE, ext, &err);
	if (!t)
		return err;
	if (!del && !(val = value_of(m, &buf))) {
		err = -ENOMEM;
		goto out;
	}
	if (TDB_PROTO_HAS(m, TDB_A_TXN)) {
		struct ktxn *x = tdbk_txn_find(c, m, ext, &err);

		if (x)
			err = tdbk_txn_add(x, t, del, m->flags, m->key,
					   m->key_len, val,
					   del ? 0 : m->value_len, ext);
	} else {
		err = put_del_now(c->o, t, del, m, val, ext);
	}
out:
	kvfree(buf);
	tdbk_table_put(t);
	return err;
}

/* --- TABLE_CREATE, TABLE_DROP, TABLE_STAT --------------------------------- */

/* Under wlock.  The table is charged to its owner (uid) for a request of
 * `who` (root creates for anyone, exempt from max_tables_per_uid and
 * with max_tables' last eighth), from here until it is dropped. */
static int create_locked(struct tdbk_owner *o, const struct tdb_proto_msg *m,
			 u32 who, u32 uid, u32 gid, u32 mode,
			 struct tdb_proto_extack *ext)
{
	u32 max_ext = TDB_PROTO_HAS(m, TDB_A_MAX_EXTENTS) ? m->max_extents : 0;
	struct ktable *t = tdbk_table_get(o, m->table);
	int err;

	if (t) {
		tdbk_table_put(t);
		ext->msg = "table exists";
		return -EEXIST;
	}
	if (READ_ONCE(o->ntables) >= tdbk_max_tables()) {
		ext->msg = "too many tables (the module parameter max_tables)";
		return -EMFILE;
	}
	err = tdbk_quota_charge(o, who, uid, TDBK_Q_TABLES, 1, &ext->msg);
	if (err)
		return err;
	err = table_create(o, m->table, max_ext, uid, gid, mode, ext);
	if (err)
		tdbk_quota_uncharge(o, uid, TDBK_Q_TABLES, 1);
	return err;
}

static int do_create(struct tdbk_client *c, const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	struct tdbk_owner *o = c->o;
	u32 uid = c->uid, gid = c->gid, mode = o->lim.default_mode;
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
	mutex_lock(&o->wlock);
	err = create_locked(o, m, c->uid, uid, gid, mode, ext);
	mutex_unlock(&o->wlock);
	return err;
}

static int drop_locked(struct tdbk_owner *o, struct ktable *t,
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
	tdbk_quota_uncharge(o, t->uid, TDBK_Q_TABLES, 1);
	WRITE_ONCE(t->dropped, true);
	tdbk_snap_detach_all(t);        /* a dropped table changes no more */
	/* The last message its watchers get; then the feed is theirs. */
	tdbk_notify(o, t, TDB_CMD_TABLE_DROP, NULL, 0, NULL, 0);
	tdbk_feeds_flush(o);
	tdbk_table_feed_release(t);
	tdbk_table_put(t);              /* the registry's reference */
	return 0;
}

static int do_drop(struct tdbk_client *c, const struct tdb_proto_msg *m,
		   struct tdb_proto_extack *ext)
{
	struct ktable *t;
	int err = 0;

	t = tdbk_resolve(c, m, 0, ext, &err);
	if (!t)
		return err;
	if (c->uid != 0 && c->uid != t->uid) {
		ext->msg = "only the table's owner or root may drop it";
		err = -EPERM;
	} else {
		mutex_lock(&c->o->wlock);
		err = drop_locked(c->o, t, ext);
		mutex_unlock(&c->o->wlock);
	}
	tdbk_table_put(t);
	return err;
}

static int do_stat(struct tdbk_client *c, const struct tdb_proto_msg *m,
		   struct tdbk_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct ktable *t;
	int err = 0;

	t = tdbk_resolve(c, m, TDBK_MAY_READ, ext, &err);
	if (!t)
		return err;
	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_TABLE) |
		   TDB_PROTO_BIT(TDB_A_STAT));
	a.table = t->name;
	a.table_len = (u32)strlen(t->name);
	tdbk_fill_stat(t, &a.stat);
	err = reply(out, &a, ext);
	tdbk_table_put(t);
	return err;
}

/* --- STATS ---------------------------------------------------------------- */

static int do_stats(struct tdbk_client *c, const struct tdb_proto_msg *m,
		    struct tdbk_sink *out, struct tdb_proto_extack *ext)
{
	struct tdbk_owner *o = c->o;
	struct tdb_proto_msg a;
	struct tdb_proto_counters *k = &a.counters;

	reply_init(m, &a, TDB_PROTO_BIT(TDB_A_COUNTERS));
	/* TDB_CTR_A_TABLES .. DUMPS; no WAL or checkpoint figures: tdb.ko
	 * keeps nothing on disk (they are absent, not 0). */
	k->present = 0x7fffc;
	k->tables = READ_ONCE(o->ntables);
	k->clients = atomic_read(&o->ctr.clients);
	k->watches = atomic_read(&o->watches);
	k->txns = atomic_read(&o->txns);
	k->requests = atomic64_read(&o->requests) +
		      atomic64_read(&o->ctr.requests);
	k->errors = atomic64_read(&o->errors) + atomic64_read(&o->ctr.errors);
	k->uptime_ms = ktime_ms_delta(ktime_get(), o->start);
	k->accepted = atomic64_read(&o->ctr.accepted);
	k->cleanups = atomic64_read(&o->cleanups);
	k->txns_aborted = atomic64_read(&o->txns_aborted);
	k->watches_dropped = atomic64_read(&o->watches_dropped);
	k->rings = atomic_read(&o->ctr.rings);
	k->rings_freed = atomic64_read(&o->ctr.rings_freed);
	k->stuck = 0;
	k->violations = atomic64_read(&o->ctr.violations);
	k->throttled = 0;
	k->dumps = atomic_read(&o->dumps);
	return reply(out, &a, ext);
}

/* --- dispatch ------------------------------------------------------------- */

static int dispatch(struct tdbk_client *c, const struct tdb_proto_msg *m,
		    struct tdbk_sink *out, struct tdb_proto_extack *ext,
		    struct tdbk_dump **dump)
{
	switch (m->cmd) {
	case TDB_CMD_GET:          return do_get(c, m, out, ext);
	case TDB_CMD_PUT:          return do_put_del(c, m, false, ext);
	case TDB_CMD_DEL:          return do_put_del(c, m, true, ext);
	case TDB_CMD_SCAN:         return tdbk_scan(c, m, ext, dump);
	case TDB_CMD_TABLE_CREATE: return do_create(c, m, ext);
	case TDB_CMD_TABLE_DROP:   return do_drop(c, m, ext);
	case TDB_CMD_TABLE_LIST:   return tdbk_list(c, m, ext, dump);
	case TDB_CMD_TABLE_STAT:   return do_stat(c, m, out, ext);
	case TDB_CMD_TXN_BEGIN:
	case TDB_CMD_TXN_COMMIT:
	case TDB_CMD_TXN_ABORT:    return tdbk_txn_cmd(c, m, out, ext);
	case TDB_CMD_WATCH:        return tdbk_watch(c, m, ext);
	case TDB_CMD_UNWATCH:      return tdbk_unwatch(c, m, ext);
	case TDB_CMD_STATS:        return do_stats(c, m, out, ext);
	case TDB_CMD_ATTACH:
		ext->msg = "ATTACH is tdbd's; use TDB_IOC_ATTACH on /dev/tdb";
		return -EOPNOTSUPP;
	}
	ext->msg = "unknown command";
	return -EOPNOTSUPP;
}

int tdbk_exec(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdbk_sink *out, struct tdb_proto_extack *ext,
	      struct tdbk_dump **dump)
{
	int err;

	memset(ext, 0, sizeof(*ext));
	*dump = NULL;
	atomic64_inc(&c->o->requests);
	err = dispatch(c, m, out, ext, dump);
	if (err < 0) {
		atomic64_inc(&c->o->errors);
		if (!ext->msg)
			ext->msg = tdbe_strerror(err);
	}
	return err;
}

/* --- clients -------------------------------------------------------------- */

struct tdbk_client *tdbk_client_new(struct tdbk_owner *o,
				    const struct cred *cred, bool may_watch,
				    void (*wake)(void *arg), void *arg,
				    int *err)
{
	struct tdbk_client *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->o = o;
	c->cred = get_cred(cred);
	c->uid = from_kuid_munged(&init_user_ns, cred->fsuid);
	c->gid = from_kgid_munged(&init_user_ns, cred->fsgid);
	c->may_watch = may_watch;
	c->wake = wake;
	c->arg = arg;
	refcount_set(&c->refs, 1);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->watches);
	INIT_LIST_HEAD(&c->dumps);
	INIT_LIST_HEAD(&c->txns);
	*err = 0;
	return c;
}

int tdbk_client_attach_charge(struct tdbk_client *c, const char **msg)
{
	int err;

	if (c->ring_charged)
		return 0;
	err = tdbk_quota_charge(c->o, c->uid, c->uid, TDBK_Q_CLIENTS, 1, msg);
	if (!err)
		c->ring_charged = true;
	return err;
}

void tdbk_client_attach_uncharge(struct tdbk_client *c)
{
	if (!c->ring_charged)
		return;
	tdbk_quota_uncharge(c->o, c->uid, TDBK_Q_CLIENTS, 1);
	c->ring_charged = false;
}

u32 tdbk_client_uid(const struct tdbk_client *c)
{
	return c->uid;
}

void tdbk_client_put(struct tdbk_client *c)
{
	if (!refcount_dec_and_test(&c->refs))
		return;
	put_cred(c->cred);
	kvfree(c->buf);
	kfree(c);
}

/*
 * The dead-client hook.  Dumps the transport has not freed yet lose their
 * state here (cursor, table references) and end with -ECONNRESET if run
 * again; their memory goes with tdbk_dump_free(), in either order.
 */
void tdbk_client_free(struct tdbk_client *c)
{
	struct tdbk_owner *o;
	unsigned int ntx = 0, nw, nd;

	if (!c)
		return;
	o = c->o;
	while (!list_empty(&c->txns)) {
		struct ktxn *x = list_first_entry(&c->txns, struct ktxn, node);

		list_del(&x->node);
		tdbk_txn_free(x);
		atomic_dec(&o->txns);
		atomic64_inc(&o->txns_aborted);
		ntx++;
	}
	c->ntxns = 0;
	tdbk_client_attach_uncharge(c);
	nw = tdbk_watches_drop(c);
	atomic64_add(nw, &o->watches_dropped);
	spin_lock(&c->lock);
	nd = c->ndumps;
	c->dead = true;
	spin_unlock(&c->lock);
	tdbk_dumps_release(c);
	if (ntx || nw || nd)
		atomic64_inc(&o->cleanups);
	tdbk_client_put(c);
}

/* --- the owner ------------------------------------------------------------ */

struct tdbk_owner *tdbk_owner_new(const struct tdbk_limits *lim, int *err)
{
	struct tdbk_owner *o;
	unsigned int i;

	*err = -EINVAL;
	if (!is_power_of_2(lim->feed_size) ||
	    lim->feed_size < TDB_RING_MIN_DATA ||
	    lim->feed_size > TDB_RING_MAX_DATA ||
	    (lim->default_mode & ~0777u))
		return NULL;
	*err = -ENOMEM;
	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return NULL;
	o->nbuf = kvmalloc(TDB_PROTO_MSG_MAX, GFP_KERNEL);
	if (!o->nbuf)
		goto fail;
	o->engine = tdbe_engine_new(err);
	if (!o->engine)
		goto fail;
	o->lim = *lim;
	mutex_init(&o->wlock);
	spin_lock_init(&o->reg_lock);
	for (i = 0; i < TDBK_BUCKETS; i++)
		INIT_HLIST_HEAD(&o->buckets[i]);
	INIT_LIST_HEAD(&o->tables);
	INIT_LIST_HEAD(&o->dirty);
	ida_init(&o->slots);
	tdbk_quota_init(&o->quota);
	o->start = ktime_get();
	*err = 0;
	return o;
fail:
	kvfree(o->nbuf);
	kfree(o);
	return NULL;
}

/* Under wlock: every notification is made under it (tdbk_notify). */
void tdbk_owner_on_change(struct tdbk_owner *o, tdbk_change_fn *fn, void *arg)
{
	mutex_lock(&o->wlock);
	o->on_change = fn;
	o->change_arg = arg;
	mutex_unlock(&o->wlock);
}

struct tdbk_counters *tdbk_owner_counters(struct tdbk_owner *o)
{
	return &o->ctr;
}

void tdbk_owner_free(struct tdbk_owner *o)
{
	if (!o)
		return;
	while (!list_empty(&o->tables)) {
		struct ktable *t = list_first_entry(&o->tables, struct ktable,
						    lnode);

		table_unlink(o, t);
		tdbk_quota_uncharge(o, t->uid, TDBK_Q_TABLES, 1);
		tdbk_table_feed_release(t);
		tdbk_table_put(t);
	}
	tdbk_quota_fini(&o->quota);
	tdbe_engine_free(o->engine);
	ida_destroy(&o->slots);
	mutex_destroy(&o->wlock);
	kvfree(o->nbuf);
	kfree(o);
}
