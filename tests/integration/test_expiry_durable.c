// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_expiry_durable.c - expiry across restarts (issue 27; docs/
 * DURABILITY.md, "Expiry"): a record's deadline and a table's default
 * TTL are what they were after tdbd starts again, whether the start
 * replays the WAL (SIGKILL), loads the checkpoint it wrote at a clean
 * stop (SIGTERM), or both (a checkpoint, more writes, SIGKILL); a
 * record that expired, before the stop or while tdbd was down, never
 * reads back.
 *
 * Tables: "ex" with a default TTL of 1 h, "px" without one.  Records:
 *  - ex/ttl: a TTL of 2 h of its own (not the table's 1 h): a replay
 *    without its deadline would give it none (replay takes the logged
 *    one as it is), so the exact deadline tells the WAL kept it;
 *  - ex/dflt: a plain put, the table's default TTL;
 *  - ex/kept: persisted after its put (no deadline in a table with a
 *    default TTL: a replay that gave it the default would show);
 *  - px/none: no deadline; px/short: a TTL of 300 ms, expired before
 *    the first stop; px/down: a TTL of 1.5 s, expiring while tdbd is
 *    down (SIGKILL right after its put).
 * After each start: the same deadlines to the millisecond, "kept" and
 * "none" without one, "short" and "down" absent, TABLE_STAT's
 * default_ttl of each table as created, and a new plain put into ex
 * gets now + 1 h (the default works, not only reads back).  And a
 * table "bx" made with bounds and a policy (MAX_BYTES 1 MiB,
 * MAX_RECORDS 100, EVICT lfu; over the raw protocol: the library has
 * no call for them) has them after each start (TABLE_STAT).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define HOUR_MS 3600000ull

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* key's value must be want; its deadline (0: none). */
static uint64_t deadline_of(struct tdbc_table *t, const char *key,
			    const char *want)
{
	char buf[64];
	size_t need = 0;
	uint64_t v = 0, dl = 7;
	long n = tdbc_get_ex(t, NULL, key, strlen(key), buf, sizeof(buf),
			     &need, &v, &dl);

	CHECK(n == (long)strlen(want) && !memcmp(buf, want, (size_t)n),
	      "get %s: %ld (%s), want '%s'", key, n, h_errname((int)n), want);
	return dl;
}

static void absent(struct tdbc_table *t, const char *key, const char *how)
{
	char buf[64];
	size_t need = 0;
	long n = tdbc_get_ex(t, NULL, key, strlen(key), buf, sizeof(buf),
			     &need, NULL, NULL);

	CHECK(n == -ENOENT, "%s: expired key %s reads back (%ld %s)", how,
	      key, n, h_errname((int)n));
}

struct tabs {
	struct tdbc *c;
	struct tdbc_table *ex, *px;
};

static void open_tabs(struct h_daemon *d, struct tabs *s)
{
	int e;

	s->c = h_connect(d, 0);
	e = tdbc_table_open(s->c, "ex", &s->ex);
	CHECK(!e, "open ex: %s", h_errname(e));
	e = tdbc_table_open(s->c, "px", &s->px);
	CHECK(!e, "open px: %s", h_errname(e));
}

static void close_tabs(struct tabs *s)
{
	tdbc_table_close(s->ex);
	tdbc_table_close(s->px);
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
		CHECK(WIFSIGNALED(d->status) &&
		      WTERMSIG(d->status) == SIGKILL,
		      "tdbd ended before the SIGKILL");
	}
	h_start(d, "x", NULL);
	open_tabs(d, s);
}

struct want {
	uint64_t ttl, dflt;     /* ex/ttl's and ex/dflt's deadlines */
};

static void check_all(struct tabs *s, const struct want *w, const char *how)
{
	struct tdbc_table_stat st;
	uint64_t dl, before;
	int e;

	dl = deadline_of(s->ex, "ttl", "t");
	CHECK(dl == w->ttl, "%s: ex/ttl's deadline %llu, was %llu", how,
	      (unsigned long long)dl, (unsigned long long)w->ttl);
	dl = deadline_of(s->ex, "dflt", "d");
	CHECK(dl == w->dflt, "%s: ex/dflt's deadline %llu, was %llu", how,
	      (unsigned long long)dl, (unsigned long long)w->dflt);
	dl = deadline_of(s->ex, "kept", "k");
	CHECK(dl == 0, "%s: ex/kept (persisted) has a deadline %llu", how,
	      (unsigned long long)dl);
	dl = deadline_of(s->px, "none", "n");
	CHECK(dl == 0, "%s: px/none has a deadline %llu", how,
	      (unsigned long long)dl);
	absent(s->px, "short", how);
	absent(s->px, "down", how);
	e = tdbc_table_stat(s->c, "ex", &st);
	CHECK(!e, "stat ex: %s", h_errname(e));
	CHECK(st.default_ttl == HOUR_MS, "%s: ex's default TTL %llu, "
	      "created with %llu", how, (unsigned long long)st.default_ttl,
	      HOUR_MS);
	e = tdbc_table_stat(s->c, "px", &st);
	CHECK(!e, "stat px: %s", h_errname(e));
	CHECK(st.default_ttl == 0, "%s: px has a default TTL %llu", how,
	      (unsigned long long)st.default_ttl);
	/* the default still works: a plain put expires in 1 h */
	before = now_ms();
	e = tdbc_put(s->ex, NULL, "fresh", 5, "f", 1, 0);
	CHECK(!e, "put ex/fresh: %s", h_errname(e));
	dl = deadline_of(s->ex, "fresh", "f");
	CHECK(dl >= before + HOUR_MS && dl <= now_ms() + HOUR_MS,
	      "%s: a plain put into ex got deadline %llu, want now + 1 h "
	      "(%llu..)", how, (unsigned long long)dl,
	      (unsigned long long)(before + HOUR_MS));
}

/* --- bx: bounds, over the raw protocol ---------------------------------- */

static void stat_part(void *arg, const struct tdb_proto_msg *m)
{
	*(struct tdb_proto_stat *)arg = m->stat;
}

static void create_bx(struct h_daemon *d)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_MAX_BYTES) |
			 TDB_PROTO_BIT(TDB_A_MAX_RECORDS) |
			 TDB_PROTO_BIT(TDB_A_EVICT),
		.table = "bx", .max_bytes = 1u << 20, .max_records = 100,
		.evict = TDB_EVICT_LFU,
	};
	struct h_raw r;
	char msg[256] = "";
	int e;

	h_raw_connect(&r, d->sock);
	e = h_raw_call(&r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	CHECK(!e, "create bx with bounds: %s (%s)", h_errname(e), msg);
	h_raw_close(&r);
}

static void check_bx(struct h_daemon *d, const char *how)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_STAT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = "bx",
	};
	struct tdb_proto_stat st = { 0 };
	struct h_raw r;
	char msg[256] = "";
	int e;

	h_raw_connect(&r, d->sock);
	e = h_raw_call(&r, &m, stat_part, &st, NULL, msg, sizeof(msg));
	CHECK(!e, "%s: stat bx: %s (%s)", how, h_errname(e), msg);
	CHECK(st.max_bytes == 1u << 20 && st.max_records == 100 &&
	      st.evict == TDB_EVICT_LFU, "%s: bx's bounds %llu B, %llu "
	      "records, policy %u; created with 1048576, 100, %u", how,
	      (unsigned long long)st.max_bytes,
	      (unsigned long long)st.max_records, st.evict, TDB_EVICT_LFU);
	h_raw_close(&r);
}

static void put_ttl(struct tdbc_table *t, const char *key, const char *val,
		    uint64_t ttl)
{
	int e = tdbc_put_ttl(t, NULL, key, strlen(key), val, strlen(val), 0,
			     0, ttl);

	CHECK(!e, "put %s with a TTL of %llu ms: %s", key,
	      (unsigned long long)ttl, h_errname(e));
}

int main(void)
{
	struct tdbc_table_opts to;
	struct h_daemon d;
	struct tabs s;
	struct want w;
	int e;

	h_init("expiry-durable", h_sanitized() ? 480 : 120);
	h_start(&d, "x", NULL);
	s.c = h_connect(&d, 0);
	tdbc_table_opts_init(&to);
	to.default_ttl = HOUR_MS;
	e = tdbc_table_create(s.c, "ex", &to);
	CHECK(!e, "create ex with a default TTL: %s", h_errname(e));
	e = tdbc_table_create(s.c, "px", NULL);
	CHECK(!e, "create px: %s", h_errname(e));
	create_bx(&d);
	check_bx(&d, "before any restart");
	tdbc_close(s.c);
	open_tabs(&d, &s);

	put_ttl(s.ex, "ttl", "t", 2 * HOUR_MS);
	w.ttl = deadline_of(s.ex, "ttl", "t");
	CHECK(w.ttl > now_ms() + HOUR_MS, "ex/ttl got the table's TTL, not "
	      "its own");
	e = tdbc_put(s.ex, NULL, "dflt", 4, "d", 1, 0);
	CHECK(!e, "put ex/dflt: %s", h_errname(e));
	w.dflt = deadline_of(s.ex, "dflt", "d");
	CHECK(w.dflt != 0, "a plain put into ex got no deadline");
	e = tdbc_put(s.ex, NULL, "kept", 4, "k", 1, 0);
	CHECK(!e, "put ex/kept: %s", h_errname(e));
	e = tdbc_persist(s.ex, "kept", 4);
	CHECK(!e, "persist ex/kept: %s", h_errname(e));
	e = tdbc_put(s.px, NULL, "none", 4, "n", 1, 0);
	CHECK(!e, "put px/none: %s", h_errname(e));
	put_ttl(s.px, "short", "s", 300);
	put_ttl(s.px, "down", "w", 1500);
	usleep(400 * 1000);
	absent(s.px, "short", "before any restart");

	/* SIGKILL: the WAL replayed; "down" expires while tdbd is down */
	close_tabs(&s);
	CHECK(kill(d.pid, SIGKILL) == 0, "kill");
	CHECK(h_wait_exit(&d, 10000), "tdbd did not die of SIGKILL");
	usleep(1300 * 1000);
	h_start(&d, "x", NULL);
	open_tabs(&d, &s);
	check_all(&s, &w, "SIGKILL (WAL)");
	check_bx(&d, "SIGKILL (WAL)");

	/* clean: the checkpoint written at the stop, loaded */
	restart(&d, "clean", &s);
	check_all(&s, &w, "clean stop (checkpoint)");
	check_bx(&d, "clean stop (checkpoint)");

	/* a checkpoint, then changes in the WAL only, SIGKILL */
	restart(&d, "clean", &s);
	put_ttl(s.ex, "ttl", "t", 2 * HOUR_MS);
	w.ttl = deadline_of(s.ex, "ttl", "t");
	restart(&d, "kill", &s);
	check_all(&s, &w, "checkpoint + WAL");
	check_bx(&d, "checkpoint + WAL");

	/* and once more from the checkpoint alone */
	restart(&d, "clean", &s);
	check_all(&s, &w, "second checkpoint");
	check_bx(&d, "second checkpoint");
	close_tabs(&s);
	h_stop(&d);
	h_done();
	return 0;
}
