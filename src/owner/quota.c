// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner_quota.c - what each uid holds in tdb.ko, and in all, against the
 * module parameters that bound it (the same limits as tdbd's quota.c,
 * under the same names in snake case):
 *
 *   kind             unit     per uid                  in all
 *   TDBK_Q_CLIENTS   clients  max_clients_per_uid      max_clients
 *   TDBK_Q_TABLES    tables   max_tables_per_uid       max_tables
 *   TDBK_Q_TXN_BYTES bytes    max_txn_memory_per_uid   max_txn_memory
 *
 * and max_watches, a client's watches (owner_feed.c).  A client here is
 * a /dev/tdb file with rings (charged at TDB_IOC_ATTACH); generic netlink
 * sockets hold no rings and are not counted (docs/KERNEL.md).
 *
 * Rules, as tdbd's: a request of uid 0 is exempt from the per-uid limits
 * and may use the whole of a limit in all; any other uid is refused at
 * 7/8 of it (the last eighth is kept for root).  Refusals: -EDQUOT per
 * uid; -ENOSPC (counts) or -ENOBUFS (transaction memory) in all; the
 * message names the parameter.  0 is "no limit" for every parameter
 * here.  The parameters are 0644 and read with READ_ONCE at each charge:
 * a new value applies to the next charge; lowering one takes nothing
 * back.
 *
 * Invariants (under q->lock, a spinlock: nothing sleeps under it):
 *  - total[k] is the sum of used[k] over all entries;
 *  - an entry exists only while one of its counters is not 0 (the
 *    uncharge that empties it frees it), so at unload, once every
 *    client and table is gone, the hash is empty;
 *  - an entry is allocated (GFP_KERNEL) with the lock dropped, then the
 *    lookup is done again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "owner_int.h"

static unsigned int max_clients = 1024;
module_param(max_clients, uint, 0644);
MODULE_PARM_DESC(max_clients,
		 "/dev/tdb clients with rings at once; the last eighth is "
		 "kept for root (default 1024, 0 = no limit)");

static unsigned int max_clients_per_uid = 64;
module_param(max_clients_per_uid, uint, 0644);
MODULE_PARM_DESC(max_clients_per_uid,
		 "/dev/tdb clients with rings of one uid, root exempt "
		 "(default 64, 0 = no limit)");

static unsigned int max_tables_per_uid = 256;
module_param(max_tables_per_uid, uint, 0644);
MODULE_PARM_DESC(max_tables_per_uid,
		 "tables owned by one uid, root exempt (default 256, "
		 "0 = no limit)");

static unsigned int max_txn_memory_per_uid = 256;
module_param(max_txn_memory_per_uid, uint, 0644);
MODULE_PARM_DESC(max_txn_memory_per_uid,
		 "MiB of buffered transaction changes of one uid, root "
		 "exempt (default 256, 0 = no limit)");

static unsigned int max_txn_memory = 1024;
module_param(max_txn_memory, uint, 0644);
MODULE_PARM_DESC(max_txn_memory,
		 "MiB of buffered transaction changes in all; the last "
		 "eighth is kept for root (default 1024, 0 = no limit)");

static unsigned int max_watches = 1024;
module_param(max_watches, uint, 0644);
MODULE_PARM_DESC(max_watches,
		 "watches of one /dev/tdb client (default 1024, 0 = no "
		 "limit)");

struct qent {
	struct hlist_node node;
	u32 uid;
	u64 used[TDBK_Q_KINDS];
};

/* A limit now, and how its refusal reads. */
struct qlimit {
	u64 max;                /* 0: none */
	const char *msg;
	const char *msg_root;   /* in all, for root (no reserve) */
	int err;
};

static u64 mib(unsigned int v)
{
	return (u64)v << 20;
}

static struct qlimit per_uid(enum tdbk_qkind k)
{
	struct qlimit l = { 0, NULL, NULL, -EDQUOT };

	switch (k) {
	case TDBK_Q_CLIENTS:
		l.max = READ_ONCE(max_clients_per_uid);
		l.msg = "too many clients of this user (the module parameter "
			"max_clients_per_uid)";
		break;
	case TDBK_Q_TABLES:
		l.max = READ_ONCE(max_tables_per_uid);
		l.msg = "too many tables owned by this user (the module "
			"parameter max_tables_per_uid)";
		break;
	case TDBK_Q_TXN_BYTES:
		l.max = mib(READ_ONCE(max_txn_memory_per_uid));
		l.msg = "the open transactions of this user would hold more "
			"than the module parameter max_txn_memory_per_uid";
		break;
	default:
		break;
	}
	return l;
}

static struct qlimit global(enum tdbk_qkind k)
{
	struct qlimit l = { 0, NULL, NULL, -ENOSPC };

	switch (k) {
	case TDBK_Q_CLIENTS:
		l.max = READ_ONCE(max_clients);
		l.msg = "too many clients (the module parameter max_clients; "
			"the last eighth is kept for root)";
		l.msg_root = "too many clients (the module parameter "
			     "max_clients)";
		break;
	case TDBK_Q_TABLES:
		l.max = tdbk_max_tables();
		l.msg = "too many tables (the module parameter max_tables; "
			"the last eighth is kept for root)";
		l.msg_root = "too many tables (the module parameter "
			     "max_tables)";
		break;
	case TDBK_Q_TXN_BYTES:
		l.max = mib(READ_ONCE(max_txn_memory));
		l.msg = "open transactions would hold more than the module "
			"parameter max_txn_memory (the last eighth is kept "
			"for root)";
		l.msg_root = "open transactions would hold more than the "
			     "module parameter max_txn_memory";
		l.err = -ENOBUFS;
		break;
	default:
		break;
	}
	return l;
}

unsigned int tdbk_max_watches(void)
{
	unsigned int n = READ_ONCE(max_watches);

	return n ? n : UINT_MAX;
}

static struct hlist_head *bucket(struct tdbk_quota *q, u32 uid)
{
	return &q->b[(uid * 2654435761u) % TDBK_QUOTA_BUCKETS];
}

/* Under q->lock. */
static struct qent *find(struct tdbk_quota *q, u32 uid)
{
	struct qent *e;

	hlist_for_each_entry(e, bucket(q, uid), node)
		if (e->uid == uid)
			return e;
	return NULL;
}

/* Would used + n pass max?  (No wrap.) */
static bool over(u64 used, u64 n, u64 max)
{
	return max && (n > max || used > max - n);
}

/* Under q->lock: may `who` charge n of k to uid (entry e, may be NULL)? */
static int refuse(struct tdbk_owner *o, struct qent *e, u32 who,
		  enum tdbk_qkind k, u64 n, const char **msg)
{
	struct qlimit l;

	if (who != 0) {
		l = per_uid(k);
		if (over(e ? e->used[k] : 0, n, l.max)) {
			*msg = l.msg;
			return l.err;
		}
	}
	l = global(k);
	if (who != 0)
		l.max -= l.max / 8;     /* the last eighth is root's */
	if (over(o->quota.total[k], n, l.max)) {
		*msg = who ? l.msg : l.msg_root;
		return l.err;
	}
	return 0;
}

int tdbk_quota_charge(struct tdbk_owner *o, u32 who, u32 uid,
		      enum tdbk_qkind k, u64 n, const char **msg)
{
	struct tdbk_quota *q = &o->quota;
	struct qent *e, *spare = NULL;
	int err;

	for (;;) {
		spin_lock(&q->lock);
		e = find(q, uid);
		err = refuse(o, e, who, k, n, msg);
		if (err || e || spare)
			break;
		spin_unlock(&q->lock);
		spare = kzalloc(sizeof(*spare), GFP_KERNEL);
		if (!spare) {
			*msg = "out of memory";
			return -ENOMEM;
		}
	}
	if (!err) {
		if (!e) {
			e = spare;
			spare = NULL;
			e->uid = uid;
			hlist_add_head(&e->node, bucket(q, uid));
		}
		e->used[k] += n;
		q->total[k] += n;
	}
	spin_unlock(&q->lock);
	kfree(spare);
	return err;
}

static bool empty(const struct qent *e)
{
	int k;

	for (k = 0; k < TDBK_Q_KINDS; k++)
		if (e->used[k])
			return false;
	return true;
}

void tdbk_quota_uncharge(struct tdbk_owner *o, u32 uid, enum tdbk_qkind k,
			 u64 n)
{
	struct tdbk_quota *q = &o->quota;
	struct qent *e;

	if (!n)
		return;
	spin_lock(&q->lock);
	e = find(q, uid);
	if (WARN_ON_ONCE(!e || e->used[k] < n || q->total[k] < n)) {
		/* A bug; stop at 0 rather than wrap. */
		n = e ? min(e->used[k], n) : 0;
	}
	q->total[k] -= min(q->total[k], n);
	if (e) {
		e->used[k] -= n;
		if (empty(e))
			hlist_del(&e->node);
		else
			e = NULL;
	}
	spin_unlock(&q->lock);
	kfree(e);
}

void tdbk_quota_init(struct tdbk_quota *q)
{
	unsigned int i;

	spin_lock_init(&q->lock);
	for (i = 0; i < TDBK_QUOTA_BUCKETS; i++)
		INIT_HLIST_HEAD(&q->b[i]);
}

/* At unload, with no client or table left: everything was given back. */
void tdbk_quota_fini(struct tdbk_quota *q)
{
	struct hlist_node *tmp;
	struct qent *e;
	unsigned int i;
	int k;

	for (k = 0; k < TDBK_Q_KINDS; k++)
		if (q->total[k])
			pr_err("quota: %llu of kind %d still charged at "
			       "unload (a bug)\n", q->total[k], k);
	for (i = 0; i < TDBK_QUOTA_BUCKETS; i++) {
		hlist_for_each_entry_safe(e, tmp, &q->b[i], node) {
			WARN_ONCE(1, "tdb: quota entry of uid %u left at "
				  "unload\n", e->uid);
			hlist_del(&e->node);
			kfree(e);
		}
	}
}
