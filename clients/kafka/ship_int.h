/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ship_int.h - the shipper's state, shared by ship.c (the WAL into
 * Kafka, the acknowledged position) and snap.c (the snapshot scans):
 * the tables it may read, the records produced and not yet
 * acknowledged, the counters the status reports.
 */
#ifndef TDB_KAFKA_SHIP_INT_H
#define TDB_KAFKA_SHIP_INT_H

#include "kafka.h"

#include <limits.h>
#include <sys/types.h>

#include <tdb/client.h>

struct kf_tab {                 /* a table the shipper has decided on */
	char name[TDB_NAME_MAX + 1];
	bool allow;             /* its uid may read it: shipped */
};

struct kf_pend {                /* a record produced, acks outstanding */
	uint64_t lsn;
	uint64_t left;          /* its messages not yet acknowledged */
};

struct kf_lagpt {               /* when a durable LSN was first seen */
	uint64_t lsn, ms;
};
#define KF_LAGPTS 64

struct shipper {
	const struct kf_opts *o;
	struct tdbc *c;
	rd_kafka_t *rk;
	char wal_dir[PATH_MAX];
	struct kf_tab *tabs;
	unsigned int ntabs, tabcap;
	struct kf_pend *ring;   /* records head - tail in flight */
	uint64_t head, tail;
	uint32_t cap;
	uint64_t acked, read, durable, saved, snapshot_lsn;
	uint64_t save_ms, status_ms;
	struct kf_lagpt lag[KF_LAGPTS];
	unsigned int nlag;
	uint64_t messages, skipped;
	int fatal;              /* a delivery failed: stop (its text) */
	char fatal_msg[512];
	uid_t uid;
	gid_t gid, groups[64];
	int ngroups;
};

/* ship.c */
/* May the shipper read table name?  1 yes, 0 no (logged once), or a
 * negative errno (the connection failed).  c: the table's create
 * record when it is one (the name's decision is taken again). */
struct wal_create;
int kf_tab_allowed(struct shipper *s, const char *name,
		   const struct wal_create *c);
/* Queue a record's slot of n messages: its index for their opaque. */
uint64_t kf_pend_push(struct shipper *s, uint64_t lsn, uint64_t n);
/* Produce one message (headers h are taken, also on failure); waits
 * while librdkafka's queue is full.  0, or -EINTR (stop), -EIO. */
int kf_produce(struct shipper *s, const char *table, const void *key,
	       size_t klen, const void *val, size_t vlen,
	       rd_kafka_headers_t *h, uint64_t slot);
void kf_hdr_u64(rd_kafka_headers_t *h, const char *name, uint64_t v);
void kf_hdr_str(rd_kafka_headers_t *h, const char *name, const char *v);

/* snap.c: a snapshot of every table the shipper may read, produced
 * with tdb.snapshot=LSN; *lsn gets the LSN the stream must go on after
 * (STATS' wal_lsn read before the snapshots were opened). */
int kf_snapshot(struct shipper *s, uint64_t *lsn);

#endif
