// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ordered.c - ordered tables through libtdbclient against a real
 * tdbd (issue 28): range scans through the rings (tdbc_scan_range,
 * tdbc_scan_submit_range, a socket-only connection, snapshots) and
 * through the zero-copy maps (tdbc_map_range), checked against a sorted
 * reference, and under other processes' writes.
 *
 * Parts (TDB_ITEST_ONLY=name runs one):
 *  model    one process writes an ordered table (puts, replaces,
 *           deletes, small transactions) whose keys are chosen to be
 *           awkward: keys that are prefixes of others ("u:1", "u:12"),
 *           0x00 and 0xff bytes, keys of 4096 bytes; the table grows past
 *           its first 2 MiB extent with values of up to 1 KiB.  After
 *           each stage, ranges of every kind (either side open, a key
 *           present, absent or special, every flag, limits) are read
 *           through each path (a map walk of a connection without maps
 *           too) and compared record for record (key,
 *           value, order, exact count) with a sorted array; empty and
 *           single-key ranges, from after to (-EINVAL), bad bounds and
 *           a hash table (-EOPNOTSUPP, rings and map) explicitly.  The
 *           maps must serve tdbc_map_range: a burst of map walks costs
 *           tdbd (almost) no request.
 *  resume   a second process replaces, inserts and deletes keys (alone
 *           and in transactions) between and beside 3000 keys that stay
 *           present, while ranges of 500-2000 keys are read forward and
 *           in reverse, through the rings (batches of at most 256, each
 *           resumed by the owner's cursor) and the maps (parts of 64):
 *           every key present throughout is returned exactly once, no
 *           key twice, all in order and in range, every value whole.
 *  hostile  two reader processes walk map ranges while a writer inserts
 *           and deletes keys of changing sizes as fast as it can and
 *           puts and deletes groups of 32 keys in transactions: no crash,
 *           no key out of order, twice or out of range, no torn value,
 *           and a range over one group (one part) sees the group whole
 *           or not at all (but in a walk that returned -ESTALE: what
 *           fn saw in its last part may have been overwritten,
 *           client.h).  The readers stay mapped throughout.
 *  benched  part hostile against a tdbd with a 1 ms reader-lease: the
 *           readers are expired and benched all the time, and a walk
 *           fn saw anything wrong in must have said -ESTALE.
 *  stale    a map walk whose table another connection drops and makes
 *           again (same keys, new values) after 100 records: the rest
 *           comes through the rings from the last key fn saw, each key
 *           once, in order, ending on the new table's values.
 *  lease    a map walk whose fn, on its first record, makes tdbd wait
 *           for the reader past its reader-lease (another connection
 *           deletes 6000 keys): tdbd stops waiting, and the walk ends
 *           with -ESTALE, saying so.
 *  txn      range reads in transactions (tdbc_scan_range_txn): a key
 *           added, deleted or written again in the span read (forward,
 *           reverse, what a limited read sent; a hash table read whole)
 *           fails the commit with -ESTALE, a change outside it does not;
 *           a range the transaction wrote in is refused.
 *  touch    map walks of a bounded LRU ordered table are uses (TOUCH
 *           hints, as for mapped gets): after 100 walks of half its
 *           keys and puts of as many new ones, the keys walked stay.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon g_d;

/* --- keys, values, the reference ----------------------------------------- */

/* The order of an ordered table: bytewise, shorter first. */
static int kcmp(const void *a, size_t al, const void *b, size_t bl)
{
	int d = memcmp(a, b, al < bl ? al : bl);

	if (d)
		return d;
	return al < bl ? -1 : al > bl;
}

/* A value: gen (4 bytes), a hash of the key (8 bytes), then bytes that
 * follow from both; any length from 12. */
#define VAL_MIN 12
#define VAL_MAX 1024

static size_t val_make(unsigned char *buf, const void *k, size_t kl,
		       uint32_t gen, size_t vl)
{
	uint64_t h = h_fnv(0, k, kl);
	size_t i;

	memcpy(buf, &gen, 4);
	memcpy(buf + 4, &h, 8);
	for (i = VAL_MIN; i < vl; i++)
		buf[i] = (unsigned char)(h >> (i % 8 * 8)) ^ (unsigned char)(gen + i);
	return vl;
}

/* NULL if v is a value val_make wrote for this key (its gen in *gen). */
static const char *val_bad(const void *k, size_t kl, const void *v,
			   size_t vl, uint32_t *gen)
{
	unsigned char want[VAL_MAX];

	if (vl < VAL_MIN || vl > VAL_MAX)
		return "a value of an impossible length";
	memcpy(gen, v, 4);
	val_make(want, k, kl, *gen, vl);
	if (memcmp(want + 4, (const unsigned char *)v + 4, 8))
		return "another key's value";
	if (memcmp(want, v, vl))
		return "a torn value";
	return NULL;
}

struct ent {
	unsigned char *k;
	size_t kl, vl;
	uint32_t gen;
};

struct ref {
	struct ent *v;
	size_t n, cap;
};

/* The first entry not before k; *found if it is k. */
static size_t ref_find(const struct ref *r, const void *k, size_t kl,
		       bool *found)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (kcmp(r->v[mid].k, r->v[mid].kl, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < r->n && !kcmp(r->v[lo].k, r->v[lo].kl, k, kl);
	return lo;
}

static void ref_put(struct ref *r, const void *k, size_t kl, uint32_t gen,
		    size_t vl)
{
	bool found;
	size_t i = ref_find(r, k, kl, &found);

	if (!found) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 1024;
			r->v = realloc(r->v, r->cap * sizeof(*r->v));
			CHECK(r->v, "out of memory");
		}
		memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
		r->n++;
		r->v[i].k = malloc(kl);
		CHECK(r->v[i].k, "out of memory");
		memcpy(r->v[i].k, k, kl);
		r->v[i].kl = kl;
	}
	r->v[i].gen = gen;
	r->v[i].vl = vl;
}

static void ref_del(struct ref *r, const void *k, size_t kl)
{
	bool found;
	size_t i = ref_find(r, k, kl, &found);

	if (!found)
		return;
	free(r->v[i].k);
	memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
	r->n--;
}

static bool in_range(const struct tdbc_range *r, const void *k, size_t kl)
{
	int c;

	if (r->from) {
		c = kcmp(k, kl, r->from, r->from_len);
		if (c < 0 || (c == 0 && (r->flags & TDBC_RANGE_FROM_EXCL)))
			return false;
	}
	if (r->to) {
		c = kcmp(k, kl, r->to, r->to_len);
		if (c > 0 || (c == 0 && !(r->flags & TDBC_RANGE_TO_INCL)))
			return false;
	}
	return true;
}

/* Is a before b in the walk's order? */
static bool walk_before(const struct tdbc_range *r, const void *a, size_t al,
			const void *b, size_t bl)
{
	int c = kcmp(a, al, b, bl);

	return r->flags & TDBC_RANGE_REVERSE ? c > 0 : c < 0;
}

/* "6b3a..." of a key (its first 24 bytes), for messages. */
static const char *khex(const void *k, size_t kl)
{
	static char buf[4][96];
	static int which;
	char *b = buf[which++ % 4];
	size_t i;

	for (i = 0; i < kl && i < 24; i++)
		snprintf(b + 2 * i, 3, "%02x", ((const unsigned char *)k)[i]);
	if (kl > 24)
		snprintf(b + 48, 40, "..(%zu)", kl);
	return b;
}

static const char *rdesc(const struct tdbc_range *r, uint64_t limit)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "range [%s, %s] flags %#x limit %llu",
		 r->from ? khex(r->from, r->from_len) : "-",
		 r->to ? khex(r->to, r->to_len) : "-", r->flags,
		 (unsigned long long)limit);
	return buf;
}

/* --- comparing a walk with the reference ---------------------------------- */

struct cmp {
	const struct ref *ref;
	const struct tdbc_range *r;
	size_t *idx;            /* the expected entries, in order */
	size_t n, i;
	char bad[512];
};

static int cmp_rec(void *arg, const void *k, size_t kl, const void *v,
		   size_t vl, uint64_t version)
{
	struct cmp *x = arg;
	const struct ent *e;
	unsigned char want[VAL_MAX];

	(void)version;
	if (x->i >= x->n) {
		snprintf(x->bad, sizeof(x->bad), "record %zu (%s) past the "
			 "%zu expected", x->i, khex(k, kl), x->n);
		return 1;
	}
	e = &x->ref->v[x->idx[x->i]];
	if (kcmp(k, kl, e->k, e->kl)) {
		snprintf(x->bad, sizeof(x->bad), "record %zu is %s, want %s",
			 x->i, khex(k, kl), khex(e->k, e->kl));
		return 1;
	}
	val_make(want, e->k, e->kl, e->gen, e->vl);
	if (vl != e->vl || memcmp(v, want, vl)) {
		snprintf(x->bad, sizeof(x->bad), "record %zu (%s): a wrong "
			 "value (%zu bytes, want %zu)", x->i, khex(k, kl), vl,
			 e->vl);
		return 1;
	}
	x->i++;
	return 0;
}

static int cmp_rec_stop(void *arg, const void *k, size_t kl, const void *v,
			size_t vl, uint64_t version)
{
	(void)arg; (void)k; (void)kl; (void)v; (void)vl; (void)version;
	return 42;
}

static void expect(const struct ref *ref, const struct tdbc_range *r,
		   uint64_t limit, struct cmp *x)
{
	size_t i;

	memset(x, 0, sizeof(*x));
	x->ref = ref;
	x->r = r;
	x->idx = malloc((ref->n + 1) * sizeof(*x->idx));
	CHECK(x->idx, "out of memory");
	for (i = 0; i < ref->n; i++)
		if (in_range(r, ref->v[i].k, ref->v[i].kl))
			x->idx[x->n++] = i;
	if (r->flags & TDBC_RANGE_REVERSE)
		for (i = 0; i < x->n / 2; i++) {
			size_t t = x->idx[i];

			x->idx[i] = x->idx[x->n - 1 - i];
			x->idx[x->n - 1 - i] = t;
		}
	if (limit && x->n > limit)
		x->n = (size_t)limit;
}

struct model {
	struct tdbc *c;         /* rings and maps */
	struct tdbc *cs;        /* the socket only */
	struct tdbc *cn;        /* rings, no maps */
	struct tdbc_table *t, *tm, *ts, *tn;
	struct ref ref;
	uint64_t rnd;
	uint32_t gen;
	unsigned long ranges, records, map_ranges;
};

static void check_done(struct cmp *x, const char *how, int err,
		       const struct tdbc_range *r, uint64_t limit)
{
	CHECK(!x->bad[0], "%s, %s: %s", how, rdesc(r, limit), x->bad);
	CHECK_EQ(err, 0, how);
	CHECK(x->i == x->n, "%s, %s: %zu records, want %zu", how,
	      rdesc(r, limit), x->i, x->n);
}

static void via_scan(struct model *m, struct tdbc_table *t, const char *how,
		     const struct tdbc_range *r, uint64_t limit,
		     unsigned int flags)
{
	struct tdbc_scan *s;
	struct cmp x;
	const void *k, *v;
	size_t kl, vl;
	uint64_t ver;
	int err;

	expect(&m->ref, r, limit, &x);
	err = tdbc_scan_range(t, r, limit, flags, &s);
	CHECK(!err, "%s: %s: %d (%s)", how, rdesc(r, limit), err,
	      tdbc_errmsg(m->c));
	while ((err = tdbc_scan_next_ver(s, &k, &kl, &v, &vl, &ver)) == 1)
		if (cmp_rec(&x, k, kl, v, vl, ver))
			break;
	tdbc_scan_close(s);
	check_done(&x, how, err == 1 ? 0 : err, r, limit);
	m->records += x.i;
	free(x.idx);
}

static void via_async(struct model *m, const struct tdbc_range *r,
		      uint64_t limit)
{
	struct tdbc_scan *s;
	struct tdbc_cqe cqe;
	struct cmp x;
	const void *k, *v;
	size_t kl, vl;
	uint64_t ver;
	int err;

	expect(&m->ref, r, limit, &x);
	CHECK_EQ(tdbc_scan_submit_range(m->t, r, limit, 0, 77, &s), 0,
		 "scan_submit_range");
	for (;;) {
		err = tdbc_scan_next_ver(s, &k, &kl, &v, &vl, &ver);
		if (err == 1) {
			if (cmp_rec(&x, k, kl, v, vl, ver))
				break;
			continue;
		}
		if (err != -EAGAIN)
			break;
		CHECK_EQ(tdbc_reap(m->c, &cqe, 1, 1, 10000), 1, "reap");
		CHECK(cqe.user == 77 && cqe.res >= 0, "batch: user %llu "
		      "res %d", (unsigned long long)cqe.user, cqe.res);
	}
	tdbc_scan_close(s);
	check_done(&x, "tdbc_scan_submit_range", err == 1 ? 0 : err, r,
		   limit);
	free(x.idx);
}

static void via_map(struct model *m, const struct tdbc_range *r,
		    uint64_t limit)
{
	struct cmp x;
	int err;

	expect(&m->ref, r, limit, &x);
	err = tdbc_map_range(m->tm, r, limit, cmp_rec, &x);
	CHECK(tdbc_table_mapped(m->tm), "the table is not mapped");
	check_done(&x, "tdbc_map_range", x.bad[0] ? 0 : err, r, limit);
	m->records += x.i;
	m->map_ranges++;
	free(x.idx);
}

/* tdbc_map_range of a table that is not mapped: the rings. */
static void via_nomap(struct model *m, const struct tdbc_range *r,
		      uint64_t limit)
{
	struct cmp x;
	int err;

	expect(&m->ref, r, limit, &x);
	CHECK(!tdbc_table_mapped(m->tn), "TDBC_NO_MAP, yet mapped");
	err = tdbc_map_range(m->tn, r, limit, cmp_rec, &x);
	check_done(&x, "tdbc_map_range (no map)", x.bad[0] ? 0 : err, r,
		   limit);
	free(x.idx);
}

/* A bound: open, a key of the table, a key near one, or a special one. */
static const void *pick_bound(struct model *m, unsigned char *buf,
			      size_t *len)
{
	static const unsigned char special[][3] = {
		{ 0x00 }, { 0xff }, { 'u', ':' }, { 'u', ':', '1' },
		{ 0xff, 0xff }, { 0x00, 0x00 }, { 'L' },
	};
	static const size_t special_len[] = { 1, 1, 2, 3, 2, 2, 1 };
	uint64_t r = h_rand(&m->rnd) % 10;
	const struct ent *e;
	size_t i;

	if (r == 0 || !m->ref.n)
		return NULL;
	if (r == 1) {
		i = h_rand(&m->rnd) % (sizeof(special_len) /
				       sizeof(special_len[0]));
		memcpy(buf, special[i], special_len[i]);
		*len = special_len[i];
		return buf;
	}
	e = &m->ref.v[h_rand(&m->rnd) % m->ref.n];
	memcpy(buf, e->k, e->kl);
	*len = e->kl;
	if (r == 2 && *len > 1)
		(*len)--;                       /* a prefix of it */
	else if (r == 3 && *len < TDB_KEY_MAX)
		buf[(*len)++] = 0x00;           /* just after it */
	else if (r == 4)
		buf[*len - 1] ^= 0x01;          /* a neighbour */
	return buf;
}

static void check_ranges(struct model *m, unsigned int n)
{
	static unsigned char fb[TDB_KEY_MAX], tb[TDB_KEY_MAX];
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct tdbc_range r = { 0 };
		uint64_t limit = h_rand(&m->rnd) % 3 ? 0 :
				 1 + h_rand(&m->rnd) % 100;
		uint64_t way = h_rand(&m->rnd) % 8;
		int err;

		r.from = pick_bound(m, fb, &r.from_len);
		r.to = pick_bound(m, tb, &r.to_len);
		r.flags = (unsigned int)(h_rand(&m->rnd) % 8);
		if (r.from && r.to &&
		    kcmp(r.from, r.from_len, r.to, r.to_len) > 0) {
			struct tdbc_scan *s;

			CHECK_EQ(tdbc_scan_range(m->t, &r, limit, 0, &s),
				 -EINVAL, "from after to (rings)");
			CHECK(strstr(tdbc_errmsg(m->c), "FROM is after"),
			      "from after to: '%s'", tdbc_errmsg(m->c));
			CHECK_EQ(tdbc_map_range(m->tm, &r, limit, cmp_rec,
						NULL), -EINVAL,
				 "from after to (map)");
			continue;
		}
		via_scan(m, m->t, "tdbc_scan_range", &r, limit, 0);
		via_map(m, &r, limit);
		if (way == 0)
			via_async(m, &r, limit);
		else if (way == 1)
			via_scan(m, m->ts, "tdbc_scan_range (socket)", &r,
				 limit, 0);
		else if (way == 2)
			via_scan(m, m->t, "tdbc_scan_range (snapshot)", &r,
				 limit, TDBC_SCAN_SNAPSHOT);
		else if (way == 3)
			via_nomap(m, &r, limit);
		m->ranges++;
		(void)err;
	}
}

/* A key of one of the awkward kinds. */
static size_t model_key(struct model *m, unsigned char *k, bool big)
{
	static const unsigned char alpha[] = { 0x00, 0x01, 0x7f, 0x80, 0xfe,
					       0xff };
	uint64_t r = h_rand(&m->rnd) % 16;
	size_t n, i;

	if (r < 9)
		return (size_t)snprintf((char *)k, 32, "u:%u", (unsigned)
					(h_rand(&m->rnd) % (big ? 99999 :
							     999)));
	if (r < 12) {
		n = 1 + h_rand(&m->rnd) % 3;
		for (i = 0; i < n; i++)
			k[i] = alpha[h_rand(&m->rnd) % sizeof(alpha)];
		return n;
	}
	if (r < 13) {
		static const size_t lens[] = { TDB_KEY_MAX, TDB_KEY_MAX - 1,
					       2048 };
		unsigned char fill = alpha[h_rand(&m->rnd) % sizeof(alpha)];

		n = lens[h_rand(&m->rnd) % 3];
		k[0] = 'L';
		k[1] = (unsigned char)('0' + h_rand(&m->rnd) % 4);
		memset(k + 2, fill, n - 2);
		return n;
	}
	if (m->ref.n) {         /* a prefix of a key, or one longer by a byte */
		const struct ent *e = &m->ref.v[h_rand(&m->rnd) % m->ref.n];

		n = e->kl;
		memcpy(k, e->k, n);
		if (n > 1 && (r & 1))
			return n - 1;
		if (n < TDB_KEY_MAX) {
			k[n] = alpha[h_rand(&m->rnd) % sizeof(alpha)];
			return n + 1;
		}
		return n;
	}
	k[0] = 'x';
	return 1;
}

static void model_put(struct model *m, struct tdbc_txn *txn,
		      const unsigned char *k, size_t kl, size_t vl)
{
	unsigned char v[VAL_MAX];
	uint32_t gen = ++m->gen;
	int err;

	val_make(v, k, kl, gen, vl);
	err = tdbc_put(m->t, txn, k, kl, v, vl, 0);
	CHECK(!err, "put %s: %d (%s)", khex(k, kl), err, tdbc_errmsg(m->c));
	if (!txn)
		ref_put(&m->ref, k, kl, gen, vl);
}

/* n writes: puts of new and present keys, deletes, transactions. */
static void model_write(struct model *m, unsigned int n, bool big)
{
	static unsigned char k[TDB_KEY_MAX + 1];
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint64_t r = h_rand(&m->rnd) % 20;
		size_t vl = VAL_MIN + h_rand(&m->rnd) % (big ? VAL_MAX -
							  VAL_MIN : 64);
		size_t kl = model_key(m, k, big);

		if (r < 14) {
			model_put(m, NULL, k, kl, vl);
		} else if (r < 18) {
			int err = tdbc_del(m->t, NULL, k, kl);

			CHECK(err == 0 || err == -ENOENT, "del %s: %d",
			      khex(k, kl), err);
			ref_del(&m->ref, k, kl);
		} else {
			/* a transaction of 3 puts: applied at commit */
			struct tdbc_txn *txn;
			unsigned char tk[3][40];
			size_t tl[3];
			uint32_t g0 = m->gen;
			int j;

			CHECK_EQ(tdbc_txn_begin(m->c, &txn), 0, "txn_begin");
			for (j = 0; j < 3; j++) {
				tl[j] = (size_t)snprintf((char *)tk[j], 40,
					"u:%u", (unsigned)(h_rand(&m->rnd) %
							   999));
				model_put(m, txn, tk[j], tl[j], 40);
			}
			CHECK_EQ(tdbc_txn_commit(txn), 0, "txn_commit");
			for (j = 0; j < 3; j++)
				ref_put(&m->ref, tk[j], tl[j], g0 + 1 +
					(uint32_t)j, 40);
		}
	}
}

static void part_model(void)
{
	struct model m = { .rnd = 0x5eed1234ull };
	struct tdbc_table_stat st;
	struct tdbc_table_opts o;
	struct tdbc_stats a, b;
	struct tdbc_table *th;
	struct tdbc_scan *s;
	unsigned char k[8];
	unsigned int i, stage;
	uint32_t ext0;
	int err;

	m.c = h_connect(&g_d, 0);
	m.cs = h_connect(&g_d, TDBC_NO_RINGS);
	m.cn = h_connect(&g_d, TDBC_NO_MAP);
	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(m.c, "ord", &o), 0, "create ordered");
	CHECK_EQ(tdbc_table_stat(m.c, "ord", &st), 0, "stat");
	CHECK(st.flags == TDBC_TABLE_ORDERED, "stat.flags %#x, want "
	      "TDBC_TABLE_ORDERED", st.flags);
	ext0 = st.extents;
	CHECK_EQ(tdbc_table_open(m.c, "ord", &m.t), 0, "open");
	CHECK_EQ(tdbc_table_open(m.c, "ord", &m.tm), 0, "open (map)");
	CHECK_EQ(tdbc_table_open(m.cs, "ord", &m.ts), 0, "open (socket)");
	CHECK_EQ(tdbc_table_open(m.cn, "ord", &m.tn), 0, "open (no map)");
	CHECK(tdbc_table_mapped(m.tm), "an ordered table is not mapped");

	/* the empty table */
	check_ranges(&m, 20);
	/* explicit cases */
	for (i = 0; i < 3; i++) {
		k[0] = (unsigned char)"a\0\xff"[i];
		model_put(&m, NULL, k, 1, 20);
	}
	model_put(&m, NULL, (const unsigned char *)"ab", 2, 20);
	model_put(&m, NULL, (const unsigned char *)"a\0", 2, 20);
	{
		struct tdbc_range one = { .from = "ab", .from_len = 2,
					  .to = "ab", .to_len = 2,
					  .flags = TDBC_RANGE_TO_INCL };
		struct tdbc_range none = { .from = "ab", .from_len = 2,
					   .to = "ab", .to_len = 2 };
		struct tdbc_range pre = { .from = "a", .from_len = 1,
					  .to = "b", .to_len = 1 };
		struct tdbc_range bad = { .from = "", .from_len = 0 };
		static unsigned char big[TDB_KEY_MAX + 1];
		struct tdbc_range huge = { .to = big, .to_len = sizeof(big) };
		struct tdbc_range flags = { .flags = 1u << 7 };
		unsigned int f;

		for (f = 0; f < 8; f++) {
			one.flags = TDBC_RANGE_TO_INCL |
				    (f & TDBC_RANGE_REVERSE);
			via_scan(&m, m.t, "single key", &one, 0, 0);
			via_map(&m, &one, 0);
			none.flags = f & ~TDBC_RANGE_TO_INCL;
			via_scan(&m, m.t, "empty", &none, 0, 0);
			via_map(&m, &none, 0);
			pre.flags = f;
			via_scan(&m, m.t, "prefixes", &pre, 0, 0);
			via_map(&m, &pre, 0);
		}
		CHECK_EQ(tdbc_scan_range(m.t, &bad, 0, 0, &s), -EINVAL,
			 "an empty bound");
		CHECK_EQ(tdbc_scan_range(m.t, &huge, 0, 0, &s), -E2BIG,
			 "a bound of 4097 bytes");
		CHECK_EQ(tdbc_scan_range(m.t, &flags, 0, 0, &s), -EINVAL,
			 "unknown range flags");
		CHECK_EQ(tdbc_scan_range(m.t, NULL, 0, 0, &s), -EINVAL,
			 "no range");
		CHECK_EQ(tdbc_map_range(m.tm, &bad, 0, cmp_rec, NULL),
			 -EINVAL, "an empty bound (map)");
		CHECK_EQ(tdbc_map_range(m.tm, &pre, 0, NULL, NULL), -EINVAL,
			 "no fn");
		CHECK_EQ(tdbc_scan_submit_range(m.t, &pre, 0,
						TDBC_SCAN_SNAPSHOT, 1, &s),
			 -EOPNOTSUPP, "an asynchronous snapshot");
		/* fn stops the walk: its value comes back */
		CHECK_EQ(tdbc_map_range(m.tm, &pre, 0, cmp_rec_stop, NULL), 42,
			 "fn's value");
		/* inside a read section: refused */
		CHECK_EQ(tdbc_read_begin(m.c), 0, "read_begin");
		CHECK_EQ(tdbc_map_range(m.tm, &pre, 0, cmp_rec, NULL), -EBUSY,
			 "in a read section");
		CHECK_EQ(tdbc_read_end(m.c), 0, "read_end");
	}
	/* a hash table refuses ranges, through the rings and the map */
	CHECK_EQ(tdbc_table_create(m.c, "hash", NULL), 0, "create hash");
	CHECK_EQ(tdbc_table_stat(m.c, "hash", &st), 0, "stat hash");
	CHECK_EQ(st.flags, 0, "a hash table's flags");
	CHECK_EQ(tdbc_table_open(m.c, "hash", &th), 0, "open hash");
	CHECK_EQ(tdbc_put(th, NULL, "k", 1, "v", 1, 0), 0, "put hash");
	{
		struct tdbc_range all = { 0 };

		err = tdbc_scan_range(th, &all, 0, 0, &s);
		CHECK_EQ(err, -EOPNOTSUPP, "a range of a hash table (rings)");
		CHECK(strstr(tdbc_errmsg(m.c), "ordered"), "errmsg '%s'",
		      tdbc_errmsg(m.c));
		CHECK(tdbc_table_mapped(th), "the hash table is not mapped");
		err = tdbc_map_range(th, &all, 0, cmp_rec, NULL);
		CHECK_EQ(err, -EOPNOTSUPP, "a range of a hash table (map)");
		CHECK(strstr(tdbc_errmsg(m.c), "ordered"), "errmsg '%s'",
		      tdbc_errmsg(m.c));
	}
	tdbc_table_close(th);

	/* stages: small, then grown past its first extent, then churned */
	for (stage = 0; stage < 4; stage++) {
		bool big = stage >= 1;

		model_write(&m, (unsigned int)h_scaled(stage == 1 ? 6000 :
							 800, 200), big);
		check_ranges(&m, (unsigned int)h_scaled(60, 20));
	}
	CHECK_EQ(tdbc_table_stat(m.c, "ord", &st), 0, "stat");
	CHECK(st.records == m.ref.n, "stat: %llu records, the reference "
	      "%zu", (unsigned long long)st.records, m.ref.n);
	CHECK(st.extents > ext0, "the table did not grow past %u extents",
	      ext0);
	/* the maps serve tdbc_map_range: a burst of walks, no requests */
	h_stats(m.c, &a);
	for (i = 0; i < 50; i++) {
		struct tdbc_range r = { 0 };
		static unsigned char fb[TDB_KEY_MAX];

		r.from = pick_bound(&m, fb, &r.from_len);
		r.flags = (unsigned int)(h_rand(&m.rnd) % 8);
		if (!r.from)
			r.flags &= ~TDBC_RANGE_FROM_EXCL;
		via_map(&m, &r, 200);
	}
	h_stats(m.c, &b);
	CHECK(b.requests - a.requests < 10, "50 map walks cost tdbd %llu "
	      "requests: they went through the rings",
	      (unsigned long long)(b.requests - a.requests));
	h_note("model: %zu keys, %u extents; %lu ranges checked each way "
	       "(%lu map walks), %lu records compared", m.ref.n, st.extents,
	       m.ranges, m.map_ranges, m.records);
	tdbc_table_close(m.ts);
	tdbc_close(m.cs);
	tdbc_close(m.cn);
	tdbc_close(m.c);
	for (i = 0; i < m.ref.n; i++)
		free(m.ref.v[i].k);
	free(m.ref.v);
}

/* --- resume: ranges read while another process writes -------------------- */

#define NS 3000                 /* stable keys: "s:%05u" of 2i */

struct shared {
	volatile int stop;
	uint64_t writes, txns;
	struct {
		uint64_t walks, records, stale, groups, whole;
		uint64_t excused;       /* bad views in walks said stale */
		char bad[900];
	} r[2];
};

static struct shared *g_sh;

static size_t skey(char *k, unsigned int i, bool plus)
{
	return (size_t)snprintf(k, 16, "s:%05u%s", i, plus ? "+" : "");
}

/* The writer of part resume: replaces stable keys (they stay present),
 * puts and deletes the keys between them (odd numbers, and "+" keys
 * right after even ones), alone and 4 at a time in transactions. */
static void churn_writer(void)
{
	struct tdbc *c = h_connect(&g_d, TDBC_NO_MAP);
	struct tdbc_table *t;
	unsigned char v[VAL_MAX];
	uint64_t rnd = 99;
	uint32_t gen = 1000000;
	char k[16];

	CHECK_EQ(tdbc_table_open(c, "churn", &t), 0, "writer: open");
	while (!g_sh->stop) {
		uint64_t r = h_rand(&rnd) % 10;
		unsigned int i = (unsigned int)(h_rand(&rnd) % (2 * NS));
		size_t kl, vl = VAL_MIN + h_rand(&rnd) % 200;
		int err;

		if (r < 2) {            /* a stable key, replaced */
			kl = skey(k, i & ~1u, false);
			val_make(v, k, kl, ++gen, vl);
			err = tdbc_put(t, NULL, k, kl, v, vl, 0);
		} else if (r < 5) {
			kl = skey(k, i | 1u, r == 4);
			val_make(v, k, kl, ++gen, vl);
			err = tdbc_put(t, NULL, k, kl, v, vl, 0);
		} else if (r < 8) {
			kl = skey(k, i | 1u, r == 7);
			err = tdbc_del(t, NULL, k, kl);
			if (err == -ENOENT)
				err = 0;
		} else {
			struct tdbc_txn *txn;
			unsigned int j;

			CHECK_EQ(tdbc_txn_begin(c, &txn), 0, "txn_begin");
			for (j = 0; j < 4; j++) {
				kl = skey(k, ((i + 2 * j) % (2 * NS)) | 1u,
					  r == 9);
				val_make(v, k, kl, ++gen, vl);
				CHECK_EQ(tdbc_put(t, txn, k, kl, v, vl, 0), 0,
					 "txn put");
			}
			err = tdbc_txn_commit(txn);
			g_sh->txns++;
		}
		CHECK(!err, "writer: %d (%s)", err, tdbc_errmsg(c));
		g_sh->writes++;
	}
	tdbc_close(c);
	_exit(0);
}

/* Checks of one walk under writers: order, range, whole values, no key
 * twice (order says that), and which stable keys came. */
struct walk {
	const struct tdbc_range *r;
	unsigned char last[TDB_KEY_MAX];
	size_t last_len;
	bool any;
	unsigned long n, stable;
	unsigned char *seen;    /* per stable key (churn), or NULL */
	unsigned int nap_us;    /* fn sleeps this long at its first record */
	char bad[300];
};

static int walk_rec(void *arg, const void *k, size_t kl, const void *v,
		    size_t vl, uint64_t version)
{
	struct walk *w = arg;
	const char *why;
	uint32_t gen;
	unsigned int num;
	char tail, ks[8];

	(void)version;
	if (w->nap_us && !w->n)
		usleep(w->nap_us);      /* a reader off CPU in its section */
	if (!in_range(w->r, k, kl)) {
		snprintf(w->bad, sizeof(w->bad), "%s is outside the range",
			 khex(k, kl));
		return 1;
	}
	if (w->any && !walk_before(w->r, w->last, w->last_len, k, kl)) {
		snprintf(w->bad, sizeof(w->bad), "%s after %s: out of order "
			 "or twice", khex(k, kl), khex(w->last, w->last_len));
		return 1;
	}
	why = val_bad(k, kl, v, vl, &gen);
	if (why) {
		snprintf(w->bad, sizeof(w->bad), "%s: %s (%zu bytes)",
			 khex(k, kl), why, vl);
		return 1;
	}
	memcpy(w->last, k, kl);
	w->last_len = kl;
	w->any = true;
	w->n++;
	if (kl == 7) {
		memcpy(ks, k, 7);
		ks[7] = '\0';
	}
	if (w->seen && kl == 7 && sscanf(ks, "s:%5u%c", &num, &tail) == 1 &&
	    !(num & 1)) {
		w->seen[num / 2]++;
		w->stable++;
	}
	return 0;
}

static void part_resume(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table_opts o;
	struct tdbc_table *t;
	unsigned char v[VAL_MAX], *seen = calloc(NS, 1);
	uint64_t rnd = 4242, end;
	unsigned long walks = 0, records = 0;
	unsigned int i;
	pid_t pid;
	char k[16];
	int status;

	CHECK(seen, "out of memory");
	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, "churn", &o), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "churn", &t), 0, "open");
	for (i = 0; i < NS; i++) {
		size_t kl = skey(k, 2 * i, false);

		val_make(v, k, kl, i, 100);
		CHECK_EQ(tdbc_put(t, NULL, k, kl, v, 100, 0), 0, "put");
	}
	CHECK(tdbc_table_mapped(t), "not mapped");
	g_sh->stop = 0;
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		churn_writer();
	h_track(pid);
	end = h_now_ms() + (uint64_t)h_scaled(5000, 1500);
	while (h_now_ms() < end) {
		unsigned int a = (unsigned int)(h_rand(&rnd) % (NS - 2000));
		unsigned int len = 500 + (unsigned int)(h_rand(&rnd) % 1500);
		unsigned int flags = (unsigned int)(h_rand(&rnd) % 8);
		unsigned int lo, hi, want;
		char fk[16], tk[16];
		struct tdbc_range r = { .from = fk, .to = tk, .flags = flags };
		struct walk w = { .r = &r, .seen = seen };
		bool map = walks & 1;
		int err;

		/* bounds on stable keys: present throughout */
		r.from_len = skey(fk, 2 * a, false);
		r.to_len = skey(tk, 2 * (a + len), false);
		lo = a + !!(flags & TDBC_RANGE_FROM_EXCL);
		hi = a + len - !(flags & TDBC_RANGE_TO_INCL);
		want = hi - lo + 1;
		memset(seen, 0, NS);
		if (map) {
			err = tdbc_map_range(t, &r, 0, walk_rec, &w);
		} else {
			struct tdbc_scan *s;
			const void *kk, *vv;
			size_t kl, vl;

			CHECK_EQ(tdbc_scan_range(t, &r, 0, 0, &s), 0, "scan");
			while ((err = tdbc_scan_next(s, &kk, &kl, &vv,
						     &vl)) == 1)
				if (walk_rec(&w, kk, kl, vv, vl, 0))
					break;
			tdbc_scan_close(s);
			if (err == 1)
				err = 0;
		}
		CHECK(!w.bad[0], "%s walk of %s: %s", map ? "map" : "ring",
		      rdesc(&r, 0), w.bad);
		CHECK_EQ(err, 0, map ? "tdbc_map_range" : "tdbc_scan_next");
		CHECK(w.stable == want, "%s walk of %s: %lu stable keys, "
		      "want %u (%lu records, the last %s)", map ? "map" :
		      "ring", rdesc(&r, 0), w.stable, want, w.n,
		      khex(w.last, w.last_len));
		for (i = lo; i <= hi; i++)
			CHECK(seen[i] == 1, "stable key %u seen %u times", i,
			      seen[i]);
		walks++;
		records += w.n;
	}
	CHECK(tdbc_table_mapped(t), "the map was lost");
	g_sh->stop = 1;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer "
	      "failed");
	CHECK(walks >= 10 && g_sh->writes >= 1000, "too little: %lu walks, "
	      "%llu writes", walks, (unsigned long long)g_sh->writes);
	h_note("resume: %lu walks (rings and maps) of %lu records in all, "
	       "each stable key once, in order, while %llu writes (%llu "
	       "transactions) ran", walks, records,
	       (unsigned long long)g_sh->writes,
	       (unsigned long long)g_sh->txns);
	tdbc_close(c);
	free(seen);
}

/* --- hostile: map walks while keys come and go ---------------------------- */

#define NH 2000
#define NG 16
#define GROUP 32               /* keys a transaction puts or deletes */

static struct h_daemon *g_hd;  /* the tdbd of the hostile parts */
static int g_napper = -1;      /* the reader whose fn naps (benched) */

static void hot_writer(void)
{
	struct tdbc *c = h_connect(g_hd, TDBC_NO_MAP);
	struct tdbc_table *t;
	unsigned char v[VAL_MAX];
	uint64_t rnd = 7;
	uint32_t gen = 1;
	char k[32];

	CHECK_EQ(tdbc_table_open(c, "hot", &t), 0, "writer: open");
	while (!g_sh->stop) {
		uint64_t r = h_rand(&rnd) % 16;
		size_t kl, vl;
		int err = 0;

		if (r < 8) {
			kl = (size_t)snprintf(k, sizeof(k), "h:%u", (unsigned)
					      (h_rand(&rnd) % NH));
			if (r < 5) {
				vl = VAL_MIN + h_rand(&rnd) % (VAL_MAX -
							       VAL_MIN);
				val_make(v, k, kl, ++gen, vl);
				err = tdbc_put(t, NULL, k, kl, v, vl, 0);
			} else {
				err = tdbc_del(t, NULL, k, kl);
				if (err == -ENOENT)
					err = 0;
			}
		} else {
			/* a group: all put with one gen, or all gone */
			unsigned int g = (unsigned int)(h_rand(&rnd) % NG), j;
			struct tdbc_txn *txn;

			CHECK_EQ(tdbc_txn_begin(c, &txn), 0, "txn_begin");
			++gen;
			for (j = 0; j < GROUP; j++) {
				kl = (size_t)snprintf(k, sizeof(k),
						      "g:%03u:%02u", g, j);
				vl = 16 + 8 * j;
				val_make(v, k, kl, gen, vl);
				err = r < 13 ? tdbc_put(t, txn, k, kl, v, vl,
							0) :
					       tdbc_del(t, txn, k, kl);
				CHECK(!err, "txn op: %d", err);
			}
			err = tdbc_txn_commit(txn);
			g_sh->txns++;
		}
		CHECK(!err, "writer: %d (%s)", err, tdbc_errmsg(c));
		g_sh->writes++;
	}
	tdbc_close(c);
	_exit(0);
}

static int group_rec(void *arg, const void *k, size_t kl, const void *v,
		     size_t vl, uint64_t version)
{
	struct walk *w = arg;
	uint32_t gen;

	if (walk_rec(w, k, kl, v, vl, version))
		return 1;
	memcpy(&gen, v, 4);
	if (w->n == 1)
		w->stable = gen;        /* the group's gen, here */
	else if (gen != w->stable) {
		snprintf(w->bad, sizeof(w->bad), "a group seen at gens %lu "
			 "and %u in one part: part of a transaction",
			 w->stable, gen);
		return 1;
	}
	return 0;
}

static void hot_reader(int me)
{
	struct tdbc *c = h_connect(g_hd, 0);
	struct tdbc_table *t;
	uint64_t rnd = 31337 + (uint64_t)me;
	unsigned long iter = 0;

	CHECK_EQ(tdbc_table_open(c, "hot", &t), 0, "reader: open");
	CHECK(tdbc_table_mapped(t), "reader %d not mapped", me);
	while (!g_sh->stop) {
		char fk[32], tk[32];
		struct tdbc_range r = { .flags = (unsigned int)
					(h_rand(&rnd) % 8) };
		struct walk w = { .r = &r };
		uint64_t limit = h_rand(&rnd) % 4 ? 0 : 1 + h_rand(&rnd) % 300;
		bool group = h_rand(&rnd) % 2 == 0;
		int err;

		/* two spinning readers on a small machine would starve the
		 * writer (and tdbd, which serves it): leave it some CPU */
		if (++iter % 64 == 0)
			usleep(200);
		if (me == g_napper && iter % 2)
			w.nap_us = 2000;
		if (group) {
			unsigned int g = (unsigned int)(h_rand(&rnd) % NG);

			r.from = fk;
			r.from_len = (size_t)snprintf(fk, sizeof(fk),
						      "g:%03u:", g);
			r.to = tk;
			r.to_len = (size_t)snprintf(tk, sizeof(tk),
						    "g:%03u;", g);
			r.flags &= TDBC_RANGE_REVERSE;
			limit = 0;
			err = tdbc_map_range(t, &r, limit, group_rec, &w);
		} else {
			if (h_rand(&rnd) % 4) {
				r.from = fk;
				r.from_len = (size_t)snprintf(fk, sizeof(fk),
					"h:%u", (unsigned)(h_rand(&rnd) % NH));
			}
			if (h_rand(&rnd) % 4) {
				r.to = tk;
				r.to_len = (size_t)snprintf(tk, sizeof(tk),
					"h:%u", (unsigned)(h_rand(&rnd) % NH));
			}
			if (r.from && r.to &&
			    kcmp(fk, r.from_len, tk, r.to_len) > 0) {
				r.to = NULL;
				r.to_len = 0;
			}
			err = tdbc_map_range(t, &r, limit, walk_rec, &w);
		}
		/* -ESTALE: tdbd stopped waiting for the section while fn
		 * ran (a reader preempted past its lease, or benched after
		 * such an expiry, client.h): what fn saw in that part may
		 * have been overwritten, so a bad view there is excused (fn
		 * stops at its first, so it is in that part).  Anything
		 * else fn saw must be right. */
		if (err == -ESTALE) {
			g_sh->r[me].stale++;
			if (w.bad[0])
				g_sh->r[me].excused++;
			continue;
		}
		if (w.bad[0]) {
			snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
				 "%s: %s (the walk returned %d%s%s)",
				 rdesc(&r, limit), w.bad, err,
				 err < 0 ? ": " : "",
				 err < 0 ? tdbc_errmsg(c) : "");
			_exit(1);
		}
		if (err) {
			snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
				 "tdbc_map_range: %d (%s)", err,
				 tdbc_errmsg(c));
			_exit(1);
		}
		if (limit && w.n > limit) {
			snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
				 "%lu records past the limit %llu", w.n,
				 (unsigned long long)limit);
			_exit(1);
		}
		if (group) {
			g_sh->r[me].groups++;
			if (w.n == GROUP)
				g_sh->r[me].whole++;
			else if (w.n) {
				snprintf(g_sh->r[me].bad,
					 sizeof(g_sh->r[me].bad),
					 "a group of %lu keys", w.n);
				_exit(1);
			}
		}
		if (!tdbc_table_mapped(t)) {
			snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
				 "the reader lost its map");
			_exit(1);
		}
		g_sh->r[me].walks++;
		g_sh->r[me].records += w.n;
	}
	tdbc_close(c);
	_exit(0);
}

static void part_hostile(struct h_daemon *d, const char *part,
			 unsigned int ms)
{
	struct tdbc *c = h_connect(d, 0);
	struct tdbc_table_opts o;
	pid_t pids[3];
	int i, status;

	g_hd = d;
	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, "hot", &o), 0, "create");
	memset(g_sh, 0, sizeof(*g_sh));
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		CHECK(pids[i] >= 0, "fork");
		if (pids[i] == 0) {
			if (i == 0)
				hot_writer();
			hot_reader(i - 1);
		}
		h_track(pids[i]);
	}
	h_sleep_ms(ms);
	g_sh->stop = 1;
	for (i = 0; i < 3; i++) {
		CHECK(waitpid(pids[i], &status, 0) == pids[i], "waitpid");
		h_untrack(pids[i]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s failed: %s", i ? "a reader" : "the writer",
		      i && g_sh->r[i - 1].bad[0] ? g_sh->r[i - 1].bad :
		      "(see above)");
	}
	for (i = 0; i < 2; i++) {
		CHECK(g_sh->r[i].walks >= 100, "reader %d: %llu walks", i,
		      (unsigned long long)g_sh->r[i].walks);
		h_note("%s: reader %d: %llu map walks, %llu records, "
		       "%llu groups (%llu whole, the rest absent), %llu "
		       "stale (%llu with a bad view, excused)", part, i,
		       (unsigned long long)g_sh->r[i].walks,
		       (unsigned long long)g_sh->r[i].records,
		       (unsigned long long)g_sh->r[i].groups,
		       (unsigned long long)g_sh->r[i].whole,
		       (unsigned long long)g_sh->r[i].stale,
		       (unsigned long long)g_sh->r[i].excused);
	}
	CHECK(g_sh->writes >= 200, "the writer did %llu writes",
	      (unsigned long long)g_sh->writes);
	h_note("%s: the writer did %llu writes (%llu transactions)", part,
	       (unsigned long long)g_sh->writes,
	       (unsigned long long)g_sh->txns);
	tdbc_close(c);
}

/* --- benched: part hostile with readers expired all the time ------------- */

/*
 * Part hostile against a tdbd whose reader-lease is 1 ms: a reader
 * preempted for a millisecond inside a section is expired and benched
 * (its uid's readers with it), and while benched every grace period
 * that finds it in a section bumps read_expired and reuses the memory
 * at once (src/owner/readers.c, "Benched readers").  What a part shows
 * fn must then be right unless the walk says -ESTALE; a part that saw a
 * bump before fn ran is read through the rings.  Reader 1's fn sleeps
 * 2 ms in every other walk (a reader off CPU in its section), so that
 * grace periods find it there and expire it.  On a 2-core machine
 * under load the same happens with the 100 ms lease of part hostile,
 * rarely (a reader off CPU for 100 ms); here it is the common case.
 */
static void part_benched(void)
{
	const char *args[] = { "--sync", "none", "--reader-lease", "1ms",
			       NULL };
	static struct h_daemon d;
	unsigned int expired;

	h_start(&d, "ordb", args);
	g_napper = 1;
	part_hostile(&d, "benched", (unsigned int)h_scaled(3000, 1500));
	g_napper = -1;
	expired = h_log_count(&d, "longer than the lease");
	h_note("benched: tdbd logged %u expiries of readers (rate-limited)",
	       expired);
	h_stop(&d);
}

/* --- stale: the map goes stale in the middle of a walk ------------------- */

#define NST 1000

struct stale_arg {
	struct tdbc *c2;        /* another connection: fn may use it */
	struct cmp *x;
	unsigned long calls;
	uint32_t gen;           /* of the last record */
	bool done;
};

static void stale_fill(struct tdbc *c, unsigned int gen)
{
	struct tdbc_table_opts o;
	struct tdbc_table *t;
	unsigned char v[64];
	unsigned int i;
	char k[16];

	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, "stale", &o), 0, "create stale");
	CHECK_EQ(tdbc_table_open(c, "stale", &t), 0, "open stale");
	for (i = 0; i < NST; i++) {
		size_t kl = (size_t)snprintf(k, sizeof(k), "k:%04u", i);

		val_make(v, k, kl, gen, 40);
		CHECK_EQ(tdbc_put(t, NULL, k, kl, v, 40, 0), 0, "put");
	}
	tdbc_table_close(t);
}

/* After 100 records the table is dropped and made again with the same
 * keys (values of gen 2) by another connection, so the walk's map is
 * stale from its next part on and the rest comes through the rings:
 * the keys as expected, the values of gen 1, then of gen 2 (the new
 * table's; never the dropped one's after them). */
static int stale_rec(void *arg, const void *k, size_t kl, const void *v,
		     size_t vl, uint64_t version)
{
	struct stale_arg *a = arg;
	struct cmp *x = a->x;
	const struct ent *e;
	const char *why;
	uint32_t gen = 0;

	(void)version;
	if (x->i >= x->n) {
		snprintf(x->bad, sizeof(x->bad), "record %zu past the %zu "
			 "expected", x->i, x->n);
		return 1;
	}
	e = &x->ref->v[x->idx[x->i]];
	why = val_bad(k, kl, v, vl, &gen);
	if (kcmp(k, kl, e->k, e->kl) || why || gen < a->gen ||
	    (a->calls < 100 && gen != 1)) {
		snprintf(x->bad, sizeof(x->bad), "record %zu is %s (%s, gen "
			 "%u after %u), want %s", x->i, khex(k, kl),
			 why ? why : "a whole value", gen, a->gen,
			 khex(e->k, e->kl));
		return 1;
	}
	a->gen = gen;
	x->i++;
	if (++a->calls == 100) {
		CHECK_EQ(tdbc_table_drop(a->c2, "stale"), 0, "drop");
		stale_fill(a->c2, 2);
		a->done = true;
	}
	return 0;
}

static void part_stale(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct ref ref = { 0 };
	struct tdbc_range r = { .from = "k:0100", .from_len = 6,
				.flags = TDBC_RANGE_REVERSE };
	struct stale_arg a = { .c2 = h_connect(&g_d, TDBC_NO_MAP) };
	struct tdbc_table *t;
	unsigned int i, round;
	struct cmp x;
	char k[16];
	int err;

	stale_fill(a.c2, 1);
	for (i = 0; i < NST; i++)
		ref_put(&ref, k, (size_t)snprintf(k, sizeof(k), "k:%04u", i),
			1, 40);
	for (round = 0; round < 2; round++) {
		r.flags = round ? TDBC_RANGE_REVERSE : 0;
		if (round) {
			CHECK_EQ(tdbc_table_drop(a.c2, "stale"), 0, "drop");
			stale_fill(a.c2, 1);
		}
		a.gen = 0;
		CHECK_EQ(tdbc_table_open(c, "stale", &t), 0, "open");
		CHECK(tdbc_table_mapped(t), "not mapped");
		expect(&ref, &r, 0, &x);
		a.x = &x;
		a.calls = 0;
		a.done = false;
		err = tdbc_map_range(t, &r, 0, stale_rec, &a);
		CHECK(a.done, "the walk stopped before its 100th record");
		CHECK(!x.bad[0], "stale map walk (%s): %s", round ?
		      "reverse" : "forward", x.bad);
		CHECK_EQ(err, 0, "a walk whose map went stale");
		CHECK(x.i == x.n, "stale map walk: %zu records, want %zu",
		      x.i, x.n);
		CHECK(a.gen == 2, "the walk ended on the dropped table's "
		      "values (gen %u)", a.gen);
		free(x.idx);
		tdbc_table_close(t);
	}
	h_note("stale: walks whose map went stale after 100 records ended "
	       "through the rings, each key once, in order");
	for (i = 0; i < ref.n; i++)
		free(ref.v[i].k);
	free(ref.v);
	tdbc_close(a.c2);
	tdbc_close(c);
}

/* --- lease: fn outlives the reader-lease ---------------------------------- */

#define NLEASE 6000

struct lease_arg {
	struct tdbc *c2;
	struct tdbc_table *t2;
	unsigned long calls;
};

/* On the first record: another connection deletes NLEASE keys of the
 * table (its limbo is freed after a grace period, for which tdbd waits
 * for this reader's section at most its lease, then stops waiting). */
static int lease_rec(void *arg, const void *k, size_t kl, const void *v,
		     size_t vl, uint64_t version)
{
	struct lease_arg *a = arg;
	unsigned int i;
	char key[16];

	(void)k; (void)kl; (void)v; (void)vl; (void)version;
	if (a->calls++)
		return 0;
	for (i = 0; i < NLEASE; i++)
		CHECK_EQ(tdbc_del(a->t2, NULL, key, (size_t)snprintf(key,
			 sizeof(key), "d:%05u", i)), 0, "del");
	return 0;
}

static void part_lease(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct lease_arg a = { .c2 = h_connect(&g_d, TDBC_NO_MAP) };
	struct tdbc_range r = { .from = "a:", .from_len = 2, .to = "a;",
				.to_len = 2 };
	struct tdbc_table_opts o;
	struct tdbc_stats s0, s1;
	struct tdbc_table *t;
	unsigned char v[VAL_MAX];
	unsigned int i;
	char k[16];
	int err;

	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, "lease", &o), 0, "create");
	CHECK_EQ(tdbc_table_open(a.c2, "lease", &a.t2), 0, "open");
	for (i = 0; i < NLEASE; i++) {
		size_t kl = (size_t)snprintf(k, sizeof(k), "d:%05u", i);

		val_make(v, k, kl, 1, 1000);
		CHECK_EQ(tdbc_put(a.t2, NULL, k, kl, v, 1000, 0), 0, "put");
	}
	for (i = 0; i < 10; i++)
		CHECK_EQ(tdbc_put(a.t2, NULL, k, (size_t)snprintf(k,
			 sizeof(k), "a:%u", i), "vvvvvvvvvvvv", 12, 0), 0,
			 "put");
	CHECK_EQ(tdbc_table_open(c, "lease", &t), 0, "open");
	CHECK(tdbc_table_mapped(t), "not mapped");
	h_stats(a.c2, &s0);
	err = tdbc_map_range(t, &r, 0, lease_rec, &a);
	h_stats(a.c2, &s1);
	CHECK(s1.readers_expired > s0.readers_expired, "tdbd never stopped "
	      "waiting for the walk (readers_expired %llu): the check "
	      "below means nothing", (unsigned long long)s1.readers_expired);
	CHECK_EQ(err, -ESTALE, "a walk whose fn outlived the lease");
	CHECK(strstr(tdbc_errmsg(c), "reader-lease"), "errmsg '%s'",
	      tdbc_errmsg(c));
	h_note("lease: a walk whose fn outlived tdbd's reader-lease ended "
	       "with -ESTALE after %lu records", a.calls);
	tdbc_close(a.c2);
	tdbc_close(c);
}

/* --- txn: range reads validated at commit ---------------------------------- */

/* Read the range in txn (r NULL: the whole table); the number of
 * records. */
static unsigned int txn_read(struct tdbc *c, struct tdbc_table *t,
			     struct tdbc_txn *txn, const struct tdbc_range *r,
			     uint64_t limit)
{
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	unsigned int n = 0;
	int err;

	err = tdbc_scan_range_txn(t, txn, r, limit, &s);
	CHECK(!err, "scan_range_txn: %d (%s)", err, tdbc_errmsg(c));
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1)
		n++;
	CHECK_EQ(err, 0, "scan_next in a transaction");
	tdbc_scan_close(s);
	return n;
}

/* A transaction that reads r (limit), then puts "w:done"; meanwhile
 * another connection does what `other` says to key ok (put or del).
 * Returns the commit's result. */
static int txn_case(struct tdbc *c, struct tdbc_table *t,
		    struct tdbc_table *t2, const struct tdbc_range *r,
		    uint64_t limit, unsigned int want, const char *ok,
		    bool del)
{
	struct tdbc_txn *txn;
	unsigned int n;

	CHECK_EQ(tdbc_txn_begin(c, &txn), 0, "txn_begin");
	n = txn_read(c, t, txn, r, limit);
	CHECK(n == want, "the transaction's scan read %u records, want %u",
	      n, want);
	if (ok && del)
		CHECK_EQ(tdbc_del(t2, NULL, ok, strlen(ok)), 0, "other: del");
	else if (ok)
		CHECK_EQ(tdbc_put(t2, NULL, ok, strlen(ok), "x", 1, 0), 0,
			 "other: put");
	CHECK_EQ(tdbc_put(t, txn, "w:done", 6, "1", 1, 0), 0, "txn put");
	return tdbc_txn_commit(txn);
}

static void part_txn(void)
{
	struct tdbc *c = h_connect(&g_d, 0), *c2 = h_connect(&g_d, 0);
	struct tdbc_range r = { .from = "t:10", .from_len = 4, .to = "t:20",
				.to_len = 4 };
	struct tdbc_table_opts o;
	struct tdbc_table *t, *t2, *h, *h2;
	struct tdbc_txn *txn;
	struct tdbc_scan *s;
	unsigned int i;
	char k[16];
	int err;

	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	CHECK_EQ(tdbc_table_create(c, "tx", &o), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "tx", &t), 0, "open");
	CHECK_EQ(tdbc_table_open(c2, "tx", &t2), 0, "open 2");
	for (i = 0; i < 50; i += 2)
		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)snprintf(k, sizeof(k),
			 "t:%02u", i), "v", 1, 0), 0, "put");
	/* nothing changed in the span: commits */
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 5, NULL, false), 0, "no change");
	/* a change outside the span: commits */
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 5, "t:30", false), 0,
		 "a put after the range");
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 5, "t:09", false), 0,
		 "a put before the range");
	/* a phantom, a delete, a new version of a key read: -ESTALE */
	err = txn_case(c, t, t2, &r, 0, 5, "t:13", false);
	CHECK_EQ(err, -ESTALE, "a key added in the range");
	CHECK(strstr(tdbc_errmsg(c), "range"), "errmsg '%s'",
	      tdbc_errmsg(c));
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 6, "t:13", true), -ESTALE,
		 "a key deleted in the range");
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 5, "t:10", false), -ESTALE,
		 "a key read, written again");
	/* reverse */
	r.flags = TDBC_RANGE_REVERSE | TDBC_RANGE_TO_INCL;
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 6, "t:15", false), -ESTALE,
		 "a key added in a reverse range");
	CHECK_EQ(txn_case(c, t, t2, &r, 0, 7, "t:21", false), 0,
		 "a put past a reverse range's top");
	/* a limited read covers what it sent: [t:10, t:14] */
	r.flags = 0;
	r.to = "t:40";
	CHECK_EQ(txn_case(c, t, t2, &r, 3, 3, "t:31", false), 0,
		 "a put past what a limited read sent");
	CHECK_EQ(txn_case(c, t, t2, &r, 3, 3, "t:11", false), -ESTALE,
		 "a put inside what a limited read sent");
	/* what the transaction wrote is not read: refused */
	CHECK_EQ(tdbc_txn_begin(c, &txn), 0, "txn_begin");
	CHECK_EQ(tdbc_put(t, txn, "t:12", 4, "y", 1, 0), 0, "txn put");
	err = tdbc_scan_range_txn(t, txn, &r, 0, &s);
	if (!err) {
		const void *kk, *vv;
		size_t kl, vl;

		err = tdbc_scan_next(s, &kk, &kl, &vv, &vl);
		tdbc_scan_close(s);
	}
	CHECK_EQ(err, -EOPNOTSUPP, "a range the transaction wrote in");
	CHECK_EQ(tdbc_txn_abort(txn), 0, "abort");
	CHECK_EQ(tdbc_scan_range_txn(t, NULL, &r, 0, &s), -EINVAL, "no txn");
	/* a hash table's whole table in a transaction */
	CHECK_EQ(tdbc_table_create(c, "hx", NULL), 0, "create hx");
	CHECK_EQ(tdbc_table_open(c, "hx", &h), 0, "open hx");
	CHECK_EQ(tdbc_table_open(c2, "hx", &h2), 0, "open hx 2");
	for (i = 0; i < 20; i++)
		CHECK_EQ(tdbc_put(h, NULL, k, (size_t)snprintf(k, sizeof(k),
			 "h:%02u", i), "v", 1, 0), 0, "put");
	CHECK_EQ(txn_case(c, h, h2, NULL, 0, 20, NULL, false), 0,
		 "a whole hash table read");
	CHECK_EQ(txn_case(c, h, h2, NULL, 0, 21, "h:99", false), -ESTALE,
		 "a key added to a hash table read whole");
	h_note("txn: range reads in transactions fail their commit on a "
	       "phantom, a delete or a new version in the span they read, "
	       "and only then");
	tdbc_close(c2);
	tdbc_close(c);
}

/* --- touch: map walks are uses of a bounded LRU table ------------------- */

#define TBOUND 200u

static int touch_rec(void *arg, const void *k, size_t kl, const void *v,
		     size_t vl, uint64_t version)
{
	(void)k; (void)kl; (void)v; (void)vl; (void)version;
	(*(unsigned long *)arg)++;
	return 0;
}

static bool has_key(struct tdbc_table *t, const char *k)
{
	char buf[16];
	long n = tdbc_get(t, NULL, k, strlen(k), buf, sizeof(buf), NULL);

	CHECK(n >= 0 || n == -ENOENT, "get %s: %ld", k, n);
	return n >= 0;
}

static void part_touch(void)
{
	struct tdbc *c = h_connect(&g_d, TDBC_NO_MAP);
	struct tdbc_range r = { .from = "o:000", .from_len = 5,
				.to = "o:100", .to_len = 5 };
	struct tdbc_table_opts o;
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	unsigned int i, kept = 0, cold = 0;
	char k[16];
	pid_t pid;
	int status;

	tdbc_table_opts_init(&o);
	o.flags = TDBC_TABLE_ORDERED;
	o.max_records = TBOUND;
	o.evict = TDBC_EVICT_LRU;
	CHECK_EQ(tdbc_table_create(c, "touch", &o), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "touch", &t), 0, "open");
	for (i = 0; i < TBOUND; i++)
		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)snprintf(k, sizeof(k),
			 "o:%03u", i), "v", 1, 0), 0, "put");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc *x = h_connect(&g_d, 0);
		struct tdbc_table *xt;
		struct tdbc_stats st2;
		unsigned long n = 0;

		CHECK_EQ(tdbc_table_open(x, "touch", &xt), 0, "open");
		CHECK(tdbc_table_mapped(xt), "the reader has no map");
		for (i = 0; i < 100; i++) {
			r.flags = i % 2 ? TDBC_RANGE_REVERSE : 0;
			CHECK_EQ(tdbc_map_range(xt, &r, 0, touch_rec, &n), 0,
				 "map_range");
		}
		CHECK(n == 100u * TBOUND / 2, "%lu records walked", n);
		/* the hints came before this on the ring: taken */
		CHECK_EQ(tdbc_stats(x, &st2), 0, "stats");
		tdbc_close(x);
		_exit(0);
	}
	h_track(pid);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader "
	      "failed");
	for (i = 0; i < TBOUND / 2; i++)
		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)snprintf(k, sizeof(k),
			 "n:%03u", i), "v", 1, 0), 0, "put new");
	for (i = 0; i < TBOUND / 2; i++) {
		snprintf(k, sizeof(k), "o:%03u", i);
		kept += has_key(t, k);
		snprintf(k, sizeof(k), "o:%03u", TBOUND / 2 + i);
		cold += has_key(t, k);
	}
	CHECK_EQ(tdbc_table_stat(c, "touch", &st), 0, "stat");
	h_note("touch: %u of %u keys walked through the map kept, %u of %u "
	       "not walked", kept, TBOUND / 2, cold, TBOUND / 2);
	CHECK(st.records == TBOUND && st.evicted == TBOUND / 2, "records "
	      "%llu evicted %llu", (unsigned long long)st.records,
	      (unsigned long long)st.evicted);
	CHECK(kept >= 75, "only %u of the %u keys walked through the map "
	      "were kept: the walks did not reach the policy", kept,
	      TBOUND / 2);
	tdbc_close(c);
}

int main(void)
{
	const char *args[] = { "--sync", "none", "--reader-lease", "100ms",
			       NULL };

	h_init("tdbd-ordered", 110);
	g_sh = mmap(NULL, sizeof(*g_sh), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(g_sh != MAP_FAILED, "mmap");
	h_start(&g_d, "ord", args);
	if (h_want("model"))
		part_model();
	if (h_want("resume"))
		part_resume();
	if (h_want("hostile"))
		part_hostile(&g_d, "hostile",
			     (unsigned int)h_scaled(5000, 1500));
	if (h_want("benched"))
		part_benched();
	if (h_want("stale"))
		part_stale();
	if (h_want("lease"))
		part_lease();
	if (h_want("txn"))
		part_txn();
	if (h_want("touch"))
		part_touch();
	h_stop(&g_d);
	h_done();
	return 0;
}
