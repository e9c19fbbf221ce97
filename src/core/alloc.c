// SPDX-License-Identifier: GPL-2.0-only
/*
 * alloc.c - the record allocator: objects of 16 B .. 1 MiB+ inside a
 * table's extents, freed in any order and reused.
 *
 * Pages (4 KiB) of an extent are free or belong to a slab.  A slab serves
 * one size class (128 classes, spaced 16 B up to 256 B then sixteen per
 * power of two up to 32 KiB, so a class is at most 1/16 bigger than what
 * it holds), spans as many pages (up to 32) as keeps its header and tail
 * within 1/64 of it, and keeps its free objects on a list threaded
 * through them.  An
 * object over 32 KiB gets its own run of pages (waste < 4 KiB).  Slabs
 * with free objects sit on their class's partial list; an empty slab goes
 * back to its extent's page map unless it is the class's last one.
 *
 * Invariants: an object offset is always >= 64 past its slab's first
 * page, so it is never 0; every used page records its slab's first page
 * in page_slab[]; a slab is on the partial list iff 0 < nfree.
 * Only the table's writer calls in here, and only offsets whose grace
 * period has passed are freed (table.c's limbo), so writing into a free
 * object is safe.
 */
#include "internal.h"

_Static_assert(sizeof(struct tdb_region_hdr) <= TDBA_EXT_HDR_OFF_0,
	       "the region header overlaps extent 0's extent header");
_Static_assert(TDBA_NCLASSES == 16 + 7 * TDBA_CLASS_STEPS,
	       "TDBA_NCLASSES must cover 256 B .. TDBA_SMALL_MAX");

#define STEP_BITS 4u               /* log2(TDBA_CLASS_STEPS) */
#define SLAB_WASTE_DIV 64u         /* header + tail <= 1/64 of a slab */
#define SLAB_PAGES_MAX 32u

uint32_t tdba_class_size(unsigned int cls)
{
	unsigned int p, k;

	if (cls < 16)
		return (cls + 1) * 16;
	p = 8 + (cls - 16) / TDBA_CLASS_STEPS;
	k = (cls - 16) % TDBA_CLASS_STEPS + 1;
	return (1u << p) + k * (1u << (p - STEP_BITS));
}

/* The smallest class that holds size bytes (1 .. TDBA_SMALL_MAX). */
unsigned int tdba_size_class(size_t size)
{
	unsigned int p, k;

	if (size <= 256)
		return size <= 16 ? 0 : (unsigned int)((size + 15) / 16) - 1;
	p = 63 - (unsigned int)__builtin_clzll((unsigned long long)size - 1);
	k = (unsigned int)((size - (1ull << p) + (1ull << (p - STEP_BITS)) -
			    1) >> (p - STEP_BITS));
	return 16 + (p - 8) * TDBA_CLASS_STEPS + k - 1;
}

/* Bytes of an n-page slab of objects of sz bytes that hold no object:
 * its header and the tail too short for one more. */
static uint32_t slab_waste(unsigned int n, uint32_t sz)
{
	uint32_t room = n * TDB_PAGE - TDBA_SLAB_HDR;

	return room % sz + TDBA_SLAB_HDR;
}

/* Pages of a slab of class size sz: the fewest whose header and tail are
 * at most 1/64 of the slab, or (none up to 32 pages is) the 32 or fewer
 * that waste the least share. */
static unsigned int slab_pages(uint32_t sz)
{
	unsigned int n, best = 0;
	uint64_t bw = 1, bn = 0;         /* best waste / best n*PAGE */

	for (n = 1; n <= SLAB_PAGES_MAX; n++) {
		uint32_t w;

		if (n * TDB_PAGE - TDBA_SLAB_HDR < sz)
			continue;
		w = slab_waste(n, sz);
		if (w * SLAB_WASTE_DIV <= n * TDB_PAGE)
			return n;
		if (!best || (uint64_t)w * bn < bw * n * TDB_PAGE) {
			best = n;
			bw = w;
			bn = (uint64_t)n * TDB_PAGE;
		}
	}
	return best;
}

void tdba_init_classes(uint16_t class_pages[TDBA_NCLASSES])
{
	unsigned int c;

	for (c = 0; c < TDBA_NCLASSES; c++)
		class_pages[c] = (uint16_t)slab_pages(tdba_class_size(c));
}

/* The head of class cls's list of slabs with free objects. */
static uint64_t *partial_head(struct tdb_region_hdr *h, unsigned int cls)
{
	return cls < TDBA_PARTIAL_LO ? &h->partial[cls]
				     : &h->partial_hi[cls - TDBA_PARTIAL_LO];
}

void tdba_init_extent(struct tdb_map *m, uint32_t idx)
{
	struct tdba_ext *x = tdbr_ext_hdr(m, idx);
	unsigned int w;

	for (w = 0; w < TDB_EXT_PAGES / 64; w++)
		x->free_map[w] = ~0ull;
	x->free_map[0] &= ~1ull;            /* page 0 holds the headers */
	x->nfree = TDB_EXT_PAGES - 1;
}

/* --- pages ------------------------------------------------------------- */

/* First run of n free pages in the map, or -1. */
static int find_run(const uint64_t *map, unsigned int n)
{
	unsigned int i = 0;

	while (i < TDB_EXT_PAGES) {
		unsigned int w = i / 64, start, end;
		uint64_t bits = map[w] & (~0ull << (i % 64));

		if (!bits) {
			i = (w + 1) * 64;
			continue;
		}
		start = w * 64 + (unsigned int)__builtin_ctzll(bits);
		end = start;
		while (end < TDB_EXT_PAGES && end - start < n &&
		       (map[end / 64] >> (end % 64) & 1))
			end++;
		if (end - start >= n)
			return (int)start;
		i = end;
	}
	return -1;
}

static void mark_pages(struct tdba_ext *x, unsigned int first, unsigned int n,
		       bool used)
{
	unsigned int p;

	for (p = first; p < first + n; p++) {
		if (used) {
			x->free_map[p / 64] &= ~(1ull << (p % 64));
			x->page_slab[p] = (uint16_t)first;
		} else {
			x->free_map[p / 64] |= 1ull << (p % 64);
		}
	}
	x->nfree = used ? x->nfree - n : x->nfree + n;
}

/* Offset of a fresh run of n pages, growing the region if needed. */
static uint64_t alloc_pages(struct tdbe_table *t, unsigned int n)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint32_t e;

	for (;;) {
		for (e = h->ext_hint; e < h->nextents; e++) {
			struct tdba_ext *x = tdbr_ext_hdr(&t->map, e);
			int p;

			if (x->nfree < n)
				continue;
			p = find_run(x->free_map, n);
			if (p < 0)
				continue;
			mark_pages(x, (unsigned int)p, n, true);
			return ((uint64_t)e << TDBP_EXTENT_SHIFT) +
			       ((uint64_t)p << TDB_PAGE_SHIFT);
		}
		/* Every extent below nextents lacked a run of n pages; for
		 * single pages that means they are all full. */
		if (n == 1)
			h->ext_hint = h->nextents;
		if (tdbr_grow(t))
			return 0;
	}
}

static void free_pages(struct tdbe_table *t, uint64_t off, unsigned int n)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint32_t e = (uint32_t)(off >> TDBP_EXTENT_SHIFT);

	mark_pages(tdbr_ext_hdr(&t->map, e),
		   (unsigned int)((off & TDB_EXT_MASK) >> TDB_PAGE_SHIFT), n,
		   false);
	if (e < h->ext_hint)
		h->ext_hint = e;
}

/* --- slabs ------------------------------------------------------------- */

static struct tdba_slab *slab_at(struct tdbe_table *t, uint64_t off)
{
	return tdb_ptr(&t->map, off);
}

static uint64_t slab_of(struct tdbe_table *t, uint64_t obj)
{
	uint32_t e = (uint32_t)(obj >> TDBP_EXTENT_SHIFT);
	struct tdba_ext *x = tdbr_ext_hdr(&t->map, e);
	unsigned int p = (unsigned int)((obj & TDB_EXT_MASK) >> TDB_PAGE_SHIFT);

	return ((uint64_t)e << TDBP_EXTENT_SHIFT) +
	       ((uint64_t)x->page_slab[p] << TDB_PAGE_SHIFT);
}

static void partial_push(struct tdbe_table *t, unsigned int cls, uint64_t so)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	struct tdba_slab *s = slab_at(t, so);

	s->prev = 0;
	s->next = *partial_head(h, cls);
	if (s->next)
		slab_at(t, s->next)->prev = so;
	*partial_head(h, cls) = so;
}

static void partial_unlink(struct tdbe_table *t, unsigned int cls, uint64_t so)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	struct tdba_slab *s = slab_at(t, so);

	if (s->prev)
		slab_at(t, s->prev)->next = s->next;
	else
		*partial_head(h, cls) = s->next;
	if (s->next)
		slab_at(t, s->next)->prev = s->prev;
	s->next = s->prev = 0;
}

static uint64_t slab_new(struct tdbe_table *t, unsigned int cls)
{
	unsigned int n = t->class_pages[cls];
	uint64_t so = alloc_pages(t, n);
	struct tdba_slab *s;

	if (!so)
		return 0;
	s = slab_at(t, so);
	s->magic = TDBA_SLAB_MAGIC;
	s->cls = (uint16_t)cls;
	s->npages = (uint16_t)n;
	s->nobj = (n * TDB_PAGE - TDBA_SLAB_HDR) / tdba_class_size(cls);
	s->nfree = s->nobj;
	s->nbump = 0;
	s->free_head = 0;
	partial_push(t, cls, so);
	return so;
}

static uint64_t alloc_large(struct tdbe_table *t, size_t size)
{
	unsigned int n = (unsigned int)((size + TDBA_SLAB_HDR + TDB_PAGE - 1) >>
					TDB_PAGE_SHIFT);
	uint64_t so;
	struct tdba_slab *s;

	if (n > TDB_EXT_PAGES - 1)
		return 0;
	so = alloc_pages(t, n);
	if (!so)
		return 0;
	s = slab_at(t, so);
	memset(s, 0, sizeof(*s));
	s->magic = TDBA_SLAB_MAGIC;
	s->cls = TDBA_CLASS_LARGE;
	s->npages = (uint16_t)n;
	s->nobj = 1;
	tdb_hdr(&t->map)->bytes_allocated += (uint64_t)n * TDB_PAGE;
	return so + TDBA_SLAB_HDR;
}

uint64_t tdba_alloc(struct tdbe_table *t, size_t size)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	unsigned int cls;
	uint64_t so, obj;
	struct tdba_slab *s;
	uint32_t sz;

	if (size > TDBA_SMALL_MAX)
		return alloc_large(t, size);
	cls = tdba_size_class(size ? size : 1);
	sz = tdba_class_size(cls);
	so = *partial_head(h, cls);
	if (!so) {
		so = slab_new(t, cls);
		if (!so)
			return 0;
	}
	s = slab_at(t, so);
	if (s->free_head) {
		obj = s->free_head;
		s->free_head = *(uint64_t *)tdb_ptr(&t->map, obj);
	} else {
		obj = so + TDBA_SLAB_HDR + (uint64_t)s->nbump * sz;
		s->nbump++;
	}
	if (--s->nfree == 0)
		partial_unlink(t, cls, so);
	h->bytes_allocated += sz;
	return obj;
}

size_t tdba_usable(const struct tdbe_table *t, uint64_t off)
{
	struct tdba_slab *s = slab_at((struct tdbe_table *)t,
				      slab_of((struct tdbe_table *)t, off));

	if (s->cls == TDBA_CLASS_LARGE)
		return (size_t)s->npages * TDB_PAGE - TDBA_SLAB_HDR;
	return tdba_class_size(s->cls);
}

void tdba_free(struct tdbe_table *t, uint64_t obj)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint64_t so = slab_of(t, obj);
	struct tdba_slab *s = slab_at(t, so);
	unsigned int cls = s->cls;

	if (cls == TDBA_CLASS_LARGE) {
		h->bytes_allocated -= (uint64_t)s->npages * TDB_PAGE;
		s->magic = 0;
		free_pages(t, so, s->npages);
		return;
	}
	h->bytes_allocated -= tdba_class_size(cls);
	*(uint64_t *)tdb_ptr(&t->map, obj) = s->free_head;
	s->free_head = obj;
	if (s->nfree++ == 0)
		partial_push(t, cls, so);
	/* Give an empty slab's pages back, unless it is the only slab of its
	 * class with room: then the next alloc would just take it again. */
	if (s->nfree == s->nobj && (s->next || s->prev)) {
		partial_unlink(t, cls, so);
		s->magic = 0;
		free_pages(t, so, s->npages);
	}
}

/* --- statistics ---------------------------------------------------------- */

static void stat_slab(const struct tdba_slab *s, struct tdbe_alloc_stat *st)
{
	uint64_t bytes = (uint64_t)s->npages * TDB_PAGE;
	uint64_t sz;

	if (s->cls == TDBA_CLASS_LARGE) {
		st->runs++;
		st->run_pages += s->npages;
		return;
	}
	sz = tdba_class_size(s->cls);
	st->slabs++;
	st->slab_pages += s->npages;
	st->slab_headers += TDBA_SLAB_HDR;
	st->slab_tails += bytes - TDBA_SLAB_HDR - s->nobj * sz;
	st->slab_free += s->nfree * sz;
	st->slab_used += (uint64_t)(s->nobj - s->nfree) * sz;
	if (s->nfree)
		st->partial_slabs++;
}

static void stat_extent(struct tdbe_table *t, uint32_t e,
			struct tdbe_alloc_stat *st)
{
	struct tdba_ext *x = tdbr_ext_hdr(&t->map, e);
	unsigned int p;

	st->pages_free += x->nfree;
	for (p = 1; p < TDB_EXT_PAGES; p++) {
		uint64_t off;

		if (x->free_map[p / 64] >> (p % 64) & 1 ||
		    x->page_slab[p] != p)
			continue;
		off = ((uint64_t)e << TDBP_EXTENT_SHIFT) +
		      ((uint64_t)p << TDB_PAGE_SHIFT);
		stat_slab(slab_at(t, off), st);
	}
}

void tdbe_table_alloc_stat(struct tdbe_table *t, struct tdbe_alloc_stat *st)
{
	uint32_t e, n;

	memset(st, 0, sizeof(*st));
	tdbp_mutex_lock(t->wlock);
	n = tdb_hdr(&t->map)->nextents;
	st->pages_backed = (uint64_t)n * TDB_EXT_PAGES;
	st->pages_header = n;
	for (e = 0; e < n; e++)
		stat_extent(t, e, st);
	tdbp_mutex_unlock(t->wlock);
}
