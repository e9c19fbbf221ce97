// SPDX-License-Identifier: GPL-2.0-only
/*
 * state.c - the shipper's files in --state-dir: `position` (the LSN up
 * to which Kafka acknowledged every message, "lsn N") and `status` (the
 * lag and counters, key=value lines that tdb-kafka status prints).
 * Each is replaced whole: written to a temporary file, fsync(2)ed,
 * renamed over the old one, and the directory fsynced, so a crash
 * leaves the old or the new file, never a torn one, and a position once
 * saved survives a power cut.
 */
#include "kafka.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write buf to dir/name through dir/name.tmp: 0 or -errno, err naming
 * the file. */
static int replace_file(const char *dir, const char *name, const char *buf,
			size_t len, bool sync, char *err, size_t errlen)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd, e = 0;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-e));
		return e;
	}
	if (write(fd, buf, len) != (ssize_t)len || (sync && fsync(fd)))
		e = errno ? -errno : -EIO;
	if (close(fd) && !e)
		e = -errno;
	if (!e && rename(tmp, path))
		e = -errno;
	if (e) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(-e));
		unlink(tmp);
		return e;
	}
	if (sync) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fsync(fd)) {
			e = -errno;
			snprintf(err, errlen, "%s: fsync: %s", dir,
				 strerror(-e));
		}
		if (fd >= 0)
			close(fd);
	}
	return e;
}

int kf_state_load(const char *dir, struct kf_state *st, char *err,
		  size_t errlen)
{
	char path[PATH_MAX];
	unsigned long long lsn;
	FILE *f;
	int n;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/position", dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	n = fscanf(f, "lsn %llu", &lsn);
	fclose(f);
	if (n != 1) {
		snprintf(err, errlen, "%s: not a position file (want "
			 "\"lsn N\")", path);
		return -EINVAL;
	}
	st->lsn = lsn;
	st->have = true;
	return 0;
}

int kf_state_save(const char *dir, const struct kf_state *st, char *err,
		  size_t errlen)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "lsn %" PRIu64 "\n", st->lsn);

	return replace_file(dir, "position", buf, (size_t)n, true, err,
			    errlen);
}

int kf_status_save(const char *dir, const struct kf_status *s, char *err,
		   size_t errlen)
{
	char buf[512];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "acked_lsn=%" PRIu64 "\nread_lsn=%" PRIu64
		     "\ndurable_lsn=%" PRIu64 "\nlag_lsn=%" PRIu64
		     "\nlag_ms=%" PRIu64 "\nsnapshot_lsn=%" PRIu64
		     "\nmessages=%" PRIu64 "\ntables_skipped=%" PRIu64
		     "\ntime_ms=%" PRIu64 "\nnote=%s\n",
		     s->acked, s->read, s->durable,
		     s->durable > s->acked ? s->durable - s->acked : 0,
		     s->lag_ms, s->snapshot_lsn, s->messages,
		     s->tables_skipped, s->time_ms, s->note ? s->note : "");
	return replace_file(dir, "status", buf, (size_t)n, false, err,
			    errlen);
}

int kf_status_print(const char *dir)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/status", dir);
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "tdb-kafka status: %s: %s (is tdb-kafka ship "
			"running with --state-dir %s?)\n", path,
			strerror(errno), dir);
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	fclose(f);
	return 0;
}
