// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_hugepages_grow.c - a table on hugepages outgrows the hugepage pool.
 *
 * src/platform/user.c backs a table's region with a hugetlb memfd when
 * extent 0 gets a hugepage.  When the pool (vm.nr_hugepages) is exhausted
 * later, growing the region moves it to a 4 KiB memfd at the same
 * addresses and goes on.  This test, as root:
 *
 *  1. saves vm.nr_hugepages and sets it to HP_PAGES (4); a parent process
 *     puts the old value back whatever happens to the child that runs the
 *     test (failure, crash, sanitizer report, SIGTERM from meson);
 *  2. puts records into a table until its extents use the whole pool,
 *     with a reader thread checking random records (zero-copy pointers
 *     held across batches, and tdbe_get) all along;
 *  3. makes the move fail (RLIMIT_FSIZE: the new memfd cannot be sized):
 *     the put fails with -ENOMEM and the table is exactly as it was,
 *     still on hugepages;
 *  4. lifts the limit: the same put moves the table to 4 KiB pages
 *     (stat.page_size 2097152 -> 4096, one warning logged, the hugepages
 *     back in HugePages_Free) while the reader goes on reading;
 *  5. grows the table further, then checks every record (tdbe_get, a
 *     cursor walk, and a view of the re-fetched fd mapped read-only).
 *
 * Skips (exit 77) when not root, when the knob cannot be written, when
 * another process holds hugepages (lowering the pool would hurt it), or
 * when the kernel cannot give HP_PAGES pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core.h"
#include "user.h"

#define HP_PAGES 4
#define KNOB "/proc/sys/vm/nr_hugepages"
#define EXT ((uint64_t)2 << 20)
#define HUGETLBFS_MAGIC_ 0x958458f6

static void fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FAIL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	fflush(NULL);
	_exit(1);
}

#define CHECK(c, ...) do { if (!(c)) fail(__VA_ARGS__); } while (0)

static long meminfo(const char *field)
{
	char line[256];
	size_t n = strlen(field);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* --- the records ------------------------------------------------------ */

static size_t key_of(uint32_t i, char *buf)
{
	return (size_t)sprintf(buf, "key%08u", i);
}

static size_t vlen_of(uint32_t i)
{
	return 200 + (i * 37u) % 800;
}

static uint8_t vbyte(uint32_t i, size_t j)
{
	return (uint8_t)(i * 31u + j * 7u + (j >> 8));
}

static bool value_ok(uint32_t i, const void *val, size_t vlen)
{
	const uint8_t *v = val;
	size_t j;

	if (vlen != vlen_of(i))
		return false;
	for (j = 0; j < vlen; j++)
		if (v[j] != vbyte(i, j))
			return false;
	return true;
}

static void make_value(uint32_t i, uint8_t *buf)
{
	size_t j;

	for (j = 0; j < vlen_of(i); j++)
		buf[j] = vbyte(i, j);
}

/* --- the engine's log --------------------------------------------------- */

static int g_moved_warnings, g_errors;

static void log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= TDBP_LOG_INFO)
		fprintf(stderr, "tdb: %s\n", msg);
	if (level == TDBP_LOG_WARNING && strstr(msg, "4 KiB pages") &&
	    strstr(msg, "vm.nr_hugepages"))
		__atomic_add_fetch(&g_moved_warnings, 1, __ATOMIC_RELAXED);
	if (level <= TDBP_LOG_ERR)
		__atomic_add_fetch(&g_errors, 1, __ATOMIC_RELAXED);
}

/* --- the reader -------------------------------------------------------- */

static struct tdbe_table *g_t;
static uint32_t g_published;    /* records 0 .. g_published-1 are in */
static int g_stop;
static int g_phase;             /* 0 before the move, 1 during, 2 after */
static uint64_t g_lookups, g_after, g_straddled;

#define BATCH 64

static void *reader(void *arg)
{
	unsigned int seed = 12345;
	uint8_t buf[1024];

	(void)arg;
	while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
		uint32_t n = __atomic_load_n(&g_published, __ATOMIC_ACQUIRE);
		int ph0 = __atomic_load_n(&g_phase, __ATOMIC_ACQUIRE), ph1;
		const void *val[BATCH];
		size_t vlen[BATCH];
		uint32_t idx[BATCH];
		unsigned int k;

		if (!n)
			continue;
		/* Zero-copy lookups, then the same pointers read again at the
		 * end of the batch: they must survive a move in between. */
		tdbe_read_lock();
		for (k = 0; k < BATCH; k++) {
			char key[32];
			size_t kl;

			idx[k] = (uint32_t)rand_r(&seed) % n;
			kl = key_of(idx[k], key);
			if (tdbe_lookup(g_t, key, kl, &val[k], &vlen[k]))
				fail("reader: key %u missing (%u published)",
				     idx[k], n);
			if (!value_ok(idx[k], val[k], vlen[k]))
				fail("reader: key %u has a wrong value",
				     idx[k]);
		}
		for (k = 0; k < BATCH; k++)
			if (!value_ok(idx[k], val[k], vlen[k]))
				fail("reader: key %u changed under a held "
				     "pointer", idx[k]);
		tdbe_read_unlock();
		{
			char key[32];
			uint32_t i = (uint32_t)rand_r(&seed) % n;
			size_t kl = key_of(i, key), need = 0;
			long r = tdbe_get(g_t, key, kl, buf, sizeof(buf),
					  &need);

			if (r < 0 || !value_ok(i, buf, (size_t)r))
				fail("reader: tdbe_get of key %u: %ld", i, r);
		}
		ph1 = __atomic_load_n(&g_phase, __ATOMIC_ACQUIRE);
		__atomic_add_fetch(&g_lookups, BATCH + 1, __ATOMIC_RELAXED);
		if (ph0 == 2)
			__atomic_add_fetch(&g_after, BATCH + 1,
					   __ATOMIC_RELAXED);
		if (ph0 < 2 && ph1 == 2)
			__atomic_add_fetch(&g_straddled, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void wait_lookups(uint64_t *counter, uint64_t want, const char *what)
{
	int ms;

	for (ms = 0; ms < 20000; ms++) {
		if (__atomic_load_n(counter, __ATOMIC_RELAXED) >= want)
			return;
		usleep(1000);
	}
	fail("the reader did not get %llu lookups done %s in 20 s",
	     (unsigned long long)want, what);
}

/* --- the writer ------------------------------------------------------- */

static int put_rec(uint32_t i)
{
	struct tdbe_extack ext = { 0 };
	uint8_t val[1024];
	char key[32];
	size_t kl = key_of(i, key);
	int err;

	make_value(i, val);
	err = tdbe_put(g_t, key, kl, val, vlen_of(i), 0, &ext);
	if (err == 0)
		__atomic_store_n(&g_published, i + 1, __ATOMIC_RELEASE);
	else
		fprintf(stderr, "put %u: %s (%s)\n", i, tdbe_strerror(err),
			ext.msg ? ext.msg : "-");
	return err;
}

static void check_all(uint32_t n, const char *when)
{
	uint8_t buf[1024];
	uint32_t i;

	for (i = 0; i < n; i++) {
		char key[32];
		size_t kl = key_of(i, key), need = 0;
		long r = tdbe_get(g_t, key, kl, buf, sizeof(buf), &need);

		if (r < 0 || !value_ok(i, buf, (size_t)r))
			fail("%s: key %u: %ld (%s)", when, i, r,
			     r < 0 ? tdbe_strerror((int)r) : "wrong value");
	}
	printf("%s: all %u records read back\n", when, n);
}

static struct tdbe_table_stat stat_of(void)
{
	struct tdbe_table_stat st;

	tdbe_table_stat(g_t, &st);
	return st;
}

/* Map the table's (re-fetched) fd read-only and look records up there,
 * as another process would. */
static void check_view(uint32_t n, uint32_t extents)
{
	int fd = tdbe_table_fd(g_t);
	const void *ext[64];
	struct tdbe_view v = { ext, extents };
	struct tdbe_extack ea = { 0 };
	struct statfs sfs;
	struct stat sb;
	uint8_t *base;
	uint32_t e, i;

	CHECK(fd >= 0, "tdbe_table_fd: %d", fd);
	CHECK(fstat(fd, &sb) == 0, "fstat: %s", strerror(errno));
	CHECK((uint64_t)sb.st_size == extents * EXT,
	      "the memfd is %lld bytes, %u extents expected",
	      (long long)sb.st_size, extents);
	CHECK(fstatfs(fd, &sfs) == 0, "fstatfs: %s", strerror(errno));
	CHECK((unsigned long)sfs.f_type != HUGETLBFS_MAGIC_,
	      "tdbe_table_fd still names a hugetlbfs file after the move");
	base = mmap(NULL, extents * EXT, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(base != MAP_FAILED, "mmap of the table fd: %s",
	      strerror(errno));
	for (e = 0; e < extents; e++)
		ext[e] = base + e * EXT;
	CHECK(tdbe_view_check(&v, &ea) == 0, "tdbe_view_check: %s",
	      ea.msg ? ea.msg : "?");
	for (i = 0; i < n; i++) {
		char key[32];
		size_t kl = key_of(i, key), vl = 0;
		const void *val = NULL;

		if (tdbe_view_lookup(&v, key, kl, &val, &vl) ||
		    !value_ok(i, val, vl))
			fail("view of the new fd: key %u missing or wrong", i);
	}
	munmap(base, extents * EXT);
	printf("a read-only view of the re-fetched fd sees all %u records\n",
	       n);
}

static int run(long pool)
{
	struct tdbe_table_opts o = { .max_extents = 64 };
	struct tdbe_extack ext = { 0 };
	struct tdbe_table_stat st;
	struct tdbe_engine *e;
	struct rlimit rl_old, rl;
	pthread_t th;
	long free_before, free_after;
	uint32_t i = 0, failing;
	int err = 0;

	signal(SIGXFSZ, SIG_IGN);
	tdbp_set_log(log_sink, NULL);
	e = tdbe_engine_new(&err);
	CHECK(e, "tdbe_engine_new: %s", tdbe_strerror(err));
	err = tdbe_table_create(e, "hpgrow", &o, &ext);
	CHECK(!err, "create: %s (%s)", tdbe_strerror(err), ext.msg);
	err = tdbe_table_open(e, "hpgrow", &g_t, &ext);
	CHECK(!err, "open: %s", tdbe_strerror(err));
	st = stat_of();
	CHECK(st.page_size == 2097152,
	      "the table did not get hugepages (page_size %llu) although "
	      "%ld were free", (unsigned long long)st.page_size, pool);

	CHECK(pthread_create(&th, NULL, reader, NULL) == 0, "pthread_create");

	/* Fill the pool: as many extents as it had pages. */
	while (stat_of().extents < (uint32_t)pool) {
		CHECK(put_rec(i) == 0, "put %u before the pool ran out", i);
		i++;
	}
	CHECK(stat_of().page_size == 2097152, "left hugepages too early");
	free_before = meminfo("HugePages_Free");
	printf("%u records in %u extents on hugepages; HugePages_Free %ld\n",
	       i, stat_of().extents, free_before);
	wait_lookups(&g_lookups, 10000, "before the pool ran out");

	/* A move that fails (the new memfd cannot be sized) leaves the
	 * table as it was: the put says -ENOMEM, nothing else changes. */
	CHECK(getrlimit(RLIMIT_FSIZE, &rl_old) == 0, "getrlimit");
	rl = rl_old;
	rl.rlim_cur = (rlim_t)stat_of().extents * EXT;
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s",
	      strerror(errno));
	for (;;) {
		uint32_t ext_before = stat_of().extents;

		err = put_rec(i);
		if (err)
			break;
		CHECK(stat_of().extents == ext_before,
		      "the region grew under RLIMIT_FSIZE");
		i++;
	}
	CHECK(setrlimit(RLIMIT_FSIZE, &rl_old) == 0, "setrlimit back");
	failing = i;
	st = stat_of();
	CHECK(err == -ENOMEM, "the failed move: put %u gave %s, not -ENOMEM",
	      i, tdbe_strerror(err));
	CHECK(st.page_size == 2097152 && st.extents == (uint32_t)pool &&
	      st.records == i, "after a failed move: page_size %llu, "
	      "%u extents, %llu records (expected 2097152, %ld, %u)",
	      (unsigned long long)st.page_size, st.extents,
	      (unsigned long long)st.records, pool, i);
	CHECK(meminfo("HugePages_Free") == free_before,
	      "HugePages_Free changed after a failed move: %ld -> %ld",
	      free_before, meminfo("HugePages_Free"));
	CHECK(__atomic_load_n(&g_moved_warnings, __ATOMIC_RELAXED) == 0,
	      "a move was logged although it failed");
	check_all(i, "after the failed move");

	/* The same put again, now with room: the table moves. */
	__atomic_store_n(&g_phase, 1, __ATOMIC_RELEASE);
	err = put_rec(failing);
	__atomic_store_n(&g_phase, 2, __ATOMIC_RELEASE);
	CHECK(err == 0, "the put that moves the table: %s",
	      tdbe_strerror(err));
	i = failing + 1;
	st = stat_of();
	free_after = meminfo("HugePages_Free");
	printf("moved: page_size %llu, %u extents; HugePages_Free %ld -> "
	       "%ld\n", (unsigned long long)st.page_size, st.extents,
	       free_before, free_after);
	CHECK(st.page_size == 4096, "page_size %llu after the move, not 4096",
	      (unsigned long long)st.page_size);
	CHECK(st.extents == (uint32_t)pool + 1, "%u extents after the move",
	      st.extents);
	CHECK(free_after >= free_before + pool,
	      "the %ld hugepages did not go back to the pool "
	      "(HugePages_Free %ld -> %ld)", pool, free_before, free_after);
	CHECK(__atomic_load_n(&g_moved_warnings, __ATOMIC_RELAXED) == 1,
	      "%d move warnings logged, expected 1", g_moved_warnings);
	wait_lookups(&g_after, 10000, "after the move");
	check_all(i, "just after the move");

	/* And it goes on growing, on 4 KiB pages, without another move. */
	while (stat_of().extents < (uint32_t)pool + 4) {
		CHECK(put_rec(i) == 0, "put %u after the move", i);
		i++;
	}
	wait_lookups(&g_after, __atomic_load_n(&g_after, __ATOMIC_RELAXED) +
		     10000, "at the end");
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	st = stat_of();
	CHECK(st.page_size == 4096 && st.records == i,
	      "at the end: page_size %llu, %llu records (%u expected)",
	      (unsigned long long)st.page_size,
	      (unsigned long long)st.records, i);
	CHECK(g_moved_warnings == 1, "%d move warnings", g_moved_warnings);
	check_all(i, "at the end");
	{
		struct tdbe_cursor *c = tdbe_cursor_open(g_t, &err);
		const void *k, *v;
		size_t kl, vl;
		uint32_t n = 0;

		CHECK(c, "cursor: %s", tdbe_strerror(err));
		while ((err = tdbe_cursor_next(c, &k, &kl, &v, &vl)) == 1) {
			uint32_t j;

			CHECK(kl == 11 && sscanf(k, "key%8u", &j) == 1 &&
			      j < i && value_ok(j, v, vl),
			      "cursor: a bad record");
			n++;
		}
		CHECK(err == 0 && n == i, "cursor: %u of %u records (%d)",
		      n, i, err);
		tdbe_cursor_close(c);
	}
	check_view(i, st.extents);
	printf("%u records, %u extents; the reader did %llu lookups, "
	       "%llu after the move, %llu batches spanned it; "
	       "%d error line(s) logged\n", i, st.extents,
	       (unsigned long long)g_lookups, (unsigned long long)g_after,
	       (unsigned long long)g_straddled, g_errors);
	tdbe_table_close(g_t);
	tdbe_engine_free(e);
	return 0;
}

/* --- the parent: vm.nr_hugepages set and put back ----------------------- */

static char g_old[32];
static size_t g_old_len;
static volatile pid_t g_child;

static int knob_write(const char *s, size_t len)
{
	int fd = open(KNOB, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

static long knob_read(void)
{
	char buf[32] = { 0 };
	int fd = open(KNOB, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

static void restore(void)
{
	if (g_old_len && knob_write(g_old, g_old_len))
		fprintf(stderr, "cannot put vm.nr_hugepages back to %s",
			g_old);
}

static void on_signal(int sig)
{
	if (g_child > 0)
		kill(g_child, SIGKILL);
	if (g_old_len)
		knob_write(g_old, g_old_len);   /* async-signal-safe */
	_exit(128 + sig);
}

int main(void)
{
	struct sigaction sa;
	long old, total, freep, pool;
	char want[16];
	int status = 0, wlen;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("not root: skipping\n");
		return 77;
	}
	old = knob_read();
	if (old < 0 || access(KNOB, W_OK)) {
		printf(KNOB " not readable/writable: skipping\n");
		return 77;
	}
	total = meminfo("HugePages_Total");
	freep = meminfo("HugePages_Free");
	if (total < 0 || freep < 0) {
		printf("no hugepage counters in /proc/meminfo: skipping\n");
		return 77;
	}
	if (total != freep) {
		printf("%ld hugepages are in use by another process; lowering "
		       "the pool would hurt it: skipping\n", total - freep);
		return 77;
	}
	g_old_len = (size_t)snprintf(g_old, sizeof(g_old), "%ld\n", old);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	wlen = snprintf(want, sizeof(want), "%d\n", HP_PAGES);
	if (knob_write(want, (size_t)wlen)) {
		printf("cannot write " KNOB ": skipping\n");
		restore();
		return 77;
	}
	pool = meminfo("HugePages_Free");
	printf("vm.nr_hugepages %ld -> %ld (%ld free)\n", old, knob_read(),
	       pool);
	if (knob_read() != HP_PAGES || pool != HP_PAGES) {
		printf("could not reserve %d hugepages (%ld free): skipping\n",
		       HP_PAGES, pool);
		restore();
		return 77;
	}

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		restore();
		return 1;
	}
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		status = run(pool);
		fflush(NULL);
		_exit(status);
	}
	g_child = pid;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	g_child = 0;
	restore();
	printf("vm.nr_hugepages back to %ld (was %ld)\n", knob_read(), old);
	if (knob_read() != old) {
		fprintf(stderr, "FAIL: vm.nr_hugepages is %ld, not %ld\n",
			knob_read(), old);
		return 1;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "FAIL: the test died of signal %d\n",
			WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}
