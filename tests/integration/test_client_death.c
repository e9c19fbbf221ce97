// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_death.c - clients SIGKILLed in awkward places; tdbd must
 * clean up after each and nobody else may notice.
 *
 * Two "pingers" (one over rings, one with TDBC_NO_RINGS) put and get
 * their own keys for the whole test, timing every call; at the end each
 * must have seen no error and no call slower than the stall limit
 * (1 s; 2 s under the sanitizers).  Meanwhile, one at a time, a child is
 * SIGKILLed:
 *
 *  txn       in the middle of a transaction of 100 puts (rings, then
 *            socket only): none of its keys ever becomes visible, and
 *            txns_aborted counts it;
 *  scan      in the middle of a scan of a big table (rings, then socket):
 *            the child is stopped (SIGSTOP) until STATS shows its dump in
 *            progress and it throttled, then killed;
 *  full      with a full completion ring: it submitted GETs of 32 KiB
 *            values until its submission ring was full and never reaped;
 *            STATS shows it throttled before the kill;
 *  watch     while watching the table (two prefixes) that the parent
 *            keeps writing: watches_dropped counts both;
 *  all       holding a transaction, a watch and a dump at once.
 *
 * After each kill the gauges (clients, rings, watches, txns, dumps,
 * throttled) must return to the baseline taken before the child
 * connected, cleanups and accepted must have gone up by one, rings_freed
 * by two for a ring client, and no violation or stuck client counted.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define BIG_RECORDS 1024
#define BIG_VALUE   (32u << 10)
#define TXN_KEYS    100

/* --- victims -------------------------------------------------------------- */

struct victim {
	const char *sock;
	unsigned int flags;
	int ready_wr;
};

static struct tdbc *v_connect(const struct victim *v)
{
	struct tdbc *c = NULL;
	char msg[256];
	int err = tdbc_connect(&c, v->sock, v->flags, msg, sizeof(msg));

	CHECK(err == 0, "victim connect: %s (%s)", h_errname(err), msg);
	return c;
}

static void v_ready(const struct victim *v)
{
	CHECK(write(v->ready_wr, "r", 1) == 1, "ready pipe");
}

static void __attribute__((noreturn)) v_wait(void)
{
	for (;;)
		pause();
}

static void v_open_txn(struct tdbc *c)
{
	struct tdbc_table *t = NULL;
	struct tdbc_txn *x = NULL;
	char key[16], got[16];
	int i, kl, err;

	CHECK(tdbc_table_open(c, "txn", &t) == 0, "open txn");
	err = tdbc_txn_begin(c, &x);
	CHECK(err == 0, "txn_begin: %s", h_errname(err));
	for (i = 0; i < TXN_KEYS; i++) {
		kl = snprintf(key, sizeof(key), "t%d", i);
		err = tdbc_put(t, x, key, (size_t)kl, "doomed", 6, 0);
		CHECK(err == 0, "put in txn: %s", h_errname(err));
	}
	CHECK(tdbc_get(t, x, "t0", 2, got, sizeof(got), NULL) == 6,
	      "get inside the transaction");
}

static void v_txn(const struct victim *v)
{
	v_open_txn(v_connect(v));
	v_ready(v);
	v_wait();
}

/* Scan the big table over and over (until killed). */
static void __attribute__((noreturn)) v_scan_forever(struct tdbc *c,
						     const struct victim *v)
{
	struct tdbc_table *t = NULL;
	bool told = false;

	CHECK(tdbc_table_open(c, "big", &t) == 0, "open big");
	for (;;) {
		struct tdbc_scan *s = NULL;
		const void *k, *val;
		size_t kl, vl;
		int rc, n = 0;

		rc = tdbc_scan_open(t, NULL, 0, 0, &s);
		CHECK(rc == 0, "scan_open: %s", h_errname(rc));
		while ((rc = tdbc_scan_next(s, &k, &kl, &val, &vl)) == 1) {
			CHECK(vl == BIG_VALUE, "a %zu-byte value", vl);
			if (!told) {
				v_ready(v);
				told = true;
			}
			n++;
		}
		CHECK(rc == 0 && n == BIG_RECORDS, "scan: %s, %d records",
		      h_errname(rc), n);
		tdbc_scan_close(s);
	}
}

static void v_scan(const struct victim *v)
{
	v_scan_forever(v_connect(v), v);
}

/* Submit GETs of a big value and never reap, until the ring is full. */
static void v_full(const struct victim *v)
{
	struct tdbc *c = v_connect(v);
	struct tdbc_table *t = NULL;
	struct tdbc_req req = { .op = TDBC_OP_GET, .key = "b0", .klen = 2 };
	long n = 0;
	int rc;

	CHECK(tdbc_table_open(c, "big", &t) == 0, "open big");
	req.table = t;
	for (;;) {
		rc = tdbc_submit(c, &req, 1);
		if (rc == -EAGAIN)
			break;
		CHECK(rc == 1, "submit: %s (%s)", h_errname(rc),
		      tdbc_errmsg(c));
		n++;
	}
	CHECK(n > BIG_RECORDS, "the submission ring was full after %ld "
	      "requests", n);
	v_ready(v);
	v_wait();
}

static void v_open_watches(struct tdbc *c)
{
	struct tdbc_table *t = NULL;
	struct tdbc_watch *w1 = NULL, *w2 = NULL;
	int err;

	CHECK(tdbc_table_open(c, "watched", &t) == 0, "open watched");
	err = tdbc_watch(t, "a", 1, &w1);
	CHECK(err == 0, "watch: %s (%s)", h_errname(err), tdbc_errmsg(c));
	err = tdbc_watch(t, "b", 1, &w2);
	CHECK(err == 0, "watch: %s (%s)", h_errname(err), tdbc_errmsg(c));
}

static void v_watch(const struct victim *v)
{
	v_open_watches(v_connect(v));
	v_ready(v);
	v_wait();
}

static void v_all(const struct victim *v)
{
	struct tdbc *c = v_connect(v);

	v_open_txn(c);
	v_open_watches(c);
	v_scan_forever(c, v);
}

/* --- the parent ---------------------------------------------------------- */

typedef void victim_fn(const struct victim *v);

static pid_t victim_start(victim_fn *fn, const char *sock,
			  unsigned int flags)
{
	int ready[2];
	struct pollfd pfd;
	pid_t pid;
	char b;

	CHECK(pipe(ready) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct victim v = { sock, flags, ready[1] };

		close(ready[0]);
		fn(&v);
		_exit(0);
	}
	h_track(pid);
	close(ready[1]);
	pfd.fd = ready[0];
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 30000) == 1 && read(ready[0], &b, 1) == 1,
	      "the victim did not get ready");
	close(ready[0]);
	return pid;
}

static void kill_victim(pid_t pid)
{
	int st;

	CHECK(kill(pid, SIGKILL) == 0, "kill: %s", strerror(errno));
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
	      WTERMSIG(st) == SIGKILL, "the victim was not killed (status "
	      "%#x)", st);
	h_untrack(pid);
}

static bool back_to(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return h_gauges_equal(st, base) && st->cleanups > base->cleanups;
}

static bool throttled_dump(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return st->dumps == base->dumps + 1 &&
	       st->throttled == base->throttled + 1;
}

static bool throttled_one(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return st->throttled == base->throttled + 1 &&
	       st->rings == base->rings + 2;
}

/* Stop the victim until STATS shows its dump waiting for it. */
static void catch_in_dump(struct tdbc *c, pid_t pid,
			  const struct tdbc_stats *base)
{
	struct tdbc_stats st;
	int i;

	for (i = 0; i < 100; i++) {
		CHECK(kill(pid, SIGSTOP) == 0, "SIGSTOP");
		if (h_wait_stats(c, &st, throttled_dump, base, 150)) {
			if (getenv("TDB_ITEST_VERBOSE"))
				h_note("caught in a dump after %d tries", i);
			return;
		}
		CHECK(kill(pid, SIGCONT) == 0, "SIGCONT");
		h_sleep_ms((unsigned int)(i % 7) * 3);
	}
	h_print_stats("last", &st);
	h_fail(__FILE__, __LINE__, "dump", "never caught the victim with a "
	       "dump in progress");
}

static void after_death(struct tdbc *c, const struct tdbc_stats *base,
			bool rings, struct tdbc_stats *st, const char *what)
{
	if (!h_wait_stats(c, st, back_to, base, 5000)) {
		h_print_stats("baseline", base);
		h_print_stats("now", st);
		h_fail(__FILE__, __LINE__, "back to baseline", "%s: gauges "
		       "did not return to the baseline within 5 s", what);
	}
	CHECK(st->cleanups == base->cleanups + 1 &&
	      st->accepted == base->accepted + 1, "%s: cleanups %llu -> "
	      "%llu, accepted %llu -> %llu (want +1 each)", what,
	      (unsigned long long)base->cleanups,
	      (unsigned long long)st->cleanups,
	      (unsigned long long)base->accepted,
	      (unsigned long long)st->accepted);
	CHECK(st->rings_freed == base->rings_freed + (rings ? 2 : 0),
	      "%s: rings_freed %llu -> %llu", what,
	      (unsigned long long)base->rings_freed,
	      (unsigned long long)st->rings_freed);
	CHECK(st->violations == base->violations && st->stuck == base->stuck,
	      "%s: violations %llu -> %llu, stuck %llu -> %llu", what,
	      (unsigned long long)base->violations,
	      (unsigned long long)st->violations,
	      (unsigned long long)base->stuck,
	      (unsigned long long)st->stuck);
}

static void fill_big(struct tdbc *c)
{
	struct tdbc_table *t = NULL;
	struct tdbc_req reqs[32];
	struct tdbc_cqe cqes[32];
	unsigned char *val = malloc(BIG_VALUE);
	char keys[32][16];
	int i, k, rc, sub, got;

	CHECK(val, "out of memory");
	memset(val, 'v', BIG_VALUE);
	CHECK(tdbc_table_open(c, "big", &t) == 0, "open big");
	for (i = 0; i < BIG_RECORDS; i += 32) {
		for (k = 0; k < 32; k++) {
			memset(&reqs[k], 0, sizeof(reqs[k]));
			reqs[k].op = TDBC_OP_PUT;
			reqs[k].table = t;
			reqs[k].klen = (size_t)snprintf(keys[k], 16, "b%d",
							i + k);
			reqs[k].key = keys[k];
			reqs[k].val = val;
			reqs[k].vlen = BIG_VALUE;
		}
		for (sub = got = 0; got < 32;) {
			if (sub < 32) {
				rc = tdbc_submit(c, reqs + sub, 32 - sub);
				CHECK(rc > 0 || rc == -EAGAIN, "submit: %s",
				      h_errname(rc));
				sub += rc > 0 ? rc : 0;
			}
			rc = tdbc_reap(c, cqes, 32, 1, 10000);
			CHECK(rc > 0, "reap: %s", h_errname(rc));
			for (k = 0; k < rc; k++)
				CHECK(cqes[k].res == 0, "put: %s",
				      h_errname(cqes[k].res));
			got += rc;
		}
	}
	tdbc_table_close(t);
	free(val);
}

/* Keys t0.. of the killed transaction must not exist. */
static void check_txn_gone(struct tdbc *c)
{
	struct tdbc_table *t = NULL;
	struct tdbc_table_stat ts;
	char key[16], got[16];
	int i, kl;

	CHECK(tdbc_table_open(c, "txn", &t) == 0, "open txn");
	for (i = 0; i < TXN_KEYS; i++) {
		kl = snprintf(key, sizeof(key), "t%d", i);
		CHECK_EQ(tdbc_get(t, NULL, key, (size_t)kl, got, sizeof(got),
				  NULL), -ENOENT, "a key of the dead txn");
	}
	CHECK(tdbc_table_stat(c, "txn", &ts) == 0 && ts.records == 0,
	      "table txn has %llu records", (unsigned long long)ts.records);
	tdbc_table_close(t);
}

/* Write to the watched table for a while (the feed moves on). */
static void write_watched(struct tdbc *c, int n)
{
	struct tdbc_table *t = NULL;
	char key[16];
	int i, kl, err;

	CHECK(tdbc_table_open(c, "watched", &t) == 0, "open watched");
	for (i = 0; i < n; i++) {
		kl = snprintf(key, sizeof(key), "%c%d", "ab"[i % 2], i);
		err = tdbc_put(t, NULL, key, (size_t)kl, key, (size_t)kl, 0);
		CHECK(err == 0, "put watched: %s", h_errname(err));
	}
	tdbc_table_close(t);
}

static void round_of_deaths(struct tdbc *c, const char *sock)
{
	struct tdbc_stats base, st;
	unsigned int fl;
	pid_t pid;

	for (fl = 0; fl <= TDBC_NO_RINGS; fl += TDBC_NO_RINGS) {
		const char *how = fl ? "socket" : "rings";

		/* (a) in the middle of a transaction */
		h_stats(c, &base);
		pid = victim_start(v_txn, sock, fl);
		h_stats(c, &st);
		CHECK(st.txns == base.txns + 1 && st.clients ==
		      base.clients + 1, "txn (%s): txns %u clients %u", how,
		      st.txns, st.clients);
		check_txn_gone(c);
		kill_victim(pid);
		after_death(c, &base, !fl, &st, "txn");
		CHECK(st.txns_aborted == base.txns_aborted + 1, "txn (%s): "
		      "txns_aborted %llu -> %llu", how,
		      (unsigned long long)base.txns_aborted,
		      (unsigned long long)st.txns_aborted);
		check_txn_gone(c);

		/* (b) in the middle of a scan */
		h_stats(c, &base);
		pid = victim_start(v_scan, sock, fl);
		catch_in_dump(c, pid, &base);
		kill_victim(pid);
		after_death(c, &base, !fl, &st, "scan");
	}

	/* (c) a full completion ring, never reaped (TDBC_NO_MAP: mapped,
	 * its GETs would complete in the client and fill no ring) */
	h_stats(c, &base);
	pid = victim_start(v_full, sock, TDBC_NO_MAP);
	CHECK(h_wait_stats(c, &st, throttled_one, &base, 5000),
	      "full: throttled %u -> %u, rings %u -> %u", base.throttled,
	      st.throttled, base.rings, st.rings);
	kill_victim(pid);
	after_death(c, &base, true, &st, "full");

	/* (d) while watching */
	h_stats(c, &base);
	pid = victim_start(v_watch, sock, 0);
	write_watched(c, 2000);
	h_stats(c, &st);
	CHECK(st.watches == base.watches + 2, "watch: watches %u -> %u",
	      base.watches, st.watches);
	kill_victim(pid);
	write_watched(c, 100);
	after_death(c, &base, true, &st, "watch");
	CHECK(st.watches_dropped == base.watches_dropped + 2, "watch: "
	      "watches_dropped %llu -> %llu",
	      (unsigned long long)base.watches_dropped,
	      (unsigned long long)st.watches_dropped);

	/* (e) a transaction, two watches and a dump at once */
	h_stats(c, &base);
	pid = victim_start(v_all, sock, 0);
	catch_in_dump(c, pid, &base);
	h_stats(c, &st);
	CHECK(st.txns == base.txns + 1 && st.watches == base.watches + 2,
	      "all: txns %u watches %u", st.txns, st.watches);
	kill_victim(pid);
	after_death(c, &base, true, &st, "all");
	CHECK(st.txns_aborted == base.txns_aborted + 1 &&
	      st.watches_dropped == base.watches_dropped + 2,
	      "all: txns_aborted +%llu, watches_dropped +%llu",
	      (unsigned long long)(st.txns_aborted - base.txns_aborted),
	      (unsigned long long)(st.watches_dropped - base.watches_dropped));
	check_txn_gone(c);
}

int main(void)
{
	static const char *const args[] = { "--workers", "2",
		"--client-deadline", "60s", NULL };
	static const char *const tables[] = { "txn", "big", "watched", NULL };
	struct h_pinger pg[2];
	struct tdbc_stats st;
	struct h_daemon d;
	struct tdbc *c;
	long r, rounds = h_scaled(4, 2);
	int i;

	h_init("tdbd-client-death", 600);
	h_start(&d, "tdbd", args);
	h_pinger_start(&pg[0], d.sock, 0, 0);
	h_pinger_start(&pg[1], d.sock, TDBC_NO_RINGS, 1);
	c = h_connect(&d, 0);
	for (i = 0; tables[i]; i++)
		CHECK(tdbc_table_create(c, tables[i], NULL) == 0, "create %s",
		      tables[i]);
	fill_big(c);

	for (r = 0; r < rounds; r++)
		round_of_deaths(c, d.sock);
	h_note("%ld rounds of deaths", rounds);
	h_pinger_finish(&pg[0]);
	h_pinger_finish(&pg[1]);
	h_stats(c, &st);
	h_print_stats("end", &st);
	tdbc_close(c);
	h_stop(&d);
	h_done();
	return 0;
}
