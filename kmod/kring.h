/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kring.h - the kernel home of a /dev/tdb client's rings
 * (include/tdb/ring.h): tdb.ko consumes the submission ring and produces
 * the completion ring.  The index discipline is the shared core,
 * src/ring/ring.c (ring_core.h), compiled unchanged into tdb.ko; dev.c
 * calls it directly.  kring.c adds what only the kernel home has: ring
 * memory (vmalloc_user, mapped by dev.c), the private request buffer,
 * a consumer that yields the CPU on long runs of padding, and the
 * WARN on a misused commit.
 *
 * The kernel's rules, kept by the core: the client's index is loaded
 * once per use and checked; a request is copied once into private
 * memory (r->msg) and only the copy is looked at; a client that breaks
 * the protocol kills its rings (TDB_RING_F_OVERRUN in the header,
 * -EPROTO from every later call).  The kernel never sleeps on or wakes
 * a ring's futex (the rings are attached with no ops): a client runs
 * the kernel with TDB_IOC_ENTER and sleeps in poll(2), woken by dev.c.
 * Callers serialise all calls on one ring (dev.c's per-file mutex).
 *
 * Memory: a ring's pages (tdbk_ring_bytes: its header page and data,
 * up to 64 MiB + 4 KiB for /dev/tdb) are unswappable kernel memory no
 * memory cgroup pays for, so each ring counts in max_memory_mb
 * (platform.c, with the tables' extents, the feeds and the log ring)
 * from tdbk_ring_init() to tdbk_ring_free(), exactly once; another uid
 * than root may fill only 7/8 of it (tdbk_mem_charge_user).  The
 * per-uid bound (max_ring_memory_per_uid) is the owner's quota, charged
 * by dev.c before the rings are made.
 */
#ifndef TDBK_KRING_H
#define TDBK_KRING_H

#include <linux/types.h>

#include "ring_core.h"

/* The memory a ring of data_size bytes takes (header page and data,
 * page-rounded): what it counts in max_memory_mb, and what dev.c charges
 * to the client's uid. */
size_t tdbk_ring_bytes(u32 data_size);

/*
 * Allocate, format and attach a ring of data_size bytes (a power of two
 * in [TDB_RING_MIN_DATA, TDB_RING_MAX_DATA]): the kernel consumes a
 * TDB_RING_SUBMIT ring and produces a TDB_RING_COMPLETE one.  max_msg is
 * data_size / 2 as with tdb_ring_format(), capped at TDB_PROTO_MSG_MAX
 * (no valid message is longer, and the consumer keeps a private buffer
 * of that size).  Its memory is counted in max_memory_mb first; root
 * (reserve) may use the whole bound, another uid 7/8 of it.  0 or
 * -EINVAL / -ENOBUFS (past the bound: nothing allocated) / -ENOMEM.
 */
int tdbk_ring_init(struct tdb_ring *r, u32 kind, u32 data_size,
		   bool reserve);
/* Free a ring tdbk_ring_init() made, and uncount its memory. */
void tdbk_ring_free(struct tdb_ring *r);

/* platform.c: count bytes in max_memory_mb, for root (reserve) up to
 * it, for another uid up to 7/8 of it; 0 or -ENOBUFS (nothing counted).
 * Given back by tdbk_mem_uncharge() (transport.h). */
int tdbk_mem_charge_user(size_t bytes, bool reserve);

/* The next request up to the loaded prod (tdb_ring_load), copied into
 * r->msg: its length, 0 when there is none, or -EPROTO.  Padding is
 * passed over, with cond_resched() on long runs of it. */
long tdbk_ring_pop(struct tdb_ring *r);
/* tdb_ring_commit, which cannot fail for a reservation dev.c made (a
 * failure WARNs and drops the reservation). */
void tdbk_ring_commit(struct tdb_ring *r, size_t len);
/* Store prod with release.  True if anything new was published. */
bool tdbk_ring_publish(struct tdb_ring *r);

#endif
