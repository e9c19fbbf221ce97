/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sweep.h - expiry's sweep thread in daemon mode (sweep.c).
 */
#ifndef TDBD_SWEEP_H
#define TDBD_SWEEP_H

struct tdbd;

/* After recovery, before clients: the sweep runs until stopped.  0 or
 * a negative errno (the thread could not start). */
int tdbd_sweep_start(struct tdbd *d);
/* Before the owner goes; no-op if it never started. */
void tdbd_sweep_stop(struct tdbd *d);

#endif
