// SPDX-License-Identifier: GPL-2.0-only
/*
 * home.c - what tdb.ko supplies to the shared owner (src/owner/owner.h):
 * its limits, as module parameters; memory for change feeds that
 * /dev/tdb maps read-only; the hook that unmaps a dropped table from
 * its readers (kmap.c); and clients' credentials as numbers.
 *
 * The limits are the module parameters made from the one limits table
 * (src/owner/limtable.h, which tdbd.conf's keys are made from too):
 * tdbd.conf's names with '_' for '-' (the kernel's parameter parser
 * takes either: tdb.max-txns=2 works as well), the table's defaults and
 * ranges, one set/get pair for all (limit_set: out of range is -EINVAL
 * and a kernel log line naming the range).  They are written straight
 * into the struct tdbo_limits the owner reads with tdb_load_relaxed(),
 * so a new value of a 0644 parameter applies to the next request.
 * Units: the table's, but MiB where its shift is 20 (max_memory_mb and
 * the *_memory ones).  max_memory_mb bounds what limtable.h says
 * max-memory counts: platform.c charges extents, feeds, rings and the
 * log ring, tdbk_home_held() adds the owner's transactions and
 * snapshots, and mem_check refuses writes that add data past it.
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
#include "limtable.h"
#include "transport.h"
#include "sup.h"

/* Every limit of limtable.h's lists for tdb.ko at its tdb.ko default;
 * the tdbd-only ones stay 0 ("no limit") but max_data_per_uid, which
 * tdbk_home_max_data_set() keeps at half of max_memory_mb. */
#define LIM_INIT_(id, conf, param, field, unit, shift, def, kdef, ...)	\
	.field = kdef,

static struct tdbo_limits lim = {
	TDBO_LIMITS_BOTH(LIM_INIT_)
};

/* The owner, for the memory it holds for clients (max_memory_mb). */
static struct tdbo_owner *home_owner;

/* --- parameters ------------------------------------------------------------ */

/*
 * Each limit of the table is a module parameter of its name with one
 * set/get pair: the value is the limit >> shift (MiB for those whose
 * shift is 20), parsed as a u64 (0x and 0 prefixes work: 0600 is
 * octal), refused with -EINVAL and a kernel log line naming the range
 * when tdbo_limit_ok() refuses it, and stored with WRITE_ONCE() into
 * its field of lim, where the owner reads it with tdb_load_relaxed().
 */
struct limit_param {
	enum tdbo_limit_id id;
	void *slot;             /* its field in lim */
	size_t width;           /* 4 or 8 bytes */
};

static int limit_set(const char *val, const struct kernel_param *kp)
{
	const struct limit_param *p = kp->arg;
	const struct tdbo_limit *l = &tdbo_limits_table[p->id];
	u64 v;
	int err = kstrtoull(val, 0, &v);

	if (err)
		return err;
	if (v > (U64_MAX >> l->shift) || !tdbo_limit_ok(l, v << l->shift)) {
		pr_warn("%s=%llu refused: the range is %llu..%llu%s%s%s\n",
			kp->name, v, l->min >> l->shift, l->max >> l->shift,
			l->shift ? " MiB" : "",
			l->flags & (TDBO_LF_ZERO_OFF | TDBO_LF_ZERO_AUTO) ?
			", or 0" : "",
			l->flags & TDBO_LF_POW2 ? ", a power of two" : "");
		return -EINVAL;
	}
	v <<= l->shift;
	if (p->width == sizeof(u32))
		WRITE_ONCE(*(u32 *)p->slot, (u32)v);
	else
		WRITE_ONCE(*(u64 *)p->slot, v);
	if (p->id == TDBO_LIM_MAX_MEMORY)
		tdbk_home_max_data_set(tdbk_mem_limit());
	return 0;
}

static int limit_get(char *buf, const struct kernel_param *kp)
{
	const struct limit_param *p = kp->arg;
	const struct tdbo_limit *l = &tdbo_limits_table[p->id];
	u64 v = p->width == sizeof(u32) ? READ_ONCE(*(u32 *)p->slot) :
		READ_ONCE(*(u64 *)p->slot);

	if (l->unit == TDBO_LU_MODE)
		return sysfs_emit(buf, "%#llo\n", v);
	return sysfs_emit(buf, "%llu\n", v >> l->shift);
}

static const struct kernel_param_ops limit_ops = {
	.set = limit_set,
	.get = limit_get,
};

#define UNIT_0 ""
#define UNIT_20 " (MiB)"
#define PARAM_(id, conf, param, field, unit, shift, def, kdef, min, max,	\
	       flags, root, counts)						\
	static const struct limit_param lp_##param = {			\
		TDBO_LIM_##id, &lim.field, sizeof(lim.field),		\
	};								\
	module_param_cb(param, &limit_ops, (void *)&lp_##param,		\
			((flags) & TDBO_LF_KLOAD) ? 0444 : 0644);	\
	MODULE_PARM_DESC(param, counts UNIT_##shift "; " root		\
			 " (docs/KERNEL.md: range, default)");

TDBO_LIMITS_BOTH(PARAM_)
TDBO_LIMITS_KO(PARAM_)

int tdbk_home_check(void)
{
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

/* --- max_memory_mb: what the owner holds ------------------------------------ */

u64 tdbk_home_max_memory(void)
{
	return READ_ONCE(lim.max_memory);
}

void tdbk_home_owner_set(struct tdbo_owner *o)
{
	WRITE_ONCE(home_owner, o);
}

/* Buffered transaction changes and snapshot memory (limtable.h's one
 * definition of max-memory): the owner's gauges, no lock. */
u64 tdbk_home_held(void)
{
	struct tdbo_owner *o = READ_ONCE(home_owner);

	return o ? tdbo_txn_bytes(o) + tdbo_snap_mem(o) : 0;
}

/* Not under the owner's write lock: a few atomic loads per write that
 * adds data.  As tdbd's mem_check (src/daemon/tables.c). */
static int mem_check(void *arg, const char **msg)
{
	unsigned long limit = tdbk_mem_limit();

	if (tdbk_mem_used() + tdbk_home_held() <= limit)
		return 0;
	*msg = "tdb.ko is over max_memory_mb (max-memory): writes that add "
	       "data are refused; reads and deletes go on";
	return -ENOMEM;
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
 * (today's in-memory mode), nor while it restores the tables: then a
 * RESTORE_BULK batch goes into the engine straight (restore_begin). */
const struct tdbo_hooks tdbk_home_hooks = {
	.feed_alloc = feed_alloc,
	.feed_free = feed_free,
	.map_revoke = map_revoke,
	.mem_check = mem_check,
	.stats = stats,
	.log_reserve = tdbk_log_reserve,
	.log_cancel = tdbk_log_cancel,
	.log_begin = tdbk_log_begin,
	.log_op = tdbk_log_op,
	.log_commit = tdbk_log_commit,
	.log_create = tdbk_log_create,
	.log_drop = tdbk_log_drop,
	.restore_begin = tdbk_log_restore_begin,
	.restore_end = tdbk_log_restore_end,
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
