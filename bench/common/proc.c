// SPDX-License-Identifier: GPL-2.0-only
/*
 * proc.c - the servers a benchmark starts (proc.h): spawn, reap, stop,
 * their logs and CPU time.  Shared by tdb-bench and tdb-bench-ycsb.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

pid_t bench_spawn(const char *const argv[], const char *logpath, char *msg,
		  size_t len)
{
	pid_t parent = getpid(), pid;
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0600);

	if (fd < 0) {
		snprintf(msg, len, "cannot create %s: %s", logpath,
			 strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(msg, len, "fork: %s", strerror(errno));
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
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

bool bench_exited(pid_t pid, char *msg, size_t len)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return false;
	if (WIFEXITED(st))
		snprintf(msg, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(msg, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(msg, len, "ended (status %#x)", st);
	return true;
}

int bench_stop_server(pid_t pid)
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

void bench_log_tail(const char *path, char *msg, size_t len)
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
	if (n && used + 16 < len)
		snprintf(msg + used, len - used, "; its log (%s) ends: %s",
			 path, buf);
}

double bench_proc_cpu(pid_t pid)
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
	/* The command name may hold blanks and ')': fields resume after
	 * the last ')'.  utime and stime are fields 14 and 15. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}
