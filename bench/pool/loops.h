/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * loops.h - the workloads of tdb-bench-pool, written once for every peer.
 *
 * These are the loops of the 2015 Tempesta FW pool benchmark (natsys-lab
 * blog, "Fast Memory Pool Allocators"; docs/bench-pool.md and
 * /work/shared/reference/pool-allocators.md section 1), re-written here:
 * the object types, the counts, the touch after every allocation, the
 * "free every 4th" rule, the Mix and the create & destroy loop.  Each peer
 * defines the P_* macros below and expands the BP_LOOP_* macros, so every
 * peer runs literally the same loop; only the allocator calls differ.
 *
 * Peer macros:
 *   P_ALLOC(T)        allocate sizeof(T) bytes
 *   P_FREE(o, T)      free one object (peers that can)
 *   P_KEEP(i, o)      remember o (malloc/GLib: ptrs[i] = o; pools: nothing)
 *   P_DROP(i)         forget it after P_FREE (malloc/GLib: ptrs[i] = NULL)
 *   P_RELEASE_ALL(n, T)  free what was kept (malloc/GLib: timed, as in the
 *                     seed; pools: nothing, their destroy is not timed)
 *   P_CD_BEGIN(T), P_CD_ALLOC(T), P_CD_KEEP(j, o), P_CD_END(T)
 *                     one short-lived pool of create & destroy
 *
 * Shared by C and C++ (boost.cc).
 */
#ifndef TDB_BENCH_POOL_LOOPS_H
#define TDB_BENCH_POOL_LOOPS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define BP_PAGE_SIZE 4096

typedef struct { long l[3]; } Small;                  /* 24 B, sizeof TfwStr */
typedef struct { Small s[10]; } Big;                  /* 240 B, header table */
typedef struct { char c[BP_PAGE_SIZE * 2 + 113]; } Huge;   /* 8305 B */

#ifdef __cplusplus
extern "C" {
#endif

/* N of the seed: 20,000,000, times --scale. */
extern size_t bp_n;
/* CPU time (user + system) of the timed part of the last case, in ns. */
extern uint64_t bp_cpu_ns;

/* An allocation returned NULL: say so and end the process with status 3
 * (the seed printed "failed alloc" and stopped the loop). */
void bp_fail(void) __attribute__((noreturn));

static inline uint64_t
bp_clock(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall clock (the result, as the seed's steady_clock). */
static inline uint64_t
bp_now(void)
{
	return bp_clock(CLOCK_MONOTONIC);
}

/* CPU time of the process: what the case cost even when other programs
 * took the CPU away for a while (a shared 2-CPU machine). */
static inline uint64_t
bp_cpu(void)
{
	return bp_clock(CLOCK_PROCESS_CPUTIME_ID);
}

/* The boost::object_pool peer (boost.cc); each returns nanoseconds. */
uint64_t boost_small(void);
uint64_t boost_small_free(void);
uint64_t boost_big(void);
uint64_t boost_big_free(void);
uint64_t boost_cd(void);
const char *boost_version(void);

#ifdef __cplusplus
}
#endif

/*
 * The touch of the seed, `*(long *)o = 1', made volatile so that the
 * compiler keeps it for every peer (it could otherwise drop a store into
 * memory that is freed right after, and then a whole malloc/free pair).
 */
#define BP_TOUCH(o)							\
	do {								\
		if (__builtin_expect(!(o), 0))				\
			bp_fail();					\
		*(volatile long *)(void *)(o) = 1;			\
	} while (0)

/*
 * Alloc-only (with_free = 0) and "w/ free" (with_free = 1) for one type:
 * N * sizeof(Small) / sizeof(T) allocations, so 480 MB for Small and Big
 * alike; w/ free frees every 4th object right after allocating it.
 */
#define BP_LOOP_SINGLE(T, with_free)					\
	do {								\
		size_t n_ = bp_n * sizeof(Small) / sizeof(T);		\
		for (size_t i = 0; i < n_; ++i) {			\
			T *o = (T *)P_ALLOC(T);				\
			P_KEEP(i, o);					\
			BP_TOUCH(o);					\
			if ((with_free) && __builtin_expect(!(i & 3), 0)) { \
				P_FREE(o, T);				\
				P_DROP(i);				\
			}						\
		}							\
		P_RELEASE_ALL(n_, T);					\
	} while (0)

/*
 * Mix, N iterations: a Huge object every 4096th (allocated, touched and
 * freed: i is even there), else a Big one every 4th (freed at once), else
 * a Small one that is kept.
 */
#define BP_LOOP_MIX()							\
	do {								\
		for (size_t i = 0; i < bp_n; ++i) {			\
			if (__builtin_expect(!(i & 0xfff), 0)) {	\
				Huge *o = (Huge *)P_ALLOC(Huge);	\
				BP_TOUCH(o);				\
				if (!(i & 1))				\
					P_FREE(o, Huge);		\
			} else if (__builtin_expect(!(i & 3), 0)) {	\
				Big *o = (Big *)P_ALLOC(Big);		\
				BP_TOUCH(o);				\
				if (!(i & 1))				\
					P_FREE(o, Big);			\
			} else {					\
				Small *o = (Small *)P_ALLOC(Small);	\
				P_KEEP(i, o);				\
				BP_TOUCH(o);				\
			}						\
		}							\
		P_RELEASE_ALL(bp_n, Small);				\
	} while (0)

/*
 * Create & destroy: N / 100 short-lived pools of 100 allocations each,
 * all Big when i % 4 == 0, else all Small (the seed tests i, not j);
 * create and destroy are timed.
 */
#define BP_LOOP_CD()							\
	do {								\
		for (size_t i = 0; i < bp_n / 100; ++i) {		\
			if (__builtin_expect(!(i & 3), 0)) {		\
				P_CD_BEGIN(Big);			\
				for (size_t j = 0; j < 100; ++j) {	\
					Big *o = (Big *)P_CD_ALLOC(Big); \
					P_CD_KEEP(j, o);		\
					BP_TOUCH(o);			\
				}					\
				P_CD_END(Big);				\
			} else {					\
				P_CD_BEGIN(Small);			\
				for (size_t j = 0; j < 100; ++j) {	\
					Small *o = (Small *)P_CD_ALLOC(Small); \
					P_CD_KEEP(j, o);		\
					BP_TOUCH(o);			\
				}					\
				P_CD_END(Small);			\
			}						\
		}							\
	} while (0)

/* Case functions: setup (untimed), the loop (timed), teardown (untimed). */
#define BP_DEFINE_SINGLE(fn, T, with_free)				\
	uint64_t fn(void)						\
	{								\
		uint64_t t0_, c0_, dt_;					\
		P_SETUP(T);						\
		c0_ = bp_cpu();						\
		t0_ = bp_now();						\
		BP_LOOP_SINGLE(T, with_free);				\
		dt_ = bp_now() - t0_;					\
		bp_cpu_ns = bp_cpu() - c0_;				\
		P_TEARDOWN();						\
		return dt_;						\
	}

#define BP_DEFINE_MIX(fn)						\
	uint64_t fn(void)						\
	{								\
		uint64_t t0_, c0_, dt_;					\
		P_SETUP(Small);						\
		c0_ = bp_cpu();						\
		t0_ = bp_now();						\
		BP_LOOP_MIX();						\
		dt_ = bp_now() - t0_;					\
		bp_cpu_ns = bp_cpu() - c0_;				\
		P_TEARDOWN();						\
		return dt_;						\
	}

#define BP_DEFINE_CD(fn)						\
	uint64_t fn(void)						\
	{								\
		uint64_t t0_, c0_, dt_;					\
		P_CD_SETUP();						\
		c0_ = bp_cpu();						\
		t0_ = bp_now();						\
		BP_LOOP_CD();						\
		dt_ = bp_now() - t0_;					\
		bp_cpu_ns = bp_cpu() - c0_;				\
		P_CD_TEARDOWN();					\
		return dt_;						\
	}

#endif
