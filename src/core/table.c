// SPDX-License-Identifier: GPL-2.0-only
/*
 * table.c - the engine (a named set of tables) and the record operations
 * put, get, lookup and del; also the limbo of freed offsets that wait for
 * a grace period before the allocator may reuse them.
 */
#include "internal.h"

struct tdbe_engine {
	struct tdbp_mutex *lock;   /* the table list and names */
	struct tdbe_table *tables; /* newest first */
	void (*grace)(void *arg);  /* readers the engine cannot see */
	void *grace_arg;
	struct tdbp_ratelimit rl;  /* its log lines (a create per line) */
	/* the clock deadlines are read against: tdbp_realtime_ms, or a
	 * test's (tdbe_engine_set_clock) */
	uint64_t (*now)(void *arg);
	void *now_arg;
};

/* --- the clock of deadlines ------------------------------------------- */

void tdbe_engine_set_clock(struct tdbe_engine *e, uint64_t (*now)(void *arg),
			   void *arg)
{
	e->now = now;
	e->now_arg = arg;
}

uint64_t tdbe_engine_now_ms(const struct tdbe_engine *e)
{
	return e && e->now ? e->now(e->now_arg) : tdbp_realtime_ms();
}

uint64_t tdbe_table_now_ms(const struct tdbe_table *t)
{
	return tdbe_engine_now_ms(t->engine);
}

/* The record is absent to readers: it has a deadline and that is past.
 * The clock is read only for a record with a deadline. */
bool tdb_rec_dead(const struct tdbe_table *t, const struct tdb_rec *r)
{
	return (r->flags & TDB_REC_F_DEADLINE) &&
	       tdb_rec_expired(r, tdbe_table_now_ms(t));
}

/* --- limbo ------------------------------------------------------------- */

/* Until every reader that could see what was retired is gone: this
 * process's read-side sections, then the home's other readers. */
static void grace_period(struct tdbe_table *t)
{
	struct tdbe_engine *e = t->engine;

	tdbp_rcu_synchronize();
	if (e && e->grace)
		e->grace(e->grace_arg);
}

static void limbo_reclaim(struct tdbe_table *t)
{
	uint32_t i;

	if (!t->limbo.n)
		return;
	grace_period(t);
	for (i = 0; i < t->limbo.n; i++)
		tdba_free(t, t->limbo.off[i]);
	t->limbo.n = 0;
	t->limbo.bytes = 0;
}

void tdb_retire(struct tdbe_table *t, uint64_t off)
{
	struct tdb_limbo *l = &t->limbo;

	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 256;
		uint64_t *n = tdbp_alloc(sizeof(*n) * cap);

		if (!n) {
			/* No memory to remember it: wait for the readers
			 * right here instead. */
			limbo_reclaim(t);
			grace_period(t);
			tdba_free(t, off);
			return;
		}
		if (l->n)
			memcpy(n, l->off, sizeof(*n) * l->n);
		tdbp_free(l->off);
		l->off = n;
		l->cap = cap;
	}
	l->off[l->n++] = off;
	l->bytes += tdba_usable(t, off);
}

/* Writers call this after each change: reclaim in batches, so one grace
 * period is shared by thousands of frees. */
static void limbo_maybe_reclaim(struct tdbe_table *t)
{
	if (t->limbo.n >= TDB_LIMBO_BATCH ||
	    t->limbo.bytes >= TDBP_EXTENT_SIZE * 4)
		limbo_reclaim(t);
}

uint64_t tdb_alloc_reclaim(struct tdbe_table *t, size_t size)
{
	uint64_t off = tdba_alloc(t, size);

	if (!off && t->limbo.n) {
		limbo_reclaim(t);
		off = tdba_alloc(t, size);
	}
	return off;
}

/* --- tables ------------------------------------------------------------ */

static int check_name(const char *name, struct tdbe_extack *ext)
{
	size_t i;

	if (!name || !name[0]) {
		TDB_EXTACK(ext, "table name is empty");
		return -EINVAL;
	}
	for (i = 0; name[i]; i++) {
		unsigned char c = (unsigned char)name[i];

		if (i >= TDBE_NAME_MAX) {
			TDB_EXTACK(ext, "table name is longer than 64 bytes");
			return -ENAMETOOLONG;
		}
		if (c < 0x21 || c == 0x7f || c == '/') {
			TDB_EXTACK(ext, "table name has a space, control "
					"character or '/'");
			return -EINVAL;
		}
	}
	return 0;
}

static struct tdbe_table *find_table(struct tdbe_engine *e, const char *name)
{
	struct tdbe_table *t;

	for (t = e->tables; t; t = t->next)
		if (!strcmp_tdb(t->name, name))
			return t;
	return NULL;
}

static void table_free(struct tdbe_table *t)
{
	/* No handle is left, so no reader can be inside this table; the
	 * limbo needs no grace period, the region just goes. */
	tdbp_free(t->limbo.off);
	tdbb_free(t);
	tdbr_destroy(t);
	if (t->wlock)
		tdbp_mutex_destroy(t->wlock);
	tdbp_free(t);
}

static void table_unref(struct tdbe_table *t)
{
	if (tdb_fetch_sub(&t->refs, 1) == 1)
		table_free(t);
}

static int table_new(const char *name, const struct tdbe_table_opts *opts,
		     struct tdbe_table **out, struct tdbe_extack *ext)
{
	unsigned int max = opts && opts->max_extents ? opts->max_extents
						     : TDBE_EXTENTS_DEFAULT;
	struct tdbe_table *t;
	int err;

	if (max > TDBE_EXTENTS_MAX) {
		TDB_EXTACK(ext, "max_extents is over TDBE_EXTENTS_MAX (32768)");
		return -EINVAL;
	}
	if (max < 1) {
		TDB_EXTACK(ext, "max_extents must be at least 1");
		return -EINVAL;
	}
	if (opts && (opts->flags & ~TDBE_TABLE_FLAGS_ALL)) {
		TDB_EXTACK(ext, "unknown table flags");
		return -EINVAL;
	}
	t = tdbp_alloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	memcpy(t->name, name, strlen_tdb(name) + 1);
	t->refs = 1;
	t->max_extents = max;
	tdba_init_classes(t->class_pages);
	t->wlock = tdbp_mutex_create();
	if (!t->wlock) {
		err = -ENOMEM;
		goto fail;
	}
	err = tdbr_init(t, name, ext);
	if (err)
		goto fail;
	err = tdbi_init(t);
	if (err) {
		TDB_EXTACK(ext, "no room for the index root");
		goto fail;
	}
	if (opts && (opts->flags & TDBE_TABLE_ORDERED)) {
		err = tdbb_init(t);
		if (err) {
			TDB_EXTACK(ext, "no room for the ordered index's root");
			goto fail;
		}
	}
	*out = t;
	return 0;
fail:
	table_free(t);
	return err;
}

struct tdbe_engine *tdbe_engine_new(int *err)
{
	struct tdbe_engine *e = tdbp_alloc(sizeof(*e));

	if (!e) {
		*err = -ENOMEM;
		return NULL;
	}
	e->lock = tdbp_mutex_create();
	if (!e->lock) {
		tdbp_free(e);
		*err = -ENOMEM;
		return NULL;
	}
	tdbp_ratelimit_init(&e->rl, "engine tables created");
	return e;
}

void tdbe_engine_log_flush(struct tdbe_engine *e)
{
	tdbp_log_rl_flush(&e->rl);
}

void tdbe_engine_set_grace(struct tdbe_engine *e, void (*fn)(void *arg),
			   void *arg)
{
	e->grace = fn;
	e->grace_arg = arg;
}

void tdbe_engine_free(struct tdbe_engine *e)
{
	struct tdbe_table *t, *next;

	if (!e)
		return;
	for (t = e->tables; t; t = next) {
		next = t->next;
		table_unref(t);
	}
	tdbp_mutex_destroy(e->lock);
	tdbp_free(e);
}

int tdbe_table_create(struct tdbe_engine *e, const char *name,
		      const struct tdbe_table_opts *opts,
		      struct tdbe_extack *ext)
{
	struct tdbe_table *t;
	int err = check_name(name, ext);

	if (err)
		return err;
	tdbp_mutex_lock(e->lock);
	if (find_table(e, name)) {
		TDB_EXTACK(ext, "a table with this name exists");
		err = -EEXIST;
		goto out;
	}
	err = table_new(name, opts, &t, ext);
	if (err)
		goto out;
	t->engine = e;
	t->next = e->tables;
	e->tables = t;
	tdbp_log_rl(&e->rl, TDBP_LOG_DEBUG,
		    "table %s: created, cap %u extents, %s pages",
		    name, t->max_extents,
		    tdbp_region_page_size(t->region) == TDBP_EXTENT_SIZE
			    ? "2 MiB huge" : "4 KiB");
out:
	tdbp_mutex_unlock(e->lock);
	return err;
}

int tdbe_table_drop(struct tdbe_engine *e, const char *name,
		    struct tdbe_extack *ext)
{
	struct tdbe_table **pp, *t = NULL;

	tdbp_mutex_lock(e->lock);
	for (pp = &e->tables; *pp; pp = &(*pp)->next) {
		if (!strcmp_tdb((*pp)->name, name)) {
			t = *pp;
			*pp = t->next;
			t->next = NULL;
			t->dropped = true;
			break;
		}
	}
	tdbp_mutex_unlock(e->lock);
	if (!t) {
		TDB_EXTACK(ext, "no table with this name");
		return -ENOENT;
	}
	table_unref(t);
	return 0;
}

int tdbe_table_open(struct tdbe_engine *e, const char *name,
		    struct tdbe_table **out, struct tdbe_extack *ext)
{
	struct tdbe_table *t;

	tdbp_mutex_lock(e->lock);
	t = name ? find_table(e, name) : NULL;
	if (t)
		tdb_fetch_add(&t->refs, 1);
	tdbp_mutex_unlock(e->lock);
	if (!t) {
		TDB_EXTACK(ext, "no table with this name");
		return -ENOENT;
	}
	*out = t;
	return 0;
}

void tdbe_table_close(struct tdbe_table *t)
{
	if (t)
		table_unref(t);
}

/* Lock-free: each counter is read on its own, so a stat taken while a
 * writer runs may mix values from just before and just after a change. */
void tdbe_table_stat(struct tdbe_table *t, struct tdbe_table_stat *st)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);

	st->records = tdb_load_relaxed(&h->nrecords);
	st->bytes_used = tdb_load_relaxed(&h->bytes_used);
	st->bytes_allocated = tdb_load_relaxed(&h->bytes_allocated);
	st->bytes_pending = tdb_load_relaxed(&t->limbo.bytes);
	st->extents = tdb_load_acquire(&h->nextents);
	st->max_extents = t->max_extents;
	st->page_size = tdbp_region_page_size(t->region);
	st->index_nodes = tdb_load_relaxed(&h->index_nodes);
	st->index_buckets = tdb_load_relaxed(&h->index_buckets);
	st->expiring = tdb_load_relaxed(&h->nexpiring);
	st->flags = h->table_flags & TDB_TBL_F_ORDERED ? TDBE_TABLE_ORDERED
						       : 0;
	st->order_nodes = tdb_load_relaxed(&h->onodes);
}

bool tdbe_table_ordered(const struct tdbe_table *t)
{
	return tdb_hdr(&t->map)->table_flags & TDB_TBL_F_ORDERED;
}

int tdbe_table_list(struct tdbe_engine *e,
		    int (*fn)(void *arg, const char *name,
			      const struct tdbe_table_stat *st),
		    void *arg)
{
	struct tdbe_table *t, **all;
	struct tdbe_table_stat st;
	size_t n = 0, i;
	int ret = 0;

	/* Snapshot the list with references, then call fn unlocked so it may
	 * use the engine itself. */
	tdbp_mutex_lock(e->lock);
	for (t = e->tables; t; t = t->next)
		n++;
	all = tdbp_alloc(sizeof(*all) * (n ? n : 1));
	if (!all) {
		tdbp_mutex_unlock(e->lock);
		return -ENOMEM;
	}
	for (t = e->tables, i = n; t; t = t->next) {
		tdb_fetch_add(&t->refs, 1);
		all[--i] = t;          /* creation order */
	}
	tdbp_mutex_unlock(e->lock);
	for (i = 0; i < n; i++) {
		if (!ret) {
			tdbe_table_stat(all[i], &st);
			ret = fn(arg, all[i]->name, &st);
		}
		table_unref(all[i]);
	}
	tdbp_free(all);
	return ret;
}

const char *tdbe_table_name(const struct tdbe_table *t)
{
	return t->name;
}

const struct tdbp_region *tdbe_table_region(const struct tdbe_table *t)
{
	return t->region;
}

int tdbe_table_fd(const struct tdbe_table *t)
{
	return tdbp_region_fd(t->region);
}

/* --- what mapped readers follow ----------------------------------------- */

/* The caller's seqcount protocol orders the stores (its write_begin
 * issues the write barrier after the odd value, its write_end releases
 * the even one); this store follows it with the same ordering. */
void tdbe_table_publish_seq(struct tdbe_table *t, uint64_t seq)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);

	if (seq & 1) {
		tdb_store_relaxed(&h->commit_seq, seq);
		tdb_smp_wmb();
	} else {
		tdb_store_release(&h->commit_seq, seq);
	}
}

void tdbe_table_revoke_maps(struct tdbe_table *t)
{
	struct tdb_region_hdr *h = tdb_hdr(&t->map);

	tdb_store_release(&h->map_gen, h->map_gen + 1);
	tdb_smp_mb();
}

uint32_t tdbe_table_map_gen(const struct tdbe_table *t)
{
	return tdb_load_acquire(&tdb_hdr(&t->map)->map_gen);
}

uint32_t tdbe_table_max_extents(const struct tdbe_table *t)
{
	return t->max_extents;
}

/* tdbr_grow stores map.ext[n] before it publishes nextents = n + 1. */
const void *tdbe_table_extent(const struct tdbe_table *t, uint32_t idx)
{
	const struct tdb_region_hdr *h = tdb_hdr(&t->map);

	if (!h || idx >= tdb_load_acquire(&h->nextents))
		return NULL;
	return t->map.ext[idx];
}

/* --- records ----------------------------------------------------------- */

static int check_key(const void *key, size_t klen, struct tdbe_extack *ext)
{
	if (!key || klen < TDBE_KEY_MIN) {
		TDB_EXTACK(ext, "key is empty");
		return -EINVAL;
	}
	if (klen > TDBE_KEY_MAX) {
		TDB_EXTACK(ext, "key is longer than TDBE_KEY_MAX (4096 bytes)");
		return -E2BIG;
	}
	return 0;
}

static inline void make_key(const struct tdbe_table *t, struct tdb_key *k,
			    const void *key, size_t klen)
{
	k->data = key;
	k->len = klen;
	k->hash = tdbp_hash64(key, klen, tdb_hdr(&t->map)->seed);
}

int tdbe_put(struct tdbe_table *t, const void *key, size_t klen,
	     const void *val, size_t vlen, unsigned int flags,
	     struct tdbe_extack *ext)
{
	return tdbe_put_ver(t, key, klen, val, vlen, flags, 0, ext);
}

int tdbe_put_ver(struct tdbe_table *t, const void *key, size_t klen,
		 const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, struct tdbe_extack *ext)
{
	return tdbe_put_ex(t, key, klen, val, vlen, flags, version, 0, ext);
}

/* Forget old's figures: it was replaced or removed. */
static void rec_gone(struct tdb_region_hdr *h, const struct tdb_rec *o)
{
	h->bytes_used -= o->klen + o->vlen;
	if (o->flags & TDB_REC_F_DEADLINE)
		h->nexpiring--;
}

int tdbe_put_ex(struct tdbe_table *t, const void *key, size_t klen,
		const void *val, size_t vlen, unsigned int flags,
		uint64_t version, uint64_t deadline, struct tdbe_extack *ext)
{
	return tdbe_put_acc(t, key, klen, val, vlen, flags, version, deadline,
			    0, ext);
}

int tdbe_put_acc(struct tdbe_table *t, const void *key, size_t klen,
		 const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, uint64_t deadline, uint32_t access,
		 struct tdbe_extack *ext)
{
	unsigned int rf = (deadline ? TDB_REC_F_DEADLINE : 0) |
			  (flags & TDBE_ACCESS ? TDB_REC_F_ACCESS : 0);
	struct tdb_region_hdr *h;
	struct tdb_key k;
	struct tdb_rec *r;
	uint64_t rec, old;
	int err = check_key(key, klen, ext);

	if (err)
		return err;
	if (vlen > TDBE_VALUE_MAX) {
		TDB_EXTACK(ext, "value is longer than TDBE_VALUE_MAX (1 MiB)");
		return -E2BIG;
	}
	if (vlen && !val) {
		TDB_EXTACK(ext, "value is NULL");
		return -EINVAL;
	}
	if (flags & ~(unsigned int)(TDBE_NOOVERWRITE | TDBE_ACCESS)) {
		TDB_EXTACK(ext, "unknown put flag");
		return -EINVAL;
	}
	if (version > TDB_REC_VERSION_MAX) {
		TDB_EXTACK(ext, "version is over 2^59 - 1, the most a record "
			   "holds (layout.h, TDB_REC_VERSION_MAX)");
		return -EOVERFLOW;
	}
	make_key(t, &k, key, klen);

	tdbp_mutex_lock(t->wlock);
	h = tdb_hdr(&t->map);
	/* A no-overwrite put of a present key must say -EEXIST even when the
	 * table is full, so look before allocating. */
	if (flags & TDBE_NOOVERWRITE) {
		uint64_t cur = tdbi_lookup(&t->map, &k);

		if (cur && !tdb_rec_dead(t, tdb_ptr(&t->map, cur))) {
			TDB_EXTACK(ext, "key exists and no-overwrite was "
				   "asked");
			err = -EEXIST;
			goto out;
		}
	}
	if (h->oroot && tdbb_reserve(t)) {
		err = -ENOSPC;
		goto nospace;
	}
	rec = tdb_alloc_reclaim(t, tdb_rec_size(klen, vlen, rf));
	if (!rec) {
		err = -ENOSPC;
		goto nospace;
	}
	/* Fill the record completely before the index publishes it. */
	r = tdb_ptr(&t->map, rec);
	r->klen = (uint32_t)klen & 0x1fff;
	r->flags = rf & 7;
	r->vlen = (uint32_t)vlen & 0x1fffff;
	tdb_rec_set_version(r, version);
	memcpy(r->data, key, klen);
	if (vlen)
		memcpy(r->data + klen, val, vlen);
	if (deadline)
		memcpy(r->data + klen + vlen, &deadline, sizeof(deadline));
	if (rf & TDB_REC_F_ACCESS)
		memcpy(tdb_rec_access(r), &access, sizeof(access));
	err = tdbi_insert(t, &k, rec, &old);
	if (err) {
		tdba_free(t, rec);     /* never published */
		goto nospace;
	}
	if (h->oroot) {
		if (old)
			tdbb_replace(t, key, klen, old, rec);
		else
			tdbb_insert(t, key, klen, rec);
	}
	if (old) {
		rec_gone(h, tdb_ptr(&t->map, old));
		tdb_retire(t, old);
	} else {
		h->nrecords++;
	}
	h->bytes_used += klen + vlen;
	if (deadline)
		h->nexpiring++;
	limbo_maybe_reclaim(t);
	goto out;
nospace:
	if (h->nextents >= t->max_extents)
		TDB_EXTACK(ext, "table is full: at its max_extents cap");
	else
		TDB_EXTACK(ext, "host memory for the table ran out");
	err = h->nextents >= t->max_extents ? -ENOSPC : -ENOMEM;
out:
	tdbp_mutex_unlock(t->wlock);
	return err;
}

int tdbe_del(struct tdbe_table *t, const void *key, size_t klen,
	     struct tdbe_extack *ext)
{
	return tdbe_del_ex(t, key, klen, 0, ext);
}

int tdbe_del_ex(struct tdbe_table *t, const void *key, size_t klen,
		unsigned int flags, struct tdbe_extack *ext)
{
	struct tdb_region_hdr *h;
	struct tdb_key k;
	uint64_t rec;
	int err = check_key(key, klen, ext);

	if (err)
		return err;
	if (flags & ~(unsigned int)(TDBE_DEL_EXPIRED | TDBE_DEL_ANY)) {
		TDB_EXTACK(ext, "unknown del flag");
		return -EINVAL;
	}
	make_key(t, &k, key, klen);
	tdbp_mutex_lock(t->wlock);
	h = tdb_hdr(&t->map);
	/* An expired record is absent to a plain delete (it stays for the
	 * sweep); the sweep's delete takes only an expired one; replay's
	 * takes either.  A table with no deadline anywhere (nexpiring 0)
	 * needs no look first. */
	rec = 1;
	if (h->nexpiring && !(flags & TDBE_DEL_ANY)) {
		rec = tdbi_lookup(&t->map, &k);
		if (rec && tdb_rec_dead(t, tdb_ptr(&t->map, rec)) !=
			   !!(flags & TDBE_DEL_EXPIRED))
			rec = 0;
	} else if (flags & TDBE_DEL_EXPIRED) {
		rec = 0;
	}
	if (rec && h->oroot && tdbb_reserve(t)) {
		TDB_EXTACK(ext, "no room for the ordered index's change");
		err = -ENOSPC;
		goto out;
	}
	if (rec)
		rec = tdbi_remove(t, &k);
	if (rec && h->oroot)
		tdbb_remove(t, key, klen, rec);
	if (rec) {
		h->nrecords--;
		rec_gone(h, tdb_ptr(&t->map, rec));
		tdb_retire(t, rec);
		limbo_maybe_reclaim(t);
	} else {
		TDB_EXTACK(ext, flags & TDBE_DEL_EXPIRED ?
			   "no such key expired" : "no such key");
		err = -ENOENT;
	}
out:
	tdbp_mutex_unlock(t->wlock);
	return err;
}

void tdbe_read_lock(void)
{
	tdbp_rcu_read_lock();
}

void tdbe_read_unlock(void)
{
	tdbp_rcu_read_unlock();
}

int tdbe_lookup(struct tdbe_table *t, const void *key, size_t klen,
		const void **val, size_t *vlen)
{
	return tdbe_lookup_ver(t, key, klen, val, vlen, NULL);
}

int tdbe_lookup_ver(struct tdbe_table *t, const void *key, size_t klen,
		    const void **val, size_t *vlen, uint64_t *version)
{
	return tdbe_lookup_ex(t, key, klen, val, vlen, version, NULL);
}

int tdbe_lookup_ex(struct tdbe_table *t, const void *key, size_t klen,
		   const void **val, size_t *vlen, uint64_t *version,
		   uint64_t *deadline)
{
	struct tdb_key k;
	const struct tdb_rec *r;
	uint64_t rec;

	if (check_key(key, klen, NULL))
		return check_key(key, klen, NULL);
	make_key(t, &k, key, klen);
	rec = tdbi_lookup(&t->map, &k);
	if (!rec)
		return -ENOENT;
	r = tdb_ptr(&t->map, rec);
	if (tdb_rec_dead(t, r))
		return -ENOENT;
	*val = r->data + r->klen;
	*vlen = r->vlen;
	if (version)
		*version = tdb_rec_version(r);
	if (deadline)
		*deadline = tdb_rec_deadline(r);
	return 0;
}

unsigned int tdbe_lookup_many(struct tdbe_table *t,
			      struct tdbe_lookup_req *req, unsigned int n)
{
	struct tdb_key k[TDBE_LOOKUP_GROUP];
	uint64_t rec[TDBE_LOOKUP_GROUP];
	unsigned int base, i, g, found = 0;
	unsigned int idx[TDBE_LOOKUP_GROUP];

	for (base = 0; base < n; base += TDBE_LOOKUP_GROUP) {
		unsigned int end = n - base < TDBE_LOOKUP_GROUP
					   ? n : base + TDBE_LOOKUP_GROUP;

		for (g = 0, i = base; i < end; i++) {
			req[i].err = check_key(req[i].key, req[i].klen, NULL);
			if (req[i].err)
				continue;
			make_key(t, &k[g], req[i].key, req[i].klen);
			idx[g++] = i;
		}
		tdbi_lookup_group(&t->map, k, g, rec);
		for (i = 0; i < g; i++) {
			struct tdbe_lookup_req *r = &req[idx[i]];
			const struct tdb_rec *rp;

			if (!rec[i]) {
				r->err = -ENOENT;
				continue;
			}
			rp = tdb_ptr(&t->map, rec[i]);
			if (tdb_rec_dead(t, rp)) {
				r->err = -ENOENT;
				continue;
			}
			r->val = rp->data + rp->klen;
			r->vlen = rp->vlen;
			r->version = tdb_rec_version(rp);
			r->deadline = tdb_rec_deadline(rp);
			found++;
		}
	}
	return found;
}

long tdbe_get(struct tdbe_table *t, const void *key, size_t klen,
	      void *buf, size_t cap, size_t *need)
{
	return tdbe_get_ver(t, key, klen, buf, cap, need, NULL);
}

long tdbe_get_ver(struct tdbe_table *t, const void *key, size_t klen,
		  void *buf, size_t cap, size_t *need, uint64_t *version)
{
	return tdbe_get_ex(t, key, klen, buf, cap, need, version, NULL);
}

long tdbe_get_ex(struct tdbe_table *t, const void *key, size_t klen,
		 void *buf, size_t cap, size_t *need, uint64_t *version,
		 uint64_t *deadline)
{
	const void *v;
	size_t vlen;
	long ret;

	tdbp_rcu_read_lock();
	ret = tdbe_lookup_ex(t, key, klen, &v, &vlen, version, deadline);
	if (!ret) {
		if (need)
			*need = vlen;
		if (vlen > cap) {
			ret = -ENOBUFS;
		} else {
			if (vlen)
				memcpy(buf, v, vlen);
			ret = (long)vlen;
		}
	}
	tdbp_rcu_read_unlock();
	return ret;
}

/* --- eviction's helpers ------------------------------------------------- */

uint32_t *tdbe_rec_access(const void *val, size_t klen)
{
	const struct tdb_rec *r = (const struct tdb_rec *)
		((const unsigned char *)val - klen - TDB_REC_HDR);

	return r->flags & TDB_REC_F_ACCESS ? tdb_rec_access(r) : NULL;
}

int tdbe_sample(struct tdbe_table *t, uint64_t rnd, void *keybuf,
		struct tdbe_sample *out)
{
	const struct tdb_rec *r;
	uint64_t rec;

	tdbp_rcu_read_lock();
	rec = tdbi_sample(&t->map, rnd);
	if (!rec) {
		tdbp_rcu_read_unlock();
		return -ENOENT;
	}
	r = tdb_ptr(&t->map, rec);
	memcpy(keybuf, r->data, r->klen);
	out->key = keybuf;
	out->klen = r->klen;
	out->version = tdb_rec_version(r);
	out->deadline = tdb_rec_deadline(r);
	out->expired = tdb_rec_dead(t, r);
	out->has_access = r->flags & TDB_REC_F_ACCESS;
	out->access = 0;
	if (out->has_access)
		memcpy(&out->access, tdb_rec_access(r), sizeof(out->access));
	tdbp_rcu_read_unlock();
	return 0;
}

bool tdbe_expired(struct tdbe_table *t, const void *key, size_t klen)
{
	struct tdb_key k;
	uint64_t rec;
	bool dead;

	if (check_key(key, klen, NULL))
		return false;
	make_key(t, &k, key, klen);
	tdbp_rcu_read_lock();
	rec = tdbi_lookup(&t->map, &k);
	dead = rec && tdb_rec_dead(t, tdb_ptr(&t->map, rec));
	tdbp_rcu_read_unlock();
	return dead;
}

unsigned int tdbe_touch_hash(struct tdbe_table *t, uint64_t hash,
			     void (*fn)(void *arg, uint32_t *word), void *arg)
{
	uint64_t rec[TDBI_BUCKET_MAX_HITS];
	unsigned int i, n = tdbi_tag_hits(&t->map, hash, rec,
					  TDBI_BUCKET_MAX_HITS);

	for (i = 0; i < n; i++) {
		struct tdb_rec *r = tdb_ptr(&t->map, rec[i]);

		if (r->flags & TDB_REC_F_ACCESS)
			fn(arg, tdb_rec_access(r));
	}
	return n;
}

_Static_assert(TDBE_READER_TOUCH == TDB_HDR_F_TOUCH, "one flag, two names");

void tdbe_table_reader_flags(struct tdbe_table *t, uint32_t flags)
{
	tdb_store_relaxed(&tdb_hdr(&t->map)->reader_flags, flags);
}

void tdbe_table_reclaim(struct tdbe_table *t)
{
	tdbp_mutex_lock(t->wlock);
	limbo_reclaim(t);
	tdbp_mutex_unlock(t->wlock);
}
_Static_assert(sizeof(struct tdb_rec) == TDB_REC_HDR &&
	       offsetof(struct tdb_rec, data) == TDB_REC_HDR,
	       "struct tdb_rec is the 12-byte header of layout version 5");
_Static_assert(TDBE_KEY_MAX < 1u << 13 && TDBE_VALUE_MAX < 1u << 21,
	       "struct tdb_rec's klen and vlen bit-fields hold every length");
