// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_graceful_stop.c - SIGTERM while clients are busy.
 *
 * Eight client processes (four over rings, four socket only) keep
 * requests in flight: batches of 32 asynchronous puts, blocking put+get
 * pairs and gets of their own keys, each answer checked against what
 * they wrote.  With them: a client whose completion ring is full (it
 * never reaps), a client stopped (SIGSTOP) in the middle of a scan dump,
 * and an idle one.  Then SIGTERM:
 *
 *  - tdbd exits 0 within a couple of seconds (3.5 s; 8 s under the
 *    sanitizers) however its clients behave, with a clean log;
 *  - every busy client got, for each request, either its right answer
 *    or a clean connection error (-ECONNRESET / -EPIPE), never a wrong
 *    value, -EPROTO or a hang: each sees the error within 5 s of the
 *    stop and every later call fails at once with it;
 *  - the socket file is gone and connecting is refused.
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

#include "harness.h"
#include "ring.h"

#define NBUSY  8
#define NKEYS  64
#define BATCH  32

struct busy_report {
	uint64_t ops, batches, partial;   /* partial: answers of the cut
					   * batch */
	int err;                          /* the connection's end */
};

static bool clean_end(int err)
{
	return err == -ECONNRESET || err == -EPIPE;
}

struct busy {
	struct tdbc *c;
	struct tdbc_table *t;
	int p;
	uint64_t rnd;
	uint32_t gen[NKEYS];    /* 0: never written */
	struct busy_report rep;
};

static int keyof(char *out, int p, unsigned int i)
{
	return sprintf(out, "c%d:%u", p, i);
}

static int valof(char *out, int p, unsigned int i, uint32_t gen)
{
	return sprintf(out, "v%d:%u:%u", p, i, gen);
}

/* End of the road: err must be a clean connection error; returns true
 * if the connection ended. */
static bool ended(struct busy *b, int err, const char *what)
{
	if (err >= 0)
		return false;
	CHECK(clean_end(err), "client %d: %s: %s (%s), want a clean "
	      "connection error", b->p, what, h_errname(err),
	      tdbc_errmsg(b->c));
	b->rep.err = err;
	return true;
}

static bool busy_batch(struct busy *b)
{
	struct tdbc_req reqs[BATCH];
	struct tdbc_cqe cqes[BATCH];
	char keys[BATCH][32], vals[BATCH][48];
	unsigned int k, sub = 0, got = 0;
	uint32_t gen = (uint32_t)(b->rep.ops + 1);
	int rc;

	unsigned int first = (unsigned int)(h_rand(&b->rnd) % NKEYS);

	for (k = 0; k < BATCH; k++) {
		/* distinct keys: completions come in any order */
		unsigned int i = (first + k) % NKEYS;

		memset(&reqs[k], 0, sizeof(reqs[k]));
		reqs[k].op = TDBC_OP_PUT;
		reqs[k].table = b->t;
		reqs[k].klen = (size_t)keyof(keys[k], b->p, i);
		reqs[k].key = keys[k];
		reqs[k].vlen = (size_t)valof(vals[k], b->p, i, gen);
		reqs[k].val = vals[k];
		reqs[k].user = i;
	}
	while (got < BATCH) {
		if (sub < BATCH) {
			rc = tdbc_submit(b->c, reqs + sub, BATCH - sub);
			if (rc != -EAGAIN && ended(b, rc, "submit"))
				goto cut;
			if (rc > 0)
				sub += (unsigned int)rc;
		}
		rc = tdbc_reap(b->c, cqes, BATCH, sub > got ? 1 : 0, 5000);
		if (ended(b, rc, "reap"))
			goto cut;
		CHECK(rc > 0 || sub == got, "client %d: no completion within "
		      "5 s", b->p);
		for (k = 0; k < (unsigned int)rc; k++) {
			/* an answer that came is a right one */
			CHECK(cqes[k].res == 0, "client %d: async put: %s",
			      b->p, h_errname(cqes[k].res));
			b->gen[cqes[k].user] = gen;
		}
		got += (unsigned int)rc;
	}
	b->rep.batches++;
	return true;
cut:
	b->rep.partial = got;
	return false;
}

static bool busy_check(struct busy *b, unsigned int i)
{
	char key[32], want[48], got[64];
	int kl = keyof(key, b->p, i), wl;
	long n = tdbc_get(b->t, NULL, key, (size_t)kl, got, sizeof(got), NULL);

	if (n < 0 && n != -ENOENT && ended(b, (int)n, "get"))
		return false;
	if (!b->gen[i]) {
		CHECK(n == -ENOENT, "client %d: get of an unwritten key: %ld",
		      b->p, n);
		return true;
	}
	wl = valof(want, b->p, i, b->gen[i]);
	CHECK(n == wl && !memcmp(got, want, (size_t)wl), "client %d: get "
	      "%s: %ld bytes '%.*s', want '%s'", b->p, key, n,
	      n > 0 ? (int)n : 0, got, want);
	return true;
}

static bool busy_pair(struct busy *b)
{
	unsigned int i = (unsigned int)(h_rand(&b->rnd) % NKEYS);
	uint32_t gen = (uint32_t)(b->rep.ops + 1);
	char key[32], val[48];
	int kl = keyof(key, b->p, i), vl = valof(val, b->p, i, gen);
	int err = tdbc_put(b->t, NULL, key, (size_t)kl, val, (size_t)vl, 0);

	if (ended(b, err, "put"))
		return false;
	b->gen[i] = gen;
	return busy_check(b, i);
}

static void busy_run(const char *sock, int p, int ready_wr, int rep_wr)
{
	struct busy b = { .p = p, .rnd = 1000 + (uint64_t)p };
	unsigned int flags = p % 2 ? TDBC_NO_RINGS : 0;
	uint64_t t_end, t0;
	char msg[256];
	int err;

	err = tdbc_connect(&b.c, sock, flags, msg, sizeof(msg));
	CHECK(err == 0, "client %d: connect: %s", p, msg);
	CHECK(tdbc_table_open(b.c, "g", &b.t) == 0, "open g");
	CHECK(write(ready_wr, "r", 1) == 1, "ready pipe");
	t_end = h_now_ms() + 60000;
	for (;;) {
		unsigned int r = (unsigned int)(h_rand(&b.rnd) % 4);
		bool ok;

		CHECK(h_now_ms() < t_end, "client %d: still connected after "
		      "60 s", p);
		if (r < 2)
			ok = busy_batch(&b);
		else if (r == 2)
			ok = busy_pair(&b);
		else
			ok = busy_check(&b, (unsigned int)(h_rand(&b.rnd) %
							   NKEYS));
		if (!ok)
			break;
		b.rep.ops++;
	}
	/* dead: every call fails at once with the same error */
	t0 = h_now_ms();
	err = tdbc_put(b.t, NULL, "x", 1, "y", 1, 0);
	CHECK(err == b.rep.err, "client %d: a call after the end: %s, want "
	      "%s", p, h_errname(err), h_errname(b.rep.err));
	CHECK(h_now_ms() - t0 < 1000, "client %d: a call on a dead "
	      "connection took %llu ms", p,
	      (unsigned long long)(h_now_ms() - t0));
	CHECK(write(rep_wr, &b.rep, sizeof(b.rep)) == (ssize_t)sizeof(b.rep),
	      "report pipe");
	tdbc_close(b.c);
}

/* --- the awkward ones ------------------------------------------------------ */

static void never_reaps(const char *sock, int ready_wr)
{
	struct tdbc *c = NULL;
	struct tdbc_table *t = NULL;
	struct tdbc_req req = { .op = TDBC_OP_GET, .key = "big", .klen = 3 };
	char msg[256];
	int rc;

	/* TDBC_NO_MAP: its GETs must fill its rings (mapped, they would
	 * complete in the client, no answer for tdbd to hold) */
	CHECK(tdbc_connect(&c, sock, TDBC_NO_MAP, msg, sizeof(msg)) == 0,
	      "connect: %s", msg);
	CHECK(tdbc_table_open(c, "g", &t) == 0, "open g");
	req.table = t;
	while ((rc = tdbc_submit(c, &req, 1)) == 1)
		;
	CHECK(rc == -EAGAIN, "submit: %s", h_errname(rc));
	CHECK(write(ready_wr, "r", 1) == 1, "ready pipe");
	for (;;)
		pause();
}

static void scanner(const char *sock, int ready_wr)
{
	struct tdbc *c = NULL;
	struct tdbc_table *t = NULL;
	bool told = false;
	char msg[256];

	CHECK(tdbc_connect(&c, sock, 0, msg, sizeof(msg)) == 0, "connect: "
	      "%s", msg);
	CHECK(tdbc_table_open(c, "big", &t) == 0, "open big");
	for (;;) {
		struct tdbc_scan *s = NULL;
		const void *k, *v;
		size_t kl, vl;
		int rc = tdbc_scan_open(t, NULL, 0, 0, &s);

		if (rc == 0)
			while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1)
				if (!told) {
					CHECK(write(ready_wr, "r", 1) == 1,
					      "ready pipe");
					told = true;
				}
		if (rc < 0) {
			/* the stop: a clean error, then nothing to do */
			CHECK(clean_end(rc), "scanner: %s (%s)",
			      h_errname(rc), tdbc_errmsg(c));
			tdbc_scan_close(s);
			tdbc_close(c);
			return;
		}
		tdbc_scan_close(s);
	}
}

static void idle(const char *sock, int ready_wr)
{
	struct tdbc *c = NULL;
	char msg[256];

	CHECK(tdbc_connect(&c, sock, TDBC_NO_RINGS, msg, sizeof(msg)) == 0,
	      "connect: %s", msg);
	CHECK(write(ready_wr, "r", 1) == 1, "ready pipe");
	for (;;)
		pause();
}


/* --- requests sent before SIGTERM ---------------------------------------- */

#define EARLY 20

/* Map a raw ATTACH's rings: the submission producer, the completion
 * consumer. */
struct early_rings {
	int fds[4];             /* sub, comp, eventfd, comp eventfd */
	size_t sub_size, comp_size;
	void *sub_hdr, *sub_data, *comp_hdr, *comp_data;
	struct tdb_ring sub, comp;
};

static void *map_fd(int fd, size_t len, int prot, size_t off)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

static void early_attach(struct h_raw *r, struct early_rings *x)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_ATTACH };
	struct stat st;
	char msg[256];
	int err = h_raw_call(r, &m, NULL, NULL, NULL, msg, sizeof(msg));

	CHECK(err == 0, "ATTACH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(r, x->fds, 4) == 4, "ATTACH without fds");
	/* --hugepages no: the data starts at 4096 */
	CHECK(fstat(x->fds[0], &st) == 0, "fstat");
	x->sub_size = (size_t)st.st_size - 4096;
	CHECK(fstat(x->fds[1], &st) == 0, "fstat");
	x->comp_size = (size_t)st.st_size - 4096;
	x->sub_hdr = map_fd(x->fds[0], 4096, PROT_READ | PROT_WRITE, 0);
	x->sub_data = map_fd(x->fds[0], x->sub_size, PROT_READ | PROT_WRITE,
			     4096);
	x->comp_hdr = map_fd(x->fds[1], 4096, PROT_READ | PROT_WRITE, 0);
	x->comp_data = map_fd(x->fds[1], x->comp_size, PROT_READ, 4096);
	CHECK(tdb_ring_attach_producer(&x->sub, x->sub_hdr, x->sub_data,
				       x->sub_size, TDB_RING_SUBMIT) == 0 &&
	      tdb_ring_attach_consumer(&x->comp, x->comp_hdr, x->comp_data,
				       x->comp_size, TDB_RING_COMPLETE) == 0,
	      "attach the rings");
	tdb_ring_set_eventfd(&x->sub, x->fds[2]);
}

static void early_free(struct early_rings *x)
{
	int i;

	tdb_ring_detach(&x->sub);
	tdb_ring_detach(&x->comp);
	munmap(x->sub_hdr, 4096);
	munmap(x->sub_data, x->sub_size);
	munmap(x->comp_hdr, 4096);
	munmap(x->comp_data, x->comp_size);
	for (i = 0; i < 4; i++)
		close(x->fds[i]);
}

static struct tdb_proto_msg early_get(uint32_t seq)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_GET, .seq = seq,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = "g", .key = "early", .key_len = 5 };

	return m;
}

static int count_answer(void *arg, const struct nlmsghdr *nlh)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg a;
	unsigned char copy[256];

	CHECK(nlh->nlmsg_len <= sizeof(copy), "a long answer");
	memcpy(copy, nlh, nlh->nlmsg_len);
	CHECK(tdb_proto_parse(copy, nlh->nlmsg_len, TDB_PROTO_ANSWER, &a,
			      &ext) == 0 && a.type == TDB_PROTO_FAMILY &&
	      a.value_len == 2 && !memcmp(a.value, "ok", 2),
	      "a wrong answer on the ring (type %u, error %d)", a.type,
	      a.error);
	(*(unsigned int *)arg)++;
	return 0;
}

/*
 * tdbd stopped (SIGSTOP) while a busy client keeps its worker going;
 * a socket client and a ring client each send EARLY GETs; SIGTERM, then
 * SIGCONT: both must get all EARLY answers before their connection
 * ends.  Returns how many of the 2 * EARLY were answered.
 */
static unsigned int early_trial(int trial)
{
	static const char *const args[] = { "--hugepages", "no",
		"--client-deadline", "60s", NULL };
	struct h_daemon d;
	struct early_rings x;
	struct h_raw rs, rr;
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	unsigned int sock_got = 0, ring_got = 0, i;
	pid_t busy;
	int reps[2], ready[2], st;
	char tag[32], b;
	void *buf = malloc(TDB_PROTO_MSG_MAX);

	CHECK(buf, "out of memory");
	snprintf(tag, sizeof(tag), "early%d", trial);
	h_start(&d, tag, args);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_create(c, "g", NULL) == 0, "create g");
	CHECK(tdbc_table_open(c, "g", &t) == 0, "open g");
	CHECK(tdbc_put(t, NULL, "early", 5, "ok", 2, 0) == 0, "put");
	tdbc_close(c);
	CHECK(pipe(ready) == 0 && pipe(reps) == 0, "pipe");
	fflush(NULL);
	busy = fork();
	CHECK(busy >= 0, "fork");
	if (busy == 0) {
		close(ready[0]);
		close(reps[0]);
		busy_run(d.sock, 0, ready[1], reps[1]);
		_exit(0);
	}
	h_track(busy);
	close(ready[1]);
	close(reps[1]);
	CHECK(read(ready[0], &b, 1) == 1, "the busy client did not start");
	close(ready[0]);
	h_raw_connect(&rs, d.sock);
	h_raw_connect(&rr, d.sock);
	early_attach(&rr, &x);
	h_sleep_ms(20 + (unsigned int)trial * 7);

	CHECK(kill(d.pid, SIGSTOP) == 0, "SIGSTOP");
	for (i = 0; i < EARLY; i++) {
		struct tdb_proto_msg m = early_get(i + 1);
		long size = tdb_proto_size(TDB_PROTO_REQUEST, &m, NULL);
		void *p;

		h_raw_send_msg(&rs, &m);
		m = early_get(1000 + i);
		p = tdb_ring_reserve(&x.sub, (size_t)size);
		CHECK(p && tdb_proto_build(p, (size_t)size, TDB_PROTO_REQUEST,
					   &m, NULL) == size &&
		      tdb_ring_commit(&x.sub, (size_t)size) == 0, "queue");
	}
	CHECK(tdb_ring_publish(&x.sub) >= 0, "publish");
	{
		uint64_t one = 1;

		CHECK(write(x.fds[2], &one, sizeof(one)) == sizeof(one),
		      "eventfd");
	}
	CHECK(kill(d.pid, SIGTERM) == 0, "SIGTERM");
	CHECK(kill(d.pid, SIGCONT) == 0, "SIGCONT");

	/* the socket client: answers, then the end */
	for (;;) {
		long n = h_raw_recv(&rs, buf, TDB_PROTO_MSG_MAX, 10000);
		struct tdb_proto_extack ext;
		struct tdb_proto_msg a;

		CHECK(n != -ETIMEDOUT, "socket client: nothing for 10 s");
		if (n <= 0)
			break;
		CHECK(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a,
				      &ext) == 0 &&
		      a.type == TDB_PROTO_FAMILY && a.value_len == 2 &&
		      !memcmp(a.value, "ok", 2),
		      "socket client: a wrong answer");
		sock_got++;
	}
	/* the ring client: the end on the socket, then what the ring has */
	CHECK(h_raw_wait_closed(&rr, 10000), "ring client: not closed");
	CHECK(tdb_ring_consume(&x.comp, 1000, count_answer, &ring_got) >= 0,
	      "consume");
	CHECK(h_wait_exit(&d, 10000), "tdbd did not exit");
	CHECK(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0, "tdbd: "
	      "status %#x", d.status);
	h_check_log(&d);
	CHECK(waitpid(busy, &st, 0) == busy && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "the busy client failed");
	h_untrack(busy);
	close(reps[0]);
	early_free(&x);
	h_raw_close(&rr);
	h_raw_close(&rs);
	free(buf);
	if (sock_got != EARLY || ring_got != EARLY)
		h_note("trial %d: %u of %u socket requests and %u of %u ring "
		       "requests sent before SIGTERM were answered", trial,
		       sock_got, EARLY, ring_got, EARLY);
	return sock_got + ring_got;
}

/* --- the parent ---------------------------------------------------------- */

static pid_t fork_ready(void (*fn)(const char *, int), const char *sock)
{
	int ready[2];
	pid_t pid;
	char b;

	CHECK(pipe(ready) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(ready[0]);
		fn(sock, ready[1]);
		_exit(0);
	}
	h_track(pid);
	close(ready[1]);
	CHECK(read(ready[0], &b, 1) == 1, "a helper did not get ready");
	close(ready[0]);
	return pid;
}

static bool in_dump(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return st->dumps > base->dumps && st->throttled > base->throttled;
}

static void fill(struct tdbc *c)
{
	struct tdbc_table *t = NULL;
	unsigned char *val = malloc(32u << 10);
	char key[16];
	int i, kl;

	CHECK(val, "out of memory");
	memset(val, 'b', 32u << 10);
	CHECK(tdbc_table_create(c, "g", NULL) == 0, "create g");
	CHECK(tdbc_table_create(c, "big", NULL) == 0, "create big");
	CHECK(tdbc_table_open(c, "g", &t) == 0, "open g");
	CHECK(tdbc_put(t, NULL, "big", 3, val, 32u << 10, 0) == 0, "put");
	tdbc_table_close(t);
	CHECK(tdbc_table_open(c, "big", &t) == 0, "open big");
	for (i = 0; i < 600; i++) {
		kl = snprintf(key, sizeof(key), "b%d", i);
		CHECK(tdbc_put(t, NULL, key, (size_t)kl, val, 32u << 10, 0) ==
		      0, "put big");
	}
	tdbc_table_close(t);
	free(val);
}

int main(void)
{
	static const char *const args[] = { "--workers", "2",
		"--client-deadline", "60s", NULL };
	struct h_daemon d;
	struct tdbc_stats base, st;
	struct tdbc *c;
	pid_t busy[NBUSY], stuck, scan, quiet;
	int ready[2], reps[2], p, status;
	unsigned int ms, limit = h_sanitized() ? 8000 : 3500;
	uint64_t t_stop, total = 0;
	char b, sock[sizeof(d.sock)];
	int err;

	h_init("tdbd-graceful-stop", 300);
	h_start(&d, "tdbd", args);
	memcpy(sock, d.sock, sizeof(sock));
	c = h_connect(&d, 0);
	fill(c);
	h_stats(c, &base);

	stuck = fork_ready(never_reaps, sock);
	quiet = fork_ready(idle, sock);
	scan = fork_ready(scanner, sock);
	/* stop the scanner with its dump in progress */
	for (p = 0; p < 100; p++) {
		CHECK(kill(scan, SIGSTOP) == 0, "SIGSTOP");
		if (h_wait_stats(c, &st, in_dump, &base, 150))
			break;
		CHECK(kill(scan, SIGCONT) == 0, "SIGCONT");
		h_sleep_ms((unsigned int)(p % 5) * 3);
	}
	CHECK(p < 100, "never caught the scanner in a dump");
	tdbc_close(c);

	CHECK(pipe(ready) == 0 && pipe(reps) == 0, "pipe");
	for (p = 0; p < NBUSY; p++) {
		fflush(NULL);
		busy[p] = fork();
		CHECK(busy[p] >= 0, "fork");
		if (busy[p] == 0) {
			close(ready[0]);
			close(reps[0]);
			busy_run(sock, p, ready[1], reps[1]);
			_exit(0);
		}
		h_track(busy[p]);
	}
	close(ready[1]);
	close(reps[1]);
	for (p = 0; p < NBUSY; p++)
		CHECK(read(ready[0], &b, 1) == 1, "a client did not start");
	close(ready[0]);
	h_sleep_ms(500);        /* requests in flight, all the time */

	t_stop = h_now_ms();
	ms = h_stop(&d);
	h_note("tdbd exited 0 %u ms after SIGTERM", ms);
	CHECK(ms < limit, "tdbd took %u ms to stop (limit %u)", ms, limit);

	for (p = 0; p < NBUSY; p++) {
		struct busy_report r;

		CHECK(waitpid(busy[p], &status, 0) == busy[p], "waitpid");
		h_untrack(busy[p]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "client %d failed (status %#x)", p, status);
		CHECK(read(reps[0], &r, sizeof(r)) == (ssize_t)sizeof(r),
		      "a client's report");
		CHECK(r.ops > 0, "a client did nothing before the stop");
		total += r.ops;
	}
	close(reps[0]);
	CHECK(h_now_ms() - t_stop < 5000 + ms, "the clients took %llu ms to "
	      "see the end", (unsigned long long)(h_now_ms() - t_stop));
	h_note("%d busy clients: %llu operations, each ended with a clean "
	       "connection error", NBUSY, (unsigned long long)total);

	/* the scanner wakes up to a clean error */
	CHECK(kill(scan, SIGCONT) == 0, "SIGCONT");
	CHECK(waitpid(scan, &status, 0) == scan && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the scanner: status %#x", status);
	h_untrack(scan);
	kill(stuck, SIGKILL);
	kill(quiet, SIGKILL);
	waitpid(stuck, NULL, 0);
	waitpid(quiet, NULL, 0);
	h_untrack(stuck);
	h_untrack(quiet);

	{
		struct stat sst;
		struct tdbc *gone = NULL;
		char msg[256];

		CHECK(stat(sock, &sst) < 0 && errno == ENOENT, "the socket "
		      "file is still there after the stop");
		err = tdbc_connect(&gone, sock, 0, msg, sizeof(msg));
		CHECK(err == -ENOENT || err == -ECONNREFUSED, "connect after "
		      "the stop: %s", h_errname(err));
	}

	/* Requests already sent when SIGTERM came are answered.
	 * A tdbd bug this found (fixed in 91badb4; name kept for
	 * h_known_bug: stop-skips-socket): the drain ran rounds
	 * over the rings until one finds no work, but reads the sockets
	 * only between rounds; when the first round found nothing,
	 * requests waiting in a socket were never read and their client
	 * just saw the connection close (one trial in eight). */
	{
		unsigned int trials = (unsigned int)h_scaled(8, 4), i, lost = 0;

		for (i = 0; i < trials; i++)
			lost += 2 * EARLY - early_trial((int)i);
		CHECK(lost == 0 || h_known_bug("stop-skips-socket"),
		      "%u requests sent before "
		      "SIGTERM were not answered", lost);
		if (lost)
			h_note("KNOWN BUG: %u requests sent before SIGTERM "
			       "were not answered (%u trials)", lost, trials);
		else
			h_note("%u trials: every request sent before SIGTERM "
			       "was answered", trials);
	}
	h_done();
	return 0;
}
