// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_genlpipe.c - under tdbd --backend kernel with sync always (the
 * qemu guest; issue 26): one generic netlink client's pipelined changes
 * share fdatasyncs.  Its acks are parked until tdbd reports the change
 * durable, not waited for inside sendmsg(), so a client may send many
 * changes before it reads one ack, and tdbd makes many of them durable
 * with one fdatasync.  Needs $TDB_KTEST_TDBD, a tdb.ko with the
 * supervisor ioctls and tracefs (the count of fdatasyncs is the
 * syscall tracepoint's: tdbd in kernel mode has no socket to ask for
 * its STATS); skips (77) without any of them.
 *
 *  1. PIPE_N PUTs sent in PIPE_DGRAMS datagrams without reading, then
 *     every answer read: exactly one ack (error 0) per request, matched
 *     by seq, and nothing else (a doit that parks its ack must not get
 *     the netlink core's ack as well); every put applied; fewer
 *     fdatasyncs than puts (one change per fdatasync: what a wait
 *     inside sendmsg gives);
 *  2. the same with tdbd stopped (SIGSTOP) while they are sent: every
 *     sendmsg returns at once (no wait inside it), no ack comes while
 *     tdbd is stopped, all PIPE_N come after SIGCONT, and tdbd made
 *     them all durable with at most PIPE_N / 4 fdatasyncs;
 *  2b. the parked answers of one socket are bounded by its receive
 *     buffer (1 KiB each): with SO_RCVBUF 16 KiB (32 KiB in effect) and
 *     tdbd stopped, BOUND_N of BOUND_N + 8 puts of one datagram are
 *     parked and the 8 after them refused at once (-EAGAIN, "too many
 *     changes of this socket wait for durability ..."), not applied;
 *     the BOUND_N acks come after SIGCONT;
 *  3. every change survives a reload of tdb.ko (tdbd restores them).
 * It leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tdb/client.h"
#include "tdb/kdev.h"
#include "ksup.h"
#include "kt.h"             /* kt_genl: raw generic netlink */
#include <libmnl/libmnl.h>
#undef CHECK                /* the harness's; ours below */

#define DATA_DIR    "/tmp/tdb-genlpipe"
#define LOG_FILE    "/tmp/tdb-genlpipe.log"
#define TABLE       "pipe"
#define TRACING     "/sys/kernel/tracing"
#define EVENT       TRACING "/events/syscalls/sys_enter_fdatasync/enable"
#define PIPE_N      64          /* changes per run */
#define PIPE_DGRAMS 4           /* datagrams they are sent in */
#define ANSWER_MS   30000       /* all answers within (TCG is slow) */
#define SEND_MS     1000        /* a sendmsg that waits for durability
				 * takes longer: the old bound was 2 s */
#define QUIET_MS    300         /* no answer this long */

static struct ksup_tdbd td = { .log = LOG_FILE, .ready = KSUP_SUPERVISING,
			       .pid = -1 };
static pid_t main_pid;

#define FAIL(...) do { fprintf(stderr, "test_genlpipe: FAIL: " __VA_ARGS__); \
	fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static void tdbd_start(void)
{
	const char *av[] = { td.path, "--backend", "kernel",
		"--data-dir", DATA_DIR, "--sync", "always",
		"--client-deadline", "20s", "--config", "/dev/null", NULL };

	ksup_start(&td, av);
}

static void key_of(char *k, unsigned int i)
{
	snprintf(k, 16, "p%06u", i);
}

static void val_of(char *v, unsigned int i)
{
	snprintf(v, 32, "pv-%u-%u", i, i * 2654435761u);
}

/* --- counting fdatasyncs (every one in the guest: only tdbd makes any) --- */

static bool write_file(const char *path, const char *s, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

/* Turn the fdatasync tracepoint on; false if this kernel cannot. */
static bool trace_setup(void)
{
	if (access(EVENT, W_OK) &&
	    mount("nodev", TRACING, "tracefs", 0, NULL) && errno != EBUSY)
		return false;
	/* a small buffer (64 KiB per cpu: a thousand events), given back
	 * at the end (cleanup): the guest's memory check follows */
	return write_file(TRACING "/tracing_on", "0", 0) &&
	       write_file(TRACING "/buffer_size_kb", "64", 0) &&
	       write_file(TRACING "/trace", "", O_TRUNC) &&
	       write_file(EVENT, "1", 0) &&
	       write_file(TRACING "/tracing_on", "1", 0);
}

static void trace_clear(void)
{
	CHECK(write_file(TRACING "/trace", "", O_TRUNC), "clear the trace");
}

/* fdatasyncs entered since trace_clear(). */
static unsigned int fdatasyncs(void)
{
	static char buf[1 << 16];
	const char *needle = "sys_fdatasync(";
	unsigned int n = 0;
	size_t have = 0;
	ssize_t got;
	int fd = open(TRACING "/trace", O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0, "open the trace: %s", strerror(errno));
	/* lines are short: keep the tail of each read that may hold the
	 * start of a needle cut in two */
	while ((got = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		char *p = buf;
		size_t keep;

		have += (size_t)got;
		buf[have] = 0;
		while ((p = strstr(p, needle))) {
			n++;
			p += strlen(needle);
		}
		keep = have < strlen(needle) ? have : strlen(needle) - 1;
		memmove(buf, buf + have - keep, keep);
		have = keep;
	}
	close(fd);
	return n;
}

/* --- the pipelined client ------------------------------------------------- */

struct pipe_run {
	struct kt_genl g;
	unsigned int seq0;              /* seq of the first put */
	bool acked[PIPE_N];
	uint64_t send_ms;               /* the longest sendmsg */
};

/* PIPE_N puts of keys key0.. in PIPE_DGRAMS datagrams, nothing read. */
static void pipe_send(struct pipe_run *r, unsigned int key0)
{
	static char buf[PIPE_N / PIPE_DGRAMS * 256] __attribute__((aligned(4)));
	unsigned int i, d;

	r->seq0 = r->g.seq + 1;
	r->send_ms = 0;
	memset(r->acked, 0, sizeof(r->acked));
	for (d = 0, i = 0; d < PIPE_DGRAMS; d++) {
		size_t off = 0;
		uint64_t t;
		char k[16], v[32];

		for (; i < (d + 1) * (PIPE_N / PIPE_DGRAMS); i++) {
			struct nlmsghdr *nlh = kt_genl_msg(&r->g, buf + off,
							   TDB_CMD_PUT,
							   NLM_F_ACK);

			key_of(k, key0 + i);
			val_of(v, key0 + i);
			mnl_attr_put_strz(nlh, TDB_A_TABLE, TABLE);
			mnl_attr_put(nlh, TDB_A_KEY, strlen(k), k);
			mnl_attr_put(nlh, TDB_A_VALUE, strlen(v), v);
			off += NLMSG_ALIGN(nlh->nlmsg_len);
			CHECK(off + 256 <= sizeof(buf), "datagram buffer");
		}
		t = ksup_now_ms();
		CHECK(send(r->g.fd, buf, off, 0) == (ssize_t)off,
		      "send datagram %u: %s", d, strerror(errno));
		t = ksup_now_ms() - t;
		if (t > r->send_ms)
			r->send_ms = t;
	}
}

/* Anything to read within ms? */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* Read every answer: exactly one ack (error 0) per put, nothing else. */
static void pipe_collect(struct pipe_run *r)
{
	static char buf[1 << 16] __attribute__((aligned(4)));
	uint64_t end = ksup_now_ms() + ANSWER_MS;
	unsigned int got = 0;

	while (got < PIPE_N) {
		struct nlmsghdr *m;
		long n;

		if (!readable(r->g.fd, 1000)) {
			CHECK(ksup_now_ms() < end, "%u of %u acks in %u ms",
			      got, PIPE_N, ANSWER_MS);
			continue;
		}
		n = recv(r->g.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		CHECK(n > 0, "recv: %s", n < 0 ? strerror(errno) : "EOF");
		for (m = (struct nlmsghdr *)buf; mnl_nlmsg_ok(m, (int)n);
		     m = mnl_nlmsg_next(m, (int *)&n)) {
			struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
			unsigned int i = m->nlmsg_seq - r->seq0;

			CHECK(m->nlmsg_type == NLMSG_ERROR, "answer of type "
			      "%u (seq %u), want NLMSG_ERROR", m->nlmsg_type,
			      m->nlmsg_seq);
			CHECK(i < PIPE_N, "an answer for seq %u, not one of "
			      "the puts (%u..%u): error %d", m->nlmsg_seq,
			      r->seq0, r->seq0 + PIPE_N - 1, e->error);
			CHECK(!r->acked[i], "put %u (seq %u) answered twice "
			      "(the second: error %d)", i, m->nlmsg_seq,
			      e->error);
			CHECK(e->error == 0, "put %u: error %d, want an ack", i,
			      e->error);
			r->acked[i] = true;
			got++;
		}
	}
	CHECK(!readable(r->g.fd, QUIET_MS), "an answer after all %u acks",
	      PIPE_N);
}

/* The value of key i over generic netlink: applied? */
static bool has_key(unsigned int i)
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

static void all_applied(unsigned int key0)
{
	unsigned int i;

	for (i = 0; i < PIPE_N; i++)
		CHECK(has_key(key0 + i), "put %u not applied", i);
}

/* 1. free-running: fewer fdatasyncs than changes */
static void pipelined(void)
{
	struct pipe_run r;
	unsigned int syncs;
	uint64_t t0 = ksup_now_ms();

	kt_genl_open(&r.g);
	trace_clear();
	pipe_send(&r, 0);
	pipe_collect(&r);
	syncs = fdatasyncs();
	kt_genl_close(&r.g);
	printf("test_genlpipe: %u pipelined puts acked in %llu ms (longest "
	       "sendmsg %llu ms) with %u fdatasync(s) by tdbd\n", PIPE_N,
	       (unsigned long long)(ksup_now_ms() - t0),
	       (unsigned long long)r.send_ms, syncs);
	CHECK(syncs >= 1, "no fdatasync counted for %u synced puts (is the "
	      "tracepoint counting?)", PIPE_N);
	CHECK(syncs < PIPE_N, "%u fdatasyncs for %u pipelined puts: one "
	      "change per fdatasync (acks waited for inside sendmsg?)",
	      syncs, PIPE_N);
	all_applied(0);
}

/* 2. sent while tdbd is stopped: no wait in sendmsg, batched syncs */
static void pipelined_stopped(void)
{
	struct pipe_run r;
	unsigned int syncs;
	uint64_t t;

	kt_genl_open(&r.g);
	ksup_pause(&td);
	trace_clear();
	pipe_send(&r, PIPE_N);
	CHECK(r.send_ms < SEND_MS, "a sendmsg of %u puts took %llu ms with "
	      "tdbd stopped: it waited for durability", PIPE_N / PIPE_DGRAMS,
	      (unsigned long long)r.send_ms);
	CHECK(!readable(r.g.fd, QUIET_MS), "an answer while tdbd (sync "
	      "always) is stopped");
	all_applied(PIPE_N);
	t = ksup_now_ms();
	CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
	pipe_collect(&r);
	syncs = fdatasyncs();
	kt_genl_close(&r.g);
	printf("test_genlpipe: %u puts sent with tdbd stopped (longest "
	       "sendmsg %llu ms): acked %llu ms after SIGCONT with %u "
	       "fdatasync(s)\n", PIPE_N, (unsigned long long)r.send_ms,
	       (unsigned long long)(ksup_now_ms() - t), syncs);
	CHECK(syncs >= 1 && syncs <= PIPE_N / 4, "%u fdatasyncs for %u puts "
	      "logged while tdbd was stopped: want 1..%u", syncs, PIPE_N,
	      PIPE_N / 4);
}

/* 2b. the bound on one socket's parked answers */
#define BOUND_N     32          /* 32 KiB of receive buffer / 1 KiB */
#define BOUND_KEY0  1000

static void parked_bound(void)
{
	static char buf[(BOUND_N + 8) * 256] __attribute__((aligned(4)));
	int size = 16384;       /* the kernel doubles it */
	unsigned int i, acks = 0, refused = 0, seq0;
	uint64_t end;
	struct kt_genl g;
	size_t off = 0;
	char k[16], v[32];

	kt_genl_open(&g);
	CHECK(!setsockopt(g.fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)),
	      "SO_RCVBUF: %s", strerror(errno));
	seq0 = g.seq + 1;
	for (i = 0; i < BOUND_N + 8; i++) {
		struct nlmsghdr *nlh = kt_genl_msg(&g, buf + off, TDB_CMD_PUT,
						   NLM_F_ACK);

		key_of(k, BOUND_KEY0 + i);
		val_of(v, BOUND_KEY0 + i);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, TABLE);
		mnl_attr_put(nlh, TDB_A_KEY, strlen(k), k);
		mnl_attr_put(nlh, TDB_A_VALUE, strlen(v), v);
		off += NLMSG_ALIGN(nlh->nlmsg_len);
	}
	ksup_pause(&td);
	CHECK(send(g.fd, buf, off, 0) == (ssize_t)off, "send: %s",
	      strerror(errno));
	end = ksup_now_ms() + ANSWER_MS;
	while (acks + refused < BOUND_N + 8) {
		struct nlmsghdr *m;
		long n;

		if (refused == 8 && !acks)
			CHECK(!kill(td.pid, SIGCONT), "SIGCONT tdbd");
		if (!readable(g.fd, 1000)) {
			CHECK(ksup_now_ms() < end, "%u acks, %u refused of %u "
			      "in %u ms", acks, refused, BOUND_N + 8,
			      ANSWER_MS);
			continue;
		}
		n = recv(g.fd, buf, sizeof(buf), MSG_DONTWAIT);
		CHECK(n > 0, "recv: %s", n < 0 ? strerror(errno) : "EOF");
		for (m = (struct nlmsghdr *)buf; mnl_nlmsg_ok(m, (int)n);
		     m = mnl_nlmsg_next(m, (int *)&n)) {
			struct nlmsgerr *e = mnl_nlmsg_get_payload(m);
			unsigned int at = m->nlmsg_seq - seq0;

			CHECK(m->nlmsg_type == NLMSG_ERROR && at < BOUND_N + 8,
			      "answer type %u seq %u", m->nlmsg_type,
			      m->nlmsg_seq);
			if (at < BOUND_N) {
				CHECK(e->error == 0 && refused == 8, "put %u "
				      "(under the bound): %d, %u refused "
				      "before it", at, e->error, refused);
				acks++;
			} else {
				CHECK(e->error == -EAGAIN && !acks, "put %u "
				      "(past the bound): %d, want -EAGAIN "
				      "before any ack", at, e->error);
				refused++;
			}
		}
	}
	kt_genl_close(&g);
	for (i = 0; i < BOUND_N + 8; i++)
		CHECK(has_key(BOUND_KEY0 + i) == (i < BOUND_N), "put %u: "
		      "applied %d", i, (int)has_key(BOUND_KEY0 + i));
	printf("test_genlpipe: a 32 KiB receive buffer: %u puts parked, %u "
	       "refused -EAGAIN\n", acks, refused);
}

/* A failed test leaves no tdbd behind (it would keep tdb.ko from
 * unloading for the tests after this one). */
static void cleanup(void)
{
	if (getpid() != main_pid)
		return;
	write_file(EVENT, "0", 0);
	write_file(TRACING "/buffer_size_kb", "4", 0);
	if (td.pid <= 0)
		return;
	kill(td.pid, SIGKILL);
	kill(td.pid, SIGCONT);
	waitpid(td.pid, NULL, 0);
	td.pid = -1;
}

int main(void)
{
	struct tdbc *c;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	td.path = getenv("TDB_KTEST_TDBD");
	if (!td.path || !*td.path) {
		fprintf(stderr, "test_genlpipe: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_genlpipe: SKIP: tdb.ko has no "
			"supervisor ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	if (!trace_setup()) {
		fprintf(stderr, "test_genlpipe: SKIP: no tracefs with the "
			"sys_enter_fdatasync event (%s)\n", strerror(errno));
		return 77;
	}
	atexit(cleanup);
	system("rm -rf " DATA_DIR " " LOG_FILE);
	ksup_reload("log_ring_mb=1");
	tdbd_start();
	c = ksup_connect(TDBC_NO_RINGS);
	CHECK(!tdbc_table_create(c, TABLE, NULL), "create: %s",
	      tdbc_errmsg(c));
	tdbc_close(c);

	pipelined();
	pipelined_stopped();
	parked_bound();

	/* 3. all durable: a restore brings every change back */
	ksup_stop(&td, SIGTERM);
	ksup_reload("log_ring_mb=1");
	tdbd_start();
	for (i = 0; i < 2 * PIPE_N; i++)
		CHECK(has_key(i), "key %u lost by the restore", i);
	ksup_stop(&td, SIGTERM);
	printf("test_genlpipe: every change restored\n");
	ksup_reload("");
	system("rm -rf " DATA_DIR);
	return 0;
}
