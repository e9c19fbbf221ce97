/*
 * wal.c - the write-ahead log: CRC32C, segment files, the appender, the
 * group-commit flusher thread and the recovery reader (see wal.h for
 * the format and the rules).
 *
 * Invariants:
 *  - w->fd is the current segment; w->off its length, always the end of
 *    the last whole record (a failed write is cut back to it).
 *  - w->fd is -1 only while no segment could be made for lack of space
 *    (wal_open on a full disk): then nothing has been written since the
 *    open (written == durable == next_lsn - 1), seg_first is next_lsn
 *    and off is 0; wal_commit makes the segment before it writes, and
 *    once made it is never given up (rotation replaces it).
 *  - written >= durable; both only grow.  durable is published after the
 *    fdatasync that covered it returned 0.
 *  - A segment is closed only after an fdatasync of it (rotation does it
 *    under sync_lock), so when the flusher syncs the current segment,
 *    every earlier record is already on disk.
 *  - After a failed fdatasync the log is failed for good: nothing more
 *    is written or declared durable (the kernel may have dropped the
 *    dirty pages and cleared the error; retrying would lie).
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

#define SEG_MAGIC   "TDBWAL01"
#define SEG_VERSION 1u

/* --- CRC32C (Castagnoli), hardware when the CPU has SSE4.2 ------------- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_table[j][i] = (crc_table[j - 1][i] >> 8) ^
					  crc_table[0][crc_table[j - 1][i] & 0xff];
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
	const unsigned char *p = buf;
	uint32_t c = ~crc;

	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_hw)
		return ~crc_sse42(c, p, len);
#endif
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);

		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][p[4]] ^ crc_table[2][p[5]] ^
		    crc_table[1][p[6]] ^ crc_table[0][p[7]];
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return ~c;
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

struct wal {
	char dir[PATH_MAX];
	int dirfd;
	struct wal_opts o;

	/* the appender's (under the caller's write lock) */
	int fd;                 /* current segment; sync_lock to swap */
	uint64_t off;
	uint64_t seg_first;
	uint64_t next_lsn;
	unsigned char *buf;     /* the record being built */
	size_t len, cap;
	uint32_t nops;
	int build_err;          /* the first error building the record */
	uint64_t last_lsn, last_off;    /* for wal_retract */
	uint64_t bytes_since;   /* atomic */

	/* shared with the flusher */
	uint64_t written;       /* atomic */
	uint64_t durable;       /* atomic */
	int failed;             /* atomic */
	pthread_mutex_t m;
	pthread_cond_t cv;      /* the flusher waits here */
	pthread_cond_t done;    /* wal_sync_to waits here */
	bool urgent, stop;
	uint64_t retracts;      /* under m: a sync that began before a
				 * retract must not declare its target */
	pthread_mutex_t sync_lock;
	pthread_t thr;
	bool thr_started;
};

uint64_t wal_written(const struct wal *w)
{
	return __atomic_load_n(&w->written, __ATOMIC_ACQUIRE);
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
		unlinkat(w->dirfd, name, 0);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* No room for a new segment (wal_open or wal_commit start over then). */
static bool no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

static void set_failed(struct wal *w, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&w->failed, &zero, err, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Under m: durable only grows (but see wal_retract). */
static void advance(struct wal *w, uint64_t lsn)
{
	if (lsn > wal_durable(w))
		__atomic_store_n(&w->durable, lsn, __ATOMIC_RELEASE);
}

static void *flusher(void *arg)
{
	struct wal *w = arg;
	uint64_t since = 0, gen;

	pthread_mutex_lock(&w->m);
	for (;;) {
		uint64_t target = wal_written(w), dur = wal_durable(w), now;
		struct timespec ts;
		int err = 0;

		if (w->stop && (target == dur || wal_failed(w)))
			break;
		if (target == dur || wal_failed(w)) {
			since = 0;
			pthread_cond_wait(&w->cv, &w->m);
			continue;
		}
		now = now_ns();
		if (!since)
			since = now;
		if (!w->urgent && !w->stop &&
		    now - since < (uint64_t)w->o.batch_ms * 1000000) {
			uint64_t at;

			clock_gettime(CLOCK_REALTIME, &ts);
			at = (uint64_t)ts.tv_sec * 1000000000ull +
			     (uint64_t)ts.tv_nsec +
			     (uint64_t)w->o.batch_ms * 1000000 - (now - since);
			ts.tv_sec = (time_t)(at / 1000000000ull);
			ts.tv_nsec = (long)(at % 1000000000ull);
			pthread_cond_timedwait(&w->cv, &w->m, &ts);
			continue;
		}
		w->urgent = false;
		since = 0;
		gen = w->retracts;
		pthread_mutex_unlock(&w->m);

		/* fd -1 (no segment yet): nothing was written, nothing to
		 * sync (target == durable keeps us from here anyway) */
		pthread_mutex_lock(&w->sync_lock);
		if (w->fd >= 0 && fdatasync(w->fd))
			err = -errno;
		pthread_mutex_unlock(&w->sync_lock);

		pthread_mutex_lock(&w->m);
		if (err)
			set_failed(w, err);
		else if (gen == w->retracts)
			advance(w, target);
		pthread_cond_broadcast(&w->done);
		pthread_mutex_unlock(&w->m);
		if (w->o.on_durable)
			w->o.on_durable(w->o.arg, wal_durable(w));
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
	w->written = w->durable = w->next_lsn - 1;
	pthread_mutex_init(&w->m, NULL);
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
		 * can still be read; the first commit tries again */
		snprintf(err, errlen, "WAL %s: cannot start a segment: %s; "
			 "running without one: changes fail with ENOSPC "
			 "until there is room again", dir, strerror(-e));
		w->fd = -1;
		w->off = 0;
	} else {
		if (errlen)
			err[0] = '\0';
		w->off = WAL_SEG_HDR;
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
	return w->fd >= 0;
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
	pthread_mutex_destroy(&w->sync_lock);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->done);
	free(w->buf);
	free(w);
}

/* --- building and writing records --------------------------------------- */

static unsigned char *grow(struct wal *w, size_t more)
{
	if (w->build_err)
		return NULL;
	if (w->len + more > WAL_REC_MAX) {
		w->build_err = -E2BIG;
		return NULL;
	}
	if (w->len + more > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		unsigned char *nb;

		while (cap < w->len + more)
			cap *= 2;
		nb = realloc(w->buf, cap);
		if (!nb) {
			w->build_err = -ENOMEM;
			return NULL;
		}
		w->buf = nb;
		w->cap = cap;
	}
	w->len += more;
	return w->buf + w->len - more;
}

void wal_begin(struct wal *w, enum wal_type type)
{
	unsigned char *p;

	w->len = 0;
	w->nops = 0;
	w->build_err = 0;
	p = grow(w, WAL_REC_HDR + (type == WAL_OPS ? 4 : 0));
	if (!p)
		return;
	memset(p, 0, WAL_REC_HDR + (type == WAL_OPS ? 4 : 0));
	p[16] = (unsigned char)type;
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

int wal_add_op(struct wal *w, enum wal_op op, const char *name,
	       const void *key, uint32_t klen, const void *val, uint32_t vlen)
{
	size_t n = strlen(name);
	unsigned char *p;

	/* what the reader would refuse fails the whole record (commit
	 * must not write it without this op, nor with it) */
	if (!n || n > 64 || (op != WAL_OP_PUT && op != WAL_OP_DEL) ||
	    (op == WAL_OP_DEL && vlen)) {
		w->build_err = -EINVAL;
		return -EINVAL;
	}
	if (!(p = grow(w, 12 + n + klen + vlen)))
		return w->build_err;
	p[0] = (unsigned char)op;
	p[1] = (unsigned char)n;
	p[2] = p[3] = 0;
	put32(p + 4, klen);
	put32(p + 8, vlen);
	memcpy(p + 12, name, n);
	memcpy(p + 12 + n, key, klen);
	if (vlen)
		memcpy(p + 12 + n + klen, val, vlen);
	w->nops++;
	return 0;
}

int wal_add_create(struct wal *w, uint64_t id, const char *name,
		   uint32_t uid, uint32_t gid, uint32_t mode,
		   uint32_t max_extents, uint32_t sync)
{
	unsigned char *p = grow(w, 28);

	if (!p)
		return -ENOMEM;
	put64(p, id);
	put32(p + 8, uid);
	put32(p + 12, gid);
	put32(p + 16, mode);
	put32(p + 20, max_extents);
	put32(p + 24, sync);
	return add_name(w, name);
}

int wal_add_drop(struct wal *w, const char *name)
{
	return add_name(w, name);
}

/* Start a new segment at w->next_lsn; the old one is synced first, before
 * the new one exists: a crash in between must not leave a torn record in
 * a segment that is no longer the last (recovery takes that for damage). */
static int rotate(struct wal *w)
{
	int fd, err = 0;

	if (w->fd < 0)          /* no segment to close: wal_commit makes one */
		return 0;
	pthread_mutex_lock(&w->sync_lock);
	if (fdatasync(w->fd))
		err = -errno;
	pthread_mutex_unlock(&w->sync_lock);
	if (err) {
		set_failed(w, err);
		return err;
	}
	/* everything up to here is on disk now */
	pthread_mutex_lock(&w->m);
	advance(w, w->next_lsn - 1);
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->m);
	if ((err = seg_create(w, w->next_lsn, &fd)))
		return err;     /* stay on the old segment; try again later */
	pthread_mutex_lock(&w->sync_lock);
	close(w->fd);
	w->fd = fd;
	pthread_mutex_unlock(&w->sync_lock);
	w->seg_first = w->next_lsn;
	w->off = WAL_SEG_HDR;
	return 0;
}

/* The log has no segment (opened on a full disk): make it now, at
 * next_lsn, which follows the last record of the segments before it.
 * Nothing was written since the open, so no earlier record waits for a
 * sync.  seg_create removes a file it could not finish. */
static int start_segment(struct wal *w)
{
	int fd, err;

	if ((err = seg_create(w, w->next_lsn, &fd)))
		return err;
	pthread_mutex_lock(&w->sync_lock);
	w->fd = fd;
	pthread_mutex_unlock(&w->sync_lock);
	w->seg_first = w->next_lsn;
	w->off = WAL_SEG_HDR;
	return 0;
}

int wal_commit(struct wal *w, uint64_t *lsn, const char **err_msg)
{
	uint64_t was_durable;
	size_t len, padded;
	int err;

	if ((err = wal_failed(w))) {
		*err_msg = "the WAL failed earlier (fdatasync error): restart "
			   "tdbd to recover";
		return -EIO;
	}
	if (w->build_err == -EINVAL) {
		*err_msg = "a WAL record with a bad table name or operation "
			   "(nothing was logged)";
		return -EINVAL;
	}
	if (w->build_err == -E2BIG) {
		*err_msg = "the WAL record would be over 1 GiB (a transaction "
			   "too big to log)";
		return -E2BIG;
	}
	if (w->build_err || w->len < WAL_REC_HDR) {
		*err_msg = "out of memory building the WAL record";
		return -ENOMEM;
	}
	if (w->fd < 0 && (err = start_segment(w))) {
		*err_msg = no_space(err) ?
			   "no space left on the WAL's filesystem (no room "
			   "for a new WAL segment): the change was not "
			   "applied" :
			   "cannot start a WAL segment: the change was not "
			   "applied";
		return err;
	}
	if (w->off >= w->o.segment_size && rotate(w) && wal_failed(w)) {
		*err_msg = "the WAL failed (fdatasync error): restart tdbd to "
			   "recover";
		return -EIO;
	}
	len = w->len;
	padded = (len + 7) & ~(size_t)7;
	if (!grow(w, padded - len)) {
		*err_msg = "out of memory building a WAL record";
		return -ENOMEM;
	}
	memset(w->buf + len, 0, padded - len);
	if (w->buf[16] == WAL_OPS)
		put32(w->buf + WAL_REC_HDR, w->nops);
	put32(w->buf + 4, (uint32_t)len);
	put64(w->buf + 8, w->next_lsn);
	put32(w->buf, wal_crc32c(0, w->buf + 4, len - 4));
	err = write_all(w->fd, w->buf, padded, w->off);
	if (err) {
		/* cut a partial record back off; the log stays whole */
		if (ftruncate(w->fd, (off_t)w->off))
			set_failed(w, -errno);
		*err_msg = err == -ENOSPC ?
			   "no space left on the WAL's filesystem: the change "
			   "was not applied" :
			   "cannot write the WAL: the change was not applied";
		return err;
	}
	w->last_lsn = w->next_lsn;
	w->last_off = w->off;
	w->off += padded;
	*lsn = w->next_lsn++;
	__atomic_fetch_add(&w->bytes_since, padded, __ATOMIC_RELAXED);
	was_durable = wal_durable(w);
	__atomic_store_n(&w->written, *lsn, __ATOMIC_SEQ_CST);
	/* the first record after a sync: the flusher may be asleep */
	if (was_durable + 1 == *lsn) {
		pthread_mutex_lock(&w->m);
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->m);
	}
	return 0;
}

int wal_retract(struct wal *w, uint64_t lsn)
{
	if (w->fd < 0 || lsn != w->last_lsn || lsn + 1 != w->next_lsn ||
	    w->last_off < WAL_SEG_HDR)
		return -EINVAL;
	if (ftruncate(w->fd, (off_t)w->last_off)) {
		int err = -errno;

		set_failed(w, err);
		return err;
	}
	w->off = w->last_off;
	w->next_lsn = lsn;
	w->last_lsn = 0;
	__atomic_store_n(&w->written, lsn - 1, __ATOMIC_SEQ_CST);
	/* durable may already say lsn, and a sync running now may be about
	 * to: the next record reuses lsn, which is durable only once it is
	 * synced itself.  Pull durable back and void the running sync. */
	pthread_mutex_lock(&w->m);
	if (wal_durable(w) >= lsn)
		__atomic_store_n(&w->durable, lsn - 1, __ATOMIC_RELEASE);
	w->retracts++;
	pthread_mutex_unlock(&w->m);
	return 0;
}

void wal_kick(struct wal *w)
{
	if (__atomic_load_n(&w->urgent, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&w->m);
	w->urgent = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->m);
}

int wal_sync_to(struct wal *w, uint64_t lsn)
{
	int err;

	pthread_mutex_lock(&w->m);
	w->urgent = true;
	pthread_cond_signal(&w->cv);
	while (wal_durable(w) < lsn && !wal_failed(w))
		pthread_cond_wait(&w->done, &w->m);
	err = wal_failed(w);
	pthread_mutex_unlock(&w->m);
	return err;
}

int wal_remove_before(struct wal *w, uint64_t lsn)
{
	uint64_t *v;
	unsigned int n, i;
	int removed = 0, err;

	__atomic_store_n(&w->bytes_since, 0, __ATOMIC_RELAXED);
	if ((err = seg_list(w->dir, &v, &n)))
		return err;
	/* segment i holds LSNs [v[i], v[i+1]); remove it if all <= lsn,
	 * never the current one */
	for (i = 0; i + 1 < n; i++) {
		char name[64];

		if (v[i + 1] > lsn + 1 || v[i] >= w->seg_first)
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

int wal_ops_count(const struct wal_rec *r, uint32_t *n)
{
	if (r->type != WAL_OPS || r->len < 4)
		return -EUCLEAN;
	*n = get32(r->payload);
	return 0;
}

int wal_next_op(const struct wal_rec *r, uint32_t *pos, struct wal_opv *op)
{
	const unsigned char *p;
	uint32_t at = *pos ? *pos : 4, nl;
	uint64_t need;

	if (at == r->len)
		return 0;
	if (at > r->len || r->len - at < 12)
		return -EUCLEAN;
	p = r->payload + at;
	nl = p[1];
	op->op = p[0];
	op->klen = get32(p + 4);
	op->vlen = get32(p + 8);
	need = 12ull + nl + op->klen + op->vlen;
	if ((op->op != WAL_OP_PUT && op->op != WAL_OP_DEL) || !nl || nl > 64 ||
	    need > r->len - at || (op->op == WAL_OP_DEL && op->vlen))
		return -EUCLEAN;
	memcpy(op->name, p + 12, nl);
	op->name[nl] = 0;
	op->key = p + 12 + nl;
	op->val = p + 12 + nl + op->klen;
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

	if (r->type != WAL_CREATE || r->len < 29)
		return -EUCLEAN;
	c->id = get64(p);
	c->uid = get32(p + 8);
	c->gid = get32(p + 12);
	c->mode = get32(p + 16);
	c->max_extents = get32(p + 20);
	c->sync = get32(p + 24);
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
	if (m[off + 16] < WAL_OPS || m[off + 16] > WAL_DROP)
		return "an unknown record type";
	*lenp = len;
	return NULL;
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

static int seg_map(const char *dir, uint64_t first, struct seg *s)
{
	struct stat st;

	seg_name(s->name, sizeof(s->name), first);
	snprintf(s->path, sizeof(s->path), "%s/%s", dir, s->name);
	s->map = NULL;
	s->fd = open(s->path, O_RDWR | O_CLOEXEC);
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

		if ((e = seg_map(dir, v[i], &s))) {
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
