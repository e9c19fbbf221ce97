/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tdbd.h - the daemon as a whole: struct tdbd, which main.c makes and
 * every part of tdbd reads, and what main.c wires together besides the
 * parts' own headers: the owner's home (tables.c), the hook durability
 * calls when records become durable (durable.c), the clock (main.c).
 *
 *   main.c     start-up, listening socket, signals, systemd, shutdown
 *   tables.c   tdbd as the owner's home: its limits from tdbd.conf, the
 *              feeds' memfds, max-memory, STATS figures (in both modes:
 *              kernel mode's mirror is an owner too)
 *   durable.c  the policy of answers held until their WAL record is
 *              written or durable (tdbd_hold_policy: the queue is
 *              src/owner/serve.c's), and the hook that releases them
 *              (tdbd_on_durable)
 *   notify.c   sd_notify and logging, escaping what clients supplied
 *              (notify.h)
 *   sigbus.c   a SIGBUS in a client's ring memfd (sigbus.h)
 *   config.c   tdbd.conf and the command line (config.h)
 *   serve/     serving clients: client.c (struct client, client.h),
 *              worker.c (struct worker, worker.h), exec.c (tdbd's side
 *              of src/owner/serve.c, exec.h), txn.c (the committer
 *              thread, txn.h)
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
 * committer thread (serve/txn.c), which touches only the transaction it
 * was handed and the job it answers through.
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

#include "config.h"
#include "owner.h"              /* src/owner: struct tdbo_limits */

struct worker;
struct commit_job;
struct wal;
struct ckpt;
struct durable;
struct kernel;
struct tdbe_table;
struct tdbo_hold_policy;

/* --- the daemon ------------------------------------------------------- */

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

	struct worker *workers;        /* serve/worker.h */
	unsigned int nworkers;
	struct sweep *sweep;           /* expiry's sweep (serve/sweep.c) */

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
	/* the committer thread (serve/txn.c): its queue under commit_lock */
	pthread_mutex_t commit_lock;
	pthread_cond_t commit_cv;
	struct commit_job *commit_q, *commit_tail;
	bool commit_stop;       /* under commit_lock */
	bool committer_on;
	pthread_t committer;
};

/* The clock (main.c; tests that link tdbd without main.c supply it). */
uint64_t tdbd_now_ns(void);

/* --- tdbd as the owner's home (tables.c) ------------------------------ */

/* Tables at most: the checkpoint keeps two LMDB databases per table and
 * opens at most 8192 (durable/ckpt.c); the owner's max-tables. */
#define TDBD_TABLES_MAX 4000u

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

/* --- the answers held for the WAL, and records become durable (durable.c)
 * Durability's declarations are in durable/durable.h, kernel mode's in
 * kernel/kernel.h; struct tdbd holds their state (above).  The hook
 * durability tells when records become durable, which main.c passes to
 * tdbd_durable_start: the workers holding answers are woken, kernel mode
 * tells tdb.ko. */

void tdbd_on_durable(void *arg, uint64_t lsn);

/* The held-answer policy of tdbd (durable.c): a change's answer waits
 * until its WAL record is written (sync batch, none) or durable
 * (always); -EIO for every held one if the WAL failed.  The queue is
 * serve's (src/owner/serve.c), one per client (c->sv). */
extern const struct tdbo_hold_policy tdbd_hold_policy;

#endif
