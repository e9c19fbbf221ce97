/* SPDX-License-Identifier: MIT */
/*
 * layout.h - the bytes of a region: what lives where, addressed by offset.
 *
 * A region is an array of 2 MiB extents.  An offset is a byte position in
 * that array: extent = off >> 21, byte = off & (2 MiB - 1).  Nothing in a
 * region holds a pointer, so any process can map it at any address and
 * walk it (view.c).  Offset 0 is the region header, so 0 doubles as
 * "none" everywhere.
 *
 *   extent 0:  page 0 = region header (0..2047) + extent header (2048..)
 *   extent n:  page 0 = extent header
 *   other pages: slabs of one size class, or runs of pages for one large
 *   object; each starts with a 64-byte struct tdba_slab.
 *
 * All fields are written by the one writer of the table (under the
 * table's mutex).  Fields that readers follow (node slots, bucket count
 * and entries, nextents) are published with release stores and read with
 * acquire loads; everything a published offset leads to was fully written
 * before it was published and never changes until it is freed, which
 * happens only after a grace period.
 */
#ifndef TDB_CORE_LAYOUT_H
#define TDB_CORE_LAYOUT_H

#include "platform.h"

#define TDB_REGION_MAGIC   0x314e4f4947455242ull  /* "BREGION1" */
#define TDB_LAYOUT_VERSION 5u   /* 3: records carry a version; 4: and
				 * may carry a deadline; 5: a 12-byte
				 * record header (struct tdb_rec) and the
				 * index a directory of bucket pages */
#define TDB_LAYOUT_VERSION_STR "5"

#define TDB_PAGE_SHIFT     12
#define TDB_PAGE           (1u << TDB_PAGE_SHIFT)
#define TDB_EXT_PAGES      (TDBP_EXTENT_SIZE >> TDB_PAGE_SHIFT)   /* 512 */
#define TDB_EXT_MASK       (TDBP_EXTENT_SIZE - 1)

/* --- allocator ------------------------------------------------------- */
/* Size classes: 16..256 B by 16, then TDBA_CLASS_STEPS per power of two
 * up to TDBA_SMALL_MAX (256 + 16, 256 + 32, ... 512, 544, ... 32768), so
 * an object over 256 B wastes at most 1/16 of its size to its class. */
#define TDBA_CLASS_STEPS   16u
#define TDBA_NCLASSES      128         /* 16 + 7 powers x 16 steps */
#define TDBA_PARTIAL_LO    44          /* partial[] in the header's middle */
#define TDBA_SMALL_MAX     32768u      /* bigger objects get page runs */
#define TDBA_SLAB_HDR      64u         /* objects start this far in */
#define TDBA_CLASS_LARGE   0xffffu
#define TDBA_SLAB_MAGIC    0x534c4142u /* "SLAB" */

struct tdba_slab {
	uint32_t magic;
	uint16_t cls;          /* size class, or TDBA_CLASS_LARGE */
	uint16_t npages;       /* pages in this slab / run */
	uint32_t nobj;         /* objects the slab holds */
	uint32_t nfree;        /* of which free */
	uint32_t nbump;        /* objects [0, nbump) were handed out once */
	uint32_t pad;
	uint64_t free_head;    /* offset of a free object, its first 8 bytes
				* hold the next one; 0 = none */
	uint64_t next, prev;   /* partial list of the class (slab offsets) */
};

/* Extent header: which pages are free and which slab each used page
 * belongs to, so free() finds the slab header from any object offset. */
struct tdba_ext {
	uint64_t free_map[TDB_EXT_PAGES / 64];  /* bit set = page free */
	uint32_t nfree;                         /* pages free */
	uint32_t pad;
	uint16_t page_slab[TDB_EXT_PAGES];      /* first page of the slab */
};
#define TDBA_EXT_HDR_OFF_0 2048u  /* extent header offset in extent 0 */

/* --- region header ---------------------------------------------------- */
struct tdb_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t max_extents;
	uint32_t nextents;     /* extents backed; release-published */
	uint32_t root_slots;   /* buckets of an index page (64) */
	uint64_t seed;         /* xxh64 seed of this table */
	uint64_t root;         /* index directory: offset | depth; replaced
				* with a release store when it doubles */
	/* statistics, written by the writer, read relaxed */
	uint64_t nrecords;
	uint64_t bytes_used;
	uint64_t bytes_allocated;
	uint64_t index_nodes;
	uint64_t index_buckets;
	/* allocator: the slabs with free objects of each class, the first
	 * TDBA_PARTIAL_LO classes here, the rest in partial_hi at the end
	 * (where the fields readers use stay where they were) */
	uint64_t partial[TDBA_PARTIAL_LO];
	uint32_t ext_hint;                /* no free page below this extent */
	/* For readers in other processes (zero-copy maps), written by the
	 * owner only.  map_gen: bumped (release) when maps of the region
	 * must no longer be used: the table was dropped.  commit_seq: the
	 * owner's seqcount of the table, odd while a commit applies to it,
	 * so a mapped reader sees a transaction whole or not at all. */
	uint32_t map_gen;
	uint64_t commit_seq;
	/* records that carry a deadline (TDB_REC_F_DEADLINE), expired or
	 * not: the owner's expiry sweep skips a table with none */
	uint64_t nexpiring;
	/* TDB_HDR_F_*: what the owner asks of mapped readers (written by
	 * the owner, read relaxed) */
	uint32_t reader_flags;
	/* Ordered tables (TDB_TBL_F_ORDERED in table_flags, fixed at
	 * create): the offset of the ordered index's root node (below,
	 * "ordered index"), replaced with a release store when the tree
	 * grows or shrinks a level; 0 in a hash-only table.  onodes: its
	 * nodes (statistics, relaxed). */
	uint32_t table_flags;
	uint64_t oroot;
	uint64_t onodes;
	uint64_t partial_hi[TDBA_NCLASSES - TDBA_PARTIAL_LO];
};
#define TDB_TBL_F_ORDERED 1u
/* Mapped readers report (a sample of) their hits with TOUCH: the table
 * evicts by use (docs/PROTOCOL.md, "Eviction"). */
#define TDB_HDR_F_TOUCH 1u

/* --- records ----------------------------------------------------------- */
/*
 * A record never changes once published: a replace publishes a new one.
 *
 * version: the owner's version of the write that made this record
 * (docs/PROTOCOL.md, "Versions"): it changes on every write of the key
 * and never repeats for a key; 0 only for records written by the bare
 * engine (tests, tdbe_put).  At most TDB_REC_VERSION_MAX (2^59 - 1: a
 * billion writes a second for 18 years); the engine refuses a bigger one
 * (-EOVERFLOW).  flags: TDB_REC_F_* (a reader that finds a bit it does
 * not know treats the record as damaged).
 *
 * 12 bytes, in three 32-bit words (layout version 5; 16 before, with a
 * u64 version): klen, flags and the version's top 16 bits; vlen and its
 * next 11 bits; its low 32 bits.  A record of 16 + 100 B is 128 B, one
 * size class below the 144 B a 16-byte header took.  Key and value
 * follow at offset 12, so the record (16-byte aligned, index entries
 * hold offset / 16) keeps data 4-byte aligned only; nothing reads data
 * but with memcpy/memcmp.  Write and read klen, flags and vlen through
 * the bit-fields, the version with tdb_rec_version/tdb_rec_set_version;
 * readers of memory that may be reused under them (views: maps in other
 * processes) load the words with tdb_rec_load instead.
 *
 * TDB_REC_F_DEADLINE: the record expires.  A u64 trailer after the value
 * (data + klen + vlen, not aligned: read it with tdb_rec_deadline) holds
 * its deadline in milliseconds of the wall clock (CLOCK_REALTIME) since
 * the Unix epoch; from that millisecond on the record is absent to
 * every reader (tdb_rec_expired), though its bytes stay until the
 * owner's sweep or a write removes it.  Trailing rather than between
 * header and key, so a reader that does not ask for the deadline finds
 * key and value where it always did, and records without one pay
 * nothing.
 */
struct tdb_rec {
	union {
		struct {
			uint32_t klen : 13;   /* 1..TDBE_KEY_MAX (4096) */
			uint32_t flags : 3;   /* TDB_REC_F_* */
			uint32_t ver_hi : 16; /* version bits 43..58 */
			uint32_t vlen : 21;   /* 0..TDBE_VALUE_MAX (1 MiB) */
			uint32_t ver_mid : 11;/* version bits 32..42 */
			uint32_t ver_lo;      /* version bits 0..31 */
		};
		uint32_t w[3];
	};
	unsigned char data[];  /* key, then value[, deadline] */
};
#define TDB_REC_HDR          12u
#define TDB_REC_VERSION_MAX  ((1ull << 59) - 1)

static inline uint64_t tdb_rec_version(const struct tdb_rec *r)
{
	return (uint64_t)r->ver_hi << 43 | (uint64_t)r->ver_mid << 32 |
	       r->ver_lo;
}

/* v <= TDB_REC_VERSION_MAX (the caller checks). */
static inline void tdb_rec_set_version(struct tdb_rec *r, uint64_t v)
{
	r->ver_hi = (uint32_t)(v >> 43) & 0xffff;
	r->ver_mid = (uint32_t)(v >> 32) & 0x7ff;
	r->ver_lo = (uint32_t)v;
}

/* A record's header as a reader of memory that may change under it
 * loads it: each word once, relaxed, decoded by hand (the same bits as
 * the bit-fields, which GCC lays out from bit 0 up on little-endian
 * Linux: tests/test_alloc.c checks they agree). */
struct tdb_rec_hdr {
	uint32_t klen, flags, vlen;
	uint64_t version;
};

static inline void tdb_rec_load(const struct tdb_rec *r,
				struct tdb_rec_hdr *o)
{
	uint32_t w0 = tdb_load_relaxed(&r->w[0]);
	uint32_t w1 = tdb_load_relaxed(&r->w[1]);
	uint32_t w2 = tdb_load_relaxed(&r->w[2]);

	o->klen = w0 & 0x1fff;
	o->flags = w0 >> 13 & 7;
	o->vlen = w1 & 0x1fffff;
	o->version = (uint64_t)(w0 >> 16) << 43 | (uint64_t)(w1 >> 21) << 32 |
		     w2;
}
#define TDB_REC_F_DEADLINE  1u
#define TDB_REC_F_ACCESS    2u
#define TDB_REC_F_KNOWN     (TDB_REC_F_DEADLINE | TDB_REC_F_ACCESS)

/*
 * TDB_REC_F_ACCESS: a u32 after the value (and after the deadline, if
 * any) that the owner's eviction keeps (src/owner/evict.c: a recency
 * stamp or a frequency counter), in tables with an LRU or LFU policy.
 * It is the one part of a published record that changes: only the
 * owner writes it (relaxed stores, racing writes may lose one), and no
 * reader reads it for anything but eviction; readers of key, value,
 * version and deadline never look at it.
 */

/* Bytes of a record with these lengths and flags. */
static inline size_t tdb_rec_size(size_t klen, size_t vlen,
				  unsigned int flags)
{
	return TDB_REC_HDR + klen + vlen +
	       (flags & TDB_REC_F_DEADLINE ? sizeof(uint64_t) : 0) +
	       (flags & TDB_REC_F_ACCESS ? sizeof(uint32_t) : 0);
}

/* Where the record's access word is (it has TDB_REC_F_ACCESS). */
static inline uint32_t *tdb_rec_access(const struct tdb_rec *r)
{
	return (uint32_t *)(r->data + r->klen + r->vlen +
			    (r->flags & TDB_REC_F_DEADLINE ?
			     sizeof(uint64_t) : 0));
}

/* The record's deadline (ms since the epoch), 0 if it has none. */
static inline uint64_t tdb_rec_deadline(const struct tdb_rec *r)
{
	uint64_t d;

	if (!(r->flags & TDB_REC_F_DEADLINE))
		return 0;
	memcpy(&d, r->data + r->klen + r->vlen, sizeof(d));
	return d;
}

/* Expired at now_ms: the deadline is at or before it.  Callers read the
 * clock only for records with TDB_REC_F_DEADLINE, so records without
 * one never pay for a clock read. */
static inline bool tdb_rec_expired(const struct tdb_rec *r, uint64_t now_ms)
{
	return (r->flags & TDB_REC_F_DEADLINE) &&
	       tdb_rec_deadline(r) <= now_ms;
}

/* --- index: extendible hashing over xxh64(key, seed) ------------------
 * Two cache misses a lookup at any size: the directory (small, hot) ->
 * one 64-byte bucket -> the record.
 *
 * Directory: h->root holds its offset | G (its depth, the low 6 bits;
 * the directory is 64-byte aligned).  It has 2^G slots (at least 8 are
 * allocated, TDBI_DIR_MIN_BYTES), slot i for the hashes whose top G bits
 * are i.  A bigger directory replaces it whole (one release store of
 * h->root; the old one is retired and freed after a grace period).
 *
 * Slot: a bucket page's offset | L, the page's local depth (L <= G, low
 * 6 bits), or just L when no page holds that range yet (offset 0).  A
 * page of depth L holds every hash with its top L bits, and is named by
 * the 2^(G - L) consecutive slots that share them.
 *
 * Page: TDBI_PAGE_BUCKETS buckets of 64 bytes, one 4 KiB allocation;
 * bucket j holds the hashes whose 6 bits below the top L are j, so a
 * lookup computes its bucket's address from the slot and the hash.
 * Pages (and their buckets) are in hash order, as the ordered walk
 * needs.  A page splits in two (L + 1) when a bucket is full and the
 * page holds TDBI_SPLIT_KEYS entries: both halves are built privately,
 * the slots naming them are stored (release) one by one, and the old
 * page is retired; a reader sees the old page whole or a new one.
 *
 * Bucket: next (offset of an overflow bucket of the same shape, 0 =
 * none) and 7 entries.  A full bucket in a page that is not yet worth
 * splitting (or at TDBI_MAX_PAGE_DEPTH) chains an overflow bucket: the
 * rare key there costs a third miss.
 *
 * An entry is one 64-bit word, so it is published, replaced and cleared
 * atomically: the low 40 bits are the record offset / 16 (records are
 * 16-byte aligned; 40 bits reach 16 TiB), the high 24 bits a tag from the
 * hash's low bits, which lets a lookup skip most non-matching records.
 * The tag only steers: every match is confirmed by comparing the full key
 * stored in the record.  Entry 0 is a hole: deleting stores 0 in place,
 * so a delete never needs memory; an insert fills the first hole of the
 * bucket's chain.
 */
#define TDBI_PAGE_BITS      6
#define TDBI_PAGE_BUCKETS   (1u << TDBI_PAGE_BITS)    /* 64 */
#define TDBI_PAGE_BYTES     (TDBI_PAGE_BUCKETS * 64u)  /* 4 KiB */
#define TDBI_BUCKET_CAP     7          /* 8-byte next + 7 entries = 64 B */
#define TDBI_SPLIT_KEYS     (TDBI_PAGE_BUCKETS * 5u)   /* 320 */
#define TDBI_MAX_PAGE_DEPTH 34u        /* L + 6 bucket bits + 24 tag bits */
#define TDBI_DEPTH_MASK     63ull
#define TDBI_DIR_MIN_BYTES  64u
#define TDBI_MAX_CHAIN      4096u      /* readers of maps give up beyond */
#define TDBI_REC_BITS       40
#define TDBI_REC_MASK       ((1ull << TDBI_REC_BITS) - 1)

struct tdbi_bucket {
	uint64_t next;         /* overflow bucket, 0 = none */
	uint64_t e[TDBI_BUCKET_CAP];
};

/* Bytes of a directory of depth g. */
static inline uint64_t tdbi_dir_bytes(unsigned int g)
{
	uint64_t b = sizeof(uint64_t) << g;

	return b < TDBI_DIR_MIN_BYTES ? TDBI_DIR_MIN_BYTES : b;
}

/* The directory slot of a hash in a directory of depth g. */
static inline uint64_t tdbi_dir_index(uint64_t hash, unsigned int g)
{
	return g ? hash >> (64 - g) : 0;
}

/* The bucket of a hash in a page of depth l. */
static inline unsigned int tdbi_page_index(uint64_t hash, unsigned int l)
{
	return (unsigned int)(hash >> (64 - TDBI_PAGE_BITS - l)) &
	       (TDBI_PAGE_BUCKETS - 1);
}

static inline uint64_t tdbi_tag(uint64_t hash)
{
	return hash << TDBI_REC_BITS;      /* low 24 bits of the hash */
}

static inline uint64_t tdbi_entry(uint64_t hash, uint64_t rec)
{
	return tdbi_tag(hash) | rec >> 4;
}

static inline uint64_t tdbi_entry_rec(uint64_t e)
{
	return (e & TDBI_REC_MASK) << 4;
}

static inline bool tdbi_entry_tag_is(uint64_t e, uint64_t hash)
{
	return (e & ~TDBI_REC_MASK) == tdbi_tag(hash);
}

/* --- ordered index: a copy-on-write B+tree ------------------------------
 * An ordered table keeps its keys in the hash index above (point reads
 * and writes) and also in key order here: LMDB's order, bytewise
 * (memcmp), a key that is a prefix of another first.
 *
 * Every node is TDBB_NODE_BYTES: a 16-byte header and 8-byte words.
 *  - A leaf (level 0) holds n entries in key order, each the record of
 *    one key in the same form as the trie's: the record offset / 16 in
 *    the low 40 bits, and in the high 24 bits a "head": the 3 bytes of
 *    the key that follow the node's common prefix (cpl bytes, which
 *    every key of the node shares), big-endian, zero-padded past the
 *    key's end.  Heads order like the keys they come from (a smaller
 *    head is a smaller key; equal heads say nothing), so a search
 *    compares heads in the node and reads a record only to break a tie.
 *  - An interior node (level > 0) holds n children (w[0..n)) and n - 1
 *    separators (w[TDBB_SEP0 + i - 1] for child i >= 1), entries as in
 *    a leaf: separator i is the smallest key under child i, so child i
 *    holds the keys k with sep[i] <= k < sep[i + 1].
 *
 * Copy-on-write: a published node's count, level, cpl, separators'
 * keys and leaf entries' keys never change.  An insert or delete builds
 * a new node and publishes it with one release store of its offset (in
 * the parent's child word, or oroot), the old node going to the limbo;
 * a split or a merge builds the parent anew the same way.  Two stores
 * are made in place, each of one word, leaving the key set alone: a
 * replaced key's entry (leaf and, where its key is one, separator) gets
 * the new record of the same key, and a separator whose key was deleted
 * gets the entry of the next key (the new smallest under its child).
 * So a reader that loads a word with acquire finds a whole node, and
 * every node it reached stays readable until its read section ends.
 * Every record an entry names is in the table: separators name the
 * smallest key of their subtree, and a delete moves them first.
 * A moved separator widens its left neighbour's range over (K, next):
 * a key put there goes to the left subtree while a reader may still
 * hold the right one's older copy (through a retired parent), so a walk
 * can meet a key written during it out of order.  Readers skip a key
 * that does not follow the last one they met (cursor.c ord_collect,
 * view.c tdbe_view_next): keys present throughout a walk come once
 * each, in strict order.
 */
#define TDBB_NODE_BYTES  512u
#define TDBB_LEAF_CAP    62u        /* (512 - 16) / 8 */
#define TDBB_INNER_CAP   31u        /* children: 31 + 30 separators */
#define TDBB_SEP0        TDBB_INNER_CAP
#define TDBB_MAX_HEIGHT  12u   /* levels, leaves included (= view.h's TDBB_MAX_HEIGHT_V) */
#define TDBB_HEAD_BYTES  3u

struct tdbb_node {
	uint16_t level;        /* 0 = leaf */
	uint16_t n;            /* entries, or children */
	uint16_t cpl;          /* common prefix length of every key here */
	uint16_t pad;
	uint32_t magic;        /* TDBB_NODE_MAGIC (a view checks it) */
	uint32_t pad2;
	uint64_t w[(TDBB_NODE_BYTES - 16) / 8];
};
#define TDBB_NODE_MAGIC  0x42545245u   /* "ERTB" */

/* The head of a key at a node whose common prefix is cpl bytes. */
static inline uint64_t tdbb_head(const unsigned char *key, size_t klen,
				 unsigned int cpl)
{
	uint64_t h = 0;
	unsigned int i;

	for (i = 0; i < TDBB_HEAD_BYTES; i++)
		h = h << 8 | (cpl + i < klen ? key[cpl + i] : 0);
	return h;
}

static inline uint64_t tdbb_entry(uint64_t head, uint64_t rec)
{
	return head << TDBI_REC_BITS | rec >> 4;
}

static inline uint64_t tdbb_entry_head(uint64_t e)
{
	return e >> TDBI_REC_BITS;
}

/* LMDB's order of two keys: < 0, 0, > 0. */
static inline int tdbb_key_cmp(const void *a, size_t alen, const void *b,
			       size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* --- translation -------------------------------------------------------
 * A map turns offsets into addresses: the address of each extent.  The
 * owner's map has every extent it ever backed (the array is sized for the
 * cap up front, so readers never see it move).
 */
struct tdb_map {
	unsigned char **ext;
	uint32_t nextents;     /* for checked maps (views) only */
};

static inline void *tdb_ptr(const struct tdb_map *m, uint64_t off)
{
	return m->ext[off >> TDBP_EXTENT_SHIFT] + (off & TDB_EXT_MASK);
}

static inline struct tdb_region_hdr *tdb_hdr(const struct tdb_map *m)
{
	return (struct tdb_region_hdr *)m->ext[0];
}

#endif
