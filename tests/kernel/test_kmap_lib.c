// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kmap_lib.c - libtdbclient's table maps against tdb.ko
 * (TDB_BACKEND=kernel): the library maps a table from /dev/tdb at the
 * TABLE_MAP cookie's offset (src/client/map.c) and reads it in the
 * process.  tdb.ko only (the same library against tdbd is tested by the
 * host suite's tdbd-map tests).
 *
 *   - a table opened on a connection with rings is mapped; one opened
 *     with TDBC_NO_MAP is not; both read the same values (tdbc_get,
 *     tdbc_get_alloc, tdbc_read_begin/tdbc_get_ref/tdbc_read_end)
 *   - the table grows over several extents while mapped: the library
 *     maps the new ones, every key reads back
 *   - 4 reader processes on maps while a writer overwrites: every value
 *     read is one the writer wrote for that key, generations never go
 *     back
 *   - a drop while mapped: gets say ENOENT (through the ring), no crash
 *   - a client that may not read the table (uid 65534) gets no map and
 *     EACCES from its gets
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>
#include <tdb/kdev.h>

#include "kt.h"

#define NKEYS   2000
#define NREAD   4

static int val_of(char *v, size_t cap, unsigned int i, unsigned int gen)
{
	unsigned int n = snprintf(v, cap, "k%u g%u ", i, gen);
	unsigned int pad = (i * 13 + gen * 7) % 3000;

	for (unsigned int k = 0; k < pad && n < cap - 1; k++)
		v[n++] = (char)('a' + (i + k + gen) % 26);
	return (int)n;
}

/* The generation in a value, after checking it is the key's, whole. */
static unsigned int check_val(const char *v, long len, unsigned int i)
{
	char want[4096];
	unsigned int k, g;

	CHECK(len > 0 && sscanf(v, "k%u g%u ", &k, &g) == 2 && k == i,
	      "key %u: a value of %ld bytes that is not its own", i, len);
	CHECK(val_of(want, sizeof(want), i, g) == len &&
	      !memcmp(want, v, (size_t)len), "key %u gen %u: the value is "
	      "not what was written", i, g);
	return g;
}

static void key_of(char *k, size_t cap, unsigned int i)
{
	snprintf(k, cap, "lk-%u", i);
}

static void part_same(struct tdbc *c)
{
	struct tdbc *plain = kt_connect(TDBC_NO_MAP);
	struct tdbc_table *t = kt_open(c, "kl"), *tp = kt_open(plain, "kl");
	char key[32], a[4096], b[4096];
	const void *ref;
	size_t rlen;
	void *al;

	CHECK(tdbc_table_mapped(t) == 1, "a table of a connection with rings "
	      "on /dev/tdb is not mapped");
	CHECK(tdbc_table_mapped(tp) == 0, "TDBC_NO_MAP mapped a table");
	for (unsigned int i = 0; i < NKEYS + 100; i++) {
		long la, lb, lc;

		key_of(key, sizeof(key), i);
		la = tdbc_get(t, NULL, key, strlen(key), a, sizeof(a), NULL);
		lb = tdbc_get(tp, NULL, key, strlen(key), b, sizeof(b), NULL);
		CHECK(la == lb && (la < 0 || !memcmp(a, b, (size_t)la)),
		      "%s: map %ld, rings %ld", key, la, lb);
		CHECK(i < NKEYS ? la > 0 : la == -ENOENT, "%s: %ld", key, la);
		if (i % 10)
			continue;
		lc = tdbc_get_alloc(t, NULL, key, strlen(key), &al);
		CHECK(lc == la && (lc < 0 || !memcmp(al, a, (size_t)lc)),
		      "get_alloc %s: %ld", key, lc);
		if (lc >= 0)
			free(al);
		CHECK(tdbc_read_begin(c) == 0, "read_begin");
		lc = tdbc_get_ref(t, key, strlen(key), &ref, &rlen);
		CHECK(i < NKEYS ? lc == 0 && rlen == (size_t)la &&
		      !memcmp(ref, a, rlen) : lc == -ENOENT, "get_ref %s: %ld",
		      key, lc);
		CHECK(tdbc_read_end(c) == 0, "read_end");
	}
	CHECK(tdbc_table_mapped(t) == 1, "the map went away on a quiet table");
	tdbc_table_close(tp);
	tdbc_close(plain);
	tdbc_table_close(t);
	h_note("same: %u keys and 100 absent ones read the same through the "
	       "map and the rings", (unsigned int)NKEYS);
}

static void part_grow(struct tdbc *c)
{
	struct tdbc_table *t = kt_open(c, "kl");
	struct tdbc_table_stat st0, st1;
	char key[32], v[4096], got[4096];

	CHECK(tdbc_table_stat(c, "kl", &st0) == 0, "stat");
	/* about 3 KiB per value on top: 12 MiB more, several extents */
	for (unsigned int i = NKEYS; i < NKEYS + 4000; i++) {
		int vl = val_of(v, sizeof(v), i, 1);
		long l;

		key_of(key, sizeof(key), i);
		CHECK(tdbc_put(t, NULL, key, strlen(key), v, vl, 0) == 0, "put");
		key_of(key, sizeof(key), i / 2);
		l = tdbc_get(t, NULL, key, strlen(key), got, sizeof(got), NULL);
		check_val(got, l, i / 2);
	}
	CHECK(tdbc_table_stat(c, "kl", &st1) == 0, "stat");
	CHECK(st1.extents >= st0.extents + 3, "grew from %u to %u extents "
	      "only", st0.extents, st1.extents);
	CHECK(tdbc_table_mapped(t) == 1, "not mapped after growing");
	for (unsigned int i = 0; i < NKEYS + 4000; i += 7) {
		long l;

		key_of(key, sizeof(key), i);
		l = tdbc_get(t, NULL, key, strlen(key), got, sizeof(got), NULL);
		check_val(got, l, i);
	}
	tdbc_table_close(t);
	h_note("grow: %u -> %u extents while mapped, every key reads back",
	       st0.extents, st1.extents);
}

struct shared {
	volatile int stop;
	volatile unsigned long reads[NREAD];
	volatile unsigned int issued[NKEYS];
};

static void reader(struct shared *s, int n)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "kl");
	unsigned int seen[NKEYS] = { 0 };
	uint64_t seed = 99 + (uint64_t)n;
	char key[32], got[4096];

	CHECK(tdbc_table_mapped(t) == 1, "reader %d: not mapped", n);
	while (!s->stop) {
		unsigned int i = (unsigned int)(h_rand(&seed) % NKEYS), g;
		long l;

		key_of(key, sizeof(key), i);
		l = tdbc_get(t, NULL, key, strlen(key), got, sizeof(got), NULL);
		g = check_val(got, l, i);
		CHECK(g >= seen[i] && g <= s->issued[i], "reader %d: key %u "
		      "gen %u (seen %u, issued %u)", n, i, g, seen[i],
		      s->issued[i]);
		seen[i] = g;
		s->reads[n]++;
	}
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

static void part_procs(struct tdbc *c)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct tdbc_table *t = kt_open(c, "kl");
	unsigned int gen[NKEYS] = { 0 }, puts = 0;
	unsigned long reads = 0;
	uint64_t seed = 5, end;
	pid_t pid[NREAD];
	char key[32], v[4096];
	int st;

	CHECK(s != MAP_FAILED, "mmap");
	for (unsigned int i = 0; i < NKEYS; i++)
		s->issued[i] = 1;
	for (int n = 0; n < NREAD; n++) {
		fflush(NULL);
		pid[n] = fork();
		CHECK(pid[n] >= 0, "fork");
		if (!pid[n])
			reader(s, n);
		h_track(pid[n]);
	}
	end = h_now_ms() + (uint64_t)h_scaled(3000, 1000);
	while (h_now_ms() < end) {
		unsigned int i = (unsigned int)(h_rand(&seed) % NKEYS);
		int vl;

		if (!gen[i])
			gen[i] = 1;
		vl = val_of(v, sizeof(v), i, ++gen[i]);
		s->issued[i] = gen[i];
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		key_of(key, sizeof(key), i);
		CHECK(tdbc_put(t, NULL, key, strlen(key), v, vl, 0) == 0, "put");
		puts++;
	}
	s->stop = 1;
	for (int n = 0; n < NREAD; n++) {
		CHECK(waitpid(pid[n], &st, 0) == pid[n] && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0, "reader %d failed", n);
		h_untrack(pid[n]);
		reads += s->reads[n];
	}
	tdbc_table_close(t);
	munmap(s, sizeof(*s));
	h_note("procs: %u puts, %d mapped readers %lu gets verified", puts,
	       NREAD, reads);
}

static int as_nobody(void *arg)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	char got[64];
	long l;
	int err = tdbc_table_open(c, "kl", &t);

	(void)arg;
	if (err == -EACCES) {
		tdbc_close(c);
		return 1;
	}
	CHECK(err == 0, "open: %s", h_errname(err));
	CHECK(tdbc_table_mapped(t) == 0, "uid 65534 mapped a 0600 table");
	l = tdbc_get(t, NULL, "lk-1", 4, got, sizeof(got), NULL);
	CHECK(l == -EACCES, "get as uid 65534: %ld", l);
	tdbc_table_close(t);
	tdbc_close(c);
	return 0;
}

static void part_drop(struct tdbc *c)
{
	struct tdbc *other = kt_connect(TDBC_NO_MAP);
	struct tdbc_table *t = kt_open(c, "kl");
	char got[4096];
	long l;

	l = tdbc_get(t, NULL, "lk-1", 4, got, sizeof(got), NULL);
	CHECK(l > 0 && tdbc_table_mapped(t) == 1, "before the drop: %ld", l);
	CHECK(tdbc_table_drop(other, "kl") == 0, "drop");
	l = tdbc_get(t, NULL, "lk-1", 4, got, sizeof(got), NULL);
	CHECK(l == -ENOENT, "a get after the drop: %ld", l);
	CHECK(tdbc_table_mapped(t) == 0, "still mapped after the drop");
	tdbc_table_close(t);
	tdbc_close(other);
	h_note("drop: gets of a mapped table dropped say ENOENT");
}

int main(void)
{
	struct tdbc *c;
	struct tdbc_table *t;
	char key[32], v[4096];
	struct stat st;

	kt_init("kmap_lib", 240);
	kt_need_kernel();
	unsetenv(TDBC_NO_MAP_ENV);
	c = kt_connect(0);
	kt_create(c, "kl", 0600, 32);
	t = kt_open(c, "kl");
	for (unsigned int i = 0; i < NKEYS; i++) {
		int vl = val_of(v, sizeof(v), i, 1);

		key_of(key, sizeof(key), i);
		CHECK(tdbc_put(t, NULL, key, strlen(key), v, vl, 0) == 0, "put");
	}
	tdbc_table_close(t);
	part_same(c);
	part_grow(c);
	part_procs(c);
	CHECK(stat(TDB_DEV_PATH, &st) == 0, "stat");
	CHECK(chmod(TDB_DEV_PATH, 0666) == 0, "chmod");
	kt_as_uid(65534, as_nobody, NULL);
	chmod(TDB_DEV_PATH, st.st_mode & 07777);
	part_drop(c);
	tdbc_close(c);
	kt_done();
	return 0;
}
