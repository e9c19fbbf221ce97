/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * user.h - what the user-space platform home offers its programs beyond
 * src/core/platform.h: where the engine's log lines go, read-only
 * descriptors of regions.
 */
#ifndef TDB_PLATFORM_USER_H
#define TDB_PLATFORM_USER_H

/* Log sink for the engine's messages (syslog levels).  By default
 * messages are dropped: library code never prints on its own. */
typedef void tdbp_log_fn(void *arg, int level, const char *msg);
void tdbp_set_log(tdbp_log_fn *fn, void *arg);
/* A ready-made sink: "tdb: <msg>" on stderr for levels <= arg (an int
 * cast to a pointer, e.g. (void *)(long)TDBP_LOG_INFO). */
void tdbp_log_stderr(void *arg, int level, const char *msg);

/*
 * A new READ-ONLY descriptor of the region's memfd, for a client that
 * maps the table (tdbd's TABLE_MAP): the caller owns it.  -EOPNOTSUPP
 * when /proc is not mounted (it is opened through /proc/self/fd), or
 * another negative errno.
 */
struct tdbp_region;
int tdbp_region_ro_fd(const struct tdbp_region *r);

#endif
