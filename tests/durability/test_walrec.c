// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_walrec.c - the shared WAL record encoder (src/wal/walrec.c):
 * records it builds (with tdbp_crc32c, as tdb.ko's change log does)
 * are, byte for byte, the records src/wal writes for the same changes;
 * tdbp_crc32c (src/wal/crc32c.c, both homes' one) equals wal_crc32c
 * (SSE4.2 when the CPU has it) and the bitwise definition, with the
 * known answer CRC32C("123456789") = 0xe3069283.  Versions: an
 * OPS_V record carries its version (u32 nops, u32 0, u64 version) and
 * the reader gives it back; an old OPS record reads with version = its
 * LSN.  Expiry: a put with a deadline is a PUT_DL op (u64 deadline
 * after the op header), a create of a table with a default TTL has the
 * u64 TTL after its name; the reader gives both back, and 0 for the
 * records without them (the format from before, byte for byte).
 * Ordered tables (issue 28): a create of a table with flags has 32
 * bytes of attributes after its name (u32 flags after the 28), read
 * back; one without has flags 0.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wal.h"
#include "walrec.h"

static int fails;

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", \
	__FILE__, __LINE__, #c); fails++; } } while (0)

/* CRC32C by its definition, one bit at a time (reflected 0x82f63b78). */
static uint32_t crc_bitwise(uint32_t crc, const unsigned char *p, size_t n)
{
	uint32_t c = ~crc;
	int k;

	while (n--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

/* Every entry of the eight tables: each byte value in each of the 16
 * positions of a 16-byte buffer (two 8-byte steps), then in a 7-byte
 * tail, against the bitwise definition. */
static void crc_tables(void)
{
	unsigned char buf[16];
	unsigned int pos, b, bad = 0;

	for (pos = 0; pos < sizeof(buf); pos++)
		for (b = 0; b < 256; b++) {
			memset(buf, 0x5a, sizeof(buf));
			buf[pos] = (unsigned char)b;
			if (tdbp_crc32c(0, buf, sizeof(buf)) !=
			    crc_bitwise(0, buf, sizeof(buf)))
				bad++;
			if (pos < 7 && tdbp_crc32c(b, buf, 7) !=
			    crc_bitwise(b, buf, 7))
				bad++;
		}
	CHECK(bad == 0);
}

static void crc_cases(void)
{
	unsigned char buf[300];
	size_t i, n;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	for (n = 0; n <= sizeof(buf); n++) {
		CHECK(tdbp_crc32c(0, buf, n) == wal_crc32c(0, buf, n));
		CHECK(tdbp_crc32c(tdbp_crc32c(0, buf, n / 3), buf + n / 3,
				  n - n / 3) == wal_crc32c(0, buf, n));
	}
	/* the standard check value of CRC32C */
	CHECK(tdbp_crc32c(0, "123456789", 9) == 0xe3069283u);
	CHECK(wal_crc32c(0, "123456789", 9) == 0xe3069283u);
	CHECK(tdbp_crc32c(0, "", 0) == 0);
	crc_tables();
}

/* Our encoding of the records append() below makes, at lsn 1.. */
static size_t add_op(unsigned char *p, enum walrec_op op, const char *name,
		     const char *key, const char *val)
{
	size_t n = strlen(name), kl = strlen(key), vl = val ? strlen(val) : 0;

	walrec_op(p, op, (uint8_t)n, (uint32_t)kl, (uint32_t)vl);
	memcpy(p + WALREC_OP_HDR, name, n);
	memcpy(p + WALREC_OP_HDR + n, key, kl);
	memcpy(p + WALREC_OP_HDR + n + kl, val ? val : "", vl);
	return WALREC_OP_HDR + n + kl + vl;
}

/* The same with a deadline (walrec_op_dl: PUT_DL when not 0). */
static size_t add_op_dl(unsigned char *p, enum walrec_op op,
			const char *name, const char *key, const char *val,
			uint64_t dl)
{
	size_t n = strlen(name), kl = strlen(key), vl = val ? strlen(val) : 0;
	size_t h = walrec_op_dl(p, op, (uint8_t)n, (uint32_t)kl,
				(uint32_t)vl, dl);

	memcpy(p + h, name, n);
	memcpy(p + h + n, key, kl);
	memcpy(p + h + n + kl, val ? val : "", vl);
	return h + n + kl + vl;
}

static size_t finish(unsigned char *r, size_t len, uint64_t lsn,
		     uint32_t nops)
{
	size_t padded = (len + 7) & ~(size_t)7;

	memset(r + len, 0, padded - len);
	walrec_seal(r, (uint32_t)len, lsn, nops);
	walrec_set_crc(r, walrec_crc(r, (uint32_t)len));
	return padded;
}

static size_t encode(unsigned char *b)
{
	unsigned char *r = b;
	size_t len;

	/* 1: a put */
	len = walrec_begin(r, WALREC_OPS);
	len += add_op(r + len, WALREC_OP_PUT, "t1", "key", "value");
	CHECK(walrec_size(WALREC_OPS, 1, 2 + 3 + 5) == ((len + 7) & ~7u));
	r += finish(r, len, 1, 1);
	/* 2: a transaction: put, del, put with an empty value */
	len = walrec_begin(r, WALREC_OPS);
	len += add_op(r + len, WALREC_OP_PUT, "t1", "a", "1");
	len += add_op(r + len, WALREC_OP_DEL, "tab2", "bb", NULL);
	len += add_op(r + len, WALREC_OP_PUT, "t1", "ccc", "");
	r += finish(r, len, 2, 3);
	/* 3: a create */
	len = walrec_begin(r, WALREC_CREATE);
	walrec_create(r + len, 77, 1000, 100, 0640, 12, 1);
	len += WALREC_CREATE_FIX;
	r[len++] = 4;
	memcpy(r + len, "tab3", 4);
	len += 4;
	CHECK(walrec_size(WALREC_CREATE, 0, 4) == ((len + 7) & ~7u));
	r += finish(r, len, 3, 0);
	/* 4: a drop */
	len = walrec_begin(r, WALREC_DROP);
	r[len++] = 4;
	memcpy(r + len, "tab3", 4);
	len += 4;
	r += finish(r, len, 4, 0);
	/* 5: a put with its version (OPS_V) */
	len = walrec_begin_v(r, 0x0102030405060708ull);
	CHECK(len == WALREC_OPS_V_HDR);
	len += add_op(r + len, WALREC_OP_PUT, "t1", "key", "v2");
	CHECK(walrec_size(WALREC_OPS_V, 1, 2 + 3 + 2) == ((len + 7) & ~7u));
	r += finish(r, len, 5, 1);
	/* the header, by hand: type 4, nops 1, 0, the version LE */
	CHECK(r[-((len + 7) & ~7u) + 16] == 4);
	/* 6: a transaction at version 9: del, put */
	len = walrec_begin_v(r, 9);
	len += add_op(r + len, WALREC_OP_DEL, "t1", "key", NULL);
	len += add_op(r + len, WALREC_OP_PUT, "tab2", "x", "y");
	r += finish(r, len, 6, 2);
	/* 7: at version 10, a put with a deadline, a delete, a put
	 * without one */
	len = walrec_begin_v(r, 10);
	CHECK(add_op_dl(r + len, WALREC_OP_PUT, "t1", "kd", "vd",
			0x1122334455667788ull) == WALREC_OP_DL_HDR + 6);
	/* the op header by hand: op 3, name_len 2, 0, klen, vlen, then
	 * the deadline LE */
	CHECK(r[len] == 3 && r[len + 1] == 2 && r[len + 2] == 0 &&
	      r[len + 3] == 0 && walrec_get32(r + len + 4) == 2 &&
	      walrec_get32(r + len + 8) == 2 &&
	      r[len + 12] == 0x88 && r[len + 19] == 0x11);
	CHECK(!memcmp(r + len + WALREC_OP_DL_HDR, "t1kdvd", 6));
	len += WALREC_OP_DL_HDR + 6;
	len += add_op_dl(r + len, WALREC_OP_DEL, "t1", "key", NULL, 0);
	len += add_op_dl(r + len, WALREC_OP_PUT, "t1", "p", "q", 0);
	CHECK(walrec_size(WALREC_OPS_V, 3, 4 + 3 + 3 + 4 + 3) + 8 ==
	      ((len + 7) & ~7u));
	CHECK(walrec_size_max(WALREC_OPS_V, 3, 4 + 3 + 3 + 4 + 3) >=
	      ((len + 7) & ~7u));
	r += finish(r, len, 7, 3);
	/* 8: a create of a table whose default TTL is 2 h, bounded to
	 * 1 MiB and 1000 records, evicting LRU (1): by hand */
	len = walrec_begin(r, WALREC_CREATE);
	walrec_create(r + len, 78, 0, 0, 0600, 4, 0);
	len += WALREC_CREATE_FIX;
	r[len++] = 4;
	memcpy(r + len, "tab4", 4);
	len += 4;
	walrec_put64(r + len, 7200000);
	walrec_put64(r + len + 8, 1u << 20);
	walrec_put64(r + len + 16, 1000);
	walrec_put32(r + len + 24, 1);
	CHECK(walrec_create_ext(r + len + 28, 0, 0, 0, 0, 0) == 0);
	len += WALREC_CREATE_EXT;
	CHECK(walrec_size_max(WALREC_CREATE, 0, 4) >= ((len + 7) & ~7u));
	r += finish(r, len, 8, 0);
	/* 9: a create of an ordered table (flags 1), nothing else: by
	 * hand, 28 zero bytes and the u32 flags after its name */
	len = walrec_begin(r, WALREC_CREATE);
	walrec_create(r + len, 79, 0, 0, 0600, 0, 0);
	len += WALREC_CREATE_FIX;
	r[len++] = 4;
	memcpy(r + len, "tab5", 4);
	len += 4;
	memset(r + len, 0, 28);
	walrec_put32(r + len + 28, 1);
	len += WALREC_CREATE_EXT_F;
	CHECK(walrec_size_max(WALREC_CREATE, 0, 4) == ((len + 7) & ~7u));
	r += finish(r, len, 9, 0);
	return (size_t)(r - b);
}

static void append(struct wal *w)
{
	const char *msg;
	uint64_t lsn;
	size_t sz;

	sz = wal_rec_size(WAL_OPS, 1, 10);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_OPS);
	wal_add_op(w, WAL_OP_PUT, "t1", "key", 3, "value", 5);
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 1);

	sz = wal_rec_size(WAL_OPS, 3, 4 + 6 + 7);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_OPS);
	wal_add_op(w, WAL_OP_PUT, "t1", "a", 1, "1", 1);
	wal_add_op(w, WAL_OP_DEL, "tab2", "bb", 2, NULL, 0);
	wal_add_op(w, WAL_OP_PUT, "t1", "ccc", 3, "", 0);
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 2);

	sz = wal_rec_size(WAL_CREATE, 0, 4);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_CREATE);
	wal_add_create(w, 77, "tab3", 1000, 100, 0640, 12, 1);
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 3);

	sz = wal_rec_size(WAL_DROP, 0, 4);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_DROP);
	wal_add_drop(w, "tab3");
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 4);

	sz = wal_rec_size(WAL_OPS_V, 1, 2 + 3 + 2);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin_ops(w, 0x0102030405060708ull);
	wal_add_op(w, WAL_OP_PUT, "t1", "key", 3, "v2", 2);
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 5);

	sz = wal_rec_size(WAL_OPS_V, 2, 2 + 3 + 4 + 1 + 1);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin_ops(w, 9);
	wal_add_op(w, WAL_OP_DEL, "t1", "key", 3, NULL, 0);
	wal_add_op(w, WAL_OP_PUT, "tab2", "x", 1, "y", 1);
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 6);
	CHECK(!wal_write(w));

	/* reserved as a home does, not knowing which puts have deadlines
	 * (the most); the record is smaller */
	sz = wal_rec_size_max(WAL_OPS_V, 3, 4 + 3 + 3 + 4 + 3);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin_ops(w, 10);
	CHECK(wal_add_op_dl(w, WAL_OP_DEL, "t1", "x", 1, NULL, 0, 5) ==
	      -EINVAL);         /* a delete has no deadline */
	CHECK(!wal_commit(w, sz, &lsn) == 0);   /* that failed the record */
	CHECK(!wal_reserve(w, sz, &msg) == 0);  /* and the log */
}

/* A log like append()'s, with expiry: the failed record above fails the
 * log, so this one goes to its own directory. */
static void append_dl(struct wal *w)
{
	const char *msg;
	uint64_t lsn;
	size_t sz;

	sz = wal_rec_size_max(WAL_OPS_V, 3, 4 + 3 + 3 + 4 + 3);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin_ops(w, 10);
	CHECK(!wal_add_op_dl(w, WAL_OP_PUT, "t1", "kd", 2, "vd", 2,
			     0x1122334455667788ull));
	CHECK(!wal_add_op_dl(w, WAL_OP_DEL, "t1", "key", 3, NULL, 0, 0));
	CHECK(!wal_add_op_dl(w, WAL_OP_PUT, "t1", "p", 1, "q", 1, 0));
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 7);

	sz = wal_rec_size_max(WAL_CREATE, 0, 4);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_CREATE);
	CHECK(!wal_add_create_ex(w, 78, "tab4", 0, 0, 0600, 4, 0, 7200000,
				 1u << 20, 1000, 1, 0));
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 8);

	sz = wal_rec_size_max(WAL_CREATE, 0, 4);
	CHECK(!wal_reserve(w, sz, &msg));
	wal_begin(w, WAL_CREATE);
	CHECK(!wal_add_create_ex(w, 79, "tab5", 0, 0, 0600, 0, 0, 0, 0, 0, 0,
				 1));
	CHECK(!wal_commit(w, sz, &lsn) && lsn == 9);
}

/* Replay: each ops record's version (OPS_V: its own; OPS: its LSN) and
 * ops. */
struct seen {
	int n;
	uint64_t ver[9];
	uint32_t nops[9];
	uint64_t dl[9][3];      /* the ops' deadlines */
	uint64_t ttl[9];        /* a create's default TTL */
	uint32_t flags[9];      /* and its flags */
};

static int on_rec(void *arg, const struct wal_rec *r)
{
	struct seen *s = arg;
	struct wal_opv op;
	uint32_t pos = 0, n = 0, cnt;
	int k;

	if (s->n >= 9)
		return -E2BIG;
	s->ver[s->n] = 0;
	s->flags[s->n] = 0;
	if (wal_is_ops(r)) {
		CHECK(!wal_ops_version(r, &s->ver[s->n]));
		CHECK(!wal_ops_count(r, &cnt));
		while ((k = wal_next_op(r, &pos, &op)) == 1) {
			CHECK(op.op == WAL_OP_PUT || op.op == WAL_OP_DEL);
			if (n < 3)
				s->dl[s->n][n] = op.deadline;
			n++;
		}
		CHECK(k == 0 && n == cnt);
	} else if (r->type == WAL_CREATE) {
		struct wal_create c;

		CHECK(!wal_get_create(r, &c));
		s->ttl[s->n] = c.default_ttl;
		s->flags[s->n] = c.flags;
		CHECK(c.id != 78 ? !c.max_bytes && !c.max_records &&
				   !c.evict :
		      c.max_bytes == 1u << 20 && c.max_records == 1000 &&
		      c.evict == 1);
		CHECK(!strcmp(c.name, c.id == 77 ? "tab3" :
				      c.id == 78 ? "tab4" : "tab5"));
		CHECK(wal_ops_version(r, &s->ver[s->n]) == -EUCLEAN);
	} else {
		CHECK(wal_ops_version(r, &s->ver[s->n]) == -EUCLEAN);
	}
	s->nops[s->n++] = n;
	return 0;
}

static void replay(const char *dir, const char *dir_dl)
{
	static const uint64_t want_ver[9] = { 1, 2, 0, 0,
					      0x0102030405060708ull, 9, 10,
					      0, 0 };
	static const uint32_t want_nops[9] = { 1, 3, 0, 0, 1, 2, 3, 0, 0 };
	struct seen s = { 0 };
	struct wal_replay_opts o = { .fn = on_rec, .arg = &s };
	struct wal_replay_result res;
	char err[256];

	CHECK(!wal_replay(dir, &o, &res, err, sizeof(err)));
	CHECK(s.n == 6);
	o.after = 6;
	CHECK(!wal_replay(dir_dl, &o, &res, err, sizeof(err)));
	CHECK(s.n == 9);
	for (int i = 0; i < 9 && i < s.n; i++) {
		CHECK(s.ver[i] == want_ver[i]);
		CHECK(s.nops[i] == want_nops[i]);
		/* only record 7's first op and 8's create have them */
		for (int j = 0; j < 3; j++)
			CHECK(s.dl[i][j] == (i == 6 && j == 0 ?
					     0x1122334455667788ull : 0));
		CHECK(s.ttl[i] == (i == 7 ? 7200000u : 0));
		/* only record 9 is of an ordered table */
		CHECK(s.flags[i] == (i == 8 ? 1u : 0));
	}
}

/* Expiry's fields the decoders refuse: a PUT_DL whose deadline is 0 or
 * cut short, a PUT_DL in an old OPS record (never written there), a
 * create with bytes after its name that are not a u64 TTL. */
static void bad_expiry(void)
{
	unsigned char b[128];
	struct wal_rec r;
	struct wal_opv op;
	struct wal_create c;
	const char *why;
	uint32_t pos;
	size_t len;

	/* a good one first, so that the faults below are the only ones */
	len = walrec_begin_v(b, 3);
	len += add_op_dl(b + len, WALREC_OP_PUT, "t", "k", "v", 99);
	walrec_seal(b, (uint32_t)len, 7, 1);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	pos = 0;
	CHECK(wal_next_op(&r, &pos, &op) == 1 && op.op == WAL_OP_PUT &&
	      op.deadline == 99 && op.klen == 1 && op.vlen == 1 &&
	      !memcmp(op.key, "k", 1) && !memcmp(op.val, "v", 1) &&
	      !strcmp(op.name, "t"));
	CHECK(wal_next_op(&r, &pos, &op) == 0);
	walrec_put64(b + WALREC_OPS_V_HDR + WALREC_OP_HDR, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	pos = 0;
	CHECK(wal_next_op(&r, &pos, &op) == -EUCLEAN);
	/* cut inside its deadline */
	len = walrec_begin_v(b, 3);
	walrec_op_dl(b + len, WALREC_OP_PUT, 1, 0, 0, 99);
	len += WALREC_OP_HDR + 4;
	walrec_seal(b, (uint32_t)len, 7, 1);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	pos = 0;
	CHECK(wal_next_op(&r, &pos, &op) == -EUCLEAN);
	/* in an old OPS record */
	len = walrec_begin(b, WALREC_OPS);
	len += add_op_dl(b + len, WALREC_OP_PUT, "t", "k", "v", 99);
	walrec_seal(b, (uint32_t)len, 7, 1);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	pos = 0;
	CHECK(wal_next_op(&r, &pos, &op) == -EUCLEAN);
	/* a create with 4 bytes after its name, then with 28 */
	len = walrec_begin(b, WALREC_CREATE);
	walrec_create(b + len, 1, 0, 0, 0600, 4, 0);
	len += WALREC_CREATE_FIX;
	b[len++] = 1;
	b[len++] = 't';
	memset(b + len, 0, WALREC_CREATE_EXT);
	walrec_seal(b, (uint32_t)len + 4, 7, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len + 4));
	CHECK(!wal_rec_check(b, len + 4, &r, &why));
	CHECK(wal_get_create(&r, &c) == -EUCLEAN);
	CHECK(walrec_create_ext(b + len, 5000, 0, 7, 3, 0) ==
	      WALREC_CREATE_EXT);
	walrec_seal(b, (uint32_t)len + 8, 7, 0);        /* 8: the TTL alone */
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len + 8));
	CHECK(!wal_rec_check(b, len + 8, &r, &why));
	CHECK(wal_get_create(&r, &c) == -EUCLEAN);
	walrec_seal(b, (uint32_t)len + WALREC_CREATE_EXT, 7, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len + WALREC_CREATE_EXT));
	CHECK(!wal_rec_check(b, len + WALREC_CREATE_EXT, &r, &why));
	CHECK(!wal_get_create(&r, &c) && c.default_ttl == 5000 &&
	      c.max_bytes == 0 && c.max_records == 7 && c.evict == 3 &&
	      c.flags == 0 && !strcmp(c.name, "t"));
	/* with flags: 32 bytes; 30 (neither) is refused */
	CHECK(walrec_create_ext(b + len, 5000, 0, 7, 3, 1) ==
	      WALREC_CREATE_EXT_F);
	walrec_seal(b, (uint32_t)len + WALREC_CREATE_EXT_F, 7, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len + WALREC_CREATE_EXT_F));
	CHECK(!wal_rec_check(b, len + WALREC_CREATE_EXT_F, &r, &why));
	CHECK(!wal_get_create(&r, &c) && c.default_ttl == 5000 &&
	      c.max_records == 7 && c.evict == 3 && c.flags == 1 &&
	      !strcmp(c.name, "t"));
	walrec_seal(b, (uint32_t)len + 30, 7, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len + 30));
	CHECK(!wal_rec_check(b, len + 30, &r, &why));
	CHECK(wal_get_create(&r, &c) == -EUCLEAN);
}

/* An OPS_V record whose version field is 0, or whose u32 after nops is
 * not 0: the decoders refuse it. */
static void bad_headers(void)
{
	unsigned char b[128];
	struct wal_rec r;
	struct wal_opv op;
	const char *why;
	uint32_t pos = 0, n;
	uint64_t v;
	size_t len;

	len = walrec_begin_v(b, 0);
	len += add_op(b + len, WALREC_OP_PUT, "t", "k", "v");
	walrec_seal(b, (uint32_t)len, 7, 1);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	CHECK(r.type == WAL_OPS_V);
	CHECK(wal_ops_version(&r, &v) == -EUCLEAN);
	CHECK(wal_ops_count(&r, &n) == -EUCLEAN);
	CHECK(wal_next_op(&r, &pos, &op) == -EUCLEAN);
	walrec_put64(b + WALREC_HDR + 8, 5);
	walrec_put32(b + WALREC_HDR + 4, 1);    /* the u32 0 is not */
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	CHECK(wal_ops_version(&r, &v) == -EUCLEAN);
	walrec_put32(b + WALREC_HDR + 4, 0);
	walrec_set_crc(b, walrec_crc(b, (uint32_t)len));
	CHECK(!wal_rec_check(b, len, &r, &why));
	CHECK(!wal_ops_version(&r, &v) && v == 5);
	CHECK(wal_next_op(&r, &pos, &op) == 1 && op.klen == 1);
}

int main(void)
{
	char dir[] = "/tmp/test_walrec.XXXXXX", path[256], err[256];
	char dir_dl[] = "/tmp/test_walrec.XXXXXX", path_dl[256];
	static unsigned char want[4096], got[8192];
	struct wal_opts o = { .segment_size = 1 << 20,
			      .sync = WAL_SYNC_NONE };
	struct wal *w;
	size_t n, m;
	ssize_t r;
	int fd, k;

	crc_cases();
	if (!mkdtemp(dir) || wal_open(dir, 1, &o, &w, err, sizeof(err))) {
		fprintf(stderr, "wal_open: %s\n", err);
		return 1;
	}
	append(w);
	wal_close(w);
	if (!mkdtemp(dir_dl) ||
	    wal_open(dir_dl, 7, &o, &w, err, sizeof(err))) {
		fprintf(stderr, "wal_open: %s\n", err);
		return 1;
	}
	append_dl(w);
	CHECK(!wal_write(w));
	wal_close(w);
	n = encode(want);
	snprintf(path, sizeof(path), "%s/wal-%016x.log", dir, 1);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	r = pread(fd, got, sizeof(got), WAL_SEG_HDR);
	/* records 1-6 in dir, 7-9 in dir_dl */
	for (m = 0, k = 0; k < 6; k++)
		m += (walrec_get32(want + m + 4) + 7) & ~7u;
	CHECK(r >= (ssize_t)m);
	CHECK(r >= (ssize_t)m && !memcmp(got, want, m));
	close(fd);
	snprintf(path_dl, sizeof(path_dl), "%s/wal-%016x.log", dir_dl, 7);
	fd = open(path_dl, O_RDONLY);
	CHECK(fd >= 0);
	r = pread(fd, got, sizeof(got), WAL_SEG_HDR);
	CHECK(r >= (ssize_t)(n - m));
	CHECK(r >= (ssize_t)(n - m) && !memcmp(got, want + m, n - m));
	close(fd);
	replay(dir, dir_dl);
	bad_headers();
	bad_expiry();
	unlink(path);
	rmdir(dir);
	unlink(path_dl);
	rmdir(dir_dl);
	if (fails)
		fprintf(stderr, "%d checks failed\n", fails);
	else
		printf("walrec: %zu bytes of 9 records equal the WAL's\n", n);
	return fails ? 1 : 0;
}
