// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_evict.c - bounded tables in the owner (src/owner/evict.c;
 * tdb/proto.h, "EVICTION"), in user space against tdbo_exec():
 *
 *  - EVICT without a bound is refused; a bound of 0 is refused by the
 *    codec;
 *  - refuse: a new key past MAX_RECORDS or MAX_BYTES fails -ENOSPC
 *    naming the bound, nothing changes; replacing a key within the
 *    bound works; a commit that would pass it applies nothing;
 *  - lru, lfu: a write flood keeps the table within its bound and is
 *    never refused; the keys used since (owner-served GETs) or used
 *    most survive, those not used go (checked on a recorded pattern,
 *    with the policies' approximation in the margins);
 *  - ttl: the soonest deadlines go; records without one never do; with
 *    no deadline left, writes past the bound are refused;
 *  - the key just written is never the victim; every eviction is a DEL
 *    notification with REASON evicted and counted in TABLE_STAT and
 *    STATS.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
#include "core.h"
#include "layout.h"
#include "internal.h"           /* struct tdbo_table: its engine table */

#include "owner_harness.h"

/* DEL notifications with REASON evicted, and the keys they named. */
static unsigned int n_evicted_notes;
static char evicted_keys[4096][16];

static void on_change(void *arg, const void *msg, size_t len)
{
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;

	(void)arg;
	assert_int_equal(tdb_proto_parse(msg, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (m.cmd != TDB_CMD_DEL || !TDB_PROTO_HAS(&m, TDB_A_REASON) ||
	    m.reason != TDB_REASON_EVICTED)
		return;
	if (n_evicted_notes < 4096 && m.key_len < 16) {
		memcpy(evicted_keys[n_evicted_notes], m.key, m.key_len);
		evicted_keys[n_evicted_notes][m.key_len] = '\0';
	}
	n_evicted_notes++;
}

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	int err;

	assert_non_null(w);
	w->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(w->o);
	tdbo_owner_on_change(w->o, on_change, NULL);
	n_evicted_notes = 0;
	w->c1 = tdbo_client_new(w->o, &root, false, NULL, NULL, &err);
	assert_non_null(w->c1);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tdbo_client_free(w->c1);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

static struct ans create_b(struct world *w, const char *name,
			   uint64_t max_bytes, uint64_t max_records,
			   int evict)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, name, NULL, 0);

	if (max_bytes) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_BYTES);
		m.max_bytes = max_bytes;
	}
	if (max_records) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS);
		m.max_records = max_records;
	}
	if (evict >= 0) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_EVICT);
		m.evict = (uint32_t)evict;
	}
	return run(w->c1, &m);
}

static struct ans put_ttl(struct world *w, const char *t, const char *k,
			  const char *v, uint64_t ttl)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, t, k, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m.value = v;
	m.value_len = (uint32_t)strlen(v);
	if (ttl) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = ttl;
	}
	return run(w->c1, &m);
}

static struct tdb_proto_stat stat_of(struct world *w, const char *t)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_STAT, t, NULL, 0);
	struct ans a = run(w->c1, &m);

	assert_int_equal(a.err, 0);
	return a.stat;
}

static bool present(struct world *w, const char *t, const char *k)
{
	struct ans a = get_c(w->c1, t, k, 0);

	assert_true(a.err == 0 || a.err == -ENOENT);
	return a.err == 0;
}

static void key(char *out, const char *p, unsigned int i)
{
	snprintf(out, 16, "%s%u", p, i);
}

/* --- the options ------------------------------------------------------- */

static void options(void **state)
{
	struct world *w = *state;
	struct ans a = create_b(w, "t", 0, 0, TDB_EVICT_LRU);
	struct tdb_proto_stat st;

	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "EVICT without MAX_BYTES"));
	assert_int_equal(create_b(w, "t", 1000, 10, TDB_EVICT_LFU).err, 0);
	st = stat_of(w, "t");
	assert_true(st.present & TDB_PROTO_BIT(TDB_STAT_A_MAX_BYTES));
	assert_int_equal(st.max_bytes, 1000);
	assert_int_equal(st.max_records, 10);
	assert_int_equal(st.evict, TDB_EVICT_LFU);
	assert_int_equal(st.evicted, 0);
	/* an unbounded table says nothing of eviction */
	assert_int_equal(create_b(w, "u", 0, 0, -1).err, 0);
	st = stat_of(w, "u");
	assert_false(st.present & TDB_PROTO_BIT(TDB_STAT_A_EVICT));
	assert_false(st.present & TDB_PROTO_BIT(TDB_STAT_A_MAX_RECORDS));
}

/* --- refuse ---------------------------------------------------------------- */

static void refuse(void **state)
{
	struct world *w = *state;
	char k[16];
	unsigned int i;
	struct ans a;
	uint64_t txn;

	assert_int_equal(create_b(w, "r", 0, 3, TDB_EVICT_REFUSE).err, 0);
	for (i = 0; i < 3; i++) {
		key(k, "k", i);
		assert_int_equal(put_c(w->c1, "r", k, "v", 0, 0, 0).err, 0);
	}
	a = put_c(w->c1, "r", "new", "v", 0, 0, 0);
	assert_int_equal(a.err, -ENOSPC);
	assert_non_null(strstr(a.msg, "at its bound: MAX_RECORDS 3 records"));
	assert_false(present(w, "r", "new"));
	/* replacing one stays within the bound */
	assert_int_equal(put_c(w->c1, "r", "k1", "vv", 0, 0, 0).err, 0);
	/* a commit past it: nothing applied */
	txn = begin(w->c1);
	assert_int_equal(put_c(w->c1, "r", "k0", "changed", 0, 0, txn).err, 0);
	assert_int_equal(put_c(w->c1, "r", "n2", "v", 0, 0, txn).err, 0);
	a = commit(w->c1, txn);
	assert_int_equal(a.err, -ENOSPC);
	assert_non_null(strstr(a.msg, "MAX_RECORDS 3"));
	assert_false(present(w, "r", "n2"));
	assert_int_equal(get_c(w->c1, "r", "k0", 0).vlen, 1);
	assert_int_equal(stat_of(w, "r").records, 3);
	/* a delete makes room again */
	assert_int_equal(del_c(w->c1, "r", "k2", 0, 0).err, 0);
	assert_int_equal(put_c(w->c1, "r", "new", "v", 0, 0, 0).err, 0);
	assert_int_equal(stat_of(w, "r").records, 3);
	/* bytes: 10 bytes of key and value at most */
	assert_int_equal(create_b(w, "rb", 10, 0, -1).err, 0);
	assert_int_equal(put_c(w->c1, "rb", "ab", "12345678", 0, 0, 0).err, 0);
	a = put_c(w->c1, "rb", "c", "1", 0, 0, 0);
	assert_int_equal(a.err, -ENOSPC);
	assert_non_null(strstr(a.msg, "MAX_BYTES 10 bytes"));
	assert_int_equal(put_c(w->c1, "rb", "ab", "1234567", 0, 0, 0).err, 0);
	assert_int_equal(n_evicted_notes, 0);
}

/* --- lru and lfu ------------------------------------------------------------ */

#define BOUND 200u

/* Fill a BOUND-record table, use the first half (uses times each), then
 * write BOUND/2 new keys: returns how many of the used half survived. */
static unsigned int flood_after_use(struct world *w, const char *t,
				    int policy, unsigned int uses)
{
	struct tdb_proto_stat st;
	unsigned int i, u, kept = 0;
	char k[16];

	assert_int_equal(create_b(w, t, 0, BOUND, policy).err, 0);
	for (i = 0; i < BOUND; i++) {
		key(k, "old", i);
		assert_int_equal(put_c(w->c1, t, k, "v", 0, 0, 0).err, 0);
	}
	for (u = 0; u < uses; u++)
		for (i = 0; i < BOUND / 2; i++) {
			key(k, "old", i);
			assert_int_equal(get_c(w->c1, t, k, 0).err, 0);
		}
	for (i = 0; i < BOUND / 2; i++) {
		key(k, "new", i);
		/* never refused, never past the bound, and the key just
		 * written is there */
		assert_int_equal(put_c(w->c1, t, k, "v", 0, 0, 0).err, 0);
		assert_true(present(w, t, k));
		assert_true(stat_of(w, t).records <= BOUND);
	}
	st = stat_of(w, t);
	assert_int_equal(st.records, BOUND);
	assert_int_equal(st.evicted, BOUND / 2);
	assert_int_equal(n_evicted_notes, BOUND / 2);
	for (i = 0; i < BOUND / 2; i++) {
		key(k, "old", i);
		kept += present(w, t, k);
	}
	return kept;
}

/* The hash a mapped reader computes for key k of table t. */
static uint64_t key_hash(struct world *w, const char *t, const char *k)
{
	struct tdbo_table *tt = tdbo_table_get(w->o, t);
	const struct tdb_region_hdr *h = tdbe_table_extent(tt->t, 0);
	uint64_t hash = tdbp_hash64(k, strlen(k), h->seed);

	tdbo_table_put(tt);
	return hash;
}

static struct ans touch(struct world *w, const char *t, const uint64_t *h,
			unsigned int n)
{
	struct tdb_proto_msg m = req(TDB_CMD_TOUCH, t, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_HASHES);
	m.hashes = h;
	m.nhashes = n;
	return run(w->c1, &m);
}

/* Reads through a map, told with TOUCH, count as uses: the same flood
 * as lru() with TOUCH in place of the GETs. */
static void lru_touch(void **state)
{
	struct world *w = *state;
	uint64_t h[BOUND / 2];
	unsigned int i, kept = 0;
	char k[16];

	assert_int_equal(create_b(w, "tt", 0, BOUND, TDB_EVICT_LRU).err, 0);
	for (i = 0; i < BOUND; i++) {
		key(k, "old", i);
		assert_int_equal(put_c(w->c1, "tt", k, "v", 0, 0, 0).err, 0);
	}
	for (i = 0; i < BOUND / 2; i++) {
		key(k, "old", i);
		h[i] = key_hash(w, "tt", k);
	}
	for (i = 0; i < BOUND / 2; i += 40)     /* what run() can build */
		assert_int_equal(touch(w, "tt", h + i, BOUND / 2 - i < 40 ?
				       BOUND / 2 - i : 40).err, 0);
	for (i = 0; i < BOUND / 2; i++) {
		key(k, "new", i);
		assert_int_equal(put_c(w->c1, "tt", k, "v", 0, 0, 0).err, 0);
	}
	for (i = 0; i < BOUND / 2; i++) {
		key(k, "old", i);
		kept += present(w, "tt", k);
	}
	assert_true(kept >= 75);
	/* TOUCH needs the table and read permission, like GET */
	assert_int_equal(touch(w, "nope", h, 1).err, -ENOENT);
}

static void lru(void **state)
{
	/* 100 used, 100 not, then 100 new: a true LRU keeps all 100 used
	 * ones; sampling 5 keeps most (random eviction would keep about
	 * a third of them) */
	unsigned int kept = flood_after_use(*state, "l", TDB_EVICT_LRU, 1);

	assert_true(kept >= 75);
}

static void lfu(void **state)
{
	unsigned int kept = flood_after_use(*state, "f", TDB_EVICT_LFU, 20);

	assert_true(kept >= 75);
}

/* The evicted keys are old ones, never new ones written since (each
 * new key was the last written when the next eviction ran). */
static void victims_are_old(void **state)
{
	unsigned int i;

	flood_after_use(*state, "v", TDB_EVICT_LRU, 1);
	for (i = 0; i < n_evicted_notes && i < 4096; i++)
		assert_memory_equal(evicted_keys[i], "old", 3);
}

/* --- ttl -------------------------------------------------------------------- */

static void ttl(void **state)
{
	struct world *w = *state;
	unsigned int i;
	char k[16];
	struct ans a;

	assert_int_equal(create_b(w, "x", 0, 20, TDB_EVICT_TTL).err, 0);
	/* 10 without a deadline, 10 with deadlines far apart */
	for (i = 0; i < 10; i++) {
		key(k, "forever", i);
		assert_int_equal(put_ttl(w, "x", k, "v", 0).err, 0);
		key(k, "ttl", i);
		assert_int_equal(put_ttl(w, "x", k, "v",
					 3600000ull * (i + 1)).err, 0);
	}
	/* 5 more: the 5 soonest (ttl0..ttl4, give or take the sampling's
	 * reach) go, no record without a deadline does */
	for (i = 0; i < 5; i++) {
		key(k, "more", i);
		assert_int_equal(put_ttl(w, "x", k, "v", 0).err, 0);
	}
	for (i = 0; i < 10; i++) {
		key(k, "forever", i);
		assert_true(present(w, "x", k));
	}
	assert_int_equal(stat_of(w, "x").records, 20);
	/* the latest deadline is the last to go: still there */
	assert_true(present(w, "x", "ttl9"));
	/* evict the other deadlines, then nothing is left to evict */
	for (i = 5; i < 10; i++) {
		key(k, "more", i);
		assert_int_equal(put_ttl(w, "x", k, "v", 0).err, 0);
	}
	a = put_ttl(w, "x", "last", "v", 0);
	assert_int_equal(a.err, -ENOSPC);
	assert_non_null(strstr(a.msg, "deadline"));
	assert_int_equal(stat_of(w, "x").records, 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(options, setup, teardown),
		cmocka_unit_test_setup_teardown(refuse, setup, teardown),
		cmocka_unit_test_setup_teardown(lru, setup, teardown),
		cmocka_unit_test_setup_teardown(lfu, setup, teardown),
		cmocka_unit_test_setup_teardown(lru_touch, setup, teardown),
		cmocka_unit_test_setup_teardown(victims_are_old, setup,
						teardown),
		cmocka_unit_test_setup_teardown(ttl, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
