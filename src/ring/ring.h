/*
 * ring.h - producing and consuming netlink messages through a shared
 * ring (the ABI is include/tdb/ring.h; read its comment first).
 *
 * A struct tdb_ring is one side's private view of a ring: the sizes it
 * accepted at attach time and its own index.  Nothing it needs is read
 * twice from shared memory: the consumer reads the producer's index once
 * per call, clamps it, copies each message once into private memory and
 * only then validates it; the producer keeps its own index and re-reads
 * the consumer's only to learn about free space, checking it too.  A peer
 * that breaks the protocol gets -EPROTO and a message (tdb_ring_error());
 * the ring is then dead for this side.
 *
 * One thread at a time per struct tdb_ring.  Functions return negative
 * errno values and never print.
 */
#ifndef TDB_RING_RING_H
#define TDB_RING_RING_H

#include <linux/netlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tdb/ring.h"

struct tdb_ring {
	struct tdb_ring_hdr *hdr;   /* shared */
	unsigned char *data;        /* shared, data_size bytes */
	uint32_t kind, data_size, mask, max_msg;   /* private copies */
	uint64_t pos;               /* producer: next write; consumer: next read */
	uint64_t published;         /* producer: last index stored in hdr->prod */
	uint64_t other;             /* producer: last valid cons; feed: tail */
	uint64_t reserved;          /* producer: bytes reserved, not committed */
	size_t reserved_len;        /* producer: the len asked for */
	uint32_t seq;               /* feed: next sequence number */
	bool seq_known;             /* feed reader: seq is meaningful */
	bool from_set;              /* feed reader: skip until from_seq */
	uint32_t from_seq;
	int eventfd;                /* wake the consumer with this, or -1 */
	bool dead;
	const char *error;          /* static text of the violation */
	unsigned char *msg;         /* consumer: private copy, max_msg bytes */
};

/* Bytes to map for a ring with this data size. */
static inline size_t tdb_ring_map_size(uint32_t data_size)
{
	return (size_t)TDB_RING_HDR_SIZE + data_size;
}

/*
 * Write a fresh header into mem (the creator does this once, before any
 * peer maps it).  max_msg 0 means data_size / 2.  -EINVAL for a size that
 * is not a power of two in [TDB_RING_MIN_DATA, TDB_RING_MAX_DATA].
 */
int tdb_ring_format(void *mem, uint32_t kind, uint32_t data_size,
		    uint32_t max_msg);

/*
 * Attach to a mapped ring as producer or consumer.  hdr and data may be
 * separate mappings (their protections differ); map_size is the size of
 * the data mapping.  The header is checked once (magic, version, kind,
 * sizes agree with map_size) and its sizes are copied; -EPROTO with
 * tdb_ring_error() if it is bad.  A consumer allocates its private
 * message buffer here (-ENOMEM).
 */
int tdb_ring_attach_producer(struct tdb_ring *r, void *hdr, void *data,
			     size_t data_map_size, uint32_t kind);
int tdb_ring_attach_consumer(struct tdb_ring *r, void *hdr,
			     const void *data, size_t data_map_size,
			     uint32_t kind);
void tdb_ring_detach(struct tdb_ring *r);

/* The static text of the last protocol violation, or NULL. */
const char *tdb_ring_error(const struct tdb_ring *r);

/* Wake the consumer through this eventfd instead of the futex. */
void tdb_ring_set_eventfd(struct tdb_ring *r, int fd);

/* --- producer ----------------------------------------------------------
 * reserve: room for a message of up to len bytes, contiguous, in the ring
 * (padding the end of the data area with NLMSG_NOOP when needed).  Build
 * the message there (e.g. mnl_nlmsg_put_header + mnl_attr_put_check with
 * len as the buffer size), then commit it with its real length (<= len).
 * Nothing is visible to the consumer until publish.  A FEED producer
 * never fails for space: it moves `tail` past old messages.
 *   NULL and errno: EAGAIN (full: consume or wait), EMSGSIZE (len over
 *   max_msg), EPROTO (the consumer broke the protocol), EINVAL (a reserve
 *   is already open).
 */
void *tdb_ring_reserve(struct tdb_ring *r, size_t len);
/* Would tdb_ring_reserve(r, len) succeed now?  Changes nothing (a FEED
 * producer always has room for up to max_msg). */
bool tdb_ring_has_room(struct tdb_ring *r, size_t len);
/* -EINVAL if len is not within what was reserved or is < NLMSG_HDRLEN.
 * FEED rings: commit stamps nlmsg_seq with the next sequence number. */
int tdb_ring_commit(struct tdb_ring *r, size_t len);
/* Drop the open reservation. */
void tdb_ring_abort(struct tdb_ring *r);
/* Make everything committed visible and wake the consumer if it sleeps.
 * Returns 1 if a wake-up was sent, 0 if none was needed, < 0 on error. */
int tdb_ring_publish(struct tdb_ring *r);
/* Wait until len bytes can be reserved: 0, -ETIMEDOUT, -EPROTO.
 * timeout_ms < 0 waits for ever. */
int tdb_ring_wait_space(struct tdb_ring *r, size_t len, int timeout_ms);
/* Copy a finished message in (reserve + memcpy + commit). */
int tdb_ring_put(struct tdb_ring *r, const struct nlmsghdr *nlh);

/* --- consumer ----------------------------------------------------------
 * consume: hand up to `budget` messages to fn, each a private, validated
 * copy (nlmsg_len within max_msg and within what the producer published;
 * NOOP padding is skipped).  fn returns 0 to go on, or a negative errno
 * to stop (that message counts as consumed).  Space is handed back once,
 * at the end.  Returns the number of messages handed to fn, fn's error,
 * or -EPROTO when the producer broke the protocol.
 */
typedef int tdb_ring_msg_fn(void *arg, const struct nlmsghdr *nlh);
int tdb_ring_consume(struct tdb_ring *r, unsigned int budget,
		     tdb_ring_msg_fn *fn, void *arg);
/* Bytes published and not yet consumed (0 if none), or -EPROTO. */
long tdb_ring_pending(struct tdb_ring *r);
/*
 * Sleep until the ring has a message: sets the waiting flag, re-checks,
 * FUTEX_WAITs.  0 when something may be there, -ETIMEDOUT, -EINTR,
 * -EPROTO.  Spurious returns are possible: consume again.
 */
int tdb_ring_wait(struct tdb_ring *r, int timeout_ms);

/* --- feed readers ------------------------------------------------------
 * A reader attaches as a consumer of a FEED ring (read-only mappings)
 * and reads at its own position, starting at the newest message (what
 * was published before the attach is not seen).  feed_read hands up to budget messages
 * to fn; if the producer lapped the reader it returns -EOVERFLOW once,
 * having moved the reader to the oldest intact message (the caller
 * resynchronises, e.g. by scanning the table); *lost (if not NULL) gets
 * the number of messages skipped, from the sequence numbers.
 */
int tdb_feed_read(struct tdb_ring *r, unsigned int budget,
		  tdb_ring_msg_fn *fn, void *arg, uint64_t *lost);
/* Sleep until the feed moves past the reader's position. */
int tdb_feed_wait(struct tdb_ring *r, int timeout_ms);
/*
 * Read from the message with sequence number `seq` on (e.g. the feed's
 * next number when a watch began, which the owner reports), instead of
 * from the newest: the reader goes back to the oldest intact message and
 * skips those before seq.  If seq was overwritten already, the first
 * tdb_feed_read returns -EOVERFLOW with *lost = how many are gone.
 * -EPROTO if the header is out of range.
 */
int tdb_feed_start_at(struct tdb_ring *r, uint32_t seq);

#endif
