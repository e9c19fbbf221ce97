// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kdata.c - table data per uid in tdb.ko (issue 25, item 4): the
 * owner's TDBO_Q_DATA bounds follow max_memory_mb (kmod/platform.c,
 * kmod/home.c: in all max_memory_mb, per uid half of it, root exempt):
 *
 *  - max_memory_mb=64: uid 65534 puts 64 KiB values into its table
 *    until refused: -EDQUOT naming max-data-per-uid, with the table's
 *    extents at 32 MiB (within one extent);
 *  - root still creates a table and puts 4 MiB into it;
 *  - max_memory_mb=128 (the parameter set at run time): the uid's next
 *    put goes (its bound is now 64 MiB).
 * tdb.ko only (tdbd's are tests/integration/test_data_quota.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tdb/client.h>
#include <tdb/kdev.h>

#include "kt.h"

#define PARAM "/sys/module/tdb/parameters/max_memory_mb"
#define MiB (1ull << 20)
#define EXT (2ull << 20)
#define VAL (64u << 10)
#define UID 65534

static unsigned int read_param(void)
{
	unsigned int v = 0;
	FILE *f = fopen(PARAM, "r");

	CHECK(f, "%s: %s", PARAM, strerror(errno));
	CHECK(fscanf(f, "%u", &v) == 1, "read %s", PARAM);
	fclose(f);
	return v;
}

static void write_param(unsigned int v)
{
	FILE *f = fopen(PARAM, "w");

	CHECK(f, "%s: %s", PARAM, strerror(errno));
	CHECK(fprintf(f, "%u\n", v) > 0 && fclose(f) == 0, "write %s", PARAM);
}

/* Put up to max 64 KiB values from key *next on: 0 or the refusal
 * (its message checked by the caller through c). */
static int fill(struct tdbc_table *t, unsigned int *next, unsigned int max)
{
	static unsigned char v[VAL];
	unsigned int i;

	memset(v, 'd', sizeof(v));
	for (i = 0; i < max; i++, (*next)++) {
		char k[32];
		int n = snprintf(k, sizeof(k), "k%07u", *next), err;

		err = tdbc_put(t, NULL, k, (size_t)n, v, sizeof(v), 0);
		if (err)
			return err;
	}
	return 0;
}

/* As UID: fill "kd" until refused; the refusal must be the per-uid
 * bound.  Returns the puts that went. */
static int as_nobody_fill(void *arg)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	unsigned int next = 0;
	int err;

	(void)arg;
	kt_create(c, "kd", 0600, 0);
	t = kt_open(c, "kd");
	err = fill(t, &next, 4096);
	CHECK(err == -EDQUOT && strstr(tdbc_errmsg(c), "max-data-per-uid"),
	      "uid %d refused with %s (%s) after %u puts, want EDQUOT naming "
	      "max-data-per-uid", UID, h_errname(err), tdbc_errmsg(c), next);
	tdbc_table_close(t);
	tdbc_close(c);
	return (int)next;
}

/* As UID, after the bound was raised: one more put. */
static int as_nobody_more(void *arg)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t = kt_open(c, "kd");
	unsigned int next = 1u << 24;
	int err = fill(t, &next, 1);

	(void)arg;
	CHECK(err == 0, "uid %d after max_memory_mb=128: %s (%s)", UID,
	      h_errname(err), tdbc_errmsg(c));
	tdbc_table_close(t);
	tdbc_close(c);
	return 0;
}

int main(void)
{
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	struct tdbc *root;
	unsigned int old, next = 0;
	int puts, err;

	kt_init("kdata", 120);
	kt_need_kernel();
	old = read_param();
	CHECK(chmod(TDB_DEV_PATH, 0666) == 0, "chmod");
	root = kt_connect(0);
	write_param(64);
	puts = kt_as_uid(UID, as_nobody_fill, NULL);
	CHECK_EQ(tdbc_table_stat(root, "kd", &st), 0, "stat kd");
	h_note("max_memory_mb=64: uid %d refused after %d puts of 64 KiB, "
	       "its table at %u extents (%llu MiB; bound 32 MiB)", UID, puts,
	       st.extents, (unsigned long long)(st.extents * EXT / MiB));
	CHECK((uint64_t)st.extents * EXT >= 32 * MiB &&
	      (uint64_t)st.extents * EXT <= 32 * MiB + EXT,
	      "refused at %u extents, want 32 MiB + at most one extent",
	      st.extents);
	kt_create(root, "kr", 0600, 0);
	t = kt_open(root, "kr");
	err = fill(t, &next, (unsigned int)((4 * MiB) / VAL));
	CHECK(err == 0, "root's puts: %s (%s)", h_errname(err),
	      tdbc_errmsg(root));
	tdbc_table_close(t);
	h_note("root created a table and put 4 MiB into it");
	write_param(128);
	kt_as_uid(UID, as_nobody_more, NULL);
	h_note("max_memory_mb=128: uid %d puts again", UID);
	CHECK_EQ(tdbc_table_drop(root, "kd"), 0, "drop kd");
	CHECK_EQ(tdbc_table_drop(root, "kr"), 0, "drop kr");
	write_param(old);
	tdbc_close(root);
	kt_done();
	return 0;
}
