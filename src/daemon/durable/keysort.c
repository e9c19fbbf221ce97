// SPDX-License-Identifier: GPL-2.0-only
/*
 * keysort.c - sorting a checkpoint's keys in LMDB's order (keysort.h).
 *
 * The sort is a radix sort on 8-byte chunks of the keys: each item
 * carries the chunk at the current depth (big-endian, zero-padded past
 * the key's end) in pfx, an LSD pass per byte of it orders the range,
 * skipping bytes that are the same in every item (common prefixes cost
 * one counting pass, not eight scatter passes).  Then each run of items
 * with the same chunk is finished:
 *  - items whose key ends within the chunk (klen <= depth + 8) are
 *    prefixes of every other key of the run (same bytes up to their end,
 *    then the run's zeros), so they come first, shortest first;
 *  - the others are sorted again at depth + 8.
 * Runs of at most SMALL items are sorted by insertion with a full
 * comparison.  Invariant of sort_at(depth): every item in the range has
 * the same first `depth` bytes and klen > depth.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "keysort.h"

#define SMALL 32u
#define REF_MASK ((1ull << 48) - 1)

int keysort_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

int keyset_add(struct keyset *ks, const void *key, size_t klen)
{
	if (klen > 0xffff || ks->len + klen > REF_MASK)
		return -E2BIG;
	if (ks->len + klen > ks->cap) {
		size_t cap = ks->cap ? ks->cap : 1u << 16;
		unsigned char *na;

		while (cap < ks->len + klen)
			cap *= 2;
		if (!(na = realloc(ks->arena, cap)))
			return -ENOMEM;
		ks->arena = na;
		ks->cap = cap;
	}
	if (ks->n == ks->vcap) {
		size_t cap = ks->vcap ? ks->vcap * 2 : 1024;
		struct kitem *nv = realloc(ks->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		ks->v = nv;
		ks->vcap = cap;
	}
	memcpy(ks->arena + ks->len, key, klen);
	ks->v[ks->n].pfx = 0;
	ks->v[ks->n].ref = (uint64_t)klen << 48 | ks->len;
	ks->n++;
	ks->len += klen;
	return 0;
}

int keyset_reserve(struct keyset *ks, size_t n)
{
	struct kitem *nv;

	if (n <= ks->vcap)
		return 0;
	if (!(nv = realloc(ks->v, n * sizeof(*nv))))
		return -ENOMEM;
	ks->v = nv;
	ks->vcap = n;
	return 0;
}

void keyset_free(struct keyset *ks)
{
	free(ks->arena);
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

static size_t ilen(const struct kitem *it)
{
	return (size_t)(it->ref >> 48);
}

static const unsigned char *ikey(const unsigned char *arena,
				 const struct kitem *it)
{
	return arena + (it->ref & REF_MASK);
}

static uint64_t chunk(const unsigned char *arena, const struct kitem *it,
		      size_t depth)
{
	const unsigned char *k = ikey(arena, it);
	size_t len = ilen(it), i;
	uint64_t v = 0;

	for (i = 0; i < 8; i++)
		v = v << 8 | (depth + i < len ? k[depth + i] : 0);
	return v;
}

/* Insertion sort with the full order (the first depth bytes are equal). */
static void small_sort(const unsigned char *arena, struct kitem *v, size_t n,
		       size_t depth)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		struct kitem x = v[i];
		const unsigned char *xk = ikey(arena, &x) + depth;
		size_t xl = ilen(&x) - depth;

		for (j = i; j > 0; j--) {
			const struct kitem *y = &v[j - 1];

			if (keysort_cmp(ikey(arena, y) + depth,
					ilen(y) - depth, xk, xl) <= 0)
				break;
			v[j] = v[j - 1];
		}
		v[j] = x;
	}
}

/* LSD radix sort of v[0..n) by pfx, through tmp; the result is in v. */
static void radix_pfx(struct kitem *v, struct kitem *tmp, size_t n)
{
	static __thread size_t cnt[8][256];
	struct kitem *src = v, *dst = tmp, *t;
	size_t i, b;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++)
		for (b = 0; b < 8; b++)
			cnt[b][(v[i].pfx >> (8 * b)) & 0xff]++;
	for (b = 0; b < 8; b++) {
		size_t sum = 0, c;
		unsigned int d = (unsigned int)(v[0].pfx >> (8 * b)) & 0xff;

		if (cnt[b][d] == n)
			continue;       /* the same byte everywhere */
		for (d = 0; d < 256; d++) {
			c = cnt[b][d];
			cnt[b][d] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[b][(src[i].pfx >> (8 * b)) & 0xff]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static void sort_at(const unsigned char *arena, struct kitem *v,
		    struct kitem *tmp, size_t n, size_t depth)
{
	size_t a, b, i, c;

	if (n <= SMALL) {
		small_sort(arena, v, n, depth);
		return;
	}
	for (i = 0; i < n; i++)
		v[i].pfx = chunk(arena, &v[i], depth);
	radix_pfx(v, tmp, n);
	for (a = 0; a < n; a = b) {
		for (b = a + 1; b < n && v[b].pfx == v[a].pfx; b++)
			;
		if (b - a < 2)
			continue;
		/* the keys ending in this chunk first (stable, then by
		 * length: they are prefixes of each other) */
		for (c = a, i = a; i < b; i++)
			if (ilen(&v[i]) <= depth + 8)
				tmp[c++] = v[i];
		if (c == a) {
			sort_at(arena, v + a, tmp + a, b - a, depth + 8);
			continue;
		}
		{
			size_t ended = c;

			for (i = a; i < b; i++)
				if (ilen(&v[i]) > depth + 8)
					tmp[c++] = v[i];
			memcpy(v + a, tmp + a, (b - a) * sizeof(*v));
			small_sort(arena, v + a, ended - a, depth);
			if (b - ended > 1)
				sort_at(arena, v + ended, tmp + ended,
					b - ended, depth + 8);
		}
	}
}

int keyset_sort(struct keyset *ks)
{
	struct kitem *tmp;

	if (ks->n < 2)
		return 0;
	if (!(tmp = malloc(ks->n * sizeof(*tmp))))
		return -ENOMEM;
	sort_at(ks->arena, ks->v, tmp, ks->n, 0);
	free(tmp);
	return 0;
}
