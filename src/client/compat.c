// SPDX-License-Identifier: MIT
/*
 * compat.c - the calls of TDBCLIENT_1 whose structs grew in TDBCLIENT_1.1
 * (expiry), kept for programs linked against TDBCLIENT_1; and those of
 * TDBCLIENT_1.1 whose structs grew in TDBCLIENT_1.2 (ordered tables:
 * struct tdbc_table_opts and tdbc_table_stat gained `flags`).
 *
 * libtdbclient.so.1 keeps its SONAME: a struct the caller allocates
 * (struct tdbc_table_opts, tdbc_table_stat, tdbc_event, tdbc_stats) got
 * members at its end, so each call that takes one has two versions
 * (libtdbclient.map): name@@TDBCLIENT_1.1, the one new programs link
 * against, with the struct of client.h; and name@TDBCLIENT_1, here, with
 * the struct as TDBCLIENT_1 had it (struct *_1 below), which never reads
 * or writes a byte past it.  A program built before 1.1 keeps running on
 * this library unchanged; one built against it needs 1.1 (the dynamic
 * linker says "version `TDBCLIENT_1.1' not found" on an older library,
 * instead of a struct overrun).  struct tdbc_req and tdbc_cqe did not
 * grow (their new members share a union with INCR's), so tdbc_submit
 * and tdbc_reap have one version; nor does tdbc_table_list, whose
 * callback reads a struct the library allocates (of the new size, whose
 * start is the old one).
 *
 * TDBCLIENT_1.2 follows the same rule: tdbc_table_opts_init,
 * tdbc_table_create and tdbc_table_stat are name@@TDBCLIENT_1.2, and
 * name@TDBCLIENT_1.1 (struct *_1_1 below) never reads or writes `flags`.
 * struct tdbc_table_opts did not change size (flags took the padding
 * after evict), but a 1.1 program's padding is whatever its stack held:
 * its create must not read it as flags.
 *
 * The functions here are named tdbcompat_* so that the version script's
 * tdbc_* does not export them under their own names.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* The structs as TDBCLIENT_1 had them. */
struct tdbc_table_opts_1 {
	uint32_t max_extents, mode, uid, gid;
};
struct tdbc_table_stat_1 {
	char name[TDB_NAME_MAX + 1];
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size;
	uint64_t index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	uint32_t state;
};
/* The structs as TDBCLIENT_1.1 had them. */
struct tdbc_table_opts_1_1 {
	uint32_t max_extents, mode, uid, gid;
	uint64_t default_ttl;
	uint64_t max_bytes, max_records;
	uint32_t evict;
};
struct tdbc_table_stat_1_1 {
	char name[TDB_NAME_MAX + 1];
	uint64_t records, bytes_used, bytes_allocated, bytes_pending;
	uint32_t extents, max_extents;
	uint64_t page_size;
	uint64_t index_nodes, index_buckets;
	uint32_t uid, gid, mode;
	uint32_t state;
	uint64_t default_ttl, expiring, expired;
	uint64_t max_bytes, max_records;
	uint32_t evict;
	uint64_t evicted;
};
struct tdbc_event_1 {
	enum tdbc_event_kind kind;
	uint32_t seq;
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
	uint64_t version;
};
struct tdbc_stats_1 {
	uint32_t tables, clients, watches, txns;
	uint64_t requests, errors, uptime_ms;
	uint64_t accepted, cleanups, txns_aborted, watches_dropped;
	uint32_t rings, throttled, dumps;
	uint64_t rings_freed, stuck, violations;
	uint64_t wal_records, wal_lsn, wal_durable;
	uint64_t checkpoints, ckpt_failures, ckpt_lsn;
	uint32_t tables_aside;
	uint64_t wal_syncs;
	uint64_t readers_expired;
};

/* Each new struct starts with the old one, member for member: the old
 * struct is a prefix, so copying its size is copying those members. */
_Static_assert(offsetof(struct tdbc_table_opts, default_ttl) >=
	       sizeof(struct tdbc_table_opts_1) &&
	       offsetof(struct tdbc_table_opts, gid) ==
	       offsetof(struct tdbc_table_opts_1, gid),
	       "tdbc_table_opts grew at its end");
_Static_assert(offsetof(struct tdbc_table_stat, default_ttl) >=
	       sizeof(struct tdbc_table_stat_1) &&
	       offsetof(struct tdbc_table_stat, state) ==
	       offsetof(struct tdbc_table_stat_1, state),
	       "tdbc_table_stat grew at its end");
_Static_assert(offsetof(struct tdbc_event, deadline) >=
	       sizeof(struct tdbc_event_1) &&
	       offsetof(struct tdbc_event, version) ==
	       offsetof(struct tdbc_event_1, version),
	       "tdbc_event grew at its end");
_Static_assert(offsetof(struct tdbc_stats, expired) >=
	       sizeof(struct tdbc_stats_1) &&
	       offsetof(struct tdbc_stats, readers_expired) ==
	       offsetof(struct tdbc_stats_1, readers_expired),
	       "tdbc_stats grew at its end");

_Static_assert(offsetof(struct tdbc_table_opts, flags) >=
	       offsetof(struct tdbc_table_opts_1_1, evict) + sizeof(uint32_t) &&
	       offsetof(struct tdbc_table_opts, evict) ==
	       offsetof(struct tdbc_table_opts_1_1, evict) &&
	       sizeof(struct tdbc_table_opts) ==
	       sizeof(struct tdbc_table_opts_1_1),
	       "tdbc_table_opts: flags in the padding after evict");
_Static_assert(offsetof(struct tdbc_table_stat, flags) >=
	       sizeof(struct tdbc_table_stat_1_1) &&
	       offsetof(struct tdbc_table_stat, evicted) ==
	       offsetof(struct tdbc_table_stat_1_1, evicted),
	       "tdbc_table_stat grew at its end");

void tdbcompat_table_opts_init_1(struct tdbc_table_opts_1 *opts);
int tdbcompat_table_create_1(struct tdbc *c, const char *name,
			     const struct tdbc_table_opts_1 *opts);
int tdbcompat_table_stat_1(struct tdbc *c, const char *name,
			   struct tdbc_table_stat_1 *st);
int tdbcompat_watch_next_1(struct tdbc_watch *w, struct tdbc_event_1 *ev,
			   int timeout_ms, uint64_t *lost);
int tdbcompat_stats_1(struct tdbc *c, struct tdbc_stats_1 *st);
void tdbcompat_table_opts_init_1_1(struct tdbc_table_opts_1_1 *opts);
int tdbcompat_table_create_1_1(struct tdbc *c, const char *name,
			       const struct tdbc_table_opts_1_1 *opts);
int tdbcompat_table_stat_1_1(struct tdbc *c, const char *name,
			     struct tdbc_table_stat_1_1 *st);

__attribute__((symver("tdbc_table_opts_init@TDBCLIENT_1")))
void tdbcompat_table_opts_init_1(struct tdbc_table_opts_1 *opts)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	memcpy(opts, &o, sizeof(*opts));
}

__attribute__((symver("tdbc_table_create@TDBCLIENT_1")))
int tdbcompat_table_create_1(struct tdbc *c, const char *name,
			     const struct tdbc_table_opts_1 *opts)
{
	struct tdbc_table_opts o;

	if (!opts)
		return tdbc_table_create(c, name, NULL);
	tdbc_table_opts_init(&o);       /* default_ttl 0: none */
	memcpy(&o, opts, sizeof(*opts));
	return tdbc_table_create(c, name, &o);
}

__attribute__((symver("tdbc_table_stat@TDBCLIENT_1")))
int tdbcompat_table_stat_1(struct tdbc *c, const char *name,
			   struct tdbc_table_stat_1 *st)
{
	struct tdbc_table_stat s;
	int err;

	if (!st)
		return tdbc_table_stat(c, name, NULL);  /* its -EINVAL */
	err = tdbc_table_stat(c, name, &s);
	if (!err)
		memcpy(st, &s, sizeof(*st));
	return err;
}

__attribute__((symver("tdbc_watch_next@TDBCLIENT_1")))
int tdbcompat_watch_next_1(struct tdbc_watch *w, struct tdbc_event_1 *ev,
			   int timeout_ms, uint64_t *lost)
{
	struct tdbc_event e;
	int r;

	if (!ev)
		return tdbc_watch_next(w, NULL, timeout_ms, lost);
	r = tdbc_watch_next(w, &e, timeout_ms, lost);
	if (r == 1)
		memcpy(ev, &e, sizeof(*ev));
	return r;
}

__attribute__((symver("tdbc_stats@TDBCLIENT_1")))
int tdbcompat_stats_1(struct tdbc *c, struct tdbc_stats_1 *st)
{
	struct tdbc_stats s;
	int err;

	if (!st)
		return tdbc_stats(c, NULL);     /* its -EINVAL */
	err = tdbc_stats(c, &s);
	if (!err)
		memcpy(st, &s, sizeof(*st));
	return err;
}

/* --- TDBCLIENT_1.1 ------------------------------------------------------- */

__attribute__((symver("tdbc_table_opts_init@TDBCLIENT_1.1")))
void tdbcompat_table_opts_init_1_1(struct tdbc_table_opts_1_1 *opts)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	memcpy(opts, &o, offsetof(struct tdbc_table_opts_1_1, evict) +
	       sizeof(opts->evict));
}

__attribute__((symver("tdbc_table_create@TDBCLIENT_1.1")))
int tdbcompat_table_create_1_1(struct tdbc *c, const char *name,
			       const struct tdbc_table_opts_1_1 *opts)
{
	struct tdbc_table_opts o;

	if (!opts)
		return tdbc_table_create(c, name, NULL);
	tdbc_table_opts_init(&o);       /* flags 0: a hash table */
	memcpy(&o, opts, offsetof(struct tdbc_table_opts_1_1, evict) +
	       sizeof(opts->evict));
	return tdbc_table_create(c, name, &o);
}

__attribute__((symver("tdbc_table_stat@TDBCLIENT_1.1")))
int tdbcompat_table_stat_1_1(struct tdbc *c, const char *name,
			     struct tdbc_table_stat_1_1 *st)
{
	struct tdbc_table_stat s;
	int err;

	if (!st)
		return tdbc_table_stat(c, name, NULL);  /* its -EINVAL */
	err = tdbc_table_stat(c, name, &s);
	if (!err)
		memcpy(st, &s, sizeof(*st));
	return err;
}
