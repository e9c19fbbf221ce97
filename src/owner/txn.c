// SPDX-License-Identifier: GPL-2.0-only
/*
 * txn.c - transactions (TXN_BEGIN, TXN_COMMIT, TXN_ABORT): changes
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


#include "internal.h"

/*
 * Memory: each change is charged, at OP_COST, to the client's uid against
 * max-txn-memory-per-uid and max-txn-memory (quota.c) before it is copied;
 * x->charged is given back when x is freed (commit, abort, or the client's
 * end), whatever happened.  A client's transactions, and each one's
 * changes and bytes, are bounded by max-txns, max-txn-ops and
 * max-txn-bytes, read at each TXN_BEGIN, PUT or DEL (a lower value
 * refuses what comes next and takes nothing back).
 */

#define OP_COST(klen, vlen) \
	((uint64_t)(klen) + (vlen) + 2 * sizeof(struct tdbo_txn_op) + 32)

/* The old state of one key, to put back. */
struct undo {
	bool had;               /* the key was present */
	void *old;
	size_t olen;
};

static struct tdbo_txn *txn_new(struct tdbo_client *c)
{
	struct tdbo_txn *x = tdbp_alloc(sizeof(*x));

	if (x) {
		x->o = c->o;
		x->uid = c->uid;
		x->id = (tdb_fetch_add(&c->o->next_txn, 1) + 1);
	}
	return x;
}

void tdbo_txn_free(struct tdbo_txn *x)
{
	uint32_t i;

	if (!x)
		return;
	for (i = 0; i < x->nops; i++) {
		tdbo_table_put(x->ops[i].t);
		tdbp_free(x->ops[i].key);
	}
	tdbp_free(x->ops);
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, x->charged);
	tdbp_free(x);
}

struct tdbo_txn *tdbo_txn_find(struct tdbo_client *c,
			   const struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext, int *err)
{
	struct tdbo_txn *x;

	tdbo_list_for_each(x, &c->txns, node)
		if (x->id == m->txn)
			return x;
	ext->msg = "no such transaction on this connection";
	ext->offset = m->attr_off[TDB_A_TXN];
	*err = -ENOENT;
	return NULL;
}

static int ops_grow(struct tdbo_txn *x)
{
	uint32_t cap = x->cap ? x->cap * 2 : 16;
	struct tdbo_txn_op *n = tdbo_alloc_array(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	if (x->nops)
		memcpy(n, x->ops, x->nops * sizeof(*n));
	tdbp_free(x->ops);
	x->ops = n;
	x->cap = cap;
	return 0;
}

int tdbo_txn_add(struct tdbo_txn *x, struct tdbo_table *t, bool del, uint32_t flags,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 struct tdb_proto_extack *ext)
{
	uint64_t cost = OP_COST(klen, vlen);
	struct tdbo_txn_op *op;
	int err;

	if (x->nops >= tdbo_lim(x->o, max_txn_ops)) {
		ext->msg = "transaction has max-txn-ops changes already";
		return -E2BIG;
	}
	if (x->bytes + klen + vlen > tdbo_lim(x->o, max_txn_bytes)) {
		ext->msg = "transaction would exceed max-txn-bytes";
		return -E2BIG;
	}
	err = tdbo_quota_charge(x->o, x->uid, x->uid, TDBO_Q_TXN_BYTES, cost,
				&ext->msg);
	if (err)
		return err;
	if (x->nops == x->cap && ops_grow(x))
		goto nomem;
	op = &x->ops[x->nops];
	op->key = tdbp_alloc(klen + vlen + 1);
	if (!op->key)
		goto nomem;
	memcpy(op->key, key, klen);
	if (vlen)
		memcpy(op->key + klen, val, vlen);
	op->klen = (uint32_t)klen;
	op->vlen = (uint32_t)vlen;
	op->del = del;
	op->flags = flags;
	op->t = t;
	tdbo_ref_get(&t->refs);
	x->nops++;
	x->bytes += klen + vlen;
	x->charged += cost;
	return 0;
nomem:
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, cost);
	ext->msg = NULL;
	return -ENOMEM;
}

int tdbo_txn_lookup(const struct tdbo_txn *x, const struct tdbo_table *t,
		    const void *key, size_t klen, const void **val,
		    size_t *vlen)
{
	uint32_t i = x->nops;

	while (i--) {
		const struct tdbo_txn_op *op = &x->ops[i];

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
static int save_old(struct tdbo_txn_op *op, struct undo *u)
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
	u->old = tdbp_alloc(need ? need : 1);
	if (!u->old)
		return -ENOMEM;
	n = tdbe_get(op->t->t, op->key, op->klen, u->old, need, &need);
	if (n < 0) {
		tdbp_free(u->old);
		u->old = NULL;
		return (int)n;
	}
	u->had = true;
	u->olen = (size_t)n;
	return 0;
}

static void undo_one(struct tdbo_txn_op *op, struct undo *u)
{
	int err;

	if (u->had)
		err = tdbe_put(op->t->t, op->key, op->klen, u->old, u->olen, 0,
			       NULL);
	else
		err = tdbe_del(op->t->t, op->key, op->klen, NULL);
	if (err && !(err == -ENOENT && !u->had))
		tdbp_log(TDBP_LOG_ERR, "table %s: undoing a failed commit: "
			 "%s; the key may keep the transaction's value",
			 op->t->name, tdbe_strerror(err));
}

static int apply_one(struct tdbo_txn_op *op, struct tdbe_extack *ee)
{
	int err;

	if (op->t->dropped) {
		ee->msg = "a table of the transaction was dropped";
		return -ENOENT;
	}
	tdbo_snap_save(op->t, op->key, op->klen);       /* pre-image */
	if (op->del) {
		err = tdbe_del(op->t->t, op->key, op->klen, ee);
		return err == -ENOENT ? 0 : err;   /* deleting nothing is ok */
	}
	return tdbe_put(op->t->t, op->key, op->klen, op->key + op->klen,
			op->vlen, op->flags & TDB_PUT_NOOVERWRITE ?
			TDBE_NOOVERWRITE : 0, ee);
}

/* Under wlock: apply every op or none; the error of the one that failed. */
static int apply_all(struct tdbo_txn *x, struct undo *u,
		     struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	uint32_t i, done = 0;
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

static int txn_commit(struct tdbo_owner *o, struct tdbo_txn *x,
		      struct tdb_proto_extack *ext)
{
	struct undo *u = tdbo_alloc_array(x->nops ? x->nops : 1, sizeof(*u));
	uint32_t i;
	int err;

	if (!u)
		return -ENOMEM;
	tdbp_mutex_lock(o->wlock);
	tdbo_seq_write_begin(o);
	err = apply_all(x, u, ext);
	tdbo_seq_write_end(o);
	for (i = 0; !err && i < x->nops; i++) {
		struct tdbo_txn_op *op = &x->ops[i];

		tdbo_notify(o, op->t, op->del ? TDB_CMD_DEL : TDB_CMD_PUT,
			    op->key, op->klen, op->key + op->klen, op->vlen);
	}
	tdbo_feeds_flush(o);
	tdbp_mutex_unlock(o->wlock);
	for (i = 0; i < x->nops; i++)
		tdbp_free(u[i].old);
	tdbp_free(u);
	return err;
}

/* --- commands ------------------------------------------------------------- */

static int txn_begin(struct tdbo_client *c, const struct tdb_proto_msg *m,
		     struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_txn *x;
	int err;

	if (c->ntxns >= tdbo_lim(c->o, max_txns)) {
		ext->msg = "too many open transactions on this connection "
			   "(max-txns)";
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
	err = tdbo_answer(out, &a);
	if (err) {
		ext->msg = "no room for the reply";
		tdbo_txn_free(x);
		return err;
	}
	tdbo_list_add(&x->node, &c->txns);
	c->ntxns++;
	tdbo_inc(&c->o->txns);
	return 0;
}

int tdbo_txn_cmd(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdbo_txn *x;
	int err = 0;

	if (m->cmd == TDB_CMD_TXN_BEGIN)
		return txn_begin(c, m, out, ext);
	x = tdbo_txn_find(c, m, ext, &err);
	if (!x)
		return err;
	tdbo_list_del(&x->node);
	c->ntxns--;
	tdbo_dec(&c->o->txns);
	if (m->cmd == TDB_CMD_TXN_COMMIT)
		err = txn_commit(c->o, x, ext);
	tdbo_txn_free(x);
	return err;
}
