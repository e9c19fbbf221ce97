/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bench.h - what the parts of tdb-bench share: the options, the keys and
 * values every system sees, the interface of a system under test (a
 * "peer": tdb, LMDB, Redis), the worker processes' shared result slots
 * and the helpers for servers the benchmark starts.
 *
 * Shape of a measurement (a "cell"): one system, one operation (get or
 * put), P client processes, batch B.  The driver forks P workers; each
 * opens its own handle (connection, environment), says it is ready and
 * waits at a barrier; the driver releases them together; each does
 * opt.ops operations on keys drawn from its own fixed-seed stream (the
 * same stream for every system) and writes its start and end times and
 * latency samples into shared memory.  ops/s = all operations / (last
 * end - first start).
 */
#ifndef TDB_BENCH_BENCH_H
#define TDB_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KEY_LEN     16u             /* "key%013u" */
#define VAL_MIN     16u             /* index + generation */
#define BATCH_MAX   64u
#define PROCS_MAX   64u
#define RUNS_MAX    99u
#define SAMPLES_MAX 200000u         /* latency samples per worker */
#define MSG_LEN     512u

enum op { OP_GET, OP_PUT, OP_N };

struct options {
	uint32_t keys;          /* --keys: keys in every store */
	uint32_t ops;           /* --ops: operations per process per cell */
	uint32_t txn_ops;       /* --txn-ops: per process where LMDB commits
				 * every put */
	uint32_t sync_ops;      /* --sync-ops: LMDB synced puts (0: none) */
	uint32_t vsize;         /* --value-size */
	unsigned int tables;    /* --tables: tdb's, process i uses i % N */
	unsigned int procs[8];  /* --procs */
	unsigned int nprocs;
	unsigned int batches[4]; /* --batch */
	unsigned int nbatches;
	unsigned int runs;      /* --runs */
	const char *dir;        /* --dir: where the temp dir goes */
	const char *tdbd;       /* --tdbd */
	const char *tdbd_args[16]; /* --tdbd-arg, repeatable */
	unsigned int ntdbd_args;
	const char *redis;      /* --redis */
	const char *only;       /* --only: comma list of systems */
	bool op_on[OP_N];       /* --op: which operations run */
	bool strict;            /* --strict: a missing peer is exit 77 */
	bool verbose;
	const char *csv;        /* --csv FILE: the figures as CSV too */
	uint64_t ttl;           /* --ttl MS: also puts with this TTL
				 * (tdb+ttl, Redis+ttl); 0: none */
	uint32_t evict;         /* --evict: tdb's tables bounded with this
				 * policy (TDBC_EVICT_*; 0: unbounded) */
	uint64_t max_records;   /* --max-records (default 2 x --keys) */
};
extern struct options opt;

/* The keys, made once by the driver before any fork (shared read-only
 * by copy-on-write): key i is "key" and i in 13 decimal digits. */
extern char *keys;
static inline const char *key_of(uint32_t i)
{
	return keys + (size_t)i * KEY_LEN;
}

/* Value of key i, generation gen: the index and the generation as two
 * little-endian 64-bit words, then a fill byte up to opt.vsize.  A get
 * checks the length and the index. */
void value_make(uint8_t *v, uint32_t i, uint32_t gen);
/* 0 if v/vlen is key i's value, else -1 and msg says how it is not. */
int value_check(uint32_t i, const void *v, size_t vlen, char *msg);

/* --- a worker's view of one cell ---------------------------------------- */
struct work {
	enum op op;
	unsigned int batch;     /* 1: one call per op; else requests per call */
	unsigned int proc;      /* 0..procs-1 */
	uint32_t gen;           /* puts write this generation */
	char msg[MSG_LEN];      /* out: what went wrong */
};

/*
 * A system under test.  start() runs in the driver: it starts the server
 * (if any) and loads opt.keys keys; it returns 0, 1 if the system is
 * not installed or -1 if it failed to start, with the reason in msg.
 * Either way it is reported as skipped, never as zero (--strict: exit
 * 77 for 1, 1 for -1).  In a forked worker: open() before the
 * barrier, then one do_get/do_put per operation (batch 1) or per batch,
 * close() at the end.  Every call returns 0 or -1 with w->msg filled.
 */
struct peer {
	const char *name;
	const char *what[OP_N][2];  /* row labels: [op][batch > 1], the
				     * latter a format taking the batch */
	int (*start)(char *msg);
	void (*stop)(void);
	pid_t (*server)(void);   /* for its CPU time; 0 if none */
	void (*describe)(void);  /* a header line */
	/* Operations per process in this cell, 0: not measured. */
	uint32_t (*ops)(enum op op, unsigned int batch, unsigned int procs);
	int (*open)(struct work *w, void **h);
	int (*get)(void *h, struct work *w, const uint32_t *idx,
		   unsigned int n);
	int (*put)(void *h, struct work *w, const uint32_t *idx,
		   unsigned int n);
	void (*close)(void *h);
};
extern const struct peer peer_tdb, peer_tdb_rings, peer_lmdb, peer_lmdb_sync,
	peer_redis, peer_tdb_ttl, peer_redis_ttl;

/* --- helpers (util.c) ---------------------------------------------------- */
double now(void);
/* The temp directory of this invocation (removed at exit). */
extern char tmpdir[4096];
/* Fork/exec argv with stdout+stderr to logpath; the child dies with us
 * (PR_SET_PDEATHSIG).  The pid, or -1 (msg says why). */
pid_t spawn(const char *const argv[], const char *logpath, char *msg);
/* Has the server exited?  Reaps it; fills msg with how it ended. */
bool exited(pid_t pid, char *msg);
/* SIGTERM, wait up to 5 s, then SIGKILL; the exit status (or 128+sig). */
int stop_server(pid_t pid);
/* Last lines of a log file appended to msg (for a failed start). */
void log_tail(const char *path, char *msg, size_t len);
/* utime + stime of a process in seconds, -1 if unknown. */
double proc_cpu(pid_t pid);
/* An executable named name in $PATH (then /usr/sbin, /usr/bin); NULL. */
const char *find_in_path(const char *name, char *buf, size_t len);
/* Add to msg (len bytes) printf-style. */
void msgf(char *msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
