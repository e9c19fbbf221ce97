// SPDX-License-Identifier: GPL-2.0-only
/*
 * ship.c - tdb-kafka ship: tdbd's WAL into Kafka.
 *
 * The source is the WAL (src/wal/wal.h), read only with wal_read_range:
 * one WAL_OPS_V record is one transaction (or one write) with its
 * version; WAL_CREATE and WAL_DROP are table events.  Only records at or
 * below the durable LSN (STATS' wal_durable, polled) are read, so Kafka
 * never carries a change a crash of tdbd may take back.  Every op of a
 * table the shipper's uid may read becomes one message on the table's
 * topic, partition 0 (kafka.h has the format); a table it may not read
 * is skipped, logged once.
 *
 * Position: records are produced in LSN order; a ring holds each one's
 * count of messages not yet acknowledged (delivery reports), and the
 * position is the highest LSN at or below which every message was
 * acknowledged.  It is saved (state.c) at most every 100 ms and at
 * exit; a restarted shipper reads the WAL after it, so Kafka may get
 * again what followed it (the applier drops those by LSN), never less.
 * The producer is idempotent with acks=all: a message retried by
 * librdkafka is neither doubled nor reordered within the partition; a
 * message that fails for good stops the shipper (exit 1) with the
 * position before it saved.
 *
 * The shipper never waits for tdbd's writers or makes them wait: it
 * reads files and asks STATS.  A slow or absent Kafka fills the ring or
 * librdkafka's bounded queue, and the shipper stops reading the WAL
 * until acknowledgements come (it lags; the status says by how much).
 */
#include "ship_int.h"
#include "wal.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAVE_EVERY_MS 100
#define STATUS_EVERY_MS 1000

void kf_hdr_u64(rd_kafka_headers_t *h, const char *name, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	rd_kafka_header_add(h, name, -1, buf, n);
}

void kf_hdr_str(rd_kafka_headers_t *h, const char *name, const char *v)
{
	rd_kafka_header_add(h, name, -1, v, (ssize_t)strlen(v));
}

/* --- tables the uid may read --------------------------------------------- */

static struct kf_tab *tab_find(struct shipper *s, const char *name)
{
	for (unsigned int i = 0; i < s->ntabs; i++)
		if (!strcmp(s->tabs[i].name, name))
			return &s->tabs[i];
	return NULL;
}

static struct kf_tab *tab_add(struct shipper *s, const char *name)
{
	struct kf_tab *t;

	if (s->ntabs == s->tabcap) {
		unsigned int cap = s->tabcap ? s->tabcap * 2 : 64;

		t = realloc(s->tabs, cap * sizeof(*t));
		if (!t)
			return NULL;
		s->tabs = t;
		s->tabcap = cap;
	}
	t = &s->tabs[s->ntabs++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->allow = false;
	return t;
}

/* The create record's mode as the owner applies it to the shipper's
 * uid (the table is gone: it cannot be opened to ask). */
static bool mode_allows(const struct shipper *s, const struct wal_create *c)
{
	if (s->uid == 0)
		return true;
	if (c->uid == s->uid)
		return c->mode & 0400;
	if (c->gid == s->gid)
		return c->mode & 0040;
	for (int i = 0; i < s->ngroups; i++)
		if (s->groups[i] == c->gid)
			return c->mode & 0040;
	return c->mode & 0004;
}

int kf_tab_allowed(struct shipper *s, const char *name,
		   const struct wal_create *c)
{
	struct kf_tab *t = tab_find(s, name);
	struct tdbc_table *h;
	int e;

	/* an applier's position (a replica that is also a source) */
	if (!strcmp(name, KF_POS_TABLE))
		return 0;
	if (t && !c)
		return t->allow;
	if (!t && !(t = tab_add(s, name)))
		return -ENOMEM;
	e = tdbc_table_open(s->c, name, &h);
	if (!e) {
		tdbc_table_close(h);
		t->allow = true;
	} else if (e == -EACCES) {
		t->allow = false;
	} else if (e == -ENOENT) {
		/* dropped since: its create record says, or nothing does */
		t->allow = c ? mode_allows(s, c) : false;
		if (!c)
			kf_log("table %s: not in tdbd any more and its create "
			       "is before the position: its changes are not "
			       "shipped", name);
	} else {
		kf_log("table %s: cannot open it to check read access: %s",
		       name, tdbc_errmsg(s->c)[0] ? tdbc_errmsg(s->c) :
		       tdbc_strerror(e));
		return e;
	}
	if (!t->allow && e == -EACCES) {
		kf_log("table %s: uid %u may not read it: not shipped", name,
		       (unsigned int)s->uid);
		s->skipped++;
	}
	return t->allow;
}

static int tab_list_fn(void *arg, const struct tdbc_table_stat *st)
{
	int e = kf_tab_allowed(arg, st->name, NULL);

	return e < 0 ? e : 0;
}

/* --- records in flight ---------------------------------------------------- */

uint64_t kf_pend_push(struct shipper *s, uint64_t lsn, uint64_t n)
{
	struct kf_pend *p = &s->ring[s->head % s->cap];

	p->lsn = lsn;
	p->left = n;
	return s->head++;
}

static void pend_advance(struct shipper *s)
{
	while (s->tail < s->head && !s->ring[s->tail % s->cap].left)
		s->acked = s->ring[s->tail++ % s->cap].lsn;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *arg)
{
	struct shipper *s = arg;
	uint64_t slot = (uint64_t)(uintptr_t)m->_private;

	(void)rk;
	if (m->err) {
		if (!s->fatal)
			snprintf(s->fatal_msg, sizeof(s->fatal_msg),
				 "a message to %s was not delivered: %s",
				 rd_kafka_topic_name(m->rkt),
				 rd_kafka_err2str(m->err));
		s->fatal = -EIO;
		return;
	}
	s->ring[slot % s->cap].left--;
}

int kf_produce(struct shipper *s, const char *table, const void *key,
	       size_t klen, const void *val, size_t vlen,
	       rd_kafka_headers_t *h, uint64_t slot)
{
	char tbuf[512];
	const char *topic = kf_topic(s->o, table, tbuf, sizeof(tbuf));
	rd_kafka_resp_err_t err;

	for (;;) {
		err = rd_kafka_producev(s->rk, RD_KAFKA_V_TOPIC(topic),
			RD_KAFKA_V_PARTITION(0),
			RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			RD_KAFKA_V_KEY(key, klen),
			RD_KAFKA_V_VALUE((void *)val, vlen),
			RD_KAFKA_V_HEADERS(h),
			RD_KAFKA_V_OPAQUE((void *)(uintptr_t)slot),
			RD_KAFKA_V_END);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		/* Kafka is slow or away: wait here, not in tdbd */
		rd_kafka_poll(s->rk, 100);
		if (kf_stop || s->fatal) {
			rd_kafka_headers_destroy(h);
			return s->fatal ? s->fatal : -EINTR;
		}
	}
	if (err) {
		rd_kafka_headers_destroy(h);
		kf_log("producing to topic %s: %s", topic,
		       rd_kafka_err2str(err));
		return -EIO;
	}
	s->messages++;
	return 0;
}

/* --- the WAL's records ---------------------------------------------------- */

static int ship_ops(struct shipper *s, const struct wal_rec *r)
{
	uint64_t version, slot, n = 0, idx = 0;
	struct wal_opv op;
	uint32_t pos = 0;
	int e;

	if ((e = wal_ops_version(r, &version)))
		return e;
	while ((e = wal_next_op(r, &pos, &op)) == 1) {
		int a = kf_tab_allowed(s, op.name, NULL);

		if (a < 0)
			return a;
		n += a;
	}
	if (e)
		return e;
	slot = kf_pend_push(s, r->lsn, n);
	pos = 0;
	while (n && (e = wal_next_op(r, &pos, &op)) == 1) {
		rd_kafka_headers_t *h;
		bool del = op.op == WAL_OP_DEL;

		if (kf_tab_allowed(s, op.name, NULL) != 1)
			continue;
		h = rd_kafka_headers_new(8);
		kf_hdr_str(h, "tdb.table", op.name);
		kf_hdr_str(h, "tdb.op", del ? "del" : "put");
		kf_hdr_u64(h, "tdb.lsn", r->lsn);
		kf_hdr_u64(h, "tdb.version", version);
		kf_hdr_u64(h, "tdb.txn", r->lsn);
		kf_hdr_u64(h, "tdb.txn_ops", n);
		kf_hdr_u64(h, "tdb.txn_index", idx++);
		if (op.deadline)
			kf_hdr_u64(h, "tdb.deadline", op.deadline);
		e = kf_produce(s, op.name, op.key, op.klen,
			       del ? NULL : op.val, del ? 0 : op.vlen, h, slot);
		if (e)
			return e;
	}
	return e < 0 ? e : 0;
}

/* A table event (create, drop): one message, no key, no value. */
static int ship_event(struct shipper *s, const struct wal_rec *r,
		      const char *name, const struct wal_create *c)
{
	rd_kafka_headers_t *h = rd_kafka_headers_new(16);
	uint64_t slot = kf_pend_push(s, r->lsn, 1);

	kf_hdr_str(h, "tdb.table", name);
	kf_hdr_str(h, "tdb.event", c ? "create" : "drop");
	kf_hdr_u64(h, "tdb.lsn", r->lsn);
	kf_hdr_u64(h, "tdb.txn", r->lsn);
	kf_hdr_u64(h, "tdb.txn_ops", 1);
	kf_hdr_u64(h, "tdb.txn_index", 0);
	if (c) {
		kf_hdr_u64(h, "tdb.flags", c->flags);
		kf_hdr_u64(h, "tdb.mode", c->mode);
		kf_hdr_u64(h, "tdb.max_extents", c->max_extents);
		kf_hdr_u64(h, "tdb.default_ttl", c->default_ttl);
		kf_hdr_u64(h, "tdb.max_bytes", c->max_bytes);
		kf_hdr_u64(h, "tdb.max_records", c->max_records);
		kf_hdr_u64(h, "tdb.evict", c->evict);
	}
	return kf_produce(s, name, NULL, 0, NULL, 0, h, slot);
}

static int on_rec(void *arg, const struct wal_rec *r)
{
	struct shipper *s = arg;
	struct wal_create c;
	char name[65];
	int e, a;

	if (kf_stop || s->fatal)
		return s->fatal ? s->fatal : -EINTR;
	if (wal_is_ops(r)) {
		e = ship_ops(s, r);
	} else if (r->type == WAL_CREATE) {
		if ((e = wal_get_create(r, &c)))
			return e;
		a = kf_tab_allowed(s, c.name, &c);
		if (a < 0)
			return a;
		e = a ? ship_event(s, r, c.name, &c) :
			(kf_pend_push(s, r->lsn, 0), 0);
	} else if (r->type == WAL_DROP) {
		if ((e = wal_get_drop(r, name)))
			return e;
		a = kf_tab_allowed(s, name, NULL);
		if (a < 0)
			return a;
		e = a ? ship_event(s, r, name, NULL) :
			(kf_pend_push(s, r->lsn, 0), 0);
	} else {
		kf_pend_push(s, r->lsn, 0);
		e = 0;
	}
	if (!e)
		s->read = r->lsn;
	return e;
}

/* --- position, lag, status ------------------------------------------------- */

static void lag_note(struct shipper *s, uint64_t now)
{
	if (s->nlag && s->lag[s->nlag - 1].lsn >= s->durable)
		return;
	if (s->nlag && now - s->lag[s->nlag - 1].ms < 100)
		return;
	if (s->nlag == KF_LAGPTS) {
		memmove(s->lag, s->lag + 1, sizeof(s->lag[0]) * (KF_LAGPTS - 1));
		s->nlag--;
	}
	s->lag[s->nlag].lsn = s->durable;
	s->lag[s->nlag++].ms = now;
}

/* How long the oldest durable record not yet acknowledged has been
 * known to be durable (0: none waits). */
static uint64_t lag_ms(struct shipper *s, uint64_t now)
{
	unsigned int i = 0;

	while (i < s->nlag && s->lag[i].lsn <= s->acked)
		i++;
	if (i) {
		memmove(s->lag, s->lag + i, sizeof(s->lag[0]) * (s->nlag - i));
		s->nlag -= i;
	}
	return s->nlag && s->acked < s->durable ? now - s->lag[0].ms : 0;
}

static int save_pos(struct shipper *s, uint64_t now, bool force)
{
	struct kf_state st = { .lsn = s->acked, .have = true };
	char err[512];
	int e;

	if (s->acked == s->saved || (!force && now - s->save_ms <
				     SAVE_EVERY_MS))
		return 0;
	if ((e = kf_state_save(s->o->state_dir, &st, err, sizeof(err)))) {
		kf_log("saving the position: %s", err);
		return e;
	}
	s->saved = s->acked;
	s->save_ms = now;
	return 0;
}

static void report(struct shipper *s, uint64_t now, const char *note,
		   bool force)
{
	struct kf_status st;
	char err[512];
	uint64_t lag = lag_ms(s, now);

	if (!force && now - s->status_ms < STATUS_EVERY_MS)
		return;
	s->status_ms = now;
	st = (struct kf_status){
		.acked = s->acked, .read = s->read, .durable = s->durable,
		.lag_ms = lag, .snapshot_lsn = s->snapshot_lsn,
		.messages = s->messages, .tables_skipped = s->skipped,
		.time_ms = now, .note = note,
	};
	if (kf_status_save(s->o->state_dir, &st, err, sizeof(err)))
		kf_log("writing the status: %s", err);
	kf_notify("STATUS=acked LSN %" PRIu64 ", durable %" PRIu64
		  ", lag %" PRIu64 " LSNs, %" PRIu64 ".%03" PRIu64 " s%s%s",
		  s->acked, s->durable,
		  s->durable > s->acked ? s->durable - s->acked : 0,
		  lag / 1000, lag % 1000, note[0] ? "; " : "", note);
}

/* --- setup and the loop ---------------------------------------------------- */

static int poll_durable(struct shipper *s)
{
	struct tdbc_stats st;
	int e = tdbc_stats(s->c, &st);

	if (e) {
		kf_log("STATS from tdbd: %s", tdbc_strerror(e));
		return e;
	}
	s->durable = st.wal_durable;
	return 0;
}

/* Where to start: the saved position, or a snapshot, or the WAL's
 * beginning when it is all there. */
static int start_pos(struct shipper *s)
{
	struct kf_state st;
	char err[512];
	int e;

	if ((e = kf_state_load(s->o->state_dir, &st, err, sizeof(err)))) {
		kf_log("%s", err);
		return e;
	}
	if (st.have) {
		s->acked = s->read = s->saved = st.lsn;
		kf_log("resuming after LSN %" PRIu64, st.lsn);
		return 0;
	}
	if (s->o->snapshot)
		return kf_snapshot(s, &s->read);
	kf_log("no position in %s: shipping the WAL from its first record "
	       "(LSN 1)", s->o->state_dir);
	return 0;
}

/* Did --kafka-conf set key? */
static bool conf_given(const struct kf_opts *o, const char *key)
{
	size_t n = strlen(key);

	for (unsigned int i = 0; i < o->nconf; i++)
		if (!strncmp(o->conf[i], key, n) && o->conf[i][n] == '=')
			return true;
	return false;
}

static int ship_setup(struct shipper *s, const struct kf_opts *o)
{
	char err[512];
	rd_kafka_conf_t *conf;
	int e;

	s->o = o;
	s->uid = geteuid();
	s->gid = getegid();
	s->ngroups = getgroups(64, s->groups);
	if (s->ngroups < 0)
		s->ngroups = 0;
	snprintf(s->wal_dir, sizeof(s->wal_dir), "%s/wal", o->data_dir);
	if (mkdir(o->state_dir, 0750) && errno != EEXIST) {
		kf_log("state directory %s: %s", o->state_dir,
		       strerror(errno));
		return -errno;
	}
	s->cap = o->max_inflight;
	if (!(s->ring = calloc(s->cap, sizeof(*s->ring))))
		return -ENOMEM;
	if ((e = tdbc_connect(&s->c, o->socket, TDBC_NO_MAP, err,
			      sizeof(err)))) {
		kf_log("%s", err);
		return e;
	}
	if (!(conf = kf_conf(o, err, sizeof(err)))) {
		kf_log("%s", err);
		return -EINVAL;
	}
	if (rd_kafka_conf_set(conf, "enable.idempotence", "true", err,
			      sizeof(err)) ||
	    rd_kafka_conf_set(conf, "acks", "all", err, sizeof(err))) {
		kf_log("librdkafka: %s", err);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	/* Kafka away for long only makes the shipper lag: librdkafka
	 * retries for ever unless told otherwise (-X message.timeout.ms) */
	if (!conf_given(o, "message.timeout.ms") &&
	    rd_kafka_conf_set(conf, "message.timeout.ms", "0", err,
			      sizeof(err))) {
		kf_log("librdkafka: %s", err);
		rd_kafka_conf_destroy(conf);
		return -EINVAL;
	}
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_opaque(conf, s);
	s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!s->rk) {
		kf_log("librdkafka producer: %s", err);
		return -EINVAL;
	}
	if ((e = tdbc_table_list(s->c, tab_list_fn, s))) {
		kf_log("listing tdbd's tables: %s", tdbc_strerror(e));
		return e;
	}
	/* ready before a snapshot, which may outlast a start timeout */
	kf_notify("READY=1");
	return start_pos(s);
}

/* One round: read what is durable (as much as there is room for). */
static int ship_round(struct shipper *s)
{
	uint64_t room = s->cap - (s->head - s->tail), upto;
	char err[1024];
	int e;

	if (s->read >= s->durable || room == 0)
		return 0;
	upto = s->durable;
	if (upto - s->read > s->o->batch)
		upto = s->read + s->o->batch;
	if (upto - s->read > room)
		upto = s->read + room;
	e = wal_read_range(s->wal_dir, s->read, upto, on_rec, s, err,
			   sizeof(err));
	if (e == -ENODATA) {
		kf_log("the WAL from LSN %" PRIu64 " on is gone (%s)%s",
		       s->read + 1, err, s->o->snapshot ?
		       ": taking a new snapshot" :
		       ": start with --snapshot to take a new one");
		if (!s->o->snapshot)
			return e;
		/* what is in flight is older than the snapshot: let it go */
		rd_kafka_flush(s->rk, 10000);
		return kf_snapshot(s, &s->read);
	}
	if (e && e != -EINTR && !s->fatal)
		kf_log("reading the WAL: %s", e == -EUCLEAN || e == -ENODATA ?
		       err : strerror(-e));
	return e == -EINTR ? 0 : e;
}

static void ship_free(struct shipper *s)
{
	if (s->rk)
		rd_kafka_destroy(s->rk);
	if (s->c)
		tdbc_close(s->c);
	free(s->ring);
	free(s->tabs);
}

int kf_ship(const struct kf_opts *o)
{
	struct shipper s = { 0 };
	uint64_t now;
	int e;

	if ((e = ship_setup(&s, o)))
		goto out;
	while (!kf_stop && !s.fatal) {
		if ((e = poll_durable(&s)))
			break;
		now = kf_now_ms();
		lag_note(&s, now);
		if ((e = ship_round(&s)))
			break;
		rd_kafka_poll(s.rk, s.read >= s.durable ? 20 : 0);
		pend_advance(&s);
		now = kf_now_ms();
		if ((e = save_pos(&s, now, false)))
			break;
		report(&s, now, s.head - s.tail == s.cap ?
		       "waiting for Kafka" : "", false);
	}
	kf_notify("STOPPING=1");
	if (!s.fatal)
		rd_kafka_flush(s.rk, 10000);
	pend_advance(&s);
	if (s.ring) {
		int e2 = save_pos(&s, kf_now_ms(), true);

		e = e ? e : e2;
		report(&s, kf_now_ms(), s.fatal ? s.fatal_msg : "stopped",
		       true);
	}
	if (s.fatal) {
		kf_log("%s; the position stays at LSN %" PRIu64, s.fatal_msg,
		       s.acked);
		e = s.fatal;
	}
out:
	ship_free(&s);
	return e ? 1 : 0;
}
