/*
 * cursor.c - whole-table cursors that survive concurrent writers.
 *
 * A cursor remembers the (hash, key) of the last record it returned and
 * asks the index for the least record after it (tdbi_next).  Records are
 * totally ordered by (hash, key), and a key that stays present keeps its
 * place in that order, so each such key is returned exactly once however
 * the trie is rebuilt between calls.  Nothing is held between calls.
 */
#include "internal.h"

struct tdbe_cursor {
	struct tdbe_table *table;
	unsigned char *buf;        /* key then value of the current record */
	size_t cap;
	struct tdb_key bound;      /* bound.data points into buf */
	bool started, done;
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
	if (c->started)
		memcpy(n, c->buf, c->bound.len);   /* keep the bound */
	tdbp_free(c->buf);
	c->buf = n;
	c->cap = cap;
	c->bound.data = n;
	return 0;
}

int tdbe_cursor_next(struct tdbe_cursor *c, const void **key, size_t *klen,
		     const void **val, size_t *vlen)
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
