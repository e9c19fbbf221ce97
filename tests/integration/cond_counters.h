/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cond_counters.h - contended counters (issue 24), shared by
 * test_counters.c (tdbd) and tests/kernel/test_kcond.c (both homes).
 *
 * N processes each add 1 to a few shared keys M times in all, by one of:
 *   CC_INCR      tdbc_incr (the owner adds: no read, no retry);
 *   CC_TXN_RUN   tdbc_txn_run of tdbc_get + tdbc_put(value + 1);
 *   CC_CAS       tdbc_get_ver, then tdbc_put_if(TDBC_IF_VERSION),
 *                again on -ECANCELED;
 *   CC_PLAIN     tdbc_txn_begin, get, put, commit, no retry: the commit
 *                either succeeds or says -ESTALE; never a silent loss;
 *   CC_BIG       tdbc_txn_run of get + put + CC_BIG_PAD puts of the
 *                process's own scratch keys in r->pad_table: a commit
 *                of two tables and over 64 changes,
 *                which tdbd runs on its committer thread, validated the
 *                same way.
 * Every increment that succeeded wrote (or, INCR, returned) value v; the
 * values one key took must be exactly 1..(its successes), each once
 * (a shared map of counts the children fill in), and the key's final
 * value must be its successes: N*M in all for the first three.  The
 * children count their retries (txn_run: runs of fn beyond one per
 * increment; CAS: -ECANCELED; plain: -ESTALE commits), and with more
 * than one process the caller asserts there were some: the totals
 * come out exact because conflicts were caught, not because none
 * happened.
 */
#ifndef TDB_ITEST_COND_COUNTERS_H
#define TDB_ITEST_COND_COUNTERS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>

#include "harness.h"

#define CC_MAXKEYS 8

enum cc_mode { CC_INCR, CC_TXN_RUN, CC_CAS, CC_PLAIN, CC_BIG };

static const char *const cc_mode_name[] = { "incr", "txn_run", "cas",
					    "plain txn", "big txn" };

#define CC_BIG_PAD 70

/* Connect (in a child too) or fail: the home's way. */
typedef struct tdbc *cc_connect_fn(unsigned int flags);

struct cc_report {
	uint64_t done[CC_MAXKEYS];      /* increments that took, per key */
	uint64_t retries;               /* conflicts seen */
	uint64_t exhausted;             /* txn_run: -ESTALE after its tries */
	uint64_t calls;                 /* txn_run: runs of fn */
};

struct cc_run {
	cc_connect_fn *connect;
	const char *table;
	const char *pad_table;          /* CC_BIG: the padding's table */
	enum cc_mode mode;
	int nproc;
	long per_proc;                  /* increments per process */
	int nkeys;                      /* 1..CC_MAXKEYS */
	const char *prefix;             /* key names: <prefix><i> */
	/* results */
	struct cc_report sum;
	double secs;
};

/* Canonical decimal of an s64 (the INCR encoding). */
static inline int cc_fmt(char *buf, size_t cap, int64_t v)
{
	return snprintf(buf, cap, "%" PRId64, v);
}

/* A value that must be a counter: its number, or fail. */
static inline int64_t cc_parse(const void *val, long len, const char *what)
{
	char tmp[32];
	char *end;
	long long v;

	CHECK(len > 0 && len < (long)sizeof(tmp), "%s: value of %ld bytes is "
	      "not a counter", what, len);
	memcpy(tmp, val, (size_t)len);
	tmp[len] = 0;
	v = strtoll(tmp, &end, 10);
	CHECK(*end == 0, "%s: value \"%s\" is not a counter", what, tmp);
	return v;
}

struct cc_child {
	bool big;               /* pad the transaction past 64 changes */
	struct tdbc *c;
	struct tdbc_table *t, *pad;
	char key[48];
	size_t klen;
	int64_t wrote;
	uint64_t calls;
	int p;
};

static inline int cc_txn_fn(struct tdbc_txn *x, void *arg)
{
	struct cc_child *ch = arg;
	char buf[32];
	long n;
	int err;

	ch->calls++;
	n = tdbc_get(ch->t, x, ch->key, ch->klen, buf, sizeof(buf), NULL);
	if (n < 0 && n != -ENOENT)
		return (int)n;
	ch->wrote = (n == -ENOENT ? 0 : cc_parse(buf, n, "txn_run get")) + 1;
	n = cc_fmt(buf, sizeof(buf), ch->wrote);
	err = tdbc_put(ch->t, x, ch->key, ch->klen, buf, (size_t)n, 0);
	for (n = 0; !err && ch->big && n < CC_BIG_PAD; n++) {
		char pad[48];
		int pl = snprintf(pad, sizeof(pad), "pad%d-%ld", ch->p, n);

		err = tdbc_put(ch->pad, x, pad, (size_t)pl, "padding", 7, 0);
	}
	return err;
}

/* One increment of key k; 1 if it took (ch->wrote: the value written),
 * 0 if the plain transaction lost (-ESTALE). */
static inline int cc_one(const struct cc_run *r, struct cc_child *ch,
			 struct cc_report *rep)
{
	char buf[32];
	uint64_t ver;
	long n;
	int err;

	switch (r->mode) {
	case CC_INCR: {
		int64_t res = 0;

		err = tdbc_incr(ch->t, NULL, ch->key, ch->klen, 1, &res);
		CHECK(err == 0, "incr %s: %s (%s)", ch->key, h_errname(err),
		      tdbc_errmsg(ch->c));
		ch->wrote = res;
		return 1;
	}
	case CC_TXN_RUN:
	case CC_BIG:
		ch->big = r->mode == CC_BIG;
		for (;;) {
			uint64_t c0 = ch->calls;

			err = tdbc_txn_run(ch->c, cc_txn_fn, ch, 0);
			rep->calls += ch->calls - c0;
			if (err == 0)
				return 1;
			CHECK(err == -ESTALE, "txn_run %s: %s (%s)", ch->key,
			      h_errname(err), tdbc_errmsg(ch->c));
			CHECK(ch->calls - c0 == TDBC_TXN_RUN_TRIES, "txn_run "
			      "gave -ESTALE after %" PRIu64 " runs of fn, "
			      "want %d", ch->calls - c0, TDBC_TXN_RUN_TRIES);
			rep->exhausted++;
		}
	case CC_CAS:
		for (;;) {
			n = tdbc_get_ver(ch->t, NULL, ch->key, ch->klen, buf,
					 sizeof(buf), NULL, &ver);
			CHECK(n >= 0, "cas get %s: %s (%s)", ch->key,
			      h_errname((int)n), tdbc_errmsg(ch->c));
			CHECK(ver != 0, "cas get %s: version 0", ch->key);
			ch->wrote = cc_parse(buf, n, "cas get") + 1;
			n = cc_fmt(buf, sizeof(buf), ch->wrote);
			err = tdbc_put_if(ch->t, NULL, ch->key, ch->klen, buf,
					  (size_t)n, TDBC_IF_VERSION, ver);
			if (err == 0)
				return 1;
			CHECK(err == -ECANCELED, "cas put %s at version %"
			      PRIu64 ": %s (%s)", ch->key, ver,
			      h_errname(err), tdbc_errmsg(ch->c));
			rep->retries++;
		}
	case CC_PLAIN: {
		struct tdbc_txn *x;

		err = tdbc_txn_begin(ch->c, &x);
		CHECK(err == 0, "begin: %s", h_errname(err));
		n = tdbc_get(ch->t, x, ch->key, ch->klen, buf, sizeof(buf),
			     NULL);
		CHECK(n >= 0, "plain get %s: %s (%s)", ch->key,
		      h_errname((int)n), tdbc_errmsg(ch->c));
		ch->wrote = cc_parse(buf, n, "plain get") + 1;
		n = cc_fmt(buf, sizeof(buf), ch->wrote);
		err = tdbc_put(ch->t, x, ch->key, ch->klen, buf, (size_t)n,
			       0);
		CHECK(err == 0, "plain put %s: %s", ch->key, h_errname(err));
		err = tdbc_txn_commit(x);
		if (err == 0)
			return 1;
		CHECK(err == -ESTALE, "plain commit %s: %s (%s), want 0 or "
		      "ESTALE", ch->key, h_errname(err), tdbc_errmsg(ch->c));
		CHECK(strstr(tdbc_errmsg(ch->c), r->table) &&
		      strstr(tdbc_errmsg(ch->c), ch->key),
		      "ESTALE's message \"%s\" does not name table %s and "
		      "key %s", tdbc_errmsg(ch->c), r->table, ch->key);
		rep->retries++;
		return 0;
	}
	}
	return 0;
}

/*
 * Run r (fork r->nproc children; even ones on rings, odd ones without),
 * check the exact totals and the values taken, and leave the summed
 * report in r->sum.  The keys are set to "0" first.
 */
static inline void cc_run(struct cc_run *r, struct tdbc *ctl)
{
	size_t slots = (size_t)r->nproc * (size_t)r->per_proc;
	size_t maplen = slots * CC_MAXKEYS;
	unsigned char *seen;
	struct tdbc_table *t;
	uint64_t t0;
	pid_t *pids;
	int (*pipes)[2];
	int p, k, err;

	CHECK(r->nkeys >= 1 && r->nkeys <= CC_MAXKEYS, "nkeys %d", r->nkeys);
	err = tdbc_table_open(ctl, r->table, &t);
	CHECK(err == 0, "open %s: %s", r->table, h_errname(err));
	for (k = 0; k < r->nkeys; k++) {
		char key[48];
		int kl = snprintf(key, sizeof(key), "%s%d", r->prefix, k);

		err = tdbc_put(t, NULL, key, (size_t)kl, "0", 1, 0);
		CHECK(err == 0, "put %s: %s", key, h_errname(err));
	}
	seen = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(seen != MAP_FAILED, "mmap");
	pids = calloc((size_t)r->nproc, sizeof(*pids));
	pipes = calloc((size_t)r->nproc, sizeof(*pipes));
	CHECK(pids && pipes, "out of memory");
	memset(&r->sum, 0, sizeof(r->sum));
	t0 = h_now_ms();
	for (p = 0; p < r->nproc; p++) {
		CHECK(pipe(pipes[p]) == 0, "pipe");
		pids[p] = fork();
		CHECK(pids[p] >= 0, "fork");
		if (pids[p] == 0) {
			struct cc_child ch = { .p = p };
			struct cc_report rep;
			long i;

			memset(&rep, 0, sizeof(rep));
			close(pipes[p][0]);
			ch.c = r->connect(p % 2 ? TDBC_NO_RINGS : 0);
			err = tdbc_table_open(ch.c, r->table, &ch.t);
			CHECK(err == 0, "child open: %s", h_errname(err));
			if (r->mode == CC_BIG) {
				err = tdbc_table_open(ch.c, r->pad_table,
						      &ch.pad);
				CHECK(err == 0, "child open %s: %s",
				      r->pad_table, h_errname(err));
			}
			for (i = 0; i < r->per_proc; i++) {
				/* a different order of keys per child */
				k = (int)((i + p) % r->nkeys);
				ch.klen = (size_t)snprintf(ch.key,
					sizeof(ch.key), "%s%d", r->prefix, k);
				if (!cc_one(r, &ch, &rep))
					continue;
				CHECK(ch.wrote >= 1 && (size_t)ch.wrote <= slots,
				      "%s: %s took value %" PRId64 ", outside "
				      "1..%zu", cc_mode_name[r->mode], ch.key,
				      ch.wrote, slots);
				__atomic_add_fetch(&seen[(size_t)k * slots +
					(size_t)ch.wrote - 1], 1,
					__ATOMIC_RELAXED);
				rep.done[k]++;
			}
			if (r->mode == CC_TXN_RUN || r->mode == CC_BIG)
				rep.retries = rep.calls - r->per_proc;
			tdbc_table_close(ch.t);
			if (ch.pad)
				tdbc_table_close(ch.pad);
			tdbc_close(ch.c);
			CHECK(write(pipes[p][1], &rep, sizeof(rep)) ==
			      (ssize_t)sizeof(rep), "report");
			_exit(0);
		}
		h_track(pids[p]);
		close(pipes[p][1]);
	}
	for (p = 0; p < r->nproc; p++) {
		struct cc_report rep;
		int st;

		CHECK(read(pipes[p][0], &rep, sizeof(rep)) ==
		      (ssize_t)sizeof(rep), "%s: child %d gave no report",
		      cc_mode_name[r->mode], p);
		close(pipes[p][0]);
		CHECK(waitpid(pids[p], &st, 0) == pids[p], "waitpid");
		h_untrack(pids[p]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child %d "
		      "failed", cc_mode_name[r->mode], p);
		for (k = 0; k < r->nkeys; k++)
			r->sum.done[k] += rep.done[k];
		r->sum.retries += rep.retries;
		r->sum.exhausted += rep.exhausted;
		r->sum.calls += rep.calls;
	}
	r->secs = (double)(h_now_ms() - t0) / 1000.0;

	for (k = 0; k < r->nkeys; k++) {
		char key[48], buf[32];
		int kl = snprintf(key, sizeof(key), "%s%d", r->prefix, k);
		uint64_t want = r->sum.done[k], ver = 0;
		long n = tdbc_get_ver(t, NULL, key, (size_t)kl, buf,
				      sizeof(buf), NULL, &ver);
		int64_t got;
		size_t i;

		CHECK(n > 0, "final get %s: %s", key, h_errname((int)n));
		got = cc_parse(buf, n, "final get");
		CHECK(got >= 0 && (uint64_t)got == want, "%s: %s is %" PRId64
		      " after %" PRIu64 " increments that took (%d processes "
		      "x %ld): %" PRId64 " lost", cc_mode_name[r->mode], key,
		      got, want, r->nproc, r->per_proc,
		      (int64_t)want - got);
		CHECK(ver != 0, "final get %s: version 0", key);
		for (i = 0; i < slots; i++) {
			unsigned char s = seen[(size_t)k * slots + i];

			CHECK(s == (i < want), "%s: %s took the value %zu %u "
			      "times, want %u (%" PRIu64 " increments)",
			      cc_mode_name[r->mode], key, i + 1, s,
			      i < want, want);
		}
	}
	if (r->mode != CC_PLAIN) {
		uint64_t all = 0;

		for (k = 0; k < r->nkeys; k++)
			all += r->sum.done[k];
		CHECK(all == slots, "%s: %" PRIu64 " increments, want %zu",
		      cc_mode_name[r->mode], all, slots);
	}
	tdbc_table_close(t);
	munmap(seen, maplen);
	free(pids);
	free(pipes);
}

/* The totals in one line. */
static inline void cc_print(const char *who, const struct cc_run *r)
{
	uint64_t all = 0;
	int k;

	for (k = 0; k < r->nkeys; k++)
		all += r->sum.done[k];
	printf("%s: %s, %d processes x %ld on %d key(s): %" PRIu64
	       " took, %" PRIu64 " conflicts%s, %.2f s\n", who,
	       cc_mode_name[r->mode], r->nproc, r->per_proc, r->nkeys, all,
	       r->sum.retries, r->sum.exhausted ? " (txn_run gave up "
	       "sometimes)" : "", r->secs);
	fflush(stdout);
}

#endif
