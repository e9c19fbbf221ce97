// SPDX-License-Identifier: GPL-2.0-only
/*
 * feed.c - change feeds: the TDB_RING_FEED ring of a watched table
 * (include/tdb/ring.h, "FEED rings"), a client's watches (WATCH,
 * UNWATCH), and telling every change to the feed and to the on_change
 * hook (genl multicast).  tdbd's design, for both homes:
 *
 *  - A table's feed exists while anyone watches it: the first WATCH
 *    makes it (t->feed), and it is retired when the last watch ends or
 *    the table is dropped (its last message is then TABLE_DROP).  A
 *    retired feed is never written again, so a descriptor or mapping
 *    handed out before cannot see a later change; a later WATCH gets a
 *    new feed (a new slot, a new cookie from hooks->feed_alloc).
 *  - The feed carries every change to the table; a watch's PREFIX is
 *    the client's filter (libtdb applies it), recorded here only so that
 *    UNWATCH names the same watch.
 *  - A client's watches are in a hash of (table name, prefix), seeded
 *    per client (tdbp_random_u64) and doubled when it holds as many
 *    watches as buckets: WATCH and UNWATCH cost does not grow with the
 *    number of watches, bounded by max-watches.  A new watch goes to the
 *    head of its chain, so UNWATCH by name finds the newest watch of
 *    that name, even one of a table dropped since.
 *
 * Invariants:
 *  - One producer: only the holder of its table's t->wlock writes a
 *    feed, through the ring core (src/ring/ring.c, as every ring).  Its
 *    indices and sequence number are private (struct tdb_ring); only
 *    the producer's own data, which no client can write (watchers map
 *    it read-only), is read back, to find where retired messages end.
 *  - Before bytes of older messages are overwritten, `tail` is moved
 *    past them with a full barrier (the core's FEED producer).
 *  - t->feed is set (under t->wlock) exactly while t->nwatch > 0 and t is
 *    not dropped; only t->feed is ever written.
 *  - Feed memory lives while referenced: by its table while it is
 *    t->feed, by each watch, and by each mapping (tdbo_feed_get); the
 *    last tdbo_feed_put() frees it and its mmap slot.
 *  - A client's watch hash changes on the client's thread only, under
 *    c->lock (tdbo_feed_get walks it from other threads under c->lock).
 *  - Each watch holds one TDBO_Q_WATCHES charge of its client's uid
 *    (quota.c: max-watches-per-uid, max-watches-total with root's
 *    eighth), taken before it is made and given back by watch_free(),
 *    the one way a watch ends (UNWATCH, or tdbo_watches_drop() at the
 *    client's end; a table's drop leaves its watches in place, on the
 *    retired feed, until one of those).  So a uid's watches count as
 *    long as they hold memory and feed references, whichever
 *    connection holds them.
 *  - Watchers are woken (c->wake) once per flush, after the feed is
 *    published, under t->wlock (so the client cannot go away meanwhile)
 *    but under no spinlock: wake() must not wait for the owner.
 */


#include "internal.h"


/* --- the ring ------------------------------------------------------------- */

/* Under reg_lock: a slot no live feed has (feeds are at most one per
 * table, so the walk is short and a free slot is soon found). */
static uint64_t slot_pick(struct tdbo_owner *o)
{
	struct tdbo_feed *f;
	bool taken;

	do {
		uint64_t s = o->next_slot++;

		if (s < 2 || s > TDBO_FEED_SLOT_LAST) {
			o->next_slot = 3;
			s = 2;
		}
		taken = false;
		tdbo_list_for_each(f, &o->feeds, onode)
			if (f->slot == s)
				taken = true;
		if (!taken)
			return s;
	} while (1);
}

/* The header and the producer's side, through the ring core. */
static int feed_format(struct tdbo_feed *f, uint32_t data_size)
{
	int err = tdb_ring_format(f->mem, TDB_RING_FEED, data_size, 0);

	return err ? err : tdb_ring_attach(&f->r, f->mem,
					   (unsigned char *)f->mem +
					   TDB_RING_HDR_SIZE, data_size,
					   TDB_RING_FEED, TDB_RING_PRODUCER,
					   f->o->hooks.feed_ring_ops);
}

static struct tdbo_feed *feed_new(struct tdbo_owner *o, int *err)
{
	uint32_t data_size = tdbo_lim(o, feed_size);
	struct tdbo_feed *f;

	*err = -EOPNOTSUPP;
	if (!o->hooks.feed_alloc)
		return NULL;
	*err = -ENOMEM;
	f = tdbp_alloc(sizeof(*f));
	if (!f)
		return NULL;
	f->size = (size_t)TDB_RING_HDR_SIZE + data_size;
	/* zeroed, mappable; the home counts it against its memory limit */
	f->mem = o->hooks.feed_alloc(o->hooks.arg, f->size, &f->cookie);
	if (!f->mem) {
		tdbp_free(f);
		return NULL;
	}
	f->o = o;
	tdbo_ref_init(&f->refs, 1);
	*err = feed_format(f, data_size);
	if (*err) {             /* cannot happen: the limits checked it */
		if (o->hooks.feed_free)
			o->hooks.feed_free(o->hooks.arg, f->mem, f->size,
					   f->cookie);
		tdbp_free(f);
		return NULL;
	}
	tdbp_mutex_lock(o->reg_lock);
	f->slot = slot_pick(o);
	tdbo_list_add(&f->onode, &o->feeds);
	tdbp_mutex_unlock(o->reg_lock);
	*err = 0;
	return f;
}

void tdbo_feed_put(struct tdbo_feed *f)
{
	struct tdbo_owner *o;

	if (!f || !tdbo_ref_put(&f->refs))
		return;
	o = f->o;
	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_del(&f->onode);
	tdbp_mutex_unlock(o->reg_lock);
	if (o->hooks.feed_free)
		o->hooks.feed_free(o->hooks.arg, f->mem, f->size, f->cookie);
	tdbp_free(f);
}

void *tdbo_feed_mem(struct tdbo_feed *f)
{
	return f->mem;
}

size_t tdbo_feed_size(const struct tdbo_feed *f)
{
	return f->size;
}

uint64_t tdbo_feed_slot(const struct tdbo_feed *f)
{
	return f->slot;
}

void *tdbo_feed_cookie(const struct tdbo_feed *f)
{
	return f->cookie;
}

/* Walks every watch of the client: a mapping is made once per watch, and
 * its cost is the mapper's (bounded by max-watches). */
struct tdbo_feed *tdbo_feed_get(struct tdbo_client *c, uint64_t slot)
{
	struct tdbo_feed *f = NULL;
	struct tdbo_watch *w;
	unsigned int i;

	tdbp_mutex_lock(c->lock);
	for (i = 0; i < c->nwbuckets && !f; i++) {
		for (w = c->wbuckets[i]; w; w = w->next) {
			if (w->f->slot == slot) {
				f = w->f;
				tdbo_ref_get(&f->refs);
				break;
			}
		}
	}
	tdbp_mutex_unlock(c->lock);
	return f;
}

/* Copy a finished message in: the core retires the oldest messages
 * first (moving `tail`, a full barrier before their bytes are
 * overwritten) and stamps it with the feed's next sequence number.
 * False if it is over max_msg: watchers miss it (a message says so). */
static bool feed_send(struct tdbo_feed *f, const void *msg, uint32_t len)
{
	if (len > f->r.max_msg) {
		tdbp_log_rl(&f->o->rl[TDBO_RL_FEEDS], TDBP_LOG_WARNING,
			    "a change of %u bytes does not fit in a feed of "
			    "%u bytes (feed-size too small): watchers miss it",
			    len, f->r.data_size);
		return false;
	}
	return tdb_ring_put_msg(&f->r, msg) == 0;
}

static void feed_publish(struct tdbo_feed *f)
{
	tdb_ring_publish(&f->r);
}

/* --- changes -------------------------------------------------------------- */

void tdbo_notify(struct tdbo_owner *o, struct tdbo_table *t, uint8_t cmd,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 uint64_t version, uint64_t deadline, uint32_t reason)
{
	struct tdb_proto_msg m;
	long len;

	if (!t->feed && (!tdb_load_relaxed(&o->on_change) ||
			 (o->change_wanted &&
			  !o->change_wanted(o->change_arg))))
		return;                 /* nobody listens */
	memset(&m, 0, sizeof(m));
	m.cmd = cmd;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE);
	m.table = t->name;
	m.table_len = (uint32_t)tdbo_strlen(t->name);
	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (uint32_t)klen;
	}
	if (cmd == TDB_CMD_PUT) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		m.value = val;
		m.value_len = (uint32_t)vlen;
	}
	tdbo_set_version(&m, version);
	tdbo_set_deadline(&m, deadline);
	if (reason) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_REASON);
		m.reason = reason;
	}
	tdbp_mutex_lock(o->nlock);
	m.seq = o->change_seq;
	len = tdb_proto_build(o->nbuf, TDB_PROTO_MSG_MAX, TDB_PROTO_ANSWER, &m,
			      NULL);
	if (len < 0) {
		tdbp_mutex_unlock(o->nlock);
		tdbp_log_rl(&o->rl[TDBO_RL_FEEDS], TDBP_LOG_WARNING,
			    "table %s: cannot build a change notification "
			    "(%ld)", t->name, len);
		return;
	}
	o->change_seq++;
	if (t->feed && feed_send(t->feed, o->nbuf, (uint32_t)len))
		t->feed_dirty = true;
	if (o->on_change)
		o->on_change(o->change_arg, o->nbuf, (size_t)len);
	tdbp_mutex_unlock(o->nlock);
}

/* Under t->wlock.  Each client is woken at most once per flush, however
 * many of its watches of t saw the changes (c->woken records the
 * flush). */
void tdbo_feed_flush(struct tdbo_table *t)
{
	struct tdbo_watch *w;
	uint64_t gen;

	if (!t->feed_dirty)
		return;
	t->feed_dirty = false;
	if (!t->feed)
		return;
	feed_publish(t->feed);
	gen = tdb_fetch_add(&t->o->flush_gen, 1) + 1;
	tdbo_list_for_each(w, &t->watches, tnode) {
		if (!w->c->wake || tdb_load_relaxed(&w->c->woken) == gen)
			continue;
		tdb_store_relaxed(&w->c->woken, gen);
		w->c->wake(w->c->arg);
	}
}

void tdbo_table_feed_release(struct tdbo_table *t)
{
	tdbo_feed_put(t->feed);
	t->feed = NULL;
}

/* --- a client's watches ------------------------------------------------- */

static uint64_t watch_hash(const struct tdbo_client *c, const char *name,
			   const void *prefix, uint32_t plen)
{
	uint64_t h = tdbp_hash64(name, tdbo_strlen(name), c->wseed);

	return plen ? tdbp_hash64(prefix, plen, h) : h;
}

static struct tdbo_watch **watch_chain(struct tdbo_client *c, uint64_t hash)
{
	return &c->wbuckets[hash & (c->nwbuckets - 1)];
}

/* The newest watch of the table named m->table with m's prefix (t: of
 * that table only; NULL: of a table dropped since, too); *prev: the link
 * to it.  On the client's thread. */
static struct tdbo_watch *find_watch(struct tdbo_client *c,
				     const struct tdbo_table *t,
				     const struct tdb_proto_msg *m,
				     struct tdbo_watch ***prev)
{
	const char *name = t ? t->name : m->table;
	struct tdbo_watch **pp;
	uint64_t hash;

	if (!c->nwatches)
		return NULL;
	hash = watch_hash(c, name, m->prefix, m->prefix_len);
	for (pp = watch_chain(c, hash); *pp; pp = &(*pp)->next) {
		struct tdbo_watch *w = *pp;

		if (w->hash != hash || (t && w->t != t) ||
		    w->plen != m->prefix_len ||
		    (w->plen && memcmp(w->prefix, m->prefix, w->plen)) ||
		    !tdbo_streq(w->t->name, name))
			continue;
		*prev = pp;
		return w;
	}
	return NULL;
}

/* Room in the hash for one more watch: twice the buckets when it holds
 * as many watches as buckets, so chains stay short.  The first one draws
 * the client's seed: no one can pick names that share a chain. */
static int watch_grow(struct tdbo_client *c)
{
	unsigned int n = c->nwbuckets ? c->nwbuckets * 2 : 16, i;
	struct tdbo_watch **v, **old;

	if (c->nwatches < c->nwbuckets)
		return 0;
	if (n < c->nwbuckets)
		return -ENOMEM;
	/* Charged to the client's memory cgroup: the client decides. */
	v = tdbo_alloc_array(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (!c->nwbuckets)
		c->wseed = tdbp_random_u64();
	tdbp_mutex_lock(c->lock);
	for (i = 0; i < c->nwbuckets; i++) {
		while (c->wbuckets[i]) {
			struct tdbo_watch *w = c->wbuckets[i];

			c->wbuckets[i] = w->next;
			w->next = v[w->hash & (n - 1)];
			v[w->hash & (n - 1)] = w;
		}
	}
	old = c->wbuckets;
	c->wbuckets = v;
	c->nwbuckets = n;
	tdbp_mutex_unlock(c->lock);
	tdbp_free(old);
	return 0;
}

static void watch_uncharge(struct tdbo_client *c)
{
	tdbo_quota_uncharge(c->o, c->uid, TDBO_Q_WATCHES, 1);
}

/* May c have one more watch?  max-watches bounds the memory, feed
 * references and time one client's watches cost, the quota those of a
 * uid's clients (-EDQUOT) and of all (-ENOSPC).  On 0 the new watch is
 * charged: watch_uncharge() if it is not made after all. */
static int watch_room(struct tdbo_client *c, struct tdb_proto_extack *ext)
{
	uint32_t max = tdbo_lim(c->o, max_watches);
	int err;

	if (max && c->nwatches >= max) {
		ext->msg = "too many watches on this connection "
			   "(max-watches)";
		return -EMFILE;
	}
	err = tdbo_quota_charge(c->o, c->uid, c->uid, TDBO_Q_WATCHES, 1,
				&ext->msg);
	if (err)
		return err;
	err = watch_grow(c);
	if (err)
		watch_uncharge(c);
	return err;
}

/* --- WATCH, UNWATCH ------------------------------------------------------- */

/* Under wlock: hook w (holding the resolve's table reference) to t and
 * its feed, made now if nobody watched t. */
static int watch_attach(struct tdbo_client *c, struct tdbo_table *t,
			struct tdbo_watch *w, struct tdb_proto_extack *ext)
{
	int err;

	if (t->dropped) {
		ext->msg = "no such table";
		return -ENOENT;
	}
	if (!t->feed) {
		t->feed = feed_new(c->o, &err);
		if (!t->feed) {
			ext->msg = "cannot make the table's change feed";
			return err;
		}
	}
	w->c = c;
	w->t = t;
	w->f = t->feed;
	tdbo_ref_get(&w->f->refs);
	tdbo_list_add_tail(&w->tnode, &t->watches);
	t->nwatch++;
	return 0;
}

int tdbo_watch(struct tdbo_client *c, const struct tdb_proto_msg *m,
	       struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_watch *w, **pp;
	struct tdbo_table *t;
	int err = 0;

	if (!c->may_watch) {
		ext->msg = "over generic netlink, join the multicast group "
			   "\"changes\" instead";
		return -EOPNOTSUPP;
	}
	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (find_watch(c, t, m, &pp)) {
		ext->msg = "already watching this table with this prefix";
		err = -EEXIST;
	} else {
		err = watch_room(c, ext);
	}
	/* Charged to the client's memory cgroup: the client decides. */
	w = err ? NULL : tdbp_alloc(sizeof(*w) + m->prefix_len);
	if (!err && !w) {
		watch_uncharge(c);
		err = -ENOMEM;
	}
	if (err) {
		tdbo_table_put(t);
		return err;
	}
	w->plen = m->prefix_len;
	if (w->plen)
		memcpy(w->prefix, m->prefix, w->plen);
	w->hash = watch_hash(c, t->name, w->prefix, w->plen);
	tdbp_mutex_lock(t->wlock);
	err = watch_attach(c, t, w, ext);
	if (!err)
		res->feed_seq = w->f->r.seq;    /* the first change it sees */
	tdbp_mutex_unlock(t->wlock);
	if (err) {
		tdbp_free(w);
		watch_uncharge(c);
		tdbo_table_put(t);
		return err;
	}
	/* At the head of its chain: UNWATCH by name finds the newest. */
	pp = watch_chain(c, w->hash);
	tdbp_mutex_lock(c->lock);
	w->next = *pp;
	*pp = w;
	tdbp_mutex_unlock(c->lock);
	c->nwatches++;
	tdbo_inc(&o->watches);
	res->feed = w->f;
	return 0;
}

/* Unlink (pp: the link to it) and free a watch of c; the last watch of
 * a table retires its feed. */
static void watch_free(struct tdbo_client *c, struct tdbo_watch **pp)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_watch *w = *pp;
	struct tdbo_table *t = w->t;

	tdbp_mutex_lock(c->lock);
	*pp = w->next;
	tdbp_mutex_unlock(c->lock);
	tdbp_mutex_lock(t->wlock);
	tdbo_list_del(&w->tnode);
	if (!--t->nwatch)
		tdbo_table_feed_release(t);     /* NULL since a drop */
	tdbp_mutex_unlock(t->wlock);
	tdbo_feed_put(w->f);
	tdbo_table_put(t);
	tdbp_free(w);
	c->nwatches--;
	tdbo_dec(&o->watches);
	watch_uncharge(c);
}

/* UNWATCH names the table; the watch may be of a table dropped since
 * (the name then free or another table's): look in the client's own
 * watches, by name, not in the registry. */
int tdbo_unwatch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext)
{
	struct tdbo_watch **pp;

	if (!find_watch(c, NULL, m, &pp)) {
		ext->msg = "not watching this table with this prefix";
		return -ENOENT;
	}
	watch_free(c, pp);
	return 0;
}

unsigned int tdbo_watches_drop(struct tdbo_client *c)
{
	unsigned int i, n = c->nwatches;
	struct tdbo_watch **v;

	for (i = 0; i < c->nwbuckets; i++)
		while (c->wbuckets[i])
			watch_free(c, &c->wbuckets[i]);
	tdbp_mutex_lock(c->lock);
	v = c->wbuckets;
	c->wbuckets = NULL;
	c->nwbuckets = 0;
	tdbp_mutex_unlock(c->lock);
	tdbp_free(v);
	return n;
}
