// SPDX-License-Identifier: GPL-2.0-only
/*
 * index.c - the full-key hash index: a directory of bucket pages
 * (extendible hashing; see layout.h for its shape).
 *
 * Readers (tdbi_lookup, tdbi_next) run under RCU and never block: they
 * follow the directory, slots, overflow links and entries with acquire
 * loads and confirm every tag match by comparing the full key.  A lookup
 * reads one directory slot (the directory is small and stays in cache),
 * one bucket and the record.  The writer (insert, remove) changes the
 * index only by single release stores that a reader sees entirely or
 * not at all:
 *   - store an entry into a hole, replace an entry's record (same key)
 *     or clear it to a hole;
 *   - link a new overflow bucket (built first) at the end of a chain, or
 *     unlink an empty one;
 *   - split a page: both halves are built privately, then the slots that
 *     named the old page are stored one by one with the new ones; a
 *     reader that read an old slot finds the old page whole, as it was;
 *   - double the directory: a copy published by one store of h->root.
 * What is replaced (pages, overflow buckets, directories) is retired and
 * freed after a grace period.  Records never change once published, so
 * an entry always names a consistent key, and the key's hash can be
 * recomputed from it (splits and the ordered walk do so; entries keep
 * only a 24-bit tag).
 */
#include "internal.h"

static inline struct tdbi_bucket *bucket_at(const struct tdb_map *m,
					    uint64_t off)
{
	return tdb_ptr(m, off);
}

static inline uint64_t slot_page(uint64_t s)
{
	return s & ~TDBI_DEPTH_MASK;
}

static inline unsigned int slot_depth(uint64_t s)
{
	return (unsigned int)(s & TDBI_DEPTH_MASK);
}

/* The offset of the in-page bucket of hash under slot value s. */
static inline uint64_t bucket_off(uint64_t s, uint64_t hash)
{
	return slot_page(s) + (uint64_t)tdbi_page_index(hash, slot_depth(s)) *
			      sizeof(struct tdbi_bucket);
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

/* The directory's slots and its depth (readers). */
static const uint64_t *dir_of(const struct tdb_map *m, unsigned int *g)
{
	uint64_t d = tdb_load_acquire(&tdb_hdr(m)->root);

	*g = slot_depth(d);
	return tdb_ptr(m, slot_page(d));
}

/* The in-page bucket a hash leads to, or NULL (no page there). */
static const struct tdbi_bucket *bucket_of(const struct tdb_map *m,
					   uint64_t hash)
{
	unsigned int g;
	const uint64_t *dir = dir_of(m, &g);
	uint64_t s = tdb_load_acquire(&dir[tdbi_dir_index(hash, g)]);

	return slot_page(s) ? bucket_at(m, bucket_off(s, hash)) : NULL;
}

/* The overflow bucket after b, or NULL. */
static const struct tdbi_bucket *bucket_next(const struct tdb_map *m,
					     const struct tdbi_bucket *b)
{
	uint64_t n = tdb_load_acquire(&b->next);

	return n ? bucket_at(m, n) : NULL;
}

uint64_t tdbi_lookup(const struct tdb_map *m, const struct tdb_key *k)
{
	const struct tdbi_bucket *b;
	unsigned int i;

	for (b = bucket_of(m, k->hash); b; b = bucket_next(m, b)) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			uint64_t e = tdb_load_acquire(&b->e[i]);

			if (e && tdbi_entry_tag_is(e, k->hash) &&
			    rec_has_key(m, tdbi_entry_rec(e), k))
				return tdbi_entry_rec(e);
		}
	}
	return 0;
}

unsigned int tdbi_tag_hits(const struct tdb_map *m, uint64_t hash,
			   uint64_t *rec, unsigned int max)
{
	const struct tdbi_bucket *b;
	unsigned int i, got = 0;

	for (b = bucket_of(m, hash); b && got < max; b = bucket_next(m, b)) {
		for (i = 0; i < TDBI_BUCKET_CAP && got < max; i++) {
			uint64_t e = tdb_load_acquire(&b->e[i]);

			if (e && tdbi_entry_tag_is(e, hash))
				rec[got++] = tdbi_entry_rec(e);
		}
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

/* A slot naming a page, of the n at slots (a power of two): random ones
 * first, so a slot after a long run of empty ones is not likelier than
 * another; then the next one after a random place. */
static uint64_t some_slot(const uint64_t *slots, uint64_t n, uint64_t *x)
{
	uint64_t k, i = 0;

	for (k = 0; k < 64; k++) {
		uint64_t s;

		i = next_rnd(x) & (n - 1);
		s = tdb_load_acquire(&slots[i]);
		if (slot_page(s))
			return s;
	}
	for (k = 0; k < n; k++) {
		uint64_t s = tdb_load_acquire(&slots[(i + k) & (n - 1)]);

		if (slot_page(s))
			return s;
	}
	return 0;
}

/* A live entry of the chain at b, from a random place of each bucket. */
static uint64_t some_entry(const struct tdb_map *m,
			   const struct tdbi_bucket *b, uint64_t *x)
{
	unsigned int i, at = (unsigned int)(next_rnd(x) % TDBI_BUCKET_CAP);

	for (; b; b = bucket_next(m, b)) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			uint64_t e = tdb_load_acquire(
				&b->e[(at + i) % TDBI_BUCKET_CAP]);

			if (e)
				return tdbi_entry_rec(e);
		}
	}
	return 0;
}

/* The entry at position pos of the chain at b (7 a bucket), or 0 (a
 * hole, or past the chain's end). */
static uint64_t chain_entry(const struct tdb_map *m,
			    const struct tdbi_bucket *b, unsigned int pos)
{
	for (; b && pos >= TDBI_BUCKET_CAP; pos -= TDBI_BUCKET_CAP)
		b = bucket_next(m, b);
	return b ? tdb_load_acquire(&b->e[pos]) : 0;
}

/* Buckets in the chain at b, at most TDBI_SAMPLE_CHAIN. */
#define TDBI_SAMPLE_CHAIN 8u
#define TDBI_SAMPLE_TRIES 64u
static unsigned int chain_len(const struct tdb_map *m,
			      const struct tdbi_bucket *b)
{
	unsigned int n = 0;

	for (; b && n < TDBI_SAMPLE_CHAIN; b = bucket_next(m, b))
		n++;
	return n;
}

/*
 * Eviction's sampling.  By rejection, so that every live entry is about
 * as likely as another: a random page (through a random directory
 * slot), a random bucket of it, a random position of its chain; a hole
 * is a miss and another try.  Picking the first live entry after a
 * random place instead made entries after holes likelier, and holes
 * are where evictions and deletes were: sampled LRU kept 74 of the 100
 * used keys of test owner-evict's flood where the test wants 75, true
 * LRU keeping 100.  Two biases remain, which an approximate policy can
 * live with: a page reached through more slots (a lower local depth)
 * is likelier, and a chain is counted to TDBI_SAMPLE_CHAIN buckets.
 * After TDBI_SAMPLE_TRIES misses (a nearly empty table) the first
 * live entry after a random place is taken.
 */
uint64_t tdbi_sample(const struct tdb_map *m, uint64_t rnd)
{
	unsigned int g, j, k;
	const uint64_t *dir = dir_of(m, &g);
	uint64_t x = rnd, s = 0;
	const struct tdbi_bucket *page;

	for (k = 0; k < TDBI_SAMPLE_TRIES; k++) {
		const struct tdbi_bucket *b;
		uint64_t e;

		s = some_slot(dir, 1ull << g, &x);
		if (!s)
			return 0;
		page = bucket_at(m, slot_page(s));
		b = &page[next_rnd(&x) & (TDBI_PAGE_BUCKETS - 1)];
		e = chain_entry(m, b, (unsigned int)(next_rnd(&x) %
			(TDBI_BUCKET_CAP * chain_len(m, b))));
		if (e)
			return tdbi_entry_rec(e);
	}
	page = bucket_at(m, slot_page(s));
	j = (unsigned int)next_rnd(&x);
	for (k = 0; k < TDBI_PAGE_BUCKETS; k++) {
		uint64_t rec = some_entry(m, &page[(j + k) &
						   (TDBI_PAGE_BUCKETS - 1)], &x);

		if (rec)
			return rec;
	}
	return 0;
}

/*
 * The same walk for a group of keys, interleaved: each round advances
 * every unfinished walk by one step and prefetches what its next step
 * will read, so the group's cache misses overlap.  A walk is: directory
 * slot -> bucket (and its overflow chain) -> the records its tag
 * matches.
 */
enum { WALK_SLOT, WALK_BUCKET, WALK_RECORD, WALK_DONE };

struct walk {
	const uint64_t *slot;      /* WALK_SLOT: the slot to read */
	const struct tdbi_bucket *b;
	uint64_t rec;              /* WALK_RECORD: candidate to compare */
	uint32_t i;                /* next bucket entry */
	int state;
};

/* Scan the rest of w's bucket for a tag match, or go on to the next
 * bucket of the chain; prefetches what the next step reads.  True when
 * the walk is over (not there). */
static bool walk_bucket(const struct tdb_map *m, struct walk *w,
			const struct tdb_key *k)
{
	for (; w->i < TDBI_BUCKET_CAP; w->i++) {
		uint64_t v = tdb_load_acquire(&w->b->e[w->i]);

		if (v && tdbi_entry_tag_is(v, k->hash)) {
			w->rec = tdbi_entry_rec(v);
			w->state = WALK_RECORD;
			tdb_prefetch(tdb_ptr(m, w->rec));
			return false;
		}
	}
	w->b = bucket_next(m, w->b);
	if (!w->b)
		return true;
	w->i = 0;
	w->state = WALK_BUCKET;
	tdb_prefetch(w->b);
	return false;
}

/* One step of walk w for key k.  Returns true when the walk is over
 * (found in *rec, or not there). */
static bool walk_step(const struct tdb_map *m, struct walk *w,
		      const struct tdb_key *k, uint64_t *rec)
{
	uint64_t v;

	switch (w->state) {
	case WALK_SLOT:
		v = tdb_load_acquire(w->slot);
		if (!slot_page(v))
			return true;
		w->b = bucket_at(m, bucket_off(v, k->hash));
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
		return walk_bucket(m, w, k);
	}
}

void tdbi_lookup_group(const struct tdb_map *m, const struct tdb_key *k,
		       unsigned int n, uint64_t *rec)
{
	unsigned int g;
	const uint64_t *dir = dir_of(m, &g);
	struct walk w[TDBE_LOOKUP_GROUP];
	unsigned int i, left = n;

	for (i = 0; i < n; i++) {
		w[i].slot = &dir[tdbi_dir_index(k[i].hash, g)];
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
	uint64_t dir = tdba_alloc(t, tdbi_dir_bytes(0));

	if (!dir)
		return -ENOSPC;
	if (dir & TDBI_DEPTH_MASK) {
		/* the allocator gives 64-byte objects their own lines */
		tdba_free(t, dir);
		return -EINVAL;
	}
	memset(tdb_ptr(&t->map, dir), 0, tdbi_dir_bytes(0));
	h->index_nodes = 0;
	h->index_buckets = 0;
	tdb_store_release(&h->root, dir);
	return 0;
}

/* The directory's slots and depth (the writer). */
static uint64_t *wdir(struct tdbe_table *t, unsigned int *g)
{
	uint64_t d = tdb_hdr(&t->map)->root;

	*g = slot_depth(d);
	return tdb_ptr(&t->map, slot_page(d));
}

/* Store v into every slot naming the range of depth l that holds hash. */
static void slots_store(uint64_t *dir, unsigned int g, uint64_t hash,
			unsigned int l, uint64_t v)
{
	uint64_t i, n = 1ull << (g - l);
	uint64_t first = tdbi_dir_index(hash, g) & ~(n - 1);

	for (i = 0; i < n; i++)
		tdb_store_release(&dir[first + i], v);
}

/* A zeroed page (4 KiB, 64-byte aligned), or 0. */
static uint64_t page_new(struct tdbe_table *t)
{
	uint64_t off = tdb_alloc_reclaim(t, TDBI_PAGE_BYTES);

	if (!off)
		return 0;
	if (off & TDBI_DEPTH_MASK) {
		tdba_free(t, off);
		return 0;
	}
	memset(tdb_ptr(&t->map, off), 0, TDBI_PAGE_BYTES);
	tdb_hdr(&t->map)->index_nodes++;
	return off;
}

/* A zeroed overflow bucket, or 0. */
static uint64_t overflow_new(struct tdbe_table *t)
{
	uint64_t off = tdb_alloc_reclaim(t, sizeof(struct tdbi_bucket));

	if (!off)
		return 0;
	memset(tdb_ptr(&t->map, off), 0, sizeof(struct tdbi_bucket));
	tdb_hdr(&t->map)->index_buckets++;
	return off;
}

/* Free (retire: readers may be in it) a page and its overflow chains. */
static void page_free(struct tdbe_table *t, uint64_t page, bool retire)
{
	struct tdbi_bucket *b = bucket_at(&t->map, page);
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	unsigned int j;

	for (j = 0; j < TDBI_PAGE_BUCKETS; j++) {
		uint64_t o = b[j].next;

		while (o) {
			uint64_t next = bucket_at(&t->map, o)->next;

			h->index_buckets--;
			if (retire)
				tdb_retire(t, o);
			else
				tdba_free(t, o);
			o = next;
		}
	}
	h->index_nodes--;
	if (retire)
		tdb_retire(t, page);
	else
		tdba_free(t, page);
}

/* Put e into the first hole of the chain at b, linking a new overflow
 * bucket at its end if there is none. */
static int chain_add(struct tdbe_table *t, struct tdbi_bucket *b, uint64_t e)
{
	struct tdbi_bucket *nb;
	uint64_t o;
	unsigned int i;

	for (;;) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			if (!b->e[i]) {
				tdb_store_release(&b->e[i], e);
				return 0;
			}
		}
		if (!b->next)
			break;
		b = bucket_at(&t->map, b->next);
	}
	o = overflow_new(t);
	if (!o)
		return -ENOSPC;
	nb = bucket_at(&t->map, o);
	nb->e[0] = e;
	tdb_store_release(&b->next, o);
	return 0;
}

/* Live entries in a page, its chains included. */
static uint32_t page_entries(const struct tdb_map *m, uint64_t page)
{
	const struct tdbi_bucket *b = bucket_at(m, page), *c;
	uint32_t n = 0;
	unsigned int i, j;

	for (j = 0; j < TDBI_PAGE_BUCKETS; j++)
		for (c = &b[j]; c; c = c->next ? bucket_at(m, c->next) : NULL)
			for (i = 0; i < TDBI_BUCKET_CAP; i++)
				n += c->e[i] != 0;
	return n;
}

/* Replace the directory by one twice its size (same pages). */
static int dir_double(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	unsigned int g;
	uint64_t *old = wdir(t, &g), *nd, i;
	uint64_t old_off = slot_page(h->root), off;

	if (g + 1 > TDBI_MAX_PAGE_DEPTH)
		return -ENOSPC;
	off = tdb_alloc_reclaim(t, tdbi_dir_bytes(g + 1));
	if (!off)
		return -ENOSPC;
	if (off & TDBI_DEPTH_MASK) {
		tdba_free(t, off);
		return -ENOSPC;
	}
	nd = tdb_ptr(&t->map, off);
	memset(nd, 0, tdbi_dir_bytes(g + 1));
	for (i = 0; i < 1ull << g; i++)
		nd[2 * i] = nd[2 * i + 1] = old[i];
	tdb_store_release(&h->root, off | (g + 1));
	tdb_retire(t, old_off);
	return 0;
}

/* The index holds no page: the directory goes back to its first size
 * (if there is no room for the small one, the big one stays). */
static void dir_reset(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint64_t old_off = slot_page(h->root);
	uint64_t off = tdb_alloc_reclaim(t, tdbi_dir_bytes(0));

	if (!off)
		return;
	if (off & TDBI_DEPTH_MASK) {
		tdba_free(t, off);
		return;
	}
	memset(tdb_ptr(&t->map, off), 0, tdbi_dir_bytes(0));
	tdb_store_release(&h->root, off);
	tdb_retire(t, old_off);
}

/* Move the live entries of page (depth l) into p[0] and p[1] (depth
 * l + 1, private), by the hash bit below the top l. */
static int page_spread(struct tdbe_table *t, uint64_t page, unsigned int l,
		       const uint64_t p[2], uint32_t cnt[2])
{
	const struct tdbi_bucket *b = bucket_at(&t->map, page), *c;
	unsigned int i, j;

	for (j = 0; j < TDBI_PAGE_BUCKETS; j++) {
		for (c = &b[j]; c;
		     c = c->next ? bucket_at(&t->map, c->next) : NULL) {
			for (i = 0; i < TDBI_BUCKET_CAP; i++) {
				uint64_t e = c->e[i], hh;
				unsigned int side;
				struct tdbi_bucket *dst;

				if (!e)
					continue;
				hh = rec_hash(&t->map, tdbi_entry_rec(e));
				side = (unsigned int)(hh >> (63 - l)) & 1;
				dst = bucket_at(&t->map, p[side]);
				if (chain_add(t, &dst[tdbi_page_index(hh,
								      l + 1)],
					      e))
					return -ENOSPC;
				cnt[side]++;
			}
		}
	}
	return 0;
}

/* Split the page that holds hash in two, doubling the directory first
 * if it must. */
static int page_split(struct tdbe_table *t, uint64_t hash)
{
	unsigned int g, l, side;
	uint64_t *dir = wdir(t, &g), s, p[2], bit;
	uint32_t cnt[2] = { 0, 0 };
	int err;

	s = dir[tdbi_dir_index(hash, g)];
	l = slot_depth(s);
	if (l == g) {
		err = dir_double(t);
		if (err)
			return err;
		dir = wdir(t, &g);
	}
	p[0] = page_new(t);
	p[1] = p[0] ? page_new(t) : 0;
	if (!p[1] || page_spread(t, slot_page(s), l, p, cnt)) {
		if (p[0])
			page_free(t, p[0], false);
		if (p[1])
			page_free(t, p[1], false);
		return -ENOSPC;
	}
	bit = 1ull << (63 - l);
	for (side = 0; side < 2; side++) {
		uint64_t v = p[side] | (l + 1);

		if (!cnt[side]) {
			page_free(t, p[side], false);
			v = l + 1;
		}
		slots_store(dir, g, side ? hash | bit : hash & ~bit, l + 1, v);
	}
	page_free(t, slot_page(s), true);
	return 0;
}

/* Replace the key's entry in the chain at b if it is there (*old = its
 * record): 0; else 1. */
static int chain_replace(struct tdbe_table *t, struct tdbi_bucket *b,
			 const struct tdb_key *k, uint64_t e, uint64_t *old)
{
	unsigned int i;

	for (; b; b = b->next ? bucket_at(&t->map, b->next) : NULL) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			uint64_t x = b->e[i];

			if (!x || !tdbi_entry_tag_is(x, k->hash) ||
			    !rec_has_key(&t->map, tdbi_entry_rec(x), k))
				continue;
			*old = tdbi_entry_rec(x);
			tdb_store_release(&b->e[i], e);
			return 0;
		}
	}
	return 1;
}

/* The chain at b has no hole. */
static bool chain_full(const struct tdb_map *m, const struct tdbi_bucket *b)
{
	unsigned int i;

	for (; b; b = b->next ? bucket_at(m, b->next) : NULL)
		for (i = 0; i < TDBI_BUCKET_CAP; i++)
			if (!b->e[i])
				return false;
	return true;
}

/* The first page of a range: made with e in it, then published. */
static int page_first(struct tdbe_table *t, uint64_t hash, uint64_t e)
{
	unsigned int g;
	uint64_t *dir = wdir(t, &g);
	uint64_t s = dir[tdbi_dir_index(hash, g)], p = page_new(t);
	struct tdbi_bucket *b;

	if (!p)
		return -ENOSPC;
	b = bucket_at(&t->map, p);
	b[tdbi_page_index(hash, slot_depth(s))].e[0] = e;
	slots_store(dir, g, hash, slot_depth(s), p | slot_depth(s));
	return 0;
}

int tdbi_insert(struct tdbe_table *t, const struct tdb_key *k, uint64_t rec,
		uint64_t *old)
{
	uint64_t e = tdbi_entry(k->hash, rec);

	*old = 0;
	for (;;) {
		unsigned int g;
		uint64_t *dir = wdir(t, &g);
		uint64_t s = dir[tdbi_dir_index(k->hash, g)];
		struct tdbi_bucket *b;

		if (!slot_page(s))
			return page_first(t, k->hash, e);
		b = bucket_at(&t->map, bucket_off(s, k->hash));
		if (!chain_replace(t, b, k, e, old))
			return 0;
		/* A full bucket splits its page once the page holds enough
		 * to be worth it (else, or when a split has no room, the
		 * bucket chains an overflow bucket). */
		if (chain_full(&t->map, b) &&
		    slot_depth(s) < TDBI_MAX_PAGE_DEPTH &&
		    page_entries(&t->map, slot_page(s)) >= TDBI_SPLIT_KEYS &&
		    !page_split(t, k->hash))
			continue;
		return chain_add(t, b, e);
	}
}

/* No live entry and no overflow bucket in the page. */
static bool page_empty(const struct tdbi_bucket *page)
{
	unsigned int i, j;

	for (j = 0; j < TDBI_PAGE_BUCKETS; j++) {
		if (page[j].next)
			return false;
		for (i = 0; i < TDBI_BUCKET_CAP; i++)
			if (page[j].e[i])
				return false;
	}
	return true;
}

static bool bucket_empty(const struct tdbi_bucket *b)
{
	unsigned int i;

	for (i = 0; i < TDBI_BUCKET_CAP; i++)
		if (b->e[i])
			return false;
	return true;
}

/* After a delete in bucket b of the chain at head (prev before b): an
 * overflow bucket left empty is unlinked, and a page left empty is
 * unhooked from the directory, so a table emptied by deletes (expiry's
 * sweep, eviction) gives its index back.  A reader still inside sees
 * holes and finds nothing, which is what is there; both are freed after
 * a grace period like the records. */
static void chain_tidy(struct tdbe_table *t, uint64_t hash, uint64_t s,
		       struct tdbi_bucket *prev, struct tdbi_bucket *b)
{
	unsigned int g;
	uint64_t *dir = wdir(t, &g), o;

	if (!bucket_empty(b))
		return;
	if (prev) {
		o = prev->next;
		tdb_store_release(&prev->next, b->next);
		tdb_hdr(&t->map)->index_buckets--;
		tdb_retire(t, o);
	} else if (b->next) {
		return;
	}
	if (!page_empty(bucket_at(&t->map, slot_page(s))))
		return;
	slots_store(dir, g, hash, slot_depth(s), slot_depth(s));
	page_free(t, slot_page(s), true);
	if (!tdb_hdr(&t->map)->index_nodes && g)
		dir_reset(t);
}

uint64_t tdbi_remove(struct tdbe_table *t, const struct tdb_key *k)
{
	unsigned int g, i;
	uint64_t *dir = wdir(t, &g);
	uint64_t s = dir[tdbi_dir_index(k->hash, g)];
	struct tdbi_bucket *b, *prev = NULL;

	if (!slot_page(s))
		return 0;
	b = bucket_at(&t->map, bucket_off(s, k->hash));
	for (; b; prev = b, b = b->next ? bucket_at(&t->map, b->next) : NULL) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
			uint64_t e = b->e[i];

			if (!e || !tdbi_entry_tag_is(e, k->hash) ||
			    !rec_has_key(&t->map, tdbi_entry_rec(e), k))
				continue;
			tdb_store_release(&b->e[i], 0);
			chain_tidy(t, k->hash, s, prev, b);
			return tdbi_entry_rec(e);
		}
	}
	return 0;
}

/* --- ordered walk -------------------------------------------------------
 * Records are ordered by (hash, key).  The index is ordered by hash:
 * directory slots by the top bits, a page's buckets by the bits below,
 * so the successor of a bound is found from the bound's slot and bucket
 * onwards; only the entries of one bucket (and its chain) are unordered.
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

/* The page of each slot from the bound's (or the first) on, once each:
 * consecutive slots naming the same page hold the same value.  Calls
 * fn for each with the bucket to start at; stops when fn returns true. */
typedef bool (*page_fn)(const struct tdb_map *m, uint64_t s,
			unsigned int j, void *arg);

static void pages_from(const struct tdb_map *m, const struct tdb_key *bound,
		       page_fn fn, void *arg)
{
	unsigned int g;
	const uint64_t *dir = dir_of(m, &g);
	uint64_t i, n = 1ull << g, prev = 0;
	bool first = true;

	for (i = bound ? tdbi_dir_index(bound->hash, g) : 0; i < n; i++) {
		uint64_t s = tdb_load_acquire(&dir[i]);
		unsigned int j = 0;

		if (!slot_page(s) || (!first && s == prev)) {
			prev = s;
			first = false;
			continue;
		}
		if (first && bound)
			j = tdbi_page_index(bound->hash, slot_depth(s));
		prev = s;
		first = false;
		if (fn(m, s, j, arg))
			return;
	}
}

struct next_arg {
	const struct tdb_key *bound;
	struct next_best best;
};

static bool next_in_page(const struct tdb_map *m, uint64_t s, unsigned int j,
			 void *arg)
{
	struct next_arg *a = arg;
	const struct tdbi_bucket *page = bucket_at(m, slot_page(s)), *b;
	unsigned int i;

	for (; j < TDBI_PAGE_BUCKETS; j++) {
		for (b = &page[j]; b; b = bucket_next(m, b)) {
			for (i = 0; i < TDBI_BUCKET_CAP; i++) {
				uint64_t e = tdb_load_acquire(&b->e[i]);

				if (e)
					consider(m, tdbi_entry_rec(e),
						 a->bound, &a->best);
			}
		}
		if (a->best.rec)
			return true;
	}
	return false;
}

uint64_t tdbi_next(const struct tdb_map *m, const struct tdb_key *bound,
		   uint64_t *hash)
{
	struct next_arg a = { bound, { 0, 0, NULL } };

	pages_from(m, bound, next_in_page, &a);
	*hash = a.best.hash;
	return a.best.rec;
}

/* --- ordered walk, many at a time -------------------------------------
 * The same walk as tdbi_next, but it goes on from bucket to bucket and
 * takes every live record of each, so each key is hashed once.  Its
 * cost is cache misses (a bucket holds few records and every record is
 * somewhere else in memory), so it is in three passes that each
 * prefetch what the next one reads, and the misses overlap instead of
 * following one another:
 *   1. follow the slots in order and list up to max buckets (prefetch);
 *   2. read the buckets' entries and chains, in order, while they fit
 *      whole in out (prefetch the records);
 *   3. hash the records and sort them.
 * Only whole buckets are taken, so every record left out comes after
 * every record taken: a call returns the first records of the walk that
 * tdbi_next calls would make one by one.  A bucket listed in pass 1 may
 * be retired (its page split) before pass 2 reads it; it stays readable
 * until the grace period ends and is no longer written, and every key
 * present when its slot was read is in it.
 */
struct many_walk {
	uint64_t *bkt;             /* pass 1: bucket offsets, in order */
	unsigned int nb, max;
	bool bound_first;          /* bkt[0] is the bound's own bucket */
	bool truncated;            /* stopped at max buckets */
	bool bound;
};

static bool many_in_page(const struct tdb_map *m, uint64_t s, unsigned int j,
			 void *arg)
{
	struct many_walk *w = arg;

	if (w->bound && !w->nb)
		w->bound_first = true;
	w->bound = false;
	for (; j < TDBI_PAGE_BUCKETS; j++) {
		uint64_t off = slot_page(s) + (uint64_t)j * sizeof(struct tdbi_bucket);

		if (w->nb == w->max) {
			w->truncated = true;
			return true;
		}
		w->bkt[w->nb++] = off;
		tdb_prefetch(bucket_at(m, off));
	}
	return false;
}

/* Pass 2 for one bucket and its chain: its live entries (after the
 * bound, for the bound's own bucket, hashed at once) into out[*n...],
 * or false if they do not all fit in max. */
static bool many_take(const struct tdb_map *m, uint64_t off,
		      const struct tdb_key *bound, struct tdbi_hit *out,
		      unsigned int *n, unsigned int max)
{
	const struct tdbi_bucket *b;
	unsigned int i, k = *n;

	for (b = bucket_at(m, off); b; b = bucket_next(m, b)) {
		for (i = 0; i < TDBI_BUCKET_CAP; i++) {
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
	struct many_walk w = { .bkt = bkt, .max = max, .bound = bound };
	uint64_t seed = tdb_hdr(m)->seed;
	unsigned int i, j, n = 0, hashed = 0;
	bool whole = true;

	if (!max)
		return 0;
	pages_from(m, bound, many_in_page, &w);
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
