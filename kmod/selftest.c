// SPDX-License-Identifier: GPL-2.0-only
/*
 * selftest.c - tdbk_selftest(): the engine (src/core), run through the
 * kernel platform (platform.c), checked against a reference model, at
 * module load when selftest=1.
 *
 * What it proves, in a private engine (no client can see it):
 *  1. a seeded pseudo-random mix of put (plain and no-overwrite), get
 *     (with big and too-small buffers), zero-copy lookup and del over
 *     NKEYS keys gives exactly the answers the model (ref[]) predicts,
 *     and the table's record count matches the model's;
 *  2. a cursor walk returns every present key exactly once with its
 *     value;
 *  3. filling the table past its small cap (MAX_EXTENTS) ends in -ENOSPC
 *     with every extent backed, leaves the existing records intact, and
 *     after deleting the filler the table takes puts again;
 *  4. dropping the table and freeing the engine returns every extent:
 *     tdbk_mem_used() is back where it was;
 *  5. all of it again on an ordered table (TDBE_TABLE_ORDERED), whose
 *     walks must also come in strictly increasing key order, with the
 *     kernel's RCU under the copy-on-write B+tree (src/core/order.c).
 * The first difference fails the test with a line naming the operation,
 * the key and what was expected; success logs "selftest passed (N ops)".
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/bitmap.h>
#include <linux/sched.h>

#include "core.h"
#include "transport.h"

#define NKEYS		3000U
#define NOPS		30000U
#define VAL_MAX		700U		/* model values: 0..VAL_MAX bytes */
#define KEY_MAX		40U
#define MAX_EXTENTS	4U		/* 8 MiB: phase 1 fits, phase 3 not */
#define FILL_LEN	(64U << 10)
#define FILL_MAX	(MAX_EXTENTS * 64U)	/* far more than can fit */
#define SEED		0x7db5e1f7c0ffee11ULL

struct ref {			/* the model: one per key number */
	u16 len;		/* value length */
	u8 seed;		/* value bytes derive from it */
	bool present;
};

struct st {
	struct tdbe_engine *e;
	struct tdbe_table *t;
	struct ref *ref;
	unsigned long *seen, *fseen;	/* walk: model keys, fillers */
	u8 *buf, *val, *fill;
	struct tdbe_cursor_rec *recs;	/* walk: tdbe_cursor_next_many's */
	unsigned int walks;
	u64 rng;
	unsigned long ops;
	unsigned int present;
	unsigned int nfill;		/* fillers in the table (phase 3) */
	bool ordered;			/* phase 5: an ordered table */
	u8 prev[KEY_MAX];		/* walk: the last key, ordered */
	size_t prevlen;
};

static u64 rnd(struct st *s)	/* xorshift64* */
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dULL;
}

/* Key i: "k<i>." then 0..22 filler bytes, so lengths and hashes vary. */
static size_t make_key(unsigned int i, char *k)
{
	int n = snprintf(k, KEY_MAX, "k%u.", i);
	unsigned int pad = i % 23, j;

	for (j = 0; j < pad; j++)
		k[n + j] = 'a' + (i + j) % 26;
	return n + pad;
}

static int key_number(const u8 *k, size_t klen, unsigned int *i)
{
	unsigned int v = 0;
	size_t p;

	if (klen < 3 || k[0] != 'k')
		return -EINVAL;
	for (p = 1; p < klen && k[p] != '.'; p++) {
		if (k[p] < '0' || k[p] > '9' || v > NKEYS)
			return -EINVAL;
		v = v * 10 + (k[p] - '0');
	}
	if (p == klen || v >= NKEYS)
		return -EINVAL;
	*i = v;
	return 0;
}

static void fill_value(u8 *v, unsigned int key, u8 seed, size_t len)
{
	size_t j;

	for (j = 0; j < len; j++)
		v[j] = (u8)(seed + j * 31 + key);
}

static bool value_ok(const u8 *v, size_t len, unsigned int key,
		     const struct ref *r)
{
	size_t j;

	if (len != r->len)
		return false;
	for (j = 0; j < len; j++)
		if (v[j] != (u8)(r->seed + j * 31 + key))
			return false;
	return true;
}

#define FAIL(s, err, fmt, ...) ({					\
	pr_err("selftest failed after %lu ops: " fmt "\n", (s)->ops,	\
	       ##__VA_ARGS__);						\
	(err);								\
})

static int op_put(struct st *s, unsigned int i, const char *k, size_t klen)
{
	struct ref *r = &s->ref[i];
	bool noow = rnd(s) % 8 == 0;
	u16 len = rnd(s) % (VAL_MAX + 1);
	u8 seed = rnd(s);
	struct tdbe_extack ext = { NULL };
	int err;

	fill_value(s->val, i, seed, len);
	err = tdbe_put(s->t, k, klen, s->val, len,
		       noow ? TDBE_NOOVERWRITE : 0, &ext);
	if (noow && r->present) {
		if (err != -EEXIST)
			return FAIL(s, -EIO, "no-overwrite put of present "
				    "key %u gave %d, not -EEXIST", i, err);
		return 0;
	}
	if (err)
		return FAIL(s, err, "put of key %u (%u bytes) gave %d (%s)",
			    i, len, err, ext.msg ? ext.msg : "");
	if (!r->present)
		s->present++;
	r->present = true;
	r->len = len;
	r->seed = seed;
	return 0;
}

static int op_get(struct st *s, unsigned int i, const char *k, size_t klen)
{
	const struct ref *r = &s->ref[i];
	bool small = rnd(s) % 16 == 0;
	size_t cap = small ? rnd(s) % (VAL_MAX + 1) : VAL_MAX;
	size_t need = 0;
	long n;

	n = tdbe_get(s->t, k, klen, s->buf, cap, &need);
	if (!r->present) {
		if (n != -ENOENT)
			return FAIL(s, -EIO, "get of absent key %u gave %ld",
				    i, n);
		return 0;
	}
	if (r->len > cap) {
		if (n != -ENOBUFS || need != r->len)
			return FAIL(s, -EIO, "get of key %u (%u bytes) into "
				    "%zu gave %ld need %zu, not -ENOBUFS",
				    i, r->len, cap, n, need);
		return 0;
	}
	if (n < 0 || !value_ok(s->buf, n, i, r))
		return FAIL(s, -EIO, "get of key %u gave %ld, wrong value "
			    "(expected %u bytes)", i, n, r->len);
	return 0;
}

static int op_lookup(struct st *s, unsigned int i, const char *k,
		     size_t klen)
{
	const struct ref *r = &s->ref[i];
	const void *v = NULL;
	size_t vlen = 0;
	bool ok;
	int err;

	tdbe_read_lock();
	err = tdbe_lookup(s->t, k, klen, &v, &vlen);
	ok = r->present ? !err && value_ok(v, vlen, i, r) : err == -ENOENT;
	tdbe_read_unlock();
	if (!ok)
		return FAIL(s, -EIO, "lookup of %s key %u gave %d",
			    r->present ? "present" : "absent", i, err);
	return 0;
}

static int op_del(struct st *s, unsigned int i, const char *k, size_t klen)
{
	struct ref *r = &s->ref[i];
	int err = tdbe_del(s->t, k, klen, NULL);

	if (err != (r->present ? 0 : -ENOENT))
		return FAIL(s, -EIO, "del of %s key %u gave %d",
			    r->present ? "present" : "absent", i, err);
	if (r->present)
		s->present--;
	r->present = false;
	return 0;
}

static int check_count(struct st *s)
{
	struct tdbe_table_stat st;

	tdbe_table_stat(s->t, &st);
	if (st.records != s->present + s->nfill)
		return FAIL(s, -EIO, "table has %llu records, model %u + "
			    "%u fillers", st.records, s->present, s->nfill);
	return 0;
}

/* A filler of phase 3: "f<n>" with FILL_LEN bytes of 0x5a. */
static int walk_filler(struct st *s, const u8 *k, size_t klen,
		       const u8 *v, size_t vlen)
{
	unsigned int n = 0;
	size_t p;

	for (p = 1; p < klen && p < 8; p++) {
		if (k[p] < '0' || k[p] > '9')
			break;
		n = n * 10 + (k[p] - '0');
	}
	if (p == 1 || p != klen || n >= s->nfill)
		return FAIL(s, -EIO, "cursor returned a key that was never "
			    "put (%zu bytes)", klen);
	if (test_and_set_bit(n, s->fseen))
		return FAIL(s, -EIO, "cursor returned filler %u twice", n);
	if (vlen != FILL_LEN || memchr_inv(v, 0x5a, vlen))
		return FAIL(s, -EIO, "cursor returned filler %u with a "
			    "wrong value", n);
	return 0;
}

/* Phase 1: the random mix. */
static int mix(struct st *s)
{
	char k[KEY_MAX];
	unsigned int n;
	int err = 0;

	for (n = 0; n < NOPS && !err; n++) {
		unsigned int i = rnd(s) % NKEYS, what = rnd(s) % 100;
		size_t klen = make_key(i, k);

		if (what < 45)
			err = op_put(s, i, k, klen);
		else if (what < 70)
			err = op_get(s, i, k, klen);
		else if (what < 80)
			err = op_lookup(s, i, k, klen);
		else
			err = op_del(s, i, k, klen);
		s->ops++;
		if (!err && n % 4096 == 4095) {
			err = check_count(s);
			cond_resched();
		}
	}
	return err ? err : check_count(s);
}

/*
 * The walk's next record: from tdbe_cursor_next on even walks, from
 * batches of tdbe_cursor_next_many (random sizes) on odd ones.
 */
struct walker {
	struct tdbe_cursor *c;
	bool many;
	int n, i;
};

static int walk_next(struct st *s, struct walker *w, const void **k,
		     size_t *klen, const void **v, size_t *vlen)
{
	if (!w->many)
		return tdbe_cursor_next(w->c, k, klen, v, vlen);
	if (w->i == w->n) {
		w->n = tdbe_cursor_next_many(w->c, s->recs,
					     1 + rnd(s) % TDBE_CURSOR_MANY, 0);
		w->i = 0;
		if (w->n <= 0)
			return w->n;
	}
	*k = s->recs[w->i].key;
	*klen = s->recs[w->i].klen;
	*v = s->recs[w->i].val;
	*vlen = s->recs[w->i].vlen;
	w->i++;
	return 1;
}

/* Phase 2: every present key exactly once, with its value. */
static int walk(struct st *s)
{
	struct walker w = { .many = s->walks++ % 2 };
	const void *k, *v;
	size_t klen, vlen;
	unsigned int i, count = 0, fills = 0;
	int err = 0, rc;

	bitmap_zero(s->seen, NKEYS);
	bitmap_zero(s->fseen, FILL_MAX);
	w.c = tdbe_cursor_open(s->t, &err);
	if (!w.c)
		return FAIL(s, err, "cursor_open gave %d", err);
	s->prevlen = 0;
	while ((rc = walk_next(s, &w, &k, &klen, &v, &vlen)) == 1) {
		s->ops++;
		if (s->ordered) {
			size_t m = min(klen, s->prevlen);
			int c = memcmp(s->prev, k, m);

			if (s->prevlen && (c > 0 || (!c && s->prevlen >= klen))) {
				err = FAIL(s, -EIO, "ordered walk: a key "
					   "(%zu bytes) not after the one "
					   "before it", klen);
				break;
			}
			if (klen <= KEY_MAX) {
				memcpy(s->prev, k, klen);
				s->prevlen = klen;
			}
		}
		if (klen && *(const u8 *)k == 'f') {
			err = walk_filler(s, k, klen, v, vlen);
			if (err)
				break;
			fills++;
			continue;
		}
		if (key_number(k, klen, &i)) {
			err = FAIL(s, -EIO, "cursor returned a key that was "
				   "never put (%zu bytes)", klen);
			break;
		}
		if (test_and_set_bit(i, s->seen)) {
			err = FAIL(s, -EIO, "cursor returned key %u twice", i);
			break;
		}
		if (!s->ref[i].present || !value_ok(v, vlen, i, &s->ref[i])) {
			err = FAIL(s, -EIO, "cursor returned key %u with "
				   "a wrong value or deleted", i);
			break;
		}
		count++;
	}
	tdbe_cursor_close(w.c);
	if (err)
		return err;
	if (rc < 0)
		return FAIL(s, rc, "cursor_next%s gave %d",
			    w.many ? "_many" : "", rc);
	if (count != s->present || fills != s->nfill)
		return FAIL(s, -EIO, "cursor returned %u keys and %u "
			    "fillers, model has %u and %u", count, fills,
			    s->present, s->nfill);
	return 0;
}

/* Phase 3: the cap.  Filler keys are "f<n>", outside the model. */
static int fill(struct st *s)
{
	struct tdbe_table_stat st;
	struct tdbe_extack ext = { NULL };
	char k[KEY_MAX], mk[KEY_MAX];
	unsigned int n, j, first = 0;
	size_t klen;
	int err = 0;

	memset(s->fill, 0x5a, FILL_LEN);
	for (n = 0; n < FILL_MAX; n++) {
		klen = snprintf(k, sizeof(k), "f%u", n);
		err = tdbe_put(s->t, k, klen, s->fill, FILL_LEN, 0, &ext);
		s->ops++;
		if (err)
			break;
		s->nfill++;
	}
	if (err != -ENOSPC)
		return FAIL(s, -EIO, "filling the table gave %d after %u "
			    "puts, not -ENOSPC (%s)", err, n,
			    ext.msg ? ext.msg : "");
	tdbe_table_stat(s->t, &st);
	if (st.extents != MAX_EXTENTS || st.max_extents != MAX_EXTENTS)
		return FAIL(s, -EIO, "full table has %u of %u extents, "
			    "expected %u", st.extents, st.max_extents,
			    MAX_EXTENTS);
	/* a present key must still say -EEXIST to a no-overwrite put */
	while (first < NKEYS && !s->ref[first].present)
		first++;
	if (first < NKEYS) {
		klen = make_key(first, mk);
		err = tdbe_put(s->t, mk, klen, s->fill, FILL_LEN,
			       TDBE_NOOVERWRITE, NULL);
		s->ops++;
		if (err != -EEXIST)
			return FAIL(s, -EIO, "no-overwrite put in a full "
				    "table gave %d, not -EEXIST", err);
	}
	err = check_count(s);
	if (!err)
		err = walk(s);	/* nothing lost or damaged by -ENOSPC */
	if (err)
		return err;
	for (j = 0; j < n; j++) {
		klen = snprintf(k, sizeof(k), "f%u", j);
		err = tdbe_del(s->t, k, klen, NULL);
		s->ops++;
		if (err)
			return FAIL(s, err, "del of filler %u gave %d", j, err);
		s->nfill--;
	}
	/* room again: the deleted fillers are reclaimed on demand */
	klen = snprintf(k, sizeof(k), "f%u", n);
	err = tdbe_put(s->t, k, klen, s->fill, FILL_LEN, 0, &ext);
	s->ops++;
	if (err)
		return FAIL(s, err, "put after emptying a full table gave "
			    "%d (%s)", err, ext.msg ? ext.msg : "");
	err = tdbe_del(s->t, k, klen, NULL);
	s->ops++;
	if (err)
		return FAIL(s, err, "del of the last filler gave %d", err);
	return check_count(s);
}

static int run(struct st *s)
{
	struct tdbe_table_opts opts = {
		.max_extents = MAX_EXTENTS,
		.flags = s->ordered ? TDBE_TABLE_ORDERED : 0,
	};
	struct tdbe_extack ext = { NULL };
	int err = 0;

	s->e = tdbe_engine_new(&err);
	if (!s->e)
		return FAIL(s, err ? err : -ENOMEM, "engine_new gave %d", err);
	err = tdbe_table_create(s->e, "selftest", &opts, &ext);
	if (!err)
		err = tdbe_table_open(s->e, "selftest", &s->t, &ext);
	if (err) {
		FAIL(s, err, "creating the table gave %d (%s)", err,
		     ext.msg ? ext.msg : "");
		goto out;
	}
	err = mix(s);
	if (!err)
		err = walk(s);
	if (!err)
		err = fill(s);
	tdbe_table_close(s->t);
	if (!err) {
		err = tdbe_table_drop(s->e, "selftest", &ext);
		if (err)
			FAIL(s, err, "table_drop gave %d (%s)", err,
			     ext.msg ? ext.msg : "");
	}
out:
	tdbe_engine_free(s->e);
	return err;
}

int tdbk_selftest(void)
{
	unsigned long before = tdbk_mem_used(), after;
	struct st *s;
	int err;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s) {
		pr_err("selftest failed: out of memory for its own state\n");
		return -ENOMEM;
	}
	s->rng = SEED;
	s->ref = kvcalloc(NKEYS, sizeof(*s->ref), GFP_KERNEL);
	s->seen = bitmap_zalloc(NKEYS, GFP_KERNEL);
	s->fseen = bitmap_zalloc(FILL_MAX, GFP_KERNEL);
	s->buf = kvmalloc(VAL_MAX, GFP_KERNEL);
	s->val = kvmalloc(VAL_MAX, GFP_KERNEL);
	s->fill = kvmalloc(FILL_LEN, GFP_KERNEL);
	s->recs = kvmalloc_array(TDBE_CURSOR_MANY, sizeof(*s->recs),
				 GFP_KERNEL);
	if (s->ref && s->seen && s->fseen && s->buf && s->val && s->fill &&
	    s->recs) {
		err = run(s);
		if (!err) {		/* phase 5: the same, ordered */
			memset(s->ref, 0, NKEYS * sizeof(*s->ref));
			s->present = 0;
			s->nfill = 0;
			s->rng = SEED;
			s->ordered = true;
			err = run(s);
		}
	} else {
		pr_err("selftest failed: out of memory for its own state\n");
		err = -ENOMEM;
	}
	after = tdbk_mem_used();
	if (!err && after != before)
		err = FAIL(s, -EIO, "%lu bytes of extents before, %lu after "
			   "the engine was freed", before, after);
	if (!err)
		pr_info("selftest passed (%lu ops, seed %#llx)\n", s->ops,
			SEED);
	kvfree(s->recs);
	kvfree(s->fill);
	kvfree(s->val);
	kvfree(s->buf);
	bitmap_free(s->fseen);
	bitmap_free(s->seen);
	kvfree(s->ref);
	kfree(s);
	return err;
}
