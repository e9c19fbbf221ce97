// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_model.c - randomized model-based test of the engine.
 *
 * Millions of mixed operations (put, put-nooverwrite, get, zero-copy
 * lookup, del, invalid requests, occasional full cursor scans and
 * drop-and-recreate) run against two tables and against a small
 * reference map each; after every operation the engine's answer must
 * equal the model's.  One table has the default cap and grows past many
 * extents; the other has a cap of a few extents and keeps hitting
 * -ENOSPC, after which the table must still equal the model exactly.
 *
 * Usage: test_model [seed ...]
 *   TDB_MODEL_OPS=<n>    operations per seed (default 1000000)
 *   TDB_MODEL_SEEDS=<n>  number of default seeds 1..n (default 4)
 *   TDB_MODEL_SEED=<s>   run just this seed (same as one argument)
 * A failure prints the seed and the operation number; rerun with that
 * seed (and the same TDB_MODEL_OPS) to reproduce the operation stream.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "user.h"

static uint64_t g_seed, g_op;
static const char *g_phase = "";

static void __attribute__((noreturn, format(printf, 1, 2)))
failf(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "\ntest_model: FAILED seed %" PRIu64 " op %" PRIu64
		" (%s): ", g_seed, g_op, g_phase);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nreproduce: TDB_MODEL_OPS=%s %s %" PRIu64 "\n",
		getenv("TDB_MODEL_OPS") ? getenv("TDB_MODEL_OPS") : "1000000",
		"test_model", g_seed);
	fflush(stderr);
	abort();
}

#define CHECK(cond, ...) do { if (!(cond)) failf(__VA_ARGS__); } while (0)

/* ------------------------------------------------------------------ */
/* PRNG (xoshiro256**) and value bytes                                  */

struct rng { uint64_t s[4]; };

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_init(struct rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rnd(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
	s[2] ^= t; s[3] = rotl(s[3], 45);
	return res;
}

static uint64_t below(struct rng *r, uint64_t n) { return rnd(r) % n; }

/* Value bytes are a function of (vseed, length). */
static void gen_value(uint8_t *p, size_t n, uint64_t vseed)
{
	uint64_t x = vseed * 0x9e3779b97f4a7c15ull + n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	x ^= x << 13; x ^= x >> 7; x ^= x << 17;
	for (; i < n; i++) {
		p[i] = (uint8_t)x;
		x >>= 8;
	}
}

static uint8_t *g_vbuf;       /* TDBE_VALUE_MAX + 64 scratch */
static uint8_t *g_getbuf;     /* TDBE_VALUE_MAX + 64 for tdbe_get */

static int value_equals(const void *got, size_t glen, size_t vlen,
			uint64_t vseed)
{
	if (glen != vlen)
		return 0;
	gen_value(g_vbuf, vlen, vseed);
	return vlen == 0 || memcmp(got, g_vbuf, vlen) == 0;
}

/* ------------------------------------------------------------------ */
/* keys                                                                 */

enum { K_SMALL, K_ONE, K_TWO, K_MED, K_MAXM1, K_MAX };

#define SMALL_IDS 60000u

/* Key bytes for (class, id); lengths are disjoint between classes. */
static size_t gen_key(uint8_t *k, int cls, uint32_t id)
{
	uint64_t h = id * 0xff51afd7ed558ccdull + cls;
	size_t len, i;

	h ^= h >> 33;
	switch (cls) {
	case K_ONE:
		k[0] = (uint8_t)id;
		return 1;
	case K_TWO:
		k[0] = (uint8_t)id;
		k[1] = (uint8_t)(id >> 8);
		return 2;
	case K_SMALL:
		len = 4 + h % 37;             /* 4..40 */
		break;
	case K_MED:
		len = 41 + h % (TDBE_KEY_MAX - 2 - 41 + 1);   /* 41..KEY_MAX-2 */
		break;
	case K_MAXM1:
	case K_MAX:
		/* Long common prefix, id at the end. */
		len = cls == K_MAX ? TDBE_KEY_MAX : TDBE_KEY_MAX - 1;
		memset(k, 0x5a, len - 4);
		memcpy(k + len - 4, &id, 4);
		return len;
	default:
		abort();
	}
	memcpy(k, &id, 4);
	for (i = 4; i < len; i++)
		k[i] = (uint8_t)(h >> ((i & 7) * 8)) ^ (uint8_t)i;
	return len;
}

static size_t pick_key(struct rng *r, uint8_t *k)
{
	uint64_t x = below(r, 1000);

	if (x < 30)
		return gen_key(k, K_ONE, below(r, 256));
	if (x < 60)
		return gen_key(k, K_TWO, below(r, 4096));
	if (x < 85)
		return gen_key(k, K_MED, below(r, 300));
	if (x < 90)
		return gen_key(k, K_MAXM1, below(r, 64));
	if (x < 95)
		return gen_key(k, K_MAX, below(r, 64));
	return gen_key(k, K_SMALL, below(r, SMALL_IDS));
}

/* Value sizes biased to the edges; big ones rare. */
static size_t pick_vlen(struct rng *r, int capped)
{
	uint64_t x = below(r, 10000);

	if (x < 600)
		return 0;
	if (x < 1100)
		return 1;
	if (x < 1200)
		return 2;
	if (x < (capped ? 9850u : 9980u)) {
		if (capped && x >= 6000)
			return 200 + below(r, 4000);
		if (x >= 9000)
			return 65 + below(r, 4096 - 64);
		return 3 + below(r, 62);
	}
	x = below(r, 10);
	if (x == 0)
		return TDBE_VALUE_MAX;
	if (x == 1)
		return TDBE_VALUE_MAX - 1;
	return 4097 + below(r, TDBE_VALUE_MAX - 4097);
}

/* ------------------------------------------------------------------ */
/* reference map: open addressing, linear probing, backward-shift delete */

struct slot {
	uint64_t h;             /* 0 = empty */
	uint8_t *key;
	uint32_t klen;
	uint32_t vlen;
	uint64_t vseed;
	uint64_t mark;          /* scan generation */
};

struct ref {
	struct slot *s;
	size_t cap, n;          /* cap is a power of 2 */
	uint64_t bytes;         /* sum of klen + vlen */
};

static uint64_t khash(const void *k, size_t n)
{
	const uint8_t *p = k;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	return h | 1;
}

static void ref_init(struct ref *m)
{
	m->cap = 1024;
	m->n = 0;
	m->bytes = 0;
	m->s = calloc(m->cap, sizeof(*m->s));
	CHECK(m->s, "out of memory");
}

static void ref_clear(struct ref *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		free(m->s[i].key);
	free(m->s);
	ref_init(m);
}

static struct slot *ref_find(struct ref *m, const void *k, size_t kl)
{
	uint64_t h = khash(k, kl);
	size_t i = h & (m->cap - 1);

	for (;; i = (i + 1) & (m->cap - 1)) {
		struct slot *s = &m->s[i];

		if (!s->h)
			return NULL;
		if (s->h == h && s->klen == kl && !memcmp(s->key, k, kl))
			return s;
	}
}

static void ref_grow(struct ref *m)
{
	struct slot *old = m->s;
	size_t oc = m->cap, i;

	m->cap *= 2;
	m->s = calloc(m->cap, sizeof(*m->s));
	CHECK(m->s, "out of memory");
	for (i = 0; i < oc; i++) {
		size_t j;

		if (!old[i].h)
			continue;
		for (j = old[i].h & (m->cap - 1); m->s[j].h;
		     j = (j + 1) & (m->cap - 1))
			;
		m->s[j] = old[i];
	}
	free(old);
}

static void ref_put(struct ref *m, const void *k, size_t kl, size_t vl,
		    uint64_t vseed)
{
	struct slot *s = ref_find(m, k, kl);
	size_t i;

	if (s) {
		m->bytes += vl;
		m->bytes -= s->vlen;
		s->vlen = vl;
		s->vseed = vseed;
		return;
	}
	if ((m->n + 1) * 2 > m->cap)
		ref_grow(m);
	{
		uint64_t h = khash(k, kl);

		for (i = h & (m->cap - 1); m->s[i].h; i = (i + 1) & (m->cap - 1))
			;
		s = &m->s[i];
		s->h = h;
	}
	s->key = malloc(kl);
	CHECK(s->key, "out of memory");
	memcpy(s->key, k, kl);
	s->klen = kl;
	s->vlen = vl;
	s->vseed = vseed;
	s->mark = 0;
	m->n++;
	m->bytes += kl + vl;
}

static void ref_del(struct ref *m, struct slot *s)
{
	size_t mask = m->cap - 1, i = s - m->s, j = i;

	m->bytes -= s->klen + s->vlen;
	m->n--;
	free(s->key);
	/* Backward-shift deletion. */
	for (;;) {
		size_t home;

		m->s[i].h = 0;
		m->s[i].key = NULL;
		for (;;) {
			j = (j + 1) & mask;
			if (!m->s[j].h)
				return;
			home = m->s[j].h & mask;
			/* Move j to i if home is not cyclically in (i, j]. */
			if (i <= j ? (home <= i || home > j)
				   : (home <= i && home > j))
				break;
		}
		m->s[i] = m->s[j];
		i = j;
	}
}

/* ------------------------------------------------------------------ */
/* the test                                                             */

struct tab {
	const char *name;
	unsigned int max_extents;   /* 0 = default */
	struct tdbe_table *t;
	struct ref m;
	uint64_t scan_gen;
	/* statistics */
	uint64_t ops, enospc, scans, drops, max_ext_seen, full_verifies;
	uint64_t last_full_verify;
};

static struct tdbe_engine *g_e;

static void tab_open(struct tab *tb)
{
	struct tdbe_table_opts o = { .max_extents = tb->max_extents };
	struct tdbe_extack ext = { 0 };
	int rc;

	rc = tdbe_table_create(g_e, tb->name, &o, &ext);
	CHECK(rc == 0, "create %s: %d %s (%s)", tb->name, rc,
	      tdbe_strerror(rc), ext.msg ? ext.msg : "");
	rc = tdbe_table_open(g_e, tb->name, &tb->t, &ext);
	CHECK(rc == 0, "open %s: %d (%s)", tb->name, rc, ext.msg ? ext.msg : "");
}

static void tab_drop(struct tab *tb)
{
	struct tdbe_extack ext = { 0 };
	int rc = tdbe_table_drop(g_e, tb->name, &ext);

	CHECK(rc == 0, "drop %s: %d (%s)", tb->name, rc, ext.msg ? ext.msg : "");
	tdbe_table_close(tb->t);
	tb->t = NULL;
	ref_clear(&tb->m);
	tb->drops++;
}

static void check_stat(struct tab *tb)
{
	struct tdbe_table_stat st;

	tdbe_table_stat(tb->t, &st);
	CHECK(st.records == tb->m.n, "%s: stat.records %" PRIu64
	      ", model %zu", tb->name, st.records, tb->m.n);
	CHECK(st.bytes_used == tb->m.bytes, "%s: stat.bytes_used %" PRIu64
	      ", model %" PRIu64, tb->name, st.bytes_used, tb->m.bytes);
	CHECK(st.extents <= st.max_extents, "%s: extents %u > max %u",
	      tb->name, st.extents, st.max_extents);
	CHECK(st.extents >= 1, "%s: no extents", tb->name);
	CHECK(st.bytes_allocated >= st.bytes_used, "%s: bytes_allocated %"
	      PRIu64 " < bytes_used %" PRIu64, tb->name, st.bytes_allocated,
	      st.bytes_used);
	CHECK(st.page_size == 4096 || st.page_size == 2097152,
	      "%s: page_size %" PRIu64, tb->name, st.page_size);
	CHECK(st.max_extents == (tb->max_extents ? tb->max_extents
						 : TDBE_EXTENTS_DEFAULT),
	      "%s: max_extents %u", tb->name, st.max_extents);
	if (st.extents > tb->max_ext_seen)
		tb->max_ext_seen = st.extents;
}

static void check_get(struct tab *tb, const void *k, size_t kl)
{
	struct slot *s = ref_find(&tb->m, k, kl);
	size_t need = 0;
	long n = tdbe_get(tb->t, k, kl, g_getbuf, TDBE_VALUE_MAX, &need);

	if (!s) {
		CHECK(n == -ENOENT, "%s: get of absent key (klen %zu): %ld",
		      tb->name, kl, n);
		return;
	}
	CHECK(n == (long)s->vlen, "%s: get (klen %zu): %ld, model vlen %u",
	      tb->name, kl, n, s->vlen);
	CHECK(value_equals(g_getbuf, n, s->vlen, s->vseed),
	      "%s: get (klen %zu, vlen %ld): wrong value bytes", tb->name, kl, n);
}

/* Every model record via get, and one cursor scan: exactly the model. */
static void full_verify(struct tab *tb)
{
	struct tdbe_cursor *c;
	const void *kp, *vp;
	size_t kl, vl, i, count = 0;
	int err = 0, rc;
	uint64_t gen = ++tb->scan_gen;

	check_stat(tb);
	for (i = 0; i < tb->m.cap; i++)
		if (tb->m.s[i].h)
			check_get(tb, tb->m.s[i].key, tb->m.s[i].klen);

	c = tdbe_cursor_open(tb->t, &err);
	CHECK(c, "%s: cursor_open: %d", tb->name, err);
	while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1) {
		struct slot *s = ref_find(&tb->m, kp, kl);

		CHECK(s, "%s: cursor returned a key not in the model (klen %zu)",
		      tb->name, kl);
		CHECK(s->mark != gen, "%s: cursor returned a key twice (klen %zu)",
		      tb->name, kl);
		s->mark = gen;
		CHECK(value_equals(vp, vl, s->vlen, s->vseed),
		      "%s: cursor value differs (klen %zu vlen %zu, model %u)",
		      tb->name, kl, vl, s->vlen);
		count++;
	}
	CHECK(rc == 0, "%s: cursor_next: %d", tb->name, rc);
	CHECK(count == tb->m.n, "%s: cursor returned %zu records, model %zu",
	      tb->name, count, tb->m.n);
	tdbe_cursor_close(c);
	tb->scans++;
	tb->full_verifies++;
	tb->last_full_verify = g_op;
}

static uint8_t g_key[TDBE_KEY_MAX + 16];

static void do_put(struct tab *tb, struct rng *r, unsigned int flags)
{
	size_t kl = pick_key(r, g_key);
	size_t vl = pick_vlen(r, tb->max_extents != 0);
	uint64_t vseed = rnd(r);
	struct slot *s = ref_find(&tb->m, g_key, kl);
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	int rc;

	gen_value(g_vbuf, vl, vseed);
	rc = tdbe_put(tb->t, g_key, kl, g_vbuf, vl, flags, &ext);
	if ((flags & TDBE_NOOVERWRITE) && s) {
		CHECK(rc == -EEXIST, "%s: put-nooverwrite of present key "
		      "(klen %zu): %d", tb->name, kl, rc);
		CHECK(ext.msg, "%s: -EEXIST without extack message", tb->name);
		check_get(tb, g_key, kl);
		return;
	}
	if (rc == -ENOSPC) {
		tb->enospc++;
		CHECK(ext.msg, "%s: -ENOSPC without extack message", tb->name);
		tdbe_table_stat(tb->t, &st);
		CHECK(st.extents == st.max_extents, "%s: -ENOSPC with %u of %u "
		      "extents", tb->name, st.extents, st.max_extents);
		/* Heuristic leak check: a small record must fit in a table
		 * whose live + pending memory is under 1/8 of its cap. */
		CHECK(kl + vl > 8192 || st.bytes_allocated + st.bytes_pending >=
		      (uint64_t)st.max_extents * TDBP_EXTENT_SIZE / 8,
		      "%s: -ENOSPC for a %zu-byte record with only %" PRIu64
		      " bytes allocated + %" PRIu64 " pending of %u extents",
		      tb->name, kl + vl, st.bytes_allocated, st.bytes_pending,
		      st.max_extents);
		/* The table is unchanged: this key, the stats, and now and
		 * then everything. */
		check_get(tb, g_key, kl);
		check_stat(tb);
		if (tb->enospc == 1 || g_op - tb->last_full_verify > 50000)
			full_verify(tb);
		return;
	}
	CHECK(rc == 0, "%s: put (klen %zu vlen %zu flags %u): %d %s (%s)",
	      tb->name, kl, vl, flags, rc, tdbe_strerror(rc),
	      ext.msg ? ext.msg : "");
	ref_put(&tb->m, g_key, kl, vl, vseed);
}

static void do_get(struct tab *tb, struct rng *r)
{
	size_t kl = pick_key(r, g_key);
	struct slot *s;
	size_t need, cap;
	long n;

	if (below(r, 10)) {
		check_get(tb, g_key, kl);
		return;
	}
	/* A buffer that may be too small. */
	s = ref_find(&tb->m, g_key, kl);
	cap = s && s->vlen ? below(r, s->vlen + 1) : below(r, 4);
	need = 0;
	n = tdbe_get(tb->t, g_key, kl, g_getbuf, cap, &need);
	if (!s) {
		CHECK(n == -ENOENT, "%s: get absent (cap %zu): %ld", tb->name,
		      cap, n);
	} else if (cap < s->vlen) {
		CHECK(n == -ENOBUFS && need == s->vlen, "%s: get with cap %zu "
		      "< vlen %u: %ld, need %zu", tb->name, cap, s->vlen, n, need);
	} else {
		CHECK(n == (long)s->vlen && value_equals(g_getbuf, n, s->vlen,
							 s->vseed),
		      "%s: get with exact cap %zu: %ld", tb->name, cap, n);
	}
}

static void do_lookup(struct tab *tb, struct rng *r)
{
	size_t kl = pick_key(r, g_key);
	struct slot *s = ref_find(&tb->m, g_key, kl);
	const void *vp = NULL;
	size_t vl = 0;
	int rc, ok;

	tdbe_read_lock();
	rc = tdbe_lookup(tb->t, g_key, kl, &vp, &vl);
	ok = rc == 0 && s && value_equals(vp, vl, s->vlen, s->vseed);
	tdbe_read_unlock();
	if (!s)
		CHECK(rc == -ENOENT, "%s: lookup absent: %d", tb->name, rc);
	else
		CHECK(ok, "%s: lookup (klen %zu): rc %d vlen %zu, model %u",
		      tb->name, kl, rc, vl, s->vlen);
}

/* tdbe_lookup_many over 1..40 keys (groups and a partial group), some
 * present, some absent, some invalid: each answer must match the model. */
#define MANY_MAX 40
static uint8_t g_many_keys[MANY_MAX][TDBE_KEY_MAX + 16];

static void do_lookup_many(struct tab *tb, struct rng *r)
{
	struct tdbe_lookup_req req[MANY_MAX];
	struct slot *model[MANY_MAX];
	unsigned int n = 1 + (unsigned int)below(r, MANY_MAX), i, found = 0;
	unsigned int got;

	for (i = 0; i < n; i++) {
		size_t kl = pick_key(r, g_many_keys[i]);

		if (below(r, 50) == 0)
			kl = below(r, 2) ? 0 : TDBE_KEY_MAX + 1;   /* invalid */
		req[i].key = g_many_keys[i];
		req[i].klen = kl;
		req[i].err = 12345;
		model[i] = kl && kl <= TDBE_KEY_MAX
				   ? ref_find(&tb->m, g_many_keys[i], kl) : NULL;
		found += model[i] != NULL;
	}
	tdbe_read_lock();
	got = tdbe_lookup_many(tb->t, req, n);
	for (i = 0; i < n; i++) {
		int want = !req[i].klen ? -EINVAL
			   : req[i].klen > TDBE_KEY_MAX ? -E2BIG
			   : model[i] ? 0 : -ENOENT;

		if (req[i].err != want) {
			tdbe_read_unlock();
			failf("%s: lookup_many #%u of %u (klen %zu): err %d, "
			      "want %d", tb->name, i, n, req[i].klen,
			      req[i].err, want);
		}
		if (model[i] && !value_equals(req[i].val, req[i].vlen,
					      model[i]->vlen, model[i]->vseed)) {
			tdbe_read_unlock();
			failf("%s: lookup_many #%u of %u: wrong value (vlen "
			      "%zu, model %u)", tb->name, i, n, req[i].vlen,
			      model[i]->vlen);
		}
	}
	tdbe_read_unlock();
	CHECK(got == found, "%s: lookup_many found %u, model %u", tb->name,
	      got, found);
}

static void do_del(struct tab *tb, struct rng *r)
{
	size_t kl = pick_key(r, g_key);
	struct slot *s = ref_find(&tb->m, g_key, kl);
	struct tdbe_extack ext = { 0 };
	int rc = tdbe_del(tb->t, g_key, kl, &ext);

	if (s) {
		CHECK(rc == 0, "%s: del of present key (klen %zu): %d (%s)",
		      tb->name, kl, rc, ext.msg ? ext.msg : "");
		ref_del(&tb->m, s);
	} else {
		CHECK(rc == -ENOENT, "%s: del of absent key: %d", tb->name, rc);
	}
}

static void do_invalid(struct tab *tb, struct rng *r)
{
	struct tdbe_extack ext = { 0 };
	size_t kl;
	int rc;

	switch (below(r, 4)) {
	case 0:
		rc = tdbe_put(tb->t, g_key, 0, g_vbuf, 5, 0, &ext);
		CHECK(rc == -EINVAL || rc == -E2BIG, "put klen 0: %d", rc);
		break;
	case 1:
		memset(g_key, 0x5a, TDBE_KEY_MAX + 1);
		rc = tdbe_put(tb->t, g_key, TDBE_KEY_MAX + 1, g_vbuf, 5, 0, &ext);
		CHECK(rc == -EINVAL || rc == -E2BIG, "put klen max+1: %d", rc);
		break;
	case 2:
		kl = pick_key(r, g_key);
		rc = tdbe_put(tb->t, g_key, kl, g_vbuf, TDBE_VALUE_MAX + 1,
			      below(r, 2) ? TDBE_NOOVERWRITE : 0, &ext);
		CHECK(rc == -EINVAL || rc == -E2BIG, "put vlen max+1: %d", rc);
		CHECK(ext.msg, "no extack message");
		check_get(tb, g_key, kl);
		break;
	default:
		rc = tdbe_del(tb->t, g_key, 0, &ext);
		CHECK(rc == -EINVAL || rc == -E2BIG || rc == -ENOENT,
		      "del klen 0: %d", rc);
		return;
	}
	CHECK(ext.msg, "invalid request without extack message");
}

static void one_op(struct tab *tb, struct rng *r)
{
	uint64_t x = below(r, 1000);
	int capped = tb->max_extents != 0;

	tb->ops++;
	/* The capped table gets more puts, so that it fills up. */
	if (x < (capped ? 450u : 330u))
		do_put(tb, r, 0);
	else if (x < (capped ? 550u : 430u))
		do_put(tb, r, TDBE_NOOVERWRITE);
	else if (x < 730)
		do_get(tb, r);
	else if (x < 760)
		do_lookup(tb, r);
	else if (x < 780)
		do_lookup_many(tb, r);
	else if (x < 990)
		do_del(tb, r);
	else
		do_invalid(tb, r);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_seed(uint64_t seed, uint64_t nops)
{
	struct tab main_t = { .name = "model-main", .max_extents = 0 };
	struct tab cap_t = { .name = "model-capped", .max_extents = 3 };
	struct tdbe_table_stat st;
	struct rng r;
	int err = 0;
	double t0 = now();

	g_seed = seed;
	g_op = 0;
	g_phase = "setup";
	rng_init(&r, seed);
	g_e = tdbe_engine_new(&err);
	CHECK(g_e, "engine_new: %d", err);
	ref_init(&main_t.m);
	ref_init(&cap_t.m);
	tab_open(&main_t);
	tab_open(&cap_t);

	for (g_op = 1; g_op <= nops; g_op++) {
		/* ~85% of operations on the big table. */
		struct tab *tb = below(&r, 100) < 85 ? &main_t : &cap_t;

		g_phase = tb->name;
		one_op(tb, &r);
		if ((g_op & 4095) == 0)
			check_stat(tb);
		if (below(&r, 100000) == 0) {
			g_phase = "scan";
			full_verify(tb);
		}
		/* Drop and re-create: rarely for the big table, a bit more
		 * often for the capped one (which refills quickly). */
		if (below(&r, tb == &main_t ? 400000 : 150000) == 0) {
			g_phase = "drop";
			full_verify(tb);
			tab_drop(tb);
			tab_open(tb);
			check_stat(tb);
		}
	}
	g_phase = "final";
	full_verify(&main_t);
	full_verify(&cap_t);
	tdbe_table_stat(main_t.t, &st);
	if (st.extents > main_t.max_ext_seen)
		main_t.max_ext_seen = st.extents;

	printf("seed %" PRIu64 ": %" PRIu64 " ops in %.1f s\n", seed, nops,
	       now() - t0);
	printf("  main:   %" PRIu64 " ops, %zu records now, max extents %" PRIu64
	       ", %" PRIu64 " scans, %" PRIu64 " drops\n", main_t.ops,
	       main_t.m.n, main_t.max_ext_seen, main_t.scans, main_t.drops);
	printf("  capped: %" PRIu64 " ops, %zu records now, max extents %" PRIu64
	       ", %" PRIu64 " ENOSPC, %" PRIu64 " full verifies, %" PRIu64
	       " drops\n", cap_t.ops, cap_t.m.n, cap_t.max_ext_seen,
	       cap_t.enospc, cap_t.full_verifies, cap_t.drops);
	fflush(stdout);

	/* The run must have exercised what it claims to. */
	if (nops >= 300000) {
		CHECK(main_t.max_ext_seen >= 8, "main table never grew past 8 "
		      "extents (max %" PRIu64 ")", main_t.max_ext_seen);
		CHECK(cap_t.enospc > 0, "capped table never hit -ENOSPC");
	}

	tdbe_table_close(main_t.t);
	tdbe_table_close(cap_t.t);
	tdbe_engine_free(g_e);
	g_e = NULL;
	ref_clear(&main_t.m);
	ref_clear(&cap_t.m);
	free(main_t.m.s);
	free(cap_t.m.s);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

int main(int argc, char **argv)
{
	uint64_t nops = env_u64("TDB_MODEL_OPS", 1000000);
	uint64_t nseeds = env_u64("TDB_MODEL_SEEDS", 4);
	double t0 = now();
	int i;

	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_ERR);
	g_vbuf = malloc(TDBE_VALUE_MAX + 64);
	g_getbuf = malloc(TDBE_VALUE_MAX + 64);
	CHECK(g_vbuf && g_getbuf, "out of memory");
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (argc > 1) {
		for (i = 1; i < argc; i++)
			run_seed(strtoull(argv[i], NULL, 0), nops);
	} else if (getenv("TDB_MODEL_SEED") && *getenv("TDB_MODEL_SEED")) {
		run_seed(env_u64("TDB_MODEL_SEED", 1), nops);
	} else {
		uint64_t s;

		for (s = 1; s <= nseeds; s++)
			run_seed(s, nops);
	}
	printf("test_model: all passed in %.1f s\n", now() - t0);
	free(g_vbuf);
	free(g_getbuf);
	return 0;
}
