// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_supervise.c - tdbd --backend kernel against the real tdb.ko (the
 * qemu guest; issue 15).  Needs $TDB_KTEST_TDBD (tdbd's path in the
 * guest) and a tdb.ko with the supervisor ioctls: skips (77) without
 * either, so it runs as soon as tdb.ko has them.
 *
 *  1. restore at start: a tdbd (data dir D, sync always) starts on a
 *     fresh tdb.ko (tables restored: none), a client writes through
 *     /dev/tdb; tdbd stops; tdb.ko is reloaded (its tables gone); a new
 *     tdbd restores them from D: every write is there;
 *     then a bulk load (bulk(): ring wraps and WAL segment switches)
 *     is restored whole;
 *  2. SIGKILL: a writer process puts keys one at a time (sync always:
 *     each put returns once tdbd made it durable) while tdbd is
 *     SIGKILLed at random moments and restarted, KILL_CYCLES times;
 *     the writer must still make progress after the last restart (no
 *     answer held for ever); then tdb.ko is reloaded and a last tdbd
 *     restores from D: every acknowledged put is there, with its value;
 *  3. it leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdb/client.h"
#include "tdb/kdev.h"

#define DATA_DIR    "/tmp/tdb-supervise"
#define LOG_FILE    "/tmp/tdb-supervise.log"
#define KO          "/lib/modules/tdb.ko"
#define KILL_CYCLES 20
#define MAX_KEYS    (1u << 20)
#define WRITER_PAUSE_US 200
#define BULK_KEYS   40000
#define START_WAIT  30000       /* x 10 ms: a restore under TCG */

static const char *tdbd;
static pid_t tdbd_pid = -1;
static unsigned int starts;     /* "supervising" lines expected */

#define FAIL(...) do { fprintf(stderr, "test_supervise: FAIL: " \
	__VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Does this tdb.ko know the supervisor ioctls?  An old one answers
 * ENOTTY to any of them. */
static bool has_supervisor(void)
{
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = !(ioctl(fd, TDB_IOC_SUP_READY, 0) < 0 && errno == ENOTTY);
	close(fd);
	return ok;
}

static unsigned int count_lines(const char *needle)
{
	char line[1024];
	unsigned int n = 0;
	FILE *f = fopen(LOG_FILE, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, needle);
	fclose(f);
	return n;
}

/* Start tdbd and wait until it supervises (its log says so). */
static void tdbd_start(void)
{
	unsigned int i;
	int status;

	tdbd_pid = fork();
	CHECK(tdbd_pid >= 0, "fork");
	if (!tdbd_pid) {
		int fd = open(LOG_FILE, O_WRONLY | O_CREAT | O_APPEND, 0644);

		const char *av[32] = { tdbd, "--backend", "kernel",
			"--data-dir", DATA_DIR, "--sync", "always",
			"--client-deadline", "60s", "--config", "/dev/null",
			"--wal-segment-size", "1M" };
		char *more = getenv("TDB_KTEST_TDBD_ARGS"), *tok;
		unsigned int n = 13;

		/* extra arguments, split at spaces */
		for (tok = more ? strtok(more, " ") : NULL; tok && n < 31;
		     tok = strtok(NULL, " "))
			av[n++] = tok;
		dup2(fd, 2);
		execv(tdbd, (char *const *)av);
		_exit(127);
	}
	starts++;
	for (i = 0; i < START_WAIT; i++) {
		if (count_lines("supervising tdb.ko (kernel mode") >= starts)
			return;
		if (waitpid(tdbd_pid, &status, WNOHANG) == tdbd_pid) {
			system("cat " LOG_FILE " >&2");
			FAIL("tdbd exited at start (status %#x)", status);
		}
		msleep(10);
	}
	system("tail -n 40 " LOG_FILE " >&2");
	FAIL("tdbd did not start supervising in %u s (start %u)", START_WAIT / 100, starts);
}

static void tdbd_stop(int sig)
{
	int status;

	kill(tdbd_pid, sig);
	CHECK(waitpid(tdbd_pid, &status, 0) == tdbd_pid, "waitpid tdbd");
	if (sig == SIGTERM)
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		      "tdbd stopped with status %#x", status);
	tdbd_pid = -1;
}

/* tdb.ko's parameters for this test: a log ring of 1 MiB, so that the
 * bulk load below wraps it several times ($TDB_KTEST_KO_ARGS to
 * override). */
static const char *ko_args(void)
{
	const char *a = getenv("TDB_KTEST_KO_ARGS");

	return a ? a : "log_ring_mb=1";
}

static void reload_module(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "insmod " KO " %s", ko_args());
	CHECK(system("rmmod tdb") == 0, "rmmod tdb (after tdbd stopped)");
	CHECK(system(cmd) == 0, "%s", cmd);
}

static struct tdbc *connect_kernel(void)
{
	struct tdbc *c = NULL;
	char err[256];
	int e, i;

	for (i = 0; i < 600; i++) {
		e = tdbc_connect(&c, NULL, TDBC_KERNEL, err, sizeof(err));
		if (!e)
			return c;
		if (e != -EAGAIN)
			break;
		msleep(100);    /* tdb is recovering */
	}
	FAIL("connect: %s", err);
}

static void key_of(char *k, unsigned int i)
{
	snprintf(k, 16, "k%08u", i);
}

static void val_of(char *v, unsigned int i)
{
	snprintf(v, 32, "value-%u-%u", i, i * 2654435761u);
}

/* Every key below n (or marked in acked) is there, with its value. */
static unsigned int verify(const unsigned char *acked, unsigned int n)
{
	struct tdbc *c = connect_kernel();
	struct tdbc_table *t = NULL;
	char k[16], v[32], got[64];
	unsigned int i, found = 0;
	long len;

	CHECK(!tdbc_table_open(c, "sup", &t), "open sup: %s",
	      tdbc_errmsg(c));
	for (i = 0; i < n; i++) {
		if (acked && !acked[i])
			continue;
		key_of(k, i);
		val_of(v, i);
		len = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got), NULL);
		CHECK(len == (long)strlen(v) && !memcmp(got, v, (size_t)len),
		      "acknowledged key %s lost or wrong (%ld)", k, len);
		found++;
	}
	tdbc_table_close(t);
	tdbc_close(c);
	return found;
}

static unsigned int count_acked(const unsigned char *acked)
{
	unsigned int i, n = 0;

	for (i = 0; i < MAX_KEYS; i++)
		n += __atomic_load_n(&acked[i], __ATOMIC_ACQUIRE);
	return n;
}

static void writer(unsigned char *acked, unsigned int from)
{
	struct tdbc *c = connect_kernel();
	struct tdbc_table *t = NULL;
	char k[16], v[32];
	unsigned int i;
	int e;

	CHECK(!tdbc_table_open(c, "sup", &t), "writer: open");
	for (i = from; i < MAX_KEYS; i++) {
		key_of(k, i);
		val_of(v, i);
		e = tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0);
		if (!e)
			__atomic_store_n(&acked[i], 1, __ATOMIC_RELEASE);
		else if (e != -ETIMEDOUT && e != -EAGAIN)
			FAIL("writer: put %s: %s", k, tdbc_errmsg(c));
		/* paced: the restore at the end (TCG) stays short */
		usleep(WRITER_PAUSE_US);
	}
	_exit(0);
}

/* n records, 256 in flight with sync always, through tdb.ko with tdbd
 * following, then tdb.ko reloaded and every record restored (its time
 * is tdbd's "restored ... records/s" line).  With the 1 MiB log ring
 * and WAL segments of this test, BULK_KEYS wraps the ring and switches
 * segments several times each: a switch once left tdb.ko's answers
 * held for ever (the WAL's rotation made records durable without
 * telling tdb.ko). */
static void bulk(unsigned int n)
{
	struct tdbc *c = connect_kernel();
	struct tdbc_table *t = NULL;
	struct tdbc_req rq[256];
	struct tdbc_cqe cq[256];
	struct tdbc_table_stat st;
	static char keys[256][16];
	unsigned int i = 0, j;
	int e;

	CHECK(!tdbc_table_create(c, "bulk", NULL), "create bulk");
	CHECK(!tdbc_table_open(c, "bulk", &t), "open bulk");
	while (i < n) {
		for (j = 0; j < 256 && i + j < n; j++) {
			snprintf(keys[j], 16, "b%010u", i + j);
			rq[j] = (struct tdbc_req){ .op = TDBC_OP_PUT,
				.table = t, .key = keys[j], .klen = 11,
				.val = keys[j], .vlen = 11 };
		}
		e = tdbc_submit(c, rq, j);
		CHECK(e > 0, "bulk submit: %s", tdbc_errmsg(c));
		i += (unsigned int)e;
		if (i % (n / 10 ? n / 10 : 1) < (unsigned int)e) {
			printf("test_supervise: bulk: %u of %u put\n", i, n);
			fflush(stdout);
		}
		while (tdbc_inflight(c)) {
			e = tdbc_reap(c, cq, 256, 1, 60000);
			CHECK(e > 0, "bulk: no answer in 60 s after %u puts "
			      "(%d): answers held for ever?", i, e);
			for (j = 0; j < (unsigned int)e; j++)
				CHECK(!cq[j].res, "bulk put: %d", cq[j].res);
		}
	}
	tdbc_table_close(t);
	tdbc_close(c);
	tdbd_stop(SIGTERM);
	reload_module();
	tdbd_start();
	c = connect_kernel();
	CHECK(!tdbc_table_stat(c, "bulk", &st) && st.records == n,
	      "bulk after the restore");
	CHECK(!tdbc_table_drop(c, "bulk"), "drop bulk");
	tdbc_close(c);
	printf("test_supervise: bulk: %u records restored:\n", n);
	system("grep -h 'restored .* records/s' " LOG_FILE " | tail -n 1");
}

int main(void)
{
	unsigned char *acked;
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	char k[16], v[32];
	unsigned int i, n;
	pid_t w;
	int status;

	tdbd = getenv("TDB_KTEST_TDBD");
	if (!tdbd || !*tdbd) {
		fprintf(stderr, "test_supervise: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!has_supervisor()) {
		fprintf(stderr, "test_supervise: SKIP: tdb.ko has no "
			"supervisor ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	system("rm -rf " DATA_DIR " " LOG_FILE);
	srand((unsigned int)time(NULL));
	reload_module();        /* with ko_args() */

	/* 1. restore at start */
	tdbd_start();
	c = connect_kernel();
	CHECK(!tdbc_table_create(c, "sup", NULL), "create: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_table_open(c, "sup", &t), "open: %s", tdbc_errmsg(c));
	for (i = 0; i < 1000; i++) {
		key_of(k, i);
		val_of(v, i);
		CHECK(!tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0),
		      "put %s: %s", k, tdbc_errmsg(c));
	}
	tdbc_table_close(t);
	tdbc_close(c);
	tdbd_stop(SIGTERM);
	reload_module();
	tdbd_start();
	CHECK(count_lines("restoring them") >= 2, "no restore at start");
	CHECK(verify(NULL, 1000) == 1000, "restore");
	printf("test_supervise: restore at start: 1000 keys back\n");
	bulk(getenv("TDB_KTEST_SUP_BULK") ?
	     (unsigned int)strtoul(getenv("TDB_KTEST_SUP_BULK"), NULL, 10) :
	     BULK_KEYS);

	/* 2. SIGKILL while a writer runs */
	acked = mmap(NULL, MAX_KEYS, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(acked != MAP_FAILED, "mmap");
	w = fork();
	CHECK(w >= 0, "fork");
	if (!w)
		writer(acked, 1000);
	for (i = 0; i < KILL_CYCLES; i++) {
		msleep(50 + (unsigned int)rand() % 400);
		tdbd_stop(SIGKILL);
		msleep((unsigned int)rand() % 100);
		tdbd_start();
	}
	/* writes resume: a tdbd that died after its fdatasync but before
	 * it told tdb.ko must not leave an answer held for ever */
	n = count_acked(acked);
	msleep(2000);
	CHECK(count_acked(acked) > n, "the writer made no progress in 2 s "
	      "with tdbd running (%u keys acknowledged): an answer held for "
	      "ever?", n);
	kill(w, SIGKILL);
	CHECK(waitpid(w, &status, 0) == w, "waitpid writer");
	for (i = 0; i < 1000; i++)
		acked[i] = 1;
	n = verify(acked, MAX_KEYS);    /* resident, before the reload */
	tdbd_stop(SIGTERM);
	reload_module();
	tdbd_start();
	CHECK(verify(acked, MAX_KEYS) == n, "after the reload");
	printf("test_supervise: %u SIGKILL cycles: %u acknowledged keys, all "
	       "there after a restore\n", KILL_CYCLES, n - 1000);
	system("grep -h 'restored .* records/s' " LOG_FILE);
	CHECK(n > 1000, "the writer got no acknowledgement at all");

	/* 3. leave a fresh tdb.ko */
	tdbd_stop(SIGTERM);
	reload_module();
	system("rm -rf " DATA_DIR);
	return 0;
}
