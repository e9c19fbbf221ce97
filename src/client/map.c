// SPDX-License-Identifier: MIT
/*
 * map.c - zero-copy reads: tables mapped read-only, looked up here.
 *
 * A table handle of a connection with rings asks the owner once for a
 * map of the table's region (TABLE_MAP, at tdbc_table_open; again after
 * a stale map).  The owner answers with a cookie (struct tdb_map_cookie:
 * the region's largest size in 2 MiB extents, the map generation, and
 * where the region is) and, from tdbd, a READ-ONLY descriptor of the
 * region's memfd.  We reserve max_extents * 2 MiB of address space
 * (PROT_NONE, 2 MiB aligned: a region on hugepages maps only at such
 * addresses) and map extent n read-only at n * 2 MiB as the region's
 * header says it has grown (hdr->nextents).  tdbc_get, tdbc_get_alloc,
 * tdbc_get_ver, tdbc_submit's GETs (no transaction) and tdbc_get_ref(_ver)
 * then look keys up here, through the engine's bounds-checked view
 * (src/core/view.c, tdbe_view_lookup_ver: the record's version comes
 * from its header in the map, with the value): no message, no system
 * call, no wake-up of the owner.
 *
 * The read section (docs/ARCHITECTURE.md, "Zero-copy reads"; the owner's
 * side is src/owner/readers.c).  Our SUBMIT ring's header has two words:
 * read_section (ours: odd while we may hold pointers into a map) and
 * read_expired (the owner's: +1 each time it stopped waiting for us).
 *   enter: read_section = odd; full fence; g0 = read_expired;
 *          per table: s0 = hdr->commit_seq (odd: a commit is applying,
 *          leave and retry)
 *   lookups, copies out
 *   leave: acquire fence; s1 = commit_seq, map_gen, magic, g1 =
 *          read_expired; read_section = even (release)
 *   g1 != g0: the owner may have reused memory under us: discard, and
 *             read through the ring;
 *   read_expired moved at all (seen at the next read with the slot
 *             even): the owner no longer waits for us (it expired us, or
 *             bumps us while it does not wait): ask for a map again (at
 *             most once a second), which it needs before it waits for
 *             us again (readers.c, "Benched readers");
 *   magic or map_gen changed: the map is stale (table dropped, its
 *             mode changed, its memory moved): unmap, ask again later;
 *   s1 != s0: a commit ran meanwhile: retry (a few times, then the ring).
 * Nothing read from a map is trusted before those checks pass: the view
 * bounds-checks every offset, so a torn read costs a retry, never a
 * crash, and a value that fails them is never returned.
 *
 * Invariants:
 *  - What keeps memory we read from being reused is the slot alone: a
 *    put or delete outside a transaction moves no commit_seq (that count
 *    only makes transactions whole), so its retired record is reused
 *    once the owner saw the slot even (or expired).  So the slot may be
 *    left even only while we hold nothing read from a map: while waiting
 *    for an odd commit_seq before a lookup, or for a call through the
 *    ring in a tdbc_read_begin section that has handed out no pointer
 *    yet (`held`).
 *  - No blocking call with the slot odd, but that one case (a ring call
 *    in a section holding pointers): the owner may be waiting for the
 *    slot before it can answer, at most its lease, after which it
 *    expires us and tdbc_read_end says -ESTALE.
 *  - One thread per connection (client.h): the section state is plain.
 *
 * Backends: tdbd passes the memfd (offset 0); tdb.ko (/dev/tdb) answers
 * with the table's mmap offset on the device and no descriptor: the
 * extents are then mapped from c->fd at that offset, through
 * tdbc__kdev_sys.mmap (kdev.c's hook for its white-box test).  That is
 * the whole backend hook: map_source() below.  Generic netlink and
 * socket-only connections have no reader slot: no maps.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "view.h"
#include "layout.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define EXTENT          ((size_t)2 << 20)
#define MAX_RETRIES     4       /* commits seen during one lookup */
#define MAX_REMAPS      8       /* stale maps in a row before giving up */
#define ODD_SPINS       256     /* polls of an odd commit_seq, then yield */
#define ODD_YIELDS      2000    /* ... then read through the ring */
#define MAP_DONE_MAX    16384u  /* completions of mapped GETs not reaped */
#define REASK_NS        1000000000ull   /* asks after expiries: 1/s */

/* view.c's hash: the engine's platform function, here without liburcu
 * (hidden, as everything in internal.h). */
uint64_t tdbp_hash64(const void *data, size_t len, uint64_t seed)
{
	return XXH64(data, len, seed);
}

/* view.c's clock of record deadlines: this host's wall clock, the one
 * the owner expires records by (read only for a record with one). */
uint64_t tdbp_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

enum tmap_state {
	TM_NONE = 0,    /* not asked (or stale): ask at the next read */
	TM_MAPPED,
	TM_OFF,         /* refused or given up: the rings */
};

/* TOUCH hints: 1 mapped hit in TOUCH_SAMPLE of a table that asks for
 * them is sampled; TOUCH_BATCH sampled hashes make one TOUCH. */
#define TOUCH_SAMPLE 16u
#define TOUCH_BATCH  64u

struct tdbc_tmap {
	enum tmap_state state;
	int fd;                 /* where the extents come from */
	bool own_fd;            /* tdbd's memfd (ours), not /dev/tdb */
	uint64_t off;           /* offset of extent 0 on fd */
	unsigned char *base;    /* max_extents * 2 MiB, 2 MiB aligned (a
				 * hugetlb memfd maps only there) */
	void *reserve;          /* what was reserved: base's 2 MiB more */
	uint32_t max_extents, nmapped, map_gen;
	const void **ext;       /* nmapped extent addresses */
	unsigned int remaps;    /* stale maps since the last good read */
	/* tdbc_read_begin sections */
	uint64_t sec;           /* the section that took s0, 0 = none */
	uint64_t s0;
	/* TOUCH hints (below): the sampling's generator (xorshift32, 0:
	 * not seeded yet), and the sampled keys' hashes not sent yet */
	uint32_t touch_rng, ntouch;
	uint64_t touch[TOUCH_BATCH];
};

struct tdbc_reader {
	bool no_map;            /* TDBC_NO_MAP / $TDBC_NO_MAP */
	uint64_t slot;          /* our read_section value */
	uint64_t g0;            /* read_expired at entry */
	uint64_t g_known;       /* read_expired when we last asked for a
				 * map because it moved (reask) */
	bool reask;             /* it moved since: ask for a map again */
	uint64_t reask_ns;      /* when we last did */
	bool odd;
	/* tdbc_read_begin .. tdbc_read_end */
	bool user;
	bool stale;             /* a check failed: -ESTALE at the end */
	bool held;              /* it handed out a pointer into a map: the
				 * slot stays odd until tdbc_read_end */
	uint64_t sec;           /* section number, never 0 */
	void **copies;          /* values copied through the ring */
	size_t ncopies, cap;
	struct range_walk *walk;        /* tdbc_map_range's, kept */
};

/* --- the slot ------------------------------------------------------------ */

static struct tdb_ring_hdr *slot_hdr(struct tdbc *c)
{
	return c->sq.hdr;
}

static void slot_enter(struct tdbc *c, struct tdbc_reader *rd)
{
	struct tdb_ring_hdr *h = slot_hdr(c);

	rd->slot |= 1;
	__atomic_store_n(&h->read_section, rd->slot, __ATOMIC_RELAXED);
	/* the owner must see us odd before we read anything it may free */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rd->odd = true;
}

static void slot_leave(struct tdbc *c, struct tdbc_reader *rd)
{
	rd->slot++;
	__atomic_store_n(&slot_hdr(c)->read_section, rd->slot,
			 __ATOMIC_RELEASE);
	rd->odd = false;
}

static uint64_t expired(struct tdbc *c)
{
	return __atomic_load_n(&slot_hdr(c)->read_expired, __ATOMIC_ACQUIRE);
}

/* --- mapping ------------------------------------------------------------- */

static const struct tdb_region_hdr *region(const struct tdbc_tmap *m)
{
	return (const struct tdb_region_hdr *)m->base;
}

static void *sys_mmap(struct tdbc *c, void *addr, size_t len, int fd,
		      off_t off)
{
	if (c->backend == TDBC_BE_KDEV)
		return tdbc__kdev_sys.mmap(addr, len, PROT_READ,
					   MAP_SHARED | MAP_FIXED, fd, off);
	return mmap(addr, len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, off);
}

static void unmap(struct tdbc_tmap *m)
{
	if (m->reserve)
		munmap(m->reserve, ((size_t)m->max_extents + 1) * EXTENT);
	m->reserve = NULL;
	if (m->own_fd && m->fd >= 0)
		close(m->fd);
	free(m->ext);
	m->base = NULL;
	m->ext = NULL;
	m->fd = -1;
	m->own_fd = false;
	m->nmapped = 0;
}

/* Map extents [nmapped, n): 0, or -errno (the map is then unusable). */
static int map_to(struct tdbc *c, struct tdbc_tmap *m, uint32_t n)
{
	if (n > m->max_extents)
		return -EUCLEAN;
	while (m->nmapped < n) {
		size_t at = (size_t)m->nmapped * EXTENT;

		if (sys_mmap(c, m->base + at, EXTENT, m->fd,
			     (off_t)(m->off + at)) == MAP_FAILED)
			return -errno;
		m->ext[m->nmapped] = m->base + at;
		m->nmapped++;
	}
	return 0;
}

/* Where the backend's region is: the fd that rode on the ack (tdbd), or
 * /dev/tdb at the cookie's offset (tdb.ko). */
static int map_source(struct tdbc *c, struct tdbc_tmap *m,
		      const struct tdb_map_cookie *ck, int ack_fd)
{
	if (c->backend == TDBC_BE_KDEV) {
		m->fd = c->fd;
		m->own_fd = false;
		m->off = (uint64_t)ck->offset_hi << 32 | ck->offset_lo;
		return 0;
	}
	if (ack_fd < 0)
		return -EPROTO;
	m->fd = ack_fd;
	m->own_fd = true;
	m->off = 0;
	return 0;
}

/* TABLE_MAP's ack: reserve, map extent 0 and what the header says. */
static int map_install(struct tdbc *c, struct tdbc_tmap *m,
		       const struct tdbc_call *call, int ack_fd)
{
	struct tdb_map_cookie ck;
	void *p = MAP_FAILED;
	int err;

	if (call->cookie_len != sizeof(ck)) {
		if (ack_fd >= 0)
			close(ack_fd);
		return -EPROTO;
	}
	memcpy(&ck, call->cookie, sizeof(ck));
	err = map_source(c, m, &ck, ack_fd);
	if (err)
		return err;
	if (!ck.max_extents || ck.max_extents > (1u << 16)) {
		err = -EPROTO;
		goto fail;
	}
	m->max_extents = ck.max_extents;
	m->map_gen = ck.map_gen;
	m->ext = calloc(ck.max_extents, sizeof(*m->ext));
	p = mmap(NULL, ((size_t)ck.max_extents + 1) * EXTENT, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!m->ext || p == MAP_FAILED) {
		err = -ENOMEM;
		goto fail;
	}
	m->reserve = p;
	m->base = (unsigned char *)(((uintptr_t)p + EXTENT - 1) &
				    ~(uintptr_t)(EXTENT - 1));
	err = map_to(c, m, 1);
	if (!err)
		err = map_to(c, m, tdbe_view_extents(m->base));
	if (!err && region(m)->magic != TDB_REGION_MAGIC)
		err = -EUCLEAN;
	/* A region of another layout (layout.h, TDB_LAYOUT_VERSION: the
	 * owner is another tdb release) is never read here: the table
	 * stays on the rings, as tdbe_view_check would send every read. */
	if (!err && region(m)->version != TDB_LAYOUT_VERSION)
		err = -EPROTONOSUPPORT;
	if (!err) {
		m->state = TM_MAPPED;
		return 0;
	}
fail:
	unmap(m);
	return err;
}

/*
 * Ask for a map (never with the slot odd).  Refusals (-EACCES, -ENOENT,
 * -EOPNOTSUPP) and failures leave the table on the rings: its reads then
 * say why themselves.  The connection's errmsg is left as it was.
 */
static void map_ask(struct tdbc_table *t)
{
	struct tdbc *c = t->h.c;
	struct tdbc_tmap *m = t->map;
	struct tdb_proto_msg msg = { .cmd = TDB_CMD_TABLE_MAP,
				     .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				     .table = t->name };
	struct tdbc_call call = { .nfds = c->backend == TDBC_BE_DAEMON };
	char saved[TDBC_ERRMSG_MAX];
	int err;

	if (++m->remaps > MAX_REMAPS) {
		m->state = TM_OFF;
		return;
	}
	memcpy(saved, c->errmsg, sizeof(saved));
	err = tdbc__call(c, &msg, &call, true);
	memcpy(c->errmsg, saved, sizeof(saved));
	if (err) {
		/* -EAGAIN: answers still queued on the socket; later */
		m->state = err == -EAGAIN && !c->dead ? TM_NONE : TM_OFF;
		return;
	}
	if (map_install(c, m, &call, call.nfds ? call.fds[0] : -1))
		m->state = TM_OFF;
}

static struct tdbc_reader *reader(struct tdbc *c)
{
	return c->reader;
}

int tdbc__map_open(struct tdbc_table *t)
{
	struct tdbc *c = t->h.c;

	t->map = calloc(1, sizeof(*t->map));
	if (!t->map)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	t->map->fd = -1;
	if (!reader(c) || reader(c)->no_map)
		t->map->state = TM_OFF;
	else
		map_ask(t);
	return 0;
}

static void touch_send(struct tdbc_table *t);

void tdbc__map_close(struct tdbc_table *t)
{
	struct tdbc_reader *rd;

	if (!t->map)
		return;
	/* the last partial batch of hints, unless pointers are held */
	rd = reader(t->h.c);
	if (t->map->ntouch && (!rd || !rd->odd))
		touch_send(t);
	unmap(t->map);
	free(t->map);
	t->map = NULL;
}

/* The header says the map is no longer the table's. */
static bool map_stale(const struct tdbc_tmap *m)
{
	const struct tdb_region_hdr *h = region(m);

	return __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) !=
		       TDB_REGION_MAGIC ||
	       __atomic_load_n(&h->map_gen, __ATOMIC_ACQUIRE) != m->map_gen;
}

static void map_drop(struct tdbc_tmap *m)
{
	unmap(m);
	m->state = TM_NONE;     /* asked again at the next read */
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The owner stopped waiting for us (read_expired moved: an expiry, or a
 * bump while it does not wait for us): it waits for our sections again
 * only once we ask for a map anew (readers.c, "Benched readers").  So
 * ask, with t's map, at most once a second (a bump per grace period
 * would otherwise cost a round trip each); the owner may keep us benched
 * for its backoff, which costs us retries, never a wrong value.  With
 * the slot even only.
 */
static void reask_after_expiry(struct tdbc *c, struct tdbc_table *t)
{
	struct tdbc_reader *rd = reader(c);
	uint64_t g = expired(c), now;

	if (g != rd->g_known) {
		rd->g_known = g;
		rd->reask = true;
	}
	if (!rd->reask)
		return;
	now = now_ns();
	if (rd->reask_ns && now - rd->reask_ns < REASK_NS)
		return;
	rd->reask = false;
	rd->reask_ns = now;
	map_drop(t->map);
	t->map->remaps = 0;     /* not a stale map: no reason to give up */
}

/* Is the map usable for a new read (asking for one if need be)? */
static bool map_ready(struct tdbc_table *t)
{
	struct tdbc_reader *rd = reader(t->h.c);

	if (!t->map || !rd || rd->odd)
		return t->map && t->map->state == TM_MAPPED;
	if (t->map->state == TM_MAPPED)         /* a slot: rings */
		reask_after_expiry(t->h.c, t);
	if (t->map->state == TM_NONE)
		map_ask(t);
	return t->map->state == TM_MAPPED;
}

/* --- one lookup ---------------------------------------------------------- */

/* The deadline of the record whose value tdbe_view_lookup_ver found at
 * val: its trailer, inside the bounds the view checked (the record's
 * whole size, trailer included), read with the slot odd. */
static uint64_t found_deadline(const void *val, size_t klen)
{
	const struct tdb_rec *r = (const struct tdb_rec *)
		((const unsigned char *)val - klen - TDB_REC_HDR);

	return tdb_rec_deadline(r);
}

/*
 * With the slot odd: wait for an even commit_seq (s0), grow the map to
 * the header's extents, look the key up.  0 and *val, *vlen, *version,
 * *deadline (the record's, in place; version and deadline may be NULL;
 * an expired record is -ENOENT, by view.c's clock), -ENOENT,
 * -EUCLEAN (damaged or torn: the caller checks and decides), or
 * -EAGAIN: a commit stayed in progress too long (use the ring).
 */
/* With the slot odd: wait for an even commit_seq (*s0; -EAGAIN after
 * too long) and grow the map to the header's extents (-EUCLEAN). */
static int section_start(struct tdbc *c, struct tdbc_tmap *m, uint64_t *s0)
{
	const struct tdb_region_hdr *h = region(m);
	unsigned int spins = 0;
	uint32_t n;

	for (;;) {
		*s0 = __atomic_load_n(&h->commit_seq, __ATOMIC_ACQUIRE);
		if (!(*s0 & 1))
			break;
		if (++spins < ODD_SPINS)
			continue;
		if (spins > ODD_SPINS + ODD_YIELDS)
			return -EAGAIN;
		/* a commit in progress: do not hold the slot meanwhile,
		 * unless this section handed out pointers into a map */
		if (reader(c)->held) {
			sched_yield();
			continue;
		}
		slot_leave(c, reader(c));
		sched_yield();
		slot_enter(c, reader(c));
	}
	n = tdbe_view_extents(h);
	if (n > m->nmapped && map_to(c, m, n))
		return -EUCLEAN;
	return 0;
}

static int lookup(struct tdbc *c, struct tdbc_tmap *m, const void *key,
		  size_t klen, uint64_t *s0, const void **val, size_t *vlen,
		  uint64_t *version, uint64_t *deadline)
{
	const struct tdb_region_hdr *h = region(m);
	struct tdbe_view v;
	int err;

	err = section_start(c, m, s0);
	if (err)
		return err;
	v.ext = m->ext;
	v.nextents = m->nmapped;
	err = tdbe_view_lookup_ver(&v, key, klen, val, vlen, version);
	if (err == -EUCLEAN && tdbe_view_extents(h) > m->nmapped) {
		/* grown between the two loads: once more */
		if (map_to(c, m, tdbe_view_extents(h)))
			return -EUCLEAN;
		v.nextents = m->nmapped;
		err = tdbe_view_lookup_ver(&v, key, klen, val, vlen, version);
	}
	if (deadline)
		*deadline = err ? 0 : found_deadline(*val, klen);
	return err;
}

/* After the leave: what the checks say.  0 good, 1 retry, or
 * TDBC__MAP_RING (read through the ring). */
static int verdict(struct tdbc *c, struct tdbc_tmap *m, uint64_t s0,
		   uint64_t s1, uint64_t g1, bool stale, int err)
{
	if (g1 != reader(c)->g0)
		return TDBC__MAP_RING;
	if (stale) {
		map_drop(m);
		return TDBC__MAP_RING;
	}
	if (s1 != s0)
		return 1;
	if (err == -EUCLEAN || err == -EAGAIN)
		return TDBC__MAP_RING;
	return 0;
}

/* A mapped hit, maybe sampled as a TOUCH hint (below). */
static void touch_hit(struct tdbc_table *t, const void *key, size_t klen,
		      bool may_send);

/* Inside a tdbc_read_begin section a get is part of it (tdbc_read_end
 * judges what it returned); defined with the in-place API below. */
static long get_in_section(struct tdbc_table *t, const void *key,
			   size_t klen, tdbc_map_copy_fn *copy_fn, void *arg,
			   uint64_t *version, uint64_t *deadline);

/*
 * One get through the map: copy_fn copies the value out while the slot
 * is odd (it may be called again on a retry; its result is used only if
 * the checks pass).  Returns copy_fn's result (a length or -ENOBUFS...),
 * -ENOENT, or TDBC__MAP_RING: read through the ring instead.
 */
long tdbc__map_get(struct tdbc_table *t, const void *key, size_t klen,
		   tdbc_map_copy_fn *copy_fn, void *arg, uint64_t *version,
		   uint64_t *deadline)
{
	struct tdbc *c = t->h.c;
	struct tdbc_reader *rd = reader(c);
	struct tdbc_tmap *m = t->map;
	unsigned int tries;

	if (rd && rd->user)
		return get_in_section(t, key, klen, copy_fn, arg, version,
				      deadline);
	if (!rd || !map_ready(t))
		return TDBC__MAP_RING;
	for (tries = 0; tries < MAX_RETRIES; tries++) {
		const struct tdb_region_hdr *h = region(m);
		const void *val = NULL;
		uint64_t s0, s1, g1;
		size_t vlen = 0;
		long res;
		bool stale;
		int err, v;

		slot_enter(c, rd);
		rd->g0 = expired(c);
		err = lookup(c, m, key, klen, &s0, &val, &vlen, version,
			     deadline);
		res = err ? err : copy_fn(arg, val, vlen);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s1 = __atomic_load_n(&h->commit_seq, __ATOMIC_RELAXED);
		stale = map_stale(m);
		g1 = expired(c);
		slot_leave(c, rd);
		v = verdict(c, m, s0, s1, g1, stale, err);
		if (v == 1)
			continue;
		if (v)
			return v;
		m->remaps = 0;
		if (!err)
			touch_hit(t, key, klen, true);
		return res;
	}
	return TDBC__MAP_RING;
}

/* --- hints: reads through the map reported to the owner -----------------
 * A table bounded with an LRU or LFU policy (its region header's
 * reader_flags has TDB_HDR_F_TOUCH) needs to hear of reads, or records
 * read only through maps would look unused and be evicted first.  After
 * a successful mapped get of such a table, 1 hit in TOUCH_SAMPLE (at
 * random: a per-table xorshift, so a reader that reads its keys in a
 * fixed cycle does not always sample the same ones) has its key's
 * 64-bit hash (the
 * view's: xxh64 with the header's seed) appended to the table's buffer;
 * TOUCH_BATCH of them are sent as one TOUCH, without waiting: its
 * sequence number is kept in c->touch_seq (at most TDBC_TOUCH_INFLIGHT)
 * and io.c's routing drops its answer (tdbc__touch_answer), so it never
 * reaches a completion or a blocking call.  Best effort: with the
 * submission ring full, TDBC_TOUCH_INFLIGHT unanswered, or inside a
 * tdbc_read_begin section (nothing is sent with pointers held), the
 * batch is dropped.  A reader pays a relaxed load and a few shifts per
 * hit,
 * a hash per sampled hit and a ring message per TOUCH_SAMPLE *
 * TOUCH_BATCH (1024) hits (docs/BENCHMARKS.md §13).  The table's last
 * partial batch is sent at its close (tdbc_table_close, and tdbc_close's
 * of its tables; not inside a read section).  Connections without rings
 * (no maps) send none.
 */
static void touch_send(struct tdbc_table *t)
{
	struct tdbc *c = t->h.c;
	struct tdbc_tmap *m = t->map;
	struct tdb_proto_msg msg = { .cmd = TDB_CMD_TOUCH,
				     .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
					      TDB_PROTO_BIT(TDB_A_HASHES),
				     .table = t->name,
				     .hashes = m->touch, .nhashes = m->ntouch };
	uint32_t seq;

	m->ntouch = 0;
	if (!c->rings || c->dead || c->backend == TDBC_BE_GENL ||
	    c->touch_inflight >= TDBC_TOUCH_INFLIGHT)
		return;
	seq = tdbc__seq(c);
	msg.seq = seq;
	/* kept before the send: a wait for the socket reads answers */
	c->touch_seq[c->touch_inflight++] = seq;
	if (tdbc__send_nowait(c, &msg) || tdbc__publish(c)) {
		/* not sent (ring full: -EAGAIN): forget it; a failed publish
		 * killed the connection, whose calls now all fail */
		if (c->touch_inflight &&
		    c->touch_seq[c->touch_inflight - 1] == seq)
			c->touch_inflight--;
	}
}

static void touch_hit(struct tdbc_table *t, const void *key, size_t klen,
		      bool may_send)
{
	struct tdbc_tmap *m = t->map;
	const struct tdb_region_hdr *h = region(m);

	uint32_t x;

	if (!(__atomic_load_n(&h->reader_flags, __ATOMIC_RELAXED) &
	      TDB_HDR_F_TOUCH))
		return;
	x = m->touch_rng ? m->touch_rng :
	    (uint32_t)(uintptr_t)m | 1;         /* any non-zero seed */
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	m->touch_rng = x;
	if (x % TOUCH_SAMPLE)
		return;
	if (m->ntouch < TOUCH_BATCH)
		m->touch[m->ntouch++] = tdbp_hash64(key, klen, h->seed);
	if (m->ntouch == TOUCH_BATCH && may_send)
		touch_send(t);
}

int tdbc__touch_answer(struct tdbc *c, const struct tdb_proto_msg *m)
{
	unsigned int i;

	for (i = 0; i < c->touch_inflight; i++)
		if (c->touch_seq[i] == m->seq) {
			c->touch_seq[i] = c->touch_seq[--c->touch_inflight];
			return 1;
		}
	return 0;
}

/* --- the connection ------------------------------------------------------ */

int tdbc__reader_init(struct tdbc *c, unsigned int flags)
{
	const char *env = getenv(TDBC_NO_MAP_ENV);

	/* no reader slot without a SUBMIT ring */
	if (!c->rings || !c->sq.hdr)
		return 0;
	c->reader = calloc(1, sizeof(*c->reader));
	if (!c->reader)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	c->reader->no_map = (flags & TDBC_NO_MAP) || (env && *env &&
						      strcmp(env, "0"));
	c->reader->slot = __atomic_load_n(&slot_hdr(c)->read_section,
					  __ATOMIC_RELAXED) & ~1ull;
	c->reader->g_known = expired(c);
	return 0;
}

static void copies_free(struct tdbc_reader *rd)
{
	size_t i;

	for (i = 0; i < rd->ncopies; i++)
		free(rd->copies[i]);
	rd->ncopies = 0;
}

void tdbc__reader_free(struct tdbc *c)
{
	struct tdbc_reader *rd = reader(c);

	if (!rd)
		return;
	if (rd->odd)
		slot_leave(c, rd);
	copies_free(rd);
	free(rd->copies);
	free(rd->walk);
	free(rd);
	c->reader = NULL;
}

/* --- the in-place API ---------------------------------------------------- */

/* tdbc_read_begin, slot even: after an expiry, one of our maps asks
 * again (reask_after_expiry), so in-place reads get waited for too. */
static void reask_any(struct tdbc *c)
{
	struct tdbc_reader *rd = reader(c);
	struct tdbc_link *l;

	if (!rd->reask && expired(c) == rd->g_known)
		return;
	for (l = c->handles.next; l != &c->handles; l = l->next) {
		struct tdbc_handle *h = (struct tdbc_handle *)l;
		struct tdbc_table *t;

		if (h->kind != TDBC_K_TABLE)
			continue;
		t = (struct tdbc_table *)h;
		if (t->map && t->map->state == TM_MAPPED) {
			map_ready(t);
			return;
		}
	}
}

int tdbc_read_begin(struct tdbc *c)
{
	struct tdbc_reader *rd;
	int err = tdbc__enter(c);

	if (err)
		return err;
	rd = reader(c);
	if (!rd) {
		/* socket only (no slot): every get_ref copies */
		c->reader = calloc(1, sizeof(*c->reader));
		if (!c->reader)
			return tdbc__fail(c, -ENOMEM, "out of memory");
		rd = c->reader;
		rd->no_map = true;
	}
	if (rd->user)
		return tdbc__fail(c, -EBUSY, "a read section is already open "
				  "on this connection");
	rd->user = true;
	rd->stale = false;
	rd->held = false;
	if (++rd->sec == 0)
		rd->sec = 1;
	if (c->rings && c->sq.hdr && !rd->no_map) {
		reask_any(c);
		slot_enter(c, rd);
		rd->g0 = expired(c);
	}
	return 0;
}

/* A value through the ring, kept until tdbc_read_end.  The slot is left
 * even during the call (the owner may be waiting for it before it can
 * answer) unless the section already handed out pointers into a map:
 * then memory they point to could be reused meanwhile by a put (a put
 * alone moves no commit_seq), so the slot stays odd, and if the owner
 * stops waiting for it, tdbc_read_end says -ESTALE. */
static int get_ref_ring(struct tdbc_table *t, const void *key, size_t klen,
			const void **val, size_t *vlen, uint64_t *version,
			uint64_t *deadline)
{
	struct tdbc *c = t->h.c;
	struct tdbc_reader *rd = reader(c);
	bool was_odd = rd->odd && !rd->held;
	void *p = NULL;
	long r;

	if (rd->ncopies == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 16;
		void **v = realloc(rd->copies, cap * sizeof(*v));

		if (!v)
			return tdbc__fail(c, -ENOMEM, "out of memory");
		rd->copies = v;
		rd->cap = cap;
	}
	if (was_odd)
		slot_leave(c, rd);
	r = tdbc__get_ring(t, key, klen, &p, version, deadline);
	if (was_odd)
		slot_enter(c, rd);
	if (r < 0)
		return (int)r;
	rd->copies[rd->ncopies++] = p;
	*val = p;
	*vlen = (size_t)r;
	return 0;
}

/* tdbc_get_ref_ver, and the record's deadline (deadline may be NULL). */
static int get_ref(struct tdbc_table *t, const void *key, size_t klen,
		   const void **val, size_t *vlen, uint64_t *version,
		   uint64_t *deadline)
{
	struct tdbc_reader *rd;
	struct tdbc_tmap *m;
	struct tdbc *c;
	uint64_t s0;
	int err;

	if (!t)
		return -EINVAL;
	c = t->h.c;
	rd = reader(c);
	if (!rd || !rd->user)
		return tdbc__fail(c, -EINVAL, "tdbc_get_ref outside a read "
				  "section (tdbc_read_begin)");
	if (!val || !vlen)
		return tdbc__fail(c, -EINVAL, "val or vlen is NULL");
	err = c->dead ? c->dead : tdbc__check_key(c, key, klen);
	if (err)
		return err;
	m = t->map;
	if (version)
		*version = 0;
	if (deadline)
		*deadline = 0;
	if (!rd->odd || !m || m->state != TM_MAPPED || rd->stale)
		return get_ref_ring(t, key, klen, val, vlen, version,
				    deadline);
	err = lookup(c, m, key, klen, &s0, val, vlen, version, deadline);
	if (m->sec != rd->sec) {
		m->sec = rd->sec;
		m->s0 = s0;
	} else if (s0 != m->s0) {
		rd->stale = true;       /* a commit since our first look */
	}
	if (err == -EUCLEAN || err == -EAGAIN)
		rd->stale = true;
	if (rd->stale)
		return get_ref_ring(t, key, klen, val, vlen, version,
				    deadline);
	if (!err) {
		rd->held = true;
		touch_hit(t, key, klen, false);
	} else if (version)
		*version = 0;
	return err;
}

int tdbc_get_ref_ver(struct tdbc_table *t, const void *key, size_t klen,
		     const void **val, size_t *vlen, uint64_t *version)
{
	return get_ref(t, key, klen, val, vlen, version, NULL);
}

int tdbc_get_ref(struct tdbc_table *t, const void *key, size_t klen,
		 const void **val, size_t *vlen)
{
	return tdbc_get_ref_ver(t, key, klen, val, vlen, NULL);
}

static long get_in_section(struct tdbc_table *t, const void *key,
			   size_t klen, tdbc_map_copy_fn *copy_fn, void *arg,
			   uint64_t *version, uint64_t *deadline)
{
	const void *v;
	size_t n;
	int err = get_ref(t, key, klen, &v, &n, version, deadline);

	return err ? err : copy_fn(arg, v, n);
}

/* Check the tables this section used; drop stale maps. */
static bool section_ok(struct tdbc *c, struct tdbc_reader *rd)
{
	struct tdbc_link *l;
	bool ok = !rd->stale;

	for (l = c->handles.next; l != &c->handles; l = l->next) {
		struct tdbc_handle *h = (struct tdbc_handle *)l;
		struct tdbc_tmap *m;

		if (h->kind != TDBC_K_TABLE)
			continue;
		m = ((struct tdbc_table *)h)->map;
		if (!m || m->state != TM_MAPPED || m->sec != rd->sec)
			continue;
		m->sec = 0;
		if (map_stale(m)) {
			map_drop(m);
			ok = false;
		} else if (__atomic_load_n(&region(m)->commit_seq,
					   __ATOMIC_RELAXED) != m->s0) {
			ok = false;
		}
	}
	return ok;
}

int tdbc_read_end(struct tdbc *c)
{
	struct tdbc_reader *rd;
	bool ok = true;

	if (!c)
		return -EINVAL;
	rd = reader(c);
	if (!rd || !rd->user)
		return tdbc__fail(c, -EINVAL, "no read section is open");
	if (rd->odd) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		ok = section_ok(c, rd) && expired(c) == rd->g0;
		slot_leave(c, rd);
	}
	rd->user = false;
	rd->held = false;
	copies_free(rd);
	if (!ok)
		return tdbc__fail(c, -ESTALE, "the tables changed during the "
				  "read section: discard what it read and "
				  "read again");
	return 0;
}

int tdbc_table_mapped(const struct tdbc_table *t)
{
	return t && t->map && t->map->state == TM_MAPPED;
}

/* --- ranges: walking an ordered table in place ---------------------------
 * tdbc_map_range walks a range through the engine's view iterator
 * (tdbe_view_range/tdbe_view_next: the ordered index's B+tree, bounds
 * checked like a lookup) in parts of at most RANGE_PART records, one
 * read section each:
 *   enter the slot; g0; wait for an even commit_seq (s0); walk up to
 *   RANGE_PART records, keeping pointers; acquire fence; s1, map_gen,
 *   magic, g1 (the checks of a mapped get, taken with the slot still
 *   odd); if they pass, hand the part to fn, record by record, with
 *   the slot still odd (nothing fn sees can be reused meanwhile, unless
 *   the owner stops waiting for us: g2 after the part, -ESTALE); keep a
 *   copy of the last key fn saw; leave.
 * A part that fails the checks was never shown to fn: it is walked
 * again (s1 != s0: a commit ran; up to MAX_RETRIES times in a row) or
 * the rest of the range goes through the rings (an expiry, a stale map,
 * a torn walk: what a mapped get does).  The next part starts after the
 * last key fn saw (from it, exclusive; in reverse: to it, exclusive),
 * so a key is never shown twice nor out of order, and a section lasts
 * one part however long the range.  Each part is checked whole against
 * commit_seq, so a transaction is in a part whole or not at all, as in
 * a mapped get.  The records shown are uses of a bounded LRU or LFU
 * table, sampled into TOUCH hints as a mapped get's are (sent between
 * parts, with the slot even).
 */
#define RANGE_PART 64u

struct range_rec {
	const void *key, *val;
	size_t klen, vlen;
	uint64_t version;
};

struct range_walk {
	struct tdbc_table *t;
	struct tdbc_range r;            /* the caller's */
	uint64_t limit, done;           /* records fn was given */
	bool have_last;
	size_t last_len;
	unsigned char last[TDB_KEY_MAX];
	tdbc_range_fn *fn;
	void *arg;
	struct range_rec rec[RANGE_PART];
};

_Static_assert(TDBC_RANGE_FROM_EXCL == TDBE_RANGE_FROM_EXCL &&
	       TDBC_RANGE_TO_INCL == TDBE_RANGE_TO_INCL &&
	       TDBC_RANGE_REVERSE == TDBE_RANGE_REVERSE,
	       "the client's range flags are the engine's");

/* What is left of the walk's range: after the last key fn saw. */
static void range_rest(const struct range_walk *w, struct tdbc_range *r)
{
	*r = w->r;
	if (!w->have_last)
		return;
	if (r->flags & TDBC_RANGE_REVERSE) {
		r->to = w->last;
		r->to_len = w->last_len;
		r->flags &= ~TDBC_RANGE_TO_INCL;
	} else {
		r->from = w->last;
		r->from_len = w->last_len;
		r->flags |= TDBC_RANGE_FROM_EXCL;
	}
}

/* Remember the last key fn saw (a copy: the next part starts after it,
 * in another section). */
static void range_last(struct range_walk *w, const void *key, size_t klen)
{
	memcpy(w->last, key, klen);
	w->last_len = klen;
	w->have_last = true;
}

/* The rest of the range through the rings (a ring scan from the last
 * key fn saw). */
static int range_ring(struct range_walk *w)
{
	struct tdbc_range r;
	struct tdbc_scan *s;
	const void *k, *v;
	size_t kn, vn;
	uint64_t ver;
	int err, rc = 0;

	if (w->limit && w->done >= w->limit)
		return 0;
	range_rest(w, &r);
	err = tdbc_scan_range(w->t, &r, w->limit ? w->limit - w->done : 0, 0,
			      &s);
	if (err)
		return err;
	while (!rc && (err = tdbc_scan_next_ver(s, &k, &kn, &v, &vn,
						&ver)) > 0) {
		rc = w->fn(w->arg, k, kn, v, vn, ver);
		range_last(w, k, kn);
		w->done++;
	}
	tdbc_scan_close(s);
	return rc ? rc : err;
}

/*
 * With the slot odd: walk one part (section_start first).  0 and *n
 * records (*end: the range ends after them), or -errno: -EOPNOTSUPP
 * (not an ordered table), -EUCLEAN (torn or damaged), -EAGAIN.
 */
static int range_walk_part(struct tdbc *c, struct tdbc_tmap *m,
			   struct range_walk *w, uint64_t *s0,
			   unsigned int max, unsigned int *n, bool *end)
{
	const struct tdb_region_hdr *h = region(m);
	struct tdbe_view_iter it;
	struct tdbe_range er;
	struct tdbc_range r;
	struct tdbe_view v;
	int err, tries;

	*n = 0;
	*end = false;
	err = section_start(c, m, s0);
	if (err)
		return err;
	range_rest(w, &r);
	er.from = r.from;
	er.from_len = r.from ? r.from_len : 0;
	er.to = r.to;
	er.to_len = r.to ? r.to_len : 0;
	er.flags = r.flags;
	v.ext = m->ext;
	for (tries = 0;; tries++) {
		v.nextents = m->nmapped;
		if (!tdbe_view_ordered(&v))
			return -EOPNOTSUPP;
		err = tdbe_view_range(&v, &er, &it);
		while (!err && *n < max) {
			struct range_rec *x = &w->rec[*n];
			int rc = tdbe_view_next(&it, &x->key, &x->klen,
						&x->val, &x->vlen,
						&x->version);

			if (rc < 0)
				err = rc;
			else if (!rc)
				*end = true;
			else
				(*n)++;
			if (rc <= 0)
				break;
		}
		/* grown between the header's load and the walk: again */
		if (err != -EUCLEAN || tries ||
		    tdbe_view_extents(h) <= m->nmapped)
			return err;
		if (map_to(c, m, tdbe_view_extents(h)))
			return -EUCLEAN;
		*n = 0;
		*end = false;
	}
}

/* One part through the map: 0 the part was shown to fn (*end: the range
 * is over), 1 walk it again, TDBC__MAP_RING, fn's nonzero value (*stop),
 * or -errno. */
static int range_part(struct range_walk *w, bool *end, bool *stop)
{
	struct tdbc_table *t = w->t;
	struct tdbc *c = t->h.c;
	struct tdbc_reader *rd = reader(c);
	struct tdbc_tmap *m = t->map;
	const struct tdb_region_hdr *h = region(m);
	unsigned int max = RANGE_PART, n, i;
	uint64_t s0 = 0, s1, g1;
	bool stale;
	int err, rc = 0;

	if (w->limit && w->limit - w->done < max)
		max = (unsigned int)(w->limit - w->done);
	slot_enter(c, rd);
	rd->g0 = expired(c);
	err = range_walk_part(c, m, w, &s0, max, &n, end);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s1 = __atomic_load_n(&h->commit_seq, __ATOMIC_RELAXED);
	stale = map_stale(m);
	g1 = expired(c);
	if (g1 != rd->g0 || stale || s1 != s0 || err) {
		slot_leave(c, rd);
		if (g1 != rd->g0)
			return TDBC__MAP_RING;
		if (stale) {
			map_drop(m);
			return TDBC__MAP_RING;
		}
		if (s1 != s0)
			return 1;
		if (err == -EOPNOTSUPP)
			return tdbc__fail(c, err, "range walks need an ordered "
					  "table (tdb create --ordered)");
		if (err == -EINVAL)
			return tdbc__fail(c, err, "the range is not valid");
		return TDBC__MAP_RING;  /* -EUCLEAN, -EAGAIN */
	}
	/* checked: the part is what the table held at s0, whole; each
	 * record shown is a use, as a mapped get's (hints, sent below) */
	for (i = 0; i < n && !rc; i++) {
		rc = w->fn(w->arg, w->rec[i].key, w->rec[i].klen,
			   w->rec[i].val, w->rec[i].vlen, w->rec[i].version);
		touch_hit(t, w->rec[i].key, w->rec[i].klen, false);
	}
	if (i) {                /* i records shown, the last at i - 1 */
		range_last(w, w->rec[i - 1].key, w->rec[i - 1].klen);
		w->done += i;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	g1 = expired(c);
	slot_leave(c, rd);
	m->remaps = 0;
	if (m->ntouch == TOUCH_BATCH)
		touch_send(t);
	if (g1 != rd->g0)
		return tdbc__fail(c, -ESTALE, "a range walk's read section "
				  "outlived tdbd's reader-lease while fn ran: "
				  "what fn saw of its last %u records may have "
				  "been overwritten", i);
	if (rc) {
		*stop = true;
		return rc;
	}
	return 0;
}

int tdbc_map_range(struct tdbc_table *t, const struct tdbc_range *r,
		   uint64_t limit, tdbc_range_fn *fn, void *arg)
{
	struct tdbc_reader *rd;
	struct range_walk *w;
	unsigned int retries = 0;
	struct tdbc *c;
	int err;

	if (!t)
		return -EINVAL;
	c = t->h.c;
	err = tdbc__enter(c);
	if (!err && !fn)
		err = tdbc__fail(c, -EINVAL, "fn is NULL");
	if (!err)
		err = tdbc__check_range(c, r);
	rd = reader(c);
	if (!err && rd && rd->user)
		err = tdbc__fail(c, -EBUSY, "tdbc_map_range inside a read "
				 "section (tdbc_read_begin): it opens its "
				 "own");
	if (err)
		return err;
	/* ~9 KiB (a key's copy, a part's pointers): kept with the reader
	 * so that short walks cost no allocation */
	w = rd && rd->walk ? rd->walk : malloc(sizeof(*w));
	if (!w)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	if (rd)
		rd->walk = w;
	/* not the whole struct: last and rec are written before read */
	w->t = t;
	w->r = *r;
	w->limit = limit;
	w->done = 0;
	w->have_last = false;
	w->last_len = 0;
	w->fn = fn;
	w->arg = arg;
	/* an open side has nothing to include or exclude */
	if (!r->from)
		w->r.flags &= ~TDBC_RANGE_FROM_EXCL;
	if (!r->to)
		w->r.flags &= ~TDBC_RANGE_TO_INCL;
	if (!rd || !map_ready(t)) {
		err = range_ring(w);
		goto out;
	}
	for (;;) {
		bool end = false, stop = false;

		if (w->limit && w->done >= w->limit) {
			err = 0;
			break;
		}
		err = range_part(w, &end, &stop);
		if (stop || (err < 0 && err != TDBC__MAP_RING))
			break;
		if (err == 1 && ++retries <= MAX_RETRIES)
			continue;
		if (err) {              /* TDBC__MAP_RING, or retried out */
			err = range_ring(w);
			break;
		}
		retries = 0;
		if (end)
			break;
	}
out:
	if (!rd)
		free(w);
	return err;
}

/* --- tdbc_submit's GETs -------------------------------------------------- */

static long alloc_copy(void *arg, const void *val, size_t vlen)
{
	void **p = arg;

	free(*p);
	*p = malloc(vlen ? vlen : 1);
	if (!*p)
		return -ENOMEM;
	memcpy(*p, val, vlen);
	return (long)vlen;
}

int tdbc__map_submit_get(struct tdbc *c, const struct tdbc_req *r)
{
	uint64_t version = 0, deadline = 0;
	void *p = NULL;
	long n;
	int err;

	/* Completions made here wait in our memory until tdbc_reap: as
	 * many as a full submission ring would hold, then -EAGAIN (as when
	 * the ring is full), so a client that never reaps stays bounded. */
	if (r->table->map && r->table->map->state == TM_MAPPED &&
	    tdbc_inflight(c) >= MAP_DONE_MAX)
		return -EAGAIN;
	n = tdbc__map_get(r->table, r->key, r->klen, alloc_copy, &p,
			  &version, &deadline);

	if (n == TDBC__MAP_RING || n == -ENOMEM) {
		free(p);
		return n == -ENOMEM ? tdbc__fail(c, -ENOMEM, "out of memory "
						 "for a value") : 0;
	}
	if (n < 0) {
		free(p);
		err = tdbc__async_complete(c, r->user, (int)n, NULL, 0, 0,
					   0);
	} else {
		err = tdbc__async_complete(c, r->user, 0, p, (size_t)n,
					   version, deadline);
	}
	return err ? err : 1;
}

/* --- batches: overlapping the misses -------------------------------------
 * tdbc_submit's GETs are looked up one by one (tdbc__map_submit_get), each
 * walking root slot -> node -> bucket -> record, a cache miss or more at
 * each step on a big table.  Before that, tdbc__map_prefetch walks the
 * whole batch level by level and prefetches each request's next step, so
 * the batch's misses overlap (what tdbe_lookup_many does in the owner).
 * It is only a hint: it runs outside a read section, every load is
 * bounds-checked against the extents mapped (a torn or reused slot only
 * prefetches a useless line), and nothing it reads is used but as a
 * prefetch address.
 */
#define PF_BATCH 32

/* The address of [off, off + len) if it lies in one mapped extent. */
static const void *pf_ptr(const struct tdbc_tmap *m, uint64_t off,
			  uint64_t len)
{
	uint64_t e = off >> TDBP_EXTENT_SHIFT;

	if (!off || (off & 15) || e >= m->nmapped ||
	    (off & TDB_EXT_MASK) + len > EXTENT)
		return NULL;
	return (const unsigned char *)m->ext[e] + (off & TDB_EXT_MASK);
}

struct pf {
	const struct tdbc_tmap *m;
	uint64_t hash;
	const uint64_t *slot;   /* the directory slot to read, or NULL */
	uint64_t bucket;        /* then: the bucket's offset; 0 = done */
};

/* One step of one request: read its slot and prefetch its bucket, or
 * read its bucket and prefetch the records its tag matches.  True while
 * there is a next step. */
static bool pf_step(struct pf *p)
{
	const struct tdbi_bucket *b;
	uint64_t s;
	unsigned int i, l;

	if (p->slot) {
		s = __atomic_load_n(p->slot, __ATOMIC_RELAXED);
		p->slot = NULL;
		l = (unsigned int)(s & TDBI_DEPTH_MASK);
		if (!(s & ~TDBI_DEPTH_MASK) || l > TDBI_MAX_PAGE_DEPTH)
			return false;
		p->bucket = (s & ~TDBI_DEPTH_MASK) +
			    (uint64_t)tdbi_page_index(p->hash, l) * 64;
		__builtin_prefetch(pf_ptr(p->m, p->bucket, 64));
		return true;
	}
	b = pf_ptr(p->m, p->bucket, 64);
	p->bucket = 0;
	if (!b)
		return false;
	for (i = 0; i < TDBI_BUCKET_CAP; i++) {
		uint64_t e = __atomic_load_n(&b->e[i], __ATOMIC_RELAXED);

		if (e && tdbi_entry_tag_is(e, p->hash))
			__builtin_prefetch(pf_ptr(p->m, tdbi_entry_rec(e),
						  16));
	}
	return false;
}

static void pf_batch(struct pf *p, unsigned int n)
{
	unsigned int i;
	bool more;

	do {
		more = false;
		for (i = 0; i < n; i++) {
			if ((p[i].slot || p[i].bucket) && pf_step(&p[i]))
				more = true;
		}
	} while (more);
}

/* The directory slot of hash in m's region, or NULL (out of the map). */
static const uint64_t *pf_slot(const struct tdbc_tmap *m, uint64_t hash)
{
	uint64_t d = __atomic_load_n(&region(m)->root, __ATOMIC_ACQUIRE);
	unsigned int g = (unsigned int)(d & TDBI_DEPTH_MASK);
	const uint64_t *dir;

	if (g > TDBI_MAX_PAGE_DEPTH)
		return NULL;
	dir = pf_ptr(m, d & ~TDBI_DEPTH_MASK, tdbi_dir_bytes(g));
	return dir ? &dir[tdbi_dir_index(hash, g)] : NULL;
}

void tdbc__map_prefetch(struct tdbc *c, const struct tdbc_req *reqs,
			unsigned int n)
{
	struct pf p[PF_BATCH];
	unsigned int i, k = 0;

	if (!reader(c) || reader(c)->user || n < 2)
		return;
	for (i = 0; i < n; i++) {
		const struct tdbc_req *r = &reqs[i];
		const struct tdb_region_hdr *h;
		const struct tdbc_tmap *m;

		if (r->op != TDBC_OP_GET || r->txn || !r->table ||
		    r->table->h.c != c || !r->key || !r->klen ||
		    r->klen > TDBE_KEY_MAX || !r->table->map ||
		    r->table->map->state != TM_MAPPED)
			continue;
		m = r->table->map;
		h = region(m);
		p[k].m = m;
		p[k].hash = tdbp_hash64(r->key, r->klen, h->seed);
		p[k].slot = pf_slot(m, p[k].hash);
		p[k].bucket = 0;
		if (!p[k].slot)
			continue;
		__builtin_prefetch(p[k].slot);
		if (++k == PF_BATCH) {
			pf_batch(p, k);
			k = 0;
		}
	}
	pf_batch(p, k);
}
