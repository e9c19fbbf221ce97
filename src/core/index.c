/*
 * index.c - the full-key hash trie (see layout.h for its shape).
 *
 * Readers (tdbi_lookup, tdbi_next) run under RCU and never block: they
 * follow slots with acquire loads and confirm every hash match by
 * comparing the full key.  The writer (insert, remove) changes the trie
 * only in ways a concurrent reader cannot misread:
 *   - append an entry to a bucket, then publish the new count;
 *   - replace an entry's record with one release store;
 *   - tombstone an entry (record 0) with one release store;
 *   - reuse a tombstoned entry: hash first, then the record (a reader
 *     that sees a mix either skips it or compares a real key);
 *   - replace a whole bucket (burst or growth) by building the new nodes
 *     privately and publishing them with one release store of the slot;
 *     the old bucket is retired and freed after a grace period.
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

uint64_t tdbi_lookup(const struct tdb_map *m, const struct tdb_key *k)
{
	const struct tdbi_node *root = tdb_ptr(m, tdb_hdr(m)->root);
	uint64_t slot = tdb_load_acquire(&root->slot[k->hash >>
						     tdbi_shift(0)]);
	unsigned int depth = 1;
	const struct tdbi_bucket *b;
	uint32_t i, n;

	while (slot & TDBI_NODE_TAG) {
		const struct tdbi_node *node = tdb_ptr(m, slot & ~TDBI_NODE_TAG);

		slot = tdb_load_acquire(&node->slot[tdbi_slot_index(k->hash,
								    depth)]);
		depth++;
	}
	if (!slot)
		return 0;
	b = bucket_at(m, slot);
	n = tdb_load_acquire(&b->count);
	for (i = 0; i < n; i++) {
		uint64_t rec;

		if (tdb_load_relaxed(&b->e[i].hash) != k->hash)
			continue;
		rec = tdb_load_acquire(&b->e[i].rec);
		if (rec && rec_has_key(m, rec, k))
			return rec;
	}
	return 0;
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

static size_t bucket_size(uint32_t cap)
{
	return sizeof(struct tdbi_bucket) + cap * sizeof(struct tdbi_entry);
}

static uint64_t bucket_new(struct tdbe_table *t, const struct tdbi_entry *e,
			   uint32_t n, uint32_t cap)
{
	uint64_t off = tdb_alloc_reclaim(t, bucket_size(cap));
	struct tdbi_bucket *b;

	if (!off)
		return 0;
	b = bucket_at(&t->map, off);
	b->count = n;
	b->cap = cap;
	b->pad = 0;
	memcpy(b->e, e, n * sizeof(*e));
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
 * node at depth `depth`: one bucket if they fit (or no bits are left),
 * else a node one level down.  Returns the slot value, or 0 when out of
 * room (everything built so far is discarded).  e[] is reordered.
 */
static uint64_t build(struct tdbe_table *t, struct tdbi_entry *e, uint32_t n,
		      unsigned int depth)
{
	struct tdbi_node *node;
	uint64_t off;
	unsigned int i, d = depth + 1;
	uint32_t lo = 0;

	if (n <= TDBI_BUCKET_CAP || d > TDBI_MAX_DEPTH) {
		uint32_t cap = TDBI_BUCKET_CAP;

		while (cap < n)
			cap *= 2;
		return bucket_new(t, e, n, cap);
	}
	off = tdb_alloc_reclaim(t, sizeof(*node));
	if (!off)
		return 0;
	node = tdb_ptr(&t->map, off);
	memset(node, 0, sizeof(*node));
	tdb_hdr(&t->map)->index_nodes++;
	/* Sort entries into the new node's slots (a counting pass per slot
	 * would be O(64n); a simple partition by slot index is enough). */
	for (i = 0; i < TDBI_NODE_SLOTS && lo < n; i++) {
		uint32_t j, hi = lo;

		for (j = lo; j < n; j++) {
			if (tdbi_slot_index(e[j].hash, d) == i) {
				struct tdbi_entry tmp = e[hi];

				e[hi++] = e[j];
				e[j] = tmp;
			}
		}
		if (hi == lo)
			continue;
		node->slot[i] = build(t, e + lo, hi - lo, d);
		if (!node->slot[i]) {
			subtree_discard(t, off | TDBI_NODE_TAG);
			return 0;
		}
		lo = hi;
	}
	return off | TDBI_NODE_TAG;
}

/*
 * Replace a full bucket by a subtree holding its live entries plus one
 * more.  The scratch array lives in private memory.
 */
static int rebuild(struct tdbe_table *t, uint64_t *slot, unsigned int depth,
		   const struct tdbi_entry *add)
{
	struct tdbi_bucket *b = bucket_at(&t->map, *slot);
	struct tdbi_entry stack_e[TDBI_BUCKET_CAP + 1], *e = stack_e;
	uint32_t i, n = 0;
	uint64_t sub;

	if (b->cap + 1 > TDBI_BUCKET_CAP + 1) {
		e = tdbp_alloc(sizeof(*e) * (b->cap + 1));
		if (!e)
			return -ENOMEM;
	}
	for (i = 0; i < b->count; i++)
		if (b->e[i].rec)
			e[n++] = b->e[i];
	e[n++] = *add;
	sub = build(t, e, n, depth);
	if (e != stack_e)
		tdbp_free(e);
	if (!sub)
		return -ENOSPC;
	uint64_t old = *slot;

	tdb_store_release(slot, sub);
	bucket_retire(t, old);
	return 0;
}

int tdbi_insert(struct tdbe_table *t, const struct tdb_key *k, uint64_t rec,
		bool nooverwrite, uint64_t *old)
{
	unsigned int depth;
	uint64_t *slot = find_slot(t, k->hash, &depth);
	struct tdbi_entry add = { .hash = k->hash, .rec = rec };
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
		struct tdbi_entry *e = &b->e[i];

		if (!e->rec) {
			if (hole == UINT32_MAX)
				hole = i;
			continue;
		}
		if (e->hash != k->hash || !rec_has_key(&t->map, e->rec, k))
			continue;
		if (nooverwrite)
			return -EEXIST;
		*old = e->rec;
		tdb_store_release(&e->rec, rec);
		return 0;
	}
	if (hole != UINT32_MAX) {
		tdb_store_relaxed(&b->e[hole].hash, k->hash);
		tdb_store_release(&b->e[hole].rec, rec);
		return 0;
	}
	if (b->count < b->cap) {
		b->e[b->count] = add;
		tdb_store_release(&b->count, b->count + 1);
		return 0;
	}
	return rebuild(t, slot, depth, &add);
}

uint64_t tdbi_remove(struct tdbe_table *t, const struct tdb_key *k)
{
	unsigned int depth;
	uint64_t *slot = find_slot(t, k->hash, &depth);
	struct tdbi_bucket *b;
	uint32_t i, live = 0;
	uint64_t found = 0;

	if (!*slot)
		return 0;
	b = bucket_at(&t->map, *slot);
	for (i = 0; i < b->count; i++) {
		struct tdbi_entry *e = &b->e[i];

		if (!e->rec)
			continue;
		if (!found && e->hash == k->hash &&
		    rec_has_key(&t->map, e->rec, k)) {
			found = e->rec;
			tdb_store_release(&e->rec, 0);
			continue;
		}
		live++;
	}
	/* A bucket with nothing live left is unhooked; empty interior
	 * nodes stay (they are few and the next insert reuses them). */
	if (found && !live) {
		uint64_t off = *slot;

		tdb_store_release(slot, 0);
		bucket_retire(t, off);
	}
	return found;
}

/* --- ordered walk -------------------------------------------------------
 * Entries are ordered by (hash, key).  The trie is ordered by hash (slot
 * indexes come from the hash's high bits down), so the successor of a
 * bound is found by descending along the bound's hash and moving right.
 */
struct next_best {
	uint64_t rec, hash;
	const struct tdb_rec *r;
};

static bool entry_after(const struct tdb_map *m, uint64_t hash, uint64_t rec,
			const struct tdb_key *bound, struct next_best *best)
{
	const struct tdb_rec *r = tdb_ptr(m, rec);

	if (bound && tdbi_key_cmp(hash, r->data, r->klen,
				  bound->hash, bound->data, bound->len) <= 0)
		return false;
	if (best->rec && tdbi_key_cmp(hash, r->data, r->klen,
				      best->hash, best->r->data,
				      best->r->klen) >= 0)
		return false;
	/* An entry being reused under us can pair one key's hash with
	 * another's record; such an entry never belongs to a key present
	 * for the whole walk, so it is safe to skip it. */
	if (tdbp_hash64(r->data, r->klen, tdb_hdr(m)->seed) != hash)
		return false;
	best->rec = rec;
	best->hash = hash;
	best->r = r;
	return true;
}

static bool next_in(const struct tdb_map *m, uint64_t slot,
		    unsigned int depth, const struct tdb_key *bound,
		    struct next_best *best)
{
	if (!slot)
		return false;
	if (slot & TDBI_NODE_TAG) {
		const struct tdbi_node *node = tdb_ptr(m, slot & ~TDBI_NODE_TAG);
		unsigned int n = depth ? TDBI_NODE_SLOTS : TDBI_ROOT_SLOTS;
		unsigned int i = bound ? tdbi_slot_index(bound->hash, depth) : 0;
		bool first = true;

		for (; i < n; i++, first = false)
			if (next_in(m, tdb_load_acquire(&node->slot[i]),
				    depth + 1, first ? bound : NULL, best))
				return true;
		return false;
	}
	const struct tdbi_bucket *b = bucket_at(m, slot);
	uint32_t i, cnt = tdb_load_acquire(&b->count);

	for (i = 0; i < cnt; i++) {
		uint64_t h = tdb_load_relaxed(&b->e[i].hash);
		uint64_t rec = tdb_load_acquire(&b->e[i].rec);

		if (rec)
			entry_after(m, h, rec, bound, best);
	}
	return best->rec != 0;
}

uint64_t tdbi_next(const struct tdb_map *m, const struct tdb_key *bound,
		   uint64_t *hash)
{
	struct next_best best = { 0, 0, NULL };
	uint64_t root = tdb_hdr(m)->root;

	next_in(m, root | TDBI_NODE_TAG, 0, bound, &best);
	*hash = best.hash;
	return best.rec;
}
