// SPDX-License-Identifier: GPL-2.0-only
/*
 * region.c - a table's region: creating it through the platform, backing
 * one more extent when the allocator runs out of pages, and the region
 * header at offset 0.
 */
#include "internal.h"

struct tdba_ext *tdbr_ext_hdr(const struct tdb_map *m, uint32_t idx)
{
	return (struct tdba_ext *)(m->ext[idx] +
				   (idx == 0 ? TDBA_EXT_HDR_OFF_0 : 0));
}

/* Back the next extent, initialise its header, then publish the new
 * count: a reader that sees the count sees the extent. */
int tdbr_grow(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint32_t n = h ? h->nextents : 0;
	void *addr;
	int err = 0;

	if (n >= t->max_extents)
		return -ENOSPC;
	addr = tdbp_region_grow(t->region, n, &err);
	if (!addr)
		return err ? err : -ENOMEM;
	t->map.ext[n] = addr;
	h = tdb_hdr(&t->map);
	tdba_init_extent(&t->map, n);
	tdb_store_release(&h->nextents, n + 1);
	return 0;
}

int tdbr_init(struct tdbe_table *t, const char *name, struct tdbe_extack *ext)
{
	struct tdb_region_hdr *h;
	int err = 0;

	t->map.ext = tdbp_alloc(sizeof(*t->map.ext) * t->max_extents);
	if (!t->map.ext)
		return -ENOMEM;
	t->region = tdbp_region_create(name, t->max_extents, &err);
	if (!t->region) {
		TDB_EXTACK(ext, "cannot create the table's memory region");
		return err ? err : -ENOMEM;
	}
	t->map.ext[0] = tdbp_region_grow(t->region, 0, &err);
	if (!t->map.ext[0]) {
		TDB_EXTACK(ext, "cannot back the table's first extent");
		return err ? err : -ENOMEM;
	}
	h = tdb_hdr(&t->map);
	h->magic = TDB_REGION_MAGIC;
	h->version = TDB_LAYOUT_VERSION;
	h->max_extents = t->max_extents;
	h->root_slots = TDBI_PAGE_BUCKETS;
	h->seed = tdbp_random_u64();
	tdba_init_extent(&t->map, 0);
	tdb_store_release(&h->nextents, 1);
	return 0;
}

void tdbr_destroy(struct tdbe_table *t)
{
	if (t->region)
		tdbp_region_destroy(t->region);
	tdbp_free(t->map.ext);
	t->region = NULL;
	t->map.ext = NULL;
}
