// SPDX-License-Identifier: GPL-2.0-only
/*
 * kring.c - the kernel as consumer of a client's submission ring and
 * producer of its completion ring (include/tdb/ring.h; the rules are in
 * kring.h).  This mirrors src/ring/ring.c check for check, with one
 * difference: the kernel never sleeps on or wakes the ring's futex.  A
 * /dev/tdb client runs the kernel itself with TDB_IOC_ENTER and sleeps
 * in poll(2) (dev.c), so the futex word and the *_WAITING flags are the
 * client's business only.
 *
 * The client can write the whole submission ring and the completion
 * ring's header at any moment, from another thread, while we run.  So:
 * every shared word we need is read once (READ_ONCE / smp_load_acquire)
 * into a local and checked; a request is copied into r->msg once, its
 * header first (to learn the length), and nothing but the copy is used
 * afterwards.
 */
#include <linux/kernel.h>
#include <linux/atomic.h>
#include <linux/sched.h>
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <asm/barrier.h>

#include "tdb/proto.h"
#include "kring.h"

static bool good_size(u32 data_size)
{
	return data_size >= TDB_RING_MIN_DATA &&
	       data_size <= TDB_RING_MAX_DATA && is_power_of_2(data_size);
}

int tdbk_ring_init(struct tdbk_ring *r, u32 kind, u32 data_size)
{
	struct tdb_ring_hdr *h;
	u32 max_msg;

	memset(r, 0, sizeof(*r));
	if (kind != TDB_RING_SUBMIT && kind != TDB_RING_COMPLETE)
		return -EINVAL;
	if (!good_size(data_size))
		return -EINVAL;
	max_msg = min_t(u32, data_size / 2, TDB_PROTO_MSG_MAX) & ~3u;
	r->size = (size_t)TDB_RING_HDR_SIZE + data_size;
	/* Zeroed, and VM_USERMAP so that dev.c can remap_vmalloc_range()
	 * it; nothing of the kernel's but the ring is in these pages. */
	h = vmalloc_user(r->size);
	if (!h)
		return -ENOMEM;
	if (kind == TDB_RING_SUBMIT) {
		/* Per client, up to 1 MiB: charged to its memcg. */
		r->msg = kvmalloc(max_msg, GFP_KERNEL_ACCOUNT);
		if (!r->msg) {
			vfree(h);
			return -ENOMEM;
		}
	}
	/* As tdb_ring_format(): the header is complete before magic. */
	h->version = TDB_RING_VERSION;
	h->kind = kind;
	h->hdr_size = TDB_RING_HDR_SIZE;
	h->data_size = data_size;
	h->max_msg = max_msg;
	smp_store_release(&h->magic, TDB_RING_MAGIC);

	r->hdr = h;
	r->data = (u8 *)h + TDB_RING_HDR_SIZE;
	r->kind = kind;
	r->data_size = data_size;
	r->mask = data_size - 1;
	r->max_msg = max_msg;
	return 0;
}

void tdbk_ring_free(struct tdbk_ring *r)
{
	kvfree(r->msg);
	vfree(r->hdr);
	memset(r, 0, sizeof(*r));
}

int tdbk_ring_violation(struct tdbk_ring *r, const char *why)
{
	if (!r->dead) {
		r->dead = true;
		r->error = why;
	}
	/* The header page is mapped writable by the client, but it is our
	 * memory: an atomic OR on it is safe whatever the client does. */
	if (r->hdr)
		atomic_or(TDB_RING_F_OVERRUN, (atomic_t *)&r->hdr->flags);
	return -EPROTO;
}

/* --- consumer ------------------------------------------------------------ */

int tdbk_ring_load(struct tdbk_ring *r)
{
	u64 p;

	if (r->dead)
		return -EPROTO;
	p = smp_load_acquire(&r->hdr->prod);
	if (p - r->pos > r->data_size)
		return tdbk_ring_violation(r, "producer index is more than a "
					   "ring ahead or behind the consumer");
	if (p & 3)
		return tdbk_ring_violation(r, "producer index is not 4-byte "
					   "aligned");
	r->end = p;
	return 0;
}

long tdbk_ring_pop(struct tdbk_ring *r)
{
	struct nlmsghdr *nlh = r->msg;
	unsigned int steps;

	if (r->dead)
		return -EPROTO;
	/*
	 * Padding is at most a skipped end (< 16 bytes) or one NOOP before
	 * position 0 in a well-behaved ring; a client writing nothing but
	 * NOOPs still only makes us walk up to the loaded prod, which is at
	 * most one ring ahead: bounded by data_size / 16 steps.
	 */
	for (steps = 0; r->pos != r->end; steps++) {
		u32 off = (u32)(r->pos & r->mask);
		u32 rem = r->data_size - off, len;
		u64 avail = r->end - r->pos;

		if (rem < NLMSG_HDRLEN) {
			if (avail < rem)
				return tdbk_ring_violation(r,
					"producer index is inside the skipped "
					"end of the ring");
			r->pos += rem;
			continue;
		}
		if (avail < NLMSG_HDRLEN)
			return tdbk_ring_violation(r, "producer index is inside "
						   "a message header");
		memcpy(nlh, r->data + off, NLMSG_HDRLEN);
		len = nlh->nlmsg_len;           /* once, from our copy */
		if (len < NLMSG_HDRLEN)
			return tdbk_ring_violation(r, "message is shorter than "
						   "its header");
		if (len > rem)
			return tdbk_ring_violation(r, "message runs past the "
						   "end of the ring");
		if (NLMSG_ALIGN(len) > avail)
			return tdbk_ring_violation(r, "message runs past the "
						   "producer index");
		if (nlh->nlmsg_type == NLMSG_NOOP) {
			r->pos += NLMSG_ALIGN(len);
			if (!(steps & 1023))
				cond_resched();
			continue;
		}
		if (len > r->max_msg)
			return tdbk_ring_violation(r, "message is longer than "
						   "the ring's max_msg");
		memcpy((u8 *)nlh + NLMSG_HDRLEN, r->data + off + NLMSG_HDRLEN,
		       len - NLMSG_HDRLEN);
		/* The copy's nlmsg_len is the one we checked (it is ours). */
		r->pos += NLMSG_ALIGN(len);
		return len;
	}
	return 0;
}

void tdbk_ring_release(struct tdbk_ring *r)
{
	if (r->dead)
		return;
	smp_store_release(&r->hdr->cons, r->pos);
}

/* --- producer ------------------------------------------------------------ */

static bool has_room(struct tdbk_ring *r, u64 end)
{
	u64 c;

	if (end - r->other <= r->data_size)
		return true;
	c = smp_load_acquire(&r->hdr->cons);
	/* The client can only have moved forward, up to what we
	 * published. */
	if (c - r->other > r->published - r->other || (c & 3)) {
		tdbk_ring_violation(r, "consumer index is outside the "
				    "published range");
		return false;
	}
	r->other = c;
	return end - c <= r->data_size;
}

/* The padding before a message of `need` bytes at r->pos. */
static u32 wrap_pad(const struct tdbk_ring *r, u32 need)
{
	u32 off = (u32)(r->pos & r->mask), rem = r->data_size - off;

	return need > rem ? rem : 0;
}

bool tdbk_ring_has_room(struct tdbk_ring *r, size_t len)
{
	u32 need;

	if (r->dead || r->reserved || len > r->max_msg)
		return false;
	need = NLMSG_ALIGN((u32)max_t(size_t, len, NLMSG_HDRLEN));
	return has_room(r, r->pos + wrap_pad(r, need) + need);
}

void *tdbk_ring_reserve(struct tdbk_ring *r, size_t len)
{
	u32 off, need, pad;

	if (r->dead || r->reserved || len < NLMSG_HDRLEN || len > r->max_msg)
		return NULL;
	need = NLMSG_ALIGN((u32)len);
	pad = wrap_pad(r, need);
	if (!has_room(r, r->pos + pad + need))
		return NULL;
	if (pad) {
		off = (u32)(r->pos & r->mask);
		if (pad >= NLMSG_HDRLEN) {
			struct nlmsghdr *noop = (void *)(r->data + off);

			memset(noop, 0, NLMSG_HDRLEN);
			noop->nlmsg_len = pad;
			noop->nlmsg_type = NLMSG_NOOP;
		}
		r->pos += pad;
	}
	r->reserved = need;
	r->reserved_len = (u32)len;
	return r->data + (r->pos & r->mask);
}

void tdbk_ring_commit(struct tdbk_ring *r, size_t len)
{
	u8 *p = r->data + (r->pos & r->mask);
	struct nlmsghdr *nlh = (void *)p;

	if (WARN_ON_ONCE(!r->reserved || len < NLMSG_HDRLEN ||
			 len > r->reserved_len)) {
		r->reserved = 0;
		return;
	}
	nlh->nlmsg_len = (u32)len;
	/* Zero the alignment padding: the client sees whole words. */
	memset(p + len, 0, NLMSG_ALIGN(len) - len);
	r->pos += NLMSG_ALIGN(len);
	r->reserved = 0;
}

void tdbk_ring_abort(struct tdbk_ring *r)
{
	r->reserved = 0;
}

bool tdbk_ring_publish(struct tdbk_ring *r)
{
	if (r->dead || r->pos == r->published)
		return false;
	smp_store_release(&r->hdr->prod, r->pos);
	WRITE_ONCE(r->published, r->pos);
	return true;
}

bool tdbk_ring_unread(const struct tdbk_ring *r)
{
	u64 p = READ_ONCE(r->published);
	u64 c = READ_ONCE(r->hdr->cons);

	return c != p;
}
