// SPDX-License-Identifier: GPL-2.0-only
/*
 * kring.c - the kernel home of a /dev/tdb client's rings (kring.h says
 * what it owns): their memory, the request buffer and the few
 * kernel-only wrappers around the shared core (src/ring/ring.c).
 * Invariant: a ring that tdbk_ring_init() returned 0 for counts
 * tdbk_ring_bytes(r->data_size) in max_memory_mb until tdbk_ring_free();
 * a zeroed ring (failed init, or freed) counts nothing.
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "tdb/proto.h"
#include "kring.h"
#include "transport.h"

/* Padding frames walked between two cond_resched() calls. */
#define TDBK_RING_PAD_RUN 1024u

size_t tdbk_ring_bytes(u32 data_size)
{
	return PAGE_ALIGN(tdb_ring_map_size(data_size));
}

int tdbk_ring_init(struct tdb_ring *r, u32 kind, u32 data_size,
		   bool reserve)
{
	bool sq = kind == TDB_RING_SUBMIT;
	u32 max_msg = min_t(u32, data_size / 2, TDB_PROTO_MSG_MAX);
	void *mem;
	int err;

	memset(r, 0, sizeof(*r));
	if (kind != TDB_RING_SUBMIT && kind != TDB_RING_COMPLETE)
		return -EINVAL;
	if (data_size < TDB_RING_MIN_DATA || data_size > TDB_RING_MAX_DATA ||
	    !is_power_of_2(data_size))
		return -EINVAL;
	err = tdbk_mem_charge_user(tdbk_ring_bytes(data_size), reserve);
	if (err)
		return err;
	/* Zeroed, and VM_USERMAP so that dev.c can remap_vmalloc_range()
	 * it; nothing of the kernel's but the ring is in these pages. */
	mem = vmalloc_user(tdb_ring_map_size(data_size));
	if (!mem) {
		tdbk_mem_uncharge(tdbk_ring_bytes(data_size));
		return -ENOMEM;
	}
	/* Not mapped yet: the client cannot touch the header while the
	 * attach reads it back. */
	err = tdb_ring_format(mem, kind, data_size, max_msg);
	if (!err)
		err = tdb_ring_attach(r, mem, (u8 *)mem + TDB_RING_HDR_SIZE,
				      data_size, kind,
				      sq ? TDB_RING_CONSUMER :
					   TDB_RING_PRODUCER, NULL);
	if (!err && sq) {
		/* Per client, up to 1 MiB: charged to its memcg. */
		r->msg = kvmalloc(r->max_msg, GFP_KERNEL_ACCOUNT);
		if (!r->msg)
			err = -ENOMEM;
	}
	if (err) {
		vfree(mem);
		tdbk_mem_uncharge(tdbk_ring_bytes(data_size));
		memset(r, 0, sizeof(*r));
	}
	return err;
}

void tdbk_ring_free(struct tdb_ring *r)
{
	if (r->hdr)
		tdbk_mem_uncharge(tdbk_ring_bytes(r->data_size));
	kvfree(r->msg);
	vfree(r->hdr);
	memset(r, 0, sizeof(*r));
}

long tdbk_ring_pop(struct tdb_ring *r)
{
	/*
	 * Padding is at most a skipped end or one NOOP before position 0
	 * in a well-behaved ring; a client writing nothing but NOOPs still
	 * only makes us walk up to the loaded prod, at most one ring ahead.
	 */
	for (;;) {
		unsigned int budget = TDBK_RING_PAD_RUN;
		long len = tdb_ring_pop(r, &budget);

		if (len || r->pos == r->end)
			return len;
		cond_resched();
	}
}

void tdbk_ring_commit(struct tdb_ring *r, size_t len)
{
	if (WARN_ON_ONCE(tdb_ring_commit(r, len)))
		tdb_ring_abort(r);
}

bool tdbk_ring_publish(struct tdb_ring *r)
{
	u64 before = r->published;

	return tdb_ring_publish(r) >= 0 && r->published != before;
}
