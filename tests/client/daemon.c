// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon.c - the client tests' tdbd (daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tdb/client.h>

#include "daemon.h"

const char *tdbd_path(void)
{
	const char *p = getenv("TDBD");

	return p && *p && access(p, X_OK) == 0 ? p : NULL;
}

/* The child: its output into the log, then tdbd. */
static void daemon_exec(const struct daemon *d)
{
	int fd;

	/* never outlive the test, whatever way it ends */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execl(tdbd_path(), "tdbd", "--socket", d->sock, "--data-dir",
	      d->data, (char *)NULL);
	_exit(127);
}

int daemon_start(struct daemon *d, const char *tag)
{
	struct timespec nap = { 0, 20 * 1000000L };
	struct tdbc *c;
	int i, st;

	snprintf(d->dir, sizeof(d->dir), "/tmp/tdbc-%s-XXXXXX", tag);
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->sock, sizeof(d->sock), "%s/tdbd.sock", d->dir);
	snprintf(d->data, sizeof(d->data), "%s/data", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/tdbd.log", d->dir);
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid == 0)
		daemon_exec(d);
	for (i = 0; i < 500; i++) {     /* up to 10 s */
		if (tdbc_connect(&c, d->sock, TDBC_NO_RINGS, NULL, 0) == 0) {
			tdbc_close(c);
			return 0;
		}
		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = -1;
			return -ECHILD;
		}
		nanosleep(&nap, NULL);
	}
	return -ETIMEDOUT;
}

void daemon_stop(struct daemon *d, int sig)
{
	char cmd[256];

	if (d->pid > 0) {
		kill(d->pid, sig);
		waitpid(d->pid, NULL, 0);
		d->pid = -1;
	}
	if (getenv("TDBC_E2E_VERBOSE")) {
		snprintf(cmd, sizeof(cmd), "cat %s >&2", d->log);
		if (system(cmd)) {}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->dir);
	if (system(cmd)) {}
}
