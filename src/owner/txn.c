/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * txn.c - transactions (TXN_BEGIN, TXN_COMMIT, TXN_ABORT): changes
 * buffered per client, applied at commit all together or not at all.
 *
 * A transaction belongs to the client that began it (c->txns, touched
 * only by the client's thread), or, once a big commit is handed to the
 * home (res->txn), to whoever runs tdbo_txn_commit().  Commit, under the
 * write locks of all its tables (taken in id order), through change.c's
 * pipeline:
 *  1. room for its log record (one record for the whole transaction) is
 *     reserved (hooks->log_reserve: a full disk fails it here);
 *  2. the seqcount of every table it touches becomes odd: GETs of those
 *     tables that overlap the apply retry, so no reader sees part of it
 *     (GETs of other tables never wait for it, and none waits for a log
 *     write: the record is only copied into the log's buffer, step 5);
 *  3. each change is applied in order (its pre-image saved in the
 *     table's snapshots first), after saving the key's old value in an
 *     undo list;
 *  4. if a change fails (-EEXIST of a no-overwrite put, -ENOSPC, a table
 *     dropped meanwhile, ...), the changes already applied are undone in
 *     reverse order and the log's room given back; the commit fails
 *     with that error and nothing is left;
 *  5. the seqcounts become even again; a commit that succeeded is logged
 *     as one record (hooks->log_begin/op/commit, still under the
 *     tables' locks), then each change is marked dirty and told to the
 *     watchers.
 * An undo can itself fail only if restoring an old value needs memory
 * the table no longer has; that is logged.
 *
 * Validation (serializable, optimistic).  Every key a GET or INCR of
 * the transaction read from its table (not from the transaction's own
 * changes), found or absent, is in its read set with the version seen
 * (0: absent).  The commit takes the locks of every table it read or
 * writes; before anything else (step 1) it checks that each read key
 * still has that version, and each condition of its changes (IF_ABSENT,
 * IF_PRESENT, IF_VERSION, against the table as the transaction's
 * earlier changes leave it).  A read key that changed fails the commit
 * with -ESTALE, a condition with its own errno; nothing is logged or
 * applied.  Holding those locks from the check to the end of the apply
 * means no other change to any key read or written comes between: the
 * commit is what running the transaction alone at that moment would
 * give.  A transaction with reads and no changes takes the locks,
 * checks and lets go: 0 means its reads were one state.  The commit's
 * writes all get one version.  The read set is bounded like the
 * changes: each read counts as an op of the key's size against
 * max-txn-ops and max-txn-bytes and is charged to the uid.
 *
 * Range reads.  A SCAN with TXN (a range or PREFIX of an ordered table,
 * or all of a table; dump.c refuses a hash table's PREFIX, whose check
 * would walk every key) reads the table as committed -- not the transaction's own
 * changes, so a SCAN of a range the transaction already changed a key
 * of is refused (-EOPNOTSUPP: scan before writing) -- and is recorded
 * (struct tdbo_txn_scan): its table, the span it walked (the range,
 * PREFIX and direction, from the key its CURSOR resumed after, to the
 * range's end if the walk got there, else to the last key it sent), how
 * many records it sent and a digest of them (the sum of a seeded xxh64
 * of each key and version: order does not matter).  The commit, under
 * the table's lock with the point reads, walks that span again and
 * fails with -ESTALE, naming the table and the range, if what it finds
 * is not what was sent: a key added in the span (a phantom), removed,
 * changed or expired.  The walk stops one record past the count sent,
 * and each record sent counted against max-txn-ops (like a read), so
 * the commit's walk is bounded by it; the record itself (bounds, prefix,
 * the last key: TDB_KEY_MAX) is charged as an op of its size.  A commit
 * while a SCAN of the transaction is still sending is refused (-EBUSY,
 * the transaction stays open): what it has not sent yet could not be
 * checked.
 */
#include "internal.h"

/*
 * Memory: each change is charged, at OP_COST, to the client's uid against
 * max-txn-memory-per-uid and max-txn-memory (quota.c) before it is copied;
 * x->charged is given back when x is freed (commit, abort, or the client's
 * end), whatever happened.  A client's transactions, and each one's
 * changes and bytes, are bounded by max-txns, max-txn-ops and
 * max-txn-bytes, read at each TXN_BEGIN, PUT or DEL (a lower value
 * refuses what comes next and takes nothing back).
 */

#define OP_COST(klen, vlen) \
	((uint64_t)(klen) + (vlen) + 2 * sizeof(struct tdbo_txn_op) + 32)

/* The old state of one key, to put back. */
struct undo {
	bool had;               /* the key was present */
	void *old;
	size_t olen;
	uint64_t version;
	uint64_t deadline;
};

static struct tdbo_txn *txn_new(struct tdbo_client *c)
{
	struct tdbo_txn *x = tdbp_alloc(sizeof(*x));

	if (x) {
		x->o = c->o;
		x->uid = c->uid;
		x->id = (tdb_fetch_add(&c->o->next_txn, 1) + 1);
	}
	return x;
}

void tdbo_txn_free(struct tdbo_txn *x)
{
	uint32_t i;

	if (!x)
		return;
	for (i = 0; i < x->nops; i++) {
		tdbo_table_put(x->ops[i].t);
		tdbp_free(x->ops[i].key);
	}
	for (i = 0; i < x->nreads; i++) {
		tdbo_table_put(x->reads[i].t);
		tdbp_free(x->reads[i].key);
	}
	for (i = 0; i < x->nscans; i++) {
		x->scans[i]->x = NULL;
		tdbo_txn_scan_put(x->scans[i]);
	}
	tdbp_free(x->scans);
	tdbp_free(x->reads);
	tdbp_free(x->rslot);
	tdbp_free(x->ops);
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, x->charged);
	tdb_fetch_sub(&x->o->txn_bytes, x->bytes);
	tdbp_free(x);
}

struct tdbo_txn *tdbo_txn_find(struct tdbo_client *c,
			   const struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext, int *err)
{
	struct tdbo_txn *x;

	tdbo_list_for_each(x, &c->txns, node)
		if (x->id == m->txn)
			return x;
	ext->msg = "no such transaction on this connection";
	ext->offset = m->attr_off[TDB_A_TXN];
	*err = -ENOENT;
	return NULL;
}

static int ops_grow(struct tdbo_txn *x)
{
	uint32_t cap = x->cap ? x->cap * 2 : 16;
	struct tdbo_txn_op *n = tdbo_alloc_array(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	if (x->nops)
		memcpy(n, x->ops, x->nops * sizeof(*n));
	tdbp_free(x->ops);
	x->ops = n;
	x->cap = cap;
	return 0;
}

/* Room for one more op or read of klen + vlen bytes, charged. */
static int txn_charge(struct tdbo_txn *x, size_t klen, size_t vlen,
		      uint64_t cost, struct tdb_proto_extack *ext)
{
	if ((uint64_t)x->nops + x->nreads + x->nscans + x->nscanned >=
	    tdbo_lim(x->o, max_txn_ops)) {
		ext->msg = "transaction has max-txn-ops changes and reads "
			   "already";
		return -E2BIG;
	}
	if (x->bytes + klen + vlen > tdbo_lim(x->o, max_txn_bytes)) {
		ext->msg = "transaction would exceed max-txn-bytes (its "
			   "changes and the keys it read)";
		return -E2BIG;
	}
	return tdbo_quota_charge(x->o, x->uid, x->uid, TDBO_Q_TXN_BYTES, cost,
				 &ext->msg);
}

int tdbo_txn_add(struct tdbo_txn *x, struct tdbo_table *t,
		 const struct tdbo_change *ch, uint32_t flags,
		 struct tdb_proto_extack *ext)
{
	const void *key = ch->key, *val = ch->val;
	size_t klen = ch->klen, vlen = ch->del ? 0 : ch->vlen;
	uint64_t cost = OP_COST(klen, vlen);
	struct tdbo_txn_op *op;
	int err;

	err = txn_charge(x, klen, vlen, cost, ext);
	if (err)
		return err;
	if (x->nops == x->cap && ops_grow(x))
		goto nomem;
	op = &x->ops[x->nops];
	op->key = tdbp_alloc(klen + vlen + 1);
	if (!op->key)
		goto nomem;
	memcpy(op->key, key, klen);
	if (vlen)
		memcpy(op->key + klen, val, vlen);
	op->klen = (uint32_t)klen;
	op->vlen = (uint32_t)vlen;
	op->del = ch->del;
	op->flags = flags;
	op->ifver = ch->ifver;
	op->ttl = ch->ttl;
	op->deadline = ch->deadline;
	op->has_deadline = ch->has_deadline;
	op->t = t;
	tdbo_ref_get(&t->refs);
	x->nops++;
	x->bytes += klen + vlen;
	tdb_fetch_add(&x->o->txn_bytes, (uint64_t)(klen + vlen));
	x->charged += cost;
	return 0;
nomem:
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, cost);
	ext->msg = NULL;
	return -ENOMEM;
}

int tdbo_txn_lookup(const struct tdbo_txn *x, const struct tdbo_table *t,
		    const void *key, size_t klen, const void **val,
		    size_t *vlen)
{
	uint32_t i = x->nops;

	while (i--) {
		const struct tdbo_txn_op *op = &x->ops[i];

		if (op->t != t || op->klen != klen ||
		    memcmp(op->key, key, klen))
			continue;
		if (op->del)
			return 0;
		*val = op->key + op->klen;
		*vlen = op->vlen;
		return 1;
	}
	return -ENOENT;
}

/* --- the read set ---------------------------------------------------------- */

#define READ_COST(klen) \
	((uint64_t)(klen) + 2 * sizeof(struct tdbo_txn_read) + \
	 2 * sizeof(uint32_t) + 32)

static uint64_t read_hash(const struct tdbo_table *t, const void *key,
			  size_t klen)
{
	return tdbp_hash64(key, klen, t->id * 0x9e3779b97f4a7c15ull);
}

/* The slot of (t, key) in x->rslot: its read's, or the empty one where
 * it would go.  rcap is a power of two, at least twice nreads. */
static uint32_t read_slot(const struct tdbo_txn *x,
			  const struct tdbo_table *t, const void *key,
			  size_t klen)
{
	uint32_t mask = x->rcap - 1;
	uint32_t i = (uint32_t)read_hash(t, key, klen) & mask;

	for (;; i = (i + 1) & mask) {
		const struct tdbo_txn_read *r;

		if (!x->rslot[i])
			return i;
		r = &x->reads[x->rslot[i] - 1];
		if (r->t == t && r->klen == klen && !memcmp(r->key, key, klen))
			return i;
	}
}

static int reads_grow(struct tdbo_txn *x)
{
	uint32_t cap = x->readcap ? x->readcap * 2 : 16, i;
	struct tdbo_txn_read *n = tdbo_alloc_array(cap, sizeof(*n));
	uint32_t *slots = tdbo_alloc_array(cap * 2, sizeof(*slots));

	if (!n || !slots) {
		tdbp_free(n);
		tdbp_free(slots);
		return -ENOMEM;
	}
	if (x->nreads)
		memcpy(n, x->reads, x->nreads * sizeof(*n));
	tdbp_free(x->reads);
	tdbp_free(x->rslot);
	x->reads = n;
	x->readcap = cap;
	x->rslot = slots;
	x->rcap = cap * 2;
	for (i = 0; i < x->nreads; i++)
		x->rslot[read_slot(x, n[i].t, n[i].key, n[i].klen)] = i + 1;
	return 0;
}

int tdbo_txn_read_add(struct tdbo_txn *x, struct tdbo_table *t,
		      const void *key, size_t klen, uint64_t version,
		      struct tdb_proto_extack *ext)
{
	uint64_t cost = READ_COST(klen);
	struct tdbo_txn_read *r;
	int err;

	if (x->nreads && x->rslot[read_slot(x, t, key, klen)])
		return 0;       /* read before: the first version counts */
	err = txn_charge(x, klen, 0, cost, ext);
	if (err)
		return err;
	if (x->nreads == x->readcap && reads_grow(x))
		goto nomem;
	r = &x->reads[x->nreads];
	r->key = tdbo_memdup(key, klen);
	if (!r->key)
		goto nomem;
	r->klen = (uint32_t)klen;
	r->version = version;
	r->t = t;
	tdbo_ref_get(&t->refs);
	x->rslot[read_slot(x, t, key, klen)] = ++x->nreads;
	x->bytes += klen;
	tdb_fetch_add(&x->o->txn_bytes, (uint64_t)klen);
	x->charged += cost;
	return 0;
nomem:
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, cost);
	ext->msg = NULL;
	return -ENOMEM;
}

/* --- range reads ---------------------------------------------------------- */

#define SCAN_COST(n) ((uint64_t)(n) + sizeof(struct tdbo_txn_scan) + \
		      2 * sizeof(void *) + 32)

void tdbo_txn_scan_put(struct tdbo_txn_scan *ts)
{
	if (!ts)
		return;
	ts->running = false;    /* the dump's, or x's last look */
	if (!tdbo_ref_put(&ts->refs))
		return;
	tdbo_table_put(ts->t);
	tdbp_free(ts);
}

/* Would a scan of t in range r (NULL: all) with this prefix read key? */
static bool scan_covers(const struct tdbe_range *r, const void *prefix,
			size_t plen, const void *key, size_t klen)
{
	if (plen && (klen < plen || memcmp(key, prefix, plen)))
		return false;
	return !r || tdbo_range_has(r, key, klen);
}

int tdbo_txn_scan_new(struct tdbo_txn *x, struct tdbo_table *t,
		      const struct tdbe_range *r, const void *prefix,
		      size_t plen, const void *start, size_t slen,
		      struct tdbo_txn_scan **out,
		      struct tdb_proto_extack *ext)
{
	size_t flen = r && r->from ? r->from_len : 0;
	size_t tlen = r && r->to ? r->to_len : 0;
	size_t extra = flen + tlen + plen + slen + TDB_KEY_MAX;
	uint64_t cost = SCAN_COST(extra);
	struct tdbo_txn_scan *ts, **v;
	unsigned char *p;
	uint32_t i;
	int err;

	for (i = 0; i < x->nops; i++) {
		const struct tdbo_txn_op *op = &x->ops[i];

		if (op->t != t || !scan_covers(r, prefix, plen, op->key,
					       op->klen))
			continue;
		x->why[0] = '\0';
		tdbo_text_add(x->why, "this transaction already changed a key "
			      "the SCAN would read (table ");
		tdbo_text_add(x->why, t->name);
		tdbo_text_add(x->why, ", key ");
		tdbo_text_key(x->why, op->key, op->klen);
		tdbo_text_add(x->why, "); in a transaction SCAN reads the "
			      "table as committed, without the transaction's "
			      "own changes: scan before writing");
		ext->msg = x->why;
		return -EOPNOTSUPP;
	}
	err = txn_charge(x, extra - TDB_KEY_MAX, 0, cost, ext);
	if (err)
		return err;
	if (x->nscans == x->scancap) {
		uint32_t cap = x->scancap ? x->scancap * 2 : 4;

		v = tdbo_alloc_array(cap, sizeof(*v));
		if (!v)
			goto nomem;
		if (x->nscans)
			memcpy(v, x->scans, x->nscans * sizeof(*v));
		tdbp_free(x->scans);
		x->scans = v;
		x->scancap = cap;
	}
	ts = tdbp_alloc(sizeof(*ts) + extra);
	if (!ts)
		goto nomem;
	p = (unsigned char *)(ts + 1);
	ts->last = p;
	p += TDB_KEY_MAX;
	if (r) {
		ts->ranged = true;
		ts->range = *r;
		if (flen) {
			memcpy(p, r->from, flen);
			ts->range.from = p;
			p += flen;
		}
		if (tlen) {
			memcpy(p, r->to, tlen);
			ts->range.to = p;
			p += tlen;
		}
	}
	if (plen) {
		memcpy(p, prefix, plen);
		ts->prefix = p;
		ts->plen = (uint32_t)plen;
		p += plen;
	}
	if (slen) {
		memcpy(p, start, slen);
		ts->start = p;
		ts->start_len = (uint32_t)slen;
	}
	ts->seed = tdbp_random_u64();
	ts->x = x;
	ts->t = t;
	tdbo_ref_get(&t->refs);
	ts->running = true;
	tdbo_ref_init(&ts->refs, 2);    /* x's and the dump's */
	x->scans[x->nscans++] = ts;
	x->bytes += extra - TDB_KEY_MAX;
	tdb_fetch_add(&x->o->txn_bytes, (uint64_t)(extra - TDB_KEY_MAX));
	x->charged += cost;
	*out = ts;
	return 0;
nomem:
	tdbo_quota_uncharge(x->o, x->uid, TDBO_Q_TXN_BYTES, cost);
	ext->msg = NULL;
	return -ENOMEM;
}

int tdbo_txn_scan_room(struct tdbo_txn_scan *ts, struct tdb_proto_extack *ext)
{
	struct tdbo_txn *x = ts->x;

	if (x && (uint64_t)x->nops + x->nreads + x->nscans + x->nscanned >=
	    tdbo_lim(x->o, max_txn_ops)) {
		ext->msg = "transaction has max-txn-ops changes and reads "
			   "already (each record a SCAN of it sends is a "
			   "read)";
		return -E2BIG;
	}
	return 0;
}

static uint64_t scan_hash(const struct tdbo_txn_scan *ts, const void *key,
			  size_t klen, uint64_t version)
{
	return tdbp_hash64(key, klen, ts->seed ^
			   (version * 0x9e3779b97f4a7c15ull));
}

void tdbo_txn_scan_note(struct tdbo_txn_scan *ts, const void *key,
			size_t klen, uint64_t version)
{
	ts->n++;
	ts->sum += scan_hash(ts, key, klen, version);
	memcpy(ts->last, key, klen);
	ts->last_len = (uint32_t)klen;
	if (ts->x)
		ts->x->nscanned++;
}

/* Under t's lock: walk ts's span again; 0 if it holds what was sent,
 * else -ESTALE (or the walk's error) with the text in x->why. */
static int scan_validate(struct tdbo_txn *x, struct tdbo_txn_scan *ts,
			 struct tdb_proto_extack *ext)
{
	const void *k, *v;
	size_t kl, vl;
	uint64_t ver, dl, n = 0, sum = 0;
	struct tdbe_cursor *c;
	int err = 0, rc;

	x->why[0] = '\0';
	if (ts->t->dropped) {
		tdbo_text_add(x->why, "a table this transaction read (SCAN) "
			      "was dropped: ");
		tdbo_text_add(x->why, ts->t->name);
		ext->msg = x->why;
		return -ESTALE;
	}
	if (!ts->n && !ts->complete)
		return 0;               /* it sent nothing: nothing read */
	c = tdbe_cursor_open(ts->t->t, &err);
	if (!c)
		return err ? err : -ENOMEM;
	if (ts->ranged)
		err = tdbe_cursor_range(c, &ts->range);
	if (!err && ts->start_len)
		err = tdbe_cursor_seek(c, ts->start, ts->start_len);
	while (!err) {
		rc = tdbe_cursor_next_ex(c, &k, &kl, &v, &vl, &ver, &dl);
		if (rc <= 0) {
			err = rc;
			break;
		}
		if (!ts->complete && tdbe_cursor_order(c, k, kl, ts->last,
						       ts->last_len) > 0)
			break;
		if (ts->plen && (kl < ts->plen ||
				 memcmp(k, ts->prefix, ts->plen)))
			continue;
		if (++n > ts->n)
			break;          /* more than was sent: enough */
		sum += scan_hash(ts, k, kl, ver);
	}
	tdbe_cursor_close(c);
	if (err) {
		ext->msg = tdbe_strerror(err);
		return err;
	}
	if (n == ts->n && sum == ts->sum)
		return 0;
	tdbo_text_add(x->why, "a range this transaction read (SCAN) was "
		      "changed by another client (a key added, changed, "
		      "deleted or expired in it): table ");
	tdbo_text_add(x->why, ts->t->name);
	if (ts->ranged && ts->range.from) {
		tdbo_text_add(x->why, ", from ");
		tdbo_text_key(x->why, ts->range.from, ts->range.from_len);
	}
	if (ts->ranged && ts->range.to) {
		tdbo_text_add(x->why, ", to ");
		tdbo_text_key(x->why, ts->range.to, ts->range.to_len);
	}
	ext->msg = x->why;
	return -ESTALE;
}

/* The latest op of x on this key of t, or NULL. */
static const struct tdbo_txn_op *last_op(const struct tdbo_txn *x,
					 const struct tdbo_table *t,
					 const void *key, size_t klen)
{
	uint32_t i = x->nops;

	while (i--) {
		const struct tdbo_txn_op *op = &x->ops[i];

		if (op->t == t && op->klen == klen &&
		    !memcmp(op->key, key, klen))
			return op;
	}
	return NULL;
}

int tdbo_txn_incr(struct tdbo_client *c, struct tdbo_txn *x,
		  struct tdbo_table *t, const struct tdb_proto_msg *m,
		  int64_t delta, int64_t *sum, struct tdb_proto_extack *ext)
{
	struct tdbo_change ch = { .key = m->key, .klen = m->key_len };
	const struct tdbo_txn_op *prev;
	char text[TDBO_INT_TEXT];
	const void *v = NULL;
	size_t vl = 0, need = 0;
	uint64_t ver = 0;
	long n;
	int err;

	(void)c;
	err = tdbo_txn_lookup(x, t, m->key, m->key_len, &v, &vl);
	/* INCR keeps the key's deadline: the one x gave it, or the
	 * table's (the read set holds the version, so it is the same at
	 * commit) */
	prev = err == 1 ? last_op(x, t, m->key, m->key_len) : NULL;
	if (prev) {
		ch.ttl = prev->ttl;
		ch.deadline = prev->deadline;
		ch.has_deadline = prev->has_deadline;
	}
	if (err < 0) {          /* not changed by x: read the table */
		n = tdbe_get_ex(t->t, m->key, m->key_len, text,
				sizeof(text), &need, &ver, &ch.deadline);
		ch.has_deadline = n >= 0;      /* none stays none */
		if (n < 0 && n != -ENOENT && n != -ENOBUFS)
			return (int)n;
		err = tdbo_txn_read_add(x, t, m->key, m->key_len,
					n == -ENOENT ? 0 : ver ? ver : 1, ext);
		if (err)
			return err;
		if (n == -ENOBUFS) {
			ext->msg = "the value is not a signed 64-bit decimal "
				   "integer (too long)";
			return -EDOM;
		}
		v = text;
		vl = n < 0 ? 0 : (size_t)n;
		err = n >= 0;
	}
	err = tdbo_int_add(v, vl, err == 1, delta, text, sum, &ext->msg);
	if (err < 0)
		return err;
	ch.val = text;
	ch.vlen = (size_t)err;
	return tdbo_txn_add(x, t, &ch, 0, ext);
}

/* --- commit --------------------------------------------------------------- */

/* Under t->wlock: nobody else can change the key meanwhile. */
static int save_old(struct tdbo_txn_op *op, struct undo *u)
{
	size_t need = 0;
	long n = tdbe_get_ex(op->t->t, op->key, op->klen, NULL, 0, &need,
			     &u->version, &u->deadline);

	u->had = false;
	u->old = NULL;
	if (n == -ENOENT)
		return 0;
	if (n == 0) {
		u->had = true;
		u->olen = 0;
		return 0;
	}
	if (n != -ENOBUFS)
		return n < 0 ? (int)n : -EIO;
	u->old = tdbp_alloc(need ? need : 1);
	if (!u->old)
		return -ENOMEM;
	n = tdbe_get(op->t->t, op->key, op->klen, u->old, need, &need);
	if (n < 0) {
		tdbp_free(u->old);
		u->old = NULL;
		return (int)n;
	}
	u->had = true;
	u->olen = (size_t)n;
	return 0;
}

static void undo_one(struct tdbo_txn_op *op, struct undo *u)
{
	int err;

	if (u->had)
		err = tdbe_put_ex(op->t->t, op->key, op->klen, u->old,
				  u->olen, 0, u->version, u->deadline, NULL);
	else
		err = tdbe_del(op->t->t, op->key, op->klen, NULL);
	if (err && !(err == -ENOENT && !u->had))
		tdbp_log_rl(&op->t->o->rl[TDBO_RL_TXNS], TDBP_LOG_ERR,
			    "table %s: undoing a failed commit: %s; the key "
			    "may keep the transaction's value",
			    op->t->name, tdbe_strerror(err));
}

/* The change op makes; its conditions were checked by precheck(). */
static void op_change(const struct tdbo_txn *x, const struct tdbo_txn_op *op,
		      struct tdbo_change *ch)
{
	ch->del = op->del;
	ch->noov = false;
	ch->ifpresent = false;
	ch->ifver = 0;
	ch->quiet = true;               /* deleting nothing is ok */
	ch->key = op->key;
	ch->klen = op->klen;
	ch->val = op->key + op->klen;
	ch->vlen = op->del ? 0 : op->vlen;
	ch->version = x->version;
	ch->ttl = op->ttl;
	ch->deadline = op->deadline;
	ch->has_deadline = op->has_deadline;
	ch->replay = false;
	ch->expiry = false;
	ch->evict = false;
}

/* Under the tables' locks: apply every op or none; the error of the one
 * that failed. */
static int apply_all(struct tdbo_txn *x, struct undo *u,
		     struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	struct tdbo_change ch;
	uint32_t i, done = 0;
	int err = 0;

	for (i = 0; i < x->nops && !err; i++) {
		if (x->ops[i].t->dropped) {
			ee.msg = "a table of the transaction was dropped";
			err = -ENOENT;
			break;
		}
		op_change(x, &x->ops[i], &ch);
		/* the op's deadline now, for the log record too */
		if (!ch.del) {
			tdbo_change_deadline(x->ops[i].t, &ch);
			x->ops[i].deadline = ch.deadline;
			x->ops[i].has_deadline = true;
		}
		err = save_old(&x->ops[i], &u[i]);
		if (!err)
			err = tdbo_apply(x->ops[i].t, &ch, &ee);
		if (!err)
			done = i + 1;
	}
	/* a bounded table that may not evict: past its bound, no */
	for (i = 0; !err && i < x->nops; i++)
		if (!x->ops[i].del)
			err = tdbo_bound_check_now(x->ops[i].t, &ee.msg,
						   x->why);
	if (!err)
		return 0;
	ext->msg = ee.msg ? ee.msg : "a change of the transaction failed; "
		   "none was applied";
	if (err == -EEXIST)
		ext->msg = "key exists (no-overwrite put in the transaction); "
			   "none was applied";
	while (done--)
		undo_one(&x->ops[done], &u[done]);
	return err;
}

/* Under the tables' locks: the seqcount of each table of x odd (begin)
 * or even again, once per table however many ops it has.  Only the
 * holder of a table's lock writes its count, so an odd count here is
 * this commit's. */
static void seq_mark(struct tdbo_txn *x, bool begin)
{
	uint32_t i;

	for (i = 0; i < x->nops; i++) {
		struct tdbo_table *t = x->ops[i].t;

		if ((tdb_load_relaxed(&t->seq) & 1) == begin)
			continue;
		if (begin)
			tdbo_seq_write_begin(t);
		else
			tdbo_seq_write_end(t);
	}
}

/* Under the tables' locks: every key of the read set still at the
 * version it was read at (txn.c, "Validation"); else -ESTALE naming
 * the first that moved. */
static int validate(struct tdbo_txn *x, struct tdb_proto_extack *ext)
{
	uint32_t i;

	for (i = 0; i < x->nreads; i++) {
		struct tdbo_txn_read *r = &x->reads[i];
		uint64_t now;

		if (r->t->dropped) {
			x->why[0] = '\0';
			tdbo_text_add(x->why, "a table this transaction read "
				      "was dropped: ");
			tdbo_text_add(x->why, r->t->name);
			ext->msg = x->why;
			return -ESTALE;
		}
		now = tdbo_key_version(r->t, r->key, r->klen);
		if (now == r->version)
			continue;
		x->why[0] = '\0';
		if (!now && tdbe_expired(r->t->t, r->key, r->klen)) {
			/* nobody changed it: its deadline passed */
			tdbo_text_add(x->why, "a key this transaction read has "
				      "expired since: table ");
			tdbo_text_add(x->why, r->t->name);
			tdbo_text_add(x->why, ", key ");
			tdbo_text_key(x->why, r->key, r->klen);
			ext->msg = x->why;
			return -ESTALE;
		}
		tdbo_text_add(x->why, "a key this transaction read was changed "
			      "by another client: table ");
		tdbo_text_add(x->why, r->t->name);
		tdbo_text_add(x->why, ", key ");
		tdbo_text_key(x->why, r->key, r->klen);
		tdbo_text_add(x->why, r->version ? (now ? " (changed)" :
				" (deleted or expired)") : " (created)");
		ext->msg = x->why;
		return -ESTALE;
	}
	for (i = 0; i < x->nscans; i++) {
		int err = scan_validate(x, x->scans[i], ext);

		if (err)
			return err;
	}
	return 0;
}

/*
 * Under the tables' locks, before anything is logged (change.c, step 1):
 * what is sure to fail -- a read key that changed, a table dropped
 * since, a condition of a change (if-absent, if-present, if-version)
 * that does not hold against the table as x's earlier changes leave
 * it -- fails the commit here, so its record never reaches the log.
 * What can still fail after the log (the engine out of room) has its
 * record taken back before anyone is answered; only a crash in between
 * leaves it, and its client, never answered, cannot tell that from a
 * commit that went through.
 */
static int precheck(struct tdbo_txn *x, struct tdb_proto_extack *ext)
{
	uint32_t i, j;
	int err = validate(x, ext);

	for (i = 0; !err && i < x->nops; i++) {
		struct tdbo_txn_op *op = &x->ops[i];
		struct tdbo_change ch = { 0 };
		bool earlier = false;
		uint64_t cur;

		if (op->t->dropped) {
			ext->msg = "a table of the transaction was dropped";
			return -ENOENT;
		}
		ch.noov = !op->del && (op->flags & TDB_PUT_NOOVERWRITE);
		ch.ifpresent = !op->del && (op->flags & TDB_PUT_IF_PRESENT);
		ch.ifver = op->ifver;
		if (!ch.noov && !ch.ifpresent && !ch.ifver)
			continue;
		cur = tdbo_key_version(op->t, op->key, op->klen);
		for (j = i; j-- > 0;) {         /* the latest earlier op */
			const struct tdbo_txn_op *e = &x->ops[j];

			if (e->t == op->t && e->klen == op->klen &&
			    !memcmp(e->key, op->key, op->klen)) {
				earlier = true;
				/* present, with no version yet (matches
				 * no IF_VERSION), or absent */
				cur = e->del ? 0 : TDBO_VERSION_UNSET;
				break;
			}
		}
		err = tdbo_cond_check(&ch, cur, x->why);
		if (err) {
			if (earlier)
				tdbo_text_add(x->why, " (as this transaction "
					      "left it)");
			tdbo_text_add(x->why, "; none was applied");
			ext->msg = x->why;
		}
	}
	return err;
}

/* The size of x's log record (one record for the whole transaction). */
static void log_size(const struct tdbo_txn *x, struct tdbo_log_size *sz)
{
	uint32_t i;

	for (i = 0; i < x->nops; i++)
		tdbo_log_size_add(sz, x->ops[i].t, x->ops[i].klen,
				  x->ops[i].del ? 0 : x->ops[i].vlen);
}

/* Under the tables' locks, after every op applied: the whole
 * transaction as one log record (change.c, step 3). */
static uint64_t log_all(struct tdbo_owner *o, struct tdbo_txn *x,
			const struct tdbo_log_size *sz)
{
	uint32_t i;

	o->hooks.log_begin(o->hooks.arg, x->version);
	for (i = 0; i < x->nops; i++) {
		struct tdbo_txn_op *op = &x->ops[i];

		o->hooks.log_op(o->hooks.arg, op->t, op->del, op->key,
				op->klen, op->key + op->klen,
				op->del ? 0 : op->vlen,
				op->del ? 0 : op->deadline);
	}
	return o->hooks.log_commit(o->hooks.arg, sz);
}

/* Eviction after the commit never takes a key x wrote. */
static bool txn_wrote(void *arg, const struct tdbo_table *t, const void *key,
		      size_t klen)
{
	return last_op(arg, t, key, klen) != NULL;
}

/* The distinct tables of x, in id order (the order their locks are
 * taken in, so two commits cannot wait for each other); *n of them, in
 * a new array, or NULL. */
static struct tdbo_table **txn_tables(const struct tdbo_txn *x,
				      unsigned int *n)
{
	uint32_t all = x->nops + x->nreads + x->nscans;
	struct tdbo_table **v = tdbo_alloc_array(all ? all : 1, sizeof(*v));
	uint32_t i;
	unsigned int k = 0, j;

	if (!v)
		return NULL;
	for (i = 0; i < all; i++) {
		struct tdbo_table *t = i < x->nops ? x->ops[i].t :
				       i < x->nops + x->nreads ?
				       x->reads[i - x->nops].t :
				       x->scans[i - x->nops - x->nreads]->t;

		for (j = 0; j < k && v[j] != t; j++)
			;
		if (j < k)
			continue;
		/* insertion sort by id: transactions touch few tables */
		for (j = k++; j > 0 && v[j - 1]->id > t->id; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
	*n = k;
	return v;
}

/* Nor past the data bound of the owner of a table it puts into (ops
 * from the first put, i; each table once in a row of its ops). */
static int data_check(struct tdbo_txn *x, uint32_t i, const char **msg)
{
	struct tdbo_table *last = NULL;
	int err = 0;

	for (; !err && i < x->nops; i++) {
		if (x->ops[i].del || x->ops[i].t == last)
			continue;
		last = x->ops[i].t;
		err = tdbo_table_data_check(x->o, x->uid, last, msg);
	}
	return err;
}

int tdbo_txn_commit(struct tdbo_txn *x, uint64_t *lsn,
		    struct tdb_proto_extack *ext)
{
	struct tdbo_owner *o = x->o;
	struct undo *u = tdbo_alloc_array(x->nops ? x->nops : 1, sizeof(*u));
	struct tdbo_table **tabs = NULL;
	bool log = x->nops && o->hooks.log_reserve;
	struct tdbo_log_size sz = { 0 };
	struct tdbo_change ch;
	unsigned int ntabs = 0, k;
	uint32_t i;
	int err = 0;

	*lsn = 0;
	if (u)
		tabs = txn_tables(x, &ntabs);
	if (!u || !tabs) {
		tdbp_free(u);
		return -ENOMEM;
	}
	if (log)
		log_size(x, &sz);
	for (i = 0; i < x->nops && x->ops[i].del; i++)
		;
	/* a commit with a put adds data: past the home's memory limit, no */
	if (i < x->nops && o->hooks.mem_check)
		err = o->hooks.mem_check(o->hooks.arg, &ext->msg);
	if (!err && i < x->nops)
		err = data_check(x, i, &ext->msg);
	for (k = 0; k < ntabs; k++)
		tdbp_mutex_lock(tabs[k]->wlock);
	if (!err)
		err = precheck(x, ext);
	if (!err && log)
		err = tdbo_log_reserve(o, &sz, &ext->msg);
	if (!err && x->nops) {
		x->version = tdbo_version_take(o, 0);
		seq_mark(x, true);                              /* odd */
		err = apply_all(x, u, ext);
		seq_mark(x, false);                             /* even */
		if (err && log)
			tdbo_log_cancel(o, &sz);
		else if (log)
			*lsn = log_all(o, x, &sz);
	}
	for (i = 0; !err && i < x->nops; i++) {
		op_change(x, &x->ops[i], &ch);
		tdbo_applied(x->ops[i].t, &ch);
	}
	for (k = 0; !err && k < ntabs; k++) {
		struct tdbo_evict_keep keep = { txn_wrote, x };

		tdbo_evict(tabs[k], &keep, x->why);
	}
	while (ntabs--) {
		tdbo_feed_flush(tabs[ntabs]);
		tdbp_mutex_unlock(tabs[ntabs]->wlock);
	}
	for (i = 0; i < x->nops; i++)
		tdbp_free(u[i].old);
	tdbp_free(u);
	tdbp_free(tabs);
	return err;
}

void tdbo_txn_keep_msg(const struct tdbo_txn *x,
		       struct tdb_proto_extack *ext, char *keep)
{
	if (ext->msg != x->why)
		return;
	memcpy(keep, x->why, TDBO_TEXT);
	ext->msg = keep;
}

uint64_t tdbo_txn_bytes(struct tdbo_owner *o)
{
	return tdb_load_relaxed(&o->txn_bytes);
}

/* o->tables is in id order and changes only under o->wlock, held here
 * from the first lock to the last unlock. */
void tdbo_write_lock(struct tdbo_owner *o)
{
	struct tdbo_table *t;

	tdbp_mutex_lock(o->wlock);
	tdbo_list_for_each(t, &o->tables, lnode)
		tdbp_mutex_lock(t->wlock);
}

void tdbo_write_unlock(struct tdbo_owner *o)
{
	struct tdbo_table *t;

	tdbo_list_for_each(t, &o->tables, lnode)
		tdbp_mutex_unlock(t->wlock);
	tdbp_mutex_unlock(o->wlock);
}

void tdbo_table_lock(struct tdbo_table *t)
{
	tdbp_mutex_lock(t->wlock);
}

void tdbo_table_unlock(struct tdbo_table *t)
{
	tdbp_mutex_unlock(t->wlock);
}

/* --- commands ------------------------------------------------------------- */

static int txn_begin(struct tdbo_client *c, const struct tdb_proto_msg *m,
		     struct tdbo_sink *out, struct tdb_proto_extack *ext)
{
	struct tdb_proto_msg a;
	struct tdbo_txn *x;
	int err;

	if (c->ntxns >= tdbo_lim(c->o, max_txns)) {
		ext->msg = "too many open transactions on this connection "
			   "(max-txns)";
		return -EBUSY;
	}
	x = txn_new(c);
	if (!x)
		return -ENOMEM;
	tdbo_reply_init(m, &a, TDB_PROTO_BIT(TDB_A_TXN));
	a.txn = x->id;
	err = tdbo_reply(out, &a, ext);
	if (err) {
		tdbo_txn_free(x);
		return err;
	}
	tdbo_list_add(&x->node, &c->txns);
	c->ntxns++;
	tdbo_inc(&c->o->txns);
	return 0;
}

/* Commit it here, or hand it to the home if it is big. */
static int commit(struct tdbo_client *c, struct tdbo_txn *x,
		  struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_owner *o = c->o;
	uint32_t dops = tdbo_lim(o, defer_ops);
	uint64_t dbytes = tdbo_lim(o, defer_bytes);
	int err;

	if ((dops && x->nops > dops) || (dbytes && x->bytes > dbytes)) {
		res->txn = x;
		return 0;
	}
	err = tdbo_txn_commit(x, &res->lsn, ext);
	tdbo_txn_keep_msg(x, ext, c->why);
	tdbo_txn_free(x);
	return err;
}

int tdbo_txn_cmd(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdbo_sink *out, struct tdb_proto_extack *ext,
		 struct tdbo_out *res)
{
	struct tdbo_txn *x;
	int err = 0;

	if (m->cmd == TDB_CMD_TXN_BEGIN)
		return txn_begin(c, m, out, ext);
	x = tdbo_txn_find(c, m, ext, &err);
	if (!x)
		return err;
	if (m->cmd == TDB_CMD_TXN_COMMIT) {
		uint32_t i;

		for (i = 0; i < x->nscans; i++) {
			if (!x->scans[i]->running)
				continue;
			ext->msg = "a SCAN of this transaction is still "
				   "sending: commit after its NLMSG_DONE (the "
				   "transaction stays open)";
			return -EBUSY;
		}
	}
	tdbo_list_del(&x->node);
	c->ntxns--;
	tdbo_dec(&c->o->txns);
	if (m->cmd == TDB_CMD_TXN_COMMIT)
		return commit(c, x, ext, res);
	tdbo_txn_free(x);
	return err;
}
