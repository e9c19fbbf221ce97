// SPDX-License-Identifier: MIT
/*
 * async.c - the asynchronous API: tdbc_submit, tdbc_reap, tdbc_inflight.
 *
 * Requests in flight live in an open-addressing table keyed by their
 * sequence number (linear probing, deletion by backward shift, at most
 * half full).  io.c routes every answer whose seq is there to
 * tdbc__async_deliver, which turns it into a struct tdbc_done at the end
 * of a FIFO, whoever was reading at the time (tdbc_reap, a blocking call
 * or a wait for ring space): so mixing blocking calls in loses nothing.
 * tdbc_reap moves entries from the FIFO to `reaped`, whose values stay
 * allocated until the next tdbc_reap or blocking call (tdbc__enter).
 *
 * Besides GET, PUT and DEL: COMMIT and ABORT end a transaction (its
 * handle is freed once the request is queued: at the end of that
 * tdbc_submit, so later requests of the same array that name it are
 * refused, not a use after free), and a scan's batch (tdbc_scan_submit,
 * scan.c) is a request whose dump parts go to its scan and whose end is
 * the completion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* --- the table of requests in flight ------------------------------------ */

static uint32_t slot_home(const struct tdbc *c, uint32_t seq)
{
	return seq & (c->slot_cap - 1);   /* seqs count up: no clustering */
}

static long slot_find(const struct tdbc *c, uint32_t seq)
{
	uint32_t i;

	if (!c->slot_cap)
		return -1;
	for (i = slot_home(c, seq); c->slots[i].used;
	     i = (i + 1) & (c->slot_cap - 1))
		if (c->slots[i].seq == seq)
			return i;
	return -1;
}

static void slot_put(struct tdbc *c, const struct tdbc_slot *s)
{
	uint32_t i = slot_home(c, s->seq);

	while (c->slots[i].used)
		i = (i + 1) & (c->slot_cap - 1);
	c->slots[i] = *s;
	c->slots[i].used = 1;
	c->slot_used++;
}

/* Room for one more, keeping the table at most half full. */
static int slot_reserve(struct tdbc *c)
{
	struct tdbc_slot *old = c->slots;
	uint32_t cap = c->slot_cap, i;

	if ((c->slot_used + 1) * 2 <= c->slot_cap)
		return 0;
	c->slot_cap = cap ? cap * 2 : 256;
	c->slots = calloc(c->slot_cap, sizeof(*c->slots));
	if (!c->slots) {
		c->slots = old;
		c->slot_cap = cap;
		return tdbc__fail(c, -ENOMEM, "out of memory for requests in "
				  "flight");
	}
	c->slot_used = 0;
	for (i = 0; i < cap; i++)
		if (old[i].used)
			slot_put(c, &old[i]);
	free(old);
	return 0;
}

/* Remove slot i; later members of its probe run move back to fill it. */
static void slot_del(struct tdbc *c, uint32_t i)
{
	uint32_t mask = c->slot_cap - 1, j = i, home;

	c->slots[i].used = 0;
	c->slot_used--;
	for (;;) {
		j = (j + 1) & mask;
		if (!c->slots[j].used)
			return;
		home = slot_home(c, c->slots[j].seq);
		/* j may move to i if its home is not in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			c->slots[i] = c->slots[j];
			c->slots[j].used = 0;
			i = j;
		}
	}
}

/* --- completions -------------------------------------------------------- */

static int done_push(struct tdbc *c, const struct tdbc_done *d)
{
	if (c->done_len == c->done_cap) {
		uint32_t cap = c->done_cap ? c->done_cap * 2 : 256, i;
		struct tdbc_done *v = malloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (i = 0; i < c->done_len; i++)
			v[i] = c->done[(c->done_head + i) % c->done_cap];
		free(c->done);
		c->done = v;
		c->done_cap = cap;
		c->done_head = 0;
	}
	c->done[(c->done_head + c->done_len) % c->done_cap] = *d;
	c->done_len++;
	/* Taken by another call than tdbc_reap (a blocking one): no
	 * wake-up will announce it, so tdbc_fd must (io.c). */
	if (c->done_len == 1 && !c->in_reap)
		tdbc__self_signal(c);
	return 0;
}

static void done_free(struct tdbc_done *d)
{
	free(d->val);
	free(d->msg);
}

int tdbc__async_complete(struct tdbc *c, uint64_t user, int res, void *val,
			 size_t vlen, uint64_t version, uint64_t deadline)
{
	struct tdbc_done d = { .user = user, .res = res, .val = val,
			       .vlen = vlen, .version = version,
			       .deadline = deadline };

	if (done_push(c, &d)) {
		free(val);
		return tdbc__fail(c, -ENOMEM, "out of memory keeping a "
				  "completion");
	}
	return 0;
}

/* Turn an answer into a completion (the answer's bytes are not ours to
 * keep: the value and the text are copied). */
static int make_done(struct tdbc *c, const struct tdb_proto_msg *m,
		     int kind, struct tdbc_done *d)
{
	if (kind == TDBC_ANS_REPLY) {
		d->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ?
			     m->rec_version : 0;
		if (m->cmd == TDB_CMD_INCR) {
			d->num = m->ival;
			return 0;
		}
		d->deadline = TDB_PROTO_HAS(m, TDB_A_DEADLINE) ?
			      m->deadline : 0;
		d->val = malloc(m->value_len ? m->value_len : 1);
		if (!d->val)
			return -ENOMEM;
		tdb_proto_value_copy(m, d->val);
		d->vlen = m->value_len;
		return 0;
	}
	d->res = m->error;
	if (m->error && m->ext.msg && m->ext.msg[0]) {
		d->msg = strdup(m->ext.msg);
		if (!d->msg)
			return -ENOMEM;
	}
	(void)c;
	return 0;
}

/* A scan batch's answer: parts to the scan (none once it is closed),
 * the end a completion saying how many records the batch brought. */
static int scan_deliver(struct tdbc *c, uint32_t i, int kind,
			const struct tdb_proto_msg *m)
{
	struct tdbc_scan *s = c->slots[i].scan;
	struct tdbc_done d = { .user = c->slots[i].user };
	int err;

	if (kind == TDBC_ANS_PART) {
		if (s)
			(void)tdbc__scan_async_part(s, m);   /* kept in s */
		return c->dead ? c->dead : 1;
	}
	slot_del(c, i);
	if (!s)
		return 1;
	d.res = tdbc__scan_async_end(s, m);
	if (d.res < 0 && m->error && m->ext.msg && m->ext.msg[0] &&
	    !(d.msg = strdup(m->ext.msg)))
		err = -ENOMEM;
	else
		err = done_push(c, &d);
	if (err) {
		done_free(&d);
		return tdbc__die(c, -ENOMEM, "out of memory keeping a "
				 "completion");
	}
	return 1;
}

int tdbc__async_deliver(struct tdbc *c, const struct tdb_proto_msg *m)
{
	struct tdbc_done d = { 0 };
	long i = slot_find(c, m->seq);
	int kind;

	if (i < 0)
		return 0;
	kind = tdbc__classify(c, m, c->slots[i].cmd);
	if (kind < 0)
		return kind;
	if (c->slots[i].cmd == TDB_CMD_SCAN)
		return scan_deliver(c, (uint32_t)i, kind, m);
	if (kind == TDBC_ANS_PART)
		return tdbc__die(c, -EPROTO, "tdbd answered %s with a dump "
				 "part", tdb_proto_cmd_name(c->slots[i].cmd));
	d.user = c->slots[i].user;
	slot_del(c, (uint32_t)i);
	if (make_done(c, m, kind, &d) || done_push(c, &d)) {
		done_free(&d);
		return tdbc__die(c, -ENOMEM, "out of memory keeping a "
				 "completion");
	}
	return 1;
}

void tdbc__release_reaped(struct tdbc *c)
{
	uint32_t i;

	for (i = 0; i < c->reaped_len; i++)
		done_free(&c->reaped[i]);
	c->reaped_len = 0;
}

void tdbc__async_free(struct tdbc *c)
{
	uint32_t i;

	tdbc__release_reaped(c);
	for (i = 0; i < c->done_len; i++)
		done_free(&c->done[(c->done_head + i) % c->done_cap]);
	free(c->done);
	free(c->reaped);
	free(c->slots);
	c->done = c->reaped = NULL;
	c->slots = NULL;
	c->done_len = c->reaped_cap = c->slot_cap = c->slot_used = 0;
}

int tdbc__async_add_scan(struct tdbc *c, uint32_t seq, uint64_t user,
			 struct tdbc_scan *s)
{
	struct tdbc_slot sl = { .seq = seq, .cmd = TDB_CMD_SCAN,
				.user = user, .scan = s };
	int err = slot_reserve(c);

	if (!err)
		slot_put(c, &sl);
	return err;
}

void tdbc__async_forget_scan(struct tdbc *c, struct tdbc_scan *s)
{
	uint32_t i;

	for (i = 0; i < c->slot_cap; i++)
		if (c->slots[i].used && c->slots[i].scan == s)
			c->slots[i].scan = NULL;
}

/* --- submit ------------------------------------------------------------- */

static const uint8_t op_cmd[] = {
	[TDBC_OP_GET] = TDB_CMD_GET,
	[TDBC_OP_PUT] = TDB_CMD_PUT,
	[TDBC_OP_DEL] = TDB_CMD_DEL,
	[TDBC_OP_COMMIT] = TDB_CMD_TXN_COMMIT,
	[TDBC_OP_ABORT] = TDB_CMD_TXN_ABORT,
	[TDBC_OP_INCR] = TDB_CMD_INCR,
};

static bool op_ends_txn(enum tdbc_op op)
{
	return op == TDBC_OP_COMMIT || op == TDBC_OP_ABORT;
}

/* COMMIT, ABORT: only the transaction. */
static int end_msg(struct tdbc *c, const struct tdbc_req *r,
		   struct tdb_proto_msg *m)
{
	if (!r->txn || r->txn->h.c != c)
		return tdbc__fail(c, -EINVAL, "%s without an open transaction "
				  "of this connection",
				  r->op == TDBC_OP_COMMIT ? "commit" : "abort");
	m->cmd = op_cmd[r->op];
	m->attrs = TDB_PROTO_BIT(TDB_A_TXN);
	m->txn = r->txn->id;
	return 0;
}

/* Check one request and describe it in m. */
static int req_msg(struct tdbc *c, const struct tdbc_req *r,
		   struct tdb_proto_msg *m)
{
	int err;

	memset(m, 0, sizeof(*m));
	if (r->op < TDBC_OP_GET || r->op > TDBC_OP_INCR)
		return tdbc__fail(c, -EINVAL, "unknown op %d", (int)r->op);
	if (op_ends_txn(r->op))
		return end_msg(c, r, m);
	if (!r->table || r->table->h.c != c)
		return tdbc__fail(c, -EINVAL, "request without a table of "
				  "this connection");
	if (r->txn && r->txn->h.c != c)
		return tdbc__fail(c, -EINVAL, "transaction ended or belongs "
				  "to another connection");
	err = tdbc__check_key(c, r->key, r->klen);
	if (err)
		return err;
	m->cmd = op_cmd[r->op];
	m->attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY);
	m->table = r->table->name;
	m->key = r->key;
	m->key_len = (uint32_t)r->klen;
	if (r->txn) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m->txn = r->txn->id;
	}
	switch (r->op) {
	case TDBC_OP_PUT:
		return tdbc__put_msg(c, m, r->val, r->vlen, r->flags,
				     r->version, r->expiry);
	case TDBC_OP_DEL:
		return tdbc__del_msg(c, m, r->flags, r->version);
	case TDBC_OP_INCR:
		return tdbc__incr_msg(m, r->delta);
	default:                /* GET: flags are not looked at */
		return 0;
	}
}

/* Queue one request (built into the ring, not published).  A queued
 * COMMIT or ABORT retires its transaction's handle onto *ended. */
static int submit_one(struct tdbc *c, const struct tdbc_req *r,
		      struct tdbc_link *ended)
{
	struct tdbc_slot s = { .user = r->user };
	struct tdb_proto_msg m;
	long i;
	int err;

	err = req_msg(c, r, &m);
	if (!err && r->op == TDBC_OP_GET && !r->txn) {
		err = tdbc__map_submit_get(c, r);       /* zero-copy (map.c) */
		if (err)
			return err < 0 ? err : 0;
	}
	if (!err)
		err = slot_reserve(c);
	if (err)
		return err;
	m.seq = tdbc__seq(c);
	s.seq = m.seq;
	s.cmd = m.cmd;
	/* In the table before it is sent: a socket send reads answers. */
	slot_put(c, &s);
	err = tdbc__send_nowait(c, &m);
	if (err && !c->dead) {
		i = slot_find(c, s.seq);
		if (i >= 0)
			slot_del(c, (uint32_t)i);
	}
	if (!err && op_ends_txn(r->op)) {
		tdbc__unlink(&r->txn->h);
		r->txn->h.c = NULL;     /* later requests naming it: -EINVAL */
		r->txn->h.link.next = ended->next;
		ended->next = &r->txn->h.link;
	}
	return err;
}

int tdbc_submit(struct tdbc *c, const struct tdbc_req *reqs, unsigned int n)
{
	struct tdbc_link ended = { NULL, NULL }, *l;
	unsigned int i;
	int err = tdbc__enter(c), err2;

	if (err)
		return err;
	if (n && !reqs)
		return tdbc__fail(c, -EINVAL, "reqs is NULL");
	if (n > INT32_MAX)
		n = INT32_MAX;
	tdbc__map_prefetch(c, reqs, n);         /* mapped GETs' misses */
	for (i = 0; i < n; i++) {
		err = submit_one(c, &reqs[i], &ended);
		if (err)
			break;
	}
	while ((l = ended.next)) {
		ended.next = l->next;
		free(l);        /* the link opens struct tdbc_txn */
	}
	if (c->dead)
		return c->dead;
	err2 = tdbc__publish(c);
	if (err2)
		return err2;
	if (i == 0 && err == -EAGAIN)
		return tdbc__fail(c, -EAGAIN, "the submission ring is full "
				  "(%u requests in flight): reap completions "
				  "and submit again", tdbc_inflight(c));
	return i > 0 ? (int)i : err;
}

/* --- reap --------------------------------------------------------------- */

static bool enough_done(struct tdbc *c, void *arg)
{
	return c->done_len >= *(unsigned int *)arg;
}

static int reaped_room(struct tdbc *c, unsigned int n)
{
	struct tdbc_done *v;

	if (c->reaped_cap >= n)
		return 0;
	v = realloc(c->reaped, n * sizeof(*v));
	if (!v)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	c->reaped = v;
	c->reaped_cap = n;
	return 0;
}

int tdbc_reap(struct tdbc *c, struct tdbc_cqe *cqes, unsigned int n,
	      unsigned int min, int timeout_ms)
{
	unsigned int want, k, i;
	int err;

	if (!c)
		return -EINVAL;
	tdbc__release_reaped(c);
	/* A dead connection still hands out what came before the end. */
	if (c->dead && !c->done_len)
		return c->dead;
	if ((n && !cqes) || min > n)
		return tdbc__fail(c, -EINVAL, "bad reap arguments (n %u, "
				  "min %u)", n, min);
	if (n > INT32_MAX)
		n = INT32_MAX;
	/* Never wait for completions that cannot come. */
	want = min < tdbc_inflight(c) ? min : tdbc_inflight(c);
	c->in_reap = true;
	err = c->dead ? 0 : tdbc__wait(c, enough_done, &want, timeout_ms);
	c->in_reap = false;
	if (err && err != -ETIMEDOUT && !c->done_len)
		return err;
	/* Nothing: tdbc_fd must announce what comes from now on. */
	if (!c->done_len) {
		err = tdbc__arm(c);
		if (err)
			return err;
	}
	k = n < c->done_len ? n : c->done_len;
	if (reaped_room(c, k))
		return -ENOMEM;
	for (i = 0; i < k; i++) {
		struct tdbc_done *d = &c->done[c->done_head];

		c->reaped[i] = *d;
		c->done_head = (c->done_head + 1) % c->done_cap;
		c->done_len--;
		cqes[i].user = d->user;
		cqes[i].res = d->res;
		cqes[i].val = d->val;
		cqes[i].vlen = d->vlen;
		cqes[i].version = d->version;
		if (d->deadline)        /* GET's; num is INCR's */
			cqes[i].deadline = d->deadline;
		else
			cqes[i].num = d->num;
		if (d->res)
			tdbc__fail(c, d->res, "%s", d->msg ? d->msg :
				   tdbc_strerror(d->res));
	}
	c->reaped_len = k;
	return (int)k;
}

unsigned int tdbc_inflight(const struct tdbc *c)
{
	return c ? c->slot_used + c->done_len : 0;
}
