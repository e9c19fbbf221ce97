// SPDX-License-Identifier: GPL-2.0-only
/*
 * order.c - the writer's side of the ordered index of ordered tables: a
 * copy-on-write B+tree of the table's records in key order (layout.h,
 * "ordered index"; readers walk it with order_walk.h).
 *
 * table.c calls it under the table's writer lock, after the hash index
 * took the change: tdbb_insert for a new key, tdbb_replace for a new
 * record of a present key, tdbb_remove for a key that went.  None of
 * them can fail: tdbb_reserve, called before the hash index is touched, sets
 * aside every node the worst case of the change can need, so a change
 * is made to both indexes or to neither.
 *
 * Invariants and why:
 *  - Every node reachable from oroot is whole and, but for the in-place
 *    word stores layout.h lists, never written again; a changed node is
 *    a new node published by one release store at the highest level
 *    that changed, and the old ones go to the limbo (tdb_retire), so a
 *    reader in its read section keeps a consistent path.
 *  - Every key a node holds shares its first cpl bytes.  An added key
 *    that does not shrinks cpl; the heads are then recomputed from the
 *    old prefix and the old heads alone (head_shrink), reading no
 *    record.  Only a split lengthens it (grow_cpl, which reads the
 *    records of the half).
 *  - Separators name live records: separator i of a node is the
 *    smallest key under child i.  When that key is deleted, the
 *    separator moves to the next key (fix_sep) before the old record
 *    is retired (table.c retires it after the call).
 *  - Only the root may be an empty leaf; an interior node has at least
 *    one child, and an interior root at least two.
 */
#include "internal.h"
#include "order_walk.h"

/* A node being built: words of a leaf (w: entries) or of an interior
 * node (w: children, sep[1..n-1]: separators). */
struct nbuf {
	unsigned int level, n, cpl;
	uint64_t w[TDBB_LEAF_CAP + 1];
	uint64_t sep[TDBB_INNER_CAP + 1];
};

/* The writer's scratch nodes (kernel stacks cannot hold them), under
 * t->wlock like everything here. */
struct tdbb_scratch {
	struct nbuf b, l, r;
};

static struct tdbb_src wsrc(const struct tdbe_table *t)
{
	struct tdbb_src s = {
		.ext = (const void *const *)t->map.ext,
		.nextents = 0,
	};
	return s;
}

static struct tdbb_node *wnode(struct tdbe_table *t, uint64_t off)
{
	return tdb_ptr(&t->map, off);
}

static const struct tdb_rec *wrec(struct tdbe_table *t, uint64_t e)
{
	return tdb_ptr(&t->map, tdbi_entry_rec(e));
}

/* --- node memory: the reserve ------------------------------------------ */

static unsigned int height(struct tdbe_table *t)
{
	return wnode(t, tdb_hdr(&t->map)->oroot)->level + 1u;
}

int tdbb_reserve(struct tdbe_table *t)
{
	unsigned int need = 2 * height(t) + 3;

	if (need > TDBB_RESERVE)
		need = TDBB_RESERVE;
	while (t->nores < need) {
		uint64_t off = tdb_alloc_reclaim(t, TDBB_NODE_BYTES);

		if (!off)
			return -ENOSPC;
		t->ores[t->nores++] = off;
	}
	return 0;
}

static uint64_t node_new(struct tdbe_table *t, const struct nbuf *b)
{
	uint64_t off = t->ores[--t->nores];
	struct tdbb_node *n = wnode(t, off);
	unsigned int i;

	memset(n, 0, TDBB_NODE_BYTES);
	n->magic = TDBB_NODE_MAGIC;
	n->level = (uint16_t)b->level;
	n->n = (uint16_t)b->n;
	n->cpl = (uint16_t)b->cpl;
	for (i = 0; i < b->n; i++)
		n->w[i] = b->w[i];
	if (b->level)
		for (i = 1; i < b->n; i++)
			n->w[TDBB_SEP0 + i - 1] = b->sep[i];
	tdb_hdr(&t->map)->onodes++;
	return off;
}

static void node_retire(struct tdbe_table *t, uint64_t off)
{
	tdb_retire(t, off);
	tdb_hdr(&t->map)->onodes--;
}

static void nbuf_load(struct tdbe_table *t, uint64_t off, struct nbuf *b)
{
	const struct tdbb_node *n = wnode(t, off);
	unsigned int i;

	b->level = n->level;
	b->n = n->n;
	b->cpl = n->cpl;
	for (i = 0; i < n->n; i++)
		b->w[i] = n->w[i];
	if (n->level)
		for (i = 1; i < n->n; i++)
			b->sep[i] = n->w[TDBB_SEP0 + i - 1];
}

/* Store the node at path level d (0: the root) in its place. */
static void publish(struct tdbe_table *t, struct tdbb_walk *w, unsigned int d,
		    uint64_t off)
{
	if (!d)
		tdb_store_release(&tdb_hdr(&t->map)->oroot, off);
	else
		tdb_store_release(&wnode(t, w->node[d - 1])->w[w->pos[d - 1]],
				  off);
	w->node[d] = off;
}

/* --- prefixes and heads ------------------------------------------------ */

static unsigned int nkeys(const struct nbuf *b)
{
	return b->level ? (b->n ? b->n - 1 : 0) : b->n;
}

static uint64_t *key_word(struct nbuf *b, unsigned int i)
{
	return b->level ? &b->sep[i + 1] : &b->w[i];
}

/* The head of an entry at a shorter prefix, from the old prefix P (the
 * first oldc bytes every key shares) and its old head: no record read. */
static uint64_t head_shrink(uint64_t e, const unsigned char *p,
			    unsigned int oldc, unsigned int newc)
{
	uint64_t oh = tdbb_entry_head(e), h = 0;
	unsigned int i;

	for (i = 0; i < TDBB_HEAD_BYTES; i++) {
		unsigned int pos = newc + i;
		unsigned int byte = pos < oldc ? p[pos] :
			(unsigned int)(oh >> (8 * (TDBB_HEAD_BYTES - 1 -
						   (pos - oldc)))) & 0xff;

		h = h << 8 | byte;
	}
	return tdbb_entry(h, tdbi_entry_rec(e));
}

/* The entry for (key, rec) in b, shrinking b's prefix first if the key
 * does not share it.  b may have no keys yet. */
static uint64_t add_key(struct tdbe_table *t, struct nbuf *b,
			const unsigned char *key, size_t klen, uint64_t rec)
{
	unsigned int i, c = 0, cnt = nkeys(b);
	const unsigned char *p;

	if (!cnt) {
		b->cpl = (unsigned int)klen;
		return tdbb_entry(0, rec);
	}
	p = wrec(t, *key_word(b, 0))->data;
	while (c < b->cpl && c < klen && key[c] == p[c])
		c++;
	if (c < b->cpl) {
		for (i = 0; i < cnt; i++)
			*key_word(b, i) = head_shrink(*key_word(b, i), p,
						      b->cpl, c);
		b->cpl = c;
	}
	return tdbb_entry(tdbb_head(key, klen, b->cpl), rec);
}

/* After a split: the half's keys may share more than the whole did;
 * make cpl the longest and the heads follow (reads each record). */
static void grow_cpl(struct tdbe_table *t, struct nbuf *b)
{
	unsigned int i, c = b->cpl, cnt = nkeys(b);
	const struct tdb_rec *f, *l;

	if (!cnt)
		return;
	f = wrec(t, *key_word(b, 0));
	l = wrec(t, *key_word(b, cnt - 1));
	while (c < f->klen && c < l->klen && f->data[c] == l->data[c])
		c++;
	if (cnt == 1)
		c = f->klen;
	if (c == b->cpl)
		return;
	b->cpl = c;
	for (i = 0; i < cnt; i++) {
		const struct tdb_rec *r = wrec(t, *key_word(b, i));

		*key_word(b, i) = tdbb_entry(tdbb_head(r->data, r->klen, c),
					     tdbi_entry_rec(*key_word(b, i)));
	}
}

/* The entry of a key moving into b (a separator going up). */
static uint64_t add_entry(struct tdbe_table *t, struct nbuf *b, uint64_t e)
{
	const struct tdb_rec *r = wrec(t, e);

	return add_key(t, b, r->data, r->klen, tdbi_entry_rec(e));
}

/* --- descent ------------------------------------------------------------ */

/* The path to key (leaf position: its lower bound); eq[d] = the key
 * index of a separator (or leaf entry) equal to key at level d, or -1. */
static void descend(struct tdbe_table *t, const void *key, size_t klen,
		    struct tdbb_walk *w, int *eq)
{
	struct tdbb_src s = wsrc(t);
	unsigned int d = 0;

	w->node[0] = tdb_hdr(&t->map)->oroot;
	for (;;) {
		const struct tdbb_node *n = wnode(t, w->node[d]);
		int r = tdbb_node_rank(&s, n, key, klen, n->level != 0,
				       &eq[d]);

		w->pos[d] = (uint16_t)r;
		if (!n->level)
			break;
		w->node[d + 1] = n->w[r];
		d++;
	}
	w->height = d + 1;
}

/* --- insert ------------------------------------------------------------- */

/* Split b (over capacity by one) at sp: left gets [0, sp), right the
 * rest; for an interior node the separator between them goes up
 * (*up). */
static void split(struct tdbe_table *t, const struct nbuf *b,
		  unsigned int sp, struct nbuf *l, struct nbuf *r,
		  uint64_t *up)
{
	unsigned int i;

	l->level = r->level = b->level;
	l->cpl = r->cpl = b->cpl;
	l->n = sp;
	r->n = b->n - sp;
	for (i = 0; i < sp; i++)
		l->w[i] = b->w[i];
	for (i = sp; i < b->n; i++)
		r->w[i - sp] = b->w[i];
	if (b->level) {
		for (i = 1; i < sp; i++)
			l->sep[i] = b->sep[i];
		for (i = sp + 1; i < b->n; i++)
			r->sep[i - sp] = b->sep[i];
		*up = b->sep[sp];
	} else {
		*up = r->w[0];
	}
	grow_cpl(t, l);
	grow_cpl(t, r);
}

/* Where to split a node that has one word too many, the new one at
 * pos: an append keeps the old ones together (a load in key order
 * fills its nodes), else halves. */
static unsigned int split_point(unsigned int n, unsigned int pos)
{
	if (pos == n - 1)
		return n - 1;
	if (pos == 0)
		return 1;
	return n / 2;
}

/* Level d of the path had one child replaced by left and right, right
 * starting at the key of entry upe: make the node at d take both,
 * splitting it in turn if it must, up to a new root. */
static void insert_child(struct tdbe_table *t, struct tdbb_walk *w, int d,
			 uint64_t left, uint64_t right, uint64_t upe,
			 unsigned int child_level)
{
	struct nbuf *b = &t->osc->b, *l = &t->osc->l, *r = &t->osc->r;
	unsigned int i, at;
	uint64_t e;

	for (; d >= 0; d--) {
		nbuf_load(t, w->node[d], b);
		at = w->pos[d];
		e = add_entry(t, b, upe);
		for (i = b->n; i > at + 1; i--) {
			b->w[i] = b->w[i - 1];
			b->sep[i] = b->sep[i - 1];
		}
		b->w[at] = left;
		b->w[at + 1] = right;
		b->sep[at + 1] = e;
		b->n++;
		if (b->n <= TDBB_INNER_CAP) {
			uint64_t old = w->node[d];

			publish(t, w, (unsigned int)d, node_new(t, b));
			node_retire(t, old);
			return;
		}
		split(t, b, split_point(b->n, at + 1), l, r, &upe);
		left = node_new(t, l);
		right = node_new(t, r);
		node_retire(t, w->node[d]);
		child_level = b->level;
	}
	/* The root split: a new root above it. */
	b->level = child_level + 1;
	b->n = 0;
	b->cpl = 0;
	e = add_entry(t, b, upe);
	b->n = 2;
	b->w[0] = left;
	b->w[1] = right;
	b->sep[1] = e;
	publish(t, w, 0, node_new(t, b));
}

void tdbb_insert(struct tdbe_table *t, const void *key, size_t klen,
		 uint64_t rec)
{
	struct nbuf *b = &t->osc->b, *l = &t->osc->l, *r = &t->osc->r;
	struct tdbb_walk w;
	int eq[TDBB_MAX_HEIGHT];
	unsigned int d, pos, i;
	uint64_t e, up, old, lo, ro;

	descend(t, key, klen, &w, eq);
	d = w.height - 1;
	pos = w.pos[d];
	old = w.node[d];
	nbuf_load(t, old, b);
	e = add_key(t, b, key, klen, rec);
	for (i = b->n; i > pos; i--)
		b->w[i] = b->w[i - 1];
	b->w[pos] = e;
	b->n++;
	if (b->n <= TDBB_LEAF_CAP) {
		publish(t, &w, d, node_new(t, b));
		node_retire(t, old);
		return;
	}
	split(t, b, split_point(b->n, pos), l, r, &up);
	lo = node_new(t, l);
	ro = node_new(t, r);
	node_retire(t, old);
	insert_child(t, &w, (int)d - 1, lo, ro, up, 0);
}

/* --- replace ------------------------------------------------------------ */

static void swap_rec(uint64_t *word, uint64_t rec)
{
	tdb_store_release(word, (*word & ~TDBI_REC_MASK) | rec >> 4);
}

void tdbb_replace(struct tdbe_table *t, const void *key, size_t klen,
		  uint64_t old, uint64_t rec)
{
	struct tdbb_walk w;
	int eq[TDBB_MAX_HEIGHT];
	unsigned int d;

	descend(t, key, klen, &w, eq);
	for (d = 0; d < w.height; d++) {
		struct tdbb_node *n = wnode(t, w.node[d]);
		uint64_t *word;

		if (eq[d] < 0)
			continue;
		word = n->level ? &n->w[TDBB_SEP0 + eq[d]] : &n->w[eq[d]];
		if (tdbi_entry_rec(*word) == old)
			swap_rec(word, rec);
	}
}

/* --- remove ------------------------------------------------------------- */

/* Separator key index j of the node at path level d named the deleted
 * key: make it name the next key, entry nexte (a record of the node's
 * subtree), rebuilding the node if that key does not share its prefix. */
static void fix_sep(struct tdbe_table *t, struct tdbb_walk *w, unsigned int d,
		    unsigned int j, uint64_t nexte)
{
	struct tdbb_node *n = wnode(t, w->node[d]);
	const struct tdb_rec *r = wrec(t, nexte);
	const unsigned char *p = wrec(t, n->w[TDBB_SEP0])->data;
	uint64_t old = w->node[d];
	struct nbuf *b = &t->osc->b;

	if (r->klen >= n->cpl && !memcmp(r->data, p, n->cpl)) {
		tdb_store_release(&n->w[TDBB_SEP0 + j],
				  tdbb_entry(tdbb_head(r->data, r->klen,
						       n->cpl),
					     tdbi_entry_rec(nexte)));
		return;
	}
	nbuf_load(t, old, b);
	b->sep[j + 1] = add_entry(t, b, nexte);
	publish(t, w, d, node_new(t, b));
	node_retire(t, old);
}

/* b's keys (those of one node) at the shorter prefix c. */
static void shrink_to(struct tdbe_table *t, struct nbuf *b, unsigned int c)
{
	unsigned int i, cnt = nkeys(b);
	const unsigned char *p;

	if (c >= b->cpl || !cnt) {
		b->cpl = cnt ? b->cpl : c;
		return;
	}
	p = wrec(t, *key_word(b, 0))->data;
	for (i = 0; i < cnt; i++)
		*key_word(b, i) = head_shrink(*key_word(b, i), p, b->cpl, c);
	b->cpl = c;
}

/*
 * The leaf at the end of the path has few entries left: merge it with a
 * neighbour under the same parent when both fit in three quarters of a
 * leaf, so a table whose keys are mostly deleted gives its leaves back.
 * The parent loses the right one's child word and separator (which
 * names a key that stays, inside the merged leaf).  Interior nodes are
 * not merged; they only go when they empty.
 */
static void merge_leaf(struct tdbe_table *t, struct tdbb_walk *w)
{
	struct nbuf *m = &t->osc->l, *r = &t->osc->r, *p = &t->osc->b;
	unsigned int leaf = w->height - 1, d = leaf - 1, at = w->pos[d];
	unsigned int j, i, c;
	uint64_t lo, ro, old = w->node[d];
	const unsigned char *pl, *pr;

	nbuf_load(t, old, p);
	if (p->n < 2)
		return;
	/* merge children j and j + 1: with the right neighbour if both
	 * fit, else with the left one */
	j = at + 1 < p->n ? at : at - 1;
	if (j == at && at > 0 &&
	    wnode(t, p->w[at])->n + wnode(t, p->w[at + 1])->n >
	    TDBB_LEAF_CAP * 3 / 4)
		j = at - 1;
	lo = p->w[j];
	ro = p->w[j + 1];
	nbuf_load(t, lo, m);
	nbuf_load(t, ro, r);
	if (m->n + r->n > TDBB_LEAF_CAP * 3 / 4)
		return;
	/* the longest prefix both share */
	c = m->cpl < r->cpl ? m->cpl : r->cpl;
	if (m->n && r->n) {
		pl = wrec(t, m->w[0])->data;
		pr = wrec(t, r->w[0])->data;
		for (i = 0; i < c && pl[i] == pr[i]; i++)
			;
		c = i;
	} else if (!m->n) {
		c = r->cpl;
	}
	shrink_to(t, m, c);
	shrink_to(t, r, c);
	for (i = 0; i < r->n; i++)
		m->w[m->n + i] = r->w[i];
	m->n += r->n;
	m->cpl = c;
	/* the parent without child j + 1 and its separator */
	p->w[j] = node_new(t, m);
	for (i = j + 1; i + 1 < p->n; i++) {
		p->w[i] = p->w[i + 1];
		p->sep[i] = p->sep[i + 1];
	}
	p->n--;
	if (d == 0 && p->n == 1)
		publish(t, w, 0, p->w[0]);    /* one level less */
	else
		publish(t, w, d, node_new(t, p));
	node_retire(t, old);
	node_retire(t, lo);
	node_retire(t, ro);
}

/* The highest level above `below` whose separator named the key. */
static int sep_level(const int *eq, unsigned int below)
{
	int d;

	for (d = (int)below - 1; d >= 0; d--)
		if (eq[d] >= 0)
			return d;
	return -1;
}

void tdbb_remove(struct tdbe_table *t, const void *key, size_t klen,
		 uint64_t rec)
{
	struct tdbb_walk w;
	int eq[TDBB_MAX_HEIGHT], d, sd;
	unsigned int leaf, pos, i, left;
	struct nbuf *b = &t->osc->b;
	uint64_t old, nexte = 0;

	descend(t, key, klen, &w, eq);
	leaf = w.height - 1;
	pos = w.pos[leaf];
	if (eq[leaf] < 0 ||
	    tdbi_entry_rec(wnode(t, w.node[leaf])->w[pos]) != rec)
		return;        /* not indexed: cannot happen */
	old = w.node[leaf];
	nbuf_load(t, old, b);
	if (b->n > 1 || !leaf) {
		for (i = pos; i + 1 < b->n; i++)
			b->w[i] = b->w[i + 1];
		b->n--;
		publish(t, &w, leaf, node_new(t, b));
		node_retire(t, old);
		if (pos == 0 && b->n)
			nexte = b->w[0];
		left = b->n;       /* fix_sep may reuse the scratch b */
		sd = sep_level(eq, leaf);
		if (nexte && sd >= 0)
			fix_sep(t, &w, (unsigned int)sd, (unsigned int)eq[sd],
				nexte);
		if (leaf && left < TDBB_LEAF_CAP / 4)
			merge_leaf(t, &w);
		return;
	}
	/* The leaf empties: take it out of its parent, and the parent out
	 * of its own when it had no other child. */
	node_retire(t, old);
	for (d = (int)leaf - 1; d >= 0; d--) {
		unsigned int at = w.pos[d];

		old = w.node[d];
		nbuf_load(t, old, b);
		if (b->n == 1) {
			node_retire(t, old);
			continue;
		}
		if (at == 0)
			nexte = b->sep[1];
		for (i = at; i + 1 < b->n; i++)
			b->w[i] = b->w[i + 1];
		for (i = at ? at : 1; i + 1 < b->n; i++)
			b->sep[i] = b->sep[i + 1];
		b->n--;
		if (d == 0 && b->n == 1) {
			publish(t, &w, 0, b->w[0]);   /* one level less */
		} else {
			publish(t, &w, (unsigned int)d, node_new(t, b));
		}
		node_retire(t, old);
		sd = sep_level(eq, (unsigned int)d);
		if (nexte && sd >= 0)
			fix_sep(t, &w, (unsigned int)sd, (unsigned int)eq[sd],
				nexte);
		return;
	}
	/* Every level emptied: the tree is one empty leaf again. */
	b->level = 0;
	b->n = 0;
	b->cpl = 0;
	publish(t, &w, 0, node_new(t, b));
}

/* --- init ----------------------------------------------------------------- */

int tdbb_init(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);
	uint64_t off = tdba_alloc(t, TDBB_NODE_BYTES);
	struct tdbb_node *n;

	if (!off)
		return -ENOSPC;
	n = tdb_ptr(&t->map, off);
	memset(n, 0, TDBB_NODE_BYTES);
	n->magic = TDBB_NODE_MAGIC;
	t->osc = tdbp_alloc(sizeof(*t->osc));
	if (!t->osc) {
		tdba_free(t, off);
		return -ENOMEM;
	}
	h->onodes = 1;
	h->table_flags |= TDB_TBL_F_ORDERED;
	tdb_store_release(&h->oroot, off);
	return tdbb_reserve(t);
}

void tdbb_free(struct tdbe_table *t)
{
	tdbp_free(t->osc);
	t->osc = NULL;
}
