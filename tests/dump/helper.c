// SPDX-License-Identifier: GPL-2.0-only
/*
 * helper.c - what tests/dump/test_dump.sh needs that sh has not, kept
 * independent of clients/dump (its own encoder and decoder, so the tools
 * are checked against something else than themselves):
 *
 *   dump_helper gen SEED N TABLE [OPTION]...   a random dump on stdout
 *       --maxkey K    keys of 4..K bytes (default 511, LMDB's limit);
 *                     every 50th exactly K; unique (an index inside)
 *       --maxval V    values of 0..V bytes (default 300); every 7th empty
 *       --fixval V    every value V bytes (a large table of known size)
 *       --big B       B more records with 1 MiB values
 *       --noslash     no '\' byte anywhere (mdb_dump -p of LMDB 0.9.24
 *                     writes '\' unescaped: ambiguous)
 *       --print       format=print (default bytevalue)
 *       --nodb        no database= line (as mdb_dump of a main DB)
 *   dump_helper norm [--nodb] [FILE]   one line per record, "DB<TAB>KEY
 *       <TAB>VALUE" in hex (DB "-" with --nodb or without database=), for
 *       sort and cmp; exit 1 on anything malformed
 *   dump_helper rss OUT CMD [ARG]...   run CMD, write its peak RSS (KiB,
 *       getrusage of the child) to OUT, exit with its status
 *   dump_helper inorder DB   norm's lines on stdin: exit 0 if the keys of
 *       database DB come in LMDB's order (memcmp of the bytes, then the
 *       shorter first), each after the one before, else 1 naming the
 *       first pair out of order (the reference order, not sort(1)'s)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rs;

static uint64_t rnd(void)
{
	uint64_t x = rs;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rs = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static void put_item(const unsigned char *p, size_t n, int print)
{
	static const char hx[] = "0123456789abcdef";
	size_t i;

	putchar(' ');
	for (i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (!print) {
			putchar(hx[c >> 4]);
			putchar(hx[c & 15]);
		} else if (c == '\\') {
			fputs("\\\\", stdout);
		} else if (c >= 0x20 && c < 0x7f) {
			putchar(c);
		} else {
			putchar('\\');
			putchar(hx[c >> 4]);
			putchar(hx[c & 15]);
		}
	}
	putchar('\n');
}

static unsigned char rbyte(int noslash)
{
	unsigned char c;

	/* plenty of NULs, newlines and backslashes */
	switch (rnd() % 8) {
	case 0: c = 0; break;
	case 1: c = '\n'; break;
	case 2: c = '\\'; break;
	default: c = (unsigned char)rnd(); break;
	}
	if (noslash && c == '\\')
		c = 'S';
	return c;
}

static int gen(int argc, char **argv)
{
	unsigned long seed, n, i, big = 0;
	size_t maxkey = 511, maxval = 300, fixval = (size_t)-1, j;
	int print = 0, nodb = 0, noslash = 0, a;
	unsigned char *k, *v;
	const char *table;

	if (argc < 5)
		return 2;
	seed = strtoul(argv[2], NULL, 10);
	n = strtoul(argv[3], NULL, 10);
	table = argv[4];
	for (a = 5; a < argc; a++) {
		if (!strcmp(argv[a], "--maxkey") && a + 1 < argc)
			maxkey = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--maxval") && a + 1 < argc)
			maxval = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--fixval") && a + 1 < argc)
			fixval = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--big") && a + 1 < argc)
			big = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--print"))
			print = 1;
		else if (!strcmp(argv[a], "--nodb"))
			nodb = 1;
		else if (!strcmp(argv[a], "--noslash"))
			noslash = 1;
		else
			return 2;
	}
	if (maxkey < 4)
		return 2;
	rs = seed * 0x9e3779b97f4a7c15ULL + 1;
	k = malloc(maxkey);
	v = malloc(1u << 20);
	if (!k || !v)
		return 1;
	printf("VERSION=3\nformat=%s\n", print ? "print" : "bytevalue");
	if (!nodb)
		printf("database=%s\n", table);
	printf("type=btree\nHEADER=END\n");
	for (i = 0; i < n + big; i++) {
		size_t kl = i % 50 == 3 ? maxkey : 4 + rnd() % (maxkey - 3);
		size_t vl;

		if (kl > maxkey)
			kl = maxkey;
		/* the index, big-endian: unique, and NULs in most keys;
		 * --noslash: base 64 in bytes 0x80..0xbf */
		if (noslash) {
			k[0] = (unsigned char)(0x80 | (i >> 18 & 63));
			k[1] = (unsigned char)(0x80 | (i >> 12 & 63));
			k[2] = (unsigned char)(0x80 | (i >> 6 & 63));
			k[3] = (unsigned char)(0x80 | (i & 63));
		} else {
			k[0] = (unsigned char)(i >> 24);
			k[1] = (unsigned char)(i >> 16);
			k[2] = (unsigned char)(i >> 8);
			k[3] = (unsigned char)i;
		}
		for (j = 4; j < kl; j++)
			k[j] = rbyte(noslash);
		if (i >= n)
			vl = 1u << 20;
		else if (fixval != (size_t)-1)
			vl = fixval;
		else
			vl = i % 7 == 0 ? 0 : rnd() % (maxval + 1);
		for (j = 0; j < vl; j++)
			v[j] = rbyte(noslash);
		put_item(k, kl, print);
		put_item(v, vl, print);
	}
	printf("DATA=END\n");
	free(k);
	free(v);
	return fflush(stdout) ? 1 : 0;
}

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode an item line (after its space) and print it in hex. */
static int norm_item(const char *s, size_t n, int print)
{
	static const char hx[] = "0123456789abcdef";
	size_t i = 0;

	if (!print) {
		if (n & 1)
			return -1;
		for (i = 0; i < n; i++) {
			if (unhex(s[i]) < 0)
				return -1;
			putchar(s[i] >= 'A' && s[i] <= 'F' ? s[i] + 32 : s[i]);
		}
		return 0;
	}
	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			if (i + 1 < n && s[i + 1] == '\\') {
				c = '\\';
				i += 2;
			} else if (i + 2 < n && unhex(s[i + 1]) >= 0 &&
				   unhex(s[i + 2]) >= 0) {
				c = (unsigned char)(unhex(s[i + 1]) << 4 |
						    unhex(s[i + 2]));
				i += 3;
			} else {
				return -1;
			}
		} else {
			i++;
		}
		putchar(hx[c >> 4]);
		putchar(hx[c & 15]);
	}
	return 0;
}

static int norm(int argc, char **argv)
{
	int nodb = 0, a = 2, print = 0, inhdr = 1, have_key = 0;
	char db[256] = "-", *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	ssize_t len;
	FILE *f = stdin;

	if (a < argc && !strcmp(argv[a], "--nodb")) {
		nodb = 1;
		a++;
	}
	if (a < argc && !(f = fopen(argv[a], "r"))) {
		perror(argv[a]);
		return 1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (inhdr) {
			if (!strcmp(line, "HEADER=END")) {
				inhdr = 0;
			} else if (!strncmp(line, "format=", 7)) {
				print = !strcmp(line + 7, "print");
			} else if (!strncmp(line, "database=", 9)) {
				if (!nodb)
					snprintf(db, sizeof(db), "%s",
						 line + 9);
			} else if (!strncmp(line, "VERSION=", 8)) {
				snprintf(db, sizeof(db), "-");
			}
			continue;
		}
		if (!strcmp(line, "DATA=END")) {
			if (have_key)
				goto bad;
			inhdr = 1;
			continue;
		}
		if (line[0] != ' ')
			goto bad;
		if (!have_key)
			printf("%s\t", nodb ? "-" : db);
		if (norm_item(line + 1, (size_t)len - 1, print))
			goto bad;
		putchar(have_key ? '\n' : '\t');
		have_key = !have_key;
	}
	if (!inhdr || have_key)
		goto bad;
	free(line);
	return fflush(stdout) ? 1 : 0;
bad:
	fprintf(stderr, "norm: line %lu: malformed\n", lineno);
	return 1;
}

static int rss(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;
	FILE *f;

	if (argc < 4)
		return 2;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return 1;
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%ld\n", ru.ru_maxrss);
	fclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Hex digits (norm's, lowercase) into bytes: how many. */
static size_t unhex_all(const char *s, size_t n, unsigned char *out)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		out[i / 2] = (unsigned char)(unhex(s[i]) << 4 | unhex(s[i + 1]));
	return n / 2;
}

static int inorder(int argc, char **argv)
{
	static unsigned char prev[8192], cur[8192];
	size_t pl = 0, cl, dbl, n = 0;
	char *line = NULL, *k, *t;
	size_t cap = 0;
	ssize_t len;

	if (argc < 3)
		return 2;
	dbl = strlen(argv[2]);
	while ((len = getline(&line, &cap, stdin)) >= 0) {
		int c;

		if ((size_t)len <= dbl || strncmp(line, argv[2], dbl) ||
		    line[dbl] != '\t')
			continue;
		k = line + dbl + 1;
		t = strchr(k, '\t');
		if (!t || (size_t)(t - k) > 2 * sizeof(cur))
			return 1;
		cl = unhex_all(k, (size_t)(t - k), cur);
		c = memcmp(prev, cur, pl < cl ? pl : cl);
		if (n && (c > 0 || (!c && pl >= cl))) {
			fprintf(stderr, "inorder: record %zu (a key of %zu "
				"bytes) is not after the one before (%zu "
				"bytes)\n", n, cl, pl);
			free(line);
			return 1;
		}
		memcpy(prev, cur, cl);
		pl = cl;
		n++;
	}
	free(line);
	printf("%zu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "inorder"))
		return inorder(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "gen"))
		return gen(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "norm"))
		return norm(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "rss"))
		return rss(argc, argv);
	fprintf(stderr, "usage: dump_helper gen|norm|rss|inorder ...\n");
	return 2;
}
