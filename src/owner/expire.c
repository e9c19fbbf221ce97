/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * expire.c - the sweep: expired records removed without anyone reading
 * them, so a table written once and never read again shrinks back.
 *
 * Readers never see an expired record (the engine treats it as absent
 * from its deadline on: src/core/core.h, "expiry"), so the sweep is
 * about memory and about the log, not about what reads return.  Each
 * removal is one change through the pipeline (change.c, change_one with
 * `expiry`): it takes a version, is logged as a DEL (replay and restore
 * never bring the record back, and a power cut before the DEL is
 * durable leaves a record that is expired anyway), and reaches watchers
 * as a DEL with REASON TDB_REASON_EXPIRED.  The engine's delete takes
 * the record only if it is still expired (TDBE_DEL_EXPIRED), and the
 * walk and the delete hold the table's write lock together, so a key
 * written again meanwhile is never removed.
 *
 * Design and cost.  Each table whose records carry deadlines (the
 * engine's `expiring` count, 0 for a table that never had one: such a
 * table costs the sweep one look at that count) is walked in the
 * cursor order by a cursor of its own (t->sweep), resumed where the last
 * round stopped.  A round (tdbo_expire_run) visits at most `budget`
 * records across the tables, in batches of TDBO_SWEEP_BATCH under one
 * hold of a table's lock, so the time a writer of that table can wait
 * behind the sweep is one batch.  A full pass over a table of n records
 * visits n records whatever share of them expires: the sweep is a
 * scan, not an index of deadlines, so it costs nothing on the write
 * path (no per-record structure to keep up, no memory beyond the
 * cursor) and its work is proportional to the table, paced by the home:
 * the home calls a round every TDBO_SWEEP_PERIOD_MS, and again at once
 * while rounds keep finding expired records (more than a quarter of
 * those visited, Redis's rule), within its CPU share.
 */
#include "internal.h"

/* Records visited under one hold of a table's write lock. */
#define TDBO_SWEEP_BATCH 64u

/* A table with records that may expire (or a pass under way): the
 * first after id after_id (ids grow with creation order), counted;
 * NULL if none. */
static struct tdbo_table *next_expiring(struct tdbo_owner *o,
					uint64_t after_id)
{
	struct tdbo_table *t, *found = NULL;

	tdbp_mutex_lock(o->reg_lock);
	tdbo_list_for_each(t, &o->tables, lnode) {
		struct tdbe_table_stat st;

		if (t->id <= after_id || !t->t || t->dropped)
			continue;
		tdbe_table_stat(t->t, &st);
		if (!st.expiring && !t->sweep)
			continue;
		tdbo_ref_get(&t->refs);
		found = t;
		break;
	}
	tdbp_mutex_unlock(o->reg_lock);
	return found;
}

/* One batch of t under its write lock: up to max records visited, the
 * expired ones removed.  *visited: how many; *end: the walk finished a
 * pass (it starts again from the first record next time). */
/* A round's scratch (off the stack: tdb.ko's is small). */
struct sweep_buf {
	struct tdbe_cursor_rec rec[TDBO_SWEEP_BATCH];
	char why[TDBO_TEXT];
};

static unsigned int sweep_batch(struct tdbo_table *t, struct sweep_buf *b,
				unsigned int max, unsigned int *visited,
				bool *end)
{
	struct tdbe_cursor_rec *rec = b->rec;
	struct tdbo_owner *o = t->o;
	unsigned int i, removed = 0;
	bool removed_in_pass = false;
	int n, err = 0;

	*visited = 0;
	*end = true;
	tdbp_mutex_lock(t->wlock);
	if (t->dropped || !t->t)
		goto out;
	if (!t->sweep) {
		if (!(t->sweep = tdbe_cursor_open(t->t, &err)))
			goto out;
		t->sweep_mark = t->expired;     /* a pass begins */
	}
	n = tdbe_cursor_expired(t->sweep, rec, tdbo_min(max, TDBO_SWEEP_BATCH),
				tdbe_table_now_ms(t->t), visited);
	if (n < 0)
		goto out;
	*end = !*visited;
	if (*end) {
		removed_in_pass = t->expired != t->sweep_mark;
		tdbo_expire_forget(t);
	}  /* a pass is over: the next starts
					 * from the first record */
	for (i = 0; i < (unsigned int)n; i++) {
		struct tdbo_change ch = {
			.del = true, .quiet = true, .expiry = true,
			.key = rec[i].key, .klen = rec[i].klen,
		};
		const char *msg = NULL;
		uint64_t lsn;

		/* a log that cannot take it (a full disk): the record
		 * stays, absent to readers, and the next pass tries again */
		if (tdbo_change_one(t, &ch, true, &lsn, &msg, b->why))
			break;
		removed++;
	}
	t->expired += removed;
	tdbo_add(&o->expired, removed);
out:
	tdbo_feed_flush(t);
	tdbp_mutex_unlock(t->wlock);
	/* the pass is over: what it freed goes back now, not when some
	 * later write of the table (maybe never) fills the engine's batch */
	if (*end && removed_in_pass && t->t)
		tdbe_table_reclaim(t->t);
	return removed;
}

unsigned int tdbo_expire_run(struct tdbo_owner *o, unsigned int budget,
			     bool *again)
{
	unsigned int removed = 0, seen = 0, turns = 0;
	unsigned int ntables = tdb_load_relaxed(&o->ntables);
	struct sweep_buf *b = tdbp_alloc(sizeof(*b));

	*again = false;
	if (!b)
		return 0;               /* the next round, then */
	/* each table at most one turn a round, from where the last ended */
	while (seen < budget && turns <= ntables) {
		struct tdbo_table *t = next_expiring(o, o->sweep_id);
		unsigned int visited;
		bool end;

		turns++;
		if (!t) {
			if (!o->sweep_id)
				break;          /* no table has any */
			o->sweep_id = 0;        /* from the first again */
			continue;
		}
		do {
			removed += sweep_batch(t, b, budget - seen, &visited,
					       &end);
			seen += visited;
			tdbp_cond_resched();
		} while (!end && seen < budget);
		if (end)
			o->sweep_id = t->id;    /* the next table's turn */
		tdbo_table_put(t);
	}
	tdbp_free(b);
	*again = seen && removed * 4 > seen;
	return removed;
}

/* Under t->wlock: t is dropped or freed; its walk ends. */
void tdbo_expire_forget(struct tdbo_table *t)
{
	tdbe_cursor_close(t->sweep);
	t->sweep = NULL;
}
