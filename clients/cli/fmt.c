// SPDX-License-Identifier: GPL-2.0-only
/*
 * fmt.c - the tdb CLI's byte formats (fmt.h): raw, escaped, hex and JSON
 * output of keys and values; hex, number and whole-file input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"

static const char hexdig[] = "0123456789abcdef";

static void put_hex_byte(FILE *f, uint8_t b)
{
	putc(hexdig[b >> 4], f);
	putc(hexdig[b & 15], f);
}

/* One byte in FMT_ESCAPE: the escapes are unambiguous (\x always takes
 * two digits) and never produce a tab, so listings can use tabs. */
static void put_escaped(FILE *f, uint8_t b)
{
	switch (b) {
	case '\\': fputs("\\\\", f); return;
	case '\n': fputs("\\n", f); return;
	case '\t': fputs("\\t", f); return;
	case '\r': fputs("\\r", f); return;
	}
	if (b >= 0x20 && b < 0x7f) {
		putc(b, f);
		return;
	}
	fputs("\\x", f);
	put_hex_byte(f, b);
}

void fmt_bytes(FILE *f, const void *p, size_t n, enum fmt_enc enc)
{
	const uint8_t *b = p;
	size_t i;

	if (enc == FMT_RAW) {
		if (n)
			fwrite(p, 1, n, f);
		return;
	}
	for (i = 0; i < n; i++) {
		if (enc == FMT_HEX)
			put_hex_byte(f, b[i]);
		else
			put_escaped(f, b[i]);
	}
}

size_t fmt_escaped_len(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		if (b[i] == '\\' || b[i] == '\n' || b[i] == '\t' ||
		    b[i] == '\r')
			len += 2;
		else if (b[i] >= 0x20 && b[i] < 0x7f)
			len += 1;
		else
			len += 4;
	}
	return len;
}

/* Length of the UTF-8 sequence at b[0..n) if it is valid and shortest,
 * else 0.  The second byte's range carries the overlong, surrogate and
 * > U+10FFFF checks (RFC 3629, section 4). */
static size_t utf8_seq(const uint8_t *b, size_t n)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (b[0] < 0x80)
		return 1;
	if (b[0] >= 0xc2 && b[0] <= 0xdf)
		len = 2;
	else if (b[0] >= 0xe0 && b[0] <= 0xef)
		len = 3;
	else if (b[0] >= 0xf0 && b[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (b[0] == 0xe0)
		lo = 0xa0;
	else if (b[0] == 0xed)
		hi = 0x9f;
	else if (b[0] == 0xf0)
		lo = 0x90;
	else if (b[0] == 0xf4)
		hi = 0x8f;
	if (n < len || b[1] < lo || b[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (b[i] < 0x80 || b[i] > 0xbf)
			return 0;
	return len;
}

bool fmt_json_ok(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i = 0, len;

	while (i < n) {
		if (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' &&
		    b[i] != '\r')
			return false;
		if (b[i] == 0x7f)
			return false;
		len = utf8_seq(b + i, n - i);
		if (!len)
			return false;
		i += len;
	}
	return true;
}

void fmt_json_str(FILE *f, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	putc('"', f);
	for (i = 0; i < n; i++) {
		switch (b[i]) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			/* Other controls never get here (fmt_json_ok);
			 * \u escape them anyway rather than emit bad JSON. */
			if (b[i] < 0x20) {
				fprintf(f, "\\u%04x", b[i]);
			} else if (b[i] == 0xc2 && i + 1 < n &&
				   b[i + 1] >= 0x80 && b[i + 1] < 0xa0) {
				/* a C1 control (U+0080..U+009F, CSI
				 * among them): valid JSON raw, but a
				 * terminal acts on it */
				fprintf(f, "\\u%04x", b[++i]);
			} else {
				putc(b[i], f);
			}
		}
	}
	putc('"', f);
}

void fmt_json_field(FILE *f, const char *name, const void *p, size_t n,
		    bool hex)
{
	if (!hex && fmt_json_ok(p, n)) {
		fprintf(f, "\"%s\":", name);
		fmt_json_str(f, p, n);
		return;
	}
	fprintf(f, "\"%s_hex\":\"", name);
	fmt_bytes(f, p, n, FMT_HEX);
	putc('"', f);
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
	       c == '\v' || c == '\f';
}

int fmt_hex_decode(const char *s, size_t n, uint8_t **out, size_t *outlen)
{
	uint8_t *buf = malloc(n / 2 + 1);
	size_t i, len = 0;
	int v, hi = -1;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (is_space(s[i]) && hi < 0)
			continue;
		v = hex_val(s[i]);
		if (v < 0)
			goto bad;
		if (hi < 0) {
			hi = v;
		} else {
			buf[len++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	if (hi >= 0)
		goto bad;
	*out = buf;
	*outlen = len;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}

int fmt_parse_u64(const char *s, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	int d;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		d = hex_val(*s);
		if (d < 0 || d >= base)
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -ERANGE;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int fmt_parse_size(const char *s, uint64_t max, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u = s;
	char digits[21];
	uint64_t v, mul = 1;
	size_t n;
	int err;

	while (*u >= '0' && *u <= '9')
		u++;
	n = (size_t)(u - s);
	if (!n || n >= sizeof(digits))
		return n ? -ERANGE : -EINVAL;
	if (*u) {
		const char *p = strchr(units, u[0] & ~0x20);

		/* (a space & ~0x20 is the NUL strchr finds too) */
		if (!p || !*p || (u[1] && strcmp(u + 1, "iB") &&
			   strcmp(u + 1, "ib")))
			return -EINVAL;
		mul = 1ull << (10 * (p - units + 1));
	}
	memcpy(digits, s, n);
	digits[n] = '\0';
	err = fmt_parse_u64(digits, 10, UINT64_MAX, &v);
	if (err)
		return err;
	if (v > UINT64_MAX / mul || v * mul > max)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

int fmt_parse_s64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	uint64_t v;
	int err = fmt_parse_u64(s + neg, 10, neg ? (uint64_t)INT64_MAX + 1 :
				(uint64_t)INT64_MAX, &v);

	if (err)
		return err;
	/* -(2^63) has no positive twin: negate in unsigned arithmetic */
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* The units of a duration, longest name first where one is the start
 * of another ("ms" before "m"). */
static const struct {
	const char *name;
	uint64_t ms;
} dur_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
	{ "d", 86400000 },
};
#define DUR_UNITS (sizeof(dur_units) / sizeof(dur_units[0]))

int fmt_parse_duration(const char *s, uint64_t max_ms, uint64_t *ms,
		       const char **why)
{
	uint64_t sum = 0, n, mul;
	size_t i, len;
	bool overflow = false, lone;

	*why = "";
	if (!*s) {
		*why = "empty";
		return -EINVAL;
	}
	if (*s == '-') {
		*why = "negative";
		return -EINVAL;
	}
	/* a lone number, digits only, is seconds */
	for (i = 0; s[i] >= '0' && s[i] <= '9'; i++)
		;
	lone = !s[i];
	while (*s) {
		if (*s < '0' || *s > '9') {
			*why = "a part does not start with a number (give "
			       "e.g. 500ms, 30s, 2h, 1d)";
			return -EINVAL;
		}
		for (n = 0; *s >= '0' && *s <= '9'; s++) {
			if (n > (UINT64_MAX - 9) / 10)
				overflow = true;
			else
				n = n * 10 + (uint64_t)(*s - '0');
		}
		if (lone) {
			mul = 1000;
			goto add;
		}
		if (*s == '.' || *s == ',') {
			*why = "a fraction (give whole units: 1500ms, not "
			       "1.5s)";
			return -EINVAL;
		}
		mul = 0;
		for (i = 0; i < DUR_UNITS; i++) {
			len = strlen(dur_units[i].name);
			if (!strncmp(s, dur_units[i].name, len) &&
			    !(s[len] >= 'a' && s[len] <= 'z')) {
				mul = dur_units[i].ms;
				s += len;
				break;
			}
		}
		if (!mul) {
			*why = *s ? "unknown unit (units: ms, s, m, h, d)" :
				    "a number without a unit after the first "
				    "part (units: ms, s, m, h, d)";
			return -EINVAL;
		}
add:
		if (overflow || n > UINT64_MAX / mul ||
		    sum > UINT64_MAX - n * mul)
			overflow = true;
		else
			sum += n * mul;
	}
	if (overflow || sum > max_ms) {
		*why = "too long";
		return -ERANGE;
	}
	if (!sum) {
		*why = "zero";
		return -EDOM;
	}
	*ms = sum;
	return 0;
}

char *fmt_format_duration(uint64_t ms, char *buf)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = DUR_UNITS; i-- > 0;) {
		uint64_t n = ms / dur_units[i].ms;

		if (!n)
			continue;
		ms -= n * dur_units[i].ms;
		off += (size_t)snprintf(buf + off, FMT_DURATION_MAX - off,
					"%llu%s", (unsigned long long)n,
					dur_units[i].name);
	}
	if (!off)
		snprintf(buf, FMT_DURATION_MAX, "0s");
	return buf;
}

int fmt_read_all(int fd, size_t cap, uint8_t **out, size_t *len)
{
	size_t size = 4096, n = 0;
	uint8_t *buf = malloc(size), *nb;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == size) {
			if (n > cap)
				break;
			size *= 2;
			nb = realloc(buf, size);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > cap) {
		free(buf);
		return -E2BIG;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* --- words of a batch or shell line -------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A backslash escape inside double quotes at s[0..n) (s[0] is the byte
 * after the backslash): the byte it stands for in *b and how many bytes
 * it takes, or 0 for a bad \x. */
static size_t dq_escape(const char *s, size_t n, char *b)
{
	int hi, lo;

	switch (s[0]) {
	case 'n': *b = '\n'; return 1;
	case 't': *b = '\t'; return 1;
	case 'r': *b = '\r'; return 1;
	case '0': *b = '\0'; return 1;
	case 'x':
		if (n < 3 || (hi = hex_val(s[1])) < 0 ||
		    (lo = hex_val(s[2])) < 0)
			return 0;
		*b = (char)(hi << 4 | lo);
		return 3;
	}
	*b = s[0];              /* \\ \" \$ and any other: the byte */
	return 1;
}

/* One word starting at s[*i] (not a blank) into out; its length. */
static int split_word(const char *s, size_t n, size_t *i, char *out,
		      size_t *len, const char **why)
{
	size_t k = 0, j = *i, e;
	char q = 0;

	for (; j < n && (q || !is_blank(s[j])); j++) {
		char c = s[j];

		if (q == '\'' && c != '\'') {
			out[k++] = c;
		} else if (c == q) {
			q = 0;
		} else if (!q && (c == '\'' || c == '"')) {
			q = c;
		} else if (c != '\\') {
			out[k++] = c;
		} else if (j + 1 == n) {
			*why = "a backslash ends the line";
			return -EINVAL;
		} else if (!q) {
			out[k++] = s[++j];
		} else if (!(e = dq_escape(s + j + 1, n - j - 1, &out[k++]))) {
			*why = "\\x takes two hex digits";
			return -EINVAL;
		} else {
			j += e;
		}
	}
	if (q) {
		*why = q == '"' ? "a double quote is not closed" :
				  "a single quote is not closed";
		return -EINVAL;
	}
	out[k] = '\0';
	*len = k;
	*i = j;
	return 0;
}

int fmt_split(const char *s, size_t n, struct fmt_words *w,
	      const char **why)
{
	/* at most one word per two bytes, plus one; each word's bytes are
	 * no more than its source's, plus a NUL */
	size_t maxw = n / 2 + 1, i = 0, at = 0;
	int err;

	memset(w, 0, sizeof(*w));
	w->buf = malloc(2 * n + 2);
	w->word = calloc(maxw, sizeof(*w->word));
	w->len = calloc(maxw, sizeof(*w->len));
	if (!w->buf || !w->word || !w->len) {
		fmt_words_free(w);
		return -ENOMEM;
	}
	for (;;) {
		while (i < n && is_blank(s[i]))
			i++;
		if (i == n || s[i] == '#')
			return 0;
		w->word[w->n] = w->buf + at;
		err = split_word(s, n, &i, w->buf + at, &w->len[w->n], why);
		if (err) {
			fmt_words_free(w);
			return err;
		}
		at += w->len[w->n++] + 1;
	}
}

void fmt_words_free(struct fmt_words *w)
{
	free(w->buf);
	free(w->word);
	free(w->len);
	memset(w, 0, sizeof(*w));
}
