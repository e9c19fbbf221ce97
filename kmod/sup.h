/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sup.h - the supervisor (tdbd in kernel mode) inside tdb.ko: the change
 * log (klog.c) and the role (sup.c); include/tdb/kdev.h, "THE
 * SUPERVISOR", is the ABI, docs/KERNEL.md "The supervisor" the story.
 */
#ifndef TDBK_SUP_H
#define TDBK_SUP_H

#include <linux/types.h>

struct file;
struct tdbo_log_size;
struct tdbo_table;
struct vm_area_struct;
struct tdb_sup_stats;
struct tdbo_hold_policy;

/* --- klog.c: the log ring and the owner's log hooks ------------------ */

int tdbk_log_init(void);                /* check log_ring_mb */
void tdbk_log_exit(void);               /* free the ring */

int tdbk_log_reserve(void *arg, const struct tdbo_log_size *sz,
		     const char **msg);
void tdbk_log_cancel(void *arg, const struct tdbo_log_size *sz);
int tdbk_log_restore_begin(void *arg, const char **msg);
void tdbk_log_restore_end(void *arg);
void tdbk_log_begin(void *arg, u64 version);
void tdbk_log_op(void *arg, const struct tdbo_table *t, bool del,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 u64 deadline);
u64 tdbk_log_commit(void *arg, const struct tdbo_log_size *sz);
u64 tdbk_log_create(void *arg, const struct tdbo_table *t,
		    const struct tdbo_log_size *sz);
u64 tdbk_log_drop(void *arg, const struct tdbo_table *t,
		  const struct tdbo_log_size *sz);

/* Logging on or off: waits for every change between its reservation
 * and its record (the gate), so a change is logged whole or not at
 * all.  Allocates the ring the first time (-ENOMEM). */
int tdbk_log_switch(bool on);
/* Forget every record and number the next one next_lsn (a restore:
 * nothing resident is in the log). */
void tdbk_log_reset(u64 next_lsn);
/* Records up to lsn are durable: clamp, never back; give their ring
 * space back.  Returns the durable LSN now. */
u64 tdbk_log_durable(u64 lsn);
u64 tdbk_log_durable_lsn(void);
void tdbk_log_range(u64 *first, u64 *next);
u64 tdbk_log_prod(void);
size_t tdbk_log_map_size(void);
int tdbk_log_mmap(struct vm_area_struct *vma, u64 in);
void tdbk_log_stats(struct tdb_sup_stats *s);
bool tdbk_log_counters(u64 *records, u64 *last_lsn, u64 *durable);
bool tdbk_log_allocated(void);

/* --- sup.c: the role --------------------------------------------------- */

struct tdbo_owner;
int tdbk_sup_init(struct tdbo_owner *o);
void tdbk_sup_exit(void);
long tdbk_sup_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
/* The file's release: the role ends if it held it. */
void tdbk_sup_release(struct file *file);
bool tdbk_sup_is(const struct file *file);
/* An ordinary client's request now: 0, or -EAGAIN with *msg (tdb is
 * recovering, or require_supervisor and none said READY yet). */
int tdbk_sup_refuse(const struct file *file, const char **msg);
/* Under klog.c's gate, before a change applies: 0, or -EAGAIN while
 * recovering for anyone but the supervisor's process (a request that
 * passed tdbk_sup_refuse just before a claim). */
int tdbk_sup_may_change(const char **msg);
/* The supervisor's poll: POLLIN while prod > what it said it read. */
__poll_t tdbk_sup_poll(struct file *file, struct poll_table_struct *wait);
/* The log published a record (any context that may take a spinlock). */
void tdbk_sup_wake(void);
/* The sync mode and the client deadline (ms) in force. */
u32 tdbk_sup_sync(void);
u32 tdbk_sup_deadline_ms(void);
bool tdbk_sup_attached(void);

/* The policy for answers held until durable, both transports' (see
 * sup.c); pol_arg NULL or a "going away" flag.  Each transport reports
 * the held count's moves (SUP_STATS `held`). */
extern const struct tdbo_hold_policy tdbk_hold_policy;
void tdbk_held_account(int delta);
/* Whether a held answer with this deadline (jiffies; 0: none) is late. */
bool tdbk_hold_late_at(unsigned long deadline);

/* dev.c: answers held for durability may go out up to lsn (and those
 * past their deadline time out). */
void tdbk_dev_durable(u64 lsn);
/* file claimed the role: its client may use TDB_A_SET_VERSION. */
void tdbk_dev_sup_claimed(struct file *file);

/* genl.c: the same for generic netlink, whose acks are parked in
 * serve's held queue of the sending socket: release_work sends what is
 * durable (the supervisor never waits for a genl lock); and count them. */
void tdbk_genl_durable(void);

#endif
