// SPDX-License-Identifier: MIT
/*
 * proto.c - the tdb protocol codec: policies, validation, building.
 *
 * Policies are data: attr_pol[] says what every attribute type is (the
 * same in every command), cmd_pol[] which attributes each command takes
 * in each direction and how it is answered.  The parser and the builder
 * both consult them and share the value checks, so whatever the builder
 * writes the parser accepts, and whatever the builder refuses the parser
 * refuses with the same errno and message.
 */
#include <errno.h>
#include <string.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "proto.h"

#define BIT(a) TDB_PROTO_BIT(a)
#define GENL_LEN ((uint32_t)(NLMSG_HDRLEN + GENL_HDRLEN))   /* 20 */
#define MAX_ERRNO 4095

/* --- attribute policy ----------------------------------------------- */

enum pt { PT_NONE, PT_PAD, PT_STR, PT_BIN, PT_U32, PT_U64, PT_NEST };

struct attr_pol {
	uint8_t pt;
	uint8_t mnl;            /* type for mnl_attr_validate2 */
	uint32_t min, max;      /* payload bytes (PT_STR: without the NUL) */
	int err_long;           /* errno when over max */
	const char *short_msg, *long_msg;
	const char *miss_msg;   /* when required and absent */
};

static const struct attr_pol attr_pol[TDB_A_MAX + 1] = {
	[TDB_A_PAD] = { PT_PAD, MNL_TYPE_UNSPEC, 0, 0, EINVAL,
		NULL, "PAD attribute is not empty", NULL },
	[TDB_A_TABLE] = { PT_STR, MNL_TYPE_NUL_STRING, 1, TDB_NAME_MAX,
		ENAMETOOLONG, "table name is empty",
		"table name is longer than 64 bytes",
		"TDB_A_TABLE (table name) is required" },
	[TDB_A_KEY] = { PT_BIN, MNL_TYPE_BINARY, TDB_KEY_MIN, TDB_KEY_MAX,
		E2BIG, "key is empty", "key is longer than 4096 bytes",
		"TDB_A_KEY is required" },
	[TDB_A_VALUE] = { PT_BIN, MNL_TYPE_BINARY, 0, TDB_VALUE_FRAG,
		EINVAL, NULL,
		"VALUE fragment is longer than TDB_VALUE_FRAG (65528) bytes",
		"TDB_A_VALUE is required" },
	[TDB_A_FLAGS] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"FLAGS is not a u32", "FLAGS is not a u32", NULL },
	[TDB_A_TXN] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"TXN is not a u64", "TXN is not a u64",
		"TDB_A_TXN (transaction id) is required" },
	[TDB_A_PREFIX] = { PT_BIN, MNL_TYPE_BINARY, 0, TDB_KEY_MAX, E2BIG,
		NULL, "prefix is longer than 4096 bytes", NULL },
	[TDB_A_LIMIT] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"LIMIT is not a u32", "LIMIT is not a u32", NULL },
	[TDB_A_CURSOR] = { PT_BIN, MNL_TYPE_BINARY, 1, TDB_CURSOR_MAX,
		EINVAL, "cursor is empty",
		"cursor is longer than TDB_CURSOR_MAX bytes", NULL },
	[TDB_A_STAT] = { PT_NEST, MNL_TYPE_NESTED, 0, 0, EINVAL,
		"STAT nest is shorter than an attribute", NULL,
		"TDB_A_STAT is required" },
	[TDB_A_COUNTERS] = { PT_NEST, MNL_TYPE_NESTED, 0, 0, EINVAL,
		"COUNTERS nest is shorter than an attribute", NULL,
		"TDB_A_COUNTERS is required" },
	[TDB_A_MAX_EXTENTS] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"MAX_EXTENTS is not a u32", "MAX_EXTENTS is not a u32", NULL },
	[TDB_A_UID] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"UID is not a u32", "UID is not a u32", NULL },
	[TDB_A_GID] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"GID is not a u32", "GID is not a u32", NULL },
	[TDB_A_MODE] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"MODE is not a u32", "MODE is not a u32", NULL },
	[TDB_A_SCAN_FLAGS] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"SCAN_FLAGS is not a u32", "SCAN_FLAGS is not a u32", NULL },
	[TDB_A_VERSION] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"VERSION is not a u64", "VERSION is not a u64",
		"TDB_A_VERSION is required" },
	[TDB_A_IF_VERSION] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"IF_VERSION is not a u64", "IF_VERSION is not a u64", NULL },
	[TDB_A_DELTA] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"DELTA is not an s64", "DELTA is not an s64", NULL },
	[TDB_A_INT] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"INT is not an s64", "INT is not an s64",
		"TDB_A_INT (INCR's result) is required" },
	[TDB_A_SET_VERSION] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"SET_VERSION is not a u64", "SET_VERSION is not a u64",
		NULL },
	[TDB_A_TTL] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"TTL is not a u64", "TTL is not a u64", NULL },
	[TDB_A_DEADLINE] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"DEADLINE is not a u64", "DEADLINE is not a u64", NULL },
	[TDB_A_EXPIRE_FLAGS] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"EXPIRE_FLAGS is not a u32", "EXPIRE_FLAGS is not a u32",
		NULL },
	[TDB_A_REASON] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"REASON is not a u32", "REASON is not a u32", NULL },
	[TDB_A_MAX_BYTES] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"MAX_BYTES is not a u64", "MAX_BYTES is not a u64", NULL },
	[TDB_A_MAX_RECORDS] = { PT_U64, MNL_TYPE_U64, 8, 8, EINVAL,
		"MAX_RECORDS is not a u64", "MAX_RECORDS is not a u64",
		NULL },
	[TDB_A_EVICT] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"EVICT is not a u32", "EVICT is not a u32", NULL },
	[TDB_A_HASHES] = { PT_BIN, MNL_TYPE_BINARY, 8, 8 * TDB_TOUCH_MAX,
		EINVAL, "HASHES is empty", "HASHES holds more than "
		"TDB_TOUCH_MAX (512) hashes", "TDB_A_HASHES is required" },
	[TDB_A_TABLE_FLAGS] = { PT_U32, MNL_TYPE_U32, 4, 4, EINVAL,
		"TABLE_FLAGS is not a u32", "TABLE_FLAGS is not a u32", NULL },
	[TDB_A_FROM] = { PT_BIN, MNL_TYPE_BINARY, TDB_KEY_MIN, TDB_KEY_MAX,
		E2BIG, "FROM (a range's start key) is empty",
		"FROM (a range's start key) is longer than 4096 bytes",
		NULL },
	[TDB_A_TO] = { PT_BIN, MNL_TYPE_BINARY, TDB_KEY_MIN, TDB_KEY_MAX,
		E2BIG, "TO (a range's end key) is empty",
		"TO (a range's end key) is longer than 4096 bytes", NULL },
	[TDB_A_RECORDS] = { PT_BIN, MNL_TYPE_BINARY, TDB_RESTORE_REC_HDR,
		TDB_RESTORE_BULK_MAX, E2BIG,
		"RECORDS is shorter than one record's header (24 bytes)",
		"RECORDS is longer than TDB_RESTORE_BULK_MAX (65528) bytes",
		"TDB_A_RECORDS (the packed records) is required" },
};

/* Nested attributes: u32, u64 or PAD; `need` is required in answers. */
struct nest_pol {
	uint32_t max;                   /* highest type */
	const uint8_t *pt;              /* [type] -> PT_* */
	uint32_t need;
	const char *miss_msg;
	const char *bad_len_msg;
};

static const uint8_t stat_pt[TDB_STAT_A_MAX + 1] = {
	[TDB_STAT_A_PAD] = PT_PAD,
	[TDB_STAT_A_RECORDS] = PT_U64,
	[TDB_STAT_A_BYTES_USED] = PT_U64,
	[TDB_STAT_A_BYTES_ALLOCATED] = PT_U64,
	[TDB_STAT_A_BYTES_PENDING] = PT_U64,
	[TDB_STAT_A_EXTENTS] = PT_U32,
	[TDB_STAT_A_MAX_EXTENTS] = PT_U32,
	[TDB_STAT_A_PAGE_SIZE] = PT_U64,
	[TDB_STAT_A_INDEX_NODES] = PT_U64,
	[TDB_STAT_A_INDEX_BUCKETS] = PT_U64,
	[TDB_STAT_A_UID] = PT_U32,
	[TDB_STAT_A_GID] = PT_U32,
	[TDB_STAT_A_MODE] = PT_U32,
	[TDB_STAT_A_STATE] = PT_U32,
	[TDB_STAT_A_DEFAULT_TTL] = PT_U64,
	[TDB_STAT_A_EXPIRING] = PT_U64,
	[TDB_STAT_A_EXPIRED] = PT_U64,
	[TDB_STAT_A_MAX_BYTES] = PT_U64,
	[TDB_STAT_A_MAX_RECORDS] = PT_U64,
	[TDB_STAT_A_EVICT] = PT_U32,
	[TDB_STAT_A_EVICTED] = PT_U64,
	[TDB_STAT_A_TABLE_FLAGS] = PT_U32,
};

static const uint8_t ctr_pt[TDB_CTR_A_MAX + 1] = {
	[TDB_CTR_A_PAD] = PT_PAD,
	[TDB_CTR_A_TABLES] = PT_U32,
	[TDB_CTR_A_CLIENTS] = PT_U32,
	[TDB_CTR_A_WATCHES] = PT_U32,
	[TDB_CTR_A_TXNS] = PT_U32,
	[TDB_CTR_A_REQUESTS] = PT_U64,
	[TDB_CTR_A_ERRORS] = PT_U64,
	[TDB_CTR_A_UPTIME_MS] = PT_U64,
	[TDB_CTR_A_ACCEPTED] = PT_U64,
	[TDB_CTR_A_CLEANUPS] = PT_U64,
	[TDB_CTR_A_TXNS_ABORTED] = PT_U64,
	[TDB_CTR_A_WATCHES_DROPPED] = PT_U64,
	[TDB_CTR_A_RINGS] = PT_U32,
	[TDB_CTR_A_RINGS_FREED] = PT_U64,
	[TDB_CTR_A_STUCK] = PT_U64,
	[TDB_CTR_A_VIOLATIONS] = PT_U64,
	[TDB_CTR_A_THROTTLED] = PT_U32,
	[TDB_CTR_A_DUMPS] = PT_U32,
	[TDB_CTR_A_WAL_RECORDS] = PT_U64,
	[TDB_CTR_A_WAL_LSN] = PT_U64,
	[TDB_CTR_A_WAL_DURABLE] = PT_U64,
	[TDB_CTR_A_WAL_SYNCS] = PT_U64,
	[TDB_CTR_A_CHECKPOINTS] = PT_U64,
	[TDB_CTR_A_CKPT_FAILURES] = PT_U64,
	[TDB_CTR_A_CKPT_LSN] = PT_U64,
	[TDB_CTR_A_TABLES_ASIDE] = PT_U32,
	[TDB_CTR_A_READERS_EXPIRED] = PT_U64,
	[TDB_CTR_A_EXPIRED] = PT_U64,
	[TDB_CTR_A_EVICTED] = PT_U64,
};

static const struct nest_pol stat_pol = {
	TDB_STAT_A_MAX, stat_pt,
	BIT(TDB_STAT_A_RECORDS) | BIT(TDB_STAT_A_BYTES_USED) |
	BIT(TDB_STAT_A_BYTES_ALLOCATED) | BIT(TDB_STAT_A_EXTENTS) |
	BIT(TDB_STAT_A_MAX_EXTENTS) | BIT(TDB_STAT_A_PAGE_SIZE),
	"a required TDB_STAT_A_* attribute is missing",
	"TDB_STAT_A_* attribute has the wrong length",
};

static const struct nest_pol ctr_pol = {
	TDB_CTR_A_MAX, ctr_pt,
	BIT(TDB_CTR_A_TABLES),
	"a required TDB_CTR_A_* attribute is missing",
	"TDB_CTR_A_* attribute has the wrong length",
};

/* --- command policy ---------------------------------------------------- */

enum ans { ANS_NONE, ANS_REPLY, ANS_PART, ANS_NOTIFY };

struct cmd_pol {
	const char *name;
	bool dump, ack;
	uint64_t req_allow, req_need;
	uint8_t ans;            /* the kind of family message answering it */
	uint64_t ans_allow, ans_need;
};

#define A(x) BIT(TDB_A_##x)
static const struct cmd_pol cmd_pol[TDB_CMD_MAX + 1] = {
	[TDB_CMD_TABLE_CREATE] = { "TABLE_CREATE", false, true,
		A(TABLE) | A(MAX_EXTENTS) | A(UID) | A(GID) | A(MODE) | A(TTL) |
		A(MAX_BYTES) | A(MAX_RECORDS) | A(EVICT) | A(TABLE_FLAGS),
		A(TABLE),
		ANS_NONE, 0, 0 },
	[TDB_CMD_TABLE_DROP] = { "TABLE_DROP", false, true,
		A(TABLE), A(TABLE),
		ANS_NOTIFY, A(TABLE), 0 },
	[TDB_CMD_TABLE_LIST] = { "TABLE_LIST", true, false,
		0, 0,
		ANS_PART, A(TABLE) | A(STAT), A(TABLE) | A(STAT) },
	[TDB_CMD_TABLE_STAT] = { "TABLE_STAT", false, false,
		A(TABLE), A(TABLE),
		ANS_REPLY, A(TABLE) | A(STAT), A(TABLE) | A(STAT) },
	[TDB_CMD_GET] = { "GET", false, false,
		A(TABLE) | A(KEY) | A(TXN), A(TABLE) | A(KEY),
		ANS_REPLY, A(VALUE) | A(VERSION) | A(DEADLINE), A(VALUE) },
	[TDB_CMD_PUT] = { "PUT", false, true,
		A(TABLE) | A(KEY) | A(VALUE) | A(FLAGS) | A(TXN) |
		A(IF_VERSION) | A(SET_VERSION) | A(TTL) | A(DEADLINE),
		A(TABLE) | A(KEY) | A(VALUE),
		ANS_NOTIFY, A(TABLE) | A(KEY) | A(VALUE) | A(VERSION) |
		A(DEADLINE), A(KEY) | A(VALUE) },
	[TDB_CMD_DEL] = { "DEL", false, true,
		A(TABLE) | A(KEY) | A(TXN) | A(IF_VERSION),
		A(TABLE) | A(KEY),
		ANS_NOTIFY, A(TABLE) | A(KEY) | A(VERSION) | A(REASON),
		A(KEY) },
	[TDB_CMD_SCAN] = { "SCAN", true, false,
		A(TABLE) | A(PREFIX) | A(LIMIT) | A(CURSOR) | A(SCAN_FLAGS) |
		A(FROM) | A(TO) | A(TXN),
		A(TABLE),
		ANS_PART, A(KEY) | A(VALUE) | A(CURSOR) | A(VERSION) |
		A(DEADLINE), 0 /* scan_part_ok */ },
	[TDB_CMD_TXN_BEGIN] = { "TXN_BEGIN", false, false,
		0, 0,
		ANS_REPLY, A(TXN), A(TXN) },
	[TDB_CMD_TXN_COMMIT] = { "TXN_COMMIT", false, true,
		A(TXN), A(TXN),
		ANS_NONE, 0, 0 },
	[TDB_CMD_TXN_ABORT] = { "TXN_ABORT", false, true,
		A(TXN), A(TXN),
		ANS_NONE, 0, 0 },
	[TDB_CMD_WATCH] = { "WATCH", false, true,
		A(TABLE) | A(PREFIX), A(TABLE),
		ANS_NONE, 0, 0 },
	[TDB_CMD_UNWATCH] = { "UNWATCH", false, true,
		A(TABLE) | A(PREFIX), A(TABLE),
		ANS_NONE, 0, 0 },
	[TDB_CMD_STATS] = { "STATS", false, false,
		0, 0,
		ANS_REPLY, A(COUNTERS), A(COUNTERS) },
	[TDB_CMD_ATTACH] = { "ATTACH", false, true,
		0, 0,
		ANS_NONE, 0, 0 },
	[TDB_CMD_TABLE_MAP] = { "TABLE_MAP", false, true,
		A(TABLE), A(TABLE),
		ANS_NONE, 0, 0 },
	[TDB_CMD_INCR] = { "INCR", false, false,
		A(TABLE) | A(KEY) | A(DELTA) | A(TXN), A(TABLE) | A(KEY),
		ANS_REPLY, A(INT) | A(VERSION), A(INT) },
	[TDB_CMD_TOUCH] = { "TOUCH", false, true,
		A(TABLE) | A(HASHES), A(TABLE) | A(HASHES),
		ANS_NONE, 0, 0 },
	[TDB_CMD_EXPIRE] = { "EXPIRE", false, false,
		A(TABLE) | A(KEY) | A(TTL) | A(DEADLINE) | A(EXPIRE_FLAGS),
		A(TABLE) | A(KEY),
		ANS_REPLY, A(VERSION) | A(DEADLINE), A(VERSION) },
	[TDB_CMD_RESTORE_BULK] = { "RESTORE_BULK", false, true,
		A(TABLE) | A(RECORDS), A(TABLE) | A(RECORDS),
		ANS_NONE, 0, 0 },
};
#undef A

static const struct cmd_pol *get_cmd(unsigned int cmd)
{
	if (cmd == TDB_CMD_UNSPEC || cmd > TDB_CMD_MAX)
		return NULL;
	return &cmd_pol[cmd];
}

bool tdb_proto_cmd_is_dump(unsigned int cmd)
{
	const struct cmd_pol *cp = get_cmd(cmd);

	return cp && cp->dump;
}

bool tdb_proto_cmd_is_ack(unsigned int cmd)
{
	const struct cmd_pol *cp = get_cmd(cmd);

	return cp && cp->ack;
}

const char *tdb_proto_cmd_name(unsigned int cmd)
{
	const struct cmd_pol *cp = get_cmd(cmd);

	return cp ? cp->name : "?";
}

/* --- checks shared by the parser and the builder ---------------------- */

/* strnlen(): the codec calls no C library function but mem*(), in either
 * home (tests/check_symbols.sh). */
static size_t str_len(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

static int fail(struct tdb_proto_extack *ext, int err, const char *msg,
		uint32_t off)
{
	ext->msg = msg;
	ext->offset = off;
	return -err;
}

/* A table name of n bytes (no NUL among them). */
static int check_name_chars(const char *p, size_t n,
			    struct tdb_proto_extack *ext, uint32_t off)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c < 0x21 || c == 0x7f || c == '/')
			return fail(ext, EINVAL, "table name has a space, "
				    "control character or '/'", off);
	}
	return 0;
}

/* A new table's name (TABLE_CREATE request): the safe set of
 * tdb_name_check() (include/tdb/proto.h), a subset of the above.  Only
 * CREATE checks it: tables named before the rule are still looked up,
 * listed and dropped by their names. */
static int check_new_name(const char *p, size_t n,
			  struct tdb_proto_extack *ext, uint32_t off)
{
	const char *why = NULL;
	int err = tdb_name_check(p, n, &why);

	return err ? fail(ext, -err, why, off) : 0;
}

/* Payload length of a PT_STR/PT_BIN attribute (PT_STR without NUL). */
static int check_len(unsigned int type, size_t len,
		     struct tdb_proto_extack *ext, uint32_t off)
{
	const struct attr_pol *p = &attr_pol[type];

	if (len < p->min)
		return fail(ext, EINVAL, p->short_msg, off);
	if (len > p->max)
		return fail(ext, p->err_long, p->long_msg, off);
	return 0;
}

/* The field of m that holds u64 attribute `type` (s64 ones as their
 * bits: DELTA, INT). */
static uint64_t *u64_field(struct tdb_proto_msg *m, unsigned int type)
{
	switch (type) {
	case TDB_A_VERSION:     return &m->rec_version;
	case TDB_A_IF_VERSION:  return &m->if_version;
	case TDB_A_DELTA:       return (uint64_t *)&m->delta;
	case TDB_A_INT:         return (uint64_t *)&m->ival;
	case TDB_A_SET_VERSION: return &m->set_version;
	case TDB_A_TTL:         return &m->ttl;
	case TDB_A_DEADLINE:    return &m->deadline;
	case TDB_A_MAX_BYTES:   return &m->max_bytes;
	case TDB_A_MAX_RECORDS: return &m->max_records;
	default:                return &m->txn;
	}
}

/* The value of an integer attribute. */
static int check_int(unsigned int type, uint64_t v,
		     struct tdb_proto_extack *ext, uint32_t off)
{
	switch (type) {
	case TDB_A_FLAGS:
		if (v & ~(uint64_t)TDB_PUT_FLAGS_ALL)
			return fail(ext, EOPNOTSUPP, "unknown PUT flag", off);
		break;
	case TDB_A_SCAN_FLAGS:
		if (v & ~(uint64_t)TDB_SCAN_FLAGS_ALL)
			return fail(ext, EOPNOTSUPP, "unknown SCAN flag", off);
		break;
	case TDB_A_TABLE_FLAGS:
		if (v & ~(uint64_t)TDB_TABLE_F_ALL)
			return fail(ext, EOPNOTSUPP, "unknown table flags "
				    "(TABLE_FLAGS: only TDB_TABLE_F_ORDERED)",
				    off);
		break;
	case TDB_A_EXPIRE_FLAGS:
		if (v & ~(uint64_t)TDB_EXPIRE_FLAGS_ALL)
			return fail(ext, EOPNOTSUPP, "unknown EXPIRE flag",
				    off);
		break;
	case TDB_A_REASON:
		if (v != TDB_REASON_EXPIRED && v != TDB_REASON_EVICTED)
			return fail(ext, EINVAL, "unknown REASON", off);
		break;
	case TDB_A_EVICT:
		if (v > TDB_EVICT_MAX)
			return fail(ext, EOPNOTSUPP, "unknown EVICT policy "
				    "(refuse, lru, lfu, ttl)", off);
		break;
	case TDB_A_MAX_BYTES:
	case TDB_A_MAX_RECORDS:
		if (v == 0)
			return fail(ext, EINVAL, "a table bound of 0 (leave "
				    "it out for none)", off);
		break;
	case TDB_A_TTL:
		if (v == 0)
			return fail(ext, EINVAL, "TTL is 0 (leave it out for "
				    "a record that does not expire)", off);
		if (v > TDB_TTL_MAX)
			return fail(ext, ERANGE, "TTL is over 10 years "
				    "(TDB_TTL_MAX ms)", off);
		break;
	case TDB_A_DEADLINE:
		if (v == 0)
			return fail(ext, EINVAL, "DEADLINE 0 (leave it out for "
				    "a record that does not expire)", off);
		break;
	case TDB_A_TXN:
		if (v == 0)
			return fail(ext, EINVAL, "transaction id 0", off);
		break;
	case TDB_A_VERSION:
	case TDB_A_IF_VERSION:
	case TDB_A_SET_VERSION:
		if (v == 0)
			return fail(ext, EINVAL, "version 0 (no record has it)",
				    off);
		break;
	case TDB_A_LIMIT:
		if (v == 0)
			return fail(ext, EINVAL, "LIMIT is 0", off);
		break;
	case TDB_A_MAX_EXTENTS:
		if (v == 0 || v > TDB_EXTENTS_MAX)
			return fail(ext, EINVAL, "MAX_EXTENTS is not within "
				    "1..32768", off);
		break;
	case TDB_A_UID:
	case TDB_A_GID:
		if (v == UINT32_MAX)
			return fail(ext, EINVAL, "UID/GID is (u32)-1", off);
		break;
	case TDB_A_MODE:
		if (v & ~(uint64_t)0777)
			return fail(ext, EINVAL, "MODE has bits outside 0777",
				    off);
		break;
	}
	return 0;
}

/*
 * RESTORE_BULK's RECORDS (tdb/proto.h): len bytes at p, whole records
 * back to back, each with its header, a key of TDB_KEY_MIN..TDB_KEY_MAX
 * bytes, a version that is not 0, and its key and value inside; the
 * count in *n.  ext->offset is the attribute's, the message names the
 * record (its index from 0).
 */
static int check_records(const unsigned char *p, uint32_t len, uint32_t *n,
			 struct tdb_proto_extack *ext, uint32_t off)
{
	uint32_t at = 0, klen, vlen;
	uint64_t version;

	*n = 0;
	while (at < len) {
		if (len - at < TDB_RESTORE_REC_HDR)
			return fail(ext, EINVAL, "RECORDS: a record's header "
				    "is cut short by the attribute's end", off);
		memcpy(&klen, p + at, 4);
		memcpy(&vlen, p + at + 4, 4);
		memcpy(&version, p + at + 8, 8);
		if (klen < TDB_KEY_MIN)
			return fail(ext, EINVAL, "RECORDS: a record's key is "
				    "empty", off);
		if (klen > TDB_KEY_MAX)
			return fail(ext, E2BIG, "RECORDS: a record's key is "
				    "longer than 4096 bytes", off);
		if (version == 0)
			return fail(ext, EINVAL, "RECORDS: a record's version "
				    "is 0 (no record has it)", off);
		at += TDB_RESTORE_REC_HDR;
		if ((uint64_t)klen + vlen > len - at)
			return fail(ext, EINVAL, "RECORDS: a record's key "
				    "and value run past the attribute's end",
				    off);
		at += klen + vlen;
		(*n)++;
	}
	return 0;
}

bool tdb_proto_record_next(const struct tdb_proto_msg *m, uint32_t *off,
			   struct tdb_proto_record *r)
{
	const unsigned char *p = m->records;

	if (*off >= m->records_len)
		return false;
	p += *off;
	memcpy(&r->klen, p, 4);
	memcpy(&r->vlen, p + 4, 4);
	memcpy(&r->version, p + 8, 8);
	memcpy(&r->deadline, p + 16, 8);
	r->key = p + TDB_RESTORE_REC_HDR;
	r->val = p + TDB_RESTORE_REC_HDR + r->klen;
	*off += TDB_RESTORE_REC_HDR + r->klen + r->vlen;
	return true;
}

void tdb_proto_record_pack(void *p, const void *key, uint32_t klen,
			   const void *val, uint32_t vlen, uint64_t version,
			   uint64_t deadline)
{
	unsigned char *q = p;

	memcpy(q, &klen, 4);
	memcpy(q + 4, &vlen, 4);
	memcpy(q + 8, &version, 8);
	memcpy(q + 16, &deadline, 8);
	memcpy(q + TDB_RESTORE_REC_HDR, key, klen);
	if (vlen)
		memcpy(q + TDB_RESTORE_REC_HDR + klen, val, vlen);
}

/* A SCAN part: a record (KEY and VALUE) and/or a CURSOR. */
static int check_scan_part(uint64_t attrs, struct tdb_proto_extack *ext)
{
	bool k = attrs & BIT(TDB_A_KEY), v = attrs & BIT(TDB_A_VALUE);

	if (k != v) {
		ext->miss_type = k ? TDB_A_VALUE : TDB_A_KEY;
		return fail(ext, EINVAL, "SCAN part has a KEY without a VALUE "
			    "or a VALUE without a KEY", 0);
	}
	if (!k && !(attrs & BIT(TDB_A_CURSOR))) {
		ext->miss_type = TDB_A_KEY;
		return fail(ext, EINVAL, "SCAN part has neither a record nor "
			    "a cursor", 0);
	}
	return 0;
}

/*
 * A SCAN request's attributes together: a range flag needs its bound,
 * and a snapshot scan is not part of a transaction.  off: the offset of
 * SCAN_FLAGS (0 when building).
 */
static int check_scan_req(uint64_t attrs, uint32_t flags,
			  struct tdb_proto_extack *ext, uint32_t off)
{
	if (!(attrs & BIT(TDB_A_SCAN_FLAGS)))
		return 0;
	if ((flags & TDB_SCAN_FROM_EXCL) && !(attrs & BIT(TDB_A_FROM)))
		return fail(ext, EINVAL, "SCAN_FLAGS has TDB_SCAN_FROM_EXCL "
			    "but the SCAN has no FROM", off);
	if ((flags & TDB_SCAN_TO_INCL) && !(attrs & BIT(TDB_A_TO)))
		return fail(ext, EINVAL, "SCAN_FLAGS has TDB_SCAN_TO_INCL "
			    "but the SCAN has no TO", off);
	if ((flags & TDB_SCAN_SNAPSHOT) && (attrs & BIT(TDB_A_TXN)))
		return fail(ext, EINVAL, "a snapshot scan (TDB_SCAN_SNAPSHOT) "
			    "takes no TXN: in a transaction a SCAN reads the "
			    "table as committed and is checked at commit",
			    off);
	return 0;
}

static int lowest_bit(uint64_t x)
{
	return __builtin_ctzll(x);
}

/* --- parsing ----------------------------------------------------------- */

struct pstate {
	const struct nlmsghdr *nlh;
	const char *base;           /* (const char *)nlh */
	struct tdb_proto_msg *m;
	struct tdb_proto_extack *ext;
	uint64_t allow;             /* attributes this message may have */
	bool strict;                /* refuse unknown types (requests) */
	bool new_name;              /* TABLE_CREATE: TABLE is a new name */
	uint64_t seen;
	uint32_t next;              /* offset after the last attribute seen */
	bool value_open;            /* the last attribute was a full VALUE
				     * fragment: a VALUE may follow it */
	int err;
	/* nest being parsed */
	const struct nest_pol *np;
	uint32_t nest_seen;
	void *nest_out;
};

static int pfail(struct pstate *s, int err, const char *msg, uint32_t off)
{
	s->err = fail(s->ext, err, msg, off);
	return MNL_CB_ERROR;
}

static uint32_t offset_of(const struct pstate *s, const void *p)
{
	return (uint32_t)((const char *)p - s->base);
}

static void store_nested(const struct nest_pol *np, void *out,
			 unsigned int type, uint64_t v)
{
	if (np == &stat_pol) {
		struct tdb_proto_stat *st = out;

		switch (type) {
		case TDB_STAT_A_RECORDS: st->records = v; break;
		case TDB_STAT_A_BYTES_USED: st->bytes_used = v; break;
		case TDB_STAT_A_BYTES_ALLOCATED: st->bytes_allocated = v; break;
		case TDB_STAT_A_BYTES_PENDING: st->bytes_pending = v; break;
		case TDB_STAT_A_EXTENTS: st->extents = (uint32_t)v; break;
		case TDB_STAT_A_MAX_EXTENTS: st->max_extents = (uint32_t)v; break;
		case TDB_STAT_A_PAGE_SIZE: st->page_size = v; break;
		case TDB_STAT_A_INDEX_NODES: st->index_nodes = v; break;
		case TDB_STAT_A_INDEX_BUCKETS: st->index_buckets = v; break;
		case TDB_STAT_A_UID: st->uid = (uint32_t)v; break;
		case TDB_STAT_A_GID: st->gid = (uint32_t)v; break;
		case TDB_STAT_A_MODE: st->mode = (uint32_t)v; break;
		case TDB_STAT_A_STATE: st->state = (uint32_t)v; break;
		case TDB_STAT_A_DEFAULT_TTL: st->default_ttl = v; break;
		case TDB_STAT_A_EXPIRING: st->expiring = v; break;
		case TDB_STAT_A_EXPIRED: st->expired = v; break;
		case TDB_STAT_A_MAX_BYTES: st->max_bytes = v; break;
		case TDB_STAT_A_MAX_RECORDS: st->max_records = v; break;
		case TDB_STAT_A_EVICT: st->evict = (uint32_t)v; break;
		case TDB_STAT_A_EVICTED: st->evicted = v; break;
		case TDB_STAT_A_TABLE_FLAGS:
			st->table_flags = (uint32_t)v;
			break;
		}
		st->present |= BIT(type);
	} else {
		struct tdb_proto_counters *c = out;

		switch (type) {
		case TDB_CTR_A_TABLES: c->tables = (uint32_t)v; break;
		case TDB_CTR_A_CLIENTS: c->clients = (uint32_t)v; break;
		case TDB_CTR_A_WATCHES: c->watches = (uint32_t)v; break;
		case TDB_CTR_A_TXNS: c->txns = (uint32_t)v; break;
		case TDB_CTR_A_REQUESTS: c->requests = v; break;
		case TDB_CTR_A_ERRORS: c->errors = v; break;
		case TDB_CTR_A_UPTIME_MS: c->uptime_ms = v; break;
		case TDB_CTR_A_ACCEPTED: c->accepted = v; break;
		case TDB_CTR_A_CLEANUPS: c->cleanups = v; break;
		case TDB_CTR_A_TXNS_ABORTED: c->txns_aborted = v; break;
		case TDB_CTR_A_WATCHES_DROPPED: c->watches_dropped = v; break;
		case TDB_CTR_A_RINGS: c->rings = (uint32_t)v; break;
		case TDB_CTR_A_RINGS_FREED: c->rings_freed = v; break;
		case TDB_CTR_A_STUCK: c->stuck = v; break;
		case TDB_CTR_A_VIOLATIONS: c->violations = v; break;
		case TDB_CTR_A_THROTTLED: c->throttled = (uint32_t)v; break;
		case TDB_CTR_A_DUMPS: c->dumps = (uint32_t)v; break;
		case TDB_CTR_A_WAL_RECORDS: c->wal_records = v; break;
		case TDB_CTR_A_WAL_LSN: c->wal_lsn = v; break;
		case TDB_CTR_A_WAL_DURABLE: c->wal_durable = v; break;
		case TDB_CTR_A_WAL_SYNCS: c->wal_syncs = v; break;
		case TDB_CTR_A_READERS_EXPIRED: c->readers_expired = v; break;
		case TDB_CTR_A_EXPIRED: c->expired = v; break;
		case TDB_CTR_A_EVICTED: c->evicted = v; break;
		case TDB_CTR_A_CHECKPOINTS: c->checkpoints = v; break;
		case TDB_CTR_A_CKPT_FAILURES: c->ckpt_failures = v; break;
		case TDB_CTR_A_CKPT_LSN: c->ckpt_lsn = v; break;
		case TDB_CTR_A_TABLES_ASIDE:
			c->tables_aside = (uint32_t)v;
			break;
		}
		c->present |= BIT(type);
	}
}

/* One attribute inside a nest.  Unknown types are skipped: nests only
 * occur in answers. */
static int nest_cb(const struct nlattr *a, void *data)
{
	struct pstate *s = data;
	const struct nest_pol *np = s->np;
	uint32_t off = offset_of(s, a);
	uint16_t raw = a->nla_type, type = raw & NLA_TYPE_MASK;
	uint16_t plen = mnl_attr_get_payload_len(a);
	uint8_t pt;

	s->next = off + MNL_ALIGN(a->nla_len);
	if (type == 0 || type > np->max)
		return MNL_CB_OK;       /* a newer owner's figure */
	if (raw & (NLA_F_NESTED | NLA_F_NET_BYTEORDER))
		return pfail(s, EINVAL, "NLA_F_NESTED or NLA_F_NET_BYTEORDER "
			     "on a figure", off);
	pt = np->pt[type];
	if (pt == PT_PAD) {
		if (plen != 0)
			return pfail(s, EINVAL, "PAD attribute is not empty",
				     off);
		return MNL_CB_OK;
	}
	if (s->nest_seen & BIT(type))
		return pfail(s, EINVAL, "duplicate attribute in a nest", off);
	if (mnl_attr_validate2(a, pt == PT_U32 ? MNL_TYPE_U32 : MNL_TYPE_U64,
			       pt == PT_U32 ? 4 : 8) < 0)
		return pfail(s, EINVAL, np->bad_len_msg, off);
	s->nest_seen |= BIT(type);
	store_nested(np, s->nest_out,  type, pt == PT_U32 ?
		     mnl_attr_get_u32(a) : mnl_attr_get_u64(a));
	return MNL_CB_OK;
}

static int parse_nest(struct pstate *s, const struct nlattr *a,
		      const struct nest_pol *np, void *out)
{
	uint32_t off = offset_of(s, a), start = off + MNL_ATTR_HDRLEN;
	uint32_t end = off + a->nla_len;
	uint32_t saved_next = s->next;

	s->np = np;
	s->nest_seen = 0;
	s->nest_out = out;
	s->next = start;
	if (mnl_attr_parse_nested(a, nest_cb, s) < 0)
		return MNL_CB_ERROR;
	/* the nested attributes fill the nest exactly */
	if (MNL_ALIGN(s->next) != MNL_ALIGN(end))
		return pfail(s, EBADMSG, "attribute length overruns its nest",
			     s->next);
	if (np->need & ~s->nest_seen) {
		s->ext->miss_type = lowest_bit(np->need & ~s->nest_seen);
		return pfail(s, EINVAL, np->miss_msg, off);
	}
	s->next = saved_next;
	return MNL_CB_OK;
}

/* Store a validated top-level attribute into the message. */
static int store(struct pstate *s, const struct nlattr *a, unsigned int type,
		 uint32_t off)
{
	struct tdb_proto_msg *m = s->m;
	const void *p = mnl_attr_get_payload(a);
	uint16_t plen = mnl_attr_get_payload_len(a);
	int err;

	switch (type) {
	case TDB_A_TABLE:
		m->table = p;
		m->table_len = plen - 1;
		break;
	case TDB_A_KEY:
		m->key = p;
		m->key_len = plen;
		break;
	case TDB_A_PREFIX:
		m->prefix = p;
		m->prefix_len = plen;
		break;
	case TDB_A_CURSOR:
		m->cursor = p;
		m->cursor_len = plen;
		break;
	case TDB_A_FROM:
		m->from = p;
		m->from_len = plen;
		break;
	case TDB_A_TO:
		m->to = p;
		m->to_len = plen;
		break;
	case TDB_A_HASHES:
		if (plen % 8) {
			s->err = fail(s->ext, EINVAL, "HASHES is not a whole "
				      "number of u64s", off);
			return MNL_CB_ERROR;
		}
		m->hashes = p;
		m->nhashes = plen / 8;
		break;
	case TDB_A_RECORDS:
		err = check_records(p, plen, &m->nrecords, s->ext, off);
		if (err) {
			s->err = err;
			return MNL_CB_ERROR;
		}
		m->records = p;
		m->records_len = plen;
		break;
	case TDB_A_FLAGS:
	case TDB_A_LIMIT:
	case TDB_A_MAX_EXTENTS:
	case TDB_A_UID:
	case TDB_A_GID:
	case TDB_A_MODE:
	case TDB_A_SCAN_FLAGS:
	case TDB_A_EXPIRE_FLAGS:
	case TDB_A_REASON:
	case TDB_A_EVICT:
	case TDB_A_TABLE_FLAGS: {
		uint32_t v = mnl_attr_get_u32(a);

		err = check_int(type, v, s->ext, off);
		if (err) {
			s->err = err;
			return MNL_CB_ERROR;
		}
		if (type == TDB_A_FLAGS) m->flags = v;
		else if (type == TDB_A_LIMIT) m->limit = v;
		else if (type == TDB_A_MAX_EXTENTS) m->max_extents = v;
		else if (type == TDB_A_UID) m->uid = v;
		else if (type == TDB_A_GID) m->gid = v;
		else if (type == TDB_A_SCAN_FLAGS) m->scan_flags = v;
		else if (type == TDB_A_EXPIRE_FLAGS) m->expire_flags = v;
		else if (type == TDB_A_REASON) m->reason = v;
		else if (type == TDB_A_EVICT) m->evict = v;
		else if (type == TDB_A_TABLE_FLAGS) m->table_flags = v;
		else m->mode = v;
		break;
	}
	case TDB_A_TXN:
	case TDB_A_VERSION:
	case TDB_A_IF_VERSION:
	case TDB_A_DELTA:
	case TDB_A_INT:
	case TDB_A_SET_VERSION:
	case TDB_A_TTL:
	case TDB_A_DEADLINE:
	case TDB_A_MAX_BYTES:
	case TDB_A_MAX_RECORDS: {
		uint64_t v = mnl_attr_get_u64(a);

		err = check_int(type, v, s->ext, off);
		if (err) {
			s->err = err;
			return MNL_CB_ERROR;
		}
		*u64_field(m, type) = v;
		break;
	}
	case TDB_A_STAT:
		return parse_nest(s, a, &stat_pol, &m->stat);
	case TDB_A_COUNTERS:
		return parse_nest(s, a, &ctr_pol, &m->counters);
	}
	return MNL_CB_OK;
}

/* One top-level attribute of a family message. */
static int attr_cb(const struct nlattr *a, void *data)
{
	struct pstate *s = data;
	struct tdb_proto_msg *m = s->m;
	uint32_t off = offset_of(s, a);
	uint16_t raw = a->nla_type, type = raw & NLA_TYPE_MASK;
	uint16_t plen = mnl_attr_get_payload_len(a);
	bool cont = s->value_open && type == TDB_A_VALUE;
	const struct attr_pol *p;
	int err;

	/* an attribute that fits: mnl_attr_ok() checked nla_len */
	s->next = off + MNL_ALIGN(a->nla_len);
	s->value_open = false;
	if (type == TDB_A_UNSPEC || type > TDB_A_MAX) {
		if (!s->strict)
			return MNL_CB_OK;       /* newer owner: skip */
		return pfail(s, EOPNOTSUPP, "unknown attribute type", off);
	}
	if (raw & NLA_F_NET_BYTEORDER)
		return pfail(s, EINVAL, "NLA_F_NET_BYTEORDER is never used",
			     off);
	p = &attr_pol[type];
	if (!(raw & NLA_F_NESTED) != (p->pt != PT_NEST))
		return pfail(s, EINVAL, p->pt == PT_NEST ?
			     "nested attribute without NLA_F_NESTED" :
			     "NLA_F_NESTED on an attribute that is not nested",
			     off);
	if (p->pt == PT_PAD) {
		if (plen != 0)
			return pfail(s, EINVAL, p->long_msg, off);
		return MNL_CB_OK;
	}
	if (!(s->allow & BIT(type)))
		return pfail(s, EINVAL, "attribute not valid in this message",
			     off);
	if ((s->seen & BIT(type)) && !cont)
		return pfail(s, EINVAL, type == TDB_A_VALUE ?
			     "VALUE fragment after a short fragment or "
			     "another attribute" : "duplicate attribute", off);

	/*
	 * Type and length.  mnl_attr_validate2() wants an exact length
	 * (fixed-size types); for the others mnl_attr_validate() checks the
	 * type (NUL, nest header) and we check the bounds, first, so the
	 * errno says which bound.
	 */
	switch (p->pt) {
	case PT_U32:
	case PT_U64:
		if (mnl_attr_validate2(a, p->mnl, p->max) < 0)
			return pfail(s, EINVAL, p->short_msg, off);
		break;
	case PT_NEST:
		if (mnl_attr_validate(a, MNL_TYPE_NESTED) < 0)
			return pfail(s, EINVAL, p->short_msg, off);
		break;
	case PT_STR: {
		const char *str = mnl_attr_get_payload(a);
		size_t n;

		if (plen == 0)
			return pfail(s, EINVAL, p->short_msg, off);
		if (plen > p->max + 1)
			return pfail(s, p->err_long, p->long_msg, off);
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return pfail(s, EINVAL, "table name is not "
				     "NUL-terminated", off);
		n = str_len(str, plen);
		if (n != (size_t)plen - 1u)
			return pfail(s, EINVAL, "table name has a NUL inside",
				     off);
		err = check_len(type, n, s->ext, off);
		if (!err)
			err = s->new_name ?
			      check_new_name(str, n, s->ext, off) :
			      check_name_chars(str, n, s->ext, off);
		if (err) {
			s->err = err;
			return MNL_CB_ERROR;
		}
		break;
	}
	case PT_BIN:        /* any bytes: only the bounds to check */
		err = check_len(type, plen, s->ext, off);
		if (err) {
			s->err = err;
			return MNL_CB_ERROR;
		}
		break;
	}

	if (type == TDB_A_VALUE) {
		if (!cont) {
			m->value = mnl_attr_get_payload(a);
			m->value_len = plen;
			m->value_frags = 1;
		} else {
			if (plen == 0)
				return pfail(s, EINVAL, "empty VALUE fragment "
					     "after a full one", off);
			if (m->value_len + plen > TDB_VALUE_MAX)
				return pfail(s, E2BIG, "value is longer than "
					     "1 MiB", off);
			m->value_len += plen;
			m->value_frags++;
		}
		s->value_open = plen == TDB_VALUE_FRAG;
	}
	if (!(s->seen & BIT(type)))
		m->attr_off[type] = off;
	s->seen |= BIT(type);
	return store(s, a, type, off);
}

/* After mnl_attr_parse: did the attributes fill [from, end) exactly?
 * mnl_attr_parse stops quietly at the first attribute that does not fit
 * (nla_len under 4 or past the end), so this is where truncated and
 * overlong attributes are caught.  Both offsets are multiples of 4, so
 * what is left, if anything, is at least an attribute header. */
static int check_filled(struct pstate *s, uint32_t end)
{
	if (s->next == end)
		return 0;
	return fail(s->ext, EBADMSG, "attribute length overruns the message",
		    s->next);
}

static int parse_family(struct pstate *s, enum tdb_proto_dir dir)
{
	const struct nlmsghdr *nlh = s->nlh;
	struct tdb_proto_msg *m = s->m;
	const struct genlmsghdr *g;
	const struct cmd_pol *cp;
	uint16_t f = nlh->nlmsg_flags;
	uint64_t need;
	int rc;

	if (nlh->nlmsg_len < GENL_LEN)
		return fail(s->ext, EBADMSG, "message has no genlmsghdr", 0);
	g = mnl_nlmsg_get_payload(nlh);
	m->cmd = g->cmd;
	m->version = g->version;
	if (g->version != TDB_PROTO_VERSION)
		return fail(s->ext, EPROTONOSUPPORT, "unsupported protocol "
			    "version (genlmsghdr.version)", 0);
	cp = get_cmd(g->cmd);
	if (!cp)
		return fail(s->ext, EOPNOTSUPP, "unknown command", 0);
	if (g->reserved != 0)
		return fail(s->ext, EINVAL, "genlmsghdr.reserved is not 0", 0);

	if (dir == TDB_PROTO_REQUEST) {
		uint16_t allowed = NLM_F_REQUEST | NLM_F_ACK |
				   (cp->dump ? NLM_F_DUMP : 0);

		if (!(f & NLM_F_REQUEST))
			return fail(s->ext, EINVAL, "request without "
				    "NLM_F_REQUEST", 0);
		if (cp->dump && (f & NLM_F_DUMP) != NLM_F_DUMP)
			return fail(s->ext, EINVAL, "dump command without "
				    "NLM_F_DUMP", 0);
		if (f & ~allowed)
			return fail(s->ext, EINVAL, "nlmsg_flags not valid for "
				    "this request", 0);
		s->allow = cp->req_allow;
		need = cp->req_need;
		s->strict = true;
		s->new_name = g->cmd == TDB_CMD_TABLE_CREATE;
	} else {
		if (f & NLM_F_REQUEST)
			return fail(s->ext, EINVAL, "a request where an answer "
				    "was expected", 0);
		if (cp->ans == ANS_NONE)
			return fail(s->ext, EINVAL, "this command is answered "
				    "by NLMSG_ERROR only", 0);
		if (f != (cp->ans == ANS_PART ? NLM_F_MULTI : 0))
			return fail(s->ext, EINVAL, cp->ans == ANS_PART ?
				    "dump part without NLM_F_MULTI or with "
				    "other flags" :
				    "nlmsg_flags not valid for this answer", 0);
		s->allow = cp->ans_allow;
		need = cp->ans_need;
		s->strict = false;
	}

	s->next = GENL_LEN;
	rc = mnl_attr_parse(nlh, GENL_HDRLEN, attr_cb, s);
	if (rc < 0)
		return s->err;
	rc = check_filled(s, nlh->nlmsg_len);
	if (rc)
		return rc;
	m->attrs = s->seen;
	if (need & ~s->seen) {
		int t = lowest_bit(need & ~s->seen);

		s->ext->miss_type = t;
		return fail(s->ext, EINVAL, attr_pol[t].miss_msg, 0);
	}
	if (dir == TDB_PROTO_ANSWER && cp == &cmd_pol[TDB_CMD_SCAN])
		return check_scan_part(s->seen, s->ext);
	if (cp == &cmd_pol[TDB_CMD_SCAN])
		return check_scan_req(s->seen, m->scan_flags, s->ext,
				      m->attr_off[TDB_A_SCAN_FLAGS]);
	return 0;
}

/* NLMSGERR_ATTR_* TLVs after an NLMSG_ERROR or NLMSG_DONE. */
static int tlv_cb(const struct nlattr *a, void *data)
{
	struct pstate *s = data;
	struct tdb_proto_msg *m = s->m;
	uint32_t off = offset_of(s, a);
	uint16_t type = mnl_attr_get_type(a);

	s->next = off + MNL_ALIGN(a->nla_len);
	if (type > 31)
		return MNL_CB_OK;
	if (s->seen & BIT(type))
		return pfail(s, EINVAL, "duplicate extack attribute", off);
	s->seen |= BIT(type);
	switch (type) {
	case NLMSGERR_ATTR_MSG:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return pfail(s, EINVAL, "NLMSGERR_ATTR_MSG is not a "
				     "NUL-terminated string", off);
		m->ext.msg = mnl_attr_get_str(a);
		break;
	case NLMSGERR_ATTR_OFFS:
	case NLMSGERR_ATTR_MISS_TYPE:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return pfail(s, EINVAL, "extack attribute is not a u32",
				     off);
		if (type == NLMSGERR_ATTR_OFFS)
			m->ext.offset = mnl_attr_get_u32(a);
		else
			m->ext.miss_type = mnl_attr_get_u32(a);
		break;
	case NLMSGERR_ATTR_COOKIE:
		if (mnl_attr_get_payload_len(a) > TDB_PROTO_COOKIE_MAX)
			return pfail(s, EINVAL, "NLMSGERR_ATTR_COOKIE is longer "
				     "than 20 bytes", off);
		m->ext.cookie_len = mnl_attr_get_payload_len(a);
		memcpy(m->ext.cookie, mnl_attr_get_payload(a),
		       m->ext.cookie_len);
		break;
	}
	return MNL_CB_OK;
}

static int parse_tlvs(struct pstate *s, uint32_t from)
{
	s->next = from;
	s->seen = 0;
	if (mnl_attr_parse(s->nlh, from - NLMSG_HDRLEN, tlv_cb, s) < 0)
		return s->err;
	return check_filled(s, s->nlh->nlmsg_len);
}

static int check_errno(struct pstate *s, int error)
{
	if (error > 0 || error < -MAX_ERRNO)
		return fail(s->ext, EINVAL, "error is not 0 or a negative "
			    "errno", 0);
	return 0;
}

static int parse_error(struct pstate *s)
{
	const struct nlmsghdr *nlh = s->nlh;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	struct tdb_proto_msg *m = s->m;
	uint16_t f = nlh->nlmsg_flags;
	uint64_t end = NLMSG_HDRLEN + sizeof(*e);
	int rc;

	if (nlh->nlmsg_len < end)
		return fail(s->ext, EBADMSG, "NLMSG_ERROR shorter than "
			    "struct nlmsgerr", 0);
	if (f & ~(NLM_F_CAPPED | NLM_F_ACK_TLVS))
		return fail(s->ext, EINVAL, "nlmsg_flags not valid for "
			    "NLMSG_ERROR", 0);
	rc = check_errno(s, e->error);
	if (rc)
		return rc;
	m->error = e->error;
	m->orig = &e->msg;
	if (!(f & NLM_F_CAPPED)) {
		/* the whole request is echoed */
		if (e->msg.nlmsg_len < NLMSG_HDRLEN)
			return fail(s->ext, EBADMSG, "echoed request is "
				    "shorter than its header", 0);
		end += NLMSG_ALIGN((uint64_t)e->msg.nlmsg_len) - NLMSG_HDRLEN;
		if (end > nlh->nlmsg_len)
			return fail(s->ext, EBADMSG, "echoed request overruns "
				    "NLMSG_ERROR", 0);
	}
	if (f & NLM_F_ACK_TLVS)
		return parse_tlvs(s, (uint32_t)end);
	if (end != nlh->nlmsg_len)
		return fail(s->ext, EBADMSG, "bytes after nlmsgerr without "
			    "NLM_F_ACK_TLVS", (uint32_t)end);
	return 0;
}

static int parse_done(struct pstate *s)
{
	const struct nlmsghdr *nlh = s->nlh;
	uint16_t f = nlh->nlmsg_flags;
	uint32_t end = NLMSG_HDRLEN + sizeof(int);
	int error, rc;

	if (nlh->nlmsg_len < end)
		return fail(s->ext, EBADMSG, "NLMSG_DONE without its int", 0);
	if (!(f & NLM_F_MULTI) || (f & ~(NLM_F_MULTI | NLM_F_ACK_TLVS)))
		return fail(s->ext, EINVAL, "nlmsg_flags not valid for "
			    "NLMSG_DONE", 0);
	memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(error));
	rc = check_errno(s, error);
	if (rc)
		return rc;
	s->m->error = error;
	if (f & NLM_F_ACK_TLVS)
		return parse_tlvs(s, end);
	if (end != nlh->nlmsg_len)
		return fail(s->ext, EBADMSG, "bytes after NLMSG_DONE's int "
			    "without NLM_F_ACK_TLVS", end);
	return 0;
}

int tdb_proto_parse_family(const void *buf, size_t len,
			   enum tdb_proto_dir dir, uint16_t family,
			   struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext)
{
	struct tdb_proto_extack dummy;
	const struct nlmsghdr *nlh = buf;
	struct pstate s;

	if (!ext)
		ext = &dummy;
	memset(ext, 0, sizeof(*ext));
	memset(m, 0, sizeof(*m));
	if ((uintptr_t)buf & (NLMSG_ALIGNTO - 1))
		return fail(ext, EINVAL, "message is not 4-byte aligned", 0);
	if (len < NLMSG_HDRLEN)
		return fail(ext, EBADMSG, "message shorter than struct "
			    "nlmsghdr", 0);
	m->nlh = nlh;
	m->type = nlh->nlmsg_type;
	m->nlflags = nlh->nlmsg_flags;
	m->seq = nlh->nlmsg_seq;
	m->pid = nlh->nlmsg_pid;
	if (nlh->nlmsg_len < NLMSG_HDRLEN || nlh->nlmsg_len > len) {
		m->nlh = NULL;      /* no trustworthy header to answer */
		return fail(ext, EBADMSG, "nlmsg_len is outside the bytes "
			    "received", 0);
	}
	if (nlh->nlmsg_len & (NLMSG_ALIGNTO - 1))
		return fail(ext, EBADMSG, "nlmsg_len is not a multiple of 4",
			    0);
	if (nlh->nlmsg_len > TDB_PROTO_MSG_MAX)
		return fail(ext, EMSGSIZE, "message longer than "
			    "TDB_PROTO_MSG_MAX", 0);

	memset(&s, 0, sizeof(s));
	s.nlh = nlh;
	s.base = buf;
	s.m = m;
	s.ext = ext;
	if (nlh->nlmsg_type == family)
		return parse_family(&s, dir);
	if (dir == TDB_PROTO_ANSWER && nlh->nlmsg_type == NLMSG_ERROR)
		return parse_error(&s);
	if (dir == TDB_PROTO_ANSWER && nlh->nlmsg_type == NLMSG_DONE)
		return parse_done(&s);
	return fail(ext, EOPNOTSUPP, dir == TDB_PROTO_REQUEST ?
		    "nlmsg_type is not the tdb family" :
		    "nlmsg_type is not the tdb family, NLMSG_ERROR or "
		    "NLMSG_DONE", 0);
}

int tdb_proto_parse(const void *buf, size_t len, enum tdb_proto_dir dir,
		    struct tdb_proto_msg *m, struct tdb_proto_extack *ext)
{
	return tdb_proto_parse_family(buf, len, dir, TDB_PROTO_FAMILY, m, ext);
}

void tdb_proto_value_copy(const struct tdb_proto_msg *m, void *dst)
{
	const struct nlattr *a;
	unsigned char *out = dst;
	uint32_t i;

	if (m->value_frags <= 1) {
		if (m->value_len)
			memcpy(dst, m->value, m->value_len);
		return;
	}
	/* fragments are consecutive attributes (the parser checked) */
	a = (const struct nlattr *)((const char *)m->value - MNL_ATTR_HDRLEN);
	for (i = 0; i < m->value_frags; i++, a = mnl_attr_next(a)) {
		uint16_t n = mnl_attr_get_payload_len(a);

		memcpy(out, mnl_attr_get_payload(a), n);
		out += n;
	}
}

/* --- building ---------------------------------------------------------- */

static uint32_t attr_size(size_t payload)
{
	return MNL_ATTR_HDRLEN + MNL_ALIGN(payload);
}

static uint32_t value_size(uint32_t len)
{
	uint32_t full = len / TDB_VALUE_FRAG, rest = len % TDB_VALUE_FRAG;
	uint32_t size = full * attr_size(TDB_VALUE_FRAG);

	if (rest || !full)
		size += attr_size(rest);
	return size;
}

static long nest_size(const struct nest_pol *np, uint32_t present,
		      struct tdb_proto_extack *ext)
{
	uint32_t size = MNL_ATTR_HDRLEN, t;
	uint32_t known = 0;

	for (t = 1; t <= np->max; t++)
		if (np->pt[t] == PT_U32 || np->pt[t] == PT_U64)
			known |= BIT(t);
	if (present & ~known)
		return fail(ext, EINVAL, "unknown or PAD figure in a nest", 0);
	if (np->need & ~present) {
		ext->miss_type = lowest_bit(np->need & ~present);
		return fail(ext, EINVAL, np->miss_msg, 0);
	}
	for (t = 1; t <= np->max; t++)
		if (present & BIT(t))
			size += attr_size(np->pt[t] == PT_U32 ? 4 : 8);
	return size;
}

/* Validate *m for dir and return its size. */
static long msg_size(enum tdb_proto_dir dir, const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	const struct cmd_pol *cp = get_cmd(m->cmd);
	uint64_t allow, need;
	uint32_t t;
	uint64_t size = GENL_LEN;
	long n;
	int err;

	if (!cp)
		return fail(ext, EOPNOTSUPP, "unknown command", 0);
	if (dir == TDB_PROTO_REQUEST) {
		allow = cp->req_allow;
		need = cp->req_need;
	} else if (dir == TDB_PROTO_ANSWER && cp->ans != ANS_NONE) {
		allow = cp->ans_allow;
		need = cp->ans_need;
	} else {
		return fail(ext, EINVAL, dir == TDB_PROTO_ANSWER ?
			    "this command is answered by NLMSG_ERROR only" :
			    "bad direction", 0);
	}
	if (m->attrs & ~allow)
		return fail(ext, EINVAL, "attribute not valid in this message",
			    0);
	if (need & ~m->attrs) {
		t = lowest_bit(need & ~m->attrs);
		ext->miss_type = t;
		return fail(ext, EINVAL, attr_pol[t].miss_msg, 0);
	}
	if (dir == TDB_PROTO_ANSWER && cp == &cmd_pol[TDB_CMD_SCAN]) {
		err = check_scan_part(m->attrs, ext);
		if (err)
			return err;
	}
	if (dir == TDB_PROTO_REQUEST && cp == &cmd_pol[TDB_CMD_SCAN]) {
		err = check_scan_req(m->attrs, m->scan_flags, ext, 0);
		if (err)
			return err;
	}
	for (t = 1; t <= TDB_A_MAX; t++) {
		if (!(m->attrs & BIT(t)))
			continue;
		switch (t) {
		case TDB_A_TABLE: {
			size_t len;

			if (!m->table)
				return fail(ext, EINVAL, "table name is NULL",
					    0);
			len = str_len(m->table, TDB_NAME_MAX + 1);
			err = check_len(t, len, ext, 0);
			if (err)
				return err;
			if (dir == TDB_PROTO_REQUEST &&
			    m->cmd == TDB_CMD_TABLE_CREATE)
				err = check_new_name(m->table, len, ext, 0);
			else
				err = check_name_chars(m->table, len, ext, 0);
			if (err)
				return err;
			size += attr_size(len + 1);
			break;
		}
		case TDB_A_KEY:
			err = check_len(t, m->key_len, ext, 0);
			if (err)
				return err;
			if (!m->key)
				return fail(ext, EINVAL, "key is NULL", 0);
			size += attr_size(m->key_len);
			break;
		case TDB_A_HASHES:
			if (!m->nhashes || m->nhashes > TDB_TOUCH_MAX ||
			    !m->hashes)
				return fail(ext, EINVAL, "HASHES: 1.."
					    "TDB_TOUCH_MAX hashes", 0);
			size += attr_size(8 * m->nhashes);
			break;
		case TDB_A_RECORDS: {
			uint32_t nrec;

			err = check_len(t, m->records_len, ext, 0);
			if (err)
				return err;
			if (!m->records)
				return fail(ext, EINVAL, "RECORDS is NULL", 0);
			err = check_records(m->records, m->records_len, &nrec,
					    ext, 0);
			if (err)
				return err;
			size += attr_size(m->records_len);
			break;
		}
		case TDB_A_PREFIX:
		case TDB_A_CURSOR:
		case TDB_A_FROM:
		case TDB_A_TO: {
			uint32_t len = t == TDB_A_PREFIX ? m->prefix_len :
				       t == TDB_A_CURSOR ? m->cursor_len :
				       t == TDB_A_FROM ? m->from_len :
				       m->to_len;
			const void *p = t == TDB_A_PREFIX ? m->prefix :
					t == TDB_A_CURSOR ? m->cursor :
					t == TDB_A_FROM ? m->from : m->to;

			err = check_len(t, len, ext, 0);
			if (err)
				return err;
			if (len && !p)
				return fail(ext, EINVAL, t == TDB_A_FROM ?
					    "FROM is NULL" : t == TDB_A_TO ?
					    "TO is NULL" :
					    "prefix or cursor is NULL", 0);
			size += attr_size(len);
			break;
		}
		case TDB_A_VALUE:
			if (m->value_len > TDB_VALUE_MAX)
				return fail(ext, E2BIG, "value is longer than "
					    "1 MiB", 0);
			if (m->value_len && !m->value)
				return fail(ext, EINVAL, "value is NULL", 0);
			size += value_size(m->value_len);
			break;
		case TDB_A_TXN:
		case TDB_A_VERSION:
		case TDB_A_IF_VERSION:
		case TDB_A_DELTA:
		case TDB_A_INT:
		case TDB_A_SET_VERSION:
		case TDB_A_TTL:
		case TDB_A_DEADLINE:
		case TDB_A_MAX_BYTES:
		case TDB_A_MAX_RECORDS:
			err = check_int(t, *u64_field((struct tdb_proto_msg *)m,
						      t), ext, 0);
			if (err)
				return err;
			size += attr_size(8);
			break;
		case TDB_A_FLAGS:
		case TDB_A_LIMIT:
		case TDB_A_MAX_EXTENTS:
		case TDB_A_UID:
		case TDB_A_GID:
		case TDB_A_MODE:
		case TDB_A_SCAN_FLAGS:
		case TDB_A_EXPIRE_FLAGS:
		case TDB_A_REASON:
		case TDB_A_EVICT:
		case TDB_A_TABLE_FLAGS: {
			uint32_t v = t == TDB_A_FLAGS ? m->flags :
				     t == TDB_A_LIMIT ? m->limit :
				     t == TDB_A_MAX_EXTENTS ? m->max_extents :
				     t == TDB_A_UID ? m->uid :
				     t == TDB_A_GID ? m->gid :
				     t == TDB_A_SCAN_FLAGS ? m->scan_flags :
				     t == TDB_A_EXPIRE_FLAGS ? m->expire_flags :
				     t == TDB_A_REASON ? m->reason :
				     t == TDB_A_EVICT ? m->evict :
				     t == TDB_A_TABLE_FLAGS ? m->table_flags :
				     m->mode;

			err = check_int(t, v, ext, 0);
			if (err)
				return err;
			size += attr_size(4);
			break;
		}
		case TDB_A_STAT:
		case TDB_A_COUNTERS:
			n = t == TDB_A_STAT ?
			    nest_size(&stat_pol, m->stat.present, ext) :
			    nest_size(&ctr_pol, m->counters.present, ext);
			if (n < 0)
				return n;
			size += (uint64_t)n;
			break;
		}
	}
	/* the largest valid message is well under TDB_PROTO_MSG_MAX */
	return (long)size;
}

long tdb_proto_size(enum tdb_proto_dir dir, const struct tdb_proto_msg *m,
		    struct tdb_proto_extack *ext)
{
	struct tdb_proto_extack dummy;

	if (!ext)
		ext = &dummy;
	memset(ext, 0, sizeof(*ext));
	return msg_size(dir, m, ext);
}

/*
 * mnl_attr_put_check() and zero padding: libmnl 1.0.4 leaves the pad
 * bytes as they were, and a buffer (a ring) may still hold an older
 * message there.  Every byte a builder emits is defined.
 */
static bool put_bytes(struct nlmsghdr *nlh, size_t size, uint16_t type,
		      size_t len, const void *data)
{
	struct nlattr *a = mnl_nlmsg_get_payload_tail(nlh);

	if (!mnl_attr_put_check(nlh, size, type, len, data))
		return false;
	memset((char *)mnl_attr_get_payload(a) + len, 0,
	       MNL_ALIGN(len) - len);
	return true;
}

static bool put_nest(struct nlmsghdr *nlh, size_t size, uint16_t type,
		     const struct nest_pol *np, const void *in)
{
	const struct tdb_proto_stat *st = in;
	const struct tdb_proto_counters *c = in;
	uint32_t present = np == &stat_pol ? st->present : c->present;
	struct nlattr *nest;
	uint32_t t;

	nest = mnl_attr_nest_start_check(nlh, size, type);
	if (!nest)
		return false;
	for (t = 1; t <= np->max; t++) {
		uint64_t v = 0;
		bool ok;

		if (!(present & BIT(t)))
			continue;
		if (np == &stat_pol) {
			switch (t) {
			case TDB_STAT_A_RECORDS: v = st->records; break;
			case TDB_STAT_A_BYTES_USED: v = st->bytes_used; break;
			case TDB_STAT_A_BYTES_ALLOCATED: v = st->bytes_allocated; break;
			case TDB_STAT_A_BYTES_PENDING: v = st->bytes_pending; break;
			case TDB_STAT_A_EXTENTS: v = st->extents; break;
			case TDB_STAT_A_MAX_EXTENTS: v = st->max_extents; break;
			case TDB_STAT_A_PAGE_SIZE: v = st->page_size; break;
			case TDB_STAT_A_INDEX_NODES: v = st->index_nodes; break;
			case TDB_STAT_A_INDEX_BUCKETS: v = st->index_buckets; break;
			case TDB_STAT_A_UID: v = st->uid; break;
			case TDB_STAT_A_GID: v = st->gid; break;
			case TDB_STAT_A_MODE: v = st->mode; break;
			case TDB_STAT_A_STATE: v = st->state; break;
			case TDB_STAT_A_DEFAULT_TTL: v = st->default_ttl; break;
			case TDB_STAT_A_EXPIRING: v = st->expiring; break;
			case TDB_STAT_A_EXPIRED: v = st->expired; break;
			case TDB_STAT_A_MAX_BYTES: v = st->max_bytes; break;
			case TDB_STAT_A_MAX_RECORDS: v = st->max_records; break;
			case TDB_STAT_A_EVICT: v = st->evict; break;
			case TDB_STAT_A_EVICTED: v = st->evicted; break;
			case TDB_STAT_A_TABLE_FLAGS: v = st->table_flags; break;
			}
		} else {
			switch (t) {
			case TDB_CTR_A_TABLES: v = c->tables; break;
			case TDB_CTR_A_CLIENTS: v = c->clients; break;
			case TDB_CTR_A_WATCHES: v = c->watches; break;
			case TDB_CTR_A_TXNS: v = c->txns; break;
			case TDB_CTR_A_REQUESTS: v = c->requests; break;
			case TDB_CTR_A_ERRORS: v = c->errors; break;
			case TDB_CTR_A_UPTIME_MS: v = c->uptime_ms; break;
			case TDB_CTR_A_ACCEPTED: v = c->accepted; break;
			case TDB_CTR_A_CLEANUPS: v = c->cleanups; break;
			case TDB_CTR_A_TXNS_ABORTED: v = c->txns_aborted; break;
			case TDB_CTR_A_WATCHES_DROPPED: v = c->watches_dropped; break;
			case TDB_CTR_A_RINGS: v = c->rings; break;
			case TDB_CTR_A_RINGS_FREED: v = c->rings_freed; break;
			case TDB_CTR_A_STUCK: v = c->stuck; break;
			case TDB_CTR_A_VIOLATIONS: v = c->violations; break;
			case TDB_CTR_A_THROTTLED: v = c->throttled; break;
			case TDB_CTR_A_DUMPS: v = c->dumps; break;
			case TDB_CTR_A_WAL_RECORDS: v = c->wal_records; break;
			case TDB_CTR_A_WAL_LSN: v = c->wal_lsn; break;
			case TDB_CTR_A_WAL_DURABLE: v = c->wal_durable; break;
			case TDB_CTR_A_WAL_SYNCS: v = c->wal_syncs; break;
			case TDB_CTR_A_READERS_EXPIRED: v = c->readers_expired; break;
			case TDB_CTR_A_EXPIRED: v = c->expired; break;
			case TDB_CTR_A_EVICTED: v = c->evicted; break;
			case TDB_CTR_A_CHECKPOINTS: v = c->checkpoints; break;
			case TDB_CTR_A_CKPT_FAILURES: v = c->ckpt_failures; break;
			case TDB_CTR_A_CKPT_LSN: v = c->ckpt_lsn; break;
			case TDB_CTR_A_TABLES_ASIDE: v = c->tables_aside; break;
			}
		}
		ok = np->pt[t] == PT_U32 ?
		     mnl_attr_put_u32_check(nlh, size, t, (uint32_t)v) :
		     mnl_attr_put_u64_check(nlh, size, t, v);
		if (!ok)
			return false;
	}
	mnl_attr_nest_end(nlh, nest);
	return true;
}

static bool put_value(struct nlmsghdr *nlh, size_t size, const void *val,
		      uint32_t len)
{
	const unsigned char *p = val;

	do {
		uint32_t n = len > TDB_VALUE_FRAG ? TDB_VALUE_FRAG : len;

		if (!put_bytes(nlh, size, TDB_A_VALUE, n, p))
			return false;
		p += n;
		len -= n;
	} while (len);
	return true;
}

static bool put_attrs(struct nlmsghdr *nlh, size_t size,
		      const struct tdb_proto_msg *m)
{
	uint32_t t;
	bool ok = true;

	for (t = 1; ok && t <= TDB_A_MAX; t++) {
		if (!(m->attrs & BIT(t)))
			continue;
		switch (t) {
		case TDB_A_TABLE:
			/* msg_size() checked it: at most TDB_NAME_MAX */
			ok = put_bytes(nlh, size, t,
				       str_len(m->table, TDB_NAME_MAX) + 1,
				       m->table);
			break;
		case TDB_A_KEY:
			ok = put_bytes(nlh, size, t, m->key_len, m->key);
			break;
		case TDB_A_VALUE:
			ok = put_value(nlh, size, m->value, m->value_len);
			break;
		case TDB_A_PREFIX:
			ok = put_bytes(nlh, size, t, m->prefix_len,
				       m->prefix);
			break;
		case TDB_A_CURSOR:
			ok = put_bytes(nlh, size, t, m->cursor_len,
				       m->cursor);
			break;
		case TDB_A_HASHES:
			ok = put_bytes(nlh, size, t, 8 * m->nhashes,
				       m->hashes);
			break;
		case TDB_A_FROM:
			ok = put_bytes(nlh, size, t, m->from_len, m->from);
			break;
		case TDB_A_TO:
			ok = put_bytes(nlh, size, t, m->to_len, m->to);
			break;
		case TDB_A_RECORDS:
			ok = put_bytes(nlh, size, t, m->records_len,
				       m->records);
			break;
		case TDB_A_TABLE_FLAGS:
			ok = mnl_attr_put_u32_check(nlh, size, t,
						    m->table_flags);
			break;
		case TDB_A_TXN:
		case TDB_A_VERSION:
		case TDB_A_IF_VERSION:
		case TDB_A_DELTA:
		case TDB_A_INT:
		case TDB_A_SET_VERSION:
		case TDB_A_TTL:
		case TDB_A_DEADLINE:
		case TDB_A_MAX_BYTES:
		case TDB_A_MAX_RECORDS:
			ok = mnl_attr_put_u64_check(nlh, size, t,
				*u64_field((struct tdb_proto_msg *)m, t));
			break;
		case TDB_A_FLAGS:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->flags);
			break;
		case TDB_A_LIMIT:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->limit);
			break;
		case TDB_A_MAX_EXTENTS:
			ok = mnl_attr_put_u32_check(nlh, size, t,
						    m->max_extents);
			break;
		case TDB_A_UID:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->uid);
			break;
		case TDB_A_GID:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->gid);
			break;
		case TDB_A_MODE:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->mode);
			break;
		case TDB_A_SCAN_FLAGS:
			ok = mnl_attr_put_u32_check(nlh, size, t,
						    m->scan_flags);
			break;
		case TDB_A_EXPIRE_FLAGS:
			ok = mnl_attr_put_u32_check(nlh, size, t,
						    m->expire_flags);
			break;
		case TDB_A_REASON:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->reason);
			break;
		case TDB_A_EVICT:
			ok = mnl_attr_put_u32_check(nlh, size, t, m->evict);
			break;
		case TDB_A_STAT:
			ok = put_nest(nlh, size, t, &stat_pol, &m->stat);
			break;
		case TDB_A_COUNTERS:
			ok = put_nest(nlh, size, t, &ctr_pol, &m->counters);
			break;
		}
	}
	return ok;
}

long tdb_proto_build(void *buf, size_t size, enum tdb_proto_dir dir,
		     const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	struct tdb_proto_extack dummy;
	const struct cmd_pol *cp;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	long need;

	if (!ext)
		ext = &dummy;
	memset(ext, 0, sizeof(*ext));
	need = msg_size(dir, m, ext);
	if (need < 0)
		return need;
	if ((uintptr_t)buf & (NLMSG_ALIGNTO - 1))
		return fail(ext, EINVAL, "buffer is not 4-byte aligned", 0);
	if ((size_t)need > size)
		return fail(ext, EMSGSIZE, "buffer too small for the message",
			    0);
	cp = get_cmd(m->cmd);

	/* From here on the message fits: the _check puts cannot fail. */
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = TDB_PROTO_FAMILY;
	if (dir == TDB_PROTO_REQUEST)
		nlh->nlmsg_flags = NLM_F_REQUEST |
				   (cp->dump ? NLM_F_DUMP : 0) |
				   (cp->ack ? NLM_F_ACK : 0);
	else
		nlh->nlmsg_flags = cp->ans == ANS_PART ? NLM_F_MULTI : 0;
	nlh->nlmsg_seq = m->seq;
	nlh->nlmsg_pid = m->pid;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = m->cmd;
	g->version = TDB_PROTO_VERSION;
	g->reserved = 0;
	if (!put_attrs(nlh, size, m) || nlh->nlmsg_len != (uint32_t)need)
		return fail(ext, EMSGSIZE, "message size miscomputed", 0);
	return need;
}

/* --- NLMSG_ERROR and NLMSG_DONE ----------------------------------------- */

static long put_ack(void *buf, size_t size, uint16_t type,
		    const struct nlmsghdr *req, int error,
		    const struct tdb_proto_extack *ext)
{
	size_t mlen = 0, need = NLMSG_HDRLEN;
	bool tlvs = false;
	struct nlmsghdr *nlh;

	if (error > 0 || error < -MAX_ERRNO)
		return -EINVAL;
	if ((uintptr_t)buf & (NLMSG_ALIGNTO - 1))
		return -EINVAL;
	need += type == NLMSG_ERROR ? sizeof(struct nlmsgerr) : sizeof(int);
	if (ext && ext->msg) {
		mlen = str_len(ext->msg, TDB_PROTO_EXTACK_MAX);
		need += attr_size(mlen + 1);
		tlvs = true;
	}
	if (ext && ext->offset) {
		need += attr_size(4);
		tlvs = true;
	}
	if (ext && ext->miss_type) {
		need += attr_size(4);
		tlvs = true;
	}
	if (ext && ext->cookie_len) {
		if (ext->cookie_len > TDB_PROTO_COOKIE_MAX)
			return -EINVAL;
		need += attr_size(ext->cookie_len);
		tlvs = true;
	}
	if (need > size)
		return -EMSGSIZE;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = (type == NLMSG_ERROR ? NLM_F_CAPPED : NLM_F_MULTI) |
			   (tlvs ? NLM_F_ACK_TLVS : 0);
	if (req) {
		nlh->nlmsg_seq = req->nlmsg_seq;
		nlh->nlmsg_pid = req->nlmsg_pid;
	}
	if (type == NLMSG_ERROR) {
		struct nlmsgerr *e = mnl_nlmsg_put_extra_header(nlh,
								sizeof(*e));

		e->error = error;
		if (req)
			memcpy(&e->msg, req, sizeof(e->msg));
	} else {
		int *p = mnl_nlmsg_put_extra_header(nlh, sizeof(int));

		*p = error;
	}
	if (ext && ext->msg) {
		struct nlattr *a = mnl_nlmsg_get_payload_tail(nlh);

		/* mlen + 1 bytes: the text, cut, and then its NUL */
		if (!put_bytes(nlh, size, NLMSGERR_ATTR_MSG, mlen + 1,
			       ext->msg))
			return -EMSGSIZE;
		((char *)mnl_attr_get_payload(a))[mlen] = '\0';
	}
	if (ext && ext->offset &&
	    !mnl_attr_put_u32_check(nlh, size, NLMSGERR_ATTR_OFFS, ext->offset))
		return -EMSGSIZE;
	if (ext && ext->miss_type &&
	    !mnl_attr_put_u32_check(nlh, size, NLMSGERR_ATTR_MISS_TYPE,
				    ext->miss_type))
		return -EMSGSIZE;
	if (ext && ext->cookie_len &&
	    !put_bytes(nlh, size, NLMSGERR_ATTR_COOKIE, ext->cookie_len,
		       ext->cookie))
		return -EMSGSIZE;
	return (long)nlh->nlmsg_len;
}

long tdb_proto_error(void *buf, size_t size, const struct nlmsghdr *req,
		     int error, const struct tdb_proto_extack *ext)
{
	return put_ack(buf, size, NLMSG_ERROR, req, error, ext);
}

long tdb_proto_done(void *buf, size_t size, const struct nlmsghdr *req,
		    int error, const struct tdb_proto_extack *ext)
{
	return put_ack(buf, size, NLMSG_DONE, req, error, ext);
}
