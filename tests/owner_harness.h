/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * owner_harness.h - the owner tests' requests (test_owner_cas.c,
 * test_owner_evict.c): a request built with the codec, parsed back as a
 * transport does, run through tdbo_exec() into a sink that parses the
 * answer into struct ans (error and text, value, version, INT, TXN,
 * SCAN parts, TABLE_STAT), and struct world (an owner, root's client
 * c1, uid 1000's c2).  Include after cmocka.h and owner.h.
 */
#ifndef TDB_TESTS_OWNER_HARNESS_H
#define TDB_TESTS_OWNER_HARNESS_H

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
	struct tdb_proto_stat stat;     /* TABLE_STAT's */
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
	if (TDB_PROTO_HAS(&m, TDB_A_STAT))
		a->stat = m.stat;
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

static inline struct tdb_proto_msg
req(uint8_t cmd, const char *table,
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

static inline struct ans
put_c(struct tdbo_client *c, const char *t, const char *k,
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

static inline struct ans
del_c(struct tdbo_client *c, const char *t, const char *k,
			uint64_t ifver, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_DEL, t, k, txn);

	if (ifver) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m.if_version = ifver;
	}
	return run(c, &m);
}

static inline struct ans
get_c(struct tdbo_client *c, const char *t, const char *k,
			uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_GET, t, k, txn);

	return run(c, &m);
}

static inline struct ans
incr_c(struct tdbo_client *c, const char *t, const char *k,
			 int64_t delta, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_INCR, t, k, txn);

	m.attrs |= TDB_PROTO_BIT(TDB_A_DELTA);
	m.delta = delta;
	return run(c, &m);
}

static inline uint64_t
begin(struct tdbo_client *c)
{
	struct tdb_proto_msg m = req(TDB_CMD_TXN_BEGIN, NULL, NULL, 0);
	struct ans a = run(c, &m);

	assert_int_equal(a.err, 0);
	assert_true(a.txn != 0);
	return a.txn;
}

static inline struct ans
commit(struct tdbo_client *c, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_TXN_COMMIT, NULL, NULL, txn);

	return run(c, &m);
}

#endif
