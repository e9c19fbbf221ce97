// SPDX-License-Identifier: GPL-2.0-only
/*
 * load.c - the random load of tests/kafka: single puts and deletes,
 * transactions over several tables, puts with deadlines, tables
 * created (hash and ordered) and dropped, on tdbd through libtdbclient.
 *
 *   kafka_load SOCKET SEED OPS [VALUE_BYTES]
 * Exit 0, or 1 with the failed call named.  Tables t0..t5; a dropped
 * table is created again later (the applier sees drop, create, puts).
 * Every transaction also puts key "c" of tables mono and mono2 to the
 * same increasing number (SEED * 10^9 + its index, 20 digits): check.c
 * reads them on the replica, where they must be equal (no transaction
 * half applied) and never go down (nothing older over newer).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tdb/client.h>

#define NTAB 6

static struct tdbc *c;
static struct tdbc_table *tab[NTAB];
static unsigned long long rng;
static int pad;         /* values padded to this many bytes (< 4096) */

static unsigned int rnd(unsigned int n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned int)((rng >> 33) % n);
}

static int die(const char *what, int e)
{
	fprintf(stderr, "kafka_load: %s: %s (%s)\n", what, tdbc_strerror(e),
		tdbc_errmsg(c));
	exit(1);
}

static void name(char *buf, int i)
{
	snprintf(buf, 16, "t%d", i);
}

static struct tdbc_table *mono[2];

static void mono_open(void)
{
	static const char *const names[2] = { "mono", "mono2" };
	int e;

	for (int i = 0; i < 2; i++) {
		e = tdbc_table_create(c, names[i], NULL);
		if (e && e != -EEXIST)
			die("create mono", e);
		if ((e = tdbc_table_open(c, names[i], &mono[i])))
			die("open mono", e);
	}
}

static void mono_put(struct tdbc_txn *txn, unsigned long long v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%020llu", v), e;

	for (int i = 0; i < 2; i++)
		if ((e = tdbc_put(mono[i], txn, "c", 1, buf, (size_t)n, 0)))
			die("mono put", e);
}

static void ensure(int i)
{
	struct tdbc_table_opts o;
	char n[16];
	int e;

	if (tab[i])
		return;
	name(n, i);
	tdbc_table_opts_init(&o);
	if (i % 3 == 2)
		o.flags = TDBC_TABLE_ORDERED;
	e = tdbc_table_create(c, n, &o);
	if (e && e != -EEXIST)
		die("create", e);
	if ((e = tdbc_table_open(c, n, &tab[i])))
		die("open", e);
}

static void one(struct tdbc_txn *txn)
{
	int i = (int)rnd(NTAB), e;
	char k[32], v[4096];
	int kl, vl;

	ensure(i);
	kl = snprintf(k, sizeof(k), "k%u", rnd(200));
	vl = snprintf(v, sizeof(v), "v%u-%u", rnd(1000000), rnd(10));
	if (vl < pad) {
		memset(v + vl, 'x', (size_t)(pad - vl));
		vl = pad;
	}
	switch (rnd(10)) {
	case 0: case 1:
		e = tdbc_del(tab[i], txn, k, (size_t)kl);
		if (e == -ENOENT)
			e = 0;
		break;
	case 2: {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		/* a deadline an hour ahead: in both dumps the same */
		e = tdbc_put_at(tab[i], txn, k, (size_t)kl, v, (size_t)vl, 0,
				0, (uint64_t)ts.tv_sec * 1000 + 3600000 +
				rnd(1000));
		break;
	}
	default:
		e = tdbc_put(tab[i], txn, k, (size_t)kl, v, (size_t)vl, 0);
	}
	if (e)
		die(txn ? "txn op" : "op", e);
}

int main(int argc, char **argv)
{
	char err[256], n[16];
	long ops;
	int e;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: kafka_load SOCKET SEED OPS "
			"[VALUE_BYTES]\n");
		return 2;
	}
	rng = strtoull(argv[2], NULL, 10) * 2654435761ull + 1;
	ops = atol(argv[3]);
	pad = argc == 5 ? atoi(argv[4]) : 0;
	if (pad < 0 || pad >= 4096)
		pad = 0;
	if ((e = tdbc_connect(&c, argv[1], 0, err, sizeof(err)))) {
		fprintf(stderr, "kafka_load: %s\n", err);
		return 1;
	}
	mono_open();
	for (long i = 0; i < ops; i++) {
		unsigned int r = rnd(100);

		if (r < 60) {
			one(NULL);
		} else if (r < 98) {
			struct tdbc_txn *txn;
			unsigned int nops = 1 + rnd(6);

			for (unsigned int j = 0; j < NTAB; j++)
				ensure((int)j);
			if ((e = tdbc_txn_begin(c, &txn)))
				die("txn begin", e);
			while (nops--)
				one(txn);
			mono_put(txn, strtoull(argv[2], NULL, 10) *
				 1000000000ull + (unsigned long long)i);
			if ((e = tdbc_txn_commit(txn)))
				die("commit", e);
		} else {
			int t = (int)rnd(NTAB);

			ensure(t);
			tdbc_table_close(tab[t]);
			tab[t] = NULL;
			name(n, t);
			if ((e = tdbc_table_drop(c, n)))
				die("drop", e);
		}
	}
	tdbc_close(c);
	return 0;
}
