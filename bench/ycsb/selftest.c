// SPDX-License-Identifier: GPL-2.0-only
/*
 * selftest.c - `tdb-bench-ycsb --selftest` (test bench-ycsb-generators):
 * the generators of gen.c against their formulas and YCSB's known
 * values.  Each check prints what it expected and what it saw; any
 * miss makes the whole test fail.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

#define DRAWS 1000000

static int check(bool ok, const char *what, double want, double got)
{
	printf("selftest: %-50s want %-14.10g got %-14.10g %s\n", what, want,
	       got, ok ? "ok" : "FAILED");
	return ok ? 0 : -1;
}

static bool near(double want, double got, double rel)
{
	return fabs(got - want) <= rel * fabs(want);
}

/* YCSB's first key of a hashed load (every YCSB run's log shows it). */
static int test_keys(void)
{
	struct ycsb_conf c;
	char k[YCSB_KEY_MAX + 1];
	size_t n;
	int err = 0;

	ycsb_conf_defaults(&c);
	n = ycsb_key(&c, 0, k);
	k[n] = 0;
	printf("selftest: key 0 hashed: %s\n", k);
	err |= check(!strcmp(k, "user6284781860667377211"),
		     "key 0 is YCSB's user6284781860667377211", 0, 0);
	c.orderedinserts = true;
	c.zeropadding = 8;
	n = ycsb_key(&c, 42, k);
	k[n] = 0;
	err |= check(!strcmp(k, "user00000042"), "key 42 ordered, padding 8",
		     0, 0);
	return err;
}

/* Item 0 comes with probability 1/zetan, item 1 with 0.5^theta/zetan
 * (the formula's two special cases), the rest by the power law. */
static int test_zipfian(void)
{
	const int64_t items = 1000000;
	struct ycsb_zipf z;
	struct ycsb_rng r;
	long hit[3] = { 0 }, out = 0;
	int err = 0;

	ycsb_rng_seed(&r, 1);
	ycsb_zipf_init(&z, 0, items - 1, 0.99, 0);
	for (int i = 0; i < DRAWS; i++) {
		int64_t v = ycsb_zipf_next(&z, &r);

		if (v < 0 || v >= items)
			out++;
		else if (v < 3)
			hit[v]++;
	}
	err |= check(out == 0, "zipfian 10^6 items: draws out of range", 0,
		     (double)out);
	err |= check(near(1 / z.zetan, hit[0] / (double)DRAWS, 0.03),
		     "zipfian item 0 frequency (1/zetan)", 1 / z.zetan,
		     hit[0] / (double)DRAWS);
	err |= check(near(pow(0.5, 0.99) / z.zetan, hit[1] / (double)DRAWS,
			  0.03), "zipfian item 1 frequency (0.5^theta/zetan)",
		     pow(0.5, 0.99) / z.zetan, hit[1] / (double)DRAWS);
	err |= check(hit[1] > hit[2], "zipfian item 1 above item 2",
		     (double)hit[1], (double)hit[2]);
	return err;
}

static int cmp_long_desc(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* zeta(10^10, 0.99) without 10^10 terms: the first 10^6 summed, the
 * tail by Euler-Maclaurin (integral, end terms, first derivative). */
static double zeta_check(void)
{
	const double s = 0.99, n = 1e10, m = 1e6;
	double sum = ycsb_zeta(0, (int64_t)m, s, 0);
	double f_n = pow(n, -s), f_m = pow(m, -s);

	sum += (pow(n, 1 - s) - pow(m, 1 - s)) / (1 - s);
	sum += (f_n - f_m) / 2;
	sum += (-s * pow(n, -s - 1) + s * pow(m, -s - 1)) / 12;
	return sum;
}

/* YCSB's ZETAN is zeta(10^10, 0.99); the hottest key gets about
 * 1/ZETAN of the draws, and the hot keys are spread over the space. */
static int test_scrambled(void)
{
	const int64_t items = 10000;
	struct ycsb_scrambled s;
	struct ycsb_rng r;
	long *hit = calloc((size_t)items, sizeof(long)), *sorted;
	int64_t top[10], lo = items, hi = -1, hot = 0;
	long out = 0;
	int err = 0;

	sorted = malloc((size_t)items * sizeof(long));
	if (!hit || !sorted) {
		free(hit);
		free(sorted);
		return check(false, "scrambled: out of memory", 0, 0);
	}
	ycsb_rng_seed(&r, 2);
	ycsb_scrambled_init(&s, 0, items - 1);
	for (int i = 0; i < DRAWS; i++) {
		int64_t v = ycsb_scrambled_next(&s, &r);

		if (v < 0 || v >= items)
			out++;
		else
			hit[v]++;
	}
	memcpy(sorted, hit, (size_t)items * sizeof(long));
	qsort(sorted, (size_t)items, sizeof(long), cmp_long_desc);
	for (int64_t i = 0, t = 0; i < items && t < 10; i++)
		if (hit[i] >= sorted[9])
			top[t++] = i;
	for (int t = 0; t < 10; t++) {
		lo = top[t] < lo ? top[t] : lo;
		hi = top[t] > hi ? top[t] : hi;
	}
	hot = ycsb_fnvhash64(0) % items;
	err |= check(out == 0, "scrambled: draws out of range", 0,
		     (double)out);
	err |= check(near(1 / YCSB_SCRAMBLED_ZETAN, hit[hot] / (double)DRAWS,
			  0.1), "scrambled: hottest key (fnv(0)) ~ 1/ZETAN",
		     1 / YCSB_SCRAMBLED_ZETAN, hit[hot] / (double)DRAWS);
	err |= check(sorted[0] == hit[hot], "scrambled: fnv(0) is hottest",
		     (double)sorted[0], (double)hit[hot]);
	err |= check(hi - lo > items / 4,
		     "scrambled: 10 hottest keys span > 1/4 of the space",
		     (double)items / 4, (double)(hi - lo));
	err |= check(near(zeta_check(), YCSB_SCRAMBLED_ZETAN, 1e-6),
		     "ZETAN = zeta(10^10, 0.99) (Euler-Maclaurin)",
		     YCSB_SCRAMBLED_ZETAN, zeta_check());
	free(hit);
	free(sorted);
	return err;
}

/* Latest: never above the acknowledged count, whatever the inserts do;
 * the newest key the hottest. */
static int test_latest(void)
{
	struct ycsb_counter *c = malloc(sizeof(*c));
	struct ycsb_latest l;
	struct ycsb_rng r;
	long above = 0, newest = 0, below = 0;
	double expect = 0;
	int err = 0;

	if (!c)
		return check(false, "latest: out of memory", 0, 0);
	ycsb_rng_seed(&r, 3);
	ycsb_counter_init(c, 1000);
	ycsb_latest_init(&l, c, 0.99);
	for (int i = 0; i < DRAWS; i++) {
		int64_t v, last;

		if (i % 10 == 0) {      /* an insert, acknowledged */
			if (ycsb_counter_ack(c, ycsb_counter_next(c)))
				err |= check(false, "latest: ack refused",
					     0, 0);
		}
		last = ycsb_counter_last(c);
		v = ycsb_latest_next(&l, &r);
		expect += 1 / l.z.zetan;        /* item 0's chance now */
		above += v > last;
		below += v < 0;
		newest += v == last;
	}
	err |= check(above == 0, "latest: draws above the acknowledged count",
		     0, (double)above);
	err |= check(below == 0, "latest: draws below 0", 0, (double)below);
	/* item 0 of the zipfian, so the newest key: 1/zetan of each draw,
	 * zetan growing with the count */
	expect /= DRAWS;
	err |= check(near(expect, newest / (double)DRAWS, 0.03),
		     "latest: the newest key's share (mean 1/zetan)", expect,
		     newest / (double)DRAWS);
	free(c);
	return err;
}

/* Acknowledgements out of order: last() stops at the first gap. */
static int test_counter(void)
{
	struct ycsb_counter *c = malloc(sizeof(*c));
	int64_t a, b, d;
	int err = 0;

	if (!c)
		return check(false, "counter: out of memory", 0, 0);
	ycsb_counter_init(c, 100);
	a = ycsb_counter_next(c);
	b = ycsb_counter_next(c);
	d = ycsb_counter_next(c);
	err |= check(a == 100 && b == 101 && d == 102,
		     "counter: hands out 100, 101, 102", 100, (double)a);
	ycsb_counter_ack(c, b);
	err |= check(ycsb_counter_last(c) == 99,
		     "counter: 101 acked, 100 not: last 99", 99,
		     (double)ycsb_counter_last(c));
	ycsb_counter_ack(c, a);
	ycsb_counter_ack(c, d);
	err |= check(ycsb_counter_last(c) == 102,
		     "counter: all acked: last 102", 102,
		     (double)ycsb_counter_last(c));
	free(c);
	return err;
}

/* The mix: workload A's 50/50 and F's, within 1% of the proportions. */
static int test_discrete(void)
{
	struct ycsb_conf c;
	struct ycsb_discrete d;
	struct ycsb_rng r;
	long n[YCSB_OPS] = { 0 };
	int err = 0;

	ycsb_conf_defaults(&c);
	c.readproportion = 0.5;
	c.updateproportion = 0;
	c.readmodifywriteproportion = 0.5;
	ycsb_discrete_init(&d, &c);
	ycsb_rng_seed(&r, 4);
	for (int i = 0; i < DRAWS; i++)
		n[ycsb_discrete_next(&d, &r)]++;
	err |= check(near(0.5, n[YCSB_READ] / (double)DRAWS, 0.01),
		     "discrete: read share of 0.5/0.5 read/rmw", 0.5,
		     n[YCSB_READ] / (double)DRAWS);
	err |= check(n[YCSB_UPDATE] == 0 && n[YCSB_INSERT] == 0,
		     "discrete: no op of proportion 0", 0,
		     (double)(n[YCSB_UPDATE] + n[YCSB_INSERT]));
	return err;
}

int ycsb_selftest(void)
{
	int err = test_keys();

	err |= test_zipfian();
	err |= test_scrambled();
	err |= test_latest();
	err |= test_counter();
	err |= test_discrete();
	printf("selftest: %s\n", err ? "FAILED" : "every check passed");
	return err ? -1 : 0;
}
