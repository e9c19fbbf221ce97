// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner_feed.c - change feeds: the TDB_RING_FEED ring of a watched table
 * (include/tdb/ring.h, "FEED rings"), WATCH and UNWATCH, and telling
 * every change to the feed and to the on_change hook (genl multicast).
 *
 * As in tdbd (src/daemon/tables.c): one feed per table, made at its
 * first WATCH and written while anyone watches, until the table is
 * dropped (its last message is TABLE_DROP).  The feed carries every
 * change to the table; a watch's PREFIX is the client's filter (libtdb
 * applies it), recorded here only so that UNWATCH names the same watch.
 *
 * Invariants:
 *  - One producer: only the holder of o->wlock writes a feed.  Its
 *    indices, sequence number and message boundaries are private
 *    (struct tdbk_feed); nothing is ever read back from the shared
 *    memory, which watchers map read-only.
 *  - Before bytes of older messages are overwritten, `tail` is moved
 *    past them (about 1/16 of the ring at a time) with a full barrier.
 *  - Feed memory lives while referenced: by its table until the drop,
 *    by each watch, and by each mapping (tdbk_feed_get); the last
 *    tdbk_feed_put() frees it and its mmap slot.
 *  - Watchers are woken (c->wake) after the feed is published, under
 *    o->wlock (so the client cannot go away meanwhile) but under no
 *    spinlock: wake() must not wait for the owner.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "owner_int.h"
#include "transport.h"
#include "tdb/kdev.h"

/*
 * Watches one client may hold at once: the module parameter max_watches
 * (owner_quota.c; tdbd's max-watches).  Each costs a struct (and a
 * linear find_watch, paid by the client that holds them); the bound
 * keeps a client from growing them without limit.
 */

/* --- the ring ------------------------------------------------------------- */

static struct tdbk_feed *feed_new(struct tdbk_owner *o, int *err)
{
	struct tdbk_feed *f = kzalloc(sizeof(*f), GFP_KERNEL);
	struct tdb_ring_hdr *h;
	int slot;

	*err = -ENOMEM;
	if (!f)
		return NULL;
	slot = ida_alloc_range(&o->slots, 2, INT_MAX, GFP_KERNEL);
	if (slot < 0) {
		*err = slot;
		kfree(f);
		return NULL;
	}
	f->slot = (u64)slot;
	f->size = (size_t)TDB_RING_HDR_SIZE + o->lim.feed_size;
	/* Counted in max_memory_mb with the tables' extents. */
	if (!tdbk_mem_charge(f->size)) {
		ida_free(&o->slots, slot);
		kfree(f);
		return NULL;
	}
	f->mem = vmalloc_user(f->size);         /* zeroed */
	if (!f->mem) {
		tdbk_mem_uncharge(f->size);
		ida_free(&o->slots, slot);
		kfree(f);
		return NULL;
	}
	f->o = o;
	f->hdr = f->mem;
	f->data = (unsigned char *)f->mem + TDB_RING_HDR_SIZE;
	f->data_size = o->lim.feed_size;
	f->mask = f->data_size - 1;
	f->max_msg = (f->data_size / 2) & ~3u;
	refcount_set(&f->refs, 1);
	h = f->hdr;
	h->version = TDB_RING_VERSION;
	h->kind = TDB_RING_FEED;
	h->hdr_size = TDB_RING_HDR_SIZE;
	h->data_size = f->data_size;
	h->max_msg = f->max_msg;
	smp_store_release(&h->magic, TDB_RING_MAGIC);
	*err = 0;
	return f;
}

void tdbk_feed_put(struct tdbk_feed *f)
{
	if (!f || !refcount_dec_and_test(&f->refs))
		return;
	vfree(f->mem);
	tdbk_mem_uncharge(f->size);
	ida_free(&f->o->slots, (int)f->slot);
	kfree(f);
}

void *tdbk_feed_mem(struct tdbk_feed *f)
{
	return f->mem;
}

size_t tdbk_feed_size(const struct tdbk_feed *f)
{
	return f->size;
}

struct tdbk_feed *tdbk_feed_get(struct tdbk_client *c, u64 slot)
{
	struct tdbk_feed *f = NULL;
	struct kwatch *w;

	spin_lock(&c->lock);
	list_for_each_entry(w, &c->watches, cnode) {
		if (w->f->slot == slot) {
			f = w->f;
			refcount_inc(&f->refs);
			break;
		}
	}
	spin_unlock(&c->lock);
	return f;
}

/* Remember where a message starts, at most one per 1/64 of the ring
 * (enough to retire 1/16 at a time; the list stays short). */
static void bound_push(struct tdbk_feed *f, u64 start)
{
	unsigned int n = TDBK_FEED_BOUNDS;

	if (f->bcount) {
		u64 last = f->bound[(f->bhead + f->bcount - 1) % n];

		if (start - last < f->data_size / 64)
			return;
	}
	if (f->bcount == n) {           /* cannot happen; stay bounded */
		f->bhead = (f->bhead + 1) % n;
		f->bcount--;
	}
	f->bound[(f->bhead + f->bcount) % n] = start;
	f->bcount++;
}

/* Retire the oldest messages until [tail, end) fits, and then some. */
static void feed_make_room(struct tdbk_feed *f, u64 end)
{
	u64 t = f->tail;

	if (end - t <= f->data_size)
		return;
	while (end - t > f->data_size - f->data_size / 16) {
		u64 b;

		if (!f->bcount) {
			t = f->pos;     /* everything before us goes */
			break;
		}
		b = f->bound[f->bhead];
		f->bhead = (f->bhead + 1) % TDBK_FEED_BOUNDS;
		f->bcount--;
		if (b > t)
			t = b;
	}
	f->tail = t;
	smp_store_release(&f->hdr->tail, t);
	smp_mb();       /* the tail is seen before the bytes we overwrite */
}

/* Room for len bytes (<= max_msg) at the producer's position. */
static void *feed_reserve(struct tdbk_feed *f, u32 len)
{
	u32 need = NLMSG_ALIGN(len);
	u32 off = (u32)(f->pos & f->mask), rem = f->data_size - off;
	u32 pad = need > rem ? rem : 0;

	feed_make_room(f, f->pos + pad + need);
	if (pad) {
		if (pad >= NLMSG_HDRLEN) {
			struct nlmsghdr *noop = (void *)(f->data + off);

			memset(noop, 0, NLMSG_HDRLEN);
			noop->nlmsg_len = pad;
			noop->nlmsg_type = NLMSG_NOOP;
		}
		f->pos += pad;
	}
	return f->data + (f->pos & f->mask);
}

/* Copy a finished message in, stamped with the feed's next sequence
 * number.  False if it is over max_msg: watchers miss it (as in tdbd). */
static bool feed_send(struct tdbk_feed *f, const void *msg, u32 len)
{
	struct nlmsghdr *nlh;

	if (len > f->max_msg) {
		pr_warn_ratelimited("a change of %u bytes does not fit in a "
				    "feed of %u bytes (feed_size too small): "
				    "watchers miss it\n", len, f->data_size);
		return false;
	}
	nlh = feed_reserve(f, len);
	memcpy(nlh, msg, len);
	nlh->nlmsg_len = len;
	nlh->nlmsg_seq = f->seq++;
	bound_push(f, f->pos);
	f->pos += NLMSG_ALIGN(len);
	return true;
}

static void feed_publish(struct tdbk_feed *f)
{
	if (f->pos == f->published)
		return;
	smp_store_release(&f->hdr->prod, f->pos);
	f->published = f->pos;
	smp_mb();
	WRITE_ONCE(f->hdr->futex, ++f->futex);
}

/* --- changes -------------------------------------------------------------- */

void tdbk_notify(struct tdbk_owner *o, struct ktable *t, u8 cmd,
		 const void *key, size_t klen, const void *val, size_t vlen)
{
	struct tdb_proto_msg m;
	long len;

	memset(&m, 0, sizeof(m));
	m.cmd = cmd;
	m.seq = o->change_seq;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE);
	m.table = t->name;
	m.table_len = (u32)strlen(t->name);
	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (u32)klen;
	}
	if (cmd == TDB_CMD_PUT) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		m.value = val;
		m.value_len = (u32)vlen;
	}
	len = tdb_proto_build(o->nbuf, TDB_PROTO_MSG_MAX, TDB_PROTO_ANSWER, &m,
			      NULL);
	if (len < 0) {
		pr_warn_ratelimited("table %s: cannot build a change "
				    "notification (%ld)\n", t->name, len);
		return;
	}
	o->change_seq++;
	if (t->feed && (t->nwatch || cmd == TDB_CMD_TABLE_DROP) &&
	    feed_send(t->feed, o->nbuf, (u32)len) && list_empty(&t->dirty))
		list_add_tail(&t->dirty, &o->dirty);
	if (o->on_change)
		o->on_change(o->change_arg, o->nbuf, (size_t)len);
}

/* Under wlock.  Each client is woken at most once per flush, however
 * many of its watches saw the changes (c->woken records the flush). */
void tdbk_feeds_flush(struct tdbk_owner *o)
{
	struct ktable *t, *n;
	struct kwatch *w;
	u64 gen;

	if (list_empty(&o->dirty))
		return;
	gen = ++o->flush_gen;
	list_for_each_entry_safe(t, n, &o->dirty, dirty) {
		list_del_init(&t->dirty);
		if (!t->feed)
			continue;
		feed_publish(t->feed);
		list_for_each_entry(w, &t->watches, tnode) {
			if (!w->c->wake || w->c->woken == gen)
				continue;
			w->c->woken = gen;
			w->c->wake(w->c->arg);
		}
	}
}

void tdbk_table_feed_release(struct ktable *t)
{
	tdbk_feed_put(t->feed);
	t->feed = NULL;
}

/* --- WATCH, UNWATCH ------------------------------------------------------- */

/* The client's watch of t (or, t NULL, of a table named m->table) with
 * m's prefix.  Under c->lock or on the client's thread. */
static struct kwatch *find_watch(struct tdbk_client *c, const struct ktable *t,
				 const struct tdb_proto_msg *m)
{
	struct kwatch *w;

	list_for_each_entry(w, &c->watches, cnode) {
		if (t ? w->t != t : strcmp(w->t->name, m->table) != 0)
			continue;
		if (w->plen == m->prefix_len &&
		    (!w->plen || !memcmp(w->prefix, m->prefix, w->plen)))
			return w;
	}
	return NULL;
}

/* Under wlock: hook w (holding the resolve's table reference) to t. */
static int watch_attach(struct tdbk_client *c, struct ktable *t,
			struct kwatch *w, struct tdb_proto_extack *ext)
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
	refcount_inc(&w->f->refs);
	list_add_tail(&w->tnode, &t->watches);
	t->nwatch++;
	spin_lock(&c->lock);
	list_add_tail(&w->cnode, &c->watches);
	spin_unlock(&c->lock);
	return 0;
}

static void set_cookie(struct tdb_proto_extack *ext, u32 seq, u64 slot)
{
	u64 off = slot * TDB_DEV_SLOT;
	struct tdb_dev_watch_cookie ck = {
		.seq = seq,
		.offset_lo = (u32)off,
		.offset_hi = (u32)(off >> 32),
	};

	BUILD_BUG_ON(sizeof(ck) > TDB_PROTO_COOKIE_MAX);
	memcpy(ext->cookie, &ck, sizeof(ck));
	ext->cookie_len = sizeof(ck);
}

int tdbk_watch(struct tdbk_client *c, const struct tdb_proto_msg *m,
	       struct tdb_proto_extack *ext)
{
	struct tdbk_owner *o = c->o;
	struct kwatch *w;
	struct ktable *t;
	u32 seq = 0;
	u64 slot = 0;
	int err = 0;

	if (!c->may_watch) {
		ext->msg = "over generic netlink, join the multicast group "
			   "\"changes\" instead";
		return -EOPNOTSUPP;
	}
	t = tdbk_resolve(c, m, TDBK_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (find_watch(c, t, m)) {
		ext->msg = "already watching this table with this prefix";
		tdbk_table_put(t);
		return -EEXIST;
	}
	if (c->nwatches >= tdbk_max_watches()) {
		ext->msg = "too many watches on this client (the module "
			   "parameter max_watches)";
		tdbk_table_put(t);
		return -EMFILE;
	}
	/* Charged to the client's memory cgroup: the client decides. */
	w = kzalloc(sizeof(*w) + m->prefix_len, GFP_KERNEL_ACCOUNT);
	if (!w) {
		tdbk_table_put(t);
		return -ENOMEM;
	}
	w->plen = m->prefix_len;
	if (w->plen)
		memcpy(w->prefix, m->prefix, w->plen);
	mutex_lock(&o->wlock);
	err = watch_attach(c, t, w, ext);
	if (!err) {
		seq = w->f->seq;        /* the first change it will see */
		slot = w->f->slot;
	}
	mutex_unlock(&o->wlock);
	if (err) {
		kfree(w);
		tdbk_table_put(t);
		return err;
	}
	c->nwatches++;
	atomic_inc(&o->watches);
	set_cookie(ext, seq, slot);
	return 0;
}

/* Unhook and free one watch of the client's. */
static void watch_free(struct tdbk_client *c, struct kwatch *w)
{
	struct tdbk_owner *o = c->o;

	mutex_lock(&o->wlock);
	list_del(&w->tnode);
	w->t->nwatch--;
	spin_lock(&c->lock);
	list_del(&w->cnode);
	spin_unlock(&c->lock);
	mutex_unlock(&o->wlock);
	tdbk_feed_put(w->f);
	tdbk_table_put(w->t);
	kfree(w);
	c->nwatches--;
	atomic_dec(&o->watches);
}

/* UNWATCH names the table; the watch may be of a table dropped since
 * (the name then free or another table's): look in the client's own
 * watches, not in the registry. */
int tdbk_unwatch(struct tdbk_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext)
{
	struct kwatch *w = find_watch(c, NULL, m);

	if (!w) {
		ext->msg = "not watching this table with this prefix";
		return -ENOENT;
	}
	watch_free(c, w);
	return 0;
}

unsigned int tdbk_watches_drop(struct tdbk_client *c)
{
	unsigned int n = 0;

	while (!list_empty(&c->watches)) {
		watch_free(c, list_first_entry(&c->watches, struct kwatch,
					       cnode));
		n++;
	}
	return n;
}
