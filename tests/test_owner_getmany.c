// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_getmany.c - tdbo_get_many (src/owner/change.c), the GETs a
 * transport took together, in user space against tdbo_exec():
 *
 *  - the same answers as tdbo_exec() one request at a time, one per
 *    request and in order, over runs longer than a lookup group, with a
 *    missing key in the middle, another table between and a missing
 *    table; it stops at a GET inside a transaction (tdbo_exec's);
 *    STATS' requests and errors count the same;
 *  - a sink with no room for a reply stops the batch there: the answers
 *    before it are given, the rest none, and going on from the count
 *    returned gives the rest;
 *  - a batch racing commits of transactions that set every key of it
 *    sees each transaction whole or not at all.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"

#define NREQ 40                 /* requests in a batch */
#define REQ_ROOM 256            /* bytes of one built request */

static struct tdbo_limits lim = {
	.default_mode = 0600, .feed_size = 1u << 16, .max_tables = 64,
	.max_txns = 16, .max_txn_ops = 1024, .max_txn_bytes = 1u << 20,
	.max_snapshot_bytes = 1u << 20, .max_snapshot_memory = 1u << 20,
	.max_snapshot_memory_per_uid = 1u << 20,
};

/* --- what came back, in order -------------------------------------------- */

struct ans {
	uint32_t seq;
	int err;                /* 0: a reply */
	char msg[96];
	char val[64];           /* the reply's value, NUL-ended */
	uint64_t txn;
};

struct rec {
	struct tdbo_sink s;
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct ans a[NREQ * 2];
	unsigned int n;
	long room;              /* replies it still takes (< 0: any) */
};

static void *rec_reserve(struct tdbo_sink *s, size_t len)
{
	struct rec *r = (struct rec *)s;

	if (r->room == 0 || len > sizeof(r->buf))
		return NULL;
	return r->buf;
}

static void rec_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct rec *r = (struct rec *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct ans *a = &r->a[r->n++];

	assert_true(r->n <= NREQ * 2);
	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (r->room > 0)
		r->room--;
	memset(a, 0, sizeof(*a));
	a->seq = m.seq;
	a->txn = m.txn;
	if (TDB_PROTO_HAS(&m, TDB_A_VALUE)) {
		assert_true(m.value_len < sizeof(a->val));
		memcpy(a->val, m.value, m.value_len);
	}
}

static void rec_fail(void *arg, const struct tdb_proto_msg *m, int err,
		     const struct tdb_proto_extack *ext)
{
	struct rec *r = arg;
	struct ans *a = &r->a[r->n++];

	assert_true(r->n <= NREQ * 2);
	assert_true(err < 0);
	assert_non_null(ext->msg);
	memset(a, 0, sizeof(*a));
	a->seq = m->seq;
	a->err = err;
	snprintf(a->msg, sizeof(a->msg), "%s", ext->msg);
}

static void rec_init(struct rec *r, long room)
{
	memset(r, 0, sizeof(*r));
	r->s.reserve = rec_reserve;
	r->s.commit = rec_commit;
	r->s.in_read_section = true;
	r->room = room;
}

/* --- requests ------------------------------------------------------------ */

/* Build `in` into buf and parse it back into *m (as a transport does). */
static void make(unsigned char *buf, struct tdb_proto_msg *in,
		 struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext = { NULL };
	long n = tdb_proto_build(buf, REQ_ROOM, TDB_PROTO_REQUEST, in, &ext);

	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST, m,
					 &ext), 0);
}

static int exec1(struct tdbo_client *c, struct tdb_proto_msg *in,
		 struct rec *r)
{
	static unsigned char buf[REQ_ROOM] __attribute__((aligned(8)));
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;
	struct tdbo_out res;

	make(buf, in, &m);
	return tdbo_exec(c, &m, &r->s, &ext, &res);
}

static void create(struct tdbo_client *c, const char *name)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		.table = name, .table_len = (uint32_t)strlen(name),
	};
	struct rec r;

	rec_init(&r, -1);
	assert_int_equal(exec1(c, &m, &r), 0);
}

static struct tdb_proto_msg put_msg(const char *table, const char *k,
				    const char *v, uint64_t txn)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
			 TDB_PROTO_BIT(TDB_A_VALUE),
		.table = table, .table_len = (uint32_t)strlen(table),
		.key = k, .key_len = (uint32_t)strlen(k),
		.value = v, .value_len = (uint32_t)strlen(v),
	};

	if (txn) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = txn;
	}
	return m;
}

static void put(struct tdbo_client *c, const char *table, const char *k,
		const char *v, uint64_t txn)
{
	struct tdb_proto_msg m = put_msg(table, k, v, txn);
	struct rec r;

	rec_init(&r, -1);
	assert_int_equal(exec1(c, &m, &r), 0);
}

static uint64_t txn_cmd(struct tdbo_client *c, uint8_t cmd, uint64_t id)
{
	struct tdb_proto_msg m = { .cmd = cmd };
	struct rec r;

	if (id) {
		m.attrs = TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = id;
	}
	rec_init(&r, -1);
	assert_int_equal(exec1(c, &m, &r), 0);
	return cmd == TDB_CMD_TXN_BEGIN ? r.a[0].txn : 0;
}

struct batch {
	unsigned char buf[NREQ][REQ_ROOM] __attribute__((aligned(8)));
	struct tdb_proto_msg m[NREQ];
	unsigned int n;
};

static void add_get(struct batch *b, const char *table, const char *key,
		    uint64_t txn)
{
	struct tdb_proto_msg in = {
		.cmd = TDB_CMD_GET, .seq = b->n + 1,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = table, .table_len = (uint32_t)strlen(table),
		.key = key, .key_len = (uint32_t)strlen(key),
	};

	if (txn) {
		in.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		in.txn = txn;
	}
	assert_true(b->n < NREQ);
	make(b->buf[b->n], &in, &b->m[b->n]);
	b->n++;
}

/* tdbo_exec, one at a time: what get_many must answer. */
static void reference(struct tdbo_client *c, const struct batch *b,
		      struct rec *r)
{
	unsigned int i;

	rec_init(r, -1);
	for (i = 0; i < b->n; i++) {
		struct tdb_proto_extack ext;
		struct tdbo_out res;
		int err = tdbo_exec(c, &b->m[i], &r->s, &ext, &res);

		if (err)
			rec_fail(r, &b->m[i], err, &ext);
	}
}

/* As a transport: get_many, tdbo_exec for what it leaves that is not a
 * plain GET, `room` more replies each time it stops for want of room. */
static void drive(struct tdbo_client *c, const struct batch *b,
		  struct rec *r, long room)
{
	unsigned int done = 0;

	while (done < b->n) {
		const struct tdb_proto_msg *m = &b->m[done];
		struct tdb_proto_extack ext;
		struct tdbo_out res;
		int err;

		done += tdbo_get_many(c, m, b->n - done, &r->s, rec_fail, r);
		if (done == b->n)
			break;
		m = &b->m[done];
		if (m->cmd == TDB_CMD_GET && !TDB_PROTO_HAS(m, TDB_A_TXN)) {
			assert_int_equal(r->room, 0);   /* stopped: no room */
			r->room = room;
			continue;
		}
		if (!r->room)           /* tdbo_exec needs room */
			r->room = 1;
		err = tdbo_exec(c, m, &r->s, &ext, &res);
		if (err)
			rec_fail(r, m, err, &ext);
		done++;
	}
}

static void same(const struct rec *want, const struct rec *got)
{
	unsigned int i;

	assert_int_equal(got->n, want->n);
	for (i = 0; i < want->n; i++) {
		assert_int_equal(got->a[i].seq, i + 1);        /* in order */
		assert_int_equal(got->a[i].seq, want->a[i].seq);
		assert_int_equal(got->a[i].err, want->a[i].err);
		assert_string_equal(got->a[i].msg, want->a[i].msg);
		assert_string_equal(got->a[i].val, want->a[i].val);
	}
}

/* --- the world ----------------------------------------------------------- */

struct world {
	struct tdbo_owner *o;
	struct tdbo_client *c;
};

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred rc = { 0, 0, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	char k[16], v[16];
	int err, i;

	assert_non_null(w);
	w->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(w->o);
	w->c = tdbo_client_new(w->o, &rc, false, NULL, NULL, &err);
	assert_non_null(w->c);
	create(w->c, "a");
	create(w->c, "b");
	for (i = 0; i < 64; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		if (i != 5 && i != 20)          /* two keys missing */
			put(w->c, "a", k, v, 0);
		snprintf(v, sizeof(v), "b%d", i);
		put(w->c, "b", k, v, 0);
	}
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tdbo_client_free(w->c);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

/* A mixed batch: runs of "a" longer than a group, misses in them, "b"
 * between, a missing table, a GET in a txn. */
static uint64_t mixed(struct world *w, struct batch *b)
{
	uint64_t x = txn_cmd(w->c, TDB_CMD_TXN_BEGIN, 0);
	char k[16];
	int i;

	put(w->c, "a", "k1", "in-txn", x);
	memset(b, 0, sizeof(*b));
	for (i = 0; i < 20; i++) {
		snprintf(k, sizeof(k), "k%d", i + 1);
		add_get(b, "a", k, 0);                  /* k5, k20 missing */
	}
	add_get(b, "b", "k3", 0);
	add_get(b, "nosuch", "k3", 0);
	add_get(b, "a", "k1", x);                       /* "in-txn" */
	add_get(b, "a", "k1", 0);                       /* "v1" */
	add_get(b, "a", "k5", 0);                       /* missing */
	for (i = 0; i < 6; i++) {
		snprintf(k, sizeof(k), "k%d", 30 + i);
		add_get(b, i & 1 ? "b" : "a", k, 0);
	}
	return x;
}

static void same_as_exec(void **state)
{
	struct world *w = *state;
	static struct batch b;
	static struct rec want, got;
	uint64_t x = mixed(w, &b), r0, r1, r2;

	reference(w->c, &b, &want);
	assert_int_equal(want.a[4].err, -ENOENT);       /* k5 */
	assert_string_equal(want.a[4].msg, "no such key");
	assert_string_equal(want.a[22].val, "in-txn");
	r0 = tdbo_owner_requests(w->o);
	rec_init(&got, -1);
	assert_int_equal(tdbo_get_many(w->c, b.m, b.n, &got.s, rec_fail,
				       &got), 22);     /* the txn's GET */
	assert_int_equal(got.n, 22);
	rec_init(&got, -1);
	drive(w->c, &b, &got, -1);
	r1 = tdbo_owner_requests(w->o);
	same(&want, &got);
	assert_int_equal(r1 - r0, b.n + 22);
	reference(w->c, &b, &want);
	r2 = tdbo_owner_requests(w->o);
	assert_int_equal(r2 - r1, b.n);
	txn_cmd(w->c, TDB_CMD_TXN_ABORT, x);
}

/* No room for the k-th reply: it and the rest are not answered. */
static void stops_without_room(void **state)
{
	struct world *w = *state;
	static struct batch b;
	static struct rec want, got;
	unsigned int done;
	long room;
	uint64_t x = mixed(w, &b);

	reference(w->c, &b, &want);
	for (room = 0; room < 12; room += 3) {
		rec_init(&got, room);
		done = tdbo_get_many(w->c, b.m, b.n, &got.s, rec_fail, &got);
		/* the replies it had room for, the errors among them */
		assert_int_equal(got.n, done);
		assert_int_equal(got.room, 0);
		assert_int_equal(done, room < 4 ? room : room + 1); /* k5 */
		rec_init(&got, room);
		drive(w->c, &b, &got, 1);
		same(&want, &got);
	}
	txn_cmd(w->c, TDB_CMD_TXN_ABORT, x);
}

/* --- racing commits ------------------------------------------------------ */

struct race {
	struct world *w;
	struct tdbo_client *wc;
	volatile int stop;
};

/* Every transaction sets k0..k15 of "a" to one value. */
static void *committer(void *arg)
{
	struct race *r = arg;
	char k[16], v[16];
	unsigned int n = 0;
	int i;

	while (!r->stop) {
		uint64_t x = txn_cmd(r->wc, TDB_CMD_TXN_BEGIN, 0);

		snprintf(v, sizeof(v), "t%u", n++);
		for (i = 0; i < 16; i++) {
			snprintf(k, sizeof(k), "r%d", i);
			put(r->wc, "a", k, v, x);
		}
		txn_cmd(r->wc, TDB_CMD_TXN_COMMIT, x);
	}
	return NULL;
}

static void race_sees_whole(void **state)
{
	struct world *w = *state;
	struct tdbo_cred rc = { 0, 0, 0, NULL };
	struct race r = { .w = w };
	static struct batch b;
	static struct rec got;
	char k[16];
	pthread_t th;
	int i, err, iter, changed = 0;
	char last[64] = "";

	for (i = 0; i < 16; i++) {
		snprintf(k, sizeof(k), "r%d", i);
		put(w->c, "a", k, "t-", 0);
	}
	r.wc = tdbo_client_new(w->o, &rc, false, NULL, NULL, &err);
	assert_non_null(r.wc);
	memset(&b, 0, sizeof(b));
	for (i = 0; i < 16; i++) {
		snprintf(k, sizeof(k), "r%d", i);
		add_get(&b, "a", k, 0);
	}
	assert_int_equal(pthread_create(&th, NULL, committer, &r), 0);
	/* until it has seen many commits (a torn read shows in a few) */
	for (iter = 0; iter < 2000000 && changed < 500; iter++) {
		rec_init(&got, -1);
		assert_int_equal(tdbo_get_many(w->c, b.m, b.n, &got.s,
					       rec_fail, &got), 16);
		assert_int_equal(got.n, 16);
		for (i = 1; i < 16; i++)
			assert_string_equal(got.a[i].val, got.a[0].val);
		if (strcmp(last, got.a[0].val))
			changed++;
		snprintf(last, sizeof(last), "%s", got.a[0].val);
	}
	r.stop = 1;
	pthread_join(th, NULL);
	tdbo_client_free(r.wc);
	print_message("batches saw %d different transactions\n", changed);
	assert_true(changed > 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(same_as_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(stops_without_room, setup,
						teardown),
		cmocka_unit_test_setup_teardown(race_sees_whole, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
