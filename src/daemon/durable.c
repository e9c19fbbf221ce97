// SPDX-License-Identifier: GPL-2.0-only
/*
 * durable.c - serving's answers held until their WAL record is written
 * or durable (struct held, a FIFO per client in LSN order), and the hook
 * durability tells when records become durable (tdbd_on_durable: the
 * workers holding answers are woken, kernel mode tells tdb.ko).  The
 * rest of durability (the WAL's hooks, dirty sets, checkpoints,
 * recovery) is in durable/ (durable/durable.h); this file only reads the
 * WAL's LSNs (wal.h).
 *
 * Invariant: every worker round ends with one wal_write of what was
 * appended (tdbd_log_write) before its answers go out; a change's answer
 * is held until its record is written (sync batch, none) or durable
 * (always).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "tdbd.h"
#include "wal.h"

/* --- held acknowledgements ------------------------------------------------- */

/*
 * Every change's answer waits for its record: written (sync batch and
 * none: a crash of tdbd then loses nothing acknowledged) or durable
 * (always).  Held answers are a FIFO per client in LSN order, an array
 * that grows to at most c->held_max answers or c->held_bytes_max bytes of
 * their requests (TDBD_HELD_MAX and TDBD_HELD_BYTES shared by the
 * connections of its uid on its worker: worker.c; then we read no more
 * of the client's requests).
 */
struct held {
	uint64_t lsn;
	enum chan ch;
	struct nlmsghdr req;
	void *reply;            /* a reply to send (INCR's), malloc()ed;
				 * NULL: an ack, rebuilt from req */
	uint32_t reply_len;
};

/* The LSN answers may go out up to. */
static uint64_t ack_lsn(const struct tdbd *d)
{
	return d->cfg.sync == WAL_SYNC_ALWAYS ? wal_durable(d->wal) :
						wal_written(d->wal);
}

static void held_count(struct client *c, int delta)
{
	c->nheld += (unsigned int)delta;
	__atomic_add_fetch(&c->w->nheld, (unsigned int)delta, __ATOMIC_SEQ_CST);
}

static int held_grow(struct client *c)
{
	unsigned int cap = c->held_cap ? c->held_cap * 2 : 16, i;
	struct held *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < c->nheld; i++)
		v[i] = c->held[(c->held_head + i) % c->held_cap];
	free(c->held);
	c->held = v;
	c->held_cap = cap;
	c->held_head = 0;
	return 0;
}

bool tdbd_ack_later(struct client *c, enum chan ch,
		    const struct nlmsghdr *req, uint64_t lsn)
{
	return tdbd_answer_later(c, ch, req, lsn, NULL, 0);
}

bool tdbd_answer_later(struct client *c, enum chan ch,
		       const struct nlmsghdr *req, uint64_t lsn,
		       const void *reply, size_t reply_len)
{
	struct tdbd *d = c->d;
	void *copy = NULL;
	struct held *h;

	if (!d->wal || lsn <= ack_lsn(d))
		return false;
	if (reply && !(copy = malloc(reply_len ? reply_len : 1))) {
		/* no memory to hold the reply: wait here */
		wal_write(d->wal);
		if (d->cfg.sync == WAL_SYNC_ALWAYS)
			wal_sync_to(d->wal, lsn);
		return false;
	}
	if (copy)
		memcpy(copy, reply, reply_len);
	if (c->nheld == c->held_cap && held_grow(c)) {
		free(copy);
		/* no memory to wait asynchronously: wait here */
		wal_write(d->wal);
		if (d->cfg.sync == WAL_SYNC_ALWAYS)
			wal_sync_to(d->wal, lsn);
		return false;
	}
	h = &c->held[(c->held_head + c->nheld) % c->held_cap];
	h->lsn = lsn;
	h->ch = ch;
	h->req = *req;
	h->reply = copy;
	h->reply_len = (uint32_t)reply_len;
	held_count(c, 1);
	c->held_bytes += req->nlmsg_len;
	if (d->cfg.sync == WAL_SYNC_ALWAYS)
		wal_kick(d->wal);
	return true;
}

void tdbd_held_release(struct client *c)
{
	struct tdbd *d = c->d;
	uint64_t upto = c->nheld ? ack_lsn(d) : 0;
	int failed = c->nheld ? wal_failed(d->wal) : 0;
	unsigned char buf[TDB_PROTO_ERROR_MAX];

	while (c->nheld) {
		struct held *h = &c->held[c->held_head];
		struct tdb_proto_extack ext = { 0 };
		int err = 0;
		long n;

		if (h->lsn > upto && !failed)
			break;
		if (h->lsn > upto) {
			err = -EIO;
			ext.msg = "the WAL could not be written or synced (a "
				  "write or fdatasync failed): this change is "
				  "applied but may not survive a crash; tdbd "
				  "needs a restart";
		}
		if (h->reply && !err) {
			tdbd_client_emit(c, h->ch, h->reply, h->reply_len);
		} else {
			n = tdb_proto_error(buf, sizeof(buf), &h->req, err,
					    &ext);
			if (n > 0)
				tdbd_client_emit(c, h->ch, buf, (size_t)n);
		}
		free(h->reply);
		h->reply = NULL;
		c->held_head = (c->held_head + 1) % c->held_cap;
		held_count(c, -1);
		c->held_bytes -= h->req.nlmsg_len;
	}
}

void tdbd_held_free(struct client *c)
{
	unsigned int i;

	for (i = 0; i < c->nheld; i++)
		free(c->held[(c->held_head + i) % c->held_cap].reply);
	if (c->nheld)
		held_count(c, -(int)c->nheld);
	c->held_bytes = 0;
	free(c->held);
	c->held = NULL;
	c->held_cap = c->held_head = 0;
}

bool tdbd_held_full(const struct client *c)
{
	/* 0: not on a worker yet (worker.c sets them) */
	return c->nheld >= (c->held_max ? c->held_max : TDBD_HELD_MAX) ||
	       c->held_bytes >= (c->held_bytes_max ? c->held_bytes_max :
				 TDBD_HELD_BYTES);
}

/* The flusher thread: records became durable (or the log failed). */
static void on_durable(void *arg, uint64_t lsn)
{
	struct tdbd *d = arg;
	unsigned int i;

	if (d->kern && d->cfg.sync != WAL_SYNC_NONE)
		tdbd_kernel_durable(d, wal_durable(d->wal));
	(void)lsn;
	pthread_mutex_lock(&d->wake_lock);
	for (i = 0; d->wake_on && i < d->nworkers; i++)
		if (__atomic_load_n(&d->workers[i].nheld, __ATOMIC_SEQ_CST))
			tdbd_worker_wake(&d->workers[i]);
	pthread_mutex_unlock(&d->wake_lock);
}

/* The hook main.c passes to tdbd_durable_start (durable/durable.h). */
void tdbd_on_durable(void *arg, uint64_t lsn)
{
	on_durable(arg, lsn);
}
