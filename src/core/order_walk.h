/* SPDX-License-Identifier: MIT */
/*
 * order_walk.h - reading the ordered index (layout.h, "ordered index"):
 * searching a node, seeking a key and stepping through the keys in
 * either direction.  One copy for both kinds of reader: the engine's own
 * (cursor.c and order.c, a region it trusts) and a view's (view.c, a
 * region mapped from another process, every offset checked).  MIT like
 * view.c, which libtdbclient compiles in.
 *
 * A walk keeps the path from the root to a leaf: the node at each level
 * and the position in it (a child index, or at the leaf an entry).  It
 * holds no lock: everything it reached stays readable until the caller's
 * read section ends (copy-on-write, layout.h), and it never re-reads a
 * node's count, level or common prefix, which never change; child words
 * and entries are loaded with acquire, since the writer swaps them in
 * place.
 */
#ifndef TDB_CORE_ORDER_WALK_H
#define TDB_CORE_ORDER_WALK_H

#include "layout.h"

/* Where the walk reads: the address of each extent; nextents 0 = a
 * region the caller trusts (the owner's), else offsets are checked. */
struct tdbb_src {
	const void *const *ext;
	uint32_t nextents;
};

struct tdbb_walk {
	uint64_t node[TDBB_MAX_HEIGHT];
	uint16_t pos[TDBB_MAX_HEIGHT];
	unsigned int height;        /* levels in the path; leaf at height-1 */
};

/* The object at off, len bytes, or NULL if a checked source does not
 * hold all of it (or off is 0 or misaligned). */
static inline const void *tdbb_at(const struct tdbb_src *s, uint64_t off,
				  uint64_t len)
{
	uint64_t e = off >> TDBP_EXTENT_SHIFT;

	if (s->nextents &&
	    (!off || (off & 15) || e >= s->nextents ||
	     len > TDBP_EXTENT_SIZE ||
	     (off & TDB_EXT_MASK) + len > TDBP_EXTENT_SIZE))
		return NULL;
	return (const unsigned char *)s->ext[e] + (off & TDB_EXT_MASK);
}

static inline const struct tdbb_node *tdbb_node_at(const struct tdbb_src *s,
						   uint64_t off)
{
	const struct tdbb_node *n = tdbb_at(s, off, TDBB_NODE_BYTES);

	if (n && s->nextents &&
	    (n->magic != TDBB_NODE_MAGIC ||
	     n->level >= TDBB_MAX_HEIGHT || n->cpl > TDBE_KEY_MAX ||
	     n->n > (n->level ? TDBB_INNER_CAP : TDBB_LEAF_CAP)))
		return NULL;
	return n;
}

/*
 * A record as one read saw it.  Its lengths and flags are loaded once
 * and every later use goes by these copies: a record reused under a
 * mapped reader whose section outlived its lease may change while it is
 * read, and lengths read again after the check could lead outside it.
 */
struct tdbb_rv {
	const unsigned char *key;   /* then the value, then the trailers */
	uint32_t klen, vlen;
	uint32_t flags;
	uint64_t version;
};

/* The record an entry names into *o; false if a checked source does
 * not hold it whole or its header is not a record's. */
static inline bool tdbb_rec_get(const struct tdbb_src *s, uint64_t e,
				struct tdbb_rv *o)
{
	uint64_t off = tdbi_entry_rec(e);
	const struct tdb_rec *r = tdbb_at(s, off, sizeof(*r));
	struct tdb_rec_hdr rh;

	if (!r)
		return false;
	tdb_rec_load(r, &rh);
	o->klen = rh.klen;
	o->vlen = rh.vlen;
	o->flags = rh.flags;
	if (s->nextents &&
	    (o->klen < 1 || o->klen > TDBE_KEY_MAX ||
	     o->vlen > TDBE_VALUE_MAX || (o->flags & ~TDB_REC_F_KNOWN) ||
	     !tdbb_at(s, off, tdb_rec_size(o->klen, o->vlen, o->flags))))
		return false;
	o->key = r->data;
	o->version = rh.version;
	return true;
}

/* Its deadline (ms since the epoch), 0 if it has none. */
static inline uint64_t tdbb_rv_deadline(const struct tdbb_rv *o)
{
	uint64_t d;

	if (!(o->flags & TDB_REC_F_DEADLINE))
		return 0;
	memcpy(&d, o->key + o->klen + o->vlen, sizeof(d));
	return d;
}

/* Word i of a node: a child offset or an entry.  i is bounded by the
 * node's words: a count or level read again after tdbb_node_at checked
 * them may have changed in a node reused under a mapped reader whose
 * section outlived its lease, and the read must stay inside the node
 * (the answer is then wrong, which the checked walk finds). */
static inline uint64_t tdbb_word(const struct tdbb_node *n, unsigned int i)
{
	return tdb_load_acquire(&n->w[i < TDBB_LEAF_CAP ? i
					   : TDBB_LEAF_CAP - 1]);
}

/* Separator i (1..n-1) of an interior node. */
static inline uint64_t tdbb_sep(const struct tdbb_node *n, unsigned int i)
{
	return tdbb_word(n, TDBB_SEP0 + i - 1);
}

/* Entry i of a node's keys: a leaf's entry i, or separator i + 1. */
static inline uint64_t tdbb_key_word(const struct tdbb_node *n,
				     unsigned int i)
{
	return n->level ? tdbb_sep(n, i + 1) : tdbb_word(n, i);
}

static inline unsigned int tdbb_nkeys(const struct tdbb_node *n)
{
	return n->level ? (n->n ? n->n - 1u : 0u) : n->n;
}

/*
 * Where key k falls among the node's keys: the number of keys less than
 * k (or, with `upper`, less than or equal to it), 0..nkeys.  *eq is set
 * to the index of a key equal to k if one was met (-1 if not).  The
 * node's common prefix is checked against k first: a key outside it is
 * before or after all of them; inside, heads decide and records are read
 * only on a tie.  -EUCLEAN (a checked source) if a record is not whole.
 */
static inline int tdbb_node_rank(const struct tdbb_src *s,
				 const struct tdbb_node *n, const void *key,
				 size_t klen, bool upper, int *eq)
{
	const unsigned char *k = key;
	unsigned int cnt = tdbb_nkeys(n), lo = 0, hi = cnt, cpl = n->cpl;
	uint64_t kh;

	*eq = -1;
	if (!cnt)
		return 0;
	if (cpl) {
		struct tdbb_rv r;
		size_t m = klen < cpl ? klen : cpl;
		int d;

		if (!tdbb_rec_get(s, tdbb_key_word(n, 0), &r) || r.klen < cpl)
			return -EUCLEAN;
		d = memcmp(k, r.key, m);
		if (d < 0 || (d == 0 && klen < cpl))
			return 0;
		if (d > 0)
			return (int)cnt;
	}
	kh = tdbb_head(k, klen, cpl);
	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		uint64_t e = tdbb_key_word(n, mid), eh = tdbb_entry_head(e);
		int c;

		if (kh != eh) {
			c = kh < eh ? -1 : 1;
		} else {
			struct tdbb_rv r;

			if (!tdbb_rec_get(s, e, &r))
				return -EUCLEAN;
			c = tdbb_key_cmp(k, klen, r.key, r.klen);
			if (!c)
				*eq = (int)mid;
		}
		if (c > 0 || (c == 0 && upper))
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

/* Down from the node at path level d to a leaf, always by child `last`
 * ? the last : the first; the leaf's position likewise. */
static inline int tdbb_descend_edge(const struct tdbb_src *s,
				    struct tdbb_walk *w, unsigned int d,
				    bool last)
{
	const struct tdbb_node *n = tdbb_node_at(s, w->node[d]);

	for (;;) {
		if (!n)
			return -EUCLEAN;
		if (!n->n) {            /* only a lone root leaf is empty */
			if (n->level || d)
				return -EUCLEAN;
			w->pos[d] = 0;
			break;
		}
		w->pos[d] = last ? n->n - 1 : 0;
		if (!n->level)
			break;
		if (d + 1 >= TDBB_MAX_HEIGHT)
			return -EUCLEAN;
		w->node[d + 1] = tdbb_word(n, w->pos[d]);
		d++;
		{
			const struct tdbb_node *c = tdbb_node_at(s, w->node[d]);

			if (!c || c->level + 1 != n->level)
				return -EUCLEAN;
			n = c;
		}
	}
	w->height = d + 1;
	return 0;
}

/*
 * Seek: the path to the first key >= k (upper: > k) in key order; the
 * leaf position may be the leaf's count (the key is past that leaf's
 * last: tdbb_fix_fwd moves on).  k NULL: the first key.
 */
static inline int tdbb_seek(const struct tdbb_src *s, uint64_t root,
			    const void *k, size_t klen, bool upper,
			    struct tdbb_walk *w)
{
	const struct tdbb_node *n;
	unsigned int d = 0;
	int eq;

	w->node[0] = root;
	if (!k)
		return tdbb_descend_edge(s, w, 0, false);
	for (;;) {
		int r;

		n = tdbb_node_at(s, w->node[d]);
		if (!n || (d && !n->n))
			return -EUCLEAN;
		r = tdbb_node_rank(s, n, k, klen, n->level ? true : upper,
				   &eq);
		if (r < 0)
			return r;
		w->pos[d] = (uint16_t)r;
		if (!n->level)
			break;
		if (d + 1 >= TDBB_MAX_HEIGHT)
			return -EUCLEAN;
		w->node[d + 1] = tdbb_word(n, (unsigned int)r);
		d++;
	}
	w->height = d + 1;
	return 0;
}

/* The leaf and the entry the walk is at. */
static inline const struct tdbb_node *tdbb_leaf(const struct tdbb_src *s,
						const struct tdbb_walk *w)
{
	return tdbb_node_at(s, w->node[w->height - 1]);
}

/* After a seek or a step: if the leaf position is past its last entry,
 * move to the first entry of the next leaf.  1 = at an entry, 0 = past
 * the last key of all. */
static inline int tdbb_fix_fwd(const struct tdbb_src *s, struct tdbb_walk *w)
{
	/* a loop, not a recursion: each turn moves the path on, and a
	 * region changed under a mapped reader must not grow the stack */
	for (;;) {
		unsigned int leaf = w->height - 1;
		const struct tdbb_node *n = tdbb_node_at(s, w->node[leaf]);
		const struct tdbb_node *p = NULL;
		int d, err;

		if (!n)
			return -EUCLEAN;
		if (w->pos[leaf] < n->n)
			return 1;
		for (d = (int)leaf - 1; d >= 0; d--) {
			p = tdbb_node_at(s, w->node[d]);
			if (!p)
				return -EUCLEAN;
			if (w->pos[d] + 1u < p->n)
				break;
		}
		if (d < 0)
			return 0;
		w->pos[d]++;
		w->node[d + 1] = tdbb_word(p, w->pos[d]);
		err = tdbb_descend_edge(s, w, (unsigned int)d + 1, false);
		if (err)
			return err;
		/* an empty leaf: on */
	}
}

static inline int tdbb_step_fwd(const struct tdbb_src *s, struct tdbb_walk *w)
{
	w->pos[w->height - 1]++;
	return tdbb_fix_fwd(s, w);
}

/* Move to the entry before the walk's position (which may be one past a
 * leaf's last): 1 = at an entry, 0 = before the first key of all. */
static inline int tdbb_step_back(const struct tdbb_src *s,
				 struct tdbb_walk *w)
{
	/* a loop, not a recursion, as in tdbb_fix_fwd */
	for (;;) {
		unsigned int leaf = w->height - 1;
		const struct tdbb_node *p = NULL, *l;
		int d, err;

		if (w->pos[leaf] > 0) {
			w->pos[leaf]--;
			return 1;
		}
		for (d = (int)leaf - 1; d >= 0; d--) {
			p = tdbb_node_at(s, w->node[d]);
			if (!p)
				return -EUCLEAN;
			if (w->pos[d] > 0)
				break;
		}
		if (d < 0)
			return 0;
		w->pos[d]--;
		w->node[d + 1] = tdbb_word(p, w->pos[d]);
		err = tdbb_descend_edge(s, w, (unsigned int)d + 1, true);
		if (err)
			return err;
		l = tdbb_leaf(s, w);
		if (!l)
			return -EUCLEAN;
		if (l->n)
			return 1;
		/* an empty leaf (only a lone root is): on */
		w->pos[w->height - 1] = 0;
	}
}

/* Prefetch the record `ahead` entries past the walk's place in its leaf
 * (before it, walking back): a range walk's reads of records, which lie
 * anywhere in the region, then overlap instead of following one
 * another.  A hint only: nothing is read through it. */
#define TDBB_PREFETCH 16
static inline void tdbb_prefetch(const struct tdbb_src *s,
				 const struct tdbb_walk *w, int ahead)
{
	const struct tdbb_node *l = tdbb_at(s, w->node[w->height - 1],
					    TDBB_NODE_BYTES);
	int p = (int)w->pos[w->height - 1] + ahead;

	if (l && p >= 0 && p < (int)l->n && p < (int)TDBB_LEAF_CAP) {
		uint64_t off = tdbi_entry_rec(tdb_load_relaxed(&l->w[p]));
		uint64_t e = off >> TDBP_EXTENT_SHIFT;

		if (!s->nextents || (off && e < s->nextents))
			tdb_prefetch((const unsigned char *)s->ext[e] +
				     (off & TDB_EXT_MASK));
	}
}

/* The entry the walk is at (after a step that returned 1). */
static inline uint64_t tdbb_cur(const struct tdbb_src *s,
				const struct tdbb_walk *w)
{
	const struct tdbb_node *l = tdbb_leaf(s, w);

	return l ? tdbb_word(l, w->pos[w->height - 1]) : 0;
}

#endif
