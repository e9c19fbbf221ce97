// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_fmt.c - unit tests of the tdb CLI's byte formats (fmt.c): every
 * output encoding on bytes that need escaping (NUL included), the UTF-8
 * rule that picks JSON strings or hex, hex input, strict numbers and
 * whole-input reads with their cap, and the word splitting of batch
 * lines (quotes, escapes, NUL bytes, comments).  No daemon.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fmt.h"

static int failed;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__,	\
			__LINE__, #cond);				\
		failed = 1;						\
	}								\
} while (0)

/* What fn writes for n bytes at p, as a malloc()ed C string. */
static char *render(void (*fn)(FILE *, const void *, size_t, int),
		    const void *p, size_t n, int arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	fn(f, p, n, arg);
	fclose(f);
	return buf;
}

static void w_bytes(FILE *f, const void *p, size_t n, int enc)
{
	fmt_bytes(f, p, n, (enum fmt_enc)enc);
}

static void w_field(FILE *f, const void *p, size_t n, int hex)
{
	fmt_json_field(f, "key", p, n, hex);
}

static void check_render(void (*fn)(FILE *, const void *, size_t, int),
			 const void *p, size_t n, int arg, const char *want,
			 int line)
{
	char *got = render(fn, p, n, arg);

	if (strcmp(got, want)) {
		fprintf(stderr, "line %d: got [%s], want [%s]\n", line, got,
			want);
		failed = 1;
	}
	free(got);
}
#define RENDER(fn, lit, arg, want) \
	check_render(fn, lit, sizeof(lit) - 1, arg, want, __LINE__)

static void test_bytes(void)
{
	char *raw;

	RENDER(w_bytes, "a\0b\\\n\t\r\x7f\xff \"", FMT_ESCAPE,
	       "a\\x00b\\\\\\n\\t\\r\\x7f\\xff \"");
	RENDER(w_bytes, "a\0\xff", FMT_HEX, "6100ff");
	RENDER(w_bytes, "", FMT_HEX, "");
	RENDER(w_bytes, "", FMT_ESCAPE, "");
	/* raw keeps the NUL: compare with memcmp */
	raw = render(w_bytes, "x\0y", 3, FMT_RAW);
	CHECK(!memcmp(raw, "x\0y", 3));
	free(raw);
}

#define JSON_OK(lit) fmt_json_ok(lit, sizeof(lit) - 1)

static void test_json_ok(void)
{
	CHECK(JSON_OK(""));
	CHECK(JSON_OK("hello world"));
	CHECK(JSON_OK("tab\there\nand\r"));
	CHECK(JSON_OK("h\xc3\xa9llo"));                 /* é */
	CHECK(JSON_OK("\xe2\x82\xac"));                 /* € */
	CHECK(JSON_OK("\xf0\x9f\x98\x80"));             /* U+1F600 */
	CHECK(JSON_OK("\xf4\x8f\xbf\xbf"));             /* U+10FFFF */
	CHECK(!JSON_OK("a\0b"));
	CHECK(!JSON_OK("\x01"));
	CHECK(!JSON_OK("\x7f"));
	CHECK(!JSON_OK("\xc3"));                        /* cut short */
	CHECK(!JSON_OK("\xc3\x28"));                    /* bad continuation */
	CHECK(!JSON_OK("\xc0\x80"));                    /* overlong NUL */
	CHECK(!JSON_OK("\xe0\x80\xaf"));                /* overlong / */
	CHECK(!JSON_OK("\xed\xa0\x80"));                /* surrogate */
	CHECK(!JSON_OK("\xf4\x90\x80\x80"));            /* > U+10FFFF */
	CHECK(!JSON_OK("\xf5\x80\x80\x80"));
	CHECK(!JSON_OK("\xff"));
	CHECK(!JSON_OK("\x80"));
}

static void test_json_field(void)
{
	RENDER(w_field, "plain", 0, "\"key\":\"plain\"");
	RENDER(w_field, "q\"b\\n\nt\t", 0, "\"key\":\"q\\\"b\\\\n\\nt\\t\"");
	RENDER(w_field, "h\xc3\xa9", 0, "\"key\":\"h\xc3\xa9\"");
	RENDER(w_field, "a\0b", 0, "\"key_hex\":\"610062\"");
	RENDER(w_field, "\xff", 0, "\"key_hex\":\"ff\"");
	RENDER(w_field, "plain", 1, "\"key_hex\":\"706c61696e\"");
	RENDER(w_field, "", 0, "\"key\":\"\"");
	/* C1 controls (here CSI, U+009B) are valid UTF-8 but escaped */
	RENDER(w_field, "a\xc2\x9b" "2J\xc2\xa0", 0,
	       "\"key\":\"a\\u009b2J\xc2\xa0\"");
}

static void test_escaped_len(void)
{
	static const char s[] = "ab\\\n\t\r\x7f\xff\x9b\0 ";

	/* 2 + 4 * 2 (\\ \n \t \r) + 4 * 4 (\x7f \xff \x9b \x00) + 1 */
	char *esc = render(w_bytes, s, sizeof(s) - 1, FMT_ESCAPE);

	CHECK(fmt_escaped_len(s, sizeof(s) - 1) == 27);
	CHECK(fmt_escaped_len(s, sizeof(s) - 1) == strlen(esc));
	free(esc);
	CHECK(fmt_escaped_len("", 0) == 0);
}

static int decode(const char *s, const char *want, size_t wlen)
{
	uint8_t *out = NULL;
	size_t n = 99;
	int err = fmt_hex_decode(s, strlen(s), &out, &n);

	if (!err) {
		CHECK(out != NULL);
		if (want && (n != wlen || memcmp(out, want, wlen)))
			err = 1;
		free(out);
	}
	return err;
}

static void test_hex_decode(void)
{
	uint8_t all[256], *back;
	char *hex;
	size_t n;
	int i;

	CHECK(!decode("", "", 0));
	CHECK(!decode("00ff10", "\x00\xff\x10", 3));
	CHECK(!decode("AbCd", "\xab\xcd", 2));
	CHECK(!decode(" 00 ff\n", "\x00\xff", 2));
	CHECK(decode("0", NULL, 0) == -EINVAL);
	CHECK(decode("0 0", NULL, 0) == -EINVAL);
	CHECK(decode("zz", NULL, 0) == -EINVAL);
	CHECK(decode("0x00", NULL, 0) == -EINVAL);
	/* every byte survives hex out and back */
	for (i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	hex = render(w_bytes, all, sizeof(all), FMT_HEX);
	CHECK(strlen(hex) == 512);
	CHECK(!fmt_hex_decode(hex, strlen(hex), &back, &n));
	CHECK(n == 256 && !memcmp(back, all, 256));
	free(back);
	free(hex);
}

static void test_numbers(void)
{
	uint64_t v = 7;

	CHECK(!fmt_parse_u64("0", 10, 10, &v) && v == 0);
	CHECK(!fmt_parse_u64("123", 10, 1000, &v) && v == 123);
	CHECK(!fmt_parse_u64("18446744073709551615", 10, UINT64_MAX, &v) &&
	      v == UINT64_MAX);
	CHECK(fmt_parse_u64("18446744073709551616", 10, UINT64_MAX, &v) ==
	      -ERANGE);
	CHECK(fmt_parse_u64("1001", 10, 1000, &v) == -ERANGE);
	CHECK(fmt_parse_u64("", 10, 10, &v) == -EINVAL);
	CHECK(fmt_parse_u64("-1", 10, 10, &v) == -EINVAL);
	CHECK(fmt_parse_u64("1x", 10, 10, &v) == -EINVAL);
	CHECK(fmt_parse_u64(" 1", 10, 10, &v) == -EINVAL);
	CHECK(fmt_parse_u64("a", 10, 100, &v) == -EINVAL);
	CHECK(!fmt_parse_u64("0640", 8, 0777, &v) && v == 0640);
	CHECK(fmt_parse_u64("8", 8, 0777, &v) == -EINVAL);
	CHECK(fmt_parse_u64("1000", 8, 0777, &v) == -ERANGE);

	/* sizes: K M G T are powers of 1024, "KiB" and lower case too */
	CHECK(!fmt_parse_size("4096", UINT64_MAX, &v) && v == 4096);
	CHECK(!fmt_parse_size("64K", UINT64_MAX, &v) && v == 65536);
	CHECK(!fmt_parse_size("3m", UINT64_MAX, &v) && v == 3u << 20);
	CHECK(!fmt_parse_size("2GiB", UINT64_MAX, &v) && v == 2ull << 30);
	CHECK(!fmt_parse_size("1T", UINT64_MAX, &v) && v == 1ull << 40);
	CHECK(fmt_parse_size("", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("K", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("1 ", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("1KB", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("1P", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("-1", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("1.5M", UINT64_MAX, &v) == -EINVAL);
	CHECK(fmt_parse_size("16777216T", UINT64_MAX, &v) == -ERANGE);
	CHECK(fmt_parse_size("2K", 2047, &v) == -ERANGE);
	CHECK(fmt_parse_size("99999999999999999999999", UINT64_MAX, &v) ==
	      -ERANGE);
}

/* fmt_parse_duration's result for s (max: 10 years, as tdb's TTLs):
 * its errno, and ms in *ms. */
#define TEN_YEARS 315360000000ull
static int dur(const char *s, uint64_t *ms)
{
	const char *why = NULL;
	int err;

	*ms = 7;
	err = fmt_parse_duration(s, TEN_YEARS, ms, &why);
	/* every refusal says why, every success leaves no reason */
	if (err && (!why || !*why)) {
		printf("FAIL: duration '%s' refused without a reason\n", s);
		failed = 1;
	}
	return err;
}

static void test_durations(void)
{
	char buf[FMT_DURATION_MAX];
	uint64_t ms, samples[] = {
		1, 999, 1000, 1500, 60000, 90061001, 86400000,
		TEN_YEARS, UINT64_MAX,
	};
	const char *why;
	size_t i;

	/* units */
	CHECK(!dur("500ms", &ms) && ms == 500);
	CHECK(!dur("30s", &ms) && ms == 30000);
	CHECK(!dur("2m", &ms) && ms == 120000);
	CHECK(!dur("2h", &ms) && ms == 7200000);
	CHECK(!dur("1d", &ms) && ms == 86400000);
	/* a lone number is seconds */
	CHECK(!dur("30", &ms) && ms == 30000);
	CHECK(!dur("1", &ms) && ms == 1000);
	/* parts add up, in any order */
	CHECK(!dur("1h30m", &ms) && ms == 5400000);
	CHECK(!dur("1s500ms", &ms) && ms == 1500);
	CHECK(!dur("500ms1s", &ms) && ms == 1500);
	CHECK(!dur("1d2h3m4s5ms", &ms) && ms == 93784005);
	/* exactly 10 years passes, one ms more does not */
	CHECK(!dur("3650d", &ms) && ms == TEN_YEARS);
	CHECK(!dur("315360000s", &ms) && ms == TEN_YEARS);
	CHECK(dur("315360000001ms", &ms) == -ERANGE && ms == 7);
	CHECK(dur("3651d", &ms) == -ERANGE);
	CHECK(dur("99999999999999999999999s", &ms) == -ERANGE);
	CHECK(dur("18446744073709551615d", &ms) == -ERANGE);
	/* zero, in any unit */
	CHECK(dur("0", &ms) == -EDOM && ms == 7);
	CHECK(dur("0ms", &ms) == -EDOM);
	CHECK(dur("0h0m", &ms) == -EDOM);
	/* garbage */
	CHECK(dur("", &ms) == -EINVAL);
	CHECK(dur("-5s", &ms) == -EINVAL);
	CHECK(dur("-5", &ms) == -EINVAL);
	CHECK(dur("+5s", &ms) == -EINVAL);
	CHECK(dur(" 5s", &ms) == -EINVAL);
	CHECK(dur("5s ", &ms) == -EINVAL);
	CHECK(dur("5 s", &ms) == -EINVAL);
	CHECK(dur("1.5s", &ms) == -EINVAL);
	CHECK(dur("5x", &ms) == -EINVAL);
	CHECK(dur("5min", &ms) == -EINVAL);
	CHECK(dur("5S", &ms) == -EINVAL);
	CHECK(dur("s", &ms) == -EINVAL);
	CHECK(dur("ms", &ms) == -EINVAL);
	CHECK(dur("1h30", &ms) == -EINVAL);     /* unit-less part */
	CHECK(dur("abc", &ms) == -EINVAL && ms == 7);
	/* the reasons name the fault */
	CHECK(fmt_parse_duration("1.5s", TEN_YEARS, &ms, &why) == -EINVAL &&
	      strstr(why, "fraction"));
	CHECK(fmt_parse_duration("-1s", TEN_YEARS, &ms, &why) == -EINVAL &&
	      strstr(why, "negative"));
	CHECK(fmt_parse_duration("5y", TEN_YEARS, &ms, &why) == -EINVAL &&
	      strstr(why, "unit"));
	/* a smaller max */
	CHECK(fmt_parse_duration("2s", 1999, &ms, &why) == -ERANGE);

	/* formatting: largest parts first, zero parts left out */
	CHECK(!strcmp(fmt_format_duration(0, buf), "0s"));
	CHECK(!strcmp(fmt_format_duration(1, buf), "1ms"));
	CHECK(!strcmp(fmt_format_duration(30000, buf), "30s"));
	CHECK(!strcmp(fmt_format_duration(1500, buf), "1s500ms"));
	CHECK(!strcmp(fmt_format_duration(5400000, buf), "1h30m"));
	CHECK(!strcmp(fmt_format_duration(86400000, buf), "1d"));
	CHECK(!strcmp(fmt_format_duration(93784005, buf), "1d2h3m4s5ms"));
	CHECK(!strcmp(fmt_format_duration(UINT64_MAX, buf),
		      "213503982334d14h25m51s615ms"));
	/* and what it writes reads back as the same ms */
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		fmt_format_duration(samples[i], buf);
		CHECK(!fmt_parse_duration(buf, UINT64_MAX, &ms, &why) &&
		      ms == samples[i]);
	}
}

static void test_signed(void)
{
	int64_t v = 7;

	CHECK(!fmt_parse_s64("0", &v) && v == 0);
	CHECK(!fmt_parse_s64("-5", &v) && v == -5);
	CHECK(!fmt_parse_s64("42", &v) && v == 42);
	CHECK(!fmt_parse_s64("9223372036854775807", &v) && v == INT64_MAX);
	CHECK(!fmt_parse_s64("-9223372036854775808", &v) && v == INT64_MIN);
	CHECK(fmt_parse_s64("9223372036854775808", &v) == -ERANGE);
	CHECK(fmt_parse_s64("-9223372036854775809", &v) == -ERANGE);
	CHECK(fmt_parse_s64("", &v) == -EINVAL);
	CHECK(fmt_parse_s64("-", &v) == -EINVAL);
	CHECK(fmt_parse_s64("+1", &v) == -EINVAL);
	CHECK(fmt_parse_s64("--1", &v) == -EINVAL);
	CHECK(fmt_parse_s64("1.5", &v) == -EINVAL);
}

/* Write n bytes of pattern into a pipe from a child, read them back. */
static int read_pipe(size_t n, size_t cap, size_t *got)
{
	uint8_t *out = NULL, byte;
	int fd[2], err;
	size_t i;
	pid_t pid;

	if (pipe(fd))
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		close(fd[0]);
		for (i = 0; i < n; i++) {
			byte = (uint8_t)(i * 7);
			if (write(fd[1], &byte, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(fd[1]);
	err = fmt_read_all(fd[0], cap, &out, got);
	close(fd[0]);
	waitpid(pid, NULL, 0);  /* killed by SIGPIPE after -E2BIG: fine */
	if (!err) {
		CHECK(out != NULL);
		for (i = 0; i < *got; i++)
			if (out[i] != (uint8_t)(i * 7))
				err = 1;
	}
	free(out);
	return err;
}

static void test_read_all(void)
{
	size_t got = 99;
	uint8_t *out;

	CHECK(!read_pipe(0, 100, &got) && got == 0);
	CHECK(!read_pipe(5000, 10000, &got) && got == 5000);
	CHECK(!read_pipe(10000, 10000, &got) && got == 10000);
	CHECK(read_pipe(10001, 10000, &got) == -E2BIG);
	CHECK(read_pipe(100000, 10000, &got) == -E2BIG);
	CHECK(fmt_read_all(-1, 10, &out, &got) == -EBADF);
}

/* Split line; the words joined with '|' (NUL shown as '@'), or NULL on
 * an error (its reason in *why). */
static char *split_join(const char *line, const char **why)
{
	static char buf[256];
	struct fmt_words w;
	size_t at = 0, j;
	int i;

	*why = NULL;
	if (fmt_split(line, strlen(line), &w, why))
		return NULL;
	for (i = 0; i < w.n; i++) {
		CHECK(w.word[i][w.len[i]] == '\0');
		for (j = 0; j < w.len[i] && at < sizeof(buf) - 2; j++)
			buf[at++] = w.word[i][j] ? w.word[i][j] : '@';
		buf[at++] = '|';
	}
	buf[at] = '\0';
	fmt_words_free(&w);
	return buf;
}

#define SPLIT(line, want) do {						\
	const char *why_;						\
	char *got_ = split_join(line, &why_);				\
	if (!got_ || strcmp(got_, want)) {				\
		fprintf(stderr, "line %d: split [%s]: got [%s] (%s), "	\
			"want [%s]\n", __LINE__, line,			\
			got_ ? got_ : "error", why_ ? why_ : "",	\
			want);						\
		failed = 1;						\
	}								\
} while (0)

#define SPLIT_BAD(line, reason) do {					\
	const char *why_;						\
	CHECK(!split_join(line, &why_) && why_ &&			\
	      strstr(why_, reason));					\
} while (0)

static void test_split(void)
{
	SPLIT("", "");
	SPLIT("  \t ", "");
	SPLIT("put t k v", "put|t|k|v|");
	SPLIT("  put\tt  k v \r\n", "put|t|k|v|");
	/* what ./run demo prints, pasted */
	SPLIT("tdb put users alice '{\"age\": 31}'",
	      "tdb|put|users|alice|{\"age\": 31}|");
	SPLIT("put t k \"{\\\"a\\\": 1}\"", "put|t|k|{\"a\": 1}|");
	/* single quotes keep backslashes; empty words */
	SPLIT("put t 'a\\nb' ''", "put|t|a\\nb||");
	SPLIT("put t \"\" x", "put|t||x|");
	/* double quotes take scan's escapes, NUL included */
	SPLIT("put t \"a\\x00b\\n\\\\\\xff\"",
	      "put|t|a@b\n\\\xff|");
	SPLIT("put t \"\\0\\t\\$\"", "put|t|@\t$|");
	/* outside quotes a backslash keeps the next byte */
	SPLIT("put t a\\ b \\'", "put|t|a b|'|");
	/* quotes join a word */
	SPLIT("put t a'b c'\"d\"", "put|t|ab cd|");
	/* comments */
	SPLIT("# all of it", "");
	SPLIT("get t k # the rest", "get|t|k|");
	SPLIT("get t k#not", "get|t|k#not|");
	SPLIT_BAD("put t 'open", "single quote");
	SPLIT_BAD("put t \"open", "double quote");
	SPLIT_BAD("put t \"\\x4\"", "\\x takes");
	SPLIT_BAD("put t \"\\xzz\"", "\\x takes");
	SPLIT_BAD("put t k\\", "backslash ends");
}

int main(void)
{
	test_bytes();
	test_json_ok();
	test_json_field();
	test_escaped_len();
	test_hex_decode();
	test_numbers();
	test_signed();
	test_durations();
	test_read_all();
	test_split();
	if (!failed)
		printf("test_fmt: all passed\n");
	return failed;
}
