// SPDX-License-Identifier: GPL-2.0-only
/*
 * check.c - tests/kafka's reader of the replica while it is applied:
 * key "c" of tables mono and mono2 (load.c writes both in every
 * transaction, to one increasing number), read in one transaction
 * (serializable: a commit that returns 0 saw one state) over and over
 * until the file STOP exists.  A violation: the two differ (a
 * transaction seen half applied) or the number goes down (an older
 * change applied over a newer one: a duplicate not dropped, a reorder).
 *
 *   kafka_check SOCKET STOP
 * Prints "reads N, last V, violations K"; exit 0, or 1 if K > 0 or a
 * call failed (named).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tdb/client.h>

static long get(struct tdbc_table *t, struct tdbc_txn *txn, char *buf,
		size_t cap)
{
	long n = tdbc_get(t, txn, "c", 1, buf, cap - 1, NULL);

	if (n >= 0)
		buf[n] = 0;
	return n;
}

int main(int argc, char **argv)
{
	struct tdbc_table *a = NULL, *b = NULL;
	unsigned long long last = 0, reads = 0, bad = 0;
	char err[256], va[64], vb[64];
	struct tdbc *c;
	int e;

	if (argc != 3) {
		fprintf(stderr, "usage: kafka_check SOCKET STOP\n");
		return 2;
	}
	if ((e = tdbc_connect(&c, argv[1], 0, err, sizeof(err)))) {
		fprintf(stderr, "kafka_check: %s\n", err);
		return 1;
	}
	while (access(argv[2], F_OK)) {
		struct tdbc_txn *txn;
		long na, nb;

		if (!a && tdbc_table_open(c, "mono", &a))
			a = NULL;
		if (!b && tdbc_table_open(c, "mono2", &b))
			b = NULL;
		if (!a || !b) {
			usleep(10000);
			continue;
		}
		if ((e = tdbc_txn_begin(c, &txn))) {
			fprintf(stderr, "kafka_check: begin: %s\n",
				tdbc_strerror(e));
			return 1;
		}
		na = get(a, txn, va, sizeof(va));
		nb = get(b, txn, vb, sizeof(vb));
		e = tdbc_txn_commit(txn);
		if (e == -ESTALE)
			continue;
		if (e || (na < 0 && na != -ENOENT) ||
		    (nb < 0 && nb != -ENOENT)) {
			fprintf(stderr, "kafka_check: read: %s\n",
				tdbc_strerror(e ? e : na < 0 ? (int)na :
					      (int)nb));
			return 1;
		}
		reads++;
		if ((na < 0) != (nb < 0) || (na >= 0 && strcmp(va, vb))) {
			if (bad++ < 5)
				fprintf(stderr, "kafka_check: mono %s, mono2 "
					"%s: a transaction half applied\n",
					na < 0 ? "absent" : va,
					nb < 0 ? "absent" : vb);
			continue;
		}
		if (na >= 0) {
			unsigned long long v = strtoull(va, NULL, 10);

			if (v < last && bad++ < 5)
				fprintf(stderr, "kafka_check: %llu after "
					"%llu: the replica went back\n", v,
					last);
			last = v;
		}
	}
	if (a)
		tdbc_table_close(a);
	if (b)
		tdbc_table_close(b);
	tdbc_close(c);
	printf("reads %llu, last %llu, violations %llu\n", reads, last, bad);
	return bad ? 1 : 0;
}
