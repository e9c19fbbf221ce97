/* SPDX-License-Identifier: MIT */
/*
 * tdb/kdev.h - the /dev/tdb ABI of tdb.ko (stable; TDB_DEV_VERSION).
 *
 * tdb.ko keeps tables in the kernel.  A client reaches them two ways:
 *
 *  - /dev/tdb (this header): each open file is one client.  It asks for
 *    its submission and completion rings with TDB_IOC_ATTACH, maps them
 *    with mmap(2), writes requests into the submission ring (tdb/ring.h,
 *    tdb/proto.h: the same bytes as with tdbd) and calls TDB_IOC_ENTER,
 *    which consumes the submission ring and answers into the completion
 *    ring before it returns (like io_uring_enter without SQPOLL).  Change
 *    feeds of watched tables are mapped read-only from the same file.
 *    close() is the dead-client hook: open transactions are aborted,
 *    watches dropped, rings freed.
 *  - generic netlink, family TDB_GENL_NAME ("tdb"): the same messages
 *    with the family's dynamic id in nlmsg_type.  Changing state needs
 *    CAP_NET_ADMIN; the multicast group TDB_GENL_MCGRP carries every
 *    change (PUT, DEL, TABLE_DROP notifications with TDB_A_TABLE) and
 *    joining it needs CAP_NET_ADMIN too.
 *
 * MAPPINGS.  Every ring of a client has an mmap offset (a multiple of
 * TDB_DEV_SLOT): the ring's header page is at that offset, its data
 * right after it (offset + TDB_RING_HDR_SIZE).  A client may map any
 * page-aligned part of a ring, in one mmap or several, MAP_SHARED only:
 *   submission ring  header and data writable
 *   completion ring  header writable (the client's `cons` line), data
 *                    read-only
 *   change feed      read-only, and only while the client watches it
 * A mapping that asks for more (PROT_WRITE where it is not allowed,
 * bytes past the ring) fails with EACCES or EINVAL.  The kernel never
 * trusts a byte of what is mapped writable: it keeps its own indices,
 * reads the client's once, clamps them and copies each request once
 * before it validates it.
 *
 * ENTER.  ioctl(fd, TDB_IOC_ENTER, 0) returns 0, or a negative errno:
 *   -ENXIO   no rings attached yet
 *   -EPROTO  the client broke the ring protocol earlier (a scribbled
 *            index, a bad frame); its rings are dead (TDB_RING_F_OVERRUN
 *            is set in both headers) and only close() is left
 * The kernel stops consuming when the completion ring lacks room for the
 * largest answer (the cq's max_msg); a dump (SCAN, TABLE_LIST) goes on
 * at the next ENTER once the client has drained the completion ring.
 * Every answer is in the completion ring when ENTER returns, unless the
 * ring was full, or the answer is HELD: under a supervisor with sync
 * ALWAYS (below), the answer to a change waits until its record is
 * durable; poll(2) reports POLLIN when it may go out, and the next
 * ENTER writes it (held answers keep their order; with 4096 held, ENTER
 * takes no more requests).
 *
 * POLL.  poll(2) reports POLLIN when the completion ring holds answers,
 * when held answers may go out, or when a feed the client watches has
 * been written since its last TDB_IOC_ENTER: call ENTER, look at the feeds, then poll, and no
 * change is missed.
 *
 * WATCH over the submission ring is acked with NLMSGERR_ATTR_COOKIE of
 * struct tdb_dev_watch_cookie (12 bytes): the feed's sequence number
 * where the watch starts and the feed's mmap offset.  (tdbd's WATCH
 * cookie is the 4-byte sequence number alone.)
 *
 * TABLE MAPS (zero-copy reads; tdb/proto.h TABLE_MAP, tdb/ring.h
 * "Zero-copy readers").  TABLE_MAP over the submission ring is acked
 * with struct tdb_map_cookie (tdb/proto.h): the table's mmap offset
 * (TDB_DEV_MAP_SLOTS slots from TDB_DEV_SLOT_MAP_FIRST on), its
 * max_extents and map_gen.  The client maps it read-only:
 *   mmap(NULL, max_extents * 2 MiB, PROT_READ, MAP_SHARED, fd, offset)
 * (any page-aligned part of it will do).  PROT_WRITE is refused (EACCES)
 * and mprotect() cannot add it; MAP_PRIVATE is EINVAL, as for rings; a
 * file that was granted no map (TABLE_MAP) or may not read the table
 * gets EACCES, a table that is gone ENOENT, more than max_extents * 2 MiB
 * EINVAL.  Extent n of the region is at n * 2 MiB.  A page is mapped
 * when first touched, and only while the table exists and this file may
 * read it: after the table is dropped the kernel takes the mapped pages
 * away and every page of the range then reads as zeros (the region
 * magic fails: the reader drops the map and reads through the rings),
 * never SIGBUS.  Touching an extent the region header does not count
 * yet (nextents) is SIGBUS: a reader only looks at extents below
 * nextents, which are always backed.  The rules of a read section
 * (read_section / read_expired in the submission ring's header, the
 * region header's commit_seq and map_gen) are tdb/ring.h's.
 */
#ifndef TDB_KDEV_H
#define TDB_KDEV_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define TDB_DEV_PATH      "/dev/tdb"
#define TDB_DEV_VERSION   1
/* libtdbclient: TDB_BACKEND=kernel forces /dev/tdb (and fails if it is
 * not there), TDB_BACKEND=daemon forces tdbd's socket; unset, /dev/tdb
 * is used when it exists and no socket path was given. */
#define TDB_BACKEND_ENV   "TDB_BACKEND"
#define TDB_GENL_MCGRP    "changes"

/* Ring sizes a client may ask for: data areas are powers of two in
 * [TDB_RING_MIN_DATA, TDB_DEV_RING_MAX]. */
#define TDB_DEV_RING_MAX  (64u << 20)
/* mmap offsets: slot n is at n * TDB_DEV_SLOT.  Slot 0 is the
 * submission ring, slot 1 the completion ring, slots 2 and up feeds,
 * TDB_DEV_SLOT_MAP_FIRST and up table maps. */
#define TDB_DEV_SLOT      (1ULL << 32)
#define TDB_DEV_OFF_SQ    (0ULL)
#define TDB_DEV_OFF_CQ    (1ULL << 32)
/* Table maps: each table has TDB_DEV_MAP_SLOTS slots (64 GiB, the
 * largest region) from TDB_DEV_SLOT_MAP_FIRST on; feeds are below it
 * (src/owner keeps the same numbers). */
#define TDB_DEV_SLOT_MAP_FIRST 0x40000000ULL
#define TDB_DEV_MAP_SLOTS      16ULL
/* The supervisor's log ring (TDB_IOC_SUP_CLAIM's log_offset): in slot
 * 0, past any submission ring (at most TDB_DEV_RING_MAX + a header
 * page), since every whole slot below 2^31 (offsets stay under 2^63) is
 * a ring's, a feed's or a table map's. */
#define TDB_DEV_OFF_LOG   (1ULL << 31)

struct tdb_dev_attach {
	/* in */
	__u32 version;          /* TDB_DEV_VERSION */
	__u32 flags;            /* 0 */
	__u32 sq_data_size;     /* power of two */
	__u32 cq_data_size;     /* power of two; for answers of any size,
				 * at least 2 * TDB_PROTO_MSG_MAX rounded
				 * up (4 MiB) */
	/* out */
	__u64 sq_offset;        /* TDB_DEV_OFF_SQ */
	__u64 cq_offset;        /* TDB_DEV_OFF_CQ */
	__u32 sq_max_msg;       /* also in the rings' headers */
	__u32 cq_max_msg;
	__u64 reserved[4];      /* 0 */
};

struct tdb_dev_watch_cookie {
	__u32 seq;              /* the feed's next sequence number */
	__u32 offset_lo;        /* the feed's mmap offset, in two halves */
	__u32 offset_hi;        /* (the cookie is only 4-byte aligned) */
} __attribute__((packed));

#define TDB_IOC_MAGIC   0xDB
/* Create this file's rings (once; -EBUSY the second time). */
#define TDB_IOC_ATTACH  _IOWR(TDB_IOC_MAGIC, 1, struct tdb_dev_attach)
/* Consume the submission ring, answer into the completion ring. */
#define TDB_IOC_ENTER   _IO(TDB_IOC_MAGIC, 2)

/*
 * THE SUPERVISOR (tdbd in kernel mode; docs/KERNEL.md, "The
 * supervisor").  One process at a time may claim the role on its
 * /dev/tdb file; it keeps tdb.ko's tables durable:
 *
 *  - TDB_IOC_SUP_CLAIM: CAP_SYS_ADMIN only (-EPERM).  -EBUSY if another
 *    file holds the role (holder_pid says whose; the struct is copied
 *    out with the error).  -ESTALE if the tables belong to another
 *    instance (another data directory; kernel_instance says which, the
 *    struct is copied out too).  -EEXIST if tdb.ko holds tables
 *    made while no supervisor was ever attached (they are in no log).
 *    When kernel_instance comes back 0 the tables have never been
 *    restored since tdb.ko was loaded: tdb.ko is RECOVERING (ordinary
 *    clients' requests fail with -EAGAIN, "tdb is recovering: ...")
 *    until TDB_IOC_SUP_READY; the supervisor creates the tables and
 *    loads their records through its own rings meanwhile (its changes
 *    are not logged then: they are durable already), and the kernel's
 *    log starts at next_lsn.  Otherwise the tables are resident and
 *    the log continues its own numbering.  The role ends at the close()
 *    of that file (the supervisor's death): tables and log stay.
 *  - The LOG RING: every change tdb.ko applies (a single change or a
 *    whole transaction, a table created or dropped) is one record in
 *    the WAL's record encoding (src/wal/wal.h: crc, len, lsn, type,
 *    payload), carried in a ring of kind TDB_RING_LOG (tdb/ring.h) at
 *    log_offset (TDB_DEV_OFF_LOG): the supervisor maps it read-only
 *    (the header page and the data).  Each ring message is an nlmsghdr
 *    of type TDB_LOG_MSG followed by a record, or by a fragment of one
 *    when nlmsg_flags has TDB_LOG_F_MORE (the next message continues
 *    it); nlmsg_len is exact, and the fragments' payloads end to end
 *    are the record without its padding to 8 bytes (len bytes).
 *    tdb.ko publishes `prod`; it moves `cons` itself, past records
 *    covered by TDB_IOC_SUP_DURABLE only, so a restarted supervisor
 *    finds every record it had not made durable (from `cons`, whose
 *    first record is log_first).  A change that finds no room is
 *    refused before it applies (-ENOBUFS, "the change log is full:
 *    ...").  Nothing is logged before the first claim, nor while
 *    RECOVERING.
 *  - Answers: sync ALWAYS holds the answer to a change until DURABLE
 *    covers its record (ENTER, POLL above); with no supervisor
 *    attached it is answered -ETIMEDOUT ("the change is applied but
 *    not yet durable: ...") after deadline_ms.  BATCH, NONE: at once.
 *    The last claim's sync and deadline stay after its supervisor
 *    left.  Generic netlink: the answer is parked (sendmsg returns at
 *    once) and sent when DURABLE covers it; past deadline_ms,
 *    supervisor or not, it is -ETIMEDOUT.
 *  - TDB_IOC_SUP_DURABLE(lsn): records up to lsn are on disk (clamped
 *    to what was logged; never moves back).  With sync ALWAYS, answers
 *    held for changes up to lsn go out.
 *  - TDB_IOC_SUP_READ(pos): the supervisor has read the log ring up to
 *    index pos; poll(2) on its file reports POLLIN while prod > pos.
 *  - TDB_IOC_SUP_VERSION(v): the supervisor's version counter (the
 *    last version its WAL and checkpoint know of, deleted keys' too):
 *    every version tdb.ko gives from now on is > v (it never lowers
 *    the counter).  Said before READY at a restore, whose PUTs carry
 *    each record's version (TDB_A_SET_VERSION: allowed on the
 *    supervisor's file only, -EPERM elsewhere), so a version never
 *    repeats for a key across a reload of tdb.ko.
 *  - TDB_IOC_SUP_READY: the restore is done; clients may come.
 *  - TDB_IOC_SUP_STATS: what tdb.ko did that the supervisor reports
 *    (clean-ups of dead clients, held answers, the log's use).
 */
#define TDB_SUP_SYNC_ALWAYS 0u  /* answers wait for TDB_IOC_SUP_DURABLE */
#define TDB_SUP_SYNC_BATCH  1u  /* answered once logged */
#define TDB_SUP_SYNC_NONE   2u
#define TDB_SUP_DEADLINE_MAX_MS 3600000u        /* a claim's deadline_ms */

#define TDB_LOG_MSG     0x21    /* nlmsg_type of a log ring message */
#define TDB_LOG_F_MORE  0x100   /* nlmsg_flags: a fragment, more follow */

struct tdb_sup_claim {
	/* in */
	__u32 version;          /* TDB_DEV_VERSION */
	__u32 flags;            /* 0 */
	__u32 sync;             /* TDB_SUP_SYNC_* */
	__u32 deadline_ms;      /* how long a change that must be durable
				 * waits while no supervisor is attached,
				 * then -ETIMEDOUT (0: the module's) */
	__u64 next_lsn;         /* LSN of the first record, when the tables
				 * are restored now (kernel_instance 0) */
	__u64 instance;         /* the supervisor's data, not 0 */
	/* out */
	__u64 kernel_instance;  /* whose tables are resident (0: none yet) */
	__u64 log_first;        /* LSN of the oldest record in the ring */
	__u64 log_next;         /* LSN the next record gets */
	__u64 log_offset;       /* mmap offset of the log ring */
	__u64 log_size;         /* its header page and data, bytes */
	__u32 tables;           /* tables resident */
	__u32 holder_pid;       /* -EBUSY: the supervisor's pid */
	__u64 reserved[4];      /* 0 */
};

struct tdb_sup_stats {
	__u64 cleanups;         /* dead clients cleaned up (release()) */
	__u64 txns_aborted;     /* their transactions aborted */
	__u64 watches_dropped;  /* their watches dropped */
	__u64 held;             /* answers held for durability now */
	__u64 log_records;      /* records logged since load */
	__u64 log_bytes;        /* ring bytes in use now */
	__u64 log_refused;      /* changes refused: no room in the ring */
	__u64 timed_out;        /* held answers that timed out */
	__u64 reserved[8];
};

#define TDB_IOC_SUP_CLAIM   _IOWR(TDB_IOC_MAGIC, 3, struct tdb_sup_claim)
#define TDB_IOC_SUP_DURABLE _IOW(TDB_IOC_MAGIC, 4, __u64)
#define TDB_IOC_SUP_READ    _IOW(TDB_IOC_MAGIC, 5, __u64)
#define TDB_IOC_SUP_READY   _IO(TDB_IOC_MAGIC, 6)
#define TDB_IOC_SUP_STATS   _IOR(TDB_IOC_MAGIC, 7, struct tdb_sup_stats)
#define TDB_IOC_SUP_VERSION _IOW(TDB_IOC_MAGIC, 8, __u64)

#endif
