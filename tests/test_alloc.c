// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_alloc.c - unit tests of the record allocator (src/core/alloc.c):
 * its size classes, its slab sizes, and what tdbe_table_alloc_stat
 * counts of a table filled with records of many classes and emptied
 * again; and of the 12-byte record header it holds (layout.h, struct
 * tdb_rec): its bit-fields, the words readers decode by hand, and the
 * versions and lengths it can hold.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core.h"
#include "internal.h"

/* Every size 1..TDBA_SMALL_MAX gets the smallest class that holds it; a
 * class is a multiple of 16 (records are 16-byte aligned) and over
 * 256 B at most 1/16 bigger than what it holds. */
static void test_classes(void **state)
{
	size_t s;

	(void)state;
	assert_int_equal(tdba_size_class(1), 0);
	assert_int_equal(tdba_size_class(TDBA_SMALL_MAX), TDBA_NCLASSES - 1);
	assert_int_equal(tdba_class_size(TDBA_NCLASSES - 1), TDBA_SMALL_MAX);
	for (unsigned int c = 1; c < TDBA_NCLASSES; c++)
		assert_true(tdba_class_size(c) > tdba_class_size(c - 1));
	for (s = 1; s <= TDBA_SMALL_MAX; s++) {
		unsigned int c = tdba_size_class(s);
		uint32_t sz = tdba_class_size(c);

		assert_true(c < TDBA_NCLASSES);
		assert_true(sz >= s);
		assert_true(c == 0 || tdba_class_size(c - 1) < s);
		assert_int_equal(sz % 16, 0);
		if (s > 256 && (sz - s) * 16 > s) {
			fprintf(stderr, "size %zu: class of %u B wastes over "
				"1/16\n", s, sz);
			fail();
		}
	}
}

/* A slab holds at least one object and wastes (header and tail) at most
 * 1/64 of itself where 32 pages can, and never over 1/25. */
static void test_slab_pages(void **state)
{
	uint16_t pages[TDBA_NCLASSES];

	(void)state;
	tdba_init_classes(pages);
	for (unsigned int c = 0; c < TDBA_NCLASSES; c++) {
		uint32_t sz = tdba_class_size(c);
		uint32_t bytes = pages[c] * TDB_PAGE;
		uint32_t waste = (bytes - TDBA_SLAB_HDR) % sz + TDBA_SLAB_HDR;

		assert_true(pages[c] >= 1 && pages[c] <= 32);
		assert_true(bytes - TDBA_SLAB_HDR >= sz);
		if ((uint64_t)waste * 25 > bytes) {
			fprintf(stderr, "class %u (%u B): %u pages waste %u B\n",
				c, sz, pages[c], waste);
			fail();
		}
	}
	/* the records of issue 30's shapes */
	assert_true(pages[tdba_size_class(132)] >= 1);
	assert_int_equal(tdba_class_size(tdba_size_class(1040)), 1088);
}

static struct tdbe_table *table_new(struct tdbe_engine **eng)
{
	struct tdbe_table_opts to = { .max_extents = 64 };
	struct tdbe_table *t;
	int err = 0;

	*eng = tdbe_engine_new(&err);
	assert_non_null(*eng);
	assert_int_equal(tdbe_table_create(*eng, "a", &to, NULL), 0);
	assert_int_equal(tdbe_table_open(*eng, "a", &t, NULL), 0);
	return t;
}

/* Every backed page is a header, free, or in a slab or run, and the slabs
 * hold exactly what bytes_allocated says is given out. */
static void check_pages(struct tdbe_table *t)
{
	struct tdbe_alloc_stat as;
	struct tdbe_table_stat st;

	tdbe_table_stat(t, &st);
	tdbe_table_alloc_stat(t, &as);
	assert_int_equal(as.pages_backed, (uint64_t)st.extents * 512);
	assert_int_equal(as.pages_header + as.pages_free + as.slab_pages +
			 as.run_pages, as.pages_backed);
	assert_int_equal(as.slab_headers + as.slab_tails + as.slab_free +
			 as.slab_used, as.slab_pages * TDB_PAGE);
	assert_int_equal(as.slab_used + as.run_pages * TDB_PAGE,
			 st.bytes_allocated);
}

#define NKEYS 6000u

/* Value length of key i: records from 1 B to 40 KiB, every class. */
static size_t vlen_of(unsigned int i)
{
	return i % 7 == 0 ? (i * 37u) % 40000u : (i * 131u) % 3000u;
}

static void put_all(struct tdbe_table *t, const unsigned char *v,
		    unsigned int gen)
{
	char k[32];

	for (unsigned int i = 0; i < NKEYS; i++) {
		int n = snprintf(k, sizeof(k), "k%u", i);

		assert_int_equal(tdbe_put(t, k, (size_t)n, v + gen,
					  vlen_of(i + gen), 0, NULL), 0);
	}
}

/* Records of every class put, replaced with other sizes, then deleted:
 * what is read back is what was written, the page accounting holds at
 * each step, and an empty table gives back all but one slab a class. */
static void test_fill_and_empty(void **state)
{
	struct tdbe_engine *eng;
	struct tdbe_table *t = table_new(&eng);
	unsigned char *v = malloc(40000 + 8), *out = malloc(40000 + 8);
	struct tdbe_alloc_stat as;
	struct tdbe_table_stat st;
	char k[32];

	(void)state;
	assert_non_null(v);
	assert_non_null(out);
	for (unsigned int i = 0; i < 40008; i++)
		v[i] = (unsigned char)(i * 7 + 1);
	put_all(t, v, 0);
	check_pages(t);
	put_all(t, v, 3);           /* every record to another size */
	tdbe_table_reclaim(t);
	check_pages(t);
	for (unsigned int i = 0; i < NKEYS; i++) {
		int n = snprintf(k, sizeof(k), "k%u", i);
		long len = tdbe_get(t, k, (size_t)n, out, 40008, NULL);

		assert_int_equal(len, vlen_of(i + 3));
		assert_memory_equal(out, v + 3, (size_t)len);
	}
	for (unsigned int i = 0; i < NKEYS; i++) {
		int n = snprintf(k, sizeof(k), "k%u", i);

		assert_int_equal(tdbe_del(t, k, (size_t)n, NULL), 0);
	}
	tdbe_table_reclaim(t);
	check_pages(t);
	tdbe_table_stat(t, &st);
	tdbe_table_alloc_stat(t, &as);
	assert_int_equal(st.records, 0);
	assert_int_equal(as.runs, 0);
	assert_true(as.slabs <= TDBA_NCLASSES);
	tdbe_table_close(t);
	tdbe_engine_free(eng);
	free(v);
	free(out);
}

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* What the writer sets through the bit-fields, tdb_rec_load (a view's
 * relaxed word loads) and tdb_rec_version read back, for the extremes
 * and random values of every field. */
static void test_rec_header(void **state)
{
	uint32_t buf[8] = { 0 };
	struct tdb_rec *r = (struct tdb_rec *)buf;
	struct tdb_rec_hdr h;
	uint64_t seed = 1;

	(void)state;
	assert_int_equal(sizeof(*r), 12);
	assert_ptr_equal(r->data, (unsigned char *)buf + 12);
	for (int i = 0; i < 100000; i++) {
		uint64_t x = mix(&seed);
		uint32_t kl = i == 0 ? TDBE_KEY_MAX : i == 1 ? 1 :
			      (uint32_t)(x % TDBE_KEY_MAX) + 1;
		uint32_t vl = i == 0 ? TDBE_VALUE_MAX : i == 1 ? 0 :
			      (uint32_t)(x >> 12) % (TDBE_VALUE_MAX + 1);
		uint32_t fl = i == 0 ? 7 : (uint32_t)(x >> 40) % 8;
		uint64_t ver = i == 0 ? TDB_REC_VERSION_MAX : i == 1 ? 0 :
			       mix(&seed) & TDB_REC_VERSION_MAX;

		r->klen = kl;
		r->flags = fl;
		r->vlen = vl;
		tdb_rec_set_version(r, ver);
		assert_int_equal(r->klen, kl);
		assert_int_equal(r->flags, fl);
		assert_int_equal(r->vlen, vl);
		assert_int_equal(tdb_rec_version(r), ver);
		tdb_rec_load(r, &h);
		assert_int_equal(h.klen, kl);
		assert_int_equal(h.flags, fl);
		assert_int_equal(h.vlen, vl);
		assert_int_equal(h.version, ver);
		assert_int_equal(buf[3], 0);     /* nothing past 12 bytes */
	}
}

/* Versions up to 2^59 - 1 are kept whole; a bigger one is refused and
 * the table is unchanged.  The longest key and value fit the header. */
static void test_rec_limits(void **state)
{
	static const uint64_t vers[] = { 1, 0xffffffffull, 1ull << 32,
		(1ull << 43) - 1, 1ull << 43, TDB_REC_VERSION_MAX };
	struct tdbe_engine *eng;
	struct tdbe_table *t = table_new(&eng);
	unsigned char *big = calloc(1, TDBE_VALUE_MAX + 1);
	unsigned char key[TDBE_KEY_MAX];
	struct tdbe_extack ext = { 0 };
	uint64_t ver = 0;
	size_t i;

	(void)state;
	assert_non_null(big);
	for (i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		assert_int_equal(tdbe_put_ver(t, "v", 1, "x", 1, 0, vers[i],
					      NULL), 0);
		assert_int_equal(tdbe_get_ver(t, "v", 1, big, 8, NULL, &ver),
				 1);
		assert_int_equal(ver, vers[i]);
	}
	assert_int_equal(tdbe_put_ver(t, "v", 1, "y", 1, 0,
				      TDB_REC_VERSION_MAX + 1, &ext),
			 -EOVERFLOW);
	assert_non_null(ext.msg);
	assert_int_equal(tdbe_get_ver(t, "v", 1, big, 8, NULL, &ver), 1);
	assert_int_equal(big[0], 'x');
	assert_int_equal(ver, TDB_REC_VERSION_MAX);
	memset(key, 'k', sizeof(key));
	for (i = 0; i < TDBE_VALUE_MAX; i++)
		big[i] = (unsigned char)(i * 13);
	assert_int_equal(tdbe_put_ver(t, key, sizeof(key), big,
				      TDBE_VALUE_MAX, 0, 77, NULL), 0);
	memset(big, 0, TDBE_VALUE_MAX);
	assert_int_equal(tdbe_get_ver(t, key, sizeof(key), big,
				      TDBE_VALUE_MAX, NULL, &ver),
			 TDBE_VALUE_MAX);
	assert_int_equal(ver, 77);
	for (i = 0; i < TDBE_VALUE_MAX; i++)
		if (big[i] != (unsigned char)(i * 13))
			fail();
	tdbe_table_close(t);
	tdbe_engine_free(eng);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_slab_pages),
		cmocka_unit_test(test_fill_and_empty),
		cmocka_unit_test(test_rec_header),
		cmocka_unit_test(test_rec_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
