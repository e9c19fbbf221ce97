// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_concurrency.c - 64 client processes against one tdbd.
 *
 * tdbd runs with two workers.  Each of NPROC forked children has its own
 * connection (even children over rings, odd ones with TDBC_NO_RINGS) and
 * does a random mix of operations on shared tables, checking every
 * answer against what it knows:
 *
 *  - Its own key range ("pNN:kMMM", spread over tables kv0 and kv1):
 *    put (sometimes no-overwrite), get (sometimes into a too-small
 *    buffer: -ENOBUFS and the right length), del, scans of its prefix
 *    (exactly its live keys, each once, right values; with a limit,
 *    exactly that many), transactions (a get inside sees the
 *    transaction's own changes, one outside does not; commit applies all,
 *    abort nothing; a commit with a failing no-overwrite put applies
 *    nothing and says -EEXIST) and batches through tdbc_submit/tdbc_reap.
 *    Nobody else writes those keys, so its model is exact.
 *  - Bank accounts: account p is "acct:p" in table bank_a and in bank_b,
 *    values "version:amount"; its owner moves amounts between the two in
 *    transactions, always writing both with the next version, so
 *    a + b = TOTAL.  Every child audits random accounts with three
 *    sequential gets (a, b, a or b, a, b): when the first and third agree,
 *    no commit on that account happened in between, so the middle one must
 *    have the same version and the amounts must add up to TOTAL (a torn
 *    commit shows here).  Versions a client sees never go backwards.
 *
 * At the end every child checks all its keys, exits 0 and reports its
 * key count, a hash of its records and its account's version; the parent
 * scans both tables whole and checks they hold exactly what the children
 * reported, that every account adds up and has the reported version, and
 * that tdbd's gauges are back to one client.  TDB_ITEST_SCALE scales the
 * operations per child.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NPROC    64
#define NKEYS    48             /* keys per child */
#define TOTAL    1000u          /* per account, a + b */
#define BIGVAL   (150u << 10)   /* the largest value written */
#define GETBUF   (256u << 10)

struct report {
	int p;
	uint32_t count, ver;
	uint64_t hash, ops, audits, audit_retries, txns, batches;
};

struct model {
	bool present;
	uint32_t len;
	unsigned char *val;
};

struct child {
	int p;
	uint64_t rnd;
	struct tdbc *c;
	struct tdbc_table *kv[2], *bank[2];
	struct model keys[NKEYS];
	uint32_t ver, amt[2];           /* own account: version, a, b */
	uint32_t seen[NPROC];           /* highest version seen per account */
	unsigned char *buf;             /* GETBUF bytes */
	unsigned char *vbuf;            /* values being written */
	struct report rep;
};

static unsigned int rnd(struct child *ch, unsigned int n)
{
	return (unsigned int)(h_rand(&ch->rnd) % n);
}

static int keyname(char *out, int p, unsigned int i)
{
	return sprintf(out, "p%02d:k%03u", p, i);
}

static struct tdbc_table *key_table(struct child *ch, unsigned int i)
{
	return ch->kv[i % 2];
}

/* A fresh value in ch->vbuf (mostly short, sometimes several VALUE
 * fragments long, sometimes empty); its length. */
static uint32_t make_value(struct child *ch)
{
	unsigned int r = rnd(ch, 100);
	uint32_t len, j;

	if (r < 2)
		len = 66000 + rnd(ch, BIGVAL - 66000);
	else if (r < 4)
		len = 0;
	else
		len = 1 + rnd(ch, 300);
	for (j = 0; j < len; j++)
		ch->vbuf[j] = (unsigned char)h_rand(&ch->rnd);
	return len;
}

static void model_set(struct model *m, const void *val, uint32_t len)
{
	free(m->val);
	m->val = malloc(len ? len : 1);
	CHECK(m->val, "out of memory");
	memcpy(m->val, val, len);
	m->len = len;
	m->present = true;
}

static void model_del(struct model *m)
{
	free(m->val);
	m->val = NULL;
	m->len = 0;
	m->present = false;
}

/* Get key i (txn may be NULL) and compare with m. */
static void check_get(struct child *ch, struct tdbc_txn *txn, unsigned int i,
		      const struct model *m, const char *what)
{
	char key[32];
	int kl = keyname(key, ch->p, i);
	size_t need = 0;
	long n;

	n = tdbc_get(key_table(ch, i), txn, key, (size_t)kl, ch->buf, GETBUF,
		     &need);
	if (!m->present) {
		CHECK_EQ(n, -ENOENT, what);
		return;
	}
	CHECK(n == (long)m->len, "%s: get %s: %ld (%s; %s), want %u bytes",
	      what, key, n, h_errname((int)n), tdbc_errmsg(ch->c), m->len);
	CHECK(!memcmp(ch->buf, m->val, m->len), "%s: get %s: wrong value",
	      what, key);
}

/* --- own keys ------------------------------------------------------------- */

static void op_put(struct child *ch)
{
	unsigned int i = rnd(ch, NKEYS);
	struct model *m = &ch->keys[i];
	unsigned int fl = rnd(ch, 8) ? 0 : TDBC_NOOVERWRITE;
	char key[32];
	int kl = keyname(key, ch->p, i), err;
	uint32_t len = make_value(ch);

	err = tdbc_put(key_table(ch, i), NULL, key, (size_t)kl, ch->vbuf, len,
		       fl);
	if (fl && m->present) {
		CHECK_EQ(err, -EEXIST, "no-overwrite put of a present key");
		return;
	}
	CHECK(err == 0, "put %s (%u bytes): %s (%s)", key, len,
	      h_errname(err), tdbc_errmsg(ch->c));
	model_set(m, ch->vbuf, len);
}

static void op_get(struct child *ch)
{
	unsigned int i = rnd(ch, NKEYS);
	struct model *m = &ch->keys[i];
	char key[32];
	int kl = keyname(key, ch->p, i);
	size_t need = 0;
	long n;

	if (m->present && m->len > 16 && !rnd(ch, 8)) {
		n = tdbc_get(key_table(ch, i), NULL, key, (size_t)kl, ch->buf,
			     16, &need);
		CHECK_EQ(n, -ENOBUFS, "get into a 16-byte buffer");
		CHECK_EQ(need, m->len, "the length a short get reports");
		return;
	}
	check_get(ch, NULL, i, m, "get");
}

static void op_del(struct child *ch)
{
	unsigned int i = rnd(ch, NKEYS);
	struct model *m = &ch->keys[i];
	char key[32];
	int kl = keyname(key, ch->p, i);
	int err = tdbc_del(key_table(ch, i), NULL, key, (size_t)kl);

	CHECK_EQ(err, m->present ? 0 : -ENOENT, "del");
	model_del(m);
}

static void op_scan(struct child *ch)
{
	unsigned int tb = rnd(ch, 2), i, want = 0, got = 0;
	bool seen[NKEYS] = { false };
	uint64_t limit = rnd(ch, 4) ? 0 : 1 + rnd(ch, 5);
	struct tdbc_scan *s = NULL;
	char prefix[8];
	int plen = sprintf(prefix, "p%02d:", ch->p), rc;
	const void *k, *v;
	size_t kl, vl;

	for (i = tb; i < NKEYS; i += 2)
		want += ch->keys[i].present;
	rc = tdbc_scan_open(ch->kv[tb], prefix, (size_t)plen, limit, &s);
	CHECK(rc == 0, "scan_open: %s (%s)", h_errname(rc),
	      tdbc_errmsg(ch->c));
	while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		char key[32];
		unsigned int idx;

		CHECK(kl > (size_t)plen && kl < sizeof(key) &&
		      !memcmp(k, prefix, (size_t)plen), "scan of prefix %s "
		      "returned key '%.*s'", prefix, (int)kl,
		      (const char *)k);
		memcpy(key, k, kl);
		key[kl] = 0;
		CHECK(sscanf(key + plen, "k%u", &idx) == 1 && idx < NKEYS &&
		      idx % 2 == tb, "scan returned a stranger key %s", key);
		CHECK(!seen[idx], "scan returned %s twice", key);
		seen[idx] = true;
		CHECK(ch->keys[idx].present, "scan returned deleted key %s",
		      key);
		CHECK(vl == ch->keys[idx].len &&
		      !memcmp(v, ch->keys[idx].val, vl), "scan: wrong value "
		      "for %s (%zu bytes, want %u)", key, vl,
		      ch->keys[idx].len);
		got++;
	}
	CHECK(rc == 0, "scan_next: %s (%s)", h_errname(rc),
	      tdbc_errmsg(ch->c));
	tdbc_scan_close(s);
	if (limit && limit < want)
		want = (unsigned int)limit;
	CHECK(got == want, "scan of %s in kv%u (limit %llu): %u records, "
	      "want %u", prefix, tb, (unsigned long long)limit, got, want);
}

/* A transaction over own keys: puts and dels, gets inside and outside,
 * then commit, abort, or a commit that must fail. */
static void op_txn(struct child *ch)
{
	struct model over[NKEYS];
	bool touched[NKEYS] = { false };
	unsigned int nops = 1 + rnd(ch, 6), k, i, fate = rnd(ch, 100);
	struct tdbc_txn *x = NULL;
	char key[32];
	int kl, err;

	memset(over, 0, sizeof(over));
	err = tdbc_txn_begin(ch->c, &x);
	CHECK(err == 0, "txn_begin: %s (%s)", h_errname(err),
	      tdbc_errmsg(ch->c));
	for (k = 0; k < nops; k++) {
		i = rnd(ch, NKEYS);
		kl = keyname(key, ch->p, i);
		if (!touched[i]) {
			touched[i] = true;
			if (ch->keys[i].present)
				model_set(&over[i], ch->keys[i].val,
					  ch->keys[i].len);
		}
		if (rnd(ch, 3)) {
			uint32_t len = make_value(ch);

			err = tdbc_put(key_table(ch, i), x, key, (size_t)kl,
				       ch->vbuf, len, 0);
			CHECK(err == 0, "put in txn: %s (%s)", h_errname(err),
			      tdbc_errmsg(ch->c));
			model_set(&over[i], ch->vbuf, len);
		} else {
			/* deleting an absent key in a transaction is fine */
			err = tdbc_del(key_table(ch, i), x, key, (size_t)kl);
			CHECK(err == 0, "del in txn: %s (%s)", h_errname(err),
			      tdbc_errmsg(ch->c));
			model_del(&over[i]);
		}
		/* inside: the transaction's view; outside: the old one */
		check_get(ch, x, i, &over[i], "get inside txn");
		check_get(ch, NULL, i, &ch->keys[i], "get outside txn");
	}
	if (fate < 60) {
		err = tdbc_txn_commit(x);
		CHECK(err == 0, "commit: %s (%s)", h_errname(err),
		      tdbc_errmsg(ch->c));
		for (i = 0; i < NKEYS; i++)
			if (touched[i]) {
				if (over[i].present)
					model_set(&ch->keys[i], over[i].val,
						  over[i].len);
				else
					model_del(&ch->keys[i]);
			}
	} else if (fate < 85) {
		err = tdbc_txn_abort(x);
		CHECK(err == 0, "abort: %s (%s)", h_errname(err),
		      tdbc_errmsg(ch->c));
	} else {
		/* a no-overwrite put of a key present at commit time (and
		 * untouched before in this transaction) fails it whole */
		for (i = 0; i < NKEYS && (touched[i] ||
					  !ch->keys[i].present); i++)
			;
		if (i == NKEYS) {
			err = tdbc_txn_abort(x);
			CHECK(err == 0, "abort: %s", h_errname(err));
		} else {
			kl = keyname(key, ch->p, i);
			err = tdbc_put(key_table(ch, i), x, key, (size_t)kl,
				       "x", 1, TDBC_NOOVERWRITE);
			CHECK(err == 0, "no-overwrite put in txn: %s",
			      h_errname(err));
			err = tdbc_txn_commit(x);
			CHECK_EQ(err, -EEXIST, "commit with a failing put");
		}
	}
	/* whatever happened, the keys hold what the model says */
	for (i = 0; i < NKEYS; i++) {
		if (touched[i])
			check_get(ch, NULL, i, &ch->keys[i], "get after txn");
		model_del(&over[i]);
	}
	ch->rep.txns++;
}

/* Requests through the asynchronous API: distinct keys, any order. */
static void op_batch(struct child *ch)
{
	struct tdbc_req reqs[24];
	struct tdbc_cqe cqes[24];
	unsigned int n = 4 + rnd(ch, 20), k, sub = 0, got = 0;
	unsigned int idx[24], kind[24];
	char keys[24][32];
	unsigned char *vals = malloc((size_t)24 * 64);
	bool used[NKEYS] = { false };
	int rc;

	CHECK(vals, "out of memory");
	for (k = 0; k < n; k++) {
		unsigned int i, j;
		int kl;

		do
			i = rnd(ch, NKEYS);
		while (used[i]);
		used[i] = true;
		idx[k] = i;
		kind[k] = 1 + rnd(ch, 3);       /* TDBC_OP_GET .. DEL */
		kl = keyname(keys[k], ch->p, i);
		memset(&reqs[k], 0, sizeof(reqs[k]));
		reqs[k].op = (enum tdbc_op)kind[k];
		reqs[k].table = key_table(ch, i);
		reqs[k].key = keys[k];
		reqs[k].klen = (size_t)kl;
		reqs[k].user = k;
		if (kind[k] == TDBC_OP_PUT) {
			for (j = 0; j < 64; j++)
				vals[k * 64 + j] =
					(unsigned char)h_rand(&ch->rnd);
			reqs[k].val = vals + k * 64;
			reqs[k].vlen = 1 + rnd(ch, 64);
		}
	}
	while (got < n) {
		if (sub < n) {
			rc = tdbc_submit(ch->c, reqs + sub, n - sub);
			CHECK(rc > 0 || rc == -EAGAIN, "submit: %s (%s)",
			      h_errname(rc), tdbc_errmsg(ch->c));
			if (rc > 0)
				sub += (unsigned int)rc;
		}
		rc = tdbc_reap(ch->c, cqes, 24, sub > got ? 1 : 0, 10000);
		CHECK(rc >= 0, "reap: %s (%s)", h_errname(rc),
		      tdbc_errmsg(ch->c));
		CHECK(rc > 0 || sub == got, "reap: no completion within 10 s "
		      "(%u submitted, %u reaped)", sub, got);
		for (k = 0; k < (unsigned int)rc; k++) {
			unsigned int u = (unsigned int)cqes[k].user;
			struct model *m;

			CHECK(u < n, "a completion for user %u", u);
			m = &ch->keys[idx[u]];
			switch (kind[u]) {
			case TDBC_OP_GET:
				if (!m->present) {
					CHECK_EQ(cqes[k].res, -ENOENT,
						 "async get of an absent key");
					break;
				}
				CHECK(cqes[k].res == 0 &&
				      cqes[k].vlen == m->len &&
				      !memcmp(cqes[k].val, m->val, m->len),
				      "async get of %s: res %s, %zu bytes "
				      "(want %u)", keys[u],
				      h_errname(cqes[k].res), cqes[k].vlen,
				      m->len);
				break;
			case TDBC_OP_PUT:
				CHECK_EQ(cqes[k].res, 0, "async put");
				model_set(m, reqs[u].val,
					  (uint32_t)reqs[u].vlen);
				break;
			case TDBC_OP_DEL:
				CHECK_EQ(cqes[k].res, m->present ? 0 : -ENOENT,
					 "async del");
				model_del(m);
				break;
			}
			got++;
		}
	}
	CHECK_EQ(tdbc_inflight(ch->c), 0, "requests in flight after a batch");
	free(vals);
	ch->rep.batches++;
}

/* --- accounts --------------------------------------------------------------- */

static void acct_value(char *out, uint32_t ver, uint32_t amt)
{
	sprintf(out, "%08u:%04u", ver, amt);
}

/* Read account q in table tb: version and amount. */
static void acct_read(struct child *ch, int q, unsigned int tb,
		      uint32_t *ver, uint32_t *amt)
{
	char key[32], val[32];
	int kl = sprintf(key, "acct:%02d", q);
	long n = tdbc_get(ch->bank[tb], NULL, key, (size_t)kl, val,
			  sizeof(val) - 1, NULL);
	unsigned int v, a;

	CHECK(n == 13, "get %s in bank_%c: %ld (%s; %s)", key, "ab"[tb], n,
	      h_errname((int)n), tdbc_errmsg(ch->c));
	val[n] = 0;
	CHECK(sscanf(val, "%u:%u", &v, &a) == 2 && a <= TOTAL,
	      "account %s holds '%s'", key, val);
	*ver = v;
	*amt = a;
}

static void op_transfer(struct child *ch)
{
	uint32_t v[2], a[2], x, tb;
	struct tdbc_txn *t = NULL;
	char key[32], val[2][32];
	int kl = sprintf(key, "acct:%02d", ch->p), err;

	for (tb = 0; tb < 2; tb++) {
		acct_read(ch, ch->p, tb, &v[tb], &a[tb]);
		CHECK(v[tb] == ch->ver && a[tb] == ch->amt[tb], "own account "
		      "in bank_%c: %u:%u, want %u:%u", "ab"[tb], v[tb], a[tb],
		      ch->ver, ch->amt[tb]);
	}
	/* a new split of TOTAL between a and b */
	x = rnd(ch, TOTAL + 1);
	a[0] = x;
	a[1] = TOTAL - x;
	err = tdbc_txn_begin(ch->c, &t);
	CHECK(err == 0, "txn_begin: %s", h_errname(err));
	for (tb = 0; tb < 2; tb++) {
		acct_value(val[tb], ch->ver + 1, a[tb]);
		err = tdbc_put(ch->bank[tb], t, key, (size_t)kl, val[tb], 13,
			       0);
		CHECK(err == 0, "put in transfer: %s (%s)", h_errname(err),
		      tdbc_errmsg(ch->c));
	}
	err = tdbc_txn_commit(t);
	CHECK(err == 0, "commit of a transfer: %s (%s)", h_errname(err),
	      tdbc_errmsg(ch->c));
	ch->ver++;
	ch->amt[0] = a[0];
	ch->amt[1] = a[1];
}

/* Three sequential reads of account q: x, y, x. */
static void op_audit(struct child *ch)
{
	int q = (int)rnd(ch, NPROC);
	unsigned int first = rnd(ch, 2);
	uint32_t v1, a1, v2, a2, v3, a3;

	acct_read(ch, q, first, &v1, &a1);
	acct_read(ch, q, !first, &v2, &a2);
	acct_read(ch, q, first, &v3, &a3);
	CHECK(v1 >= ch->seen[q] && v2 >= ch->seen[q] && v3 >= v1,
	      "account %d went back in time: seen %u, then %u, %u, %u", q,
	      ch->seen[q], v1, v2, v3);
	ch->seen[q] = v3 > v2 ? v3 : v2;
	if (v1 != v3) {
		ch->rep.audit_retries++;
		return;
	}
	CHECK(v2 == v1, "account %d: torn commit: bank_%c at version %u, "
	      "bank_%c at %u in between", q, "ab"[first], v1, "ab"[!first],
	      v2);
	CHECK(a1 == a3 && a1 + a2 == TOTAL, "account %d version %u: "
	      "%u + %u != %u", q, v1, a1, a2, TOTAL);
	ch->rep.audits++;
}

/* --- a child ------------------------------------------------------------------- */

/* (A function of its own: gcc's -Wstringop-overread under ASan takes
 * &ch->rep for a pointer to its first member.) */
static void send_report(int fd, const struct report *r)
{
	unsigned char buf[sizeof(*r)];

	memcpy(buf, r, sizeof(buf));
	CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf),
	      "report pipe");
}

static void child_run(struct child *ch, const char *sock, long ops,
		      int ready_fd, int go_fd, int rep_fd)
{
	unsigned int flags = ch->p % 2 ? TDBC_NO_RINGS : 0, i;
	static const char *const kvn[2] = { "kv0", "kv1" };
	static const char *const bn[2] = { "bank_a", "bank_b" };
	char msg[256], b;
	long k;
	int err;

	ch->buf = malloc(GETBUF);
	ch->vbuf = malloc(BIGVAL);
	CHECK(ch->buf && ch->vbuf, "out of memory");
	err = tdbc_connect(&ch->c, sock, flags, msg, sizeof(msg));
	CHECK(err == 0, "connect: %s (%s)", h_errname(err), msg);
	CHECK(tdbc_uses_rings(ch->c) == !flags, "rings: %d",
	      tdbc_uses_rings(ch->c));
	for (i = 0; i < 2; i++) {
		err = tdbc_table_open(ch->c, kvn[i], &ch->kv[i]);
		CHECK(err == 0, "open %s: %s", kvn[i], h_errname(err));
		err = tdbc_table_open(ch->c, bn[i], &ch->bank[i]);
		CHECK(err == 0, "open %s: %s", bn[i], h_errname(err));
	}
	ch->amt[0] = TOTAL;
	CHECK(write(ready_fd, "r", 1) == 1, "ready pipe");
	CHECK(read(go_fd, &b, 1) == 0, "go pipe");
	for (k = 0; k < ops; k++) {
		unsigned int r = rnd(ch, 100);

		if (r < 28)
			op_put(ch);
		else if (r < 50)
			op_get(ch);
		else if (r < 60)
			op_del(ch);
		else if (r < 65)
			op_scan(ch);
		else if (r < 72)
			op_txn(ch);
		else if (r < 80)
			op_transfer(ch);
		else if (r < 94)
			op_audit(ch);
		else
			op_batch(ch);
	}
	/* the end: every own key as the model says */
	ch->rep.p = ch->p;
	ch->rep.ops = (uint64_t)ops;
	ch->rep.ver = ch->ver;
	for (i = 0; i < NKEYS; i++) {
		char key[32];
		int kl = keyname(key, ch->p, i);

		check_get(ch, NULL, i, &ch->keys[i], "final get");
		if (!ch->keys[i].present)
			continue;
		ch->rep.count++;
		ch->rep.hash += h_fnv(h_fnv(0, key, (size_t)kl),
				      ch->keys[i].val, ch->keys[i].len);
		model_del(&ch->keys[i]);
	}
	send_report(rep_fd, &ch->rep);
	tdbc_close(ch->c);
	free(ch->buf);
	free(ch->vbuf);
}

/* --- the parent ------------------------------------------------------------------ */

static void setup_tables(struct tdbc *c)
{
	static const char *const names[] = { "kv0", "kv1", "bank_a",
					     "bank_b" };
	struct tdbc_table *ba, *bb;
	struct tdbc_txn *x = NULL;
	unsigned int i;
	int err;

	for (i = 0; i < 4; i++) {
		err = tdbc_table_create(c, names[i], NULL);
		CHECK(err == 0, "create %s: %s (%s)", names[i], h_errname(err),
		      tdbc_errmsg(c));
	}
	CHECK(tdbc_table_open(c, "bank_a", &ba) == 0, "open bank_a");
	CHECK(tdbc_table_open(c, "bank_b", &bb) == 0, "open bank_b");
	CHECK(tdbc_txn_begin(c, &x) == 0, "txn_begin");
	for (i = 0; i < NPROC; i++) {
		char key[32], va[32], vb[32];
		int kl = sprintf(key, "acct:%02u", i);

		acct_value(va, 0, TOTAL);
		acct_value(vb, 0, 0);
		CHECK(tdbc_put(ba, x, key, (size_t)kl, va, 13, 0) == 0,
		      "put account");
		CHECK(tdbc_put(bb, x, key, (size_t)kl, vb, 13, 0) == 0,
		      "put account");
	}
	err = tdbc_txn_commit(x);
	CHECK(err == 0, "commit of the accounts: %s", h_errname(err));
	tdbc_table_close(ba);
	tdbc_table_close(bb);
}

/* Scan a kv table whole: per child, count and hash. */
static void tally(struct tdbc *c, unsigned int tb, uint32_t *count,
		  uint64_t *hash)
{
	struct tdbc_table *t = NULL;
	struct tdbc_scan *s = NULL;
	const void *k, *v;
	size_t kl, vl;
	char name[8];
	int rc;

	sprintf(name, "kv%u", tb);
	CHECK(tdbc_table_open(c, name, &t) == 0, "open %s", name);
	rc = tdbc_scan_open(t, NULL, 0, 0, &s);
	CHECK(rc == 0, "scan_open %s: %s", name, h_errname(rc));
	while ((rc = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		char key[32];
		int p;
		unsigned int i;

		CHECK(kl < sizeof(key), "a %zu-byte key in %s", kl, name);
		memcpy(key, k, kl);
		key[kl] = 0;
		CHECK(sscanf(key, "p%d:k%u", &p, &i) == 2 && p >= 0 &&
		      p < NPROC && i < NKEYS && i % 2 == tb,
		      "a stranger key '%s' in %s", key, name);
		count[p]++;
		hash[p] += h_fnv(h_fnv(0, k, kl), v, vl);
	}
	CHECK(rc == 0, "scan_next %s: %s (%s)", name, h_errname(rc),
	      tdbc_errmsg(c));
	tdbc_scan_close(s);
	tdbc_table_close(t);
}

static void check_final(struct tdbc *c, const struct report *rep)
{
	uint32_t count[NPROC] = { 0 };
	uint64_t hash[NPROC] = { 0 };
	struct child probe = { .c = c, .p = -1 };
	uint64_t audits = 0, retries = 0, txns = 0, batches = 0;
	int p;

	tally(c, 0, count, hash);
	tally(c, 1, count, hash);
	CHECK(tdbc_table_open(c, "bank_a", &probe.bank[0]) == 0, "open");
	CHECK(tdbc_table_open(c, "bank_b", &probe.bank[1]) == 0, "open");
	for (p = 0; p < NPROC; p++) {
		uint32_t va, aa, vb, ab;

		CHECK(count[p] == rep[p].count && hash[p] == rep[p].hash,
		      "child %d's records: %u (hash %llx) in the tables, it "
		      "reported %u (hash %llx)", p, count[p],
		      (unsigned long long)hash[p], rep[p].count,
		      (unsigned long long)rep[p].hash);
		acct_read(&probe, p, 0, &va, &aa);
		acct_read(&probe, p, 1, &vb, &ab);
		CHECK(va == rep[p].ver && vb == rep[p].ver && aa + ab == TOTAL,
		      "account %d: a %u:%u b %u:%u, want version %u, sum %u",
		      p, va, aa, vb, ab, rep[p].ver, TOTAL);
		audits += rep[p].audits;
		retries += rep[p].audit_retries;
		txns += rep[p].txns;
		batches += rep[p].batches;
	}
	tdbc_table_close(probe.bank[0]);
	tdbc_table_close(probe.bank[1]);
	h_note("%d children: %llu consistent audits (%llu overlapped a "
	       "commit), %llu transactions, %llu batches", NPROC,
	       (unsigned long long)audits, (unsigned long long)retries,
	       (unsigned long long)txns, (unsigned long long)batches);
	/* an audit that saw nothing consistent checked nothing */
	CHECK(audits > (uint64_t)NPROC, "only %llu consistent audits",
	      (unsigned long long)audits);
}

int main(void)
{
	static const char *const args[] = { "--workers", "2",
		"--client-deadline", "60s", NULL };
	static struct report rep[NPROC];
	struct h_daemon d;
	struct tdbc_stats st;
	struct tdbc *c;
	pid_t pids[NPROC];
	int ready[2], go[2], reps[2], p, live = NPROC;
	long ops = h_scaled(3000, 100);
	uint64_t t0, deadline;
	char b;

	h_init("tdbd-concurrency", 600);
	h_start(&d, "tdbd", args);
	c = h_connect(&d, 0);
	setup_tables(c);
	CHECK(pipe(ready) == 0 && pipe(go) == 0 && pipe(reps) == 0, "pipe");
	for (p = 0; p < NPROC; p++) {
		pids[p] = fork();
		CHECK(pids[p] >= 0, "fork: %s", strerror(errno));
		if (pids[p] == 0) {
			struct child *ch = calloc(1, sizeof(*ch));

			CHECK(ch, "out of memory");
			close(ready[0]);
			close(go[1]);
			close(reps[0]);
			ch->p = p;
			ch->rnd = 0x9e3779b97f4a7c15ULL * (uint64_t)(p + 1);
			child_run(ch, d.sock, ops, ready[1], go[0], reps[1]);
			free(ch);
			_exit(0);
		}
		h_track(pids[p]);
	}
	close(ready[1]);
	close(go[0]);
	close(reps[1]);
	for (p = 0; p < NPROC; p++)
		CHECK(read(ready[0], &b, 1) == 1, "child %d never got ready "
		      "(a connect failed?)", p);
	h_stats(c, &st);
	CHECK(st.clients == NPROC + 1 && st.rings == 2 * (NPROC / 2 + 1),
	      "with every child connected: %u clients, %u rings (want %u, "
	      "%u)", st.clients, st.rings, NPROC + 1, 2 * (NPROC / 2 + 1));
	t0 = h_now_ms();
	close(go[1]);           /* go */
	deadline = t0 + 240000;
	while (live) {
		int status;
		pid_t r = waitpid(-1, &status, WNOHANG);

		if (r == 0) {
			CHECK(h_now_ms() < deadline, "children still running "
			      "after %llu ms", (unsigned long long)
			      (h_now_ms() - t0));
			h_sleep_ms(20);
			continue;
		}
		CHECK(r > 0, "waitpid: %s", strerror(errno));
		for (p = 0; p < NPROC && pids[p] != r; p++)
			;
		CHECK(p < NPROC, "an unknown child %d", (int)r);
		h_untrack(r);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %d (%s) failed: status %#x", p,
		      p % 2 ? "socket" : "rings", status);
		live--;
	}
	h_note("%d children x %ld operations in %llu ms", NPROC, ops,
	       (unsigned long long)(h_now_ms() - t0));
	for (p = 0; p < NPROC; p++) {
		struct report r;

		CHECK(read(reps[0], &r, sizeof(r)) == (ssize_t)sizeof(r) &&
		      r.p >= 0 && r.p < NPROC, "a child's report");
		rep[r.p] = r;
	}
	close(ready[0]);
	close(reps[0]);
	check_final(c, rep);
	h_stats(c, &st);
	h_print_stats("after", &st);
	CHECK(st.clients == 1 && st.rings == 2 && st.txns == 0 &&
	      st.dumps == 0 && st.throttled == 0 && st.watches == 0,
	      "gauges after the children left: clients %u rings %u txns %u "
	      "dumps %u throttled %u watches %u", st.clients, st.rings,
	      st.txns, st.dumps, st.throttled, st.watches);
	CHECK(st.violations == 0 && st.stuck == 0 && st.txns_aborted == 0,
	      "violations %llu stuck %llu txns_aborted %llu",
	      (unsigned long long)st.violations,
	      (unsigned long long)st.stuck,
	      (unsigned long long)st.txns_aborted);
	tdbc_close(c);
	h_stop(&d);
	h_done();
	return 0;
}
