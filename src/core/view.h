/* SPDX-License-Identifier: MIT */
/*
 * view.h - looking keys up in a region mapped by someone else (view.c):
 * the part of the engine a reader in another process needs, MIT like the
 * region format it reads (layout.h), because libtdbclient compiles it in
 * to look keys up in its read-only maps of tables (src/client/map.c).
 * core.h includes this; the engine's own API stays there.
 */
#ifndef TDB_CORE_VIEW_H
#define TDB_CORE_VIEW_H

#include "platform.h"

/* Limits.  Anything beyond them is refused (-E2BIG for key and value
 * sizes, -EINVAL for an empty key), never truncated. */
#define TDBE_KEY_MIN        1u
#define TDBE_KEY_MAX        4096u            /* bytes */
#define TDBE_VALUE_MAX      (1u << 20)       /* 1 MiB */

/* The static message of the last error, like struct netlink_ext_ack. */
struct tdbe_extack {
	const char *msg;
};

/* --- views: a region mapped elsewhere ---------------------------------
 * A view walks a region that another party mapped (read-only, at any
 * address): the caller hands in the address of each extent.  Every offset
 * read from the region is checked against the extents given, so a view of
 * a damaged region returns -EUCLEAN instead of reading out of bounds.
 * On a region that is changing, a lookup reads only what was published
 * whole, as the owner's readers do; what keeps the memory it reads from
 * being reused meanwhile is the caller's read section (tdb/ring.h,
 * "Zero-copy readers"), which also says how a reader learns that a
 * section outlived its lease and what it read must be thrown away.
 */
struct tdbe_view {
	const void *const *ext;     /* address of each extent */
	uint32_t nextents;
};
/* Checks the region header; -EUCLEAN if it is not a tdb region. */
int tdbe_view_check(const struct tdbe_view *v, struct tdbe_extack *ext);
/* Number of extents the region header says are in use. */
uint32_t tdbe_view_extents(const void *extent0);
int tdbe_view_lookup(const struct tdbe_view *v, const void *key, size_t klen,
		     const void **val, size_t *vlen);
/* The same, and the record's version (struct tdb_rec) in *version when
 * it is not NULL. */
int tdbe_view_lookup_ver(const struct tdbe_view *v, const void *key,
			 size_t klen, const void **val, size_t *vlen,
			 uint64_t *version);

#endif
