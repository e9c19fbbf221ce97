// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_multiproc.c - N processes at once on one table: each puts and
 * reads back its own keys, overwrites a set of shared keys, and races
 * the others to claim keys with NOOVERWRITE (exactly one winner each).
 * Run with every process on rings, then every process on TDBC_NO_RINGS
 * (tdb.ko: generic netlink; tdbd: its socket), then a mix.  At the end
 * the counts must add up: the table's records, a scan, the claims won.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>

#include "kt.h"

#define NPROC   4
#define NSHARED 64
#define NCLAIM  200

static long own_keys;

/* A child: returns the number of claims it won through its exit code's
 * pipe (wfd); CHECK() failures exit 1. */
static void child(int n, const char *table, unsigned int flags, int wfd)
{
	struct tdbc *c = kt_connect(flags);
	struct tdbc_table *t = kt_open(c, table);
	char key[64], val[128], got[128];
	long i, won = 0, r;
	int err;

	for (i = 0; i < own_keys; i++) {
		int kl = snprintf(key, sizeof(key), "own-%d-%ld", n, i);
		int vl = snprintf(val, sizeof(val), "value %d %ld %s", n, i,
				  i % 3 ? "x" : "a longer value for variety");

		err = tdbc_put(t, NULL, key, kl, val, vl, 0);
		CHECK(err == 0, "put %s: %s", key, h_errname(err));
		if (i % 8 == 0) {
			kl = snprintf(key, sizeof(key), "shared-%ld",
				      (i / 8) % NSHARED);
			vl = snprintf(val, sizeof(val), "by %d at %ld", n, i);
			err = tdbc_put(t, NULL, key, kl, val, vl, 0);
			CHECK(err == 0, "put %s: %s", key, h_errname(err));
		}
		if (i < NCLAIM) {
			kl = snprintf(key, sizeof(key), "claim-%ld", i);
			vl = snprintf(val, sizeof(val), "%d", n);
			err = tdbc_put(t, NULL, key, kl, val, vl,
				       TDBC_NOOVERWRITE);
			CHECK(err == 0 || err == -EEXIST, "claim %s: %s", key,
			      h_errname(err));
			won += err == 0;
		}
	}
	for (i = 0; i < own_keys; i++) {
		int kl = snprintf(key, sizeof(key), "own-%d-%ld", n, i);
		int vl = snprintf(val, sizeof(val), "value %d %ld %s", n, i,
				  i % 3 ? "x" : "a longer value for variety");

		r = tdbc_get(t, NULL, key, kl, got, sizeof(got), NULL);
		CHECK(r == vl && !memcmp(got, val, vl), "get %s: %ld", key,
		      r);
	}
	tdbc_table_close(t);
	tdbc_close(c);
	CHECK(write(wfd, &won, sizeof(won)) == sizeof(won), "pipe");
	_exit(0);
}

static void round_of(const char *table, const unsigned int *flags)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	struct tdbc_table_stat st;
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	long won, total = 0, scanned = 0, claims = 0, i;
	pid_t pids[NPROC];
	int p[2], n, status, err;
	char key[32], val[32];

	kt_create(c, table, 0600, 0);
	CHECK(pipe(p) == 0, "pipe");
	for (n = 0; n < NPROC; n++) {
		pids[n] = fork();
		CHECK(pids[n] >= 0, "fork");
		if (pids[n] == 0) {
			close(p[0]);
			child(n, table, flags[n], p[1]);
		}
		h_track(pids[n]);
	}
	close(p[1]);
	for (n = 0; n < NPROC; n++) {
		CHECK(waitpid(pids[n], &status, 0) == pids[n], "waitpid");
		h_untrack(pids[n]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child %d (flags %#x) failed: status %#x", n, flags[n],
		      status);
	}
	for (n = 0; n < NPROC; n++) {
		CHECK(read(p[0], &won, sizeof(won)) == sizeof(won),
		      "a child's count is missing");
		total += won;
	}
	close(p[0]);
	CHECK(total == NCLAIM, "%ld claims won, want exactly %d", total,
	      NCLAIM);

	t = kt_open(c, table);
	err = tdbc_table_stat(c, table, &st);
	CHECK(err == 0, "stat: %s", h_errname(err));
	CHECK(st.records == (uint64_t)(NPROC * own_keys + NSHARED + NCLAIM),
	      "%llu records, want %ld", (unsigned long long)st.records,
	      NPROC * own_keys + NSHARED + NCLAIM);
	err = tdbc_scan_open(t, NULL, 0, 0, &s);
	CHECK(err == 0, "scan: %s", h_errname(err));
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1) {
		scanned++;
		if (kl > 6 && !memcmp(k, "claim-", 6)) {
			claims++;
			CHECK(vl == 1 && *(const char *)v >= '0' &&
			      *(const char *)v < '0' + NPROC,
			      "a claim's value is not a process number");
		}
		if (kl > 7 && !memcmp(k, "shared-", 7))
			CHECK(vl > 3 && !memcmp(v, "by ", 3),
			      "a shared key's value is torn");
	}
	CHECK(err == 0, "scan next: %s", h_errname(err));
	tdbc_scan_close(s);
	CHECK(scanned == (long)st.records && claims == NCLAIM,
	      "scan: %ld records (%ld claims)", scanned, claims);
	/* the claims' winners agree with what each claimant was told */
	for (i = 0; i < NCLAIM; i++) {
		int l = snprintf(key, sizeof(key), "claim-%ld", i);

		CHECK(tdbc_get(t, NULL, key, l, val, sizeof(val), NULL) == 1,
		      "claim %ld", i);
	}
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	CHECK(err == 0, "drop: %s", h_errname(err));
	tdbc_close(c);
	printf("multiproc: %s: %d processes, %ld own keys each, claims %ld/%d\n",
	       table, NPROC, own_keys, total, NCLAIM);
}

int main(void)
{
	static const unsigned int rings[NPROC] = { 0, 0, 0, 0 };
	static const unsigned int norings[NPROC] = {
		TDBC_NO_RINGS, TDBC_NO_RINGS, TDBC_NO_RINGS, TDBC_NO_RINGS };
	static const unsigned int mixed[NPROC] = {
		0, TDBC_NO_RINGS, 0, TDBC_NO_RINGS };

	kt_init("multiproc", 900);
	own_keys = h_scaled(2000, 600); /* >= 8 * NSHARED */
	round_of("mp_rings", rings);
	round_of("mp_norings", norings);
	round_of("mp_mixed", mixed);
	kt_done();
	return 0;
}
