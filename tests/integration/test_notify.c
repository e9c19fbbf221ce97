// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_notify.c - tdbd's messages to systemd (sd_notify), received on a
 * datagram socket of the test's own (NOTIFY_SOCKET).
 *
 * Run 1, WATCHDOG_USEC=400000 and WATCHDOG_PID = tdbd's pid:
 *  - READY=1 and a STATUS= line once it serves;
 *  - WATCHDOG=1 repeatedly: at least 2 within a second (tdbd pings every
 *    interval/4 while its workers keep finishing rounds);
 *  - SIGHUP: RELOADING=1 with MONOTONIC_USEC=, then READY=1 (the
 *    Type=notify-reload protocol), in that order, and the log says it
 *    reloaded;
 *  - SIGTERM: STOPPING=1, and tdbd exits 0.
 * Run 2, WATCHDOG_PID = 1 (the watchdog is someone else's): READY=1 but
 * no WATCHDOG=1 at all within a second.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

#define MAXMSG 256

struct msgs {
	char text[MAXMSG][512];
	uint64_t at[MAXMSG];    /* ms */
	unsigned int n;
};

static int notify_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0, "socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s",
	      path, strerror(errno));
	return fd;
}

/* Collect datagrams for ms milliseconds (or until one contains `until`,
 * when not NULL): the index of that one, or -1. */
static int collect(int fd, struct msgs *m, unsigned int ms, const char *until)
{
	uint64_t end = h_now_ms() + ms;

	for (;;) {
		uint64_t now = h_now_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (now >= end)
			return -1;
		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			continue;
		CHECK(m->n < MAXMSG, "too many notifications");
		n = recv(fd, m->text[m->n], sizeof(m->text[0]) - 1, 0);
		CHECK(n >= 0, "recv: %s", strerror(errno));
		m->text[m->n][n] = 0;
		m->at[m->n] = h_now_ms();
		m->n++;
		if (until && strstr(m->text[m->n - 1], until))
			return (int)m->n - 1;
	}
}

/* The first message at or after `from` holding s: its index, or -1. */
static int find(const struct msgs *m, unsigned int from, const char *s)
{
	unsigned int i;

	for (i = from; i < m->n; i++)
		if (strstr(m->text[i], s))
			return (int)i;
	return -1;
}

static unsigned int count(const struct msgs *m, unsigned int from,
			  const char *s)
{
	unsigned int i, n = 0;

	for (i = from; i < m->n; i++)
		n += strstr(m->text[i], s) != NULL;
	return n;
}

static void dump(const struct msgs *m)
{
	unsigned int i;

	for (i = 0; i < m->n; i++)
		h_note("notification %u at +%llu ms: %s", i,
		       (unsigned long long)(m->at[i] - m->at[0]), m->text[i]);
}

static void run_watched(void)
{
	char path[H_PATH], env_sock[H_PATH + 16];
	const char *env[] = { env_sock, "WATCHDOG_USEC=400000",
			      "WATCHDOG_PID=$PID", NULL };
	struct msgs *m = calloc(1, sizeof(*m));
	struct h_daemon d;
	int fd, i, r, ready;
	unsigned int from, dogs;

	CHECK(m, "out of memory");
	h_path(path, sizeof(path), "notify.sock");
	snprintf(env_sock, sizeof(env_sock), "NOTIFY_SOCKET=%s", path);
	fd = notify_socket(path);
	h_start_env(&d, "watched", NULL, env);

	/* READY=1, STATUS= */
	ready = find(m, 0, "READY=1");
	if (ready < 0)
		ready = collect(fd, m, 10000, "READY=1");
	if (ready < 0)
		dump(m);
	CHECK(ready >= 0, "no READY=1 within 10 s of serving");
	collect(fd, m, 50, NULL);
	CHECK(find(m, 0, "STATUS=") >= 0, "no STATUS= line");

	/* WATCHDOG=1, at least twice in a second */
	from = m->n;
	collect(fd, m, 1000, NULL);
	dogs = count(m, from, "WATCHDOG=1");
	if (dogs < 2)
		dump(m);
	CHECK(dogs >= 2, "%u WATCHDOG=1 within 1 s (WATCHDOG_USEC=400000)",
	      dogs);
	h_note("%u WATCHDOG=1 in 1 s", dogs);

	/* SIGHUP: RELOADING=1 (with MONOTONIC_USEC=), then READY=1 */
	from = m->n;
	CHECK(kill(d.pid, SIGHUP) == 0, "SIGHUP");
	r = collect(fd, m, 5000, "RELOADING=1");
	if (r < 0)
		dump(m);
	CHECK(r >= 0, "no RELOADING=1 within 5 s of SIGHUP");
	CHECK(strstr(m->text[r], "MONOTONIC_USEC="), "RELOADING=1 without "
	      "MONOTONIC_USEC= (%s)", m->text[r]);
	i = find(m, (unsigned int)r + 1, "READY=1");
	if (i < 0)
		i = collect(fd, m, 5000, "READY=1");
	CHECK(i > r, "no READY=1 after RELOADING=1");
	CHECK(find(m, from, "READY=1") > r, "READY=1 came before "
	      "RELOADING=1");
	for (i = 0; i < 100 && !h_log_has(&d, "reloaded"); i++)
		h_sleep_ms(20);
	CHECK(h_log_has(&d, "reloaded"), "the log does not say it reloaded");
	/* still serving, still pinging */
	from = m->n;
	collect(fd, m, 600, NULL);
	CHECK(count(m, from, "WATCHDOG=1") >= 1, "no WATCHDOG=1 after the "
	      "reload");

	/* SIGTERM: STOPPING=1, exit 0 */
	from = m->n;
	h_stop(&d);
	collect(fd, m, 200, NULL);
	if (find(m, from, "STOPPING=1") < 0)
		dump(m);
	CHECK(find(m, from, "STOPPING=1") >= 0, "no STOPPING=1 at SIGTERM");
	h_note("READY=1, STATUS=, WATCHDOG=1, RELOADING=1 -> READY=1, "
	       "STOPPING=1: all seen (%u notifications)", m->n);
	close(fd);
	free(m);
}

/* The watchdog belongs to another process: tdbd must not ping it. */
static void run_not_ours(void)
{
	char path[H_PATH], env_sock[H_PATH + 16];
	const char *env[] = { env_sock, "WATCHDOG_USEC=400000",
			      "WATCHDOG_PID=1", NULL };
	struct msgs *m = calloc(1, sizeof(*m));
	struct h_daemon d;
	int fd;

	CHECK(m, "out of memory");
	h_path(path, sizeof(path), "notify2.sock");
	snprintf(env_sock, sizeof(env_sock), "NOTIFY_SOCKET=%s", path);
	fd = notify_socket(path);
	h_start_env(&d, "notours", NULL, env);
	if (find(m, 0, "READY=1") < 0)
		collect(fd, m, 10000, "READY=1");
	CHECK(find(m, 0, "READY=1") >= 0, "no READY=1");
	collect(fd, m, 1000, NULL);
	CHECK(count(m, 0, "WATCHDOG=1") == 0, "WATCHDOG=1 sent although "
	      "WATCHDOG_PID names another process");
	h_stop(&d);
	h_note("WATCHDOG_PID=1: READY=1 and no WATCHDOG=1");
	close(fd);
	free(m);
}

int main(void)
{
	h_init("tdbd-notify", 300);
	run_watched();
	run_not_ours();
	h_done();
	return 0;
}
