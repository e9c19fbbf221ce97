// SPDX-License-Identifier: GPL-2.0-only
/*
 * wal.c - the write-ahead log: CRC32C, segment files, the appender, the
 * group-commit flusher thread and the recovery reader (see wal.h for
 * the format and the rules).
 *
 * Invariants:
 *  - LSNs are given at wal_commit, under alock, in the order records are
 *    appended to act; act and out hold whole records in LSN order, out's
 *    all before act's, and the file gets them in that order (flock).
 *  - appended >= written >= durable; all only grow.  written is
 *    published after the write returned, durable after the fdatasync
 *    that covered it returned 0.
 *  - Room: seg_used + reserved <= seg_alloc (unless UINT64_MAX) and
 *    act.len + reserved <= act.cap, so a reserved record can always be
 *    appended and written; rotation gives the new segment room for all
 *    the old one had promised beyond what it holds.
 *  - w->fd is the current segment; w->off its length, always the end of
 *    the last whole record written (a failed write is cut back to it).
 *  - w->fd is -1 only while no segment could be made for lack of space
 *    (wal_open on a full disk): then nothing has been appended since the
 *    open, seg_first is next_lsn and off is 0; wal_reserve makes the
 *    segment first, and once made it is never given up (rotation
 *    replaces it).
 *  - A segment is closed only after an fdatasync of it (rotation does it
 *    under sync_lock), so when the flusher syncs the current segment,
 *    every earlier record is already on disk.
 *  - After a failed write or fdatasync the log is failed for good:
 *    nothing more is written or declared durable (the kernel may have
 *    dropped the dirty pages and cleared the error; retrying would lie).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wal.h"
#include "walrec.h"

_Static_assert(WAL_OPS == (int)WALREC_OPS && WAL_CREATE == (int)WALREC_CREATE &&
	       WAL_OPS_V == (int)WALREC_OPS_V &&
	       WAL_DROP == (int)WALREC_DROP && WAL_OP_PUT == (int)WALREC_OP_PUT &&
	       WAL_OP_DEL == (int)WALREC_OP_DEL && WAL_REC_HDR == WALREC_HDR,
	       "wal.h and walrec.h must agree");

#define SEG_MAGIC   "TDBWAL01"
#define SEG_VERSION 1u

/* --- CRC32C (Castagnoli), hardware when the CPU has SSE4.2 -------------
 * Without SSE4.2 (or off x86-64) the portable one both homes share,
 * tdbp_crc32c (src/wal/crc32c.c), does the work. */

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc_init(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c = crc;

	for (; n >= 8; n -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

uint32_t wal_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_hw)
		return ~crc_sse42(~crc, buf, len);
#endif
	return tdbp_crc32c(crc, buf, len);
}

/* --- little-endian helpers ---------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

const char *wal_sync_name(enum wal_sync s)
{
	switch (s) {
	case WAL_SYNC_ALWAYS: return "always";
	case WAL_SYNC_BATCH:  return "batch";
	case WAL_SYNC_NONE:   return "none";
	}
	return "?";
}

int wal_sync_parse(const char *s, enum wal_sync *out)
{
	if (!strcmp(s, "always"))
		*out = WAL_SYNC_ALWAYS;
	else if (!strcmp(s, "batch"))
		*out = WAL_SYNC_BATCH;
	else if (!strcmp(s, "none"))
		*out = WAL_SYNC_NONE;
	else
		return -EINVAL;
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- segment names ---------------------------------------------------------- */

static void seg_name(char *buf, size_t len, uint64_t first)
{
	snprintf(buf, len, "wal-%016" PRIx64 ".log", first);
}

/* 1 and *first if name is a segment's */
static int seg_parse(const char *name, uint64_t *first)
{
	char *end;

	if (strncmp(name, "wal-", 4) || strlen(name) != 4 + 16 + 4 ||
	    strcmp(name + 20, ".log"))
		return 0;
	errno = 0;
	*first = strtoull(name + 4, &end, 16);
	return !errno && end == name + 20;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The first LSNs of dir's segments, sorted. */
static int seg_list(const char *dir, uint64_t **out, unsigned int *n)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	uint64_t *v = NULL, first;
	unsigned int k = 0, cap = 0;

	if (!dp)
		return -errno;
	while ((de = readdir(dp))) {
		if (!seg_parse(de->d_name, &first))
			continue;
		if (k == cap) {
			uint64_t *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(dp);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k++] = first;
	}
	closedir(dp);
	if (k)
		qsort(v, k, sizeof(*v), cmp_u64);
	*out = v;
	*n = k;
	return 0;
}

/* --- the log ---------------------------------------------------------------- */

/* A buffer of whole records in LSN order: the appended ones, or the
 * ones being written. */
struct wbuf {
	unsigned char *p;
	size_t len, cap;
	uint64_t last;          /* LSN of its last record */
};

struct wal {
	char dir[PATH_MAX];
	int dirfd;
	struct wal_opts o;

	/* Appending: under alock, which a caller holds from wal_begin to
	 * wal_commit (a memcpy of the record), and wal_reserve and the
	 * writer's swap take briefly. */
	pthread_mutex_t alock;
	struct wbuf act;        /* appended, not yet handed to a writer */
	uint64_t next_lsn;
	size_t reserved;        /* bytes promised to reservations; act has
				 * room for them (act.cap >= act.len +
				 * reserved) */
	uint64_t seg_used;      /* bytes of the current segment spoken for:
				 * written, being written, appended */
	uint64_t seg_alloc;     /* bytes of it allocated (fallocate); the
				 * room reservations are checked against;
				 * UINT64_MAX if the filesystem cannot
				 * preallocate */
	size_t rec;             /* the record being built: its offset */
	uint32_t nops;
	int build_err;
	uint64_t appended;      /* atomic: LSN of the last record appended */
	uint64_t syncs;         /* atomic: fdatasyncs done */
	uint64_t bytes_since;   /* atomic */

	/* Writing: under flock, one writer at a time, so the file gets the
	 * records in LSN order.  Lock order: flock, then alock, then
	 * sync_lock, then m. */
	pthread_mutex_t flock;
	struct wbuf out;        /* swapped out of act, being written */
	int fd;                 /* current segment; changes under flock,
				 * alock and sync_lock together */
	uint64_t off;           /* its length: the end of the last record
				 * written */
	uint64_t seg_first;

	/* shared with the flusher */
	uint64_t written;       /* atomic */
	uint64_t durable;       /* atomic */
	int failed;             /* atomic */
	pthread_mutex_t m;
	pthread_cond_t cv;      /* the flusher waits here */
	pthread_cond_t done;    /* wal_sync_to waits here */
	bool urgent, stop;
	bool idle;              /* atomic: the flusher may sleep until
				 * signalled; a batch write then wakes it */
	uint64_t told_lsn;      /* the durable LSN on_durable was last
				 * given: the flusher calls it again when
				 * durable is past it (a rotation's sync
				 * advances durable without a flush) */
	uint64_t expect;        /* records a kicked sync waits for: the
				 * most recent syncs carried, decaying */
	uint64_t last_sync_ns;  /* how long its fdatasync took */
	pthread_mutex_t sync_lock;
	pthread_t thr;
	bool thr_started;
};

#define PREALLOC_CHUNK (4u << 20)       /* a segment grows by this much */
#define FILL_MAX_NS    2000000ull       /* longest wait to fill a sync */
#define OUT_KEEP       (4u << 20)       /* the write buffer kept between
					 * writes, at most */

uint64_t wal_written(const struct wal *w)
{
	return __atomic_load_n(&w->written, __ATOMIC_ACQUIRE);
}

uint64_t wal_syncs(const struct wal *w)
{
	return __atomic_load_n(&w->syncs, __ATOMIC_RELAXED);
}

uint64_t wal_appended(const struct wal *w)
{
	return __atomic_load_n(&w->appended, __ATOMIC_ACQUIRE);
}

uint64_t wal_durable(const struct wal *w)
{
	return __atomic_load_n(&w->durable, __ATOMIC_ACQUIRE);
}

int wal_failed(const struct wal *w)
{
	return __atomic_load_n(&w->failed, __ATOMIC_ACQUIRE);
}

uint64_t wal_bytes_since(const struct wal *w)
{
	return __atomic_load_n(&w->bytes_since, __ATOMIC_RELAXED);
}

static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const unsigned char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Create segment <first> (replacing an empty leftover of that name:
 * recovery found no record in it), write and sync its header, sync the
 * directory so the file itself survives a crash.  On failure the file
 * is removed again (a crash before that leaves a last segment with an
 * unfinished header, which replay removes as such). */
static int seg_create(struct wal *w, uint64_t first, int *fdp)
{
	unsigned char h[WAL_SEG_HDR] = { 0 };
	char name[64];
	int fd, err;

	seg_name(name, sizeof(name), first);
	fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0640);
	if (fd < 0)
		return -errno;
	memcpy(h, SEG_MAGIC, 8);
	put32(h + 8, SEG_VERSION);
	put64(h + 16, first);
	put32(h + 12, wal_crc32c(0, h + 16, WAL_SEG_HDR - 16));
	err = write_all(fd, h, sizeof(h), 0);
	if (!err && fdatasync(fd))
		err = -errno;
	if (!err && fsync(w->dirfd))
		err = -errno;
	if (err) {
		close(fd);
		/* synced, as in rotate: the log may go on without it */
		if (!unlinkat(w->dirfd, name, 0))
			fsync(w->dirfd);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* No room for a new segment (wal_open or wal_reserve start over then). */
static bool no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/* true if err is the failure (the first one) */
static bool set_failed(struct wal *w, int err)
{
	int zero = 0;

	return __atomic_compare_exchange_n(&w->failed, &zero, err, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/*
 * The log fails outside the flusher (a write, rotation, a bad record):
 * wake wal_sync_to's waiters and the flusher, which tells on_durable
 * (held answers wait for that call; the flusher may be asleep with no
 * sync due, and would otherwise never make it).  Not under m (the lock
 * order puts it last, so any of flock, alock may be held).
 */
static void fail_log(struct wal *w, int err)
{
	if (!set_failed(w, err))
		return;
	pthread_mutex_lock(&w->m);
	pthread_cond_broadcast(&w->done);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

/* Under m: durable only grows. */
static void advance(struct wal *w, uint64_t lsn)
{
	if (lsn > wal_durable(w))
		__atomic_store_n(&w->durable, lsn, __ATOMIC_RELEASE);
}

/*
 * Allocate room in segment fd from *alloc on, at least need bytes more:
 * a chunk, or just need when a chunk does not fit.  Blocks allocated
 * beforehand are why a write of reserved records cannot fail for want
 * of space (FALLOC_FL_KEEP_SIZE: the file's size stays the end of its
 * last record, which is what recovery reads).  A filesystem without
 * fallocate gets no reservations (*alloc = UINT64_MAX): a full disk is
 * then found by the write, which fails the log.
 */
static int prealloc(int fd, uint64_t *alloc, uint64_t need, uint64_t chunk)
{
	uint64_t n = need > chunk ? need : chunk;

	if (*alloc == UINT64_MAX)
		return 0;
	need = (need + 4095) & ~4095ull;
	for (;;) {
		if (!fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)*alloc,
			       (off_t)n)) {
			*alloc += n;
			return 0;
		}
		if (errno == EOPNOTSUPP || errno == ENOSYS) {
			*alloc = UINT64_MAX;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (!no_space(-errno) || n == need)
			return -errno;
		n = need;       /* a chunk does not fit: just this much */
	}
}

/* --- writing: wal_write and rotation --------------------------------------- */

/* How much a segment grows by: PREALLOC_CHUNK, but no more than a
 * segment (a small segment size is asked for on a small disk). */
static uint64_t chunk(const struct wal *w)
{
	return w->o.segment_size < PREALLOC_CHUNK ? w->o.segment_size :
						    PREALLOC_CHUNK;
}

/*
 * Under flock: the current segment is past its size, start the next one
 * at the LSN after the last written.  The old segment is synced first,
 * before the new one exists: a crash in between must not leave a torn
 * record in a segment that is no longer the last (recovery takes that
 * for damage).  The new segment gets room for everything the old one
 * had promised beyond what is written (act's records and the
 * reservations); without that room, or on any failure, the log stays on
 * the old segment and tries again at the next write.
 */
static int rotate(struct wal *w)
{
	uint64_t alloc = WAL_SEG_HDR, first = wal_written(w) + 1, need;
	int fd, err = 0;

	pthread_mutex_lock(&w->sync_lock);
	if (fdatasync(w->fd))
		err = -errno;
	else
		__atomic_fetch_add(&w->syncs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&w->sync_lock);
	if (err) {
		fail_log(w, err);
		return err;
	}
	/* everything written is on disk now: waiters learn it, and the
	 * flusher tells on_durable (held answers wait for that) */
	pthread_mutex_lock(&w->m);
	advance(w, first - 1);
	pthread_cond_broadcast(&w->done);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
	if ((err = seg_create(w, first, &fd)))
		return err;
	/* seg_alloc changes only under flock: stable here */
	need = w->seg_alloc == UINT64_MAX ? 0 : w->seg_alloc - w->off;
	if (w->seg_alloc == UINT64_MAX)
		alloc = UINT64_MAX;
	if ((err = prealloc(fd, &alloc, need, chunk(w)))) {
		char name[64];

		close(fd);
		seg_name(name, sizeof(name), first);
		/* The log stays on the old segment, which gets the records
		 * from `first` on: the new one (synced into the directory by
		 * seg_create, header and all) must be gone for good before
		 * they are declared durable, or a crash leaves a segment
		 * starting at `first` after one that holds `first` and
		 * replay stops at the "missing segment". */
		if (!unlinkat(w->dirfd, name, 0) && fsync(w->dirfd))
			fail_log(w, -errno);
		return err;
	}
	pthread_mutex_lock(&w->alock);
	pthread_mutex_lock(&w->sync_lock);
	/* give back the old segment's room beyond its last record */
	if (w->seg_alloc != UINT64_MAX && w->seg_alloc > w->off)
		fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)w->off, (off_t)(w->seg_alloc - w->off));
	close(w->fd);
	w->fd = fd;
	pthread_mutex_unlock(&w->sync_lock);
	w->seg_first = first;
	w->off = WAL_SEG_HDR;
	w->seg_used = WAL_SEG_HDR + w->act.len;
	w->seg_alloc = alloc;
	pthread_mutex_unlock(&w->alock);
	return 0;
}

/* Under flock and alock: hand act's records to the writer (w->out),
 * leaving act empty with room for the reservations.  false: no memory
 * for that; the caller writes act in place, under alock. */
static bool swap_out(struct wal *w)
{
	struct wbuf t = w->out;

	if (t.cap < w->reserved || !t.p) {
		size_t cap = w->reserved > 65536 ? w->reserved : 65536;
		unsigned char *p = realloc(t.p, cap);

		if (!p)
			return false;
		t.p = p;
		t.cap = cap;
	}
	t.len = 0;
	w->out = w->act;
	w->act = t;
	return true;
}

/* Under flock: write b's records at the end of the segment. */
static int write_out(struct wal *w, struct wbuf *b)
{
	int err = write_all(w->fd, b->p, b->len, w->off);

	if (err) {
		/* The records' changes are applied and cannot be taken
		 * back: the log is failed (answers say so), and a partial
		 * record is cut off so the file stays whole. */
		if (ftruncate(w->fd, (off_t)w->off))
			err = -errno;
		fail_log(w, err);
		return err;
	}
	w->off += b->len;
	b->len = 0;
	__atomic_store_n(&w->written, b->last, __ATOMIC_SEQ_CST);
	/* a big transaction's buffer is not kept for ever (the next swap
	 * makes one of the size the reservations then need) */
	if (b == &w->out && b->cap > OUT_KEEP) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
	return 0;
}

int wal_write(struct wal *w)
{
	bool was_synced;
	int err;

	if (wal_appended(w) == wal_written(w))
		return wal_failed(w);
	pthread_mutex_lock(&w->flock);
	if ((err = wal_failed(w))) {
		pthread_mutex_unlock(&w->flock);
		return err;
	}
	was_synced = wal_durable(w) == wal_written(w);
	pthread_mutex_lock(&w->alock);
	if (!w->act.len) {
		pthread_mutex_unlock(&w->alock);
		pthread_mutex_unlock(&w->flock);
		return 0;
	}
	if (swap_out(w)) {
		pthread_mutex_unlock(&w->alock);
		err = write_out(w, &w->out);
	} else {
		err = write_out(w, &w->act);    /* appenders wait meanwhile */
		pthread_mutex_unlock(&w->alock);
	}
	if (!err && w->off >= w->o.segment_size)
		rotate(w);      /* a failure leaves us on this segment */
	pthread_mutex_unlock(&w->flock);
	/* batch: the first record after a sync starts the flusher's clock.
	 * was_synced alone can miss it: read while the flusher was still
	 * syncing the records before, it is false, and the flusher, done,
	 * finds nothing written past durable and sleeps for good; so a
	 * flusher about to sleep (idle, set before it looks at written,
	 * which was stored above: one of us sees the other) is woken. */
	if (!err && w->o.sync == WAL_SYNC_BATCH &&
	    (was_synced || __atomic_load_n(&w->idle, __ATOMIC_SEQ_CST))) {
		pthread_mutex_lock(&w->m);
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->m);
	}
	return err ? err : wal_failed(w);
}

/* --- the flusher ------------------------------------------------------------ */

/*
 * Group commit that fills.  With always, a writer that waits for its
 * change kicks the flusher.  Syncing at once would carry the one change
 * and leave every writer that arrives a moment later for the next
 * sync; so the flusher first waits (bounded by twice the last
 * fdatasync's time and FILL_MAX_NS) until as many records are appended
 * as the recent syncs carried: the writers it released come back with
 * their next change.  w->expect is the largest recent batch, lowered by an
 * eighth at each sync that carried less (a wait that ends early on a
 * few late writers would otherwise shrink the next batch, and the next,
 * down to what one fdatasync's time brings); so writers that left cost
 * that bound for a few syncs.
 */
static void fill_wait(struct wal *w)
{
	uint64_t start = now_ns(), limit = 2 * w->last_sync_ns;
	struct timespec ts = { 0, 20000 };

	if (limit > FILL_MAX_NS)
		limit = FILL_MAX_NS;
	while (wal_appended(w) - wal_durable(w) < w->expect &&
	       now_ns() - start < limit && !w->stop)
		nanosleep(&ts, NULL);
}

/* Write what is appended, fdatasync, publish: one sync of the flusher,
 * called without m.  true if the log had failed when on_durable was
 * called (it has been told). */
static bool sync_once(struct wal *w, bool kicked)
{
	bool failed;
	uint64_t target, t0, told, before = wal_durable(w);
	int err = 0;

	if (kicked)
		fill_wait(w);
	wal_write(w);
	target = wal_written(w);
	t0 = now_ns();
	/* fd -1 (no segment yet): nothing was written, nothing to sync
	 * (target == durable keeps us from here anyway) */
	pthread_mutex_lock(&w->sync_lock);
	if (w->fd >= 0 && target > before) {
		if (fdatasync(w->fd))
			err = -errno;
		else
			__atomic_fetch_add(&w->syncs, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&w->sync_lock);

	pthread_mutex_lock(&w->m);
	if (err)
		set_failed(w, err);
	else
		advance(w, target);
	if (kicked && target > before) {
		uint64_t n = target - before;
		uint64_t low = w->expect - (w->expect + 7) / 8;

		w->expect = n > low ? n : low;
		w->last_sync_ns = now_ns() - t0;
	}
	pthread_cond_broadcast(&w->done);
	told = w->told_lsn = wal_durable(w);
	pthread_mutex_unlock(&w->m);
	failed = wal_failed(w);
	if (w->o.on_durable)
		w->o.on_durable(w->o.arg, told);
	return failed;
}

/* Under m: how long the flusher may sleep before its next sync; 0 to
 * sync now, -1 to sleep until signalled.  always and none sync when
 * asked (a kick, wal_sync_to); batch also batch-interval after the
 * first record written since the last sync. */
static int64_t next_sync(struct wal *w, uint64_t *since)
{
	uint64_t now, lim = (uint64_t)w->o.batch_ms * 1000000;

	if (wal_failed(w))
		return -1;
	/* durable moved without us (rotate): on_durable is told now */
	if (w->o.on_durable && wal_durable(w) > w->told_lsn)
		return 0;
	if (w->urgent || w->stop) {
		if (wal_appended(w) != wal_durable(w))
			return 0;
		if (w->stop)
			return -1;
		/* Nothing to sync: the next kick must signal us again.  A
		 * kicker appends, then reads urgent; we clear urgent, then
		 * read appended (both seq_cst): one of us sees the other. */
		__atomic_store_n(&w->urgent, false, __ATOMIC_SEQ_CST);
		if (wal_appended(w) != wal_durable(w)) {
			__atomic_store_n(&w->urgent, true, __ATOMIC_SEQ_CST);
			return 0;
		}
		return -1;
	}
	if (w->o.sync != WAL_SYNC_BATCH || wal_written(w) == wal_durable(w)) {
		*since = 0;
		return -1;
	}
	now = now_ns();
	if (!*since)
		*since = now;
	return now - *since >= lim ? 0 : (int64_t)(lim - (now - *since));
}

static void *flusher(void *arg)
{
	struct wal *w = arg;
	uint64_t since = 0;
	bool told = false;      /* on_durable knows the log failed */

	pthread_mutex_lock(&w->m);
	for (;;) {
		int64_t wait;
		bool kicked;

		if (!told && wal_failed(w)) {
			/* failed elsewhere (fail_log woke us): tell */
			told = true;
			pthread_cond_broadcast(&w->done);
			pthread_mutex_unlock(&w->m);
			if (w->o.on_durable)
				w->o.on_durable(w->o.arg, wal_durable(w));
			pthread_mutex_lock(&w->m);
			continue;
		}
		__atomic_store_n(&w->idle, true, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		wait = next_sync(w, &since);
		if (wait && w->stop)
			break;
		if (wait < 0) {
			pthread_cond_wait(&w->cv, &w->m);
			continue;
		}
		__atomic_store_n(&w->idle, false, __ATOMIC_SEQ_CST);
		if (wait > 0) {
			struct timespec ts;
			uint64_t at;

			clock_gettime(CLOCK_REALTIME, &ts);
			at = (uint64_t)ts.tv_sec * 1000000000ull +
			     (uint64_t)ts.tv_nsec + (uint64_t)wait;
			ts.tv_sec = (time_t)(at / 1000000000ull);
			ts.tv_nsec = (long)(at % 1000000000ull);
			pthread_cond_timedwait(&w->cv, &w->m, &ts);
			continue;
		}
		kicked = w->urgent && w->o.sync == WAL_SYNC_ALWAYS;
		__atomic_store_n(&w->urgent, false, __ATOMIC_SEQ_CST);
		since = 0;
		pthread_mutex_unlock(&w->m);
		told |= sync_once(w, kicked);
		pthread_mutex_lock(&w->m);
	}
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->m);
	return NULL;
}

int wal_open(const char *dir, uint64_t next_lsn, const struct wal_opts *o,
	     struct wal **out, char *err, size_t errlen)
{
	struct wal *w = calloc(1, sizeof(*w));
	int e;

	if (!w)
		return -ENOMEM;
	w->fd = -1;
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->o = *o;
	if (!w->o.segment_size)
		w->o.segment_size = 64u << 20;
	w->next_lsn = next_lsn ? next_lsn : 1;
	w->written = w->durable = w->appended = w->next_lsn - 1;
	w->told_lsn = w->durable;
	pthread_mutex_init(&w->m, NULL);
	pthread_mutex_init(&w->alock, NULL);
	pthread_mutex_init(&w->flock, NULL);
	pthread_mutex_init(&w->sync_lock, NULL);
	pthread_cond_init(&w->cv, NULL);
	pthread_cond_init(&w->done, NULL);
	w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->dirfd < 0) {
		e = -errno;
		snprintf(err, errlen, "WAL directory %s: %s", dir,
			 strerror(-e));
		goto fail;
	}
	w->seg_first = w->next_lsn;
	if ((e = seg_create(w, w->next_lsn, &w->fd)) && !no_space(e)) {
		snprintf(err, errlen, "WAL %s: cannot start a segment: %s",
			 dir, strerror(-e));
		goto fail;
	}
	if (e) {
		/* a full disk: open without a segment, so what is logged
		 * can still be read; the first reservation tries again */
		snprintf(err, errlen, "WAL %s: cannot start a segment: %s; "
			 "running without one: changes fail with ENOSPC "
			 "until there is room again", dir, strerror(-e));
		w->fd = -1;
		w->off = 0;
	} else {
		if (errlen)
			err[0] = '\0';
		w->off = w->seg_used = w->seg_alloc = WAL_SEG_HDR;
	}
	if ((e = -pthread_create(&w->thr, NULL, flusher, w))) {
		snprintf(err, errlen, "WAL flusher thread: %s", strerror(-e));
		goto fail;
	}
	w->thr_started = true;
	*out = w;
	return 0;
fail:
	wal_close(w);
	return e;
}

bool wal_has_segment(const struct wal *w)
{
	return __atomic_load_n(&w->fd, __ATOMIC_RELAXED) >= 0;
}

void wal_close(struct wal *w)
{
	if (!w)
		return;
	if (w->thr_started) {
		pthread_mutex_lock(&w->m);
		w->stop = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->m);
		pthread_join(w->thr, NULL);
	}
	if (w->fd >= 0)
		close(w->fd);
	if (w->dirfd >= 0)
		close(w->dirfd);
	pthread_mutex_destroy(&w->m);
	pthread_mutex_destroy(&w->alock);
	pthread_mutex_destroy(&w->flock);
	pthread_mutex_destroy(&w->sync_lock);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->done);
	free(w->act.p);
	free(w->out.p);
	free(w);
}

/* --- reserving, building and appending records ----------------------------- */

size_t wal_rec_size(enum wal_type type, uint32_t nops, size_t bytes)
{
	return walrec_size((enum walrec_type)type, nops, bytes);
}

size_t wal_rec_size_max(enum wal_type type, uint32_t nops, size_t bytes)
{
	return walrec_size_max((enum walrec_type)type, nops, bytes);
}

/* The log has no segment (opened on a full disk): make it now, at
 * next_lsn, which follows the last record of the segments before it.
 * Nothing was appended since the open (nothing could be reserved).
 * Under flock and alock. */
static int start_segment(struct wal *w)
{
	int fd, err;

	if ((err = seg_create(w, w->next_lsn, &fd)))
		return err;
	pthread_mutex_lock(&w->sync_lock);
	w->fd = fd;
	pthread_mutex_unlock(&w->sync_lock);
	w->seg_first = w->next_lsn;
	w->off = w->seg_used = w->seg_alloc = WAL_SEG_HDR;
	return 0;
}

static int reserve_err(int err, const char **msg)
{
	if (err == -EIO)
		*msg = "the WAL failed earlier (a write or fdatasync error): "
		       "restart tdbd to recover";
	else if (err == -E2BIG)
		*msg = "the WAL record would be over 1 GiB (a transaction "
		       "too big to log)";
	else if (no_space(err))
		*msg = "no space left on the WAL's filesystem: the change "
		       "was not applied";
	else if (err == -ENOMEM)
		*msg = "out of memory for the WAL's buffer: the change was "
		       "not applied";
	else
		*msg = "cannot grow the WAL segment: the change was not "
		       "applied";
	return err;
}

/* The slow path of wal_reserve, with alock dropped: flock first. */
static int reserve_room(struct wal *w, size_t size)
{
	int err = 0;

	pthread_mutex_lock(&w->flock);
	pthread_mutex_lock(&w->alock);
	if (w->fd < 0)
		err = start_segment(w);
	if (!err && w->seg_used + w->reserved + size > w->seg_alloc)
		err = prealloc(w->fd, &w->seg_alloc, w->seg_used +
			       w->reserved + size - w->seg_alloc, chunk(w));
	pthread_mutex_unlock(&w->flock);
	return err;             /* alock still held */
}

int wal_reserve(struct wal *w, size_t size, const char **msg)
{
	size_t need;
	int err;

	if (wal_failed(w))
		return reserve_err(-EIO, msg);
	if (size > WAL_REC_MAX)
		return reserve_err(-E2BIG, msg);
	pthread_mutex_lock(&w->alock);
	if (w->fd < 0 || w->seg_used + w->reserved + size > w->seg_alloc) {
		pthread_mutex_unlock(&w->alock);
		if ((err = reserve_room(w, size)))
			goto out;
	}
	need = w->act.len + w->reserved + size;
	if (need > w->act.cap) {
		size_t cap = w->act.cap ? w->act.cap : 65536;
		unsigned char *p;

		while (cap < need)
			cap *= 2;
		if (!(p = realloc(w->act.p, cap))) {
			err = -ENOMEM;
			goto out;
		}
		w->act.p = p;
		w->act.cap = cap;
	}
	w->reserved += size;
	err = 0;
out:
	pthread_mutex_unlock(&w->alock);
	return err ? reserve_err(err, msg) : 0;
}

void wal_unreserve(struct wal *w, size_t size)
{
	pthread_mutex_lock(&w->alock);
	w->reserved -= size;
	pthread_mutex_unlock(&w->alock);
}

/* Room in act for more bytes of the record being built: within the
 * reservation always (so this cannot fail), beyond it only if a caller
 * built more than it reserved. */
static unsigned char *grow(struct wal *w, size_t more)
{
	if (w->build_err)
		return NULL;
	if (w->act.len + more > w->act.cap) {
		size_t cap = w->act.cap ? w->act.cap * 2 : 65536;
		unsigned char *nb;

		while (cap < w->act.len + more)
			cap *= 2;
		nb = realloc(w->act.p, cap);
		if (!nb) {
			w->build_err = -ENOMEM;
			return NULL;
		}
		w->act.p = nb;
		w->act.cap = cap;
	}
	w->act.len += more;
	return w->act.p + w->act.len - more;
}

static unsigned char *begin(struct wal *w, enum wal_type type)
{
	size_t hdr = type == WAL_OPS ? WALREC_OPS_HDR :
		     type == WAL_OPS_V ? WALREC_OPS_V_HDR : WALREC_HDR;
	unsigned char *p;

	pthread_mutex_lock(&w->alock);
	w->rec = w->act.len;
	w->nops = 0;
	w->build_err = 0;
	p = grow(w, hdr);
	if (!p)
		return NULL;
	walrec_begin(p, (enum walrec_type)type);
	return p;
}

void wal_begin(struct wal *w, enum wal_type type)
{
	begin(w, type);
}

void wal_begin_ops(struct wal *w, uint64_t version)
{
	unsigned char *p = begin(w, WAL_OPS_V);

	if (p)
		walrec_begin_v(p, version);
}

static int add_name(struct wal *w, const char *name)
{
	size_t n = strlen(name);
	unsigned char *p;

	if (!n || n > 64) {     /* the reader refuses it: fail the record */
		w->build_err = -EINVAL;
		return -EINVAL;
	}
	if (!(p = grow(w, 1 + n)))
		return w->build_err;
	p[0] = (unsigned char)n;
	memcpy(p + 1, name, n);
	return 0;
}

int wal_add_op_dl(struct wal *w, enum wal_op op, const char *name,
		  const void *key, uint32_t klen, const void *val,
		  uint32_t vlen, uint64_t deadline)
{
	size_t n = strlen(name), h;
	unsigned char *p;

	/* what the reader would refuse fails the whole record */
	if (!n || n > 64 || (op != WAL_OP_PUT && op != WAL_OP_DEL) ||
	    (op == WAL_OP_DEL && (vlen || deadline))) {
		w->build_err = -EINVAL;
		return -EINVAL;
	}
	h = deadline ? WALREC_OP_DL_HDR : WALREC_OP_HDR;
	if (!(p = grow(w, h + n + klen + vlen)))
		return w->build_err;
	walrec_op_dl(p, (enum walrec_op)op, (uint8_t)n, klen, vlen, deadline);
	memcpy(p + h, name, n);
	memcpy(p + h + n, key, klen);
	if (vlen)
		memcpy(p + h + n + klen, val, vlen);
	w->nops++;
	return 0;
}

int wal_add_op(struct wal *w, enum wal_op op, const char *name,
	       const void *key, uint32_t klen, const void *val, uint32_t vlen)
{
	return wal_add_op_dl(w, op, name, key, klen, val, vlen, 0);
}

int wal_add_create_ex(struct wal *w, uint64_t id, const char *name,
		      uint32_t uid, uint32_t gid, uint32_t mode,
		      uint32_t max_extents, uint32_t sync,
		      uint64_t default_ttl, uint64_t max_bytes,
		      uint64_t max_records, uint32_t evict, uint32_t flags)
{
	unsigned char *p = grow(w, 28), ext[WALREC_CREATE_EXT_F];
	size_t n;
	int err;

	if (!p)
		return w->build_err;
	walrec_create(p, id, uid, gid, mode, max_extents, sync);
	if ((err = add_name(w, name)))
		return err;
	n = walrec_create_ext(ext, default_ttl, max_bytes, max_records,
			      evict, flags);
	if (!n)
		return 0;
	if (!(p = grow(w, n)))
		return w->build_err;
	memcpy(p, ext, n);
	return 0;
}

int wal_add_create(struct wal *w, uint64_t id, const char *name,
		   uint32_t uid, uint32_t gid, uint32_t mode,
		   uint32_t max_extents, uint32_t sync)
{
	return wal_add_create_ex(w, id, name, uid, gid, mode, max_extents,
				 sync, 0, 0, 0, 0, 0);
}

int wal_add_drop(struct wal *w, const char *name)
{
	return add_name(w, name);
}

int wal_commit(struct wal *w, size_t reserved, uint64_t *lsn)
{
	size_t len = w->act.len - w->rec, padded = (len + 7) & ~(size_t)7;
	unsigned char *r;
	int err = w->build_err;

	w->reserved -= reserved;
	/* an OPS_V record without its version: replay would refuse it */
	if (!err && len >= WALREC_OPS_V_HDR &&
	    w->act.p[w->rec + 16] == WAL_OPS_V &&
	    !get64(w->act.p + w->rec + WALREC_HDR + 8))
		err = -EINVAL;
	if (!err && padded > WAL_REC_MAX)
		err = -E2BIG;
	if (!err && !grow(w, padded - len))
		err = w->build_err;
	if (err) {
		/* A record that cannot be appended after its change was
		 * applied (a caller that built more than it reserved, or a
		 * bad name): nothing of it stays, and the log is failed,
		 * since the change it describes cannot be logged. */
		w->act.len = w->rec;
		fail_log(w, err == -ENOMEM ? -ENOMEM : -EIO);
		pthread_mutex_unlock(&w->alock);
		*lsn = 0;
		return err;
	}
	r = w->act.p + w->rec;
	memset(r + len, 0, padded - len);
	walrec_seal(r, (uint32_t)len, w->next_lsn, w->nops);
	walrec_set_crc(r, wal_crc32c(0, r + 4, len - 4));
	*lsn = w->act.last = w->next_lsn++;
	w->seg_used += padded;
	__atomic_fetch_add(&w->bytes_since, padded, __ATOMIC_RELAXED);
	__atomic_store_n(&w->appended, *lsn, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&w->alock);
	return 0;
}

/* A record that comes encoded (tdb.ko's log, tdbd in kernel mode):
 * reserved, checked against the log's next LSN under the append lock,
 * copied.  Nothing is appended on any error. */
int wal_append_rec(struct wal *w, const void *rec, size_t len, char *err,
		   size_t errlen)
{
	size_t padded = (len + 7) & ~(size_t)7;
	const char *msg = NULL;
	struct wal_rec r;
	uint64_t want;
	int e;

	if ((e = wal_rec_check(rec, len, &r, &msg))) {
		snprintf(err, errlen, "%s", msg);
		return e;
	}
	if ((e = wal_reserve(w, padded, &msg))) {
		snprintf(err, errlen, "%s", msg);
		return e;
	}
	pthread_mutex_lock(&w->alock);
	w->reserved -= padded;
	want = w->next_lsn;
	if (r.lsn != want) {
		pthread_mutex_unlock(&w->alock);
		snprintf(err, errlen, "record LSN %llu is not the WAL's next "
			 "LSN %llu", (unsigned long long)r.lsn,
			 (unsigned long long)want);
		return -EPROTO;
	}
	/* room: reserved above, so act has it */
	memcpy(w->act.p + w->act.len, rec, len);
	memset(w->act.p + w->act.len + len, 0, padded - len);
	w->act.len += padded;
	w->act.last = w->next_lsn++;
	w->seg_used += padded;
	__atomic_fetch_add(&w->bytes_since, padded, __ATOMIC_RELAXED);
	__atomic_store_n(&w->appended, r.lsn, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&w->alock);
	return 0;
}

void wal_kick(struct wal *w)
{
	if (__atomic_load_n(&w->urgent, __ATOMIC_SEQ_CST))
		return;         /* the flusher will look (next_sync) */
	pthread_mutex_lock(&w->m);
	__atomic_store_n(&w->urgent, true, __ATOMIC_SEQ_CST);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

int wal_sync_to(struct wal *w, uint64_t lsn)
{
	int err;

	pthread_mutex_lock(&w->m);
	__atomic_store_n(&w->urgent, true, __ATOMIC_SEQ_CST);
	pthread_cond_signal(&w->cv);
	while (wal_durable(w) < lsn && !wal_failed(w))
		pthread_cond_wait(&w->done, &w->m);
	err = wal_failed(w);
	pthread_mutex_unlock(&w->m);
	return err;
}

int wal_remove_before(struct wal *w, uint64_t lsn)
{
	uint64_t *v, first;
	unsigned int n, i;
	int removed = 0, err;

	__atomic_store_n(&w->bytes_since, 0, __ATOMIC_RELAXED);
	if ((err = seg_list(w->dir, &v, &n)))
		return err;
	pthread_mutex_lock(&w->flock);
	first = w->seg_first;
	pthread_mutex_unlock(&w->flock);
	/* segment i holds LSNs [v[i], v[i+1]); remove it if all <= lsn,
	 * never the current one */
	for (i = 0; i + 1 < n; i++) {
		char name[64];

		if (v[i + 1] > lsn + 1 || v[i] >= first)
			break;
		seg_name(name, sizeof(name), v[i]);
		if (!unlinkat(w->dirfd, name, 0))
			removed++;
	}
	free(v);
	if (removed)
		fsync(w->dirfd);
	return removed;
}

/* --- decoding ------------------------------------------------------------ */

/* Where an ops record's ops start (4 or 16), or 0 if r is none or its
 * header is bad (short, the u32 0 not 0, a version of 0). */
static uint32_t ops_start(const struct wal_rec *r)
{
	if (r->type == WAL_OPS)
		return r->len >= 4 ? 4 : 0;
	if (r->type != WAL_OPS_V || r->len < 16 || get32(r->payload + 4) ||
	    !get64(r->payload + 8))
		return 0;
	return 16;
}

int wal_ops_count(const struct wal_rec *r, uint32_t *n)
{
	if (!ops_start(r))
		return -EUCLEAN;
	*n = get32(r->payload);
	return 0;
}

int wal_ops_version(const struct wal_rec *r, uint64_t *version)
{
	if (!ops_start(r))
		return -EUCLEAN;
	*version = r->type == WAL_OPS ? r->lsn : get64(r->payload + 8);
	return 0;
}

int wal_next_op(const struct wal_rec *r, uint32_t *pos, struct wal_opv *op)
{
	const unsigned char *p;
	uint32_t start = ops_start(r), at = *pos ? *pos : start, nl, h;
	uint64_t need;

	if (!start || at < start)
		return -EUCLEAN;

	if (at == r->len)
		return 0;
	if (at > r->len || r->len - at < 12)
		return -EUCLEAN;
	p = r->payload + at;
	nl = p[1];
	op->op = p[0];
	op->klen = get32(p + 4);
	op->vlen = get32(p + 8);
	op->deadline = 0;
	h = WALREC_OP_HDR;
	/* a put with a deadline: only in a record with versions (none
	 * was ever written in an old WAL_OPS one), and never 0 */
	if (op->op == WAL_OP_PUT_DL) {
		if (r->type != WAL_OPS_V || r->len - at < WALREC_OP_DL_HDR)
			return -EUCLEAN;
		op->deadline = get64(p + WALREC_OP_HDR);
		if (!op->deadline)
			return -EUCLEAN;
		op->op = WAL_OP_PUT;
		h = WALREC_OP_DL_HDR;
	}
	need = (uint64_t)h + nl + op->klen + op->vlen;
	if ((op->op != WAL_OP_PUT && op->op != WAL_OP_DEL) || !nl || nl > 64 ||
	    need > r->len - at || (op->op == WAL_OP_DEL && op->vlen))
		return -EUCLEAN;
	memcpy(op->name, p + h, nl);
	op->name[nl] = 0;
	op->key = p + h + nl;
	op->val = p + h + nl + op->klen;
	*pos = at + (uint32_t)need;
	return 1;
}

static int get_name(const unsigned char *p, uint32_t left, char name[65])
{
	uint32_t n;

	if (!left)
		return -EUCLEAN;
	n = p[0];
	if (!n || n > 64 || 1 + n != left)
		return -EUCLEAN;
	memcpy(name, p + 1, n);
	name[n] = 0;
	return 0;
}

int wal_get_create(const struct wal_rec *r, struct wal_create *c)
{
	const unsigned char *p = r->payload;
	uint32_t x_len;

	if (r->type != WAL_CREATE || r->len < 29)
		return -EUCLEAN;
	c->id = get64(p);
	c->uid = get32(p + 8);
	c->gid = get32(p + 12);
	c->mode = get32(p + 16);
	c->max_extents = get32(p + 20);
	c->sync = get32(p + 24);
	c->default_ttl = c->max_bytes = c->max_records = 0;
	c->evict = c->flags = 0;
	/* the name, then the attributes if the table has any: 28 bytes,
	 * or 32 with its flags (walrec.h) */
	for (x_len = WALREC_CREATE_EXT; x_len <= WALREC_CREATE_EXT_F;
	     x_len += WALREC_CREATE_EXT_F - WALREC_CREATE_EXT) {
		const unsigned char *x = p + r->len - x_len;

		if (r->len - 28 != 1u + p[28] + x_len)
			continue;
		c->default_ttl = get64(x);
		c->max_bytes = get64(x + 8);
		c->max_records = get64(x + 16);
		c->evict = get32(x + 24);
		if (x_len == WALREC_CREATE_EXT_F)
			c->flags = get32(x + 28);
		return get_name(p + 28, r->len - 28 - x_len, c->name);
	}
	return get_name(p + 28, r->len - 28, c->name);
}

int wal_get_drop(const struct wal_rec *r, char name[65])
{
	if (r->type != WAL_DROP)
		return -EUCLEAN;
	return get_name(r->payload, r->len, name);
}

/* --- replay ------------------------------------------------------------------ */

/* Why the record at off is not a good one with LSN want (NULL if it is). */
static const char *rec_bad(const unsigned char *m, uint64_t size, uint64_t off,
			   uint64_t want, uint32_t *lenp)
{
	uint32_t len;

	if (size - off < WAL_REC_HDR)
		return "a partial record header";
	len = get32(m + off + 4);
	if (len < WAL_REC_HDR || len > WAL_REC_MAX)
		return "a bad record length";
	if (len > size - off)
		return "a record cut short";
	if (wal_crc32c(0, m + off + 4, len - 4) != get32(m + off))
		return "a bad CRC";
	if (want && get64(m + off + 8) != want)
		return "an LSN out of sequence";
	if (m[off + 16] < WAL_OPS || m[off + 16] > WAL_OPS_V)
		return "an unknown record type";
	*lenp = len;
	return NULL;
}

int wal_rec_check(const void *buf, size_t len, struct wal_rec *r,
		  const char **why)
{
	const unsigned char *m = buf;
	uint32_t rlen = 0;

	memset(r, 0, sizeof(*r));
	*why = rec_bad(m, len, 0, 0, &rlen);
	if (!*why && rlen != len)
		*why = "a record length that is not the record's";
	if (*why)
		return -EUCLEAN;
	r->lsn = get64(m + 8);
	r->type = (enum wal_type)m[16];
	r->payload = m + WAL_REC_HDR;
	r->len = rlen - WAL_REC_HDR;
	r->file = "tdb.ko's log";
	return 0;
}

/* Is there an intact record anywhere after off?  Then what is at off is
 * damage, not a torn tail. */
static bool intact_after(const unsigned char *m, uint64_t size, uint64_t off)
{
	uint32_t len;

	for (off = (off + 8) & ~7ull; off + WAL_REC_HDR <= size; off += 8)
		if (!rec_bad(m, size, off, 0, &len))
			return true;
	return false;
}

struct seg {
	char name[64];
	char path[PATH_MAX + 64];
	int fd;
	unsigned char *map;
	uint64_t size;
};

static void seg_unmap(struct seg *s)
{
	if (s->map && s->size)
		munmap(s->map, s->size);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}

/* ro: a live log's, read only (wal_read_range); else replay's, which
 * may cut it. */
static int seg_map(const char *dir, uint64_t first, struct seg *s, bool ro)
{
	struct stat st;

	seg_name(s->name, sizeof(s->name), first);
	snprintf(s->path, sizeof(s->path), "%s/%s", dir, s->name);
	s->map = NULL;
	s->fd = open(s->path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st))
		return -errno;
	s->size = (uint64_t)st.st_size;
	if (!s->size)
		return 0;
	s->map = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, s->fd, 0);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		return -errno;
	}
	return 0;
}

/* Cut segment s at off (a torn tail or, when asked, damage). */
static int seg_cut(struct seg *s, uint64_t off)
{
	if (ftruncate(s->fd, (off_t)off) || fdatasync(s->fd))
		return -errno;
	return 0;
}

/* Set aside every segment after index i (their records follow damage). */
static void set_aside(const char *dir, const uint64_t *v, unsigned int n,
		      unsigned int i, const struct wal_replay_opts *o)
{
	char from[PATH_MAX + 64], to[PATH_MAX + 80], name[64], msg[PATH_MAX + 160];

	for (i++; i < n; i++) {
		seg_name(name, sizeof(name), v[i]);
		snprintf(from, sizeof(from), "%s/%s", dir, name);
		snprintf(to, sizeof(to), "%s.damaged", from);
		if (!rename(from, to) && o->note) {
			snprintf(msg, sizeof(msg), "%s set aside as %s.damaged "
				 "(it follows the damage)", name, name);
			o->note(o->arg, msg);
		}
	}
}

int wal_replay(const char *dir, const struct wal_replay_opts *o,
	       struct wal_replay_result *res, char *err, size_t errlen)
{
	uint64_t *v = NULL, want = o->after + 1, all = 0, step = 0;
	unsigned int n = 0, i;
	struct seg s = { .fd = -1 };
	int e;

	memset(res, 0, sizeof(*res));
	res->last_lsn = o->after;
	if ((e = seg_list(dir, &v, &n))) {
		snprintf(err, errlen, "WAL %s: %s", dir, strerror(-e));
		return e;
	}
	/* segments wholly at or before `after` are not needed */
	for (i = 0; i + 1 < n && v[i + 1] <= want; i++)
		;
	if (i < n && v[i] > want) {
		snprintf(err, errlen, "WAL %s: records %" PRIu64 "..%" PRIu64
			 " are missing (the first segment left starts at "
			 "LSN %" PRIu64 ", the checkpoint is at %" PRIu64 ")",
			 dir, want, v[i] - 1, v[i], o->after);
		free(v);
		return -ENODATA;
	}
	for (unsigned int k = i; k < n; k++) {
		struct stat st;
		char p[PATH_MAX + 64], name[64];

		seg_name(name, sizeof(name), v[k]);
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (!stat(p, &st))
			all += (uint64_t)st.st_size;
	}
	for (unsigned int first = i; i < n; i++) {
		bool last = i + 1 == n;
		uint64_t off = WAL_SEG_HDR, had = res->records;
		const char *bad = NULL;

		if ((e = seg_map(dir, v[i], &s, false))) {
			snprintf(err, errlen, "WAL %s: %s", s.path,
				 strerror(-e));
			goto out;
		}
		res->segments++;
		if (v[i] != want && !(v[i] < want && i == first)) {
			snprintf(err, errlen, "WAL %s: starts at LSN %" PRIu64
				 " but the record before it was %" PRIu64
				 " (a segment is missing)", s.path, v[i],
				 want - 1);
			e = -ENODATA;
			goto out;
		}
		if (s.size < WAL_SEG_HDR || memcmp(s.map, SEG_MAGIC, 8) ||
		    get32(s.map + 8) != SEG_VERSION ||
		    get64(s.map + 16) != v[i] ||
		    get32(s.map + 12) != wal_crc32c(0, s.map + 16,
						     WAL_SEG_HDR - 16)) {
			if (last && s.size < WAL_SEG_HDR + WAL_REC_HDR) {
				/* made but never written to: a crash while
				 * starting it */
				if (o->note) {
					char msg[PATH_MAX + 128];

					snprintf(msg, sizeof(msg), "%s: an "
						 "unfinished segment header; "
						 "removed", s.name);
					o->note(o->arg, msg);
				}
				unlink(s.path);
				seg_unmap(&s);
				break;
			}
			bad = "a bad segment header";
			off = 0;
		}
		while (!bad && off < s.size) {
			struct wal_rec r;
			uint32_t len;
			uint64_t lsn;

			if (o->progress && res->bytes + off - step >= (64u << 20)) {
				step = res->bytes + off;
				o->progress(o->arg, step, all);
			}
			bad = rec_bad(s.map, s.size, off, 0, &len);
			if (bad)
				break;
			lsn = get64(s.map + off + 8);
			if (lsn < want) {       /* before the checkpoint */
				off += (len + 7u) & ~7u;
				continue;
			}
			if (lsn != want) {
				bad = "an LSN out of sequence";
				break;
			}
			r.lsn = lsn;
			r.type = s.map[off + 16];
			r.payload = s.map + off + WAL_REC_HDR;
			r.len = len - WAL_REC_HDR;
			r.file = s.name;
			r.off = off;
			if ((e = o->fn(o->arg, &r))) {
				snprintf(err, errlen, "WAL %s: offset %" PRIu64
					 ": applying record LSN %" PRIu64
					 " failed: %s", s.path, off, lsn,
					 strerror(-e));
				goto out;
			}
			res->records++;
			res->last_lsn = lsn;
			want = lsn + 1;
			off += (len + 7u) & ~7u;
		}
		if (bad && last && off && !intact_after(s.map, s.size, off)) {
			char msg[PATH_MAX + 200];

			snprintf(msg, sizeof(msg), "%s: torn tail at offset "
				 "%" PRIu64 " (%s; %" PRIu64 " bytes) cut off",
				 s.name, off, bad, s.size - off);
			if ((e = seg_cut(&s, off))) {
				snprintf(err, errlen, "WAL %s: cutting the torn "
					 "tail: %s", s.path, strerror(-e));
				goto out;
			}
			if (o->note)
				o->note(o->arg, msg);
		} else if (bad && o->truncate_damage) {
			char msg[PATH_MAX + 200];

			snprintf(msg, sizeof(msg), "%s: damage at offset "
				 "%" PRIu64 " (%s): the log is cut there as "
				 "asked; %" PRIu64 " is the last record kept",
				 s.name, off, bad, want - 1);
			if (off < WAL_SEG_HDR) {   /* nothing of it is usable */
				char to[PATH_MAX + 80];

				snprintf(to, sizeof(to), "%s.damaged", s.path);
				e = rename(s.path, to) ? -errno : 0;
			} else {
				e = seg_cut(&s, off);
			}
			if (e) {
				snprintf(err, errlen, "WAL %s: cutting at the "
					 "damage: %s", s.path, strerror(-e));
				goto out;
			}
			if (o->note)
				o->note(o->arg, msg);
			set_aside(dir, v, n, i, o);
			res->bytes += off;
			seg_unmap(&s);
			break;
		} else if (bad) {
			snprintf(err, errlen, "WAL %s: offset %" PRIu64 ": %s "
				 "(after LSN %" PRIu64 ") with intact records "
				 "after it: the log is damaged, not torn; "
				 "start with --wal-truncate-damaged to cut it "
				 "there and lose what follows", s.path, off,
				 bad, want - 1);
			e = -EUCLEAN;
			goto out;
		}
		/*
		 * A tdbd that was killed may have written these records and
		 * never synced them: they can be only in the page cache.
		 * They are applied now, and what is logged next goes to a
		 * new segment that is synced, so sync this one first; else a
		 * power cut could keep the new segment and lose this tail,
		 * and the gap would stop the next start.
		 */
		if (res->records > had && fdatasync(s.fd)) {
			e = -errno;
			snprintf(err, errlen, "WAL %s: fdatasync of the "
				 "replayed segment: %s", s.path, strerror(-e));
			goto out;
		}
		res->bytes += s.size;
		seg_unmap(&s);
	}
	e = 0;
out:
	seg_unmap(&s);
	free(v);
	return e;
}

/*
 * A live log read back (a checkpoint without a mirror, issue 29): the
 * records after..upto, all of which were made durable, so each must be
 * there and intact.  Nothing is written: no cut, no sync, no rename.  A
 * segment's size is taken when it is mapped; the appender only adds
 * after it (records past upto are never looked at), and segments are
 * removed only by the caller's own wal_remove_before.
 */
int wal_read_range(const char *dir, uint64_t after, uint64_t upto,
		   int (*fn)(void *arg, const struct wal_rec *r), void *arg,
		   char *err, size_t errlen)
{
	uint64_t *v = NULL, want = after + 1;
	unsigned int n = 0, i;
	struct seg s = { .fd = -1 };
	int e = 0;

	if (upto <= after)
		return 0;
	if ((e = seg_list(dir, &v, &n))) {
		snprintf(err, errlen, "WAL %s: %s", dir, strerror(-e));
		return e;
	}
	for (i = 0; i + 1 < n && v[i + 1] <= want; i++)
		;
	if (i == n || v[i] > want) {
		if (!n)
			snprintf(err, errlen, "WAL %s: record %" PRIu64 " is "
				 "in no segment (there is none)", dir, want);
		else
			snprintf(err, errlen, "WAL %s: record %" PRIu64 " is "
				 "in no segment (the first starts at LSN %"
				 PRIu64 ")", dir, want, v[i]);
		free(v);
		return -ENODATA;
	}
	for (; i < n && want <= upto; i++) {
		uint64_t off = WAL_SEG_HDR;

		if (v[i] > want) {
			snprintf(err, errlen, "WAL %s: records %" PRIu64 "..%"
				 PRIu64 " are in no segment (the next starts "
				 "at LSN %" PRIu64 ")", dir, want, v[i] - 1,
				 v[i]);
			e = -ENODATA;
			goto out;
		}
		if ((e = seg_map(dir, v[i], &s, true))) {
			snprintf(err, errlen, "WAL %s: %s", s.path,
				 strerror(-e));
			goto out;
		}
		if (s.size < WAL_SEG_HDR || memcmp(s.map, SEG_MAGIC, 8) ||
		    get64(s.map + 16) != v[i]) {
			snprintf(err, errlen, "WAL %s: a bad segment header "
				 "(record %" PRIu64 " was to be in it)", s.path,
				 want);
			e = -EUCLEAN;
			goto out;
		}
		while (want <= upto && off < s.size) {
			const char *bad;
			struct wal_rec r;
			uint32_t len;
			uint64_t lsn;

			if ((bad = rec_bad(s.map, s.size, off, 0, &len))) {
				snprintf(err, errlen, "WAL %s: offset %" PRIu64
					 ": %s, where record %" PRIu64 " (made "
					 "durable) was to be", s.path, off, bad,
					 want);
				e = -EUCLEAN;
				goto out;
			}
			lsn = get64(s.map + off + 8);
			if (lsn < want) {
				off += (len + 7u) & ~7u;
				continue;
			}
			if (lsn != want) {
				snprintf(err, errlen, "WAL %s: offset %" PRIu64
					 ": record %" PRIu64 " where %" PRIu64
					 " was to be", s.path, off, lsn, want);
				e = -EUCLEAN;
				goto out;
			}
			r.lsn = lsn;
			r.type = s.map[off + 16];
			r.payload = s.map + off + WAL_REC_HDR;
			r.len = len - WAL_REC_HDR;
			r.file = s.name;
			r.off = off;
			if ((e = fn(arg, &r))) {
				snprintf(err, errlen, "WAL %s: offset %" PRIu64
					 ": record %" PRIu64 ": the reader "
					 "stopped: %s", s.path, off, lsn,
					 strerror(e < 0 ? -e : e));
				goto out;
			}
			want = lsn + 1;
			off += (len + 7u) & ~7u;
		}
		seg_unmap(&s);
	}
	if (want <= upto) {
		snprintf(err, errlen, "WAL %s: the log ends at record %" PRIu64
			 ", before %" PRIu64 " (made durable)", dir, want - 1,
			 upto);
		e = -ENODATA;
	}
out:
	seg_unmap(&s);
	free(v);
	return e;
}
