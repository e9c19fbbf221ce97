/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * machine.h - what the benchmarks say about the machine they ran on:
 * the CPU model, and how much CPU time other processes took meanwhile
 * (the machines are shared; figures taken while others work are noisy).
 */
#ifndef TDB_BENCH_MACHINE_H
#define TDB_BENCH_MACHINE_H

#include <stddef.h>

/* "model name" from /proc/cpuinfo, or "unknown CPU". */
void cpu_model(char *buf, size_t len);

/* Busy and total CPU time of the whole machine (/proc/stat), the share
 * stolen by the hypervisor, and this process's own CPU time with its
 * reaped children; all in seconds. */
struct cpu_sample {
	double busy, total, steal, self;
};
void cpu_sample(struct cpu_sample *c);

/* Share of the machine's CPU time used by others between a and b, and
 * (*steal) the share stolen by the hypervisor; -1 if unknown. */
double cpu_others(const struct cpu_sample *a, const struct cpu_sample *b,
		  double *steal);

#endif
