/* SPDX-License-Identifier: MIT */
/*
 * platform.h - everything the engine (src/core) needs from its host.
 *
 * The engine is freestanding C: it calls no libc or kernel function
 * except memcpy/memcmp/memset and what this header declares.  A home
 * (user space: src/platform/user.c with liburcu; the kernel module: a
 * later kmod/platform.c with kernel RCU) implements these functions.
 * tests/check_symbols.sh proves the rule by listing the undefined symbols
 * of the engine's objects.
 *
 * Atomics and barriers are macros, because they must compile to plain
 * instructions on the hot path; the per-home header picked below maps them
 * to compiler builtins (user space) or READ_ONCE/smp_* (kernel).
 */
#ifndef TDB_CORE_PLATFORM_H
#define TDB_CORE_PLATFORM_H

#ifdef __KERNEL__
#include "platform_kernel.h"
#else
#include "platform_user.h"
#endif

/* --- private memory (not shared with readers in other processes) ----- */
void *tdbp_alloc(size_t size);            /* zeroed; NULL on failure */
void tdbp_free(void *ptr);

/* --- pages for the scratch pool (pool.c): 2^order 4 KiB pages ------- */
#define TDBP_PAGE_SHIFT 12
#define TDBP_PAGE_SIZE ((size_t)1 << TDBP_PAGE_SHIFT)
void *tdbp_pages_alloc(unsigned int order);   /* page-aligned, not zeroed */
void tdbp_pages_free(void *pages, unsigned int order);

/* --- regions: shared memory made of TDBP_EXTENT_SIZE extents -------- */
#define TDBP_EXTENT_SHIFT 21
#define TDBP_EXTENT_SIZE ((size_t)1 << TDBP_EXTENT_SHIFT)   /* 2 MiB */

struct tdbp_region;

/*
 * Reserve room for max_extents extents and map none yet.  name is used
 * for the memfd / log lines.  Returns NULL and sets *err (negative errno).
 */
struct tdbp_region *tdbp_region_create(const char *name,
				       unsigned int max_extents, int *err);
/*
 * Back extent number idx (always the next one: idx == current count) and
 * return its address, zeroed.  NULL with *err = -ENOMEM when the host has
 * no memory left.  Called by the table's writer only (write lock held).
 * The user home may move a hugetlb region to 4 KiB pages here when the
 * hugepage pool is exhausted; extents already backed keep their addresses
 * and contents.
 */
void *tdbp_region_grow(struct tdbp_region *r, unsigned int idx, int *err);
void tdbp_region_destroy(struct tdbp_region *r);
/* Size of the pages backing the region: 2 MiB (hugetlb) or 4 KiB; it
 * changes from 2 MiB to 4 KiB if the region moves (tdbp_region_grow). */
size_t tdbp_region_page_size(const struct tdbp_region *r);
/*
 * A descriptor other processes can map read-only; -1 if the home has none.
 * Not stable: when tdbp_region_grow moves a hugetlb region to 4 KiB pages
 * (the hugepage pool ran dry), the region gets a new memfd and the old one
 * is closed.  A mapping made from the old descriptor keeps the extents it
 * mapped as they were at the move, and never sees later changes; a user
 * must fetch the descriptor again after a move (page size 4 KiB now).
 */
int tdbp_region_fd(const struct tdbp_region *r);

/* --- locks ----------------------------------------------------------- */
struct tdbp_mutex;
struct tdbp_mutex *tdbp_mutex_create(void);
void tdbp_mutex_destroy(struct tdbp_mutex *m);
void tdbp_mutex_lock(struct tdbp_mutex *m);
void tdbp_mutex_unlock(struct tdbp_mutex *m);

/* --- RCU ------------------------------------------------------------- */
/*
 * Read-side sections nest, never block, and may run in any thread (the
 * user home registers threads with liburcu on first use).
 * tdbp_rcu_synchronize() waits until every section that began before it
 * has ended; it must not be called inside a read-side section.
 */
void tdbp_rcu_read_lock(void);
void tdbp_rcu_read_unlock(void);
void tdbp_rcu_synchronize(void);

/* --- misc ------------------------------------------------------------ */
uint64_t tdbp_hash64(const void *data, size_t len, uint64_t seed); /* xxh64 */
uint64_t tdbp_random_u64(void);
/* CRC32C (Castagnoli), as the WAL's records carry it: start with crc 0;
 * tdbp_crc32c(tdbp_crc32c(0, a), b) is the crc of a then b. */
uint32_t tdbp_crc32c(uint32_t crc, const void *buf, size_t len);
uint64_t tdbp_now_ns(void);               /* monotonic clock */
/* The wall clock (CLOCK_REALTIME) in ms since the Unix epoch: what
 * record deadlines are written in (layout.h, TDB_REC_F_DEADLINE). */
uint64_t tdbp_realtime_ms(void);
/* A long loop outside any lock a reader waits for may let others run
 * here (the kernel's cond_resched(); nothing in user space). */
void tdbp_cond_resched(void);
/* Sleep about us microseconds (where the caller may sleep). */
void tdbp_sleep_us(unsigned int us);

enum { TDBP_LOG_ERR = 3, TDBP_LOG_WARNING = 4, TDBP_LOG_INFO = 6,
       TDBP_LOG_DEBUG = 7 };	/* syslog levels */
void tdbp_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* --- rate-limited log lines (ratelimit.c) ------------------------------
 * Every line a client can provoke (a table made or dropped, a reader
 * expired, a snapshot failing...) goes through a limiter of its kind:
 * TDBP_RL_BURST lines per window of TDBP_RL_INTERVAL_MS (tdbd's own
 * policy, tdbd_log_rl), the rest counted; the next window's first line,
 * or tdbp_log_rl_flush() from the home's periodic point once the window
 * is over, first writes "N similar line(s) suppressed in the last T s".
 * The state is the caller's: a field of the owner or the engine, or a
 * static at the call site only for a line with neither (the user home's
 * region lines).  Never sleeps: a line that finds its limiter busy is
 * counted as suppressed.
 */
#define TDBP_RL_BURST       10u
#define TDBP_RL_INTERVAL_MS 5000u

struct tdbp_ratelimit {
	const char *what;       /* names the kind in the count line */
	int busy;               /* try-lock over the next three */
	uint32_t printed;       /* lines written in this window */
	uint64_t begin_ns;      /* the window's start; 0: none yet */
	int missed_level;       /* the most severe line suppressed */
	uint64_t missed;        /* atomic: suppressed, not yet reported */
};
#define TDBP_RATELIMIT_INIT(w) { .what = (w), .missed_level = TDBP_LOG_DEBUG }

void tdbp_ratelimit_init(struct tdbp_ratelimit *rl, const char *what);
/* May a line of level go out now?  Writes the count of the window that
 * ended first, if lines were suppressed in it. */
bool tdbp_log_rl_admit(struct tdbp_ratelimit *rl, int level);
/* The count of a window that is over, if it suppressed lines. */
void tdbp_log_rl_flush(struct tdbp_ratelimit *rl);
/* A line through rl: the arguments are evaluated only if it goes out. */
#define tdbp_log_rl(rl, level, ...) do {                                \
		int tdbp_rl_level_ = (level);                           \
		if (tdbp_log_rl_admit((rl), tdbp_rl_level_))            \
			tdbp_log_limited(tdbp_rl_level_, __VA_ARGS__);  \
	} while (0)
/* The home's: tdbp_log for a line a limiter let out (tdb.ko's tdbp_log
 * keeps printk's own limit for the lines that have none, this one does
 * not, so counts are never swallowed). */
void tdbp_log_limited(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The home's own limiters (its region lines, which have no owner or
 * engine to keep one): their counts, as tdbp_log_rl_flush.  The owner's
 * tdbo_log_flush() calls it. */
void tdbp_log_flush(void);

#endif
