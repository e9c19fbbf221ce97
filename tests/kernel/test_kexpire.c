// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_kexpire.c - expiry in tdb.ko (issue 27): deadlines through every
 * transport and read path, the sweep (kmod/sweep.c) removing expired
 * records without reads, watchers told why, and unload while the sweep
 * works.  tdb.ko only (module parameters, generic netlink, rmmod).
 *
 * Requests are built with the codec (src/proto: TDB_A_TTL,
 * TDB_A_DEADLINE, TDB_A_EXPIRE_FLAGS) on raw clients: a /dev/tdb client
 * with rings (kt_raw) and a generic netlink socket (kt_genl); the
 * zero-copy map is libtdbclient's (a connection with rings maps the
 * table; its reader compares deadlines with its own clock).
 *
 * The sweep is held off (sweep_ms=0) while reads are checked, so an
 * expired record is still in the table (TABLE_STAT's RECORDS counts
 * it) and every read path must hide it by itself; then sweep_ms=100
 * lets the sweep go, and RECORDS falls to 0 with no read at all.
 *
 *  1. sweep_ms: out of range refused (EINVAL), 0 taken.
 *  2. PUT with TTL and with DEADLINE over the rings and genl; GET over
 *     both gives the value and DEADLINE (TTL: within [before + TTL,
 *     after + TTL] of CLOCK_REALTIME; DEADLINE: as given; none for a
 *     plain PUT); SCAN and snapshot SCAN give the same deadlines; the
 *     map reads the values.  EXPIRE reads (VERSION and DEADLINE), sets
 *     (TTL over genl, DEADLINE over the rings) and clears (PERSIST: a
 *     new version, no DEADLINE after); of an absent key ENOENT.
 *     Past the deadlines: GET (rings, genl), SCAN (rings, genl), the
 *     snapshot SCAN and the map say absent, the persisted key stays;
 *     TABLE_STAT still counts them (RECORDS, EXPIRING), EXPIRED 0.
 *  3. A table default TTL (TABLE_CREATE's TTL): TABLE_STAT's
 *     DEFAULT_TTL, a plain PUT gets it, a PUT's own TTL wins.
 *  4. The sweep: N records with a TTL, expired, RECORDS == N; with
 *     sweep_ms=100 RECORDS falls to 0 within SWEEP_BOUND_MS, the
 *     table's EXPIRED is N and STATS' EXPIRED grows by every expired
 *     record of the test; a /dev/tdb watcher (tdbc_watch) gets a DEL
 *     of each key once; a /dev/tdb feed read raw and the "changes"
 *     group get each PUT with its DEADLINE and each sweep DEL once
 *     with REASON TDB_REASON_EXPIRED, a client's DEL without REASON.
 *  5. Unload while the sweep works: M expired records in a table, every
 *     client closed, sweep_ms=100 (the sweep starts at once), rmmod:
 *     done within UNLOAD_BOUND_MS, the module gone, the kernel log
 *     says "unloaded" (not "a region was leaked"); tdb.ko loaded again.
 *     (The guest kernel has no kmemleak; run-qemu.sh's memory check
 *     after the last unload and its scan of the log for WARNING, BUG,
 *     Oops, hung tasks cover what a work left running would do.)
 *  6. Beside a supervisor (tdb.ko reloaded with log_ring_mb=1, the test
 *     claims the role): no sweep while recovering; a log ring filled
 *     to its last byte refuses the sweep's DELs (nothing applied, a
 *     bounded number of tries); DURABLE makes room and each DEL is one
 *     logged record.  tdb.ko is reloaded plain at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>

#include "proto.h"
#include "ring.h"
#include "kt.h"

#define TTL_MS          4000u   /* part 2's short TTL */
#define HOUR_MS         3600000u
#define DEF_TTL_MS      1000u   /* part 3's table default */
#define SWEEP_TTL_MS    800u
#define SWEEP_BOUND_MS  15000u  /* RECORDS at 0 within this (TCG) */
#define UNLOAD_BOUND_MS 10000u
#define BATCH           200u    /* raw PUTs per flush */
#define PARAM           "/sys/module/tdb/parameters/sweep_ms"
#define TDBO_PERIOD_MS  100u    /* sweep_ms's default */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Sleep until CLOCK_REALTIME passes t (ms since the epoch). */
static void sleep_past(uint64_t t)
{
	uint64_t n;

	while ((n = now_ms()) <= t)
		h_sleep_ms((unsigned int)(t - n + 1));
}

/* Write the sweep_ms parameter: 0 or the errno. */
static int sweep_ms(const char *v)
{
	int fd = open(PARAM, O_WRONLY);
	int err = 0;

	CHECK(fd >= 0, "open %s: %s (tdb.ko has no sweep_ms?)", PARAM,
	      strerror(errno));
	if (write(fd, v, strlen(v)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* --- raw requests over the rings ------------------------------------------ */

static unsigned char abuf[1 << 17] __attribute__((aligned(8)));

/* One request, one answer (parsed into *a; its bytes in abuf): the
 * answer's errno (0: an ack or a reply), its text in *msg. */
static int rcall(struct kt_raw *r, struct tdb_proto_msg *req,
		 struct tdb_proto_msg *a, const char **msg)
{
	struct tdb_proto_extack ext = { 0 };
	long len;
	int err;

	kt_raw_queue(r, req);
	kt_raw_flush(r);
	len = kt_raw_recv(r, abuf, sizeof(abuf), 10000);
	memset(a, 0, sizeof(*a));
	err = tdb_proto_parse(abuf, (size_t)len, TDB_PROTO_ANSWER, a, &ext);
	CHECK(err == 0, "a ring answer that does not parse: %s", ext.msg);
	CHECK(a->seq == req->seq, "answer %u to request %u", a->seq,
	      req->seq);
	if (msg)
		*msg = a->ext.msg ? a->ext.msg : "";
	return a->type == NLMSG_ERROR ? a->error : 0;
}

static struct tdb_proto_msg put_msg(const char *table, const char *key,
				    const char *val, uint64_t ttl,
				    uint64_t deadline)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE),
		.table = table, .key = key, .key_len = (uint32_t)strlen(key),
		.value = val, .value_len = (uint32_t)strlen(val),
	};

	if (ttl) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = ttl;
	}
	if (deadline) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m.deadline = deadline;
	}
	return m;
}

static struct tdb_proto_msg key_msg(unsigned int cmd, const char *table,
				    const char *key)
{
	struct tdb_proto_msg m = {
		.cmd = (uint8_t)cmd,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY),
		.table = table, .key = key, .key_len = (uint32_t)strlen(key),
	};

	return m;
}

static void rput(struct kt_raw *r, const char *table, const char *key,
		 const char *val, uint64_t ttl, uint64_t deadline)
{
	struct tdb_proto_msg m = put_msg(table, key, val, ttl, deadline), a;
	const char *msg;
	int err = rcall(r, &m, &a, &msg);

	CHECK(err == 0, "ring PUT %s/%s (ttl %llu, deadline %llu): %s %s",
	      table, key, (unsigned long long)ttl,
	      (unsigned long long)deadline, h_errname(err), msg);
}

/* A record as a read saw it. */
struct seen {
	int err;
	char val[64];
	uint64_t version, deadline;     /* deadline 0: none */
};

static void take(const struct tdb_proto_msg *a, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	CHECK(a->value_len < sizeof(s->val), "a value of %u bytes",
	      a->value_len);
	tdb_proto_value_copy(a, s->val);
	s->version = TDB_PROTO_HAS(a, TDB_A_VERSION) ? a->rec_version : 0;
	s->deadline = TDB_PROTO_HAS(a, TDB_A_DEADLINE) ? a->deadline : 0;
}

static struct seen rget(struct kt_raw *r, const char *table, const char *key)
{
	struct tdb_proto_msg m = key_msg(TDB_CMD_GET, table, key), a;
	struct seen s = { 0 };
	const char *msg;
	int err = rcall(r, &m, &a, &msg);

	if (err) {
		CHECK(err == -ENOENT, "ring GET %s/%s: %s %s", table, key,
		      h_errname(err), msg);
		s.err = err;
		return s;
	}
	take(&a, &s);
	return s;
}

/* EXPIRE on the rings: ttl, deadline or persist (at most one; none:
 * read).  The errno; the reply's VERSION and DEADLINE in *s. */
static int rexpire(struct kt_raw *r, const char *table, const char *key,
		   uint64_t ttl, uint64_t deadline, bool persist,
		   struct seen *s)
{
	struct tdb_proto_msg m = key_msg(TDB_CMD_EXPIRE, table, key), a;
	const char *msg;
	int err;

	if (ttl) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = ttl;
	}
	if (deadline) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m.deadline = deadline;
	}
	if (persist) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_EXPIRE_FLAGS);
		m.expire_flags = TDB_EXPIRE_PERSIST;
	}
	err = rcall(r, &m, &a, &msg);
	memset(s, 0, sizeof(*s));
	s->err = err;
	if (err) {
		CHECK(strlen(msg) > 0, "EXPIRE %s/%s: %s without a message",
		      table, key, h_errname(err));
		return err;
	}
	CHECK(a.cmd == TDB_CMD_EXPIRE && TDB_PROTO_HAS(&a, TDB_A_VERSION),
	      "EXPIRE %s/%s: a reply without VERSION", table, key);
	s->version = a.rec_version;
	s->deadline = TDB_PROTO_HAS(&a, TDB_A_DEADLINE) ? a.deadline : 0;
	return 0;
}

static struct tdb_proto_stat rstat(struct kt_raw *r, const char *table)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_STAT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = table,
	}, a;
	const char *msg;
	int err = rcall(r, &m, &a, &msg);

	CHECK(err == 0, "TABLE_STAT %s: %s %s", table, h_errname(err), msg);
	return a.stat;
}

static uint64_t stat_get(const struct tdb_proto_stat *st, unsigned int attr,
			 uint64_t v, const char *table, const char *name)
{
	CHECK(st->present & TDB_PROTO_BIT(attr), "TABLE_STAT %s has no %s",
	      table, name);
	return v;
}
#define STAT(st, table, F, f) \
	stat_get(&(st), TDB_STAT_A_##F, (st).f, table, #F)

static uint64_t rstats_expired(struct kt_raw *r)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS }, a;
	int err = rcall(r, &m, &a, NULL);

	CHECK(err == 0, "STATS: %s", h_errname(err));
	CHECK(a.counters.present & TDB_PROTO_BIT(TDB_CTR_A_EXPIRED),
	      "STATS has no EXPIRED");
	return a.counters.expired;
}

/* A SCAN on the rings (flags: TDB_SCAN_*): each part's key and deadline
 * into keys[] / dls[] (at most max); the count. */
static unsigned int rscan(struct kt_raw *r, const char *table,
			  uint32_t flags, char (*keys)[32], uint64_t *dls,
			  unsigned int max)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_SCAN,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = table,
	}, a;
	unsigned int n = 0;

	if (flags) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_SCAN_FLAGS);
		m.scan_flags = flags;
	}
	kt_raw_queue(r, &m);
	kt_raw_flush(r);
	for (;;) {
		struct tdb_proto_extack ext = { 0 };
		long len = kt_raw_recv(r, abuf, sizeof(abuf), 10000);
		int err = tdb_proto_parse(abuf, (size_t)len, TDB_PROTO_ANSWER,
					  &a, &ext);

		CHECK(err == 0, "a SCAN part that does not parse: %s",
		      ext.msg);
		if (a.type == NLMSG_DONE)
			break;
		CHECK(a.type != NLMSG_ERROR, "SCAN %s: %s %s", table,
		      h_errname(a.error), a.ext.msg ? a.ext.msg : "");
		if (!TDB_PROTO_HAS(&a, TDB_A_KEY))
			continue;       /* a cursor-only part */
		CHECK(n < max, "SCAN %s: more than %u records", table, max);
		CHECK(a.key_len < 32, "SCAN %s: a key of %u bytes", table,
		      a.key_len);
		memcpy(keys[n], a.key, a.key_len);
		keys[n][a.key_len] = 0;
		dls[n] = TDB_PROTO_HAS(&a, TDB_A_DEADLINE) ? a.deadline : 0;
		n++;
	}
	return n;
}

/* "s-<i>" with i < n: true and *i. */
static bool key_index(const void *key, size_t klen, unsigned int n,
		      unsigned int *i)
{
	char k[32];

	if (klen < 3 || klen >= sizeof(k) || memcmp(key, "s-", 2))
		return false;
	memcpy(k, key, klen);
	k[klen] = 0;
	return sscanf(k + 2, "%u", i) == 1 && *i < n;
}

/* n PUTs of prefix-<i> with ttl, BATCH to a flush, on raw clients of
 * their own (a kt_raw's rings do not wrap: a fresh one every 32 KiB). */
static void bulk_put(const char *table, const char *prefix, unsigned int n,
		     uint64_t ttl)
{
	struct kt_raw r;
	char key[32];
	unsigned int i;

	kt_raw_open(&r);
	for (i = 0; i < n; ) {
		unsigned int b, j;

		if (r.prod > (32u << 10)) {
			kt_raw_close(&r);
			kt_raw_open(&r);
		}
		for (b = 0; b < BATCH && i + b < n; b++) {
			struct tdb_proto_msg m;

			snprintf(key, sizeof(key), "%s-%u", prefix, i + b);
			m = put_msg(table, key, "value", ttl, 0);
			kt_raw_queue(&r, &m);
		}
		kt_raw_flush(&r);
		for (j = 0; j < b; j++) {
			struct tdb_proto_extack ext = { 0 };
			struct tdb_proto_msg a;
			long len = kt_raw_recv(&r, abuf, sizeof(abuf), 10000);

			CHECK(tdb_proto_parse(abuf, (size_t)len,
					      TDB_PROTO_ANSWER, &a, &ext) == 0 &&
			      a.type == NLMSG_ERROR && a.error == 0,
			      "PUT %s-%u with TTL %llu: %s", prefix, i + j,
			      (unsigned long long)ttl, h_errname(a.error));
		}
		i += b;
	}
	kt_raw_close(&r);
}

/* A /dev/tdb change feed read raw (tdb/kdev.h, WATCH's cookie; the
 * ring core's feed reader): every message parsed, REASON included,
 * which libtdbclient's events do not carry yet. */
struct rawfeed {
	struct kt_raw r;
	void *hdr, *data;
	uint32_t size;
	struct tdb_ring ring;
	/* what the reader counts (feed_cb) */
	unsigned int n, dels, puts;
	bool plain;
	unsigned char *seen;
};

static void rawfeed_open(struct rawfeed *f, const char *table)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_WATCH,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = table,
	}, a;
	struct tdb_dev_watch_cookie ck;
	const char *msg;
	uint64_t off;
	int err;

	memset(f, 0, sizeof(*f));
	kt_raw_open(&f->r);
	err = rcall(&f->r, &m, &a, &msg);
	CHECK(err == 0, "raw WATCH %s: %s %s", table, h_errname(err), msg);
	CHECK(a.ext.cookie_len == sizeof(ck), "WATCH's cookie is %u bytes",
	      a.ext.cookie_len);
	memcpy(&ck, a.ext.cookie, sizeof(ck));
	off = (uint64_t)ck.offset_hi << 32 | ck.offset_lo;
	f->hdr = mmap(NULL, TDB_RING_HDR_SIZE, PROT_READ, MAP_SHARED, f->r.fd,
		      (off_t)off);
	CHECK(f->hdr != MAP_FAILED, "mmap the feed's header: %s",
	      strerror(errno));
	f->size = ((const struct tdb_ring_hdr *)f->hdr)->data_size;
	f->data = mmap(NULL, f->size, PROT_READ, MAP_SHARED, f->r.fd,
		       (off_t)(off + TDB_RING_HDR_SIZE));
	CHECK(f->data != MAP_FAILED, "mmap the feed's %u bytes: %s", f->size,
	      strerror(errno));
	err = tdb_ring_attach_consumer(&f->ring, f->hdr, f->data, f->size,
				       TDB_RING_FEED);
	CHECK(err == 0, "attach to the feed: %s", h_errname(err));
	err = tdb_feed_start_at(&f->ring, ck.seq);
	CHECK(err == 0, "feed start at %u: %s", ck.seq, h_errname(err));
}

static void rawfeed_close(struct rawfeed *f)
{
	tdb_ring_detach(&f->ring);
	munmap(f->data, f->size);
	munmap(f->hdr, TDB_RING_HDR_SIZE);
	kt_raw_close(&f->r);
	free(f->seen);
}

/* --- raw generic netlink -------------------------------------------------- */

static unsigned char gbuf[1 << 17] __attribute__((aligned(8)));

/* One request, its answer parsed into *a: the errno (0: ack or reply). */
static int gcall(struct kt_genl *g, struct tdb_proto_msg *req,
		 struct tdb_proto_msg *a, const char **msg)
{
	unsigned char out[8192] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { 0 };
	struct nlmsghdr *nlh = (struct nlmsghdr *)out;
	long len;

	req->seq = ++g->seq;
	len = tdb_proto_build(out, sizeof(out), TDB_PROTO_REQUEST, req, &ext);
	CHECK(len > 0, "cannot build a genl request: %s", ext.msg);
	nlh->nlmsg_type = (uint16_t)g->family;
	CHECK(send(g->fd, out, (size_t)len, 0) == len, "genl send: %s",
	      strerror(errno));
	for (;;) {
		long n = recv(g->fd, gbuf, sizeof(gbuf), 0);
		struct nlmsghdr *r;

		CHECK(n > 0, "genl recv: %s", n < 0 ? strerror(errno) : "EOF");
		for (r = (struct nlmsghdr *)gbuf; mnl_nlmsg_ok(r, (int)n);
		     r = mnl_nlmsg_next(r, (int *)&n)) {
			int err;

			if (r->nlmsg_seq != req->seq)
				continue;
			memset(a, 0, sizeof(*a));
			err = tdb_proto_parse_family(r, r->nlmsg_len,
						     TDB_PROTO_ANSWER,
						     (uint16_t)g->family, a,
						     &ext);
			CHECK(err == 0, "a genl answer that does not parse: "
			      "%s", ext.msg);
			if (msg)
				*msg = a->ext.msg ? a->ext.msg : "";
			return a->type == NLMSG_ERROR ? a->error : 0;
		}
	}
}

static void gput(struct kt_genl *g, const char *table, const char *key,
		 const char *val, uint64_t ttl, uint64_t deadline)
{
	struct tdb_proto_msg m = put_msg(table, key, val, ttl, deadline), a;
	const char *msg;
	int err = gcall(g, &m, &a, &msg);

	CHECK(err == 0, "genl PUT %s/%s: %s %s", table, key, h_errname(err),
	      msg);
}

static struct seen gget(struct kt_genl *g, const char *table,
			const char *key)
{
	struct tdb_proto_msg m = key_msg(TDB_CMD_GET, table, key), a;
	struct seen s = { 0 };
	const char *msg;
	int err = gcall(g, &m, &a, &msg);

	if (err) {
		CHECK(err == -ENOENT, "genl GET %s/%s: %s %s", table, key,
		      h_errname(err), msg);
		s.err = err;
		return s;
	}
	take(&a, &s);
	return s;
}

/* --- 2. reads ------------------------------------------------------------- */

#define RT "kx_reads"

struct want {
	const char *key, *val;
	uint64_t lo, hi;        /* the deadline's bounds; 0: none */
};

/* GET over both transports: the value and a deadline within bounds. */
static void check_present(struct kt_raw *r, struct kt_genl *g,
			  const struct want *w)
{
	struct seen s[2] = { rget(r, RT, w->key), gget(g, RT, w->key) };

	for (int i = 0; i < 2; i++) {
		const char *via = i ? "genl" : "rings";

		CHECK(!s[i].err && !strcmp(s[i].val, w->val),
		      "GET %s over %s before its deadline: %s, \"%s\"",
		      w->key, via, h_errname(s[i].err), s[i].val);
		if (!w->lo)
			CHECK(!s[i].deadline, "GET %s over %s: DEADLINE %llu "
			      "on a record without one", w->key, via,
			      (unsigned long long)s[i].deadline);
		else
			CHECK(s[i].deadline >= w->lo && s[i].deadline <= w->hi,
			      "GET %s over %s: DEADLINE %llu not in "
			      "[%llu, %llu]", w->key, via,
			      (unsigned long long)s[i].deadline,
			      (unsigned long long)w->lo,
			      (unsigned long long)w->hi);
	}
}

/* Both scans give exactly the records of want[] (n of them), each with
 * its deadline. */
static void check_scans(struct kt_raw *r, const struct want *want,
			unsigned int n, const char *when)
{
	static char keys[16][32];
	uint64_t dls[16];

	for (int snap = 0; snap < 2; snap++) {
		unsigned int got = rscan(r, RT, snap ? TDB_SCAN_SNAPSHOT : 0,
					 keys, dls, 16);
		const char *what = snap ? "snapshot SCAN" : "SCAN";

		CHECK(got == n, "%s %s: %u records, not %u", what, when, got,
		      n);
		for (unsigned int i = 0; i < got; i++) {
			const struct want *w = NULL;

			for (unsigned int j = 0; j < n; j++)
				if (!strcmp(want[j].key, keys[i]))
					w = &want[j];
			CHECK(w, "%s %s: key %s should not be there", what,
			      when, keys[i]);
			CHECK(w->lo ? dls[i] >= w->lo && dls[i] <= w->hi :
			      !dls[i], "%s %s: %s's DEADLINE %llu, not in "
			      "[%llu, %llu]", what, when, keys[i],
			      (unsigned long long)dls[i],
			      (unsigned long long)w->lo,
			      (unsigned long long)w->hi);
		}
	}
}

/* The library's scan over generic netlink: the number of records. */
static unsigned int genl_scan_count(const char *table)
{
	struct tdbc *c = kt_connect(TDBC_NO_RINGS);
	struct tdbc_table *t = kt_open(c, table);
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kl, vl;
	unsigned int n = 0;
	int err = tdbc_scan_open(t, NULL, 0, 0, &s);

	CHECK(err == 0, "genl scan_open %s: %s", table, h_errname(err));
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1)
		n++;
	CHECK(err == 0, "genl scan_next %s: %s", table, h_errname(err));
	tdbc_scan_close(s);
	tdbc_table_close(t);
	tdbc_close(c);
	return n;
}

static void part_reads(void)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	struct kt_raw r;
	struct kt_genl g;
	struct seen s, s2;
	char buf[64];
	uint64_t t0, t1, dl, maxdl, v0;
	long len;
	int err;

	kt_create(c, RT, 0600, 0);
	t = kt_open(c, RT);
	kt_raw_open(&r);
	kt_genl_open(&g);

	t0 = now_ms();
	dl = t0 + TTL_MS;
	rput(&r, RT, "r-ttl", "v1", TTL_MS, 0);
	rput(&r, RT, "r-dl", "v2", 0, dl);
	rput(&r, RT, "r-plain", "v3", 0, 0);
	rput(&r, RT, "r-long", "v4", HOUR_MS, 0);
	rput(&r, RT, "r-set", "v5", 0, 0);
	gput(&g, RT, "g-ttl", "v6", TTL_MS, 0);
	gput(&g, RT, "g-dl", "v7", 0, dl);
	t1 = now_ms();

	struct want want[] = {
		{ "r-ttl", "v1", t0 + TTL_MS, t1 + TTL_MS },
		{ "r-dl", "v2", dl, dl },
		{ "r-plain", "v3", 0, 0 },
		{ "r-long", "v4", t0 + HOUR_MS, t1 + HOUR_MS },
		{ "r-set", "v5", 0, 0 },
		{ "g-ttl", "v6", t0 + TTL_MS, t1 + TTL_MS },
		{ "g-dl", "v7", dl, dl },
	};
	unsigned int nw = sizeof(want) / sizeof(want[0]);

	for (unsigned int i = 0; i < nw; i++)
		check_present(&r, &g, &want[i]);
	check_scans(&r, want, nw, "before the deadlines");

	/* the map: the library reads in place, no message */
	CHECK(tdbc_table_mapped(t) == 1, "%s is not mapped on /dev/tdb", RT);
	len = tdbc_get(t, NULL, "r-ttl", 5, buf, sizeof(buf), NULL);
	CHECK(len == 2 && !memcmp(buf, "v1", 2), "mapped get r-ttl before "
	      "its deadline: %s", len < 0 ? h_errname((int)len) : "wrong");
	CHECK(tdbc_table_mapped(t) == 1, "%s: the map went away", RT);

	/* EXPIRE: read, persist, set (TTL over genl, DEADLINE over rings) */
	err = rexpire(&r, RT, "r-long", 0, 0, false, &s);
	s2 = rget(&r, RT, "r-long");
	CHECK(!err && s.version == s2.version && s.deadline == s2.deadline,
	      "EXPIRE read of r-long: %s, version %llu deadline %llu (GET: "
	      "%llu, %llu)", h_errname(err), (unsigned long long)s.version,
	      (unsigned long long)s.deadline, (unsigned long long)s2.version,
	      (unsigned long long)s2.deadline);
	v0 = s.version;
	err = rexpire(&r, RT, "r-long", 0, 0, true, &s);
	CHECK(!err && !s.deadline && s.version > v0, "EXPIRE PERSIST of "
	      "r-long: %s, deadline %llu, version %llu after %llu",
	      h_errname(err), (unsigned long long)s.deadline,
	      (unsigned long long)s.version, (unsigned long long)v0);
	want[3].lo = want[3].hi = 0;
	check_present(&r, &g, &want[3]);

	{
		struct tdb_proto_msg m = key_msg(TDB_CMD_EXPIRE, RT,
						 "r-plain"), a;
		const char *msg;
		uint64_t g0 = now_ms(), g1;

		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = TTL_MS;
		err = gcall(&g, &m, &a, &msg);
		g1 = now_ms();
		CHECK(!err && TDB_PROTO_HAS(&a, TDB_A_DEADLINE) &&
		      a.deadline >= g0 + TTL_MS && a.deadline <= g1 + TTL_MS,
		      "genl EXPIRE TTL of r-plain: %s %s, deadline %llu not in "
		      "[%llu, %llu]", h_errname(err), msg,
		      (unsigned long long)a.deadline,
		      (unsigned long long)(g0 + TTL_MS),
		      (unsigned long long)(g1 + TTL_MS));
		want[2].lo = g0 + TTL_MS;
		want[2].hi = g1 + TTL_MS;
	}
	err = rexpire(&r, RT, "r-set", 0, dl + 100, false, &s);
	CHECK(!err && s.deadline == dl + 100, "EXPIRE DEADLINE of r-set: %s, "
	      "deadline %llu", h_errname(err), (unsigned long long)s.deadline);
	want[4].lo = want[4].hi = dl + 100;
	check_present(&r, &g, &want[2]);
	check_present(&r, &g, &want[4]);
	err = rexpire(&r, RT, "absent", 0, 0, false, &s);
	CHECK(err == -ENOENT, "EXPIRE of an absent key: %s", h_errname(err));

	/* past every deadline (the sweep is off: all still in the table) */
	maxdl = 0;
	for (unsigned int i = 0; i < nw; i++)
		if (want[i].hi > maxdl)
			maxdl = want[i].hi;
	sleep_past(maxdl);
	for (unsigned int i = 0; i < nw; i++) {
		if (!want[i].lo)
			continue;
		s = rget(&r, RT, want[i].key);
		s2 = gget(&g, RT, want[i].key);
		CHECK(s.err == -ENOENT && s2.err == -ENOENT, "GET %s after its "
		      "deadline: rings %s, genl %s", want[i].key,
		      h_errname(s.err), h_errname(s2.err));
		len = tdbc_get(t, NULL, want[i].key, strlen(want[i].key), buf,
			       sizeof(buf), NULL);
		CHECK(len == -ENOENT, "mapped get %s after its deadline: %s",
		      want[i].key, len < 0 ? h_errname((int)len) : "found");
	}
	CHECK(tdbc_table_mapped(t) == 1, "%s: the gets after the deadlines "
	      "did not go through the map", RT);
	check_present(&r, &g, &want[3]);        /* r-long, persisted */
	check_scans(&r, &want[3], 1, "after the deadlines");
	CHECK(genl_scan_count(RT) == 1, "genl SCAN after the deadlines: "
	      "not only r-long");
	{
		struct tdb_proto_stat st = rstat(&r, RT);

		CHECK(STAT(st, RT, RECORDS, records) == nw &&
		      STAT(st, RT, EXPIRING, expiring) == nw - 1 &&
		      !(st.present & TDB_PROTO_BIT(TDB_STAT_A_EXPIRED) &&
			st.expired),
		      "TABLE_STAT %s with the sweep off: records %llu (want "
		      "%u), expiring %llu (want %u), expired %llu (want 0)",
		      RT, (unsigned long long)st.records, nw,
		      (unsigned long long)st.expiring, nw - 1,
		      (unsigned long long)st.expired);
	}
	h_note("reads: %u records, %u expired and hidden from GET (rings, "
	       "genl, map), SCAN (rings, genl) and snapshot SCAN", nw,
	       nw - 1);
	kt_genl_close(&g);
	kt_raw_close(&r);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* --- 3. a table's default TTL --------------------------------------------- */

#define DT "kx_default"

static void part_default(void)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_TTL) |
			 TDB_PROTO_BIT(TDB_A_MODE),
		.table = DT, .ttl = DEF_TTL_MS, .mode = 0600,
	}, a;
	struct tdb_proto_stat st;
	struct kt_raw r;
	struct seen s;
	const char *msg;
	uint64_t t0, t1;
	int err;

	kt_raw_open(&r);
	err = rcall(&r, &m, &a, &msg);
	CHECK(err == 0, "TABLE_CREATE %s with TTL: %s %s", DT, h_errname(err),
	      msg);
	st = rstat(&r, DT);
	CHECK(STAT(st, DT, DEFAULT_TTL, default_ttl) == DEF_TTL_MS,
	      "TABLE_STAT %s: DEFAULT_TTL %llu, not %u", DT,
	      (unsigned long long)st.default_ttl, DEF_TTL_MS);
	t0 = now_ms();
	rput(&r, DT, "d-plain", "x", 0, 0);
	rput(&r, DT, "d-own", "y", HOUR_MS, 0);
	t1 = now_ms();
	s = rget(&r, DT, "d-plain");
	CHECK(!s.err && s.deadline >= t0 + DEF_TTL_MS &&
	      s.deadline <= t1 + DEF_TTL_MS, "a plain PUT into %s: %s, "
	      "deadline %llu, not the table's TTL from [%llu, %llu]", DT,
	      h_errname(s.err), (unsigned long long)s.deadline,
	      (unsigned long long)t0, (unsigned long long)t1);
	s = rget(&r, DT, "d-own");
	CHECK(!s.err && s.deadline >= t0 + HOUR_MS &&
	      s.deadline <= t1 + HOUR_MS, "a PUT with its own TTL into %s: "
	      "deadline %llu, not its TTL", DT,
	      (unsigned long long)s.deadline);
	kt_raw_close(&r);
}

/* --- 4. the sweep --------------------------------------------------------- */

#define ST "kx_sweep"

/* Read the "changes" group until the n expired DELs of ST came: every
 * PUT of ST carries DEADLINE, every DEL of a swept key REASON expired,
 * the client's DEL of "plain" none; each key's DEL once. */
static void check_mcast(struct kt_genl *mc, unsigned int n)
{
	static char buf[1 << 16] __attribute__((aligned(4)));
	unsigned int puts = 0, dels = 0;
	bool plain = false;
	uint64_t end = h_now_ms() + SWEEP_BOUND_MS;
	unsigned char *seen = calloc(n, 1);

	CHECK(seen, "out of memory");
	while (dels < n || !plain) {
		struct pollfd pfd = { .fd = mc->fd, .events = POLLIN };
		int left = (int)(end - h_now_ms());
		struct nlmsghdr *nlh;
		long len;

		CHECK(left > 0 && poll(&pfd, 1, left) == 1, "\"changes\": %u "
		      "PUTs and %u expired DELs of %u, plain %s, after %u ms",
		      puts, dels, n, plain ? "seen" : "not seen",
		      SWEEP_BOUND_MS);
		len = recv(mc->fd, buf, sizeof(buf), 0);
		CHECK(len > 0, "recv \"changes\": %s (a lost notification: "
		      "ENOBUFS)", strerror(errno));
		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, (int)len);
		     nlh = mnl_nlmsg_next(nlh, (int *)&len)) {
			struct tdb_proto_extack ext = { 0 };
			struct tdb_proto_msg m;
			unsigned int i;
			int err = tdb_proto_parse_family(nlh, nlh->nlmsg_len,
					TDB_PROTO_ANSWER, (uint16_t)mc->family,
					&m, &ext);

			CHECK(err == 0, "a notification that does not "
			      "parse: %s", ext.msg);
			if (!TDB_PROTO_HAS(&m, TDB_A_TABLE) ||
			    strcmp(m.table, ST))
				continue;
			if (m.key_len == 5 && !memcmp(m.key, "plain", 5)) {
				if (m.cmd == TDB_CMD_DEL) {
					CHECK(!TDB_PROTO_HAS(&m, TDB_A_REASON),
					      "a client's DEL notified with "
					      "REASON %u", m.reason);
					plain = true;
				}
				continue;
			}
			CHECK(key_index(m.key, m.key_len, n, &i),
			      "a notification of an unknown key");
			if (m.cmd == TDB_CMD_PUT) {
				CHECK(TDB_PROTO_HAS(&m, TDB_A_DEADLINE),
				      "the PUT of s-%u notified without "
				      "DEADLINE", i);
				puts++;
				continue;
			}
			CHECK(m.cmd == TDB_CMD_DEL, "notification cmd %u",
			      m.cmd);
			CHECK(TDB_PROTO_HAS(&m, TDB_A_REASON) &&
			      m.reason == TDB_REASON_EXPIRED,
			      "the sweep's DEL of s-%u notified without "
			      "REASON expired", i);
			CHECK(!seen[i], "s-%u: two DEL notifications", i);
			seen[i] = 1;
			dels++;
		}
	}
	CHECK(puts == n, "\"changes\": %u PUTs of %u", puts, n);
	free(seen);
}

/* The watcher's feed: a DEL of each swept key once (and of plain). */
static void check_feed(struct tdbc_watch *w, unsigned int n)
{
	unsigned char *seen = calloc(n, 1);
	unsigned int dels = 0;
	uint64_t end = h_now_ms() + SWEEP_BOUND_MS;
	struct tdbc_event ev;

	CHECK(seen, "out of memory");
	while (dels < n) {
		int left = (int)(end - h_now_ms());
		unsigned int i;
		int r;

		CHECK(left > 0, "feed: %u DELs of %u after %u ms", dels, n,
		      SWEEP_BOUND_MS);
		r = tdbc_watch_next(w, &ev, left, NULL);
		CHECK(r >= 0, "watch_next: %s", h_errname(r));
		if (!r || ev.kind != TDBC_EV_DEL ||
		    (ev.klen == 5 && !memcmp(ev.key, "plain", 5)))
			continue;
		CHECK(key_index(ev.key, ev.klen, n, &i),
		      "feed: a DEL of an unknown key");
		CHECK(!seen[i], "feed: two DELs of s-%u", i);
		seen[i] = 1;
		dels++;
	}
	free(seen);
}

static int rawfeed_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct rawfeed *f = arg;
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg m;
	unsigned int i;
	int err = tdb_proto_parse(nlh, nlh->nlmsg_len, TDB_PROTO_ANSWER, &m,
				  &ext);

	CHECK(err == 0, "a feed message that does not parse: %s", ext.msg);
	if (m.key_len == 5 && !memcmp(m.key, "plain", 5)) {
		if (m.cmd == TDB_CMD_DEL) {
			CHECK(!TDB_PROTO_HAS(&m, TDB_A_REASON), "feed: a "
			      "client's DEL with REASON %u", m.reason);
			f->plain = true;
		}
		return 0;
	}
	CHECK(key_index(m.key, m.key_len, f->n, &i), "feed: a message of an "
	      "unknown key");
	if (m.cmd == TDB_CMD_PUT) {
		CHECK(TDB_PROTO_HAS(&m, TDB_A_DEADLINE), "feed: the PUT of "
		      "s-%u without DEADLINE", i);
		f->puts++;
		return 0;
	}
	CHECK(m.cmd == TDB_CMD_DEL && TDB_PROTO_HAS(&m, TDB_A_REASON) &&
	      m.reason == TDB_REASON_EXPIRED, "feed: cmd %u of s-%u without "
	      "REASON expired", m.cmd, i);
	CHECK(!f->seen[i], "feed: two DELs of s-%u", i);
	f->seen[i] = 1;
	f->dels++;
	return 0;
}

/* The raw feed: each PUT with DEADLINE, each sweep DEL once with REASON
 * expired, the client's DEL of plain without. */
static void check_rawfeed(struct rawfeed *f, unsigned int n)
{
	uint64_t end = h_now_ms() + SWEEP_BOUND_MS, lost = 0;

	f->n = n;
	f->seen = calloc(n, 1);
	CHECK(f->seen, "out of memory");
	while (f->dels < n || !f->plain) {
		int r = tdb_feed_read(&f->ring, 256, rawfeed_cb, f, &lost);

		CHECK(r >= 0, "raw feed: %s (%llu lost)", h_errname(r),
		      (unsigned long long)lost);
		if (r)
			continue;
		CHECK(h_now_ms() < end, "raw feed: %u DELs of %u, plain %s, "
		      "after %u ms", f->dels, n, f->plain ? "seen" :
		      "not seen", SWEEP_BOUND_MS);
		h_sleep_ms(10);
	}
	CHECK(f->puts == n, "raw feed: %u PUTs of %u", f->puts, n);
}

static void part_sweep(unsigned int n, unsigned int expired_before)
{
	struct tdbc *c = kt_connect(0);
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdb_proto_stat st;
	struct rawfeed feed;
	struct kt_raw r;
	struct kt_genl mc;
	uint64_t e0, e1, t0, took;
	unsigned int grp;
	int sz = 32 << 20, err;

	kt_create(c, ST, 0600, 0);
	t = kt_open(c, ST);
	err = tdbc_watch(t, NULL, 0, &w);
	CHECK(err == 0, "watch %s: %s", ST, h_errname(err));
	kt_genl_open(&mc);
	grp = mc.mcgrp;
	CHECK(grp, "no \"%s\" multicast group", TDB_GENL_MCGRP);
	CHECK(setsockopt(mc.fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz,
			 sizeof(sz)) == 0, "SO_RCVBUFFORCE: %s",
	      strerror(errno));
	CHECK(setsockopt(mc.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			 sizeof(grp)) == 0, "join \"%s\": %s", TDB_GENL_MCGRP,
	      strerror(errno));
	rawfeed_open(&feed, ST);
	kt_raw_open(&r);
	e0 = rstats_expired(&r);

	rput(&r, ST, "plain", "p", 0, 0);
	{
		struct tdb_proto_msg m = key_msg(TDB_CMD_DEL, ST, "plain"), a;

		CHECK(rcall(&r, &m, &a, NULL) == 0, "DEL plain");
	}
	bulk_put(ST, "s", n, SWEEP_TTL_MS);
	sleep_past(now_ms() + SWEEP_TTL_MS);
	st = rstat(&r, ST);
	CHECK(STAT(st, ST, RECORDS, records) == n &&
	      STAT(st, ST, EXPIRING, expiring) == n,
	      "%s expired, sweep off: records %llu, expiring %llu (want %u)",
	      ST, (unsigned long long)st.records,
	      (unsigned long long)st.expiring, n);

	CHECK(sweep_ms("100") == 0, "sweep_ms=100 refused");
	t0 = h_now_ms();
	for (;;) {
		st = rstat(&r, ST);
		if (!st.records)
			break;
		CHECK(h_now_ms() - t0 < SWEEP_BOUND_MS, "the sweep left %llu of "
		      "%u expired records of %s after %u ms",
		      (unsigned long long)st.records, n, ST, SWEEP_BOUND_MS);
		h_sleep_ms(20);
	}
	took = h_now_ms() - t0;
	CHECK(STAT(st, ST, EXPIRED, expired) == n &&
	      STAT(st, ST, EXPIRING, expiring) == 0,
	      "%s swept: expired %llu (want %u), expiring %llu (want 0)", ST,
	      (unsigned long long)st.expired, n,
	      (unsigned long long)st.expiring);
	/* every expired record of the test, all tables (the others are
	 * small: they go within the same bound) */
	t0 = h_now_ms();
	while ((e1 = rstats_expired(&r)) - e0 < n + expired_before) {
		CHECK(h_now_ms() - t0 < SWEEP_BOUND_MS, "STATS EXPIRED moved "
		      "by %llu, not %u", (unsigned long long)(e1 - e0),
		      n + expired_before);
		h_sleep_ms(20);
	}
	CHECK(e1 - e0 == n + expired_before, "STATS EXPIRED moved by %llu, "
	      "not %u", (unsigned long long)(e1 - e0), n + expired_before);
	st = rstat(&r, RT);
	CHECK(STAT(st, RT, RECORDS, records) == 1 &&
	      STAT(st, RT, EXPIRED, expired) == expired_before - 1,
	      "%s swept: records %llu (want 1), expired %llu (want %u)", RT,
	      (unsigned long long)st.records, (unsigned long long)st.expired,
	      expired_before - 1);
	h_note("sweep: %u expired records of %s gone in %llu ms with no "
	       "read; STATS EXPIRED +%llu", n, ST, (unsigned long long)took,
	       (unsigned long long)(e1 - e0));

	check_feed(w, n);
	check_rawfeed(&feed, n);
	check_mcast(&mc, n);
	rawfeed_close(&feed);
	kt_raw_close(&r);
	kt_genl_close(&mc);
	tdbc_watch_close(w);
	tdbc_table_close(t);
	tdbc_close(c);
}

/* --- 5. unload while the sweep works -------------------------------------- */

/* The last "tdb: unloaded..." line of the kernel log; empty if none. */
static void last_unload_line(char *out, size_t cap)
{
	char rec[1024];
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t n;

	out[0] = 0;
	CHECK(fd >= 0, "open /dev/kmsg: %s", strerror(errno));
	while ((n = read(fd, rec, sizeof(rec) - 1)) > 0 ||
	       (n < 0 && errno == EPIPE)) {
		char *p;

		if (n <= 0)
			continue;       /* overwritten records: go on */
		rec[n] = 0;
		p = strchr(rec, ';');
		if (p && !strncmp(p + 1, "tdb: unloaded", 13)) {
			char *nl = strchr(p + 1, '\n');

			if (nl)
				*nl = 0;
			snprintf(out, cap, "%s", p + 1);
		}
	}
	close(fd);
}

static void part_unload(unsigned int n)
{
	struct tdbc *c = kt_connect(0);
	struct kt_genl g;
	char line[256];
	uint64_t t0, took, left;
	unsigned int i;
	int st;

	CHECK(sweep_ms("0") == 0, "sweep_ms=0 refused");
	kt_create(c, "kx_unload", 0600, 0);
	tdbc_close(c);
	bulk_put("kx_unload", "u", n, 1);
	/* every /dev/tdb file is closed (a genl socket holds no reference
	 * to the module); the sweep starts at once: rmmod once it has
	 * removed some */
	kt_genl_open(&g);
	CHECK(sweep_ms("100") == 0, "sweep_ms=100 refused");
	t0 = h_now_ms();
	do {
		struct tdb_proto_msg m = {
			.cmd = TDB_CMD_TABLE_STAT,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
			.table = "kx_unload",
		}, a;

		CHECK(h_now_ms() - t0 < SWEEP_BOUND_MS, "the sweep removed "
		      "nothing of kx_unload in %u ms", SWEEP_BOUND_MS);
		CHECK(gcall(&g, &m, &a, NULL) == 0, "genl TABLE_STAT");
		left = a.stat.records;
	} while (left == n);
	kt_genl_close(&g);
	t0 = h_now_ms();
	st = system("rmmod tdb");
	took = h_now_ms() - t0;
	CHECK(st == 0, "rmmod tdb while the sweep runs: status %#x", st);
	CHECK(took < UNLOAD_BOUND_MS, "rmmod took %llu ms",
	      (unsigned long long)took);
	CHECK(access("/sys/module/tdb", F_OK) != 0, "tdb still loaded");
	last_unload_line(line, sizeof(line));
	CHECK(!strcmp(line, "tdb: unloaded"), "the kernel log's last unload "
	      "line: \"%s\"", line);
	h_note("unload: %u expired records, rmmod when the sweep had left "
	       "%llu, done in %llu ms: \"%s\"", n, (unsigned long long)left,
	       (unsigned long long)took, line);
	/* for part 6: a small log ring */
	st = system("insmod /lib/modules/tdb.ko log_ring_mb=1");
	CHECK(st == 0, "insmod tdb.ko log_ring_mb=1: status %#x", st);
	for (i = 0; i < 100 && access(TDB_DEV_PATH, F_OK); i++)
		h_sleep_ms(10);
	CHECK(!access(TDB_DEV_PATH, F_OK), "no %s after insmod", TDB_DEV_PATH);
}

/* --- 6. the sweep beside a supervisor ------------------------------------- */

#define SUPT  "kx_sup"
#define SUP_N 300u

static struct tdb_sup_stats sup_stats(int fd)
{
	struct tdb_sup_stats st;

	CHECK(ioctl(fd, TDB_IOC_SUP_STATS, &st) == 0, "SUP_STATS: %s",
	      strerror(errno));
	return st;
}

/* tdb.ko loaded with log_ring_mb=1 and no supervisor ever: the test
 * claims the role (sync none), restores SUP_N expired records; the
 * sweep removes none while recovering.  After READY (the sweep held
 * with sweep_ms=0) the log ring is filled and never reported durable:
 * the sweep, let go, is refused by the log, applies nothing, and keeps
 * trying at its pace, not in a loop.  DURABLE makes room: the sweep
 * removes them all, each a logged record. */
static void part_sup(void)
{
	struct tdb_sup_claim cl = {
		.version = TDB_DEV_VERSION, .sync = TDB_SUP_SYNC_NONE,
		.next_lsn = 1, .instance = 0x6b65787069726531ull,
	};
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE), .table = SUPT,
	}, a;
	struct tdb_sup_stats s0, s1, s2;
	struct tdb_proto_stat st;
	struct tdbc_table *t;
	struct kt_raw sup, r;
	struct tdbc *c;
	uint64_t t0, refused, lsn = UINT64_MAX;
	static char big[200 << 10];
	char key[32];
	unsigned int i, j;
	size_t len;
	int err;

	kt_raw_open(&sup);
	CHECK(ioctl(sup.fd, TDB_IOC_SUP_CLAIM, &cl) == 0, "SUP_CLAIM: %s",
	      strerror(errno));
	CHECK(rcall(&sup, &m, &a, NULL) == 0, "the restore's TABLE_CREATE");
	for (i = 0; i < SUP_N; i += 100) {
		for (j = 0; j < 100; j++) {
			snprintf(key, sizeof(key), "r-%u", i + j);
			m = put_msg(SUPT, key, "restored", 1, 0);
			kt_raw_queue(&sup, &m);
		}
		kt_raw_flush(&sup);
		for (j = 0; j < 100; j++) {
			struct tdb_proto_extack ext = { 0 };
			long len = kt_raw_recv(&sup, abuf, sizeof(abuf),
					       10000);

			CHECK(tdb_proto_parse(abuf, (size_t)len,
					      TDB_PROTO_ANSWER, &a, &ext) == 0 &&
			      a.type == NLMSG_ERROR && !a.error,
			      "the restore's PUT r-%u: %s", i + j,
			      h_errname(a.error));
		}
	}
	s0 = sup_stats(sup.fd);
	h_sleep_ms(6 * TDBO_PERIOD_MS);
	st = rstat(&sup, SUPT);
	s1 = sup_stats(sup.fd);
	CHECK(STAT(st, SUPT, RECORDS, records) == SUP_N &&
	      s1.log_records == s0.log_records, "recovering: %llu of %u "
	      "expired records left, %llu records logged (want all, 0)",
	      (unsigned long long)st.records, SUP_N,
	      (unsigned long long)(s1.log_records - s0.log_records));

	CHECK(sweep_ms("0") == 0, "sweep_ms=0 refused");
	CHECK(ioctl(sup.fd, TDB_IOC_SUP_READY, 0) == 0, "SUP_READY: %s",
	      strerror(errno));
	/* Fill the log to the last byte a change can take: values halved
	 * at each refusal down to an empty one.  Its table name and keys
	 * are shorter than SUPT's: a DEL of the sweep's needs more room
	 * than the last PUT refused. */
	c = kt_connect(0);
	kt_create(c, "kf", 0600, 0);
	t = kt_open(c, "kf");
	memset(big, 'b', sizeof(big));
	for (i = 0, len = sizeof(big); ; i++) {
		CHECK(i < 200, "200 puts fit a 1 MiB log ring");
		snprintf(key, sizeof(key), "f%u", i);
		err = tdbc_put(t, NULL, key, strlen(key), big, len, 0);
		if (!err)
			continue;
		CHECK(err == -ENOBUFS &&
		      strstr(tdbc_errmsg(c), "change log is full"),
		      "filling the log (a put of %zu bytes): %s %s", len,
		      h_errname(err), tdbc_errmsg(c));
		if (!len)
			break;
		len /= 2;
	}
	s1 = sup_stats(sup.fd);
	CHECK(sweep_ms("100") == 0, "sweep_ms=100 refused");
	h_sleep_ms(10 * TDBO_PERIOD_MS);
	kt_raw_open(&r);
	st = rstat(&r, SUPT);
	s2 = sup_stats(sup.fd);
	refused = s2.log_refused - s1.log_refused;
	CHECK(STAT(st, SUPT, RECORDS, records) == SUP_N &&
	      s2.log_records == s1.log_records,
	      "a full log: the sweep left %llu of %u, logged %llu (want all, "
	      "0)", (unsigned long long)st.records, SUP_N,
	      (unsigned long long)(s2.log_records - s1.log_records));
	/* at most a few refusals a round (one per batch of 64 records,
	 * SUP_N of them, a pass or two a round), a round a period: no
	 * loop of retries */
	CHECK(refused >= 1 && refused <= 400, "a full log: the sweep's "
	      "reservations refused %llu times in %u ms",
	      (unsigned long long)refused, 10 * TDBO_PERIOD_MS);

	CHECK(ioctl(sup.fd, TDB_IOC_SUP_DURABLE, &lsn) == 0, "SUP_DURABLE: "
	      "%s", strerror(errno));
	t0 = h_now_ms();
	while ((st = rstat(&r, SUPT)).records) {
		CHECK(h_now_ms() - t0 < SWEEP_BOUND_MS, "room in the log: the "
		      "sweep left %llu of %u after %u ms",
		      (unsigned long long)st.records, SUP_N, SWEEP_BOUND_MS);
		h_sleep_ms(20);
	}
	s0 = sup_stats(sup.fd);
	CHECK(s0.log_records - s2.log_records == SUP_N, "the sweep's %u DELs "
	      "made %llu log records", SUP_N,
	      (unsigned long long)(s0.log_records - s2.log_records));
	h_note("supervisor: the sweep waited out recovery, a full log "
	       "refused it %llu times in %u ms (nothing applied), then %u "
	       "logged DELs", (unsigned long long)refused,
	       10 * TDBO_PERIOD_MS, SUP_N);
	tdbc_table_close(t);
	tdbc_close(c);
	kt_raw_close(&r);
	kt_raw_close(&sup);
}

static void reload(const char *params)
{
	char cmd[256];
	unsigned int i;
	int st = system("rmmod tdb");

	CHECK(st == 0, "rmmod tdb: status %#x", st);
	snprintf(cmd, sizeof(cmd), "insmod /lib/modules/tdb.ko %s", params);
	st = system(cmd);
	CHECK(st == 0, "%s: status %#x", cmd, st);
	for (i = 0; i < 100 && access(TDB_DEV_PATH, F_OK); i++)
		h_sleep_ms(10);
	CHECK(!access(TDB_DEV_PATH, F_OK), "no %s after insmod", TDB_DEV_PATH);
}

int main(void)
{
	unsigned int n = (unsigned int)h_scaled(2000, 200);

	kt_init("kexpire", 120);
	kt_need_kernel();

	/* 1. the parameter */
	CHECK(sweep_ms("60001") == EINVAL, "sweep_ms=60001 not refused");
	CHECK(sweep_ms("0") == 0, "sweep_ms=0 refused");

	part_reads();           /* 6 of its records expire */
	part_default();         /* 1 of its records expires */
	part_sweep(n, 6 + 1);
	part_unload((unsigned int)h_scaled(20000, 2000));
	part_sup();
	reload("");             /* the role is for good: a plain tdb.ko */
	kt_done();
	return 0;
}
