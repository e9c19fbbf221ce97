// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_limits.c - tdb.ko's per-uid and global limits (kmod/owner_quota.c)
 * against ordinary uids (forked children that drop to 65534 / 65533),
 * with small values written to /sys/module/tdb/parameters/ (0644):
 *
 *  - max_tables_per_uid: the 4th table of a uid is -EDQUOT naming the
 *    parameter; a table is charged to its owner until dropped (a drop
 *    frees a slot, a table root made for the uid counts, a new
 *    connection does not reset it); root is exempt;
 *  - max_tables: another uid is refused (-ENOSPC) at 7/8 of it, root
 *    makes the last eighth, then -EMFILE;
 *  - max_clients_per_uid: the 4th /dev/tdb client with rings of a uid
 *    is -EDQUOT (the kernel log names the parameter); generic netlink is
 *    not counted; root still attaches;
 *  - max_clients: another uid is refused (-ENOSPC) at 7/8 of it, root
 *    may use the last eighth, then root is refused too;
 *  - max_txn_memory_per_uid: a uid's buffered transaction changes stop
 *    at it (-EDQUOT naming it) across its transactions and connections;
 *    an abort gives the memory back; root is exempt;
 *  - max_txn_memory: another uid stops at 7/8 of it (-ENOBUFS naming
 *    it), a second uid then too, root still buffers in the last eighth;
 *  - max_txns, max_txn_ops, max_txn_bytes (a client's transactions, as
 *    tdbd's keys): -EBUSY, -E2BIG, -E2BIG naming them; out-of-range
 *    values are refused;
 *  - max_watches: the 5th watch of a client is -EMFILE naming it;
 *  - max_watches_per_uid (6, max_watches 4): a uid's 7th watch, on its
 *    second connection, is -EDQUOT naming it; an UNWATCH gives one back;
 *  - max_ring_memory_per_uid (8 MiB): a uid's raw ATTACHes of 2 x 1 MiB
 *    rings (2 MiB + 8 KiB with their header pages) stop at 3 (-EDQUOT,
 *    the kernel log names it), a close gives one back; root attaches
 *    2 x 64 MiB;
 *  - max_memory_mb (64) bounds the rings with the tables: another uid's
 *    attaches are refused (-ENOBUFS) before its rings pass 7/8 of it,
 *    root then attaches 3 or 4 more in the last eighth and is refused
 *    at the bound (the kernel log names max_memory_mb and the eighth).
 * Each time root can still connect, create, write and read while the
 * attacker holds what it got, and once the attacker is gone the STATS
 * gauges are back where they were.  rmmod's memory check (/init) then
 * shows nothing was leaked.  tdb.ko only.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tdb/client.h>
#include <tdb/kdev.h>

#include "kt.h"

#define PARAMS "/sys/module/tdb/parameters/"
#define UID_A  65534
#define UID_B  65533
#define VAL    65536            /* bytes of each buffered value */
#define MAXC   16               /* ring clients an attacker tries */

static struct tdbc *root;       /* root's connection (rings) */
static struct tdbc_stats base;  /* gauges with no attacker */

/* --- module parameters ------------------------------------------------ */

static void set_param(const char *name, unsigned int v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	CHECK(f, "%s: %s (the module parameter is missing or read-only)",
	      path, strerror(errno));
	CHECK(fprintf(f, "%u\n", v) > 0 && fclose(f) == 0, "write %s", path);
}

/* How a refusal names a limit: as tdbd.conf does, with '-' for the
 * module parameter's '_' (the same limit in both homes). */
static const char *limit_name(const char *param)
{
	static char buf[64];
	size_t i;

	for (i = 0; param[i] && i + 1 < sizeof(buf); i++)
		buf[i] = param[i] == '_' ? '-' : param[i];
	buf[i] = '\0';
	return buf;
}

/* Write v to the parameter: 0 or the errno of the write. */
static int try_param(const char *name, const char *v)
{
	char path[128];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	CHECK(f, "%s: %s", path, strerror(errno));
	setvbuf(f, NULL, _IONBF, 0);
	if (fputs(v, f) < 0)
		err = errno;
	if (fclose(f) != 0 && !err)
		err = errno;
	return err;
}

static unsigned int get_param(const char *name)
{
	char path[128];
	unsigned int v = 0;
	FILE *f;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "r");
	CHECK(f, "%s: %s", path, strerror(errno));
	CHECK(fscanf(f, "%u", &v) == 1, "read %s", path);
	fclose(f);
	return v;
}

/* Does the kernel log hold s? */
static bool klog_has(const char *s)
{
	int n = klogctl(10, NULL, 0);   /* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf;
	bool found;

	CHECK(n > 0, "klogctl size: %s", strerror(errno));
	buf = calloc(1, (size_t)n + 1);
	CHECK(buf, "calloc");
	n = klogctl(3, buf, n);         /* SYSLOG_ACTION_READ_ALL */
	CHECK(n >= 0, "klogctl read: %s", strerror(errno));
	found = strstr(buf, s) != NULL;
	free(buf);
	return found;
}

/* --- attackers: children as ordinary uids ------------------------------ */

struct attacker {
	pid_t pid;
	int ready;              /* child -> parent: a result, then holds */
	int release;            /* parent -> child: let go and exit */
};

typedef int attack_fn(void *arg);

/*
 * Fork a child that drops to uid (and gid) and runs fn; fn's result is
 * handed to the parent, then the child holds everything it got (its
 * connections, rings, tables, transactions) until attack_end().
 */
static int attack_start(struct attacker *a, uid_t uid, attack_fn *fn,
			void *arg)
{
	int up[2], down[2], res = 0;

	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
	a->pid = fork();
	CHECK(a->pid >= 0, "fork");
	if (a->pid == 0) {
		char c;

		close(up[0]);
		close(down[1]);
		CHECK(setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0
		      && setresuid(uid, uid, uid) == 0,
		      "dropping to %u: %s", (unsigned int)uid,
		      strerror(errno));
		res = fn(arg);
		CHECK(write(up[1], &res, sizeof(res)) == sizeof(res),
		      "write");
		(void)!read(down[0], &c, 1);
		_exit(0);       /* closing everything is the clean-up */
	}
	h_track(a->pid);
	close(up[1]);
	close(down[0]);
	a->ready = up[0];
	a->release = down[1];
	CHECK(read(a->ready, &res, sizeof(res)) == sizeof(res),
	      "the attacker (uid %u) failed before it was done",
	      (unsigned int)uid);
	return res;
}

static void attack_end(struct attacker *a)
{
	int status;

	close(a->release);
	CHECK(waitpid(a->pid, &status, 0) == a->pid, "waitpid");
	h_untrack(a->pid);
	close(a->ready);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "attacker status %#x", status);
}

/* --- root's view -------------------------------------------------------- */

/* Root connects with rings, creates a table, writes and reads it. */
static void root_still_works(const char *why)
{
	struct tdbc *c = NULL;
	struct tdbc_table *t;
	char v[8];
	int err;

	err = kt_try_connect(&c, 0);
	CHECK(err == 0, "%s: root cannot attach: %s", why, h_errname(err));
	kt_create(c, "lt_rootchk", 0600, 0);
	t = kt_open(c, "lt_rootchk");
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "%s: root put",
	      why);
	CHECK(tdbc_get(t, NULL, "k", 1, v, sizeof(v), NULL) == 1 &&
	      v[0] == 'v', "%s: root get", why);
	t = kt_open(c, "lt_pub");
	CHECK(tdbc_get(t, NULL, "pub", 3, v, sizeof(v), NULL) == 1,
	      "%s: root reads lt_pub", why);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "lt_rootchk") == 0, "%s: root drop", why);
	tdbc_close(c);
}

static bool gauges_back(const struct tdbc_stats *st, const void *arg)
{
	(void)arg;
	return h_gauges_equal(st, &base) && st->tables == base.tables;
}

static void gauges_return(const char *why)
{
	struct tdbc_stats st;

	if (!h_wait_stats(root, &st, gauges_back, NULL, 5000)) {
		h_print_stats("base", &base);
		h_print_stats("now", &st);
		CHECK(0, "%s: the STATS gauges did not come back", why);
	}
}

static void stats(struct tdbc_stats *st)
{
	CHECK(tdbc_stats(root, st) == 0, "stats");
}

/* --- tables per uid ----------------------------------------------------- */

static int try_create(struct tdbc *c, const char *name)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.mode = 0600;
	return tdbc_table_create(c, name, &o);
}

/* arg: how many lt_a<i> it must be able to create now (then EDQUOT). */
static int tables_attack(void *arg)
{
	int want = *(int *)arg, i, err;
	struct tdbc *c = kt_connect(0);
	char name[32];

	for (i = 0; i < want; i++) {
		snprintf(name, sizeof(name), "lt_a%d", i);
		err = try_create(c, name);
		CHECK(err == 0, "uid %d: table %d of max_tables_per_uid=3: %s "
		      "(%s)", UID_A, i + 1, h_errname(err), tdbc_errmsg(c));
	}
	err = try_create(c, "lt_over");
	CHECK(err == -EDQUOT, "uid %d: a table past max_tables_per_uid: %s, "
	      "want EDQUOT", UID_A, h_errname(err));
	CHECK(strstr(tdbc_errmsg(c), "max-tables-per-uid"),
	      "the refusal does not name max_tables_per_uid: \"%s\"",
	      tdbc_errmsg(c));
	if (want > 0) {
		/* a drop gives its slot back */
		CHECK(tdbc_table_drop(c, "lt_a0") == 0, "drop lt_a0");
		err = try_create(c, "lt_a0");
		CHECK(err == 0, "after a drop: %s", h_errname(err));
	}
	return want;
}

static void round_tables(void)
{
	struct tdbc_table_opts o;
	struct attacker a;
	char name[32];
	int want = 3, i;

	set_param("max_tables_per_uid", 3);
	attack_start(&a, UID_A, tables_attack, &want);
	/* root is exempt: more than 3 tables, and one for uid A */
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "lt_r%d", i);
		kt_create(root, name, 0600, 0);
	}
	root_still_works("tables");
	attack_end(&a);
	/* the tables outlive the connection: still charged */
	want = 0;
	attack_start(&a, UID_A, tables_attack, &want);
	attack_end(&a);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "lt_a%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	/* a table root creates for uid A is A's */
	tdbc_table_opts_init(&o);
	o.uid = UID_A;
	o.gid = UID_A;
	CHECK(tdbc_table_create(root, "lt_for_a", &o) == 0, "root creates "
	      "lt_for_a for uid %d: %s", UID_A, tdbc_errmsg(root));
	want = 2;
	attack_start(&a, UID_A, tables_attack, &want);
	attack_end(&a);
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "lt_a%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	CHECK(tdbc_table_drop(root, "lt_for_a") == 0, "drop lt_for_a");
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "lt_r%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	/* and with everything dropped, uid A has its 3 again */
	want = 3;
	attack_start(&a, UID_A, tables_attack, &want);
	attack_end(&a);
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "lt_a%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	set_param("max_tables_per_uid", 256);
	gauges_return("tables");
	printf("limits: max_tables_per_uid=3 holds (EDQUOT), root exempt\n");
}

/* Create lt_g<i> until refused: the count (the refusal must be ENOSPC
 * naming max_tables and its reserve). */
static int tables_global_attack(void *arg)
{
	struct tdbc *c = kt_connect(0);
	char name[32];
	int n = 0, err = 0;

	(void)arg;
	while (n < 64) {
		snprintf(name, sizeof(name), "lt_g%d", n);
		err = try_create(c, name);
		if (err)
			break;
		n++;
	}
	CHECK(err == -ENOSPC, "uid %d: table %d: %s, want ENOSPC", UID_B,
	      n + 1, h_errname(err));
	CHECK(strstr(tdbc_errmsg(c), "max-tables; the last eighth is kept "
		     "for root"), "the refusal does not name max_tables and "
	      "its reserve: \"%s\"", tdbc_errmsg(c));
	return n;
}

static void round_tables_global(void)
{
	struct attacker a;
	char name[32];
	int n, i, err = 0;

	CHECK(try_param("max_tables", "0") == EINVAL, "max_tables=0 taken");
	CHECK(get_param("max_tables") == 4000, "max_tables changed");
	/* 16 in all: others stop at 14; root holds base.tables */
	set_param("max_tables_per_uid", 0);
	set_param("max_tables", 16);
	n = attack_start(&a, UID_B, tables_global_attack, NULL);
	CHECK(n == 14 - (int)base.tables, "uid %d made %d tables beside %u, "
	      "want %u (7/8 of max_tables=16)", UID_B, n, base.tables,
	      14 - base.tables);
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "lt_gr%d", i);
		err = try_create(root, name);
		if (err)
			break;
	}
	CHECK(i == 2 && err == -EMFILE && strstr(tdbc_errmsg(root),
						 "max-tables"),
	      "root made %d more tables (then %s: %s), want 2 then EMFILE",
	      i, h_errname(err), tdbc_errmsg(root));
	attack_end(&a);
	while (i--) {
		snprintf(name, sizeof(name), "lt_gr%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "lt_g%d", i);
		CHECK(tdbc_table_drop(root, name) == 0, "drop %s", name);
	}
	set_param("max_tables", 4000);
	set_param("max_tables_per_uid", 256);
	root_still_works("tables in all");
	gauges_return("tables in all");
	printf("limits: max_tables=16: others stop at 14 (ENOSPC), root "
	       "gets the last 2\n");
}

/* --- clients ------------------------------------------------------------ */

/* Open ring clients until refused; the count.  *(int *)arg: the errno
 * the refusal must be. */
static int clients_attack(void *arg)
{
	int want_err = *(int *)arg, n = 0, err = 0;
	struct tdbc *cs[MAXC], *g;
	struct tdbc_table *t;
	char v[8];

	while (n < MAXC) {
		err = kt_try_connect(&cs[n], 0);
		if (err)
			break;
		n++;
	}
	CHECK(err == want_err, "uid %u: ring client %d: %s, want %s",
	      (unsigned int)getuid(), n + 1, h_errname(err),
	      h_errname(want_err));
	/* generic netlink holds no rings: not counted */
	g = kt_connect(TDBC_NO_RINGS);
	t = kt_open(g, "lt_pub");
	CHECK(tdbc_get(t, NULL, "pub", 3, v, sizeof(v), NULL) == 1,
	      "genl read past the ring limit");
	tdbc_table_close(t);
	if (n > 0) {
		/* closing one gives its slot back */
		tdbc_close(cs[n - 1]);
		err = kt_try_connect(&cs[n - 1], 0);
		CHECK(err == 0, "reattach after a close: %s", h_errname(err));
	}
	return n;
}

static void round_clients_per_uid(void)
{
	struct tdbc_stats st;
	struct attacker a;
	int want_err = -EDQUOT, n;

	set_param("max_clients_per_uid", 3);
	n = attack_start(&a, UID_A, clients_attack, &want_err);
	CHECK(n == 3, "uid %d got %d ring clients, max_clients_per_uid=3",
	      UID_A, n);
	stats(&st);
	CHECK(st.rings == base.rings + 2 * 3, "rings %u with 3 attackers' "
	      "clients, base %u", st.rings, base.rings);
	root_still_works("clients per uid");
	attack_end(&a);
	CHECK(klog_has("max-clients-per-uid"), "no kernel log line names "
	      "max-clients-per-uid");
	set_param("max_clients_per_uid", 64);
	gauges_return("clients per uid");
	printf("limits: max_clients_per_uid=3 holds (EDQUOT), genl not "
	       "counted, root attaches\n");
}

static void round_clients_global(void)
{
	struct tdbc *extra[MAXC];
	struct attacker a;
	int want_err = -ENOSPC, n, held, i, err = 0;

	/* 8 in all: others stop at 7; root holds 1 (its connection) */
	set_param("max_clients_per_uid", 0);
	set_param("max_clients", 8);
	held = (int)(base.rings / 2);
	n = attack_start(&a, UID_B, clients_attack, &want_err);
	CHECK(n == 7 - held, "uid %d got %d ring clients beside root's %d, "
	      "want %d (7/8 of max_clients=8)", UID_B, n, held, 7 - held);
	/* the last eighth is root's */
	for (i = 0; i < MAXC; i++) {
		err = kt_try_connect(&extra[i], 0);
		if (err)
			break;
	}
	CHECK(i == 1 && err == -ENOSPC, "root got %d more ring clients (%s), "
	      "want 1 then ENOSPC", i, h_errname(err));
	while (i--)
		tdbc_close(extra[i]);
	root_still_works("clients in all");
	attack_end(&a);
	CHECK(klog_has("max-clients; the last eighth is kept for root"),
	      "no kernel log line names max_clients");
	set_param("max_clients", 1024);
	set_param("max_clients_per_uid", 64);
	gauges_return("clients in all");
	printf("limits: max_clients=8: others stop at 7 (ENOSPC), root gets "
	       "the 8th\n");
}

/* --- transaction memory ------------------------------------------------- */

/* Buffer VAL-byte puts in a new transaction until refused: the count.
 * err: the refusal; the transaction stays open (in *out). */
static int fill_txn(struct tdbc *c, struct tdbc_txn **out, int *err,
		    int max)
{
	static char val[VAL];
	struct tdbc_table *t = kt_open(c, "lt_pub");
	char key[32];
	int n = 0;

	memset(val, 'x', sizeof(val));
	*err = tdbc_txn_begin(c, out);
	CHECK(*err == 0, "txn begin: %s (%s)", h_errname(*err),
	      tdbc_errmsg(c));
	while (n < max) {
		snprintf(key, sizeof(key), "t%d", n);
		*err = tdbc_put(t, *out, key, strlen(key), val, sizeof(val),
				0);
		if (*err)
			break;
		n++;
	}
	tdbc_table_close(t);
	return n;
}

struct txn_attack {
	int want_err;           /* the refusal */
	const char *param;      /* named in its message */
	int min, max;           /* puts it must get */
	bool again;             /* abort, then fill again */
};

static int txn_attack(void *arg)
{
	const struct txn_attack *ta = arg;
	struct tdbc *c = kt_connect(0), *c2;
	struct tdbc_txn *x, *x2;
	int n, n2, err;

	n = fill_txn(c, &x, &err, 1000);
	CHECK(err == ta->want_err, "uid %u: txn put %d: %s, want %s (%s)",
	      (unsigned int)getuid(), n + 1, h_errname(err),
	      h_errname(ta->want_err), tdbc_errmsg(c));
	CHECK(strstr(tdbc_errmsg(c), limit_name(ta->param)),
	      "the refusal does not name "
	      "%s: \"%s\"", ta->param, tdbc_errmsg(c));
	CHECK(n >= ta->min && n <= ta->max, "%d puts of %d bytes before %s, "
	      "want %d..%d", n, VAL, ta->param, ta->min, ta->max);
	if (!ta->again)
		return n;
	/* the bound is the uid's: another connection gets nothing */
	c2 = kt_connect(0);
	n2 = fill_txn(c2, &x2, &err, 1000);
	CHECK(n2 == 0 && err == ta->want_err, "a second connection of the "
	      "uid buffered %d (%s)", n2, h_errname(err));
	tdbc_close(c2);
	/* an abort gives it back */
	CHECK(tdbc_txn_abort(x) == 0, "abort");
	n2 = fill_txn(c, &x, &err, 1000);
	CHECK(n2 == n && err == ta->want_err, "after an abort: %d puts (%s), "
	      "before %d", n2, h_errname(err), n);
	return n;
}

/* Root buffers n values in a transaction and commits them. */
static void root_txn(int n, const char *why)
{
	struct tdbc_txn *x;
	int got, err;

	got = fill_txn(root, &x, &err, n);
	CHECK(got == n, "%s: root buffered %d of %d: %s (%s)", why, got, n,
	      h_errname(err), tdbc_errmsg(root));
	err = tdbc_txn_commit(x);
	CHECK(err == 0, "%s: root commit: %s", why, h_errname(err));
}

static void round_txn_per_uid(void)
{
	struct txn_attack ta = { -EDQUOT, "max_txn_memory_per_uid",
				 8, 16, true };
	struct tdbc_stats st;
	struct attacker a;

	int n;

	set_param("max_txn_memory_per_uid", 1);        /* MiB */
	n = attack_start(&a, UID_A, txn_attack, &ta);
	stats(&st);
	CHECK(st.txns == base.txns + 1, "txns %u, base %u", st.txns,
	      base.txns);
	root_txn(32, "txn per uid");    /* 2 MiB: root is exempt */
	root_still_works("txn per uid");
	attack_end(&a);
	set_param("max_txn_memory_per_uid", 256);
	gauges_return("txn per uid");
	printf("limits: max_txn_memory_per_uid=1 holds (EDQUOT after %d "
	       "puts of %d bytes) across transactions and connections; "
	       "root exempt\n", n, VAL);
}

static int txn_second(void *arg)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_txn *x;
	int n, err;

	(void)arg;
	n = fill_txn(c, &x, &err, 1000);
	CHECK(n == 0 && err == -ENOBUFS, "a second uid beside a full "
	      "max_txn_memory buffered %d (%s)", n, h_errname(err));
	return n;
}

static void round_txn_global(void)
{
	/* 4 MiB in all: others stop at 3.5 MiB (55 puts) */
	struct txn_attack ta = { -ENOBUFS, "max_txn_memory", 40, 56, false };
	struct attacker a, b;

	int n;

	set_param("max_txn_memory_per_uid", 0);
	set_param("max_txn_memory", 4);
	n = attack_start(&a, UID_B, txn_attack, &ta);
	attack_start(&b, UID_A, txn_second, NULL);
	attack_end(&b);
	root_txn(5, "txn in all");      /* 320 KiB of the last eighth */
	root_still_works("txn in all");
	attack_end(&a);
	set_param("max_txn_memory", 1024);
	set_param("max_txn_memory_per_uid", 256);
	gauges_return("txn in all");
	printf("limits: max_txn_memory=4: others stop at 7/8 (ENOBUFS after "
	       "%d puts of %d bytes), root buffers in the last eighth\n", n,
	       VAL);
}

/* --- a client's transactions (max_txns, max_txn_ops, max_txn_bytes) ---- */

static void refused(int err, int want, const char *param)
{
	CHECK(err == want, "past %s: %s, want %s", param, h_errname(err),
	      h_errname(want));
	CHECK(strstr(tdbc_errmsg(root), limit_name(param)),
	      "the refusal does not name "
	      "%s: \"%s\"", param, tdbc_errmsg(root));
}

static void round_txn_caps(void)
{
	static char val[VAL];
	struct tdbc_table *t = kt_open(root, "lt_pub");
	struct tdbc_txn *x[3];
	int i;

	CHECK(try_param("max_txns", "0") == EINVAL, "max_txns=0 taken");
	CHECK(try_param("max_txns", "1025") == EINVAL, "max_txns=1025");
	CHECK(try_param("max_txn_bytes", "1023") == EINVAL,
	      "max_txn_bytes=1023 taken");
	set_param("max_txns", 2);
	for (i = 0; i < 2; i++)
		CHECK(tdbc_txn_begin(root, &x[i]) == 0, "begin %d", i);
	refused(tdbc_txn_begin(root, &x[2]), -EBUSY, "max_txns");
	CHECK(tdbc_txn_abort(x[1]) == 0, "abort");
	set_param("max_txn_ops", 3);
	for (i = 0; i < 3; i++)
		CHECK(tdbc_put(t, x[0], "o", 1, "v", 1, 0) == 0, "put %d", i);
	refused(tdbc_put(t, x[0], "o", 1, "v", 1, 0), -E2BIG, "max_txn_ops");
	CHECK(tdbc_txn_abort(x[0]) == 0, "abort");
	set_param("max_txn_bytes", 100000);
	CHECK(tdbc_txn_begin(root, &x[0]) == 0, "begin");
	CHECK(tdbc_put(t, x[0], "b", 1, val, sizeof(val), 0) == 0, "put");
	refused(tdbc_put(t, x[0], "c", 1, val, sizeof(val), 0), -E2BIG,
		"max_txn_bytes");
	CHECK(tdbc_txn_abort(x[0]) == 0, "abort");
	tdbc_table_close(t);
	set_param("max_txns", 16);
	set_param("max_txn_ops", 65536);
	set_param("max_txn_bytes", 64u << 20);
	gauges_return("txn caps");
	printf("limits: max_txns=2 (EBUSY), max_txn_ops=3 and "
	       "max_txn_bytes=100000 (E2BIG) hold\n");
}

/* --- watches ------------------------------------------------------------ */

static void round_watches(void)
{
	struct tdbc_table *t = kt_open(root, "lt_pub");
	struct tdbc_watch *w[5];
	int i, err;

	set_param("max_watches", 4);
	for (i = 0; i < 4; i++) {
		char p[4] = { 'w', (char)('0' + i) };

		err = tdbc_watch(t, p, 2, &w[i]);
		CHECK(err == 0, "watch %d: %s", i + 1, h_errname(err));
	}
	err = tdbc_watch(t, "w4", 2, &w[4]);
	CHECK(err == -EMFILE, "watch 5 of max_watches=4: %s, want EMFILE",
	      h_errname(err));
	CHECK(strstr(tdbc_errmsg(root), "max-watches"), "the refusal does "
	      "not name max_watches: \"%s\"", tdbc_errmsg(root));
	tdbc_watch_close(w[3]);
	err = tdbc_watch(t, "w4", 2, &w[3]);
	CHECK(err == 0, "a watch after an unwatch: %s", h_errname(err));
	for (i = 0; i < 4; i++)
		tdbc_watch_close(w[i]);
	tdbc_table_close(t);
	set_param("max_watches", 1024);
	gauges_return("watches");
	printf("limits: max_watches=4 holds (EMFILE)\n");
}

/* --- ring memory (issue 25, item 6) ------------------------------------ */

/* Both rings of a raw ATTACH of RING_DATA bytes each, and their header
 * pages: what one counts per uid and in max_memory_mb. */
#define RING_DATA  (1u << 20)
#define RING_BYTES (2ull * (RING_DATA + 4096))
#define MAXR       48           /* raw attaches an attacker tries */

/* Open /dev/tdb and ATTACH rings of data bytes each: the fd or -errno. */
static int raw_attach(unsigned int data)
{
	struct tdb_dev_attach at;
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC), err;

	CHECK(fd >= 0, "open %s: %s", TDB_DEV_PATH, strerror(errno));
	memset(&at, 0, sizeof(at));
	at.version = TDB_DEV_VERSION;
	at.sq_data_size = data;
	at.cq_data_size = data;
	if (ioctl(fd, TDB_IOC_ATTACH, &at) == 0)
		return fd;
	err = -errno;
	close(fd);
	return err;
}

/* ATTACH RING_DATA rings until refused (held until the child exits):
 * the count.  *(int *)arg: the errno the refusal must be. */
static int rings_attack(void *arg)
{
	int want_err = *(int *)arg, fds[MAXR], n = 0, err = 0;

	while (n < MAXR && (err = raw_attach(RING_DATA)) >= 0)
		fds[n++] = err;
	CHECK(n < MAXR, "uid %u attached %d x %llu bytes of rings and was "
	      "never refused", (unsigned int)getuid(), n, RING_BYTES);
	CHECK(err == want_err, "uid %u: ATTACH %d: %s, want %s",
	      (unsigned int)getuid(), n + 1, h_errname(err),
	      h_errname(want_err));
	if (n > 0) {
		/* closing one gives its memory back */
		close(fds[n - 1]);
		fds[n - 1] = raw_attach(RING_DATA);
		CHECK(fds[n - 1] >= 0, "reattach after a close: %s",
		      h_errname(fds[n - 1]));
	}
	return n;
}

static void round_rings_per_uid(void)
{
	int want_err = -EDQUOT, n, fd;
	struct attacker a;

	/* 8 MiB: 3 attaches of 2 MiB + 8 KiB fit, the 4th does not */
	set_param("max_ring_memory_per_uid", 8);
	n = attack_start(&a, UID_A, rings_attack, &want_err);
	CHECK(n == 3 && n * RING_BYTES <= (8u << 20),
	      "uid %d attached %d x %llu bytes of rings, "
	      "max_ring_memory_per_uid=8 MiB allows 3", UID_A, n, RING_BYTES);
	/* root is exempt: 2 x 64 MiB */
	fd = raw_attach(TDB_DEV_RING_MAX);
	CHECK(fd >= 0, "root's 2 x 64 MiB rings: %s", h_errname(fd));
	close(fd);
	root_still_works("rings per uid");
	attack_end(&a);
	CHECK(klog_has("max-ring-memory-per-uid"), "no kernel log line "
	      "names max-ring-memory-per-uid");
	set_param("max_ring_memory_per_uid", 512);
	gauges_return("rings per uid");
	printf("limits: max_ring_memory_per_uid=8 holds (EDQUOT after %d x "
	       "%llu bytes), root exempt\n", n, RING_BYTES);
}

/*
 * max_memory_mb bounds the rings with the tables: another uid is
 * refused (ENOBUFS) once the rings would pass 7/8 of it, whatever the
 * tables and root's rings hold already; root then fills the last
 * eighth: 3 or 4 more (8 MiB from where the other uid stopped, which is
 * less than one attach below 7/8), then ENOBUFS too.
 */
static void round_rings_global(void)
{
	int want_err = -ENOBUFS, fds[MAXR], n, k = 0, got, err = 0;
	struct attacker a;

	set_param("max_clients_per_uid", 0);
	set_param("max_ring_memory_per_uid", 0);
	set_param("max_memory_mb", 64);
	n = attack_start(&a, UID_B, rings_attack, &want_err);
	CHECK(n >= 1 && n * RING_BYTES <= (56u << 20), "uid %d attached %d "
	      "x %llu bytes of rings in max_memory_mb=64, more than 7/8 of "
	      "it", UID_B, n, RING_BYTES);
	while (k < MAXR && (err = raw_attach(RING_DATA)) >= 0)
		fds[k++] = err;
	CHECK((k == 3 || k == 4) && err == -ENOBUFS, "root attached %d more "
	      "(then %s), want 3 or 4 in the last eighth, then ENOBUFS", k,
	      h_errname(err));
	got = k;
	while (k--)
		close(fds[k]);
	attack_end(&a);
	CHECK(klog_has("would pass max_memory_mb=64 (the last eighth is "
		       "kept for root)"), "no kernel log line names "
	      "max_memory_mb and root's eighth");
	set_param("max_memory_mb", 1024);
	set_param("max_ring_memory_per_uid", 512);
	set_param("max_clients_per_uid", 64);
	root_still_works("rings in all");
	gauges_return("rings in all");
	printf("limits: max_memory_mb=64 bounds the rings: uid %d stopped "
	       "at %d x %llu bytes (ENOBUFS), root attached %d more in the "
	       "last eighth\n", UID_B, n, RING_BYTES, got);
}

/* --- watches per uid (issue 25, item 5) --------------------------------- */

/* Watch lt_pub on two connections until refused other than by a
 * connection's max_watches: the count (the refusal must be EDQUOT
 * naming max_watches_per_uid). */
static int watches_attack(void *arg)
{
	struct tdbc *c[2] = { kt_connect(0), kt_connect(0) };
	struct tdbc_table *t[2] = { kt_open(c[0], "lt_pub"),
				    kt_open(c[1], "lt_pub") };
	struct tdbc_watch *w[8];
	int n = 0, i = 0, j = 0, err = 0;
	char p[32];

	(void)arg;
	for (;;) {
		snprintf(p, sizeof(p), "%d.%d", i, j);
		err = tdbc_watch(t[i], p, strlen(p), &w[n]);
		if (err == -EMFILE && i == 0) {
			i = 1;          /* a connection's max_watches */
			j = 0;
			continue;
		}
		if (err || ++n == 8)
			break;
		j++;
	}
	CHECK(err == -EDQUOT && strstr(tdbc_errmsg(c[i]),
				       "max-watches-per-uid"),
	      "uid %u: watch %d: %s (\"%s\"), want EDQUOT naming "
	      "max-watches-per-uid", (unsigned int)getuid(), n + 1,
	      h_errname(err), tdbc_errmsg(c[i]));
	/* an UNWATCH gives one back (w[n - 1] is on c[i]) */
	tdbc_watch_close(w[n - 1]);
	err = tdbc_watch(t[i], "again", 5, &w[n - 1]);
	CHECK(err == 0, "a watch after an UNWATCH: %s", h_errname(err));
	return n;
}

static void round_watches_per_uid(void)
{
	struct attacker a;
	int n;

	set_param("max_watches", 4);
	set_param("max_watches_per_uid", 6);
	n = attack_start(&a, UID_A, watches_attack, NULL);
	CHECK(n == 6, "uid %d made %d watches on 2 connections, "
	      "max_watches_per_uid=6", UID_A, n);
	root_still_works("watches per uid");
	attack_end(&a);
	set_param("max_watches_per_uid", 4096);
	set_param("max_watches", 1024);
	gauges_return("watches per uid");
	printf("limits: max_watches_per_uid=6 holds across connections "
	       "(EDQUOT)\n");
}

int main(void)
{
	static const char *const names[] = {
		"max_clients", "max_clients_per_uid", "max_tables_per_uid",
		"max_txn_memory", "max_txn_memory_per_uid", "max_watches",
		"max_tables", "max_txns", "max_txn_ops", "max_txn_bytes",
	};
	static const unsigned int defaults[] = { 1024, 64, 256, 1024, 256,
						 1024, 4000, 16, 65536,
						 64u << 20 };
	struct tdbc_table *t;
	struct stat st;
	unsigned int i;

	kt_init("limits", 600);
	kt_need_kernel();
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(get_param(names[i]) == defaults[i], "%s is %u, its "
		      "default is %u", names[i], get_param(names[i]),
		      defaults[i]);
	root = kt_connect(0);
	kt_create(root, "lt_pub", 0666, 0);
	t = kt_open(root, "lt_pub");
	CHECK(tdbc_put(t, NULL, "pub", 3, "v", 1, 0) == 0, "put");
	tdbc_table_close(t);
	/* the attackers open the device themselves; the limits are what
	 * is tested here, not the node's mode */
	CHECK(stat(TDB_DEV_PATH, &st) == 0, "stat");
	CHECK(chmod(TDB_DEV_PATH, 0666) == 0, "chmod");
	stats(&base);

	round_tables();
	round_tables_global();
	round_clients_per_uid();
	round_clients_global();
	round_txn_per_uid();
	round_txn_global();
	round_txn_caps();
	round_watches();
	round_watches_per_uid();
	round_rings_per_uid();
	round_rings_global();

	chmod(TDB_DEV_PATH, st.st_mode & 07777);
	CHECK(tdbc_table_drop(root, "lt_pub") == 0, "drop lt_pub");
	tdbc_close(root);
	kt_done();
	return 0;
}
