/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kernel.h - tdbd in kernel mode (`backend = kernel`): the supervisor of
 * tdb.ko (tdb/kdev.h, "THE SUPERVISOR"; docs/DURABILITY.md,
 * "Kernel-resident tables").  tdbd's owner and engine hold a MIRROR of
 * tdb.ko's tables, fed by tdb.ko's log ring; its WAL, checkpoints and
 * recovery are the daemon mode's, applied to the mirror.  No client
 * reaches tdbd in this mode (no socket is made).
 *
 *   kernel.c    the role: claim, restore or resume, the follower thread,
 *               what is durable told to tdb.ko (owns struct kernel)
 *   klog.c      the log ring's reader (klog.h; owns struct klog)
 *   krestore.c  the tables loaded into tdb.ko at a restore: from the
 *               checkpoint store (the WAL applied to it) or the mirror
 *
 * Dependencies.  Kernel mode may call durability (../durable/durable.h:
 * tdbd_durable_apply; the WAL's LSNs and writes through d->wal, wal.h),
 * the owner (the mirror), the ring core and codec (krestore.c), and
 * tdbd's logging (notify.h), clock and struct tdbd (tdbd.h).  It never
 * calls serving (../serve/: it has no clients).  Durability never calls
 * it: the WAL's flusher reaches tdbd_kernel_durable through the hook
 * main.c passes to tdbd_durable_start (tdbd_on_durable, ../durable.c).
 * main.c starts, stops and watches it (tdbd_kernel_start, _stop, _free,
 * _heartbeat, _status).
 */
#ifndef TDBD_KERNEL_H
#define TDBD_KERNEL_H

#include <stddef.h>
#include <stdint.h>

struct tdbd;

/* After tdbd_durable_start (the mirror is recovered, the WAL open):
 * open /dev/tdb (modprobe tdb first if it is missing), claim the
 * supervisor role, restore every table into tdb.ko (none resident) or
 * resume from the log ring (resident), and start the thread that
 * follows the log.  0, or a negative errno, logged with the reason. */
int tdbd_kernel_start(struct tdbd *d);
/* Stop following the log (what was read is written to the WAL and
 * synced, and said durable), then give up the role (close).  Before
 * tdbd_durable_stop. */
void tdbd_kernel_stop(struct tdbd *d);
/* Free what is left (after tdbd_durable_stop: the WAL's flusher, which
 * calls tdbd_kernel_durable, is gone). */
void tdbd_kernel_free(struct tdbd *d);
/* The WAL's flusher: records up to lsn are durable (TDB_IOC_SUP_DURABLE). */
void tdbd_kernel_durable(struct tdbd *d, uint64_t lsn);
/* The follower's last round (ns, tdbd_now_ns), for the watchdog. */
uint64_t tdbd_kernel_heartbeat(struct tdbd *d);
/* A STATUS= text: records followed, tdb.ko's clean-ups
 * (TDB_IOC_SUP_STATS). */
void tdbd_kernel_status(struct tdbd *d, char *buf, size_t len);

/* krestore.c: every table of the mirror into tdb.ko through fd (the
 * supervisor's file, claimed with nothing resident): *ntab tables and
 * *records records loaded.  0, or a negative errno with err naming the
 * table and the reason. */
int tdbd_kernel_restore(struct tdbd *d, int fd, unsigned int *ntab,
			uint64_t *records, char *err, size_t errlen);

/* krestore.c: the same from the checkpoint store (d->ckpt) instead of
 * the mirror, after recovery applied the WAL to it
 * (tdbd_durable_store_current): the data is read from LMDB's
 * file-backed pages, never copied into tdbd's memory.  A record tdb.ko
 * refuses is named in err by table and key. */
int tdbd_kernel_restore_store(struct tdbd *d, int fd, unsigned int *ntab,
			      uint64_t *records, char *err, size_t errlen);

/* The instance id in data_dir/kernel-instance, made (random, not 0)
 * and stored the first time.  0 or a negative errno with err. */
int tdbd_kernel_instance(const char *data_dir, uint64_t *id, char *err,
			 size_t errlen);

#endif
