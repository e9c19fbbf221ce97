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
 */
#ifndef TDBK_KRING_H
#define TDBK_KRING_H

#include <linux/types.h>

#include "ring_core.h"

/*
 * Allocate, format and attach a ring of data_size bytes (a power of two
 * in [TDB_RING_MIN_DATA, TDB_RING_MAX_DATA]): the kernel consumes a
 * TDB_RING_SUBMIT ring and produces a TDB_RING_COMPLETE one.  max_msg is
 * data_size / 2 as with tdb_ring_format(), capped at TDB_PROTO_MSG_MAX
 * (no valid message is longer, and the consumer keeps a private buffer
 * of that size).  0 or -EINVAL / -ENOMEM.
 */
int tdbk_ring_init(struct tdb_ring *r, u32 kind, u32 data_size);
void tdbk_ring_free(struct tdb_ring *r);

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
