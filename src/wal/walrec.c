// SPDX-License-Identifier: GPL-2.0-only
/*
 * walrec.c - the WAL's record encoding (walrec.h), freestanding: the
 * one encoder of tdbd's WAL and tdb.ko's change log.
 */
#include "walrec.h"

void walrec_put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

void walrec_put64(unsigned char *p, uint64_t v)
{
	walrec_put32(p, (uint32_t)v);
	walrec_put32(p + 4, (uint32_t)(v >> 32));
}

uint32_t walrec_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint64_t walrec_get64(const unsigned char *p)
{
	return walrec_get32(p) | (uint64_t)walrec_get32(p + 4) << 32;
}

size_t walrec_size(enum walrec_type type, uint32_t nops, size_t bytes)
{
	size_t n = WALREC_HDR;

	switch (type) {
	case WALREC_OPS:
		n += 4 + (size_t)nops * WALREC_OP_HDR + bytes;
		break;
	case WALREC_OPS_V:
		n += 16 + (size_t)nops * WALREC_OP_HDR + bytes;
		break;
	case WALREC_CREATE:
		n += WALREC_CREATE_FIX + 1 + bytes;
		break;
	case WALREC_DROP:
		n += 1 + bytes;
		break;
	}
	return (n + 7) & ~(size_t)7;
}

size_t walrec_size_max(enum walrec_type type, uint32_t nops, size_t bytes)
{
	size_t more = 0;

	if (type == WALREC_OPS || type == WALREC_OPS_V)
		more = (size_t)nops * (WALREC_OP_DL_HDR - WALREC_OP_HDR);
	else if (type == WALREC_CREATE)
		more = WALREC_CREATE_EXT_F;
	return walrec_size(type, nops, bytes + more);
}

size_t walrec_begin(unsigned char *p, enum walrec_type type)
{
	size_t n = type == WALREC_OPS ? WALREC_OPS_HDR :
		   type == WALREC_OPS_V ? WALREC_OPS_V_HDR : WALREC_HDR;

	memset(p, 0, n);
	p[16] = (unsigned char)type;
	return n;
}

size_t walrec_begin_v(unsigned char *p, uint64_t version)
{
	size_t n = walrec_begin(p, WALREC_OPS_V);

	walrec_put64(p + WALREC_HDR + 8, version);
	return n;
}

void walrec_op(unsigned char *p, enum walrec_op op, uint8_t name_len,
	       uint32_t klen, uint32_t vlen)
{
	p[0] = (unsigned char)op;
	p[1] = name_len;
	p[2] = p[3] = 0;
	walrec_put32(p + 4, klen);
	walrec_put32(p + 8, vlen);
}

size_t walrec_op_dl(unsigned char *p, enum walrec_op op, uint8_t name_len,
		    uint32_t klen, uint32_t vlen, uint64_t deadline)
{
	if (op != WALREC_OP_PUT || !deadline) {
		walrec_op(p, op, name_len, klen, vlen);
		return WALREC_OP_HDR;
	}
	walrec_op(p, WALREC_OP_PUT_DL, name_len, klen, vlen);
	walrec_put64(p + WALREC_OP_HDR, deadline);
	return WALREC_OP_DL_HDR;
}

void walrec_create(unsigned char *p, uint64_t id, uint32_t uid,
		   uint32_t gid, uint32_t mode, uint32_t max_extents,
		   uint32_t sync)
{
	walrec_put64(p, id);
	walrec_put32(p + 8, uid);
	walrec_put32(p + 12, gid);
	walrec_put32(p + 16, mode);
	walrec_put32(p + 20, max_extents);
	walrec_put32(p + 24, sync);
}

size_t walrec_create_ext(unsigned char *p, uint64_t default_ttl,
			 uint64_t max_bytes, uint64_t max_records,
			 uint32_t evict, uint32_t flags)
{
	if (!default_ttl && !max_bytes && !max_records && !evict && !flags)
		return 0;
	walrec_put64(p, default_ttl);
	walrec_put64(p + 8, max_bytes);
	walrec_put64(p + 16, max_records);
	walrec_put32(p + 24, evict);
	if (!flags)
		return WALREC_CREATE_EXT;
	walrec_put32(p + 28, flags);
	return WALREC_CREATE_EXT_F;
}

void walrec_seal(unsigned char *rec, uint32_t len, uint64_t lsn,
		 uint32_t nops)
{
	walrec_put32(rec + 4, len);
	walrec_put64(rec + 8, lsn);
	if (rec[16] == WALREC_OPS || rec[16] == WALREC_OPS_V)
		walrec_put32(rec + WALREC_HDR, nops);
}

void walrec_set_crc(unsigned char *rec, uint32_t crc)
{
	walrec_put32(rec, crc);
}
