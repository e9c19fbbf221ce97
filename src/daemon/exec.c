/*
 * exec.c - running one request against the engine and answering it;
 * dumps (SCAN, TABLE_LIST, snapshot SCANs) that go on as the client
 * drains its answers.
 *
 * Every request gets exactly one answer (tdb/proto.h): an ack or error
 * (NLMSG_ERROR), a reply, or dump parts ending in NLMSG_DONE.  Access is
 * checked on every request against the client's SO_PEERCRED identity,
 * never against anything the client says.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tdbd.h"
#include "wal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#define CURSOR_V1 1     /* opaque SCAN cursor: this byte, then the key */

struct rq {
	struct client *c;
	enum chan ch;
	struct tdb_proto_msg m;
	struct tdb_proto_extack ext;
	uint64_t lsn;           /* the WAL record of the change it made */
};

/* --- answers ------------------------------------------------------------ */

static void answer_err(struct rq *r, int err)
{
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	long n;

	if (err) {
		__atomic_fetch_add(&r->c->d->ctr.errors, 1, __ATOMIC_RELAXED);
		if (!r->ext.msg)
			r->ext.msg = tdbe_strerror(err);
	}
	n = tdb_proto_error(buf, sizeof(buf), r->m.nlh, err, &r->ext);
	if (n > 0)
		tdbd_client_emit(r->c, r->ch, buf, (size_t)n);
}

/*
 * Every answer is built in private memory (the worker's scratch buffer,
 * TDB_PROTO_MSG_MAX bytes) and then copied into the completion ring or
 * the socket's output once.  Never in the ring itself: the client can map
 * the completion memfd writable, and libmnl reads nlmsg_len back from the
 * message it is building, so a client moving it under us would steer our
 * writes (docs/PROTOCOL.md, "The trust boundary").
 */
static void *answer_buf(struct client *c)
{
	return c->w->scratch;
}

/* Build and send an answer message described by m. */
static int answer_msg(struct client *c, enum chan ch, struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext = { 0 };
	long len = tdb_proto_size(TDB_PROTO_ANSWER, m, &ext);
	void *p = answer_buf(c);

	if (len < 0)
		return (int)len;
	if (tdb_proto_build(p, (size_t)len, TDB_PROTO_ANSWER, m, &ext) != len)
		return -EINVAL;
	tdbd_client_emit(c, ch, p, (size_t)len);
	return 0;
}

static void reply_init(struct rq *r, struct tdb_proto_msg *a, uint32_t attrs)
{
	memset(a, 0, sizeof(*a));
	a->cmd = r->m.cmd;
	a->seq = r->m.seq;
	a->pid = r->m.pid;
	a->attrs = attrs;
}

/* --- helpers ------------------------------------------------------------ */

/* The table the request names, through the client's one-entry cache. */
static struct dtable *resolve(struct rq *r, int *err)
{
	struct client *c = r->c;
	uint64_t gen = tdbd_table_gen(c->d);

	if (c->cache && c->cache_gen == gen &&
	    !strcmp(c->cache->name, r->m.table))
		return c->cache;
	tdbd_table_put(c->d, c->cache);
	c->cache = tdbd_table_get(c->d, r->m.table);
	c->cache_gen = gen;
	if (!c->cache) {
		r->ext.msg = "no such table";
		r->ext.offset = r->m.attr_off[TDB_A_TABLE];
		*err = -ENOENT;
	}
	return c->cache;
}

static struct dtable *resolve_may(struct rq *r, unsigned int want, int *err)
{
	struct dtable *dt = resolve(r, err);

	if (dt && !tdbd_may(&r->c->cr, dt, want)) {
		r->ext.msg = want & MAY_WRITE ?
			"permission denied: the table's mode does not let "
			"you write it" :
			"permission denied: the table's mode does not let "
			"you read it";
		*err = -EACCES;
		return NULL;
	}
	if (dt && dt->aside) {  /* only DROP (resolve) reaches it */
		r->ext.msg = dt->aside;
		r->ext.offset = r->m.attr_off[TDB_A_TABLE];
		*err = -EIO;
		return NULL;
	}
	return dt;
}

static struct txn *find_txn(struct rq *r, int *err)
{
	struct txn *x;

	for (x = r->c->txns; x; x = x->next)
		if (x->id == r->m.txn)
			return x;
	r->ext.msg = "no such transaction on this connection";
	r->ext.offset = r->m.attr_off[TDB_A_TXN];
	*err = -ENOENT;
	return NULL;
}

/* A value in one piece (fragments gathered into *buf, freed by caller). */
static const void *value_of(const struct tdb_proto_msg *m, void **buf)
{
	*buf = NULL;
	if (m->value_frags <= 1)
		return m->value;
	*buf = malloc(m->value_len);
	if (*buf)
		tdb_proto_value_copy(m, *buf);
	return *buf;
}

/* The table's seqcount (txn.c): wait out a commit to this table. */
static uint64_t seq_begin(const struct dtable *dt)
{
	uint64_t s;

	while ((s = __atomic_load_n(&dt->seq, __ATOMIC_ACQUIRE)) & 1)
		cpu_relax();
	return s;
}

static bool seq_retry(const struct dtable *dt, uint64_t s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&dt->seq, __ATOMIC_RELAXED) != s;
}

/* --- commands ----------------------------------------------------------- */

static int do_get(struct rq *r)
{
	struct client *c = r->c;
	struct tdb_proto_msg a;
	struct txn *x = NULL;
	struct dtable *dt;
	int err = 0;

	dt = resolve_may(r, MAY_READ, &err);
	if (!dt)
		return err;
	if (TDB_PROTO_HAS(&r->m, TDB_A_TXN)) {
		const void *v;
		size_t vl;

		if (!(x = find_txn(r, &err)))
			return err;
		err = tdbd_txn_find(x, dt, r->m.key, r->m.key_len, &v, &vl);
		if (err == 0) {
			r->ext.msg = "no such key (deleted in this transaction)";
			return -ENOENT;
		}
		if (err == 1) {
			reply_init(r, &a, TDB_PROTO_BIT(TDB_A_VALUE));
			a.value = v;
			a.value_len = (uint32_t)vl;
			err = answer_msg(c, r->ch, &a);
			return err ? err : 1;
		}
	}
	reply_init(r, &a, TDB_PROTO_BIT(TDB_A_VALUE));
	for (;;) {
		uint64_t s = seq_begin(dt);
		const void *v;
		size_t vl;
		void *p = answer_buf(c);
		long len = 0;

		tdbe_read_lock();
		err = tdbe_lookup(dt->t, r->m.key, r->m.key_len, &v, &vl);
		if (!err) {
			a.value = v;
			a.value_len = (uint32_t)vl;
			len = tdb_proto_size(TDB_PROTO_ANSWER, &a, NULL);
			if (len < 0 || tdb_proto_build(p, (size_t)len,
					TDB_PROTO_ANSWER, &a, NULL) != len)
				err = -EINVAL;
		}
		tdbe_read_unlock();
		if (seq_retry(dt, s))
			continue;
		if (err) {
			r->ext.msg = err == -ENOENT ? "no such key" : NULL;
			return err;
		}
		tdbd_client_emit(c, r->ch, p, (size_t)len);
		return 1;
	}
}

/* Does the key exist?  Under wlock, so the answer holds until we let go. */
static bool key_exists(struct dtable *dt, const void *key, size_t klen)
{
	size_t need;

	return tdbe_get(dt->t, key, klen, NULL, 0, &need) != -ENOENT;
}

/*
 * Under wlock: log the change, then apply it.  A change that is sure to
 * fail (deleting a missing key, a no-overwrite put of a present one) is
 * refused before it is logged; one the engine refuses anyway (the table
 * at its cap) has its record taken back.
 */
static int apply_put_del(struct tdbd *d, struct dtable *dt, bool del,
			 struct rq *r, const void *val, struct tdbe_extack *ee)
{
	const void *key = r->m.key;
	size_t klen = r->m.key_len;
	int err;

	if (dt->dropped) {
		ee->msg = "no such table";
		return -ENOENT;
	}
	if (del && !key_exists(dt, key, klen))
		return -ENOENT;
	if (!del && r->m.flags & TDB_PUT_NOOVERWRITE && key_exists(dt, key, klen))
		return -EEXIST;
	err = del ? tdbd_log_del(d, dt, key, klen, &r->lsn, &ee->msg) :
		    tdbd_log_put(d, dt, key, klen, val, r->m.value_len, &r->lsn,
				 &ee->msg);
	if (err)
		return err;
	tdbd_snap_save(dt, key, klen);  /* the pre-image, before the change */
	err = del ? tdbe_del(dt->t, key, klen, ee) :
		    tdbe_put(dt->t, key, klen, val, r->m.value_len,
			     r->m.flags & TDB_PUT_NOOVERWRITE ?
			     TDBE_NOOVERWRITE : 0, ee);
	if (err) {
		tdbd_log_retract(d, r->lsn);
		r->lsn = 0;
		return err;
	}
	tdbd_dirty_add(dt, key, klen);
	if (!del)
		tdbd_mem_note(d, dt);
	if (del)
		tdbd_feed_del(d, dt, key, klen);
	else
		tdbd_feed_put(d, dt, key, klen, val, r->m.value_len);
	return 0;
}

static int do_put_del(struct rq *r, bool del)
{
	struct client *c = r->c;
	struct tdbd *d = c->d;
	struct tdbe_extack ee = { 0 };
	struct dtable *dt;
	const void *val = NULL;
	void *buf = NULL;
	int err = 0;

	dt = resolve_may(r, MAY_WRITE, &err);
	if (!dt)
		return err;
	if (!del && (err = tdbd_mem_check(d, &r->ext)))
		return err;     /* max-memory: puts add data, deletes go on */
	if (!del && !(val = value_of(&r->m, &buf)))
		return -ENOMEM;
	if (TDB_PROTO_HAS(&r->m, TDB_A_TXN)) {
		struct txn *x = find_txn(r, &err);

		if (x)
			err = tdbd_txn_add(d, x, dt, del, r->m.flags, r->m.key,
					   r->m.key_len, val, r->m.value_len,
					   &r->ext);
		free(buf);
		return err;
	}
	pthread_mutex_lock(&d->wlock);
	err = apply_put_del(d, dt, del, r, val, &ee);
	pthread_mutex_unlock(&d->wlock);
	free(buf);
	if (err == -ENOENT && del && !ee.msg)
		ee.msg = "no such key";
	if (err == -EEXIST)
		ee.msg = "key exists (no-overwrite put)";
	if (err == -ENOSPC && !ee.msg)
		ee.msg = "table is full (at its max-extents cap)";
	r->ext.msg = ee.msg;
	return err;
}

static bool in_groups(const struct creds *cr, gid_t g)
{
	unsigned int i;

	if (cr->gid == g)
		return true;
	for (i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == g)
			return true;
	return false;
}

static int do_create(struct rq *r)
{
	struct tdbd *d = r->c->d;
	const struct creds *cr = &r->c->cr;
	uint32_t uid = cr->uid, gid = cr->gid, mode = d->cfg.table_mode;
	uint32_t max_ext;
	struct dtable *dt;
	int err;

	if (TDB_PROTO_HAS(&r->m, TDB_A_UID))
		uid = r->m.uid;
	if (TDB_PROTO_HAS(&r->m, TDB_A_GID))
		gid = r->m.gid;
	if (TDB_PROTO_HAS(&r->m, TDB_A_MODE))
		mode = r->m.mode;
	if (cr->uid != 0 && uid != cr->uid) {
		r->ext.msg = "only root may create a table owned by another "
			     "user";
		r->ext.offset = r->m.attr_off[TDB_A_UID];
		return -EPERM;
	}
	if (cr->uid != 0 && !in_groups(cr, gid)) {
		r->ext.msg = "the table's group must be one of yours";
		r->ext.offset = r->m.attr_off[TDB_A_GID];
		return -EPERM;
	}
	if ((err = tdbd_mem_check(d, &r->ext)))
		return err;     /* max-memory: a table is at least an extent */
	max_ext = TDB_PROTO_HAS(&r->m, TDB_A_MAX_EXTENTS) ? r->m.max_extents : 0;
	pthread_mutex_lock(&d->wlock);
	if ((dt = tdbd_table_get(d, r->m.table))) {
		r->ext.msg = dt->aside ? "table exists (set aside at start: "
			     "its data is kept; DROP discards it)" :
			     "table exists";
		tdbd_table_put(d, dt);
		err = -EEXIST;
	} else if (tdbd_table_count(d) >= TDBD_TABLES_MAX) {
		r->ext.msg = "too many tables (4000, the checkpoint store's "
			     "limit)";
		err = -EMFILE;
	} else if (cr->uid != 0 && max_ext <= TDBE_EXTENTS_MAX &&
		   (err = tdbd_table_quota_check(d, uid, max_ext,
						 &r->ext.msg))) {
		/* charged to the owner; root creates for anyone */
	} else {
		err = tdbd_log_create(d, r->m.table, d->next_table_id + 1, uid,
				      gid, mode, max_ext, &r->lsn, &r->ext.msg);
	}
	if (!err) {
		err = tdbd_table_create(d, r->m.table, max_ext, uid, gid, mode,
					d->next_table_id + 1, NULL, &r->ext);
		if (err) {
			tdbd_log_retract(d, r->lsn);
			r->lsn = 0;
		}
	}
	pthread_mutex_unlock(&d->wlock);
	return err;
}

static int do_drop(struct rq *r)
{
	struct tdbd *d = r->c->d;
	struct dtable *dt;
	int err = 0;

	dt = resolve(r, &err);
	if (!dt)
		return err;
	if (r->c->cr.uid != 0 && r->c->cr.uid != dt->uid) {
		r->ext.msg = "only the table's owner or root may drop it";
		return -EPERM;
	}
	pthread_mutex_lock(&d->wlock);
	if (dt->dropped) {
		r->ext.msg = "no such table";
		err = -ENOENT;
	} else {
		err = tdbd_log_drop(d, dt->name, &r->lsn, &r->ext.msg);
	}
	if (!err && (err = tdbd_table_drop(d, dt, &r->ext))) {
		tdbd_log_retract(d, r->lsn);
		r->lsn = 0;
	}
	pthread_mutex_unlock(&d->wlock);
	return err;
}

static void fill_stat(struct dtable *dt, struct tdb_proto_stat *ps)
{
	struct tdbe_table_stat st;

	if (dt->aside) {
		/* no engine table: the figures it must send are 0 */
		memset(ps, 0, sizeof(*ps));
		ps->present = 0x7ffc;   /* TDB_STAT_A_RECORDS .. STATE */
		ps->max_extents = dt->max_extents;
		ps->uid = dt->uid;
		ps->gid = dt->gid;
		ps->mode = dt->mode;
		ps->state = TDB_TABLE_SET_ASIDE;
		return;
	}
	tdbe_table_stat(dt->t, &st);
	ps->present = 0x7ffc;           /* TDB_STAT_A_RECORDS .. STATE */
	ps->state = 0;
	ps->records = st.records;
	ps->bytes_used = st.bytes_used;
	ps->bytes_allocated = st.bytes_allocated;
	ps->bytes_pending = st.bytes_pending;
	ps->extents = st.extents;
	ps->max_extents = st.max_extents;
	ps->page_size = st.page_size;
	ps->index_nodes = st.index_nodes;
	ps->index_buckets = st.index_buckets;
	ps->uid = dt->uid;
	ps->gid = dt->gid;
	ps->mode = dt->mode;
}

static int do_stat(struct rq *r)
{
	struct tdb_proto_msg a;
	struct dtable *dt;
	int err = 0;

	dt = resolve_may(r, MAY_READ, &err);
	if (!dt)
		return err;
	reply_init(r, &a, TDB_PROTO_BIT(TDB_A_TABLE) |
		   TDB_PROTO_BIT(TDB_A_STAT));
	a.table = dt->name;
	a.table_len = (uint32_t)strlen(dt->name);
	fill_stat(dt, &a.stat);
	err = answer_msg(r->c, r->ch, &a);
	return err ? err : 1;
}

static int do_stats(struct rq *r)
{
	struct tdbd *d = r->c->d;
	struct counters *k = &d->ctr;
	struct tdb_proto_msg a;
	struct tdb_proto_counters *o = &a.counters;

	reply_init(r, &a, TDB_PROTO_BIT(TDB_A_COUNTERS));
	o->present = 0x3fffffc;         /* TDB_CTR_A_TABLES .. TABLES_ASIDE */
#define LD(x) __atomic_load_n(&k->x, __ATOMIC_RELAXED)
	o->tables = tdbd_table_count(d);
	o->tables_aside = tdbd_table_count_aside(d);
	o->clients = LD(clients);
	o->watches = LD(watches);
	o->txns = LD(txns);
	o->requests = LD(requests);
	o->errors = LD(errors);
	o->uptime_ms = (tdbd_now_ns() - d->start_ns) / 1000000;
	o->accepted = LD(accepted);
	o->cleanups = LD(cleanups);
	o->txns_aborted = LD(txns_aborted);
	o->watches_dropped = LD(watches_dropped);
	o->rings = LD(rings);
	o->rings_freed = LD(rings_freed);
	o->stuck = LD(stuck);
	o->violations = LD(violations);
	o->throttled = LD(throttled);
	o->dumps = LD(dumps);
	o->wal_records = LD(wal_records);
	o->checkpoints = LD(checkpoints);
	o->ckpt_failures = LD(ckpt_failures);
	o->ckpt_lsn = LD(ckpt_lsn);
	o->wal_lsn = wal_written(d->wal);
	o->wal_durable = wal_durable(d->wal);
#undef LD
	return answer_msg(r->c, r->ch, &a) ?: 1;
}

static int do_txn(struct rq *r)
{
	struct client *c = r->c;
	struct tdbd *d = c->d;
	struct tdb_proto_msg a;
	struct txn *x, **pp;
	int err = 0;

	if (r->m.cmd == TDB_CMD_TXN_BEGIN) {
		if (c->ntxns >= d->cfg.max_txns) {
			r->ext.msg = "too many open transactions on this "
				     "connection (max-txns)";
			return -EBUSY;
		}
		if (!(x = tdbd_txn_new(d, c->cr.uid)))
			return -ENOMEM;
		x->next = c->txns;
		c->txns = x;
		c->ntxns++;
		__atomic_fetch_add(&d->ctr.txns, 1, __ATOMIC_RELAXED);
		reply_init(r, &a, TDB_PROTO_BIT(TDB_A_TXN));
		a.txn = x->id;
		return answer_msg(c, r->ch, &a) ?: 1;
	}
	if (!(x = find_txn(r, &err)))
		return err;
	for (pp = &c->txns; *pp != x; pp = &(*pp)->next)
		;
	*pp = x->next;
	c->ntxns--;
	__atomic_fetch_sub(&d->ctr.txns, 1, __ATOMIC_RELAXED);
	if (r->m.cmd == TDB_CMD_TXN_COMMIT) {
		if (tdbd_commit_async(c, r->ch, x, r->m.nlh))
			return 1;       /* answered when it is done */
		err = tdbd_txn_commit(d, x, &r->lsn, &r->ext);
	}
	tdbd_txn_free(d, x);
	return err;
}

/* --- watches --------------------------------------------------------------- */

static uint64_t watch_hash(const struct client *c, const char *name,
			   const void *prefix, size_t plen)
{
	return XXH64(prefix, plen, XXH64(name, strlen(name), c->wseed));
}

static struct watch **watch_chain(struct client *c, uint64_t hash)
{
	return &c->watches[hash & (c->nwbuckets - 1)];
}

static bool watch_is(const struct watch *wa, uint64_t hash, const char *name,
		     const struct tdb_proto_msg *m)
{
	return wa->hash == hash && wa->plen == m->prefix_len &&
	       !strcmp(wa->dt->name, name) &&
	       (!wa->plen || !memcmp(wa->prefix, m->prefix, wa->plen));
}

/* The newest watch of the named table (dt: that table only; NULL: a
 * dropped one too) with m's prefix; *prev the link to it. */
static struct watch *find_watch(struct client *c, const struct dtable *dt,
				const char *name,
				const struct tdb_proto_msg *m,
				struct watch ***prev)
{
	uint64_t hash;
	struct watch **pp;

	if (!c->nwatches)
		return NULL;
	hash = watch_hash(c, name, m->prefix, m->prefix_len);
	for (pp = watch_chain(c, hash); *pp; pp = &(*pp)->next)
		if ((!dt || (*pp)->dt == dt) && watch_is(*pp, hash, name, m)) {
			*prev = pp;
			return *pp;
		}
	return NULL;
}

/* Room in the index for one more watch (chains stay short). */
static int watch_grow(struct client *c)
{
	unsigned int n = c->nwbuckets ? c->nwbuckets * 2 : 16, i;
	struct watch **v;

	if (c->nwatches < c->nwbuckets)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (!c->nwbuckets)
		c->wseed = tdbp_random_u64();
	for (i = 0; i < c->nwbuckets; i++) {
		while (c->watches[i]) {
			struct watch *wa = c->watches[i];

			c->watches[i] = wa->next;
			wa->next = v[wa->hash & (n - 1)];
			v[wa->hash & (n - 1)] = wa;
		}
	}
	free(c->watches);
	c->watches = v;
	c->nwbuckets = n;
	return 0;
}

/* Unlink (pp: the link to it) and free a watch of c. */
static void watch_free(struct client *c, struct watch **pp)
{
	struct watch *wa = *pp;

	*pp = wa->next;
	pthread_mutex_lock(&c->d->wlock);
	tdbd_feed_unwatch(wa->dt);
	pthread_mutex_unlock(&c->d->wlock);
	tdbd_table_put(c->d, wa->dt);
	free(wa);
	c->nwatches--;
	__atomic_fetch_sub(&c->d->ctr.watches, 1, __ATOMIC_RELAXED);
}

unsigned int tdbd_watches_drop(struct client *c)
{
	unsigned int i, n = c->nwatches;

	for (i = 0; i < c->nwbuckets; i++)
		while (c->watches[i])
			watch_free(c, &c->watches[i]);
	__atomic_fetch_add(&c->d->ctr.watches_dropped, n, __ATOMIC_RELAXED);
	free(c->watches);
	c->watches = NULL;
	c->nwbuckets = 0;
	return n;
}

/* May c have one more watch?  max-watches bounds the memory, feed
 * references and time a client's watches cost. */
static int watch_room(struct rq *r)
{
	struct client *c = r->c;

	if (c->nwatches >= __atomic_load_n(&c->d->cfg.max_watches,
					   __ATOMIC_RELAXED)) {
		r->ext.msg = "too many watches on this connection "
			     "(max-watches)";
		return -EMFILE;
	}
	return watch_grow(c);
}

static int do_watch(struct rq *r)
{
	struct client *c = r->c;
	struct tdbd *d = c->d;
	struct tdb_proto_extack ack = { 0 };
	struct watch *wa, **pp, **chain;
	struct dtable *dt;
	uint32_t seq = 0;
	int err = 0, fd = -1;

	if (r->ch == CH_RING) {
		r->ext.msg = "WATCH goes over the socket: it passes the "
			     "feed's file descriptor";
		return -EOPNOTSUPP;
	}
	dt = resolve_may(r, MAY_READ, &err);
	if (!dt)
		return err;
	if (find_watch(c, dt, dt->name, &r->m, &pp)) {
		r->ext.msg = "already watching this table with this prefix";
		return -EEXIST;
	}
	if ((err = watch_room(r)))
		return err;
	err = tdbd_client_fds_ready(c);
	if (err == -EAGAIN) {
		r->ext.msg = "answers to earlier requests are still queued on "
			     "the socket: read them before WATCH";
		return err;
	}
	if (err) {
		c->dead = true;
		return 1;
	}
	wa = calloc(1, sizeof(*wa) + r->m.prefix_len);
	if (!wa)
		return -ENOMEM;
	pthread_mutex_lock(&d->wlock);
	err = dt->dropped ? -ENOENT : tdbd_feed_open_ro(d, dt, &fd, &seq);
	if (!err)
		dt->watchers++;
	pthread_mutex_unlock(&d->wlock);
	if (err) {
		free(wa);
		r->ext.msg = err == -ENOENT ? "no such table" :
			     "cannot make the table's change feed";
		return err;
	}
	wa->dt = dt;
	__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	wa->plen = r->m.prefix_len;
	if (wa->plen)
		memcpy(wa->prefix, r->m.prefix, wa->plen);
	wa->hash = watch_hash(c, dt->name, wa->prefix, wa->plen);
	/* At the head of its chain: UNWATCH by name finds the newest. */
	chain = watch_chain(c, wa->hash);
	wa->next = *chain;
	*chain = wa;
	c->nwatches++;
	__atomic_fetch_add(&d->ctr.watches, 1, __ATOMIC_RELAXED);
	/* The cookie: the feed's sequence number where this watch starts,
	 * so the reader misses nothing written before it maps the feed. */
	ack.cookie_len = sizeof(seq);
	memcpy(ack.cookie, &seq, sizeof(seq));
	err = tdbd_client_ack_fds(c, r->m.nlh, &ack, &fd, 1);
	close(fd);
	if (err) {
		c->dead = true;
		if (!c->why)
			c->why = "socket failed while passing a feed";
	}
	return 1;       /* answered */
}

/* UNWATCH names the table; the watch may be of a table dropped since
 * (the name is then free or taken by another table): look in the
 * client's own watches, by name, not in the registry. */
static int do_unwatch(struct rq *r)
{
	struct watch **pp;

	if (!find_watch(r->c, NULL, r->m.table, &r->m, &pp)) {
		r->ext.msg = "not watching this table with this prefix";
		return -ENOENT;
	}
	watch_free(r->c, pp);
	return 0;
}

/* --- dumps ---------------------------------------------------------------- */

static struct dump *dump_new(struct rq *r, int *err)
{
	unsigned int i;

	for (i = 0; i < MAX_DUMPS; i++) {
		struct dump *dp = &r->c->dumps[i];

		if (dp->used)
			continue;
		memset(dp, 0, sizeof(*dp));
		dp->used = true;
		dp->ch = r->ch;
		dp->req = *r->m.nlh;
		dp->cmd = r->m.cmd;
		r->c->ndumps++;
		__atomic_fetch_add(&r->c->d->ctr.dumps, 1, __ATOMIC_RELAXED);
		return dp;
	}
	r->ext.msg = "too many dumps in progress on this connection (8)";
	*err = -EBUSY;
	return NULL;
}

void tdbd_dump_end(struct client *c, struct dump *dp)
{
	unsigned int i;

	tdbe_cursor_close(dp->cur);
	tdbd_snap_free(c->d, dp->snap);
	tdbd_table_put(c->d, dp->dt);
	free(dp->prefix);
	for (i = 0; dp->tabs && i < dp->ntabs; i++)
		tdbd_table_put(c->d, dp->tabs[i]);
	free(dp->tabs);
	memset(dp, 0, sizeof(*dp));
	c->ndumps--;
	__atomic_fetch_sub(&c->d->ctr.dumps, 1, __ATOMIC_RELAXED);
}

static int do_scan(struct rq *r)
{
	bool snap = TDB_PROTO_HAS(&r->m, TDB_A_SCAN_FLAGS) &&
		    (r->m.scan_flags & TDB_SCAN_SNAPSHOT);
	struct dtable *dt;
	struct dump *dp;
	int err = 0;

	dt = resolve_may(r, MAY_READ, &err);
	if (!dt)
		return err;
	if (snap && TDB_PROTO_HAS(&r->m, TDB_A_CURSOR)) {
		r->ext.msg = "a snapshot scan is one dump of the whole table: "
			     "it takes no CURSOR";
		r->ext.offset = r->m.attr_off[TDB_A_CURSOR];
		return -EINVAL;
	}
	if (TDB_PROTO_HAS(&r->m, TDB_A_CURSOR)) {
		const unsigned char *cu = r->m.cursor;

		if (r->m.cursor_len < 2 || cu[0] != CURSOR_V1 ||
		    r->m.cursor_len - 1 > TDB_KEY_MAX) {
			r->ext.msg = "not a cursor this owner made";
			r->ext.offset = r->m.attr_off[TDB_A_CURSOR];
			return -EINVAL;
		}
	}
	if (!(dp = dump_new(r, &err)))
		return err;
	dp->dt = dt;
	__atomic_fetch_add(&dt->refs, 1, __ATOMIC_RELAXED);
	dp->left = TDB_PROTO_HAS(&r->m, TDB_A_LIMIT) ? r->m.limit : UINT64_MAX;
	dp->cur = tdbe_cursor_open(dt->t, &err);
	if (dp->cur && TDB_PROTO_HAS(&r->m, TDB_A_CURSOR))
		err = tdbe_cursor_seek(dp->cur,
				       (const unsigned char *)r->m.cursor + 1,
				       r->m.cursor_len - 1);
	if (!err && r->m.prefix_len) {
		dp->prefix = malloc(r->m.prefix_len);
		if (dp->prefix) {
			memcpy(dp->prefix, r->m.prefix, r->m.prefix_len);
			dp->plen = r->m.prefix_len;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err && snap) {
		/* Under wlock: between two changes, and every later change
		 * to the table saves its pre-image first. */
		pthread_mutex_lock(&r->c->d->wlock);
		dp->snap = tdbd_snap_new(r->c->d, dt, r->c->cr.uid,
					 dp->prefix, dp->plen);
		pthread_mutex_unlock(&r->c->d->wlock);
		if (!dp->snap)
			err = -ENOMEM;
	}
	if (err) {
		tdbd_dump_end(r->c, dp);
		return err;
	}
	return 1;       /* answered by the dump */
}

static int do_list(struct rq *r)
{
	struct dump *dp;
	int err = 0;

	if (!(dp = dump_new(r, &err)))
		return err;
	err = tdbd_table_snapshot(r->c->d, &dp->tabs, &dp->ntabs);
	if (err) {
		tdbd_dump_end(r->c, dp);
		return err;
	}
	return 1;
}

/* End a dump with NLMSG_DONE (err 0 or negative); false if no room. */
static bool dump_done(struct client *c, struct dump *dp, int err,
		      const char *msg)
{
	struct tdb_proto_extack ext = { .msg = msg };
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	long n = tdb_proto_done(buf, sizeof(buf), &dp->req, err, &ext);

	if (n < 0 || !tdbd_client_room(c, dp->ch, (size_t)n))
		return false;
	tdbd_client_emit(c, dp->ch, buf, (size_t)n);
	if (err)
		__atomic_fetch_add(&c->d->ctr.errors, 1, __ATOMIC_RELAXED);
	tdbd_dump_end(c, dp);
	return true;
}

/* Send one part if there is room; false if the client must drain first. */
static bool dump_part(struct client *c, struct dump *dp,
		      struct tdb_proto_msg *a)
{
	long len = tdb_proto_size(TDB_PROTO_ANSWER, a, NULL);
	void *p = answer_buf(c);

	if (len < 0)
		return true;            /* cannot happen: skip it */
	if (!tdbd_client_room(c, dp->ch, (size_t)len))
		return false;
	if (tdb_proto_build(p, (size_t)len, TDB_PROTO_ANSWER, a, NULL) == len)
		tdbd_client_emit(c, dp->ch, p, (size_t)len);
	return true;
}

static void part_init(struct dump *dp, struct tdb_proto_msg *a,
		      uint32_t attrs)
{
	memset(a, 0, sizeof(*a));
	a->cmd = dp->cmd;
	a->seq = dp->req.nlmsg_seq;
	a->pid = dp->req.nlmsg_pid;
	a->attrs = attrs;
}

/*
 * A snapshot scan (tdbd.h, "snapshots"): the walk of the live table,
 * each record checked against the snapshot, then the pre-images the walk
 * did not send.  Same pacing as scan_run; no part carries a CURSOR.
 */
static unsigned int snap_run(struct client *c, struct dump *dp,
			     unsigned int budget, bool *blocked)
{
	unsigned int done = 0;

	while (done < budget) {
		struct tdb_proto_msg a;
		const char *msg = NULL;
		const void *k, *v;
		size_t kl, vl;
		int rc;

		if (!dp->left) {
			if (!dump_done(c, dp, 0, NULL))
				*blocked = true;
			return done + 1;
		}
		if (!tdbd_client_room(c, dp->ch, TDB_PROTO_MSG_MAX)) {
			*blocked = true;
			return done;
		}
		if (!dp->walked) {
			rc = tdbe_cursor_next(dp->cur, &k, &kl, &v, &vl);
			if (rc == 0) {
				tdbd_snap_freeze(dp->snap);
				dp->walked = true;
				done++;
				continue;
			}
			if (rc > 0) {
				done++;
				if (dp->plen && (kl < dp->plen ||
						 memcmp(k, dp->prefix, dp->plen)))
					continue;
				rc = tdbd_snap_check(dp->snap, k, kl, &v, &vl,
						     &msg);
				if (rc == 0)
					continue;
			}
		} else {
			rc = tdbd_snap_next_left(dp->snap, &k, &kl, &v, &vl,
						 &msg);
			if (rc >= 0)
				done++;
			if (rc == 0) {
				if (!dump_done(c, dp, 0, NULL))
					*blocked = true;
				return done;
			}
		}
		if (rc < 0) {
			if (!dump_done(c, dp, rc, msg ? msg : tdbe_strerror(rc)))
				*blocked = true;
			return done + 1;
		}
		part_init(dp, &a, TDB_PROTO_BIT(TDB_A_KEY) |
			  TDB_PROTO_BIT(TDB_A_VALUE));
		a.key = k;
		a.key_len = (uint32_t)kl;
		a.value = v;
		a.value_len = (uint32_t)vl;
		dump_part(c, dp, &a);
		dp->left--;
		dp->sent++;
	}
	return done;
}

/*
 * Returns work done; stops when out of budget or room.  Room for the
 * biggest part is checked before a record is taken from the cursor, so a
 * record taken is always sent.
 */
static unsigned int scan_run(struct client *c, struct dump *dp,
			     unsigned int budget, bool *blocked)
{
	unsigned int done = 0;

	if (dp->snap)
		return snap_run(c, dp, budget, blocked);

	while (done < budget) {
		unsigned char cursor[TDB_KEY_MAX + 1];
		struct tdb_proto_msg a;
		const void *k, *v;
		size_t kl, vl;
		int rc;

		if (!dp->left) {
			if (!dump_done(c, dp, 0, NULL))
				*blocked = true;
			return done + 1;
		}
		if (!tdbd_client_room(c, dp->ch, TDB_PROTO_MSG_MAX)) {
			*blocked = true;
			return done;
		}
		rc = tdbe_cursor_next(dp->cur, &k, &kl, &v, &vl);
		if (rc <= 0) {
			if (!dump_done(c, dp, rc, rc ? tdbe_strerror(rc) : NULL))
				*blocked = true;
			return done + 1;
		}
		done++;
		if (dp->plen && (kl < dp->plen || memcmp(k, dp->prefix,
							   dp->plen)))
			continue;
		part_init(dp, &a, TDB_PROTO_BIT(TDB_A_KEY) |
			  TDB_PROTO_BIT(TDB_A_VALUE));
		a.key = k;
		a.key_len = (uint32_t)kl;
		a.value = v;
		a.value_len = (uint32_t)vl;
		if (dp->left == 1) {    /* the last one allowed: say where */
			cursor[0] = CURSOR_V1;
			memcpy(cursor + 1, k, kl);
			a.attrs |= TDB_PROTO_BIT(TDB_A_CURSOR);
			a.cursor = cursor;
			a.cursor_len = (uint32_t)kl + 1;
		}
		dump_part(c, dp, &a);
		dp->left--;
		dp->sent++;
	}
	return done;
}

static unsigned int list_run(struct client *c, struct dump *dp,
			     unsigned int budget, bool *blocked)
{
	unsigned int done = 0;

	while (done < budget) {
		struct tdb_proto_msg a;
		struct dtable *dt;

		if (dp->at == dp->ntabs) {
			if (!dump_done(c, dp, 0, NULL))
				*blocked = true;
			return done + 1;
		}
		dt = dp->tabs[dp->at];
		done++;
		if (dt->dropped || !tdbd_may(&c->cr, dt, MAY_READ)) {
			dp->at++;
			continue;
		}
		part_init(dp, &a, TDB_PROTO_BIT(TDB_A_TABLE) |
			  TDB_PROTO_BIT(TDB_A_STAT));
		a.table = dt->name;
		a.table_len = (uint32_t)strlen(dt->name);
		fill_stat(dt, &a.stat);
		if (!dump_part(c, dp, &a)) {
			*blocked = true;
			return done;
		}
		dp->at++;
	}
	return done;
}

unsigned int tdbd_dumps_run(struct client *c, unsigned int budget,
			    bool *blocked)
{
	unsigned int i, done = 0;

	for (i = 0; i < MAX_DUMPS && c->ndumps && !c->dead; i++) {
		struct dump *dp = &c->dumps[i];

		if (!dp->used)
			continue;
		if (dp->cmd == TDB_CMD_SCAN)
			done += scan_run(c, dp, budget, blocked);
		else
			done += list_run(c, dp, budget, blocked);
	}
	return done;
}

/* --- big commits ------------------------------------------------------------ */

unsigned int tdbd_commit_answer(struct client *c)
{
	struct rq r = { .c = c };
	struct nlmsghdr req;
	const char *msg;
	int err;

	if (!c->commit ||
	    !tdbd_commit_take(c, &err, &r.lsn, &msg, &req, &r.ch))
		return 0;
	r.m.nlh = &req;
	r.ext.msg = msg;
	if (!err && r.lsn && tdbd_ack_later(c, r.ch, &req, r.lsn))
		return 1;       /* acked once its WAL record is on disk */
	answer_err(&r, err);
	return 1;
}

/* --- dispatch -------------------------------------------------------------- */

static int dispatch(struct rq *r)
{
	switch (r->m.cmd) {
	case TDB_CMD_GET:          return do_get(r);
	case TDB_CMD_PUT:          return do_put_del(r, false);
	case TDB_CMD_DEL:          return do_put_del(r, true);
	case TDB_CMD_SCAN:         return do_scan(r);
	case TDB_CMD_TABLE_CREATE: return do_create(r);
	case TDB_CMD_TABLE_DROP:   return do_drop(r);
	case TDB_CMD_TABLE_LIST:   return do_list(r);
	case TDB_CMD_TABLE_STAT:   return do_stat(r);
	case TDB_CMD_TXN_BEGIN:
	case TDB_CMD_TXN_COMMIT:
	case TDB_CMD_TXN_ABORT:    return do_txn(r);
	case TDB_CMD_WATCH:        return do_watch(r);
	case TDB_CMD_UNWATCH:      return do_unwatch(r);
	case TDB_CMD_STATS:        return do_stats(r);
	case TDB_CMD_ATTACH:
		if (r->ch == CH_RING) {
			r->ext.msg = "ATTACH goes over the socket: it passes "
				     "file descriptors";
			return -EOPNOTSUPP;
		}
		if (tdbd_client_attach(r->c, r->m.nlh) < 0)
			r->c->dead = true;
		return 1;
	}
	r->ext.msg = "unknown command";
	return -EOPNOTSUPP;
}

void tdbd_exec(struct client *c, enum chan ch, const void *msg, size_t len)
{
	struct rq r = { .c = c, .ch = ch };
	int err;

	__atomic_fetch_add(&c->d->ctr.requests, 1, __ATOMIC_RELAXED);
	err = tdb_proto_parse(msg, len, TDB_PROTO_REQUEST, &r.m, &r.ext);
	if (err) {
		if (!r.m.nlh) {
			c->why = "a message too short to answer";
			c->dead = true;
			__atomic_fetch_add(&c->d->ctr.violations, 1,
					   __ATOMIC_RELAXED);
			return;
		}
		answer_err(&r, err);
		return;
	}
	err = dispatch(&r);
	if (!err && r.lsn && tdbd_ack_later(c, ch, r.m.nlh, r.lsn))
		return;         /* acked once its WAL record is on disk */
	if (err <= 0)
		answer_err(&r, err);
}
