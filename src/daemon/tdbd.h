/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tdbd.h - the daemon's internal structures, shared by its files.
 *
 *   main.c     start-up, listening socket, signals, systemd, shutdown
 *   worker.c   worker threads: serve the rings and sockets of their
 *              clients, round after round
 *   client.c   one client: credentials, rings (memfds), socket I/O,
 *              clean-up when it goes
 *   exec.c     the transport's side of serve (src/owner/serve.c,
 *              shared with tdb.ko: parse, refuse, run, answer, hold
 *              until durable, dumps): the client's channels, ATTACH,
 *              descriptors passed with acks, a ring round's GETs
 *   tables.c   tdbd as the owner's home: its limits from tdbd.conf, the
 *              feeds' memfds, max-memory, STATS figures
 *   txn.c      the committer thread, where big commits run
 *   notify.c   sd_notify and logging (escaping what clients supplied)
 *   durable.c  the policy of answers held until their WAL record is
 *              written or durable (tdbd_hold_policy: the queue is
 *              src/owner/serve.c's), and the hook that releases them
 *              (tdbd_on_durable)
 *   durable/   durability (durable/durable.h): the WAL (the owner's log
 *              hooks), dirty sets, checkpoints (LMDB), recovery
 *   kernel/    kernel mode (kernel/kernel.h): the supervisor of tdb.ko,
 *              a mirror of its tables fed by its log ring (klog.c: the
 *              reader), loaded into tdb.ko at start (krestore.c); no
 *              clients
 *
 * Threads.  The main thread accepts connections and hands each client to
 * one worker, which then owns it: only that worker touches the struct
 * client (its rings, socket buffers, its owner client, dumps).  Shared
 * between workers: the owner (src/owner: its own locks; the engine is
 * thread-safe) and the counters (atomics).  Big commits run on the
 * committer thread (txn.c), which touches only the transaction it was
 * handed and the job it answers through.
 *
 * Writes.  The owner runs every change (put, delete, commit, create,
 * drop) under its write lock, so changes have one order, the WAL has
 * the same, and feeds have one producer; readers do not take it
 * (src/owner/change.c).
 */
#ifndef TDBD_TDBD_H
#define TDBD_TDBD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "core.h"
#include "owner.h"
#include "proto.h"
#include "ring.h"
#include "serve.h"

struct tdbd;
struct worker;
struct client;
struct uid_share;

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
	RL_WAL,                 /* the WAL failing */
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

/* libc's text for an errno (either sign) with its first letter in lower
 * case, as tdb's other texts: "cannot allocate memory" (a word's capital
 * only: "I/O"-like acronyms stay).  Use: ERRSTR(errno), a temporary as
 * ESC's, so a line may hold several and threads do not share it. */
struct tdbd_errtext {
	char s[128];
};
struct tdbd_errtext tdbd_errtext(int err);
#define ERRSTR(err) (tdbd_errtext(err).s)

/* --- tdbd as the owner's home (tables.c) ------------------------------ */

/* Tables at most: the checkpoint keeps two LMDB databases per table and
 * opens at most 8192 (durable/ckpt.c); the owner's max-tables. */
#define TDBD_TABLES_MAX 4000u

/* Who a client is (SO_PEERCRED, SO_PEERGROUPS). */
struct creds {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[64];
};

/* Make the owner with tdbd.conf's limits and tdbd's hooks (before
 * recovery); free it (after the workers and the checkpointer). */
int tdbd_owner_start(struct tdbd *d);
void tdbd_owner_stop(struct tdbd *d);
/* tdbd.conf was (re)read: the owner's limits follow (atomic stores). */
void tdbd_limits_update(struct tdbd *d);
/* A read-only descriptor of a watched feed's memfd (the WATCH ack
 * passes it; the caller closes it), or a negative errno. */
int tdbd_feed_fd(struct tdbo_feed *f);
/* A new read-only descriptor of a table's region memfd, for TABLE_MAP's
 * ack (the caller closes it); -EOPNOTSUPP without /proc. */
int tdbd_table_ro_fd(struct tdbe_table *t);
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

/* --- the committer (txn.c) ----------------------------------------------
 * Big commits (the owner hands them back: struct tdbo_out.txn) run on
 * the committer thread, not on the client's worker.  Started before the
 * workers, stopped after them. */
enum chan { CH_SOCK, CH_RING };         /* where a request came in */
struct commit_job;
int tdbd_commit_start(struct tdbd *d);
void tdbd_commit_stop(struct tdbd *d);
/* Hand x (the job frees it) to the committer: true, and c->commit is
 * set until the worker takes the result; false: commit it here. */
bool tdbd_commit_async(struct client *c, enum chan ch, struct tdbo_txn *x,
		       const struct nlmsghdr *req);
/* The result of c->commit if it is done (true; c->commit cleared). */
bool tdbd_commit_take(struct client *c, int *err, uint64_t *lsn,
		      const char **msg, char *keep, struct nlmsghdr *req,
		      enum chan *ch);
/* The client goes: its job (if any) is the committer's to free. */
void tdbd_commit_orphan(struct client *c);

/* --- durability (durable/durable.h) and kernel mode (kernel/kernel.h) ---
 * Their declarations are in their own headers; struct tdbd holds their
 * state (below).  The hook durability tells when records become
 * durable, which main.c passes to tdbd_durable_start (durable.c: the
 * workers holding answers are woken, kernel mode tells tdb.ko). */

struct wal;
struct ckpt;
struct durable;
struct kernel;

void tdbd_on_durable(void *arg, uint64_t lsn);

/* --- clients (client.c, worker.c, exec.c) ----------------------------- */

/* Requests the clients of one uid may have run per round on each
 * transport (their submission rings, their sockets), shared by its
 * connections on the worker (worker.c, "Shares"): one busy user cannot
 * take more than its share of a worker's round, however many
 * connections it opens, nor one busy connection more than its uid's. */
#define TDBD_REQ_BUDGET 64u
/* The least a connection of a uid with many may take when its turn
 * comes (a lookup group of GETs), so a share is not spent one request
 * per client visit. */
#define TDBD_REQ_MIN_TURN 16u

/* Acknowledgements held for the WAL (serve.h) of one uid's connections on
 * a worker at most, and, once it has two or more there, the bytes of
 * their requests (the size of what waits for the disk: each sync
 * carries it): each connection may hold these over their number
 * (c->sv.held_max, at least TDBD_REQ_BUDGET; c->sv.held_bytes_max, at least
 * TDBD_HELD_BYTES_MIN; the request that passes it is still taken), so a
 * uid's connection count buys it no more of the disk's syncs, and many
 * connections cannot make every sync, which everyone's acks wait for,
 * carry megabytes.  A lone connection keeps the bound it always had
 * (TDBD_HELD_MAX answers, any size): a client pipelining big values
 * alone is not slowed. */
#define TDBD_HELD_MAX 4096u
#define TDBD_HELD_BYTES (1u << 20)
#define TDBD_HELD_BYTES_MIN (4u << 10)

/* The held-answer policy of tdbd (durable.c): a change's answer waits
 * until its WAL record is written (sync batch, none) or durable
 * (always); -EIO for every held one if the WAL failed.  The queue is
 * serve's (src/owner/serve.c), one per client (c->sv). */
extern const struct tdbo_hold_policy tdbd_hold_policy;

struct client {
	struct tdbd *d;
	struct worker *w;
	unsigned int slot;      /* index in w->clients */
	uint64_t id;
	int sock, pidfd, evfd;  /* evfd: the submission ring's wake-up */
	int comp_evfd;          /* the completion ring's (and its watched
				 * feeds') wake-up, for a client in an
				 * event loop (tdbc_fd); -1 before ATTACH */
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
				 * round (its turn of its uid's share at
				 * its start, 0 after it) */
	struct uid_share *share;        /* its uid's on its worker */
	unsigned int share_slot;        /* index in share->v */
	unsigned int r_taken;   /* ring requests run this round */

	/* an answer that did not fit in the completion ring */
	unsigned char *stash;
	size_t stash_len;
	uint64_t blocked_since; /* ns; 0 = not blocked */
	/* this round's (worker.c: serve_in to serve_out) */
	bool r_blocked;         /* answers found no room */
	uint64_t r_sent, r_cons;        /* socket bytes sent, completion
					 * consumer index, at its start */
	/* ring requests taken but not run yet (a batch of GETs whose
	 * replies found no room, and what came after them in the round):
	 * private copies, run before the ring is read again */
	unsigned char *pend;
	size_t pend_len, pend_off;

	/* stopping: answer only what was sent before (bytes left of it) */
	bool draining;
	uint64_t drain_to;      /* submission ring index at SIGTERM */
	size_t drain_sock;      /* socket bytes the kernel held then */

	/* the owner's side of this client: its transactions, watches and
	 * dumps' state, its credentials as the owner checks them */
	struct tdbo_client *oc;
	/* serve's side (src/owner/serve.h): its dumps, its answers held
	 * for the WAL (oldest first, bounded by sv.held_max and
	 * sv.held_bytes_max: its share of TDBD_HELD_MAX and
	 * TDBD_HELD_BYTES, worker.c) */
	struct tdbo_conn sv;

	/* a big commit running on the committer thread (txn.c): none of
	 * its requests are read until it is answered */
	struct commit_job *commit;
};

struct worker {
	struct tdbd *d;
	unsigned int id;
	pthread_t thread;
	int epfd, ctlfd;        /* ctlfd: eventfd, main -> worker */
	struct client **clients;
	unsigned int nclients, cap;
	/* its clients by uid: each uid's share of a round (worker.c) */
	struct uid_share **shares;
	unsigned int nshares, shares_cap;
	pthread_mutex_t inbox_lock;
	struct client **inbox;  /* handed over by main, not yet taken */
	unsigned int ninbox, inbox_cap;
	uint64_t heartbeat;     /* ns, atomic: last round */
	unsigned char *scratch; /* an answer being built (MSG_MAX) */
	struct get_batch *gets; /* a round's consecutive ring GETs */
	uint64_t next_check;    /* ns: next deadline check */
	unsigned int nheld;     /* atomic: held acks of its clients */
};

/* Counters tdbd keeps, atomics (STATS adds them to the owner's; the
 * transport's own are in *d->oct: clients, rings, violations, and the
 * requests answered without the owner). */
struct counters {
	uint64_t stuck;
	uint64_t wal_records, checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t throttled;
};

struct tdbd {
	struct tdbd_config cfg;
	struct tdbo_owner *o;   /* tables, commands (src/owner) */
	struct tdbo_limits lim; /* its limits, from cfg (atomic stores) */
	struct tdbo_counters *oct;      /* the owner's transport counters */
	uint64_t next_client;   /* atomic */
	uint64_t start_ns;
	bool hugepages_ok;      /* atomic: false once hugetlb failed */
	volatile int stopping;  /* atomic: drain and stop */
	struct counters ctr;

	struct worker *workers;
	unsigned int nworkers;

	/* durability (durable/) */
	struct wal *wal;
	struct ckpt *ckpt;
	pthread_mutex_t wake_lock;      /* workers vs the WAL's callback */
	bool wake_on;           /* under wake_lock: workers may be woken */
	struct durable *dur;    /* the checkpointer's state */
	/* kernel mode (kernel/): the supervisor of tdb.ko; NULL else */
	struct kernel *kern;
	bool kern_failed;       /* its follower stopped on an error */

	/* memory (tables.c), bytes, atomics */
	uint64_t mem_tables;    /* tables' backed extents (max-memory) */
	uint64_t mem_feeds;     /* change feeds' memfds (max-memory) */
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
/* oc: its owner client (accepted, charged); freed with it. */
struct client *tdbd_client_new(struct tdbd *d, int sock,
			       const struct creds *cr, struct tdbo_client *oc);
/* Free everything (the client is out of its worker's lists). */
void tdbd_client_free(struct client *c);
/* The owner's client for a connection: its credentials as numbers.
 * c: the connection; the owner calls tdbd_client_feed_wake(c) when a
 * feed c watches is written. */
struct tdbo_client *tdbd_owner_client(struct tdbd *d, const struct creds *cr,
				      struct client *c, int *err);
/* The owner's wake hook (tdbo_client_new): a feed the client watches
 * was written.  An attached client in an event loop (tdbc_fd: flags
 * TDB_RING_F_EVENTFD and TDB_RING_F_CONS_WAITING in its completion
 * ring's header) is woken as its completion ring would wake it: futex
 * and comp_evfd.  The writer's thread, under the table's write lock. */
void tdbd_client_feed_wake(void *arg);
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
/*
 * A message from the submission ring (a private copy, valid during the
 * call).  Consecutive GETs are kept in the worker's batch and served
 * together (tdbo_get_many) when something else comes, when the batch is
 * full, or at tdbd_ring_flush(), which the round calls once the ring
 * has given what it will.  Answers keep the requests' order.
 */
#define TDBD_GET_BATCH 16u      /* TDBE_LOOKUP_GROUP: one lookup walk */
#define TDBD_GET_BYTES 8192u    /* their private copies */
struct get_batch {
	unsigned int n;
	size_t used;
	struct tdb_proto_msg m[TDBD_GET_BATCH];
	unsigned char buf[TDBD_GET_BYTES] __attribute__((aligned(8)));
};
void tdbd_ring_msg(struct client *c, const struct nlmsghdr *nlh);
void tdbd_ring_flush(struct client *c);
/* Run the requests left pending (c->pend) while answers have room;
 * returns how many ran. */
unsigned int tdbd_pend_run(struct client *c);
/* The client's serve state (c->sv) over its channels: when its worker
 * takes it (c->oc set).  Zeroed (calloc) until then: nothing to free. */
void tdbd_serve_init(struct client *c);
/* Answer c's big commit if the committer is done with it: 1, else 0. */
unsigned int tdbd_commit_answer(struct client *c);
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
