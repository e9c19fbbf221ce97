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

#define TDBB_MAX_HEIGHT_V 12u        /* layout.h's TDBB_MAX_HEIGHT */

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

/* --- ranges of ordered tables -----------------------------------------
 * A range of keys: from (NULL: the first key) to (NULL: past the last
 * key), from inclusive and to exclusive unless flags say otherwise,
 * walked in key order, or from the top down with TDBE_RANGE_REVERSE.
 * The bounds are the range's whatever the direction: a reverse walk of
 * [from, to) starts at the last key before to.
 */
#define TDBE_RANGE_FROM_EXCL (1u << 0)   /* from itself is not in it */
#define TDBE_RANGE_TO_INCL   (1u << 1)   /* to itself is */
#define TDBE_RANGE_REVERSE   (1u << 2)   /* walk it backwards */
#define TDBE_RANGE_FLAGS_ALL (TDBE_RANGE_FROM_EXCL | TDBE_RANGE_TO_INCL | \
			      TDBE_RANGE_REVERSE)
struct tdbe_range {
	const void *from;
	size_t from_len;
	const void *to;
	size_t to_len;
	unsigned int flags;         /* TDBE_RANGE_* */
};

/*
 * Walking a range of an ordered table in a view: tdbe_view_range()
 * positions the iterator at the range's first key, tdbe_view_next()
 * returns one record at a time (pointers into the view, valid inside
 * the caller's read section; expired records are skipped by this
 * process's clock).  The iterator keeps the path it walked, not the
 * bounds' bytes: r's from/to must stay valid until the walk ends.  A
 * walk is good inside one read section; across sections (or after its
 * lease expired) start a new one from the last key returned (with
 * TDBE_RANGE_FROM_EXCL, or as to in reverse).
 * -EOPNOTSUPP: the table is not ordered; -EINVAL: a bad range;
 * -EUCLEAN: the region is damaged (or changed under a read section
 * that outlived its lease: throw away what was read).
 */
struct tdbe_view_iter {
	const struct tdbe_view *v;
	struct tdbe_range r;
	uint64_t node[TDBB_MAX_HEIGHT_V];
	uint16_t pos[TDBB_MAX_HEIGHT_V];
	unsigned int height;
	bool done;
	const void *leaf;           /* the leaf at node[height - 1], checked */
	const void *last;           /* the key of the last record met, */
	size_t last_len;            /* which the next must follow */
	uint64_t skipped;           /* records skipped since (out of order) */
	bool check;                 /* the leaf was entered after `last`:
				     * its keys are compared with it until
				     * one follows it */
	bool inrange;               /* every key of the leaf is before the
				     * range's end: none is compared with it */
};
int tdbe_view_range(const struct tdbe_view *v, const struct tdbe_range *r,
		    struct tdbe_view_iter *it);
/* 1 and a record, 0 at the end, or a negative errno. */
int tdbe_view_next(struct tdbe_view_iter *it, const void **key,
		   size_t *klen, const void **val, size_t *vlen,
		   uint64_t *version);
/* Is the mapped table an ordered one? */
bool tdbe_view_ordered(const struct tdbe_view *v);

#endif
