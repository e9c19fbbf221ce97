/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * internal.h - the engine's private structures and the interfaces between
 * its files: region.c (extents), alloc.c (record allocator), index.c (hash
 * index: a directory of bucket pages), table.c (engine, tables, records), cursor.c, view.c.
 */
#ifndef TDB_CORE_INTERNAL_H
#define TDB_CORE_INTERNAL_H

#include "core.h"
#include "layout.h"

/* The engine may not call libc beyond mem*(), so it has its own str*. */
static inline size_t strlen_tdb(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static inline int strcmp_tdb(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

#define TDB_EXTACK(ext, text) do { if (ext) (ext)->msg = (text); } while (0)

/* Offsets freed by the writer wait here for a grace period: a reader may
 * still be looking at them, so they cannot be reused or even written. */
struct tdb_limbo {
	uint64_t *off;
	uint32_t n, cap;
	uint64_t bytes;
};
#define TDB_LIMBO_BATCH 4096u      /* reclaim after this many frees */
#define TDBB_RESERVE (2 * TDBB_MAX_HEIGHT + 3)

struct tdbe_table {
	struct tdbe_table *next;   /* engine's list, under engine->lock */
	struct tdbe_engine *engine;
	long refs;                 /* handles + the engine's own reference */
	bool dropped;
	char name[TDBE_NAME_MAX + 1];

	struct tdbp_mutex *wlock;  /* serialises writers */
	struct tdbp_region *region;
	struct tdb_map map;        /* map.ext sized for max_extents */
	uint32_t max_extents;
	uint16_t class_pages[TDBA_NCLASSES];
	struct tdb_limbo limbo;
	/* ordered tables: nodes set aside for the next change (order.c) */
	uint64_t ores[TDBB_RESERVE];
	unsigned int nores;
	struct tdbb_scratch *osc;
};

/* region.c */
int tdbr_init(struct tdbe_table *t, const char *name, struct tdbe_extack *ext);
int tdbr_grow(struct tdbe_table *t);
void tdbr_destroy(struct tdbe_table *t);
struct tdba_ext *tdbr_ext_hdr(const struct tdb_map *m, uint32_t idx);

/* alloc.c: 0 = no room (the caller reclaims limbo and retries) */
void tdba_init_classes(uint16_t class_pages[TDBA_NCLASSES]);
void tdba_init_extent(struct tdb_map *m, uint32_t idx);
uint64_t tdba_alloc(struct tdbe_table *t, size_t size);
void tdba_free(struct tdbe_table *t, uint64_t off);
size_t tdba_usable(const struct tdbe_table *t, uint64_t off);
uint32_t tdba_class_size(unsigned int cls);
unsigned int tdba_size_class(size_t size);

/* table.c: allocation with reclaim; deferred free */
uint64_t tdb_alloc_reclaim(struct tdbe_table *t, size_t size);
void tdb_retire(struct tdbe_table *t, uint64_t off);
/* table.c: r has a deadline and it is past by the engine's clock */
bool tdb_rec_dead(const struct tdbe_table *t, const struct tdb_rec *r);

/* index.c */
struct tdb_key {
	const void *data;
	size_t len;
	uint64_t hash;
};
int tdbi_init(struct tdbe_table *t);
uint64_t tdbi_lookup(const struct tdb_map *m, const struct tdb_key *k);
/* Walk up to TDBE_LOOKUP_GROUP keys in lock step, prefetching each
 * walk's next step; rec[i] = record or 0. */
void tdbi_lookup_group(const struct tdb_map *m, const struct tdb_key *k,
		       unsigned int n, uint64_t *rec);
/* Insert or replace; *old gets the replaced record (0 if none).
 * -ENOSPC when the key's bucket is full and there is no room for an
 * overflow bucket (a page split that finds no room falls back to one). */
int tdbi_insert(struct tdbe_table *t, const struct tdb_key *k, uint64_t rec,
		uint64_t *old);
/* Tombstone the key's entry; returns its record or 0. */
uint64_t tdbi_remove(struct tdbe_table *t, const struct tdb_key *k);
/* The first live record whose (hash, key) is greater than the bound
 * (or the first of all when bound is NULL); 0 at the end. */
uint64_t tdbi_next(const struct tdb_map *m, const struct tdb_key *bound,
		   uint64_t *hash);
/* The same walk many records at a time: up to max live records after
 * the bound, in order, as successive tdbi_next calls would return them
 * if nothing changed in between; fewer when the next bucket does not
 * fit whole (at least one unless at the end); 0 at the end.  bkt is
 * scratch for max bucket offsets. */
struct tdbi_hit {
	uint64_t rec, hash;
};
unsigned int tdbi_next_many(const struct tdb_map *m,
			    const struct tdb_key *bound,
			    struct tdbi_hit *out, uint64_t *bkt,
			    unsigned int max);
/* The records of hash's bucket whose entries carry hash's tag, at most
 * max of them into rec; how many. */
#define TDBI_BUCKET_MAX_HITS 8u
unsigned int tdbi_tag_hits(const struct tdb_map *m, uint64_t hash,
			   uint64_t *rec, unsigned int max);
/* A record picked by the random rnd (tdbe_sample); 0 if none found. */
uint64_t tdbi_sample(const struct tdb_map *m, uint64_t rnd);
int tdbi_key_cmp(uint64_t ha, const void *ka, size_t la,
		 uint64_t hb, const void *kb, size_t lb);

/* order.c: the ordered index of an ordered table (layout.h), changed
 * under t->wlock after the hash index: tdbb_reserve first (-ENOSPC: change
 * nothing), then exactly one of the others, which cannot fail. */
int tdbb_init(struct tdbe_table *t);
void tdbb_free(struct tdbe_table *t);
int tdbb_reserve(struct tdbe_table *t);
void tdbb_insert(struct tdbe_table *t, const void *key, size_t klen,
		 uint64_t rec);
void tdbb_replace(struct tdbe_table *t, const void *key, size_t klen,
		  uint64_t old, uint64_t rec);
void tdbb_remove(struct tdbe_table *t, const void *key, size_t klen,
		 uint64_t rec);

#endif
