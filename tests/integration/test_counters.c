// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_counters.c - contended counters against a real tdbd (issue 24):
 * the read-modify-write that lost half its updates before versions.
 *
 * NPROC processes (even ones on rings, odd ones on the socket) x M
 * increments, on one key and then on 4 keys, through tdbc_incr,
 * tdbc_txn_run (get + put), a CAS loop (tdbc_get_ver + tdbc_put_if
 * TDBC_IF_VERSION) and a plain transaction without retry (begin, get,
 * put, commit: 0 or -ESTALE naming the table and key).  Each key's
 * final value is exactly the increments that took (NPROC x M for all
 * but the plain one), the values written are 1..that each once
 * (cond_counters.h), and on one key txn_run, CAS and the plain
 * transaction saw conflicts (else the test proved nothing).  On one
 * key the table's change feed, watched meanwhile, has the values 0, 1,
 * 2 ... in order (apply order is a serial order) with versions strictly
 * increasing, the last the key's version.  First a
 * deterministic lost update: a transaction reads, another client
 * increments, the transaction's commit is -ESTALE and applies nothing;
 * and a read-only transaction whose read changed is -ESTALE too.
 *
 * Usage: itest_counters [NPROC [M]] (default 8 x 1000, scaled by
 * TDB_ITEST_SCALE; by hand e.g. 8 2000 for the numbers).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	static const char *const args[] = { "--sync", "none", NULL };
	long nproc = h_scaled(8, 2), m;
	struct tdbc *ctl, *b;
	int mode;

	h_init("counters", h_sanitized() ? 600 : 150);
	m = h_scaled(1000, 100);
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

	if (h_want("lost"))
		lost_update(ctl, b);

	for (mode = CC_INCR; mode <= CC_PLAIN; mode++) {
		int keys;

		if (!h_want(cc_mode_name[mode]))
			continue;
		for (keys = 1; keys <= 4; keys += 3) {
			struct cc_run r = {
				.connect = connect_d, .table = "cnt",
				.mode = (enum cc_mode)mode,
				.nproc = (int)nproc, .per_proc = m,
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
