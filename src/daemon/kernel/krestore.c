// SPDX-License-Identifier: GPL-2.0-only
/*
 * krestore.c - kernel mode's restore (kernel.h): every table of the
 * mirror loaded into tdb.ko through the supervisor's own /dev/tdb file
 * (the only client tdb.ko serves while it is recovering): TDB_IOC_ATTACH
 * on that file, its rings mapped, TABLE_CREATE (owner, group, mode,
 * max-extents, default TTL, bounds and eviction policy, flags: an
 * ordered table is made ordered) then the
 * records in RESTORE_BULK requests (tdb/proto.h, TDB_A_RECORDS): up to
 * KR_BULK_RECS records or TDB_RESTORE_BULK_MAX bytes each, every record
 * with its version and its deadline if it has one (the same instant,
 * not a TTL counted again from now; an expired record is absent to the
 * mirror's cursor, so it is not restored), one ack per request.  A
 * record too large for a batch, or one without a version, goes as a
 * PUT (with TDB_A_SET_VERSION and TDB_A_DEADLINE: what tdb.ko's owner
 * does with a batch's record is exactly that).  TDBD_KERNEL_RESTORE=put
 * in tdbd's environment sends every record as a PUT (how restores were
 * made before RESTORE_BULK: for measuring the two).  As many requests
 * per TDB_IOC_ENTER as the submission ring holds.
 * Built with the ring core and the codec that tdbd already has (not
 * libtdbclient, whose objects carry their own copies of the core's).
 *
 * Invariants: every request is answered by an NLMSG_ERROR ack before
 * ENTER returns (tdb.ko holds no answer of the supervisor: its changes
 * are not logged while it recovers), unless the completion ring was
 * full, so we drain it and ENTER again until nothing is in flight.  The
 * first failed answer stops the restore with its errno and message.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"           /* src/owner: struct tdbo_table */
#include "kernel.h"
#include "proto.h"
#include "ring.h"
#include "ring_core.h"
#include "tdb/kdev.h"
#include "notify.h"
#include "tdbd.h"

#define KR_RING   (4u << 20)    /* each ring's data: max_msg 2 MiB */
#define KR_BATCH  256u          /* records per cursor step */
#define KR_BULK_RECS 256u       /* records per RESTORE_BULK at most */

struct kr {
	int fd;
	void *sqh, *sqd, *cqh, *cqd;
	struct tdb_ring sq, cq;
	uint32_t seq;
	uint64_t inflight;
	int err;                /* the first failed answer */
	char msg[TDB_PROTO_EXTACK_MAX + 64];
	bool single;            /* TDBD_KERNEL_RESTORE=put: no batches */
	unsigned char *bulk;    /* the batch being packed */
	uint32_t bulk_len, bulk_n;
	uint64_t n_bulk, n_put;     /* requests sent: batches, PUTs */
	uint64_t last_report;   /* ns: progress, once a second */
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

/* An answer: every one is an ack (NLMSG_ERROR) of a request of ours. */
static int kr_answer(void *arg, const struct nlmsghdr *nlh)
{
	struct kr *k = arg;
	struct tdb_proto_msg m;
	struct tdb_proto_extack ext = { 0 };
	int e;

	k->inflight--;
	e = tdb_proto_parse(nlh, nlh->nlmsg_len, TDB_PROTO_ANSWER, &m, &ext);
	if (!e && m.type != NLMSG_ERROR)
		e = -EPROTO;
	if (!e)
		e = m.error;
	if (e && !k->err) {
		k->err = e;
		snprintf(k->msg, sizeof(k->msg), "%s%s%s", ERRSTR(e),
			 m.ext.msg ? ": " : "", m.ext.msg ? m.ext.msg : "");
	}
	return 0;
}

/* Publish, ENTER and drain, until nothing is in flight. */
static int kr_flush(struct kr *k)
{
	int e, n;

	if ((e = tdb_ring_publish(&k->sq)) < 0)
		return e;
	while (k->inflight) {
		if (ioctl(k->fd, TDB_IOC_ENTER, 0) < 0) {
			e = -errno;
			snprintf(k->msg, sizeof(k->msg), "TDB_IOC_ENTER: %s",
				 ERRSTR(e));
			return e;
		}
		n = tdb_ring_consume(&k->cq, 1u << 20, kr_answer, k);
		if (n < 0) {
			snprintf(k->msg, sizeof(k->msg), "completion ring: %s",
				 ERRSTR(n));
			return n;
		}
	}
	return k->err;
}

static int kr_send(struct kr *k, struct tdb_proto_msg *m)
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
	p = tdb_ring_reserve_err(&k->sq, (size_t)len, &e);
	if (!p && e == -EAGAIN) {
		if ((e = kr_flush(k)))
			return e;
		p = tdb_ring_reserve_err(&k->sq, (size_t)len, &e);
	}
	if (!p) {
		snprintf(k->msg, sizeof(k->msg), "submission ring: %s",
			 ERRSTR(e));
		return e;
	}
	tdb_proto_build(p, (size_t)len, TDB_PROTO_REQUEST, m, &ext);
	if ((e = tdb_ring_commit(&k->sq, (size_t)len)) < 0)
		return e;
	k->inflight++;
	return 0;
}

static int kr_create(struct kr *k, const struct tdbo_table *dt)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_TABLE_CREATE,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_UID) | TDB_PROTO_BIT(TDB_A_GID) |
			 TDB_PROTO_BIT(TDB_A_MODE),
		.table = dt->name, .uid = dt->uid, .gid = dt->gid,
		.mode = dt->mode & 0777,
	};
	int e;

	if (dt->max_extents) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_EXTENTS);
		m.max_extents = dt->max_extents;
	}
	if (dt->default_ttl) {          /* TABLE_CREATE's TTL */
		m.attrs |= TDB_PROTO_BIT(TDB_A_TTL);
		m.ttl = dt->default_ttl;
	}
	if (dt->max_bytes) {            /* and its bounds, policy */
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_BYTES);
		m.max_bytes = dt->max_bytes;
	}
	if (dt->max_records) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_MAX_RECORDS);
		m.max_records = dt->max_records;
	}
	if (dt->evict) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_EVICT);
		m.evict = dt->evict;
	}
	if (dt->tflags) {               /* an ordered table: made ordered,
					 * its records go into its order */
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE_FLAGS);
		m.table_flags = dt->tflags;
	}
	if ((e = kr_send(k, &m)) || (e = kr_flush(k)))
		return e;
	return 0;
}

static int kr_drop(struct kr *k, const char *name)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_DROP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = name };
	int e;

	if ((e = kr_send(k, &m)))
		return e;
	return kr_flush(k);
}

/* The batch packed so far as one RESTORE_BULK request. */
static int kr_bulk_send(struct kr *k, const char *table)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_RESTORE_BULK,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_RECORDS),
		.table = table,
		.records = k->bulk,
		.records_len = k->bulk_len,
	};
	int e;

	if (!k->bulk_n)
		return 0;
	k->n_bulk++;
	e = kr_send(k, &m);
	k->bulk_len = 0;
	k->bulk_n = 0;
	return e;
}

/* One record as a PUT with its version and deadline. */
static int kr_put(struct kr *k, const char *table,
		  const struct tdbe_cursor_rec *r)
{
	struct tdb_proto_msg m = {
		.cmd = TDB_CMD_PUT,
		.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			 TDB_PROTO_BIT(TDB_A_KEY) |
			 TDB_PROTO_BIT(TDB_A_VALUE),
		.table = table,
		.key = r->key,
		.key_len = (uint32_t)r->klen,
		.value = r->val,
		.value_len = (uint32_t)r->vlen,
	};

	/* the record's version, given back as it was (tdb.ko lets the
	 * supervisor's file do so) */
	if (r->version) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_SET_VERSION);
		m.set_version = r->version;
	}
	/* and its deadline, as it was (without one the table's default
	 * TTL would give it one) */
	if (r->deadline) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_DEADLINE);
		m.deadline = r->deadline;
	}
	k->n_put++;
	return kr_send(k, &m);
}

/* One record into the batch, sending the batch when it is full; a
 * record that cannot go in one (too large, or no version) goes as a PUT,
 * after the batch before it. */
static int kr_record(struct kr *k, const char *table,
		     const struct tdbe_cursor_rec *r)
{
	uint64_t need = TDB_RESTORE_REC_HDR + (uint64_t)r->klen + r->vlen;
	int e;

	if (k->single || !r->version || need > TDB_RESTORE_BULK_MAX) {
		if ((e = kr_bulk_send(k, table)))
			return e;
		return kr_put(k, table, r);
	}
	if (k->bulk_len + need > TDB_RESTORE_BULK_MAX &&
	    (e = kr_bulk_send(k, table)))
		return e;
	tdb_proto_record_pack(k->bulk + k->bulk_len, r->key,
			      (uint32_t)r->klen, r->val, (uint32_t)r->vlen,
			      r->version, r->deadline);
	k->bulk_len += (uint32_t)need;
	if (++k->bulk_n == KR_BULK_RECS)
		return kr_bulk_send(k, table);
	return 0;
}

static int kr_table(struct kr *k, const struct tdbo_table *dt,
		    uint64_t *records)
{
	struct tdbe_cursor_rec rv[KR_BATCH];
	struct tdbe_cursor *cur;
	int e, n, i;

	e = kr_create(k, dt);
	if (e == -EEXIST) {
		/* a restore that did not finish (its tdbd died): tdb.ko
		 * logs nothing while recovering, so start the table over */
		k->err = 0;
		if (!(e = kr_drop(k, dt->name)))
			e = kr_create(k, dt);
	}
	if (e)
		return e;
	if (!(cur = tdbe_cursor_open(dt->t, &e)))
		return e ? e : -ENOMEM;
	while ((n = tdbe_cursor_next_many(cur, rv, KR_BATCH, 0)) > 0) {
		for (i = 0; i < n; i++)
			if ((e = kr_record(k, dt->name, &rv[i])))
				goto out;
		*records += (uint64_t)n;
		kr_report(k, dt->name, *records);
	}
	if (n < 0)
		e = n;
	else if (!(e = kr_bulk_send(k, dt->name)))
		e = kr_flush(k);
out:
	tdbe_cursor_close(cur);
	return e;
}

int tdbd_kernel_restore(struct tdbd *d, int fd, unsigned int *ntab,
			uint64_t *records, char *err, size_t errlen)
{
	struct tdbo_table **tabs = NULL;
	unsigned int n = 0, i;
	struct kr k = { .fd = fd, .last_report = tdbd_now_ns() };
	const char *how = getenv("TDBD_KERNEL_RESTORE");
	int e;

	*ntab = 0;
	*records = 0;
	k.single = how && !strcmp(how, "put");
	if (!(k.bulk = malloc(TDB_RESTORE_BULK_MAX))) {
		snprintf(err, errlen, "no memory for a restore batch "
			 "(%u bytes)", TDB_RESTORE_BULK_MAX);
		return -ENOMEM;
	}
	if ((e = tdbo_tables_snapshot(d->o, &tabs, &n))) {
		free(k.bulk);
		return e;
	}
	if ((e = kr_attach(&k)))
		goto out;
	tdbd_notify("STATUS=restoring %u table(s) into tdb.ko", n);
	for (i = 0; i < n && !e; i++) {
		if (tabs[i]->aside) {
			tdbd_log(L_WARNING, "kernel mode: table %s is set aside "
				 "(see above): it is not loaded into tdb.ko",
				 ESC(tabs[i]->name));
			continue;
		}
		if ((e = kr_table(&k, tabs[i], records)))
			snprintf(err, errlen, "table %s: %s",
				 ESC(tabs[i]->name), k.msg);
		else
			(*ntab)++;
	}
	tdbd_log(L_INFO, "kernel mode: restore sent %llu RESTORE_BULK "
		 "request(s) and %llu PUT(s)%s", (unsigned long long)k.n_bulk,
		 (unsigned long long)k.n_put, k.single ?
		 " (TDBD_KERNEL_RESTORE=put)" : "");
out:
	if (e && !err[0])
		snprintf(err, errlen, "%s", k.msg);
	kr_detach(&k);
	tdbo_tables_release(tabs, n);
	free(k.bulk);
	return e;
}
