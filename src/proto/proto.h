/* SPDX-License-Identifier: MIT */
/*
 * proto.h - building and validating tdb protocol messages (the ABI is
 * include/tdb/proto.h; read its comment first).
 *
 * One struct, struct tdb_proto_msg, describes a message in both
 * directions: tdb_proto_build() writes the attributes it marks present
 * into a caller's buffer, tdb_proto_parse() fills it from a received
 * message, and a round trip gives back what went in.
 *
 * Invariants:
 *  - Builders never write past the size they are given: they compute the
 *    message's size first and return -EMSGSIZE, having written nothing,
 *    when it does not fit.  A message they build always passes
 *    tdb_proto_parse() in the matching direction.
 *  - The parser reads nothing outside [buf, buf + len) and nothing past
 *    nlmsg_len; it writes nothing but *m and *ext.  It expects a private
 *    copy (the ring consumer makes one): the bytes must not change while
 *    it runs and while the pointers it leaves in *m are used.
 *  - Every function returns a negative errno on failure, never prints,
 *    never exits, never allocates.  Failures leave a static message (and
 *    where an attribute is at fault, its offset) in struct tdb_proto_extack.
 *  - No state: any number of threads may call anything at once.
 */
#ifndef TDB_PROTO_PROTO_H
#define TDB_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/netlink.h>

#include "tdb/proto.h"

/* Which way a message goes; the parser checks it is that kind. */
enum tdb_proto_dir {
	TDB_PROTO_REQUEST = 1,   /* client -> owner: requests only */
	TDB_PROTO_ANSWER  = 2,   /* owner -> client: replies, dump parts,
				  * NLMSG_ERROR, NLMSG_DONE, notifications */
};

#define TDB_PROTO_COOKIE_MAX 20u       /* NETLINK_MAX_COOKIE_LEN */

/* What was wrong, as an extended ack carries it. */
struct tdb_proto_extack {
	const char *msg;        /* static text, or NULL */
	uint32_t offset;        /* attribute at fault, bytes from the start
				 * of the message; 0 = none (no attribute
				 * starts before byte 20) */
	uint32_t miss_type;     /* required attribute missing; 0 = none */
	/* NLMSGERR_ATTR_COOKIE: data an ack hands back (tdbd's WATCH: the
	 * feed's next sequence number, a u32); cookie_len 0 = none */
	uint32_t cookie_len;
	unsigned char cookie[TDB_PROTO_COOKIE_MAX];
};

/* TDB_A_STAT; `present` has bit (1u << TDB_STAT_A_x) for each field. */
struct tdb_proto_stat {
	uint32_t present;
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size, index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	uint32_t state;         /* TDB_TABLE_* */
	uint64_t default_ttl, expiring, expired;
	uint64_t max_bytes, max_records, evicted;
	uint32_t evict;
	uint32_t table_flags;   /* TDB_TABLE_F_* */
};

/* TDB_A_COUNTERS; `present` has bit (1u << TDB_CTR_A_x) for each field. */
struct tdb_proto_counters {
	uint32_t present;
	uint32_t tables, clients, watches, txns;
	uint64_t requests, errors, uptime_ms;
	uint64_t accepted, cleanups, txns_aborted, watches_dropped;
	uint32_t rings, throttled, dumps;
	uint64_t rings_freed, stuck, violations;
	uint64_t wal_records, wal_lsn, wal_durable, wal_syncs;
	uint64_t checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t tables_aside;
	uint64_t readers_expired;
	uint64_t expired, evicted;
};

#define TDB_PROTO_BIT(a)    (1ull << (a))
#define TDB_PROTO_HAS(m, a) (((m)->attrs & TDB_PROTO_BIT(a)) != 0)

/*
 * A tdb message.  For a family message, `attrs` has bit (1ull << TDB_A_x)
 * for each attribute present and the matching fields hold it; pointers
 * point into the message (parse) or at the caller's data (build).
 * NLMSG_ERROR and NLMSG_DONE fill `error`, `ext` (and `orig`) instead.
 */
struct tdb_proto_msg {
	/* nlmsghdr: the parser fills all; the builder takes seq and pid
	 * (nlmsg_flags follow from the direction and the command). */
	const struct nlmsghdr *nlh;   /* parse: the message; build: unused */
	uint16_t type;                /* TDB_PROTO_FAMILY, NLMSG_ERROR, ... */
	uint16_t nlflags;
	uint32_t seq, pid;
	/* genlmsghdr */
	uint8_t cmd;                  /* enum tdb_cmd */
	uint8_t version;              /* parse only; builder writes 1 */

	uint64_t attrs;
	const char *table;            /* NUL-terminated */
	uint32_t table_len;           /* without the NUL */
	const void *key;
	uint32_t key_len;
	/* value: contiguous only when value_frags <= 1; otherwise it points
	 * at the first fragment, and tdb_proto_value_copy() gathers them.
	 * The builder takes any contiguous value and fragments it. */
	const void *value;
	uint32_t value_len;           /* whole value */
	uint32_t value_frags;         /* parse: fragments seen */
	const void *prefix;
	uint32_t prefix_len;
	const void *cursor;
	uint32_t cursor_len;
	uint32_t flags;               /* TDB_A_FLAGS */
	uint64_t txn;
	uint32_t limit;
	uint32_t max_extents, uid, gid, mode;
	uint32_t scan_flags;          /* TDB_A_SCAN_FLAGS */
	uint64_t rec_version;         /* TDB_A_VERSION */
	uint64_t if_version;          /* TDB_A_IF_VERSION */
	int64_t delta;                /* TDB_A_DELTA */
	int64_t ival;                 /* TDB_A_INT */
	uint64_t set_version;         /* TDB_A_SET_VERSION */
	uint64_t ttl;                 /* TDB_A_TTL */
	uint64_t deadline;            /* TDB_A_DEADLINE */
	uint32_t expire_flags;        /* TDB_A_EXPIRE_FLAGS */
	uint32_t reason;              /* TDB_A_REASON */
	uint64_t max_bytes;           /* TDB_A_MAX_BYTES */
	uint64_t max_records;         /* TDB_A_MAX_RECORDS */
	uint32_t evict;               /* TDB_A_EVICT */
	const void *hashes;           /* TDB_A_HASHES: u64s, not aligned */
	uint32_t nhashes;
	uint32_t table_flags;         /* TDB_A_TABLE_FLAGS: TDB_TABLE_F_* */
	const void *from;             /* TDB_A_FROM: a range's start key */
	uint32_t from_len;
	const void *to;               /* TDB_A_TO: a range's end key */
	uint32_t to_len;
	const void *records;          /* TDB_A_RECORDS (RESTORE_BULK): */
	uint32_t records_len;         /* packed records, checked by the */
	uint32_t nrecords;            /* parser; tdb_proto_record_next() */
	struct tdb_proto_stat stat;
	struct tdb_proto_counters counters;
	/* parse: offset of each attribute present (its first fragment) */
	uint32_t attr_off[TDB_A_MAX + 1];

	/* NLMSG_ERROR / NLMSG_DONE (parse) */
	int error;                    /* 0 or a negative errno */
	const struct nlmsghdr *orig;  /* NLMSG_ERROR: the request's header */
	struct tdb_proto_extack ext;  /* from the TLVs; zero if none */
};

/* --- validating --------------------------------------------------------
 * Parse and check the message at buf (4-byte aligned; len bytes there,
 * of which only the first message, nlmsg_len bytes, is looked at).
 * Checks, in order: the nlmsghdr (length, type, flags), the genlmsghdr
 * (version, then cmd), then every attribute against the command's policy
 * (type, length, flags of nla_type, unknown, misplaced and duplicate
 * attributes, VALUE fragments, nests), then required attributes and
 * values.  0 and *m filled, or a negative errno (see tdb/proto.h) with
 * ext->msg (and ext->offset, ext->miss_type where they apply).
 *
 * m->nlh is set as soon as len covers a struct nlmsghdr, also on
 * failure: pass it to tdb_proto_error() to answer (it is NULL when the
 * message cannot be answered).
 */
int tdb_proto_parse(const void *buf, size_t len, enum tdb_proto_dir dir,
		    struct tdb_proto_msg *m, struct tdb_proto_extack *ext);
/* The same with another nlmsg_type for the family (generic netlink). */
int tdb_proto_parse_family(const void *buf, size_t len,
			   enum tdb_proto_dir dir, uint16_t family,
			   struct tdb_proto_msg *m,
			   struct tdb_proto_extack *ext);

/* One record of a parsed RESTORE_BULK's RECORDS (tdb/proto.h). */
struct tdb_proto_record {
	const void *key, *val;
	uint32_t klen, vlen;
	uint64_t version, deadline;
};
/* The record at *off in m->records, and *off moved past it; false at
 * the end.  The parser checked every record: no bound to check here. */
bool tdb_proto_record_next(const struct tdb_proto_msg *m, uint32_t *off,
			   struct tdb_proto_record *r);
/* Pack one record at p (TDB_RESTORE_REC_HDR + klen + vlen bytes). */
void tdb_proto_record_pack(void *p, const void *key, uint32_t klen,
			   const void *val, uint32_t vlen, uint64_t version,
			   uint64_t deadline);

/* Copy a parsed value (all fragments) to dst, which has room for
 * m->value_len bytes. */
void tdb_proto_value_copy(const struct tdb_proto_msg *m, void *dst);

/* Is this a dump command?  Is it answered by an ack?  (Unknown: false.) */
bool tdb_proto_cmd_is_dump(unsigned int cmd);
bool tdb_proto_cmd_is_ack(unsigned int cmd);
/* "PUT", "TABLE_CREATE", ...; "?" for an unknown command. */
const char *tdb_proto_cmd_name(unsigned int cmd);

/* --- building ----------------------------------------------------------
 * Build the message *m describes into buf (4-byte aligned, size bytes):
 * nlmsghdr (type TDB_PROTO_FAMILY, m->seq, m->pid, flags from dir and
 * cmd: requests NLM_F_REQUEST [| NLM_F_DUMP | NLM_F_ACK], dump parts
 * NLM_F_MULTI, replies and notifications 0), genlmsghdr (m->cmd,
 * version 1), then the attributes in m->attrs in type order.
 * Returns the message length (nlmsg_len), or
 *   -EMSGSIZE  it needs more than size bytes (nothing written);
 *   the validator's errno for an attribute set or value it would refuse
 *   (-EINVAL, -E2BIG, -ENAMETOOLONG, -EOPNOTSUPP), with ext->msg.
 * Over generic netlink, set nlmsg_type to the family id afterwards.
 */
long tdb_proto_build(void *buf, size_t size, enum tdb_proto_dir dir,
		     const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext);
/* The length tdb_proto_build() would return (or its error). */
long tdb_proto_size(enum tdb_proto_dir dir, const struct tdb_proto_msg *m,
		    struct tdb_proto_extack *ext);

/*
 * Answer a request with NLMSG_ERROR: error (0 = ack, else a negative
 * errno >= -4095), the request's header copied from req (NULL: a zero
 * header), NLM_F_CAPPED, and when ext has anything, NLM_F_ACK_TLVS with
 * NLMSGERR_ATTR_MSG (cut to TDB_PROTO_EXTACK_MAX bytes),
 * NLMSGERR_ATTR_OFFS, NLMSGERR_ATTR_MISS_TYPE.  seq and pid are the
 * request's.  Never more than TDB_PROTO_ERROR_MAX bytes.  Returns the
 * length, -EMSGSIZE (nothing written) or -EINVAL (bad error value).
 */
long tdb_proto_error(void *buf, size_t size, const struct nlmsghdr *req,
		     int error, const struct tdb_proto_extack *ext);
/* End a dump: NLMSG_DONE, NLM_F_MULTI, int error (0 or negative), the
 * request's seq and pid, extack TLVs as above.  Same returns. */
long tdb_proto_done(void *buf, size_t size, const struct nlmsghdr *req,
		    int error, const struct tdb_proto_extack *ext);

#endif
