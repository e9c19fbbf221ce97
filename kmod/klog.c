// SPDX-License-Identifier: GPL-2.0-only
/*
 * klog.c - tdb.ko's change log (include/tdb/kdev.h, "THE SUPERVISOR"):
 * the owner's log hooks (src/owner/owner.h, struct tdbo_hooks) write one
 * record per change, in the WAL's encoding (src/wal/walrec.c), into the
 * log ring, which the supervisor (tdbd) maps read-only at
 * TDB_DEV_OFF_LOG and appends to its WAL.
 *
 * The ring is the rings' layout (tdb/ring.h, kind TDB_RING_LOG): a
 * header page and a power-of-two data area (log_ring_mb) of nlmsghdr
 * messages of type TDB_LOG_MSG that never wrap; a record longer than
 * what is left of the area or than max_msg goes in fragments (every one
 * but the last has TDB_LOG_F_MORE); their payloads, end to end, are the
 * record without its padding to 8 bytes.  The end of the area is filled
 * with an NLMSG_NOOP (or skipped when under NLMSG_HDRLEN bytes).
 *
 * Invariants:
 *  - lg.gate (an rw_semaphore) is held for reading by every change from
 *    its log_reserve to its record (log_commit, log_create, log_drop) or
 *    log_cancel, so lg.on, which only changes under the gate held for
 *    writing (tdbk_log_switch), is the same for the whole change: a
 *    change is logged whole or not at all, and its room was reserved.
 *    A RESTORE_BULK batch that goes in unlogged holds it the same way,
 *    from tdbk_log_restore_begin to tdbk_log_restore_end.
 *  - lg.lock orders records: it is held from log_begin to log_commit
 *    (a copy into the ring, no sleeping), and by reservations, durable
 *    reports and reads of the indices.  LSNs are consecutive.
 *  - w - cons + reserved <= size: a change reserves the most its record
 *    can take (fragment headers, a NOOP at the end of the area) before
 *    it applies; no room: -ENOBUFS, nothing applied.
 *  - The ring's memory (header and data) is charged to max_memory_mb
 *    (platform.c) while it exists: from the first claim to unload.
 *  - Only tdb.ko writes the ring.  prod is published (release) after
 *    every byte of a whole record (the CRC last); cons moves only past
 *    records whose LSN the supervisor reported durable.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/vmalloc.h>

#include "tdb/kdev.h"
#include "tdb/ring.h"
#include "ring_core.h"          /* the frame walker */
#include "kcompat.h"
#include "owner.h"
#include "../src/owner/internal.h"        /* struct tdbo_table */
#include "walrec.h"
#include "sup.h"
#include "transport.h"

/* RESTORE_BULK's unlogged fast path (tdbk_log_restore_begin); off: each
 * batch's records through the change pipeline as before (for measuring
 * the two in one boot, tdb-bench-durable --restore-slow). */
static bool restore_fast = true;
module_param(restore_fast, bool, 0644);
MODULE_PARM_DESC(restore_fast,
		 "the supervisor's RESTORE_BULK batches go into the tables "
		 "straight while nothing is logged (default 1; 0: each "
		 "record through the change pipeline, for measuring)");

static unsigned int log_ring_mb = 64;
module_param(log_ring_mb, uint, 0444);
MODULE_PARM_DESC(log_ring_mb,
		 "MiB of the change log ring the supervisor (tdbd) reads, "
		 "a power of two from 1 to 1024 (default 64); allocated at "
		 "the first TDB_IOC_SUP_CLAIM and counted in max_memory_mb");

/* Fragments are at most this long (and at most data_size / 8). */
#define LOG_MAX_MSG     (256u << 10)
/* A record starts a message with at least this much left before the end
 * of the area (its header and op count are contiguous). */
#define LOG_MIN_TAIL    64u

static struct {
	struct rw_semaphore gate;
	struct mutex lock;
	struct tdb_ring_hdr *hdr;       /* NULL until the first claim */
	unsigned char *data;
	u32 size, mask, max_msg;
	bool on;
	u64 w;                  /* the next byte written */
	u64 prod;               /* published */
	u64 cons;               /* the first byte of a non-durable record */
	u64 reserved;           /* bytes reserved, not written yet */
	u64 next_lsn;           /* the LSN of the next record */
	u64 durable;            /* the supervisor's durable LSN */
	/* the record being built (under lock) */
	unsigned char *rec;     /* its header in the ring */
	u64 rec_start;          /* index of its first message */
	u64 msg_start;          /* the open message */
	u32 msg_len;
	bool msg_open;
	u32 rec_len, nops;
	/* counters */
	u64 records, refused;
} lg;

int tdbk_log_init(void)
{
	if (!is_power_of_2(log_ring_mb) || log_ring_mb > 1024) {
		pr_err("log_ring_mb=%u is not a power of two from 1 to 1024\n",
		       log_ring_mb);
		return -EINVAL;
	}
	init_rwsem(&lg.gate);
	mutex_init(&lg.lock);
	return 0;
}

void tdbk_log_exit(void)
{
	if (lg.hdr)
		tdbk_mem_uncharge(tdbk_log_map_size());
	vfree(lg.hdr);
	lg.hdr = NULL;
}

bool tdbk_log_allocated(void)
{
	return READ_ONCE(lg.hdr) != NULL;
}

/*
 * The ring counts in max_memory_mb with the tables' extents and the
 * change feeds (platform.c), from its allocation to unload.  One that
 * would pass the bound is refused: -ENOSPC (not -ENOMEM: no allocation
 * failed), said in the kernel log (an ioctl has no extended ack).
 */
static int log_alloc(void)
{
	u32 size = log_ring_mb << 20;
	size_t bytes = TDB_RING_HDR_SIZE + (size_t)size;
	struct tdb_ring_hdr *h;

	if (lg.hdr)
		return 0;
	if (!tdbk_mem_charge(bytes)) {
		pr_warn_ratelimited("TDB_IOC_SUP_CLAIM of pid %d refused: the "
				    "change log ring (log_ring_mb=%u) does not "
				    "fit in max_memory_mb=%lu (%lu MiB in use "
				    "by tables and feeds): raise max_memory_mb "
				    "or lower log_ring_mb\n",
				    task_tgid_nr(current), log_ring_mb,
				    tdbk_mem_limit() >> 20,
				    tdbk_mem_used() >> 20);
		return -ENOSPC;
	}
	h = vmalloc_user(bytes);
	if (!h) {
		tdbk_mem_uncharge(bytes);
		return -ENOMEM;
	}
	h->magic = TDB_RING_MAGIC;
	h->version = TDB_RING_VERSION;
	h->kind = TDB_RING_LOG;
	h->hdr_size = TDB_RING_HDR_SIZE;
	h->data_size = size;
	lg.max_msg = min(LOG_MAX_MSG, size / 8);
	h->max_msg = lg.max_msg;
	lg.data = (unsigned char *)h + TDB_RING_HDR_SIZE;
	lg.size = size;
	lg.mask = size - 1;
	lg.w = lg.prod = lg.cons = lg.reserved = 0;
	lg.next_lsn = 1;
	lg.durable = 0;
	lg.hdr = h;
	pr_info("change log ring of %u MiB allocated, counted in "
		"max_memory_mb=%lu (%lu MiB in use now)\n", log_ring_mb,
		tdbk_mem_limit() >> 20, tdbk_mem_used() >> 20);
	return 0;
}

/* --- writing -------------------------------------------------------------- */

/* The most ring bytes a record of sz can take: its bytes, a header per
 * fragment (and one more where the area's end cuts one), alignment,
 * and the end of the area (a NOOP) once. */
static u64 need(const struct tdbo_log_size *sz)
{
	enum walrec_type type = sz->kind == TDBO_LOG_CREATE ? WALREC_CREATE :
				sz->kind == TDBO_LOG_DROP ? WALREC_DROP :
				WALREC_OPS_V;
	/* the most: sz does not say which puts carry a deadline */
	u64 bytes = walrec_size_max(type, sz->nops, sz->bytes);
	u64 frags = div_u64(bytes, lg.max_msg - NLMSG_HDRLEN) + 2;

	return bytes + frags * (NLMSG_HDRLEN + NLMSG_ALIGNTO) + LOG_MIN_TAIL;
}

static void pad_to_end(u32 left)
{
	struct nlmsghdr *nh = (void *)(lg.data + (lg.w & lg.mask));

	if (left >= NLMSG_HDRLEN) {
		nh->nlmsg_len = left;
		nh->nlmsg_type = NLMSG_NOOP;
		nh->nlmsg_flags = 0;
		nh->nlmsg_seq = 0;
		nh->nlmsg_pid = 0;
	}
	lg.w += left;
}

static void msg_open(void)
{
	u32 left = lg.size - (u32)(lg.w & lg.mask);

	if (left < LOG_MIN_TAIL)
		pad_to_end(left);
	lg.msg_start = lg.w;
	lg.msg_len = NLMSG_HDRLEN;
	lg.msg_open = true;
}

static void msg_close(u16 flags)
{
	u32 off = (u32)(lg.msg_start & lg.mask);
	struct nlmsghdr *nh = (void *)(lg.data + off);
	u32 end = NLMSG_ALIGN(lg.msg_len);

	nh->nlmsg_len = lg.msg_len;
	nh->nlmsg_type = TDB_LOG_MSG;
	nh->nlmsg_flags = flags;
	nh->nlmsg_seq = 0;
	nh->nlmsg_pid = 0;
	memset(lg.data + off + lg.msg_len, 0, end - lg.msg_len);
	lg.w = lg.msg_start + end;
	lg.msg_open = false;
}

/* Append n bytes to the record, in fragments as needed. */
static void put(const void *p, size_t n)
{
	while (n) {
		u32 off, room;
		size_t c;

		if (!lg.msg_open)
			msg_open();
		off = (u32)(lg.msg_start & lg.mask);
		room = min(lg.max_msg, lg.size - off) - lg.msg_len;
		if (!room) {
			msg_close(TDB_LOG_F_MORE);
			continue;
		}
		c = min_t(size_t, room, n);
		memcpy(lg.data + off + lg.msg_len, p, c);
		lg.msg_len += c;
		lg.rec_len += c;
		p += c;
		n -= c;
	}
}

/*
 * The index of the first log message at or after i, below end (padding
 * passed over), or end; *nh its header.  The walk is src/ring's
 * (ring_core.h, tdb_frame_next) over our own ring, written under
 * lg.lock, which the callers hold: a bad frame is our bug, warned about
 * once and taken as the end, never looped on.
 */
static u64 next_msg(u64 i, u64 end, struct nlmsghdr *nh)
{
	struct tdb_frames a = { lg.data, lg.size, lg.max_msg };
	const char *why;
	long step;

	if (i >= end)
		return end;
	step = tdb_frame_next(&a, &i, end, nh, &why);
	if (WARN_ONCE(step < 0, "tdb: change log ring at %llu: %s\n", i, why))
		return end;
	return step ? i : end;
}

/* The index after the record whose first message is at i (< end). */
static u64 rec_end(u64 i, u64 end, u32 *crc)
{
	struct nlmsghdr h;
	const struct nlmsghdr *nh = &h;
	bool first = true;

	for (i = next_msg(i, end, &h); i < end; i = next_msg(i, end, &h)) {
		const unsigned char *p = lg.data + (i & lg.mask) +
					 NLMSG_HDRLEN;
		u32 n = nh->nlmsg_len - NLMSG_HDRLEN;

		if (crc) {
			if (first) {
				p += 4;
				n -= 4;
			}
			*crc = tdbp_crc32c(*crc, p, n);
		}
		first = false;
		i += NLMSG_ALIGN(nh->nlmsg_len);
		if (!(nh->nlmsg_flags & TDB_LOG_F_MORE))
			break;
	}
	return i;
}

/* A record's header: of a create or drop (type), or of ops (OPS_V, the
 * write's version: every op of the record has it). */
static void rec_begin(enum walrec_type type, u64 version)
{
	unsigned char h[WALREC_BEGIN_MAX];
	size_t n = type == WALREC_OPS_V ? walrec_begin_v(h, version) :
		   walrec_begin(h, type);

	lg.rec_len = 0;
	lg.nops = 0;
	msg_open();
	lg.rec_start = lg.msg_start;
	lg.rec = lg.data + (lg.msg_start & lg.mask) + NLMSG_HDRLEN;
	put(h, n);
}

/* Seal, checksum and publish the record; its LSN. */
static u64 rec_commit(const struct tdbo_log_size *sz)
{
	u32 crc = 0;
	u64 lsn = lg.next_lsn++;

	walrec_seal(lg.rec, lg.rec_len, lsn, lg.nops);
	msg_close(0);
	rec_end(lg.rec_start, lg.w, &crc);
	walrec_set_crc(lg.rec, crc);
	lg.reserved -= need(sz);
	lg.records++;
	lg.prod = lg.w;
	smp_store_release(&lg.hdr->prod, lg.w);
	return lsn;
}

static void put_name(const char *name)
{
	u8 n = (u8)strnlen(name, WALREC_NAME_MAX);

	put(&n, 1);
	put(name, n);
}

/* --- the owner's hooks ---------------------------------------------------- */

int tdbk_log_reserve(void *arg, const struct tdbo_log_size *sz,
		     const char **msg)
{
	u64 n;
	int err;

	down_read(&lg.gate);
	if (!lg.on) {
		err = tdbk_sup_may_change(msg);
		if (err)
			up_read(&lg.gate);
		return err;
	}
	n = need(sz);
	mutex_lock(&lg.lock);
	if (n > lg.size - (lg.w - lg.cons) - lg.reserved) {
		lg.refused++;
		mutex_unlock(&lg.lock);
		up_read(&lg.gate);
		*msg = n > lg.size / 2 ?
		       "the change is too big for the change log (tdb.ko's "
		       "log_ring_mb)" :
		       "the change log is full: tdbd (the supervisor) is not "
		       "keeping up or not running";
		return -ENOBUFS;
	}
	lg.reserved += n;
	mutex_unlock(&lg.lock);
	return 0;
}

/* RESTORE_BULK's batch (the owner's restore_begin): 1 while the log is
 * off (the supervisor restoring: its changes are not logged), with the
 * gate held until tdbk_log_restore_end so it cannot come on mid-batch;
 * 0 when it is on (each record logged as a PUT); or the refusal a
 * change gets from another than the supervisor while recovering. */
int tdbk_log_restore_begin(void *arg, const char **msg)
{
	int err;

	if (!READ_ONCE(restore_fast))
		return 0;
	down_read(&lg.gate);
	if (lg.on) {
		up_read(&lg.gate);
		return 0;
	}
	err = tdbk_sup_may_change(msg);
	if (err) {
		up_read(&lg.gate);
		return err;
	}
	return 1;
}

void tdbk_log_restore_end(void *arg)
{
	up_read(&lg.gate);
}

void tdbk_log_cancel(void *arg, const struct tdbo_log_size *sz)
{
	if (lg.on) {
		mutex_lock(&lg.lock);
		lg.reserved -= need(sz);
		mutex_unlock(&lg.lock);
	}
	up_read(&lg.gate);
}

void tdbk_log_begin(void *arg, u64 version)
{
	if (!lg.on)
		return;
	mutex_lock(&lg.lock);
	rec_begin(WALREC_OPS_V, version);
}

void tdbk_log_op(void *arg, const struct tdbo_table *t, bool del,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 u64 deadline)
{
	unsigned char h[WALREC_OP_HDR_MAX];
	u8 n = (u8)strnlen(t->name, WALREC_NAME_MAX);

	if (!lg.on)
		return;
	if (del) {
		vlen = 0;
		deadline = 0;
	}
	/* a put with a deadline is a PUT_DL op (walrec.h) */
	put(h, walrec_op_dl(h, del ? WALREC_OP_DEL : WALREC_OP_PUT, n,
			    (u32)klen, (u32)vlen, deadline));
	put(t->name, n);
	put(key, klen);
	if (vlen)
		put(val, vlen);
	lg.nops++;
}

/* The end of every logged change (the gate was taken at its
 * reservation): let the gate go, wake the supervisor if a record came. */
static u64 log_done(u64 lsn)
{
	up_read(&lg.gate);
	if (lsn)
		tdbk_sup_wake();
	return lsn;
}

u64 tdbk_log_commit(void *arg, const struct tdbo_log_size *sz)
{
	u64 lsn = 0;

	if (lg.on) {
		lsn = rec_commit(sz);
		mutex_unlock(&lg.lock);
	}
	return log_done(lsn);
}

u64 tdbk_log_create(void *arg, const struct tdbo_table *t,
		    const struct tdbo_log_size *sz)
{
	unsigned char c[WALREC_CREATE_FIX], ext[WALREC_CREATE_EXT_F];
	size_t n;
	u64 lsn = 0;

	if (lg.on) {
		walrec_create(c, t->id, t->uid, t->gid, t->mode,
			      t->max_extents, tdbk_sup_sync());
		mutex_lock(&lg.lock);
		rec_begin(WALREC_CREATE, 0);
		put(c, sizeof(c));
		put_name(t->name);
		/* walrec.h: its TTL, bounds and flags after the name, if
		 * any */
		n = walrec_create_ext(ext, t->default_ttl, t->max_bytes,
				      t->max_records, t->evict, t->tflags);
		if (n)
			put(ext, n);
		lsn = rec_commit(sz);
		mutex_unlock(&lg.lock);
	}
	return log_done(lsn);
}

u64 tdbk_log_drop(void *arg, const struct tdbo_table *t,
		  const struct tdbo_log_size *sz)
{
	u64 lsn = 0;

	if (lg.on) {
		mutex_lock(&lg.lock);
		rec_begin(WALREC_DROP, 0);
		put_name(t->name);
		lsn = rec_commit(sz);
		mutex_unlock(&lg.lock);
	}
	return log_done(lsn);
}

/* --- the supervisor's side ------------------------------------------------ */

int tdbk_log_switch(bool on)
{
	int err = 0;

	down_write(&lg.gate);
	err = log_alloc();
	if (!err)
		lg.on = on;
	up_write(&lg.gate);
	return err;
}

void tdbk_log_reset(u64 next_lsn)
{
	down_write(&lg.gate);
	mutex_lock(&lg.lock);
	if (lg.hdr) {
		lg.cons = lg.prod = lg.w;
		WRITE_ONCE(lg.hdr->cons, lg.cons);
	}
	lg.next_lsn = next_lsn;
	WRITE_ONCE(lg.durable, next_lsn - 1);
	mutex_unlock(&lg.lock);
	up_write(&lg.gate);
}

/* The LSN of the record at index i (< prod). */
static u64 lsn_at(u64 i)
{
	return walrec_get64(lg.data + (i & lg.mask) + NLMSG_HDRLEN + 8);
}

u64 tdbk_log_durable(u64 lsn)
{
	struct nlmsghdr nh;
	u64 i, d;

	mutex_lock(&lg.lock);
	if (lsn > lg.next_lsn - 1)
		lsn = lg.next_lsn - 1;
	if (lsn > lg.durable && lg.hdr) {
		WRITE_ONCE(lg.durable, lsn);
		for (i = next_msg(lg.cons, lg.prod, &nh); i < lg.prod;
		     i = next_msg(i, lg.prod, &nh)) {
			if (lsn_at(i) > lsn)
				break;
			i = rec_end(i, lg.prod, NULL);
			lg.cons = i;
		}
		if (i >= lg.prod)
			lg.cons = lg.prod;
		smp_store_release(&lg.hdr->cons, lg.cons);
	}
	d = lg.durable;
	mutex_unlock(&lg.lock);
	return d;
}

/* Without the lock: held answers look at it often (dev.c). */
u64 tdbk_log_durable_lsn(void)
{
	return READ_ONCE(lg.durable);
}

void tdbk_log_range(u64 *first, u64 *next)
{
	struct nlmsghdr nh;
	u64 i;

	mutex_lock(&lg.lock);
	*next = lg.next_lsn;
	*first = lg.next_lsn;
	if (lg.hdr) {
		i = next_msg(lg.cons, lg.prod, &nh);
		if (i < lg.prod)
			*first = lsn_at(i);
	}
	mutex_unlock(&lg.lock);
}

u64 tdbk_log_prod(void)
{
	return READ_ONCE(lg.prod);
}

size_t tdbk_log_map_size(void)
{
	return lg.hdr ? TDB_RING_HDR_SIZE + (size_t)lg.size : 0;
}

/* The supervisor's read-only mapping of the ring from byte in. */
int tdbk_log_mmap(struct vm_area_struct *vma, u64 in)
{
	size_t len = vma->vm_end - vma->vm_start, size = tdbk_log_map_size();

	if (!size || in > size || len > size - in)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	tdbk_vma_clear_flags(vma, VM_MAYWRITE);
	return remap_vmalloc_range(vma, lg.hdr, in >> PAGE_SHIFT);
}

void tdbk_log_stats(struct tdb_sup_stats *s)
{
	mutex_lock(&lg.lock);
	s->log_records = lg.records;
	s->log_bytes = lg.w - lg.cons;
	s->log_refused = lg.refused;
	mutex_unlock(&lg.lock);
}

/* STATS (home.c): the log's figures once a supervisor has claimed; the
 * owner's counters leave them absent otherwise (nothing is logged). */
bool tdbk_log_counters(u64 *records, u64 *last_lsn, u64 *durable)
{
	if (!READ_ONCE(lg.hdr))
		return false;
	mutex_lock(&lg.lock);
	*records = lg.records;
	*last_lsn = lg.next_lsn - 1;
	*durable = lg.durable;
	mutex_unlock(&lg.lock);
	return true;
}
