// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_bad_config.c - tdbd refusing to start, and starting over a mess.
 *
 *  - A config file with an unknown key, a bad value, or a key twice:
 *    tdbd exits non-zero at once, naming the file and the line (and the
 *    key); it makes no socket.  --check-config says the same; on a good
 *    file it exits 0.  An unknown option or one without its value:
 *    non-zero, naming the option.
 *  - Two daemons on one --data-dir: the second exits non-zero naming the
 *    first's pid; the first goes on serving.
 *  - Two daemons on one --socket: the second exits non-zero before it
 *    recovers anything; the first goes on serving on its socket (not
 *    unlinked under it).
 *  - A tdbd killed with SIGKILL leaves its socket file; a new tdbd on the
 *    same socket and data directory replaces it and serves.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

/* Run tdbd with args; it must exit non-zero within 10 s.  Returns its
 * log (malloc'ed). */
static char *must_fail(const char *tag, const char *const *args)
{
	struct h_daemon d;
	char log[H_PATH];

	memset(&d, 0, sizeof(d));
	h_path(log, sizeof(log), tag);
	strcat(log, ".log");
	h_spawn(&d, log, args, NULL);
	CHECK(h_wait_exit(&d, 10000), "%s: tdbd still running after 10 s",
	      tag);
	if (!WIFEXITED(d.status) || WEXITSTATUS(d.status) == 0) {
		h_dump_log(&d);
		h_fail(__FILE__, __LINE__, "exit != 0", "%s: tdbd status %#x, "
		       "want a non-zero exit", tag, d.status);
	}
	return h_read_file(log);
}

static void has(const char *log, const char *s, const char *what)
{
	CHECK(strstr(log, s), "%s: the message does not contain '%s':\n%s",
	      what, s, log);
}

static void no_sanitizer_report(const char *log, const char *what)
{
	CHECK(!strstr(log, "Sanitizer") && !strstr(log, "runtime error"),
	      "%s: a sanitizer report:\n%s", what, log);
}

static void bad_files(void)
{
	static const struct {
		const char *tag, *text, *line, *key;
	} cases[] = {
		{ "unknown", "# tdbd.conf\nworkers = 2\nno-such-key = 1\n",
		  ":3", "no-such-key" },
		{ "badvalue", "\nring-size = 5000000\n", ":2", "ring-size" },
		{ "badmode", "socket-mode = 0999\n", ":1", "socket-mode" },
		{ "twice", "workers = 1\nidle-spin = 10us\nworkers = 2\n",
		  ":3", "workers" },
		{ "novalue", "log-level =\n", ":1", "log-level" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char conf[H_PATH], sock[H_PATH], data[H_PATH], tag[64];
		char want[H_PATH + 8];
		const char *args[] = { "--config", conf, "--socket", sock,
				       "--data-dir", data, NULL };
		const char *check[] = { "--config", conf, "--check-config",
					NULL };
		struct stat st;
		char *log;

		snprintf(tag, sizeof(tag), "%s.conf", cases[i].tag);
		h_path(conf, sizeof(conf), tag);
		write_file(conf, cases[i].text);
		snprintf(tag, sizeof(tag), "%s.sock", cases[i].tag);
		h_path(sock, sizeof(sock), tag);
		snprintf(tag, sizeof(tag), "%s.data", cases[i].tag);
		h_path(data, sizeof(data), tag);
		snprintf(want, sizeof(want), "%s%s", conf, cases[i].line);

		log = must_fail(cases[i].tag, args);
		has(log, want, cases[i].tag);
		has(log, cases[i].key, cases[i].tag);
		no_sanitizer_report(log, cases[i].tag);
		CHECK(stat(sock, &st) < 0, "%s: a socket was made", tag);
		free(log);

		snprintf(tag, sizeof(tag), "%s-check", cases[i].tag);
		log = must_fail(tag, check);
		has(log, want, tag);
		free(log);
	}
	h_note("bad config files: non-zero exit naming file:line and key "
	       "(%u cases, with and without --check-config)", i);
}

static void good_file_checks(void)
{
	char conf[H_PATH], log[H_PATH];
	const char *args[] = { "--config", conf, "--check-config", NULL };
	struct h_daemon d;

	h_path(conf, sizeof(conf), "good.conf");
	write_file(conf, "# fine\nworkers = 2\nring-size = 8M\n"
		   "client-deadline = 3s\nsocket-mode = 0660\n"
		   "log-level = \"info\"\n");
	h_path(log, sizeof(log), "good-check.log");
	memset(&d, 0, sizeof(d));
	h_spawn(&d, log, args, NULL);
	CHECK(h_wait_exit(&d, 10000) && WIFEXITED(d.status) &&
	      WEXITSTATUS(d.status) == 0, "--check-config of a good file: "
	      "status %#x", d.status);
}

static void bad_options(void)
{
	char conf[H_PATH];
	const char *unknown[] = { "--config", conf, "--no-such-option", "1",
				  NULL };
	const char *novalue[] = { "--config", conf, "--workers", NULL };
	const char *badval[] = { "--config", conf, "--client-deadline",
				 "soon", NULL };
	char *log;

	h_path(conf, sizeof(conf), "good.conf");

	log = must_fail("opt-unknown", unknown);
	has(log, "--no-such-option", "unknown option");
	free(log);
	log = must_fail("opt-novalue", novalue);
	has(log, "--workers", "option without a value");
	free(log);
	log = must_fail("opt-badval", badval);
	has(log, "client-deadline", "option with a bad value");
	free(log);
	h_note("bad options: non-zero exit naming the option");
}

/* The first daemon still answers (h_connect and h_stats fail the test
 * otherwise). */
static void still_serving(const struct h_daemon *d)
{
	struct tdbc *c = h_connect(d, 0);
	struct tdbc_stats st;

	h_stats(c, &st);
	tdbc_close(c);
}

/* A data directory with changes in its WAL to replay: a tdbd (tag)
 * killed after a put. */
static void leave_wal(struct h_daemon *b, const char *tag)
{
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	int status;

	h_start(b, tag, NULL);
	c = h_connect(b, 0);
	CHECK(tdbc_table_create(c, "left", NULL) == 0, "create");
	CHECK(tdbc_table_open(c, "left", &t) == 0, "open");
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "put");
	tdbc_close(c);
	CHECK(kill(b->pid, SIGKILL) == 0, "kill");
	CHECK(waitpid(b->pid, &status, 0) == b->pid, "waitpid");
	b->pid = 0;
}

static void two_daemons(void)
{
	struct h_daemon a, b;
	char sock[H_PATH], pid[32], conf[H_PATH];
	const char *same_data[] = { "--config", conf, "--socket", sock,
				    "--data-dir", a.data, NULL };
	const char *same_sock[] = { "--config", conf, "--socket", a.sock,
				    "--data-dir", b.data, NULL };
	char *log;

	/* the second daemon's data directory has a WAL to replay, which
	 * logs "WAL: replayed" at the default level (checked below) */
	leave_wal(&b, "second");
	h_start(&a, "first", NULL);
	h_path(conf, sizeof(conf), "empty.conf");
	h_path(sock, sizeof(sock), "second-data.sock");
	snprintf(pid, sizeof(pid), "%d", (int)a.pid);

	log = must_fail("second-data", same_data);
	has(log, pid, "second daemon on the same data directory");
	has(log, a.data, "second daemon on the same data directory");
	free(log);
	still_serving(&a);

	log = must_fail("second-sock", same_sock);
	has(log, a.sock, "second daemon on the same socket");
	/* refused before it recovers its data directory (which may take
	 * minutes), not after */
	CHECK(!strstr(log, "recovering") && !strstr(log, "replayed") &&
	      !strstr(log, "checkpoint at LSN"), "the second daemon on the "
	      "same socket recovered its data directory before it gave "
	      "up:\n%s", log);
	has(log, "another daemon is listening there",
	    "second daemon on the same socket");
	free(log);
	still_serving(&a);
	h_stop(&a);
	/* the control: on its own socket the same data directory is
	 * recovered, and says so */
	h_start(&b, "second", NULL);
	CHECK(h_log_has(&b, "WAL: replayed"), "the control did not log its "
	      "replay: the check above proves nothing");
	h_stop(&b);
	h_note("a second daemon on the same data directory (names pid %s) "
	       "or socket: refused; the first goes on", pid);
}

static void stale_socket(void)
{
	struct h_daemon a, b;
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	struct stat st;
	char got[8];
	int status;

	h_start(&a, "stale", NULL);
	CHECK(kill(a.pid, SIGKILL) == 0, "kill");
	CHECK(waitpid(a.pid, &status, 0) == a.pid, "waitpid");
	a.pid = 0;
	CHECK(stat(a.sock, &st) == 0 && S_ISSOCK(st.st_mode), "no socket "
	      "file left by the killed tdbd (the test needs one)");
	/* the same socket and data directory */
	h_start(&b, "stale", NULL);
	CHECK(h_log_has(&b, "stale socket"), "the new tdbd did not say it "
	      "replaced a stale socket");
	c = h_connect(&b, 0);
	CHECK(tdbc_table_create(c, "after", NULL) == 0, "create");
	CHECK(tdbc_table_open(c, "after", &t) == 0, "open");
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "put");
	CHECK(tdbc_get(t, NULL, "k", 1, got, sizeof(got), NULL) == 1, "get");
	tdbc_close(c);
	h_stop(&b);
	h_note("a SIGKILLed tdbd's socket file is replaced at restart");
}

int main(void)
{
	h_init("tdbd-bad-config", 300);
	bad_files();
	good_file_checks();
	bad_options();
	two_daemons();
	stale_socket();
	h_done();
	return 0;
}
