// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_map_pin.c - a client's read-only descriptor of a table's memfd
 * (TABLE_MAP) must not pin the table's memory once tdbd lets the memfd
 * go (issue 25, item 1): tdbd punches the pages out of a memfd when the
 * region is destroyed (a drop) or moved to 4 KiB pages
 * (src/platform/user.c, punch_out).
 *
 *  drop   as uid 65534 (root: a setuid child; else the caller): rounds
 *         of create a table, put 16 MiB of values, map it with the
 *         library (tdbc_table_open on rings), keep a dup of the map's
 *         memfd (found in /proc/self/fd as "memfd:tdb:<name>"), drop
 *         the table.  Then the kept descriptors must hold at most a
 *         page each (fstat st_blocks), where the old code held all the
 *         data written; a stale read of a kept map reads zeros and the
 *         library maps anew (the table is gone: -ENOENT).
 *  move   (tdbd-map-pin-hugepages: 2 hugepages,
 *         TDB_MAP_PIN_EXPECT_MOVE=1) a table starts on hugepages, a
 *         reader keeps its memfd, the table grows past the pool and
 *         moves to 4 KiB pages: the old memfd holds nothing.
 *
 * The figures (bytes held by the kept descriptors before and after)
 * are printed.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1ull << 20)
#define VAL (64u << 10)
#define MAX_ROUNDS 16

static struct h_daemon g_d;
static unsigned char g_v[VAL];  /* what gets read into */

/* What the child measured. */
struct pin_report {
	unsigned int rounds;
	uint64_t written;       /* value bytes put */
	uint64_t held_before;   /* kept memfds' bytes before the drops */
	uint64_t held_after;    /* and after, once settled */
	unsigned int page;      /* the bound per descriptor */
	int stale_get;          /* a read of a kept map after its drop */
};

/* A dup of the descriptor this process holds for the memfd of table
 * name (the library's map of it), or -1. */
static int find_memfd(const char *name)
{
	char want[128], path[300], link[300];
	struct dirent *e;
	int fd = -1;
	DIR *dir = opendir("/proc/self/fd");

	CHECK(dir, "/proc/self/fd: %s", strerror(errno));
	snprintf(want, sizeof(want), "/memfd:tdb:%s ", name);
	while ((e = readdir(dir)) && fd < 0) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strncmp(link, want, strlen(want)))
			fd = dup(atoi(e->d_name));
	}
	closedir(dir);
	return fd;
}

static uint64_t held(const int *fds, unsigned int n)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct stat st;

		CHECK(fstat(fds[i], &st) == 0, "fstat: %s", strerror(errno));
		sum += (uint64_t)st.st_blocks * 512;
	}
	return sum;
}

static void fill(struct tdbc_table *t, uint64_t bytes, uint64_t *written)
{
	static unsigned char v[VAL];
	unsigned int i;

	for (i = 0; (uint64_t)i * VAL < bytes; i++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "k%06u", i);

		memset(v, 'a' + (int)(i % 26), sizeof(v));
		CHECK_EQ(tdbc_put(t, NULL, k, (size_t)n, v, sizeof(v), 0), 0,
			 "put");
		*written += sizeof(v);
	}
}

/* Create, fill, map, keep the memfd, drop; `rounds` times. */
static void pin_rounds(struct pin_report *r, uint64_t bytes)
{
	struct tdbc *c = h_connect(&g_d, 0);
	int kept[MAX_ROUNDS];
	struct tdbc_table *t;
	uint64_t t0;
	unsigned int i, j;

	r->page = (unsigned int)sysconf(_SC_PAGESIZE);
	for (i = 0; i < r->rounds; i++) {
		char name[32];

		snprintf(name, sizeof(name), "pin%u", i);
		CHECK_EQ(tdbc_table_create(c, name, NULL), 0, name);
		CHECK_EQ(tdbc_table_open(c, name, &t), 0, name);
		fill(t, bytes, &r->written);
		/* a map made stale meanwhile (a move to 4 KiB pages when the
		 * machine's hugepage pool runs dry) is made again at the
		 * read after the one that found it stale */
		for (j = 0; j < 3; j++) {
			CHECK(tdbc_get(t, NULL, "k000000", 7, g_v, sizeof(g_v),
				       NULL) > 0, "get: %s", tdbc_errmsg(c));
			if (tdbc_table_mapped(t) == 1)
				break;
		}
		CHECK(tdbc_table_mapped(t) == 1, "%s is not mapped", name);
		kept[i] = find_memfd(name);
		CHECK(kept[i] >= 0, "no memfd of %s in /proc/self/fd", name);
		r->held_before += held(&kept[i], 1);
		CHECK_EQ(tdbc_table_drop(c, name), 0, name);
		if (i + 1 < r->rounds)
			tdbc_table_close(t);
	}
	/* tdbd lets the region go with its last reference: give it a
	 * moment, then take the figure */
	t0 = h_now_ms();
	do {
		r->held_after = held(kept, r->rounds);
		if (r->held_after <= (uint64_t)r->rounds * r->page)
			break;
		h_sleep_ms(20);
	} while (h_now_ms() - t0 < 3000);
	/* the last handle still maps its dropped table: a read finds the
	 * map stale (zeros: magic 0, or map_gen) and the table gone */
	r->stale_get = (int)tdbc_get(t, NULL, "k000000", 7, g_v,
				     sizeof(g_v), NULL);
	tdbc_table_close(t);
	for (i = 0; i < r->rounds; i++)
		close(kept[i]);
	tdbc_close(c);
}

static void part_drop(void)
{
	struct pin_report r = { .rounds = (unsigned int)h_scaled(6, 2) };
	uint64_t bytes = (uint64_t)h_scaled(16, 4) * MiB;
	uid_t uid = getuid() == 0 ? 65534 : getuid();
	int p[2], st;
	pid_t pid;

	if (r.rounds > MAX_ROUNDS)
		r.rounds = MAX_ROUNDS;
	CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getuid() == 0)
			h_become(uid);
		pin_rounds(&r, bytes);
		CHECK(write(p[1], &r, sizeof(r)) == (ssize_t)sizeof(r),
		      "report");
		_exit(0);
	}
	h_track(pid);
	close(p[1]);
	CHECK(read(p[0], &r, sizeof(r)) == (ssize_t)sizeof(r),
	      "the child (uid %u) failed", (unsigned int)uid);
	close(p[0]);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "child");
	h_untrack(pid);
	h_note("drop: uid %u, %u rounds of %llu MiB: the kept memfds held "
	       "%llu KiB before the drops, %llu KiB after (bound: %u "
	       "bytes each)", (unsigned int)uid, r.rounds,
	       (unsigned long long)(bytes / MiB),
	       (unsigned long long)(r.held_before >> 10),
	       (unsigned long long)(r.held_after >> 10), r.page);
	/* the measure sees the memory: before the drops it held the data */
	CHECK(r.held_before >= r.written, "the kept memfds held %llu bytes "
	      "before the drops, less than the %llu written",
	      (unsigned long long)r.held_before,
	      (unsigned long long)r.written);
	CHECK(r.held_after <= (uint64_t)r.rounds * r.page, "dropped tables' "
	      "memory pinned by a reader's descriptors: %llu bytes (of "
	      "%llu written)", (unsigned long long)r.held_after,
	      (unsigned long long)r.written);
	CHECK_EQ(r.stale_get, -ENOENT, "a read of a dropped table's map");
}

/* --- move (hugepages) ------------------------------------------------------ */

static void part_move(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	uint64_t written = 0, before, after, t0;
	uint32_t page0;
	int kept;

	CHECK_EQ(tdbc_table_create(c, "mv", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "mv", &t), 0, "open");
	fill(t, 1 * MiB, &written);
	CHECK_EQ(tdbc_table_stat(c, "mv", &st), 0, "stat");
	page0 = (uint32_t)st.page_size;
	if (page0 != (2u << 20)) {
		h_note("move: the table is not on hugepages (page size %u): "
		       "skipped", page0);
		tdbc_table_close(t);
		tdbc_close(c);
		return;
	}
	CHECK(tdbc_get(t, NULL, "k000000", 7, g_v, sizeof(g_v), NULL) > 0, "get");
	CHECK(tdbc_table_mapped(t) == 1, "not mapped");
	kept = find_memfd("mv");
	CHECK(kept >= 0, "no memfd of mv");
	before = held(&kept, 1);
	/* 2 hugepages in the pool: past 2 extents it moves */
	fill(t, 6 * MiB, &written);
	CHECK_EQ(tdbc_table_stat(c, "mv", &st), 0, "stat");
	if (st.page_size != 4096) {
		/* hugepages here, but more than the 2 the hugepages run
		 * asks for (the pool is the machine's: something else
		 * raised it): no move, nothing to test */
		h_note("move: the table did not move (page size %llu, %u "
		       "extents; the pool is larger than 2 pages): skipped",
		       (unsigned long long)st.page_size, st.extents);
		close(kept);
		tdbc_table_close(t);
		tdbc_close(c);
		if (getenv("TDB_MAP_PIN_EXPECT_MOVE")) {
			h_stop(&g_d);
			exit(77);
		}
		return;
	}
	t0 = h_now_ms();
	for (;;) {
		after = held(&kept, 1);
		if (!after || h_now_ms() - t0 > 3000)
			break;
		h_sleep_ms(20);
	}
	h_note("move: the old hugetlb memfd a reader kept held %llu KiB "
	       "before the move, %llu KiB after", (unsigned long long)(
	       before >> 10), (unsigned long long)(after >> 10));
	CHECK(before >= (2u << 20), "the kept memfd held %llu bytes",
	      (unsigned long long)before);
	CHECK(after == 0, "the old memfd still holds %llu bytes after the "
	      "move", (unsigned long long)after);
	/* the library's own map follows the move */
	CHECK(tdbc_get(t, NULL, "k000000", 7, g_v, sizeof(g_v), NULL) > 0,
	      "get after the move: %s", tdbc_errmsg(c));
	close(kept);
	tdbc_table_close(t);
	tdbc_close(c);
}

int main(void)
{
	/* rings on normal pages: the hugepages run's pool is the tables' */
	const char *args[] = { "--socket-mode", "0666", "--hugepages", "no",
			       NULL };

	h_init("tdbd-map-pin", 60);
	/* the socket's directory must let a setuid child in */
	chmod(h_dir(), 0755);
	h_start(&g_d, "pin", args);
	if (h_want("drop"))
		part_drop();
	if (h_want("move"))
		part_move();
	h_stop(&g_d);
	h_done();
	return 0;
}
