/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sigbus.h - surviving a client that takes memory away from its own
 * rings (sigbus.c, which owns the table of guards: the daemon's one
 * piece of global state).  main.c makes and frees the table; the
 * serving files guard a client's ring mappings (serve/client.c) and
 * look whether a guard was hit (serve/worker.c).
 */
#ifndef TDBD_SIGBUS_H
#define TDBD_SIGBUS_H

#include <stdbool.h>
#include <stddef.h>

int tdbd_sigbus_init(unsigned int slots);
void tdbd_sigbus_fini(void);
/* Guard a mapping: a SIGBUS in it replaces it with zero pages and marks
 * the slot hit, instead of killing us.  A slot >= 0, or -ENOSPC. */
int tdbd_sigbus_guard(void *addr, size_t len);
void tdbd_sigbus_unguard(int slot);
bool tdbd_sigbus_hit(int slot);

#endif
