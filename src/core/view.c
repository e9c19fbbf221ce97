// SPDX-License-Identifier: MIT
/*
 * view.c - looking keys up in a region mapped by someone else.
 *
 * The same walk as tdbi_lookup, but the region is not trusted: every
 * offset is checked to lie, with the whole object it names, inside one
 * of the extents the caller mapped, and the walk is bounded (the
 * directory's depth, TDBI_MAX_CHAIN overflow buckets), so a damaged
 * region yields -EUCLEAN, never a wild read or a loop.
 *
 * MIT, with view.h and layout.h: libtdbclient compiles it in (its maps of
 * tables, src/client/map.c), so it includes nothing of the engine but
 * those two and the platform layer.
 */
#include "view.h"
#include "layout.h"
#include "order_walk.h"

#define TDB_EXTACK(ext, text) do { if (ext) (ext)->msg = (text); } while (0)

/* The key looked up, with its hash (internal.h's struct tdb_key). */
struct view_key {
	const void *data;
	size_t len;
	uint64_t hash;
};

/* Is [off, off + len) inside one mapped extent, off non-zero and aligned
 * as every object in a region is (16 bytes)? */
static bool in_view(const struct tdbe_view *v, uint64_t off, uint64_t len)
{
	uint64_t e = off >> TDBP_EXTENT_SHIFT;

	return off && !(off & 15) && e < v->nextents &&
	       len <= TDBP_EXTENT_SIZE &&
	       (off & TDB_EXT_MASK) + len <= TDBP_EXTENT_SIZE;
}

static const void *vptr(const struct tdbe_view *v, uint64_t off)
{
	return (const unsigned char *)v->ext[off >> TDBP_EXTENT_SHIFT] +
	       (off & TDB_EXT_MASK);
}

uint32_t tdbe_view_extents(const void *extent0)
{
	const struct tdb_region_hdr *h = extent0;

	return tdb_load_acquire(&h->nextents);
}

int tdbe_view_check(const struct tdbe_view *v, struct tdbe_extack *ext)
{
	const struct tdb_region_hdr *h;

	if (!v || !v->ext || v->nextents < 1 || !v->ext[0]) {
		TDB_EXTACK(ext, "view has no extents");
		return -EINVAL;
	}
	h = v->ext[0];
	if (h->magic != TDB_REGION_MAGIC) {
		TDB_EXTACK(ext, "not a tdb region (bad magic)");
		return -EUCLEAN;
	}
	if (h->version != TDB_LAYOUT_VERSION) {
		TDB_EXTACK(ext, "region layout version is not "
			   TDB_LAYOUT_VERSION_STR ", this reader's: the "
			   "table's owner runs another tdb release");
		return -EUCLEAN;
	}
	if (h->root_slots != TDBI_PAGE_BUCKETS) {
		TDB_EXTACK(ext, "region's index pages are not of 64 buckets");
		return -EUCLEAN;
	}
	if (tdb_load_acquire(&h->nextents) > v->nextents) {
		TDB_EXTACK(ext, "region has more extents than the view maps");
		return -EUCLEAN;
	}
	return 0;
}

/* A record found by a view: its lengths and flags loaded once (order_walk.h,
 * struct tdbb_rv: a reused record may change under the read). */
struct view_hit {
	const struct tdb_rec *r;
	uint32_t vlen;
	uint16_t klen, flags;
	uint64_t version;
};

/* The record of the entry e if it holds key k: 0 and *hit; -ENOENT if
 * another key; -EUCLEAN if it lies outside the view or is damaged. */
static int view_rec(const struct tdbe_view *v, uint64_t e,
		    const struct view_key *k, struct view_hit *hit)
{
	const struct tdb_rec *r;
	struct tdb_rec_hdr rh;
	uint64_t rec = tdbi_entry_rec(e);
	uint32_t vl;
	uint16_t klen, fl;

	if (!in_view(v, rec, sizeof(*r)))
		return -EUCLEAN;
	r = vptr(v, rec);
	tdb_rec_load(r, &rh);
	klen = (uint16_t)rh.klen;
	vl = rh.vlen;
	fl = (uint16_t)rh.flags;
	if (klen > TDBE_KEY_MAX || vl > TDBE_VALUE_MAX ||
	    (fl & ~TDB_REC_F_KNOWN) ||
	    !in_view(v, rec, tdb_rec_size(klen, vl, fl)))
		return -EUCLEAN;
	if (klen != k->len || memcmp(r->data, k->data, k->len))
		return -ENOENT;
	hit->r = r;
	hit->vlen = vl;
	hit->klen = klen;
	hit->flags = fl;
	hit->version = rh.version;
	return 0;
}

/* The record of k in the bucket chain at off: 0 and *hit, -ENOENT, or
 * -EUCLEAN (out of the view, or a chain too long to be sound). */
static int view_chain(const struct tdbe_view *v, uint64_t off,
		      const struct view_key *k, struct view_hit *hit)
{
	unsigned int i, hops;
	int err;

	for (hops = 0; off; hops++) {
		const struct tdbi_bucket *b;

		if (hops > TDBI_MAX_CHAIN || (off & 15) ||
		    !in_view(v, off, sizeof(*b)))
			return -EUCLEAN;
		b = vptr(v, off);
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			uint64_t e = tdb_load_acquire(&b->e[i]);

			if (!e || !tdbi_entry_tag_is(e, k->hash))
				continue;
			err = view_rec(v, e, k, hit);
			if (err != -ENOENT)
				return err;
		}
		off = tdb_load_acquire(&b->next);
	}
	return -ENOENT;
}

static int view_bucket(const struct tdbe_view *v, uint64_t off,
		       const struct view_key *k, const void **val, size_t *vlen,
		       uint64_t *version)
{
	struct view_hit hit;
	uint64_t dl;
	int err = view_chain(v, off, k, &hit);

	if (err)
		return err;
	/* expired: absent, by this process's clock */
	if (hit.flags & TDB_REC_F_DEADLINE) {
		memcpy(&dl, hit.r->data + hit.klen + hit.vlen, sizeof(dl));
		if (dl <= tdbp_realtime_ms())
			return -ENOENT;
	}
	*val = hit.r->data + hit.klen;
	*vlen = hit.vlen;
	if (version)
		*version = hit.version;
	return 0;
}

/* The in-page bucket of hash, through the directory: 0 and *off, or
 * -ENOENT (no page there), -EUCLEAN (out of the view). */
static int view_slot(const struct tdbe_view *v, uint64_t hash, uint64_t *off)
{
	const struct tdb_region_hdr *h = v->ext[0];
	uint64_t d = tdb_load_acquire(&h->root), s;
	unsigned int g = (unsigned int)(d & TDBI_DEPTH_MASK), l;
	uint64_t dir = d & ~TDBI_DEPTH_MASK;

	if (g > TDBI_MAX_PAGE_DEPTH || !in_view(v, dir, tdbi_dir_bytes(g)))
		return -EUCLEAN;
	s = tdb_load_acquire(&((const uint64_t *)vptr(v, dir))
			     [tdbi_dir_index(hash, g)]);
	l = (unsigned int)(s & TDBI_DEPTH_MASK);
	if (!(s & ~TDBI_DEPTH_MASK))
		return -ENOENT;
	if (l > g || !in_view(v, s & ~TDBI_DEPTH_MASK, TDBI_PAGE_BYTES))
		return -EUCLEAN;
	*off = (s & ~TDBI_DEPTH_MASK) + (uint64_t)tdbi_page_index(hash, l) *
					sizeof(struct tdbi_bucket);
	return 0;
}

int tdbe_view_lookup(const struct tdbe_view *v, const void *key, size_t klen,
		     const void **val, size_t *vlen)
{
	return tdbe_view_lookup_ver(v, key, klen, val, vlen, NULL);
}

int tdbe_view_lookup_ver(const struct tdbe_view *v, const void *key,
			 size_t klen, const void **val, size_t *vlen,
			 uint64_t *version)
{
	const struct tdb_region_hdr *h;
	struct view_key k;
	uint64_t slot;
	int err = tdbe_view_check(v, NULL);

	if (err)
		return err;
	if (!key || klen < TDBE_KEY_MIN || klen > TDBE_KEY_MAX)
		return -EINVAL;
	h = v->ext[0];
	k.data = key;
	k.len = klen;
	k.hash = tdbp_hash64(key, klen, h->seed);
	err = view_slot(v, k.hash, &slot);
	if (err)
		return err;
	return view_bucket(v, slot, &k, val, vlen, version);
}

/* --- ranges of ordered tables ------------------------------------------- */

bool tdbe_view_ordered(const struct tdbe_view *v)
{
	const struct tdb_region_hdr *h;

	if (tdbe_view_check(v, NULL))
		return false;
	h = v->ext[0];
	return (h->table_flags & TDB_TBL_F_ORDERED) &&
	       tdb_load_acquire(&h->oroot);
}

static struct tdbb_src view_src(const struct tdbe_view *v)
{
	struct tdbb_src s = { .ext = v->ext, .nextents = v->nextents };

	return s;
}

static void iter_get(const struct tdbe_view_iter *it, struct tdbb_walk *w)
{
	memcpy(w->node, it->node, sizeof(w->node));
	memcpy(w->pos, it->pos, sizeof(w->pos));
	w->height = it->height;
}

static void iter_put(struct tdbe_view_iter *it, const struct tdbb_walk *w)
{
	memcpy(it->node, w->node, sizeof(it->node));
	memcpy(it->pos, w->pos, sizeof(it->pos));
	it->height = w->height;
}

static bool bound_ok(const void *k, size_t len)
{
	return !k || (len >= TDBE_KEY_MIN && len <= TDBE_KEY_MAX);
}

int tdbe_view_range(const struct tdbe_view *v, const struct tdbe_range *r,
		    struct tdbe_view_iter *it)
{
	const struct tdb_region_hdr *h;
	struct tdbb_src s;
	struct tdbb_walk w;
	bool rev;
	int err = tdbe_view_check(v, NULL);

	if (err)
		return err;
	if (!tdbe_view_ordered(v))
		return -EOPNOTSUPP;
	if (!r || (r->flags & ~TDBE_RANGE_FLAGS_ALL) ||
	    !bound_ok(r->from, r->from_len) || !bound_ok(r->to, r->to_len))
		return -EINVAL;
	h = v->ext[0];
	s = view_src(v);
	rev = r->flags & TDBE_RANGE_REVERSE;
	memset(it, 0, sizeof(*it));
	it->v = v;
	it->r = *r;
	w.node[0] = tdb_load_acquire(&h->oroot);
	if (rev && !r->to) {
		const struct tdbb_node *l;

		err = tdbb_descend_edge(&s, &w, 0, true);
		if (err)
			return err;
		l = tdbb_leaf(&s, &w);
		if (!l)
			return -EUCLEAN;
		w.pos[w.height - 1] = l->n;
		err = tdbb_step_back(&s, &w);
	} else {
		const void *k = rev ? r->to : r->from;
		size_t kl = rev ? r->to_len : r->from_len;
		bool upper = rev ? r->flags & TDBE_RANGE_TO_INCL
				 : r->flags & TDBE_RANGE_FROM_EXCL;

		err = tdbb_seek(&s, w.node[0], k, kl, upper, &w);
		if (err)
			return err;
		err = rev ? tdbb_step_back(&s, &w) : tdbb_fix_fwd(&s, &w);
	}
	if (err < 0)
		return err;
	it->done = err == 0;
	if (!it->done) {
		int i;

		for (i = 0; i < TDBB_PREFETCH; i++)
			tdbb_prefetch(&s, &w, rev ? -i : i);
	}
	iter_put(it, &w);
	return 0;
}

/* Is r past the end of the iterator's range in its direction? */
static bool view_past_end(const struct tdbe_range *g, const struct tdbb_rv *r)
{
	int d;

	if (g->flags & TDBE_RANGE_REVERSE) {
		if (!g->from)
			return false;
		d = tdbb_key_cmp(r->key, r->klen, g->from, g->from_len);
		return d < 0 || (d == 0 && (g->flags & TDBE_RANGE_FROM_EXCL));
	}
	if (!g->to)
		return false;
	d = tdbb_key_cmp(r->key, r->klen, g->to, g->to_len);
	return d > 0 || (d == 0 && !(g->flags & TDBE_RANGE_TO_INCL));
}


/* Set the iterator's leaf from its path (checked), or -EUCLEAN.  A leaf
 * is immutable but for records swapped under the same key, so its keys
 * are in order: only the first ones met after entering it need the
 * order check (it->check), and if its last key in the walk's direction
 * is before the range's end none needs the end check (it->inrange). */
static int iter_leaf(struct tdbe_view_iter *it, const struct tdbb_src *s)
{
	const struct tdbb_node *l = tdbb_node_at(s, it->node[it->height - 1]);
	bool rev = it->r.flags & TDBE_RANGE_REVERSE;
	struct tdbb_rv r;
	unsigned int n;
	int i;

	if (!l || l->level)
		return -EUCLEAN;
	n = l->n;             /* loaded once: a reused node may change */
	if (n > TDBB_LEAF_CAP || it->pos[it->height - 1] >= n)
		return -EUCLEAN;
	it->leaf = l;
	it->check = it->last != NULL;
	/* the first records the walk will read here, all at once: their
	 * misses overlap (the walk then keeps TDBB_PREFETCH ahead) */
	for (i = 0; i < TDBB_PREFETCH; i++) {
		int p = (int)it->pos[it->height - 1] + (rev ? -i : i);
		const unsigned char *a;

		if (p < 0 || p >= (int)n)
			break;
		a = tdbb_at(s, tdbi_entry_rec(tdb_load_relaxed(&l->w[p])),
			    128);
		if (a) {
			tdb_prefetch(a);
			tdb_prefetch(a + 64);
		}
	}
	it->inrange = tdbb_rec_get(s, tdbb_word(l, rev ? 0 : n - 1), &r) &&
		      !view_past_end(&it->r, &r);
	return 0;
}

/* The next position in the walk's direction: within the leaf without
 * looking at anything else, else through the path.  1, 0 at the end,
 * or -EUCLEAN. */
static int iter_step(struct tdbe_view_iter *it, const struct tdbb_src *s,
		     bool rev)
{
	const struct tdbb_node *l = it->leaf;
	unsigned int leaf = it->height - 1;
	struct tdbb_walk w;
	int at;

	/* the count is read again: bounded by the leaf's capacity, so a
	 * node reused under a reader that outlived its lease cannot take
	 * the walk outside it (iter_leaf checks it when the walk leaves) */
	if (!rev && it->pos[leaf] + 1u < l->n &&
	    it->pos[leaf] + 1u < TDBB_LEAF_CAP) {
		it->pos[leaf]++;
		return 1;
	}
	if (rev && it->pos[leaf] > 0) {
		it->pos[leaf]--;
		return 1;
	}
	iter_get(it, &w);
	at = rev ? tdbb_step_back(s, &w) : tdbb_step_fwd(s, &w);
	if (at != 1)
		return at;
	iter_put(it, &w);
	return iter_leaf(it, s) ? -EUCLEAN : 1;
}

int tdbe_view_next(struct tdbe_view_iter *it, const void **key,
		   size_t *klen, const void **val, size_t *vlen,
		   uint64_t *version)
{
	bool rev = it->r.flags & TDBE_RANGE_REVERSE;
	struct tdbb_src s;
	int at = 1;

	if (it->done)
		return 0;
	s = view_src(it->v);
	if (!it->leaf && iter_leaf(it, &s))
		return -EUCLEAN;
	while (at == 1) {
		const struct tdbb_node *l = it->leaf;
		unsigned int pos = it->pos[it->height - 1];
		struct tdbb_rv rv, *r = &rv;
		int ahead = (int)pos + (rev ? -TDBB_PREFETCH : TDBB_PREFETCH);
		bool live;

		if (!tdbb_rec_get(&s, tdbb_word(l, pos), r))
			return -EUCLEAN;
		/* A key that does not follow the last one met in the walk's
		 * direction is skipped: one written during the walk (a
		 * separator moved by a delete lets the left neighbour take
		 * keys of the right one's old range; a walk that met the
		 * right one's older copy then meets them out of order,
		 * layout.h "ordered index"), or a damaged region's.  Never
		 * returned twice or out of order; a region that makes the
		 * walk skip more keys in a row than it can hold records is
		 * damaged (a walk ends, never loops). */
		if (it->check && it->last &&
		    tdbb_key_cmp(r->key, r->klen, it->last,
				 it->last_len) * (rev ? -1 : 1) <= 0) {
			if (++it->skipped > (uint64_t)it->v->nextents *
					    (TDBP_EXTENT_SIZE / 32))
				return -EUCLEAN;
			at = iter_step(it, &s, rev);
			if (at < 0)
				return at;
			continue;
		}
		it->skipped = 0;
		it->check = false;
		it->last = r->key;
		it->last_len = r->klen;
		if (!it->inrange && view_past_end(&it->r, r))
			break;
		if (ahead >= 0 && ahead < (int)l->n &&
		    ahead < (int)TDBB_LEAF_CAP) {
			const unsigned char *p = tdbb_at(&s, tdbi_entry_rec(
					tdb_load_relaxed(&l->w[ahead])), 128);

			if (p) {
				tdb_prefetch(p);
				tdb_prefetch(p + 64);
			}
		}
		live = !(r->flags & TDB_REC_F_DEADLINE) ||
		       tdbb_rv_deadline(r) > tdbp_realtime_ms();
		at = iter_step(it, &s, rev);
		if (at < 0)
			return at;
		if (!live)
			continue;
		*key = r->key;
		*klen = r->klen;
		*val = r->key + r->klen;
		*vlen = r->vlen;
		if (version)
			*version = r->version;
		it->done = at == 0;
		return 1;
	}
	it->done = true;
	return 0;
}
