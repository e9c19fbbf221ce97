// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_bank.c - the bank-transfer invariant (issue 24) with tdbd
 * SIGKILLed and restarted during the run.
 *
 * NACC accounts in each of two tables (bank_a, bank_b), 1000 units
 * each.  NXFER processes transfer random amounts between random
 * accounts of either table through tdbc_txn_run: read both balances,
 * write both, and write the transfer's log key "x:<proc>:<seq>" (table
 * bank_log: from, to, amount) in the same transaction.  NAUDIT
 * processes sum every account in read-only transactions (begin, GETs,
 * commit; every other one through tdbc_txn_run): every commit that
 * returns 0 must have seen exactly the total.  Meanwhile the test
 * SIGKILLs tdbd KILLS times and starts it again; clients see their
 * connection die, reconnect and go on (a transfer whose commit got no
 * answer is looked up by its log key: applied whole or not at all).
 *
 * At the end: each account's balance is 1000 plus what the logged
 * transfers brought minus what they took (a half-applied transfer, or
 * one applied without its log, breaks it), the total is conserved,
 * every transfer whose commit returned 0 is logged, no process logged
 * more than it tried, transfers went on after the last restart, and
 * some audits committed.  Audits refused -ESTALE are counted, and so
 * are those of them that had read a wrong total: what validation
 * caught.
 *
 * Usage: itest_bank [SECONDS [KILLS]] (default 3 s of transfers around
 * 3 kills).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NACC    8               /* per table */
#define NXFER   6
#define NAUDIT  2
#define MAXSEQ  100000
#define START   1000
#define TOTAL   (2 * NACC * START)

static const char *const tname[3] = { "bank_a", "bank_b", "bank_log" };

struct xrep {
	uint64_t acked, unsure_yes, unsure_no, reconnects, exhausted;
	uint64_t acked_gen[16];         /* by restart generation */
	uint64_t tried;                 /* seqs 0..tried-1 */
};

struct arep {
	uint64_t ok, stale, wrong_stale, reconnects;
};

struct shared {
	volatile int stop;
	volatile int gen;               /* restarts so far */
	struct xrep x[NXFER];
	struct arep a[NAUDIT];
	unsigned char acked[NXFER][MAXSEQ];
};

static struct h_daemon d;
static struct shared *sh;

struct bconn {
	struct tdbc *c;
	struct tdbc_table *t[3];
	unsigned int flags;
};

static bool conn_err(int err)
{
	return err == -ECONNRESET || err == -EPIPE || err == -ENOTCONN ||
	       err == -ECONNABORTED || err == -ECONNREFUSED ||
	       err == -ESHUTDOWN;
}

static void b_close(struct bconn *b)
{
	int i;

	if (!b->c)
		return;
	for (i = 0; i < 3; i++)
		if (b->t[i])
			tdbc_table_close(b->t[i]);
	tdbc_close(b->c);
	memset(b->t, 0, sizeof(b->t));
	b->c = NULL;
}

/* (Re)connect and open the tables, waiting out a restart. */
static void b_connect(struct bconn *b)
{
	uint64_t t0 = h_now_ms();
	char msg[256];
	int err, i;

	b_close(b);
	for (;;) {
		err = tdbc_connect(&b->c, d.sock, b->flags, msg, sizeof(msg));
		if (err == 0) {
			for (i = 0; i < 3 && !err; i++)
				err = tdbc_table_open(b->c, tname[i],
						      &b->t[i]);
			if (err == 0)
				return;
			CHECK(conn_err(err), "open %s: %s", tname[i - 1],
			      h_errname(err));
			b_close(b);
		} else {
			CHECK(conn_err(err) || err == -ENOENT, "connect: %s "
			      "(%s)", h_errname(err), msg);
		}
		CHECK(h_now_ms() - t0 < 30000, "no tdbd to reconnect to "
		      "within 30 s: %s", h_errname(err));
		h_sleep_ms(20);
	}
}

static size_t acct_key(char *out, int i)
{
	return (size_t)snprintf(out, 16, "acct%02d", i);
}

static long balance(const void *v, long n)
{
	char tmp[24];

	CHECK(n > 0 && n < (long)sizeof(tmp), "balance of %ld bytes", n);
	memcpy(tmp, v, (size_t)n);
	tmp[n] = 0;
	return atol(tmp);
}

/* --- transfers ------------------------------------------------------------ */

struct xfer {
	struct bconn *b;
	int p;
	uint64_t seq;
	int ft, fa, tt, ta;     /* from table/account, to table/account */
	long want;
	long amount;            /* what the committed run moved */
};

static int xfer_fn(struct tdbc_txn *x, void *arg)
{
	struct xfer *xf = arg;
	struct bconn *b = xf->b;
	char fk[16], tk[16], lk[48], v[64];
	size_t fl = acct_key(fk, xf->fa), tl = acct_key(tk, xf->ta);
	long nf, nt, from, to;
	int err, n;

	nf = tdbc_get(b->t[xf->ft], x, fk, fl, v, sizeof(v), NULL);
	if (nf < 0)
		return (int)nf;
	from = balance(v, nf);
	nt = tdbc_get(b->t[xf->tt], x, tk, tl, v, sizeof(v), NULL);
	if (nt < 0)
		return (int)nt;
	to = balance(v, nt);
	xf->amount = xf->want < from ? xf->want : from;
	n = snprintf(v, sizeof(v), "%ld", from - xf->amount);
	err = tdbc_put(b->t[xf->ft], x, fk, fl, v, (size_t)n, 0);
	if (err)
		return err;
	n = snprintf(v, sizeof(v), "%ld", to + xf->amount);
	err = tdbc_put(b->t[xf->tt], x, tk, tl, v, (size_t)n, 0);
	if (err)
		return err;
	n = snprintf(lk, sizeof(lk), "x:%d:%" PRIu64, xf->p, xf->seq);
	snprintf(v, sizeof(v), "%d %d %d %d %ld", xf->ft, xf->fa, xf->tt,
		 xf->ta, xf->amount);
	return tdbc_put(b->t[2], x, lk, (size_t)n, v, strlen(v),
			TDBC_IF_ABSENT);
}

static void transferer(int p)
{
	struct bconn b = { .flags = p % 2 ? TDBC_NO_RINGS : 0 };
	struct xrep *r = &sh->x[p];
	uint64_t rnd = 0x1234567ull + (uint64_t)p * 7777;
	struct xfer xf = { .b = &b, .p = p };
	int err;

	b_connect(&b);
	for (xf.seq = 0; !sh->stop && xf.seq < MAXSEQ; xf.seq++) {
		int gen = sh->gen;

		xf.ft = (int)(h_rand(&rnd) % 2);
		xf.tt = (int)(h_rand(&rnd) % 2);
		xf.fa = (int)(h_rand(&rnd) % NACC);
		do
			xf.ta = (int)(h_rand(&rnd) % NACC);
		while (xf.tt == xf.ft && xf.ta == xf.fa);
		xf.want = 1 + (long)(h_rand(&rnd) % 50);
		r->tried = xf.seq + 1;
		err = tdbc_txn_run(b.c, xfer_fn, &xf, 0);
		if (err == 0) {
			r->acked++;
			r->acked_gen[gen < 15 ? gen : 15]++;
			sh->acked[p][xf.seq] = 1;
			continue;
		}
		if (err == -ESTALE) {
			r->exhausted++;         /* gave up: nothing applied */
			continue;
		}
		CHECK(conn_err(err), "transfer %d:%" PRIu64 ": %s (%s)", p,
		      xf.seq, h_errname(err), tdbc_errmsg(b.c));
		/* tdbd died: was it applied?  Its log key says. */
		r->reconnects++;
		for (;;) {
			char lk[48], v[64];
			int n = snprintf(lk, sizeof(lk), "x:%d:%" PRIu64, p,
					 xf.seq);
			long got;

			b_connect(&b);
			got = tdbc_get(b.t[2], NULL, lk, (size_t)n, v,
				       sizeof(v), NULL);
			if (conn_err((int)got))
				continue;
			CHECK(got > 0 || got == -ENOENT, "get %s: %s", lk,
			      h_errname((int)got));
			if (got > 0)
				r->unsure_yes++;
			else
				r->unsure_no++;
			break;
		}
	}
	b_close(&b);
}

/* --- audits --------------------------------------------------------------- */

struct audit {
	struct bconn *b;
	long sum;
};

static int audit_fn(struct tdbc_txn *x, void *arg)
{
	struct audit *au = arg;
	char k[16], v[32];
	int tb, i;

	au->sum = 0;
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			size_t kl = acct_key(k, i);
			long n = tdbc_get(au->b->t[tb], x, k, kl, v,
					  sizeof(v), NULL);

			if (n < 0)
				return (int)n;
			au->sum += balance(v, n);
		}
	return 0;
}

static void auditor(int a)
{
	struct bconn b = { .flags = a % 2 ? TDBC_NO_RINGS : 0 };
	struct arep *r = &sh->a[a];
	struct audit au = { .b = &b };
	uint64_t i;
	int err;

	b_connect(&b);
	for (i = 0; !sh->stop; i++) {
		if (i % 2) {
			err = tdbc_txn_run(b.c, audit_fn, &au, 0);
			if (err == 0) {
				CHECK(au.sum == TOTAL, "an audit through "
				      "tdbc_txn_run committed having summed "
				      "%ld, want %d", au.sum, TOTAL);
				r->ok++;
				continue;
			}
		} else {
			struct tdbc_txn *x;

			err = tdbc_txn_begin(b.c, &x);
			if (err == 0) {
				err = audit_fn(x, &au);
				if (err == 0) {
					err = tdbc_txn_commit(x);
				} else {
					(void)tdbc_txn_abort(x);
				}
			}
			if (err == 0) {
				CHECK(au.sum == TOTAL, "a read-only "
				      "transaction committed (0) having summed "
				      "%ld, want %d", au.sum, TOTAL);
				r->ok++;
				continue;
			}
			if (err == -ESTALE) {
				r->stale++;
				r->wrong_stale += au.sum != TOTAL;
				continue;
			}
		}
		if (err == -ESTALE) {
			r->stale++;
			continue;
		}
		CHECK(conn_err(err), "audit: %s (%s)", h_errname(err),
		      tdbc_errmsg(b.c));
		r->reconnects++;
		b_connect(&b);
	}
	b_close(&b);
}

/* --- the check ------------------------------------------------------------ */

static void check_all(void)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table *t[3];
	long want[2][NACC], sum = 0;
	uint64_t logged[NXFER] = { 0 }, nlog = 0;
	struct tdbc_scan *s;
	const void *kp, *vp;
	size_t kl, vl;
	int tb, i, p, err;

	for (tb = 0; tb < 3; tb++)
		CHECK(tdbc_table_open(c, tname[tb], &t[tb]) == 0, "open");
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++)
			want[tb][i] = START;
	CHECK(tdbc_scan_open(t[2], NULL, 0, 0, &s) == 0, "scan");
	while ((err = tdbc_scan_next(s, &kp, &kl, &vp, &vl)) == 1) {
		char key[48], val[64];
		int ft, fa, tt, ta;
		unsigned long long seq;
		long amt;

		CHECK(kl < sizeof(key) && vl < sizeof(val), "log record");
		memcpy(key, kp, kl);
		key[kl] = 0;
		memcpy(val, vp, vl);
		val[vl] = 0;
		CHECK(sscanf(key, "x:%d:%llu", &p, &seq) == 2 && p >= 0 &&
		      p < NXFER && seq < MAXSEQ, "log key %s", key);
		CHECK(sscanf(val, "%d %d %d %d %ld", &ft, &fa, &tt, &ta,
			     &amt) == 5 && ft >= 0 && ft < 2 && tt >= 0 &&
		      tt < 2 && fa >= 0 && fa < NACC && ta >= 0 &&
		      ta < NACC && amt >= 0, "log %s: %s", key, val);
		CHECK(seq < sh->x[p].tried, "log %s: process %d tried only %"
		      PRIu64 " transfers", key, p, sh->x[p].tried);
		want[ft][fa] -= amt;
		want[tt][ta] += amt;
		logged[p]++;
		nlog++;
	}
	CHECK(err == 0, "scan: %s", h_errname(err));
	tdbc_scan_close(s);
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			char k[16], v[32];
			size_t kln = acct_key(k, i);
			long n = tdbc_get(t[tb], NULL, k, kln, v, sizeof(v),
					  NULL), bal;

			CHECK(n > 0, "get %s/%s: %s", tname[tb], k,
			      h_errname((int)n));
			bal = balance(v, n);
			CHECK(bal == want[tb][i], "%s/%s is %ld, the logged "
			      "transfers make it %ld: a transfer half applied "
			      "or applied without its log", tname[tb], k, bal,
			      want[tb][i]);
			CHECK(bal >= 0, "%s/%s is negative: %ld", tname[tb], k,
			      bal);
			sum += bal;
		}
	CHECK(sum == TOTAL, "total %ld, want %d", sum, TOTAL);
	for (p = 0; p < NXFER; p++) {
		const struct xrep *r = &sh->x[p];
		uint64_t q;

		for (q = 0; q < r->tried; q++) {
			char lk[48], v[64];
			int n;
			long got;

			if (!sh->acked[p][q])
				continue;
			n = snprintf(lk, sizeof(lk), "x:%d:%" PRIu64, p, q);
			got = tdbc_get(t[2], NULL, lk, (size_t)n, v, sizeof(v),
				       NULL);
			CHECK(got > 0, "transfer %s was acknowledged and is "
			      "not logged: %s", lk, h_errname((int)got));
		}
		CHECK(logged[p] == r->acked + r->unsure_yes, "process %d: %"
		      PRIu64 " transfers logged, it counted %" PRIu64
		      " acknowledged and %" PRIu64 " found after a restart",
		      p, logged[p], r->acked, r->unsure_yes);
	}
	for (tb = 0; tb < 3; tb++)
		tdbc_table_close(t[tb]);
	tdbc_close(c);
	printf("bank: %" PRIu64 " transfers logged, every account as the log "
	       "says, total %ld conserved\n", nlog, sum);
}

int main(int argc, char **argv)
{
	static const char *const args[] = { "--sync", "always", NULL };
	unsigned int secs = 3, kills = 3, k;
	uint64_t acked = 0, yes = 0, no = 0, recon = 0, ok = 0, stale = 0,
		 wrong = 0, exh = 0, last = 0;
	pid_t pid[NXFER + NAUDIT];
	struct tdbc *c;
	int i, tb;

	h_init("bank", h_sanitized() ? 600 : 180);
	if (argc > 1)
		secs = (unsigned int)atoi(argv[1]);
	if (argc > 2)
		kills = (unsigned int)atoi(argv[2]);
	CHECK(secs >= 1 && kills < 15, "usage: %s [SECONDS [KILLS]]",
	      argv[0]);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED, "mmap");
	h_start(&d, "bank", args);
	c = h_connect(&d, 0);
	for (tb = 0; tb < 3; tb++)
		CHECK(tdbc_table_create(c, tname[tb], NULL) == 0, "create");
	for (tb = 0; tb < 2; tb++) {
		struct tdbc_table *t;

		CHECK(tdbc_table_open(c, tname[tb], &t) == 0, "open");
		for (i = 0; i < NACC; i++) {
			char k[16], v[16];
			size_t kl = acct_key(k, i);
			int n = snprintf(v, sizeof(v), "%d", START);

			CHECK(tdbc_put(t, NULL, k, kl, v, (size_t)n, 0) == 0,
			      "put");
		}
		tdbc_table_close(t);
	}
	tdbc_close(c);

	for (i = 0; i < NXFER + NAUDIT; i++) {
		fflush(NULL);
		pid[i] = fork();
		CHECK(pid[i] >= 0, "fork");
		if (pid[i] == 0) {
			if (i < NXFER)
				transferer(i);
			else
				auditor(i - NXFER);
			_exit(0);
		}
		h_track(pid[i]);
	}
	/* kills spread over the run, then a last stretch without */
	for (k = 0; k < kills; k++) {
		h_sleep_ms(secs * 1000 / (kills + 1));
		CHECK(kill(d.pid, SIGKILL) == 0, "kill");
		CHECK(h_wait_exit(&d, 10000), "tdbd did not die");
		h_start(&d, "bank", args);
		sh->gen = (int)k + 1;
		h_note("tdbd SIGKILLed and restarted (%u)", k + 1);
	}
	h_sleep_ms(secs * 1000 / (kills + 1));
	sh->stop = 1;
	for (i = 0; i < NXFER + NAUDIT; i++) {
		int st;

		CHECK(waitpid(pid[i], &st, 0) == pid[i], "waitpid");
		h_untrack(pid[i]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s %d failed",
		      i < NXFER ? "transferer" : "auditor",
		      i < NXFER ? i : i - NXFER);
	}
	for (i = 0; i < NXFER; i++) {
		acked += sh->x[i].acked;
		yes += sh->x[i].unsure_yes;
		no += sh->x[i].unsure_no;
		recon += sh->x[i].reconnects;
		exh += sh->x[i].exhausted;
		last += sh->x[i].acked_gen[kills < 15 ? kills : 15];
	}
	for (i = 0; i < NAUDIT; i++) {
		ok += sh->a[i].ok;
		stale += sh->a[i].stale;
		wrong += sh->a[i].wrong_stale;
		recon += sh->a[i].reconnects;
	}
	printf("bank: %u kills; transfers: %" PRIu64 " acknowledged (%" PRIu64
	       " after the last restart), %" PRIu64 " unanswered and applied, %"
	       PRIu64 " unanswered and not, %" PRIu64 " gave up (ESTALE); "
	       "audits: %" PRIu64 " committed with the total, %" PRIu64
	       " stale (%" PRIu64 " of them had read a wrong total); %" PRIu64
	       " reconnections\n", kills, acked, last, yes, no, exh, ok, stale,
	       wrong, recon);
	check_all();
	CHECK(ok > 0, "no audit committed");
	CHECK(acked > 0 && (kills == 0 || last > 0), "no transfer after the "
	      "last restart: clients did not go on");
	CHECK(kills == 0 || recon > 0, "%u kills and no client saw its "
	      "connection die", kills);
	h_stop(&d);
	h_done();
	return 0;
}
