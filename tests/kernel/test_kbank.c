// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kbank.c - the bank-transfer invariant (issue 24) in the kernel
 * home: tdb.ko owns the tables, `tdbd --backend kernel` (sync always)
 * supervises it and is SIGKILLed and restarted during the run.  Needs
 * $TDB_KTEST_TDBD and a tdb.ko with the supervisor ioctls (skips, 77,
 * without either), as test_supervise.
 *
 * NACC accounts in each of bank_a and bank_b (1000 units each); NXFER
 * processes (rings; one on generic netlink) move random amounts through
 * tdbc_txn_run: read both balances, write both and the transfer's log
 * key "x:<proc>:<seq>" (bank_log) in the same transaction.  An auditor
 * sums every account in read-only transactions: each commit that
 * returns 0 saw exactly the total.  Meanwhile tdbd is SIGKILLed and
 * restarted KILLS times (while it is away, answers wait, or come back
 * -ETIMEDOUT / -EAGAIN: such a transfer is applied or not, and its log
 * key says which).  Then:
 *  1. resident: each account is 1000 plus what the logged transfers
 *     brought minus what they took (none half applied, none without its
 *     log), the total conserved, every acknowledged transfer logged;
 *     each account's version noted;
 *  2. tdbd restarted and stopped cleanly, tdb.ko reloaded (its tables
 *     gone) and restored by a new tdbd from the WAL and checkpoint: the
 *     same check, every account's value and version the same as before
 *     the reload; a CAS with a version read before the reload succeeds
 *     after it, one with an older version is -ECANCELED, and the new
 *     version is above every version restored.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tdb/client.h"
#include "ksup.h"

#define DATA_DIR "/tmp/tdb-kbank"
#define LOG_FILE "/tmp/tdb-kbank.log"
#define NACC     8
#define NXFER    3
#define KILLS    3
#define MAXSEQ   50000
#define START    1000
#define TOTAL    (2 * NACC * START)

#define FAIL(...) do { fprintf(stderr, "test_kbank: FAIL: " __VA_ARGS__); \
	fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static const char *const tname[3] = { "bank_a", "bank_b", "bank_log" };

static struct ksup_tdbd td = { .log = LOG_FILE, .ready = KSUP_SUPERVISING,
			       .pid = -1 };

struct shared {
	volatile int stop;
	uint64_t acked[NXFER], unsure[NXFER], exhausted[NXFER],
		 tried[NXFER];
	uint64_t audits_ok, audits_stale, audits_unsure;
	unsigned char ack[NXFER][MAXSEQ];
};

static struct shared *sh;
static pid_t main_pid;

/* A failure of the main process leaves no tdbd behind (the guest's
 * rmmod after the tests must pass). */
static void cleanup(void)
{
	if (getpid() == main_pid && td.pid > 0) {
		kill(td.pid, SIGKILL);
		waitpid(td.pid, NULL, 0);
		td.pid = -1;
	}
}

static uint64_t rnd64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static void tdbd_start(void)
{
	const char *av[] = { td.path, "--backend", "kernel",
		"--data-dir", DATA_DIR, "--sync", "always",
		"--client-deadline", "60s", "--config", "/dev/null", NULL };

	ksup_start(&td, av);
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

/* tdbd away: the answer that may come instead of an ack */
static bool away(int err)
{
	return err == -ETIMEDOUT || err == -EAGAIN;
}

struct ctx {
	struct tdbc *c;
	struct tdbc_table *t[3];
};

static void ctx_open(struct ctx *x, unsigned int flags)
{
	int i;

	x->c = ksup_connect(flags);
	for (i = 0; i < 3; i++)
		CHECK(!tdbc_table_open(x->c, tname[i], &x->t[i]), "open %s: "
		      "%s", tname[i], tdbc_errmsg(x->c));
}

static void ctx_close(struct ctx *x)
{
	int i;

	for (i = 0; i < 3; i++)
		tdbc_table_close(x->t[i]);
	tdbc_close(x->c);
}

/* --- transfers and audits ------------------------------------------------ */

struct xfer {
	struct ctx *x;
	int p, ft, fa, tt, ta;
	uint64_t seq;
	long want, amount;
};

static int xfer_fn(struct tdbc_txn *tx, void *arg)
{
	struct xfer *xf = arg;
	char fk[16], tk[16], lk[48], v[64];
	size_t fl = acct_key(fk, xf->fa), tl = acct_key(tk, xf->ta);
	long nf, nt, from, to;
	int err, n;

	nf = tdbc_get(xf->x->t[xf->ft], tx, fk, fl, v, sizeof(v), NULL);
	if (nf < 0)
		return (int)nf;
	from = balance(v, nf);
	nt = tdbc_get(xf->x->t[xf->tt], tx, tk, tl, v, sizeof(v), NULL);
	if (nt < 0)
		return (int)nt;
	to = balance(v, nt);
	xf->amount = xf->want < from ? xf->want : from;
	n = snprintf(v, sizeof(v), "%ld", from - xf->amount);
	if ((err = tdbc_put(xf->x->t[xf->ft], tx, fk, fl, v, (size_t)n, 0)))
		return err;
	n = snprintf(v, sizeof(v), "%ld", to + xf->amount);
	if ((err = tdbc_put(xf->x->t[xf->tt], tx, tk, tl, v, (size_t)n, 0)))
		return err;
	n = snprintf(lk, sizeof(lk), "x:%d:%" PRIu64, xf->p, xf->seq);
	snprintf(v, sizeof(v), "%d %d %d %d %ld", xf->ft, xf->fa, xf->tt,
		 xf->ta, xf->amount);
	return tdbc_put(xf->x->t[2], tx, lk, (size_t)n, v, strlen(v),
			TDBC_IF_ABSENT);
}

static void transferer(int p)
{
	struct ctx x;
	struct xfer xf = { .x = &x, .p = p };
	uint64_t rnd = 0xabcdefull + (uint64_t)p * 7777;
	int err;

	ctx_open(&x, p == NXFER - 1 ? TDBC_NO_RINGS : 0);
	for (xf.seq = 0; !sh->stop && xf.seq < MAXSEQ; xf.seq++) {
		xf.ft = (int)(rnd64(&rnd) % 2);
		xf.tt = (int)(rnd64(&rnd) % 2);
		xf.fa = (int)(rnd64(&rnd) % NACC);
		do
			xf.ta = (int)(rnd64(&rnd) % NACC);
		while (xf.tt == xf.ft && xf.ta == xf.fa);
		xf.want = 1 + (long)(rnd64(&rnd) % 50);
		sh->tried[p] = xf.seq + 1;
		err = tdbc_txn_run(x.c, xfer_fn, &xf, 0);
		if (!err) {
			sh->acked[p]++;
			sh->ack[p][xf.seq] = 1;
		} else if (err == -ESTALE) {
			sh->exhausted[p]++;
		} else if (away(err)) {
			sh->unsure[p]++;
			ksup_msleep(10);
		} else {
			FAIL("transfer %d:%" PRIu64 ": %s (%s)", p, xf.seq,
			     tdbc_strerror(err), tdbc_errmsg(x.c));
		}
	}
	ctx_close(&x);
}

static int audit_fn(struct tdbc_txn *tx, void *arg)
{
	struct ctx *x = arg;
	char k[16], v[32];
	long sum = 0;
	int tb, i;

	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			long n = tdbc_get(x->t[tb], tx, k, acct_key(k, i), v,
					  sizeof(v), NULL);

			if (n < 0)
				return (int)n;
			sum += balance(v, n);
		}
	return sum == TOTAL ? 0 : -EILSEQ;
}

static void auditor(void)
{
	struct ctx x;

	ctx_open(&x, 0);
	while (!sh->stop) {
		struct tdbc_txn *tx;
		int err = tdbc_txn_begin(x.c, &tx), bad;

		if (!err) {
			bad = audit_fn(tx, &x);
			if (bad && bad != -EILSEQ) {
				(void)tdbc_txn_abort(tx);
				err = bad;
			} else {
				err = tdbc_txn_commit(tx);
				CHECK(err || !bad, "a read-only transaction "
				      "committed having summed a wrong total");
			}
		}
		if (!err)
			sh->audits_ok++;
		else if (err == -ESTALE)
			sh->audits_stale++;
		else if (away(err))
			sh->audits_unsure++, ksup_msleep(10);
		else
			FAIL("audit: %s (%s)", tdbc_strerror(err),
			     tdbc_errmsg(x.c));
	}
	ctx_close(&x);
}

/* --- the check ------------------------------------------------------------ */

/* Balances as the log says, the total, every acknowledged transfer
 * logged; the accounts' versions into ver. */
static uint64_t verify(const char *when, uint64_t ver[2][NACC])
{
	struct ctx x;
	long want[2][NACC], sum = 0;
	struct tdbc_scan *s;
	const void *kp, *vp;
	size_t kl, vl;
	uint64_t nlog = 0;
	int tb, i, p, err;

	ctx_open(&x, 0);
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++)
			want[tb][i] = START;
	CHECK(!tdbc_scan_open(x.t[2], NULL, 0, 0, &s), "scan");
	while ((err = tdbc_scan_next(s, &kp, &kl, &vp, &vl)) == 1) {
		char key[48], val[64];
		unsigned long long seq;
		int ft, fa, tt, ta;
		long amt;

		CHECK(kl < sizeof(key) && vl < sizeof(val), "log record");
		memcpy(key, kp, kl);
		key[kl] = 0;
		memcpy(val, vp, vl);
		val[vl] = 0;
		CHECK(sscanf(key, "x:%d:%llu", &p, &seq) == 2 && p >= 0 &&
		      p < NXFER && seq < sh->tried[p], "%s: log key %s", when,
		      key);
		CHECK(sscanf(val, "%d %d %d %d %ld", &ft, &fa, &tt, &ta,
			     &amt) == 5 && ft >= 0 && ft < 2 && tt >= 0 &&
		      tt < 2 && fa >= 0 && fa < NACC && ta >= 0 &&
		      ta < NACC && amt >= 0, "%s: log %s: %s", when, key, val);
		want[ft][fa] -= amt;
		want[tt][ta] += amt;
		nlog++;
	}
	CHECK(err == 0, "%s: scan: %s", when, tdbc_strerror(err));
	tdbc_scan_close(s);
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			char k[16], v[32];
			long n = tdbc_get_ver(x.t[tb], NULL, k, acct_key(k, i),
					      v, sizeof(v), NULL,
					      &ver[tb][i]), bal;

			CHECK(n > 0, "%s: get %s/%s: %s", when, tname[tb], k,
			      tdbc_strerror((int)n));
			bal = balance(v, n);
			CHECK(bal == want[tb][i], "%s: %s/%s is %ld, the "
			      "logged transfers make it %ld: a transfer half "
			      "applied or without its log", when, tname[tb],
			      k, bal, want[tb][i]);
			CHECK(ver[tb][i], "%s: %s/%s at version 0", when,
			      tname[tb], k);
			sum += bal;
		}
	CHECK(sum == TOTAL, "%s: total %ld, want %d", when, sum, TOTAL);
	for (p = 0; p < NXFER; p++) {
		uint64_t q;

		for (q = 0; q < sh->tried[p]; q++) {
			char lk[48], v[64];
			int n;
			long got;

			if (!sh->ack[p][q])
				continue;
			n = snprintf(lk, sizeof(lk), "x:%d:%" PRIu64, p, q);
			got = tdbc_get(x.t[2], NULL, lk, (size_t)n, v,
				       sizeof(v), NULL);
			CHECK(got > 0, "%s: transfer %s acknowledged and not "
			      "logged: %s", when, lk, tdbc_strerror((int)got));
		}
	}
	ctx_close(&x);
	printf("test_kbank: %s: %" PRIu64 " transfers logged, every account "
	       "as the log says, total %ld\n", when, nlog, sum);
	fflush(stdout);
	return nlog;
}

int main(void)
{
	uint64_t v1[2][NACC], v2[2][NACC], n1, n2, acked = 0, maxv = 0, nv;
	pid_t pid[NXFER + 1];
	struct ctx x;
	unsigned int k;
	char buf[32];
	int i, tb, st, err;
	long n;

	td.path = getenv("TDB_KTEST_TDBD");
	if (!td.path || !*td.path) {
		fprintf(stderr, "test_kbank: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_kbank: SKIP: tdb.ko has no supervisor "
			"ioctls\n");
		return 77;
	}
	system("rm -rf " DATA_DIR " " LOG_FILE);
	srand((unsigned int)time(NULL));
	main_pid = getpid();
	atexit(cleanup);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED, "mmap");
	ksup_reload("");
	tdbd_start();
	x.c = ksup_connect(0);
	for (tb = 0; tb < 3; tb++)
		CHECK(!tdbc_table_create(x.c, tname[tb], NULL), "create %s: "
		      "%s", tname[tb], tdbc_errmsg(x.c));
	tdbc_close(x.c);
	ctx_open(&x, 0);
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			char key[16], v[16];
			int vn = snprintf(v, sizeof(v), "%d", START);

			CHECK(!tdbc_put(x.t[tb], NULL, key, acct_key(key, i),
					v, (size_t)vn, 0), "put");
		}
	ctx_close(&x);

	for (i = 0; i <= NXFER; i++) {
		fflush(NULL);
		pid[i] = fork();
		CHECK(pid[i] >= 0, "fork");
		if (!pid[i]) {
			if (i < NXFER)
				transferer(i);
			else
				auditor();
			_exit(0);
		}
	}
	for (k = 0; k < KILLS; k++) {
		ksup_msleep(400 + (unsigned int)rand() % 600);
		ksup_stop(&td, SIGKILL);
		ksup_msleep((unsigned int)rand() % 100);
		tdbd_start();
	}
	for (i = 0; i < NXFER; i++)
		acked += sh->acked[i];
	ksup_msleep(1000);
	n1 = 0;
	for (i = 0; i < NXFER; i++)
		n1 += sh->acked[i];
	CHECK(n1 > acked, "no transfer acknowledged in 1 s after the last "
	      "restart (%" PRIu64 " before)", acked);
	sh->stop = 1;
	for (i = 0; i <= NXFER; i++) {
		CHECK(waitpid(pid[i], &st, 0) == pid[i], "waitpid");
		CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "%s %d failed",
		      i < NXFER ? "transferer" : "the auditor", i);
	}
	acked = 0;
	for (i = 0; i < NXFER; i++)
		acked += sh->acked[i];
	printf("test_kbank: %u SIGKILLs of tdbd: %" PRIu64 " transfers "
	       "acknowledged, %" PRIu64 "+%" PRIu64 "+%" PRIu64 " without "
	       "an answer, audits %" PRIu64 " ok / %" PRIu64 " stale / %"
	       PRIu64 " without an answer\n", KILLS, acked, sh->unsure[0],
	       sh->unsure[1], sh->unsure[2], sh->audits_ok, sh->audits_stale,
	       sh->audits_unsure);
	CHECK(sh->audits_ok > 0, "no audit committed");

	/* 1. resident */
	n1 = verify("resident", v1);
	/* 2. a clean stop after a restart (what tdb.ko logged is all
	 * durable), tdb.ko reloaded, restored */
	ksup_stop(&td, SIGKILL);
	tdbd_start();
	ksup_stop(&td, SIGTERM);
	ksup_reload("");
	tdbd_start();
	n2 = verify("restored", v2);
	CHECK(n1 == n2, "%" PRIu64 " transfers logged before the reload, %"
	      PRIu64 " after", n1, n2);
	for (tb = 0; tb < 2; tb++)
		for (i = 0; i < NACC; i++) {
			CHECK(v1[tb][i] == v2[tb][i], "%s/acct%02d: version %"
			      PRIu64 " before the reload, %" PRIu64 " after "
			      "the restore", tname[tb], i, v1[tb][i],
			      v2[tb][i]);
			if (v2[tb][i] > maxv)
				maxv = v2[tb][i];
		}
	/* conditions across the restore */
	ctx_open(&x, 0);
	err = tdbc_put_if(x.t[0], NULL, "acct00", 6, "1000", 4,
			  TDBC_IF_VERSION, v1[0][0] - 1);
	CHECK(err == -ECANCELED, "CAS with a version below the restored "
	      "one: %s", tdbc_strerror(err));
	n = tdbc_get(x.t[0], NULL, "acct00", 6, buf, sizeof(buf), NULL);
	CHECK(n > 0, "get");
	err = tdbc_put_if(x.t[0], NULL, "acct00", 6, buf, (size_t)n,
			  TDBC_IF_VERSION, v1[0][0]);
	CHECK(!err, "CAS with the version read before the reload: %s (%s)",
	      tdbc_strerror(err), tdbc_errmsg(x.c));
	n = tdbc_get_ver(x.t[0], NULL, "acct00", 6, buf, sizeof(buf), NULL,
			 &nv);
	CHECK(n > 0 && nv > maxv, "a write after the restore got version %"
	      PRIu64 ", not above the restored %" PRIu64, nv, maxv);
	ctx_close(&x);
	printf("test_kbank: restored: the same %" PRIu64 " transfers, every "
	       "account's value and version; a CAS with a version from "
	       "before the reload decides after it\n", n2);

	ksup_stop(&td, SIGTERM);
	ksup_reload("");
	system("rm -rf " DATA_DIR);
	return 0;
}
