// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon.h - a tdbd of its own for the client tests (test_client_e2e,
 * test_client_evloop): started in a scratch directory under /tmp with
 * its socket, data directory and log there, killed with the test
 * (PR_SET_PDEATHSIG), and the directory removed when it is stopped.
 * $TDBD names the binary; without it the tests skip.
 */
#ifndef TDB_TEST_CLIENT_DAEMON_H
#define TDB_TEST_CLIENT_DAEMON_H

#include <sys/types.h>

struct daemon {
	char dir[64], sock[128], data[128], log[128];
	pid_t pid;
};

/* $TDBD if it names an executable, else NULL. */
const char *tdbd_path(void);
/* Start it in a new /tmp/tdbc-TAG-XXXXXX and wait until it answers
 * (10 s at most): 0, or -errno, -ECHILD (it died), -ETIMEDOUT. */
int daemon_start(struct daemon *d, const char *tag);
/* Send sig, reap it, show its log if $TDBC_E2E_VERBOSE is set, remove
 * its directory. */
void daemon_stop(struct daemon *d, int sig);

#endif
