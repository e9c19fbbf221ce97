// SPDX-License-Identifier: GPL-2.0-only
/*
 * platform.c - the kernel home of the engine: the functions declared by
 * src/core/platform.h (the macros are in src/core/platform_kernel.h),
 * and the max_memory_mb bound on memory (max-memory, as
 * src/owner/limtable.h defines it for both homes).
 *
 * Regions.  A region is an array of 2 MiB extents, each backed on its
 * own: first choice one compound order-9 page (2 MiB, physically
 * contiguous, in the direct map's large pages), else, when the buddy
 * allocator has no free order-9 block, 2 MiB of vmalloc_user() memory
 * (order-0 pages; VM_USERMAP so it can be mapped to user space later).
 * Both are zeroed.  The first extent of each kind a table gets is logged.
 * The engine addresses a region by offsets and keeps one pointer per
 * extent (struct tdb_map), so extents need not be contiguous.
 *
 * Memory bound: every backed extent counts TDBP_EXTENT_SIZE bytes in
 * mem_used, across all tables; a grow that would pass max_memory_mb
 * (with what the owner holds: buffered transactions and snapshots,
 * tdbk_home_held) fails with -ENOMEM (the engine's -ENOSPC means "table
 * at its own cap", which this is not).  Change feeds (home.c), client
 * rings (kring.c) and the supervisor's change log ring (klog.c, from
 * the first claim to unload) count there too.  max_memory_mb 0 is 3/4
 * of the RAM.
 * mem_used is back to 0 once every region, feed and the ring are gone:
 * main.c checks that at unload.  The owner's bound on table data in all
 * (struct tdbo_limits max_data, TDBO_Q_DATA) is max_memory_mb too: set
 * at load (home.c) and with the parameter (tdbk_home_max_data_set).
 *
 * Context: everything here may sleep (GFP_KERNEL, mutex, synchronize_rcu)
 * except tdbp_rcu_read_lock/unlock, tdbp_hash64, tdbp_random_u64 and
 * tdbp_log.  The engine calls the sleeping ones only from writers and
 * table create/drop, never inside a read-side section.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/vmalloc.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/random.h>
#include <linux/xxhash.h>
#include <linux/printk.h>
#include <linux/ratelimit.h>
#include <linux/atomic.h>

#include "platform.h"
#include "transport.h"

/* --- memory bound ----------------------------------------------------- */

static atomic_long_t mem_used = ATOMIC_LONG_INIT(0);

unsigned long tdbk_mem_used(void)
{
	return (unsigned long)atomic_long_read(&mem_used);
}

/* max_memory_mb (home.c's parameter, limtable.h's max-memory), in
 * bytes; 0 is 3/4 of the RAM, as tdbd's 0 is 3/4 of physical memory. */
unsigned long tdbk_mem_limit(void)
{
	u64 max = tdbk_home_max_memory();

	return max ? (unsigned long)max :
	       (totalram_pages() / 4 * 3) << PAGE_SHIFT;
}

/* Would used bytes charged, with what the owner holds, pass limit? */
static bool mem_over(long used, unsigned long limit)
{
	return (unsigned long)used + tdbk_home_held() > limit;
}

/* Count bytes more; false (nothing counted) if that would pass the
 * limit.  add-then-check keeps concurrent growers of different tables
 * from both slipping under it.  Extents, change feeds (home.c) and the
 * change log ring (klog.c) count here. */
bool tdbk_mem_charge(size_t bytes)
{
	unsigned long limit = tdbk_mem_limit();
	long used = atomic_long_add_return((long)bytes, &mem_used);

	if (mem_over(used, limit)) {
		atomic_long_sub((long)bytes, &mem_used);
		return false;
	}
	return true;
}

void tdbk_mem_uncharge(size_t bytes)
{
	atomic_long_sub((long)bytes, &mem_used);
}

static bool mem_charge(void)
{
	return tdbk_mem_charge(TDBP_EXTENT_SIZE);
}

static void mem_uncharge(unsigned int n)
{
	tdbk_mem_uncharge((size_t)n * TDBP_EXTENT_SIZE);
}

/* --- private memory --------------------------------------------------- */

void *tdbp_alloc(size_t size)
{
	return kvzalloc(size, GFP_KERNEL);
}

void tdbp_free(void *ptr)
{
	kvfree(ptr);
}

void *tdbp_pages_alloc(unsigned int order)
{
	/* TDBP_PAGE_SIZE is 4 KiB: x86-64's PAGE_SIZE (static_assert below) */
	return (void *)__get_free_pages(GFP_KERNEL | __GFP_NOWARN, order);
}

void tdbp_pages_free(void *pages, unsigned int order)
{
	if (pages)
		free_pages((unsigned long)pages, order);
}

static_assert(TDBP_PAGE_SIZE == PAGE_SIZE);
static_assert(TDBP_EXTENT_SIZE == PAGE_SIZE << (TDBP_EXTENT_SHIFT -
						PAGE_SHIFT));

/* --- regions ---------------------------------------------------------- */

#define EXTENT_ORDER (TDBP_EXTENT_SHIFT - PAGE_SHIFT)	/* 9 */

struct tdbp_region {
	/*
	 * ext[i]: address of extent i; a compound page's address in the
	 * direct map or a vmalloc address (is_vmalloc_addr() tells which).
	 * Written only by the table's writer (under its mutex), n too.
	 */
	void **ext;
	unsigned int max, n;
	unsigned int nsmall;	/* extents on vmalloc; read by stat */
	bool logged_huge, logged_small;
	char name[80];
};

struct tdbp_region *tdbp_region_create(const char *name,
				       unsigned int max_extents, int *err)
{
	struct tdbp_region *r;

	if (!max_extents) {
		*err = -EINVAL;
		return NULL;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	r->ext = kvcalloc(max_extents, sizeof(*r->ext), GFP_KERNEL);
	if (!r->ext) {
		kfree(r);
		*err = -ENOMEM;
		return NULL;
	}
	r->max = max_extents;
	snprintf(r->name, sizeof(r->name), "table %s", name);
	return r;
}

/* 0: every extent on vmalloc (what a fragmented machine gets), so that
 * tests reach that path on purpose. */
static bool huge_extents = true;
module_param(huge_extents, bool, 0644);
MODULE_PARM_DESC(huge_extents,
		 "back table extents with 2 MiB compound pages when the page "
		 "allocator has them (default 1); 0: always 4 KiB pages "
		 "(vmalloc)");

/* The region lines have no owner or engine to keep a limiter: theirs
 * is this file's (each table created writes one). */
static struct tdbp_ratelimit region_rl = TDBP_RATELIMIT_INIT("table memory");

static void *extent_alloc(struct tdbp_region *r)
{
	struct page *pg = NULL;
	void *p;

	/* NORETRY: when memory is fragmented, fall back to small pages at
	 * once rather than stall the writer in compaction. */
	if (READ_ONCE(huge_extents))
		pg = alloc_pages(GFP_KERNEL | __GFP_COMP | __GFP_ZERO |
				 __GFP_NOWARN | __GFP_NORETRY, EXTENT_ORDER);
	if (pg) {
		if (!r->logged_huge) {
			r->logged_huge = true;
			tdbp_log_rl(&region_rl, TDBP_LOG_INFO,
				    "%s: extent %u on a 2 MiB "
				    "compound page", r->name, r->n);
		}
		return page_address(pg);
	}
	p = vmalloc_user(TDBP_EXTENT_SIZE);
	if (p && !r->logged_small) {
		r->logged_small = true;
		tdbp_log_rl(&region_rl, TDBP_LOG_WARNING,
			    "%s: no free 2 MiB block, extent "
			    "%u on 4 KiB pages (vmalloc)", r->name, r->n);
	}
	if (p)
		WRITE_ONCE(r->nsmall, r->nsmall + 1);
	return p;
}

static void extent_free(void *p)
{
	if (is_vmalloc_addr(p))
		vfree(p);
	else
		__free_pages(virt_to_page(p), EXTENT_ORDER);
}

void *tdbp_region_grow(struct tdbp_region *r, unsigned int idx, int *err)
{
	void *p;

	if (idx != r->n || idx >= r->max) {
		*err = -EINVAL;
		return NULL;
	}
	if (!mem_charge()) {
		pr_warn_ratelimited("%s: cannot back extent %u: table memory "
				    "would exceed max_memory_mb=%lu\n",
				    r->name, idx, tdbk_mem_limit() >> 20);
		*err = -ENOMEM;
		return NULL;
	}
	p = extent_alloc(r);
	if (!p) {
		mem_uncharge(1);
		pr_warn_ratelimited("%s: cannot back extent %u: out of "
				    "memory\n", r->name, idx);
		*err = -ENOMEM;
		return NULL;
	}
	r->ext[idx] = p;
	r->n++;
	return p;
}

void tdbp_region_destroy(struct tdbp_region *r)
{
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++)
		extent_free(r->ext[i]);
	mem_uncharge(r->n);
	kvfree(r->ext);
	kfree(r);
}

/*
 * 2 MiB only while every extent is a compound page; a region with any
 * vmalloc extent reports 4 KiB: the figure tells whether the whole
 * table gets large-page TLB reach, and a mixed one does not.
 */
size_t tdbp_region_page_size(const struct tdbp_region *r)
{
	return READ_ONCE(r->nsmall) ? PAGE_SIZE : TDBP_EXTENT_SIZE;
}

int tdbp_region_fd(const struct tdbp_region *r)
{
	return -1;
}

/* --- locks ---------------------------------------------------------------
 * One lockdep class for every engine mutex (one mutex_init call site):
 * the engine never holds two of them at once.
 */
struct tdbp_mutex {
	struct mutex m;
};

struct tdbp_mutex *tdbp_mutex_create(void)
{
	struct tdbp_mutex *m = kmalloc(sizeof(*m), GFP_KERNEL);

	if (m)
		mutex_init(&m->m);
	return m;
}

void tdbp_mutex_destroy(struct tdbp_mutex *m)
{
	if (!m)
		return;
	mutex_destroy(&m->m);
	kfree(m);
}

void tdbp_mutex_lock(struct tdbp_mutex *m)
{
	mutex_lock(&m->m);
}

void tdbp_mutex_unlock(struct tdbp_mutex *m)
{
	mutex_unlock(&m->m);
}

/* --- RCU ---------------------------------------------------------------- */

void tdbp_rcu_read_lock(void)
{
	rcu_read_lock();
}

void tdbp_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

void tdbp_rcu_synchronize(void)
{
	synchronize_rcu();
}

/* --- misc ---------------------------------------------------------------- */

uint64_t tdbp_hash64(const void *data, size_t len, uint64_t seed)
{
	return xxh64(data, len, seed);
}

/* tdbp_crc32c is src/wal/crc32c.c, shared with user space (Kbuild). */

uint64_t tdbp_random_u64(void)
{
	return get_random_u64();
}

uint64_t tdbp_now_ns(void)
{
	return ktime_get_ns();
}

uint64_t tdbp_realtime_ms(void)
{
	return div_u64(ktime_get_real_ns(), NSEC_PER_MSEC);
}

void tdbp_cond_resched(void)
{
	cond_resched();
}

void tdbp_sleep_us(unsigned int us)
{
	if (us < 10)
		udelay(us);
	else
		usleep_range(us, us + us / 4 + 1);
}

static void log_vaf(int level, struct va_format *vaf)
{
	switch (level) {
	case TDBP_LOG_ERR:
		pr_err("%pV\n", vaf);
		break;
	case TDBP_LOG_WARNING:
		pr_warn("%pV\n", vaf);
		break;
	case TDBP_LOG_INFO:
		pr_info("%pV\n", vaf);
		break;
	default:
		pr_debug("%pV\n", vaf);
		break;
	}
}

/* A line its caller's limiter let out (tdbp_log_rl, src/core/ratelimit.c:
 * per kind, with a count of what it suppressed): no second limit here,
 * which would swallow those counts. */
void tdbp_log_limited(int level, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	log_vaf(level, &vaf);
	va_end(args);
}

void tdbp_log_flush(void)
{
	tdbp_log_rl_flush(&region_rl);
}

/*
 * Lines with no limiter of their own (start, stop, bugs): ratelimited at
 * every level (each its own state, the printk default of 10 messages per
 * 5 s), in case one of them turns out to be a client's to provoke.  The
 * lines a client can provoke go through tdbp_log_rl instead.
 */
void tdbp_log(int level, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	switch (level) {
	case TDBP_LOG_ERR:
		pr_err_ratelimited("%pV\n", &vaf);
		break;
	case TDBP_LOG_WARNING:
		pr_warn_ratelimited("%pV\n", &vaf);
		break;
	case TDBP_LOG_INFO:
		pr_info_ratelimited("%pV\n", &vaf);
		break;
	default:
		pr_debug_ratelimited("%pV\n", &vaf);
		break;
	}
	va_end(args);
}

/* --- the memory bound with root's eighth ------------------------------ */

/*
 * tdbk_mem_charge() for memory a user asks for (client rings, kring.c):
 * the bound is max_memory_mb for root (reserve true) and 7/8 of it for
 * any other uid, so that another uid's rings can never take the last
 * eighth from root, whatever the tables, feeds and the log ring hold.
 * The same add-then-check as tdbk_mem_charge(): two attaches at once
 * cannot both slip under it.  0 or -ENOBUFS (nothing counted).
 */
int tdbk_mem_charge_user(size_t bytes, bool reserve)
{
	unsigned long limit = tdbk_mem_limit();
	long used;

	if (!reserve)
		limit -= limit / 8;
	used = atomic_long_add_return((long)bytes, &mem_used);
	if (mem_over(used, limit)) {
		atomic_long_sub((long)bytes, &mem_used);
		return -ENOBUFS;
	}
	return 0;
}
