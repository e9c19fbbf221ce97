// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_log_flood.c - a client cannot flood tdbd's log through the lines
 * the owner and the engine write for it (issue 25, item 5): each kind
 * is rate limited (platform.h, tdbp_log_rl: 10 lines per 5 s, tdbd's
 * own policy) and what was left out is counted in a line of its own,
 * written even when no later line of the kind comes (tdbd's tick calls
 * tdbo_log_flush).
 *
 * tdbd runs at --log-level debug (every line shown) and with
 * --max-snapshot-bytes 1K.  For 2 s a client, in turn,
 *  - creates and drops a table (each is one "table ..." line of the
 *    owner's);
 *  - makes a snapshot scan fail: a raw connection asks for one of a
 *    table of 1024 values of 4 KiB; at its first part the client
 *    overwrites 16 values spread over the keys (some not dumped yet),
 *    and the scan ends -ENOBUFS (one "a snapshot scan fails" line
 *    each).
 * Then, once the limiters' windows are over (5 s after their first
 * line) and the tick has run:
 *  - the log grew by at most 60 lines in all (4 kinds of lines here:
 *    tables made or dropped, engine tables created, table memory,
 *    snapshot scans failing, each 10 and a count; without the limiter
 *    it grew by thousands);
 *  - for each kind, a "similar line(s) suppressed" line is there, and
 *    the lines written plus the counts add up to exactly the events:
 *    nothing lost, nothing twice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LOOP_MS   2000u
#define MIN_MADE  40u           /* creates and drops: 10 lines a window
				 * and 30 or more counted */
#define WINDOW_MS 5000u
#define MAX_LINES 60u  /* 4 kinds x (10 + a count), and tdbd's own */
#define KIND      "(tables made or dropped;"
#define SNAP_KIND "(snapshot scans failing;"
#define NVALS     1024u
#define VAL       (4u << 10)

static unsigned int count_lines(const char *log)
{
	unsigned int n = 0;

	for (; *log; log++)
		n += *log == '\n';
	return n;
}

/* Lines holding `line` written, and the counts of the suppressed-lines
 * lines of `kind`, from the log's text. */
static void account(const char *log, const char *line1, const char *line2,
		    const char *kind, unsigned long long *printed,
		    unsigned long long *suppressed, unsigned int *nsupp)
{
	const char *line = log;

	*printed = *suppressed = 0;
	*nsupp = 0;
	while (*line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024];
		const char *p;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (strstr(buf, line1) && (!line2 || strstr(buf, line2) ||
					   strstr(buf, " dropped")))
			(*printed)++;
		if (strstr(buf, kind) &&
		    (p = strstr(buf, "engine: ")) != NULL) {
			*suppressed += strtoull(p + 8, NULL, 10);
			(*nsupp)++;
		}
		if (!end)
			break;
		line = end + 1;
	}
}

/* 16 values of "snapt" spread over its keys once more: some of them
 * not dumped yet (a 1 K snapshot holds none of their old values). */
static void overwrite(struct tdbc_table *t, unsigned char *val)
{
	unsigned int i;

	for (i = 0; i < NVALS; i += NVALS / 16) {
		char k[8];

		snprintf(k, sizeof(k), "k%u", i);
		val[0]++;
		CHECK_EQ(tdbc_put(t, NULL, k, strlen(k), val, VAL, 0), 0,
			 "put");
	}
}

/* One snapshot scan of "snapt" made to fail: 1 if it ended -ENOBUFS. */
static int snap_fail(struct h_raw *r, struct tdbc_table *t,
		     unsigned char *val)
{
	void *buf = malloc(TDB_PROTO_MSG_MAX);
	struct tdb_proto_msg m = { .cmd = TDB_CMD_SCAN,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
					    TDB_PROTO_BIT(TDB_A_SCAN_FLAGS),
				   .table = "snapt", .table_len = 5,
				   .scan_flags = TDB_SCAN_SNAPSHOT };
	uint32_t seq = h_raw_send_msg(r, &m);
	bool first = true;
	int err = 1;

	CHECK(buf, "out of memory");
	for (;;) {
		struct tdb_proto_extack ext = { 0 };
		struct tdb_proto_msg a;
		long n = h_raw_recv(r, buf, TDB_PROTO_MSG_MAX, 10000);

		CHECK(n > 0, "scan: %s", n == 0 ? "closed by tdbd" :
		      h_errname((int)n));
		CHECK_EQ(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a,
					 &ext), 0, "answer parses");
		CHECK_EQ(a.seq, seq, "the scan's answer");
		if (a.type == NLMSG_DONE || a.type == NLMSG_ERROR) {
			err = a.error;
			break;
		}
		if (first)
			overwrite(t, val);      /* the scan is open */
		first = false;
	}
	free(buf);
	return err == -ENOBUFS;
}

int main(void)
{
	const char *args[] = { "--max-snapshot-bytes", "1K", NULL };
	static unsigned char val[VAL];
	struct h_daemon d;
	struct tdbc *c;
	struct tdbc_table *st;
	struct h_raw r;
	unsigned long long printed, suppressed, made = 0, snaps = 0;
	unsigned int loop_ms;
	unsigned long long sprinted, ssuppressed;
	unsigned int before, after, nsupp, snsupp, i = 0;
	uint64_t t0, end, t_setup;
	char *log;

	h_init("tdbd-log-flood", 60);
	h_start(&d, "lf", args);
	c = h_connect(&d, 0);
	t_setup = h_now_ms();
	CHECK_EQ(tdbc_table_create(c, "snapt", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "snapt", &st), 0, "open");
	for (i = 0; i < NVALS; i++) {
		char k[8];

		snprintf(k, sizeof(k), "k%u", i);
		CHECK_EQ(tdbc_put(st, NULL, k, strlen(k), val, VAL, 0), 0,
			 "put");
	}
	h_raw_connect(&r, d.sock);
	/* the setup's lines (snapt made, its memory) began windows of their
	 * kinds: let them end first, so the loop's lines all fall in
	 * windows that begin with it (a slow build's setup took seconds,
	 * and a window ending mid-loop let 11 more lines of a kind in) */
	if (h_now_ms() < t_setup + WINDOW_MS + 200)
		h_sleep_ms((unsigned int)(t_setup + WINDOW_MS + 200 -
					  h_now_ms()));
	log = h_read_file(d.log);
	before = count_lines(log);
	free(log);
	t0 = h_now_ms();
	end = t0 + LOOP_MS;
	/* a slow build (the sanitizers) goes on for up to 4 s, still in the
	 * first 5 s window, until it has made enough to count */
	while (h_now_ms() < end ||
	       ((made <= MIN_MADE || snaps <= 20) && h_now_ms() < t0 + 4000)) {
		char name[32];

		snprintf(name, sizeof(name), "lf%u", i++ % 4);
		CHECK_EQ(tdbc_table_create(c, name, NULL), 0, "create");
		CHECK_EQ(tdbc_table_drop(c, name), 0, "drop");
		made += 2;
		snaps += (unsigned int)snap_fail(&r, st, val);
	}
	loop_ms = (unsigned int)(h_now_ms() - t0);
	/* the windows that began with the first lines end 5 s later; the
	 * tick (every second or so) then writes their counts */
	h_sleep_ms((unsigned int)(t0 + WINDOW_MS + 1500 - h_now_ms()));
	log = h_read_file(d.log);
	after = count_lines(log);
	account(log, "engine: table lf", " created (owner", KIND, &printed,
		&suppressed, &nsupp);
	account(log, "a snapshot scan fails", NULL, SNAP_KIND, &sprinted,
		&ssuppressed, &snsupp);
	free(log);
	h_note("%llu creates and drops, %llu failed snapshot scans in %u ms: "
	       "the log grew by %u lines; tables: %llu lines written, %llu "
	       "counted in %u suppressed-lines line(s); snapshots: %llu "
	       "written, %llu counted in %u", made, snaps, loop_ms,
	       after - before, printed, suppressed, nsupp, sprinted,
	       ssuppressed, snsupp);
	CHECK(made > MIN_MADE, "too few creates and "
	      "drops (%llu) to test", made);
	CHECK(snaps > 20, "too few failed snapshot scans (%llu) to test",
	      snaps);
	CHECK(after - before <= MAX_LINES, "the log grew by %u lines for a "
	      "create/drop and snapshot loop (at most %u)", after - before,
	      MAX_LINES);
	CHECK(nsupp >= 1, "no line counts the table lines suppressed");
	CHECK(printed + suppressed == made, "lines written (%llu) and "
	      "counted as suppressed (%llu) do not add up to the creates and "
	      "drops (%llu)", printed, suppressed, made);
	CHECK(snsupp >= 1, "no line counts the snapshot lines suppressed");
	CHECK(sprinted + ssuppressed == snaps, "snapshot lines written "
	      "(%llu) and counted as suppressed (%llu) do not add up to the "
	      "failed scans (%llu)", sprinted, ssuppressed, snaps);
	h_raw_close(&r);
	tdbc_close(c);
	h_stop(&d);
	h_done();
	return 0;
}
