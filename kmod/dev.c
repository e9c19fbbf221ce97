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
 *  - Held answers (sync always): the answer to a change whose record
 *    tdb.ko logged (res.lsn) above the durable LSN is taken back out of
 *    the completion ring before it is published and kept, in order, in
 *    f->held (at most TDBK_DEV_MAX_HELD: ENTER stops consuming then);
 *    ENTER writes them back once TDB_IOC_SUP_DURABLE covers them, and
 *    poll() says POLLIN as soon as it does (tdbk_dev_durable wakes
 *    every file that holds any).  With no supervisor attached, one
 *    past its deadline becomes -ETIMEDOUT (the change stays applied and
 *    logged); a timer wakes poll() at the deadline.
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
#include "kring.h"
#include "transport.h"
#include "sup.h"

/* At most this many dumps (SCAN, TABLE_LIST) in progress per client,
 * as tdbd's MAX_DUMPS. */
#define TDBK_DEV_MAX_DUMPS 8

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
static atomic64_t held_now = ATOMIC64_INIT(0);
static atomic64_t held_timed_out = ATOMIC64_INIT(0);

/* An answer held until its change is durable. */
struct held_answer {
	struct list_head node;
	u64 lsn;
	unsigned long deadline;         /* jiffies */
	struct nlmsghdr req;            /* for an -ETIMEDOUT answer */
	u32 len;                        /* bytes of msgs */
	unsigned char msgs[];           /* the answer's messages, aligned */
};

/* A dump in progress, and the request it answers (for NLMSG_DONE). */
struct dev_dump {
	struct list_head node;
	struct tdbo_dump *d;            /* NULL once finished */
	struct nlmsghdr req;
	int result;                     /* once finished: DONE's error */
	const char *msg;                /* and its message: NULL or msgbuf */
	char msgbuf[TDB_PROTO_EXTACK_MAX + 1];  /* a copy: the owner's text
						 * may live in the dump */
};

struct tdbk_file {
	struct mutex lock;
	struct file *file;
	struct tdbo_client *client;
	struct tdb_ring sq, cq;
	bool attached;          /* set under lock, with release */
	bool dead;              /* broke the ring protocol */
	bool granted;           /* TABLE_MAP answered with a map: table
				 * slots may be mapped (kmap.c) */
	struct list_head dumps; /* struct dev_dump, oldest first */
	unsigned int ndumps;
	struct tdb_proto_msg m; /* the request being run (too big for the
				 * stack) */
	wait_queue_head_t wq;   /* poll() */
	/* Answers held for durability (sync always under a supervisor),
	 * oldest first: added and taken under lock and held_lock; poll
	 * looks at the first under held_lock alone. */
	struct list_head held;
	unsigned int nheld;
	spinlock_t held_lock;
	struct timer_list held_timer;   /* the first one's deadline */
	struct list_head fnode;         /* dev_files */
	atomic_t feed_gen;      /* bumped by every write to a watched feed */
	int feed_seen;          /* feed_gen when the last ENTER started */
};

/* A sink over the completion ring. */
struct cq_sink {
	struct tdbo_sink s;
	struct tdbk_file *f;
	unsigned int written;
	size_t refused;         /* a message longer than the cq's max_msg */
};

static void *cq_reserve(struct tdbo_sink *s, size_t len)
{
	struct cq_sink *cs = container_of(s, struct cq_sink, s);

	if (len > cs->f->cq.max_msg) {
		cs->refused = len;
		return NULL;
	}
	return tdb_ring_reserve_err(&cs->f->cq, len, NULL);
}

static void cq_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct cq_sink *cs = container_of(s, struct cq_sink, s);
	struct tdb_ring *r = &cs->f->cq;

	if (WARN_ON_ONCE(p != r->data + (r->pos & r->mask))) {
		tdb_ring_abort(r);
		return;
	}
	tdbk_ring_commit(r, len);
	cs->written++;
}

static void cq_sink_init(struct cq_sink *cs, struct tdbk_file *f)
{
	cs->s.reserve = cq_reserve;
	cs->s.commit = cq_commit;
	/* a reservation stays open until committed or aborted */
	cs->s.in_read_section = false;
	cs->f = f;
	cs->written = 0;
	cs->refused = 0;
}

static struct tdbo_counters *counters(void)
{
	return tdbo_owner_counters(dev_owner);
}

/* A request answered here, before tdbo_exec() saw it: STATS counts it
 * (the owner counts the ones it runs). */
static void count_refused(void)
{
	tdb_fetch_add(&counters()->requests, 1);
	tdb_fetch_add(&counters()->errors, 1);
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
 * NLMSG_ERROR (done false) or NLMSG_DONE (done true) for req into the
 * completion ring.  False if there is no room (the caller made sure
 * there is, except for a DONE after a dump filled the ring).
 */
static bool answer(struct tdbk_file *f, const struct nlmsghdr *req, int err,
		   const struct tdb_proto_extack *ext, bool done)
{
	struct cq_sink cs;
	int rc;

	cq_sink_init(&cs, f);
	rc = tdbo_answer_status(&cs.s, req, err, ext, done);
	if (rc && f->cq.reserved)
		tdb_ring_abort(&f->cq);
	return !rc;
}

static void dump_finish(struct tdbk_file *f, struct dev_dump *dd, int result,
			const char *msg)
{
	dd->msg = NULL;
	if (msg) {
		strscpy(dd->msgbuf, msg, sizeof(dd->msgbuf));
		dd->msg = dd->msgbuf;
	}
	tdbo_dump_free(dd->d);
	dd->d = NULL;
	dd->result = result;
}

/*
 * Go on with the dumps, oldest first, while the completion ring has
 * room for its largest message.  True when every dump is finished and
 * answered (requests may be taken again), false when the ring is full
 * (or a fatal signal stopped us).  A dump pauses only on a full ring:
 * a run that wrote nothing but went through its record budget is run
 * again at once.
 */
static bool run_dumps(struct tdbk_file *f)
{
	struct dev_dump *dd, *tmp;

	list_for_each_entry_safe(dd, tmp, &f->dumps, node) {
		while (dd->d) {
			struct tdb_proto_extack ext = { NULL };
			struct cq_sink cs;
			int ret;

			if (!tdb_ring_has_room(&f->cq, f->cq.max_msg))
				return false;
			cq_sink_init(&cs, f);
			ret = tdbo_dump_run(dd->d, &cs.s, &ext);
			if (f->cq.reserved)
				tdb_ring_abort(&f->cq);
			if (ret > 0 && cs.written) {
				cond_resched();
				continue;
			}
			if (ret > 0 && cs.refused) {
				/* It can never fit: end the dump. */
				dump_finish(f, dd, -EMSGSIZE,
					    "a dump part is longer than the "
					    "completion ring's max_msg");
				break;
			}
			if (ret > 0) {
				/* Nothing written with room to spare: the
				 * run used its record budget (a PREFIX or
				 * unreadable tables skipped records).  It
				 * made progress, so go on now: a pause with
				 * nothing to read would leave a client
				 * waiting in poll() for an answer that no
				 * ENTER is coming to produce. */
				if (fatal_signal_pending(current))
					return false;
				cond_resched();
				continue;
			}
			dump_finish(f, dd, ret, ret ? ext.msg : NULL);
		}
		if (!answer(f, &dd->req, dd->result,
			    &(struct tdb_proto_extack){ .msg = dd->msg }, true))
			return false;
		list_del(&dd->node);
		f->ndumps--;
		kfree(dd);
	}
	return true;
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

/* Run one request (a private copy, len bytes) and answer it; *lsn: the
 * log record of the change it made (0: none, or it failed). */
static void run_one(struct tdbk_file *f, const void *msg, size_t len,
		    u64 *lsn)
{
	struct tdb_proto_msg *m = &f->m;
	struct tdb_proto_extack ext = { NULL };
	struct tdbo_dump *dump = NULL;
	struct tdbo_out res;
	struct dev_dump *dd = NULL;
	struct cq_sink cs;
	int err;

	err = tdb_proto_parse(msg, len, TDB_PROTO_REQUEST, m, &ext);
	if (err) {
		count_refused();
		/* The ring core checked the frame: there is a header. */
		answer(f, m->nlh ? m->nlh : msg, err, &ext, false);
		return;
	}
	err = tdbk_sup_refuse(f->file, &ext.msg);
	if (err) {
		/* tdb is recovering (or waits for its supervisor) */
		count_refused();
		answer(f, m->nlh, err, &ext, false);
		return;
	}
	if (tdb_proto_cmd_is_dump(m->cmd)) {
		if (f->ndumps >= TDBK_DEV_MAX_DUMPS) {
			count_refused();
			ext.msg = "too many dumps in progress on this "
				  "connection (8)";
			answer(f, m->nlh, -EBUSY, &ext, false);
			return;
		}
		dd = kzalloc(sizeof(*dd), GFP_KERNEL_ACCOUNT);
		if (!dd) {
			count_refused();
			ext.msg = "out of memory";
			answer(f, m->nlh, -ENOMEM, &ext, false);
			return;
		}
	}
	cq_sink_init(&cs, f);
	err = tdbo_exec(f->client, m, &cs.s, &ext, &res);
	dump = res.dump;
	if (err >= 0 && !dump)
		*lsn = res.lsn;
	if (f->cq.reserved)
		tdb_ring_abort(&f->cq);
	if (err < 0) {
		if (dump)
			tdbo_dump_free(dump);
		tdbo_table_put(res.map);
		kfree(dd);
		if (cs.refused) {
			/* Ours, not the owner's: say which limit it was. */
			memset(&ext, 0, sizeof(ext));
			ext.msg = "the reply is longer than the completion "
				  "ring's max_msg";
			err = -EMSGSIZE;
		}
		answer(f, m->nlh, err, &ext, false);
		return;
	}
	if (dump) {
		if (WARN_ON_ONCE(!dd)) {
			tdbo_dump_free(dump);
			answer(f, m->nlh, -EIO, NULL, false);
			return;
		}
		dd->d = dump;
		dd->req = *m->nlh;
		list_add_tail(&dd->node, &f->dumps);
		f->ndumps++;
		return;
	}
	if (dd) {
		/* A dump command answered without a dump: end it empty. */
		kfree(dd);
		answer(f, m->nlh, 0, NULL, true);
		return;
	}
	if (tdb_proto_cmd_is_ack(m->cmd)) {
		/* An ack carries the cookie (WATCH), nothing else. */
		struct tdb_proto_extack ack = { 0 };

		if (res.feed)
			set_cookie(&ack, res.feed_seq,
				   tdbo_feed_slot(res.feed));
		if (res.map) {
			set_map_cookie(&ack, &res);
			tdbo_table_put(res.map);
			/* read by mmap() without the lock */
			WRITE_ONCE(f->granted, true);
		}
		answer(f, m->nlh, 0, &ack, false);
		return;
	}
	if (!cs.written) {
		/* A reply command must get one answer. */
		memset(&ext, 0, sizeof(ext));
		if (cs.refused) {
			ext.msg = "the reply is longer than the completion "
				  "ring's max_msg";
			err = -EMSGSIZE;
		} else {
			ext.msg = "no reply";
			err = -EIO;
		}
		answer(f, m->nlh, err, &ext, false);
	}
}

/* --- answers held for durability --------------------------------------- */

static bool held_must(u64 lsn)
{
	return lsn && lsn != U64_MAX &&
	       tdbk_sup_sync() == TDB_SUP_SYNC_ALWAYS &&
	       lsn > tdbk_log_durable_lsn();
}

/* The next message at or after ring index *i, below end (padding
 * passed over), or NULL; *i moves past it.  Used on the answer ENTER
 * just wrote, not published yet: the kernel's own bytes. */
static const struct nlmsghdr *next_answer(const struct tdb_ring *r, u64 *i,
					  u64 end)
{
	while (*i < end) {
		u32 off = (u32)(*i & r->mask), left = r->data_size - off;
		const struct nlmsghdr *nh = (void *)(r->data + off);

		if (left < NLMSG_HDRLEN) {
			*i += left;
			continue;
		}
		*i += NLMSG_ALIGN(nh->nlmsg_len);
		if (nh->nlmsg_type != NLMSG_NOOP)
			return nh;
	}
	return NULL;
}

/*
 * The answer to req (the messages the completion ring took from start
 * on, unpublished) waits until record lsn is durable: move it out of
 * the ring into f->held.  Without memory it goes out as an error (the
 * change is applied and logged all the same).
 */
static void hold(struct tdbk_file *f, const struct nlmsghdr *req, u64 start,
		 u64 lsn)
{
	struct tdb_ring *r = &f->cq;
	const struct nlmsghdr *nh;
	struct held_answer *h;
	u64 i, end = r->pos;
	u32 len = 0;

	i = start;
	while ((nh = next_answer(r, &i, end)))
		len += NLMSG_ALIGN(nh->nlmsg_len);
	h = kmalloc(struct_size(h, msgs, len), GFP_KERNEL_ACCOUNT);
	r->pos = start;         /* unpublished: simply taken back */
	if (!h) {
		answer(f, req, -ENOMEM, &(struct tdb_proto_extack){ .msg =
		       "the change is applied, but tdb.ko had no memory to "
		       "hold its answer until it is durable" }, false);
		return;
	}
	h->lsn = lsn;
	h->deadline = jiffies + msecs_to_jiffies(tdbk_sup_deadline_ms());
	h->req = *req;
	h->len = 0;
	i = start;
	while ((nh = next_answer(r, &i, end))) {
		memcpy(h->msgs + h->len, nh, nh->nlmsg_len);
		h->len += NLMSG_ALIGN(nh->nlmsg_len);
	}
	spin_lock(&f->held_lock);
	list_add_tail(&h->node, &f->held);
	WRITE_ONCE(f->nheld, f->nheld + 1);
	spin_unlock(&f->held_lock);
	atomic64_inc(&held_now);
	if (f->nheld == 1)
		mod_timer(&f->held_timer, h->deadline);
}

/* Copy a held answer's messages into the completion ring (room was
 * checked: at most max_msg each, and the ring has max_msg free). */
static bool held_write(struct tdbk_file *f, struct held_answer *h)
{
	u32 off = 0;

	while (off < h->len) {
		const struct nlmsghdr *nh = (void *)(h->msgs + off);
		void *p;

		if (!tdb_ring_has_room(&f->cq, nh->nlmsg_len))
			return false;
		p = tdb_ring_reserve_err(&f->cq, nh->nlmsg_len, NULL);
		if (!p)
			return false;
		memcpy(p, nh, nh->nlmsg_len);
		tdbk_ring_commit(&f->cq, nh->nlmsg_len);
		off += NLMSG_ALIGN(nh->nlmsg_len);
	}
	return true;
}

static bool held_late(const struct held_answer *h, unsigned long now)
{
	return !tdbk_sup_attached() && time_after_eq(now, h->deadline);
}

/* Whether the first held answer may go out now (poll). */
static bool held_ready(struct tdbk_file *f)
{
	struct held_answer *h;
	bool ready = false;

	if (!READ_ONCE(f->nheld))
		return false;
	spin_lock(&f->held_lock);
	h = list_first_entry_or_null(&f->held, struct held_answer, node);
	if (h)
		ready = h->lsn <= tdbk_log_durable_lsn() ||
			held_late(h, jiffies);
	spin_unlock(&f->held_lock);
	return ready;
}

/* Under f->lock: answers durable now go out, in order; those past
 * their deadline with no supervisor get -ETIMEDOUT.  The timer follows
 * the first that is left. */
static void held_flush(struct tdbk_file *f)
{
	static const struct tdb_proto_extack late = { .msg =
		"the change is applied but not yet durable: no supervisor "
		"(tdbd) is attached" };
	u64 durable = tdbk_log_durable_lsn();
	struct held_answer *h;

	while ((h = list_first_entry_or_null(&f->held, struct held_answer,
					     node))) {
		if (!tdb_ring_has_room(&f->cq, f->cq.max_msg))
			break;
		if (h->lsn <= durable) {
			if (!held_write(f, h))
				break;
		} else if (held_late(h, jiffies)) {
			if (!answer(f, &h->req, -ETIMEDOUT, &late, false))
				break;
			atomic64_inc(&held_timed_out);
		} else {
			break;
		}
		spin_lock(&f->held_lock);
		list_del(&h->node);
		WRITE_ONCE(f->nheld, f->nheld - 1);
		spin_unlock(&f->held_lock);
		atomic64_dec(&held_now);
		kfree(h);
	}
	if (h && time_before(jiffies, h->deadline))
		mod_timer(&f->held_timer, h->deadline);
}

static void held_timer_fn(struct timer_list *t)
{
	struct tdbk_file *f = container_of(t, struct tdbk_file, held_timer);

	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

static void held_free(struct tdbk_file *f)
{
	struct held_answer *h, *tmp;

	timer_delete_sync(&f->held_timer);
	list_for_each_entry_safe(h, tmp, &f->held, node) {
		atomic64_dec(&held_now);
		kfree(h);
	}
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

void tdbk_dev_held_stats(u64 *held, u64 *timed_out)
{
	*held = atomic64_read(&held_now);
	*timed_out = atomic64_read(&held_timed_out);
}

/* Run one request and answer it, or hold its answer (sync always). */
static void run_request(struct tdbk_file *f, const void *msg, size_t len)
{
	u64 start = f->cq.pos, lsn = 0;

	run_one(f, msg, len, &lsn);
	if (held_must(lsn) && f->m.nlh)
		hold(f, f->m.nlh, start, lsn);
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
	if (f->nheld)
		held_flush(f);
	while (tdb_ring_has_room(&f->cq, f->cq.max_msg) &&
	       f->nheld < TDBK_DEV_MAX_HELD) {
		if (fatal_signal_pending(current))
			break;
		len = tdbk_ring_pop(&f->sq);
		if (len <= 0)
			break;
		run_request(f, f->sq.msg, (size_t)len);
		cond_resched();
	}
	if (!list_empty(&f->dumps))
		run_dumps(f);
	if (f->nheld)
		held_flush(f);
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
	INIT_LIST_HEAD(&f->dumps);
	INIT_LIST_HEAD(&f->held);
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
	struct dev_dump *dd, *tmp;

	/* No ioctl, mmap or poll can run now: the file is gone.  A
	 * supervisor's death ends its role (tables and log stay). */
	tdbk_sup_release(file);
	spin_lock(&dev_files_lock);
	list_del(&f->fnode);
	spin_unlock(&dev_files_lock);
	held_free(f);
	list_for_each_entry_safe(dd, tmp, &f->dumps, node) {
		if (dd->d)
			tdbo_dump_free(dd->d);
		kfree(dd);
	}
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
