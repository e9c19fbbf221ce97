// SPDX-License-Identifier: GPL-2.0-only
/*
 * log.c - every change into the WAL (durable.h): the owner's log hooks
 * (struct tdbo_hooks: log_reserve, log_cancel, log_begin, log_op,
 * log_commit, log_create, log_drop; src/owner/change.c calls them) and
 * the worker's write at the end of its round (tdbd_log_write).
 *
 * Invariants:
 *  - Every change reserves its record's room in the WAL before it
 *    applies and appends the record after, under the changed tables'
 *    locks, so each table's records are in the order its changes
 *    applied; logging cannot fail once the room is reserved.
 *  - Every worker round ends with one wal_write of what was appended
 *    (tdbd_log_write) before its answers go out.
 *  - A record the WAL could not take (the log failed) gets the LSN
 *    UINT64_MAX: no answer waiting for it is sent as a success.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "durable_int.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "notify.h"
#include "tdbd.h"
#include "wal.h"

void dur_count_record(struct tdbd *d)
{
	__atomic_fetch_add(&d->ctr.wal_records, 1, __ATOMIC_RELAXED);
}

static size_t rec_size(const struct tdbo_log_size *sz)
{
	enum wal_type type = sz->kind == TDBO_LOG_CREATE ? WAL_CREATE :
			     sz->kind == TDBO_LOG_DROP ? WAL_DROP : WAL_OPS_V;

	/* the most: sz does not say which puts carry a deadline */
	return wal_rec_size_max(type, sz->nops, sz->bytes);
}

/* Room for a record, before its change applies; and a line in the log
 * when the first reservation after a start on a full disk could make
 * the WAL's segment (changes work again). */
int tdbd_log_reserve(void *arg, const struct tdbo_log_size *sz,
		     const char **msg)
{
	struct tdbd *d = arg;
	bool had = wal_has_segment(d->wal);
	int err = wal_reserve(d->wal, rec_size(sz), msg);

	if (!had && !err)
		tdbd_log(L_NOTICE, "WAL %s/wal: there is room again: a "
			 "segment is started, changes are accepted",
			 d->cfg.data_dir);
	return err;
}

void tdbd_log_cancel(void *arg, const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_unreserve(d->wal, rec_size(sz));
}

/* The record of a change that applied, under its tables' locks: a copy
 * into the WAL's buffer, written by the worker's round (tdbd_log_write)
 * before the answer goes out.  A WAL_OPS_V record: every op of it has
 * the write's version, which replay gives the keys back, and a put its
 * record's deadline (WAL_OP_PUT_DL), if it has one. */
void tdbd_log_begin(void *arg, uint64_t version)
{
	struct tdbd *d = arg;

	wal_begin_ops(d->wal, version);
}

void tdbd_log_op(void *arg, const struct tdbo_table *t, bool del,
		 const void *key, size_t klen, const void *val, size_t vlen,
		 uint64_t deadline)
{
	struct tdbd *d = arg;

	wal_add_op_dl(d->wal, del ? WAL_OP_DEL : WAL_OP_PUT, t->name, key,
		      (uint32_t)klen, del ? NULL : val,
		      del ? 0 : (uint32_t)vlen, del ? 0 : deadline);
}

/* wal_commit; a record it could not take (it failed the log, which the
 * held answers then report: ../durable.c) gets an LSN no answer waits
 * out. */
static uint64_t commit(struct tdbd *d, const struct tdbo_log_size *sz)
{
	uint64_t lsn;

	if (wal_commit(d->wal, rec_size(sz), &lsn)) {
		tdbd_log_rl(RL_WAL, L_ERR, "WAL: a change that applied could "
			    "not be logged (%s); tdbd needs a restart",
			    strerror(-wal_failed(d->wal)));
		return UINT64_MAX;
	}
	dur_count_record(d);
	return lsn;
}

uint64_t tdbd_log_commit(void *arg, const struct tdbo_log_size *sz)
{
	return commit(arg, sz);
}

uint64_t tdbd_log_create(void *arg, const struct tdbo_table *t,
			 const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_begin(d->wal, WAL_CREATE);
	wal_add_create_ex(d->wal, t->id, t->name, t->uid, t->gid, t->mode,
			  t->max_extents, d->cfg.sync, t->default_ttl,
			  t->max_bytes, t->max_records, t->evict, t->tflags);
	return commit(d, sz);
}

uint64_t tdbd_log_drop(void *arg, const struct tdbo_table *t,
		       const struct tdbo_log_size *sz)
{
	struct tdbd *d = arg;

	wal_begin(d->wal, WAL_DROP);
	wal_add_drop(d->wal, t->name);
	return commit(d, sz);
}

/* A worker's round is over: write what it (and anyone) appended, before
 * its answers go out. */
void tdbd_log_write(struct tdbd *d)
{
	if (d->wal)
		wal_write(d->wal);
}
