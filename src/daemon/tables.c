// SPDX-License-Identifier: GPL-2.0-only
/*
 * tables.c - tdbd as the home of the owner (src/owner, shared with
 * tdb.ko): the owner's limits from tdbd.conf, its hooks (the feeds'
 * memfds, max-memory as src/owner/limtable.h defines it, the WAL's log
 * hooks from durable/log.c, STATS figures).  The owner's client of a
 * connection is serving's (serve/client.c, tdbd_owner_client).
 *
 * Invariants:
 *  - d->lim is the owner's struct tdbo_limits for its whole life: the
 *    owner reads each field with tdb_load_relaxed() where it applies, and
 *    tdbd_limits_update() stores new values from a reloaded tdbd.conf,
 *    so a reload applies to the next request and takes nothing back.
 *  - A feed's memory is a sealed memfd (header page, then data), mapped
 *    here writable once; after that F_SEAL_FUTURE_WRITE lets nobody map
 *    it writable, not even through a re-open of /proc/self/fd/N.  A
 *    watcher gets a read-only descriptor of it (tdbd_feed_fd).
 *  - d->mem_tables is the sum of t->mem over tables whose region lives
 *    (a dropped one's until its last reference goes: table_free); t->mem
 *    changes under the table's write lock (mem_note) or with its last
 *    reference (table_free).
 *  - d->mem_feeds is the sum of the sizes of the feeds feed_alloc made
 *    and feed_free has not freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "durable/durable.h"   /* the log and dirty hooks */
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "notify.h"
#include "platform/user.h"      /* tdbp_region_ro_fd */
#include "ring.h"               /* src/ring: tdb_ring_user_ops */
#include "serve/worker.h"       /* TDBD_REQ_BUDGET: big commits */
#include "tdbd.h"
#include "wal.h"

/* --- limits ------------------------------------------------------------- */

#define CFG(d, f) __atomic_load_n(&(d)->cfg.f, __ATOMIC_RELAXED)
#define SET(d, f, v) __atomic_store_n(&(d)->lim.f, (v), __ATOMIC_RELAXED)

void tdbd_limits_update(struct tdbd *d)
{
	SET(d, default_mode, CFG(d, table_mode));
	SET(d, feed_size, CFG(d, feed_size));
	SET(d, max_tables, CFG(d, max_tables));
	SET(d, max_clients, CFG(d, max_clients));
	SET(d, max_clients_per_uid, CFG(d, max_clients_per_uid));
	SET(d, max_tables_per_uid, CFG(d, max_tables_per_uid));
	SET(d, max_watches, CFG(d, max_watches));
	SET(d, max_watches_per_uid, CFG(d, max_watches_per_uid));
	SET(d, max_watches_total, CFG(d, max_watches_total));
	SET(d, max_memory, CFG(d, max_memory));
	SET(d, max_data, tdbd_mem_limit(d));
	SET(d, max_data_per_uid, CFG(d, max_data_per_uid) ?
	    CFG(d, max_data_per_uid) : tdbd_mem_limit(d) / 2);
	SET(d, max_ring_memory, CFG(d, max_ring_memory));
	SET(d, max_ring_memory_per_uid, CFG(d, max_ring_memory_per_uid));
	SET(d, max_txns, CFG(d, max_txns));
	SET(d, max_txn_ops, CFG(d, max_txn_ops));
	SET(d, max_txn_bytes, CFG(d, max_txn_bytes));
	SET(d, max_reserve, CFG(d, max_reserve));
	SET(d, max_reserve_per_uid, CFG(d, max_reserve_per_uid));
	SET(d, max_txn_memory, CFG(d, max_txn_memory));
	SET(d, max_txn_memory_per_uid, CFG(d, max_txn_memory_per_uid));
	SET(d, max_snapshot_bytes, CFG(d, max_snapshot_bytes));
	SET(d, max_snapshot_memory, CFG(d, max_snapshot_memory));
	SET(d, max_snapshot_memory_per_uid,
	    CFG(d, max_snapshot_memory_per_uid));
	SET(d, reader_lease_ms, CFG(d, reader_lease_ms));
	/* big commits go to the committer thread (serve/txn.c) */
	SET(d, defer_ops, TDBD_REQ_BUDGET);
	SET(d, defer_bytes, 1u << 20);
}

/* --- feeds -------------------------------------------------------------- */

/* What a feed's memory is, for the owner's feed cookie. */
struct feed_mem {
	int fd;
	void *map;
	size_t size;
};

static void *feed_alloc(void *arg, size_t size, void **cookie)
{
	struct feed_mem *f = calloc(1, sizeof(*f));
	struct tdbd *d = arg;
	int err;

	if (!f)
		return NULL;
	f->size = size;
	f->fd = memfd_create("tdb-feed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (f->fd < 0)
		goto fail;
	if (ftruncate(f->fd, (off_t)size) < 0)
		goto fail;
	f->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
		      0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		goto fail;
	}
	if (fcntl(f->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
		  F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
		goto fail;
	*cookie = f;
	__atomic_fetch_add(&d->mem_feeds, size, __ATOMIC_RELAXED);
	return f->map;          /* zeroed: a new memfd */
fail:
	err = errno;
	tdbd_log_rl(RL_RINGS, L_WARNING, "cannot make a change feed of %zu "
		    "bytes: %s", size, strerror(err));
	if (f->map)
		munmap(f->map, size);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
	return NULL;
}

static void feed_free(void *arg, void *mem, size_t size, void *cookie)
{
	struct feed_mem *f = cookie;
	struct tdbd *d = arg;

	(void)mem;
	(void)size;
	__atomic_fetch_sub(&d->mem_feeds, f->size, __ATOMIC_RELAXED);
	munmap(f->map, f->size);
	close(f->fd);
	free(f);
}

int tdbd_feed_fd(struct tdbo_feed *feed)
{
	struct feed_mem *f = tdbo_feed_cookie(feed);
	char path[64];
	int fd;

	/* A read-only open of the same memfd: a client given this fd can
	 * map the feed only read-only, so it cannot scribble on it. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int tdbd_table_ro_fd(struct tdbe_table *t)
{
	return tdbp_region_ro_fd(tdbe_table_region(t));
}

/* --- memory (max-memory) ------------------------------------------------ */

#define EXTENT_BYTES (2ULL << 20)       /* core.h: extents of 2 MiB */

static void mem_set(struct tdbd *d, struct tdbo_table *t, uint64_t now)
{
	if (now != t->mem) {            /* unsigned: a shrink wraps right */
		__atomic_fetch_add(&d->mem_tables, now - t->mem,
				   __ATOMIC_RELAXED);
		t->mem = now;
	}
}

/* Under the write lock, after t may have grown (or was dropped).  A
 * dropped table's region lives on while anything holds the table (a
 * watch, a transaction, a scan): counted until table_free, as the
 * owner's TDBO_Q_DATA charge is. */
static void mem_note(void *arg, struct tdbo_table *t)
{
	struct tdbe_table_stat st;
	uint64_t now = 0;

	if (t->t) {                     /* NULL: set aside, holds nothing */
		tdbe_table_stat(t->t, &st);     /* O(1): its header */
		now = (uint64_t)st.extents * EXTENT_BYTES;
	}
	mem_set(arg, t, now);
}

/* Once: count the tables recovery made and filled (before any client,
 * but without mem_note for the records it loaded), in max-memory and in
 * their owners' data charges (TDBO_Q_DATA: recovery charged extent 0
 * only), so a uid over max-data-per-uid before a restart is after it. */
static void mem_prime(struct tdbd *d)
{
	struct tdbo_table **tabs;
	unsigned int n, i;

	if (__atomic_load_n(&d->mem_primed, __ATOMIC_ACQUIRE))
		return;
	tdbo_write_lock(d->o);
	if (!d->mem_primed && !tdbo_tables_snapshot(d->o, &tabs, &n)) {
		for (i = 0; i < n; i++) {
			mem_note(d, tabs[i]);
			tdbo_table_data_note(tabs[i]);
		}
		tdbo_tables_release(tabs, n);
		__atomic_store_n(&d->mem_primed, true, __ATOMIC_RELEASE);
	}
	tdbo_write_unlock(d->o);
}

/* max-memory, as src/owner/limtable.h defines it for both homes: table
 * extents, buffered transactions, snapshots, change feeds and client
 * rings (tdbd has no change log ring; its WAL buffers are not counted). */
uint64_t tdbd_mem_used(struct tdbd *d)
{
	mem_prime(d);
	return __atomic_load_n(&d->mem_tables, __ATOMIC_RELAXED) +
	       tdbo_txn_bytes(d->o) + tdbo_snap_mem(d->o) +
	       __atomic_load_n(&d->mem_feeds, __ATOMIC_RELAXED) +
	       tdbo_ring_mem(d->o);
}

uint64_t tdbd_mem_limit(struct tdbd *d)
{
	uint64_t max = CFG(d, max_memory);

	return max ? max : d->mem_auto;
}

/*
 * Not under the write lock: a few atomic loads per write.  A write
 * admitted just under the limit may take it past by what that one write
 * adds (an extent, a value); the next ones are refused.
 */
static int mem_check(void *arg, const char **msg)
{
	struct tdbd *d = arg;

	if (tdbd_mem_used(d) <= tdbd_mem_limit(d))
		return 0;
	*msg = "tdbd is over max-memory: writes that add data are refused; "
	       "reads and deletes go on";
	return -ENOMEM;
}

/* A table goes (or is set aside): its dirty set and its memory (its
 * engine table is closed already: not looked at). */
static void table_free(void *arg, struct tdbo_table *t)
{
	tdbd_dirty_free(t->ckpt_dirty);
	t->ckpt_dirty = NULL;
	mem_set(arg, t, 0);
}

/* --- STATS -------------------------------------------------------------- */

static void stats(void *arg, struct tdb_proto_counters *k)
{
	struct tdbd *d = arg;

#define LD(x) __atomic_load_n(&d->ctr.x, __ATOMIC_RELAXED)
	k->present |= 0x7fffffc;        /* TDB_CTR_A_TABLES .. WAL_SYNCS */
	k->stuck = LD(stuck);
	k->throttled = LD(throttled);
	k->wal_records = LD(wal_records);
	k->checkpoints = LD(checkpoints);
	k->ckpt_failures = LD(ckpt_failures);
	k->ckpt_lsn = LD(ckpt_lsn);
	k->wal_lsn = wal_appended(d->wal);
	k->wal_durable = wal_durable(d->wal);
	k->wal_syncs = wal_syncs(d->wal);
#undef LD
}

/* --- the owner ------------------------------------------------------------ */

int tdbd_owner_start(struct tdbd *d)
{
	struct tdbo_hooks h = {
		.arg = d,
		.feed_alloc = feed_alloc,
		.feed_free = feed_free,
		.feed_ring_ops = &tdb_ring_user_ops,    /* FUTEX_WAKE readers */
		.log_reserve = tdbd_log_reserve,
		.log_cancel = tdbd_log_cancel,
		.log_begin = tdbd_log_begin,
		.log_op = tdbd_log_op,
		.log_commit = tdbd_log_commit,
		.log_create = tdbd_log_create,
		.log_drop = tdbd_log_drop,
		.dirty = tdbd_dirty_add,
		.table_free = table_free,
		.mem_check = mem_check,
		.mem_note = mem_note,
		.stats = stats,
	};
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	int err = 0;

	/* max-memory 0: three quarters of the machine, as it is at start */
	d->mem_auto = pages > 0 && psize > 0 ?
		      (uint64_t)pages * (uint64_t)psize / 4 * 3 : UINT64_MAX;
	tdbd_limits_update(d);
	d->o = tdbo_owner_new(&d->lim, &h, &err);
	if (!d->o)
		return err ? err : -ENOMEM;
	d->oct = tdbo_owner_counters(d->o);
	return 0;
}

void tdbd_owner_stop(struct tdbd *d)
{
	tdbo_owner_free(d->o);
	d->o = NULL;
	d->oct = NULL;
}
