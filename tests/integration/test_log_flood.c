// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_log_flood.c - a client cannot flood tdbd's log through the lines
 * the owner and the engine write for it (issue 25, item 5): each kind
 * is rate limited (platform.h, tdbp_log_rl: 10 lines per 5 s, tdbd's
 * own policy) and what was left out is counted in a line of its own,
 * written even when no later line of the kind comes (tdbd's tick calls
 * tdbo_log_flush).
 *
 * tdbd runs at --log-level debug (every line shown).  A client creates
 * and drops tables for 2 s (each create and each drop is one "table ..."
 * line of the owner's).  Then, once the limiter's window is over (5 s
 * after the first line) and the tick has run:
 *  - the log grew by at most 50 lines in all (without the limiter it
 *    grew by thousands);
 *  - a "similar line(s) suppressed" line of the kind "tables made or
 *    dropped" is there, and the lines written plus the counts add up to
 *    exactly the creates and drops made: nothing lost, nothing twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define LOOP_MS   2000u
#define WINDOW_MS 5000u
#define MAX_LINES 50u
#define KIND      "(tables made or dropped;"

static unsigned int count_lines(const char *log)
{
	unsigned int n = 0;

	for (; *log; log++)
		n += *log == '\n';
	return n;
}

/* Lines "table lfN created|dropped" written, and the counts of the
 * suppressed-lines lines of their kind, from the log's text. */
static void account(const char *log, unsigned long long *printed,
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
		if (strstr(buf, "engine: table lf") &&
		    (strstr(buf, " created (owner") ||
		     strstr(buf, " dropped")))
			(*printed)++;
		if (strstr(buf, KIND) &&
		    (p = strstr(buf, "engine: ")) != NULL) {
			*suppressed += strtoull(p + 8, NULL, 10);
			(*nsupp)++;
		}
		if (!end)
			break;
		line = end + 1;
	}
}

int main(void)
{
	struct h_daemon d;
	struct tdbc *c;
	unsigned long long printed, suppressed, made = 0;
	unsigned int before, after, nsupp, i = 0;
	uint64_t t0, end;
	char *log;

	h_init("tdbd-log-flood", 60);
	h_start(&d, "lf", NULL);
	c = h_connect(&d, 0);
	log = h_read_file(d.log);
	before = count_lines(log);
	free(log);
	t0 = h_now_ms();
	end = t0 + LOOP_MS;
	while (h_now_ms() < end) {
		char name[32];

		snprintf(name, sizeof(name), "lf%u", i++ % 4);
		CHECK_EQ(tdbc_table_create(c, name, NULL), 0, "create");
		CHECK_EQ(tdbc_table_drop(c, name), 0, "drop");
		made += 2;
	}
	/* the window that began with the first line ends 5 s later; the
	 * tick (every second or so) then writes its count */
	h_sleep_ms((unsigned int)(t0 + WINDOW_MS + 1500 - h_now_ms()));
	log = h_read_file(d.log);
	after = count_lines(log);
	account(log, &printed, &suppressed, &nsupp);
	free(log);
	h_note("%llu creates and drops in %u ms: the log grew by %u lines; "
	       "%llu table lines written, %llu counted in %u suppressed-"
	       "lines line(s)", made, LOOP_MS, after - before, printed,
	       suppressed, nsupp);
	CHECK(made > 200, "too few creates and drops (%llu) to test", made);
	CHECK(after - before <= MAX_LINES, "the log grew by %u lines for a "
	      "create/drop loop (at most %u)", after - before, MAX_LINES);
	CHECK(nsupp >= 1, "no line counts the table lines suppressed");
	CHECK(printed + suppressed == made, "lines written (%llu) and "
	      "counted as suppressed (%llu) do not add up to the creates and "
	      "drops (%llu)", printed, suppressed, made);
	tdbc_close(c);
	h_stop(&d);
	h_done();
	return 0;
}
