// SPDX-License-Identifier: GPL-2.0-only
/*
 * csv.c - the benchmarks' --csv files (csv.h): header, rows, notes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "csv.h"
#include "machine.h"

void bench_csv_header(FILE *f, int argc, char **argv)
{
	char cpu[128], date[64];
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;

	fprintf(f, "# command:");
	for (int i = 0; i < argc; i++)
		fprintf(f, " %s", argv[i]);
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &tm);
	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	fprintf(f, "\n# date: %s\n# machine: %s, %ld CPUs, kernel %s\n",
		date, cpu, sysconf(_SC_NPROCESSORS_ONLN), u.release);
}

FILE *bench_csv_open(const char *path, int argc, char **argv)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f) {
		perror(path);
		return NULL;
	}
	bench_csv_header(f, argc, argv);
	fprintf(f, "%s\n", BENCH_CSV_COLUMNS);
	return f;
}

static void field(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == ',' || *s == '\n' ? ';' : *s, f);
	fputc(',', f);
}

void bench_csv_row(FILE *f, const char *area, const char *system,
		   const char *peer, const char *op, const char *param,
		   double value, const char *unit, double ratio)
{
	if (!f)
		return;
	field(f, area);
	field(f, system);
	field(f, peer);
	field(f, op);
	field(f, param);
	fprintf(f, "%.6g,", value);
	field(f, unit);
	if (ratio >= 0)
		fprintf(f, "%.4g", ratio);
	fputc('\n', f);
}

void bench_csv_note(FILE *f, const char *fmt, ...)
{
	va_list ap;

	if (!f)
		return;
	fputs("# ", f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

int bench_csv_close(FILE *f, const char *path)
{
	int bad;

	if (!f)
		return 0;
	bad = ferror(f);
	if ((f == stdout ? fflush(f) : fclose(f)) || bad) {
		fprintf(stderr, "%s: write failed\n", path);
		return -1;
	}
	return 0;
}
