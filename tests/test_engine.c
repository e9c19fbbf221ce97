// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_engine.c - unit tests of the engine API (src/core/core.h).
 *
 * Tables, names, records and their limits, the size cap, drop semantics,
 * cursors (also while the table changes) and tdbe_strerror().
 *
 * TDB_EXPECT_PAGE_SIZE=<bytes>, when set, makes every table's
 * stat.page_size be asserted equal to it (with_hugepages.sh sets it to
 * 2097152 to prove that hugetlb pages really back the tables).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"
#include "user.h"

/* ------------------------------------------------------------------ */
/* helpers                                                              */

static struct tdbe_engine *g_e;

static int setup(void **state)
{
	int err = 0;

	(void)state;
	g_e = tdbe_engine_new(&err);
	if (!g_e) {
		fprintf(stderr, "tdbe_engine_new: %d (%s)\n", err,
			tdbe_strerror(err));
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdbe_engine_free(g_e);
	g_e = NULL;
	return 0;
}

static void check_page_size(struct tdbe_table *t)
{
	struct tdbe_table_stat st;
	const char *want = getenv("TDB_EXPECT_PAGE_SIZE");

	tdbe_table_stat(t, &st);
	assert_true(st.page_size == 4096 || st.page_size == 2097152);
	if (want && *want) {
		uint64_t w = strtoull(want, NULL, 0);

		if (st.page_size != w)
			fail_msg("table '%s': stat.page_size %llu, expected %llu "
				 "(TDB_EXPECT_PAGE_SIZE)", tdbe_table_name(t),
				 (unsigned long long)st.page_size,
				 (unsigned long long)w);
	}
}

/* Create a table and open a handle to it. */
static struct tdbe_table *mk(const char *name, unsigned int max_extents)
{
	struct tdbe_table_opts o = { .max_extents = max_extents };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table *t = NULL;
	int rc;

	rc = tdbe_table_create(g_e, name, &o, &ext);
	if (rc)
		fail_msg("create '%s': %d %s (%s)", name, rc, tdbe_strerror(rc),
			 ext.msg ? ext.msg : "no msg");
	rc = tdbe_table_open(g_e, name, &t, &ext);
	if (rc)
		fail_msg("open '%s': %d %s (%s)", name, rc, tdbe_strerror(rc),
			 ext.msg ? ext.msg : "no msg");
	assert_non_null(t);
	check_page_size(t);
	return t;
}

static void put_ok(struct tdbe_table *t, const void *k, size_t kl,
		   const void *v, size_t vl)
{
	struct tdbe_extack ext = { 0 };
	int rc = tdbe_put(t, k, kl, v, vl, 0, &ext);

	if (rc)
		fail_msg("put klen %zu vlen %zu: %d %s (%s)", kl, vl, rc,
			 tdbe_strerror(rc), ext.msg ? ext.msg : "no msg");
}

static void puts_ok(struct tdbe_table *t, const char *k, const char *v)
{
	put_ok(t, k, strlen(k), v, strlen(v));
}

/* Assert that key k has exactly value v (vl bytes). */
static void expect_val(struct tdbe_table *t, const void *k, size_t kl,
		       const void *v, size_t vl)
{
	size_t cap = vl + 16, need = 12345;
	unsigned char *buf = malloc(cap);
	long n;

	assert_non_null(buf);
	n = tdbe_get(t, k, kl, buf, cap, &need);
	if (n != (long)vl)
		fail_msg("get klen %zu: returned %ld, expected %zu", kl, n, vl);
	if (vl && memcmp(buf, v, vl))
		fail_msg("get klen %zu: value differs", kl);
	free(buf);

	/* And the zero-copy path agrees. */
	{
		const void *p = NULL;
		size_t pl = 0;
		int rc;

		tdbe_read_lock();
		rc = tdbe_lookup(t, k, kl, &p, &pl);
		if (rc == 0 && pl == vl && (vl == 0 || memcmp(p, v, vl) == 0))
			rc = 1;
		tdbe_read_unlock();
		if (rc != 1)
			fail_msg("lookup klen %zu: rc %d or value differs", kl, rc);
	}
}

static void expect_vals(struct tdbe_table *t, const char *k, const char *v)
{
	expect_val(t, k, strlen(k), v, strlen(v));
}

static void expect_absent(struct tdbe_table *t, const void *k, size_t kl)
{
	char buf[8];
	size_t need = 777;
	long n = tdbe_get(t, k, kl, buf, sizeof(buf), &need);
	const void *p;
	size_t pl;
	int rc;

	if (n != -ENOENT)
		fail_msg("get of absent key (klen %zu): %ld, expected -ENOENT",
			 kl, n);
	tdbe_read_lock();
	rc = tdbe_lookup(t, k, kl, &p, &pl);
	tdbe_read_unlock();
	if (rc != -ENOENT)
		fail_msg("lookup of absent key (klen %zu): %d, expected -ENOENT",
			 kl, rc);
}

static struct tdbe_table_stat stat_of(struct tdbe_table *t)
{
	struct tdbe_table_stat st;

	memset(&st, 0xa5, sizeof(st));
	tdbe_table_stat(t, &st);
	return st;
}

/* Deterministic filler bytes. */
static void fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((i & 7) == 0) {
			x ^= x >> 31;
			x *= 0xbf58476d1ce4e5b9ull;
			x ^= x >> 29;
		}
		b[i] = (unsigned char)(x >> ((i & 7) * 8));
	}
}

/* ------------------------------------------------------------------ */
/* tables                                                               */

struct list_acc {
	int n;
	char names[16][TDBE_NAME_MAX + 1];
	uint64_t records[16];
	int stop_after;
};

static int list_cb(void *arg, const char *name,
		   const struct tdbe_table_stat *st)
{
	struct list_acc *a = arg;

	assert_non_null(name);
	assert_non_null(st);
	assert_true(strlen(name) <= TDBE_NAME_MAX);
	if (a->n < 16) {
		strcpy(a->names[a->n], name);
		a->records[a->n] = st->records;
	}
	a->n++;
	if (a->stop_after && a->n == a->stop_after)
		return 42;
	return 0;
}

static void test_table_lifecycle(void **state)
{
	struct tdbe_table_opts o = { 0 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table *a, *b, *c, *t2 = NULL;
	struct tdbe_table_stat st;
	struct list_acc acc;
	int rc;

	(void)state;

	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 0);

	a = mk("alpha", 0);
	b = mk("beta", 7);
	c = mk("gamma", TDBE_EXTENTS_MAX);

	assert_string_equal(tdbe_table_name(a), "alpha");
	assert_string_equal(tdbe_table_name(b), "beta");

	st = stat_of(a);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.bytes_used, 0);
	assert_int_equal(st.max_extents, TDBE_EXTENTS_DEFAULT);
	assert_true(st.extents <= st.max_extents);
	st = stat_of(b);
	assert_int_equal(st.max_extents, 7);
	assert_true(st.extents <= 7);
	st = stat_of(c);
	assert_int_equal(st.max_extents, TDBE_EXTENTS_MAX);

	/* Name taken. */
	ext.msg = NULL;
	rc = tdbe_table_create(g_e, "beta", &o, &ext);
	assert_int_equal(rc, -EEXIST);
	assert_non_null(ext.msg);

	/* Bad options. */
	o.max_extents = TDBE_EXTENTS_MAX + 1;
	ext.msg = NULL;
	rc = tdbe_table_create(g_e, "delta", &o, &ext);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(ext.msg);
	o.max_extents = 0;

	/* List: creation order, stats passed. */
	puts_ok(b, "k1", "v1");
	puts_ok(b, "k2", "v2");
	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 3);
	assert_string_equal(acc.names[0], "alpha");
	assert_string_equal(acc.names[1], "beta");
	assert_string_equal(acc.names[2], "gamma");
	assert_int_equal(acc.records[1], 2);

	/* List stops on non-0 and returns it. */
	memset(&acc, 0, sizeof(acc));
	acc.stop_after = 2;
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 42);
	assert_int_equal(acc.n, 2);

	/* Open twice = two counted handles. */
	ext.msg = NULL;
	assert_int_equal(tdbe_table_open(g_e, "beta", &t2, &ext), 0);
	assert_non_null(t2);
	expect_vals(t2, "k1", "v1");
	tdbe_table_close(t2);
	expect_vals(b, "k2", "v2");

	/* Drop the middle one. */
	tdbe_table_close(b);
	ext.msg = NULL;
	assert_int_equal(tdbe_table_drop(g_e, "beta", &ext), 0);
	ext.msg = NULL;
	assert_int_equal(tdbe_table_drop(g_e, "beta", &ext), -ENOENT);
	assert_non_null(ext.msg);
	ext.msg = NULL;
	t2 = NULL;
	assert_int_equal(tdbe_table_open(g_e, "beta", &t2, &ext), -ENOENT);
	assert_non_null(ext.msg);
	ext.msg = NULL;
	assert_int_equal(tdbe_table_open(g_e, "nosuch", &t2, &ext), -ENOENT);
	assert_non_null(ext.msg);

	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 2);
	assert_string_equal(acc.names[0], "alpha");
	assert_string_equal(acc.names[1], "gamma");

	/* A re-created name goes last. */
	b = mk("beta", 0);
	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 3);
	assert_string_equal(acc.names[2], "beta");
	assert_int_equal(acc.records[2], 0);

	tdbe_table_close(a);
	tdbe_table_close(b);
	tdbe_table_close(c);
	/* Tables left in the engine are freed by tdbe_engine_free. */
}

static void test_bad_names(void **state)
{
	struct tdbe_table_opts o = { 0 };
	struct tdbe_extack ext;
	struct tdbe_table *t;
	struct list_acc acc;
	char longname[TDBE_NAME_MAX + 2];
	char maxname[TDBE_NAME_MAX + 1];
	const char *bad[] = { "", longname, "a/b", "/", "abc/", NULL };
	size_t i;
	int rc, nbad = 0;

	(void)state;
	memset(longname, 'x', TDBE_NAME_MAX + 1);
	longname[TDBE_NAME_MAX + 1] = 0;
	memset(maxname, 'm', TDBE_NAME_MAX);
	maxname[TDBE_NAME_MAX] = 0;

	/* The header: -ENAMETOOLONG for a name over TDBE_NAME_MAX, -EINVAL
	 * for any other bad name.  Check them all, then fail listing every
	 * deviation. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int want = bad[i] == longname ? -ENAMETOOLONG : -EINVAL;

		ext.msg = NULL;
		rc = tdbe_table_create(g_e, bad[i], &o, &ext);
		if (rc != want) {
			print_error("create of bad name #%zu '%.12s%s' (%zu "
				    "bytes): %d %s, expected %d\n", i,
				    bad[i] ? bad[i] : "(NULL)",
				    bad[i] && strlen(bad[i]) > 12 ? "..." : "",
				    bad[i] ? strlen(bad[i]) : 0, rc,
				    tdbe_strerror(rc), want);
			nbad++;
		}
		if (rc >= 0 || !ext.msg) {
			print_error("create of bad name #%zu: rc %d, extack "
				    "message %s\n", i, rc, ext.msg ? "set" : "NULL");
			nbad++;
		}
	}
	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 0);

	/* Exactly TDBE_NAME_MAX bytes is fine. */
	t = mk(maxname, 1);
	assert_string_equal(tdbe_table_name(t), maxname);
	tdbe_table_close(t);
	/* A one-byte name too. */
	t = mk("z", 1);
	tdbe_table_close(t);

	/* Bad names are also refused (not crashing) by open and drop. */
	t = NULL;
	ext.msg = NULL;
	rc = tdbe_table_open(g_e, longname, &t, &ext);
	assert_true(rc == -EINVAL || rc == -ENOENT);
	ext.msg = NULL;
	rc = tdbe_table_drop(g_e, "", &ext);
	assert_true(rc == -EINVAL || rc == -ENOENT);

	memset(&acc, 0, sizeof(acc));
	assert_int_equal(tdbe_table_list(g_e, list_cb, &acc), 0);
	assert_int_equal(acc.n, 2);
	if (nbad)
		fail_msg("%d bad-name deviation(s), see above", nbad);
}

/* ------------------------------------------------------------------ */
/* records                                                              */

static void test_put_get_del(void **state)
{
	struct tdbe_table *t = mk("basic", 0);
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	int rc;

	(void)state;
	expect_absent(t, "a", 1);
	ext.msg = NULL;
	assert_int_equal(tdbe_del(t, "a", 1, &ext), -ENOENT);

	puts_ok(t, "key", "hello");
	expect_vals(t, "key", "hello");
	st = stat_of(t);
	assert_int_equal(st.records, 1);
	assert_int_equal(st.bytes_used, 3 + 5);
	assert_true(st.extents >= 1);

	/* Replace, longer then shorter. */
	puts_ok(t, "key", "hello, world");
	expect_vals(t, "key", "hello, world");
	st = stat_of(t);
	assert_int_equal(st.records, 1);
	assert_int_equal(st.bytes_used, 3 + 12);
	puts_ok(t, "key", "x");
	expect_vals(t, "key", "x");

	/* Keys that are prefixes of each other are distinct. */
	puts_ok(t, "ke", "two");
	puts_ok(t, "keyy", "four");
	expect_vals(t, "ke", "two");
	expect_vals(t, "key", "x");
	expect_vals(t, "keyy", "four");
	/* Binary keys with NULs. */
	put_ok(t, "\0\0", 2, "nul2", 4);
	put_ok(t, "\0", 1, "nul1", 4);
	expect_val(t, "\0\0", 2, "nul2", 4);
	expect_val(t, "\0", 1, "nul1", 4);
	st = stat_of(t);
	assert_int_equal(st.records, 5);
	assert_int_equal(st.bytes_used, (3 + 1) + (2 + 3) + (4 + 4) +
					(2 + 4) + (1 + 4));

	ext.msg = NULL;
	rc = tdbe_del(t, "key", 3, &ext);
	assert_int_equal(rc, 0);
	expect_absent(t, "key", 3);
	assert_int_equal(tdbe_del(t, "key", 3, &ext), -ENOENT);
	expect_vals(t, "ke", "two");
	expect_vals(t, "keyy", "four");
	st = stat_of(t);
	assert_int_equal(st.records, 4);
	assert_int_equal(st.bytes_used, (2 + 3) + (4 + 4) + (2 + 4) + (1 + 4));

	/* Re-insert after delete. */
	puts_ok(t, "key", "back");
	expect_vals(t, "key", "back");

	assert_int_equal(tdbe_del(t, "ke", 2, &ext), 0);
	assert_int_equal(tdbe_del(t, "key", 3, &ext), 0);
	assert_int_equal(tdbe_del(t, "keyy", 4, &ext), 0);
	assert_int_equal(tdbe_del(t, "\0", 1, &ext), 0);
	assert_int_equal(tdbe_del(t, "\0\0", 2, &ext), 0);
	st = stat_of(t);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.bytes_used, 0);
	tdbe_table_close(t);
}

static void test_nooverwrite(void **state)
{
	struct tdbe_table *t = mk("noow", 0);
	struct tdbe_extack ext = { 0 };
	int rc;

	(void)state;
	rc = tdbe_put(t, "k", 1, "first", 5, TDBE_NOOVERWRITE, &ext);
	assert_int_equal(rc, 0);
	ext.msg = NULL;
	rc = tdbe_put(t, "k", 1, "second", 6, TDBE_NOOVERWRITE, &ext);
	assert_int_equal(rc, -EEXIST);
	assert_non_null(ext.msg);
	expect_vals(t, "k", "first");
	assert_int_equal(stat_of(t).records, 1);
	assert_int_equal(stat_of(t).bytes_used, 6);

	/* Without the flag it replaces. */
	puts_ok(t, "k", "third");
	expect_vals(t, "k", "third");
	/* After a delete NOOVERWRITE inserts again. */
	assert_int_equal(tdbe_del(t, "k", 1, &ext), 0);
	rc = tdbe_put(t, "k", 1, "fourth", 6, TDBE_NOOVERWRITE, &ext);
	assert_int_equal(rc, 0);
	expect_vals(t, "k", "fourth");

	/* Unknown flags are refused. */
	ext.msg = NULL;
	rc = tdbe_put(t, "k", 1, "fifth", 5, 1u << 30, &ext);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(ext.msg);
	expect_vals(t, "k", "fourth");
	tdbe_table_close(t);
}

static void test_key_limits(void **state)
{
	struct tdbe_table *t = mk("keys", 0);
	struct tdbe_extack ext;
	unsigned char *k = malloc(TDBE_KEY_MAX + 2);
	unsigned char *k2 = malloc(TDBE_KEY_MAX + 2);
	char buf[16];
	size_t need;
	int rc;
	long n;

	(void)state;
	assert_non_null(k);
	assert_non_null(k2);
	fill(k, TDBE_KEY_MAX + 1, 1);

	put_ok(t, k, 1, "one", 3);
	expect_val(t, k, 1, "one", 3);
	put_ok(t, k, TDBE_KEY_MAX, "max", 3);
	expect_val(t, k, TDBE_KEY_MAX, "max", 3);
	put_ok(t, k, TDBE_KEY_MAX - 1, "max-1", 5);
	expect_val(t, k, TDBE_KEY_MAX - 1, "max-1", 5);
	/* Long keys differing only in the last byte. */
	memcpy(k2, k, TDBE_KEY_MAX);
	k2[TDBE_KEY_MAX - 1] ^= 1;
	expect_absent(t, k2, TDBE_KEY_MAX);
	put_ok(t, k2, TDBE_KEY_MAX, "max'", 4);
	expect_val(t, k, TDBE_KEY_MAX, "max", 3);
	expect_val(t, k2, TDBE_KEY_MAX, "max'", 4);
	assert_int_equal(stat_of(t).records, 4);
	assert_int_equal(stat_of(t).bytes_used,
			 (1 + 3) + (TDBE_KEY_MAX + 3) + (TDBE_KEY_MAX - 1 + 5) +
			 (TDBE_KEY_MAX + 4));

	/* klen 0: refused with a message, nothing stored. */
	ext.msg = NULL;
	rc = tdbe_put(t, k, 0, "zero", 4, 0, &ext);
	if (rc != -EINVAL && rc != -E2BIG)
		fail_msg("put klen 0: %d, expected -EINVAL", rc);
	assert_non_null(ext.msg);
	ext.msg = NULL;
	rc = tdbe_put(t, k, 0, "zero", 4, TDBE_NOOVERWRITE, &ext);
	assert_true(rc == -EINVAL || rc == -E2BIG);
	assert_non_null(ext.msg);

	/* TDBE_KEY_MAX + 1: refused with a message, nothing stored. */
	ext.msg = NULL;
	rc = tdbe_put(t, k, TDBE_KEY_MAX + 1, "big", 3, 0, &ext);
	if (rc != -E2BIG && rc != -EINVAL)
		fail_msg("put klen TDBE_KEY_MAX+1: %d, expected -E2BIG", rc);
	assert_non_null(ext.msg);

	assert_int_equal(stat_of(t).records, 4);
	n = tdbe_get(t, k, TDBE_KEY_MAX + 1, buf, sizeof(buf), &need);
	assert_true(n < 0);
	n = tdbe_get(t, k, 0, buf, sizeof(buf), &need);
	assert_true(n < 0);
	ext.msg = NULL;
	rc = tdbe_del(t, k, 0, &ext);
	assert_true(rc == -EINVAL || rc == -E2BIG || rc == -ENOENT);
	rc = tdbe_del(t, k, TDBE_KEY_MAX + 1, &ext);
	assert_true(rc == -EINVAL || rc == -E2BIG || rc == -ENOENT);

	/* The good ones are untouched. */
	expect_val(t, k, 1, "one", 3);
	expect_val(t, k, TDBE_KEY_MAX, "max", 3);
	assert_int_equal(stat_of(t).records, 4);
	free(k);
	free(k2);
	tdbe_table_close(t);
}

static void test_value_limits(void **state)
{
	struct tdbe_table *t = mk("vals", 0);
	struct tdbe_extack ext;
	unsigned char *v = malloc(TDBE_VALUE_MAX + 8);
	unsigned char *buf = malloc(TDBE_VALUE_MAX + 1);
	struct tdbe_table_stat st;
	size_t need;
	long n;
	int rc;

	(void)state;
	assert_non_null(v);
	assert_non_null(buf);
	fill(v, TDBE_VALUE_MAX + 8, 2);

	/* Empty value: present, length 0. */
	put_ok(t, "empty", 5, v, 0);
	expect_val(t, "empty", 5, v, 0);
	need = 99;
	n = tdbe_get(t, "empty", 5, buf, 0, &need);
	assert_int_equal(n, 0);
	assert_int_equal(stat_of(t).records, 1);

	put_ok(t, "one", 3, v, 1);
	expect_val(t, "one", 3, v, 1);

	put_ok(t, "max", 3, v, TDBE_VALUE_MAX);
	n = tdbe_get(t, "max", 3, buf, TDBE_VALUE_MAX, &need);
	assert_int_equal(n, TDBE_VALUE_MAX);
	assert_memory_equal(buf, v, TDBE_VALUE_MAX);
	expect_val(t, "max", 3, v, TDBE_VALUE_MAX);

	/* Too big: refused, nothing stored, an existing value untouched. */
	ext.msg = NULL;
	rc = tdbe_put(t, "big", 3, v, TDBE_VALUE_MAX + 1, 0, &ext);
	if (rc != -E2BIG && rc != -EINVAL)
		fail_msg("put vlen TDBE_VALUE_MAX+1: %d, expected -E2BIG", rc);
	assert_non_null(ext.msg);
	expect_absent(t, "big", 3);
	ext.msg = NULL;
	rc = tdbe_put(t, "one", 3, v + 1, TDBE_VALUE_MAX + 1, 0, &ext);
	assert_true(rc == -E2BIG || rc == -EINVAL);
	assert_non_null(ext.msg);
	expect_val(t, "one", 3, v, 1);
	st = stat_of(t);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.bytes_used, 5 + 0 + 3 + 1 + 3 + TDBE_VALUE_MAX);

	/* Several maximal values (they must not have to share an extent). */
	put_ok(t, "max2", 4, v + 1, TDBE_VALUE_MAX);
	put_ok(t, "max3", 4, v + 2, TDBE_VALUE_MAX);
	put_ok(t, "max", 3, v + 3, TDBE_VALUE_MAX);  /* replace */
	expect_val(t, "max", 3, v + 3, TDBE_VALUE_MAX);
	expect_val(t, "max2", 4, v + 1, TDBE_VALUE_MAX);
	expect_val(t, "max3", 4, v + 2, TDBE_VALUE_MAX);
	assert_int_equal(tdbe_del(t, "max2", 4, &ext), 0);
	expect_absent(t, "max2", 4);
	expect_val(t, "max3", 4, v + 2, TDBE_VALUE_MAX);

	free(v);
	free(buf);
	tdbe_table_close(t);
}

static void test_get_enobufs(void **state)
{
	struct tdbe_table *t = mk("bufs", 0);
	unsigned char v[300], buf[300];
	size_t need;
	long n;

	(void)state;
	fill(v, sizeof(v), 3);
	put_ok(t, "k", 1, v, 100);

	need = 0;
	memset(buf, 0xee, sizeof(buf));
	n = tdbe_get(t, "k", 1, buf, 10, &need);
	assert_int_equal(n, -ENOBUFS);
	assert_int_equal(need, 100);
	for (n = 10; n < (long)sizeof(buf); n++)   /* no write past cap */
		assert_int_equal(buf[n], 0xee);

	need = 0;
	n = tdbe_get(t, "k", 1, buf, 99, &need);
	assert_int_equal(n, -ENOBUFS);
	assert_int_equal(need, 100);

	need = 0;
	n = tdbe_get(t, "k", 1, NULL, 0, &need);
	assert_int_equal(n, -ENOBUFS);
	assert_int_equal(need, 100);

	n = tdbe_get(t, "k", 1, buf, 100, &need);
	assert_int_equal(n, 100);
	assert_memory_equal(buf, v, 100);

	/* Absent key with a small buffer is still -ENOENT. */
	n = tdbe_get(t, "nope", 4, buf, 0, &need);
	assert_int_equal(n, -ENOENT);

	/* After a replace, need follows the new value. */
	put_ok(t, "k", 1, v, 250);
	n = tdbe_get(t, "k", 1, buf, 100, &need);
	assert_int_equal(n, -ENOBUFS);
	assert_int_equal(need, 250);
	tdbe_table_close(t);
}

/* Fill well past many extents; everything stays readable. */
static void test_growth(void **state)
{
	struct tdbe_table *t = mk("grow", 0);
	struct tdbe_table_stat st;
	unsigned char v[1200];
	char k[32];
	uint32_t last_ext = 0, i, n = 0;
	uint64_t bytes = 0;

	(void)state;
	st = stat_of(t);
	last_ext = st.extents;
	for (i = 0; ; i++) {
		int kl = snprintf(k, sizeof(k), "grow-%u", i);
		size_t vl = 200 + (i * 37) % 1000;

		fill(v, vl, i);
		put_ok(t, k, kl, v, vl);
		bytes += kl + vl;
		n++;
		if ((i & 1023) == 0) {
			st = stat_of(t);
			assert_true(st.extents >= last_ext);
			assert_true(st.extents <= st.max_extents);
			last_ext = st.extents;
			if (st.extents >= 24)
				break;
		}
	}
	st = stat_of(t);
	assert_true(st.extents >= 24);
	assert_int_equal(st.records, n);
	assert_int_equal(st.bytes_used, bytes);
	assert_true(st.bytes_allocated >= bytes);
	assert_true(st.index_buckets >= 1);

	for (i = 0; i < n; i++) {
		int kl = snprintf(k, sizeof(k), "grow-%u", i);
		size_t vl = 200 + (i * 37) % 1000;

		fill(v, vl, i);
		expect_val(t, k, kl, v, vl);
	}
	tdbe_table_close(t);
}

/*
 * The cap: fill a small table until -ENOSPC; every acknowledged record
 * stays intact, deletes/gets work, and freed room is reused.
 */
struct rec {
	uint32_t id;
	uint32_t vl;
	uint32_t seed;
	int present;
};

static size_t cap_vlen(uint32_t i)
{
	static const size_t sizes[] = { 10, 100, 1000, 5000, 0, 50000, 300,
					1, 20000, 2000 };
	return sizes[i % 10];
}

static void cap_key(char *k, int *kl, uint32_t id)
{
	*kl = sprintf(k, "cap-%08u", id);
}

static void verify_recs(struct tdbe_table *t, struct rec *r, uint32_t n,
			unsigned char *v)
{
	uint32_t i, present = 0;
	uint64_t bytes = 0;
	struct tdbe_table_stat st;

	for (i = 0; i < n; i++) {
		char k[32];
		int kl;

		cap_key(k, &kl, r[i].id);
		if (r[i].present) {
			fill(v, r[i].vl, r[i].seed);
			expect_val(t, k, kl, v, r[i].vl);
			present++;
			bytes += kl + r[i].vl;
		} else {
			expect_absent(t, k, kl);
		}
	}
	st = stat_of(t);
	assert_int_equal(st.records, present);
	assert_int_equal(st.bytes_used, bytes);
}

static void test_cap(void **state)
{
	const unsigned int cap = 4;
	struct tdbe_table *t = mk("capped", cap);
	struct tdbe_extack ext;
	struct tdbe_table_stat st, st2;
	uint32_t nrec = 0, maxrec = 100000, i, enospc = 0, freed = 0;
	struct rec *r = calloc(maxrec, sizeof(*r));
	unsigned char *v = malloc(TDBE_VALUE_MAX);
	char k[32];
	int kl, rc;

	(void)state;
	assert_non_null(r);
	assert_non_null(v);

	/* Fill until the first -ENOSPC. */
	for (i = 0; i < maxrec; i++) {
		size_t vl = cap_vlen(i);

		cap_key(k, &kl, i);
		fill(v, vl, i);
		ext.msg = NULL;
		st = stat_of(t);
		rc = tdbe_put(t, k, kl, v, vl, 0, &ext);
		if (rc == -ENOSPC) {
			assert_non_null(ext.msg);
			st2 = stat_of(t);
			assert_int_equal(st2.records, st.records);
			assert_int_equal(st2.bytes_used, st.bytes_used);
			assert_int_equal(st2.extents, cap);
			expect_absent(t, k, kl);
			enospc++;
			break;
		}
		if (rc)
			fail_msg("put #%u: %d %s (%s)", i, rc, tdbe_strerror(rc),
				 ext.msg ? ext.msg : "");
		r[nrec++] = (struct rec){ i, vl, i, 1 };
		st = stat_of(t);
		assert_true(st.extents <= cap);
	}
	assert_true(enospc == 1);
	assert_true(nrec > 100);

	/* Keep pushing: smaller records may still fit, the table must stay
	 * exact either way. */
	for (; i < maxrec && enospc < 200; i++) {
		size_t vl = cap_vlen(i);

		cap_key(k, &kl, i);
		fill(v, vl, i);
		st = stat_of(t);
		ext.msg = NULL;
		rc = tdbe_put(t, k, kl, v, vl, 0, &ext);
		if (rc == -ENOSPC) {
			assert_non_null(ext.msg);
			st2 = stat_of(t);
			assert_int_equal(st2.records, st.records);
			assert_int_equal(st2.bytes_used, st.bytes_used);
			expect_absent(t, k, kl);
			enospc++;
			continue;
		}
		assert_int_equal(rc, 0);
		r[nrec++] = (struct rec){ i, vl, i, 1 };
	}
	assert_int_equal(stat_of(t).extents, cap);
	verify_recs(t, r, nrec, v);

	/* Replacing with a big value at the cap: -ENOSPC keeps the old. */
	{
		struct rec *x = &r[nrec / 2];

		cap_key(k, &kl, x->id);
		fill(v, TDBE_VALUE_MAX, 999);
		ext.msg = NULL;
		rc = tdbe_put(t, k, kl, v, TDBE_VALUE_MAX, 0, &ext);
		if (rc == 0) {
			x->vl = TDBE_VALUE_MAX;
			x->seed = 999;
		} else {
			assert_int_equal(rc, -ENOSPC);
			assert_non_null(ext.msg);
		}
		/* NOOVERWRITE on a present key at the cap: -EEXIST. */
		rc = tdbe_put(t, k, kl, v, 10, TDBE_NOOVERWRITE, &ext);
		assert_int_equal(rc, -EEXIST);
	}
	verify_recs(t, r, nrec, v);

	/* Deletes and gets work at the cap: delete every other record. */
	for (i = 0; i < nrec; i += 2) {
		cap_key(k, &kl, r[i].id);
		ext.msg = NULL;
		rc = tdbe_del(t, k, kl, &ext);
		assert_int_equal(rc, 0);
		r[i].present = 0;
		freed += kl + r[i].vl;
	}
	verify_recs(t, r, nrec, v);
	print_message("cap: %u records acknowledged, %u ENOSPC, %u bytes "
		      "freed\n", nrec, enospc, freed);
	assert_true(freed > TDBP_EXTENT_SIZE / 2);

	/* Room is reused: puts succeed again, well below what was freed. */
	{
		uint32_t base = 1000000, j;
		uint64_t added = 0;

		for (j = 0; added < freed / 2; j++) {
			size_t vl = cap_vlen(j % 4);  /* 10..5000 */

			assert_true(nrec < maxrec);
			cap_key(k, &kl, base + j);
			fill(v, vl, base + j);
			ext.msg = NULL;
			rc = tdbe_put(t, k, kl, v, vl, 0, &ext);
			if (rc)
				fail_msg("put after deleting %u bytes, having "
					 "re-added %llu: %d %s (%s)", freed,
					 (unsigned long long)added, rc,
					 tdbe_strerror(rc), ext.msg ? ext.msg : "");
			r[nrec++] = (struct rec){ base + j, vl, base + j, 1 };
			added += kl + vl;
		}
	}
	verify_recs(t, r, nrec, v);
	assert_true(stat_of(t).extents <= cap);

	free(r);
	free(v);
	tdbe_table_close(t);
}

/*
 * NOOVERWRITE of a present key in a full table is -EEXIST, whether or not
 * the new value would fit: nothing would be written either way.
 */
static void test_cap_nooverwrite(void **state)
{
	struct tdbe_table *t = mk("fullnoow", 1);
	unsigned char *v = malloc(TDBE_VALUE_MAX);
	struct tdbe_extack ext;
	char k[32];
	int i, rc, rc2;

	(void)state;
	assert_non_null(v);
	fill(v, TDBE_VALUE_MAX, 6);
	put_ok(t, "present", 7, "x", 1);
	for (i = 0; ; i++) {
		snprintf(k, sizeof(k), "fill%d", i);
		rc = tdbe_put(t, k, strlen(k), v, 4000, 0, &ext);
		if (rc == -ENOSPC)
			break;
		assert_int_equal(rc, 0);
	}
	ext.msg = NULL;
	rc = tdbe_put(t, "present", 7, v, 10, TDBE_NOOVERWRITE, &ext);
	ext.msg = NULL;
	rc2 = tdbe_put(t, "present", 7, v, TDBE_VALUE_MAX, TDBE_NOOVERWRITE,
		       &ext);
	expect_val(t, "present", 7, "x", 1);
	free(v);
	tdbe_table_close(t);
	if (rc != -EEXIST)
		fail_msg("full table, NOOVERWRITE of a present key, 10-byte "
			 "value: %d %s, expected -EEXIST", rc, tdbe_strerror(rc));
	if (rc2 != -EEXIST)
		fail_msg("full table, NOOVERWRITE of a present key, value that "
			 "does not fit: %d %s, expected -EEXIST", rc2,
			 tdbe_strerror(rc2));
	assert_non_null(ext.msg);
}

/* A tiny cap: one 2 MiB extent. */
static void test_cap_one_extent(void **state)
{
	struct tdbe_table *t = mk("tiny", 1);
	unsigned char *v = malloc(TDBE_VALUE_MAX);
	struct tdbe_extack ext;
	int rc, n = 0, i;
	char k[16];

	(void)state;
	assert_non_null(v);
	fill(v, TDBE_VALUE_MAX, 5);
	/* Maximal values until full (maybe none fits with the header). */
	for (i = 0; i < 8; i++) {
		snprintf(k, sizeof(k), "big%d", i);
		ext.msg = NULL;
		rc = tdbe_put(t, k, strlen(k), v, TDBE_VALUE_MAX, 0, &ext);
		if (rc == -ENOSPC) {
			assert_non_null(ext.msg);
			break;
		}
		assert_int_equal(rc, 0);
		n++;
	}
	assert_true(n <= 2);
	assert_int_equal(stat_of(t).records, n);
	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "big%d", i);
		expect_val(t, k, strlen(k), v, TDBE_VALUE_MAX);
	}
	snprintf(k, sizeof(k), "big%d", n);
	expect_absent(t, k, strlen(k));
	/* Small records still fit. */
	put_ok(t, "small", 5, v, 100);
	expect_val(t, "small", 5, v, 100);
	assert_int_equal(stat_of(t).extents, 1);
	free(v);
	tdbe_table_close(t);
}

static void test_drop_recreate(void **state)
{
	struct tdbe_table *t = mk("again", 0);
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	char k[32];
	int i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "r%d", i);
		puts_ok(t, k, "value");
	}
	tdbe_table_close(t);
	assert_int_equal(tdbe_table_drop(g_e, "again", &ext), 0);

	t = mk("again", 0);
	st = stat_of(t);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.bytes_used, 0);
	for (i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "r%d", i);
		expect_absent(t, k, strlen(k));
	}
	{
		int err = 0, rc;
		struct tdbe_cursor *c = tdbe_cursor_open(t, &err);
		const void *kp, *vp;
		size_t kl, vl;

		assert_non_null(c);
		rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl);
		assert_int_equal(rc, 0);
		tdbe_cursor_close(c);
	}
	puts_ok(t, "r1", "new");
	expect_vals(t, "r1", "new");
	tdbe_table_close(t);

	/* Repeated drop/create cycles do not leak names or fail. */
	for (i = 0; i < 50; i++) {
		t = mk("cycle", 1 + i % 3);
		puts_ok(t, "x", "y");
		tdbe_table_close(t);
		assert_int_equal(tdbe_table_drop(g_e, "cycle", &ext), 0);
	}
}

static void test_handle_across_drop(void **state)
{
	struct tdbe_table *t = mk("held", 0), *t2, *t3 = NULL;
	struct tdbe_extack ext = { 0 };
	struct tdbe_cursor *c;
	const void *kp, *vp;
	size_t kl, vl;
	int err = 0, rc, seen = 0;
	char k[32];
	int i;

	(void)state;
	for (i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "h%d", i);
		puts_ok(t, k, "before");
	}
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl);
	assert_int_equal(rc, 1);
	seen = 1;

	assert_int_equal(tdbe_table_drop(g_e, "held", &ext), 0);
	assert_int_equal(tdbe_table_open(g_e, "held", &t3, &ext), -ENOENT);

	/* Old handle still works: reads, writes, cursor. */
	expect_vals(t, "h5", "before");
	puts_ok(t, "h5", "after");
	expect_vals(t, "h5", "after");
	puts_ok(t, "new", "x");
	assert_int_equal(tdbe_del(t, "h6", 2, &ext), 0);
	expect_absent(t, "h6", 2);
	while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1)
		seen++;
	assert_int_equal(rc, 0);
	assert_true(seen >= 99);
	tdbe_cursor_close(c);
	assert_int_equal(stat_of(t).records, 100);

	/* A new table of the same name is a different table. */
	t2 = mk("held", 0);
	expect_absent(t2, "h5", 2);
	puts_ok(t2, "h5", "other");
	expect_vals(t, "h5", "after");
	expect_vals(t2, "h5", "other");
	assert_string_equal(tdbe_table_name(t), "held");
	tdbe_table_close(t);
	expect_vals(t2, "h5", "other");
	tdbe_table_close(t2);
}

/* ------------------------------------------------------------------ */
/* cursors                                                              */

static void test_cursor_empty(void **state)
{
	struct tdbe_table *t = mk("cempty", 0);
	struct tdbe_cursor *c;
	const void *kp, *vp;
	size_t kl, vl;
	int err = 0;

	(void)state;
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	assert_int_equal(tdbe_cursor_next(c, &kp, &kl, &vp, &vl), 0);
	assert_int_equal(tdbe_cursor_next(c, &kp, &kl, &vp, &vl), 0);
	tdbe_cursor_close(c);

	/* Emptied table too. */
	puts_ok(t, "a", "b");
	{
		struct tdbe_extack ext = { 0 };

		assert_int_equal(tdbe_del(t, "a", 1, &ext), 0);
	}
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	assert_int_equal(tdbe_cursor_next(c, &kp, &kl, &vp, &vl), 0);
	tdbe_cursor_close(c);
	tdbe_table_close(t);
}

/* Keys "s<id>" (id < n) with value "s<id>=<ver>"; returns id or -1. */
static long parse_key(const void *kp, size_t kl, char prefix)
{
	char tmp[32];
	char *end;
	long id;

	if (kl < 2 || kl >= sizeof(tmp) || ((const char *)kp)[0] != prefix)
		return -1;
	memcpy(tmp, kp, kl);
	tmp[kl] = 0;
	id = strtol(tmp + 1, &end, 10);
	if (*end)
		return -1;
	return id;
}

static int value_matches_key(const void *kp, size_t kl, const void *vp,
			     size_t vl)
{
	return vl > kl && memcmp(vp, kp, kl) == 0 &&
	       ((const char *)vp)[kl] == '=';
}

static void test_cursor_all_once(void **state)
{
	const int n = 20000;
	struct tdbe_table *t = mk("call", 0);
	unsigned char *seen = calloc(n, 1);
	struct tdbe_cursor *c;
	const void *kp, *vp;
	size_t kl, vl;
	int err = 0, rc, i, total = 0;
	char k[32], v[64];

	(void)state;
	assert_non_null(seen);
	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "s%d", i);
		snprintf(v, sizeof(v), "s%d=%d", i, i * 7);
		/* Include an empty-valued and a long-keyed record via id. */
		puts_ok(t, k, v);
	}
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1) {
		long id = parse_key(kp, kl, 's');

		if (id < 0 || id >= n)
			fail_msg("cursor returned unknown key (klen %zu)", kl);
		if (seen[id]++)
			fail_msg("cursor returned key s%ld twice", id);
		snprintf(v, sizeof(v), "s%ld=%ld", id, id * 7);
		assert_int_equal(vl, strlen(v));
		assert_memory_equal(vp, v, vl);
		total++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(total, n);
	tdbe_cursor_close(c);

	/* Records of the limit sizes come back whole. */
	{
		unsigned char *bk = malloc(TDBE_KEY_MAX);
		unsigned char *bv = malloc(TDBE_VALUE_MAX);
		int got_big = 0, got_empty = 0;

		fill(bk, TDBE_KEY_MAX, 11);
		fill(bv, TDBE_VALUE_MAX, 12);
		bk[0] = 'B';
		put_ok(t, bk, TDBE_KEY_MAX, bv, TDBE_VALUE_MAX);
		put_ok(t, "E", 1, "", 0);
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		total = 0;
		while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1) {
			total++;
			if (kl == TDBE_KEY_MAX) {
				assert_memory_equal(kp, bk, kl);
				assert_int_equal(vl, TDBE_VALUE_MAX);
				assert_memory_equal(vp, bv, vl);
				got_big++;
			} else if (kl == 1) {
				assert_memory_equal(kp, "E", 1);
				assert_int_equal(vl, 0);
				got_empty++;
			}
		}
		assert_int_equal(rc, 0);
		assert_int_equal(total, n + 2);
		assert_int_equal(got_big, 1);
		assert_int_equal(got_empty, 1);
		tdbe_cursor_close(c);
		free(bk);
		free(bv);
	}
	free(seen);
	tdbe_table_close(t);
}

/*
 * Stable keys s<i> are present for the whole scan (some replaced with new
 * values meanwhile); volatile keys v<i> are inserted and deleted during
 * the scan.  Stable keys must come back exactly once; volatile keys at
 * most once; every value belongs to its key.
 */
struct churn {
	struct tdbe_table *t;
	int nstable;
	int threaded;       /* failures abort() instead of cmocka fail */
	uint32_t vnext;     /* next volatile id to insert (atomic) */
	uint32_t vdel;      /* next volatile id to delete */
	uint64_t rng;
	int replaced;
};

static void churn_fail(struct churn *ch, const char *what, int rc)
{
	if (ch->threaded) {
		fprintf(stderr, "writer thread: %s: %d %s\n", what, rc,
			tdbe_strerror(rc));
		abort();
	}
	fail_msg("%s: %d %s", what, rc, tdbe_strerror(rc));
}

static void churn_step(struct churn *ch, int inserts, int deletes)
{
	static const char xs[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
	struct tdbe_extack ext;
	char k[32], v[128];
	int i, rc;

	for (i = 0; i < inserts; i++) {
		uint32_t id = ch->vnext;
		int kl = snprintf(k, sizeof(k), "v%u", id);
		int vl = snprintf(v, sizeof(v), "v%u=%.*s", id,
				  (int)(id % 90), xs);

		/* Published before the put: a scanner may see the key as
		 * soon as the put has linked it. */
		__atomic_store_n(&ch->vnext, id + 1, __ATOMIC_RELEASE);
		rc = tdbe_put(ch->t, k, kl, v, vl, 0, &ext);
		if (rc)
			churn_fail(ch, "churn put", rc);
	}
	for (i = 0; i < deletes && ch->vdel < ch->vnext; i++) {
		uint32_t id = ch->vdel++;
		int kl = snprintf(k, sizeof(k), "v%u", id);

		rc = tdbe_del(ch->t, k, kl, &ext);
		if (rc)
			churn_fail(ch, "churn del", rc);
	}
	/* Replace a stable key with a different-size value. */
	ch->rng = ch->rng * 6364136223846793005ull + 1442695040888963407ull;
	{
		uint32_t id = (uint32_t)(ch->rng >> 33) % ch->nstable;
		int kl = snprintf(k, sizeof(k), "s%u", id);
		int vl = snprintf(v, sizeof(v), "s%u=%.*s", id,
				  (int)((ch->rng >> 20) % 80), xs);

		rc = tdbe_put(ch->t, k, kl, v, vl, 0, &ext);
		if (rc)
			churn_fail(ch, "churn replace", rc);
		ch->replaced++;
	}
}

/*
 * Records of a cursor one at a time, from tdbe_cursor_next (max 0) or
 * from batches of tdbe_cursor_next_many (up to max each, or a random
 * 1..TDBE_CURSOR_MANY per call when max is TDBE_CURSOR_MANY + 1).
 */
struct cread {
	struct tdbe_cursor *c;
	unsigned int max, flags;
	uint64_t rng;
	struct tdbe_cursor_rec rec[TDBE_CURSOR_MANY];
	int n, i;
	unsigned long batches;
};

static unsigned int cread_max(struct cread *r)
{
	if (r->max <= TDBE_CURSOR_MANY)
		return r->max;
	r->rng = r->rng * 6364136223846793005ull + 1442695040888963407ull;
	return 1 + (unsigned int)(r->rng >> 33) % TDBE_CURSOR_MANY;
}

static int cread_next(struct cread *r, const void **kp, size_t *kl,
		      const void **vp, size_t *vl)
{
	if (!r->max)
		return tdbe_cursor_next(r->c, kp, kl, vp, vl);
	if (r->i == r->n) {
		r->n = tdbe_cursor_next_many(r->c, r->rec, cread_max(r),
					     r->flags);
		r->i = 0;
		if (r->n <= 0)
			return r->n;
		r->batches++;
	}
	*kp = r->rec[r->i].key;
	*kl = r->rec[r->i].klen;
	*vp = r->rec[r->i].val;
	*vl = r->rec[r->i].vlen;
	r->i++;
	return 1;
}

/* Scan c to the end (max as in struct cread); *vnext bounds the
 * volatile ids ever inserted. */
static void scan_check(struct tdbe_cursor *c, unsigned int max, int nstable,
		       const uint32_t *vnext, void (*between)(void *),
		       void *arg)
{
	struct cread rd = { .c = c, .max = max, .rng = max };
	unsigned char *sseen = calloc(nstable, 1);
	size_t vcap = 1 << 16;
	unsigned char *vseen = calloc(vcap, 1);
	const void *kp, *vp;
	size_t kl, vl;
	int rc, i;

	assert_non_null(sseen);
	assert_non_null(vseen);
	while ((rc = cread_next(&rd, &kp, &kl, &vp, &vl)) == 1) {
		long id;

		if (!value_matches_key(kp, kl, vp, vl))
			fail_msg("cursor: value does not belong to its key "
				 "(klen %zu vlen %zu)", kl, vl);
		if ((id = parse_key(kp, kl, 's')) >= 0) {
			if (id >= nstable)
				fail_msg("cursor: unknown stable key s%ld", id);
			if (sseen[id]++)
				fail_msg("cursor: stable key s%ld returned twice",
					 id);
		} else if ((id = parse_key(kp, kl, 'v')) >= 0) {
			if ((uint32_t)id >= __atomic_load_n(vnext,
							    __ATOMIC_ACQUIRE))
				fail_msg("cursor: never-inserted key v%ld", id);
			while ((size_t)id >= vcap) {
				vseen = realloc(vseen, vcap * 2);
				assert_non_null(vseen);
				memset(vseen + vcap, 0, vcap);
				vcap *= 2;
			}
			if (vseen[id]++)
				fail_msg("cursor: volatile key v%ld returned "
					 "twice", id);
		} else {
			fail_msg("cursor: unknown key (klen %zu)", kl);
		}
		if (between)
			between(arg);
	}
	assert_int_equal(rc, 0);
	for (i = 0; i < nstable; i++)
		if (sseen[i] != 1)
			fail_msg("cursor: stable key s%d returned %d times", i,
				 sseen[i]);
	free(sseen);
	free(vseen);
}

struct interleave {
	struct churn *ch;
	int calls;
};

static void interleave_cb(void *arg)
{
	struct interleave *il = arg;

	/* Mostly inserts early (splits the index under the cursor), then
	 * balanced churn. */
	il->calls++;
	churn_step(il->ch, 3, il->calls > 3000 ? 3 : 1);
}

static void fill_stable(struct tdbe_table *t, int nstable)
{
	char k[32], v[64];
	int i;

	for (i = 0; i < nstable; i++) {
		snprintf(k, sizeof(k), "s%d", i);
		snprintf(v, sizeof(v), "s%d=init", i);
		puts_ok(t, k, v);
	}
}

static void test_cursor_interleaved(void **state)
{
	const int nstable = 5000;
	struct tdbe_table *t = mk("cinter", 0);
	struct churn ch = { .t = t, .nstable = nstable, .rng = 1 };
	struct interleave il = { .ch = &ch };
	struct tdbe_cursor *c;
	int err = 0, round;

	(void)state;
	fill_stable(t, nstable);
	for (round = 0; round < 5; round++) {
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		/* the old walk, then batches of 1, 7, random, the most */
		scan_check(c, (unsigned int[]){ 0, 1, 7, TDBE_CURSOR_MANY + 1,
			   TDBE_CURSOR_MANY }[round], nstable, &ch.vnext,
			   interleave_cb, &il);
		tdbe_cursor_close(c);
	}
	assert_true(ch.vnext > 10000);
	tdbe_table_close(t);
}

/* A walk resumed in a new cursor after any key gives exactly the rest,
 * also after a key that has since been deleted. */
static void test_cursor_seek(void **state)
{
	enum { N = 300 };
	struct tdbe_table *t = mk("cseek", 0);
	static char keys[N][16];
	char big[TDBE_KEY_MAX + 1];
	struct tdbe_cursor *c;
	const void *k, *v;
	size_t kl, vl;
	int err = 0, i, n, cut;

	(void)state;
	for (i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "seek-%d", i);
		assert_int_equal(tdbe_put(t, keys[i], strlen(keys[i]), "v", 1,
					  0, NULL), 0);
	}
	/* the full walk, in order */
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	for (n = 0; tdbe_cursor_next(c, &k, &kl, &v, &vl) == 1; n++) {
		assert_true(kl < sizeof(keys[0]));
		memcpy(keys[n], k, kl);
		keys[n][kl] = 0;
	}
	tdbe_cursor_close(c);
	assert_int_equal(n, N);
	for (cut = 0; cut < N; cut += 37) {
		if (cut % 2)    /* resume after a key that is gone */
			assert_int_equal(tdbe_del(t, keys[cut],
						  strlen(keys[cut]), NULL), 0);
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		assert_int_equal(tdbe_cursor_seek(c, keys[cut],
						  strlen(keys[cut])), 0);
		for (i = cut + 1; tdbe_cursor_next(c, &k, &kl, &v, &vl) == 1;
		     i++) {
			assert_true(i < N);
			assert_memory_equal(k, keys[i], kl);
		}
		assert_int_equal(i, N);
		tdbe_cursor_close(c);
		if (cut % 2)
			assert_int_equal(tdbe_put(t, keys[cut],
				strlen(keys[cut]), "v", 1, 0, NULL), 0);
	}
	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	memset(big, 'k', sizeof(big));
	assert_int_equal(tdbe_cursor_seek(c, big, sizeof(big)), -E2BIG);
	assert_int_equal(tdbe_cursor_seek(c, big, 0), -EINVAL);
	assert_int_equal(tdbe_cursor_seek(c, big, TDBE_KEY_MAX), 0);
	tdbe_cursor_close(c);
	tdbe_table_close(t);
}

/* --- tdbe_cursor_next_many against tdbe_cursor_next ------------------- */

static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

/* Key of id: 1..48 bytes derived from it (some share prefixes); every
 * 97th is TDBE_KEY_MAX long.  Returns the length. */
static size_t many_key(unsigned char *k, uint32_t id)
{
	size_t kl = id % 97 == 0 ? TDBE_KEY_MAX : 1 + id % 48;

	fill(k, kl, id);
	if (kl >= 4)
		memcpy(k, &id, 4);      /* distinct for distinct ids */
	else
		k[0] = (unsigned char)id;
	return kl;
}

/* A value of id and version: its length is random, every 501st is
 * bigger than the cursor's first buffer (the grow path). */
static size_t many_val(unsigned char *v, uint32_t id, uint32_t ver)
{
	size_t vl = id % 501 == 0 ? 100000 : (id * 31u + ver * 7u) % 201;

	fill(v, vl, (uint64_t)id << 32 | ver);
	return vl;
}

/* Put id (key many_key(id)) with version ver, or delete it. */
static void many_set(struct tdbe_table *t, uint32_t id, uint32_t ver,
		     bool del)
{
	static unsigned char k[TDBE_KEY_MAX], v[100000];
	size_t kl = many_key(k, id);

	if (del)
		assert_int_equal(tdbe_del(t, k, kl, NULL), 0);
	else
		put_ok(t, k, kl, v, many_val(v, id, ver));
}

/* Keys of a table of 1..ids random ids (some ids map to one short key,
 * so the table holds fewer). */
static struct tdbe_table *many_table(const char *name, uint32_t ids,
				     uint64_t *x, unsigned char *present)
{
	struct tdbe_table *t = mk(name, 0);
	uint32_t i, n = 1 + rnd(x) % ids;

	for (i = 0; i < n; i++) {
		uint32_t id = rnd(x) % ids;

		many_set(t, id, 0, false);
		if (present)
			present[id] = 1;
	}
	return t;
}

struct walked {
	unsigned char *k, *v;
	size_t kl, vl;
};

/* A whole walk with tdbe_cursor_next, copied. */
static struct walked *walk_old(struct tdbe_table *t, size_t *n)
{
	struct walked *w = NULL;
	struct tdbe_cursor *c;
	const void *kp, *vp;
	size_t kl, vl, cap = 0;
	int err = 0, rc;

	c = tdbe_cursor_open(t, &err);
	assert_non_null(c);
	*n = 0;
	while ((rc = tdbe_cursor_next(c, &kp, &kl, &vp, &vl)) == 1) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			w = realloc(w, cap * sizeof(*w));
			assert_non_null(w);
		}
		w[*n].k = malloc(kl);
		w[*n].v = malloc(vl + 1);
		assert_non_null(w[*n].k);
		assert_non_null(w[*n].v);
		memcpy(w[*n].k, kp, kl);
		memcpy(w[*n].v, vp, vl);
		w[*n].kl = kl;
		w[*n].vl = vl;
		(*n)++;
	}
	assert_int_equal(rc, 0);
	tdbe_cursor_close(c);
	return w;
}

static void walked_free(struct walked *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(w[i].k);
		free(w[i].v);
	}
	free(w);
}

/* Record i of a walk is the old walk's record i. */
static void expect_walked(const struct walked *w, size_t n, size_t i,
			  const void *kp, size_t kl, const void *vp, size_t vl,
			  unsigned int flags)
{
	if (i >= n)
		fail_msg("next_many: record %zu past the old walk's %zu", i,
			 n);
	if (kl != w[i].kl || memcmp(kp, w[i].k, kl))
		fail_msg("next_many: record %zu: not the old walk's key", i);
	assert_int_equal(vl, w[i].vl);
	if (flags & TDBE_CURSOR_KEYS)
		assert_null(vp);
	else
		assert_memory_equal(vp, w[i].v, vl);
}

/* On random tables, walks in batches of random sizes (some calls the
 * old tdbe_cursor_next), keys only or not, return exactly the old walk. */
static void test_cursor_many_same(void **state)
{
	static const uint32_t ids[] = { 1, 5, 60, 700, 5000, 40000 };
	uint64_t x = 14;
	unsigned int round;

	(void)state;
	for (round = 0; round < 24; round++) {
		char name[32];
		struct tdbe_table *t;
		struct walked *w;
		struct tdbe_cursor *c;
		struct cread rd = { .rng = round };
		const void *kp, *vp;
		size_t n, i = 0, kl, vl;
		int err = 0, rc;

		snprintf(name, sizeof(name), "cmany%u", round);
		t = many_table(name, ids[round % 6], &x, NULL);
		w = walk_old(t, &n);
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		rd.c = c;
		rd.flags = round % 3 == 1 ? TDBE_CURSOR_KEYS : 0;
		/* fixed sizes 1 and 2 in some rounds, else random */
		rd.max = round % 4 == 3 ? 1 + round % 2 : TDBE_CURSOR_MANY + 1;
		for (;;) {
			bool old = rd.i == rd.n && rnd(&x) % 8 == 0;

			rc = old ? tdbe_cursor_next(c, &kp, &kl, &vp, &vl) :
				   cread_next(&rd, &kp, &kl, &vp, &vl);
			if (rc != 1)
				break;
			expect_walked(w, n, i++, kp, kl, vp, vl,
				      old ? 0 : rd.flags);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(i, n);
		/* at the end it stays at the end */
		assert_int_equal(tdbe_cursor_next_many(c, rd.rec, 5, 0), 0);
		tdbe_cursor_close(c);
		/* whole buckets: far fewer calls than records */
		if (n > 700)
			assert_true(rd.max <= 2 || rd.batches * 3 < n);
		walked_free(w, n);
		tdbe_table_close(t);
		assert_int_equal(tdbe_table_drop(g_e, name, NULL), 0);
	}
}

/*
 * With random changes between batches: each batch is what the old
 * walk gives from the same place (a cursor sought to the last key
 * returned, which may have been deleted since), keys are returned in
 * increasing order, at most once, and every key present for the whole
 * walk exactly once.
 */
static void test_cursor_many_changes(void **state)
{
	enum { IDS = 6000 };
	uint64_t x = 1414;
	unsigned int round;

	(void)state;
	for (round = 0; round < 6; round++) {
		unsigned char *present = calloc(IDS, 1), *gone = calloc(IDS, 1);
		unsigned char *seen = calloc(IDS, 1);
		unsigned char last[TDBE_KEY_MAX], k[TDBE_KEY_MAX];
		struct tdbe_cursor_rec rec[TDBE_CURSOR_MANY];
		struct tdbe_cursor *c;
		struct tdbe_table *t;
		size_t lastlen = 0;
		uint32_t ver = 1, id;
		char name[32];
		int err = 0, n, j;

		assert_non_null(present);
		assert_non_null(gone);
		assert_non_null(seen);
		snprintf(name, sizeof(name), "cmchg%u", round);
		t = many_table(name, IDS, &x, present);
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		for (;;) {
			unsigned int max = 1 + rnd(&x) % (round % 2 ?
						8 : TDBE_CURSOR_MANY);
			struct tdbe_cursor *ref = tdbe_cursor_open(t, &err);
			unsigned int flags = rnd(&x) % 2 ? TDBE_CURSOR_KEYS : 0;
			unsigned int changes = rnd(&x) % 40;

			assert_non_null(ref);
			if (lastlen)
				assert_int_equal(tdbe_cursor_seek(ref, last,
								  lastlen), 0);
			n = tdbe_cursor_next_many(c, rec, max, flags);
			assert_true(n >= 0 && n <= (int)max);
			for (j = 0; j < n; j++) {
				const void *kp, *vp;
				size_t kl, vl;
				long key_id;

				assert_int_equal(tdbe_cursor_next(ref, &kp, &kl,
							&vp, &vl), 1);
				assert_int_equal(rec[j].klen, kl);
				assert_memory_equal(rec[j].key, kp, kl);
				assert_int_equal(rec[j].vlen, vl);
				if (!(flags & TDBE_CURSOR_KEYS))
					assert_memory_equal(rec[j].val, vp, vl);
				if (lastlen)
					assert_true(tdbe_key_order(t, last,
						lastlen, kp, kl) < 0);
				memcpy(last, kp, kl);
				lastlen = kl;
				key_id = 0;
				memcpy(&key_id, kp, kl < 4 ? 1 : 4);
				/* short keys stand for several ids: count
				 * only the unambiguous ones */
				if (kl >= 4 && key_id < IDS && seen[key_id]++)
					fail_msg("key of id %ld twice", key_id);
			}
			if (!n) {
				const void *kp, *vp;
				size_t kl, vl;

				assert_int_equal(tdbe_cursor_next(ref, &kp, &kl,
							&vp, &vl), 0);
			}
			tdbe_cursor_close(ref);
			if (!n)
				break;
			while (changes--) {
				id = rnd(&x) % IDS;
				if (many_key(k, id) < 4)
					continue;       /* see above */
				if (present[id] && rnd(&x) % 3 == 0) {
					many_set(t, id, 0, true);
					present[id] = 0;
					gone[id] = 1;
				} else {
					many_set(t, id, ver++, false);
					if (!present[id])
						gone[id] = 1;   /* new */
					present[id] = 1;
				}
			}
		}
		for (id = 0; id < IDS; id++)
			if (present[id] && !gone[id] && many_key(k, id) >= 4 &&
			    seen[id] != 1)
				fail_msg("id %u present throughout, seen %d "
					 "times", id, seen[id]);
		tdbe_cursor_close(c);
		tdbe_table_close(t);
		assert_int_equal(tdbe_table_drop(g_e, name, NULL), 0);
		free(present);
		free(gone);
		free(seen);
	}
}

/* The same with a writer thread. */
struct writer_arg {
	struct churn ch;
	int stop;
	int rounds;
};

static void *writer_thread(void *p)
{
	struct writer_arg *w = p;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		churn_step(&w->ch, 4, w->ch.vnext - w->ch.vdel > 20000 ? 6 : 2);
		__atomic_store_n(&w->rounds, w->rounds + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_cursor_concurrent_writer(void **state)
{
	const int nstable = 5000;
	struct tdbe_table *t = mk("cthread", 0);
	struct writer_arg w = {
		.ch = { .t = t, .nstable = nstable, .rng = 7, .threaded = 1 } };
	struct tdbe_cursor *c;
	pthread_t th;
	int err = 0, scans = 0;

	(void)state;
	fill_stable(t, nstable);
	assert_int_equal(pthread_create(&th, NULL, writer_thread, &w), 0);
	/* Scan repeatedly while the writer runs: at least 20 scans and
	 * 20000 writer rounds. */
	while (scans < 20 || (__atomic_load_n(&w.rounds, __ATOMIC_RELAXED) <
			      20000 && scans < 5000)) {
		c = tdbe_cursor_open(t, &err);
		assert_non_null(c);
		/* odd scans in batches (random sizes) */
		scan_check(c, scans % 2 ? TDBE_CURSOR_MANY + 1 : 0, nstable,
			   &w.ch.vnext, NULL, NULL);
		tdbe_cursor_close(c);
		scans++;
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	print_message("cursor scans: %d, writer rounds: %d\n", scans,
		      w.rounds);
	tdbe_table_close(t);
}

/* ------------------------------------------------------------------ */

static void test_strerror(void **state)
{
	static const int errs[] = { EINVAL, E2BIG, EEXIST, ENOENT, ENOSPC,
				    ENOMEM, ENOBUFS, EUCLEAN };
	const char *s[sizeof(errs) / sizeof(errs[0])];
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		s[i] = tdbe_strerror(-errs[i]);
		if (!s[i] || !*s[i])
			fail_msg("tdbe_strerror(-%d): empty", errs[i]);
		for (j = 0; j < i; j++)
			if (!strcmp(s[i], s[j]))
				fail_msg("tdbe_strerror: -%d and -%d both '%s'",
					 errs[i], errs[j], s[i]);
	}
	assert_non_null(tdbe_strerror(0));
	assert_non_null(tdbe_strerror(-99999));
	assert_non_null(tdbe_strerror(12345));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_table_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_get_del, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nooverwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_get_enobufs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_growth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_nooverwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_one_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_recreate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_across_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_all_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_interleaved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_concurrent_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_seek, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_many_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cursor_many_changes, setup, teardown),
		cmocka_unit_test(test_strerror),
	};

	/* Engine errors to stderr. */
	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
