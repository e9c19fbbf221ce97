// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_ring.c - libFuzzer target for the ring consumer and feed reader
 * (src/ring/ring.c): the input is a ring image, header and data, that a
 * consumer attaches to and consumes until it is done or reports an error.
 *
 * The image goes into a private copy: the header page and the data area
 * each sit between PROT_NONE guard pages, and the consumer maps the data
 * read-only (a second mapping of a memfd), so an overread or a stray write
 * faults; ASan watches the private message copy.  Between calls the
 * producer index may move (a script in the input), as a live producer's
 * would.
 *
 * Input, byte 0 = mode:
 *   bit 0 clear: structured.  The header is built valid from fields
 *     [1] data size 4 KiB << (n % 5)   [2] kind 1 + n % 3
 *     [3..4] max_msg (0: data_size / 2; any other value as is)
 *     [5..12] prod  [13..20] cons  [21..28] tail   (little endian)
 *     then the common tail below;
 *   bit 0 set: raw.  [1..256] is the header verbatim (struct tdb_ring_hdr)
 *     and the data size is the header's when it is a power of two up to
 *     64 KiB, else 4 KiB; then the common tail.
 *   bit 1: map the data one size larger than the header says (mismatch);
 *   bits 2-3: attach as kind (header kind + bits) % 3 + 1 when non-zero.
 * Common tail: [0] budget, [1..24] six 32-bit steps added to prod
 * between calls, then the data bytes from offset 0 (zero-filled).
 *
 * Checks, besides the sanitizers: every message handed up is a private
 * copy of 16..max_msg bytes; errors are -EPROTO with a text (or
 * -EOVERFLOW for a lapped feed reader); the work is bounded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"

#define HDR      TDB_RING_HDR_SIZE
#define GUARD    4096u
#define MAXDATA  65536u
#define NSIZES   5              /* 4, 8, 16, 32, 64 KiB */

struct area {
	int fd;
	unsigned char *rw;              /* harness: writes the image */
	unsigned char *ro;              /* consumer: read-only, guarded */
};

static struct area areas[NSIZES + 1];   /* + one 128 KiB for mismatches */
static struct tdb_ring_hdr *hdr;        /* guarded header page */

static void *guarded(size_t len)
{
	unsigned char *b = mmap(NULL, len + 2 * GUARD, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		abort();
	return b + GUARD;
}

static void setup(void)
{
	unsigned int i;

	hdr = guarded(HDR);
	if (mprotect(hdr, HDR, PROT_READ | PROT_WRITE))
		abort();
	for (i = 0; i <= NSIZES; i++) {
		size_t len = (size_t)4096 << i;
		struct area *a = &areas[i];

		a->fd = memfd_create("fuzz_ring", MFD_CLOEXEC);
		if (a->fd < 0 || ftruncate(a->fd, (off_t)len))
			abort();
		a->rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			     a->fd, 0);
		a->ro = mmap(guarded(len), len, PROT_READ,
			     MAP_SHARED | MAP_FIXED, a->fd, 0);
		if (a->rw == MAP_FAILED || a->ro == MAP_FAILED)
			abort();
	}
}

static uint64_t le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

struct fstate {
	const unsigned char *lo, *hi;
	uint32_t max_msg;
	unsigned long sum;
};

static int fn(void *arg, const struct nlmsghdr *nlh)
{
	struct fstate *f = arg;
	const unsigned char *b = (const unsigned char *)nlh;
	uint32_t len = nlh->nlmsg_len, i;

	if (b >= f->lo && b < f->hi)
		abort();                /* not a private copy */
	if (len < NLMSG_HDRLEN || len > f->max_msg)
		abort();                /* not validated */
	for (i = 0; i < len; i++)       /* all of it readable (ASan) */
		f->sum += b[i];
	return (f->sum & 0xff) == 0x5a ? -ECANCELED : 0;  /* sometimes stop */
}

static void expect_proto(struct tdb_ring *r, int rc)
{
	const char *e = tdb_ring_error(r);

	if (rc != -EPROTO || !e || !e[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
	static bool ready;
	struct tdb_ring r;
	struct fstate f;
	uint32_t size, kind, budget, steps[6];
	unsigned int si, i, mode, call;
	const uint8_t *tail;
	size_t tail_n, data_n;
	struct area *a;
	int rc;

	if (!ready) {
		setup();
		ready = true;
	}
	if (n < 1)
		return 0;
	mode = in[0];
	memset(hdr, 0, HDR);
	if (!(mode & 1)) {
		if (n < 29)
			return 0;
		si = in[1] % NSIZES;
		size = 4096u << si;
		hdr->magic = TDB_RING_MAGIC;
		hdr->version = TDB_RING_VERSION;
		hdr->kind = 1 + in[2] % 3;
		hdr->hdr_size = HDR;
		hdr->data_size = size;
		hdr->max_msg = (uint32_t)le(in + 3, 2);
		if (!hdr->max_msg)
			hdr->max_msg = size / 2;
		hdr->prod = le(in + 5, 8);
		hdr->cons = le(in + 13, 8);
		hdr->tail = le(in + 21, 8);
		tail = in + 29;
		tail_n = n - 29;
	} else {
		if (n < 1 + sizeof(struct tdb_ring_hdr))
			return 0;
		memcpy(hdr, in + 1, sizeof(struct tdb_ring_hdr));
		size = hdr->data_size;
		for (si = 0; si < NSIZES; si++)
			if (size == 4096u << si)
				break;
		if (si == NSIZES) {
			si = 0;
			size = 4096;
		}
		tail = in + 1 + sizeof(struct tdb_ring_hdr);
		tail_n = n - 1 - sizeof(struct tdb_ring_hdr);
	}
	if (mode & 2) {                 /* the mapping is larger */
		si++;
		size *= 2;
	}
	kind = hdr->kind;
	if (mode & 12)
		kind = (kind + ((mode >> 2) & 3)) % 3 + 1;
	budget = 1;
	memset(steps, 0, sizeof(steps));
	if (tail_n >= 25) {
		budget = 1 + tail[0] % 64;
		for (i = 0; i < 6; i++)
			steps[i] = (uint32_t)le(tail + 1 + 4 * i, 4);
		tail += 25;
		tail_n -= 25;
	}
	a = &areas[si];
	data_n = tail_n < size ? tail_n : size;
	memcpy(a->rw, tail, data_n);
	memset(a->rw + data_n, 0, size - data_n);

	rc = tdb_ring_attach_consumer(&r, hdr, a->ro, size, kind);
	if (rc) {
		expect_proto(&r, rc);
		return 0;
	}
	f.lo = a->ro - GUARD;
	f.hi = a->ro + size + GUARD;
	f.max_msg = r.max_msg;
	f.sum = 0;
	if (r.max_msg > r.data_size / 2 || r.max_msg < NLMSG_HDRLEN)
		abort();
	for (call = 0; call < 8; call++) {
		if (kind == TDB_RING_FEED) {
			uint64_t lost = 0;

			rc = tdb_feed_read(&r, budget, fn, &f, &lost);
			if (rc == -EOVERFLOW || rc == -ECANCELED)
				rc = 1;
		} else {
			long pend = tdb_ring_pending(&r);

			if (pend > (long)r.data_size)
				abort();
			rc = tdb_ring_consume(&r, budget, fn, &f);
			if (rc == -ECANCELED)
				rc = 1;
			if (rc > (int)budget)
				abort();
		}
		if (rc < 0) {
			expect_proto(&r, rc);
			break;
		}
		/* a live producer publishes more */
		if (call < 6 && steps[call])
			hdr->prod += steps[call];
		else if (rc == 0)
			break;
	}
	if (rc >= 0) {
		rc = kind == TDB_RING_FEED ? tdb_feed_wait(&r, 0)
					   : tdb_ring_wait(&r, 0);
		/* -EINTR: libFuzzer's own timers signal this process, and
		 * the waits are documented to return it. */
		if (rc != 0 && rc != -ETIMEDOUT && rc != -EINTR)
			expect_proto(&r, rc);
	}
	tdb_ring_detach(&r);
	return 0;
}

#ifdef TDB_FUZZ_SEEDS
/* Seed inputs for run-fuzz.sh: valid rings of each kind, with wraps,
 * padding and a producer that moves on between calls. */
static size_t put_msg(uint8_t *d, size_t off, uint32_t len, uint16_t type,
		      uint32_t seq)
{
	struct nlmsghdr h = { .nlmsg_len = len, .nlmsg_type = type,
			      .nlmsg_seq = seq };

	memcpy(d + off, &h, sizeof(h));
	memset(d + off + sizeof(h), 0x61 + (int)(seq % 26),
	       len - sizeof(h));
	return off + NLMSG_ALIGN(len);
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	while (n--) {
		*p++ = (uint8_t)v;
		v >>= 8;
	}
}

static void write_seed(const char *dir, int i, const uint8_t *b, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ring-seed-%d", dir, i);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f))
		exit(1);
}

int main(int argc, char **argv)
{
	static uint8_t b[29 + 25 + 4096 + 256];
	struct tdb_ring_hdr h;
	uint8_t *t, *d;
	size_t off, n;
	int i = 0;
	uint32_t k;

	if (argc != 2)
		return 2;
	/* 1: SUBMIT, messages from 0, all published */
	memset(b, 0, sizeof(b));
	b[0] = 0; b[1] = 0; b[2] = 0;
	t = b + 29;
	d = t + 25;
	t[0] = 15;
	for (off = 0, k = 0; k < 12; k++)
		off = put_msg(d, off, 16 + k * 21, 0x10 + k, k);
	put_le(b + 5, off, 8);
	write_seed(argv[1], i++, b, (size_t)(d - b) + off);
	/* 2: COMPLETE, reading from 3968: a message, a NOOP to the end,
	 * then more from 0; the producer publishes in steps */
	memset(b, 0, sizeof(b));
	b[2] = 1;
	t = b + 29;
	d = t + 25;
	t[0] = 3;
	off = put_msg(d, 3968, 80, 0x20, 0);
	put_msg(d, off, 4096 - (uint32_t)off, NLMSG_NOOP, 0);
	for (off = 0, k = 1; k < 6; k++)
		off = put_msg(d, off, 100 + k, 0x20, k);
	put_le(b + 5, 3968 + 80, 8);
	put_le(b + 13, 3968, 8);
	put_le(t + 1, 4096 - 4048, 4);
	put_le(t + 5, off, 4);
	write_seed(argv[1], i++, b, (size_t)(d - b) + 4096);
	/* 3: FEED, the reader starts at prod 0 and the producer publishes
	 * six batches */
	memset(b, 0, sizeof(b));
	b[2] = 2;
	t = b + 29;
	d = t + 25;
	t[0] = 7;
	for (off = 0, k = 0; k < 18; k++) {
		size_t before = k % 3 == 0 ? off : 0;

		off = put_msg(d, off, 16 + (k * 37) % 200, 0x30, 1000 + k);
		if (k % 3 == 0)
			n = before;
		if (k % 3 == 2)         /* each step publishes three */
			put_le(t + 1 + 4 * (k / 3), off - n, 4);
	}
	write_seed(argv[1], i++, b, (size_t)(d - b) + off);
	/* 4: raw header, SUBMIT, 8 KiB */
	memset(b, 0, sizeof(b));
	memset(&h, 0, sizeof(h));
	h.magic = TDB_RING_MAGIC;
	h.version = TDB_RING_VERSION;
	h.kind = TDB_RING_SUBMIT;
	h.hdr_size = HDR;
	h.data_size = 8192;
	h.max_msg = 1024;
	b[0] = 1;
	t = b + 1 + sizeof(h);
	d = t + 25;
	t[0] = 63;
	for (off = 0, k = 0; k < 9; k++)
		off = put_msg(d, off, 16 + k * 100, 0x40, k);
	h.prod = off;
	memcpy(b + 1, &h, sizeof(h));
	n = (size_t)(d - b) + off;
	write_seed(argv[1], i++, b, n);
	return 0;
}
#endif
