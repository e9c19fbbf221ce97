/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * registry.c - the owner's tables: each engine table with its owner,
 * group, mode and id, looked up by name; the access check; creating and
 * dropping tables (TABLE_CREATE, TABLE_DROP), and what a durable home's
 * recovery needs (tables restored with their ids, tables set aside).
 *
 * Invariants:
 *  - A struct tdbo_table lives while it has references; the registry
 *    holds one from create to drop.  Lookups take a reference under
 *    reg_lock; create and drop change the hash and the list under
 *    reg_lock, and only while the caller holds o->wlock (a drop also the
 *    table's lock, so it is ordered with the table's changes).
 *  - o->tables is in id order: tdbo_write_lock() takes the tables' locks
 *    in that order, as a commit does.
 *  - reg_gen changes whenever the set of names changes, so a client's
 *    cached table (tdbo_resolve) is good while reg_gen is what it was.
 *  - A table set aside (t->aside) has no engine table (t->t NULL): a
 *    durable home's recovery made it so, before any client came; no
 *    request reaches it but a DROP (tdbo_resolve refuses the others).
 *  - A table is charged to its owner from create to drop (TDBO_Q_TABLES)
 *    and, for the address space its region reserves, until its engine
 *    table is closed (TDBO_Q_RESERVE, t->reserve).  A client's create is
 *    checked and charged under wlock, so the check and the charge cannot
 *    be split by another; recovery charges whatever the limits say.
 *  - The bytes of a table's extents are charged to its owner
 *    (TDBO_Q_DATA, t->data) for as long as its region lives: from
 *    create until it is set aside or its last reference goes.  Not at
 *    the drop: a client's watch, transaction or scan (or another
 *    connection's cache, until its next request) keeps a dropped
 *    table's region alive, and that memory must stay within its
 *    owner's bound (else drop-and-repeat pins any amount).  A write
 *    that adds data is checked first against the bounds of whoever
 *    writes (tdbo_table_data_check: max-data-per-uid of the table's
 *    owner, 7/8 of max_data; root only by the home's memory bound,
 *    which is max_data); once it applied, the charge follows what the
 *    engine did (tdbo_table_data_note, forced), as the home's mem_note
 *    does.  A table recovery filled without the pipeline is caught up
 *    by the home (tdbd's mem_prime).
 *  - A dropped table's memory (and charge) goes with its last
 *    reference: the dropping client's cache lets it go at once
 *    (tdbo_cmd_drop).
 */
#include "internal.h"

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

/* Closing the engine handle may sleep: where the home allows that. */
void tdbo_table_put(struct tdbo_table *t)
{
	struct tdbo_owner *o;

	if (!t || !tdbo_ref_put(&t->refs))
		return;
	o = t->o;
	tdbo_table_feed_release(t);
	tdbo_expire_forget(t);
	tdbo_evict_forget(t);
	tdbe_table_close(t->t);
	tdbo_quota_uncharge(o, t->uid, TDBO_Q_RESERVE, t->reserve);
	tdbo_quota_uncharge(o, t->uid, TDBO_Q_DATA, t->data);
	if (o->hooks.table_free)
		o->hooks.table_free(o->hooks.arg, t);
	tdbp_mutex_destroy(t->wlock);
	tdbp_free(t->aside);
	tdbp_free(t);
}

void tdbo_table_data_note(struct tdbo_table *t)
{
	struct tdbe_table_stat st;
	uint64_t now = 0;

	if (t->t) {     /* dropped or not: its region is there */
		tdbe_table_stat(t->t, &st);     /* O(1): its header */
		now = (uint64_t)st.extents * TDBP_EXTENT_SIZE;
	}
	if (now > t->data) {
		/* fails only if no entry of uid could be allocated, and it
		 * holds one for the table (TDBO_Q_TABLES): retried next time */
		if (tdbo_quota_force(t->o, t->uid, TDBO_Q_DATA,
				     now - t->data))
			return;
	} else {
		tdbo_quota_uncharge(t->o, t->uid, TDBO_Q_DATA, t->data - now);
	}
	t->data = now;
}

/*
 * May `who` add n bytes to the data of uid's tables?  Root is exempt
 * per uid, and its bound in all (max_data) is the home's memory bound
 * itself, which the home enforces on everything it counts there (tdbd's
 * mem_check: tables, transactions, snapshots; tdb.ko's extent grow:
 * extents, feeds, the log ring) with its own message: checked here too
 * it would only refuse one write earlier, naming it less well.
 */
static int data_check(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		      uint64_t n, const char **msg)
{
	if (who == 0)
		return 0;
	return tdbo_quota_check(o, who, uid, TDBO_Q_DATA, n, msg);
}

int tdbo_table_data_check(struct tdbo_owner *o, uint32_t who,
			  const struct tdbo_table *t, const char **msg)
{
	return data_check(o, who, t->uid, 1, msg);
}

uint64_t tdbo_table_reserve(uint32_t max_ext)
{
	/* tdbp_region_create: one extent more, to align the base */
	return ((uint64_t)(max_ext ? max_ext : TDBE_EXTENTS_DEFAULT) + 1) *
	       TDBP_EXTENT_SIZE;
}

unsigned int tdbo_table_count(struct tdbo_owner *o)
{
	return tdb_load_relaxed(&o->ntables);
}

unsigned int tdbo_table_count_aside(struct tdbo_owner *o)
{
	return tdb_load_relaxed(&o->naside);
}

/* Under o->wlock. */
static void reg_add(struct tdbo_owner *o, struct tdbo_table *t)
{
	struct tdbo_list *at = o->tables.prev;

	tdbp_mutex_lock(o->reg_lock);
	t->map_slot = tdbo_map_slot_pick(o);
	tdbo_list_add(&t->hnode, &o->buckets[name_hash(t->name)]);
	/* in id order: new tables come last, restored ones nearly so */
	while (at != &o->tables &&
	       tdbo_list_entry(at, struct tdbo_table, lnode)->id > t->id)
		at = at->prev;
	tdbo_list_add(&t->lnode, at);
	o->ntables++;
	tdb_fetch_add(&o->reg_gen, 1);
	tdbp_mutex_unlock(o->reg_lock);
}

/* Under reg_lock. */
static void reg_del(struct tdbo_owner *o, struct tdbo_table *t)
{
	tdbo_list_del(&t->hnode);
	tdbo_list_del(&t->lnode);
	o->ntables--;
	tdb_fetch_add(&o->reg_gen, 1);
}

/* Under wlock (or at owner_free): take t out of the registry. */
void tdbo_table_unlink(struct tdbo_owner *o, struct tdbo_table *t)
{
	tdbp_mutex_lock(o->reg_lock);
	reg_del(o, t);
	tdbp_mutex_unlock(o->reg_lock);
}

/*
 * Under o->wlock and t->wlock, for a drop: maps of t stop being good
 * (its region's map_gen moves), then t is marked dropped and leaves the
 * registry, all in one reg_lock section.  In this order because
 * whoever finds t gone serves a mapped reader zeros (tdb.ko's map fault:
 * tdbo_table_by_map_slot, tdbo_may_read), while the reader's header
 * page may still be mapped from before: the header must already say
 * the map is stale, or the reader takes a page of zeros for an empty
 * bucket and a present key for an absent one.  Release/acquire: a fault
 * that reads `dropped` true, or takes reg_lock after this section,
 * is followed by loads that see the new map_gen.  And in one section
 * with the bump, because TABLE_MAP reads map_gen under reg_lock and
 * refuses a dropped table (tdbo_cmd_map): no client is handed the
 * new generation of a table on its way out.
 */
static void reg_drop(struct tdbo_owner *o, struct tdbo_table *t)
{
	tdbp_mutex_lock(o->reg_lock);
	if (t->t)
		tdbe_table_revoke_maps(t->t);
	tdb_store_release(&t->dropped, true);
	reg_del(o, t);
	tdbp_mutex_unlock(o->reg_lock);
}

/* A table struct, not yet in the registry. */
static struct tdbo_table *table_alloc(struct tdbo_owner *o, const char *name,
				      uint64_t id, uint32_t max_ext,
				      uint32_t uid, uint32_t gid,
				      uint32_t mode)
{
	struct tdbo_table *t = tdbp_alloc(sizeof(*t));

	if (!t)
		return NULL;
	t->wlock = tdbp_mutex_create();
	if (!t->wlock) {
		tdbp_free(t);
		return NULL;
	}
	tdbo_strlcpy(t->name, name, sizeof(t->name));
	t->o = o;
	t->id = id ? id : o->next_table_id + 1;
	if (t->id > o->next_table_id)
		o->next_table_id = t->id;
	t->max_extents = max_ext;
	t->uid = uid;
	t->gid = gid;
	t->mode = mode & 0777;
	tdbo_ref_init(&t->refs, 1);     /* the registry's */
	tdbo_list_init(&t->watches);
	return t;
}

/* A line in the home's log for a table made or dropped.  The name as it
 * is, as the engine logs it: the home's log sink escapes what it shows
 * (tdbd: tdb_escape; new names are restricted, a legacy one may hold
 * anything). */
static void table_log(const struct tdbo_table *t, const char *what)
{
	/* a table restored at start is no news: the recovery's summary
	 * counts them (debug says each) */
	int level = tdbo_streq(what, "restored") ? TDBP_LOG_DEBUG :
						   TDBP_LOG_INFO;

	if (level == TDBP_LOG_DEBUG)    /* the home's own start */
		tdbp_log(level, "table %s %s (owner %u:%u, mode %04o)",
			 t->name, what, t->uid, t->gid, t->mode);
	else if (tdbo_streq(what, "dropped"))
		tdbp_log_rl(&t->o->rl[TDBO_RL_TABLES], level, "table %s %s",
			    t->name, what);
	else
		tdbp_log_rl(&t->o->rl[TDBO_RL_TABLES], level,
			    "table %s %s (owner %u:%u, mode %04o)",
			    t->name, what, t->uid, t->gid, t->mode);
}

/* Under wlock: the engine table and the registry entry.  id 0: the
 * next free one.  Charged whatever the limits say (the caller checked
 * them, or is recovery).  locked: return with the new table's wlock
 * held, taken before anyone can find it (a create's log record must
 * come before any change to the table).  what: "created" or "restored"
 * (the log line). */
static int table_make(struct tdbo_owner *o, const char *name, uint64_t id,
		      uint32_t max_ext, uint32_t tflags, uint32_t uid,
		      uint32_t gid, uint32_t mode, bool locked,
		      const char *what, struct tdbo_table **out,
		      const char **msg)
{
	struct tdbe_table_opts opts = {
		.max_extents = max_ext,
		.flags = (tflags & TDB_TABLE_F_ORDERED) ?
			 TDBE_TABLE_ORDERED : 0,
	};
	struct tdbe_extack ee = { 0 };
	struct tdbo_table *t = table_alloc(o, name, id, max_ext, uid, gid,
					   mode);
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
		*msg = err == -EEXIST ? "table exists" : ee.msg;
		tdbp_mutex_destroy(t->wlock);
		tdbp_free(t);
		return err;
	}
	t->tflags = tflags;
	t->reserve = tdbo_table_reserve(max_ext);
	tdbo_quota_force(o, uid, TDBO_Q_TABLES, 1);
	tdbo_quota_force(o, uid, TDBO_Q_RESERVE, t->reserve);
	tdbo_table_data_note(t);        /* extent 0; not yet findable */
	t->ckpt_full = true;    /* new: the next checkpoint writes it all */
	if (locked)
		tdbp_mutex_lock(t->wlock);
	reg_add(o, t);
	table_log(t, what);
	if (out)
		*out = t;
	return 0;
}

int tdbo_table_restore_flags(struct tdbo_owner *o, const char *name,
			     uint64_t id, uint32_t max_ext, uint32_t tflags,
			     uint32_t uid, uint32_t gid, uint32_t mode,
			     struct tdbo_table **out, const char **msg)
{
	int err;

	if (tflags & ~TDB_TABLE_F_ALL) {
		*msg = "unknown table flags (TDB_TABLE_F_*): from a newer "
		       "tdb?";
		return -EOPNOTSUPP;
	}
	tdbp_mutex_lock(o->wlock);
	err = table_make(o, name, id, max_ext, tflags, uid, gid, mode, false,
			 "restored", out, msg);
	tdbp_mutex_unlock(o->wlock);
	return err;
}

int tdbo_table_restore(struct tdbo_owner *o, const char *name, uint64_t id,
		       uint32_t max_ext, uint32_t uid, uint32_t gid,
		       uint32_t mode, struct tdbo_table **out,
		       const char **msg)
{
	return tdbo_table_restore_flags(o, name, id, max_ext, 0, uid, gid,
					mode, out, msg);
}

uint32_t tdbo_table_flags(const struct tdbo_table *t)
{
	return t->tflags;
}

void tdbo_table_set_default_ttl(struct tdbo_table *t, uint64_t ttl_ms)
{
	t->default_ttl = ttl_ms;
}

void tdbo_table_set_bounds(struct tdbo_table *t, uint64_t max_bytes,
			   uint64_t max_records, uint32_t evict)
{
	t->max_bytes = max_bytes;
	t->max_records = max_records;
	t->evict = evict;
	/* mapped readers of an lru/lfu table report their hits (TOUCH) */
	if (t->t)
		tdbe_table_reader_flags(t->t, (max_bytes || max_records) &&
					(evict == TDB_EVICT_LRU ||
					 evict == TDB_EVICT_LFU) ?
					TDBE_READER_TOUCH : 0);
}

/* What every request on a set-aside table is told: the name (escaped: a
 * legacy name may hold anything) and why, cut so that the whole fits in
 * an extack (TDB_PROTO_EXTACK_MAX) with the tail. */
static int aside_msg(struct tdbo_table *t, const char *why)
{
	static const char head[] = "table ";
	static const char mid[] = " was set aside at start: ";
	static const char tail[] = "; its data is kept on disk for a "
				   "restart once the cause is gone (DROP "
				   "discards it)";
	char name[4 * TDBE_NAME_MAX + 1], *m;
	size_t n = 0, room, wl;

	tdb_escape(name, sizeof(name), t->name, tdbo_strlen(t->name));
	m = tdbp_alloc(TDB_PROTO_EXTACK_MAX + 1);
	if (!m)
		return -ENOMEM;
	memcpy(m, head, sizeof(head) - 1);
	n = sizeof(head) - 1;
	wl = tdbo_min(tdbo_strlen(name), (size_t)96);
	memcpy(m + n, name, wl);
	n += wl;
	memcpy(m + n, mid, sizeof(mid) - 1);
	n += sizeof(mid) - 1;
	room = TDB_PROTO_EXTACK_MAX - n - (sizeof(tail) - 1);
	wl = tdbo_min(tdbo_strlen(why), room);
	memcpy(m + n, why, wl);
	n += wl;
	memcpy(m + n, tail, sizeof(tail));      /* with its NUL */
	tdbp_free(t->aside);
	t->aside = m;
	return 0;
}

int tdbo_table_add_aside(struct tdbo_owner *o, const char *name, uint64_t id,
			 uint32_t max_ext, uint32_t flags, uint32_t uid,
			 uint32_t gid, uint32_t mode, uint64_t from,
			 const char *why)
{
	struct tdbo_table *t;

	tdbp_mutex_lock(o->wlock);
	t = table_alloc(o, name, id, max_ext, uid, gid, mode);
	if (!t || aside_msg(t, why)) {
		tdbp_mutex_unlock(o->wlock);
		if (t)
			tdbp_mutex_destroy(t->wlock);
		tdbp_free(t);
		return -ENOMEM;
	}
	t->tflags = flags;
	t->from = from;
	/* it still counts among its owner's tables (a drop gives the slot
	 * back); it reserves no address space while it has no region */
	tdbo_quota_force(o, uid, TDBO_Q_TABLES, 1);
	reg_add(o, t);
	tdbo_inc(&o->naside);
	tdbp_mutex_unlock(o->wlock);
	return 0;
}

int tdbo_table_set_aside(struct tdbo_owner *o, struct tdbo_table *t,
			 const char *why)
{
	struct tdbe_extack ee = { 0 };

	tdbp_mutex_lock(o->wlock);
	tdbp_mutex_lock(t->wlock);
	if (aside_msg(t, why)) {
		tdbp_mutex_unlock(t->wlock);
		tdbp_mutex_unlock(o->wlock);
		return -ENOMEM;
	}
	tdbe_table_drop(o->engine, t->name, &ee);
	tdbe_table_close(t->t);
	t->t = NULL;
	tdbo_table_data_note(t);        /* no region: gives it all back */
	tdbo_quota_uncharge(o, t->uid, TDBO_Q_RESERVE, t->reserve);
	t->reserve = 0;
	t->ckpt_full = false;
	if (o->hooks.table_free)        /* its dirty set, its memory */
		o->hooks.table_free(o->hooks.arg, t);
	tdb_fetch_add(&o->reg_gen, 1);
	tdbo_inc(&o->naside);
	tdbp_mutex_unlock(t->wlock);
	tdbp_mutex_unlock(o->wlock);
	return 0;
}

int tdbo_tables_snapshot(struct tdbo_owner *o, struct tdbo_table ***out,
			 unsigned int *n)
{
	struct tdbo_table **v, *t;
	unsigned int k;

	for (;;) {
		k = tdb_load_relaxed(&o->ntables);
		v = tdbo_alloc_array(k + 1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		tdbp_mutex_lock(o->reg_lock);
		if (o->ntables <= k)
			break;
		tdbp_mutex_unlock(o->reg_lock);  /* grew meanwhile: again */
		tdbp_free(v);
	}
	k = 0;
	tdbo_list_for_each(t, &o->tables, lnode) {
		tdbo_ref_get(&t->refs);
		v[k++] = t;
	}
	tdbp_mutex_unlock(o->reg_lock);
	*out = v;
	*n = k;
	return 0;
}

void tdbo_tables_release(struct tdbo_table **v, unsigned int n)
{
	while (n--)
		tdbo_table_put(v[n]);
	tdbp_free(v);
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

/* Root may do anything; else the owner's, the group's or the others'
 * bits, the first class the client is in. */
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
	if (want == TDBO_MAY_SEE)
		return (bits & (TDBO_MAY_READ | TDBO_MAY_WRITE)) != 0;
	return (bits & want) == want;
}

/* The table m names, through the client's one-entry cache (good while
 * the registry's names are what they were): a reference of the
 * caller's own. */
static struct tdbo_table *cached(struct tdbo_client *c, const char *name)
{
	uint64_t gen = tdb_load_acquire(&c->o->reg_gen);

	if (!c->cache || c->cache_gen != gen ||
	    !tdbo_streq(c->cache->name, name)) {
		tdbo_table_put(c->cache);
		c->cache = tdbo_table_get(c->o, name);
		c->cache_gen = gen;
	}
	if (c->cache)
		tdbo_ref_get(&c->cache->refs);
	return c->cache;
}

struct tdbo_table *tdbo_resolve(struct tdbo_client *c,
				const struct tdb_proto_msg *m,
				unsigned int want,
				struct tdb_proto_extack *ext, int *err)
{
	struct tdbo_table *t = cached(c, m->table);

	if (!t) {
		ext->msg = "no such table";
		ext->offset = m->attr_off[TDB_A_TABLE];
		*err = -ENOENT;
		return NULL;
	}
	if (want && !tdbo_may(c, t, want)) {
		bool both = (want & TDBO_MAY_WRITE) && (want & TDBO_MAY_READ);

		ext->msg = want == TDBO_MAY_SEE ?
			"permission denied: the table's mode lets you neither "
			"read nor write it" :
			both && tdbo_may(c, t, TDBO_MAY_WRITE) ?
			"permission denied: a conditional write or INCR tells "
			"what the table holds, and the table's mode does not "
			"let you read it" :
			want & TDBO_MAY_WRITE ?
			"permission denied: the table's mode does not let "
			"you write it" :
			"permission denied: the table's mode does not let "
			"you read it";
		*err = -EACCES;
	} else if (want && t->aside) {  /* only DROP (want 0) reaches it */
		ext->msg = t->aside;
		ext->offset = m->attr_off[TDB_A_TABLE];
		*err = -EIO;
	} else {
		return t;
	}
	tdbo_table_put(t);
	return NULL;
}

/* --- TABLE_CREATE, TABLE_DROP ----------------------------------------------- */

/* Under wlock: may uid own one more table of max_ext extents (a request
 * of `who`: root creates for anyone, exempt from the per-uid limits and
 * with the last eighth of those in all)? */
static int create_check(struct tdbo_owner *o, uint32_t who, uint32_t uid,
			uint32_t max_ext, const char **msg)
{
	uint32_t max = tdbo_lim(o, max_tables);

	if (max && tdb_load_relaxed(&o->ntables) >= max) {
		*msg = "too many tables (max-tables)";
		return -EMFILE;
	}
	if (max_ext > TDBE_EXTENTS_MAX)
		return 0;       /* the engine refuses it, naming it */
	return tdbo_quota_check(o, who, uid, TDBO_Q_TABLES, 1, msg) ?:
	       tdbo_quota_check(o, who, uid, TDBO_Q_RESERVE,
				tdbo_table_reserve(max_ext), msg) ?:
	       data_check(o, who, uid, TDBP_EXTENT_SIZE, msg); /* extent 0 */
}

/* Under wlock: check, reserve the log's room, make, log. */
static int create_locked(struct tdbo_owner *o, const struct tdb_proto_msg *m,
			 uint32_t who, uint32_t uid, uint32_t gid,
			 uint32_t mode, struct tdb_proto_extack *ext,
			 struct tdbo_out *res)
{
	uint32_t max_ext = TDB_PROTO_HAS(m, TDB_A_MAX_EXTENTS) ?
			   m->max_extents : 0;
	struct tdbo_table *t = tdbo_table_get(o, m->table), *nt;
	struct tdbo_log_size sz = { .kind = TDBO_LOG_CREATE };
	int err;

	if (t) {
		ext->msg = t->aside ? "table exists (set aside at start: "
			   "its data is kept; DROP discards it)" :
			   "table exists";
		tdbo_table_put(t);
		return -EEXIST;
	}
	err = create_check(o, who, uid, max_ext, &ext->msg);
	if (err)
		return err;
	sz.bytes = tdbo_strlen(m->table);
	if ((err = tdbo_log_reserve(o, &sz, &ext->msg)))
		return err;
	err = table_make(o, m->table, o->next_table_id + 1, max_ext,
			 TDB_PROTO_HAS(m, TDB_A_TABLE_FLAGS) ?
			 m->table_flags : 0, uid, gid, mode, true, "created",
			 &nt, &ext->msg);
	if (err) {
		tdbo_log_cancel(o, &sz);
		return err;
	}
	nt->default_ttl = TDB_PROTO_HAS(m, TDB_A_TTL) ? m->ttl : 0;
	tdbo_table_set_bounds(nt, TDB_PROTO_HAS(m, TDB_A_MAX_BYTES) ?
			      m->max_bytes : 0,
			      TDB_PROTO_HAS(m, TDB_A_MAX_RECORDS) ?
			      m->max_records : 0, m->evict);
	if (o->hooks.log_reserve)
		res->lsn = o->hooks.log_create(o->hooks.arg, nt, &sz);
	if (o->hooks.mem_note)          /* under its lock, as the others */
		o->hooks.mem_note(o->hooks.arg, nt);
	tdbp_mutex_unlock(nt->wlock);
	return err;
}

int tdbo_cmd_create(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	uint32_t uid = c->uid, gid = c->gid, mode = tdbo_lim(o, default_mode);
	int err;

	if (TDB_PROTO_HAS(m, TDB_A_EVICT) &&
	    !TDB_PROTO_HAS(m, TDB_A_MAX_BYTES) &&
	    !TDB_PROTO_HAS(m, TDB_A_MAX_RECORDS)) {
		ext->msg = "EVICT without MAX_BYTES or MAX_RECORDS (a policy "
			   "needs a bound)";
		ext->offset = m->attr_off[TDB_A_EVICT];
		return -EINVAL;
	}

	if (TDB_PROTO_HAS(m, TDB_A_UID))
		uid = m->uid;
	if (TDB_PROTO_HAS(m, TDB_A_GID))
		gid = m->gid;
	if (TDB_PROTO_HAS(m, TDB_A_MODE))
		mode = m->mode;
	if (c->uid != 0 && uid != c->uid) {
		ext->msg = "only root may create a table owned by another "
			   "user";
		ext->offset = m->attr_off[TDB_A_UID];
		return -EPERM;
	}
	if (c->uid != 0 && !in_groups(c, gid)) {
		ext->msg = "the table's group must be one of yours";
		ext->offset = m->attr_off[TDB_A_GID];
		return -EPERM;
	}
	/* a table is at least an extent: past the home's memory limit,
	 * no new one */
	if (o->hooks.mem_check && (err = o->hooks.mem_check(o->hooks.arg,
							    &ext->msg)))
		return err;
	tdbp_mutex_lock(o->wlock);
	err = create_locked(o, m, c->uid, uid, gid, mode, ext, res);
	tdbp_mutex_unlock(o->wlock);
	return err;
}

/* Under o->wlock and t->wlock: out of the engine and the registry; the
 * watchers get TABLE_DROP as the last message of its feed. */
static int drop_locked(struct tdbo_owner *o, struct tdbo_table *t,
		       const char **msg)
{
	struct tdbe_extack ee = { 0 };
	int err;

	if (t->dropped) {
		*msg = "no such table";
		return -ENOENT;
	}
	/* a table set aside has no engine table: dropping it only takes
	 * it from the registry (and the next checkpoint from the disk) */
	err = t->t ? tdbe_table_drop(o->engine, t->name, &ee) : 0;
	if (err) {
		*msg = ee.msg;
		return err;
	}
	if (t->aside)
		tdbo_dec(&o->naside);
	/* maps of it stop being used: readers see map_gen move (before
	 * anyone can find it gone: reg_drop), then tdb.ko unmaps what
	 * clients mapped */
	reg_drop(o, t);
	tdbo_quota_uncharge(o, t->uid, TDBO_Q_TABLES, 1);
	tdbo_expire_forget(t);
	tdbo_evict_forget(t);
	/* its TDBO_Q_DATA charge stays until its region goes (above) */
	if (t->t && o->hooks.map_revoke)
		o->hooks.map_revoke(o->hooks.arg, t);
	tdbo_snap_detach_all(t);        /* a dropped table changes no more */
	tdbo_notify(o, t, TDB_CMD_TABLE_DROP, NULL, 0, NULL, 0, 0, 0, 0);
	tdbo_feed_flush(t);
	tdbo_table_feed_release(t);
	if (o->hooks.mem_note)
		o->hooks.mem_note(o->hooks.arg, t);
	table_log(t, "dropped");
	return 0;
}

/* The registry's reference goes after the table's lock is let go (the
 * caller holds one of its own). */
int tdbo_table_drop_replay(struct tdbo_owner *o, struct tdbo_table *t,
			   const char **msg)
{
	int err;

	tdbp_mutex_lock(o->wlock);
	tdbp_mutex_lock(t->wlock);
	err = drop_locked(o, t, msg);
	tdbp_mutex_unlock(t->wlock);
	tdbp_mutex_unlock(o->wlock);
	if (!err)
		tdbo_table_put(t);
	return err;
}

int tdbo_cmd_drop(struct tdbo_client *c, const struct tdb_proto_msg *m,
		  struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_log_size sz = { .kind = TDBO_LOG_DROP };
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, 0, ext, &err);
	if (!t)
		return err;
	if (c->uid != 0 && c->uid != t->uid) {
		ext->msg = "only the table's owner or root may drop it";
		tdbo_table_put(t);
		return -EPERM;
	}
	tdbp_mutex_lock(o->wlock);
	tdbp_mutex_lock(t->wlock);
	sz.bytes = tdbo_strlen(t->name);
	if (t->dropped) {
		ext->msg = "no such table";
		err = -ENOENT;
	} else {
		err = tdbo_log_reserve(o, &sz, &ext->msg);
	}
	if (!err && (err = drop_locked(o, t, &ext->msg)))
		tdbo_log_cancel(o, &sz);
	else if (!err && o->hooks.log_reserve)
		res->lsn = o->hooks.log_drop(o->hooks.arg, t, &sz);
	tdbp_mutex_unlock(t->wlock);
	tdbp_mutex_unlock(o->wlock);
	if (!err)
		tdbo_table_put(t);      /* the registry's reference */
	if (!err && c->cache == t) {
		/* nor does our cache keep it (and its memory) until our
		 * next request */
		tdbo_table_put(c->cache);
		c->cache = NULL;
	}
	tdbo_table_put(t);
	return err;
}
