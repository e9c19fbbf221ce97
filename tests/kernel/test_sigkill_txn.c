// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_sigkill_txn.c - a client dies (SIGKILL) inside a transaction: its
 * changes never become visible and the owner cleans up after it (STATS:
 * clients back where they were, cleanups and txns_aborted up by one).
 * Over rings (tdb.ko: /dev/tdb release) and TDBC_NO_RINGS (tdb.ko:
 * generic netlink socket release; tdbd: socket hang-up).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>

#include "kt.h"

#define NKEYS 50

static bool cleaned(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *b = arg;

	return st->clients == b->clients && st->txns == b->txns &&
	       st->txns_aborted == b->txns_aborted + 1 &&
	       st->cleanups >= b->cleanups + 1;
}

static bool child_in(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *b = arg;

	return st->txns == b->txns + 1 && st->clients == b->clients + 1;
}

static void one(const char *table, unsigned int flags)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	struct tdbc_stats before, st;
	char key[32], buf[64];
	int p[2], i, status;
	pid_t pid;
	long r;

	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	h_stats(c, &before);
	CHECK(pipe(p) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc *cc = kt_connect(flags);
		struct tdbc_table *ct = kt_open(cc, table);
		struct tdbc_txn *x;
		int err = tdbc_txn_begin(cc, &x);

		CHECK(err == 0, "txn begin: %s", h_errname(err));
		for (i = 0; i < NKEYS; i++) {
			int kl = snprintf(key, sizeof(key), "doomed-%d", i);

			err = tdbc_put(ct, x, key, kl, "never", 5, 0);
			CHECK(err == 0, "put in txn: %s", h_errname(err));
		}
		CHECK(write(p[1], "r", 1) == 1, "pipe");
		for (;;)
			pause();
	}
	h_track(pid);
	close(p[1]);
	CHECK(read(p[0], buf, 1) == 1, "the child died before its signal");
	close(p[0]);
	CHECK(h_wait_stats(c, &st, child_in, &before, 5000),
	      "the child's client and transaction are not in STATS "
	      "(clients %u txns %u, before %u %u)", st.clients, st.txns,
	      before.clients, before.txns);
	for (i = 0; i < NKEYS; i++) {
		int kl = snprintf(key, sizeof(key), "doomed-%d", i);

		r = tdbc_get(t, NULL, key, kl, buf, sizeof(buf), NULL);
		CHECK(r == -ENOENT, "uncommitted key visible: %ld", r);
	}
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "the child ended otherwise: %#x", status);
	if (!h_wait_stats(c, &st, cleaned, &before, 10000)) {
		h_print_stats("before", &before);
		h_print_stats("after", &st);
		CHECK(0, "no cleanup after the client's death (flags %#x)",
		      flags);
	}
	for (i = 0; i < NKEYS; i++) {
		int kl = snprintf(key, sizeof(key), "doomed-%d", i);

		r = tdbc_get(t, NULL, key, kl, buf, sizeof(buf), NULL);
		CHECK(r == -ENOENT, "aborted key visible: %ld", r);
	}
	struct tdbc_table_stat ts;

	CHECK(tdbc_table_stat(c, table, &ts) == 0 && ts.records == 0,
	      "the table holds %llu records", (unsigned long long)ts.records);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, table) == 0, "drop");
	tdbc_close(c);
	printf("sigkill-txn: flags %#x: cleaned up (txns_aborted %llu -> "
	       "%llu)\n", flags, (unsigned long long)before.txns_aborted,
	       (unsigned long long)st.txns_aborted);
}

int main(void)
{
	kt_init("sigkill-txn", 300);
	one("sk_rings", 0);
	one("sk_norings", TDBC_NO_RINGS);
	kt_done();
	return 0;
}
