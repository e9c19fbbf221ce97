/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ksup.h - what the guest tests of tdbd as tdb.ko's supervisor share
 * (test_supervise, test_supack, test_dumpeq; issue 15): tdb.ko
 * reloaded with parameters, tdbd started (its stderr appended to a log
 * file, the start done once a line says it is ready), paused, stopped,
 * and connections to tdb.ko that wait out its "recovering" EAGAIN.
 *
 * A failure here prints "ksup: FAIL: ..." and exits 1: the guest's
 * /init names the test that failed.
 */
#ifndef TDB_KSUP_H
#define TDB_KSUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define KSUP_KO        "/lib/modules/tdb.ko"
/* The line tdbd in kernel mode logs once it supervises. */
#define KSUP_SUPERVISING "supervising tdb.ko (kernel mode"

struct tdbc;

/* One tdbd: fill path, log and ready; pid -1 and starts 0 at first. */
struct ksup_tdbd {
	const char *path;       /* the binary ($TDB_KTEST_TDBD) */
	const char *log;        /* its stderr, appended */
	const char *ready;      /* the line that says a start is done */
	pid_t pid;              /* -1: not running */
	unsigned int starts;    /* ready lines the log must hold */
};

void ksup_msleep(unsigned int ms);
uint64_t ksup_now_ms(void);
/* Run cmd with system(3); fail unless its status is 0. */
void ksup_sh(const char *cmd);
/* Does this tdb.ko know the supervisor ioctls (an old one: ENOTTY)? */
bool ksup_has_supervisor(void);
/* rmmod tdb, insmod KSUP_KO with params, wait for /dev/tdb. */
void ksup_reload(const char *params);
unsigned int ksup_count_lines(const char *file, const char *needle);
/* Start d with argv (argv[0] is d->path; NULL-terminated) and wait up
 * to 300 s (a restore under TCG) for one more ready line; fails, with
 * the log's tail, if tdbd exits or never gets there. */
void ksup_start(struct ksup_tdbd *d, const char *const *argv);
/* SIGSTOP, and wait until every thread has stopped (kill() returns
 * before the signal is delivered). */
void ksup_pause(struct ksup_tdbd *d);
/* SIGCONT (a paused one too) and sig; SIGTERM must end it with 0. */
void ksup_stop(struct ksup_tdbd *d, int sig);
/* A connection to tdb.ko (TDBC_KERNEL | flags; TDBC_NO_RINGS for
 * generic netlink), retried for 60 s while tdb.ko is recovering. */
struct tdbc *ksup_connect(unsigned int flags);

#endif
