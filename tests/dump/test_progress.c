// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_progress.c - the progress bar's and the summary's formatting in
 * tdb-dump and tdb-load (clients/dump/common.c): sizes in B/KiB/MiB/GiB
 * with three digits and rounding across units, rates, durations in
 * s/min/h, the bar's line with its share, rate and time left, and with
 * an unknown total.  No daemon, no terminal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define SEC 1000000000ull

static void bytes_is(uint64_t b, const char *want)
{
	char buf[32];

	dx_fmt_bytes(buf, sizeof(buf), b);
	assert_string_equal(buf, want);
}

static void test_bytes(void **state)
{
	(void)state;
	bytes_is(0, "0 B");
	bytes_is(1023, "1023 B");
	bytes_is(KiB, "1.00 KiB");
	bytes_is(1536, "1.50 KiB");
	bytes_is(10 * KiB, "10.0 KiB");
	bytes_is(999 * KiB, "999 KiB");
	/* 1023.9 KiB would print as 1024 KiB: it is the next unit's 1. */
	bytes_is(1048474, "1.00 MiB");
	bytes_is(68404533, "65.2 MiB");
	bytes_is(512 * MiB, "512 MiB");
	bytes_is(2 * GiB, "2.00 GiB");
	bytes_is(5000 * GiB, "4.88 TiB");
	bytes_is(UINT64_MAX, "16777216 TiB");
}

static void test_rate(void **state)
{
	char buf[32];

	(void)state;
	dx_fmt_rate(buf, sizeof(buf), 10 * MiB, 2 * SEC);
	assert_string_equal(buf, "5.00 MiB/s");
	dx_fmt_rate(buf, sizeof(buf), 512, SEC / 2);
	assert_string_equal(buf, "1.00 KiB/s");
	dx_fmt_rate(buf, sizeof(buf), 12345, 0);        /* no time yet */
	assert_string_equal(buf, "0 B/s");
	/* A short buffer is cut, never overrun. */
	dx_fmt_rate(buf, 6, 10 * MiB, 2 * SEC);
	assert_string_equal(buf, "5.00 ");
}

static void dur_is(uint64_t ns, const char *want)
{
	char buf[32];

	dx_fmt_duration(buf, sizeof(buf), ns);
	assert_string_equal(buf, want);
}

static void test_duration(void **state)
{
	(void)state;
	dur_is(0, "0.0 s");
	dur_is(SEC * 4 / 10, "0.4 s");
	dur_is(SEC * 95 / 10, "9.5 s");
	dur_is(SEC * 9949 / 1000, "9.9 s");
	dur_is(SEC * 9951 / 1000, "10 s");
	dur_is(42 * SEC, "42 s");
	/* 59.6 s rounds to a minute, not to "60 s". */
	dur_is(SEC * 596 / 10, "1 min 00 s");
	dur_is(185 * SEC, "3 min 05 s");
	dur_is(3599 * SEC, "59 min 59 s");
	dur_is((2 * 3600 + 7 * 60 + 10) * SEC, "2 h 07 min");
}

static void test_line(void **state)
{
	char buf[256];

	(void)state;
	/* tdb-dump: records of a known total; 25 MiB in 5 s, a quarter
	 * done, so 15 s left. */
	dx_progress_line(buf, sizeof(buf), "users", 2500, 10000, "records",
			 25 * MiB, 5 * SEC, 20);
	assert_string_equal(buf, "users            [#####...............]"
			    "  25% 2500/10000 records, 5.00 MiB/s, ETA 15 s");
	/* tdb-load from a file: bytes of the input. */
	dx_progress_line(buf, sizeof(buf), "t1", 3 * MiB, 12 * MiB, "bytes",
			 3 * MiB, 2 * SEC, 4);
	assert_string_equal(buf, "t1               [#...]  25% 3.00 MiB of "
			    "12.0 MiB, 1.50 MiB/s, ETA 6.0 s");
	/* Nothing done yet, or too early to tell: no time left shown. */
	dx_progress_line(buf, sizeof(buf), "t1", 0, 100, "records", 0,
			 5 * SEC, 0);
	assert_string_equal(buf, "t1                 0% 0/100 records, "
			    "0 B/s, ETA --");
	dx_progress_line(buf, sizeof(buf), "t1", 10, 100, "records", 100,
			 SEC / 20, 0);
	assert_string_equal(buf, "t1                10% 10/100 records, "
			    "1.95 KiB/s, ETA --");
	/* Done past the total (the table grew): the share held at 100%,
	 * the count as it is. */
	dx_progress_line(buf, sizeof(buf), "t1", 120, 100, "records", KiB,
			 SEC, 2);
	assert_string_equal(buf, "t1               [##] 100% 120/100 "
			    "records, 1.00 KiB/s, ETA 0.0 s");
	/* tdb-load from a pipe: no total. */
	dx_progress_line(buf, sizeof(buf), "a-long-table-name-cut", 7000, 0,
			 "records", 3 * MiB, 2 * SEC, 20);
	assert_string_equal(buf, "a-long-table-nam 7000 records, 3.00 MiB, "
			    "1.50 MiB/s");
	/* Cut to the buffer. */
	dx_progress_line(buf, 10, "users", 1, 2, "records", 1, SEC, 20);
	assert_string_equal(buf, "users    ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
