// SPDX-License-Identifier: GPL-2.0-only
/*
 * common.c - exit codes, messages, connecting and the progress bar of
 * tdb-dump and tdb-load (common.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *dx_prog = "tdb-dump";
bool dx_verbose;

void dx_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", dx_prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", dx_prog);
	exit(DX_USAGE);
}

bool dx_common_opt(int ch, char **argv, const char *usage, bool *quiet,
		   const char **sock, bool *no_rings)
{
	switch (ch) {
	case 'q': *quiet = true; return true;
	case 'v': dx_verbose = true; return true;
	case 'S': *sock = optarg; return true;
	case 'R': *no_rings = true; return true;
	case 'V':
		printf("%s %s\n", dx_prog, TDB_VERSION);
		exit(DX_OK);
	case 'h':
		fputs(usage, stdout);
		exit(DX_OK);
	case ':':
		dx_usage_error("option %s needs an argument",
			       argv[optind - 1]);
	case '?':
		dx_usage_error("unknown option %s", argv[optind - 1]);
	default:
		return false;
	}
}

void dx_operands(int argc, char **argv, const char **sock,
		 const char *table)
{
	if (optind < argc) {
		if (*sock || optind + 1 < argc)
			dx_usage_error("unexpected argument '%s' (one SOCKET "
				       "at most)", argv[argc - 1]);
		*sock = argv[optind];
	}
	if (table && (!table[0] || strlen(table) > TDB_NAME_MAX))
		dx_usage_error("not a table name: '%s'", table);
}

const char *dx_esc(char out[DX_ESC_NAME], const char *name)
{
	return tdb_escape(out, DX_ESC_NAME, name, strnlen(name, TDB_NAME_MAX));
}

void dx_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", dx_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void dx_warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", dx_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int dx_exit_for(int err)
{
	switch (err) {
	case 0:
		return DX_OK;
	case -ENOENT:
		return DX_NOTFOUND;
	case -EACCES:
	case -EPERM:
		return DX_PERM;
	case -ECONNREFUSED:
		return DX_CONNECT;
	}
	return DX_OTHER;
}

const char *dx_why(struct tdbc *c, int err)
{
	static char buf[512];
	const char *m = c ? tdbc_errmsg(c) : "";

	/* The owner's text says what happened by itself ("no such
	 * table"); tdbc_strerror before it would say it twice. */
	snprintf(buf, sizeof(buf), "%s", m && m[0] ? m : tdbc_strerror(err));
	return buf;
}

struct tdbc *dx_connect(const char *path, bool no_rings)
{
	char msg[512];
	struct tdbc *c;
	int err;

	err = tdbc_connect(&c, path, no_rings ? TDBC_NO_RINGS : 0, msg,
			   sizeof(msg));
	if (err) {
		/* The library's message already says "cannot connect to
		 * tdbd at PATH: ..." and what to do. */
		if (msg[0])
			dx_err("%s", msg);
		else
			dx_err("cannot connect to tdbd: %s",
			       tdbc_strerror(err));
		exit(DX_CONNECT);
	}
	return c;
}

/* --- the progress bar ---------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dx_fmt_bytes(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes / 1024;
	unsigned int u = 0;

	if (bytes < 1024) {
		snprintf(buf, n, "%u B", (unsigned int)bytes);
		return;
	}
	/* Three digits; a value that rounds to 1024 is the next unit's 1. */
	while (v >= 1023.5 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.*f %s", v < 9.995 ? 2 : v < 99.95 ? 1 : 0, v,
		 units[u]);
}

void dx_fmt_rate(char *buf, size_t n, uint64_t bytes, uint64_t ns)
{
	double r = ns ? (double)bytes * 1e9 / (double)ns : 0;
	size_t l;

	dx_fmt_bytes(buf, n, r < 1.8e19 ? (uint64_t)(r + 0.5) : UINT64_MAX);
	l = strlen(buf);
	snprintf(buf + l, n - l, "/s");
}

void dx_fmt_duration(char *buf, size_t n, uint64_t ns)
{
	uint64_t tenths = (ns + 50000000ull) / 100000000ull;
	uint64_t s = (ns + 500000000ull) / 1000000000ull;

	if (tenths < 100)
		snprintf(buf, n, "%u.%u s", (unsigned int)(tenths / 10),
			 (unsigned int)(tenths % 10));
	else if (s < 60)
		snprintf(buf, n, "%u s", (unsigned int)s);
	else if (s < 3600)
		snprintf(buf, n, "%u min %02u s", (unsigned int)(s / 60),
			 (unsigned int)(s % 60));
	else
		snprintf(buf, n, "%llu h %02u min",
			 (unsigned long long)(s / 3600),
			 (unsigned int)(s % 3600 / 60));
}

/* "4200/10000 records" or "12.3 MiB of 29.1 MiB" (total 0: no "of"). */
static void fmt_count(char *buf, size_t n, uint64_t done, uint64_t total,
		      const char *unit)
{
	char a[32], b[32];

	if (strcmp(unit, "bytes")) {
		if (total)
			snprintf(buf, n, "%llu/%llu %s",
				 (unsigned long long)done,
				 (unsigned long long)total, unit);
		else
			snprintf(buf, n, "%llu %s", (unsigned long long)done,
				 unit);
		return;
	}
	dx_fmt_bytes(a, sizeof(a), done);
	if (!total) {
		snprintf(buf, n, "%s", a);
		return;
	}
	dx_fmt_bytes(b, sizeof(b), total);
	snprintf(buf, n, "%s of %s", a, b);
}

void dx_progress_line(char *buf, size_t n, const char *label,
		      uint64_t done, uint64_t total, const char *unit,
		      uint64_t bytes, uint64_t ns, unsigned int bar)
{
	char count[80], size[32], rate[40], eta[32], fill[65];
	unsigned int i, full;

	fmt_count(count, sizeof(count), done, total, unit);
	dx_fmt_rate(rate, sizeof(rate), bytes, ns);
	if (!total) {
		if (strcmp(unit, "bytes")) {
			dx_fmt_bytes(size, sizeof(size), bytes);
			snprintf(buf, n, "%-16.16s %s, %s, %s", label, count,
				 size, rate);
		} else {
			snprintf(buf, n, "%-16.16s %s, %s", label, count,
				 rate);
		}
		return;
	}
	if (done > total)
		done = total;
	/* The time left: what is done took ns; the rest at the same pace.
	 * Nothing to go on before a tenth of a second or the first unit. */
	if (done && ns >= 100000000ull)
		dx_fmt_duration(eta, sizeof(eta),
				(uint64_t)((double)ns * (double)(total - done) /
					   (double)done));
	else
		snprintf(eta, sizeof(eta), "--");
	if (bar > sizeof(fill) - 1)
		bar = sizeof(fill) - 1;
	full = (unsigned int)((double)done * bar / (double)total);
	for (i = 0; i < bar; i++)
		fill[i] = i < full ? '#' : '.';
	fill[bar] = '\0';
	snprintf(buf, n, "%-16.16s %s%s%s%3u%% %s, %s, ETA %s", label,
		 bar ? "[" : "", fill, bar ? "] " : "",
		 (unsigned int)((double)done * 100 / (double)total), count,
		 rate, eta);
}

void dx_progress_init(struct dx_progress *p, bool allowed)
{
	memset(p, 0, sizeof(*p));
	p->on = allowed && isatty(STDERR_FILENO);
	p->summary = p->on || dx_verbose;
	p->start_ns = now_ns();
	p->seg_ns = p->start_ns;
}

void dx_progress_begin(struct dx_progress *p)
{
	p->seg_ns = now_ns();
	p->seg_bytes = p->bytes;
}

void dx_progress(struct dx_progress *p, const char *label, uint64_t done,
		 uint64_t total, const char *unit)
{
	struct winsize ws;
	char line[256];
	unsigned int cols = 80, bar;
	uint64_t t;

	if (!p->on)
		return;
	t = now_ns();
	if (p->drawn && t - p->last_ns < 100000000ull)
		return;
	p->last_ns = t;
	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		cols = ws.ws_col;
	/* The bar gets what the label and the figures (at most about 76
	 * columns) leave, up to 40; under 10 there is none, the share
	 * says it.  The line is cut at the terminal's width. */
	bar = cols >= 86 ? cols - 76 : 0;
	if (bar > 40)
		bar = 40;
	dx_progress_line(line, sizeof(line), label, done, total, unit,
			 strcmp(unit, "bytes") ? p->bytes - p->seg_bytes : done,
			 t - p->seg_ns, bar);
	if (cols < sizeof(line))
		line[cols - 1] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
	fflush(stderr);
	p->drawn = true;
}

void dx_progress_clear(struct dx_progress *p)
{
	if (!p->on || !p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = false;
}

void dx_progress_summary(struct dx_progress *p, const char *verb,
			 const char *extra)
{
	char size[32], took[32], rate[40];
	uint64_t ns = now_ns() - p->start_ns;

	dx_progress_clear(p);
	if (!p->summary)
		return;
	dx_fmt_bytes(size, sizeof(size), p->bytes);
	dx_fmt_duration(took, sizeof(took), ns);
	dx_fmt_rate(rate, sizeof(rate), p->bytes, ns);
	fprintf(stderr, "%s: %s %llu record%s, %s in %s (%s)%s%s\n", dx_prog,
		verb, (unsigned long long)p->records,
		p->records == 1 ? "" : "s", size, took, rate,
		extra ? "; " : "", extra ? extra : "");
}
