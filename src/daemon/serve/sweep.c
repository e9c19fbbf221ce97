// SPDX-License-Identifier: GPL-2.0-only
/*
 * sweep.c - the thread that runs expiry's sweep (src/owner/expire.c) in
 * daemon mode.  Owns struct sweep (d->sweep).
 *
 * A round every TDBO_SWEEP_PERIOD_MS; while rounds keep finding expired
 * records (tdbo_expire_run's *again) the next one follows at once, but
 * at most SWEEP_BURST rounds in a row, then a pause three times as long
 * as they took: a table expiring all at once is emptied in the
 * background with at most a quarter of one CPU (Redis's active expiry
 * takes the same share), while the workers serve clients.
 * Each round's removals are logged changes: the thread writes them to
 * the WAL itself after the round (tdbd_log_write), as a worker does
 * after its own; no answer waits for them.  Kernel mode has no sweep
 * here: tdb.ko sweeps its own tables and the
 * mirror takes the removals from its log like any other change.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tdbd.h"
#include "sweep.h"
#include "durable/durable.h"   /* tdbd_log_write */

#define SWEEP_BURST   8u        /* rounds in a row at most ... */
#define SWEEP_SHARE   4u        /* ... then rest: busy 1/SWEEP_SHARE */

struct sweep {
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool stop;              /* under lock */
};

/* Sleep us microseconds unless told to stop: true to go on. */
static bool pause_us(struct sweep *s, unsigned int us)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)us * 1000;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&s->lock);
	while (!s->stop &&
	       pthread_cond_timedwait(&s->cv, &s->lock, &ts) != ETIMEDOUT)
		;
	stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return !stop;
}

static void *sweeper(void *arg)
{
	struct tdbd *d = arg;
	unsigned int burst = 0;
	uint64_t busy_from = tdbd_now_ns();

	for (;;) {
		bool again = false;
		uint64_t busy_us;

		tdbo_expire_run(d->o, TDBO_SWEEP_BUDGET, &again);
		tdbd_log_write(d);      /* the round's DELs, as a worker's */
		if (again && ++burst < SWEEP_BURST)
			continue;
		busy_us = (tdbd_now_ns() - busy_from) / 1000;
		if (busy_us > TDBO_SWEEP_PERIOD_MS * 1000u)
			busy_us = TDBO_SWEEP_PERIOD_MS * 1000u;
		if (!pause_us(d->sweep, again ?
			      (unsigned int)busy_us * (SWEEP_SHARE - 1) + 100 :
			      TDBO_SWEEP_PERIOD_MS * 1000u))
			return NULL;
		burst = 0;
		busy_from = tdbd_now_ns();
	}
}

int tdbd_sweep_start(struct tdbd *d)
{
	struct sweep *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int err;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	d->sweep = s;
	err = -pthread_create(&s->thr, NULL, sweeper, d);
	if (err) {
		d->sweep = NULL;
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->lock);
		free(s);
	}
	return err;
}

void tdbd_sweep_stop(struct tdbd *d)
{
	struct sweep *s = d->sweep;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thr, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
	d->sweep = NULL;
}
