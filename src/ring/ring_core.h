/* SPDX-License-Identifier: MIT */
/*
 * ring_core.h - the ring index discipline, once, for both homes: tdbd
 * and libtdbclient (src/ring/ring_user.c adds futex/eventfd sleeping,
 * malloc and errno; the API they use is ring.h) and tdb.ko
 * (kmod/kring.c adds vmalloc'd ring memory; /dev/tdb wakes through
 * poll).  The ABI is include/tdb/ring.h; read its comment first.
 *
 * Freestanding C on src/core/platform.h, like the engine: no libc or
 * kernel call but memcpy/memset (tests/check_symbols.sh proves it), no
 * #ifdef for the home.  The netlink frame (struct nlmsghdr, NLMSG_*)
 * comes from <linux/netlink.h>, the UAPI header that is part of the ABI
 * and declares no function; each home's include path resolves it (the
 * system's UAPI header in user space, the kernel's own in kbuild), as
 * src/proto does with <linux/genetlink.h>.
 *
 * A struct tdb_ring is one side's private view of a ring: the sizes it
 * accepted at attach time and its own index.  Nothing it needs is read
 * twice from shared memory: the consumer reads the producer's index once
 * per round (tdb_ring_load), clamps it, copies each message once into
 * private memory (r->msg) and only then validates it; the producer keeps
 * its own index and re-reads the consumer's only to learn about free
 * space, checking it too.  A peer that breaks the protocol makes every
 * later call fail with -EPROTO; tdb_ring_error() says why.
 *
 * Sleeping is the home's (ring.h: futex or eventfd; tdb.ko: a client
 * sleeps in poll(2) on /dev/tdb and the kernel never sleeps on a ring).
 * Waking goes through r->ops: NULL means this home never looks at the
 * *_WAITING flags nor wakes through the header (tdb.ko), and a FEED
 * publish only bumps `futex`.
 *
 * One thread at a time per struct tdb_ring (tdb_ring_unread() aside).
 * Functions return negative errno values and never print.
 */
#ifndef TDB_RING_RING_CORE_H
#define TDB_RING_RING_CORE_H

#include "platform.h"
#include <linux/netlink.h>

#include "tdb/ring.h"

struct tdb_ring;

/* --- frames ------------------------------------------------------------
 * The one walk over a ring's data area (tdb/ring.h, "Messages"): each
 * frame is a message, an NLMSG_NOOP filler, or the unmarked end of the
 * area when fewer than NLMSG_HDRLEN bytes are left there.  Every walk of
 * frames goes through tdb_frame_at: the consumer and the feed reader
 * (ring.c), the FEED producer over its own messages (ring.c), tdb.ko's
 * change log over its own ring (kmod/klog.c) and tdbd's reader of that
 * ring (src/daemon/kernel/klog.c, a read-only mapping tdb.ko writes).
 *
 * Contract (what it trusts): the area's geometry (data, size: a power
 * of two, max_msg) is the caller's private copy; `i` and `end` are the
 * caller's own indices, with end already loaded and checked against the
 * peer's rules.  The header at i is read from the area once, into the
 * caller's *h (private memory), and only that copy is checked and
 * returned: the shared bytes may change under us (a client's ring, a
 * lapping FEED producer) and the answer stays consistent with the copy.
 * The body is not read: a caller that needs it copies it afterwards,
 * with the checked h->nlmsg_len (the consumer; tdbd's log reader, though
 * tdb.ko does not overwrite a record before tdbd reports it durable), or
 * reads it in place where nobody else writes it (tdb.ko's own rings).
 *
 * Every byte read lies in the area: the header only when at least
 * NLMSG_HDRLEN bytes are left before the end of the area; and every
 * step moves forward by at least 1 byte and at most end - i (an end
 * more than size bytes from i is refused), so a walk from i to end takes
 * at most end - i steps and cannot loop on a zero length.
 */
struct tdb_frames {
	const unsigned char *data;
	uint32_t size;          /* data_size: a power of two */
	uint32_t max_msg;       /* longest message (fillers may be longer) */
};

/* tdb_frame_at's rare cases, out of its straight line: the frame at i
 * is not a whole header below end (the unmarked end of the area, or a
 * bad end), or its header, already in *h, breaks the layout. */
static inline long tdb_frame_edge(const struct tdb_frames *a, uint32_t rem,
				  uint64_t avail, struct nlmsghdr *h,
				  const char **why)
{
	if (avail > a->size)
		*why = "index is more than a ring away from the end";
	else if (rem >= NLMSG_HDRLEN)
		*why = "producer index is inside a message header";
	else if (avail < rem)
		*why = "producer index is inside the skipped end of the ring";
	else {
		h->nlmsg_len = rem;
		h->nlmsg_type = NLMSG_NOOP;
		return rem;
	}
	return -EPROTO;
}

static inline long tdb_frame_bad(uint32_t len, uint32_t rem, uint64_t avail,
				 const char **why)
{
	if (len < NLMSG_HDRLEN)
		*why = "message is shorter than its header";
	else if (len > rem)
		*why = "message runs past the end of the ring";
	else if (NLMSG_ALIGN(len) > avail)
		*why = "message runs past the producer index";
	else
		*why = "message is longer than the ring's max_msg";
	return -EPROTO;
}

/*
 * The frame at index i (end: the published end).  Returns its step, the
 * bytes to the next frame (> 0), with *h its checked header: a message
 * (NLMSG_HDRLEN <= nlmsg_len <= max_msg, within the area and below
 * end), or padding, nlmsg_type NLMSG_NOOP (for the unmarked end, *h is
 * made up: nlmsg_len = the bytes skipped).  -EPROTO with *why (static
 * text; *why is only written then) when the frame breaks the layout;
 * *h then holds what was read.  Inline: it runs once per message in
 * the consumer, whose straight line is one header copy and one branch
 * before it and one after.
 */
static inline long tdb_frame_at(const struct tdb_frames *a, uint64_t i,
				uint64_t end, struct nlmsghdr *h,
				const char **why)
{
	uint32_t off = (uint32_t)(i & (a->size - 1));
	uint32_t rem = a->size - off, len;
	uint64_t avail = end - i;

	/* avail within [NLMSG_HDRLEN, size]: one unsigned compare */
	if (tdb_unlikely(avail - NLMSG_HDRLEN >
			 a->size - NLMSG_HDRLEN ||
			 rem < NLMSG_HDRLEN))
		return tdb_frame_edge(a, rem, avail, h, why);
	memcpy(h, a->data + off, NLMSG_HDRLEN);
	len = h->nlmsg_len;                     /* read once, from the copy */
	if (tdb_unlikely(len < NLMSG_HDRLEN || len > rem ||
			 NLMSG_ALIGN(len) > avail ||
			 (len > a->max_msg && h->nlmsg_type != NLMSG_NOOP)))
		return tdb_frame_bad(len, rem, avail, why);
	return NLMSG_ALIGN(len);
}

/*
 * The next message at or after *i, below end: padding is passed over
 * (*i moves past it) and *i is left at the message, *h its header.
 * Returns the message's step, 0 when there is none before end, or
 * -EPROTO (*why; *i at the bad frame).  At most end - *i steps.
 */
static inline long tdb_frame_next(const struct tdb_frames *a, uint64_t *i,
				  uint64_t end, struct nlmsghdr *h,
				  const char **why)
{
	while (*i != end) {
		long step = tdb_frame_at(a, *i, end, h, why);

		if (step < 0 || h->nlmsg_type != NLMSG_NOOP)
			return step;
		*i += (uint64_t)step;
	}
	return 0;
}

/* What a home supplies to wake the other side. */
struct tdb_ring_ops {
	/*
	 * The peer said it sleeps: flag is TDB_RING_F_CONS_WAITING or
	 * TDB_RING_F_PROD_WAITING (the core has cleared it from the header
	 * and bumped `futex`), or 0 after a FEED publish (futex bumped;
	 * every reader).  1 if a wake-up was sent, < 0 on error.
	 */
	int (*wake)(struct tdb_ring *r, uint32_t flag);
};

struct tdb_ring {
	struct tdb_ring_hdr *hdr;   /* shared */
	unsigned char *data;        /* shared, data_size bytes */
	uint32_t kind, data_size, mask, max_msg;   /* private copies */
	uint64_t pos;       /* producer: next write; consumer: next read */
	uint64_t published; /* producer: last index stored in hdr->prod */
	uint64_t other;     /* producer: last valid cons; feed: tail */
	uint64_t end;       /* consumer: prod as loaded and checked */
	uint32_t reserved;  /* producer: bytes reserved, not committed */
	uint32_t reserved_len;      /* producer: the len asked for */
	uint32_t seq;       /* feed: next sequence number */
	bool seq_known;     /* feed reader: seq is meaningful */
	bool from_set;      /* feed reader: skip until from_seq */
	uint32_t from_seq;
	bool dead;
	const char *error;  /* static text of the violation */
	unsigned char *msg; /* consumer: private copy, max_msg bytes, the
			     * home's memory */
	const struct tdb_ring_ops *ops;   /* NULL: no wakes (see above) */
	int eventfd;        /* the user home's: wake through it, or -1 */
};

enum tdb_ring_role { TDB_RING_PRODUCER, TDB_RING_CONSUMER };

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
 * Attach to a mapped ring.  hdr and data may be separate mappings;
 * data_map_size is the size of the data mapping.  The header is checked
 * once (magic, version, kind, sizes agree with data_map_size) and its
 * sizes are copied; -EPROTO and tdb_ring_error() if it is bad.  A FEED
 * producer that finds messages goes on with their sequence numbers.  A
 * consumer needs r->msg (max_msg bytes) set by the home before it reads.
 */
int tdb_ring_attach(struct tdb_ring *r, void *hdr, const void *data,
		    size_t data_map_size, uint32_t kind,
		    enum tdb_ring_role role, const struct tdb_ring_ops *ops);

/* The static text of the last protocol violation, or NULL. */
const char *tdb_ring_error(const struct tdb_ring *r);
/* The peer (or the home, for a reason of its own) broke the protocol:
 * the ring is dead for this side, TDB_RING_F_OVERRUN is set in a
 * SUBMIT/COMPLETE header.  Returns -EPROTO. */
int tdb_ring_violation(struct tdb_ring *r, const char *why);

/* --- producer ----------------------------------------------------------
 * reserve: room for a message of up to len bytes, contiguous (padding the
 * end of the data area with NLMSG_NOOP when needed).  Build it there,
 * commit it with its real length (<= len); nothing is visible to the
 * consumer until publish.  A FEED producer never fails for space: it
 * moves `tail` past the oldest messages first.
 *   NULL and *err (err may be NULL): -EAGAIN (full), -EMSGSIZE (len over
 *   max_msg), -EPROTO (the consumer broke the protocol), -EINVAL (a
 *   reserve is open, or len < NLMSG_HDRLEN).
 */
void *tdb_ring_reserve_err(struct tdb_ring *r, size_t len, int *err);
/* Would a reserve of len succeed now?  Changes nothing (a FEED producer
 * always has room for up to max_msg). */
bool tdb_ring_has_room(struct tdb_ring *r, size_t len);
/* -EINVAL if len is not within what was reserved or is < NLMSG_HDRLEN.
 * Our nlmsg_len is written over whatever was built, the alignment
 * padding is zeroed; FEED rings: nlmsg_seq is the next sequence number. */
int tdb_ring_commit(struct tdb_ring *r, size_t len);
/* Drop the open reservation. */
void tdb_ring_abort(struct tdb_ring *r);
/* Make everything committed visible and wake the consumer through
 * r->ops if it sleeps.  1 if a wake-up was sent, 0 if none, < 0. */
int tdb_ring_publish(struct tdb_ring *r);
/* Copy a finished message in (reserve + memcpy + commit). */
int tdb_ring_put_msg(struct tdb_ring *r, const struct nlmsghdr *nlh);
/*
 * Before a producer sleeps for space: publish, read `futex` into *v,
 * set TDB_RING_F_PROD_WAITING, look again.  0 when len fits now (no
 * sleep), 1 to sleep on `futex` while it equals *v, -EMSGSIZE, -EPROTO.
 */
int tdb_ring_space_prepare(struct tdb_ring *r, size_t len, uint32_t *v);

/* --- consumer ----------------------------------------------------------
 * One round: load the producer's index once (tdb_ring_load), take
 * messages up to it (tdb_ring_pop), hand the space back once
 * (tdb_ring_release).  tdb_ring_consume does all three.
 */
int tdb_ring_load(struct tdb_ring *r);
/*
 * The next message up to the loaded index, copied into r->msg and
 * validated (nlmsg_len within max_msg, the ring and what was
 * published): its length; 0 when there is none or *budget frames
 * (padding counts: a producer of nothing but NOOPs cannot keep us) were
 * walked; -EPROTO.  Each frame walked takes one from *budget.
 */
long tdb_ring_pop(struct tdb_ring *r, unsigned int *budget);
/* Store cons (release) and wake a producer that waits for space. */
void tdb_ring_release(struct tdb_ring *r);
/*
 * consume: hand up to `budget` messages to fn, each a private, validated
 * copy (NOOP padding skipped, counted in the budget).  fn returns 0 to go
 * on, or a negative errno to stop (that message counts as consumed).
 * Returns the number of messages handed to fn, fn's error, or -EPROTO.
 */
typedef int tdb_ring_msg_fn(void *arg, const struct nlmsghdr *nlh);
int tdb_ring_consume(struct tdb_ring *r, unsigned int budget,
		     tdb_ring_msg_fn *fn, void *arg);
/* Bytes published and not yet consumed (0 if none), or -EPROTO. */
long tdb_ring_pending(struct tdb_ring *r);
/*
 * Before a consumer sleeps: read `futex` into *v, set
 * TDB_RING_F_CONS_WAITING, look at prod again.  1 to sleep on `futex`
 * while it equals *v, 0 when something is there (flag taken back),
 * -EPROTO.
 */
int tdb_ring_wait_prepare(struct tdb_ring *r, uint32_t *v);
/* Producer side, without the ring's lock (reads only `published`, one
 * word, and the header): has the consumer left messages unread?  A
 * nonsense cons counts as yes, so that the consumer looks. */
bool tdb_ring_unread(const struct tdb_ring *r);

/* --- feed readers ------------------------------------------------------
 * A reader attaches as a consumer of a FEED ring (read-only mappings)
 * and reads at its own position, starting at the newest message.
 * feed_read hands up to budget messages to fn; if the producer lapped
 * the reader it returns -EOVERFLOW once, having moved the reader to the
 * oldest intact message; *lost (if not NULL) gets the number of messages
 * skipped, from the sequence numbers.
 */
int tdb_feed_read(struct tdb_ring *r, unsigned int budget,
		  tdb_ring_msg_fn *fn, void *arg, uint64_t *lost);
/*
 * Read from the message with sequence number `seq` on instead of from
 * the newest.  If seq was overwritten already, the first tdb_feed_read
 * returns -EOVERFLOW with *lost = how many are gone.  -EPROTO if the
 * header is out of range.
 */
int tdb_feed_start_at(struct tdb_ring *r, uint32_t seq);
/* Before a reader sleeps: *v = `futex`; 1 to sleep on it, 0 when the
 * feed moved past the reader already, -EPROTO. */
int tdb_feed_wait_prepare(struct tdb_ring *r, uint32_t *v);

#endif
