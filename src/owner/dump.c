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
 *  - SCAN cursors are tdbd's: one byte TDBO_CURSOR_V1, then the key of
 *    the last record sent (the engine's tdbe_cursor_seek goes on after
 *    it), carried by the last part LIMIT allows.
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
	tdbe_cursor_close(d->cur);
	d->cur = NULL;
	tdbo_snap_free(d->c->o, d->snap);       /* before its table goes */
	d->snap = NULL;
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

static int check_cursor(const struct tdb_proto_msg *m,
			struct tdb_proto_extack *ext)
{
	const unsigned char *cu = m->cursor;

	if (!TDB_PROTO_HAS(m, TDB_A_CURSOR))
		return 0;
	if (m->cursor_len < 2 || cu[0] != TDBO_CURSOR_V1 ||
	    m->cursor_len - 1 > TDB_KEY_MAX) {
		ext->msg = "not a cursor this owner made";
		ext->offset = m->attr_off[TDB_A_CURSOR];
		return -EINVAL;
	}
	return 0;
}

static int scan_setup(struct tdbo_dump *d, const struct tdb_proto_msg *m)
{
	int err = 0;

	d->left = TDB_PROTO_HAS(m, TDB_A_LIMIT) ? m->limit : UINT64_MAX;
	d->cbuf = tdbp_alloc(TDB_KEY_MAX + 1);
	if (!d->cbuf)
		return -ENOMEM;
	d->cur = tdbe_cursor_open(d->t->t, &err);
	if (!d->cur)
		return err ? err : -ENOMEM;
	if (TDB_PROTO_HAS(m, TDB_A_CURSOR)) {
		err = tdbe_cursor_seek(d->cur,
				       (const unsigned char *)m->cursor + 1,
				       m->cursor_len - 1);
		if (err)
			return err;
	}
	if (m->prefix_len) {
		d->prefix = tdbo_memdup(m->prefix, m->prefix_len);
		if (!d->prefix)
			return -ENOMEM;
		d->plen = m->prefix_len;
	}
	return 0;
}

int tdbo_scan(struct tdbo_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbo_dump **dump)
{
	bool snap = TDB_PROTO_HAS(m, TDB_A_SCAN_FLAGS) &&
		    (m->scan_flags & TDB_SCAN_SNAPSHOT);
	struct tdbo_dump *d;
	struct tdbo_table *t;
	int err = 0;

	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	if (snap && TDB_PROTO_HAS(m, TDB_A_CURSOR)) {
		ext->msg = "a snapshot scan is one dump of the whole table: "
			   "it takes no CURSOR";
		ext->offset = m->attr_off[TDB_A_CURSOR];
		err = -EINVAL;
	} else {
		err = check_cursor(m, ext);
	}
	d = err ? NULL : dump_new(c, m, ext, &err);
	if (!d) {
		tdbo_table_put(t);
		return err;
	}
	d->t = t;                       /* the dump's reference now */
	err = scan_setup(d, m);
	if (!err && snap) {
		/* Under wlock: between two changes, and every later change
		 * to the table saves its pre-image first. */
		tdbp_mutex_lock(t->wlock);
		d->snap = tdbo_snap_new(t, c->uid, d->prefix,
					 d->plen);
		tdbp_mutex_unlock(t->wlock);
		if (!d->snap)
			err = -ENOMEM;
	}
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
		d->cbuf[0] = TDBO_CURSOR_V1;
		memcpy(d->cbuf + 1, d->k, d->kl);
		a.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
		a.cursor = d->cbuf;
		a.cursor_len = (uint32_t)d->kl + 1;
	}
	err = tdbo_answer(out, &a);
	if (err)
		return err;
	d->pending = false;
	d->left--;
	return 0;
}

#define TAKE_SKIP 2     /* take(): nothing to send for this record */

/* The next record to send into d->k, d->v: 1, 0 at the end, TAKE_SKIP,
 * or an error (ext->msg set). */
static int take(struct tdbo_dump *d, struct tdb_proto_extack *ext)
{
	int rc;

	if (d->walked)          /* a snapshot's pre-images left */
		return tdbo_snap_next_left(d->snap, &d->k, &d->kl, &d->v,
					   &d->vl, &d->ver, &d->dl,
					   &ext->msg);
	rc = tdbe_cursor_next_ex(d->cur, &d->k, &d->kl, &d->v, &d->vl,
				 &d->ver, &d->dl);
	if (rc < 0) {
		ext->msg = tdbe_strerror(rc);
		return rc;
	}
	if (rc == 0) {
		if (!d->snap)
			return 0;
		tdbo_snap_freeze(d->snap);
		d->walked = true;
		return TAKE_SKIP;
	}
	if (!prefix_ok(d, d->k, d->kl))
		return TAKE_SKIP;
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
