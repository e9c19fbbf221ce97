// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_order.c - ordered tables in the owner (src/owner: registry.c,
 * dump.c, snap.c, txn.c), in user space against tdbo_exec() and
 * tdbo_dump_run() (docs/PROTOCOL.md, "Ordered tables and range scans"):
 *
 *  - TABLE_CREATE with TABLE_FLAGS makes an ordered table, STAT says so
 *    (and says nothing for a hash table); unknown table flags are
 *    refused by the codec;
 *  - range SCANs against a sorted reference: FROM and TO present or not,
 *    every bound kind, both directions, with a PREFIX or not, read in
 *    pages of LIMIT records resumed with the CURSOR of the last; a plain
 *    SCAN walks the whole table in key order;
 *  - resuming while another client inserts and deletes, between pages
 *    and inside a page's dump: every key present throughout comes out
 *    exactly once, in order;
 *  - refusals: a range on a hash table, FROM after TO, a cursor of
 *    another table, of other flags, of another range, not a cursor;
 *  - a snapshot scan of an ordered table comes out in the walk's order
 *    and is the table as of its start, while keys ahead of the walk are
 *    deleted, changed and inserted (forward, reverse, a range);
 *  - a SCAN in a transaction is checked at commit: a phantom inserted in
 *    the range read, a key of it deleted or changed fail the commit
 *    with -ESTALE; a change outside it (or past the last key a LIMITed
 *    scan sent) does not; a scan of a range the transaction changed is
 *    refused; a commit while its scan still sends is -EBUSY; the
 *    records sent count against max-txn-ops.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
#include "core.h"

#include "owner_harness.h"

#define KMAX TDB_KEY_MAX
#define MAXGOT 512

/* --- a SCAN request, and what it got ------------------------------------- */

struct scanreq {
	const char *table;
	const void *from, *to, *prefix;
	size_t flen, tlen, plen;
	bool has_prefix;
	uint32_t flags;                 /* SCAN_FLAGS (sent if not 0) */
	uint32_t limit;                 /* 0: none */
	const void *cursor;
	size_t clen;
	uint64_t txn;
};

struct got {
	int err;                        /* tdbo_exec's, or the dump's end */
	char msg[256];
	unsigned int n;
	unsigned char key[MAXGOT][KMAX];
	size_t klen[MAXGOT];
	char val[MAXGOT][16];
	unsigned char cursor[TDB_CURSOR_MAX];
	size_t clen;                    /* 0: no CURSOR */
};

struct osink {
	struct tdbo_sink s;
	unsigned char buf[16384] __attribute__((aligned(8)));
	struct got *g;
	int room;                       /* messages left; < 0: any */
};

static void *o_reserve(struct tdbo_sink *s, size_t len)
{
	struct osink *k = (struct osink *)s;

	if (k->room == 0 || len > sizeof(k->buf))
		return NULL;
	return k->buf;
}

static void o_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct osink *k = (struct osink *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct got *g = k->g;

	if (k->room > 0)
		k->room--;
	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	assert_int_equal(m.cmd, TDB_CMD_SCAN);
	if (TDB_PROTO_HAS(&m, TDB_A_KEY)) {
		assert_true(g->n < MAXGOT);
		assert_true(m.key_len <= KMAX);
		assert_true(m.value_len < 16);
		memcpy(g->key[g->n], m.key, m.key_len);
		g->klen[g->n] = m.key_len;
		memcpy(g->val[g->n], m.value, m.value_len);
		g->val[g->n][m.value_len] = 0;
		g->n++;
	}
	if (TDB_PROTO_HAS(&m, TDB_A_CURSOR)) {
		memcpy(g->cursor, m.cursor, m.cursor_len);
		g->clen = m.cursor_len;
	}
}

static void sink_init(struct osink *k, struct got *g, int room)
{
	memset(&k->s, 0, sizeof(k->s));
	k->s.reserve = o_reserve;
	k->s.commit = o_commit;
	k->s.in_read_section = true;
	k->g = g;
	k->room = room;
}

/* Build r, parse it back and start it: 0 and *dump, or the error (in
 * g->err and g->msg). */
static int scan_start(struct tdbo_client *c, const struct scanreq *r,
		      struct got *g, struct tdbo_dump **dump)
{
	static unsigned char buf[4 * TDB_KEY_MAX + 1024]
		__attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg in = { .cmd = TDB_CMD_SCAN }, m;
	struct tdbo_out res;
	struct osink k;
	long n;

	memset(g, 0, sizeof(*g));
	in.attrs = TDB_PROTO_BIT(TDB_A_TABLE);
	in.table = r->table;
	in.table_len = (uint32_t)strlen(r->table);
	if (r->from) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_FROM);
		in.from = r->from;
		in.from_len = (uint32_t)r->flen;
	}
	if (r->to) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_TO);
		in.to = r->to;
		in.to_len = (uint32_t)r->tlen;
	}
	if (r->has_prefix) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_PREFIX);
		in.prefix = r->prefix;
		in.prefix_len = (uint32_t)r->plen;
	}
	if (r->flags) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		in.scan_flags = r->flags;
	}
	if (r->limit) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_LIMIT);
		in.limit = r->limit;
	}
	if (r->cursor) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
		in.cursor = r->cursor;
		in.cursor_len = (uint32_t)r->clen;
	}
	if (r->txn) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		in.txn = r->txn;
	}
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &in, &ext);
	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	sink_init(&k, g, 0);
	*dump = NULL;
	g->err = tdbo_exec(c, &m, &k.s, &ext, &res);
	if (g->err) {
		snprintf(g->msg, sizeof(g->msg), "%s", ext.msg ? ext.msg : "");
		assert_null(res.dump);
		return g->err;
	}
	assert_non_null(res.dump);
	*dump = res.dump;
	return 0;
}

/* Run the dump with room for `room` parts (< 0: any): 1 more to come,
 * 0 done (the dump freed), or its error (freed, in g->err, g->msg). */
static int scan_step(struct tdbo_dump *d, struct got *g, int room)
{
	struct tdb_proto_extack ext = { NULL };
	struct osink k;
	int rc;

	sink_init(&k, g, room);
	do {
		rc = tdbo_dump_run(d, &k.s, &ext);
	} while (rc == 1 && k.room != 0);
	if (rc <= 0) {
		g->err = rc;
		if (rc)
			snprintf(g->msg, sizeof(g->msg), "%s",
				 ext.msg ? ext.msg : "");
		tdbo_dump_free(d);
	}
	return rc;
}

/* The whole SCAN: g->err is its error (from the start or the end). */
static int scan(struct tdbo_client *c, const struct scanreq *r,
		struct got *g)
{
	struct tdbo_dump *d;

	if (scan_start(c, r, g, &d))
		return g->err;
	while (scan_step(d, g, -1) == 1)
		;
	return g->err;
}

/* --- set up -------------------------------------------------------------- */

static void create(struct tdbo_client *c, const char *name, bool ordered)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, name, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_MODE);
	m.mode = 0666;
	if (ordered) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
		m.table_flags = TDB_TABLE_F_ORDERED;
	}
	assert_int_equal(run(c, &m).err, 0);
}

static struct tdbo_limits olim;

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_cred user = { 1000, 1000, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	int err;

	assert_non_null(w);
	olim = lim;
	olim.max_txn_ops = 256;
	w->o = tdbo_owner_new(&olim, &hooks, &err);
	assert_non_null(w->o);
	w->c1 = tdbo_client_new(w->o, &root, false, NULL, NULL, &err);
	w->c2 = tdbo_client_new(w->o, &user, false, NULL, NULL, &err);
	assert_non_null(w->c1);
	assert_non_null(w->c2);
	create(w->c1, "o", true);
	create(w->c1, "o2", true);
	create(w->c1, "h", false);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tdbo_client_free(w->c1);
	tdbo_client_free(w->c2);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

/* The harness's run() for requests of up to 4 KiB keys (its buffer is
 * ROOM bytes): only the error. */
static int run_big(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	static unsigned char buf[2 * TDB_KEY_MAX] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out res;
	struct ans a;
	struct sink k;
	long n;

	memset(&a, 0, sizeof(a));
	memset(&k, 0, sizeof(k));
	k.s.reserve = s_reserve;
	k.s.commit = s_commit;
	k.s.in_read_section = true;
	k.a = &a;
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, in, &ext);
	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	a.err = tdbo_exec(c, &m, &k.s, &ext, &res);
	assert_null(res.dump);
	return a.err;
}

/* A put or delete of a binary key (the harness's take strings). */
static int bput(struct tdbo_client *c, const char *t, const void *k,
		size_t kl, const char *v)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, t, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE);
	m.key = k;
	m.key_len = (uint32_t)kl;
	m.value = v;
	m.value_len = (uint32_t)strlen(v);
	return run_big(c, &m);
}

static int bdel(struct tdbo_client *c, const char *t, const void *k,
		size_t kl)
{
	struct tdb_proto_msg m = req(TDB_CMD_DEL, t, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
	m.key = k;
	m.key_len = (uint32_t)kl;
	return run_big(c, &m);
}

/* LMDB's order, the test's own. */
static int kcmp(const void *a, size_t al, const void *b, size_t bl)
{
	size_t n = al < bl ? al : bl;
	int c = n ? memcmp(a, b, n) : 0;

	return c ? c : (al > bl) - (al < bl);
}

static uint64_t rnd_state = 0x243f6a8885a308d3ull;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

/* --- create and stat ----------------------------------------------------- */

static void create_and_stat(void **state)
{
	struct world *w = *state;
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_STAT, "o", NULL, 0);
	struct tdb_proto_extack ext = { NULL };
	unsigned char buf[256] __attribute__((aligned(8)));
	struct ans a;
	long n;

	a = run(w->c1, &m);
	assert_int_equal(a.err, 0);
	assert_true(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_TABLE_FLAGS));
	assert_int_equal(a.stat.table_flags, TDB_TABLE_F_ORDERED);
	m = req(TDB_CMD_TABLE_STAT, "h", NULL, 0);
	a = run(w->c1, &m);
	assert_int_equal(a.err, 0);
	assert_false(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_TABLE_FLAGS));
	/* unknown table flags: the codec refuses them both ways */
	m = req(TDB_CMD_TABLE_CREATE, "x", NULL, 0);
	m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
	m.table_flags = 2;
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &m, &ext);
	assert_int_equal(n, -EOPNOTSUPP);
	assert_non_null(strstr(ext.msg, "unknown table flags"));
	/* a durable home's restore keeps the kind */
	{
		struct tdbo_table *t = NULL;
		const char *why = NULL;

		assert_int_equal(tdbo_table_restore_flags(w->o, "r", 0, 0,
				 TDB_TABLE_F_ORDERED, 0, 0, 0644, &t, &why), 0);
		assert_non_null(t);
		assert_int_equal(tdbo_table_flags(t), TDB_TABLE_F_ORDERED);
		assert_true(tdbe_table_ordered(tdbo_table_engine(t)));
		m = req(TDB_CMD_TABLE_STAT, "r", NULL, 0);
		a = run(w->c1, &m);
		assert_int_equal(a.stat.table_flags, TDB_TABLE_F_ORDERED);
		assert_int_equal(tdbo_table_restore(w->o, "r2", 0, 0, 0, 0,
						    0644, &t, &why), 0);
		assert_int_equal(tdbo_table_flags(t), 0);
		assert_false(tdbe_table_ordered(tdbo_table_engine(t)));
	}
	/* TABLE_FLAGS 0: a hash table */
	m.table_flags = 0;
	assert_int_equal(run(w->c1, &m).err, 0);
	m = req(TDB_CMD_TABLE_STAT, "x", NULL, 0);
	a = run(w->c1, &m);
	assert_false(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_TABLE_FLAGS));
}

/* --- ranges against a sorted reference ----------------------------------- */

/* The model: keys over { 0x00, 'a', 'b', 0xff } of 1..3 bytes (so keys
 * that are prefixes of others, 0x00 and 0xff bytes). */
static const unsigned char sym[4] = { 0x00, 'a', 'b', 0xff };

struct mkey {
	unsigned char k[KMAX];
	size_t kl;
	bool in;
	char v[16];
};

#define NMODEL (4 + 16 + 64)
static struct mkey model[NMODEL];       /* sorted by kcmp */

static int mkey_cmp(const void *a, const void *b)
{
	const struct mkey *x = a, *y = b;

	return kcmp(x->k, x->kl, y->k, y->kl);
}

static void model_build(void)
{
	unsigned int i = 0, len, j, c;

	for (len = 1; len <= 3; len++) {
		unsigned int count = 1u << (2 * len);

		for (c = 0; c < count; c++, i++) {
			for (j = 0; j < len; j++)
				model[i].k[j] = sym[(c >> (2 * j)) & 3];
			model[i].kl = len;
			model[i].in = false;
		}
	}
	assert_int_equal(i, NMODEL);
	qsort(model, NMODEL, sizeof(model[0]), mkey_cmp);
}

static bool in_range(const struct mkey *e, const struct scanreq *r)
{
	int c;

	if (r->plen && (e->kl < r->plen || memcmp(e->k, r->prefix, r->plen)))
		return false;
	if (r->from) {
		c = kcmp(e->k, e->kl, r->from, r->flen);
		if (c < 0 || (c == 0 && (r->flags & TDB_SCAN_FROM_EXCL)))
			return false;
	}
	if (r->to) {
		c = kcmp(e->k, e->kl, r->to, r->tlen);
		if (c > 0 || (c == 0 && !(r->flags & TDB_SCAN_TO_INCL)))
			return false;
	}
	return true;
}

/* Read r in pages of r->limit records, each resumed with the cursor of
 * the one before; all the records into *all. */
static void scan_pages(struct tdbo_client *c, struct scanreq r,
		       struct got *all)
{
	static struct got g;
	unsigned char cur[TDB_CURSOR_MAX];

	memset(all, 0, sizeof(*all));
	for (;;) {
		unsigned int i;

		assert_int_equal(scan(c, &r, &g), 0);
		for (i = 0; i < g.n; i++) {
			assert_true(all->n < MAXGOT);
			memcpy(all->key[all->n], g.key[i], g.klen[i]);
			all->klen[all->n] = g.klen[i];
			memcpy(all->val[all->n], g.val[i], 16);
			all->n++;
		}
		if (!g.clen)
			break;
		/* a cursor only in the last part LIMIT allows */
		assert_int_equal(g.n, r.limit);
		memcpy(cur, g.cursor, g.clen);
		r.cursor = cur;
		r.clen = g.clen;
	}
}

static void ranges_model(void **state)
{
	struct world *w = *state;
	static struct got all;
	unsigned int i, j, cases;

	model_build();
	for (i = 0; i < NMODEL; i++) {
		model[i].in = rnd(3) != 0;
		snprintf(model[i].v, sizeof(model[i].v), "v%u", i);
		if (model[i].in)
			assert_int_equal(bput(w->c1, "o", model[i].k,
					      model[i].kl, model[i].v), 0);
	}
	for (cases = 0; cases < 600; cases++) {
		struct scanreq r = { .table = "o" };
		const struct mkey *f = &model[rnd(NMODEL)];
		const struct mkey *t = &model[rnd(NMODEL)];
		const struct mkey *p = &model[rnd(NMODEL)];
		unsigned int want = 0, step;

		if (rnd(4)) {
			r.from = f->k;
			r.flen = f->kl;
		}
		if (rnd(4)) {
			r.to = t->k;
			r.tlen = t->kl;
		}
		if (r.from && r.to && kcmp(f->k, f->kl, t->k, t->kl) > 0) {
			const void *x = r.from;
			size_t xl = r.flen;

			r.from = r.to;
			r.flen = r.tlen;
			r.to = x;
			r.tlen = xl;
		}
		if (r.from && rnd(2))
			r.flags |= TDB_SCAN_FROM_EXCL;
		if (r.to && rnd(2))
			r.flags |= TDB_SCAN_TO_INCL;
		if (rnd(2))
			r.flags |= TDB_SCAN_REVERSE;
		if (!rnd(4)) {
			r.has_prefix = true;
			r.prefix = p->k;
			r.plen = rnd((uint32_t)p->kl + 1);
		}
		r.limit = rnd(3) ? 1 + rnd(7) : 0;
		scan_pages(w->c1, r, &all);
		/* the reference, in the walk's direction */
		for (step = 0; step < NMODEL; step++) {
			j = (r.flags & TDB_SCAN_REVERSE) ? NMODEL - 1 - step :
							    step;
			if (!model[j].in || !in_range(&model[j], &r))
				continue;
			assert_true(want < all.n);
			assert_int_equal(all.klen[want], model[j].kl);
			assert_memory_equal(all.key[want], model[j].k,
					    model[j].kl);
			assert_string_equal(all.val[want], model[j].v);
			want++;
		}
		assert_int_equal(all.n, want);
	}
}

/* A plain SCAN of an ordered table: every key, in key order; a PREFIX
 * alone too. */
static void plain_scan_in_order(void **state)
{
	struct world *w = *state;
	static const char *keys[] = { "b", "a", "ab", "\xff", "aa", "a\x01",
				      "ba", "c" };
	static const char *sorted[] = { "a", "a\x01", "aa", "ab", "b", "ba",
					"c", "\xff" };
	struct scanreq r = { .table = "o" };
	static struct got g;
	unsigned int i;

	for (i = 0; i < 8; i++)
		assert_int_equal(bput(w->c1, "o", keys[i], strlen(keys[i]),
				      "v"), 0);
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 8);
	for (i = 0; i < 8; i++) {
		assert_int_equal(g.klen[i], strlen(sorted[i]));
		assert_memory_equal(g.key[i], sorted[i], g.klen[i]);
	}
	r.has_prefix = true;
	r.prefix = "a";
	r.plen = 1;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 4);
	assert_memory_equal(g.key[3], "ab", 2);
	/* PREFIX and a range: their intersection */
	r.from = "a\x01";
	r.flen = 2;
	r.flags = TDB_SCAN_FROM_EXCL | TDB_SCAN_REVERSE;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 2);
	assert_memory_equal(g.key[0], "ab", 2);
	assert_memory_equal(g.key[1], "aa", 2);
	/* a prefix of 0xff bytes: no successor, the range has no end */
	r = (struct scanreq){ .table = "o", .has_prefix = true,
			      .prefix = "\xff", .plen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);
}

/* Bounds and cursors of 4 KiB keys; an enormous LIMIT. */
static void big_keys(void **state)
{
	struct world *w = *state;
	static unsigned char k1[TDB_KEY_MAX], k2[TDB_KEY_MAX];
	static unsigned char cur[TDB_CURSOR_MAX];
	static struct got g;
	struct scanreq r = { .table = "o" };

	memset(k1, 'm', sizeof(k1));
	memset(k2, 'm', sizeof(k2));
	k2[TDB_KEY_MAX - 1] = 'n';
	assert_int_equal(bput(w->c1, "o", k1, sizeof(k1), "1"), 0);
	assert_int_equal(bput(w->c1, "o", k2, sizeof(k2), "2"), 0);
	assert_int_equal(bput(w->c1, "o", "m", 1, "0"), 0);
	assert_int_equal(bput(w->c1, "o", "n", 1, "3"), 0);
	r.from = k1;
	r.flen = sizeof(k1);
	r.to = k2;
	r.tlen = sizeof(k2);
	r.flags = TDB_SCAN_TO_INCL | TDB_SCAN_REVERSE;
	r.limit = 1;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.val[0], "2");
	assert_int_equal(g.clen, 18 + TDB_KEY_MAX);     /* the whole key */
	memcpy(cur, g.cursor, g.clen);
	r.cursor = cur;
	r.clen = g.clen;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.val[0], "1");
	r.cursor = NULL;
	r.limit = UINT32_MAX;           /* as good as none */
	r.flags = TDB_SCAN_TO_INCL;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.clen, 0);
}

/* --- resuming under writers ---------------------------------------------- */

/* Stable keys s000..s099 (every other number: room between), volatile
 * ones put and deleted around and between them while a range is read in
 * pages and parts. */
static void stable_key(unsigned int i, char *k)
{
	sprintf(k, "s%03u", 2 * i);
}

static void churn(struct world *w, unsigned int round)
{
	char k[16];
	unsigned int i;

	/* odd numbers, between stable keys: 100 of them come and go */
	for (i = 0; i < 4; i++) {
		sprintf(k, "s%03u", rnd(200) | 1);
		if (rnd(2))
			assert_int_equal(bput(w->c2, "o", k, strlen(k), "x"),
					 0);
		else
			(void)bdel(w->c2, "o", k, strlen(k));
	}
	/* and new keys right after a stable one, for a while (the walk
	 * must end) */
	if (round < 150) {
		sprintf(k, "s%03ux%u", 2 * rnd(100), round);
		assert_int_equal(bput(w->c2, "o", k, strlen(k), "y"), 0);
	}
}

static void resume_under_writers(void **state)
{
	struct world *w = *state;
	static struct got g;
	unsigned char cur[TDB_CURSOR_MAX];
	unsigned int dir, i, round = 0;

	for (i = 0; i < 100; i++) {
		char k[16];

		stable_key(i, k);
		assert_int_equal(bput(w->c1, "o", k, strlen(k), "s"), 0);
	}
	for (dir = 0; dir < 2; dir++) {
		struct scanreq r = { .table = "o", .from = "s", .flen = 1,
				     .to = "t", .tlen = 1, .limit = 7 };
		unsigned char last[KMAX];
		size_t lastl = 0;
		unsigned int seen = 0;

		if (dir)
			r.flags = TDB_SCAN_REVERSE;
		for (;;) {
			struct tdbo_dump *d;
			int rc;

			assert_int_equal(scan_start(w->c1, &r, &g, &d), 0);
			/* one part at a time, writers in between */
			do {
				rc = scan_step(d, &g, 1);
				churn(w, round++);
			} while (rc == 1);
			assert_int_equal(rc, 0);
			for (i = 0; i < g.n; i++) {
				char k[16];
				unsigned int want = dir ? 99 - seen : seen;

				/* strictly in the walk's order */
				if (lastl) {
					int c = kcmp(g.key[i], g.klen[i], last,
						     lastl);

					assert_true(dir ? c < 0 : c > 0);
				}
				memcpy(last, g.key[i], g.klen[i]);
				lastl = g.klen[i];
				if (g.val[i][0] != 's')
					continue;       /* a volatile key */
				stable_key(want, k);
				assert_int_equal(g.klen[i], 4);
				assert_memory_equal(g.key[i], k, 4);
				seen++;
			}
			if (!g.clen)
				break;
			memcpy(cur, g.cursor, g.clen);
			r.cursor = cur;
			r.clen = g.clen;
		}
		assert_int_equal(seen, 100);    /* each exactly once */
	}
}

/* --- refusals ------------------------------------------------------------ */

static void refusals(void **state)
{
	struct world *w = *state;
	static struct got g;
	unsigned char cur[TDB_CURSOR_MAX];
	struct scanreq r = { .table = "h", .from = "a", .flen = 1 };
	size_t clen;

	assert_int_equal(bput(w->c1, "o", "a", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "o", "b", 1, "2"), 0);
	assert_int_equal(bput(w->c1, "o2", "a", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "h", "a", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "h", "b", 1, "1"), 0);
	/* a range of a hash table: FROM, TO or a direction */
	assert_int_equal(scan(w->c1, &r, &g), -EOPNOTSUPP);
	assert_string_equal(g.msg, "range scans need an ordered table (tdb "
			    "create --ordered)");
	r = (struct scanreq){ .table = "h", .to = "a", .tlen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), -EOPNOTSUPP);
	r = (struct scanreq){ .table = "h", .flags = TDB_SCAN_REVERSE };
	assert_int_equal(scan(w->c1, &r, &g), -EOPNOTSUPP);
	/* a hash table's PREFIX scan is as it was */
	r = (struct scanreq){ .table = "h", .has_prefix = true,
			      .prefix = "a", .plen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);
	/* FROM after TO; equal is an empty range, or one key with TO_INCL */
	r = (struct scanreq){ .table = "o", .from = "b", .flen = 1,
			      .to = "a", .tlen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_string_equal(g.msg, "the range's FROM is after its TO");
	r = (struct scanreq){ .table = "o", .from = "ab", .flen = 2,
			      .to = "a", .tlen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	r = (struct scanreq){ .table = "o", .from = "a", .flen = 1,
			      .to = "a", .tlen = 1 };
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 0);
	r.flags = TDB_SCAN_TO_INCL;
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);

	/* a cursor of table o's range scan ... */
	r = (struct scanreq){ .table = "o", .from = "a", .flen = 1,
			      .limit = 1 };
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, 1);
	assert_true(g.clen > 0);
	memcpy(cur, g.cursor, g.clen);
	clen = g.clen;
	r.cursor = cur;
	r.clen = clen;
	assert_int_equal(scan(w->c1, &r, &g), 0);       /* resumes */
	assert_int_equal(g.n, 1);
	assert_memory_equal(g.key[0], "b", 1);
	/* ... on another table */
	r.table = "o2";
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_string_equal(g.msg, "CURSOR is from a scan of another table");
	r.table = "h";
	r.from = NULL;
	r.flen = 0;
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_string_equal(g.msg, "CURSOR is from a scan of another table");
	/* ... with other flags */
	r.table = "o";
	r.from = "a";
	r.flen = 1;
	r.flags = TDB_SCAN_REVERSE;
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_non_null(strstr(g.msg, "other SCAN_FLAGS"));
	r.flags = TDB_SCAN_FROM_EXCL;
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_non_null(strstr(g.msg, "other SCAN_FLAGS"));
	/* ... of another range */
	r.flags = 0;
	r.from = "b";
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_non_null(strstr(g.msg, "another range"));
	r.from = "a";
	r.has_prefix = true;
	r.prefix = "a";
	r.plen = 1;
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_non_null(strstr(g.msg, "another range"));
	/* not a cursor, and an older owner's (V1) on an ordered table */
	r = (struct scanreq){ .table = "o", .cursor = "\x07xyz", .clen = 4 };
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_string_equal(g.msg, "not a cursor this owner made");
	r.cursor = "\x01" "a";
	r.clen = 2;
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_non_null(strstr(g.msg, "older owner"));
	/* which a hash table's plain scan still takes */
	r.table = "h";
	assert_int_equal(scan(w->c1, &r, &g), 0);
	/* cut short: no key after the header */
	r = (struct scanreq){ .table = "o", .cursor = cur, .clen = 18 };
	assert_int_equal(scan(w->c1, &r, &g), -EINVAL);
	assert_string_equal(g.msg, "not a cursor this owner made");
}

/* --- snapshot scans of ordered tables ------------------------------------ */

static void snapshot_in_order(void **state)
{
	struct world *w = *state;
	static struct got g;
	unsigned int i, kind;

	for (i = 0; i < 60; i++) {
		char k[16], v[16];

		sprintf(k, "k%02u", i);
		sprintf(v, "a%u", i);
		assert_int_equal(bput(w->c1, "o", k, strlen(k), v), 0);
	}
	/* forward, reverse, a range [k10, k50] in reverse */
	for (kind = 0; kind < 3; kind++) {
		struct scanreq r = { .table = "o",
				     .flags = TDB_SCAN_SNAPSHOT };
		unsigned int lo = 0, hi = 59, n = 0;
		struct tdbo_dump *d;
		bool rev = kind > 0;
		int rc;

		if (rev)
			r.flags |= TDB_SCAN_REVERSE;
		if (kind == 2) {
			r.from = "k10";
			r.flen = 3;
			r.to = "k50";
			r.tlen = 3;
			r.flags |= TDB_SCAN_TO_INCL;
			lo = 10;
			hi = 50;
		}
		assert_int_equal(scan_start(w->c1, &r, &g, &d), 0);
		do {
			rc = scan_step(d, &g, 1);
			/* ahead of the walk: delete some, change some,
			 * insert new ones (not in the snapshot) */
			for (i = 0; i < 3; i++) {
				unsigned int x = rnd(60);
				char k[16];

				sprintf(k, "k%02u", x);
				if (rnd(2))
					(void)bdel(w->c2, "o", k, strlen(k));
				else
					assert_int_equal(bput(w->c2, "o", k,
							      strlen(k), "new"),
							 0);
				sprintf(k, "k%02u+%u", x, n++);
				assert_int_equal(bput(w->c2, "o", k, strlen(k),
						      "ins"), 0);
			}
		} while (rc == 1);
		assert_int_equal(rc, 0);
		/* the table as it was, in the walk's order */
		assert_int_equal(g.n, hi - lo + 1);
		for (i = 0; i < g.n; i++) {
			unsigned int want = rev ? hi - i : lo + i;
			char k[16], v[16];

			sprintf(k, "k%02u", want);
			sprintf(v, "a%u", want);
			assert_int_equal(g.klen[i], 3);
			assert_memory_equal(g.key[i], k, 3);
			assert_string_equal(g.val[i], v);
		}
		/* back to the first state for the next kind */
		for (i = 0; i < 60; i++) {
			char k[16], v[16];

			sprintf(k, "k%02u", i);
			sprintf(v, "a%u", i);
			assert_int_equal(bput(w->c1, "o", k, strlen(k), v), 0);
		}
		{
			struct scanreq all = { .table = "o", .has_prefix = true,
					       .prefix = "k", .plen = 1 };
			static struct got a2;

			assert_int_equal(scan(w->c1, &all, &a2), 0);
			for (i = 0; i < a2.n; i++)
				if (a2.klen[i] > 3)
					assert_int_equal(bdel(w->c1, "o",
							      a2.key[i],
							      a2.klen[i]), 0);
		}
	}
}

/* A writer thread against snapshot scans: the walk's order is asked from
 * the writer's thread (snap.c) while the scan pops the heap. */
struct churner {
	struct tdbo_client *c;
	atomic_uint_fast64_t seq;       /* the last value written */
	atomic_bool stop;
};

/* A PUT or DEL from another thread: the harness's buffers are static. */
static void put_mt(struct tdbo_client *c, const char *k, const char *v,
		   bool del)
{
	unsigned char buf[512] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg in = req(del ? TDB_CMD_DEL : TDB_CMD_PUT, "o", k,
				      0), m;
	struct tdbo_out res;
	struct osink sk;
	struct got g;
	long n;

	if (!del) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		in.value = v;
		in.value_len = (uint32_t)strlen(v);
	}
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &in, &ext);
	if (n <= 0 || tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST, &m,
				      &ext))
		abort();
	sink_init(&sk, &g, 0);
	(void)tdbo_exec(c, &m, &sk.s, &ext, &res);
}

static void *churn_thread(void *arg)
{
	struct churner *ch = arg;
	uint64_t r = 88172645463325252ull;

	while (!atomic_load(&ch->stop)) {
		char k[16], v[24];
		uint64_t s;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		sprintf(k, "v%03u", (unsigned int)(r % 300));
		s = atomic_fetch_add(&ch->seq, 1) + 1;
		sprintf(v, "%llu", (unsigned long long)s);
		put_mt(ch->c, k, v, (r >> 20) % 3 == 0);
	}
	return NULL;
}

static void snapshot_threads(void **state)
{
	struct world *w = *state;
	static struct got g;
	struct churner ch = { .c = w->c2 };
	unsigned int i, round;
	pthread_t th;

	for (i = 0; i < 100; i++) {
		char k[16];

		sprintf(k, "v%03ub", 3 * i);    /* stable, among the churn */
		assert_int_equal(bput(w->c1, "o", k, strlen(k), "s"), 0);
	}
	assert_int_equal(pthread_create(&th, NULL, churn_thread, &ch), 0);
	for (round = 0; round < 40; round++) {
		struct scanreq r = { .table = "o",
				     .flags = TDB_SCAN_SNAPSHOT };
		bool rev = round & 1;
		unsigned int stable = 0;
		struct tdbo_dump *d;
		uint64_t at;
		int rc;

		if (rev)
			r.flags |= TDB_SCAN_REVERSE;
		if (round & 2) {
			r.from = "v100";
			r.flen = 4;
			r.to = "v200";
			r.tlen = 4;
		}
		assert_int_equal(scan_start(w->c1, &r, &g, &d), 0);
		at = atomic_load(&ch.seq);      /* nothing later is in it */
		do
			rc = scan_step(d, &g, 3);
		while (rc == 1);
		assert_int_equal(rc, 0);
		for (i = 0; i < g.n; i++) {
			if (i) {
				int c = kcmp(g.key[i], g.klen[i],
					     g.key[i - 1], g.klen[i - 1]);

				assert_true(rev ? c < 0 : c > 0);
			}
			if (g.val[i][0] == 's')
				stable++;
			else
				assert_true(strtoull(g.val[i], NULL, 10) <=
					    at);
		}
		assert_int_equal(stable, (round & 2) ? 33 : 100);
	}
	atomic_store(&ch.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(atomic_load(&ch.seq) > 100);
}

/* --- transactions' range reads ------------------------------------------- */

static uint64_t txn_scan(struct world *w, struct scanreq r, unsigned int n)
{
	static struct got g;

	r.txn = begin(w->c1);
	assert_int_equal(scan(w->c1, &r, &g), 0);
	assert_int_equal(g.n, n);
	return r.txn;
}

static void txn_range_reads(void **state)
{
	struct world *w = *state;
	struct scanreq r = { .table = "o", .from = "b", .flen = 1, .to = "d",
			     .tlen = 1 };
	static struct got g;
	struct tdbo_dump *d;
	struct ans a;
	uint64_t x;

	assert_int_equal(bput(w->c1, "o", "a", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "o", "b", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "o", "c", 1, "1"), 0);
	assert_int_equal(bput(w->c1, "o", "d", 1, "1"), 0);
	/* nothing changed: the commit goes through */
	x = txn_scan(w, r, 2);
	assert_int_equal(put_c(w->c1, "o", "z", "w", 0, 0, x).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	assert_int_equal(get_c(w->c1, "o", "z", 0).err, 0);
	/* a phantom: a key inserted into the range read */
	x = txn_scan(w, r, 2);
	assert_int_equal(put_c(w->c1, "o", "q", "w", 0, 0, x).err, 0);
	assert_int_equal(bput(w->c2, "o", "c5", 2, "p"), 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -ESTALE);
	assert_non_null(strstr(a.msg, "a range this transaction read"));
	assert_non_null(strstr(a.msg, "table o"));
	assert_int_equal(get_c(w->c1, "o", "q", 0).err, -ENOENT);
	/* outside it (at its exclusive end, before it): no conflict */
	x = txn_scan(w, r, 3);
	assert_int_equal(bput(w->c2, "o", "d", 1, "2"), 0);
	assert_int_equal(bput(w->c2, "o", "a5", 2, "2"), 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	/* a key of it deleted, changed (even to the same value) */
	x = txn_scan(w, r, 3);
	assert_int_equal(bdel(w->c2, "o", "c5", 2), 0);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	x = txn_scan(w, r, 2);
	assert_int_equal(bput(w->c2, "o", "b", 1, "1"), 0);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	/* a LIMITed read covers what it sent: after its last key, no
	 * conflict; before it, one */
	r.limit = 1;
	x = txn_scan(w, r, 1);          /* b */
	assert_int_equal(bput(w->c2, "o", "b5", 2, "2"), 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	x = txn_scan(w, r, 1);          /* b */
	assert_int_equal(bput(w->c2, "o", "b", 1, "3"), 0);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	/* reverse: the span is from the top down */
	r.limit = 1;
	r.flags = TDB_SCAN_REVERSE;
	x = txn_scan(w, r, 1);          /* c */
	assert_int_equal(bput(w->c2, "o", "b7", 2, "2"), 0);  /* below c */
	assert_int_equal(commit(w->c1, x).err, 0);
	x = txn_scan(w, r, 1);          /* c */
	assert_int_equal(bput(w->c2, "o", "c7", 2, "2"), 0);  /* above c */
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	r.flags = 0;
	r.limit = 0;
	/* a scan of a range the transaction changed: refused */
	x = begin(w->c1);
	assert_int_equal(put_c(w->c1, "o", "bb", "w", 0, 0, x).err, 0);
	r.txn = x;
	assert_int_equal(scan(w->c1, &r, &g), -EOPNOTSUPP);
	assert_non_null(strstr(g.msg, "already changed a key"));
	r.txn = 0;
	/* a commit while its scan still sends: -EBUSY, the txn stays */
	r.txn = x;
	r.from = "c";
	assert_int_equal(scan_start(w->c1, &r, &g, &d), 0);
	assert_int_equal(scan_step(d, &g, 1), 1);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -EBUSY);
	assert_non_null(strstr(a.msg, "still sending"));
	while (scan_step(d, &g, -1) == 1)
		;
	assert_int_equal(commit(w->c1, x).err, 0);
	assert_int_equal(get_c(w->c1, "o", "bb", 0).err, 0);
	r.txn = 0;
	/* a hash table's plain scan in a transaction: checked too */
	assert_int_equal(bput(w->c1, "h", "k", 1, "1"), 0);
	x = txn_scan(w, (struct scanreq){ .table = "h" }, 1);
	assert_int_equal(bput(w->c2, "h", "k2", 2, "2"), 0);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	/* not with a PREFIX (the commit would walk all of it) */
	r = (struct scanreq){ .table = "h", .has_prefix = true,
			      .prefix = "k", .plen = 1, .txn = begin(w->c1) };
	assert_int_equal(scan(w->c1, &r, &g), -EOPNOTSUPP);
	assert_non_null(strstr(g.msg, "needs an ordered table"));
	assert_int_equal(commit(w->c1, r.txn).err, 0);
	/* an empty range read: anything inserted into it is a phantom */
	r = (struct scanreq){ .table = "o", .from = "e", .flen = 1,
			      .to = "f", .tlen = 1 };
	x = txn_scan(w, r, 0);
	assert_int_equal(bput(w->c2, "o", "e1", 2, "2"), 0);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);
	x = txn_scan(w, r, 1);
	assert_int_equal(bput(w->c2, "o", "f", 1, "2"), 0);   /* TO: out */
	assert_int_equal(commit(w->c1, x).err, 0);
}

/* The records a transaction's SCAN sends count against max-txn-ops. */
static void txn_scan_bounded(void **state)
{
	struct world *w = *state;
	struct scanreq r = { .table = "o" };
	static struct got g;
	unsigned int i;

	for (i = 0; i < 300; i++) {
		char k[16];

		sprintf(k, "k%03u", i);
		assert_int_equal(bput(w->c1, "o", k, strlen(k), "v"), 0);
	}
	r.txn = begin(w->c1);
	assert_int_equal(scan(w->c1, &r, &g), -E2BIG);
	assert_non_null(strstr(g.msg, "max-txn-ops"));
	assert_true(g.n < 256);
	assert_int_equal(commit(w->c1, r.txn).err, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(create_and_stat, setup,
						teardown),
		cmocka_unit_test_setup_teardown(ranges_model, setup, teardown),
		cmocka_unit_test_setup_teardown(plain_scan_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(big_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(resume_under_writers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshot_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(snapshot_threads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(txn_range_reads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(txn_scan_bounded, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
