/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pool.h - the scratch region pool: per-request and per-batch memory
 * that is bump-allocated and dropped all at once (TfwPool style).
 *
 * This file owns the pool API (tdbe_pool_*) and its inline fast paths;
 * pool.c owns the slow paths and the page cache.  Nothing else in the
 * engine knows the layout below.
 *
 * Model.  A pool is a LIFO list of chunks; a chunk is 2^order contiguous
 * 4 KiB pages from the platform (tdbp_pages_alloc) that starts with a
 * struct tdbe_pool_chunk header.  The pool descriptor itself lives in the
 * first chunk, right after its header, so creating a pool costs one page
 * and no other allocation.  Allocation bumps a pointer in the newest
 * (current) chunk; a request that does not fit takes a new chunk big
 * enough for it and abandons the unused tail of the old one (no search:
 * the old tail comes back only if the new chunk is freed empty again).
 *
 * Growth.  A request bigger than a page gets a chunk of just the order it
 * needs (large blocks are often temporary).  A small request that does not
 * fit gets an order-0 page while the pool is small, which keeps the pools
 * of a request on the page cache; once the pool holds 16 pages or more,
 * its new chunks grow to about 1/16-1/8 of what it holds, up to the
 * cache's grow_order.  This departs from TfwPool, which always takes one
 * page: profiling the alloc-only benchmark showed a pool of hundreds of
 * MB spending most of its time getting single pages from the platform
 * (in user space one posix_memalign per page, which also faults in a
 * wasted page for its own header).  What growth costs is memory: the
 * unused end of the newest chunk, less than 1/8 of the pool.  (A tail
 * abandoned by a request that did not fit is always smaller than that
 * request, with or without growth.)
 *
 * Freeing is stack-like: only the last allocation is really freed; any
 * other free is a silent no-op and the memory comes back at destroy.  A
 * free that empties a chunk other than the first releases it and makes
 * the previous chunk current again.  realloc grows the last allocation in
 * place when the chunk has room, else allocates and copies.
 *
 * Sizes.  tdbe_pool_alloc() aligns the returned pointer to 8 bytes but
 * does NOT round the size; tdbe_pool_alloc_unaligned() does neither (byte
 * strings).  Therefore tdbe_pool_free() and tdbe_pool_realloc() must be
 * given exactly the size that was allocated (or last realloc'ed), and they
 * compare ptr + size with the bump pointer without any rounding.  That is
 * the lesson of TfwPool #1540: when alloc stopped rounding sizes but free
 * and realloc still rounded them to 8, a free of an odd size silently
 * did nothing, and a realloc could "grow in place" over a later unaligned
 * allocation that sat inside the rounding slack.
 *
 * Alignment is 8 bytes (TDBE_POOL_ALIGN); chunks start 16-byte aligned.
 *
 * Threads.  A pool and the cache it was created with are single-threaded
 * and unlocked: the owner keeps one cache per thread (per CPU in the
 * kernel) and uses a pool only on the thread of its cache.
 *
 * Failure.  Every allocating function returns NULL when the platform has
 * no pages (or the cache's page limit is reached); the pool is unchanged
 * and stays usable.  Nothing aborts.
 */
#ifndef TDB_CORE_POOL_H
#define TDB_CORE_POOL_H

#include "platform.h"

#define TDBE_POOL_ALIGN        8u
/* Largest chunk: 2^18 pages = 1 GiB; bigger requests fail with NULL. */
#define TDBE_POOL_ORDER_MAX    18u
/* Most pages a cache can keep. */
#define TDBE_POOL_CACHE_MAX    512u
/*
 * Default cache.grow_order: the largest chunk a pool takes by itself for
 * small requests.  2 MiB in user space (one mmap, a possible huge page);
 * in the kernel no more than PAGE_ALLOC_COSTLY_ORDER, which atomic
 * allocations can still expect to get.
 */
#ifdef __KERNEL__
#define TDBE_POOL_GROW_ORDER   3u
#else
#define TDBE_POOL_GROW_ORDER   9u
#endif

/*
 * A cache of free order-0 pages shared by the pools of one thread, so
 * that pools created and destroyed in a loop (one per request) do not go
 * to the page allocator.  Only order-0 pages are kept: bigger chunks go
 * straight back to the platform, where they can coalesce for the next
 * large request.  Not thread-safe (see above).
 *
 * Fields are public so callers and tests can read the counters; change
 * them only through the functions below, except `limit' and
 * `grow_order', which may be set at any time.
 */
struct tdbe_pool_cache {
	unsigned int count;      /* pages in pages[] now */
	unsigned int cap;        /* pages[] is never filled beyond this */
	/*
	 * Pages obtained from tdbp_pages_alloc() and not yet given back
	 * with tdbp_pages_free(): in pools of this cache or in pages[].
	 */
	size_t held;
	/*
	 * If non-zero, a page allocation that would make held exceed limit
	 * fails (after giving cached pages back to make room).  Bounds the
	 * scratch memory of one thread; tests also use it to inject failure.
	 */
	size_t limit;
	/*
	 * Largest order of a chunk taken for growth (see Growth above);
	 * TDBE_POOL_GROW_ORDER after init, 0 gives TfwPool's one page at a
	 * time.  May be changed at any time, at most TDBE_POOL_ORDER_MAX.
	 */
	unsigned int grow_order;
	void *pages[TDBE_POOL_CACHE_MAX];
};

/* Chunk header at the start of every chunk (16 bytes). */
struct tdbe_pool_chunk {
	struct tdbe_pool_chunk *next;   /* older chunk; NULL for the first */
	unsigned int order;             /* set when the chunk is taken */
	unsigned int off;               /* bump offset, saved when not current */
};

/*
 * The pool descriptor, inside the first chunk.  pos and end describe the
 * current chunk so that the fast paths never touch its header.
 * Invariants:
 *   (char *)(curr + 1) <= pos <= end = (char *)curr + (PAGE_SIZE << curr->order)
 *   every byte in [pos, end) is free; pos never moves below the end of a
 *   live allocation of the current chunk;
 *   for a chunk c that is not current, c->off is where pos was when it
 *   stopped being current;
 *   the first chunk's allocations start after the descriptor, so
 *   pos == (char *)(curr + 1) only happens in a chunk other than the first.
 */
struct tdbe_pool {
	char *pos;                      /* next free byte of curr */
	char *end;                      /* one past the last byte of curr */
	struct tdbe_pool_chunk *curr;   /* newest chunk, head of the list */
	struct tdbe_pool_cache *cache;  /* pages come from and go back here */
	size_t pages;                   /* in all chunks of the pool now */
};

/* --- the page cache --------------------------------------------------- */

/*
 * Prepare a cache that keeps at most cap pages (0 keeps none, which is
 * handy under AddressSanitizer).  -EINVAL if cap > TDBE_POOL_CACHE_MAX.
 */
int tdbe_pool_cache_init(struct tdbe_pool_cache *c, unsigned int cap);
/*
 * Give every cached page back to the platform.  All pools of the cache
 * should be destroyed first; pages still in pools are logged as a leak.
 */
void tdbe_pool_cache_destroy(struct tdbe_pool_cache *c);

/* --- pools ------------------------------------------------------------ */

/*
 * A new pool whose first chunk has room for at least hint bytes after the
 * descriptor (0: one page).  NULL if no memory.
 */
struct tdbe_pool *tdbe_pool_create(struct tdbe_pool_cache *c, size_t hint);
/* Release every chunk: order-0 ones to the cache, bigger ones to the
 * platform.  All memory of the pool, descriptor included, is gone. */
void tdbe_pool_destroy(struct tdbe_pool *p);

/* Out-of-line halves of the inline functions below. */
void *__tdbe_pool_alloc_slow(struct tdbe_pool *p, size_t n);
void __tdbe_pool_pop(struct tdbe_pool *p);

/*
 * n bytes aligned to TDBE_POOL_ALIGN, or NULL.  The fast path is a bump:
 * align pos, compare the room with n, store the new pos.  The comparison
 * is done as (end - r >= n) so that a huge n cannot overflow a pointer;
 * r <= end always holds because end is page aligned.
 */
static inline void *
tdbe_pool_alloc(struct tdbe_pool *p, size_t n)
{
	char *r = (char *)(((uintptr_t)p->pos + (TDBE_POOL_ALIGN - 1))
			   & ~(uintptr_t)(TDBE_POOL_ALIGN - 1));

	if (tdb_likely((size_t)(p->end - r) >= n)) {
		p->pos = r + n;
		return r;
	}
	return __tdbe_pool_alloc_slow(p, n);
}

/* n bytes with no alignment (strings); packs right after the last byte. */
static inline void *
tdbe_pool_alloc_unaligned(struct tdbe_pool *p, size_t n)
{
	char *r = p->pos;

	if (tdb_likely((size_t)(p->end - r) >= n)) {
		p->pos = r + n;
		return r;
	}
	return __tdbe_pool_alloc_slow(p, n);
}

/*
 * Free ptr of exactly n bytes (the size given to alloc, not rounded).
 * Only the last allocation is freed; anything else is a no-op.  A chunk
 * emptied by the free is released unless it is the first one.
 */
static inline void
tdbe_pool_free(struct tdbe_pool *p, void *ptr, size_t n)
{
	if ((char *)ptr + n != p->pos)
		return;
	p->pos = (char *)ptr;
	/* Never true in the first chunk: the descriptor is in the way. */
	if (tdb_unlikely((char *)ptr == (char *)(p->curr + 1)))
		__tdbe_pool_pop(p);
}

/*
 * Resize ptr from old_n to new_n bytes (old_n exactly as allocated).
 * In place if ptr is the last allocation and its chunk has room, or if
 * the block shrinks; else a new aligned block with the contents copied
 * (the old block is then freed if it was the last one, otherwise it stays
 * until destroy).  ptr == NULL allocates.  NULL on failure, with ptr
 * untouched and still valid.
 */
void *tdbe_pool_realloc(struct tdbe_pool *p, void *ptr, size_t old_n,
			size_t new_n);

/* Bytes left in the current chunk (the most that fits without a new one). */
static inline size_t
tdbe_pool_room(const struct tdbe_pool *p)
{
	return (size_t)(p->end - p->pos);
}

#endif
