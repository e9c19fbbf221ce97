// SPDX-License-Identifier: GPL-2.0-only
/*
 * sup.c - the supervisor role of tdb.ko (include/tdb/kdev.h, "THE
 * SUPERVISOR"; docs/KERNEL.md, "The supervisor"): TDB_IOC_SUP_CLAIM,
 * DURABLE, READ, READY, STATS and VERSION on a /dev/tdb file, RECOVERING (and
 * require_supervisor) for ordinary clients, and the end of the role at
 * the holder file's release.
 *
 * Invariants:
 *  - sup_lock guards the role (holder, instance, recovering, sync,
 *    deadline).  The flags ordinary requests test (recovering,
 *    ready_once) are also read without it (READ_ONCE): a request that
 *    races a claim is refused or served whole, and a change that races
 *    the log's switch is logged whole or not (klog.c's gate).
 *  - At most one file holds the role; it ends at that file's release.
 *    Tables and the log ring outlive it: the next supervisor with the
 *    same instance finds every record not reported durable.
 *  - Logging is on from the first claim on, except while RECOVERING
 *    (the supervisor's own restore is durable already).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "tdb/kdev.h"
#include "owner.h"
#include "serve.h"
#include "sup.h"

static unsigned int require_supervisor;
module_param(require_supervisor, uint, 0644);
MODULE_PARM_DESC(require_supervisor,
		 "1: clients are refused (EAGAIN) until a supervisor (tdbd "
		 "in kernel mode) has restored the tables (default 0)");

static unsigned int client_deadline_ms = 10000;
module_param(client_deadline_ms, uint, 0644);
MODULE_PARM_DESC(client_deadline_ms,
		 "how long the answer to a change that must be durable "
		 "(sync always) waits for it, then ETIMEDOUT; "
		 "ms (default 10000, as tdbd's client-deadline)");

static DEFINE_MUTEX(sup_lock);
static DECLARE_WAIT_QUEUE_HEAD(sup_wq);
static struct tdbo_owner *sup_owner;
static struct file *sup_file;           /* the holder */
static pid_t sup_pid;
static u64 sup_instance;                /* whose tables are resident */
static u32 sup_sync = TDB_SUP_SYNC_ALWAYS;
static u32 sup_deadline;                /* the claim's, 0: the module's */
static bool recovering;
static bool ready_once;
static u64 read_pos;                    /* TDB_IOC_SUP_READ */

int tdbk_sup_init(struct tdbo_owner *o)
{
	sup_owner = o;
	return tdbk_log_init();
}

void tdbk_sup_exit(void)
{
	tdbk_log_exit();
	sup_owner = NULL;
}

bool tdbk_sup_is(const struct file *file)
{
	return READ_ONCE(sup_file) == file;
}

bool tdbk_sup_attached(void)
{
	return READ_ONCE(sup_file) != NULL;
}

u32 tdbk_sup_sync(void)
{
	return READ_ONCE(sup_sync);
}

u32 tdbk_sup_deadline_ms(void)
{
	u32 d = READ_ONCE(sup_deadline);

	return d ? d : READ_ONCE(client_deadline_ms);
}

int tdbk_sup_refuse(const struct file *file, const char **msg)
{
	if (file && tdbk_sup_is(file))
		return 0;
	if (READ_ONCE(recovering)) {
		*msg = "tdb is recovering: tdbd is restoring the tables "
		       "(try again shortly)";
		return -EAGAIN;
	}
	if (READ_ONCE(require_supervisor) && !READ_ONCE(ready_once)) {
		*msg = "tdb is waiting for its supervisor: tdbd has not "
		       "restored the tables yet (require_supervisor=1)";
		return -EAGAIN;
	}
	return 0;
}

int tdbk_sup_may_change(const char **msg)
{
	if (READ_ONCE(recovering) &&
	    task_tgid_nr(current) != READ_ONCE(sup_pid)) {
		*msg = "tdb is recovering: tdbd is restoring the tables "
		       "(try again shortly)";
		return -EAGAIN;
	}
	return 0;
}

void tdbk_sup_wake(void)
{
	if (wq_has_sleeper(&sup_wq))
		wake_up_interruptible_poll(&sup_wq, EPOLLIN | EPOLLRDNORM);
}

__poll_t tdbk_sup_poll(struct file *file, poll_table *wait)
{
	poll_wait(file, &sup_wq, wait);
	return tdbk_log_prod() > READ_ONCE(read_pos) ?
	       EPOLLIN | EPOLLRDNORM : 0;
}

/* --- CLAIM ---------------------------------------------------------------- */

static int claim_check(const struct tdb_sup_claim *c)
{
	unsigned int i;

	if (c->version != TDB_DEV_VERSION)
		return -EPROTONOSUPPORT;
	if (c->flags || c->sync > TDB_SUP_SYNC_NONE || !c->instance ||
	    !c->next_lsn || c->deadline_ms > TDB_SUP_DEADLINE_MAX_MS)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(c->reserved); i++)
		if (c->reserved[i])
			return -EINVAL;
	return 0;
}

/* Under sup_lock: take the role for file, or say why not. */
static int claim_locked(struct file *file, struct tdb_sup_claim *c)
{
	bool fresh;
	int err;

	if (sup_file) {
		c->holder_pid = sup_pid;
		pr_warn_ratelimited("TDB_IOC_SUP_CLAIM of pid %d refused: "
				    "supervisor already attached: pid %d\n",
				    task_tgid_nr(current), sup_pid);
		return -EBUSY;
	}
	if (sup_instance && sup_instance != c->instance) {
		c->kernel_instance = sup_instance;
		pr_warn_ratelimited("TDB_IOC_SUP_CLAIM of pid %d refused: "
				    "tdb.ko's tables belong to another data "
				    "directory (instance %016llx, not "
				    "%016llx)\n", task_tgid_nr(current),
				    sup_instance, c->instance);
		return -ESTALE;
	}
	/* A restore that did not finish (its supervisor died) starts
	 * again: the tables are not all there. */
	fresh = !sup_instance || recovering;
	if (fresh) {
		/* Recovering first, then the gate: changes in flight
		 * finish (unlogged), later ones are refused (klog.c asks
		 * tdbk_sup_may_change), so the count below is final. */
		WRITE_ONCE(recovering, true);
		err = tdbk_log_switch(false);
		if (!err && !sup_instance && tdbo_table_count(sup_owner)) {
			pr_warn_ratelimited("TDB_IOC_SUP_CLAIM of pid %d "
					    "refused: tdb.ko holds tables made "
					    "while no supervisor was attached "
					    "(they are in no log)\n",
					    task_tgid_nr(current));
			err = -EEXIST;
		}
		if (err) {
			if (!sup_instance)
				WRITE_ONCE(recovering, false);
			return err;
		}
		tdbk_log_reset(c->next_lsn);
		c->kernel_instance = 0;
	} else {
		err = tdbk_log_switch(true);
		if (err)
			return err;
		c->kernel_instance = sup_instance;
	}
	sup_instance = c->instance;
	sup_sync = c->sync;
	sup_deadline = c->deadline_ms;
	WRITE_ONCE(sup_pid, task_tgid_nr(current));
	WRITE_ONCE(sup_file, file);
	/* its restore PUTs carry each record's version (SET_VERSION) */
	tdbk_dev_sup_claimed(file);
	tdbk_log_range(&c->log_first, &c->log_next);
	c->log_offset = TDB_DEV_OFF_LOG;
	c->log_size = tdbk_log_map_size();
	c->tables = tdbo_table_count(sup_owner);
	c->holder_pid = sup_pid;
	read_pos = 0;
	pr_info("supervisor attached: pid %d (instance %016llx, %s, log "
		"LSN %llu..%llu)\n", sup_pid, sup_instance,
		fresh ? "restoring" : "tables resident", c->log_first,
		c->log_next);
	return 0;
}

static long do_claim(struct file *file, void __user *arg)
{
	struct tdb_sup_claim c;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	err = claim_check(&c);
	if (err)
		return err;
	c.kernel_instance = c.log_first = c.log_next = 0;
	c.log_offset = c.log_size = 0;
	c.tables = c.holder_pid = 0;
	mutex_lock(&sup_lock);
	err = claim_locked(file, &c);
	mutex_unlock(&sup_lock);
	if (err && err != -EBUSY && err != -ESTALE)
		return err;
	/* -EBUSY and -ESTALE too: holder_pid says whose the role is,
	 * kernel_instance whose tables are resident. */
	if (copy_to_user(arg, &c, sizeof(c)))
		return -EFAULT;
	return err;
}

/* The durable LSN moved (or the supervisor left): answers held on
 * /dev/tdb and generic netlink acks parked until durable look again. */
static void durable_moved(u64 lsn)
{
	tdbk_dev_durable(lsn);
	tdbk_genl_durable();
}

void tdbk_sup_release(struct file *file)
{
	mutex_lock(&sup_lock);
	if (sup_file == file) {
		pr_info("supervisor detached: pid %d%s\n", sup_pid,
			recovering ? " (while restoring: tdb.ko stays "
			"recovering until a supervisor says READY)" : "");
		/* its sync mode and deadline stay: they say how changes
		 * wait while no supervisor is attached */
		WRITE_ONCE(sup_file, NULL);
		sup_pid = 0;
	}
	mutex_unlock(&sup_lock);
	/* held answers past their deadline time out now */
	durable_moved(0);
}

/* --- the hold policy of tdb.ko's transports (dev.c, genl.c) -------------
 * One policy for every answer tdb.ko holds until its change is durable:
 * held while the claim's sync is ALWAYS and the record's LSN is past
 * DURABLE; released in order as DURABLE moves; past its deadline (the
 * claim's deadline_ms, else client_deadline_ms) answered ETIMEDOUT,
 * supervisor or not, so that no client waits without bound on a
 * supervisor that is stopped or gone.  The change stays applied and
 * logged either way.  pol_arg: NULL, or a transport's "going away" flag
 * (genl at unload: its parked answers end at once).
 */
static atomic64_t held_now = ATOMIC64_INIT(0);
static atomic64_t held_timed_out = ATOMIC64_INIT(0);

void tdbk_held_account(int delta)
{
	atomic64_add(delta, &held_now);
}

static bool hold_must(void *arg, u64 lsn)
{
	return lsn && lsn != U64_MAX &&
	       tdbk_sup_sync() == TDB_SUP_SYNC_ALWAYS &&
	       lsn > tdbk_log_durable_lsn();
}

static u64 hold_upto(void *arg)
{
	return tdbk_log_durable_lsn();
}

/* jiffies, never 0 (serve's "no deadline") */
static u64 hold_deadline(void *arg)
{
	unsigned long d = jiffies + msecs_to_jiffies(tdbk_sup_deadline_ms());

	return d ? d : 1;
}

bool tdbk_hold_late_at(unsigned long deadline)
{
	return deadline && time_after_eq(jiffies, deadline);
}

static int hold_late(void *arg, u64 deadline, const char **msg)
{
	const bool *going = arg;

	if (going && READ_ONCE(*going)) {
		*msg = "the change is applied but not yet durable: tdb.ko is "
		       "being unloaded";
	} else if (!tdbk_hold_late_at((unsigned long)deadline)) {
		return 0;
	} else {
		*msg = tdbk_sup_attached() ?
			"the change is applied but not yet durable: the "
			"supervisor (tdbd) did not report it durable within "
			"the client deadline" :
			"the change is applied but not yet durable: no "
			"supervisor (tdbd) is attached";
	}
	atomic64_inc(&held_timed_out);
	return -ETIMEDOUT;
}

static int hold_no_room(void *arg, u64 lsn, const char **msg)
{
	*msg = "the change is applied, but tdb.ko had no memory to hold its "
	       "answer until it is durable";
	return -ENOMEM;
}

const struct tdbo_hold_policy tdbk_hold_policy = {
	.must_hold = hold_must,
	.upto = hold_upto,
	.deadline = hold_deadline,
	.late = hold_late,
	.no_room = hold_no_room,
};

/* --- the holder's ioctls ------------------------------------------------ */

static long do_ready(void)
{
	int err = 0;

	mutex_lock(&sup_lock);
	if (recovering) {
		err = tdbk_log_switch(true);
		if (!err) {
			WRITE_ONCE(recovering, false);
			pr_info("tables restored by pid %d: clients may "
				"come\n", sup_pid);
		}
	}
	if (!err)
		WRITE_ONCE(ready_once, true);
	mutex_unlock(&sup_lock);
	return err;
}

static long do_stats(void __user *arg)
{
	struct tdb_sup_stats s;

	memset(&s, 0, sizeof(s));
	tdbo_owner_cleanup_counts(sup_owner, &s.cleanups, &s.txns_aborted,
				  &s.watches_dropped);
	tdbk_log_stats(&s);
	s.held = atomic64_read(&held_now);
	s.timed_out = atomic64_read(&held_timed_out);
	return copy_to_user(arg, &s, sizeof(s)) ? -EFAULT : 0;
}

long tdbk_sup_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *p = (void __user *)arg;
	u64 v;

	if (cmd == TDB_IOC_SUP_CLAIM)
		return do_claim(file, p);
	if (cmd == TDB_IOC_SUP_STATS)
		return do_stats(p);
	if (!tdbk_sup_is(file))
		return -EPERM;          /* not the supervisor */
	switch (cmd) {
	case TDB_IOC_SUP_DURABLE:
		if (copy_from_user(&v, p, sizeof(v)))
			return -EFAULT;
		durable_moved(tdbk_log_durable(v));
		return 0;
	case TDB_IOC_SUP_READ:
		if (copy_from_user(&v, p, sizeof(v)))
			return -EFAULT;
		WRITE_ONCE(read_pos, v);
		return 0;
	case TDB_IOC_SUP_READY:
		if (arg)
			return -EINVAL;
		return do_ready();
	case TDB_IOC_SUP_VERSION:
		/* the supervisor's counter (tdbo_version_last): tdb.ko
		 * gives no version at or below it (docs/KERNEL.md) */
		if (copy_from_user(&v, p, sizeof(v)))
			return -EFAULT;
		tdbo_version_floor(sup_owner, v);
		return 0;
	}
	return -ENOTTY;
}
