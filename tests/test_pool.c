// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_pool.c - unit tests of the scratch region pool (src/core/pool.c).
 *
 * The test links the real engine and user-space platform (core_dep) and
 * wraps the platform's page allocator with the linker (--wrap, see
 * tests/meson.build), so every page the pool takes or gives back is seen
 * here: the wrappers count pages, check that each free names the order it
 * was allocated with, and can make the allocation fail on demand.  After
 * every test the pools and the cache are gone and no page may be left
 * outstanding.  Under -Db_sanitize=address,undefined the same run also
 * checks every pointer the pool hands out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pool.h"

/* --- the wrapped platform page allocator ------------------------------ */

void *__real_tdbp_pages_alloc(unsigned int order);
void __real_tdbp_pages_free(void *pages, unsigned int order);
void *__wrap_tdbp_pages_alloc(unsigned int order);
void __wrap_tdbp_pages_free(void *pages, unsigned int order);

#define PLAT_MAX 4096

static struct {
	long allocs;            /* successful tdbp_pages_alloc calls */
	long frees;             /* tdbp_pages_free calls */
	long pages_out;         /* pages allocated and not freed */
	int fail;               /* make tdbp_pages_alloc return NULL */
	unsigned int last_order;
	int nlive;
	struct { void *pg; unsigned int order; } live[PLAT_MAX];
} plat;

void *
__wrap_tdbp_pages_alloc(unsigned int order)
{
	void *pg;

	if (plat.fail)
		return NULL;
	pg = __real_tdbp_pages_alloc(order);
	if (!pg)
		return NULL;
	assert_int_equal((uintptr_t)pg & (TDBP_PAGE_SIZE - 1), 0);
	assert_true(plat.nlive < PLAT_MAX);
	plat.live[plat.nlive].pg = pg;
	plat.live[plat.nlive].order = order;
	plat.nlive++;
	plat.allocs++;
	plat.pages_out += 1L << order;
	plat.last_order = order;
	return pg;
}

void
__wrap_tdbp_pages_free(void *pg, unsigned int order)
{
	int i;

	for (i = 0; i < plat.nlive; i++)
		if (plat.live[i].pg == pg)
			break;
	assert_true(i < plat.nlive);                   /* allocated by us */
	assert_int_equal(plat.live[i].order, order);   /* with this order */
	plat.live[i] = plat.live[--plat.nlive];
	plat.frees++;
	plat.pages_out -= 1L << order;
	__real_tdbp_pages_free(pg, order);
}

/* --- fixtures ----------------------------------------------------------- */

static struct tdbe_pool_cache cache;

static int
setup(void **state)
{
	(void)state;
	memset(&plat, 0, sizeof(plat));
	assert_int_equal(tdbe_pool_cache_init(&cache, TDBE_POOL_CACHE_MAX), 0);
	return 0;
}

/* Every test destroys its pools; then nothing may be left anywhere. */
static int
teardown(void **state)
{
	(void)state;
	/* Whatever the pools held is now in the cache or back home. */
	assert_int_equal(cache.held, cache.count);
	assert_int_equal(plat.pages_out, (long)cache.held);
	tdbe_pool_cache_destroy(&cache);
	assert_int_equal(cache.held, 0);
	assert_int_equal(cache.count, 0);
	assert_int_equal(plat.pages_out, 0);
	assert_int_equal(plat.nlive, 0);
	assert_int_equal(plat.allocs, plat.frees);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

static uintptr_t
page_of(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(TDBP_PAGE_SIZE - 1);
}

static void
fill(void *p, size_t n, unsigned int seed, size_t from)
{
	unsigned char *b = p;

	for (size_t k = from; k < n; k++)
		b[k] = (unsigned char)(seed + k * 131);
}

static int
check(const void *p, size_t n, unsigned int seed)
{
	const unsigned char *b = p;

	for (size_t k = 0; k < n; k++)
		if (b[k] != (unsigned char)(seed + k * 131))
			return 0;
	return 1;
}

/* --- tests -------------------------------------------------------------- */

static void
test_cache_init(void **state)
{
	struct tdbe_pool_cache c;

	(void)state;
	assert_int_equal(tdbe_pool_cache_init(&c, TDBE_POOL_CACHE_MAX + 1),
			 -EINVAL);
	assert_int_equal(tdbe_pool_cache_init(&c, 0), 0);
	assert_int_equal(c.count, 0);
	assert_int_equal(c.held, 0);
	tdbe_pool_cache_destroy(&c);
}

static void
test_alignment(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	void *a;

	(void)state;
	assert_non_null(p);
	for (int i = 0; i < 2000; i++) {
		a = tdbe_pool_alloc(p, (size_t)(i % 37) + 1);
		assert_non_null(a);
		assert_int_equal((uintptr_t)a % TDBE_POOL_ALIGN, 0);
		memset(a, 0xa5, (size_t)(i % 37) + 1);
		/* An odd-sized string in between must not misalign the next. */
		a = tdbe_pool_alloc_unaligned(p, (size_t)(i % 5) + 1);
		assert_non_null(a);
		memset(a, 0x5a, (size_t)(i % 5) + 1);
	}
	/* A new chunk for a big request is aligned too (16 in fact). */
	a = tdbe_pool_alloc(p, 3 * TDBP_PAGE_SIZE);
	assert_non_null(a);
	assert_int_equal((uintptr_t)a % 16, 0);
	tdbe_pool_destroy(p);
}

static void
test_bump_contiguity(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *b, *c, *d, *s1, *s2, *e;
	size_t room;

	(void)state;
	assert_non_null(p);
	room = tdbe_pool_room(p);
	assert_true(room >= TDBP_PAGE_SIZE - 64);

	a = tdbe_pool_alloc(p, 24);
	b = tdbe_pool_alloc(p, 24);
	assert_ptr_equal(b, a + 24);
	assert_int_equal(tdbe_pool_room(p), room - 48);

	/* Size is not rounded, but the next aligned pointer is. */
	c = tdbe_pool_alloc(p, 5);
	assert_ptr_equal(c, b + 24);
	d = tdbe_pool_alloc(p, 8);
	assert_ptr_equal(d, c + 8);

	/* Strings pack byte after byte. */
	s1 = tdbe_pool_alloc_unaligned(p, 3);
	assert_ptr_equal(s1, d + 8);
	s2 = tdbe_pool_alloc_unaligned(p, 5);
	assert_ptr_equal(s2, s1 + 3);
	e = tdbe_pool_alloc(p, 1);
	assert_ptr_equal(e, s2 + 5);            /* s1 + 8: already aligned */
	s1 = tdbe_pool_alloc_unaligned(p, 1);
	assert_ptr_equal(s1, e + 1);
	e = tdbe_pool_alloc(p, 1);
	assert_ptr_equal(e, s1 + 7);            /* padded to 8 */

	/* A zero-byte allocation does not move anything. */
	room = tdbe_pool_room(p);
	a = tdbe_pool_alloc_unaligned(p, 0);
	assert_ptr_equal(a, e + 1);
	assert_int_equal(tdbe_pool_room(p), room);
	tdbe_pool_destroy(p);
}

/* Small allocations stay in the first page until it is full. */
static void
test_first_page_fill(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *first, *a = NULL;
	long allocs;
	int n = 0;

	(void)state;
	assert_non_null(p);
	allocs = plat.allocs;
	first = tdbe_pool_alloc(p, 24);
	/* The descriptor shares the page with the data. */
	assert_int_equal(page_of(first), page_of(p));
	while (tdbe_pool_room(p) >= 24) {
		a = tdbe_pool_alloc(p, 24);
		assert_ptr_equal(a, first + 24 * ++n);
		assert_int_equal(page_of(a), page_of(p));
	}
	assert_int_equal(plat.allocs, allocs);
	assert_true(n > 150);
	a = tdbe_pool_alloc(p, 24);
	assert_non_null(a);
	assert_int_not_equal(page_of(a), page_of(p));
	assert_int_equal(plat.allocs, allocs + 1);
	assert_int_equal(plat.last_order, 0);
	tdbe_pool_destroy(p);
	/* Both pages are cached now. */
	assert_int_equal(cache.count, 2);
}

static void
test_stack_free(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *b, *c, *s;
	size_t room0, room;

	(void)state;
	assert_non_null(p);
	room0 = tdbe_pool_room(p);
	a = tdbe_pool_alloc(p, 40);
	b = tdbe_pool_alloc(p, 24);
	tdbe_pool_free(p, b, 24);
	c = tdbe_pool_alloc(p, 24);
	assert_ptr_equal(c, b);
	tdbe_pool_free(p, c, 24);
	tdbe_pool_free(p, a, 40);
	assert_int_equal(tdbe_pool_room(p), room0);
	assert_ptr_equal(tdbe_pool_alloc(p, 40), a);

	/* Strings free the same way. */
	room = tdbe_pool_room(p);
	s = tdbe_pool_alloc_unaligned(p, 7);
	assert_int_equal(tdbe_pool_room(p), room - 7);
	tdbe_pool_free(p, s, 7);
	assert_int_equal(tdbe_pool_room(p), room);
	tdbe_pool_destroy(p);
}

static void
test_free_not_last_is_noop(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *b, *c;
	size_t room;

	(void)state;
	assert_non_null(p);
	a = tdbe_pool_alloc(p, 32);
	b = tdbe_pool_alloc(p, 32);
	fill(a, 32, 1, 0);
	fill(b, 32, 2, 0);
	room = tdbe_pool_room(p);
	tdbe_pool_free(p, a, 32);
	assert_int_equal(tdbe_pool_room(p), room);
	c = tdbe_pool_alloc(p, 32);
	assert_ptr_equal(c, b + 32);
	assert_true(check(a, 32, 1));
	assert_true(check(b, 32, 2));
	/* A pointer from elsewhere (here: the middle of b) is ignored too. */
	tdbe_pool_free(p, b + 8, 8);
	tdbe_pool_free(p, b, 16);
	assert_ptr_equal(tdbe_pool_alloc(p, 8), c + 32);
	tdbe_pool_destroy(p);
}

/*
 * TfwPool #1540: alloc aligns the pointer but does not round the size, so
 * free and realloc must use the exact size too.
 */
static void
test_exact_sizes_1540(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *s, *r;
	size_t room;

	(void)state;
	assert_non_null(p);
	room = tdbe_pool_room(p);

	/* An odd size frees (a rounding free would miss it). */
	a = tdbe_pool_alloc(p, 5);
	tdbe_pool_free(p, a, 5);
	assert_int_equal(tdbe_pool_room(p), room);
	assert_ptr_equal(tdbe_pool_alloc(p, 5), a);

	/* The rounded size is not the allocation: no-op. */
	tdbe_pool_free(p, a, 8);
	assert_int_equal(tdbe_pool_room(p), room - 5);

	/*
	 * A string packed into a's rounding slack: a is not the last
	 * allocation any more, so realloc must not grow it in place over s.
	 */
	memcpy(a, "abcde", 5);
	s = tdbe_pool_alloc_unaligned(p, 3);
	assert_ptr_equal(s, a + 5);
	memcpy(s, "xyz", 3);
	tdbe_pool_free(p, a, 5);                 /* not last: no-op */
	assert_memory_equal(s, "xyz", 3);
	r = tdbe_pool_realloc(p, a, 5, 6);
	assert_non_null(r);
	assert_ptr_not_equal(r, a);
	assert_memory_equal(r, "abcde", 5);
	assert_memory_equal(s, "xyz", 3);
	assert_memory_equal(a, "abcde", 5);

	/* The string itself is the last one: it grows in place. */
	r = tdbe_pool_alloc_unaligned(p, 3);
	memcpy(r, "123", 3);
	s = tdbe_pool_realloc(p, r, 3, 11);
	assert_ptr_equal(s, r);
	assert_memory_equal(s, "123", 3);
	tdbe_pool_destroy(p);
}

/* Frees walk back over chunk boundaries and release emptied chunks. */
static void
test_free_pops_chunks(void **state)
{
	enum { SZ = 200, MAX = 200 };
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *blk[MAX];
	size_t room0;
	unsigned int cached;
	int n, pages = 1;

	(void)state;
	assert_non_null(p);
	room0 = tdbe_pool_room(p);
	for (n = 0; n < MAX; n++) {
		blk[n] = tdbe_pool_alloc(p, SZ);
		assert_non_null(blk[n]);
		fill(blk[n], SZ, (unsigned int)n, 0);
		if (n && page_of(blk[n]) != page_of(blk[n - 1]))
			pages++;
	}
	assert_true(pages >= 9);
	assert_int_equal(cache.held, (size_t)pages);

	/* A free that is not of the last block changes nothing. */
	tdbe_pool_free(p, blk[0], SZ);

	cached = cache.count;
	for (n = MAX - 1; n >= 0; n--) {
		assert_true(check(blk[n], SZ, (unsigned int)n));
		tdbe_pool_free(p, blk[n], SZ);
		if (n && page_of(blk[n]) != page_of(blk[n - 1])) {
			/* blk[n] opened its chunk: the chunk went to the cache
			 * and the pool is back where blk[n - 1] ended. */
			assert_int_equal(cache.count, ++cached);
			assert_ptr_equal(p->pos, blk[n - 1] + SZ);
		}
	}
	assert_int_equal(cache.count, (unsigned int)pages - 1);
	assert_int_equal(tdbe_pool_room(p), room0);
	assert_ptr_equal(p->curr, (void *)page_of(p));

	/* The popped chunk's abandoned tail is usable again. */
	blk[0] = tdbe_pool_alloc(p, SZ);
	blk[1] = tdbe_pool_alloc(p, TDBP_PAGE_SIZE);    /* new chunk */
	tdbe_pool_free(p, blk[1], TDBP_PAGE_SIZE);      /* popped */
	assert_ptr_equal(tdbe_pool_alloc(p, SZ), blk[0] + SZ);
	tdbe_pool_destroy(p);
}

static void
test_realloc_in_place(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *r;
	size_t room;

	(void)state;
	assert_non_null(p);
	a = tdbe_pool_alloc(p, 100);
	fill(a, 100, 7, 0);
	room = tdbe_pool_room(p);
	r = tdbe_pool_realloc(p, a, 100, 1000);
	assert_ptr_equal(r, a);
	assert_true(check(r, 100, 7));
	assert_int_equal(tdbe_pool_room(p), room - 900);
	fill(r, 1000, 7, 100);

	/* Shrink in place gives the bytes back. */
	r = tdbe_pool_realloc(p, a, 1000, 50);
	assert_ptr_equal(r, a);
	assert_int_equal(tdbe_pool_room(p), room + 50);
	assert_true(check(r, 50, 7));

	/* Grow up to the exact end of the chunk. */
	room = tdbe_pool_room(p);
	r = tdbe_pool_realloc(p, a, 50, 50 + room);
	assert_ptr_equal(r, a);
	assert_int_equal(tdbe_pool_room(p), 0);
	assert_true(check(r, 50, 7));
	memset(r + 50, 0, room);

	/* NULL allocates. */
	tdbe_pool_free(p, a, 50 + room);
	r = tdbe_pool_realloc(p, NULL, 0, 16);
	assert_ptr_equal(r, a);
	tdbe_pool_destroy(p);
}

static void
test_realloc_move(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	char *a, *b, *r, *s;
	unsigned int cached;
	size_t room;

	(void)state;
	assert_non_null(p);

	/* Not the last block: moves, the old copy stays valid. */
	a = tdbe_pool_alloc(p, 100);
	fill(a, 100, 3, 0);
	b = tdbe_pool_alloc(p, 8);
	memcpy(b, "12345678", 8);
	r = tdbe_pool_realloc(p, a, 100, 200);
	assert_non_null(r);
	assert_ptr_not_equal(r, a);
	assert_true(check(r, 100, 3));
	assert_true(check(a, 100, 3));
	assert_memory_equal(b, "12345678", 8);
	/* Shrinking a block that is not last keeps it where it is. */
	assert_ptr_equal(tdbe_pool_realloc(p, a, 100, 10), a);

	/* The last block outgrows its chunk: moves to a new chunk, and its
	 * bytes go back to the old chunk. */
	a = tdbe_pool_alloc(p, 1000);
	fill(a, 1000, 4, 0);
	room = tdbe_pool_room(p) + 1000;
	r = tdbe_pool_realloc(p, a, 1000, 10000);
	assert_non_null(r);
	assert_ptr_not_equal(page_of(r), page_of(a));
	assert_int_equal(plat.last_order, 2);   /* 16 + 10000 bytes */
	assert_true(check(r, 1000, 4));
	memset(r + 1000, 0xee, 9000);
	tdbe_pool_free(p, r, 10000);            /* pops the new chunk */
	assert_int_equal(tdbe_pool_room(p), room);
	assert_ptr_equal(tdbe_pool_alloc(p, 1000), a);

	/* A chunk that held only the moved block is released at once. */
	while (tdbe_pool_room(p) >= 8)
		tdbe_pool_alloc(p, 8);
	a = tdbe_pool_alloc(p, 3000);           /* alone in a new page */
	assert_ptr_equal(p->curr + 1, (void *)a);
	fill(a, 3000, 5, 0);
	cached = cache.count;
	r = tdbe_pool_realloc(p, a, 3000, 5000);
	assert_non_null(r);
	assert_int_equal(plat.last_order, 1);
	assert_int_equal(cache.count, cached + 1);
	assert_true(check(r, 3000, 5));
	assert_ptr_equal(p->curr->next, (void *)page_of(p));
	/* Growing again in place, then freeing goes back to the first page. */
	s = tdbe_pool_realloc(p, r, 5000, 8000);
	assert_ptr_equal(s, r);
	assert_true(check(s, 3000, 5));
	tdbe_pool_free(p, s, 8000);
	assert_ptr_equal(p->curr, (void *)page_of(p));
	assert_true(tdbe_pool_room(p) < 8);
	tdbe_pool_destroy(p);
}

static void
test_large(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	size_t big3 = 4 * TDBP_PAGE_SIZE + 1, big8 = (size_t)1 << 20;
	char *x, *y, *z, *w;
	size_t room0 = tdbe_pool_room(p);

	(void)state;
	assert_non_null(p);
	x = tdbe_pool_alloc(p, 5000);             /* more than a page */
	assert_non_null(x);
	assert_int_equal(plat.last_order, 1);
	fill(x, 5000, 11, 0);
	/* Small allocations use the big chunk's tail. */
	y = tdbe_pool_alloc(p, 24);
	assert_ptr_equal(y, x + 5000);
	fill(y, 24, 12, 0);
	z = tdbe_pool_alloc(p, big3);             /* several pages */
	assert_non_null(z);
	assert_int_equal(plat.last_order, 3);
	fill(z, big3, 13, 0);
	w = tdbe_pool_alloc_unaligned(p, big8);   /* 1 MiB */
	assert_non_null(w);
	assert_int_equal(plat.last_order, 9);
	fill(w, big8, 14, 0);
	assert_int_equal(cache.held, 1 + 2 + 8 + 512);

	assert_true(check(x, 5000, 11));
	assert_true(check(y, 24, 12));
	assert_true(check(z, big3, 13));
	assert_true(check(w, big8, 14));

	/* Multi-page chunks go back to the platform, not to the cache. */
	tdbe_pool_free(p, w, big8);
	assert_int_equal(cache.held, 1 + 2 + 8);
	tdbe_pool_free(p, z, big3);
	tdbe_pool_free(p, y, 24);
	tdbe_pool_free(p, x, 5000);
	assert_int_equal(cache.held, 1);
	assert_int_equal(cache.count, 0);
	assert_int_equal(tdbe_pool_room(p), room0);

	/* A first chunk sized by the hint. */
	tdbe_pool_destroy(p);
	p = tdbe_pool_create(&cache, 3 * TDBP_PAGE_SIZE);
	assert_non_null(p);
	assert_int_equal(plat.last_order, 2);
	assert_true(tdbe_pool_room(p) >= 3 * TDBP_PAGE_SIZE);
	tdbe_pool_destroy(p);
}

/* Requests beyond the largest chunk fail without asking the platform. */
static void
test_too_large(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	size_t max = TDBP_PAGE_SIZE << TDBE_POOL_ORDER_MAX;
	long allocs = plat.allocs;
	char *a;

	(void)state;
	assert_non_null(p);
	a = tdbe_pool_alloc(p, 16);
	memcpy(a, "0123456789abcdef", 16);
	assert_null(tdbe_pool_alloc(p, SIZE_MAX));
	assert_null(tdbe_pool_alloc(p, SIZE_MAX / 2));
	assert_null(tdbe_pool_alloc(p, max));
	assert_null(tdbe_pool_alloc(p, max - 15));
	assert_null(tdbe_pool_alloc_unaligned(p, SIZE_MAX));
	assert_null(tdbe_pool_realloc(p, a, 16, SIZE_MAX));
	assert_null(tdbe_pool_create(&cache, SIZE_MAX));
	assert_null(tdbe_pool_create(&cache, max));
	assert_int_equal(plat.allocs, allocs);
	/* The pool is untouched: a is still the last block. */
	assert_memory_equal(a, "0123456789abcdef", 16);
	assert_ptr_equal(tdbe_pool_realloc(p, a, 16, 32), a);
	tdbe_pool_destroy(p);
}

/* Per-request pools come and go without touching the page allocator. */
static void
test_many_pools_reuse_cache(void **state)
{
	long allocs;

	(void)state;
	for (int i = 0; i < 20000; i++) {
		struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
		size_t sz = (i & 3) ? 24 : 240;

		assert_non_null(p);
		for (int j = 0; j < 100; j++) {
			long *o = tdbe_pool_alloc(p, sz);

			assert_non_null(o);
			*o = j;
		}
		tdbe_pool_destroy(p);
		if (i == 0) {
			/* 100 x 240 B: the first page and 5 more. */
			assert_int_equal(plat.allocs, 6);
			assert_int_equal(cache.count, 6);
		}
	}
	assert_int_equal(plat.allocs, 6);
	assert_int_equal(plat.frees, 0);
	assert_int_equal(cache.count, 6);
	assert_int_equal(cache.held, 6);

	/* More pools alive at once than the cache keeps: the excess pages go
	 * back to the platform. */
	{
		enum { NP = TDBE_POOL_CACHE_MAX + 88 };
		static struct tdbe_pool *ps[NP];

		for (int i = 0; i < NP; i++) {
			ps[i] = tdbe_pool_create(&cache, 0);
			assert_non_null(ps[i]);
		}
		allocs = plat.allocs;
		assert_int_equal(allocs, NP);
		assert_int_equal(cache.count, 0);
		for (int i = 0; i < NP; i++)
			tdbe_pool_destroy(ps[i]);
		assert_int_equal(cache.count, TDBE_POOL_CACHE_MAX);
		assert_int_equal(plat.frees, 88);
	}
}

/* A cache of capacity 0 keeps nothing. */
static void
test_cache_cap_zero(void **state)
{
	struct tdbe_pool_cache c0;
	struct tdbe_pool *p;

	(void)state;
	assert_int_equal(tdbe_pool_cache_init(&c0, 0), 0);
	for (int i = 0; i < 10; i++) {
		p = tdbe_pool_create(&c0, 0);
		assert_non_null(p);
		assert_non_null(tdbe_pool_alloc(p, 10000));
		tdbe_pool_destroy(p);
		assert_int_equal(c0.count, 0);
		assert_int_equal(c0.held, 0);
		assert_int_equal(plat.pages_out, 0);
	}
	tdbe_pool_cache_destroy(&c0);
	assert_int_equal(plat.allocs, 20);
}

/* The platform has no pages: NULL, and the pool stays usable. */
static void
test_alloc_failure(void **state)
{
	struct tdbe_pool *p, *q;
	char *a, *b, *r;
	size_t room;

	(void)state;
	plat.fail = 1;
	assert_null(tdbe_pool_create(&cache, 0));
	plat.fail = 0;

	p = tdbe_pool_create(&cache, 0);
	assert_non_null(p);
	a = tdbe_pool_alloc(p, 100);
	fill(a, 100, 21, 0);
	/* Leave b as the last block of the first page, < 200 bytes after. */
	while (tdbe_pool_room(p) >= 300)
		tdbe_pool_alloc(p, 100);
	b = tdbe_pool_alloc(p, 100);
	assert_int_equal(page_of(b), page_of(p));
	assert_true(tdbe_pool_room(p) < 200);
	fill(b, 100, 22, 0);
	room = tdbe_pool_room(p);

	plat.fail = 1;
	assert_null(tdbe_pool_alloc(p, 200));
	assert_null(tdbe_pool_alloc_unaligned(p, 200));
	assert_null(tdbe_pool_alloc(p, 3 * TDBP_PAGE_SIZE));
	/* A realloc that has to move fails and leaves b as it was. */
	assert_null(tdbe_pool_realloc(p, b, 100, 100 + room + 1));
	assert_int_equal(tdbe_pool_room(p), room);
	assert_true(check(b, 100, 22));
	assert_null(tdbe_pool_realloc(p, a, 100, 101));
	assert_true(check(a, 100, 21));
	/* What still fits is served. */
	assert_ptr_equal(tdbe_pool_alloc_unaligned(p, room), b + 100);
	assert_int_equal(tdbe_pool_room(p), 0);
	tdbe_pool_free(p, b + 100, room);
	assert_ptr_equal(tdbe_pool_realloc(p, b, 100, 100 + room), b);
	assert_ptr_equal(tdbe_pool_realloc(p, b, 100 + room, 100), b);
	/* No cached page yet: no pool.  With one cached, a pool can be
	 * made even while the platform fails. */
	q = tdbe_pool_create(&cache, 0);
	assert_null(q);
	plat.fail = 0;
	q = tdbe_pool_create(&cache, 0);
	assert_non_null(q);
	tdbe_pool_destroy(q);
	plat.fail = 1;
	q = tdbe_pool_create(&cache, 0);
	assert_non_null(q);
	tdbe_pool_destroy(q);

	/* And everything works again once memory is back. */
	plat.fail = 0;
	r = tdbe_pool_alloc(p, 200);
	assert_non_null(r);
	memset(r, 0, 200);
	tdbe_pool_free(p, r, 200);
	r = tdbe_pool_realloc(p, b, 100, 100 + room + 1);
	assert_non_null(r);
	assert_true(check(r, 100, 22));
	assert_true(check(a, 100, 21));
	tdbe_pool_destroy(p);
}

/* The cache's page limit refuses pages, after dropping cached ones. */
static void
test_page_limit(void **state)
{
	struct tdbe_pool *p, *q;
	char *a;

	(void)state;
	cache.limit = 3;
	p = tdbe_pool_create(&cache, 0);                /* 1 */
	assert_non_null(p);
	a = tdbe_pool_alloc(p, 2 * TDBP_PAGE_SIZE);     /* order 2: 4 pages */
	assert_null(a);
	a = tdbe_pool_alloc(p, TDBP_PAGE_SIZE);         /* order 1: 2 pages */
	assert_non_null(a);
	memset(a, 1, TDBP_PAGE_SIZE);
	assert_int_equal(cache.held, 3);
	assert_null(tdbe_pool_alloc(p, TDBP_PAGE_SIZE));
	assert_null(tdbe_pool_create(&cache, 0));
	tdbe_pool_free(p, a, TDBP_PAGE_SIZE);
	assert_int_equal(cache.held, 1);
	/* Fill the limit with cached pages, then ask for an order-1 chunk:
	 * the cache gives its pages back to make room. */
	q = tdbe_pool_create(&cache, 0);
	assert_non_null(q);
	assert_non_null(tdbe_pool_alloc(q, 3000));
	assert_non_null(tdbe_pool_alloc(q, 3000));
	tdbe_pool_destroy(q);
	assert_int_equal(cache.count, 2);
	assert_int_equal(cache.held, 3);
	a = tdbe_pool_alloc(p, TDBP_PAGE_SIZE);
	assert_non_null(a);
	assert_int_equal(cache.count, 0);
	assert_int_equal(cache.held, 3);
	cache.limit = 0;
	tdbe_pool_destroy(p);
}

/* Destroy returns every chunk of every size, wherever the pool stands. */
static void
test_destroy_frees_all(void **state)
{
	struct tdbe_pool *p[4];

	(void)state;
	for (int k = 0; k < 4; k++) {
		p[k] = tdbe_pool_create(&cache, (size_t)k * 5000);
		assert_non_null(p[k]);
		for (int i = 0; i < 300; i++) {
			size_t sz = (size_t)(i * 37 % 3000) + (i % 50 ? 0 : 20000);
			char *o = (i & 1) ? tdbe_pool_alloc(p[k], sz)
					  : tdbe_pool_alloc_unaligned(p[k], sz);

			assert_non_null(o);
			memset(o, i, sz);
			if (i % 7 == 0)
				tdbe_pool_free(p[k], o, sz);
		}
	}
	assert_true(plat.pages_out > 100);
	for (int k = 3; k >= 0; k--)
		tdbe_pool_destroy(p[k]);
	/* Only order-0 pages are left, all of them in the cache. */
	assert_int_equal(plat.pages_out, (long)cache.count);
	for (int i = 0; i < plat.nlive; i++)
		assert_int_equal(plat.live[i].order, 0);
}

/*
 * Small requests get one page at a time while the pool is small, then
 * chunks of 1/16-1/8 of the pool up to grow_order; big requests get the
 * order they need.
 */
static void
test_growth(void **state)
{
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	unsigned int max_order = 0, prev_order = 0, n_order0 = 1;
	long allocs = plat.allocs;
	char *o;

	(void)state;
	assert_non_null(p);
	assert_int_equal(cache.grow_order, TDBE_POOL_GROW_ORDER);
	while (p->pages < 8192) {               /* 32 MiB of 64 B objects */
		size_t before = p->pages;

		o = tdbe_pool_alloc(p, 64);
		assert_non_null(o);
		*(long *)o = 1;
		if (plat.allocs == allocs)
			continue;
		allocs = plat.allocs;
		/* A new chunk: order 0 below 16 pages, then 1/16..1/8. */
		if (before < 16) {
			assert_int_equal(plat.last_order, 0);
			n_order0++;
		} else {
			assert_true(((size_t)8 << plat.last_order) <= before);
			assert_true(((size_t)16 << plat.last_order) > before
				    || plat.last_order == TDBE_POOL_GROW_ORDER);
		}
		assert_true(plat.last_order >= prev_order);
		prev_order = plat.last_order;
		if (plat.last_order > max_order)
			max_order = plat.last_order;
	}
	assert_int_equal(n_order0, 16);
	assert_int_equal(max_order, TDBE_POOL_GROW_ORDER);

	/* A big request still gets just the order it needs. */
	while (tdbe_pool_room(p) >= 5000)
		tdbe_pool_alloc(p, 64);
	o = tdbe_pool_alloc(p, 5000);
	assert_non_null(o);
	assert_int_equal(plat.last_order, 1);
	tdbe_pool_free(p, o, 5000);

	/* A growth chunk that cannot be had falls back to one page. */
	while (tdbe_pool_room(p) >= 64)
		tdbe_pool_alloc(p, 64);
	cache.limit = cache.held + 1;
	o = tdbe_pool_alloc(p, 64);
	assert_non_null(o);
	assert_int_equal(plat.last_order, 0);
	cache.limit = 0;
	tdbe_pool_destroy(p);

	/* grow_order 0: one page at a time, like TfwPool. */
	cache.grow_order = 0;
	p = tdbe_pool_create(&cache, 0);
	assert_non_null(p);
	allocs = plat.allocs;
	for (int i = 0; i < 100000; i++) {
		o = tdbe_pool_alloc(p, 64);
		assert_non_null(o);
		if (plat.allocs != allocs)
			assert_int_equal(plat.last_order, 0);
		allocs = plat.allocs;
	}
	assert_true(p->pages > 1000);
	tdbe_pool_destroy(p);
}

/*
 * A random mix of every operation against a model of the live blocks:
 * blocks never overlap, keep their contents, and are aligned.
 */
struct blk {
	char *p;
	size_t n;
	unsigned int seed;
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t
rnd_size(void)
{
	unsigned int r = (unsigned int)(rnd() % 100);

	if (r < 70)
		return (size_t)(rnd() % 64);
	if (r < 90)
		return 64 + (size_t)(rnd() % 2000);
	if (r < 98)
		return 2000 + (size_t)(rnd() % 9000);
	return 9000 + (size_t)(rnd() % 70000);
}

static int
blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->p < y->p ? -1 : x->p > y->p;
}

static void
model_check(const struct tdbe_pool *p, struct blk *live, int n)
{
	static struct blk sorted[4096];
	const struct tdbe_pool_chunk *c;
	size_t pages = 0;
	int m = 0;

	/* The pool's page count matches its chunk list. */
	for (c = p->curr; c; c = c->next)
		pages += (size_t)1 << c->order;
	assert_int_equal(pages, p->pages);

	for (int i = 0; i < n; i++) {
		assert_true(check(live[i].p, live[i].n, live[i].seed));
		if (live[i].n)          /* empty blocks may share an address */
			sorted[m++] = live[i];
	}
	qsort(sorted, (size_t)m, sizeof(*sorted), blk_cmp);
	for (int i = 1; i < m; i++)
		assert_true(sorted[i - 1].p + sorted[i - 1].n <= sorted[i].p);
}

static void
test_random_model(void **state)
{
	enum { MAXB = 4096 };
	static struct blk live[MAXB];
	struct tdbe_pool *p = tdbe_pool_create(&cache, 0);
	size_t total = 0;
	int n = 0;

	(void)state;
	assert_non_null(p);
	for (int step = 0; step < 200000; step++) {
		unsigned int op = (unsigned int)(rnd() % 100);
		int force_free = n == MAXB || total > (32u << 20);

		if (n && (force_free || op < 25)) {
			/* Free the newest block (exact size). */
			struct blk *b = &live[--n];

			assert_true(check(b->p, b->n, b->seed));
			tdbe_pool_free(p, b->p, b->n);
			total -= b->n;
		} else if (n > 1 && op < 35) {
			/* Free an older block: must be a no-op. */
			int i = (int)(rnd() % (uint64_t)(n - 1));
			size_t room = tdbe_pool_room(p);
			char *pos = p->pos;

			tdbe_pool_free(p, live[i].p, live[i].n);
			assert_int_equal(tdbe_pool_room(p), room);
			assert_ptr_equal(p->pos, pos);
		} else if (n && op < 55) {
			/* Realloc the newest or an older block. */
			int i = (op & 1) ? n - 1 : (int)(rnd() % (uint64_t)n);
			struct blk *b = &live[i];
			size_t nn = rnd_size();
			int was_last = b->p + b->n == p->pos;
			char *r = tdbe_pool_realloc(p, b->p, b->n, nn);

			assert_non_null(r);
			assert_true(check(r, nn < b->n ? nn : b->n, b->seed));
			if (r == b->p || was_last) {
				/* Resized, or moved with its old bytes given
				 * back: the block is just r now. */
				fill(r, nn, b->seed, nn < b->n ? nn : b->n);
				total += nn;
				total -= b->n;
				b->p = r;
				b->n = nn;
			} else {
				/* Moved from the middle: the old block stays
				 * allocated, the new one is the newest. */
				assert_true(n < MAXB);
				assert_int_equal((uintptr_t)r % TDBE_POOL_ALIGN, 0);
				fill(r, nn, b->seed, nn < b->n ? nn : b->n);
				live[n].p = r;
				live[n].n = nn;
				live[n].seed = b->seed;
				n++;
				total += nn;
			}
		} else {
			int aligned = (int)(rnd() & 1);
			size_t sz = rnd_size();
			char *r = aligned ? tdbe_pool_alloc(p, sz)
					  : tdbe_pool_alloc_unaligned(p, sz);

			assert_non_null(r);
			if (aligned)
				assert_int_equal((uintptr_t)r % TDBE_POOL_ALIGN, 0);
			live[n].p = r;
			live[n].n = sz;
			live[n].seed = (unsigned int)rnd();
			fill(r, sz, live[n].seed, 0);
			n++;
			total += sz;
		}
		if (step % 997 == 0)
			model_check(p, live, n);
	}
	model_check(p, live, n);
	tdbe_pool_destroy(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_cache_init),
		T(test_alignment),
		T(test_bump_contiguity),
		T(test_first_page_fill),
		T(test_stack_free),
		T(test_free_not_last_is_noop),
		T(test_exact_sizes_1540),
		T(test_free_pops_chunks),
		T(test_realloc_in_place),
		T(test_realloc_move),
		T(test_large),
		T(test_too_large),
		T(test_many_pools_reuse_cache),
		T(test_cache_cap_zero),
		T(test_alloc_failure),
		T(test_page_limit),
		T(test_destroy_frees_all),
		T(test_growth),
		T(test_random_model),
	};

	return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
