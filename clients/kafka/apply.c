// SPDX-License-Identifier: GPL-2.0-only
/*
 * apply.c - tdb-kafka apply: the shipper's topics into a local tdbd.
 *
 * A consumer (manual assignment, no consumer group's commits) reads
 * every partition of the topics named by --topic-prefix and --map,
 * found by asking for Kafka's metadata every second.  Messages are
 * queued per partition; they are applied in each partition's order:
 *  - a transaction (the messages of tdb.txn T, tdb.txn_ops of them) is
 *    applied when all its ops are at the heads of the partitions it
 *    spans, as one tdb transaction; since every partition is in LSN
 *    order, the oldest transaction not applied is always at the heads
 *    of its partitions once it has arrived, so this never waits for
 *    ever;
 *  - a table event (create, drop, snapshot) alone;
 *  - a snapshot's records (tdb.snapshot) in batches.
 * The applier's position, per topic and partition the last applied LSN
 * and offset, is the table tdb_kafka_pos of the replica ("topic:N" ->
 * "LSN OFFSET"), written in the same tdb transaction as the changes it
 * covers: a crash keeps both or neither.  At start it is read and each
 * partition read from the offset after it.  A message whose LSN is at
 * or below its partition's applied LSN is a duplicate (Kafka may hold
 * what a restarted shipper sent again) and is dropped.  The source's
 * LSN order is its order of changes, so applied in order and without
 * duplicates, no older change is ever written over a newer one.
 *
 * A partition whose queue passes QUEUE_HIGH messages is paused until
 * it is under QUEUE_LOW (flow()), so memory stays bounded.
 *
 * Table events are not transactional in tdb: a create or drop is done,
 * then the position written; after a crash between, it is done again,
 * and an existing table (create) or an absent one (drop) is no error.
 */
#include "kafka.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdb/client.h>

#define SNAP_BATCH 256
#define DISCOVER_MS 1000
#define QUEUE_HIGH 50000        /* a partition's queue: pause it above */
#define QUEUE_LOW 25000         /* and resume below */

enum akind { A_PUT, A_DEL, A_CREATE, A_DROP, A_SNAPEV, A_SNAPREC };

struct amsg {
	rd_kafka_message_t *m;
	enum akind kind;
	char table[TDB_NAME_MAX + 1];
	uint64_t lsn, txn, ops, idx, deadline;
	uint32_t flags, mode, max_extents, evict;
	uint64_t default_ttl, max_bytes, max_records;
};

struct part {
	char topic[256];
	int32_t partition;
	uint64_t lsn;           /* applied up to (0: nothing) */
	int64_t offset;         /* the last applied message's (-1: none) */
	bool assigned;
	bool paused;            /* its queue is long: not fetched */
	struct amsg *q;         /* queued, q[head .. head + len) */
	size_t head, len, cap;
};

struct otab {
	char name[TDB_NAME_MAX + 1];
	struct tdbc_table *t;
};

struct applier {
	const struct kf_opts *o;
	struct tdbc *c;
	struct tdbc_table *pos;
	rd_kafka_t *rk;
	struct part *parts;
	unsigned int nparts, partcap;
	struct otab *tabs;
	unsigned int ntabs;
	uint64_t applied_txns, applied_msgs, dups;
	unsigned char *have;    /* gather's index bitmap */
	size_t havecap;
	struct amsg **run;      /* gather's messages */
	size_t runcap;
};

/* --- partitions ------------------------------------------------------------ */

static struct part *part_get(struct applier *a, const char *topic,
			     int32_t partition, bool add)
{
	struct part *p;

	for (unsigned int i = 0; i < a->nparts; i++)
		if (a->parts[i].partition == partition &&
		    !strcmp(a->parts[i].topic, topic))
			return &a->parts[i];
	if (!add)
		return NULL;
	if (a->nparts == a->partcap) {
		unsigned int cap = a->partcap ? a->partcap * 2 : 16;

		p = realloc(a->parts, cap * sizeof(*p));
		if (!p)
			return NULL;
		a->parts = p;
		a->partcap = cap;
	}
	p = &a->parts[a->nparts++];
	memset(p, 0, sizeof(*p));
	snprintf(p->topic, sizeof(p->topic), "%s", topic);
	p->partition = partition;
	p->offset = -1;
	return p;
}

static int pos_key(const struct part *p, char *buf, size_t len)
{
	return snprintf(buf, len, "%s:%d", p->topic, (int)p->partition);
}

/* tdb_kafka_pos into the partitions: what was applied before. */
static int pos_load(struct applier *a)
{
	struct tdbc_scan *sc;
	const void *k, *v;
	size_t kl, vl;
	int e;

	if ((e = tdbc_scan_open(a->pos, NULL, 0, 0, &sc)))
		return e;
	while ((e = tdbc_scan_next(sc, &k, &kl, &v, &vl)) == 1) {
		char key[300], val[64], *colon;
		unsigned long long lsn;
		long long off;
		struct part *p;

		if (kl >= sizeof(key) || vl >= sizeof(val))
			continue;
		memcpy(key, k, kl);
		key[kl] = 0;
		memcpy(val, v, vl);
		val[vl] = 0;
		colon = strrchr(key, ':');
		if (!colon || sscanf(val, "%llu %lld", &lsn, &off) != 2) {
			kf_log("%s: key %s: not a position (\"LSN OFFSET\")",
			       KF_POS_TABLE, key);
			continue;
		}
		*colon = 0;
		if (!(p = part_get(a, key, atoi(colon + 1), true))) {
			e = -ENOMEM;
			break;
		}
		p->lsn = lsn;
		p->offset = off;
		kf_log("%s [%d]: applied up to LSN %llu, offset %lld", key,
		       (int)p->partition, lsn, off);
	}
	tdbc_scan_close(sc);
	return e < 0 ? e : 0;
}

static bool topic_wanted(const struct kf_opts *o, const char *topic)
{
	for (unsigned int i = 0; i < o->nmaps; i++)
		if (!strcmp(o->maps[i].topic, topic))
			return true;
	return !strncmp(topic, o->prefix, strlen(o->prefix));
}

/* New topics and partitions: assigned, from after their position. */
static int discover(struct applier *a)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_partition_list_t *l;
	rd_kafka_resp_err_t err;
	rd_kafka_error_t *ae;

	err = rd_kafka_metadata(a->rk, 1, NULL, &md, 2000);
	if (err) {
		kf_log("Kafka metadata: %s (retrying)", rd_kafka_err2str(err));
		return 0;
	}
	l = rd_kafka_topic_partition_list_new(8);
	for (int i = 0; i < md->topic_cnt; i++) {
		const struct rd_kafka_metadata_topic *t = &md->topics[i];

		if (t->err || !topic_wanted(a->o, t->topic))
			continue;
		for (int j = 0; j < t->partition_cnt; j++) {
			struct part *p = part_get(a, t->topic,
						  t->partitions[j].id, true);

			if (!p)
				continue;
			if (p->assigned)
				continue;
			p->assigned = true;
			rd_kafka_topic_partition_list_add(l, t->topic,
				p->partition)->offset = p->offset >= 0 ?
				p->offset + 1 : RD_KAFKA_OFFSET_BEGINNING;
		}
	}
	rd_kafka_metadata_destroy(md);
	if (l->cnt && (ae = rd_kafka_incremental_assign(a->rk, l))) {
		kf_log("assigning partitions: %s", rd_kafka_error_string(ae));
		rd_kafka_error_destroy(ae);
		rd_kafka_topic_partition_list_destroy(l);
		return -EIO;
	}
	rd_kafka_topic_partition_list_destroy(l);
	return 0;
}

/* --- messages -------------------------------------------------------------- */

static bool hdr(rd_kafka_headers_t *h, const char *name, char *buf,
		size_t len)
{
	const void *v;
	size_t n;

	if (!h || rd_kafka_header_get_last(h, name, &v, &n) || n >= len)
		return false;
	memcpy(buf, v, n);
	buf[n] = 0;
	return true;
}

static uint64_t hdr_u64(rd_kafka_headers_t *h, const char *name)
{
	char buf[32];

	return hdr(h, name, buf, sizeof(buf)) ? strtoull(buf, NULL, 10) : 0;
}

/* Decode m's headers into x: 0, or -EPROTO when m is not tdb-kafka's. */
static int decode(rd_kafka_message_t *m, struct amsg *x)
{
	rd_kafka_headers_t *h = NULL;
	char buf[32];

	memset(x, 0, sizeof(*x));
	x->m = m;
	rd_kafka_message_headers(m, &h);
	if (!hdr(h, "tdb.table", x->table, sizeof(x->table)) ||
	    !(x->lsn = hdr_u64(h, "tdb.lsn")))
		return -EPROTO;
	if (hdr(h, "tdb.event", buf, sizeof(buf))) {
		if (!strcmp(buf, "create"))
			x->kind = A_CREATE;
		else if (!strcmp(buf, "drop"))
			x->kind = A_DROP;
		else if (!strcmp(buf, "snapshot"))
			x->kind = A_SNAPEV;
		else
			return -EPROTO;
		x->flags = (uint32_t)hdr_u64(h, "tdb.flags");
		x->mode = (uint32_t)hdr_u64(h, "tdb.mode");
		x->max_extents = (uint32_t)hdr_u64(h, "tdb.max_extents");
		x->default_ttl = hdr_u64(h, "tdb.default_ttl");
		x->max_bytes = hdr_u64(h, "tdb.max_bytes");
		x->max_records = hdr_u64(h, "tdb.max_records");
		x->evict = (uint32_t)hdr_u64(h, "tdb.evict");
		return 0;
	}
	if (!hdr(h, "tdb.op", buf, sizeof(buf)))
		return -EPROTO;
	x->deadline = hdr_u64(h, "tdb.deadline");
	if (hdr_u64(h, "tdb.snapshot")) {
		x->kind = A_SNAPREC;
		return 0;
	}
	x->kind = !strcmp(buf, "del") ? A_DEL : A_PUT;
	x->txn = hdr_u64(h, "tdb.txn");
	x->ops = hdr_u64(h, "tdb.txn_ops");
	x->idx = hdr_u64(h, "tdb.txn_index");
	if (!x->txn || !x->ops || x->idx >= x->ops)
		return -EPROTO;
	return 0;
}

static int enqueue(struct applier *a, rd_kafka_message_t *m)
{
	struct part *p = part_get(a, rd_kafka_topic_name(m->rkt),
				  m->partition, false);
	struct amsg x;

	if (!p || decode(m, &x)) {
		if (p)
			kf_log("%s [%d] offset %lld: not a tdb-kafka message: "
			       "ignored", p->topic, (int)m->partition,
			       (long long)m->offset);
		rd_kafka_message_destroy(m);
		return 0;
	}
	if (p->head + p->len == p->cap) {
		if (p->head) {
			memmove(p->q, p->q + p->head, p->len * sizeof(*p->q));
			p->head = 0;
		} else {
			size_t cap = p->cap ? p->cap * 2 : 256;
			struct amsg *q = realloc(p->q, cap * sizeof(*q));

			if (!q)
				return -ENOMEM;
			p->q = q;
			p->cap = cap;
		}
	}
	p->q[p->head + p->len++] = x;
	return 0;
}

static void pop(struct part *p)
{
	struct amsg *x = &p->q[p->head];

	p->offset = x->m->offset;
	rd_kafka_message_destroy(x->m);
	p->head++;
	p->len--;
}

static bool is_dup(const struct part *p, const struct amsg *x)
{
	return x->kind == A_SNAPREC ? x->lsn < p->lsn : x->lsn <= p->lsn;
}

/* --- applying -------------------------------------------------------------- */

static struct tdbc_table *table(struct applier *a, const char *name)
{
	struct otab *t;

	for (unsigned int i = 0; i < a->ntabs; i++)
		if (!strcmp(a->tabs[i].name, name))
			return a->tabs[i].t;
	t = realloc(a->tabs, (a->ntabs + 1) * sizeof(*t));
	if (!t)
		return NULL;
	a->tabs = t;
	t = &a->tabs[a->ntabs];
	if (tdbc_table_open(a->c, name, &t->t)) {
		kf_log("replica table %s: %s (was its create shipped? a "
		       "shipper started without --snapshot on a tdbd with "
		       "tables sends only what follows)", name,
		       tdbc_errmsg(a->c));
		return NULL;
	}
	snprintf(t->name, sizeof(t->name), "%s", name);
	a->ntabs++;
	return t->t;
}

static void table_forget(struct applier *a, const char *name)
{
	for (unsigned int i = 0; i < a->ntabs; i++)
		if (!strcmp(a->tabs[i].name, name)) {
			tdbc_table_close(a->tabs[i].t);
			a->tabs[i] = a->tabs[--a->ntabs];
			return;
		}
}

static int pos_put(struct applier *a, struct tdbc_txn *txn,
		   const struct part *p, uint64_t lsn, int64_t off)
{
	char k[300], v[64];
	int kl = pos_key(p, k, sizeof(k));
	int vl = snprintf(v, sizeof(v), "%" PRIu64 " %lld", lsn,
			  (long long)off);

	return tdbc_put(a->pos, txn, k, (size_t)kl, v, (size_t)vl, 0);
}

static int fail(struct applier *a, const char *what, const char *table,
		uint64_t lsn, int e)
{
	kf_log("%s (table %s, LSN %" PRIu64 "): %s", what, table, lsn,
	       tdbc_errmsg(a->c)[0] ? tdbc_errmsg(a->c) : tdbc_strerror(e));
	return e;
}

/* A table event, then the position in its own transaction. */
static int apply_event(struct applier *a, struct part *p)
{
	struct amsg *x = &p->q[p->head];
	struct tdbc_table_opts to;
	struct tdbc_txn *txn;
	int e = 0;

	if (x->kind == A_DROP || x->kind == A_SNAPEV) {
		table_forget(a, x->table);
		e = tdbc_table_drop(a->c, x->table);
		if (e && e != -ENOENT)
			return fail(a, "dropping a table", x->table, x->lsn, e);
	}
	if (x->kind == A_CREATE || x->kind == A_SNAPEV) {
		tdbc_table_opts_init(&to);
		to.flags = x->flags;
		to.mode = x->mode;
		to.max_extents = x->max_extents;
		to.default_ttl = x->default_ttl;
		to.max_bytes = x->max_bytes;
		to.max_records = x->max_records;
		to.evict = x->evict;
		e = tdbc_table_create(a->c, x->table, &to);
		if (e && e != -EEXIST)
			return fail(a, "creating a table", x->table, x->lsn, e);
	}
	if ((e = tdbc_txn_begin(a->c, &txn)))
		return fail(a, "a transaction", KF_POS_TABLE, x->lsn, e);
	if ((e = pos_put(a, txn, p, x->lsn, x->m->offset)) ||
	    (e = tdbc_txn_commit(txn)))
		return fail(a, "writing the position", KF_POS_TABLE, x->lsn,
			    e);
	p->lsn = x->lsn;
	pop(p);
	a->applied_txns++;
	return 1;
}

static int put_one(struct applier *a, struct tdbc_txn *txn,
		   const struct amsg *x)
{
	struct tdbc_table *t = table(a, x->table);
	const rd_kafka_message_t *m = x->m;

	if (!t)
		return -ENOENT;
	if (x->kind == A_DEL)
		return tdbc_del(t, txn, m->key, m->key_len);
	if (x->deadline)
		return tdbc_put_at(t, txn, m->key, m->key_len, m->payload,
				   m->len, 0, 0, x->deadline);
	return tdbc_put(t, txn, m->key, m->key_len, m->payload, m->len, 0);
}

/* A run of snapshot records at p's head, in one transaction. */
static int apply_snap(struct applier *a, struct part *p)
{
	struct tdbc_txn *txn;
	size_t n = 0;
	int e;

	if ((e = tdbc_txn_begin(a->c, &txn)))
		return fail(a, "a transaction", p->q[p->head].table,
			    p->q[p->head].lsn, e);
	while (n < p->len && n < SNAP_BATCH &&
	       p->q[p->head + n].kind == A_SNAPREC) {
		if ((e = put_one(a, txn, &p->q[p->head + n]))) {
			tdbc_txn_abort(txn);
			return fail(a, "a snapshot's record",
				    p->q[p->head + n].table,
				    p->q[p->head + n].lsn, e);
		}
		n++;
	}
	e = pos_put(a, txn, p, p->q[p->head + n - 1].lsn,
		    p->q[p->head + n - 1].m->offset);
	if (e || (e = tdbc_txn_commit(txn))) {
		if (e && txn)
			(void)0;
		return fail(a, "committing a snapshot's records",
			    p->q[p->head].table, p->q[p->head].lsn, e);
	}
	p->lsn = p->q[p->head + n - 1].lsn;
	while (n--)
		pop(p);
	a->applied_msgs++;
	return 1;
}

static int grow(struct applier *a, uint64_t ops, size_t runs)
{
	if (ops > a->havecap) {
		unsigned char *h = realloc(a->have, ops);

		if (!h)
			return -ENOMEM;
		a->have = h;
		a->havecap = ops;
	}
	if (runs > a->runcap) {
		struct amsg **r = realloc(a->run, runs * sizeof(*r));

		if (!r)
			return -ENOMEM;
		a->run = r;
		a->runcap = runs;
	}
	return 0;
}

/* How many of p's head messages are ops of transaction T. */
static size_t head_run(const struct part *p, uint64_t T)
{
	size_t n = 0;

	while (n < p->len && p->q[p->head + n].txn == T &&
	       (p->q[p->head + n].kind == A_PUT ||
		p->q[p->head + n].kind == A_DEL))
		n++;
	return n;
}

/* Transaction T, if all of it is at the heads: 1 applied, 0 not yet. */
static int apply_txn(struct applier *a, uint64_t T, uint64_t ops)
{
	struct tdbc_txn *txn;
	size_t got = 0, total = 0;
	int e;

	for (unsigned int i = 0; i < a->nparts; i++)
		total += head_run(&a->parts[i], T);
	if (total < ops)
		return 0;
	if ((e = grow(a, ops, ops)))
		return e;
	memset(a->have, 0, ops);
	for (unsigned int i = 0; i < a->nparts; i++) {
		struct part *p = &a->parts[i];
		size_t n = head_run(p, T);

		for (size_t j = 0; j < n; j++) {
			struct amsg *x = &p->q[p->head + j];

			if (x->ops != ops || x->idx >= ops)
				continue;
			if (!a->have[x->idx]++) {
				a->run[x->idx] = x;
				got++;
			}
		}
	}
	if (got < ops)
		return 0;
	if ((e = tdbc_txn_begin(a->c, &txn)))
		return fail(a, "a transaction", a->run[0]->table, T, e);
	for (uint64_t i = 0; i < ops; i++)
		if ((e = put_one(a, txn, a->run[i]))) {
			tdbc_txn_abort(txn);
			return fail(a, "applying a change", a->run[i]->table,
				    T, e);
		}
	for (unsigned int i = 0; i < a->nparts && !e; i++) {
		struct part *p = &a->parts[i];
		size_t n = head_run(p, T);

		if (n)
			e = pos_put(a, txn, p, T,
				    p->q[p->head + n - 1].m->offset);
	}
	if (e) {
		tdbc_txn_abort(txn);
		return fail(a, "writing the position", KF_POS_TABLE, T, e);
	}
	if ((e = tdbc_txn_commit(txn)))
		return fail(a, "committing a transaction", a->run[0]->table,
			    T, e);
	for (unsigned int i = 0; i < a->nparts; i++) {
		struct part *p = &a->parts[i];
		size_t n = head_run(p, T);

		if (n)
			p->lsn = T;
		while (n--)
			pop(p);
	}
	a->applied_txns++;
	a->applied_msgs += ops;
	return 1;
}

/* What can be applied: 0 (nothing more now) or a negative errno. */
static int apply_ready(struct applier *a)
{
	int progress, e;

	do {
		progress = 0;
		for (unsigned int i = 0; i < a->nparts; i++) {
			struct part *p = &a->parts[i];
			struct amsg *x;

			if (!p->len)
				continue;
			x = &p->q[p->head];
			if (is_dup(p, x)) {
				pop(p);
				a->dups++;
				progress = 1;
				continue;
			}
			if (x->kind == A_SNAPREC)
				e = apply_snap(a, p);
			else if (x->kind == A_PUT || x->kind == A_DEL)
				e = apply_txn(a, x->txn, x->ops);
			else
				e = apply_event(a, p);
			if (e < 0)
				return e;
			progress |= e;
		}
	} while (progress);
	return 0;
}

/* --- setup and the loop ---------------------------------------------------- */

static int apply_setup(struct applier *a, const struct kf_opts *o)
{
	rd_kafka_conf_t *conf;
	char err[512];
	int e;

	a->o = o;
	if ((e = tdbc_connect(&a->c, o->socket, TDBC_NO_MAP, err,
			      sizeof(err)))) {
		kf_log("%s", err);
		return e;
	}
	e = tdbc_table_create(a->c, KF_POS_TABLE, NULL);
	if (e && e != -EEXIST) {
		kf_log("creating %s in the replica: %s", KF_POS_TABLE,
		       tdbc_errmsg(a->c));
		return e;
	}
	if ((e = tdbc_table_open(a->c, KF_POS_TABLE, &a->pos)) ||
	    (e = pos_load(a))) {
		kf_log("reading %s in the replica: %s", KF_POS_TABLE,
		       tdbc_errmsg(a->c)[0] ? tdbc_errmsg(a->c) :
		       tdbc_strerror(e));
		return e;
	}
	if (!(conf = kf_conf(o, err, sizeof(err)))) {
		kf_log("%s", err);
		return -EINVAL;
	}
	if (rd_kafka_conf_set(conf, "group.id", "tdb-kafka-apply", err,
			      sizeof(err)) ||
	    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
			      sizeof(err)) ||
	    rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", err,
			      sizeof(err))) {
		kf_log("librdkafka: %s", err);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	a->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!a->rk) {
		kf_log("librdkafka consumer: %s", err);
		return -EINVAL;
	}
	rd_kafka_poll_set_consumer(a->rk);
	return 0;
}

static void apply_free(struct applier *a)
{
	if (a->rk) {
		rd_kafka_consumer_close(a->rk);
		for (unsigned int i = 0; i < a->nparts; i++)
			while (a->parts[i].len)
				pop(&a->parts[i]);
		rd_kafka_destroy(a->rk);
	}
	for (unsigned int i = 0; i < a->ntabs; i++)
		tdbc_table_close(a->tabs[i].t);
	if (a->pos)
		tdbc_table_close(a->pos);
	if (a->c)
		tdbc_close(a->c);
	for (unsigned int i = 0; i < a->nparts; i++)
		free(a->parts[i].q);
	free(a->parts);
	free(a->tabs);
	free(a->have);
	free(a->run);
}

/* Bound the queues: a partition far ahead of the others (waiting for
 * a transaction's ops on them, or a snapshot applied slower than it
 * comes) is paused.  Never all of them: the oldest transaction's ops
 * are at the heads of the queues, which a paused partition does not
 * hold back. */
static void flow(struct applier *a)
{
	for (unsigned int i = 0; i < a->nparts; i++) {
		struct part *p = &a->parts[i];
		rd_kafka_topic_partition_list_t *l;
		bool pause = !p->paused && p->len > QUEUE_HIGH;

		if (!pause && !(p->paused && p->len < QUEUE_LOW))
			continue;
		l = rd_kafka_topic_partition_list_new(1);
		rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
		if (pause ? rd_kafka_pause_partitions(a->rk, l) :
			    rd_kafka_resume_partitions(a->rk, l))
			kf_log("%s [%d]: cannot %s fetching", p->topic,
			       (int)p->partition, pause ? "pause" : "resume");
		else
			p->paused = pause;
		rd_kafka_topic_partition_list_destroy(l);
	}
}

/* Nothing applied for a while with messages queued: say what waits
 * (a transaction whose ops have not all come, a partition not found). */
static void log_stall(const struct applier *a)
{
	for (unsigned int i = 0; i < a->nparts; i++) {
		const struct part *p = &a->parts[i];
		const struct amsg *x;

		if (!p->len)
			continue;
		x = &p->q[p->head];
		kf_log("waiting: %s [%d]: %zu queued, the first LSN %" PRIu64
		       " (transaction %" PRIu64 ", op %" PRIu64 " of %" PRIu64
		       "), applied up to LSN %" PRIu64, p->topic,
		       (int)p->partition, p->len, x->lsn, x->txn, x->idx + 1,
		       x->ops, p->lsn);
	}
}

/* Take what the consumer has (waiting up to ms for the first). */
static int consume(struct applier *a, int ms)
{
	rd_kafka_message_t *m;
	int e, n = 0;

	while (n < 10000 && (m = rd_kafka_consumer_poll(a->rk, n ? 0 : ms))) {
		if (m->err) {
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				kf_log("consuming: %s",
				       rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			continue;
		}
		if ((e = enqueue(a, m)))
			return e;
		n++;
	}
	return 0;
}

int kf_apply(const struct kf_opts *o)
{
	struct applier a = { 0 };
	uint64_t last = 0, status = 0, moved = 0, done = 0;
	int e;

	if ((e = apply_setup(&a, o)))
		goto out;
	kf_notify("READY=1");
	while (!kf_stop) {
		uint64_t now = kf_now_ms();

		if (now - last >= DISCOVER_MS) {
			if ((e = discover(&a)))
				break;
			last = now;
		}
		if ((e = consume(&a, 100)) || (e = apply_ready(&a)))
			break;
		flow(&a);
		if (a.applied_txns + a.dups != done) {
			done = a.applied_txns + a.dups;
			moved = now;
		} else if (now - moved >= 5000) {
			log_stall(&a);
			moved = now;
		}
		if (now - status >= 1000) {
			kf_notify("STATUS=applied %" PRIu64 " transactions, "
				  "%" PRIu64 " duplicates dropped",
				  a.applied_txns, a.dups);
			status = now;
		}
	}
	kf_notify("STOPPING=1");
	kf_log("applied %" PRIu64 " transactions (%" PRIu64 " changes), "
	       "dropped %" PRIu64 " duplicates", a.applied_txns,
	       a.applied_msgs, a.dups);
out:
	apply_free(&a);
	return e ? 1 : 0;
}
