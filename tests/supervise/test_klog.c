// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_klog.c - tdbd's reader of tdb.ko's log ring
 * (src/daemon/kernel/klog.c) against rings formatted here (rec.h): whole
 * records, fragments, padding at the wrap, a record published in parts,
 * thousands of random records through a small ring (consumed as a
 * supervisor would), and the refusals: a header that is not a log
 * ring's, bad frames, a bad CRC, a prod past the ring.  Also
 * wal_rec_check and wal_append_rec (src/wal): an encoded record appended
 * with its LSN, one out of sequence refused naming both LSNs, and the
 * log replayed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "klog.h"
#include "rec.h"

static char err[512];

static int next(struct klog *k, const void **rec, size_t *len,
		struct wal_rec *r)
{
	err[0] = '\0';
	return klog_next(k, rec, len, r, err, sizeof(err));
}

static void test_whole(void **state)
{
	struct fake_ring f;
	struct klog k;
	unsigned char r[256];
	const void *rec;
	struct wal_rec wr;
	struct wal_opv op;
	uint32_t pos = 0;
	size_t n, len;

	(void)state;
	assert_int_equal(ring_make(&f, 4096, 2048, 1000), 0);
	assert_int_equal(klog_attach(&k, f.mem, f.len, 1000, err,
				     sizeof(err)), 0);
	assert_int_equal(next(&k, &rec, &len, &wr), 0);
	n = rec_op(r, 7, "tab", "key", "value", 5, false);
	ring_rec(&f, r, n);
	assert_int_equal(next(&k, &rec, &len, &wr), 0);   /* unpublished */
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), 1);
	assert_int_equal(len, n);
	assert_memory_equal(rec, r, n);
	assert_int_equal(wr.lsn, 7);
	assert_int_equal(wr.type, WAL_OPS_V);
	{
		uint64_t v = 0;

		assert_int_equal(wal_ops_version(&wr, &v), 0);
		assert_int_equal(v, REC_VERSION(7));
	}
	assert_int_equal(wal_next_op(&wr, &pos, &op), 1);
	assert_string_equal(op.name, "tab");
	assert_int_equal(op.klen, 3);
	assert_memory_equal(op.val, "value", 5);
	assert_int_equal(next(&k, &rec, &len, &wr), 0);
	assert_int_equal(k.pos, f.prod);
	klog_free(&k);
	free(f.mem);
}

/* A record over max_msg, in fragments, published one fragment at a
 * time: nothing until the last; and across the wrap (NOOP padding). */
static void test_fragments(void **state)
{
	struct fake_ring f;
	struct klog k;
	static unsigned char r[8192], val[6000];
	const void *rec;
	struct wal_rec wr;
	size_t n, len, i;
	uint64_t start = 4096 * 3 + 4000;       /* near the end: wraps */

	(void)state;
	for (i = 0; i < sizeof(val); i++)
		val[i] = (unsigned char)(i * 7);
	assert_int_equal(ring_make(&f, 16384, 1024, start), 0);
	assert_int_equal(klog_attach(&k, f.mem, f.len, start, err,
				     sizeof(err)), 0);
	n = rec_op(r, 42, "t", "big", val, sizeof(val), false);
	/* publish fragment by fragment */
	{
		size_t chunk = (f.max_msg - NLMSG_HDRLEN) & ~(size_t)3;
		size_t done = 0;

		while (n - done > chunk) {
			ring_msg(&f, TDB_LOG_MSG, TDB_LOG_F_MORE, r + done,
				 chunk);
			done += chunk;
			ring_publish(&f);
			assert_int_equal(next(&k, &rec, &len, &wr), 0);
		}
		ring_msg(&f, TDB_LOG_MSG, 0, r + done, n - done);
		ring_publish(&f);
	}
	assert_int_equal(next(&k, &rec, &len, &wr), 1);
	assert_int_equal(len, n);
	assert_memory_equal(rec, r, n);
	assert_int_equal(wr.lsn, 42);
	klog_free(&k);
	free(f.mem);
}

/* Random records through a small ring, the reader freeing space behind
 * it as tdb.ko would once they are durable: every record, in order. */
static void test_random(void **state)
{
	struct fake_ring f;
	struct klog k;
	static unsigned char r[4096], val[3000];
	const void *rec;
	struct wal_rec wr;
	uint64_t lsn = 1, got = 1;
	size_t len;
	unsigned int i;
	int rc;

	(void)state;
	srand(7);
	assert_int_equal(ring_make(&f, 8192, 512, 0), 0);
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err,
				     sizeof(err)), 0);
	for (i = 0; i < 20000; i++) {
		size_t vl = (size_t)rand() % sizeof(val), n;

		memset(val, (int)(lsn & 0xff), vl);
		n = rand() % 16 ? rec_op(r, lsn, "t", "k", val, vl,
					 false) :
		    rand() % 2 ? rec_create(r, lsn, lsn, "t") :
				 rec_drop(r, lsn, "t");
		/* room: the reader keeps up (at most one record ahead) */
		ring_rec(&f, r, n);
		lsn++;
		ring_publish(&f);
		while ((rc = next(&k, &rec, &len, &wr)) == 1) {
			assert_int_equal(wr.lsn, got);
			got++;
		}
		assert_int_equal(rc, 0);
		assert_true(f.prod - k.pos == 0);
	}
	assert_int_equal(got, lsn);
	klog_free(&k);
	free(f.mem);
}

static void test_refused(void **state)
{
	struct fake_ring f;
	struct klog k;
	unsigned char r[256];
	const void *rec;
	struct wal_rec wr;
	struct tdb_ring_hdr *h;
	size_t n, len;

	(void)state;
	assert_int_equal(ring_make(&f, 4096, 2048, 0), 0);
	h = (struct tdb_ring_hdr *)f.mem;
	h->kind = TDB_RING_FEED;
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "not a log ring"));
	h->kind = TDB_RING_LOG;
	h->max_msg = 4096;      /* over data / 2 */
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err, sizeof(err)),
			 -EPROTO);
	h->max_msg = 2048;
	assert_int_equal(klog_attach(&k, f.mem, f.len - 1, 0, err,
				     sizeof(err)), -EPROTO);

	/* a bad CRC */
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err, sizeof(err)),
			 0);
	n = rec_op(r, 1, "t", "k", "v", 1, false);
	r[n - 1] ^= 1;
	ring_rec(&f, r, n);
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), -EUCLEAN);
	assert_non_null(strstr(err, "bad CRC"));

	/* a message of another type */
	klog_free(&k);
	assert_int_equal(klog_attach(&k, f.mem, f.len, f.prod, err,
				     sizeof(err)), 0);
	ring_msg(&f, NLMSG_DONE, 0, "xxxx", 4);
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), -EPROTO);
	assert_non_null(strstr(err, "type 3"));

	/* a length past what is published */
	klog_free(&k);
	assert_int_equal(klog_attach(&k, f.mem, f.len, f.prod, err,
				     sizeof(err)), 0);
	n = rec_op(r, 1, "t", "k", "v", 1, false);
	ring_rec(&f, r, n);
	f.prod -= 8;
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), -EPROTO);
	assert_non_null(strstr(err, "bad message length"));

	/* prod more than the ring ahead */
	klog_free(&k);
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err, sizeof(err)),
			 0);
	h->prod = 3 * 4096;
	assert_int_equal(next(&k, &rec, &len, &wr), -EPROTO);
	assert_non_null(strstr(err, "more than the ring"));

	/* a message over max_msg (2048), within the ring and prod (the
	 * frame walker's check, ring_core.h) */
	klog_free(&k);
	f.prod = h->prod = 0;
	assert_int_equal(klog_attach(&k, f.mem, f.len, 0, err, sizeof(err)),
			 0);
	{
		static unsigned char big[2100];

		ring_msg(&f, TDB_LOG_MSG, 0, big, sizeof(big));
	}
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), -EPROTO);
	assert_non_null(strstr(err, "max_msg"));

	/* prod inside the unmarked end of the area (under 16 bytes) */
	klog_free(&k);
	assert_int_equal(klog_attach(&k, f.mem, f.len, 4088, err,
				     sizeof(err)), 0);
	f.prod = 4092;
	ring_publish(&f);
	assert_int_equal(next(&k, &rec, &len, &wr), -EPROTO);
	assert_non_null(strstr(err, "skipped end"));
	klog_free(&k);
	free(f.mem);
}

/* --- wal_append_rec ---------------------------------------------------- */

struct seen {
	uint64_t lsns[8];
	unsigned int n;
};

static int seen_fn(void *arg, const struct wal_rec *r)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->lsns[s->n] = r->lsn;
	s->n++;
	return 0;
}

static void test_append_rec(void **state)
{
	char dir[] = "/tmp/tdb-klog-XXXXXX", cmd[64];
	struct wal_opts o = { .segment_size = 1 << 20,
			      .sync = WAL_SYNC_ALWAYS };
	struct wal_replay_opts ro = { .fn = seen_fn, .after = 9 };
	struct wal_replay_result res;
	struct seen s = { 0 };
	struct wal *w;
	struct wal_rec wr;
	const char *why;
	unsigned char r[256];
	size_t n;

	(void)state;
	ro.arg = &s;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(wal_open(dir, 10, &o, &w, err, sizeof(err)), 0);
	n = rec_create(r, 10, 1, "t");
	assert_int_equal(wal_rec_check(r, n, &wr, &why), 0);
	assert_int_equal(wr.type, WAL_CREATE);
	assert_int_equal(wal_rec_check(r, n - 1, &wr, &why), -EUCLEAN);
	assert_int_equal(wal_append_rec(w, r, n, err, sizeof(err)), 0);
	assert_int_equal(wal_appended(w), 10);
	n = rec_op(r, 11, "t", "k", "v", 1, false);
	assert_int_equal(wal_append_rec(w, r, n, err, sizeof(err)), 0);
	/* out of sequence: refused, naming both; nothing appended */
	n = rec_op(r, 13, "t", "k", "v", 1, false);
	assert_int_equal(wal_append_rec(w, r, n, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "record LSN 13 is not the WAL's next LSN 12");
	n = rec_op(r, 11, "t", "k", "v", 1, false);
	assert_int_equal(wal_append_rec(w, r, n, err, sizeof(err)), -EPROTO);
	assert_int_equal(wal_appended(w), 11);
	/* a bad record */
	n = rec_op(r, 12, "t", "k", "v", 1, false);
	r[3] ^= 0x40;
	assert_int_equal(wal_append_rec(w, r, n, err, sizeof(err)),
			 -EUCLEAN);
	/* the WAL's own appends go on after */
	assert_int_equal(wal_write(w), 0);
	assert_int_equal(wal_sync_to(w, 11), 0);
	wal_close(w);
	if (wal_replay(dir, &ro, &res, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.lsns[0], 10);
	assert_int_equal(s.lsns[1], 11);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_append_rec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
