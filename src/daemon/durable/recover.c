// SPDX-License-Identifier: GPL-2.0-only
/*
 * recover.c - durability's start and stop (durable.h): recovery (the
 * checkpoint loaded, the WAL replayed after it), then the WAL opened
 * and the checkpointer started; at stop the last checkpoint and
 * everything closed.  Kernel mode (no mirror, issue 29): its start loads
 * nothing (start_kernel: the store's LSN, names and version, the WAL
 * after it checked), tdb.ko's records are checked against the tables'
 * names and appended to the WAL (tdbd_durable_apply), and the restore
 * of tables not resident loads a copy that is dropped after
 * (tdbd_durable_mirror_load, _drop).
 *
 * Invariants:
 *  - Recovery = load the checkpoint, replay the WAL after its LSN, then
 *    start a new segment; clients are accepted only after it.  On a full
 *    disk nothing of start-up needs to write: the replay only cuts (a
 *    torn tail), the WAL opens without a segment (wal_open: every change
 *    fails with ENOSPC until the first commit that finds room makes it),
 *    and the checkpoint after recovery fails softly and is retried like
 *    any failed checkpoint.
 *  - A table recovery cannot restore (its region cannot be made, a record
 *    it cannot take) is set aside, never a reason not to start: it stays
 *    in the registry without an engine table (dt->aside), its WAL
 *    records are skipped, and dt->from is the LSN its checkpoint data is
 *    as of.  Checkpoints write only its schema and "aside/<name>" =
 *    from, never its databases, and keep every WAL segment with records
 *    after the smallest such LSN.  At the next start a table with that
 *    mark is loaded and its WAL records after `from` are replayed, also
 *    those at or before the checkpoint's LSN (the "catch-up" range,
 *    where every other record is skipped: the checkpoint has it).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckapply.h"
#include "ckpt.h"
#include "durable_int.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "notify.h"
#include "tdbd.h"
#include "wal.h"

/* --- recovery ----------------------------------------------------------------- */

struct rec_state {
	struct tdbd *d;
	struct tdbo_table *dt;
	uint64_t records, last_report;
	uint64_t ckpt_lsn;      /* records at or before it: catch-up only */
	uint64_t skipped;       /* changes to set-aside tables not applied */
	uint64_t old_version;   /* the version of a record of a table
				 * checkpointed before versions */
	uint64_t max_version;   /* the highest version loaded */
	const char *phase;
	char why[TDB_PROTO_EXTACK_MAX];  /* why a record could not load */
	/* kernel mode: the WAL's records applied to the store too
	 * (ckapply.h), so that it is current when the restore reads it */
	struct ckapply *ca;
	uint64_t ca_now_ms;
};

/* Records a run of the WAL applied to the store commits at most (then
 * the next run begins): LMDB's dirty pages of one transaction. */
#define REPLAY_RUN_MAX 1000000u

static void report(struct rec_state *rs, bool force)
{
	uint64_t now = tdbd_now_ns();

	if (!force && now - rs->last_report < 1000000000ull)
		return;
	rs->last_report = now;
	tdbd_notify("STATUS=recovering: %s, %llu records so far\n"
		    "EXTEND_TIMEOUT_USEC=30000000", rs->phase,
		    (unsigned long long)rs->records);
	tdbd_log(L_INFO, "recovering: %s, %llu records so far", rs->phase,
		 (unsigned long long)rs->records);
}

/* --- setting a table aside (recovery) ---------------------------------- */

static void aside_log(const char *name, const char *why, uint64_t from)
{
	char esc[4 * TDB_PROTO_EXTACK_MAX];

	tdbd_log(L_WARNING, "table %s cannot be restored: %s; it is set "
		 "aside and tdbd starts without it: its checkpoint data and "
		 "its WAL records after LSN %llu are kept untouched, every "
		 "request on it fails with EIO.  Remove the cause (address "
		 "space: RLIMIT_AS/LimitAS=, memory, hugepages) and restart "
		 "tdbd to restore it with all its data, or drop it (tdb drop "
		 "%s) to discard it", ESC(name),
		 tdb_escape(esc, sizeof(esc), why, strlen(why)),
		 (unsigned long long)from, ESC(name));
}

/* A table that could not be made: into the registry set aside. */
/* A table's attributes of expiry and eviction, as created. */
struct tab_attrs {
	uint64_t ttl, max_bytes, max_records;
	uint32_t evict;
};

static void set_attrs(struct tdbo_table *dt, const struct tab_attrs *a)
{
	tdbo_table_set_default_ttl(dt, a->ttl);
	tdbo_table_set_bounds(dt, a->max_bytes, a->max_records, a->evict);
}

static int aside_new(struct tdbd *d, const char *name, uint64_t id,
		     uint32_t max_ext, uint32_t flags, uint32_t uid,
		     uint32_t gid, uint32_t mode, const struct tab_attrs *a,
		     uint64_t from, const char *why)
{
	int e = tdbo_table_add_aside(d->o, name, id, max_ext, flags, uid, gid,
				     mode, from, why);
	struct tdbo_table *dt;

	if (e)
		return e;
	/* its attributes stay in its schema (checkpoints write them) */
	if ((dt = tdbo_table_get(d->o, name))) {
		set_attrs(dt, a);
		tdbo_table_put(dt);
	}
	aside_log(name, why, from);
	return 0;
}

/* A restored table that failed after all. */
static int aside_set(struct tdbd *d, struct tdbo_table *dt, const char *why)
{
	int e = tdbo_table_set_aside(d->o, dt, why);

	if (!e)
		aside_log(dt->name, why, dt->from);
	return e;
}

/* --- the checkpoint ----------------------------------------------------- */

/* A record of the checkpoint, with its version (0: its table was
 * checkpointed before versions; it gets the checkpoint's LSN, and the
 * counter is raised past that: docs/DURABILITY.md, "Versions") and its
 * deadline (0: none; one past by now makes a record no read sees, which
 * the sweep removes with a logged delete). */
static int load_record(void *arg, const void *key, size_t klen,
		       const void *val, size_t vlen, uint64_t version,
		       uint64_t deadline)
{
	struct rec_state *rs = arg;
	struct tdbe_extack ee = { 0 };
	int err;

	if (!version)
		version = rs->old_version;
	if (version > rs->max_version)
		rs->max_version = version;
	err = tdbe_put_ex(rs->dt->t, key, klen, val, vlen, 0, version,
			  deadline, &ee);

	if (err) {
		snprintf(rs->why, sizeof(rs->why), "a record of its checkpoint "
			 "cannot be loaded: %s",
			 ee.msg ? ee.msg : tdbe_strerror(err));
		return err;
	}
	if (!(++rs->records & 0xffff))
		report(rs, false);
	return 0;
}

/* One table of the checkpoint: loaded, or set aside.  < 0 only if even
 * that failed (out of memory). */
static int load_table(struct tdbd *d, struct rec_state *rs,
		      const struct ckpt_table *t, uint64_t from)
{
	struct tdb_proto_extack ext = { 0 };
	char err[512] = "", why[TDB_PROTO_EXTACK_MAX];
	const struct tab_attrs a = { t->default_ttl, t->max_bytes,
				     t->max_records, t->evict };
	bool versioned = false;
	int e;

	/* an ordered table (t->flags) is made ordered: the records below
	 * go into its ordered index too */
	e = tdbo_table_restore_flags(d->o, t->name, t->id, t->max_extents,
				     t->flags, t->uid, t->gid, t->mode,
				     &rs->dt, &ext.msg);
	if (e) {
		snprintf(why, sizeof(why), "its region cannot be made: %s "
			 "(%s)", ext.msg ? ext.msg : "engine", ERRSTR(e));
		return aside_new(d, t->name, t->id, t->max_extents, t->flags,
				 t->uid, t->gid, t->mode, &a, from, why);
	}
	set_attrs(rs->dt, &a);
	rs->dt->from = from;
	rs->why[0] = '\0';
	e = tdbd_ckpt_load_table(d->ckpt, t->name, load_record, rs,
				 &versioned, err, sizeof(err));
	if (e) {
		snprintf(why, sizeof(why), "%s", rs->why[0] ? rs->why :
			 err[0] ? err : ERRSTR(e));
		return aside_set(d, rs->dt, why);
	}
	/* the checkpoint has it; one from before versions is written
	 * whole next time (its versions beside it: ckpt.h) */
	rs->dt->ckpt_full = !versioned;
	rs->dt->catchup = t->aside;
	return 0;
}

/* The checkpoint store's LSN, tables and version counter, or an error
 * logged (its text names tables: escaped). */
static int store_meta(struct tdbd *d, uint64_t *lsn, struct ckpt_table **tabs,
		      unsigned int *n, uint64_t *version)
{
	char err[PATH_MAX + 512], esc[4 * (PATH_MAX + 512)];
	int e;

	*tabs = NULL;
	*n = 0;
	if ((e = tdbd_ckpt_read_meta(d->ckpt, lsn, tabs, n, err,
				     sizeof(err))) ||
	    (e = tdbd_ckpt_read_version(d->ckpt, version, err,
					sizeof(err)))) {
		free(*tabs);
		*tabs = NULL;
		tdbd_log(L_ERR, "%s", tdb_escape(esc, sizeof(esc), err,
					       strlen(err)));
	}
	return e;
}

/* Load every table; *after: where the WAL replay must start (before
 * the checkpoint's LSN if a table was set aside before). */
static int load_checkpoint(struct tdbd *d, uint64_t *lsn, uint64_t *after)
{
	struct durable *u = d->dur;
	struct rec_state rs = { .d = d, .phase = "loading the checkpoint" };
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0, i;
	uint64_t version = 0;
	int e = 0;

	if ((e = store_meta(d, lsn, &tabs, &n, &version)))
		return e;
	rs.old_version = *lsn ? *lsn : 1;
	u->tabs = calloc(n ? n : 1, sizeof(*u->tabs));
	if (!u->tabs) {
		free(tabs);
		return -ENOMEM;
	}
	*after = *lsn;
	for (i = 0; i < n; i++) {
		uint64_t from = tabs[i].aside ? tabs[i].from : *lsn;

		if ((e = load_table(d, &rs, &tabs[i], from)))
			break;
		if (tabs[i].aside) {
			u->must = true;
			if (from < *after)
				*after = from;
		}
		snprintf(u->tabs[i].name, sizeof(u->tabs[i].name), "%s",
			 tabs[i].name);
		u->tabs[i].id = tabs[i].id;
		u->ntabs = i + 1;
	}
	free(tabs);
	/* Every version given before the checkpoint (of a key deleted
	 * since too) is <= its "version"; the records' are <= max. */
	tdbo_version_floor(d->o, version > rs.max_version ? version :
			   rs.max_version);
	if (!e)
		tdbd_log(L_INFO, "checkpoint at LSN %llu: %u table(s), %llu "
			 "records; versions up to %llu",
			 (unsigned long long)*lsn, n,
			 (unsigned long long)rs.records,
			 (unsigned long long)tdbo_version_last(d->o));
	return e;
}

/* --- the WAL ------------------------------------------------------------- */

/* Is record r's change to dt one to apply?  In the catch-up range only
 * for a table restored from aside, after its `from`; a set-aside table
 * never. */
static bool replay_wants(const struct rec_state *rs, const struct tdbo_table *dt,
			 const struct wal_rec *r)
{
	if (dt->aside)
		return false;
	return r->lsn > rs->ckpt_lsn || (dt->catchup && r->lsn > dt->from);
}

/* One op on dt: 0 (applied, skipped, or dt set aside now) or < 0. */
static int replay_op(struct rec_state *rs, const struct wal_rec *r,
		     struct tdbo_table *dt, const struct wal_opv *op,
		     uint64_t version)
{
	struct tdbe_extack ee = { 0 };
	char why[TDB_PROTO_EXTACK_MAX];
	int err;

	if (!replay_wants(rs, dt, r)) {
		rs->skipped += !!dt->aside;
		return 0;
	}
	err = tdbo_replay(dt, op->op == WAL_OP_DEL, op->key, op->klen,
			  op->val, op->vlen, version, op->deadline, &ee.msg);
	if (!err) {
		rs->records++;
		return 0;
	}
	snprintf(why, sizeof(why), "WAL record %llu cannot be applied: %s",
		 (unsigned long long)r->lsn,
		 ee.msg ? ee.msg : tdbe_strerror(err));
	return aside_set(rs->d, dt, why);
}

static int replay_ops(struct rec_state *rs, const struct wal_rec *r)
{
	struct tdbd *d = rs->d;
	struct wal_opv op;
	uint64_t version;
	uint32_t pos = 0;
	int k, err;

	/* an old WAL_OPS record: its LSN (wal.h, "Files") */
	if ((k = wal_ops_version(r, &version)))
		goto bad;
	while ((k = wal_next_op(r, &pos, &op)) > 0) {
		struct tdbo_table *dt = tdbo_table_get(d->o, op.name);

		if (!dt && r->lsn <= rs->ckpt_lsn)
			continue;       /* catch-up: dropped since */
		if (!dt) {
			tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu "
				 "changes table %s, which does not exist",
				 r->file, (unsigned long long)r->off,
				 (unsigned long long)r->lsn, ESC(op.name));
			return -EUCLEAN;
		}
		err = replay_op(rs, r, dt, &op, version);
		tdbo_table_put(dt);
		if (err)
			return err;
	}
bad:
	if (k < 0)
		tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu is "
			 "malformed inside (its CRC is right: a bug?)",
			 r->file, (unsigned long long)r->off,
			 (unsigned long long)r->lsn);
	return k;
}

/* WAL_CREATE after the checkpoint: a table that cannot be made is set
 * aside with all of its changes in the WAL (from the record before). */
static int replay_create(struct rec_state *rs, const struct wal_rec *r,
			 struct tdb_proto_extack *ext)
{
	struct tdbd *d = rs->d;
	struct tdbo_table *dt = NULL;
	struct wal_create c;
	struct tab_attrs a;
	char why[TDB_PROTO_EXTACK_MAX];
	int err;

	if ((err = wal_get_create(r, &c)))
		return err;
	a = (struct tab_attrs){ c.default_ttl, c.max_bytes, c.max_records,
				c.evict };
	err = tdbo_table_restore_flags(d->o, c.name, c.id, c.max_extents,
				       c.flags, c.uid, c.gid, c.mode, &dt,
				       &ext->msg);
	if (!err) {
		set_attrs(dt, &a);
		dt->from = r->lsn - 1;
		return 0;
	}
	if (err == -EEXIST)
		return err;
	snprintf(why, sizeof(why), "its region cannot be made: %s (%s)",
		 ext->msg ? ext->msg : "engine", ERRSTR(err));
	ext->msg = NULL;
	return aside_new(d, c.name, c.id, c.max_extents, c.flags, c.uid,
			 c.gid, c.mode, &a, r->lsn - 1, why);
}

/* Kernel mode: r into the store too (ckapply), a commit every
 * REPLAY_RUN_MAX records or checkpoint-run-size of changes.  A record the store cannot take stops the
 * start: the store is damaged, or the WAL is not its continuation. */
static int replay_store(struct rec_state *rs, const struct wal_rec *r)
{
	char err[512], esc[4 * 512];
	int e = tdbd_ckapply_rec(rs->ca, r);

	if (e < 0) {
		snprintf(err, sizeof(err), "%s", tdbd_ckapply_error(rs->ca));
		goto fail;
	}
	/* a commit every REPLAY_RUN_MAX records or checkpoint-run-size of
	 * gathered changes, as a checkpoint's runs: one run's dirty pages
	 * are what LMDB holds (and keeps for the next) */
	if (tdbd_ckapply_count(rs->ca) < REPLAY_RUN_MAX &&
	    tdbd_ckapply_gathered(rs->ca) < rs->d->cfg.checkpoint_run_size)
		return 0;
	e = tdbd_ckapply_commit(rs->ca, err, sizeof(err));
	rs->ca = NULL;
	if (!e)
		e = tdbd_ckapply_begin(rs->d->ckpt, rs->ca_now_ms,
				       rs->d->cfg.checkpoint_run_size, &rs->ca,
				       err, sizeof(err));
	if (!e)
		return 0;
fail:
	tdbd_log(L_ERR, "kernel mode: the WAL applied to the checkpoint "
		 "store: %s", tdb_escape(esc, sizeof(esc), err, strlen(err)));
	return e;
}

static int replay_rec(void *arg, const struct wal_rec *r)
{
	struct rec_state *rs = arg;
	struct tdbd *d = rs->d;
	struct tdb_proto_extack ext = { 0 };
	char name[65];
	int err;

	report(rs, false);
	if (wal_is_ops(r))
		return replay_ops(rs, r);
	/* catch-up: the checkpoint has every create and drop up to its
	 * LSN (a table set aside was never dropped since its `from`) */
	if (r->lsn <= rs->ckpt_lsn &&
	    (r->type == WAL_CREATE || r->type == WAL_DROP))
		return 0;
	switch (r->type) {
	case WAL_CREATE:
		err = replay_create(rs, r, &ext);
		break;
	case WAL_DROP: {
		struct tdbo_table *dt;

		if ((err = wal_get_drop(r, name)))
			return err;
		if (!(dt = tdbo_table_get(d->o, name))) {
			err = -ENOENT;
			break;
		}
		err = tdbo_table_drop_replay(d->o, dt, &ext.msg);
		tdbo_table_put(dt);
		break;
	}
	default:
		return -EUCLEAN;
	}
	if (err)
		tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu: %s",
			 r->file, (unsigned long long)r->off,
			 (unsigned long long)r->lsn,
			 ext.msg ? ext.msg : strerror(-err));
	return err;
}

/* --- kernel mode: the names of the tables (no mirror) ------------------
 * u->names: the tables as of the WAL's last record, sorted (strcmp).
 * Every record the follower takes, and every one a start finds in the
 * WAL after the store's LSN, is checked against them as the checkpoint
 * will apply it (ckapply.c): an op on a table not there, a create of
 * one there, a drop of one not there could never be checkpointed, so
 * such a record stops tdbd before it is in the WAL. */

static int names_at(const struct durable *u, const char *name, bool *found)
{
	unsigned int lo = 0, hi = u->nnames;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		int c = strcmp(u->names[mid], name);

		if (!c) {
			*found = true;
			return (int)mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return (int)lo;
}

static bool names_has(const struct durable *u, const char *name)
{
	bool f;

	names_at(u, name, &f);
	return f;
}

/* Room for one more name (before a create is logged: its insertion
 * then cannot fail). */
static int names_reserve(struct durable *u)
{
	unsigned int cap;
	char (*v)[TDBE_NAME_MAX + 1];

	if (u->nnames < u->capnames)
		return 0;
	cap = u->capnames ? u->capnames * 2 : 16;
	if (!(v = realloc(u->names, cap * sizeof(*v))))
		return -ENOMEM;
	u->names = v;
	u->capnames = cap;
	return 0;
}

static void names_add(struct durable *u, const char *name)
{
	bool f;
	int i = names_at(u, name, &f);

	if (f || u->nnames == u->capnames)
		return;         /* names_reserve and the check come first */
	memmove(&u->names[i + 1], &u->names[i],
		(u->nnames - (unsigned int)i) * sizeof(u->names[0]));
	snprintf(u->names[i], sizeof(u->names[0]), "%s", name);
	__atomic_store_n(&u->nnames, u->nnames + 1, __ATOMIC_RELAXED);
}

static void names_del(struct durable *u, const char *name)
{
	bool f;
	int i = names_at(u, name, &f);

	if (!f)
		return;
	memmove(&u->names[i], &u->names[i + 1],
		(u->nnames - (unsigned int)i - 1) * sizeof(u->names[0]));
	__atomic_store_n(&u->nnames, u->nnames - 1, __ATOMIC_RELAXED);
}

/* Can r follow the records before it (the tables in u->names)?  0, or
 * -EUCLEAN (-ENOMEM) with err naming the table.  Its version (or LSN)
 * raises u->k_version. */
static int k_check(struct durable *u, const struct wal_rec *r, char *err,
		   size_t errlen)
{
	struct wal_create c;
	struct wal_opv op;
	char name[TDBE_NAME_MAX + 1];
	uint64_t version;
	uint32_t pos = 0;
	int k;

	if (r->lsn > u->k_version)
		u->k_version = r->lsn;
	if (wal_is_ops(r)) {
		if (wal_ops_version(r, &version))
			goto bad;
		if (version > u->k_version)
			u->k_version = version;
		while ((k = wal_next_op(r, &pos, &op)) > 0)
			if (!names_has(u, op.name)) {
				snprintf(err, errlen, "it changes table %s, "
					 "which does not exist (no create of "
					 "it since the checkpoint, or a drop)",
					 op.name);
				return -EUCLEAN;
			}
		if (k < 0)
			goto bad;
		return 0;
	}
	switch (r->type) {
	case WAL_CREATE:
		if (wal_get_create(r, &c))
			goto bad;
		if (names_has(u, c.name)) {
			snprintf(err, errlen, "it creates table %s, which "
				 "exists", c.name);
			return -EUCLEAN;
		}
		if (names_reserve(u)) {
			snprintf(err, errlen, "out of memory for the name of "
				 "table %s (%u tables)", c.name, u->nnames);
			return -ENOMEM;
		}
		return 0;
	case WAL_DROP:
		if (wal_get_drop(r, name))
			goto bad;
		if (!names_has(u, name)) {
			snprintf(err, errlen, "it drops table %s, which does "
				 "not exist", name);
			return -EUCLEAN;
		}
		return 0;
	default:
		snprintf(err, errlen, "unknown record type %u",
			 (unsigned int)r->type);
		return -EUCLEAN;
	}
bad:
	snprintf(err, errlen, "malformed inside (its CRC is right: a bug?)");
	return -EUCLEAN;
}

/* r (checked) is in the WAL: its create or drop changes the names. */
static void k_note(struct durable *u, const struct wal_rec *r)
{
	struct wal_create c;
	char name[TDBE_NAME_MAX + 1];

	if (wal_is_ops(r))
		return;
	if (r->type == WAL_CREATE && !wal_get_create(r, &c))
		names_add(u, c.name);
	else if (r->type == WAL_DROP && !wal_get_drop(r, name))
		names_del(u, name);
}

/* A record appended by the follower must be the WAL's next: else
 * -EPROTO, err naming both LSNs. */
static int next_lsn(struct tdbd *d, const struct wal_rec *r, char *err,
		    size_t errlen)
{
	uint64_t next = wal_appended(d->wal) + 1;

	if (r->lsn == next)
		return 0;
	snprintf(err, errlen, "record LSN %llu is not the WAL's next LSN %llu",
		 (unsigned long long)r->lsn, (unsigned long long)next);
	return -EPROTO;
}

/* Kernel mode: a record of tdb.ko's log, checked, into the WAL (no
 * mirror: the checkpoint applies it to the store from the WAL). */
int tdbd_durable_apply(struct tdbd *d, const void *rec, size_t len,
		       const struct wal_rec *r, char *err, size_t errlen)
{
	struct durable *u = d->dur;
	char why[512];
	int e;

	if ((e = next_lsn(d, r, err, errlen)))
		return e;
	if ((e = k_check(u, r, why, sizeof(why)))) {
		snprintf(err, errlen, "it could never be checkpointed: %s",
			 why);
		return e;
	}
	if (u->apply_hook)
		u->apply_hook(d);
	if ((e = wal_append_rec(d->wal, rec, len, err, errlen)))
		return e;
	k_note(u, r);
	dur_count_record(d);
	return 0;
}

int tdbd_durable_test_replay(struct tdbd *d, const void *rec, size_t len,
			     const struct wal_rec *r, char *err,
			     size_t errlen)
{
	struct rec_state rs = { .d = d, .phase = "a test's record",
				.last_report = tdbd_now_ns() };
	int e;

	if ((e = next_lsn(d, r, err, errlen)))
		return e;
	if ((e = replay_rec(&rs, r))) {
		snprintf(err, errlen, "it cannot be applied: %s", ERRSTR(e));
		return e;
	}
	if ((e = wal_append_rec(d->wal, rec, len, err, errlen)))
		return e;
	dur_count_record(d);
	return 0;
}

unsigned int tdbd_durable_table_count(struct tdbd *d)
{
	return d->dur ? __atomic_load_n(&d->dur->nnames, __ATOMIC_RELAXED) :
			0;
}

void tdbd_durable_test_apply_hook(struct tdbd *d, void (*fn)(struct tdbd *))
{
	d->dur->apply_hook = fn;
}

static void replay_note(void *arg, const char *msg)
{
	(void)arg;
	tdbd_log(L_WARNING, "WAL: %s", msg);
}

static int mkdir_if(const char *path)
{
	if (mkdir(path, 0750) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Kernel mode: the start's scan of the WAL applies it to the store too
 * (ckapply.h), so that the restore reads the tables from the store
 * (krestore.c) as of the WAL's last record.  TDBD_KERNEL_RESTORE_FROM=
 * mirror restores from a copy loaded into tdbd instead (for measuring
 * the two; tdbd_durable_mirror_load).
 */
static int store_begin(struct tdbd *d, struct rec_state *rs, char *err,
		       size_t errlen)
{
	const char *from = getenv("TDBD_KERNEL_RESTORE_FROM");
	int e;

	d->dur->store_current = false;
	if (from && !strcmp(from, "mirror"))
		return 0;
	rs->ca_now_ms = tdbp_realtime_ms();
	e = tdbd_ckapply_begin(d->ckpt, rs->ca_now_ms,
			       d->cfg.checkpoint_run_size, &rs->ca, err, errlen);
	if (e)
		tdbd_log(L_ERR, "kernel mode: the checkpoint store: %s", err);
	return e;
}

/* The store's last run committed: it is at the WAL's last LSN, and so
 * is the checkpointer's next start (u->ckpt_lsn): its next checkpoint
 * applies what the follower appends after it. */
static int store_commit(struct tdbd *d, struct rec_state *rs, char *err,
			size_t errlen)
{
	struct durable *u = d->dur;
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0;
	uint64_t lsn = 0, applied = tdbd_ckapply_count(rs->ca);
	int e;

	e = tdbd_ckapply_commit(rs->ca, err, errlen);
	rs->ca = NULL;
	if (!e)
		e = tdbd_ckpt_read_meta(d->ckpt, &lsn, &tabs, &n, err, errlen);
	if (e) {
		tdbd_log(L_ERR, "kernel mode: the WAL applied to the "
			 "checkpoint store: %s", err);
		return e;
	}
	free(tabs);    /* kernel mode tracks names (k_note), not these */
	u->store_current = true;
	u->ckpt_lsn = lsn;
	__atomic_store_n(&d->ctr.ckpt_lsn, lsn, __ATOMIC_RELAXED);
	if (applied)
		tdbd_log(L_INFO, "kernel mode: the WAL applied to the "
			 "checkpoint store: now at LSN %llu, %u table(s)",
			 (unsigned long long)lsn, n);
	return 0;
}

bool tdbd_durable_store_current(struct tdbd *d)
{
	return d->dur && d->dur->store_current;
}

/* Kernel mode's start: a record of the WAL after the store's LSN. */
static int k_scan_rec(void *arg, const struct wal_rec *r)
{
	struct rec_state *rs = arg;
	struct durable *u = rs->d->dur;
	char why[512];
	int e;

	report(rs, false);
	if (r->lsn <= rs->ckpt_lsn)
		return 0;       /* the store has it */
	if ((e = k_check(u, r, why, sizeof(why)))) {
		tdbd_log(L_ERR, "WAL %s: offset %llu: record %llu cannot be "
			 "checkpointed: %s", r->file,
			 (unsigned long long)r->off,
			 (unsigned long long)r->lsn, why);
		return e;
	}
	k_note(u, r);
	rs->records++;
	return rs->ca ? replay_store(rs, r) : 0;
}

/*
 * Kernel mode (no mirror): nothing is loaded.  The store's LSN S, its
 * tables' names and its version are read; the WAL after S is scanned
 * (wal_replay: it cuts a torn tail before anything appends), each
 * record checked as the follower checks them (k_check), its creates
 * and drops tracked; the version floor is past the store's version and
 * every version and LSN in the WAL.  The checkpointer starts later
 * (tdbd_durable_kernel_ready), once tdb.ko has its tables.
 */
static int start_kernel(struct tdbd *d, struct wal_opts *wo)
{
	struct durable *u = d->dur;
	struct rec_state rs = { .d = d, .phase = "scanning the WAL" };
	struct wal_replay_opts ro = { .fn = k_scan_rec, .arg = &rs,
		.note = replay_note,
		.truncate_damage = d->cfg.wal_truncate_damaged };
	struct wal_replay_result res;
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0, i;
	uint64_t lsn = 0, version = 0, t0 = tdbd_now_ns();
	char err[PATH_MAX + 512];
	int e;

	u->kernel = true;
	if ((e = store_meta(d, &lsn, &tabs, &n, &version)))
		return e;
	for (i = 0; i < n && !e; i++)
		if (!(e = names_reserve(u)))
			names_add(u, tabs[i].name);
	free(tabs);
	if (e) {
		tdbd_log(L_ERR, "out of memory for the names of %u tables", n);
		return e;
	}
	u->ckpt_lsn = lsn;
	d->ctr.ckpt_lsn = lsn;
	u->k_version = version > lsn ? version : lsn;
	tdbd_log(L_INFO, "checkpoint store at LSN %llu: %u table(s); "
		 "versions up to %llu (kernel mode: nothing is loaded)",
		 (unsigned long long)lsn, n, (unsigned long long)version);
	rs.ckpt_lsn = lsn;
	ro.after = lsn;
	rs.last_report = tdbd_now_ns();
	if ((e = store_begin(d, &rs, err, sizeof(err))))
		return e;
	if ((e = wal_replay(u->wal_dir, &ro, &res, err, sizeof(err)))) {
		tdbd_ckapply_abort(rs.ca);
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (rs.ca && (e = store_commit(d, &rs, err, sizeof(err))))
		return e;
	malloc_trim(0);         /* the runs' memory, as after a checkpoint */
	if (res.last_lsn < lsn)
		res.last_lsn = lsn;
	if (res.last_lsn > u->k_version)
		u->k_version = res.last_lsn;
	tdbd_log(L_INFO, "WAL: %llu record(s) after LSN %llu checked in %llu "
		 "ms (%u segment(s)); now at LSN %llu, %u table(s), versions "
		 "up to %llu", (unsigned long long)rs.records,
		 (unsigned long long)lsn,
		 (unsigned long long)((tdbd_now_ns() - t0) / 1000000),
		 res.segments, (unsigned long long)res.last_lsn, u->nnames,
		 (unsigned long long)u->k_version);
	/* what a restore into tdb.ko gives as its version counter */
	tdbo_version_floor(d->o, u->k_version);
	if ((e = wal_open(u->wal_dir, res.last_lsn + 1, wo, &d->wal, err,
			  sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (!wal_has_segment(d->wal))
		tdbd_log(L_WARNING, "%s (free space on that filesystem)",
			 err);
	u->k_after_recovery = res.last_lsn > lsn;
	return 0;
}

int tdbd_durable_kernel_ready(struct tdbd *d)
{
	return dur_checkpointer_start(d, d->dur->k_after_recovery);
}

/*
 * Kernel mode, tables not resident (interim, until the restore streams
 * the store: docs/KERNEL.md): the store and the WAL after it loaded
 * into tdbd's own owner for krestore.c, read back from the live WAL
 * (wal_read_range: start_kernel cut any torn tail) up to its last
 * record.  tdbd_durable_mirror_drop frees them once restored.
 */
int tdbd_durable_mirror_load(struct tdbd *d)
{
	struct durable *u = d->dur;
	struct rec_state rs = { .d = d, .phase = "loading the WAL" };
	uint64_t lsn = 0, after = 0;
	char err[PATH_MAX + 512];
	int e;

	report(&(struct rec_state){ .phase = "loading the checkpoint" }, true);
	if ((e = load_checkpoint(d, &lsn, &after)))
		return e;
	free(u->tabs);          /* a daemon-mode checkpoint's; not used */
	u->tabs = NULL;
	u->ntabs = 0;
	u->must = false;
	rs.ckpt_lsn = lsn;
	rs.last_report = tdbd_now_ns();
	if ((e = wal_read_range(u->wal_dir, after, wal_appended(d->wal),
				replay_rec, &rs, err, sizeof(err)))) {
		tdbd_log(L_ERR, "loading the WAL after LSN %llu for the "
			 "restore: %s", (unsigned long long)after,
			 err[0] ? err : ERRSTR(e));
		return e;
	}
	tdbo_version_floor(d->o, u->k_version);
	return 0;
}

void tdbd_durable_mirror_drop(struct tdbd *d)
{
	struct tdbo_table **tabs = NULL;
	unsigned int n = 0, i;
	const char *msg = NULL;

	if (tdbo_tables_snapshot(d->o, &tabs, &n))
		return;
	for (i = 0; i < n; i++) {
		/* drop_replay puts the registry's reference; the
		 * snapshot's is ours */
		if (tdbo_table_drop_replay(d->o, tabs[i], &msg))
			tdbd_log(L_WARNING, "kernel mode: table %s stays in "
				 "tdbd's memory after the restore: %s",
				 ESC(tabs[i]->name), msg ? msg : "");
	}
	tdbo_tables_release(tabs, n);
	malloc_trim(0);         /* the heap they grew goes back too */
}

int tdbd_durable_start(struct tdbd *d, tdbd_durable_hook *on_durable)
{
	struct durable *u = dur_new(d->cfg.data_dir);
	struct rec_state rs = { .d = d, .phase = "replaying the WAL" };
	unsigned int naside;
	struct wal_replay_opts ro = { .fn = replay_rec, .arg = &rs,
		.note = replay_note,
		.truncate_damage = d->cfg.wal_truncate_damaged };
	struct wal_replay_result res;
	struct wal_opts wo = { .segment_size = d->cfg.wal_segment_size,
		.sync = (enum wal_sync)d->cfg.sync,
		.batch_ms = d->cfg.batch_ms, .on_durable = on_durable,
		.arg = d };
	uint64_t t0 = tdbd_now_ns(), lsn = 0;
	char err[PATH_MAX + 512];
	int e;

	if (!u)
		return -ENOMEM;
	d->dur = u;
	if ((e = mkdir_if(u->wal_dir))) {
		tdbd_log(L_ERR, "WAL directory %s: %s", u->wal_dir,
			 strerror(-e));
		return e;
	}
	if ((e = tdbd_ckpt_open(d->cfg.data_dir, &d->ckpt, err,
				sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (d->cfg.backend == TDBD_BACKEND_KERNEL)
		return start_kernel(d, &wo);
	report(&(struct rec_state){ .phase = "loading the checkpoint" }, true);
	if ((e = load_checkpoint(d, &lsn, &ro.after)))
		return e;
	u->ckpt_lsn = lsn;
	d->ctr.ckpt_lsn = lsn;
	rs.ckpt_lsn = lsn;
	rs.last_report = tdbd_now_ns();
	if ((e = wal_replay(u->wal_dir, &ro, &res, err, sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (res.records)
		tdbd_log(L_INFO, "WAL: replayed %llu record(s) (%llu "
			 "change(s)) after LSN %llu from %u segment(s) in %llu "
			 "ms; now at LSN %llu",
			 (unsigned long long)res.records,
			 (unsigned long long)rs.records,
			 (unsigned long long)ro.after, res.segments,
			 (unsigned long long)((tdbd_now_ns() - t0) / 1000000),
			 (unsigned long long)res.last_lsn);
	if ((naside = tdbo_table_count_aside(d->o)))
		tdbd_log(L_WARNING, "recovery: %u table(s) set aside (see "
			 "above), %llu change(s) to them in the WAL not "
			 "applied; tdbd starts without them", naside,
			 (unsigned long long)rs.skipped);
	/* the catch-up range may have been all there was */
	if (res.last_lsn < lsn)
		res.last_lsn = lsn;
	/* Replay raised the version counter past every version it gave
	 * back; an old WAL_OPS record's version is its LSN (wal.h), so
	 * every version given from now on is above the log's LSNs too. */
	tdbo_version_floor(d->o, res.last_lsn);
	if ((e = wal_open(u->wal_dir, res.last_lsn + 1, &wo, &d->wal, err,
			  sizeof(err)))) {
		tdbd_log(L_ERR, "%s", err);
		return e;
	}
	if (!wal_has_segment(d->wal))
		tdbd_log(L_WARNING, "%s (tables are loaded and readable; "
			 "free space on that filesystem)", err);
	return dur_checkpointer_start(d, res.records > 0);
}

void tdbd_durable_stop(struct tdbd *d)
{
	struct durable *u = d->dur;

	if (!u)
		return;
	dur_checkpointer_stop(d);
	if (d->wal && d->ckpt && !wal_failed(d->wal))
		dur_last_checkpoint(d);
	wal_close(d->wal);
	d->wal = NULL;
	tdbd_ckpt_close(d->ckpt);
	d->ckpt = NULL;
	dur_free(u);
	d->dur = NULL;
}
