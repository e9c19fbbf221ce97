// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_supack.c - under tdbd --backend kernel (the qemu guest; issue
 * 15): generic netlink acknowledgements keep their meaning, and the
 * change log ring counts in max_memory_mb.  Needs $TDB_KTEST_TDBD and a
 * tdb.ko with the supervisor ioctls: skips (77) without either.
 *
 *  1. sync always: a genl PUT, DEL, transaction commit and TABLE_CREATE
 *     made while tdbd is stopped (SIGSTOP) is applied at once (another
 *     genl socket reads it) but not acknowledged within STOP_MS; after
 *     SIGCONT it is, without error;
 *  2. a SIGKILLed sender whose ack is parked ends at once (not at the
 *     deadline: it waits in its own recv, not in the kernel), and its
 *     parked answer goes with its socket (STATS held 0 in 3);
 *  3. tdbd stopped past its client deadline (1 s): -ETIMEDOUT "... the
 *     supervisor (tdbd) did not report it durable ..."; tdbd killed:
 *     -ETIMEDOUT "... no supervisor (tdbd) is attached"; both counted in
 *     TDB_IOC_SUP_STATS timed_out, and both changes stay applied;
 *  3b. one datagram of 5 PUTs while tdbd is stopped (deadline 10 s):
 *     sendmsg returns at once (the acks are parked, no genl lock is
 *     held: another socket's GET is answered meanwhile), each ack is
 *     -ETIMEDOUT at its own deadline (about 10 s), all applied;
 *  4. sync batch: a genl PUT is answered while tdbd is stopped;
 *  4b. rmmod with a genl PUT waiting (no supervisor): the put is
 *     answered -ETIMEDOUT "... being unloaded" at once;
 *  5. every change above is durable: tdb.ko reloaded, tdbd restores
 *     them all;
 *  6. max_memory_mb=32 log_ring_mb=64: TDB_IOC_SUP_CLAIM is refused
 *     -ENOSPC, the kernel log names both parameters, and tables still
 *     work; max_memory_mb=25 log_ring_mb=16: the claim passes, and the
 *     ring and the connection's rings (8 MiB) leave no room for a
 *     table's extent (-ENOMEM) until max_memory_mb is raised.
 * It leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdb/client.h"
#include "tdb/kdev.h"
#include "ksup.h"
#include "kt.h"             /* kt_genl: raw generic netlink */
#include <libmnl/libmnl.h>
#undef CHECK                /* the harness's; ours below */

#define DATA_DIR    "/tmp/tdb-supack"
#define LOG_FILE    "/tmp/tdb-supack.log"
#define TABLE       "ack"
#define STOP_MS     300         /* no ack this long while tdbd is stopped */
#define ANSWER_MS   30000       /* an ack that must come (TCG is slow) */

static struct ksup_tdbd td = { .log = LOG_FILE, .ready = KSUP_SUPERVISING,
			       .pid = -1 };
static pid_t main_pid;

#define FAIL(...) do { fprintf(stderr, "test_supack: FAIL: " __VA_ARGS__); \
	fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

/* tdbd in kernel mode with this sync mode and client deadline; returns
 * once it supervises. */
static void tdbd_start(const char *sync, const char *deadline)
{
	const char *av[] = { td.path, "--backend", "kernel",
		"--data-dir", DATA_DIR, "--sync", sync,
		"--client-deadline", deadline, "--config", "/dev/null", NULL };

	ksup_start(&td, av);
}

static void key_of(char *k, unsigned int i)
{
	snprintf(k, 16, "k%06u", i);
}

static void val_of(char *v, unsigned int i)
{
	snprintf(v, 32, "v-%u-%u", i, i * 2654435761u);
}

/* --- one change from a child, over generic netlink ---------------------- */

enum op { OP_PUT, OP_DEL, OP_TXN, OP_CREATE };
static const char *const op_name[] = { "put", "delete", "commit", "create" };

struct answer {
	int err;
	char msg[200];
};

/* The change of kind op on key i (OP_TXN: keys i and i + 1; OP_CREATE:
 * table "ack<i>"), its error and message. */
static void do_op(enum op op, unsigned int i, struct answer *a)
{
	struct tdbc *c = ksup_connect(TDBC_NO_RINGS);
	struct tdbc_table *t = NULL;
	struct tdbc_txn *x = NULL;
	char k[16], v[32], name[16];

	CHECK(!tdbc_uses_rings(c), "not a generic netlink connection");
	CHECK(!tdbc_table_open(c, TABLE, &t), "open: %s", tdbc_errmsg(c));
	key_of(k, i);
	val_of(v, i);
	switch (op) {
	case OP_PUT:
		a->err = tdbc_put(t, NULL, k, strlen(k), v, strlen(v), 0);
		break;
	case OP_DEL:
		a->err = tdbc_del(t, NULL, k, strlen(k));
		break;
	case OP_TXN:
		CHECK(!tdbc_txn_begin(c, &x), "begin: %s", tdbc_errmsg(c));
		CHECK(!tdbc_put(t, x, k, strlen(k), v, strlen(v), 0),
		      "put in txn: %s", tdbc_errmsg(c));
		key_of(k, i + 1);
		val_of(v, i + 1);
		CHECK(!tdbc_put(t, x, k, strlen(k), v, strlen(v), 0),
		      "put in txn: %s", tdbc_errmsg(c));
		a->err = tdbc_txn_commit(x);
		break;
	case OP_CREATE:
		snprintf(name, sizeof(name), TABLE "%u", i);
		a->err = tdbc_table_create(c, name, NULL);
		break;
	}
	snprintf(a->msg, sizeof(a->msg), "%s", a->err ? tdbc_errmsg(c) : "");
	tdbc_table_close(t);
	tdbc_close(c);
}

struct pending {
	pid_t pid;
	int fd;                 /* the answer comes here */
	uint64_t t0;
};

static struct pending op_start(enum op op, unsigned int i)
{
	struct pending p;
	int pfd[2];

	CHECK(!pipe(pfd), "pipe");
	p.t0 = ksup_now_ms();
	p.pid = fork();
	CHECK(p.pid >= 0, "fork");
	if (!p.pid) {
		struct answer a;

		close(pfd[0]);
		memset(&a, 0, sizeof(a));
		do_op(op, i, &a);
		CHECK(write(pfd[1], &a, sizeof(a)) == sizeof(a), "write");
		_exit(0);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	return p;
}

/* Has it answered within ms? */
static bool op_answered(struct pending *p, int ms)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/* Its answer (within ANSWER_MS), and how long it took since it began. */
static struct answer op_finish(struct pending *p, uint64_t *ms)
{
	struct answer a;
	int status;

	CHECK(op_answered(p, ANSWER_MS), "no answer in %u ms", ANSWER_MS);
	*ms = ksup_now_ms() - p->t0;
	CHECK(read(p->fd, &a, sizeof(a)) == sizeof(a), "read answer");
	close(p->fd);
	CHECK(waitpid(p->pid, &status, 0) == p->pid && WIFEXITED(status) &&
	      !WEXITSTATUS(status), "child status %#x", status);
	return a;
}

/* The value of key i over generic netlink (a read never waits): 1 with
 * the right value, 0 absent. */
static int has_key(unsigned int i)
{
	struct tdbc *c = ksup_connect(TDBC_NO_RINGS);
	struct tdbc_table *t = NULL;
	char k[16], v[32], got[64];
	long len;

	CHECK(!tdbc_table_open(c, TABLE, &t), "open: %s", tdbc_errmsg(c));
	key_of(k, i);
	val_of(v, i);
	len = tdbc_get(t, NULL, k, strlen(k), got, sizeof(got), NULL);
	CHECK(len == -ENOENT || (len == (long)strlen(v) &&
				 !memcmp(got, v, (size_t)len)),
	      "key %s: %ld (%s)", k, len, tdbc_errmsg(c));
	tdbc_table_close(t);
	tdbc_close(c);
	return len > 0;
}

static bool has_table(unsigned int i)
{
	struct tdbc *c = ksup_connect(TDBC_NO_RINGS);
	struct tdbc_table_stat st;
	char name[16];
	int e;

	snprintf(name, sizeof(name), TABLE "%u", i);
	e = tdbc_table_stat(c, name, &st);
	tdbc_close(c);
	return !e;
}

/* The change is applied at once, its ack waits for tdbd. */
static void held_while_stopped(enum op op, unsigned int i)
{
	struct pending p;
	struct answer a;
	uint64_t ms, t;

	ksup_pause(&td);
	p = op_start(op, i);
	if (op_answered(&p, STOP_MS)) {
		a = op_finish(&p, &ms);
		FAIL("genl %s answered in %llu ms while tdbd (sync always) "
		     "was stopped, not durable yet: %d \"%s\"", op_name[op],
		     (unsigned long long)ms, a.err, a.msg);
	}
	switch (op) {
	case OP_PUT:
		CHECK(has_key(i), "genl put: not applied while held");
		break;
	case OP_DEL:
		CHECK(!has_key(i), "genl delete: not applied while held");
		break;
	case OP_TXN:
		CHECK(has_key(i) && has_key(i + 1),
		      "genl commit: not applied while held");
		break;
	case OP_CREATE:
		CHECK(has_table(i), "genl create: not applied while held");
		break;
	}
	t = ksup_now_ms();
	CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
	a = op_finish(&p, &ms);
	CHECK(!a.err, "genl %s after SIGCONT: %d %s", op_name[op], a.err,
	      a.msg);
	printf("test_supack: genl %s held %llu ms (acknowledged %llu ms "
	       "after SIGCONT)\n", op_name[op], (unsigned long long)ms,
	       (unsigned long long)(ksup_now_ms() - t));
}

static struct tdb_sup_stats stats(void)
{
	struct tdb_sup_stats st;
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);

	CHECK(fd >= 0 && !ioctl(fd, TDB_IOC_SUP_STATS, &st), "STATS: %s",
	      strerror(errno));
	close(fd);
	return st;
}

/* Wait until every record tdb.ko logged is durable (its ring is
 * empty: DURABLE gives the space back). */
static void all_durable(void)
{
	uint64_t end = ksup_now_ms() + ANSWER_MS;

	while (stats().log_bytes) {
		CHECK(ksup_now_ms() < end, "records logged are not durable "
		      "after %u ms (%llu bytes in the log ring)", ANSWER_MS,
		      (unsigned long long)stats().log_bytes);
		ksup_msleep(20);
	}
}

/* -ETIMEDOUT with this text after about the deadline (1 s), applied. */
static void times_out(unsigned int i, const char *text)
{
	struct pending p = op_start(OP_PUT, i);
	struct answer a;
	uint64_t ms;

	a = op_finish(&p, &ms);
	CHECK(a.err == -ETIMEDOUT && strstr(a.msg, text),
	      "genl put past the deadline: %d \"%s\", want -ETIMEDOUT "
	      "\"...%s...\"", a.err, a.msg, text);
	CHECK(ms >= 900, "-ETIMEDOUT after %llu ms, before the 1 s deadline",
	      (unsigned long long)ms);
	CHECK(has_key(i), "a timed-out put is not applied");
	printf("test_supack: -ETIMEDOUT after %llu ms: %s\n",
	       (unsigned long long)ms, a.msg);
}

/*
 * 3b. One datagram of DGRAM_N puts while tdbd is stopped (deadline
 * 10 s): each ack is parked with its own deadline and the sendmsg
 * returns at once, holding no genl lock (genl's cb_lock, which every
 * genl family's registration needs, and all genl traffic queued behind
 * it): a GET on another socket is answered while they wait.  Every put
 * is applied; every answer is -ETIMEDOUT, at about the deadline.
 */
#define DGRAM_N     5
#define DGRAM_KEY0  10

static void datagram_bound(void)
{
	static char buf[8192] __attribute__((aligned(4)));
	char k[16], v[32];
	struct kt_genl g;
	unsigned int i, got = 0;
	uint64_t t0, ms;
	size_t off = 0;
	long n;

	kt_genl_open(&g);
	for (i = 0; i < DGRAM_N; i++) {
		struct nlmsghdr *nlh = kt_genl_msg(&g, buf + off, TDB_CMD_PUT,
						   NLM_F_ACK);

		key_of(k, DGRAM_KEY0 + i);
		val_of(v, DGRAM_KEY0 + i);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, TABLE);
		mnl_attr_put(nlh, TDB_A_KEY, strlen(k), k);
		mnl_attr_put(nlh, TDB_A_VALUE, strlen(v), v);
		off += NLMSG_ALIGN(nlh->nlmsg_len);
	}
	ksup_pause(&td);
	t0 = ksup_now_ms();
	CHECK(send(g.fd, buf, off, 0) == (ssize_t)off, "send the datagram: %s",
	      strerror(errno));
	ms = ksup_now_ms() - t0;
	CHECK(ms < 1000, "sendmsg of %u puts took %llu ms with tdbd stopped: "
	      "it waited for durability", DGRAM_N, (unsigned long long)ms);
	for (i = 0; i < DGRAM_N; i++)
		CHECK(has_key(DGRAM_KEY0 + i), "datagram put %u not applied "
		      "while its ack is parked", i);
	CHECK(ksup_now_ms() - t0 < 5000, "reads on other sockets took %llu "
	      "ms while the datagram's acks were parked",
	      (unsigned long long)(ksup_now_ms() - t0));
	while (got < DGRAM_N) {
		struct nlmsghdr *r;

		n = recv(g.fd, buf, sizeof(buf), 0);
		CHECK(n > 0, "recv: %s", n < 0 ? strerror(errno) : "EOF");
		for (r = (struct nlmsghdr *)buf; mnl_nlmsg_ok(r, (int)n);
		     r = mnl_nlmsg_next(r, (int *)&n)) {
			struct nlmsgerr *e = mnl_nlmsg_get_payload(r);

			if (r->nlmsg_type != NLMSG_ERROR)
				continue;
			CHECK(e->error == -ETIMEDOUT, "put %u of the datagram: "
			      "%d, want -ETIMEDOUT (tdbd is stopped)", got,
			      e->error);
			got++;
		}
	}
	ms = ksup_now_ms() - t0;
	CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
	kt_genl_close(&g);
	CHECK(ms >= 9000 && ms < 20000, "%u puts in one datagram answered in "
	      "%llu ms with tdbd stopped: want each at its deadline (10 s)",
	      DGRAM_N, (unsigned long long)ms);
	for (i = 0; i < DGRAM_N; i++)
		CHECK(has_key(DGRAM_KEY0 + i), "datagram put %u not applied",
		      i);
	printf("test_supack: %u puts in one datagram, tdbd stopped: sent at "
	       "once, all -ETIMEDOUT in %llu ms\n", DGRAM_N,
	       (unsigned long long)ms);
}

/* 7. Unloading ends the waits: with no supervisor (sync always, the
 * deadline 10 s) a genl put waits; rmmod does not wait for it (it would
 * hold genl's lock for writing, and all genl traffic behind it), and
 * the put is answered -ETIMEDOUT "... being unloaded". */
static void unload_ends_waits(void)
{
	struct pending p;
	struct answer a;
	uint64_t ms, t;

	tdbd_start("always", "10s");
	ksup_stop(&td, SIGKILL);
	p = op_start(OP_PUT, 20);
	CHECK(!op_answered(&p, STOP_MS), "genl put answered with no "
	      "supervisor (sync always)");
	t = ksup_now_ms();
	ksup_sh("rmmod tdb");
	t = ksup_now_ms() - t;
	a = op_finish(&p, &ms);
	CHECK(a.err == -ETIMEDOUT && strstr(a.msg, "being unloaded"),
	      "a genl put waiting at unload: %d \"%s\"", a.err, a.msg);
	CHECK(t < 5000, "rmmod took %llu ms with a genl put waiting (the "
	      "deadline is 10 s)", (unsigned long long)t);
	ksup_sh("insmod " KSUP_KO " log_ring_mb=1");
	printf("test_supack: rmmod with a genl put waiting: %llu ms; the put: "
	       "%s\n", (unsigned long long)t, a.msg);
}

static void acks(void)
{
	struct tdb_sup_stats st0, st1;
	struct pending p;
	struct answer a;
	struct tdbc *c;
	uint64_t ms;
	int status;
	unsigned int i;

	tdbd_start("always", "10s");
	c = ksup_connect(TDBC_NO_RINGS);
	CHECK(!tdbc_table_create(c, TABLE, NULL), "create: %s",
	      tdbc_errmsg(c));
	tdbc_close(c);

	/* with tdbd running: acked, as soon as durable */
	p = op_start(OP_PUT, 0);
	a = op_finish(&p, &ms);
	CHECK(!a.err, "put: %s", a.msg);
	printf("test_supack: genl put with tdbd running: %llu ms\n",
	       (unsigned long long)ms);

	/* 1. held while tdbd is stopped */
	held_while_stopped(OP_PUT, 1);
	held_while_stopped(OP_DEL, 0);
	held_while_stopped(OP_TXN, 2);
	held_while_stopped(OP_CREATE, 1);

	/* 2. a SIGKILLed sender ends at once (the deadline is 10 s) */
	ksup_pause(&td);
	p = op_start(OP_PUT, 4);
	CHECK(!op_answered(&p, STOP_MS), "genl put answered while tdbd "
	      "(sync always) was stopped");
	CHECK(has_key(4), "put 4 not applied");
	ms = ksup_now_ms();
	kill(p.pid, SIGKILL);
	CHECK(waitpid(p.pid, &status, 0) == p.pid && WIFSIGNALED(status),
	      "the killed child: status %#x", status);
	ms = ksup_now_ms() - ms;
	CHECK(ms < 5000, "a SIGKILLed sender took %llu ms to end (its ack "
	      "is parked: nothing waits in the kernel)",
	      (unsigned long long)ms);
	close(p.fd);
	CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
	printf("test_supack: a SIGKILLed sender ended in %llu ms\n",
	       (unsigned long long)ms);

	datagram_bound();

	/* 3. past the deadline: tdbd stopped, then killed */
	st0 = stats();
	ksup_stop(&td, SIGTERM);
	tdbd_start("always", "1s");
	ksup_pause(&td);
	times_out(5, "the supervisor (tdbd) did not report it durable");
	ksup_stop(&td, SIGKILL);
	times_out(6, "no supervisor (tdbd) is attached");
	st1 = stats();
	CHECK(st1.timed_out >= st0.timed_out + 2 && st1.held == 0,
	      "STATS: timed_out %llu -> %llu, held %llu",
	      (unsigned long long)st0.timed_out,
	      (unsigned long long)st1.timed_out,
	      (unsigned long long)st1.held);

	/* 4. sync batch answers at once */
	tdbd_start("batch", "10s");
	ksup_pause(&td);
	p = op_start(OP_PUT, 7);
	CHECK(op_answered(&p, 5000), "sync batch: genl put not answered "
	      "in 5 s while tdbd was stopped");
	a = op_finish(&p, &ms);
	CHECK(!a.err, "sync batch put: %s", a.msg);
	CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
	printf("test_supack: sync batch: genl put answered in %llu ms with "
	       "tdbd stopped\n", (unsigned long long)ms);

	/* 5. all durable: a restore brings every change back.  tdbd reads
	 * the records its predecessors left (5, 6) and the batch put's
	 * first: stopped before it read them, it would leave them in the
	 * ring, which the reload drops (seen under a loaded host). */
	all_durable();
	ksup_stop(&td, SIGTERM);
	ksup_reload("log_ring_mb=1");
	tdbd_start("always", "10s");
	CHECK(!has_key(0), "the deleted key is back");
	for (i = 1; i <= 7; i++)
		CHECK(has_key(i), "key %u lost by the restore", i);
	for (i = DGRAM_KEY0; i < DGRAM_KEY0 + DGRAM_N; i++)
		CHECK(has_key(i), "datagram key %u lost by the restore", i);
	CHECK(has_table(1), "the created table lost by the restore");
	ksup_stop(&td, SIGTERM);
	printf("test_supack: every change restored\n");
}

/* --- the log ring in max_memory_mb ---------------------------------------- */

static int claim(int fd)
{
	struct tdb_sup_claim c;

	memset(&c, 0, sizeof(c));
	c.version = TDB_DEV_VERSION;
	c.sync = TDB_SUP_SYNC_NONE;
	c.instance = 0x5eedfeed0000a11cull;
	c.next_lsn = 1;
	return ioctl(fd, TDB_IOC_SUP_CLAIM, &c) < 0 ? -errno : 0;
}

/* A table and a record in it through /dev/tdb: 0 or the first error. */
static int table_put(const char *name)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table *t = NULL;
	char got[8];
	int e;

	e = tdbc_table_create(c, name, NULL);
	if (!e)
		e = tdbc_table_open(c, name, &t);
	if (!e)
		e = tdbc_put(t, NULL, "key", 3, "value", 5, 0);
	if (!e)
		e = tdbc_get(t, NULL, "key", 3, got, sizeof(got), NULL) == 5 ?
		    0 : -EIO;
	if (e)
		printf("test_supack: table %s: %s\n", name, tdbc_errmsg(c));
	tdbc_table_close(t);
	tdbc_close(c);
	return e;
}

static void ring_memory(void)
{
	int fd, e;

	/* refused: 64 MiB of ring in 32 MiB */
	ksup_reload("max_memory_mb=32 log_ring_mb=64");
	fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open: %s", strerror(errno));
	e = claim(fd);
	CHECK(e == -ENOSPC, "claim with log_ring_mb=64 > max_memory_mb=32: "
	      "%d (%s), want -ENOSPC", e, strerror(-e));
	ksup_sh("dmesg | grep 'TDB_IOC_SUP_CLAIM' | grep 'log_ring_mb=64' | "
	   "grep -q 'max_memory_mb=32'");
	close(fd);
	CHECK(!table_put("mem_a"), "a table after the refused claim");
	printf("test_supack: claim refused -ENOSPC (log_ring_mb=64, "
	       "max_memory_mb=32); tables work\n");

	/* the ring takes 16 MiB + its header page of 25 MiB, the
	 * connection's rings (2 x 4 MiB + 2 header pages, counted there
	 * too) 8 MiB more: no table extent (2 MiB) fits until the bound
	 * is raised */
	ksup_reload("max_memory_mb=25 log_ring_mb=16");
	fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open: %s", strerror(errno));
	e = claim(fd);
	CHECK(!e, "claim with log_ring_mb=16, max_memory_mb=25: %s",
	      strerror(-e));
	CHECK(!ioctl(fd, TDB_IOC_SUP_READY, 0), "READY: %s", strerror(errno));
	ksup_sh("dmesg | grep -q 'change log ring of 16 MiB allocated, counted in "
	   "max_memory_mb=25'");
	e = table_put("mem_b");
	CHECK(e == -ENOMEM, "a table's first extent beside a 16 MiB ring and "
	      "8 MiB of client rings in max_memory_mb=25: %d, want -ENOMEM",
	      e);
	ksup_sh("echo 32 > /sys/module/tdb/parameters/max_memory_mb");
	e = table_put("mem_c");
	CHECK(!e, "a table with max_memory_mb=32 beside the ring: %d", e);
	close(fd);
	printf("test_supack: the 16 MiB ring counts in max_memory_mb\n");
}

/* A failed test leaves no tdbd behind (it would keep tdb.ko from
 * unloading for the tests after this one). */
static void cleanup(void)
{
	if (getpid() != main_pid || td.pid <= 0)
		return;
	kill(td.pid, SIGKILL);
	kill(td.pid, SIGCONT);
	waitpid(td.pid, NULL, 0);
	td.pid = -1;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	atexit(cleanup);
	td.path = getenv("TDB_KTEST_TDBD");
	if (!td.path || !*td.path) {
		fprintf(stderr, "test_supack: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_supack: SKIP: tdb.ko has no supervisor "
			"ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	system("rm -rf " DATA_DIR " " LOG_FILE);
	ksup_reload("log_ring_mb=1");
	acks();
	unload_ends_waits();
	ring_memory();
	ksup_reload("");
	system("rm -rf " DATA_DIR);
	return 0;
}
