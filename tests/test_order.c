// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_order.c - the ordered index of ordered tables against a sorted
 * reference (src/core/order.c, order_walk.h, cursor.c's ranges, view.c's
 * range walk).
 *
 * Phase 1, the model: random puts (new keys and replacements), deletes
 * and expired records over keys made to stress the index (keys that are
 * prefixes of others, 0x00 and 0xff bytes, long shared prefixes, 4 KiB
 * keys), and every few thousand operations: the tree's invariants
 * checked node by node (order, common prefixes, heads, separators equal
 * to the smallest key under their child, node counts), whole walks both
 * ways, random ranges with every bound kind through cursors (resumed in
 * small steps through new cursors, as the owner resumes scans) and
 * through a view of the region (the zero-copy walk).  Enough keys to
 * grow the table past several extents and the tree to four levels.
 * Phase 2, concurrency: a writer inserts and deletes "churn" keys while
 * readers walk ranges in both directions in small resumed steps; every
 * "stable" key (present throughout) must come exactly once and the
 * output must be in strict order.
 * Phase 3, block churn: whole walks inside one read section (views) and
 * in batches of 256 (cursors) while a writer puts and deletes runs of
 * keys (leaves empty, merge, interior nodes go, the root moves).
 * Phase 4, damaged views: a private copy of a region with a reused leaf
 * (count 65535, the leaf against a page that cannot be read) and with a
 * child shared by two child words: no read outside, no key twice.
 * Phase 5, every op: the invariants after every single put and delete.
 * Phase 6, moved separator: a delete moves a separator under a reverse
 * walk and a key goes into the gap; the walk stays in strict order.
 *
 * Usage: test_order [seed]; TDB_ORDER_OPS=<n> scales phase 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "order_walk.h"
#include "user.h"

static uint64_t g_seed, g_op;

static void __attribute__((noreturn, format(printf, 1, 2)))
failf(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "test_order: seed %" PRIu64 " op %" PRIu64 ": ",
		g_seed, g_op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(c, ...) do { if (!(c)) failf(__VA_ARGS__); } while (0)

static uint64_t rnd_state;
static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int keycmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al < bl ? -1 : al > bl);
}

/* --- the reference: a sorted array ------------------------------------ */
struct ent {
	unsigned char *k;
	size_t kl;
	uint32_t val;
};
static struct ent *ref;
static size_t nref, capref;

static size_t ref_lb(const void *k, size_t kl)   /* first >= k */
{
	size_t lo = 0, hi = nref;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (keycmp(ref[mid].k, ref[mid].kl, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ref_put(const void *k, size_t kl, uint32_t val)
{
	size_t i = ref_lb(k, kl);

	if (i < nref && !keycmp(ref[i].k, ref[i].kl, k, kl)) {
		ref[i].val = val;
		return;
	}
	if (nref == capref) {
		capref = capref ? capref * 2 : 1024;
		ref = realloc(ref, capref * sizeof(*ref));
	}
	memmove(&ref[i + 1], &ref[i], (nref - i) * sizeof(*ref));
	ref[i].k = malloc(kl);
	memcpy(ref[i].k, k, kl);
	ref[i].kl = kl;
	ref[i].val = val;
	nref++;
}

static bool ref_del(const void *k, size_t kl)
{
	size_t i = ref_lb(k, kl);

	if (i == nref || keycmp(ref[i].k, ref[i].kl, k, kl))
		return false;
	free(ref[i].k);
	memmove(&ref[i], &ref[i + 1], (nref - i - 1) * sizeof(*ref));
	nref--;
	return true;
}

/* --- keys ---------------------------------------------------------------- */
static unsigned char longpfx[4096];

static size_t make_key(unsigned char *k)
{
	static const unsigned char alpha[] = { 0x00, 'a', 'b', 0xff };
	unsigned int kind = rnd() % 100;
	size_t n, i;

	if (kind < 40) {          /* short, prefixes of each other */
		n = 1 + rnd() % 5;
		for (i = 0; i < n; i++)
			k[i] = alpha[rnd() % 4];
		return n;
	}
	if (kind < 85)            /* numbered, a shared prefix */
		return (size_t)sprintf((char *)k, "user:%06" PRIu64,
				       rnd() % 200000);
	if (kind < 97) {          /* a long shared prefix, then a tail */
		n = 300 + rnd() % 40;
		memcpy(k, longpfx, n);
		n += (size_t)sprintf((char *)k + n, "%" PRIu64, rnd() % 997);
		return n;
	}
	n = TDBE_KEY_MAX - rnd() % 3;    /* 4 KiB keys */
	memcpy(k, longpfx, n);
	k[n - 1] = (unsigned char)rnd();
	return n;
}

/* --- invariants ------------------------------------------------------------ */
struct chk {
	const struct tdb_map *m;
	uint64_t entries, nodes;
	const struct tdb_rec *prev;   /* the last leaf key, in order */
};

static const struct tdb_rec *erec(const struct chk *c, uint64_t e)
{
	return tdb_ptr(c->m, tdbi_entry_rec(e));
}

static void check_key_word(const struct chk *c, const struct tdbb_node *n,
			   uint64_t e, const struct tdb_rec *first)
{
	const struct tdb_rec *r = erec(c, e);

	CHECK(r->klen >= n->cpl && !memcmp(r->data, first->data, n->cpl),
	      "a key does not share its node's prefix (cpl %u)", n->cpl);
	CHECK(tdbb_entry_head(e) == tdbb_head(r->data, r->klen, n->cpl),
	      "an entry's head is not its key's");
}

/* Returns the smallest key's entry under off. */
static uint64_t check_node(struct chk *c, uint64_t off, int level, bool root)
{
	const struct tdbb_node *n = tdb_ptr(c->m, off);
	unsigned int i, cnt = tdbb_nkeys(n);
	uint64_t min = 0;

	c->nodes++;
	CHECK(n->magic == TDBB_NODE_MAGIC, "bad node magic");
	CHECK(level < 0 || n->level == level, "node at the wrong level");
	CHECK(n->n <= (n->level ? TDBB_INNER_CAP : TDBB_LEAF_CAP),
	      "node over capacity");
	CHECK(n->n || (root && !n->level), "an empty node that is not a "
	      "lone root leaf");
	CHECK(!root || !n->level || n->n >= 2, "interior root with one child");
	for (i = 0; i < cnt; i++)
		check_key_word(c, n, tdbb_key_word(n, i),
			       erec(c, tdbb_key_word(n, 0)));
	if (!n->level) {
		for (i = 0; i < n->n; i++) {
			const struct tdb_rec *r = erec(c, n->w[i]);

			if (c->prev)
				CHECK(keycmp(c->prev->data, c->prev->klen,
					     r->data, r->klen) < 0,
				      "leaf keys out of order");
			c->prev = r;
			c->entries++;
		}
		return n->n ? n->w[0] : 0;
	}
	for (i = 0; i < n->n; i++) {
		uint64_t cm = check_node(c, n->w[i], n->level - 1, false);

		if (i == 0)
			min = cm;
		else
			CHECK(tdbi_entry_rec(cm) ==
			      tdbi_entry_rec(n->w[TDBB_SEP0 + i - 1]),
			      "separator %u is not the smallest key under "
			      "its child", i);
	}
	return min;
}

static void check_tree(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	struct chk c = { .m = &t->map };

	check_node(&c, h->oroot, -1, true);
	CHECK(c.entries == h->nrecords, "tree has %" PRIu64 " entries, the "
	      "table %" PRIu64 " records", c.entries, h->nrecords);
	CHECK(c.nodes == h->onodes, "tree has %" PRIu64 " nodes, onodes %"
	      PRIu64, c.nodes, h->onodes);
}

/* --- walks ------------------------------------------------------------------ */

/* The reference's [lo, hi) for a range. */
static void ref_range(const struct tdbe_range *r, size_t *lo, size_t *hi)
{
	*lo = 0;
	*hi = nref;
	if (r->from) {
		*lo = ref_lb(r->from, r->from_len);
		if ((r->flags & TDBE_RANGE_FROM_EXCL) && *lo < nref &&
		    !keycmp(ref[*lo].k, ref[*lo].kl, r->from, r->from_len))
			(*lo)++;
	}
	if (r->to) {
		*hi = ref_lb(r->to, r->to_len);
		if ((r->flags & TDBE_RANGE_TO_INCL) && *hi < nref &&
		    !keycmp(ref[*hi].k, ref[*hi].kl, r->to, r->to_len))
			(*hi)++;
	}
	if (*hi < *lo)
		*hi = *lo;
}

static void expect_at(size_t lo, size_t hi, bool rev, size_t i,
		      const void *k, size_t kl, const void *v, size_t vl,
		      const char *what)
{
	size_t j = rev ? hi - 1 - i : lo + i;

	CHECK(i < hi - lo, "%s: more keys than the reference's %zu", what,
	      hi - lo);
	CHECK(!keycmp(ref[j].k, ref[j].kl, k, kl), "%s: key %zu differs "
	      "from the reference", what, i);
	CHECK(vl == 4 && !memcmp(v, &ref[j].val, 4), "%s: value %zu "
	      "differs", what, i);
}

/* Walk r through cursors, step records at a time, each step in a new
 * cursor resumed with tdbe_cursor_seek after the last key. */
static void walk_cursor(struct tdbe_table *t, const struct tdbe_range *r,
			unsigned int step)
{
	bool rev = r->flags & TDBE_RANGE_REVERSE;
	unsigned char last[TDBE_KEY_MAX];
	size_t lastlen = 0, lo, hi, got = 0;
	struct tdbe_cursor_rec out[64];
	int err, n;

	ref_range(r, &lo, &hi);
	for (;;) {
		struct tdbe_cursor *c = tdbe_cursor_open(t, &err);
		int i;

		CHECK(c, "cursor_open: %d", err);
		CHECK(!tdbe_cursor_range(c, r), "cursor_range failed");
		if (lastlen)
			CHECK(!tdbe_cursor_seek(c, last, lastlen), "seek");
		else if (rnd() % 4 == 0 &&
			 (rev ? r->to && keycmp("\xff\xff\xff\xff", 4,
						 r->to, r->to_len) > 0
			      : r->from && keycmp("", 1, r->from,
						   r->from_len) < 0))
			/* a bound before the range's start (a key below
			 * from, or above to in reverse): the walk must still
			 * start at the range's start */
			CHECK(!tdbe_cursor_seek(c, rev ? "\xff\xff\xff\xff"
						: "\x00", rev ? 4 : 1),
			      "seek outside");
		n = tdbe_cursor_next_many(c, out, step, 0);
		CHECK(n >= 0, "next_many: %d", n);
		for (i = 0; i < n; i++) {
			expect_at(lo, hi, rev, got, out[i].key, out[i].klen,
				  out[i].val, out[i].vlen, "cursor range");
			got++;
		}
		if (n) {
			memcpy(last, out[n - 1].key, out[n - 1].klen);
			lastlen = out[n - 1].klen;
		}
		tdbe_cursor_close(c);
		if (!n)
			break;
	}
	CHECK(got == hi - lo, "cursor range: %zu keys, the reference %zu",
	      got, hi - lo);
}

static void walk_view(struct tdbe_table *t, const struct tdbe_range *r)
{
	static const void *ext[TDBE_EXTENTS_MAX];
	bool rev = r->flags & TDBE_RANGE_REVERSE;
	struct tdbe_view v = { .ext = ext };
	struct tdbe_view_iter it;
	const void *k, *val;
	size_t kl, vl, lo, hi, got = 0;
	uint64_t ver;
	int rc;

	while ((ext[v.nextents] = tdbe_table_extent(t, v.nextents)))
		v.nextents++;
	ref_range(r, &lo, &hi);
	CHECK(tdbe_view_ordered(&v), "view: not ordered");
	rc = tdbe_view_range(&v, r, &it);
	CHECK(!rc, "view_range: %d", rc);
	while ((rc = tdbe_view_next(&it, &k, &kl, &val, &vl, &ver)) == 1)
		expect_at(lo, hi, rev, got++, k, kl, val, vl, "view range");
	CHECK(rc == 0, "view_next: %d", rc);
	CHECK(got == hi - lo, "view range: %zu keys, the reference %zu",
	      got, hi - lo);
}

/* A bound: a present key, an absent one, or none. */
static const void *pick_bound(unsigned char *buf, size_t *len)
{
	unsigned int k = rnd() % 10;

	if (k == 0)
		return NULL;
	if (k < 6 && nref) {
		size_t i = rnd() % nref;

		memcpy(buf, ref[i].k, ref[i].kl);
		*len = ref[i].kl;
		return buf;
	}
	*len = make_key(buf);
	return buf;
}

static void check_ranges(struct tdbe_table *t, unsigned int n)
{
	static unsigned char fb[TDBE_KEY_MAX], tb[TDBE_KEY_MAX];
	struct tdbe_range r;
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(&r, 0, sizeof(r));
		r.from = pick_bound(fb, &r.from_len);
		r.to = pick_bound(tb, &r.to_len);
		r.flags = (unsigned int)(rnd() % 8);
		walk_cursor(t, &r, 1 + (unsigned int)(rnd() % 64));
		walk_view(t, &r);
	}
	/* whole walks, both ways */
	memset(&r, 0, sizeof(r));
	walk_cursor(t, &r, 64);
	r.flags = TDBE_RANGE_REVERSE;
	walk_cursor(t, &r, 64);
	walk_view(t, &r);
}

/* --- phase 1 ----------------------------------------------------------------- */
static void model(struct tdbe_engine *e, uint64_t ops)
{
	static unsigned char k[TDBE_KEY_MAX];
	struct tdbe_table_opts o = { .max_extents = 64,
				     .flags = TDBE_TABLE_ORDERED };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table *t;
	struct tdbe_table_stat st;
	uint32_t val;
	int err;

	CHECK(!tdbe_table_create(e, "ord", &o, &ext), "create: %s", ext.msg);
	CHECK(!tdbe_table_open(e, "ord", &t, NULL), "open");
	CHECK(tdbe_table_ordered(t), "table is not ordered");
	check_ranges(t, 3);           /* empty */
	for (g_op = 0; g_op < ops; g_op++) {
		size_t kl = make_key(k);
		unsigned int what = rnd() % 100;
		/* grow, then shrink, then grow again */
		unsigned int delp = (g_op / (ops / 4 + 1)) % 2 ? 70 : 25;

		if (what < delp) {
			bool had = ref_del(k, kl);

			err = tdbe_del(t, k, kl, NULL);
			CHECK(err == (had ? 0 : -ENOENT), "del: %d", err);
		} else {
			val = (uint32_t)rnd();
			err = tdbe_put(t, k, kl, &val, 4, 0, &ext);
			CHECK(!err, "put: %d %s", err, ext.msg);
			ref_put(k, kl, val);
		}
		if (g_op % 20000 == 19999) {
			check_tree(t);
			check_ranges(t, 20);
		}
	}
	check_tree(t);
	check_ranges(t, 50);
	tdbe_table_stat(t, &st);
	printf("model: %" PRIu64 " ops, %zu keys, %u extents, %" PRIu64
	       " ordered-index nodes, tree height %u\n", ops, nref,
	       st.extents, st.order_nodes,
	       ((const struct tdbb_node *)tdb_ptr(&t->map,
			tdb_hdr(&t->map)->oroot))->level + 1u);
	CHECK(st.flags == TDBE_TABLE_ORDERED, "stat flags");
	/* empty it: the tree must come back to one empty leaf */
	while (nref) {
		CHECK(!tdbe_del(t, ref[nref - 1].k, ref[nref - 1].kl, NULL),
		      "emptying del");
		ref_del(ref[nref - 1].k, ref[nref - 1].kl);
	}
	check_tree(t);
	tdbe_table_stat(t, &st);
	CHECK(st.order_nodes == 1, "emptied tree has %" PRIu64 " nodes",
	      st.order_nodes);
	check_ranges(t, 3);
	tdbe_table_close(t);
	CHECK(!tdbe_table_drop(e, "ord", NULL), "drop");
}

/* --- phase 2: concurrency ------------------------------------------------------ */
#define STABLE 4000
#define CHURN  4000
static struct tdbe_table *g_t;
static volatile int g_stop;

static size_t stable_key(unsigned char *k, unsigned int i)
{
	return (size_t)sprintf((char *)k, "k%05u", i * 2);
}

static size_t churn_key(unsigned char *k, unsigned int i)
{
	return (size_t)sprintf((char *)k, "k%05u", i * 2 + 1);
}

static void *writer(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	unsigned char k[16];

	while (!g_stop) {
		unsigned int i = (unsigned int)((x = x * 6364136223846793005ull +
						 1442695040888963407ull) >> 33)
				 % CHURN;
		size_t kl = churn_key(k, i);

		if (x & 1)
			tdbe_put(g_t, k, kl, "c", 1, 0, NULL);
		else
			tdbe_del(g_t, k, kl, NULL);
	}
	return NULL;
}

static void *reader(void *arg)
{
	bool rev = (uintptr_t)arg & 1;
	struct tdbe_range r = { .flags = rev ? TDBE_RANGE_REVERSE : 0 };
	struct tdbe_cursor_rec out[16];
	unsigned char last[16], want[16];
	unsigned int pass;

	for (pass = 0; pass < 30; pass++) {
		struct tdbe_cursor *c;
		size_t lastlen = 0;
		unsigned int seen = 0;
		int err, n, i;

		for (;;) {
			c = tdbe_cursor_open(g_t, &err);
			CHECK(c && !tdbe_cursor_range(c, &r), "reader open");
			if (lastlen)
				tdbe_cursor_seek(c, last, lastlen);
			n = tdbe_cursor_next_many(c, out, 1 + pass % 16, 0);
			CHECK(n >= 0, "reader next_many %d", n);
			for (i = 0; i < n; i++) {
				if (lastlen)
					CHECK((keycmp(last, lastlen, out[i].key,
						      out[i].klen) < 0) != rev,
					      "reader: out of order");
				memcpy(last, out[i].key, out[i].klen);
				lastlen = out[i].klen;
				if (out[i].vlen == 1 &&
				    ((const char *)out[i].val)[0] == 's') {
					unsigned int j = rev ? STABLE - 1 - seen
							     : seen;

					CHECK(stable_key(want, j) == lastlen &&
					      !memcmp(want, last, lastlen),
					      "reader: stable key %u missing "
					      "or twice", j);
					seen++;
				}
			}
			tdbe_cursor_close(c);
			if (!n)
				break;
		}
		CHECK(seen == STABLE, "reader: %u stable keys of %u", seen,
		      STABLE);
	}
	return NULL;
}

static void concurrency(struct tdbe_engine *e)
{
	struct tdbe_table_opts o = { .flags = TDBE_TABLE_ORDERED };
	pthread_t w, r[2];
	unsigned char k[16];
	unsigned int i;

	CHECK(!tdbe_table_create(e, "conc", &o, NULL), "create conc");
	CHECK(!tdbe_table_open(e, "conc", &g_t, NULL), "open conc");
	for (i = 0; i < STABLE; i++)
		CHECK(!tdbe_put(g_t, k, stable_key(k, i), "s", 1, 0, NULL),
		      "put stable");
	pthread_create(&w, NULL, writer, (void *)(uintptr_t)g_seed);
	for (i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)i);
	for (i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	g_stop = 1;
	pthread_join(w, NULL);
	tdbe_table_close(g_t);
	printf("concurrency: 2 readers x 30 resumed walks under a writer\n");
}

/* --- phase 3: whole walks in one read section ------------------------------
 * Readers walk the whole table through a view (checked: a node or record
 * freed and reused under them shows as -EUCLEAN or disorder) inside ONE
 * read section, both ways, while a writer deletes and re-inserts whole
 * blocks of keys between sparse stable keys: leaves empty, interior nodes
 * lose their children and go, leaves merge, the root shrinks and grows,
 * separators move.  Every stable key must come once, in strict order. */
#define BSTABLE 24
#define BGAP    1500          /* churn keys between two stable ones */
static struct tdbe_table *g_bt;
static unsigned long g_bops;

static size_t bkey(unsigned char *k, unsigned int i)
{
	return (size_t)sprintf((char *)k, "b%07u", i);
}

static void *bwriter(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg | 1;
	unsigned char k[16];

	while (!g_stop) {
		unsigned int blk, len, i, j;
		bool put;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		blk = (unsigned int)(x >> 33) % (BSTABLE + 1);
		len = 1 + (unsigned int)(x >> 20) % BGAP;
		put = (x >> 15) & 1;
		for (j = 0; j < len && !g_stop; j++) {
			i = blk * (BGAP + 1) + 1 + j;
			if (i % (BGAP + 1) == 0)
				continue;
			if (put)
				tdbe_put(g_bt, k, bkey(k, i), "c", 1, 0, NULL);
			else
				tdbe_del(g_bt, k, bkey(k, i), NULL);
			g_bops++;
		}
	}
	return NULL;
}

static void *breader(void *arg)
{
	static __thread const void *ext[TDBE_EXTENTS_MAX];
	bool rev = (uintptr_t)arg & 1;
	struct tdbe_range r = { .flags = rev ? TDBE_RANGE_REVERSE : 0 };
	unsigned int pass;

	for (pass = 0; pass < 400; pass++) {
		struct tdbe_view v = { .ext = ext };
		struct tdbe_view_iter it;
		const void *k, *val, *last = NULL;
		size_t kl, vl, lastlen = 0;
		unsigned int seen = 0;
		unsigned char want[16];
		uint64_t ver;
		int rc;

		tdbe_read_lock();
		while (v.nextents < TDBE_EXTENTS_MAX &&
		       (ext[v.nextents] = tdbe_table_extent(g_bt, v.nextents)))
			v.nextents++;
		rc = tdbe_view_range(&v, &r, &it);
		CHECK(!rc, "breader: view_range %d", rc);
		while ((rc = tdbe_view_next(&it, &k, &kl, &val, &vl,
					    &ver)) == 1) {
			if (last)
				CHECK((keycmp(last, lastlen, k, kl) < 0) != rev,
				      "breader: out of order");
			last = k;
			lastlen = kl;
			if (vl == 1 && ((const char *)val)[0] == 's') {
				unsigned int j = rev ? BSTABLE - 1 - seen : seen;

				CHECK(bkey(want, j * (BGAP + 1)) == kl &&
				      !memcmp(want, k, kl),
				      "breader: stable key %u missing or twice",
				      j);
				seen++;
			}
		}
		if (rc == -EUCLEAN && v.nextents < TDBE_EXTENTS_MAX &&
		    tdbe_table_extent(g_bt, v.nextents)) {
			/* the table grew an extent the view does not map:
			 * a mapped reader maps it and walks again */
			tdbe_read_unlock();
			pass--;
			continue;
		}
		tdbe_read_unlock();
		CHECK(rc == 0, "breader: view_next %d (%u stable keys seen)",
		      rc, seen);
		CHECK(seen == BSTABLE, "breader: %u stable keys of %u", seen,
		      BSTABLE);
	}
	return NULL;
}

/* The engine's walk in big batches (each one read section, ord_collect):
 * resumed cursors, every stable key once, strict order. */
static void *bcursor(void *arg)
{
	bool rev = (uintptr_t)arg & 1;
	struct tdbe_range r = { .flags = rev ? TDBE_RANGE_REVERSE : 0 };
	static __thread struct tdbe_cursor_rec out[TDBE_CURSOR_MANY];
	unsigned char last[16], want[16];
	unsigned int pass;

	for (pass = 0; pass < 200; pass++) {
		struct tdbe_cursor *c;
		size_t lastlen = 0;
		unsigned int seen = 0;
		int err, n, i;

		c = tdbe_cursor_open(g_bt, &err);
		CHECK(c && !tdbe_cursor_range(c, &r), "bcursor open");
		while ((n = tdbe_cursor_next_many(c, out, TDBE_CURSOR_MANY,
						  0)) > 0) {
			for (i = 0; i < n; i++) {
				if (lastlen)
					CHECK((keycmp(last, lastlen, out[i].key,
						      out[i].klen) < 0) != rev,
					      "bcursor: out of order");
				memcpy(last, out[i].key, out[i].klen);
				lastlen = out[i].klen;
				if (out[i].vlen == 1 &&
				    ((const char *)out[i].val)[0] == 's') {
					unsigned int j = rev ? BSTABLE - 1 - seen
							     : seen;

					CHECK(bkey(want, j * (BGAP + 1)) ==
					      lastlen && !memcmp(want, last,
								 lastlen),
					      "bcursor: stable key %u missing "
					      "or twice", j);
					seen++;
				}
			}
		}
		CHECK(n == 0, "bcursor: next_many %d", n);
		tdbe_cursor_close(c);
		CHECK(seen == BSTABLE, "bcursor: %u stable keys of %u", seen,
		      BSTABLE);
	}
	return NULL;
}

static void block_churn(struct tdbe_engine *e)
{
	struct tdbe_table_opts o = { .flags = TDBE_TABLE_ORDERED };
	pthread_t w, r[4];
	unsigned char k[16];
	unsigned int i;

	CHECK(!tdbe_table_create(e, "blk", &o, NULL), "create blk");
	CHECK(!tdbe_table_open(e, "blk", &g_bt, NULL), "open blk");
	for (i = 0; i < BSTABLE; i++)
		CHECK(!tdbe_put(g_bt, k, bkey(k, i * (BGAP + 1)), "s", 1, 0,
				NULL), "put stable");
	g_stop = 0;
	pthread_create(&w, NULL, bwriter, (void *)(uintptr_t)g_seed);
	for (i = 0; i < 4; i++)
		pthread_create(&r[i], NULL, i < 2 ? breader : bcursor,
			       (void *)(uintptr_t)i);
	for (i = 0; i < 4; i++)
		pthread_join(r[i], NULL);
	g_stop = 1;
	pthread_join(w, NULL);
	check_tree(g_bt);
	printf("block churn: 2 view readers x 400 whole walks in one read "
	       "section, 2 cursors x 200 in batches of %u, under a block "
	       "writer (%lu writes, %" PRIu64 " keys at the end)\n",
	       TDBE_CURSOR_MANY, g_bops, tdb_hdr(&g_bt->map)->nrecords);
	tdbe_table_close(g_bt);
}

/* --- phase 4: views of a damaged or reused region ----------------------------
 * A mapped reader must never read outside the region, loop or return keys
 * out of order without an error, whatever the region holds (a reader
 * whose section outlived its lease may see a node reused under it).  The
 * region here is a private copy of a real table's, each extent followed
 * by a page that cannot be read, and is damaged on purpose. */
struct vcopy {
	const void *ext[TDBE_EXTENTS_MAX];
	unsigned char *mem[TDBE_EXTENTS_MAX];
	struct tdbe_view v;
};

static void vcopy_make(struct tdbe_table *t, struct vcopy *c)
{
	const void *x;

	memset(c, 0, sizeof(*c));
	c->v.ext = c->ext;
	while ((x = tdbe_table_extent(t, c->v.nextents))) {
		unsigned char *m = mmap(NULL, TDBP_EXTENT_SIZE + 4096,
					PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(m != MAP_FAILED, "mmap");
		CHECK(!mprotect(m + TDBP_EXTENT_SIZE, 4096, PROT_NONE),
		      "mprotect");
		memcpy(m, x, TDBP_EXTENT_SIZE);
		c->mem[c->v.nextents] = m;
		c->ext[c->v.nextents++] = m;
	}
}

static void vcopy_free(struct vcopy *c)
{
	uint32_t i;

	for (i = 0; i < c->v.nextents; i++)
		munmap(c->mem[i], TDBP_EXTENT_SIZE + 4096);
}

static void *vnode(struct vcopy *c, uint64_t off)
{
	return c->mem[off >> TDBP_EXTENT_SHIFT] + (off & TDB_EXT_MASK);
}

/* Walk the view: the number of records, or the walk's error; a record
 * returned out of order is a failure (it had to be an error). */
static int vwalk(struct vcopy *c, bool rev, unsigned int max)
{
	struct tdbe_range r = { .flags = rev ? TDBE_RANGE_REVERSE : 0 };
	struct tdbe_view_iter it;
	const void *k, *val, *last = NULL;
	size_t kl, vl, lastlen = 0;
	uint64_t ver;
	int rc, n = 0;

	rc = tdbe_view_range(&c->v, &r, &it);
	if (rc)
		return rc;
	while ((rc = tdbe_view_next(&it, &k, &kl, &val, &vl, &ver)) == 1) {
		CHECK(!last || (keycmp(last, lastlen, k, kl) < 0) != rev,
		      "view of a damaged region: a key out of order without "
		      "an error");
		last = k;
		lastlen = kl;
		CHECK((unsigned int)++n <= max, "view of a damaged region: "
		      "more keys than the region holds");
	}
	return rc < 0 ? rc : n;
}

static void damaged_views(struct tdbe_engine *e)
{
	struct tdbe_table_opts o = { .flags = TDBE_TABLE_ORDERED };
	struct tdbe_table *t;
	struct vcopy c;
	struct tdbb_node *n;
	uint64_t root, moved;
	unsigned char k[16];
	unsigned int i;
	int rc, rev;

	CHECK(!tdbe_table_create(e, "dmg", &o, NULL), "create dmg");
	CHECK(!tdbe_table_open(e, "dmg", &t, NULL), "open dmg");
	for (i = 0; i < TDBB_LEAF_CAP; i++)    /* one full leaf */
		CHECK(!tdbe_put(t, k, bkey(k, i), "v", 1, 0, NULL), "put");
	/* 1. a lone root leaf moved to the end of its extent; after the
	 * first key, the leaf's count reads 65535 (the node was reused):
	 * the walk must stay inside the node */
	for (rev = 0; rev < 2; rev++) {
		struct tdbe_view_iter it;
		struct tdbe_range r = { .flags = rev ? TDBE_RANGE_REVERSE : 0 };
		const void *key, *val;
		size_t kl, vl;
		uint64_t ver;
		unsigned int got = 0;

		vcopy_make(t, &c);
		root = tdb_hdr(&t->map)->oroot;
		moved = (c.v.nextents - 1ull) << TDBP_EXTENT_SHIFT |
			(TDBP_EXTENT_SIZE - TDBB_NODE_BYTES);
		memcpy(vnode(&c, moved), vnode(&c, root), TDBB_NODE_BYTES);
		((struct tdb_region_hdr *)c.mem[0])->oroot = moved;
		n = vnode(&c, moved);
		CHECK(!n->level && n->n == TDBB_LEAF_CAP, "dmg: not one leaf");
		CHECK(!tdbe_view_range(&c.v, &r, &it), "dmg: range");
		CHECK(tdbe_view_next(&it, &key, &kl, &val, &vl, &ver) == 1,
		      "dmg: first");
		n->n = 65535;
		while ((rc = tdbe_view_next(&it, &key, &kl, &val, &vl,
					    &ver)) == 1)
			CHECK(++got < TDBB_LEAF_CAP, "dmg: a reused leaf gave more keys "
			      "than it holds");
		CHECK(rc == -EUCLEAN || rc == 0, "dmg: %d", rc);
		vcopy_free(&c);
	}
	/* 2. two child words of the root name the same leaf: the walk
	 * meets its keys twice, which must be an error, not a record */
	for (i = TDBB_LEAF_CAP; i < 400; i++)
		CHECK(!tdbe_put(t, k, bkey(k, i), "v", 1, 0, NULL), "put");
	for (rev = 0; rev < 2; rev++) {
		vcopy_make(t, &c);
		n = vnode(&c, tdb_hdr(&t->map)->oroot);
		CHECK(n->level == 1 && n->n >= 3, "dmg: root has %u", n->n);
		n->w[1] = n->w[0];
		/* an error, or its keys once each in strict order (vwalk
		 * checks): never twice, never out of order */
		rc = vwalk(&c, rev, 400);
		CHECK(rc == -EUCLEAN || (rc >= 0 && rc < 400),
		      "dmg: a shared child walked: %d", rc);
		vcopy_free(&c);
	}
	tdbe_table_close(t);
	CHECK(!tdbe_table_drop(e, "dmg", NULL), "drop dmg");
	printf("damaged views: a reused leaf, a shared child\n");
}

/* --- phase 5: the tree checked after every change ----------------------------
 * Blocks of keys put and deleted in runs (leaves empty, merge, interior
 * nodes lose children, the root grows and collapses, separators move),
 * with the invariants checked after every single put or delete. */
static void every_op(struct tdbe_engine *e, unsigned int ops)
{
	struct tdbe_table_opts o = { .flags = TDBE_TABLE_ORDERED };
	struct tdbe_table *t;
	unsigned char k[16];
	unsigned int op = 0, hmax = 0;

	CHECK(!tdbe_table_create(e, "every", &o, NULL), "create every");
	CHECK(!tdbe_table_open(e, "every", &t, NULL), "open every");
	while (op < ops) {
		unsigned int base = (unsigned int)(rnd() % 4000);
		unsigned int len = 1 + (unsigned int)(rnd() % 300);
		unsigned int step = rnd() % 3 ? 1 : 7;
		bool put = rnd() % 2, down = rnd() % 2;
		unsigned int j;

		for (j = 0; j < len && op < ops; j++, op++) {
			unsigned int i = (down ? base + len - j : base + j) *
					 step % 4000;
			size_t kl = (size_t)sprintf((char *)k, "e%u", i);
			int err;

			g_op = op;
			if (put) {
				uint32_t val = (uint32_t)rnd();

				err = tdbe_put(t, k, kl, &val, 4, 0, NULL);
				CHECK(!err, "every: put %d", err);
				ref_put(k, kl, val);
			} else {
				bool had = ref_del(k, kl);

				err = tdbe_del(t, k, kl, NULL);
				CHECK(err == (had ? 0 : -ENOENT), "every: del %d",
				      err);
			}
			check_tree(t);
			hmax = ((const struct tdbb_node *)tdb_ptr(&t->map,
				tdb_hdr(&t->map)->oroot))->level + 1u > hmax ?
			       ((const struct tdbb_node *)tdb_ptr(&t->map,
				tdb_hdr(&t->map)->oroot))->level + 1u : hmax;
		}
		if (op % 5000 < len)
			check_ranges(t, 2);
	}
	while (nref) {
		CHECK(!tdbe_del(t, ref[nref - 1].k, ref[nref - 1].kl, NULL),
		      "every: emptying");
		ref_del(ref[nref - 1].k, ref[nref - 1].kl);
		check_tree(t);
	}
	tdbe_table_close(t);
	CHECK(!tdbe_table_drop(e, "every", NULL), "drop every");
	printf("every op: %u puts and deletes in runs, the tree checked "
	       "after each (height up to %u)\n", ops, hmax);
}

/* --- phase 6: a separator moves under a walk ---------------------------------
 * Deleting the smallest key K of a leaf moves its separator to the next
 * key, so the left neighbour's range grows over (K, next): a key K2
 * put there goes into the left leaf, in place under the same parent.  A
 * reverse walk that met K in its (older) copy of the right leaf then
 * steps into the new left leaf and meets K2 > K.  Single-threaded: the
 * writes happen inside the walker's read section (no grace period is
 * waited for: the limbo stays below its batch). */
static void moved_separator(struct tdbe_engine *e)
{
	struct tdbe_table_opts o = { .flags = TDBE_TABLE_ORDERED };
	static const void *ext[TDBE_EXTENTS_MAX];
	struct tdbe_view v = { .ext = ext };
	struct tdbe_table *t;
	struct tdbe_view_iter it;
	struct tdbe_range r = { .flags = TDBE_RANGE_REVERSE };
	const struct tdbb_node *root, *right;
	const struct tdb_rec *kr;
	unsigned char k[16], to[16], kk[16];
	const void *key, *val, *last = NULL;
	size_t kl, vl, lastlen = 0, kkl;
	uint64_t ver;
	unsigned int i;
	int rc;

	CHECK(!tdbe_table_create(e, "sep", &o, NULL), "create sep");
	CHECK(!tdbe_table_open(e, "sep", &t, NULL), "open sep");
	for (i = 0; i < 150; i++)      /* even keys: 62 + 62 + 26 in three leaves */
		CHECK(!tdbe_put(t, k, bkey(k, 2 * i), "v", 1, 0, NULL), "put");
	for (i = 10; i < 20; i++)      /* room in the left leaf */
		CHECK(!tdbe_del(t, k, bkey(k, 2 * i), NULL), "del");
	root = tdb_ptr(&t->map, tdb_hdr(&t->map)->oroot);
	CHECK(root->level == 1 && root->n == 3, "sep: root %u/%u",
	      root->level, root->n);
	right = tdb_ptr(&t->map, root->w[1]);
	kr = tdb_ptr(&t->map, tdbi_entry_rec(right->w[0]));   /* K */
	kkl = kr->klen;
	memcpy(kk, kr->data, kkl);
	CHECK(right->n > 20, "sep: right leaf has %u", right->n);
	/* a reverse walk from below the right leaf's third key */
	{
		const struct tdb_rec *tr = tdb_ptr(&t->map,
						   tdbi_entry_rec(right->w[2]));

		memcpy(to, tr->data, tr->klen);
		r.to = to;
		r.to_len = tr->klen;
	}
	tdbe_read_lock();
	while ((ext[v.nextents] = tdbe_table_extent(t, v.nextents)))
		v.nextents++;
	CHECK(!tdbe_view_range(&v, &r, &it), "sep: range");
	rc = tdbe_view_next(&it, &key, &kl, &val, &vl, &ver);  /* key 1 */
	CHECK(rc == 1, "sep: first %d", rc);
	last = key;
	lastlen = kl;
	/* the writer: delete K, put K2 = K + 1 (in the gap before the next
	 * key), both inside this read section */
	CHECK(!tdbe_del(t, kk, kkl, NULL), "sep: del K");
	{
		unsigned int kn = (unsigned int)strtoul((const char *)kk + 1,
							NULL, 10);

		CHECK(!tdbe_put(t, k, bkey(k, kn + 1), "n", 1, 0, NULL),
		      "sep: put K2");
	}
	while ((rc = tdbe_view_next(&it, &key, &kl, &val, &vl, &ver)) == 1) {
		CHECK(keycmp(key, kl, last, lastlen) < 0,
		      "sep: a reverse walk met %.*s after %.*s", (int)kl,
		      (const char *)key, (int)lastlen, (const char *)last);
		last = key;
		lastlen = kl;
	}
	tdbe_read_unlock();
	CHECK(rc == 0, "sep: the walk of a healthy region failed: %d", rc);
	tdbe_table_close(t);
	CHECK(!tdbe_table_drop(e, "sep", NULL), "drop sep");
	printf("moved separator: a reverse walk stays in order\n");
}

int main(int argc, char **argv)
{
	const char *s = getenv("TDB_ORDER_OPS");
	uint64_t ops = s ? strtoull(s, NULL, 10) : 300000;
	struct tdbe_engine *e;
	unsigned int i;
	int err;

	g_seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	rnd_state = g_seed;
	for (i = 0; i < sizeof(longpfx); i++)
		longpfx[i] = (unsigned char)('A' + i % 7);
	e = tdbe_engine_new(&err);
	CHECK(e, "engine_new: %d", err);
	moved_separator(e);
	model(e, ops);
	concurrency(e);
	block_churn(e);
	damaged_views(e);
	every_op(e, 30000);
	tdbe_engine_free(e);
	printf("ok\n");
	return 0;
}
