/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve.c - a request's way to its answer, for every transport (see
 * serve.h): refuse and count, run, the answer owed, dump pacing, and
 * the one queue of answers held until their change is durable.
 *
 * Invariants:
 *  - every request handed to tdbo_serve*() gets exactly one answer
 *    (owner.h): a reply, an NLMSG_ERROR, a dump's parts and its
 *    NLMSG_DONE, or a held answer (sent, or an error instead, by
 *    tdbo_conn_release; only a connection's end drops one unsent);
 *  - a request that never reaches tdbo_exec() is counted once here
 *    (requests, and errors if refused); the owner counts the rest;
 *  - held answers are in the order they were held, which is LSN order
 *    for one connection; they leave only from the head;
 *  - serve reserves at most one message in the channel at a time.
 */
#include "serve.h"
#include "internal.h"

/* --- a sink into the connection's channel --------------------------------- */

struct conn_sink {
	struct tdbo_sink s;
	struct tdbo_conn *c;
	unsigned int ch;
	bool room_check;
	bool keep;              /* keep the first reply reserved (held?) */
	bool open;              /* a reservation not committed */
	bool refused;           /* reserve() returned NULL */
	unsigned int written;   /* messages committed (or kept) */
	void *kept;
	size_t kept_len;
};

static void *cs_reserve(struct tdbo_sink *s, size_t len)
{
	struct conn_sink *cs = (struct conn_sink *)s;
	void *p = cs->c->ops->reserve(cs->c->arg, cs->ch, len, cs->room_check);

	cs->open = p != NULL;
	cs->refused |= !p;
	return p;
}

static void cs_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct conn_sink *cs = (struct conn_sink *)s;

	cs->written++;
	if (cs->keep && !cs->kept) {
		cs->kept = p;           /* still open: finish() decides */
		cs->kept_len = len;
		return;
	}
	cs->open = false;
	cs->c->ops->commit(cs->c->arg, cs->ch, p, len);
}

static void cs_init(struct conn_sink *cs, struct tdbo_conn *c,
		    unsigned int ch, bool room_check)
{
	cs->s.reserve = cs_reserve;
	cs->s.commit = cs_commit;
	cs->s.in_read_section = c->ops->in_read_section;
	cs->c = c;
	cs->ch = ch;
	cs->room_check = room_check;
	cs->keep = false;
	cs->open = false;
	cs->refused = false;
	cs->written = 0;
	cs->kept = NULL;
	cs->kept_len = 0;
}

/* Drop a reservation the owner left open (a reply that did not fit). */
static void cs_close(struct conn_sink *cs)
{
	if (cs->open && cs->c->ops->abort)
		cs->c->ops->abort(cs->c->arg, cs->ch);
	cs->open = false;
}

/* --- status answers ------------------------------------------------------- */

/* NLMSG_ERROR (err, or 0: an ack with ext's cookie) or, done,
 * NLMSG_DONE for req on ch.  False if the channel had no room. */
static bool answer_status(struct tdbo_conn *c, unsigned int ch,
			  const struct nlmsghdr *req, int err,
			  const struct tdb_proto_extack *ext, bool done,
			  bool room_check)
{
	struct tdb_proto_extack e = { 0 };
	struct conn_sink cs;
	int rc;

	if (ext)
		e = *ext;
	if (err && !e.msg)
		e.msg = tdbe_strerror(err);
	cs_init(&cs, c, ch, room_check);
	rc = tdbo_answer_status(&cs.s, req, err, &e, done);
	cs_close(&cs);
	return rc == 0;
}

/* Counted here: a request the owner never saw. */
static void count_own(struct tdbo_conn *c, int err)
{
	tdb_fetch_add(&c->ctr->requests, 1);
	if (err)
		tdb_fetch_add(&c->ctr->errors, 1);
}

static void refuse(struct tdbo_conn *c, unsigned int ch,
		   const struct nlmsghdr *req, int err,
		   const struct tdb_proto_extack *ext)
{
	count_own(c, err);
	answer_status(c, ch, req, err, ext, false, false);
}

/* --- held answers --------------------------------------------------------- */

static const unsigned char *held_bytes(const struct tdbo_held *h)
{
	return h->big ? h->big : h->inl;
}

static struct tdbo_held *held_at(const struct tdbo_conn *c, unsigned int i)
{
	return &c->held[(c->held_head + i) % c->held_cap];
}

static void held_note(struct tdbo_conn *c, int delta)
{
	if (delta && c->ops->held_note)
		c->ops->held_note(c->arg, delta,
				  c->nheld ? held_at(c, 0) : NULL);
}

static int held_grow(struct tdbo_conn *c)
{
	unsigned int cap = c->held_cap ? c->held_cap * 2 : 16, i;
	struct tdbo_held *v = tdbo_alloc_array(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < c->nheld; i++)
		v[i] = *held_at(c, i);
	tdbp_free(c->held);
	c->held = v;
	c->held_cap = cap;
	c->held_head = 0;
	return 0;
}

static bool must_hold(const struct tdbo_conn *c, uint64_t lsn)
{
	return c->pol && lsn && c->pol->must_hold(c->pol_arg, lsn);
}

/*
 * The answer to req (msg, len bytes, private) waits for lsn if the home
 * says it must: 1 it is held (copied); 0 send it now; or, when it
 * cannot be held, the home's errno for its answer instead (*why).
 */
static int hold(struct tdbo_conn *c, unsigned int ch,
		const struct nlmsghdr *req, uint64_t lsn, const void *msg,
		size_t len, const char **why)
{
	const struct tdbo_hold_policy *pol = c->pol;
	unsigned char *big = NULL;
	struct tdbo_held *h;

	if (!must_hold(c, lsn))
		return 0;
	if (len > TDBO_HELD_INLINE && !(big = tdbo_memdup(msg, len)))
		return pol->no_room(c->pol_arg, lsn, why);
	if (c->nheld == c->held_cap && held_grow(c)) {
		tdbp_free(big);
		return pol->no_room(c->pol_arg, lsn, why);
	}
	h = held_at(c, c->nheld);
	h->lsn = lsn;
	h->deadline = pol->deadline ? pol->deadline(c->pol_arg) : 0;
	h->req = *req;
	h->ch = ch;
	h->len = (uint32_t)len;
	h->cost = req->nlmsg_len;
	h->big = big;
	if (!big)
		memcpy(h->inl, msg, len);
	c->nheld++;
	c->held_bytes += h->cost;
	held_note(c, 1);
	if (pol->held)
		pol->held(c->pol_arg, lsn);
	return 1;
}

/* An ack for a change logged at lsn: true if held (or answered with
 * the home's error when it cannot be). */
static bool hold_ack(struct tdbo_conn *c, unsigned int ch,
		     const struct nlmsghdr *req, uint64_t lsn)
{
	unsigned char buf[TDBO_HELD_INLINE];
	const char *why = NULL;
	long n;
	int rc;

	if (!must_hold(c, lsn))
		return false;   /* the common case: nothing built */
	n = tdb_proto_error(buf, sizeof(buf), req, 0, NULL);
	if (n < 0)
		return false;   /* cannot happen: an ack is 36 bytes */
	rc = hold(c, ch, req, lsn, buf, (size_t)n, &why);
	if (rc < 0)
		answer_status(c, ch, req, rc,
			      &(struct tdb_proto_extack){ .msg = why }, false,
			      false);
	return rc != 0;
}

static void held_pop(struct tdbo_conn *c)
{
	struct tdbo_held *h = held_at(c, 0);

	tdbp_free(h->big);
	h->big = NULL;
	c->held_bytes -= h->cost;
	c->held_head = (c->held_head + 1) % c->held_cap;
	c->nheld--;
}

/* An error instead of the held answer h (the channel has room). */
static void held_error(struct tdbo_conn *c, const struct tdbo_held *h,
		       int err, const char *msg)
{
	answer_status(c, h->ch, &h->req, err,
		      &(struct tdb_proto_extack){ .msg = msg }, false, false);
}

unsigned int tdbo_conn_release(struct tdbo_conn *c)
{
	const struct tdbo_hold_policy *pol = c->pol;
	const char *fmsg = NULL;
	unsigned int n = 0;
	uint64_t upto;
	int failed;

	if (!c->nheld)
		return 0;
	upto = pol->upto(c->pol_arg);
	failed = pol->failed ? pol->failed(c->pol_arg, &fmsg) : 0;
	while (c->nheld) {
		struct tdbo_held *h = held_at(c, 0);
		const char *lmsg = NULL;
		int late;

		if (h->lsn <= upto) {
			if (c->ops->emit(c->arg, h->ch, held_bytes(h),
					 h->len) == -EAGAIN)
				break;
		} else if (!failed && !(h->deadline && pol->late)) {
			break;
		} else if (c->ops->room &&
			   !c->ops->room(c->arg, h->ch, TDB_PROTO_ERROR_MAX)) {
			break;  /* before late(), which may count it */
		} else if (failed) {
			held_error(c, h, failed, fmsg);
		} else if ((late = pol->late(c->pol_arg, h->deadline,
					     &lmsg))) {
			held_error(c, h, late, lmsg);
		} else {
			break;
		}
		held_pop(c);
		n++;
	}
	held_note(c, -(int)n);
	return n;
}

bool tdbo_conn_held_ready(const struct tdbo_conn *c)
{
	const struct tdbo_hold_policy *pol = c->pol;
	const struct tdbo_held *h;
	const char *msg;

	if (!c->nheld)
		return false;
	h = held_at(c, 0);
	return h->lsn <= pol->upto(c->pol_arg) ||
	       (pol->failed && pol->failed(c->pol_arg, &msg)) ||
	       (h->deadline && pol->late &&
		pol->late(c->pol_arg, h->deadline, &msg));
}

bool tdbo_conn_held_full(const struct tdbo_conn *c)
{
	return (c->held_max && c->nheld >= c->held_max) ||
	       (c->held_bytes_max && c->held_bytes >= c->held_bytes_max);
}

/* --- dumps ---------------------------------------------------------------- */

static void dump_start(struct tdbo_conn *c, unsigned int ch,
		       const struct nlmsghdr *req, struct tdbo_dump *d)
{
	unsigned int i;

	for (i = 0; i < TDBO_MAX_DUMPS; i++) {
		struct tdbo_conn_dump *dp = &c->dumps[i];

		if (dp->used)
			continue;
		dp->used = true;
		dp->over = false;
		dp->ch = ch;
		dp->err = 0;
		dp->msg[0] = 0;
		dp->req = *req;
		dp->d = d;
		c->ndumps++;
		return;
	}
	/* cannot happen: tdbo_serve_msg paces them */
	tdbo_dump_free(d);
	answer_status(c, ch, req, -EBUSY,
		      &(struct tdb_proto_extack){ .msg = TDBO_MAX_DUMPS_MSG },
		      false, false);
}

/* The owner is done with dp (err 0 or its error, msg its text). */
static void dump_over(struct tdbo_conn_dump *dp, int err, const char *msg)
{
	dp->over = true;
	dp->err = err;
	dp->msg[0] = 0;
	if (msg)
		tdbo_strlcpy(dp->msg, msg, sizeof(dp->msg));
	tdbo_dump_free(dp->d);
	dp->d = NULL;
}

static void dump_end(struct tdbo_conn *c, struct tdbo_conn_dump *dp)
{
	if (dp->d)
		tdbo_dump_free(dp->d);
	dp->d = NULL;
	dp->used = false;
	c->ndumps--;
}

unsigned int tdbo_conn_dumps_run(struct tdbo_conn *c, bool *blocked)
{
	unsigned int i, done = 0;

	for (i = 0; i < TDBO_MAX_DUMPS && c->ndumps; i++) {
		struct tdbo_conn_dump *dp = &c->dumps[i];
		struct tdb_proto_extack ext = { 0 };
		struct conn_sink cs;
		const char *why;
		int rc;

		if (!dp->used)
			continue;
		if (!dp->over) {
			if (!c->ops->room(c->arg, dp->ch, TDB_PROTO_MSG_MAX)) {
				*blocked = true;
				continue;
			}
			cs_init(&cs, c, dp->ch, true);
			rc = tdbo_dump_run(dp->d, &cs.s, &ext);
			cs_close(&cs);
			done++;
			if (rc == 1 && !cs.written && cs.refused &&
			    c->ops->too_long &&
			    c->ops->too_long(c->arg, &why)) {
				/* a part that can never fit: end it */
				rc = -EMSGSIZE;
				ext.msg = why;
			}
			if (rc == 1)
				continue;
			dump_over(dp, rc, ext.msg);
		}
		if (!answer_status(c, dp->ch, &dp->req, dp->err,
				   &(struct tdb_proto_extack){
					.msg = dp->msg[0] ? dp->msg : NULL },
				   true, true)) {
			*blocked = true;
			continue;
		}
		dump_end(c, dp);
	}
	return done;
}

/* --- a request ------------------------------------------------------------ */

/* A big commit the transport did not take: run it here. */
static int commit_here(struct tdbo_txn *x, uint64_t *lsn,
		       struct tdb_proto_extack *ext, char *keep)
{
	int err = tdbo_txn_commit(x, lsn, ext);

	tdbo_txn_keep_msg(x, ext, keep);
	tdbo_txn_free(x);
	return err;
}

/* WATCH's or TABLE_MAP's ack: 1 answered by the transport, else the
 * error or 0 (ack, its cookie in *ack). */
static int grant(struct tdbo_conn *c, unsigned int ch,
		 const struct nlmsghdr *req, struct tdbo_out *res,
		 struct tdb_proto_extack *ack, struct tdb_proto_extack *ext)
{
	int rc;

	if (!c->ops->grant) {
		if (res->map)
			tdbo_table_put(res->map);
		res->map = NULL;
		return 0;
	}
	rc = c->ops->grant(c->arg, ch, req, res, ack, &ext->msg);
	return rc;
}

/* tdbo_exec() said err; the reply, if any, is in cs: answer the rest. */
static void finish(struct tdbo_conn *c, unsigned int ch,
		   const struct tdb_proto_msg *m, int err,
		   struct tdb_proto_extack *ext, struct tdbo_out *res,
		   struct conn_sink *cs)
{
	const struct nlmsghdr *req = m->nlh;
	struct tdb_proto_extack ack = { 0 };
	char keep[TDBO_TEXT];
	const char *why;

	if (cs->kept) {
		/* a change's reply (INCR): out once its record is
		 * durable, as an ack would be */
		int rc = err ? 0 : hold(c, ch, req, res->lsn, cs->kept,
					cs->kept_len, &why);

		if (rc == 0) {
			cs->open = false;
			c->ops->commit(c->arg, ch, cs->kept, cs->kept_len);
		}
		cs_close(cs);   /* held (copied), or not holdable */
		if (rc < 0)
			answer_status(c, ch, req, rc,
				      &(struct tdb_proto_extack){ .msg = why },
				      false, false);
		return;
	}
	cs_close(cs);
	if (!cs->written && cs->refused && c->ops->too_long &&
	    (err < 0 || (!res->dump && !res->txn &&
			 !tdb_proto_cmd_is_ack(m->cmd))) &&
	    c->ops->too_long(c->arg, &why)) {
		/* ours, not the owner's: say which limit it was */
		if (err == 0 && res->dump)
			tdbo_dump_free(res->dump);
		res->dump = NULL;
		err = -EMSGSIZE;
		*ext = (struct tdb_proto_extack){ .msg = why };
	}
	if (err < 0) {
		if (res->dump)
			tdbo_dump_free(res->dump);
		if (res->map)
			tdbo_table_put(res->map);
		answer_status(c, ch, req, err, ext, false, false);
		return;
	}
	if (res->dump) {
		dump_start(c, ch, req, res->dump);
		return;                 /* answered by the dump */
	}
	if (tdb_proto_cmd_is_dump(m->cmd)) {
		/* a dump command answered without a dump: end it empty */
		answer_status(c, ch, req, 0, NULL, true, false);
		return;
	}
	if (res->txn) {
		if (c->ops->defer && c->ops->defer(c->arg, ch, res->txn, req))
			return;         /* tdbo_conn_answer() later */
		err = commit_here(res->txn, &res->lsn, ext, keep);
		res->txn = NULL;        /* answered below, as any commit */
	}
	if (err == 0 && (res->feed || res->map)) {
		err = grant(c, ch, req, res, &ack, ext);
		if (err > 0)
			return;
		if (err == 0)
			*ext = ack;
	}
	if (err == 0 && hold_ack(c, ch, req, res->lsn))
		return;                 /* acked once its record is durable */
	if (tdbo_answer_owed(err, cs->written != 0, res))
		answer_status(c, ch, req, err, ext, false, false);
}

/* The transport's refuse hook, then the connection's dumps: 1 if m
 * was refused (answered and counted), else 0. */
static int refused_here(struct tdbo_conn *c, unsigned int ch,
			const struct tdb_proto_msg *m, unsigned int ndumps,
			struct tdb_proto_extack *ext)
{
	int err;

	if (c->ops->refuse) {
		err = c->ops->refuse(c->arg, ch, m, ext);
		if (err > 0) {
			count_own(c, 0);        /* the transport answered */
			return 1;
		}
		if (err < 0) {
			refuse(c, ch, m->nlh, err, ext);
			return 1;
		}
	}
	if (tdb_proto_cmd_is_dump(m->cmd) && ndumps >= TDBO_MAX_DUMPS) {
		ext->msg = TDBO_MAX_DUMPS_MSG;
		refuse(c, ch, m->nlh, -EBUSY, ext);
		return 1;
	}
	return 0;
}

void tdbo_serve_msg(struct tdbo_conn *c, unsigned int ch,
		    const struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext = { 0 };
	struct tdbo_out res;
	struct conn_sink cs;
	int err;

	if (refused_here(c, ch, m, c->ndumps, &ext))
		return;
	cs_init(&cs, c, ch, false);
	/* a reply that may wait for its record (INCR's): kept reserved */
	cs.keep = m->cmd != TDB_CMD_GET && !tdb_proto_cmd_is_dump(m->cmd);
	err = tdbo_exec(c->oc, m, &cs.s, &ext, &res);
	finish(c, ch, m, err, &ext, &res, &cs);
}

/* A dump's start writes nothing: its parts come from tdbo_dump_run. */
static void *null_reserve(struct tdbo_sink *s, size_t len)
{
	(void)s;
	(void)len;
	return NULL;
}

static void null_commit(struct tdbo_sink *s, void *p, size_t len)
{
	(void)s;
	(void)p;
	(void)len;
}

int tdbo_serve_dump_start(struct tdbo_conn *c, unsigned int ch,
			  const struct tdb_proto_msg *m, unsigned int ndumps,
			  struct tdbo_dump **out,
			  struct tdb_proto_extack *ext)
{
	struct tdbo_sink none = {
		.reserve = null_reserve, .commit = null_commit,
		.in_read_section = true,
	};
	struct tdbo_out res;
	int err;

	*out = NULL;
	if (refused_here(c, ch, m, ndumps, ext))
		return 1;
	err = tdbo_exec(c->oc, m, &none, ext, &res);
	if (!err && !res.dump) {
		ext->msg = "the dump was not started";
		err = -EIO;
	}
	if (err < 0) {
		if (res.dump)
			tdbo_dump_free(res.dump);
		return err;
	}
	*out = res.dump;
	return 0;
}

int tdbo_serve(struct tdbo_conn *c, unsigned int ch, const void *msg,
	       size_t len)
{
	struct tdb_proto_extack ext = { 0 };
	const struct nlmsghdr *req;
	int err;

	err = tdb_proto_parse(msg, len, TDB_PROTO_REQUEST, &c->m, &ext);
	if (!err) {
		tdbo_serve_msg(c, ch, &c->m);
		return 0;
	}
	req = c->m.nlh;
	if (!req && c->framed && len >= sizeof(*req))
		req = msg;      /* the ring core checked its frame */
	if (!req)
		return -EPROTO;
	refuse(c, ch, req, err, &ext);
	return 0;
}

void tdbo_conn_refuse(struct tdbo_conn *c, unsigned int ch,
		      const struct nlmsghdr *req, int err,
		      const struct tdb_proto_extack *ext)
{
	refuse(c, ch, req, err, ext);
}

void tdbo_conn_answer(struct tdbo_conn *c, unsigned int ch,
		      const struct nlmsghdr *req, int err,
		      const struct tdb_proto_extack *ext, uint64_t lsn)
{
	if (err == 0 && hold_ack(c, ch, req, lsn))
		return;
	answer_status(c, ch, req, err, ext, false, false);
}

/* --- GETs together ---------------------------------------------------------- */

struct gets_ctx {
	struct tdbo_conn *c;
	unsigned int ch;
};

/* Inside tdbo_get_many's read-side section, maybe with a reply reserved:
 * the error is built on the stack and emitted as private bytes. */
static void get_fail(void *arg, const struct tdb_proto_msg *m, int err,
		     const struct tdb_proto_extack *ext)
{
	struct gets_ctx *g = arg;
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	struct tdb_proto_extack e = *ext;
	long n;

	if (!e.msg)
		e.msg = tdbe_strerror(err);
	n = tdb_proto_error(buf, sizeof(buf), m->nlh, err, &e);
	if (n < 0)
		n = tdb_proto_error(buf, sizeof(buf), m->nlh, -EIO, NULL);
	if (n > 0)
		g->c->ops->emit(g->c->arg, g->ch, buf, (size_t)n);
}

unsigned int tdbo_serve_gets(struct tdbo_conn *c, unsigned int ch,
			     const struct tdb_proto_msg *m, unsigned int n)
{
	struct gets_ctx g = { .c = c, .ch = ch };
	struct conn_sink cs;
	unsigned int k;

	if (!n)
		return 0;
	if (n == 1 || !c->ops->in_read_section) {
		tdbo_serve_msg(c, ch, &m[0]);
		return 1;
	}
	cs_init(&cs, c, ch, true);
	k = tdbo_get_many(c->oc, m, n, &cs.s, get_fail, &g);
	cs_close(&cs);
	return k;
}

/* --- a connection ----------------------------------------------------------- */

void tdbo_conn_init(struct tdbo_conn *c, const struct tdbo_conn_ops *ops,
		    void *arg, const struct tdbo_hold_policy *pol,
		    void *pol_arg, struct tdbo_client *oc,
		    struct tdbo_counters *ctr)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->arg = arg;
	c->pol = pol;
	c->pol_arg = pol_arg;
	c->oc = oc;
	c->ctr = ctr;
}

void tdbo_conn_fini(struct tdbo_conn *c)
{
	unsigned int i, n = c->nheld;

	for (i = 0; i < TDBO_MAX_DUMPS; i++)
		if (c->dumps[i].used)
			dump_end(c, &c->dumps[i]);
	while (c->nheld)
		held_pop(c);
	held_note(c, -(int)n);
	tdbp_free(c->held);
	c->held = NULL;
	c->held_cap = c->held_head = 0;
}
