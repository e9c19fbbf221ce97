// SPDX-License-Identifier: GPL-2.0-only
/*
 * home.c - what tdb.ko supplies to the shared owner (src/owner/owner.h):
 * its limits, as module parameters; memory for change feeds that
 * /dev/tdb maps read-only; the hook that unmaps a dropped table from
 * its readers (kmap.c); and clients' credentials as numbers.
 *
 * The limits have tdbd.conf's names with '_' for '-' (the kernel's
 * parameter parser takes either: tdb.max-txns=2 works as well) and are
 * written straight into the struct tdbo_limits the owner reads with
 * tdb_load_relaxed(), so a new value of a 0644 parameter applies to the
 * next request.  Units are those of the parameters' names (MiB where
 * the name says _mb or the description says so).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/user_namespace.h>
#include <linux/vmalloc.h>

#include "owner.h"
#include "transport.h"
#include "sup.h"

static struct tdbo_limits lim = {
	.default_mode = 0600,
	.feed_size = 1U << 20,
	.max_tables = 4000,             /* tdbd's max-tables */
	.max_clients = 1024,
	.max_clients_per_uid = 64,
	.max_tables_per_uid = 256,
	.max_watches = 1024,
	.max_watches_per_uid = 4096,    /* as tdbd's */
	.max_watches_total = 16384,
	.max_ring_memory_per_uid = 512ULL << 20,
	.max_txns = 16,
	.max_txn_ops = 65536,
	.max_txn_bytes = 64U << 20,
	.max_txn_memory = 1024ULL << 20,
	.max_txn_memory_per_uid = 256ULL << 20,
	.max_snapshot_bytes = 256ULL << 20,
	.max_snapshot_memory = 1024ULL << 20,
	.max_snapshot_memory_per_uid = 512ULL << 20,
	.reader_lease_ms = 100,
};

/* --- parameters ------------------------------------------------------------ */

/* A count with a range, in a u32 field of lim. */
#define PARAM_RANGE(name, lo, hi)					\
static int name##_set(const char *val, const struct kernel_param *kp)	\
{									\
	return param_set_uint_minmax(val, kp, lo, hi);			\
}									\
static const struct kernel_param_ops name##_ops = {			\
	.set = name##_set,						\
	.get = param_get_uint,						\
}

/* Bytes in a u64 field of lim, set and shown in MiB (a uint). */
static int mib_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err)
		return err;
	WRITE_ONCE(*(u64 *)kp->arg, (u64)v << 20);
	return 0;
}

static int mib_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(*(u64 *)kp->arg) >> 20);
}

static const struct kernel_param_ops mib_ops = {
	.set = mib_set,
	.get = mib_get,
};

/* Bytes in a u64 field of lim, as a uint of bytes. */
static int bytes_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err)
		return err;
	if (v < 1024)
		return -EINVAL;
	WRITE_ONCE(*(u64 *)kp->arg, v);
	return 0;
}

static int bytes_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(*(u64 *)kp->arg));
}

static const struct kernel_param_ops bytes_ops = {
	.set = bytes_set,
	.get = bytes_get,
};

/* Bytes in a u64 field of lim, as a u64 of bytes from 1 KiB to 64 GiB
 * (tdbd's range for max-snapshot-bytes). */
static int bytes64_set(const char *val, const struct kernel_param *kp)
{
	u64 v;
	int err = kstrtoull(val, 0, &v);

	if (err)
		return err;
	if (v < 1024 || v > (64ULL << 30))
		return -EINVAL;
	WRITE_ONCE(*(u64 *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops bytes64_ops = {
	.set = bytes64_set,
	.get = bytes_get,
};

module_param_named(default_mode, lim.default_mode, uint, 0444);
MODULE_PARM_DESC(default_mode,
		 "mode bits of a table created without MODE (default 0600)");

module_param_named(feed_size, lim.feed_size, uint, 0444);
MODULE_PARM_DESC(feed_size,
		 "data bytes of a change feed, a power of two from 4096 "
		 "to 1 GiB (default 1 MiB)");

/* Never 0: no table could ever be created. */
PARAM_RANGE(max_tables, 1, UINT_MAX);
module_param_cb(max_tables, &max_tables_ops, &lim.max_tables, 0644);
MODULE_PARM_DESC(max_tables,
		 "tables at once; the last eighth is kept for root "
		 "(default 4000, as tdbd's max-tables)");

module_param_named(max_clients, lim.max_clients, uint, 0644);
MODULE_PARM_DESC(max_clients,
		 "/dev/tdb clients with rings at once; the last eighth is "
		 "kept for root (default 1024, 0 = no limit)");

module_param_named(max_clients_per_uid, lim.max_clients_per_uid, uint, 0644);
MODULE_PARM_DESC(max_clients_per_uid,
		 "/dev/tdb clients with rings of one uid, root exempt "
		 "(default 64, 0 = no limit)");

module_param_named(max_tables_per_uid, lim.max_tables_per_uid, uint, 0644);
MODULE_PARM_DESC(max_tables_per_uid,
		 "tables owned by one uid, root exempt (default 256, "
		 "0 = no limit)");

module_param_named(max_watches, lim.max_watches, uint, 0644);
MODULE_PARM_DESC(max_watches,
		 "watches of one /dev/tdb client (default 1024, 0 = no "
		 "limit)");

module_param_named(max_watches_per_uid, lim.max_watches_per_uid, uint, 0644);
MODULE_PARM_DESC(max_watches_per_uid,
		 "watches of one uid's clients, root exempt (default 4096, "
		 "0 = no limit)");

module_param_named(max_watches_total, lim.max_watches_total, uint, 0644);
MODULE_PARM_DESC(max_watches_total,
		 "watches in all; the last eighth is kept for root "
		 "(default 16384, 0 = no limit)");

module_param_cb(max_ring_memory_per_uid, &mib_ops,
		&lim.max_ring_memory_per_uid, 0644);
MODULE_PARM_DESC(max_ring_memory_per_uid,
		 "MiB of /dev/tdb ring memory (both rings and their header "
		 "pages) of one uid's clients, root exempt (default 512, "
		 "0 = no limit)");

PARAM_RANGE(max_txns, 1, 1024);
module_param_cb(max_txns, &max_txns_ops, &lim.max_txns, 0644);
MODULE_PARM_DESC(max_txns, "open transactions of one client, 1..1024 "
		 "(default 16)");

PARAM_RANGE(max_txn_ops, 1, 1048576);
module_param_cb(max_txn_ops, &max_txn_ops_ops, &lim.max_txn_ops, 0644);
MODULE_PARM_DESC(max_txn_ops, "changes of one transaction, 1..1048576 "
		 "(default 65536)");

module_param_cb(max_txn_bytes, &bytes_ops, &lim.max_txn_bytes, 0644);
MODULE_PARM_DESC(max_txn_bytes, "key and value bytes of one transaction, "
		 "1024..4294967295 (default 64 MiB)");

module_param_cb(max_txn_memory_per_uid, &mib_ops,
		&lim.max_txn_memory_per_uid, 0644);
MODULE_PARM_DESC(max_txn_memory_per_uid,
		 "MiB of buffered transaction changes of one uid, root "
		 "exempt (default 256, 0 = no limit)");

module_param_cb(max_txn_memory, &mib_ops, &lim.max_txn_memory, 0644);
MODULE_PARM_DESC(max_txn_memory,
		 "MiB of buffered transaction changes in all; the last "
		 "eighth is kept for root (default 1024, 0 = no limit)");

module_param_cb(max_snapshot_mb, &mib_ops, &lim.max_snapshot_bytes, 0644);
MODULE_PARM_DESC(max_snapshot_mb,
		 "old values one snapshot scan may keep for keys changed "
		 "during it, MiB (default 256): max_snapshot_bytes in MiB; "
		 "taken when a scan starts");

module_param_cb(max_snapshot_bytes, &bytes64_ops, &lim.max_snapshot_bytes,
		0644);
MODULE_PARM_DESC(max_snapshot_bytes,
		 "bytes one snapshot scan may hold for the keys changed "
		 "during it (its map and the old values, shared ones too), "
		 "1024..68719476736 (default 256 MiB); taken when a scan "
		 "starts");

module_param_cb(max_snapshot_memory_per_uid, &mib_ops,
		&lim.max_snapshot_memory_per_uid, 0644);
MODULE_PARM_DESC(max_snapshot_memory_per_uid,
		 "MiB the snapshot scans of one uid may hold, root exempt "
		 "(default 512, 0 = no limit)");

module_param_cb(max_snapshot_memory, &mib_ops, &lim.max_snapshot_memory,
		0644);
MODULE_PARM_DESC(max_snapshot_memory,
		 "MiB all snapshot scans together may hold (default 1024, "
		 "0 = no limit)");

/* Never 0 here (the owner would read it as its default, 100). */
PARAM_RANGE(reader_lease_ms, 1, 60000);
module_param_cb(reader_lease_ms, &reader_lease_ms_ops, &lim.reader_lease_ms,
		0644);
MODULE_PARM_DESC(reader_lease_ms,
		 "how long a writer waits for a mapped reader's read "
		 "section before it stops waiting (the reader redoes the "
		 "read through its rings), 1..60000 ms (default 100, as "
		 "tdbd's reader-lease)");

#define FEED_SIZE_MIN 4096U
#define FEED_SIZE_MAX (1U << 30)

int tdbk_home_check(void)
{
	if (lim.default_mode & ~0777U) {
		pr_err("default_mode=%#o has bits outside 0777\n",
		       lim.default_mode);
		return -EINVAL;
	}
	if (!is_power_of_2(lim.feed_size) || lim.feed_size < FEED_SIZE_MIN ||
	    lim.feed_size > FEED_SIZE_MAX) {
		pr_err("feed_size=%u is not a power of two from %u to %u\n",
		       lim.feed_size, FEED_SIZE_MIN, FEED_SIZE_MAX);
		return -EINVAL;
	}
	tdbk_home_max_data_set(tdbk_mem_limit());
	return 0;
}

/*
 * Table data (TDBO_Q_DATA) follows max_memory_mb (platform.c): in all,
 * its last eighth kept for root; per uid, half of it (root exempt), as
 * tdbd's default max-data-per-uid.  At load and when it is set.
 */
void tdbk_home_max_data_set(u64 bytes)
{
	WRITE_ONCE(lim.max_data, bytes);
	WRITE_ONCE(lim.max_data_per_uid, bytes / 2);
}

const struct tdbo_limits *tdbk_home_limits(void)
{
	return &lim;
}

/* --- feeds ----------------------------------------------------------------- */

/* vmalloc_user(): zeroed, and dev.c can map it with
 * remap_vmalloc_range_partial(); counted in max_memory_mb with the
 * tables' extents. */
static void *feed_alloc(void *arg, size_t size, void **cookie)
{
	void *mem;

	if (!tdbk_mem_charge(size))
		return NULL;
	mem = vmalloc_user(size);
	if (!mem)
		tdbk_mem_uncharge(size);
	return mem;
}

static void feed_free(void *arg, void *mem, size_t size, void *cookie)
{
	vfree(mem);
	tdbk_mem_uncharge(size);
}

/* --- table maps ----------------------------------------------------------- */

/* t was dropped (the owner holds its wlock): take every client's
 * mapping of it down (kmap.c). */
static void map_revoke(void *arg, struct tdbo_table *t)
{
	tdbk_map_revoke(tdbo_table_map_slot(t));
}

/* STATS: with a supervisor, the change log's figures in the WAL's
 * fields (records logged since load, the last LSN, the LSN tdbd made
 * durable), so `tdb stats` shows how far durability is behind. */
static void stats(void *arg, struct tdb_proto_counters *k)
{
	if (!tdbk_log_counters(&k->wal_records, &k->wal_lsn,
			       &k->wal_durable))
		return;
	k->present |= TDB_PROTO_BIT(TDB_CTR_A_WAL_RECORDS) |
		      TDB_PROTO_BIT(TDB_CTR_A_WAL_LSN) |
		      TDB_PROTO_BIT(TDB_CTR_A_WAL_DURABLE);
}

/* The log hooks (klog.c) log nothing until a supervisor has claimed
 * (today's in-memory mode), nor while it restores the tables. */
const struct tdbo_hooks tdbk_home_hooks = {
	.feed_alloc = feed_alloc,
	.feed_free = feed_free,
	.map_revoke = map_revoke,
	.stats = stats,
	.log_reserve = tdbk_log_reserve,
	.log_cancel = tdbk_log_cancel,
	.log_begin = tdbk_log_begin,
	.log_op = tdbk_log_op,
	.log_commit = tdbk_log_commit,
	.log_create = tdbk_log_create,
	.log_drop = tdbk_log_drop,
};

/* --- credentials ---------------------------------------------------------- */

/* The owner checks access by numbers in the initial user namespace:
 * fsuid, fsgid and the supplementary groups, copied from cred. */
struct tdbo_client *tdbk_client_new(struct tdbo_owner *o,
				    const struct cred *cred, bool may_watch,
				    void (*wake)(void *arg), void *arg,
				    int *err)
{
	const struct group_info *gi = cred->group_info;
	struct tdbo_cred tc = {
		.uid = from_kuid_munged(&init_user_ns, cred->fsuid),
		.gid = from_kgid_munged(&init_user_ns, cred->fsgid),
	};
	struct tdbo_client *c;
	u32 *groups = NULL;
	int i;

	if (gi && gi->ngroups) {
		groups = kvmalloc_array(gi->ngroups, sizeof(*groups),
					GFP_KERNEL);
		if (!groups) {
			*err = -ENOMEM;
			return NULL;
		}
		for (i = 0; i < gi->ngroups; i++)
			groups[i] = from_kgid_munged(&init_user_ns,
						     gi->gid[i]);
		tc.ngroups = gi->ngroups;
		tc.groups = groups;
	}
	c = tdbo_client_new(o, &tc, may_watch, wake, arg, err);
	kvfree(groups);
	return c;
}
