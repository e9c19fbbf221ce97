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
 *  - A table's feed exists from its first WATCH to its drop; only the
 *    holder of d->wlock writes it, so it has one producer.
 *  - A snapshot is on its table's list (dt->snaps, under wlock) from its
 *    scan's start to its end or the table's drop.  Its map is changed
 *    under its own mutex, by writers (holding wlock too) and by its scan;
 *    entries are freed only with the snapshot, so the pre-image pointers
 *    the scan hands out stay valid without the mutex.
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

static void dtable_free(struct dtable *dt)
{
	tdbe_table_close(dt->t);
	feed_free(dt->feed);
	tdbd_dirty_free(dt->dirty);
	free(dt);
}

void tdbd_tables_fini(struct tdbd *d)
{
	unsigned int i;

	for (i = 0; d->buckets && i < d->nbuckets; i++) {
		struct dtable *dt = d->buckets[i], *next;

		for (; dt; dt = next) {
			next = dt->next;
			dtable_free(dt);
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
	(void)d;
	if (dt && __atomic_sub_fetch(&dt->refs, 1, __ATOMIC_ACQ_REL) == 0)
		dtable_free(dt);
}

uint64_t tdbd_table_gen(struct tdbd *d)
{
	return __atomic_load_n(&d->reg_gen, __ATOMIC_ACQUIRE);
}

unsigned int tdbd_table_count(struct tdbd *d)
{
	return __atomic_load_n(&d->ntables, __ATOMIC_RELAXED);
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
	dt->ckpt_full = true;   /* new: the next checkpoint writes it all */
	dt->uid = uid;
	dt->gid = gid;
	dt->mode = mode & 0777;
	dt->refs = 1;
	pthread_rwlock_wrlock(&d->reg_lock);
	*slot_of(d, name) = dt;
	d->ntables++;
	__atomic_fetch_add(&d->reg_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&d->reg_lock);
	tdbd_log_rl(RL_TABLES, L_INFO, "table %s created (owner %u:%u, mode "
		    "%04o)", name, uid, gid, mode);
	if (out)
		*out = dt;
	return 0;
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
	err = tdbe_table_drop(d->engine, dt->name, &ee);
	if (err) {
		ext->msg = ee.msg;
		return err;
	}
	pthread_rwlock_wrlock(&d->reg_lock);
	p = slot_of(d, dt->name);
	if (*p == dt)
		*p = dt->next;
	d->ntables--;
	__atomic_fetch_add(&d->reg_gen, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&d->reg_lock);
	dt->dropped = true;
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
	tdbd_log_rl(RL_TABLES, L_INFO, "table %s dropped", dt->name);
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
			    "watchers miss it", dt->name, len);
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

/* --- snapshots ----------------------------------------------------------- */

/* One key changed since the snapshot: its state at snapshot time. */
struct snap_ent {
	struct snap_ent *next;  /* hash chain */
	uint64_t hash;
	uint32_t klen, vlen;
	bool present;           /* the key existed at snapshot time */
	bool sent;              /* sent, or must not be (the walk passed the
				 * key while it was unchanged) */
	unsigned char data[];   /* key, then the value it had */
};

struct snapshot {
	struct snapshot *next;  /* dt->snaps, under wlock */
	struct dtable *dt;      /* counted */
	bool registered;        /* under wlock: on dt->snaps */
	pthread_mutex_t lock;   /* everything below */
	struct snap_ent **buckets;
	size_t nbuckets, nents;
	uint64_t bytes, max_bytes;
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
			       const void *prefix, size_t plen)
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
	s->dt = dt;
	__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	s->next = dt->snaps;
	dt->snaps = s;
	s->registered = true;
	return s;
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
			free(e);
		}
	}
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
		    !memcmp(e->data, key, klen))
			return e;
	return NULL;
}

/* Under s->lock: the first failure sticks; the writers go on. */
static void snap_fail(struct snapshot *s, int err)
{
	if (s->err)
		return;
	s->err = err;
	if (err == -ENOBUFS)
		snprintf(s->msg, sizeof(s->msg), "snapshot grew past "
			 "max-snapshot-bytes (%llu bytes of old values of keys "
			 "changed during the scan); raise it or dump when "
			 "fewer writes run",
			 (unsigned long long)s->max_bytes);
	else
		snprintf(s->msg, sizeof(s->msg), "snapshot failed: cannot "
			 "keep the old value of a changed key: %s",
			 tdbe_strerror(err));
	tdbd_log_rl(RL_TABLES, L_WARNING, "table %s: a snapshot scan fails: "
		    "%s", s->dt->name, s->msg);
}

/* Under s->lock: room for one more entry (the table doubles at load 1). */
static int snap_grow(struct snapshot *s)
{
	size_t n = s->nbuckets ? s->nbuckets * 2 : SNAP_BUCKETS_MIN, i;
	struct snap_ent **b;
	uint64_t add;

	if (s->nents < s->nbuckets)
		return 0;
	add = (uint64_t)(n - s->nbuckets) * sizeof(*b);
	if (s->bytes + add > s->max_bytes)
		return -ENOBUFS;
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
	s->bytes += add;
	return 0;
}

/* Under wlock (the key's value cannot change meanwhile). */
static void snap_save_one(struct dtable *dt, struct snapshot *s,
			  const void *key, size_t klen)
{
	uint64_t h = snap_hash(key, klen);
	struct snap_ent *e;
	size_t need = 0, vlen = 0;
	bool present;
	long n;
	int err;

	pthread_mutex_lock(&s->lock);
	if (s->frozen || s->err || snap_find(s, h, key, klen))
		goto out;
	n = tdbe_get(dt->t, key, klen, NULL, 0, &need);
	if (n < 0 && n != -ENOENT && n != -ENOBUFS) {
		snap_fail(s, (int)n);
		goto out;
	}
	present = n != -ENOENT;
	if (n == -ENOBUFS)
		vlen = need;
	if (s->bytes + sizeof(*e) + klen + vlen > s->max_bytes) {
		snap_fail(s, -ENOBUFS);
		goto out;
	}
	err = snap_grow(s);
	if (err) {
		snap_fail(s, err);
		goto out;
	}
	e = malloc(sizeof(*e) + klen + vlen);
	if (!e) {
		snap_fail(s, -ENOMEM);
		goto out;
	}
	memcpy(e->data, key, klen);
	if (vlen) {
		n = tdbe_get(dt->t, key, klen, e->data + klen, vlen, &need);
		if (n != (long)vlen) {
			free(e);
			snap_fail(s, n < 0 ? (int)n : -EIO);
			goto out;
		}
	}
	e->hash = h;
	e->klen = (uint32_t)klen;
	e->vlen = (uint32_t)vlen;
	e->present = present;
	/* A key at or before the walk's position went out unchanged (it was
	 * present since the snapshot, so the walk returned it). */
	e->sent = s->pos_len && tdbe_key_order(dt->t, key, klen, s->pos,
					       s->pos_len) <= 0;
	e->next = s->buckets[h & (s->nbuckets - 1)];
	s->buckets[h & (s->nbuckets - 1)] = e;
	s->nents++;
	s->bytes += sizeof(*e) + klen + vlen;
out:
	pthread_mutex_unlock(&s->lock);
}

void tdbd_snap_save(struct dtable *dt, const void *key, size_t klen)
{
	struct snapshot *s;

	for (s = dt->snaps; s; s = s->next)
		if (snap_wants(s, key, klen))
			snap_save_one(dt, s, key, klen);
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
	if (e->sent || !e->present) {
		e->sent = true;
		rc = 0;
		goto out;
	}
	e->sent = true;
	*val = e->data + e->klen;
	*vlen = e->vlen;
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
		if (e->sent || !e->present)
			continue;
		e->sent = true;
		*key = e->data;
		*klen = e->klen;
		*val = e->data + e->klen;
		*vlen = e->vlen;
		rc = 1;
		goto out;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}
