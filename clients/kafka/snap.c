// SPDX-License-Identifier: GPL-2.0-only
/*
 * snap.c - tdb-kafka ship --snapshot: every table the shipper may read,
 * as it is, followed by the stream.
 *
 * A snapshot scan (TDBC_SCAN_SNAPSHOT) cannot tell the LSN it is at
 * (include/tdb/client.h, src/owner/snap.c: it is the table as of the
 * scan's opening, with no LSN attached), so the snapshot is bracketed:
 * S = STATS' wal_lsn (the last record appended) is read before the
 * first scan is opened, and the stream goes on from S + 1.  tdbd applies
 * a change before it appends its record, so every change up to S is in
 * the snapshots; changes after S may be in them or not, and the stream
 * carries them all again.  That is harmless because the stream applied
 * in order from S + 1 overwrites: a put sets the key's whole value and
 * deadline, a delete removes it (deleting nothing is no error), a
 * create of an existing table and a drop of an absent one are no-ops at
 * the applier.  Once the applier has applied the stream past the last
 * LSN written when the last scan was opened, the replica equals the
 * source as of that LSN; before, it may show a later value of a key
 * next to an earlier value of another (not a state the source had).
 *
 * Per table: an event tdb.event=snapshot (the table's attributes, as a
 * create's; the applier drops and creates the table anew, since it may
 * hold keys deleted while the WAL was missed), then its records with
 * tdb.snapshot=S, tdb.lsn=S and no transaction headers.
 */
#include "ship_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct snap_ctx {
	struct shipper *s;
	uint64_t lsn, slot, records;
	int err;
};

static void attrs(rd_kafka_headers_t *h, const struct tdbc_table_stat *st)
{
	kf_hdr_u64(h, "tdb.flags", st->flags);
	kf_hdr_u64(h, "tdb.mode", st->mode);
	kf_hdr_u64(h, "tdb.max_extents", st->max_extents);
	kf_hdr_u64(h, "tdb.default_ttl", st->default_ttl);
	kf_hdr_u64(h, "tdb.max_bytes", st->max_bytes);
	kf_hdr_u64(h, "tdb.max_records", st->max_records);
	kf_hdr_u64(h, "tdb.evict", st->evict);
}

static int snap_table(struct snap_ctx *x, const struct tdbc_table_stat *st)
{
	struct shipper *s = x->s;
	struct tdbc_table *t;
	struct tdbc_scan *sc;
	rd_kafka_headers_t *h;
	const void *k, *v;
	size_t kl, vl;
	uint64_t ver, dl;
	int e;

	if ((e = tdbc_table_open(s->c, st->name, &t)))
		return e == -ENOENT ? 0 : e;    /* dropped meanwhile */
	e = tdbc_scan_open_flags(t, NULL, 0, 0, TDBC_SCAN_SNAPSHOT, &sc);
	if (e) {
		tdbc_table_close(t);
		return e == -ENOENT ? 0 : e;
	}
	h = rd_kafka_headers_new(16);
	kf_hdr_str(h, "tdb.table", st->name);
	kf_hdr_str(h, "tdb.event", "snapshot");
	kf_hdr_u64(h, "tdb.lsn", x->lsn);
	kf_hdr_u64(h, "tdb.txn", x->lsn);
	kf_hdr_u64(h, "tdb.txn_ops", 1);
	kf_hdr_u64(h, "tdb.txn_index", 0);
	kf_hdr_u64(h, "tdb.snapshot", x->lsn);
	attrs(h, st);
	s->ring[x->slot % s->cap].left++;
	e = kf_produce(s, st->name, NULL, 0, NULL, 0, h, x->slot);
	while (!e && (e = tdbc_scan_next_ex(sc, &k, &kl, &v, &vl, &ver,
					    &dl)) == 1) {
		h = rd_kafka_headers_new(8);
		kf_hdr_str(h, "tdb.table", st->name);
		kf_hdr_str(h, "tdb.op", "put");
		kf_hdr_u64(h, "tdb.lsn", x->lsn);
		kf_hdr_u64(h, "tdb.version", ver);
		kf_hdr_u64(h, "tdb.snapshot", x->lsn);
		if (dl)
			kf_hdr_u64(h, "tdb.deadline", dl);
		s->ring[x->slot % s->cap].left++;
		e = kf_produce(s, st->name, k, kl, v, vl, h, x->slot);
		x->records++;
	}
	tdbc_scan_close(sc);
	tdbc_table_close(t);
	if (e < 0 && e != -EINTR)
		kf_log("snapshot of table %s: %s", st->name,
		       tdbc_errmsg(s->c)[0] ? tdbc_errmsg(s->c) :
		       tdbc_strerror(e));
	return e < 0 ? e : 0;
}

/* The tables are listed first: a snapshot scan and a table list on one
 * connection at once are not needed. */
struct snap_list {
	struct tdbc_table_stat *v;
	unsigned int n, cap;
};

static int list_fn(void *arg, const struct tdbc_table_stat *st)
{
	struct snap_list *l = arg;

	if (l->n == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 16;
		struct tdbc_table_stat *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *st;
	return 0;
}

int kf_snapshot(struct shipper *s, uint64_t *lsn)
{
	struct snap_ctx x = { .s = s };
	struct snap_list l = { 0 };
	struct tdbc_stats st;
	int e;

	if ((e = tdbc_stats(s->c, &st))) {
		kf_log("STATS from tdbd: %s", tdbc_strerror(e));
		return e;
	}
	x.lsn = st.wal_lsn;
	if ((e = tdbc_table_list(s->c, list_fn, &l))) {
		kf_log("listing tdbd's tables: %s", tdbc_strerror(e));
		free(l.v);
		return e;
	}
	kf_log("snapshot at LSN %" PRIu64 " of %u tables", x.lsn, l.n);
	/* one slot for the whole snapshot, held open (1) until the end */
	x.slot = kf_pend_push(s, x.lsn, 1);
	for (unsigned int i = 0; i < l.n && !e; i++) {
		int a = kf_tab_allowed(s, l.v[i].name, NULL);

		if (a < 0)
			e = a;
		else if (a)
			e = snap_table(&x, &l.v[i]);
	}
	free(l.v);
	if (e)
		return e;
	s->ring[x.slot % s->cap].left--;
	s->snapshot_lsn = x.lsn;
	*lsn = x.lsn;
	kf_log("snapshot at LSN %" PRIu64 ": %" PRIu64 " records produced; "
	       "the stream goes on from LSN %" PRIu64, x.lsn, x.records,
	       x.lsn + 1);
	return 0;
}
