// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_counters.c - contended counters against a real tdbd (issue 24):
 * the read-modify-write that lost half its updates before versions.
 *
 * NPROC processes (even ones on rings, odd ones on the socket) x M
 * increments, on one key and then on 4 keys, through tdbc_incr,
 * tdbc_txn_run (get + put), a CAS loop (tdbc_get_ver + tdbc_put_if
 * TDBC_IF_VERSION) and a plain transaction without retry (begin, get,
 * put, commit: 0 or -ESTALE naming the table and key), and txn_run
 * with 70 more puts into another table (a commit of two tables that
 * tdbd runs on its committer thread; M/8 of them).  Each key's
 * final value is exactly the increments that took (NPROC x M for all
 * but the plain one), the values written are 1..that each once
 * (cond_counters.h), and on one key txn_run, CAS and the plain
 * transaction saw conflicts (else the test proved nothing).  On one
 * key the table's change feed, watched meanwhile, has the values 0, 1,
 * 2 ... in order (apply order is a serial order) with versions strictly
 * increasing, the last the key's version.  First a
 * deterministic lost update: a transaction reads, another client
 * increments, the transaction's commit is -ESTALE and applies nothing;
 * and a read-only transaction whose read changed is -ESTALE too.  Then
 * write skew: two processes each read a pair of keys in two tables and
 * zero their own one if both are 1, in step over 1000 pairs: every
 * pair must end with exactly one zeroed.
 *
 * Usage: itest_counters [NPROC [M]] (default 8 x 600, scaled by
 * TDB_ITEST_SCALE; by hand e.g. 8 2000 for the numbers).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "cond_counters.h"

static struct h_daemon d;

static struct tdbc *connect_d(unsigned int flags)
{
	return h_connect(&d, flags);
}

/* A transaction reads k; another client writes k; the commit must be
 * -ESTALE naming table and key and change nothing. */
static void lost_update(struct tdbc *a, struct tdbc *b)
{
	struct tdbc_table *ta, *tb;
	struct tdbc_txn *x;
	char buf[32];
	int64_t res;
	long n;
	int err;

	CHECK(tdbc_table_open(a, "cnt", &ta) == 0, "open");
	CHECK(tdbc_table_open(b, "cnt", &tb) == 0, "open");
	CHECK(tdbc_put(ta, NULL, "lu", 2, "10", 2, 0) == 0, "put");

	/* read-write */
	CHECK(tdbc_txn_begin(a, &x) == 0, "begin");
	n = tdbc_get(ta, x, "lu", 2, buf, sizeof(buf), NULL);
	CHECK(n == 2 && !memcmp(buf, "10", 2), "get in txn: %ld", n);
	err = tdbc_incr(tb, NULL, "lu", 2, 1, &res);
	CHECK(err == 0 && res == 11, "incr: %s, %lld", h_errname(err),
	      (long long)res);
	CHECK(tdbc_put(ta, x, "lu", 2, "11", 2, 0) == 0, "put in txn");
	err = tdbc_txn_commit(x);
	CHECK(err == -ESTALE, "commit after another client wrote a key the "
	      "transaction read: %s (%s), want ESTALE", h_errname(err),
	      tdbc_errmsg(a));
	CHECK(strstr(tdbc_errmsg(a), "cnt") && strstr(tdbc_errmsg(a), "lu"),
	      "ESTALE's message \"%s\" names neither table cnt nor key lu",
	      tdbc_errmsg(a));
	h_note("lost update refused: %s", tdbc_errmsg(a));
	err = tdbc_incr(ta, NULL, "lu", 2, 0, &res);
	CHECK(err == 0 && res == 11, "after the refused commit: %s, %lld, "
	      "want 11", h_errname(err), (long long)res);

	/* read-only: its commit says whether its reads were one state */
	CHECK(tdbc_txn_begin(a, &x) == 0, "begin");
	n = tdbc_get(ta, x, "lu", 2, buf, sizeof(buf), NULL);
	CHECK(n == 2, "get in txn: %ld", n);
	n = tdbc_get(ta, x, "absent", 6, buf, sizeof(buf), NULL);
	CHECK(n == -ENOENT, "get of an absent key in txn: %ld", n);
	CHECK(tdbc_txn_commit(x) == 0, "read-only commit, nothing changed: "
	      "%s", tdbc_errmsg(a));
	CHECK(tdbc_txn_begin(a, &x) == 0, "begin");
	n = tdbc_get(ta, x, "absent", 6, buf, sizeof(buf), NULL);
	CHECK(n == -ENOENT, "get of an absent key in txn: %ld", n);
	CHECK(tdbc_put(tb, NULL, "absent", 6, "1", 1, 0) == 0, "put");
	err = tdbc_txn_commit(x);
	CHECK(err == -ESTALE, "read-only commit after a key read absent was "
	      "made: %s, want ESTALE", h_errname(err));
	CHECK(tdbc_del(tb, NULL, "absent", 6) == 0, "del");
	tdbc_table_close(ta);
	tdbc_table_close(tb);
	printf("counters: a lost update and a read-only transaction over a "
	       "changed read both refused with ESTALE\n");
}

/*
 * The key's change feed after a run on one key: its first put ("0"),
 * then one event per increment that took, values 1, 2, 3 ... in order
 * (the owner's apply order is a serial order of the increments), with
 * versions strictly increasing, the last one the key's version now.
 */
static void check_feed(struct tdbc_watch *w, struct tdbc_table *t,
		       const char *key, uint64_t took, const char *what)
{
	struct tdbc_event ev;
	uint64_t lost = 0, n = 0, last = 0, ver = 0;
	char buf[32];
	long got;
	int err;

	for (;;) {
		int64_t v;

		err = tdbc_watch_next(w, &ev, n <= took ? 2000 : 0, &lost);
		if (err == 0)
			break;
		CHECK(err == 1, "%s: watch: %s (lost %llu)", what,
		      h_errname(err), (unsigned long long)lost);
		CHECK(ev.kind == TDBC_EV_PUT && ev.klen == strlen(key) &&
		      !memcmp(ev.key, key, ev.klen), "%s: event %llu: kind %d "
		      "key %.*s", what, (unsigned long long)n, ev.kind,
		      (int)ev.klen, (const char *)ev.key);
		v = cc_parse(ev.val, (long)ev.vlen, "feed");
		CHECK(v >= 0 && (uint64_t)v == n, "%s: event %llu of %s has "
		      "value %lld: the feed's order is not a serial order of "
		      "the increments", what, (unsigned long long)n, key,
		      (long long)v);
		CHECK(ev.version > last, "%s: event %llu: version %llu after "
		      "%llu", what, (unsigned long long)n,
		      (unsigned long long)ev.version,
		      (unsigned long long)last);
		last = ev.version;
		n++;
	}
	CHECK(n == took + 1, "%s: %llu events for %s, want %llu", what,
	      (unsigned long long)n, key, (unsigned long long)took + 1);
	got = tdbc_get_ver(t, NULL, key, strlen(key), buf, sizeof(buf), NULL,
			   &ver);
	CHECK(got > 0 && ver == last, "%s: %s at version %llu, its last "
	      "event had %llu", what, key, (unsigned long long)ver,
	      (unsigned long long)last);
}

/* --- write skew ------------------------------------------------------------
 * Pairs (skew_a/s<i>, skew_b/s<i>) start at 1 and 1.  Two processes go
 * through the pairs in step (each waits for the other to reach pair i):
 * side 0 reads both and, if they sum to 2, sets its a to 0; side 1 the
 * same with its b.  Each side writes only its own table, so only the
 * validation of the key it read in the other table stops both from
 * writing (snapshot isolation's write skew): every pair must end at
 * sum 1.  On a pair's first attempt each side, after its reads, waits
 * until the other side has read too (rd[]), so both read (1, 1) and both
 * try to write: every pair has exactly one refused commit, whatever the
 * scheduler does (without the wait one side often finished first and the
 * test proved nothing).
 */
struct skew {
	struct tdbc_table *t[2];
	int side;
	char key[16];
	size_t klen;
	bool wrote;
	uint64_t calls;
	long pair;		/* index of key, for the rendezvous */
	bool first;		/* this pair's first attempt */
	volatile long *rd;	/* shared: rd[side] = last pair read */
};

/* Both sides have read pair sk->pair (first attempt only); 0 or -ETIMEDOUT. */
static int skew_meet(struct skew *sk)
{
	struct timespec t0, t;

	if (!sk->first)
		return 0;
	sk->first = false;
	sk->rd[sk->side] = sk->pair;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (sk->rd[1 - sk->side] < sk->pair) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 30)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

static int skew_fn(struct tdbc_txn *x, void *arg)
{
	struct skew *sk = arg;
	char a[8], b[8];
	long na, nb;

	sk->calls++;
	sk->wrote = false;
	na = tdbc_get(sk->t[0], x, sk->key, sk->klen, a, sizeof(a), NULL);
	nb = tdbc_get(sk->t[1], x, sk->key, sk->klen, b, sizeof(b), NULL);
	if (na < 0 || nb < 0)
		return na < 0 ? (int)na : (int)nb;
	if (skew_meet(sk) < 0)
		return -ETIMEDOUT;
	if (cc_parse(a, na, "skew") + cc_parse(b, nb, "skew") < 2)
		return 0;
	sk->wrote = true;
	return tdbc_put(sk->t[sk->side], x, sk->key, sk->klen, "0", 1, 0);
}

static void write_skew(long pairs)
{
	static const char *const tn[2] = { "skew_a", "skew_b" };
	volatile long *at;
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table *t[2];
	uint64_t calls = 0, wrote = 0;
	pid_t pid[2];
	int fds[2][2], side, st;
	long i;

	at = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(at != MAP_FAILED, "mmap");
	at[0] = at[1] = -1;
	at[2] = at[3] = -1;	/* rd[] of struct skew */
	for (side = 0; side < 2; side++) {
		CHECK(tdbc_table_create(c, tn[side], NULL) == 0, "create");
		CHECK(tdbc_table_open(c, tn[side], &t[side]) == 0, "open");
		for (i = 0; i < pairs; i++) {
			char k[16];
			int kl = snprintf(k, sizeof(k), "s%ld", i);

			CHECK(tdbc_put(t[side], NULL, k, (size_t)kl, "1", 1,
				       0) == 0, "put");
		}
	}
	for (side = 0; side < 2; side++) {
		CHECK(pipe(fds[side]) == 0, "pipe");
		pid[side] = fork();
		CHECK(pid[side] >= 0, "fork");
		if (pid[side] == 0) {
			struct tdbc *cc = h_connect(&d, side ? TDBC_NO_RINGS :
						    0);
			struct skew sk = { .side = side, .rd = at + 2 };
			uint64_t rep[2] = { 0, 0 };
			int k, err;

			for (k = 0; k < 2; k++)
				CHECK(tdbc_table_open(cc, tn[k], &sk.t[k]) == 0,
				      "open");
			for (i = 0; i < pairs; i++) {
				at[side] = i;
				while (at[1 - side] < i)
					sched_yield();
				sk.klen = (size_t)snprintf(sk.key,
					sizeof(sk.key), "s%ld", i);
				sk.pair = i;
				sk.first = true;
				err = tdbc_txn_run(cc, skew_fn, &sk, 0);
				CHECK(err == 0, "skew %ld: %s (%s)", i,
				      h_errname(err), tdbc_errmsg(cc));
				rep[1] += sk.wrote;
			}
			at[side] = pairs;
			rep[0] = sk.calls;
			CHECK(write(fds[side][1], rep, sizeof(rep)) ==
			      (ssize_t)sizeof(rep), "report");
			tdbc_close(cc);
			_exit(0);
		}
		h_track(pid[side]);
		close(fds[side][1]);
	}
	for (side = 0; side < 2; side++) {
		uint64_t rep[2];

		CHECK(read(fds[side][0], rep, sizeof(rep)) ==
		      (ssize_t)sizeof(rep), "side %d gave no report", side);
		CHECK(waitpid(pid[side], &st, 0) == pid[side] &&
		      WIFEXITED(st) && WEXITSTATUS(st) == 0, "side %d failed",
		      side);
		h_untrack(pid[side]);
		close(fds[side][0]);
		calls += rep[0];
		wrote += rep[1];
	}
	for (i = 0; i < pairs; i++) {
		char k[16], v[2][8];
		int kl = snprintf(k, sizeof(k), "s%ld", i);
		long n[2];

		for (side = 0; side < 2; side++)
			n[side] = tdbc_get(t[side], NULL, k, (size_t)kl,
					   v[side], sizeof(v[side]), NULL);
		CHECK(n[0] == 1 && n[1] == 1 && v[0][0] + v[1][0] == '0' + '1',
		      "pair %ld is %.*s + %.*s: both sides wrote (write skew: "
		      "a read of the other table not validated)", i,
		      (int)(n[0] > 0 ? n[0] : 0), v[0],
		      (int)(n[1] > 0 ? n[1] : 0), v[1]);
	}
	CHECK(wrote == (uint64_t)pairs, "%llu writes committed for %ld "
	      "pairs", (unsigned long long)wrote, pairs);
	/* Both sides wrote-attempted every pair: one commit each refused,
	 * retried, then read-only. */
	CHECK(calls >= (uint64_t)(3 * pairs), "%llu transaction calls for %ld "
	      "pairs that both sides read before either wrote: a commit that "
	      "should have been refused was not",
	      (unsigned long long)calls, pairs);
	for (side = 0; side < 2; side++)
		tdbc_table_close(t[side]);
	tdbc_close(c);
	munmap((void *)at, 4096);
	printf("counters: write skew: %ld pairs, each ends at 1 (one side "
	       "wrote), %llu conflicts caught\n", pairs,
	       (unsigned long long)(calls - 2 * (uint64_t)pairs));
}

int main(int argc, char **argv)
{
	static const char *const args[] = { "--sync", "none", NULL };
	long nproc = h_scaled(8, 2), m;
	struct tdbc *ctl, *b;
	int mode;

	h_init("counters", h_sanitized() ? 600 : 150);
	m = h_scaled(600, 100);
	if (argc > 1)
		nproc = atol(argv[1]);
	if (argc > 2)
		m = atol(argv[2]);
	CHECK(nproc >= 1 && nproc <= 256 && m >= 1, "usage: %s [NPROC [M]]",
	      argv[0]);
	h_start(&d, "cnt", args);
	ctl = h_connect(&d, 0);
	b = h_connect(&d, TDBC_NO_RINGS);
	CHECK(tdbc_table_create(ctl, "cnt", NULL) == 0, "create: %s",
	      tdbc_errmsg(ctl));
	CHECK(tdbc_table_create(ctl, "cnt_pad", NULL) == 0, "create: %s",
	      tdbc_errmsg(ctl));

	if (h_want("lost"))
		lost_update(ctl, b);
	if (h_want("skew"))
		write_skew(h_scaled(1000, 100));

	for (mode = CC_INCR; mode <= CC_BIG; mode++) {
		int keys;

		if (!h_want(cc_mode_name[mode]))
			continue;
		for (keys = 1; keys <= 4; keys += 3) {
			struct cc_run r = {
				.connect = connect_d, .table = "cnt",
				.pad_table = "cnt_pad",
				.mode = (enum cc_mode)mode,
				.nproc = (int)nproc,
				/* big: 72 changes a transaction */
				.per_proc = mode == CC_BIG ?
					    (m / 8 > 20 ? m / 8 : 20) : m,
				.nkeys = keys,
				.prefix = keys == 1 ? "one" : "four",
			};
			char pre[16];

			struct tdbc_watch *w = NULL;
			struct tdbc_table *t = NULL;
			char key[24];

			snprintf(pre, sizeof(pre), "%s%d-", keys == 1 ?
				 "one" : "four", mode);
			r.prefix = pre;
			if (keys == 1) {
				CHECK(tdbc_table_open(ctl, "cnt", &t) == 0,
				      "open");
				snprintf(key, sizeof(key), "%s0", pre);
				CHECK(tdbc_watch(t, key, strlen(key), &w) == 0,
				      "watch: %s", tdbc_errmsg(ctl));
			}
			cc_run(&r, ctl);
			cc_print("counters", &r);
			if (w) {
				check_feed(w, t, key, r.sum.done[0],
					   cc_mode_name[mode]);
				tdbc_watch_close(w);
				tdbc_table_close(t);
			}
			/* on one key, with others at it, the conflicts
			 * must have happened and been caught */
			if (keys == 1 && nproc > 1 && mode != CC_INCR)
				CHECK(r.sum.retries > 0, "%s: %ld processes "
				      "on one key saw no conflict: the test "
				      "proves nothing", cc_mode_name[mode],
				      nproc);
			if (mode == CC_PLAIN && nproc > 1 && keys == 1)
				h_note("plain: %llu of %ld commits refused "
				       "ESTALE (each reported, none lost)",
				       (unsigned long long)r.sum.retries,
				       nproc * m);
		}
	}
	tdbc_close(b);
	tdbc_close(ctl);
	h_stop(&d);
	h_done();
	return 0;
}
