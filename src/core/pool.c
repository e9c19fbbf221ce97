// SPDX-License-Identifier: GPL-2.0-only
/*
 * pool.c - the scratch region pool (TfwPool style): its slow paths
 * (new chunk, popping an emptied chunk, realloc that moves, create,
 * destroy) and the per-thread cache of free order-0 pages.
 *
 * The model, the invariants and the fast paths are in pool.h.  This file
 * calls only memcpy and the platform (tdbp_pages_alloc/tdbp_pages_free,
 * tdbp_log).
 */
#include "pool.h"

#define POOL_CHUNK_MAX   (TDBP_PAGE_SIZE << TDBE_POOL_ORDER_MAX)
#define POOL_ALIGN(n)    (((n) + TDBE_POOL_ALIGN - 1) \
			  & ~(size_t)(TDBE_POOL_ALIGN - 1))
/* Where allocations of the first chunk start: header, then descriptor. */
#define POOL_HEAD_OFF    (sizeof(struct tdbe_pool_chunk) \
			  + POOL_ALIGN(sizeof(struct tdbe_pool)))

/* The layout the fast paths rely on. */
_Static_assert(sizeof(struct tdbe_pool_chunk) == 16,
	       "chunk data must start 16-byte aligned");
_Static_assert(POOL_HEAD_OFF > sizeof(struct tdbe_pool_chunk),
	       "the first chunk must never look empty to tdbe_pool_free()");
_Static_assert(POOL_CHUNK_MAX <= (size_t)(unsigned int)-1,
	       "chunk offsets must fit in tdbe_pool_chunk.off");

/*
 * Smallest order whose chunk holds bytes (1 <= bytes <= POOL_CHUNK_MAX).
 */
static unsigned int
pool_order(size_t bytes)
{
	size_t pages = (bytes + TDBP_PAGE_SIZE - 1) >> TDBP_PAGE_SHIFT;

	if (pages <= 1)
		return 0;
	/* ceil(log2(pages)) */
	return (unsigned int)(sizeof(unsigned long) * 8)
	       - (unsigned int)__builtin_clzl((unsigned long)(pages - 1));
}

/* --- the page cache --------------------------------------------------- */

int
tdbe_pool_cache_init(struct tdbe_pool_cache *c, unsigned int cap)
{
	if (cap > TDBE_POOL_CACHE_MAX)
		return -EINVAL;
	c->count = 0;
	c->cap = cap;
	c->held = 0;
	c->limit = 0;
	c->grow_order = TDBE_POOL_GROW_ORDER;
	return 0;
}

void
tdbe_pool_cache_destroy(struct tdbe_pool_cache *c)
{
	while (c->count) {
		tdbp_pages_free(c->pages[--c->count], 0);
		c->held--;
	}
	if (c->held)
		tdbp_log(TDBP_LOG_WARNING,
			 "pool cache destroyed with %zu pages still in pools",
			 c->held);
}

/*
 * 2^order pages: an order-0 page from the cache if there is one (the
 * common case when pools come and go), else from the platform.
 */
static void *
pool_pages_get(struct tdbe_pool_cache *c, unsigned int order)
{
	size_t n = (size_t)1 << order;
	void *pg;

	if (tdb_likely(order == 0 && c->count))
		return c->pages[--c->count];

	if (c->limit) {
		/* Cached pages count against the limit: give them back first. */
		while (c->held + n > c->limit && c->count) {
			tdbp_pages_free(c->pages[--c->count], 0);
			c->held--;
		}
		if (c->held + n > c->limit)
			return NULL;
	}
	pg = tdbp_pages_alloc(order);
	if (tdb_unlikely(!pg))
		return NULL;
	c->held += n;
	return pg;
}

/*
 * Order-0 pages go to the cache while it has room; bigger chunks go
 * straight back to the platform so that buddies can coalesce.
 */
static void
pool_pages_put(struct tdbe_pool_cache *c, void *pg, unsigned int order)
{
	if (tdb_likely(order == 0 && c->count < c->cap)) {
		c->pages[c->count++] = pg;
		return;
	}
	tdbp_pages_free(pg, order);
	c->held -= (size_t)1 << order;
}

/* --- pools ------------------------------------------------------------ */

struct tdbe_pool *
tdbe_pool_create(struct tdbe_pool_cache *cache, size_t hint)
{
	struct tdbe_pool_chunk *c;
	struct tdbe_pool *p;
	unsigned int order;

	if (hint > POOL_CHUNK_MAX - POOL_HEAD_OFF)
		return NULL;
	order = pool_order(POOL_HEAD_OFF + hint);
	c = pool_pages_get(cache, order);
	if (tdb_unlikely(!c))
		return NULL;
	c->next = NULL;
	c->order = order;
	c->off = 0;

	p = (struct tdbe_pool *)(c + 1);
	p->pos = (char *)c + POOL_HEAD_OFF;
	p->end = (char *)c + (TDBP_PAGE_SIZE << order);
	p->curr = c;
	p->cache = cache;
	p->pages = (size_t)1 << order;
	return p;
}

void
tdbe_pool_destroy(struct tdbe_pool *p)
{
	struct tdbe_pool_cache *cache = p->cache;
	struct tdbe_pool_chunk *c, *next;

	/*
	 * Newest first; the first chunk, which holds *p, comes last, and p is
	 * not read once the walk has started.
	 */
	for (c = p->curr; c; c = next) {
		next = c->next;
		pool_pages_put(cache, c, c->order);
	}
}

/*
 * Order of the next chunk for a small request (one that fits in a page):
 * 0 below 16 pages, then floor(log2(pages)) - 3, so the new chunk is
 * 1/16 to 1/8 of the pool, capped by the cache's grow_order.
 */
static unsigned int
pool_grow_order(const struct tdbe_pool *p)
{
	unsigned int lg, cap = p->cache->grow_order;

	if (p->pages < 16 || !cap)
		return 0;
	lg = (unsigned int)(sizeof(unsigned long) * 8 - 1)
	     - (unsigned int)__builtin_clzl((unsigned long)p->pages);
	if (cap > TDBE_POOL_ORDER_MAX)
		cap = TDBE_POOL_ORDER_MAX;
	return lg - 3 < cap ? lg - 3 : cap;
}

/*
 * n does not fit in the current chunk: take a new chunk (big enough for n,
 * see Growth in pool.h) and make it current.  The old chunk keeps its
 * offset, and its tail stays unused until this new chunk is freed empty
 * and popped.  The data of a new chunk starts right after its 16-byte
 * header, which suits both aligned and unaligned requests.
 */
void *
__tdbe_pool_alloc_slow(struct tdbe_pool *p, size_t n)
{
	struct tdbe_pool_chunk *c;
	unsigned int order;

	if (n > POOL_CHUNK_MAX - sizeof(*c))
		return NULL;
	order = pool_order(sizeof(*c) + n);
	if (!order)
		order = pool_grow_order(p);
	c = pool_pages_get(p->cache, order);
	if (tdb_unlikely(!c)) {
		/* A growth chunk may be what failed: one page may not. */
		if (!order || (sizeof(*c) + n > TDBP_PAGE_SIZE))
			return NULL;
		order = 0;
		c = pool_pages_get(p->cache, 0);
		if (!c)
			return NULL;
	}
	c->next = p->curr;
	c->order = order;
	c->off = 0;

	p->curr->off = (unsigned int)(p->pos - (char *)p->curr);
	p->curr = c;
	p->pos = (char *)(c + 1) + n;
	p->end = (char *)c + (TDBP_PAGE_SIZE << order);
	p->pages += (size_t)1 << order;
	return c + 1;
}

/*
 * tdbe_pool_free() emptied the current chunk, which is not the first (see
 * the invariants in pool.h): release it and resume the previous chunk
 * where it stopped.
 */
void
__tdbe_pool_pop(struct tdbe_pool *p)
{
	struct tdbe_pool_chunk *c = p->curr, *prev = c->next;

	p->curr = prev;
	p->pos = (char *)prev + prev->off;
	p->end = (char *)prev + (TDBP_PAGE_SIZE << prev->order);
	p->pages -= (size_t)1 << c->order;
	pool_pages_put(p->cache, c, c->order);
}

void *
tdbe_pool_realloc(struct tdbe_pool *p, void *ptr, size_t old_n, size_t new_n)
{
	struct tdbe_pool_chunk *oc;
	char *o = ptr, *r;

	if (!o)
		return tdbe_pool_alloc(p, new_n);

	if (o + old_n != p->pos) {
		/*
		 * Not the last allocation (the exact, unrounded end is what
		 * tells: see #1540 in pool.h).  It can shrink only by keeping
		 * its bytes; growing means a new block and a copy, and the old
		 * block stays until destroy.
		 */
		if (new_n <= old_n)
			return o;
		r = tdbe_pool_alloc(p, new_n);
		if (r)
			memcpy(r, o, old_n);
		return r;
	}

	/* The last allocation: in place if the chunk has room from o on. */
	if ((size_t)(p->end - o) >= new_n) {
		p->pos = o + new_n;
		return o;
	}

	/*
	 * Move it (new_n > old_n here, since a shrink always fits).  Give its
	 * bytes back to the old chunk first, so that the chunk's saved offset
	 * ends before it; the bytes stay readable for the copy because the
	 * chunk itself is kept.  An aligned alloc from o cannot fit either,
	 * so go straight to the slow path.
	 */
	oc = p->curr;
	p->pos = o;
	r = __tdbe_pool_alloc_slow(p, new_n);
	if (!r) {
		p->pos = o + old_n;
		return NULL;
	}
	memcpy(r, o, old_n);
	if (o == (char *)(oc + 1)) {
		/* The old chunk held only this block, and it is not the first
		 * chunk (whose data starts after the descriptor): drop it. */
		p->curr->next = oc->next;
		p->pages -= (size_t)1 << oc->order;
		pool_pages_put(p->cache, oc, oc->order);
	}
	return r;
}
