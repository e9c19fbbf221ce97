/* SPDX-License-Identifier: MIT */
/*
 * tdb/ring.h - the shared ring ABI (stable; version TDB_RING_VERSION).
 *
 * A ring carries a byte stream of netlink messages from one producer to
 * its consumer(s), through memory both map (a memfd tdbd makes, or
 * vmalloc'd pages tdb.ko maps through /dev/tdb).  Four kinds share one
 * layout:
 *
 *   TDB_RING_SUBMIT   client -> owner requests, one consumer
 *   TDB_RING_COMPLETE owner -> client replies, one consumer
 *   TDB_RING_FEED     owner -> any number of watchers (change feed);
 *                     the producer never waits, readers that are lapped
 *                     see an overrun and resynchronise
 *   TDB_RING_LOG      tdb.ko -> its supervisor (tdbd), the change log
 *                     (tdb/kdev.h, "THE SUPERVISOR"): records in
 *                     messages of type TDB_LOG_MSG; the reader maps it
 *                     read-only and reports what is durable through an
 *                     ioctl, and the producer moves `cons` itself
 *
 * Memory: one 4 KiB header page, then `data_size` bytes of data (a power
 * of two, at least 4 KiB), so the whole mapping is TDB_RING_HDR_SIZE +
 * data_size bytes.  The data pages are mapped writable by the producer
 * only; consumers map them read-only.  The header page is writable by
 * both sides of a SUBMIT/COMPLETE ring (each writes only its own cache
 * line) and read-only for FEED and LOG readers.
 *
 * Indices are free-running 64-bit byte counts; position = index &
 * (data_size - 1).  Each side keeps its own index privately and only
 * publishes it here; it never trusts the value it reads back.
 *
 * Messages: each starts with a struct nlmsghdr, lengths are padded to
 * NLMSG_ALIGN (4 bytes), and a message never wraps.  When a message does
 * not fit before the end of the data area, the producer fills the rest
 * with one NLMSG_NOOP message (nlmsg_len = bytes to the end) and starts
 * at position 0; if fewer than NLMSG_HDRLEN (16) bytes are left, they
 * are skipped with no message at all.  A message is at most `max_msg`
 * bytes (at most data_size / 2).  Every reader of these frames walks
 * them with src/ring/ring_core.h's tdb_frame_at, which checks each
 * header against the area and the published end before using it.
 *
 * Publication (acquire/release, as io_uring and AF_XDP): the producer
 * writes messages, then stores `prod` with release; the consumer loads
 * `prod` with acquire, copies the messages out, then stores `cons` with
 * release, which hands the space back.
 *
 * Sleeping: a consumer that finds the ring empty reads `futex`, then
 * sets TDB_RING_F_CONS_WAITING in `flags` (a full barrier), looks at
 * `prod` again, and only then sleeps on `futex` (FUTEX_WAIT, shared, on
 * the value it read before setting the flag).  A producer publishes,
 * issues a full barrier, and if the flag is set increments `futex` and
 * wakes it (or writes the consumer's eventfd instead, when one was agreed
 * at attach time).  A producer waiting for space does the same with
 * TDB_RING_F_PROD_WAITING.  In the steady state nobody sleeps, so nobody
 * makes a system call.
 *
 * FEED rings: `tail` is the index of the oldest message still intact;
 * before the producer overwrites older messages it advances `tail` (to a
 * message boundary, retiring about 1/16 of the ring at a time so that the
 * store and its barrier are rare) and only then writes.  A reader copies a message out,
 * then re-reads `tail`: if tail passed the message's start, the copy may
 * be torn and the reader has been lapped.  Every FEED message carries a
 * sequence number in nlmsg_seq, one more than the previous message's.
 * The producer bumps `futex` and wakes it on every publish: readers map
 * the header read-only and cannot say they sleep.
 *
 * Zero-copy readers (SUBMIT rings only; tdb/proto.h TABLE_MAP): the
 * header page of a client's submission ring also holds its reader slot,
 * two lines the ring discipline does not touch.  `read_section` is the
 * client's: it adds 1 when it enters a read section of a mapped table
 * (odd: inside) and 1 when it leaves (even: outside), with a full
 * barrier after the entry and a release store at the exit.
 * `read_expired` is the owner's: it adds 1 each time it stops waiting
 * for this client's section because the section outlived the owner's
 * lease (a dead, stopped or scribbling reader), and, while it does not
 * wait for this client (after an expiry, until the client asks for a
 * map again and a backoff is over: "benched"), each time it reuses
 * memory while the slot is odd.  The owner reuses memory a mapped reader
 * could see only once every reader's slot has moved on from the odd
 * value it showed, or expired, or was told so; it reads `read_section`
 * once per check and trusts nothing else in it, and never reads
 * `read_expired` back.  A reader therefore loads `read_expired` after
 * entering and again (after a read barrier) before leaving: if it
 * changed, the memory it read may have been reused, and what it read
 * must be thrown away (and read again through the rings).  A reader
 * that sees `read_expired` move asks for a map again (TABLE_MAP) to be
 * waited for again (src/owner/readers.c, "Benched readers").
 */
#ifndef TDB_RING_H
#define TDB_RING_H

#include <linux/types.h>

#define TDB_RING_MAGIC     0x474e495242445421ULL   /* "!TDBRING" */
#define TDB_RING_VERSION   1
#define TDB_RING_HDR_SIZE  4096u
#define TDB_RING_MIN_DATA  4096u
#define TDB_RING_MAX_DATA  (1u << 30)
#define TDB_RING_CACHELINE 64

enum tdb_ring_kind {
	TDB_RING_SUBMIT = 1,
	TDB_RING_COMPLETE = 2,
	TDB_RING_FEED = 3,
	TDB_RING_LOG = 4,       /* tdb.ko's change log (tdb/kdev.h) */
};

/* flags */
#define TDB_RING_F_CONS_WAITING (1u << 0)  /* consumer asleep on futex */
#define TDB_RING_F_PROD_WAITING (1u << 1)  /* producer waits for space */
#define TDB_RING_F_OVERRUN      (1u << 2)  /* one side found the other
					    * breaking the protocol and
					    * stopped using the ring */
#define TDB_RING_F_EVENTFD      (1u << 3)  /* COMPLETE, tdbd: the client
					    * waits on the eventfd ATTACH
					    * passed too (tdbc_fd): wake
					    * it besides the futex */

struct tdb_ring_hdr {
	/* line 0: written once by the creator, then constant */
	__u64 magic;
	__u32 version;
	__u32 kind;            /* enum tdb_ring_kind */
	__u32 hdr_size;        /* TDB_RING_HDR_SIZE: data starts here */
	__u32 data_size;       /* power of two */
	__u32 max_msg;         /* largest message, bytes */
	__u32 reserved0[9];
	/* line 1: the producer's */
	__u64 prod __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 reserved1[14];
	/* line 2: the consumer's (unused by FEED rings) */
	__u64 cons __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 reserved2[14];
	/* line 3: sleeping and waking */
	__u32 flags __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 futex;
	__u32 reserved3[14];
	/* line 4: FEED only, the oldest intact message.  Its own line: it
	 * moves once per retired chunk, while `prod` moves every publish,
	 * and every reader re-reads it after every message. */
	__u64 tail __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 reserved4[14];
	/* line 5: SUBMIT only, the client's reader slot: odd inside a read
	 * section of a mapped table (see "Zero-copy readers" above) */
	__u64 read_section __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 reserved5[14];
	/* line 6: SUBMIT only, the owner's: sections it stopped waiting for */
	__u64 read_expired __attribute__((aligned(TDB_RING_CACHELINE)));
	__u32 reserved6[14];
};

#endif
