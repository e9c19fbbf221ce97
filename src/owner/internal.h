/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * owner_int.h - the owner's private structures, shared by its files:
 *
 *   owner.c       the owner, clients, the table registry, access checks,
 *                 running one request (GET, PUT, DEL, CREATE, DROP,
 *                 TABLE_STAT, STATS, TXN_*)
 *   owner_txn.c   transactions: buffered changes, atomic commit
 *   owner_dump.c  dumps: SCAN and TABLE_LIST
 *   owner_feed.c  change feeds (TDB_RING_FEED rings), WATCH, UNWATCH,
 *                 notifications
 *   owner_snap.c  the snapshots of snapshot scans (old values of keys
 *                 changed during one)
 *   owner_quota.c what each uid holds (clients, tables, transaction
 *                 memory) against the module parameters that bound it
 *
 * Locking (the order is wlock -> reg_lock, wlock -> client lock):
 *  - o->wlock (mutex) serialises every change: PUT, DEL, TXN_COMMIT,
 *    TABLE_CREATE, TABLE_DROP, and feed/watch bookkeeping (t->feed,
 *    t->watches, t->dropped, the feeds' producer state).  Changes thus
 *    have one order, and each feed has one producer.
 *  - o->txn_seq is a sequence count, odd while a commit applies: GET
 *    reads it before and after and retries, so it sees a transaction
 *    whole or not at all (tdbd does the same).
 *  - o->quota.lock (spinlock, owner_quota.c) guards the per-uid
 *    counters; it is taken last, under any other lock or none.
 *  - o->reg_lock (spinlock) guards the registry (hash, list, count);
 *    lookups take a table reference under it and nothing sleeps there.
 *  - c->lock (spinlock) guards the client's watch and dump lists, which
 *    tdbk_feed_get() and tdbk_dump_free() may walk from other threads
 *    than the one running the client's requests.
 *  - Readers (GET, SCAN) use the engine's lock-free reads and no owner
 *    lock but reg_lock for the lookup.
 *  - A snapshot scan takes wlock once, to register its snapshot; each
 *    snapshot's own mutex (owner_snap.c) nests inside wlock.
 */
#ifndef TDBK_OWNER_INT_H
#define TDBK_OWNER_INT_H

#include <linux/atomic.h>
#include <linux/idr.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>

#include "owner.h"
#include "core.h"
#include "tdb/ring.h"

#define TDBK_BUCKETS     256u
#define TDBK_MAX_DUMPS   8u             /* per client, as tdbd */
#define TDBK_DUMP_BUDGET 256u           /* records examined per run */
#define TDBK_CURSOR_V1   1              /* SCAN cursor: this byte, key */

#define TDBK_MAY_READ  4u
#define TDBK_MAY_WRITE 2u

/* Message boundaries a feed remembers privately (owner_feed.c). */
#define TDBK_FEED_BOUNDS 128u

struct ktable;
struct tdbk_snap;

/* What is charged per uid and in all (owner_quota.c). */
enum tdbk_qkind {
	TDBK_Q_CLIENTS,         /* /dev/tdb clients with rings */
	TDBK_Q_TABLES,          /* tables, charged to their owner */
	TDBK_Q_TXN_BYTES,       /* buffered transaction changes */
	TDBK_Q_KINDS
};

#define TDBK_QUOTA_BUCKETS 64u

struct tdbk_quota {
	spinlock_t lock;
	u64 total[TDBK_Q_KINDS];
	struct hlist_head b[TDBK_QUOTA_BUCKETS];  /* struct qent */
};

struct tdbk_feed {
	refcount_t refs;        /* the table's (until drop), each watch's,
				 * each mapping's (tdbk_feed_get) */
	struct tdbk_owner *o;
	u64 slot;               /* mmap slot, >= 2, unique while alive */
	void *mem;              /* vmalloc_user(): header page, data */
	size_t size;
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	/* producer state, private copies, under wlock */
	u32 data_size, mask, max_msg;
	u64 pos, published, tail;
	u32 seq, futex;
	u64 bound[TDBK_FEED_BOUNDS];    /* message starts, oldest first */
	unsigned int bhead, bcount;
};

struct ktable {
	struct hlist_node hnode;        /* registry hash, reg_lock */
	struct list_head lnode;         /* registry list (creation order) */
	refcount_t refs;                /* the registry holds one */
	struct tdbe_table *t;
	u32 uid, gid, mode;
	bool dropped;                   /* under wlock */
	struct tdbk_feed *feed;         /* under wlock; first WATCH..drop */
	struct list_head watches;       /* struct kwatch.tnode, wlock */
	unsigned int nwatch;            /* under wlock */
	struct list_head dirty;         /* o->dirty: feed written, wlock */
	char name[TDBE_NAME_MAX + 1];
	struct tdbk_snap *snaps;        /* under wlock: snapshots taking
					 * changes (owner_snap.c) */
};

struct kwatch {
	struct list_head cnode;         /* c->watches, c->lock */
	struct list_head tnode;         /* t->watches, wlock */
	struct tdbk_client *c;
	struct ktable *t;               /* counted */
	struct tdbk_feed *f;            /* counted */
	u32 plen;
	unsigned char prefix[];
};

struct ktxn_op {
	struct ktable *t;               /* counted */
	bool del;
	u32 flags;
	u32 klen, vlen;
	unsigned char *key;             /* key, then value */
};

struct ktxn {
	struct list_head node;          /* c->txns */
	struct tdbk_owner *o;
	u64 id;
	u32 uid;                        /* charged to (the client's) */
	struct ktxn_op *ops;
	u32 nops, cap;
	u64 bytes;
	u64 charged;                    /* TDBK_Q_TXN_BYTES held, given back
					 * by tdbk_txn_free() */
};

struct tdbk_client {
	struct tdbk_owner *o;
	const struct cred *cred;        /* counted */
	u32 uid, gid;                   /* fsuid/fsgid, init_user_ns */
	bool may_watch;
	void (*wake)(void *arg);
	void *arg;
	refcount_t refs;                /* 1 + dumps not yet freed */
	bool dead;                      /* tdbk_client_free() ran */
	spinlock_t lock;
	struct list_head watches;       /* struct kwatch.cnode */
	unsigned int nwatches;          /* on watches, <= max_watches when
					 * each was made; client's thread */
	bool ring_charged;              /* holds a TDBK_Q_CLIENTS charge */
	u64 woken;                      /* o->flush_gen when last woken */
	struct list_head dumps;         /* struct tdbk_dump.node */
	unsigned int ndumps;            /* under lock */
	struct list_head txns;          /* the client's thread only */
	unsigned int ntxns;
	void *buf;                      /* GET's copy of a value */
	size_t buf_cap;
};

struct tdbk_dump {
	struct list_head node;          /* c->dumps, c->lock */
	struct tdbk_client *c;          /* counted */
	u8 cmd;
	u32 seq, pid;
	bool live;                      /* holds state (released once) */
	/* SCAN */
	struct ktable *t;               /* counted */
	struct tdbe_cursor *cur;
	unsigned char *prefix;
	u32 plen;
	u64 left;                       /* records still allowed (LIMIT) */
	bool pending;                   /* a record taken, not yet sent */
	const void *k, *v;              /* it (valid until cursor_next) */
	size_t kl, vl;
	unsigned char *cbuf;            /* TDB_KEY_MAX + 1: a cursor */
	struct tdbk_snap *snap;         /* a snapshot scan's (else NULL) */
	bool walked;                    /* it: the cursor's walk is over */
	/* TABLE_LIST */
	struct ktable **tabs;           /* counted */
	unsigned int ntabs, at;
};

struct tdbk_owner {
	struct tdbk_limits lim;
	struct tdbe_engine *engine;
	struct mutex wlock;
	u64 txn_seq;                    /* odd while a commit applies */
	atomic64_t next_txn;
	spinlock_t reg_lock;
	struct hlist_head buckets[TDBK_BUCKETS];
	struct list_head tables;        /* creation order */
	unsigned int ntables;
	struct ida slots;               /* feed mmap slots */
	struct list_head dirty;         /* tables whose feed was written */
	u64 flush_gen;                  /* tdbk_feeds_flush() calls, wlock */
	unsigned char *nbuf;            /* a notification, wlock */
	u32 change_seq;                 /* multicast seq, wlock */
	tdbk_change_fn *on_change;      /* under wlock */
	void *change_arg;
	ktime_t start;
	struct tdbk_counters ctr;
	struct tdbk_quota quota;
	atomic64_t requests, errors, cleanups, txns_aborted;
	atomic64_t watches_dropped;
	atomic_t watches, txns, dumps;
};

/* owner_quota.c */
void tdbk_quota_init(struct tdbk_quota *q);
void tdbk_quota_fini(struct tdbk_quota *q);
/* Charge n of k to uid for a request of uid `who` (0: root, exempt
 * from the per-uid limits and from the reserve): 0, or -EDQUOT (per
 * uid), -ENOSPC / -ENOBUFS (in all), -ENOMEM, with *msg naming the
 * module parameter; nothing is charged then.  Process context, any
 * owner lock or none held (may sleep to allocate an entry). */
int tdbk_quota_charge(struct tdbk_owner *o, u32 who, u32 uid,
		      enum tdbk_qkind k, u64 n, const char **msg);
void tdbk_quota_uncharge(struct tdbk_owner *o, u32 uid, enum tdbk_qkind k,
			 u64 n);
/* max_watches now (UINT_MAX for 0, no limit). */
unsigned int tdbk_max_watches(void);

/* owner.c */
void tdbk_client_put(struct tdbk_client *c);
struct ktable *tdbk_table_get(struct tdbk_owner *o, const char *name);
void tdbk_table_put(struct ktable *t);
bool tdbk_may(const struct tdbk_client *c, const struct ktable *t,
	      unsigned int want);
/* The table m names, if c may `want` it (else NULL, *err and ext set). */
struct ktable *tdbk_resolve(struct tdbk_client *c,
			    const struct tdb_proto_msg *m, unsigned int want,
			    struct tdb_proto_extack *ext, int *err);
/* Build a reply (or part) into the sink: 0, -ENOBUFS (no room now). */
int tdbk_answer(struct tdbk_sink *out, const struct tdb_proto_msg *a);
void tdbk_fill_stat(struct ktable *t, struct tdb_proto_stat *ps);
void tdbk_seq_write_begin(struct tdbk_owner *o);
void tdbk_seq_write_end(struct tdbk_owner *o);
/* Under wlock: is the key present? */
bool tdbk_key_exists(struct ktable *t, const void *key, size_t klen);

/* owner_txn.c */
int tdbk_txn_cmd(struct tdbk_client *c, const struct tdb_proto_msg *m,
		 struct tdbk_sink *out, struct tdb_proto_extack *ext);
struct ktxn *tdbk_txn_find(struct tdbk_client *c,
			   const struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext, int *err);
int tdbk_txn_add(struct ktxn *x, struct ktable *t, bool del, u32 flags,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 struct tdb_proto_extack *ext);
/* The latest change to key in x: 1 put (*val, *vlen), 0 deleted,
 * -ENOENT not touched. */
int tdbk_txn_lookup(const struct ktxn *x, const struct ktable *t,
		    const void *key, size_t klen, const void **val,
		    size_t *vlen);
void tdbk_txn_free(struct ktxn *x);

/* owner_dump.c */
int tdbk_scan(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbk_dump **dump);
int tdbk_list(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbk_dump **dump);
/* tdbk_client_free: release the client's dumps' state. */
void tdbk_dumps_release(struct tdbk_client *c);

/* owner_feed.c */
int tdbk_watch(struct tdbk_client *c, const struct tdb_proto_msg *m,
	       struct tdb_proto_extack *ext);
int tdbk_unwatch(struct tdbk_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext);
/* tdbk_client_free: drop every watch; returns how many there were. */
unsigned int tdbk_watches_drop(struct tdbk_client *c);
/* Under wlock: tell watchers and the on_change hook about a change
 * (cmd PUT, DEL or TABLE_DROP; key NULL for TABLE_DROP). */
void tdbk_notify(struct tdbk_owner *o, struct ktable *t, u8 cmd,
		 const void *key, size_t klen, const void *val, size_t vlen);
/* Under wlock, at the end of a change: publish the feeds written and
 * wake their watchers. */
void tdbk_feeds_flush(struct tdbk_owner *o);
/* The table is gone or dropped: let go of its feed (wlock, or the
 * owner is being freed). */
void tdbk_table_feed_release(struct ktable *t);

/* owner_snap.c - snapshot scans (see its opening comment). */
/* Under wlock: a new snapshot of t (keys starting with prefix only),
 * registered on it; NULL if out of memory. */
struct tdbk_snap *tdbk_snap_new(struct ktable *t, const void *prefix,
				size_t plen);
/* Unregister (takes wlock: not under it) and free; NULL is a no-op. */
void tdbk_snap_free(struct tdbk_owner *o, struct tdbk_snap *s);
/* Under wlock, before key of t changes (no-op without snapshots). */
void tdbk_snap_save(struct ktable *t, const void *key, size_t klen);
/* Under wlock: t is dropped; its snapshots take no more changes. */
void tdbk_snap_detach_all(struct ktable *t);
/* The walk returned key (*val, *vlen): 1 send it with *val and *vlen
 * (the live value or the pre-image), 0 skip it (absent at snapshot
 * time), or the snapshot's error (*msg, a static string). */
int tdbk_snap_check(struct tdbk_snap *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, const char **msg);
/* The walk is over: the snapshot takes no more changes. */
void tdbk_snap_freeze(struct tdbk_snap *s);
/* After the freeze: 1 and the next pre-image the walk did not send, 0 at
 * the end, or the snapshot's error (*msg).  Pointers valid until
 * tdbk_snap_free(). */
int tdbk_snap_next_left(struct tdbk_snap *s, const void **key, size_t *klen,
			const void **val, size_t *vlen, const char **msg);

#endif
