// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ordered_durable.c - ordered tables (issue 28) across tdbd's
 * restarts, in process (tdbd's objects, as test_kmirror.c): WAL records
 * built with the shared encoder (src/wal/walrec.c: a create with its
 * flags, puts and deletes with versions and a deadline) applied to
 * daemon mode's tables as recovery replays them and logged
 * (tdbd_durable_test_replay; user mode's creates log the same record,
 * durable/log.c), then:
 *   1. a start that replays the WAL only (the stop writes no checkpoint:
 *      TDBD_STOP_CKPT_MAX=0): the table is ordered again, its keys in
 *      order;
 *   2. the checkpoint after that recovery (the ordered table written
 *      whole: checkpoint.c's write_ordered, straight from its cursor with
 *      MDB_APPEND) has its schema's flags; more changes go to the WAL;
 *   3. a start that loads that checkpoint and replays the changes after
 *      it: ordered, the same keys in order; its next checkpoint writes
 *      only the dirty keys;
 *   4. a start from a checkpoint alone (the stop's).
 * After each: the table is ordered (tdbe_table_ordered, tdbo_table.tflags
 * TDB_TABLE_F_ORDERED), a hash table beside it is not (and refuses
 * ranges), a walk of the whole table equals a sorted reference (keys,
 * values, versions, the deadline), and ranges of every bound kind, both
 * directions, equal the reference's.  Keys: prefixes of each other, 0x00
 * and 0xff bytes, keys longer than LMDB's key limit (the checkpoint's
 * "/long/" database) up to 4 KiB.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "durable/ckpt.h"
#include "durable/durable.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "tdbd.h"
#include "wal.h"
#include "walrec.h"

uint64_t tdbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char dir[] = "/tmp/tdb-orddur-XXXXXX";
static char err[512];
static struct tdbd d;

#define DEADLINE 4102444800000ull       /* 2100-01-01, ms */

/* --- the reference ------------------------------------------------------ */

struct ref {
	unsigned char *k;
	size_t kl;
	char v[32];
	size_t vl;
	uint64_t ver, dl;
	bool live;
};

#define NREF 400
static struct ref ref[NREF];
static size_t nref;

/* LMDB's order: memcmp, then the shorter first. */
static int kcmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

static int by_key(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;

	return kcmp(a->k, a->kl, b->k, b->kl);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static struct ref *ref_find(const void *k, size_t kl)
{
	for (size_t i = 0; i < nref; i++)
		if (!kcmp(ref[i].k, ref[i].kl, k, kl))
			return &ref[i];
	return NULL;
}

/* A key of bytes from {0x00, 0x01, 'a', 'b', 0xfe, 0xff}, 1..6 long
 * (many are prefixes of others), or now and then a long one. */
static size_t gen_key(unsigned char *k)
{
	static const unsigned char alpha[] = { 0x00, 0x01, 'a', 'b', 0xfe,
					       0xff };
	uint64_t r = rnd();
	size_t n;

	if (r % 40 == 0)
		n = 512 + r % 3585;     /* past LMDB's 511, up to 4096 */
	else
		n = 1 + r % 6;
	for (size_t i = 0; i < n; i++)
		k[i] = alpha[(rnd() >> 20) % sizeof(alpha)];
	return n;
}

/* --- WAL records -------------------------------------------------------- */

static unsigned char *rec;
static size_t rec_len, rec_nops;
static uint64_t rec_ver;

static void apply_buf(size_t n)
{
	struct wal_rec wr;
	const char *why;

	assert_int_equal(wal_rec_check(rec, n, &wr, &why), 0);
	err[0] = '\0';
	if (tdbd_durable_test_replay(&d, rec, n, &wr, err, sizeof(err)))
		fail_msg("apply: %s", err);
}

static void create(const char *name, uint64_t id, uint32_t flags)
{
	size_t n = walrec_begin(rec, WALREC_CREATE), nl = strlen(name);

	walrec_create(rec + n, id, 0, 0, 0600, 0, 0);
	n += WALREC_CREATE_FIX;
	rec[n++] = (unsigned char)nl;
	memcpy(rec + n, name, nl);
	n += nl;
	n += walrec_create_ext(rec + n, 0, 0, 0, 0, flags);
	walrec_seal(rec, (uint32_t)n, wal_appended(d.wal) + 1, 0);
	walrec_set_crc(rec, walrec_crc(rec, (uint32_t)n));
	apply_buf(n);
}

static void ops_begin(void)
{
	rec_ver = (wal_appended(d.wal) + 1) * 16 + 5;
	rec_len = walrec_begin_v(rec, rec_ver);
	rec_nops = 0;
}

static void op(const char *tab, const void *k, size_t kl, const void *v,
	       size_t vl, uint64_t dl)
{
	size_t n = strlen(tab);
	size_t h = walrec_op_dl(rec + rec_len, v ? WALREC_OP_PUT :
				WALREC_OP_DEL, (uint8_t)n, (uint32_t)kl,
				(uint32_t)vl, dl);

	memcpy(rec + rec_len + h, tab, n);
	memcpy(rec + rec_len + h + n, k, kl);
	if (vl)
		memcpy(rec + rec_len + h + n + kl, v, vl);
	rec_len += h + n + kl + vl;
	rec_nops++;
}

static void ops_end(void)
{
	walrec_seal(rec, (uint32_t)rec_len, wal_appended(d.wal) + 1,
		    (uint32_t)rec_nops);
	walrec_set_crc(rec, walrec_crc(rec, (uint32_t)rec_len));
	apply_buf(rec_len);
}

/* n new keys into "od" (and the same into the hash table "hd"), in one
 * record per 20 keys; the first gets a deadline. */
static void put_new(unsigned int n)
{
	unsigned char k[4096];

	ops_begin();
	for (unsigned int i = 0; i < n && nref < NREF; i++) {
		size_t kl = gen_key(k);
		struct ref *r = ref_find(k, kl);

		if (!r) {
			r = &ref[nref++];
			r->k = malloc(kl);
			assert_non_null(r->k);
			memcpy(r->k, k, kl);
			r->kl = kl;
		}
		r->live = true;
		r->vl = (size_t)snprintf(r->v, sizeof(r->v), "v%zu-%llu",
					 (size_t)(r - ref),
					 (unsigned long long)rec_ver);
		r->ver = rec_ver;
		r->dl = i == 0 ? DEADLINE : 0;
		op("od", r->k, r->kl, r->v, r->vl, r->dl);
		op("hd", r->k, r->kl, r->v, r->vl, r->dl);
		if (rec_nops >= 40) {
			ops_end();
			ops_begin();
		}
	}
	if (rec_nops)
		ops_end();
}

/* Delete every k-th live key. */
static void del_some(unsigned int k)
{
	unsigned int i, seen = 0;

	ops_begin();
	for (i = 0; i < nref; i++) {
		if (!ref[i].live || seen++ % k)
			continue;
		ref[i].live = false;
		op("od", ref[i].k, ref[i].kl, NULL, 0, 0);
		op("hd", ref[i].k, ref[i].kl, NULL, 0, 0);
	}
	if (rec_nops)
		ops_end();
}

/* --- checks --------------------------------------------------------------- */

static struct tdbo_table *table(const char *name)
{
	struct tdbo_table *t = tdbo_table_get(d.o, name);

	if (!t || !t->t)
		fail_msg("table %s missing after the start", name);
	return t;
}

/* Walk c against the live reference keys in [lo, hi) of the sorted
 * reference, forward or backwards. */
static void walk_equal(struct tdbe_cursor *c, const struct ref **v, size_t n,
		       bool reverse, const char *what)
{
	const void *k, *val;
	size_t kl, vl, i;
	uint64_t ver, dl;
	int r;

	for (i = 0; i < n; i++) {
		const struct ref *e = v[reverse ? n - 1 - i : i];

		r = tdbe_cursor_next_ex(c, &k, &kl, &val, &vl, &ver, &dl);
		if (r != 1)
			fail_msg("%s: record %zu of %zu: the walk ended (%d)",
				 what, i, n, r);
		if (kcmp(k, kl, e->k, e->kl))
			fail_msg("%s: record %zu of %zu: key of %zu bytes, "
				 "want the reference's of %zu", what, i, n,
				 kl, e->kl);
		assert_int_equal(vl, e->vl);
		assert_memory_equal(val, e->v, vl);
		assert_int_equal(ver, e->ver);
		assert_int_equal(dl, e->dl);
	}
	r = tdbe_cursor_next_ex(c, &k, &kl, &val, &vl, &ver, &dl);
	if (r != 0)
		fail_msg("%s: %zu records expected, the walk has more (%d)",
			 what, n, r);
}

static void check(const char *phase)
{
	struct tdbo_table *t = table("od"), *h = table("hd");
	const struct ref **live = calloc(NREF, sizeof(*live));
	struct tdbe_range rg;
	struct tdbe_cursor *c;
	size_t n = 0, i;
	char what[128];
	int e = 0;

	assert_non_null(live);
	if (!tdbe_table_ordered(t->t))
		fail_msg("%s: table od is not ordered after the start", phase);
	assert_int_equal(t->tflags, TDB_TABLE_F_ORDERED);
	assert_false(tdbe_table_ordered(h->t));
	assert_int_equal(h->tflags, 0);
	qsort(ref, nref, sizeof(*ref), by_key);
	for (i = 0; i < nref; i++)
		if (ref[i].live)
			live[n++] = &ref[i];

	/* the whole table, in key order */
	c = tdbe_cursor_open(t->t, &e);
	assert_non_null(c);
	snprintf(what, sizeof(what), "%s: whole walk", phase);
	walk_equal(c, live, n, false, what);

	/* ranges: bounds taken from the keys (present, deleted) or made
	 * up, every flag combination */
	for (int j = 0; j < 64; j++) {
		unsigned char fb[4096], tb[4096];
		size_t fl, tl, lo, hi;
		const struct ref *fr = &ref[rnd() % nref];
		const struct ref *tr = &ref[rnd() % nref];

		if (j % 3 == 0) {
			fl = gen_key(fb);
		} else {
			fl = fr->kl;
			memcpy(fb, fr->k, fl);
		}
		if (j % 5 == 0) {
			tl = gen_key(tb);
		} else {
			tl = tr->kl;
			memcpy(tb, tr->k, tl);
		}
		rg = (struct tdbe_range){ .from = j % 7 == 6 ? NULL : fb,
					  .from_len = fl,
					  .to = j % 11 == 10 ? NULL : tb,
					  .to_len = tl,
					  .flags = (unsigned int)j & 7 };
		/* a flag of a bound that is not there means nothing */
		if (!rg.from)
			rg.flags &= ~TDBE_RANGE_FROM_EXCL;
		if (!rg.to)
			rg.flags &= ~TDBE_RANGE_TO_INCL;
		/* the reference: [lo, hi) of live */
		for (lo = 0; lo < n && rg.from &&
		     (rg.flags & TDBE_RANGE_FROM_EXCL ?
		      kcmp(live[lo]->k, live[lo]->kl, fb, fl) <= 0 :
		      kcmp(live[lo]->k, live[lo]->kl, fb, fl) < 0); lo++)
			;
		for (hi = lo; hi < n && (!rg.to ||
		     (rg.flags & TDBE_RANGE_TO_INCL ?
		      kcmp(live[hi]->k, live[hi]->kl, tb, tl) <= 0 :
		      kcmp(live[hi]->k, live[hi]->kl, tb, tl) < 0)); hi++)
			;
		assert_int_equal(tdbe_cursor_range(c, &rg), 0);
		snprintf(what, sizeof(what), "%s: range %d (flags %u)", phase,
			 j, rg.flags);
		walk_equal(c, live + lo, hi - lo, rg.flags & TDBE_RANGE_REVERSE,
			   what);
	}
	tdbe_cursor_close(c);

	/* the hash table beside it: the same records, no ranges */
	c = tdbe_cursor_open(h->t, &e);
	assert_non_null(c);
	rg = (struct tdbe_range){ 0 };
	assert_int_equal(tdbe_cursor_range(c, &rg), -EOPNOTSUPP);
	tdbe_cursor_close(c);
	for (i = 0; i < n; i++) {
		char buf[64];
		long r = tdbe_get(h->t, live[i]->k, live[i]->kl, buf,
				  sizeof(buf), NULL);

		assert_int_equal(r, (long)live[i]->vl);
	}
	tdbo_table_put(t);
	tdbo_table_put(h);
	free(live);
}

/* --- the run -------------------------------------------------------------- */

static void start(void)
{
	memset(&d, 0, sizeof(d));
	tdbd_config_defaults(&d.cfg);
	d.cfg.hugepages = false;
	d.cfg.backend = TDBD_BACKEND_DAEMON;    /* records applied to its
						 * tables (a test hook) */
	snprintf(d.cfg.data_dir, sizeof(d.cfg.data_dir), "%s", dir);
	pthread_mutex_init(&d.wake_lock, NULL);
	assert_int_equal(tdbd_owner_start(&d), 0);
	assert_int_equal(tdbd_durable_start(&d, tdbd_on_durable), 0);
}

static void stop(void)
{
	tdbd_durable_stop(&d);
	tdbd_owner_stop(&d);
	pthread_mutex_destroy(&d.wake_lock);
}

static void wait_ckpt(uint64_t before)
{
	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&d.ctr.checkpoints, __ATOMIC_RELAXED) >
		    before)
			return;
		usleep(1000);
	}
	fail_msg("no checkpoint within 20 s");
}

/* The checkpoint's schema of the two tables. */
static void check_schema(void)
{
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0, i, seen = 0;
	uint64_t lsn;

	assert_int_equal(tdbd_ckpt_read_meta(d.ckpt, &lsn, &tabs, &n, err,
					     sizeof(err)), 0);
	for (i = 0; i < n; i++) {
		if (!strcmp(tabs[i].name, "od")) {
			assert_int_equal(tabs[i].flags, TDB_TABLE_F_ORDERED);
			seen++;
		} else if (!strcmp(tabs[i].name, "hd")) {
			assert_int_equal(tabs[i].flags, 0);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	free(tabs);
}

static void test_restarts(void **state)
{
	(void)state;
	setenv("TDBD_STOP_CKPT_MAX", "0", 1);   /* stops write none */
	start();
	create("od", 90, TDB_TABLE_F_ORDERED);
	create("hd", 91, 0);
	put_new(200);
	del_some(7);
	put_new(60);            /* some of them again: overwrites */
	check("live");
	stop();

	/* 1: the WAL replayed */
	start();
	check("WAL replay");
	/* 2: the checkpoint after the recovery writes od whole */
	wait_ckpt(0);
	check_schema();
	del_some(5);
	put_new(80);
	check("after the checkpoint");
	stop();

	/* 3: that checkpoint and the WAL after it */
	start();
	check("checkpoint + WAL");
	wait_ckpt(0);           /* od's dirty keys only this time */
	check_schema();
	unsetenv("TDBD_STOP_CKPT_MAX");
	put_new(10);
	stop();                 /* writes the last checkpoint */

	/* 4: a checkpoint alone */
	start();
	check("checkpoint");
	stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restarts),
	};
	char cmd[64];
	int rc;

	if (!mkdtemp(dir))
		return 1;
	rec = malloc(1u << 20);
	if (!rec)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (!rc && system(cmd))
		rc = 1;
	free(rec);
	for (size_t i = 0; i < nref; i++)
		free(ref[i].k);
	return rc;
}
