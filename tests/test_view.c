// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_view.c - a table's region mapped elsewhere and walked by views.
 *
 * A table is filled (records of many sizes, some replaced, some deleted),
 * then its memfd (tdbe_table_fd) is mapped read-only, MAP_SHARED, extent
 * by extent at addresses of the kernel's choosing, in reverse order and
 * with PROT_NONE guard pages around each extent:
 *   - in a forked child process,
 *   - at a second address in this process (and again after the table
 *     grew),
 * and every key is looked up through tdbe_view_lookup and compared with
 * what was written; deleted and never-written keys return -ENOENT.
 *
 * Then a private copy of the region is damaged (header fields, words that
 * look like offsets, lengths) in many trials: view lookups must return an
 * error (or a value inside the mapped extents), never read outside them
 * (guard pages turn a wild read into SIGSEGV) and never hang (alarm).
 *
 * TDB_EXPECT_PAGE_SIZE=<bytes>, when set, is asserted against
 * stat.page_size (with_hugepages.sh).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core.h"
#include "user.h"

#define EXT      TDBP_EXTENT_SIZE
#define NKEYS    20000u
#define GUARD    4096u

/* ------------------------------------------------------------------ */
/* the data set: key i, its value (length, seed), deleted or replaced   */

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

static size_t key_of(char *k, uint32_t i)
{
	/* Lengths 8..: some long keys too. */
	if (i % 997 == 0) {
		memset(k, 'L', TDBE_KEY_MAX);
		sprintf(k + TDBE_KEY_MAX - 16, "%015u", i);
		return TDBE_KEY_MAX - 1;
	}
	return (size_t)sprintf(k, "view-key-%u", i);
}

static size_t vlen_of(uint32_t i, uint32_t gen)
{
	uint32_t h = (i * 2654435761u) ^ (gen * 40503u);

	if (i % 4001 == 1)
		return TDBE_VALUE_MAX - (gen & 1);     /* a few huge ones */
	if (h % 10 == 0)
		return 0;
	if (h % 10 == 1)
		return 2000 + h % 30000;
	return h % 300;
}

/* 0 = never written, 1 = first version, 2 = replaced, 3 = deleted */
static int state_of(uint32_t i)
{
	if (i % 7 == 3)
		return 3;
	if (i % 5 == 2)
		return 2;
	return 1;
}

static uint8_t *g_v;   /* TDBE_VALUE_MAX scratch */

static struct tdbe_engine *g_e;
static struct tdbe_table *g_t;

static void check_page_size(struct tdbe_table *t)
{
	struct tdbe_table_stat st;
	const char *want = getenv("TDB_EXPECT_PAGE_SIZE");

	tdbe_table_stat(t, &st);
	if (want && *want && st.page_size != strtoull(want, NULL, 0))
		fail_msg("stat.page_size %llu, expected %s",
			 (unsigned long long)st.page_size, want);
}

static void put_range(uint32_t from, uint32_t to)
{
	static char k[TDBE_KEY_MAX + 16];
	struct tdbe_extack ext = { 0 };
	uint32_t i;
	int rc;

	for (i = from; i < to; i++) {
		size_t kl = key_of(k, i), vl = vlen_of(i, 1);

		fill(g_v, vl, i);
		rc = tdbe_put(g_t, k, kl, g_v, vl, 0, &ext);
		if (rc)
			fail_msg("put %u: %d (%s)", i, rc, ext.msg);
	}
	for (i = from; i < to; i++) {
		size_t kl = key_of(k, i), vl = vlen_of(i, 2);

		if (state_of(i) == 2) {
			fill(g_v, vl, i + 1000000);
			rc = tdbe_put(g_t, k, kl, g_v, vl, 0, &ext);
			assert_int_equal(rc, 0);
		} else if (state_of(i) == 3) {
			assert_int_equal(tdbe_del(g_t, k, kl, &ext), 0);
		}
	}
}

static int setup(void **state)
{
	struct tdbe_table_opts o = { 0 };
	struct tdbe_extack ext = { 0 };
	int err = 0;

	(void)state;
	g_v = malloc(TDBE_VALUE_MAX);
	g_e = tdbe_engine_new(&err);
	if (!g_v || !g_e)
		return -1;
	if (tdbe_table_create(g_e, "viewed", &o, &ext) ||
	    tdbe_table_open(g_e, "viewed", &g_t, &ext))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdbe_table_close(g_t);
	tdbe_engine_free(g_e);
	free(g_v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* mapping                                                              */

struct mapping {
	const void *ext[TDBE_EXTENTS_DEFAULT];
	void *area[TDBE_EXTENTS_DEFAULT];   /* with guards */
	uint32_t n;
};

/* Reserve guard + extent + guard, map the extent into the middle. */
static void *guarded_area(void)
{
	void *a = mmap(NULL, EXT + 2 * GUARD, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return a == MAP_FAILED ? NULL : a;
}

/*
 * Map n extents of fd read-only, in reverse order, each between guard
 * pages.  Hugetlb mappings must be 2 MiB aligned, so for those the kernel
 * picks the address (the guards then are whatever is unmapped around).
 * Returns 0 or -errno; usable from the child (no cmocka calls).
 */
static int map_fd(struct mapping *m, int fd, uint32_t n)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = (int)n - 1; i >= 0; i--) {
		void *a = guarded_area(), *p;

		if (!a)
			return -ENOMEM;
		p = mmap((char *)a + GUARD, EXT, PROT_READ,
			 MAP_SHARED | MAP_FIXED, fd, (off_t)i * EXT);
		if (p == MAP_FAILED) {
			/* hugetlb: needs a 2 MiB aligned address */
			munmap(a, EXT + 2 * GUARD);
			a = NULL;
			p = mmap(NULL, EXT, PROT_READ, MAP_SHARED, fd,
				 (off_t)i * EXT);
			if (p == MAP_FAILED)
				return -errno;
		}
		m->ext[i] = p;
		m->area[i] = a;
	}
	m->n = n;
	return 0;
}

static void unmap(struct mapping *m)
{
	uint32_t i;

	for (i = 0; i < m->n; i++) {
		if (m->area[i])
			munmap(m->area[i], EXT + 2 * GUARD);
		else
			munmap((void *)m->ext[i], EXT);
	}
	m->n = 0;
}

/* Private guarded copies of the extents of m (writable). */
static void copy_private(struct mapping *dst, const struct mapping *src)
{
	uint32_t i;

	memset(dst, 0, sizeof(*dst));
	for (i = 0; i < src->n; i++) {
		char *a = guarded_area();

		assert_non_null(a);
		assert_int_equal(mprotect(a + GUARD, EXT, PROT_READ | PROT_WRITE),
				 0);
		memcpy(a + GUARD, src->ext[i], EXT);
		dst->ext[i] = a + GUARD;
		dst->area[i] = a;
	}
	dst->n = src->n;
}

/* ------------------------------------------------------------------ */
/* checking every key through a view; returns the number of errors and
 * prints the first few (no cmocka calls: also runs in the child) */

static int verify_view(const struct tdbe_view *v, uint32_t nkeys,
		       const char *who)
{
	static char k[TDBE_KEY_MAX + 16];
	struct tdbe_extack ext = { 0 };
	int errors = 0, rc;
	uint32_t i;

	rc = tdbe_view_check(v, &ext);
	if (rc) {
		fprintf(stderr, "%s: view_check: %d %s (%s)\n", who, rc,
			tdbe_strerror(rc), ext.msg ? ext.msg : "");
		return 1;
	}
	/* A few never-written ids past the end too. */
	for (i = 0; i < nkeys + 100; i++) {
		size_t kl = key_of(k, i), vl = 0;
		const void *val = NULL;
		int st = i < nkeys ? state_of(i) : 0;

		rc = tdbe_view_lookup(v, k, kl, &val, &vl);
		if (st == 0 || st == 3) {
			if (rc != -ENOENT && errors++ < 5)
				fprintf(stderr, "%s: key %u (%s): %d, expected "
					"-ENOENT\n", who, i,
					st ? "deleted" : "never written", rc);
			continue;
		}
		if (rc) {
			if (errors++ < 5)
				fprintf(stderr, "%s: key %u: %d %s\n", who, i,
					rc, tdbe_strerror(rc));
			continue;
		}
		{
			size_t want = vlen_of(i, st);

			fill(g_v, want, st == 2 ? i + 1000000 : i);
			if (vl != want || (want && memcmp(val, g_v, want))) {
				if (errors++ < 5)
					fprintf(stderr, "%s: key %u: value "
						"differs (%zu bytes, want %zu)\n",
						who, i, vl, want);
			}
		}
	}
	/* Bad key sizes are refused. */
	if (tdbe_view_lookup(v, k, 0, &(const void *){ 0 }, &(size_t){ 0 }) >= 0)
		errors++;
	return errors;
}

static uint32_t used_extents(int fd, const void *ext0)
{
	struct tdbe_table_stat st;
	struct stat sb;
	uint32_t n = tdbe_view_extents(ext0);

	tdbe_table_stat(g_t, &st);
	assert_int_equal(fstat(fd, &sb), 0);
	if (n != st.extents || (uint64_t)sb.st_size < (uint64_t)n * EXT)
		fail_msg("view_extents %u, stat.extents %u, fd size %lld", n,
			 st.extents, (long long)sb.st_size);
	return n;
}

/* Map extent 0 alone to read how many extents are in use. */
static uint32_t peek_extents(int fd)
{
	const void *p = mmap(NULL, EXT, PROT_READ, MAP_SHARED, fd, 0);
	uint32_t n;

	assert_true(p != MAP_FAILED);
	n = used_extents(fd, p);
	munmap((void *)p, EXT);
	return n;
}

/* ------------------------------------------------------------------ */

static void test_view_child(void **state)
{
	struct tdbe_table_stat st;
	int fd, status = 0;
	uint32_t n;
	pid_t pid;

	(void)state;
	put_range(0, NKEYS);
	check_page_size(g_t);
	tdbe_table_stat(g_t, &st);
	assert_true(st.extents >= 4);
	fd = tdbe_table_fd(g_t);
	if (fd < 0)
		fail_msg("tdbe_table_fd: %d (the user home has memfds)", fd);
	n = peek_extents(fd);
	assert_int_equal(n, st.extents);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static struct mapping m;
		struct tdbe_view v;
		int rc, errors;

		alarm(120);
		rc = map_fd(&m, fd, n);
		if (rc) {
			fprintf(stderr, "child: map: %d\n", rc);
			_exit(2);
		}
		if (tdbe_view_extents(m.ext[0]) != n) {
			fprintf(stderr, "child: view_extents differs\n");
			_exit(3);
		}
		v.ext = m.ext;
		v.nextents = n;
		errors = verify_view(&v, NKEYS, "child");
		/* Fewer extents than the region uses: refused. */
		v.nextents = n - 1;
		rc = tdbe_view_check(&v, NULL);
		if (rc != -EUCLEAN) {
			fprintf(stderr, "child: view of %u of %u extents: "
				"check %d\n", n - 1, n, rc);
			errors++;
		}
		unmap(&m);
		_exit(errors ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child: %s %d", WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status)
					   : WTERMSIG(status));
}

static void test_view_second_address(void **state)
{
	static struct mapping m1, m2;
	struct tdbe_view v;
	uint32_t n, n2;
	int fd = tdbe_table_fd(g_t);

	(void)state;
	assert_true(fd >= 0);
	/* The table from the previous test. */
	assert_int_equal(tdbe_table_fd(g_t), fd);
	n = peek_extents(fd);
	assert_int_equal(map_fd(&m1, fd, n), 0);
	v.ext = m1.ext;
	v.nextents = n;
	assert_int_equal(verify_view(&v, NKEYS, "second address"), 0);

	/* More extents than in use are fine if mapped... */
	/* ...and the same region twice at two addresses agrees. */
	assert_int_equal(map_fd(&m2, fd, n), 0);
	assert_true(m2.ext[0] != m1.ext[0]);
	v.ext = m2.ext;
	assert_int_equal(verify_view(&v, NKEYS, "third address"), 0);
	unmap(&m2);

	/* Grow the table: the old mapping, with the old extent count, is
	 * now refused; a new one sees everything. */
	put_range(NKEYS, NKEYS + 15000);
	n2 = peek_extents(fd);
	assert_true(n2 > n);
	v.ext = m1.ext;
	v.nextents = n;
	assert_int_equal(tdbe_view_check(&v, NULL), -EUCLEAN);
	unmap(&m1);
	assert_int_equal(map_fd(&m1, fd, n2), 0);
	v.ext = m1.ext;
	v.nextents = n2;
	assert_int_equal(verify_view(&v, NKEYS + 15000, "after growth"), 0);
	unmap(&m1);
}

/* ------------------------------------------------------------------ */
/* damage                                                               */

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

struct patch {
	unsigned char *at;
	unsigned char old[8];
	int len;
};

static int in_extents(const struct mapping *m, const void *p, size_t len)
{
	uint32_t i;

	for (i = 0; i < m->n; i++) {
		const char *b = m->ext[i];

		if ((const char *)p >= b && (const char *)p + len <= b + EXT)
			return 1;
	}
	return 0;
}

/* Look every key up; anything but a crash, a hang or a pointer outside
 * the extents is acceptable.  Returns how many lookups said -EUCLEAN. */
static uint64_t probe(const struct mapping *m, uint32_t nkeys,
		      uint64_t *found)
{
	static char k[TDBE_KEY_MAX + 16];
	struct tdbe_view v = { .ext = m->ext, .nextents = m->n };
	struct tdbe_extack ext = { 0 };
	uint64_t euclean = 0;
	uint32_t i;
	int rc;

	rc = tdbe_view_check(&v, &ext);
	if (rc) {
		if (rc != -EUCLEAN && rc != -EINVAL)
			fail_msg("view_check of a damaged region: %d", rc);
		assert_non_null(ext.msg);
	}
	(void)tdbe_view_extents(m->ext[0]);
	for (i = 0; i < nkeys; i++) {
		size_t kl = key_of(k, i), vl = 0;
		const void *val = NULL;

		rc = tdbe_view_lookup(&v, k, kl, &val, &vl);
		if (rc == 0) {
			if (vl > TDBE_VALUE_MAX || !in_extents(m, val, vl))
				fail_msg("damaged view: key %u returned a value "
					 "outside the extents", i);
			(*found)++;
		} else if (rc == -EUCLEAN || rc == -EINVAL) {
			euclean++;
		} else if (rc != -ENOENT) {
			fail_msg("damaged view: key %u: %d", i, rc);
		}
	}
	return euclean;
}

static void patch_word(struct patch *p, void *at, const void *val, int len)
{
	p->at = at;
	p->len = len;
	memcpy(p->old, at, len);
	memcpy(at, val, len);
}

static void unpatch(struct patch *p, int n)
{
	while (n-- > 0)
		memcpy(p[n].at, p[n].old, p[n].len);
}

/* A damaging value for a word that held an offset. */
static uint64_t bad_offset(uint64_t old, uint32_t n)
{
	uint64_t size = (uint64_t)n * EXT;

	switch (rnd() % 12) {
	case 0: return 0;
	case 1: return ~0ull;
	case 2: return size;                          /* just past the end */
	case 3: return size + (rnd() % (64 * EXT));   /* beyond */
	case 4: return (rnd() % n) * EXT + EXT - 1 - rnd() % 64; /* ext end */
	case 5: return old ^ 1;                       /* node <-> bucket */
	case 6: return old + 1 + rnd() % 7;           /* misaligned */
	case 7: return (rnd() % size) & ~7ull;        /* random, aligned */
	case 8: return rnd() % size;                  /* random */
	case 9: return 8 | (rnd() & 1);               /* into the header */
	case 10: return old ^ (1ull << (rnd() % 64)); /* a bit flip */
	default: return rnd();
	}
}

static void test_view_damaged(void **state)
{
	static struct mapping m, priv;
	uint32_t n, i, nkeys = NKEYS + 15000;
	uint64_t *cand = NULL, ncand = 0, cap = 0, trials = 0, euclean = 0,
		 found = 0;
	int fd = tdbe_table_fd(g_t), t;
	const char *env = getenv("TDB_VIEW_TRIALS");
	int ntrials = env && *env ? atoi(env) : 300;

	(void)state;
	n = peek_extents(fd);
	assert_int_equal(map_fd(&m, fd, n), 0);
	copy_private(&priv, &m);
	unmap(&m);
	alarm(600);	/* a hang is a failure too */

	/* Undamaged copy works. */
	{
		struct tdbe_view v = { .ext = priv.ext, .nextents = priv.n };

		assert_int_equal(verify_view(&v, nkeys, "private copy"), 0);
	}

	/* Words that look like offsets inside the region (candidates for
	 * index slots, bucket entries, record offsets, list links). */
	for (i = 0; i < priv.n; i++) {
		const uint64_t *w = priv.ext[i];
		size_t j;

		for (j = 0; j < EXT / 8; j++) {
			uint64_t x = w[j] & ~1ull;

			if (x >= 64 && x < (uint64_t)priv.n * EXT &&
			    (x & 7) == 0) {
				if (ncand == cap) {
					cap = cap ? cap * 2 : 4096;
					cand = realloc(cand, cap * sizeof(*cand));
					assert_non_null(cand);
				}
				cand[ncand++] = (uint64_t)i << 32 | j;
			}
		}
	}
	print_message("damage: %u extents, %llu offset-like words\n", priv.n,
		      (unsigned long long)ncand);
	assert_true(ncand > 1000);

	/* 1. The header: every 4-byte field of the first 256 bytes. */
	for (i = 0; i < 256; i += 4) {
		static const uint32_t vals[] = { 0, 1, 0xffffffffu, 0x80000000u,
						 4096, 2097152, 7 };
		size_t j;

		for (j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
			struct patch p;

			patch_word(&p, (char *)priv.ext[0] + i, &vals[j], 4);
			euclean += probe(&priv, 2000, &found);
			unpatch(&p, 1);
			trials++;
		}
	}
	/* A garbage header: refused by view_check. */
	{
		struct tdbe_view v = { .ext = priv.ext, .nextents = priv.n };
		unsigned char save[256];

		memcpy(save, priv.ext[0], 256);
		memset((void *)priv.ext[0], 0xff, 256);
		assert_int_equal(tdbe_view_check(&v, NULL), -EUCLEAN);
		euclean += probe(&priv, 500, &found);
		memset((void *)priv.ext[0], 0, 256);
		assert_int_equal(tdbe_view_check(&v, NULL), -EUCLEAN);
		euclean += probe(&priv, 500, &found);
		memcpy((void *)priv.ext[0], save, 256);
	}

	/* 2. Offset-like words get bad offsets, a few at a time. */
	for (t = 0; t < ntrials; t++) {
		struct patch p[16];
		int np = 1 + rnd() % 8, j;

		for (j = 0; j < np; j++) {
			uint64_t c = cand[rnd() % ncand];
			uint64_t *w = (uint64_t *)priv.ext[c >> 32] +
				      (uint32_t)c;
			uint64_t nv = bad_offset(*w, priv.n);

			patch_word(&p[j], w, &nv, 8);
		}
		euclean += probe(&priv, nkeys, &found);
		unpatch(p, np);
		trials++;
	}

	/* 3. Lengths and counts: small 32-bit values next to offsets
	 * (record klen/vlen, bucket count/cap) get large ones. */
	for (t = 0; t < ntrials; t++) {
		struct patch p[8];
		int np = 1 + rnd() % 4, j;

		for (j = 0; j < np; j++) {
			uint64_t c = cand[rnd() % ncand];
			uint64_t off = (uint64_t)(c >> 32) * EXT +
				       (uint32_t)c * 8ull;
			uint64_t target = *(const uint64_t *)((const char *)
				priv.ext[c >> 32] + (off & (EXT - 1))) & ~1ull;
			static const uint32_t vals[] = { 0xffffffffu,
				TDBE_KEY_MAX + 1, TDBE_VALUE_MAX + 1, 2097152,
				4096, 0x7fffffff, 1000000 };
			uint32_t nv = vals[rnd() % 7], *w;

			/* Damage the first words of what it points at. */
			if (target + 16 > (uint64_t)priv.n * EXT ||
			    (target & (EXT - 1)) + 16 > EXT) {
				np = j;
				break;
			}
			w = (uint32_t *)((char *)priv.ext[target / EXT] +
					 (target & (EXT - 1))) + rnd() % 4;
			patch_word(&p[j], w, &nv, 4);
		}
		euclean += probe(&priv, nkeys, &found);
		unpatch(p, np);
		trials++;
	}

	/* 4. Random bytes anywhere. */
	for (t = 0; t < ntrials / 2; t++) {
		struct patch p[64];
		int np = 1 + rnd() % 64, j;

		for (j = 0; j < np; j++) {
			uint64_t off = rnd() % ((uint64_t)priv.n * EXT - 8);
			uint64_t nv = rnd();

			patch_word(&p[j], (char *)priv.ext[off / EXT] +
				   (off & (EXT - 1) & ~7ull), &nv, 8);
		}
		euclean += probe(&priv, 3000, &found);
		unpatch(p, np);
		trials++;
	}
	alarm(0);

	/* Restored: everything intact again. */
	{
		struct tdbe_view v = { .ext = priv.ext, .nextents = priv.n };

		assert_int_equal(verify_view(&v, nkeys, "restored copy"), 0);
	}
	print_message("damage: %llu trials, %llu lookups refused (-EUCLEAN), "
		      "%llu found\n", (unsigned long long)trials,
		      (unsigned long long)euclean, (unsigned long long)found);
	assert_true(euclean > 0);
	free(cand);
	unmap(&priv);
}

/* A view of something that is no region at all. */
static void test_view_not_a_region(void **state)
{
	static struct mapping m;
	struct tdbe_extack ext = { 0 };
	struct tdbe_view v;
	const void *val;
	size_t vl;
	char *a = guarded_area();

	(void)state;
	assert_non_null(a);
	assert_int_equal(mprotect(a + GUARD, EXT, PROT_READ | PROT_WRITE), 0);
	memset(&m, 0, sizeof(m));
	m.ext[0] = a + GUARD;
	m.n = 1;
	v.ext = m.ext;
	v.nextents = 1;
	assert_int_equal(tdbe_view_check(&v, &ext), -EUCLEAN);
	assert_non_null(ext.msg);
	assert_true(tdbe_view_lookup(&v, "k", 1, &val, &vl) < 0);
	fill(a + GUARD, EXT, 42);
	assert_int_equal(tdbe_view_check(&v, NULL), -EUCLEAN);
	assert_true(tdbe_view_lookup(&v, "k", 1, &val, &vl) < 0);
	v.nextents = 0;
	assert_true(tdbe_view_check(&v, NULL) < 0);
	assert_true(tdbe_view_lookup(&v, "k", 1, &val, &vl) < 0);
	munmap(a, EXT + 2 * GUARD);
}

int main(void)
{
	/* The tests run in order and share one table. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_child),
		cmocka_unit_test(test_view_second_address),
		cmocka_unit_test(test_view_damaged),
		cmocka_unit_test(test_view_not_a_region),
	};

	tdbp_set_log(tdbp_log_stderr, (void *)(long)TDBP_LOG_ERR);
	return cmocka_run_group_tests(tests, setup, teardown);
}
