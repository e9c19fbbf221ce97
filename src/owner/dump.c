// SPDX-License-Identifier: GPL-2.0-only
/*
 * dump.c - the dump commands, SCAN and TABLE_LIST, as tdbd's
 * src/daemon/serve/exec.c runs them: the transport calls tdbo_dump_run() until
 * it returns 0 or an error and then ends the answer with NLMSG_DONE.
 *
 * Invariants:
 *  - A record taken from the cursor is always sent: when the sink has no
 *    room for its part, it stays pending (the cursor's copy stays valid
 *    until the next tdbe_cursor_next) and the next run sends it first.
 *  - A run examines at most TDBO_DUMP_BUDGET records, so one call is
 *    bounded however many records a PREFIX skips.
 *  - SCAN cursors are the owner's (opaque to clients), carried by the
 *    last part LIMIT allows ("Cursors" below): the key of the last
 *    record sent (the engine's tdbe_cursor_seek goes on after it, in
 *    the walk's direction) and what the scan was, so that a cursor
 *    given to another scan is refused.
 *  - Ordered tables: a SCAN walks the table in key order; FROM, TO and
 *    the range SCAN_FLAGS make it a range (tdbe_cursor_range), in
 *    reverse with TDB_SCAN_REVERSE.  A PREFIX is the range of the keys
 *    that start with it ([P, P's successor)): with FROM/TO the walk is
 *    their intersection (range_make), so a PREFIX costs no walk of the
 *    keys outside it.  Ranges on a hash table are refused.
 *  - A SCAN with TXN is a read of the transaction (txn.c, "Range
 *    reads"): each record sent is noted in its record, which the
 *    commit walks again.
 *  - A snapshot scan (SCAN_FLAGS TDB_SCAN_SNAPSHOT) walks the same
 *    cursor but asks its snapshot (snap.c) about each record, then
 *    sends the pre-images the walk did not; it takes no CURSOR and no
 *    part carries one.  Its records stay valid while pending too: a
 *    pre-image lives as long as the snapshot.
 *  - A dump's state (cursor, table references) is released once, by
 *    tdbo_dump_free() or by tdbo_client_free(), whichever comes first;
 *    its memory and its client reference go with tdbo_dump_free().
 */

#include "internal.h"

static struct tdbo_dump *dump_new(struct tdbo_client *c,
				  const struct tdb_proto_msg *m,
				  struct tdb_proto_extack *ext, int *err)
{
	struct tdbo_dump *d = tdbp_alloc(sizeof(*d));

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	tdbp_mutex_lock(c->lock);
	if (c->ndumps >= TDBO_MAX_DUMPS) {
		tdbp_mutex_unlock(c->lock);
		tdbp_free(d);
		ext->msg = TDBO_MAX_DUMPS_MSG;
		*err = -EBUSY;
		return NULL;
	}
	c->ndumps++;
	tdbo_list_add(&d->node, &c->dumps);
	tdbo_ref_get(&c->refs);
	tdbp_mutex_unlock(c->lock);
	d->c = c;
	d->cmd = m->cmd;
	d->seq = m->seq;
	d->pid = m->pid;
	d->live = true;
	tdbo_inc(&c->o->dumps);
	return d;
}

/* Let go of the cursor and tables (once). */
static void dump_release(struct tdbo_dump *d)
{
	unsigned int i;

	if (!d->live)
		return;
	d->live = false;
	d->pending = false;
	d->held = false;
	/* the snapshot first: writers ask it about the cursor's order
	 * until it is unregistered; and before its table goes */
	tdbo_snap_free(d->c->o, d->snap);
	d->snap = NULL;
	tdbe_cursor_close(d->cur);
	d->cur = NULL;
	tdbo_txn_scan_put(d->ts);
	d->ts = NULL;
	tdbp_free(d->rbuf);
	d->rbuf = NULL;
	tdbo_table_put(d->t);
	d->t = NULL;
	tdbp_free(d->prefix);
	d->prefix = NULL;
	tdbp_free(d->cbuf);
	d->cbuf = NULL;
	for (i = 0; d->tabs && i < d->ntabs; i++)
		tdbo_table_put(d->tabs[i]);
	tdbp_free(d->tabs);
	d->tabs = NULL;
	tdbo_dec(&d->c->o->dumps);
}

void tdbo_dump_free(struct tdbo_dump *d)
{
	struct tdbo_client *c;

	if (!d)
		return;
	c = d->c;
	dump_release(d);
	tdbp_mutex_lock(c->lock);
	tdbo_list_del(&d->node);
	c->ndumps--;
	tdbp_mutex_unlock(c->lock);
	tdbo_client_put(c);
	tdbp_free(d);
}

/* The client's thread, in tdbo_client_free(): no run or free of these
 * dumps is running (the transport serialises calls on one client). */
void tdbo_dumps_release(struct tdbo_client *c)
{
	struct tdbo_dump *d;

	tdbo_list_for_each(d, &c->dumps, node)
		dump_release(d);
}

/* --- SCAN ----------------------------------------------------------------- */

int tdbo_key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

bool tdbo_range_has(const struct tdbe_range *r, const void *key,
		    size_t klen)
{
	int c;

	if (r->from) {
		c = tdbo_key_cmp(key, klen, r->from, r->from_len);
		if (c < 0 || (c == 0 && (r->flags & TDBE_RANGE_FROM_EXCL)))
			return false;
	}
	if (r->to) {
		c = tdbo_key_cmp(key, klen, r->to, r->to_len);
		if (c > 0 || (c == 0 && !(r->flags & TDBE_RANGE_TO_INCL)))
			return false;
	}
	return true;
}

#define SCAN_RANGE_FLAGS (TDB_SCAN_FROM_EXCL | TDB_SCAN_TO_INCL | \
			  TDB_SCAN_REVERSE)

static uint32_t scan_flags(const struct tdb_proto_msg *m)
{
	return TDB_PROTO_HAS(m, TDB_A_SCAN_FLAGS) ? m->scan_flags : 0;
}

/* A range scan: FROM, TO or a direction (the flags need their bounds:
 * the codec's check_scan_req). */
static bool scan_is_range(const struct tdb_proto_msg *m)
{
	return TDB_PROTO_HAS(m, TDB_A_FROM) || TDB_PROTO_HAS(m, TDB_A_TO) ||
	       (scan_flags(m) & TDB_SCAN_REVERSE);
}

/*
 * Cursors.  V2 (every cursor made now): TDBO_CURSOR_V2, the request's
 * range SCAN_FLAGS (a byte), the table's id (u64), a digest of the
 * request's FROM, TO and PREFIX (u64: range_digest), then the key of the
 * last record sent: TDBO_CURSOR_HDR bytes and the key.  A SCAN with a
 * cursor must be the scan that made it, FROM, TO, PREFIX and range
 * flags alike, on the same table (ids are not reused: a table dropped
 * and made again has a new one); else -EINVAL naming what differs.
 * V1 (older owners: the byte and the key) is still taken by a hash
 * table's scan without a range.
 */
static uint64_t range_digest(const struct tdb_proto_msg *m)
{
	uint64_t h = 0x7464622d72616e67ull;     /* fixed: cursors outlive
						 * the owner's start */

	if (TDB_PROTO_HAS(m, TDB_A_FROM))
		h = tdbp_hash64(m->from, m->from_len, h ^ 1 ^
				((uint64_t)m->from_len << 8));
	if (TDB_PROTO_HAS(m, TDB_A_TO))
		h = tdbp_hash64(m->to, m->to_len, h ^ 2 ^
				((uint64_t)m->to_len << 8));
	if (TDB_PROTO_HAS(m, TDB_A_PREFIX) && m->prefix_len)
		h = tdbp_hash64(m->prefix, m->prefix_len, h ^ 3 ^
				((uint64_t)m->prefix_len << 8));
	return h;
}

static int cursor_bad(const struct tdb_proto_msg *m,
		      struct tdb_proto_extack *ext, const char *msg)
{
	ext->msg = msg;
	ext->offset = m->attr_off[TDB_A_CURSOR];
	return -EINVAL;
}

/* The CURSOR of m for table t: 0 and the key to go on after (*key,
 * *klen), none if m has no CURSOR; or -EINVAL. */
static int check_cursor(const struct tdbo_table *t,
			const struct tdb_proto_msg *m,
			struct tdb_proto_extack *ext, const void **key,
			size_t *klen)
{
	const unsigned char *cu = m->cursor;
	uint64_t id, dg;

	*key = NULL;
	*klen = 0;
	if (!TDB_PROTO_HAS(m, TDB_A_CURSOR))
		return 0;
	if (cu[0] == TDBO_CURSOR_V1 && m->cursor_len >= 2 &&
	    m->cursor_len - 1 <= TDB_KEY_MAX) {
		if (tdbe_table_ordered(t->t) || scan_is_range(m))
			return cursor_bad(m, ext, "CURSOR is an older owner's "
					  "(a hash table's scan): start this "
					  "scan again without it");
		*key = cu + 1;
		*klen = m->cursor_len - 1;
		return 0;
	}
	if (cu[0] != TDBO_CURSOR_V2 || m->cursor_len <= TDBO_CURSOR_HDR ||
	    m->cursor_len - TDBO_CURSOR_HDR > TDB_KEY_MAX)
		return cursor_bad(m, ext, "not a cursor this owner made");
	memcpy(&id, cu + 2, 8);
	memcpy(&dg, cu + 10, 8);
	if (id != t->id)
		return cursor_bad(m, ext, "CURSOR is from a scan of another "
				  "table");
	if (cu[1] != (scan_flags(m) & SCAN_RANGE_FLAGS))
		return cursor_bad(m, ext, "CURSOR is from a scan with other "
				  "SCAN_FLAGS (FROM_EXCL, TO_INCL, REVERSE)");
	if (dg != range_digest(m))
		return cursor_bad(m, ext, "CURSOR is from a scan of another "
				  "range (FROM, TO or PREFIX differ)");
	*key = cu + TDBO_CURSOR_HDR;
	*klen = m->cursor_len - TDBO_CURSOR_HDR;
	return 0;
}

/* The least key after every key that starts with p (n bytes) into out:
 * p without its trailing 0xff bytes, its last byte one up; its length,
 * 0 if there is none (p is all 0xff). */
static size_t prefix_end(const unsigned char *p, size_t n,
			 unsigned char *out)
{
	while (n && p[n - 1] == 0xff)
		n--;
	if (!n)
		return 0;
	memcpy(out, p, n);
	out[n - 1]++;
	return n;
}

/*
 * An ordered table's walk (d->range): the request's FROM, TO and
 * direction, intersected with its PREFIX's range [P, P's successor):
 * the later start and the earlier end, each keeping its own bound's
 * kind (the range's from inclusive when P is the later one, its to
 * exclusive when the successor is the earlier one or they are equal).
 * The bounds' bytes are copied into d->rbuf.
 */
static int range_make(struct tdbo_dump *d, const struct tdb_proto_msg *m)
{
	uint32_t f = scan_flags(m);
	const void *from = TDB_PROTO_HAS(m, TDB_A_FROM) ? m->from : NULL;
	const void *to = TDB_PROTO_HAS(m, TDB_A_TO) ? m->to : NULL;
	size_t flen = from ? m->from_len : 0, tlen = to ? m->to_len : 0;
	unsigned int rf =
		((f & TDB_SCAN_FROM_EXCL) ? TDBE_RANGE_FROM_EXCL : 0) |
		((f & TDB_SCAN_TO_INCL) ? TDBE_RANGE_TO_INCL : 0) |
		((f & TDB_SCAN_REVERSE) ? TDBE_RANGE_REVERSE : 0);
	unsigned char *end;
	size_t elen = 0;

	d->rbuf = tdbp_alloc(2 * TDB_KEY_MAX + 1);
	if (!d->rbuf)
		return -ENOMEM;
	end = d->rbuf + TDB_KEY_MAX;
	if (d->plen) {
		if (!from || tdbo_key_cmp(d->prefix, d->plen, from, flen) > 0) {
			from = d->prefix;
			flen = d->plen;
			rf &= ~TDBE_RANGE_FROM_EXCL;
		}
		elen = prefix_end(d->prefix, d->plen, end);
		if (elen && (!to || tdbo_key_cmp(end, elen, to, tlen) <= 0)) {
			to = end;       /* already in rbuf */
			tlen = elen;
			rf &= ~TDBE_RANGE_TO_INCL;
		}
	}
	if (from)
		memcpy(d->rbuf, from, flen);
	if (to && to != end)
		memcpy(end, to, tlen);
	d->range.from = from ? d->rbuf : NULL;
	d->range.from_len = flen;
	d->range.to = to ? end : NULL;
	d->range.to_len = tlen;
	d->range.flags = rf;
	d->ranged = true;
	return 0;
}

static int scan_setup(struct tdbo_dump *d, const struct tdb_proto_msg *m,
		      const void *ckey, size_t cklen)
{
	int err = 0;

	d->left = TDB_PROTO_HAS(m, TDB_A_LIMIT) ? m->limit : UINT64_MAX;
	d->cbuf = tdbp_alloc(TDBO_CURSOR_HDR + TDB_KEY_MAX);
	if (!d->cbuf)
		return -ENOMEM;
	d->cflags = (uint8_t)(scan_flags(m) & SCAN_RANGE_FLAGS);
	d->cdigest = range_digest(m);
	if (m->prefix_len) {
		d->prefix = tdbo_memdup(m->prefix, m->prefix_len);
		if (!d->prefix)
			return -ENOMEM;
		d->plen = m->prefix_len;
	}
	d->cur = tdbe_cursor_open(d->t->t, &err);
	if (!d->cur)
		return err ? err : -ENOMEM;
	if (tdbe_table_ordered(d->t->t) && (scan_is_range(m) || d->plen)) {
		err = range_make(d, m);
		if (!err)
			err = tdbe_cursor_range(d->cur, &d->range);
		if (err)
			return err;
	}
	if (ckey)
		err = tdbe_cursor_seek(d->cur, ckey, cklen);
	return err;
}

/* Refusals that need the table: a range of a hash table, FROM after TO,
 * a CURSOR of another scan. */
static int scan_check(const struct tdbo_table *t,
		      const struct tdb_proto_msg *m,
		      struct tdb_proto_extack *ext, const void **ckey,
		      size_t *cklen)
{
	bool snap = scan_flags(m) & TDB_SCAN_SNAPSHOT;

	if (scan_is_range(m) && !tdbe_table_ordered(t->t)) {
		ext->msg = "range scans need an ordered table (tdb create "
			   "--ordered)";
		ext->offset = m->attr_off[TDB_PROTO_HAS(m, TDB_A_FROM) ?
			      TDB_A_FROM : TDB_PROTO_HAS(m, TDB_A_TO) ?
			      TDB_A_TO : TDB_A_SCAN_FLAGS];
		return -EOPNOTSUPP;
	}
	/* the commit walks the span again under the table's lock: a hash
	 * table's PREFIX would have it walk every key of the table */
	if (TDB_PROTO_HAS(m, TDB_A_TXN) && m->prefix_len &&
	    !tdbe_table_ordered(t->t)) {
		ext->msg = "a SCAN with a PREFIX in a transaction needs an "
			   "ordered table (tdb create --ordered): checking a "
			   "hash table's at commit would walk all its keys";
		ext->offset = m->attr_off[TDB_A_PREFIX];
		return -EOPNOTSUPP;
	}
	if (TDB_PROTO_HAS(m, TDB_A_FROM) && TDB_PROTO_HAS(m, TDB_A_TO) &&
	    tdbo_key_cmp(m->from, m->from_len, m->to, m->to_len) > 0) {
		ext->msg = "the range's FROM is after its TO";
		ext->offset = m->attr_off[TDB_A_FROM];
		return -EINVAL;
	}
	if (snap && TDB_PROTO_HAS(m, TDB_A_CURSOR)) {
		ext->msg = "a snapshot scan is one dump of the whole table: "
			   "it takes no CURSOR";
		ext->offset = m->attr_off[TDB_A_CURSOR];
		return -EINVAL;
	}
	return check_cursor(t, m, ext, ckey, cklen);
}

int tdbo_scan(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbo_dump **dump)
{
	bool snap = scan_flags(m) & TDB_SCAN_SNAPSHOT;
	struct tdbo_txn *x = NULL;
	struct tdbo_dump *d;
	struct tdbo_table *t;
	const void *ckey = NULL;
	size_t cklen = 0;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	err = scan_check(t, m, ext, &ckey, &cklen);
	if (!err && TDB_PROTO_HAS(m, TDB_A_TXN))
		x = tdbo_txn_find(c, m, ext, &err);
	d = err ? NULL : dump_new(c, m, ext, &err);
	if (!d) {
		tdbo_table_put(t);
		return err;
	}
	d->t = t;                       /* the dump's reference now */
	err = scan_setup(d, m, ckey, cklen);
	if (!err && snap) {
		/* Under wlock: between two changes, and every later change
		 * to the table saves its pre-image first. */
		tdbp_mutex_lock(t->wlock);
		d->snap = tdbo_snap_new(t, c->uid, d->prefix, d->plen,
					d->ranged ? &d->range : NULL, d->cur);
		tdbp_mutex_unlock(t->wlock);
		if (!d->snap)
			err = -ENOMEM;
	}
	if (!err && x)
		err = tdbo_txn_scan_new(x, t, d->ranged ? &d->range : NULL,
					d->prefix, d->plen, ckey, cklen,
					&d->ts, ext);
	if (err) {
		tdbo_dump_free(d);
		return err;
	}
	*dump = d;
	return 0;
}

static bool prefix_ok(const struct tdbo_dump *d, const void *k, size_t kl)
{
	return !d->plen || (kl >= d->plen && !memcmp(k, d->prefix, d->plen));
}

/* Send the pending record: 0, or -ENOBUFS (no room: try again later). */
static int scan_send(struct tdbo_dump *d, struct tdbo_sink *out)
{
	struct tdb_proto_msg a;
	int err;

	memset(&a, 0, sizeof(a));
	a.cmd = d->cmd;
	a.seq = d->seq;
	a.pid = d->pid;
	a.attrs = TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE);
	a.key = d->k;
	a.key_len = (uint32_t)d->kl;
	a.value = d->v;
	a.value_len = (uint32_t)d->vl;
	tdbo_set_version(&a, d->ver);
	tdbo_set_deadline(&a, d->dl);
	if (d->left == 1 && !d->snap) { /* the last one allowed: say where */
		d->cbuf[0] = TDBO_CURSOR_V2;
		d->cbuf[1] = d->cflags;
		memcpy(d->cbuf + 2, &d->t->id, 8);
		memcpy(d->cbuf + 10, &d->cdigest, 8);
		memcpy(d->cbuf + TDBO_CURSOR_HDR, d->k, d->kl);
		a.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
		a.cursor = d->cbuf;
		a.cursor_len = (uint32_t)d->kl + TDBO_CURSOR_HDR;
	}
	err = tdbo_answer(out, &a);
	if (err)
		return err;
	if (d->ts)
		tdbo_txn_scan_note(d->ts, d->k, d->kl, d->ver);
	d->pending = false;
	d->left--;
	return 0;
}

#define TAKE_SKIP 2     /* take(): nothing to send for this record */

/* The next record to send into d->k, d->v: 1, 0 at the end, TAKE_SKIP,
 * or an error (ext->msg set).  The walk's record is held (d->h*) while
 * an ordered table's snapshot sends the pre-images before it. */
static int take(struct tdbo_dump *d, struct tdb_proto_extack *ext)
{
	int rc;

	if (d->walked)          /* a snapshot's pre-images left */
		return tdbo_snap_next_left(d->snap, &d->k, &d->kl, &d->v,
					   &d->vl, &d->ver, &d->dl,
					   &ext->msg);
	if (!d->held) {
		rc = tdbe_cursor_next_ex(d->cur, &d->hk, &d->hkl, &d->hv,
					 &d->hvl, &d->hver, &d->hdl);
		if (rc < 0) {
			ext->msg = tdbe_strerror(rc);
			return rc;
		}
		if (rc == 0) {
			if (d->ts)
				d->ts->complete = true;
			if (!d->snap)
				return 0;
			tdbo_snap_freeze(d->snap);
			d->walked = true;
			return TAKE_SKIP;
		}
		if (!prefix_ok(d, d->hk, d->hkl))
			return TAKE_SKIP;
		d->held = true;
	}
	if (d->snap) {
		rc = tdbo_snap_before(d->snap, d->hk, d->hkl, &d->k, &d->kl,
				      &d->v, &d->vl, &d->ver, &d->dl,
				      &ext->msg);
		if (rc)
			return rc;      /* 1: that one first */
	}
	d->held = false;
	d->k = d->hk;
	d->kl = d->hkl;
	d->v = d->hv;
	d->vl = d->hvl;
	d->ver = d->hver;
	d->dl = d->hdl;
	if (!d->snap)
		return 1;
	rc = tdbo_snap_check(d->snap, d->k, d->kl, &d->v, &d->vl, &d->ver,
			     &d->dl, &ext->msg);
	return rc == 0 ? TAKE_SKIP : rc;
}

static int scan_run(struct tdbo_dump *d, struct tdbo_sink *out,
		    struct tdb_proto_extack *ext)
{
	unsigned int budget = TDBO_DUMP_BUDGET;
	int rc;

	while (budget--) {
		if (!d->left)
			return 0;
		if (!d->pending) {
			rc = take(d, ext);
			if (rc <= 0)
				return rc;
			if (rc == TAKE_SKIP)
				continue;
			d->pending = true;
		} else if (d->dl && d->t && d->t->t &&
			   d->dl <= tdbe_table_now_ms(d->t->t)) {
			/* taken before its deadline, and the sink had no
			 * room then: past it now, it is not sent */
			d->pending = false;
			continue;
		}
		if (d->ts && (rc = tdbo_txn_scan_room(d->ts, ext)) != 0)
			return rc;
		rc = scan_send(d, out);
		if (rc == -ENOBUFS)
			return 1;
		if (rc) {
			ext->msg = "cannot build a SCAN part";
			return rc;
		}
	}
	return d->left ? 1 : 0;
}

/* --- TABLE_LIST ----------------------------------------------------------- */

/* A counted reference to every table now, in creation order. */
static int list_snapshot(struct tdbo_owner *o, struct tdbo_dump *d)
{
	struct tdbo_table *t;
	unsigned int n;

	for (;;) {
		n = tdb_load_relaxed(&o->ntables);
		d->tabs = tdbo_alloc_array(n + 1, sizeof(*d->tabs));
		if (!d->tabs)
			return -ENOMEM;
		tdbp_mutex_lock(o->reg_lock);
		if (o->ntables <= n)
			break;
		tdbp_mutex_unlock(o->reg_lock);      /* grew meanwhile: again */
		tdbp_free(d->tabs);
		d->tabs = NULL;
	}
	d->ntabs = 0;
	tdbo_list_for_each(t, &o->tables, lnode) {
		tdbo_ref_get(&t->refs);
		d->tabs[d->ntabs++] = t;
	}
	tdbp_mutex_unlock(o->reg_lock);
	return 0;
}

int tdbo_list(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbo_dump **dump)
{
	struct tdbo_dump *d;
	int err = 0;

	d = dump_new(c, m, ext, &err);
	if (!d)
		return err;
	err = list_snapshot(c->o, d);
	if (err) {
		tdbo_dump_free(d);
		return err;
	}
	*dump = d;
	return 0;
}

static int list_run(struct tdbo_dump *d, struct tdbo_sink *out,
		    struct tdb_proto_extack *ext)
{
	unsigned int budget = TDBO_DUMP_BUDGET;
	struct tdb_proto_msg a;
	int err;

	while (budget--) {
		struct tdbo_table *t;

		if (d->at == d->ntabs)
			return 0;
		t = d->tabs[d->at];
		if (tdb_load_relaxed(&t->dropped) ||
		    !tdbo_may(d->c, t, TDBO_MAY_SEE)) {
			d->at++;
			continue;
		}
		memset(&a, 0, sizeof(a));
		a.cmd = d->cmd;
		a.seq = d->seq;
		a.pid = d->pid;
		a.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			  TDB_PROTO_BIT(TDB_A_STAT);
		a.table = t->name;
		a.table_len = (uint32_t)tdbo_strlen(t->name);
		tdbo_fill_stat(t, &a.stat);
		err = tdbo_answer(out, &a);
		if (err == -ENOBUFS)
			return 1;
		if (err) {
			ext->msg = "cannot build a TABLE_LIST part";
			return err;
		}
		d->at++;
	}
	return d->at == d->ntabs ? 0 : 1;
}

int tdbo_dump_run(struct tdbo_dump *d, struct tdbo_sink *out,
		  struct tdb_proto_extack *ext)
{
	int rc;

	memset(ext, 0, sizeof(*ext));
	if (!d->live) {
		ext->msg = "the client is gone";
		rc = -ECONNRESET;
	} else if (d->cmd == TDB_CMD_SCAN) {
		rc = scan_run(d, out, ext);
	} else {
		rc = list_run(d, out, ext);
	}
	if (rc < 0)
		tdbo_inc(&d->c->o->errors);
	return rc;
}
