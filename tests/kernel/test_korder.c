// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_korder.c - ordered tables in tdb.ko under tdbd --backend kernel
 * (the qemu guest; issue 28).  Needs $TDB_KTEST_TDBD and a tdb.ko with
 * the supervisor ioctls: skips (77) without either.
 *
 *  1. resident: "ko" is created ordered through the rings, "kg" through
 *     generic netlink (TABLE_CREATE's TABLE_FLAGS on both transports),
 *     "kh" as a hash table; awkward keys (prefixes of each other, 0x00
 *     and 0xff bytes, keys of up to 4096 bytes) are put and some deleted
 *     (kg's over generic netlink); TABLE_STAT says ordered, and the
 *     whole table and ranges of every bound kind, forward and reverse,
 *     with limits, through the rings, through generic netlink and
 *     zero-copy in the client's map of the table (tdbc_map_range over
 *     /dev/tdb's map), equal a sorted reference record for record; a range of the hash table is
 *     refused (EOPNOTSUPP), one whose from is after its to too (EINVAL);
 *  2. restore: tdbd stops (SIGTERM), tdb.ko is reloaded (its tables
 *     gone), a new tdbd restores them from its data (krestore:
 *     TABLE_CREATE with the flags, then the records): ko and kg are
 *     ordered again with the same keys in order, kh a hash table;
 *  3. the same after a SIGKILL of tdbd (its WAL replayed into the
 *     mirror, then the restore), with changes made after step 2;
 *  4. it leaves a fresh tdb.ko loaded (no tables, no supervisor).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdb/client.h"
#include "ksup.h"

#define DATA_DIR "/tmp/tdb-korder"
#define LOG_FILE "/tmp/tdb-korder.log"
#define NKEYS    600

static struct ksup_tdbd td = { .log = LOG_FILE, .ready = KSUP_SUPERVISING,
			       .pid = -1 };

#define FAIL(...) do { fprintf(stderr, "test_korder: FAIL: " \
	__VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

static void tdbd_start(void)
{
	const char *av[] = { td.path, "--backend", "kernel",
		"--data-dir", DATA_DIR, "--sync", "always",
		"--client-deadline", "60s", "--config", "/dev/null", NULL };

	ksup_start(&td, av);
}

/* --- the reference ------------------------------------------------------ */

struct ref {
	unsigned char k[4096];
	size_t kl;
	char v[32];
	size_t vl;
	bool live;
};

/* one per ordered table: ko (rings), kg (generic netlink) */
struct tab {
	const char *name;
	unsigned int conn_flags;        /* TDBC_NO_RINGS for kg */
	struct ref *r;
	size_t n;
};

static struct tab tabs[2] = {
	{ "ko", 0, NULL, 0 },
	{ "kg", TDBC_NO_RINGS, NULL, 0 },
};

static uint64_t rs = 0x51ed270b27b9c3b5ull;

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

static size_t make_key(unsigned char *k, size_t i)
{
	size_t n;

	switch (i % 4) {
	case 0:
		return (size_t)sprintf((char *)k, "u:%zu", i / 2);
	case 1:
		n = 1 + rnd() % 5;
		for (size_t j = 0; j < n; j++)
			k[j] = (unsigned char)(rnd() % 3 == 0 ? 0x00 :
					       rnd() % 2 ? 0xff : 'a');
		return n;
	case 2:
		if (i % 50 == 2) {
			n = 3000 + rnd() % 1097;
			memset(k, 'L', n);
			k[n - 1] = (unsigned char)i;
			return n;
		}
		/* fall through */
	default:
		return (size_t)sprintf((char *)k, "k%04u",
				       (unsigned int)(rnd() % 10000));
	}
}

static struct ref *find(struct tab *t, const void *k, size_t kl)
{
	for (size_t i = 0; i < t->n; i++)
		if (!kcmp(t->r[i].k, t->r[i].kl, k, kl))
			return &t->r[i];
	return NULL;
}

/* n puts (new keys or new values) and every `del`-th live key deleted,
 * into t through its transport; kh gets ko's puts too. */
static void change(struct tab *t, size_t n, unsigned int del,
		   unsigned int gen)
{
	struct tdbc *c = ksup_connect(t->conn_flags);
	struct tdbc_table *tt = NULL, *th = NULL;
	unsigned char k[4096];
	unsigned int seen = 0;

	CHECK(!tdbc_table_open(c, t->name, &tt), "open %s: %s", t->name,
	      tdbc_errmsg(c));
	if (!t->conn_flags)
		CHECK(!tdbc_table_open(c, "kh", &th), "open kh: %s",
		      tdbc_errmsg(c));
	for (size_t i = 0; i < n; i++) {
		size_t kl = make_key(k, t->n + i * 3 + gen);
		struct ref *r = find(t, k, kl);

		if (!r) {
			if (t->n == NKEYS + 200)
				break;
			r = &t->r[t->n++];
			memcpy(r->k, k, kl);
			r->kl = kl;
		}
		r->live = true;
		r->vl = (size_t)snprintf(r->v, sizeof(r->v), "%s.%zu.%u",
					 t->name, (size_t)(r - t->r), gen);
		CHECK(!tdbc_put(tt, NULL, r->k, r->kl, r->v, r->vl, 0),
		      "put %s (a key of %zu bytes): %s", t->name, r->kl,
		      tdbc_errmsg(c));
		if (th)
			CHECK(!tdbc_put(th, NULL, r->k, r->kl, r->v, r->vl,
					0), "put kh: %s", tdbc_errmsg(c));
	}
	for (size_t i = 0; del && i < t->n; i++) {
		if (!t->r[i].live || seen++ % del)
			continue;
		t->r[i].live = false;
		CHECK(!tdbc_del(tt, NULL, t->r[i].k, t->r[i].kl), "del %s: %s",
		      t->name, tdbc_errmsg(c));
		if (th)
			CHECK(!tdbc_del(th, NULL, t->r[i].k, t->r[i].kl),
			      "del kh: %s", tdbc_errmsg(c));
	}
	tdbc_table_close(tt);
	if (th)
		tdbc_table_close(th);
	tdbc_close(c);
}

/* --- checks --------------------------------------------------------------- */

static void range_equal(struct tdbc_table *tt, const struct tdbc_range *r,
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
	e = tdbc_scan_range(tt, r, limit, 0, &sc);
	CHECK(!e, "%s: tdbc_scan_range: %d", what, e);
	for (i = 0; i < n; i++) {
		const struct ref *w = live[rev ? hi - 1 - i : lo + i];

		e = tdbc_scan_next(sc, &k, &kl, &v, &vl);
		CHECK(e == 1, "%s: record %zu of %zu: %d", what, i, n, e);
		CHECK(!kcmp(k, kl, w->k, w->kl), "%s: record %zu of %zu: a "
		      "key of %zu bytes, the reference's has %zu", what, i, n,
		      kl, w->kl);
		CHECK(vl == w->vl && !memcmp(v, w->v, vl), "%s: record %zu: "
		      "value differs", what, i);
	}
	e = tdbc_scan_next(sc, &k, &kl, &v, &vl);
	CHECK(e == 0, "%s: more than the reference's %zu records (%d)", what,
	      n, e);
	tdbc_scan_close(sc);
}

/* The same walk zero-copy in the client's map of the table (tdb.ko's
 * /dev/tdb map), fn comparing each record with the reference. */
struct mapw {
	const struct ref **live;
	size_t lo, hi, i, n;
	bool rev;
	const char *what;
};

static int map_fn(void *arg, const void *k, size_t kl, const void *v,
		  size_t vl, uint64_t version)
{
	struct mapw *m = arg;
	const struct ref *w;

	(void)version;
	CHECK(m->i < m->n, "%s: map: more than the reference's %zu records",
	      m->what, m->n);
	w = m->live[m->rev ? m->hi - 1 - m->i : m->lo + m->i];
	CHECK(!kcmp(k, kl, w->k, w->kl) && vl == w->vl &&
	      !memcmp(v, w->v, vl), "%s: map: record %zu of %zu differs from "
	      "the reference", m->what, m->i, m->n);
	m->i++;
	return 0;
}

static void map_equal(struct tdbc_table *tt, const struct tdbc_range *r,
		      uint64_t limit, const struct ref **live, size_t lo,
		      size_t hi, const char *what)
{
	struct mapw m = { .live = live, .lo = lo, .hi = hi, .n = hi - lo,
			  .rev = r->flags & TDBC_RANGE_REVERSE,
			  .what = what };
	int e;

	if (limit && limit < m.n)
		m.n = (size_t)limit;
	e = tdbc_map_range(tt, r, limit, map_fn, &m);
	CHECK(!e, "%s: tdbc_map_range: %d", what, e);
	CHECK(m.i == m.n, "%s: map: %zu records, the reference %zu", what,
	      m.i, m.n);
}

/* t through connection flags cf (rings, or generic netlink); through
 * the rings, every range also walked in the map. */
static void check_tab(struct tab *t, unsigned int cf, const char *how)
{
	const struct ref **live = calloc(t->n ? t->n : 1, sizeof(*live));
	struct tdbc *c = ksup_connect(cf);
	struct tdbc_table_stat st;
	struct tdbc_table *tt = NULL;
	struct tdbc_range r = { 0 };
	struct tdbc_scan *sc;
	char what[160];
	size_t n = 0, i;
	int e;

	CHECK(live, "calloc");
	CHECK(!tdbc_table_stat(c, t->name, &st), "%s: stat %s: %s", how,
	      t->name, tdbc_errmsg(c));
	CHECK(st.flags & TDBC_TABLE_ORDERED, "%s: %s is not ordered (flags "
	      "%u)", how, t->name, st.flags);
	CHECK(!tdbc_table_open(c, t->name, &tt), "open %s: %s", t->name,
	      tdbc_errmsg(c));
	qsort(t->r, t->n, sizeof(*t->r), by_key);
	for (i = 0; i < t->n; i++)
		if (t->r[i].live)
			live[n++] = &t->r[i];
	CHECK(st.records == n, "%s: %s has %llu records, want %zu", how,
	      t->name, (unsigned long long)st.records, n);
	snprintf(what, sizeof(what), "%s: %s%s: whole", how, t->name,
		 cf ? " (genl)" : "");
	range_equal(tt, &r, 0, live, 0, n, what);
	if (!cf) {
		CHECK(tdbc_table_mapped(tt) == 1, "%s: %s is not mapped", how,
		      t->name);
		map_equal(tt, &r, 0, live, 0, n, what);
	}
	for (int j = 0; j < 40; j++) {
		const struct ref *a = live[rnd() % n], *b = live[rnd() % n];
		uint64_t limit = j % 4 == 3 ? 1 + rnd() % 40 : 0;
		size_t lo, hi;

		if (kcmp(a->k, a->kl, b->k, b->kl) > 0) {
			const struct ref *x = a;

			a = b;
			b = x;
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
		snprintf(what, sizeof(what), "%s: %s%s: range %d (flags %u, "
			 "limit %llu)", how, t->name, cf ? " (genl)" : "", j,
			 r.flags, (unsigned long long)limit);
		range_equal(tt, &r, limit, live, lo, hi, what);
		if (!cf)
			map_equal(tt, &r, limit, live, lo, hi, what);
	}
	/* from after to: refused */
	r = (struct tdbc_range){ .from = "b", .from_len = 1, .to = "a",
				 .to_len = 1 };
	e = tdbc_scan_range(tt, &r, 0, 0, &sc);
	CHECK(e == -EINVAL, "%s: %s: a range from b to a: %d", how, t->name,
	      e);
	if (!e)
		tdbc_scan_close(sc);
	tdbc_table_close(tt);
	tdbc_close(c);
	free(live);
}

static void check(const char *how)
{
	struct tdbc *c = ksup_connect(0);
	struct tdbc_table_stat st;
	struct tdbc_table *th = NULL;
	struct tdbc_range r = { .from = "a", .from_len = 1 };
	struct tdbc_scan *sc;
	int e;

	for (int i = 0; i < 2; i++) {
		check_tab(&tabs[i], 0, how);
		check_tab(&tabs[i], TDBC_NO_RINGS, how);
	}
	CHECK(!tdbc_table_stat(c, "kh", &st), "stat kh: %s", tdbc_errmsg(c));
	CHECK(!(st.flags & TDBC_TABLE_ORDERED), "%s: kh is ordered", how);
	CHECK(!tdbc_table_open(c, "kh", &th), "open kh: %s", tdbc_errmsg(c));
	e = tdbc_scan_range(th, &r, 0, 0, &sc);
	CHECK(e == -EOPNOTSUPP, "%s: a range of the hash table: %d", how, e);
	if (!e)
		tdbc_scan_close(sc);
	tdbc_table_close(th);
	tdbc_close(c);
	printf("test_korder: %s: ko, kg ordered, ranges equal the reference "
	       "(rings and genl), kh a hash table\n", how);
	fflush(stdout);
}

int main(void)
{
	struct tdbc_table_opts to;
	struct tdbc *c;

	td.path = getenv("TDB_KTEST_TDBD");
	if (!td.path || !*td.path) {
		fprintf(stderr, "test_korder: SKIP: no $TDB_KTEST_TDBD\n");
		return 77;
	}
	if (!ksup_has_supervisor()) {
		fprintf(stderr, "test_korder: SKIP: tdb.ko has no supervisor "
			"ioctls (TDB_IOC_SUP_*)\n");
		return 77;
	}
	for (int i = 0; i < 2; i++) {
		tabs[i].r = calloc(NKEYS + 200, sizeof(struct ref));
		CHECK(tabs[i].r, "calloc");
	}
	system("rm -rf " DATA_DIR " " LOG_FILE);
	ksup_reload("");
	tdbd_start();

	/* 1. resident */
	tdbc_table_opts_init(&to);
	to.flags = TDBC_TABLE_ORDERED;
	c = ksup_connect(0);
	CHECK(!tdbc_table_create(c, "ko", &to), "create ko ordered: %s",
	      tdbc_errmsg(c));
	CHECK(!tdbc_table_create(c, "kh", NULL), "create kh: %s",
	      tdbc_errmsg(c));
	tdbc_close(c);
	c = ksup_connect(TDBC_NO_RINGS);
	CHECK(!tdbc_table_create(c, "kg", &to), "create kg ordered over "
	      "generic netlink: %s", tdbc_errmsg(c));
	tdbc_close(c);
	for (int i = 0; i < 2; i++)
		change(&tabs[i], NKEYS, 7, 1);
	check("resident");

	/* 2. a clean stop, tdb.ko reloaded, restored */
	ksup_stop(&td, SIGTERM);
	ksup_reload("");
	tdbd_start();
	check("restored after a clean stop");

	/* 3. changes, SIGKILL, tdb.ko reloaded, restored */
	for (int i = 0; i < 2; i++)
		change(&tabs[i], 120, 5, 2);
	ksup_stop(&td, SIGKILL);
	ksup_reload("");
	tdbd_start();
	check("restored after a SIGKILL");

	/* 4. leave a fresh tdb.ko */
	ksup_stop(&td, SIGTERM);
	ksup_reload("");
	for (int i = 0; i < 2; i++)
		free(tabs[i].r);
	/* the guest's files are its RAM: run-qemu.sh counts what is left
	 * (a WAL segment is 8 MiB) as lost memory */
	system("rm -rf " DATA_DIR " " LOG_FILE);
	printf("test_korder: PASS\n");
	return 0;
}
