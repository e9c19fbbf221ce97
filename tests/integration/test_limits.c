// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_limits.c - the per-uid and global limits of tdbd (quota.c,
 * docs/CONFIG.md "Limits"): ordinary users (forked children that drop
 * to uids 65530..65534) take all they can of one resource; each is
 * refused at its limit with an error naming the key, tdbd's use of the
 * resource stays within it, root is never locked out, and a pinger
 * (root, rings and socket) beside the attackers keeps its GET latency
 * (h_check_latency).  One tdbd per part (TDB_ITEST_ONLY=part):
 *
 *  clients   max-clients 16, max-clients-per-uid 4: each uid gets 4
 *            connections, the 5th is closed; a third uid is cut at 14
 *            (7/8 of 16: the rest is root's), root still gets in;
 *            slots come back when the holders go.
 *  txnmem    max-txn-memory 64M, max-txn-memory-per-uid 24M: one uid
 *            buffering transactions of 256 KiB values on 3 connections
 *            is refused (EDQUOT, max-txn-memory-per-uid) at 24M, a third
 *            uid by the total (ENOBUFS, max-txn-memory) at 7/8 of it;
 *            root still buffers and commits; tdbd's VmRSS stays under
 *            the limit plus slack; after the attacker goes, its uid
 *            buffers 24M again and VmRSS does not grow.
 *  tables    max-tables-per-uid 5: the 6th table is refused (EDQUOT);
 *            a drop gives the slot back; after a restart with a lower
 *            limit (3) the 5 tables are all there (recovery never
 *            refuses) and the uid may create none.
 *  reserve   max-reserve-per-uid 200G, max-reserve 1T: uids creating
 *            tables of max_extents 32768 (64 GiB each) in a loop get 3
 *            each (EDQUOT, max-reserve-per-uid), the fifth uid is cut by
 *            the total (ENOSPC, max-reserve); tdbd's VmSize grows by
 *            less than 1T; root still creates such a table, attaches and
 *            reads it; a restart works and keeps the limits.
 *  reload    max-tables-per-uid lowered by a reload (SIGHUP) to what a
 *            uid has: its next create is refused.
 *  fds       started with a soft RLIMIT_NOFILE of 1024 (under the hard
 *            one) and max-clients 65536: tdbd raises its soft limit to
 *            the hard one and warns that max-clients does not fit.
 * Skipped (77) when not run as root.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define VAL (256u << 10)        /* transaction values */

/* --- actors: children running as another uid ------------------------- */

struct report {
	int ok;                 /* what succeeded (connections, tables) */
	int err;                /* the first refusal, 0 if none */
	uint64_t bytes;         /* txn: value bytes buffered */
	char msg[256];          /* the refusal's message */
};

struct actor {
	pid_t pid;
	int go_wr;              /* a byte: release what you hold, exit */
	struct report rep;
};

typedef void actor_fn(const char *sock, const void *arg, struct report *r);

/* Fork; the child becomes uid (gid = uid, no groups), runs fn, reports,
 * and holds what it took until actor_end.  Returns with the report. */
static void actor_run(struct actor *a, uid_t uid, actor_fn *fn,
		      const char *sock, const void *arg)
{
	int go[2], rep[2];
	char b;

	CHECK(pipe(go) == 0 && pipe(rep) == 0, "pipe");
	fflush(NULL);
	a->pid = fork();
	CHECK(a->pid >= 0, "fork");
	if (a->pid == 0) {
		struct report r = { 0 };

		close(go[1]);
		close(rep[0]);
		h_become(uid);
		fn(sock, arg, &r);
		CHECK(write(rep[1], &r, sizeof(r)) == (ssize_t)sizeof(r),
		      "report");
		if (read(go[0], &b, 1) < 0)
			(void)0;
		_exit(0);
	}
	h_track(a->pid);
	close(go[0]);
	close(rep[1]);
	CHECK(read(rep[0], &a->rep, sizeof(a->rep)) ==
	      (ssize_t)sizeof(a->rep), "actor uid %u failed",
	      (unsigned int)uid);
	close(rep[0]);
	a->go_wr = go[1];
}

static void actor_end(struct actor *a)
{
	int st;

	CHECK(write(a->go_wr, "g", 1) == 1, "go pipe");
	close(a->go_wr);
	CHECK(waitpid(a->pid, &st, 0) == a->pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "actor failed");
	h_untrack(a->pid);
}

static void note_err(struct report *r, int err, const char *msg)
{
	if (r->err)
		return;
	r->err = err;
	snprintf(r->msg, sizeof(r->msg), "%s", msg ? msg : "");
}

/* --- tdbd as seen from /proc -------------------------------------------- */

/* A "Name:   N kB" line of /proc/<pid>/status, in bytes. */
static uint64_t proc_kb(const struct h_daemon *d, const char *name)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	size_t n = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
	f = fopen(path, "r");
	CHECK(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':')
			kb = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	CHECK(kb, "no %s in %s", name, path);
	return kb << 10;
}

static bool clients_are(const struct tdbc_stats *st, const void *arg)
{
	return st->clients == *(const uint32_t *)arg;
}

static void wait_clients(struct tdbc *ctl, uint32_t n)
{
	struct tdbc_stats st;

	CHECK(h_wait_stats(ctl, &st, clients_are, &n, 10000),
	      "clients %u, want %u", st.clients, n);
}

/* Start tdbd (socket open to all) with a pinger per transport. */
static void start(struct h_daemon *d, const char *tag,
		  const char *const *extra, struct h_pinger pg[2])
{
	const char *args[24] = { "--socket-mode", "0666" };
	unsigned int i, n = 2;

	for (i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	h_start(d, tag, args);
	if (pg) {
		h_pinger_start(&pg[0], d->sock, 0, 0);
		h_pinger_start(&pg[1], d->sock, TDBC_NO_RINGS, 1);
	}
}

static void finish(struct h_daemon *d, struct h_pinger pg[2],
		   const char *what)
{
	struct h_lat lat[2];

	if (pg) {
		/* enough GETs for a p99 even when the attack was quick */
		h_sleep_ms(500);
		h_pinger_finish_lat(&pg[0], &lat[0]);
		h_pinger_finish_lat(&pg[1], &lat[1]);
		h_check_latency(&lat[0], what);
		h_check_latency(&lat[1], what);
	}
	h_stop(d);
	CHECK(!h_log_has(d, "still charged"), "%s: quota left charged at "
	      "exit", what);
}

/* --- clients ------------------------------------------------------------- */

/* Open *n connections (socket only), each checked with STATS; hold the
 * ones that worked. */
static void take_conns(const char *sock, const void *arg, struct report *r)
{
	int n = *(const int *)arg, i;
	struct tdbc *c[64];
	char msg[256];

	for (i = 0; i < n && i < 64; i++) {
		struct tdbc_stats st;
		int err;

		c[i] = NULL;
		err = tdbc_connect(&c[i], sock, TDBC_NO_RINGS, msg,
				   sizeof(msg));
		if (!err && (err = tdbc_stats(c[i], &st)))
			snprintf(msg, sizeof(msg), "%s", tdbc_errmsg(c[i]));
		if (err) {
			note_err(r, err, msg);
			if (c[i])
				tdbc_close(c[i]);
			continue;
		}
		r->ok++;
	}
	/* held until the process exits */
}

static void part_clients(void)
{
	static const char *const args[] = { "--max-clients", "16",
		"--max-clients-per-uid", "4", NULL };
	struct h_pinger pg[2];
	struct h_daemon d;
	struct actor a, b, c, a2;
	struct tdbc *ctl, *root[2];
	struct tdbc_stats st;
	uint32_t base;
	int six = 6, four = 4, i;

	start(&d, "clients", args, pg);
	ctl = h_connect(&d, TDBC_NO_RINGS);
	h_stats(ctl, &st);
	base = st.clients;      /* root's: ctl and the pingers */
	CHECK(base <= 5, "%u clients before the attack", base);

	actor_run(&a, 65534, take_conns, d.sock, &six);
	h_note("uid 65534: %d of 6 connections, then %s", a.rep.ok,
	       h_errname(a.rep.err));
	CHECK(a.rep.ok == 4 && a.rep.err, "uid 65534 got %d connections, "
	      "want 4 (max-clients-per-uid)", a.rep.ok);
	CHECK(h_log_has(&d, "(max-clients-per-uid)"), "the refusal is not "
	      "logged with its key");
	actor_run(&b, 65533, take_conns, d.sock, &four);
	CHECK(b.rep.ok == 4 && !b.rep.err, "uid 65533 got %d of 4: %s",
	      b.rep.ok, b.rep.msg);
	/* the rest for other uids: 7/8 of 16 = 14 in all */
	actor_run(&c, 65532, take_conns, d.sock, &four);
	h_note("uid 65532: %d of 4 connections (%u root's, 8 others')",
	       c.rep.ok, base);
	CHECK(c.rep.ok == (int)(14 - base - 8) && c.rep.err,
	      "uid 65532 got %d connections, want %u (max-clients less "
	      "root's eighth)", c.rep.ok, 14 - base - 8);
	CHECK(h_log_has(&d, "(max-clients; the last eighth is kept for "
			"root)"), "the global refusal is not logged");
	/* root: the last two slots */
	for (i = 0; i < 2; i++) {
		root[i] = h_connect(&d, i ? 0 : TDBC_NO_RINGS);
		h_stats(root[i], &st);
	}
	CHECK(st.clients == 16, "%u clients, want 16 (max-clients)",
	      st.clients);
	h_sleep_ms(300);        /* the pinger goes on beside a full tdbd */
	for (i = 0; i < 2; i++)
		tdbc_close(root[i]);
	actor_end(&a);
	actor_end(&b);
	actor_end(&c);
	wait_clients(ctl, base);
	/* the slots came back */
	actor_run(&a2, 65534, take_conns, d.sock, &four);
	CHECK(a2.rep.ok == 4, "uid 65534 got %d of 4 after the others left",
	      a2.rep.ok);
	actor_end(&a2);
	wait_clients(ctl, base);
	tdbc_close(ctl);
	finish(&d, pg, "clients");
}

/* --- transaction memory -------------------------------------------------- */

/* Buffer transactions of VAL-byte values on 3 connections, opening new
 * ones as they fill (max-txn-bytes, max-txns), until refused otherwise
 * or 200 MiB are buffered.  Holds them. */
static void buffer_txns(const char *sock, const void *arg, struct report *r)
{
	unsigned char *val = malloc(VAL);
	uint64_t cap = *(const uint64_t *)arg;
	unsigned int ci, k = 0;

	CHECK(val, "out of memory");
	memset(val, 'x', VAL);
	for (ci = 0; ci < 3 && !r->err && r->bytes < cap; ci++) {
		struct tdbc_table *t;
		struct tdbc_txn *x = NULL;
		struct tdbc *c = NULL;
		char msg[256], key[32];
		int err;

		err = tdbc_connect(&c, sock, TDBC_NO_RINGS, msg, sizeof(msg));
		CHECK(!err, "connect: %s", msg);
		r->ok++;        /* connections */
		CHECK(tdbc_table_open(c, "tx", &t) == 0, "open tx");
		while (r->bytes < cap) {
			if (!x && (err = tdbc_txn_begin(c, &x))) {
				CHECK(err == -EBUSY, "txn_begin: %s",
				      tdbc_errmsg(c));
				break;  /* max-txns: the next connection */
			}
			snprintf(key, sizeof(key), "k%u", k++);
			err = tdbc_put(t, x, key, strlen(key), val, VAL, 0);
			if (err == -E2BIG) {    /* max-txn-bytes */
				x = NULL;       /* kept open */
				continue;
			}
			if (err) {
				note_err(r, err, tdbc_errmsg(c));
				break;
			}
			r->bytes += VAL;
		}
		/* c and its transactions: held until the process exits */
	}
	free(val);
}

/* Root buffers 4M in a transaction (the last eighth of max-txn-memory
 * is its) and commits it. */
static void root_txn(struct tdbc *ctl)
{
	unsigned char *val = malloc(VAL);
	struct tdbc_table *t;
	struct tdbc_txn *x;
	char key[16];
	int i;

	CHECK(val, "out of memory");
	memset(val, 'r', VAL);
	CHECK(tdbc_table_open(ctl, "tx", &t) == 0, "open tx");
	CHECK(tdbc_txn_begin(ctl, &x) == 0, "root txn_begin");
	for (i = 0; i < 16; i++) {
		snprintf(key, sizeof(key), "root%d", i);
		CHECK(tdbc_put(t, x, key, strlen(key), val, VAL, 0) == 0,
		      "root put %d: %s", i, tdbc_errmsg(ctl));
	}
	CHECK(tdbc_txn_commit(x) == 0, "root commit: %s", tdbc_errmsg(ctl));
	CHECK(tdbc_get(t, NULL, "root15", 6, val, VAL, NULL) == VAL,
	      "root get");
	tdbc_table_close(t);
	free(val);
}

static void part_txnmem(void)
{
	static const char *const args[] = { "--max-txn-memory", "64M",
		"--max-txn-memory-per-uid", "24M", "--max-txn-bytes", "16M",
		NULL };
	uint64_t cap = 200 * MiB, rss0, rss, rss1;
	/* the rest of tdbd, the committed 4M; ASan: shadow, redzones and
	 * its quarantine of freed memory (256M) */
	uint64_t slack = h_sanitized() ? 384 * MiB : 64 * MiB;
	struct tdbc_table_opts o;
	struct h_pinger pg[2];
	struct actor a, b, c, a2;
	struct tdbc_stats st;
	struct h_daemon d;
	struct tdbc *ctl;

	start(&d, "txnmem", args, pg);
	ctl = h_connect(&d, 0);
	tdbc_table_opts_init(&o);
	o.mode = 0666;
	CHECK(tdbc_table_create(ctl, "tx", &o) == 0, "create tx");
	rss0 = proc_kb(&d, "VmRSS");

	actor_run(&a, 65534, buffer_txns, d.sock, &cap);
	rss = proc_kb(&d, "VmRSS");
	h_note("uid 65534: %llu MiB buffered, then %s: %s; VmRSS +%llu MiB",
	       (unsigned long long)(a.rep.bytes >> 20),
	       h_errname(a.rep.err), a.rep.msg,
	       (unsigned long long)((rss - rss0) >> 20));
	CHECK(a.rep.err == -EDQUOT && strstr(a.rep.msg,
					     "max-txn-memory-per-uid"),
	      "uid 65534: %s (%s) after %llu MiB, want EDQUOT naming "
	      "max-txn-memory-per-uid", h_errname(a.rep.err), a.rep.msg,
	      (unsigned long long)(a.rep.bytes >> 20));
	CHECK(a.rep.bytes <= 24 * MiB && a.rep.bytes >= 20 * MiB,
	      "uid 65534 buffered %llu bytes (max-txn-memory-per-uid 24M)",
	      (unsigned long long)a.rep.bytes);

	actor_run(&b, 65533, buffer_txns, d.sock, &cap);
	CHECK(b.rep.err == -EDQUOT && b.rep.bytes >= 20 * MiB,
	      "uid 65533: %s (%s) after %llu bytes", h_errname(b.rep.err),
	      b.rep.msg, (unsigned long long)b.rep.bytes);
	/* 48M of the 56M others may have */
	actor_run(&c, 65532, buffer_txns, d.sock, &cap);
	h_note("uid 65532: %llu MiB buffered, then %s: %s",
	       (unsigned long long)(c.rep.bytes >> 20),
	       h_errname(c.rep.err), c.rep.msg);
	CHECK(c.rep.err == -ENOBUFS && strstr(c.rep.msg, "max-txn-memory") &&
	      !strstr(c.rep.msg, "per-uid"), "uid 65532: %s (%s), want "
	      "ENOBUFS naming max-txn-memory", h_errname(c.rep.err),
	      c.rep.msg);
	CHECK(a.rep.bytes + b.rep.bytes + c.rep.bytes <= 56 * MiB &&
	      c.rep.bytes >= 4 * MiB, "3 uids buffered %llu bytes (7/8 of "
	      "max-txn-memory: 56M)", (unsigned long long)(a.rep.bytes +
							 b.rep.bytes +
							 c.rep.bytes));

	root_txn(ctl);
	rss = proc_kb(&d, "VmRSS");
	h_note("3 uids at their limits: VmRSS +%llu MiB (max-txn-memory "
	       "64M)", (unsigned long long)((rss - rss0) >> 20));
	CHECK(rss < rss0 + 64 * MiB + slack, "VmRSS grew by %llu MiB",
	      (unsigned long long)((rss - rss0) >> 20));

	/* the memory comes back when the holder goes */
	h_stats(ctl, &st);
	actor_end(&a);
	wait_clients(ctl, st.clients - (uint32_t)a.rep.ok);
	actor_run(&a2, 65534, buffer_txns, d.sock, &cap);
	CHECK(a2.rep.err == -EDQUOT && a2.rep.bytes >= 20 * MiB,
	      "uid 65534 again: %s (%s) after %llu bytes",
	      h_errname(a2.rep.err), a2.rep.msg,
	      (unsigned long long)a2.rep.bytes);
	rss1 = proc_kb(&d, "VmRSS");
	h_note("again: VmRSS +%llu MiB", (unsigned long long)((rss1 - rss0)
							       >> 20));
	CHECK(rss1 < rss0 + 64 * MiB + slack, "VmRSS grew by %llu MiB",
	      (unsigned long long)((rss1 - rss0) >> 20));
	actor_end(&a2);
	actor_end(&b);
	actor_end(&c);
	tdbc_close(ctl);
	finish(&d, pg, "txnmem");
}

/* --- tables and their address space -------------------------------------- */

struct mk {
	const char *prefix;
	int n;
	uint32_t max_ext;
	const char *drop;       /* drop this one first (NULL: none) */
};

/* Create prefix0.. until refused or n made. */
static void make_tables(const char *sock, const void *arg, struct report *r)
{
	const struct mk *m = arg;
	struct tdbc_table_opts o;
	struct tdbc *c = NULL;
	char msg[256], name[64];
	int i, err;

	err = tdbc_connect(&c, sock, TDBC_NO_RINGS, msg, sizeof(msg));
	CHECK(!err, "connect: %s", msg);
	if (m->drop)
		CHECK(tdbc_table_drop(c, m->drop) == 0, "drop %s: %s",
		      m->drop, tdbc_errmsg(c));
	tdbc_table_opts_init(&o);
	o.max_extents = m->max_ext;
	for (i = 0; i < m->n; i++) {
		snprintf(name, sizeof(name), "%s%d", m->prefix, i);
		err = tdbc_table_create(c, name, &o);
		if (err) {
			note_err(r, err, tdbc_errmsg(c));
			break;
		}
		r->ok++;
	}
	tdbc_close(c);
}

static void part_tables(void)
{
	static const char *const args[] = { "--max-tables-per-uid", "5",
		NULL };
	static const char *const lower[] = { "--max-tables-per-uid", "3",
		NULL };
	const struct mk m = { "a", 20, 0, NULL }, again = { "b", 2, 0, "a0" };
	struct h_pinger pg[2];
	struct tdbc_stats st0, st;
	struct h_daemon d;
	struct actor a;
	struct tdbc *ctl;

	start(&d, "tables", args, pg);
	ctl = h_connect(&d, 0);
	h_stats(ctl, &st0);
	actor_run(&a, 65534, make_tables, d.sock, &m);
	actor_end(&a);
	h_note("uid 65534: %d tables, then %s: %s", a.rep.ok,
	       h_errname(a.rep.err), a.rep.msg);
	CHECK(a.rep.ok == 5 && a.rep.err == -EDQUOT &&
	      strstr(a.rep.msg, "max-tables-per-uid"), "uid 65534: %d "
	      "tables, then %s (%s)", a.rep.ok, h_errname(a.rep.err),
	      a.rep.msg);
	h_stats(ctl, &st);
	CHECK(st.tables == st0.tables + 5, "%u tables, want %u", st.tables,
	      st0.tables + 5);
	/* root is exempt */
	CHECK(tdbc_table_create(ctl, "root1", NULL) == 0, "root create: %s",
	      tdbc_errmsg(ctl));
	/* a drop gives the slot back: one more, then refused */
	actor_run(&a, 65534, make_tables, d.sock, &again);
	actor_end(&a);
	CHECK(a.rep.ok == 1 && a.rep.err == -EDQUOT, "after a drop: %d "
	      "tables, then %s (%s)", a.rep.ok, h_errname(a.rep.err),
	      a.rep.msg);
	tdbc_close(ctl);
	finish(&d, pg, "tables");

	/* restart below the count: recovery charges, never refuses */
	start(&d, "tables", lower, NULL);
	ctl = h_connect(&d, 0);
	h_stats(ctl, &st);
	CHECK(st.tables == st0.tables + 6, "after restart: %u tables, want "
	      "%u", st.tables, st0.tables + 6);
	actor_run(&a, 65534, make_tables, d.sock, &(struct mk){ "c", 1, 0,
							      NULL });
	actor_end(&a);
	CHECK(a.rep.ok == 0 && a.rep.err == -EDQUOT, "after restart: %d "
	      "tables, then %s", a.rep.ok, h_errname(a.rep.err));
	CHECK(tdbc_table_create(ctl, "root2", NULL) == 0, "root create");
	tdbc_close(ctl);
	finish(&d, NULL, "tables restarted");
}

static void root_uses(const struct h_daemon *d, const char *name)
{
	struct tdbc *c = h_connect(d, 0);
	struct tdbc_table *t;
	char v[8];

	CHECK(tdbc_uses_rings(c) == 1, "root did not attach rings");
	CHECK(tdbc_table_open(c, name, &t) == 0, "root open %s", name);
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "root put: %s",
	      tdbc_errmsg(c));
	CHECK(tdbc_get(t, NULL, "k", 1, v, sizeof(v), NULL) == 1 &&
	      v[0] == 'v', "root get");
	tdbc_table_close(t);
	tdbc_close(c);
}

static void part_reserve(void)
{
	static const char *const args[] = { "--max-reserve-per-uid", "200G",
		"--max-reserve", "1T", NULL };
	struct tdbc_table_opts o;
	struct h_pinger pg[2];
	struct h_daemon d;
	struct actor a;
	struct tdbc *ctl;
	uint64_t vm0, vm;
	char prefix[8][16];
	struct mk m[5];
	int u;

	start(&d, "reserve", args, pg);
	ctl = h_connect(&d, 0);
	vm0 = proc_kb(&d, "VmSize");
	for (u = 0; u < 5; u++) {
		snprintf(prefix[u], sizeof(prefix[u]), "u%d_", u);
		m[u] = (struct mk){ prefix[u], 100, 32768, NULL };
		actor_run(&a, 65534 - u, make_tables, d.sock, &m[u]);
		actor_end(&a);
		h_note("uid %d: %d tables of 64 GiB, then %s: %s", 65534 - u,
		       a.rep.ok, h_errname(a.rep.err), a.rep.msg);
		if (u < 4)
			CHECK(a.rep.ok == 3 && a.rep.err == -EDQUOT &&
			      strstr(a.rep.msg, "max-reserve-per-uid"),
			      "uid %d: %d tables, then %s (%s)", 65534 - u,
			      a.rep.ok, h_errname(a.rep.err), a.rep.msg);
		else    /* 7/8 of 1T: 896G; 4 x 192G and more are taken */
			CHECK(a.rep.ok < 3 && a.rep.err == -ENOSPC &&
			      strstr(a.rep.msg, "max-reserve (the last "
				     "eighth"), "uid %d: %d tables, then %s "
			      "(%s)", 65534 - u, a.rep.ok,
			      h_errname(a.rep.err), a.rep.msg);
	}
	vm = proc_kb(&d, "VmSize");
	h_note("VmSize +%llu GiB (max-reserve 1T)",
	       (unsigned long long)((vm - vm0) >> 30));
	CHECK(vm - vm0 <= 1024 * GiB, "VmSize grew by %llu GiB",
	      (unsigned long long)((vm - vm0) >> 30));
	/* root: the last eighth */
	tdbc_table_opts_init(&o);
	o.max_extents = 32768;
	CHECK(tdbc_table_create(ctl, "rootbig", &o) == 0, "root create: %s",
	      tdbc_errmsg(ctl));
	root_uses(&d, "rootbig");
	tdbc_close(ctl);
	finish(&d, pg, "reserve");

	/* a restart works, and the tables are charged again */
	start(&d, "reserve", args, NULL);
	root_uses(&d, "rootbig");
	actor_run(&a, 65534, make_tables, d.sock,
		  &(struct mk){ "v", 1, 32768, NULL });
	actor_end(&a);
	CHECK(a.rep.ok == 0 && a.rep.err == -EDQUOT, "after restart: %d, %s",
	      a.rep.ok, h_errname(a.rep.err));
	finish(&d, NULL, "reserve restarted");
}

/* --- reload ------------------------------------------------------------ */

/* Write text to the config file h_start gives tdbd ("" empties it). */
static void set_conf(const char *text)
{
	char conf[H_PATH];
	FILE *f;

	h_path(conf, sizeof(conf), "empty.conf");
	f = fopen(conf, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", conf);
}

static void part_reload(void)
{
	struct h_daemon d;
	struct actor a;
	int i;

	start(&d, "reload", NULL, NULL);
	actor_run(&a, 65534, make_tables, d.sock,
		  &(struct mk){ "a", 3, 0, NULL });
	actor_end(&a);
	CHECK(a.rep.ok == 3, "uid 65534 made %d of 3 tables", a.rep.ok);
	/* a limit lowered at reload refuses the next charge */
	set_conf("max-tables-per-uid = 3\n");
	CHECK(kill(d.pid, SIGHUP) == 0, "SIGHUP");
	for (i = 0; i < 500 && !h_log_has(&d, "reloaded"); i++)
		h_sleep_ms(10);
	set_conf("");
	CHECK(h_log_has(&d, "max-tables-per-uid"), "the reload did not "
	      "take max-tables-per-uid");
	actor_run(&a, 65534, make_tables, d.sock,
		  &(struct mk){ "b", 1, 0, NULL });
	actor_end(&a);
	CHECK(a.rep.ok == 0 && a.rep.err == -EDQUOT, "after the reload: %d "
	      "tables, %s", a.rep.ok, h_errname(a.rep.err));
	finish(&d, NULL, "reload");
}

/* --- descriptors --------------------------------------------------------- */

static void part_fds(void)
{
	static const char *const args[] = { "--max-clients", "65536", NULL };
	struct rlimit old, low;
	char path[64], want[64], *lim, *p;
	unsigned long long soft;
	struct h_daemon d;

	/* a low soft limit under the hard one (no privilege needed to
	 * raise it back) */
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0, "getrlimit");
	low = old;
	low.rlim_cur = 1024;
	CHECK(old.rlim_max > 1024, "hard descriptor limit %llu",
	      (unsigned long long)old.rlim_max);
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit: %s",
	      strerror(errno));
	start(&d, "fds", args, NULL);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0, "setrlimit back");
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)d.pid);
	lim = h_read_file(path);
	p = strstr(lim, "Max open files");
	CHECK(p, "no descriptor limit in %s", path);
	h_note("%.*s", (int)strcspn(p, "\n"), p);
	soft = strtoull(p + 14, NULL, 10);
	free(lim);
	if (old.rlim_max == RLIM_INFINITY) {
		h_note("hard limit unlimited: nothing to warn about");
	} else {
		CHECK(soft == old.rlim_max, "soft descriptor limit %llu, not "
		      "raised to the hard one (%llu)", soft,
		      (unsigned long long)old.rlim_max);
		/* 65536 clients x 5 descriptors cannot fit */
		snprintf(want, sizeof(want), "RLIMIT_NOFILE is %llu",
			 (unsigned long long)old.rlim_max);
		CHECK(old.rlim_max >= 65536 * 5 || h_log_has(&d, want),
		      "no warning that max-clients does not fit in %llu "
		      "descriptors", (unsigned long long)old.rlim_max);
	}
	finish(&d, NULL, "fds");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("tdbd-limits: skipped (needs root to act as other "
		       "users)\n");
		return 77;
	}
	h_init("tdbd-limits", 600);
	if (h_want("clients"))
		part_clients();
	if (h_want("txnmem"))
		part_txnmem();
	if (h_want("tables"))
		part_tables();
	if (h_want("reserve"))
		part_reserve();
	if (h_want("reload"))
		part_reload();
	if (h_want("fds"))
		part_fds();
	h_done();
	return 0;
}
