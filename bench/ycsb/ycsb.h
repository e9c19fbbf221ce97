/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ycsb.h - what the parts of tdb-bench-ycsb share: the workload as YCSB's
 * property files describe it, the records and keys every system sees,
 * and the interface of a system under test (a "peer": tdb, LMDB,
 * RocksDB, Redis).
 *
 * Shape of a run (YCSB's): a load phase inserts recordcount records
 * (keys 0..recordcount-1); a run phase does operationcount operations
 * drawn by the proportions, spread over `threads` client processes.
 * Each process opens its own handle (connection, environment) before a
 * barrier, so what is timed is the operations, not the setup.
 *
 * Records: fieldcount fields of fieldlength bytes, stored by every
 * system as one value of fieldcount * fieldlength bytes, field i at
 * offset i * fieldlength (YCSB's field names are not stored: every
 * system would pay them alike).  Keys: YCSB's buildKeyName, "user"
 * followed by the decimal FNV-1a-64 hash of the key number
 * (insertorder=hashed, the default) or the number itself zero-padded
 * (insertorder=ordered).
 *
 * Every call returns 0 or a negative errno with msg (YCSB_MSG bytes)
 * saying what went wrong; a read of a key that is not there is -ENOENT.
 */
#ifndef TDB_BENCH_YCSB_H
#define TDB_BENCH_YCSB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define YCSB_MSG        512u
#define YCSB_KEY_MAX    64u     /* "user" + 20 digits + zero padding */
#define YCSB_PROCS_MAX  64u

enum ycsb_dist { YCSB_UNIFORM, YCSB_ZIPFIAN, YCSB_LATEST, YCSB_HOTSPOT,
		 YCSB_SEQUENTIAL, YCSB_EXPONENTIAL };

/* The workload: YCSB's property names, its defaults (CoreWorkload). */
struct ycsb_conf {
	uint64_t recordcount;           /* 1000 */
	uint64_t operationcount;        /* 1000, over all processes */
	unsigned int fieldcount;        /* 10 */
	unsigned int fieldlength;       /* 100 */
	bool readallfields;             /* true */
	bool writeallfields;            /* false: an update writes one field */
	double readproportion;          /* 0.95 */
	double updateproportion;        /* 0.05 */
	double insertproportion;        /* 0 */
	double scanproportion;          /* 0 */
	double readmodifywriteproportion; /* 0 */
	enum ycsb_dist requestdistribution;     /* uniform */
	enum ycsb_dist scanlengthdistribution;  /* uniform */
	unsigned int minscanlength;     /* 1 */
	unsigned int maxscanlength;     /* 1000 */
	double zipfianconstant;         /* 0.99 */
	bool orderedinserts;            /* insertorder=ordered; default hashed */
	unsigned int zeropadding;       /* 1 */
	unsigned int threads;           /* -threads N: client processes */
	unsigned int batch;             /* tdb.batch / redis.pipeline: writes
					 * a process may keep in flight (1:
					 * one at a time, YCSB's model) */
	const char *dir;                /* where stores and sockets go */
	const char *workload;           /* the -P file's name, for reports */
	/* Added by the driver's branch: true in the open() of the load
	 * phase, whose inserts a peer may batch its own way (transactions,
	 * pipelines, requests in flight) until flush(); false in the run
	 * phase, where `batch` says what may be in flight. */
	bool loading;
};

/* Key number n's key: its length; buf holds YCSB_KEY_MAX bytes. */
size_t ycsb_key(const struct ycsb_conf *c, uint64_t n, char *buf);

/* The value of a record: fieldcount * fieldlength bytes. */
static inline size_t ycsb_vlen(const struct ycsb_conf *c)
{
	return (size_t)c->fieldcount * c->fieldlength;
}

/*
 * A system under test.  start() runs in the driver before the load: it
 * starts the server if there is one and creates an empty store (an
 * ordered table/keyspace where the system has a choice, since workload
 * E scans in key order); it returns 0, 1 if the system is not installed
 * (reported as skipped, never as zero) or a negative errno.  stop()
 * ends it and removes its files.  In each client process: open() before
 * the barrier, then operations, then close().
 *
 * Operations:
 *   insert(key, value)            a new record (load and run phases)
 *   read(key, out)                the whole record into out (vlen bytes)
 *   update(key, field, bytes)     field `field` set to fieldlength bytes,
 *                                 the other fields kept (writeallfields:
 *                                 the driver calls update once per field
 *                                 with field = -1 and a whole value)
 *   scan(key, count, got)         up to count records in key order from
 *                                 the first key >= key; each record's
 *                                 value is read (its first and last
 *                                 byte at least); *got = how many
 *   rmw(key, field, bytes)        read the record, then update the field;
 *                                 atomically where the system can (say
 *                                 in describe() whether it is)
 *   flush()                       every write submitted so far is done
 *                                 (batch > 1); a no-op otherwise
 */
struct ycsb_peer {
	const char *name;
	/* The client "processes" run as threads of one process, each with
	 * its own handle from open(): for a system only one process may
	 * open read-write (RocksDB's LOCK file), as YCSB runs its threads
	 * against one DB object.  Every other peer runs real processes. */
	bool threads_only;
	int (*start)(const struct ycsb_conf *c, char *msg);
	void (*stop)(void);
	pid_t (*server)(void);          /* for its CPU time; 0 if none */
	void (*describe)(const struct ycsb_conf *c, char *buf, size_t len);
	int (*open)(const struct ycsb_conf *c, unsigned int proc, void **h,
		    char *msg);
	int (*insert)(void *h, const char *key, size_t klen, const void *val,
		      size_t vlen, char *msg);
	int (*read)(void *h, const char *key, size_t klen, void *out,
		    size_t vlen, char *msg);
	int (*update)(void *h, const char *key, size_t klen, int field,
		      const void *bytes, size_t len, char *msg);
	int (*scan)(void *h, const char *key, size_t klen, unsigned int count,
		    unsigned int *got, char *msg);
	int (*rmw)(void *h, const char *key, size_t klen, int field,
		   const void *bytes, size_t len, char *msg);
	int (*flush)(void *h, char *msg);
	void (*close)(void *h);
};

extern const struct ycsb_peer ycsb_tdb, ycsb_lmdb, ycsb_rocksdb, ycsb_redis,
	ycsb_redis_pipelined;

#endif
