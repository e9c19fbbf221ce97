// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ordered_durable.c - ordered tables across tdbd's restarts (issue
 * 28; docs/DURABILITY.md, "Ordered tables"): a table created ordered
 * (tdbc_table_opts.flags TDBC_TABLE_ORDERED) is ordered again after tdbd
 * starts again, with the same keys in the same order, whether the start
 * replays the WAL (SIGKILL: its create record carries the flags), loads
 * the checkpoint written at a clean stop (its schema's flags; the table
 * written whole from its cursor, a straight MDB_APPEND), both (a
 * checkpoint, more changes, SIGKILL), or a second checkpoint (the dirty
 * keys only).  After each start: TABLE_STAT's flags say ordered (and
 * the hash table beside it says hash), a scan of the whole table and
 * ranges of every bound kind, both directions, with and without limits,
 * equal a sorted reference record for record (keys that are prefixes of
 * others, 0x00 and 0xff bytes, keys past LMDB's 511-byte limit up to
 * 4 KiB), and the hash table still refuses ranges.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NKEYS 1500

struct ref {
	unsigned char *k;
	size_t kl;
	char v[48];
	size_t vl;
	bool live;
};

static struct ref ref[NKEYS + 400];
static size_t nref;
static uint64_t rs = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

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

/* Key i: "u:<i>" (u:1 is a prefix of u:12...), or binary bytes with
 * 0x00 and 0xff, or now and then 600..4096 bytes. */
static size_t make_key(size_t i, unsigned char *k)
{
	size_t n;

	switch (i % 5) {
	case 0:
	case 1:
		return (size_t)sprintf((char *)k, "u:%zu", i / 3);
	case 2:
		n = 1 + rnd() % 5;
		for (size_t j = 0; j < n; j++)
			k[j] = (unsigned char)((rnd() >> 9) % 3 == 0 ? 0x00 :
					       (rnd() >> 9) % 2 ? 0xff :
					       'a' + rnd() % 3);
		return n;
	case 3:
		if (i % 45 == 3) {
			n = 600 + rnd() % 3497;
			memset(k, 'L', n);
			k[n - 1] = (unsigned char)i;
			return n;
		}
		/* fall through */
	default:
		return (size_t)sprintf((char *)k, "k%05zu", (size_t)rnd() %
				       100000);
	}
}

static struct ref *ref_find(const void *k, size_t kl)
{
	for (size_t i = 0; i < nref; i++)
		if (!kcmp(ref[i].k, ref[i].kl, k, kl))
			return &ref[i];
	return NULL;
}

struct tabs {
	struct tdbc *c;
	struct tdbc_table *od, *hd;
};

static void open_tabs(struct h_daemon *d, struct tabs *s)
{
	int e;

	s->c = h_connect(d, 0);
	e = tdbc_table_open(s->c, "od", &s->od);
	CHECK(!e, "open od: %s", h_errname(e));
	e = tdbc_table_open(s->c, "hd", &s->hd);
	CHECK(!e, "open hd: %s", h_errname(e));
}

static void close_tabs(struct tabs *s)
{
	tdbc_table_close(s->od);
	tdbc_table_close(s->hd);
	tdbc_close(s->c);
}

static void restart(struct h_daemon *d, const char *how, struct tabs *s)
{
	close_tabs(s);
	if (!strcmp(how, "clean")) {
		h_stop(d);
	} else {
		CHECK(kill(d->pid, SIGKILL) == 0, "kill");
		CHECK(h_wait_exit(d, 10000), "tdbd did not die of SIGKILL");
	}
	h_start(d, "od", NULL);
	open_tabs(d, s);
}

/* Put n new keys (or new values of old ones) into both tables. */
static void put_some(struct tabs *s, size_t n, unsigned int gen)
{
	unsigned char k[4096];

	for (size_t i = 0; i < n; i++) {
		size_t kl = make_key(nref + i * 7 + gen, k);
		struct ref *r = ref_find(k, kl);
		int e;

		if (!r) {
			if (nref == sizeof(ref) / sizeof(ref[0]))
				break;
			r = &ref[nref++];
			r->k = malloc(kl);
			CHECK(r->k, "malloc");
			memcpy(r->k, k, kl);
			r->kl = kl;
		}
		r->live = true;
		r->vl = (size_t)snprintf(r->v, sizeof(r->v), "v%zu.%u",
					 (size_t)(r - ref), gen);
		e = tdbc_put(s->od, NULL, r->k, r->kl, r->v, r->vl, 0);
		CHECK(!e, "put od (key of %zu bytes): %s", r->kl,
		      h_errname(e));
		e = tdbc_put(s->hd, NULL, r->k, r->kl, r->v, r->vl, 0);
		CHECK(!e, "put hd: %s", h_errname(e));
	}
}

static void del_some(struct tabs *s, unsigned int every)
{
	unsigned int seen = 0;

	for (size_t i = 0; i < nref; i++) {
		int e;

		if (!ref[i].live || seen++ % every)
			continue;
		ref[i].live = false;
		e = tdbc_del(s->od, NULL, ref[i].k, ref[i].kl);
		CHECK(!e, "del od: %s", h_errname(e));
		e = tdbc_del(s->hd, NULL, ref[i].k, ref[i].kl);
		CHECK(!e, "del hd: %s", h_errname(e));
	}
}

/* A range scan of od against live[lo, hi) (in reverse if asked), at
 * most limit records (0: all). */
static void range_equal(struct tabs *s, const struct tdbc_range *r,
			uint64_t limit, const struct ref **live, size_t lo,
			size_t hi, const char *what)
{
	struct tdbc_scan *sc;
	const void *k, *v;
	size_t kl, vl, n = hi - lo, i;
	bool rev = r->flags & TDBC_RANGE_REVERSE;
	int e;

	if (limit && limit < n)
		n = (size_t)limit;
	e = tdbc_scan_range(s->od, r, limit, 0, &sc);
	CHECK(!e, "%s: tdbc_scan_range: %s", what, h_errname(e));
	for (i = 0; i < n; i++) {
		const struct ref *w = live[rev ? hi - 1 - i : lo + i];

		e = tdbc_scan_next(sc, &k, &kl, &v, &vl);
		CHECK(e == 1, "%s: record %zu of %zu: %d (%s)", what, i, n, e,
		      h_errname(e));
		CHECK(!kcmp(k, kl, w->k, w->kl),
		      "%s: record %zu of %zu: a key of %zu bytes, the "
		      "reference's has %zu", what, i, n, kl, w->kl);
		CHECK(vl == w->vl && !memcmp(v, w->v, vl),
		      "%s: record %zu: value differs", what, i);
	}
	e = tdbc_scan_next(sc, &k, &kl, &v, &vl);
	CHECK(e == 0, "%s: more than the reference's %zu records (%d)", what,
	      n, e);
	tdbc_scan_close(sc);
}

static void check(struct tabs *s, const char *how)
{
	const struct ref **live = calloc(nref, sizeof(*live));
	struct tdbc_table_stat st;
	struct tdbc_range r = { 0 };
	struct tdbc_scan *sc;
	char what[128];
	size_t n = 0, i;
	int e;

	CHECK(live, "calloc");
	e = tdbc_table_stat(s->c, "od", &st);
	CHECK(!e, "%s: stat od: %s", how, h_errname(e));
	CHECK(st.flags & TDBC_TABLE_ORDERED, "%s: od is not ordered (flags "
	      "%u)", how, st.flags);
	e = tdbc_table_stat(s->c, "hd", &st);
	CHECK(!e && !(st.flags & TDBC_TABLE_ORDERED), "%s: hd: %s, flags %u",
	      how, h_errname(e), st.flags);
	qsort(ref, nref, sizeof(*ref), by_key);
	for (i = 0; i < nref; i++)
		if (ref[i].live)
			live[n++] = &ref[i];
	CHECK(st.records == n, "%s: hd has %llu records, want %zu", how,
	      (unsigned long long)st.records, n);

	snprintf(what, sizeof(what), "%s: the whole table", how);
	range_equal(s, &r, 0, live, 0, n, what);
	r.flags = TDBC_RANGE_REVERSE;
	snprintf(what, sizeof(what), "%s: the whole table reversed", how);
	range_equal(s, &r, 0, live, 0, n, what);

	for (int j = 0; j < 48; j++) {
		const struct ref *a = live[rnd() % n], *b = live[rnd() % n];
		size_t lo, hi;
		uint64_t limit = j % 4 == 3 ? 1 + rnd() % 50 : 0;

		if (kcmp(a->k, a->kl, b->k, b->kl) > 0 && j % 8) {
			const struct ref *t = a;

			a = b;
			b = t;
		}
		r = (struct tdbc_range){ .from = j % 6 == 5 ? NULL : a->k,
					 .from_len = a->kl,
					 .to = j % 7 == 6 ? NULL : b->k,
					 .to_len = b->kl };
		if (r.from && (j & 1))
			r.flags |= TDBC_RANGE_FROM_EXCL;
		if (r.to && (j & 2))
			r.flags |= TDBC_RANGE_TO_INCL;
		if (j & 4)
			r.flags |= TDBC_RANGE_REVERSE;
		if (r.from && r.to && kcmp(a->k, a->kl, b->k, b->kl) > 0) {
			/* from after to: refused */
			e = tdbc_scan_range(s->od, &r, 0, 0, &sc);
			CHECK(e == -EINVAL, "%s: a range whose from is after "
			      "its to: %s", how, h_errname(e));
			if (!e)
				tdbc_scan_close(sc);
			continue;
		}
		for (lo = 0; lo < n && r.from &&
		     (r.flags & TDBC_RANGE_FROM_EXCL ?
		      kcmp(live[lo]->k, live[lo]->kl, a->k, a->kl) <= 0 :
		      kcmp(live[lo]->k, live[lo]->kl, a->k, a->kl) < 0); lo++)
			;
		for (hi = lo; hi < n && (!r.to ||
		     (r.flags & TDBC_RANGE_TO_INCL ?
		      kcmp(live[hi]->k, live[hi]->kl, b->k, b->kl) <= 0 :
		      kcmp(live[hi]->k, live[hi]->kl, b->k, b->kl) < 0)); hi++)
			;
		snprintf(what, sizeof(what), "%s: range %d (flags %u, limit "
			 "%llu)", how, j, r.flags, (unsigned long long)limit);
		range_equal(s, &r, limit, live, lo, hi, what);
	}
	/* the hash table beside it: no ranges */
	r = (struct tdbc_range){ .from = "a", .from_len = 1 };
	e = tdbc_scan_range(s->hd, &r, 0, 0, &sc);
	CHECK(e == -EOPNOTSUPP, "%s: a range of the hash table: %s", how,
	      h_errname(e));
	if (!e)
		tdbc_scan_close(sc);
	free(live);
	h_note("%s: od ordered, %zu keys in order, 50 ranges equal", how, n);
}

int main(void)
{
	struct tdbc_table_opts to;
	struct h_daemon d;
	struct tabs s;
	int e;

	h_init("ordered-durable", h_sanitized() ? 480 : 120);
	h_start(&d, "od", NULL);
	s.c = h_connect(&d, 0);
	tdbc_table_opts_init(&to);
	to.flags = TDBC_TABLE_ORDERED;
	e = tdbc_table_create(s.c, "od", &to);
	CHECK(!e, "create od ordered: %s", h_errname(e));
	e = tdbc_table_create(s.c, "hd", NULL);
	CHECK(!e, "create hd: %s", h_errname(e));
	tdbc_close(s.c);
	open_tabs(&d, &s);
	put_some(&s, NKEYS, 1);
	del_some(&s, 9);
	put_some(&s, 200, 2);
	check(&s, "before any restart");

	/* SIGKILL: the WAL replayed (no checkpoint yet) */
	restart(&d, "kill", &s);
	check(&s, "SIGKILL (WAL)");
	/* clean: the checkpoint written at the stop (od whole), loaded */
	restart(&d, "clean", &s);
	check(&s, "clean stop (checkpoint)");
	/* a checkpoint, then changes in the WAL only, SIGKILL */
	del_some(&s, 4);
	put_some(&s, 150, 3);
	restart(&d, "kill", &s);
	check(&s, "checkpoint + WAL");
	/* the next checkpoint writes od's dirty keys only */
	restart(&d, "clean", &s);
	check(&s, "second checkpoint");
	close_tabs(&s);
	h_stop(&d);
	for (size_t i = 0; i < nref; i++)
		free(ref[i].k);
	h_done();
	return 0;
}
