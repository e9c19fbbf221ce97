// SPDX-License-Identifier: GPL-2.0-only
/*
 * notify.c - tdbd's log lines and its messages to systemd.
 *
 * Log lines go to stderr, one write() each so threads do not interleave
 * them.  Under systemd (JOURNAL_STREAM set) each line starts with the
 * "<N>" priority prefix the journal understands; otherwise with "tdbd: ".
 * The only state: the level filter (an atomic int) and one rate limiter
 * per kind of line a client can cause (tdbd_log_rl, notify.h), each behind
 * its own try-lock: a line that finds the limiter busy is counted as
 * suppressed, so logging never makes a thread wait for another.
 * tdb_escape() is the one escape for client-supplied bytes in a log line
 * (ESC(), notify.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "notify.h"
#include "proto.h"              /* src/proto: tdb_escape */
#include "tdbd.h"               /* tdbd_now_ns */

static int log_level = L_INFO;

/* One kind's limiter: the interval began at `begin` (ns; 0 = none yet);
 * `printed` lines went out in it; `missed` were suppressed since the
 * last report.  begin and printed under busy; missed atomic. */
struct ratelimit {
	int busy;
	unsigned int printed;
	uint64_t begin;
	uint64_t missed;
};

static struct ratelimit limits[RL_NKINDS];

static const char *const rl_names[RL_NKINDS] = {
	[RL_CLIENT] = "client came or went",
	[RL_VIOLATION] = "client violation",
	[RL_REFUSED] = "connection refused",
	[RL_ACCEPT] = "accept",
	[RL_RINGS] = "client rings",
	[RL_TABLES] = "table",
	[RL_WAL] = "WAL",
};

void tdbd_log_set_level(int level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

static void log_va(int level, const char *fmt, va_list ap)
{
	static const char *const names[8] = {
		"emerg", "alert", "crit", "error", "warning", "notice",
		"info", "debug" };
	char line[1024];
	int n;

	if (getenv("JOURNAL_STREAM"))
		n = snprintf(line, sizeof(line), "<%d>", level);
	else
		n = snprintf(line, sizeof(line), "tdbd: %s: ",
			     names[level & 7]);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		(void)0;        /* nowhere left to say it */
}

struct tdbd_errtext tdbd_errtext(int err)
{
	struct tdbd_errtext t;

	snprintf(t.s, sizeof(t.s), "%s", strerror(err < 0 ? -err : err));
	if (t.s[0] >= 'A' && t.s[0] <= 'Z' && t.s[1] >= 'a' && t.s[1] <= 'z')
		t.s[0] = (char)(t.s[0] - 'A' + 'a');
	return t;
}

struct tdbd_escaped tdbd_esc_name(const char *name)
{
	struct tdbd_escaped e;

	tdb_escape(e.s, sizeof(e.s), name, strlen(name));
	return e;
}

static bool level_on(int level)
{
	return level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void tdbd_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (!level_on(level))
		return;
	va_start(ap, fmt);
	log_va(level, fmt, ap);
	va_end(ap);
}

static void say_missed(enum tdbd_rl kind, uint64_t n)
{
	if (n)
		tdbd_log(L_NOTICE, "%llu similar message(s) suppressed (%s; "
			 "at most %u per %u s)", (unsigned long long)n,
			 rl_names[kind], TDBD_RL_BURST,
			 TDBD_RL_INTERVAL_MS / 1000);
}

/* Under rl->busy: start a new interval if the last one is over (and
 * take its count of suppressed lines into *missed). */
static void rl_roll(struct ratelimit *rl, uint64_t now, uint64_t *missed)
{
	if (rl->begin && now - rl->begin < TDBD_RL_INTERVAL_MS * 1000000ull)
		return;
	rl->begin = now;
	rl->printed = 0;
	*missed = __atomic_exchange_n(&rl->missed, 0, __ATOMIC_RELAXED);
}

void tdbd_log_rl(enum tdbd_rl kind, int level, const char *fmt, ...)
{
	struct ratelimit *rl = &limits[kind];
	uint64_t missed = 0;
	bool ok;
	va_list ap;

	if (!level_on(level))
		return;
	if (__atomic_exchange_n(&rl->busy, 1, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&rl->missed, 1, __ATOMIC_RELAXED);
		return;
	}
	rl_roll(rl, tdbd_now_ns(), &missed);
	ok = rl->printed < TDBD_RL_BURST;
	if (ok)
		rl->printed++;
	else
		__atomic_fetch_add(&rl->missed, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&rl->busy, 0, __ATOMIC_RELEASE);
	say_missed(kind, missed);
	if (!ok)
		return;
	va_start(ap, fmt);
	log_va(level, fmt, ap);
	va_end(ap);
}

void tdbd_log_rl_flush(void)
{
	uint64_t now = tdbd_now_ns();
	unsigned int k;

	for (k = 0; k < RL_NKINDS; k++) {
		struct ratelimit *rl = &limits[k];
		uint64_t missed = 0;

		if (!__atomic_load_n(&rl->missed, __ATOMIC_RELAXED) ||
		    __atomic_exchange_n(&rl->busy, 1, __ATOMIC_ACQUIRE))
			continue;
		rl_roll(rl, now, &missed);
		__atomic_store_n(&rl->busy, 0, __ATOMIC_RELEASE);
		say_missed((enum tdbd_rl)k, missed);
	}
}

void tdbd_notify(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!getenv("NOTIFY_SOCKET"))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sd_notify(0, msg);
}
