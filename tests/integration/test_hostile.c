// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_hostile.c - clients that break the rules on purpose, with raw
 * sockets and raw mappings of their rings (the codec and the ring code,
 * never libtdbclient), while two well-behaved pingers (rings, socket)
 * keep working and must see no error and no stall.
 *
 *  garbage     random bytes whose first length cannot be framed: the
 *              connection is dropped, violations +1 (ten times);
 *  malformed   one connection sends messages with bad attributes, lengths,
 *              types, flags, versions and commands: each gets NLMSG_ERROR
 *              with the documented errno, the request's seq, an extack
 *              text and (where an attribute is at fault) its offset or the
 *              missing type; STATS still works after them all and no
 *              violation is counted;
 *  oversized   nlmsg_len over TDB_PROTO_MSG_MAX, or under 16: dropped,
 *              violations +1 each;
 *  attach2     ATTACH twice: the second gets -EBUSY, the connection stays;
 *  seals       the ring memfds cannot be shrunk, grown or sealed further
 *              (holes punched in their data only zero this client's own
 *              pages: the rings go on); the watch feed is passed
 *              read-only, and cannot be written through a re-opened
 *              descriptor either;
 *  scribble    after ATTACH, garbage in the submission ring's prod index,
 *              in its messages, or in the completion ring's cons index:
 *              the client is dropped and a violation counted; garbage in
 *              the header's constants, flags and futex word changes
 *              nothing tdbd relies on (it answers, or drops the client
 *              with a violation; it never stalls or crashes);
 *  attachflood STATS then ATTACH pipelined, never read: every ATTACH is
 *              refused (-EAGAIN: its descriptors cannot pass queued
 *              answers) and leaves no descriptor behind in tdbd;
 *  compflip    the completion data mapped writable by the client and
 *              rewritten by a thread while tdbd answers into it: tdbd
 *              builds answers in private memory and copies them in
 *              once, so it never writes out of bounds (ASan) or dies;
 *  unwatch     a feed descriptor kept after UNWATCH sees no later change
 *              (the last watch retires the feed; a new WATCH gets a new
 *              one);
 *  deaf        a ring client that never reads its completions, and a
 *              socket client that never reads its socket: each is
 *              throttled, then cut off after --client-deadline (2 s):
 *              stuck +1, throttled back to its baseline.
 *
 * After each, the gauges return to the baseline and tdbd keeps serving;
 * at the end it stops cleanly.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "harness.h"
#include "ring.h"

#define BIG_VALUE (32u << 10)

static struct tdbc *ctl;        /* the test's own connection: STATS */

/* --- counters ----------------------------------------------------------- */

struct expect {
	const struct tdbc_stats *base;
	uint64_t violations, stuck;     /* increments */
};

static bool settled(const struct tdbc_stats *st, const void *arg)
{
	const struct expect *e = arg;

	return h_gauges_equal(st, e->base) &&
	       st->violations == e->base->violations + e->violations &&
	       st->stuck == e->base->stuck + e->stuck;
}

/* The gauges are back (whatever the counters say). */
static bool settled_any(const struct tdbc_stats *st, const void *arg)
{
	return h_gauges_equal(st, arg);
}

/* The gauges are back and the counters moved by exactly this much. */
static void expect_settled(const struct tdbc_stats *base, uint64_t viol,
			   uint64_t stuck, const char *what)
{
	struct expect e = { base, viol, stuck };
	struct tdbc_stats st;

	if (h_wait_stats(ctl, &st, settled, &e, 5000))
		return;
	h_print_stats("baseline", base);
	h_print_stats("now", &st);
	h_fail(__FILE__, __LINE__, "settled", "%s: want violations +%llu, "
	       "stuck +%llu and the gauges back at the baseline", what,
	       (unsigned long long)viol, (unsigned long long)stuck);
}

/* --- hand-made messages ---------------------------------------------------- */

struct mb {
	uint32_t words[2048];   /* aligned */
	size_t len;
};

static unsigned char *mb_bytes(struct mb *b)
{
	return (unsigned char *)b->words;
}

static void mb_start(struct mb *b, uint16_t type, uint16_t flags,
		     uint32_t seq, uint8_t cmd, uint8_t version)
{
	struct nlmsghdr nh = { .nlmsg_type = type, .nlmsg_flags = flags,
			       .nlmsg_seq = seq };
	unsigned char g[4] = { cmd, version, 0, 0 };

	memset(b, 0, sizeof(*b));
	memcpy(mb_bytes(b), &nh, sizeof(nh));
	memcpy(mb_bytes(b) + 16, g, 4);
	b->len = 20;
}

/* An attribute with a payload of plen bytes and nla_len = nla_len (0:
 * the true length); returns its offset. */
static uint32_t mb_attr_len(struct mb *b, uint16_t type, const void *p,
			    size_t plen, uint16_t nla_len)
{
	uint32_t off = (uint32_t)b->len;
	uint16_t hdr[2] = { nla_len ? nla_len : (uint16_t)(4 + plen), type };

	CHECK(b->len + 4 + plen + 4 <= sizeof(b->words), "message too big");
	memcpy(mb_bytes(b) + b->len, hdr, 4);
	if (plen)
		memcpy(mb_bytes(b) + b->len + 4, p, plen);
	b->len += (4 + plen + 3) & ~(size_t)3;
	return off;
}

static uint32_t mb_attr(struct mb *b, uint16_t type, const void *p,
			size_t plen)
{
	return mb_attr_len(b, type, p, plen, 0);
}

static uint32_t mb_str(struct mb *b, uint16_t type, const char *s)
{
	return mb_attr(b, type, s, strlen(s) + 1);
}

static void mb_end(struct mb *b)
{
	uint32_t len = (uint32_t)b->len;

	memcpy(mb_bytes(b), &len, 4);
}

/* Send b and check the NLMSG_ERROR it gets. */
static void expect_error(struct h_raw *r, struct mb *b, int err,
			 uint32_t off, uint32_t miss, const char *what)
{
	struct nlmsghdr nh;
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg a;
	void *buf = malloc(TDB_PROTO_MSG_MAX);
	long n;
	int perr;

	CHECK(buf, "out of memory");
	memcpy(&nh, mb_bytes(b), sizeof(nh));
	CHECK(h_raw_send(r, mb_bytes(b), b->len) == 0, "%s: send", what);
	n = h_raw_recv(r, buf, TDB_PROTO_MSG_MAX, 10000);
	CHECK(n > 0, "%s: no answer (%s)", what,
	      n ? h_errname((int)n) : "connection closed");
	perr = tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a, &ext);
	CHECK(perr == 0, "%s: the answer does not parse: %s", what, ext.msg);
	CHECK(a.type == NLMSG_ERROR, "%s: answer type %u", what, a.type);
	CHECK(a.seq == nh.nlmsg_seq, "%s: answer seq %u, want %u", what,
	      a.seq, nh.nlmsg_seq);
	CHECK(a.error == err, "%s: error %s (%s), want %s", what,
	      h_errname(a.error), a.ext.msg ? a.ext.msg : "no text",
	      h_errname(err));
	CHECK(a.ext.msg && a.ext.msg[0], "%s: no extack text", what);
	if (off)
		CHECK(a.ext.offset == off, "%s: extack offset %u, want %u "
		      "(%s)", what, a.ext.offset, off, a.ext.msg);
	if (miss)
		CHECK(a.ext.miss_type == miss, "%s: missing type %u, want %u",
		      what, a.ext.miss_type, miss);
	free(buf);
}

/* A STATS over the raw connection must work. */
static void raw_stats_ok(struct h_raw *r, const char *what)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	unsigned int parts = 0;
	char msg[256];
	int err = h_raw_call(r, &m, NULL, NULL, &parts, msg, sizeof(msg));

	CHECK(err == 0 && parts == 1, "%s: STATS on the same connection: "
	      "%s (%s)", what, h_errname(err), msg);
}

/* --- scenarios: the socket ---------------------------------------------------- */

static void garbage(const char *sock)
{
	struct tdbc_stats base;
	uint64_t rnd = 12345;
	int i, k;

	h_stats(ctl, &base);
	for (i = 0; i < 10; i++) {
		uint32_t junk[1024];
		struct h_raw r;

		for (k = 0; k < 1024; k++)
			junk[k] = (uint32_t)h_rand(&rnd);
		/* a first length that cannot be framed: not a multiple of
		 * 4, or over the maximum, or under a header */
		switch (i % 3) {
		case 0: junk[0] |= 1; break;
		case 1: junk[0] = TDB_PROTO_MSG_MAX + 4 +
				  (junk[0] & 0xfff0); break;
		case 2: junk[0] &= 0xc; break;
		}
		h_raw_connect(&r, sock);
		/* tdbd may close before it has read it all: ignore EPIPE */
		(void)h_raw_send(&r, junk, sizeof(junk));
		CHECK(h_raw_wait_closed(&r, 5000), "garbage %d: tdbd kept the "
		      "connection", i);
		h_raw_close(&r);
	}
	expect_settled(&base, 10, 0, "garbage");
	h_note("garbage: 10 connections dropped, 10 violations");
}

static void malformed(const char *sock)
{
	static const char longname[] = "t123456789012345678901234567890123"
				       "4567890123456789012345678901234";
	unsigned char bigkey[TDB_KEY_MAX + 1];
	struct tdbc_stats base;
	struct h_raw r;
	struct mb b;
	uint32_t seq = 100, off, u32 = 0, bad16 = 7;
	uint16_t get = NLM_F_REQUEST;   /* GET takes a reply: no ACK */

	memset(bigkey, 'k', sizeof(bigkey));
	h_stats(ctl, &base);
	h_raw_connect(&r, sock);

	/* a bad table name */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	off = mb_str(&b, TDB_A_TABLE, "a/b");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, off, 0, "table name with '/'");

	/* a u32 attribute of 2 bytes */
	mb_start(&b, TDB_PROTO_FAMILY, NLM_F_REQUEST | NLM_F_ACK, ++seq,
		 TDB_CMD_PUT, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_attr(&b, TDB_A_VALUE, "v", 1);
	off = mb_attr(&b, TDB_A_FLAGS, &bad16, 2);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, off, 0, "FLAGS of 2 bytes");

	/* an unknown attribute */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	off = mb_attr(&b, 99, &u32, 4);
	mb_end(&b);
	expect_error(&r, &b, -EOPNOTSUPP, off, 0, "attribute type 99");

	/* an unknown command */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, 200, 1);
	mb_end(&b);
	expect_error(&r, &b, -EOPNOTSUPP, 0, 0, "command 200");

	/* a version nobody speaks */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 7);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -EPROTONOSUPPORT, 0, 0, "version 7");

	/* a required attribute missing */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, 0, TDB_A_KEY, "GET without KEY");

	/* nla_len running past the message */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr_len(&b, TDB_A_KEY, "k", 1, 200);
	mb_end(&b);
	expect_error(&r, &b, -EBADMSG, 0, 0, "nla_len past the end");

	/* a duplicate attribute */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	off = mb_attr(&b, TDB_A_KEY, "j", 1);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, off, 0, "KEY twice");

	/* another nlmsg_type */
	mb_start(&b, TDB_PROTO_FAMILY + 1, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -EOPNOTSUPP, 0, 0, "nlmsg_type 0x21");

	/* NLM_F_DUMP on a command that is not a dump */
	mb_start(&b, TDB_PROTO_FAMILY, get | NLM_F_DUMP, ++seq, TDB_CMD_GET,
		 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, 0, 0, "GET with NLM_F_DUMP");

	/* no NLM_F_REQUEST */
	mb_start(&b, TDB_PROTO_FAMILY, 0, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, 0, 0, "GET without NLM_F_REQUEST");

	/* a header and no genlmsghdr */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	b.len = 16;
	mb_end(&b);
	expect_error(&r, &b, -EBADMSG, 0, 0, "no genlmsghdr");

	/* an empty key */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	off = mb_attr(&b, TDB_A_KEY, NULL, 0);
	mb_end(&b);
	expect_error(&r, &b, -EINVAL, off, 0, "empty key");

	/* a key over 4096 bytes */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	mb_str(&b, TDB_A_TABLE, "t");
	off = mb_attr(&b, TDB_A_KEY, bigkey, sizeof(bigkey));
	mb_end(&b);
	expect_error(&r, &b, -E2BIG, off, 0, "key of 4097 bytes");

	/* a table name of 65 bytes */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	off = mb_str(&b, TDB_A_TABLE, longname);
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -ENAMETOOLONG, off, 0, "table name of 65");

	/* well-formed, but the table does not exist */
	mb_start(&b, TDB_PROTO_FAMILY, get, ++seq, TDB_CMD_GET, 1);
	off = mb_str(&b, TDB_A_TABLE, "nosuchtable");
	mb_attr(&b, TDB_A_KEY, "k", 1);
	mb_end(&b);
	expect_error(&r, &b, -ENOENT, off, 0, "no such table");

	raw_stats_ok(&r, "malformed");
	h_raw_close(&r);
	expect_settled(&base, 0, 0, "malformed");
	h_note("malformed: 16 refusals with extacks, connection kept");
}

static void oversized(const char *sock)
{
	static const uint32_t lens[] = { TDB_PROTO_MSG_MAX + 4, 0xfffffff0u,
					 8, 0 };
	struct tdbc_stats base;
	unsigned int i;

	h_stats(ctl, &base);
	for (i = 0; i < 4; i++) {
		struct h_raw r;
		struct mb b;

		h_raw_connect(&r, sock);
		raw_stats_ok(&r, "oversized (before)");
		mb_start(&b, TDB_PROTO_FAMILY, NLM_F_REQUEST, 1,
			 TDB_CMD_GET, 1);
		mb_str(&b, TDB_A_TABLE, "t");
		mb_attr(&b, TDB_A_KEY, "k", 1);
		b.len = 64;
		memcpy(mb_bytes(&b), &lens[i], 4);
		(void)h_raw_send(&r, mb_bytes(&b), b.len);
		CHECK(h_raw_wait_closed(&r, 5000), "nlmsg_len %u: tdbd kept "
		      "the connection", lens[i]);
		h_raw_close(&r);
	}
	expect_settled(&base, 4, 0, "oversized");
	h_note("oversized/undersized nlmsg_len: 4 connections dropped");
}

/* --- raw rings ------------------------------------------------------------------ */

struct rr {
	struct h_raw r;
	int fds[4];             /* sub, comp, eventfd, comp eventfd */
	size_t span, sub_size, comp_size;
	unsigned char *sub_hdr, *sub_data, *comp_hdr;
	const unsigned char *comp_data;
	struct tdb_ring sub, comp;
	uint32_t seq;
};

static size_t memfd_span(int fd)
{
	struct statfs sfs;

	CHECK(fstatfs(fd, &sfs) == 0, "fstatfs: %s", strerror(errno));
	return (unsigned long)sfs.f_type == HUGETLBFS_MAGIC ?
	       (size_t)sfs.f_bsize : 4096;
}

static void *map(int fd, size_t len, int prot, size_t off)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	return p;
}

/* ATTACH over a raw socket and map the rings as a client would. */
static void rr_attach(struct rr *x, const char *sock)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_ATTACH };
	struct stat st;
	char msg[256];
	int err;

	memset(x, 0, sizeof(*x));
	h_raw_connect(&x->r, sock);
	err = h_raw_call(&x->r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "ATTACH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(&x->r, x->fds, 4) == 4, "ATTACH brought no fds");
	x->span = memfd_span(x->fds[0]);
	CHECK(fstat(x->fds[0], &st) == 0, "fstat");
	x->sub_size = (size_t)st.st_size - x->span;
	CHECK(fstat(x->fds[1], &st) == 0, "fstat");
	x->comp_size = (size_t)st.st_size - x->span;
	x->sub_hdr = map(x->fds[0], x->span, PROT_READ | PROT_WRITE, 0);
	x->sub_data = map(x->fds[0], x->sub_size, PROT_READ | PROT_WRITE,
			  x->span);
	x->comp_hdr = map(x->fds[1], x->span, PROT_READ | PROT_WRITE, 0);
	x->comp_data = map(x->fds[1], x->comp_size, PROT_READ, x->span);
	err = tdb_ring_attach_producer(&x->sub, x->sub_hdr, x->sub_data,
				       x->sub_size, TDB_RING_SUBMIT);
	CHECK(err == 0, "attach sub: %s", tdb_ring_error(&x->sub));
	err = tdb_ring_attach_consumer(&x->comp, x->comp_hdr,
				       x->comp_data, x->comp_size,
				       TDB_RING_COMPLETE);
	CHECK(err == 0, "attach comp: %s", tdb_ring_error(&x->comp));
	tdb_ring_set_eventfd(&x->sub, x->fds[2]);
}

static void rr_close(struct rr *x)
{
	int i;

	tdb_ring_detach(&x->sub);
	tdb_ring_detach(&x->comp);
	munmap(x->sub_hdr, x->span);
	munmap(x->sub_data, x->sub_size);
	munmap(x->comp_hdr, x->span);
	munmap((void *)x->comp_data, x->comp_size);
	for (i = 0; i < 4; i++)
		close(x->fds[i]);
	h_raw_close(&x->r);
}

/* Queue a request in the submission ring (not published): 0 or -EAGAIN. */
static int rr_queue(struct rr *x, struct tdb_proto_msg *m)
{
	long size = tdb_proto_size(TDB_PROTO_REQUEST, m, NULL);
	void *p;

	CHECK(size > 0, "size");
	m->seq = ++x->seq;
	p = tdb_ring_reserve(&x->sub, (size_t)size);
	if (!p) {
		CHECK(errno == EAGAIN, "reserve: %s", strerror(errno));
		return -EAGAIN;
	}
	CHECK(tdb_proto_build(p, (size_t)size, TDB_PROTO_REQUEST, m, NULL) ==
	      size, "build");
	CHECK(tdb_ring_commit(&x->sub, (size_t)size) == 0, "commit");
	return 0;
}

static void rr_publish(struct rr *x)
{
	CHECK(tdb_ring_publish(&x->sub) >= 0, "publish: %s",
	      tdb_ring_error(&x->sub));
}

struct got {
	int n;
	struct tdb_proto_msg m;
	unsigned char copy[512];
};

static int got_one(void *arg, const struct nlmsghdr *nlh)
{
	struct got *g = arg;
	struct tdb_proto_extack ext;

	CHECK(nlh->nlmsg_len <= sizeof(g->copy), "a %u-byte answer",
	      nlh->nlmsg_len);
	memcpy(g->copy, nlh, nlh->nlmsg_len);
	CHECK(tdb_proto_parse(g->copy, nlh->nlmsg_len, TDB_PROTO_ANSWER,
			      &g->m, &ext) == 0, "an answer that does not "
	      "parse: %s", ext.msg);
	g->n++;
	return 0;
}

/* Wait for one answer on the completion ring: true if it came. */
static bool rr_answer(struct rr *x, struct got *g, int timeout_ms)
{
	uint64_t end = h_now_ms() + (uint64_t)timeout_ms;

	g->n = 0;
	while (h_now_ms() < end) {
		int rc = tdb_ring_consume(&x->comp, 1, got_one, g);

		CHECK(rc >= 0, "consume: %s", tdb_ring_error(&x->comp));
		if (g->n)
			return true;
		h_sleep_ms(1);
	}
	return false;
}

/* STATS through the rings must be answered. */
static void rr_stats_ok(struct rr *x, const char *what)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	struct got g;

	CHECK(rr_queue(x, &m) == 0, "%s: queue", what);
	rr_publish(x);
	CHECK(rr_answer(x, &g, 10000), "%s: no answer on the ring", what);
	CHECK(g.m.type == TDB_PROTO_FAMILY && g.m.cmd == TDB_CMD_STATS &&
	      g.m.seq == m.seq, "%s: answer type %u cmd %u seq %u", what,
	      g.m.type, g.m.cmd, g.m.seq);
}

/* Poke the daemon: the submission ring's eventfd. */
static void rr_kick(struct rr *x)
{
	uint64_t one = 1;

	CHECK(write(x->fds[2], &one, sizeof(one)) == sizeof(one), "eventfd");
}

static bool two_more_rings(const struct tdbc_stats *st, const void *arg)
{
	return st->rings == ((const struct tdbc_stats *)arg)->rings + 2;
}

static void attach_twice(const char *sock)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_ATTACH };
	struct tdbc_stats base, st;
	char msg[256];
	struct rr x;
	int err;

	h_stats(ctl, &base);
	rr_attach(&x, sock);
	/* (tdbd counts the rings just after it sent the ack: wait) */
	CHECK(h_wait_stats(ctl, &st, two_more_rings, &base, 2000),
	      "rings %u -> %u after ATTACH", base.rings, st.rings);
	err = h_raw_call(&x.r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK_EQ(err, -EBUSY, "a second ATTACH");
	CHECK(msg[0], "no extack text for the second ATTACH");
	CHECK(x.r.nfds == 0, "the refused ATTACH brought descriptors");
	raw_stats_ok(&x.r, "after ATTACH twice");
	rr_stats_ok(&x, "after ATTACH twice");
	h_stats(ctl, &st);
	CHECK(st.rings == base.rings + 2, "rings %u -> %u", base.rings,
	      st.rings);
	rr_close(&x);
	expect_settled(&base, 0, 0, "attach twice");
	h_note("ATTACH twice: -EBUSY (%s), connection kept", msg);
}

/* --- seals ------------------------------------------------------------------- */

static void check_sealed(int fd, const char *what)
{
	struct stat st;
	int seals;

	CHECK(fstat(fd, &st) == 0, "fstat");
	seals = fcntl(fd, F_GET_SEALS);
	CHECK(seals >= 0 && (seals & (F_SEAL_SHRINK | F_SEAL_GROW |
				      F_SEAL_SEAL)) ==
	      (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), "%s: seals %#x",
	      what, seals);
	CHECK(ftruncate(fd, 0) < 0 && errno == EPERM, "%s: truncated to 0 "
	      "(%s)", what, strerror(errno));
	/* by one block: a hugetlb memfd (rings on 2 MiB pages) takes only
	 * sizes in whole pages and says EINVAL to others, seal or not */
	CHECK(ftruncate(fd, st.st_size > st.st_blksize ?
			st.st_size - st.st_blksize : 0) < 0 && errno == EPERM,
	      "%s: shrunk (%s)", what, strerror(errno));
	CHECK(ftruncate(fd, st.st_size * 2) < 0 && errno == EPERM,
	      "%s: grown", what);
	CHECK(fallocate(fd, 0, st.st_size, 4096) < 0, "%s: grown by "
	      "fallocate", what);
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM,
	      "%s: sealed further", what);
}

static void seals(const char *sock)
{
	struct tdbc_stats base;
	struct tdb_proto_msg m = { .cmd = TDB_CMD_WATCH,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = "big" };
	char msg[256], path[64];
	struct rr x;
	int err, feed, rw;
	struct stat st;
	void *p;

	h_stats(ctl, &base);
	rr_attach(&x, sock);
	check_sealed(x.fds[0], "submission ring");
	check_sealed(x.fds[1], "completion ring");
	rr_stats_ok(&x, "after the seal checks");
	/* Punching holes is not sealed against (only F_SEAL_WRITE would,
	 * and tdbd writes the completion ring): the data pages read back
	 * as zeros, which hurts nobody but this client; the rings go on. */
	CHECK(fallocate(x.fds[0], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)x.span, (off_t)x.sub_size) == 0 &&
	      fallocate(x.fds[1], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)x.span, (off_t)x.comp_size) == 0,
	      "punching holes in the rings' data: %s", strerror(errno));
	rr_stats_ok(&x, "after holes were punched in the rings' data");

	err = h_raw_call(&x.r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "WATCH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(&x.r, &feed, 1) == 1, "WATCH brought no fd");
	CHECK((fcntl(feed, F_GETFL) & O_ACCMODE) == O_RDONLY,
	      "the feed is passed writable");
	CHECK(fstat(feed, &st) == 0, "fstat");
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, feed, 0);
	CHECK(p == MAP_FAILED, "the feed maps writable");
	CHECK(ftruncate(feed, 0) < 0, "the feed was truncated");
	/* The same memfd opened anew through /proc: tdbd's feed is what
	 * every watcher of the table reads, so no watcher may write it. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", feed);
	rw = open(path, O_RDWR | O_CLOEXEC);
	if (rw >= 0) {
		bool maps;

		p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, rw, 0);
		maps = p != MAP_FAILED;
		if (maps)
			munmap(p, (size_t)st.st_size);
		/* A tdbd bug this found (fixed in 91badb4; h_known_bug
		 * name feed-writable): the feed's memfd was sealed against
		 * shrinking and growing only, so any watcher (read
		 * permission is enough, any uid) could re-open it
		 * read-write through /proc/self/fd and forge or garble
		 * the changes every other watcher of the table reads.
		 * F_SEAL_FUTURE_WRITE after tdbd's own mapping closes it. */
		if (maps && h_known_bug("feed-writable"))
			h_note("KNOWN BUG: the feed maps writable through a "
			       "re-open of /proc/self/fd/N");
		else
			CHECK(!maps, "the feed of table 'big' maps writable "
			      "through a re-open of /proc/self/fd/N: any "
			      "watcher can forge every watcher's changes");
		check_sealed(rw, "feed (re-opened)");
		close(rw);
	}
	close(feed);
	rr_close(&x);
	expect_settled(&base, 0, 0, "seals");
	h_note("seals: ring memfds sealed; the feed is read-only");
}

/* --- scribblers ----------------------------------------------------------------- */

enum scribble {
	SC_PROD,                /* submission prod far beyond the data */
	SC_PROD_BACK,           /* submission prod behind cons */
	SC_MSG_LEN,             /* a message longer than max_msg */
	SC_MSG_SHORT,           /* a message shorter than its header */
	SC_CONS,                /* completion cons beyond prod */
	SC_RANDOM,              /* random data, a bad first length */
	SC_CONSTANTS,           /* header constants, flags, futex */
	SC_CONS_DUMP,           /* completion cons beyond prod, seen by a
				 * dump's pacing (a room check only) */
	SC_MAX
};
static const char *const sc_name[] = { "prod beyond the data",
	"prod behind cons", "nlmsg_len over max_msg", "nlmsg_len under 16",
	"completion cons beyond prod", "random data",
	"header constants and flags", "completion cons seen by a dump" };

static void scribble(const char *sock, enum scribble sc)
{
	struct tdb_ring_hdr *sh, *ch;
	struct tdbc_stats base, st;
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	struct tdb_proto_msg get_big = { .cmd = TDB_CMD_GET,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = "big", .key = "b0", .key_len = 2 };
	struct tdb_proto_msg scan_many = { .cmd = TDB_CMD_SCAN,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = "many" };
	uint64_t rnd = 99 + (uint64_t)sc;
	struct nlmsghdr bad;
	struct got g;
	struct rr x;
	size_t i;

	h_stats(ctl, &base);
	rr_attach(&x, sock);
	rr_stats_ok(&x, "before scribbling");   /* the rings work */
	sh = (struct tdb_ring_hdr *)x.sub_hdr;
	ch = (struct tdb_ring_hdr *)x.comp_hdr;
	switch (sc) {
	case SC_PROD:
		__atomic_store_n(&sh->prod, sh->prod + 3ull * x.sub_size,
				 __ATOMIC_RELEASE);
		break;
	case SC_PROD_BACK:
		__atomic_store_n(&sh->prod, sh->cons - 64, __ATOMIC_RELEASE);
		break;
	case SC_MSG_LEN:
	case SC_MSG_SHORT:
		memset(&bad, 0, sizeof(bad));
		bad.nlmsg_len = sc == SC_MSG_LEN ? 0x7ffffff0u : 8;
		bad.nlmsg_type = TDB_PROTO_FAMILY;
		memcpy(x.sub_data + (sh->prod & (x.sub_size - 1)), &bad,
		       sizeof(bad));
		__atomic_store_n(&sh->prod, sh->prod + 64, __ATOMIC_RELEASE);
		break;
	case SC_RANDOM:
		for (i = 0; i < x.sub_size; i += 8) {
			uint64_t v = h_rand(&rnd);

			memcpy(x.sub_data + i, &v, 8);
		}
		bad.nlmsg_len = 0xdeadbee1u;
		memcpy(x.sub_data + (sh->prod & (x.sub_size - 1)), &bad, 4);
		__atomic_store_n(&sh->prod, sh->prod + 4096, __ATOMIC_RELEASE);
		break;
	case SC_CONS:
		/* tdbd looks at cons only when its own view of the ring is
		 * full: ask for more answers than the ring holds */
		__atomic_store_n(&ch->cons, ch->prod + 3ull * x.comp_size,
				 __ATOMIC_RELEASE);
		for (i = 0; i < 2 * x.comp_size / BIG_VALUE; i++)
			CHECK(rr_queue(&x, &get_big) == 0, "queue");
		rr_publish(&x);
		break;
	case SC_CONS_DUMP:
		/* a SCAN of more than the ring holds fills it, everything
		 * published; only then is cons scribbled, so tdbd meets it
		 * while merely asking for room for the next part */
		CHECK(rr_queue(&x, &scan_many) == 0, "queue");
		rr_publish(&x);
		rr_kick(&x);
		for (i = 0; i < 500; i++) {
			uint64_t p = __atomic_load_n(&ch->prod,
						     __ATOMIC_ACQUIRE);

			if (p - ch->cons > x.comp_size - TDB_PROTO_MSG_MAX -
					    2 * BIG_VALUE)
				break;
			h_sleep_ms(10);
		}
		CHECK(i < 500, "the scan did not fill the completion ring");
		h_sleep_ms(50);
		__atomic_store_n(&ch->cons, ch->prod + 3ull * x.comp_size,
				 __ATOMIC_RELEASE);
		break;
	case SC_CONSTANTS:
		sh->magic = ch->magic = h_rand(&rnd);
		sh->data_size = ch->data_size = 12345;
		sh->max_msg = ch->max_msg = 0xffffffffu;
		sh->kind = ch->kind = 77;
		sh->flags = ch->flags = (uint32_t)h_rand(&rnd) | 4;
		sh->futex = ch->futex = (uint32_t)h_rand(&rnd);
		break;
	case SC_MAX:
		break;
	}
	rr_kick(&x);
	if (sc == SC_CONSTANTS) {
		/* private copies: either it goes on as before, or it drops
		 * the client with a violation; never a stall */
		bool answered;

		CHECK(rr_queue(&x, &m) == 0, "queue");
		rr_publish(&x);
		rr_kick(&x);
		answered = rr_answer(&x, &g, 3000);
		if (answered) {
			CHECK(g.m.cmd == TDB_CMD_STATS && g.m.seq == m.seq,
			      "constants: a wrong answer");
			raw_stats_ok(&x.r, "constants");
			rr_close(&x);
			expect_settled(&base, 0, 0, sc_name[sc]);
			h_note("scribble %s: still served", sc_name[sc]);
		} else {
			CHECK(h_raw_wait_closed(&x.r, 5000), "constants: no "
			      "answer and the connection is still open");
			rr_close(&x);
			expect_settled(&base, 1, 0, sc_name[sc]);
			h_note("scribble %s: dropped", sc_name[sc]);
		}
		return;
	}
	if (!h_raw_wait_closed(&x.r, 5000)) {
		h_stats(ctl, &st);
		h_print_stats("now", &st);
		h_fail(__FILE__, __LINE__, "closed", "scribble %s: tdbd kept "
		       "the client", sc_name[sc]);
	}
	rr_close(&x);
	if (sc == SC_CONS && h_known_bug("comp-violation-uncounted")) {
		/* A tdbd bug this found (fixed in 91badb4; h_known_bug
		 * name comp-violation-uncounted): a completion ring the
		 * client broke dropped the client ("completion ring broken
		 * by the client") without counting a violation. */
		struct tdbc_stats st2;

		h_wait_stats(ctl, &st2, settled_any, &base, 5000);
		expect_settled(&base, st2.violations - base.violations, 0,
			       sc_name[sc]);
		if (st2.violations == base.violations) {
			h_note("KNOWN BUG: scribble %s: dropped, but no "
			       "violation counted", sc_name[sc]);
			return;
		}
	}
	expect_settled(&base, 1, 0, sc_name[sc]);
	h_note("scribble %s: dropped, violation counted", sc_name[sc]);
}

/* --- a completion ring the client writes under tdbd ------------------------------- */

struct flipper {
	volatile uint32_t *data;
	size_t words;
	volatile int stop;
	uint64_t sweeps;
};

/* Scribble every word of the completion data, for ever: the lengths
 * tdbd's answers carry change under it while it writes them. */
static void *flip(void *arg)
{
	struct flipper *f = arg;
	static const uint32_t vals[] = { 16, 0xfffffff0u, 0x7ffffff0u, 4,
					 0x10000, 0 };
	uint64_t n = 0;

	while (!f->stop) {
		uint32_t v = vals[n++ % (sizeof(vals) / sizeof(vals[0]))];
		size_t i;

		for (i = 0; i < f->words; i++)
			f->data[i] = v;
		f->sweeps++;
	}
	return NULL;
}

/*
 * The completion memfd reaches the client read-write (it writes the
 * header's cons and flags), so it can map the data writable too.  A
 * thread rewrites every nlmsg_len in it while the client asks for
 * every kind of answer (GET of a 32 KiB value, STATS, TABLE_STAT,
 * TXN_BEGIN, TABLE_LIST, SCAN) and frees the ring's space by moving
 * cons to prod.  tdbd builds nothing in that memory, so it neither
 * crashes nor writes out of bounds (ASan), and goes on serving others.
 */
static void comp_flip(const char *sock)
{
	struct tdb_proto_msg reqs[] = {
		{ .cmd = TDB_CMD_GET, .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
		  TDB_PROTO_BIT(TDB_A_KEY), .table = "big", .key = "b0",
		  .key_len = 2 },
		{ .cmd = TDB_CMD_STATS },
		{ .cmd = TDB_CMD_TABLE_STAT, .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		  .table = "big" },
		{ .cmd = TDB_CMD_TXN_BEGIN },
		{ .cmd = TDB_CMD_TABLE_LIST },
		{ .cmd = TDB_CMD_SCAN, .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		  .table = "many" },
	};
	struct tdb_ring_hdr *ch;
	struct tdbc_stats base, st;
	struct flipper f = { 0 };
	uint64_t end, sent = 0;
	pthread_t th;
	void *wdata;
	struct rr x;

	h_stats(ctl, &base);
	rr_attach(&x, sock);
	ch = (struct tdb_ring_hdr *)x.comp_hdr;
	wdata = mmap(NULL, x.comp_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     x.fds[1], (off_t)x.span);
	CHECK(wdata != MAP_FAILED, "the completion data cannot be mapped "
	      "writable (%s): then this attack is moot; update the test",
	      strerror(errno));
	f.data = wdata;
	f.words = x.comp_size / 4;
	CHECK(pthread_create(&th, NULL, flip, &f) == 0, "pthread_create");
	end = h_now_ms() + (uint64_t)h_scaled(3000, 1000);
	while (h_now_ms() < end && !h_raw_wait_hup(&x.r, 0)) {
		size_t i;

		for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
			if (rr_queue(&x, &reqs[i]))
				break;
			sent++;
		}
		rr_publish(&x);
		rr_kick(&x);
		/* take every answer without reading it */
		__atomic_store_n(&ch->cons,
				 __atomic_load_n(&ch->prod, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		h_sleep_ms(1);
	}
	f.stop = 1;
	pthread_join(th, NULL);
	munmap(wdata, x.comp_size);
	h_note("completion data rewritten %llu times under %llu requests",
	       (unsigned long long)f.sweeps, (unsigned long long)sent);
	CHECK(sent >= 100, "only %llu requests went in", 
	      (unsigned long long)sent);
	/* tdbd is alive and serves the others; this client may have been
	 * dropped (a scribbled cons), or not: its answers are its own
	 * business */
	h_stats(ctl, &st);
	CHECK(st.requests > base.requests + 50, "tdbd served %llu requests",
	      (unsigned long long)(st.requests - base.requests));
	rr_close(&x);
	h_wait_stats(ctl, &st, settled_any, &base, 5000);
	CHECK(st.rings == base.rings && st.txns == base.txns &&
	      st.dumps == base.dumps, "gauges after the flipper left: rings "
	      "%u txns %u dumps %u", st.rings, st.txns, st.dumps);
}

/* --- descriptors that ATTACH leaves behind ---------------------------------------- */

static bool requests_at(const struct tdbc_stats *st, const void *arg)
{
	return st->requests >= *(const uint64_t *)arg;
}

/*
 * A client pipelines STATS it never reads (its answers back up on the
 * socket) and then ATTACH after ATTACH.  Descriptors ride on the ack of
 * an ATTACH, which cannot go out behind queued answers: each is refused
 * with -EAGAIN, and none may leave a memfd, an eventfd or a SIGBUS guard
 * behind.  tdbd's descriptor count comes back to where it was, and root
 * can still attach.
 */
static void attach_flood(const struct h_daemon *d)
{
	enum { NSTATS = 3000, NATTACH = 1000 };
	struct tdb_proto_msg st_m = { .cmd = TDB_CMD_STATS };
	struct tdb_proto_msg at_m = { .cmd = TDB_CMD_ATTACH };
	struct tdbc_stats base, st;
	unsigned int fds0, fds1;
	uint64_t want;
	struct h_raw r;
	struct rr ok;
	int i;

	h_stats(ctl, &base);
	fds0 = h_proc_count(d->pid, "fd");
	h_raw_connect(&r, d->sock);
	for (i = 0; i < NSTATS; i++)
		h_raw_send_msg(&r, &st_m);
	for (i = 0; i < NATTACH; i++)
		h_raw_send_msg(&r, &at_m);
	want = base.requests + NSTATS + NATTACH;
	CHECK(h_wait_stats(ctl, &st, requests_at, &want, 20000),
	      "tdbd ran %llu of the %d requests",
	      (unsigned long long)(st.requests - base.requests),
	      NSTATS + NATTACH);
	fds1 = h_proc_count(d->pid, "fd");
	h_note("ATTACH flood: tdbd's descriptors %u before, %u after %d "
	       "refused ATTACHes", fds0, fds1, NATTACH);
	CHECK(fds1 <= fds0 + 8, "tdbd holds %u more descriptors after the "
	      "ATTACH flood", fds1 - fds0);
	CHECK(st.rings == base.rings, "rings %u -> %u", base.rings,
	      st.rings);
	rr_attach(&ok, d->sock);        /* root attaches as ever */
	rr_stats_ok(&ok, "after the ATTACH flood");
	rr_close(&ok);
	h_raw_close(&r);
	expect_settled(&base, 0, 0, "attach flood");
}

/* --- a feed descriptor after UNWATCH --------------------------------------------- */

/* The feed's published index, through a read-only map of its header. */
static uint64_t feed_prod(int fd)
{
	size_t span = memfd_span(fd);
	const struct tdb_ring_hdr *h = mmap(NULL, span, PROT_READ, MAP_SHARED,
					    fd, 0);
	uint64_t p;

	CHECK(h != MAP_FAILED, "map the feed's header: %s", strerror(errno));
	p = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	munmap((void *)h, span);
	return p;
}

/*
 * A client watches a table, keeps the feed's descriptor and UNWATCHes.
 * The last watch retires the feed: a later WATCH (by anyone) gets a new
 * one, and the old descriptor never sees another change.
 */
static void unwatch_feed(const char *sock)
{
	struct tdb_proto_msg w = { .cmd = TDB_CMD_WATCH,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = "many" };
	struct tdb_proto_msg u = w;
	struct tdbc_table *t = NULL;
	struct tdbc_stats base;
	struct h_raw a, b;
	char msg[256];
	uint64_t before;
	int fda, fdb, err;

	u.cmd = TDB_CMD_UNWATCH;
	h_stats(ctl, &base);
	h_raw_connect(&a, sock);
	err = h_raw_call(&a, &w, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "WATCH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(&a, &fda, 1) == 1, "WATCH brought no feed");
	err = h_raw_call(&a, &u, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "UNWATCH: %s (%s)", h_errname(err), msg);
	before = feed_prod(fda);
	/* someone else watches the same table, and it changes */
	h_raw_connect(&b, sock);
	err = h_raw_call(&b, &w, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(err == 0, "second WATCH: %s (%s)", h_errname(err), msg);
	CHECK(h_raw_take_fds(&b, &fdb, 1) == 1, "WATCH brought no feed");
	CHECK(tdbc_table_open(ctl, "many", &t) == 0, "open many");
	CHECK(tdbc_put(t, NULL, "fresh", 5, "v", 1, 0) == 0, "put");
	CHECK(tdbc_del(t, NULL, "fresh", 5) == 0, "del");
	tdbc_table_close(t);
	CHECK(feed_prod(fdb) > 0, "the new watcher's feed saw nothing");
	CHECK(feed_prod(fda) == before, "the feed given up with UNWATCH "
	      "still carries changes (prod %llu -> %llu)",
	      (unsigned long long)before,
	      (unsigned long long)feed_prod(fda));
	close(fda);
	close(fdb);
	h_raw_close(&a);
	h_raw_close(&b);
	expect_settled(&base, 0, 0, "unwatch");
	h_note("UNWATCH: the old feed descriptor sees no later change");
}

/* --- clients that never read ------------------------------------------------------- */

static bool throttled(const struct tdbc_stats *st, const void *arg)
{
	const struct tdbc_stats *base = arg;

	return st->throttled == base->throttled + 1;
}

/*
 * Wait for the throttle, then for the cut-off after the deadline (2 s).
 * Returns false if the client was never throttled or never cut off,
 * which only known_bug (and deaf-socket listed as open) allows.
 */
static bool cut_off(struct h_raw *r, const struct tdbc_stats *base,
		    const char *what, bool known_bug)
{
	struct tdbc_stats st;
	uint64_t t0, dt;

	if (!h_wait_stats(ctl, &st, throttled, base, 5000)) {
		CHECK(known_bug && h_known_bug("deaf-socket"), "%s: never "
		      "throttled (throttled %u -> %u)", what, base->throttled,
		      st.throttled);
		return false;
	}
	t0 = h_now_ms();
	if (!h_raw_wait_hup(r, 10000)) {
		CHECK(known_bug && h_known_bug("deaf-socket"), "%s: still "
		      "connected 10 s after it was throttled "
		      "(client-deadline 2 s)", what);
		return false;
	}
	dt = h_now_ms() - t0;
	CHECK(dt < 6000, "%s: cut off %llu ms after it was throttled", what,
	      (unsigned long long)dt);
	h_note("%s: throttled, then cut off %llu ms later", what,
	       (unsigned long long)dt);
	return true;
}

static void deaf_ring(const char *sock)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_GET,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = "big", .key = "b0", .key_len = 2 };
	struct tdbc_stats base;
	struct rr x;
	long n = 0;

	h_stats(ctl, &base);
	rr_attach(&x, sock);
	/* fill the submission ring; the completions pile up unread */
	for (;;) {
		if (rr_queue(&x, &m) == -EAGAIN) {
			rr_publish(&x);
			if (tdb_ring_wait_space(&x.sub, 64, 500) == -ETIMEDOUT)
				break;
			continue;
		}
		if (++n % 64 == 0)
			rr_publish(&x);
	}
	rr_publish(&x);
	cut_off(&x.r, &base, "ring client that never reaps", false);
	rr_close(&x);
	expect_settled(&base, 0, 1, "deaf ring");
}

static void deaf_socket(const char *sock)
{
	struct tdbc_stats base;
	struct h_raw r;
	int i;

	h_stats(ctl, &base);
	h_raw_connect(&r, sock);
	/* 400 GETs of 32 KiB: 13 MiB of answers nobody reads */
	for (i = 0; i < 400; i++) {
		struct tdb_proto_msg m = { .cmd = TDB_CMD_GET,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
				 TDB_PROTO_BIT(TDB_A_KEY),
			.table = "big", .key = "b0", .key_len = 2 };

		h_raw_send_msg(&r, &m);
	}
	/* A tdbd bug this found (fixed in 91badb4; h_known_bug name
	 * deaf-socket): a socket client was "blocked" (throttled, cut off
	 * after client-deadline) only while more than OUT_MAX bytes of
	 * answers waited, but its requests stopped being run as soon as
	 * fewer than TDB_PROTO_ERROR_MAX bytes of room were left, and
	 * nothing ran them again while the socket stayed full: a flush
	 * that brought the backlog just under OUT_MAX left the client
	 * neither served nor blocked, never cut off (one try in three).
	 * The wait below must not read: reading is progress. */
	if (!cut_off(&r, &base, "socket client that never reads", true)) {
		h_note("KNOWN BUG: a socket client that never reads was not "
		       "cut off after client-deadline");
		h_raw_close(&r);
		expect_settled(&base, 0, 0, "deaf socket (known bug)");
		return;
	}
	h_raw_close(&r);
	expect_settled(&base, 0, 1, "deaf socket");
}

int main(void)
{
	static const char *const args[] = { "--workers", "2",
		"--client-deadline", "2s", NULL };
	struct h_pinger pg[2];
	struct tdbc_table *t = NULL;
	struct tdbc_stats st;
	struct h_daemon d;
	unsigned char *val;
	int sc;

	h_init("tdbd-hostile", 600);
	h_start(&d, "tdbd", args);
	h_pinger_start(&pg[0], d.sock, 0, 0);
	h_pinger_start(&pg[1], d.sock, TDBC_NO_RINGS, 1);
	ctl = h_connect(&d, 0);
	CHECK(tdbc_table_create(ctl, "big", NULL) == 0, "create big");
	CHECK(tdbc_table_open(ctl, "big", &t) == 0, "open big");
	val = malloc(BIG_VALUE);
	CHECK(val, "out of memory");
	memset(val, 'v', BIG_VALUE);
	CHECK(tdbc_put(t, NULL, "b0", 2, val, BIG_VALUE, 0) == 0, "put b0");
	tdbc_table_close(t);
	/* more than a completion ring holds (4 MiB) of scan answers */
	CHECK(tdbc_table_create(ctl, "many", NULL) == 0, "create many");
	CHECK(tdbc_table_open(ctl, "many", &t) == 0, "open many");
	for (sc = 0; sc < 200; sc++) {
		char k[16];
		int kl = snprintf(k, sizeof(k), "m%d", sc);

		CHECK(tdbc_put(t, NULL, k, (size_t)kl, val, BIG_VALUE, 0) == 0,
		      "put %s", k);
	}
	free(val);
	tdbc_table_close(t);

	if (h_want("garbage"))
		garbage(d.sock);
	if (h_want("malformed"))
		malformed(d.sock);
	if (h_want("oversized"))
		oversized(d.sock);
	if (h_want("attach2"))
		attach_twice(d.sock);
	if (h_want("attachflood"))
		attach_flood(&d);
	if (h_want("compflip"))
		comp_flip(d.sock);
	for (sc = 0; sc < SC_MAX; sc++)
		if (h_want("scribble"))
			scribble(d.sock, (enum scribble)sc);
	if (h_want("deaf"))
		deaf_ring(d.sock);
	if (h_want("deaf"))
		deaf_socket(d.sock);
	if (h_want("seals"))
		seals(d.sock);
	if (h_want("unwatch"))
		unwatch_feed(d.sock);

	{
		struct h_lat lat;

		h_pinger_finish_lat(&pg[0], &lat);
		h_check_latency(&lat, "rings pinger beside the attacks");
		h_pinger_finish_lat(&pg[1], &lat);
		h_check_latency(&lat, "socket pinger beside the attacks");
	}
	h_stats(ctl, &st);
	h_print_stats("end", &st);
	tdbc_close(ctl);
	h_stop(&d);
	h_done();
	return 0;
}
