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

#define ROOM 512

static struct tdbo_limits lim = {
	.default_mode = 0644, .feed_size = 1u << 16, .max_tables = 64,
	.max_txns = 16, .max_txn_ops = 64, .max_txn_bytes = 1u << 20,
	.max_snapshot_bytes = 1u << 20, .max_snapshot_memory = 1u << 20,
	.max_snapshot_memory_per_uid = 1u << 20,
};

/* What a request got: its error and text, or the reply's fields. */
struct ans {
	int err;
	char msg[256];
	char val[64];
	size_t vlen;
	uint64_t version;       /* 0: no VERSION */
	int64_t ival;
	bool has_int;
	uint64_t txn;
	unsigned int parts;     /* SCAN: records */
	uint64_t part_ver[8];
};

struct sink {
	struct tdbo_sink s;
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct ans *a;
};

static void *s_reserve(struct tdbo_sink *s, size_t len)
{
	struct sink *k = (struct sink *)s;

	return len <= sizeof(k->buf) ? k->buf : NULL;
}

static void s_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct sink *k = (struct sink *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct ans *a = k->a;

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (m.cmd == TDB_CMD_SCAN) {
		if (TDB_PROTO_HAS(&m, TDB_A_KEY) && a->parts < 8)
			a->part_ver[a->parts] = TDB_PROTO_HAS(&m,
					TDB_A_VERSION) ? m.rec_version : 0;
		a->parts += TDB_PROTO_HAS(&m, TDB_A_KEY);
		return;
	}
	a->txn = m.txn;
	if (TDB_PROTO_HAS(&m, TDB_A_VALUE)) {
		assert_true(m.value_len < sizeof(a->val));
		memcpy(a->val, m.value, m.value_len);
		a->vlen = m.value_len;
	}
	if (TDB_PROTO_HAS(&m, TDB_A_VERSION))
		a->version = m.rec_version;
	if (TDB_PROTO_HAS(&m, TDB_A_INT)) {
		a->ival = m.ival;
		a->has_int = true;
	}
}

struct world {
	struct tdbo_owner *o;
	struct tdbo_client *c1, *c2;    /* root, and uid 1000 */
};

/* Build `in`, parse it back (as a transport does) and run it. */
static struct ans run(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	static unsigned char buf[ROOM] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out res;
	struct sink k;
	struct ans a;
	long n;

	memset(&a, 0, sizeof(a));
	memset(&k, 0, sizeof(k));
	k.s.reserve = s_reserve;
	k.s.commit = s_commit;
	k.s.in_read_section = true;
	k.a = &a;
	n = tdb_proto_build(buf, ROOM, TDB_PROTO_REQUEST, in, &ext);
	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	a.err = tdbo_exec(c, &m, &k.s, &ext, &res);
	if (a.err)
		snprintf(a.msg, sizeof(a.msg), "%s", ext.msg ? ext.msg : "");
	while (res.dump) {
		int rc = tdbo_dump_run(res.dump, &k.s, &ext);

		if (rc <= 0) {
			tdbo_dump_free(res.dump);
			break;
		}
	}
	return a;
}

static struct tdb_proto_msg req(uint8_t cmd, const char *table,
				const char *key, uint64_t txn)
{
	struct tdb_proto_msg m = { .cmd = cmd };

	if (table) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE);
		m.table = table;
		m.table_len = (uint32_t)strlen(table);
	}
	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (uint32_t)strlen(key);
	}
	if (txn) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = txn;
	}
	return m;
}

static struct ans put_c(struct tdbo_client *c, const char *t, const char *k,
			const char *v, uint32_t flags, uint64_t ifver,
			uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, t, k, txn);

	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m.value = v;
	m.value_len = (uint32_t)strlen(v);
	if (flags) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_FLAGS);
		m.flags = flags;
	}
	if (ifver) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m.if_version = ifver;
	}
	return run(c, &m);
}

static struct ans del_c(struct tdbo_client *c, const char *t, const char *k,
			uint64_t ifver, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_DEL, t, k, txn);

	if (ifver) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m.if_version = ifver;
	}
	return run(c, &m);
}

static struct ans get_c(struct tdbo_client *c, const char *t, const char *k,
			uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_GET, t, k, txn);

	return run(c, &m);
}

static struct ans incr_c(struct tdbo_client *c, const char *t, const char *k,
			 int64_t delta, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_INCR, t, k, txn);

	m.attrs |= TDB_PROTO_BIT(TDB_A_DELTA);
	m.delta = delta;
	return run(c, &m);
}

static uint64_t begin(struct tdbo_client *c)
{
	struct tdb_proto_msg m = req(TDB_CMD_TXN_BEGIN, NULL, NULL, 0);
	struct ans a = run(c, &m);

	assert_int_equal(a.err, 0);
	assert_true(a.txn != 0);
	return a.txn;
}

static struct ans commit(struct tdbo_client *c, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_TXN_COMMIT, NULL, NULL, txn);

	return run(c, &m);
}

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
