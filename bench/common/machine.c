// SPDX-License-Identifier: GPL-2.0-only
/*
 * machine.c - machine facts for the benchmarks' headers (machine.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "machine.h"

void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!c || strncmp(line, "model name", 10))
			continue;
		c += 1 + strspn(c + 1, " \t");
		c[strcspn(c, "\n")] = 0;
		snprintf(buf, len, "%s", c);
		break;
	}
	fclose(f);
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

void cpu_sample(struct cpu_sample *c)
{
	unsigned long long v[8] = { 0 };
	double hz = (double)sysconf(_SC_CLK_TCK);
	struct rusage ru, rc;
	FILE *f = fopen("/proc/stat", "r");

	memset(c, 0, sizeof(*c));
	if (f) {
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]) != 8)
			memset(v, 0, sizeof(v));
		fclose(f);
	}
	/* user nice system idle iowait irq softirq steal */
	c->busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
	c->total = c->busy + (double)(v[3] + v[4]) / hz;
	c->steal = (double)v[7] / hz;
	getrusage(RUSAGE_SELF, &ru);
	getrusage(RUSAGE_CHILDREN, &rc);
	c->self = tv(ru.ru_utime) + tv(ru.ru_stime) + tv(rc.ru_utime) +
		  tv(rc.ru_stime);
}

double cpu_others(const struct cpu_sample *a, const struct cpu_sample *b,
		  double *steal)
{
	double total = b->total - a->total, o;

	*steal = total > 0 ? (b->steal - a->steal) / total : -1;
	if (total <= 0)
		return -1;
	o = (b->busy - a->busy - (b->self - a->self)) / total;
	return o < 0 ? 0 : o;
}
