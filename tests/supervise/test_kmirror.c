// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kmirror.c - tdbd in kernel mode without tdb.ko: records as tdb.ko
 * logs them (rec.h) applied to tdbd's mirror and WAL
 * (tdbd_durable_apply, the follower's step), then a second start
 * recovers the mirror from the WAL with every record; an LSN that is
 * not the WAL's next is refused with both LSNs named and nothing
 * applied; a record on a table the mirror lacks is refused.  Each key
 * has the version of the record that wrote it (tdb.ko's, REC_VERSION,
 * not the LSN), in the mirror and after the recovery, and the mirror's
 * counter is past every one.  Expiry: records built with the encoder
 * tdb.ko's log uses (src/wal/walrec.c: a create with a default TTL and
 * bounds, PUT_DL ops) give the mirror's table its attributes and each
 * put its deadline, also after the recovery.  And the
 * `backend` key of tdbd.conf and --backend.
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

/* The value of key in table tab of the mirror, or NULL; its version in
 * last_ver. */
static uint64_t last_ver;

static const char *value(struct tdbd *d, const char *tab, const char *key)
{
	static char buf[256];
	struct tdbo_table *t = tdbo_table_get(d->o, tab);
	long n;

	last_ver = 0;
	if (!t)
		return NULL;
	n = tdbe_get_ver(t->t, key, strlen(key), buf, sizeof(buf) - 1, NULL,
			 &last_ver);
	tdbo_table_put(t);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
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
	assert_null(value(&d, "kt", "a"));
	assert_string_equal(value(&d, "kt", "b"), "two");
	assert_int_equal(last_ver, REC_VERSION(base + 3));
	assert_true(tdbo_version_last(d.o) >= REC_VERSION(base + 4));
	assert_int_equal(wal_appended(d.wal), base + 4);

	/* out of sequence: refused, both named, the mirror untouched */
	n = rec_op(r, base + 6, "kt", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), -EPROTO);
	assert_non_null(strstr(err, "LSN 6"));
	assert_non_null(strstr(err, "next LSN 5"));
	assert_null(value(&d, "kt", "c"));
	n = rec_op(r, base + 4, "kt", "c", "three", 5, false);
	assert_int_equal(apply(&d, r, n), -EPROTO);
	assert_null(value(&d, "kt", "c"));
	assert_int_equal(wal_appended(d.wal), base + 4);

	/* a table the mirror lacks */
	n = rec_op(r, base + 5, "nosuch", "c", "three", 5, false);
	assert_int_not_equal(apply(&d, r, n), 0);
	stop(&d);

	/* a new start: the WAL has what was applied (not the refused) */
	start(&d);
	assert_int_equal(wal_appended(d.wal), base + 4);
	assert_string_equal(value(&d, "kt", "b"), "two");
	assert_int_equal(last_ver, REC_VERSION(base + 3));
	assert_true(tdbo_version_last(d.o) >= REC_VERSION(base + 4));
	assert_null(value(&d, "kt", "a"));
	n = rec_drop(r, base + 5, "kt");
	assert_int_equal(apply(&d, r, n), 0);
	assert_null(tdbo_table_get(d.o, "kt"));
	stop(&d);
	start(&d);
	assert_null(tdbo_table_get(d.o, "kt"));
	assert_int_equal(wal_appended(d.wal), base + 5);
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
	struct tdbo_table *t = tdbo_table_get(d->o, tab);
	char buf[64];
	uint64_t dl = 7;
	long n;

	assert_non_null(t);
	n = tdbe_get_ex(t->t, key, strlen(key), buf, sizeof(buf), NULL, NULL,
			&dl);
	tdbo_table_put(t);
	assert_true(n >= 0);
	return dl;
}

static void check_expiry(struct tdbd *d, uint64_t dl)
{
	struct tdbo_table *t = tdbo_table_get(d->o, "ke");

	assert_non_null(t);
	assert_int_equal(t->default_ttl, 60000);
	assert_int_equal(t->max_bytes, 1u << 20);
	assert_int_equal(t->max_records, 50);
	assert_int_equal(t->evict, TDB_EVICT_TTL);
	tdbo_table_put(t);
	assert_int_equal(deadline_of(d, "ke", "x"), dl);
	/* replay takes the logged "none" as it is, not the default */
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
	check_expiry(&d, dl);
	stop(&d);
	start(&d);      /* again: the WAL replayed (no checkpoint at stop) */
	check_expiry(&d, dl);
	stop(&d);
}

/* --- a checkpoint between the mirror and the WAL (issue 29's race) --------
 * The hook runs inside tdbd_durable_apply with the drop of kt applied to
 * the mirror and not yet in the WAL: it asks for a checkpoint and gives
 * it 300 ms.  Before the fix the checkpoint ran then, recorded the LSN
 * before the drop with kt already gone ("0 table(s)"), and the next
 * start failed replaying the drop (ENOENT).  Now the checkpoint waits for
 * the record to be in the WAL (apply_m), so it cannot finish in the hook. */
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
	uint64_t base, before;
	size_t n;

	(void)state;
	start(&d);
	base = wal_appended(d.wal);
	n = rec_create(r, base + 1, 78, "kd");
	assert_int_equal(apply(&d, r, n), 0);
	n = rec_op(r, base + 2, "kd", "k", "v", 1, false);
	assert_int_equal(apply(&d, r, n), 0);
	before = ckpts(&d);
	tdbd_durable_test_apply_hook(&d, ckpt_in_apply);
	n = rec_drop(r, base + 3, "kd");
	assert_int_equal(apply(&d, r, n), 0);
	tdbd_durable_test_apply_hook(&d, NULL);
	assert_false(hook_saw_ckpt);    /* it waited for the WAL */
	assert_true(wait_ckpt(&d, before, 10000));
	stop(&d);
	start(&d);                      /* asserts the recovery passed */
	assert_null(tdbo_table_get(d.o, "kd"));
	assert_int_equal(wal_appended(d.wal), base + 3);
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
	unlink(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_and_recover),
		cmocka_unit_test(test_checkpoint_during_apply),
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
