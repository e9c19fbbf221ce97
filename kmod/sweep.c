// SPDX-License-Identifier: GPL-2.0-only
/*
 * sweep.c - expiry's sweep in tdb.ko: the owner's rounds
 * (src/owner/expire.c, tdbo_expire_run) run by a delayed work, so that
 * expired records go without anyone reading them.
 *
 * What runs it: one delayed work on system_unbound_wq (not a kthread:
 * the work needs no state of its own between rounds, and
 * cancel_delayed_work_sync() gives unload its "not queued, not running"
 * with no stop protocol).  A work item runs in process context, so the
 * rounds may sleep: they take table mutexes, the log's gate and its
 * lock, and allocate.  One work item is never run twice at once, which
 * is tdbo_expire_run's "one caller at a time".
 *
 * Pace (as tdbd's sweep thread, src/daemon/serve/sweep.c): a round of
 * TDBO_SWEEP_BUDGET records every sweep_ms (a module parameter, default
 * TDBO_SWEEP_PERIOD_MS; 0 stops the sweep until it is set again, which
 * lets an operator, or a test, see expired records stay absent to reads
 * while still in memory, then go when the sweep runs); while rounds
 * keep finding expired records (tdbo_expire_run's `again`) the next
 * follows in the same run, but at most SWEEP_BURST rounds in a row,
 * then the work rests three times as long as they took (their time
 * counted up to a period): a table expiring all at once empties with
 * at most a quarter of one CPU (Redis's active expiry takes the same
 * share; each round's batches call cond_resched()), and an idle tdb.ko
 * costs one look at each table's `expiring` count per period.
 *
 * When it does nothing: while tdb.ko refuses clients (tdbk_sup_refuse:
 * recovering, the supervisor restoring the tables, or
 * require_supervisor=1 before any READY) the work runs no round and
 * only comes back after a period: the tables are not all there, and a
 * change now would not be logged (klog.c's gate refuses it anyway:
 * tdbk_sup_may_change).  A sweep that cannot log (the log ring full,
 * the supervisor stopped or gone) gets -ENOBUFS from the log's
 * reservation: tdbo_change_one applies nothing, the owner ends that
 * batch at its first DEL (the record stays, absent to readers, for a
 * later pass), so a round costs at most one refused reservation per
 * batch and removes nothing, and a round that removes nothing asks for
 * no burst: the next try is a period later.  No DEL is
 * applied that the log did not take, so no acknowledged write is lost
 * and no record a restore would bring back is removed unlogged.
 *
 * Unload: main.c stops the sweep first, before /dev/tdb, genl, the log
 * and the owner go (a round sends notifications through them and writes
 * the log ring): `stopping` keeps a round in flight from queueing the
 * work again, and cancel_delayed_work_sync() waits for it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#include "owner.h"
#include "transport.h"
#include "sup.h"

#define SWEEP_BURST   8u        /* rounds in a row at most ... */
#define SWEEP_SHARE   4u        /* ... then rest: busy 1/SWEEP_SHARE */
#define SWEEP_MS_MAX  60000u    /* sweep_ms's largest */

static struct tdbo_owner *sweep_owner;
static void sweep_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(sweep_work, sweep_fn);
/* Orders queueing against unload: once `stopping` is set under it, no
 * one queues the work again (cancel_delayed_work_sync then waits for
 * the last run). */
static DEFINE_MUTEX(sweep_lock);
static bool stopping = true;            /* until tdbk_sweep_start */
static unsigned int sweep_ms = TDBO_SWEEP_PERIOD_MS;

/* The next run in ms (0: now), unless unloading or switched off. */
static void sweep_queue(unsigned int ms)
{
	mutex_lock(&sweep_lock);
	if (!stopping && READ_ONCE(sweep_ms))
		mod_delayed_work(system_unbound_wq, &sweep_work,
				 msecs_to_jiffies(ms));
	mutex_unlock(&sweep_lock);
}

static int sweep_ms_set(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int err = kstrtouint(val, 0, &ms);

	if (err)
		return err;
	if (ms > SWEEP_MS_MAX) {
		pr_warn("sweep_ms=%u refused: the range is 1..%u, or 0 (no "
			"sweep)\n", ms, SWEEP_MS_MAX);
		return -EINVAL;
	}
	WRITE_ONCE(sweep_ms, ms);
	if (ms)
		sweep_queue(0);         /* the new pace from now */
	else
		/* off once the write returns: a run already queued (or
		 * running: it queues no other) would sweep once more */
		cancel_delayed_work_sync(&sweep_work);
	return 0;
}

static const struct kernel_param_ops sweep_ms_ops = {
	.set = sweep_ms_set,
	.get = param_get_uint,
};
module_param_cb(sweep_ms, &sweep_ms_ops, &sweep_ms, 0644);
MODULE_PARM_DESC(sweep_ms,
		 "ms between rounds of the expiry sweep, 1..60000 (default "
		 "100); 0 stops it: expired records then stay in memory, "
		 "absent to every read, until it runs again");

static void sweep_fn(struct work_struct *work)
{
	unsigned int rounds = 0;
	u64 busy_from = ktime_get_ns(), busy_ms;
	const char *msg;
	bool again;

	if (tdbk_sup_refuse(NULL, &msg)) {
		sweep_queue(READ_ONCE(sweep_ms));
		return;
	}
	do {
		tdbo_expire_run(sweep_owner, TDBO_SWEEP_BUDGET, &again);
		cond_resched();
	} while (again && ++rounds < SWEEP_BURST && !READ_ONCE(stopping));
	if (!again) {
		sweep_queue(READ_ONCE(sweep_ms));
		return;
	}
	busy_ms = div_u64(ktime_get_ns() - busy_from, NSEC_PER_MSEC);
	busy_ms = min_t(u64, busy_ms, TDBO_SWEEP_PERIOD_MS);
	sweep_queue((unsigned int)busy_ms * (SWEEP_SHARE - 1) + 1);
}

void tdbk_sweep_start(struct tdbo_owner *o)
{
	sweep_owner = o;
	mutex_lock(&sweep_lock);
	WRITE_ONCE(stopping, false);
	mutex_unlock(&sweep_lock);
	sweep_queue(READ_ONCE(sweep_ms));
}

void tdbk_sweep_stop(void)
{
	mutex_lock(&sweep_lock);
	WRITE_ONCE(stopping, true);
	mutex_unlock(&sweep_lock);
	cancel_delayed_work_sync(&sweep_work);
	sweep_owner = NULL;
}
