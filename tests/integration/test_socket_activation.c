// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_socket_activation.c - tdbd started by systemd-socket-activate
 * (the systemd package's stand-in for a .socket unit): it must serve on
 * the listening socket it is passed (LISTEN_FDS) instead of making one.
 *
 * systemd-socket-activate -l <path> binds <path>, waits for the first
 * connection, then runs tdbd with the socket.  The test connects through
 * libtdbclient (rings, then socket only), creates a table, puts and gets
 * back a value, checks the log says it used the socket systemd passed,
 * stops tdbd (exit 0) and checks the socket file is still there: it is
 * systemd's, not tdbd's to remove.  Skipped (77) without
 * systemd-socket-activate ($SOCKET_ACTIVATE, else the usual places).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static const char *find_activate(void)
{
	static const char *const where[] = {
		"/usr/bin/systemd-socket-activate",
		"/bin/systemd-socket-activate",
		"/usr/lib/systemd/systemd-activate", NULL };
	const char *env = getenv("SOCKET_ACTIVATE");
	int i;

	if (env && *env && access(env, X_OK) == 0)
		return env;
	for (i = 0; where[i]; i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

static void put_get(const struct h_daemon *d, unsigned int flags)
{
	struct tdbc *c = h_connect(d, flags);
	struct tdbc_table *t = NULL;
	struct tdbc_stats st;
	char got[64], name[16];
	long n;
	int err;

	snprintf(name, sizeof(name), "act%u", flags);
	err = tdbc_table_create(c, name, NULL);
	CHECK(err == 0, "create %s: %s (%s)", name, h_errname(err),
	      tdbc_errmsg(c));
	CHECK(tdbc_table_open(c, name, &t) == 0, "open");
	err = tdbc_put(t, NULL, "hello", 5, "activated", 9, 0);
	CHECK(err == 0, "put: %s (%s)", h_errname(err), tdbc_errmsg(c));
	n = tdbc_get(t, NULL, "hello", 5, got, sizeof(got), NULL);
	CHECK(n == 9 && !memcmp(got, "activated", 9), "get: %ld (%s)", n,
	      n < 0 ? tdbc_errmsg(c) : "wrong value");
	h_stats(c, &st);
	CHECK(st.tables >= 1 && st.clients >= 1, "stats: %u tables, %u "
	      "clients", st.tables, st.clients);
	tdbc_close(c);
}

int main(void)
{
	const char *ssa = find_activate();
	const char *argv[32];
	struct h_daemon d;
	char log[H_PATH];
	struct stat st;
	unsigned int n = 0, i;
	const char *base[8];

	if (!ssa) {
		printf("tdbd-socket-activation: skipped: no "
		       "systemd-socket-activate\n");
		return 77;
	}
	h_init("tdbd-socket-activation", 300);
	h_base_args(&d, "act", base);
	argv[n++] = "-l";
	argv[n++] = d.sock;
	argv[n++] = h_tdbd();
	for (i = 0; base[i]; i++)
		argv[n++] = base[i];
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s", d.log);
	h_spawn_prog(&d, ssa, log, argv, NULL);
	/* the first connection starts tdbd; it is served like any other */
	h_wait_socket(&d, 20000);
	put_get(&d, 0);
	put_get(&d, TDBC_NO_RINGS);
	CHECK(h_log_has(&d, "using the socket systemd passed"), "tdbd did "
	      "not say it used the passed socket (made its own?)");
	h_stop(&d);
	CHECK(h_log_has(&d, "stopped"), "tdbd did not log its stop (the "
	      "SIGTERM went to a wrapper?)");
	CHECK(stat(d.sock, &st) == 0 && S_ISSOCK(st.st_mode), "the socket "
	      "file %s is gone after the stop: tdbd removed a socket it did "
	      "not make", d.sock);
	h_note("served on the socket systemd-socket-activate passed; put/get "
	       "over rings and the socket; the socket file left in place");
	h_done();
	return 0;
}
