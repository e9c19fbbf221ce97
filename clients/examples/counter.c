// SPDX-License-Identifier: MIT
/*
 * counter.c - shared counters that lose no update, on libtdbclient.
 *
 * PROCS processes (default 4) each add 1 to three counters ROUNDS times
 * (default 1000), each counter its own way:
 *   "incr"  tdbc_incr: the owner adds in one step (the simplest);
 *   "txn"   tdbc_txn_run: read, add, write in a transaction, which the
 *           owner runs again (after a backoff) if another client
 *           changed the counter between our read and our commit;
 *   "cas"   a compare-and-swap loop: tdbc_get_ver, then tdbc_put_if
 *           with TDBC_IF_VERSION, again on -ECANCELED.
 * Then it prints the three counters: each must be PROCS x ROUNDS.  Exit
 * status 0 if they are, 1 otherwise.  The values are decimal text, as
 * tdbc_incr keeps them, so `tdb get counters incr` shows them too.
 *
 * Build it against the installed library (package libtdbclient-dev):
 *
 *     cc -o counter counter.c $(pkg-config --cflags --libs tdbclient)
 *
 * Run it:
 *
 *     ./counter [SOCKET [PROCS [ROUNDS]]]
 *
 * It uses the table "counters" (created 0600 if absent) and starts its
 * counters from what they hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>

static const char *table = "counters";

static int fail(struct tdbc *c, const char *what, int err)
{
	const char *msg = c ? tdbc_errmsg(c) : "";

	fprintf(stderr, "counter: %s: %s%s%s\n", what, tdbc_strerror(err),
		msg[0] ? ": " : "", msg);
	return 1;
}

/* The counter key as a number (absent: 0); *version its version (0:
 * absent).  0 or a negative errno. */
static int read_num(struct tdbc_table *t, struct tdbc_txn *txn,
		    const char *key, int64_t *num, uint64_t *version)
{
	char buf[32];
	long n = tdbc_get_ver(t, txn, key, strlen(key), buf, sizeof(buf) - 1,
			      NULL, version);

	if (n == -ENOENT) {
		*num = 0;
		return 0;
	}
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	*num = strtoll(buf, NULL, 10);
	return 0;
}

/* "txn": a transaction that reads the counter and writes it plus one. */
static int add_one(struct tdbc_txn *txn, void *arg)
{
	struct tdbc_table *t = arg;
	uint64_t v;
	int64_t n = 0;
	char buf[32];
	int err = read_num(t, txn, "txn", &n, &v);

	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%" PRId64, n + 1);
	return tdbc_put(t, txn, "txn", 3, buf, strlen(buf), 0);
}

/* "cas": read the version, write only if it is still the same. */
static int cas_add_one(struct tdbc_table *t)
{
	uint64_t v;
	int64_t n = 0;
	char buf[32];
	int err;

	for (;;) {
		err = read_num(t, NULL, "cas", &n, &v);
		if (err)
			return err;
		snprintf(buf, sizeof(buf), "%" PRId64, n + 1);
		/* absent: only if still absent; else only at version v */
		err = tdbc_put_if(t, NULL, "cas", 3, buf, strlen(buf),
				  v ? TDBC_IF_VERSION : TDBC_IF_ABSENT, v);
		if (err != -ECANCELED && err != -EEXIST)
			return err;     /* 0, or a real error */
		/* someone was first: read again */
	}
}

static int worker(const char *path, int rounds)
{
	struct tdbc_table *t;
	struct tdbc *c = NULL;
	char errmsg[256];
	int i, err;

	/* after fork: a connection of our own */
	err = tdbc_connect(&c, path, 0, errmsg, sizeof(errmsg));
	if (err) {
		fprintf(stderr, "counter: %s\n", errmsg);
		return 1;
	}
	if ((err = tdbc_table_open(c, table, &t)))
		return fail(c, "open", err);
	for (i = 0; i < rounds; i++) {
		if ((err = tdbc_incr(t, NULL, "incr", 4, 1, NULL)))
			return fail(c, "incr", err);
		if ((err = tdbc_txn_run(c, add_one, t, 0)))
			return fail(c, "txn", err);
		if ((err = cas_add_one(t)))
			return fail(c, "cas", err);
	}
	tdbc_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 && argv[1][0] ? argv[1] : NULL;
	int procs = argc > 2 ? atoi(argv[2]) : 4;
	int rounds = argc > 3 ? atoi(argv[3]) : 1000;
	static const char *const keys[] = { "incr", "txn", "cas" };
	int64_t before[3], after[3];
	struct tdbc_table_opts o;
	struct tdbc_table *t;
	struct tdbc *c = NULL;
	char errmsg[256];
	uint64_t v;
	int i, st, err, rc = 0;

	if (procs < 1 || rounds < 1) {
		fprintf(stderr, "usage: counter [SOCKET [PROCS [ROUNDS]]]\n");
		return 2;
	}
	err = tdbc_connect(&c, path, 0, errmsg, sizeof(errmsg));
	if (err) {
		fprintf(stderr, "counter: %s\n", errmsg);
		return 1;
	}
	tdbc_table_opts_init(&o);
	o.mode = 0600;
	err = tdbc_table_create(c, table, &o);
	if (err && err != -EEXIST)
		return fail(c, "create", err);
	if ((err = tdbc_table_open(c, table, &t)))
		return fail(c, "open", err);
	for (i = 0; i < 3; i++)
		if ((err = read_num(t, NULL, keys[i], &before[i], &v)))
			return fail(c, keys[i], err);

	for (i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("counter: fork");
			return 1;
		}
		if (pid == 0)
			_exit(worker(path, rounds));
	}
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;

	for (i = 0; i < 3; i++) {
		if ((err = read_num(t, NULL, keys[i], &after[i], &v)))
			return fail(c, keys[i], err);
		printf("%-4s %" PRId64 " (+%" PRId64 ", version %" PRIu64
		       ")\n", keys[i], after[i], after[i] - before[i], v);
		if (after[i] - before[i] != (int64_t)procs * rounds)
			rc = 1;
	}
	printf("%s: %d processes x %d rounds, each counter +%d\n",
	       rc ? "LOST UPDATES" : "ok", procs, rounds, procs * rounds);
	tdbc_close(c);
	return rc;
}
