// SPDX-License-Identifier: GPL-2.0-only
/*
 * cursor.c - whole-table cursors that survive concurrent writers.
 *
 * A cursor remembers the (hash, key) of the last record it returned and
 * asks the index for the least record after it (tdbi_next).  Records are
 * totally ordered by (hash, key), and a key that stays present keeps its
 * place in that order, so each such key is returned exactly once however
 * the index is rebuilt (a page split, the directory grown) between
 * calls.  Nothing is held between calls.
 *
 * tdbe_cursor_next_many takes many records in one read-side section
 * (tdbi_next_many: whole buckets, one descent and one hash per record
 * instead of one descent and a bucket's hashes per record) and copies
 * them one after the other into the buffer; the bound is then the last
 * record copied.  Walking a big table this way is several times faster
 * (tdbd's checkpoints collect keys with it).
 */
#include "internal.h"
#include "order_walk.h"

struct tdbe_cursor {
	struct tdbe_table *table;
	unsigned char *buf;        /* key then value of the current record */
	size_t cap;
	struct tdb_key bound;      /* bound.data points into buf */
	bool started, done;
	struct tdbi_hit *hits;     /* next_many's, TDBE_CURSOR_MANY of them */
	uint64_t *bkt;             /* and its bucket list, as many */
	/* ordered tables: the walk is in key order, within the range */
	bool ordered;
	struct tdbe_range range;   /* from/to point into rbuf */
	unsigned char *rbuf;
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
	c->ordered = tdbe_table_ordered(t);
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
	tdbp_free(c->rbuf);
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
	return tdbe_cursor_next_ex(c, key, klen, val, vlen, version, NULL);
}

int tdbe_cursor_next_ex(struct tdbe_cursor *c, const void **key,
			size_t *klen, const void **val, size_t *vlen,
			uint64_t *version, uint64_t *deadline)
{
	const struct tdb_map *m = &c->table->map;

	if (c->ordered) {
		struct tdbe_cursor_rec one;
		int n = tdbe_cursor_next_many(c, &one, 1, 0);

		if (n <= 0)
			return n;
		*key = one.key;
		*klen = one.klen;
		*val = one.val;
		*vlen = one.vlen;
		if (version)
			*version = one.version;
		if (deadline)
			*deadline = one.deadline;
		return 1;
	}
	if (c->done)
		return 0;
	for (;;) {
		const struct tdb_rec *r;
		uint64_t rec, hash;
		size_t need;
		bool dead;
		int err;

		tdbp_rcu_read_lock();
		rec = tdbi_next(m, c->started ? &c->bound : NULL, &hash);
		if (!rec) {
			tdbp_rcu_read_unlock();
			c->done = true;
			return 0;
		}
		r = tdb_ptr(m, rec);
		dead = tdb_rec_dead(c->table, r);
		/* an expired record is skipped: only its key, the bound */
		need = dead ? r->klen : (size_t)r->klen + r->vlen;
		if (need <= c->cap) {
			memcpy(c->buf, r->data, need);
			c->bound.len = r->klen;
			c->bound.hash = hash;
			c->bound.data = c->buf;
			c->started = true;
			if (dead) {
				tdbp_rcu_read_unlock();
				continue;
			}
			if (version)
				*version = tdb_rec_version(r);
			if (deadline)
				*deadline = tdb_rec_deadline(r);
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

/* Make h the cursor's bound, its key at buf + at (which must fit). */
static void bound_at(struct tdbe_cursor *c, const struct tdb_rec *r,
		     const struct tdbi_hit *h, size_t at)
{
	memcpy(c->buf + at, r->data, r->klen);
	c->bound.data = c->buf + at;
	c->bound.len = r->klen;
	c->bound.hash = h->hash;
	c->started = true;
}

/*
 * Copy hits[0, n) into the buffer while they fit: the live ones (or,
 * with want_dead, the expired ones at now, keys only) into out, *nout of
 * them; the cursor's bound moves past each one consumed.  Returns how
 * many were consumed (< n when one did not fit: *need is its size).
 */
static unsigned int copy_many(struct tdbe_cursor *c, const struct tdbi_hit *h,
			      unsigned int n, struct tdbe_cursor_rec *out,
			      unsigned int flags, bool want_dead,
			      uint64_t now, unsigned int *nout, size_t *need)
{
	const struct tdb_map *m = &c->table->map;
	size_t at = 0;
	unsigned int i, o = 0;

	for (i = 0; i < n; i++) {
		const struct tdb_rec *r = tdb_ptr(m, h[i].rec);
		bool dead = want_dead ? tdb_rec_expired(r, now) :
					tdb_rec_dead(c->table, r);
		bool take = dead == want_dead;
		size_t len = r->klen;

		if (take && !(flags & TDBE_CURSOR_KEYS))
			len += r->vlen;
		if (len > c->cap - at) {
			*need = len;
			break;
		}
		bound_at(c, r, &h[i], at);
		if (!take)
			continue;      /* its key stays only as the bound */
		memcpy(c->buf + at + r->klen, r->data + r->klen,
		       len - r->klen);
		out[o].key = c->buf + at;
		out[o].klen = r->klen;
		out[o].vlen = r->vlen;
		out[o].version = tdb_rec_version(r);
		out[o].deadline = tdb_rec_deadline(r);
		out[o].val = flags & TDBE_CURSOR_KEYS ? NULL :
			     c->buf + at + r->klen;
		o++;
		at += len;
	}
	*nout = o;
	return i;
}

static int many_bufs(struct tdbe_cursor *c)
{
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
	return 0;
}

/* --- ordered tables ------------------------------------------------------ */

/* Is the key of r past the range's end in the walk's direction? */
static bool ord_past_end(const struct tdbe_cursor *c, const struct tdb_rec *r)
{
	const struct tdbe_range *g = &c->range;
	int d;

	if (g->flags & TDBE_RANGE_REVERSE) {
		if (!g->from)
			return false;
		d = tdbb_key_cmp(r->data, r->klen, g->from, g->from_len);
		return d < 0 || (d == 0 && (g->flags & TDBE_RANGE_FROM_EXCL));
	}
	if (!g->to)
		return false;
	d = tdbb_key_cmp(r->data, r->klen, g->to, g->to_len);
	return d > 0 || (d == 0 && !(g->flags & TDBE_RANGE_TO_INCL));
}

/* A bound (tdbe_cursor_seek's key) before where the range starts, in
 * the walk's direction: the walk starts at the range's start. */
static bool bound_before_range(const struct tdbe_cursor *c)
{
	const struct tdbe_range *g = &c->range;

	if (g->flags & TDBE_RANGE_REVERSE)
		return g->to && tdbb_key_cmp(c->bound.data, c->bound.len,
					     g->to, g->to_len) > 0;
	return g->from && tdbb_key_cmp(c->bound.data, c->bound.len,
				       g->from, g->from_len) < 0;
}

/* Position w at the walk's next key: the range's first, or the first
 * past the bound in the walk's direction.  1 = at a key, 0 = none. */
static int ord_start(const struct tdbe_cursor *c, const struct tdbb_src *s,
		     struct tdbb_walk *w)
{
	uint64_t root = tdb_load_acquire(&tdb_hdr(&c->table->map)->oroot);
	const struct tdbe_range *g = &c->range;
	bool rev = g->flags & TDBE_RANGE_REVERSE;
	const void *k;
	size_t klen;
	bool upper;
	int err;

	if (c->started && !bound_before_range(c)) {
		k = c->bound.data;
		klen = c->bound.len;
		upper = !rev;             /* past the bound */
	} else if (rev) {
		k = g->to;
		klen = g->to_len;
		upper = g->flags & TDBE_RANGE_TO_INCL;
	} else {
		k = g->from;
		klen = g->from_len;
		upper = g->flags & TDBE_RANGE_FROM_EXCL;
	}
	if (!k && rev) {
		w->node[0] = root;
		err = tdbb_descend_edge(s, w, 0, true);
		if (err)
			return err;
		{
			const struct tdbb_node *l = tdbb_leaf(s, w);

			if (!l)
				return -EUCLEAN;
			w->pos[w->height - 1] = l->n;   /* past the last */
		}
		return tdbb_step_back(s, w);
	}
	err = tdbb_seek(s, root, k, klen, upper, w);
	if (err)
		return err;
	return rev ? tdbb_step_back(s, w) : tdbb_fix_fwd(s, w);
}

/* Up to max records of the walk from its place, in order and in the
 * range, into hits (hash unused); inside a read section. */
static unsigned int ord_collect(struct tdbe_cursor *c, struct tdbi_hit *hits,
				unsigned int max)
{
	const struct tdb_map *m = &c->table->map;
	struct tdbb_src s = {
		.ext = (const void *const *)m->ext,
		.nextents = 0,
	};
	bool rev = c->range.flags & TDBE_RANGE_REVERSE;
	struct tdbb_walk w;
	unsigned int n = 0;
	int at = ord_start(c, &s, &w), i;

	for (i = 0; at == 1 && i < TDBB_PREFETCH; i++)
		tdbb_prefetch(&s, &w, rev ? -i : i);
	while (at == 1 && n < max) {
		uint64_t rec = tdbi_entry_rec(tdbb_cur(&s, &w));
		const struct tdb_rec *r = tdb_ptr(m, rec);

		if (ord_past_end(c, r))
			break;
		/* a key not after the last one taken, in the walk's
		 * direction, was written during the walk (a separator that
		 * a delete moved lets a left neighbour take keys of the
		 * right one's old range; layout.h "ordered index"): skip
		 * it, the walk stays in strict order */
		if (n) {
			const struct tdb_rec *p = tdb_ptr(m, hits[n - 1].rec);
			int d = tdbb_key_cmp(r->data, r->klen, p->data,
					     p->klen);

			if (rev ? d >= 0 : d <= 0)
				goto step;
		}
		hits[n].rec = rec;
		hits[n].hash = 0;
		n++;
step:
		at = rev ? tdbb_step_back(&s, &w) : tdbb_step_fwd(&s, &w);
		if (at == 1)
			tdbb_prefetch(&s, &w, rev ? -(TDBB_PREFETCH - 1)
						  : TDBB_PREFETCH - 1);
	}
	return n;
}

static int copy_bound(unsigned char **dst, const void *src, size_t len)
{
	int err = !len || len > TDBE_KEY_MAX ? (len ? -E2BIG : -EINVAL) : 0;

	if (err)
		return err;
	memcpy(*dst, src, len);
	*dst += len;
	return 0;
}

int tdbe_cursor_range(struct tdbe_cursor *c, const struct tdbe_range *r)
{
	unsigned char *buf, *p;
	int err;

	if (!c->ordered)
		return -EOPNOTSUPP;
	if (r->flags & ~TDBE_RANGE_FLAGS_ALL)
		return -EINVAL;
	buf = tdbp_alloc((r->from ? r->from_len : 0) +
			 (r->to ? r->to_len : 0) + 1);
	if (!buf)
		return -ENOMEM;
	p = buf;
	err = r->from ? copy_bound(&p, r->from, r->from_len) : 0;
	if (!err && r->to)
		err = copy_bound(&p, r->to, r->to_len);
	if (err) {
		tdbp_free(buf);
		return err;
	}
	tdbp_free(c->rbuf);
	c->rbuf = buf;
	c->range = *r;
	c->range.from = r->from ? buf : NULL;
	c->range.to = r->to ? buf + (r->from ? r->from_len : 0) : NULL;
	tdbe_cursor_rewind(c);
	return 0;
}

int tdbe_cursor_order(const struct tdbe_cursor *c, const void *a,
		      size_t alen, const void *b, size_t blen)
{
	int d = tdbe_key_order(c->table, a, alen, b, blen);

	return c->range.flags & TDBE_RANGE_REVERSE ? -d : d;
}

/* One step of next_many (want_dead false) or of the sweep's walk (true):
 * how many records went into out; *visited how many were consumed, 0 at
 * the end. */
static int walk_many(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
		     unsigned int max, unsigned int flags, bool want_dead,
		     uint64_t now, unsigned int *visited)
{
	const struct tdb_map *m = &c->table->map;

	*visited = 0;
	if (c->done || !max)
		return 0;
	if (max > TDBE_CURSOR_MANY)
		max = TDBE_CURSOR_MANY;
	if (many_bufs(c))
		return -ENOMEM;
	for (;;) {
		unsigned int n, got, nout;
		size_t need = 0;
		int err;

		tdbp_rcu_read_lock();
		n = c->ordered ? ord_collect(c, c->hits, max) :
			tdbi_next_many(m, c->started ? &c->bound : NULL,
				       c->hits, c->bkt, max);
		if (!n) {
			tdbp_rcu_read_unlock();
			c->done = true;
			return 0;
		}
		got = copy_many(c, c->hits, n, out, flags, want_dead, now,
				&nout, &need);
		tdbp_rcu_read_unlock();
		*visited += got;
		if (nout || (got && want_dead))
			return (int)nout;
		if (got)
			continue;      /* all expired: skipped, go on */
		/* The first record does not fit: grow and look again, as
		 * tdbe_cursor_next does. */
		err = grow(c, need);
		if (err)
			return err;
	}
}

int tdbe_cursor_next_many(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
			  unsigned int max, unsigned int flags)
{
	unsigned int visited;

	return walk_many(c, out, max, flags, false, 0, &visited);
}

int tdbe_cursor_expired(struct tdbe_cursor *c, struct tdbe_cursor_rec *out,
			unsigned int max, uint64_t now_ms,
			unsigned int *visited)
{
	return walk_many(c, out, max, TDBE_CURSOR_KEYS, true, now_ms,
			 visited);
}

void tdbe_cursor_rewind(struct tdbe_cursor *c)
{
	c->started = false;
	c->done = false;
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

	if (tdbe_table_ordered(t))
		return tdbb_key_cmp(a, alen, b, blen);
	return tdbi_key_cmp(tdbp_hash64(a, alen, seed), a, alen,
			    tdbp_hash64(b, blen, seed), b, blen);
}
