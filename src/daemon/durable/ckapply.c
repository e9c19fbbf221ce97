// SPDX-License-Identifier: GPL-2.0-only
/*
 * ckapply.c - WAL records applied straight to the checkpoint store
 * (ckapply.h): the core of kernel mode's checkpoint without a mirror
 * (issue 29; docs/KERNEL.md, "Without a mirror").
 *
 * Invariants:
 *  - One LMDB write transaction per run (tdbd_ckpt_begin .. commit):
 *    its records, schemas, drops, the version and the LSN of its last
 *    record become durable together or not at all.
 *  - a->lsn is the LSN of the last record the transaction holds (the
 *    store's own at begin); a record is applied only if it is a->lsn + 1.
 *  - a->tabs is the set of tables the store holds as of a->lsn (its
 *    tables at begin, plus creates, less drops, of the run).
 *  - After the first failure (a->rc) nothing more is applied and the
 *    run cannot commit.
 *  - a->pend holds changes of records <= a->lsn not yet written, in
 *    their order (seq); each points at a->tabs, so a create or drop
 *    (which change a->tabs and the tables' databases) writes them
 *    first, and so does the commit.  Written: of each (table, key) the
 *    change with the highest seq.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckapply.h"
#include "ckpt.h"
#include "keysort.h"
#include "wal.h"

struct ckapply {
	struct ckpt_txn *tx;
	uint64_t store_lsn;     /* the store's at begin */
	uint64_t lsn;           /* the last record applied (or store_lsn) */
	uint64_t version;       /* to write: past every version seen */
	uint64_t now_ms;        /* puts expired by then are deletes */
	uint64_t applied;
	struct ctab *tabs;      /* the tables as of lsn */
	unsigned int ntabs, captabs;
	int rc;
	char err[768];
	/* a run's changes, gathered: the last of each key is written, in
	 * LMDB's order, at a create or drop, past the run size, and at
	 * the commit (one transaction: only the last change of a key in
	 * it can be seen) */
	struct pend *pend;
	size_t npend, cappend, pend_bytes;
	struct chunk *chunks;
	uint64_t seq;
	uint64_t written;       /* puts and deletes written to LMDB */
	size_t pend_max;        /* the run size (checkpoint-run-size), or
				 * TDBD_CKAPPLY_PEND_MAX (tests) */
	uint64_t run_bytes;     /* gathered in this run, written or not */
};

#define CHUNK (1u << 20)

struct pend {
	unsigned int ti;        /* its table, a->tabs[ti]: stable while
				 * gathered (a create or drop writes the
				 * gathered first) */
	const unsigned char *key, *val;
	uint32_t klen, vlen;
	uint64_t version, deadline, seq;
	bool del;
};

/* A table of the store.  fresh: created in this run and nothing of it
 * written yet, so its databases are empty and a batch's puts, in key
 * order, go in with MDB_APPEND (tdbd_ckpt_append_dl) and its deletes
 * are of keys not there. */
struct ctab {
	char name[65];
	bool fresh;
};

struct chunk {
	struct chunk *next;
	size_t used, cap;
	unsigned char data[];
};

static int fail(struct ckapply *a, int rc, const char *fmt, ...)
{
	va_list ap;

	if (a->rc)
		return a->rc;
	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
	a->rc = rc;
	return rc;
}

static int tab_find(const struct ckapply *a, const char *name)
{
	for (unsigned int i = 0; i < a->ntabs; i++)
		if (!strcmp(a->tabs[i].name, name))
			return (int)i;
	return -1;
}

static int tab_add(struct ckapply *a, const char *name)
{
	if (a->ntabs == a->captabs) {
		unsigned int cap = a->captabs ? a->captabs * 2 : 16;
		struct ctab *t = realloc(a->tabs, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		a->tabs = t;
		a->captabs = cap;
	}
	snprintf(a->tabs[a->ntabs].name, sizeof(a->tabs[0].name), "%s",
		 name);
	a->tabs[a->ntabs++].fresh = false;
	return 0;
}

static void tab_del(struct ckapply *a, int i)
{
	a->ntabs--;
	if ((unsigned int)i != a->ntabs)
		a->tabs[i] = a->tabs[a->ntabs];
}

int tdbd_ckapply_begin(struct ckpt *ck, uint64_t now_ms, uint64_t run_size,
		       struct ckapply **out, char *err, size_t errlen)
{
	struct ckapply *a = calloc(1, sizeof(*a));
	struct ckpt_table *t = NULL;
	unsigned int n = 0, i;
	int e;

	*out = NULL;
	if (!a) {
		snprintf(err, errlen, "checkpoint from the WAL: out of memory");
		return -ENOMEM;
	}
	a->now_ms = now_ms;
	a->pend_max = run_size ? (size_t)run_size : CKAPPLY_RUN_SIZE;
	if (getenv("TDBD_CKAPPLY_PEND_MAX"))
		a->pend_max = strtoull(getenv("TDBD_CKAPPLY_PEND_MAX"), NULL,
				       10);
	if ((e = tdbd_ckpt_read_meta(ck, &a->store_lsn, &t, &n, err,
				     errlen)) ||
	    (e = tdbd_ckpt_read_version(ck, &a->version, err, errlen)))
		goto fail;
	for (i = 0; i < n; i++)
		if ((e = tab_add(a, t[i].name))) {
			snprintf(err, errlen, "checkpoint from the WAL: out "
				 "of memory (%u tables)", n);
			goto fail;
		}
	free(t);
	t = NULL;
	a->lsn = a->store_lsn;
	if ((e = tdbd_ckpt_begin(ck, &a->tx, err, errlen)))
		goto fail;
	*out = a;
	return 0;
fail:
	free(t);
	free(a->tabs);
	free(a);
	return e;
}


/* n bytes of p into the run's chunks (never NULL for n 0), or NULL. */
static unsigned char *pend_copy(struct ckapply *a, const void *p, size_t n)
{
	struct chunk *c = a->chunks;
	unsigned char *q;

	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK ? n : CHUNK;

		if (!(c = malloc(sizeof(*c) + cap)))
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->chunks;
		a->chunks = c;
	}
	q = c->data + c->used;
	if (n)
		memcpy(q, p, n);
	c->used += n;
	return q;
}

static void pend_clear(struct ckapply *a)
{
	while (a->chunks) {
		struct chunk *c = a->chunks;

		a->chunks = c->next;
		free(c);
	}
	a->npend = 0;
	a->pend_bytes = 0;
}

static int pend_cmp(const void *x, const void *y)
{
	const struct pend *p = x, *q = y;
	int c = (p->ti > q->ti) - (p->ti < q->ti);

	if (!c)
		c = keysort_cmp(p->key, p->klen, q->key, q->klen);
	if (!c)
		c = (p->seq > q->seq) - (p->seq < q->seq);
	return c;
}

/* The gathered changes into the transaction: the last of each key, in
 * LMDB's order; into a fresh table's empty databases with MDB_APPEND
 * (its deletes are of keys not there: nothing to write).  Then no table
 * is fresh. */
static int pend_flush(struct ckapply *a, uint64_t lsn)
{
	size_t i;
	int e = 0;

	qsort(a->pend, a->npend, sizeof(*a->pend), pend_cmp);
	for (i = 0; !e && i < a->npend; i++) {
		const struct pend *p = &a->pend[i], *n = p + 1;
		const struct ctab *t = &a->tabs[p->ti];

		if (i + 1 < a->npend && p->ti == n->ti &&
		    !keysort_cmp(p->key, p->klen, n->key, n->klen))
			continue;       /* a later change of the key follows */
		if (p->del && t->fresh)
			continue;
		a->written++;
		if (p->del)
			e = tdbd_ckpt_del(a->tx, t->name, p->key, p->klen);
		else if (t->fresh)
			e = tdbd_ckpt_append_dl(a->tx, t->name, p->key,
						p->klen, p->val, p->vlen,
						p->version, p->deadline);
		else
			e = tdbd_ckpt_put_dl(a->tx, t->name, p->key, p->klen,
					     p->val, p->vlen, p->version,
					     p->deadline);
	}
	if (e)
		fail(a, e, "writing the changes up to WAL record %llu: %s",
		     (unsigned long long)lsn, tdbd_ckpt_txn_error(a->tx));
	for (i = 0; i < a->ntabs; i++)
		a->tabs[i].fresh = false;
	pend_clear(a);
	return e;
}

static int pend_add(struct ckapply *a, unsigned int ti,
		    const struct wal_opv *op, bool del, uint64_t version)
{
	struct pend *p;

	if (a->npend == a->cappend) {
		size_t cap = a->cappend ? a->cappend * 2 : 1024;
		struct pend *v = realloc(a->pend, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		a->pend = v;
		a->cappend = cap;
	}
	p = &a->pend[a->npend];
	p->ti = ti;
	p->klen = op->klen;
	p->vlen = del ? 0 : op->vlen;
	p->key = pend_copy(a, op->key, op->klen);
	p->val = del ? NULL : pend_copy(a, op->val, op->vlen);
	if (!p->key || (!del && !p->val))
		return -ENOMEM;
	p->version = version;
	p->deadline = del ? 0 : op->deadline;
	p->del = del;
	p->seq = a->seq++;
	a->npend++;
	a->pend_bytes += sizeof(*p) + op->klen + p->vlen;
	a->run_bytes += sizeof(*p) + op->klen + p->vlen;
	return 0;
}

static int apply_ops(struct ckapply *a, const struct wal_rec *r)
{
	struct wal_opv op;
	uint64_t version;
	uint32_t pos = 0;
	int k, e;

	if (wal_ops_version(r, &version))
		return fail(a, -EUCLEAN, "WAL record %llu: malformed (its "
			    "version)", (unsigned long long)r->lsn);
	if (version > a->version)
		a->version = version;
	while ((k = wal_next_op(r, &pos, &op)) > 0) {
		int t = tab_find(a, op.name);

		if (t < 0)
			return fail(a, -EUCLEAN, "WAL record %llu changes "
				    "table %s, which the checkpoint store "
				    "does not hold at LSN %llu",
				    (unsigned long long)r->lsn, op.name,
				    (unsigned long long)a->lsn);
		/* a put expired already is a delete */
		e = pend_add(a, (unsigned int)t, &op, op.op == WAL_OP_DEL ||
			     (op.deadline && op.deadline <= a->now_ms),
			     version);
		if (e)
			return fail(a, e, "WAL record %llu: out of memory "
				    "gathering its changes (%zu bytes "
				    "gathered)", (unsigned long long)r->lsn,
				    a->pend_bytes);
	}
	if (a->pend_bytes >= a->pend_max && (e = pend_flush(a, r->lsn)))
		return e;
	if (k < 0)
		return fail(a, -EUCLEAN, "WAL record %llu: malformed inside "
			    "(an op's lengths)", (unsigned long long)r->lsn);
	return 0;
}

static int apply_create(struct ckapply *a, const struct wal_rec *r)
{
	struct wal_create c;
	struct ckpt_table t = { 0 };
	int e;

	if (wal_get_create(r, &c))
		return fail(a, -EUCLEAN, "WAL record %llu: a malformed "
			    "table create", (unsigned long long)r->lsn);
	if (tab_find(a, c.name) >= 0)
		return fail(a, -EUCLEAN, "WAL record %llu creates table %s, "
			    "which the checkpoint store holds at LSN %llu",
			    (unsigned long long)r->lsn, c.name,
			    (unsigned long long)a->lsn);
	snprintf(t.name, sizeof(t.name), "%s", c.name);
	t.id = c.id;
	t.uid = c.uid;
	t.gid = c.gid;
	t.mode = c.mode & 0777;
	t.max_extents = c.max_extents;
	/* t.sync 0: the owner keeps no table's sync, so the mirror's
	 * checkpoint writes 0 too */
	t.default_ttl = c.default_ttl;
	t.max_bytes = c.max_bytes;
	t.max_records = c.max_records;
	t.evict = c.evict;
	t.flags = c.flags;
	if ((e = tdbd_ckpt_reset_table(a->tx, c.name)) ||
	    (e = tdbd_ckpt_set_table(a->tx, &t)))
		return fail(a, e, "WAL record %llu: %s",
			    (unsigned long long)r->lsn,
			    tdbd_ckpt_txn_error(a->tx));
	if (tab_add(a, c.name))
		return fail(a, -ENOMEM, "WAL record %llu: out of memory "
			    "(%u tables)", (unsigned long long)r->lsn,
			    a->ntabs);
	a->tabs[a->ntabs - 1].fresh = true;     /* reset: empty */
	return 0;
}

static int apply_drop(struct ckapply *a, const struct wal_rec *r)
{
	char name[65];
	int i, e;

	if (wal_get_drop(r, name))
		return fail(a, -EUCLEAN, "WAL record %llu: a malformed "
			    "table drop", (unsigned long long)r->lsn);
	if ((i = tab_find(a, name)) < 0)
		return fail(a, -EUCLEAN, "WAL record %llu drops table %s, "
			    "which the checkpoint store does not hold at LSN "
			    "%llu", (unsigned long long)r->lsn, name,
			    (unsigned long long)a->lsn);
	if ((e = tdbd_ckpt_drop_table(a->tx, name)))
		return fail(a, e, "WAL record %llu: %s",
			    (unsigned long long)r->lsn,
			    tdbd_ckpt_txn_error(a->tx));
	tab_del(a, i);
	return 0;
}

int tdbd_ckapply_rec(struct ckapply *a, const struct wal_rec *r)
{
	int e;

	if (a->rc)
		return a->rc;
	if (r->lsn <= a->store_lsn)
		return 0;
	if (r->lsn != a->lsn + 1)
		return fail(a, -EPROTO, "WAL record %llu does not follow LSN "
			    "%llu (the checkpoint store's %s)",
			    (unsigned long long)r->lsn,
			    (unsigned long long)a->lsn,
			    a->lsn == a->store_lsn ? "own LSN" :
			    "last record applied");
	/* a create or drop changes a->tabs (the gathered point into it)
	 * and the tables' databases: what was gathered goes first */
	if (!wal_is_ops(r) && a->npend && (e = pend_flush(a, r->lsn - 1)))
		return e;
	if (wal_is_ops(r))
		e = apply_ops(a, r);
	else if (r->type == WAL_CREATE)
		e = apply_create(a, r);
	else if (r->type == WAL_DROP)
		e = apply_drop(a, r);
	else
		e = fail(a, -EUCLEAN, "WAL record %llu: unknown type %u",
			 (unsigned long long)r->lsn, (unsigned int)r->type);
	if (e)
		return e;
	/* recovery floors the version counter at the log's last LSN
	 * (an old WAL_OPS record's version is its LSN): so does this */
	if (r->lsn > a->version)
		a->version = r->lsn;
	a->lsn = r->lsn;
	a->applied++;
	return 1;
}

uint64_t tdbd_ckapply_lsn(const struct ckapply *a)
{
	return a->lsn;
}

uint64_t tdbd_ckapply_count(const struct ckapply *a)
{
	return a->applied;
}

int tdbd_ckapply_flush(struct ckapply *a)
{
	if (a->rc)
		return a->rc;
	return a->npend ? pend_flush(a, a->lsn) : 0;
}

uint64_t tdbd_ckapply_written(const struct ckapply *a)
{
	return a->written;
}

uint64_t tdbd_ckapply_gathered(const struct ckapply *a)
{
	return a->run_bytes;
}

const char *tdbd_ckapply_error(const struct ckapply *a)
{
	return a->err;
}

void tdbd_ckapply_abort(struct ckapply *a)
{
	if (!a)
		return;
	tdbd_ckpt_abort(a->tx);
	pend_clear(a);
	free(a->pend);
	free(a->tabs);
	free(a);
}

int tdbd_ckapply_commit(struct ckapply *a, char *err, size_t errlen)
{
	int e = a->rc;

	if (e) {
		snprintf(err, errlen, "%s", a->err);
	} else if (a->applied) {
		if (a->npend && (e = pend_flush(a, a->lsn))) {
			snprintf(err, errlen, "%s", a->err);
			tdbd_ckapply_abort(a);
			return e;
		}
		/* a failed set_version fails the transaction, and the
		 * commit then says why and frees it */
		(void)tdbd_ckpt_set_version(a->tx, a->version);
		e = tdbd_ckpt_commit(a->tx, a->lsn, err, errlen);
		a->tx = NULL;
	}
	tdbd_ckapply_abort(a);
	return e;
}

/* --- from the WAL ---------------------------------------------------------- */

struct from_wal {
	struct ckpt *ck;
	struct ckapply *a;
	const struct ckapply_opts *o;
	uint64_t n, runs, *lsn;
	char *err;
	size_t errlen;
};

/* The run so far committed and a new one begun. */
static int from_wal_commit(struct from_wal *f)
{
	uint64_t to = f->a->lsn;
	int e;

	e = tdbd_ckapply_commit(f->a, f->err, f->errlen);
	f->a = NULL;
	if (e)
		return e;
	*f->lsn = to;
	f->n = 0;
	f->runs++;
	if (f->o->on_commit)
		f->o->on_commit(f->o->arg, to);
	return 0;
}

static int from_wal_rec(void *arg, const struct wal_rec *r)
{
	struct from_wal *f = arg;
	uint64_t size = f->o->run_size ? f->o->run_size : CKAPPLY_RUN_SIZE;
	int e;

	if (f->o->step && (e = f->o->step(f->o->arg))) {
		snprintf(f->err, f->errlen, "abandoned at WAL record %llu",
			 (unsigned long long)r->lsn);
		return e;
	}
	/* a run ends after run_max records or once its gathered changes
	 * reached the run size (they were written then: pend_max) */
	if ((f->o->run_max && f->n == f->o->run_max) ||
	    (f->n && tdbd_ckapply_gathered(f->a) >= size)) {
		if ((e = from_wal_commit(f)))
			return e;
		if ((e = tdbd_ckapply_begin(f->ck, f->o->now_ms,
					    f->o->run_size, &f->a, f->err,
					    f->errlen)))
			return e;
	}
	e = tdbd_ckapply_rec(f->a, r);
	if (e < 0) {
		snprintf(f->err, f->errlen, "%s", f->a->err);
		return e;
	}
	f->n += (uint64_t)e;
	return 0;
}

int tdbd_ckapply_wal(struct ckpt *ck, const char *wal_dir, uint64_t upto,
		     const struct ckapply_opts *o, uint64_t *lsn,
		     char *err, size_t errlen)
{
	struct from_wal f = { .ck = ck, .o = o, .lsn = lsn, .err = err,
			      .errlen = errlen };
	char werr[512] = "";
	int e;

	if ((e = tdbd_ckapply_begin(ck, o->now_ms, o->run_size, &f.a, err,
				    errlen)))
		return e;
	*lsn = f.a->store_lsn;
	err[0] = '\0';
	e = wal_read_range(wal_dir, f.a->store_lsn, upto, from_wal_rec, &f,
			   werr, sizeof(werr));
	if (e) {
		/* the record's own text if a run refused it, else the
		 * reader's (which names the file and offset) */
		if (!err[0])
			snprintf(err, errlen, "%s", werr);
		tdbd_ckapply_abort(f.a);
		return e;
	}
	if (!f.a)
		return 0;
	if (f.a->applied)
		return from_wal_commit(&f);
	tdbd_ckapply_abort(f.a);
	return 0;
}
