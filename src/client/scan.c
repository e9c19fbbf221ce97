// SPDX-License-Identifier: MIT
/*
 * scan.c - scans: paging through a table with SCAN requests.
 *
 * Each batch is one SCAN (LIMIT = the batch size or what is left of the
 * caller's limit; after the first, the CURSOR of the previous batch's
 * last part) whose whole dump is read into a queue of records before
 * tdbc_scan_next hands them out.  Reading a batch to its end means no
 * answer is ever left outstanding between calls: a caller who takes long
 * over each record never leaves tdbd waiting on a full completion ring
 * (which it would count as a stuck client), and closing early has
 * nothing to drain.  The scan ends when a batch's last part carries no
 * CURSOR, or when the caller's limit is reached.  The batch size adapts
 * to the values' size so that a batch holds about BATCH_BYTES.
 *
 * A snapshot scan (TDBC_SCAN_SNAPSHOT) cannot be cut into batches: the
 * snapshot lives as long as its one SCAN dump.  It is a stream: the
 * request goes out once, c->stream names it, and io.c's router hands
 * its parts to tdbc__scan_route() whenever the connection reads answers
 * (in tdbc_scan_next, or in any other call meanwhile), which queues
 * them.  tdbc_scan_next waits only until one record (or the end) is
 * queued, so memory stays within what one read of the rings or socket
 * brings, whatever the table's size, and tdbd paces the dump to the
 * reader.  Closing a stream early reads the rest of the dump and throws
 * it away (tdbd has no way to stop a dump but the connection's end).
 *
 * A range scan (tdbc_scan_range, tdbc_scan_submit_range: ordered tables)
 * is the same with FROM, TO and the range's SCAN_FLAGS in every batch:
 * the owner's CURSOR says where the walk is, the range where it ends,
 * so each batch goes on after the last key of the one before, in the
 * range's order, whatever writers do meanwhile.
 *
 * A scan in a transaction (tdbc_scan_range_txn) carries TXN in every
 * batch: the owner records the span each batch walked and checks it
 * again at commit (a key added, changed or deleted in it: -ESTALE).
 * Each batch is read to its end before the call returns, so no SCAN of
 * the transaction is still sending when the caller commits.
 *
 * An asynchronous scan (tdbc_scan_submit) sends the same batches
 * without waiting: each is an asynchronous request (async.c routes its
 * parts here and turns its end into a completion for tdbc_reap), and
 * tdbc_scan_next, finding the queue empty, sends the next batch and
 * returns -EAGAIN instead of waiting for it.  At most one batch is in
 * flight, so memory stays at a batch, and a reader that stops asking
 * leaves nothing outstanding at tdbd.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BATCH_MAX    256u
#define BATCH_BYTES  (8u << 20)

struct rec {
	struct rec *next;
	size_t klen, vlen;
	uint64_t version;       /* 0: the owner sent none */
	uint64_t deadline;      /* 0: none (or an owner without expiry) */
	unsigned char data[];   /* key, then value */
};

struct tdbc_scan {
	struct tdbc_handle h;
	char table[TDB_NAME_MAX + 1];
	unsigned char *prefix;
	size_t plen;
	/* a range (tdbc_scan_range): copies of its bounds (NULL: open) and
	 * its TDB_SCAN_* flags */
	bool ranged;
	unsigned char *from, *to;
	size_t from_len, to_len;
	uint32_t range_flags;
	/* a read of this transaction (tdbc_scan_range_txn); 0: none */
	uint64_t txn;
	uint64_t limit, received;    /* records queued, ever */
	unsigned char cursor[TDB_CURSOR_MAX];
	uint32_t cursor_len;         /* 0: no cursor (the first batch) */
	bool last_had_cursor;        /* the batch's last part so far */
	bool more;                   /* another batch is due */
	uint32_t batch;              /* the next batch's LIMIT */
	size_t batch_bytes;          /* bytes the current batch brought */
	int err;                     /* ends the scan after the queue */
	struct rec *head, **tailp, *cur;
	/* snapshot: one dump, read as it comes */
	bool stream;
	bool ended;                  /* its NLMSG_DONE (or error) came */
	bool discard;                /* closing: drop the parts */
	uint32_t seq;
	/* asynchronous (tdbc_scan_submit) */
	bool async;
	bool inflight;               /* a batch was sent, its end not in */
	uint64_t user;               /* the batches' completions' */
	uint64_t batch_start;        /* `received` when the batch was sent */
};

static int part_record(struct tdbc *c, struct tdbc_scan *s,
		       const struct tdb_proto_msg *m)
{
	struct rec *r;

	if (s->limit && s->received >= s->limit)
		return 0;   /* more than LIMIT came: not ours to return */
	r = malloc(sizeof(*r) + m->key_len + m->value_len);
	if (!r)
		return tdbc__fail(c, -ENOMEM, "out of memory for a record of "
				  "%u bytes", m->key_len + m->value_len);
	r->next = NULL;
	r->klen = m->key_len;
	r->vlen = m->value_len;
	r->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ? m->rec_version : 0;
	r->deadline = TDB_PROTO_HAS(m, TDB_A_DEADLINE) ? m->deadline : 0;
	memcpy(r->data, m->key, m->key_len);
	tdb_proto_value_copy(m, r->data + m->key_len);
	*s->tailp = r;
	s->tailp = &r->next;
	s->received++;
	s->batch_bytes += r->klen + r->vlen;
	return 0;
}

static int scan_msg(struct tdbc *c, struct tdbc_call *call,
		    const struct tdb_proto_msg *m)
{
	struct tdbc_scan *s = call->arg;
	int err = 0;

	if (TDB_PROTO_HAS(m, TDB_A_KEY))
		err = part_record(c, s, m);
	s->last_had_cursor = TDB_PROTO_HAS(m, TDB_A_CURSOR);
	if (s->last_had_cursor) {
		memcpy(s->cursor, m->cursor, m->cursor_len);
		s->cursor_len = m->cursor_len;
	}
	return err;
}

static void adapt_batch(struct tdbc_scan *s)
{
	if (s->batch_bytes > BATCH_BYTES && s->batch > 1)
		s->batch /= 2;
	else if (s->batch_bytes < BATCH_BYTES / 8 && s->batch < BATCH_MAX)
		s->batch *= 2;
}

/* A range scan's FROM, TO and SCAN_FLAGS (the snapshot bit kept). */
static void range_attrs(const struct tdbc_scan *s, struct tdb_proto_msg *m)
{
	if (!s->ranged)
		return;
	if (s->from) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_FROM);
		m->from = s->from;
		m->from_len = (uint32_t)s->from_len;
	}
	if (s->to) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_TO);
		m->to = s->to;
		m->to_len = (uint32_t)s->to_len;
	}
	if (s->range_flags) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		m->scan_flags |= s->range_flags;
	}
}

/* The next batch's SCAN request. */
static void batch_msg(struct tdbc_scan *s, struct tdb_proto_msg *mp)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_SCAN,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
					    TDB_PROTO_BIT(TDB_A_LIMIT),
				   .table = s->table };
	uint64_t left = s->limit ? s->limit - s->received : UINT64_MAX;

	m.limit = left < s->batch ? (uint32_t)left : s->batch;
	if (s->plen) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_PREFIX);
		m.prefix = s->prefix;
		m.prefix_len = (uint32_t)s->plen;
	}
	if (s->cursor_len) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
		m.cursor = s->cursor;
		m.cursor_len = s->cursor_len;
	}
	range_attrs(s, &m);
	if (s->txn) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = s->txn;
	}
	*mp = m;
	s->last_had_cursor = false;
	s->batch_bytes = 0;
}

/* One batch, read to its end. */
static int fetch(struct tdbc_scan *s)
{
	struct tdbc_call call = { .on_msg = scan_msg, .arg = s };
	struct tdb_proto_msg m;
	int err;

	batch_msg(s, &m);
	err = tdbc__call(s->h.c, &m, &call, false);
	s->more = !err && s->last_had_cursor &&
		  !(s->limit && s->received >= s->limit);
	adapt_batch(s);
	return err;
}

/* --- asynchronous scans ------------------------------------------------- */

/* Send the next batch as an asynchronous request. */
static int async_fetch(struct tdbc_scan *s)
{
	struct tdbc *c = s->h.c;
	struct tdb_proto_msg m;
	int err;

	batch_msg(s, &m);
	m.seq = tdbc__seq(c);
	/* In the table before it is sent: a socket send reads answers. */
	err = tdbc__async_add_scan(c, m.seq, s->user, s);
	if (err)
		return err;
	s->inflight = true;
	s->batch_start = s->received;
	err = tdbc__send(c, &m, false, true);
	if (err) {
		s->inflight = false;
		tdbc__async_forget_scan(c, s);
	}
	return err;
}

int tdbc__scan_async_part(struct tdbc_scan *s, const struct tdb_proto_msg *m)
{
	struct tdbc_call call = { .arg = s };
	int err;

	if (s->err)
		return s->err;
	err = scan_msg(s->h.c, &call, m);
	if (err)
		s->err = err;
	return err;
}

int tdbc__scan_async_end(struct tdbc_scan *s, const struct tdb_proto_msg *m)
{
	s->inflight = false;
	if (m->error && !s->err)
		s->err = m->error;
	s->more = !s->err && s->last_had_cursor &&
		  !(s->limit && s->received >= s->limit);
	adapt_batch(s);
	return s->err ? s->err : (int)(s->received - s->batch_start);
}

/* tdbc_scan_next of an asynchronous scan, the queue empty. */
static int async_next(struct tdbc_scan *s)
{
	int err;

	if (s->err)
		return s->err;
	if (s->inflight)
		return -EAGAIN;
	if (!s->more)
		return 0;
	err = tdbc__enter(s->h.c);
	if (!err)
		err = async_fetch(s);
	if (err) {
		s->err = err;
		return err;
	}
	return -EAGAIN;
}

/* --- snapshot streams --------------------------------------------------- */

int tdbc__scan_route(struct tdbc *c, const struct tdb_proto_msg *m)
{
	struct tdbc_scan *s = c->stream;
	int kind;

	if (!s || m->seq != s->seq)
		return 0;
	kind = tdbc__classify(c, m, TDB_CMD_SCAN);
	if (kind < 0)
		return kind;
	if (kind == TDBC_ANS_PART) {
		if (!s->discard && !s->err && TDB_PROTO_HAS(m, TDB_A_KEY))
			s->err = part_record(c, s, m);
		return 1;
	}
	s->ended = true;
	c->stream = NULL;
	if (m->error && !s->err && !s->discard)
		s->err = tdbc__owner_fail(c, m, TDB_CMD_SCAN);
	return 1;
}

static bool stream_ready(struct tdbc *c, void *arg)
{
	struct tdbc_scan *s = arg;

	(void)c;
	return s->head || s->ended;
}

/* Wait until a record or the end is queued. */
static int stream_wait(struct tdbc_scan *s)
{
	int err = tdbc__wait(s->h.c, stream_ready, s, -1);

	if (err && !s->err)
		s->err = err;
	return err;
}

static int stream_open(struct tdbc_scan *s)
{
	struct tdbc *c = s->h.c;
	struct tdb_proto_msg m = { .cmd = TDB_CMD_SCAN,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
					    TDB_PROTO_BIT(TDB_A_SCAN_FLAGS),
				   .table = s->table,
				   .scan_flags = TDB_SCAN_SNAPSHOT };
	int err;

	if (s->limit) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_LIMIT);
		m.limit = s->limit > UINT32_MAX ? UINT32_MAX :
			  (uint32_t)s->limit;
	}
	if (s->plen) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_PREFIX);
		m.prefix = s->prefix;
		m.prefix_len = (uint32_t)s->plen;
	}
	range_attrs(s, &m);
	m.seq = tdbc__seq(c);
	s->seq = m.seq;
	/* Routed from the moment the request could be seen. */
	c->stream = s;
	err = tdbc__send(c, &m, false, true);
	if (err) {
		if (c->stream == s)
			c->stream = NULL;
		s->ended = true;
		return err;
	}
	err = stream_wait(s);
	/* Refused at once (no such table, no snapshots here): say so now. */
	if (!err && !s->head && s->err)
		err = s->err;
	return err;
}

/* --- opening ------------------------------------------------------------ */

int tdbc_scan_open(struct tdbc_table *t, const void *prefix, size_t plen,
		   uint64_t limit, struct tdbc_scan **out)
{
	return tdbc_scan_open_flags(t, prefix, plen, limit, 0, out);
}

/* Copy a (checked) range into s: -ENOMEM, or 0. */
static int range_copy(struct tdbc_scan *s, const struct tdbc_range *r)
{
	s->ranged = true;
	/* an open side has nothing to include or exclude (the codec
	 * refuses such a flag without its bound) */
	s->range_flags =
		(r->from && (r->flags & TDBC_RANGE_FROM_EXCL) ?
		 TDB_SCAN_FROM_EXCL : 0) |
		(r->to && (r->flags & TDBC_RANGE_TO_INCL) ?
		 TDB_SCAN_TO_INCL : 0) |
		(r->flags & TDBC_RANGE_REVERSE ? TDB_SCAN_REVERSE : 0);
	if (r->from) {
		s->from = malloc(r->from_len);
		if (!s->from)
			return -ENOMEM;
		memcpy(s->from, r->from, r->from_len);
		s->from_len = r->from_len;
	}
	if (r->to) {
		s->to = malloc(r->to_len);
		if (!s->to) {
			free(s->from);
			s->from = NULL;
			return -ENOMEM;
		}
		memcpy(s->to, r->to, r->to_len);
		s->to_len = r->to_len;
	}
	return 0;
}

/* Check the arguments and make the handle (linked to c). */
static int scan_new(struct tdbc_table *t, const void *prefix, size_t plen,
		    const struct tdbc_range *range, uint64_t limit,
		    unsigned int flags, struct tdbc_scan **out)
{
	struct tdbc_scan *s;
	struct tdbc *c;
	int err;

	if (!t || !out)
		return -EINVAL;
	*out = NULL;
	c = t->h.c;
	err = tdbc__enter(c);
	if (!err)
		err = tdbc__check_prefix(c, prefix, plen);
	if (!err && range)
		err = tdbc__check_range(c, range);
	/* A range open on both sides, forward, carries no range attribute:
	 * the owner would take it for a plain scan, in hash order.  Refuse
	 * it here for a table that was a hash table when opened (one with
	 * a bound is the owner's to refuse). */
	if (!err && range && !range->from && !range->to &&
	    !(range->flags & TDBC_RANGE_REVERSE) &&
	    !(t->flags & TDBC_TABLE_ORDERED))
		err = tdbc__fail(c, -EOPNOTSUPP, "range scans need an "
				 "ordered table (tdb create --ordered)");
	if (!err && (flags & ~TDBC_SCAN_SNAPSHOT))
		err = tdbc__fail(c, -EINVAL, "unknown scan flags %#x",
				 flags & ~TDBC_SCAN_SNAPSHOT);
	if (!err && (flags & TDBC_SCAN_SNAPSHOT) && c->stream)
		err = tdbc__fail(c, -EBUSY, "a snapshot scan is already open "
				 "on this connection (one at a time)");
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s || (plen && !(s->prefix = malloc(plen)))) {
		free(s);
		return tdbc__fail(c, -ENOMEM, "out of memory");
	}
	memcpy(s->table, t->name, sizeof(s->table));
	if (range && range_copy(s, range)) {
		free(s->prefix);
		free(s);
		return tdbc__fail(c, -ENOMEM, "out of memory");
	}
	if (plen)
		memcpy(s->prefix, prefix, plen);
	s->plen = plen;
	s->limit = limit;
	s->batch = BATCH_MAX;
	s->tailp = &s->head;
	s->stream = flags & TDBC_SCAN_SNAPSHOT;
	tdbc__link(c, &s->h, TDBC_K_SCAN);
	*out = s;
	return 0;
}

static int scan_submit(struct tdbc_table *t, const void *prefix,
		       size_t plen, const struct tdbc_range *range,
		       uint64_t limit, unsigned int flags, uint64_t user,
		       struct tdbc_scan **out)
{
	struct tdbc_scan *s;
	int err;

	if (out)
		*out = NULL;
	if (t && (flags & TDBC_SCAN_SNAPSHOT))
		return tdbc__fail(t->h.c, -EOPNOTSUPP, "a snapshot scan "
				  "cannot be asynchronous (yet): use "
				  "tdbc_scan_open_flags");
	err = scan_new(t, prefix, plen, range, limit, flags, out);
	if (err)
		return err;
	s = *out;
	*out = NULL;
	s->async = true;
	s->user = user;
	s->more = true;
	err = async_fetch(s);
	if (err) {
		tdbc__scan_free(s);
		return err;
	}
	*out = s;
	return 0;
}

int tdbc_scan_submit(struct tdbc_table *t, const void *prefix, size_t plen,
		     uint64_t limit, unsigned int flags, uint64_t user,
		     struct tdbc_scan **out)
{
	return scan_submit(t, prefix, plen, NULL, limit, flags, user, out);
}

int tdbc_scan_submit_range(struct tdbc_table *t, const struct tdbc_range *r,
			   uint64_t limit, unsigned int flags, uint64_t user,
			   struct tdbc_scan **out)
{
	if (t && !r) {
		if (out)
			*out = NULL;
		return tdbc__fail(t->h.c, -EINVAL, "the range is NULL");
	}
	return scan_submit(t, NULL, 0, r, limit, flags, user, out);
}

static int scan_open(struct tdbc_table *t, const void *prefix, size_t plen,
		     const struct tdbc_range *range, uint64_t limit,
		     unsigned int flags, struct tdbc_scan **out)
{
	struct tdbc_scan *s;
	int err;

	err = scan_new(t, prefix, plen, range, limit, flags, out);
	if (err)
		return err;
	s = *out;
	*out = NULL;
	/* The first batch (or part) now, so that a bad table or prefix
	 * fails here. */
	err = s->stream ? stream_open(s) : fetch(s);
	if (err && !s->head) {
		tdbc__scan_free(s);
		return err;
	}
	s->err = err;
	*out = s;
	return 0;
}

int tdbc_scan_open_flags(struct tdbc_table *t, const void *prefix,
			 size_t plen, uint64_t limit, unsigned int flags,
			 struct tdbc_scan **out)
{
	return scan_open(t, prefix, plen, NULL, limit, flags, out);
}

int tdbc_scan_range(struct tdbc_table *t, const struct tdbc_range *r,
		    uint64_t limit, unsigned int flags, struct tdbc_scan **out)
{
	if (t && !r) {
		if (out)
			*out = NULL;
		return tdbc__fail(t->h.c, -EINVAL, "the range is NULL");
	}
	return scan_open(t, NULL, 0, r, limit, flags, out);
}

int tdbc_scan_range_txn(struct tdbc_table *t, struct tdbc_txn *txn,
			const struct tdbc_range *r, uint64_t limit,
			struct tdbc_scan **out)
{
	struct tdbc_scan *s;
	int err;

	if (out)
		*out = NULL;
	if (!t)
		return -EINVAL;
	if (!txn)
		return tdbc__fail(t->h.c, -EINVAL, "the transaction is NULL "
				  "(tdbc_scan_range reads outside one)");
	if (txn->h.c != t->h.c)
		return tdbc__fail(t->h.c, -EINVAL, "transaction belongs to "
				  "another connection");
	/* no range: the whole table (no range attribute, any table) */
	err = scan_new(t, NULL, 0, r, limit, 0, out);
	if (err)
		return err;
	s = *out;
	*out = NULL;
	s->txn = txn->id;
	err = fetch(s);
	if (err && !s->head) {
		tdbc__scan_free(s);
		return err;
	}
	s->err = err;
	*out = s;
	return 0;
}

int tdbc_scan_next(struct tdbc_scan *s, const void **key, size_t *klen,
		   const void **val, size_t *vlen)
{
	return tdbc_scan_next_ver(s, key, klen, val, vlen, NULL);
}

int tdbc_scan_next_ver(struct tdbc_scan *s, const void **key, size_t *klen,
		       const void **val, size_t *vlen, uint64_t *version)
{
	return tdbc_scan_next_ex(s, key, klen, val, vlen, version, NULL);
}

int tdbc_scan_next_ex(struct tdbc_scan *s, const void **key, size_t *klen,
		      const void **val, size_t *vlen, uint64_t *version,
		      uint64_t *deadline)
{
	int err;

	if (!s)
		return -EINVAL;
	free(s->cur);
	s->cur = NULL;
	for (;;) {
		struct rec *r = s->head;

		if (r) {
			s->head = r->next;
			if (!s->head)
				s->tailp = &s->head;
			s->cur = r;
			if (key)
				*key = r->data;
			if (klen)
				*klen = r->klen;
			if (val)
				*val = r->data + r->klen;
			if (vlen)
				*vlen = r->vlen;
			if (version)
				*version = r->version;
			if (deadline)
				*deadline = r->deadline;
			return 1;
		}
		if (s->async)
			return async_next(s);
		if (s->err)
			return s->err;
		if (s->stream) {
			if (s->ended)
				return 0;
			err = tdbc__enter(s->h.c);
			if (!err)
				err = stream_wait(s);
			if (err)
				s->err = err;
			continue;
		}
		if (!s->more)
			return 0;
		err = tdbc__enter(s->h.c);
		if (!err)
			err = fetch(s);
		if (err)
			s->err = err;
	}
}

void tdbc__scan_free(struct tdbc_scan *s)
{
	struct rec *r;

	if (s->h.c->stream == s)
		s->h.c->stream = NULL;
	if (s->inflight)
		tdbc__async_forget_scan(s->h.c, s);
	tdbc__unlink(&s->h);
	while ((r = s->head)) {
		s->head = r->next;
		free(r);
	}
	free(s->cur);
	free(s->prefix);
	free(s->from);
	free(s->to);
	free(s);
}

static void free_queue(struct tdbc_scan *s)
{
	struct rec *r;

	while ((r = s->head)) {
		s->head = r->next;
		free(r);
	}
	s->tailp = &s->head;
}

void tdbc_scan_close(struct tdbc_scan *s)
{
	if (!s)
		return;
	/* A stream not at its end: take the rest of the dump (dropping it)
	 * so that its parts never reach another call. */
	if (s->stream && !s->ended && !s->h.c->dead) {
		free_queue(s);
		s->discard = true;
		tdbc__wait(s->h.c, stream_ready, s, -1);
	}
	tdbc__scan_free(s);
}
