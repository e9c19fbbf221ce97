// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner_txn.c - transactions (TXN_BEGIN, TXN_COMMIT, TXN_ABORT): changes
 * buffered per client, applied at commit all together or not at all,
 * exactly as tdbd's src/daemon/txn.c does.
 *
 * A transaction belongs to the client that began it (c->txns, touched
 * only by the client's thread).  Commit, under o->wlock:
 *  1. o->txn_seq becomes odd: GETs that overlap the commit retry, so no
 *     reader sees part of it;
 *  2. each change is applied in order, after saving the key's old value
 *     in an undo list;
 *  3. if a change fails (-EEXIST of a no-overwrite put, -ENOSPC, a table
 *     dropped meanwhile, ...), the changes already applied are undone in
 *     reverse order; the commit fails with that error and nothing is
 *     left;
 *  4. o->txn_seq becomes even again, then watchers are told about each
 *     change (only for a commit that succeeded).
 * An undo can itself fail only if restoring an old value needs memory
 * the table no longer has; that is logged.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "owner_int.h"

/* A transaction's buffers (up to max_txn_bytes) are the client's to grow and
 * live as long as it wants: GFP_KERNEL_ACCOUNT charges them to its
 * memory cgroup, and each change is charged, at OP_COST, to the client's
 * uid against max_txn_memory_per_uid and max_txn_memory
 * (owner_quota.c) before it is copied; x->charged is given back when x
 * is freed (commit, abort, or the client's end), whatever happened. */

/*
 * A client's transactions, and each one's changes and bytes: tdbd's
 * max-txns, max-txn-ops and max-txn-bytes, with their ranges (but for
 * bytes, which stop at 4 GiB - 1).  Writable at run time: read at each
 * TXN_BEGIN, PUT or DEL (a lower value refuses what comes next, takes
 * nothing back).
 */
#define PARAM_RANGE(name, lo, hi)					\
static int name##_set(const char *val, const struct kernel_param *kp)	\
{									\
	return param_set_uint_minmax(val, kp, lo, hi);			\
}									\
static const struct kernel_param_ops name##_ops = {			\
	.set = name##_set,						\
	.get = param_get_uint,						\
}

static unsigned int max_txns = 16;
PARAM_RANGE(max_txns, 1, 1024);
module_param_cb(max_txns, &max_txns_ops, &max_txns, 0644);
MODULE_PARM_DESC(max_txns, "open transactions of one client, 1..1024 "
		 "(default 16)");

static unsigned int max_txn_ops = 65536;
PARAM_RANGE(max_txn_ops, 1, 1048576);
module_param_cb(max_txn_ops, &max_txn_ops_ops, &max_txn_ops, 0644);
MODULE_PARM_DESC(max_txn_ops, "changes of one transaction, 1..1048576 "
		 "(default 65536)");

static unsigned int max_txn_bytes = 64U << 20;
PARAM_RANGE(max_txn_bytes, 1024, UINT_MAX);
module_param_cb(max_txn_bytes, &max_txn_bytes_ops, &max_txn_bytes, 0644);
MODULE_PARM_DESC(max_txn_bytes, "key and value bytes of one transaction, "
		 "1024..4294967295 (default 64 MiB)");

#define OP_COST(klen, vlen) \
	((u64)(klen) + (vlen) + 2 * sizeof(struct ktxn_op) + 32)

/* The old state of one key, to put back. */
struct undo {
	bool had;               /* the key was present */
	void *old;
	size_t olen;
};

static struct ktxn *txn_new(struct tdbk_client *c)
{
	struct ktxn *x = kzalloc(sizeof(*x), GFP_KERNEL_ACCOUNT);

	if (x) {
		x->o = c->o;
		x->uid = c->uid;
		x->id = atomic64_inc_return(&c->o->next_txn);
	}
	return x;
}

void tdbk_txn_free(struct ktxn *x)
{
	u32 i;

	if (!x)
		return;
	for (i = 0; i < x->nops; i++) {
		tdbk_table_put(x->ops[i].t);
		kvfree(x->ops[i].key);
	}
	kvfree(x->ops);
	tdbk_quota_uncharge(x->o, x->uid, TDBK_Q_TXN_BYTES, x->charged);
	kfree(x);
}

struct ktxn *tdbk_txn_find(struct tdbk_client *c,
			   const struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext, int *err)
{
	struct ktxn *x;

	list_for_each_entry(x, &c->txns, node)
		if (x->id == m->txn)
			return x;
	ext->msg = "no such transaction on this connection";
	ext->offset = m->attr_off[TDB_A_TXN];
	*err = -ENOENT;
	return NULL;
}

static int ops_grow(struct ktxn *x)
{
	u32 cap = x->cap ? x->cap * 2 : 16;
	struct ktxn_op *n = kvmalloc_array(cap, sizeof(*n),
					   GFP_KERNEL_ACCOUNT);

	if (!n)
		return -ENOMEM;
	if (x->nops)
		memcpy(n, x->ops, x->nops * sizeof(*n));
	kvfree(x->ops);
	x->ops = n;
	x->cap = cap;
	return 0;
}

int tdbk_txn_add(struct ktxn *x, struct ktable *t, bool del, u32 flags,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 struct tdb_proto_extack *ext)
{
	u64 cost = OP_COST(klen, vlen);
	struct ktxn_op *op;
	int err;

	if (x->nops >= READ_ONCE(max_txn_ops)) {
		ext->msg = "transaction has max_txn_ops changes already (the "
			   "module parameter)";
		return -E2BIG;
	}
	if (x->bytes + klen + vlen > READ_ONCE(max_txn_bytes)) {
		ext->msg = "transaction would exceed max_txn_bytes (the module "
			   "parameter)";
		return -E2BIG;
	}
	err = tdbk_quota_charge(x->o, x->uid, x->uid, TDBK_Q_TXN_BYTES, cost,
				&ext->msg);
	if (err)
		return err;
	if (x->nops == x->cap && ops_grow(x))
		goto nomem;
	op = &x->ops[x->nops];
	op->key = kvmalloc(klen + vlen + 1, GFP_KERNEL_ACCOUNT);
	if (!op->key)
		goto nomem;
	memcpy(op->key, key, klen);
	if (vlen)
		memcpy(op->key + klen, val, vlen);
	op->klen = (u32)klen;
	op->vlen = (u32)vlen;
	op->del = del;
	op->flags = flags;
	op->t = t;
	refcount_inc(&t->refs);
	x->nops++;
	x->bytes += klen + vlen;
	x->charged += cost;
	return 0;
nomem:
	tdbk_quota_uncharge(x->o, x->uid, TDBK_Q_TXN_BYTES, cost);
	ext->msg = NULL;
	return -ENOMEM;
}

int tdbk_txn_lookup(const struct ktxn *x, const struct ktable *t,
		    const void *key, size_t klen, const void **val,
		    size_t *vlen)
{
	u32 i = x->nops;

	while (i--) {
		const struct ktxn_op *op = &x->ops[i];

		if (op->t != t || op->klen != klen ||
		    memcmp(op->key, key, klen))
			continue;
		if (op->del)
			return 0;
		*val = op->key + op->klen;
		*vlen = op->vlen;
		return 1;
	}
	return -ENOENT;
}

/* --- commit --------------------------------------------------------------- */

/* Under wlock: nobody else can change the key meanwhile. */
static int save_old(struct ktxn_op *op, struct undo *u)
{
	size_t need = 0;
	long n = tdbe_get(op->t->t, op->key, op->klen, NULL, 0, &need);

	u->had = false;
	u->old = NULL;
	if (n == -ENOENT)
		return 0;
	if (n == 0) {
		u->had = true;
		u->olen = 0;
		return 0;
	}
	if (n != -ENOBUFS)
		return n < 0 ? (int)n : -EIO;
	u->old = kvmalloc(need ? need : 1, GFP_KERNEL);
	if (!u->old)
		return -ENOMEM;
	n = tdbe_get(op->t->t, op->key, op->klen, u->old, need, &need);
	if (n < 0) {
		kvfree(u->old);
		u->old = NULL;
		return (int)n;
	}
	u->had = true;
	u->olen = (size_t)n;
	return 0;
}

static void undo_one(struct ktxn_op *op, struct undo *u)
{
	int err;

	if (u->had)
		err = tdbe_put(op->t->t, op->key, op->klen, u->old, u->olen, 0,
			       NULL);
	else
		err = tdbe_del(op->t->t, op->key, op->klen, NULL);
	if (err && !(err == -ENOENT && !u->had))
		pr_err("table %s: undoing a failed commit: %s; the key may "
		       "keep the transaction's value\n", op->t->name,
		       tdbe_strerror(err));
}

static int apply_one(struct ktxn_op *op, struct tdbe_extack *ee)
{
	int err;

	if (op->t->dropped) {
		ee->msg = "a table of the transaction was dropped";
		return -ENOENT;
	}
	tdbk_snap_save(op->t, op->key, op->klen);       /* pre-image */
	if (op->del) {
		err = tdbe_del(op->t->t, op->key, op->klen, ee);
		return err == -ENOENT ? 0 : err;   /* deleting nothing is ok */
	}
	return tdbe_put(op->t->t, op->key, op->klen, op->key + op->klen,
			op->vlen, op->flags & TDB_PUT_NOOVERWRITE ?
			TDBE_NOOVERWRITE : 0, ee);
}

/* Under wlock: apply every op or none; the error of the one that failed. */
static int apply_all(struct ktxn *x, struct undo *u,
		     struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	u32 i, done = 0;
	int err = 0;

	for (i = 0; i < x->nops && !err; i++) {
		err = save_old(&x->ops[i], &u[i]);
		if (!err)
			err = apply_one(&x->ops[i], &ee);
		if (!err)
			done = i + 1;
	}
	if (!err)
		return 0;
	ext->msg = ee.msg ? ee.msg : "a change of the transaction failed; "
		   "none was applied";
	if (err == -EEXIST)
		ext->msg = "key exists (no-overwrite put in the transaction); "
			   "none was applied";
	while (done--)
		undo_one(&x->ops[done], &u[done]);
	return err;
}

static int txn_commit(struct tdbk_owner *o, struct ktxn *x,
		      struct tdb_proto_extack *ext)
{
	struct undo *u = kvcalloc(x->nops ? x->nops : 1, sizeof(*u),
				  GFP_KERNEL);
	u32 i;
	int err;

	if (!u)
		return -ENOMEM;
	mutex_lock(&o->wlock);
	tdbk_seq_write_begin(o);
	err = apply_all(x, u, ext);
	tdbk_seq_write_end(o);
	for (i = 0; !err && i < x->nops; i++) {
		struct ktxn_op *op = &x->ops[i];

		tdbk_notify(o, op->t, op->del ? TDB_CMD_DEL : TDB_CMD_PUT,
			    op->key, op->klen, op->key + op->klen, op->vlen);
	}
	tdbk_feeds_flush(o);
	mutex_unlock(&o->wlock);
	for (i = 0; i < x->nops; i++)
		kvfree(u[i].old);
	kvfree(u);
	return err;
}

/* --- commands ------------------------------------------------------------- */

static int txn_begin(struct tdbk_client *c, const struct tdb_proto_msg *m,
		     struct tdbk_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct ktxn *x;
	int err;

	if (c->ntxns >= READ_ONCE(max_txns)) {
		ext->msg = "too many open transactions on this connection "
			   "(the module parameter max_txns)";
		return -EBUSY;
	}
	x = txn_new(c);
	if (!x)
		return -ENOMEM;
	memset(&a, 0, sizeof(a));
	a.cmd = m->cmd;
	a.seq = m->seq;
	a.pid = m->pid;
	a.attrs = TDB_PROTO_BIT(TDB_A_TXN);
	a.txn = x->id;
	err = tdbk_answer(out, &a);
	if (err) {
		ext->msg = "no room for the reply";
		tdbk_txn_free(x);
		return err;
	}
	list_add(&x->node, &c->txns);
	c->ntxns++;
	atomic_inc(&c->o->txns);
	return 0;
}

int tdbk_txn_cmd(struct tdbk_client *c, const struct tdb_proto_msg *m,
		 struct tdbk_sink *out, struct tdb_proto_extack *ext)
{
	struct ktxn *x;
	int err = 0;

	if (m->cmd == TDB_CMD_TXN_BEGIN)
		return txn_begin(c, m, out, ext);
	x = tdbk_txn_find(c, m, ext, &err);
	if (!x)
		return err;
	list_del(&x->node);
	c->ntxns--;
	atomic_dec(&c->o->txns);
	if (m->cmd == TDB_CMD_TXN_COMMIT)
		err = txn_commit(c->o, x, ext);
	tdbk_txn_free(x);
	return err;
}
