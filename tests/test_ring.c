// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ring.c - unit tests of the shared ring (src/ring/ring.h against
 * the ABI in include/tdb/ring.h).
 *
 * Producer and consumer live in this process and share one mapping (or,
 * for FEED readers, read-only mappings of a memfd), so every state can be
 * staged exactly: format and attach validation, empty, one message, full
 * (EAGAIN, nothing overwritten), the wrap with NLMSG_NOOP padding and the
 * skipped tail of fewer than 16 bytes, max_msg and max_msg + 1, commit and
 * abort rules, batching, budgets, a callback that stops, the pending
 * count, wake-ups through the futex and through an eventfd (a thread
 * asleep in poll/epoll), waiting for space, protocol violations on both
 * sides, and FEED rings (readers at their own cursors, laps with the
 * number of lost messages, late readers).  The core as tdb.ko uses it
 * (ring_core.h): attached with no wake ops, load/pop/release with a
 * frame budget, unread; commit zeroing the alignment padding.  The
 * frame walker every ring reader shares (tdb_frame_at, tdb_frame_next):
 * bounds, zero lengths, max_msg, the unmarked end.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ring.h"

#define HDR    TDB_RING_HDR_SIZE
#define MTYPE  0x42            /* the type of every test message */

/* ------------------------------------------------------------------ */
/* a ring in one shared anonymous mapping                               */

struct rmem {
	unsigned char *base;
	size_t len;
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	uint32_t size;
};

static void rm_map(struct rmem *m, uint32_t size)
{
	m->size = size;
	m->len = tdb_ring_map_size(size);
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(m->base != MAP_FAILED);
	m->hdr = (struct tdb_ring_hdr *)m->base;
	m->data = m->base + HDR;
	/* A canary in the data, so untouched bytes can be told apart. */
	memset(m->data, 0xa5, size);
}

static void rm_new(struct rmem *m, uint32_t kind, uint32_t size,
		   uint32_t max_msg)
{
	rm_map(m, size);
	assert_int_equal(tdb_ring_format(m->base, kind, size, max_msg), 0);
}

static void rm_free(struct rmem *m)
{
	munmap(m->base, m->len);
}

static void attach_both(struct rmem *m, struct tdb_ring *p,
			struct tdb_ring *c, uint32_t kind)
{
	assert_int_equal(tdb_ring_attach_producer(p, m->hdr, m->data,
						  m->size, kind), 0);
	assert_int_equal(tdb_ring_attach_consumer(c, m->hdr, m->data,
						  m->size, kind), 0);
	assert_null(tdb_ring_error(p));
	assert_null(tdb_ring_error(c));
}

/* ------------------------------------------------------------------ */
/* messages: header, then a payload that is a function of (id, i); the   */
/* id is in nlmsg_pid, the length again in nlmsg_flags, and nlmsg_seq    */
/* holds the id too except in FEED rings (the producer stamps it)        */

static unsigned char pat(uint32_t seq, uint32_t i)
{
	return (unsigned char)(seq * 131u + i * 7u + 1u);
}

static void build(void *p, uint32_t len, uint32_t id)
{
	struct nlmsghdr *nlh = p;
	unsigned char *b = p;
	uint32_t i;

	nlh->nlmsg_len = len;
	nlh->nlmsg_type = MTYPE;
	nlh->nlmsg_flags = (uint16_t)(len ^ 0x5a5a);
	nlh->nlmsg_seq = id;
	nlh->nlmsg_pid = id;
	for (i = NLMSG_HDRLEN; i < len; i++)
		b[i] = pat(id, i);
}

/* reserve + build + commit; returns where it went */
static unsigned char *post(struct tdb_ring *p, uint32_t len, uint32_t seq)
{
	unsigned char *w = tdb_ring_reserve(p, len);

	if (!w)
		fail_msg("reserve(%u) for message %u: NULL, errno %d", len,
			 seq, errno);
	build(w, len, seq);
	assert_int_equal(tdb_ring_commit(p, len), 0);
	return w;
}

#define MAXREC 4096

struct coll {
	unsigned int n;
	uint32_t seq[MAXREC], len[MAXREC], id[MAXREC];
	const unsigned char *lo, *hi;   /* the shared data: copies are private */
	unsigned int stop_at;           /* return -ECANCELED at this call */
	char bad[200];
};

static void coll_init(struct coll *c, const struct rmem *m)
{
	memset(c, 0, sizeof(*c));
	c->lo = m->data;
	c->hi = m->data + m->size;
}

static int collect(void *arg, const struct nlmsghdr *nlh)
{
	struct coll *c = arg;
	const unsigned char *b = (const unsigned char *)nlh;
	uint32_t i, len = nlh->nlmsg_len;

	if (b >= c->lo && b < c->hi && !c->bad[0])
		snprintf(c->bad, sizeof(c->bad),
			 "message %u handed up in the shared data, not a "
			 "private copy", c->n);
	if (nlh->nlmsg_type != MTYPE && !c->bad[0])
		snprintf(c->bad, sizeof(c->bad),
			 "message %u has type %u", c->n, nlh->nlmsg_type);
	if (nlh->nlmsg_flags != (uint16_t)(len ^ 0x5a5a) && !c->bad[0])
		snprintf(c->bad, sizeof(c->bad),
			 "message %u: length %u is not the one built", c->n,
			 len);
	for (i = NLMSG_HDRLEN; i < len && !c->bad[0]; i++)
		if (b[i] != pat(nlh->nlmsg_pid, i))
			snprintf(c->bad, sizeof(c->bad),
				 "message %u (id %u) byte %u differs", c->n,
				 nlh->nlmsg_pid, i);
	if (c->n < MAXREC) {
		c->seq[c->n] = nlh->nlmsg_seq;
		c->len[c->n] = len;
		c->id[c->n] = nlh->nlmsg_pid;
	}
	c->n++;
	if (c->stop_at && c->n == c->stop_at)
		return -ECANCELED;
	return 0;
}

static void coll_ok(const struct coll *c)
{
	if (c->bad[0])
		fail_msg("%s", c->bad);
}

/* consume everything; checks seqs first..first+n-1 in order */
static void drain_expect(struct tdb_ring *cr, const struct rmem *m,
			 uint32_t first, unsigned int n)
{
	struct coll *c = malloc(sizeof(*c));
	unsigned int i;
	int rc;

	assert_non_null(c);
	coll_init(c, m);
	do {
		rc = tdb_ring_consume(cr, 1000, collect, c);
		assert_true(rc >= 0);
	} while (rc > 0);
	coll_ok(c);
	if (c->n != n)
		fail_msg("consumer got %u messages, expected %u", c->n, n);
	for (i = 0; i < n && i < MAXREC; i++)
		if (c->seq[i] != first + i)
			fail_msg("message %u has seq %u, expected %u", i,
				 c->seq[i], first + i);
	free(c);
}

static int count_fn(void *arg, const struct nlmsghdr *nlh)
{
	(void)nlh;
	(*(unsigned int *)arg)++;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* format and attach                                                    */

static void test_format_errors(void **state)
{
	static const uint32_t bad_sizes[] = {
		0, 1, 2048, 4095, 4097, 6144, 12288, 65535, 65537,
		(1u << 30) + 4096, 1u << 31, 0xffffffffu,
	};
	static const uint32_t good_sizes[] = { 4096, 8192, 1u << 20, 1u << 30 };
	unsigned char *hdr = aligned_alloc(4096, HDR);
	size_t i;

	(void)state;
	assert_non_null(hdr);
	for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		if (tdb_ring_format(hdr, TDB_RING_SUBMIT, bad_sizes[i], 0) !=
		    -EINVAL)
			fail_msg("format accepted data_size %u", bad_sizes[i]);
	for (i = 0; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++)
		assert_int_equal(tdb_ring_format(hdr, TDB_RING_COMPLETE,
						 good_sizes[i], 0), 0);
	/* kinds */
	assert_int_equal(tdb_ring_format(hdr, 0, 4096, 0), -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, 4, 4096, 0), -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, 0xffffffffu, 4096, 0), -EINVAL);
	/* max_msg: at most data_size / 2, at least a header */
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 2049),
			 -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 2052),
			 -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 4096),
			 -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 8),
			 -EINVAL);
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 2048), 0);
	assert_int_equal(tdb_ring_format(hdr, TDB_RING_SUBMIT, 4096, 16), 0);
	free(hdr);
}

static void test_format_fields(void **state)
{
	struct rmem m;
	struct tdb_ring_hdr *h;

	(void)state;
	rm_map(&m, 8192);
	h = m.hdr;
	memset(h, 0xee, HDR);       /* format must clear everything */
	assert_int_equal(tdb_ring_format(m.base, TDB_RING_FEED, 8192, 0), 0);
	assert_true(h->magic == TDB_RING_MAGIC);
	assert_int_equal(h->version, TDB_RING_VERSION);
	assert_int_equal(h->kind, TDB_RING_FEED);
	assert_int_equal(h->hdr_size, TDB_RING_HDR_SIZE);
	assert_int_equal(h->data_size, 8192);
	assert_int_equal(h->max_msg, 4096);     /* 0 = data_size / 2 */
	assert_true(h->prod == 0 && h->tail == 0 && h->cons == 0);
	assert_int_equal(h->flags, 0);
	assert_int_equal(h->futex, 0);
	/* the ABI's cache-line layout */
	assert_int_equal(offsetof(struct tdb_ring_hdr, prod), 64);
	assert_int_equal(offsetof(struct tdb_ring_hdr, tail), 256);   /* own line */
	assert_int_equal(offsetof(struct tdb_ring_hdr, cons), 128);
	assert_int_equal(offsetof(struct tdb_ring_hdr, flags), 192);
	assert_int_equal(offsetof(struct tdb_ring_hdr, futex), 196);
	assert_int_equal(offsetof(struct tdb_ring_hdr, read_section), 320);
	assert_int_equal(offsetof(struct tdb_ring_hdr, read_expired), 384);
	assert_int_equal(sizeof(struct tdb_ring_hdr), 448);
	/* an explicit max_msg is kept (4-byte aligned) */
	assert_int_equal(tdb_ring_format(m.base, TDB_RING_SUBMIT, 8192, 1000),
			 0);
	assert_int_equal(h->max_msg, 1000);
	rm_free(&m);
}

/* Every way a header can be bad: attach says -EPROTO and why. */
static void expect_attach_eproto(struct rmem *m, size_t map, uint32_t kind,
				 const char *what)
{
	struct tdb_ring r;
	int rc;
	const char *e;

	rc = tdb_ring_attach_consumer(&r, m->hdr, m->data, map, kind);
	e = tdb_ring_error(&r);
	if (rc != -EPROTO)
		fail_msg("%s: attach_consumer returned %d, not -EPROTO", what,
			 rc);
	if (!e || !e[0])
		fail_msg("%s: attach_consumer gave no error text", what);
	rc = tdb_ring_attach_producer(&r, m->hdr, m->data, map, kind);
	e = tdb_ring_error(&r);
	if (rc != -EPROTO)
		fail_msg("%s: attach_producer returned %d, not -EPROTO", what,
			 rc);
	if (!e || !e[0])
		fail_msg("%s: attach_producer gave no error text", what);
}

/* Bad indices: the producer refuses to attach on them; the consumer
 * refuses to attach or, since it re-checks prod on every call anyway,
 * refuses on the first consume. */
static void expect_indices_eproto(struct rmem *m, const char *what)
{
	struct tdb_ring r;
	unsigned int calls = 0;
	int rc;

	rc = tdb_ring_attach_producer(&r, m->hdr, m->data, m->size,
				      TDB_RING_SUBMIT);
	if (rc != -EPROTO || !tdb_ring_error(&r))
		fail_msg("%s: attach_producer returned %d, not -EPROTO", what,
			 rc);
	rc = tdb_ring_attach_consumer(&r, m->hdr, m->data, m->size,
				      TDB_RING_SUBMIT);
	if (rc == 0) {
		rc = tdb_ring_consume(&r, 100, count_fn, &calls);
		tdb_ring_detach(&r);
	}
	if (rc != -EPROTO || !tdb_ring_error(&r) || calls)
		fail_msg("%s: consumer attach/consume returned %d, not -EPROTO",
			 what, rc);
}

static void test_attach_errors(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct tdb_ring_hdr *h;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 8192, 0);
	h = m.hdr;
#define RESET() assert_int_equal(tdb_ring_format(m.base, TDB_RING_SUBMIT, \
						 8192, 0), 0)
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);

	h->magic ^= 1;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "bad magic");
	h->magic = 0;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "zero magic");
	RESET();
	h->version = TDB_RING_VERSION + 1;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "version");
	h->version = 0;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "version 0");
	RESET();
	expect_attach_eproto(&m, 8192, TDB_RING_COMPLETE, "other kind");
	expect_attach_eproto(&m, 8192, TDB_RING_FEED, "other kind (feed)");
	h->kind = 9;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "kind 9");
	RESET();
	h->hdr_size = 8192;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "hdr_size");
	RESET();
	h->data_size = 6144;
	expect_attach_eproto(&m, 6144, TDB_RING_SUBMIT,
			     "data_size not a power of two");
	h->data_size = 2048;
	expect_attach_eproto(&m, 2048, TDB_RING_SUBMIT, "data_size < 4 KiB");
	h->data_size = 0;
	expect_attach_eproto(&m, 0, TDB_RING_SUBMIT, "data_size 0");
	h->data_size = 1u << 31;
	expect_attach_eproto(&m, 1u << 31, TDB_RING_SUBMIT,
			     "data_size 2 GiB");
	RESET();
	expect_attach_eproto(&m, 4096, TDB_RING_SUBMIT, "mapping smaller");
	expect_attach_eproto(&m, 16384, TDB_RING_SUBMIT, "mapping larger");
	expect_attach_eproto(&m, 8191, TDB_RING_SUBMIT, "mapping 8191");
	h->max_msg = 4100;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT,
			     "max_msg > data_size / 2");
	h->max_msg = 8192;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT,
			     "max_msg = data_size");
	h->max_msg = 0xfffffff0u;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "max_msg huge");
	h->max_msg = 8;
	expect_attach_eproto(&m, 8192, TDB_RING_SUBMIT, "max_msg < header");
	RESET();
	/* indices */
	h->prod = 8192 + 4;
	expect_indices_eproto(&m, "prod more than a ring ahead of cons");
	h->prod = 6;
	expect_indices_eproto(&m, "prod unaligned");
	h->prod = 64;
	h->cons = 128;
	expect_indices_eproto(&m, "cons past prod");
	RESET();
	h->prod = h->cons = 1000;       /* any aligned, consistent place */
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
#undef RESET
	rm_free(&m);
}

/* ------------------------------------------------------------------ */
/* empty, one message, full, wrap                                       */

static void test_empty(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned int calls = 0;
	uint64_t t0;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	assert_int_equal(tdb_ring_consume(&c, 100, count_fn, &calls), 0);
	assert_int_equal(calls, 0);
	assert_int_equal(tdb_ring_pending(&c), 0);
	assert_int_equal(tdb_ring_publish(&p), 0);      /* nothing to do */
	assert_int_equal(tdb_ring_pending(&c), 0);
	assert_int_equal(tdb_ring_wait(&c, 0), -ETIMEDOUT);
	t0 = now_ns();
	assert_int_equal(tdb_ring_wait(&c, 30), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 25000000u);
	assert_int_equal(tdb_ring_consume(&c, 100, count_fn, &calls), 0);
	assert_true(m.hdr->prod == 0 && m.hdr->cons == 0);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_single(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll col;
	unsigned char *w;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	w = post(&p, 100, 7);
	assert_ptr_equal(w, m.data);
	/* committed, not published: invisible */
	assert_true(m.hdr->prod == 0);
	assert_int_equal(tdb_ring_pending(&c), 0);
	coll_init(&col, &m);
	assert_int_equal(tdb_ring_consume(&c, 10, collect, &col), 0);
	assert_int_equal(tdb_ring_publish(&p), 0);      /* nobody sleeps */
	assert_true(m.hdr->prod == 100);
	assert_int_equal(tdb_ring_pending(&c), 100);
	assert_int_equal(tdb_ring_consume(&c, 10, collect, &col), 1);
	coll_ok(&col);
	assert_int_equal(col.seq[0], 7);
	assert_int_equal(col.len[0], 100);
	assert_true(m.hdr->cons == 100);
	assert_int_equal(tdb_ring_pending(&c), 0);
	assert_int_equal(tdb_ring_consume(&c, 10, collect, &col), 0);
	assert_int_equal(col.n, 1);
	/* the header's nlmsg_len is the committed length */
	w = post(&p, 200, 8);
	assert_ptr_equal(w, m.data + 100);
	assert_true(tdb_ring_publish(&p) >= 0);
	drain_expect(&c, &m, 8, 1);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* nlmsg_len need not be a multiple of 4: the next message starts at
 * NLMSG_ALIGN(len). */
static void test_unaligned_len(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll col;
	static const uint32_t lens[] = { 17, 18, 19, 20, 21, 33, 1023 };
	uint32_t i, off = 0;

	(void)state;
	rm_new(&m, TDB_RING_COMPLETE, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_COMPLETE);
	for (i = 0; i < 7; i++) {
		unsigned char *w = post(&p, lens[i], i);

		assert_ptr_equal(w, m.data + off);
		off += NLMSG_ALIGN(lens[i]);
	}
	tdb_ring_publish(&p);
	assert_true(m.hdr->prod == off);
	coll_init(&col, &m);
	assert_int_equal(tdb_ring_consume(&c, 100, collect, &col), 7);
	coll_ok(&col);
	for (i = 0; i < 7; i++) {
		assert_int_equal(col.seq[i], i);
		assert_int_equal(col.len[i], lens[i]);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_full(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll col;
	unsigned int n = 0, i;
	unsigned char *w;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	/* 64-byte messages fill 4096 bytes exactly: all of it is usable */
	while ((w = tdb_ring_reserve(&p, 64)) != NULL) {
		assert_ptr_equal(w, m.data + 64 * n);
		build(w, 64, n);
		assert_int_equal(tdb_ring_commit(&p, 64), 0);
		n++;
		assert_true(n <= 64);
	}
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(n, 64);
	/* full whatever the size; a failed reserve leaves nothing open */
	assert_null(tdb_ring_reserve(&p, 16));
	assert_int_equal(errno, EAGAIN);
	assert_null(tdb_ring_reserve(&p, 2048));
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(tdb_ring_wait_space(&p, 16, 0), -ETIMEDOUT);
	/* wait_space publishes what was committed */
	assert_true(m.hdr->prod == 4096);
	assert_int_equal(tdb_ring_publish(&p), 0);
	assert_int_equal(tdb_ring_pending(&c), 4096);
	/* still full after publishing: the consumer has not moved */
	assert_null(tdb_ring_reserve(&p, 16));
	assert_int_equal(errno, EAGAIN);
	/* consume 10: exactly 10 slots come back, then full again */
	coll_init(&col, &m);
	assert_int_equal(tdb_ring_consume(&c, 10, collect, &col), 10);
	coll_ok(&col);
	assert_true(m.hdr->cons == 640);
	for (i = 0; i < 10; i++) {
		w = tdb_ring_reserve(&p, 64);
		if (!w)
			fail_msg("reserve %u after consuming 10: errno %d", i,
				 errno);
		assert_ptr_equal(w, m.data + 64 * i);
		build(w, 64, 64 + i);
		assert_int_equal(tdb_ring_commit(&p, 64), 0);
	}
	assert_null(tdb_ring_reserve(&p, 16));
	assert_int_equal(errno, EAGAIN);
	tdb_ring_publish(&p);
	/* nothing was overwritten: 10..73 in order, intact */
	drain_expect(&c, &m, 10, 64);
	assert_true(m.hdr->cons == 4096 + 640);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_wrap_noop(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	const struct nlmsghdr *noop;
	unsigned int i;
	unsigned char *w;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 40; i++)        /* 4000 bytes, 96 left at the end */
		post(&p, 100, i);
	/* the 41st needs 96 bytes of padding + 100: the ring is full */
	assert_null(tdb_ring_reserve(&p, 100));
	assert_int_equal(errno, EAGAIN);
	/* a message of 96 bytes fits the end exactly, with no padding */
	w = tdb_ring_reserve(&p, 96);
	assert_ptr_equal(w, m.data + 4000);
	tdb_ring_abort(&p);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 0, 40);
	/* now it wraps: NOOP at 4000 covering the last 96 bytes */
	w = post(&p, 100, 40);
	assert_ptr_equal(w, m.data);
	noop = (const struct nlmsghdr *)(m.data + 4000);
	assert_int_equal(noop->nlmsg_type, NLMSG_NOOP);
	assert_int_equal(noop->nlmsg_len, 96);
	post(&p, 200, 41);
	tdb_ring_publish(&p);
	assert_true(m.hdr->prod == 4096 + 300);
	assert_int_equal(tdb_ring_pending(&c), 396);
	drain_expect(&c, &m, 40, 2);     /* the NOOP is not handed up */
	assert_true(m.hdr->cons == 4096 + 300);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* Fewer than 16 bytes left at the end: skipped, no message written. */
static void test_tail_skip(void **state)
{
	static const uint32_t rems[] = { 4, 8, 12, 16, 20 };
	unsigned int k;

	(void)state;
	for (k = 0; k < 5; k++) {
		uint32_t rem = rems[k], fill = 4096 - rem, seq = 0, i;
		struct rmem m;
		struct tdb_ring p, c;
		unsigned char *w;

		rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
		attach_both(&m, &p, &c, TDB_RING_SUBMIT);
		while (fill) {
			uint32_t len = fill > 1000 + 16 ? 1000 : fill;

			post(&p, len, seq++);
			fill -= len;
		}
		tdb_ring_publish(&p);
		drain_expect(&c, &m, 0, seq);
		assert_true(m.hdr->cons == 4096 - rem);
		/* 24 bytes do not fit in rem (<= 20): wrap */
		w = post(&p, 24, seq);
		assert_ptr_equal(w, m.data);
		for (i = 4096 - rem; i < 4096; i++)
			if (rem < NLMSG_HDRLEN && m.data[i] != 0xa5)
				fail_msg("rem %u: byte %u of the skipped end "
					 "was written", rem, i);
		if (rem >= NLMSG_HDRLEN) {
			const struct nlmsghdr *noop = (const void *)
				(m.data + 4096 - rem);

			assert_int_equal(noop->nlmsg_type, NLMSG_NOOP);
			assert_int_equal(noop->nlmsg_len, rem);
		}
		tdb_ring_publish(&p);
		assert_true(m.hdr->prod == 4096 + 24);
		drain_expect(&c, &m, seq, 1);
		assert_true(m.hdr->cons == 4096 + 24);
		tdb_ring_detach(&c);
		tdb_ring_detach(&p);
		rm_free(&m);
	}
}

static void test_max_msg(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char *w;
	unsigned int round;

	(void)state;
	/* default max_msg: data_size / 2 */
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	assert_null(tdb_ring_reserve(&p, 2049));
	assert_int_equal(errno, EMSGSIZE);
	assert_null(tdb_ring_reserve(&p, 1u << 20));
	assert_int_equal(errno, EMSGSIZE);
	assert_null(tdb_ring_reserve(&p, SIZE_MAX));
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(tdb_ring_wait_space(&p, 2049, 0), -EMSGSIZE);
	post(&p, 100, 0);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 0, 1);
	/* max-size messages at every alignment of the ring, wrapping */
	for (round = 0; round < 8; round++) {
		w = post(&p, 2048, 1 + round);
		assert_true(w == m.data || w == m.data + 2048 ||
			    (w > m.data && w + 2048 <= m.data + 4096));
		tdb_ring_publish(&p);
		drain_expect(&c, &m, 1 + round, 1);
		post(&p, 16 + 8 * round, 100 + round);
		tdb_ring_publish(&p);
		drain_expect(&c, &m, 100 + round, 1);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);

	/* explicit max_msg */
	rm_new(&m, TDB_RING_COMPLETE, 8192, 1000);
	attach_both(&m, &p, &c, TDB_RING_COMPLETE);
	assert_null(tdb_ring_reserve(&p, 1001));
	assert_int_equal(errno, EMSGSIZE);
	for (round = 0; round < 8; round++)     /* 8 x 1000 fit */
		post(&p, 1000, round);
	assert_null(tdb_ring_reserve(&p, 1000));
	assert_int_equal(errno, EAGAIN);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 0, 8);
	for (round = 8; round < 40; round++) {  /* and wrap, many times */
		post(&p, 1000, round);
		tdb_ring_publish(&p);
		drain_expect(&c, &m, round, 1);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_put(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char buf[4096];

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 1024);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	build(buf, 300, 1);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), 0);
	build(buf, 1024, 2);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), 0);
	build(buf, 1025, 3);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), -EMSGSIZE);
	build(buf, 16, 3);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), 0);
	build(buf, 16, 4);
	((struct nlmsghdr *)buf)->nlmsg_len = 15;
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), -EINVAL);
	((struct nlmsghdr *)buf)->nlmsg_len = 0;
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), -EINVAL);
	build(buf, 1024, 4);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), 0);
	build(buf, 1024, 5);            /* 3388 bytes used */
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), 0);
	build(buf, 1024, 6);
	assert_int_equal(tdb_ring_put(&p, (struct nlmsghdr *)buf), -EAGAIN);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 1, 5);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_commit_errors(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char *w;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	/* no reservation open */
	assert_int_equal(tdb_ring_commit(&p, 64), -EINVAL);
	/* reserve below a header */
	assert_null(tdb_ring_reserve(&p, 15));
	assert_int_equal(errno, EINVAL);
	assert_null(tdb_ring_reserve(&p, 0));
	assert_int_equal(errno, EINVAL);
	w = tdb_ring_reserve(&p, 64);
	assert_non_null(w);
	/* one reservation at a time */
	assert_null(tdb_ring_reserve(&p, 64));
	assert_int_equal(errno, EINVAL);
	build(w, 64, 0);
	assert_int_equal(tdb_ring_commit(&p, 68), -EINVAL);   /* longer */
	assert_int_equal(tdb_ring_commit(&p, 4096), -EINVAL);
	assert_int_equal(tdb_ring_commit(&p, 15), -EINVAL);   /* < header */
	assert_int_equal(tdb_ring_commit(&p, 0), -EINVAL);
	tdb_ring_publish(&p);
	assert_int_equal(tdb_ring_pending(&c), 0);    /* nothing went out */
	tdb_ring_abort(&p);
	/* shorter than reserved is fine */
	w = tdb_ring_reserve(&p, 64);
	assert_ptr_equal(w, m.data);
	build(w, 40, 1);
	assert_int_equal(tdb_ring_commit(&p, 40), 0);
	assert_int_equal(tdb_ring_commit(&p, 40), -EINVAL);   /* twice */
	tdb_ring_publish(&p);
	assert_true(m.hdr->prod == 40);
	drain_expect(&c, &m, 1, 1);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* "-EINVAL if len is not within what was reserved": a reservation of 62
 * bytes does not cover a commit of 63 or 64, even though the ring rounds
 * the room up to 64. */
static void test_commit_past_reserved_len(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char *w;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	w = tdb_ring_reserve(&p, 62);
	assert_non_null(w);
	build(w, 62, 0);
	if (tdb_ring_commit(&p, 63) != -EINVAL)
		fail_msg("reserve(62) then commit(63) was accepted: commit "
			 "checks NLMSG_ALIGN(len) against the aligned "
			 "reservation, not len against what was reserved");
	assert_int_equal(tdb_ring_commit(&p, 64), -EINVAL);
	tdb_ring_abort(&p);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* Lengths beyond 32 bits: NLMSG_ALIGN() works in 32 bits (its mask is
 * an unsigned int), so it must not be applied before the range check. */
static void test_commit_huge_len(void **state)
{
	static const size_t lens[] = { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 2,
				       SIZE_MAX - 3, (size_t)1 << 32,
				       ((size_t)1 << 32) + 16,
				       ((size_t)1 << 32) + 64,
				       ((size_t)1 << 33) + 20 };
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char *w;
	unsigned int k;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		int rc;

		w = tdb_ring_reserve(&p, 64);
		assert_non_null(w);
		build(w, 64, k);
		rc = tdb_ring_commit(&p, lens[k]);
		if (rc != -EINVAL)
			fail_msg("reserve(64) then commit(%#zx) returned %d, "
				 "not -EINVAL (nlmsg_len now %#x): "
				 "NLMSG_ALIGN(len) truncates to 32 bits and "
				 "passes the check against the reservation",
				 lens[k], rc,
				 ((struct nlmsghdr *)w)->nlmsg_len);
		tdb_ring_abort(&p);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_abort(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char *w, *w2;
	unsigned int i;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	post(&p, 100, 0);
	w = tdb_ring_reserve(&p, 500);
	assert_ptr_equal(w, m.data + 100);
	build(w, 500, 99);
	tdb_ring_abort(&p);
	tdb_ring_abort(&p);             /* harmless twice */
	assert_int_equal(tdb_ring_commit(&p, 500), -EINVAL);
	w2 = post(&p, 200, 1);          /* the aborted room is reused */
	assert_ptr_equal(w2, w);
	tdb_ring_publish(&p);
	assert_true(m.hdr->prod == 300);
	drain_expect(&c, &m, 0, 2);
	/* abort a reservation that padded the end: the padding stays, the
	 * consumer skips it, the next message goes to position 0 */
	for (i = 0; i < 37; i++)        /* 300 + 3700 = 4000 */
		post(&p, 100, 2 + i);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 2, 37);
	w = tdb_ring_reserve(&p, 200);
	assert_ptr_equal(w, m.data);
	tdb_ring_abort(&p);
	tdb_ring_publish(&p);
	assert_int_equal(tdb_ring_consume(&c, 10, count_fn, &i), 0);
	w = post(&p, 300, 50);
	assert_ptr_equal(w, m.data);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 50, 1);
	assert_true(m.hdr->cons == 4096 + 300);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* Many commits, one publish: nothing moves in the header until then. */
static void test_batch(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll *col = malloc(sizeof(*col));
	unsigned int i, round;
	uint32_t seq = 0;

	(void)state;
	assert_non_null(col);
	rm_new(&m, TDB_RING_SUBMIT, 65536, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (round = 0; round < 20; round++) {
		uint64_t prod0 = m.hdr->prod;
		unsigned int n = 50 + round * 7;

		for (i = 0; i < n; i++) {
			post(&p, 16 + (seq * 37) % 200, seq);
			seq++;
			assert_true(m.hdr->prod == prod0);
			assert_int_equal(tdb_ring_pending(&c), 0);
		}
		assert_int_equal(tdb_ring_publish(&p), 0);
		assert_int_equal(tdb_ring_publish(&p), 0);  /* no-op */
		assert_true(m.hdr->prod != prod0);
		assert_true(m.hdr->flags == 0 && m.hdr->futex == 0);
		coll_init(col, &m);
		assert_int_equal(tdb_ring_consume(&c, 100000, collect, col),
				 (int)n);
		coll_ok(col);
		for (i = 0; i < n; i++)
			assert_int_equal(col->seq[i], seq - n + i);
	}
	free(col);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_budget(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll col;
	unsigned int i;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 10; i++)
		post(&p, 64, i);
	tdb_ring_publish(&p);
	coll_init(&col, &m);
	assert_int_equal(tdb_ring_consume(&c, 0, collect, &col), 0);
	assert_int_equal(tdb_ring_pending(&c), 640);
	assert_int_equal(tdb_ring_consume(&c, 3, collect, &col), 3);
	assert_true(m.hdr->cons == 192);        /* handed back at the end */
	assert_int_equal(tdb_ring_pending(&c), 448);
	assert_int_equal(tdb_ring_consume(&c, 1, collect, &col), 1);
	assert_int_equal(tdb_ring_consume(&c, 3, collect, &col), 3);
	assert_int_equal(tdb_ring_consume(&c, 100, collect, &col), 3);
	assert_int_equal(tdb_ring_consume(&c, 100, collect, &col), 0);
	coll_ok(&col);
	assert_int_equal(col.n, 10);
	for (i = 0; i < 10; i++)
		assert_int_equal(col.seq[i], i);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_fn_error(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct coll col;
	unsigned int i;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 10; i++)
		post(&p, 64, i);
	tdb_ring_publish(&p);
	coll_init(&col, &m);
	col.stop_at = 3;
	assert_int_equal(tdb_ring_consume(&c, 100, collect, &col), -ECANCELED);
	assert_int_equal(col.n, 3);
	/* the message that stopped counts as consumed */
	assert_int_equal(tdb_ring_pending(&c), 7 * 64);
	assert_true(m.hdr->cons == 3 * 64);
	col.stop_at = 0;
	assert_int_equal(tdb_ring_consume(&c, 100, collect, &col), 7);
	coll_ok(&col);
	for (i = 0; i < 10; i++)
		assert_int_equal(col.seq[i], i);
	/* the ring is not dead after a callback error */
	assert_null(tdb_ring_error(&c));
	post(&p, 64, 10);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 10, 1);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* pending: bytes published and not consumed, padding included */
static void test_pending(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned int i, dummy = 0;
	long expect = 0;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 30; i++) {
		post(&p, 100 + i, i);
		expect += NLMSG_ALIGN(100 + i);
		if (i % 3 == 2) {
			tdb_ring_publish(&p);
			assert_int_equal(tdb_ring_pending(&c), expect);
		}
	}
	assert_int_equal(tdb_ring_consume(&c, 5, count_fn, &dummy), 5);
	expect -= 100 + 104 + 104 + 104 + 104;
	assert_int_equal(tdb_ring_pending(&c), expect);
	drain_expect(&c, &m, 5, 25);
	assert_int_equal(tdb_ring_pending(&c), 0);
	/* across a wrap the padding is pending too, until skipped */
	for (i = 0; i < 3; i++)
		post(&p, 300, 100 + i);
	tdb_ring_publish(&p);
	assert_true(tdb_ring_pending(&c) >= 900);
	assert_int_equal(tdb_ring_pending(&c), (long)(m.hdr->prod - m.hdr->cons));
	drain_expect(&c, &m, 100, 3);
	assert_int_equal(tdb_ring_pending(&c), 0);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* ------------------------------------------------------------------ */
/* sleeping and waking                                                  */

struct sleeper {
	struct tdb_ring *c;
	struct rmem *m;
	int efd, epfd;          /* eventfd mode when efd >= 0 */
	bool use_epoll;
	int rc;                 /* last wait/epoll result */
	unsigned int waits, got;
	uint64_t slept_ns;
	char bad[160];
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	uint64_t t0 = now_ns();

	for (;;) {
		int n = tdb_ring_consume(s->c, 100, count_fn, &s->got);

		if (n < 0) {
			snprintf(s->bad, sizeof(s->bad), "consume: %d", n);
			break;
		}
		if (s->got)
			break;
		if (now_ns() - t0 > 10000000000ull) {
			snprintf(s->bad, sizeof(s->bad),
				 "not woken in 10 s (%u waits)", s->waits);
			break;
		}
		s->waits++;
		if (s->use_epoll) {
			struct epoll_event ev;
			uint64_t cnt;

			/* arm: set the waiting flag; 0 if a message came */
			s->rc = tdb_ring_wait(s->c, 0);
			if (s->rc == 0)
				continue;
			if (s->rc != -ETIMEDOUT) {
				snprintf(s->bad, sizeof(s->bad),
					 "arming wait: %d", s->rc);
				break;
			}
			s->rc = epoll_wait(s->epfd, &ev, 1, 10000);
			if (s->rc != 1) {
				snprintf(s->bad, sizeof(s->bad),
					 "epoll_wait: %d", s->rc);
				break;
			}
			if (read(s->efd, &cnt, sizeof(cnt)) != sizeof(cnt)) {
				snprintf(s->bad, sizeof(s->bad),
					 "eventfd readable but read failed");
				break;
			}
		} else {
			s->rc = tdb_ring_wait(s->c, 10000);
			if (s->rc != 0 && s->rc != -EINTR) {
				snprintf(s->bad, sizeof(s->bad),
					 "tdb_ring_wait: %d", s->rc);
				break;
			}
		}
	}
	s->slept_ns = now_ns() - t0;
	return NULL;
}

/* wait up to 5 s for a flag in the header */
static void wait_flag(struct rmem *m, uint32_t flag)
{
	uint64_t t0 = now_ns();

	while (!(__atomic_load_n(&m->hdr->flags, __ATOMIC_ACQUIRE) & flag)) {
		if (now_ns() - t0 > 5000000000ull)
			fail_msg("flag %#x never set", flag);
		usleep(100);
	}
}

static void run_sleeper(bool eventfd_mode, bool use_epoll)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct sleeper s;
	pthread_t th;
	uint32_t fx;
	int rc;

	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	memset(&s, 0, sizeof(s));
	s.c = &c;
	s.m = &m;
	s.efd = s.epfd = -1;
	s.use_epoll = use_epoll;
	if (eventfd_mode) {
		struct epoll_event ev = { .events = EPOLLIN };
		uint64_t cnt;

		s.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		assert_true(s.efd >= 0);
		tdb_ring_set_eventfd(&p, s.efd);
		tdb_ring_set_eventfd(&c, s.efd);
		/* steady state: no wake-up is written while nobody sleeps */
		post(&p, 64, 0);
		assert_int_equal(tdb_ring_publish(&p), 0);
		assert_true(read(s.efd, &cnt, sizeof(cnt)) < 0 &&
			    errno == EAGAIN);
		drain_expect(&c, &m, 0, 1);
		s.epfd = epoll_create1(EPOLL_CLOEXEC);
		assert_true(s.epfd >= 0);
		assert_int_equal(epoll_ctl(s.epfd, EPOLL_CTL_ADD, s.efd, &ev),
				 0);
	}
	fx = m.hdr->futex;
	assert_int_equal(pthread_create(&th, NULL, sleeper_main, &s), 0);
	wait_flag(&m, TDB_RING_F_CONS_WAITING);
	usleep(30000);                  /* let it get into the kernel */
	post(&p, 64, 1);
	rc = tdb_ring_publish(&p);
	assert_int_equal(pthread_join(th, NULL), 0);
	if (s.bad[0])
		fail_msg("sleeper (eventfd %d, epoll %d): %s", eventfd_mode,
			 use_epoll, s.bad);
	assert_int_equal(rc, 1);                /* a wake-up was sent */
	assert_int_equal(s.got, 1);
	assert_true(s.slept_ns >= 20000000u);   /* it really slept */
	assert_true(m.hdr->futex != fx);
	assert_int_equal(m.hdr->flags & TDB_RING_F_CONS_WAITING, 0);
	/* and the steady state is quiet again */
	post(&p, 64, 2);
	assert_int_equal(tdb_ring_publish(&p), 0);
	drain_expect(&c, &m, 2, 1);
	if (s.efd >= 0) {
		close(s.epfd);
		close(s.efd);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

static void test_wake_futex(void **state)
{
	(void)state;
	run_sleeper(false, false);
}

static void test_wake_eventfd_poll(void **state)
{
	(void)state;
	run_sleeper(true, false);       /* tdb_ring_wait polls the eventfd */
}

static void test_wake_eventfd_epoll(void **state)
{
	(void)state;
	run_sleeper(true, true);        /* the caller's own epoll loop */
}

struct space_waiter {
	struct tdb_ring *p;
	size_t len;
	int rc;
	uint64_t ns;
};

static void *space_main(void *arg)
{
	struct space_waiter *w = arg;
	uint64_t t0 = now_ns();

	w->rc = tdb_ring_wait_space(w->p, w->len, 10000);
	w->ns = now_ns() - t0;
	return NULL;
}

static void test_wait_space(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct space_waiter w = { .len = 1024 };
	pthread_t th;
	unsigned int i, dummy = 0;
	uint64_t t0;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 4; i++)
		post(&p, 1024, i);
	assert_null(tdb_ring_reserve(&p, 16));
	/* there is room for nothing: time out */
	t0 = now_ns();
	assert_int_equal(tdb_ring_wait_space(&p, 16, 30), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 25000000u);
	assert_true(m.hdr->prod == 4096);       /* it published first */
	/* asleep for space; the consumer frees one message and wakes it */
	w.p = &p;
	assert_int_equal(pthread_create(&th, NULL, space_main, &w), 0);
	wait_flag(&m, TDB_RING_F_PROD_WAITING);
	usleep(30000);
	assert_int_equal(tdb_ring_consume(&c, 1, count_fn, &dummy), 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.rc, 0);
	assert_true(w.ns >= 20000000u);
	assert_int_equal(m.hdr->flags & TDB_RING_F_PROD_WAITING, 0);
	post(&p, 1024, 4);
	/* room now: no wait */
	assert_int_equal(tdb_ring_consume(&c, 1, count_fn, &dummy), 1);
	assert_int_equal(tdb_ring_wait_space(&p, 1024, 0), 0);
	tdb_ring_publish(&p);
	drain_expect(&c, &m, 2, 3);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/*
 * The ABI's sleeping rule: the sleeper reads `futex` BEFORE it sets its
 * waiting flag.  Here a peer acts exactly between the producer's setting
 * of TDB_RING_F_PROD_WAITING and its going to sleep: a hardware write
 * watchpoint on `flags` (perf_event_open, sigtrap) stops the producer
 * right after it set the flag, and the signal handler, as the consumer,
 * frees too little space (one message), which clears the flag and bumps
 * the futex.  The producer then needs to sleep; 200 ms later the consumer
 * frees enough.  The producer must be woken then, not time out: had it
 * read the futex after setting the flag, it would sleep on the bumped
 * value with its flag already cleared, and nobody would wake it.
 */
static struct {
	int bp_fd;
	struct tdb_ring *c;
	int done;
	unsigned int n;
} race;

static void race_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	ioctl(race.bp_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (race.done)
		return;
	/* the consumer takes one message: too little room, but it sees the
	 * flag, clears it and bumps the futex */
	tdb_ring_consume(race.c, 1, count_fn, &race.n);
	__atomic_store_n(&race.done, 1, __ATOMIC_RELEASE);
}

static void *race_consumer(void *arg)
{
	unsigned int dummy = 0;

	(void)arg;
	while (!__atomic_load_n(&race.done, __ATOMIC_ACQUIRE))
		usleep(100);
	usleep(200000);
	tdb_ring_consume(race.c, 1, count_fn, &dummy);  /* now enough */
	return NULL;
}

static void test_wait_space_flag_race(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	struct perf_event_attr a;
	struct sigaction sa, old;
	pthread_t th;
	unsigned int i;
	uint64_t t0, ms;
	int rc;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 4; i++)
		post(&p, 1024, i);
	tdb_ring_publish(&p);
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_W;
	a.bp_addr = (uintptr_t)&m.hdr->flags;
	a.bp_len = HW_BREAKPOINT_LEN_4;
	a.sample_period = 1;
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	race.bp_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1,
				  PERF_FLAG_FD_CLOEXEC);
	if (race.bp_fd < 0) {
		print_message("no hardware watchpoints here (%s): skipped\n",
			      strerror(errno));
		tdb_ring_detach(&c);
		tdb_ring_detach(&p);
		rm_free(&m);
		skip();
	}
	race.c = &c;
	race.done = 0;
	race.n = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = race_trap;
	sa.sa_flags = SA_SIGINFO;
	assert_int_equal(sigaction(SIGTRAP, &sa, &old), 0);
	assert_int_equal(pthread_create(&th, NULL, race_consumer, NULL), 0);
	/* the ring is full; a 2048-byte message needs two freed */
	assert_null(tdb_ring_reserve(&p, 2048));
	t0 = now_ns();
	ioctl(race.bp_fd, PERF_EVENT_IOC_ENABLE, 0);
	rc = tdb_ring_wait_space(&p, 2048, 3000);
	ioctl(race.bp_fd, PERF_EVENT_IOC_DISABLE, 0);
	ms = (now_ns() - t0) / 1000000u;
	assert_int_equal(pthread_join(th, NULL), 0);
	sigaction(SIGTRAP, &old, NULL);
	close(race.bp_fd);
	assert_int_equal(race.done, 1);
	assert_int_equal(race.n, 1);
	if (rc != 0)
		fail_msg("tdb_ring_wait_space returned %d after %llu ms, though "
			 "the room was there after ~200 ms (flags %#x, cons "
			 "%llu): the producer read the futex after setting "
			 "TDB_RING_F_PROD_WAITING, a consumer's wake-up in "
			 "between cleared the flag and bumped the futex, and "
			 "the producer slept on the new value unflagged: a lost "
			 "wake-up", rc, (unsigned long long)ms, m.hdr->flags,
			 (unsigned long long)m.hdr->cons);
	assert_true(ms < 2000);
	assert_non_null(tdb_ring_reserve(&p, 2048));
	tdb_ring_abort(&p);
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* ------------------------------------------------------------------ */
/* protocol violations                                                  */

static void raw_msg(struct rmem *m, uint32_t off, uint32_t len,
		    uint16_t type)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(m->data + off);

	nlh->nlmsg_len = len;
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = 0;
	nlh->nlmsg_seq = 0;
	nlh->nlmsg_pid = 0;
}

enum cv_case {
	CV_PROD_TOO_FAR, CV_PROD_UNALIGNED, CV_PROD_BACK, CV_LEN_SHORT,
	CV_LEN_ZERO, CV_LEN_OVER_MAX, CV_LEN_PAST_PROD, CV_PAST_END,
	CV_PROD_IN_SKIP, CV_PROD_IN_HDR, CV_NOOP_SHORT, CV_NOOP_PAST_END,
	CV_N
};

static void test_consumer_violations(void **state)
{
	unsigned int k;

	(void)state;
	for (k = 0; k < CV_N; k++) {
		struct rmem m;
		struct tdb_ring c;
		struct tdb_ring_hdr *h;
		unsigned int calls = 0, dummy;
		uint64_t base = 0;
		long pend;
		int rc;
		const char *e;

		rm_new(&m, TDB_RING_SUBMIT, 4096, 1024);
		h = m.hdr;
		if (k == CV_PAST_END || k == CV_PROD_IN_SKIP ||
		    k == CV_NOOP_PAST_END)
			base = k == CV_PROD_IN_SKIP ? 4088 : 4000;
		h->prod = h->cons = base;
		assert_int_equal(tdb_ring_attach_consumer(&c, m.hdr, m.data,
							  4096, TDB_RING_SUBMIT),
				 0);
		switch (k) {
		case CV_PROD_TOO_FAR:
			raw_msg(&m, 0, 64, MTYPE);
			h->prod = 4096 + 64;
			break;
		case CV_PROD_UNALIGNED:
			raw_msg(&m, 0, 64, MTYPE);
			h->prod = 66;
			break;
		case CV_PROD_BACK:
			raw_msg(&m, 0, 64, MTYPE);
			raw_msg(&m, 64, 64, MTYPE);
			h->prod = 128;
			assert_int_equal(tdb_ring_consume(&c, 10, count_fn,
							  &calls), 2);
			h->prod = 64;
			calls = 0;
			break;
		case CV_LEN_SHORT:
			raw_msg(&m, 0, 8, MTYPE);
			h->prod = 64;
			break;
		case CV_LEN_ZERO:
			raw_msg(&m, 0, 0, MTYPE);
			h->prod = 64;
			break;
		case CV_LEN_OVER_MAX:
			raw_msg(&m, 0, 1028, MTYPE);
			h->prod = 2048;
			break;
		case CV_LEN_PAST_PROD:
			raw_msg(&m, 0, 128, MTYPE);
			h->prod = 64;
			break;
		case CV_PAST_END:       /* at 4000, 96 left, len 200 */
			raw_msg(&m, 4000, 200, MTYPE);
			h->prod = 4000 + 400;
			break;
		case CV_PROD_IN_SKIP:   /* at 4088, 8 left: prod at 4092 */
			h->prod = 4092;
			break;
		case CV_PROD_IN_HDR:
			raw_msg(&m, 0, 64, MTYPE);
			h->prod = 8;
			break;
		case CV_NOOP_SHORT:
			raw_msg(&m, 0, 4, NLMSG_NOOP);
			h->prod = 64;
			break;
		case CV_NOOP_PAST_END:  /* a NOOP may not run past the end */
			raw_msg(&m, 4000, 200, NLMSG_NOOP);
			h->prod = 4000 + 400;
			break;
		}
		rc = tdb_ring_consume(&c, 100, count_fn, &calls);
		e = tdb_ring_error(&c);
		if (rc != -EPROTO)
			fail_msg("case %u: consume returned %d, not -EPROTO",
				 k, rc);
		if (!e || !e[0])
			fail_msg("case %u: no error text", k);
		if (calls)
			fail_msg("case %u: the bad message reached fn", k);
		/* dead from now on, whatever the peer does */
		h->prod = base;
		assert_int_equal(tdb_ring_consume(&c, 100, count_fn, &dummy),
				 -EPROTO);
		pend = tdb_ring_pending(&c);
		assert_int_equal(pend, -EPROTO);
		assert_int_equal(tdb_ring_wait(&c, 0), -EPROTO);
		assert_string_equal(tdb_ring_error(&c), e);
		tdb_ring_detach(&c);
		rm_free(&m);
	}
}

static void test_producer_violations(void **state)
{
	unsigned int k;

	(void)state;
	for (k = 0; k < 4; k++) {
		struct rmem m;
		struct tdb_ring p, c;
		unsigned int i, dummy = 0;
		const char *e;

		rm_new(&m, TDB_RING_SUBMIT, 4096, 1024);
		attach_both(&m, &p, &c, TDB_RING_SUBMIT);
		for (i = 0; i < 4; i++)
			post(&p, 1024, i);
		tdb_ring_publish(&p);
		assert_int_equal(tdb_ring_consume(&c, 2, count_fn, &dummy), 2);
		post(&p, 1024, 4);      /* learns cons = 2048 */
		post(&p, 1024, 5);      /* full again */
		tdb_ring_publish(&p);
		switch (k) {
		case 0:
			m.hdr->cons = 4096 + 1024 + 4096;   /* past prod */
			break;
		case 1:
			m.hdr->cons = 2048 + 2;             /* unaligned */
			break;
		case 2:
			m.hdr->cons = 1024;                 /* went back */
			break;
		case 3:
			m.hdr->cons = ~0ull - 3;
			break;
		}
		if (k == 3) {
			assert_int_equal(tdb_ring_wait_space(&p, 1024, 0),
					 -EPROTO);
		} else {
			assert_null(tdb_ring_reserve(&p, 1024));
			if (errno != EPROTO)
				fail_msg("case %u: reserve errno %d, not EPROTO",
					 k, errno);
		}
		e = tdb_ring_error(&p);
		assert_non_null(e);
		assert_true(e[0] != 0);
		/* the ABI: the producer stopped because the consumer broke
		 * the protocol */
		assert_true(m.hdr->flags & TDB_RING_F_OVERRUN);
		/* dead, even once cons looks sane again */
		m.hdr->cons = m.hdr->prod;
		assert_null(tdb_ring_reserve(&p, 16));
		assert_int_equal(errno, EPROTO);
		assert_int_equal(tdb_ring_publish(&p), -EPROTO);
		tdb_ring_detach(&c);
		tdb_ring_detach(&p);
		rm_free(&m);
	}
}

/* Between them, producer and consumer write only prod, cons, flags and
 * futex: the constants, tail, the reserved words and the rest of the
 * header page (a canary) stay as they were. */
static void test_header_lines(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	unsigned char snap[HDR];
	unsigned int i, dummy = 0;
	size_t b;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	memset((unsigned char *)m.hdr + sizeof(struct tdb_ring_hdr), 0x3c,
	       HDR - sizeof(struct tdb_ring_hdr));
	memcpy(snap, m.hdr, HDR);
	attach_both(&m, &p, &c, TDB_RING_SUBMIT);
	for (i = 0; i < 100; i++) {
		post(&p, 16 + i * 8, i);
		tdb_ring_publish(&p);
		tdb_ring_consume(&c, 100, count_fn, &dummy);
	}
	for (b = 0; b < HDR; b++) {
		bool may = (b >= offsetof(struct tdb_ring_hdr, prod) &&
			    b < offsetof(struct tdb_ring_hdr, prod) + 8) ||
			   (b >= offsetof(struct tdb_ring_hdr, cons) &&
			    b < offsetof(struct tdb_ring_hdr, cons) + 8) ||
			   (b >= offsetof(struct tdb_ring_hdr, flags) &&
			    b < offsetof(struct tdb_ring_hdr, futex) + 4);

		if (!may && ((unsigned char *)m.hdr)[b] != snap[b])
			fail_msg("header byte %zu changed", b);
	}
	tdb_ring_detach(&c);
	tdb_ring_detach(&p);
	rm_free(&m);
}

/* ------------------------------------------------------------------ */
/* FEED rings: a memfd, the producer's RW mapping, readers' RO ones     */

struct feed {
	int fd;
	uint32_t size;
	struct rmem w;                  /* the producer's view */
	struct tdb_ring p;
	/* the producer's log, from a model of the placement rules */
	uint64_t idx;                   /* next write index */
	unsigned int n;
	uint64_t start[MAXREC];
	uint32_t seq[MAXREC], len[MAXREC];
};

struct reader {
	unsigned char *hdr, *data;      /* PROT_READ mappings */
	uint32_t size;
	struct tdb_ring r;
};

static struct feed *feed_new(uint32_t size)
{
	struct feed *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->size = size;
	f->fd = memfd_create("test_ring_feed", MFD_CLOEXEC);
	assert_true(f->fd >= 0);
	assert_int_equal(ftruncate(f->fd, (off_t)tdb_ring_map_size(size)), 0);
	f->w.size = size;
	f->w.len = tdb_ring_map_size(size);
	f->w.base = mmap(NULL, f->w.len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 f->fd, 0);
	assert_true(f->w.base != MAP_FAILED);
	f->w.hdr = (struct tdb_ring_hdr *)f->w.base;
	f->w.data = f->w.base + HDR;
	assert_int_equal(tdb_ring_format(f->w.base, TDB_RING_FEED, size, 0), 0);
	assert_int_equal(tdb_ring_attach_producer(&f->p, f->w.hdr, f->w.data,
						  size, TDB_RING_FEED), 0);
	return f;
}

static void feed_free(struct feed *f)
{
	tdb_ring_detach(&f->p);
	munmap(f->w.base, f->w.len);
	close(f->fd);
	free(f);
}

static void reader_attach(struct reader *rd, struct feed *f)
{
	rd->size = f->size;
	rd->hdr = mmap(NULL, HDR, PROT_READ, MAP_SHARED, f->fd, 0);
	rd->data = mmap(NULL, f->size, PROT_READ, MAP_SHARED, f->fd, HDR);
	assert_true(rd->hdr != MAP_FAILED && rd->data != MAP_FAILED);
	assert_int_equal(tdb_ring_attach_consumer(&rd->r, rd->hdr, rd->data,
						  f->size, TDB_RING_FEED), 0);
}

static void reader_detach(struct reader *rd)
{
	tdb_ring_detach(&rd->r);
	munmap(rd->hdr, HDR);
	munmap(rd->data, rd->size);
}

/* post one message to the feed, checking where it went against the ABI's
 * placement rules, and log its index and stamped sequence number */
static void feed_post(struct feed *f, uint32_t len, uint32_t id)
{
	uint32_t need = NLMSG_ALIGN(len), off = (uint32_t)(f->idx & (f->size - 1));
	unsigned char *w;

	if (need > f->size - off)
		f->idx += f->size - off;        /* NOOP or skipped end */
	w = tdb_ring_reserve(&f->p, len);
	if (!w)
		fail_msg("feed reserve(%u): NULL, errno %d (a FEED producer "
			 "never fails for space)", len, errno);
	assert_ptr_equal(w, f->w.data + (f->idx & (f->size - 1)));
	build(w, len, id);
	assert_int_equal(tdb_ring_commit(&f->p, len), 0);
	assert_true(f->n < MAXREC);
	f->start[f->n] = f->idx;
	f->len[f->n] = len;
	f->seq[f->n] = ((struct nlmsghdr *)w)->nlmsg_seq;
	if (f->n)
		assert_int_equal(f->seq[f->n], f->seq[f->n - 1] + 1);
	f->n++;
	f->idx += need;
	/* tail: never more than a ring behind what is written */
	assert_true(f->idx - f->w.hdr->tail <= f->size);
}

/* the log entry of the oldest message the ABI says is intact: the first
 * real message starting at or after tail */
static unsigned int oldest_intact(const struct feed *f)
{
	uint64_t tail = f->w.hdr->tail;
	unsigned int i;

	for (i = 0; i < f->n; i++)
		if (f->start[i] >= tail)
			return i;
	fail_msg("no message at or after tail %llu",
		 (unsigned long long)tail);
	return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return (uint32_t)((x >> 11) % n);
}

static void test_feed_basic(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader a, b;
	struct coll col;
	uint64_t lost = 77;
	uint32_t fx;
	unsigned int i;

	(void)state;
	reader_attach(&a, f);
	reader_attach(&b, f);
	for (i = 0; i < 5; i++)
		feed_post(f, 40 + i * 30, i);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&a.r, 100, collect, &col, &lost), 0);
	fx = f->w.hdr->futex;
	/* every FEED publish wakes: readers cannot say they sleep */
	assert_int_equal(tdb_ring_publish(&f->p), 1);
	assert_true(f->w.hdr->futex != fx);
	assert_int_equal(tdb_feed_read(&a.r, 100, collect, &col, &lost), 5);
	coll_ok(&col);
	for (i = 0; i < 5; i++) {
		assert_int_equal(col.id[i], i);
		assert_int_equal(col.seq[i], f->seq[i]);
		assert_int_equal(col.len[i], 40 + i * 30);
	}
	/* b reads at its own pace; a's reading did not move it */
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 2, collect, &col, &lost), 2);
	assert_int_equal(tdb_feed_read(&b.r, 2, collect, &col, &lost), 2);
	assert_int_equal(tdb_feed_read(&b.r, 2, collect, &col, &lost), 1);
	assert_int_equal(tdb_feed_read(&b.r, 2, collect, &col, &lost), 0);
	coll_ok(&col);
	for (i = 0; i < 5; i++)
		assert_int_equal(col.seq[i], f->seq[i]);
	/* a callback error stops; that message counts as read */
	for (i = 5; i < 10; i++)
		feed_post(f, 64, i);
	tdb_ring_publish(&f->p);
	coll_init(&col, &f->w);
	col.stop_at = 2;
	assert_int_equal(tdb_feed_read(&a.r, 100, collect, &col, &lost),
			 -ECANCELED);
	col.stop_at = 0;
	assert_int_equal(tdb_feed_read(&a.r, 100, collect, &col, &lost), 3);
	coll_ok(&col);
	for (i = 0; i < 5; i++)
		assert_int_equal(col.id[i], 5 + i);
	/* the producer never looked at the readers */
	assert_true(f->w.hdr->cons == 0);
	reader_detach(&a);
	reader_detach(&b);
	feed_free(f);
}

static void test_feed_never_full(void **state)
{
	struct feed *f = feed_new(4096);
	unsigned int i;

	(void)state;
	rng_state = 12345;
	/* forty rings' worth, nobody reading: never EAGAIN */
	for (i = 0; f->idx < 40 * 4096; i++) {
		unsigned int k;
		uint64_t tail;
		bool boundary = false;

		feed_post(f, 16 + rnd(2033), i);
		if (rnd(3) == 0)
			tdb_ring_publish(&f->p);
		if (f->n > MAXREC - 10) {
			/* keep the log short: forget the oldest half */
			memmove(f->start, f->start + MAXREC / 2,
				(f->n - MAXREC / 2) * sizeof(f->start[0]));
			memmove(f->seq, f->seq + MAXREC / 2,
				(f->n - MAXREC / 2) * sizeof(f->seq[0]));
			memmove(f->len, f->len + MAXREC / 2,
				(f->n - MAXREC / 2) * sizeof(f->len[0]));
			f->n -= MAXREC / 2;
		}
		/* tail is a message boundary: a start or an end */
		tail = f->w.hdr->tail;
		for (k = 0; k < f->n && !boundary; k++)
			boundary = f->start[k] == tail ||
				   f->start[k] + NLMSG_ALIGN(f->len[k]) == tail;
		if (!boundary && tail != 0)
			fail_msg("tail %llu is not a message boundary",
				 (unsigned long long)tail);
	}
	feed_free(f);
}

struct lapcoll {
	struct coll c;
	struct feed *f;
	unsigned int flood_at;          /* flood the ring from inside fn */
};

static int lap_collect(void *arg, const struct nlmsghdr *nlh)
{
	struct lapcoll *l = arg;
	int rc = collect(&l->c, nlh);

	if (l->flood_at && l->c.n == l->flood_at) {
		uint64_t end = l->f->idx + 2 * l->f->size;

		while (l->f->idx < end)
			feed_post(l->f, 16 + rnd(400), 100000 + l->f->n);
		tdb_ring_publish(&l->f->p);
	}
	return rc;
}

/* The reader was lapped: check the -EOVERFLOW it got, its *lost, and
 * that it then reads from the oldest intact message to the newest. */
static void check_resync(struct feed *f, struct reader *rd,
			 struct lapcoll *l, uint32_t next_seq, int rc,
			 uint64_t lost, unsigned int trial)
{
	unsigned int first = oldest_intact(f), i, before = l->c.n;

	if (rc != -EOVERFLOW)
		fail_msg("trial %u: lapped reader got %d, not -EOVERFLOW",
			 trial, rc);
	/* whatever came before the overflow was in order */
	for (i = 0; i < before && i < MAXREC; i++)
		if (l->c.seq[i] != next_seq + i)
			fail_msg("trial %u: before the lap, message %u has seq "
				 "%u, expected %u", trial, i, l->c.seq[i],
				 next_seq + i);
	next_seq += before;
	if (lost != (uint64_t)(f->seq[first] - next_seq))
		fail_msg("trial %u: *lost = %llu, but the oldest intact message "
			 "(at %llu, tail %llu) has seq %u and the reader "
			 "expected %u (%u lost)", trial,
			 (unsigned long long)lost,
			 (unsigned long long)f->start[first],
			 (unsigned long long)f->w.hdr->tail, f->seq[first],
			 next_seq, f->seq[first] - next_seq);
	l->flood_at = 0;
	coll_init(&l->c, &f->w);
	do {
		rc = tdb_feed_read(&rd->r, 50, lap_collect, l, &lost);
		if (rc < 0)
			fail_msg("trial %u: after the resync, feed_read %d (%s)",
				 trial, rc, tdb_ring_error(&rd->r) ?
				 tdb_ring_error(&rd->r) : "");
	} while (rc > 0);
	coll_ok(&l->c);
	if (l->c.n != f->n - first)
		fail_msg("trial %u: after the resync %u messages, expected %u",
			 trial, l->c.n, f->n - first);
	for (i = 0; i < l->c.n && i < MAXREC; i++)
		if (l->c.seq[i] != f->seq[first + i] ||
		    l->c.len[i] != f->len[first + i])
			fail_msg("trial %u: after the resync message %u has seq "
				 "%u len %u, expected %u len %u", trial, i,
				 l->c.seq[i], l->c.len[i], f->seq[first + i],
				 f->len[first + i]);
}

static void test_feed_lap(void **state)
{
	unsigned int trial;
	struct lapcoll *l = malloc(sizeof(*l));

	(void)state;
	assert_non_null(l);
	rng_state = 777;
	for (trial = 0; trial < 300; trial++) {
		uint32_t size = trial % 3 ? 4096 : 8192;
		struct feed *f = feed_new(size);
		struct reader rd;
		unsigned int pre = 1 + rnd(5), i, first_new;
		uint32_t maxlen = trial % 2 ? 300 : size / 2;
		uint64_t lost = 0, target;
		int rc;

		reader_attach(&rd, f);
		/* some messages before the reader, some it reads */
		for (i = 0; i < 1 + rnd(4); i++)
			feed_post(f, 16 + rnd(maxlen - 15), i);
		tdb_ring_publish(&f->p);
		tdb_ring_detach(&rd.r);
		assert_int_equal(tdb_ring_attach_consumer(&rd.r, rd.hdr,
							  rd.data, size,
							  TDB_RING_FEED), 0);
		first_new = f->n;
		for (i = 0; i < pre; i++)       /* well within one ring */
			feed_post(f, 16 + rnd(285), 1000 + i);
		tdb_ring_publish(&f->p);
		l->f = f;
		l->flood_at = 0;
		coll_init(&l->c, &f->w);
		assert_int_equal(tdb_feed_read(&rd.r, 100, lap_collect, l,
					       &lost), (int)pre);
		coll_ok(&l->c);
		assert_int_equal(l->c.seq[0], f->seq[first_new]);
		/* lap it by 1 to 3 rings, publishing in small batches */
		target = f->idx + size + rnd(2 * size);
		while (f->idx < target) {
			/* never so much unpublished that tail passes prod
			 * (test_feed_big_batch covers that) */
			if (f->idx - f->w.hdr->prod + 2 * maxlen > size)
				tdb_ring_publish(&f->p);
			feed_post(f, 16 + rnd(maxlen - 15), 2000 + f->n);
			if (rnd(4) == 0)
				tdb_ring_publish(&f->p);
		}
		tdb_ring_publish(&f->p);
		coll_init(&l->c, &f->w);
		rc = tdb_feed_read(&rd.r, 100, lap_collect, l, &lost);
		check_resync(f, &rd, l, f->seq[first_new + pre - 1] + 1, rc,
			     lost, trial);
		reader_detach(&rd);
		feed_free(f);
	}
	free(l);
}

/* Lapped in the middle of a read: the callback floods the ring. */
static void test_feed_lap_during_read(void **state)
{
	unsigned int trial;
	struct lapcoll *l = malloc(sizeof(*l));

	(void)state;
	assert_non_null(l);
	rng_state = 4242;
	for (trial = 0; trial < 100; trial++) {
		struct feed *f = feed_new(4096);
		struct reader rd;
		unsigned int i, n = 4 + rnd(20);
		uint64_t lost = 0;
		int rc;

		reader_attach(&rd, f);
		for (i = 0; i < n; i++)
			feed_post(f, 16 + rnd(150), i);
		tdb_ring_publish(&f->p);
		l->f = f;
		l->flood_at = 1 + rnd(n - 2);
		coll_init(&l->c, &f->w);
		rc = tdb_feed_read(&rd.r, 1000, lap_collect, l, &lost);
		check_resync(f, &rd, l, f->seq[0], rc, lost, trial);
		reader_detach(&rd);
		feed_free(f);
	}
	free(l);
}

/* A reader attached later starts at the newest message. */
static void test_feed_late_reader(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader a, b;
	struct coll col;
	uint64_t lost;
	unsigned int i;

	(void)state;
	reader_attach(&a, f);
	for (i = 0; i < 10; i++)
		feed_post(f, 100, i);
	tdb_ring_publish(&f->p);
	reader_attach(&b, f);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 0);
	assert_int_equal(tdb_feed_wait(&b.r, 0), -ETIMEDOUT);
	for (i = 10; i < 13; i++)
		feed_post(f, 100, i);
	tdb_ring_publish(&f->p);
	assert_int_equal(tdb_feed_wait(&b.r, 0), 0);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 3);
	coll_ok(&col);
	for (i = 0; i < 3; i++) {
		assert_int_equal(col.id[i], 10 + i);
		assert_int_equal(col.seq[i], f->seq[10 + i]);
	}
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&a.r, 100, collect, &col, &lost), 13);
	coll_ok(&col);
	/* a reader attached after a lap starts at the newest too */
	while (f->idx < 3 * 4096)
		feed_post(f, 200, f->n);
	tdb_ring_publish(&f->p);
	reader_detach(&b);
	reader_attach(&b, f);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 0);
	feed_post(f, 200, f->n);
	tdb_ring_publish(&f->p);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 1);
	assert_int_equal(col.seq[0], f->seq[f->n - 1]);
	reader_detach(&a);
	reader_detach(&b);
	feed_free(f);
}

/* tdb_feed_start_at: a reader that learns the sequence number where its
 * watch began reads from there (not from the newest message), and is
 * told with -EOVERFLOW how many it missed if that start was overwritten. */
static void test_feed_start_at(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader b;
	struct coll col;
	uint64_t lost = 0;
	unsigned int i, first;

	(void)state;
	for (i = 0; i < 10; i++)
		feed_post(f, 100, i);
	tdb_ring_publish(&f->p);
	reader_attach(&b, f);   /* at the newest: would see nothing */
	assert_int_equal(tdb_feed_start_at(&b.r, f->seq[6]), 0);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 4);
	coll_ok(&col);
	for (i = 0; i < 4; i++)
		assert_int_equal(col.id[i], 6 + i);
	/* a start in the future: nothing until it is written */
	assert_int_equal(tdb_feed_start_at(&b.r, f->seq[9] + 2), 0);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 0);
	feed_post(f, 100, 10);
	feed_post(f, 100, 11);
	tdb_ring_publish(&f->p);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost), 1);
	assert_int_equal(col.id[0], 11);
	/* a start overwritten by laps: -EOVERFLOW once, then the oldest */
	while (f->idx < 3 * 4096)
		feed_post(f, 200, f->n);
	tdb_ring_publish(&f->p);
	first = oldest_intact(f);
	assert_int_equal(tdb_feed_start_at(&b.r, f->seq[2]), 0);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&b.r, 100, collect, &col, &lost),
			 -EOVERFLOW);
	assert_int_equal(lost, f->seq[first] - f->seq[2]);
	assert_true(tdb_feed_read(&b.r, 100, collect, &col, &lost) > 0);
	assert_int_equal(col.seq[0], f->seq[first]);
	reader_detach(&b);
	feed_free(f);
}

/*
 * The producer commits a batch bigger than the ring before it publishes
 * (it never waits), so `tail` passes `prod`; a reader polling meanwhile
 * is lapped.  It must get -EOVERFLOW (or nothing), never a protocol
 * violation, and once the batch is published it must read on from the
 * oldest intact message with the right *lost.
 */
static void test_feed_big_batch(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader rd;
	struct lapcoll *l = malloc(sizeof(*l));
	uint64_t lost = 0, lost_sum = 0;
	unsigned int i, overflows = 0, got = 0;
	uint32_t next;
	int rc;

	(void)state;
	assert_non_null(l);
	reader_attach(&rd, f);
	feed_post(f, 100, 0);
	tdb_ring_publish(&f->p);
	l->f = f;
	l->flood_at = 0;
	coll_init(&l->c, &f->w);
	assert_int_equal(tdb_feed_read(&rd.r, 100, lap_collect, l, &lost), 1);
	next = l->c.seq[0] + 1;
	for (i = 1; i < 60; i++) {              /* 6000 bytes, unpublished */
		unsigned int poll;

		feed_post(f, 100, i);
		/* a reader polls more often than the producer commits */
		for (poll = 0; poll < 2; poll++) {
			coll_init(&l->c, &f->w);
			rc = tdb_feed_read(&rd.r, 100, lap_collect, l, &lost);
			if (rc == -EOVERFLOW) {
				overflows++;
				lost_sum += lost;
			} else if (rc != 0) {
				fail_msg("after %u unpublished commits (tail "
					 "%llu, prod %llu), poll %u: feed_read "
					 "returned %d (%s)", i,
					 (unsigned long long)f->w.hdr->tail,
					 (unsigned long long)f->w.hdr->prod,
					 poll, rc, tdb_ring_error(&rd.r) ?
					 tdb_ring_error(&rd.r) : "");
			}
			if (l->c.n)
				fail_msg("read unpublished messages");
		}
	}
	assert_true(f->w.hdr->tail > f->w.hdr->prod);
	tdb_ring_publish(&f->p);
	for (;;) {
		coll_init(&l->c, &f->w);
		rc = tdb_feed_read(&rd.r, 100, lap_collect, l, &lost);
		if (rc == -EOVERFLOW) {
			overflows++;
			lost_sum += lost;
			continue;
		}
		if (rc < 0)
			fail_msg("after the publish, feed_read %d (%s)", rc,
				 tdb_ring_error(&rd.r) ?
				 tdb_ring_error(&rd.r) : "");
		if (rc == 0)
			break;
		coll_ok(&l->c);
		for (i = 0; i < l->c.n; i++)
			if (l->c.seq[i] != next + lost_sum + got + i)
				fail_msg("seq %u, expected %u", l->c.seq[i],
					 (unsigned int)(next + lost_sum + got +
							i));
		got += l->c.n;
	}
	assert_true(overflows >= 1);
	assert_int_equal(got, f->n - oldest_intact(f));
	assert_int_equal(lost_sum + got, f->n - 1);
	free(l);
	reader_detach(&rd);
	feed_free(f);
}

/*
 * The owner restarts: a new producer attaches to a FEED ring that has
 * messages (attach reads prod and tail, so it resumes where the last one
 * stopped).  The ABI: every FEED message's nlmsg_seq is one more than the
 * previous one's, so the new producer continues the numbering, and a
 * reader that read the old messages reads the new ones without a
 * violation.
 */
static void test_feed_producer_reattach(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader rd;
	struct coll col;
	uint64_t lost = 0;
	unsigned int i;
	char bad[200] = "";
	int rc;

	(void)state;
	reader_attach(&rd, f);
	for (i = 0; i < 5; i++)
		feed_post(f, 100, i);
	tdb_ring_publish(&f->p);
	coll_init(&col, &f->w);
	assert_int_equal(tdb_feed_read(&rd.r, 100, collect, &col, &lost), 5);
	tdb_ring_detach(&f->p);
	assert_int_equal(tdb_ring_attach_producer(&f->p, f->w.hdr, f->w.data,
						  4096, TDB_RING_FEED), 0);
	for (i = 5; i < 10; i++) {
		unsigned char *w = tdb_ring_reserve(&f->p, 100);

		assert_non_null(w);
		assert_ptr_equal(w, f->w.data + f->idx);
		build(w, 100, i);
		assert_int_equal(tdb_ring_commit(&f->p, 100), 0);
		f->seq[f->n] = ((struct nlmsghdr *)w)->nlmsg_seq;
		if (f->seq[f->n] != f->seq[f->n - 1] + 1 && !bad[0])
			snprintf(bad, sizeof(bad), "after the producer "
				 "re-attached, message %u has seq %u; the one "
				 "before had %u", i, f->seq[f->n],
				 f->seq[f->n - 1]);
		f->n++;
		f->idx += 100;
	}
	tdb_ring_publish(&f->p);
	rc = tdb_feed_read(&rd.r, 100, collect, &col, &lost);
	if (rc != 5 && !bad[0])
		snprintf(bad, sizeof(bad), "the reader got %d (%s) after the "
			 "producer re-attached", rc, tdb_ring_error(&rd.r) ?
			 tdb_ring_error(&rd.r) : "");
	reader_detach(&rd);
	feed_free(f);
	if (bad[0])
		fail_msg("%s", bad);
	coll_ok(&col);
	for (i = 0; i < 10; i++)
		assert_int_equal(col.id[i], i);
}

struct feed_sleeper {
	struct reader *rd;
	int rc;
	uint64_t end;           /* when the wait returned */
};

static void *feed_sleeper_main(void *arg)
{
	struct feed_sleeper *s = arg;

	s->rc = tdb_feed_wait(&s->rd->r, 10000);
	s->end = now_ns();
	return NULL;
}

static void test_feed_wait(void **state)
{
	struct feed *f = feed_new(4096);
	struct reader a, b;
	struct feed_sleeper sa = { .rd = &a }, sb = { .rd = &b };
	pthread_t ta, tb;
	uint64_t t0;

	(void)state;
	reader_attach(&a, f);
	reader_attach(&b, f);
	t0 = now_ns();
	assert_int_equal(tdb_feed_wait(&a.r, 20), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 15000000u);
	assert_int_equal(pthread_create(&ta, NULL, feed_sleeper_main, &sa), 0);
	assert_int_equal(pthread_create(&tb, NULL, feed_sleeper_main, &sb), 0);
	usleep(50000);
	t0 = now_ns();          /* a wait that ends must end after this */
	feed_post(f, 64, 0);
	assert_int_equal(tdb_ring_publish(&f->p), 1);
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_int_equal(pthread_join(tb, NULL), 0);
	assert_int_equal(sa.rc, 0);
	assert_int_equal(sb.rc, 0);
	/* Woken by the post (not before it, not by the 10 s timeout);
	 * on a loaded machine a sleeper may start late, so no lower bound
	 * on how long it slept. */
	assert_true(sa.end >= t0 && sa.end - t0 < 9000000000ull);
	assert_true(sb.end >= t0 && sb.end - t0 < 9000000000ull);
	reader_detach(&a);
	reader_detach(&b);
	feed_free(f);
}

/* ------------------------------------------------------------------ */
/* the core as tdb.ko uses it (ring_core.h): no wake ops, load/pop/     */
/* release, unread; and what commit leaves in the padding              */

/* Attached with no ops, a producer neither looks at the consumer's
 * waiting flag nor touches the futex (tdb.ko: the client sleeps in
 * poll); the user home clears the flag, bumps the futex and wakes. */
static void test_core_no_ops(void **state)
{
	struct rmem m;
	struct tdb_ring p, c;
	uint32_t fx;

	(void)state;
	rm_new(&m, TDB_RING_COMPLETE, 4096, 0);
	assert_int_equal(tdb_ring_attach(&p, m.hdr, m.data, m.size,
					 TDB_RING_COMPLETE, TDB_RING_PRODUCER,
					 NULL), 0);
	assert_int_equal(tdb_ring_attach_consumer(&c, m.hdr, m.data, m.size,
						  TDB_RING_COMPLETE), 0);
	m.hdr->flags = TDB_RING_F_CONS_WAITING;
	fx = m.hdr->futex;
	post(&p, 64, 1);
	assert_int_equal(tdb_ring_publish(&p), 0);
	assert_int_equal(m.hdr->flags, TDB_RING_F_CONS_WAITING);
	assert_int_equal(m.hdr->futex, fx);
	/* The same state with the user home's ops. */
	assert_int_equal(tdb_ring_attach_producer(&p, m.hdr, m.data, m.size,
						  TDB_RING_COMPLETE), 0);
	post(&p, 64, 2);
	assert_int_equal(tdb_ring_publish(&p), 1);
	assert_int_equal(m.hdr->flags, 0);
	assert_int_equal(m.hdr->futex, fx + 1);
	tdb_ring_detach(&c);
	rm_free(&m);
}

/* A NOOP frame of len bytes at data + off. */
static void put_noop(unsigned char *data, uint32_t off, uint32_t len)
{
	struct nlmsghdr *n = (struct nlmsghdr *)(data + off);

	memset(n, 0, NLMSG_HDRLEN);
	n->nlmsg_len = len;
	n->nlmsg_type = NLMSG_NOOP;
}

/* tdb_ring_pop walks at most *budget frames, padding included, and
 * goes on where it stopped; release hands back what was taken. */
static void test_core_pop_budget(void **state)
{
	unsigned int budget;
	struct tdb_ring c;
	struct rmem m;

	(void)state;
	rm_new(&m, TDB_RING_SUBMIT, 4096, 0);
	assert_int_equal(tdb_ring_attach_consumer(&c, m.hdr, m.data, m.size,
						  TDB_RING_SUBMIT), 0);
	c.ops = NULL;
	put_noop(m.data, 0, 16);
	put_noop(m.data, 16, 16);
	put_noop(m.data, 32, 16);
	build(m.data + 48, 32, 7);
	m.hdr->prod = 80;
	assert_int_equal(tdb_ring_load(&c), 0);
	budget = 2;
	assert_int_equal(tdb_ring_pop(&c, &budget), 0);
	assert_int_equal(budget, 0);
	assert_int_equal(c.pos, 32);
	budget = 2;
	assert_int_equal(tdb_ring_pop(&c, &budget), 32);
	assert_int_equal(budget, 0);
	assert_int_equal(c.pos, 80);
	assert_int_equal(((struct nlmsghdr *)c.msg)->nlmsg_pid, 7);
	assert_memory_equal(c.msg, m.data + 48, 32);
	budget = 2;
	assert_int_equal(tdb_ring_pop(&c, &budget), 0);
	assert_int_equal(budget, 2);
	assert_int_equal(m.hdr->cons, 0);
	m.hdr->flags = TDB_RING_F_PROD_WAITING;
	tdb_ring_release(&c);
	assert_int_equal(m.hdr->cons, 80);
	assert_int_equal(m.hdr->flags, TDB_RING_F_PROD_WAITING);
	tdb_ring_detach(&c);
	rm_free(&m);
}

/* tdb_ring_unread: published and not consumed (tdb.ko's poll). */
static void test_core_unread(void **state)
{
	struct tdb_ring p, c;
	struct rmem m;
	unsigned int n = 0;

	(void)state;
	rm_new(&m, TDB_RING_COMPLETE, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_COMPLETE);
	assert_false(tdb_ring_unread(&p));
	post(&p, 40, 1);
	assert_false(tdb_ring_unread(&p));      /* not published yet */
	assert_true(tdb_ring_publish(&p) >= 0);
	assert_true(tdb_ring_unread(&p));
	assert_int_equal(tdb_ring_consume(&c, 8, count_fn, &n), 1);
	assert_false(tdb_ring_unread(&p));
	m.hdr->cons = 12345;                    /* nonsense counts as yes */
	assert_true(tdb_ring_unread(&p));
	tdb_ring_detach(&c);
	rm_free(&m);
}

/* commit zeroes the alignment padding after a message: the consumer
 * sees no stale bytes of the producer's. */
static void test_commit_zeroes_padding(void **state)
{
	struct tdb_ring p, c;
	unsigned char *w;
	struct rmem m;

	(void)state;
	rm_new(&m, TDB_RING_COMPLETE, 4096, 0);
	attach_both(&m, &p, &c, TDB_RING_COMPLETE);
	w = tdb_ring_reserve(&p, 24);
	assert_non_null(w);
	memset(w, 0xff, 24);
	assert_int_equal(tdb_ring_commit(&p, 21), 0);
	assert_int_equal(((struct nlmsghdr *)w)->nlmsg_len, 21);
	assert_int_equal(w[20], 0xff);
	assert_int_equal(w[21], 0);
	assert_int_equal(w[22], 0);
	assert_int_equal(w[23], 0);
	assert_int_equal(p.pos, 24);
	tdb_ring_detach(&c);
	rm_free(&m);
}

/* A FEED producer attached as tdb.ko's owner does (no ops, messages put
 * whole): publish only bumps the futex; readers see the sequence
 * numbers, and the tail moves before old messages are overwritten. */
static void test_core_feed_no_ops(void **state)
{
	struct feed *f = feed_new(4096);
	unsigned char msg[100];
	unsigned int n = 0, i;
	struct reader rd;
	uint64_t lost = 0;
	uint32_t fx;

	(void)state;
	assert_int_equal(tdb_ring_attach(&f->p, f->w.hdr, f->w.data, f->size,
					 TDB_RING_FEED, TDB_RING_PRODUCER,
					 NULL), 0);
	reader_attach(&rd, f);
	fx = f->w.hdr->futex;
	build(msg, sizeof(msg), 1);
	for (i = 0; i < 5; i++)
		assert_int_equal(tdb_ring_put_msg(&f->p,
						  (struct nlmsghdr *)msg), 0);
	assert_int_equal(f->p.seq, 5);
	assert_int_equal(tdb_ring_publish(&f->p), 0);
	assert_int_equal(f->w.hdr->futex, fx + 1);
	assert_int_equal(tdb_feed_read(&rd.r, 100, count_fn, &n, NULL), 5);
	assert_int_equal(n, 5);
	assert_int_equal(rd.r.seq, 5);
	/* 100 more: the ring (4 KiB) laps the reader several times. */
	for (i = 0; i < 100; i++)
		assert_int_equal(tdb_ring_put_msg(&f->p,
						  (struct nlmsghdr *)msg), 0);
	assert_int_equal(tdb_ring_publish(&f->p), 0);
	assert_int_equal(f->w.hdr->futex, fx + 2);
	assert_true(f->w.hdr->tail > 0);
	assert_true(f->w.hdr->prod - f->w.hdr->tail <= f->size);
	assert_int_equal(tdb_feed_read(&rd.r, 100, count_fn, &n, &lost),
			 -EOVERFLOW);
	assert_true(lost > 0);
	n = 0;
	assert_true(tdb_feed_read(&rd.r, 1000, count_fn, &n, NULL) > 0);
	assert_int_equal(rd.r.seq, 105);
	reader_detach(&rd);
	feed_free(f);
}

/* --- the frame walker (ring_core.h, tdb_frame_at / tdb_frame_next) ---- */

/* A frame header written at off of a 4 KiB area. */
static void frame_put(unsigned char *d, uint32_t off, uint32_t len,
		      uint16_t type)
{
	struct nlmsghdr h = { .nlmsg_len = len, .nlmsg_type = type };

	memcpy(d + off, &h, sizeof(h));
}

static void test_frames(void **state)
{
	static unsigned char d[4096];
	struct tdb_frames a = { d, sizeof(d), 1024 };
	struct nlmsghdr h;
	const char *why;
	uint64_t i;

	(void)state;
	memset(d, 0, sizeof(d));
	/* a message, padded to 4: its step, its header copied */
	frame_put(d, 0, 21, 0x20);
	assert_int_equal(tdb_frame_at(&a, 0, 64, &h, &why), 24);
	assert_int_equal(h.nlmsg_len, 21);
	assert_int_equal(h.nlmsg_type, 0x20);
	/* at the published end, or short of a header: nothing to read */
	assert_int_equal(tdb_frame_at(&a, 0, 0, &h, &why), -EPROTO);
	assert_int_equal(tdb_frame_at(&a, 0, 8, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "inside a message header"));
	/* past the published end */
	assert_int_equal(tdb_frame_at(&a, 0, 20, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "past the producer index"));
	/* an end more than a ring away (or behind i): refused, not walked */
	assert_int_equal(tdb_frame_at(&a, 0, 4097, &h, &why), -EPROTO);
	assert_int_equal(tdb_frame_at(&a, 64, 0, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "more than a ring"));
	/* zero and short lengths never make a step of 0 */
	frame_put(d, 0, 0, 0x20);
	assert_int_equal(tdb_frame_at(&a, 0, 64, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "shorter than its header"));
	frame_put(d, 0, 0, NLMSG_NOOP);
	assert_int_equal(tdb_frame_at(&a, 0, 64, &h, &why), -EPROTO);
	i = 0;
	assert_int_equal(tdb_frame_next(&a, &i, 64, &h, &why), -EPROTO);
	assert_int_equal(i, 0);
	/* max_msg binds messages, not fillers */
	frame_put(d, 0, 1028, 0x20);
	assert_int_equal(tdb_frame_at(&a, 0, 2048, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "max_msg"));
	frame_put(d, 0, 1028, NLMSG_NOOP);
	assert_int_equal(tdb_frame_at(&a, 0, 2048, &h, &why), 1028);
	assert_int_equal(h.nlmsg_type, NLMSG_NOOP);
	/* a length past the end of the area (the free-running index
	 * wraps: index 4096 + 4000 is offset 4000) */
	frame_put(d, 4000, 100, 0x20);
	assert_int_equal(tdb_frame_at(&a, 8096, 8192, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "past the end of the ring"));
	/* the unmarked end (12 bytes): a made-up filler, no byte read */
	memset(d + 4084, 0xff, 12);
	assert_int_equal(tdb_frame_at(&a, 4084, 4096 + 64, &h, &why), 12);
	assert_int_equal(h.nlmsg_type, NLMSG_NOOP);
	assert_int_equal(h.nlmsg_len, 12);
	assert_int_equal(tdb_frame_at(&a, 4084, 4090, &h, &why), -EPROTO);
	assert_non_null(strstr(why, "skipped end"));
	/* next: over a NOOP to the end of the area, the skipped end
	 * after it... */
	frame_put(d, 4000, 84, NLMSG_NOOP);
	frame_put(d, 0, 40, 0x21);
	i = 4000;
	assert_int_equal(tdb_frame_next(&a, &i, 4096 + 40, &h, &why), 40);
	assert_int_equal(i, 4096);
	assert_int_equal(h.nlmsg_type, 0x21);
	/* ...and nothing but padding up to end: 0, at end */
	i = 4000;
	assert_int_equal(tdb_frame_next(&a, &i, 4096, &h, &why), 0);
	assert_int_equal(i, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_errors),
		cmocka_unit_test(test_format_fields),
		cmocka_unit_test(test_attach_errors),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_unaligned_len),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_wrap_noop),
		cmocka_unit_test(test_tail_skip),
		cmocka_unit_test(test_max_msg),
		cmocka_unit_test(test_put),
		cmocka_unit_test(test_commit_errors),
		cmocka_unit_test(test_commit_past_reserved_len),
		cmocka_unit_test(test_commit_huge_len),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_fn_error),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_wake_futex),
		cmocka_unit_test(test_wake_eventfd_poll),
		cmocka_unit_test(test_wake_eventfd_epoll),
		cmocka_unit_test(test_wait_space),
		cmocka_unit_test(test_wait_space_flag_race),
		cmocka_unit_test(test_consumer_violations),
		cmocka_unit_test(test_producer_violations),
		cmocka_unit_test(test_header_lines),
		cmocka_unit_test(test_feed_basic),
		cmocka_unit_test(test_feed_never_full),
		cmocka_unit_test(test_feed_lap),
		cmocka_unit_test(test_feed_lap_during_read),
		cmocka_unit_test(test_feed_late_reader),
		cmocka_unit_test(test_feed_start_at),
		cmocka_unit_test(test_feed_big_batch),
		cmocka_unit_test(test_feed_producer_reattach),
		cmocka_unit_test(test_feed_wait),
		cmocka_unit_test(test_core_no_ops),
		cmocka_unit_test(test_core_pop_budget),
		cmocka_unit_test(test_core_unread),
		cmocka_unit_test(test_core_feed_no_ops),
		cmocka_unit_test(test_commit_zeroes_padding),
		cmocka_unit_test(test_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
