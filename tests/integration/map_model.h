/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * map_model.h - what test_map_model.c and test_map_hostile.c share: the
 * self-checking values a writer puts and mapped readers check, and the
 * writer that measures its own put latency.
 *
 * A value carries its key's number, a generation (one more at each
 * write of the key, so a reader's generations of one key never go
 * back), its length and a checksum over all of it: a reader that gets a
 * value not written for the key it asked (torn, reused memory, another
 * key's record) fails the test.  Keys "s<n>" are written alone (put or
 * delete); keys "g<n>.<m>" (m < GROUP) only together, by one transaction
 * that gives all GROUP the same generation, so a read section that sees
 * two of them at different generations saw part of a transaction.
 */
#ifndef TDB_ITEST_MAP_MODEL_H
#define TDB_ITEST_MAP_MODEL_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define MM_SINGLE 2000u         /* keys s0 .. */
#define MM_GROUPS 200u          /* g0.* .. */
#define MM_GROUP  4u
#define MM_PAY    160u          /* payload bytes at most */

struct mm_val {
	uint32_t key;           /* MM_SINGLE + group * MM_GROUP + m for g */
	uint32_t len;           /* payload bytes */
	uint64_t gen;
	uint64_t sum;           /* h_fnv over the fields above + payload */
	unsigned char pay[MM_PAY];
};

static inline size_t mm_key(char *k, size_t cap, uint32_t id)
{
	if (id < MM_SINGLE)
		return (size_t)snprintf(k, cap, "s%u", id);
	id -= MM_SINGLE;
	return (size_t)snprintf(k, cap, "g%u.%u", id / MM_GROUP,
				id % MM_GROUP);
}

static inline uint64_t mm_sum(const struct mm_val *v)
{
	uint64_t h = h_fnv(14695981039346656037ull, v, 16);

	return h_fnv(h, v->pay, v->len);
}

static inline size_t mm_make(struct mm_val *v, uint32_t id, uint64_t gen,
			     uint64_t *rnd)
{
	uint32_t i;

	v->key = id;
	v->len = (uint32_t)(h_rand(rnd) % MM_PAY);
	v->gen = gen;
	for (i = 0; i < v->len; i++)
		v->pay[i] = (unsigned char)h_rand(rnd);
	v->sum = mm_sum(v);
	return offsetof(struct mm_val, pay) + v->len;
}

/* NULL if the value is key id's, else why not. */
static inline const char *mm_bad(const void *p, size_t n, uint32_t id)
{
	struct mm_val v;

	if (n < offsetof(struct mm_val, pay) || n > sizeof(v))
		return "a value of a wrong length";
	memcpy(&v, p, n);
	if (v.key != id)
		return "another key's value";
	if (offsetof(struct mm_val, pay) + v.len != n)
		return "a value whose length is not its own";
	if (mm_sum(&v) != v.sum)
		return "a value with a bad checksum";
	return NULL;
}

static inline uint64_t mm_gen(const void *p)
{
	struct mm_val v;

	memcpy(&v, p, 16);
	return v.gen;
}

static inline uint64_t mm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

/* What the writer reports (shared memory). */
struct mm_wstat {
	uint64_t ops, puts, dels, txns, max_us, slow;   /* slow: > 50 ms */
	uint64_t max_pending;   /* bytes_pending, largest seen */
};

/*
 * Write for `ms` milliseconds (or until *stop): random single puts and
 * deletes and group transactions, each timed.  gens: MM_SINGLE +
 * MM_GROUPS * MM_GROUP generations (the writer's own).
 */
static inline void mm_write(struct tdbc *c, struct tdbc_table *t,
			    uint64_t *gens, unsigned int ms,
			    volatile int *stop, struct mm_wstat *ws)
{
	uint64_t rnd = 0x9e3779b97f4a7c15ull, end = mm_now_us() +
		       (uint64_t)ms * 1000, t0, d;
	struct tdbc_table_stat st;
	struct mm_val v;
	char k[32];

	while (!*stop && mm_now_us() < end) {
		uint64_t r = h_rand(&rnd) % 10;

		t0 = mm_now_us();
		if (r <= 7) {
			uint32_t id = (uint32_t)(h_rand(&rnd) % MM_SINGLE);
			size_t kl = mm_key(k, sizeof(k), id);

			if (r == 7) {
				long e = tdbc_del(t, NULL, k, kl);

				CHECK(e == 0 || e == -ENOENT, "del: %ld", e);
				ws->dels++;
			} else {
				size_t n = mm_make(&v, id, ++gens[id], &rnd);

				CHECK_EQ(tdbc_put(t, NULL, k, kl, &v, n, 0),
					 0, "put");
				ws->puts++;
			}
		} else {
			uint32_t g = (uint32_t)(h_rand(&rnd) % MM_GROUPS), m;
			uint32_t base = MM_SINGLE + g * MM_GROUP;
			uint64_t gen = ++gens[base];
			struct tdbc_txn *x;

			CHECK_EQ(tdbc_txn_begin(c, &x), 0, "txn");
			for (m = 0; m < MM_GROUP; m++) {
				size_t kl = mm_key(k, sizeof(k), base + m);
				size_t n = mm_make(&v, base + m, gen, &rnd);

				CHECK_EQ(tdbc_put(t, x, k, kl, &v, n, 0), 0,
					 "put in txn");
			}
			CHECK_EQ(tdbc_txn_commit(x), 0, "commit");
			ws->txns++;
		}
		d = mm_now_us() - t0;
		if (d > ws->max_us)
			ws->max_us = d;
		if (d > 50000)
			ws->slow++;
		if (++ws->ops % 512 == 0 &&
		    tdbc_table_stat(c, tdbc_table_name(t), &st) == 0 &&
		    st.bytes_pending > ws->max_pending)
			ws->max_pending = st.bytes_pending;
	}
}

#endif
