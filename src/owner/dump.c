// SPDX-License-Identifier: GPL-2.0-only
/*
 * owner_dump.c - the dump commands, SCAN and TABLE_LIST, as tdbd's
 * src/daemon/exec.c runs them: the transport calls tdbk_dump_run() until
 * it returns 0 or an error and then ends the answer with NLMSG_DONE.
 *
 * Invariants:
 *  - A record taken from the cursor is always sent: when the sink has no
 *    room for its part, it stays pending (the cursor's copy stays valid
 *    until the next tdbe_cursor_next) and the next run sends it first.
 *  - A run examines at most TDBK_DUMP_BUDGET records, so one call is
 *    bounded however many records a PREFIX skips.
 *  - SCAN cursors are tdbd's: one byte TDBK_CURSOR_V1, then the key of
 *    the last record sent (the engine's tdbe_cursor_seek goes on after
 *    it), carried by the last part LIMIT allows.
 *  - A snapshot scan (SCAN_FLAGS TDB_SCAN_SNAPSHOT) walks the same
 *    cursor but asks its snapshot (owner_snap.c) about each record, then
 *    sends the pre-images the walk did not; it takes no CURSOR and no
 *    part carries one.  Its records stay valid while pending too: a
 *    pre-image lives as long as the snapshot.
 *  - A dump's state (cursor, table references) is released once, by
 *    tdbk_dump_free() or by tdbk_client_free(), whichever comes first;
 *    its memory and its client reference go with tdbk_dump_free().
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "owner_int.h"

static struct tdbk_dump *dump_new(struct tdbk_client *c,
				  const struct tdb_proto_msg *m,
				  struct tdb_proto_extack *ext, int *err)
{
	struct tdbk_dump *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	spin_lock(&c->lock);
	if (c->ndumps >= TDBK_MAX_DUMPS) {
		spin_unlock(&c->lock);
		kfree(d);
		ext->msg = "too many dumps in progress on this connection (8)";
		*err = -EBUSY;
		return NULL;
	}
	c->ndumps++;
	list_add(&d->node, &c->dumps);
	refcount_inc(&c->refs);
	spin_unlock(&c->lock);
	d->c = c;
	d->cmd = m->cmd;
	d->seq = m->seq;
	d->pid = m->pid;
	d->live = true;
	atomic_inc(&c->o->dumps);
	return d;
}

/* Let go of the cursor and tables (once). */
static void dump_release(struct tdbk_dump *d)
{
	unsigned int i;

	if (!d->live)
		return;
	d->live = false;
	d->pending = false;
	tdbe_cursor_close(d->cur);
	d->cur = NULL;
	tdbk_snap_free(d->c->o, d->snap);       /* before its table goes */
	d->snap = NULL;
	tdbk_table_put(d->t);
	d->t = NULL;
	kfree(d->prefix);
	d->prefix = NULL;
	kfree(d->cbuf);
	d->cbuf = NULL;
	for (i = 0; d->tabs && i < d->ntabs; i++)
		tdbk_table_put(d->tabs[i]);
	kvfree(d->tabs);
	d->tabs = NULL;
	atomic_dec(&d->c->o->dumps);
}

void tdbk_dump_free(struct tdbk_dump *d)
{
	struct tdbk_client *c;

	if (!d)
		return;
	c = d->c;
	dump_release(d);
	spin_lock(&c->lock);
	list_del(&d->node);
	c->ndumps--;
	spin_unlock(&c->lock);
	tdbk_client_put(c);
	kfree(d);
}

/* The client's thread, in tdbk_client_free(): no run or free of these
 * dumps is running (the transport serialises calls on one client). */
void tdbk_dumps_release(struct tdbk_client *c)
{
	struct tdbk_dump *d;

	list_for_each_entry(d, &c->dumps, node)
		dump_release(d);
}

/* --- SCAN ----------------------------------------------------------------- */

static int check_cursor(const struct tdb_proto_msg *m,
			struct tdb_proto_extack *ext)
{
	const unsigned char *cu = m->cursor;

	if (!TDB_PROTO_HAS(m, TDB_A_CURSOR))
		return 0;
	if (m->cursor_len < 2 || cu[0] != TDBK_CURSOR_V1 ||
	    m->cursor_len - 1 > TDB_KEY_MAX) {
		ext->msg = "not a cursor this owner made";
		ext->offset = m->attr_off[TDB_A_CURSOR];
		return -EINVAL;
	}
	return 0;
}

static int scan_setup(struct tdbk_dump *d, const struct tdb_proto_msg *m)
{
	int err = 0;

	d->left = TDB_PROTO_HAS(m, TDB_A_LIMIT) ? m->limit : U64_MAX;
	d->cbuf = kmalloc(TDB_KEY_MAX + 1, GFP_KERNEL);
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
		d->prefix = kmemdup(m->prefix, m->prefix_len, GFP_KERNEL);
		if (!d->prefix)
			return -ENOMEM;
		d->plen = m->prefix_len;
	}
	return 0;
}

int tdbk_scan(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbk_dump **dump)
{
	bool snap = TDB_PROTO_HAS(m, TDB_A_SCAN_FLAGS) &&
		    (m->scan_flags & TDB_SCAN_SNAPSHOT);
	struct tdbk_dump *d;
	struct ktable *t;
	int err = 0;

	t = tdbk_resolve(c, m, TDBK_MAY_READ, ext, &err);
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
		tdbk_table_put(t);
		return err;
	}
	d->t = t;                       /* the dump's reference now */
	err = scan_setup(d, m);
	if (!err && snap) {
		/* Under wlock: between two changes, and every later change
		 * to the table saves its pre-image first. */
		mutex_lock(&c->o->wlock);
		d->snap = tdbk_snap_new(t, d->prefix, d->plen);
		mutex_unlock(&c->o->wlock);
		if (!d->snap)
			err = -ENOMEM;
	}
	if (err) {
		tdbk_dump_free(d);
		return err;
	}
	*dump = d;
	return 0;
}

static bool prefix_ok(const struct tdbk_dump *d, const void *k, size_t kl)
{
	return !d->plen || (kl >= d->plen && !memcmp(k, d->prefix, d->plen));
}

/* Send the pending record: 0, or -ENOBUFS (no room: try again later). */
static int scan_send(struct tdbk_dump *d, struct tdbk_sink *out)
{
	struct tdb_proto_msg a;
	int err;

	memset(&a, 0, sizeof(a));
	a.cmd = d->cmd;
	a.seq = d->seq;
	a.pid = d->pid;
	a.attrs = TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE);
	a.key = d->k;
	a.key_len = (u32)d->kl;
	a.value = d->v;
	a.value_len = (u32)d->vl;
	if (d->left == 1 && !d->snap) { /* the last one allowed: say where */
		d->cbuf[0] = TDBK_CURSOR_V1;
		memcpy(d->cbuf + 1, d->k, d->kl);
		a.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
		a.cursor = d->cbuf;
		a.cursor_len = (u32)d->kl + 1;
	}
	err = tdbk_answer(out, &a);
	if (err)
		return err;
	d->pending = false;
	d->left--;
	return 0;
}

#define TAKE_SKIP 2     /* take(): nothing to send for this record */

/* The next record to send into d->k, d->v: 1, 0 at the end, TAKE_SKIP,
 * or an error (ext->msg set). */
static int take(struct tdbk_dump *d, struct tdb_proto_extack *ext)
{
	int rc;

	if (d->walked)          /* a snapshot's pre-images left */
		return tdbk_snap_next_left(d->snap, &d->k, &d->kl, &d->v,
					   &d->vl, &ext->msg);
	rc = tdbe_cursor_next(d->cur, &d->k, &d->kl, &d->v, &d->vl);
	if (rc < 0) {
		ext->msg = tdbe_strerror(rc);
		return rc;
	}
	if (rc == 0) {
		if (!d->snap)
			return 0;
		tdbk_snap_freeze(d->snap);
		d->walked = true;
		return TAKE_SKIP;
	}
	if (!prefix_ok(d, d->k, d->kl))
		return TAKE_SKIP;
	if (!d->snap)
		return 1;
	rc = tdbk_snap_check(d->snap, d->k, d->kl, &d->v, &d->vl, &ext->msg);
	return rc == 0 ? TAKE_SKIP : rc;
}

static int scan_run(struct tdbk_dump *d, struct tdbk_sink *out,
		    struct tdb_proto_extack *ext)
{
	unsigned int budget = TDBK_DUMP_BUDGET;
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
static int list_snapshot(struct tdbk_owner *o, struct tdbk_dump *d)
{
	struct ktable *t;
	unsigned int n;

	for (;;) {
		n = READ_ONCE(o->ntables);
		d->tabs = kvcalloc(n + 1, sizeof(*d->tabs), GFP_KERNEL);
		if (!d->tabs)
			return -ENOMEM;
		spin_lock(&o->reg_lock);
		if (o->ntables <= n)
			break;
		spin_unlock(&o->reg_lock);      /* grew meanwhile: again */
		kvfree(d->tabs);
		d->tabs = NULL;
	}
	d->ntabs = 0;
	list_for_each_entry(t, &o->tables, lnode) {
		refcount_inc(&t->refs);
		d->tabs[d->ntabs++] = t;
	}
	spin_unlock(&o->reg_lock);
	return 0;
}

int tdbk_list(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdb_proto_extack *ext, struct tdbk_dump **dump)
{
	struct tdbk_dump *d;
	int err = 0;

	d = dump_new(c, m, ext, &err);
	if (!d)
		return err;
	err = list_snapshot(c->o, d);
	if (err) {
		tdbk_dump_free(d);
		return err;
	}
	*dump = d;
	return 0;
}

static int list_run(struct tdbk_dump *d, struct tdbk_sink *out,
		    struct tdb_proto_extack *ext)
{
	unsigned int budget = TDBK_DUMP_BUDGET;
	struct tdb_proto_msg a;
	int err;

	while (budget--) {
		struct ktable *t;

		if (d->at == d->ntabs)
			return 0;
		t = d->tabs[d->at];
		if (READ_ONCE(t->dropped) ||
		    !tdbk_may(d->c, t, TDBK_MAY_READ)) {
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
		a.table_len = (u32)strlen(t->name);
		tdbk_fill_stat(t, &a.stat);
		err = tdbk_answer(out, &a);
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

int tdbk_dump_run(struct tdbk_dump *d, struct tdbk_sink *out,
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
		atomic64_inc(&d->c->o->errors);
	return rc;
}
