/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * owner.h - the owner: the tables, and running one protocol request for
 * one client.  Freestanding C on src/core/platform.h, like the engine, so
 * the same sources build into tdb.ko (kmod/) and, as it moves over, into
 * tdbd (src/daemon).  A home's transports (tdb.ko: kmod/dev.c, /dev/tdb
 * rings; kmod/genl.c, generic netlink) copy a request into private memory,
 * validate it with tdb_proto_parse*() (src/proto) and hand the parsed
 * message here; the answers come back through a sink, so the owner never
 * knows which transport it serves.  What only a home can do (feed memory
 * a client can map, the multicast of changes, group membership, waking a
 * client) it supplies through struct tdbo_hooks.
 *
 * Every request gets exactly one answer (include/tdb/proto.h):
 *  - tdbo_exec() returns a negative errno (with ext->msg, ext->offset):
 *    the transport answers NLMSG_ERROR with it;
 *  - it returns 0 for an "ack" command: the transport acks (for WATCH
 *    with what the client needs to read res->feed: tdb.ko's /dev/tdb a
 *    cookie of tdbo_feed_slot() and res->feed_seq, tdbd the descriptor
 *    kept as tdbo_feed_cookie());
 *  - it returns 0 for a "reply" command after writing the reply into
 *    the sink (the sink is given room for any reply of at most
 *    TDB_PROTO_MSG_MAX bytes: the transport makes sure of that before
 *    calling);
 *  - for a dump command (SCAN, TABLE_LIST) it returns 0 and a dump in
 *    *dump; the transport calls tdbo_dump_run() until it is finished,
 *    ends the answer with NLMSG_DONE carrying the run's result, and frees
 *    it with tdbo_dump_free().
 *
 * Locking: the owner takes its own locks (platform.h mutexes); every
 * function here may sleep and must be called where the home allows that
 * (in tdb.ko: process context, never under a spinlock or
 * rcu_read_lock()).  A client (struct tdbo_client) is used by one thread
 * at a time: the transport serialises calls on one client.
 */
#ifndef TDB_OWNER_OWNER_H
#define TDB_OWNER_OWNER_H

#include "platform.h"
#include "proto.h"      /* src/proto: struct tdb_proto_msg */

struct tdbo_owner;
struct tdbo_client;
struct tdbo_dump;
struct tdbo_feed;
struct tdbo_txn;

/*
 * Where answers go.  reserve() returns room for one message of at most
 * len bytes, or NULL when there is none now (a ring that is full, an skb
 * that is full); commit() says the message at p is complete, nlmsg_len
 * bytes (<= the len reserved), with nlmsg_type TDB_PROTO_FAMILY (the
 * genl transport rewrites it to the family id).
 */
struct tdbo_sink {
	void *(*reserve)(struct tdbo_sink *s, size_t len);
	void (*commit)(struct tdbo_sink *s, void *p, size_t len);
	/* reserve() neither sleeps nor waits and holds nothing open (a
	 * private buffer: a reservation not committed is simply dropped):
	 * a GET may build its reply straight from the record, inside a
	 * read-side section, instead of from a copy of the value */
	bool in_read_section;
};

/*
 * The limits the owner enforces.  The home owns the storage (tdb.ko: its
 * module parameters write into it) and may change a field at any time
 * with tdb_store_relaxed(); the owner reads each with tdb_load_relaxed()
 * where it applies, so a new value applies to the next request and
 * lowering one takes nothing back.  0 means "no limit" for the max_*
 * fields but max_txns, max_txn_ops and max_txn_bytes (never 0).  The
 * homes fill it from the one limits table (limtable.h: names, defaults,
 * ranges), which refuses 0 but where it says what 0 means.
 */
struct tdbo_limits {
	uint32_t default_mode;          /* table mode when CREATE has none */
	uint32_t feed_size;             /* a change feed's data bytes */
	uint32_t max_tables;            /* tables at once */
	uint32_t max_clients;           /* clients with rings, in all */
	uint32_t max_clients_per_uid;
	uint32_t max_tables_per_uid;
	uint32_t max_watches;           /* watches of one client */
	uint32_t max_watches_per_uid;   /* watches of one uid's clients */
	uint32_t max_watches_total;     /* watches in all */
	uint32_t max_txns;              /* open transactions of one client */
	uint32_t max_txn_ops;           /* changes of one transaction */
	uint64_t max_txn_bytes;         /* key+value bytes of one */
	uint64_t max_reserve;           /* address space tables reserve */
	uint64_t max_reserve_per_uid;
	uint64_t max_data;              /* table extents in all, bytes: the
					 * home's memory bound (its last
					 * eighth is root's) */
	uint64_t max_data_per_uid;      /* extents of one uid's tables */
	uint64_t max_memory;            /* the home's max-memory, bytes, 0:
					 * 3/4 of physical memory (limtable.h
					 * says what it counts; the home
					 * checks it, in mem_check and where
					 * it allocates; max_data is
					 * derived from it) */
	uint64_t max_ring_memory;       /* clients' ring bytes, in all */
	uint64_t max_ring_memory_per_uid;
	uint64_t max_txn_memory;        /* buffered changes, in all */
	uint64_t max_txn_memory_per_uid;
	uint64_t max_snapshot_bytes;    /* bytes one snapshot scan may
					 * reference: its map and the
					 * pre-images it points to, shared
					 * ones too (read when it starts) */
	uint64_t max_snapshot_memory;   /* bytes all snapshots hold */
	uint64_t max_snapshot_memory_per_uid;   /* bytes charged to one
						 * uid's snapshots, root
						 * exempt */
	/* A commit of more changes or bytes than these is handed back to
	 * the home (res->txn) to run where it does not hold up the
	 * transport's other clients (tdbd: its committer thread); 0: never. */
	uint32_t defer_ops;
	uint64_t defer_bytes;
	/* Zero-copy readers (readers.c): how long the owner waits for a
	 * mapped reader's read section before it stops waiting and makes
	 * the reader redo it through its rings (0: 100 ms). */
	uint32_t reader_lease_ms;
};

/* Who a client is: numbers in the home's initial user namespace. */
struct tdbo_cred {
	uint32_t uid, gid;              /* the fs ids access is checked by */
	uint32_t ngroups;               /* supplementary groups */
	const uint32_t *groups;         /* copied by tdbo_client_new */
};

struct tdbo_table;
struct tdb_ring_ops;
struct tdb_ring_hdr;

/*
 * What the home supplies.  Every hook is optional but feed_alloc (WATCH
 * answers -EOPNOTSUPP without it).  Called with owner locks held (the
 * write lock for the log and dirty hooks): a hook must not call back
 * into the owner.
 */
/* A log record to reserve room for (struct tdbo_hooks, the log). */
enum tdbo_log_kind { TDBO_LOG_OPS = 1, TDBO_LOG_CREATE, TDBO_LOG_DROP };
struct tdbo_log_size {
	enum tdbo_log_kind kind;
	uint32_t nops;         /* TDBO_LOG_OPS: ops in the record */
	size_t bytes;          /* their table names, keys and values; or the
				 * created or dropped table's name */
};

struct tdbo_hooks {
	void *arg;
	/* Memory for a change feed a client can map read-only: size bytes,
	 * zeroed; NULL if none (the home's memory limit, ...).  *cookie:
	 * what the home wants back with it (tdbd: the memfd). */
	void *(*feed_alloc)(void *arg, size_t size, void **cookie);
	void (*feed_free)(void *arg, void *mem, size_t size, void *cookie);
	/* How the feed producer wakes readers sleeping on a feed's futex
	 * (tdbd: tdb_ring_user_ops, FUTEX_WAKE); NULL: it only bumps the
	 * futex (tdb.ko: watchers sleep in poll, woken by the client's
	 * wake()). */
	const struct tdb_ring_ops *feed_ring_ops;
	/*
	 * The log (tdbd's WAL).  A change is applied first and logged after,
	 * under its tables' locks, so each table's records are in the order
	 * its changes applied; and logging cannot fail once it is applied:
	 * log_reserve first secures the record's room (before anything
	 * applies: an error fails the change, *msg saying why, e.g. a full
	 * disk or a log that failed).  Then either log_cancel (the change
	 * failed to apply) or the record: log_begin, one log_op per key
	 * changed (one for PUT or DEL, every op of a transaction), and
	 * log_commit, which returns its LSN.  Table create and drop: a
	 * reserve, then log_create or log_drop.  sz describes the record
	 * (struct tdbo_log_size); the same sz goes to the reserve and to
	 * what consumes it.  A home whose log broke meanwhile returns an LSN
	 * that never becomes durable (UINT64_MAX): its answer is an error.
	 * The home answers a change only once its record is written or
	 * durable, as its sync mode says.  Without log_reserve nothing is
	 * logged and res->lsn stays 0; with it, every log_* hook is needed.
	 */
	int (*log_reserve)(void *arg, const struct tdbo_log_size *sz,
			   const char **msg);
	void (*log_cancel)(void *arg, const struct tdbo_log_size *sz);
	/* version: the owner's version of this write (every op of the
	 * record has it; docs/PROTOCOL.md "Versions"): the record must
	 * carry it so that replay gives each key the version it had. */
	void (*log_begin)(void *arg, uint64_t version);
	/* deadline: a PUT's record expires then (ms since the epoch; 0 =
	 * never, and always 0 for a DEL): replay must give it back. */
	void (*log_op)(void *arg, const struct tdbo_table *t, bool del,
		       const void *key, size_t klen, const void *val,
		       size_t vlen, uint64_t deadline);
	uint64_t (*log_commit)(void *arg, const struct tdbo_log_size *sz);
	uint64_t (*log_create)(void *arg, const struct tdbo_table *t,
			       const struct tdbo_log_size *sz);
	uint64_t (*log_drop)(void *arg, const struct tdbo_table *t,
			     const struct tdbo_log_size *sz);
	/*
	 * RESTORE_BULK's batch (change.c, tdbo_cmd_restore_bulk): 1 if
	 * nothing is logged from here until restore_end (tdb.ko while its
	 * supervisor restores the tables: a batch's records then go into
	 * the engine straight, without the per-record steps of a logged
	 * change), 0 if the home may log them (each record then goes
	 * through the change pipeline as a PUT would; restore_end is not
	 * called), or a negative errno with *msg: the batch is refused,
	 * as log_reserve would refuse its first record.  May sleep (taken
	 * under the table's wlock).  NULL: 0.
	 */
	int (*restore_begin)(void *arg, const char **msg);
	void (*restore_end)(void *arg);
	/* A key of t changed (the home's checkpoint keeps a dirty set). */
	void (*dirty)(void *arg, struct tdbo_table *t, const void *key,
		      size_t klen);
	/* t is freed, or set aside: let go of the home's state in it. */
	void (*table_free)(void *arg, struct tdbo_table *t);
	/* The home's memory limit: 0, or why a write that adds data (PUT,
	 * a commit with a put, TABLE_CREATE) is refused (-ENOMEM, *msg);
	 * and t may have grown (or was dropped): count it. */
	int (*mem_check)(void *arg, const char **msg);
	void (*mem_note)(void *arg, struct tdbo_table *t);
	/* STATS: add the home's figures (and their present bits). */
	void (*stats)(void *arg, struct tdb_proto_counters *k);
	/* t was dropped (under its wlock, after its region's map_gen
	 * moved): a home that maps tables into clients takes the
	 * mappings down (tdb.ko); may sleep; may be NULL. */
	void (*map_revoke)(void *arg, struct tdbo_table *t);
};

/* The limits are read through lim for the owner's life. */
struct tdbo_owner *tdbo_owner_new(const struct tdbo_limits *lim,
				  const struct tdbo_hooks *hooks, int *err);
/* Frees every table; no client may be left. */
void tdbo_owner_free(struct tdbo_owner *o);
/* Tests only (a home never calls it): the clock deadlines are read
 * against, instead of the wall clock (tdbe_engine_set_clock). */
void tdbo_owner_set_clock(struct tdbo_owner *o, uint64_t (*now)(void *arg),
			  void *arg);

/*
 * The owner's and the engine's log lines a client can provoke are rate
 * limited, per kind (platform.h, tdbp_log_rl): this writes the counts
 * of lines suppressed in windows that are over.  The home calls it from
 * a periodic point (tdbd: main's tick); tdbo_exec() calls it too (tdb.ko
 * has no periodic point).  Any thread, no lock held needed; never sleeps.
 */
void tdbo_log_flush(struct tdbo_owner *o);

/*
 * Called with every change notification (PUT, DEL, TABLE_DROP, built
 * with TDB_A_TABLE) after the change is visible, under the write lock;
 * tdb.ko's genl.c multicasts it.  Set once, before any client exists.
 */
typedef void tdbo_change_fn(void *arg, const void *msg, size_t len);
void tdbo_owner_on_change(struct tdbo_owner *o, tdbo_change_fn *fn,
			  void *arg);
/*
 * Whether fn would use a notification now (tdb.ko: anyone in the genl
 * group): when it says no and the table has no feed, the notification
 * is not built at all (a restore's records, every change nobody
 * watches).  Cheap, no lock of the owner's; NULL: always.  Set once,
 * with on_change, before any client exists.
 */
void tdbo_owner_change_wanted(struct tdbo_owner *o, bool (*wanted)(void *));

/*
 * A client.  cred: whose permissions every request is checked against
 * (tdb.ko: the opener's f_cred for /dev/tdb, the sender's for genl).
 * may_watch: feeds can be handed to it (/dev/tdb yes, genl no: WATCH
 * there answers -EOPNOTSUPP and points at the multicast group).
 * wake(arg) is called when a feed the client watches is written (dev.c
 * wakes poll()); may be NULL.  Called from the writer's context with no
 * owner lock held that wake() could need.
 */
/* The supervisor's own restore connection (tdb.ko): its PUTs may carry
 * SET_VERSION (docs/PROTOCOL.md); nobody else's may. */
void tdbo_client_allow_set_version(struct tdbo_client *c);
struct tdbo_client *tdbo_client_new(struct tdbo_owner *o,
				    const struct tdbo_cred *cred,
				    bool may_watch, void (*wake)(void *arg),
				    void *arg, int *err);
/*
 * A client that holds rings (tdb.ko's ATTACH, tdbd's attach): count it
 * against max_clients_per_uid and max_clients, and its rings' memory
 * (ring_bytes, both rings and their headers) against
 * max_ring_memory_per_uid and max_ring_memory, before it gets them.
 * 0, or a negative errno (-EDQUOT, -ENOSPC, -ENOMEM) with *msg naming
 * the limit; nothing is charged then.  Given back by tdbo_client_attach_uncharge() or
 * tdbo_client_free().
 */
int tdbo_client_attach_charge(struct tdbo_client *c, uint64_t ring_bytes,
			      const char **msg);
void tdbo_client_attach_uncharge(struct tdbo_client *c);
/* The uid the client acts as. */
uint32_t tdbo_client_uid(const struct tdbo_client *c);
/* The client is in (the transport took it): STATS counts it among
 * clients and accepted, and its end as a cleanup. */
void tdbo_client_accept(struct tdbo_client *c);
/* Its open transactions and watches now (for a log line). */
unsigned int tdbo_client_txns(const struct tdbo_client *c);
unsigned int tdbo_client_watches(const struct tdbo_client *c);

/* The dead-client hook: aborts its transactions, drops its watches,
 * frees its dumps' state.  Counted in STATS (cleanups, if it was
 * accepted; txns_aborted, watches_dropped). */
void tdbo_client_free(struct tdbo_client *c);

/* What a request left for its transport, beside its answer. */
struct tdbo_out {
	struct tdbo_dump *dump;         /* SCAN, TABLE_LIST: run it */
	uint64_t lsn;                   /* a change the home logged (its
					 * log hook's number): a durable
					 * home holds the ack until then */
	struct tdbo_feed *feed;         /* WATCH: the feed now watched (no
					 * reference: valid while the watch
					 * is, on the client's thread) */
	uint32_t feed_seq;              /* WATCH: the seq of the first
					 * change the watch sees */
	struct tdbo_txn *txn;           /* TXN_COMMIT over defer_ops or
					 * defer_bytes: not run; the home
					 * runs tdbo_txn_commit() and
					 * answers it */
	struct tdbo_table *map;         /* TABLE_MAP: the table to map (a
					 * reference: tdbo_table_put); the
					 * home acks with struct
					 * tdb_map_cookie */
	uint32_t map_gen;               /* TABLE_MAP: for the cookie */
	uint32_t map_extents;           /* TABLE_MAP: the map's length */
};

/* Dumps (SCAN, TABLE_LIST) in progress per client at most, in every
 * home and transport: the 9th answers -EBUSY (serve.c paces them; the
 * owner refuses past it too, for a transport that does not). */
#define TDBO_MAX_DUMPS 8u
#define TDBO_MAX_DUMPS_MSG \
	"too many dumps in progress on this connection (8)"

/* Run one validated request (see the top of this file); *res is
 * cleared first. */
int tdbo_exec(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdbo_sink *out, struct tdb_proto_extack *ext,
	      struct tdbo_out *res);

/*
 * The one-answer rule (answer.c).  After tdbo_exec() returned err with
 * a reply written or not (replied: the sink's commit was called): true
 * if the request still needs tdbo_answer_status() (its error, or its
 * ack); false if it was answered or will be (a dump's NLMSG_DONE, a
 * deferred commit's answer).
 */
bool tdbo_answer_owed(int err, bool replied, const struct tdbo_out *res);
/* Write NLMSG_ERROR (err, or 0: an ack with ext's cookie) or, done,
 * NLMSG_DONE into out (TDB_PROTO_ERROR_MAX bytes of room): 0, or
 * -ENOBUFS if out has no room now. */
int tdbo_answer_status(struct tdbo_sink *out, const struct nlmsghdr *req,
		       int err, const struct tdb_proto_extack *ext, bool done);

/*
 * Run n validated GETs that a transport took together (tdbd: a ring
 * round's consecutive GETs), with the answers tdbo_exec() would give,
 * in order, one per request: a reply into out, or fail(arg, m, err,
 * ext), which the transport answers with NLMSG_ERROR (err < 0).  Each
 * run of one table's GETs is looked up at once (tdbe_lookup_many) in
 * one read-side section: out must be in_read_section, and reserve(),
 * commit() and fail() are called inside that section.  It stops, and
 * returns how many it answered (< n), at a request that is not a GET
 * without TDB_A_TXN (the transport runs that one with tdbo_exec()) and
 * where reserve() returns NULL, which, unlike with tdbo_exec(), it may
 * (no room now: that GET and the rest are not answered nor counted;
 * the transport goes on from there later).
 */
typedef void tdbo_get_fail_fn(void *arg, const struct tdb_proto_msg *m,
			      int err, const struct tdb_proto_extack *ext);
unsigned int tdbo_get_many(struct tdbo_client *c,
			   const struct tdb_proto_msg *m, unsigned int n,
			   struct tdbo_sink *out, tdbo_get_fail_fn *fail,
			   void *arg);

/*
 * Go on with a dump: write parts into out until it is finished or out
 * has no room.  Returns 1 when more is to come (call again later), 0 when
 * finished, or a negative errno that ends the dump early (ext->msg says
 * why; the text may live in the dump: valid until tdbo_dump_free() or
 * tdbo_client_free(), so a transport that answers later copies it).  A
 * part that did not fit is written by the next call: nothing is lost or
 * repeated.
 */
int tdbo_dump_run(struct tdbo_dump *d, struct tdbo_sink *out,
		  struct tdb_proto_extack *ext);
void tdbo_dump_free(struct tdbo_dump *d);

/*
 * Feeds.  A table's feed exists while anyone watches it: the first WATCH
 * makes it (hooks->feed_alloc), the last UNWATCH or the table's drop
 * retires it (no change is written to it after that; a later WATCH gets
 * a new feed), and its memory goes (hooks->feed_free) with the last
 * reference: the watches' and the mappings'.
 *
 * For a home that maps them (tdb.ko's mmap): the feed whose slot is
 * `slot`, if client c watches it now, with a reference (NULL otherwise).
 * Its memory is what hooks->feed_alloc returned, tdbo_feed_size() bytes
 * (header page, then data).
 */
struct tdbo_feed *tdbo_feed_get(struct tdbo_client *c, uint64_t slot);
void tdbo_feed_put(struct tdbo_feed *f);
void *tdbo_feed_mem(struct tdbo_feed *f);
size_t tdbo_feed_size(const struct tdbo_feed *f);
/* The feed's mmap slot: from 2 to 0x3fffffff, no two feeds alive share
 * one (tdb.ko's cookie: the feed is at slot * TDB_DEV_SLOT). */
uint64_t tdbo_feed_slot(const struct tdbo_feed *f);
/* What hooks->feed_alloc gave with the memory (tdbd: the memfd). */
void *tdbo_feed_cookie(const struct tdbo_feed *f);

/* STATS figures the transports keep; the owner reports them.  Bumped
 * with tdbo_inc()/tdb_fetch_add from any context. */
struct tdbo_counters {
	uint32_t clients;               /* clients now (all transports) */
	uint32_t rings;                 /* client rings mapped now */
	uint64_t accepted;              /* clients ever */
	uint64_t rings_freed;
	uint64_t violations;            /* clients cut off for breaking the
					 * ring protocol */
	/* requests the transport answered itself, without tdbo_exec()
	 * (refused by tdb_proto_parse, ...), and of those the failed
	 * ones: STATS adds them to the owner's own counts */
	uint64_t requests;
	uint64_t errors;
};
struct tdbo_counters *tdbo_owner_counters(struct tdbo_owner *o);
/* Dead clients cleaned up, their transactions aborted and watches
 * dropped, since the owner was made (STATS' figures, for a home's own
 * report: tdb.ko's TDB_IOC_SUP_STATS). */
void tdbo_owner_cleanup_counts(struct tdbo_owner *o, uint64_t *cleanups,
			       uint64_t *txns_aborted,
			       uint64_t *watches_dropped);
/* Requests answered so far (STATS' requests). */
uint64_t tdbo_owner_requests(struct tdbo_owner *o);

/*
 * Expiry's sweep (expire.c): one round removes expired records that no
 * one reads, each as a logged DEL sent to watchers with REASON
 * TDB_REASON_EXPIRED.  It visits at most budget records over the tables
 * that have records with deadlines, each table from where its last
 * round stopped, in batches that hold a table's write lock for
 * TDBO_SWEEP_BATCH records at most.  Returns how many it removed;
 * *again is true when more than a quarter of those visited had expired:
 * call it again soon (within the home's CPU share) rather than after
 * the period.  One caller at a time (tdbd: its sweep in main's loop;
 * tdb.ko: its delayed work); may sleep (table locks, the log).
 */
#define TDBO_SWEEP_PERIOD_MS 100u       /* a round at least this often */
#define TDBO_SWEEP_BUDGET    8192u      /* records a round visits */
unsigned int tdbo_expire_run(struct tdbo_owner *o, unsigned int budget,
			     bool *again);

/* --- for a durable home --------------------------------------------------
 * Its recovery, checkpoints and log read the registry: struct tdbo_table
 * (internal.h) is theirs to read, and its ckpt_* / from / catchup / mem
 * fields theirs to keep, under the write lock.
 */
struct tdbo_table *tdbo_table_get(struct tdbo_owner *o, const char *name);
void tdbo_table_put(struct tdbo_table *t);
unsigned int tdbo_table_count(struct tdbo_owner *o);
unsigned int tdbo_table_count_aside(struct tdbo_owner *o);
/* Address space a table of max_ext extents reserves (0: the default). */
uint64_t tdbo_table_reserve(uint32_t max_ext);
/* Recovery: a table as it was (its id; charged whatever the limits
 * say); *out (may be NULL): the registry's, not counted. */
int tdbo_table_restore(struct tdbo_owner *o, const char *name, uint64_t id,
		       uint32_t max_ext, uint32_t uid, uint32_t gid,
		       uint32_t mode, struct tdbo_table **out,
		       const char **msg);
/* The same for a table created with TABLE_FLAGS (TDB_TABLE_F_*: an
 * ordered table), which the engine table must have from its start.
 * Unknown flags (a newer tdb's): -EOPNOTSUPP. */
int tdbo_table_restore_flags(struct tdbo_owner *o, const char *name,
			     uint64_t id, uint32_t max_ext, uint32_t tflags,
			     uint32_t uid, uint32_t gid, uint32_t mode,
			     struct tdbo_table **out, const char **msg);
/* What a durable home keeps of a table with its other attributes:
 * TDB_TABLE_F_* it was created with (0: a hash table). */
uint32_t tdbo_table_flags(const struct tdbo_table *t);
/* Recovery: a table that cannot be restored goes into the registry set
 * aside, without an engine table (its flags kept for its schema); why
 * says what failed.  0, -ENOMEM. */
int tdbo_table_add_aside(struct tdbo_owner *o, const char *name, uint64_t id,
			 uint32_t max_ext, uint32_t flags, uint32_t uid,
			 uint32_t gid, uint32_t mode, uint64_t from,
			 const char *why);
/* Recovery: a restored table that failed after all (a record it cannot
 * take): its engine table is dropped and it is set aside. */
int tdbo_table_set_aside(struct tdbo_owner *o, struct tdbo_table *t,
			 const char *why);
/* Recovery or restore: the table's default TTL (ms, 0 = none), as it
 * was created with (TABLE_CREATE's TTL; a durable home keeps it with
 * the table's other attributes).  Before clients come. */
void tdbo_table_set_default_ttl(struct tdbo_table *t, uint64_t ttl_ms);
/* Recovery or restore: the table's bounds and eviction policy (0, 0:
 * none; TDB_EVICT_*), as created.  Before clients come. */
void tdbo_table_set_bounds(struct tdbo_table *t, uint64_t max_bytes,
			   uint64_t max_records, uint32_t evict);
/* Replay: a change or a drop through the pipeline, not logged.  The
 * record gets `version` (the logged one) and the owner's version
 * counter is raised past it (tdbo_version_floor). */
int tdbo_replay(struct tdbo_table *t, bool del, const void *key,
		size_t klen, const void *val, size_t vlen, uint64_t version,
		uint64_t deadline, const char **msg);
/*
 * Versions (docs/PROTOCOL.md, "Versions"): one counter per owner; every
 * write takes the next value.  tdbo_version_last: the last one given
 * (or raised to), for a checkpoint to keep; tdbo_version_floor: after
 * this, every version given is > v (recovery: the checkpoint's kept
 * value and every version it restores, so a version never repeats for
 * a key across a restart, even one of a key deleted since).
 */
uint64_t tdbo_version_last(struct tdbo_owner *o);
void tdbo_version_floor(struct tdbo_owner *o, uint64_t v);
int tdbo_table_drop_replay(struct tdbo_owner *o, struct tdbo_table *t,
			   const char **msg);
/*
 * Zero-copy readers (readers.c; tdb/ring.h "Zero-copy readers").  A home
 * that can hand out table maps gives each client with rings its reader
 * slot, the header page of its SUBMIT ring, before the client's first
 * request; without one TABLE_MAP answers -EOPNOTSUPP.  The memory must
 * stay valid until tdbo_client_free(), which stops using it before it
 * returns.
 */
void tdbo_client_set_reader(struct tdbo_client *c, struct tdb_ring_hdr *sq);
/* The engine's table (tdbe_table_fd, its extents); NULL if set aside. */
struct tdbe_table *tdbo_table_engine(struct tdbo_table *t);
/* tdb.ko's mmap slot of the table's map (offset slot * TDB_DEV_SLOT;
 * 16 slots each, from 0x40000000; feeds are below), unique among the
 * tables in the registry; and the table with that slot (a reference),
 * or NULL. */
uint64_t tdbo_table_map_slot(const struct tdbo_table *t);
struct tdbo_table *tdbo_table_by_map_slot(struct tdbo_owner *o,
					  uint64_t slot);
/* May c read t now: 0, -ENOENT (dropped, set aside), -EACCES. */
int tdbo_may_read(const struct tdbo_client *c, const struct tdbo_table *t);
/* Every table now, counted references (tdbo_tables_release). */
int tdbo_tables_snapshot(struct tdbo_owner *o, struct tdbo_table ***out,
			 unsigned int *n);
void tdbo_tables_release(struct tdbo_table **v, unsigned int n);
/* Every write lock (the owner's and each table's): no change runs
 * until the unlock; a checkpoint takes its dirty sets and LSN so. */
void tdbo_write_lock(struct tdbo_owner *o);
void tdbo_write_unlock(struct tdbo_owner *o);
/* One table's write lock: a checkpoint reads a value under it, so it
 * never sees a commit half applied. */
void tdbo_table_lock(struct tdbo_table *t);
void tdbo_table_unlock(struct tdbo_table *t);
/* A deferred commit (res->txn): run it anywhere, once; 0 or a negative
 * errno with ext set, *lsn its log record's.  Then free it. */
int tdbo_txn_commit(struct tdbo_txn *x, uint64_t *lsn,
		    struct tdb_proto_extack *ext);
void tdbo_txn_free(struct tdbo_txn *x);
/* A commit's error text may name a key, built inside x: before
 * tdbo_txn_free(x), this moves it into keep (TDBO_TEXT bytes, where
 * the answer is built from) if ext->msg points into x. */
#ifndef TDBO_TEXT
#define TDBO_TEXT 256u
#endif
void tdbo_txn_keep_msg(const struct tdbo_txn *x,
		       struct tdb_proto_extack *ext, char *keep);
/* Memory the owner holds for clients (a home's memory limit counts
 * it): buffered transactions' keys and values. */
uint64_t tdbo_txn_bytes(struct tdbo_owner *o);

/* Bytes all snapshot scans hold now (what max_snapshot_memory bounds):
 * tdbd counts them in its max-memory. */
uint64_t tdbo_snap_mem(struct tdbo_owner *o);

/* Bytes of all clients' rings now (what max_ring_memory bounds): both
 * homes count them in max-memory (limtable.h). */
uint64_t tdbo_ring_mem(struct tdbo_owner *o);

#endif
