// SPDX-License-Identifier: GPL-2.0-only
/*
 * user.c - the user-space home of the engine (see src/core/platform.h):
 * memfd-backed regions with hugetlb when the host has hugepages, pthread
 * mutexes, liburcu (memb flavour) for RCU, libxxhash, and a log sink.
 */
#define _LGPL_SOURCE 1
#include <urcu/urcu-memb.h>
/* Inline xxh64: no PLT call on every lookup. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/memfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"
#include "user.h"

/* --- log ------------------------------------------------------------- */

static struct {
	tdbp_log_fn *fn;
	void *arg;
} log_sink;

void tdbp_set_log(tdbp_log_fn *fn, void *arg)
{
	log_sink.fn = fn;
	log_sink.arg = arg;
}

void tdbp_log_stderr(void *arg, int level, const char *msg)
{
	if (level <= (int)(long)arg)
		fprintf(stderr, "tdb: %s\n", msg);
}

static void log_va(int level, const char *fmt, va_list ap)
{
	char buf[512];

	if (!log_sink.fn)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	log_sink.fn(log_sink.arg, level, buf);
}

void tdbp_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_va(level, fmt, ap);
	va_end(ap);
}

/* Lines a limiter let out: here no different. */
void tdbp_log_limited(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_va(level, fmt, ap);
	va_end(ap);
}

/* The region lines below have no owner or engine to keep a limiter:
 * theirs is this file's (a table create or a growing table writes them,
 * so a client's create/drop loop would). */
static struct tdbp_ratelimit region_rl = TDBP_RATELIMIT_INIT("table memory");

void tdbp_log_flush(void)
{
	tdbp_log_rl_flush(&region_rl);
}

/* --- memory ------------------------------------------------------------ */

void *tdbp_alloc(size_t size)
{
	return calloc(1, size);
}

void tdbp_free(void *ptr)
{
	free(ptr);
}

void *tdbp_pages_alloc(unsigned int order)
{
	void *p = NULL;

	if (posix_memalign(&p, TDBP_PAGE_SIZE, TDBP_PAGE_SIZE << order))
		return NULL;
	return p;
}

void tdbp_pages_free(void *pages, unsigned int order)
{
	(void)order;
	free(pages);
}

/* --- regions ------------------------------------------------------------
 * A region is one memfd, mapped extent by extent into an address range
 * reserved (PROT_NONE) for the whole cap at creation, so extents are
 * contiguous here and at offset i * 2 MiB in the file for other mappers.
 * The page size is chosen when extent 0 is backed: a hugetlb memfd if
 * mapping it works, else a normal one, and a log line says which.  A
 * region never mixes the two.  When a hugetlb region cannot grow because
 * the hugepage pool is exhausted, it moves to a normal memfd at the same
 * addresses and goes on there (migrate_to_small_pages); growth fails
 * with -ENOMEM only when ordinary memory runs out too.  A memfd the
 * region leaves (destroyed, or moved from) is punched out at once, so a
 * client's read-only descriptor of it pins no memory (punch_out).
 */
struct tdbp_region {
	int fd;                    /* atomic: read by tdbp_region_fd */
	bool huge;                 /* atomic: read by tdbp_region_page_size */
	uint64_t dev, ino;         /* atomic: the memfd fd names, for
				    * tdbp_region_ro_fd */
	unsigned char *base;       /* 2 MiB aligned */
	void *reserve;
	size_t reserve_len;
	unsigned int max, n;
	char name[80];
};

static int map_extent(struct tdbp_region *r, unsigned int idx)
{
	off_t off = (off_t)idx * (off_t)TDBP_EXTENT_SIZE;
	void *p;

	if (ftruncate(r->fd, off + (off_t)TDBP_EXTENT_SIZE))
		return -errno;
	p = mmap(r->base + off, TDBP_EXTENT_SIZE, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, r->fd, off);
	if (p == MAP_FAILED) {
		int err = -errno;

		/* Give the file its old size back; the range stays reserved
		 * because MAP_FIXED failed before replacing it... unless the
		 * kernel unmapped it, so reserve it again to be sure. */
		if (ftruncate(r->fd, off) == 0)
			mmap(r->base + off, TDBP_EXTENT_SIZE, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			     MAP_NORESERVE, -1, 0);
		return err;
	}
	return 0;
}

/*
 * A new memfd of a region: mode 0400, so that nobody but root can open
 * it for writing through /proc/<pid>/fd (clients get read-only
 * descriptors of it, tdbp_region_ro_fd); our own descriptor was opened
 * read-write and keeps that.  Its identity (dev, ino) is published for
 * tdbp_region_ro_fd.  F_SEAL_FUTURE_WRITE cannot be used instead: we map
 * every new extent writable as the region grows.
 */
static int memfd_new(struct tdbp_region *r, unsigned int flags)
{
	struct stat st;
	int fd = memfd_create(r->name, MFD_CLOEXEC | flags);

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0400) || fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	__atomic_store_n(&r->dev, (uint64_t)st.st_dev, __ATOMIC_RELEASE);
	__atomic_store_n(&r->ino, (uint64_t)st.st_ino, __ATOMIC_RELEASE);
	return fd;
}

struct tdbp_region *tdbp_region_create(const char *name,
				       unsigned int max_extents, int *err)
{
	struct tdbp_region *r = calloc(1, sizeof(*r));
	uintptr_t a;

	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	snprintf(r->name, sizeof(r->name), "tdb:%s", name);
	r->max = max_extents;
	r->reserve_len = ((size_t)max_extents + 1) * TDBP_EXTENT_SIZE;
	r->reserve = mmap(NULL, r->reserve_len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->reserve == MAP_FAILED) {
		*err = -errno;
		free(r);
		return NULL;
	}
	a = ((uintptr_t)r->reserve + TDBP_EXTENT_SIZE - 1) &
	    ~(uintptr_t)(TDBP_EXTENT_SIZE - 1);
	r->base = (unsigned char *)a;
	r->fd = memfd_new(r, MFD_HUGETLB | MFD_HUGE_2MB);
	r->huge = r->fd >= 0;
	if (r->fd < 0)
		r->fd = memfd_new(r, 0);
	if (r->fd < 0) {
		*err = r->fd;
		munmap(r->reserve, r->reserve_len);
		free(r);
		return NULL;
	}
	return r;
}

/* Whether the fallback was logged as a warning (with region_rl, the
 * state of this file). */
static int small_pages_said;

static int fall_back_to_small_pages(struct tdbp_region *r, int why)
{
	int fd = memfd_new(r, 0);

	if (fd < 0)
		return fd;
	close(r->fd);
	r->fd = fd;
	r->huge = false;
	/* Said once per process as a warning (every table of a daemon on a
	 * machine without hugepages would repeat it), then as debug. */
	tdbp_log_rl(&region_rl,
		    __atomic_exchange_n(&small_pages_said, 1,
					__ATOMIC_RELAXED) ?
		    TDBP_LOG_DEBUG : TDBP_LOG_WARNING,
		    "%s: no 2 MiB hugepages (%s; see vm.nr_hugepages), "
		    "falling back to 4 KiB pages (a warning once; later "
		    "tables fall back too)",
		    r->name, strerror(-why));
	return 0;
}

/*
 * The hugepage pool ran dry while growing a hugetlb region to extent n:
 * copy extents 0 .. n-1 into a fresh 4 KiB memfd (sized for n + 1
 * extents) and map it over them, in one mmap(MAP_FIXED) at the same
 * addresses, so every extent pointer the engine holds (t->map.ext[i])
 * stays valid and shows the same bytes.  Then the old memfd is closed and
 * its hugepages go back to the pool.  Needs n * 2 MiB of ordinary memory
 * for the copy.  On failure (no memory) the region is left exactly as it
 * was, still on hugepages, and a negative errno is returned.
 *
 * Why this is safe:
 *  - tdbp_region_grow is only called through tdbr_grow, from the
 *    allocator (alloc.c alloc_pages), by the table's writer: tdbe_put and
 *    tdbe_del hold the table's write lock (t->wlock), and table creation
 *    grows extent 0 only, before the table is published.  So nothing
 *    writes to the region during the copy, and the copy is complete.
 *  - Readers in other threads of this process (tdbe_get, tdbe_lookup,
 *    cursors, zero-copy pointers held under tdbe_read_lock) only load
 *    from the region.  mmap(MAP_FIXED) replaces the whole range under
 *    mmap_lock taken for writing: a load either hits the old hugetlb page
 *    or faults, waits for the mmap to finish, and finds the new page,
 *    which holds the same bytes.  No address changes.
 *  - The only other users of the region's fd are read-only views
 *    mapped elsewhere (clients' maps, tdbp_region_ro_fd).  The old memfd
 *    is punched out (punch_out) before it is closed: a mapping made from
 *    it reads zeros from then on (magic 0: stale, the client maps the
 *    new memfd), and its hugepages go back to the pool at once, whoever
 *    still holds a descriptor of it.
 */
/*
 * After a move to 4 KiB pages: zero the region magic in the OLD memfd,
 * so a client that still maps it (a read-only map, tdbp_region_ro_fd)
 * sees "not a region" at the end of its read section and maps the table
 * anew.  The old memory is no longer mapped here and hugetlbfs has no
 * write(2): map its first page for the store.  The page is already in
 * the file, so this needs no new hugepage.  punch_out then zeroes the
 * rest too; this store is what is left if the punch fails.
 */
static void stale_old_memory(struct tdbp_region *r, int old)
{
	void *p = mmap(NULL, TDBP_EXTENT_SIZE, PROT_READ | PROT_WRITE,
		       MAP_SHARED, old, 0);

	if (p == MAP_FAILED) {
		tdbp_log_rl(&region_rl, TDBP_LOG_ERR,
			    "%s: cannot mark the old memory stale "
			    "(%s): clients mapping it read a frozen table",
			    r->name, strerror(errno));
		return;
	}
	__atomic_store_n((uint64_t *)p, 0, __ATOMIC_RELEASE);
	munmap(p, TDBP_EXTENT_SIZE);
}

/*
 * Take every page out of a memfd the region no longer uses (the region
 * was destroyed, or moved to a new memfd), now: clients may still hold
 * read-only descriptors or maps of it (TABLE_MAP), and without this its
 * memory would live on as long as they keep them, held by tdbd's tables
 * in no count (issue 25).  The size stays (KEEP_SIZE), so a reader's
 * access is no SIGBUS: it reads zeros (magic 0: its map is stale, it
 * maps the table anew).  What such a read costs: on shmem each page
 * touched again is a new zero page, charged to the reader's memcg; on
 * hugetlbfs a hugepage from the pool (none left: SIGBUS in the reader).
 * Works on both (hugetlbfs punches whole hugepages: the size is a
 * multiple of 2 MiB).
 */
static void punch_out(const struct tdbp_region *r, int fd)
{
	struct stat st;

	if (fstat(fd, &st) || st.st_size <= 0)
		return;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      st.st_size))
		tdbp_log(TDBP_LOG_ERR, "%s: cannot free the old memory (%s): "
			 "clients mapping it keep it until they unmap",
			 r->name, strerror(errno));
}

static int migrate_to_small_pages(struct tdbp_region *r, unsigned int n)
{
	size_t len = (size_t)n * TDBP_EXTENT_SIZE, done = 0;
	int fd, err, old = r->fd;
	struct stat st;
	void *p;

	fd = memfd_create(r->name, MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0400) || fstat(fd, &st))
		goto fail;
	if (ftruncate(fd, (off_t)(len + TDBP_EXTENT_SIZE)))
		goto fail;
	while (done < len) {
		ssize_t w = pwrite(fd, r->base + done, len - done,
				   (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto fail;
		if (w == 0) {
			errno = ENOSPC;
			goto fail;
		}
		done += (size_t)w;
	}
	p = mmap(r->base, len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		/* MAP_FIXED normally fails before it touches the old mapping,
		 * but put the old memfd back over the range to be sure: its
		 * pages (and their reservations) are still in the file, so
		 * this needs no new hugepage. */
		p = mmap(r->base, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, old, 0);
		if (p == MAP_FAILED)
			tdbp_log_rl(&region_rl, TDBP_LOG_ERR,
				    "%s: cannot map the old extents "
				    "back either (%s)", r->name,
				    strerror(errno));
		close(fd);
		return err;
	}
	__atomic_store_n(&r->fd, fd, __ATOMIC_RELEASE);
	__atomic_store_n(&r->dev, (uint64_t)st.st_dev, __ATOMIC_RELEASE);
	__atomic_store_n(&r->ino, (uint64_t)st.st_ino, __ATOMIC_RELEASE);
	__atomic_store_n(&r->huge, false, __ATOMIC_RELEASE);
	stale_old_memory(r, old);       /* in case the punch fails */
	punch_out(r, old);
	close(old);
	return 0;
fail:
	err = -errno;
	close(fd);
	return err;
}

void *tdbp_region_grow(struct tdbp_region *r, unsigned int idx, int *err)
{
	int e;

	if (idx != r->n || idx >= r->max) {
		*err = -EINVAL;
		return NULL;
	}
	e = map_extent(r, idx);
	if (e && idx == 0 && r->huge) {
		e = fall_back_to_small_pages(r, e);
		if (!e)
			e = map_extent(r, idx);
	} else if (e && r->huge &&
		   (e == -ENOMEM || e == -ENOSPC || e == -EFBIG)) {
		int m = migrate_to_small_pages(r, idx);

		if (m) {
			tdbp_log_rl(&region_rl, TDBP_LOG_ERR,
				    "%s: cannot back extent %u on hugepages "
				    "(%s; see vm.nr_hugepages), and moving "
				    "the table to 4 KiB pages failed (%s)",
				    r->name, idx, strerror(-e), strerror(-m));
			*err = -ENOMEM;
			return NULL;
		}
		tdbp_log_rl(&region_rl, TDBP_LOG_WARNING,
			    "%s: no 2 MiB hugepage for extent %u (the pool is "
			    "exhausted; see vm.nr_hugepages): moved its %u "
			    "extent(s) to 4 KiB pages, going on there",
			    r->name, idx, idx);
		e = map_extent(r, idx);
	}
	if (e) {
		if (r->huge)
			tdbp_log_rl(&region_rl, TDBP_LOG_ERR,
				    "%s: cannot back extent %u: "
				    "the hugepage pool is exhausted (%s)",
				    r->name, idx, strerror(-e));
		*err = e == -ENOSPC || e == -EFBIG ? -ENOMEM : e;
		return NULL;
	}
	if (idx == 0 && r->huge)
		tdbp_log_rl(&region_rl, TDBP_LOG_INFO,
			    "%s: backed by 2 MiB hugepages",
			    r->name);
	r->n++;
	return r->base + (size_t)idx * TDBP_EXTENT_SIZE;
}

void tdbp_region_destroy(struct tdbp_region *r)
{
	if (!r)
		return;
	munmap(r->reserve, r->reserve_len);     /* ours first */
	punch_out(r, r->fd);
	close(r->fd);
	free(r);
}

size_t tdbp_region_page_size(const struct tdbp_region *r)
{
	return __atomic_load_n(&r->huge, __ATOMIC_ACQUIRE)
		       ? TDBP_EXTENT_SIZE : (size_t)sysconf(_SC_PAGESIZE);
}

int tdbp_region_fd(const struct tdbp_region *r)
{
	return __atomic_load_n(&r->fd, __ATOMIC_ACQUIRE);
}

/*
 * A new read-only open file of the region's memfd, through
 * /proc/self/fd: a descriptor whose mappings can never be made writable
 * (mmap PROT_WRITE MAP_SHARED and mprotect fail with EACCES, write and
 * ftruncate with EBADF/EINVAL, seals with EPERM), and the memfd's mode
 * (0400) refuses an O_RDWR reopen to anyone but root.
 *
 * The region's fd can be replaced meanwhile (migrate_to_small_pages
 * closes the old one, and its number may be reused by any file): so the
 * file opened is checked to be the region's current memfd (dev, ino
 * read after the open), and the open is retried if it is not.
 */
int tdbp_region_ro_fd(const struct tdbp_region *r)
{
	unsigned int tries;

	for (tries = 0; tries < 4; tries++) {
		char path[40];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "/proc/self/fd/%d",
			 tdbp_region_fd(r));
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int err = -errno;

			if (access("/proc/self/fd", X_OK))
				return -EOPNOTSUPP;     /* no /proc */
			if (err == -ENOENT)
				continue;       /* replaced under us */
			return err;
		}
		if (fstat(fd, &st) == 0 &&
		    (uint64_t)st.st_dev == __atomic_load_n(&r->dev,
							 __ATOMIC_ACQUIRE) &&
		    (uint64_t)st.st_ino == __atomic_load_n(&r->ino,
							 __ATOMIC_ACQUIRE))
			return fd;
		close(fd);
	}
	return -EAGAIN;
}

/* --- locks ------------------------------------------------------------- */

struct tdbp_mutex {
	pthread_mutex_t m;
};

struct tdbp_mutex *tdbp_mutex_create(void)
{
	struct tdbp_mutex *m = malloc(sizeof(*m));

	if (m)
		pthread_mutex_init(&m->m, NULL);
	return m;
}

void tdbp_mutex_destroy(struct tdbp_mutex *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->m);
	free(m);
}

void tdbp_mutex_lock(struct tdbp_mutex *m)
{
	pthread_mutex_lock(&m->m);
}

void tdbp_mutex_unlock(struct tdbp_mutex *m)
{
	pthread_mutex_unlock(&m->m);
}

/* --- RCU ----------------------------------------------------------------
 * liburcu's memb flavour needs each reader thread registered.  Threads
 * register on first use and unregister when they exit (a pthread key
 * destructor), so callers never have to think about it.
 */
static pthread_key_t rcu_key;
static pthread_once_t rcu_once = PTHREAD_ONCE_INIT;
static __thread bool rcu_registered;

static void rcu_thread_exit(void *unused)
{
	(void)unused;
	if (rcu_registered) {
		urcu_memb_unregister_thread();
		rcu_registered = false;
	}
}

static void rcu_key_init(void)
{
	pthread_key_create(&rcu_key, rcu_thread_exit);
}

static void rcu_register(void)
{
	pthread_once(&rcu_once, rcu_key_init);
	urcu_memb_register_thread();
	pthread_setspecific(rcu_key, (void *)1);
	rcu_registered = true;
}

void tdbp_rcu_read_lock(void)
{
	if (__builtin_expect(!rcu_registered, 0))
		rcu_register();
	urcu_memb_read_lock();
}

void tdbp_rcu_read_unlock(void)
{
	urcu_memb_read_unlock();
}

void tdbp_rcu_synchronize(void)
{
	urcu_memb_synchronize_rcu();
}

/* --- misc --------------------------------------------------------------- */

uint64_t tdbp_hash64(const void *data, size_t len, uint64_t seed)
{
	return XXH64(data, len, seed);
}

uint64_t tdbp_random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint64_t)(uintptr_t)&v ^ (uint64_t)getpid() << 32;
	return v;
}

/* tdbp_crc32c is not here: both homes share src/wal/crc32c.c (linked
 * with the WAL's record encoder, src/wal/meson.build). */

uint64_t tdbp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tdbp_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void tdbp_sleep_us(unsigned int us)
{
	struct timespec ts = {
		.tv_sec = us / 1000000u,
		.tv_nsec = (long)(us % 1000000u) * 1000,
	};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void tdbp_cond_resched(void)
{
}
