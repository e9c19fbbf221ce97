// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_keysort.c - src/daemon/durable/keysort.c: the checkpoint's key
 * sort must give exactly LMDB's default order (memcmp, then shorter
 * first), which MDB_APPEND requires.  Checked against qsort with the same comparison
 * on keys made to hit every branch: zero bytes (the chunk padding),
 * keys that are prefixes of others, long common prefixes (deeper
 * chunks), runs over and under the insertion-sort threshold, and
 * tdb-bench's "key%013u" keys; and against LMDB itself (mdb_cmp).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <lmdb.h>

#include "keysort.h"

struct k {
	unsigned char b[64];
	size_t len;
};

static int qcmp(const void *a, const void *b)
{
	const struct k *x = a, *y = b;

	return keysort_cmp(x->b, x->len, y->b, y->len);
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Sort ks with keyset_sort and compare with qsort of the same keys. */
static void check(struct k *keys, size_t n)
{
	struct keyset ks = KEYSET_INIT;
	size_t i, len;

	for (i = 0; i < n; i++)
		assert_int_equal(keyset_add(&ks, keys[i].b, keys[i].len), 0);
	assert_int_equal(keyset_sort(&ks), 0);
	qsort(keys, n, sizeof(*keys), qcmp);
	for (i = 0; i < n; i++) {
		const unsigned char *p = keyset_key(&ks, i, &len);

		assert_int_equal(len, keys[i].len);
		assert_memory_equal(p, keys[i].b, len);
	}
	keyset_free(&ks);
}

/* Keys over a tiny alphabet with zeros: ties in the padded chunks,
 * prefixes, equal keys (duplicates are allowed: any order of them). */
static void test_alphabet(void **state)
{
	static const unsigned char ab[] = { 0, 1, 'a', 0xff };
	static struct k keys[20000];
	size_t n, i, j;

	(void)state;
	for (n = 1; n <= 20000; n = n * 3 + 1) {
		for (i = 0; i < n; i++) {
			keys[i].len = 1 + rnd() % 40;
			for (j = 0; j < keys[i].len; j++)
				keys[i].b[j] = ab[rnd() % 4];
		}
		check(keys, n);
	}
}

/* A long common prefix (3 chunks deep), then variety, lengths around the
 * chunk boundaries. */
static void test_deep(void **state)
{
	static struct k keys[50000];
	size_t i, j;

	(void)state;
	for (i = 0; i < 50000; i++) {
		keys[i].len = 20 + rnd() % 30;
		memset(keys[i].b, 'p', 24);
		for (j = 20; j < keys[i].len; j++)
			keys[i].b[j] = (unsigned char)(rnd() % 3);
	}
	check(keys, 50000);
}

static void test_bench_keys(void **state)
{
	static struct k keys[200000];
	size_t i, n = 200000;

	(void)state;
	for (i = 0; i < n; i++)
		keys[i].len = (size_t)snprintf((char *)keys[i].b,
					       sizeof(keys[i].b), "key%013zu",
					       (size_t)(rnd() % 100000000));
	check(keys, n);
}

/* keysort_cmp agrees with LMDB's own comparison of a default db. */
static void test_lmdb_order(void **state)
{
	char dir[] = "/tmp/test_keysort.XXXXXX";
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0600), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	for (i = 0; i < 100000; i++) {
		unsigned char a[12], b[12];
		MDB_val x = { 1 + rnd() % 12, a }, y = { 1 + rnd() % 12, b };
		int c1, c2;

		for (size_t j = 0; j < 12; j++) {
			a[j] = (unsigned char)(rnd() % 3);
			b[j] = (unsigned char)(rnd() % 3);
		}
		c1 = mdb_cmp(txn, dbi, &x, &y);
		c2 = keysort_cmp(a, x.mv_size, b, y.mv_size);
		assert_true((c1 < 0) == (c2 < 0) && (c1 > 0) == (c2 > 0));
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	{
		char p[64];

		snprintf(p, sizeof(p), "%s/data.mdb", dir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/lock.mdb", dir);
		unlink(p);
		rmdir(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alphabet),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_bench_keys),
		cmocka_unit_test(test_lmdb_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
