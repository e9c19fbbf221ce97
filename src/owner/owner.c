/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * owner.c - the owner (owner.h): the engine, clients and their
 * credentials, answers, TABLE_STAT and STATS, and running one request
 * (tdbo_exec), which it hands to the file that owns the command:
 *
 *   registry.c  tables, access checks, TABLE_CREATE, TABLE_DROP
 *   change.c    GET, PUT, DEL: the one change pipeline
 *   txn.c       TXN_BEGIN, TXN_COMMIT, TXN_ABORT
 *   dump.c      SCAN, TABLE_LIST
 *   feed.c      WATCH, UNWATCH, change feeds
 *
 * Behaviour, errnos and messages are the same in both homes, so a client
 * cannot tell tdbd and tdb.ko apart but for what one of them does not
 * have (tdbd: durability, ATTACH over its socket; tdb.ko: /dev/tdb and
 * generic netlink).  Locking rules: internal.h.  Access is checked on
 * every request against the client's credentials (fsuid, fsgid,
 * supplementary groups, as numbers), never against anything it says.
 */
#include "internal.h"

/* --- answers ---------------------------------------------------------------- */

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

/* A reply the sink had no room for: the transport promised room for any
 * reply, so this is its fault; say so rather than answer nothing. */
int tdbo_reply(struct tdbo_sink *out, const struct tdb_proto_msg *a,
	       struct tdb_proto_extack *ext)
{
	int err = tdbo_answer(out, a);

	if (err == -ENOBUFS)
		ext->msg = "no room for the reply";
	return err;
}

void tdbo_reply_init(const struct tdb_proto_msg *m, struct tdb_proto_msg *a,
		     uint64_t attrs)
{
	memset(a, 0, sizeof(*a));
	a->cmd = m->cmd;
	a->seq = m->seq;
	a->pid = m->pid;
	a->attrs = attrs;
}

/* --- TABLE_STAT --------------------------------------------------------------- */

void tdbo_fill_stat(struct tdbo_table *t, struct tdb_proto_stat *ps)
{
	struct tdbe_table_stat st;

	memset(ps, 0, sizeof(*ps));
	ps->present = 0x7ffc;           /* TDB_STAT_A_RECORDS .. STATE */
	ps->uid = t->uid;
	ps->gid = t->gid;
	ps->mode = t->mode;
	if (t->aside) {
		/* no engine table: the figures it must send are 0; its
		 * flags are what it was created with (kept for it) */
		ps->max_extents = t->max_extents;
		if (t->tflags) {
			ps->present |= TDB_PROTO_BIT(TDB_STAT_A_TABLE_FLAGS);
			ps->table_flags = t->tflags;
		}
		ps->state = TDB_TABLE_SET_ASIDE;
		return;
	}
	tdbe_table_stat(t->t, &st);
	ps->records = st.records;
	ps->bytes_used = st.bytes_used;
	ps->bytes_allocated = st.bytes_allocated;
	ps->bytes_pending = st.bytes_pending;
	ps->extents = st.extents;
	ps->max_extents = st.max_extents;
	ps->page_size = st.page_size;
	ps->index_nodes = st.index_nodes;
	ps->index_buckets = st.index_buckets;
	ps->present |= TDB_PROTO_BIT(TDB_STAT_A_EXPIRING) |
		       TDB_PROTO_BIT(TDB_STAT_A_EXPIRED);
	ps->expiring = st.expiring;
	ps->expired = tdbo_read(&t->expired);
	if (t->default_ttl) {
		ps->present |= TDB_PROTO_BIT(TDB_STAT_A_DEFAULT_TTL);
		ps->default_ttl = t->default_ttl;
	}
	if (t->max_bytes || t->max_records) {
		ps->present |= TDB_PROTO_BIT(TDB_STAT_A_EVICT) |
			       TDB_PROTO_BIT(TDB_STAT_A_EVICTED);
		ps->evict = t->evict;
		ps->evicted = tdbo_read(&t->evicted);
	}
	if (t->max_bytes) {
		ps->present |= TDB_PROTO_BIT(TDB_STAT_A_MAX_BYTES);
		ps->max_bytes = t->max_bytes;
	}
	if (t->max_records) {
		ps->present |= TDB_PROTO_BIT(TDB_STAT_A_MAX_RECORDS);
		ps->max_records = t->max_records;
	}
	/* the engine's word for it: what the table is, not was asked */
	if (st.flags & TDBE_TABLE_ORDERED) {
		ps->present |= TDB_PROTO_BIT(TDB_STAT_A_TABLE_FLAGS);
		ps->table_flags = TDB_TABLE_F_ORDERED;
	}
}

static int do_stat(struct tdbo_client *c, const struct tdb_proto_msg *m,
		   struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_SEE, ext, &err);
	if (!t)
		return err;
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_TABLE) |
		   TDB_PROTO_BIT(TDB_A_STAT));
	a.table = t->name;
	a.table_len = (uint32_t)tdbo_strlen(t->name);
	tdbo_fill_stat(t, &a.stat);
	err = tdbo_reply(out, &a, ext);
	tdbo_table_put(t);
	return err;
}

/* --- STATS ---------------------------------------------------------------- */

/*
 * The tables (and of them, set aside) the caller may see (read or
 * write): what its TABLE_LIST would show.  Root sees all, from the
 * registry's counts; others cost a walk of the registry under reg_lock,
 * as TABLE_LIST's snapshot does (STATS is rare).
 */
static void stats_tables(struct tdbo_client *c, struct tdb_proto_counters *k)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_table *t;

	if (c->uid == 0) {
		k->tables = tdb_load_relaxed(&o->ntables);
		k->tables_aside = tdb_load_relaxed(&o->naside);
		return;
	}
	k->tables = 0;
	k->tables_aside = 0;
	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_for_each(t, &o->tables, lnode) {
		if (!tdbo_may(c, t, TDBO_MAY_SEE))
			continue;
		k->tables++;
		if (t->aside)
			k->tables_aside++;
	}
	tdbp_mutex_unlock(o->reg_lock);
}

static int do_stats(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdbo_owner *o = c->o;
	struct tdb_proto_msg a;
	struct tdb_proto_counters *k = &a.counters;

	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_COUNTERS));
	/* TDB_CTR_A_TABLES .. DUMPS and TABLES_ASIDE; the home adds what
	 * it has (tdbd: the WAL's and checkpoints' figures; tdb.ko keeps
	 * nothing on disk, so they are absent there, not 0). */
	k->present = 0x7fffc | TDB_PROTO_BIT(TDB_CTR_A_TABLES_ASIDE) |
		     TDB_PROTO_BIT(TDB_CTR_A_READERS_EXPIRED) |
		     TDB_PROTO_BIT(TDB_CTR_A_EXPIRED) |
		     TDB_PROTO_BIT(TDB_CTR_A_EVICTED);
	stats_tables(c, k);
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
	k->readers_expired = tdbo_read(&o->readers_expired);
	k->expired = tdbo_read(&o->expired);
	k->evicted = tdbo_read(&o->evicted);
	if (o->hooks.stats)
		o->hooks.stats(o->hooks.arg, k);
	return tdbo_reply(out, &a, ext);
}

/* --- dispatch ------------------------------------------------------------- */

static int dispatch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext,
		    struct tdbo_out *res)
{
	switch (m->cmd) {
	case TDB_CMD_GET:          return tdbo_cmd_get(c, m, out, ext);
	case TDB_CMD_PUT:          return tdbo_cmd_put_del(c, m, false, ext,
							   res);
	case TDB_CMD_DEL:          return tdbo_cmd_put_del(c, m, true, ext,
							   res);
	case TDB_CMD_SCAN:         return tdbo_scan(c, m, ext, &res->dump);
	case TDB_CMD_TABLE_CREATE: return tdbo_cmd_create(c, m, ext, res);
	case TDB_CMD_TABLE_DROP:   return tdbo_cmd_drop(c, m, ext, res);
	case TDB_CMD_TABLE_LIST:   return tdbo_list(c, m, ext, &res->dump);
	case TDB_CMD_TABLE_STAT:   return do_stat(c, m, out, ext);
	case TDB_CMD_TXN_BEGIN:
	case TDB_CMD_TXN_COMMIT:
	case TDB_CMD_TXN_ABORT:    return tdbo_txn_cmd(c, m, out, ext, res);
	case TDB_CMD_WATCH:        return tdbo_watch(c, m, ext, res);
	case TDB_CMD_UNWATCH:      return tdbo_unwatch(c, m, ext);
	case TDB_CMD_STATS:        return do_stats(c, m, out, ext);
	case TDB_CMD_TABLE_MAP:    return tdbo_cmd_map(c, m, ext, res);
	case TDB_CMD_INCR:         return tdbo_cmd_incr(c, m, out, ext, res);
	case TDB_CMD_EXPIRE:       return tdbo_cmd_expire(c, m, out, ext, res);
	case TDB_CMD_TOUCH:        return tdbo_cmd_touch(c, m, ext);
	case TDB_CMD_RESTORE_BULK: return tdbo_cmd_restore_bulk(c, m, ext,
							       res);
	case TDB_CMD_ATTACH:            /* the transport's, if it has one */
		ext->msg = "ATTACH is not a command of this transport";
		return -EOPNOTSUPP;
	}
	ext->msg = "unknown command";
	return -EOPNOTSUPP;
}

/* --- log lines a client can provoke -------------------------------------- */

void tdbo_log_init(struct tdbo_owner *o)
{
	static const char *const what[TDBO_RL_N] = {
		[TDBO_RL_TABLES] = "tables made or dropped",
		[TDBO_RL_READERS] = "mapped readers expired",
		[TDBO_RL_SNAPS] = "snapshot scans failing",
		[TDBO_RL_TXNS] = "failed commits not undone",
		[TDBO_RL_FEEDS] = "changes feeds miss",
	};
	unsigned int i;

	for (i = 0; i < TDBO_RL_N; i++)
		tdbp_ratelimit_init(&o->rl[i], what[i]);
}

void tdbo_log_flush(struct tdbo_owner *o)
{
	unsigned int i;

	for (i = 0; i < TDBO_RL_N; i++)
		tdbp_log_rl_flush(&o->rl[i]);
	if (o->engine)
		tdbe_engine_log_flush(o->engine);
	tdbp_log_flush();
}

int tdbo_exec(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdbo_sink *out, struct tdb_proto_extack *ext,
	      struct tdbo_out *res)
{
	int err;

	memset(ext, 0, sizeof(*ext));
	memset(res, 0, sizeof(*res));
	tdbo_inc(&c->o->requests);
	/* tdb.ko has no periodic point: counts of suppressed lines whose
	 * window is over go out at the next request (tdbd's tick too) */
	tdbo_log_flush(c->o);
	err = dispatch(c, m, out, ext, res);
	if (err < 0) {
		tdbo_inc(&c->o->errors);
		if (!ext->msg)
			ext->msg = tdbe_strerror(err);
	}
	return err;
}

/* --- clients -------------------------------------------------------------- */

void tdbo_client_allow_set_version(struct tdbo_client *c)
{
	c->may_set_version = true;
}

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
	tdbo_list_init(&c->dumps);
	tdbo_list_init(&c->txns);
	*err = 0;
	return c;
}

int tdbo_client_attach_charge(struct tdbo_client *c, uint64_t ring_bytes,
			      const char **msg)
{
	int err;

	if (c->ring_charged)
		return 0;
	err = tdbo_quota_charge(c->o, c->uid, c->uid, TDBO_Q_RING_BYTES,
				ring_bytes, msg);
	if (err)
		return err;
	err = tdbo_quota_charge(c->o, c->uid, c->uid, TDBO_Q_CLIENTS, 1, msg);
	if (err) {
		tdbo_quota_uncharge(c->o, c->uid, TDBO_Q_RING_BYTES,
				    ring_bytes);
		return err;
	}
	c->ring_charged = true;
	c->ring_bytes = ring_bytes;
	return 0;
}

void tdbo_client_attach_uncharge(struct tdbo_client *c)
{
	if (!c->ring_charged)
		return;
	tdbo_quota_uncharge(c->o, c->uid, TDBO_Q_CLIENTS, 1);
	tdbo_quota_uncharge(c->o, c->uid, TDBO_Q_RING_BYTES, c->ring_bytes);
	c->ring_charged = false;
	c->ring_bytes = 0;
}

uint32_t tdbo_client_uid(const struct tdbo_client *c)
{
	return c->uid;
}

void tdbo_client_accept(struct tdbo_client *c)
{
	if (c->accepted)
		return;
	c->accepted = true;
	tdbo_inc(&c->o->ctr.clients);
	tdbo_inc(&c->o->ctr.accepted);
}

unsigned int tdbo_client_txns(const struct tdbo_client *c)
{
	return c->ntxns;
}

unsigned int tdbo_client_watches(const struct tdbo_client *c)
{
	return c->nwatches;
}

void tdbo_client_put(struct tdbo_client *c)
{
	if (!tdbo_ref_put(&c->refs))
		return;
	tdbp_mutex_destroy(c->lock);
	tdbp_free(c->groups);
	tdbp_free(c->buf);
	tdbo_table_put(c->cache);
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
	unsigned int nw;

	if (!c)
		return;
	o = c->o;
	while (!tdbo_list_empty(&c->txns)) {
		struct tdbo_txn *x = tdbo_list_first(&c->txns,
						     struct tdbo_txn, node);

		tdbo_list_del(&x->node);
		tdbo_txn_free(x);
		tdbo_dec(&o->txns);
		tdbo_inc(&o->txns_aborted);
	}
	c->ntxns = 0;
	tdbo_reader_remove(c);          /* before its home frees the rings */
	tdbo_client_attach_uncharge(c);
	nw = tdbo_watches_drop(c);
	tdbo_add(&o->watches_dropped, nw);
	tdbp_mutex_lock(c->lock);
	c->dead = true;
	tdbp_mutex_unlock(c->lock);
	tdbo_dumps_release(c);
	if (c->accepted) {
		tdbo_dec(&o->ctr.clients);
		tdbo_inc(&o->cleanups);
	}
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
	tdbo_log_init(o);
	o->nbuf = tdbp_alloc(TDB_PROTO_MSG_MAX);
	o->wlock = tdbp_mutex_create();
	o->nlock = tdbp_mutex_create();
	o->reg_lock = tdbp_mutex_create();
	if (!o->nbuf || !o->wlock || !o->nlock || !o->reg_lock ||
	    tdbo_quota_init(&o->quota))
		goto fail;
	o->evict_rng = tdbp_random_u64() | 1;
	o->engine = tdbe_engine_new(err);
	if (!o->engine)
		goto fail;
	*err = tdbo_readers_init(o);
	if (*err)
		goto fail;
	for (i = 0; i < TDBO_BUCKETS; i++)
		tdbo_list_init(&o->buckets[i]);
	tdbo_list_init(&o->tables);
	tdbo_list_init(&o->feeds);
	o->next_slot = 2;
	o->start_ns = tdbp_now_ns();
	*err = 0;
	return o;
fail:
	tdbo_readers_fini(o);
	tdbe_engine_free(o->engine);
	if (o->quota.lock)
		tdbo_quota_fini(&o->quota);
	if (o->reg_lock)
		tdbp_mutex_destroy(o->reg_lock);
	if (o->wlock)
		tdbp_mutex_destroy(o->wlock);
	if (o->nlock)
		tdbp_mutex_destroy(o->nlock);
	tdbp_free(o->nbuf);
	tdbp_free(o);
	return NULL;
}

/* Under nlock: every notification is made under it (tdbo_notify). */
void tdbo_owner_on_change(struct tdbo_owner *o, tdbo_change_fn *fn,
			  void *arg)
{
	tdbp_mutex_lock(o->nlock);
	o->change_arg = arg;
	tdb_store_relaxed(&o->on_change, fn);
	tdbp_mutex_unlock(o->nlock);
}

void tdbo_owner_change_wanted(struct tdbo_owner *o, bool (*wanted)(void *))
{
	tdbp_mutex_lock(o->nlock);
	o->change_wanted = wanted;
	tdbp_mutex_unlock(o->nlock);
}

struct tdbo_counters *tdbo_owner_counters(struct tdbo_owner *o)
{
	return &o->ctr;
}

void tdbo_owner_cleanup_counts(struct tdbo_owner *o, uint64_t *cleanups,
			       uint64_t *txns_aborted,
			       uint64_t *watches_dropped)
{
	*cleanups = tdbo_read(&o->cleanups);
	*txns_aborted = tdbo_read(&o->txns_aborted);
	*watches_dropped = tdbo_read(&o->watches_dropped);
}

uint64_t tdbo_owner_requests(struct tdbo_owner *o)
{
	return tdbo_read(&o->requests) + tdbo_read(&o->ctr.requests);
}

void tdbo_owner_free(struct tdbo_owner *o)
{
	if (!o)
		return;
	while (!tdbo_list_empty(&o->tables)) {
		struct tdbo_table *t = tdbo_list_first(&o->tables,
						       struct tdbo_table,
						       lnode);

		tdbo_table_unlink(o, t);
		tdbo_quota_uncharge(o, t->uid, TDBO_Q_TABLES, 1);
		tdbo_table_feed_release(t);
		tdbo_table_put(t);
	}
	tdbo_quota_fini(&o->quota);
	tdbe_engine_free(o->engine);
	tdbo_readers_fini(o);
	tdbp_mutex_destroy(o->reg_lock);
	tdbp_mutex_destroy(o->wlock);
	tdbp_mutex_destroy(o->nlock);
	tdbp_free(o->nbuf);
	tdbp_free(o);
}

void tdbo_owner_set_clock(struct tdbo_owner *o, uint64_t (*now)(void *arg),
			  void *arg)
{
	tdbe_engine_set_clock(o->engine, now, arg);
}
