// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_cond_model.c - versions, conditional writes, INCR and
 * serializable transactions against a reference model (issue 24;
 * cond_model.h says what is checked and how the check stays exact).
 *
 *  single  one driver, three connections (rings, rings without maps,
 *          the socket) in a random interleaving, OPS steps; then tdbd
 *          SIGKILLed and restarted, then stopped and restarted: each
 *          time every key, value and version is the model's, and OPS/10
 *          more steps run (new versions above all the old ones);
 *  procs   3 drivers in 3 processes at once on their own keys of the
 *          same two tables (each model exact: nobody else writes its
 *          keys), OPS/2 steps each, while a 4th process INCRs a key of
 *          both tables and reads both in read-only transactions;
 *  restart tdbd stopped and started again: every key, value and
 *          version the model knows is the same after, a CAS with a
 *          version read before the restart still decides after it
 *          (the right one succeeds, an old one is -ECANCELED), and the
 *          versions given after are higher than every one before.
 *
 * Usage: itest_cond_model [SEED [OPS]]; also $TDB_CMODEL_SEED and
 * $TDB_CMODEL_OPS (default 1 and 10000, scaled).  The seed is printed;
 * every failure names it and the step.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "cond_model.h"

static struct h_daemon d;

static struct tdbc *connect_d(unsigned int flags)
{
	return h_connect(&d, flags);
}

/* The 4th process of `procs`: INCR "shared" in both tables, and read
 * both in a read-only transaction: when it commits, they must be
 * equal (each INCR pair is one transaction). */
static void pair_worker(long rounds)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table *t[2];
	long i, ok = 0, stale = 0;
	int err;

	CHECK(tdbc_table_open(c, "cm_a", &t[0]) == 0, "open");
	CHECK(tdbc_table_open(c, "cm_b", &t[1]) == 0, "open");
	for (i = 0; i < rounds; i++) {
		struct tdbc_txn *x;
		char a[32], b[32];
		long na, nb;

		CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
		CHECK(tdbc_incr(t[0], x, "shared", 6, 1, NULL) == 0, "incr");
		CHECK(tdbc_incr(t[1], x, "shared", 6, 1, NULL) == 0, "incr");
		err = tdbc_txn_commit(x);
		CHECK(err == 0 || err == -ESTALE, "commit: %s",
		      h_errname(err));
		CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
		na = tdbc_get(t[0], x, "shared", 6, a, sizeof(a), NULL);
		nb = tdbc_get(t[1], x, "shared", 6, b, sizeof(b), NULL);
		err = tdbc_txn_commit(x);
		if (err == -ESTALE) {
			stale++;
			continue;
		}
		CHECK(err == 0, "read-only commit: %s", h_errname(err));
		CHECK(na > 0 && na == nb && !memcmp(a, b, (size_t)na),
		      "a read-only transaction committed having read "
		      "shared=%.*s and %.*s", (int)na, a, (int)nb, b);
		ok++;
	}
	printf("pair worker: %ld read-only commits saw equal pairs, %ld "
	       "stale\n", ok, stale);
	tdbc_close(c);
}

/* One driver; then tdbd SIGKILLed and restarted (the WAL replayed):
 * every key, value and version the model knows is the same, and it
 * goes on (versions after above all before); then a clean restart (a
 * checkpoint) and the same. */
static void single(uint64_t seed, long ops)
{
	static const char *const args[] = { "--sync", "none", NULL };
	struct cm *m = cm_open(connect_d, seed, "s0");
	int round;

	cm_steps(m, ops);
	cm_final(m);
	for (round = 0; round < 2 && h_want("restart"); round++) {
		if (round == 0) {
			CHECK(kill(d.pid, SIGKILL) == 0, "kill");
			CHECK(h_wait_exit(&d, 10000), "tdbd did not die");
		} else {
			h_stop(&d);
		}
		h_start(&d, "cm", args);
		cm_connect(m, connect_d);
		cm_final(m);
		cm_steps(m, ops / 10);
		cm_final(m);
		printf("cond-model: after %s and a restart every key, value "
		       "and version the same, %ld steps more\n",
		       round ? "SIGTERM" : "SIGKILL", ops / 10);
	}
	cm_print(m);
	cm_close(m);
}

static void procs(uint64_t seed, long ops)
{
	pid_t pid[4];
	int p, st;

	for (p = 0; p < 4; p++) {
		pid[p] = fork();
		CHECK(pid[p] >= 0, "fork");
		if (pid[p] == 0) {
			char prefix[8];

			if (p == 3) {
				pair_worker(ops / 10 + 10);
				_exit(0);
			}
			snprintf(prefix, sizeof(prefix), "p%d", p);
			cm_run(connect_d, seed + (uint64_t)p * 7919, prefix,
			       ops);
			_exit(0);
		}
		h_track(pid[p]);
	}
	for (p = 0; p < 4; p++) {
		CHECK(waitpid(pid[p], &st, 0) == pid[p], "waitpid");
		h_untrack(pid[p]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "driver %d "
		      "failed (seed %" PRIu64 ")", p,
		      seed + (uint64_t)p * 7919);
	}
}

/* Versions across a restart: kill (the WAL replayed) or stop (a
 * checkpoint written). */
static void restart_one(bool kill9)
{
	static const char *const args[] = { "--sync", "none", NULL };
	const char *how = kill9 ? "SIGKILL" : "SIGTERM";
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table *t;
	uint64_t v1 = 0, v2 = 0, v3 = 0, vd = 0;
	char buf[32];
	long n;
	int err;

	CHECK(tdbc_table_open(c, "cm_a", &t) == 0, "open");
	(void)tdbc_del(t, NULL, "r1", 2);
	CHECK(tdbc_put(t, NULL, "r1", 2, "one", 3, 0) == 0, "put");
	n = tdbc_get_ver(t, NULL, "r1", 2, buf, sizeof(buf), NULL, &v1);
	CHECK(n == 3 && v1, "get r1: %ld", n);
	CHECK(tdbc_put(t, NULL, "r1", 2, "two", 3, 0) == 0, "put");
	n = tdbc_get_ver(t, NULL, "r1", 2, buf, sizeof(buf), NULL, &v2);
	CHECK(n == 3 && v2 > v1, "get r1: %ld, versions %" PRIu64 " then %"
	      PRIu64, n, v1, v2);
	/* a key deleted before the restart: made again after it, its
	 * version must be above the delete's */
	CHECK(tdbc_put(t, NULL, "r2", 2, "x", 1, 0) == 0, "put");
	n = tdbc_get_ver(t, NULL, "r2", 2, buf, sizeof(buf), NULL, &vd);
	CHECK(n == 1, "get r2");
	CHECK(tdbc_del(t, NULL, "r2", 2) == 0, "del");
	tdbc_table_close(t);
	tdbc_close(c);

	if (kill9) {
		CHECK(kill(d.pid, SIGKILL) == 0, "kill");
		CHECK(h_wait_exit(&d, 10000), "tdbd did not die");
	} else {
		h_stop(&d);
	}
	h_start(&d, "cm", args);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_open(c, "cm_a", &t) == 0, "open");
	n = tdbc_get_ver(t, NULL, "r1", 2, buf, sizeof(buf), NULL, &v3);
	CHECK(n == 3 && !memcmp(buf, "two", 3) && v3 == v2, "after %s and "
	      "a restart r1 is %.*s at version %" PRIu64 ", want two at %"
	      PRIu64, how, (int)(n > 0 ? n : 0), buf, v3, v2);
	err = tdbc_put_if(t, NULL, "r1", 2, "three", 5, TDBC_IF_VERSION, v1);
	CHECK(err == -ECANCELED, "CAS with the older version after %s and a "
	      "restart: %s, want ECANCELED", how, h_errname(err));
	err = tdbc_put_if(t, NULL, "r1", 2, "three", 5, TDBC_IF_VERSION, v2);
	CHECK(err == 0, "CAS with the version read before %s and a restart: "
	      "%s (%s)", how, h_errname(err), tdbc_errmsg(c));
	n = tdbc_get_ver(t, NULL, "r1", 2, buf, sizeof(buf), NULL, &v3);
	CHECK(n == 5 && v3 > v2, "r1 after the CAS: version %" PRIu64
	      ", want above %" PRIu64, v3, v2);
	CHECK(tdbc_put(t, NULL, "r2", 2, "y", 1, 0) == 0, "put");
	n = tdbc_get_ver(t, NULL, "r2", 2, buf, sizeof(buf), NULL, &v3);
	CHECK(n == 1 && v3 > vd && v3 > v2, "r2 made again after %s and a "
	      "restart: version %" PRIu64 ", it had %" PRIu64 " before its "
	      "delete", how, v3, vd);
	tdbc_table_close(t);
	tdbc_close(c);
	printf("restart (%s): versions kept, a CAS with a version from "
	       "before decides after, new versions above the old\n", how);
}

int main(int argc, char **argv)
{
	static const char *const args[] = { "--sync", "none", NULL };
	const char *es = getenv("TDB_CMODEL_SEED"),
		   *eo = getenv("TDB_CMODEL_OPS");
	uint64_t seed = es ? strtoull(es, NULL, 0) : 1;
	long ops = eo ? atol(eo) : h_scaled(10000, 1000);
	struct tdbc *c;
	int tb;

	h_init("cond-model", h_sanitized() ? 600 : 150);
	if (argc > 1)
		seed = strtoull(argv[1], NULL, 0);
	if (argc > 2)
		ops = atol(argv[2]);
	printf("cond-model: seed %" PRIu64 ", %ld steps\n", seed, ops);
	fflush(stdout);
	h_start(&d, "cm", args);
	c = h_connect(&d, 0);
	for (tb = 0; tb < CM_TABLES; tb++)
		CHECK(tdbc_table_create(c, cm_tname[tb], NULL) == 0, "create");
	tdbc_close(c);
	if (h_want("single") || h_want("restart"))
		single(seed, ops);
	if (h_want("procs"))
		procs(seed, ops / 2);
	if (h_want("restart")) {
		restart_one(true);
		restart_one(false);
	}
	h_stop(&d);
	h_done();
	return 0;
}
