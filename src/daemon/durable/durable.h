/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * durable.h - tdbd's durability (docs/DURABILITY.md): what makes its
 * tables survive it.  The interface the rest of tdbd uses; what the
 * files below share only among themselves is in durable_int.h.
 *
 *   log.c         every change into the WAL: the owner's log hooks, the
 *                 worker round's write (tdbd_log_*)
 *   dirty.c       dirty sets: the keys each table changed since the last
 *                 checkpoint (tdbd_dirty_*; owns struct dirty)
 *   checkpoint.c  the checkpointer thread, checkpoints into LMDB, the
 *                 last one at stop (owns struct durable)
 *   recover.c     start (checkpoint loaded, WAL replayed, WAL opened,
 *                 checkpointer started) and stop; kernel mode's start
 *                 (nothing loaded) and records checked into the WAL
 *                 (tdbd_durable_apply)
 *   ckapply.c     kernel mode's checkpoint: WAL records applied to the
 *                 store (ckapply.h)
 *   ckpt.c        the LMDB checkpoint store (ckpt.h)
 *   keysort.c     a checkpoint's keys sorted in LMDB's order (keysort.h)
 *
 * Dependencies.  Durability may call the owner (src/owner) and the
 * engine (src/core), the WAL (src/wal), LMDB, and tdbd's logging
 * (notify.h), clock and struct tdbd (tdbd.h: the configuration, the
 * owner, d->wal, d->ckpt, d->dur, the counters).  It never calls serving
 * (../serve/, the held answers in ../durable.c) nor kernel
 * mode (../kernel/): what must happen when records become durable
 * (workers holding answers woken, tdb.ko told) is the hook the caller
 * passes to tdbd_durable_start.  Serving and kernel mode call
 * durability only through this header (and read the WAL's LSNs through
 * wal.h); tdbd_now_ns comes from main.c (or a test).
 *
 * Threads.  The log hooks run on whichever thread changes a table,
 * under its locks; the checkpointer is a thread of its own (started by
 * tdbd_durable_start, joined by tdbd_durable_stop); the hook passed to
 * tdbd_durable_start runs on the WAL's flusher thread.
 */
#ifndef TDBD_DURABLE_H
#define TDBD_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tdbd;
struct dirty;
struct tdbo_log_size;
struct tdbo_table;
struct wal_rec;

/* Records up to lsn are durable, or the WAL failed (wal_failed): told
 * on the WAL's flusher thread, arg the struct tdbd.  It must not block
 * on the WAL. */
typedef void tdbd_durable_hook(void *arg, uint64_t lsn);

/* Recover (checkpoint, then WAL replay), open the WAL, start the
 * checkpointer; on_durable (may be NULL) is told when records become
 * durable.  Before clients are accepted.  On an error, still call
 * tdbd_durable_stop. */
int tdbd_durable_start(struct tdbd *d, tdbd_durable_hook *on_durable);
/* Last checkpoint (after the workers stopped), close everything. */
void tdbd_durable_stop(struct tdbd *d);

/* The owner's log hooks (struct tdbo_hooks: log_reserve, log_cancel,
 * log_begin, log_op, log_commit, log_create, log_drop; arg the struct
 * tdbd), called under the changed tables' locks (log.c). */
int tdbd_log_reserve(void *arg, const struct tdbo_log_size *sz,
		     const char **msg);
void tdbd_log_cancel(void *arg, const struct tdbo_log_size *sz);
void tdbd_log_begin(void *arg, uint64_t version);
void tdbd_log_op(void *arg, const struct tdbo_table *t, bool del,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 uint64_t deadline);
uint64_t tdbd_log_commit(void *arg, const struct tdbo_log_size *sz);
uint64_t tdbd_log_create(void *arg, const struct tdbo_table *t,
			 const struct tdbo_log_size *sz);
uint64_t tdbd_log_drop(void *arg, const struct tdbo_table *t,
		       const struct tdbo_log_size *sz);
/* A worker's round is over: write the WAL records appended so far (its
 * answers go out after). */
void tdbd_log_write(struct tdbd *d);

/* The owner's dirty hook (under its write lock), and a table's set
 * freed with the table (dirty.c). */
void tdbd_dirty_add(void *arg, struct tdbo_table *t, const void *key,
		    size_t klen);
void tdbd_dirty_free(struct dirty *s);

/*
 * Kernel mode (docs/KERNEL.md, "Without a mirror"): tdbd_durable_start
 * loads nothing: it reads the store's LSN, tables and version, checks
 * the WAL after it (cutting a torn tail) and opens the WAL after its
 * last record; the checkpointer starts with tdbd_durable_kernel_ready,
 * once tdb.ko has its tables.  Checkpoints apply the WAL's durable
 * records to the store (checkpoint-run-size a run).  (recover.c)
 */
int tdbd_durable_kernel_ready(struct tdbd *d);
/* Tables not resident (interim): the store and the WAL loaded into
 * tdbd's owner for krestore.c (0 or a negative errno, logged); then
 * every table of it dropped (its memory freed) once restored. */
int tdbd_durable_mirror_load(struct tdbd *d);
void tdbd_durable_mirror_drop(struct tdbd *d);
/* Tables as of the WAL's last record (kernel mode; any thread). */
unsigned int tdbd_durable_table_count(struct tdbd *d);
/* Kernel mode: one record of tdb.ko's log (encoded whole, rec/len;
 * decoded, r) checked and appended to the WAL.  Its LSN must be the
 * WAL's next: else -EPROTO, err naming both.  A record that could
 * never be checkpointed (an op on a table that does not exist, a
 * create of one that does, a drop of one that does not, a malformed
 * one): -EUCLEAN, err naming the table, nothing appended.  Or the WAL's
 * error.  (recover.c) */
int tdbd_durable_apply(struct tdbd *d, const void *rec, size_t len,
		       const struct wal_rec *r, char *err, size_t errlen);
/* Tests: fn runs inside tdbd_durable_apply, after the checks and before
 * the WAL append (NULL: none).  (recover.c) */
void tdbd_durable_test_apply_hook(struct tdbd *d, void (*fn)(struct tdbd *));
/* Kernel mode: did recovery apply the WAL to the checkpoint store
 * (ckapply.h), so that the store holds the tables as of the WAL's last
 * LSN and a restore may read them from it (krestore.c)?  Not with
 * TDBD_KERNEL_RESTORE_FROM=mirror.
 * (recover.c) */
bool tdbd_durable_store_current(struct tdbd *d);
/* Tests of daemon mode's durability: one record applied to tdbd's own
 * tables as recovery replays it, then appended to the WAL (its LSN must
 * be the WAL's next).  Not atomic with a checkpoint: the test runs
 * checkpoints when no record is being applied.  (recover.c) */
int tdbd_durable_test_replay(struct tdbd *d, const void *rec, size_t len,
			     const struct wal_rec *r, char *err,
			     size_t errlen);
/* Ask the checkpointer for a checkpoint now.  (checkpoint.c) */
void tdbd_durable_checkpoint_soon(struct tdbd *d);

#endif
