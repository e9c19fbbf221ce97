/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * quota.c - what each uid holds, and in all, against the limits that
 * bound it (struct tdbo_limits; tdbd.conf keys and tdb.ko module
 * parameters of the same names, '-' and '_' alike):
 *
 *   kind             unit     per uid                  in all
 *   TDBO_Q_CLIENTS   clients  max-clients-per-uid      max-clients
 *   TDBO_Q_TABLES    tables   max-tables-per-uid       max-tables
 *   TDBO_Q_RESERVE   bytes    max-reserve-per-uid      max-reserve
 *   TDBO_Q_TXN_BYTES bytes    max-txn-memory-per-uid   max-txn-memory
 *   TDBO_Q_SNAP_BYTES bytes   max-snapshot-memory-     (snap.c:
 *                             per-uid                  max-snapshot-memory)
 *   TDBO_Q_DATA      bytes    max-data-per-uid         max_data (the home's
 *                             (extents of the tables   max-memory: tdbd's,
 *                             the uid owns)            tdb.ko's max_memory_mb;
 *                                                      in all with the rings,
 *                                                      transactions and
 *                                                      snapshots: in_all())
 *   TDBO_Q_WATCHES   watches  max-watches-per-uid      max-watches-total
 *   TDBO_Q_RING_BYTES bytes   max-ring-memory-per-uid  max-ring-memory
 *
 * and max-watches, a client's watches (feed.c).  A client is counted
 * here only while it holds rings (tdbo_client_attach_charge): tdb.ko's
 * generic netlink sockets hold none and are not counted.
 *
 * Rules: a request of uid 0 is exempt from the per-uid limits and may use
 * the whole of a limit in all; any other uid is refused at 7/8 of it (the
 * last eighth is kept for root).  Refusals: -EDQUOT per uid; -ENOSPC
 * (counts) or -ENOBUFS (transaction memory) in all; the message names
 * the limit.  Snapshot memory in all is bounded by snap.c itself, as
 * tdbd does (no reserve for root: a snapshot fails its own scan, never a
 * writer), so its kind has no limit in all here.  0 is "no limit".
 * The limits are read at each charge: a new value applies to the next
 * charge; lowering one takes nothing back.
 *
 * Invariants (under q->lock):
 *  - total[k] is the sum of used[k] over all entries;
 *  - an entry exists only while one of its counters is not 0 (the
 *    uncharge that empties it frees it), so at the end, once every
 *    client and table is gone, the hash is empty;
 *  - an entry is allocated with the lock dropped, then the lookup is
 *    done again.
 */
#include "internal.h"

struct qent {
	struct tdbo_list node;
	uint32_t uid;
	uint64_t used[TDBO_Q_KINDS];
};

/* A limit now, and how its refusal reads. */
struct qlimit {
	uint64_t max;                /* 0: none */
	const char *msg;
	const char *msg_root;   /* in all, for root (no reserve) */
	int err;
};

#define LIM(o, f) ((uint64_t)tdbo_lim(o, f))

static struct qlimit per_uid(struct tdbo_owner *o, enum tdbo_qkind k)
{
	struct qlimit l = { 0, NULL, NULL, -EDQUOT };

	switch (k) {
	case TDBO_Q_CLIENTS:
		l.max = LIM(o, max_clients_per_uid);
		l.msg = "too many connections of this user "
			"(max-clients-per-uid)";
		break;
	case TDBO_Q_TABLES:
		l.max = LIM(o, max_tables_per_uid);
		l.msg = "too many tables owned by this user "
			"(max-tables-per-uid)";
		break;
	case TDBO_Q_RESERVE:
		l.max = LIM(o, max_reserve_per_uid);
		l.msg = "the tables of this user would reserve more address "
			"space than max-reserve-per-uid";
		break;
	case TDBO_Q_TXN_BYTES:
		l.max = LIM(o, max_txn_memory_per_uid);
		l.msg = "the open transactions of this user would hold more "
			"than max-txn-memory-per-uid";
		break;
	case TDBO_Q_SNAP_BYTES:
		l.max = LIM(o, max_snapshot_memory_per_uid);
		l.msg = "the snapshots of this user would hold more than "
			"max-snapshot-memory-per-uid";
		break;
	case TDBO_Q_DATA:
		l.max = LIM(o, max_data_per_uid);
		l.msg = "the tables of this user hold max-data-per-uid: "
			"writes that add data to them are refused";
		break;
	case TDBO_Q_WATCHES:
		l.max = LIM(o, max_watches_per_uid);
		l.msg = "too many watches of this user (max-watches-per-uid)";
		break;
	case TDBO_Q_RING_BYTES:
		l.max = LIM(o, max_ring_memory_per_uid);
		l.msg = "the rings of this user's connections would take more "
			"than max-ring-memory-per-uid";
		break;
	default:
		break;
	}
	return l;
}

static struct qlimit global(struct tdbo_owner *o, enum tdbo_qkind k)
{
	struct qlimit l = { 0, NULL, NULL, -ENOSPC };

	switch (k) {
	case TDBO_Q_CLIENTS:
		l.max = LIM(o, max_clients);
		l.msg = "too many connections (max-clients; the last eighth "
			"is kept for root)";
		l.msg_root = "too many connections (max-clients)";
		break;
	case TDBO_Q_TABLES:
		l.max = LIM(o, max_tables);
		l.msg = "too many tables (max-tables; the last eighth is "
			"kept for root)";
		l.msg_root = "too many tables (max-tables)";
		break;
	case TDBO_Q_RESERVE:
		l.max = LIM(o, max_reserve);
		l.msg = "tables would reserve more address space than "
			"max-reserve (the last eighth is kept for root)";
		l.msg_root = "tables would reserve more address space than "
			     "max-reserve";
		break;
	case TDBO_Q_TXN_BYTES:
		l.max = LIM(o, max_txn_memory);
		l.msg = "open transactions would hold more than "
			"max-txn-memory (the last eighth is kept for root)";
		l.msg_root = "open transactions would hold more than "
			     "max-txn-memory";
		l.err = -ENOBUFS;
		break;
	case TDBO_Q_DATA:
		l.max = LIM(o, max_data);
		l.msg = "the tables hold all the memory others may use "
			"(the last eighth of the memory bound is kept for root)";
		l.msg_root = "the tables hold all the memory of the memory bound";
		l.err = -ENOMEM;
		break;
	case TDBO_Q_WATCHES:
		l.max = LIM(o, max_watches_total);
		l.msg = "too many watches (max-watches-total; the last eighth "
			"is kept for root)";
		l.msg_root = "too many watches (max-watches-total)";
		break;
	case TDBO_Q_RING_BYTES:
		l.max = LIM(o, max_ring_memory);
		l.msg = "the connections' rings would take more than "
			"max-ring-memory (the last eighth is kept for root)";
		l.msg_root = "the connections' rings would take more than "
			     "max-ring-memory";
		l.err = -ENOBUFS;
		break;
	default:
		break;
	}
	return l;
}

static struct tdbo_list *bucket(struct tdbo_quota *q, uint32_t uid)
{
	return &q->b[(uid * 2654435761u) % TDBO_QUOTA_BUCKETS];
}

/* Under q->lock. */
static struct qent *find(struct tdbo_quota *q, uint32_t uid)
{
	struct qent *e;

	tdbo_list_for_each(e, bucket(q, uid), node)
		if (e->uid == uid)
			return e;
	return NULL;
}

/* Would used + n pass max?  (No wrap.) */
static bool over(uint64_t used, uint64_t n, uint64_t max)
{
	return max && (n > max || used > max - n);
}

/*
 * Under q->lock: what counts against k's limit in all.  Table data's is
 * max-memory (max_data), which counts what the owner holds of it all
 * (limtable.h): the tables' extents, the clients' rings, buffered
 * transactions and snapshots, so that other uids stop at 7/8 of it
 * whatever kind of memory they fill it with and root keeps its eighth.
 * (The home's own part, change feeds and tdb.ko's log ring, counts in
 * its mem_check.)
 */
static uint64_t in_all(struct tdbo_owner *o, enum tdbo_qkind k)
{
	const uint64_t *t = o->quota.total;

	if (k != TDBO_Q_DATA)
		return t[k];
	return t[TDBO_Q_DATA] + t[TDBO_Q_RING_BYTES] + t[TDBO_Q_TXN_BYTES] +
	       tdbo_snap_mem(o);
}

/* Under q->lock: may `who` charge n of k to uid (entry e, may be NULL)? */
static int refuse(struct tdbo_owner *o, struct qent *e, uint32_t who,
		  enum tdbo_qkind k, uint64_t n, const char **msg)
{
	struct qlimit l;

	if (who != 0) {
		l = per_uid(o, k);
		if (over(e ? e->used[k] : 0, n, l.max)) {
			*msg = l.msg;
			return l.err;
		}
	}
	l = global(o, k);
	if (who != 0)
		l.max -= l.max / 8;     /* the last eighth is root's */
	if (over(in_all(o, k), n, l.max)) {
		*msg = who ? l.msg : l.msg_root;
		return l.err;
	}
	return 0;
}

/* Charge (unless check_only); force: whatever the limits say. */
static int charge(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		  enum tdbo_qkind k, uint64_t n, const char **msg,
		  bool check_only, bool force)
{
	struct tdbo_quota *q = &o->quota;
	struct qent *e, *spare = NULL;
	int err;

	for (;;) {
		tdbp_mutex_lock(q->lock);
		e = find(q, uid);
		err = force ? 0 : refuse(o, e, who, k, n, msg);
		if (err || check_only || e || spare)
			break;
		tdbp_mutex_unlock(q->lock);
		spare = tdbp_alloc(sizeof(*spare));
		if (!spare) {
			*msg = "out of memory";
			return -ENOMEM;
		}
	}
	if (!err && !check_only) {
		if (!e) {
			e = spare;
			spare = NULL;
			e->uid = uid;
			tdbo_list_add(&e->node, bucket(q, uid));
		}
		e->used[k] += n;
		q->total[k] += n;
	}
	tdbp_mutex_unlock(q->lock);
	tdbp_free(spare);
	return err;
}

int tdbo_quota_charge(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		      enum tdbo_qkind k, uint64_t n, const char **msg)
{
	return charge(o, who, uid, k, n, msg, false, false);
}

int tdbo_quota_check(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		     enum tdbo_qkind k, uint64_t n, const char **msg)
{
	return charge(o, who, uid, k, n, msg, true, false);
}

int tdbo_quota_force(struct tdbo_owner *o, uint32_t uid, enum tdbo_qkind k,
		     uint64_t n)
{
	const char *msg;

	return charge(o, 0, uid, k, n, &msg, false, true);
}

static bool empty(const struct qent *e)
{
	int k;

	for (k = 0; k < TDBO_Q_KINDS; k++)
		if (e->used[k])
			return false;
	return true;
}

void tdbo_quota_uncharge(struct tdbo_owner *o, uint32_t uid, enum tdbo_qkind k,
			 uint64_t n)
{
	struct tdbo_quota *q = &o->quota;
	struct qent *e;

	if (!n)
		return;
	tdbp_mutex_lock(q->lock);
	e = find(q, uid);
	if (!e || e->used[k] < n || q->total[k] < n) {
		/* A bug; stop at 0 rather than wrap. */
		tdbp_log(TDBP_LOG_ERR, "quota: uid %u gives back more of "
			 "kind %d than it holds (a bug)", uid, (int)k);
		n = e ? tdbo_min(e->used[k], n) : 0;
	}
	q->total[k] -= tdbo_min(q->total[k], n);
	if (e) {
		e->used[k] -= n;
		if (empty(e))
			tdbo_list_del(&e->node);
		else
			e = NULL;
	}
	tdbp_mutex_unlock(q->lock);
	tdbp_free(e);
}

/* Ring memory of all clients now (TDBO_Q_RING_BYTES in all): a gauge
 * for the home's max-memory (limtable.h), read without the lock as
 * tdbo_txn_bytes() is: a charge racing with it is seen or not. */
uint64_t tdbo_ring_mem(struct tdbo_owner *o)
{
	return tdb_load_relaxed(&o->quota.total[TDBO_Q_RING_BYTES]);
}

int tdbo_quota_init(struct tdbo_quota *q)
{
	unsigned int i;

	q->lock = tdbp_mutex_create();
	if (!q->lock)
		return -ENOMEM;
	for (i = 0; i < TDBO_QUOTA_BUCKETS; i++)
		tdbo_list_init(&q->b[i]);
	return 0;
}

/* At the end, with no client or table left: everything was given back. */
void tdbo_quota_fini(struct tdbo_quota *q)
{
	struct qent *e, *tmp;
	unsigned int i;
	int k;

	for (k = 0; k < TDBO_Q_KINDS; k++)
		if (q->total[k])
			tdbp_log(TDBP_LOG_ERR, "quota: %llu of kind %d still "
				 "charged at the end (a bug)",
				 (unsigned long long)q->total[k], k);
	for (i = 0; i < TDBO_QUOTA_BUCKETS; i++) {
		tdbo_list_for_each_safe(e, tmp, &q->b[i], node) {
			tdbp_log(TDBP_LOG_ERR, "quota: the entry of uid %u is "
				 "left at the end (a bug)", e->uid);
			tdbo_list_del(&e->node);
			tdbp_free(e);
		}
	}
	tdbp_mutex_destroy(q->lock);
}
