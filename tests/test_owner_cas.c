// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_cas.c - versions, conditional writes, INCR and serializable
 * transactions in the owner (src/owner/change.c, txn.c), in user space
 * against tdbo_exec() with two clients (docs/PROTOCOL.md, "Record
 * versions, conditions, INCR and serializable transactions"):
 *
 *  - every write gives the key a new, higher version; GET and SCAN
 *    answer it; a deleted then re-put key gets a higher one;
 *  - IF_ABSENT / IF_PRESENT / IF_VERSION: -EEXIST / -ENOENT /
 *    -ECANCELED with a text naming the key's state, and nothing changes;
 *  - INCR: decimal text, absent = 0, -EDOM, -ERANGE at both ends;
 *  - a transaction whose read key changed fails with -ESTALE naming the
 *    table and key and applies nothing; a read-only one validates; a
 *    key found absent and created meanwhile is a conflict; INCR in a
 *    transaction reads the key; conditions are checked at commit;
 *  - the read set is bounded by max-txn-ops; a key read twice counts
 *    once;
 *  - SET_VERSION is refused (-EPERM) unless the home allowed it;
 *    conditional writes need read permission (-EACCES);
 *  - tdbo_version_floor: versions after it are above it.
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

#include "owner_harness.h"

static void create(struct tdbo_client *c, const char *name, uint32_t mode)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, name, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_MODE);
	m.mode = mode;
	assert_int_equal(run(c, &m).err, 0);
}

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_cred user = { 1000, 1000, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	int err;

	assert_non_null(w);
	w->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(w->o);
	w->c1 = tdbo_client_new(w->o, &root, false, NULL, NULL, &err);
	w->c2 = tdbo_client_new(w->o, &user, false, NULL, NULL, &err);
	assert_non_null(w->c1);
	assert_non_null(w->c2);
	create(w->c1, "a", 0666);
	create(w->c1, "b", 0666);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tdbo_client_free(w->c1);
	tdbo_client_free(w->c2);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

/* --- versions ------------------------------------------------------------ */

static void versions_move_up(void **state)
{
	struct world *w = *state;
	struct ans a, s;
	uint64_t v1, v2, v3;

	assert_int_equal(put_c(w->c1, "a", "k", "1", 0, 0, 0).err, 0);
	a = get_c(w->c1, "a", "k", 0);
	assert_int_equal(a.err, 0);
	v1 = a.version;
	assert_true(v1 > 0);
	assert_int_equal(put_c(w->c2, "a", "k", "2", 0, 0, 0).err, 0);
	v2 = get_c(w->c1, "a", "k", 0).version;
	assert_true(v2 > v1);
	/* a write of another key moves the counter, not this key */
	assert_int_equal(put_c(w->c1, "b", "x", "x", 0, 0, 0).err, 0);
	assert_int_equal(get_c(w->c1, "a", "k", 0).version, v2);
	/* deleted and put again: higher than anything before */
	assert_int_equal(del_c(w->c1, "a", "k", 0, 0).err, 0);
	assert_int_equal(get_c(w->c1, "a", "k", 0).err, -ENOENT);
	assert_int_equal(put_c(w->c1, "a", "k", "3", 0, 0, 0).err, 0);
	v3 = get_c(w->c1, "a", "k", 0).version;
	assert_true(v3 > v2 + 1);       /* the put of b/x and the delete */
	assert_true(tdbo_version_last(w->o) >= v3);
	/* SCAN parts carry it */
	{
		struct tdb_proto_msg m = req(TDB_CMD_SCAN, "a", NULL, 0);

		s = run(w->c1, &m);
		assert_int_equal(s.err, 0);
		assert_int_equal(s.parts, 1);
		assert_int_equal(s.part_ver[0], v3);
	}
	/* the floor: what comes next is above it */
	tdbo_version_floor(w->o, v3 + 1000);
	assert_int_equal(put_c(w->c1, "a", "k", "4", 0, 0, 0).err, 0);
	assert_int_equal(get_c(w->c1, "a", "k", 0).version, v3 + 1001);
	tdbo_version_floor(w->o, 5);    /* never goes back */
	assert_int_equal(tdbo_version_last(w->o), v3 + 1001);
}

/* --- conditions ----------------------------------------------------------- */

static void conditions(void **state)
{
	struct world *w = *state;
	struct ans a;
	uint64_t v;

	/* if-absent on an absent key: in; then -EEXIST */
	assert_int_equal(put_c(w->c1, "a", "c", "1", TDB_PUT_IF_ABSENT, 0,
			       0).err, 0);
	v = get_c(w->c1, "a", "c", 0).version;
	a = put_c(w->c1, "a", "c", "2", TDB_PUT_IF_ABSENT, 0, 0);
	assert_int_equal(a.err, -EEXIST);
	assert_non_null(strstr(a.msg, "if-absent"));
	/* if-present on an absent key: -ENOENT; on a present one: in */
	a = put_c(w->c1, "a", "none", "1", TDB_PUT_IF_PRESENT, 0, 0);
	assert_int_equal(a.err, -ENOENT);
	assert_non_null(strstr(a.msg, "if-present"));
	assert_int_equal(get_c(w->c1, "a", "none", 0).err, -ENOENT);
	assert_int_equal(put_c(w->c1, "a", "c", "3", TDB_PUT_IF_PRESENT, 0,
			       0).err, 0);
	assert_true(get_c(w->c1, "a", "c", 0).version > v);
	/* if-version: a stale one fails, naming the version now */
	a = put_c(w->c1, "a", "c", "4", 0, v, 0);
	assert_int_equal(a.err, -ECANCELED);
	v = get_c(w->c1, "a", "c", 0).version;
	{
		char want[64];

		snprintf(want, sizeof(want), "is at version %llu",
			 (unsigned long long)v);
		assert_non_null(strstr(a.msg, want));
	}
	assert_memory_equal(get_c(w->c1, "a", "c", 0).val, "3", 1);
	assert_int_equal(put_c(w->c1, "a", "c", "5", 0, v, 0).err, 0);
	assert_memory_equal(get_c(w->c1, "a", "c", 0).val, "5", 1);
	/* DEL if-version */
	a = del_c(w->c1, "a", "c", v, 0);
	assert_int_equal(a.err, -ECANCELED);
	v = get_c(w->c1, "a", "c", 0).version;
	assert_int_equal(del_c(w->c1, "a", "c", v, 0).err, 0);
	a = del_c(w->c1, "a", "c", v, 0);
	assert_int_equal(a.err, -ECANCELED);
	assert_non_null(strstr(a.msg, "absent"));
	a = put_c(w->c1, "a", "c", "6", 0, v, 0);
	assert_int_equal(a.err, -ECANCELED);
	/* both presence conditions at once: refused */
	a = put_c(w->c1, "a", "c", "6", TDB_PUT_IF_ABSENT | TDB_PUT_IF_PRESENT,
		  0, 0);
	assert_int_equal(a.err, -EINVAL);
}

static void conditions_need_read(void **state)
{
	struct world *w = *state;
	struct tdb_proto_msg m;

	/* "wo": root's, others may write but not read */
	create(w->c1, "wo", 0622);
	assert_int_equal(put_c(w->c2, "wo", "k", "1", 0, 0, 0).err, 0);
	assert_int_equal(get_c(w->c2, "wo", "k", 0).err, -EACCES);
	assert_int_equal(put_c(w->c2, "wo", "k", "1", TDB_PUT_IF_ABSENT, 0,
			       0).err, -EACCES);
	assert_int_equal(put_c(w->c2, "wo", "k", "1", TDB_PUT_IF_PRESENT, 0,
			       0).err, -EACCES);
	assert_int_equal(put_c(w->c2, "wo", "k", "1", 0, 7, 0).err, -EACCES);
	assert_int_equal(del_c(w->c2, "wo", "k", 7, 0).err, -EACCES);
	assert_int_equal(incr_c(w->c2, "wo", "n", 1, 0).err, -EACCES);
	/* SET_VERSION: only for a client the home allowed */
	m = req(TDB_CMD_PUT, "a", "sv", 0);
	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE) |
		   TDB_PROTO_BIT(TDB_A_SET_VERSION);
	m.value = "x";
	m.value_len = 1;
	m.set_version = 1u << 30;
	assert_int_equal(run(w->c1, &m).err, -EPERM);
	assert_int_equal(get_c(w->c1, "a", "sv", 0).err, -ENOENT);
	tdbo_client_allow_set_version(w->c1);
	assert_int_equal(run(w->c1, &m).err, 0);
	assert_int_equal(get_c(w->c1, "a", "sv", 0).version, 1u << 30);
	assert_true(tdbo_version_last(w->o) >= (1u << 30));
	assert_int_equal(put_c(w->c1, "a", "sv", "y", 0, 0, 0).err, 0);
	assert_true(get_c(w->c1, "a", "sv", 0).version > (1u << 30));
}

/* --- INCR -------------------------------------------------------------------- */

static void incr(void **state)
{
	struct world *w = *state;
	struct ans a;

	a = incr_c(w->c1, "a", "n", 5, 0);
	assert_int_equal(a.err, 0);
	assert_true(a.has_int);
	assert_int_equal(a.ival, 5);
	assert_true(a.version > 0);
	assert_int_equal(get_c(w->c1, "a", "n", 0).version, a.version);
	a = incr_c(w->c1, "a", "n", -12, 0);
	assert_int_equal(a.ival, -7);
	a = get_c(w->c1, "a", "n", 0);
	assert_int_equal(a.vlen, 2);
	assert_memory_equal(a.val, "-7", 2);
	/* not an integer: -EDOM, unchanged */
	const char *bad[] = { "abc", "", "01", "-0", "+1", " 1", "1 ",
			      "99999999999999999999", "-", "123456789012345678901" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(put_c(w->c1, "a", "bad", bad[i], 0, 0, 0).err,
				 0);
		a = incr_c(w->c1, "a", "bad", 1, 0);
		assert_int_equal(a.err, -EDOM);
		assert_non_null(strstr(a.msg, "integer"));
	}
	/* the ends of the range */
	assert_int_equal(put_c(w->c1, "a", "max", "9223372036854775807", 0, 0,
			       0).err, 0);
	assert_int_equal(incr_c(w->c1, "a", "max", 1, 0).err, -ERANGE);
	assert_int_equal(incr_c(w->c1, "a", "max", 0, 0).ival, INT64_MAX);
	assert_int_equal(put_c(w->c1, "a", "min", "-9223372036854775808", 0, 0,
			       0).err, 0);
	assert_int_equal(incr_c(w->c1, "a", "min", -1, 0).err, -ERANGE);
	a = incr_c(w->c1, "a", "min", 1, 0);
	assert_int_equal(a.ival, INT64_MIN + 1);
	a = get_c(w->c1, "a", "min", 0);
	assert_memory_equal(a.val, "-9223372036854775807", 20);
	/* default delta is 1 */
	{
		struct tdb_proto_msg m = req(TDB_CMD_INCR, "a", "n", 0);

		assert_int_equal(run(w->c1, &m).ival, -6);
	}
}

/* --- transactions -------------------------------------------------------- */

static void txn_conflict(void **state)
{
	struct world *w = *state;
	struct ans a;
	uint64_t x;

	assert_int_equal(put_c(w->c1, "a", "bal1", "100", 0, 0, 0).err, 0);
	assert_int_equal(put_c(w->c1, "b", "bal2", "100", 0, 0, 0).err, 0);
	/* a read, another client's write of it, then commit: -ESTALE */
	x = begin(w->c1);
	assert_int_equal(get_c(w->c1, "a", "bal1", x).err, 0);
	assert_true(get_c(w->c1, "a", "bal1", x).version > 0);
	assert_int_equal(put_c(w->c1, "b", "bal2", "150", 0, 0, x).err, 0);
	assert_int_equal(put_c(w->c2, "a", "bal1", "50", 0, 0, 0).err, 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -ESTALE);
	assert_non_null(strstr(a.msg, "table a"));
	assert_non_null(strstr(a.msg, "'bal1'"));
	assert_memory_equal(get_c(w->c1, "b", "bal2", 0).val, "100", 3);
	/* without the other write it commits */
	x = begin(w->c1);
	assert_int_equal(get_c(w->c1, "a", "bal1", x).err, 0);
	assert_int_equal(put_c(w->c1, "b", "bal2", "150", 0, 0, x).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	assert_memory_equal(get_c(w->c1, "b", "bal2", 0).val, "150", 3);
	/* a key found absent, created meanwhile: a conflict too */
	x = begin(w->c1);
	assert_int_equal(get_c(w->c1, "a", "lease", x).err, -ENOENT);
	assert_int_equal(put_c(w->c1, "a", "lease", "me", 0, 0, x).err, 0);
	assert_int_equal(put_c(w->c2, "a", "lease", "them", 0, 0, 0).err, 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -ESTALE);
	assert_non_null(strstr(a.msg, "created"));
	assert_memory_equal(get_c(w->c1, "a", "lease", 0).val, "them", 4);
	/* a read-only transaction validates: a write between -> -ESTALE */
	x = begin(w->c1);
	assert_int_equal(get_c(w->c1, "a", "bal1", x).err, 0);
	assert_int_equal(get_c(w->c1, "b", "bal2", x).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	x = begin(w->c1);
	assert_int_equal(get_c(w->c1, "a", "bal1", x).err, 0);
	assert_int_equal(del_c(w->c2, "a", "bal1", 0, 0).err, 0);
	assert_int_equal(get_c(w->c1, "b", "bal2", x).err, 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -ESTALE);
	assert_non_null(strstr(a.msg, "deleted"));
	/* its own writes are not read-set entries */
	x = begin(w->c1);
	assert_int_equal(put_c(w->c1, "a", "own", "1", 0, 0, x).err, 0);
	a = get_c(w->c1, "a", "own", x);
	assert_int_equal(a.err, 0);
	assert_int_equal(a.version, 0);
	assert_int_equal(put_c(w->c2, "a", "own", "2", 0, 0, 0).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);      /* a blind write */
	assert_memory_equal(get_c(w->c1, "a", "own", 0).val, "1", 1);
}

static void txn_incr_and_conditions(void **state)
{
	struct world *w = *state;
	struct ans a;
	uint64_t x, v;

	assert_int_equal(put_c(w->c1, "a", "ctr", "10", 0, 0, 0).err, 0);
	x = begin(w->c1);
	a = incr_c(w->c1, "a", "ctr", 5, x);
	assert_int_equal(a.err, 0);
	assert_int_equal(a.ival, 15);
	assert_int_equal(a.version, 0);         /* none yet */
	assert_int_equal(incr_c(w->c1, "a", "ctr", 5, x).ival, 20);
	assert_memory_equal(get_c(w->c1, "a", "ctr", x).val, "20", 2);
	assert_memory_equal(get_c(w->c1, "a", "ctr", 0).val, "10", 2);
	assert_int_equal(incr_c(w->c2, "a", "ctr", 1, 0).ival, 11);
	assert_int_equal(commit(w->c1, x).err, -ESTALE);  /* it read ctr */
	assert_memory_equal(get_c(w->c1, "a", "ctr", 0).val, "11", 2);
	x = begin(w->c1);
	assert_int_equal(incr_c(w->c1, "a", "ctr", 5, x).ival, 16);
	assert_int_equal(commit(w->c1, x).err, 0);
	a = get_c(w->c1, "a", "ctr", 0);
	assert_memory_equal(a.val, "16", 2);
	v = a.version;
	/* conditions at commit, against the table then */
	x = begin(w->c1);
	assert_int_equal(put_c(w->c1, "a", "ctr", "17", 0, v, x).err, 0);
	assert_int_equal(put_c(w->c2, "a", "ctr", "99", 0, 0, 0).err, 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -ECANCELED);
	assert_non_null(strstr(a.msg, "none was applied"));
	/* and as the transaction's earlier changes leave it */
	x = begin(w->c1);
	assert_int_equal(put_c(w->c1, "a", "n1", "1", 0, 0, x).err, 0);
	assert_int_equal(put_c(w->c1, "a", "n1", "2", TDB_PUT_IF_ABSENT, 0,
			       x).err, 0);
	a = commit(w->c1, x);
	assert_int_equal(a.err, -EEXIST);
	assert_non_null(strstr(a.msg, "this transaction"));
	assert_int_equal(get_c(w->c1, "a", "n1", 0).err, -ENOENT);
	x = begin(w->c1);
	assert_int_equal(del_c(w->c1, "a", "ctr", 0, x).err, 0);
	assert_int_equal(put_c(w->c1, "a", "ctr", "1", TDB_PUT_IF_ABSENT, 0,
			       x).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	/* one version for every change of a commit */
	x = begin(w->c1);
	assert_int_equal(put_c(w->c1, "a", "t1", "1", 0, 0, x).err, 0);
	assert_int_equal(put_c(w->c1, "b", "t2", "2", 0, 0, x).err, 0);
	assert_int_equal(commit(w->c1, x).err, 0);
	assert_int_equal(get_c(w->c1, "a", "t1", 0).version,
			 get_c(w->c1, "b", "t2", 0).version);
}

static void read_set_bounded(void **state)
{
	struct world *w = *state;
	struct ans a;
	uint64_t x = begin(w->c2);
	char k[16];
	int i;

	/* the same key again and again: one entry */
	for (i = 0; i < 200; i++)
		assert_int_equal(get_c(w->c2, "a", "same", x).err, -ENOENT);
	/* max-txn-ops (64) reads and changes in all */
	for (i = 0; i < 62; i++) {
		snprintf(k, sizeof(k), "r%d", i);
		assert_int_equal(get_c(w->c2, "a", k, x).err, -ENOENT);
	}
	assert_int_equal(put_c(w->c2, "a", "w", "1", 0, 0, x).err, 0);
	a = get_c(w->c2, "a", "one-more", x);
	assert_int_equal(a.err, -E2BIG);
	assert_non_null(strstr(a.msg, "max-txn-ops"));
	a = put_c(w->c2, "a", "w2", "1", 0, 0, x);
	assert_int_equal(a.err, -E2BIG);
	/* still usable: it commits what it has */
	assert_int_equal(commit(w->c2, x).err, 0);
	assert_int_equal(get_c(w->c1, "a", "w", 0).err, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(versions_move_up, setup,
						teardown),
		cmocka_unit_test_setup_teardown(conditions, setup, teardown),
		cmocka_unit_test_setup_teardown(conditions_need_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(incr, setup, teardown),
		cmocka_unit_test_setup_teardown(txn_conflict, setup, teardown),
		cmocka_unit_test_setup_teardown(txn_incr_and_conditions,
						setup, teardown),
		cmocka_unit_test_setup_teardown(read_set_bounded, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
