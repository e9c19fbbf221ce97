/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kafka.h - tdb-kafka (clients/kafka/): what its parts share.
 *
 *   main.c   the command line (ship, apply, status), logging, signals,
 *            sd_notify, librdkafka configuration from options
 *   ship.c   tdb-kafka ship: tdbd's WAL (src/wal) at or below the
 *            durable LSN into Kafka, the acknowledged position
 *   snap.c   tdb-kafka ship --snapshot: snapshot scans of the tables
 *   apply.c  tdb-kafka apply: topics into a local tdbd, whole
 *            transactions, its position in the replica (tdb_kafka_pos)
 *   state.c  the shipper's state and status files (atomic replace)
 *
 * The message format (docs/ARCHITECTURE.md, "tdb-kafka"; tdb-kafka(1)):
 * key = the record key, value = the new value or NULL for a delete;
 * headers tdb.table, tdb.lsn, tdb.version, tdb.txn, tdb.txn_ops,
 * tdb.txn_index, tdb.deadline; tdb.event=create|drop|snapshot for table
 * events; tdb.snapshot=LSN on a snapshot's records.
 */
#ifndef TDB_KAFKA_H
#define TDB_KAFKA_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#define KF_POS_TABLE "tdb_kafka_pos"    /* the applier's position table */
#define KF_CONF_MAX 64

struct kf_map {                 /* --map TABLE=TOPIC */
	char *table, *topic;
};

struct kf_opts {
	const char *socket;     /* tdbd's (NULL: libtdbclient's default) */
	const char *data_dir;   /* ship: tdbd's data directory (WAL in wal/) */
	const char *state_dir;  /* ship: state and status files */
	const char *brokers;    /* bootstrap.servers */
	const char *prefix;     /* topic prefix, "tdb." */
	const char *conf[KF_CONF_MAX];  /* --kafka-conf key=value */
	unsigned int nconf;
	struct kf_map *maps;
	unsigned int nmaps;
	bool snapshot;          /* ship: snapshot when there is no position */
	unsigned int batch;     /* ship: WAL records read per round */
	unsigned int max_inflight;      /* ship: records produced, not acked */
	int verbose;
};

/* Set by SIGTERM / SIGINT. */
extern volatile sig_atomic_t kf_stop;

void kf_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void kf_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t kf_now_ms(void);
/* A librdkafka configuration from the options (brokers, --kafka-conf);
 * NULL and err on a bad key or value. */
rd_kafka_conf_t *kf_conf(const struct kf_opts *o, char *err, size_t errlen);
/* The topic of a table: --map's, else prefix + table (into buf). */
const char *kf_topic(const struct kf_opts *o, const char *table, char *buf,
		     size_t len);

int kf_ship(const struct kf_opts *o);
int kf_apply(const struct kf_opts *o);

/* state.c */
struct kf_state {
	uint64_t lsn;           /* every message <= lsn acknowledged */
	bool have;              /* a state file was there */
};
int kf_state_load(const char *dir, struct kf_state *st, char *err,
		  size_t errlen);
int kf_state_save(const char *dir, const struct kf_state *st, char *err,
		  size_t errlen);
struct kf_status {
	uint64_t acked, read, durable, lag_ms, snapshot_lsn;
	uint64_t messages, tables_skipped;
	uint64_t time_ms;
	const char *note;       /* "" or what the shipper waits for */
};
int kf_status_save(const char *dir, const struct kf_status *s, char *err,
		   size_t errlen);
/* tdb-kafka status: print the status file; 0, 1 when there is none. */
int kf_status_print(const char *dir);

#endif
