// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_klimits.c - tdb.ko's module parameters are the limits table
 * (src/owner/limtable.h), the one tdbd.conf's keys are made from too
 * (tests/config checks tdbd against it).  For every limit tdb.ko has,
 * in /sys/module/tdb/parameters/<name>:
 *  - it exists and reads as the table's tdb.ko default (kdef, in MiB
 *    where the table's shift is 20, octal mode bits): this test runs
 *    first in the guest, before any test moved a value;
 *  - a load-time one (TDBO_LF_KLOAD) is 0444 and cannot be written;
 *  - a run-time one takes its min and its max (read back as written),
 *    refuses max + 1 and min - 1 with EINVAL (but where min - 1 is 0
 *    and the table gives 0 a meaning: then 0 is taken), takes 0 only
 *    where the table says what 0 means, and gets its value back.
 * tdb.ko only (77 on tdbd).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"
#include "limtable.h"

#define PARAMS "/sys/module/tdb/parameters/"

static void param_path(char *out, size_t size, const struct tdbo_limit *l)
{
	snprintf(out, size, "%s%s", PARAMS, l->param);
}

/* 0, or the errno of open or write. */
static int param_write(const struct tdbo_limit *l, const char *val)
{
	char path[160];
	ssize_t n;
	int fd, err = 0;

	param_path(path, sizeof(path), l);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = errno;
	close(fd);
	return err;
}

static void param_read(const struct tdbo_limit *l, char *out, size_t size)
{
	char path[160];
	ssize_t n;
	int fd;

	param_path(path, sizeof(path), l);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %s (a limit of the table without its "
	      "parameter)", path, strerror(errno));
	n = read(fd, out, size - 1);
	CHECK(n > 0, "read %s: %s", path, strerror(errno));
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	close(fd);
}

/* A limit's value v (bytes, a count, ms) as the parameter shows it. */
static const char *shown(const struct tdbo_limit *l, uint64_t v, char *buf,
			 size_t size)
{
	if (l->unit == TDBO_LU_MODE)
		snprintf(buf, size, "0%llo", (unsigned long long)v);
	else
		snprintf(buf, size, "%llu",
			 (unsigned long long)(v >> l->shift));
	return buf;
}

/* Write the parameter's value p (in its unit); want 0 or EINVAL. */
static void try(const struct tdbo_limit *l, unsigned long long p, int want)
{
	char val[32], back[32];
	int err;

	snprintf(val, sizeof(val), "%llu\n", p);
	err = param_write(l, val);
	CHECK(err == want, "%s=%llu: %s, want %s", l->param, p,
	      err ? strerror(err) : "taken", want ? strerror(want) : "taken");
	if (!want) {
		param_read(l, back, sizeof(back));
		snprintf(val, sizeof(val), "%llu", p);
		if (l->unit != TDBO_LU_MODE)
			CHECK(!strcmp(back, val), "%s=%llu reads back %s",
			      l->param, p, back);
	}
}

static void check_one(const struct tdbo_limit *l)
{
	unsigned long long lo = l->min >> l->shift, hi = l->max >> l->shift;
	bool zero = l->flags & (TDBO_LF_ZERO_OFF | TDBO_LF_ZERO_AUTO);
	char path[160], orig[32], want[32];
	struct stat st;

	param_read(l, orig, sizeof(orig));
	shown(l, l->kdef, want, sizeof(want));
	CHECK(!strcmp(orig, want), "%s reads %s, the table's default is %s",
	      l->param, orig, want);
	param_path(path, sizeof(path), l);
	CHECK(stat(path, &st) == 0, "stat %s", path);
	if (l->flags & TDBO_LF_KLOAD) {
		CHECK((st.st_mode & 0777) == 0444, "%s: mode %o, want 0444 "
		      "(set at load only)", l->param, st.st_mode & 0777);
		CHECK(param_write(l, want) != 0, "%s written at run time",
		      l->param);
		return;
	}
	CHECK((st.st_mode & 0777) == 0644, "%s: mode %o, want 0644",
	      l->param, st.st_mode & 0777);
	try(l, hi, 0);
	try(l, lo, 0);
	try(l, hi + 1, EINVAL);
	if (lo > 1)
		try(l, lo - 1, EINVAL);
	if (lo)
		try(l, 0, zero ? 0 : EINVAL);
	CHECK(param_write(l, orig) == 0, "%s: cannot write back %s", l->param,
	      orig);
	param_read(l, want, sizeof(want));
	CHECK(!strcmp(orig, want), "%s: %s after writing back %s", l->param,
	      want, orig);
}

int main(void)
{
	unsigned int i, n = 0;

	kt_init("klimits", 120);
	kt_need_kernel();
	for (i = 0; i < TDBO_LIM_COUNT; i++) {
		const struct tdbo_limit *l = &tdbo_limits_table[i];

		if (!(l->homes & TDBO_LH_KO))
			continue;
		check_one(l);
		n++;
	}
	h_note("%u module parameters: the table's defaults, ranges refused "
	       "past both ends", n);
	kt_done();
	return 0;
}
