// SPDX-License-Identifier: GPL-2.0-only
/*
 * kernel.c - tdbd in kernel mode: the supervisor of tdb.ko (kernel.h;
 * tdb/kdev.h "THE SUPERVISOR"; docs/DURABILITY.md, "Kernel-resident
 * tables").
 *
 * Start (no mirror: docs/KERNEL.md, "Without a mirror"): durability's
 * start reads the store's LSN and tables and checks the WAL after it,
 * loading nothing; then /dev/tdb is opened (after a modprobe if it is
 * missing), the role claimed with the WAL's next LSN and the data
 * directory's instance id, and either the tables are restored into
 * tdb.ko (nothing resident: for now the store and the WAL are loaded
 * into tdbd's owner, krestore.c streams them through this file's own
 * rings, TDB_IOC_SUP_READY, and tdbd's copy is dropped) or the log ring
 * is read from the WAL's last LSN on (resident: nothing is loaded).
 * Then the checkpointer starts.
 *
 * Then the follower thread: poll the file, take every whole record out
 * of the log ring (klog.c), check it and append it to the WAL with its
 * own LSN (tdbd_durable_apply: the LSN must be the WAL's next, and the
 * record one the checkpoint can apply), one wal_write per round,
 * TDB_IOC_SUP_READ.  The WAL's flusher
 * reports what became durable (tdbd_kernel_durable ->
 * TDB_IOC_SUP_DURABLE), which lets tdb.ko give ring space back and, with
 * sync always, release the answers it holds.
 *
 * Invariants:
 *  - The WAL holds exactly tdb.ko's records, in LSN order, with no gap:
 *    k->last is the WAL's last LSN D, the kernel numbers from D + 1
 *    (claim's next_lsn at a restore) or has kept every record after D
 *    (it frees ring space only up to what we said is durable, and we
 *    say it only of what the WAL has).  A record out of sequence stops
 *    the follower and tdbd (exit status 1), never a gap in the log.
 *  - k->fd is used by the flusher only under k->lock while k->open.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "durable/ckpt.h"
#include "durable/durable.h"
#include "internal.h"           /* src/owner: struct tdbo_table */
#include "kernel.h"
#include "klog.h"
#include "tdb/kdev.h"
#include "tdb/ring.h"
#include "notify.h"
#include "tdbd.h"
#include "wal.h"

#define ROUND_MAX     4096u     /* records per round, then write */
#define STATS_NS      1000000000ull
#define MODPROBE      "/sbin/modprobe"

struct kernel {
	int fd;                 /* the supervisor's /dev/tdb file */
	void *map;              /* the log ring, read-only */
	size_t map_len;
	struct klog log;
	uint64_t last;          /* LSN of the last record in the WAL */
	uint64_t applied;       /* atomic: records applied since start */
	uint64_t heartbeat;     /* atomic: ns */
	pthread_t thr;
	bool thr_on;
	int stop_fd;            /* eventfd: stop the follower */
	pthread_mutex_t lock;   /* fd for the flusher; st */
	bool open;              /* under lock */
	uint64_t said;          /* under lock: last DURABLE sent */
	struct tdb_sup_stats st;        /* under lock */
	uint64_t st_ns;
	bool failed;            /* the follower stopped on an error */
	int stopping;           /* atomic: the follower is to stop */
};

/* --- the instance id ---------------------------------------------------- */

int tdbd_kernel_instance(const char *data_dir, uint64_t *id, char *err,
			 size_t errlen)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40], buf[32];
	uint64_t v = 0;
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "%s/kernel-instance", data_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (sscanf(buf, "%16" SCNx64, &v) != 1 || !v) {
			snprintf(err, errlen, "%s: not an instance id (16 hex "
				 "digits, not 0)", path);
			return -EINVAL;
		}
		*id = v;
		return 0;
	}
	if (errno != ENOENT) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", path, ERRSTR(e));
		return e;
	}
	while (!v)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
			e = -errno;
			snprintf(err, errlen, "getrandom: %s", ERRSTR(e));
			return e;
		}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		goto fail;
	n = snprintf(buf, sizeof(buf), "%016" PRIx64 "\n", v);
	if (write(fd, buf, (size_t)n) != n || fsync(fd)) {
		close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path))
		goto fail;
	if ((fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	*id = v;
	return 0;
fail:
	e = errno ? -errno : -EIO;
	snprintf(err, errlen, "%s: cannot be written: %s", tmp, ERRSTR(e));
	unlink(tmp);
	return e;
}

/* --- /dev/tdb ----------------------------------------------------------- */

/* modprobe tdb: its exit status (>= 0), or -errno if it did not run. */
static int modprobe(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		execl(MODPROBE, MODPROBE, "tdb", (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int dev_open(void)
{
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC), e, st;

	if (fd >= 0)
		return fd;
	e = -errno;
	if (e != -ENOENT && e != -ENXIO && e != -ENODEV) {
		tdbd_log(L_ERR, "kernel mode: cannot open %s: %s",
			 TDB_DEV_PATH, ERRSTR(e));
		return e;
	}
	st = modprobe();
	fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		tdbd_log(L_INFO, "kernel mode: loaded tdb.ko (modprobe tdb)");
		return fd;
	}
	e = -errno;
	if (st < 0)
		tdbd_log(L_ERR, "kernel mode: %s does not exist (tdb.ko is "
			 "not loaded) and %s could not run: %s",
			 TDB_DEV_PATH, MODPROBE, ERRSTR(st));
	else if (st)
		tdbd_log(L_ERR, "kernel mode: %s does not exist (tdb.ko is "
			 "not loaded) and `modprobe tdb` failed (exit status "
			 "%d; its message is above)", TDB_DEV_PATH, st);
	else
		tdbd_log(L_ERR, "kernel mode: `modprobe tdb` loaded tdb.ko "
			 "but %s cannot be opened: %s", TDB_DEV_PATH,
			 ERRSTR(e));
	return e;
}

static int claim(struct tdbd *d, struct kernel *k, uint64_t instance,
		 struct tdb_sup_claim *c)
{
	int e;

	memset(c, 0, sizeof(*c));
	c->version = TDB_DEV_VERSION;
	c->sync = d->cfg.sync;          /* enum wal_sync == TDB_SUP_SYNC_* */
	c->deadline_ms = d->cfg.client_deadline_ms;
	c->next_lsn = k->last + 1;
	c->instance = instance;
	while (ioctl(k->fd, TDB_IOC_SUP_CLAIM, c) < 0) {
		e = -errno;
		switch (e) {
		case -EINTR:
			continue;
		case -ENOTTY:
		case -EINVAL:
			tdbd_log(L_ERR, "kernel mode: tdb.ko has no supervisor "
				 "role (TDB_IOC_SUP_CLAIM: %s): a tdb.ko "
				 "older than this tdbd", ERRSTR(e));
			break;
		case -EPERM:
			tdbd_log(L_ERR, "kernel mode: claiming the supervisor "
				 "role needs CAP_SYS_ADMIN (run tdbd as "
				 "root or give it the capability)");
			break;
		case -EBUSY:
			tdbd_log(L_ERR, "kernel mode: supervisor already "
				 "attached: pid %u", c->holder_pid);
			break;
		case -ESTALE:
			tdbd_log(L_ERR, "kernel mode: tdb.ko's tables belong to "
				 "another data directory (instance %016llx; "
				 "%s/kernel-instance is %016llx): start tdbd "
				 "with that data directory, or unload tdb.ko",
				 (unsigned long long)c->kernel_instance,
				 d->cfg.data_dir,
				 (unsigned long long)instance);
			break;
		case -ENOSPC:
			tdbd_log(L_ERR, "kernel mode: tdb.ko's change log ring "
				 "(log_ring_mb) does not fit in its "
				 "max_memory_mb (the kernel log has the "
				 "figures): load tdb.ko with a larger "
				 "max_memory_mb or a smaller log_ring_mb");
			break;
		case -EEXIST:
			tdbd_log(L_ERR, "kernel mode: tdb.ko holds tables made "
				 "while no supervisor was attached (they are "
				 "in no log, so tdbd cannot make them "
				 "durable): unload tdb.ko (rmmod tdb) and "
				 "start tdbd again");
			break;
		default:
			tdbd_log(L_ERR, "kernel mode: TDB_IOC_SUP_CLAIM: %s",
				 ERRSTR(e));
		}
		return e;
	}
	return 0;
}

/* --- restore: the tables into tdb.ko ----------------------------------- */

/*
 * Interim (issue 29): the store and the WAL after it are loaded into
 * tdbd's owner (tdbd_durable_mirror_load), krestore.c streams them into
 * tdb.ko, and they are dropped from tdbd (tdbd_durable_mirror_drop) as
 * soon as that is over, whether it worked or not: nothing stays in
 * tdbd's memory while it follows the log.
 */
static int restore(struct tdbd *d, struct kernel *k)
{
	uint64_t t0 = tdbd_now_ns(), records = 0, ms, ver;
	unsigned int ntab = 0;
	char err[512] = "";
	int e;

	bool store = tdbd_durable_store_current(d);

	if (store) {
		e = tdbd_kernel_restore_store(d, k->fd, &ntab, &records, err,
					      sizeof(err));
	} else {
		/* TDBD_KERNEL_RESTORE_FROM=mirror: a copy in tdbd, for
		 * measuring; dropped whatever happens */
		if ((e = tdbd_durable_mirror_load(d))) {
			tdbd_durable_mirror_drop(d);
			return e;
		}
		e = tdbd_kernel_restore(d, k->fd, &ntab, &records, err,
					sizeof(err));
		tdbd_durable_mirror_drop(d);
	}
	if (e) {
		tdbd_log(L_ERR, "kernel mode: restoring the tables into "
			 "tdb.ko%s: %s", store ? " from the checkpoint store" :
			 "", err);
		return e;
	}
	/* Before any client writes: tdb.ko gives no version the WAL and
	 * the checkpoint know of (a deleted key's included), so a version
	 * never repeats for a key across the reload.  The store's
	 * "version" is past every version and LSN the WAL applied to it
	 * had (ckapply.h); the mirror's counter, while there is one,
	 * is the same or less. */
	ver = tdbo_version_last(d->o);
	if (store) {
		uint64_t sv = 0;

		if ((e = tdbd_ckpt_read_version(d->ckpt, &sv, err,
						sizeof(err)))) {
			tdbd_log(L_ERR, "kernel mode: the checkpoint store's "
				 "version: %s", err);
			return e;
		}
		if (sv > ver)
			ver = sv;
	}
	if (ioctl(k->fd, TDB_IOC_SUP_VERSION, &ver) < 0) {
		e = -errno;
		tdbd_log(L_ERR, "kernel mode: TDB_IOC_SUP_VERSION: %s%s",
			 ERRSTR(e), e == -ENOTTY ? " (a tdb.ko from before "
			 "versions: load the one of this tdbd)" : "");
		return e;
	}
	if (ioctl(k->fd, TDB_IOC_SUP_READY, 0) < 0) {
		e = -errno;
		tdbd_log(L_ERR, "kernel mode: TDB_IOC_SUP_READY: %s",
			 ERRSTR(e));
		return e;
	}
	ms = (tdbd_now_ns() - t0) / 1000000;
	tdbd_log(L_INFO, "kernel mode: restored %u table(s), %llu "
		 "record(s) into tdb.ko from the %s in %llu ms (%llu "
		 "records/s)", ntab, (unsigned long long)records,
		 store ? "checkpoint store" : "mirror", (unsigned long long)ms,
		 (unsigned long long)(records * 1000 / (ms ? ms : 1)));
	return 0;
}

/* --- following the log --------------------------------------------------- */

/* One record: skipped if the WAL has it, else checked and logged. */
static int follow_one(struct tdbd *d, struct kernel *k, const void *rec,
		      size_t len, const struct wal_rec *r)
{
	char err[512];
	int e;

	if (r->lsn <= k->last)
		return 0;
	if ((e = tdbd_durable_apply(d, rec, len, r, err, sizeof(err)))) {
		tdbd_log(L_ERR, "kernel mode: tdb.ko's record LSN %llu: %s; "
			 "tdbd stops (nothing after LSN %llu is in its WAL)",
			 (unsigned long long)r->lsn, err,
			 (unsigned long long)k->last);
		return e;
	}
	k->last = r->lsn;
	__atomic_fetch_add(&k->applied, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Records up to ROUND_MAX, then the WAL write: the count, or < 0. */
static int follow_round(struct tdbd *d, struct kernel *k)
{
	const void *rec;
	struct wal_rec r;
	size_t len;
	char err[512];
	int n = 0, e;

	while (n < (int)ROUND_MAX &&
	       (e = klog_next(&k->log, &rec, &len, &r, err,
			      sizeof(err))) == 1) {
		if ((e = follow_one(d, k, rec, len, &r)))
			return e;
		n++;
	}
	if (e < 0) {
		tdbd_log(L_ERR, "kernel mode: tdb.ko's log ring: %s; tdbd "
			 "stops", err);
		return e;
	}
	if (n) {
		tdbd_log_write(d);
		if (d->cfg.sync == WAL_SYNC_ALWAYS)
			wal_kick(d->wal);
		else if (d->cfg.sync == WAL_SYNC_NONE)
			tdbd_kernel_durable(d, wal_written(d->wal));
	}
	return n;
}

static void stats_poll(struct kernel *k)
{
	struct tdb_sup_stats st;
	uint64_t now = tdbd_now_ns();

	if (now - k->st_ns < STATS_NS)
		return;
	k->st_ns = now;
	if (ioctl(k->fd, TDB_IOC_SUP_STATS, &st) < 0)
		return;
	pthread_mutex_lock(&k->lock);
	k->st = st;
	pthread_mutex_unlock(&k->lock);
}

static void *follower(void *arg)
{
	struct tdbd *d = arg;
	struct kernel *k = d->kern;
	struct pollfd p[2] = { { .fd = k->fd, .events = POLLIN },
			       { .fd = k->stop_fd, .events = POLLIN } };
	int n;

	while (!__atomic_load_n(&k->stopping, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&k->heartbeat, tdbd_now_ns(),
				 __ATOMIC_RELAXED);
		n = follow_round(d, k);
		if (n < 0) {
			k->failed = true;
			kill(getpid(), SIGTERM);
			return NULL;
		}
		if (ioctl(k->fd, TDB_IOC_SUP_READ, &k->log.pos) < 0 &&
		    errno != EINTR)
			tdbd_log_rl(RL_WAL, L_WARNING, "kernel mode: "
				    "TDB_IOC_SUP_READ: %s", ERRSTR(errno));
		stats_poll(k);
		if (n)
			continue;       /* more may be there */
		if (poll(p, 2, 250) > 0 && (p[1].revents & POLLIN))
			return NULL;
	}
	return NULL;
}

/* --- start and stop ----------------------------------------------------- */

static int map_log(struct kernel *k, const struct tdb_sup_claim *c)
{
	const struct tdb_ring_hdr *h;
	char err[256];
	int e;

	k->map = mmap(NULL, c->log_size, PROT_READ, MAP_SHARED, k->fd,
		      (off_t)c->log_offset);
	if (k->map == MAP_FAILED) {
		k->map = NULL;
		e = -errno;
		tdbd_log(L_ERR, "kernel mode: cannot map tdb.ko's log ring "
			 "(%llu bytes at %#llx): %s",
			 (unsigned long long)c->log_size,
			 (unsigned long long)c->log_offset, ERRSTR(e));
		return e;
	}
	k->map_len = c->log_size;
	h = k->map;
	/* the oldest record still in the ring starts at cons */
	e = klog_attach(&k->log, k->map, k->map_len,
			__atomic_load_n(&h->cons, __ATOMIC_ACQUIRE), err,
			sizeof(err));
	if (e)
		tdbd_log(L_ERR, "kernel mode: %s", err);
	return e;
}

/* Resident tables: does the ring still hold every record after ours? */
static int check_resume(struct tdbd *d, struct kernel *k,
			const struct tdb_sup_claim *c)
{
	(void)d;
	if (c->log_next < k->last + 1) {
		tdbd_log(L_ERR, "kernel mode: tdb.ko's log ends at LSN %llu "
			 "but the WAL has records up to %llu: this data "
			 "directory is ahead of tdb.ko's tables (another "
			 "history); refusing to start",
			 (unsigned long long)c->log_next - 1,
			 (unsigned long long)k->last);
		return -ESTALE;
	}
	if (c->log_first > k->last + 1 && c->log_next > k->last + 1) {
		tdbd_log(L_ERR, "kernel mode: tdb.ko's log ring starts at "
			 "LSN %llu but the WAL ends at %llu: records %llu.."
			 "%llu are in neither (was the data directory "
			 "replaced?); refusing to start",
			 (unsigned long long)c->log_first,
			 (unsigned long long)k->last,
			 (unsigned long long)k->last + 1,
			 (unsigned long long)c->log_first - 1);
		return -ESTALE;
	}
	tdbd_log(L_INFO, "kernel mode: %u table(s) resident in tdb.ko; "
		 "following its log from LSN %llu (the ring holds %llu..%llu)",
		 c->tables, (unsigned long long)k->last + 1,
		 (unsigned long long)c->log_first,
		 (unsigned long long)c->log_next - 1);
	return 0;
}

/* Give up the role (close) and what goes with it.  The struct stays
 * until tdbd_kernel_free: the WAL's flusher may still look at it. */
/*
 * Resuming: the records up to the WAL's last LSN are in it, but the
 * tdbd before us may have died between its write (or fdatasync) and its
 * TDB_IOC_SUP_DURABLE, and tdb.ko then holds their answers (sync
 * always) and their ring space until someone says so.  We do, after a
 * syncfs of the data directory's file system makes sure they are on
 * disk (the old segments were written, maybe not synced).
 */
static void resume_durable(struct tdbd *d, struct kernel *k)
{
	int fd = open(d->cfg.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || syncfs(fd)) {
		tdbd_log(L_WARNING, "kernel mode: syncfs of %s: %s; records "
			 "up to LSN %llu are said durable when the WAL syncs "
			 "next", d->cfg.data_dir, ERRSTR(errno),
			 (unsigned long long)k->last);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	tdbd_kernel_durable(d, k->last);
}

static void kernel_close(struct kernel *k)
{
	pthread_mutex_lock(&k->lock);
	k->open = false;
	pthread_mutex_unlock(&k->lock);
	klog_free(&k->log);
	if (k->map)
		munmap(k->map, k->map_len);
	k->map = NULL;
	if (k->fd >= 0)
		close(k->fd);
	if (k->stop_fd >= 0)
		close(k->stop_fd);
	k->fd = k->stop_fd = -1;
}

void tdbd_kernel_free(struct tdbd *d)
{
	struct kernel *k = d->kern;

	if (!k)
		return;
	d->kern = NULL;
	kernel_close(k);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

int tdbd_kernel_start(struct tdbd *d)
{
	struct kernel *k = calloc(1, sizeof(*k));
	struct tdb_sup_claim c;
	uint64_t instance;
	char err[PATH_MAX + 128];
	int e;

	if (!k)
		return -ENOMEM;
	k->fd = k->stop_fd = -1;
	pthread_mutex_init(&k->lock, NULL);
	k->last = wal_appended(d->wal);
	if ((e = tdbd_kernel_instance(d->cfg.data_dir, &instance, err,
				      sizeof(err)))) {
		tdbd_log(L_ERR, "kernel mode: the instance id: %s", err);
		goto fail;
	}
	if ((k->fd = e = dev_open()) < 0)
		goto fail;
	if ((e = claim(d, k, instance, &c)) || (e = map_log(k, &c)))
		goto fail;
	pthread_mutex_lock(&k->lock);
	k->open = true;
	pthread_mutex_unlock(&k->lock);
	d->kern = k;
	if (!c.kernel_instance) {
		tdbd_log(L_INFO, "kernel mode: tdb.ko has no tables yet: "
			 "restoring them (its log starts at LSN %llu)",
			 (unsigned long long)k->last + 1);
		e = restore(d, k);
	} else if (!(e = check_resume(d, k, &c))) {
		resume_durable(d, k);
	}
	if (!e)
		e = tdbd_durable_kernel_ready(d);
	if (e)
		goto fail_kern;
	k->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->stop_fd < 0) {
		e = -errno;
		goto fail_kern;
	}
	__atomic_store_n(&k->heartbeat, tdbd_now_ns(), __ATOMIC_RELAXED);
	if ((e = -pthread_create(&k->thr, NULL, follower, d))) {
		tdbd_log(L_ERR, "kernel mode: follower thread: %s",
			 ERRSTR(e));
		goto fail_kern;
	}
	k->thr_on = true;
	return 0;
fail_kern:
	kernel_close(k);        /* d->kern: freed by tdbd_kernel_free */
	return e;
fail:
	kernel_close(k);
	pthread_mutex_destroy(&k->lock);
	free(k);
	return e;
}

void tdbd_kernel_stop(struct tdbd *d)
{
	struct kernel *k = d->kern;
	uint64_t one = 1, lsn;

	if (!k || k->fd < 0)
		return;
	if (k->thr_on) {
		__atomic_store_n(&k->stopping, 1, __ATOMIC_RELEASE);
		if (write(k->stop_fd, &one, sizeof(one)) < 0)
			(void)0;
		pthread_join(k->thr, NULL);
		k->thr_on = false;
	}
	/* what was read is in the WAL: make it durable and say so, so the
	 * next supervisor's ring starts after it */
	if (d->wal) {
		tdbd_log_write(d);
		lsn = wal_written(d->wal);
		if (!wal_sync_to(d->wal, lsn))
			tdbd_kernel_durable(d, lsn);
	}
	d->kern_failed = k->failed;
	kernel_close(k);        /* close(): the role ends */
}

void tdbd_kernel_durable(struct tdbd *d, uint64_t lsn)
{
	struct kernel *k = d->kern;

	if (!k || !lsn)
		return;
	pthread_mutex_lock(&k->lock);
	if (k->open && lsn > k->said &&
	    !ioctl(k->fd, TDB_IOC_SUP_DURABLE, &lsn))
		k->said = lsn;
	pthread_mutex_unlock(&k->lock);
}

uint64_t tdbd_kernel_heartbeat(struct tdbd *d)
{
	struct kernel *k = d->kern;

	return k ? __atomic_load_n(&k->heartbeat, __ATOMIC_RELAXED) :
		   tdbd_now_ns();
}

void tdbd_kernel_status(struct tdbd *d, char *buf, size_t len)
{
	struct kernel *k = d->kern;
	struct tdb_sup_stats st;
	uint64_t said;

	if (!k) {
		snprintf(buf, len, "kernel mode: not supervising");
		return;
	}
	pthread_mutex_lock(&k->lock);
	st = k->st;
	said = k->said;
	pthread_mutex_unlock(&k->lock);
	snprintf(buf, len, "supervising tdb.ko: %u table(s), %llu record(s) "
		 "followed, durable to LSN %llu; tdb.ko cleaned up %llu dead "
		 "client(s) (%llu txn(s) aborted, %llu watch(es) dropped), "
		 "%llu answer(s) held, %llu change(s) refused (log full)",
		 tdbd_durable_table_count(d),
		 (unsigned long long)__atomic_load_n(&k->applied,
						     __ATOMIC_RELAXED),
		 (unsigned long long)said,
		 (unsigned long long)st.cleanups,
		 (unsigned long long)st.txns_aborted,
		 (unsigned long long)st.watches_dropped,
		 (unsigned long long)st.held,
		 (unsigned long long)st.log_refused);
}
