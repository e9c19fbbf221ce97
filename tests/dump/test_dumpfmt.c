// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_dumpfmt.c - the dump text format alone (clients/dump/dumpfmt.c):
 * item encodings byte for byte as mdb_dump writes them, decoding and
 * its errors, lines across read buffers and over the limit, header
 * keywords.  No daemon.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dumpfmt.h"

/* Encode into a string through a memstream. */
static char *enc(bool print, const void *p, size_t len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(df_write_item(f, print, p, len), 0);
	fclose(f);
	return buf;
}

static void test_encode(void **state)
{
	static const unsigned char b[] = { 0x00, 'a', '\n', '\\', ' ', 0x7f,
					   0xff, '~', '"' };
	char *s;

	(void)state;
	s = enc(false, b, sizeof(b));
	assert_string_equal(s, " 00610a5c207fff7e22\n");
	free(s);
	s = enc(true, b, sizeof(b));
	assert_string_equal(s, " \\00a\\0a\\5c \\7f\\ff~\"\n");
	free(s);
	s = enc(false, "", 0);          /* the empty value: a space alone */
	assert_string_equal(s, " \n");
	free(s);
	s = enc(true, "alpha", 5);
	assert_string_equal(s, " alpha\n");
	free(s);
}

static void test_header_out(void **state)
{
	struct df_meta meta = { .have = true, .uid = 1000, .gid = 100,
				.mode = 0640, .max_extents = 512 };
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	(void)state;
	assert_int_equal(df_write_header(f, false, "t1", 1048576, &meta), 0);
	assert_int_equal(df_write_end(f), 0);
	meta.have = false;
	assert_int_equal(df_write_header(f, true, "t2", 0, &meta), 0);
	assert_int_equal(df_write_end(f), 0);
	/* expiry: the default TTL with the other keywords, a deadlines
	 * block (0: none) */
	meta.have = true;
	meta.default_ttl = 30000;
	assert_int_equal(df_write_header(f, true, "t3", 0, &meta), 0);
	assert_int_equal(df_write_end(f), 0);
	assert_int_equal(df_write_deadlines_header(f, true, "t3", 4096), 0);
	assert_int_equal(df_write_deadline(f, true, "k\n", 2,
					   1893456000000ull), 0);
	assert_int_equal(df_write_deadline(f, true, "z", 1, 0), 0);
	assert_int_equal(df_write_end(f), 0);
	assert_int_equal(df_write_deadlines_header(f, false, "t3", 0), 0);
	assert_int_equal(df_write_deadline(f, false, "z", 1, 12), 0);
	assert_int_equal(df_write_end(f), 0);
	/* eviction: bounds and policy after the default TTL; a table
	 * with one bound names only it, and its policy */
	meta.default_ttl = 0;
	meta.max_bytes = 67108864;
	meta.max_records = 1000;
	meta.evict = TDB_EVICT_LRU;
	assert_int_equal(df_write_header(f, false, "t4", 0, &meta), 0);
	meta.max_bytes = 0;
	meta.evict = TDB_EVICT_REFUSE;
	assert_int_equal(df_write_header(f, false, "t5", 0, &meta), 0);
	/* an ordered table: tdb_ordered=1, last; none without meta */
	meta.max_records = 0;
	meta.ordered = true;
	assert_int_equal(df_write_header(f, false, "t6", 0, &meta), 0);
	meta.have = false;
	assert_int_equal(df_write_header(f, false, "t7", 0, &meta), 0);
	fclose(f);
	assert_string_equal(buf,
		"VERSION=3\nformat=bytevalue\ndatabase=t1\ntype=btree\n"
		"mapsize=1048576\ntdb_owner=1000\ntdb_group=100\n"
		"tdb_mode=0640\ntdb_max_extents=512\nHEADER=END\nDATA=END\n"
		"VERSION=3\nformat=print\ndatabase=t2\ntype=btree\n"
		"HEADER=END\nDATA=END\n"
		"VERSION=3\nformat=print\ndatabase=t3\ntype=btree\n"
		"tdb_owner=1000\ntdb_group=100\ntdb_mode=0640\n"
		"tdb_max_extents=512\ntdb_default_ttl=30000\nHEADER=END\n"
		"DATA=END\n"
		"VERSION=3\nformat=print\ndatabase=/deadlines/t3\n"
		"type=btree\nmapsize=4096\nHEADER=END\n"
		" k\\0a\n 1893456000000\n z\n 0\nDATA=END\n"
		"VERSION=3\nformat=bytevalue\ndatabase=/deadlines/t3\n"
		"type=btree\nHEADER=END\n 7a\n 3132\nDATA=END\n"
		"VERSION=3\nformat=bytevalue\ndatabase=t4\ntype=btree\n"
		"tdb_owner=1000\ntdb_group=100\ntdb_mode=0640\n"
		"tdb_max_extents=512\ntdb_max_bytes=67108864\n"
		"tdb_max_records=1000\ntdb_evict=lru\nHEADER=END\n"
		"VERSION=3\nformat=bytevalue\ndatabase=t5\ntype=btree\n"
		"tdb_owner=1000\ntdb_group=100\ntdb_mode=0640\n"
		"tdb_max_extents=512\ntdb_max_records=1000\n"
		"tdb_evict=refuse\nHEADER=END\n"
		"VERSION=3\nformat=bytevalue\ndatabase=t6\ntype=btree\n"
		"tdb_owner=1000\ntdb_group=100\ntdb_mode=0640\n"
		"tdb_max_extents=512\ntdb_ordered=1\nHEADER=END\n"
		"VERSION=3\nformat=bytevalue\ndatabase=t7\ntype=btree\n"
		"HEADER=END\n");
	free(buf);
}

static long dec(bool print, const char *s, unsigned char *out, size_t cap,
		const char **msg)
{
	*msg = NULL;
	return df_decode(print, (const unsigned char *)s, strlen(s), out, cap,
			 msg);
}

static void test_decode(void **state)
{
	unsigned char out[64], raw[256];
	const char *msg;
	unsigned int i, round;

	(void)state;
	assert_int_equal(dec(false, "00610A5c", out, sizeof(out), &msg), 4);
	assert_memory_equal(out, "\x00\x61\x0a\x5c", 4);
	assert_int_equal(dec(true, "a\\00\\\\b\\ff", out, sizeof(out), &msg),
			 5);
	assert_memory_equal(out, "a\x00\\b\xff", 5);
	assert_int_equal(dec(true, "", out, sizeof(out), &msg), 0);
	/* errors */
	assert_int_equal(dec(false, "abc", out, sizeof(out), &msg), -EINVAL);
	assert_non_null(strstr(msg, "odd number"));
	assert_int_equal(dec(false, "zz", out, sizeof(out), &msg), -EINVAL);
	assert_non_null(strstr(msg, "not a hex digit"));
	assert_int_equal(dec(true, "a\\q1", out, sizeof(out), &msg), -EINVAL);
	assert_non_null(strstr(msg, "bad escape"));
	assert_int_equal(dec(true, "a\\0", out, sizeof(out), &msg), -EINVAL);
	assert_int_equal(dec(true, "\\", out, sizeof(out), &msg), -EINVAL);
	assert_int_equal(dec(false, "0011", out, 1, &msg), -E2BIG);
	assert_int_equal(dec(true, "ab", out, 1, &msg), -E2BIG);
	/* every byte, both ways */
	for (round = 0; round < 2; round++) {
		unsigned char back[256];
		char *s;

		for (i = 0; i < 256; i++)
			raw[i] = (unsigned char)(i * 7 + round);
		s = enc(round, raw, sizeof(raw));
		assert_int_equal(s[0], ' ');
		assert_int_equal(s[strlen(s) - 1], '\n');
		s[strlen(s) - 1] = '\0';
		assert_int_equal(dec(round, s + 1, back, sizeof(back), &msg),
				 256);
		assert_memory_equal(back, raw, 256);
		assert_null(strchr(s, '\n'));
		free(s);
	}
}

/* A pipe that holds `data`, written by a child (any size). */
static int pipe_of(const void *data, size_t len)
{
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *d = data;

		close(p[0]);
		while (len) {
			ssize_t n = write(p[1], d, len);

			if (n <= 0)
				_exit(1);
			d += n;
			len -= (size_t)n;
		}
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

static void test_lines(void **state)
{
	size_t big = (600u << 10) + 3, len, total;
	char *data = malloc(big + 64);
	const unsigned char *line;
	struct df_in in;
	int fd;

	(void)state;
	assert_non_null(data);
	/* "a", "", a 600 KiB line (across read buffers), "end" without \n */
	memcpy(data, "a\n\n", 3);
	memset(data + 3, 'x', big - 3);
	memcpy(data + big, "\nend", 4);
	total = big + 4;
	fd = pipe_of(data, total);
	assert_int_equal(df_in_init(&in, fd), 0);
	assert_int_equal(df_getline(&in, &line, &len), 1);
	assert_int_equal(len, 1);
	assert_int_equal(line[0], 'a');
	assert_int_equal(df_getline(&in, &line, &len), 1);
	assert_int_equal(len, 0);
	assert_int_equal(in.lineno, 2);
	assert_int_equal(df_getline(&in, &line, &len), 1);
	assert_int_equal(len, big - 3);
	assert_true(line[0] == 'x' && line[len - 1] == 'x');
	assert_int_equal(df_getline(&in, &line, &len), 1);
	assert_int_equal(len, 3);
	assert_memory_equal(line, "end", 3);
	assert_int_equal(in.lineno, 4);
	assert_int_equal(df_getline(&in, &line, &len), 0);
	assert_int_equal(in.bytes, total);
	df_in_free(&in);
	close(fd);
	free(data);

	/* a line over DF_LINE_MAX: -EMSGSIZE, naming its line */
	big = DF_LINE_MAX + 10;
	data = malloc(big + 8);
	assert_non_null(data);
	memcpy(data, "ok\n", 3);
	memset(data + 3, 'y', big);
	fd = pipe_of(data, big + 3);
	assert_int_equal(df_in_init(&in, fd), 0);
	assert_int_equal(df_getline(&in, &line, &len), 1);
	assert_int_equal(df_getline(&in, &line, &len), -EMSGSIZE);
	assert_int_equal(in.lineno, 2);
	df_in_free(&in);
	close(fd);
	free(data);
}

static int hdr(struct df_header *h, const char *line, const char **msg)
{
	*msg = NULL;
	return df_header_line(h, (const unsigned char *)line, strlen(line),
			      msg);
}

static void test_header_in(void **state)
{
	struct df_header h;
	const char *msg;

	(void)state;
	df_header_init(&h);
	assert_int_equal(hdr(&h, "HEADER=END", &msg), -EINVAL);
	assert_non_null(strstr(msg, "VERSION"));
	assert_int_equal(hdr(&h, "VERSION=3", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "format=print", &msg), DF_HDR_MORE);
	assert_true(h.print);
	assert_int_equal(hdr(&h, "database=t-1.x", &msg), DF_HDR_MORE);
	assert_string_equal(h.table, "t-1.x");
	assert_int_equal(hdr(&h, "type=btree", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "mapsize=1048576", &msg), DF_HDR_MORE);
	assert_int_equal(h.mapsize, 1048576);
	assert_int_equal(hdr(&h, "maxreaders=126", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "db_pagesize=4096", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "dupsort=0", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_owner=1000", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_group=100", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_mode=0640", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_max_extents=7", &msg), DF_HDR_MORE);
	assert_true(h.have_uid && h.uid == 1000 && h.have_gid &&
		    h.gid == 100 && h.have_mode && h.mode == 0640 &&
		    h.have_max_extents && h.max_extents == 7);
	assert_int_equal(hdr(&h, "colour=blue", &msg), DF_HDR_UNKNOWN);
	assert_false(h.deadlines || h.have_default_ttl);
	assert_int_equal(hdr(&h, "tdb_default_ttl=315360000000", &msg),
			 DF_HDR_MORE);
	assert_true(h.have_default_ttl && h.default_ttl == 315360000000ull);
	assert_false(h.max_bytes || h.max_records || h.have_evict);
	assert_int_equal(hdr(&h, "tdb_max_bytes=67108864", &msg),
			 DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_max_records=18446744073709551615",
			     &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "tdb_evict=lfu", &msg), DF_HDR_MORE);
	assert_true(h.max_bytes == 67108864 && h.max_records == UINT64_MAX &&
		    h.have_evict && h.evict == TDB_EVICT_LFU);
	assert_int_equal(hdr(&h, "tdb_evict=ttl", &msg), DF_HDR_MORE);
	assert_int_equal(h.evict, TDB_EVICT_TTL);
	/* ordered tables: 1 or 0, nothing else */
	assert_false(h.ordered);
	assert_int_equal(hdr(&h, "tdb_ordered=1", &msg), DF_HDR_MORE);
	assert_true(h.ordered);
	assert_int_equal(hdr(&h, "tdb_ordered=0", &msg), DF_HDR_MORE);
	assert_false(h.ordered);
	assert_int_equal(hdr(&h, "tdb_ordered=2", &msg), -EINVAL);
	assert_non_null(strstr(msg, "tdb_ordered"));
	assert_int_equal(hdr(&h, "tdb_ordered=", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_ordered=yes", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_ordered=1", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "HEADER=END", &msg), DF_HDR_END);
	/* a deadlines block names its table */
	df_header_init(&h);
	assert_int_equal(hdr(&h, "database=/deadlines/t-1.x", &msg),
			 DF_HDR_MORE);
	assert_true(h.deadlines && h.have_table);
	assert_string_equal(h.table, "t-1.x");
	assert_int_equal(hdr(&h, "database=t2", &msg), DF_HDR_MORE);
	assert_false(h.deadlines);
	assert_int_equal(hdr(&h, "database=/deadlines/", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=/deadlines/a/b", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=/deadline/a", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_default_ttl=0", &msg), -EINVAL);
	assert_non_null(strstr(msg, "tdb_default_ttl"));
	assert_int_equal(hdr(&h, "tdb_default_ttl=315360000001", &msg),
			 -EINVAL);
	assert_int_equal(hdr(&h, "tdb_default_ttl=1s", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_max_bytes=0", &msg), -EINVAL);
	assert_non_null(strstr(msg, "tdb_max_bytes"));
	assert_int_equal(hdr(&h, "tdb_max_records=18446744073709551616",
			     &msg), -EINVAL);
	assert_non_null(strstr(msg, "tdb_max_records"));
	assert_int_equal(hdr(&h, "tdb_max_bytes=64M", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_evict=LRU", &msg), -EINVAL);
	assert_non_null(strstr(msg, "tdb_evict"));
	assert_int_equal(hdr(&h, "tdb_evict=", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_evict=lr", &msg), -EINVAL);
	/* errors */
	assert_int_equal(hdr(&h, "no equals sign", &msg), -EINVAL);
	assert_int_equal(hdr(&h, " 6b", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "VERSION=4", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "VERSION=x", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "format=hex", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "type=recno", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "type=hash", &msg), DF_HDR_MORE);
	assert_int_equal(hdr(&h, "dupsort=1", &msg), -EINVAL);
	assert_non_null(strstr(msg, "one value per key"));
	assert_int_equal(hdr(&h, "duplicates=1", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=a b", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=a/b", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "database=01234567890123456789012345678901"
			     "234567890123456789012345678901234", &msg),
			 -EINVAL);
	assert_int_equal(hdr(&h, "tdb_mode=0800", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_mode=1777", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_owner=4294967295", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_owner=-1", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_max_extents=0", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "tdb_max_extents=32769", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "keys=0", &msg), -EINVAL);
	assert_int_equal(hdr(&h, "HEADER=START", &msg), -EINVAL);
}

static int pdl(const char *s, uint64_t *d, const char **msg)
{
	*msg = NULL;
	return df_parse_deadline((const unsigned char *)s, strlen(s), d, msg);
}

static void test_deadline_values(void **state)
{
	uint64_t d = 7;
	const char *msg;

	(void)state;
	assert_int_equal(pdl("0", &d, &msg), 0);
	assert_int_equal(d, 0);
	assert_int_equal(pdl("1893456000000", &d, &msg), 0);
	assert_int_equal(d, 1893456000000ull);
	assert_int_equal(pdl("18446744073709551615", &d, &msg), 0);
	assert_int_equal(d, UINT64_MAX);
	assert_int_equal(pdl("18446744073709551616", &d, &msg), -EINVAL);
	assert_non_null(strstr(msg, "deadline"));
	assert_int_equal(pdl("", &d, &msg), -EINVAL);
	assert_int_equal(pdl("-1", &d, &msg), -EINVAL);
	assert_int_equal(pdl("12 ", &d, &msg), -EINVAL);
	assert_int_equal(pdl("0x10", &d, &msg), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_header_out),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_header_in),
		cmocka_unit_test(test_deadline_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
