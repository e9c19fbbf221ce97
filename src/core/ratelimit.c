/* SPDX-License-Identifier: MIT */
/*
 * ratelimit.c - log lines a client can provoke, limited per kind, with a
 * count of what was left out (platform.h, "rate-limited log lines").
 *
 * The policy is tdbd's own (tdbd_log_rl, src/daemon/notify.c), so both
 * limiters behave alike: a burst of TDBP_RL_BURST lines per window of
 * TDBP_RL_INTERVAL_MS, begun by the first line after the last window
 * ended; the rest are counted.  The first line of the next window, or
 * tdbp_log_rl_flush() from the home's periodic point once the window is
 * over, first writes "N similar line(s) suppressed in the last T s".
 *
 * Invariants:
 *  - The state is the caller's (a struct tdbp_ratelimit in the owner,
 *    the engine, or for a line without either a static at its call
 *    site): this file has none.
 *  - Freestanding (both homes): tdbp_now_ns and tdbp_log_limited, gcc's
 *    __atomic builtins, no sleeping: `busy` is a try-lock, and a line
 *    that finds it taken is counted as suppressed, never waits.  So the
 *    limiter may be called under any lock, in any context a tdbp_log
 *    line may be written from.
 *  - Every suppressed line is counted once in `missed` and reported
 *    once, by the one caller that takes the count (an exchange to 0).
 *  - No floating point: seconds are whole.
 */
#include "platform.h"

#define RL_INTERVAL_NS ((uint64_t)TDBP_RL_INTERVAL_MS * 1000000u)

void tdbp_ratelimit_init(struct tdbp_ratelimit *rl, const char *what)
{
	rl->what = what;
	rl->busy = 0;
	rl->printed = 0;
	rl->begin_ns = 0;
	rl->missed = 0;
	rl->missed_level = TDBP_LOG_DEBUG;
}

static bool rl_try(struct tdbp_ratelimit *rl)
{
	return !__atomic_exchange_n(&rl->busy, 1, __ATOMIC_ACQUIRE);
}

static void rl_release(struct tdbp_ratelimit *rl)
{
	__atomic_store_n(&rl->busy, 0, __ATOMIC_RELEASE);
}

/* Under busy: begin a new window if the last one is over, taking its
 * count of suppressed lines (and their most severe level) with it. */
static void rl_roll(struct tdbp_ratelimit *rl, uint64_t now,
		    uint64_t *missed, uint64_t *secs, int *level)
{
	if (rl->begin_ns && now - rl->begin_ns < RL_INTERVAL_NS)
		return;
	*missed = __atomic_exchange_n(&rl->missed, 0, __ATOMIC_RELAXED);
	*secs = rl->begin_ns ? (now - rl->begin_ns) / 1000000000u : 0;
	*level = rl->missed_level;
	rl->missed_level = TDBP_LOG_DEBUG;
	rl->begin_ns = now;
	rl->printed = 0;
}

static void rl_say(const struct tdbp_ratelimit *rl, uint64_t missed,
		   uint64_t secs, int level)
{
	if (!missed)
		return;
	/* never less than INFO: a count of debug lines is still news */
	tdbp_log_limited(level < TDBP_LOG_INFO ? level : TDBP_LOG_INFO,
			 "%llu similar line(s) suppressed in the last %llu s "
			 "(%s; at most %u per %u s)",
			 (unsigned long long)missed, (unsigned long long)secs,
			 rl->what ? rl->what : "engine", TDBP_RL_BURST,
			 TDBP_RL_INTERVAL_MS / 1000);
}

bool tdbp_log_rl_admit(struct tdbp_ratelimit *rl, int level)
{
	uint64_t missed = 0, secs = 0;
	int mlevel = TDBP_LOG_DEBUG;
	bool ok;

	if (!rl_try(rl)) {
		__atomic_fetch_add(&rl->missed, 1, __ATOMIC_RELAXED);
		return false;
	}
	rl_roll(rl, tdbp_now_ns(), &missed, &secs, &mlevel);
	ok = rl->printed < TDBP_RL_BURST;
	if (ok) {
		rl->printed++;
	} else {
		__atomic_fetch_add(&rl->missed, 1, __ATOMIC_RELAXED);
		if (level < rl->missed_level)
			rl->missed_level = level;
	}
	rl_release(rl);
	rl_say(rl, missed, secs, mlevel);
	return ok;
}

void tdbp_log_rl_flush(struct tdbp_ratelimit *rl)
{
	uint64_t missed = 0, secs = 0;
	int level = TDBP_LOG_DEBUG;

	if (!__atomic_load_n(&rl->missed, __ATOMIC_RELAXED) || !rl_try(rl))
		return;
	rl_roll(rl, tdbp_now_ns(), &missed, &secs, &level);
	rl_release(rl);
	rl_say(rl, missed, secs, level);
}
