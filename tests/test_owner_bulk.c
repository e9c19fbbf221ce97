// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_bulk.c - RESTORE_BULK in the owner (src/owner/change.c,
 * tdbo_cmd_restore_bulk; tdb/proto.h, TDB_A_RECORDS), in user space
 * against tdbo_exec():
 *
 *  - a batch restores exactly what single PUTs with SET_VERSION (and
 *    DEADLINE) restore: two owners, the same tables (a default TTL, a
 *    record bound below the restored count, an ordered one), one fed by
 *    PUTs, the other by batches; every key's value, version and
 *    deadline, each table's STAT (records, bytes, flags) and the owners'
 *    last version are equal, and the bound evicted nothing;
 *  - a client the home did not allow is refused (-EPERM) and nothing is
 *    applied;
 *  - a record whose deadline is over TDB_TTL_MAX ahead stops the batch
 *    with -ERANGE and a message naming its index; the records before it
 *    are in, the ones after it are not (as with single PUTs);
 *  - the home over its memory bound (its mem_check hook) refuses a
 *    batch whole with -ENOMEM and its message, naming record 0;
 *  - the engine refusing a record (a table at its max-extents cap):
 *    -ENOSPC, "table is full" named by its record, the ones before in.
 *
 * Each case runs twice: with a home without restore_begin (tdbd: each
 * record through the change pipeline) and with one whose restore_begin
 * says nothing is logged (tdb.ko while recovering: the batch straight
 * into the engine, restore_fast), which must restore the same; there
 * also a restore_begin that refuses (the batch refused whole, its
 * message naming record 0, restore_end not called) and one that says
 * the home logs (the pipeline again).
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
#include <time.h>

#include "owner.h"

#include "owner_harness.h"

#define BIG (1u << 17)
#define NREC 1500u

/* What a request got, with GET's deadline and STAT. */
struct bans {
	int err;
	char msg[256];
	unsigned char val[256];
	size_t vlen;
	bool found;
	uint64_t version, deadline;
	struct tdb_proto_stat stat;
};

struct bsink {
	struct tdbo_sink s;
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct bans *a;
};

static void *b_reserve(struct tdbo_sink *s, size_t len)
{
	struct bsink *k = (struct bsink *)s;

	return len <= sizeof(k->buf) ? k->buf : NULL;
}

static void b_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct bsink *k = (struct bsink *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct bans *a = k->a;

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (TDB_PROTO_HAS(&m, TDB_A_STAT))
		a->stat = m.stat;
	if (TDB_PROTO_HAS(&m, TDB_A_VALUE)) {
		assert_true(m.value_len <= sizeof(a->val));
		memcpy(a->val, m.value, m.value_len);
		a->vlen = m.value_len;
		a->found = true;
	}
	if (TDB_PROTO_HAS(&m, TDB_A_VERSION))
		a->version = m.rec_version;
	if (TDB_PROTO_HAS(&m, TDB_A_DEADLINE))
		a->deadline = m.deadline;
}

/* Build `in` (up to BIG bytes), parse it back and run it. */
static struct bans brun(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	static unsigned char buf[BIG] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out res;
	struct bsink k;
	struct bans a;
	long n;

	memset(&a, 0, sizeof(a));
	memset(&k, 0, sizeof(k));
	memset(&res, 0, sizeof(res));
	k.s.reserve = b_reserve;
	k.s.commit = b_commit;
	k.s.in_read_section = true;
	k.a = &a;
	n = tdb_proto_build(buf, BIG, TDB_PROTO_REQUEST, in, &ext);
	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	a.err = tdbo_exec(c, &m, &k.s, &ext, &res);
	if (a.err)
		snprintf(a.msg, sizeof(a.msg), "%s", ext.msg ? ext.msg : "");
	assert_null(res.dump);
	return a;
}

/* The records both owners get: keys k0000.., values of 0..199 bytes,
 * versions rising with gaps, every third one with a deadline an hour
 * ahead (some equal). */
struct rec {
	char key[16];
	unsigned char val[200];
	uint32_t klen, vlen;
	uint64_t version, deadline;
};

static struct rec *recs;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void make_recs(void)
{
	uint64_t ahead = now_ms() + 3600u * 1000u;
	uint32_t i, j;

	recs = calloc(NREC, sizeof(*recs));
	assert_non_null(recs);
	for (i = 0; i < NREC; i++) {
		struct rec *r = &recs[i];

		r->klen = (uint32_t)snprintf(r->key, sizeof(r->key), "k%05u",
					     (i * 7919u) % 100000u);
		r->vlen = (i * 37u) % 200u;
		for (j = 0; j < r->vlen; j++)
			r->val[j] = (unsigned char)(i + j);
		r->version = 1000u + 3u * i + (i % 5u);
		r->deadline = i % 3u ? 0 : ahead + (i % 7u) * 1000u;
	}
}

static void create(struct tdbo_client *c, const char *name, uint64_t ttl,
		   uint64_t max_records, uint32_t tflags)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, name, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_MODE);
	m.mode = 0600;
	if (ttl) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = ttl;
	}
	if (max_records) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS) |
			   TDB_PROTO_BIT(TDB_A_EVICT);
		m.max_records = max_records;
		m.evict = TDB_EVICT_LRU;
	}
	if (tflags) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
		m.table_flags = tflags;
	}
	assert_int_equal(brun(c, &m).err, 0);
}

static const char *const tables[] = { "plain", "ttl", "bound", "ordered" };

struct bworld {
	bool fast;                      /* o[1] has restore_begin */
	struct tdbo_owner *o[2];        /* 0: PUTs, 1: batches */
	struct tdbo_client *c[2];       /* root, allowed SET_VERSION */
	struct tdbo_client *user;       /* uid 1000 on o[1], not allowed */
};

/* The home's memory bound, as tdb.ko's mem_check says it: over when
 * mem_full is set. */
static bool mem_full;

static int mem_check(void *arg, const char **msg)
{
	(void)arg;
	if (!mem_full)
		return 0;
	*msg = "the test's home is over its memory bound";
	return -ENOMEM;
}

/* restore_begin's answer (1: unlogged, 0: logged, < 0: refused) and
 * the calls of each hook. */
static int restore_mode;
static unsigned int n_begin, n_end;

static int restore_begin(void *arg, const char **msg)
{
	(void)arg;
	n_begin++;
	if (restore_mode < 0)
		*msg = "the test's home refuses the batch";
	return restore_mode;
}

static void restore_end(void *arg)
{
	(void)arg;
	n_end++;
}

static int setup_with(void **state, bool fast)
{
	static const struct tdbo_hooks hooks = { .mem_check = mem_check };
	static const struct tdbo_hooks fast_hooks = {
		.mem_check = mem_check,
		.restore_begin = restore_begin,
		.restore_end = restore_end,
	};
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_cred user = { 1000, 1000, 0, NULL };
	struct bworld *w = calloc(1, sizeof(*w));
	int err, i;

	assert_non_null(w);
	w->fast = fast;
	restore_mode = 1;
	n_begin = n_end = 0;
	for (i = 0; i < 2; i++) {
		w->o[i] = tdbo_owner_new(&lim, i && fast ? &fast_hooks :
					 &hooks, &err);
		assert_non_null(w->o[i]);
		w->c[i] = tdbo_client_new(w->o[i], &root, false, NULL, NULL,
					  &err);
		assert_non_null(w->c[i]);
		tdbo_client_allow_set_version(w->c[i]);
		create(w->c[i], "plain", 0, 0, 0);
		create(w->c[i], "ttl", 60000, 0, 0);
		create(w->c[i], "bound", 0, NREC / 2, 0);
		create(w->c[i], "ordered", 0, 0, TDB_TABLE_F_ORDERED);
	}
	w->user = tdbo_client_new(w->o[1], &user, false, NULL, NULL, &err);
	assert_non_null(w->user);
	if (!recs)
		make_recs();
	*state = w;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, false);
}

static int setup_fast(void **state)
{
	return setup_with(state, true);
}

static int teardown(void **state)
{
	struct bworld *w = *state;
	int i;

	tdbo_client_free(w->user);
	for (i = 0; i < 2; i++) {
		tdbo_client_free(w->c[i]);
		tdbo_owner_free(w->o[i]);
	}
	free(w);
	return 0;
}

static struct bans put_restore(struct tdbo_client *c, const char *t,
			       const struct rec *r)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, t, NULL, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE) |
		   TDB_PROTO_BIT(TDB_A_SET_VERSION);
	m.key = r->key;
	m.key_len = r->klen;
	m.value = r->val;
	m.value_len = r->vlen;
	m.set_version = r->version;
	if (r->deadline) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m.deadline = r->deadline;
	}
	return brun(c, &m);
}

/* Records [from, to) packed into one RESTORE_BULK of table t. */
static struct bans bulk(struct tdbo_client *c, const char *t, uint32_t from,
			uint32_t to)
{
	static unsigned char pack[TDB_RESTORE_BULK_MAX];
	struct tdb_proto_msg m = req(TDB_CMD_RESTORE_BULK, t, NULL, 0);
	uint32_t len = 0, i;

	for (i = from; i < to; i++) {
		const struct rec *r = &recs[i];

		assert_true(len + TDB_RESTORE_REC_HDR + r->klen + r->vlen <=
			    sizeof(pack));
		tdb_proto_record_pack(pack + len, r->key, r->klen, r->val,
				      r->vlen, r->version, r->deadline);
		len += TDB_RESTORE_REC_HDR + r->klen + r->vlen;
	}
	m.attrs |= TDB_PROTO_BIT(TDB_A_RECORDS);
	m.records = pack;
	m.records_len = len;
	return brun(c, &m);
}

static struct bans get(struct tdbo_client *c, const char *t, const char *k)
{
	struct tdb_proto_msg m = req(TDB_CMD_GET, t, k, 0);

	return brun(c, &m);
}

static struct bans stat(struct tdbo_client *c, const char *t)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_STAT, t, NULL, 0);

	return brun(c, &m);
}

/* Batches of up to 256 records, cut also where the next would not fit. */
static void restore_bulk(struct tdbo_client *c, const char *t)
{
	uint32_t from = 0, i, bytes = 0;

	for (i = 0; i < NREC; i++) {
		uint32_t need = TDB_RESTORE_REC_HDR + recs[i].klen +
				recs[i].vlen;

		if (i - from == 256 || bytes + need > TDB_RESTORE_BULK_MAX) {
			assert_int_equal(bulk(c, t, from, i).err, 0);
			from = i;
			bytes = 0;
		}
		bytes += need;
	}
	assert_int_equal(bulk(c, t, from, NREC).err, 0);
}

static void same_as_puts(void **state)
{
	struct bworld *w = *state;
	size_t ti;
	uint32_t i;

	for (ti = 0; ti < sizeof(tables) / sizeof(tables[0]); ti++) {
		for (i = 0; i < NREC; i++)
			assert_int_equal(put_restore(w->c[0], tables[ti],
						     &recs[i]).err, 0);
		restore_bulk(w->c[1], tables[ti]);
	}
	for (ti = 0; ti < sizeof(tables) / sizeof(tables[0]); ti++) {
		struct bans s0 = stat(w->c[0], tables[ti]);
		struct bans s1 = stat(w->c[1], tables[ti]);

		assert_int_equal(s0.err, 0);
		assert_int_equal(s1.err, 0);
		/* the bound is not applied to a restore: all are in */
		assert_int_equal(s1.stat.records, NREC);
		assert_int_equal(s0.stat.records, s1.stat.records);
		assert_int_equal(s0.stat.bytes_used, s1.stat.bytes_used);
		assert_int_equal(s0.stat.table_flags, s1.stat.table_flags);
		assert_int_equal(s0.stat.expiring, s1.stat.expiring);
		assert_int_equal(s0.stat.evicted, s1.stat.evicted);
		for (i = 0; i < NREC; i++) {
			struct bans a = get(w->c[0], tables[ti], recs[i].key);
			struct bans b = get(w->c[1], tables[ti], recs[i].key);

			assert_int_equal(b.err, 0);
			assert_true(b.found || recs[i].vlen == 0);
			assert_int_equal(b.vlen, recs[i].vlen);
			assert_memory_equal(b.val, recs[i].val, b.vlen);
			assert_int_equal(b.version, recs[i].version);
			/* the record's own deadline, or none: not the
			 * table's default TTL */
			assert_int_equal(b.deadline, recs[i].deadline);
			assert_int_equal(a.err, b.err);
			assert_int_equal(a.vlen, b.vlen);
			assert_memory_equal(a.val, b.val, a.vlen);
			assert_int_equal(a.version, b.version);
			assert_int_equal(a.deadline, b.deadline);
		}
	}
	assert_int_equal(tdbo_version_last(w->o[0]),
			 tdbo_version_last(w->o[1]));
	assert_true(tdbo_version_last(w->o[1]) >= recs[NREC - 1].version);
	/* the path each batch took: the fast one in the fast home */
	assert_int_equal(n_end, n_begin);
	if (w->fast)
		assert_true(n_begin >= 4 * (NREC / 256));
	else
		assert_int_equal(n_begin, 0);
}

/* The engine refuses a record (a table at its max-extents cap): the
 * batch stops there with the engine's errno, the message naming the
 * record.  One 60000-byte record a batch until the cap. */
static void capped(struct tdbo_client *c)
{
	static unsigned char pack[TDB_RESTORE_BULK_MAX];
	static unsigned char val[60000];
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, "capped", NULL, 0);
	struct bans a = { 0 };
	char key[16];
	uint32_t i, len;

	m.attrs |= TDB_PROTO_BIT(TDB_A_MODE) |
		   TDB_PROTO_BIT(TDB_A_MAX_EXTENTS);
	m.mode = 0600;
	m.max_extents = 1;
	assert_int_equal(brun(c, &m).err, 0);
	memset(val, 'v', sizeof(val));
	for (i = 0; i < 200 && !a.err; i++) {
		len = (uint32_t)snprintf(key, sizeof(key), "c%05u", i);
		tdb_proto_record_pack(pack, key, len, val, sizeof(val),
				      5000u + i, 0);
		m = req(TDB_CMD_RESTORE_BULK, "capped", NULL, 0);
		m.attrs |= TDB_PROTO_BIT(TDB_A_RECORDS);
		m.records = pack;
		m.records_len = TDB_RESTORE_REC_HDR + len + sizeof(val);
		a = brun(c, &m);
	}
	assert_int_equal(a.err, -ENOSPC);
	assert_non_null(strstr(a.msg, "RESTORE_BULK record 0: "));
	assert_non_null(strstr(a.msg, "full"));
	assert_true(i > 1 && i < 200);
	assert_int_equal(stat(c, "capped").stat.records, i - 1);
}

static void refusals(void **state)
{
	struct bworld *w = *state;
	struct bans a;
	struct rec bad;

	/* not the supervisor's client: -EPERM, nothing in */
	a = bulk(w->user, "plain", 0, 10);
	assert_int_equal(a.err, -EPERM);
	assert_non_null(strstr(a.msg, "supervisor"));
	assert_int_equal(stat(w->c[1], "plain").stat.records, 0);

	/* a deadline over TDB_TTL_MAX ahead at index 5: 0..4 are in */
	bad = recs[5];
	recs[5].deadline = now_ms() + TDB_TTL_MAX + 3600000u;
	a = bulk(w->c[1], "plain", 0, 10);
	recs[5] = bad;
	assert_int_equal(a.err, -ERANGE);
	assert_non_null(strstr(a.msg, "record 5"));
	assert_non_null(strstr(a.msg, "DEADLINE"));
	assert_int_equal(stat(w->c[1], "plain").stat.records, 5);
	assert_int_equal(get(w->c[1], "plain", recs[4].key).version,
			 recs[4].version);
	assert_int_equal(get(w->c[1], "plain", recs[6].key).err, -ENOENT);

	/* the home over its memory bound: the batch is refused whole
	 * with the home's message, naming record 0 (checked once a
	 * batch, before it) */
	mem_full = true;
	a = bulk(w->c[1], "ttl", 0, 10);
	mem_full = false;
	assert_int_equal(a.err, -ENOMEM);
	assert_non_null(strstr(a.msg, "record 0"));
	assert_non_null(strstr(a.msg, "memory bound"));
	assert_int_equal(stat(w->c[1], "ttl").stat.records, 0);

	/* no such table */
	a = bulk(w->c[1], "nope", 0, 1);
	assert_int_equal(a.err, -ENOENT);

	capped(w->c[1]);

	if (!w->fast)
		return;
	assert_int_equal(n_end, n_begin);
	/* the home refuses the batch (tdb.ko: another process than the
	 * supervisor while it recovers): whole, record 0, its message,
	 * and restore_end is not called */
	restore_mode = -EAGAIN;
	a = bulk(w->c[1], "ordered", 0, 10);
	assert_int_equal(a.err, -EAGAIN);
	assert_non_null(strstr(a.msg, "record 0"));
	assert_non_null(strstr(a.msg, "refuses the batch"));
	assert_int_equal(stat(w->c[1], "ordered").stat.records, 0);
	assert_int_equal(n_end + 1, n_begin);
	/* the home logs (tdb.ko after READY): each record through the
	 * pipeline, restore_end not called, the records in */
	restore_mode = 0;
	a = bulk(w->c[1], "ordered", 0, 10);
	assert_int_equal(a.err, 0);
	assert_int_equal(stat(w->c[1], "ordered").stat.records, 10);
	assert_int_equal(get(w->c[1], "ordered", recs[9].key).version,
			 recs[9].version);
	assert_int_equal(n_end + 2, n_begin);
	restore_mode = 1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(same_as_puts, setup, teardown),
		cmocka_unit_test_setup_teardown(refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(same_as_puts, setup_fast,
						teardown),
		cmocka_unit_test_setup_teardown(refusals, setup_fast,
						teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	free(recs);
	return rc;
}
