/*
 * tables.c - the registry of tables: each engine table with its owner,
 * mode and change feed, looked up by name, and the access check; the
 * snapshots of snapshot scans (tdbd.h, "snapshots").
 *
 * Invariants:
 *  - A struct dtable lives while it has references; the registry holds
 *    one from create to drop.  Lookups take a reference under the read
 *    lock; create and drop change the hash under the write lock, and only
 *    while the caller holds d->wlock (so they are also ordered with every
 *    data change).
 *  - reg_gen changes whenever the set of names changes, so a client's
 *    cached dtable is good while reg_gen is what it was.
 *  - A table's feed exists while anyone watches it: made at the first
 *    WATCH, retired when the last watch ends (or with the table), so an
 *    unwatched feed holds no memory and a descriptor passed before can
 *    never see a later change (a new WATCH gets a new feed).  Only the
 *    holder of d->wlock writes it, so it has one producer.
 *  - A table set aside (dt->aside) has no engine table (dt->t NULL): it
 *    was made so by recovery, before any client came, and no request
 *    reaches it but a DROP (exec.c refuses the others with dt->aside).
 *  - A snapshot is on its table's list (dt->snaps, under wlock) from its
 *    scan's start to its end or the table's drop.  Its map is changed
 *    under its own mutex, by writers (holding wlock too) and by its scan;
 *    entries are freed only with the snapshot, so the pre-image pointers
 *    the scan hands out stay valid without the mutex.  A pre-image is
 *    shared by the snapshots that need it (refcounted, atomics: they end
 *    in different workers) and freed with its last entry.
 *  - A table is charged to its owner (quota.h) from create to drop
 *    (Q_TABLES) and, for the address space its region reserves, until
 *    the engine table is closed (Q_RESERVE, dt->reserve).  Creation
 *    charges whatever the limits say (recovery restores what was there);
 *    a client's create asks tdbd_table_quota_check first, under the same
 *    wlock, so the check and the charge cannot be split by another.
 *  - Snapshot memory is charged and uncharged only through snap_charge
 *    and snap_uncharge; d->snap_mem is the sum of what they hold.
 *  - d->mem_tables is the sum of dt->mem over tables not dropped; dt->mem
 *    changes under wlock only (tdbd_mem_note, drop).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "tdbd.h"

static unsigned int name_hash(const char *s)
{
	unsigned int h = 2166136261u;   /* FNV-1a: names are short */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

bool tdbd_may(const struct creds *cr, const struct dtable *dt,
	      unsigned int want)
{
	unsigned int bits, i;

	if (cr->uid == 0)
		return true;
	if (cr->uid == dt->uid) {
		bits = dt->mode >> 6;
	} else {
		bool member = cr->gid == dt->gid;

		for (i = 0; !member && i < cr->ngroups; i++)
			member = cr->groups[i] == dt->gid;
		bits = member ? dt->mode >> 3 : dt->mode;
	}
	return (bits & want) == want;
}

int tdbd_tables_init(struct tdbd *d)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	/* max-memory 0: three quarters of the machine, as it is at start */
	d->mem_auto = pages > 0 && psize > 0 ?
		      (uint64_t)pages * (uint64_t)psize / 4 * 3 : UINT64_MAX;
	d->nbuckets = 1024;
	d->buckets = calloc(d->nbuckets, sizeof(*d->buckets));
	if (!d->buckets)
		return -ENOMEM;
	return -pthread_rwlock_init(&d->reg_lock, NULL);
}

static void feed_free(struct feed *f)
{
	if (!f)
		return;
	tdb_ring_detach(&f->prod);
	if (f->map)
		munmap(f->map, f->map_size);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static void dtable_free(struct tdbd *d, struct dtable *dt)
{
	tdbe_table_close(dt->t);
	tdbd_quota_uncharge(d, dt->uid, Q_RESERVE, dt->reserve);
	feed_free(dt->feed);
	tdbd_dirty_free(dt->dirty);
	free(dt->aside);
	free(dt);
}

void tdbd_tables_fini(struct tdbd *d)
{
	unsigned int i;

	for (i = 0; d->buckets && i < d->nbuckets; i++) {
		struct dtable *dt = d->buckets[i], *next;

		for (; dt; dt = next) {
			next = dt->next;
			tdbd_quota_uncharge(d, dt->uid, Q_TABLES, 1);
			dtable_free(d, dt);
		}
	}
	free(d->buckets);
	d->buckets = NULL;
	pthread_rwlock_destroy(&d->reg_lock);
}

static struct dtable **slot_of(struct tdbd *d, const char *name)
{
	struct dtable **p = &d->buckets[name_hash(name) % d->nbuckets];

	while (*p && strcmp((*p)->name, name))
		p = &(*p)->next;
	return p;
}

struct dtable *tdbd_table_get(struct tdbd *d, const char *name)
{
	struct dtable *dt;

	pthread_rwlock_rdlock(&d->reg_lock);
	dt = *slot_of(d, name);
	if (dt)
		__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&d->reg_lock);
	return dt;
}

void tdbd_table_put(struct tdbd *d, struct dtable *dt)
{
	if (dt && __atomic_sub_fetch(&dt->refs, 1, __ATOMIC_ACQ_REL) == 0)
		dtable_free(d, dt);
}

uint64_t tdbd_table_reserve(uint32_t max_ext)
{
	/* tdbp_region_create: one extent more, to align the base */
	return ((uint64_t)(max_ext ? max_ext : TDBE_EXTENTS_DEFAULT) + 1) *
	       TDBP_EXTENT_SIZE;
}

int tdbd_table_quota_check(struct tdbd *d, uint32_t uid, uint32_t max_ext,
			   const char **msg)
{
	return tdbd_quota_check(d, uid, Q_TABLES, 1, msg) ?:
	       tdbd_quota_check(d, uid, Q_RESERVE, tdbd_table_reserve(max_ext),
				msg);
}

uint64_t tdbd_table_gen(struct tdbd *d)
{
	return __atomic_load_n(&d->reg_gen, __ATOMIC_ACQUIRE);
}

unsigned int tdbd_table_count(struct tdbd *d)
{
	return __atomic_load_n(&d->ntables, __ATOMIC_RELAXED);
}

static void reg_add(struct tdbd *d, struct dtable *dt)
{
	pthread_rwlock_wrlock(&d->reg_lock);
	*slot_of(d, dt->name) = dt;
	d->ntables++;
	__atomic_fetch_add(&d->reg_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&d->reg_lock);
}

int tdbd_table_create(struct tdbd *d, const char *name, uint32_t max_ext,
		      uint32_t uid, uint32_t gid, uint32_t mode, uint64_t id,
		      struct dtable **out, struct tdb_proto_extack *ext)
{
	struct tdbe_table_opts o = { .max_extents = max_ext };
	struct tdbe_extack ee = { 0 };
	struct dtable *dt = calloc(1, sizeof(*dt));
	int err;

	if (!dt)
		return -ENOMEM;
	err = tdbe_table_create(d->engine, name, &o, &ee);
	if (!err)
		err = tdbe_table_open(d->engine, name, &dt->t, &ee);
	if (err) {
		ext->msg = err == -EEXIST ? "table exists" : ee.msg;
		free(dt);
		return err;
	}
	snprintf(dt->name, sizeof(dt->name), "%s", name);
	dt->id = id ? id : d->next_table_id + 1;
	if (dt->id > d->next_table_id)
		d->next_table_id = dt->id;
	dt->max_extents = max_ext;
	dt->reserve = tdbd_table_reserve(max_ext);
	tdbd_quota_force(d, uid, Q_TABLES, 1);
	tdbd_quota_force(d, uid, Q_RESERVE, dt->reserve);
	dt->ckpt_full = true;   /* new: the next checkpoint writes it all */
	dt->uid = uid;
	dt->gid = gid;
	dt->mode = mode & 0777;
	dt->refs = 1;
	reg_add(d, dt);
	tdbd_mem_note(d, dt);
	tdbd_log_rl(RL_TABLES, L_INFO, "table %s created (owner %u:%u, mode "
		    "%04o)", ESC(name), uid, gid, mode);
	if (out)
		*out = dt;
	return 0;
}

/* What every request on a set-aside table is told: why is cut so that
 * the whole fits in an extack (TDB_PROTO_EXTACK_MAX). */
static int aside_msg(struct dtable *dt, const char *why)
{
	static const char tail[] = "; its data is kept on disk for a "
				   "restart once the cause is gone (DROP "
				   "discards it)";
	char m[TDB_PROTO_EXTACK_MAX + 1];
	size_t n, room;

	/* the name escaped (a legacy name may hold anything), cut so that
	 * the tail always fits */
	snprintf(m, sizeof(m) - (sizeof(tail) - 1), "table %.96s was set aside "
		 "at start: ", ESC(dt->name));
	n = strlen(m);
	room = sizeof(m) - 1 - n - (sizeof(tail) - 1);
	snprintf(m + n, sizeof(m) - n, "%.*s%s", (int)room, why, tail);
	dt->aside = strdup(m);
	return dt->aside ? 0 : -ENOMEM;
}

int tdbd_table_add_aside(struct tdbd *d, const char *name, uint64_t id,
			 uint32_t max_ext, uint32_t uid, uint32_t gid,
			 uint32_t mode, uint64_t from, const char *why)
{
	struct dtable *dt = calloc(1, sizeof(*dt));

	if (!dt)
		return -ENOMEM;
	snprintf(dt->name, sizeof(dt->name), "%s", name);
	if (aside_msg(dt, why)) {
		free(dt);
		return -ENOMEM;
	}
	dt->id = id;
	if (id > d->next_table_id)
		d->next_table_id = id;
	dt->max_extents = max_ext;
	dt->from = from;
	dt->uid = uid;
	dt->gid = gid;
	dt->mode = mode & 0777;
	dt->refs = 1;
	/* it still counts among its owner's tables (a drop gives the slot
	 * back); it reserves no address space while it has no region */
	tdbd_quota_force(d, uid, Q_TABLES, 1);
	reg_add(d, dt);
	__atomic_fetch_add(&d->naside, 1, __ATOMIC_RELAXED);
	return 0;
}

int tdbd_table_set_aside(struct tdbd *d, struct dtable *dt, const char *why)
{
	struct tdbe_extack ee = { 0 };

	if (aside_msg(dt, why))
		return -ENOMEM;
	tdbe_table_drop(d->engine, dt->name, &ee);
	tdbe_table_close(dt->t);
	dt->t = NULL;
	tdbd_quota_uncharge(d, dt->uid, Q_RESERVE, dt->reserve);
	dt->reserve = 0;
	__atomic_fetch_sub(&d->mem_tables, dt->mem, __ATOMIC_RELAXED);
	dt->mem = 0;
	tdbd_dirty_free(dt->dirty);
	dt->dirty = NULL;
	dt->ckpt_full = false;
	__atomic_fetch_add(&d->reg_gen, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&d->naside, 1, __ATOMIC_RELAXED);
	return 0;
}

unsigned int tdbd_table_count_aside(struct tdbd *d)
{
	return __atomic_load_n(&d->naside, __ATOMIC_RELAXED);
}

int tdbd_table_drop(struct tdbd *d, struct dtable *dt,
		    struct tdb_proto_extack *ext)
{
	struct tdbe_extack ee = { 0 };
	struct dtable **p;
	int err;

	if (dt->dropped) {
		ext->msg = "no such table";
		return -ENOENT;
	}
	/* a table set aside has no engine table: dropping it only takes
	 * it from the registry (and the next checkpoint from the disk) */
	err = dt->t ? tdbe_table_drop(d->engine, dt->name, &ee) : 0;
	if (err) {
		ext->msg = ee.msg;
		return err;
	}
	if (dt->aside)
		__atomic_fetch_sub(&d->naside, 1, __ATOMIC_RELAXED);
	pthread_rwlock_wrlock(&d->reg_lock);
	p = slot_of(d, dt->name);
	if (*p == dt)
		*p = dt->next;
	d->ntables--;
	__atomic_fetch_add(&d->reg_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&d->reg_lock);
	dt->dropped = true;
	tdbd_quota_uncharge(d, dt->uid, Q_TABLES, 1);
	__atomic_fetch_sub(&d->mem_tables, dt->mem, __ATOMIC_RELAXED);
	dt->mem = 0;
	tdbd_snap_detach_all(dt);
	if (dt->feed) {         /* the last message watchers get */
		struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_DROP,
			.attrs = TDB_PROTO_BIT(TDB_A_TABLE),
			.table = dt->name,
			.table_len = (uint32_t)strlen(dt->name) };
		long len = tdb_proto_size(TDB_PROTO_ANSWER, &m, NULL);
		void *p2 = len > 0 ? tdb_ring_reserve(&dt->feed->prod,
						     (size_t)len) : NULL;

		if (p2 && tdb_proto_build(p2, (size_t)len, TDB_PROTO_ANSWER,
					  &m, NULL) == len) {
			tdb_ring_commit(&dt->feed->prod, (size_t)len);
			tdb_ring_publish(&dt->feed->prod);
		} else if (p2) {
			tdb_ring_abort(&dt->feed->prod);
		}
	}
	tdbd_log_rl(RL_TABLES, L_INFO, "table %s dropped", ESC(dt->name));
	tdbd_table_put(d, dt);  /* the registry's reference */
	return 0;
}

int tdbd_table_snapshot(struct tdbd *d, struct dtable ***out,
			unsigned int *n)
{
	struct dtable **v;
	unsigned int i, k = 0;

	pthread_rwlock_rdlock(&d->reg_lock);
	v = calloc(d->ntables + 1, sizeof(*v));
	if (!v) {
		pthread_rwlock_unlock(&d->reg_lock);
		return -ENOMEM;
	}
	for (i = 0; i < d->nbuckets; i++) {
		struct dtable *dt;

		for (dt = d->buckets[i]; dt && k < d->ntables; dt = dt->next) {
			__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
			v[k++] = dt;
		}
	}
	pthread_rwlock_unlock(&d->reg_lock);
	*out = v;
	*n = k;
	return 0;
}

/* --- feeds ------------------------------------------------------------- */

static int feed_make(struct tdbd *d, struct dtable *dt)
{
	struct feed *f = calloc(1, sizeof(*f));
	struct shm_ring r;
	char name[96];
	int err;

	if (!f)
		return -ENOMEM;
	snprintf(name, sizeof(name), "tdb-feed:%s", dt->name);
	err = tdbd_shm_ring(d, name, TDB_RING_FEED, d->cfg.feed_size,
			    F_SEAL_FUTURE_WRITE, &r);
	if (err) {
		free(f);
		return err;
	}
	f->fd = r.fd;
	f->map = r.map;
	f->map_size = r.map_size;
	f->span = r.span;
	err = tdb_ring_attach_producer(&f->prod, f->map,
				       (unsigned char *)f->map + f->span,
				       r.data_size, TDB_RING_FEED);
	if (err) {
		feed_free(f);
		return err;
	}
	dt->feed = f;
	return 0;
}

void tdbd_feed_unwatch(struct dtable *dt)
{
	if (--dt->watchers || !dt->feed)
		return;
	feed_free(dt->feed);
	dt->feed = NULL;
}

int tdbd_feed_open_ro(struct tdbd *d, struct dtable *dt, int *fd,
		      uint32_t *seq)
{
	char path[64];
	int err;

	if (!dt->feed && (err = feed_make(d, dt)))
		return err;
	/* A read-only open of the same memfd: a client given this fd can
	 * map the feed only read-only, so it cannot scribble on it. */
	*seq = dt->feed->prod.seq;      /* the watch starts here */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dt->feed->fd);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	return *fd < 0 ? -errno : 0;
}

static void feed_send(struct dtable *dt, struct tdb_proto_msg *m)
{
	struct tdb_ring *r = &dt->feed->prod;
	long len = tdb_proto_size(TDB_PROTO_ANSWER, m, NULL);
	void *p;

	if (len <= 0)
		return;
	p = tdb_ring_reserve(r, (size_t)len);
	if (!p) {
		tdbd_log_rl(RL_TABLES, L_WARNING, "feed of %s: a change of "
			    "%ld bytes does not fit (feed-size too small): "
			    "watchers miss it", ESC(dt->name), len);
		return;
	}
	if (tdb_proto_build(p, (size_t)len, TDB_PROTO_ANSWER, m, NULL) != len) {
		tdb_ring_abort(r);
		return;
	}
	tdb_ring_commit(r, (size_t)len);
	tdb_ring_publish(r);
}

void tdbd_feed_put(struct tdbd *d, struct dtable *dt, const void *key,
		   size_t klen, const void *val, size_t vlen)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_PUT };

	(void)d;
	if (!dt->feed || !dt->watchers)
		return;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY) |
		  TDB_PROTO_BIT(TDB_A_VALUE);
	m.table = dt->name;
	m.table_len = (uint32_t)strlen(dt->name);
	m.key = key;
	m.key_len = (uint32_t)klen;
	m.value = val;
	m.value_len = (uint32_t)vlen;
	feed_send(dt, &m);
}

void tdbd_feed_del(struct tdbd *d, struct dtable *dt, const void *key,
		   size_t klen)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_DEL };

	(void)d;
	if (!dt->feed || !dt->watchers)
		return;
	m.attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY);
	m.table = dt->name;
	m.table_len = (uint32_t)strlen(dt->name);
	m.key = key;
	m.key_len = (uint32_t)klen;
	feed_send(dt, &m);
}

/* --- memory (max-memory) ------------------------------------------------ */

#define EXTENT_BYTES (2ULL << 20)       /* core.h: extents of 2 MiB */

void tdbd_mem_note(struct tdbd *d, struct dtable *dt)
{
	struct tdbe_table_stat st;
	uint64_t now;

	if (dt->dropped || !dt->t)      /* !t: set aside, holds nothing */
		return;
	tdbe_table_stat(dt->t, &st);    /* O(1): counters in its header */
	now = (uint64_t)st.extents * EXTENT_BYTES;
	if (now != dt->mem) {           /* unsigned: a shrink wraps right */
		__atomic_fetch_add(&d->mem_tables, now - dt->mem,
				   __ATOMIC_RELAXED);
		dt->mem = now;
	}
}

/* Once: count the tables recovery made and filled (before any client,
 * but without tdbd_mem_note for the records it replayed). */
static void mem_prime(struct tdbd *d)
{
	struct dtable **tabs;
	unsigned int n, i;

	if (__atomic_load_n(&d->mem_primed, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&d->wlock);
	if (!d->mem_primed && !tdbd_table_snapshot(d, &tabs, &n)) {
		for (i = 0; i < n; i++) {
			tdbd_mem_note(d, tabs[i]);
			tdbd_table_put(d, tabs[i]);
		}
		free(tabs);
		__atomic_store_n(&d->mem_primed, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&d->wlock);
}

uint64_t tdbd_mem_used(struct tdbd *d)
{
	mem_prime(d);
	return __atomic_load_n(&d->mem_tables, __ATOMIC_RELAXED) +
	       __atomic_load_n(&d->mem_txns, __ATOMIC_RELAXED) +
	       __atomic_load_n(&d->snap_mem, __ATOMIC_RELAXED);
}

uint64_t tdbd_mem_limit(struct tdbd *d)
{
	uint64_t max = __atomic_load_n(&d->cfg.max_memory, __ATOMIC_RELAXED);

	return max ? max : d->mem_auto;
}

/*
 * Not under wlock: a few atomic loads per write.  A write admitted just
 * under the limit may take it past by what that one write adds (an
 * extent, a value); the next ones are refused.
 */
int tdbd_mem_check(struct tdbd *d, struct tdb_proto_extack *ext)
{
	if (tdbd_mem_used(d) <= tdbd_mem_limit(d))
		return 0;
	ext->msg = "tdbd is over max-memory: writes that add data are "
		   "refused; reads and deletes go on";
	return -ENOMEM;
}

/* --- snapshots ----------------------------------------------------------- */

/*
 * A key's state at snapshot time, shared by every snapshot that needs it:
 * made once per change, by the first snapshot that needs it, and freed
 * with the last entry that points to it.
 */
struct snap_pre {
	unsigned int refs;      /* atomic: entries; +1 while being saved */
	uint32_t uid;           /* charged to (snap_charge) ... */
	uint64_t charged;       /* ... this many bytes */
	uint32_t vlen;
	bool present;           /* the key existed at snapshot time */
	unsigned char val[];    /* the value it had */
};

/* One key changed since the snapshot, in one snapshot's map. */
struct snap_ent {
	struct snap_ent *next;  /* hash chain */
	uint64_t hash;
	struct snap_pre *pre;   /* counted; NULL if sent when saved (the walk
				 * had passed the key: no old value needed) */
	uint32_t klen;
	bool sent;              /* sent, or must not be (the walk passed the
				 * key while it was unchanged) */
	unsigned char key[];
};

struct snapshot {
	struct snapshot *next;  /* dt->snaps, under wlock */
	struct dtable *dt;      /* counted */
	struct tdbd *d;
	uint32_t uid;           /* owner: the scanning client's uid */
	bool registered;        /* under wlock: on dt->snaps */
	pthread_mutex_t lock;   /* everything below */
	struct snap_ent **buckets;
	size_t nbuckets, nents;
	/* bytes: its entries, buckets and the pre-images they point to
	 * (shared ones too), bounded by max_bytes (max-snapshot-bytes);
	 * charged: its entries and buckets, charged to uid */
	uint64_t bytes, max_bytes, charged;
	unsigned char *prefix;
	uint32_t plen;
	bool frozen;            /* the walk is over: no more changes taken */
	int err;                /* the snapshot broke: its scan fails */
	char msg[TDB_PROTO_EXTACK_MAX];
	size_t at;              /* after the freeze: the bucket walked, */
	struct snap_ent *cur;   /* and the next entry in it */
	uint32_t pos_len;       /* the last key the walk looked up (0: none) */
	unsigned char pos[TDBE_KEY_MAX];
};

#define SNAP_BUCKETS_MIN 64u

/* snap_charge's refusal for the bound of all snapshots. */
static const char snap_all_bound[] = "max-snapshot-memory";

/*
 * All snapshot memory is charged here and given back through
 * snap_uncharge() with the same uid and count: a snapshot's entries and
 * buckets to its owner, a pre-image once, to the owner of the snapshot
 * that made it; each also against its owner's max-snapshot-memory-per-uid
 * (quota.c).  Charges run under wlock (snapshots grow only in
 * tdbd_snap_save), so no other charge races the check; uncharges (a
 * snapshot ends, in any worker) only lower the total.  0, or -ENOBUFS
 * with *why naming the bound.
 */
static int snap_charge(struct tdbd *d, uint32_t uid, uint64_t n,
		       const char **why)
{
	uint64_t max = __atomic_load_n(&d->cfg.max_snapshot_memory,
				       __ATOMIC_RELAXED);
	int err;

	if (__atomic_load_n(&d->snap_mem, __ATOMIC_RELAXED) + n > max) {
		*why = snap_all_bound;
		return -ENOBUFS;
	}
	/* the owner's share (quota.c; root is exempt) */
	err = tdbd_quota_charge(d, uid, Q_SNAP_BYTES, n, why);
	if (err)
		return -ENOBUFS;
	__atomic_fetch_add(&d->snap_mem, n, __ATOMIC_RELAXED);
	return 0;
}

static void snap_uncharge(struct tdbd *d, uint32_t uid, uint64_t n)
{
	tdbd_quota_uncharge(d, uid, Q_SNAP_BYTES, n);
	__atomic_fetch_sub(&d->snap_mem, n, __ATOMIC_RELAXED);
}

static uint64_t snap_hash(const void *key, size_t klen)
{
	return XXH64(key, klen, 0);
}

static bool snap_wants(const struct snapshot *s, const void *key,
		       size_t klen)
{
	return !s->plen || (klen >= s->plen &&
			    !memcmp(key, s->prefix, s->plen));
}

struct snapshot *tdbd_snap_new(struct tdbd *d, struct dtable *dt,
			       uint32_t uid, const void *prefix, size_t plen)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (plen && !(s->prefix = malloc(plen))) {
		free(s);
		return NULL;
	}
	if (plen)
		memcpy(s->prefix, prefix, plen);
	s->plen = (uint32_t)plen;
	pthread_mutex_init(&s->lock, NULL);
	s->max_bytes = d->cfg.max_snapshot_bytes;
	s->d = d;
	s->uid = uid;
	s->dt = dt;
	__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	s->next = dt->snaps;
	dt->snaps = s;
	s->registered = true;
	return s;
}

static void pre_put(struct tdbd *d, struct snap_pre *p)
{
	if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		snap_uncharge(d, p->uid, p->charged);
		free(p);
	}
}

void tdbd_snap_free(struct tdbd *d, struct snapshot *s)
{
	struct snapshot **pp;
	size_t i;

	if (!s)
		return;
	pthread_mutex_lock(&d->wlock);
	if (s->registered) {
		for (pp = &s->dt->snaps; *pp && *pp != s; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = s->next;
		s->registered = false;
	}
	pthread_mutex_unlock(&d->wlock);
	for (i = 0; i < s->nbuckets; i++) {
		struct snap_ent *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			pre_put(d, e->pre);
			free(e);
		}
	}
	snap_uncharge(d, s->uid, s->charged);
	free(s->buckets);
	free(s->prefix);
	pthread_mutex_destroy(&s->lock);
	tdbd_table_put(d, s->dt);
	free(s);
}

void tdbd_snap_detach_all(struct dtable *dt)
{
	struct snapshot *s;

	for (s = dt->snaps; s; s = s->next)
		s->registered = false;
	dt->snaps = NULL;
}

/* Under s->lock. */
static struct snap_ent *snap_find(const struct snapshot *s, uint64_t h,
				  const void *key, size_t klen)
{
	struct snap_ent *e;

	if (!s->nbuckets)
		return NULL;
	for (e = s->buckets[h & (s->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && e->klen == klen &&
		    !memcmp(e->key, key, klen))
			return e;
	return NULL;
}

/* A key as a message may show it: printable ASCII, the rest as \xNN,
 * cut with "..." (keys come from clients; the log prints this too). */
static void key_show(char *out, size_t size, const void *key, size_t klen)
{
	const unsigned char *k = key;
	size_t i, o = 0;

	for (i = 0; i < klen && o + 8 < size; i++) {
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '\\' &&
		    k[i] != '\'')
			out[o++] = (char)k[i];
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x",
					      k[i]);
	}
	if (i < klen)
		o += (size_t)snprintf(out + o, size - o, "...");
	out[o] = 0;
}

/* A change to one key, as the snapshots of its table take it. */
struct snap_change {
	struct dtable *dt;
	const void *key;
	size_t klen;
	uint64_t hash;
	int probed;             /* 0 not yet, 1 done, or its error */
	bool present;           /* the key's state before the change */
	size_t vlen;
	struct snap_pre *pre;   /* made by the first snapshot needing it */
};

/*
 * Under s->lock: the first failure sticks; the writers go on.  why: the
 * bound a charge hit (NULL: max-snapshot-bytes, for -ENOBUFS).
 */
static int snap_fail(struct snapshot *s, int err, const char *why,
		     const struct snap_change *ch)
{
	char k[44];

	if (s->err)
		return err;
	s->err = err;
	key_show(k, sizeof(k), ch->key, ch->klen);
	if (err == -ENOBUFS && !why)
		snprintf(s->msg, sizeof(s->msg), "snapshot grew past "
			 "max-snapshot-bytes (%llu bytes of old values of keys "
			 "changed during the scan) at key '%s'; raise it or "
			 "dump when fewer writes run",
			 (unsigned long long)s->max_bytes, k);
	else if (err == -ENOBUFS && why == snap_all_bound)
		snprintf(s->msg, sizeof(s->msg), "snapshot stopped at key "
			 "'%s': all snapshot scans together would pass "
			 "max-snapshot-memory (%llu bytes); raise it or dump "
			 "when fewer writes run", k,
			 (unsigned long long)__atomic_load_n(
				 &s->d->cfg.max_snapshot_memory,
				 __ATOMIC_RELAXED));
	else if (err == -ENOBUFS)
		snprintf(s->msg, sizeof(s->msg), "snapshot stopped at key "
			 "'%s': %s", k, why);
	else
		snprintf(s->msg, sizeof(s->msg), "snapshot failed at key "
			 "'%s': cannot keep the old value of a changed key: "
			 "%s", k, tdbe_strerror(err));
	tdbd_log_rl(RL_TABLES, L_WARNING, "table %s: a snapshot scan fails: "
		    "%s", ESC(s->dt->name), s->msg);
	return err;
}

/* Bytes the buckets grow by at the next insert (the table doubles at
 * load 1). */
static uint64_t snap_grow_add(const struct snapshot *s)
{
	if (s->nents < s->nbuckets)
		return 0;
	return (uint64_t)(s->nbuckets ? s->nbuckets : SNAP_BUCKETS_MIN) *
	       sizeof(*s->buckets);
}

/* Under s->lock: room for one more entry. */
static int snap_grow(struct snapshot *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : SNAP_BUCKETS_MIN, i;
	struct snap_ent **b;

	if (s->nents < s->nbuckets)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < s->nbuckets; i++) {
		struct snap_ent *e = s->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
	return 0;
}

static size_t pre_size(size_t vlen)
{
	return sizeof(struct snap_pre) + vlen;
}

/* Under wlock: the key's state before the change; looked up once. */
static int change_probe(struct snap_change *ch)
{
	size_t need = 0;
	long n;

	if (ch->probed)
		return ch->probed < 0 ? ch->probed : 0;
	n = tdbe_get(ch->dt->t, ch->key, ch->klen, NULL, 0, &need);
	if (n < 0 && n != -ENOENT && n != -ENOBUFS) {
		ch->probed = (int)n;
		return (int)n;
	}
	ch->present = n != -ENOENT;
	ch->vlen = n == -ENOBUFS ? need : 0;
	ch->probed = 1;
	return 0;
}

/* Under wlock: the shared pre-image; the first snapshot that needs it
 * makes it (the one copy of the change) and its owner is charged. */
static int pre_get(struct snapshot *s, struct snap_change *ch,
		   const char **why)
{
	size_t size = pre_size(ch->vlen), need;
	struct snap_pre *p;
	long n;
	int err;

	if (ch->pre)
		return 0;
	if ((err = snap_charge(s->d, s->uid, size, why)))
		return err;
	p = malloc(size);
	n = p && ch->vlen ? tdbe_get(ch->dt->t, ch->key, ch->klen, p->val,
				     ch->vlen, &need) : 0;
	if (!p || n != (long)ch->vlen) {
		free(p);
		snap_uncharge(s->d, s->uid, size);
		return !p ? -ENOMEM : n < 0 ? (int)n : -EIO;
	}
	p->refs = 1;            /* the change's own: tdbd_snap_save drops it */
	p->uid = s->uid;
	p->charged = size;
	p->vlen = (uint32_t)ch->vlen;
	p->present = ch->present;
	ch->pre = p;
	return 0;
}

/*
 * Under wlock and s->lock, for a key s does not have yet: its entry,
 * pointing to the shared pre-image, or none needed if the walk already
 * passed the key (it went out unchanged: present since the snapshot, so
 * the walk returned it).  Its entry and buckets are charged to its
 * owner; on failure the snapshot fails (snap_fail).
 */
static void snap_take(struct snapshot *s, struct snap_change *ch)
{
	const char *why = NULL;
	bool sent = s->pos_len && tdbe_key_order(ch->dt->t, ch->key,
						 ch->klen, s->pos,
						 s->pos_len) <= 0;
	uint64_t add = snap_grow_add(s), ent = sizeof(struct snap_ent) +
					      ch->klen;
	struct snap_ent *e;
	int err;

	if (!sent && (err = change_probe(ch))) {
		snap_fail(s, err, NULL, ch);
		return;
	}
	if (s->bytes + add + ent + (sent ? 0 : pre_size(ch->vlen)) >
	    s->max_bytes) {
		snap_fail(s, -ENOBUFS, NULL, ch);
		return;
	}
	if ((err = snap_charge(s->d, s->uid, add + ent, &why))) {
		snap_fail(s, err, why, ch);
		return;
	}
	if (add && (err = snap_grow(s))) {
		snap_uncharge(s->d, s->uid, add + ent);
		snap_fail(s, err, NULL, ch);
		return;
	}
	s->bytes += add;
	s->charged += add;
	err = sent ? 0 : pre_get(s, ch, &why);
	e = err ? NULL : malloc(sizeof(*e) + ch->klen);
	if (!e) {
		snap_uncharge(s->d, s->uid, ent);
		snap_fail(s, err ? err : -ENOMEM, why, ch);
		return;
	}
	memcpy(e->key, ch->key, ch->klen);
	e->hash = ch->hash;
	e->klen = (uint32_t)ch->klen;
	e->sent = sent;
	e->pre = sent ? NULL : ch->pre;
	if (e->pre)
		__atomic_fetch_add(&e->pre->refs, 1, __ATOMIC_RELAXED);
	e->next = s->buckets[ch->hash & (s->nbuckets - 1)];
	s->buckets[ch->hash & (s->nbuckets - 1)] = e;
	s->nents++;
	s->bytes += ent + (sent ? 0 : pre_size(ch->vlen));
	s->charged += ent;
}

void tdbd_snap_save(struct dtable *dt, const void *key, size_t klen)
{
	struct snap_change ch = { .dt = dt, .key = key, .klen = klen };
	struct tdbd *d = NULL;
	struct snapshot *s;

	if (!dt->snaps)
		return;
	ch.hash = snap_hash(key, klen);
	for (s = dt->snaps; s; s = s->next) {
		if (!snap_wants(s, key, klen))
			continue;
		d = s->d;
		pthread_mutex_lock(&s->lock);
		if (!s->frozen && !s->err &&
		    !snap_find(s, ch.hash, key, klen))
			snap_take(s, &ch);
		pthread_mutex_unlock(&s->lock);
	}
	if (ch.pre)
		pre_put(d, ch.pre);     /* the change's own reference */
}

int tdbd_snap_check(struct snapshot *s, const void *key, size_t klen,
		    const void **val, size_t *vlen, const char **msg)
{
	uint64_t h = snap_hash(key, klen);
	struct snap_ent *e;
	int rc = 1;

	pthread_mutex_lock(&s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
		goto out;
	}
	/* From here on, a change saved for this key (or one before it)
	 * is marked sent: what goes out now is its snapshot state. */
	memcpy(s->pos, key, klen);
	s->pos_len = (uint32_t)klen;
	e = snap_find(s, h, key, klen);
	if (!e)
		goto out;               /* unchanged: the live value */
	if (e->sent || !e->pre->present) {
		e->sent = true;
		rc = 0;
		goto out;
	}
	e->sent = true;
	*val = e->pre->val;
	*vlen = e->pre->vlen;
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void tdbd_snap_freeze(struct snapshot *s)
{
	pthread_mutex_lock(&s->lock);
	s->frozen = true;
	s->at = 0;
	s->cur = NULL;
	pthread_mutex_unlock(&s->lock);
}

int tdbd_snap_next_left(struct snapshot *s, const void **key, size_t *klen,
			const void **val, size_t *vlen, const char **msg)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->err) {
		*msg = s->msg;
		rc = s->err;
		goto out;
	}
	for (;;) {
		struct snap_ent *e = s->cur;

		if (!e) {
			if (s->at >= s->nbuckets)
				goto out;
			s->cur = s->buckets[s->at++];
			continue;
		}
		s->cur = e->next;
		if (e->sent || !e->pre->present)
			continue;
		e->sent = true;
		*key = e->key;
		*klen = e->klen;
		*val = e->pre->val;
		*vlen = e->pre->vlen;
		rc = 1;
		goto out;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}
