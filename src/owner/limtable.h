/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * limtable.h - the one table of the limits a home of the owner exposes:
 * for each, its tdbd.conf key, its tdb.ko module parameter, the field of
 * struct tdbo_limits it is stored in, its unit, default, range, root's
 * share and what it counts.  tdbd's config parser (src/daemon/config.c)
 * takes each key's default and range from here, and tdb.ko registers its
 * parameters from here (kmod/home.c, one set/get operation for all), so
 * the two homes cannot drift: tests/config checks tdbd against the
 * table, ktest klimits checks tdb.ko's /sys/module/tdb/parameters, and
 * the config test checks docs/CONFIG.md, man/tdbd.conf.5 and
 * docs/KERNEL.md name every entry with its default.
 *
 * The table is written once, as X-macro lists, so that a home can make
 * code from it (kmod/home.c makes module_param_cb() lines, which need
 * the parameter's name as a token) and so that this header needs
 * nothing but <stdint.h>: the guest tests include it as it is.
 *
 *   TDBO_LIMITS_BOTH(X)  limits of both homes
 *   TDBO_LIMITS_TDBD(X)  tdbd's only (address space reserved for tables,
 *                        max-data-per-uid: tdb.ko's is half of
 *                        max_memory_mb, fixed)
 *   TDBO_LIMITS_KO(X)    tdb.ko's only (max_snapshot_mb, max-snapshot-
 *                        bytes in MiB, kept for existing setups)
 *
 * X(id, conf, param, field, unit, shift, def, kdef, min, max, flags,
 *   root, counts):
 *   id      TDBO_LIM_<id>
 *   conf    the tdbd.conf key (TDBO_LIMITS_KO: NULL)
 *   param   the module parameter, a token (TDBO_LIMITS_TDBD: unused)
 *   field   its field in struct tdbo_limits (owner.h)
 *   unit    TDBO_LU_*: count, bytes, ms or mode bits
 *   shift   the module parameter's value is the limit >> shift (20:
 *           MiB); tdbd.conf takes the limit itself (sizes with K/M/G/T)
 *   def     the default in tdbd and (but kdef) in tdb.ko
 *   kdef    tdb.ko's default: def but for max-memory
 *   min,max the range, inclusive, in both homes
 *   flags   TDBO_LF_*
 *   root    root's share (uid 0)
 *   counts  what it counts
 *
 * Rules written here once (docs/CONFIG.md, "Limits"):
 *  - a value outside min..max is refused, by tdbd.conf (the file or
 *    the option names the key and the range) and by the module
 *    parameter (-EINVAL, a kernel log line names the range), except 0
 *    where a flag says what 0 means;
 *  - every per-uid limit takes 0 for "no limit" (TDBO_LF_ZERO_OFF), in
 *    both homes; limits in all do not (a home without a bound in all is
 *    a home anyone can fill);
 *  - "the last eighth": a uid other than 0 is refused at 7/8 of a limit
 *    in all; root may use all of it.  "exempt": the per-uid limit does
 *    not apply to uid 0.
 *
 * max-memory, one definition in both homes: the bytes a home holds for
 * its tables and clients, namely
 *   table extents (2 MiB each, backed), buffered transaction changes
 *   (TDBO_Q_TXN_BYTES), snapshot maps and pre-images (tdbo_snap_mem),
 *   change feeds (feed-size each, from a table's first WATCH) and
 *   client rings (both rings and their header pages, per connection
 *   with rings),
 * and in tdb.ko also its change log ring (log_ring_mb, from the first
 * supervisor claim): tdbd has no such ring.  Past it, writes that add
 * data are refused with -ENOMEM (reads and deletes go on); in tdb.ko a
 * new extent, feed, ring or the log ring is refused as well.  0 is 3/4
 * of the physical memory at start.  The table data in all (the owner's
 * max_data, TDBO_Q_DATA) is bounded by max-memory with its last eighth
 * kept for root.
 */
#ifndef TDB_OWNER_LIMTABLE_H
#define TDB_OWNER_LIMTABLE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

enum tdbo_limit_unit {
	TDBO_LU_COUNT,
	TDBO_LU_BYTES,
	TDBO_LU_MS,
	TDBO_LU_MODE,           /* permission bits, octal */
};

#define TDBO_LF_ZERO_OFF  0x01u /* 0 is accepted: no limit */
#define TDBO_LF_ZERO_AUTO 0x02u /* 0 is accepted: the home works it out */
#define TDBO_LF_POW2      0x04u /* a power of two */
#define TDBO_LF_KLOAD     0x08u /* tdb.ko: set at load only (0444) */

#define TDBO_LIM_KiB (1ULL << 10)
#define TDBO_LIM_MiB (1ULL << 20)
#define TDBO_LIM_GiB (1ULL << 30)
#define TDBO_LIM_TiB (1ULL << 40)

#define TDBO_LIM_EIGHTH "the last eighth is kept for root"
#define TDBO_LIM_EXEMPT "root is exempt"
#define TDBO_LIM_SAME   "applies to root too"

#define TDBO_LIMITS_BOTH(X)						\
	X(TABLE_MODE, "table-mode", default_mode, default_mode,		\
	  TDBO_LU_MODE, 0, 0600, 0600, 0, 0777, TDBO_LF_KLOAD,		\
	  TDBO_LIM_SAME, "mode bits of a table created without MODE")	\
	X(FEED_SIZE, "feed-size", feed_size, feed_size, TDBO_LU_BYTES,	\
	  0, 4 * TDBO_LIM_MiB, 4 * TDBO_LIM_MiB, 4 * TDBO_LIM_MiB,	\
	  TDBO_LIM_GiB, TDBO_LF_POW2 | TDBO_LF_KLOAD, TDBO_LIM_SAME,	\
	  "data bytes of a table's change feed (made at its first WATCH)")\
	X(MAX_TABLES, "max-tables", max_tables, max_tables,		\
	  TDBO_LU_COUNT, 0, 4000, 4000, 1, 4000, 0, TDBO_LIM_EIGHTH,	\
	  "tables at once")						\
	X(MAX_CLIENTS, "max-clients", max_clients, max_clients,	\
	  TDBO_LU_COUNT, 0, 1024, 1024, 1, 65536, 0, TDBO_LIM_EIGHTH,	\
	  "clients with rings at once (tdb.ko's generic netlink "	\
	  "sockets hold none)")						\
	X(MAX_CLIENTS_PER_UID, "max-clients-per-uid",			\
	  max_clients_per_uid, max_clients_per_uid, TDBO_LU_COUNT, 0,	\
	  64, 64, 1, 65536, TDBO_LF_ZERO_OFF, TDBO_LIM_EXEMPT,		\
	  "clients with rings of one uid")				\
	X(MAX_TABLES_PER_UID, "max-tables-per-uid", max_tables_per_uid,\
	  max_tables_per_uid, TDBO_LU_COUNT, 0, 256, 256, 1, 4000,	\
	  TDBO_LF_ZERO_OFF, TDBO_LIM_EXEMPT, "tables one uid owns")	\
	X(MAX_WATCHES, "max-watches", max_watches, max_watches,	\
	  TDBO_LU_COUNT, 0, 1024, 1024, 1, 65536, 0, TDBO_LIM_SAME,	\
	  "watches of one client")					\
	X(MAX_WATCHES_PER_UID, "max-watches-per-uid",			\
	  max_watches_per_uid, max_watches_per_uid, TDBO_LU_COUNT, 0,	\
	  4096, 4096, 1, 1048576, TDBO_LF_ZERO_OFF, TDBO_LIM_EXEMPT,	\
	  "watches of one uid's clients")				\
	X(MAX_WATCHES_TOTAL, "max-watches-total", max_watches_total,	\
	  max_watches_total, TDBO_LU_COUNT, 0, 16384, 16384, 1,		\
	  1048576, 0, TDBO_LIM_EIGHTH, "watches in all")		\
	X(MAX_RING_MEMORY_PER_UID, "max-ring-memory-per-uid",		\
	  max_ring_memory_per_uid, max_ring_memory_per_uid,		\
	  TDBO_LU_BYTES, 20, TDBO_LIM_GiB, TDBO_LIM_GiB,		\
	  8 * TDBO_LIM_MiB, TDBO_LIM_TiB, TDBO_LF_ZERO_OFF,		\
	  TDBO_LIM_EXEMPT, "ring memory (both rings and their header "	\
	  "pages) of one uid's clients")				\
	X(MAX_RING_MEMORY, "max-ring-memory", max_ring_memory,		\
	  max_ring_memory, TDBO_LU_BYTES, 20, 8 * TDBO_LIM_GiB,		\
	  8 * TDBO_LIM_GiB, 8 * TDBO_LIM_MiB, 16 * TDBO_LIM_TiB, 0,	\
	  TDBO_LIM_EIGHTH, "ring memory of all clients")		\
	X(MAX_TXNS, "max-txns", max_txns, max_txns, TDBO_LU_COUNT, 0,	\
	  16, 16, 1, 1024, 0, TDBO_LIM_SAME,				\
	  "open transactions of one client")				\
	X(MAX_TXN_OPS, "max-txn-ops", max_txn_ops, max_txn_ops,	\
	  TDBO_LU_COUNT, 0, 65536, 65536, 1, 1048576, 0, TDBO_LIM_SAME,	\
	  "changes and reads of one transaction")			\
	X(MAX_TXN_BYTES, "max-txn-bytes", max_txn_bytes, max_txn_bytes,\
	  TDBO_LU_BYTES, 0, 64 * TDBO_LIM_MiB, 64 * TDBO_LIM_MiB,	\
	  TDBO_LIM_KiB, 4 * TDBO_LIM_GiB, 0, TDBO_LIM_SAME,		\
	  "key and value bytes of one transaction")			\
	X(MAX_TXN_MEMORY_PER_UID, "max-txn-memory-per-uid",		\
	  max_txn_memory_per_uid, max_txn_memory_per_uid,		\
	  TDBO_LU_BYTES, 20, 256 * TDBO_LIM_MiB, 256 * TDBO_LIM_MiB,	\
	  TDBO_LIM_MiB, TDBO_LIM_TiB, TDBO_LF_ZERO_OFF,			\
	  TDBO_LIM_EXEMPT, "buffered transaction changes of one uid")	\
	X(MAX_TXN_MEMORY, "max-txn-memory", max_txn_memory,		\
	  max_txn_memory, TDBO_LU_BYTES, 20, TDBO_LIM_GiB,		\
	  TDBO_LIM_GiB, TDBO_LIM_MiB, TDBO_LIM_TiB, 0, TDBO_LIM_EIGHTH,	\
	  "buffered transaction changes in all")			\
	X(MAX_SNAPSHOT_BYTES, "max-snapshot-bytes", max_snapshot_bytes,\
	  max_snapshot_bytes, TDBO_LU_BYTES, 0, 256 * TDBO_LIM_MiB,	\
	  256 * TDBO_LIM_MiB, TDBO_LIM_KiB, 64 * TDBO_LIM_GiB, 0,	\
	  TDBO_LIM_SAME, "bytes one snapshot scan may hold for the keys "\
	  "changed during it (taken when the scan starts)")		\
	X(MAX_SNAPSHOT_MEMORY_PER_UID, "max-snapshot-memory-per-uid",	\
	  max_snapshot_memory_per_uid, max_snapshot_memory_per_uid,	\
	  TDBO_LU_BYTES, 20, 512 * TDBO_LIM_MiB, 512 * TDBO_LIM_MiB,	\
	  TDBO_LIM_MiB, TDBO_LIM_TiB, TDBO_LF_ZERO_OFF,			\
	  TDBO_LIM_EXEMPT, "bytes the snapshot scans of one uid hold")	\
	X(MAX_SNAPSHOT_MEMORY, "max-snapshot-memory",			\
	  max_snapshot_memory, max_snapshot_memory, TDBO_LU_BYTES, 20,	\
	  TDBO_LIM_GiB, TDBO_LIM_GiB, TDBO_LIM_MiB,			\
	  1024 * TDBO_LIM_GiB, 0, "none kept: a snapshot fails its own "\
	  "scan, never a writer", "bytes all snapshot scans hold")	\
	X(MAX_MEMORY, "max-memory", max_memory_mb, max_memory,		\
	  TDBO_LU_BYTES, 20, 0, TDBO_LIM_GiB, 0, 16384 * TDBO_LIM_GiB,	\
	  TDBO_LF_ZERO_AUTO, "the last eighth of table data is kept "	\
	  "for root", "table extents, buffered transactions, "		\
	  "snapshots, change feeds and client rings (tdb.ko: and its "	\
	  "change log ring); 0 = 3/4 of physical memory")		\
	X(READER_LEASE, "reader-lease", reader_lease_ms,		\
	  reader_lease_ms, TDBO_LU_MS, 0, 100, 100, 1, 60000, 0,	\
	  TDBO_LIM_SAME, "how long a writer waits for a mapped "	\
	  "reader's read section")

#define TDBO_LIMITS_TDBD(X)						\
	X(MAX_RESERVE_PER_UID, "max-reserve-per-uid", _,		\
	  max_reserve_per_uid, TDBO_LU_BYTES, 0, 256 * TDBO_LIM_GiB,	\
	  256 * TDBO_LIM_GiB, 4 * TDBO_LIM_MiB, 128 * TDBO_LIM_TiB,	\
	  TDBO_LF_ZERO_OFF, TDBO_LIM_EXEMPT, "address space the tables "\
	  "of one uid reserve (max-extents x 2 MiB each)")		\
	X(MAX_RESERVE, "max-reserve", _, max_reserve, TDBO_LU_BYTES, 0,\
	  16 * TDBO_LIM_TiB, 16 * TDBO_LIM_TiB, 4 * TDBO_LIM_MiB,	\
	  128 * TDBO_LIM_TiB, 0, TDBO_LIM_EIGHTH,			\
	  "address space all tables reserve")				\
	X(MAX_DATA_PER_UID, "max-data-per-uid", _, max_data_per_uid,	\
	  TDBO_LU_BYTES, 0, 0, 0, 0, 16384 * TDBO_LIM_GiB,		\
	  TDBO_LF_ZERO_AUTO, TDBO_LIM_EXEMPT, "extents of the tables "	\
	  "one uid owns; 0 = half of max-memory")

#define TDBO_LIMITS_KO(X)						\
	X(MAX_SNAPSHOT_MB, NULL, max_snapshot_mb, max_snapshot_bytes,	\
	  TDBO_LU_BYTES, 20, 256 * TDBO_LIM_MiB, 256 * TDBO_LIM_MiB,	\
	  TDBO_LIM_MiB, 64 * TDBO_LIM_GiB, 0, TDBO_LIM_SAME,		\
	  "max_snapshot_bytes in MiB")

#define TDBO_LIM_ID_(id, ...) TDBO_LIM_##id,
enum tdbo_limit_id {
	TDBO_LIMITS_BOTH(TDBO_LIM_ID_)
	TDBO_LIMITS_TDBD(TDBO_LIM_ID_)
	TDBO_LIMITS_KO(TDBO_LIM_ID_)
	TDBO_LIM_COUNT
};

#define TDBO_LH_TDBD 0x1u       /* a tdbd.conf key */
#define TDBO_LH_KO   0x2u       /* a tdb.ko module parameter */

struct tdbo_limit {
	const char *conf;       /* tdbd.conf key, or NULL */
	const char *param;      /* module parameter, or NULL */
	uint8_t homes;          /* TDBO_LH_* */
	uint8_t unit;           /* enum tdbo_limit_unit */
	uint8_t shift;          /* module parameter = limit >> shift */
	uint8_t flags;          /* TDBO_LF_* */
	uint64_t def, kdef, min, max;
	const char *root;       /* root's share */
	const char *counts;     /* what it counts */
};

/* The table, indexed by enum tdbo_limit_id (limtable.c). */
extern const struct tdbo_limit tdbo_limits_table[TDBO_LIM_COUNT];

/* By tdbd.conf key (len bytes of name) or module parameter name: the
 * entry, or NULL. */
const struct tdbo_limit *tdbo_limit_by_conf(const char *name,
					    unsigned long len);
const struct tdbo_limit *tdbo_limit_by_param(const char *name);

/* Whether v (the limit itself, not >> shift) is a value l accepts:
 * min..max (and a power of two where it must be), or 0 where a flag
 * gives 0 a meaning. */
int tdbo_limit_ok(const struct tdbo_limit *l, uint64_t v);

#endif
