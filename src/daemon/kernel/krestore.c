// SPDX-License-Identifier: GPL-2.0-only
/*
 * krestore.c - kernel mode's restore (kernel.h): every table loaded into
 * tdb.ko through the supervisor's own /dev/tdb file (the only client
 * tdb.ko serves while it is recovering): TDB_IOC_ATTACH on that file,
 * its rings mapped, TABLE_CREATE (owner, group, mode, max-extents,
 * default TTL, bounds and eviction policy, flags: an ordered table is
 * made ordered) then the records in RESTORE_BULK requests (tdb/proto.h,
 * TDB_A_RECORDS): up to KR_BULK_RECS records or TDB_RESTORE_BULK_MAX
 * bytes each, every record with its version and its deadline if it has
 * one (the same instant, not a TTL counted again from now; an expired
 * record is not restored), one ack per request.  A record too large for
 * a batch, or one without a version, goes as a PUT (with
 * TDB_A_SET_VERSION and TDB_A_DEADLINE: what tdb.ko's owner does with a
 * batch's record is exactly that).  TDBD_KERNEL_RESTORE=put in tdbd's
 * environment sends every record as a PUT (how restores were made
 * before RESTORE_BULK: for measuring the two).
 *
 * Two sources: the checkpoint store (tdbd_kernel_restore_store: the
 * store's tables read with tdbd_ckpt_load_table, LMDB's file-backed
 * pages, after recovery applied the WAL to it: nothing of the data is
 * copied into tdbd's memory but the batch being packed) or the mirror
 * (tdbd_kernel_restore: a store with tables set aside, which the WAL
 * cannot be applied to, or TDBD_KERNEL_RESTORE_FROM=mirror).
 *
 * A pipeline: this thread reads the source and packs requests into the
 * submission ring, publishing each; the enterer thread (kr_enterer)
 * calls TDB_IOC_ENTER, in which tdb.ko applies what is published, and
 * takes the answers from the completion ring, so that reading and
 * packing the next batches overlaps tdb.ko's inserting the last ones.
 * Built with the ring core and the codec that tdbd already has (not
 * libtdbclient, whose objects carry their own copies of the core's).
 *
 * Invariants: every request is answered by an NLMSG_ERROR ack (tdb.ko
 * holds no answer of the supervisor: its changes are not logged while
 * it recovers); at most KR_SLOTS requests are in flight, and each
 * request's first record is remembered (slot[seq % KR_SLOTS]) so that a
 * refused record can be named by table and key: the walk is done again
 * to it (the same records in the same order: the store is not written
 * while we restore, and expiry is judged against one instant).  The
 * first failed answer stops the restore with its errno and message; a
 * table is finished (every answer in) before the next is created.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "durable/ckpt.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "kernel.h"
#include "platform.h"
#include "proto.h"
#include "ring.h"
#include "ring_core.h"
#include "tdb/kdev.h"
#include "notify.h"
#include "tdbd.h"

#define KR_RING   (4u << 20)    /* each ring's data: max_msg 2 MiB */
#define KR_BATCH  256u          /* records per cursor step */
#define KR_BULK_RECS 4096u      /* records per RESTORE_BULK at most (the
				 * bytes bound, TDB_RESTORE_BULK_MAX, cuts
				 * sooner but for tiny records) */
#define KR_SLOTS  4096u         /* requests in flight at most */

struct kr {
	int fd;
	void *sqh, *sqd, *cqh, *cqd;
	struct tdb_ring sq, cq;
	uint32_t seq;
	bool single;            /* TDBD_KERNEL_RESTORE=put: no batches */
	unsigned char *bulk;    /* the batch being packed */
	uint32_t bulk_len, bulk_n;
	uint64_t bulk_first;    /* the ordinal of its first record */
	uint64_t n_bulk, n_put;     /* requests sent: batches, PUTs */
	uint64_t last_report;   /* ns: progress, once a second */
	uint64_t now_ms;        /* expiry is judged against this */
	uint64_t old_version;   /* a record without one gets it */
	uint64_t ord;           /* records of this table passed on */
	uint64_t *records;      /* all tables' */
	const char *table;
	/* finding the record at ordinal find (a refused one) */
	bool finding;
	uint64_t find;
	char found[4 * 64 + 1];
	/* the enterer, under m */
	pthread_t thr;
	bool thr_on, inited;
	pthread_mutex_t m;
	pthread_cond_t work, done;
	uint64_t committed, answered;
	/* where the time goes (ns), for the log line at the end: the
	 * packer waiting for ring room or a slot (tdb.ko is the slower
	 * stage), the enterer waiting for work (the packer is) and in
	 * TDB_IOC_ENTER (tdb.ko applying) */
	uint64_t ns_pack_wait, ns_enter_idle, ns_enter;
	uint64_t ns_begin;
	bool quit, dead;
	int err;                /* the first failure */
	uint64_t err_ord;       /* the refused record's ordinal */
	bool err_rec;           /* a record was refused (err_ord is it) */
	uint64_t slot[KR_SLOTS];        /* seq -> its first record's ordinal */
	char msg[TDB_PROTO_EXTACK_MAX + 64];
};

/* Once a second: where the restore is, to the log and systemd (whose
 * start timeout is pushed 30 s on each time, as recovery does). */
static void kr_report(struct kr *k, const char *table, uint64_t records)
{
	uint64_t now = tdbd_now_ns();

	if (now - k->last_report < 1000000000ull)
		return;
	k->last_report = now;
	tdbd_notify("STATUS=restoring into tdb.ko: table %s, %llu records "
		    "so far\nEXTEND_TIMEOUT_USEC=30000000", ESC(table),
		    (unsigned long long)records);
	tdbd_log(L_INFO, "kernel mode: restoring into tdb.ko: table %s, "
		 "%llu records so far", ESC(table),
		 (unsigned long long)records);
}

static void *map(int fd, size_t len, int prot, uint64_t off)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

static int kr_attach(struct kr *k)
{
	struct tdb_dev_attach a = { .version = TDB_DEV_VERSION,
				    .sq_data_size = KR_RING,
				    .cq_data_size = KR_RING };
	int e;

	if (ioctl(k->fd, TDB_IOC_ATTACH, &a) < 0) {
		e = -errno;
		snprintf(k->msg, sizeof(k->msg), "TDB_IOC_ATTACH: %s",
			 ERRSTR(e));
		return e;
	}
	k->sqh = map(k->fd, TDB_RING_HDR_SIZE, PROT_READ | PROT_WRITE,
		     a.sq_offset);
	k->sqd = map(k->fd, KR_RING, PROT_READ | PROT_WRITE,
		     a.sq_offset + TDB_RING_HDR_SIZE);
	k->cqh = map(k->fd, TDB_RING_HDR_SIZE, PROT_READ | PROT_WRITE,
		     a.cq_offset);
	k->cqd = map(k->fd, KR_RING, PROT_READ, a.cq_offset +
		     TDB_RING_HDR_SIZE);
	if (!k->sqh || !k->sqd || !k->cqh || !k->cqd) {
		e = -errno;
		snprintf(k->msg, sizeof(k->msg), "mapping the rings: %s",
			 ERRSTR(e));
		return e;
	}
	if ((e = tdb_ring_attach_producer(&k->sq, k->sqh, k->sqd, KR_RING,
					  TDB_RING_SUBMIT)) ||
	    (e = tdb_ring_attach_consumer(&k->cq, k->cqh, k->cqd, KR_RING,
					  TDB_RING_COMPLETE))) {
		snprintf(k->msg, sizeof(k->msg), "the rings tdb.ko made: %s",
			 ERRSTR(e));
		return e;
	}
	return 0;
}

static void kr_detach(struct kr *k)
{
	tdb_ring_detach(&k->sq);
	tdb_ring_detach(&k->cq);
	if (k->sqh)
		munmap(k->sqh, TDB_RING_HDR_SIZE);
	if (k->sqd)
		munmap(k->sqd, KR_RING);
	if (k->cqh)
		munmap(k->cqh, TDB_RING_HDR_SIZE);
	if (k->cqd)
		munmap(k->cqd, KR_RING);
}

/* --- the enterer ------------------------------------------------------------ */

/* An answer: every one is an ack (NLMSG_ERROR) of a request of ours.
 * On the enterer's thread, under k->m. */
static int kr_answer(void *arg, const struct nlmsghdr *nlh)
{
	struct kr *k = arg;
	struct tdb_proto_msg m;
	struct tdb_proto_extack ext = { 0 };
	unsigned int idx = 0;
	int e;

	k->answered++;
	e = tdb_proto_parse(nlh, nlh->nlmsg_len, TDB_PROTO_ANSWER, &m, &ext);
	if (!e && m.type != NLMSG_ERROR)
		e = -EPROTO;
	if (!e)
		e = m.error;
	if (e && !k->err) {
		k->err = e;
		snprintf(k->msg, sizeof(k->msg), "%s%s%s", ERRSTR(e),
			 m.ext.msg ? ": " : "", m.ext.msg ? m.ext.msg : "");
		/* which record: the request's first, plus the index the
		 * owner's refusal of a batch names (change.c, bulk_fail:
		 * "RESTORE_BULK record N: ...") */
		if (m.ext.msg)
			sscanf(m.ext.msg, "RESTORE_BULK record %u", &idx);
		k->err_ord = k->slot[nlh->nlmsg_seq % KR_SLOTS] + idx;
		k->err_rec = true;
	}
	return 0;
}

/* ENTER while requests are in flight; take the answers. */
static void *kr_enterer(void *arg)
{
	struct kr *k = arg;
	int e, n;

	uint64_t t0, t1;

	pthread_mutex_lock(&k->m);
	for (;;) {
		t0 = tdbd_now_ns();
		while (!k->quit && k->answered == k->committed)
			pthread_cond_wait(&k->work, &k->m);
		if (k->answered == k->committed)
			break;          /* quit, and nothing in flight */
		pthread_mutex_unlock(&k->m);
		t1 = tdbd_now_ns();
		e = ioctl(k->fd, TDB_IOC_ENTER, 0) < 0 ? -errno : 0;
		pthread_mutex_lock(&k->m);
		k->ns_enter_idle += t1 - t0;
		k->ns_enter += tdbd_now_ns() - t1;
		if (e) {
			if (!k->err) {
				k->err = e;
				snprintf(k->msg, sizeof(k->msg),
					 "TDB_IOC_ENTER: %s", ERRSTR(e));
			}
			break;
		}
		n = tdb_ring_consume(&k->cq, 1u << 20, kr_answer, k);
		if (n < 0) {
			if (!k->err) {
				k->err = n;
				snprintf(k->msg, sizeof(k->msg),
					 "completion ring: %s", ERRSTR(n));
			}
			break;
		}
		pthread_cond_broadcast(&k->done);
	}
	k->dead = true;
	pthread_cond_broadcast(&k->done);
	pthread_mutex_unlock(&k->m);
	return NULL;
}

static int kr_start(struct kr *k)
{
	int e;

	pthread_mutex_init(&k->m, NULL);
	pthread_cond_init(&k->work, NULL);
	pthread_cond_init(&k->done, NULL);
	k->inited = true;
	if ((e = -pthread_create(&k->thr, NULL, kr_enterer, k))) {
		snprintf(k->msg, sizeof(k->msg), "the restore's thread: %s",
			 ERRSTR(e));
		return e;
	}
	k->thr_on = true;
	return 0;
}

static void kr_stop(struct kr *k)
{
	if (!k->thr_on)
		return;
	pthread_mutex_lock(&k->m);
	k->quit = true;
	pthread_cond_signal(&k->work);
	pthread_mutex_unlock(&k->m);
	pthread_join(k->thr, NULL);
	k->thr_on = false;
}

/* Until every request sent is answered: the first failure, or 0. */
static int kr_flush(struct kr *k)
{
	int e;

	pthread_mutex_lock(&k->m);
	while (!k->dead && !k->err && k->answered < k->committed)
		pthread_cond_wait(&k->done, &k->m);
	e = k->err;
	if (!e && k->dead)
		e = -EPIPE;     /* not reached: the enterer ends on err */
	pthread_mutex_unlock(&k->m);
	return e;
}

/* Room for len bytes in the submission ring (the enterer frees it as
 * tdb.ko takes the requests), and a slot. */
static void *kr_reserve(struct kr *k, size_t len, int *e)
{
	uint64_t t0;
	void *p;

	for (;;) {
		pthread_mutex_lock(&k->m);
		t0 = tdbd_now_ns();
		while (!k->dead && !k->err &&
		       k->committed - k->answered >= KR_SLOTS)
			pthread_cond_wait(&k->done, &k->m);
		k->ns_pack_wait += tdbd_now_ns() - t0;
		if ((*e = k->err) || (k->dead && (*e = -EPIPE))) {
			pthread_mutex_unlock(&k->m);
			return NULL;
		}
		pthread_mutex_unlock(&k->m);
		p = tdb_ring_reserve_err(&k->sq, len, e);
		if (p || *e != -EAGAIN)
			break;
		/* full: wait for the enterer's next round */
		pthread_mutex_lock(&k->m);
		t0 = tdbd_now_ns();
		if (k->answered < k->committed && !k->dead && !k->err)
			pthread_cond_wait(&k->done, &k->m);
		k->ns_pack_wait += tdbd_now_ns() - t0;
		pthread_mutex_unlock(&k->m);
	}
	if (!p)
		snprintf(k->msg, sizeof(k->msg), "submission ring: %s",
			 ERRSTR(*e));
	return p;
}

/* A request into the ring, published, for the enterer; first: the
 * ordinal of its first record (a refusal names it). */
static int kr_send(struct kr *k, struct tdb_proto_msg *m, uint64_t first)
{
	struct tdb_proto_extack ext = { 0 };
	long len;
	void *p;
	int e;

	m->seq = ++k->seq;
	len = tdb_proto_size(TDB_PROTO_REQUEST, m, &ext);
	if (len < 0) {
		snprintf(k->msg, sizeof(k->msg), "a request cannot be built: "
			 "%s", ext.msg ? ext.msg : ERRSTR(len));
		return (int)len;
	}
	if (!(p = kr_reserve(k, (size_t)len, &e)))
		return e;
	tdb_proto_build(p, (size_t)len, TDB_PROTO_REQUEST, m, &ext);
	pthread_mutex_lock(&k->m);      /* before tdb.ko can answer it */
	k->slot[m->seq % KR_SLOTS] = first;
	pthread_mutex_unlock(&k->m);
	if ((e = tdb_ring_commit(&k->sq, (size_t)len)) < 0 ||
	    (e = tdb_ring_publish(&k->sq)) < 0) {
		snprintf(k->msg, sizeof(k->msg), "submission ring: %s",
			 ERRSTR(e));
		return e;
	}
	pthread_mutex_lock(&k->m);
	k->committed++;
	pthread_cond_signal(&k->work);
	pthread_mutex_unlock(&k->m);
	return 0;
}

/* --- requests ---------------------------------------------------------------- */

static int kr_create(struct kr *k, const char *name, uint32_t uid,
		     uint32_t gid, uint32_t mode, uint32_t max_extents,
		     uint64_t default_ttl, uint64_t max_bytes,
		     uint64_t max_records, uint32_t evict, uint32_t tflags)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_UID) | TDB_PROTO_BIT(TDB_A_GID) |
			 TDB_PROTO_BIT(TDB_A_MODE),
		.table = name, .uid = uid, .gid = gid,
		.mode = mode & 0777,
	};
	int e;

	if (max_extents) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_EXTENTS);
		m.max_extents = max_extents;
	}
	if (default_ttl) {              /* TABLE_CREATE's TTL */
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = default_ttl;
	}
	if (max_bytes) {                /* and its bounds, policy */
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_BYTES);
		m.max_bytes = max_bytes;
	}
	if (max_records) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS);
		m.max_records = max_records;
	}
	if (evict) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_EVICT);
		m.evict = evict;
	}
	if (tflags) {                   /* an ordered table: made ordered,
					 * its records go into its order */
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
		m.table_flags = tflags;
	}
	if ((e = kr_send(k, &m, 0)) || (e = kr_flush(k)))
		return e;
	return 0;
}

static int kr_drop(struct kr *k, const char *name)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_DROP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = name };
	int e;

	if ((e = kr_send(k, &m, 0)))
		return e;
	return kr_flush(k);
}

/* A table, made anew: a restore that did not finish (its tdbd died)
 * left it in tdb.ko, which logs nothing while recovering, so it starts
 * over.  Its records are then not refused (err_rec cleared). */
static int kr_create_fresh(struct kr *k, const char *name, uint32_t uid,
			   uint32_t gid, uint32_t mode, uint32_t max_extents,
			   uint64_t default_ttl, uint64_t max_bytes,
			   uint64_t max_records, uint32_t evict,
			   uint32_t tflags)
{
	int e = kr_create(k, name, uid, gid, mode, max_extents, default_ttl,
			  max_bytes, max_records, evict, tflags);

	if (e == -EEXIST) {
		pthread_mutex_lock(&k->m);
		k->err = 0;
		k->err_rec = false;
		pthread_mutex_unlock(&k->m);
		if (!(e = kr_drop(k, name)))
			e = kr_create(k, name, uid, gid, mode, max_extents,
				      default_ttl, max_bytes, max_records,
				      evict, tflags);
	}
	if (e)
		k->err_rec = false;     /* the table's, not a record's */
	return e;
}

/* The batch packed so far as one RESTORE_BULK request. */
static int kr_bulk_send(struct kr *k)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_RESTORE_BULK,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_RECORDS),
		.table = k->table,
		.records = k->bulk,
		.records_len = k->bulk_len,
	};
	int e;

	if (!k->bulk_n)
		return 0;
	k->n_bulk++;
	e = kr_send(k, &m, k->bulk_first);
	k->bulk_len = 0;
	k->bulk_n = 0;
	return e;
}

/* One record as a PUT with its version and deadline. */
static int kr_put(struct kr *k, const void *key, size_t klen,
		  const void *val, size_t vlen, uint64_t version,
		  uint64_t deadline)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_KEY) |
			 TDB_PROTO_BIT(TDB_A_VALUE),
		.table = k->table,
		.key = key,
		.key_len = (uint32_t)klen,
		.value = val,
		.value_len = (uint32_t)vlen,
	};

	/* the record's version, given back as it was (tdb.ko lets the
	 * supervisor's file do so) */
	if (version) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_SET_VERSION);
		m.set_version = version;
	}
	/* and its deadline, as it was (without one the table's default
	 * TTL would give it one) */
	if (deadline) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m.deadline = deadline;
	}
	k->n_put++;
	return kr_send(k, &m, k->ord);
}

/* One record of the source (the store's tdbd_ckpt_load_table callback
 * too): skipped if expired, else into the batch, sending the batch when
 * it is full; a record that cannot go in one (too large, or no version)
 * goes as a PUT, after the batch before it.  While finding a refused
 * record: its key is kept, and 1 stops the walk. */
static int kr_rec(void *arg, const void *key, size_t klen, const void *val,
		  size_t vlen, uint64_t version, uint64_t deadline)
{
	struct kr *k = arg;
	uint64_t need = TDB_RESTORE_REC_HDR + (uint64_t)klen + vlen;
	int e;

	if (deadline && deadline <= k->now_ms)
		return 0;       /* expired: no read would see it */
	if (k->finding) {
		if (k->ord++ != k->find)
			return 0;
		tdb_escape(k->found, sizeof(k->found) - 4, key,
			   klen > 64 ? 64 : klen);
		if (klen > 64)  /* its first 64 bytes */
			strcat(k->found, "...");
		return 1;
	}
	if (!version)           /* a table from before versions */
		version = k->old_version;
	if (k->single || !version || need > TDB_RESTORE_BULK_MAX) {
		if ((e = kr_bulk_send(k)) ||
		    (e = kr_put(k, key, klen, val, vlen, version, deadline)))
			return e;
		goto out;
	}
	if (k->bulk_len + need > TDB_RESTORE_BULK_MAX &&
	    (e = kr_bulk_send(k)))
		return e;
	if (!k->bulk_n)
		k->bulk_first = k->ord;
	tdb_proto_record_pack(k->bulk + k->bulk_len, key, (uint32_t)klen, val,
			      (uint32_t)vlen, version, deadline);
	k->bulk_len += (uint32_t)need;
	if (++k->bulk_n == KR_BULK_RECS && (e = kr_bulk_send(k)))
		return e;
out:
	k->ord++;
	if (!(++*k->records & 0xfff))
		kr_report(k, k->table, *k->records);
	return 0;
}

/* --- the sources -------------------------------------------------------------- */

/* The mirror's table: its cursor through kr_rec. */
static int kr_walk_mirror(struct kr *k, const struct tdbo_table *dt)
{
	struct tdbe_cursor_rec rv[KR_BATCH];
	struct tdbe_cursor *cur;
	int e = 0, n, i;

	if (!(cur = tdbe_cursor_open(dt->t, &e)))
		return e ? e : -ENOMEM;
	while ((n = tdbe_cursor_next_many(cur, rv, KR_BATCH, 0)) > 0)
		for (i = 0; i < n; i++)
			if ((e = kr_rec(k, rv[i].key, rv[i].klen, rv[i].val,
					rv[i].vlen, rv[i].version,
					rv[i].deadline)))
				goto out;
	if (n < 0)
		e = n;
out:
	tdbe_cursor_close(cur);
	return e;
}

/* The store's table through kr_rec; err: the store's own failure. */
static int kr_walk_store(struct kr *k, struct ckpt *ck, const char *name,
			 char *err, size_t errlen)
{
	return tdbd_ckpt_load_table(ck, name, kr_rec, k, NULL, err, errlen);
}

/* The end of a table: the last batch, every answer. */
static int kr_table_end(struct kr *k, int e)
{
	if (!e && !(e = kr_bulk_send(k)))
		e = kr_flush(k);
	return e;
}

/* The failure of table `name` into err: a refused record named by its
 * key (found by walking again, through find), else the message. */
static void kr_fail(struct kr *k, const char *name, char *err, size_t errlen,
		    const char *store_err,
		    int (*find)(struct kr *k, void *src), void *src)
{
	kr_stop(k);             /* nothing in flight after */
	if (k->err && k->err_rec && find) {
		k->finding = true;
		k->find = k->err_ord;
		k->ord = 0;
		k->found[0] = '\0';
		if (find(k, src) == 1) {
			snprintf(err, errlen, "table %s, key \"%s\" (its "
				 "record %llu): %s", ESC(name), k->found,
				 (unsigned long long)k->find, k->msg);
			return;
		}
	}
	snprintf(err, errlen, "table %s: %s", ESC(name),
		 !k->err && store_err && store_err[0] ? store_err : k->msg);
}

struct kr_src_store {
	struct ckpt *ck;
	const char *name;
};

static int kr_find_store(struct kr *k, void *arg)
{
	struct kr_src_store *s = arg;
	char err[64];

	return tdbd_ckpt_load_table(s->ck, s->name, kr_rec, k, NULL, err,
				    sizeof(err));
}

struct kr_src_mirror {
	const struct tdbo_table *dt;
};

static int kr_find_mirror(struct kr *k, void *arg)
{
	struct kr_src_mirror *s = arg;

	return kr_walk_mirror(k, s->dt);
}

static int kr_begin(struct kr *k, int fd)
{
	const char *how = getenv("TDBD_KERNEL_RESTORE");

	k->fd = fd;
	k->last_report = k->ns_begin = tdbd_now_ns();
	k->now_ms = tdbp_realtime_ms();
	k->single = how && !strcmp(how, "put");
	if (!(k->bulk = malloc(TDB_RESTORE_BULK_MAX))) {
		snprintf(k->msg, sizeof(k->msg), "no memory for a restore "
			 "batch (%u bytes)", TDB_RESTORE_BULK_MAX);
		return -ENOMEM;
	}
	return 0;
}

static void kr_end(struct kr *k)
{
	kr_stop(k);             /* its figures are final after */
	tdbd_log(L_INFO, "kernel mode: restore sent %llu RESTORE_BULK "
		 "request(s) and %llu PUT(s)%s in %llu ms: reading and "
		 "packing waited %llu ms for tdb.ko, tdb.ko's TDB_IOC_ENTER "
		 "took %llu ms and waited %llu ms for requests",
		 (unsigned long long)k->n_bulk,
		 (unsigned long long)k->n_put, k->single ?
		 " (TDBD_KERNEL_RESTORE=put)" : "",
		 (unsigned long long)((tdbd_now_ns() - k->ns_begin) /
				      1000000),
		 (unsigned long long)(k->ns_pack_wait / 1000000),
		 (unsigned long long)(k->ns_enter / 1000000),
		 (unsigned long long)(k->ns_enter_idle / 1000000));
	kr_detach(k);
	if (k->inited) {
		pthread_cond_destroy(&k->work);
		pthread_cond_destroy(&k->done);
		pthread_mutex_destroy(&k->m);
	}
	free(k->bulk);
	free(k);
}

int tdbd_kernel_restore(struct tdbd *d, int fd, unsigned int *ntab,
			uint64_t *records, char *err, size_t errlen)
{
	struct tdbo_table **tabs = NULL;
	unsigned int n = 0, i;
	struct kr *k = calloc(1, sizeof(*k));
	int e;

	*ntab = 0;
	*records = 0;
	if (!k) {
		snprintf(err, errlen, "no memory for the restore");
		return -ENOMEM;
	}
	k->records = records;
	if ((e = kr_begin(k, fd)) ||
	    (e = tdbo_tables_snapshot(d->o, &tabs, &n)) ||
	    (e = kr_attach(k)) || (e = kr_start(k))) {
		snprintf(err, errlen, "%s", k->msg);
		goto out;
	}
	tdbd_notify("STATUS=restoring %u table(s) into tdb.ko", n);
	for (i = 0; i < n && !e; i++) {
		const struct tdbo_table *dt = tabs[i];
		struct kr_src_mirror src = { dt };

		if (dt->aside) {
			tdbd_log(L_WARNING, "kernel mode: table %s is set aside "
				 "(see above): it is not loaded into tdb.ko",
				 ESC(dt->name));
			continue;
		}
		k->table = dt->name;
		k->ord = 0;
		k->old_version = 0;     /* the mirror gave every record one */
		if ((e = kr_create_fresh(k, dt->name, dt->uid, dt->gid,
					 dt->mode, dt->max_extents,
					 dt->default_ttl, dt->max_bytes,
					 dt->max_records, dt->evict,
					 dt->tflags)) ||
		    (e = kr_table_end(k, kr_walk_mirror(k, dt))))
			kr_fail(k, dt->name, err, errlen, NULL,
				kr_find_mirror, &src);
		else
			(*ntab)++;
	}
out:
	kr_end(k);
	tdbo_tables_release(tabs, n);
	return e;
}

int tdbd_kernel_restore_store(struct tdbd *d, int fd, unsigned int *ntab,
			      uint64_t *records, char *err, size_t errlen)
{
	struct ckpt_table *tabs = NULL;
	unsigned int n = 0, i;
	struct kr *k = calloc(1, sizeof(*k));
	char serr[512] = "";
	uint64_t lsn = 0;
	int e;

	*ntab = 0;
	*records = 0;
	if (!k) {
		snprintf(err, errlen, "no memory for the restore");
		return -ENOMEM;
	}
	k->records = records;
	if ((e = kr_begin(k, fd))) {
		snprintf(err, errlen, "%s", k->msg);
		goto out;
	}
	if ((e = tdbd_ckpt_read_meta(d->ckpt, &lsn, &tabs, &n, serr,
				     sizeof(serr)))) {
		snprintf(err, errlen, "the checkpoint store: %s", serr);
		goto out;
	}
	if ((e = kr_attach(k)) || (e = kr_start(k))) {
		snprintf(err, errlen, "%s", k->msg);
		goto out;
	}
	/* a record of a table checkpointed before versions: the
	 * checkpoint's LSN, as recovery gives it (recover.c) */
	k->old_version = lsn ? lsn : 1;
	tdbd_notify("STATUS=restoring %u table(s) into tdb.ko from the "
		    "checkpoint store", n);
	for (i = 0; i < n && !e; i++) {
		const struct ckpt_table *t = &tabs[i];
		struct kr_src_store src = { d->ckpt, t->name };

		if (t->aside) {
			/* not reached: recovery restores from the mirror
			 * when a table is set aside */
			tdbd_log(L_WARNING, "kernel mode: table %s is set aside "
				 "(see above): it is not loaded into tdb.ko",
				 ESC(t->name));
			continue;
		}
		k->table = t->name;
		k->ord = 0;
		serr[0] = '\0';
		if ((e = kr_create_fresh(k, t->name, t->uid, t->gid, t->mode,
					 t->max_extents, t->default_ttl,
					 t->max_bytes, t->max_records,
					 t->evict, t->flags)) ||
		    (e = kr_table_end(k, kr_walk_store(k, d->ckpt, t->name,
						       serr, sizeof(serr)))))
			kr_fail(k, t->name, err, errlen, serr,
				kr_find_store, &src);
		else
			(*ntab)++;
	}
out:
	kr_end(k);
	free(tabs);
	return e;
}
