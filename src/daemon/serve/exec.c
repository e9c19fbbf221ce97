// SPDX-License-Identifier: GPL-2.0-only
/*
 * exec.c - tdbd's side of serve (src/owner/serve.c, shared with tdb.ko,
 * which parses, refuses and counts, runs, answers, holds answers until
 * durable and paces dumps): the client's two channels (socket, ring)
 * as serve's connection interface, what only tdbd's transport does
 * (ATTACH over the socket, descriptors passed with a WATCH's or
 * TABLE_MAP's ack, big commits on the committer thread), and a ring
 * round's consecutive GETs served together.  Owns a client's serve state
 * over its channels (c->sv, set up by tdbd_serve_init), its pending ring
 * requests (c->pend) and struct get_batch (exec.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "exec.h"
#include "tdbd.h"
#include "txn.h"
#include "worker.h"

/* --- the connection's side of serve (src/owner/serve.h) ------------------ */

/*
 * The owner's answers are built in the worker's scratch buffer
 * (TDB_PROTO_MSG_MAX bytes, private) and copied into the completion
 * ring or the socket's output once built.  Never into the ring itself:
 * the client can map the completion memfd writable, and libmnl reads
 * nlmsg_len back from the message it is building, so a client moving it
 * under us would steer our writes (docs/PROTOCOL.md, "The trust
 * boundary").  The scratch buffer neither sleeps nor waits, so a GET
 * builds its reply straight from the record (in_read_section).
 */
static void *sv_reserve(void *arg, unsigned int ch, size_t len,
			bool room_check)
{
	struct client *c = arg;

	if (len > TDB_PROTO_MSG_MAX)
		return NULL;
	if (room_check && !tdbd_client_room(c, (enum chan)ch, len))
		return NULL;
	return c->w->scratch;
}

static void sv_commit(void *arg, unsigned int ch, void *p, size_t len)
{
	tdbd_client_emit(arg, (enum chan)ch, p, len);
}

/* The channel takes it whatever its room: the socket buffers it, a
 * full ring's answer waits in the stash. */
static int sv_emit(void *arg, unsigned int ch, const void *msg, size_t len)
{
	tdbd_client_emit(arg, (enum chan)ch, msg, len);
	return 0;
}

static bool sv_room(void *arg, unsigned int ch, size_t len)
{
	return tdbd_client_room(arg, (enum chan)ch, len);
}

/* The worker's count of held answers: the WAL's callback wakes the
 * workers that have any (../durable.c, on_durable). */
static void sv_held_note(void *arg, int delta, const struct tdbo_held *first)
{
	struct client *c = arg;

	(void)first;
	__atomic_add_fetch(&c->w->nheld, (unsigned int)delta,
			   __ATOMIC_SEQ_CST);
}

/* WATCH: the owner made the watch; its ack passes a read-only descriptor
 * of the feed's memfd and, as the cookie, the feed's sequence number
 * where the watch starts (so the reader misses nothing written before
 * it maps the feed).  1: answered (or the client must go). */
static int watch_ack(struct client *c, const struct nlmsghdr *req,
		     const struct tdbo_out *res, const char **msg)
{
	struct tdb_proto_extack ack = { 0 };
	uint32_t seq = res->feed_seq;
	int fd = tdbd_feed_fd(res->feed), err;

	if (fd < 0) {
		/* the watch stays: the client may UNWATCH it */
		*msg = "cannot open the table's change feed";
		return fd;
	}
	ack.cookie_len = sizeof(seq);
	memcpy(ack.cookie, &seq, sizeof(seq));
	err = tdbd_client_ack_fds(c, req, &ack, &fd, 1);
	close(fd);
	if (err) {
		c->dead = true;
		if (!c->why)
			c->why = "socket failed while passing a feed";
	}
	return 1;
}

/* TABLE_MAP: the owner granted a map (res->map, a reference we put).
 * Its ack passes a READ-ONLY descriptor of the table's region memfd
 * (tdbp_region_ro_fd: mappings of it can never be made writable) and,
 * as the cookie, struct tdb_map_cookie: offset 0, the region's
 * max_extents and the map generation the map is valid for.  The
 * descriptor goes straight to the client (ours is closed at once): it
 * counts against nothing here.  1: answered, < 0 an error to answer. */
static int map_ack(struct client *c, const struct nlmsghdr *req,
		   struct tdbo_out *res, const char **msg)
{
	struct tdb_proto_extack ack = { 0 };
	struct tdbe_table *et = tdbo_table_engine(res->map);
	struct tdb_map_cookie ck = { 0 };
	int fd, err;

	fd = et ? tdbd_table_ro_fd(et) : -ENOENT;
	tdbo_table_put(res->map);
	res->map = NULL;
	if (fd < 0) {
		if (fd == -ENOENT) {
			*msg = "the table has no memory to map (set aside)";
			return fd;
		}
		*msg = fd == -EOPNOTSUPP ?
			"tdbd cannot make a read-only descriptor of the "
			"table (is /proc mounted?): read through the rings" :
			"tdbd cannot make a read-only descriptor of the "
			"table: read through the rings";
		return -EOPNOTSUPP;
	}
	ck.max_extents = res->map_extents;
	ck.map_gen = res->map_gen;
	ack.cookie_len = sizeof(ck);
	memcpy(ack.cookie, &ck, sizeof(ck));
	err = tdbd_client_ack_fds(c, req, &ack, &fd, 1);
	close(fd);
	if (err) {
		c->dead = true;
		if (!c->why)
			c->why = "socket failed while passing a table map";
	}
	return 1;
}

static int sv_grant(void *arg, unsigned int ch, const struct nlmsghdr *req,
		    struct tdbo_out *res, struct tdb_proto_extack *ack,
		    const char **msg)
{
	(void)ch;
	(void)ack;
	if (res->map)
		return map_ack(arg, req, res, msg);
	return watch_ack(arg, req, res, msg);
}

/* Before the owner: what the transport refuses or runs itself.
 * 1 answered, 0 go on to the owner, < 0 an error to answer. */
static int sv_refuse(void *arg, unsigned int ch, const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	struct client *c = arg;
	int err;

	switch (m->cmd) {
	case TDB_CMD_ATTACH:
		if (ch == CH_RING) {
			ext->msg = "ATTACH goes over the socket: it passes "
				   "file descriptors";
			return -EOPNOTSUPP;
		}
		if (tdbd_client_attach(c, m->nlh) < 0)
			c->dead = true;
		return 1;
	case TDB_CMD_WATCH:
	case TDB_CMD_TABLE_MAP:
		if (ch == CH_RING) {
			ext->msg = m->cmd == TDB_CMD_WATCH ?
				"WATCH goes over the socket: it passes "
				"the feed's file descriptor" :
				"TABLE_MAP goes over the socket: it passes "
				"the table's file descriptor";
			return -EOPNOTSUPP;
		}
		/* descriptors ride on an ack sent at once: nothing may be
		 * queued before it */
		err = tdbd_client_fds_ready(c);
		if (err == -EAGAIN) {
			ext->msg = m->cmd == TDB_CMD_WATCH ?
				"answers to earlier requests are still "
				"queued on the socket: read them before "
				"WATCH" :
				"answers to earlier requests are still "
				"queued on the socket: read them before "
				"TABLE_MAP";
			return err;
		}
		if (err) {
			c->dead = true;
			return 1;
		}
		return 0;
	}
	return 0;
}

/* A big commit: to the committer thread (txn.c), answered by
 * tdbd_commit_answer(). */
static bool sv_defer(void *arg, unsigned int ch, struct tdbo_txn *x,
		     const struct nlmsghdr *req)
{
	return tdbd_commit_async(arg, (enum chan)ch, x, req);
}

static const struct tdbo_conn_ops sv_ops = {
	.reserve = sv_reserve,
	.commit = sv_commit,
	.emit = sv_emit,
	.room = sv_room,
	.grant = sv_grant,
	.refuse = sv_refuse,
	.defer = sv_defer,
	.held_note = sv_held_note,
	.in_read_section = true,
};

void tdbd_serve_init(struct client *c)
{
	tdbo_conn_init(&c->sv, &sv_ops, c, &tdbd_hold_policy, c->d, c->oc,
		       c->d->oct);
	/* until its worker gives it its uid's share (worker.c) */
	c->sv.held_max = TDBD_HELD_MAX;
	c->sv.held_bytes_max = TDBD_HELD_BYTES;
}

/* --- requests ----------------------------------------------------------- */

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
	tdbo_conn_answer(&c->sv, ch, &req, err, &ext, lsn);
	return 1;
}

void tdbd_exec(struct client *c, enum chan ch, const void *msg, size_t len)
{
	if (tdbo_serve(&c->sv, ch, msg, len) == -EPROTO) {
		c->why = "a message too short to answer";
		c->dead = true;
		tdb_fetch_add(&c->d->oct->violations, 1);
	}
}

/* --- GETs of a ring round, together -------------------------------------- */

/*
 * A ring round's consecutive GETs (without TDB_A_TXN) are parsed into
 * the worker's batch (private copies) and served by one
 * tdbo_serve_gets() (serve.c, tdbo_get_many): one table's run is looked up at once, its misses
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
	unsigned int k, i;

	if (!b->n)
		return;
	k = tdbo_serve_gets(&c->sv, CH_RING, b->m, b->n);
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
	       !tdbo_conn_held_full(&c->sv) && !c->commit) {
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
