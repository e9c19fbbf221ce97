/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * internal.h - the owner's private structures, shared by its files:
 *
 *   owner.c   the owner, clients, answers, TABLE_STAT, STATS, running
 *             one request (tdbo_exec), dispatched to:
 *   answer.c  the one-answer rule (errors, acks, NLMSG_DONE)
 *   registry.c tables, access checks, TABLE_CREATE, TABLE_DROP
 *   change.c  GET, PUT, DEL: the one change pipeline
 *   txn.c     transactions: buffered changes, atomic commit
 *   dump.c    dumps: SCAN and TABLE_LIST
 *   feed.c    change feeds (TDB_RING_FEED rings, one per watched
 *             table), a client's watches (a hash), WATCH, UNWATCH,
 *             notifications
 *   snap.c    the snapshots of snapshot scans (old values of keys
 *             changed during one)
 *   quota.c   what each uid holds (clients, tables, transaction and
 *             snapshot memory) against the limits that bound it
 *   readers.c zero-copy readers: TABLE_MAP, the reader slots, and the
 *             engine's grace hook that waits for them (with a lease)
 *
 * Locking.  The order is o->wlock -> t->wlock (several: by table id)
 * -> the home's log (its reservation and append locks, held only for
 * a copy) -> a snapshot's lock -> o->nlock -> quota.lock,
 * and any of them -> reg_lock or a client's lock:
 *  - t->wlock serialises the changes to one table: PUT, DEL, the ops of
 *    a TXN_COMMIT (which holds the locks of all its tables, taken in id
 *    order), and t's feed, watches, snapshots, seqcount, dropped flag
 *    and the home's durability state.  Changes to one table thus have
 *    one order and its feed one producer; changes to different tables
 *    run in parallel.  A change is logged after it applied, still under
 *    t->wlock (and a create under o->wlock and the new table's lock),
 *    so a durable home's log has each table's changes in the order
 *    they applied, after the table's create.
 *  - o->wlock serialises TABLE_CREATE and TABLE_DROP (the registry's
 *    names, ids and the log records of both); a drop then takes the
 *    table's lock too.  tdbo_write_lock() takes it and every table's:
 *    no change runs then (a home's checkpoint takes its dirty sets so).
 *  - t->seq is a sequence count, odd while a commit applies to t: GET
 *    reads it before and after and retries (sleeping on t->wlock while
 *    it is odd), so it sees a transaction whole or not at all.
 *  - o->nlock guards the notification buffer and the change hook's
 *    sequence number (feed.c).
 *  - o->quota.lock guards the per-uid counters.
 *  - o->reg_lock guards the registry (hash, list, count); lookups take
 *    a table reference under it and nothing waits there.
 *  - o->rlock guards the list of mapped readers (readers.c); a leaf,
 *    taken by the engine's grace hook under a table's wlock and held
 *    while it waits for a reader (at most the lease).
 *  - c->lock guards the client's watch hash and dump list, which
 *    tdbo_feed_get() and tdbo_dump_free() may walk from other threads
 *    than the one running the client's requests (which changes them,
 *    and alone reads them without the lock).
 *  - Readers (GET, SCAN) use the engine's lock-free reads and no owner
 *    lock but reg_lock for the lookup.
 *  - A snapshot scan takes t->wlock once, to register its snapshot; each
 *    snapshot's own lock (snap.c) nests inside it, and charges its
 *    memory (quota.lock) under it.
 * All locks are platform.h mutexes: the owner runs where it may sleep.
 */
#ifndef TDB_OWNER_INTERNAL_H
#define TDB_OWNER_INTERNAL_H

#include "owner.h"
#include "prim.h"
#include "core.h"
#include "ring_core.h"          /* src/ring: the ring core */

#define TDBO_BUCKETS     1024u
#define TDBO_DUMP_BUDGET 256u           /* records examined per run */
#define TDBO_CURSOR_V1   1              /* SCAN cursor: this byte, key */
#define TDBO_CURSOR_V2   2              /* dump.c, "Cursors" */
#define TDBO_CURSOR_HDR  18u            /* V2's bytes before the key */

#define TDBO_MAY_READ  4u
#define TDBO_MAY_WRITE 2u
/* Seeing a table (TABLE_STAT, TABLE_LIST): read or write permission,
 * as a writer of a write-only table must be able to open it. */
#define TDBO_MAY_SEE   8u

/* mmap slots (tdb.ko: offset slot * TDB_DEV_SLOT): feeds take 2 ..
 * TDBO_FEED_SLOT_LAST; each table TDBO_MAP_SLOTS slots from
 * TDBO_MAP_SLOT_FIRST on (64 GiB: the largest region). */
#define TDBO_FEED_SLOT_LAST  0x3fffffffull
#define TDBO_MAP_SLOT_FIRST  0x40000000ull
#define TDBO_MAP_SLOTS       16ull
#define TDBO_MAP_SLOT_LAST   (0x80000000ull - TDBO_MAP_SLOTS)

/* A client's reader slot and what the owner knows of it (readers.c). */
struct tdbo_reader {
	struct tdbo_list node;          /* o->readers, o->rlock */
	struct tdb_ring_hdr *slot;      /* client memory: read_section is
					 * the client's, read_expired ours */
	bool listed;                    /* on o->readers (rlock) */
	uint32_t uid;
	/* under o->rlock: */
	uint64_t seen, seen_ns;         /* the odd value last waited for,
					 * and when it was first seen */
	bool pending;                   /* this grace period waits for
					 * `seen` (readers_grace) */
	uint64_t expired_at;            /* the odd value it expired at */
	uint64_t expired;               /* read_expired, our count: lease
					 * expiries and bumps of a benched
					 * reader */
	/* benched: expired, so bumped at each grace period while odd,
	 * never waited for, until it asked for a map again (reasked) and
	 * its backoff is over (readers.c, "Benched readers") */
	bool benched, reasked;
	uint64_t bench_until_ns;        /* not waited for before this */
};

/* The backoff of a uid whose reader expired (readers.c, "Benched
 * readers"): kept by uid, so a new connection does not start afresh.
 * Under o->rlock; bench_until_ns 0: a free entry. */
#define TDBO_READER_UIDS 16
struct tdbo_reader_uid {
	uint32_t uid;
	uint32_t backoff_ms;            /* the last bench's length */
	uint64_t bench_until_ns;        /* its readers wait no lease before */
};


struct tdbo_table;
struct tdbo_snap;

/* What is charged per uid and in all (quota.c). */
enum tdbo_qkind {
	TDBO_Q_CLIENTS,         /* clients with rings */
	TDBO_Q_TABLES,          /* tables, charged to their owner */
	TDBO_Q_RESERVE,         /* address space tables reserve */
	TDBO_Q_TXN_BYTES,       /* buffered transaction changes */
	TDBO_Q_SNAP_BYTES,      /* snapshots' maps and pre-images (snap.c;
				 * in all: o->snap_mem) */
	TDBO_Q_DATA,            /* bytes of extents of the tables a uid
				 * owns (charged to the table's owner) */
	TDBO_Q_WATCHES,         /* watches, charged to the watching uid */
	TDBO_Q_RING_BYTES,      /* a client's ring memory, from attach */
	TDBO_Q_KINDS
};

#define TDBO_QUOTA_BUCKETS 64u

struct tdbo_quota {
	struct tdbp_mutex *lock;
	uint64_t total[TDBO_Q_KINDS];
	struct tdbo_list b[TDBO_QUOTA_BUCKETS];  /* struct qent */
};

/* A table's change feed, from its first WATCH until its last watch ends
 * or the table is dropped (feed.c); its memory until the last put. */
struct tdbo_feed {
	uint32_t refs;          /* the table's (while it is t->feed), each
				 * watch's, each mapping's (tdbo_feed_get) */
	struct tdbo_owner *o;
	struct tdbo_list onode; /* o->feeds, reg_lock: slots in use */
	uint64_t slot;          /* mmap slot, >= 2, unique while alive */
	void *mem;              /* hooks->feed_alloc(): header page, data */
	void *cookie;           /* and what the home gave with it
				 * (tdbo_feed_cookie: tdbd's memfd) */
	size_t size;
	/* the producer's side of the FEED ring (src/ring/ring.c, the core
	 * every ring uses), under its table's wlock */
	struct tdb_ring r;
};

/* "under wlock" in a table's fields: its own t->wlock */
struct tdbo_table {
	struct tdbo_list hnode;         /* registry hash chain, reg_lock */
	struct tdbo_list lnode;         /* registry list (creation order) */
	uint32_t refs;                  /* the registry holds one */
	struct tdbo_owner *o;
	struct tdbe_table *t;           /* NULL while set aside */
	uint64_t id;                    /* unique for the owner's life (a
					 * durable home's: its data's) */
	uint32_t max_extents;           /* as created (0: the default) */
	uint32_t tflags;                /* TDB_TABLE_F_* as created (the
					 * engine's TDBE_TABLE_* follow; kept
					 * while set aside too: a durable
					 * home's checkpoints write it) */
	uint64_t reserve;               /* address space charged to uid
					 * (TDBO_Q_RESERVE) until closed */
	/* Set aside by a durable home's recovery (it could not be
	 * restored): the error every request but DROP gets, naming it and
	 * why; else NULL.  Set before clients come, then constant. */
	char *aside;
	uint64_t seq;                   /* seqcount: odd while a commit
					 * applies to this table (change.c) */
	uint32_t uid, gid, mode;
	/* Expiry: the TTL a PUT with none gets (ms, 0 = none), set at
	 * create or by recovery before clients come, then constant; the
	 * sweep's place in the table and the records it removed since
	 * start (expire.c), under wlock. */
	uint64_t default_ttl;
	struct tdbe_cursor *sweep;
	uint64_t expired, sweep_mark;
	/* Eviction (evict.c): the bounds (0 = none) and the policy
	 * (TDB_EVICT_*), set at create or by recovery, then constant; the
	 * records evicted since start (under wlock) and LRU's use clock
	 * (relaxed: racing readers may lose a tick). */
	uint64_t max_bytes, max_records;
	uint32_t evict;
	uint64_t evicted;
	uint32_t use_clock;
	struct tdbo_evict_pool *evict_pool;     /* under wlock (evict.c) */
	struct tdbp_mutex *wlock;       /* this table's changes (above) */
	bool dropped;                   /* set under wlock and reg_lock,
					 * after map_gen moved (registry.c,
					 * reg_drop); tdb.ko's map fault
					 * reads it with neither (acquire) */
	/* The home's durability state, under wlock; the owner only sets
	 * ckpt_full at create: tdbd's durability (src/daemon/durable/:
	 * dirty.c, checkpoint.c, recover.c) keeps its dirty set here,
	 * whether the next checkpoint rewrites it whole, the LSN its data
	 * is as of and whether recovery must catch it up, and the bytes it
	 * counted against its memory limit. */
	void *ckpt_dirty;
	bool ckpt_full;
	uint64_t from;
	bool catchup;
	uint64_t mem;
	/* Bytes of its extents charged to uid (TDBO_Q_DATA), under wlock:
	 * follows the engine (tdbo_table_data_note), 0 once set aside,
	 * given back with its last reference (a drop keeps it: registry.c) */
	uint64_t data;
	struct tdbo_feed *feed;         /* under wlock: set while nwatch
					 * > 0 and not dropped */
	struct tdbo_list watches;       /* struct tdbo_watch.tnode, wlock */
	unsigned int nwatch;            /* on watches, under wlock */
	bool feed_dirty;                /* feed written, not published */
	char name[TDBE_NAME_MAX + 1];
	uint64_t map_slot;              /* tdb.ko's mmap slot of its map
					 * (readers.c), unique while in the
					 * registry; reg_lock */
	struct tdbo_snap *snaps;        /* under wlock: snapshots taking
					 * changes (snap.c) */
};

struct tdbo_watch {
	struct tdbo_watch *next;        /* c->wbuckets chain, c->lock */
	struct tdbo_list tnode;         /* t->watches, wlock */
	struct tdbo_client *c;
	struct tdbo_table *t;           /* counted */
	struct tdbo_feed *f;            /* counted */
	uint64_t hash;                  /* of t->name and prefix, c->wseed */
	uint32_t plen;
	unsigned char prefix[];
};

struct tdbo_txn_op {
	struct tdbo_table *t;           /* counted */
	bool del;
	uint32_t flags;                 /* TDB_PUT_* */
	uint64_t ifver;                 /* IF_VERSION, or 0 */
	uint64_t ttl, deadline;         /* as struct tdbo_change's; the
					 * deadline is fixed at commit */
	bool has_deadline;
	uint32_t klen, vlen;
	unsigned char *key;             /* key, then value */
};

/* A key the transaction read from its table (not from its own
 * changes), and the version it had then (0: absent).  Checked at
 * commit (txn.c, "Validation"). */
struct tdbo_txn_read {
	struct tdbo_table *t;           /* counted */
	uint64_t version;
	uint32_t klen;
	unsigned char *key;
};

/*
 * A SCAN of a transaction (txn.c, "Range reads"): the span it walked and
 * a digest of what it sent, walked again at commit.  Shared, counted,
 * by the transaction (x->scans) and the dump that sends it; the dump
 * writes it while running, on the client's thread, the commit reads it
 * when no dump of it runs any more.
 */
struct tdbo_txn_scan {
	uint32_t refs;
	struct tdbo_txn *x;             /* NULL once x is freed */
	struct tdbo_table *t;           /* counted */
	bool ranged;                    /* range applies (else: all of t) */
	struct tdbe_range range;        /* bounds in the same block */
	const unsigned char *prefix;
	uint32_t plen;
	const unsigned char *start;     /* resumed after this key (CURSOR) */
	uint32_t start_len;             /* 0: from the range's start */
	unsigned char *last;            /* the last key sent (TDB_KEY_MAX) */
	uint32_t last_len;
	uint64_t seed;                  /* of the digest's hashes */
	uint64_t n, sum;                /* records sent, and their digest */
	bool running;                   /* its dump is sending */
	bool complete;                  /* the walk reached the range's end */
};

struct tdbo_txn {
	struct tdbo_list node;          /* c->txns */
	struct tdbo_owner *o;
	uint64_t id;
	uint32_t uid;                   /* charged to (the client's) */
	struct tdbo_txn_op *ops;
	uint32_t nops, cap;
	uint64_t bytes;
	uint64_t charged;               /* TDBO_Q_TXN_BYTES held, given
					 * back by tdbo_txn_free() */
	/* the read set, and an index of it by (table, key) hash: slots
	 * hold read index + 1, 0 = empty; rcap a power of two > 2 nreads */
	struct tdbo_txn_read *reads;
	uint32_t nreads, readcap;
	uint32_t *rslot;
	uint32_t rcap;
	/* range reads: its SCANs, and the records they sent (counted
	 * against max-txn-ops with its changes and reads) */
	struct tdbo_txn_scan **scans;
	uint32_t nscans, scancap;
	uint64_t nscanned;
	uint64_t version;               /* at commit: the write's version */
	char why[TDBO_TEXT];            /* a commit's error text */
};

struct tdbo_client {
	struct tdbo_owner *o;
	/* the table of the last request (a counted reference) and the
	 * registry generation it was looked up in (registry.c) */
	struct tdbo_table *cache;
	uint64_t cache_gen;
	uint32_t uid, gid;              /* fs ids */
	uint32_t ngroups;
	uint32_t *groups;               /* a private copy */
	bool may_watch;
	void (*wake)(void *arg);
	void *arg;
	uint32_t refs;                  /* 1 + dumps not yet freed */
	bool dead;                      /* tdbo_client_free() ran */
	bool accepted;                  /* counted (tdbo_client_accept) */
	struct tdbp_mutex *lock;
	/* watches: a hash of (table name, prefix), newest first in each
	 * chain; changed on the client's thread under lock */
	struct tdbo_watch **wbuckets;
	unsigned int nwbuckets;         /* 0 or a power of two >= 16 */
	uint64_t wseed;                 /* tdbp_random_u64(), per client */
	unsigned int nwatches;          /* in it, <= max_watches when each
					 * was made; client's thread */
	bool ring_charged;              /* holds a TDBO_Q_CLIENTS charge */
	uint64_t ring_bytes;            /* and this TDBO_Q_RING_BYTES one */
	uint64_t woken;                 /* o->flush_gen when last woken */
	struct tdbo_list dumps;         /* struct tdbo_dump.node */
	unsigned int ndumps;            /* under lock */
	struct tdbo_list txns;          /* the client's thread only */
	unsigned int ntxns;
	void *buf;                      /* GET's copy of a value */
	size_t buf_cap;
	bool may_set_version;           /* the supervisor's restore */
	char why[TDBO_TEXT];            /* an error text naming a key or a
					 * version; valid until the client's
					 * next request */
	struct tdbo_reader rd;          /* zero-copy reads (readers.c) */
};

struct tdbo_dump {
	struct tdbo_list node;          /* c->dumps, c->lock */
	struct tdbo_client *c;          /* counted */
	uint8_t cmd;
	uint32_t seq, pid;
	bool live;                      /* holds state (released once) */
	/* SCAN */
	struct tdbo_table *t;           /* counted */
	struct tdbe_cursor *cur;
	unsigned char *prefix;
	uint32_t plen;
	uint64_t left;                  /* records still allowed (LIMIT) */
	bool pending;                   /* a record taken, not yet sent */
	const void *k, *v;              /* it (valid until cursor_next) */
	size_t kl, vl;
	uint64_t ver;                   /* its version */
	uint64_t dl;                    /* and deadline (0: none) */
	unsigned char *cbuf;            /* TDBO_CURSOR_HDR + TDB_KEY_MAX:
					 * a cursor */
	struct tdbo_snap *snap;         /* a snapshot scan's (else NULL) */
	bool walked;                    /* it: the cursor's walk is over */
	/* ordered tables: the range walked (FROM, TO, the direction and
	 * PREFIX together; its bounds' bytes in rbuf), and what the scan's
	 * cursors say of the request (dump.c, "Cursors") */
	bool ranged;
	struct tdbe_range range;
	unsigned char *rbuf;
	uint8_t cflags;                 /* the request's range SCAN_FLAGS */
	uint64_t cdigest;               /* of its FROM, TO and PREFIX */
	/* a snapshot scan of an ordered table: the walk's record held
	 * while pre-images before it go out (tdbo_snap_before) */
	bool held;
	const void *hk, *hv;
	size_t hkl, hvl;
	uint64_t hver, hdl;
	struct tdbo_txn_scan *ts;       /* a SCAN of a transaction: its
					 * record (counted), else NULL */
	/* TABLE_LIST */
	struct tdbo_table **tabs;       /* counted */
	unsigned int ntabs, at;
};

/* The owner's log lines a client can provoke, one limiter per kind
 * (platform.h, "rate-limited log lines"); flushed by tdbo_log_flush(). */
enum tdbo_rl {
	TDBO_RL_TABLES,         /* tables made and dropped (registry.c) */
	TDBO_RL_READERS,        /* mapped readers expired (readers.c) */
	TDBO_RL_SNAPS,          /* snapshot scans failing (snap.c) */
	TDBO_RL_TXNS,           /* failed commits not undone (txn.c) */
	TDBO_RL_FEEDS,          /* changes feeds cannot carry (feed.c) */
	TDBO_RL_N
};

struct tdbo_owner {
	const struct tdbo_limits *lim;  /* the home's; tdbo_lim() reads */
	struct tdbo_hooks hooks;
	struct tdbe_engine *engine;
	struct tdbp_mutex *wlock;
	uint64_t next_txn;              /* atomic */
	uint64_t version;               /* atomic: the last version given
					 * (change.c, "Versions") */
	uint64_t txn_bytes;             /* atomic: buffered keys+values */
	struct tdbp_mutex *reg_lock;
	struct tdbo_list buckets[TDBO_BUCKETS];
	struct tdbo_list tables;        /* creation order */
	unsigned int ntables;
	unsigned int naside;            /* atomic: of which set aside */
	uint64_t reg_gen;               /* atomic: bumped when names change */
	uint64_t next_table_id;         /* under wlock */
	/* o->tables is in id order (tdbo_write_lock takes the tables'
	 * locks in that order) */
	struct tdbo_list feeds;         /* every feed alive, reg_lock */
	uint64_t next_slot;             /* reg_lock: the next slot to try */
	uint64_t flush_gen;             /* atomic: tdbo_feed_flush() calls */
	struct tdbp_mutex *nlock;       /* the two below */
	unsigned char *nbuf;            /* a notification being built */
	uint32_t change_seq;            /* multicast seq */
	tdbo_change_fn *on_change;      /* under wlock */
	bool (*change_wanted)(void *arg);  /* set before any client */
	void *change_arg;
	uint64_t start_ns;
	struct tdbo_counters ctr;
	struct tdbo_quota quota;
	uint64_t snap_mem;              /* atomic: bytes all snapshots hold,
					 * <= max_snapshot_memory (snap.c) */
	uint64_t requests, errors, cleanups, txns_aborted;   /* atomics */
	uint64_t watches_dropped;
	uint32_t watches, txns, dumps;
	/* zero-copy readers (readers.c) */
	struct tdbp_mutex *rlock;
	struct tdbo_list readers;       /* struct tdbo_reader.node */
	uint32_t nreaders;              /* atomic: on the list */
	uint64_t readers_expired;       /* atomic */
	uint64_t expired;               /* atomic: records the sweep took */
	uint64_t evicted;               /* atomic: records evicted */
	uint64_t evict_rng;             /* evict.c's generator (relaxed) */
	uint64_t sweep_id;              /* the sweep's last table (expire.c;
					 * one caller at a time) */
	uint64_t next_map_slot;         /* reg_lock */
	struct tdbo_reader_uid rd_uids[TDBO_READER_UIDS];       /* rlock */
	uint64_t rd_bench_until_ns;     /* rlock: the latest of them */
	struct tdbp_ratelimit rl[TDBO_RL_N];    /* log lines, by kind */
};

/* A limit now (a field of struct tdbo_limits). */
#define tdbo_lim(o, f) tdb_load_relaxed(&(o)->lim->f)

/* quota.c */
int tdbo_quota_init(struct tdbo_quota *q);
void tdbo_quota_fini(struct tdbo_quota *q);
/* Charge n of k to uid for a request of uid `who` (0: root, exempt
 * from the per-uid limits and from the reserve): 0, or -EDQUOT (per
 * uid), -ENOSPC / -ENOBUFS (in all), -ENOMEM, with *msg naming the
 * limit; nothing is charged then.  Any owner lock or none held. */
int tdbo_quota_charge(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		      enum tdbo_qkind k, uint64_t n, const char **msg);
void tdbo_quota_uncharge(struct tdbo_owner *o, uint32_t uid,
			 enum tdbo_qkind k, uint64_t n);
/* Would tdbo_quota_charge refuse?  The same answer, nothing charged
 * (for a charge made later under a lock that orders all of kind k). */
int tdbo_quota_check(struct tdbo_owner *o, uint32_t who, uint32_t uid,
		     enum tdbo_qkind k, uint64_t n, const char **msg);
/* Charge whatever the limits say (recovery restores what was there):
 * 0, or -ENOMEM. */
int tdbo_quota_force(struct tdbo_owner *o, uint32_t uid, enum tdbo_qkind k,
		     uint64_t n);


/* owner.c */
void tdbo_client_put(struct tdbo_client *c);
/* Build a reply (or part) into the sink: 0, -ENOBUFS (no room now). */
int tdbo_answer(struct tdbo_sink *out, const struct tdb_proto_msg *a);
/* The same for a reply the transport promised room for: ext->msg says
 * so if there was none. */
int tdbo_reply(struct tdbo_sink *out, const struct tdb_proto_msg *a,
	       struct tdb_proto_extack *ext);
void tdbo_fill_stat(struct tdbo_table *t, struct tdb_proto_stat *ps);
/* An answer to m: its command, seq and pid, the attributes given. */
void tdbo_reply_init(const struct tdb_proto_msg *m, struct tdb_proto_msg *a,
		     uint64_t attrs);

/* registry.c */
bool tdbo_may(const struct tdbo_client *c, const struct tdbo_table *t,
	      unsigned int want);
/* The table m names (a reference), if c may `want` it and it is not set
 * aside (want 0: any table, for DROP); else NULL, *err and ext set. */
struct tdbo_table *tdbo_resolve(struct tdbo_client *c,
				const struct tdb_proto_msg *m,
				unsigned int want,
				struct tdb_proto_extack *ext, int *err);
void tdbo_table_unlink(struct tdbo_owner *o, struct tdbo_table *t);
/* Make t->data what t's extents are now (0 if set aside):
 * charge the growth to t->uid whatever the limits say (the write was
 * checked before: tdbo_table_data_check), give back the rest.  Under
 * t->wlock, or while no one else can reach t. */
void tdbo_table_data_note(struct tdbo_table *t);
/* Before a write of `who` that adds data to t: 0, or -EDQUOT (t's
 * owner is at max-data-per-uid) or -ENOMEM (the tables are at 7/8 of
 * max_data) with *msg naming it.  Root is not checked: its bound is the
 * home's memory bound (registry.c, data_check). */
int tdbo_table_data_check(struct tdbo_owner *o, uint32_t who,
			  const struct tdbo_table *t, const char **msg);
int tdbo_cmd_create(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdb_proto_extack *ext, struct tdbo_out *res);
int tdbo_cmd_drop(struct tdbo_client *c, const struct tdb_proto_msg *m,
		  struct tdb_proto_extack *ext, struct tdbo_out *res);

/* change.c */
int tdbo_cmd_expire(struct tdbo_client *c, const struct tdb_proto_msg *m,
		    struct tdbo_sink *out, struct tdb_proto_extack *ext,
		    struct tdbo_out *res);
int tdbo_cmd_incr(struct tdbo_client *c, const struct tdb_proto_msg *m,
		  struct tdbo_sink *out, struct tdb_proto_extack *ext,
		  struct tdbo_out *res);
void tdbo_set_version(struct tdb_proto_msg *a, uint64_t v);
/* One key's change, as the pipeline takes it. */
struct tdbo_change {
	bool del;
	bool noov;              /* a no-overwrite put (if absent) */
	bool ifpresent;         /* a put only if the key is present */
	bool quiet;             /* deleting a missing key is no error */
	const void *key, *val;
	size_t klen, vlen;
	uint64_t ifver;         /* only if the key is at this version; 0 */
	uint64_t version;       /* the write's version; 0: take the next */
	/* a PUT's deadline (ms since the epoch, 0 = none), fixed by
	 * tdbo_change_deadline under t->wlock from ttl or the table's
	 * default unless has_deadline (given, or replay's) */
	uint64_t deadline;
	uint64_t ttl;           /* ms, 0 = none given */
	bool has_deadline;      /* deadline is the one to write, as it is */
	bool replay;            /* a durable home's replay or restore */
	bool expiry;            /* the sweep's delete of an expired record */
	bool evict;             /* eviction's delete (evict.c) */
};
/* Under t->wlock: the key's version, 0 if absent. */
uint64_t tdbo_key_version(struct tdbo_table *t, const void *key,
			  size_t klen);
/* A key a transaction put earlier: present, with no version yet. */
#define TDBO_VERSION_UNSET ((uint64_t)-1)
/* Under t->wlock: step 1's conditions of ch against the key's version
 * now (cur, 0 = absent); 0 or the errno, with a text in why
 * (TDBO_TEXT bytes) naming the condition and the key's state. */
int tdbo_cond_check(const struct tdbo_change *ch, uint64_t cur, char *why);
/* Under t->wlock: one change through the pipeline, steps 1-4 (log:
 * logged if the home logs); feeds are published by tdbo_feed_flush. */
int tdbo_change_one(struct tdbo_table *t, struct tdbo_change *ch, bool log,
		    uint64_t *lsn, const char **msg, char *why);
/* Under t->wlock (expire.c): t is dropped or freed, or its sweep pass
 * is over: the sweep's cursor goes. */
void tdbo_expire_forget(struct tdbo_table *t);
/*
 * Eviction (evict.c), under t->wlock unless said.  tdbo_bound_refuse:
 * before a PUT applies, -ENOSPC (*msg: a text in why, TDBO_TEXT bytes,
 * naming the bound and its value) if it would take t past its bound
 * and nothing may be evicted (refuse, or ttl with no deadline);
 * tdbo_bound_check_now: the same for what already applied (a commit).
 * tdbo_evict: after a write, evict until t is within its bound, never a
 * key keep->fn says to keep; how many went.  tdbo_evict_access: the
 * access word a PUT's record starts with (false: t keeps none).  Reads
 * the owner serves count as uses: tdbo_evict_hit (val from a lookup, in
 * its read-side section; any thread) or tdbo_evict_touch (looks up).
 */
struct tdbo_evict_keep {
	bool (*fn)(void *arg, const struct tdbo_table *t, const void *key,
		   size_t klen);
	void *arg;
};
int tdbo_bound_refuse(struct tdbo_table *t, const struct tdbo_change *ch,
		      const char **msg, char *why);
int tdbo_bound_check_now(struct tdbo_table *t, const char **msg, char *why);
unsigned int tdbo_evict(struct tdbo_table *t, struct tdbo_evict_keep *keep,
			char *why);
bool tdbo_evict_access(struct tdbo_table *t, const void *key, size_t klen,
		       uint32_t *access);
void tdbo_evict_hit(struct tdbo_table *t, const void *val, size_t klen);
void tdbo_evict_touch(struct tdbo_table *t, const void *key, size_t klen);
/* TOUCH (evict.c): each hash's records count a use. */
int tdbo_cmd_touch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		   struct tdb_proto_extack *ext);
/* t is dropped or freed: its eviction pool goes. */
void tdbo_evict_forget(struct tdbo_table *t);
/* Expiry of a change (change.c): a request's TTL/DEADLINE into ch; the
 * deadline it gets under t->wlock; an answer's DEADLINE. */
int tdbo_expiry_of(struct tdbo_table *t, const struct tdb_proto_msg *m,
		   struct tdbo_change *ch, struct tdb_proto_extack *ext);
void tdbo_change_deadline(struct tdbo_table *t, struct tdbo_change *ch);
void tdbo_set_deadline(struct tdb_proto_msg *a, uint64_t d);

/* The owner's next version (change.c, "Versions"), under the lock of
 * the table(s) written; an explicit one (replay, restore) raises the
 * counter instead. */
uint64_t tdbo_version_take(struct tdbo_owner *o, uint64_t explicit_v);
/* INCR's arithmetic: the value (decimal text, or absent: NULL) plus
 * delta, as text into out (>= TDBO_INT_TEXT bytes); its length, or
 * -EDOM / -ERANGE with *msg set. */
#define TDBO_INT_TEXT 24
int tdbo_int_add(const void *val, size_t vlen, bool present, int64_t delta,
		 char *out, int64_t *sum, const char **msg);
int tdbo_cmd_get(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdbo_sink *out, struct tdb_proto_extack *ext);
int tdbo_cmd_put_del(struct tdbo_client *c, const struct tdb_proto_msg *m,
		     bool del, struct tdb_proto_extack *ext,
		     struct tdbo_out *res);
/* RESTORE_BULK: the supervisor's packed records, each as a PUT with
 * SET_VERSION (and DEADLINE) would restore it (change.c). */
int tdbo_cmd_restore_bulk(struct tdbo_client *c,
			  const struct tdb_proto_msg *m,
			  struct tdb_proto_extack *ext, struct tdbo_out *res);
/* Under wlock, the pipeline's steps 3 and 4 (a transaction's commit
 * runs them op by op): the pre-image and the engine; then, for a change
 * that is in, dirty, size and notifications. */
int tdbo_apply(struct tdbo_table *t, const struct tdbo_change *ch,
	       struct tdbe_extack *ee);
void tdbo_applied(struct tdbo_table *t, const struct tdbo_change *ch);
/* Under wlock: t's seqcount odd (a commit begins applying to it) and
 * even again. */
void tdbo_seq_write_begin(struct tdbo_table *t);
void tdbo_seq_write_end(struct tdbo_table *t);
/* The log's reservation (hooks->log_reserve; no-ops for a home that
 * does not log): the size of a record, one op at a time; room for it
 * before the change applies; the room given back if it did not. */
void tdbo_log_size_add(struct tdbo_log_size *sz, const struct tdbo_table *t,
		       size_t klen, size_t vlen);
int tdbo_log_reserve(struct tdbo_owner *o, const struct tdbo_log_size *sz,
		     const char **msg);
void tdbo_log_cancel(struct tdbo_owner *o, const struct tdbo_log_size *sz);

/* txn.c */
int tdbo_txn_cmd(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdbo_sink *out, struct tdb_proto_extack *ext,
		 struct tdbo_out *res);
struct tdbo_txn *tdbo_txn_find(struct tdbo_client *c,
			       const struct tdb_proto_msg *m,
			       struct tdb_proto_extack *ext, int *err);
/* ch's del, ifver, key, value and expiry (ttl, deadline, has_deadline)
 * as an op of x, copied; flags: the PUT's TDB_PUT_* conditions. */
int tdbo_txn_add(struct tdbo_txn *x, struct tdbo_table *t,
		 const struct tdbo_change *ch, uint32_t flags,
		 struct tdb_proto_extack *ext);
/* A key x read from t (not from its own changes) at version (0:
 * absent): into the read set, once per key, within x's bounds. */
int tdbo_txn_read_add(struct tdbo_txn *x, struct tdbo_table *t,
		      const void *key, size_t klen, uint64_t version,
		      struct tdb_proto_extack *ext);
/* A SCAN in x (txn.c, "Range reads") of t: range r (NULL: all of t)
 * and PREFIX, resumed after start (NULL: none); a new record, running,
 * registered on x and charged, with a reference for the dump; or
 * -E2BIG/-EDQUOT/... with ext->msg, or -EOPNOTSUPP when x already
 * changed a key the scan would read. */
int tdbo_txn_scan_new(struct tdbo_txn *x, struct tdbo_table *t,
		      const struct tdbe_range *r, const void *prefix,
		      size_t plen, const void *start, size_t slen,
		      struct tdbo_txn_scan **out,
		      struct tdb_proto_extack *ext);
/* Before sending a record: 0, or -E2BIG (x is at max-txn-ops). */
int tdbo_txn_scan_room(struct tdbo_txn_scan *ts,
		       struct tdb_proto_extack *ext);
/* A record sent (its key and version). */
void tdbo_txn_scan_note(struct tdbo_txn_scan *ts, const void *key,
			size_t klen, uint64_t version);
/* The dump is done with it (its walk complete or not). */
void tdbo_txn_scan_put(struct tdbo_txn_scan *ts);
/* INCR in x: the key's value as x sees it plus delta, buffered as a
 * put; *sum the result. */
int tdbo_txn_incr(struct tdbo_client *c, struct tdbo_txn *x,
		  struct tdbo_table *t, const struct tdb_proto_msg *m,
		  int64_t delta, int64_t *sum, struct tdb_proto_extack *ext);
/* The latest change to key in x: 1 put (*val, *vlen), 0 deleted,
 * -ENOENT not touched. */
int tdbo_txn_lookup(const struct tdbo_txn *x, const struct tdbo_table *t,
		    const void *key, size_t klen, const void **val,
		    size_t *vlen);

/* readers.c */
/* owner.c: the limiters of o->rl */
void tdbo_log_init(struct tdbo_owner *o);
int tdbo_readers_init(struct tdbo_owner *o);
void tdbo_readers_fini(struct tdbo_owner *o);
void tdbo_reader_remove(struct tdbo_client *c);
int tdbo_cmd_map(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext, struct tdbo_out *res);
uint64_t tdbo_map_slot_pick(struct tdbo_owner *o);

/* dump.c */
/* LMDB's order of two keys (memcmp, then the shorter first), the order
 * of an ordered table; and whether a key is in a range in it. */
int tdbo_key_cmp(const void *a, size_t alen, const void *b, size_t blen);
bool tdbo_range_has(const struct tdbe_range *r, const void *key,
		    size_t klen);
int tdbo_scan(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbo_dump **dump);
int tdbo_list(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbo_dump **dump);
/* tdbo_client_free: release the client's dumps' state. */
void tdbo_dumps_release(struct tdbo_client *c);

/* feed.c */
int tdbo_watch(struct tdbo_client *c, const struct tdb_proto_msg *m,
	       struct tdb_proto_extack *ext, struct tdbo_out *res);
int tdbo_unwatch(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext);
/* tdbo_client_free: drop every watch (retiring feeds nobody else
 * watches); returns how many there were. */
unsigned int tdbo_watches_drop(struct tdbo_client *c);
/* Under t->wlock: tell watchers and the change hook about a change
 * (cmd PUT, DEL or TABLE_DROP; key NULL for TABLE_DROP). */
void tdbo_notify(struct tdbo_owner *o, struct tdbo_table *t, uint8_t cmd,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 uint64_t version, uint64_t deadline, uint32_t reason);
/* Under t->wlock, at the end of a change: publish t's feed if it was
 * written, and wake its watchers. */
void tdbo_feed_flush(struct tdbo_table *t);
/* The table is gone or dropped, or its last watch ended: let go of its
 * feed, which is never written again (wlock, or the owner is being
 * freed). */
void tdbo_table_feed_release(struct tdbo_table *t);

/*
 * snap.c - snapshot scans (see its opening comment for the invariants):
 * pre-images are copied once per change and shared, refcounted, by the
 * snapshots of the table that need them; a key the walk has passed gets
 * no copy.  Every byte is charged to a snapshot's owner uid
 * (TDBO_Q_SNAP_BYTES, max_snapshot_memory_per_uid) and counted in
 * o->snap_mem (max_snapshot_memory); one snapshot references at most
 * max_snapshot_bytes.  Writers never fail because of a snapshot: a
 * snapshot past a bound or out of memory fails its scan instead.
 */
/* Under wlock: a new snapshot of t (keys starting with prefix only,
 * and in r if not NULL; r's bytes are copied) for the walk of cursor
 * cur (its order; cur must outlive the snapshot), registered on it,
 * its memory charged to uid (the scanning client's); NULL if out of
 * memory. */
struct tdbo_snap *tdbo_snap_new(struct tdbo_table *t, uint32_t uid,
				const void *prefix, size_t plen,
				const struct tdbe_range *r,
				const struct tdbe_cursor *cur);
/* Unregister (takes wlock: not under it), give back its memory and free;
 * NULL is a no-op. */
void tdbo_snap_free(struct tdbo_owner *o, struct tdbo_snap *s);
/* Under wlock, before key of t changes (no-op without snapshots). */
void tdbo_snap_save(struct tdbo_table *t, const void *key, size_t klen);
/* Under wlock: t is dropped; its snapshots take no more changes. */
void tdbo_snap_detach_all(struct tdbo_table *t);
/* The walk returned key (*val, *vlen): 1 send it with *val and *vlen
 * (the live value or the pre-image), 0 skip it (absent at snapshot
 * time), or the snapshot's error (*msg says why, naming the bound and
 * the key; valid until tdbo_snap_free()). */
int tdbo_snap_check(struct tdbo_snap *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, uint64_t *version,
		    uint64_t *deadline, const char **msg);
/* An ordered table's snapshot, before the walk's next key (key): 1 and
 * a pre-image to send first (a key deleted before the walk got to it,
 * before key in the walk's order), 0 none, or the snapshot's error
 * (*msg).  Pointers valid until tdbo_snap_free(). */
int tdbo_snap_before(struct tdbo_snap *s, const void *key, size_t klen,
		     const void **k, size_t *kl, const void **val,
		     size_t *vlen, uint64_t *version, uint64_t *deadline,
		     const char **msg);
/* The walk is over: the snapshot takes no more changes. */
void tdbo_snap_freeze(struct tdbo_snap *s);
/* After the freeze: 1 and the next pre-image the walk did not send, 0 at
 * the end, or the snapshot's error (*msg).  Pointers valid until
 * tdbo_snap_free(). */
int tdbo_snap_next_left(struct tdbo_snap *s, const void **key,
			size_t *klen, const void **val, size_t *vlen,
			uint64_t *version, uint64_t *deadline,
			const char **msg);

#endif
