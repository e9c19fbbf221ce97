// SPDX-License-Identifier: GPL-2.0-only
/*
 * cursor.c - whole-table cursors that survive concurrent writers.
 *
 * A cursor remembers the (hash, key) of the last record it returned and
 * asks the index for the least record after it (tdbi_next).  Records are
 * totally ordered by (hash, key), and a key that stays present keeps its
 * place in that order, so each such key is returned exactly once however
 * the trie is rebuilt between calls.  Nothing is held between calls.
 *
 * tdbe_cursor_next_many takes many records in one read-side section
 * (tdbi_next_many: whole buckets, one descent and one hash per record
 * instead of one descent and a bucket's hashes per record) and copies
 * them one after the other into the buffer; the bound is then the last
 * record copied.  Walking a big table this way is several times faster
 * (tdbd's checkpoints collect keys with it).
 */
#include "internal.h"

struct tdbe_cursor {
	struct tdbe_table *table;
	unsigned char *buf;        /* key then value of the current record */
	size_t cap;
	struct tdb_key bound;      /* bound.data points into buf */
	bool started, done;
	struct tdbi_hit *hits;     /* next_many's, TDBE_CURSOR_MANY of them */
	uint64_t *bkt;             /* and its bucket list, as many */
};

struct tdbe_cursor *tdbe_cursor_open(struct tdbe_table *t, int *err)
{
	struct tdbe_cursor *c = tdbp_alloc(sizeof(*c));

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	tdb_fetch_add(&t->refs, 1);
	c->table = t;
	return c;
}

void tdbe_cursor_close(struct tdbe_cursor *c)
{
	if (!c)
		return;
	tdbe_table_close(c->table);
	tdbp_free(c->buf);
	tdbp_free(c->hits);
	tdbp_free(c->bkt);
	tdbp_free(c);
}

static int grow(struct tdbe_cursor *c, size_t need)
{
	size_t cap = c->cap ? c->cap : 256;
	unsigned char *n;

	while (cap < need)
		cap *= 2;
	n = tdbp_alloc(cap);
	if (!n)
		return -ENOMEM;
	if (c->started)     /* keep the bound (next_many's is not at 0) */
		memcpy(n, c->bound.data, c->bound.len);
	tdbp_free(c->buf);
	c->buf = n;
	c->cap = cap;
	c->bound.data = n;
	return 0;
}

int tdbe_cursor_next(struct tdbe_cursor *c, const void **key, size_t *klen,
		     const void **val, size_t *vlen)
{
	return tdbe_cursor_next_ver(c, key, klen, val, vlen, NULL);
}

int tdbe_cursor_next_ver(struct tdbe_cursor *c, const void **key,
			 size_t *klen, const void **val, size_t *vlen,
			 uint64_t *version)
{
	const struct tdb_map *m = &c->table->map;

	if (c->done)
		return 0;
	for (;;) {
		const struct tdb_rec *r;
		uint64_t rec, hash;
		size_t need;
		int err;

		tdbp_rcu_read_lock();
		rec = tdbi_next(m, c->started ? &c->bound : NULL, &hash);
		if (!rec) {
			tdbp_rcu_read_unlock();
			c->done = true;
			return 0;
		}
		r = tdb_ptr(m, rec);
		need = (size_t)r->klen + r->vlen;
		if (need <= c->cap) {
			memcpy(c->buf, r->data, need);
			c->bound.len = r->klen;
			c->bound.hash = hash;
			c->bound.data = c->buf;
			c->started = true;
			if (version)
				*version = r->version;
			tdbp_rcu_read_unlock();
			*key = c->buf;
			*klen = c->bound.len;
			*val = c->buf + c->bound.len;
			*vlen = need - c->bound.len;
			return 1;
		}
		tdbp_rcu_read_unlock();
		/* Too big for the buffer: grow it and look again (the record
		 * may have changed meanwhile; the bound has not). */
		err = grow(c, need);
		if (err)
			return err;
	}
}

/* Copy hits[0, n) into the buffer while they fit; returns how many. */
static unsigned int copy_many(struct tdbe_cursor *c, const struct tdbi_hit *h,
			      unsigned int n, struct tdbe_cursor_rec *out,
			      unsigned int flags, size_t *need)
{
	const struct tdb_map *m = &c->table->map;
	size_t at = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct tdb_rec *r = tdb_ptr(m, h[i].rec);
		size_t len = r->klen;

		if (!(flags & TDBE_CURSOR_KEYS))
			len += r->vlen;
		if (len > c->cap - at) {
			*need = len;
			break;
		}
		memcpy(c->buf + at, r->data, len);
		out[i].key = c->buf + at;
		out[i].klen = r->klen;
		out[i].vlen = r->vlen;
		out[i].version = r->version;
		out[i].val = flags & TDBE_CURSOR_KEYS ? NULL :
			     c->buf + at + r->klen;
		c->bound.data = c->buf + at;
		c->bound.len = r->klen;
		c->bound.hash = h[i].hash;
		c->started = true;
		at += len;
	}
	return i;
}

int tdbe_cursor_next_many(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
			  unsigned int max, unsigned int flags)
{
	const struct tdb_map *m = &c->table->map;

	if (c->done || !max)
		return 0;
	if (max > TDBE_CURSOR_MANY)
		max = TDBE_CURSOR_MANY;
	if (!c->hits) {
		c->hits = tdbp_alloc(sizeof(*c->hits) * TDBE_CURSOR_MANY);
		c->bkt = tdbp_alloc(sizeof(*c->bkt) * TDBE_CURSOR_MANY);
		if (!c->hits || !c->bkt) {
			tdbp_free(c->hits);
			tdbp_free(c->bkt);
			c->hits = NULL;
			c->bkt = NULL;
			return -ENOMEM;
		}
	}
	if (c->cap < 16384 && grow(c, 16384))
		return -ENOMEM;
	for (;;) {
		unsigned int n, got;
		size_t need = 0;
		int err;

		tdbp_rcu_read_lock();
		n = tdbi_next_many(m, c->started ? &c->bound : NULL, c->hits,
				   c->bkt, max);
		if (!n) {
			tdbp_rcu_read_unlock();
			c->done = true;
			return 0;
		}
		got = copy_many(c, c->hits, n, out, flags, &need);
		tdbp_rcu_read_unlock();
		if (got)
			return (int)got;
		/* The first record does not fit: grow and look again, as
		 * tdbe_cursor_next does. */
		err = grow(c, need);
		if (err)
			return err;
	}
}

int tdbe_cursor_seek(struct tdbe_cursor *c, const void *key, size_t klen)
{
	int err;

	if (!klen || klen > TDBE_KEY_MAX)
		return klen ? -E2BIG : -EINVAL;
	if (klen > c->cap) {
		c->started = false;     /* nothing worth keeping in buf */
		err = grow(c, klen);
		if (err)
			return err;
	}
	memcpy(c->buf, key, klen);
	c->bound.data = c->buf;
	c->bound.len = klen;
	c->bound.hash = tdbp_hash64(key, klen,
				    tdb_hdr(&c->table->map)->seed);
	c->started = true;
	c->done = false;
	return 0;
}

int tdbe_key_order(const struct tdbe_table *t, const void *a, size_t alen,
		   const void *b, size_t blen)
{
	uint64_t seed = tdb_hdr(&t->map)->seed;

	return tdbi_key_cmp(tdbp_hash64(a, alen, seed), a, alen,
			    tdbp_hash64(b, blen, seed), b, blen);
}
