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

void dx_progress_init(struct dx_progress *p, bool allowed)
{
	memset(p, 0, sizeof(*p));
	p->on = allowed && isatty(STDERR_FILENO);
}

void dx_progress(struct dx_progress *p, const char *label, uint64_t done,
		 uint64_t total, const char *unit)
{
	struct winsize ws;
	char bar[64];
	unsigned int cols = 80, width, fill, i;
	uint64_t t;

	if (!p->on)
		return;
	t = now_ns();
	if (p->drawn && t - p->last_ns < 100000000ull)
		return;
	p->last_ns = t;
	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		cols = ws.ws_col;
	width = cols - 40 < 40 ? cols - 40 : 40;
	if (width < 10)
		width = 10;
	if (total) {
		if (done > total)
			done = total;
		fill = (unsigned int)(done * width / total);
		for (i = 0; i < width; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[width] = '\0';
		fprintf(stderr, "\r\033[K%-16.16s [%s] %3u%% %llu/%llu %s",
			label, bar, (unsigned int)(done * 100 / total),
			(unsigned long long)done, (unsigned long long)total,
			unit);
	} else {
		fprintf(stderr, "\r\033[K%-16.16s %llu %s", label,
			(unsigned long long)done, unit);
	}
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
