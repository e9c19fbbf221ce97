// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_hostile.c - a client that breaks every rule of /dev/tdb
 * (include/tdb/kdev.h) cannot hurt tdb.ko: bad ioctls and mmaps are
 * refused with the documented errnos; a scribbled submission ring
 * (index far ahead, frames of nlmsg_len 3 or beyond the ring, a
 * misaligned length, random bytes) ends that client with -EPROTO (or,
 * for a well-framed bad message, an NLMSG_ERROR answer); afterwards a
 * normal client works and STATS counted the violations.  A CREATE
 * built by hand with a name outside the safe set is refused (-EINVAL).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>
#include <tdb/ring.h>

#include "kt.h"

#define SQ_DATA (64u << 10)
#define CQ_DATA (4u << 20)

struct raw {
	int fd;
	struct tdb_dev_attach at;
	struct tdb_ring_hdr *sq, *cqh;
	unsigned char *sqd;
	const unsigned char *cqd;
	uint64_t prod, cons;
};

static int attach(int fd, unsigned int sq, unsigned int cq,
		  struct tdb_dev_attach *at)
{
	memset(at, 0, sizeof(*at));
	at->version = TDB_DEV_VERSION;
	at->sq_data_size = sq;
	at->cq_data_size = cq;
	return ioctl(fd, TDB_IOC_ATTACH, at) ? -errno : 0;
}

static void raw_open(struct raw *r)
{
	void *p;
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	CHECK(r->fd >= 0, "open %s: %s", TDB_DEV_PATH, strerror(errno));
	err = attach(r->fd, SQ_DATA, CQ_DATA, &r->at);
	CHECK(err == 0, "ATTACH: %s", h_errname(err));
	p = mmap(NULL, TDB_RING_HDR_SIZE + SQ_DATA, PROT_READ | PROT_WRITE,
		 MAP_SHARED, r->fd, (off_t)r->at.sq_offset);
	CHECK(p != MAP_FAILED, "mmap sq: %s", strerror(errno));
	r->sq = p;
	r->sqd = (unsigned char *)p + TDB_RING_HDR_SIZE;
	p = mmap(NULL, TDB_RING_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 r->fd, (off_t)r->at.cq_offset);
	CHECK(p != MAP_FAILED, "mmap cq header: %s", strerror(errno));
	r->cqh = p;
	p = mmap(NULL, CQ_DATA, PROT_READ, MAP_SHARED, r->fd,
		 (off_t)(r->at.cq_offset + TDB_RING_HDR_SIZE));
	CHECK(p != MAP_FAILED, "mmap cq data: %s", strerror(errno));
	r->cqd = p;
	CHECK(r->sq->magic == TDB_RING_MAGIC && r->sq->kind == TDB_RING_SUBMIT &&
	      r->sq->data_size == SQ_DATA, "bad sq header");
	CHECK(r->cqh->magic == TDB_RING_MAGIC &&
	      r->cqh->kind == TDB_RING_COMPLETE &&
	      r->cqh->data_size == CQ_DATA, "bad cq header");
	r->prod = r->sq->prod;
	r->cons = r->cqh->cons;
}

static void raw_close(struct raw *r)
{
	munmap(r->sq, TDB_RING_HDR_SIZE + SQ_DATA);
	munmap(r->cqh, TDB_RING_HDR_SIZE);
	munmap((void *)r->cqd, CQ_DATA);
	close(r->fd);
}

/* Write len bytes at the producer index (no wrap handling: the tests
 * stay far from the end) and publish prod + adv. */
static void raw_push(struct raw *r, const void *buf, size_t len,
		     uint64_t adv)
{
	memcpy(r->sqd + (r->prod & (SQ_DATA - 1)), buf, len);
	r->prod += adv;
	__atomic_store_n(&r->sq->prod, r->prod, __ATOMIC_RELEASE);
}

static int enter(struct raw *r)
{
	return ioctl(r->fd, TDB_IOC_ENTER, 0) ? -errno : 0;
}

/* The next answer in the completion ring (NOOPs skipped), or NULL. */
static const struct nlmsghdr *next_answer(struct raw *r)
{
	for (;;) {
		uint64_t prod = __atomic_load_n(&r->cqh->prod,
						__ATOMIC_ACQUIRE);
		const struct nlmsghdr *n;
		uint64_t left = CQ_DATA - (r->cons & (CQ_DATA - 1));

		if (r->cons == prod)
			return NULL;
		if (left < NLMSG_HDRLEN) {
			r->cons += left;
			continue;
		}
		n = (const void *)(r->cqd + (r->cons & (CQ_DATA - 1)));
		CHECK(n->nlmsg_len >= NLMSG_HDRLEN &&
		      n->nlmsg_len <= prod - r->cons, "bad answer frame");
		r->cons += NLMSG_ALIGN(n->nlmsg_len);
		__atomic_store_n(&r->cqh->cons, r->cons, __ATOMIC_RELEASE);
		if (n->nlmsg_type == NLMSG_NOOP)
			continue;
		return n;
	}
}

/* A STATS request (well formed), seq s. */
static size_t stats_req(void *buf, unsigned int seq, unsigned int cmd,
			unsigned int version)
{
	struct nlmsghdr *n = buf;
	struct genlmsghdr *g = (void *)((char *)buf + NLMSG_HDRLEN);

	memset(buf, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	n->nlmsg_len = NLMSG_HDRLEN + GENL_HDRLEN;
	n->nlmsg_type = TDB_PROTO_FAMILY;
	n->nlmsg_flags = NLM_F_REQUEST;
	n->nlmsg_seq = seq;
	g->cmd = cmd;
	g->version = version;
	return n->nlmsg_len;
}

static void expect_dead(struct raw *r, const char *what)
{
	int err = enter(r);

	CHECK(err == -EPROTO, "%s: ENTER gave %s, want EPROTO", what,
	      h_errname(err));
	CHECK(enter(r) == -EPROTO, "%s: the second ENTER", what);
	CHECK(r->sq->flags & TDB_RING_F_OVERRUN,
	      "%s: TDB_RING_F_OVERRUN not set in the sq", what);
}

static void ioctls(void)
{
	struct tdb_dev_attach at;
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC), err;
	void *p;

	CHECK(fd >= 0, "open");
	CHECK(ioctl(fd, TDB_IOC_ENTER, 0) == -1 && errno == ENXIO,
	      "ENTER before ATTACH: %s", strerror(errno));
	CHECK(ioctl(fd, _IO(TDB_IOC_MAGIC, 99), 0) == -1 && errno == ENOTTY,
	      "unknown ioctl: %s", strerror(errno));
	CHECK(ioctl(fd, 0x5401 /* TCGETS */, &at) == -1 && errno == ENOTTY,
	      "TCGETS: %s", strerror(errno));
	/* ATTACH with the wrong size in its number */
	CHECK(ioctl(fd, _IOWR(TDB_IOC_MAGIC, 1, __u32), &at) == -1,
	      "ATTACH with a short struct succeeded");
	CHECK(ioctl(fd, TDB_IOC_ATTACH, (void *)16) == -1 && errno == EFAULT,
	      "ATTACH at a bad address: %s", strerror(errno));
	CHECK(attach(fd, 3000, CQ_DATA, &at) == -EINVAL, "sq not a power of 2");
	CHECK(attach(fd, 1024, CQ_DATA, &at) == -EINVAL, "sq too small");
	CHECK(attach(fd, SQ_DATA, TDB_DEV_RING_MAX * 2, &at) == -EINVAL,
	      "cq too big");
	memset(&at, 0, sizeof(at));
	at.version = TDB_DEV_VERSION + 7;
	at.sq_data_size = SQ_DATA;
	at.cq_data_size = CQ_DATA;
	CHECK(ioctl(fd, TDB_IOC_ATTACH, &at) == -1 &&
	      (errno == EINVAL || errno == EPROTONOSUPPORT),
	      "ATTACH version %u: %s", at.version, strerror(errno));
	at.version = TDB_DEV_VERSION;
	at.flags = 0x80;
	CHECK(ioctl(fd, TDB_IOC_ATTACH, &at) == -1 && errno == EINVAL,
	      "ATTACH with unknown flags: %s", strerror(errno));
	/* mmap before ATTACH */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED, "mmap before ATTACH succeeded");
	err = attach(fd, SQ_DATA, CQ_DATA, &at);
	CHECK(err == 0, "ATTACH: %s", h_errname(err));
	CHECK(at.sq_offset == TDB_DEV_OFF_SQ && at.cq_offset == TDB_DEV_OFF_CQ,
	      "offsets");
	CHECK(attach(fd, SQ_DATA, CQ_DATA, &at) == -EBUSY, "second ATTACH");
	/* the completion data is read-only, feeds need a watch */
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)(TDB_DEV_OFF_CQ + TDB_RING_HDR_SIZE));
	CHECK(p == MAP_FAILED && errno == EACCES,
	      "writable mmap of the cq data: %s",
	      p == MAP_FAILED ? strerror(errno) : "mapped");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		 (off_t)(TDB_DEV_OFF_CQ + TDB_RING_HDR_SIZE));
	CHECK(p != MAP_FAILED, "read-only mmap of the cq data: %s",
	      strerror(errno));
	CHECK(mprotect(p, 4096, PROT_READ | PROT_WRITE) == -1,
	      "mprotect made the cq data writable");
	munmap(p, 4096);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		 (off_t)(2 * TDB_DEV_SLOT));
	CHECK(p == MAP_FAILED, "mmap of a feed slot not watched succeeded");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		 (off_t)(9 * TDB_DEV_SLOT));
	CHECK(p == MAP_FAILED, "mmap of slot 9 succeeded");
	p = mmap(NULL, TDB_RING_HDR_SIZE + SQ_DATA + 4096, PROT_READ,
		 MAP_SHARED, fd, (off_t)TDB_DEV_OFF_SQ);
	CHECK(p == MAP_FAILED, "mmap past the end of the sq succeeded");
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, (off_t)TDB_DEV_OFF_SQ);
	CHECK(p == MAP_FAILED, "MAP_PRIVATE mmap succeeded");
	close(fd);
	printf("hostile: bad ioctls and mmaps refused\n");
}

static void scribbles(void)
{
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct nlmsghdr *n = (void *)buf;
	const struct nlmsghdr *a;
	struct raw r;
	unsigned int i;
	uint64_t s = 42;
	int err;

	/* a well-behaved request first: STATS answered */
	raw_open(&r);
	raw_push(&r, buf, stats_req(buf, 1, TDB_CMD_STATS, TDB_PROTO_VERSION),
		 NLMSG_HDRLEN + GENL_HDRLEN);
	CHECK(enter(&r) == 0, "ENTER");
	a = next_answer(&r);
	CHECK(a && a->nlmsg_seq == 1 && a->nlmsg_type == TDB_PROTO_FAMILY,
	      "no STATS reply");
	/* well framed but wrong: each answered with an error, no kill */
	raw_push(&r, buf, stats_req(buf, 2, 200, TDB_PROTO_VERSION),
		 NLMSG_HDRLEN + GENL_HDRLEN);
	raw_push(&r, buf, stats_req(buf, 3, TDB_CMD_STATS, 9),
		 NLMSG_HDRLEN + GENL_HDRLEN);
	stats_req(buf, 4, TDB_CMD_GET, TDB_PROTO_VERSION);   /* no TABLE */
	raw_push(&r, buf, n->nlmsg_len, n->nlmsg_len);
	stats_req(buf, 5, TDB_CMD_STATS, TDB_PROTO_VERSION);
	n->nlmsg_type = 0x77;                                 /* bad type */
	raw_push(&r, buf, n->nlmsg_len, n->nlmsg_len);
	CHECK(enter(&r) == 0, "ENTER after well-framed bad requests");
	for (i = 2; i <= 5; i++) {
		const struct nlmsgerr *e;

		a = next_answer(&r);
		CHECK(a, "no answer to bad request %u", i);
		CHECK(a->nlmsg_type == NLMSG_ERROR && a->nlmsg_seq == i,
		      "request %u: type %u seq %u", i, a->nlmsg_type,
		      a->nlmsg_seq);
		e = NLMSG_DATA(a);
		CHECK(e->error < 0, "request %u: error %d", i, e->error);
	}
	raw_close(&r);

	/* prod far ahead */
	raw_open(&r);
	r.prod += SQ_DATA * 16ULL;
	__atomic_store_n(&r.sq->prod, r.prod, __ATOMIC_RELEASE);
	expect_dead(&r, "prod far ahead");
	raw_close(&r);

	/* prod behind cons (backwards) */
	raw_open(&r);
	__atomic_store_n(&r.sq->prod, r.prod - 64, __ATOMIC_RELEASE);
	expect_dead(&r, "prod backwards");
	raw_close(&r);

	/* nlmsg_len 3 */
	raw_open(&r);
	memset(buf, 0, 64);
	n->nlmsg_len = 3;
	n->nlmsg_type = TDB_PROTO_FAMILY;
	raw_push(&r, buf, 64, 64);
	expect_dead(&r, "nlmsg_len 3");
	raw_close(&r);

	/* nlmsg_len huge, and beyond what was published */
	raw_open(&r);
	stats_req(buf, 1, TDB_CMD_STATS, TDB_PROTO_VERSION);
	n->nlmsg_len = 0xfffffff0u;
	raw_push(&r, buf, 64, 64);
	expect_dead(&r, "nlmsg_len huge");
	raw_close(&r);
	raw_open(&r);
	stats_req(buf, 1, TDB_CMD_STATS, TDB_PROTO_VERSION);
	n->nlmsg_len = 256;
	raw_push(&r, buf, 64, 64);
	expect_dead(&r, "nlmsg_len beyond prod");
	raw_close(&r);

	/* a misaligned length: either a violation or an error answer */
	raw_open(&r);
	stats_req(buf, 1, TDB_CMD_STATS, TDB_PROTO_VERSION);
	n->nlmsg_len = 21;
	raw_push(&r, buf, 24, 24);
	err = enter(&r);
	if (err == 0) {
		a = next_answer(&r);
		CHECK(a && a->nlmsg_type == NLMSG_ERROR,
		      "misaligned: ENTER 0 but no error answer");
	} else {
		CHECK(err == -EPROTO, "misaligned: %s", h_errname(err));
	}
	raw_close(&r);

	/* random bytes, many times: never anything but 0 or EPROTO */
	for (i = 0; i < 200; i++) {
		unsigned int len = 16 + (h_rand(&s) % 2048), j;

		raw_open(&r);
		for (j = 0; j < len; j++)
			buf[j] = (unsigned char)h_rand(&s);
		if (i & 1) {    /* a plausible header, a random body */
			n->nlmsg_len = len & ~3u;
			n->nlmsg_type = TDB_PROTO_FAMILY;
			n->nlmsg_flags = NLM_F_REQUEST;
		}
		raw_push(&r, buf, len, NLMSG_ALIGN(len));
		err = enter(&r);
		CHECK(err == 0 || err == -EPROTO, "random %u: ENTER %s", i,
		      h_errname(err));
		while (err == 0 && next_answer(&r))
			;
		raw_close(&r);
	}

	/* scribbling the cq's consumer index is the client's own loss */
	raw_open(&r);
	__atomic_store_n(&r.cqh->cons, r.cons + CQ_DATA * 8ULL,
			 __ATOMIC_RELEASE);
	raw_push(&r, buf, stats_req(buf, 1, TDB_CMD_STATS, TDB_PROTO_VERSION),
		 NLMSG_HDRLEN + GENL_HDRLEN);
	err = enter(&r);
	CHECK(err == 0 || err == -EPROTO, "cq cons scribbled: %s",
	      h_errname(err));
	raw_close(&r);
	printf("hostile: scribbled rings cut off, nothing else hurt\n");
}

/*
 * Table names outside the safe set (tdb_name_check, include/tdb/proto.h)
 * reach tdb.ko only from a client that builds its own CREATE: the
 * library and the codec's builder refuse them.  The module compiles the
 * same codec, so each is refused with -EINVAL, and no table is made.
 */
static void bad_names(struct tdbc *c)
{
	static const char *const bad[] = { "-rf", ".hidden", "a b", "a/b",
		"x\x9b" "31m", "..", "tab\tname" };
	unsigned char buf[512] __attribute__((aligned(8)));
	struct raw r;
	unsigned int i;

	raw_open(&r);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char good[64];
		size_t len = strlen(bad[i]);
		struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_CREATE,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .seq = 100 + i };
		const struct nlmsghdr *a;
		const struct nlmsgerr *e;
		unsigned char *at;
		long n;

		memset(good, 'a', len);
		good[len] = '\0';
		m.table = good;
		n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &m,
				    NULL);
		CHECK(n > 0, "build a CREATE");
		at = memmem(buf, (size_t)n, good, len);
		CHECK(at, "the name in the built CREATE");
		memcpy(at, bad[i], len);
		raw_push(&r, buf, (size_t)n, NLMSG_ALIGN((size_t)n));
		CHECK(enter(&r) == 0, "ENTER after a CREATE with a bad name");
		a = next_answer(&r);
		CHECK(a && a->nlmsg_type == NLMSG_ERROR &&
		      a->nlmsg_seq == 100 + i, "no error for name %u", i);
		e = NLMSG_DATA(a);
		CHECK(e->error == -EINVAL, "name %u: error %d, want EINVAL", i,
		      e->error);
	}
	raw_close(&r);
	{
		struct tdbc_table *t = NULL;

		CHECK(tdbc_table_open(c, "-rf", &t) != 0, "a table '-rf' "
		      "exists");
	}
}

int main(void)
{
	struct tdbc *c;
	struct tdbc_stats before, after;
	struct tdbc_table *t;
	char v[8];

	kt_init("hostile", 300);
	kt_need_kernel();
	c = kt_connect(0);
	h_stats(c, &before);
	ioctls();
	scribbles();
	bad_names(c);
	/* tdb.ko is fine: a normal client works, violations counted */
	kt_create(c, "after_hostile", 0600, 0);
	t = kt_open(c, "after_hostile");
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "put after");
	CHECK(tdbc_get(t, NULL, "k", 1, v, sizeof(v), NULL) == 1, "get after");
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "after_hostile") == 0, "drop");
	h_stats(c, &after);
	CHECK(after.violations >= before.violations + 5,
	      "violations %llu -> %llu", (unsigned long long)before.violations,
	      (unsigned long long)after.violations);
	CHECK(after.clients == before.clients, "clients %u -> %u",
	      before.clients, after.clients);
	tdbc_close(c);
	kt_done();
	return 0;
}
