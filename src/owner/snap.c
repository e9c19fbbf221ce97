// SPDX-License-Identifier: GPL-2.0-only
/*
 * snap.c - the snapshots of snapshot scans (SCAN with SCAN_FLAGS
 * TDB_SCAN_SNAPSHOT), as tdbd's src/daemon/tables.c keeps them (tdbd.h,
 * "snapshots"): the table as it was when the owner took the request,
 * without copying it.
 *
 *  - The scan registers a snapshot on its table under o->wlock, so it
 *    sits between two changes.
 *  - Every change to a key of a table with snapshots (PUT, DEL, each op
 *    of a committed transaction) calls tdbo_snap_save() under wlock
 *    BEFORE it is applied: each snapshot that does not have the key yet
 *    keeps its pre-image (absent, or present and its value).  The first
 *    change wins, so the pre-image is the key's state at snapshot time.
 *  - The scan walks the live table with an engine cursor and asks
 *    tdbo_snap_check() about each record: unchanged keys go out as they
 *    are, changed ones as their pre-image (or not at all: absent then).
 *  - After the walk (tdbo_snap_freeze) tdbo_snap_next_left() gives the
 *    present pre-images the walk did not send (keys deleted before it
 *    got there).
 *
 * Invariants:
 *  - A pre-image saved for a key at or before the walk's position (the
 *    cursor's order, tdbe_key_order) is marked sent at once: the walk
 *    already sent that key, unchanged.  Every entry is sent at most once,
 *    so each key of the snapshot goes out exactly once.
 *  - A snapshot is on its table's list (t->snaps, under wlock) from its
 *    scan's start to its end or the table's drop (a dropped table does
 *    not change any more).  Its map is changed under its own mutex (lock
 *    order wlock -> s->lock), by writers and by its scan; entries are
 *    freed only with the snapshot, so the key and value pointers the scan
 *    hands out stay valid without the mutex until tdbo_snap_free().
 *  - Writers never fail because of a snapshot: one that would grow past
 *    max_snapshot_mb, or cannot get memory, stops taking changes and
 *    fails its scan (the first error sticks).
 *  - The scan's dump holds a reference to the table (d->t) for the
 *    snapshot's whole life, so s->t needs none of its own.
 */

#include "internal.h"

/* One key changed since the snapshot: its state at snapshot time. */
struct snap_ent {
	struct snap_ent *next;  /* hash chain */
	uint64_t hash;
	uint32_t klen, vlen;
	bool present;           /* the key existed at snapshot time */
	bool sent;              /* sent, or must not be (the walk passed
				 * the key while it was unchanged) */
	unsigned char data[];   /* key, then the value it had */
};

struct tdbo_snap {
	struct tdbo_snap *next;         /* t->snaps, under wlock */
	struct tdbo_table *t;               /* the dump's reference */
	bool registered;                /* under wlock: on t->snaps */
	struct tdbp_mutex *lock;        /* everything below */
	struct snap_ent **buckets;      /* kvcalloc'd, power of two */
	size_t nbuckets, nents;
	uint64_t bytes, max_bytes;
	unsigned char *prefix;
	uint32_t plen;
	bool frozen;            /* the walk is over: no more changes taken */
	int err;                /* the snapshot broke: its scan fails */
	const char *msg;        /* static: transports keep the pointer */
	size_t at;              /* after the freeze: the bucket walked, */
	struct snap_ent *cur;   /* and the next entry in it */
	uint32_t pos_len;            /* the last key the walk looked up (0: none) */
	unsigned char pos[TDBE_KEY_MAX];
};

#define SNAP_BUCKETS_MIN 64u

static uint64_t snap_hash(const void *key, size_t klen)
{
	return tdbp_hash64(key, klen, 0);
}

static bool snap_wants(const struct tdbo_snap *s, const void *key,
		       size_t klen)
{
	return !s->plen || (klen >= s->plen &&
			    !memcmp(key, s->prefix, s->plen));
}

struct tdbo_snap *tdbo_snap_new(struct tdbo_table *t, const void *prefix,
				size_t plen)
{
	struct tdbo_snap *s = tdbp_alloc(sizeof(*s));

	if (!s)
		return NULL;
	if (plen) {
		s->prefix = tdbo_memdup(prefix, plen);
		if (!s->prefix) {
			tdbp_free(s);
			return NULL;
		}
	}
	s->plen = (uint32_t)plen;
	s->lock = tdbp_mutex_create();
	if (!s->lock) {
		tdbp_free(s->prefix);
		tdbp_free(s);
		return NULL;
	}
	s->max_bytes = tdbo_lim(t->o, max_snapshot_bytes);
	s->t = t;
	if (!t->dropped) {      /* a dropped table changes no more */
		s->next = t->snaps;
		t->snaps = s;
		s->registered = true;
	}
	return s;
}

void tdbo_snap_free(struct tdbo_owner *o, struct tdbo_snap *s)
{
	struct tdbo_snap **pp;
	size_t i;

	if (!s)
		return;
	tdbp_mutex_lock(o->wlock);
	if (s->registered) {
		for (pp = &s->t->snaps; *pp && *pp != s; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = s->next;
		s->registered = false;
	}
	tdbp_mutex_unlock(o->wlock);
	for (i = 0; i < s->nbuckets; i++) {
		struct snap_ent *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			tdbp_free(e);
		}
	}
	tdbp_free(s->buckets);
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

/* Under s->lock. */
static struct snap_ent *snap_find(const struct tdbo_snap *s, uint64_t h,
				  const void *key, size_t klen)
{
	struct snap_ent *e;

	if (!s->nbuckets)
		return NULL;
	for (e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && e->klen == klen &&
		    !memcmp(e->data, key, klen))
			return e;
	return NULL;
}

/* Under s->lock: the first failure sticks; the writers go on. */
static void snap_fail(struct tdbo_snap *s, int err)
{
	if (s->err)
		return;
	s->err = err;
	if (err == -ENOBUFS)
		s->msg = "snapshot grew past max-snapshot-bytes (old values of "
			 "keys changed during the scan); raise it or dump "
			 "when fewer writes run";
	else
		s->msg = "snapshot failed: cannot keep the old value of a "
			 "changed key";
	tdbp_log(TDBP_LOG_WARNING, "table %s: a snapshot scan fails (%d): "
		 "%s (%llu bytes kept, bound %llu)", s->t->name, err, s->msg,
		 (unsigned long long)s->bytes,
		 (unsigned long long)s->max_bytes);
}

/* Under s->lock: room for one more entry (the table doubles at load 1). */
static int snap_grow(struct tdbo_snap *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : SNAP_BUCKETS_MIN, i;
	struct snap_ent **b;
	uint64_t add;

	if (s->nents < s->nbuckets)
		return 0;
	add = (uint64_t)(n - s->nbuckets) * sizeof(*b);
	if (s->bytes + add > s->max_bytes)
		return -ENOBUFS;
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
	s->bytes += add;
	return 0;
}

/* Under wlock (the key's value cannot change meanwhile). */
static void snap_save_one(struct tdbo_table *t, struct tdbo_snap *s,
			  const void *key, size_t klen)
{
	uint64_t h = snap_hash(key, klen);
	size_t need = 0, vlen = 0;
	struct snap_ent *e;
	bool present;
	long n;
	int err;

	tdbp_mutex_lock(s->lock);
	if (s->frozen || s->err || snap_find(s, h, key, klen))
		goto out;
	n = tdbe_get(t->t, key, klen, NULL, 0, &need);
	if (n < 0 && n != -ENOENT && n != -ENOBUFS) {
		snap_fail(s, (int)n);
		goto out;
	}
	present = n != -ENOENT;
	if (n == -ENOBUFS)
		vlen = need;
	if (s->bytes + sizeof(*e) + klen + vlen > s->max_bytes) {
		snap_fail(s, -ENOBUFS);
		goto out;
	}
	err = snap_grow(s);
	if (err) {
		snap_fail(s, err);
		goto out;
	}
	e = tdbp_alloc(sizeof(*e) + klen + vlen);
	if (!e) {
		snap_fail(s, -ENOMEM);
		goto out;
	}
	memcpy(e->data, key, klen);
	if (vlen) {
		n = tdbe_get(t->t, key, klen, e->data + klen, vlen, &need);
		if (n != (long)vlen) {
			tdbp_free(e);
			snap_fail(s, n < 0 ? (int)n : -EIO);
			goto out;
		}
	}
	e->hash = h;
	e->klen = (uint32_t)klen;
	e->vlen = (uint32_t)vlen;
	e->present = present;
	/* A key at or before the walk's position went out unchanged (it was
	 * present since the snapshot, so the walk returned it). */
	e->sent = s->pos_len && tdbe_key_order(t->t, key, klen, s->pos,
					       s->pos_len) <= 0;
	e->next = s->buckets[h & (s->nbuckets - 1)];
	s->buckets[h & (s->nbuckets - 1)] = e;
	s->nents++;
	s->bytes += sizeof(*e) + klen + vlen;
out:
	tdbp_mutex_unlock(s->lock);
}

void tdbo_snap_save(struct tdbo_table *t, const void *key, size_t klen)
{
	struct tdbo_snap *s;

	for (s = t->snaps; s; s = s->next)
		if (snap_wants(s, key, klen))
			snap_save_one(t, s, key, klen);
}

int tdbo_snap_check(struct tdbo_snap *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, const char **msg)
{
	uint64_t h = snap_hash(key, klen);
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
	if (e->sent || !e->present) {
		e->sent = true;
		rc = 0;
		goto out;
	}
	e->sent = true;
	*val = e->data + e->klen;
	*vlen = e->vlen;
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

int tdbo_snap_next_left(struct tdbo_snap *s, const void **key, size_t *klen,
			const void **val, size_t *vlen, const char **msg)
{
	unsigned int seen = 0;
	int rc = 0;

	tdbp_mutex_lock(s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
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
		if (e->sent || !e->present)
			continue;
		e->sent = true;
		*key = e->data;
		*klen = e->klen;
		*val = e->data + e->klen;
		*vlen = e->vlen;
		rc = 1;
		goto out;
	}
out:
	tdbp_mutex_unlock(s->lock);
	return rc;
}
