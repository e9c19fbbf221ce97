/*
 * quota.c - per-uid and global accounting of what clients make tdbd hold
 * (quota.h): a hash of uid -> counters and the totals, under one mutex.
 *
 * Invariants (under q->lock):
 *  - total[k] is the sum of used[k] over all entries (plus what a
 *    tdbd_quota_force charged while no entry could be made);
 *  - an entry exists only while one of its counters is not 0: the
 *    uncharge that brings the last one to 0 frees it, so the hash holds
 *    at most one entry per uid holding something;
 *  - counters never wrap: an uncharge larger than the charge (a bug)
 *    stops at 0.
 * Charges are short (a hash lookup); the lock is never held while
 * anything else is taken, so any thread may charge under any lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "quota.h"
#include "tdbd.h"

#define QBUCKETS 256u

struct qent {
	struct qent *next;
	uint32_t uid;
	uint64_t used[Q_KINDS];
};

struct tdbd_quota {
	pthread_mutex_t lock;
	uint64_t total[Q_KINDS];
	struct qent *b[QBUCKETS];
};

/* A limit: its value now and how a refusal reads. */
struct qlimit {
	uint64_t max;           /* UINT64_MAX: none */
	const char *msg;        /* refusal: names the key */
	const char *msg_root;   /* refusal of root (global only) */
	int err;
};

#define CFG(d, f) __atomic_load_n(&(d)->cfg.f, __ATOMIC_RELAXED)

static struct qlimit per_uid(struct tdbd *d, enum tdbd_quota_kind k)
{
	struct qlimit l = { UINT64_MAX, NULL, NULL, -EDQUOT };

	switch (k) {
	case Q_CLIENTS:
		l.max = CFG(d, max_clients_per_uid);
		l.msg = "too many connections of this user "
			"(max-clients-per-uid)";
		break;
	case Q_TABLES:
		l.max = CFG(d, max_tables_per_uid);
		l.msg = "too many tables owned by this user "
			"(max-tables-per-uid)";
		break;
	case Q_RESERVE:
		l.max = CFG(d, max_reserve_per_uid);
		l.msg = "the tables of this user would reserve more address "
			"space than max-reserve-per-uid";
		break;
	case Q_TXN_BYTES:
		l.max = CFG(d, max_txn_memory_per_uid);
		l.msg = "the open transactions of this user would hold more "
			"than max-txn-memory-per-uid";
		break;
	case Q_SNAP_BYTES:
		l.max = CFG(d, max_snapshot_memory_per_uid);
		l.msg = "the snapshots of this user would hold more than "
			"max-snapshot-memory-per-uid";
		break;
	default:
		break;
	}
	return l;
}

static struct qlimit global(struct tdbd *d, enum tdbd_quota_kind k)
{
	struct qlimit l = { UINT64_MAX, NULL, NULL, -ENOSPC };

	switch (k) {
	case Q_CLIENTS:
		l.max = CFG(d, max_clients);
		l.msg = "too many connections (max-clients; the last eighth "
			"is kept for root)";
		l.msg_root = "too many connections (max-clients)";
		break;
	case Q_TABLES:
		l.max = TDBD_TABLES_MAX;
		l.msg = "too many tables (4000, the checkpoint store's limit; "
			"the last eighth is kept for root)";
		l.msg_root = "too many tables (4000, the checkpoint store's "
			     "limit)";
		break;
	case Q_RESERVE:
		l.max = CFG(d, max_reserve);
		l.msg = "tables would reserve more address space than "
			"max-reserve (the last eighth is kept for root)";
		l.msg_root = "tables would reserve more address space than "
			     "max-reserve";
		break;
	case Q_TXN_BYTES:
		l.max = CFG(d, max_txn_memory);
		l.msg = "open transactions would hold more than "
			"max-txn-memory (the last eighth is kept for root)";
		l.msg_root = "open transactions would hold more than "
			     "max-txn-memory";
		l.err = -ENOBUFS;
		break;
	default:                /* Q_SNAP_BYTES: the caller checks it */
		break;
	}
	return l;
}

int tdbd_quota_init(struct tdbd *d)
{
	struct tdbd_quota *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	d->quota = q;
	return 0;
}

void tdbd_quota_fini(struct tdbd *d)
{
	struct tdbd_quota *q = d->quota;
	unsigned int i;
	int k;

	if (!q)
		return;
	for (k = 0; k < Q_KINDS; k++)
		if (q->total[k])
			tdbd_log(L_WARNING, "quota: %llu of kind %d still "
				 "charged at exit (a bug)",
				 (unsigned long long)q->total[k], k);
	for (i = 0; i < QBUCKETS; i++) {
		struct qent *e, *next;

		for (e = q->b[i]; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	pthread_mutex_destroy(&q->lock);
	free(q);
	d->quota = NULL;
}

static struct qent **slot_of(struct tdbd_quota *q, uint32_t uid)
{
	struct qent **p = &q->b[(uid * 2654435761u) % QBUCKETS];

	while (*p && (*p)->uid != uid)
		p = &(*p)->next;
	return p;
}

static struct qent *ent_get(struct tdbd_quota *q, uint32_t uid)
{
	struct qent **p = slot_of(q, uid);

	if (!*p && (*p = calloc(1, sizeof(**p))))
		(*p)->uid = uid;
	return *p;
}

/* Over l with n more on top of used?  (Saturating: no wrap.) */
static bool over(uint64_t used, uint64_t n, uint64_t max)
{
	return n > max || used > max - n;
}

/* Under q->lock: would charging n of k to uid (entry e, may be NULL)
 * break a limit? */
static int refuse(struct tdbd *d, struct qent *e, uint32_t uid,
		  enum tdbd_quota_kind k, uint64_t n, const char **msg)
{
	struct tdbd_quota *q = d->quota;
	struct qlimit l;

	if (uid != 0) {
		l = per_uid(d, k);
		if (over(e ? e->used[k] : 0, n, l.max)) {
			*msg = l.msg;
			return l.err;
		}
	}
	l = global(d, k);
	if (l.max == UINT64_MAX)
		return 0;
	if (uid != 0)
		l.max -= l.max / 8;     /* the last eighth is root's */
	if (over(q->total[k], n, l.max)) {
		*msg = uid ? l.msg : l.msg_root;
		return l.err;
	}
	return 0;
}

int tdbd_quota_check(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		     uint64_t n, const char **msg)
{
	struct tdbd_quota *q = d->quota;
	int err;

	if (!q || k >= Q_KINDS)
		return 0;
	pthread_mutex_lock(&q->lock);
	err = refuse(d, *slot_of(q, uid), uid, k, n, msg);
	pthread_mutex_unlock(&q->lock);
	return err;
}

int tdbd_quota_charge(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		      uint64_t n, const char **msg)
{
	struct tdbd_quota *q = d->quota;
	struct qent *e;
	int err;

	if (!q || k >= Q_KINDS)
		return 0;
	pthread_mutex_lock(&q->lock);
	err = refuse(d, *slot_of(q, uid), uid, k, n, msg);
	if (!err && !(e = ent_get(q, uid))) {
		*msg = "out of memory";
		err = -ENOMEM;
	}
	if (!err) {
		e->used[k] += n;
		q->total[k] += n;
	}
	pthread_mutex_unlock(&q->lock);
	return err;
}

int tdbd_quota_force(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		     uint64_t n)
{
	struct tdbd_quota *q = d->quota;
	struct qent *e;

	if (!q || k >= Q_KINDS)
		return 0;
	pthread_mutex_lock(&q->lock);
	e = ent_get(q, uid);
	if (e)
		e->used[k] += n;
	q->total[k] += n;
	pthread_mutex_unlock(&q->lock);
	return e ? 0 : -ENOMEM;
}

static bool ent_empty(const struct qent *e)
{
	int k;

	for (k = 0; k < Q_KINDS; k++)
		if (e->used[k])
			return false;
	return true;
}

void tdbd_quota_uncharge(struct tdbd *d, uint32_t uid,
			 enum tdbd_quota_kind k, uint64_t n)
{
	struct tdbd_quota *q = d->quota;
	struct qent **p, *e;

	if (!q || k >= Q_KINDS || !n)
		return;
	pthread_mutex_lock(&q->lock);
	p = slot_of(q, uid);
	e = *p;
	if (e) {
		e->used[k] -= n < e->used[k] ? n : e->used[k];
		if (ent_empty(e)) {
			*p = e->next;
			free(e);
		}
	}
	q->total[k] -= n < q->total[k] ? n : q->total[k];
	pthread_mutex_unlock(&q->lock);
}

uint64_t tdbd_quota_used(struct tdbd *d, uint32_t uid,
			 enum tdbd_quota_kind k)
{
	struct tdbd_quota *q = d->quota;
	struct qent *e;
	uint64_t v;

	if (!q || k >= Q_KINDS)
		return 0;
	pthread_mutex_lock(&q->lock);
	if (uid == (uint32_t)-1) {
		v = q->total[k];
	} else {
		e = *slot_of(q, uid);
		v = e ? e->used[k] : 0;
	}
	pthread_mutex_unlock(&q->lock);
	return v;
}
