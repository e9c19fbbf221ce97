/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * driver.h - what tdb-bench-ycsb's driver, generators and property
 * parser share beyond ycsb.h (which is the peers' interface): YCSB's
 * generators (gen.c), the property files (props.c) and the helpers for
 * servers a peer starts (util.c).
 */
#ifndef TDB_BENCH_YCSB_DRIVER_H
#define TDB_BENCH_YCSB_DRIVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ycsb.h"

/* --- random numbers (gen.c) ------------------------------------------------
 * splitmix64 per client: the same seed gives the same stream for every
 * system.  YCSB's java.util.Random stream is not reproduced: what is
 * kept bit for bit is each generator's formula on the uniform draws. */
struct ycsb_rng {
	uint64_t s;
};
void ycsb_rng_seed(struct ycsb_rng *r, uint64_t seed);
uint64_t ycsb_rng_next(struct ycsb_rng *r);
double ycsb_rng_double(struct ycsb_rng *r);     /* [0, 1) */

/* YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of val, low first,
 * then Math.abs of the signed result. */
int64_t ycsb_fnvhash64(int64_t val);

/* ZipfianGenerator (Gray et al.): items min..max, item min the most
 * popular; zetan 0: computed (sum of 1/i^theta, i = 1..items). */
struct ycsb_zipf {
	int64_t items, base, countforzeta;
	double theta, zeta2theta, alpha, zetan, eta;
};
void ycsb_zipf_init(struct ycsb_zipf *z, int64_t min, int64_t max,
		    double theta, double zetan);
/* nextLong(itemcount): itemcount may grow (zeta is then extended
 * incrementally, as YCSB does); it never shrinks. */
int64_t ycsb_zipf_next_n(struct ycsb_zipf *z, struct ycsb_rng *r,
			 int64_t itemcount);
int64_t ycsb_zipf_next(struct ycsb_zipf *z, struct ycsb_rng *r);
double ycsb_zeta(int64_t st, int64_t n, double theta, double initial);

/* ScrambledZipfianGenerator: a zipfian over 10^10 items (YCSB's ZETAN
 * for theta 0.99), FNV-hashed onto min..max. */
#define YCSB_SCRAMBLED_ITEMS 10000000000LL
#define YCSB_SCRAMBLED_ZETAN 26.46902820178302
struct ycsb_scrambled {
	struct ycsb_zipf z;
	int64_t min, itemcount;
};
void ycsb_scrambled_init(struct ycsb_scrambled *s, int64_t min, int64_t max);
int64_t ycsb_scrambled_next(struct ycsb_scrambled *s, struct ycsb_rng *r);

/* UniformLongGenerator: lb..ub inclusive. */
int64_t ycsb_uniform(struct ycsb_rng *r, int64_t lb, int64_t ub);

/*
 * CounterGenerator / AcknowledgedCounterGenerator, in memory every
 * client shares (MAP_SHARED, or one process's threads): next() hands out
 * key numbers from `start`; last() is the highest number below which
 * every number was acknowledged (what reads may ask for).  The window
 * of acknowledgements not yet contiguous is YCSB's (2^20 slots).
 */
#define YCSB_ACK_WINDOW (1u << 20)
struct ycsb_counter {
	_Atomic int64_t next;
	_Atomic int64_t limit;
	atomic_flag lock;
	_Atomic uint8_t window[YCSB_ACK_WINDOW];
};
void ycsb_counter_init(struct ycsb_counter *c, int64_t start);
int64_t ycsb_counter_next(struct ycsb_counter *c);
int64_t ycsb_counter_last(struct ycsb_counter *c);
/* 0, or -EOVERFLOW: more than the window unacknowledged. */
int ycsb_counter_ack(struct ycsb_counter *c, int64_t value);

/* SkewedLatestGenerator: a zipfian over the acknowledged count, the
 * newest key the most popular; never above ycsb_counter_last(). */
struct ycsb_latest {
	struct ycsb_zipf z;
	struct ycsb_counter *basis;
};
void ycsb_latest_init(struct ycsb_latest *l, struct ycsb_counter *basis,
		      double theta);
int64_t ycsb_latest_next(struct ycsb_latest *l, struct ycsb_rng *r);

/* DiscreteGenerator over the operations, in YCSB's order. */
enum ycsb_op { YCSB_READ, YCSB_UPDATE, YCSB_INSERT, YCSB_SCAN, YCSB_RMW,
	       YCSB_OPS };
extern const char *const ycsb_op_name[YCSB_OPS];
struct ycsb_discrete {
	double weight[YCSB_OPS];
	double sum;
};
void ycsb_discrete_init(struct ycsb_discrete *d, const struct ycsb_conf *c);
enum ycsb_op ycsb_discrete_next(const struct ycsb_discrete *d,
				struct ycsb_rng *r);

/*
 * One client's key chooser for the run phase (CoreWorkload's keychooser
 * and nextKeynum): never a key number above the acknowledged inserts.
 */
struct ycsb_chooser {
	enum ycsb_dist dist;
	struct ycsb_scrambled sz;
	struct ycsb_latest lt;
	struct ycsb_counter *ins;
	int64_t lb, ub, seq;
	struct ycsb_zipf scanz;         /* scanlengthdistribution=zipfian */
};
void ycsb_chooser_init(struct ycsb_chooser *k, const struct ycsb_conf *c,
		       struct ycsb_counter *ins, unsigned int proc);
int64_t ycsb_chooser_key(struct ycsb_chooser *k, struct ycsb_rng *r);
unsigned int ycsb_chooser_scanlen(struct ycsb_chooser *k,
				  const struct ycsb_conf *c,
				  struct ycsb_rng *r);

/* The generators checked against their formulas; 0 or -1 (each failure
 * printed). */
int ycsb_selftest(void);

/* --- property files (props.c) ---------------------------------------------
 * YCSB's defaults (CoreWorkload), then -P files and -p settings in
 * order.  Each returns 0, 1 with a note in msg (a property tdb-bench-ycsb
 * does not use: ignored) or -EINVAL with msg naming the property. */
void ycsb_conf_defaults(struct ycsb_conf *c);
int ycsb_prop_set(struct ycsb_conf *c, const char *name, const char *value,
		  char *msg);
/* A file: every note and the first error go to note(arg, text). */
int ycsb_props_file(struct ycsb_conf *c, const char *path,
		    void (*note)(void *arg, const char *text), void *arg,
		    char *msg);
/* name=value as -p gives it. */
int ycsb_prop_arg(struct ycsb_conf *c, const char *arg, char *msg);
/* What no single property can say: the proportions' sum, the scan
 * lengths' order, the padding's room.  0 or -EINVAL with msg. */
int ycsb_conf_check(const struct ycsb_conf *c, char *msg);
const char *ycsb_dist_name(enum ycsb_dist d);

/* --- helpers (util.c) ------------------------------------------------------ */
double ycsb_now(void);
void ycsb_msgf(char *msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Fork/exec argv with stdout+stderr to logpath; the child dies with us.
 * The pid, or -1 (msg says why). */
pid_t ycsb_spawn(const char *const argv[], const char *logpath, char *msg);
/* Has it exited?  Reaps it; msg says how it ended. */
bool ycsb_exited(pid_t pid, char *msg);
/* SIGTERM, up to 5 s, then SIGKILL; the exit status or 128+signal. */
int ycsb_stop_server(pid_t pid);
/* The last bytes of a log appended to msg (YCSB_MSG bytes). */
void ycsb_log_tail(const char *path, char *msg);
/* utime + stime of a process in seconds, -1 if unknown. */
double ycsb_proc_cpu(pid_t pid);
/* Remove a directory and everything under it (a peer's own files in
 * the run's directory); 0 or -1. */
int ycsb_rm_tree(const char *path);
/* tdbd: --tdbd, $TDBD, the build tree's; NULL if none. */
extern const char *ycsb_tdbd_path;

#endif
