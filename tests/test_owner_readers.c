/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * test_owner_readers.c - zero-copy readers in the owner (readers.c),
 * in user space against tdbo_exec(), with the reader slot in a private
 * struct tdb_ring_hdr as a home would hand it the client's SUBMIT ring:
 *
 *  - TABLE_MAP needs a reader slot (-EOPNOTSUPP) and read permission
 *    (-EACCES); granted, it gives the table, its map_gen and length;
 *  - a writer whose retired memory is reclaimed does not wait for a
 *    mapped reader outside a read section, waits for one inside until it
 *    leaves, and for one that never leaves only the lease, once: the
 *    slot's read_expired moves and STATS counts it;
 *  - an expired reader is benched: told (read_expired bumped), not
 *    waited for, until it asks for a map again and its backoff (1 s,
 *    doubling) is over;
 *  - memory a reader sees in a read section is not reused while the
 *    section lasts, with the reader looking through a read-only mapping
 *    of the region's memfd, as a client does;
 *  - the region header carries what mapped readers follow: the commit
 *    seqcount around a transaction, map_gen moved by a drop, and moved
 *    before anything can find the table gone (what tdb.ko's map fault
 *    serves zeros on).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "owner.h"
#include "core.h"
#include "layout.h"
#include <tdb/ring.h>

#define LEASE_MS 100u
#define CHURN    4200u          /* overwrites: more than one limbo batch */

static struct tdbo_limits lim = {
	.default_mode = 0600, .feed_size = 1u << 16, .max_tables = 64,
	.max_txns = 16, .max_txn_ops = 1024, .max_txn_bytes = 1u << 20,
	.max_snapshot_bytes = 1u << 20, .max_snapshot_memory = 1u << 20,
	.max_snapshot_memory_per_uid = 1u << 20,
	.reader_lease_ms = LEASE_MS,
};

/* --- a sink that keeps the last answer's status ---------------------------- */

struct rec {
	struct tdbo_sink s;
	unsigned char buf[4096] __attribute__((aligned(8)));
	struct tdb_proto_msg last;
	uint64_t txn, readers_expired;
};

static void *rec_reserve(struct tdbo_sink *s, size_t len)
{
	struct rec *r = (struct rec *)s;

	return len > sizeof(r->buf) ? NULL : r->buf;
}

static void rec_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct rec *r = (struct rec *)s;
	struct tdb_proto_extack ext = { NULL };

	assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &r->last,
					 &ext), 0);
	r->txn = r->last.txn;
	if (TDB_PROTO_HAS(&r->last, TDB_A_COUNTERS))
		r->readers_expired = r->last.counters.readers_expired;
}

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	r->s.reserve = rec_reserve;
	r->s.commit = rec_commit;
}

/* Build, parse back and run one request; *res for the caller. */
static int exec_res(struct tdbo_client *c, struct tdb_proto_msg *in,
		    struct rec *r, struct tdbo_out *res)
{
	unsigned char buf[512] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct tdb_proto_msg m;
	long n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, in,
				 &ext);

	assert_true(n > 0);
	assert_int_equal(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_REQUEST,
					 &m, &ext), 0);
	rec_init(r);
	return tdbo_exec(c, &m, &r->s, &ext, res);
}

static int exec1(struct tdbo_client *c, struct tdb_proto_msg *in)
{
	struct tdbo_out res;
	struct rec r;

	return exec_res(c, in, &r, &res);
}

static struct tdb_proto_msg named(uint8_t cmd, const char *table)
{
	struct tdb_proto_msg m = {
		.cmd = cmd, .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
		.table = table, .table_len = (uint32_t)strlen(table),
	};

	return m;
}

static void put(struct tdbo_client *c, const char *table, const char *k,
		const char *v, uint64_t txn)
{
	struct tdb_proto_msg m = named(TDB_CMD_PUT, table);

	m.attrs |= TDB_PROTO_BIT(TDB_A_KEY) | TDB_PROTO_BIT(TDB_A_VALUE);
	m.key = k;
	m.key_len = (uint32_t)strlen(k);
	m.value = v;
	m.value_len = (uint32_t)strlen(v);
	if (txn) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = txn;
	}
	assert_int_equal(exec1(c, &m), 0);
}

static uint64_t txn_cmd(struct tdbo_client *c, uint8_t cmd, uint64_t id)
{
	struct tdb_proto_msg m = { .cmd = cmd };
	struct tdbo_out res;
	struct rec r;

	if (id) {
		m.attrs = TDB_PROTO_BIT(TDB_A_TXN);
		m.txn = id;
	}
	assert_int_equal(exec_res(c, &m, &r, &res), 0);
	return r.txn;
}

static uint64_t stats_expired(struct tdbo_client *c)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	struct tdbo_out res;
	struct rec r;

	assert_int_equal(exec_res(c, &m, &r, &res), 0);
	return r.readers_expired;
}

/* TABLE_MAP: its error, and *res when granted. */
static int map(struct tdbo_client *c, const char *table,
	       struct tdbo_out *res)
{
	struct tdb_proto_msg m = named(TDB_CMD_TABLE_MAP, table);
	struct rec r;

	return exec_res(c, &m, &r, res);
}

/* --- fixtures ------------------------------------------------------------- */

struct fx {
	struct tdbo_owner *o;
	struct tdbo_client *root, *user;
	struct tdb_ring_hdr *slot;      /* root's reader slot */
	struct tdbo_table *mapped;      /* root's map of "t" */
};

static struct tdb_ring_hdr *slot_new(void)
{
	struct tdb_ring_hdr *h = aligned_alloc(4096, TDB_RING_HDR_SIZE);

	assert_non_null(h);
	memset(h, 0, TDB_RING_HDR_SIZE);
	return h;
}

static int setup(void **state)
{
	static const struct tdbo_hooks hooks;
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_cred user = { 1000, 1000, 0, NULL };
	struct fx *f = calloc(1, sizeof(*f));
	struct tdb_proto_msg m = named(TDB_CMD_TABLE_CREATE, "t");
	struct tdbo_out res;
	int err;

	f->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(f->o);
	f->root = tdbo_client_new(f->o, &root, true, NULL, NULL, &err);
	f->user = tdbo_client_new(f->o, &user, true, NULL, NULL, &err);
	assert_non_null(f->root);
	assert_non_null(f->user);
	f->slot = slot_new();
	assert_int_equal(exec1(f->root, &m), 0);
	tdbo_client_set_reader(f->root, f->slot);
	assert_int_equal(map(f->root, "t", &res), 0);
	f->mapped = res.map;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	tdbo_table_put(f->mapped);
	tdbo_client_free(f->root);
	tdbo_client_free(f->user);
	tdbo_owner_free(f->o);
	free(f->slot);
	free(f);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Overwrite one key CHURN times: each put retires the old record, so
 * the table's limbo is reclaimed (a grace period) at least once.
 * Returns the milliseconds it took. */
static uint64_t churn(struct tdbo_client *c, const char *key)
{
	uint64_t t0 = now_ms();
	char v[32];
	unsigned int i;

	for (i = 0; i < CHURN; i++) {
		snprintf(v, sizeof(v), "value-%08u", i);
		put(c, "t", key, v, 0);
	}
	return now_ms() - t0;
}

static void section_enter(struct tdb_ring_hdr *h)
{
	__atomic_store_n(&h->read_section, h->read_section + 1,
			 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void section_leave(struct tdb_ring_hdr *h)
{
	__atomic_store_n(&h->read_section, h->read_section + 1,
			 __ATOMIC_RELEASE);
}

/* --- TABLE_MAP -------------------------------------------------------------- */

static void test_map_checks(void **state)
{
	struct fx *f = *state;
	struct tdb_ring_hdr *h = slot_new();
	struct tdbo_out res;

	/* no reader slot: the transport hands out no maps */
	assert_int_equal(map(f->user, "t", &res), -EOPNOTSUPP);
	assert_null(res.map);
	/* a slot, but mode 0600 of root's table */
	tdbo_client_set_reader(f->user, h);
	assert_int_equal(map(f->user, "t", &res), -EACCES);
	assert_null(res.map);
	assert_int_equal(map(f->root, "none", &res), -ENOENT);
	/* granted: the table, as long as it is */
	assert_int_equal(map(f->root, "t", &res), 0);
	assert_ptr_equal(res.map, f->mapped);
	assert_int_equal(res.map_extents, TDB_EXTENTS_DEFAULT);
	assert_int_equal(res.map_gen,
			 tdbe_table_map_gen(tdbo_table_engine(res.map)));
	assert_true(tdbo_table_map_slot(res.map) >= 0x40000000ull);
	assert_int_equal(tdbo_may_read(f->root, res.map), 0);
	assert_int_equal(tdbo_may_read(f->user, res.map), -EACCES);
	tdbo_table_put(res.map);
	tdbo_client_free(f->user);      /* takes it off the reader list */
	f->user = NULL;
	free(h);
}

/* --- the grace hook ----------------------------------------------------------- */

static void test_idle_reader_costs_nothing(void **state)
{
	struct fx *f = *state;
	uint64_t ms = churn(f->root, "k");

	assert_true(ms < LEASE_MS);
	assert_int_equal(f->slot->read_expired, 0);
	assert_int_equal(stats_expired(f->root), 0);
}

struct later {
	struct tdb_ring_hdr *h;
	unsigned int ms;
};

static void *leave_later(void *arg)
{
	struct later *l = arg;

	usleep(l->ms * 1000);
	section_leave(l->h);
	return NULL;
}

static void test_writer_waits_for_open_section(void **state)
{
	struct fx *f = *state;
	struct later l = { f->slot, 40 };
	pthread_t th;
	uint64_t ms;

	section_enter(f->slot);
	assert_int_equal(pthread_create(&th, NULL, leave_later, &l), 0);
	ms = churn(f->root, "k");
	pthread_join(th, NULL);
	assert_true(ms >= 35);          /* waited for it to leave */
	assert_true(ms < LEASE_MS + 40);
	assert_int_equal(f->slot->read_expired, 0);
	assert_int_equal(stats_expired(f->root), 0);
}

static void test_stuck_section_expires_once(void **state)
{
	struct fx *f = *state;
	uint64_t ms;

	section_enter(f->slot);         /* and never leaves */
	ms = churn(f->root, "k");
	assert_true(ms >= LEASE_MS - 5);
	assert_int_equal(f->slot->read_expired, 1);
	assert_int_equal(stats_expired(f->root), 1);
	/* the same stuck value is not waited for again (it is told at
	 * each grace period instead: benched) */
	ms = churn(f->root, "k");
	ms += churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_true(f->slot->read_expired > 1);
	assert_int_equal(stats_expired(f->root), 1);
	/* a scribbled slot (any odd value) costs no lease more: the reader
	 * is benched (it has not asked for a map since), so it is told
	 * (read_expired bumped) instead of waited for */
	f->slot->read_section = 0x7777777777777777ull;
	ms = churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_true(f->slot->read_expired >= 2);
	assert_int_equal(stats_expired(f->root), 1);
	/* the owner never reads read_expired back: scribbling it changes
	 * nothing it does (an even slot is not bumped) */
	f->slot->read_expired = 12345;
	f->slot->read_section = 2;
	ms = churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_int_equal(f->slot->read_expired, 12345);
	assert_int_equal(stats_expired(f->root), 1);
}

static void sleep_until_ms(uint64_t t)
{
	uint64_t now = now_ms();

	if (now < t)
		usleep((useconds_t)(t - now) * 1000);
}

/* A new odd value in the slot, as a reader that enters a new section. */
static void section_again(struct tdb_ring_hdr *h)
{
	section_leave(h);
	section_enter(h);
}

static void map_again(struct fx *f)
{
	struct tdbo_out res;

	assert_int_equal(map(f->root, "t", &res), 0);
	tdbo_table_put(res.map);
}

/* An expired reader is benched: a new odd value after the expiry is
 * bumped, not waited for, until it asks for a map again and its backoff
 * (1 s, then 2 s...) is over; then it costs one lease, and is benched
 * for twice as long. */
static void test_benched_reader_backoff(void **state)
{
	struct fx *f = *state;
	uint64_t ms, t_exp, g;

	section_enter(f->slot);
	ms = churn(f->root, "k");
	t_exp = now_ms();
	assert_true(ms >= LEASE_MS - 5);
	assert_int_equal(stats_expired(f->root), 1);
	/* a new section right after: not waited for, told */
	g = f->slot->read_expired;
	section_again(f->slot);
	ms = churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_true(f->slot->read_expired > g);
	/* the backoff is over, but it has not asked for a map: still not
	 * waited for */
	sleep_until_ms(t_exp + 1100);
	section_again(f->slot);
	ms = churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_int_equal(stats_expired(f->root), 1);
	/* it asks (after the backoff): waited for again, one lease */
	map_again(f);
	section_again(f->slot);
	ms = churn(f->root, "k");
	t_exp = now_ms();
	assert_true(ms >= LEASE_MS - 5);
	assert_int_equal(stats_expired(f->root), 2);
	/* it asks again at once: the backoff is 2 s now, so 1.1 s later it
	 * is still benched */
	map_again(f);
	section_again(f->slot);
	sleep_until_ms(t_exp + 1100);
	ms = churn(f->root, "k");
	assert_true(ms < LEASE_MS);
	assert_int_equal(stats_expired(f->root), 2);
	section_leave(f->slot);
}

/* Three readers stuck at once: their leases run together, so the
 * grace period that meets them waits one lease, not three. */
static void test_stuck_readers_share_one_lease(void **state)
{
	struct fx *f = *state;
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct tdbo_client *c[3];
	struct tdb_ring_hdr *h[3];
	struct tdbo_out res;
	uint64_t ms;
	int i, err;

	for (i = 0; i < 3; i++) {
		c[i] = tdbo_client_new(f->o, &root, true, NULL, NULL, &err);
		assert_non_null(c[i]);
		h[i] = slot_new();
		tdbo_client_set_reader(c[i], h[i]);
		assert_int_equal(map(c[i], "t", &res), 0);
		tdbo_table_put(res.map);
		section_enter(h[i]);    /* and never leave */
	}
	ms = churn(f->root, "k");
	assert_true(ms >= LEASE_MS - 5);
	assert_true(ms < 2 * LEASE_MS);
	assert_int_equal(stats_expired(f->root), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(h[i]->read_expired, 1);
		tdbo_client_free(c[i]);
		free(h[i]);
	}
}

/* --- memory a section sees stays ---------------------------------------------- */

struct view_map {
	void *base;
	size_t len;
	const void *ext[1];
	struct tdbe_view v;
};

/* A read-only mapping of extent 0 of the table's memfd, as a client. */
static void view_open(struct fx *f, struct view_map *vm)
{
	struct tdbe_table *et = tdbo_table_engine(f->mapped);
	int fd = tdbe_table_fd(et);

	assert_true(fd >= 0);
	vm->len = 2u << 20;
	vm->base = mmap(NULL, vm->len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(vm->base != MAP_FAILED);
	vm->ext[0] = vm->base;
	vm->v.ext = vm->ext;
	vm->v.nextents = 1;
	assert_int_equal(tdbe_view_check(&vm->v, NULL), 0);
}

struct writer {
	struct tdbo_client *c;
	volatile int done;
};

static void *write_other(void *arg)
{
	struct writer *w = arg;
	char k[32];
	unsigned int i;

	put(w->c, "t", "seen", "NEW-VALUE-NEW-VALUE", 0);
	for (i = 0; i < 3 * CHURN; i++) {
		/* records of the size of the one the section reads, so
		 * that its memory would be taken again at once */
		snprintf(k, sizeof(k), "o%03u", i % 64);
		put(w->c, "t", k, "xxxxxxxxxxxxxxxxxxx", 0);
	}
	w->done = 1;
	return NULL;
}

static void test_section_memory_not_reused(void **state)
{
	struct fx *f = *state;
	struct writer w = { f->root, 0 };
	struct view_map vm;
	const void *val;
	size_t vlen;
	char copy[32];
	pthread_t th;

	/* this one needs a lease longer than the section */
	lim.reader_lease_ms = 5000;
	put(f->root, "t", "seen", "old-value-old-value", 0);
	view_open(f, &vm);
	section_enter(f->slot);
	assert_int_equal(tdbe_view_lookup(&vm.v, "seen", 4, &val, &vlen), 0);
	assert_int_equal(vlen, 19);
	memcpy(copy, val, vlen);
	assert_int_equal(pthread_create(&th, NULL, write_other, &w), 0);
	usleep(300 * 1000);
	/* the writer is held in its first reclaim: the record it replaced
	 * is still what this section read */
	assert_int_equal(w.done, 0);
	assert_memory_equal(val, copy, vlen);
	assert_memory_equal(val, "old-value-old-value", vlen);
	section_leave(f->slot);
	pthread_join(th, NULL);
	assert_int_equal(f->slot->read_expired, 0);
	section_enter(f->slot);
	assert_int_equal(tdbe_view_lookup(&vm.v, "seen", 4, &val, &vlen), 0);
	assert_memory_equal(val, "NEW-VALUE-NEW-VALUE", vlen);
	section_leave(f->slot);
	munmap(vm.base, vm.len);
	lim.reader_lease_ms = LEASE_MS;
}

/* --- what the region header says ----------------------------------------------- */

static void test_header_seq_and_gen(void **state)
{
	struct fx *f = *state;
	struct view_map vm;
	const struct tdb_region_hdr *h;
	struct tdb_proto_msg m = named(TDB_CMD_TABLE_DROP, "t");
	uint64_t s0, x;
	uint32_t g0;

	view_open(f, &vm);
	h = vm.base;
	s0 = __atomic_load_n(&h->commit_seq, __ATOMIC_ACQUIRE);
	g0 = __atomic_load_n(&h->map_gen, __ATOMIC_ACQUIRE);
	assert_int_equal(s0 & 1, 0);
	x = txn_cmd(f->root, TDB_CMD_TXN_BEGIN, 0);
	put(f->root, "t", "a", "1", x);
	put(f->root, "t", "b", "2", x);
	assert_int_equal(h->commit_seq, s0);    /* nothing applied yet */
	txn_cmd(f->root, TDB_CMD_TXN_COMMIT, x);
	assert_int_equal(h->commit_seq, s0 + 2);
	assert_int_equal(h->map_gen, g0);
	assert_int_equal(exec1(f->root, &m), 0);
	assert_int_equal(h->map_gen, g0 + 1);
	assert_int_equal(tdbo_may_read(f->root, f->mapped), -ENOENT);
	munmap(vm.base, vm.len);
}

/* --- a drop against tdb.ko's map fault ---------------------------------------
 * The fault (kmod/kmap.c) looks the table up by its map slot and serves
 * zeros when it is gone (tdbo_table_by_map_slot, tdbo_may_read), while
 * the faulting reader may still have its header page mapped from before:
 * that header must already say the map is stale (map_gen moved), or the
 * reader takes a page of zeros for an empty bucket and a present key
 * for an absent one.  A thread looks as the fault does, all the time,
 * while tables are dropped: whenever it finds one gone, its map_gen has
 * moved.  (A race, so each round is a chance to see the order wrong:
 * with the bump after the unlink, 5 to 30 rounds of 500 saw it, in each
 * of 10 runs.)
 */
#define GONE_ROUNDS 500u

struct prober {
	struct tdbo_owner *o;
	struct tdbo_client *c;
	struct tdbo_table *t;           /* the table of this round */
	uint64_t slot;
	uint32_t g0;                    /* its map_gen when mapped */
	int round, looking, seen;       /* __atomic */
	bool quit;
	unsigned int early;             /* gone, map_gen not moved */
};

static void *probe(void *arg)
{
	struct prober *p = arg;
	int r = 0;

	for (;;) {
		struct tdbo_table *x;
		bool gone;

		while (__atomic_load_n(&p->round, __ATOMIC_ACQUIRE) == r &&
		       !__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE))
			;
		if (__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE))
			return NULL;
		r++;
		__atomic_store_n(&p->looking, r, __ATOMIC_RELEASE);
		do {
			x = tdbo_table_by_map_slot(p->o, p->slot);
			gone = !x || tdbo_may_read(p->c, x);
			tdbo_table_put(x);
		} while (!gone);
		if (tdbe_table_map_gen(tdbo_table_engine(p->t)) == p->g0)
			p->early++;
		__atomic_store_n(&p->seen, r, __ATOMIC_RELEASE);
	}
}

static void test_gone_only_after_gen_moved(void **state)
{
	struct fx *f = *state;
	struct prober p = { .o = f->o, .c = f->root };
	pthread_t th;
	int r;

	assert_int_equal(pthread_create(&th, NULL, probe, &p), 0);
	for (r = 1; r <= (int)GONE_ROUNDS; r++) {
		struct tdb_proto_msg m = named(TDB_CMD_TABLE_CREATE, "d");
		struct tdbo_out res;

		assert_int_equal(exec1(f->root, &m), 0);
		assert_int_equal(map(f->root, "d", &res), 0);
		p.t = res.map;
		p.slot = tdbo_table_map_slot(res.map);
		p.g0 = res.map_gen;
		__atomic_store_n(&p.round, r, __ATOMIC_RELEASE);
		while (__atomic_load_n(&p.looking, __ATOMIC_ACQUIRE) != r)
			;
		m = named(TDB_CMD_TABLE_DROP, "d");
		assert_int_equal(exec1(f->root, &m), 0);
		while (__atomic_load_n(&p.seen, __ATOMIC_ACQUIRE) != r)
			;
		/* the fault's own check, after the drop: zeros, and the
		 * header says so */
		assert_int_equal(tdbo_may_read(f->root, res.map), -ENOENT);
		assert_int_not_equal(tdbe_table_map_gen(
				tdbo_table_engine(res.map)), p.g0);
		tdbo_table_put(res.map);
	}
	__atomic_store_n(&p.quit, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	if (p.early)
		fail_msg("in %u of %u drops a look as tdb.ko's map fault takes "
			 "(by map slot, then may_read) found the table gone "
			 "while its region's map_gen had not moved: a reader "
			 "would be served zeros under a header that says the "
			 "table is there", p.early, GONE_ROUNDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_map_checks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_reader_costs_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_writer_waits_for_open_section, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_stuck_section_expires_once, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_section_memory_not_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_stuck_readers_share_one_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_benched_reader_backoff,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_only_after_gen_moved,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_seq_and_gen,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
