/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kring.h - the kernel's side of a client's rings (include/tdb/ring.h):
 * tdb.ko consumes the submission ring and produces the completion ring
 * of each /dev/tdb client.  kring.c owns the ring memory and the
 * discipline; dev.c owns when it runs.
 *
 * Invariants (the same as src/ring/ring.c, the user-space side):
 *  - our own index lives in struct tdbk_ring and is only ever stored to
 *    the shared header, never loaded back from it;
 *  - the client's index is loaded once per use, with acquire, and
 *    checked against what is possible before it is used;
 *  - a request is copied once into private memory (msg) and only the
 *    copy is looked at;
 *  - a client that breaks the protocol kills its rings: `dead` is set,
 *    TDB_RING_F_OVERRUN is set in the header and every later call
 *    fails with -EPROTO.
 * Callers serialise all calls on one ring (dev.c's per-file mutex).
 */
#ifndef TDBK_KRING_H
#define TDBK_KRING_H

#include <linux/types.h>
#include <linux/netlink.h>

#include "tdb/ring.h"

struct tdbk_ring {
	struct tdb_ring_hdr *hdr;       /* vmalloc_user(): header, then data */
	u8 *data;
	size_t size;                    /* TDB_RING_HDR_SIZE + data_size */
	u32 kind, data_size, mask, max_msg;    /* private copies */
	u64 pos;        /* consumer: next read; producer: next write */
	u64 end;        /* consumer: the client's prod, as loaded and checked */
	u64 other;      /* producer: last valid cons of the client */
	u64 published;  /* producer: last index stored in hdr->prod */
	u32 reserved;   /* producer: bytes reserved, not committed (0: none) */
	u32 reserved_len;
	bool dead;
	const char *error;              /* static text of the violation */
	void *msg;      /* consumer: private copy of a request, max_msg bytes */
};

/*
 * Allocate and format a ring of data_size bytes (a power of two in
 * [TDB_RING_MIN_DATA, TDB_RING_MAX_DATA]).  max_msg is data_size / 2 as
 * with tdb_ring_format(), capped at TDB_PROTO_MSG_MAX (no valid message
 * is longer, and the consumer keeps a private buffer of that size).
 * 0 or -EINVAL / -ENOMEM.
 */
int tdbk_ring_init(struct tdbk_ring *r, u32 kind, u32 data_size);
void tdbk_ring_free(struct tdbk_ring *r);

/* Mark the ring dead (the client broke the protocol): OVERRUN in the
 * header, -EPROTO from now on.  Returns -EPROTO. */
int tdbk_ring_violation(struct tdbk_ring *r, const char *why);

/* --- consumer (submission ring) --- */

/* Load the client's prod once and check it: 0 or -EPROTO.  Messages
 * published after this are left for the next call. */
int tdbk_ring_load(struct tdbk_ring *r);
/*
 * The next request up to the loaded prod, copied into r->msg: its
 * length (nlmsg_len, >= NLMSG_HDRLEN), 0 when there is none, or -EPROTO
 * for a bad frame.  Padding (the skipped end, NLMSG_NOOP) is passed over.
 */
long tdbk_ring_pop(struct tdbk_ring *r);
/* Hand the consumed space back (store cons with release). */
void tdbk_ring_release(struct tdbk_ring *r);

/* --- producer (completion ring) --- */

/* Is there room for a message of len bytes (and the padding before it
 * at the wrap)?  Reads the client's cons; false when dead. */
bool tdbk_ring_has_room(struct tdbk_ring *r, size_t len);
/* Room for one message of at most len bytes, or NULL (no room, dead,
 * len > max_msg). */
void *tdbk_ring_reserve(struct tdbk_ring *r, size_t len);
/* Drop a reservation that will not be committed. */
void tdbk_ring_abort(struct tdbk_ring *r);
/* The message at the reservation is len bytes (<= the len reserved):
 * our nlmsg_len is written over whatever was built. */
void tdbk_ring_commit(struct tdbk_ring *r, size_t len);
/* Store prod with release.  True if anything new was published. */
bool tdbk_ring_publish(struct tdbk_ring *r);
/* Has the client left answers unread?  (prod published vs its cons,
 * loaded once; a nonsense cons counts as "yes" so poll() wakes it up
 * to find out.)  Callable without the ring's lock: it reads only
 * `published` (one u64) and the shared header. */
bool tdbk_ring_unread(const struct tdbk_ring *r);

#endif
