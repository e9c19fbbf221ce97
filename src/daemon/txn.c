/*
 * txn.c - transactions: changes buffered per client, applied at commit
 * all together or not at all.
 *
 * Commit, under d->wlock:
 *  1. the seqcount of every table the transaction touches (dt->seq)
 *     becomes odd: GETs of those tables that overlap the commit retry
 *     (see tdbd.h), so no reader sees part of it; GETs of other tables
 *     do not wait for it;
 *  2. each change is applied in order, after saving the key's old value
 *     in an undo list (and in the table's snapshots, tdbd_snap_save);
 *  3. if a change fails (-EEXIST of a no-overwrite put, -ENOSPC, ...),
 *     the changes already applied are undone in reverse order from the
 *     undo list; the commit fails with that error and nothing is left;
 *  4. those seqcounts become even again, then watchers are told about each
 *     change (only for a commit that succeeded).
 * An undo can itself fail only if restoring an old value needs memory
 * the table no longer has (its cap reached meanwhile by this same
 * commit's garbage awaiting a grace period); that is logged as an error.
 *
 * Memory.  Each buffered change is charged to the client's uid
 * (Q_TXN_BYTES: max-txn-memory-per-uid, max-txn-memory) before it is
 * copied, at OP_COST: its key and value and what holding them costs
 * besides; x->charged is what x holds, given back when x is freed
 * (commit, abort, or its client's end), whatever happened to it.
 * Big commits run on the committer thread, not on a worker (below).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdbd.h"

/* What one change costs tdbd: key, value, its slot in x->ops (twice:
 * the array doubles) and the allocator's header and rounding. */
#define OP_COST(klen, vlen) \
	((uint64_t)(klen) + (vlen) + 2 * sizeof(struct txn_op) + 32)

struct txn *tdbd_txn_new(struct tdbd *d, uint32_t uid)
{
	struct txn *x = calloc(1, sizeof(*x));

	if (x) {
		x->id = __atomic_add_fetch(&d->next_txn, 1, __ATOMIC_RELAXED);
		x->uid = uid;
	}
	return x;
}

void tdbd_txn_free(struct tdbd *d, struct txn *x)
{
	uint32_t i;

	if (!x)
		return;
	for (i = 0; i < x->nops; i++) {
		tdbd_table_put(d, x->ops[i].dt);
		free(x->ops[i].key);
	}
	__atomic_fetch_sub(&d->mem_txns, x->bytes, __ATOMIC_RELAXED);
	free(x->ops);
	tdbd_quota_uncharge(d, x->uid, Q_TXN_BYTES, x->charged);
	free(x);
}

int tdbd_txn_add(struct tdbd *d, struct txn *x, struct dtable *dt, bool del,
		 uint32_t flags, const void *key, size_t klen,
		 const void *val, size_t vlen, struct tdb_proto_extack *ext)
{
	uint64_t cost = OP_COST(klen, vlen);
	struct txn_op *op;
	int err;

	if (x->nops >= d->cfg.max_txn_ops) {
		ext->msg = "transaction has max-txn-ops changes already";
		return -E2BIG;
	}
	if (x->bytes + klen + vlen > d->cfg.max_txn_bytes) {
		ext->msg = "transaction would exceed max-txn-bytes";
		return -E2BIG;
	}
	err = tdbd_quota_charge(d, x->uid, Q_TXN_BYTES, cost, &ext->msg);
	if (err)
		return err;
	if (x->nops == x->cap) {
		uint32_t cap = x->cap ? x->cap * 2 : 16;
		struct txn_op *n = realloc(x->ops, cap * sizeof(*n));

		if (!n)
			goto nomem;
		x->ops = n;
		x->cap = cap;
	}
	op = &x->ops[x->nops];
	op->key = malloc(klen + vlen + 1);
	if (!op->key)
		goto nomem;
	memcpy(op->key, key, klen);
	if (vlen)
		memcpy(op->key + klen, val, vlen);
	op->klen = (uint32_t)klen;
	op->vlen = (uint32_t)vlen;
	op->del = del;
	op->flags = flags;
	op->dt = dt;
	__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	x->nops++;
	x->bytes += klen + vlen;
	x->charged += cost;
	__atomic_fetch_add(&d->mem_txns, klen + vlen, __ATOMIC_RELAXED);
	return 0;
nomem:
	tdbd_quota_uncharge(d, x->uid, Q_TXN_BYTES, cost);
	return -ENOMEM;
}

int tdbd_txn_find(const struct txn *x, const struct dtable *dt,
		  const void *key, size_t klen, const void **val,
		  size_t *vlen)
{
	uint32_t i = x->nops;

	while (i--) {
		const struct txn_op *op = &x->ops[i];

		if (op->dt != dt || op->klen != klen ||
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

/* The old state of one key, to put back. */
struct undo {
	bool had;               /* the key was present */
	void *old;
	size_t olen;
};

static int save_old(struct txn_op *op, struct undo *u)
{
	size_t need = 0;
	long n = tdbe_get(op->dt->t, op->key, op->klen, NULL, 0, &need);

	u->had = false;
	u->old = NULL;
	if (n == -ENOENT)
		return 0;
	if (n >= 0 && n == 0) {
		u->had = true;
		u->olen = 0;
		return 0;
	}
	if (n != -ENOBUFS)
		return (int)n;
	/* a concurrent writer cannot change it: we hold wlock */
	u->old = malloc(need ? need : 1);
	if (!u->old)
		return -ENOMEM;
	n = tdbe_get(op->dt->t, op->key, op->klen, u->old, need, &need);
	if (n < 0) {
		free(u->old);
		u->old = NULL;
		return (int)n;
	}
	u->had = true;
	u->olen = (size_t)n;
	return 0;
}

static void undo_one(struct tdbd *d, struct txn_op *op, struct undo *u)
{
	int err;

	(void)d;
	if (u->had)
		err = tdbe_put(op->dt->t, op->key, op->klen, u->old, u->olen,
			       0, NULL);
	else
		err = tdbe_del(op->dt->t, op->key, op->klen, NULL);
	if (err && !(err == -ENOENT && !u->had))
		tdbd_log(L_ERR, "table %s: undoing a failed commit: %s; the "
			 "key may keep the transaction's value",
			 ESC(op->dt->name), tdbe_strerror(err));
}

static int apply_one(struct txn_op *op, struct tdbe_extack *ee)
{
	if (op->dt->dropped) {
		ee->msg = "a table of the transaction was dropped";
		return -ENOENT;
	}
	if (op->del) {
		int err = tdbe_del(op->dt->t, op->key, op->klen, ee);

		return err == -ENOENT ? 0 : err;   /* deleting nothing is ok */
	}
	return tdbe_put(op->dt->t, op->key, op->klen, op->key + op->klen,
			op->vlen, op->flags & TDB_PUT_NOOVERWRITE ?
			TDBE_NOOVERWRITE : 0, ee);
}

/* Under wlock: make the seqcount of each table of x odd (begin) or even
 * again (end), once per table however many changes it has.  Only one
 * commit runs at a time, so an odd count here is this commit's. */
static void seq_mark(struct txn *x, bool begin)
{
	uint32_t i;

	for (i = 0; i < x->nops; i++) {
		struct dtable *dt = x->ops[i].dt;

		if ((__atomic_load_n(&dt->seq, __ATOMIC_RELAXED) & 1) != begin)
			__atomic_fetch_add(&dt->seq, 1, __ATOMIC_SEQ_CST);
	}
}

int tdbd_txn_commit(struct tdbd *d, struct txn *x, uint64_t *lsn,
		    struct tdb_proto_extack *ext)
{
	struct undo *u = calloc(x->nops ? x->nops : 1, sizeof(*u));
	struct tdbe_extack ee = { 0 };
	uint32_t i, done = 0;
	int err = 0;

	if (!u)
		return -ENOMEM;
	for (i = 0; i < x->nops && x->ops[i].del; i++)
		;
	if (i < x->nops && (err = tdbd_mem_check(d, ext))) {
		free(u);        /* max-memory: a commit with a put adds data */
		return err;
	}
	pthread_mutex_lock(&d->wlock);
	seq_mark(x, true);                                      /* odd */
	for (i = 0; i < x->nops && !err; i++) {
		err = save_old(&x->ops[i], &u[i]);
		if (!err) {
			tdbd_snap_save(x->ops[i].dt, x->ops[i].key,
				       x->ops[i].klen);
			err = apply_one(&x->ops[i], &ee);
		}
		if (!err)
			done = i + 1;
	}
	/* Logged after it applied whole, before anyone can see it (the
	 * seqcount is still odd): a commit that cannot be logged is undone
	 * like one that failed. */
	if (!err && x->nops && (err = tdbd_log_txn(d, x, lsn, &ee.msg)))
		*lsn = 0;
	if (err) {
		ext->msg = ee.msg ? ee.msg : "a change of the transaction "
			   "failed; none was applied";
		if (err == -EEXIST)
			ext->msg = "key exists (no-overwrite put in the "
				   "transaction); none was applied";
		while (done--)
			undo_one(d, &x->ops[done], &u[done]);
	}
	seq_mark(x, false);                                     /* even */
	for (i = 0; !err && i < x->nops; i++) {
		struct txn_op *op = &x->ops[i];

		tdbd_dirty_add(op->dt, op->key, op->klen);
		if (!op->del)
			tdbd_mem_note(d, op->dt);
		if (op->del)
			tdbd_feed_del(d, op->dt, op->key, op->klen);
		else
			tdbd_feed_put(d, op->dt, op->key, op->klen,
				      op->key + op->klen, op->vlen);
	}
	pthread_mutex_unlock(&d->wlock);
	for (i = 0; i < x->nops; i++)
		free(u[i].old);
	free(u);
	return err;
}

/* --- big commits off the worker ------------------------------------------
 * A commit of many changes (over TDBD_REQ_BUDGET, or over 1 MiB) runs on
 * the committer thread instead of the client's worker, so the worker goes
 * on serving its other clients meanwhile: a reader there does not wait
 * for another client's commit and its WAL write (a GET of a table the
 * commit changes still waits for it, through that table's seqcount).
 * The committing client has none of its requests read until the commit
 * is answered, so whatever it sends next sees the commit.
 *
 * A job belongs to the committer from tdbd_commit_async() until it is
 * done; then to the client's worker, which answers it (tdbd_commit_take)
 * and frees it.  A client that goes while its job runs orphans the job:
 * the committer frees it.  job->state is under d->commit_lock.
 */
enum { JOB_QUEUED, JOB_DONE, JOB_ORPHAN };

struct commit_job {
	struct commit_job *next;
	struct worker *w;               /* to wake when done */
	struct txn *x;
	struct nlmsghdr req;            /* the TXN_COMMIT's header */
	enum chan ch;
	int state;
	int err;                        /* the commit's result */
	uint64_t lsn;
	const char *msg;
};

/* As the WAL's flusher does: only while the workers' eventfds exist. */
static void wake_worker(struct tdbd *d, struct worker *w)
{
	pthread_mutex_lock(&d->wake_lock);
	if (d->wake_on)
		tdbd_worker_wake(w);
	pthread_mutex_unlock(&d->wake_lock);
}

static void run_job(struct tdbd *d, struct commit_job *j)
{
	struct tdb_proto_extack ext = { 0 };
	struct worker *w;
	bool orphan;

	j->err = tdbd_txn_commit(d, j->x, &j->lsn, &ext);
	j->msg = ext.msg;
	tdbd_txn_free(d, j->x);
	j->x = NULL;
	/* Once it is DONE and the lock is let go, the worker may take the
	 * job and free it: nothing of j is read after the unlock. */
	pthread_mutex_lock(&d->commit_lock);
	orphan = j->state == JOB_ORPHAN;
	w = j->w;
	j->state = JOB_DONE;
	pthread_mutex_unlock(&d->commit_lock);
	if (orphan)
		free(j);
	else
		wake_worker(d, w);
}

static void *committer(void *arg)
{
	struct tdbd *d = arg;

	pthread_mutex_lock(&d->commit_lock);
	for (;;) {
		struct commit_job *j = d->commit_q;

		if (!j) {
			if (d->commit_stop)
				break;
			pthread_cond_wait(&d->commit_cv, &d->commit_lock);
			continue;
		}
		d->commit_q = j->next;
		if (!d->commit_q)
			d->commit_tail = NULL;
		pthread_mutex_unlock(&d->commit_lock);
		run_job(d, j);
		pthread_mutex_lock(&d->commit_lock);
	}
	pthread_mutex_unlock(&d->commit_lock);
	return NULL;
}

int tdbd_commit_start(struct tdbd *d)
{
	int err;

	pthread_mutex_init(&d->commit_lock, NULL);
	pthread_cond_init(&d->commit_cv, NULL);
	err = pthread_create(&d->committer, NULL, committer, d);
	if (err)
		return -err;
	d->committer_on = true;
	return 0;
}

void tdbd_commit_stop(struct tdbd *d)
{
	if (!d->committer_on)
		return;
	pthread_mutex_lock(&d->commit_lock);
	d->commit_stop = true;
	pthread_cond_signal(&d->commit_cv);
	pthread_mutex_unlock(&d->commit_lock);
	pthread_join(d->committer, NULL);       /* after the queue ran */
	d->committer_on = false;
	pthread_cond_destroy(&d->commit_cv);
	pthread_mutex_destroy(&d->commit_lock);
}

bool tdbd_commit_async(struct client *c, enum chan ch, struct txn *x,
		       const struct nlmsghdr *req)
{
	struct tdbd *d = c->d;
	struct commit_job *j;

	if (!d->committer_on ||
	    (x->nops <= TDBD_REQ_BUDGET && x->bytes <= (1u << 20)))
		return false;
	j = calloc(1, sizeof(*j));
	if (!j)
		return false;   /* commit it on the worker, then */
	j->w = c->w;
	j->x = x;
	j->req = *req;
	j->ch = ch;
	j->state = JOB_QUEUED;
	c->commit = j;
	pthread_mutex_lock(&d->commit_lock);
	if (d->commit_tail)
		d->commit_tail->next = j;
	else
		d->commit_q = j;
	d->commit_tail = j;
	pthread_cond_signal(&d->commit_cv);
	pthread_mutex_unlock(&d->commit_lock);
	return true;
}

bool tdbd_commit_take(struct client *c, int *err, uint64_t *lsn,
		      const char **msg, struct nlmsghdr *req, enum chan *ch)
{
	struct commit_job *j = c->commit;
	bool done;

	pthread_mutex_lock(&c->d->commit_lock);
	done = j->state == JOB_DONE;
	pthread_mutex_unlock(&c->d->commit_lock);
	if (!done)
		return false;
	*err = j->err;
	*lsn = j->lsn;
	*msg = j->msg;
	*req = j->req;
	*ch = j->ch;
	c->commit = NULL;
	free(j);
	return true;
}

void tdbd_commit_orphan(struct client *c)
{
	struct commit_job *j = c->commit;
	bool done;

	if (!j)
		return;
	c->commit = NULL;
	pthread_mutex_lock(&c->d->commit_lock);
	done = j->state == JOB_DONE;
	if (!done)
		j->state = JOB_ORPHAN;
	pthread_mutex_unlock(&c->d->commit_lock);
	if (done)
		free(j);
}
