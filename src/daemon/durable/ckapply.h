/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ckapply.h - a checkpoint without a mirror (issue 29; docs/KERNEL.md,
 * "Without a mirror"): a run of WAL records applied straight to the
 * checkpoint store (ckpt.h) in one LMDB write transaction, which commits
 * with the LSN of the last record applied.
 *
 * The store then holds what a checkpoint of the tables taken at that LSN
 * holds (what checkpoint.c writes from the mirror): every put with its
 * version and deadline, deletes, creates with their schema, drops, and
 * "version" in /meta past every version of the records applied (and past
 * their LSNs, as recovery's floor is).  A put whose deadline is at or
 * before the caller's `now_ms` is a delete, as the mirror's checkpoint
 * writes no record already expired.
 *
 * Records at or before the store's LSN are skipped (a run replayed again
 * after a crash that followed its commit); the first one after must be
 * the store's LSN + 1 and each next one the one after (no gap: -EPROTO).
 * A record the store cannot take (an op on a table it does not hold, a
 * create of a table it holds, a drop of one it lacks, a malformed
 * record) fails the run: -EUCLEAN (or the store's error), the text
 * naming the record's LSN and the table; nothing of the run is
 * committed then, and the caller aborts.
 *
 * Writing: a run's changes are gathered (copied) and written as the
 * last change of each key, in LMDB's key order, at a create or drop,
 * past the run size (checkpoint-run-size, 64 MiB by default) gathered,
 * and at the commit: a run is one
 * transaction, so only a key's last change in it can be seen.  A table
 * created in the run gets its first batch with MDB_APPEND (its
 * databases are empty: a delete writes nothing).
 *
 * Memory: the changes gathered (at most about the run size), the LMDB
 * transaction's dirty pages (LMDB spills them to the file past its
 * dirty-list limit) and the names of the store's tables; nothing grows
 * with the data.  The caller bounds a run's
 * records (several runs in a row are several checkpoints: each commit is
 * a prefix of the log, so each is a consistent state).
 *
 * Functions never print or exit; they return 0 or a negative errno with
 * the text in err (or tdbd_ckapply_error).
 */
#ifndef TDBD_CKAPPLY_H
#define TDBD_CKAPPLY_H

#include <stddef.h>
#include <stdint.h>

struct ckpt;
struct ckapply;
struct wal_rec;

/* checkpoint-run-size's default (config.c): bytes of changes gathered */
#define CKAPPLY_RUN_SIZE (64ull << 20)

/* Read the store's LSN, tables and version, begin its transaction.
 * run_size: the gathered changes are written once they reach it (0:
 * CKAPPLY_RUN_SIZE; TDBD_CKAPPLY_PEND_MAX in the environment overrides
 * it, for tests). */
int tdbd_ckapply_begin(struct ckpt *ck, uint64_t now_ms, uint64_t run_size,
		       struct ckapply **out, char *err, size_t errlen);
/* One record (decoded, as wal_rec_check or the WAL reader give it):
 * 1 applied, 0 skipped (at or before the store's LSN), < 0 failed
 * (tdbd_ckapply_error says why; every later call fails the same). */
int tdbd_ckapply_rec(struct ckapply *a, const struct wal_rec *r);
/* The LSN the store will have at commit (its own if nothing applied). */
uint64_t tdbd_ckapply_lsn(const struct ckapply *a);
/* Records applied so far. */
uint64_t tdbd_ckapply_count(const struct ckapply *a);
/* Puts and deletes written to LMDB so far: the last change of each key
 * among those gathered (a record's changes are gathered, then written in
 * LMDB's key order at a create or drop, past 64 MiB of them, and at the
 * commit). */
uint64_t tdbd_ckapply_written(const struct ckapply *a);
/* Write what is gathered now (the commit does): 0 or < 0 as
 * tdbd_ckapply_rec. */
int tdbd_ckapply_flush(struct ckapply *a);
/* Bytes of changes gathered in this run so far (written or not). */
uint64_t tdbd_ckapply_gathered(const struct ckapply *a);
const char *tdbd_ckapply_error(const struct ckapply *a);
/* Set the version and the LSN, commit (LMDB's fsync), free a.  Nothing
 * applied: nothing written.  A failed run: its error, nothing written. */
int tdbd_ckapply_commit(struct ckapply *a, char *err, size_t errlen);
/* Free a without writing anything (NULL is ignored). */
void tdbd_ckapply_abort(struct ckapply *a);

struct ckapply_opts {
	uint64_t run_max;       /* records a run (0: no bound) */
	uint64_t run_size;      /* a run ends once it gathered this many
				 * bytes of changes (0: CKAPPLY_RUN_SIZE) */
	uint64_t now_ms;        /* puts expired by then are deletes */
	/* before each record (may be NULL): non-zero (a negative errno,
	 * -ECANCELED to abandon) stops the checkpoint and is returned, the
	 * running run aborted */
	int (*step)(void *arg);
	/* after each run's commit, with its LSN (may be NULL): the WAL
	 * segments it covers may go */
	void (*on_commit)(void *arg, uint64_t lsn);
	void *arg;
};

/*
 * A checkpoint from the WAL in wal_dir: its records after the store's
 * LSN up to upto (made durable: wal_read_range) applied in runs, each
 * run a commit: a run ends after o->run_max records or once it gathered
 * o->run_size bytes of changes.  *lsn: the store's LSN after, also on
 * an error (what the runs before it committed).  0 or a negative errno
 * with err (naming the record).
 */
int tdbd_ckapply_wal(struct ckpt *ck, const char *wal_dir, uint64_t upto,
		     const struct ckapply_opts *o, uint64_t *lsn,
		     char *err, size_t errlen);

#endif
