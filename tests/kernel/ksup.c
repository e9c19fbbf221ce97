// SPDX-License-Identifier: GPL-2.0-only
/*
 * ksup.c - the supervisor tests' fixture (ksup.h): tdb.ko reloads,
 * tdbd's start, pause and stop, connections that wait out recovery.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksup.h"
#include "tdb/client.h"
#include "tdb/kdev.h"

#define START_WAIT  30000       /* x 10 ms: a restore under TCG */

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("ksup: FAIL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void ksup_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

uint64_t ksup_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ksup_sh(const char *cmd)
{
	int st = system(cmd);

	if (st)
		fail("%s: status %#x", cmd, st);
}

bool ksup_has_supervisor(void)
{
	int fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = !(ioctl(fd, TDB_IOC_SUP_READY, 0) < 0 && errno == ENOTTY);
	close(fd);
	return ok;
}

void ksup_reload(const char *params)
{
	char cmd[512];
	int i;

	ksup_sh("rmmod tdb");
	snprintf(cmd, sizeof(cmd), "insmod " KSUP_KO " %s", params);
	ksup_sh(cmd);
	for (i = 0; i < 100 && access(TDB_DEV_PATH, F_OK); i++)
		ksup_msleep(10);
}

unsigned int ksup_count_lines(const char *file, const char *needle)
{
	char line[1024];
	unsigned int n = 0;
	FILE *f = fopen(file, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, needle);
	fclose(f);
	return n;
}

static void show_log(const struct ksup_tdbd *d, unsigned int lines)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "tail -n %u %s >&2", lines, d->log);
	fprintf(stderr, "--- %s\n", d->log);
	system(cmd);
}

void ksup_start(struct ksup_tdbd *d, const char *const *argv)
{
	unsigned int i;
	int status;

	d->pid = fork();
	if (d->pid < 0)
		fail("fork: %s", strerror(errno));
	if (!d->pid) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 2);
		execv(d->path, (char *const *)argv);
		_exit(127);
	}
	d->starts++;
	for (i = 0; i < START_WAIT; i++) {
		if (ksup_count_lines(d->log, d->ready) >= d->starts)
			return;
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			show_log(d, 60);
			d->pid = -1;
			fail("tdbd (%s) exited at start (status %#x)", d->log,
			     status);
		}
		ksup_msleep(10);
	}
	show_log(d, 40);
	fail("tdbd (%s) did not get ready in %u s (start %u)", d->log,
	     START_WAIT / 100, d->starts);
}

/* Threads of pid not stopped yet (state other than T or t). */
static unsigned int running_threads(pid_t pid)
{
	char path[64], stat[512], sp[400], *p;
	unsigned int running = 0;
	struct dirent *e;
	FILE *f;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		fail("%s: %s", path, strerror(errno));
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sp, sizeof(sp), "%s/%s/stat", path, e->d_name);
		if (!(f = fopen(sp, "r")))
			continue;       /* a thread that ended */
		if (fgets(stat, sizeof(stat), f) &&
		    (p = strrchr(stat, ')')) && p[1] == ' ' &&
		    p[2] != 'T' && p[2] != 't')
			running++;
		fclose(f);
	}
	closedir(dir);
	return running;
}

void ksup_pause(struct ksup_tdbd *d)
{
	unsigned int i;

	if (kill(d->pid, SIGSTOP))
		fail("SIGSTOP tdbd: %s", strerror(errno));
	for (i = 0; i < 5000; i++) {
		if (!running_threads(d->pid))
			return;
		ksup_msleep(1);
	}
	fail("tdbd did not stop in 5 s after SIGSTOP");
}

void ksup_stop(struct ksup_tdbd *d, int sig)
{
	int status;

	kill(d->pid, SIGCONT);
	kill(d->pid, sig);
	if (waitpid(d->pid, &status, 0) != d->pid)
		fail("waitpid tdbd: %s", strerror(errno));
	d->pid = -1;
	if (sig == SIGTERM && !(WIFEXITED(status) && !WEXITSTATUS(status))) {
		show_log(d, 40);
		fail("tdbd (%s) stopped with status %#x", d->log, status);
	}
}

struct tdbc *ksup_connect(unsigned int flags)
{
	struct tdbc *c = NULL;
	char err[256];
	int e, i;

	for (i = 0; i < 600; i++) {
		e = tdbc_connect(&c, NULL, TDBC_KERNEL | flags, err,
				 sizeof(err));
		if (!e)
			return c;
		if (e != -EAGAIN)
			break;
		ksup_msleep(100);       /* tdb is recovering */
	}
	fail("connect to tdb.ko: %s", err);
}
