// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_map_model.c - the randomized model test of zero-copy reads: one
 * writer process and 8 reader processes that read the table through
 * their maps (src/client/map.c), checking every value they get.
 *
 * The writer (map_model.h) puts and deletes single keys and writes
 * groups of 4 keys in transactions, for about 8 s.  Each reader, in a
 * loop until the writer is done, does one of:
 *   - tdbc_get of a random key,
 *   - tdbc_submit of 16 GETs and their reaping,
 *   - a read section (tdbc_read_begin, tdbc_get_ref of a group's 4 keys,
 *     tdbc_read_end): when it ends with 0, the 4 values have one
 *     generation (a transaction is seen whole or not at all); -ESTALE
 *     is counted.
 * Every value must be its key's (key number, length, checksum), and the
 * generations one reader sees of a key never go back.  The readers must
 * have been mapped throughout, most of their gets served by the map
 * (STATS requests grow by far less than the gets done), and the writer's
 * slowest operation stays under the lease's order (no reader stalls it).
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "map_model.h"

#define NREADERS 8
#define WRITE_MS 8000
#define NIDS (MM_SINGLE + MM_GROUPS * MM_GROUP)

struct shared {
	volatile int stop;
	struct mm_wstat w;
	struct {
		uint64_t gets, hits, batched, sections, stale, unmapped;
		char bad[200];
	} r[NREADERS];
};

static struct h_daemon g_d;
static struct shared *g_sh;

static void check_val(int me, uint64_t *last, uint32_t id, const void *p,
		      size_t n)
{
	const char *why = mm_bad(p, n, id);
	uint64_t gen;

	if (why) {
		snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
			 "key %u: %s (%zu bytes)", id, why, n);
		_exit(1);
	}
	gen = mm_gen(p);
	if (gen < last[id]) {
		snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
			 "key %u: generation %llu after %llu", id,
			 (unsigned long long)gen,
			 (unsigned long long)last[id]);
		_exit(1);
	}
	last[id] = gen;
}

static void read_batch(int me, struct tdbc *c, struct tdbc_table *t,
		       uint64_t *rnd, uint64_t *last)
{
	struct tdbc_req reqs[16];
	struct tdbc_cqe cqe[16];
	char keys[16][32];
	unsigned int i, got = 0;

	for (i = 0; i < 16; i++) {
		uint32_t id = (uint32_t)(h_rand(rnd) % NIDS);

		memset(&reqs[i], 0, sizeof(reqs[i]));
		reqs[i].op = TDBC_OP_GET;
		reqs[i].table = t;
		reqs[i].key = keys[i];
		reqs[i].klen = mm_key(keys[i], sizeof(keys[i]), id);
		reqs[i].user = id;
	}
	CHECK_EQ(tdbc_submit(c, reqs, 16), 16, "submit");
	while (got < 16) {
		int k = tdbc_reap(c, cqe, 16, 1, 10000);

		CHECK(k > 0, "reap: %d", k);
		for (i = 0; i < (unsigned int)k; i++) {
			CHECK(cqe[i].res == 0 || cqe[i].res == -ENOENT,
			      "batched get: %d", cqe[i].res);
			if (!cqe[i].res)
				check_val(me, last, (uint32_t)cqe[i].user,
					  cqe[i].val, cqe[i].vlen);
		}
		got += (unsigned int)k;
	}
	g_sh->r[me].batched += 16;
}

static void read_group(int me, struct tdbc *c, struct tdbc_table *t,
		       uint64_t *rnd, uint64_t *last)
{
	uint32_t base = MM_SINGLE + (uint32_t)(h_rand(rnd) % MM_GROUPS) *
			MM_GROUP, m;
	unsigned char copy[MM_GROUP][sizeof(struct mm_val)];
	size_t len[MM_GROUP];
	int err[MM_GROUP], end;
	char k[32];

	CHECK_EQ(tdbc_read_begin(c), 0, "read_begin");
	for (m = 0; m < MM_GROUP; m++) {
		const void *v = NULL;
		size_t n = 0, kl = mm_key(k, sizeof(k), base + m);

		err[m] = tdbc_get_ref(t, k, kl, &v, &n);
		len[m] = n <= sizeof(copy[m]) ? n : 0;
		if (!err[m])
			memcpy(copy[m], v, len[m]);
	}
	end = tdbc_read_end(c);
	g_sh->r[me].sections++;
	if (end == -ESTALE) {
		g_sh->r[me].stale++;
		return;
	}
	CHECK_EQ(end, 0, "read_end");
	for (m = 0; m < MM_GROUP; m++) {
		CHECK(err[m] == 0 || err[m] == -ENOENT, "get_ref: %d", err[m]);
		CHECK(err[m] == err[0], "a group half there");
		if (err[m])
			continue;
		check_val(me, last, base + m, copy[m], len[m]);
		if (mm_gen(copy[m]) != mm_gen(copy[0])) {
			snprintf(g_sh->r[me].bad, sizeof(g_sh->r[me].bad),
				 "group %u seen at generations %llu and %llu "
				 "in one read section: part of a transaction",
				 (base - MM_SINGLE) / MM_GROUP,
				 (unsigned long long)mm_gen(copy[0]),
				 (unsigned long long)mm_gen(copy[m]));
			_exit(1);
		}
	}
}

static void reader(int me)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table *t = NULL;
	uint64_t rnd = 1234567ull * (uint64_t)(me + 1), *last;
	unsigned char buf[sizeof(struct mm_val)];
	unsigned long iter = 0;

	last = calloc(NIDS, sizeof(*last));
	CHECK(last, "calloc");
	CHECK_EQ(tdbc_table_open(c, "model", &t), 0, "open");
	CHECK(tdbc_table_mapped(t), "reader %d not mapped", me);
	while (!g_sh->stop) {
		uint64_t r = h_rand(&rnd) % 16;

		if (r == 0) {
			read_batch(me, c, t, &rnd, last);
		} else if (r == 1) {
			read_group(me, c, t, &rnd, last);
		} else {
			uint32_t id = (uint32_t)(h_rand(&rnd) % NIDS);
			char k[32];
			size_t kl = mm_key(k, sizeof(k), id);
			long n = tdbc_get(t, NULL, k, kl, buf, sizeof(buf),
					  NULL);

			CHECK(n >= 0 || n == -ENOENT, "get %s: %ld (%s)", k,
			      n, tdbc_errmsg(c));
			if (n >= 0) {
				check_val(me, last, id, buf, (size_t)n);
				g_sh->r[me].hits++;
			}
			g_sh->r[me].gets++;
		}
		if (!tdbc_table_mapped(t))
			g_sh->r[me].unmapped++;
		/* 8 spinning readers on a small machine would starve the
		 * writer (and tdbd, which serves it): leave it some CPU */
		if (++iter % 64 == 0)
			usleep(200);
	}
	tdbc_close(c);
	free(last);
	_exit(0);
}

int main(void)
{
	const char *args[] = { "--sync", "none", "--reader-lease", "100ms",
			       NULL };
	uint64_t *gens = calloc(NIDS, sizeof(*gens)), gets = 0, stale = 0;
	uint64_t sections = 0, batched = 0;
	struct tdbc_stats a, b;
	pid_t pids[NREADERS];
	struct tdbc_table *t;
	struct tdbc *c;
	int i, status;

	h_init("tdbd-map-model", 90);
	g_sh = mmap(NULL, sizeof(*g_sh), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(g_sh != MAP_FAILED && gens, "memory");
	h_start(&g_d, "mm", args);
	c = h_connect(&g_d, TDBC_NO_MAP);
	CHECK_EQ(tdbc_table_create(c, "model", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "model", &t), 0, "open");
	mm_write(c, t, gens, 500, &g_sh->stop, &g_sh->w);    /* some data */
	h_stats(c, &a);
	for (i = 0; i < NREADERS; i++) {
		pids[i] = fork();
		CHECK(pids[i] >= 0, "fork");
		if (pids[i] == 0)
			reader(i);
		h_track(pids[i]);
	}
	memset(&g_sh->w, 0, sizeof(g_sh->w));
	mm_write(c, t, gens, (unsigned int)h_scaled(WRITE_MS, 1000),
		 &g_sh->stop, &g_sh->w);
	g_sh->stop = 1;
	for (i = 0; i < NREADERS; i++) {
		CHECK(waitpid(pids[i], &status, 0) == pids[i], "waitpid");
		h_untrack(pids[i]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "reader %d failed: %s", i, g_sh->r[i].bad[0] ?
		      g_sh->r[i].bad : "(see above)");
		CHECK(g_sh->r[i].unmapped == 0, "reader %d lost its map",
		      i);
		gets += g_sh->r[i].gets;
		batched += g_sh->r[i].batched;
		sections += g_sh->r[i].sections;
		stale += g_sh->r[i].stale;
	}
	h_stats(c, &b);
	h_note("writer: %llu ops (%llu puts, %llu deletes, %llu txns of %u), "
	       "slowest %llu us, bytes_pending at most %llu",
	       (unsigned long long)g_sh->w.ops,
	       (unsigned long long)g_sh->w.puts,
	       (unsigned long long)g_sh->w.dels,
	       (unsigned long long)g_sh->w.txns, MM_GROUP,
	       (unsigned long long)g_sh->w.max_us,
	       (unsigned long long)g_sh->w.max_pending);
	h_note("%d readers: %llu gets, %llu batched gets, %llu read "
	       "sections (%llu stale), every value checked; tdbd served "
	       "%llu requests meanwhile, %llu read sections expired",
	       NREADERS, (unsigned long long)gets,
	       (unsigned long long)batched, (unsigned long long)sections,
	       (unsigned long long)stale,
	       (unsigned long long)(b.requests - a.requests),
	       (unsigned long long)(b.readers_expired - a.readers_expired));
	CHECK(gets > 1000 && sections > 100, "too few reads to mean much");
	/* the reads went through the maps, not tdbd */
	CHECK(b.requests - a.requests < g_sh->w.ops * 8 + gets / 4,
	      "tdbd served %llu requests: the reads were not in the maps",
	      (unsigned long long)(b.requests - a.requests));
	CHECK(g_sh->w.max_us < 2000000, "a write took %llu us",
	      (unsigned long long)g_sh->w.max_us);
	tdbc_close(c);
	free(gens);
	h_stop(&g_d);
	h_done();
	return 0;
}
