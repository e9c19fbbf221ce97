/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * durable_int.h - what durability's files (durable.h) share among
 * themselves, and nobody else: the checkpointer's state, the dirty
 * sets' accessors, the WAL record counter.  Not for files outside
 * src/daemon/durable/.
 */
#ifndef TDBD_DURABLE_INT_H
#define TDBD_DURABLE_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"               /* TDBE_NAME_MAX */
#include "durable.h"

struct keyset;

/* --- dirty.c ------------------------------------------------------------ */

/* Give a checkpoint's set back to the table (the checkpoint failed);
 * under the owner's write lock.  Frees s. */
void dur_dirty_merge(struct tdbo_table *dt, struct dirty *s, bool full);
/* The set's keys into ks (unsorted); s may be NULL. */
int dur_dirty_keys(const struct dirty *s, struct keyset *ks);
/* Keys in the set (0 for NULL). */
uint32_t dur_dirty_count(const struct dirty *s);

/* --- log.c --------------------------------------------------------------- */

/* One more WAL record (STATS' wal_records). */
void dur_count_record(struct tdbd *d);

/* --- checkpoint.c -------------------------------------------------------- */

/* A table the last checkpoint holds (by name and id: a table dropped
 * and made again under its name is written whole). */
struct ck_tab {
	char name[TDBE_NAME_MAX + 1];
	uint64_t id;
};

/*
 * Durability's state (d->dur), owned by checkpoint.c.  recover.c writes
 * tabs, ntabs, must and ckpt_lsn while it loads the checkpoint, before
 * dur_checkpointer_start; from then on only the checkpointer thread
 * (and, after dur_checkpointer_stop, the stopping thread) touches them.
 */
struct durable {
	char wal_dir[PATH_MAX + 8];
	pthread_t thr;
	bool thr_started;
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool stop, now;         /* under m */
	int cancel;             /* atomic: tdbd is stopping, abandon the
				 * running checkpoint */
	uint64_t deadline_ns;   /* the checkpoint's; 0: none */
	uint64_t ckpt_lsn;      /* the checkpointer's */
	uint64_t last_ns;
	bool failing;           /* the last checkpoint failed */
	bool must;              /* checkpoint even if no record is new (a
				 * table restored from aside: its catch-up
				 * is in no checkpoint yet) */
	bool store_current;     /* kernel mode: recovery applied the WAL
				 * to the store (recover.c, store_commit) */
	struct ck_tab *tabs;    /* what the checkpoint holds */
	unsigned int ntabs;
	void *buf;              /* values read back */
	size_t bufcap;
	uint64_t written, tick_ns;      /* this checkpoint's progress */
	uint64_t steps;         /* records read or written: cancel checks */
	uint64_t ns_gather, ns_sort, ns_write;  /* this checkpoint's phases */
	/* Kernel mode (no mirror: docs/KERNEL.md, "Without a mirror"):
	 * checkpoints apply the WAL's durable records to the store
	 * (checkpoint_k, ckapply.c); the follower checks each record
	 * against the names of the tables as of the WAL's last record
	 * (recover.c; the follower's thread writes them, nnames is read
	 * atomically elsewhere).  k_version: past the store's version and
	 * every version and LSN in the WAL (the version floor). */
	bool kernel;
	bool k_after_recovery;  /* the WAL had records after the store */
	char (*names)[TDBE_NAME_MAX + 1];
	unsigned int nnames, capnames;
	uint64_t k_version;
	uint64_t k_runs;        /* this checkpoint's runs */
	int k_removed;          /* and the segments they removed */
	void (*apply_hook)(struct tdbd *d);     /* tests: in
						 * tdbd_durable_apply, after
						 * the checks, before the
						 * WAL append */
};

/* The state for data_dir (its WAL in data_dir/wal), or NULL; freed with
 * dur_free (NULL is ignored). */
struct durable *dur_new(const char *data_dir);
void dur_free(struct durable *u);
/* Start the checkpointer thread (now: a checkpoint at once, "after
 * recovery"); 0 or a negative errno, logged.  Stop it: a running
 * checkpoint is abandoned, the thread joined (nothing if not started). */
int dur_checkpointer_start(struct tdbd *d, bool now);
void dur_checkpointer_stop(struct tdbd *d);
/* The last checkpoint, when tdbd stops (after dur_checkpointer_stop):
 * the WAL synced to its end, then a checkpoint only if small. */
void dur_last_checkpoint(struct tdbd *d);

#endif
