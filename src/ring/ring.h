/* SPDX-License-Identifier: MIT */
/*
 * ring.h - producing and consuming netlink messages through a shared
 * ring, in user space (tdbd, libtdbclient).  The ABI is
 * include/tdb/ring.h; read its comment first.
 *
 * The index discipline (struct tdb_ring, format, reserve/commit/publish,
 * consume, the feed reader) is the freestanding core that tdb.ko
 * compiles too: ring_core.h (ring.c).  This header adds the user-space
 * home (ring_user.c): attaching with futex/eventfd wake-ups and a
 * malloc'd message buffer, errno-style reserve, and sleeping.
 *
 * Nothing a side needs is read twice from shared memory: the consumer
 * reads the producer's index once per call, clamps it, copies each
 * message once into private memory and only then validates it; the
 * producer keeps its own index and re-reads the consumer's only to learn
 * about free space, checking it too.  A peer that breaks the protocol
 * gets -EPROTO and a message (tdb_ring_error()); the ring is then dead
 * for this side.
 *
 * One thread at a time per struct tdb_ring.  Functions return negative
 * errno values and never print.
 */
#ifndef TDB_RING_RING_H
#define TDB_RING_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring_core.h"

/* The user home's wake-ups (FUTEX_WAKE, or the consumer's eventfd): for
 * code that calls the core's tdb_ring_attach itself (a FEED producer
 * shared with tdb.ko, which passes its own). */
extern const struct tdb_ring_ops tdb_ring_user_ops;

/*
 * Attach to a mapped ring as producer or consumer (tdb_ring_attach with
 * tdb_ring_user_ops).  A consumer allocates its private message
 * buffer here (-ENOMEM).
 */
int tdb_ring_attach_producer(struct tdb_ring *r, void *hdr, void *data,
			     size_t data_map_size, uint32_t kind);
int tdb_ring_attach_consumer(struct tdb_ring *r, void *hdr,
			     const void *data, size_t data_map_size,
			     uint32_t kind);
void tdb_ring_detach(struct tdb_ring *r);

/* Wake the consumer through this eventfd instead of the futex. */
void tdb_ring_set_eventfd(struct tdb_ring *r, int fd);

/* --- producer ----------------------------------------------------------
 * tdb_ring_reserve_err (ring_core.h) with errno: NULL and errno EAGAIN
 * (full: consume or wait), EMSGSIZE (len over max_msg), EPROTO (the
 * consumer broke the protocol), EINVAL (a reserve is already open).
 * Then tdb_ring_commit, tdb_ring_publish (ring_core.h).
 */
static inline void *tdb_ring_reserve(struct tdb_ring *r, size_t len)
{
	int err;
	void *p = tdb_ring_reserve_err(r, len, &err);

	if (!p)
		errno = -err;
	return p;
}
/* Wait until len bytes can be reserved: 0, -ETIMEDOUT, -EPROTO.
 * timeout_ms < 0 waits for ever. */
int tdb_ring_wait_space(struct tdb_ring *r, size_t len, int timeout_ms);
/* Copy a finished message in (reserve + memcpy + commit). */
int tdb_ring_put(struct tdb_ring *r, const struct nlmsghdr *nlh);

/* --- consumer ----------------------------------------------------------
 * tdb_ring_consume, tdb_ring_pending: ring_core.h.
 *
 * Sleep until the ring has a message: sets the waiting flag, re-checks,
 * FUTEX_WAITs (or polls the eventfd).  0 when something may be there,
 * -ETIMEDOUT, -EINTR, -EPROTO.  Spurious returns are possible: consume
 * again.
 */
int tdb_ring_wait(struct tdb_ring *r, int timeout_ms);

/* --- feed readers ------------------------------------------------------
 * tdb_feed_read, tdb_feed_start_at: ring_core.h.
 * Sleep until the feed moves past the reader's position.
 */
int tdb_feed_wait(struct tdb_ring *r, int timeout_ms);

#endif
