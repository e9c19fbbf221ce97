// SPDX-License-Identifier: MIT
/*
 * ops.c - the blocking calls: tables (create, drop, stat, list, open),
 * data (put, del, get; their conditional, versioned and expiring
 * forms, incr), a key's deadline (expire, persist, ttl), transactions
 * (and tdbc_txn_run's retries) and the owner's stats.  Each builds
 * one request, hands it to tdbc__call (io.c) and takes its answer
 * through a small on_msg handler that copies what it needs out of the
 * message before the next one is read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* --- tables ------------------------------------------------------------- */

void tdbc_table_opts_init(struct tdbc_table_opts *opts)
{
	opts->max_extents = 0;
	opts->mode = (uint32_t)-1;
	opts->uid = (uint32_t)-1;
	opts->gid = (uint32_t)-1;
	opts->default_ttl = 0;
	opts->max_bytes = 0;
	opts->max_records = 0;
	opts->evict = TDBC_EVICT_REFUSE;
	opts->flags = 0;
}

static int check_name(struct tdbc *c, const char *name)
{
	if (!name)
		return tdbc__fail(c, -EINVAL, "table name is NULL");
	return 0;
}

/* A new table's name: the protocol's rule (tdb_name_check), checked
 * here so a bad name fails without the daemon; the owner checks too. */
static int check_new_name(struct tdbc *c, const char *name)
{
	const char *why = NULL;
	int err = check_name(c, name);

	if (!err)
		err = tdb_name_check(name, strnlen(name, TDB_NAME_MAX + 1),
				     &why);
	if (err && why)
		return tdbc__fail(c, err, "%s", why);
	return err;
}

/* The bounds and policy of a new table, checked as the owner checks
 * them, so a wrong one fails with its reason before anything is sent. */
static int bound_opts(struct tdbc *c, const struct tdbc_table_opts *opts,
		      struct tdb_proto_msg *m)
{
	if (opts->evict > TDB_EVICT_MAX)
		return tdbc__fail(c, -EINVAL,
				  "eviction policy %u is unknown (0..%u)",
				  opts->evict, TDB_EVICT_MAX);
	if (opts->evict != TDBC_EVICT_REFUSE && !opts->max_bytes &&
	    !opts->max_records)
		return tdbc__fail(c, -EINVAL,
				  "an eviction policy needs a bound "
				  "(max_bytes or max_records)");
	if (opts->max_bytes) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_MAX_BYTES);
		m->max_bytes = opts->max_bytes;
	}
	if (opts->max_records) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS);
		m->max_records = opts->max_records;
	}
	if (opts->evict != TDBC_EVICT_REFUSE) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_EVICT);
		m->evict = opts->evict;
	}
	return 0;
}

int tdbc_table_create(struct tdbc *c, const char *name,
		      const struct tdbc_table_opts *opts)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_CREATE,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = name };
	struct tdbc_call call = { 0 };
	int err = tdbc__enter(c);

	if (!err)
		err = check_new_name(c, name);
	if (err)
		return err;
	if (opts && opts->max_extents) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_EXTENTS);
		m.max_extents = opts->max_extents;
	}
	if (opts && opts->mode != (uint32_t)-1) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MODE);
		m.mode = opts->mode;
	}
	if (opts && opts->uid != (uint32_t)-1) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_UID);
		m.uid = opts->uid;
	}
	if (opts && opts->gid != (uint32_t)-1) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_GID);
		m.gid = opts->gid;
	}
	if (opts && opts->default_ttl) {
		err = tdbc__check_ttl(c, "default TTL", opts->default_ttl);
		if (err)
			return err;
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = opts->default_ttl;
	}
	if (opts) {
		err = bound_opts(c, opts, &m);
		if (err)
			return err;
	}
	if (opts && opts->flags) {
		/* unknown bits are the owner's to refuse (-EOPNOTSUPP), so
		 * that a newer owner's flags work through this library */
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
		m.table_flags = opts->flags;
	}
	return tdbc__call(c, &m, &call, false);
}

int tdbc_table_drop(struct tdbc *c, const char *name)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_DROP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = name };
	struct tdbc_call call = { 0 };
	int err = tdbc__enter(c);

	if (!err)
		err = check_name(c, name);
	if (err)
		return err;
	return tdbc__call(c, &m, &call, false);
}

static void fill_stat(struct tdbc_table_stat *st,
		      const struct tdb_proto_msg *m)
{
	const struct tdb_proto_stat *s = &m->stat;

	memset(st, 0, sizeof(*st));
	memcpy(st->name, m->table, m->table_len <= TDB_NAME_MAX ?
	       m->table_len : TDB_NAME_MAX);
	st->records = s->records;
	st->bytes_used = s->bytes_used;
	st->bytes_allocated = s->bytes_allocated;
	st->bytes_pending = s->bytes_pending;
	st->extents = s->extents;
	st->max_extents = s->max_extents;
	st->page_size = s->page_size;
	st->index_nodes = s->index_nodes;
	st->index_buckets = s->index_buckets;
	st->uid = s->uid;
	st->gid = s->gid;
	st->mode = s->mode;
	st->state = s->state;
	st->default_ttl = s->default_ttl;
	st->expiring = s->expiring;
	st->expired = s->expired;
	st->max_bytes = s->max_bytes;
	st->max_records = s->max_records;
	st->evict = s->evict;
	st->evicted = s->evicted;
	st->flags = s->table_flags;
}

static int stat_msg(struct tdbc *c, struct tdbc_call *call,
		    const struct tdb_proto_msg *m)
{
	(void)c;
	if (call->arg)
		fill_stat(call->arg, m);
	return 0;
}

static int table_stat(struct tdbc *c, const char *name,
		      struct tdbc_table_stat *st)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_STAT,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = name };
	struct tdbc_call call = { .on_msg = stat_msg, .arg = st };
	int err = check_name(c, name);

	return err ? err : tdbc__call(c, &m, &call, false);
}

int tdbc_table_stat(struct tdbc *c, const char *name,
		    struct tdbc_table_stat *st)
{
	int err = tdbc__enter(c);

	if (!err && !st)
		err = tdbc__fail(c, -EINVAL, "stat buffer is NULL");
	return err ? err : table_stat(c, name, st);
}

/* TABLE_LIST collects the parts, then calls fn once the dump is over
 * (fn may then call the library again). */
struct list_acc {
	struct tdbc_table_stat *v;
	size_t n, cap;
};

static int list_msg(struct tdbc *c, struct tdbc_call *call,
		    const struct tdb_proto_msg *m)
{
	struct list_acc *acc = call->arg;

	if (acc->n == acc->cap) {
		size_t cap = acc->cap ? acc->cap * 2 : 16;
		void *p = realloc(acc->v, cap * sizeof(*acc->v));

		if (!p)
			return tdbc__fail(c, -ENOMEM, "out of memory listing "
					  "tables");
		acc->v = p;
		acc->cap = cap;
	}
	fill_stat(&acc->v[acc->n++], m);
	return 0;
}

int tdbc_table_list(struct tdbc *c, tdbc_table_fn *fn, void *arg)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_LIST };
	struct list_acc acc = { 0 };
	struct tdbc_call call = { .on_msg = list_msg, .arg = &acc };
	size_t i;
	int err = tdbc__enter(c);

	if (!err && !fn)
		err = tdbc__fail(c, -EINVAL, "callback is NULL");
	if (!err)
		err = tdbc__call(c, &m, &call, false);
	for (i = 0; !err && i < acc.n; i++)
		err = fn(arg, &acc.v[i]);
	free(acc.v);
	return err;
}

int tdbc_table_open(struct tdbc *c, const char *name,
		    struct tdbc_table **out)
{
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	int err = tdbc__enter(c);

	if (out)
		*out = NULL;
	if (!err && !out)
		err = tdbc__fail(c, -EINVAL, "out is NULL");
	if (!err)
		err = table_stat(c, name, &st);
	if (err)
		return err;
	t = calloc(1, sizeof(*t));
	if (!t)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	/* table_stat succeeded, so the name is valid (<= TDB_NAME_MAX) */
	strncpy(t->name, name, TDB_NAME_MAX);
	t->flags = st.flags;
	tdbc__link(c, &t->h, TDBC_K_TABLE);
	err = tdbc__map_open(t);        /* a refused map is not an error */
	if (err) {
		tdbc_table_close(t);
		return err;
	}
	*out = t;
	return 0;
}

void tdbc_table_close(struct tdbc_table *t)
{
	if (!t)
		return;
	tdbc__map_close(t);
	tdbc__unlink(&t->h);
	free(t);
}

const char *tdbc_table_name(const struct tdbc_table *t)
{
	return t ? t->name : NULL;
}

/* --- data --------------------------------------------------------------- */

/* Common checks of a data call; fills TABLE, KEY, TXN of m. */
static int data_msg(struct tdbc_table *t, struct tdbc_txn *txn,
		    const void *key, size_t klen, struct tdb_proto_msg *m)
{
	struct tdbc *c;
	int err;

	if (!t)
		return -EINVAL;
	c = t->h.c;
	err = tdbc__enter(c);
	if (!err && txn && txn->h.c != c)
		err = tdbc__fail(c, -EINVAL, "transaction belongs to another "
				 "connection");
	if (!err)
		err = tdbc__check_key(c, key, klen);
	if (err)
		return err;
	m->attrs = TDB_PROTO_BIT(TDB_A_TABLE) | TDB_PROTO_BIT(TDB_A_KEY);
	m->table = t->name;
	m->key = key;
	m->key_len = (uint32_t)klen;
	if (txn) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_TXN);
		m->txn = txn->id;
	}
	return 0;
}

/* The conditions a put or delete may carry (client.h); checked before
 * anything is sent. */
static int cond_check(struct tdbc *c, const char *what, unsigned int flags,
		      unsigned int allowed, uint64_t version)
{
	if (flags & ~allowed)
		return tdbc__fail(c, -EINVAL, "unknown %s flags %#x", what,
				  flags & ~allowed);
	if ((flags & TDBC_IF_ABSENT) && (flags & TDBC_IF_PRESENT))
		return tdbc__fail(c, -EINVAL, "%s: TDBC_IF_ABSENT and "
				  "TDBC_IF_PRESENT exclude each other", what);
	if ((flags & TDBC_IF_VERSION) &&
	    (flags & (TDBC_IF_ABSENT | TDBC_IF_PRESENT)))
		return tdbc__fail(c, -EINVAL, "%s: TDBC_IF_VERSION goes alone "
				  "(a key at a version is present)", what);
	if ((flags & TDBC_IF_VERSION) && !version)
		return tdbc__fail(c, -EINVAL, "%s: TDBC_IF_VERSION with "
				  "version 0 (no record has it)", what);
	return 0;
}

int tdbc__check_ttl(struct tdbc *c, const char *what, uint64_t ttl)
{
	if (!ttl)
		return tdbc__fail(c, -EINVAL, "%s 0: a TTL is 1..%llu ms "
				  "(10 years)", what,
				  (unsigned long long)TDB_TTL_MAX);
	if (ttl > TDB_TTL_MAX)
		return tdbc__fail(c, -ERANGE, "%s of %llu ms: over the "
				  "longest, %llu ms (10 years)", what,
				  (unsigned long long)ttl,
				  (unsigned long long)TDB_TTL_MAX);
	return 0;
}

/* TTL or DEADLINE of a PUT from TDBC_TTL / TDBC_DEADLINE and expiry. */
static int expiry_msg(struct tdbc *c, struct tdb_proto_msg *m,
		      unsigned int flags, uint64_t expiry)
{
	int err;

	if ((flags & TDBC_TTL) && (flags & TDBC_DEADLINE))
		return tdbc__fail(c, -EINVAL, "put: TDBC_TTL and "
				  "TDBC_DEADLINE exclude each other");
	if (flags & TDBC_TTL) {
		err = tdbc__check_ttl(c, "put: TTL", expiry);
		if (err)
			return err;
		m->attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m->ttl = expiry;
	} else if (flags & TDBC_DEADLINE) {
		if (!expiry)
			return tdbc__fail(c, -EINVAL, "put: deadline 0 (a "
					  "deadline is ms since the epoch)");
		m->attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m->deadline = expiry;
	}
	return 0;
}

/* FLAGS and IF_VERSION of a PUT or DEL from the caller's flags. */
static void cond_msg(struct tdb_proto_msg *m, unsigned int flags,
		     uint64_t version)
{
	unsigned int put_flags = flags & TDB_PUT_FLAGS_ALL;

	if (put_flags) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_FLAGS);
		m->flags = put_flags;
	}
	if (flags & TDBC_IF_VERSION) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_IF_VERSION);
		m->if_version = version;
	}
}

int tdbc__put_msg(struct tdbc *c, struct tdb_proto_msg *m, const void *val,
		  size_t vlen, unsigned int flags, uint64_t version,
		  uint64_t expiry)
{
	int err = tdbc__check_value(c, val, vlen);

	if (!err)
		err = cond_check(c, "put", flags, TDBC_IF_ABSENT |
				 TDBC_IF_PRESENT | TDBC_IF_VERSION |
				 TDBC_TTL | TDBC_DEADLINE, version);
	if (!err)
		err = expiry_msg(c, m, flags, expiry);
	if (err)
		return err;
	m->attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m->value = val;
	m->value_len = (uint32_t)vlen;
	cond_msg(m, flags, version);
	return 0;
}

int tdbc__del_msg(struct tdbc *c, struct tdb_proto_msg *m,
		  unsigned int flags, uint64_t version)
{
	int err = cond_check(c, "del", flags, TDBC_IF_VERSION, version);

	if (!err)
		cond_msg(m, flags, version);
	return err;
}

int tdbc__incr_msg(struct tdb_proto_msg *m, int64_t delta)
{
	m->cmd = TDB_CMD_INCR;
	if (delta != 1) {
		m->attrs |= TDB_PROTO_BIT(TDB_A_DELTA);
		m->delta = delta;
	}
	return 0;
}

/* Every blocking put: flags TDBC_IF_* and at most one of TDBC_TTL,
 * TDBC_DEADLINE (expiry's meaning). */
static int put(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	       size_t klen, const void *val, size_t vlen, unsigned int flags,
	       uint64_t version, uint64_t expiry)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_PUT };
	struct tdbc_call call = { 0 };
	int err = data_msg(t, txn, key, klen, &m);

	if (!err)
		err = tdbc__put_msg(t->h.c, &m, val, vlen, flags, version,
				    expiry);
	return err ? err : tdbc__call(t->h.c, &m, &call, false);
}

/* The caller's flags of a put that names its expiry by its function:
 * TDBC_TTL and TDBC_DEADLINE are tdbc_submit's, not theirs. */
static int put_flags(struct tdbc_table *t, const char *fn,
		     unsigned int flags)
{
	if (t && (flags & (TDBC_TTL | TDBC_DEADLINE)))
		return tdbc__fail(t->h.c, -EINVAL, "%s: unknown put flags "
				  "%#x (TDBC_TTL and TDBC_DEADLINE are "
				  "tdbc_submit's)", fn,
				  flags & (TDBC_TTL | TDBC_DEADLINE));
	return 0;
}

int tdbc_put_if(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, const void *val, size_t vlen, unsigned int flags,
		uint64_t version)
{
	int err = put_flags(t, "tdbc_put_if", flags);

	return err ? err : put(t, txn, key, klen, val, vlen, flags, version,
			       0);
}

int tdbc_put_ttl(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		 size_t klen, const void *val, size_t vlen, unsigned int flags,
		 uint64_t version, uint64_t ttl_ms)
{
	int err = put_flags(t, "tdbc_put_ttl", flags);

	return err ? err : put(t, txn, key, klen, val, vlen,
			       flags | TDBC_TTL, version, ttl_ms);
}

int tdbc_put_at(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, const void *val, size_t vlen, unsigned int flags,
		uint64_t version, uint64_t deadline_ms)
{
	int err = put_flags(t, "tdbc_put_at", flags);

	return err ? err : put(t, txn, key, klen, val, vlen,
			       flags | TDBC_DEADLINE, version, deadline_ms);
}

int tdbc_put(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	     size_t klen, const void *val, size_t vlen, unsigned int flags)
{
	int err = put_flags(t, "tdbc_put", flags);

	/* TDBC_IF_VERSION needs a version: tdbc_put_if */
	if (!err && t && (flags & TDBC_IF_VERSION))
		err = tdbc__fail(t->h.c, -EINVAL, "tdbc_put with "
				 "TDBC_IF_VERSION: use tdbc_put_if");
	return err ? err : put(t, txn, key, klen, val, vlen, flags, 0, 0);
}

int tdbc_del_if(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, unsigned int flags, uint64_t version)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_DEL };
	struct tdbc_call call = { 0 };
	int err = data_msg(t, txn, key, klen, &m);

	if (!err)
		err = tdbc__del_msg(t->h.c, &m, flags, version);
	return err ? err : tdbc__call(t->h.c, &m, &call, false);
}

int tdbc_del(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	     size_t klen)
{
	return tdbc_del_if(t, txn, key, klen, 0, 0);
}

/* INCR's reply: the new value and, outside a transaction, the write's
 * version. */
struct incr_out {
	int64_t num;
	uint64_t version;
};

static int incr_msg(struct tdbc *c, struct tdbc_call *call,
		    const struct tdb_proto_msg *m)
{
	struct incr_out *o = call->arg;

	(void)c;
	o->num = m->ival;
	o->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ? m->rec_version : 0;
	return 0;
}

int tdbc_incr(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	      size_t klen, int64_t delta, int64_t *result)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_INCR };
	struct incr_out o = { 0 };
	struct tdbc_call call = { .on_msg = incr_msg, .arg = &o };
	int err = data_msg(t, txn, key, klen, &m);

	if (!err)
		err = tdbc__incr_msg(&m, delta);
	if (!err)
		err = tdbc__call(t->h.c, &m, &call, false);
	if (!err && result)
		*result = o.num;
	return err;
}

struct get_out {
	void *buf;              /* the caller's buffer, or NULL: allocate */
	size_t cap;
	void **alloc;           /* tdbc_get_alloc's result */
	size_t len;
	uint64_t version;       /* the record's (0: none sent) */
	uint64_t deadline;      /* the record's (0: none) */
};

static int get_msg(struct tdbc *c, struct tdbc_call *call,
		   const struct tdb_proto_msg *m)
{
	struct get_out *o = call->arg;

	o->len = m->value_len;
	o->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ? m->rec_version : 0;
	o->deadline = TDB_PROTO_HAS(m, TDB_A_DEADLINE) ? m->deadline : 0;
	if (o->alloc) {
		*o->alloc = malloc(m->value_len ? m->value_len : 1);
		if (!*o->alloc)
			return tdbc__fail(c, -ENOMEM, "out of memory for a "
					  "value of %u bytes", m->value_len);
		tdb_proto_value_copy(m, *o->alloc);
		return 0;
	}
	if (m->value_len > o->cap)
		return tdbc__fail(c, -ENOBUFS, "value of %u bytes does not "
				  "fit the buffer of %zu", m->value_len,
				  o->cap);
	tdb_proto_value_copy(m, o->buf);
	return 0;
}

/* A value found in the table's map (map.c; maybe called again on a
 * retry, so an earlier allocation is replaced). */
static long get_copy(void *arg, const void *val, size_t vlen)
{
	struct get_out *o = arg;

	o->len = vlen;
	if (o->alloc) {
		free(*o->alloc);
		*o->alloc = malloc(vlen ? vlen : 1);
		if (!*o->alloc)
			return -ENOMEM;
		memcpy(*o->alloc, val, vlen);
		return (long)vlen;
	}
	if (vlen > o->cap)
		return -ENOBUFS;
	memcpy(o->buf, val, vlen);
	return (long)vlen;
}

static long get(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
		size_t klen, struct get_out *o)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_GET };
	struct tdbc_call call = { .on_msg = get_msg, .arg = o };
	int err = data_msg(t, txn, key, klen, &m);
	long r;

	if (!err && !txn) {
		r = tdbc__map_get(t, key, klen, get_copy, o, &o->version,
				  &o->deadline);
		if (r == -ENOBUFS)
			return tdbc__fail(t->h.c, -ENOBUFS, "value of %zu "
					  "bytes does not fit the buffer of "
					  "%zu", o->len, o->cap);
		if (r == -ENOMEM)
			return tdbc__fail(t->h.c, -ENOMEM, "out of memory for "
					  "a value of %zu bytes", o->len);
		if (r == -ENOENT)
			return tdbc__fail(t->h.c, -ENOENT, "no such key");
		if (r != TDBC__MAP_RING)
			return r;
		if (o->alloc) {         /* a copy of a discarded try */
			free(*o->alloc);
			*o->alloc = NULL;
		}
	}
	if (!err)
		err = tdbc__call(t->h.c, &m, &call, false);
	return err ? err : (long)o->len;
}

long tdbc__get_ring(struct tdbc_table *t, const void *key, size_t klen,
		    void **val, uint64_t *version, uint64_t *deadline)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_GET };
	struct get_out o = { .alloc = val };
	struct tdbc_call call = { .on_msg = get_msg, .arg = &o };
	int err = data_msg(t, NULL, key, klen, &m);

	*val = NULL;
	if (!err)
		err = tdbc__call(t->h.c, &m, &call, false);
	if (err) {
		free(*val);
		*val = NULL;
	}
	if (version)
		*version = err ? 0 : o.version;
	if (deadline)
		*deadline = err ? 0 : o.deadline;
	return err ? err : (long)o.len;
}

long tdbc_get_ex(struct tdbc_table *t, struct tdbc_txn *txn,
		 const void *key, size_t klen, void *buf, size_t cap,
		 size_t *need, uint64_t *version, uint64_t *deadline)
{
	struct get_out o = { .buf = buf, .cap = buf ? cap : 0 };
	long r = get(t, txn, key, klen, &o);

	if (r == -ENOBUFS && need)
		*need = o.len;
	if (version)
		*version = r >= 0 ? o.version : 0;
	if (deadline)
		*deadline = r >= 0 ? o.deadline : 0;
	return r;
}

long tdbc_get_ver(struct tdbc_table *t, struct tdbc_txn *txn,
		  const void *key, size_t klen, void *buf, size_t cap,
		  size_t *need, uint64_t *version)
{
	return tdbc_get_ex(t, txn, key, klen, buf, cap, need, version, NULL);
}

long tdbc_get(struct tdbc_table *t, struct tdbc_txn *txn, const void *key,
	      size_t klen, void *buf, size_t cap, size_t *need)
{
	return tdbc_get_ver(t, txn, key, klen, buf, cap, need, NULL);
}

long tdbc_get_alloc(struct tdbc_table *t, struct tdbc_txn *txn,
		    const void *key, size_t klen, void **val)
{
	struct get_out o = { 0 };
	void *p = NULL;
	long r;

	if (!val)
		return t ? tdbc__fail(t->h.c, -EINVAL, "val is NULL") : -EINVAL;
	*val = NULL;
	o.alloc = &p;
	r = get(t, txn, key, klen, &o);
	if (r < 0)
		free(p);
	else
		*val = p;
	return r;
}

/* --- a key's deadline: EXPIRE ------------------------------------------- */

/* EXPIRE's reply: the record's version and deadline (0: none). */
struct expire_out {
	uint64_t version, deadline;
};

static int expire_reply(struct tdbc *c, struct tdbc_call *call,
			const struct tdb_proto_msg *m)
{
	struct expire_out *o = call->arg;

	(void)c;
	o->version = TDB_PROTO_HAS(m, TDB_A_VERSION) ? m->rec_version : 0;
	o->deadline = TDB_PROTO_HAS(m, TDB_A_DEADLINE) ? m->deadline : 0;
	return 0;
}

/* One EXPIRE: attrs (TTL, DEADLINE or EXPIRE_FLAGS, or none to read)
 * with their values already in *m. */
static int expire(struct tdbc_table *t, const void *key, size_t klen,
		  struct tdb_proto_msg *m, struct expire_out *o)
{
	struct tdb_proto_msg req = *m;
	struct tdbc_call call = { .on_msg = expire_reply, .arg = o };
	int err = data_msg(t, NULL, key, klen, &req);

	if (err)
		return err;
	req.attrs |= m->attrs;
	req.cmd = TDB_CMD_EXPIRE;
	return tdbc__call(t->h.c, &req, &call, false);
}

int tdbc_expire(struct tdbc_table *t, const void *key, size_t klen,
		uint64_t ttl_ms, uint64_t *deadline)
{
	struct tdb_proto_msg m = { .attrs = TDB_PROTO_BIT(TDB_A_TTL),
				   .ttl = ttl_ms };
	struct expire_out o = { 0 };
	int err;

	if (deadline)
		*deadline = 0;
	if (!t)
		return -EINVAL;
	err = tdbc__check_ttl(t->h.c, "expire: TTL", ttl_ms);
	if (!err)
		err = expire(t, key, klen, &m, &o);
	if (!err && deadline)
		*deadline = o.deadline;
	return err;
}

int tdbc_expire_at(struct tdbc_table *t, const void *key, size_t klen,
		   uint64_t deadline_ms)
{
	struct tdb_proto_msg m = { .attrs = TDB_PROTO_BIT(TDB_A_DEADLINE),
				   .deadline = deadline_ms };
	struct expire_out o = { 0 };

	if (!t)
		return -EINVAL;
	if (!deadline_ms)
		return tdbc__fail(t->h.c, -EINVAL, "expire: deadline 0 (a "
				  "deadline is ms since the epoch; "
				  "tdbc_persist clears one)");
	return expire(t, key, klen, &m, &o);
}

int tdbc_persist(struct tdbc_table *t, const void *key, size_t klen)
{
	struct tdb_proto_msg m = {
		.attrs = TDB_PROTO_BIT(TDB_A_EXPIRE_FLAGS),
		.expire_flags = TDB_EXPIRE_PERSIST,
	};
	struct expire_out o = { 0 };

	return expire(t, key, klen, &m, &o);
}

int tdbc_ttl(struct tdbc_table *t, const void *key, size_t klen,
	     uint64_t *deadline, uint64_t *version)
{
	struct tdb_proto_msg m = { 0 };
	struct expire_out o = { 0 };
	int err = expire(t, key, klen, &m, &o);

	if (deadline)
		*deadline = err ? 0 : o.deadline;
	if (version)
		*version = err ? 0 : o.version;
	return err;
}

/* --- transactions ------------------------------------------------------- */

static int txn_msg(struct tdbc *c, struct tdbc_call *call,
		   const struct tdb_proto_msg *m)
{
	(void)c;
	*(uint64_t *)call->arg = m->txn;
	return 0;
}

int tdbc_txn_begin(struct tdbc *c, struct tdbc_txn **out)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TXN_BEGIN };
	uint64_t id = 0;
	struct tdbc_call call = { .on_msg = txn_msg, .arg = &id };
	struct tdbc_txn *txn;
	int err = tdbc__enter(c);

	if (out)
		*out = NULL;
	if (!err && !out)
		err = tdbc__fail(c, -EINVAL, "out is NULL");
	if (err)
		return err;
	txn = calloc(1, sizeof(*txn));
	if (!txn)
		return tdbc__fail(c, -ENOMEM, "out of memory");
	err = tdbc__call(c, &m, &call, false);
	if (err) {
		free(txn);
		return err;
	}
	txn->id = id;
	tdbc__link(c, &txn->h, TDBC_K_TXN);
	*out = txn;
	return 0;
}

static int txn_end(struct tdbc_txn *txn, uint8_t cmd)
{
	struct tdb_proto_msg m = { .cmd = cmd,
				   .attrs = TDB_PROTO_BIT(TDB_A_TXN) };
	struct tdbc_call call = { 0 };
	struct tdbc *c;
	int err;

	if (!txn)
		return -EINVAL;
	c = txn->h.c;
	m.txn = txn->id;
	tdbc__unlink(&txn->h);
	free(txn);
	err = tdbc__enter(c);
	return err ? err : tdbc__call(c, &m, &call, false);
}

int tdbc_txn_commit(struct tdbc_txn *txn)
{
	return txn_end(txn, TDB_CMD_TXN_COMMIT);
}

int tdbc_txn_abort(struct tdbc_txn *txn)
{
	return txn_end(txn, TDB_CMD_TXN_ABORT);
}

/* --- tdbc_txn_run ------------------------------------------------------- */

#define RUN_WAIT_MIN_NS 50000ull        /* the first backoff: 50 us */
#define RUN_WAIT_MAX_NS 20000000ull     /* doubling up to 20 ms */

/* xorshift64*: the backoff's jitter (no need for anything better). */
static uint64_t jitter_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Sleep between half of `ns` and `ns`, whatever signals come. */
static void backoff(uint64_t ns, uint64_t *rnd)
{
	struct timespec ts;

	ns = ns / 2 + jitter_next(rnd) % (ns / 2 + 1);
	ts.tv_sec = (time_t)(ns / 1000000000ull);
	ts.tv_nsec = (long)(ns % 1000000000ull);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int tdbc_txn_run(struct tdbc *c, tdbc_txn_fn *fn, void *arg,
		 unsigned int flags)
{
	uint64_t wait = RUN_WAIT_MIN_NS, rnd;
	char msg[TDBC_ERRMSG_MAX];
	struct tdbc_txn *txn;
	unsigned int tries;
	int err = tdbc__enter(c);

	if (!err && !fn)
		err = tdbc__fail(c, -EINVAL, "tdbc_txn_run: fn is NULL");
	if (!err && flags)
		err = tdbc__fail(c, -EINVAL, "tdbc_txn_run: unknown flags "
				 "%#x", flags);
	if (err)
		return err;
	rnd = tdbc__now_ns() ^ (uint64_t)(uintptr_t)c ^
	      (uint64_t)getpid() << 32;
	if (!rnd)
		rnd = 1;
	for (tries = 1;; tries++) {
		err = tdbc_txn_begin(c, &txn);
		if (err)
			return err;
		err = fn(txn, arg);
		if (err) {
			/* fn's error and its message are the ones to say */
			memcpy(msg, c->errmsg, sizeof(msg));
			(void)tdbc_txn_abort(txn);
			memcpy(c->errmsg, msg, sizeof(msg));
			return err;
		}
		err = tdbc_txn_commit(txn);
		if (err != -ESTALE)
			return err;
		if (tries >= TDBC_TXN_RUN_TRIES) {
			memcpy(msg, c->errmsg, sizeof(msg));
			return tdbc__fail(c, err, "%s (tdbc_txn_run gave up "
					  "after %u tries)", msg, tries);
		}
		backoff(wait, &rnd);
		if (wait < RUN_WAIT_MAX_NS)
			wait = wait * 2 < RUN_WAIT_MAX_NS ? wait * 2 :
			       RUN_WAIT_MAX_NS;
	}
}

/* --- stats -------------------------------------------------------------- */

static int stats_msg(struct tdbc *c, struct tdbc_call *call,
		     const struct tdb_proto_msg *m)
{
	const struct tdb_proto_counters *k = &m->counters;
	struct tdbc_stats *st = call->arg;

	(void)c;
	memset(st, 0, sizeof(*st));
	st->tables = k->tables;
	st->clients = k->clients;
	st->watches = k->watches;
	st->txns = k->txns;
	st->requests = k->requests;
	st->errors = k->errors;
	st->uptime_ms = k->uptime_ms;
	st->accepted = k->accepted;
	st->cleanups = k->cleanups;
	st->txns_aborted = k->txns_aborted;
	st->watches_dropped = k->watches_dropped;
	st->rings = k->rings;
	st->throttled = k->throttled;
	st->dumps = k->dumps;
	st->wal_records = k->wal_records;
	st->wal_lsn = k->wal_lsn;
	st->wal_durable = k->wal_durable;
	st->wal_syncs = k->wal_syncs;
	st->checkpoints = k->checkpoints;
	st->ckpt_failures = k->ckpt_failures;
	st->ckpt_lsn = k->ckpt_lsn;
	st->tables_aside = k->tables_aside;
	st->rings_freed = k->rings_freed;
	st->stuck = k->stuck;
	st->violations = k->violations;
	st->readers_expired = k->readers_expired;
	st->expired = k->expired;
	st->evicted = k->evicted;
	return 0;
}

int tdbc_stats(struct tdbc *c, struct tdbc_stats *st)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	struct tdbc_call call = { .on_msg = stats_msg, .arg = st };
	int err = tdbc__enter(c);

	if (!err && !st)
		err = tdbc__fail(c, -EINVAL, "stats buffer is NULL");
	return err ? err : tdbc__call(c, &m, &call, false);
}
