// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_snapshot.c - snapshot scans (SCAN with TDB_SCAN_SNAPSHOT,
 * tdbc_scan_open_flags(TDBC_SCAN_SNAPSHOT)): the table exactly as it was
 * when the scan was opened, while writers go on.
 *
 *  - concurrent: N keys loaded; a snapshot scan is opened and read
 *    slowly while 3 writer processes overwrite, delete, re-insert, commit
 *    transactions and add new keys; the first part of the walk is read
 *    before the writers start, and the last part only after they are all
 *    done, so changes land both behind and ahead of the walk.  The scan
 *    must return every initial key once, with its initial value, and no
 *    other key; afterwards the live table must show the writers' changes
 *    (they really happened during the scan).  Over rings and over
 *    TDBC_NO_RINGS (tdb.ko: generic netlink; tdbd: its socket).
 *  - a table dropped during the scan still dumps as it was;
 *  - PREFIX, LIMIT and both, with changes during the scan;
 *  - a CURSOR with a snapshot scan is refused (-EINVAL);
 *  - tdb.ko only: max_snapshot_mb=1 and more changed values than that
 *    end the scan with -ENOBUFS, writers unharmed;
 *  - tdb.ko only: max_snapshot_memory (all snapshots): past it a scan
 *    ends with -ENOBUFS naming it and the key; two scans of one table
 *    share the old values (one copy per change), so two fit where two
 *    copies would not;
 *  - tdb.ko only: max_snapshot_memory_per_uid: an ordinary uid's scan
 *    ends with -ENOBUFS naming it, root's (exempt) does not;
 *  - tdb-dump (when $TDB_KTEST_DUMP names it) dumps the loaded table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include <tdb/client.h>
#include <tdb/proto.h>

#include "kt.h"

#define NW       3              /* writer processes */
#define BIG_KEY  7              /* this key's value is big (deleted) */
#define BIG_LEN  (200u << 10)

static long nkeys;

static int key_of(char *k, size_t cap, long i)
{
	return snprintf(k, cap, "k%05ld", i);
}

/* The initial value of key i (buf: at least BIG_LEN bytes). */
static size_t val0(unsigned char *buf, long i)
{
	size_t len = i == BIG_KEY ? BIG_LEN : 64 + (size_t)(i * 37 % 2500);
	size_t n = (size_t)snprintf((char *)buf, 32, "init-%ld-", i);

	for (; n < len; n++)
		buf[n] = (unsigned char)('a' + (i + (long)n) % 26);
	return len;
}

static long key_index(const void *k, size_t kl)
{
	const char *s = k;
	long i = 0;
	size_t j;

	if (kl != 6 || s[0] != 'k')
		return -1;
	for (j = 1; j < 6; j++) {
		if (s[j] < '0' || s[j] > '9')
			return -1;
		i = i * 10 + (s[j] - '0');
	}
	return i;
}

static void load(struct tdbc *c, const char *table, long n)
{
	unsigned char *v = malloc(BIG_LEN);
	struct tdbc_table *t;
	char k[32];
	long i;

	CHECK(v, "malloc");
	kt_create(c, table, 0600, 0);
	t = kt_open(c, table);
	for (i = 0; i < n; i++) {
		int kl = key_of(k, sizeof(k), i);
		size_t vl = val0(v, i);
		int err = tdbc_put(t, NULL, k, kl, v, vl, 0);

		CHECK(err == 0, "load %s: %s", k, h_errname(err));
	}
	tdbc_table_close(t);
	free(v);
}

/* Checks the records a snapshot scan returns against the initial table. */
struct seen {
	unsigned char *got;     /* per key: returned */
	unsigned char *vbuf;
	long count;
	long n;                 /* keys 0..n-1 were loaded */
};

static void seen_init_n(struct seen *s, long n)
{
	s->n = n;
	s->got = calloc((size_t)n, 1);
	s->vbuf = malloc(BIG_LEN);
	CHECK(s->got && s->vbuf, "malloc");
	s->count = 0;
}

static void seen_init(struct seen *s)
{
	seen_init_n(s, nkeys);
}

static void seen_free(struct seen *s)
{
	free(s->got);
	free(s->vbuf);
}

static void seen_one(struct seen *s, const char *what, const void *k,
		     size_t kl, const void *v, size_t vl)
{
	long i = key_index(k, kl);
	size_t want;

	CHECK(i >= 0 && i < s->n, "%s: a key not in the initial table: "
	      "%.*s (%zu bytes)", what, (int)(kl < 40 ? kl : 40),
	      (const char *)k, kl);
	CHECK(!s->got[i], "%s: key %.*s returned twice", what, (int)kl,
	      (const char *)k);
	s->got[i] = 1;
	s->count++;
	want = val0(s->vbuf, i);
	CHECK(vl == want && !memcmp(v, s->vbuf, vl),
	      "%s: key %.*s has %zu bytes \"%.*s...\", not its initial value "
	      "(%zu bytes)", what, (int)kl, (const char *)k, vl,
	      (int)(vl < 24 ? vl : 24), (const char *)v, want);
}

/* Read up to n records (n < 0: to the end); returns how many were read,
 * -1 at the end. */
static long read_some(struct tdbc *c, struct tdbc_scan *sc, struct seen *s,
		      const char *what, long n, unsigned int nap_every)
{
	const void *k, *v;
	size_t kl, vl;
	long done = 0;
	int err;

	while (n < 0 || done < n) {
		err = tdbc_scan_next(sc, &k, &kl, &v, &vl);
		CHECK(err >= 0, "%s: scan next after %ld records: %s (%s)",
		      what, s->count, h_errname(err), tdbc_errmsg(c));
		if (err == 0)
			return -1;
		seen_one(s, what, k, kl, v, vl);
		done++;
		if (nap_every && done % nap_every == 0)
			h_sleep_ms(1);
	}
	return done;
}

/* --- the writers ---------------------------------------------------------- */

static void put_or_die(struct tdbc_table *t, struct tdbc_txn *x,
		       const char *k, const char *v)
{
	int err = tdbc_put(t, x, k, strlen(k), v, strlen(v), 0);

	CHECK(err == 0, "writer put %s: %s", k, h_errname(err));
}

static void del_or_die(struct tdbc_table *t, struct tdbc_txn *x,
		       const char *k)
{
	int err = tdbc_del(t, x, k, strlen(k));

	CHECK(err == 0, "writer del %s: %s", k, h_errname(err));
}

/* Writer w changes keys w, w + NW, ...: every kind of change. */
static void writer(int w, const char *table, unsigned int flags)
{
	struct tdbc *c = kt_connect(flags);
	struct tdbc_table *t = kt_open(c, table);
	struct tdbc_txn *x;
	char k[32], k2[80], v[96];
	long i;
	int err;

	for (i = w; i < nkeys; i += NW) {
		key_of(k, sizeof(k), i);
		snprintf(v, sizeof(v), "w%d-%ld-new", w, i);
		switch (i % 6) {
		case 0:
			put_or_die(t, NULL, k, v);
			break;
		case 1:
			del_or_die(t, NULL, k);
			break;
		case 2:                 /* several changes: the first wins */
			put_or_die(t, NULL, k, v);
			del_or_die(t, NULL, k);
			put_or_die(t, NULL, k, "again");
			break;
		case 3:
		case 4:
			err = tdbc_txn_begin(c, &x);
			CHECK(err == 0, "txn begin: %s", h_errname(err));
			if (i % 6 == 3)
				put_or_die(t, x, k, v);
			else
				del_or_die(t, x, k);
			snprintf(k2, sizeof(k2), "%s-txn", k);
			put_or_die(t, x, k2, v);
			err = tdbc_txn_commit(x);
			CHECK(err == 0, "txn commit: %s", h_errname(err));
			break;
		default:
			break;          /* unchanged */
		}
		if (i % 4 == 0) {       /* new keys, in and out of prefixes */
			snprintf(k2, sizeof(k2), "%s+", k);
			put_or_die(t, NULL, k2, v);
			snprintf(k2, sizeof(k2), "new-%d-%ld", w, i);
			put_or_die(t, NULL, k2, v);
		}
	}
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

static void wait_writers(pid_t *pids)
{
	int n, status;

	for (n = 0; n < NW; n++) {
		CHECK(waitpid(pids[n], &status, 0) == pids[n], "waitpid");
		h_untrack(pids[n]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "writer %d failed: status %#x", n, status);
	}
}

/* The live table after the writers: their changes are there. */
static void check_changed(struct tdbc *c, const char *table)
{
	struct tdbc_table *t = kt_open(c, table);
	char k[32], v[96];
	long r;

	key_of(k, sizeof(k), 1);                /* case 1: deleted */
	r = tdbc_get(t, NULL, k, strlen(k), v, sizeof(v), NULL);
	CHECK(r == -ENOENT, "%s: deleted by a writer, get gives %ld", k, r);
	key_of(k, sizeof(k), 2);                /* case 2: "again" */
	r = tdbc_get(t, NULL, k, strlen(k), v, sizeof(v), NULL);
	CHECK(r == 5 && !memcmp(v, "again", 5), "%s: get gives %ld", k, r);
	r = tdbc_get(t, NULL, "k00003-txn", 10, v, sizeof(v), NULL);
	CHECK(r > 0, "k00003-txn: get gives %ld", r);
	tdbc_table_close(t);
}

static void round_concurrent(const char *table, unsigned int rflags,
			     unsigned int wflags)
{
	struct tdbc *c = kt_connect(rflags);
	struct tdbc_table *t;
	struct tdbc_scan *sc;
	struct seen s;
	pid_t pids[NW];
	char what[96];
	long part = nkeys / 5;
	int n, err;

	snprintf(what, sizeof(what), "%s (reader %#x, writers %#x)", table,
		 rflags, wflags);
	load(c, table, nkeys);
	t = kt_open(c, table);
	err = tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &sc);
	CHECK(err == 0, "%s: snapshot scan: %s", what, h_errname(err));
	seen_init(&s);
	/* before any change */
	CHECK(read_some(c, sc, &s, what, part, 0) == part,
	      "%s: the table ended early", what);
	for (n = 0; n < NW; n++) {
		pids[n] = fork();
		CHECK(pids[n] >= 0, "fork");
		if (pids[n] == 0)
			writer(n, table, wflags);
		h_track(pids[n]);
	}
	/* slowly, while they write */
	CHECK(read_some(c, sc, &s, what, part, 16) == part,
	      "%s: the table ended early", what);
	/* the rest once every change is made */
	wait_writers(pids);
	read_some(c, sc, &s, what, -1, 0);
	tdbc_scan_close(sc);
	CHECK(s.count == nkeys, "%s: %ld records, want the %ld of the "
	      "initial table", what, s.count, nkeys);
	seen_free(&s);
	check_changed(c, table);
	tdbc_table_close(t);
	err = tdbc_table_drop(c, table);
	CHECK(err == 0, "drop %s: %s", table, h_errname(err));
	tdbc_close(c);
	h_note("%s: %ld records as they were, %d writers", what, nkeys, NW);
}

/* Dropped during the scan: it still dumps as it was. */
static void round_drop(void)
{
	struct tdbc *c = kt_connect(0), *w = kt_connect(TDBC_NO_RINGS);
	struct tdbc_table *t, *wt;
	struct tdbc_scan *sc;
	struct seen s;
	char k[32];
	long i;
	int err;

	load(c, "snap_drop", nkeys);
	t = kt_open(c, "snap_drop");
	err = tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &sc);
	CHECK(err == 0, "snapshot scan: %s", h_errname(err));
	seen_init(&s);
	read_some(c, sc, &s, "snap_drop", 10, 0);
	wt = kt_open(w, "snap_drop");
	for (i = 0; i < nkeys; i += 2) {
		key_of(k, sizeof(k), i);
		err = i % 4 ? tdbc_del(wt, NULL, k, strlen(k)) :
			      tdbc_put(wt, NULL, k, strlen(k), "x", 1, 0);
		CHECK(err == 0, "change %s: %s", k, h_errname(err));
	}
	tdbc_table_close(wt);
	err = tdbc_table_drop(w, "snap_drop");
	CHECK(err == 0, "drop: %s", h_errname(err));
	read_some(c, sc, &s, "snap_drop", -1, 0);
	tdbc_scan_close(sc);
	CHECK(s.count == nkeys, "dropped table: %ld records, want %ld",
	      s.count, nkeys);
	seen_free(&s);
	tdbc_table_close(t);
	tdbc_close(w);
	tdbc_close(c);
}

/* PREFIX / LIMIT, with every key of the table changed during the scan. */
static void one_bounded(struct tdbc *c, struct tdbc *w, const char *pfx,
			uint64_t limit, long want)
{
	struct tdbc_table *t = kt_open(c, "snap_pl");
	struct tdbc_table *wt = kt_open(w, "snap_pl");
	struct tdbc_scan *sc;
	struct seen s;
	char what[64], k[32];
	size_t plen = pfx ? strlen(pfx) : 0;
	long i;
	int err;

	snprintf(what, sizeof(what), "prefix \"%s\" limit %llu",
		 pfx ? pfx : "", (unsigned long long)limit);
	err = tdbc_scan_open_flags(t, pfx, plen, limit, TDBC_SCAN_SNAPSHOT,
				   &sc);
	CHECK(err == 0, "%s: snapshot scan: %s", what, h_errname(err));
	seen_init(&s);
	read_some(c, sc, &s, what, 3, 0);
	/* every key: deleted, then re-put with another value; new keys */
	for (i = 0; i < nkeys; i++) {
		key_of(k, sizeof(k), i);
		err = tdbc_del(wt, NULL, k, strlen(k));
		CHECK(err == 0, "del %s: %s", k, h_errname(err));
		err = tdbc_put(wt, NULL, k, strlen(k), "changed", 7, 0);
		CHECK(err == 0, "put %s: %s", k, h_errname(err));
		if (i % 10 == 0) {
			snprintf(k, sizeof(k), "k%05ldz", i);
			err = tdbc_put(wt, NULL, k, strlen(k), "new", 3, 0);
			CHECK(err == 0, "put %s: %s", k, h_errname(err));
		}
	}
	read_some(c, sc, &s, what, -1, 0);
	tdbc_scan_close(sc);
	CHECK(s.count == want, "%s: %ld records, want %ld", what, s.count,
	      want);
	for (i = 0; i < nkeys; i++) {
		key_of(k, sizeof(k), i);
		CHECK(!s.got[i] || !plen || !memcmp(k, pfx, plen),
		      "%s: %s is outside the prefix", what, k);
	}
	seen_free(&s);
	/* back to the initial table for the next one */
	tdbc_table_close(wt);
	tdbc_table_close(t);
	err = tdbc_table_drop(c, "snap_pl");
	CHECK(err == 0, "drop: %s", h_errname(err));
	load(c, "snap_pl", nkeys);
}

static void round_prefix_limit(void)
{
	struct tdbc *c = kt_connect(0), *w = kt_connect(0);

	load(c, "snap_pl", nkeys);
	one_bounded(c, w, "k001", 0, 100);
	one_bounded(c, w, NULL, 30, 30);
	one_bounded(c, w, "k002", 10, 10);
	one_bounded(c, w, "k0009", 0, 10);
	CHECK(tdbc_table_drop(c, "snap_pl") == 0, "drop snap_pl");
	tdbc_close(w);
	tdbc_close(c);
}

/* --- CURSOR refused ------------------------------------------------------- */

static void cursor_refused(void)
{
	static const unsigned char cursor[] = { 1, 'k', '0' };
	struct tdbc *c = kt_connect(0);
	char msg[256] = "";
	int err;

	kt_create(c, "snap_cur", 0600, 0);
	tdbc_close(c);
	if (kt_kernel) {
		char buf[1024] __attribute__((aligned(4)));
		struct kt_genl g;
		struct nlmsghdr *nlh;

		kt_genl_open(&g);
		nlh = kt_genl_msg(&g, buf, TDB_CMD_SCAN, NLM_F_DUMP);
		mnl_attr_put_strz(nlh, TDB_A_TABLE, "snap_cur");
		mnl_attr_put_u32(nlh, TDB_A_SCAN_FLAGS, TDB_SCAN_SNAPSHOT);
		mnl_attr_put(nlh, TDB_A_CURSOR, sizeof(cursor), cursor);
		err = kt_genl_call(&g, nlh, msg, sizeof(msg));
		kt_genl_close(&g);
	} else {
		struct tdb_proto_msg m = {
			.cmd = TDB_CMD_SCAN,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
				 TDB_PROTO_BIT(TDB_A_SCAN_FLAGS) |
				 TDB_PROTO_BIT(TDB_A_CURSOR),
			.table = "snap_cur", .table_len = 8,
			.scan_flags = TDB_SCAN_SNAPSHOT,
			.cursor = cursor, .cursor_len = sizeof(cursor),
		};
		struct h_raw r;
		char sock[256];

		h_path(sock, sizeof(sock), "kt.sock");
		h_raw_connect(&r, sock);
		err = h_raw_call(&r, &m, NULL, NULL, NULL, msg, sizeof(msg));
		h_raw_close(&r);
	}
	/* The cursor is well formed (a plain SCAN takes it), so EINVAL is
	 * the snapshot's refusal.  On 6.1 a genl dump refused at its start
	 * loses its message (docs/KERNEL.md), so tdb.ko's may be empty. */
	CHECK(err == -EINVAL && (strstr(msg, "CURSOR") ||
				 (kt_kernel && !msg[0])),
	      "snapshot scan with a CURSOR: %s \"%s\", want EINVAL naming it",
	      h_errname(err), msg);
	c = kt_connect(0);
	CHECK(tdbc_table_drop(c, "snap_cur") == 0, "drop snap_cur");
	tdbc_close(c);
}

/* --- the bound (tdb.ko: max_snapshot_mb) ---------------------------------- */

#define SNAP_PARAM "/sys/module/tdb/parameters/max_snapshot_mb"

static void set_tdb_param(const char *name, const char *v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/tdb/parameters/%s", name);
	f = fopen(path, "w");
	CHECK(f, "%s: %s", path, strerror(errno));
	CHECK(fputs(v, f) >= 0 && fclose(f) == 0, "write %s", path);
}

static void set_param(const char *v)
{
	set_tdb_param("max_snapshot_mb", v);
}

/*
 * The bound's table: 12000 keys of 64..2563 bytes, about 15.8 MB.  The
 * walk runs ahead of the reader by what the client pulls at a scan's
 * open (about 4 MiB through generic netlink, kdev.c) plus what the
 * socket holds, so only the keys past that need old values kept: with
 * the 4000 keys of the other rounds (5.4 MB) that was about 1.2 MB, a
 * hair over the 1 MiB bound, and one run in six finished the scan
 * (CI, 2026-12-07).  At 15.8 MB some 10 MB of old values are needed.
 */
#define BOUND_KEYS 12000L

static void round_bound(void)
{
	struct tdbc *c = kt_connect(TDBC_NO_RINGS), *w = kt_connect(0);
	struct tdbc_table *t, *wt;
	struct tdbc_scan *sc;
	struct seen s;
	const void *k, *v;
	size_t kl, vl;
	char key[32];
	long i, n = BOUND_KEYS;
	int err;

	load(c, "snap_bound", n);
	set_param("1");
	t = kt_open(c, "snap_bound");
	err = tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &sc);
	set_param("256");
	CHECK(err == 0, "snapshot scan: %s", h_errname(err));
	seen_init_n(&s, n);
	read_some(c, sc, &s, "snap_bound", 1, 0);
	/* more than 1 MiB of old values; the writer must not notice */
	wt = kt_open(w, "snap_bound");
	for (i = 0; i < n; i++) {
		key_of(key, sizeof(key), i);
		err = tdbc_put(wt, NULL, key, strlen(key), "x", 1, 0);
		CHECK(err == 0, "put %s with a broken snapshot: %s", key,
		      h_errname(err));
	}
	tdbc_table_close(wt);
	while ((err = tdbc_scan_next(sc, &k, &kl, &v, &vl)) == 1)
		seen_one(&s, "snap_bound", k, kl, v, vl);
	CHECK(err == -ENOBUFS, "a snapshot past max_snapshot_mb=1 ended "
	      "with %s after %ld records, want ENOBUFS", h_errname(err),
	      s.count);
	tdbc_scan_close(sc);
	seen_free(&s);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "snap_bound") == 0, "drop snap_bound");
	tdbc_close(w);
	tdbc_close(c);
}

/* --- snapshot memory: in all, shared, per uid (tdb.ko) --------------------- */

/*
 * SK keys of SVAL bytes, 16 MiB.  A client reads ahead of the reader: a
 * snapshot scan's open pulls up to ~4 MB (a 4 MiB ring; generic netlink:
 * up to 128 socket reads of at most 32 KiB; ~260 of these records
 * measured), and the walk sends those keys unchanged, so they need no
 * old value.  The table is big enough that about 12 MB of it is still
 * ahead of each walk when the writer changes every key: one copy of the
 * old values is at most ~17 MB with the snapshots' maps, a copy per
 * snapshot of two about 25 MB.  (With sharing taken out of snap.c, the
 * 20 MiB case fails.)
 */
#define SK   1024
#define SVAL 16384

static void skey(char *k, size_t cap, int i)
{
	snprintf(k, cap, "s%05d", i);   /* 6 bytes */
}

static void sval(unsigned char *v, int i)
{
	int n;

	for (n = 0; n < SVAL; n++)
		v[n] = (unsigned char)('A' + (i * 7 + n) % 26);
}

static void sload(struct tdbc *c, const char *table)
{
	unsigned char v[SVAL];
	struct tdbc_table *t;
	char k[16];
	int i, err;

	kt_create(c, table, 0644, 0);
	t = kt_open(c, table);
	for (i = 0; i < SK; i++) {
		skey(k, sizeof(k), i);
		sval(v, i);
		err = tdbc_put(t, NULL, k, strlen(k), v, SVAL, 0);
		CHECK(err == 0, "load %s: %s", k, h_errname(err));
	}
	tdbc_table_close(t);
}

/* Every key overwritten: the writer must never notice the snapshots. */
static void soverwrite(const char *table)
{
	struct tdbc *w = kt_connect(0);
	struct tdbc_table *t = kt_open(w, table);
	char k[16];
	int i, err;

	for (i = 0; i < SK; i++) {
		skey(k, sizeof(k), i);
		err = tdbc_put(t, NULL, k, strlen(k), "x", 1, 0);
		CHECK(err == 0, "%s: put %s with snapshots open: %s", table,
		      k, h_errname(err));
	}
	tdbc_table_close(t);
	tdbc_close(w);
}

/* Read a snapshot scan of an sload()ed table to its end: the number of
 * records (all with their initial values), *end the result (0 or the
 * error that ended it). */
static int sread(struct tdbc_scan *sc, const char *what, int *end)
{
	unsigned char want[SVAL];
	unsigned char seen[SK] = { 0 };
	const void *k, *v;
	size_t kl, vl;
	int n = 0, err, i;

	while ((err = tdbc_scan_next(sc, &k, &kl, &v, &vl)) == 1) {
		CHECK(kl == 6 && ((const char *)k)[0] == 's', "%s: key %.*s",
		      what, (int)kl, (const char *)k);
		i = atoi((const char *)k + 1);
		CHECK(i >= 0 && i < SK && !seen[i], "%s: key %.*s unknown "
		      "or twice", what, (int)kl, (const char *)k);
		seen[i] = 1;
		sval(want, i);
		CHECK(vl == SVAL && !memcmp(v, want, SVAL), "%s: key %.*s "
		      "has %zu bytes, not its initial value", what, (int)kl,
		      (const char *)k, vl);
		n++;
	}
	*end = err;
	return n;
}

static struct tdbc_scan *sopen(struct tdbc *c, struct tdbc_table **t,
			       const char *table)
{
	struct tdbc_scan *sc;
	int err;

	*t = kt_open(c, table);
	err = tdbc_scan_open_flags(*t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &sc);
	CHECK(err == 0, "%s: snapshot scan: %s", table, h_errname(err));
	return sc;
}

static void round_memory_shared(void)
{
	struct tdbc *c = kt_connect(TDBC_NO_RINGS), *c2;
	struct tdbc_table *t, *t2;
	struct tdbc_scan *sc, *sc2;
	int n, n2, end, end2;

	/* 1 MiB for all snapshots: one scan's >= 12 MiB of old values fail
	 * it */
	sload(c, "snap_mem");
	set_tdb_param("max_snapshot_memory", "1");
	sc = sopen(c, &t, "snap_mem");
	soverwrite("snap_mem");
	n = sread(sc, "snap_mem", &end);
	CHECK(end == -ENOBUFS && strstr(tdbc_errmsg(c), "max-snapshot-memory")
	      && strstr(tdbc_errmsg(c), "at key 's0"),
	      "a snapshot past max_snapshot_memory=1 ended with %s \"%s\" "
	      "after %d records, want ENOBUFS naming the bound and the key",
	      h_errname(end), tdbc_errmsg(c), n);
	tdbc_scan_close(sc);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "snap_mem") == 0, "drop snap_mem");

	/* 20 MiB: two scans of one table fit with one shared copy
	 * (<= ~17 MB), not with a copy each (>= ~25 MB) */
	sload(c, "snap_mem");
	set_tdb_param("max_snapshot_memory", "20");
	c2 = kt_connect(TDBC_NO_RINGS);
	sc = sopen(c, &t, "snap_mem");
	sc2 = sopen(c2, &t2, "snap_mem");
	soverwrite("snap_mem");
	n = sread(sc, "snap_mem 1 of 2", &end);
	n2 = sread(sc2, "snap_mem 2 of 2", &end2);
	set_tdb_param("max_snapshot_memory", "1024");
	CHECK(end == 0 && end2 == 0 && n == SK && n2 == SK, "two snapshot "
	      "scans sharing old values under max_snapshot_memory=20: %d "
	      "records (%s \"%s\") and %d (%s \"%s\"), want %d each", n,
	      h_errname(end), tdbc_errmsg(c), n2, h_errname(end2),
	      tdbc_errmsg(c2), SK);
	tdbc_scan_close(sc2);
	tdbc_scan_close(sc);
	tdbc_table_close(t2);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "snap_mem") == 0, "drop snap_mem");
	tdbc_close(c2);
	tdbc_close(c);
	h_note("max_snapshot_memory: 1 MiB fails a scan of 16 MiB; two "
	       "scans share one copy in 20 MiB");
}

#define SNAP_UID 65534

/* Uid SNAP_UID's scan under max_snapshot_memory_per_uid=1: opened,
 * then (once the parent has changed every key) read to its end. */
static void uid_scanner(int ready, int go)
{
	struct tdbc *c;
	struct tdbc_table *t;
	struct tdbc_scan *sc;
	int n, end;
	char b = 0;

	CHECK(setgroups(0, NULL) == 0 && setresgid(SNAP_UID, SNAP_UID,
						   SNAP_UID) == 0 &&
	      setresuid(SNAP_UID, SNAP_UID, SNAP_UID) == 0,
	      "dropping to %d: %s", SNAP_UID, strerror(errno));
	c = kt_connect(TDBC_NO_RINGS);
	sc = sopen(c, &t, "snap_uid");
	CHECK(write(ready, &b, 1) == 1, "write");
	CHECK(read(go, &b, 1) == 1, "read");
	n = sread(sc, "snap_uid (uid 65534)", &end);
	CHECK(end == -ENOBUFS &&
	      strstr(tdbc_errmsg(c), "max-snapshot-memory-per-uid") &&
	      strstr(tdbc_errmsg(c), "at key 's0"),
	      "uid %d: a snapshot past max_snapshot_memory_per_uid=1 ended "
	      "with %s \"%s\" after %d records, want ENOBUFS naming the "
	      "bound and the key", SNAP_UID, h_errname(end),
	      tdbc_errmsg(c), n);
	tdbc_scan_close(sc);
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

static void round_memory_per_uid(void)
{
	struct tdbc *c = kt_connect(TDBC_NO_RINGS);
	struct tdbc_table *t;
	struct tdbc_scan *sc;
	int up[2], down[2], n, end, status;
	pid_t pid;
	char b;

	set_tdb_param("max_snapshot_memory_per_uid", "1");
	/* root is exempt: its >= 12 MiB of old values go through */
	sload(c, "snap_uid");
	sc = sopen(c, &t, "snap_uid");
	soverwrite("snap_uid");
	n = sread(sc, "snap_uid (root)", &end);
	CHECK(end == 0 && n == SK, "root under max_snapshot_memory_per_uid"
	      "=1: %d records, %s \"%s\", want %d", n, h_errname(end),
	      tdbc_errmsg(c), SK);
	tdbc_scan_close(sc);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "snap_uid") == 0, "drop snap_uid");

	/* an ordinary uid's is stopped by its bound */
	sload(c, "snap_uid");
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		uid_scanner(up[1], down[0]);
	}
	h_track(pid);
	close(up[1]);
	close(down[0]);
	CHECK(read(up[0], &b, 1) == 1, "the uid %d scanner died", SNAP_UID);
	soverwrite("snap_uid");
	CHECK(write(down[1], &b, 1) == 1, "write");
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	close(up[0]);
	close(down[1]);
	set_tdb_param("max_snapshot_memory_per_uid", "512");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the uid %d scanner failed: status %#x", SNAP_UID, status);
	CHECK(tdbc_table_drop(c, "snap_uid") == 0, "drop snap_uid");
	tdbc_close(c);
	h_note("max_snapshot_memory_per_uid: uid %d's scan stopped at 1 MiB, "
	       "root's exempt", SNAP_UID);
}

/* --- tdb-dump --------------------------------------------------------------- */

static void round_tdb_dump(const char *exe)
{
	struct tdbc *c = kt_connect(0);
	char out[512], cmd[1536], sock[256], line[128];
	unsigned char *v = malloc(BIG_LEN);
	char *hex = malloc(2 * BIG_LEN + 8);
	long items = 0;
	FILE *f;
	int rc;

	CHECK(v && hex, "malloc");
	load(c, "snap_dump", nkeys);
	h_path(out, sizeof(out), "snap_dump.txt");
	h_path(sock, sizeof(sock), "kt.sock");
	snprintf(cmd, sizeof(cmd), "%s -q -M -s snap_dump -f %s %s%s", exe,
		 out, kt_kernel ? "" : "-S ", kt_kernel ? "" : sock);
	rc = system(cmd);
	CHECK(rc == 0, "%s: status %#x", cmd, rc);
	f = fopen(out, "r");
	CHECK(f, "%s: %s", out, strerror(errno));
	/* header lines, then " key\n value\n" pairs (bytevalue: hex) */
	while (fgets(line, sizeof(line), f) && strcmp(line, "HEADER=END\n"))
		;
	{
		struct seen s;
		char *kh = malloc(64), *p;

		seen_init(&s);
		CHECK(kh, "malloc");
		for (;;) {
			size_t n, vl;
			unsigned char kb[16];
			unsigned int b;

			CHECK(fgets(kh, 64, f), "%s: cut short", out);
			if (!strcmp(kh, "DATA=END\n"))
				break;
			CHECK(kh[0] == ' ' && strlen(kh) == 14, "%s: bad key "
			      "line %s", out, kh);
			for (n = 0; n < 6; n++) {
				CHECK(sscanf(kh + 1 + 2 * n, "%2x", &b) == 1,
				      "hex");
				kb[n] = (unsigned char)b;
			}
			CHECK(fgets(hex, (int)(2 * BIG_LEN + 8), f), "%s: no "
			      "value line", out);
			p = hex + 1;
			vl = (strlen(p) - 1) / 2;
			for (n = 0; n < vl; n++) {
				CHECK(sscanf(p + 2 * n, "%2x", &b) == 1, "hex");
				v[n] = (unsigned char)b;
			}
			seen_one(&s, "tdb-dump", kb, 6, v, vl);
			items++;
		}
		CHECK(s.count == nkeys, "tdb-dump: %ld items, want %ld",
		      s.count, nkeys);
		seen_free(&s);
		free(kh);
	}
	fclose(f);
	CHECK(tdbc_table_drop(c, "snap_dump") == 0, "drop snap_dump");
	tdbc_close(c);
	free(v);
	free(hex);
	h_note("tdb-dump: %ld items, the loaded table", items);
}

int main(void)
{
	const char *dump = getenv("TDB_KTEST_DUMP");

	kt_init("snapshot", 600);
	/* not scaled below 4000: round_bound needs more than max_snapshot_mb=1
	 * (its floor) of old values to go past it */
	nkeys = h_scaled(4000, 4000);
	round_concurrent("snap_rings", 0, 0);
	round_concurrent("snap_norings", TDBC_NO_RINGS, TDBC_NO_RINGS);
	round_drop();
	round_prefix_limit();
	cursor_refused();
	if (kt_kernel) {
		round_bound();
		round_memory_shared();
		round_memory_per_uid();
	}
	if (dump && *dump && access(dump, X_OK) == 0)
		round_tdb_dump(dump);
	else
		h_note("tdb-dump: not run ($TDB_KTEST_DUMP not set)");
	kt_done();
	return 0;
}
