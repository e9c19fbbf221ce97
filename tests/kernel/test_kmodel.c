// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kmodel.c - randomized model-based test of one owner through
 * libtdbclient: a seeded mix of put, put NOOVERWRITE, get, del, prefix
 * scans and transactions (committed and aborted) over a few thousand
 * keys of 1..4096 bytes with values of 0..1 MiB, each checked against a
 * reference map after every operation, plus full scans compared to the
 * model.  Backend-agnostic (kt.h): tdb.ko in the qemu guest, tdbd in the
 * host suite (which proves the test itself right).
 *
 *   TDB_KMODEL_OPS   operations per connection kind (default 20000)
 *   TDB_KMODEL_SEED  the seed (default 1); printed on failure
 * Runs once over rings and once with TDBC_NO_RINGS (tdbd's socket,
 * tdb.ko's generic netlink), each on its own table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdb/client.h>

#include "kt.h"

#define NKEYS    3000
#define NGROUPS  16            /* keys "<g>..." for prefix scans */
#define TXN_MAX  8             /* changes per transaction */

struct mkey {
	unsigned char present;
	unsigned int vlen;
	uint64_t vseed;
};

static struct mkey model[NKEYS];
static uint64_t rng;
static unsigned char *kbuf, *vbuf, *gbuf;
static unsigned long ops_done;
static const char *phase;

#define MCHECK(cond, ...) do {                                          \
		if (!(cond)) {                                          \
			h_note("seed %llu, %s, op %lu",                  \
			       (unsigned long long)kt_seed, phase, ops_done); \
			CHECK(cond, __VA_ARGS__);                       \
		}                                                       \
	} while (0)
static uint64_t kt_seed;

/* Key i: its group byte, then its number, then filler up to its length
 * (1 in 97 keys is 4096 bytes, the limit). */
static size_t make_key(unsigned int i, unsigned char *k)
{
	size_t len, j;
	uint64_t s = 0x9e3779b97f4a7c15ULL * (i + 1);
	char num[16];

	len = i % 97 == 0 ? TDB_KEY_MAX : 6 + (h_rand(&s) % 58);
	k[0] = 'a' + i % NGROUPS;
	snprintf(num, sizeof(num), "%05u", i % 100000);
	memcpy(k + 1, num, 5);
	for (j = 6; j < len; j++)
		k[j] = (unsigned char)h_rand(&s);
	return len;
}

static void make_val(uint64_t seed, unsigned int len, unsigned char *v)
{
	uint64_t s = seed | 1, x = 0;
	unsigned int j;

	for (j = 0; j < len; j++) {
		if (!(j & 7))
			x = h_rand(&s);
		v[j] = (unsigned char)(x >> ((j & 7) * 8));
	}
}

/* 0..1 MiB, mostly small: 70% <= 256, 20% <= 8 KiB, 9% <= 128 KiB, 1%
 * up to the 1 MiB limit (exactly the limit now and then). */
static unsigned int pick_vlen(void)
{
	unsigned int r = h_rand(&rng) % 100;

	if (r < 70)
		return h_rand(&rng) % 257;
	if (r < 90)
		return h_rand(&rng) % 8193;
	if (r < 99)
		return h_rand(&rng) % (128 << 10);
	return h_rand(&rng) % 4 ? h_rand(&rng) % (TDB_VALUE_MAX + 1)
				: TDB_VALUE_MAX;
}

static void check_get(struct tdbc_table *t, unsigned int i,
		      const struct mkey *m)
{
	size_t klen = make_key(i, kbuf), need = 0;
	long n;

	/* now and then a buffer too small: -ENOBUFS and the length */
	if (m->present && m->vlen > 0 && h_rand(&rng) % 8 == 0) {
		n = tdbc_get(t, NULL, kbuf, klen, gbuf, m->vlen - 1, &need);
		MCHECK(n == -ENOBUFS && need == m->vlen,
		       "get key %u into %u bytes: %ld need %zu", i,
		       m->vlen - 1, n, need);
	}
	n = tdbc_get(t, NULL, kbuf, klen, gbuf, TDB_VALUE_MAX, &need);
	if (!m->present) {
		MCHECK(n == -ENOENT, "get absent key %u: %ld (%s)", i, n,
		       h_errname((int)n));
		return;
	}
	MCHECK(n == (long)m->vlen, "get key %u: %ld (%s), want %u bytes",
	       i, n, n < 0 ? h_errname((int)n) : "", m->vlen);
	make_val(m->vseed, m->vlen, vbuf);
	MCHECK(!memcmp(gbuf, vbuf, m->vlen), "key %u: value differs", i);
}

static int key_index(const void *k, size_t klen)
{
	char num[6];
	unsigned int i;

	if (klen < 6)
		return -1;
	memcpy(num, (const char *)k + 1, 5);
	num[5] = 0;
	i = (unsigned int)strtoul(num, NULL, 10);
	if (i >= NKEYS || make_key(i, kbuf) != klen || memcmp(kbuf, k, klen))
		return -1;
	return (int)i;
}

/* Scan (group g, or all with g < 0) and compare with the model: every
 * present key once, with its value, nothing else. */
static void check_scan(struct tdbc_table *t, int g)
{
	static unsigned char seen[NKEYS];
	struct tdbc_scan *s;
	const void *k, *v;
	size_t klen, vlen;
	unsigned char prefix = g < 0 ? 0 : (unsigned char)('a' + g);
	unsigned long got = 0, want = 0;
	unsigned int i;
	int err, idx;

	memset(seen, 0, sizeof(seen));
	err = tdbc_scan_open(t, g < 0 ? NULL : &prefix, g < 0 ? 0 : 1, 0, &s);
	MCHECK(err == 0, "scan open: %s", h_errname(err));
	while ((err = tdbc_scan_next(s, &k, &klen, &v, &vlen)) == 1) {
		idx = key_index(k, klen);
		MCHECK(idx >= 0, "scan returned a key never put (%zu bytes)",
		       klen);
		MCHECK(g < 0 || idx % NGROUPS == g, "key %d outside prefix",
		       idx);
		MCHECK(!seen[idx], "scan returned key %d twice", idx);
		seen[idx] = 1;
		MCHECK(model[idx].present, "scan returned deleted key %d", idx);
		MCHECK(vlen == model[idx].vlen, "scan: key %d has %zu bytes, "
		       "want %u", idx, vlen, model[idx].vlen);
		make_val(model[idx].vseed, model[idx].vlen, vbuf);
		MCHECK(!memcmp(v, vbuf, vlen), "scan: key %d value differs",
		       idx);
		got++;
	}
	MCHECK(err == 0, "scan next: %s", h_errname(err));
	tdbc_scan_close(s);
	for (i = 0; i < NKEYS; i++)
		if (model[i].present && (g < 0 || (int)(i % NGROUPS) == g))
			want++;
	MCHECK(got == want, "scan (group %d) returned %lu keys, want %lu",
	       g, got, want);
}

/* A transaction of up to TXN_MAX puts and deletes of distinct present
 * (delete) or any (put) keys; a get inside sees its own change; the
 * model takes it on commit only.  Keys outside are unchanged meanwhile. */
static void do_txn(struct tdbc *c, struct tdbc_table *t, bool commit)
{
	struct { unsigned int i; struct mkey m; } ch[TXN_MAX];
	unsigned int n = 1 + h_rand(&rng) % TXN_MAX, j, k;
	struct tdbc_txn *x;
	size_t klen;
	long r;
	int err;

	err = tdbc_txn_begin(c, &x);
	MCHECK(err == 0, "txn begin: %s", h_errname(err));
	for (j = 0; j < n; j++) {
again:
		ch[j].i = h_rand(&rng) % NKEYS;
		for (k = 0; k < j; k++)
			if (ch[k].i == ch[j].i)
				goto again;
		klen = make_key(ch[j].i, kbuf);
		if (model[ch[j].i].present && h_rand(&rng) % 3 == 0) {
			ch[j].m.present = 0;
			err = tdbc_del(t, x, kbuf, klen);
			MCHECK(err == 0, "txn del %u: %s", ch[j].i,
			       h_errname(err));
			r = tdbc_get(t, x, kbuf, klen, gbuf, TDB_VALUE_MAX,
				     NULL);
			MCHECK(r == -ENOENT, "txn get of its deleted key %u: "
			       "%ld", ch[j].i, r);
		} else {
			ch[j].m.present = 1;
			ch[j].m.vlen = pick_vlen() % (64 << 10);
			ch[j].m.vseed = h_rand(&rng);
			make_val(ch[j].m.vseed, ch[j].m.vlen, vbuf);
			err = tdbc_put(t, x, kbuf, klen, vbuf, ch[j].m.vlen,
				       0);
			MCHECK(err == 0, "txn put %u: %s", ch[j].i,
			       h_errname(err));
			r = tdbc_get(t, x, kbuf, klen, gbuf, TDB_VALUE_MAX,
				     NULL);
			MCHECK(r == (long)ch[j].m.vlen &&
			       !memcmp(gbuf, vbuf, ch[j].m.vlen),
			       "txn get of its own put %u: %ld", ch[j].i, r);
		}
		/* outside the transaction nothing changed yet */
		check_get(t, ch[j].i, &model[ch[j].i]);
	}
	if (commit) {
		err = tdbc_txn_commit(x);
		MCHECK(err == 0, "commit: %s (%s)", h_errname(err),
		       tdbc_errmsg(c));
		for (j = 0; j < n; j++)
			model[ch[j].i] = ch[j].m;
	} else {
		err = tdbc_txn_abort(x);
		MCHECK(err == 0, "abort: %s", h_errname(err));
	}
	for (j = 0; j < n; j++)
		check_get(t, ch[j].i, &model[ch[j].i]);
}

static void run(const char *table, unsigned int flags, long nops)
{
	struct tdbc *c = kt_connect(flags);
	struct tdbc_table *t;
	struct tdbc_table_stat st;
	unsigned long present = 0;
	unsigned int i, r;
	size_t klen;
	int err;
	long n;

	phase = table;
	memset(model, 0, sizeof(model));
	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	for (ops_done = 0; ops_done < (unsigned long)nops; ops_done++) {
		i = h_rand(&rng) % NKEYS;
		r = h_rand(&rng) % 100;
		klen = make_key(i, kbuf);
		if (r < 35) {                   /* put */
			struct mkey m = { 1, pick_vlen(), h_rand(&rng) };

			make_val(m.vseed, m.vlen, vbuf);
			err = tdbc_put(t, NULL, kbuf, klen, vbuf, m.vlen, 0);
			MCHECK(err == 0, "put key %u (%zu+%u bytes): %s (%s)",
			       i, klen, m.vlen, h_errname(err),
			       tdbc_errmsg(c));
			model[i] = m;
		} else if (r < 45) {            /* put NOOVERWRITE */
			struct mkey m = { 1, pick_vlen() % 4096,
					  h_rand(&rng) };

			make_val(m.vseed, m.vlen, vbuf);
			err = tdbc_put(t, NULL, kbuf, klen, vbuf, m.vlen,
				       TDBC_NOOVERWRITE);
			MCHECK(err == (model[i].present ? -EEXIST : 0),
			       "put NOOVERWRITE key %u (present %d): %s", i,
			       model[i].present, h_errname(err));
			if (!model[i].present)
				model[i] = m;
		} else if (r < 70) {            /* get */
		} else if (r < 88) {            /* del */
			err = tdbc_del(t, NULL, kbuf, klen);
			MCHECK(err == (model[i].present ? 0 : -ENOENT),
			       "del key %u (present %d): %s", i,
			       model[i].present, h_errname(err));
			model[i].present = 0;
		} else if (r < 91) {            /* prefix scan */
			check_scan(t, (int)(h_rand(&rng) % NGROUPS));
		} else if (r < 97) {
			do_txn(c, t, true);
		} else {
			do_txn(c, t, false);
		}
		check_get(t, i, &model[i]);
		if (ops_done % 2500 == 2499)
			check_scan(t, -1);
	}
	check_scan(t, -1);
	for (i = 0; i < NKEYS; i++) {
		check_get(t, i, &model[i]);
		present += model[i].present;
	}
	err = tdbc_table_stat(c, table, &st);
	MCHECK(err == 0, "stat: %s", h_errname(err));
	MCHECK(st.records == present, "stat: %llu records, model %lu",
	       (unsigned long long)st.records, present);
	/* empty it through deletes, then drop it */
	for (i = 0; i < NKEYS; i++) {
		if (!model[i].present)
			continue;
		klen = make_key(i, kbuf);
		err = tdbc_del(t, NULL, kbuf, klen);
		MCHECK(err == 0, "final del %u: %s", i, h_errname(err));
		model[i].present = 0;
	}
	check_scan(t, -1);
	n = tdbc_table_stat(c, table, &st);
	MCHECK(n == 0 && st.records == 0, "stat after emptying: %llu records",
	       (unsigned long long)st.records);
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	MCHECK(err == 0, "drop: %s", h_errname(err));
	tdbc_close(c);
	printf("kmodel: %s: %ld operations checked (%lu keys at the end)\n",
	       table, nops, present);
}

int main(void)
{
	const char *e = getenv("TDB_KMODEL_OPS");
	long nops = h_scaled(e ? atol(e) : 20000, 100);

	e = getenv("TDB_KMODEL_SEED");
	kt_seed = e ? strtoull(e, NULL, 0) : 1;
	kt_init("kmodel", 1200);
	kbuf = malloc(TDB_KEY_MAX);
	vbuf = malloc(TDB_VALUE_MAX);
	gbuf = malloc(TDB_VALUE_MAX);
	CHECK(kbuf && vbuf && gbuf, "out of memory");
	rng = kt_seed * 0x2545F4914F6CDD1DULL + 7;
	run("kmodel_rings", 0, nops);
	rng = kt_seed * 0x2545F4914F6CDD1DULL + 8;
	run("kmodel_norings", TDBC_NO_RINGS, nops / 2);
	free(kbuf);
	free(vbuf);
	free(gbuf);
	kt_done();
	return 0;
}
