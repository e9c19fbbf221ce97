// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kmirror.c - tdbd in kernel mode without tdb.ko, and without a
 * mirror (issue 29): records as tdb.ko logs them (rec.h) checked and
 * appended to the WAL (tdbd_durable_apply, the follower's step), nothing
 * loaded into tdbd's own tables; the checkpoint applies them to the
 * store, and a second start finds every record in the WAL, loads
 * nothing, and knows the tables by name.  An LSN that is not the WAL's
 * next is refused with both LSNs named; a record that could never be
 * checkpointed (an op on a table that does not exist, a create of one
 * that does, a drop of one that does not) is refused naming the table;
 * nothing refused reaches the WAL.  Each key in the store has the
 * version of the record that wrote it (tdb.ko's, REC_VERSION, not the
 * LSN), and the store's counter is past every one.  Expiry: records
 * built with the encoder tdb.ko's log uses (src/wal/walrec.c: a create
 * with a default TTL and bounds, PUT_DL ops) give the store's table its
 * attributes and each put its deadline.  A checkpoint asked for while
 * a record is checked and not yet in the WAL applies only what is
 * durable.  And the `backend` key of tdbd.conf and --backend.
 *
 * Linked with tdbd's objects (src/daemon, without main.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "durable/ckpt.h"
#include "durable/durable.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "kernel.h"
#include "rec.h"
#include "tdbd.h"
#include "walrec.h"

uint64_t tdbd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char dir[] = "/tmp/tdb-kmirror-XXXXXX";
static char err[512];

static void start(struct tdbd *d)
{
	memset(d, 0, sizeof(*d));
	tdbd_config_defaults(&d->cfg);
	d->cfg.hugepages = false;
	d->cfg.backend = TDBD_BACKEND_KERNEL;
	snprintf(d->cfg.data_dir, sizeof(d->cfg.data_dir), "%s", dir);
	pthread_mutex_init(&d->wake_lock, NULL);
	assert_int_equal(tdbd_owner_start(d), 0);
	assert_int_equal(tdbd_durable_start(d, tdbd_on_durable), 0);
	/* nothing loaded into tdbd's own tables */
	assert_int_equal(tdbo_table_count(d->o), 0);
	assert_int_equal(tdbd_durable_kernel_ready(d), 0);
}

static void stop(struct tdbd *d)
{
	tdbd_durable_stop(d);
	tdbd_owner_stop(d);
	pthread_mutex_destroy(&d->wake_lock);
}

static int apply(struct tdbd *d, const unsigned char *r, size_t n)
{
	struct wal_rec wr;
	const char *why;

	assert_int_equal(wal_rec_check(r, n, &wr, &why), 0);
	err[0] = '\0';
	return tdbd_durable_apply(d, r, n, &wr, err, sizeof(err));
}

static uint64_t ckpts(struct tdbd *d)
{
	return __atomic_load_n(&d->ctr.checkpoints, __ATOMIC_RELAXED);
}

static bool wait_ckpt(struct tdbd *d, uint64_t before, int ms)
{
	for (int i = 0; i < ms && ckpts(d) == before; i++)
		usleep(1000);
	return ckpts(d) != before;
}

/* What the follower does after a round, the WAL synced, then a
 * checkpoint (the checkpointer's thread) of everything durable. */
static void checkpoint_now(struct tdbd *d)
{
	uint64_t before = ckpts(d);

	tdbd_log_write(d);
	assert_int_equal(wal_sync_to(d->wal, wal_appended(d->wal)), 0);
	tdbd_durable_checkpoint_soon(d);
	assert_true(wait_ckpt(d, before, 10000));
	assert_int_equal(d->ctr.ckpt_lsn, wal_appended(d->wal));
}

/* The value of key in table tab of the store, or NULL; its version in
 * last_ver, its deadline in last_dl. */
static uint64_t last_ver, last_dl;

struct find {
	const char *key;
	char val[256];
	bool found;
};

static int find_rec(void *arg, const void *key, size_t klen, const void *val,
		    size_t vlen, uint64_t version, uint64_t deadline)
{
	struct find *f = arg;

	if (klen != strlen(f->key) || memcmp(key, f->key, klen))
		return 0;
	assert_true(vlen < sizeof(f->val));
	memcpy(f->val, val, vlen);
	f->val[vlen] = '\0';
	f->found = true;
	last_ver = version;
	last_dl = deadline;
	return 0;
}

static const char *value(struct tdbd *d, const char *tab, const char *key)
{
	static struct find f;
	bool versioned;
	int e;

	memset(&f, 0, sizeof(f));
	f.key = key;
	last_ver = last_dl = 0;
	e = tdbd_ckpt_load_table(d->ckpt, tab, find_rec, &f, &versioned, err,
				 sizeof(err));
	if (e == -ENOENT)
		return NULL;
	assert_int_equal(e, 0);
	return f.found ? f.val : NULL;
}

static bool store_has(struct tdbd *d, const char *tab)
{
	struct ckpt_table *t = NULL;
	unsigned int n = 0;
	uint64_t lsn;
	bool has = false;

	assert_int_equal(tdbd_ckpt_read_meta(d->ckpt, &lsn, &t, &n, err,
					     sizeof(err)), 0);
	for (unsigned int i = 0; i < n; i++)
		has |= !strcmp(t[i].name, tab);
	free(t);
	return has;
}

static uint64_t store_version(struct tdbd *d)
{
	uint64_t v = 0;

	assert_int_equal(tdbd_ckpt_read_version(d->ckpt, &v, err,
						sizeof(err)), 0);
	return v;
}

static void test_apply_and_recover(void **state)
{
	static struct tdbd d;
	unsigned char r[512];
	uint64_t base;
	size_t n;

	(void)state;
	start(&d);
	base = wal_appended(d.wal);
	n = rec_create(r, base + 1, 77, "kt");
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_op(r, base + 2, "kt", "a", "one", 3, false);
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_op(r, base + 3, "kt", "b", "two", 3, false);
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_op(r, base + 4, "kt", "a", NULL, 0, true);
	assert_int_equal(apply(&d, r, n), 0);
	assert_int_equal(wal_appended(d.wal), base + 4);
	assert_int_equal(tdbo_table_count(d.o), 0);     /* no mirror */
	assert_int_equal(tdbd_durable_table_count(&d), 1);

	/* out of sequence: refused, both named, nothing in the WAL */
	n = rec_op(r, base + 6, "kt", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), -EPROTO);
	assert_non_null(strstr(err, "LSN 6"));
	assert_non_null(strstr(err, "next LSN 5"));
	n = rec_op(r, base + 4, "kt", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), -EPROTO);
	assert_int_equal(wal_appended(d.wal), base + 4);

	/* records that could never be checkpointed: an op on a table
	 * that does not exist, a create of one that does, a drop of one
	 * that does not; each names it, none reaches the WAL */
	n = rec_op(r, base + 5, "nosuch", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), -EUCLEAN);
	assert_non_null(strstr(err, "changes table nosuch, which does not "
			       "exist"));
	n = rec_create(r, base + 5, 79, "kt");
	assert_int_equal(apply(&d, r, n), -EUCLEAN);
	assert_non_null(strstr(err, "creates table kt, which exists"));
	n = rec_drop(r, base + 5, "nosuch");
	assert_int_equal(apply(&d, r, n), -EUCLEAN);
	assert_non_null(strstr(err, "drops table nosuch, which does not "
			       "exist"));
	assert_int_equal(wal_appended(d.wal), base + 4);

	/* the checkpoint: the store has each key with its record's
	 * version, and a counter past every one */
	checkpoint_now(&d);
	assert_null(value(&d, "kt", "a"));
	assert_string_equal(value(&d, "kt", "b"), "two");
	assert_int_equal(last_ver, REC_VERSION(base + 3));
	assert_true(store_version(&d) >= REC_VERSION(base + 4));
	n = rec_op(r, base + 5, "kt", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), 0);
	stop(&d);       /* no checkpoint at stop (TDBD_STOP_CKPT_MAX 0) */

	/* a new start: nothing loaded into tdbd; the WAL has what was
	 * applied (not the refused), the names its tables; its record
	 * after the store is applied to the store by the start itself
	 * (recovery finishes the checkpoint) */
	start(&d);
	assert_int_equal(wal_appended(d.wal), base + 5);
	assert_int_equal(tdbd_durable_table_count(&d), 1);
	assert_true(tdbo_version_last(d.o) >= REC_VERSION(base + 5));
	assert_int_equal(d.ctr.ckpt_lsn, base + 5);
	assert_string_equal(value(&d, "kt", "c"), "three");
	assert_int_equal(last_ver, REC_VERSION(base + 5));
	n = rec_op(r, base + 6, "kt", "d", "four", 4, false);
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_drop(r, base + 7, "kt");
	assert_int_equal(apply(&d, r, n), 0);
	assert_int_equal(tdbd_durable_table_count(&d), 0);
	/* an op on it now: refused */
	n = rec_op(r, base + 8, "kt", "e", "five", 4, false);
	assert_int_equal(apply(&d, r, n), -EUCLEAN);
	checkpoint_now(&d);
	assert_false(store_has(&d, "kt"));
	stop(&d);
	start(&d);
	assert_int_equal(tdbd_durable_table_count(&d), 0);
	assert_false(store_has(&d, "kt"));
	assert_int_equal(wal_appended(d.wal), base + 7);
	stop(&d);
}

/* Expiry, with tdb.ko's encoder (kmod/klog.c: tdbk_log_create,
 * tdbk_log_op): a create with its default TTL and bounds, then a record
 * of a put with a deadline, one without and a delete. */
static size_t kcreate(unsigned char *r, uint64_t lsn, const char *tab)
{
	size_t len = walrec_begin(r, WALREC_CREATE), n = strlen(tab);

	walrec_create(r + len, 78, 0, 0, 0600, 0, 0);
	len += WALREC_CREATE_FIX;
	r[len++] = (unsigned char)n;
	memcpy(r + len, tab, n);
	len += n;
	len += walrec_create_ext(r + len, 60000, 1u << 20, 50,
				 TDB_EVICT_TTL, 0);
	walrec_seal(r, (uint32_t)len, lsn, 0);
	walrec_set_crc(r, walrec_crc(r, (uint32_t)len));
	return len;
}

static size_t kop(unsigned char *r, size_t len, const char *tab,
		  const char *key, const char *val, uint64_t dl)
{
	size_t n = strlen(tab), kl = strlen(key), vl = val ? strlen(val) : 0;
	size_t h = walrec_op_dl(r + len, val ? WALREC_OP_PUT : WALREC_OP_DEL,
				(uint8_t)n, (uint32_t)kl, (uint32_t)vl, dl);

	memcpy(r + len + h, tab, n);
	memcpy(r + len + h + n, key, kl);
	memcpy(r + len + h + n + kl, val ? val : "", vl);
	return len + h + n + kl + vl;
}

static uint64_t deadline_of(struct tdbd *d, const char *tab, const char *key)
{
	assert_non_null(value(d, tab, key));
	return last_dl;
}

static void check_expiry(struct tdbd *d, uint64_t dl)
{
	struct ckpt_table *t = NULL;
	unsigned int n = 0, i;
	uint64_t lsn;

	assert_int_equal(tdbd_ckpt_read_meta(d->ckpt, &lsn, &t, &n, err,
					     sizeof(err)), 0);
	for (i = 0; i < n && strcmp(t[i].name, "ke"); i++)
		;
	assert_true(i < n);
	assert_int_equal(t[i].default_ttl, 60000);
	assert_int_equal(t[i].max_bytes, 1u << 20);
	assert_int_equal(t[i].max_records, 50);
	assert_int_equal(t[i].evict, TDB_EVICT_TTL);
	free(t);
	assert_int_equal(deadline_of(d, "ke", "x"), dl);
	/* the logged "none" as it is, not the default */
	assert_int_equal(deadline_of(d, "ke", "y"), 0);
	assert_null(value(d, "ke", "z"));
}

/* Last of the tests: the WAL it leaves makes the next start replay and
 * checkpoint after the recovery, which test_checkpoint_during_apply's
 * hook would see. */
static void test_expiry(void **state)
{
	static struct tdbd d;
	unsigned char r[512];
	uint64_t base, dl = 4102444800000ull;   /* 2100-01-01 */
	size_t n;

	(void)state;
	start(&d);
	base = wal_appended(d.wal);
	n = kcreate(r, base + 1, "ke");
	assert_int_equal(apply(&d, r, n), 0);
	n = walrec_begin_v(r, REC_VERSION(base + 2));
	n = kop(r, n, "ke", "x", "1", dl);
	n = kop(r, n, "ke", "y", "2", 0);
	n = kop(r, n, "ke", "z", "3", 0);
	walrec_seal(r, (uint32_t)n, base + 2, 3);
	walrec_set_crc(r, walrec_crc(r, (uint32_t)n));
	assert_int_equal(apply(&d, r, n), 0);
	n = walrec_begin_v(r, REC_VERSION(base + 3));
	n = kop(r, n, "ke", "z", NULL, 0);
	walrec_seal(r, (uint32_t)n, base + 3, 1);
	walrec_set_crc(r, walrec_crc(r, (uint32_t)n));
	assert_int_equal(apply(&d, r, n), 0);
	stop(&d);
	start(&d);      /* the start applied the WAL to the store */
	assert_int_equal(d.ctr.ckpt_lsn, base + 3);
	check_expiry(&d, dl);
	stop(&d);
}

/* --- a checkpoint between the check and the WAL (issue 29's race) -------
 * The hook runs inside tdbd_durable_apply with the drop of kd checked
 * and not yet in the WAL: it asks for a checkpoint and gives it 300 ms.
 * With the mirror, a checkpoint then recorded the LSN before the drop
 * with kd already gone ("0 table(s)") and the next start failed
 * replaying the drop.  Without one the checkpoint applies only durable
 * WAL records: it may run in the hook and holds kd; the next one
 * applies the drop, and the next start passes. */
static bool hook_saw_ckpt;

static void ckpt_in_apply(struct tdbd *d)
{
	uint64_t before = ckpts(d);

	tdbd_durable_checkpoint_soon(d);
	hook_saw_ckpt = wait_ckpt(d, before, 300);
}

static void test_checkpoint_during_apply(void **state)
{
	static struct tdbd d;
	unsigned char r[512];
	uint64_t base;
	size_t n;

	(void)state;
	start(&d);
	base = wal_appended(d.wal);
	n = rec_create(r, base + 1, 78, "kd");
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_op(r, base + 2, "kd", "k", "v", 1, false);
	assert_int_equal(apply(&d, r, n), 0);
	tdbd_log_write(&d);
	assert_int_equal(wal_sync_to(d.wal, base + 2), 0);
	tdbd_durable_test_apply_hook(&d, ckpt_in_apply);
	n = rec_drop(r, base + 3, "kd");
	assert_int_equal(apply(&d, r, n), 0);
	tdbd_durable_test_apply_hook(&d, NULL);
	/* it ran in the hook, with what was durable: kd there */
	assert_true(hook_saw_ckpt);
	assert_int_equal(d.ctr.ckpt_lsn, base + 2);
	assert_true(store_has(&d, "kd"));
	checkpoint_now(&d);
	assert_false(store_has(&d, "kd"));
	stop(&d);
	start(&d);                      /* asserts the recovery passed */
	assert_false(store_has(&d, "kd"));
	assert_int_equal(tdbd_durable_table_count(&d), 0);
	assert_int_equal(wal_appended(d.wal), base + 3);
	stop(&d);
}

static long rss_kib(const char *what)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256], fmt[64];
	long v = -1;

	assert_non_null(f);
	snprintf(fmt, sizeof(fmt), "%s: %%ld", what);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The interim restore's copy (tables not resident): the store and the
 * WAL after it loaded into tdbd's owner for krestore.c, every record
 * there; then dropped, and its memory (the engine's regions: RssShmem)
 * given back. */
static void test_restore_copy(void **state)
{
	static struct tdbd d;
	static unsigned char r[20000];
	static char v[16000];
	uint64_t base;
	long before, loaded, after;
	size_t n;

	(void)state;
	start(&d);
	base = wal_appended(d.wal);
	n = rec_create(r, base + 1, 80, "kc");
	assert_int_equal(apply(&d, r, n), 0);
	memset(v, 'v', sizeof(v));
	for (unsigned int i = 0; i < 2000; i++) {
		char k[16];

		snprintf(k, sizeof(k), "c%05u", i);
		n = rec_op(r, base + 2 + i, "kc", k, v, sizeof(v), false);
		assert_int_equal(apply(&d, r, n), 0);
		if (i == 999)
			checkpoint_now(&d);     /* half in the store */
	}
	tdbd_log_write(&d);
	assert_int_equal(wal_sync_to(d.wal, wal_appended(d.wal)), 0);
	before = rss_kib("RssShmem");
	assert_int_equal(tdbd_durable_mirror_load(&d), 0);
	loaded = rss_kib("RssShmem");
	{
		struct tdbo_table *t = tdbo_table_get(d.o, "kc");
		struct tdbe_table_stat st;

		assert_non_null(t);
		tdbe_table_stat(t->t, &st);
		assert_int_equal(st.records, 2000);
		tdbo_table_put(t);
	}
	tdbd_durable_mirror_drop(&d);
	after = rss_kib("RssShmem");
	printf("restore copy: RssShmem %ld KiB, %ld loaded, %ld dropped\n",
	       before, loaded, after);
	assert_int_equal(tdbo_table_count(d.o), 0);
	assert_true(loaded - before > 16000);   /* 32 MB of values */
	assert_true(after - before < 4096);
	stop(&d);
}

static void test_instance(void **state)
{
	uint64_t a = 0, b = 0;

	(void)state;
	assert_int_equal(tdbd_kernel_instance(dir, &a, err, sizeof(err)), 0);
	assert_int_not_equal(a, 0);
	assert_int_equal(tdbd_kernel_instance(dir, &b, err, sizeof(err)), 0);
	assert_int_equal(a, b);
}

static void test_backend_config(void **state)
{
	struct tdbd_config c;
	struct tdbd_args a;
	char f[PATH_MAX + 16], *argv[4] = { "tdbd", "--backend", "kernel",
					      NULL };
	FILE *fp;

	(void)state;
	tdbd_config_defaults(&c);
	assert_int_equal(c.backend, TDBD_BACKEND_DAEMON);
	assert_int_equal(tdbd_config_set(&c, "backend", "kernel", err,
					 sizeof(err)), 0);
	assert_int_equal(c.backend, TDBD_BACKEND_KERNEL);
	assert_int_equal(tdbd_config_set(&c, "backend", "daemon", err,
					 sizeof(err)), 0);
	assert_int_equal(c.backend, TDBD_BACKEND_DAEMON);
	assert_int_equal(tdbd_config_set(&c, "backend", "tdb.ko", err,
					 sizeof(err)), -EINVAL);
	assert_string_equal(err, "backend: not a backend (daemon or kernel) "
			    "(tdb.ko)");
	snprintf(f, sizeof(f), "%s/tdbd.conf", dir);
	fp = fopen(f, "w");
	assert_non_null(fp);
	fputs("# kernel mode\nbackend = kernel\n", fp);
	fclose(fp);
	tdbd_config_defaults(&c);
	assert_int_equal(tdbd_config_load(&c, f, err, sizeof(err)), 0);
	assert_int_equal(c.backend, TDBD_BACKEND_KERNEL);
	fp = fopen(f, "w");
	fputs("backend = both\n", fp);
	fclose(fp);
	assert_int_equal(tdbd_config_load(&c, f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tdbd.conf:1: backend: not a backend"));
	tdbd_config_defaults(&c);
	assert_int_equal(tdbd_config_from_args(&c, 3, argv, &a, err,
					       sizeof(err)), 0);
	assert_int_equal(c.backend, TDBD_BACKEND_KERNEL);
	/* a restart key; in --help */
	{
		struct tdbd_config o;
		char changed[256], restart[256];

		tdbd_config_defaults(&o);
		tdbd_config_diff(&o, &c, changed, sizeof(changed), restart,
				 sizeof(restart));
		assert_string_equal(restart, "backend");
	}
	assert_non_null(strstr(tdbd_config_usage(), "  --backend MODE "));
	/* checkpoint-run-size (issue 29): a size, 1M..16G, 64M by
	 * default, a restart key */
	tdbd_config_defaults(&c);
	assert_int_equal(c.checkpoint_run_size, 64ull << 20);
	assert_int_equal(tdbd_config_set(&c, "checkpoint-run-size", "8M", err,
					 sizeof(err)), 0);
	assert_int_equal(c.checkpoint_run_size, 8ull << 20);
	assert_int_equal(tdbd_config_set(&c, "checkpoint-run-size", "512K",
					 err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checkpoint-run-size"));
	assert_non_null(strstr(err, "1M..16G"));
	assert_int_equal(tdbd_config_set(&c, "checkpoint-run-size", "lots",
					 err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checkpoint-run-size: not a size"));
	assert_int_equal(c.checkpoint_run_size, 8ull << 20);
	{
		struct tdbd_config o;
		char changed[256], restart[256];

		tdbd_config_defaults(&o);
		tdbd_config_diff(&o, &c, changed, sizeof(changed), restart,
				 sizeof(restart));
		assert_string_equal(restart, "checkpoint-run-size");
	}
	assert_non_null(strstr(tdbd_config_usage(),
			       "  --checkpoint-run-size SIZE "));
	unlink(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_and_recover),
		cmocka_unit_test(test_checkpoint_during_apply),
		cmocka_unit_test(test_restore_copy),
		cmocka_unit_test(test_instance),
		cmocka_unit_test(test_backend_config),
		cmocka_unit_test(test_expiry),
	};
	char cmd[64];
	int rc;

	/* stops without a checkpoint: the second start replays the WAL */
	setenv("TDBD_STOP_CKPT_MAX", "0", 1);
	if (!mkdtemp(dir))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		rc = 1;
	return rc;
}
