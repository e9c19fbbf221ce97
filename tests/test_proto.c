// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_proto.c - unit tests of the protocol codec (src/proto, ABI in
 * include/tdb/proto.h).
 *
 * Messages are built with the codec or, to make broken ones, by hand with
 * libmnl, then copied into a heap buffer of exactly the size handed to
 * the parser, so that under -Db_sanitize=address any read past it fails
 * the test.  Builders are given exact-size buffers too, pre-filled with a
 * pattern that must survive a refused build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "proto.h"

#define GENL_LEN (NLMSG_HDRLEN + GENL_HDRLEN)
#define BIGBUF   (TDB_PROTO_MSG_MAX + 2 * 65536)   /* + a fragment too many */
#define MAX_ERRNO_TEST 4095

/* Scratch for building; 4-byte aligned. */
static uint32_t wbuf[BIGBUF / 4];
static uint32_t wbuf2[BIGBUF / 4];
/* values and keys; room for one fragment too many */
static unsigned char bigval[TDB_VALUE_MAX + 2 * TDB_VALUE_FRAG];

/* The exact-size copy the last parse looked at (m's pointers point in). */
static void *last_copy;

static void free_copy(void)
{
	free(last_copy);
	last_copy = NULL;
}

/* Parse the first len bytes at msg from an exact-size heap copy. */
static int parse_len(const void *msg, size_t len, enum tdb_proto_dir dir,
		     struct tdb_proto_msg *m, struct tdb_proto_extack *ext)
{
	free_copy();
	last_copy = malloc(len ? len : 1);
	assert_non_null(last_copy);
	memcpy(last_copy, msg, len);
	return tdb_proto_parse(last_copy, len, dir, m, ext);
}

static int parse(const void *msg, enum tdb_proto_dir dir,
		 struct tdb_proto_msg *m, struct tdb_proto_extack *ext)
{
	return parse_len(msg, ((const struct nlmsghdr *)msg)->nlmsg_len, dir,
			 m, ext);
}

/* A message begun by hand. */
static struct nlmsghdr *raw(void *buf, uint16_t type, uint16_t flags,
			    uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	nlh->nlmsg_seq = 77;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/* A request as the builder would flag it. */
static struct nlmsghdr *rawreq(void *buf, uint8_t cmd)
{
	uint16_t f = NLM_F_REQUEST;

	if (tdb_proto_cmd_is_dump(cmd))
		f |= NLM_F_DUMP;
	if (tdb_proto_cmd_is_ack(cmd))
		f |= NLM_F_ACK;
	return raw(buf, TDB_PROTO_FAMILY, f, cmd, TDB_PROTO_VERSION);
}

static struct nlattr *attr_at(const void *msg, uint32_t off)
{
	return (struct nlattr *)((char *)msg + off);
}

/* Offset of the first attribute of this type (top level), or 0. */
static uint32_t find_attr(const struct nlmsghdr *nlh, uint16_t type)
{
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, GENL_HDRLEN)
		if (mnl_attr_get_type(a) == type)
			return (uint32_t)((const char *)a - (const char *)nlh);
	return 0;
}

/* Remove every top-level attribute of this type. */
static void drop_attr(struct nlmsghdr *nlh, uint16_t type)
{
	uint32_t off;

	while ((off = find_attr(nlh, type)) != 0) {
		struct nlattr *a = attr_at(nlh, off);
		uint32_t n = MNL_ALIGN(a->nla_len);

		memmove(a, (char *)a + n, nlh->nlmsg_len - off - n);
		nlh->nlmsg_len -= n;
	}
}

/* Append a copy of the first attribute of this type; its offset. */
static uint32_t dup_attr(struct nlmsghdr *nlh, uint16_t type)
{
	uint32_t off = find_attr(nlh, type), at = nlh->nlmsg_len;
	struct nlattr *a = attr_at(nlh, off);
	uint32_t n = MNL_ALIGN(a->nla_len);

	assert_int_not_equal(off, 0);
	memcpy((char *)nlh + at, a, n);
	nlh->nlmsg_len += n;
	return at;
}

static void fill_pattern(void *p, size_t n, unsigned int seed)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		c[i] = (unsigned char)(i * 131u + seed + (i >> 8));
}

/* --- messages with every attribute ------------------------------------ */

static const char keybytes[] = "the key \0 with a nul";
static const char prefixbytes[] = "the k";
static const unsigned char cursorbytes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };

static void full_stat(struct tdb_proto_stat *st)
{
	st->present = 0x7ffffc; /* types 2..22 */
	st->table_flags = TDB_TABLE_F_ORDERED;
	st->max_bytes = 1ull << 33;
	st->max_records = 77;
	st->evict = TDB_EVICT_TTL;
	st->evicted = 5;
	st->default_ttl = 86400000;
	st->expiring = 1ull << 35;
	st->expired = 99;
	st->records = 1000001;
	st->bytes_used = 1ull << 40;
	st->bytes_allocated = (1ull << 40) + 3;
	st->bytes_pending = 12345;
	st->extents = 17;
	st->max_extents = 32768;
	st->page_size = 2097152;
	st->index_nodes = 99;
	st->index_buckets = 4097;
	st->uid = 1000;
	st->gid = 100;
	st->mode = 0640;
	st->state = TDB_TABLE_SET_ASIDE;
}

static void full_counters(struct tdb_proto_counters *c)
{
	/* types 2..18, and 25 (a u32 after the u64 durability ones) */
	c->present = 0x7fffc | TDB_PROTO_BIT(TDB_CTR_A_TABLES_ASIDE);
	c->tables = 3;
	c->clients = 40;
	c->watches = 5;
	c->txns = 6;
	c->requests = 1ull << 33;
	c->errors = 12;
	c->uptime_ms = 86400000;
	c->accepted = 1ull << 40;
	c->cleanups = 77;
	c->txns_aborted = 78;
	c->watches_dropped = 79;
	c->rings = 80;
	c->rings_freed = 81;
	c->stuck = 82;
	c->violations = 83;
	c->throttled = 84;
	c->dumps = 85;
	c->tables_aside = 2;
}

/* Fill m with every attribute the command takes in that direction. */
static const unsigned char hashbytes[24] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
	20, 21, 22, 23, 24,
};

/* Two packed records (tdb/proto.h, TDB_A_RECORDS): "k1" -> "v1" at
 * version 5, no deadline; "key2" -> "" at version 9, deadline 123. */
static unsigned char recbytes[2 * TDB_RESTORE_REC_HDR + 2 + 2 + 4];

static uint32_t pack_two(unsigned char *p)
{
	tdb_proto_record_pack(p, "k1", 2, "v1", 2, 5, 0);
	tdb_proto_record_pack(p + TDB_RESTORE_REC_HDR + 4, "key2", 4, NULL, 0,
			      9, 123);
	return 2 * TDB_RESTORE_REC_HDR + 8;
}

static void fill_all(struct tdb_proto_msg *m, uint8_t cmd,
		     enum tdb_proto_dir dir, uint64_t allow)
{
	memset(m, 0, sizeof(*m));
	m->cmd = cmd;
	m->seq = 0xdeadbeef;
	m->pid = 4242;
	m->attrs = allow;
	m->table = "sessions.v2";
	m->key = keybytes;
	m->key_len = sizeof(keybytes);
	m->value = "some value";
	m->value_len = 10;
	m->flags = TDB_PUT_NOOVERWRITE;
	m->txn = 0x0123456789abcdefull;
	m->prefix = prefixbytes;
	m->prefix_len = 5;
	m->limit = 100;
	m->cursor = cursorbytes;
	m->cursor_len = sizeof(cursorbytes);
	full_stat(&m->stat);
	full_counters(&m->counters);
	m->max_extents = 1024;
	m->uid = 1000;
	m->gid = 1001;
	m->mode = 0600;
	m->rec_version = 0x1122334455667788ull;
	m->if_version = 77;
	m->delta = -5;
	m->ival = INT64_MIN;
	m->set_version = 1ull << 62;
	m->ttl = 30000;
	m->deadline = 1796000000123ull;
	m->expire_flags = TDB_EXPIRE_PERSIST;
	m->reason = TDB_REASON_EXPIRED;
	m->max_bytes = 1ull << 31;
	m->max_records = 1000000;
	m->evict = TDB_EVICT_LFU;
	m->hashes = hashbytes;
	m->nhashes = 3;
	m->table_flags = TDB_TABLE_F_ORDERED;
	m->from = "a\0from";
	m->from_len = 6;
	m->to = "\xffto";
	m->to_len = 3;
	m->records = recbytes;
	m->records_len = pack_two(recbytes);
	(void)dir;
}

#define A(x) TDB_PROTO_BIT(TDB_A_##x)

/* What each command allows and requires: the table in tdb/proto.h. */
static const struct {
	uint64_t req_allow, req_need, ans_allow, ans_need;
	uint16_t ans_flags;     /* 0xffff: no answer message */
} spec[TDB_CMD_MAX + 1] = {
	[TDB_CMD_TABLE_CREATE] = { A(TABLE) | A(MAX_EXTENTS) | A(UID) |
		A(GID) | A(MODE) | A(TTL) | A(MAX_BYTES) | A(MAX_RECORDS) |
		A(EVICT) | A(TABLE_FLAGS), A(TABLE), 0, 0, 0xffff },
	[TDB_CMD_TABLE_DROP] = { A(TABLE), A(TABLE), A(TABLE), 0, 0 },
	[TDB_CMD_TABLE_LIST] = { 0, 0, A(TABLE) | A(STAT), A(TABLE) | A(STAT),
		NLM_F_MULTI },
	[TDB_CMD_TABLE_STAT] = { A(TABLE), A(TABLE), A(TABLE) | A(STAT),
		A(TABLE) | A(STAT), 0 },
	[TDB_CMD_GET] = { A(TABLE) | A(KEY) | A(TXN), A(TABLE) | A(KEY),
		A(VALUE) | A(VERSION) | A(DEADLINE), A(VALUE), 0 },
	[TDB_CMD_PUT] = { A(TABLE) | A(KEY) | A(VALUE) | A(FLAGS) | A(TXN) |
		A(IF_VERSION) | A(SET_VERSION) | A(TTL) | A(DEADLINE),
		A(TABLE) | A(KEY) | A(VALUE),
		A(TABLE) | A(KEY) | A(VALUE) | A(VERSION) | A(DEADLINE),
		A(KEY) | A(VALUE), 0 },
	[TDB_CMD_DEL] = { A(TABLE) | A(KEY) | A(TXN) | A(IF_VERSION),
		A(TABLE) | A(KEY), A(TABLE) | A(KEY) | A(VERSION) | A(REASON),
		A(KEY), 0 },
	[TDB_CMD_SCAN] = { A(TABLE) | A(PREFIX) | A(LIMIT) | A(CURSOR) |
		A(FROM) | A(TO) | A(TXN), A(TABLE), A(KEY) | A(VALUE) |
		A(CURSOR) | A(VERSION) | A(DEADLINE), 0, NLM_F_MULTI },
	[TDB_CMD_TXN_BEGIN] = { 0, 0, A(TXN), A(TXN), 0 },
	[TDB_CMD_TXN_COMMIT] = { A(TXN), A(TXN), 0, 0, 0xffff },
	[TDB_CMD_TXN_ABORT] = { A(TXN), A(TXN), 0, 0, 0xffff },
	[TDB_CMD_WATCH] = { A(TABLE) | A(PREFIX), A(TABLE), 0, 0, 0xffff },
	[TDB_CMD_UNWATCH] = { A(TABLE) | A(PREFIX), A(TABLE), 0, 0, 0xffff },
	[TDB_CMD_STATS] = { 0, 0, A(COUNTERS), A(COUNTERS), 0 },
	[TDB_CMD_ATTACH] = { 0, 0, 0, 0, 0xffff },
	[TDB_CMD_TABLE_MAP] = { A(TABLE), A(TABLE), 0, 0, 0xffff },
	[TDB_CMD_INCR] = { A(TABLE) | A(KEY) | A(DELTA) | A(TXN),
		A(TABLE) | A(KEY), A(INT) | A(VERSION), A(INT), 0 },
	[TDB_CMD_TOUCH] = { A(TABLE) | A(HASHES), A(TABLE) | A(HASHES), 0,
		0, 0xffff },
	[TDB_CMD_EXPIRE] = { A(TABLE) | A(KEY) | A(TTL) | A(DEADLINE) |
		A(EXPIRE_FLAGS), A(TABLE) | A(KEY), A(VERSION) | A(DEADLINE),
		A(VERSION), 0 },
	[TDB_CMD_RESTORE_BULK] = { A(TABLE) | A(RECORDS),
		A(TABLE) | A(RECORDS), 0, 0, 0xffff },
};

/* Every field that the attributes in `attrs` carry is equal. */
static void assert_same(const struct tdb_proto_msg *in,
			const struct tdb_proto_msg *out)
{
	uint64_t at = in->attrs;

	assert_int_equal(out->attrs, at);
	assert_int_equal(out->cmd, in->cmd);
	assert_int_equal(out->version, TDB_PROTO_VERSION);
	assert_int_equal(out->seq, in->seq);
	assert_int_equal(out->pid, in->pid);
	if (at & A(TABLE)) {
		assert_string_equal(out->table, in->table);
		assert_int_equal(out->table_len, strlen(in->table));
	}
	if (at & A(KEY)) {
		assert_int_equal(out->key_len, in->key_len);
		assert_memory_equal(out->key, in->key, in->key_len);
	}
	if (at & A(VALUE)) {
		unsigned char *v = malloc(in->value_len + 1);

		assert_non_null(v);
		assert_int_equal(out->value_len, in->value_len);
		assert_int_equal(out->value_frags, in->value_len == 0 ? 1 :
			(in->value_len + TDB_VALUE_FRAG - 1) / TDB_VALUE_FRAG);
		tdb_proto_value_copy(out, v);
		if (in->value_len)
			assert_memory_equal(v, in->value, in->value_len);
		if (out->value_frags == 1 && in->value_len)
			assert_memory_equal(out->value, in->value,
					    in->value_len);
		free(v);
	}
	if (at & A(FLAGS))
		assert_int_equal(out->flags, in->flags);
	if (at & A(TXN))
		assert_true(out->txn == in->txn);
	if (at & A(VERSION))
		assert_true(out->rec_version == in->rec_version);
	if (at & A(IF_VERSION))
		assert_true(out->if_version == in->if_version);
	if (at & A(DELTA))
		assert_true(out->delta == in->delta);
	if (at & A(INT))
		assert_true(out->ival == in->ival);
	if (at & A(SET_VERSION))
		assert_true(out->set_version == in->set_version);
	if (at & A(PREFIX)) {
		assert_int_equal(out->prefix_len, in->prefix_len);
		if (in->prefix_len)
			assert_memory_equal(out->prefix, in->prefix,
					    in->prefix_len);
	}
	if (at & A(LIMIT))
		assert_int_equal(out->limit, in->limit);
	if (at & A(FROM)) {
		assert_int_equal(out->from_len, in->from_len);
		assert_memory_equal(out->from, in->from, in->from_len);
	}
	if (at & A(TO)) {
		assert_int_equal(out->to_len, in->to_len);
		assert_memory_equal(out->to, in->to, in->to_len);
	}
	if (at & A(TABLE_FLAGS))
		assert_int_equal(out->table_flags, in->table_flags);
	if (at & A(SCAN_FLAGS))
		assert_int_equal(out->scan_flags, in->scan_flags);
	if (at & A(CURSOR)) {
		assert_int_equal(out->cursor_len, in->cursor_len);
		assert_memory_equal(out->cursor, in->cursor, in->cursor_len);
	}
	if (at & A(STAT)) {
		const struct tdb_proto_stat *a = &in->stat, *b = &out->stat;

		assert_int_equal(b->present, a->present);
#define SAME(f, t) if (a->present & TDB_PROTO_BIT(t)) \
			assert_true(b->f == a->f); else assert_true(b->f == 0)
		SAME(records, TDB_STAT_A_RECORDS);
		SAME(bytes_used, TDB_STAT_A_BYTES_USED);
		SAME(bytes_allocated, TDB_STAT_A_BYTES_ALLOCATED);
		SAME(bytes_pending, TDB_STAT_A_BYTES_PENDING);
		SAME(extents, TDB_STAT_A_EXTENTS);
		SAME(max_extents, TDB_STAT_A_MAX_EXTENTS);
		SAME(page_size, TDB_STAT_A_PAGE_SIZE);
		SAME(index_nodes, TDB_STAT_A_INDEX_NODES);
		SAME(index_buckets, TDB_STAT_A_INDEX_BUCKETS);
		SAME(uid, TDB_STAT_A_UID);
		SAME(gid, TDB_STAT_A_GID);
		SAME(mode, TDB_STAT_A_MODE);
		SAME(state, TDB_STAT_A_STATE);
		SAME(table_flags, TDB_STAT_A_TABLE_FLAGS);
	}
	if (at & A(COUNTERS)) {
		const struct tdb_proto_counters *a = &in->counters;
		const struct tdb_proto_counters *b = &out->counters;

		assert_int_equal(b->present, a->present);
		SAME(tables, TDB_CTR_A_TABLES);
		SAME(clients, TDB_CTR_A_CLIENTS);
		SAME(watches, TDB_CTR_A_WATCHES);
		SAME(txns, TDB_CTR_A_TXNS);
		SAME(requests, TDB_CTR_A_REQUESTS);
		SAME(errors, TDB_CTR_A_ERRORS);
		SAME(uptime_ms, TDB_CTR_A_UPTIME_MS);
		SAME(accepted, TDB_CTR_A_ACCEPTED);
		SAME(cleanups, TDB_CTR_A_CLEANUPS);
		SAME(txns_aborted, TDB_CTR_A_TXNS_ABORTED);
		SAME(watches_dropped, TDB_CTR_A_WATCHES_DROPPED);
		SAME(rings, TDB_CTR_A_RINGS);
		SAME(rings_freed, TDB_CTR_A_RINGS_FREED);
		SAME(stuck, TDB_CTR_A_STUCK);
		SAME(violations, TDB_CTR_A_VIOLATIONS);
		SAME(throttled, TDB_CTR_A_THROTTLED);
		SAME(dumps, TDB_CTR_A_DUMPS);
		SAME(tables_aside, TDB_CTR_A_TABLES_ASIDE);
#undef SAME
	}
	if (at & A(MAX_EXTENTS))
		assert_int_equal(out->max_extents, in->max_extents);
	if (at & A(UID))
		assert_int_equal(out->uid, in->uid);
	if (at & A(GID))
		assert_int_equal(out->gid, in->gid);
	if (at & A(MODE))
		assert_int_equal(out->mode, in->mode);
	if (at & A(RECORDS)) {
		assert_int_equal(out->records_len, in->records_len);
		assert_memory_equal(out->records, in->records, in->records_len);
	}
}

/* The pad bytes after every attribute in [a, end) (and in nests) are 0:
 * a builder must not leak what its buffer held before. */
static void assert_padding_zero(const unsigned char *p, const unsigned char *end)
{
	while (p < end) {
		const struct nlattr *a = (const void *)p;
		uint32_t i;

		assert_true(a->nla_len >= 4 && p + a->nla_len <= end);
		for (i = a->nla_len; i < (uint32_t)NLA_ALIGN(a->nla_len); i++)
			assert_int_equal(p[i], 0);
		if (a->nla_type & NLA_F_NESTED)
			assert_padding_zero(p + 4, p + a->nla_len);
		p += NLA_ALIGN(a->nla_len);
	}
}

/* Build m into an exact-size buffer, check size() agrees, parse it back
 * and compare.  Returns the length; the message is left in wbuf. */
static long roundtrip(const struct tdb_proto_msg *m, enum tdb_proto_dir dir)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	long size, len;
	void *exact;

	size = tdb_proto_size(dir, m, &ext);
	assert_true(size > 0);
	exact = malloc((size_t)size);
	assert_non_null(exact);
	memset(exact, 0xa5, (size_t)size);      /* an older message */
	len = tdb_proto_build(exact, (size_t)size, dir, m, &ext);
	assert_int_equal(len, size);
	assert_padding_zero((unsigned char *)exact + GENL_LEN,
			    (unsigned char *)exact + len);
	assert_int_equal(((struct genlmsghdr *)((char *)exact +
			 NLMSG_HDRLEN))->reserved, 0);
	assert_int_equal(((struct nlmsghdr *)exact)->nlmsg_len, len);
	assert_int_equal(len % 4, 0);
	memcpy(wbuf, exact, (size_t)len);
	free(exact);
	assert_int_equal(parse(wbuf, dir, &out, &ext), 0);
	assert_null(ext.msg);
	assert_ptr_equal(out.nlh, last_copy);
	assert_int_equal(out.type, TDB_PROTO_FAMILY);
	assert_same(m, &out);
	return len;
}

static uint16_t req_flags(uint8_t cmd)
{
	return NLM_F_REQUEST |
	       (tdb_proto_cmd_is_dump(cmd) ? NLM_F_DUMP : 0) |
	       (tdb_proto_cmd_is_ack(cmd) ? NLM_F_ACK : 0);
}

/* --- round trips -------------------------------------------------------- */

static void test_roundtrip_requests(void **state)
{
	struct tdb_proto_msg m;
	uint8_t cmd;

	(void)state;
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		/* everything the command takes */
		fill_all(&m, cmd, TDB_PROTO_REQUEST, spec[cmd].req_allow);
		roundtrip(&m, TDB_PROTO_REQUEST);
		assert_int_equal(((struct nlmsghdr *)wbuf)->nlmsg_flags,
				 req_flags(cmd));
		assert_int_equal(((struct nlmsghdr *)wbuf)->nlmsg_type,
				 TDB_PROTO_FAMILY);
		/* only what it needs */
		fill_all(&m, cmd, TDB_PROTO_REQUEST, spec[cmd].req_need);
		roundtrip(&m, TDB_PROTO_REQUEST);
		/* the same bytes are not an answer */
		{
			struct tdb_proto_msg out;
			struct tdb_proto_extack ext;

			assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out,
					       &ext), -EINVAL);
			assert_non_null(ext.msg);
		}
	}
}

static void test_roundtrip_answers(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;
	uint8_t cmd;

	(void)state;
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		fill_all(&m, cmd, TDB_PROTO_ANSWER, spec[cmd].ans_allow);
		if (spec[cmd].ans_flags == 0xffff) {
			/* acked commands have no answer message */
			assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf),
				TDB_PROTO_ANSWER, &m, &ext), -EINVAL);
			assert_non_null(ext.msg);
			continue;
		}
		roundtrip(&m, TDB_PROTO_ANSWER);
		assert_int_equal(((struct nlmsghdr *)wbuf)->nlmsg_flags,
				 spec[cmd].ans_flags);
		if (cmd != TDB_CMD_SCAN) {
			fill_all(&m, cmd, TDB_PROTO_ANSWER,
				 spec[cmd].ans_need);
			roundtrip(&m, TDB_PROTO_ANSWER);
		}
		/* an answer is not a request */
		{
			struct tdb_proto_msg out;

			assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out,
					       &ext), -EINVAL);
		}
	}
}

static void test_scan_parts(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	struct nlmsghdr *nlh;

	(void)state;
	fill_all(&m, TDB_CMD_SCAN, TDB_PROTO_ANSWER, A(KEY) | A(VALUE));
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.attrs = A(CURSOR);
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.attrs = A(KEY) | A(VALUE) | A(CURSOR);
	roundtrip(&m, TDB_PROTO_ANSWER);

	m.attrs = A(KEY);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_ANSWER,
					 &m, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_A_VALUE);
	m.attrs = 0;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_ANSWER,
					 &m, &ext), -EINVAL);

	/* the same by hand */
	nlh = raw(wbuf, TDB_PROTO_FAMILY, NLM_F_MULTI, TDB_CMD_SCAN, 1);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	mnl_attr_put(nlh, TDB_A_VALUE, 3, "abc");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_A_KEY);
	mnl_attr_put(nlh, TDB_A_KEY, 3, "abc");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	/* a part without NLM_F_MULTI */
	nlh->nlmsg_flags = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
}

static void test_cmd_helpers(void **state)
{
	(void)state;
	assert_string_equal(tdb_proto_cmd_name(TDB_CMD_PUT), "PUT");
	assert_string_equal(tdb_proto_cmd_name(TDB_CMD_TABLE_CREATE),
			    "TABLE_CREATE");
	assert_string_equal(tdb_proto_cmd_name(0), "?");
	assert_string_equal(tdb_proto_cmd_name(TDB_CMD_MAX + 1), "?");
	assert_true(tdb_proto_cmd_is_dump(TDB_CMD_SCAN));
	assert_true(tdb_proto_cmd_is_dump(TDB_CMD_TABLE_LIST));
	assert_false(tdb_proto_cmd_is_dump(TDB_CMD_GET));
	assert_false(tdb_proto_cmd_is_dump(999));
	assert_true(tdb_proto_cmd_is_ack(TDB_CMD_PUT));
	assert_true(tdb_proto_cmd_is_ack(TDB_CMD_WATCH));
	assert_false(tdb_proto_cmd_is_ack(TDB_CMD_GET));
	assert_false(tdb_proto_cmd_is_ack(TDB_CMD_TXN_BEGIN));
}

/* --- limits ------------------------------------------------------------- */

/* A GET request with a key of this length, built by hand. */
static int raw_get_key(size_t klen, struct tdb_proto_msg *out,
		       struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_GET);

	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_KEY, klen, bigval);
	return parse(wbuf, TDB_PROTO_REQUEST, out, ext);
}

static void test_key_limits(void **state)
{
	static const size_t ok[] = { 1, 2, 3, 4, 5, 4095, 4096 };
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	size_t i;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 1);
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		fill_all(&m, TDB_CMD_GET, TDB_PROTO_REQUEST,
			 A(TABLE) | A(KEY));
		m.key = bigval;
		m.key_len = (uint32_t)ok[i];
		roundtrip(&m, TDB_PROTO_REQUEST);
		assert_int_equal(raw_get_key(ok[i], &out, &ext), 0);
		assert_int_equal(out.key_len, ok[i]);
	}
	/* 0 and 4097: the builder and the parser refuse alike */
	m.key_len = 0;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	assert_string_equal(ext.msg, "key is empty");
	assert_int_equal(raw_get_key(0, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "key is empty");
	assert_int_equal(ext.offset, find_attr(last_copy, TDB_A_KEY));

	m.key_len = TDB_KEY_MAX + 1;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -E2BIG);
	assert_int_equal(raw_get_key(TDB_KEY_MAX + 1, &out, &ext), -E2BIG);
	assert_int_equal(ext.offset, find_attr(last_copy, TDB_A_KEY));
	assert_int_equal(ext.offset, GENL_LEN + 8);
	assert_int_equal(raw_get_key(60000, &out, &ext), -E2BIG);
	/* a key in a notification is limited the same way */
	fill_all(&m, TDB_CMD_DEL, TDB_PROTO_ANSWER, A(KEY));
	m.key = bigval;
	m.key_len = TDB_KEY_MAX;
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.key_len = TDB_KEY_MAX + 1;
	assert_int_equal(tdb_proto_size(TDB_PROTO_ANSWER, &m, &ext), -E2BIG);
}

static void test_value_limits(void **state)
{
	static const uint32_t lens[] = {
		0, 1, 3, 4, 5, TDB_VALUE_FRAG - 1, TDB_VALUE_FRAG,
		TDB_VALUE_FRAG + 1, 2 * TDB_VALUE_FRAG, 2 * TDB_VALUE_FRAG + 7,
		TDB_VALUE_MAX - 1, TDB_VALUE_MAX,
	};
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;
	size_t i;
	long len;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 2);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		fill_all(&m, TDB_CMD_PUT, TDB_PROTO_REQUEST,
			 spec[TDB_CMD_PUT].req_allow);
		m.value = bigval;
		m.value_len = lens[i];
		len = roundtrip(&m, TDB_PROTO_REQUEST);
		assert_true(len <= TDB_PROTO_MSG_MAX);
		/* and as a GET reply */
		fill_all(&m, TDB_CMD_GET, TDB_PROTO_ANSWER, A(VALUE));
		m.value = bigval;
		m.value_len = lens[i];
		roundtrip(&m, TDB_PROTO_ANSWER);
	}
	/* the largest messages fit in TDB_PROTO_MSG_MAX */
	fill_all(&m, TDB_CMD_SCAN, TDB_PROTO_ANSWER, A(KEY) | A(VALUE) |
		 A(CURSOR));
	m.key = bigval;
	m.key_len = TDB_KEY_MAX;
	m.value = bigval;
	m.value_len = TDB_VALUE_MAX;
	m.cursor = bigval;
	m.cursor_len = TDB_CURSOR_MAX;
	len = roundtrip(&m, TDB_PROTO_ANSWER);
	assert_true(len <= TDB_PROTO_MSG_MAX);
	fill_all(&m, TDB_CMD_PUT, TDB_PROTO_REQUEST,
		 spec[TDB_CMD_PUT].req_allow);
	m.table = "0123456789012345678901234567890123456789012345678901234567890123";
	m.key = bigval;
	m.key_len = TDB_KEY_MAX;
	m.value = bigval;
	m.value_len = TDB_VALUE_MAX;
	len = roundtrip(&m, TDB_PROTO_REQUEST);
	assert_true(len <= TDB_PROTO_MSG_MAX);

	/* 1 MiB + 1: refused by the builder */
	m.value_len = TDB_VALUE_MAX + 1;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -E2BIG);
	assert_string_equal(ext.msg, "value is longer than 1 MiB");
}

/* A PUT built by hand with these VALUE fragment sizes. */
static int raw_put_frags(const uint32_t *frag, size_t n,
			 struct tdb_proto_msg *out,
			 struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_PUT);
	const unsigned char *p = bigval;
	size_t i;

	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	for (i = 0; i < n; i++) {
		mnl_attr_put(nlh, TDB_A_VALUE, frag[i], p);
		p += frag[i];
	}
	return parse(wbuf, TDB_PROTO_REQUEST, out, ext);
}

static void test_value_fragments(void **state)
{
	const uint32_t F = TDB_VALUE_FRAG;
	uint32_t frags[TDB_VALUE_FRAGS_MAX + 2];
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	unsigned char *copy;
	size_t i;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 3);
	/* 1 MiB + 1 by hand: 16 full fragments and 129 bytes */
	for (i = 0; i < 16; i++)
		frags[i] = F;
	frags[16] = TDB_VALUE_MAX - 16 * F;
	assert_int_equal(raw_put_frags(frags, 17, &out, &ext), 0);
	assert_int_equal(out.value_len, TDB_VALUE_MAX);
	assert_int_equal(out.value_frags, 17);
	copy = malloc(TDB_VALUE_MAX);
	assert_non_null(copy);
	tdb_proto_value_copy(&out, copy);
	assert_memory_equal(copy, bigval, TDB_VALUE_MAX);
	free(copy);
	frags[16]++;
	assert_int_equal(raw_put_frags(frags, 17, &out, &ext), -E2BIG);
	assert_string_equal(ext.msg, "value is longer than 1 MiB");
	assert_int_equal(ext.offset, find_attr(last_copy, TDB_A_VALUE) +
			 16 * (F + 4));
	/* 16 full and one of 16000: still within TDB_PROTO_MSG_MAX */
	frags[16] = 16000;
	assert_int_equal(raw_put_frags(frags, 17, &out, &ext), -E2BIG);
	/* 17 full fragments: the message itself is over TDB_PROTO_MSG_MAX */
	frags[16] = F;
	assert_int_equal(raw_put_frags(frags, 17, &out, &ext), -EMSGSIZE);

	/* a fragment over TDB_VALUE_FRAG */
	frags[0] = F + 1;
	assert_int_equal(raw_put_frags(frags, 1, &out, &ext), -EINVAL);
	frags[0] = 65531;
	assert_int_equal(raw_put_frags(frags, 1, &out, &ext), -EINVAL);
	/* a short fragment, then another */
	frags[0] = 10;
	frags[1] = 10;
	assert_int_equal(raw_put_frags(frags, 2, &out, &ext), -EINVAL);
	assert_int_equal(ext.offset, find_attr(last_copy, TDB_A_VALUE) + 16);
	/* a full fragment, then an empty one */
	frags[0] = F;
	frags[1] = 0;
	assert_int_equal(raw_put_frags(frags, 2, &out, &ext), -EINVAL);
	/* full, then short: fine; full, short, short: not */
	frags[1] = 1;
	assert_int_equal(raw_put_frags(frags, 2, &out, &ext), 0);
	assert_int_equal(out.value_len, F + 1);
	frags[2] = 1;
	assert_int_equal(raw_put_frags(frags, 3, &out, &ext), -EINVAL);
	/* an empty value is one empty fragment */
	frags[0] = 0;
	assert_int_equal(raw_put_frags(frags, 1, &out, &ext), 0);
	assert_int_equal(out.value_len, 0);
	assert_int_equal(out.value_frags, 1);
	/* two empty fragments */
	frags[1] = 0;
	assert_int_equal(raw_put_frags(frags, 2, &out, &ext), -EINVAL);

	/* another attribute between fragments */
	{
		struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_PUT);

		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, TDB_A_VALUE, F, bigval);
		mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		mnl_attr_put(nlh, TDB_A_VALUE, 5, bigval);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);
		/* PAD counts as another attribute here */
		nlh = rawreq(wbuf, TDB_CMD_PUT);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		mnl_attr_put(nlh, TDB_A_VALUE, F, bigval);
		mnl_attr_put(nlh, TDB_A_PAD, 0, NULL);
		mnl_attr_put(nlh, TDB_A_VALUE, 5, bigval);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);
	}
}

/* A request of cmd with a TABLE attribute of len bytes, parsed. */
static int raw_table_cmd(uint8_t cmd, const void *name, size_t len,
			 struct tdb_proto_msg *out,
			 struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = rawreq(wbuf, cmd);

	mnl_attr_put(nlh, TDB_A_TABLE, len, name);
	return parse(wbuf, TDB_PROTO_REQUEST, out, ext);
}

/* Lookups (TABLE_STAT here, like every command but TABLE_CREATE) take
 * names made before the safe-name rule: the looser TDB_A_TABLE rule. */
static int raw_table(const void *name, size_t len, struct tdb_proto_msg *out,
		     struct tdb_proto_extack *ext)
{
	return raw_table_cmd(TDB_CMD_TABLE_STAT, name, len, out, ext);
}

/* A new name (TABLE_CREATE) refused by the builder and the parser with
 * err and msg, at the TABLE attribute; other commands still take it if
 * legacy is true (the looser rule of names made before). */
static void check_new_bad(const char *name, int err, const char *msg,
			  bool legacy)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	const char *why = NULL;

	fill_all(&m, TDB_CMD_TABLE_CREATE, TDB_PROTO_REQUEST, A(TABLE));
	m.table = name;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf),
					 TDB_PROTO_REQUEST, &m, &ext), err);
	assert_string_equal(ext.msg, msg);
	assert_int_equal(raw_table_cmd(TDB_CMD_TABLE_CREATE, name,
				       strlen(name) + 1, &out, &ext), err);
	assert_string_equal(ext.msg, msg);
	assert_int_equal(ext.offset, GENL_LEN);
	assert_int_equal(tdb_name_check(name, strlen(name), &why), err);
	assert_string_equal(why, msg);
	if (!legacy)
		return;
	assert_int_equal(raw_table_cmd(TDB_CMD_TABLE_STAT, name,
				       strlen(name) + 1, &out, &ext), 0);
	assert_string_equal(out.table, name);
	assert_int_equal(raw_table_cmd(TDB_CMD_TABLE_DROP, name,
				       strlen(name) + 1, &out, &ext), 0);
	fill_all(&m, TDB_CMD_TABLE_DROP, TDB_PROTO_REQUEST, A(TABLE));
	m.table = name;
	roundtrip(&m, TDB_PROTO_REQUEST);
	/* and a TABLE_LIST part naming it (an answer) */
	fill_all(&m, TDB_CMD_TABLE_LIST, TDB_PROTO_ANSWER,
		 A(TABLE) | A(STAT));
	m.table = name;
	roundtrip(&m, TDB_PROTO_ANSWER);
}

/* TABLE_CREATE takes only safe names: letters, digits, '_', '.', '-',
 * ':', not starting with '-' or '.' (tdb/proto.h, NAMES). */
/* tdb_escape: printable ASCII as is, '\\' doubled, the rest \xHH; a
 * short buffer cuts before an escape that does not fit, always ends in a
 * NUL; nothing is written past size. */
static void test_escape(void **state)
{
	static const unsigned char in[] = { 'a', '\\', '\n', 0x9b, '3', 0xff,
					     0 };
	char out[64];

	(void)state;
	assert_string_equal(tdb_escape(out, sizeof(out), in, sizeof(in)),
			    "a\\\\\\x0a\\x9b3\\xff\\x00");
	memset(out, '#', sizeof(out));
	assert_string_equal(tdb_escape(out, 4, in, sizeof(in)), "a\\\\");
	assert_int_equal(out[4], '#');
	assert_string_equal(tdb_escape(out, 6, in, sizeof(in)), "a\\\\");
	assert_string_equal(tdb_escape(out, 7, in, sizeof(in)), "a\\\\");
	assert_string_equal(tdb_escape(out, 8, in, sizeof(in)),
			    "a\\\\\\x0a");
	assert_string_equal(tdb_escape(out, 1, in, sizeof(in)), "");
	out[0] = '#';
	tdb_escape(out, 0, in, sizeof(in));
	assert_int_equal(out[0], '#');
}

static void test_new_names(void **state)
{
	static const char *const good[] = {
		"a", "Z", "9lives", "_x", ":x", "sessions", "rate-limits:v2",
		"a.b_c-d:e", "a..b", "x.", "x-",
		"abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:",
	};
	static const char *const punct = "table name has a punctuation "
		"character other than '_', '.', '-', ':'";
	static const char *const start = "table name starts with '-' or '.'";
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	char name[TDB_NAME_MAX + 2];
	const char *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		fill_all(&m, TDB_CMD_TABLE_CREATE, TDB_PROTO_REQUEST,
			 A(TABLE));
		m.table = good[i];
		roundtrip(&m, TDB_PROTO_REQUEST);
		assert_int_equal(raw_table_cmd(TDB_CMD_TABLE_CREATE, good[i],
					       strlen(good[i]) + 1, &out,
					       &ext), 0);
		assert_string_equal(out.table, good[i]);
		assert_int_equal(tdb_name_check(good[i], strlen(good[i]),
						NULL), 0);
	}
	/* the first byte */
	check_new_bad("-rf", -EINVAL, start, true);
	check_new_bad("..", -EINVAL, start, true);
	check_new_bad(".", -EINVAL, start, true);
	check_new_bad(".hidden", -EINVAL, start, true);
	/* bytes outside the set, each class with its text */
	check_new_bad("a\x9b" "2J", -EINVAL, "table name has a byte over "
		      "0x7f, not ASCII (allowed: letters, digits, '_', '.', "
		      "'-', ':')", true);
	check_new_bad("caf\xc3\xa9", -EINVAL, "table name has a byte over "
		      "0x7f, not ASCII (allowed: letters, digits, '_', '.', "
		      "'-', ':')", true);
	check_new_bad("a\x1b[2J", -EINVAL, "table name has a control "
		      "character (allowed: letters, digits, '_', '.', '-', "
		      "':')", false);
	check_new_bad("a\x7f", -EINVAL, "table name has a control "
		      "character (allowed: letters, digits, '_', '.', '-', "
		      "':')", false);
	check_new_bad("a b", -EINVAL, "table name has a space (allowed: "
		      "letters, digits, '_', '.', '-', ':')", false);
	for (p = "!\"#$%&'()*+,/;<=>?@[\\]^`{|}~"; *p; p++) {
		char bad[4] = { 'x', *p, 'y', 0 };

		check_new_bad(bad, -EINVAL, punct, *p != '/');
	}
	/* length: the TDB_A_TABLE bounds first */
	memset(name, 'n', sizeof(name));
	name[TDB_NAME_MAX] = '\0';
	assert_int_equal(tdb_name_check(name, TDB_NAME_MAX, NULL), 0);
	name[TDB_NAME_MAX] = 'n';
	name[TDB_NAME_MAX + 1] = '\0';
	check_new_bad(name, -ENAMETOOLONG,
		      "table name is longer than 64 bytes", false);
	check_new_bad("", -EINVAL, "table name is empty", false);
}

static void test_table_names(void **state)
{
	/* legacy names (before the safe-name rule) that lookups take */
	static const char *const good[] = {
		"a", "sessions", "rate-limits:v2", "x.y_z~!", "\x80\xff",
		"1234567890123456789012345678901234567890123456789012345678901234",
		"-rf", "..", ".hidden", "\xc2\x9b" "2J", "\x9b", "a$b'c\"d",
	};
	static const char *const bad[] = {
		"a b", "a/b", "/", "\t", "a\x7f", "\x01", "end ",
	};
	char name[TDB_NAME_MAX + 3];
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		fill_all(&m, TDB_CMD_TABLE_STAT, TDB_PROTO_REQUEST,
			 A(TABLE));
		m.table = good[i];
		roundtrip(&m, TDB_PROTO_REQUEST);
		assert_int_equal(raw_table(good[i], strlen(good[i]) + 1, &out,
					   &ext), 0);
		assert_string_equal(out.table, good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill_all(&m, TDB_CMD_TABLE_STAT, TDB_PROTO_REQUEST,
			 A(TABLE));
		m.table = bad[i];
		assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf),
			TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
		assert_string_equal(ext.msg, "table name has a space, control "
				    "character or '/'");
		assert_int_equal(raw_table(bad[i], strlen(bad[i]) + 1, &out,
					   &ext), -EINVAL);
		assert_string_equal(ext.msg, "table name has a space, control "
				    "character or '/'");
		assert_int_equal(ext.offset, GENL_LEN);
	}
	/* 65 bytes */
	memset(name, 'n', sizeof(name));
	name[TDB_NAME_MAX + 1] = '\0';
	m.table = name;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -ENAMETOOLONG);
	assert_int_equal(raw_table(name, TDB_NAME_MAX + 2, &out, &ext),
			 -ENAMETOOLONG);
	assert_string_equal(ext.msg, "table name is longer than 64 bytes");
	/* 66 bytes and no NUL at all */
	name[TDB_NAME_MAX + 1] = 'n';
	assert_int_equal(raw_table(name, TDB_NAME_MAX + 2, &out, &ext),
			 -ENAMETOOLONG);
	/* empty: "" and a zero-length attribute */
	m.table = "";
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	assert_int_equal(raw_table("", 1, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "table name is empty");
	assert_int_equal(raw_table("", 0, &out, &ext), -EINVAL);
	/* not NUL-terminated, NUL inside */
	assert_int_equal(raw_table("abc", 3, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "table name is not NUL-terminated");
	assert_int_equal(raw_table("ab\0c", 5, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "table name has a NUL inside");
	assert_int_equal(raw_table("ab\0\0", 4, &out, &ext), -EINVAL);
	/* 64 + NUL exactly */
	memset(name, 'n', TDB_NAME_MAX);
	name[TDB_NAME_MAX] = '\0';
	assert_int_equal(raw_table(name, TDB_NAME_MAX + 1, &out, &ext), 0);
	assert_int_equal(out.table_len, TDB_NAME_MAX);
	/* NULL */
	m.table = NULL;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
}

static void test_prefix_cursor_limits(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	struct nlmsghdr *nlh;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 4);
	fill_all(&m, TDB_CMD_SCAN, TDB_PROTO_REQUEST,
		 spec[TDB_CMD_SCAN].req_allow);
	m.prefix = NULL;
	m.prefix_len = 0;
	roundtrip(&m, TDB_PROTO_REQUEST);
	m.prefix = bigval;
	m.prefix_len = TDB_KEY_MAX;
	m.cursor = bigval;
	m.cursor_len = TDB_CURSOR_MAX;
	roundtrip(&m, TDB_PROTO_REQUEST);
	m.prefix_len = TDB_KEY_MAX + 1;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), -E2BIG);
	m.prefix_len = 1;
	m.cursor_len = TDB_CURSOR_MAX + 1;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
	m.cursor_len = 0;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
	m.cursor_len = 1;
	m.prefix = NULL;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
	assert_string_equal(ext.msg, "prefix or cursor is NULL");

	nlh = rawreq(wbuf, TDB_CMD_SCAN);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_PREFIX, TDB_KEY_MAX + 1, bigval);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -E2BIG);
	assert_int_equal(ext.offset, GENL_LEN + 8);
	nlh = rawreq(wbuf, TDB_CMD_SCAN);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_CURSOR, 0, NULL);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "cursor is empty");
	nlh = rawreq(wbuf, TDB_CMD_SCAN);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_CURSOR, TDB_CURSOR_MAX + 1, bigval);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	/* an empty prefix is fine */
	nlh = rawreq(wbuf, TDB_CMD_SCAN);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_PREFIX, 0, NULL);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
	assert_true(TDB_PROTO_HAS(&out, TDB_A_PREFIX));
	assert_int_equal(out.prefix_len, 0);
}

/* One u32/u64 attribute of a given payload in a request of cmd. */
static int raw_int(uint8_t cmd, uint16_t type, const void *val, size_t len,
		   struct tdb_proto_msg *out, struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = rawreq(wbuf, cmd);

	if (cmd != TDB_CMD_TXN_COMMIT)
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	if (cmd == TDB_CMD_PUT || cmd == TDB_CMD_DEL || cmd == TDB_CMD_INCR) {
		mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		if (cmd == TDB_CMD_PUT)
			mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
	}
	mnl_attr_put(nlh, type, len, val);
	return parse(wbuf, TDB_PROTO_REQUEST, out, ext);
}

/* SCAN's attributes together (check_scan_req): TXN is taken (a read
 * of the transaction, checked at commit) but not with a snapshot; a
 * range flag needs its bound.  Parser and builder agree. */
static void test_scan_request_rules(void **state)
{
	static const struct {
		uint64_t attrs;
		uint32_t flags;
		const char *msg;        /* NULL: accepted */
	} cases[] = {
		{ A(TXN), 0, NULL },
		{ A(TXN) | A(FROM) | A(TO), TDB_SCAN_REVERSE, NULL },
		{ A(TXN), TDB_SCAN_SNAPSHOT, "takes no TXN" },
		{ 0, TDB_SCAN_SNAPSHOT | TDB_SCAN_REVERSE, NULL },
		{ A(FROM), TDB_SCAN_FROM_EXCL, NULL },
		{ A(TO), TDB_SCAN_FROM_EXCL, "TDB_SCAN_FROM_EXCL but the SCAN "
		  "has no FROM" },
		{ A(TO), TDB_SCAN_TO_INCL, NULL },
		{ A(FROM), TDB_SCAN_TO_INCL, "TDB_SCAN_TO_INCL but the SCAN "
		  "has no TO" },
		{ 0, TDB_SCAN_FLAGS_ALL & ~TDB_SCAN_SNAPSHOT, "has no FROM" },
	};
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_SCAN);
		uint64_t id = 7;
		int rc;

		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		if (cases[i].attrs & A(TXN))
			mnl_attr_put(nlh, TDB_A_TXN, 8, &id);
		if (cases[i].attrs & A(FROM))
			mnl_attr_put(nlh, TDB_A_FROM, 1, "a");
		if (cases[i].attrs & A(TO))
			mnl_attr_put(nlh, TDB_A_TO, 1, "z");
		mnl_attr_put_u32(nlh, TDB_A_SCAN_FLAGS, cases[i].flags);
		rc = parse(wbuf, TDB_PROTO_REQUEST, &out, &ext);
		if (!cases[i].msg) {
			assert_int_equal(rc, 0);
			assert_int_equal(out.scan_flags, cases[i].flags);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_non_null(strstr(ext.msg, cases[i].msg));
			assert_int_equal(ext.offset,
				find_attr(last_copy, TDB_A_SCAN_FLAGS));
		}
		fill_all(&m, TDB_CMD_SCAN, TDB_PROTO_REQUEST, A(TABLE) |
			 A(SCAN_FLAGS) | cases[i].attrs);
		m.scan_flags = cases[i].flags;
		if (!cases[i].msg) {
			roundtrip(&m, TDB_PROTO_REQUEST);
		} else {
			assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m,
							&ext), -EINVAL);
			assert_non_null(strstr(ext.msg, cases[i].msg));
		}
	}
}

/* FROM and TO: binary keys of 1..TDB_KEY_MAX bytes; their refusals name
 * them. */
static void test_range_limits(void **state)
{
	static const uint16_t types[] = { TDB_A_FROM, TDB_A_TO };
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	size_t i;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 9);
	for (i = 0; i < 2; i++) {
		uint16_t t = types[i];
		const char *name = t == TDB_A_FROM ? "FROM" : "TO";
		struct nlmsghdr *nlh;
		uint32_t *len;

		nlh = rawreq(wbuf, TDB_CMD_SCAN);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, t, TDB_KEY_MAX, bigval);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
		assert_int_equal(t == TDB_A_FROM ? out.from_len : out.to_len,
				 TDB_KEY_MAX);
		nlh = rawreq(wbuf, TDB_CMD_SCAN);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, t, TDB_KEY_MAX + 1, bigval);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -E2BIG);
		assert_non_null(strstr(ext.msg, name));
		assert_int_equal(ext.offset, GENL_LEN + 8);
		nlh = rawreq(wbuf, TDB_CMD_SCAN);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, t, 0, NULL);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);
		assert_non_null(strstr(ext.msg, name));
		assert_non_null(strstr(ext.msg, "empty"));
		/* a range only in SCAN */
		nlh = rawreq(wbuf, TDB_CMD_GET);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		mnl_attr_put(nlh, t, 1, "a");
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);

		/* the builder agrees */
		fill_all(&m, TDB_CMD_SCAN, TDB_PROTO_REQUEST, A(TABLE) |
			 TDB_PROTO_BIT(t));
		len = t == TDB_A_FROM ? &m.from_len : &m.to_len;
		*(t == TDB_A_FROM ? &m.from : &m.to) = bigval;
		*len = TDB_KEY_MAX;
		roundtrip(&m, TDB_PROTO_REQUEST);
		*len = TDB_KEY_MAX + 1;
		assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext),
				 -E2BIG);
		assert_non_null(strstr(ext.msg, name));
		*len = 0;
		assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext),
				 -EINVAL);
		assert_non_null(strstr(ext.msg, name));
		*len = 1;
		*(t == TDB_A_FROM ? &m.from : &m.to) = NULL;
		assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext),
				 -EINVAL);
		assert_non_null(strstr(ext.msg, name));
	}
}

/* RESTORE_BULK's RECORDS: the records come back as packed; a malformed
 * batch is refused by the parser and by the builder with the same errno
 * and a message naming what is wrong. */
static int parse_records(const void *recs, uint32_t len,
			 struct tdb_proto_msg *out,
			 struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_RESTORE_BULK);

	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_RECORDS, len, recs);
	return parse(wbuf, TDB_PROTO_REQUEST, out, ext);
}

static void bad_records(const void *recs, uint32_t len, int err,
			const char *what)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;

	assert_int_equal(parse_records(recs, len, &out, &ext), err);
	assert_non_null(ext.msg);
	assert_non_null(strstr(ext.msg, what));
	assert_int_equal(ext.offset, GENL_LEN + 8);     /* after TABLE "t" */
	memset(&m, 0, sizeof(m));
	m.cmd = TDB_CMD_RESTORE_BULK;
	m.attrs = A(TABLE) | A(RECORDS);
	m.table = "t";
	m.records = recs;
	m.records_len = len;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), err);
	assert_non_null(strstr(ext.msg, what));
}

static void test_restore_bulk(void **state)
{
	static unsigned char r[TDB_RESTORE_BULK_MAX + 64];
	struct tdb_proto_extack ext;
	struct tdb_proto_record rec;
	struct tdb_proto_msg out;
	uint32_t len, off = 0, u;
	uint64_t v;

	(void)state;
	len = pack_two(r);
	assert_int_equal(parse_records(r, len, &out, &ext), 0);
	assert_int_equal(out.nrecords, 2);
	assert_true(tdb_proto_record_next(&out, &off, &rec));
	assert_int_equal(rec.klen, 2);
	assert_memory_equal(rec.key, "k1", 2);
	assert_int_equal(rec.vlen, 2);
	assert_memory_equal(rec.val, "v1", 2);
	assert_int_equal(rec.version, 5);
	assert_int_equal(rec.deadline, 0);
	assert_true(tdb_proto_record_next(&out, &off, &rec));
	assert_int_equal(rec.klen, 4);
	assert_memory_equal(rec.key, "key2", 4);
	assert_int_equal(rec.vlen, 0);
	assert_int_equal(rec.version, 9);
	assert_int_equal(rec.deadline, 123);
	assert_false(tdb_proto_record_next(&out, &off, &rec));
	assert_int_equal(off, len);

	/* a header cut short: one byte of a third record */
	r[len] = 1;
	bad_records(r, len + 1, -EINVAL, "header is cut short");
	/* shorter than one header */
	bad_records(r, TDB_RESTORE_REC_HDR - 1, -EINVAL,
		    "shorter than one record's header");
	/* the second record's value runs past the end */
	pack_two(r);
	u = 5;
	memcpy(r + TDB_RESTORE_REC_HDR + 4 + 4, &u, 4);
	bad_records(r, len, -EINVAL, "run past the attribute's end");
	/* the first record's key runs past the end */
	pack_two(r);
	u = 0xfffffff0u;
	memcpy(r, &u, 4);
	bad_records(r, len, -E2BIG, "longer than 4096");
	/* an empty key */
	pack_two(r);
	u = 0;
	memcpy(r, &u, 4);
	bad_records(r, len, -EINVAL, "key is empty");
	/* version 0 */
	pack_two(r);
	v = 0;
	memcpy(r + TDB_RESTORE_REC_HDR + 4 + 8, &v, 8);
	bad_records(r, len, -EINVAL, "version is 0");
	/* over TDB_RESTORE_BULK_MAX: the builder refuses it (the parser
	 * cannot see one: an attribute's length is a u16) */
	{
		struct tdb_proto_msg m = { .cmd = TDB_CMD_RESTORE_BULK,
			.attrs = A(TABLE) | A(RECORDS), .table = "t",
			.records = r, .records_len = TDB_RESTORE_BULK_MAX + 1 };

		assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext),
				 -E2BIG);
		assert_non_null(strstr(ext.msg, "TDB_RESTORE_BULK_MAX"));
	}
	/* RECORDS only in RESTORE_BULK; RESTORE_BULK needs it */
	{
		struct nlmsghdr *nlh = rawreq(wbuf, TDB_CMD_PUT);

		pack_two(r);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
		mnl_attr_put(nlh, TDB_A_RECORDS, len, r);
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);
		assert_non_null(strstr(ext.msg, "not valid in this message"));
		nlh = rawreq(wbuf, TDB_CMD_RESTORE_BULK);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 -EINVAL);
		assert_non_null(strstr(ext.msg, "TDB_A_RECORDS"));
	}
}

static void test_int_values(void **state)
{
	static const struct {
		uint8_t cmd;
		uint16_t type;
		uint64_t v;
		int err;
	} cases[] = {
		{ TDB_CMD_PUT, TDB_A_FLAGS, 0, 0 },
		{ TDB_CMD_PUT, TDB_A_FLAGS, TDB_PUT_NOOVERWRITE, 0 },
		{ TDB_CMD_PUT, TDB_A_FLAGS, TDB_PUT_IF_PRESENT, 0 },
		{ TDB_CMD_PUT, TDB_A_FLAGS, 4, -EOPNOTSUPP },
		{ TDB_CMD_PUT, TDB_A_FLAGS, 1u << 31, -EOPNOTSUPP },
		{ TDB_CMD_SCAN, TDB_A_LIMIT, 0, -EINVAL },
		{ TDB_CMD_SCAN, TDB_A_LIMIT, 1, 0 },
		{ TDB_CMD_SCAN, TDB_A_LIMIT, UINT32_MAX, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MAX_EXTENTS, 0, -EINVAL },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MAX_EXTENTS, 1, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MAX_EXTENTS, TDB_EXTENTS_MAX, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MAX_EXTENTS, TDB_EXTENTS_MAX + 1,
		  -EINVAL },
		{ TDB_CMD_TABLE_CREATE, TDB_A_UID, 0, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_UID, UINT32_MAX, -EINVAL },
		{ TDB_CMD_TABLE_CREATE, TDB_A_GID, UINT32_MAX - 1, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_GID, UINT32_MAX, -EINVAL },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MODE, 0777, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MODE, 01000, -EINVAL },
		{ TDB_CMD_TABLE_CREATE, TDB_A_MODE, 04755, -EINVAL },
		{ TDB_CMD_TXN_COMMIT, TDB_A_TXN, 0, -EINVAL },
		{ TDB_CMD_TXN_COMMIT, TDB_A_TXN, 1, 0 },
		{ TDB_CMD_TXN_COMMIT, TDB_A_TXN, UINT64_MAX, 0 },
		{ TDB_CMD_PUT, TDB_A_IF_VERSION, 0, -EINVAL },
		{ TDB_CMD_PUT, TDB_A_IF_VERSION, 1, 0 },
		{ TDB_CMD_DEL, TDB_A_IF_VERSION, UINT64_MAX, 0 },
		{ TDB_CMD_PUT, TDB_A_SET_VERSION, 0, -EINVAL },
		{ TDB_CMD_PUT, TDB_A_SET_VERSION, 9, 0 },
		{ TDB_CMD_INCR, TDB_A_DELTA, 0, 0 },
		{ TDB_CMD_INCR, TDB_A_DELTA, (uint64_t)INT64_MIN, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_TABLE_FLAGS, 0, 0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_TABLE_FLAGS, TDB_TABLE_F_ORDERED,
		  0 },
		{ TDB_CMD_TABLE_CREATE, TDB_A_TABLE_FLAGS, 2, -EOPNOTSUPP },
		{ TDB_CMD_TABLE_CREATE, TDB_A_TABLE_FLAGS, 1u << 31,
		  -EOPNOTSUPP },
		{ TDB_CMD_SCAN, TDB_A_SCAN_FLAGS, TDB_SCAN_SNAPSHOT |
		  TDB_SCAN_REVERSE, 0 },
		{ TDB_CMD_SCAN, TDB_A_SCAN_FLAGS, 1u << 4, -EOPNOTSUPP },
	};
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t v32 = (uint32_t)cases[i].v;
		uint8_t cmd = cases[i].cmd;
		uint16_t t = cases[i].type;
		bool is64 = t == TDB_A_TXN || t == TDB_A_IF_VERSION ||
			    t == TDB_A_SET_VERSION || t == TDB_A_DELTA;
		int rc;

		rc = is64 ? raw_int(cmd, t, &cases[i].v, 8, &out, &ext) :
			    raw_int(cmd, t, &v32, 4, &out, &ext);
		assert_int_equal(rc, cases[i].err);
		if (rc) {
			assert_non_null(ext.msg);
			assert_int_equal(ext.offset, find_attr(last_copy, t));
		}
		/* the builder agrees */
		fill_all(&m, cmd, TDB_PROTO_REQUEST, spec[cmd].req_need |
			 TDB_PROTO_BIT(t));
		switch (t) {
		case TDB_A_FLAGS: m.flags = v32; break;
		case TDB_A_LIMIT: m.limit = v32; break;
		case TDB_A_MAX_EXTENTS: m.max_extents = v32; break;
		case TDB_A_UID: m.uid = v32; break;
		case TDB_A_GID: m.gid = v32; break;
		case TDB_A_MODE: m.mode = v32; break;
		case TDB_A_TXN: m.txn = cases[i].v; break;
		case TDB_A_IF_VERSION: m.if_version = cases[i].v; break;
		case TDB_A_SET_VERSION: m.set_version = cases[i].v; break;
		case TDB_A_DELTA: m.delta = (int64_t)cases[i].v; break;
		case TDB_A_TABLE_FLAGS: m.table_flags = v32; break;
		case TDB_A_SCAN_FLAGS: m.scan_flags = v32; break;
		}
		if (cases[i].err)
			assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf),
				TDB_PROTO_REQUEST, &m, &ext), cases[i].err);
		else
			roundtrip(&m, TDB_PROTO_REQUEST);
	}
	/* wrong lengths */
	{
		uint64_t z = 1;

		assert_int_equal(raw_int(TDB_CMD_PUT, TDB_A_FLAGS, &z, 3, &out,
					 &ext), -EINVAL);
		assert_string_equal(ext.msg, "FLAGS is not a u32");
		assert_int_equal(raw_int(TDB_CMD_PUT, TDB_A_FLAGS, &z, 8, &out,
					 &ext), -EINVAL);
		assert_int_equal(raw_int(TDB_CMD_PUT, TDB_A_FLAGS, &z, 0, &out,
					 &ext), -EINVAL);
		assert_int_equal(raw_int(TDB_CMD_SCAN, TDB_A_LIMIT, &z, 5, &out,
					 &ext), -EINVAL);
		assert_int_equal(raw_int(TDB_CMD_TXN_COMMIT, TDB_A_TXN, &z, 4,
					 &out, &ext), -EINVAL);
		assert_string_equal(ext.msg, "TXN is not a u64");
		assert_int_equal(raw_int(TDB_CMD_TXN_COMMIT, TDB_A_TXN, &z, 7,
					 &out, &ext), -EINVAL);
		assert_int_equal(ext.offset, GENL_LEN);
	}
}

/* --- framing ---------------------------------------------------------- */

/* Some valid messages of every kind, one after another in mem[]. */
static size_t sample_messages(unsigned char *mem, size_t cap,
			      uint32_t *offs, enum tdb_proto_dir *dirs,
			      size_t max)
{
	struct tdb_proto_msg m;
	size_t n = 0, at = 0;
	uint8_t cmd;
	long len;

	fill_pattern(bigval, sizeof(bigval), 5);
	for (cmd = 1; cmd <= TDB_CMD_MAX && n + 2 <= max; cmd++) {
		fill_all(&m, cmd, TDB_PROTO_REQUEST, spec[cmd].req_allow);
		m.value = bigval;
		m.value_len = TDB_VALUE_FRAG + 3;   /* two fragments */
		len = tdb_proto_build(mem + at, cap - at, TDB_PROTO_REQUEST,
				      &m, NULL);
		assert_true(len > 0);
		offs[n] = (uint32_t)at;
		dirs[n++] = TDB_PROTO_REQUEST;
		at += (size_t)len;
		if (spec[cmd].ans_flags == 0xffff)
			continue;
		fill_all(&m, cmd, TDB_PROTO_ANSWER, spec[cmd].ans_allow);
		len = tdb_proto_build(mem + at, cap - at, TDB_PROTO_ANSWER,
				      &m, NULL);
		assert_true(len > 0);
		offs[n] = (uint32_t)at;
		dirs[n++] = TDB_PROTO_ANSWER;
		at += (size_t)len;
	}
	{
		struct tdb_proto_extack e = { .msg = "what was wrong", .offset = 24, .miss_type = 3 };

		len = tdb_proto_error(mem + at, cap - at, (void *)mem, -EINVAL,
				      &e);
		assert_true(len > 0);
		offs[n] = (uint32_t)at;
		dirs[n++] = TDB_PROTO_ANSWER;
		at += (size_t)len;
		len = tdb_proto_done(mem + at, cap - at, (void *)mem, -EIO,
				     &e);
		assert_true(len > 0);
		offs[n] = (uint32_t)at;
		dirs[n++] = TDB_PROTO_ANSWER;
		at += (size_t)len;
	}
	offs[n] = (uint32_t)at;
	return n;
}

static bool errno_ok(int rc)
{
	return rc == 0 || rc == -EBADMSG || rc == -EINVAL || rc == -E2BIG ||
	       rc == -ENAMETOOLONG || rc == -EOPNOTSUPP;
}

/* Every length of small messages; of big ones (fragmented values), the
 * first and last KiB, around the first fragment's end, and a stride. */
static uint32_t next_len(const unsigned char *msg, uint32_t len,
			 uint32_t full)
{
	uint32_t v = find_attr((const struct nlmsghdr *)msg, TDB_A_VALUE);
	uint32_t edge = v + 4 + TDB_VALUE_FRAG;

	if (full <= 8192 || len < 1024 || len + 1024 >= full)
		return len + 1;
	if (v && len + 1 >= edge - 16 && len + 1 <= edge + 16)
		return len + 1;
	if (v && len < edge - 16 && len + 61 > edge - 16)
		return edge - 16;
	return len + 61 < full ? len + 61 : full - 1024;
}

static void test_truncated(void **state)
{
	uint32_t offs[64];
	enum tdb_proto_dir dirs[64];
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	unsigned char *mem = (unsigned char *)wbuf2;
	size_t n, i;
	long checked = 0;

	(void)state;
	n = sample_messages(mem, sizeof(wbuf2), offs, dirs, 62);
	assert_true(n > 20);
	for (i = 0; i < n; i++) {
		const unsigned char *msg = mem + offs[i];
		uint32_t full = offs[i + 1] - offs[i], len;
		unsigned char *cut;

		assert_int_equal(parse(msg, dirs[i], &out, &ext), 0);
		for (len = 0; len < full; len = next_len(msg, len, full)) {
			/* the bytes end early: nlmsg_len is beyond them */
			int rc = parse_len(msg, len, dirs[i], &out, &ext);

			assert_int_equal(rc, -EBADMSG);
			assert_non_null(ext.msg);
			assert_null(out.nlh);
			if (len < NLMSG_HDRLEN)
				continue;
			/* nlmsg_len says len: a shorter message */
			cut = malloc(len);
			assert_non_null(cut);
			memcpy(cut, msg, len);
			((struct nlmsghdr *)cut)->nlmsg_len = len;
			rc = tdb_proto_parse(cut, len, dirs[i], &out, &ext);
			assert_true(errno_ok(rc));
			if (len % 4)
				assert_int_equal(rc, -EBADMSG);
			if (rc == 0) {
				/* only at an attribute boundary, dropping
				 * only optional attributes */
				assert_int_equal(len % 4, 0);
			} else {
				assert_non_null(ext.msg);
				assert_ptr_equal(out.nlh, cut);
			}
			free(cut);
			checked++;
		}
	}
	assert_true(checked > 3000);
}

/* A full message followed by more bytes: only the first is parsed. */
static void test_trailing_messages(void **state)
{
	uint32_t offs[64];
	enum tdb_proto_dir dirs[64];
	struct tdb_proto_msg out;
	unsigned char *mem = (unsigned char *)wbuf2;
	size_t n, i;

	(void)state;
	n = sample_messages(mem, sizeof(wbuf2), offs, dirs, 62);
	for (i = 0; i < n; i++) {
		assert_int_equal(tdb_proto_parse(mem + offs[i],
			offs[n] - offs[i], dirs[i], &out, NULL), 0);
		assert_int_equal(out.nlh->nlmsg_len, offs[i + 1] - offs[i]);
	}
}

static void test_header_errors(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;

	(void)state;
	/* wrong version */
	nlh = raw(wbuf, TDB_PROTO_FAMILY, NLM_F_REQUEST, TDB_CMD_STATS, 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EPROTONOSUPPORT);
	assert_string_equal(ext.msg, "unsupported protocol version "
			    "(genlmsghdr.version)");
	assert_ptr_equal(out.nlh, last_copy);
	assert_int_equal(out.version, 0);
	g = mnl_nlmsg_get_payload(nlh);
	g->version = 2;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EPROTONOSUPPORT);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext),
			 -EPROTONOSUPPORT);
	/* a version we do not speak wins over an unknown command */
	g->cmd = 200;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EPROTONOSUPPORT);
	/* unknown commands */
	g->version = 1;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	assert_string_equal(ext.msg, "unknown command");
	g->cmd = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	g->cmd = TDB_CMD_MAX + 1;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	g->cmd = TDB_CMD_STATS;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
	g->reserved = 1;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	g->reserved = 0;

	/* wrong family */
	nlh->nlmsg_type = TDB_PROTO_FAMILY + 1;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext),
			 -EOPNOTSUPP);
	nlh->nlmsg_type = NLMSG_NOOP;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	nlh->nlmsg_type = NLMSG_ERROR;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	nlh->nlmsg_type = NLMSG_DONE;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	/* another family id (generic netlink) */
	nlh->nlmsg_type = 0x1234;
	assert_int_equal(tdb_proto_parse_family(wbuf, nlh->nlmsg_len,
		TDB_PROTO_REQUEST, 0x1234, &out, &ext), 0);
	assert_int_equal(out.type, 0x1234);
	assert_int_equal(tdb_proto_parse_family(wbuf, nlh->nlmsg_len,
		TDB_PROTO_REQUEST, 0x1235, &out, &ext), -EOPNOTSUPP);
	nlh->nlmsg_type = TDB_PROTO_FAMILY;

	/* lengths */
	nlh->nlmsg_len = NLMSG_HDRLEN;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	assert_string_equal(ext.msg, "message has no genlmsghdr");
	assert_non_null(out.nlh);       /* answerable */
	nlh->nlmsg_len = NLMSG_HDRLEN - 4;
	assert_int_equal(parse_len(wbuf, NLMSG_HDRLEN, TDB_PROTO_REQUEST, &out,
				   &ext), -EBADMSG);
	assert_null(out.nlh);
	nlh->nlmsg_len = 0;
	assert_int_equal(parse_len(wbuf, 64, TDB_PROTO_REQUEST, &out, &ext),
			 -EBADMSG);
	nlh->nlmsg_len = GENL_LEN + 2;
	assert_int_equal(parse_len(wbuf, 64, TDB_PROTO_REQUEST, &out, &ext),
			 -EBADMSG);
	assert_string_equal(ext.msg, "nlmsg_len is not a multiple of 4");
	nlh->nlmsg_len = UINT32_MAX;
	assert_int_equal(parse_len(wbuf, 64, TDB_PROTO_REQUEST, &out, &ext),
			 -EBADMSG);
	nlh->nlmsg_len = TDB_PROTO_MSG_MAX + 4;
	assert_int_equal(tdb_proto_parse(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &out, &ext), -EMSGSIZE);
	nlh->nlmsg_len = GENL_LEN;
	/* misaligned */
	memmove((char *)wbuf + 1, wbuf, GENL_LEN);
	assert_int_equal(tdb_proto_parse((char *)wbuf + 1, GENL_LEN,
		TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	assert_null(out.nlh);
	/* no ext: fine */
	assert_int_equal(tdb_proto_parse((char *)wbuf + 1, GENL_LEN,
		TDB_PROTO_REQUEST, &out, NULL), -EINVAL);
}

static void test_nlmsg_flags(void **state)
{
	static const struct {
		uint8_t cmd;
		uint16_t flags;
		int err;
	} req[] = {
		{ TDB_CMD_GET, NLM_F_REQUEST, 0 },
		{ TDB_CMD_GET, NLM_F_REQUEST | NLM_F_ACK, 0 },
		{ TDB_CMD_GET, 0, -EINVAL },
		{ TDB_CMD_GET, NLM_F_ACK, -EINVAL },
		{ TDB_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, -EINVAL },
		{ TDB_CMD_GET, NLM_F_REQUEST | NLM_F_ECHO, -EINVAL },
		{ TDB_CMD_GET, NLM_F_REQUEST | NLM_F_MULTI, -EINVAL },
		{ TDB_CMD_GET, NLM_F_REQUEST | NLM_F_EXCL, -EINVAL },
		{ TDB_CMD_PUT, NLM_F_REQUEST, 0 },
		{ TDB_CMD_PUT, NLM_F_REQUEST | NLM_F_REPLACE, -EINVAL },
		{ TDB_CMD_PUT, NLM_F_REQUEST | NLM_F_CREATE, -EINVAL },
		{ TDB_CMD_SCAN, NLM_F_REQUEST | NLM_F_DUMP, 0 },
		{ TDB_CMD_SCAN, NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ACK, 0 },
		{ TDB_CMD_SCAN, NLM_F_REQUEST, -EINVAL },
		{ TDB_CMD_SCAN, NLM_F_REQUEST | NLM_F_ROOT, -EINVAL },
		{ TDB_CMD_SCAN, NLM_F_REQUEST | NLM_F_MATCH, -EINVAL },
		{ TDB_CMD_SCAN, NLM_F_REQUEST | NLM_F_DUMP | NLM_F_ATOMIC,
		  -EINVAL },
		{ TDB_CMD_TABLE_LIST, NLM_F_REQUEST | NLM_F_DUMP, 0 },
		{ TDB_CMD_TABLE_LIST, NLM_F_REQUEST, -EINVAL },
	};
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	struct nlmsghdr *nlh;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		nlh = raw(wbuf, TDB_PROTO_FAMILY, req[i].flags, req[i].cmd, 1);
		if (req[i].cmd != TDB_CMD_TABLE_LIST)
			mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
		if (req[i].cmd == TDB_CMD_GET || req[i].cmd == TDB_CMD_PUT)
			mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
		if (req[i].cmd == TDB_CMD_PUT)
			mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
		assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
				 req[i].err);
		if (req[i].err)
			assert_non_null(ext.msg);
		else
			assert_int_equal(out.nlflags, req[i].flags);
	}
	/* answers: a reply with NLM_F_MULTI, a notification with flags */
	nlh = raw(wbuf, TDB_PROTO_FAMILY, NLM_F_MULTI, TDB_CMD_GET, 1);
	mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	nlh->nlmsg_flags = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	nlh->nlmsg_flags = NLM_F_ACK;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	nlh = raw(wbuf, TDB_PROTO_FAMILY, NLM_F_MULTI, TDB_CMD_DEL, 1);
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	nlh->nlmsg_flags = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	/* acked commands have no answer message */
	nlh = raw(wbuf, TDB_PROTO_FAMILY, 0, TDB_CMD_TABLE_CREATE, 1);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
}

/* --- attribute sets ------------------------------------------------------ */

static void test_missing_required(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	int dir;
	uint8_t cmd;
	uint16_t t;

	(void)state;
	for (dir = TDB_PROTO_REQUEST; dir <= TDB_PROTO_ANSWER; dir++)
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		uint64_t allow = dir == TDB_PROTO_REQUEST ?
				 spec[cmd].req_allow : spec[cmd].ans_allow;
		uint64_t need = dir == TDB_PROTO_REQUEST ?
				spec[cmd].req_need : spec[cmd].ans_need;

		if (dir == TDB_PROTO_ANSWER && spec[cmd].ans_flags == 0xffff)
			continue;
		for (t = 1; t <= TDB_A_MAX; t++) {
			if (!(need & TDB_PROTO_BIT(t)))
				continue;
			/* the builder refuses */
			fill_all(&m, cmd, dir, allow & ~TDB_PROTO_BIT(t));
			assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf),
					 dir, &m, &ext), -EINVAL);
			assert_int_equal(ext.miss_type, t);
			/* the parser refuses the message without it */
			fill_all(&m, cmd, dir, allow);
			assert_true(tdb_proto_build(wbuf, sizeof(wbuf), dir,
						    &m, NULL) > 0);
			drop_attr((struct nlmsghdr *)wbuf, t);
			assert_int_equal(parse(wbuf, dir, &out, &ext),
					 -EINVAL);
			assert_int_equal(ext.miss_type, t);
			assert_int_equal(ext.offset, 0);
			assert_non_null(ext.msg);
		}
	}
}

static void test_duplicates(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	int dir;
	uint8_t cmd;
	uint16_t t;
	long tested = 0;

	(void)state;
	for (dir = TDB_PROTO_REQUEST; dir <= TDB_PROTO_ANSWER; dir++)
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		uint64_t allow = dir == TDB_PROTO_REQUEST ?
				 spec[cmd].req_allow : spec[cmd].ans_allow;

		if (dir == TDB_PROTO_ANSWER && spec[cmd].ans_flags == 0xffff)
			continue;
		for (t = 1; t <= TDB_A_MAX; t++) {
			uint32_t at;

			if (!(allow & TDB_PROTO_BIT(t)))
				continue;
			fill_all(&m, cmd, dir, allow);
			assert_true(tdb_proto_build(wbuf, sizeof(wbuf), dir,
						    &m, NULL) > 0);
			at = dup_attr((struct nlmsghdr *)wbuf, t);
			assert_int_equal(parse(wbuf, dir, &out, &ext),
					 -EINVAL);
			assert_int_equal(ext.offset, at);
			assert_non_null(ext.msg);
			tested++;
		}
	}
	assert_true(tested > 30);
}

static void test_unknown_and_misplaced(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	struct nlmsghdr *nlh;
	uint32_t at;

	(void)state;
	/* unknown types in a request: refused */
	nlh = rawreq(wbuf, TDB_CMD_DEL);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	at = nlh->nlmsg_len;
	mnl_attr_put_u32(nlh, TDB_A_MAX + 1, 5);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	assert_string_equal(ext.msg, "unknown attribute type");
	assert_int_equal(ext.offset, at);
	attr_at(wbuf, at)->nla_type = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	attr_at(wbuf, at)->nla_type = (uint16_t)NLA_TYPE_MASK;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext),
			 -EOPNOTSUPP);
	/* known, but not in this command */
	attr_at(wbuf, at)->nla_type = TDB_A_LIMIT;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "attribute not valid in this message");
	assert_int_equal(ext.offset, at);
	attr_at(wbuf, at)->nla_type = TDB_A_FLAGS;   /* PUT only */
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	/* nla_type flags */
	attr_at(wbuf, at)->nla_type = TDB_A_TXN | NLA_F_NET_BYTEORDER;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	attr_at(wbuf, at)->nla_type = TDB_A_TXN | NLA_F_NESTED;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	assert_int_equal(ext.offset, at);
	/* PAD: empty, anywhere, repeatable */
	drop_attr(nlh, TDB_A_TXN);
	nlh->nlmsg_len = at;
	mnl_attr_put(nlh, TDB_A_PAD, 0, NULL);
	mnl_attr_put(nlh, TDB_A_PAD, 0, NULL);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
	assert_false(TDB_PROTO_HAS(&out, TDB_A_PAD));
	mnl_attr_put_u32(nlh, TDB_A_PAD, 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "PAD attribute is not empty");

	/* unknown types in an answer: skipped */
	fill_all(&m, TDB_CMD_TABLE_STAT, TDB_PROTO_ANSWER,
		 spec[TDB_CMD_TABLE_STAT].ans_allow);
	assert_true(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_ANSWER, &m,
				    NULL) > 0);
	nlh = (struct nlmsghdr *)wbuf;
	mnl_attr_put_u64(nlh, TDB_A_MAX + 1, 1);
	mnl_attr_put_u64(nlh, TDB_A_MAX + 1, 2);        /* even twice */
	mnl_attr_put(nlh, 0x1fff | NLA_F_NESTED, 3, "abc");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	assert_same(&m, &out);
	/* but a known one out of place is still refused */
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
}

static void test_attr_overruns(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	struct nlmsghdr *nlh;
	struct nlattr *a;
	uint32_t at;

	(void)state;
	nlh = rawreq(wbuf, TDB_CMD_GET);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	at = nlh->nlmsg_len;
	mnl_attr_put(nlh, TDB_A_KEY, 8, "12345678");
	a = attr_at(wbuf, at);
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
	/* nla_len past the end of the message */
	a->nla_len = 4 + 9;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	assert_string_equal(ext.msg, "attribute length overruns the message");
	assert_int_equal(ext.offset, at);
	a->nla_len = 0xffff;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	assert_int_equal(ext.offset, at);
	/* nla_len below the attribute header */
	a->nla_len = 3;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	a->nla_len = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	/* shorter than it was: the bytes after it are not an attribute */
	a->nla_len = 4 + 2;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	assert_int_equal(ext.offset, at + 8);
	a->nla_len = 4 + 4;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), -EBADMSG);
	assert_int_equal(ext.offset, at + 8);
	/* an unpadded last attribute is fine when nlmsg_len covers it */
	a->nla_len = 4 + 7;
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext), 0);
	assert_int_equal(out.key_len, 7);
	/* the table's attribute swallowing the key's */
	a->nla_len = 12;
	attr_at(wbuf, GENL_LEN)->nla_len = 4 + 2 + 12;
	assert_true(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext) < 0);
	attr_at(wbuf, GENL_LEN)->nla_len = 4 + 2 + 8;
	assert_true(parse(wbuf, TDB_PROTO_REQUEST, &out, &ext) < 0);
}

/* --- nests ----------------------------------------------------------- */

/* A TABLE_STAT reply whose STAT nest is made by fn. */
static int raw_stat(void (*fn)(struct nlmsghdr *), struct tdb_proto_msg *out,
		    struct tdb_proto_extack *ext)
{
	struct nlmsghdr *nlh = raw(wbuf, TDB_PROTO_FAMILY, 0,
				   TDB_CMD_TABLE_STAT, 1);
	struct nlattr *nest;

	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	nest = mnl_attr_nest_start(nlh, TDB_A_STAT);
	fn(nlh);
	mnl_attr_nest_end(nlh, nest);
	return parse(wbuf, TDB_PROTO_ANSWER, out, ext);
}

static void put_required_stat(struct nlmsghdr *nlh)
{
	mnl_attr_put_u64(nlh, TDB_STAT_A_RECORDS, 5);
	mnl_attr_put_u64(nlh, TDB_STAT_A_BYTES_USED, 6);
	mnl_attr_put_u64(nlh, TDB_STAT_A_BYTES_ALLOCATED, 7);
	mnl_attr_put_u32(nlh, TDB_STAT_A_EXTENTS, 8);
	mnl_attr_put_u32(nlh, TDB_STAT_A_MAX_EXTENTS, 9);
	mnl_attr_put_u64(nlh, TDB_STAT_A_PAGE_SIZE, 4096);
}

static void stat_ok(struct nlmsghdr *nlh)
{
	put_required_stat(nlh);
}

static void stat_missing(struct nlmsghdr *nlh)
{
	mnl_attr_put_u64(nlh, TDB_STAT_A_RECORDS, 5);
}

static void stat_dup(struct nlmsghdr *nlh)
{
	put_required_stat(nlh);
	mnl_attr_put_u32(nlh, TDB_STAT_A_EXTENTS, 8);
}

static void stat_badlen(struct nlmsghdr *nlh)
{
	put_required_stat(nlh);
	mnl_attr_put_u32(nlh, TDB_STAT_A_INDEX_NODES, 8);   /* a u64 */
}

static void stat_unknown(struct nlmsghdr *nlh)
{
	mnl_attr_put_u64(nlh, TDB_STAT_A_MAX + 1, 1);
	mnl_attr_put(nlh, TDB_STAT_A_MAX + 7, 3, "abc");
	put_required_stat(nlh);
	mnl_attr_put(nlh, TDB_STAT_A_PAD, 0, NULL);
}

static void stat_nested_flag(struct nlmsghdr *nlh)
{
	put_required_stat(nlh);
	mnl_attr_put_u32(nlh, TDB_STAT_A_UID | NLA_F_NESTED, 8);
}

static void stat_pad_len(struct nlmsghdr *nlh)
{
	put_required_stat(nlh);
	mnl_attr_put_u32(nlh, TDB_STAT_A_PAD, 8);
}

static void stat_empty(struct nlmsghdr *nlh)
{
	(void)nlh;
}

static void test_nested_stat(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, out;
	struct nlattr *nest, *inner;
	uint32_t at;

	(void)state;
	assert_int_equal(raw_stat(stat_ok, &out, &ext), 0);
	assert_int_equal(out.stat.present, 0x1dc);   /* 2,3,4,6,7,8 */
	assert_true(out.stat.records == 5 && out.stat.page_size == 4096);
	assert_int_equal(out.stat.max_extents, 9);
	assert_int_equal(raw_stat(stat_unknown, &out, &ext), 0);
	assert_true(out.stat.records == 5);
	assert_int_equal(raw_stat(stat_missing, &out, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_STAT_A_BYTES_USED);
	assert_int_equal(ext.offset, find_attr(last_copy, TDB_A_STAT));
	assert_int_equal(raw_stat(stat_empty, &out, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_STAT_A_RECORDS);
	assert_int_equal(raw_stat(stat_dup, &out, &ext), -EINVAL);
	assert_int_equal(raw_stat(stat_badlen, &out, &ext), -EINVAL);
	at = find_attr(last_copy, TDB_A_STAT) + 4 + 4 * 12 + 2 * 8;
	assert_int_equal(ext.offset, at);
	assert_int_equal(raw_stat(stat_nested_flag, &out, &ext), -EINVAL);
	assert_int_equal(raw_stat(stat_pad_len, &out, &ext), -EINVAL);

	/* the nest's length cuts its last attribute (PAGE_SIZE, 12 bytes
	 * at nest + 4 + 52) */
	assert_int_equal(raw_stat(stat_ok, &out, &ext), 0);
	at = find_attr((struct nlmsghdr *)wbuf, TDB_A_STAT);
	nest = attr_at(wbuf, at);
	assert_int_equal(nest->nla_len, 4 + 64);
	nest->nla_len -= 4;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	assert_string_equal(ext.msg, "attribute length overruns its nest");
	assert_int_equal(ext.offset, at + 4 + 52);
	nest->nla_len -= 8;     /* leaves it out whole: then it is missing */
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_STAT_A_PAGE_SIZE);
	nest->nla_len += 12;
	/* an inner attribute reaching past the nest */
	inner = attr_at(wbuf, at + 4 + 52);
	inner->nla_len += 4;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	/* one too long for its type, inside the nest */
	inner->nla_len -= 4;
	inner = attr_at(wbuf, at + 4);
	inner->nla_len += 4;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	inner->nla_len -= 4;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	/* a nest of 1..3 bytes */
	nest->nla_len = 4 + 2;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	assert_int_equal(ext.offset, at);
	/* STAT without NLA_F_NESTED */
	assert_int_equal(raw_stat(stat_ok, &out, &ext), 0);
	attr_at(wbuf, at)->nla_type = TDB_A_STAT;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	assert_string_equal(ext.msg, "nested attribute without NLA_F_NESTED");

	/* built: every figure, and the minimum */
	fill_all(&m, TDB_CMD_TABLE_LIST, TDB_PROTO_ANSWER,
		 A(TABLE) | A(STAT));
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.stat.present = TDB_PROTO_BIT(TDB_STAT_A_RECORDS) |
		TDB_PROTO_BIT(TDB_STAT_A_BYTES_USED) |
		TDB_PROTO_BIT(TDB_STAT_A_BYTES_ALLOCATED) |
		TDB_PROTO_BIT(TDB_STAT_A_EXTENTS) |
		TDB_PROTO_BIT(TDB_STAT_A_MAX_EXTENTS) |
		TDB_PROTO_BIT(TDB_STAT_A_PAGE_SIZE);
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.stat.present &= ~TDB_PROTO_BIT(TDB_STAT_A_PAGE_SIZE);
	assert_int_equal(tdb_proto_size(TDB_PROTO_ANSWER, &m, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_STAT_A_PAGE_SIZE);
	m.stat.present |= TDB_PROTO_BIT(TDB_STAT_A_PAGE_SIZE) |
			  TDB_PROTO_BIT(TDB_STAT_A_MAX + 1);
	assert_int_equal(tdb_proto_size(TDB_PROTO_ANSWER, &m, &ext), -EINVAL);
	m.stat.present = 0x3ffc | TDB_PROTO_BIT(TDB_STAT_A_PAD);
	assert_int_equal(tdb_proto_size(TDB_PROTO_ANSWER, &m, &ext), -EINVAL);

	/* counters */
	fill_all(&m, TDB_CMD_STATS, TDB_PROTO_ANSWER, A(COUNTERS));
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.counters.present = TDB_PROTO_BIT(TDB_CTR_A_TABLES);
	roundtrip(&m, TDB_PROTO_ANSWER);
	m.counters.present = TDB_PROTO_BIT(TDB_CTR_A_ERRORS);
	assert_int_equal(tdb_proto_size(TDB_PROTO_ANSWER, &m, &ext), -EINVAL);
	assert_int_equal(ext.miss_type, TDB_CTR_A_TABLES);
}

/* --- errors and dumps ----------------------------------------------------- */

static void test_error_replies(void **state)
{
	struct tdb_proto_extack ext, e2;
	struct tdb_proto_msg out, req;
	struct nlmsghdr *nlh;
	char longmsg[400];
	long len;
	uint32_t at;

	(void)state;
	/* a bad request, parsed; its answer carries the parser's extack */
	nlh = rawreq(wbuf2, TDB_CMD_PUT);
	nlh->nlmsg_seq = 1234567;
	nlh->nlmsg_pid = 99;
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "t");
	at = nlh->nlmsg_len;
	mnl_attr_put(nlh, TDB_A_KEY, TDB_KEY_MAX + 1, bigval);
	mnl_attr_put(nlh, TDB_A_VALUE, 1, "v");
	assert_int_equal(parse(wbuf2, TDB_PROTO_REQUEST, &req, &ext), -E2BIG);
	assert_int_equal(ext.offset, at);
	assert_non_null(req.nlh);
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, -E2BIG, &ext);
	assert_true(len > 0 && len <= TDB_PROTO_ERROR_MAX);
	nlh = (struct nlmsghdr *)wbuf;
	assert_int_equal(nlh->nlmsg_type, NLMSG_ERROR);
	assert_int_equal(nlh->nlmsg_flags, NLM_F_CAPPED | NLM_F_ACK_TLVS);
	assert_int_equal(nlh->nlmsg_seq, 1234567);
	assert_int_equal(nlh->nlmsg_pid, 99);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.type, NLMSG_ERROR);
	assert_int_equal(out.error, -E2BIG);
	assert_int_equal(out.seq, 1234567);
	assert_non_null(out.orig);
	assert_memory_equal(out.orig, wbuf2, sizeof(struct nlmsghdr));
	assert_string_equal(out.ext.msg, "key is longer than 4096 bytes");
	assert_int_equal(out.ext.offset, at);
	assert_int_equal(out.ext.miss_type, 0);
	/* the offset leads back to the key in the request */
	assert_int_equal(mnl_attr_get_type(attr_at(wbuf2, out.ext.offset)),
			 TDB_A_KEY);
	/* an error answer is not a request */
	assert_int_equal(parse(wbuf, TDB_PROTO_REQUEST, &out, &e2),
			 -EOPNOTSUPP);

	/* a missing attribute: NLMSGERR_ATTR_MISS_TYPE */
	nlh = rawreq(wbuf2, TDB_CMD_GET);
	mnl_attr_put(nlh, TDB_A_KEY, 1, "k");
	assert_int_equal(parse(wbuf2, TDB_PROTO_REQUEST, &req, &ext), -EINVAL);
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, -EINVAL, &ext);
	assert_true(len > 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.ext.miss_type, TDB_A_TABLE);
	assert_int_equal(out.ext.offset, 0);
	assert_string_equal(out.ext.msg, "TDB_A_TABLE (table name) is "
			    "required");

	/* an ack (req.nlh pointed into a copy that is gone now) */
	req.nlh = (struct nlmsghdr *)wbuf2;
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, 0, NULL);
	assert_int_equal(len, NLMSG_HDRLEN + sizeof(struct nlmsgerr));
	assert_int_equal(((struct nlmsghdr *)wbuf)->nlmsg_flags, NLM_F_CAPPED);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.error, 0);
	assert_null(out.ext.msg);
	memset(&ext, 0, sizeof(ext));
	assert_int_equal(tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, 0, &ext),
			 len);
	/* no request header at all */
	len = tdb_proto_error(wbuf, sizeof(wbuf), NULL, -EBADMSG, NULL);
	assert_true(len > 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.seq, 0);
	assert_int_equal(out.orig->nlmsg_len, 0);

	/* every byte defined, whatever the buffer held */
	memset(wbuf, 0xa5, 1024);
	ext = (struct tdb_proto_extack){ .msg = "odd length.", .offset = 40,
				       .miss_type = 3 };
	len = tdb_proto_error(wbuf, sizeof(wbuf), (void *)wbuf2, -EINVAL,
			      &ext);
	assert_true(len > 0);
	assert_padding_zero((unsigned char *)wbuf + NLMSG_HDRLEN +
			    sizeof(struct nlmsgerr), (unsigned char *)wbuf + len);
	memset(wbuf, 0xa5, 1024);
	len = tdb_proto_done(wbuf, sizeof(wbuf), (void *)wbuf2, -EIO, &ext);
	assert_padding_zero((unsigned char *)wbuf + NLMSG_HDRLEN + 4,
			    (unsigned char *)wbuf + len);

	/* a long message is cut to TDB_PROTO_EXTACK_MAX bytes */
	memset(longmsg, 'x', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	ext.msg = longmsg;
	ext.offset = 0xfffffff0;
	ext.miss_type = 0xffff;
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, -MAX_ERRNO_TEST,
			      &ext);
	assert_true(len > 0 && len <= TDB_PROTO_ERROR_MAX);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(strlen(out.ext.msg), TDB_PROTO_EXTACK_MAX);
	assert_int_equal(out.ext.offset, 0xfffffff0);
	assert_int_equal(out.ext.miss_type, 0xffff);
	assert_int_equal(out.error, -MAX_ERRNO_TEST);
	assert_int_equal(out.ext.cookie_len, 0);

	/* an ack with a cookie (tdbd's WATCH: where the feed starts), also
	 * next to a message and with the longest cookie netlink allows */
	memset(&ext, 0, sizeof(ext));
	ext.cookie_len = 4;
	memcpy(ext.cookie, "\x01\x02\x03\x04", 4);
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, 0, &ext);
	assert_true(len > 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.error, 0);
	assert_int_equal(out.ext.cookie_len, 4);
	assert_memory_equal(out.ext.cookie, "\x01\x02\x03\x04", 4);
	assert_null(out.ext.msg);
	ext.msg = "with text";
	ext.cookie_len = TDB_PROTO_COOKIE_MAX;
	memset(ext.cookie, 0x5a, TDB_PROTO_COOKIE_MAX);
	len = tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, -ENOENT, &ext);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.ext.cookie_len, TDB_PROTO_COOKIE_MAX);
	assert_int_equal(out.ext.cookie[TDB_PROTO_COOKIE_MAX - 1], 0x5a);
	assert_string_equal(out.ext.msg, "with text");
	ext.cookie_len = TDB_PROTO_COOKIE_MAX + 1;      /* refused to build */
	assert_int_equal(tdb_proto_error(wbuf, sizeof(wbuf), req.nlh, 0, &ext),
			 -EINVAL);

	/* bad error values */
	assert_int_equal(tdb_proto_error(wbuf, sizeof(wbuf), NULL, 1, NULL),
			 -EINVAL);
	assert_int_equal(tdb_proto_error(wbuf, sizeof(wbuf), NULL, -4096,
					 NULL), -EINVAL);
	assert_int_equal(tdb_proto_done(wbuf, sizeof(wbuf), NULL, 5, NULL),
			 -EINVAL);
	/* a misaligned buffer */
	assert_int_equal(tdb_proto_error((char *)wbuf + 1, 100, NULL, 0, NULL),
			 -EINVAL);
}

/* NLMSG_ERROR as others may send it. */
static void test_error_parsing(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg out;
	struct nlmsghdr *nlh, *orig;
	struct nlmsgerr *e;
	long len;

	(void)state;
	/* the request echoed whole (generic netlink's default) */
	orig = rawreq(wbuf2, TDB_CMD_DEL);
	mnl_attr_put_strz(orig, TDB_A_TABLE, "tbl");
	mnl_attr_put(orig, TDB_A_KEY, 5, "kkkkk");
	nlh = mnl_nlmsg_put_header(wbuf);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_seq = 77;
	e = mnl_nlmsg_put_extra_header(nlh, sizeof(int) + orig->nlmsg_len);
	e->error = -ENOENT;
	memcpy(&e->msg, orig, orig->nlmsg_len);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	assert_int_equal(out.error, -ENOENT);
	assert_int_equal(out.orig->nlmsg_len, orig->nlmsg_len);
	/* with TLVs after the echo */
	nlh->nlmsg_flags = NLM_F_ACK_TLVS;
	mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, "no such key");
	mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS, 24);
	mnl_attr_put_u32(nlh, NLMSGERR_ATTR_COOKIE, 1);     /* skipped */
	mnl_attr_put_u32(nlh, 200, 1);                      /* skipped */
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	assert_string_equal(out.ext.msg, "no such key");
	assert_int_equal(out.ext.offset, 24);
	/* TLVs without NLM_F_ACK_TLVS */
	nlh->nlmsg_flags = 0;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	nlh->nlmsg_flags = NLM_F_ACK_TLVS;
	/* a duplicate TLV, a bad one */
	mnl_attr_put_u32(nlh, NLMSGERR_ATTR_OFFS, 28);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	nlh->nlmsg_len -= 8;
	mnl_attr_put(nlh, NLMSGERR_ATTR_MISS_TYPE, 2, "ab");
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	nlh->nlmsg_len -= 8;
	/* the echo claims more than there is */
	e->msg.nlmsg_len = 4000;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	e->msg.nlmsg_len = 8;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	e->msg.nlmsg_len = orig->nlmsg_len;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	/* error values */
	e->error = 3;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	e->error = -5000;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	e->error = -ENOENT;
	/* other flags */
	nlh->nlmsg_flags |= NLM_F_MULTI;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
	/* too short for struct nlmsgerr */
	nlh->nlmsg_flags = NLM_F_CAPPED;
	nlh->nlmsg_len = NLMSG_HDRLEN + 16;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EBADMSG);
	/* MSG without its NUL */
	len = tdb_proto_error(wbuf, sizeof(wbuf), orig, -EIO,
			      &(struct tdb_proto_extack){ .msg = "abcd" });
	assert_true(len > 0);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), 0);
	((char *)wbuf)[len - 4] = 'e';      /* the NUL and its padding */
	((char *)wbuf)[len - 3] = 'f';
	((char *)wbuf)[len - 2] = 'g';
	((char *)wbuf)[len - 1] = 'h';
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &ext), -EINVAL);
}

static void test_done(void **state)
{
	struct tdb_proto_extack ext, e2;
	struct tdb_proto_msg out;
	struct nlmsghdr *req, *nlh;
	long len;

	(void)state;
	req = rawreq(wbuf2, TDB_CMD_SCAN);
	req->nlmsg_seq = 31337;
	mnl_attr_put_strz(req, TDB_A_TABLE, "t");
	len = tdb_proto_done(wbuf, sizeof(wbuf), req, 0, NULL);
	assert_int_equal(len, NLMSG_HDRLEN + 4);
	nlh = (struct nlmsghdr *)wbuf;
	assert_int_equal(nlh->nlmsg_type, NLMSG_DONE);
	assert_int_equal(nlh->nlmsg_flags, NLM_F_MULTI);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.type, NLMSG_DONE);
	assert_int_equal(out.error, 0);
	assert_int_equal(out.seq, 31337);
	assert_null(out.orig);

	ext = (struct tdb_proto_extack){
		.msg = "table dropped during the scan" };
	len = tdb_proto_done(wbuf, sizeof(wbuf), req, -ENOENT, &ext);
	assert_true(len > 0);
	assert_int_equal(nlh->nlmsg_flags, NLM_F_MULTI | NLM_F_ACK_TLVS);
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), 0);
	assert_int_equal(out.error, -ENOENT);
	assert_string_equal(out.ext.msg, "table dropped during the scan");
	/* DONE must have NLM_F_MULTI; no bytes after the int without TLVs */
	nlh->nlmsg_flags = NLM_F_ACK_TLVS;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), -EINVAL);
	nlh->nlmsg_flags = NLM_F_MULTI;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), -EBADMSG);
	nlh->nlmsg_len = NLMSG_HDRLEN;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), -EBADMSG);
	nlh->nlmsg_len = NLMSG_HDRLEN + 4;
	*(int *)mnl_nlmsg_get_payload(nlh) = 7;
	assert_int_equal(parse(wbuf, TDB_PROTO_ANSWER, &out, &e2), -EINVAL);
}

/* --- buffers too small ---------------------------------------------------- */

/* Every size below need: -EMSGSIZE and not a byte written. */
static void check_too_small(long (*build)(void *, size_t, const void *),
			    const void *arg, long need, long step)
{
	long size;

	for (size = 0; size < need; size += (size < 256 ? 1 : step)) {
		unsigned char *b = malloc((size_t)size + 1);
		long i;

		assert_non_null(b);
		memset(b, 0xa5, (size_t)size + 1);
		assert_int_equal(build(b, (size_t)size, arg), -EMSGSIZE);
		for (i = 0; i <= size; i++)
			assert_int_equal(b[i], 0xa5);
		free(b);
	}
	/* and the exact size works */
	{
		unsigned char *b = malloc((size_t)need);

		assert_non_null(b);
		assert_int_equal(build(b, (size_t)need, arg), need);
		free(b);
	}
}

static enum tdb_proto_dir small_dir;

static long build_msg(void *b, size_t size, const void *arg)
{
	struct tdb_proto_extack ext;
	long rc = tdb_proto_build(b, size, small_dir, arg, &ext);

	if (rc == -EMSGSIZE)
		assert_non_null(ext.msg);
	return rc;
}

static long build_error(void *b, size_t size, const void *arg)
{
	static const struct tdb_proto_extack e = {
		.msg = "this message says what was wrong", .offset = 40,
		.miss_type = 2,
	};

	return tdb_proto_error(b, size, arg, -EINVAL, &e);
}

static long build_done(void *b, size_t size, const void *arg)
{
	static const struct tdb_proto_extack e = { .msg = "why" };

	return tdb_proto_done(b, size, arg, -EIO, &e);
}

static void test_buffer_too_small(void **state)
{
	struct tdb_proto_msg m;
	uint8_t cmd;
	long need;

	(void)state;
	fill_pattern(bigval, sizeof(bigval), 6);
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		fill_all(&m, cmd, TDB_PROTO_REQUEST, spec[cmd].req_allow);
		small_dir = TDB_PROTO_REQUEST;
		need = tdb_proto_size(TDB_PROTO_REQUEST, &m, NULL);
		check_too_small(build_msg, &m, need, 1);
		if (spec[cmd].ans_flags == 0xffff)
			continue;
		fill_all(&m, cmd, TDB_PROTO_ANSWER, spec[cmd].ans_allow);
		small_dir = TDB_PROTO_ANSWER;
		need = tdb_proto_size(TDB_PROTO_ANSWER, &m, NULL);
		check_too_small(build_msg, &m, need, 1);
	}
	/* a 1 MiB value: sizes around every fragment */
	fill_all(&m, TDB_CMD_PUT, TDB_PROTO_REQUEST,
		 spec[TDB_CMD_PUT].req_allow);
	m.value = bigval;
	m.value_len = TDB_VALUE_MAX;
	small_dir = TDB_PROTO_REQUEST;
	need = tdb_proto_size(TDB_PROTO_REQUEST, &m, NULL);
	check_too_small(build_msg, &m, need, 65521);
	{
		unsigned char *b = malloc((size_t)need);

		assert_non_null(b);
		assert_int_equal(tdb_proto_build(b, (size_t)need - 1,
			TDB_PROTO_REQUEST, &m, NULL), -EMSGSIZE);
		free(b);
	}
	/* errors and dumps' ends */
	rawreq(wbuf2, TDB_CMD_GET);
	need = build_error(wbuf, sizeof(wbuf), wbuf2);
	assert_true(need > 0);
	check_too_small(build_error, wbuf2, need, 1);
	need = build_done(wbuf, sizeof(wbuf), wbuf2);
	assert_true(need > 0);
	check_too_small(build_done, wbuf2, need, 1);
}

static void test_builder_refuses(void **state)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;

	(void)state;
	fill_all(&m, TDB_CMD_GET, TDB_PROTO_REQUEST, A(TABLE) | A(KEY));
	m.cmd = 0;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EOPNOTSUPP);
	m.cmd = TDB_CMD_MAX + 1;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EOPNOTSUPP);
	m.cmd = TDB_CMD_GET;
	m.attrs |= A(LIMIT);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	assert_string_equal(ext.msg, "attribute not valid in this message");
	m.attrs = A(TABLE) | A(KEY) | A(PAD);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	m.attrs = A(TABLE) | A(KEY) | TDB_PROTO_BIT(TDB_A_MAX + 1);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	m.attrs = A(TABLE) | A(KEY);
	m.key = NULL;
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, &ext), -EINVAL);
	m.key = "k";
	m.key_len = 1;
	assert_int_equal(tdb_proto_build((char *)wbuf + 2, sizeof(wbuf) - 4,
					 TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), 0, &m, &ext),
			 -EINVAL);
	assert_int_equal(tdb_proto_build(wbuf, sizeof(wbuf), TDB_PROTO_REQUEST,
					 &m, NULL), tdb_proto_size(
					 TDB_PROTO_REQUEST, &m, NULL));
	/* a value pointer may be NULL only when empty */
	fill_all(&m, TDB_CMD_PUT, TDB_PROTO_REQUEST,
		 spec[TDB_CMD_PUT].req_need);
	m.value = NULL;
	assert_int_equal(tdb_proto_size(TDB_PROTO_REQUEST, &m, &ext), -EINVAL);
	m.value_len = 0;
	roundtrip(&m, TDB_PROTO_REQUEST);
}

static int teardown(void **state)
{
	(void)state;
	free_copy();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_roundtrip_requests, teardown),
		cmocka_unit_test_teardown(test_roundtrip_answers, teardown),
		cmocka_unit_test_teardown(test_scan_parts, teardown),
		cmocka_unit_test_teardown(test_cmd_helpers, teardown),
		cmocka_unit_test_teardown(test_key_limits, teardown),
		cmocka_unit_test_teardown(test_value_limits, teardown),
		cmocka_unit_test_teardown(test_value_fragments, teardown),
		cmocka_unit_test_teardown(test_table_names, teardown),
		cmocka_unit_test_teardown(test_new_names, teardown),
		cmocka_unit_test(test_escape),
		cmocka_unit_test_teardown(test_prefix_cursor_limits, teardown),
		cmocka_unit_test_teardown(test_scan_request_rules, teardown),
		cmocka_unit_test_teardown(test_range_limits, teardown),
		cmocka_unit_test_teardown(test_restore_bulk, teardown),
		cmocka_unit_test_teardown(test_int_values, teardown),
		cmocka_unit_test_teardown(test_truncated, teardown),
		cmocka_unit_test_teardown(test_trailing_messages, teardown),
		cmocka_unit_test_teardown(test_header_errors, teardown),
		cmocka_unit_test_teardown(test_nlmsg_flags, teardown),
		cmocka_unit_test_teardown(test_missing_required, teardown),
		cmocka_unit_test_teardown(test_duplicates, teardown),
		cmocka_unit_test_teardown(test_unknown_and_misplaced, teardown),
		cmocka_unit_test_teardown(test_attr_overruns, teardown),
		cmocka_unit_test_teardown(test_nested_stat, teardown),
		cmocka_unit_test_teardown(test_error_replies, teardown),
		cmocka_unit_test_teardown(test_error_parsing, teardown),
		cmocka_unit_test_teardown(test_done, teardown),
		cmocka_unit_test_teardown(test_buffer_too_small, teardown),
		cmocka_unit_test_teardown(test_builder_refuses, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
