/*
 * quota.h - what each uid holds in tdbd, and in all, against the limits
 * of tdbd.conf (docs/CONFIG.md, "Limits").
 *
 * Every resource a client can make tdbd hold for it is charged to a uid
 * here before it is taken and uncharged when it is given back:
 *
 *   kind          unit     per uid (key)                in all (key)
 *   Q_CLIENTS     clients  max-clients-per-uid          max-clients
 *   Q_TABLES      tables   max-tables-per-uid           TDBD_TABLES_MAX
 *   Q_RESERVE     bytes    max-reserve-per-uid          max-reserve
 *   Q_TXN_BYTES   bytes    max-txn-memory-per-uid       max-txn-memory
 *   Q_SNAP_BYTES  bytes    max-snapshot-memory-per-uid  (the caller's)
 *
 * Rules: uid 0 is exempt from the per-uid limits; the last eighth of
 * every limit in all is kept for uid 0 (another uid is refused at 7/8 of
 * it), so root can always connect, create a table, buffer a transaction.
 * A charge is all or nothing.  The limits are read at each charge, so a
 * reload applies to the next one; lowering a limit takes nothing back.
 */
#ifndef TDBD_QUOTA_H
#define TDBD_QUOTA_H

#include <stdint.h>

struct tdbd;

enum tdbd_quota_kind { Q_CLIENTS, Q_TABLES, Q_RESERVE, Q_TXN_BYTES,
		       Q_SNAP_BYTES, Q_KINDS };

int tdbd_quota_init(struct tdbd *d);
/* After everything was uncharged (workers and tables gone). */
void tdbd_quota_fini(struct tdbd *d);

/* 0, or -EDQUOT (per uid) / -ENOSPC or -ENOBUFS (global) with *msg
 * naming the key; nothing is charged then. */
int tdbd_quota_charge(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		      uint64_t n, const char **msg);
void tdbd_quota_uncharge(struct tdbd *d, uint32_t uid,
			 enum tdbd_quota_kind k, uint64_t n);
/* Would tdbd_quota_charge refuse?  (The same answer, nothing charged:
 * for a caller that charges later under a lock that orders all charges
 * of kind k, as table creation does under wlock.) */
int tdbd_quota_check(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		     uint64_t n, const char **msg);
/* Charge without refusing (recovery restores what was there: it never
 * refuses for quota).  Only fails for lack of memory (-ENOMEM), and then
 * charges the total only. */
int tdbd_quota_force(struct tdbd *d, uint32_t uid, enum tdbd_quota_kind k,
		     uint64_t n);
/* What uid holds of k now (uid (uint32_t)-1: the total). */
uint64_t tdbd_quota_used(struct tdbd *d, uint32_t uid,
			 enum tdbd_quota_kind k);

#endif
