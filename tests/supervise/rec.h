/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rec.h - the tests' stand-in for tdb.ko's side of the supervisor ABI:
 * WAL records encoded as tdb.ko writes them (src/wal/wal.h's format),
 * and a log ring (tdb/ring.h, kind TDB_RING_LOG; tdb/kdev.h framing:
 * TDB_LOG_MSG messages, TDB_LOG_F_MORE fragments, NOOP padding at the
 * end of the data area) produced in plain memory.
 */
#ifndef TDB_TEST_SUPERVISE_REC_H
#define TDB_TEST_SUPERVISE_REC_H

#include <linux/netlink.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tdb/kdev.h"
#include "tdb/ring.h"
#include "wal.h"

static inline void rec_put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);       /* x86/arm64 little-endian test hosts */
}

static inline void rec_put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* The header, then the payload: the record's length, unpadded. */
static inline size_t rec_finish(unsigned char *r, size_t len, uint64_t lsn,
				enum wal_type type)
{
	memset(r + 4, 0, WAL_REC_HDR - 4);
	rec_put32(r + 4, (uint32_t)len);
	rec_put64(r + 8, lsn);
	r[16] = (unsigned char)type;
	rec_put32(r, wal_crc32c(0, r + 4, len - 4));
	return len;
}

/* The version tdb.ko gives the change of record lsn, in these tests:
 * not the LSN, so a reader that took the LSN for it shows. */
#define REC_VERSION(lsn) ((uint64_t)(lsn) * 1000 + 7)

/* A WAL_OPS_V record (as tdb.ko logs changes) of one put (vlen !=
 * (size_t)-1) or delete, at version REC_VERSION(lsn). */
static inline size_t rec_op(unsigned char *r, uint64_t lsn, const char *tab,
			    const char *key, const void *val, size_t vlen,
			    bool del)
{
	size_t n = strlen(tab), kl = strlen(key), off = WAL_REC_HDR;

	rec_put32(r + off, 1);
	rec_put32(r + off + 4, 0);
	rec_put64(r + off + 8, REC_VERSION(lsn));
	off += 16;
	r[off] = del ? WAL_OP_DEL : WAL_OP_PUT;
	r[off + 1] = (unsigned char)n;
	r[off + 2] = r[off + 3] = 0;
	rec_put32(r + off + 4, (uint32_t)kl);
	rec_put32(r + off + 8, del ? 0 : (uint32_t)vlen);
	memcpy(r + off + 12, tab, n);
	memcpy(r + off + 12 + n, key, kl);
	if (!del && vlen)
		memcpy(r + off + 12 + n + kl, val, vlen);
	off += 12 + n + kl + (del ? 0 : vlen);
	return rec_finish(r, off, lsn, WAL_OPS_V);
}

static inline size_t rec_create(unsigned char *r, uint64_t lsn,
				uint64_t id, const char *tab)
{
	size_t n = strlen(tab), off = WAL_REC_HDR;

	rec_put64(r + off, id);
	rec_put32(r + off + 8, 0);              /* uid */
	rec_put32(r + off + 12, 0);             /* gid */
	rec_put32(r + off + 16, 0600);          /* mode */
	rec_put32(r + off + 20, 0);             /* max_extents */
	rec_put32(r + off + 24, 0);             /* sync */
	r[off + 28] = (unsigned char)n;
	memcpy(r + off + 29, tab, n);
	return rec_finish(r, off + 29 + n, lsn, WAL_CREATE);
}

static inline size_t rec_drop(unsigned char *r, uint64_t lsn, const char *tab)
{
	size_t n = strlen(tab);

	r[WAL_REC_HDR] = (unsigned char)n;
	memcpy(r + WAL_REC_HDR + 1, tab, n);
	return rec_finish(r, WAL_REC_HDR + 1 + n, lsn, WAL_DROP);
}

/* --- a log ring in memory ------------------------------------------------ */

struct fake_ring {
	unsigned char *mem;     /* header page, then data */
	size_t len;
	uint32_t size, max_msg;
	uint64_t prod;          /* private; published with ring_publish */
};

static inline int ring_make(struct fake_ring *f, uint32_t size,
			    uint32_t max_msg, uint64_t start)
{
	struct tdb_ring_hdr *h;

	f->len = TDB_RING_HDR_SIZE + size;
	f->mem = aligned_alloc(4096, f->len);
	if (!f->mem)
		return -1;
	memset(f->mem, 0xa5, f->len);   /* garbage where nothing is */
	memset(f->mem, 0, TDB_RING_HDR_SIZE);
	h = (struct tdb_ring_hdr *)f->mem;
	h->magic = TDB_RING_MAGIC;
	h->version = TDB_RING_VERSION;
	h->kind = TDB_RING_LOG;
	h->hdr_size = TDB_RING_HDR_SIZE;
	h->data_size = size;
	h->max_msg = max_msg;
	h->prod = h->cons = start;
	f->size = size;
	f->max_msg = max_msg;
	f->prod = start;
	return 0;
}

static inline void ring_publish(struct fake_ring *f)
{
	struct tdb_ring_hdr *h = (struct tdb_ring_hdr *)f->mem;

	__atomic_store_n(&h->prod, f->prod, __ATOMIC_RELEASE);
}

/* One message (header + n bytes of body), padding the end first when
 * it does not fit, as the rings do. */
static inline void ring_msg(struct fake_ring *f, uint16_t type,
			    uint16_t flags, const void *body, size_t n)
{
	uint32_t off = (uint32_t)(f->prod & (f->size - 1));
	uint32_t left = f->size - off, len = (uint32_t)(NLMSG_HDRLEN + n);
	struct nlmsghdr nh = { .nlmsg_len = len, .nlmsg_type = type,
			       .nlmsg_flags = flags };

	if (NLMSG_ALIGN(len) > left) {
		if (left >= NLMSG_HDRLEN) {
			struct nlmsghdr pad = { .nlmsg_len = left,
						.nlmsg_type = NLMSG_NOOP };

			memcpy(f->mem + TDB_RING_HDR_SIZE + off, &pad,
			       sizeof(pad));
		}
		f->prod += left;
		off = 0;
	}
	memcpy(f->mem + TDB_RING_HDR_SIZE + off, &nh, sizeof(nh));
	memcpy(f->mem + TDB_RING_HDR_SIZE + off + NLMSG_HDRLEN, body, n);
	f->prod += NLMSG_ALIGN(len);
}

/* A record, in fragments of at most max_msg - NLMSG_HDRLEN bytes. */
static inline void ring_rec(struct fake_ring *f, const void *rec, size_t n)
{
	size_t chunk = (f->max_msg - NLMSG_HDRLEN) & ~(size_t)3, done = 0;

	while (n - done > chunk) {
		ring_msg(f, TDB_LOG_MSG, TDB_LOG_F_MORE,
			 (const unsigned char *)rec + done, chunk);
		done += chunk;
	}
	ring_msg(f, TDB_LOG_MSG, 0, (const unsigned char *)rec + done,
		 n - done);
}

#endif
