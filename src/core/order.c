// SPDX-License-Identifier: GPL-2.0-only
/*
 * order.c - the ordered index of ordered tables: a copy-on-write B+tree
 * of the table's records in key order (layout.h, "ordered index").
 */
#include "internal.h"

int tdbb_init(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint64_t off = tdba_alloc(t, TDBB_NODE_BYTES);
	struct tdbb_node *n;

	if (!off)
		return -ENOSPC;
	n = tdb_ptr(&t->map, off);
	memset(n, 0, TDBB_NODE_BYTES);
	n->magic = TDBB_NODE_MAGIC;
	h->onodes = 1;
	h->table_flags |= TDB_TBL_F_ORDERED;
	tdb_store_release(&h->oroot, off);
	return 0;
}
