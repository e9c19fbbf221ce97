// SPDX-License-Identifier: GPL-2.0-only
/*
 * snap.c - the snapshots of snapshot scans (SCAN with SCAN_FLAGS
 * TDB_SCAN_SNAPSHOT): the table as it was when the owner took the
 * request, without copying it, in both homes (their limits: the
 * max-snapshot-* keys of src/owner/limtable.h; docs/ARCHITECTURE.md,
 * "Snapshot scans").
 *
 *  - The scan registers a snapshot on its table under t->wlock, so it
 *    sits between two changes.
 *  - Every change to a key of a table with snapshots (PUT, DEL, each op
 *    of a committed transaction) calls tdbo_snap_save() under wlock
 *    BEFORE it is applied: each snapshot that wants the key (its PREFIX)
 *    and does not have it yet gets an entry for it.  The first change
 *    wins, so the entry holds the key's state at snapshot time.
 *  - The scan walks the live table with an engine cursor and asks
 *    tdbo_snap_check() about each record: unchanged keys go out as they
 *    are, changed ones as their pre-image (or not at all: absent then).
 *  - After the walk (tdbo_snap_freeze) tdbo_snap_next_left() gives the
 *    present pre-images the walk did not send (keys deleted before it
 *    got there).
 *  - An ordered table's snapshot scan comes out in the walk's order
 *    (key order, or reverse): such pre-images are not left for the end
 *    but merged into the walk.  Every entry that may need sending (its
 *    key ahead of the walk, present at snapshot time) also goes into a
 *    min-heap in the walk's order (tdbe_cursor_order); before the scan
 *    sends the walk's next key K it asks tdbo_snap_before() for the
 *    entries before K: the walk has passed them without returning them,
 *    so they are keys deleted before it got there, and go out first.
 *    An entry made for a key before K after that has an absent
 *    pre-image (the key was absent at snapshot time, or the walk would
 *    have returned it), so it is never sent.  After the walk the heap
 *    is drained in order.
 *  - A snapshot of a range (SCAN with FROM, TO or a PREFIX on an ordered
 *    table) takes only the changes to keys in it.
 *
 * "wlock" below is the snapshot's table's t->wlock.
 *
 * Invariants:
 *  - One copy per change: the key's old state (absent, or present and
 *    its value) is a struct snap_pre made by the first snapshot that
 *    needs it and shared by every other snapshot of the table that
 *    needs it for the same change, so the time under wlock does not grow
 *    with value size x snapshots.  A pre-image is counted (atomically:
 *    snapshots end in different threads) by the entries pointing to it,
 *    plus one held by the change while it is being saved, and freed with
 *    the last.
 *  - A key at or before the walk's position (the walk's order,
 *    tdbe_cursor_order: hash order, key order or its reverse) already
 *    went out unchanged (present since the snapshot, so the walk
 *    returned it): its entry is marked sent at once and points to no
 *    pre-image (nothing copied for it).  Every entry is sent at most
 *    once, so each key of the snapshot goes out exactly once.
 *  - Memory: every byte a snapshot holds is charged to its owner (the
 *    scanning client's uid, given to tdbo_snap_new) through quota.c,
 *    TDBO_Q_SNAP_BYTES (max_snapshot_memory_per_uid, root exempt): its
 *    entries and buckets to it, a pre-image once, to the owner of the
 *    snapshot that made it, until the pre-image is freed.
 *    o->snap_mem is the sum of every charge (snap_charge/snap_uncharge
 *    only), at most max_snapshot_memory: a charge adds first and looks
 *    after (taking it back if that passed the bound), so changes to
 *    different tables, which run in parallel, cannot both slip under
 *    it; uncharges (a snapshot ends, in any thread) only lower it.
 *    One snapshot references at most max_snapshot_bytes (read when it
 *    starts): its entries, buckets and the pre-images they point to,
 *    shared ones included.  0 is "no limit" for all three.
 *  - Writers never fail because of a snapshot: one whose next entry
 *    would pass a bound (-ENOBUFS), or that cannot get memory (-ENOMEM),
 *    stops taking changes and fails its scan with a message naming the
 *    bound and the key (tdbd's texts).  The first error sticks; a failed
 *    snapshot keeps what it holds until it is freed.
 *  - A snapshot is on its table's list (t->snaps, under t->wlock) from its
 *    scan's start to its end or the table's drop (a dropped table does
 *    not change any more).  Its map is changed under its own mutex (lock
 *    order t->wlock -> s->lock -> quota lock), by writers and its scan;
 *    entries are freed only with the snapshot, so the key, value and
 *    message pointers the scan hands out stay valid without the mutex
 *    until tdbo_snap_free().
 *  - The scan's dump holds a reference to the table (d->t) for the
 *    snapshot's whole life, so s->t needs none of its own.
 */

#include "internal.h"

/*
 * A key's state at snapshot time, shared by every snapshot that needs
 * it for one change.
 */
struct snap_pre {
	uint32_t refs;          /* atomic: entries; +1 while being saved */
	uint32_t uid;           /* charged to (snap_charge) ... */
	uint64_t charged;       /* ... this many bytes */
	uint32_t vlen;
	bool present;           /* the key existed at snapshot time */
	uint64_t version;       /* the version it had */
	uint64_t deadline;      /* and deadline (0: none): an image whose
				 * deadline passed is not sent */
	unsigned char val[];    /* the value it had */
};

/* One key changed since the snapshot, in one snapshot's map. */
struct snap_ent {
	struct snap_ent *next;  /* hash chain */
	uint64_t hash;
	struct snap_pre *pre;   /* counted; NULL if sent when saved (the walk
				 * had passed the key: no old value needed) */
	uint32_t klen;
	bool sent;              /* sent, or must not be (the walk passed the
				 * key while it was unchanged) */
	unsigned char key[];
};

struct tdbo_snap {
	struct tdbo_snap *next;         /* t->snaps, under wlock */
	struct tdbo_table *t;           /* the dump's reference */
	struct tdbo_owner *o;
	uint32_t uid;                   /* owner: the scanning client's */
	bool registered;                /* under wlock: on t->snaps */
	struct tdbp_mutex *lock;        /* everything below */
	struct snap_ent **buckets;      /* power of two, or none */
	size_t nbuckets, nents;
	/* bytes: its entries, buckets and the pre-images they point to
	 * (shared ones too), bounded by max_bytes (max_snapshot_bytes);
	 * charged: its entries and buckets, charged to uid */
	uint64_t bytes, max_bytes, charged;
	unsigned char *prefix;
	uint32_t plen;
	bool ranged;            /* only keys in range (its bounds' bytes in
				 * rbuf) */
	struct tdbe_range range;
	unsigned char *rbuf;
	/* an ordered table's: the walk's cursor (its order), and the
	 * entries that may still be sent, a min-heap in that order */
	const struct tdbe_cursor *walk;
	bool ordered;
	struct snap_ent **heap;
	size_t nheap, heapcap;
	bool frozen;            /* the walk is over: no more changes taken */
	int err;                /* the snapshot broke: its scan fails */
	char msg[TDB_PROTO_EXTACK_MAX + 1];     /* why (err), for the scan */
	size_t at;              /* after the freeze: the bucket walked, */
	struct snap_ent *cur;   /* and the next entry in it */
	uint32_t pos_len;       /* the last key the walk looked up (0: none) */
	unsigned char pos[TDBE_KEY_MAX];
};

#define SNAP_BUCKETS_MIN 64u

/* snap_charge's refusal for the bound of all snapshots. */
static const char snap_all_bound[] = "max-snapshot-memory";

/* --- memory ------------------------------------------------------------- */

/*
 * Charge n bytes to uid: against max_snapshot_memory (all snapshots, no
 * reserve: tdbd's rule) and the uid's max_snapshot_memory_per_uid
 * (quota.c).  Under wlock.  0, or -ENOBUFS (a bound; *why names it) or
 * -ENOMEM.
 */
static int snap_charge(struct tdbo_owner *o, uint32_t uid, uint64_t n,
		       const char **why)
{
	uint64_t max = tdbo_lim(o, max_snapshot_memory);
	uint64_t used;
	int err;

	/* tables change in parallel: take it first, then look */
	used = tdb_fetch_add(&o->snap_mem, n) + n;
	if (max && (n > max || used > max)) {
		tdbo_sub(&o->snap_mem, n);
		*why = snap_all_bound;
		return -ENOBUFS;
	}
	err = tdbo_quota_charge(o, uid, uid, TDBO_Q_SNAP_BYTES, n, why);
	if (err) {
		tdbo_sub(&o->snap_mem, n);
		return err == -ENOMEM ? -ENOMEM : -ENOBUFS;
	}
	return 0;
}

static void snap_uncharge(struct tdbo_owner *o, uint32_t uid, uint64_t n)
{
	if (!n)
		return;
	tdbo_quota_uncharge(o, uid, TDBO_Q_SNAP_BYTES, n);
	tdbo_sub(&o->snap_mem, n);
}

uint64_t tdbo_snap_mem(struct tdbo_owner *o)
{
	return tdb_load_relaxed(&o->snap_mem);
}

static void pre_put(struct tdbo_owner *o, struct snap_pre *p)
{
	if (p && tdbo_ref_put(&p->refs)) {
		snap_uncharge(o, p->uid, p->charged);
		tdbp_free(p);
	}
}

static size_t pre_size(size_t vlen)
{
	return sizeof(struct snap_pre) + vlen;
}

/* --- messages (no snprintf on platform.h) -------------------------------- */

struct mbuf {
	char *p;
	size_t len, cap;        /* cap >= 1; p[len] is always 0 */
};

static void mb_puts(struct mbuf *b, const char *s)
{
	while (*s && b->len + 1 < b->cap)
		b->p[b->len++] = *s++;
	b->p[b->len] = 0;
}

static void mb_u64(struct mbuf *b, uint64_t v)
{
	char d[24];
	int i = (int)sizeof(d) - 1;

	d[i] = 0;
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	mb_puts(b, d + i);
}

/*
 * A key as a message may show it (tdbd's key_show): printable ASCII, the
 * rest as \xNN, cut with "..." (keys come from clients; the log prints
 * this too).
 */
static void key_show(char *out, size_t size, const void *key, size_t klen)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *k = key;
	size_t i, o = 0;

	for (i = 0; i < klen && o + 8 < size; i++) {
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '\\' &&
		    k[i] != '\'') {
			out[o++] = (char)k[i];
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[k[i] >> 4];
		out[o++] = hex[k[i] & 15];
	}
	if (i < klen) {
		out[o++] = '.';
		out[o++] = '.';
		out[o++] = '.';
	}
	out[o] = 0;
}

/* --- one change ------------------------------------------------------------ */

/* A change to one key, as the snapshots of its table take it. */
struct snap_change {
	struct tdbo_table *t;
	const void *key;
	size_t klen;
	uint64_t hash;
	int probed;             /* 0 not yet, 1 done, or its error */
	bool present;           /* the key's state before the change */
	size_t vlen;
	uint64_t version, deadline;
	struct snap_pre *pre;   /* made by the first snapshot needing it */
};

/*
 * Under s->lock: the first failure sticks; the writers go on.  why: the
 * bound a charge hit (NULL: max-snapshot-bytes, for -ENOBUFS).
 */
static void snap_fail(struct tdbo_snap *s, int err, const char *why,
		      const struct snap_change *ch)
{
	struct mbuf b = { s->msg, 0, sizeof(s->msg) };
	char k[44];

	if (s->err)
		return;
	s->err = err;
	key_show(k, sizeof(k), ch->key, ch->klen);
	if (err == -ENOBUFS && !why) {
		mb_puts(&b, "snapshot grew past max-snapshot-bytes (");
		mb_u64(&b, s->max_bytes);
		mb_puts(&b, " bytes of old values of keys changed during the "
			"scan) at key '");
		mb_puts(&b, k);
		mb_puts(&b, "'; raise it or dump when fewer writes run");
	} else if (err == -ENOBUFS && why == snap_all_bound) {
		mb_puts(&b, "snapshot stopped at key '");
		mb_puts(&b, k);
		mb_puts(&b, "': all snapshot scans together would pass "
			"max-snapshot-memory (");
		mb_u64(&b, tdbo_lim(s->o, max_snapshot_memory));
		mb_puts(&b, " bytes); raise it or dump when fewer writes "
			"run");
	} else if (err == -ENOBUFS) {
		mb_puts(&b, "snapshot stopped at key '");
		mb_puts(&b, k);
		mb_puts(&b, "': ");
		mb_puts(&b, why);
	} else {
		mb_puts(&b, "snapshot failed at key '");
		mb_puts(&b, k);
		mb_puts(&b, "': cannot keep the old value of a changed key: ");
		mb_puts(&b, tdbe_strerror(err));
	}
	tdbp_log_rl(&s->t->o->rl[TDBO_RL_SNAPS], TDBP_LOG_WARNING,
		    "table %s: a snapshot scan fails: %s", s->t->name, s->msg);
}

/* Bytes the buckets grow by at the next insert (the map doubles at
 * load 1). */
static uint64_t snap_grow_add(const struct tdbo_snap *s)
{
	if (s->nents < s->nbuckets)
		return 0;
	return (uint64_t)(s->nbuckets ? s->nbuckets : SNAP_BUCKETS_MIN) *
	       sizeof(*s->buckets);
}

/* Under s->lock: room for one more entry. */
static int snap_grow(struct tdbo_snap *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : SNAP_BUCKETS_MIN, i;
	struct snap_ent **b;

	if (s->nents < s->nbuckets)
		return 0;
	b = tdbo_alloc_array(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < s->nbuckets; i++) {
		struct snap_ent *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	tdbp_free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
	return 0;
}

/* Under wlock: the key's state before the change; looked up once. */
static int change_probe(struct snap_change *ch)
{
	size_t need = 0;
	long n;

	if (ch->probed)
		return ch->probed < 0 ? ch->probed : 0;
	n = tdbe_get_ex(ch->t->t, ch->key, ch->klen, NULL, 0, &need,
			&ch->version, &ch->deadline);
	if (n < 0 && n != -ENOENT && n != -ENOBUFS) {
		ch->probed = (int)n;
		return (int)n;
	}
	ch->present = n != -ENOENT;
	ch->vlen = n == -ENOBUFS ? need : 0;
	ch->probed = 1;
	return 0;
}

/* Under wlock: the shared pre-image; the first snapshot that needs it
 * makes it (the one copy of the change) and its owner is charged. */
static int pre_get(struct tdbo_snap *s, struct snap_change *ch,
		   const char **why)
{
	size_t size = pre_size(ch->vlen), need = 0;
	struct snap_pre *p;
	long n = 0;
	int err;

	if (ch->pre)
		return 0;
	err = snap_charge(s->o, s->uid, size, why);
	if (err)
		return err;
	p = tdbp_alloc(size);
	if (p && ch->vlen)
		n = tdbe_get(ch->t->t, ch->key, ch->klen, p->val, ch->vlen,
			     &need);
	if (!p || n != (long)ch->vlen) {
		tdbp_free(p);
		snap_uncharge(s->o, s->uid, size);
		return !p ? -ENOMEM : n < 0 ? (int)n : -EIO;
	}
	tdbo_ref_init(&p->refs, 1);     /* the change's: tdbo_snap_save's */
	p->uid = s->uid;
	p->charged = size;
	p->vlen = (uint32_t)ch->vlen;
	p->present = ch->present;
	p->version = ch->version;
	p->deadline = ch->deadline;
	ch->pre = p;
	return 0;
}

/* --- the heap of an ordered table's snapshot (walk order) ----------------- */

static int heap_cmp(const struct tdbo_snap *s, const struct snap_ent *a,
		    const struct snap_ent *b)
{
	return tdbe_cursor_order(s->walk, a->key, a->klen, b->key, b->klen);
}

/* Under s->lock, with room (heapcap > nheap). */
static void heap_push(struct tdbo_snap *s, struct snap_ent *e)
{
	size_t i = s->nheap++;

	while (i) {
		size_t up = (i - 1) / 2;

		if (heap_cmp(s, s->heap[up], e) <= 0)
			break;
		s->heap[i] = s->heap[up];
		i = up;
	}
	s->heap[i] = e;
}

static struct snap_ent *heap_pop(struct tdbo_snap *s)
{
	struct snap_ent *top = s->heap[0], *last = s->heap[--s->nheap];
	size_t i = 0, n = s->nheap;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && heap_cmp(s, s->heap[c + 1], s->heap[c]) < 0)
			c++;
		if (heap_cmp(s, last, s->heap[c]) <= 0)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
	return top;
}

/* Bytes the heap grows by to take one more (it doubles). */
static uint64_t heap_grow_add(const struct tdbo_snap *s)
{
	if (s->nheap < s->heapcap)
		return 0;
	return (uint64_t)(s->heapcap ? s->heapcap : SNAP_BUCKETS_MIN) *
	       sizeof(*s->heap);
}

static int heap_grow(struct tdbo_snap *s)
{
	size_t n = s->heapcap ? s->heapcap * 2 : SNAP_BUCKETS_MIN;
	struct snap_ent **h;

	if (s->nheap < s->heapcap)
		return 0;
	h = tdbo_alloc_array(n, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (s->nheap)
		memcpy(h, s->heap, s->nheap * sizeof(*h));
	tdbp_free(s->heap);
	s->heap = h;
	s->heapcap = n;
	return 0;
}

/* Under s->lock. */
static struct snap_ent *snap_find(const struct tdbo_snap *s, uint64_t h,
				  const void *key, size_t klen)
{
	struct snap_ent *e;

	if (!s->nbuckets)
		return NULL;
	for (e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && e->klen == klen &&
		    !memcmp(e->key, key, klen))
			return e;
	return NULL;
}

/* Does the entry for this change go into the heap?  An ordered table's,
 * its key ahead of the walk and present at snapshot time: it may have
 * to be sent (the change has been probed). */
static bool snap_heaped(const struct tdbo_snap *s,
			const struct snap_change *ch, bool sent)
{
	return s->ordered && !sent && ch->present;
}

/* Under s->lock: the entry, counted in bytes and charged. */
static void snap_insert(struct tdbo_snap *s, struct snap_change *ch,
			struct snap_ent *e, bool sent, uint64_t ent)
{
	memcpy(e->key, ch->key, ch->klen);
	e->hash = ch->hash;
	e->klen = (uint32_t)ch->klen;
	e->sent = sent;
	e->pre = sent ? NULL : ch->pre;
	if (e->pre)
		tdbo_ref_get(&e->pre->refs);
	e->next = s->buckets[ch->hash & (s->nbuckets - 1)];
	s->buckets[ch->hash & (s->nbuckets - 1)] = e;
	if (snap_heaped(s, ch, sent))
		heap_push(s, e);        /* snap_take made room */
	s->nents++;
	s->bytes += ent + (sent ? 0 : pre_size(ch->vlen));
	s->charged += ent;
}

/* The walk's order of two keys (a reverse range's walk runs
 * backwards): the cursor's; any thread may ask it (it reads what
 * tdbe_cursor_range set before the snapshot was registered). */
static int snap_order(const struct tdbo_snap *s, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	return tdbe_cursor_order(s->walk, a, alen, b, blen);
}

/*
 * Under wlock and s->lock, for a key s does not have yet: its entry,
 * pointing to the shared pre-image, or to none if the walk already
 * passed the key.  Its entry and buckets are charged to its owner; on
 * failure the snapshot fails (snap_fail) and nothing more is charged.
 */
static void snap_take(struct tdbo_snap *s, struct snap_change *ch)
{
	const char *why = NULL;
	bool sent = s->pos_len && snap_order(s, ch->key, ch->klen, s->pos,
					     s->pos_len) <= 0;
	uint64_t add = snap_grow_add(s), hadd;
	uint64_t ent = sizeof(struct snap_ent) + ch->klen;
	struct snap_ent *e;
	int err;

	if (!sent) {
		err = change_probe(ch);
		if (err) {
			snap_fail(s, err, NULL, ch);
			return;
		}
	}
	hadd = snap_heaped(s, ch, sent) ? heap_grow_add(s) : 0;
	add += hadd;
	if (s->bytes + add + ent + (sent ? 0 : pre_size(ch->vlen)) >
	    s->max_bytes) {
		snap_fail(s, -ENOBUFS, NULL, ch);
		return;
	}
	err = snap_charge(s->o, s->uid, add + ent, &why);
	if (err) {
		snap_fail(s, err, why, ch);
		return;
	}
	err = add - hadd ? snap_grow(s) : 0;
	if (!err && hadd)
		err = heap_grow(s);
	if (err) {
		snap_uncharge(s->o, s->uid, add + ent);
		snap_fail(s, err, NULL, ch);
		return;
	}
	s->bytes += add;
	s->charged += add;
	err = sent ? 0 : pre_get(s, ch, &why);
	e = err ? NULL : tdbp_alloc(sizeof(*e) + ch->klen);
	if (!e) {
		snap_uncharge(s->o, s->uid, ent);
		snap_fail(s, err ? err : -ENOMEM, why, ch);
		return;
	}
	snap_insert(s, ch, e, sent, ent);
}

void tdbo_snap_save(struct tdbo_table *t, const void *key, size_t klen)
{
	struct snap_change ch = { .t = t, .key = key, .klen = klen };
	struct tdbo_snap *s;

	if (!t->snaps)
		return;
	ch.hash = tdbp_hash64(key, klen, 0);
	for (s = t->snaps; s; s = s->next) {
		if (s->plen && (klen < s->plen ||
				memcmp(key, s->prefix, s->plen)))
			continue;
		if (s->ranged && !tdbo_range_has(&s->range, key, klen))
			continue;
		tdbp_mutex_lock(s->lock);
		if (!s->frozen && !s->err &&
		    !snap_find(s, ch.hash, key, klen))
			snap_take(s, &ch);
		tdbp_mutex_unlock(s->lock);
	}
	pre_put(t->o, ch.pre);          /* the change's own reference */
}

/* --- a snapshot's life -------------------------------------------------- */

struct tdbo_snap *tdbo_snap_new(struct tdbo_table *t, uint32_t uid,
				const void *prefix, size_t plen,
				const struct tdbe_range *r,
				const struct tdbe_cursor *cur)
{
	struct tdbo_snap *s = tdbp_alloc(sizeof(*s));
	uint64_t max = tdbo_lim(t->o, max_snapshot_bytes);

	if (!s)
		return NULL;
	if (plen) {
		s->prefix = tdbo_memdup(prefix, plen);
		if (!s->prefix)
			goto fail;
	}
	s->plen = (uint32_t)plen;
	if (r) {
		s->rbuf = tdbp_alloc(r->from_len + r->to_len + 1);
		if (!s->rbuf)
			goto fail;
		s->range = *r;
		if (r->from) {
			memcpy(s->rbuf, r->from, r->from_len);
			s->range.from = s->rbuf;
		}
		if (r->to) {
			memcpy(s->rbuf + r->from_len, r->to, r->to_len);
			s->range.to = s->rbuf + r->from_len;
		}
		s->ranged = true;
	}
	s->walk = cur;
	s->ordered = tdbe_table_ordered(t->t);
	s->lock = tdbp_mutex_create();
	if (!s->lock)
		goto fail;
	s->max_bytes = max ? max : ~(uint64_t)0;
	s->t = t;
	s->o = t->o;
	s->uid = uid;
	if (!t->dropped) {      /* a dropped table changes no more */
		s->next = t->snaps;
		t->snaps = s;
		s->registered = true;
	}
	return s;
fail:
	tdbp_free(s->rbuf);
	tdbp_free(s->prefix);
	tdbp_free(s);
	return NULL;
}

void tdbo_snap_free(struct tdbo_owner *o, struct tdbo_snap *s)
{
	struct tdbo_snap **pp;
	size_t i;

	if (!s)
		return;
	tdbp_mutex_lock(s->t->wlock);
	if (s->registered) {
		for (pp = &s->t->snaps; *pp && *pp != s; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = s->next;
		s->registered = false;
	}
	tdbp_mutex_unlock(s->t->wlock);
	for (i = 0; i < s->nbuckets; i++) {
		struct snap_ent *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			pre_put(o, e->pre);
			tdbp_free(e);
		}
		if (!(i & 1023))
			tdbp_cond_resched();    /* millions of entries */
	}
	snap_uncharge(o, s->uid, s->charged);
	tdbp_free(s->buckets);
	tdbp_free(s->heap);
	tdbp_free(s->rbuf);
	tdbp_free(s->prefix);
	tdbp_mutex_destroy(s->lock);
	tdbp_free(s);
}

void tdbo_snap_detach_all(struct tdbo_table *t)
{
	struct tdbo_snap *s;

	for (s = t->snaps; s; s = s->next)
		s->registered = false;
	t->snaps = NULL;
}

/* --- the scan ------------------------------------------------------------- */

/* A pre-image that is absent now: the key was absent at snapshot time,
 * or its deadline has passed since (never send an expired record). */
static bool pre_gone(const struct tdbo_snap *s, const struct snap_pre *p)
{
	return !p->present ||
	       (p->deadline && p->deadline <= tdbe_table_now_ms(s->t->t));
}

int tdbo_snap_check(struct tdbo_snap *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, uint64_t *version,
		    uint64_t *deadline, const char **msg)
{
	uint64_t h = tdbp_hash64(key, klen, 0);
	struct snap_ent *e;
	int rc = 1;

	if (!klen || klen > TDBE_KEY_MAX)       /* cannot happen */
		return -EIO;
	tdbp_mutex_lock(s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
		goto out;
	}
	/* From here on, a change saved for this key (or one before it)
	 * is marked sent: what goes out now is its snapshot state. */
	memcpy(s->pos, key, klen);
	s->pos_len = (uint32_t)klen;
	e = snap_find(s, h, key, klen);
	if (!e)
		goto out;               /* unchanged: the live value */
	if (e->sent || pre_gone(s, e->pre)) {
		e->sent = true;
		rc = 0;
		goto out;
	}
	e->sent = true;
	*val = e->pre->val;
	*vlen = e->pre->vlen;
	*version = e->pre->version;
	*deadline = e->pre->deadline;
out:
	tdbp_mutex_unlock(s->lock);
	return rc;
}

void tdbo_snap_freeze(struct tdbo_snap *s)
{
	tdbp_mutex_lock(s->lock);
	s->frozen = true;
	s->at = 0;
	s->cur = NULL;
	tdbp_mutex_unlock(s->lock);
}

/* Under s->lock: the next entry of the heap to send before key (all of
 * them with key NULL), marked sent; NULL if none. */
static struct snap_ent *heap_next(struct tdbo_snap *s, const void *key,
				  size_t klen)
{
	unsigned int seen = 0;

	while (s->nheap) {
		struct snap_ent *e = s->heap[0];

		if (key && snap_order(s, e->key, e->klen, key, klen) >= 0)
			return NULL;
		heap_pop(s);
		if (!(++seen & 1023))
			tdbp_cond_resched();
		if (e->sent || pre_gone(s, e->pre))
			continue;
		e->sent = true;
		return e;
	}
	return NULL;
}

static void ent_out(const struct snap_ent *e, const void **key,
		    size_t *klen, const void **val, size_t *vlen,
		    uint64_t *version, uint64_t *deadline)
{
	*key = e->key;
	*klen = e->klen;
	*val = e->pre->val;
	*vlen = e->pre->vlen;
	*version = e->pre->version;
	*deadline = e->pre->deadline;
}

int tdbo_snap_before(struct tdbo_snap *s, const void *key, size_t klen,
		     const void **k, size_t *kl, const void **val,
		     size_t *vlen, uint64_t *version, uint64_t *deadline,
		     const char **msg)
{
	struct snap_ent *e;
	int rc = 0;

	if (!s->ordered)
		return 0;
	tdbp_mutex_lock(s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
	} else if ((e = heap_next(s, key, klen)) != NULL) {
		ent_out(e, k, kl, val, vlen, version, deadline);
		rc = 1;
	}
	tdbp_mutex_unlock(s->lock);
	return rc;
}

int tdbo_snap_next_left(struct tdbo_snap *s, const void **key, size_t *klen,
			const void **val, size_t *vlen, uint64_t *version,
			uint64_t *deadline, const char **msg)
{
	unsigned int seen = 0;
	int rc = 0;

	tdbp_mutex_lock(s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
		goto out;
	}
	if (s->ordered) {       /* in the walk's order: the heap's */
		struct snap_ent *e = heap_next(s, NULL, 0);

		if (e) {
			ent_out(e, key, klen, val, vlen, version, deadline);
			rc = 1;
		}
		goto out;
	}
	for (;;) {
		struct snap_ent *e = s->cur;

		if (!(++seen & 1023))
			tdbp_cond_resched();    /* millions of sent entries */
		if (!e) {
			if (s->at >= s->nbuckets)
				goto out;
			s->cur = s->buckets[s->at++];
			continue;
		}
		s->cur = e->next;
		if (e->sent || pre_gone(s, e->pre))
			continue;
		e->sent = true;
		*key = e->key;
		*klen = e->klen;
		*val = e->pre->val;
		*vlen = e->pre->vlen;
		*version = e->pre->version;
		*deadline = e->pre->deadline;
		rc = 1;
		goto out;
	}
out:
	tdbp_mutex_unlock(s->lock);
	return rc;
}
