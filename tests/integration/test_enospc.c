// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_enospc.c - tdbd on a full disk.
 *
 * As root, in a mount namespace of its own (so the mount goes away with
 * the test whatever happens; it is also unmounted at the end), the test
 * mounts an 8 MiB tmpfs and runs tdbd with --data-dir on it
 * (--wal-segment-size 1M and --checkpoint-wal-size 1M, so checkpoints
 * let WAL segments go and the disk holds the checkpoint plus a little
 * WAL).  A filler file of 2 MiB is made on the tmpfs first.  Then:
 *
 *  fill     put 64 KiB values until a put fails: it must fail with
 *           -ENOSPC and a message saying there is no space; tdbd stays
 *           up and every acknowledged key reads back right;
 *  ckpt     a checkpoint that fails for lack of space is logged
 *           ("checkpoint ... failed ... the WAL is kept") and counted
 *           (ckpt_failures), and loses nothing: a put on the full disk
 *           fails again, reads still work;
 *  start on a full disk
 *           SIGKILL, the last bytes of the tmpfs filled too (not even a
 *           WAL segment header fits), start: tdbd must start (it says
 *           it runs without a WAL segment), serve every acknowledged
 *           key, refuse a put (new key or overwrite) with -ENOSPC and a
 *           message naming the lack of space, fail its checkpoint after
 *           recovery softly, and leave no partial segment behind; then a
 *           clean stop (SIGTERM, exit 0) and a start on the still full
 *           disk: the same again;
 *  room     the last bytes and the small filler are deleted: puts
 *           succeed without a restart (tdbd makes its segment then and
 *           says so), and a restart after SIGKILL replays them all;
 *  free     the big filler is deleted: puts succeed, and checkpoints
 *           too;
 *  restart  SIGKILL, start on the same directory: every acknowledged
 *           key holds its value; SIGTERM must exit 0, and a last
 *           restart (from the checkpoint alone) holds them all too.
 *
 * Every WAL segment left is whole at each step (a header, no partial
 * one), and no start finds a torn tail or an unfinished segment.  The
 * log may hold only the error lines of failed checkpoints.  Skips (77)
 * if not root or the tmpfs cannot be mounted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define VAL       (64u << 10)
#define MAXKEYS   1024
#define FILLER    (5u << 20)      /* room for a checkpoint */
#define SMALL_FILLER (256u << 10) /* room for a restart */
#define TABLE     "fill"

static char mnt[H_PATH];
static bool mounted;

/* --- values --------------------------------------------------------------- */

static int key_name(char *buf, size_t size, unsigned int i)
{
	return snprintf(buf, size, "f%04u", i);
}

/* The value of key i at version v: VAL bytes that follow from (i, v). */
static void make_val(unsigned char *buf, unsigned int i, unsigned int v)
{
	uint64_t s = ((uint64_t)i << 32 | v) * 0x9e3779b97f4a7c15ull | 1;
	size_t j;

	for (j = 0; j + 8 <= VAL; j += 8) {
		uint64_t x = h_rand(&s);

		memcpy(buf + j, &x, 8);
	}
	snprintf((char *)buf, 32, "key %u version %u", i, v);
}

/* What the test knows: versions[i] of key i acknowledged (0: never). */
struct state {
	unsigned int versions[MAXKEYS];
	unsigned int nkeys;     /* keys 0..nkeys-1 were tried */
	unsigned int acked;
};

static void usage(const char *when);

static void check_all(struct tdbc_table *t, const struct state *s,
		      const char *when)
{
	static unsigned char want[VAL], got[VAL + 1];
	unsigned int i, n = 0;
	char key[16];

	for (i = 0; i < s->nkeys; i++) {
		int kl = key_name(key, sizeof(key), i);
		long len = tdbc_get(t, NULL, key, (size_t)kl, got, sizeof(got),
				    NULL);

		if (!s->versions[i]) {
			/* never acknowledged: a put that failed must not
			 * have left anything */
			CHECK(len == -ENOENT, "%s: key %s, whose put failed, "
			      "reads %ld (%s)", when, key, len,
			      h_errname(len < 0 ? (int)len : 0));
			continue;
		}
		CHECK(len == VAL, "%s: key %s: get: %ld (%s)", when, key, len,
		      len < 0 ? h_errname((int)len) : "wrong length");
		make_val(want, i, s->versions[i]);
		CHECK(!memcmp(got, want, VAL), "%s: key %s does not hold "
		      "version %u: %.30s", when, key, s->versions[i],
		      (char *)got);
		n++;
	}
	h_note("%s: all %u acknowledged keys read back right", when, n);
	usage(when);
}

/* Put key i at version v: 0 (recorded), or the put's error. */
static int put_key(struct tdbc_table *t, struct state *s, unsigned int i,
		   unsigned int v)
{
	static unsigned char val[VAL];
	char key[16];
	int kl = key_name(key, sizeof(key), i), err;

	make_val(val, i, v);
	err = tdbc_put(t, NULL, key, (size_t)kl, val, VAL, 0);
	if (!err) {
		s->versions[i] = v;
		s->acked++;
	}
	if (i >= s->nkeys)
		s->nkeys = i + 1;
	return err;
}

/* --- the mount ------------------------------------------------------------ */

static void __attribute__((noreturn)) skip(const char *why)
{
	printf("tdbd-enospc: SKIP: %s\n", why);
	if (mounted)
		umount2(mnt, MNT_DETACH);
	if (mnt[0])
		rmdir(mnt);
	rmdir(h_dir());
	exit(77);
}

static void mount_tmpfs(void)
{
	char err[300];

	if (geteuid() != 0)
		skip("not root (needs to mount a tmpfs)");
	/* our own mount namespace: the tmpfs dies with the test's
	 * processes even if it fails half-way */
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		snprintf(err, sizeof(err), "no mount namespace of our own: %s",
			 strerror(errno));
		skip(err);
	}
	h_path(mnt, sizeof(mnt), "mnt");
	CHECK(mkdir(mnt, 0755) == 0, "mkdir %s: %s", mnt, strerror(errno));
	if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=8m,mode=0755")) {
		snprintf(err, sizeof(err), "mount -t tmpfs -o size=8m tmpfs "
			 "%s: %s", mnt, strerror(errno));
		skip(err);
	}
	mounted = true;
}

static void umount_tmpfs(void)
{
	CHECK(umount2(mnt, 0) == 0, "umount %s: %s", mnt, strerror(errno));
	mounted = false;
}

/* Append to path until the filesystem is full: not a byte more fits. */
static void fill_up(const char *path)
{
	static char buf[4096];
	size_t chunk = sizeof(buf);
	struct statvfs sv;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	memset(buf, 'y', sizeof(buf));
	while (chunk) {
		ssize_t n = write(fd, buf, chunk);

		if (n > 0)
			continue;
		CHECK(n < 0 && errno == ENOSPC, "filling %s: %s", path,
		      strerror(errno));
		chunk /= 2;
	}
	close(fd);
	CHECK(statvfs(mnt, &sv) == 0, "statvfs: %s", strerror(errno));
	CHECK(sv.f_bavail == 0, "%s: %llu blocks still free after filling",
	      mnt, (unsigned long long)sv.f_bavail);
}

static void make_filler(const char *path, size_t size)
{
	static char buf[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t done;

	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	memset(buf, 'x', sizeof(buf));
	for (done = 0; done < size; done += sizeof(buf))
		CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf),
		      "writing %s: %s", path, strerror(errno));
	close(fd);
}

/* Bytes in the files of dir (not below). */
static unsigned long long dir_bytes(const char *dir)
{
	unsigned long long sum = 0;
	char path[H_PATH + 300];
	struct dirent *de;
	struct stat st;
	DIR *dp = opendir(dir);

	if (!dp)
		return 0;
	while ((de = readdir(dp))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!stat(path, &st) && S_ISREG(st.st_mode))
			sum += (unsigned long long)st.st_blocks * 512;
	}
	closedir(dp);
	return sum;
}

/* Where the tmpfs's space went. */
static void usage(const char *when)
{
	char path[H_PATH + 32];
	unsigned long long wal, ck;
	struct statvfs sv;

	snprintf(path, sizeof(path), "%s/data/wal", mnt);
	wal = dir_bytes(path);
	snprintf(path, sizeof(path), "%s/data/checkpoint", mnt);
	ck = dir_bytes(path);
	CHECK(statvfs(mnt, &sv) == 0, "statvfs: %s", strerror(errno));
	h_note("%s: WAL %llu KiB, checkpoint %llu KiB, free %llu KiB", when,
	       wal >> 10, ck >> 10,
	       (unsigned long long)sv.f_bavail * sv.f_frsize >> 10);
}

/* Every WAL segment is whole: a header at least (no partial one a later
 * replay would remove or call damage), and nothing set aside. */
static void check_segments(const char *when)
{
	char dir[H_PATH + 32], path[H_PATH + 300], magic[8];
	unsigned int n = 0;
	struct dirent *de;
	struct stat st;
	DIR *dp;
	int fd;

	snprintf(dir, sizeof(dir), "%s/data/wal", mnt);
	dp = opendir(dir);
	CHECK(dp, "%s: %s", dir, strerror(errno));
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		CHECK(strlen(de->d_name) == 24 &&
		      !strncmp(de->d_name, "wal-", 4) &&
		      !strcmp(de->d_name + 20, ".log"),
		      "%s: %s in the WAL directory", when, de->d_name);
		CHECK(stat(path, &st) == 0, "%s: %s", path, strerror(errno));
		CHECK(st.st_size >= 32, "%s: segment %s has %lld bytes, not "
		      "even a header", when, de->d_name,
		      (long long)st.st_size);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0 && read(fd, magic, 8) == 8 &&
		      !memcmp(magic, "TDBWAL01", 8),
		      "%s: segment %s has no header", when, de->d_name);
		close(fd);
		n++;
	}
	closedir(dp);
	CHECK(n > 0, "%s: no WAL segment at all", when);
}

/* --- tdbd ----------------------------------------------------------------- */

static const char *const opts[] = {
	"--sync", "always",
	"--wal-segment-size", "1M",
	"--checkpoint-wal-size", "1M",
	"--checkpoint-interval", "1s",
	"--log-level", "info",
	NULL };

static void start(struct h_daemon *d)
{
	const char *argv[32];
	unsigned int n, i;

	h_base_args(d, "tdbd", argv);
	/* argv[5] is d->data */
	CHECK(strlen(mnt) + 6 <= sizeof(d->data), "path too long");
	memcpy(d->data, mnt, strlen(mnt));
	memcpy(d->data + strlen(mnt), "/data", 6);
	for (n = 0; argv[n]; n++)
		;
	for (i = 0; opts[i]; i++)
		argv[n++] = opts[i];
	argv[n] = NULL;
	h_spawn(d, d->log, argv, NULL);
	h_wait_socket(d, 20000);
}

static void stop(struct h_daemon *d)
{
	unsigned int budget = h_sanitized() ? 60000 : 20000;

	CHECK(kill(d->pid, SIGTERM) == 0, "kill: %s", strerror(errno));
	CHECK(h_wait_exit(d, budget), "tdbd did not exit after SIGTERM");
	CHECK(WIFEXITED(d->status) && WEXITSTATUS(d->status) == 0,
	      "tdbd did not exit 0 after SIGTERM (status %#x)", d->status);
}

/* The log holds no error but failed checkpoints'; returns how many. */
static unsigned int check_log(const struct h_daemon *d)
{
	static const char *const bad[] = { "tdbd: error:", "tdbd: crit:",
		"tdbd: alert:", "tdbd: emerg:", "ERROR", "Sanitizer",
		"runtime error", NULL };
	char *log = h_read_file(d->log), *line, *save = NULL;
	unsigned int failed = 0, i;
	bool found = false;

	for (line = strtok_r(log, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "tdbd: error: checkpoint (") &&
		    strstr(line, ") failed: ") &&
		    strstr(line, "the WAL is kept")) {
			failed++;
			continue;
		}
		for (i = 0; bad[i]; i++)
			if (strstr(line, bad[i])) {
				h_note("bad line in the log: %s", line);
				found = true;
			}
	}
	free(log);
	CHECK(!found, "tdbd's log %s has unexpected error lines (above)",
	      d->log);
	return failed;
}

static bool ckpt_failed(const struct tdbc_stats *st, const void *arg)
{
	return st->ckpt_failures > *(const uint64_t *)arg;
}

static bool ckpt_done(const struct tdbc_stats *st, const void *arg)
{
	return st->checkpoints > *(const uint64_t *)arg;
}

/* --- the test ------------------------------------------------------------- */

/* Connect and open the table. */
static struct tdbc *open_table(const struct h_daemon *d, unsigned int flags,
			       struct tdbc_table **t)
{
	struct tdbc *c = h_connect(d, flags);
	int err = tdbc_table_open(c, TABLE, t);

	CHECK(err == 0, "open %s: %s", TABLE, h_errname(err));
	return c;
}

static void crash(struct h_daemon *d, struct tdbc *c, struct tdbc_table *t)
{
	tdbc_table_close(t);
	tdbc_close(c);
	CHECK(kill(d->pid, SIGKILL) == 0, "kill: %s", strerror(errno));
	CHECK(h_wait_exit(d, 10000) && WIFSIGNALED(d->status),
	      "tdbd did not die of SIGKILL (status %#x)", d->status);
}

int main(void)
{
	static struct state s;
	struct tdbc_stats st, base;
	struct tdbc_table *t = NULL;
	struct h_daemon d;
	struct tdbc *c;
	char big[H_PATH + 16], small[H_PATH + 16], top[H_PATH + 16];
	unsigned int i, nfail, after, full_acked;
	uint64_t n0, t0;
	int err;

	h_init("tdbd-enospc", h_sanitized() ? 400 : 110);
	t0 = h_now_ms();
	mount_tmpfs();
	/* two fillers: the small one makes room for a restart, the big one
	 * for a checkpoint */
	snprintf(big, sizeof(big), "%s/filler-big", mnt);
	snprintf(small, sizeof(small), "%s/filler-small", mnt);
	snprintf(top, sizeof(top), "%s/filler-top", mnt);
	make_filler(big, FILLER);
	make_filler(small, SMALL_FILLER);

	start(&d);
	c = h_connect(&d, 0);
	err = tdbc_table_create(c, TABLE, NULL);
	CHECK(err == 0, "create %s: %s", TABLE, h_errname(err));
	CHECK(tdbc_table_open(c, TABLE, &t) == 0, "open %s", TABLE);

	/* fill: 64 KiB puts until one fails */
	for (i = 0; i < MAXKEYS; i++)
		if ((err = put_key(t, &s, i, 1)))
			break;
	CHECK(i < MAXKEYS, "%u puts of 64 KiB fit on an 8 MiB tmpfs", i);
	CHECK_EQ(err, -ENOSPC, "a put on the full disk");
	CHECK(strcasestr(tdbc_errmsg(c), "no space"), "the message of the "
	      "failed put says nothing of space: \"%s\"", tdbc_errmsg(c));
	h_note("fill: %u puts of 64 KiB acknowledged, then %s: \"%s\"",
	       s.acked, h_errname(err), tdbc_errmsg(c));
	CHECK(s.acked >= 20, "only %u puts fit", s.acked);
	full_acked = s.acked;
	check_all(t, &s, "full");

	/* a checkpoint fails for lack of space; tdbd goes on */
	h_stats(c, &base);
	n0 = 0;
	if (!base.ckpt_failures)
		CHECK(h_wait_stats(c, &st, ckpt_failed, &n0, 10000),
		      "no checkpoint failed on the full disk (failures %llu, "
		      "checkpoints %llu)",
		      (unsigned long long)st.ckpt_failures,
		      (unsigned long long)st.checkpoints);
	h_stats(c, &st);
	h_note("full: %llu checkpoint(s) failed, %llu done",
	       (unsigned long long)st.ckpt_failures,
	       (unsigned long long)st.checkpoints);
	CHECK(h_log_has(&d, "the WAL is kept"), "no \"checkpoint ... "
	      "failed ... the WAL is kept\" in the log");
	err = put_key(t, &s, s.nkeys, 1);
	CHECK_EQ(err, -ENOSPC, "a put while still full");
	check_all(t, &s, "full, after a failed checkpoint");

	check_segments("full");

	/* a crash now, and the last bytes filled too: tdbd must start on
	 * the full disk (no room for a new WAL segment) and serve what the
	 * WAL the failed checkpoint left has */
	crash(&d, c, t);
	fill_up(top);
	for (i = 0; i < 2; i++) {
		const char *when = i ? "started on the full disk after "
				       "SIGTERM" :
				       "started on the full disk after "
				       "SIGKILL";
		unsigned int warned = h_log_count(&d, "running without one");

		start(&d);
		c = open_table(&d, TDBC_NO_RINGS, &t);
		check_all(t, &s, when);
		CHECK(h_log_count(&d, "running without one") == warned + 1,
		      "%s: no warning in the log that the WAL has no "
		      "segment", when);
		err = put_key(t, &s, s.nkeys, 1);
		CHECK_EQ(err, -ENOSPC, "a put of a new key on the full disk");
		CHECK(strcasestr(tdbc_errmsg(c), "no space"), "the message "
		      "of the failed put says nothing of space: \"%s\"",
		      tdbc_errmsg(c));
		h_note("%s: a put: %s: \"%s\"", when, h_errname(err),
		       tdbc_errmsg(c));
		err = put_key(t, &s, 0, 3);
		CHECK_EQ(err, -ENOSPC, "an overwrite on the full disk");
		/* the checkpoint after recovery fails, softly */
		h_stats(c, &base);
		n0 = 0;
		if (!base.ckpt_failures)
			CHECK(h_wait_stats(c, &st, ckpt_failed, &n0, 10000),
			      "%s: the checkpoint after recovery did not fail "
			      "(failures %llu, checkpoints %llu)", when,
			      (unsigned long long)st.ckpt_failures,
			      (unsigned long long)st.checkpoints);
		err = put_key(t, &s, s.nkeys, 1);
		CHECK_EQ(err, -ENOSPC, "a put after the failed checkpoint");
		check_all(t, &s, when);
		check_segments(when);
		tdbc_table_close(t);
		tdbc_close(c);
		/* a clean stop on the full disk (its last checkpoint fails) */
		stop(&d);
		check_segments("stopped on the full disk");
		fill_up(top);   /* whatever the stop gave back */
	}

	/* a little room: puts work again without a restart */
	start(&d);
	c = open_table(&d, TDBC_NO_RINGS, &t);
	check_all(t, &s, "started on the full disk a third time");
	err = put_key(t, &s, s.nkeys, 1);
	CHECK_EQ(err, -ENOSPC, "a put on the full disk, third start");
	/* the checkpoint after recovery fails first: one that ran after
	 * the unlinks would take the little room for its data (a failed
	 * LMDB commit keeps the blocks it wrote) before the puts below */
	h_stats(c, &base);
	n0 = 0;
	if (!base.ckpt_failures)
		CHECK(h_wait_stats(c, &st, ckpt_failed, &n0, 10000),
		      "third start: the checkpoint after recovery did not "
		      "fail (failures %llu, checkpoints %llu)",
		      (unsigned long long)st.ckpt_failures,
		      (unsigned long long)st.checkpoints);
	CHECK(unlink(top) == 0, "unlink %s: %s", top, strerror(errno));
	CHECK(unlink(small) == 0, "unlink %s: %s", small, strerror(errno));
	err = put_key(t, &s, 0, 3);
	CHECK(err == 0, "an overwrite after room came back (no restart): "
	      "%s (%s)", h_errname(err), tdbc_errmsg(c));
	err = put_key(t, &s, s.nkeys, 1);
	CHECK(err == 0, "a new key after room came back (no restart): %s "
	      "(%s)", h_errname(err), tdbc_errmsg(c));
	CHECK(h_log_has(&d, "there is room again"), "no line in the log "
	      "that the WAL has its segment again");
	check_all(t, &s, "room back, no restart");
	check_segments("room back");
	/* and a restart replays everything: old segments and the new one */
	crash(&d, c, t);
	start(&d);
	c = open_table(&d, TDBC_NO_RINGS, &t);
	check_all(t, &s, "restarted after room came back");
	check_segments("restarted after room came back");

	/* free: delete the big filler, puts work again by themselves */
	CHECK(unlink(big) == 0, "unlink %s: %s", big, strerror(errno));
	after = 0;
	for (i = 0; i < 8; i++) {
		/* rewrite old keys (version 2) and add new ones */
		unsigned int k = i % 2 ? s.nkeys : i;

		err = put_key(t, &s, k, i % 2 ? 1 : 2);
		CHECK(err == 0, "put %u after space came back: %s (%s)", i,
		      h_errname(err), tdbc_errmsg(c));
		after++;
	}
	h_stats(c, &base);
	n0 = base.checkpoints;
	CHECK(h_wait_stats(c, &st, ckpt_done, &n0, 10000), "no checkpoint "
	      "succeeded after space came back (failures %llu)",
	      (unsigned long long)st.ckpt_failures);
	check_all(t, &s, "space back");

	/* a crash after that, then a clean stop */
	crash(&d, c, t);
	start(&d);
	c = open_table(&d, 0, &t);
	check_all(t, &s, "after SIGKILL and restart");
	tdbc_table_close(t);
	tdbc_close(c);
	stop(&d);
	start(&d);
	c = open_table(&d, TDBC_NO_RINGS, &t);
	check_all(t, &s, "after SIGTERM and restart");
	tdbc_table_close(t);
	tdbc_close(c);
	stop(&d);
	check_segments("at the end");
	CHECK(!h_log_has(&d, "torn tail") &&
	      !h_log_has(&d, "unfinished segment"), "a start found a torn "
	      "tail or an unfinished WAL segment: something was left half "
	      "written");
	nfail = check_log(&d);
	printf("tdbd-enospc: %u puts of 64 KiB acknowledged before ENOSPC, "
	       "%u after space came back; %u failed checkpoints logged; "
	       "3 starts on a full disk; all acknowledged values read back "
	       "after each of 7 restarts\n", full_acked, after, nfail);
	CHECK(nfail >= 2, "%u failed checkpoints in the log, want 2 or more",
	      nfail);
	/* retried at the next trigger, not in a loop */
	CHECK(nfail <= 2 * (h_now_ms() - t0) / 1000 + 4, "%u failed "
	      "checkpoints logged in %llu ms: retried in a loop?", nfail,
	      (unsigned long long)(h_now_ms() - t0));
	umount_tmpfs();
	h_done();
	return 0;
}
