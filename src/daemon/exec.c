// SPDX-License-Identifier: GPL-2.0-only
/*
 * exec.c - the transport's side of a request: validate the private copy,
 * hand it to the owner (src/owner) with a sink into the channel it came
 * in on, and answer it; run dumps (SCAN, TABLE_LIST) as the client
 * drains its answers; answer big commits the committer ran; serve a ring
 * round's consecutive GETs together (tdbo_get_many).
 *
 * Every request gets exactly one answer (tdb/proto.h): an ack or error
 * (NLMSG_ERROR), a reply, or dump parts ending in NLMSG_DONE.  What the
 * owner does not answer itself (errors, acks, the DONE of a dump) is
 * answered here; what only tdbd has (ATTACH, descriptors passed with a
 * WATCH's ack, acks held until their WAL record is durable) too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdbd.h"

struct rq {
	struct client *c;
	enum chan ch;
	struct tdb_proto_msg m;
	struct tdb_proto_extack ext;
	struct tdbo_out res;
	char why[TDBO_TEXT];            /* a commit's text, kept */
};

/* --- answers ------------------------------------------------------------ */

/*
 * The owner's answers go into a sink: the worker's scratch buffer
 * (TDB_PROTO_MSG_MAX bytes, private), copied into the completion ring or
 * the socket's output once it is built.  Never into the ring itself: the
 * client can map the completion memfd writable, and libmnl reads
 * nlmsg_len back from the message it is building, so a client moving it
 * under us would steer our writes (docs/PROTOCOL.md, "The trust
 * boundary").  The scratch buffer neither sleeps nor waits, so a GET
 * builds its reply straight from the record (in_read_section).
 */
struct chan_sink {
	struct tdbo_sink s;
	struct client *c;
	enum chan ch;
	bool room_check;        /* dumps: only when the channel has room */
	bool replied;           /* a message was committed */
	bool defer;             /* keep the reply (held_p) for finish() */
	void *held_p;           /* the kept reply, in the worker's scratch */
	size_t held_len;
};

static void *sink_reserve(struct tdbo_sink *s, size_t len)
{
	struct chan_sink *cs = (struct chan_sink *)s;

	if (len > TDB_PROTO_MSG_MAX)
		return NULL;
	if (cs->room_check && !tdbd_client_room(cs->c, cs->ch, len))
		return NULL;
	return cs->c->w->scratch;
}

static void sink_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct chan_sink *cs = (struct chan_sink *)s;

	cs->replied = true;
	if (cs->defer && !cs->held_p) {
		cs->held_p = p;
		cs->held_len = len;
		return;
	}
	tdbd_client_emit(cs->c, cs->ch, p, len);
}

static void sink_init(struct chan_sink *cs, struct client *c, enum chan ch,
		      bool room_check)
{
	cs->s.reserve = sink_reserve;
	cs->s.commit = sink_commit;
	cs->s.in_read_section = true;
	cs->c = c;
	cs->ch = ch;
	cs->room_check = room_check;
	cs->replied = false;
	cs->defer = false;
	cs->held_p = NULL;
	cs->held_len = 0;
}

/* An error (err < 0) or ack (0): the owner's one-answer rule builds it
 * (src/owner/answer.c); the channel takes it whatever its room (the
 * socket buffers it, a full ring's answer waits in the stash). */
static void answer_status(struct client *c, enum chan ch,
			  const struct nlmsghdr *req, int err,
			  struct tdb_proto_extack *ext)
{
	struct chan_sink cs;

	if (err && !ext->msg)
		ext->msg = tdbe_strerror(err);
	sink_init(&cs, c, ch, false);
	tdbo_answer_status(&cs.s, req, err, ext, false);
}

/* A request answered here, without the owner: STATS counts it. */
static void answer_own(struct rq *r, int err)
{
	tdb_fetch_add(&r->c->d->oct->requests, 1);
	if (err)
		tdb_fetch_add(&r->c->d->oct->errors, 1);
	answer_status(r->c, r->ch, r->m.nlh, err, &r->ext);
}

/* --- what only tdbd's transport does ------------------------------------ */

/* WATCH: the owner made the watch; its ack passes a read-only descriptor
 * of the feed's memfd and, as the cookie, the feed's sequence number
 * where the watch starts (so the reader misses nothing written before
 * it maps the feed).  1: answered (or the client must go). */
static int watch_ack(struct rq *r)
{
	struct client *c = r->c;
	struct tdb_proto_extack ack = { 0 };
	uint32_t seq = r->res.feed_seq;
	int fd = tdbd_feed_fd(r->res.feed), err;

	if (fd < 0) {
		/* the watch stays: the client may UNWATCH it */
		r->ext.msg = "cannot open the table's change feed";
		return fd;
	}
	ack.cookie_len = sizeof(seq);
	memcpy(ack.cookie, &seq, sizeof(seq));
	err = tdbd_client_ack_fds(c, r->m.nlh, &ack, &fd, 1);
	close(fd);
	if (err) {
		c->dead = true;
		if (!c->why)
			c->why = "socket failed while passing a feed";
	}
	return 1;
}

/* TABLE_MAP: the owner granted a map (r->res.map, a reference we put).
 * Its ack passes a READ-ONLY descriptor of the table's region memfd
 * (tdbp_region_ro_fd: mappings of it can never be made writable) and,
 * as the cookie, struct tdb_map_cookie: offset 0, the region's
 * max_extents and the map generation the map is valid for.  The
 * descriptor goes straight to the client (ours is closed at once): it
 * counts against nothing here.  1: answered, < 0 an error to answer. */
static int map_ack(struct rq *r)
{
	struct client *c = r->c;
	struct tdb_proto_extack ack = { 0 };
	struct tdbe_table *et = tdbo_table_engine(r->res.map);
	struct tdb_map_cookie ck = { 0 };
	int fd, err;

	fd = et ? tdbd_table_ro_fd(et) : -ENOENT;
	if (fd < 0) {
		tdbo_table_put(r->res.map);
		r->res.map = NULL;
		if (fd == -ENOENT) {
			r->ext.msg = "the table has no memory to map (set "
				     "aside)";
			return fd;
		}
		r->ext.msg = fd == -EOPNOTSUPP ?
			"tdbd cannot make a read-only descriptor of the "
			"table (is /proc mounted?): read through the rings" :
			"tdbd cannot make a read-only descriptor of the "
			"table: read through the rings";
		return -EOPNOTSUPP;
	}
	ck.max_extents = r->res.map_extents;
	ck.map_gen = r->res.map_gen;
	tdbo_table_put(r->res.map);
	r->res.map = NULL;
	ack.cookie_len = sizeof(ck);
	memcpy(ack.cookie, &ck, sizeof(ck));
	err = tdbd_client_ack_fds(c, r->m.nlh, &ack, &fd, 1);
	close(fd);
	if (err) {
		c->dead = true;
		if (!c->why)
			c->why = "socket failed while passing a table map";
	}
	return 1;
}

/* Before the owner: what the transport refuses or runs itself.
 * 1 answered, 0 go on to the owner, < 0 an error to answer. */
static int transport_cmd(struct rq *r)
{
	int err;

	switch (r->m.cmd) {
	case TDB_CMD_ATTACH:
		if (r->ch == CH_RING) {
			r->ext.msg = "ATTACH goes over the socket: it passes "
				     "file descriptors";
			return -EOPNOTSUPP;
		}
		tdb_fetch_add(&r->c->d->oct->requests, 1);
		if (tdbd_client_attach(r->c, r->m.nlh) < 0)
			r->c->dead = true;
		return 1;
	case TDB_CMD_WATCH:
	case TDB_CMD_TABLE_MAP:
		if (r->ch == CH_RING) {
			r->ext.msg = r->m.cmd == TDB_CMD_WATCH ?
				"WATCH goes over the socket: it passes "
				"the feed's file descriptor" :
				"TABLE_MAP goes over the socket: it passes "
				"the table's file descriptor";
			return -EOPNOTSUPP;
		}
		/* descriptors ride on an ack sent at once: nothing may be
		 * queued before it */
		err = tdbd_client_fds_ready(r->c);
		if (err == -EAGAIN) {
			r->ext.msg = r->m.cmd == TDB_CMD_WATCH ?
				"answers to earlier requests are still "
				"queued on the socket: read them before "
				"WATCH" :
				"answers to earlier requests are still "
				"queued on the socket: read them before "
				"TABLE_MAP";
			return err;
		}
		if (err) {
			r->c->dead = true;
			return 1;
		}
		return 0;
	}
	return 0;
}

/* --- dumps ------------------------------------------------------------------ */

static struct dump *dump_slot(struct client *c, enum chan ch,
			      const struct nlmsghdr *req, struct tdbo_dump *d)
{
	unsigned int i;

	for (i = 0; i < MAX_DUMPS; i++) {
		struct dump *dp = &c->dumps[i];

		if (dp->used)
			continue;
		dp->used = true;
		dp->ch = ch;
		dp->req = *req;
		dp->d = d;
		c->ndumps++;
		return dp;
	}
	return NULL;    /* cannot happen: the owner allows MAX_DUMPS */
}

void tdbd_dump_end(struct client *c, struct dump *dp)
{
	tdbo_dump_free(dp->d);
	memset(dp, 0, sizeof(*dp));
	c->ndumps--;
}

/* End a dump with NLMSG_DONE (dp->err 0 or negative); false if there
 * is no room for it yet (the next round tries again). */
static bool dump_done(struct client *c, struct dump *dp)
{
	struct tdb_proto_extack ext = { .msg = dp->msg };
	struct chan_sink cs;

	if (dp->err && !ext.msg)
		ext.msg = tdbe_strerror(dp->err);
	sink_init(&cs, c, dp->ch, true);
	if (tdbo_answer_status(&cs.s, &dp->req, dp->err, &ext, true))
		return false;
	tdbd_dump_end(c, dp);
	return true;
}

/*
 * One run of each dump per round: it writes parts while the channel has
 * room for them and examines at most the owner's budget of records
 * (TDBO_DUMP_BUDGET); a dump the owner says is finished (or failed) ends
 * with NLMSG_DONE once there is room for that.
 */
unsigned int tdbd_dumps_run(struct client *c, bool *blocked)
{
	unsigned int i, done = 0;

	for (i = 0; i < MAX_DUMPS && c->ndumps && !c->dead; i++) {
		struct dump *dp = &c->dumps[i];
		struct tdb_proto_extack ext;
		struct chan_sink cs;
		int rc;

		if (!dp->used)
			continue;
		if (!dp->over) {
			if (!tdbd_client_room(c, dp->ch, TDB_PROTO_MSG_MAX)) {
				*blocked = true;
				continue;
			}
			sink_init(&cs, c, dp->ch, true);
			rc = tdbo_dump_run(dp->d, &cs.s, &ext);
			done++;
			if (rc == 1)
				continue;
			dp->over = true;
			dp->err = rc;
			dp->msg = ext.msg;
		}
		if (!dump_done(c, dp))
			*blocked = true;
	}
	return done;
}

/* --- big commits -------------------------------------------------------------- */

unsigned int tdbd_commit_answer(struct client *c)
{
	struct tdb_proto_extack ext = { 0 };
	struct nlmsghdr req;
	enum chan ch;
	uint64_t lsn;
	int err;

	char keep[TDBO_TEXT];

	if (!c->commit || !tdbd_commit_take(c, &err, &lsn, &ext.msg, keep,
					    &req, &ch))
		return 0;
	if (!err && lsn && tdbd_ack_later(c, ch, &req, lsn))
		return 1;       /* acked once its WAL record is on disk */
	answer_status(c, ch, &req, err, &ext);
	return 1;
}

/* --- a request ------------------------------------------------------------ */

/* The owner's verdict (its reply, if any, is out or kept in cs):
 * answer the rest. */
static void finish(struct rq *r, int err, struct chan_sink *cs)
{
	struct client *c = r->c;
	bool replied = cs->replied;

	if (cs->held_p) {
		/* a write's reply (INCR): out once its record is durable,
		 * as an ack would be */
		if (!(err == 0 && r->res.lsn &&
		      tdbd_answer_later(c, r->ch, r->m.nlh, r->res.lsn,
					cs->held_p, cs->held_len)))
			tdbd_client_emit(c, r->ch, cs->held_p, cs->held_len);
		return;
	}

	if (err == 0 && r->res.dump) {
		if (!dump_slot(c, r->ch, r->m.nlh, r->res.dump)) {
			tdbo_dump_free(r->res.dump);
			r->ext.msg = "too many dumps in progress on this "
				     "connection (8)";
			answer_status(c, r->ch, r->m.nlh, -EBUSY, &r->ext);
		}
		return;                 /* answered by the dump */
	}
	if (err == 0 && r->res.txn) {
		if (tdbd_commit_async(c, r->ch, r->res.txn, r->m.nlh))
			return;         /* answered when it is done */
		err = tdbo_txn_commit(r->res.txn, &r->res.lsn, &r->ext);
		tdbo_txn_keep_msg(r->res.txn, &r->ext, r->why);
		tdbo_txn_free(r->res.txn);
		r->res.txn = NULL;      /* answered below, as any commit */
	}
	if (err == 0 && r->res.feed) {
		err = watch_ack(r);
		if (err > 0)
			return;
	}
	if (err == 0 && r->res.map) {
		err = map_ack(r);
		if (err > 0)
			return;
	}
	if (err == 0 && r->res.lsn &&
	    tdbd_ack_later(c, r->ch, r->m.nlh, r->res.lsn))
		return;                 /* acked once its record is durable */
	if (tdbo_answer_owed(err, replied, &r->res))
		answer_status(c, r->ch, r->m.nlh, err, &r->ext);
}

/* A parsed request (r->m). */
static void run(struct rq *r)
{
	struct chan_sink cs;
	int err;

	err = transport_cmd(r);
	if (err) {
		if (err < 0)
			answer_own(r, err);
		return;
	}
	sink_init(&cs, r->c, r->ch, false);
	cs.defer = r->m.cmd == TDB_CMD_INCR;    /* a reply that may wait */
	err = tdbo_exec(r->c->oc, &r->m, &cs.s, &r->ext, &r->res);
	finish(r, err, &cs);
}

void tdbd_exec(struct client *c, enum chan ch, const void *msg, size_t len)
{
	struct rq r = { .c = c, .ch = ch };
	int err;

	err = tdb_proto_parse(msg, len, TDB_PROTO_REQUEST, &r.m, &r.ext);
	if (err) {
		if (!r.m.nlh) {
			c->why = "a message too short to answer";
			c->dead = true;
			tdb_fetch_add(&c->d->oct->violations, 1);
			return;
		}
		answer_own(&r, err);
		return;
	}
	run(&r);
}

/* --- GETs of a ring round, together -------------------------------------- */

/*
 * A ring round's consecutive GETs (without TDB_A_TXN) are parsed into
 * the worker's batch (private copies) and served by one
 * tdbo_get_many(): one table's run is looked up at once, its misses
 * overlapping (tdbe_lookup_many).  The batch goes out before any other
 * request runs and at the end of the round, so answers keep the
 * requests' order.  Its replies are only written where the completion
 * ring has room: a reply that finds none stops the batch, and it and
 * the requests after it (already taken from the ring) wait in c->pend,
 * run one at a time as before once the client drains its answers.  So
 * the stash holds one answer at most, as when each request runs alone,
 * or the error answers (NLMSG_ERROR, small) of one batch, which need no
 * room: they are answered in order whatever the ring has.
 */
/* A sink into a caller's buffer of TDB_PROTO_ERROR_MAX bytes, emitted on
 * the ring. */
struct stack_sink {
	struct tdbo_sink s;
	struct client *c;
	unsigned char *buf;
};

static void *stack_reserve(struct tdbo_sink *s, size_t len)
{
	struct stack_sink *ss = (struct stack_sink *)s;

	return len <= TDB_PROTO_ERROR_MAX ? ss->buf : NULL;
}

static void stack_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct stack_sink *ss = (struct stack_sink *)s;

	tdbd_client_emit(ss->c, CH_RING, p, len);
}

/* Called inside tdbo_get_many's read-side section, maybe with the
 * scratch buffer holding a reply: the error is built on the stack. */
static void get_fail(void *arg, const struct tdb_proto_msg *m, int err,
		     const struct tdb_proto_extack *ext)
{
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	struct tdbo_sink s = {
		.reserve = stack_reserve, .commit = stack_commit,
		.in_read_section = true,
	};
	struct stack_sink ss = { .s = s, .c = arg, .buf = buf };
	struct tdb_proto_extack e = *ext;

	if (!e.msg)
		e.msg = tdbe_strerror(err);
	tdbo_answer_status(&ss.s, m->nlh, err, &e, false);
}

static int pend_add(struct client *c, const struct nlmsghdr *nlh)
{
	size_t al = NLMSG_ALIGN(nlh->nlmsg_len);
	unsigned char *p;

	if (c->pend_off && c->pend_off == c->pend_len)
		c->pend_off = c->pend_len = 0;
	p = realloc(c->pend, c->pend_len + al);
	if (!p) {
		c->dead = true;
		c->why = "out of memory keeping its requests";
		return -ENOMEM;
	}
	c->pend = p;
	memcpy(p + c->pend_len, nlh, nlh->nlmsg_len);
	c->pend_len += al;
	return 0;
}

void tdbd_ring_flush(struct client *c)
{
	struct get_batch *b = c->w->gets;
	struct chan_sink cs;
	unsigned int k, i;

	if (!b->n)
		return;
	if (b->n == 1) {        /* alone: as any request (tdbe_lookup) */
		struct rq r = { .c = c, .ch = CH_RING, .m = b->m[0] };

		b->n = 0;
		b->used = 0;
		run(&r);
		return;
	}
	sink_init(&cs, c, CH_RING, true);
	k = tdbo_get_many(c->oc, b->m, b->n, &cs.s, get_fail, c);
	for (i = k; i < b->n && !c->dead; i++)
		pend_add(c, b->m[i].nlh);
	b->n = 0;
	b->used = 0;
}

/* Parse a GET into the batch; false: not a plain GET (or too big for
 * the batch), left to tdbd_exec(). */
static bool get_defer(struct client *c, const struct nlmsghdr *nlh)
{
	struct get_batch *b = c->w->gets;
	size_t len = nlh->nlmsg_len, al = NLMSG_ALIGN(len);
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg *m;

	if (len < NLMSG_HDRLEN + 4 || al > sizeof(b->buf) ||
	    *(const uint8_t *)NLMSG_DATA(nlh) != TDB_CMD_GET)
		return false;
	if (b->n == TDBD_GET_BATCH || b->used + al > sizeof(b->buf)) {
		tdbd_ring_flush(c);
		if (c->pend_len || c->stash_len)
			return false;
	}
	m = &b->m[b->n];
	memcpy(b->buf + b->used, nlh, len);
	if (tdb_proto_parse(b->buf + b->used, len, TDB_PROTO_REQUEST, m,
			    &ext) || TDB_PROTO_HAS(m, TDB_A_TXN))
		return false;
	b->n++;
	b->used += al;
	return true;
}

void tdbd_ring_msg(struct client *c, const struct nlmsghdr *nlh)
{
	if (get_defer(c, nlh))
		return;
	tdbd_ring_flush(c);
	if (c->dead)
		return;
	if (c->pend_len || c->stash_len)        /* after what waits */
		pend_add(c, nlh);
	else
		tdbd_exec(c, CH_RING, nlh, nlh->nlmsg_len);
}

unsigned int tdbd_pend_run(struct client *c)
{
	unsigned int n = 0;

	while (c->pend_off < c->pend_len && !c->stash_len && !c->dead &&
	       !tdbd_held_full(c) && !c->commit) {
		const struct nlmsghdr *nlh =
			(const struct nlmsghdr *)(c->pend + c->pend_off);

		c->pend_off += NLMSG_ALIGN(nlh->nlmsg_len);
		tdbd_exec(c, CH_RING, nlh, nlh->nlmsg_len);
		n++;
	}
	if (c->pend_off == c->pend_len)
		c->pend_off = c->pend_len = 0;
	return n;
}
