/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * walrec.h - the WAL's record encoding (src/wal/wal.h, "Files"), byte
 * for byte, as freestanding code on src/core/platform.h: tdbd's WAL
 * (src/wal/wal.c) and tdb.ko's change log (kmod/klog.c) build their
 * records with it, so a record tdb.ko logs is the record tdbd appends.
 *
 * A record is a header (WALREC_HDR bytes, then for WALREC_OPS a u32
 * op count, for WALREC_OPS_V a u32 op count, u32 0 and the u64 version
 * of every op of the record), its payload, and zeros up to the next
 * multiple of 8.  The
 * builder writes the pieces where it keeps them (one buffer, or a
 * ring's fragments), then seals the header (len, lsn, nops) and sets
 * the CRC32C of everything after the crc field up to len (tdbp_crc32c,
 * in pieces when the record is split).  All integers little-endian.
 */
#ifndef TDB_WALREC_H
#define TDB_WALREC_H

#include "platform.h"

/* WALREC_OPS: the format before versions (issue 24), still read (its
 * ops' version is the record's LSN); new records of ops are OPS_V. */
enum walrec_type { WALREC_OPS = 1, WALREC_CREATE = 2, WALREC_DROP = 3,
		   WALREC_OPS_V = 4 };
/* PUT_DL: a put whose record expires (issue 27): its op header has the
 * u64 deadline (ms since the epoch, not 0) after vlen; a put without
 * one is a plain PUT and costs nothing more. */
enum walrec_op { WALREC_OP_PUT = 1, WALREC_OP_DEL = 2, WALREC_OP_PUT_DL = 3 };

#define WALREC_HDR      24u     /* crc, len, lsn, type, pad[7] */
#define WALREC_OPS_HDR  (WALREC_HDR + 4u)       /* and u32 nops */
#define WALREC_OPS_V_HDR (WALREC_HDR + 16u)     /* u32 nops, 0, u64 version */
#define WALREC_BEGIN_MAX WALREC_OPS_V_HDR       /* walrec_begin's most */
#define WALREC_OP_HDR   12u     /* op, name_len, u16 0, klen, vlen */
#define WALREC_OP_DL_HDR 20u    /* PUT_DL: and u64 deadline */
#define WALREC_OP_HDR_MAX WALREC_OP_DL_HDR
/* A create's attributes after the name, if any is not 0: u64 default
 * TTL (ms), u64 max_bytes, u64 max_records, u32 evict (TDB_EVICT_*);
 * and for a table created with flags (TDB_TABLE_F_*: an ordered table,
 * issue 28) u32 flags after them (WALREC_CREATE_EXT_F bytes in all).
 * A record's extension is 0, 28 or 32 bytes: one without flags is
 * byte for byte what it was before. */
#define WALREC_CREATE_EXT 28u
#define WALREC_CREATE_EXT_F (WALREC_CREATE_EXT + 4u)
#define WALREC_CREATE_FIX 28u   /* id, uid, gid, mode, max_extents, sync */
#define WALREC_NAME_MAX 64u

/* The padded size of a record: nops ops whose names, keys and values
 * add up to bytes (OPS), or a create/drop of a table whose name has
 * bytes bytes (a create without attributes).  (wal_rec_size.) */
size_t walrec_size(enum walrec_type type, uint32_t nops, size_t bytes);
/* The most such a record can take: every op a PUT_DL, a create with a
 * default TTL and flags.  What a home reserves (struct tdbo_log_size does not say
 * which puts have deadlines); the record built may be smaller. */
size_t walrec_size_max(enum walrec_type type, uint32_t nops, size_t bytes);

/* The record's first bytes at p (WALREC_OPS_HDR for OPS,
 * WALREC_OPS_V_HDR for OPS_V, else WALREC_HDR): zeros and the type.
 * Returns how many were written. */
size_t walrec_begin(unsigned char *p, enum walrec_type type);
/* The first bytes of an OPS_V record whose ops have `version` (not 0):
 * WALREC_OPS_V_HDR of them. */
size_t walrec_begin_v(unsigned char *p, uint64_t version);
/* An op's fixed part (WALREC_OP_HDR bytes); name, key and value follow
 * it (the value only for a put). */
void walrec_op(unsigned char *p, enum walrec_op op, uint8_t name_len,
	       uint32_t klen, uint32_t vlen);
/* The fixed part of a put or delete whose record expires at deadline
 * (0: never): a PUT_DL op's (WALREC_OP_DL_HDR bytes) for a put with a
 * deadline, else walrec_op's.  Returns how many bytes were written. */
size_t walrec_op_dl(unsigned char *p, enum walrec_op op, uint8_t name_len,
		    uint32_t klen, uint32_t vlen, uint64_t deadline);
/* A create's fixed part (WALREC_CREATE_FIX bytes); then u8 name_len,
 * the name and, for a table with a default TTL, a bound (issue 27) or
 * flags (issue 28), its attributes (walrec_create_ext; absent: none of
 * them, as in records from before). */
void walrec_create(unsigned char *p, uint64_t id, uint32_t uid,
		   uint32_t gid, uint32_t mode, uint32_t max_extents,
		   uint32_t sync);
/* The header's len (bytes from crc on, without padding), lsn and, for
 * OPS and OPS_V, nops; the crc is set apart (walrec_set_crc). */
/* A create's attributes after its name (up to WALREC_CREATE_EXT_F
 * bytes at p): how many bytes were written: 0 (nothing) if every one is
 * 0, WALREC_CREATE_EXT if flags is 0, else WALREC_CREATE_EXT_F. */
size_t walrec_create_ext(unsigned char *p, uint64_t default_ttl,
			 uint64_t max_bytes, uint64_t max_records,
			 uint32_t evict, uint32_t flags);
void walrec_seal(unsigned char *rec, uint32_t len, uint64_t lsn,
		 uint32_t nops);
void walrec_set_crc(unsigned char *rec, uint32_t crc);
/* The crc of a whole record in one buffer (len as sealed). */
static inline uint32_t walrec_crc(const unsigned char *rec, uint32_t len)
{
	return tdbp_crc32c(0, rec + 4, len - 4);
}

void walrec_put32(unsigned char *p, uint32_t v);
void walrec_put64(unsigned char *p, uint64_t v);
uint32_t walrec_get32(const unsigned char *p);
uint64_t walrec_get64(const unsigned char *p);

#endif
