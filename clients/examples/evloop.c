// SPDX-License-Identifier: MIT
/*
 * evloop.c - libtdbclient in an event loop: puts, a watch, a transaction
 * commit and a scan, all driven by readiness of one descriptor
 * (tdbc_fd), with a plain epoll loop or with sd-event.
 *
 * What it does, in the table "evloop" (created, or taken if it is ours):
 * watches keys "key-*", submits 100 puts at once, then 10 puts inside a
 * transaction and its commit, then scans "key-*" asynchronously.  Each
 * step starts when the completions of the previous one came in; the
 * watch counts the changes as they come.  Exit status 0 when all 110
 * completions, the commit, 110 scanned records and 110 watched changes
 * were seen, 1 otherwise (or when the loop waits 10 s for nothing).
 *
 * The rule of tdbc_fd (tdbc_fd(3)): when it is readable, call
 * tdbc_reap(..., 0, 0) and tdbc_watch_next(..., 0, ...) until they
 * return 0, then wait again.  Nothing else is needed: no wake-up is
 * lost, whatever the loop (level- or edge-triggered).
 *
 * Build it against the installed library (package libtdbclient-dev):
 *
 *     cc -o evloop evloop.c $(pkg-config --cflags --libs tdbclient)
 *     cc -DWITH_SD_EVENT -o evloop evloop.c \
 *        $(pkg-config --cflags --libs tdbclient libsystemd)
 *
 * Run it:  ./evloop [SOCKET] [--sd-event]   (SOCKET: tdbd's, else
 * $TDB_SOCKET, else /run/tdb/tdbd.sock; with tdb.ko loaded and no socket
 * named, tdb.ko).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <tdb/client.h>
#ifdef WITH_SD_EVENT
#include <systemd/sd-event.h>
#endif

#define NPUTS   100
#define NTXN    10
#define TOTAL   (NPUTS + NTXN)
#define USER_COMMIT  1000000u
#define USER_SCAN    1000001u

enum phase { PUTS, TXN_PUTS, COMMIT, SCAN, DONE, FAILED };

struct app {
	struct tdbc *c;
	struct tdbc_table *t;
	struct tdbc_watch *w;
	struct tdbc_txn *txn;
	struct tdbc_scan *scan;
	enum phase phase;
	unsigned int pending;   /* completions the phase still waits for */
	unsigned int changes;   /* watched changes seen */
	unsigned int scanned;   /* records the scan gave */
	char keys[NPUTS][16];
};

static int fail(struct app *a, const char *what, int err)
{
	fprintf(stderr, "evloop: %s: %s: %s\n", what, tdbc_strerror(err),
		tdbc_errmsg(a->c));
	a->phase = FAILED;
	return -1;
}

/* Submit all of reqs (a full ring takes them in parts: reap first). */
static int submit_all(struct app *a, struct tdbc_req *reqs, unsigned int n)
{
	unsigned int done = 0;
	int r;

	while (done < n) {
		r = tdbc_submit(a->c, reqs + done, n - done);
		if (r < 0)
			return fail(a, "submit", r);
		done += (unsigned int)r;
	}
	a->pending = n;
	return 0;
}

static int put_reqs(struct app *a, struct tdbc_txn *txn, unsigned int from,
		    unsigned int n)
{
	struct tdbc_req reqs[NPUTS];
	unsigned int i;

	for (i = 0; i < n; i++) {
		int kl = snprintf(a->keys[i], sizeof(a->keys[i]), "key-%03u",
				  from + i);

		reqs[i] = (struct tdbc_req){
			.op = TDBC_OP_PUT, .table = a->t, .txn = txn,
			.key = a->keys[i], .klen = (size_t)kl,
			.val = "value", .vlen = 5, .user = from + i };
	}
	return submit_all(a, reqs, n);
}

/* The phase's requests are all answered: start the next one. */
static int next_phase(struct app *a)
{
	struct tdbc_req commit = { .op = TDBC_OP_COMMIT, .user = USER_COMMIT };
	int err;

	switch (a->phase) {
	case PUTS:
		printf("%d puts completed\n", NPUTS);
		/* TXN_BEGIN is one round trip that waits for nothing */
		err = tdbc_txn_begin(a->c, &a->txn);
		if (err)
			return fail(a, "begin", err);
		a->phase = TXN_PUTS;
		return put_reqs(a, a->txn, NPUTS, NTXN);
	case TXN_PUTS:
		commit.txn = a->txn;
		a->txn = NULL;          /* the submitted COMMIT frees it */
		a->phase = COMMIT;
		return submit_all(a, &commit, 1);
	case COMMIT:
		printf("transaction of %d puts committed\n", NTXN);
		a->phase = SCAN;
		a->pending = 1;
		err = tdbc_scan_submit(a->t, "key-", 4, 0, 0, USER_SCAN,
				       &a->scan);
		return err ? fail(a, "scan", err) : 0;
	default:
		return 0;
	}
}

/* A scan batch came: take its records; the next batch is asked for when
 * they are used up (-EAGAIN), the end is 0. */
static int scan_batch(struct app *a)
{
	int r;

	while ((r = tdbc_scan_next(a->scan, NULL, NULL, NULL, NULL)) == 1)
		a->scanned++;
	if (r == -EAGAIN) {
		a->pending = 1;
		return 0;
	}
	if (r < 0)
		return fail(a, "scan", r);
	printf("scan gave %u records\n", a->scanned);
	tdbc_scan_close(a->scan);
	a->scan = NULL;
	a->phase = DONE;
	return 0;
}

/* tdbc_fd is readable: reap and read until nothing is left. */
static int on_ready(struct app *a)
{
	struct tdbc_cqe cqes[64];
	struct tdbc_event ev;
	uint64_t lost;
	int n, i, r;

	while ((n = tdbc_reap(a->c, cqes, 64, 0, 0)) > 0) {
		for (i = 0; i < n; i++) {
			if (cqes[i].res < 0)
				return fail(a, "request", cqes[i].res);
			if (cqes[i].user == USER_SCAN) {
				a->pending = 0;
				if (scan_batch(a))
					return -1;
				continue;
			}
			if (--a->pending == 0 && next_phase(a))
				return -1;
		}
	}
	if (n < 0)
		return fail(a, "reap", n);
	while ((r = tdbc_watch_next(a->w, &ev, 0, &lost)) != 0) {
		if (r == -EOVERFLOW) {
			a->changes += (unsigned int)lost;
			continue;
		}
		if (r < 0)
			return fail(a, "watch", r);
		a->changes++;
	}
	return 0;
}

static int finished(const struct app *a)
{
	return a->phase == FAILED ||
	       (a->phase == DONE && a->changes >= TOTAL);
}

/* --- a plain epoll loop ---------------------------------------------- */

static int run_epoll(struct app *a)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC), fd = tdbc_fd(a->c), n;

	if (fd < 0)
		return fail(a, "tdbc_fd", fd);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("evloop: epoll");
		return -1;
	}
	if (put_reqs(a, NULL, 0, NPUTS) == 0)
		on_ready(a);    /* as if readable: the rule's first turn */
	while (!finished(a)) {
		n = epoll_wait(ep, &ev, 1, 10000);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "evloop: nothing happened for 10 s\n");
			a->phase = FAILED;
			break;
		}
		on_ready(a);
	}
	close(ep);
	return a->phase == DONE ? 0 : -1;
}

/* --- the same with sd-event ------------------------------------------ */

#ifdef WITH_SD_EVENT
static int sd_ready(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct app *a = arg;

	(void)fd;
	(void)revents;
	on_ready(a);
	if (finished(a))
		sd_event_exit(sd_event_source_get_event(s),
			      a->phase == DONE ? 0 : 1);
	return 0;
}

static int sd_timeout(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)usec;
	(void)arg;
	fprintf(stderr, "evloop: not done in 30 s\n");
	return sd_event_exit(sd_event_source_get_event(s), 1);
}

static int run_sd_event(struct app *a)
{
	sd_event *e = NULL;
	sd_event_source *io = NULL, *timer = NULL;
	uint64_t now;
	int fd = tdbc_fd(a->c), r;

	if (fd < 0)
		return fail(a, "tdbc_fd", fd);
	r = sd_event_default(&e);
	if (r >= 0)
		r = sd_event_add_io(e, &io, fd, EPOLLIN, sd_ready, a);
	if (r >= 0)
		r = sd_event_now(e, CLOCK_MONOTONIC, &now);
	if (r >= 0)
		r = sd_event_add_time(e, &timer, CLOCK_MONOTONIC,
				      now + 30000000ull, 0, sd_timeout, a);
	if (r < 0) {
		fprintf(stderr, "evloop: sd-event: %s\n", strerror(-r));
		return -1;
	}
	if (put_reqs(a, NULL, 0, NPUTS) == 0)
		on_ready(a);
	r = finished(a) ? (a->phase == DONE ? 0 : 1) : sd_event_loop(e);
	sd_event_source_unref(timer);
	sd_event_source_unref(io);
	sd_event_unref(e);
	return r == 0 && a->phase == DONE ? 0 : -1;
}
#endif

int main(int argc, char **argv)
{
	static struct app a;
	const char *path = NULL;
	char errmsg[256];
	int i, err, sd = 0, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sd-event"))
			sd = 1;
		else
			path = argv[i];
	}
#ifndef WITH_SD_EVENT
	if (sd) {
		fprintf(stderr, "evloop: built without sd-event "
			"(-DWITH_SD_EVENT)\n");
		return 2;
	}
#endif
	err = tdbc_connect(&a.c, path, 0, errmsg, sizeof(errmsg));
	if (err) {
		fprintf(stderr, "evloop: %s\n", errmsg);
		return 1;
	}
	/* A table of our own (hello.c shows how to check an existing one
	 * really is ours before using it). */
	err = tdbc_table_create(a.c, "evloop", NULL);
	if (err && err != -EEXIST) {
		fail(&a, "create table evloop", err);
		tdbc_close(a.c);
		return 1;
	}
	err = tdbc_table_open(a.c, "evloop", &a.t);
	if (!err)
		err = tdbc_watch(a.t, "key-", 4, &a.w);
	if (err) {
		fail(&a, "open and watch table evloop", err);
		tdbc_close(a.c);
		return 1;
	}
#ifdef WITH_SD_EVENT
	rc = sd ? run_sd_event(&a) : run_epoll(&a);
#else
	rc = run_epoll(&a);
#endif
	printf("%u watched changes\n", a.changes);
	if (a.scan)
		tdbc_scan_close(a.scan);
	tdbc_watch_close(a.w);
	tdbc_table_close(a.t);
	tdbc_close(a.c);
	return rc == 0 && a.scanned == TOTAL ? 0 : 1;
}
