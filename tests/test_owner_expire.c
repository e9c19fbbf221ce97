// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_expire.c - expiry in the owner (issue 27; include/tdb/proto.h,
 * "EXPIRY"), in user space against tdbo_exec() with a clock the test
 * sets (tdbo_owner_set_clock), so every deadline is met exactly:
 *
 *  - a model test: random PUTs (TTL, DEADLINE, neither; IF_ABSENT,
 *    IF_PRESENT, IF_VERSION), DELs (plain and IF_VERSION), INCRs,
 *    EXPIREs (read, TTL, DEADLINE, PERSIST), transactions (GETs inside,
 *    PUT with TTL, DEL, INCR; the clock moved, a sweep or another
 *    client's write before the commit), the clock moved by random steps
 *    and exactly onto deadlines, sweeps of random budgets, on a table
 *    without and one with a default TTL, against a model of every
 *    record (value, version, deadline; still in the table or not).
 *    After every step each read path is compared with the model: GET
 *    (tdbo_exec and the batched tdbo_get_many), GET inside a
 *    transaction, EXPIRE's read, SCAN and snapshot SCAN, TABLE_STAT
 *    (RECORDS, EXPIRING, EXPIRED, DEFAULT_TTL), STATS' EXPIRED: nothing
 *    expired is ever returned, everything unexpired is, with its
 *    version and deadline.
 *    Every change notification is checked, as the owner's on_change
 *    hook gets it and as a watcher reads it from each table's feed
 *    (WATCH): PUTs carry DEADLINE, each record the sweep takes is one
 *    DEL with REASON expired, and a sweep takes only records that
 *    expired.  The log (the home's hooks, what
 *    the WAL gets) holds exactly those changes: a PUT with its
 *    deadline, each of the sweep's removals a DEL in a record of its
 *    own, a commit's ops in one record.  Scans paused across steps
 *    (snapshot and plain) never send a record after its deadline;
 *  - a record expires at its deadline, not a millisecond later;
 *  - EXPIRE's read takes read permission, a set or PERSIST write
 *    permission (-EACCES, nothing changed);
 *  - hostile values through the codec and the owner, each with its
 *    errno and text: TTL 0, TTL over TDB_TTL_MAX, DEADLINE 0, DEADLINE
 *    over 10 years ahead, TTL with DEADLINE, EXPIRE with PERSIST and a
 *    TTL, an unknown EXPIRE flag, EXPIRE of an absent or expired key.
 *
 * TDB_EXPIRE_SEED=N runs one seed, TDB_EXPIRE_STEPS=N longer (the order
 * of a scan's parts depends on the tables' random hash seeds, so a seed
 * replays the same operations, not always the same scan pauses).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owner.h"
#include "ring.h"           /* src/ring: a feed's reader */

#define NTAB    2               /* "plain" and "dflt" (a default TTL) */
#define NKEY    12              /* keys per table */
#define VMAX    24              /* value bytes at most */
#define DFLT_TTL 700u           /* "dflt"'s default TTL, ms */
#define ROOM    1024            /* a built request */
#define T0      ((uint64_t)1700000000000)/* the clock's start, ms since the epoch */

static struct tdbo_limits lim = {
	.default_mode = 0644, .feed_size = 1u << 16, .max_tables = 64,
	.max_txns = 16, .max_txn_ops = 256, .max_txn_bytes = 1u << 20,
	.max_snapshot_bytes = 1u << 20, .max_snapshot_memory = 1u << 20,
	.max_snapshot_memory_per_uid = 1u << 20,
};

static const char *const tname[NTAB] = { "plain", "dflt" };
static const uint64_t tdflt[NTAB] = { 0, DFLT_TTL };

/* --- the clock -------------------------------------------------------- */

static uint64_t now_ms = T0;

static uint64_t test_clock(void *arg)
{
	(void)arg;
	return now_ms;
}

/* --- the model ---------------------------------------------------------- */

struct mrec {
	bool phys;              /* in the table (expired or not) */
	char val[VMAX + 1];
	size_t vlen;
	uint64_t ver, dl;       /* dl 0: no deadline */
};

struct mtab {
	struct mrec r[NKEY];
	uint64_t expired;       /* records the sweep removed */
};

static struct mtab model[NTAB];
/* what the random steps came to (printed: the mix is worth checking) */
static struct {
	unsigned long commits, stale, stale_exp, swept, paused, incr_kept, exp_set;
	unsigned long refused;
} seen;
static uint64_t last_ver;       /* the highest version seen */
static unsigned long steps_done;

static bool expired_at(uint64_t dl, uint64_t now)
{
	return dl && dl <= now;
}

static bool visible(const struct mrec *r)
{
	return r->phys && !expired_at(r->dl, now_ms);
}

static void keyname(char *k, int key)
{
	snprintf(k, 8, "k%02u", (unsigned int)key % 100u);
}

static int key_of(const void *k, size_t kl)
{
	const char *s = k;

	if (kl != 3 || s[0] != 'k')
		return -1;
	return (s[1] - '0') * 10 + (s[2] - '0');
}

static int tab_of(const char *name, size_t len)
{
	int i;

	for (i = 0; i < NTAB; i++)
		if (strlen(tname[i]) == len && !memcmp(tname[i], name, len))
			return i;
	return -1;
}

/* --- notifications (on_change: what every feed carries) ------------------ */

struct note {
	uint8_t cmd;
	int tab, key;
	char val[VMAX + 1];
	size_t vlen;
	uint64_t ver, dl;       /* dl 0: no DEADLINE */
	uint32_t reason;        /* 0: no REASON */
};

#define NNOTE 512
static struct note notes[NNOTE];
static unsigned int nnotes;

static void on_change(void *arg, const void *msg, size_t len)
{
	static unsigned char copy[TDB_PROTO_MSG_MAX]
		__attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct note *n;

	(void)arg;
	assert_true(len <= sizeof(copy));
	memcpy(copy, msg, len);
	assert_int_equal(tdb_proto_parse(copy, len, TDB_PROTO_ANSWER, &m,
					 &ext), 0);
	if (m.cmd == TDB_CMD_TABLE_DROP || tab_of(m.table, m.table_len) < 0)
		return;         /* not a table of the model */
	assert_true(nnotes < NNOTE);
	n = &notes[nnotes++];
	memset(n, 0, sizeof(*n));
	n->cmd = m.cmd;
	assert_true(m.cmd == TDB_CMD_PUT || m.cmd == TDB_CMD_DEL);
	n->tab = tab_of(m.table, m.table_len);
	n->key = key_of(m.key, m.key_len);
	assert_true(n->key >= 0 && n->key < NKEY);
	assert_true(TDB_PROTO_HAS(&m, TDB_A_VERSION));
	n->ver = m.rec_version;
	if (m.cmd == TDB_CMD_PUT) {
		assert_true(m.value_len <= VMAX);
		memcpy(n->val, m.value, m.value_len);
		n->vlen = m.value_len;
		assert_false(TDB_PROTO_HAS(&m, TDB_A_REASON));
	} else {
		assert_false(TDB_PROTO_HAS(&m, TDB_A_DEADLINE));
	}
	if (TDB_PROTO_HAS(&m, TDB_A_DEADLINE)) {
		assert_true(m.deadline != 0);
		n->dl = m.deadline;
	}
	if (TDB_PROTO_HAS(&m, TDB_A_REASON))
		n->reason = m.reason;
}

/* --- the log (the home's hooks: what the WAL would get) ------------------- */

struct logop {
	uint64_t ver;           /* its record's (log_begin) */
	uint64_t rec;           /* which record (log_commit counts) */
	int tab, key;
	bool del;
	char val[VMAX + 1];
	size_t vlen;
	uint64_t dl;
};

static struct logop logs[NNOTE];
static unsigned int nlogs;
static uint64_t log_ver, log_recs;
static const struct tdbo_table *tabp[NTAB];     /* the owner's tables */

static int lg_reserve(void *arg, const struct tdbo_log_size *sz,
		      const char **msg)
{
	(void)arg;
	(void)sz;
	(void)msg;
	return 0;
}

static void lg_cancel(void *arg, const struct tdbo_log_size *sz)
{
	(void)arg;
	(void)sz;
}

static void lg_begin(void *arg, uint64_t version)
{
	(void)arg;
	log_ver = version;
}

static void lg_op(void *arg, const struct tdbo_table *t, bool del,
		  const void *key, size_t klen, const void *val, size_t vlen,
		  uint64_t deadline)
{
	struct logop *l;
	int i;

	(void)arg;
	for (i = 0; i < NTAB && tabp[i] != t; i++)
		;
	if (i == NTAB)
		return;         /* a table outside the model */
	assert_true(nlogs < NNOTE);
	l = &logs[nlogs++];
	memset(l, 0, sizeof(*l));
	l->ver = log_ver;
	l->rec = log_recs;
	l->tab = i;
	l->key = key_of(key, klen);
	assert_true(l->key >= 0 && l->key < NKEY);
	l->del = del;
	if (!del) {
		assert_true(vlen <= VMAX);
		memcpy(l->val, val, vlen);
		l->vlen = vlen;
	}
	l->dl = deadline;
}

static uint64_t lg_commit(void *arg, const struct tdbo_log_size *sz)
{
	(void)arg;
	(void)sz;
	return ++log_recs;
}

static uint64_t lg_table(void *arg, const struct tdbo_table *t,
			 const struct tdbo_log_size *sz)
{
	(void)arg;
	(void)t;
	(void)sz;
	return ++log_recs;
}

/* --- the feeds (WATCH: what a watcher reads) ------------------------------ */

static struct {
	struct tdb_ring r;
	bool on;
} feed[NTAB];
static struct note fnotes[NNOTE];      /* read from the feeds, in order */
static unsigned int nfnotes;

static void *fd_alloc(void *arg, size_t size, void **cookie)
{
	void *p = aligned_alloc(4096, size);

	(void)arg;
	*cookie = NULL;
	if (p)
		memset(p, 0, size);
	return p;
}

static void fd_free(void *arg, void *mem, size_t size, void *cookie)
{
	(void)arg;
	(void)size;
	(void)cookie;
	free(mem);
}

static int fd_msg(void *arg, const struct nlmsghdr *nlh)
{
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct note *n;

	(void)arg;
	assert_int_equal(tdb_proto_parse(nlh, nlh->nlmsg_len,
					 TDB_PROTO_ANSWER, &m, &ext), 0);
	assert_true(nfnotes < NNOTE);
	n = &fnotes[nfnotes++];
	memset(n, 0, sizeof(*n));
	n->cmd = m.cmd;
	n->tab = tab_of(m.table, m.table_len);
	n->key = TDB_PROTO_HAS(&m, TDB_A_KEY) ? key_of(m.key, m.key_len) : -1;
	n->ver = TDB_PROTO_HAS(&m, TDB_A_VERSION) ? m.rec_version : 0;
	if (TDB_PROTO_HAS(&m, TDB_A_VALUE)) {
		assert_true(m.value_len <= VMAX);
		memcpy(n->val, m.value, m.value_len);
		n->vlen = m.value_len;
	}
	n->dl = TDB_PROTO_HAS(&m, TDB_A_DEADLINE) ? m.deadline : 0;
	n->reason = TDB_PROTO_HAS(&m, TDB_A_REASON) ? m.reason : 0;
	return 0;
}

/* Every feed read to its end: what it carried must be the
 * notifications (on_change) of its table, in their order. */
static void feeds_match(void)
{
	unsigned int t, i, j;

	nfnotes = 0;
	for (t = 0; t < NTAB; t++) {
		uint64_t lost = 0;
		int rc;

		if (!feed[t].on)
			continue;
		do {
			rc = tdb_feed_read(&feed[t].r, 64, fd_msg, NULL, &lost);
			assert_true(rc >= 0);
		} while (rc > 0);
		assert_int_equal(lost, 0);
	}
	for (t = 0; t < NTAB; t++) {
		if (!feed[t].on)
			continue;
		for (i = 0, j = 0; i < nnotes; i++) {
			const struct note *a = &notes[i], *b;

			if (a->tab != (int)t)
				continue;
			while (j < nfnotes && fnotes[j].tab != (int)t)
				j++;
			assert_true(j < nfnotes);
			b = &fnotes[j++];
			assert_true(a->cmd == b->cmd && a->key == b->key);
			assert_true(a->ver == b->ver && a->dl == b->dl);
			assert_true(a->reason == b->reason);
			assert_true(a->vlen == b->vlen &&
				    !memcmp(a->val, b->val, a->vlen));
		}
		while (j < nfnotes && fnotes[j].tab != (int)t)
			j++;
		assert_true(j == nfnotes);      /* nothing more */
	}
}

/* --- answers ------------------------------------------------------------- */

struct part {
	int key;
	char val[VMAX + 1];
	size_t vlen;
	uint64_t ver, dl;
};

struct ans {
	int err;
	char msg[256];
	bool has_val;
	char val[VMAX + 1];
	size_t vlen;
	uint64_t version, deadline;     /* 0: absent */
	bool has_int;
	int64_t ival;
	uint64_t txn;
	struct tdb_proto_stat stat;
	bool has_stat;
	struct tdb_proto_counters ctr;
	bool has_ctr;
	unsigned int nparts;
	struct part parts[NKEY];
};

struct sink {
	struct tdbo_sink s;
	unsigned char buf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	struct ans *a;
	long room;              /* parts it still takes (< 0: any) */
};

static void *s_reserve(struct tdbo_sink *s, size_t len)
{
	struct sink *k = (struct sink *)s;

	if (k->room == 0 || len > sizeof(k->buf))
		return NULL;
	return k->buf;
}

static void fill(struct ans *a, const struct tdb_proto_msg *m)
{
	if (TDB_PROTO_HAS(m, TDB_A_VALUE)) {
		assert_true(m->value_len <= VMAX);
		memcpy(a->val, m->value, m->value_len);
		a->vlen = m->value_len;
		a->has_val = true;
	}
	if (TDB_PROTO_HAS(m, TDB_A_VERSION))
		a->version = m->rec_version;
	if (TDB_PROTO_HAS(m, TDB_A_DEADLINE)) {
		assert_true(m->deadline != 0);
		a->deadline = m->deadline;
	}
	if (TDB_PROTO_HAS(m, TDB_A_INT)) {
		a->ival = m->ival;
		a->has_int = true;
	}
	if (TDB_PROTO_HAS(m, TDB_A_STAT)) {
		a->stat = m->stat;
		a->has_stat = true;
	}
	if (TDB_PROTO_HAS(m, TDB_A_COUNTERS)) {
		a->ctr = m->counters;
		a->has_ctr = true;
	}
	a->txn = m->txn;
}

static void s_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct sink *k = (struct sink *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct ans *a = k->a;

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	if (m.cmd == TDB_CMD_SCAN) {
		struct part *pt;

		if (!TDB_PROTO_HAS(&m, TDB_A_KEY))
			return;
		if (k->room > 0)
			k->room--;
		assert_true(a->nparts < NKEY);
		pt = &a->parts[a->nparts++];
		memset(pt, 0, sizeof(*pt));
		pt->key = key_of(m.key, m.key_len);
		assert_true(pt->key >= 0);
		assert_true(m.value_len <= VMAX);
		memcpy(pt->val, m.value, m.value_len);
		pt->vlen = m.value_len;
		assert_true(TDB_PROTO_HAS(&m, TDB_A_VERSION));
		pt->ver = m.rec_version;
		if (TDB_PROTO_HAS(&m, TDB_A_DEADLINE)) {
			assert_true(m.deadline != 0);
			pt->dl = m.deadline;
		}
		return;
	}
	fill(a, &m);
}

static void sink_init(struct sink *k, struct ans *a, long room)
{
	memset(&k->s, 0, sizeof(k->s));        /* not the buffer */
	memset(a, 0, sizeof(*a));
	k->s.reserve = s_reserve;
	k->s.commit = s_commit;
	k->s.in_read_section = true;
	k->a = a;
	k->room = room;
}

struct world {
	struct tdbo_owner *o;
	struct tdbo_client *c1, *c2;
	struct tdbo_client *c3;         /* watches every table */
};

static struct world W;

/* A hostile u64 written over an attribute's payload after the build
 * (the builder may refuse it): patch_attr 0 for none. */
static uint16_t patch_attr;
static uint64_t patch_val;
static struct tdbo_feed *last_feed;     /* the last WATCH's */

/* Build `in`, parse it back as a transport does (a codec refusal is the
 * answer, with its text), then run it; a dump is left in *dump if
 * asked for, else run to its end. */
static struct ans run_ex(struct tdbo_client *c, struct tdb_proto_msg *in,
			 struct sink *k, struct tdbo_dump **dump)
{
	static unsigned char buf[ROOM] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	struct tdbo_out res;
	struct ans *a = k->a;
	long n;

	n = tdb_proto_build(buf, ROOM, TDB_PROTO_REQUEST, in, &ext);
	if (n <= 0)
		fail_msg("cannot build the request: %ld %s", n,
			 ext.msg ? ext.msg : "");
	if (patch_attr) {
		assert_int_equal(tdb_proto_parse(buf, (size_t)n,
						 TDB_PROTO_REQUEST, &m, &ext),
				 0);
		assert_true(TDB_PROTO_HAS(&m, patch_attr));
		if (patch_attr == TDB_A_EXPIRE_FLAGS) {
			uint32_t v32 = (uint32_t)patch_val;

			memcpy(buf + m.attr_off[patch_attr] + 4, &v32, 4);
		} else {
			memcpy(buf + m.attr_off[patch_attr] + 4, &patch_val, 8);
		}
		patch_attr = 0;
	}
	a->err = tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST, &m, &ext);
	if (!a->err)
		a->err = tdbo_exec(c, &m, &k->s, &ext, &res);
	if (!a->err && m.cmd == TDB_CMD_WATCH)
		last_feed = res.feed;
	if (a->err) {
		snprintf(a->msg, sizeof(a->msg), "%s", ext.msg ? ext.msg : "");
		return *a;
	}
	if (dump) {
		*dump = res.dump;
		return *a;
	}
	while (res.dump) {
		int rc = tdbo_dump_run(res.dump, &k->s, &ext);

		if (rc <= 0) {
			assert_int_equal(rc, 0);
			tdbo_dump_free(res.dump);
			break;
		}
	}
	return *a;
}

static struct ans run(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	static struct sink k;
	struct ans a;

	sink_init(&k, &a, -1);
	return run_ex(c, in, &k, NULL);
}

static struct tdb_proto_msg req(uint8_t cmd, int tab, int key, uint64_t txn)
{
	static char kbuf[8];
	struct tdb_proto_msg m = { .cmd = cmd };

	if (tab >= 0) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE);
		m.table = tname[tab];
		m.table_len = (uint32_t)strlen(tname[tab]);
	}
	if (key >= 0) {
		keyname(kbuf, key);
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = kbuf;
		m.key_len = 3;
	}
	if (txn) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = txn;
	}
	return m;
}

/* An expiry for a PUT or EXPIRE: what to send. */
enum xkind { X_NONE, X_TTL, X_DEADLINE, X_PERSIST };
struct expiry {
	enum xkind kind;
	uint64_t v;             /* ms: the TTL or the deadline */
};

static void set_expiry(struct tdb_proto_msg *m, struct expiry x)
{
	if (x.kind == X_TTL) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m->ttl = x.v;
	} else if (x.kind == X_DEADLINE) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m->deadline = x.v;
	} else if (x.kind == X_PERSIST) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_EXPIRE_FLAGS);
		m->expire_flags = TDB_EXPIRE_PERSIST;
	}
}

/* The deadline a write gets now: its own, else the table's default. */
static uint64_t deadline_of(int tab, struct expiry x)
{
	if (x.kind == X_TTL)
		return now_ms + x.v;
	if (x.kind == X_DEADLINE)
		return x.v;
	if (x.kind == X_PERSIST)
		return 0;
	return tdflt[tab] ? now_ms + tdflt[tab] : 0;
}

static struct ans put_x(struct tdbo_client *c, int tab, int key,
			const char *v, uint32_t flags, uint64_t ifver,
			struct expiry x, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, tab, key, txn);

	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m.value = v;
	m.value_len = (uint32_t)strlen(v);
	if (flags) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_FLAGS);
		m.flags = flags;
	}
	if (ifver) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m.if_version = ifver;
	}
	set_expiry(&m, x);
	return run(c, &m);
}

static struct ans del_x(struct tdbo_client *c, int tab, int key,
			uint64_t ifver, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_DEL, tab, key, txn);

	if (ifver) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m.if_version = ifver;
	}
	return run(c, &m);
}

static struct ans get_x(struct tdbo_client *c, int tab, int key,
			uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_GET, tab, key, txn);

	return run(c, &m);
}

static struct ans incr_x(struct tdbo_client *c, int tab, int key,
			 int64_t delta, uint64_t txn)
{
	struct tdb_proto_msg m = req(TDB_CMD_INCR, tab, key, txn);

	m.attrs |= TDB_PROTO_BIT(TDB_A_DELTA);
	m.delta = delta;
	return run(c, &m);
}

static struct ans expire_x(struct tdbo_client *c, int tab, int key,
			   struct expiry x)
{
	struct tdb_proto_msg m = req(TDB_CMD_EXPIRE, tab, key, 0);

	set_expiry(&m, x);
	return run(c, &m);
}

static struct ans stat_x(int tab)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_STAT, tab, -1, 0);

	return run(W.c1, &m);
}

static uint64_t begin(struct tdbo_client *c)
{
	struct tdb_proto_msg m = req(TDB_CMD_TXN_BEGIN, -1, -1, 0);
	struct ans a = run(c, &m);

	assert_int_equal(a.err, 0);
	assert_true(a.txn != 0);
	return a.txn;
}

static struct ans txn_end(struct tdbo_client *c, uint64_t txn, bool commit)
{
	struct tdb_proto_msg m = req(commit ? TDB_CMD_TXN_COMMIT :
				     TDB_CMD_TXN_ABORT, -1, -1, txn);

	return run(c, &m);
}

static void create(int tab)
{
	struct tdb_proto_msg m = req(TDB_CMD_TABLE_CREATE, tab, -1, 0);

	m.attrs |= TDB_PROTO_BIT(TDB_A_MODE);
	m.mode = 0666;
	if (tdflt[tab]) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = tdflt[tab];
	}
	assert_int_equal(run(W.c1, &m).err, 0);
}

/* --- failing with the model's context -------------------------------------- */

static unsigned int seed_now;

#define want(cond) do {                                                  \
	if (!(cond)) {                                                   \
		fail_msg("seed %u step %lu now %" PRIu64 " (+%" PRIu64   \
			 "): %s", seed_now, steps_done, now_ms,          \
			 now_ms - T0, #cond);                            \
	}                                                                \
} while (0)

/* --- applying notifications to the model -------------------------------- */

/* The log holds exactly the changes the notifications told, in their
 * order: the same key, kind, value, deadline (none for a DEL) and
 * version; each in a record of its own (one_each) or all in one. */
static void log_matches(unsigned int n, bool one_each)
{
	unsigned int i;

	want(nlogs == n);
	for (i = 0; i < n; i++) {
		const struct note *e = &notes[i];
		const struct logop *l = &logs[i];

		want(l->tab == e->tab && l->key == e->key);
		want(l->del == (e->cmd == TDB_CMD_DEL));
		want(l->ver == e->ver);
		want(l->dl == e->dl);
		want(l->vlen == e->vlen && !memcmp(l->val, e->val, e->vlen));
		if (i)
			want(one_each ? l->rec != logs[i - 1].rec :
			     l->rec == logs[i - 1].rec);
	}
	nlogs = 0;
}

static void take_ver(uint64_t v)
{
	want(v > last_ver);
	last_ver = v;
}

/* Exactly one notification: a PUT of (tab, key) with val and deadline
 * dl, or a client's DEL; applied to the model.  Its version. */
static uint64_t expect_one(uint8_t cmd, int tab, int key, const char *val,
			   size_t vlen, uint64_t dl)
{
	struct note *n = &notes[0];
	struct mrec *r = &model[tab].r[key];

	feeds_match();
	want(nnotes == 1);
	want(n->cmd == cmd && n->tab == tab && n->key == key);
	want(n->reason == 0);
	take_ver(n->ver);
	log_matches(1, true);
	if (cmd == TDB_CMD_PUT) {
		want(n->vlen == vlen && !memcmp(n->val, val, vlen));
		if (n->dl != dl)
			fprintf(stderr, "PUT of %s/k%02d: deadline %" PRIu64
				", the model's %" PRIu64 " (was %" PRIu64
				", %s)\n", tname[tab], key, n->dl, dl, r->dl,
				visible(r) ? "visible" : "absent");
		want(n->dl == dl);
		r->phys = true;
		memcpy(r->val, val, vlen);
		r->vlen = vlen;
		r->ver = n->ver;
		r->dl = dl;
	} else {
		/* only a visible record goes; an expired one stays for
		 * the sweep */
		if (visible(r))
			r->phys = false;
	}
	nnotes = 0;
	return n->ver;
}

static void expect_none(void)
{
	feeds_match();
	want(nnotes == 0);
	want(nlogs == 0);       /* nothing logged either */
}

/* The sweep's notifications: each a DEL marked expired of a record that
 * is in the table and expired; applied.  How many. */
static unsigned int take_sweep(void)
{
	unsigned int i, n = nnotes;

	feeds_match();
	log_matches(n, true);   /* each removal one logged DEL */
	for (i = 0; i < n; i++) {
		struct note *e = &notes[i];
		struct mrec *r = &model[e->tab].r[e->key];

		want(e->cmd == TDB_CMD_DEL);
		want(e->reason == TDB_REASON_EXPIRED);
		want(r->phys && expired_at(r->dl, now_ms));
		take_ver(e->ver);
		r->phys = false;
		model[e->tab].expired++;
	}
	nnotes = 0;
	return n;
}

/* --- checking every read path against the model ------------------------ */

struct gm_rec {
	struct tdbo_sink s;
	unsigned char buf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	struct ans a[NTAB * NKEY];
	bool got[NTAB * NKEY];
};

static void *gm_reserve(struct tdbo_sink *s, size_t len)
{
	struct gm_rec *r = (struct gm_rec *)s;

	return len <= sizeof(r->buf) ? r->buf : NULL;
}

static void gm_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct gm_rec *r = (struct gm_rec *)s;
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m, &ext),
			 0);
	assert_true(m.seq < NTAB * NKEY && !r->got[m.seq]);
	r->got[m.seq] = true;
	fill(&r->a[m.seq], &m);
}

static void gm_fail(void *arg, const struct tdb_proto_msg *m, int err,
		    const struct tdb_proto_extack *ext)
{
	struct gm_rec *r = arg;

	assert_true(m->seq < NTAB * NKEY && !r->got[m->seq]);
	r->got[m->seq] = true;
	r->a[m->seq].err = err;
	snprintf(r->a[m->seq].msg, sizeof(r->a[m->seq].msg), "%s",
		 ext->msg ? ext->msg : "");
}

/* A GET's answer against the model's record. */
static void check_get(const struct ans *a, const struct mrec *r,
		      bool with_version)
{
	if (!visible(r)) {
		want(a->err == -ENOENT);
		want(strstr(a->msg, "no such key") != NULL);
		return;
	}
	want(a->err == 0);
	want(a->has_val && a->vlen == r->vlen &&
	     !memcmp(a->val, r->val, r->vlen));
	if (with_version)
		want(a->version == r->ver);
	want(a->deadline == r->dl);
}

static void check_get_many(void)
{
	static unsigned char bufs[NTAB * NKEY][128]
		__attribute__((aligned(8)));
	static struct gm_rec r;
	struct tdb_proto_msg in, m[NTAB * NKEY];
	unsigned int i, n = NTAB * NKEY, done = 0;

	memset(&r.s, 0, sizeof(r.s));
	memset(r.a, 0, sizeof(r.a));
	memset(r.got, 0, sizeof(r.got));
	r.s.reserve = gm_reserve;
	r.s.commit = gm_commit;
	r.s.in_read_section = true;
	for (i = 0; i < n; i++) {
		struct tdb_proto_extack ext = { NULL };
		long len;

		/* interleaved tables: runs of one table, and switches */
		in = req(TDB_CMD_GET, (int)((i / 5) % NTAB), (int)(i % NKEY),
			 0);
		in.seq = i;
		len = tdb_proto_build(bufs[i], sizeof(bufs[i]),
				      TDB_PROTO_REQUEST, &in, &ext);
		assert_true(len > 0);
		assert_int_equal(tdb_proto_parse(bufs[i], (size_t)len,
						 TDB_PROTO_REQUEST, &m[i],
						 &ext), 0);
	}
	while (done < n) {
		unsigned int k = tdbo_get_many(W.c1, m + done, n - done, &r.s,
					       gm_fail, &r);

		want(k > 0);
		done += k;
	}
	for (i = 0; i < n; i++) {
		want(r.got[i]);
		check_get(&r.a[i], &model[(i / 5) % NTAB].r[i % NKEY], true);
	}
}

/* A scan's parts: each key once, each visible with its fields, and
 * every visible key there. */
static void check_scan(int tab, bool snapshot)
{
	struct tdb_proto_msg m = req(TDB_CMD_SCAN, tab, -1, 0);
	bool seen[NKEY] = { false };
	unsigned int i, nvis = 0;
	struct ans a;

	if (snapshot) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		m.scan_flags = TDB_SCAN_SNAPSHOT;
	}
	a = run(W.c1, &m);
	want(a.err == 0);
	for (i = 0; i < a.nparts; i++) {
		const struct part *p = &a.parts[i];
		const struct mrec *r = &model[tab].r[p->key];

		want(!seen[p->key]);
		seen[p->key] = true;
		want(visible(r));
		want(!expired_at(p->dl, now_ms));
		want(p->vlen == r->vlen && !memcmp(p->val, r->val, r->vlen));
		want(p->ver == r->ver && p->dl == r->dl);
	}
	for (i = 0; i < NKEY; i++)
		nvis += visible(&model[tab].r[i]);
	want(a.nparts == nvis);
}

static void check_stat(int tab)
{
	struct ans a = stat_x(tab);
	uint64_t phys = 0, expiring = 0;
	unsigned int i;

	want(a.err == 0 && a.has_stat);
	for (i = 0; i < NKEY; i++) {
		const struct mrec *r = &model[tab].r[i];

		phys += r->phys;
		expiring += r->phys && r->dl;
	}
	want(a.stat.records == phys);
	want(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_EXPIRING));
	want(a.stat.expiring == expiring);
	want(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_EXPIRED));
	want(a.stat.expired == model[tab].expired);
	if (tdflt[tab]) {
		want(a.stat.present & TDB_PROTO_BIT(TDB_STAT_A_DEFAULT_TTL));
		want(a.stat.default_ttl == tdflt[tab]);
	} else {
		want(!(a.stat.present &
		       TDB_PROTO_BIT(TDB_STAT_A_DEFAULT_TTL)));
	}
}

static void check_all(void)
{
	uint64_t x;
	int t, k;

	for (t = 0; t < NTAB; t++) {
		for (k = 0; k < NKEY; k++) {
			const struct mrec *r = &model[t].r[k];
			struct ans a;

			a = get_x(W.c2, t, k, 0);
			check_get(&a, r, true);
			/* EXPIRE's read: the same, with no value */
			a = expire_x(W.c2, t, k, (struct expiry){ X_NONE, 0 });
			if (visible(r)) {
				want(a.err == 0);
				want(a.version == r->ver);
				want(a.deadline == r->dl);
			} else {
				want(a.err == -ENOENT);
				want(strstr(a.msg, "no such key") != NULL);
			}
		}
		check_scan(t, false);
		check_scan(t, true);
		check_stat(t);
	}
	check_get_many();
	/* STATS: the owner's count of records expiry removed */
	{
		struct tdb_proto_msg m = req(TDB_CMD_STATS, -1, -1, 0);
		struct ans a = run(W.c1, &m);

		want(a.err == 0 && a.has_ctr);
		want(a.ctr.present & TDB_PROTO_BIT(TDB_CTR_A_EXPIRED));
		want(a.ctr.expired == model[0].expired + model[1].expired);
	}
	/* GETs inside a transaction (each key read once), then abort */
	x = begin(W.c2);
	for (t = 0; t < NTAB; t++)
		for (k = 0; k < NKEY; k++) {
			struct ans a = get_x(W.c2, t, k, x);

			check_get(&a, &model[t].r[k], true);
		}
	want(txn_end(W.c2, x, false).err == 0);
	expect_none();
}

/* --- random steps --------------------------------------------------------- */

static unsigned int rnd_state;

static unsigned int rnd(unsigned int n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return ((rnd_state >> 8) & 0xffffffu) % n;
}

static struct expiry rnd_expiry(bool put)
{
	struct expiry x = { X_NONE, 0 };

	switch (rnd(put ? 8 : 6)) {
	case 0: case 1:
		x.kind = X_TTL;
		x.v = 1 + rnd(rnd(4) ? 400 : 2000);
		break;
	case 2:
		x.kind = X_TTL;
		x.v = 1;
		break;
	case 3:
		x.kind = X_DEADLINE;
		x.v = now_ms + 1 + rnd(800);
		break;
	case 4:         /* now or already past: a record no read sees */
		x.kind = X_DEADLINE;
		x.v = now_ms - rnd(3);
		break;
	case 5:
		if (!put) {
			x.kind = X_PERSIST;
			break;
		}
		/* fall through */
	default:
		break;  /* none: the table's default, if any */
	}
	return x;
}

static void rnd_value(char *v)
{
	if (rnd(5))
		snprintf(v, VMAX + 1, "%d", (int)rnd(2000) - 1000);
	else
		snprintf(v, VMAX + 1, "v%u", rnd(100000));
}

static bool is_int(const struct mrec *r, int64_t *n)
{
	char buf[VMAX + 1], *end;

	memcpy(buf, r->val, r->vlen);
	buf[r->vlen] = '\0';
	if (!r->vlen || (buf[0] != '-' && (buf[0] < '0' || buf[0] > '9')))
		return false;
	*n = strtoll(buf, &end, 10);
	return !*end;
}

static void step_put(void)
{
	int tab = (int)rnd(NTAB), key = (int)rnd(NKEY);
	struct mrec *r = &model[tab].r[key];
	struct expiry x = rnd_expiry(true);
	uint32_t flags = 0;
	uint64_t ifver = 0, cur = visible(r) ? r->ver : 0;
	char v[VMAX + 1];
	struct ans a;
	int e = 0;

	rnd_value(v);
	switch (rnd(6)) {
	case 0:
		flags = TDB_PUT_IF_ABSENT;
		e = visible(r) ? -EEXIST : 0;
		break;
	case 1:
		flags = TDB_PUT_IF_PRESENT;
		e = visible(r) ? 0 : -ENOENT;
		break;
	case 2:         /* the version it has or had (expired: absent) */
		ifver = r->ver ? r->ver : 1;
		e = ifver == cur ? 0 : -ECANCELED;
		break;
	default:
		break;
	}
	a = put_x(rnd(2) ? W.c1 : W.c2, tab, key, v, flags, ifver, x, 0);
	want(a.err == e);
	if (e) {
		seen.refused++;
		want(strstr(a.msg, e == -EEXIST ? "if-absent" :
			     e == -ENOENT ? "if-present" : "version") != NULL);
		expect_none();
		return;
	}
	expect_one(TDB_CMD_PUT, tab, key, v, strlen(v), deadline_of(tab, x));
}

static void step_del(void)
{
	int tab = (int)rnd(NTAB), key = (int)rnd(NKEY);
	struct mrec *r = &model[tab].r[key];
	uint64_t ifver = rnd(3) ? 0 : (r->ver ? r->ver : 1);
	struct ans a = del_x(W.c1, tab, key, ifver, 0);

	if (!visible(r)) {
		want(a.err == (ifver ? -ECANCELED : -ENOENT));
		expect_none();
		return;
	}
	if (ifver && ifver != r->ver) {
		want(a.err == -ECANCELED);
		expect_none();
		return;
	}
	want(a.err == 0);
	expect_one(TDB_CMD_DEL, tab, key, NULL, 0, 0);
	want(!r->phys);
}

static void step_incr(void)
{
	int tab = (int)rnd(NTAB), key = (int)rnd(NKEY);
	struct mrec *r = &model[tab].r[key];
	int64_t base = 0, delta = (int64_t)rnd(20) - 10;
	uint64_t dl;
	char v[VMAX + 1];
	struct ans a = incr_x(W.c2, tab, key, delta, 0);

	if (visible(r) && !is_int(r, &base)) {
		want(a.err == -EDOM);
		expect_none();
		return;
	}
	want(a.err == 0 && a.has_int);
	want(a.ival == base + delta);
	/* INCR keeps the key's deadline; an absent key gets the
	 * table's default */
	dl = visible(r) ? r->dl : deadline_of(tab, (struct expiry){ 0, 0 });
	seen.incr_kept += visible(r) && r->dl;
	snprintf(v, sizeof(v), "%" PRId64, base + delta);
	want(a.version == expect_one(TDB_CMD_PUT, tab, key, v, strlen(v),
				     dl));
}

static void step_expire(void)
{
	int tab = (int)rnd(NTAB), key = (int)rnd(NKEY);
	struct mrec *r = &model[tab].r[key];
	struct expiry x = rnd_expiry(false);
	struct ans a = expire_x(W.c1, tab, key, x);
	char v[VMAX + 1];
	uint64_t ver;

	if (!visible(r)) {
		want(a.err == -ENOENT);
		want(strstr(a.msg, "no such key") != NULL);
		expect_none();
		return;
	}
	want(a.err == 0);
	if (x.kind == X_NONE) {
		want(a.version == r->ver && a.deadline == r->dl);
		expect_none();
		return;
	}
	seen.exp_set++;
	memcpy(v, r->val, r->vlen);
	ver = expect_one(TDB_CMD_PUT, tab, key, v, r->vlen, deadline_of(tab,
									 x));
	want(a.version == ver);
	want(a.deadline == r->dl);
}

/* The clock: a small step, a big one, or exactly onto (or just short
 * of) a deadline in the table. */
static void step_clock(void)
{
	uint64_t dls[NTAB * NKEY];
	unsigned int n = 0, t, k;

	for (t = 0; t < NTAB; t++)
		for (k = 0; k < NKEY; k++) {
			const struct mrec *r = &model[t].r[k];

			if (r->phys && r->dl > now_ms)
				dls[n++] = r->dl;
		}
	switch (rnd(5)) {
	case 0:
		now_ms += 1;
		break;
	case 1:
		now_ms += rnd(300);
		break;
	case 2:
		now_ms += rnd(2500);
		break;
	default:
		if (n)
			now_ms = dls[rnd(n)] - (rnd(3) ? 0 : 1);
		break;
	}
}

static void step_sweep(void)
{
	unsigned int budget = rnd(2) ? 1 + rnd(8) : TDBO_SWEEP_BUDGET;
	bool again;
	unsigned int n = tdbo_expire_run(W.o, budget, &again);

	want(n <= budget);
	want(take_sweep() == n);
	seen.swept += n;
}

/* Sweeps until no expired record is left: a few rounds at most (each
 * table's pass may start in the middle). */
static void sweep_all(void)
{
	unsigned int round, t, k, left = 1;

	for (round = 0; round < 2 * NTAB + 2 && left; round++) {
		bool again;
		unsigned int n = tdbo_expire_run(W.o, TDBO_SWEEP_BUDGET,
						 &again);

		want(take_sweep() == n);
		seen.swept += n;
		for (left = 0, t = 0; t < NTAB; t++)
			for (k = 0; k < NKEY; k++) {
				const struct mrec *r = &model[t].r[k];

				left += r->phys && expired_at(r->dl, now_ms);
			}
	}
	want(left == 0);
}

/* A transaction: reads, then writes (PUT with an expiry or none, DEL,
 * INCR) of keys it did not write yet, maybe the clock moved, a sweep
 * or another client's write, then the commit, checked against the
 * model as the commit finds it. */
struct top {
	int kind;               /* 0 PUT, 1 DEL, 2 INCR */
	int tab, key;
	char val[VMAX + 1];
	struct expiry x;
	bool keep;              /* INCR of a key with a deadline: kept */
	uint64_t keep_dl;
};

static void step_txn(void)
{
	struct { int tab, key; uint64_t ver; } rd[8];
	struct top op[4];
	unsigned int nrd = 0, nop = 0, i;
	bool written[NTAB][NKEY] = { { false } };
	uint64_t x = begin(W.c1);
	bool stale = false, stale_exp = false;
	unsigned int what;
	struct ans a;

	for (i = rnd(4); i > 0; i--) {
		int tab = (int)rnd(NTAB), key = (int)rnd(NKEY);
		struct mrec *r = &model[tab].r[key];

		a = get_x(W.c1, tab, key, x);
		check_get(&a, r, true);
		rd[nrd].tab = tab;
		rd[nrd].key = key;
		rd[nrd++].ver = visible(r) ? r->ver : 0;
	}
	for (i = 1 + rnd(3); i > 0; i--) {
		struct top *p = &op[nop];
		struct mrec *r;
		int64_t base = 0;

		p->tab = (int)rnd(NTAB);
		p->key = (int)rnd(NKEY);
		if (written[p->tab][p->key])
			continue;
		r = &model[p->tab].r[p->key];
		p->kind = (int)rnd(3);
		p->keep = false;
		if (p->kind == 2 && visible(r) && !is_int(r, &base))
			p->kind = 0;
		if (p->kind == 0) {
			rnd_value(p->val);
			p->x = rnd_expiry(true);
			a = put_x(W.c1, p->tab, p->key, p->val, 0, 0, p->x, x);
			want(a.err == 0);
		} else if (p->kind == 1) {
			want(del_x(W.c1, p->tab, p->key, 0, x).err == 0);
		} else {
			int64_t d = (int64_t)rnd(9) - 4;

			a = incr_x(W.c1, p->tab, p->key, d, x);
			want(a.err == 0 && a.ival == base + d);
			snprintf(p->val, sizeof(p->val), "%" PRId64, base + d);
			/* INCR read the key: in the read set */
			rd[nrd].tab = p->tab;
			rd[nrd].key = p->key;
			rd[nrd++].ver = visible(r) ? r->ver : 0;
			p->x = (struct expiry){ X_NONE, 0 };
			p->keep = visible(r);
			p->keep_dl = r->dl;
		}
		written[p->tab][p->key] = true;
		nop++;
	}
	expect_none();          /* nothing yet */
	switch ((what = rnd(5))) {
	case 0:
		step_clock();
		break;
	case 1:
		step_clock();
		step_sweep();
		break;
	case 2:
		step_put();     /* another client's write: maybe a read key */
		break;
	default:
		break;
	}
	for (i = 0; i < nrd; i++) {
		const struct mrec *r = &model[rd[i].tab].r[rd[i].key];

		stale |= (visible(r) ? r->ver : 0) != rd[i].ver;
		/* read before its deadline, committed after it */
		stale_exp |= rd[i].ver && r->ver == rd[i].ver && !visible(r);
	}
	seen.stale_exp += stale_exp;
	a = txn_end(W.c1, x, true);
	if (stale) {
		seen.stale++;
		want(a.err == -ESTALE);
		/* the text says what happened: expiry is no client's change
		 * (a key swept since reads "deleted or expired") */
		want(strstr(a.msg, what == 0 ? "has expired since" :
			    "changed by another client") != NULL ||
		     (what != 0 && strstr(a.msg, "has expired since")));
		expect_none();
		return;
	}
	want(a.err == 0);
	seen.commits++;
	feeds_match();
	want(nnotes == nop);
	log_matches(nop, false);        /* one record, every op in it */
	for (i = 0; i < nop; i++) {
		const struct top *p = &op[i];
		struct note *n = &notes[i];
		struct mrec *r = &model[p->tab].r[p->key];

		want(n->tab == p->tab && n->key == p->key && !n->reason);
		want(n->ver == notes[0].ver);
		if (p->kind == 1) {
			want(n->cmd == TDB_CMD_DEL);
			if (visible(r))
				r->phys = false;
			continue;
		}
		want(n->cmd == TDB_CMD_PUT);
		want(n->vlen == strlen(p->val) &&
		     !memcmp(n->val, p->val, n->vlen));
		/* the deadline is fixed at commit: now + TTL, or the
		 * table's default now; an INCR keeps the key's */
		if (p->keep)
			want(n->dl == p->keep_dl);
		else
			want(n->dl == deadline_of(p->tab, p->x));
		r->phys = true;
		memcpy(r->val, n->val, n->vlen);
		r->vlen = n->vlen;
		r->ver = n->ver;
		r->dl = n->dl;
	}
	if (nop)
		take_ver(notes[0].ver);
	nnotes = 0;
}

/*
 * Scans paused across steps.  A snapshot scan sends the table as it was
 * when it began, but never a record whose deadline has passed when it
 * is sent; a plain scan sends what is there when it gets to it, never
 * expired.  Each key once; a key visible at the start with a deadline
 * still ahead at the end is sent by a snapshot scan.
 */
struct paused {
	struct sink k;
	struct ans a;
	struct tdbo_dump *d;
	int tab;
	bool snapshot;
	struct mrec at[NKEY];   /* the model when it began */
	uint64_t t0;
	unsigned int first;     /* parts sent before the pause */
};

static void paused_start(struct paused *p, int tab, bool snapshot)
{
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m = req(TDB_CMD_SCAN, tab, -1, 0);
	unsigned int i;
	struct ans a;
	int rc;

	p->tab = tab;
	p->snapshot = snapshot;
	p->t0 = now_ms;
	memcpy(p->at, model[tab].r, sizeof(p->at));
	if (snapshot) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		m.scan_flags = TDB_SCAN_SNAPSHOT;
	}
	sink_init(&p->k, &p->a, (long)rnd(NKEY / 2));
	a = run_ex(W.c1, &m, &p->k, &p->d);
	want(a.err == 0 && p->d);
	rc = tdbo_dump_run(p->d, &p->k.s, &ext);
	want(rc == 1 || rc == 0);
	p->first = p->a.nparts;
	for (i = 0; i < p->first; i++) {
		const struct part *pt = &p->a.parts[i];
		const struct mrec *r = &model[tab].r[pt->key];

		want(visible(r) && !expired_at(pt->dl, now_ms));
		want(pt->ver == r->ver && pt->dl == r->dl);
	}
}

static void paused_finish(struct paused *p)
{
	struct tdb_proto_extack ext = { NULL };
	bool seen[NKEY] = { false };
	unsigned int i;
	int rc;

	p->k.room = -1;
	do {
		rc = tdbo_dump_run(p->d, &p->k.s, &ext);
		want(rc >= 0);
	} while (rc > 0);
	tdbo_dump_free(p->d);
	p->d = NULL;
	for (i = 0; i < p->a.nparts; i++) {
		const struct part *pt = &p->a.parts[i];
		const struct mrec *r = p->snapshot ? &p->at[pt->key] :
				       &model[p->tab].r[pt->key];

		/* a plain scan's first part after the pause may be the
		 * record it took before (a part that did not fit is sent
		 * by the next run): as it was then, if not expired now */
		if (!p->snapshot && i == p->first && i < p->a.nparts &&
		    pt->ver == p->at[pt->key].ver)
			r = &p->at[pt->key];

		want(!seen[pt->key]);
		seen[pt->key] = true;
		if (i < p->first)
			continue;
		/* sent now: not expired now, and as the model says */
		if (expired_at(pt->dl, now_ms))
			fprintf(stderr, "%s scan of %s sent key %d version "
				"%" PRIu64 " deadline +%" PRIu64 " at +%"
				PRIu64 " (began at +%" PRIu64 ")\n",
				p->snapshot ? "snapshot" : "plain",
				tname[p->tab], pt->key, pt->ver, pt->dl - T0,
				now_ms - T0, p->t0 - T0);
		want(!expired_at(pt->dl, now_ms));
		want(r->phys && !expired_at(r->dl, p->snapshot ? p->t0 :
					    now_ms));
		want(pt->vlen == r->vlen && !memcmp(pt->val, r->val, r->vlen));
		want(pt->ver == r->ver && pt->dl == r->dl);
	}
	for (i = 0; i < NKEY; i++) {
		const struct mrec *b = &p->at[i], *r = &model[p->tab].r[i];
		bool alive = b->phys && !expired_at(b->dl, now_ms);

		if (p->snapshot)
			want(seen[i] || !alive);
		else if (alive && r->phys && r->ver == b->ver)
			want(seen[i]);  /* there and unchanged all along */
	}
}

static void random_steps(unsigned int seed, unsigned long steps)
{
	static struct paused ps[2];     /* big: off the stack */
	bool paused = false;
	unsigned long i;

	seed_now = seed;
	rnd_state = seed;
	for (i = 0; i < steps; i++) {
		steps_done = i;
		if (!paused && rnd(40) == 0) {
			paused_start(&ps[0], (int)rnd(NTAB), true);
			paused_start(&ps[1], (int)rnd(NTAB), false);
			paused = true;
			seen.paused++;
		} else if (paused && rnd(8) == 0) {
			paused_finish(&ps[0]);
			paused_finish(&ps[1]);
			paused = false;
		}
		switch (rnd(20)) {
		case 0: case 1: case 2: case 3: case 4: case 5:
			step_put();
			break;
		case 6: case 7:
			step_del();
			break;
		case 8: case 9:
			step_incr();
			break;
		case 10: case 11:
			step_expire();
			break;
		case 12: case 13:
			step_txn();
			break;
		case 14: case 15: case 16:
			step_clock();
			break;
		case 17: case 18:
			step_sweep();
			break;
		default:
			sweep_all();
			break;
		}
		check_all();
	}
	if (paused) {
		paused_finish(&ps[0]);
		paused_finish(&ps[1]);
	}
	/* the end: everything expires and the sweep takes it all */
	now_ms += TDB_TTL_MAX;
	sweep_all();
	check_all();
}

/* --- fixtures -------------------------------------------------------------- */

static int setup(void **state)
{
	static const struct tdbo_hooks hooks = {
		.log_reserve = lg_reserve, .log_cancel = lg_cancel,
		.log_begin = lg_begin, .log_op = lg_op,
		.log_commit = lg_commit, .log_create = lg_table,
		.log_drop = lg_table,
		.feed_alloc = fd_alloc, .feed_free = fd_free,
	};
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_cred user = { 1000, 1000, 0, NULL };
	int err, t;

	(void)state;
	memset(&W, 0, sizeof(W));
	memset(model, 0, sizeof(model));
	nnotes = 0;
	nlogs = 0;
	last_ver = 0;
	now_ms = T0;
	W.o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(W.o);
	tdbo_owner_set_clock(W.o, test_clock, NULL);
	tdbo_owner_on_change(W.o, on_change, NULL);
	W.c1 = tdbo_client_new(W.o, &root, false, NULL, NULL, &err);
	W.c2 = tdbo_client_new(W.o, &user, false, NULL, NULL, &err);
	W.c3 = tdbo_client_new(W.o, &root, true, NULL, NULL, &err);
	assert_non_null(W.c1);
	assert_non_null(W.c2);
	assert_non_null(W.c3);
	for (t = 0; t < NTAB; t++) {
		struct tdbo_table *tp;

		create(t);
		tp = tdbo_table_get(W.o, tname[t]);
		assert_non_null(tp);
		tabp[t] = tp;
		tdbo_table_put(tp);     /* the registry holds it meanwhile */
	}
	for (t = 0; t < NTAB; t++) {
		struct tdb_proto_msg m = req(TDB_CMD_WATCH, t, -1, 0);
		unsigned char *mem;

		last_feed = NULL;
		assert_int_equal(run(W.c3, &m).err, 0);
		assert_non_null(last_feed);
		mem = tdbo_feed_mem(last_feed);
		assert_int_equal(tdb_ring_attach_consumer(&feed[t].r, mem,
				mem + TDB_RING_HDR_SIZE,
				tdbo_feed_size(last_feed) - TDB_RING_HDR_SIZE,
				TDB_RING_FEED), 0);
		feed[t].on = true;
	}
	nlogs = 0;
	return 0;
}

static int teardown(void **state)
{
	int t;

	(void)state;
	for (t = 0; t < NTAB; t++)
		if (feed[t].on) {
			tdb_ring_detach(&feed[t].r);
			feed[t].on = false;
		}
	tdbo_client_free(W.c3);
	tdbo_client_free(W.c1);
	tdbo_client_free(W.c2);
	tdbo_owner_free(W.o);
	return 0;
}

/* --- the tests -------------------------------------------------------------- */

static void model_random(void **state)
{
	const char *s = getenv("TDB_EXPIRE_SEED");
	const char *n = getenv("TDB_EXPIRE_STEPS");
	unsigned long steps = n ? strtoul(n, NULL, 10) : 2000;
	unsigned int seed;

	(void)state;
	if (s) {
		random_steps((unsigned int)strtoul(s, NULL, 10), steps);
		return;
	}
	for (seed = 1; seed <= 8; seed++) {
		teardown(state);
		setup(state);
		random_steps(seed, steps);
	}
	printf("commits %lu, stale %lu (a read key expired: %lu), swept %lu, paused scans %lu, "
	       "refused puts %lu, INCRs keeping a deadline %lu, EXPIRE "
	       "writes %lu\n", seen.commits, seen.stale, seen.stale_exp, seen.swept,
	       seen.paused, seen.refused, seen.incr_kept, seen.exp_set);
}

/* A record is absent from its deadline on, not a millisecond later,
 * and present until then, on every read path the model test checks. */
static void expires_at_deadline(void **state)
{
	struct ans a;

	(void)state;
	a = put_x(W.c1, 0, 1, "x", 0, 0, (struct expiry){ X_TTL, 100 }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 1, "x", 1, T0 + 100);
	now_ms = T0 + 99;
	check_all();
	a = get_x(W.c1, 0, 1, 0);
	assert_int_equal(a.err, 0);
	assert_int_equal(a.deadline, T0 + 100);
	now_ms = T0 + 100;
	check_all();
	assert_int_equal(get_x(W.c1, 0, 1, 0).err, -ENOENT);
	/* still in the table until the sweep; IF_ABSENT takes its place */
	assert_int_equal(stat_x(0).stat.records, 1);
	a = put_x(W.c1, 0, 1, "y", TDB_PUT_IF_ABSENT, 0,
		  (struct expiry){ X_NONE, 0 }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 1, "y", 1, 0);
	check_all();
	/* the default TTL: an absent key's INCR gets it */
	a = incr_x(W.c1, 1, 2, 5, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 1, 2, "5", 1, T0 + 100 + DFLT_TTL);
	now_ms += DFLT_TTL - 1;
	check_all();
	now_ms += 1;
	check_all();
	sweep_all();
	check_all();
	assert_int_equal(stat_x(1).stat.expired, 1);
}

/* EXPIRE's read needs read permission, a set or PERSIST write
 * permission: uid 1000 on root's 0644 table reads but cannot change. */
static void expire_needs_write(void **state)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_CREATE };
	struct ans a;

	(void)state;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_MODE);
	m.table = "ro";
	m.table_len = 2;
	m.mode = 0644;
	assert_int_equal(run(W.c1, &m).err, 0);
	m = (struct tdb_proto_msg){ .cmd = TDB_CMD_PUT };
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
		  TDB_PROTO_BIT(TDB_A_VALUE) | TDB_PROTO_BIT(TDB_A_TTL);
	m.table = "ro";
	m.table_len = 2;
	m.key = "k";
	m.key_len = 1;
	m.value = "v";
	m.value_len = 1;
	m.ttl = 500;
	assert_int_equal(run(W.c1, &m).err, 0);
	m.attrs &= ~(TDB_PROTO_BIT(TDB_A_VALUE) | TDB_PROTO_BIT(TDB_A_TTL));
	m.cmd = TDB_CMD_EXPIRE;
	a = run(W.c2, &m);
	assert_int_equal(a.err, 0);
	assert_int_equal(a.deadline, T0 + 500);
	set_expiry(&m, (struct expiry){ X_TTL, 100000 });
	a = run(W.c2, &m);
	assert_int_equal(a.err, -EACCES);
	m.attrs &= ~TDB_PROTO_BIT(TDB_A_TTL);
	set_expiry(&m, (struct expiry){ X_PERSIST, 0 });
	a = run(W.c2, &m);
	assert_int_equal(a.err, -EACCES);
	m.attrs &= ~TDB_PROTO_BIT(TDB_A_EXPIRE_FLAGS);
	a = run(W.c2, &m);
	assert_int_equal(a.err, 0);
	assert_int_equal(a.deadline, T0 + 500);        /* unchanged */
	expect_none();  /* "ro" is not in the model: nothing of it */
}

/* Hostile values, each refused with its errno and a text naming it. */
static void hostile(void **state)
{
	struct tdb_proto_msg m;
	struct ans a;

	(void)state;
	a = put_x(W.c1, 0, 0, "1", 0, 0, (struct expiry){ X_NONE, 0 }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 0, "1", 1, 0);
	/* TTL 0 and over TDB_TTL_MAX: the codec, whatever the builder
	 * allows (the u64 is written over the built message) */
	patch_attr = TDB_A_TTL;
	patch_val = 0;
	a = put_x(W.c1, 0, 0, "2", 0, 0, (struct expiry){ X_TTL, 1 }, 0);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "TTL is 0"));
	patch_attr = TDB_A_TTL;
	patch_val = TDB_TTL_MAX + 1;
	a = put_x(W.c1, 0, 0, "2", 0, 0, (struct expiry){ X_TTL, 1 }, 0);
	assert_int_equal(a.err, -ERANGE);
	assert_non_null(strstr(a.msg, "TTL is over 10 years"));
	patch_attr = TDB_A_TTL;
	patch_val = UINT64_MAX;
	a = expire_x(W.c1, 0, 0, (struct expiry){ X_TTL, 1 });
	assert_int_equal(a.err, -ERANGE);
	assert_non_null(strstr(a.msg, "TTL"));
	/* the greatest TTL is taken */
	a = put_x(W.c1, 0, 0, "2", 0, 0,
		  (struct expiry){ X_TTL, TDB_TTL_MAX }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 0, "2", 1, T0 + TDB_TTL_MAX);
	/* DEADLINE 0; more than 10 years ahead; exactly 10 years: in */
	patch_attr = TDB_A_DEADLINE;
	patch_val = 0;
	a = put_x(W.c1, 0, 0, "3", 0, 0, (struct expiry){ X_DEADLINE, 1 }, 0);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "DEADLINE 0"));
	a = put_x(W.c1, 0, 0, "3", 0, 0,
		  (struct expiry){ X_DEADLINE, T0 + TDB_TTL_MAX + 1 }, 0);
	assert_int_equal(a.err, -ERANGE);
	assert_non_null(strstr(a.msg, "DEADLINE is more than 10 years"));
	a = expire_x(W.c1, 0, 0,
		     (struct expiry){ X_DEADLINE, UINT64_MAX });
	assert_int_equal(a.err, -ERANGE);
	assert_non_null(strstr(a.msg, "DEADLINE is more than 10 years"));
	/* the same in a transaction: refused when added */
	{
		uint64_t x = begin(W.c1);

		a = put_x(W.c1, 0, 0, "3", 0, 0,
			  (struct expiry){ X_DEADLINE,
					   T0 + TDB_TTL_MAX + 1 }, x);
		assert_int_equal(a.err, -ERANGE);
		assert_int_equal(txn_end(W.c1, x, false).err, 0);
	}
	expect_none();
	a = put_x(W.c1, 0, 0, "3", 0, 0,
		  (struct expiry){ X_DEADLINE, T0 + TDB_TTL_MAX }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 0, "3", 1, T0 + TDB_TTL_MAX);
	/* TTL and DEADLINE together: PUT and EXPIRE */
	m = req(TDB_CMD_PUT, 0, 0, 0);
	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m.value = "4";
	m.value_len = 1;
	set_expiry(&m, (struct expiry){ X_TTL, 10 });
	set_expiry(&m, (struct expiry){ X_DEADLINE, T0 + 10 });
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "TTL and DEADLINE together"));
	m = req(TDB_CMD_EXPIRE, 0, 0, 0);
	set_expiry(&m, (struct expiry){ X_TTL, 10 });
	set_expiry(&m, (struct expiry){ X_DEADLINE, T0 + 10 });
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "TTL and DEADLINE together"));
	/* EXPIRE with PERSIST and a TTL (or a DEADLINE) */
	m = req(TDB_CMD_EXPIRE, 0, 0, 0);
	set_expiry(&m, (struct expiry){ X_PERSIST, 0 });
	set_expiry(&m, (struct expiry){ X_TTL, 10 });
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "PERSIST with a TTL or DEADLINE"));
	m = req(TDB_CMD_EXPIRE, 0, 0, 0);
	set_expiry(&m, (struct expiry){ X_PERSIST, 0 });
	set_expiry(&m, (struct expiry){ X_DEADLINE, T0 + 10 });
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "PERSIST with a TTL or DEADLINE"));
	/* an unknown EXPIRE flag */
	m = req(TDB_CMD_EXPIRE, 0, 0, 0);
	m.attrs |= TDB_PROTO_BIT(TDB_A_EXPIRE_FLAGS);
	m.expire_flags = TDB_EXPIRE_PERSIST;
	patch_attr = TDB_A_EXPIRE_FLAGS;
	patch_val = 1u << 7;
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EOPNOTSUPP);
	assert_non_null(strstr(a.msg, "unknown EXPIRE flag"));
	expect_none();
	/* EXPIRE of an absent key, then of an expired one: -ENOENT, for
	 * the read, a set and PERSIST alike */
	a = expire_x(W.c1, 0, 5, (struct expiry){ X_NONE, 0 });
	assert_int_equal(a.err, -ENOENT);
	assert_non_null(strstr(a.msg, "no such key"));
	a = put_x(W.c1, 0, 5, "v", 0, 0, (struct expiry){ X_TTL, 10 }, 0);
	assert_int_equal(a.err, 0);
	expect_one(TDB_CMD_PUT, 0, 5, "v", 1, T0 + 10);
	now_ms = T0 + 10;
	a = expire_x(W.c1, 0, 5, (struct expiry){ X_NONE, 0 });
	assert_int_equal(a.err, -ENOENT);
	assert_non_null(strstr(a.msg, "no such key"));
	a = expire_x(W.c1, 0, 5, (struct expiry){ X_TTL, 1000 });
	assert_int_equal(a.err, -ENOENT);
	assert_non_null(strstr(a.msg, "no such key"));
	a = expire_x(W.c1, 0, 5, (struct expiry){ X_PERSIST, 0 });
	assert_int_equal(a.err, -ENOENT);
	assert_non_null(strstr(a.msg, "no such key"));
	expect_none();
	/* a table's default TTL of 0 or over the max */
	m = req(TDB_CMD_TABLE_CREATE, -1, -1, 0);
	m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_TTL);
	m.table = "zero";
	m.table_len = 4;
	m.ttl = 1;
	patch_attr = TDB_A_TTL;
	patch_val = 0;
	a = run(W.c1, &m);
	assert_int_equal(a.err, -EINVAL);
	assert_non_null(strstr(a.msg, "TTL is 0"));
	check_all();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(expires_at_deadline, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(expire_needs_write, setup,
						teardown),
		cmocka_unit_test_setup_teardown(model_random, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
