// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_snap.c - the owner's snapshot scans (src/owner/snap.c) in
 * user space, driven through tdbo_exec() and tdbo_dump_run() with a sink
 * that parses every answer back, so the walk goes exactly as far as the
 * test lets it:
 *
 *  - two snapshots of one table share one copy of each old value
 *    (tdbo_snap_mem is about one copy, not two); both dump the table as
 *    it was, also after the snapshot that made the copies is freed;
 *  - keys the walk has passed get no copy;
 *  - max_snapshot_memory, max_snapshot_memory_per_uid (an ordinary uid;
 *    root exempt) and max_snapshot_bytes fail the scan with -ENOBUFS and
 *    a message naming the bound and the key; the writers never fail;
 *  - every byte is given back: tdbo_snap_mem is 0 once the scans are
 *    freed.
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

#define NK   256                /* keys */
#define VLEN 4096               /* their initial values' length */
#define COPY ((uint64_t)NK * VLEN)      /* one copy of the old values */

static struct tdbo_limits lim;

static void lim_defaults(void)
{
	memset(&lim, 0, sizeof(lim));
	lim.default_mode = 0600;
	lim.feed_size = 1u << 16;
	lim.max_tables = 64;
	lim.max_txns = 16;
	lim.max_txn_ops = 1024;
	lim.max_txn_bytes = 1u << 20;
	lim.max_snapshot_bytes = 256ull << 20;
	lim.max_snapshot_memory = 1024ull << 20;
	lim.max_snapshot_memory_per_uid = 512ull << 20;
}

/* --- a sink that parses what it is given ---------------------------------- */

struct rsink {
	struct tdbo_sink s;
	unsigned char *buf;
	long room;              /* parts it still takes (< 0: any) */
	unsigned char got[NK];  /* per key: returned */
	long parts;
	int bad;                /* a record that is not the initial one */
};

static void init_val(unsigned char *v, int i)
{
	int n;

	for (n = 0; n < VLEN; n++)
		v[n] = (unsigned char)('a' + (i * 3 + n) % 26);
}

static int key_index(const void *k, size_t kl)
{
	const char *s = k;

	if (kl != 5 || s[0] != 'k')
		return -1;
	return atoi(s + 1);
}

static void *rs_reserve(struct tdbo_sink *s, size_t len)
{
	struct rsink *r = (struct rsink *)s;

	if (r->room == 0 || len > TDB_PROTO_MSG_MAX)
		return NULL;
	return r->buf;
}

static void rs_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct rsink *r = (struct rsink *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	unsigned char want[VLEN];
	int i;

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (m.cmd != TDB_CMD_SCAN || !TDB_PROTO_HAS(&m, TDB_A_KEY))
		return;
	if (r->room > 0)
		r->room--;
	r->parts++;
	i = key_index(m.key, m.key_len);
	assert_true(i >= 0 && i < NK);
	assert_false(r->got[i]);        /* each key once */
	r->got[i] = 1;
	init_val(want, i);
	if (m.value_len != VLEN || m.value_frags > 1 ||
	    memcmp(m.value, want, VLEN))
		r->bad++;
}

static void rs_init(struct rsink *r, long room)
{
	static unsigned char buf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));

	memset(r, 0, sizeof(*r));
	r->s.reserve = rs_reserve;
	r->s.commit = rs_commit;
	r->buf = buf;
	r->room = room;
}

/* --- requests -------------------------------------------------------------- */

static int exec(struct tdbo_client *c, struct tdb_proto_msg *in,
		struct tdbo_out *res, const char **msg)
{
	static unsigned char req[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out out;
	struct rsink r;
	long n;
	int err;

	in->seq = 1;
	n = tdb_proto_build(req, sizeof(req), TDB_PROTO_REQUEST, in, &ext);
	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(req, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	rs_init(&r, -1);
	err = tdbo_exec(c, &m, &r.s, &ext, res ? res : &out);
	if (msg)
		*msg = ext.msg;
	return err;
}

static void create(struct tdbo_client *c, const char *name)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_MODE),
		.table = name, .table_len = (uint32_t)strlen(name),
		.mode = 0644,
	};

	assert_int_equal(exec(c, &m, NULL, NULL), 0);
}

static void drop(struct tdbo_client *c, const char *name)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_DROP,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		.table = name, .table_len = (uint32_t)strlen(name),
	};

	assert_int_equal(exec(c, &m, NULL, NULL), 0);
}

static int put(struct tdbo_client *c, const char *name, int i,
	       const void *v, size_t vlen)
{
	char k[16];
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
			 TDB_PROTO_BIT(TDB_A_VALUE),
		.table = name, .table_len = (uint32_t)strlen(name),
		.key = k, .key_len = 5,
		.value = v, .value_len = (uint32_t)vlen,
	};

	snprintf(k, sizeof(k), "k%04d", i);
	return exec(c, &m, NULL, NULL);
}

static void load(struct tdbo_client *c, const char *name)
{
	unsigned char v[VLEN];
	int i;

	create(c, name);
	for (i = 0; i < NK; i++) {
		init_val(v, i);
		assert_int_equal(put(c, name, i, v, VLEN), 0);
	}
}

/* Every key changed: the writer never notices a snapshot. */
static void overwrite(struct tdbo_client *c, const char *name)
{
	int i;

	for (i = 0; i < NK; i++)
		assert_int_equal(put(c, name, i, "x", 1), 0);
}

static struct tdbo_dump *snap_scan(struct tdbo_client *c, const char *name)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_SCAN,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_SCAN_FLAGS),
		.table = name, .table_len = (uint32_t)strlen(name),
		.scan_flags = TDB_SCAN_SNAPSHOT,
	};
	struct tdbo_out res;

	assert_int_equal(exec(c, &m, &res, NULL), 0);
	assert_non_null(res.dump);
	return res.dump;
}

/* Run d until it ends (or r has taken its room): its result. */
static int run(struct tdbo_dump *d, struct rsink *r, const char **msg)
{
	struct tdb_proto_extack ext = { NULL };
	int rc;

	do
		rc = tdbo_dump_run(d, &r->s, &ext);
	while (rc > 0 && r->room != 0);
	if (msg)
		*msg = ext.msg;
	return rc;
}

/* --- the world ------------------------------------------------------------- */

struct world {
	struct tdbo_owner *o;
	struct tdbo_client *root, *root2, *user;
};

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred rc = { 0, 0, 0, NULL }, uc = { 1000, 1000, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	int err;

	assert_non_null(w);
	lim_defaults();
	w->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(w->o);
	w->root = tdbo_client_new(w->o, &rc, false, NULL, NULL, &err);
	w->root2 = tdbo_client_new(w->o, &rc, false, NULL, NULL, &err);
	w->user = tdbo_client_new(w->o, &uc, false, NULL, NULL, &err);
	assert_true(w->root && w->root2 && w->user);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	assert_int_equal(tdbo_snap_mem(w->o), 0);
	tdbo_client_free(w->user);
	tdbo_client_free(w->root2);
	tdbo_client_free(w->root);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

static void all_initial(const struct rsink *r)
{
	int i;

	assert_int_equal(r->bad, 0);
	assert_int_equal(r->parts, NK);
	for (i = 0; i < NK; i++)
		assert_true(r->got[i]);
}

/* --- the cases ------------------------------------------------------------- */

static void shared_copy(void **state)
{
	struct world *w = *state;
	struct tdbo_dump *a, *b;
	struct rsink ra, rb;
	uint64_t mem;

	load(w->root, "shared");
	a = snap_scan(w->root, "shared");
	b = snap_scan(w->root2, "shared");
	assert_int_equal(tdbo_snap_mem(w->o), 0);
	overwrite(w->root, "shared");
	/* one copy of each old value (plus the two maps), not two */
	mem = tdbo_snap_mem(w->o);
	assert_true(mem >= COPY);
	assert_true(mem < COPY + COPY / 4);
	/* b (registered last) made the copies; a shares them after b goes */
	rs_init(&rb, -1);
	assert_int_equal(run(b, &rb, NULL), 0);
	all_initial(&rb);
	tdbo_dump_free(b);
	assert_true(tdbo_snap_mem(w->o) >= COPY);
	rs_init(&ra, -1);
	assert_int_equal(run(a, &ra, NULL), 0);
	all_initial(&ra);
	tdbo_dump_free(a);
	assert_int_equal(tdbo_snap_mem(w->o), 0);
	drop(w->root, "shared");
}

static void passed_keys_no_copy(void **state)
{
	struct world *w = *state;
	struct tdbo_dump *d;
	struct rsink r;
	uint64_t mem;

	load(w->root, "passed");
	d = snap_scan(w->root, "passed");
	rs_init(&r, NK / 2);            /* the walk stops half way */
	assert_int_equal(run(d, &r, NULL), 1);
	assert_int_equal(r.parts, NK / 2);
	overwrite(w->root, "passed");
	mem = tdbo_snap_mem(w->o);
	/* about half the old values: the keys still ahead of the walk
	 * (the record taken but not sent yet is one of them) */
	assert_true(mem >= COPY / 2 - VLEN);
	assert_true(mem < COPY / 2 + COPY / 8);
	r.room = -1;
	assert_int_equal(run(d, &r, NULL), 0);
	all_initial(&r);
	tdbo_dump_free(d);
	assert_int_equal(tdbo_snap_mem(w->o), 0);
	drop(w->root, "passed");
}

/* A scan of c over a changed table fails with -ENOBUFS naming bound. */
static void scan_fails(struct world *w, struct tdbo_client *c,
		       const char *table, const char *bound)
{
	struct tdbo_dump *d;
	const char *msg = NULL;
	struct rsink r;
	int rc;

	load(w->root, table);
	d = snap_scan(c, table);
	overwrite(w->root, table);
	rs_init(&r, -1);
	rc = run(d, &r, &msg);
	assert_int_equal(rc, -ENOBUFS);
	assert_non_null(msg);
	if (!strstr(msg, bound) || !strstr(msg, "at key 'k0"))
		fail_msg("\"%s\" does not name %s and the key", msg, bound);
	assert_int_equal(r.bad, 0);     /* what it sent was right */
	tdbo_dump_free(d);
	assert_int_equal(tdbo_snap_mem(w->o), 0);
	drop(w->root, table);
}

static void bound_all(void **state)
{
	struct world *w = *state;

	lim.max_snapshot_memory = COPY / 4;
	scan_fails(w, w->root, "all", "max-snapshot-memory (");
	lim.max_snapshot_memory = 1024ull << 20;
}

static void bound_per_uid(void **state)
{
	struct world *w = *state;
	struct tdbo_dump *d;
	struct rsink r;

	lim.max_snapshot_memory_per_uid = COPY / 4;
	scan_fails(w, w->user, "peruid", "max-snapshot-memory-per-uid");
	/* root is exempt */
	load(w->root, "peruid");
	d = snap_scan(w->root, "peruid");
	overwrite(w->root, "peruid");
	rs_init(&r, -1);
	assert_int_equal(run(d, &r, NULL), 0);
	all_initial(&r);
	tdbo_dump_free(d);
	drop(w->root, "peruid");
	lim.max_snapshot_memory_per_uid = 512ull << 20;
}

static void bound_one(void **state)
{
	struct world *w = *state;

	lim.max_snapshot_bytes = COPY / 4;
	scan_fails(w, w->root, "one", "max-snapshot-bytes (");
	lim.max_snapshot_bytes = 256ull << 20;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_copy),
		cmocka_unit_test(passed_keys_no_copy),
		cmocka_unit_test(bound_all),
		cmocka_unit_test(bound_per_uid),
		cmocka_unit_test(bound_one),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
