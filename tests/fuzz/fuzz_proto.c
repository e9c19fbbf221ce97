// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_proto.c - libFuzzer target for the protocol validator
 * (src/proto/proto.c): the input is one received message, any bytes.
 *
 * The bytes go into a private heap copy of exactly their size (ASan sees
 * any read past them) and are parsed as a request and as an answer.
 * Input, byte 0 = mode:
 *   even: raw.  The rest of the input is the message, verbatim.
 *   odd: structured.  The harness writes the lengths, so mutations reach
 *     the attribute checks instead of dying at the framing:
 *       [1] nlmsg_type: 0 = TDB_PROTO_FAMILY, else as is
 *       [2..3] nlmsg_flags  [4..7] nlmsg_seq
 *       then the head, verbatim: 20 bytes (struct nlmsgerr) for
 *       NLMSG_ERROR, else 4 (genlmsghdr, or NLMSG_DONE's int),
 *       then attributes, each [0..1] nla_type (with its flag bits),
 *       [2..3] ctl, [4] adj:
 *         ctl bit 15: a nest holding the next (ctl & 15) attributes;
 *         ctl 0x7fXX: a payload of 65531 - (ctl & 15) bytes of filler
 *           (around TDB_VALUE_FRAG), taking no input (rare on purpose:
 *           big messages are slow to copy);
 *         else ctl & 0x1fff payload bytes, from the input (filler when
 *           it runs out) or, with ctl bit 14, all filler; with ctl bit
 *           13 the last one is 0 (a NUL-terminated string);
 *         adj bit 7: nla_len off by (adj & 7) - 4 bytes.
 *     nla_len and nlmsg_len are computed, padding included.
 * Besides the sanitizers it checks what the validator promises:
 *  - it returns 0 or one of the documented errnos, and on failure a
 *    message, an offset inside the message (or 0), and m->nlh only when
 *    the header is trustworthy;
 *  - on success every pointer it leaves lies inside the message
 *    (values are gathered, table names are NUL-terminated there);
 *  - what it accepts the builder can write again, and that parses back
 *    to the same fields, no longer than the original (PAD and unknown
 *    answer attributes are dropped);
 *  - a refusal can be answered: the NLMSG_ERROR built from its extack
 *    fits TDB_PROTO_ERROR_MAX and parses back with the same errno, text
 *    and offset.
 * A broken promise calls abort(), which libFuzzer reports as a crash.
 *
 * Built with -DTDB_FUZZ_SEEDS instead, main() writes a seed corpus of
 * valid messages into the directory given (tests/fuzz/run-fuzz.sh does
 * this before fuzzing).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "fuzz_proto: %s:%d: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

static int known_errno(int rc)
{
	switch (-rc) {
	case 0: case EBADMSG: case EMSGSIZE: case EPROTONOSUPPORT:
	case EOPNOTSUPP: case EINVAL: case E2BIG: case ENAMETOOLONG:
	case ERANGE:      /* a TTL over TDB_TTL_MAX */
		return 1;
	}
	return 0;
}

static int inside(const void *p, size_t n, const unsigned char *buf,
		  size_t len)
{
	const unsigned char *c = p;

	return c >= buf && c <= buf + len && n <= (size_t)(buf + len - c);
}

/* Gathered values: static, as big heap blocks cost ASan an mmap each. */
static unsigned char valbuf[2][TDB_VALUE_MAX + TDB_VALUE_FRAG];

static unsigned char *scratch(size_t n)
{
	unsigned char *p = malloc(n ? n : 1);

	CHECK(p);
	return p;
}

/* The fields that attrs covers are the same in a and b. */
static void same(const struct tdb_proto_msg *a, const struct tdb_proto_msg *b,
		 const unsigned char *aval, const unsigned char *bval)
{
	uint64_t at = a->attrs;     /* 64 bits: TO is bit 32 */

	CHECK(b->attrs == at && b->cmd == a->cmd && b->seq == a->seq &&
	      b->pid == a->pid);
	if (at & TDB_PROTO_BIT(TDB_A_TABLE))
		CHECK(strcmp(a->table, b->table) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_KEY))
		CHECK(a->key_len == b->key_len &&
		      memcmp(a->key, b->key, a->key_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_VALUE))
		CHECK(a->value_len == b->value_len &&
		      memcmp(aval, bval, a->value_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_PREFIX))
		CHECK(a->prefix_len == b->prefix_len &&
		      memcmp(a->prefix, b->prefix, a->prefix_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_CURSOR))
		CHECK(a->cursor_len == b->cursor_len &&
		      memcmp(a->cursor, b->cursor, a->cursor_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_RECORDS))
		CHECK(a->records_len == b->records_len &&
		      a->nrecords == b->nrecords &&
		      memcmp(a->records, b->records, a->records_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_FROM))
		CHECK(a->from_len == b->from_len &&
		      memcmp(a->from, b->from, a->from_len) == 0);
	if (at & TDB_PROTO_BIT(TDB_A_TO))
		CHECK(a->to_len == b->to_len &&
		      memcmp(a->to, b->to, a->to_len) == 0);
	CHECK(a->flags == b->flags && a->txn == b->txn &&
	      a->limit == b->limit && a->max_extents == b->max_extents &&
	      a->uid == b->uid && a->gid == b->gid && a->mode == b->mode &&
	      a->table_flags == b->table_flags);
	CHECK(memcmp(&a->stat, &b->stat, sizeof(a->stat)) == 0);
	CHECK(memcmp(&a->counters, &b->counters, sizeof(a->counters)) == 0);
}

static void check_ok(const unsigned char *buf, size_t len,
		     enum tdb_proto_dir dir, const struct tdb_proto_msg *m)
{
	uint32_t n = m->nlh->nlmsg_len;
	unsigned char *val, *out, *val2;
	struct tdb_proto_msg m2, m3;
	long size, built;

	CHECK((const unsigned char *)m->nlh == buf && n <= len &&
	      n <= TDB_PROTO_MSG_MAX && n % 4 == 0);
	if (m->type != TDB_PROTO_FAMILY) {
		/* NLMSG_ERROR / NLMSG_DONE */
		CHECK(dir == TDB_PROTO_ANSWER);
		CHECK(m->error <= 0 && m->error >= -4095);
		if (m->ext.msg)
			CHECK(inside(m->ext.msg, strlen(m->ext.msg) + 1, buf,
				     n));
		if (m->orig)
			CHECK(inside(m->orig, sizeof(*m->orig), buf, n));
		return;
	}
	if (m->attrs & TDB_PROTO_BIT(TDB_A_TABLE))
		CHECK(inside(m->table, m->table_len + 1, buf, n) &&
		      strlen(m->table) == m->table_len &&
		      m->table_len >= 1 && m->table_len <= TDB_NAME_MAX);
	if (m->attrs & TDB_PROTO_BIT(TDB_A_KEY))
		CHECK(inside(m->key, m->key_len, buf, n) &&
		      m->key_len >= TDB_KEY_MIN && m->key_len <= TDB_KEY_MAX);
	if (m->attrs & TDB_PROTO_BIT(TDB_A_PREFIX))
		CHECK(inside(m->prefix, m->prefix_len, buf, n) &&
		      m->prefix_len <= TDB_KEY_MAX);
	if (m->attrs & TDB_PROTO_BIT(TDB_A_CURSOR))
		CHECK(inside(m->cursor, m->cursor_len, buf, n) &&
		      m->cursor_len >= 1 && m->cursor_len <= TDB_CURSOR_MAX);
	if (m->attrs & TDB_PROTO_BIT(TDB_A_RECORDS)) {
		/* every record the parser let through lies inside, and
		 * walking them ends exactly at the attribute's end */
		struct tdb_proto_record r;
		uint32_t off = 0, cnt = 0;

		CHECK(inside(m->records, m->records_len, buf, n) &&
		      m->records_len <= TDB_RESTORE_BULK_MAX);
		while (tdb_proto_record_next(m, &off, &r)) {
			CHECK(inside(r.key, r.klen, buf, n) &&
			      inside(r.val, r.vlen, buf, n) &&
			      r.klen >= TDB_KEY_MIN &&
			      r.klen <= TDB_KEY_MAX && r.version != 0);
			cnt++;
		}
		CHECK(off == m->records_len && cnt == m->nrecords &&
		      cnt >= 1);
	}
	val = valbuf[0];
	if (m->attrs & TDB_PROTO_BIT(TDB_A_VALUE)) {
		CHECK(m->value_len <= TDB_VALUE_MAX && m->value_frags >= 1 &&
		      m->value_frags <= TDB_VALUE_FRAGS_MAX);
		CHECK(inside(m->value, m->value_frags > 1 ? TDB_VALUE_FRAG :
			     m->value_len, buf, n));
		tdb_proto_value_copy(m, val);
	}

	/* build it again from the parsed fields, contiguous value */
	m2 = *m;
	m2.value = val;
	size = tdb_proto_size(dir, &m2, NULL);
	CHECK(size > 0 && size <= (long)n);
	out = scratch((size_t)size);
	built = tdb_proto_build(out, (size_t)size, dir, &m2, NULL);
	CHECK(built == size);
	CHECK(tdb_proto_build(out, (size_t)size - 1, dir, &m2, NULL) ==
	      -EMSGSIZE);
	CHECK(tdb_proto_parse(out, (size_t)size, dir, &m3, NULL) == 0);
	val2 = valbuf[1];
	if (m3.attrs & TDB_PROTO_BIT(TDB_A_VALUE))
		tdb_proto_value_copy(&m3, val2);
	same(m, &m3, val, val2);
	free(out);
}

static void check_refused(const unsigned char *buf, size_t len,
			  enum tdb_proto_dir dir, int rc,
			  const struct tdb_proto_msg *m,
			  const struct tdb_proto_extack *ext)
{
	unsigned char *out;
	struct tdb_proto_msg a;
	long n;

	(void)dir;
	CHECK(ext->msg != NULL);
	if (!m->nlh)
		return;                 /* nothing to answer */
	CHECK((const unsigned char *)m->nlh == buf && len >= NLMSG_HDRLEN &&
	      m->nlh->nlmsg_len <= len);
	CHECK(ext->offset == 0 ||
	      (ext->offset >= NLMSG_HDRLEN && ext->offset < m->nlh->nlmsg_len));
	out = scratch(TDB_PROTO_ERROR_MAX);
	n = tdb_proto_error(out, TDB_PROTO_ERROR_MAX, m->nlh, rc, ext);
	CHECK(n > 0 && n <= TDB_PROTO_ERROR_MAX);
	CHECK(tdb_proto_parse(out, (size_t)n, TDB_PROTO_ANSWER, &a, NULL) == 0);
	CHECK(a.type == NLMSG_ERROR && a.error == rc &&
	      a.seq == m->nlh->nlmsg_seq && a.ext.offset == ext->offset &&
	      a.ext.miss_type == ext->miss_type &&
	      strncmp(a.ext.msg, ext->msg, TDB_PROTO_EXTACK_MAX) == 0);
	free(out);
}

/* --- structured inputs ----------------------------------------------------- */

#define SMAX (TDB_PROTO_MSG_MAX + 2 * 65536u)
#define FILLER 'a'              /* a valid table name byte */

static unsigned char smsg[SMAX];

struct sin {
	const uint8_t *p;
	size_t left;
	size_t len;             /* bytes of smsg written */
};

static int take(struct sin *in, void *dst, size_t n)
{
	size_t k = n < in->left ? n : in->left;

	memcpy(dst, in->p, k);
	memset((char *)dst + k, FILLER, n - k);
	in->p += k;
	in->left -= k;
	return k == n;
}

/* Up to `count` attributes (all that remain if count < 0). */
static void s_attrs(struct sin *in, int count, int depth)
{
	while (count != 0 && in->left >= 5) {
		uint8_t hdr[5];
		uint16_t type, ctl;
		size_t at = in->len, plen;
		struct nlattr *a;

		take(in, hdr, 5);
		type = (uint16_t)(hdr[0] | hdr[1] << 8);
		ctl = (uint16_t)(hdr[2] | hdr[3] << 8);
		if (at + 4 + 65536 > SMAX)
			return;
		a = (struct nlattr *)(smsg + at);
		a->nla_type = type;
		in->len += 4;
		if ((ctl & 0x8000) && depth < 3) {
			s_attrs(in, ctl & 15, depth + 1);
			plen = in->len - at - 4;
		} else {
			bool big = (ctl & 0xff00) == 0x7f00;

			plen = big ? 65531u - (ctl & 15) : ctl & 0x1fffu;
			if (big || (ctl & 0x4000))
				memset(smsg + in->len, FILLER, plen);
			else
				take(in, smsg + in->len, plen);
			if (!big && (ctl & 0x2000) && plen)
				smsg[in->len + plen - 1] = 0;
			in->len += plen;
			memset(smsg + in->len, 0, NLA_ALIGN(plen) - plen);
			in->len = NLA_ALIGN(in->len);
		}
		a->nla_len = (uint16_t)(4 + plen);
		if (hdr[4] & 0x80)
			a->nla_len = (uint16_t)(a->nla_len + (hdr[4] & 7) - 4);
		if (count > 0)
			count--;
	}
}

static size_t structured(const uint8_t *data, size_t size)
{
	struct sin in = { data + 1, size - 1, 0 };
	struct nlmsghdr *nlh = (struct nlmsghdr *)smsg;
	uint8_t h[7];

	take(&in, h, sizeof(h));
	memset(nlh, 0, sizeof(*nlh));
	nlh->nlmsg_type = h[0] ? h[0] : TDB_PROTO_FAMILY;
	nlh->nlmsg_flags = (uint16_t)(h[1] | h[2] << 8);
	memcpy(&nlh->nlmsg_seq, h + 3, 4);
	in.len = NLMSG_HDRLEN;
	take(&in, smsg + in.len, nlh->nlmsg_type == NLMSG_ERROR ? 20 : 4);
	in.len += nlh->nlmsg_type == NLMSG_ERROR ? 20 : 4;
	s_attrs(&in, -1, 0);
	nlh->nlmsg_len = (uint32_t)in.len;
	return in.len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum tdb_proto_dir dirs[] = {
		TDB_PROTO_REQUEST, TDB_PROTO_ANSWER,
	};
	const uint8_t *msg = data + 1;
	unsigned char *buf;
	size_t i;

	if (size == 0)
		return 0;
	if (data[0] & 1) {
		size = structured(data, size);
		msg = smsg;
	} else {
		size--;
	}
	buf = scratch(size);
	if (size)
		memcpy(buf, msg, size);
	for (i = 0; i < 2; i++) {
		struct tdb_proto_extack ext;
		struct tdb_proto_msg m;
		int rc = tdb_proto_parse(buf, size, dirs[i], &m, &ext);

		CHECK(known_errno(rc));
		if (rc == 0)
			check_ok(buf, size, dirs[i], &m);
		else
			check_refused(buf, size, dirs[i], rc, &m, &ext);
	}
	free(buf);
	return 0;
}

#ifdef TDB_FUZZ_SEEDS
/* --- the seed corpus ----------------------------------------------------- */

static uint32_t seedbuf[(TDB_PROTO_MSG_MAX + 3) / 4];
static unsigned char bytes[2 * TDB_VALUE_FRAG];

static unsigned char seedin[TDB_PROTO_MSG_MAX + 2];

static void put_file(const char *dir, int *n, const void *p, size_t len)
{
	char path[4096];
	FILE *f;

	LLVMFuzzerTestOneInput(p, len);         /* a self-check */
	snprintf(path, sizeof(path), "%s/seed-%03d", dir, (*n)++);
	f = fopen(path, "wb");
	CHECK(f && fwrite(p, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

/* One attribute (and what it nests) as structured input. */
static size_t s_emit(unsigned char *o, const struct nlattr *a, int nested)
{
	uint16_t plen = (uint16_t)(a->nla_len - 4), ctl;
	size_t k = 5;

	o[0] = (unsigned char)a->nla_type;
	o[1] = (unsigned char)(a->nla_type >> 8);
	o[4] = 0;
	if (nested) {
		const struct nlattr *in;
		int count = 0;

		for (in = (const void *)(a + 1);
		     (const char *)in < (const char *)a + a->nla_len;
		     in = (const void *)((const char *)in +
					 NLA_ALIGN(in->nla_len))) {
			k += s_emit(o + k, in, 0);
			count++;
		}
		CHECK(count < 16);
		ctl = (uint16_t)(0x8000 | count);
	} else if (plen > 0x1fff) {
		CHECK(plen >= 65516 && plen <= 65531);
		ctl = (uint16_t)(0x7f00 | (65531 - plen));
	} else {
		ctl = plen;
		memcpy(o + k, a + 1, plen);
		k += plen;
	}
	o[2] = (unsigned char)ctl;
	o[3] = (unsigned char)(ctl >> 8);
	return k;
}

/* The message, raw (mode 0) and, for family messages, structured. */
static void write_seed(const char *dir, int *n, const void *msg, long len)
{
	const struct nlmsghdr *nlh = msg;
	const struct nlattr *a;
	size_t k;

	CHECK(len > 0 && (size_t)len < sizeof(seedin));
	seedin[0] = 0;
	memcpy(seedin + 1, msg, (size_t)len);
	put_file(dir, n, seedin, (size_t)len + 1);
	if (nlh->nlmsg_type != TDB_PROTO_FAMILY)
		return;
	seedin[0] = 1;
	seedin[1] = 0;
	seedin[2] = (unsigned char)nlh->nlmsg_flags;
	seedin[3] = (unsigned char)(nlh->nlmsg_flags >> 8);
	memcpy(seedin + 4, &nlh->nlmsg_seq, 4);
	memcpy(seedin + 8, nlh + 1, 4);
	k = 12;
	for (a = (const void *)((const char *)msg + 20);
	     (const char *)a < (const char *)msg + len;
	     a = (const void *)((const char *)a + NLA_ALIGN(a->nla_len)))
		k += s_emit(seedin + k, a, (a->nla_type & NLA_F_NESTED) != 0);
	put_file(dir, n, seedin, k);
	/* the structured form builds the same message */
	CHECK(structured(seedin, k) == (size_t)len &&
	      memcmp(smsg, msg, (size_t)len) == 0);
}

int main(int argc, char **argv)
{
	struct tdb_proto_extack e = { "key is longer than 4096 bytes", 28, 0 };
	struct tdb_proto_msg m;
	int n = 0, dir;
	unsigned int cmd, i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 7 + 1);
	for (dir = TDB_PROTO_REQUEST; dir <= TDB_PROTO_ANSWER; dir++)
	for (cmd = 1; cmd <= TDB_CMD_MAX; cmd++) {
		uint32_t t;
		uint64_t all = 0;       /* attribute bits go past 31 */
		static unsigned char recs[2 * TDB_RESTORE_REC_HDR + 8];

		memset(&m, 0, sizeof(m));
		m.cmd = (uint8_t)cmd;
		m.seq = cmd * 100 + (unsigned int)dir;
		m.table = "sessions";
		m.key = "user:1234";
		m.key_len = 9;
		m.value = "{\"ttl\":30}";
		m.value_len = 10;
		m.flags = TDB_PUT_NOOVERWRITE;
		m.txn = 7;
		m.prefix = "user:";
		m.prefix_len = 5;
		m.limit = 100;
		m.cursor = "\x01\x02\x03\x04";
		m.cursor_len = 4;
		m.max_extents = 64;
		m.uid = 1000;
		m.gid = 1000;
		m.mode = 0640;
		m.stat.present = 0x3ffc;
		m.stat.records = 3;
		m.stat.page_size = 4096;
		m.stat.extents = 1;
		m.stat.max_extents = 512;
		m.counters.present = 0x1fc;
		m.counters.tables = 2;
		/* RESTORE_BULK: two packed records */
		tdb_proto_record_pack(recs, "k1", 2, "v1", 2, 5, 0);
		tdb_proto_record_pack(recs + TDB_RESTORE_REC_HDR + 4, "key2",
				      4, NULL, 0, 9, 1796000000123ull);
		m.records = recs;
		m.records_len = sizeof(recs);
		/* every attribute the command takes: alone, one it does
		 * not take is "not valid", one it takes at worst leaves
		 * another missing */
		for (t = 2; t <= TDB_A_MAX; t++) {
			struct tdb_proto_extack x;

			m.attrs = TDB_PROTO_BIT(t);
			if (tdb_proto_size(dir, &m, &x) >= 0 ||
			    strcmp(x.msg, "attribute not valid in this "
				   "message") != 0)
				all |= TDB_PROTO_BIT(t);
		}
		m.attrs = all;
		if (tdb_proto_size(dir, &m, NULL) < 0)
			continue;       /* acked: no answer message */
		write_seed(argv[1], &n, seedbuf,
			   tdb_proto_build(seedbuf, sizeof(seedbuf), dir, &m,
					   NULL));
	}
	/* a value in two fragments (the filler, as structured input has) */
	memset(bytes, FILLER, sizeof(bytes));
	memset(&m, 0, sizeof(m));
	m.cmd = TDB_CMD_PUT;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
		  TDB_PROTO_BIT(TDB_A_VALUE);
	m.table = "t";
	m.key = "k";
	m.key_len = 1;
	m.value = bytes;
	m.value_len = TDB_VALUE_FRAG + 5;
	write_seed(argv[1], &n, seedbuf, tdb_proto_build(seedbuf,
		   sizeof(seedbuf), TDB_PROTO_REQUEST, &m, NULL));
	/* errors, acks, dumps' ends */
	write_seed(argv[1], &n, bytes, tdb_proto_error(bytes, sizeof(bytes),
		   (void *)seedbuf, -E2BIG, &e));
	e.miss_type = TDB_A_TABLE;
	write_seed(argv[1], &n, bytes, tdb_proto_error(bytes, sizeof(bytes),
		   (void *)seedbuf, -EINVAL, &e));
	write_seed(argv[1], &n, bytes, tdb_proto_error(bytes, sizeof(bytes),
		   (void *)seedbuf, 0, NULL));
	write_seed(argv[1], &n, bytes, tdb_proto_done(bytes, sizeof(bytes),
		   (void *)seedbuf, 0, NULL));
	write_seed(argv[1], &n, bytes, tdb_proto_done(bytes, sizeof(bytes),
		   (void *)seedbuf, -ENOENT, &e));
	printf("fuzz_proto: %d seeds in %s\n", n, argv[1]);
	return 0;
}
#endif
