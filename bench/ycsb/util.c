// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - tdb-bench-ycsb's helpers (driver.h): the clock, messages, and
 * the servers a peer starts (spawn, stop, logs, CPU time).  Nothing here
 * knows a peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

const char *ycsb_tdbd_path;

double ycsb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ycsb_msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, YCSB_MSG, fmt, ap);
	va_end(ap);
}

pid_t ycsb_spawn(const char *const argv[], const char *logpath, char *msg)
{
	pid_t parent = getpid(), pid;
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0600);

	if (fd < 0) {
		ycsb_msgf(msg, "cannot create %s: %s", logpath,
			  strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		ycsb_msgf(msg, "fork: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (pid == 0) {
		/* The server must not outlive a benchmark that dies. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "tdb-bench-ycsb: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

static void describe_status(int st, char *msg)
{
	if (WIFEXITED(st))
		ycsb_msgf(msg, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		ycsb_msgf(msg, "killed by signal %d", WTERMSIG(st));
	else
		ycsb_msgf(msg, "ended (status %#x)", st);
}

bool ycsb_exited(pid_t pid, char *msg)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return false;
	describe_status(st, msg);
	return true;
}

int ycsb_stop_server(pid_t pid)
{
	int st = 0;

	if (pid <= 0)
		return 0;
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
				128 + WTERMSIG(st);
		if (r < 0)
			return -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 128 + SIGKILL;
}

void ycsb_log_tail(const char *path, char *msg)
{
	char buf[4096];
	size_t used = strlen(msg), n;
	FILE *f = fopen(path, "r");
	long size;

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, size > 300 ? size - 300 : 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (n && used + 16 < YCSB_MSG) {
		int w = snprintf(msg + used, YCSB_MSG - used, "; its log (%s) "
				 "ends: ", path);

		if (w > 0 && used + (size_t)w + 1 < YCSB_MSG)
			memcpy(msg + used + w, buf, strnlen(buf,
			       YCSB_MSG - used - (size_t)w - 1) + 1);
		msg[YCSB_MSG - 1] = 0;
	}
}

double ycsb_proc_cpu(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* fields resume after the last ')'; utime, stime are 14 and 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

int ycsb_rm_tree(const char *path)
{
	if (access(path, F_OK))
		return 0;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}
