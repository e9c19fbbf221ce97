// SPDX-License-Identifier: GPL-2.0-only
/*
 * klog.c - the reader of tdb.ko's log ring (klog.h): messages out of the
 * read-only mapping, fragments gathered into one private record, each
 * record checked (length, CRC, type) before it is handed over.
 *
 * Invariants:
 *  - k->pos only moves over whole messages that lie below the `prod` we
 *    loaded (acquire), so every byte read was published; a record whose
 *    fragments are not all published stays gathered in k->rec and the
 *    next call goes on with it.
 *  - The kernel overwrites ring space only past records we reported
 *    durable (TDB_IOC_SUP_DURABLE), which we read before: so a message
 *    cannot change while we copy it.  We copy anyway (the habit).
 *  - Frames are walked by src/ring's walker (ring_core.h,
 *    tdb_frame_at): the header is copied once and checked against the
 *    area, the prod we loaded and max_msg before its length is used.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "klog.h"
#include "ring_core.h"
#include "tdb/kdev.h"
#include "tdb/ring.h"

int klog_attach(struct klog *k, const void *map, size_t map_len,
		uint64_t pos, char *err, size_t errlen)
{
	const struct tdb_ring_hdr *h = map;
	uint32_t size, max;

	memset(k, 0, sizeof(*k));
	if (map_len < TDB_RING_HDR_SIZE + TDB_RING_MIN_DATA) {
		snprintf(err, errlen, "the log ring is too small (%zu bytes)",
		    map_len);
		return -EPROTO;
	}
	size = __atomic_load_n(&h->data_size, __ATOMIC_RELAXED);
	max = __atomic_load_n(&h->max_msg, __ATOMIC_RELAXED);
	if (__atomic_load_n(&h->magic, __ATOMIC_RELAXED) != TDB_RING_MAGIC ||
	    __atomic_load_n(&h->kind, __ATOMIC_RELAXED) != TDB_RING_LOG ||
	    h->hdr_size != TDB_RING_HDR_SIZE) {
		snprintf(err, errlen, "the log ring's header is not a log "
			 "ring's (magic, kind or header size)");
		return -EPROTO;
	}
	if (size < TDB_RING_MIN_DATA || (size & (size - 1)) ||
	    size > map_len - TDB_RING_HDR_SIZE || max < NLMSG_HDRLEN + 8 ||
	    max > size / 2) {
		snprintf(err, errlen, "the log ring's sizes are bad (data %u, "
		    "max_msg %u, mapped %zu)", size, max, map_len);
		return -EPROTO;
	}
	k->hdr = h;
	k->data = (const unsigned char *)map + TDB_RING_HDR_SIZE;
	k->size = size;
	k->max_msg = max;
	k->pos = pos;
	return 0;
}

uint64_t klog_prod(const struct klog *k)
{
	const struct tdb_ring_hdr *h = k->hdr;

	return __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
}

void klog_free(struct klog *k)
{
	free(k->rec);
	k->rec = NULL;
	k->rec_len = k->rec_cap = 0;
}

static int gather(struct klog *k, const void *p, size_t n)
{
	if (k->rec_len + n > WAL_REC_MAX)
		return -E2BIG;
	if (k->rec_len + n > k->rec_cap) {
		size_t cap = k->rec_cap ? k->rec_cap : 4096;
		unsigned char *q;

		while (cap < k->rec_len + n)
			cap *= 2;
		if (!(q = realloc(k->rec, cap)))
			return -ENOMEM;
		k->rec = q;
		k->rec_cap = cap;
	}
	memcpy(k->rec + k->rec_len, p, n);
	k->rec_len += n;
	return 0;
}

/* One message at k->pos (below prod): 1 a record is whole, 0 go on
 * (padding or a fragment), < 0 a bad frame. */
static int one_msg(struct klog *k, uint64_t prod, char *err, size_t errlen)
{
	struct tdb_frames a = { k->data, k->size, k->max_msg };
	uint32_t off = (uint32_t)(k->pos & (k->size - 1));
	struct nlmsghdr nh = { 0 };     /* printed when a check fails */
	const char *why;
	long step = tdb_frame_at(&a, k->pos, prod, &nh, &why);
	int e;

	if (step < 0) {
		snprintf(err, errlen, "log ring index %llu: a bad message "
			 "length: %s (type %u, %u bytes, max_msg %u, prod "
			 "%llu)", (unsigned long long)k->pos, why, nh.nlmsg_type,
			 nh.nlmsg_len, k->max_msg, (unsigned long long)prod);
		return -EPROTO;
	}
	if (nh.nlmsg_type == NLMSG_NOOP) {      /* padding */
		k->pos += (uint64_t)step;
		return 0;
	}
	if (nh.nlmsg_type != TDB_LOG_MSG) {
		snprintf(err, errlen, "log ring index %llu: a message of "
			 "type %u, %u bytes (not a log record)",
		    (unsigned long long)k->pos, nh.nlmsg_type, nh.nlmsg_len);
		return -EPROTO;
	}
	if ((e = gather(k, k->data + off + NLMSG_HDRLEN,
			nh.nlmsg_len - NLMSG_HDRLEN))) {
		snprintf(err, errlen, "log ring index %llu: a record too big to "
		    "gather (%s)", (unsigned long long)k->pos,
		    e == -ENOMEM ? "out of memory" : "over 1 GiB");
		return e;
	}
	k->pos += (uint64_t)step;
	return !(nh.nlmsg_flags & TDB_LOG_F_MORE);
}

int klog_next(struct klog *k, const void **rec, size_t *len,
	      struct wal_rec *r, char *err, size_t errlen)
{
	uint64_t prod = klog_prod(k);
	const char *why;
	int e;

	while (prod > k->pos) {
		if (prod - k->pos > k->size) {
			snprintf(err, errlen, "log ring: prod %llu is more than "
			    "the ring (%u bytes) past our index %llu",
			    (unsigned long long)prod, k->size,
			    (unsigned long long)k->pos);
			return -EPROTO;
		}
		e = one_msg(k, prod, err, errlen);
		if (e < 0)
			return e;
		if (!e)
			continue;
		if ((e = wal_rec_check(k->rec, k->rec_len, r, &why))) {
			snprintf(err, errlen, "log ring before index %llu: %s",
			    (unsigned long long)k->pos, why);
			return e;
		}
		*rec = k->rec;
		*len = k->rec_len;
		k->rec_len = 0;         /* the next record starts afresh; the
					 * bytes stay valid until then */
		return 1;
	}
	return 0;
}
