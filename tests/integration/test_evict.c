// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_evict.c - bounded tables against a real tdbd, across processes
 * (issue 27; include/tdb/proto.h, "EVICTION"; src/owner/evict.c).
 * Parts (TDB_ITEST_ONLY=name runs one):
 *
 *  flood    Two writer processes flood distinct keys into a table with
 *           MAX_RECORDS and EVICT lru while a third samples TABLE_STAT:
 *           RECORDS is within the bound at every sample, no write is
 *           refused, and a watcher (this process) sees every eviction as
 *           a DEL with reason evicted: as many as STAT's EVICTED, which
 *           is what the flood wrote past the bound.
 *  refuse   The default policy: a new key past MAX_RECORDS (or
 *           MAX_BYTES) fails -ENOSPC with a message naming the bounds
 *           ("table is at its bound (MAX_BYTES / MAX_RECORDS, ...)");
 *           replacing a key within it works.
 *  touch    Reads through the zero-copy map reach the policy as TOUCH
 *           hints (libtdbclient samples 1 mapped hit in 16 per table,
 *           64 hashes a TOUCH; src/client/map.c): a table of BOUND
 *           records, its first half (the oldest writes) read through a
 *           map by another process (100 rounds, each in a random order:
 *           a periodic order could alias with the 1-in-16 sampler), then
 *           BOUND/2 new keys: at least 75 of the 100 read keys survive
 *           (test_owner_evict's margin for lru; with no hints they are
 *           the least recently used and go first).  Half the rounds are
 *           tdbc_submit batches, reaped: exactly their completions; the
 *           reader then reaps a DEL of an absent key (the ring) alone,
 *           and makes a blocking call (STATS), which must work: the
 *           hints' acks reach neither.
 *  hostile  By design, a user with write permission on another user's
 *           bounded table evicts that user's records by writing (the
 *           bound is the table's, not per writer: whoever may write may
 *           fill it); a user who cannot read a table cannot TOUCH it
 *           (-EACCES); TOUCH with 0 or 513 hashes is refused with the
 *           codec's text.
 *  restart  Bounds and policy survive a SIGKILL of tdbd (WAL replay):
 *           TABLE_STAT shows them, the table is within them, and a new
 *           flood keeps it there.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct h_daemon d;
/* a socket other users reach (hostile's nobody) */
static const char *const start_args[] = { "--sync", "none",
					  "--socket-mode", "0666", NULL };

static void create_b(struct tdbc *c, const char *name, uint64_t max_bytes,
		     uint64_t max_records, uint32_t evict, uint32_t mode)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.max_bytes = max_bytes;
	o.max_records = max_records;
	o.evict = evict;
	if (mode)
		o.mode = mode;
	CHECK(tdbc_table_create(c, name, &o) == 0, "create %s: %s", name,
	      tdbc_errmsg(c));
}

static struct tdbc_table *open_t(struct tdbc *c, const char *name)
{
	struct tdbc_table *t;

	CHECK(tdbc_table_open(c, name, &t) == 0, "open %s: %s", name,
	      tdbc_errmsg(c));
	return t;
}

static void stat_t(struct tdbc *c, const char *name,
		   struct tdbc_table_stat *st)
{
	CHECK(tdbc_table_stat(c, name, st) == 0, "stat %s: %s", name,
	      tdbc_errmsg(c));
}

static void put_k(struct tdbc_table *t, const char *prefix, long i)
{
	char k[32];
	int n = snprintf(k, sizeof(k), "%s%ld", prefix, i);
	int err = tdbc_put(t, NULL, k, (size_t)n, "value", 5, 0);

	CHECK(err == 0, "put %s: %s", k, h_errname(err));
}

static bool present(struct tdbc_table *t, const char *prefix, long i)
{
	char k[32], v[16];
	int n = snprintf(k, sizeof(k), "%s%ld", prefix, i);
	long r = tdbc_get(t, NULL, k, (size_t)n, v, sizeof(v), NULL);

	CHECK(r == 5 || r == -ENOENT, "get %s: %s", k, h_errname((int)r));
	return r == 5;
}

static pid_t child(void)
{
	pid_t p = fork();

	CHECK(p >= 0, "fork");
	if (p > 0)
		h_track(p);
	return p;
}

static void reap(pid_t p, const char *what)
{
	int st;

	CHECK(waitpid(p, &st, 0) == p, "waitpid %s", what);
	h_untrack(p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (status %d)",
	      what, st);
}

/* --- flood ---------------------------------------------------------------- */

#define FLOOD_BOUND 300u

struct flood_sh {
	int writers_done;
	long samples, max_seen;
};

static void part_flood(void)
{
	long per = h_scaled(3000, 500), evicted = 0, puts = 0, i;
	struct tdbc *c = h_connect(&d, 0);
	struct flood_sh *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct tdbc_table_stat st;
	struct tdbc_watch *w;
	struct tdbc_event ev;
	struct tdbc_table *t;
	pid_t wr[2], smp;
	uint64_t end;
	int r;

	CHECK(sh != MAP_FAILED, "mmap");
	create_b(c, "fl", 0, FLOOD_BOUND, TDBC_EVICT_LRU, 0);
	t = open_t(c, "fl");
	CHECK(tdbc_watch(t, NULL, 0, &w) == 0, "watch: %s", tdbc_errmsg(c));
	smp = child();
	if (!smp) {
		struct tdbc *s = h_connect(&d, 0);

		while (!__atomic_load_n(&sh->writers_done, __ATOMIC_ACQUIRE)) {
			stat_t(s, "fl", &st);
			CHECK(st.records <= FLOOD_BOUND, "a sample saw %llu "
			      "records, over the bound %u",
			      (unsigned long long)st.records, FLOOD_BOUND);
			if ((long)st.records > sh->max_seen)
				sh->max_seen = (long)st.records;
			sh->samples++;
		}
		tdbc_close(s);
		_exit(0);
	}
	for (i = 0; i < 2; i++) {
		wr[i] = child();
		if (!wr[i]) {
			struct tdbc *x = h_connect(&d, 0);
			struct tdbc_table *xt = open_t(x, "fl");
			long k;

			for (k = 0; k < per; k++)
				put_k(xt, i ? "b" : "a", k);
			tdbc_close(x);
			_exit(0);
		}
	}
	/* the watcher: every change, while they write and after */
	end = h_now_ms() + 60000;
	while ((puts < 2 * per || evicted < 2 * per - (long)FLOOD_BOUND) &&
	       h_now_ms() < end) {
		r = tdbc_watch_next(w, &ev, 100, NULL);
		CHECK(r >= 0, "watch_next: %s (lapped?)", h_errname(r));
		if (r == 0)
			continue;
		if (ev.kind == TDBC_EV_PUT)
			puts++;
		else if (ev.kind == TDBC_EV_DEL) {
			CHECK(ev.reason == TDBC_REASON_EVICTED, "a DEL of the "
			      "flood has reason %u, not evicted", ev.reason);
			evicted++;
		}
	}
	reap(wr[0], "writer a");
	reap(wr[1], "writer b");
	__atomic_store_n(&sh->writers_done, 1, __ATOMIC_RELEASE);
	reap(smp, "sampler");
	/* nothing more comes */
	r = tdbc_watch_next(w, &ev, 200, NULL);
	CHECK(r == 0, "a change after the flood (%d)", r);
	stat_t(c, "fl", &st);
	h_note("flood: %ld puts, %ld evictions seen, %ld samples (max %ld "
	       "records)", puts, evicted, sh->samples, sh->max_seen);
	CHECK(puts == 2 * per, "the watcher saw %ld PUTs of %ld", puts,
	      2 * per);
	CHECK(st.records == FLOOD_BOUND, "records %llu after the flood",
	      (unsigned long long)st.records);
	CHECK(st.evicted == (uint64_t)(2 * per - FLOOD_BOUND), "STAT EVICTED "
	      "%llu, want %ld", (unsigned long long)st.evicted,
	      2 * per - (long)FLOOD_BOUND);
	CHECK(evicted == (long)st.evicted, "the watcher saw %ld evictions, "
	      "STAT says %llu", evicted, (unsigned long long)st.evicted);
	CHECK(sh->samples >= 10, "only %ld samples", sh->samples);
	tdbc_watch_close(w);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "fl") == 0, "drop");
	munmap(sh, 4096);
	tdbc_close(c);
}

/* --- refuse --------------------------------------------------------------- */

static void part_refuse(void)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	const char *msg;
	int err;

	create_b(c, "rf", 0, 3, TDBC_EVICT_REFUSE, 0);
	t = open_t(c, "rf");
	put_k(t, "k", 0);
	put_k(t, "k", 1);
	put_k(t, "k", 2);
	err = tdbc_put(t, NULL, "k3", 2, "v", 1, 0);
	CHECK_EQ(err, -ENOSPC, "a fourth record under MAX_RECORDS 3");
	msg = tdbc_errmsg(c);
	/* the owner's text names the bounds (not which one, nor its value:
	 * its extack texts are static) */
	CHECK(strstr(msg, "at its bound") && strstr(msg, "MAX_RECORDS"),
	      "the refusal does not name the bound: '%s'", msg);
	put_k(t, "k", 1);               /* a replacement: within it */
	stat_t(c, "rf", &st);
	CHECK(st.records == 3 && st.evicted == 0 && st.max_records == 3 &&
	      st.evict == TDBC_EVICT_REFUSE, "rf: records %llu evicted %llu",
	      (unsigned long long)st.records,
	      (unsigned long long)st.evicted);
	tdbc_table_close(t);
	/* bytes: 20 bytes of keys and values */
	create_b(c, "rb", 20, 0, TDBC_EVICT_REFUSE, 0);
	t = open_t(c, "rb");
	CHECK(tdbc_put(t, NULL, "ab", 2, "0123456789", 10, 0) == 0, "put");
	err = tdbc_put(t, NULL, "cd", 2, "0123456789", 10, 0);
	CHECK_EQ(err, -ENOSPC, "24 bytes under MAX_BYTES 20");
	msg = tdbc_errmsg(c);
	CHECK(strstr(msg, "at its bound") && strstr(msg, "MAX_BYTES"),
	      "the refusal does not name the bound: '%s'", msg);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "rf") == 0 && tdbc_table_drop(c, "rb") == 0,
	      "drop");
	tdbc_close(c);
}

/* --- touch ---------------------------------------------------------------- */

#define BOUND 200L

/* The round's GETs through tdbc_submit (mapped: completed at once),
 * reaped: exactly ours, each found. */
static void reap_gets(struct tdbc *x, struct tdbc_table *xt,
		      const long *order)
{
	static char keys[BOUND / 2][32];
	struct tdbc_req req[BOUND / 2];
	struct tdbc_cqe cqe[BOUND / 2];
	bool seen[BOUND / 2] = { false };
	long j;
	int n, got = 0, k;

	memset(req, 0, sizeof(req));
	for (j = 0; j < BOUND / 2; j++) {
		req[j].op = TDBC_OP_GET;
		req[j].table = xt;
		req[j].key = keys[j];
		req[j].klen = (size_t)snprintf(keys[j], sizeof(keys[j]),
					       "old%ld", order[j]);
		req[j].user = (uint64_t)order[j] + 1;
	}
	n = tdbc_submit(x, req, BOUND / 2);
	CHECK(n == BOUND / 2, "submit: %d (%s)", n, tdbc_errmsg(x));
	while (got < BOUND / 2) {
		n = tdbc_reap(x, cqe, BOUND / 2, 1, 5000);
		CHECK(n > 0, "reap: %d", n);
		for (k = 0; k < n; k++) {
			uint64_t u = cqe[k].user;

			CHECK(u >= 1 && u <= BOUND / 2 && !seen[u - 1],
			      "a completion of user %llu, not one of ours",
			      (unsigned long long)u);
			CHECK(cqe[k].res == 0 && cqe[k].vlen == 5,
			      "GET old%llu: %s", (unsigned long long)u - 1,
			      h_errname(cqe[k].res));
			seen[u - 1] = true;
		}
		got += n;
	}
}

static void reap_del_absent(struct tdbc *x, struct tdbc_table *xt)
{
	struct tdbc_req req = { .op = TDBC_OP_DEL, .table = xt,
				.key = "absent", .klen = 6, .user = 777 };
	struct tdbc_cqe cqe[4];
	int n;

	CHECK(tdbc_submit(x, &req, 1) == 1, "submit DEL: %s", tdbc_errmsg(x));
	n = tdbc_reap(x, cqe, 4, 1, 5000);
	CHECK(n == 1 && cqe[0].user == 777 && cqe[0].res == -ENOENT,
	      "reaped %d: user %llu res %d", n,
	      n > 0 ? (unsigned long long)cqe[0].user : 0ull,
	      n > 0 ? cqe[0].res : 0);
	n = tdbc_reap(x, cqe, 4, 0, 200);
	CHECK(n == 0, "%d more completions than asked for", n);
}

static void part_touch(void)
{
	struct tdbc *c = h_connect(&d, TDBC_NO_MAP);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	long i, kept = 0, cold = 0;
	pid_t rd;

	create_b(c, "tc", 0, BOUND, TDBC_EVICT_LRU, 0);
	t = open_t(c, "tc");
	for (i = 0; i < BOUND; i++)
		put_k(t, "old", i);
	rd = child();
	if (!rd) {
		struct tdbc *x = h_connect(&d, 0);
		struct tdbc_table *xt = open_t(x, "tc");
		struct tdbc_stats s;
		long order[BOUND / 2], round, j, tmp;
		uint64_t seed = 42;

		CHECK(tdbc_table_mapped(xt) == 1, "the reader has no map");
		for (j = 0; j < BOUND / 2; j++)
			order[j] = j;
		for (round = 0; round < 100; round++) {
			for (j = BOUND / 2 - 1; j > 0; j--) {
				long o = (long)(h_rand(&seed) %
						(uint64_t)(j + 1));

				tmp = order[j];
				order[j] = order[o];
				order[o] = tmp;
			}
			if (round % 2) {
				reap_gets(x, xt, order);
				continue;
			}
			for (j = 0; j < BOUND / 2; j++)
				CHECK(present(xt, "old", order[j]), "old%ld "
				      "absent", order[j]);
		}
		/* a request through the ring after the hints: reaped
		 * alone (a TOUCH's ack is no completion) */
		reap_del_absent(x, xt);
		CHECK(tdbc_table_mapped(xt) == 1, "the reader lost its map");
		/* a blocking call after the hints: answered (the TOUCH acks
		 * went nowhere), and the owner has taken the hints, which
		 * came before it on this connection's ring */
		CHECK(tdbc_stats(x, &s) == 0, "stats after the hints: %s",
		      tdbc_errmsg(x));
		CHECK(tdbc_inflight(x) == 0, "%d in flight after the hints",
		      tdbc_inflight(x));
		tdbc_close(x);
		_exit(0);
	}
	reap(rd, "mapped reader");
	for (i = 0; i < BOUND / 2; i++)
		put_k(t, "new", i);
	for (i = 0; i < BOUND / 2; i++) {
		kept += present(t, "old", i);
		cold += present(t, "old", BOUND / 2 + i);
	}
	stat_t(c, "tc", &st);
	h_note("touch: %ld of %ld keys read through the map kept, %ld of %ld "
	       "not read", kept, BOUND / 2, cold, BOUND / 2);
	CHECK(st.records == BOUND && st.evicted == BOUND / 2, "tc: records "
	      "%llu evicted %llu", (unsigned long long)st.records,
	      (unsigned long long)st.evicted);
	CHECK(kept >= 75, "only %ld of the %ld keys read through the map "
	      "survived the flood", kept, BOUND / 2);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "tc") == 0, "drop");
	tdbc_close(c);
}

/* --- hostile -------------------------------------------------------------- */

/* A TOUCH of n hashes: built as the library builds it for 1..512; for
 * 0 or past TDB_TOUCH_MAX (the builder refuses those), a TOUCH of 1
 * hash whose HASHES attribute (the last) is then cut or grown to n * 8
 * bytes.  The answer's errno, its text into msg. */
static int raw_touch(struct h_raw *r, const char *table, size_t n,
		     char *msg, size_t msglen)
{
	static unsigned char buf[8 * 1024] __attribute__((aligned(8)));
	static unsigned char ans[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	static uint64_t hashes[TDB_TOUCH_MAX];
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TOUCH };
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg a;
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	bool forged = !n || n > TDB_TOUCH_MAX;
	long len, k;

	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_HASHES);
	m.table = table;
	m.table_len = (uint32_t)strlen(table);
	m.hashes = hashes;
	m.nhashes = forged ? 1 : (uint32_t)n;
	m.seq = ++r->seq;
	memset(buf, 0, sizeof(buf));
	len = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &m, &ext);
	CHECK(len > 0, "build: %s", ext.msg);
	if (forged) {
		struct nlattr *na = NULL;

		while (off + NLA_HDRLEN <= nlh->nlmsg_len) {
			na = (struct nlattr *)(buf + off);
			off += NLA_ALIGN(na->nla_len);
		}
		CHECK(na && (na->nla_type & NLA_TYPE_MASK) == TDB_A_HASHES &&
		      off == (size_t)len, "HASHES is not the last attribute");
		CHECK(len - 8 + n * 8 <= sizeof(buf), "too big");
		na->nla_len = (uint16_t)(NLA_HDRLEN + n * 8);
		len = len - 8 + (long)(n * 8);
		nlh->nlmsg_len = (uint32_t)len;
	}
	CHECK(h_raw_send(r, buf, (size_t)len) == 0, "send");
	k = h_raw_recv(r, ans, sizeof(ans), 10000);
	CHECK(k > 0, "no answer: %s", h_errname((int)k));
	CHECK(tdb_proto_parse(ans, (size_t)k, TDB_PROTO_ANSWER, &a, &ext) == 0,
	      "the answer does not parse: %s", ext.msg);
	CHECK(a.type == NLMSG_ERROR && a.seq == m.seq, "not an error answer "
	      "(type %u)", a.type);
	snprintf(msg, msglen, "%s", a.ext.msg ? a.ext.msg : "");
	return a.error;
}

static void part_hostile(void)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	struct h_raw r;
	char msg[256];
	long i, left = 0;
	pid_t p;
	int err;

	/* root's table, writable by all: nobody's writes evict root's
	 * records (by design: the bound is the table's) */
	create_b(c, "hb", 0, 10, TDBC_EVICT_LRU, 0666);
	t = open_t(c, "hb");
	for (i = 0; i < 10; i++)
		put_k(t, "root", i);
	p = child();
	if (!p) {
		struct tdbc *x;
		struct tdbc_table *xt;

		h_become(65534);
		x = h_connect(&d, 0);
		xt = open_t(x, "hb");
		for (i = 0; i < 5; i++)
			put_k(xt, "nobody", i);
		tdbc_close(x);
		_exit(0);
	}
	reap(p, "nobody's writer");
	for (i = 0; i < 10; i++)
		left += present(t, "root", i);
	stat_t(c, "hb", &st);
	CHECK(left == 5 && st.records == 10 && st.evicted == 5, "hb: %ld of "
	      "root's records left, records %llu, evicted %llu", left,
	      (unsigned long long)st.records, (unsigned long long)st.evicted);
	tdbc_table_close(t);

	/* TOUCH: read permission, and 1..512 hashes */
	create_b(c, "hp", 0, 10, TDBC_EVICT_LRU, 0600);
	p = child();
	if (!p) {
		h_become(65534);
		h_raw_connect(&r, d.sock);
		err = raw_touch(&r, "hp", 1, msg, sizeof(msg));
		CHECK_EQ(err, -EACCES, "nobody's TOUCH of a 0600 table");
		h_raw_close(&r);
		_exit(0);
	}
	reap(p, "nobody's TOUCH");
	h_raw_connect(&r, d.sock);
	err = raw_touch(&r, "hp", 1, msg, sizeof(msg));
	CHECK_EQ(err, 0, "root's TOUCH of 1 hash");
	err = raw_touch(&r, "hp", TDB_TOUCH_MAX, msg, sizeof(msg));
	CHECK_EQ(err, 0, "root's TOUCH of 512 hashes");
	err = raw_touch(&r, "hp", 0, msg, sizeof(msg));
	CHECK_EQ(err, -EINVAL, "TOUCH of 0 hashes");
	CHECK(strstr(msg, "HASHES is empty"), "0 hashes: '%s'", msg);
	err = raw_touch(&r, "hp", TDB_TOUCH_MAX + 1, msg, sizeof(msg));
	CHECK_EQ(err, -EINVAL, "TOUCH of 513 hashes");
	CHECK(strstr(msg, "HASHES holds more than TDB_TOUCH_MAX (512)"),
	      "513 hashes: '%s'", msg);
	h_raw_close(&r);
	CHECK(tdbc_table_drop(c, "hb") == 0 && tdbc_table_drop(c, "hp") == 0,
	      "drop");
	tdbc_close(c);
}

/* --- restart -------------------------------------------------------------- */

static void part_restart(void)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	long i;

	create_b(c, "rs", 1u << 20, 50, TDBC_EVICT_LFU, 0);
	t = open_t(c, "rs");
	for (i = 0; i < 120; i++)
		put_k(t, "a", i);
	tdbc_table_close(t);
	tdbc_close(c);
	CHECK(kill(d.pid, SIGKILL) == 0, "kill");
	CHECK(h_wait_exit(&d, 10000), "tdbd did not die");
	h_start(&d, "x", start_args);
	c = h_connect(&d, 0);
	stat_t(c, "rs", &st);
	CHECK(st.max_records == 50 && st.max_bytes == 1u << 20 &&
	      st.evict == TDBC_EVICT_LFU, "after the restart: max_records "
	      "%llu max_bytes %llu evict %u",
	      (unsigned long long)st.max_records,
	      (unsigned long long)st.max_bytes, st.evict);
	CHECK(st.records == 50, "after the restart: %llu records",
	      (unsigned long long)st.records);
	t = open_t(c, "rs");
	for (i = 0; i < 120; i++) {
		put_k(t, "b", i);
		if (i % 20 == 0) {
			stat_t(c, "rs", &st);
			CHECK(st.records <= 50, "%llu records after the "
			      "restart", (unsigned long long)st.records);
		}
	}
	stat_t(c, "rs", &st);
	CHECK(st.records == 50 && st.evicted == 120, "rs: records %llu "
	      "evicted %llu", (unsigned long long)st.records,
	      (unsigned long long)st.evicted);
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "rs") == 0, "drop");
	tdbc_close(c);
}

int main(void)
{
	h_init("evict", h_sanitized() ? 400 : 120);
	h_start(&d, "x", start_args);
	if (h_want("refuse"))
		part_refuse();
	if (h_want("hostile"))
		part_hostile();
	if (h_want("touch"))
		part_touch();
	if (h_want("flood"))
		part_flood();
	if (h_want("restart"))
		part_restart();
	h_stop(&d);
	h_done();
	return 0;
}
