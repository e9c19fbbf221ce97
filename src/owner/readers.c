/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * readers.c - zero-copy readers: clients that map a table's memory
 * read-only and look keys up themselves (TABLE_MAP), and the owner's
 * side of keeping that memory from being reused under them.
 *
 * A reader's slot is two lines of its submission ring's header page
 * (tdb/ring.h, "Zero-copy readers"): `read_section`, which the client
 * writes (odd inside a read section), and `read_expired`, which only the
 * owner writes.  The engine calls readers_grace() after each grace
 * period of its own readers, before it reuses retired memory (table.c's
 * limbo); it returns once no mapped reader can still be reading what was
 * retired before the call.
 *
 * Invariants and why:
 *  - The slot is client memory: the owner loads `read_section` once per
 *    look into a private copy, compares it, and trusts nothing else;
 *    whatever a client writes there can only make the owner wait for it
 *    up to the lease, once per stuck value, and expire it; then, benched
 *    (below), not again before a backoff.
 *  - Quiescence: the engine's grace period has issued full barriers
 *    after the retiring stores; a section that began after them cannot
 *    see what was retired.  A slot even now, or different from the odd
 *    value seen first, means the section seen has ended.  So the wait is
 *    only for sections that were open when the owner looked.
 *  - The lease: a section open for longer than reader_lease_ms since
 *    the owner first saw it (the owner's clock) is expired: the owner
 *    bumps its own count of expiries, stores it in `read_expired`
 *    (release, then a full barrier) and only then lets the memory be
 *    reused.  A reader that loads `read_expired` after its reads (after
 *    a read barrier) therefore sees the bump if it could have read
 *    reused memory, and throws what it read away.  The owner remembers
 *    the value it expired (expired_at) and does not wait for it again:
 *    a dead or stopped reader costs a writer at most one lease.
 *  - Benched readers: a reader that expired is benched: no grace period
 *    waits for it again until its client asked for a map anew
 *    (TABLE_MAP, reader_add: `reasked`) and its backoff is over.  The
 *    backoff is its uid's (o->rd_uids, the last TDBO_READER_UIDS uids
 *    that expired), so neither a new connection nor another client of
 *    the uid starts afresh: every reader of a benched uid is benched
 *    with it (without having to ask again), new ones too.  It doubles
 *    from READER_BACKOFF_MIN_MS (1 s) at each expiry up to
 *    READER_BACKOFF_MAX_MS (60 s), and starts again from 1 s at an
 *    expiry READER_CLEAN_MS (5 min) or more after the uid's last bench
 *    ended.  So a uid whose readers put a new odd value in their slots
 *    after each expiry and ask for a map at once costs writers one lease
 *    at 0, 1, 3, 7, 15, 31, 63 s, then one per 60 s; at worst (waiting
 *    out the clean period each time) 7 leases per 6 min.  A
 *    benched reader stays correct without being waited for: at each
 *    grace period, if its slot shows an odd value (any), the owner bumps
 *    `read_expired` exactly as an expiry does (release store, then a
 *    full barrier) before the memory can be reused.  A section open
 *    when the owner looked either loaded g0 before the bump, and then
 *    sees g1 != g0 if it could have read reused memory (its read of a
 *    reused byte is after the bump's barrier, its load of g1 after its
 *    read barrier), or loaded g0 = the bump (acquire, from the release
 *    store that follows the retiring stores' barrier), and then all it
 *    reads is after the retiring stores: it cannot reach what was
 *    retired.  A section that began after the look (slot even then)
 *    cannot see retired memory (quiescence above).  So a bump costs the
 *    reader a retry through its rings, never the writer a wait.
 *  - o->rlock guards the reader list and each reader's private fields
 *    (`benched` is also read without it by its own client's TABLE_MAP);
 *    it is a leaf lock, held while waiting (so a client's ring memory,
 *    where the slot lives, is not freed under the owner: tdbo_client_free
 *    takes the reader out under it, before its home frees the rings).
 */
#include "internal.h"

#define READER_LEASE_DEFAULT_MS 100u
#define READER_SPINS            64u    /* looks before the first sleep */
#define READER_NAP_US           50u
#define READER_BACKOFF_MIN_MS   1000u
#define READER_BACKOFF_MAX_MS   60000u
#define READER_CLEAN_MS         300000u /* waited for this long without
					 * expiring: the backoff restarts */
#define MS                      1000000ull

/* The client's slot is `volatile` to the compiler: one load per look. */
static uint64_t slot_section(const struct tdbo_reader *r)
{
	return tdb_load_acquire(&r->slot->read_section);
}

/* Tell r that memory it may be reading is about to be reused: what a
 * section open now read is thrown away (ring.h, "Zero-copy readers"). */
static void reader_bump(struct tdbo_reader *r)
{
	r->expired++;
	tdb_store_release(&r->slot->read_expired, r->expired);
	tdb_smp_mb();
}

/* uid's backoff record, or NULL. */
static struct tdbo_reader_uid *uid_find(struct tdbo_owner *o, uint32_t uid)
{
	unsigned int i;

	for (i = 0; i < TDBO_READER_UIDS; i++)
		if (o->rd_uids[i].bench_until_ns && o->rd_uids[i].uid == uid)
			return &o->rd_uids[i];
	return NULL;
}

/* uid's record, made if need be in place of the one whose bench ended
 * longest ago. */
static struct tdbo_reader_uid *uid_get(struct tdbo_owner *o, uint32_t uid)
{
	struct tdbo_reader_uid *e = uid_find(o, uid), *old;
	unsigned int i;

	if (e)
		return e;
	old = &o->rd_uids[0];
	for (i = 1; i < TDBO_READER_UIDS; i++)
		if (o->rd_uids[i].bench_until_ns < old->bench_until_ns)
			old = &o->rd_uids[i];
	old->uid = uid;
	old->backoff_ms = 0;
	old->bench_until_ns = 0;
	return old;
}

/* Until when r's uid is benched (0: not). */
static uint64_t uid_until(struct tdbo_owner *o, uint32_t uid)
{
	struct tdbo_reader_uid *e = uid_find(o, uid);

	return e ? e->bench_until_ns : 0;
}

/* The bench after an expiry at now, its uid's: 1 s, doubled at each
 * expiry up to 60 s, 1 s again after a clean period since the last
 * bench ended. */
static void reader_bench(struct tdbo_owner *o, struct tdbo_reader *r,
			 uint64_t now)
{
	struct tdbo_reader_uid *e = uid_get(o, r->uid);
	uint32_t b = e->backoff_ms;

	if (!b || (now >= e->bench_until_ns &&
		   now - e->bench_until_ns >= READER_CLEAN_MS * MS))
		b = READER_BACKOFF_MIN_MS;
	else if (b < READER_BACKOFF_MAX_MS / 2)
		b *= 2;
	else
		b = READER_BACKOFF_MAX_MS;
	e->backoff_ms = b;
	e->bench_until_ns = now + b * MS;
	if (e->bench_until_ns > o->rd_bench_until_ns)
		o->rd_bench_until_ns = e->bench_until_ns;
	r->bench_until_ns = e->bench_until_ns;
	r->reasked = false;
	tdb_store_relaxed(&r->benched, true);
}

/* Another client of r's uid expired: r is benched with it, and needs no
 * new map to be waited for again (it did nothing). */
static void reader_bench_with_uid(struct tdbo_reader *r, uint64_t until)
{
	r->bench_until_ns = until;
	r->reasked = true;
	tdb_store_relaxed(&r->benched, true);
}

/* Is r's bench over (its own and its uid's), r having asked again? */
static bool reader_may_unbench(struct tdbo_owner *o, struct tdbo_reader *r,
			       uint64_t now)
{
	return r->reasked && now >= r->bench_until_ns &&
	       now >= uid_until(o, r->uid);
}

static void reader_unbench(struct tdbo_reader *r)
{
	tdb_store_relaxed(&r->benched, false);
	r->seen = 0;
}

/* Under rlock: is r's uid benched now (someone of it expired)? */
static uint64_t uid_benched(struct tdbo_owner *o, struct tdbo_reader *r,
			    uint64_t now)
{
	uint64_t until;

	if (now >= o->rd_bench_until_ns)
		return 0;       /* no uid is: no look-up */
	until = uid_until(o, r->uid);
	return now < until ? until : 0;
}

static void reader_expire(struct tdbo_owner *o, struct tdbo_reader *r,
			  uint64_t v, uint64_t lease_ns, uint64_t now)
{
	r->expired_at = v;
	/* benched before the bump publishes it: a client that saw the
	 * bump and asks for a map finds itself benched (reader_add) */
	reader_bench(o, r, now);
	reader_bump(r);
	tdbo_inc(&o->readers_expired);
	tdbp_log_rl(&o->rl[TDBO_RL_READERS], TDBP_LOG_WARNING,
		    "a mapped reader (uid %u) stayed in one read section "
		    "longer than the lease (%u ms): stopped waiting for it "
		    "(what it read in that section is thrown away and read "
		    "again through its rings) for %u s at least",
		    r->uid, (unsigned int)(lease_ns / MS),
		    (unsigned int)((r->bench_until_ns - now) / (1000 * MS)));
}

/* Wait until the section r showed as v (r->seen, stamped by
 * readers_grace) has ended, or expire it. */
static void reader_wait(struct tdbo_owner *o, struct tdbo_reader *r,
			uint64_t v, uint64_t lease_ns)
{
	unsigned int looks = 0;

	for (;;) {
		uint64_t now;

		if (slot_section(r) != v)
			return;
		now = tdbp_now_ns();
		if (now - r->seen_ns >= lease_ns) {
			reader_expire(o, r, v, lease_ns, now);
			return;
		}
		if (++looks > READER_SPINS)
			tdbp_sleep_us(READER_NAP_US);
	}
}

/* The engine's grace hook (tdbe_engine_set_grace). */
static void readers_grace(void *arg)
{
	struct tdbo_owner *o = arg;
	struct tdbo_reader *r;
	uint64_t lease_ns, now;
	uint32_t ms;

	if (!tdb_load_acquire(&o->nreaders))
		return;
	ms = tdbo_lim(o, reader_lease_ms);
	lease_ns = (uint64_t)(ms ? ms : READER_LEASE_DEFAULT_MS) * 1000000u;
	tdb_smp_mb();           /* the retiring stores before the looks */
	tdbp_mutex_lock(o->rlock);
	/* One look at every slot first, each open section stamped with the
	 * time it was first seen: the leases of readers stuck at once then
	 * run together, so a grace period waits one lease at most, not one
	 * per stuck reader. */
	now = tdbp_now_ns();
	tdbo_list_for_each(r, &o->readers, node) {
		uint64_t v = slot_section(r), until;

		if (r->benched && reader_may_unbench(o, r, now))
			reader_unbench(r);
		else if (!r->benched && (until = uid_benched(o, r, now)))
			reader_bench_with_uid(r, until);
		if (r->benched) {
			/* not waited for: told instead (header comment) */
			r->pending = false;
			if (v & 1)
				reader_bump(r);
			continue;
		}
		r->pending = (v & 1) && v != r->expired_at;
		if (r->pending && v != r->seen) {
			r->seen = v;
			r->seen_ns = now;
		}
	}
	tdbo_list_for_each(r, &o->readers, node) {
		if (!r->pending)
			continue;
		r->pending = false;
		reader_wait(o, r, r->seen, lease_ns);
	}
	tdbp_mutex_unlock(o->rlock);
}

int tdbo_readers_init(struct tdbo_owner *o)
{
	o->rlock = tdbp_mutex_create();
	if (!o->rlock)
		return -ENOMEM;
	tdbo_list_init(&o->readers);
	tdbe_engine_set_grace(o->engine, readers_grace, o);
	return 0;
}

void tdbo_readers_fini(struct tdbo_owner *o)
{
	if (o->rlock)
		tdbp_mutex_destroy(o->rlock);
}

void tdbo_client_set_reader(struct tdbo_client *c, struct tdb_ring_hdr *sq)
{
	c->rd.slot = sq;
	c->rd.uid = c->uid;
}

/* tdbo_client_free: the client's rings are about to go. */
void tdbo_reader_remove(struct tdbo_client *c)
{
	struct tdbo_owner *o = c->o;

	if (!c->rd.listed)
		return;
	tdbp_mutex_lock(o->rlock);
	tdbo_list_del(&c->rd.node);
	c->rd.listed = false;
	tdb_store_release(&o->nreaders, o->nreaders - 1);
	tdbp_mutex_unlock(o->rlock);
}

/* Its first map makes the client a reader the owner waits for.  What
 * the slot shows now is not trusted either: a section the client opened
 * before it was listed cannot hold a map of this grant yet.  A later map
 * of a benched reader asks to be waited for again: once its backoff is
 * over (here, or at the next grace period). */
static void reader_add(struct tdbo_client *c)
{
	struct tdbo_owner *o = c->o;
	struct tdbo_reader *r = &c->rd;
	uint64_t now, until;

	/* listed changes only on this client's thread; benched is the
	 * grace period's, set before the bump the client acted on */
	if (r->listed && !tdb_load_relaxed(&r->benched))
		return;
	tdbp_mutex_lock(o->rlock);
	now = tdbp_now_ns();
	if (r->listed) {
		if (r->benched) {
			r->reasked = true;
			if (reader_may_unbench(o, r, now))
				reader_unbench(r);
		}
		tdbp_mutex_unlock(o->rlock);
		return;
	}
	r->seen = 0;
	r->expired_at = 0;
	r->benched = false;
	/* a new connection does not start afresh: its uid's bench holds */
	until = uid_benched(o, r, now);
	if (until)
		reader_bench_with_uid(r, until);
	tdbo_list_add(&r->node, &o->readers);
	r->listed = true;
	tdb_store_release(&o->nreaders, o->nreaders + 1);
	tdbp_mutex_unlock(o->rlock);
}

/* TABLE_MAP: the checks, then the table for the transport to map. */
int tdbo_cmd_map(struct tdbo_client *c, const struct tdb_proto_msg *m,
		 struct tdb_proto_extack *ext, struct tdbo_out *res)
{
	struct tdbo_table *t;
	int err = 0;

	if (!c->rd.slot) {
		ext->msg = "this transport hands out no table maps (read "
			   "through the rings)";
		return -EOPNOTSUPP;
	}
	t = tdbo_resolve(c, m, TDBO_MAY_READ, ext, &err);
	if (!t)
		return err;
	reader_add(c);
	/* after reader_add: a drop that bumps map_gen from here on is seen
	 * by the client, and the owner waits for its sections.  Under
	 * reg_lock, as a drop bumps it and marks the table dropped
	 * (registry.c, reg_drop): either the generation from before the
	 * drop, which the client then sees move, or none. */
	tdbp_mutex_lock(c->o->reg_lock);
	if (t->dropped) {
		err = -ENOENT;
	} else {
		res->map_gen = tdbe_table_map_gen(t->t);
		res->map_extents = tdbe_table_max_extents(t->t);
	}
	tdbp_mutex_unlock(c->o->reg_lock);
	if (err) {
		ext->msg = "no such table (dropped while being mapped)";
		tdbo_table_put(t);
		return err;
	}
	res->map = t;
	return 0;
}

/* --- what a home that maps tables needs ------------------------------------ */

struct tdbe_table *tdbo_table_engine(struct tdbo_table *t)
{
	return t->t;
}

uint64_t tdbo_table_map_slot(const struct tdbo_table *t)
{
	return t->map_slot;
}

struct tdbo_table *tdbo_table_by_map_slot(struct tdbo_owner *o,
					  uint64_t slot)
{
	struct tdbo_table *t, *found = NULL;

	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_for_each(t, &o->tables, lnode)
		if (t->map_slot == slot) {
			tdbo_ref_get(&t->refs);
			found = t;
			break;
		}
	tdbp_mutex_unlock(o->reg_lock);
	return found;
}

int tdbo_may_read(const struct tdbo_client *c, const struct tdbo_table *t)
{
	/* acquire: dropped is stored (release) after the region's map_gen
	 * moved (registry.c, reg_drop), so a map fault that serves zeros
	 * for a dropped table leaves its reader to see the new map_gen */
	if (tdb_load_acquire(&t->dropped) || !t->t)
		return -ENOENT;
	return tdbo_may(c, t, TDBO_MAY_READ) ? 0 : -EACCES;
}

/* Under reg_lock (reg_add): a map slot no table in the registry has.
 * Tables are at most max_tables, so the walk is short. */
uint64_t tdbo_map_slot_pick(struct tdbo_owner *o)
{
	struct tdbo_table *t;
	bool taken;

	do {
		uint64_t s = TDBO_MAP_SLOT_FIRST +
			     TDBO_MAP_SLOTS * o->next_map_slot++;

		if (s > TDBO_MAP_SLOT_LAST) {
			o->next_map_slot = 1;
			s = TDBO_MAP_SLOT_FIRST;
		}
		taken = false;
		tdbo_list_for_each(t, &o->tables, lnode)
			if (t->map_slot == s)
				taken = true;
		if (!taken)
			return s;
	} while (1);
}
