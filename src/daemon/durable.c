// SPDX-License-Identifier: GPL-2.0-only
/*
 * durable.c - serving's answers held until their WAL record is written
 * or durable (the policy, tdbd_hold_policy: the queue is serve's,
 * src/owner/serve.c), and the hook durability tells when records become durable (tdbd_on_durable: the
 * workers holding answers are woken, kernel mode tells tdb.ko).  The
 * rest of durability (the WAL's hooks, dirty sets, checkpoints,
 * recovery) is in durable/ (durable/durable.h); this file only reads the
 * WAL's LSNs (wal.h).
 *
 * Invariant: every worker round ends with one wal_write of what was
 * appended (tdbd_log_write) before its answers go out; a change's answer
 * is held until its record is written (sync batch, none) or durable
 * (always).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "serve.h"              /* src/owner: struct tdbo_hold_policy */
#include "serve/worker.h"
#include "tdbd.h"
#include "wal.h"

/* --- held acknowledgements ------------------------------------------------- */

/*
 * Every change's answer waits for its record: written (sync batch and
 * none: a crash of tdbd then loses nothing acknowledged) or durable
 * (always).  The queue is serve's (src/owner/serve.c: a FIFO per client
 * in LSN order, bounded by c->sv.held_max and held_bytes_max,
 * serve/worker.c); the policy is here.
 */

/* The LSN answers may go out up to. */
static uint64_t ack_lsn(const struct tdbd *d)
{
	return d->cfg.sync == WAL_SYNC_ALWAYS ? wal_durable(d->wal) :
						wal_written(d->wal);
}

static bool hold_must(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;

	return d->wal && lsn > ack_lsn(d);
}

static uint64_t hold_upto(void *arg)
{
	return ack_lsn(arg);
}

static int hold_failed(void *arg, const char **msg)
{
	struct tdbd *d = arg;

	if (!wal_failed(d->wal))
		return 0;
	*msg = "the WAL could not be written or synced (a write or "
	       "fdatasync failed): this change is applied but may not "
	       "survive a crash; tdbd needs a restart";
	return -EIO;
}

static void hold_held(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;

	(void)lsn;
	if (d->cfg.sync == WAL_SYNC_ALWAYS)
		wal_kick(d->wal);
}

/* No memory to hold an answer: wait here, then it goes out. */
static int hold_no_room(void *arg, uint64_t lsn, const char **msg)
{
	struct tdbd *d = arg;

	(void)msg;
	wal_write(d->wal);
	if (d->cfg.sync == WAL_SYNC_ALWAYS)
		wal_sync_to(d->wal, lsn);
	return 0;
}

const struct tdbo_hold_policy tdbd_hold_policy = {
	.must_hold = hold_must,
	.upto = hold_upto,
	.failed = hold_failed,
	.held = hold_held,
	.no_room = hold_no_room,
};

/* The flusher thread: records became durable (or the log failed). */
static void on_durable(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;
	unsigned int i;

	if (d->kern && d->cfg.sync != WAL_SYNC_NONE)
		tdbd_kernel_durable(d, wal_durable(d->wal));
	(void)lsn;
	pthread_mutex_lock(&d->wake_lock);
	for (i = 0; d->wake_on && i < d->nworkers; i++)
		if (__atomic_load_n(&d->workers[i].nheld, __ATOMIC_SEQ_CST))
			tdbd_worker_wake(&d->workers[i]);
	pthread_mutex_unlock(&d->wake_lock);
}

/* The hook main.c passes to tdbd_durable_start (durable/durable.h). */
void tdbd_on_durable(void *arg, uint64_t lsn)
{
	on_durable(arg, lsn);
}
