/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * keysort.h - a set of keys copied out of a table and sorted in LMDB's
 * default key order, so that a checkpoint can write them into LMDB in
 * ascending order (MDB_APPEND for a table written whole; locality for a
 * dirty set).
 *
 * The order is LMDB's default comparison (mdb_cmp_memn): memcmp of the
 * common length, then the shorter key first.  A key is at most 65535
 * bytes (tdb's limit is 4096).
 *
 * Memory: the key bytes once (an arena), plus 32 bytes per key while
 * sorting (16 after: the scratch array is freed by keyset_sort).
 *
 * Functions never print or exit; they return 0 or -ENOMEM/-E2BIG.
 */
#ifndef TDBD_KEYSORT_H
#define TDBD_KEYSORT_H

#include <stddef.h>
#include <stdint.h>

struct kitem {
	uint64_t pfx;           /* sort scratch: 8 key bytes, big-endian */
	uint64_t ref;           /* arena offset (low 48 bits), klen (high 16) */
};

struct keyset {
	unsigned char *arena;
	size_t len, cap;        /* arena bytes used, allocated */
	struct kitem *v;
	size_t n, vcap;
};

#define KEYSET_INIT { 0 }

int keyset_add(struct keyset *ks, const void *key, size_t klen);
/* Room for n keys (an estimate: more may be added). */
int keyset_reserve(struct keyset *ks, size_t n);
/* Sort the keys added so far (ascending, LMDB's order). */
int keyset_sort(struct keyset *ks);
void keyset_free(struct keyset *ks);

static inline const unsigned char *keyset_key(const struct keyset *ks,
					      size_t i, size_t *klen)
{
	*klen = (size_t)(ks->v[i].ref >> 48);
	return ks->arena + (ks->v[i].ref & ((1ull << 48) - 1));
}

/* LMDB's default order of two keys: < 0, 0, > 0. */
int keysort_cmp(const void *a, size_t alen, const void *b, size_t blen);

#endif
