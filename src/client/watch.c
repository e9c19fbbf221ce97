// SPDX-License-Identifier: MIT
/*
 * watch.c - watches: a table's change feed, mapped read-only.
 *
 * WATCH goes over the socket; its ack carries the feed's memfd, which we
 * map (header and data read-only) and read as a TDB_RING_FEED consumer.
 * The feed is the table's, shared by all its watchers, so it may carry
 * changes to any key: the prefix filter is applied here.  The feed
 * reader starts at the newest message when it attaches, so changes made
 * between tdbd's handling of WATCH and our mapping are not seen (changes
 * this connection makes after tdbc_watch returns always are).
 *
 * tdb.ko (/dev/tdb): WATCH goes over the submission ring, its ack's
 * cookie (struct tdb_dev_watch_cookie) gives the start sequence number
 * and the feed's mmap offset in the device file (kdev.c maps it), and
 * waiting is poll(2) on the device after an ENTER instead of a futex on
 * the feed.  Over generic netlink tdb.ko refuses WATCH (-EOPNOTSUPP,
 * with its message): that error is the caller's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* What feed_cb returns to stop tdb_feed_read at an event for us (no
 * errno the ring code returns itself). */
#define GOT_EVENT (-EINPROGRESS)
#define FEED_BUDGET 64

struct tdbc_watch {
	struct tdbc_handle h;
	char table[TDB_NAME_MAX + 1];
	unsigned char *prefix;
	size_t plen;
	struct tdbc_map map;
	struct tdb_ring ring;
	bool attached;
	bool dropped;           /* the DROP event was handed out */
	unsigned char *buf;     /* the current event's key and value */
	size_t cap;
	struct tdbc_event *ev;  /* where feed_cb puts an event */
	const char *bad;        /* why a feed message was refused */
};

static int keep_event(struct tdbc_watch *w, const struct tdb_proto_msg *m)
{
	size_t need = (size_t)m->key_len + m->value_len;
	struct tdbc_event *ev = w->ev;

	if (need > w->cap) {
		unsigned char *p = realloc(w->buf, need);

		if (!p)
			return -ENOMEM;
		w->buf = p;
		w->cap = need;
	}
	memset(ev, 0, sizeof(*ev));
	ev->seq = m->seq;
	ev->kind = m->cmd == TDB_CMD_PUT ? TDBC_EV_PUT : TDBC_EV_DEL;
	memcpy(w->buf, m->key, m->key_len);
	ev->key = w->buf;
	ev->klen = m->key_len;
	ev->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ? m->rec_version : 0;
	if (m->cmd == TDB_CMD_PUT) {
		tdb_proto_value_copy(m, w->buf + m->key_len);
		ev->val = w->buf + m->key_len;
		ev->vlen = m->value_len;
		ev->deadline = TDB_PROTO_HAS(m, TDB_A_DEADLINE) ?
			       m->deadline : 0;
	} else {
		ev->reason = TDB_PROTO_HAS(m, TDB_A_REASON) ? m->reason : 0;
	}
	return GOT_EVENT;
}

static int feed_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct tdbc_watch *w = arg;
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;

	if (tdb_proto_parse(nlh, nlh->nlmsg_len, TDB_PROTO_ANSWER, &m, &ext)) {
		w->bad = ext.msg ? ext.msg : "?";
		return -EPROTO;
	}
	/* Only notifications of this table; later kinds are skipped. */
	if (m.type != TDB_PROTO_FAMILY)
		return 0;
	if (TDB_PROTO_HAS(&m, TDB_A_TABLE) && strcmp(m.table, w->table))
		return 0;
	switch (m.cmd) {
	case TDB_CMD_PUT:
	case TDB_CMD_DEL:
		if (w->plen && (m.key_len < w->plen ||
				memcmp(m.key, w->prefix, w->plen)))
			return 0;
		return keep_event(w, &m);
	case TDB_CMD_TABLE_DROP:
		memset(w->ev, 0, sizeof(*w->ev));
		w->ev->kind = TDBC_EV_DROP;
		w->ev->seq = m.seq;
		w->dropped = true;
		return GOT_EVENT;
	}
	return 0;
}

static int unwatch(struct tdbc_watch *w)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_UNWATCH,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = w->table };
	struct tdbc_call call = { 0 };
	struct tdbc *c = w->h.c;
	int err = tdbc__enter(c);

	if (err)
		return err;
	if (w->plen) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_PREFIX);
		m.prefix = w->prefix;
		m.prefix_len = (uint32_t)w->plen;
	}
	return tdbc__call(c, &m, &call, false);
}

/* WATCH over the socket, then map the feed its ack brings. */
static int watch_start(struct tdbc_watch *w)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_WATCH,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = w->table };
	struct tdbc_call call = { .nfds = 1 };
	struct tdbc *c = w->h.c;
	uint32_t start = 0;
	bool kdev = c->backend == TDBC_BE_KDEV;
	int err;

	if (w->plen) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_PREFIX);
		m.prefix = w->prefix;
		m.prefix_len = (uint32_t)w->plen;
	}
	/* Only tdbd's socket passes fds; tdb.ko's ack has a cookie. */
	if (c->backend != TDBC_BE_DAEMON)
		call.nfds = 0;
	err = tdbc__call(c, &m, &call, true);
	if (err)
		return err;
	if (kdev) {
		err = tdbc__kdev_map_feed(c, call.cookie, call.cookie_len,
					  &w->map, &start);
	} else {
		err = tdbc__map_ring(c, call.fds[0], false, false, &w->map);
		close(call.fds[0]);
	}
	if (!err) {
		err = tdb_ring_attach_consumer(&w->ring, w->map.hdr,
					       w->map.data, w->map.data_len,
					       TDB_RING_FEED);
		/* Start where tdbd says the watch began, not at the newest
		 * message: changes made since the WATCH are not missed. */
		if (!err && kdev) {
			err = tdb_feed_start_at(&w->ring, start);
		} else if (!err && call.cookie_len == sizeof(uint32_t)) {
			uint32_t seq;

			memcpy(&seq, call.cookie, sizeof(seq));
			err = tdb_feed_start_at(&w->ring, seq);
		}
		if (err)
			tdbc__fail(c, err, "change feed from %s: %s", c->peer,
				   tdb_ring_error(&w->ring) ?
				   tdb_ring_error(&w->ring) : strerror(-err));
		w->attached = !err;
	}
	if (err && !c->dead) {
		char msg[TDBC_ERRMSG_MAX];

		/* best effort; the error to report is the mapping's */
		memcpy(msg, c->errmsg, sizeof(msg));
		unwatch(w);
		memcpy(c->errmsg, msg, sizeof(msg));
	}
	return err;
}

int tdbc_watch(struct tdbc_table *t, const void *prefix, size_t plen,
	       struct tdbc_watch **out)
{
	struct tdbc_watch *w;
	struct tdbc *c;
	int err;

	if (!t || !out)
		return -EINVAL;
	*out = NULL;
	c = t->h.c;
	err = tdbc__enter(c);
	if (!err)
		err = tdbc__check_prefix(c, prefix, plen);
	if (err)
		return err;
	w = calloc(1, sizeof(*w));
	if (!w || (plen && !(w->prefix = malloc(plen)))) {
		free(w);
		return tdbc__fail(c, -ENOMEM, "out of memory");
	}
	memcpy(w->table, t->name, sizeof(w->table));
	if (plen)
		memcpy(w->prefix, prefix, plen);
	w->plen = plen;
	tdbc__link(c, &w->h, TDBC_K_WATCH);
	err = watch_start(w);
	if (err) {
		tdbc__watch_free(w, false);
		return err;
	}
	*out = w;
	return 0;
}

/* Read the feed up to the next event for us: 1, 0 (none yet), < 0. */
static int read_feed(struct tdbc_watch *w, struct tdbc_event *ev,
		     uint64_t *lost)
{
	struct tdbc *c = w->h.c;
	uint64_t n = 0;
	int r;

	do {
		w->ev = ev;
		r = tdb_feed_read(&w->ring, FEED_BUDGET, feed_cb, w, &n);
	} while (r > 0);
	if (r == GOT_EVENT)
		return 1;
	if (r == -EOVERFLOW) {
		if (lost)
			*lost = n;
		return tdbc__fail(c, r, "the watch on %s fell behind the "
				  "change feed and lost %llu changes",
				  w->table, (unsigned long long)n);
	}
	if (r == -EPROTO)
		return tdbc__die(c, r, "change feed of %s: %s", w->table,
				 w->bad ? w->bad : tdb_ring_error(&w->ring));
	if (r < 0)
		return tdbc__fail(c, r, "change feed of %s: %s", w->table,
				  strerror(-r));
	return 0;
}

/*
 * /dev/tdb: ENTER (the kernel then forgets which feeds were written, so
 * poll's POLLIN is about writes from now on), drain the completion ring
 * (its answers would also make poll return at once), look at the feed
 * once more, and only then poll.  A write after the ENTER wakes poll,
 * one before it is seen by the look: nothing is missed.  1 (an event),
 * 0 (slept; look again) or < 0.
 */
static int kdev_sleep(struct tdbc_watch *w, struct tdbc_event *ev,
		      uint64_t *lost, int ms)
{
	struct tdbc *c = w->h.c;
	int r;

	r = tdbc__kdev_enter(c);
	if (!r)
		r = tdbc__kdev_drain(c);
	if (r < 0)
		return r;
	r = read_feed(w, ev, lost);
	if (r)
		return r;
	return tdbc__kdev_poll(c, ms);
}

int tdbc_watch_next(struct tdbc_watch *w, struct tdbc_event *ev,
		    int timeout_ms, uint64_t *lost)
{
	uint64_t deadline = 0, now;
	struct tdbc *c;
	int r, ms;

	if (!w || !ev)
		return -EINVAL;
	c = w->h.c;
	if (w->dropped)
		return tdbc__fail(c, -ENOENT, "table %s was dropped",
				  w->table);
	r = tdbc__enter(c);
	if (r)
		return r;
	if (timeout_ms > 0)
		deadline = tdbc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		/* Answers to requests in flight are taken meanwhile: tdbd
		 * cuts off a client that leaves them undrained too long. */
		if (c->slot_used) {
			r = tdbc__pump(c);
			if (r < 0)
				return r;
		}
		r = read_feed(w, ev, lost);
		if (r)
			return r;
		if (timeout_ms == 0)
			return tdbc__arm(c);
		ms = TDBC_NAP_MS;
		if (timeout_ms > 0) {
			now = tdbc__now_ns();
			if (now >= deadline)
				return tdbc__arm(c);
			if ((deadline - now + 999999) / 1000000 < (uint64_t)ms)
				ms = (int)((deadline - now + 999999) / 1000000);
		}
		if (c->backend == TDBC_BE_KDEV) {
			r = kdev_sleep(w, ev, lost, ms);
			if (r)
				return r;
			continue;
		}
		r = tdb_feed_wait(&w->ring, ms);
		if (r == -EPROTO)
			return tdbc__die(c, r, "change feed of %s: %s",
					 w->table, tdb_ring_error(&w->ring));
		/* A feed stays quiet when tdbd dies: ask the socket. */
		if (r) {
			r = tdbc__check_hangup(c);
			if (r)
				return r;
		}
	}
}

bool tdbc__watches_pending(struct tdbc *c)
{
	struct tdbc_link *l;
	uint32_t v;

	for (l = c->handles.next; l != &c->handles; l = l->next) {
		struct tdbc_handle *h = (struct tdbc_handle *)l;
		struct tdbc_watch *w = (struct tdbc_watch *)h;

		if (h->kind != TDBC_K_WATCH || !w->attached || w->dropped)
			continue;
		/* 0: the feed moved past us; < 0: broken, say so too */
		if (tdb_feed_wait_prepare(&w->ring, &v) <= 0)
			return true;
	}
	return false;
}

void tdbc__watch_free(struct tdbc_watch *w, bool do_unwatch)
{
	if (do_unwatch && w->attached && !w->h.c->dead)
		unwatch(w);     /* failure is fine: the watch is gone */
	tdbc__unlink(&w->h);
	if (w->attached)
		tdb_ring_detach(&w->ring);
	tdbc__unmap_ring(&w->map);
	free(w->buf);
	free(w->prefix);
	free(w);
}

void tdbc_watch_close(struct tdbc_watch *w)
{
	if (w)
		tdbc__watch_free(w, true);
}
