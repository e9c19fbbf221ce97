/*
 * tdbd.h - the daemon's internal structures, shared by its files.
 *
 *   main.c     start-up, listening socket, signals, systemd, shutdown
 *   worker.c   worker threads: serve the rings and sockets of their
 *              clients, round after round
 *   client.c   one client: credentials, rings (memfds), socket I/O,
 *              clean-up when it goes
 *   exec.c     one request against the engine, its answer
 *   tables.c   the table registry: owner, mode, feeds, access checks;
 *              snapshots (the old values a snapshot scan needs)
 *   txn.c      transactions: buffered changes, atomic commit
 *   notify.c   sd_notify and logging (escaping what clients supplied)
 *   durable.c  the WAL, acks held until durable, checkpoints, recovery
 *   ckpt.c     the LMDB checkpoint store (ckpt.h)
 *   quota.c    what each uid holds, and all, against the limits (quota.h)
 *
 * Threads.  The main thread accepts connections and hands each client to
 * one worker, which then owns it: only that worker touches the struct
 * client (its rings, socket buffers, transactions, dumps).  Shared
 * between workers: the engine (thread-safe), the registry (rwlock), the
 * write lock and the counters (atomics).  Big commits run on the
 * committer thread (txn.c), which touches only the transaction it was
 * handed and the job it answers through.
 *
 * Writes.  Every change (put, delete, commit, create, drop) runs under
 * d->wlock, so changes have one order, feeds have one producer, and a
 * transaction's commit is not interleaved with other writes.  Readers do
 * not take it: a GET reads its table's dt->seq before and after (a
 * seqcount), and retries if a commit to that table ran meanwhile, so it
 * sees a transaction whole or not at all (and never waits for a commit
 * to other tables).
 */
#ifndef TDBD_TDBD_H
#define TDBD_TDBD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "core.h"
#include "proto.h"
#include "quota.h"
#include "ring.h"

struct tdbd;
struct worker;
struct client;

/* --- logging (notify.c) ---------------------------------------------- */

enum { L_ERR = 3, L_WARNING = 4, L_NOTICE = 5, L_INFO = 6, L_DEBUG = 7 };
void tdbd_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tdbd_log_set_level(int level);
/*
 * Log lines a client can cause go through a rate limiter per kind (as
 * the kernel's printk_ratelimit): a burst of TDBD_RL_BURST lines, then
 * none until TDBD_RL_INTERVAL_MS has passed since the burst began; the
 * next line of that kind (or tdbd_log_rl_flush(), from main's tick)
 * first says how many were suppressed.  A flood of hostile clients thus
 * costs a few lines per interval, not one per attempt.
 */
enum tdbd_rl {
	RL_CLIENT,              /* a client came, or went and why */
	RL_VIOLATION,           /* protocol and ring violations */
	RL_REFUSED,             /* connections refused (max-clients, creds) */
	RL_ACCEPT,              /* accept() failing (EMFILE, ENFILE, ...) */
	RL_RINGS,               /* rings or feeds that cannot be made */
	RL_TABLES,              /* tables created and dropped, feeds, scans */
	RL_NKINDS
};
#define TDBD_RL_BURST        10u
#define TDBD_RL_INTERVAL_MS  5000u
void tdbd_log_rl(enum tdbd_rl kind, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Say how many lines were suppressed in intervals that are over. */
void tdbd_log_rl_flush(void);
/* sd_notify(), if NOTIFY_SOCKET is set; formatted. */
void tdbd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Escaping for log lines.  Whatever a client (or a checkpoint or WAL
 * from before names were restricted) supplied goes into a log line only
 * through these: printable ASCII as is, '\' as "\\", every other byte
 * as "\xHH", so a line never holds a newline, a terminal escape (C0, DEL,
 * C1) or bytes that are not UTF-8, and the bytes can be read back.
 * tdb_escape() (tdb/proto.h) is the rule, shared with the dump tools.
 */
/* A NUL-terminated string escaped whole (a table name: 4 * 64 + 1). */
struct tdbd_escaped {
	char s[4 * TDBE_NAME_MAX + 1];
};
struct tdbd_escaped tdbd_esc_name(const char *name);
/* Use: tdbd_log(L_INFO, "table %s ...", ESC(dt->name)); the temporary
 * lives until the end of the full expression (C11 6.2.4). */
#define ESC(name) (tdbd_esc_name(name).s)

/* --- tables (tables.c) ----------------------------------------------- */

/* Tables at most: the checkpoint keeps two LMDB databases per table and
 * opens at most 8192 (ckpt.c). */
#define TDBD_TABLES_MAX 4000u

/* A change feed: the broadcast ring watchers map read-only. */
struct feed {
	int fd;                 /* memfd, read-write (ours) */
	void *map;              /* whole memfd */
	size_t map_size, span;
	struct tdb_ring prod;
};

struct dirty;
struct snapshot;

struct dtable {
	struct dtable *next;    /* registry hash chain */
	char name[TDBE_NAME_MAX + 1];
	uint64_t id;            /* unique for the data directory's life */
	uint32_t max_extents;
	uint64_t reserve;       /* address space charged to uid (Q_RESERVE),
				 * uncharged when the table is freed */
	/* under wlock: keys changed since the last checkpoint took the
	 * set, or (ckpt_full) the whole table must be rewritten */
	struct dirty *dirty;
	bool ckpt_full;
	struct tdbe_table *t;   /* engine handle; NULL if set aside */
	/* Set aside at start (it could not be restored): the error every
	 * request on it gets, naming it and why; else NULL.  Set only by
	 * recovery, before clients come, then constant. */
	char *aside;
	/* The LSN its checkpoint data is as of: its changes are the WAL
	 * records after it (recovery; and the WAL a set-aside table needs
	 * kept).  catchup: it was set aside before, so recovery replays
	 * its records from `from` on, also those before the checkpoint's
	 * LSN. */
	uint64_t from;
	bool catchup;
	uint32_t uid, gid, mode;
	unsigned int refs;      /* atomic; the registry holds one */
	bool dropped;           /* under wlock */
	struct feed *feed;      /* under wlock; NULL until first watched */
	unsigned int watchers;  /* under wlock */
	struct snapshot *snaps; /* under wlock: snapshots taking changes */
	uint64_t mem;           /* under wlock: its backed extents' bytes as
				 * counted in d->mem_tables (max-memory) */
	uint64_t seq;           /* seqcount, atomic: odd while a commit
				 * applies changes to this table (txn.c) */
};

/* Who a client is (SO_PEERCRED, SO_PEERGROUPS). */
struct creds {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[64];
};

#define MAY_READ  4u
#define MAY_WRITE 2u
bool tdbd_may(const struct creds *cr, const struct dtable *dt,
	      unsigned int want);

int tdbd_tables_init(struct tdbd *d);
void tdbd_tables_fini(struct tdbd *d);
/* A counted reference to the table, or NULL (-ENOENT). */
struct dtable *tdbd_table_get(struct tdbd *d, const char *name);
void tdbd_table_put(struct tdbd *d, struct dtable *dt);
/* Under wlock. */
/* id 0: the next free one.  *out (may be NULL): the new table, not
 * counted (the registry's reference; valid under wlock). */
int tdbd_table_create(struct tdbd *d, const char *name, uint32_t max_ext,
		      uint32_t uid, uint32_t gid, uint32_t mode, uint64_t id,
		      struct dtable **out, struct tdb_proto_extack *ext);
int tdbd_table_drop(struct tdbd *d, struct dtable *dt,
		    struct tdb_proto_extack *ext);
/* Address space a table of max_ext extents reserves (0: the default). */
uint64_t tdbd_table_reserve(uint32_t max_ext);
/* Under wlock, before a client's create: 0, or why uid may not own one
 * more such table (-EDQUOT, -ENOSPC; *msg names the limit's key). */
int tdbd_table_quota_check(struct tdbd *d, uint32_t uid, uint32_t max_ext,
			   const char **msg);
/* Recovery (before clients, under wlock): a table that cannot be
 * restored goes into the registry set aside, without an engine table;
 * why says what failed.  0, or -ENOMEM. */
int tdbd_table_add_aside(struct tdbd *d, const char *name, uint64_t id,
			 uint32_t max_ext, uint32_t uid, uint32_t gid,
			 uint32_t mode, uint64_t from, const char *why);
/* Recovery: a restored table that failed after all (a record it cannot
 * take): its engine table is dropped and it is set aside.  0, -ENOMEM. */
int tdbd_table_set_aside(struct tdbd *d, struct dtable *dt, const char *why);
/* Tables set aside now (STATS). */
unsigned int tdbd_table_count_aside(struct tdbd *d);
/* Snapshot of the registry: an array of counted references. */
int tdbd_table_snapshot(struct tdbd *d, struct dtable ***out,
			unsigned int *n);
unsigned int tdbd_table_count(struct tdbd *d);
uint64_t tdbd_table_gen(struct tdbd *d);
/* Under wlock: the feed (made on first use); a read-only fd to pass and
 * the sequence number of the next change (where a watch starts). */
int tdbd_feed_open_ro(struct tdbd *d, struct dtable *dt, int *fd,
		      uint32_t *seq);
/* Under wlock: one watch of dt fewer; the last one retires the feed. */
void tdbd_feed_unwatch(struct dtable *dt);
/* Under wlock: tell the table's watchers (no-op without a feed). */
void tdbd_feed_put(struct tdbd *d, struct dtable *dt, const void *key,
		   size_t klen, const void *val, size_t vlen);
void tdbd_feed_del(struct tdbd *d, struct dtable *dt, const void *key,
		   size_t klen);

/* --- snapshots (tables.c) ---------------------------------------------
 * A snapshot scan (SCAN with TDB_SCAN_SNAPSHOT) dumps a table as it was
 * when the scan began, while writers go on, without copying the table:
 *  - the scan registers a snapshot on the table under wlock;
 *  - every change to a table with snapshots calls tdbd_snap_save() under
 *    wlock BEFORE it is applied, which keeps the key's pre-image (absent,
 *    or present and its value) in each snapshot that does not have the
 *    key yet (the first change wins);
 *  - the scan walks the live table with a cursor and asks
 *    tdbd_snap_check() about each record: unchanged keys go out as they
 *    are, changed ones as their pre-image (or not at all);
 *  - after the walk (tdbd_snap_freeze) tdbd_snap_next_left() gives the
 *    pre-images the walk did not send (keys deleted before it got there).
 * A pre-image saved for a key the walk has already passed (the cursor's
 * order, tdbe_key_order) is marked sent at once: that key went out
 * unchanged, and needs no copy of its old value.
 *
 * One change costs at most one copy: the pre-image is made once, for the
 * first snapshot that needs it, and shared (refcounted) by every other
 * snapshot of the table that needs it, so the time under wlock does not
 * grow with value size x snapshots.  Memory: every byte a snapshot holds
 * is charged to its owner's uid (the scanning client's), a shared
 * pre-image once, to the owner of the snapshot that made it; all
 * snapshots together hold at most max-snapshot-memory, and one snapshot
 * references at most max-snapshot-bytes.  Writers are never failed by a
 * snapshot: one whose next pre-image would pass either bound (-ENOBUFS)
 * or that cannot get memory stops taking changes and fails its scan
 * (tdbd_snap_check returns the error; its message names the bound and
 * the key).  A failed snapshot keeps what it holds until it is freed.
 */
/* Under wlock: a new snapshot of dt (keys starting with prefix only),
 * owned by uid, registered on it; NULL if out of memory. */
struct snapshot *tdbd_snap_new(struct tdbd *d, struct dtable *dt,
			       uint32_t uid, const void *prefix, size_t plen);
/* Unregister (takes wlock: not under it) and free. */
void tdbd_snap_free(struct tdbd *d, struct snapshot *s);
/* Under wlock, before key of dt changes (no-op without snapshots). */
void tdbd_snap_save(struct dtable *dt, const void *key, size_t klen);
/* Under wlock: dt is dropped; its snapshots take no more changes (a
 * dropped table does not change). */
void tdbd_snap_detach_all(struct dtable *dt);
/*
 * The scan's walk returned key (value *val, *vlen): 1 send it with
 * *val and *vlen (the live value, or the pre-image put there), 0 skip it
 * (absent at snapshot time), or the snapshot's error (*msg says why).
 * *val stays valid until the snapshot is freed.
 */
int tdbd_snap_check(struct snapshot *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, const char **msg);
/* The walk is over: the snapshot takes no more changes. */
void tdbd_snap_freeze(struct snapshot *s);
/* After the freeze: 1 and the next pre-image the walk did not send, 0 at
 * the end, or the snapshot's error (*msg). */
int tdbd_snap_next_left(struct snapshot *s, const void **key, size_t *klen,
			const void **val, size_t *vlen, const char **msg);

/* --- memory, max-memory (tables.c) ---------------------------------------
 * What counts: the tables' backed extents (each table's last noted size,
 * summed in d->mem_tables), buffered transactions (d->mem_txns) and
 * snapshot memory (d->snap_mem).  Past max-memory, writes that add data
 * (PUT, TXN_COMMIT with a put, TABLE_CREATE) fail with -ENOMEM; reads and
 * deletes go on.  Root is not exempt: it is the machine's memory.
 */
/* Under wlock, after dt may have grown: count its extents now. */
void tdbd_mem_note(struct tdbd *d, struct dtable *dt);
/* 0, or -ENOMEM with ext->msg if tdbd is over max-memory. */
int tdbd_mem_check(struct tdbd *d, struct tdb_proto_extack *ext);
/* Bytes counted against max-memory now, and the limit in force. */
uint64_t tdbd_mem_used(struct tdbd *d);
uint64_t tdbd_mem_limit(struct tdbd *d);

/* --- memfds shared with clients (client.c) --------------------------- */

/* A ring in a memfd: header page at 0, data at `span`. */
struct shm_ring {
	int fd;
	void *map;
	size_t map_size, span;
	uint32_t data_size;
	int guard;              /* sigbus.c slot, or -1 */
};
/* seals: added to F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL (a feed adds
 * F_SEAL_FUTURE_WRITE: after our own mapping, nobody can map it
 * writable, not even through a re-open of /proc/self/fd/N). */
int tdbd_shm_ring(struct tdbd *d, const char *name, uint32_t kind,
		  uint32_t data_size, unsigned int seals, struct shm_ring *out);
void tdbd_shm_ring_free(struct shm_ring *r);

/* --- SIGBUS from client memfds (sigbus.c) ------------------------------ */

int tdbd_sigbus_init(unsigned int slots);
void tdbd_sigbus_fini(void);
/* Guard a mapping: a SIGBUS in it replaces it with zero pages and marks
 * the slot hit, instead of killing us.  A slot >= 0, or -ENOSPC. */
int tdbd_sigbus_guard(void *addr, size_t len);
void tdbd_sigbus_unguard(int slot);
bool tdbd_sigbus_hit(int slot);

/* --- transactions (txn.c) -------------------------------------------- */

enum chan { CH_SOCK, CH_RING };         /* where a request came in */

struct txn_op {
	struct dtable *dt;      /* counted */
	bool del;
	uint32_t flags;
	uint32_t klen, vlen;
	unsigned char *key;     /* key, then value, in one allocation */
};

struct txn {
	struct txn *next;
	uint64_t id;
	struct txn_op *ops;
	uint32_t nops, cap;
	uint64_t bytes;         /* keys and values (max-txn-bytes) */
	uint32_t uid;           /* the client's: charged for its memory */
	uint64_t charged;       /* Q_TXN_BYTES charged to uid, uncharged
				 * when the txn is freed */
};

/* A transaction of a client of uid. */
struct txn *tdbd_txn_new(struct tdbd *d, uint32_t uid);
void tdbd_txn_free(struct tdbd *d, struct txn *x);
int tdbd_txn_add(struct tdbd *d, struct txn *x, struct dtable *dt, bool del,
		 uint32_t flags, const void *key, size_t klen,
		 const void *val, size_t vlen, struct tdb_proto_extack *ext);
/* The latest change to key in x: 1 put (*val, *vlen), 0 deleted,
 * -ENOENT not touched. */
int tdbd_txn_find(const struct txn *x, const struct dtable *dt,
		  const void *key, size_t klen, const void **val,
		  size_t *vlen);
/* Apply all or nothing, logged as one WAL record (*lsn); takes wlock. */
int tdbd_txn_commit(struct tdbd *d, struct txn *x, uint64_t *lsn,
		    struct tdb_proto_extack *ext);
/* The committer thread (txn.c): big commits run there, not on the
 * client's worker.  Started before the workers, stopped after them. */
struct commit_job;
int tdbd_commit_start(struct tdbd *d);
void tdbd_commit_stop(struct tdbd *d);
/* Hand x (a big transaction, unlinked from the client; the job frees
 * it) to the committer: true, and c->commit is set until the worker
 * takes the result; false: commit it here. */
bool tdbd_commit_async(struct client *c, enum chan ch, struct txn *x,
		       const struct nlmsghdr *req);
/* The result of c->commit if it is done (true; c->commit cleared). */
bool tdbd_commit_take(struct client *c, int *err, uint64_t *lsn,
		      const char **msg, struct nlmsghdr *req, enum chan *ch);
/* The client goes: its job (if any) is the committer's to free. */
void tdbd_commit_orphan(struct client *c);

/* --- durability (durable.c) -------------------------------------------- */

struct wal;
struct ckpt;

/* Recover (checkpoint, then WAL replay), open the WAL, start the
 * checkpointer.  Before clients are accepted. */
int tdbd_durable_start(struct tdbd *d);
/* Last checkpoint (after the workers stopped), close everything. */
void tdbd_durable_stop(struct tdbd *d);
/* Under wlock: log one change before applying it.  0 and *lsn, or a
 * negative errno with *msg saying why (nothing was logged). */
int tdbd_log_put(struct tdbd *d, struct dtable *dt, const void *key,
		 size_t klen, const void *val, size_t vlen, uint64_t *lsn,
		 const char **msg);
int tdbd_log_del(struct tdbd *d, struct dtable *dt, const void *key,
		 size_t klen, uint64_t *lsn, const char **msg);
int tdbd_log_txn(struct tdbd *d, struct txn *x, uint64_t *lsn,
		 const char **msg);
int tdbd_log_create(struct tdbd *d, const char *name, uint64_t id,
		    uint32_t uid, uint32_t gid, uint32_t mode,
		    uint32_t max_ext, uint64_t *lsn, const char **msg);
int tdbd_log_drop(struct tdbd *d, const char *name, uint64_t *lsn,
		  const char **msg);
/* Under wlock: the change logged as lsn could not be applied. */
void tdbd_log_retract(struct tdbd *d, uint64_t lsn);
/* Under wlock: the key changed (for the next checkpoint). */
void tdbd_dirty_add(struct dtable *dt, const void *key, size_t klen);
void tdbd_dirty_free(struct dirty *s);

/* --- clients (client.c, worker.c, exec.c) ----------------------------- */

/* Requests a client may have run per round on each transport (its
 * submission ring, its socket): one busy client cannot take more than
 * its share of a worker's round. */
#define TDBD_REQ_BUDGET 64u

/* An acknowledgement of a change waits until its WAL record is durable
 * (sync always or batch); false if it may go out now. */
bool tdbd_ack_later(struct client *c, enum chan ch,
		    const struct nlmsghdr *req, uint64_t lsn);
/* Send the held acknowledgements whose records are durable now. */
void tdbd_held_release(struct client *c);
void tdbd_held_free(struct client *c);
/* Too many held: read no more of its requests for now. */
bool tdbd_held_full(const struct client *c);

/* A dump in progress (SCAN or TABLE_LIST). */
struct dump {
	bool used;
	enum chan ch;
	struct nlmsghdr req;    /* the request's header: seq, pid */
	uint8_t cmd;
	/* SCAN */
	struct dtable *dt;
	struct tdbe_cursor *cur;
	unsigned char *prefix;
	uint32_t plen;
	uint64_t left;          /* records still allowed (LIMIT) */
	uint64_t sent;
	struct snapshot *snap;  /* TDB_SCAN_SNAPSHOT, else NULL */
	bool walked;            /* snapshot: the cursor is done */
	/* TABLE_LIST */
	struct dtable **tabs;
	unsigned int ntabs, at;
};
#define MAX_DUMPS 8

/* A watch, in its client's index (exec.c): chains of a hash of the
 * table's name and the prefix, so UNWATCH finds a watch by name even
 * after its table was dropped, in time independent of how many watches
 * the client has. */
struct watch {
	struct watch *next;     /* hash chain */
	struct dtable *dt;      /* counted */
	uint64_t hash;          /* watch_hash(name, prefix) */
	uint32_t plen;
	unsigned char prefix[];
};

struct client {
	struct tdbd *d;
	struct worker *w;
	unsigned int slot;      /* index in w->clients */
	uint64_t id;
	int sock, pidfd, evfd;  /* evfd: the submission ring's wake-up */
	struct creds cr;
	bool dead;              /* cleaned up at the end of the round */
	const char *why;        /* why it is being dropped */

	/* rings (after ATTACH) */
	bool attached;
	struct shm_ring sub_shm, comp_shm;
	struct tdb_ring sub, comp;
	bool comp_dirty;        /* committed, not yet published */

	/* socket: input bytes not yet a whole message; output not sent */
	unsigned char *in;
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_off, out_cap;
	uint64_t sent;          /* socket bytes sent, ever (progress) */
	uint32_t ep_events;     /* the socket's epoll interest now */
	unsigned int in_budget; /* socket requests it may still run this
				 * round (TDBD_REQ_BUDGET at its start) */

	/* an answer that did not fit in the completion ring */
	unsigned char *stash;
	size_t stash_len;
	uint64_t blocked_since; /* ns; 0 = not blocked */

	/* stopping: answer only what was sent before (bytes left of it) */
	bool draining;
	uint64_t drain_to;      /* submission ring index at SIGTERM */
	size_t drain_sock;      /* socket bytes the kernel held then */

	/* acknowledgements waiting for their WAL record to be durable,
	 * oldest (lowest LSN) first */
	struct held *held, *held_tail;
	unsigned int nheld;

	struct dump dumps[MAX_DUMPS];
	unsigned int ndumps;
	struct txn *txns;
	unsigned int ntxns;
	/* watches: nwbuckets chains (a power of two, grown to keep
	 * nwatches <= nwbuckets), at most max-watches of them */
	struct watch **watches;
	unsigned int nwatches, nwbuckets;
	uint64_t wseed;         /* random: chains cannot be aimed at */

	/* a big commit running on the committer thread (txn.c): none of
	 * its requests are read until it is answered */
	struct commit_job *commit;

	/* the table of the last request (a counted ref) and the
	 * registry generation it was looked up in */
	struct dtable *cache;
	uint64_t cache_gen;
};

struct worker {
	struct tdbd *d;
	unsigned int id;
	pthread_t thread;
	int epfd, ctlfd;        /* ctlfd: eventfd, main -> worker */
	struct client **clients;
	unsigned int nclients, cap;
	pthread_mutex_t inbox_lock;
	struct client **inbox;  /* handed over by main, not yet taken */
	unsigned int ninbox, inbox_cap;
	uint64_t heartbeat;     /* ns, atomic: last round */
	unsigned char *scratch; /* an answer being built (MSG_MAX) */
	uint64_t next_check;    /* ns: next deadline check */
	unsigned int nheld;     /* atomic: held acks of its clients */
};

/* Counters, atomics (STATS). */
struct counters {
	uint64_t requests, errors, accepted, cleanups, txns_aborted;
	uint64_t watches_dropped, rings_freed, stuck, violations;
	uint64_t wal_records, checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t clients, watches, txns, rings, throttled, dumps;
};

struct tdbd {
	struct tdbd_config cfg;
	struct tdbe_engine *engine;
	pthread_mutex_t wlock;
	uint64_t next_txn;      /* atomic */
	uint64_t next_client;   /* atomic */
	uint64_t start_ns;
	bool hugepages_ok;      /* atomic: false once hugetlb failed */
	volatile int stopping;  /* atomic: drain and stop */
	struct counters ctr;

	/* registry */
	pthread_rwlock_t reg_lock;
	struct dtable **buckets;
	unsigned int nbuckets, ntables;
	struct tdbd_quota *quota;       /* quota.c */
	unsigned int naside;    /* atomic: of which set aside */
	uint64_t reg_gen;       /* atomic: bumped on create and drop */

	struct worker *workers;
	unsigned int nworkers;

	/* durability (durable.c) */
	struct wal *wal;
	struct ckpt *ckpt;
	uint64_t next_table_id; /* under wlock */
	pthread_mutex_t wake_lock;      /* workers vs the WAL's callback */
	bool wake_on;           /* under wake_lock: workers may be woken */
	struct durable *dur;    /* the checkpointer's state */

	/* memory (tables.c), bytes, atomics */
	uint64_t snap_mem;      /* held by snapshots (max-snapshot-memory) */
	uint64_t mem_tables;    /* tables' backed extents (max-memory) */
	uint64_t mem_txns;      /* buffered transactions (max-memory) */
	uint64_t mem_auto;      /* max-memory 0: 3/4 of physical memory */
	bool mem_primed;        /* tables made by recovery are counted */
	/* the committer thread (txn.c): its queue under commit_lock */
	pthread_mutex_t commit_lock;
	pthread_cond_t commit_cv;
	struct commit_job *commit_q, *commit_tail;
	bool commit_stop;       /* under commit_lock */
	bool committer_on;
	pthread_t committer;
};

uint64_t tdbd_now_ns(void);

/* client.c */
struct client *tdbd_client_new(struct tdbd *d, int sock,
			       const struct creds *cr);
/* Free everything (the client is out of its worker's lists). */
void tdbd_client_free(struct client *c);
/* Socket side: run buffered whole messages and read more, within the
 * round's budget (c->in_budget): the number run (>= 0), or < 0 if the
 * client must go (c->why set).  What the budget leaves stays buffered
 * for the next round. */
int tdbd_client_read(struct client *c);
/* Has the socket side requests to run now (buffered, or left by the
 * budget), with room for their answers?  The worker must not sleep then. */
bool tdbd_client_in_ready(const struct client *c);
/* Send buffered socket output; < 0 if the socket is gone. */
int tdbd_client_flush(struct client *c);
/* Queue an answer on a channel (copying it).  -EAGAIN: it went to the
 * stash and the client is blocked until the stash drains. */
int tdbd_client_emit(struct client *c, enum chan ch, const void *msg,
		     size_t len);
/* Room for an answer of len bytes on ch right now? */
bool tdbd_client_room(struct client *c, enum chan ch, size_t len);
/* ATTACH: 1 answered (rings or a refusal), < 0 the client must go. */
int tdbd_client_attach(struct client *c, const struct nlmsghdr *req);
/* Descriptors go with an ack sent at once, so nothing may be queued
 * before it: 0 ready, -EAGAIN answers wait for the client to read them,
 * or the socket's error (c->why set). */
int tdbd_client_fds_ready(struct client *c);
/* The client broke its rings (or the protocol): drop it at the end of
 * the round, count a violation, log why (a SIGBUS in its memfds is named
 * first: it is the cause of what a ring then looks like). */
void tdbd_client_violation(struct client *c, const char *why);
#define TDBD_WHY_SIGBUS "its ring memory went away under us (SIGBUS: " \
	"holes punched in its memfd?)"
/* Pass fds with an ack on the socket. */
int tdbd_client_ack_fds(struct client *c, const struct nlmsghdr *req,
			const struct tdb_proto_extack *ext, const int *fds,
			unsigned int nfds);
void tdbd_client_update_out(struct client *c);

/* exec.c */
/* Run one request (a private copy of len bytes) that came in on ch. */
void tdbd_exec(struct client *c, enum chan ch, const void *msg, size_t len);
/* Go on with the client's dumps; returns the work done; *blocked set if
 * one waits for the client to drain its answers. */
unsigned int tdbd_dumps_run(struct client *c, unsigned int budget,
			    bool *blocked);
void tdbd_dump_end(struct client *c, struct dump *dp);
/* Answer c's big commit if the committer is done with it: 1, else 0. */
unsigned int tdbd_commit_answer(struct client *c);
/* The client goes: drop its watches; returns how many it had. */
unsigned int tdbd_watches_drop(struct client *c);
void tdbd_client_cleanup(struct client *c);

/* worker.c */
int tdbd_workers_start(struct tdbd *d);
void tdbd_workers_stop(struct tdbd *d);
void tdbd_worker_hand(struct tdbd *d, struct client *c);
/* Wake w out of its epoll sleep (its control eventfd).  From another
 * thread that may outlive the workers, only under d->wake_lock while
 * d->wake_on. */
void tdbd_worker_wake(struct worker *w);

#endif
