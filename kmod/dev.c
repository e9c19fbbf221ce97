// SPDX-License-Identifier: GPL-2.0-only
/*
 * dev.c - /dev/tdb, the misc device of tdb.ko (the ABI is
 * include/tdb/kdev.h): one client per open file, its rings (kring.c
 * over the shared core, src/ring/ring.c),
 * TDB_IOC_ATTACH and TDB_IOC_ENTER, mmap of the rings and of watched
 * change feeds (WATCH's ack cookie, built here, names the feed's slot),
 * TABLE_MAP's cookie and the mmap of table slots (handed to kmap.c),
 * poll, and release() as the dead-client hook.
 *
 * Invariants:
 *  - f->lock serialises everything that uses the client or its rings
 *    (ATTACH, ENTER, feed lookups in mmap); the owner's functions are
 *    only called under it, in process context, with no spinlock held.
 *    Nothing under f->lock touches user memory, so mmap (which holds
 *    mmap_lock and takes f->lock) cannot deadlock against it.
 *  - The rings exist from ATTACH until release(), charged all that
 *    time to the client's uid (max_ring_memory_per_uid, the owner's
 *    quota) and counted in max_memory_mb (kring.c; another uid than
 *    root only up to 7/8 of it).  A mapping holds a
 *    reference on the file (vma->vm_file), so release() runs only after
 *    the last munmap: ring memory is never freed while mapped.  Feeds
 *    are the owner's; a feed mapping holds a feed reference until its
 *    last vma is gone.  Table maps hold nothing: kmap.c's fault handler
 *    looks the table up on every fault.
 *  - The submission ring's header is the client's reader slot
 *    (tdbo_client_set_reader at ATTACH): the owner's grace hook reads it
 *    from other clients' writers until tdbo_client_free() returns, so
 *    release() frees the rings only after that.
 *  - The kernel trusts nothing mapped writable (the ring core,
 *    src/ring/ring.c); a client that breaks the ring protocol is cut off
 *    (f->dead, OVERRUN in both ring headers, -EPROTO from ENTER) and
 *    counted as a violation.
 *  - Requests go through serve (src/owner/serve.c: refuse and count,
 *    run, the answer owed, dumps, held answers); this file is its
 *    connection interface over the completion ring (f->sv) and tdb.ko's
 *    held-answer policy.  Held answers (sync always): the answer to a
 *    change whose record tdb.ko logged above the durable LSN is kept,
 *    built, in serve's FIFO (at most TDBK_DEV_MAX_HELD: ENTER stops
 *    consuming then); ENTER writes them once TDB_IOC_SUP_DURABLE covers
 *    them, and poll() says POLLIN as soon as it does (tdbk_dev_durable
 *    wakes every file that holds any; poll reads the oldest's LSN and
 *    deadline, kept by held_note under held_lock).  With no supervisor
 *    attached, one past its deadline becomes -ETIMEDOUT (the change
 *    stays applied and logged); a timer wakes poll() at the deadline.
 *  - One ENTER does at most one ring's worth of work: it takes the
 *    requests published when it starts (at most sq data_size bytes) and
 *    answers while the completion ring has room, calling cond_resched()
 *    between requests; a fatal signal stops it early.  A dump that skips
 *    records without writing (a PREFIX matching few) is run on until it
 *    writes, finishes or fills the ring, with cond_resched() per budget.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "kcompat.h"
#include "tdb/kdev.h"
#include "owner.h"
#include "serve.h"
#include "kring.h"
#include "transport.h"
#include "sup.h"

/* Answers one client may have held for durability (sync always)
 * before its ENTER stops taking requests. */
#define TDBK_DEV_MAX_HELD 4096

static unsigned int dev_mode = 0660;
module_param(dev_mode, uint, 0444);
MODULE_PARM_DESC(dev_mode,
		 "permission bits of /dev/tdb (default 0660, as tdbd's socket)");

static struct tdbo_owner *dev_owner;

/* Every open file, for tdbk_dev_durable's wake-ups. */
static LIST_HEAD(dev_files);
static DEFINE_SPINLOCK(dev_files_lock);

struct tdbk_file {
	struct mutex lock;
	struct file *file;
	struct tdbo_client *client;
	struct tdb_ring sq, cq;
	bool attached;          /* set under lock, with release */
	bool dead;              /* broke the ring protocol */
	bool granted;           /* TABLE_MAP answered with a map: table
				 * slots may be mapped (kmap.c) */
	struct tdbo_conn sv;    /* serve's: dumps, held answers (under
				 * lock) */
	bool too_long;          /* the last reserve: longer than max_msg */
	wait_queue_head_t wq;   /* poll() */
	/* The oldest held answer, for poll() without the lock: written
	 * by held_note (under lock) under held_lock. */
	spinlock_t held_lock;
	unsigned int nheld;
	u64 first_lsn;
	unsigned long first_deadline;   /* jiffies */
	struct timer_list held_timer;   /* the first one's deadline */
	struct list_head fnode;         /* dev_files */
	atomic_t feed_gen;      /* bumped by every write to a watched feed */
	int feed_seen;          /* feed_gen when the last ENTER started */
};

/* --- serve's connection: the completion ring ---------------------------- */

/*
 * Answers are reserved in the completion ring itself (kernel memory the
 * client maps read-only: tdb_ring's trust rules), one at a time, and
 * published at the end of ENTER.  A reservation is open until committed
 * or aborted, so GETs are not batched (in_read_section false).
 */
static void *cq_reserve(void *arg, unsigned int ch, size_t len,
			bool room_check)
{
	struct tdbk_file *f = arg;

	f->too_long = len > f->cq.max_msg;
	if (f->too_long || (room_check && !tdb_ring_has_room(&f->cq, len)))
		return NULL;
	return tdb_ring_reserve_err(&f->cq, len, NULL);
}

static void cq_commit(void *arg, unsigned int ch, void *p, size_t len)
{
	struct tdbk_file *f = arg;
	struct tdb_ring *r = &f->cq;

	if (WARN_ON_ONCE(p != r->data + (r->pos & r->mask))) {
		tdb_ring_abort(r);
		return;
	}
	tdbk_ring_commit(r, len);
}

static void cq_abort(void *arg, unsigned int ch)
{
	struct tdbk_file *f = arg;

	if (f->cq.reserved)
		tdb_ring_abort(&f->cq);
}

/* A built answer (a held one) into the ring, if there is room. */
static int cq_emit(void *arg, unsigned int ch, const void *msg, size_t len)
{
	struct tdbk_file *f = arg;
	void *p;

	if (!tdb_ring_has_room(&f->cq, f->cq.max_msg))
		return -EAGAIN;
	p = tdb_ring_reserve_err(&f->cq, len, NULL);
	if (!p)
		return -EAGAIN;
	memcpy(p, msg, len);
	tdbk_ring_commit(&f->cq, len);
	return 0;
}

/* Room for a message of len bytes (any message: max_msg at most). */
static bool cq_room(void *arg, unsigned int ch, size_t len)
{
	struct tdbk_file *f = arg;

	return tdb_ring_has_room(&f->cq, min_t(size_t, len, f->cq.max_msg));
}

static bool cq_too_long(void *arg, const char **msg)
{
	struct tdbk_file *f = arg;

	*msg = "the answer is longer than the completion ring's max_msg";
	return f->too_long;
}

/* tdb is recovering, or waits for its supervisor. */
static int dev_refuse(void *arg, unsigned int ch, const struct tdb_proto_msg *m,
		      struct tdb_proto_extack *ext)
{
	struct tdbk_file *f = arg;

	return tdbk_sup_refuse(f->file, &ext->msg);
}

/* WATCH's ack: where the feed is in the device file (its slot) and the
 * sequence number the watch starts at (include/tdb/kdev.h). */
static void set_cookie(struct tdb_proto_extack *ack, u32 seq, u64 slot)
{
	u64 off = slot * TDB_DEV_SLOT;
	struct tdb_dev_watch_cookie ck = {
		.seq = seq,
		.offset_lo = (u32)off,
		.offset_hi = (u32)(off >> 32),
	};

	BUILD_BUG_ON(sizeof(ck) > TDB_PROTO_COOKIE_MAX);
	memcpy(ack->cookie, &ck, sizeof(ck));
	ack->cookie_len = sizeof(ck);
}

/* TABLE_MAP's ack: the table's slot range in the device file, the
 * map's length and the map_gen it is good for (tdb/proto.h). */
static void set_map_cookie(struct tdb_proto_extack *ack,
			   const struct tdbo_out *res)
{
	u64 off = tdbo_table_map_slot(res->map) * TDB_DEV_SLOT;
	struct tdb_map_cookie ck = {
		.offset_lo = (u32)off,
		.offset_hi = (u32)(off >> 32),
		.max_extents = res->map_extents,
		.map_gen = res->map_gen,
	};

	BUILD_BUG_ON(sizeof(ck) > TDB_PROTO_COOKIE_MAX);
	memcpy(ack->cookie, &ck, sizeof(ck));
	ack->cookie_len = sizeof(ck);
}

static int dev_grant(void *arg, unsigned int ch, const struct nlmsghdr *req,
		     struct tdbo_out *res, struct tdb_proto_extack *ack,
		     const char **msg)
{
	struct tdbk_file *f = arg;

	if (res->feed)
		set_cookie(ack, res->feed_seq, tdbo_feed_slot(res->feed));
	if (res->map) {
		set_map_cookie(ack, res);
		tdbo_table_put(res->map);
		res->map = NULL;
		/* read by mmap() without the lock */
		WRITE_ONCE(f->granted, true);
	}
	return 0;
}

/* The held count moved: poll's view of the oldest, the global count,
 * and the timer at the oldest's deadline. */
static void dev_held_note(void *arg, int delta, const struct tdbo_held *first)
{
	struct tdbk_file *f = arg;

	spin_lock(&f->held_lock);
	f->nheld += delta;
	f->first_lsn = first ? first->lsn : 0;
	f->first_deadline = first ? (unsigned long)first->deadline : 0;
	spin_unlock(&f->held_lock);
	tdbk_held_account(delta);
	if (first && time_before(jiffies, (unsigned long)first->deadline))
		mod_timer(&f->held_timer, (unsigned long)first->deadline);
}

static const struct tdbo_conn_ops dev_conn_ops = {
	.reserve = cq_reserve,
	.commit = cq_commit,
	.abort = cq_abort,
	.emit = cq_emit,
	.room = cq_room,
	.grant = dev_grant,
	.refuse = dev_refuse,
	.too_long = cq_too_long,
	.held_note = dev_held_note,
};

static struct tdbo_counters *counters(void)
{
	return tdbo_owner_counters(dev_owner);
}

/* The client broke the ring protocol: cut it off. */
static void kill_client(struct tdbk_file *f, const char *why)
{
	if (f->dead)
		return;
	f->dead = true;
	tdb_ring_violation(&f->sq, why);
	tdb_ring_violation(&f->cq, why);
	tdb_fetch_add(&counters()->violations, 1);
	pr_warn_ratelimited("tdb: /dev/tdb client (pid %d, uid %u) cut off: %s\n",
			    task_tgid_nr(current),
			    from_kuid(&init_user_ns, current_uid()), why);
	wake_up_interruptible_poll(&f->wq, EPOLLERR);
}

/*
 * Go on with the dumps while the completion ring has room for their
 * parts.  A dump pauses only on a full ring: a run that wrote nothing
 * but went through its record budget (a PREFIX or unreadable tables
 * skipped records) is run again at once, since a pause with nothing to
 * read would leave a client waiting in poll() for an answer that no
 * ENTER is coming to produce.
 */
static void run_dumps(struct tdbk_file *f)
{
	bool blocked = false;

	while (tdbo_conn_ndumps(&f->sv) && !blocked) {
		tdbo_conn_dumps_run(&f->sv, &blocked);
		if (fatal_signal_pending(current))
			return;
		cond_resched();
	}
}

/* Whether the first held answer may go out now (poll, without the
 * file's lock). */
static bool held_ready(struct tdbk_file *f)
{
	bool ready = false;

	if (!READ_ONCE(f->nheld))
		return false;
	spin_lock(&f->held_lock);
	if (f->nheld)
		ready = f->first_lsn <= tdbk_log_durable_lsn() ||
			tdbk_hold_late_at(f->first_deadline);
	spin_unlock(&f->held_lock);
	return ready;
}

static void held_timer_fn(struct timer_list *t)
{
	struct tdbk_file *f = container_of(t, struct tdbk_file, held_timer);

	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

/* TDB_IOC_SUP_DURABLE moved (or the supervisor left): wake every file
 * that holds answers; its next ENTER sends what may go out. */
void tdbk_dev_durable(u64 lsn)
{
	struct tdbk_file *f;

	spin_lock(&dev_files_lock);
	list_for_each_entry(f, &dev_files, fnode)
		if (READ_ONCE(f->nheld))
			wake_up_interruptible_poll(&f->wq,
						   EPOLLIN | EPOLLRDNORM);
	spin_unlock(&dev_files_lock);
}

static long do_enter(struct tdbk_file *f)
{
	int seen = atomic_read(&f->feed_gen);
	long len;

	if (!f->attached)
		return -ENXIO;
	if (f->dead)
		return -EPROTO;
	/* Feeds written from here on wake the next poll(). */
	WRITE_ONCE(f->feed_seen, seen);
	if (tdb_ring_load(&f->sq)) {
		kill_client(f, f->sq.error);
		return -EPROTO;
	}
	/*
	 * As tdbd's worker paces a round: the dumps already running go on
	 * first, then every request the completion ring has room to answer
	 * is taken (a dump it starts is only registered: 8 may be in
	 * progress, the 9th is refused), then the dumps run again with
	 * what room is left.  A request never waits behind a dump.
	 */
	run_dumps(f);
	tdbo_conn_release(&f->sv);
	while (tdb_ring_has_room(&f->cq, f->cq.max_msg) &&
	       !tdbo_conn_held_full(&f->sv)) {
		if (fatal_signal_pending(current))
			break;
		len = tdbk_ring_pop(&f->sq);
		if (len <= 0)
			break;
		/* framed: the ring core checked its header */
		tdbo_serve(&f->sv, 0, f->sq.msg, (size_t)len);
		cond_resched();
	}
	run_dumps(f);
	tdbo_conn_release(&f->sv);
	if (f->sq.dead || f->cq.dead) {
		kill_client(f, f->sq.dead ? f->sq.error : f->cq.error);
		return -EPROTO;
	}
	tdb_ring_release(&f->sq);
	if (tdbk_ring_publish(&f->cq))
		wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
	return 0;
}

static bool good_ring_size(u32 size)
{
	return size >= TDB_RING_MIN_DATA && size <= TDB_DEV_RING_MAX &&
	       is_power_of_2(size);
}

/*
 * Rings are what a client costs that its memory cgroup does not pay
 * for: count the client against max_clients_per_uid and max_clients,
 * and its rings' memory against max_ring_memory_per_uid (the owner's
 * quota), before they are made; kring.c then counts them in
 * max_memory_mb.  An ioctl has no extended ack, so the refusal's
 * message (naming the module parameter) goes to the kernel log,
 * ratelimited.
 */
static int attach_charge(struct tdbk_file *f, u64 ring_bytes)
{
	const char *msg = NULL;
	int err = tdbo_client_attach_charge(f->client, ring_bytes, &msg);

	if (err && msg)
		pr_warn_ratelimited("tdb: TDB_IOC_ATTACH of pid %d refused "
				    "(uid %u): %s\n", task_tgid_nr(current),
				    tdbo_client_uid(f->client), msg);
	return err;
}

/* Both rings, counted in max_memory_mb by kring.c (root may use the
 * whole bound, another uid 7/8 of it); 0 or a negative errno, nothing
 * kept.  Under f->lock. */
static int attach_rings(struct tdbk_file *f, const struct tdb_dev_attach *a)
{
	u32 uid = tdbo_client_uid(f->client);
	int err;

	err = tdbk_ring_init(&f->sq, TDB_RING_SUBMIT, a->sq_data_size, !uid);
	if (!err) {
		err = tdbk_ring_init(&f->cq, TDB_RING_COMPLETE,
				     a->cq_data_size, !uid);
		if (err)
			tdbk_ring_free(&f->sq);
	}
	if (err == -ENOBUFS)
		pr_warn_ratelimited("tdb: TDB_IOC_ATTACH of pid %d refused "
				    "(uid %u): its rings (%zu KiB) would pass "
				    "max_memory_mb=%lu%s (%lu MiB in use by "
				    "tables, feeds, the log ring and rings)\n",
				    task_tgid_nr(current), uid,
				    (tdbk_ring_bytes(a->sq_data_size) +
				     tdbk_ring_bytes(a->cq_data_size)) >> 10,
				    tdbk_mem_limit() >> 20,
				    uid ? " (the last eighth is kept for root)" :
					  "",
				    tdbk_mem_used() >> 20);
	return err;
}

static long do_attach(struct tdbk_file *f, void __user *arg)
{
	struct tdb_dev_attach a;
	const char *msg = NULL;
	unsigned int i;
	int err;

	err = tdbk_sup_refuse(f->file, &msg);
	if (err) {
		pr_warn_ratelimited("tdb: TDB_IOC_ATTACH of pid %d refused: "
				    "%s\n", task_tgid_nr(current), msg);
		return err;
	}

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if (a.version != TDB_DEV_VERSION)
		return -EPROTONOSUPPORT;
	if (a.flags)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(a.reserved); i++)
		if (a.reserved[i])
			return -EINVAL;
	if (!good_ring_size(a.sq_data_size) || !good_ring_size(a.cq_data_size))
		return -EINVAL;

	mutex_lock(&f->lock);
	if (f->attached) {
		mutex_unlock(&f->lock);
		return -EBUSY;
	}
	err = attach_charge(f, (u64)tdbk_ring_bytes(a.sq_data_size) +
			       tdbk_ring_bytes(a.cq_data_size));
	if (!err) {
		err = attach_rings(f, &a);
		if (err)
			tdbo_client_attach_uncharge(f->client);
	}
	if (!err) {
		/* The client's reader slot: its sq header, until
		 * tdbo_client_free() (release). */
		tdbo_client_set_reader(f->client, f->sq.hdr);
		tdb_fetch_add(&counters()->rings, 2);
		/* poll() and mmap() look at the rings without the lock. */
		smp_store_release(&f->attached, true);
		a.sq_offset = TDB_DEV_OFF_SQ;
		a.cq_offset = TDB_DEV_OFF_CQ;
		a.sq_max_msg = f->sq.max_msg;
		a.cq_max_msg = f->cq.max_msg;
	}
	mutex_unlock(&f->lock);
	if (err)
		return err;
	/* After the unlock: a fault here takes mmap_lock.  The rings stay
	 * attached if this fails; the client learns the offsets from
	 * kdev.h and max_msg from the ring headers. */
	if (copy_to_user(arg, &a, sizeof(a)))
		return -EFAULT;
	return 0;
}

static long tdbk_dev_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct tdbk_file *f = file->private_data;
	long ret;

	switch (cmd) {
	case TDB_IOC_ATTACH:
		return do_attach(f, (void __user *)arg);
	case TDB_IOC_ENTER:
		if (arg)
			return -EINVAL;
		mutex_lock(&f->lock);
		ret = do_enter(f);
		mutex_unlock(&f->lock);
		return ret;
	case TDB_IOC_SUP_CLAIM:
	case TDB_IOC_SUP_DURABLE:
	case TDB_IOC_SUP_READ:
	case TDB_IOC_SUP_READY:
	case TDB_IOC_SUP_STATS:
	case TDB_IOC_SUP_VERSION:
		return tdbk_sup_ioctl(file, cmd, arg);
	}
	return -ENOTTY;
}

/* sup.c: file now holds the supervisor's role: its client may PUT with
 * TDB_A_SET_VERSION (the restore gives each record its version back);
 * the permission ends with the file, as the role does. */
void tdbk_dev_sup_claimed(struct file *file)
{
	struct tdbk_file *f = file->private_data;

	tdbo_client_allow_set_version(f->client);
}

/* --- poll ------------------------------------------------------------------ */

/* Called by the owner when a feed this client watches is written, from
 * the writer's context: atomic and waitqueue work only. */
static void feed_wake(void *arg)
{
	struct tdbk_file *f = arg;

	atomic_inc(&f->feed_gen);
	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

static __poll_t tdbk_dev_poll(struct file *file, poll_table *wait)
{
	struct tdbk_file *f = file->private_data;
	__poll_t mask = 0;

	poll_wait(file, &f->wq, wait);
	if (tdbk_sup_is(file))
		mask |= tdbk_sup_poll(file, wait);
	if (!smp_load_acquire(&f->attached))
		return mask;
	if (READ_ONCE(f->dead))
		return EPOLLERR;
	if (tdb_ring_unread(&f->cq) || held_ready(f) ||
	    atomic_read(&f->feed_gen) != READ_ONCE(f->feed_seen))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

/* --- mmap ------------------------------------------------------------------ */

/* A feed mapping: the reference is shared by the vmas of one mmap (a
 * split or fork calls open()); the last close() drops it. */
struct feed_map {
	refcount_t ref;
	struct tdbo_feed *feed;
};

static void feed_vm_open(struct vm_area_struct *vma)
{
	struct feed_map *fm = vma->vm_private_data;

	refcount_inc(&fm->ref);
}

static void feed_vm_close(struct vm_area_struct *vma)
{
	struct feed_map *fm = vma->vm_private_data;

	if (refcount_dec_and_test(&fm->ref)) {
		tdbo_feed_put(fm->feed);
		kfree(fm);
	}
}

static const struct vm_operations_struct feed_vm_ops = {
	.open = feed_vm_open,
	.close = feed_vm_close,
};

static int tdbk_dev_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tdbk_file *f = file->private_data;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 slot = off >> 32, in = off & (TDB_DEV_SLOT - 1);
	size_t len = vma->vm_end - vma->vm_start, size;
	struct feed_map *fm = NULL;
	size_t writable;        /* bytes from the ring's start */
	void *mem;
	int err;

	/* vm_pgoff << PAGE_SHIFT must not have lost bits. */
	if (vma->vm_pgoff > (U64_MAX >> PAGE_SHIFT))
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (slot == 0 && in >= TDB_DEV_OFF_LOG) {
		/* the log ring: the supervisor's, read-only */
		if (!tdbk_sup_is(file))
			return -EACCES;
		return tdbk_log_mmap(vma, in - TDB_DEV_OFF_LOG);
	}
	if (!smp_load_acquire(&f->attached))
		return -EINVAL;
	if (slot >= TDB_DEV_SLOT_MAP_FIRST)
		return tdbk_map_mmap(f->client, READ_ONCE(f->granted), vma,
				     off);
	if (slot == 0) {
		mem = f->sq.hdr;
		size = tdb_ring_map_size(f->sq.data_size);
		writable = size;
	} else if (slot == 1) {
		mem = f->cq.hdr;
		size = tdb_ring_map_size(f->cq.data_size);
		writable = TDB_RING_HDR_SIZE;
	} else {
		fm = kzalloc(sizeof(*fm), GFP_KERNEL);
		if (!fm)
			return -ENOMEM;
		mutex_lock(&f->lock);
		fm->feed = tdbo_feed_get(f->client, slot);
		mutex_unlock(&f->lock);
		if (!fm->feed) {
			kfree(fm);
			return -EACCES;
		}
		refcount_set(&fm->ref, 1);
		mem = tdbo_feed_mem(fm->feed);
		size = tdbo_feed_size(fm->feed);
		writable = 0;
	}
	err = -EINVAL;
	if (in > size || len > size - in)
		goto out;
	if (in + len > writable) {
		/* Part of it is read-only: no PROT_WRITE, now or later. */
		err = -EACCES;
		if (vma->vm_flags & VM_WRITE)
			goto out;
		tdbk_vma_clear_flags(vma, VM_MAYWRITE);
	}
	err = remap_vmalloc_range(vma, mem, in >> PAGE_SHIFT);
	if (err)
		goto out;
	if (fm) {
		vma->vm_private_data = fm;
		vma->vm_ops = &feed_vm_ops;
	}
	return 0;
out:
	if (fm) {
		tdbo_feed_put(fm->feed);
		kfree(fm);
	}
	return err;
}

/* --- open / release ------------------------------------------------------- */

static int tdbk_dev_open(struct inode *inode, struct file *file)
{
	struct tdbk_file *f;
	int err = 0;

	f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);
	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	f->file = file;
	spin_lock_init(&f->held_lock);
	timer_setup(&f->held_timer, held_timer_fn, 0);
	init_waitqueue_head(&f->wq);
	atomic_set(&f->feed_gen, 0);
	f->client = tdbk_client_new(dev_owner, file->f_cred, true, feed_wake,
				    f, &err);
	if (!f->client) {
		kfree(f);
		return err ? err : -ENOMEM;
	}
	tdbo_client_accept(f->client);
	tdbo_conn_init(&f->sv, &dev_conn_ops, f, &tdbk_hold_policy, NULL,
		       f->client, counters());
	f->sv.framed = true;
	f->sv.held_max = TDBK_DEV_MAX_HELD;
	file->private_data = f;
	spin_lock(&dev_files_lock);
	list_add(&f->fnode, &dev_files);
	spin_unlock(&dev_files_lock);
	/* Every file maps in one address_space, where a drop can find
	 * (and unmap) every mapping of its table. */
	tdbk_map_file_open(file);
	return stream_open(inode, file);
}

static int tdbk_dev_release(struct inode *inode, struct file *file)
{
	struct tdbk_file *f = file->private_data;

	/* No ioctl, mmap or poll can run now: the file is gone.  A
	 * supervisor's death ends its role (tables and log stay). */
	tdbk_sup_release(file);
	spin_lock(&dev_files_lock);
	list_del(&f->fnode);
	spin_unlock(&dev_files_lock);
	/* its held answers dropped (held_now given back), dumps freed */
	tdbo_conn_fini(&f->sv);
	timer_delete_sync(&f->held_timer);
	/* Aborts its transactions and drops its watches: no feed_wake()
	 * after this returns; and takes its reader slot off the owner's
	 * list, so the rings can go now. */
	tdbo_client_free(f->client);
	if (f->attached) {
		tdbk_ring_free(&f->sq);
		tdbk_ring_free(&f->cq);
		tdb_fetch_sub(&counters()->rings, 2);
		tdb_fetch_add(&counters()->rings_freed, 2);
	}
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations tdbk_dev_fops = {
	.owner = THIS_MODULE,   /* rmmod is refused while a file is open */
	.open = tdbk_dev_open,
	.release = tdbk_dev_release,
	.unlocked_ioctl = tdbk_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = tdbk_dev_mmap,
	.poll = tdbk_dev_poll,
	/* No .llseek: NULL is "cannot seek" (no_llseek, gone in 6.12, was
	 * NULL too; compat/kcompat.h). */
};

static struct miscdevice tdbk_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "tdb",
	.fops = &tdbk_dev_fops,
};

int tdbk_dev_init(struct tdbo_owner *o)
{
	int err;

	if (dev_mode & ~0777u) {
		pr_err("tdb: dev_mode %#o has bits other than 0777\n",
		       dev_mode);
		return -EINVAL;
	}
	dev_owner = o;
	tdbk_misc.mode = (umode_t)dev_mode;
	err = tdbk_map_init(o);
	if (err)
		return err;
	err = misc_register(&tdbk_misc);
	if (err)
		tdbk_map_exit();
	return err;
}

void tdbk_dev_exit(void)
{
	misc_deregister(&tdbk_misc);
	tdbk_map_exit();
	dev_owner = NULL;
}
