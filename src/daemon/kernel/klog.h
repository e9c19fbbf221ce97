/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * klog.h - the reader of tdb.ko's log ring (tdb/kdev.h, "THE
 * SUPERVISOR"; kind TDB_RING_LOG): tdbd in kernel mode maps it
 * read-only and takes each record out of it, whole, into private memory.
 *
 * The ring is the rings' layout (tdb/ring.h): a header page, then a
 * power-of-two data area of nlmsghdr-framed messages that never wrap
 * (an NLMSG_NOOP fills the end, or fewer than NLMSG_HDRLEN bytes are
 * skipped).  Each message is of type TDB_LOG_MSG and carries a WAL
 * record (src/wal/wal.h), or a fragment of one when nlmsg_flags has
 * TDB_LOG_F_MORE (the next messages continue it, the last without the
 * flag).  The kernel publishes `prod` (release); we load it (acquire)
 * and never write to the ring.  Nothing read is trusted: lengths are
 * checked against the ring and the record (wal_rec_check), and a
 * malformed ring is an error naming the index.
 *
 * No global state, no printing.  Not thread-safe (one reader).
 */
#ifndef TDBD_KLOG_H
#define TDBD_KLOG_H

#include <stddef.h>
#include <stdint.h>

#include "wal.h"

struct klog {
	const void *hdr;                /* struct tdb_ring_hdr, read-only */
	const unsigned char *data;
	uint32_t size, max_msg;
	uint64_t pos;                   /* next index to read */
	unsigned char *rec;             /* the record being gathered */
	size_t rec_len, rec_cap;
};

/* Attach to a mapped log ring (hdr page, then data of data_size bytes:
 * map_len = TDB_RING_HDR_SIZE + data size) and start reading at index
 * pos (the ring's `cons` when it was claimed).  -EPROTO with err if the
 * header is not a log ring's or does not fit map_len.  k is reset
 * whole: klog_free a reader that was used before.  err: a buffer of
 * errlen > 0 bytes, for both calls. */
int klog_attach(struct klog *k, const void *map, size_t map_len,
		uint64_t pos, char *err, size_t errlen);
/* The next whole record: 1 (*rec, *len: private memory valid until the
 * next call; *r decoded), 0 when no whole record is published yet, or
 * a negative errno (-EPROTO a bad frame, -EUCLEAN a bad record,
 * -ENOMEM) with err. */
int klog_next(struct klog *k, const void **rec, size_t *len,
	      struct wal_rec *r, char *err, size_t errlen);
/* The producer's index now (acquire). */
uint64_t klog_prod(const struct klog *k);
void klog_free(struct klog *k);

#endif
