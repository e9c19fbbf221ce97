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
 *    up to the lease, once per stuck value, and expire it.
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
 *  - o->rlock guards the reader list and each reader's private fields;
 *    it is a leaf lock, held while waiting (so a client's ring memory,
 *    where the slot lives, is not freed under the owner: tdbo_client_free
 *    takes the reader out under it, before its home frees the rings).
 */
#include "internal.h"

#define READER_LEASE_DEFAULT_MS 100u
#define READER_SPINS            64u    /* looks before the first sleep */
#define READER_NAP_US           50u

/* The client's slot is `volatile` to the compiler: one load per look. */
static uint64_t slot_section(const struct tdbo_reader *r)
{
	return tdb_load_acquire(&r->slot->read_section);
}

static void reader_expire(struct tdbo_owner *o, struct tdbo_reader *r,
			  uint64_t v, uint64_t lease_ns)
{
	r->expired_at = v;
	r->expired++;
	tdb_store_release(&r->slot->read_expired, r->expired);
	tdb_smp_mb();
	tdbo_inc(&o->readers_expired);
	tdbp_log(TDBP_LOG_WARNING, "a mapped reader (uid %u) stayed in one "
		 "read section longer than the lease (%u ms): stopped "
		 "waiting for it (what it read in that section is thrown "
		 "away and read again through its rings)",
		 r->uid, (unsigned int)(lease_ns / 1000000));
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
			reader_expire(o, r, v, lease_ns);
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
		uint64_t v = slot_section(r);

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
 * before it was listed cannot hold a map of this grant yet. */
static void reader_add(struct tdbo_client *c)
{
	struct tdbo_owner *o = c->o;

	if (c->rd.listed)
		return;
	tdbp_mutex_lock(o->rlock);
	c->rd.seen = 0;
	c->rd.expired_at = 0;
	tdbo_list_add(&c->rd.node, &o->readers);
	c->rd.listed = true;
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
	 * by the client, and the owner waits for its sections */
	res->map = t;
	res->map_gen = tdbe_table_map_gen(t->t);
	res->map_extents = tdbe_table_max_extents(t->t);
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
	if (tdb_load_relaxed(&t->dropped) || !t->t)
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
