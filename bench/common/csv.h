/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * csv.h - the figures a benchmark writes with --csv FILE, for the charts
 * of docs/BENCHMARKS.md's summary (bench/summary/make-charts.sh).
 *
 * The file opens with comment lines (# command, # date, # machine, and
 * any bench_csv_note), then the column line BENCH_CSV_COLUMNS, then one
 * row per measured cell:
 *   area       engine, rings, daemon, durability or kernel (the chart)
 *   system     what was measured (tdb, LMDB, Redis, netlink, tdb.ko, ...)
 *   peer       what its ratio compares it with; empty for a peer's row
 *   operation  the operation or phase (get, put, ...; no commas)
 *   param      processes, batch or size, as the program prints it
 *   value      the figure, in unit (ops/s, msg/s, ns, ...)
 *   ratio      system against peer, above 1 meaning the system is better
 *              (more ops/s, or less time); empty when none is printed
 * Keep the columns in step with make-charts.sh and its test.
 */
#ifndef TDB_BENCH_CSV_H
#define TDB_BENCH_CSV_H

#include <stdio.h>

#define BENCH_CSV_COLUMNS "area,system,peer,operation,param,value,unit,ratio"

/* The comment lines alone (# command, # date, # machine), for a program
 * with CSV columns of its own (tdb-bench-ring's matrix). */
void bench_csv_header(FILE *f, int argc, char **argv);

/* Create path ("-": stdout) and write the header (the command from argv,
 * the date, the machine); NULL (a message on stderr) if it cannot be
 * created. */
FILE *bench_csv_open(const char *path, int argc, char **argv);

/* One row; ratio < 0 leaves the ratio empty, peer NULL leaves it empty.
 * Commas in the strings are replaced by ';'. */
void bench_csv_row(FILE *f, const char *area, const char *system,
		   const char *peer, const char *op, const char *param,
		   double value, const char *unit, double ratio);

/* A comment line (e.g. how busy the machine was); f may be NULL. */
void bench_csv_note(FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Close; -1 (a message on stderr) if the writes failed. f may be NULL. */
int bench_csv_close(FILE *f, const char *path);

#endif
