// SPDX-License-Identifier: GPL-2.0-only
/*
 * index.c - the full-key hash trie (see layout.h for its shape).
 *
 * Readers (tdbi_lookup, tdbi_next) run under RCU and never block: they
 * follow slots and entries with acquire loads and confirm every tag match
 * by comparing the full key.  The writer (insert, remove) changes the
 * trie only by single release stores that a reader sees entirely or not
 * at all:
 *   - store an entry into a hole, or append one and then publish the new
 *     count;
 *   - replace an entry's record (same key) or clear it to a hole;
 *   - replace a whole bucket (burst or growth) by building the new nodes
 *     privately and publishing them with one store of the slot; the old
 *     bucket is retired and freed after a grace period.
 * Records never change once published, so an entry always names a
 * consistent key, and the key's hash can be recomputed from it (bursts
 * and the ordered walk do so; entries keep only a 24-bit tag).
 */
#include "internal.h"

static inline struct tdbi_bucket *bucket_at(const struct tdb_map *m,
					    uint64_t off)
{
	return tdb_ptr(m, off);
}

static inline bool rec_has_key(const struct tdb_map *m, uint64_t rec,
			       const struct tdb_key *k)
{
	const struct tdb_rec *r = tdb_ptr(m, rec);

	return r->klen == k->len && memcmp(r->data, k->data, k->len) == 0;
}

static inline uint64_t rec_hash(const struct tdb_map *m, uint64_t rec)
{
	const struct tdb_rec *r = tdb_ptr(m, rec);

	return tdbp_hash64(r->data, r->klen, tdb_hdr(m)->seed);
}

int tdbi_key_cmp(uint64_t ha, const void *ka, size_t la,
		 uint64_t hb, const void *kb, size_t lb)
{
	int c;

	if (ha != hb)
		return ha < hb ? -1 : 1;
	c = memcmp(ka, kb, la < lb ? la : lb);
	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

/* The bucket a hash leads to, or NULL (an empty slot on the way). */
static const struct tdbi_bucket *bucket_of(const struct tdb_map *m,
					   uint64_t hash)
{
	const struct tdbi_node *root = tdb_ptr(m, tdb_hdr(m)->root);
	uint64_t slot = tdb_load_acquire(&root->slot[hash >> tdbi_shift(0)]);
	unsigned int depth = 1;

	while (slot & TDBI_NODE_TAG) {
		const struct tdbi_node *node = tdb_ptr(m, slot & ~TDBI_NODE_TAG);

		slot = tdb_load_acquire(&node->slot[tdbi_slot_index(hash,
								    depth)]);
		depth++;
	}
	return slot ? bucket_at(m, slot) : NULL;
}

uint64_t tdbi_lookup(const struct tdb_map *m, const struct tdb_key *k)
{
	const struct tdbi_bucket *b = bucket_of(m, k->hash);
	uint32_t i, n;

	if (!b)
		return 0;
	n = tdb_load_acquire(&b->count);
	for (i = 0; i < n; i++) {
		uint64_t e = tdb_load_acquire(&b->e[i]);

		if (e && tdbi_entry_tag_is(e, k->hash) &&
		    rec_has_key(m, tdbi_entry_rec(e), k))
			return tdbi_entry_rec(e);
	}
	return 0;
}

unsigned int tdbi_tag_hits(const struct tdb_map *m, uint64_t hash,
			   uint64_t *rec, unsigned int max)
{
	const struct tdbi_bucket *b = bucket_of(m, hash);
	unsigned int got = 0;
	uint32_t i, n;

	if (!b)
		return 0;
	n = tdb_load_acquire(&b->count);
	for (i = 0; i < n && got < max; i++) {
		uint64_t e = tdb_load_acquire(&b->e[i]);

		if (e && tdbi_entry_tag_is(e, hash))
			rec[got++] = tdbi_entry_rec(e);
	}
	return got;
}

/* The next random number of a walk (splitmix64). */
static uint64_t next_rnd(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A non-empty slot of the n at slots (a power of two): random ones
 * first, so a slot after a long run of empty ones is not likelier than
 * another; then, in a sparse node, the next non-empty one after a
 * random place. */
static uint64_t some_slot(const uint64_t *slots, unsigned int n,
			  uint64_t *x)
{
	unsigned int k, i = 0;

	for (k = 0; k < 64; k++) {
		uint64_t s;

		i = (unsigned int)next_rnd(x) & (n - 1);
		s = tdb_load_acquire(&slots[i]);
		if (s)
			return s;
	}
	for (k = 0; k < n; k++) {
		uint64_t s = tdb_load_acquire(&slots[(i + k) & (n - 1)]);

		if (s)
			return s;
	}
	return 0;
}

/*
 * Eviction's sampling: descend through random non-empty slots, then
 * take a live entry of the bucket from a random place.  Close to
 * uniform where nodes are dense; a record in a sparse bucket is likelier
 * than one of seven, which an approximate policy can live with.
 */
uint64_t tdbi_sample(const struct tdb_map *m, uint64_t rnd)
{
	const struct tdbi_node *root = tdb_ptr(m, tdb_hdr(m)->root);
	uint64_t x = rnd;
	uint64_t slot = some_slot(root->slot, TDBI_ROOT_SLOTS, &x);
	const struct tdbi_bucket *b;
	uint32_t i, n, at;

	while (slot & TDBI_NODE_TAG) {
		const struct tdbi_node *node = tdb_ptr(m, slot & ~TDBI_NODE_TAG);

		slot = some_slot(node->slot, TDBI_NODE_SLOTS, &x);
	}
	if (!slot)
		return 0;
	b = bucket_at(m, slot);
	n = tdb_load_acquire(&b->count);
	at = n ? (uint32_t)(next_rnd(&x) % n) : 0;
	for (i = 0; i < n; i++) {
		uint64_t e = tdb_load_acquire(&b->e[(at + i) % n]);

		if (e)
			return tdbi_entry_rec(e);
	}
	return 0;
}

/*
 * The same walk for a group of keys, interleaved: each round advances
 * every unfinished walk by one step and prefetches what its next step
 * will read, so the group's cache misses overlap.  A walk is: slots
 * (root, then nodes) -> bucket -> the records its tag matches.
 */
enum { WALK_SLOT, WALK_BUCKET, WALK_RECORD, WALK_DONE };

struct walk {
	const uint64_t *slot;      /* WALK_SLOT: the slot to read next */
	const struct tdbi_bucket *b;
	uint64_t rec;              /* WALK_RECORD: candidate to compare */
	uint32_t depth, i;         /* node depth; next bucket entry */
	int state;
};

/* One step of walk w for key k; prefetches what the next step reads.
 * Returns true when the walk is over (found in *rec, or not there). */
static bool walk_step(const struct tdb_map *m, struct walk *w,
		      const struct tdb_key *k, uint64_t *rec)
{
	uint64_t v;
	uint32_t n;

	switch (w->state) {
	case WALK_SLOT:
		v = tdb_load_acquire(w->slot);
		if (v & TDBI_NODE_TAG) {
			const struct tdbi_node *node =
				tdb_ptr(m, v & ~TDBI_NODE_TAG);

			w->depth++;
			w->slot = &node->slot[tdbi_slot_index(k->hash,
							      w->depth)];
			tdb_prefetch(w->slot);
			return false;
		}
		if (!v)
			return true;
		w->b = bucket_at(m, v);
		w->i = 0;
		w->state = WALK_BUCKET;
		tdb_prefetch(w->b);
		return false;
	case WALK_RECORD:
		if (rec_has_key(m, w->rec, k)) {
			*rec = w->rec;
			return true;
		}
		w->i++;
		/* fall through - look for the next tag match */
	default:
		n = tdb_load_acquire(&w->b->count);
		for (; w->i < n; w->i++) {
			v = tdb_load_acquire(&w->b->e[w->i]);
			if (v && tdbi_entry_tag_is(v, k->hash)) {
				w->rec = tdbi_entry_rec(v);
				w->state = WALK_RECORD;
				tdb_prefetch(tdb_ptr(m, w->rec));
				return false;
			}
		}
		return true;
	}
}

void tdbi_lookup_group(const struct tdb_map *m, const struct tdb_key *k,
		       unsigned int n, uint64_t *rec)
{
	const struct tdbi_node *root = tdb_ptr(m, tdb_hdr(m)->root);
	struct walk w[TDBE_LOOKUP_GROUP];
	unsigned int i, left = n;

	for (i = 0; i < n; i++) {
		w[i].slot = &root->slot[tdbi_slot_index(k[i].hash, 0)];
		w[i].depth = 0;
		w[i].state = WALK_SLOT;
		rec[i] = 0;
		tdb_prefetch(w[i].slot);
	}
	while (left) {
		for (i = 0; i < n; i++) {
			if (w[i].state == WALK_DONE)
				continue;
			if (walk_step(m, &w[i], &k[i], &rec[i])) {
				w[i].state = WALK_DONE;
				left--;
			}
		}
	}
}

/* --- writer side ------------------------------------------------------- */

int tdbi_init(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint64_t root = tdba_alloc(t, sizeof(uint64_t) * TDBI_ROOT_SLOTS);

	if (!root)
		return -ENOSPC;
	memset(tdb_ptr(&t->map, root), 0, sizeof(uint64_t) * TDBI_ROOT_SLOTS);
	h->index_nodes = 1;
	tdb_store_release(&h->root, root);
	return 0;
}

/* Where the key's bucket hangs: the slot, and the depth of its node. */
static uint64_t *find_slot(struct tdbe_table *t, uint64_t hash,
			   unsigned int *depth)
{
	struct tdbi_node *node = tdb_ptr(&t->map, tdb_hdr(&t->map)->root);
	unsigned int d = 0;
	uint64_t *slot = &node->slot[tdbi_slot_index(hash, 0)];

	while (*slot & TDBI_NODE_TAG) {
		node = tdb_ptr(&t->map, *slot & ~TDBI_NODE_TAG);
		d++;
		slot = &node->slot[tdbi_slot_index(hash, d)];
	}
	*depth = d;
	return slot;
}

/* A live entry with its full hash, for rebuilding. */
struct wide_entry {
	uint64_t hash, e;
};

static uint64_t bucket_new(struct tdbe_table *t, const struct wide_entry *w,
			   uint32_t n, uint32_t cap)
{
	uint64_t off = tdb_alloc_reclaim(t, sizeof(struct tdbi_bucket) +
					       cap * sizeof(uint64_t));
	struct tdbi_bucket *b;
	uint32_t i;

	if (!off)
		return 0;
	b = bucket_at(&t->map, off);
	b->count = n;
	b->cap = cap;
	for (i = 0; i < n; i++)
		b->e[i] = w[i].e;
	tdb_hdr(&t->map)->index_buckets++;
	return off;
}

static void bucket_retire(struct tdbe_table *t, uint64_t off)
{
	tdb_hdr(&t->map)->index_buckets--;
	tdb_retire(t, off);
}

/* Free a subtree that was built but never published. */
static void subtree_discard(struct tdbe_table *t, uint64_t slot)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	unsigned int i;

	if (!slot)
		return;
	if (slot & TDBI_NODE_TAG) {
		struct tdbi_node *node = tdb_ptr(&t->map, slot & ~TDBI_NODE_TAG);

		for (i = 0; i < TDBI_NODE_SLOTS; i++)
			subtree_discard(t, node->slot[i]);
		h->index_nodes--;
		tdba_free(t, slot & ~TDBI_NODE_TAG);
		return;
	}
	h->index_buckets--;
	tdba_free(t, slot);
}

/*
 * Build, privately, the subtree for n live entries whose slot sits in a
 * node at depth `depth`: one bucket if they fit (or no hash bits are
 * left), else a node one level down.  Returns the slot value, or 0 when
 * out of room (everything built so far is discarded).  w[] is reordered.
 */
static uint64_t build(struct tdbe_table *t, struct wide_entry *w, uint32_t n,
		      unsigned int depth)
{
	struct tdbi_node *node;
	uint64_t off;
	unsigned int i, d = depth + 1;
	uint32_t lo = 0;

	if (n <= TDBI_BUCKET_CAP || d > TDBI_MAX_DEPTH) {
		uint32_t cap = TDBI_BUCKET_CAP;

		while (cap < n)
			cap = cap * 2 + 1;
		return bucket_new(t, w, n, cap);
	}
	off = tdb_alloc_reclaim(t, sizeof(*node));
	if (!off)
		return 0;
	node = tdb_ptr(&t->map, off);
	memset(node, 0, sizeof(*node));
	tdb_hdr(&t->map)->index_nodes++;
	/* Partition w[] by slot index in the new node, in slot order. */
	for (i = 0; i < TDBI_NODE_SLOTS && lo < n; i++) {
		uint32_t j, hi = lo;

		for (j = lo; j < n; j++) {
			if (tdbi_slot_index(w[j].hash, d) == i) {
				struct wide_entry tmp = w[hi];

				w[hi++] = w[j];
				w[j] = tmp;
			}
		}
		if (hi == lo)
			continue;
		node->slot[i] = build(t, w + lo, hi - lo, d);
		if (!node->slot[i]) {
			subtree_discard(t, off | TDBI_NODE_TAG);
			return 0;
		}
		lo = hi;
	}
	return off | TDBI_NODE_TAG;
}

/* Replace a full bucket by a subtree holding its live entries plus one
 * more.  The scratch array lives in private memory. */
static int rebuild(struct tdbe_table *t, uint64_t *slot, unsigned int depth,
		   const struct wide_entry *add)
{
	struct tdbi_bucket *b = bucket_at(&t->map, *slot);
	struct wide_entry stack_w[TDBI_BUCKET_CAP + 1], *w = stack_w;
	uint64_t sub, old = *slot;
	uint32_t i, n = 0;

	if (b->cap > TDBI_BUCKET_CAP) {
		w = tdbp_alloc(sizeof(*w) * (b->cap + 1));
		if (!w)
			return -ENOMEM;
	}
	for (i = 0; i < b->count; i++) {
		if (!b->e[i])
			continue;
		w[n].hash = rec_hash(&t->map, tdbi_entry_rec(b->e[i]));
		w[n++].e = b->e[i];
	}
	w[n++] = *add;
	sub = build(t, w, n, depth);
	if (w != stack_w)
		tdbp_free(w);
	if (!sub)
		return -ENOSPC;
	tdb_store_release(slot, sub);
	bucket_retire(t, old);
	return 0;
}

int tdbi_insert(struct tdbe_table *t, const struct tdb_key *k, uint64_t rec,
		uint64_t *old)
{
	unsigned int depth;
	uint64_t *slot = find_slot(t, k->hash, &depth);
	struct wide_entry add = { k->hash, tdbi_entry(k->hash, rec) };
	struct tdbi_bucket *b;
	uint32_t i, hole = UINT32_MAX;

	*old = 0;
	if (!*slot) {
		uint64_t off = bucket_new(t, &add, 1, TDBI_BUCKET_CAP);

		if (!off)
			return -ENOSPC;
		tdb_store_release(slot, off);
		return 0;
	}
	b = bucket_at(&t->map, *slot);
	for (i = 0; i < b->count; i++) {
		uint64_t e = b->e[i];

		if (!e) {
			if (hole == UINT32_MAX)
				hole = i;
			continue;
		}
		if (!tdbi_entry_tag_is(e, k->hash) ||
		    !rec_has_key(&t->map, tdbi_entry_rec(e), k))
			continue;
		*old = tdbi_entry_rec(e);
		tdb_store_release(&b->e[i], add.e);
		return 0;
	}
	if (hole != UINT32_MAX) {
		tdb_store_release(&b->e[hole], add.e);
		return 0;
	}
	if (b->count < b->cap) {
		b->e[b->count] = add.e;
		tdb_store_release(&b->count, b->count + 1);
		return 0;
	}
	return rebuild(t, slot, depth, &add);
}

/* An interior node with no slot in use. */
static bool node_empty(const struct tdbi_node *node)
{
	unsigned int i;

	for (i = 0; i < TDBI_NODE_SLOTS; i++)
		if (node->slot[i])
			return false;
	return true;
}

uint64_t tdbi_remove(struct tdbe_table *t, const struct tdb_key *k)
{
	/* path[d]: the slot followed at depth d (path[0] in the root) */
	uint64_t *path[TDBI_MAX_DEPTH + 1];
	struct tdbi_node *node = tdb_ptr(&t->map, tdb_hdr(&t->map)->root);
	unsigned int depth = 0;
	uint64_t *slot = &node->slot[tdbi_slot_index(k->hash, 0)];
	struct tdbi_bucket *b;
	uint32_t i, live = 0;
	uint64_t found = 0, found_bucket;

	path[0] = slot;
	while (*slot & TDBI_NODE_TAG) {
		node = tdb_ptr(&t->map, *slot & ~TDBI_NODE_TAG);
		depth++;
		slot = &node->slot[tdbi_slot_index(k->hash, depth)];
		path[depth] = slot;
	}
	if (!*slot)
		return 0;
	b = bucket_at(&t->map, *slot);
	for (i = 0; i < b->count; i++) {
		uint64_t e = b->e[i];

		if (!e)
			continue;
		if (!found && tdbi_entry_tag_is(e, k->hash) &&
		    rec_has_key(&t->map, tdbi_entry_rec(e), k)) {
			found = tdbi_entry_rec(e);
			tdb_store_release(&b->e[i], 0);
			continue;
		}
		live++;
	}
	if (!found || live)
		return found;
	/* A bucket with nothing live left is unhooked, and so is each
	 * interior node it leaves empty, up the path: a table emptied by
	 * deletes (expiry's sweep, eviction) gives its index back, down to
	 * the root.  A reader still inside one of them sees empty slots and
	 * finds nothing, which is what is there; they are freed after a
	 * grace period like the records. */
	found_bucket = *slot;
	tdb_store_release(slot, 0);
	bucket_retire(t, found_bucket);
	while (depth > 0) {
		uint64_t noff = *path[depth - 1] & ~TDBI_NODE_TAG;

		if (!node_empty(tdb_ptr(&t->map, noff)))
			break;
		tdb_store_release(path[depth - 1], 0);
		tdb_hdr(&t->map)->index_nodes--;
		tdb_retire(t, noff);
		depth--;
	}
	return found;
}

/* --- ordered walk -------------------------------------------------------
 * Records are ordered by (hash, key).  The trie is ordered by hash (slot
 * indexes come from the hash's high bits down), so the successor of a
 * bound is found by descending along the bound's hash and moving right.
 */
struct next_best {
	uint64_t rec, hash;
	const struct tdb_rec *r;
};

static void consider(const struct tdb_map *m, uint64_t rec,
		     const struct tdb_key *bound, struct next_best *best)
{
	const struct tdb_rec *r = tdb_ptr(m, rec);
	uint64_t hash = tdbp_hash64(r->data, r->klen, tdb_hdr(m)->seed);

	if (bound && tdbi_key_cmp(hash, r->data, r->klen,
				  bound->hash, bound->data, bound->len) <= 0)
		return;
	if (best->rec && tdbi_key_cmp(hash, r->data, r->klen, best->hash,
				      best->r->data, best->r->klen) >= 0)
		return;
	best->rec = rec;
	best->hash = hash;
	best->r = r;
}

static bool next_in(const struct tdb_map *m, uint64_t slot,
		    unsigned int depth, const struct tdb_key *bound,
		    struct next_best *best)
{
	const struct tdbi_bucket *b;
	uint32_t i, cnt;

	if (!slot)
		return false;
	if (slot & TDBI_NODE_TAG) {
		const struct tdbi_node *node = tdb_ptr(m, slot & ~TDBI_NODE_TAG);
		unsigned int n = depth ? TDBI_NODE_SLOTS : TDBI_ROOT_SLOTS;
		unsigned int j = bound ? tdbi_slot_index(bound->hash, depth) : 0;
		bool first = true;

		for (; j < n; j++, first = false)
			if (next_in(m, tdb_load_acquire(&node->slot[j]),
				    depth + 1, first ? bound : NULL, best))
				return true;
		return false;
	}
	b = bucket_at(m, slot);
	cnt = tdb_load_acquire(&b->count);
	for (i = 0; i < cnt; i++) {
		uint64_t e = tdb_load_acquire(&b->e[i]);

		if (e)
			consider(m, tdbi_entry_rec(e), bound, best);
	}
	return best->rec != 0;
}

uint64_t tdbi_next(const struct tdb_map *m, const struct tdb_key *bound,
		   uint64_t *hash)
{
	struct next_best best = { 0, 0, NULL };

	next_in(m, tdb_hdr(m)->root | TDBI_NODE_TAG, 0, bound, &best);
	*hash = best.hash;
	return best.rec;
}

/* --- ordered walk, many at a time -------------------------------------
 * The same walk as tdbi_next, but it goes on from bucket to bucket and
 * takes every live record of each, so the descent from the root is done
 * once per call and each key is hashed once.  Its cost is cache misses
 * (a bucket holds few records and every bucket and record is somewhere
 * else in memory), so it is in three passes that each prefetch what the
 * next one reads, and the misses overlap instead of following one
 * another:
 *   1. follow the slots in order and list up to max buckets (prefetch);
 *   2. read the buckets' entries, in order, while they fit whole in out
 *      (prefetch the records);
 *   3. hash the records and sort them.
 * Only whole buckets are taken, so every record left out comes after
 * every record taken: a call returns the first records of the walk that
 * tdbi_next calls would make one by one.  A bucket listed in pass 1 may
 * be retired before pass 2 reads it; it stays readable until the grace
 * period ends and is no longer written, and every key present when its
 * slot was read is in it.
 */
struct many_walk {
	const struct tdb_map *m;
	uint64_t *bkt;             /* pass 1: bucket offsets, in order */
	unsigned int nb, max;
	bool bound_first;          /* bkt[0] is the bound's own bucket */
	bool truncated;            /* stopped at max buckets */
};

static void prefetch_node(const struct tdbi_node *node)
{
	unsigned int i;

	for (i = 0; i < TDBI_NODE_SLOTS; i += 64 / sizeof(uint64_t))
		tdb_prefetch(&node->slot[i]);
}

static void many_in(struct many_walk *w, uint64_t slot, unsigned int depth,
		    const struct tdb_key *bound)
{
	const struct tdbi_node *node;
	unsigned int j, n;

	if (!slot)
		return;
	if (!(slot & TDBI_NODE_TAG)) {
		if (w->nb == w->max) {
			w->truncated = true;
			return;
		}
		if (bound)
			w->bound_first = true;
		w->bkt[w->nb++] = slot;
		tdb_prefetch(bucket_at(w->m, slot));
		return;
	}
	node = tdb_ptr(w->m, slot & ~TDBI_NODE_TAG);
	n = depth ? TDBI_NODE_SLOTS : TDBI_ROOT_SLOTS;
	j = bound ? tdbi_slot_index(bound->hash, depth) : 0;
	for (; j < n && !w->truncated; j++, bound = NULL) {
		uint64_t v = tdb_load_acquire(&node->slot[j]);

		/* a node below is read whole: fetch the next one's start
		 * while this one is walked */
		if (j + 1 < n && (v & TDBI_NODE_TAG)) {
			uint64_t ahead = tdb_load_acquire(&node->slot[j + 1]);

			if (ahead & TDBI_NODE_TAG)
				prefetch_node(tdb_ptr(w->m,
						      ahead & ~TDBI_NODE_TAG));
		}
		many_in(w, v, depth + 1, bound);
	}
}

/* Pass 2 for one bucket: its live entries (after the bound, for the
 * bound's own bucket, hashed at once) into out[*n...], or false if they
 * do not all fit in max. */
static bool many_take(const struct tdb_map *m, uint64_t off,
		      const struct tdb_key *bound, struct tdbi_hit *out,
		      unsigned int *n, unsigned int max)
{
	const struct tdbi_bucket *b = bucket_at(m, off);
	uint32_t i, cnt = tdb_load_acquire(&b->count);
	unsigned int k = *n;

	for (i = 0; i < cnt; i++) {
		uint64_t e = tdb_load_acquire(&b->e[i]);
		struct tdbi_hit *h = &out[k];
		const struct tdb_rec *r;

		if (!e)
			continue;
		if (k == max)
			return false;
		h->rec = tdbi_entry_rec(e);
		r = tdb_ptr(m, h->rec);
		if (bound) {
			h->hash = tdbp_hash64(r->data, r->klen,
					      tdb_hdr(m)->seed);
			if (tdbi_key_cmp(h->hash, r->data, r->klen,
					 bound->hash, bound->data,
					 bound->len) <= 0)
				continue;
		} else {
			tdb_prefetch(r);
			h->hash = 0;            /* pass 3 */
		}
		k++;
	}
	*n = k;
	return true;
}

static bool hit_before(const struct tdb_map *m, const struct tdbi_hit *a,
		       const struct tdbi_hit *b)
{
	const struct tdb_rec *ra, *rb;

	if (a->hash != b->hash)
		return a->hash < b->hash;
	ra = tdb_ptr(m, a->rec);
	rb = tdb_ptr(m, b->rec);
	return tdbi_key_cmp(a->hash, ra->data, ra->klen,
			    b->hash, rb->data, rb->klen) < 0;
}

unsigned int tdbi_next_many(const struct tdb_map *m,
			    const struct tdb_key *bound,
			    struct tdbi_hit *out, uint64_t *bkt,
			    unsigned int max)
{
	struct many_walk w = { .m = m, .bkt = bkt, .max = max };
	uint64_t seed = tdb_hdr(m)->seed;
	unsigned int i, j, n = 0, hashed = 0;
	bool whole = true;

	if (!max)
		return 0;
	many_in(&w, tdb_hdr(m)->root | TDBI_NODE_TAG, 0, bound);
	for (i = 0; i < w.nb && whole; i++) {
		bool b = i == 0 && w.bound_first;

		whole = many_take(m, bkt[i], b ? bound : NULL, out, &n, max);
		if (b)
			hashed = n;
	}
	if (!n && (!whole || w.truncated)) {
		/* Nothing taken but the walk is not over: a first bucket
		 * bigger than max, or buckets seen empty (a writer was
		 * emptying them).  One record, the old way. */
		out[0].rec = tdbi_next(m, bound, &out[0].hash);
		return out[0].rec != 0;
	}
	/* Buckets were taken in hash order, so only records of one bucket
	 * are out of order: the insertion sort moves each a few places. */
	for (i = 0; i < n; i++) {
		struct tdbi_hit h = out[i];

		if (i >= hashed) {
			const struct tdb_rec *r = tdb_ptr(m, h.rec);

			h.hash = tdbp_hash64(r->data, r->klen, seed);
		}
		for (j = i; j > 0 && hit_before(m, &h, &out[j - 1]); j--)
			out[j] = out[j - 1];
		out[j] = h;
	}
	return n;
}
