// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - tdb-bench's helpers: clock, values, servers it starts (spawn,
 * stop, logs, CPU time), $PATH lookup.  Nothing here knows a peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_LEN, fmt, ap);
	va_end(ap);
}

void value_make(uint8_t *v, uint32_t i, uint32_t gen)
{
	uint64_t w[2] = { i, gen };

	memcpy(v, w, sizeof(w));
	memset(v + sizeof(w), 0xa5 ^ (int)(gen & 0xff),
	       opt.vsize - sizeof(w));
}

int value_check(uint32_t i, const void *v, size_t vlen, char *msg)
{
	uint64_t w = UINT64_MAX;

	if (vlen >= sizeof(w))
		memcpy(&w, v, sizeof(w));
	if (__builtin_expect(vlen == opt.vsize && w == i, 1))
		return 0;
	msgf(msg, "wrong value for key %" PRIu32 ": %zu bytes, index %"
	     PRIu64 " (expected %" PRIu32 " bytes, index %" PRIu32 ")", i,
	     vlen, w, opt.vsize, i);
	return -1;
}

/* --- servers ------------------------------------------------------------ */
pid_t spawn(const char *const argv[], const char *logpath, char *msg)
{
	pid_t parent = getpid(), pid;
	int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0600);

	if (fd < 0) {
		msgf(msg, "cannot create %s: %s", logpath, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		msgf(msg, "fork: %s", strerror(errno));
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
		dprintf(2, "tdb-bench: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

static void describe_status(int st, char *msg)
{
	if (WIFEXITED(st))
		msgf(msg, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		msgf(msg, "killed by signal %d", WTERMSIG(st));
	else
		msgf(msg, "ended (status %#x)", st);
}

bool exited(pid_t pid, char *msg)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return false;
	describe_status(st, msg);
	return true;
}

int stop_server(pid_t pid)
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

void log_tail(const char *path, char *msg, size_t len)
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

double proc_cpu(pid_t pid)
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

const char *find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096];

	snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/usr/bin",
		 path && *path ? path : "/usr/local/bin");
	for (char *s = NULL, *d = strtok_r(dirs, ":", &s); d;
	     d = strtok_r(NULL, ":", &s)) {
		struct stat st;

		if ((size_t)snprintf(buf, len, "%s/%s", *d ? d : ".", name) >=
		    len)
			continue;
		if (!stat(buf, &st) && S_ISREG(st.st_mode) &&
		    !access(buf, X_OK))
			return buf;
	}
	return NULL;
}
