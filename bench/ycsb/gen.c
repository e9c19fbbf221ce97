// SPDX-License-Identifier: GPL-2.0-only
/*
 * gen.c - YCSB's generators for tdb-bench-ycsb (driver.h): zipfian,
 * scrambled zipfian, skewed latest, uniform, the acknowledged insert
 * counter, the operation mix, the key chooser of CoreWorkload, the key
 * names (ycsb_key, ycsb.h), and their self-test.  The formulas are
 * YCSB's (site.ycsb.generator, site.ycsb.Utils); the uniform draws come
 * from a seeded splitmix64 per client.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

const char *const ycsb_op_name[YCSB_OPS] = {
	"read", "update", "insert", "scan", "rmw",
};

/* --- random ------------------------------------------------------------ */
void ycsb_rng_seed(struct ycsb_rng *r, uint64_t seed)
{
	r->s = seed;
}

uint64_t ycsb_rng_next(struct ycsb_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double ycsb_rng_double(struct ycsb_rng *r)
{
	return (double)(ycsb_rng_next(r) >> 11) * 0x1.0p-53;
}

/* --- hashing and key names ------------------------------------------------ */
int64_t ycsb_fnvhash64(int64_t val)
{
	uint64_t h = 0xcbf29ce484222325ull, v = (uint64_t)val;
	int64_t s;

	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;        /* Java's >> on a long: the sign bits shift
				 * in, but only 8 octets are taken */
		h *= 1099511628211ull;
	}
	s = (int64_t)h;
	return s < 0 && s != INT64_MIN ? -s : s;        /* Math.abs */
}

size_t ycsb_key(const struct ycsb_conf *c, uint64_t n, char *buf)
{
	char digits[24];
	int64_t v = c->orderedinserts ? (int64_t)n :
		ycsb_fnvhash64((int64_t)n);
	int len = snprintf(digits, sizeof(digits), "%" PRId64, v);
	size_t at = 4;

	memcpy(buf, "user", 4);
	for (int fill = (int)c->zeropadding - len; fill > 0 &&
	     at + (size_t)len < YCSB_KEY_MAX; fill--)
		buf[at++] = '0';
	memcpy(buf + at, digits, (size_t)len);
	return at + (size_t)len;
}

/* --- zipfian ------------------------------------------------------------ */
double ycsb_zeta(int64_t st, int64_t n, double theta, double initial)
{
	double sum = initial;

	for (int64_t i = st; i < n; i++)
		sum += 1 / pow((double)(i + 1), theta);
	return sum;
}

static double zipf_eta(const struct ycsb_zipf *z)
{
	return (1 - pow(2.0 / (double)z->items, 1 - z->theta)) /
		(1 - z->zeta2theta / z->zetan);
}

void ycsb_zipf_init(struct ycsb_zipf *z, int64_t min, int64_t max,
		    double theta, double zetan)
{
	z->items = max - min + 1;
	z->base = min;
	z->theta = theta;
	z->zeta2theta = ycsb_zeta(0, 2, theta, 0);
	z->alpha = 1.0 / (1.0 - theta);
	z->zetan = zetan > 0 ? zetan : ycsb_zeta(0, z->items, theta, 0);
	z->countforzeta = z->items;
	z->eta = zipf_eta(z);
}

int64_t ycsb_zipf_next_n(struct ycsb_zipf *z, struct ycsb_rng *r,
			 int64_t itemcount)
{
	double u, uz;

	if (itemcount > z->countforzeta) {
		z->zetan = ycsb_zeta(z->countforzeta, itemcount, z->theta,
				     z->zetan);
		z->countforzeta = itemcount;
		z->eta = zipf_eta(z);   /* YCSB keeps `items` here */
	}
	u = ycsb_rng_double(r);
	uz = u * z->zetan;
	if (uz < 1.0)
		return z->base;
	if (uz < 1.0 + pow(0.5, z->theta))
		return z->base + 1;
	return z->base + (int64_t)((double)itemcount *
				   pow(z->eta * u - z->eta + 1, z->alpha));
}

int64_t ycsb_zipf_next(struct ycsb_zipf *z, struct ycsb_rng *r)
{
	return ycsb_zipf_next_n(z, r, z->items);
}

void ycsb_scrambled_init(struct ycsb_scrambled *s, int64_t min, int64_t max)
{
	s->min = min;
	s->itemcount = max - min + 1;
	ycsb_zipf_init(&s->z, 0, YCSB_SCRAMBLED_ITEMS, 0.99,
		       YCSB_SCRAMBLED_ZETAN);
}

int64_t ycsb_scrambled_next(struct ycsb_scrambled *s, struct ycsb_rng *r)
{
	int64_t v = ycsb_zipf_next(&s->z, r);

	return s->min + ycsb_fnvhash64(v) % s->itemcount;
}

int64_t ycsb_uniform(struct ycsb_rng *r, int64_t lb, int64_t ub)
{
	uint64_t interval = (uint64_t)(ub - lb) + 1;

	/* Math.abs(nextLong()) % interval: the top bit cleared */
	return lb + (int64_t)((ycsb_rng_next(r) >> 1) % interval);
}

/* --- the insert counter ----------------------------------------------------- */
void ycsb_counter_init(struct ycsb_counter *c, int64_t start)
{
	atomic_store(&c->next, start);
	atomic_store(&c->limit, start - 1);
	atomic_flag_clear(&c->lock);
	memset((void *)c->window, 0, sizeof(c->window));
}

int64_t ycsb_counter_next(struct ycsb_counter *c)
{
	return atomic_fetch_add(&c->next, 1);
}

int64_t ycsb_counter_last(struct ycsb_counter *c)
{
	return atomic_load_explicit(&c->limit, memory_order_acquire);
}

int ycsb_counter_ack(struct ycsb_counter *c, int64_t value)
{
	const int64_t mask = YCSB_ACK_WINDOW - 1;
	int64_t limit, index, before;

	if (atomic_exchange(&c->window[value & mask], 1))
		return -EOVERFLOW;
	/* YCSB's tryLock: whoever holds it moves the contiguous run of
	 * acknowledgements over to limit; the others go on. */
	if (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire))
		return 0;
	limit = atomic_load(&c->limit);
	before = limit & mask;
	for (index = limit + 1; (index & mask) != before; index++) {
		if (!atomic_load(&c->window[index & mask]))
			break;
		atomic_store(&c->window[index & mask], 0);
	}
	atomic_store_explicit(&c->limit, index - 1, memory_order_release);
	atomic_flag_clear_explicit(&c->lock, memory_order_release);
	return 0;
}

/* --- latest ------------------------------------------------------------- */
void ycsb_latest_init(struct ycsb_latest *l, struct ycsb_counter *basis,
		      double theta)
{
	int64_t last = ycsb_counter_last(basis);

	l->basis = basis;
	ycsb_zipf_init(&l->z, 0, (last > 1 ? last : 1) - 1, theta, 0);
}

int64_t ycsb_latest_next(struct ycsb_latest *l, struct ycsb_rng *r)
{
	int64_t max = ycsb_counter_last(l->basis);

	return max - ycsb_zipf_next_n(&l->z, r, max);
}

/* --- the operation mix ------------------------------------------------------ */
void ycsb_discrete_init(struct ycsb_discrete *d, const struct ycsb_conf *c)
{
	d->weight[YCSB_READ] = c->readproportion;
	d->weight[YCSB_UPDATE] = c->updateproportion;
	d->weight[YCSB_INSERT] = c->insertproportion;
	d->weight[YCSB_SCAN] = c->scanproportion;
	d->weight[YCSB_RMW] = c->readmodifywriteproportion;
	d->sum = 0;
	for (int i = 0; i < YCSB_OPS; i++)
		d->sum += d->weight[i];
}

enum ycsb_op ycsb_discrete_next(const struct ycsb_discrete *d,
				struct ycsb_rng *r)
{
	double val = ycsb_rng_double(r);
	int last = YCSB_READ;

	for (int i = 0; i < YCSB_OPS; i++) {
		if (d->weight[i] <= 0)
			continue;
		last = i;
		if (val < d->weight[i] / d->sum)
			return (enum ycsb_op)i;
		val -= d->weight[i] / d->sum;
	}
	return (enum ycsb_op)last;      /* rounding at the top */
}

/* --- CoreWorkload's key chooser ------------------------------------------ */
void ycsb_chooser_init(struct ycsb_chooser *k, const struct ycsb_conf *c,
		       struct ycsb_counter *ins, unsigned int proc)
{
	int64_t count = (int64_t)c->recordcount;
	int64_t newkeys = (int64_t)((double)c->operationcount *
				    c->insertproportion * 2.0);

	memset(k, 0, sizeof(*k));
	k->dist = c->requestdistribution;
	k->ins = ins;
	k->lb = 0;
	k->ub = count - 1;
	/* SequentialGenerator: one counter per client here, each client
	 * starting at its share of the key space. */
	k->seq = count * proc / (c->threads ? c->threads : 1);
	if (k->dist == YCSB_ZIPFIAN)
		ycsb_scrambled_init(&k->sz, 0, count + newkeys);
	else if (k->dist == YCSB_LATEST)
		ycsb_latest_init(&k->lt, ins, c->zipfianconstant);
	if (c->scanlengthdistribution == YCSB_ZIPFIAN)
		ycsb_zipf_init(&k->scanz, c->minscanlength, c->maxscanlength,
			       c->zipfianconstant, 0);
}

static int64_t choose_once(struct ycsb_chooser *k, struct ycsb_rng *r)
{
	switch (k->dist) {
	case YCSB_ZIPFIAN:
		return ycsb_scrambled_next(&k->sz, r);
	case YCSB_LATEST:
		return ycsb_latest_next(&k->lt, r);
	case YCSB_SEQUENTIAL:
		return k->lb + (k->seq++ % (k->ub - k->lb + 1));
	default:
		return ycsb_uniform(r, k->lb, k->ub);
	}
}

int64_t ycsb_chooser_key(struct ycsb_chooser *k, struct ycsb_rng *r)
{
	int64_t n;

	do
		n = choose_once(k, r);
	while (n > ycsb_counter_last(k->ins));
	return n;
}

unsigned int ycsb_chooser_scanlen(struct ycsb_chooser *k,
				  const struct ycsb_conf *c,
				  struct ycsb_rng *r)
{
	if (c->scanlengthdistribution == YCSB_ZIPFIAN)
		return (unsigned int)ycsb_zipf_next(&k->scanz, r);
	return (unsigned int)ycsb_uniform(r, c->minscanlength,
					  c->maxscanlength);
}
