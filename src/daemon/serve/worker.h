/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * worker.h - tdbd's worker threads; worker.c owns struct worker (a
 * thread, its epoll set, its clients, their uids' shares, its round's
 * scratch) and struct uid_share (the clients of one uid on a worker).
 * ../main.c starts and stops the workers and hands each accepted client
 * to one; the WAL's flusher (../durable.c) and the committer (txn.c)
 * wake them.
 *
 * Invariants:
 *  - A worker's clients, shares, scratch and GET batch are its thread's
 *    alone.  Other threads touch only its inbox (under inbox_lock), its
 *    ctlfd (a write wakes it), heartbeat and nheld (atomics: main.c's
 *    watchdog, the WAL's flusher), and nclients, which
 *    tdbd_worker_hand reads unlocked as a hint of its load.
 *  - tdbd_worker_wake from a thread that may outlive the workers (the
 *    WAL's flusher, the committer) only under d->wake_lock while
 *    d->wake_on: tdbd_workers_stop clears it before it closes ctlfd.
 */
#ifndef TDBD_WORKER_H
#define TDBD_WORKER_H

#include <pthread.h>
#include <stdint.h>

struct tdbd;
struct client;
struct uid_share;
struct get_batch;

/* Requests the clients of one uid may have run per round on each
 * transport (their submission rings, their sockets), shared by its
 * connections on the worker (worker.c, "Shares"): one busy user cannot
 * take more than its share of a worker's round, however many
 * connections it opens, nor one busy connection more than its uid's. */
#define TDBD_REQ_BUDGET 64u
/* The least a connection of a uid with many may take when its turn
 * comes (a lookup group of GETs), so a share is not spent one request
 * per client visit. */
#define TDBD_REQ_MIN_TURN 16u

/* Acknowledgements held for the WAL (serve.h) of one uid's connections on
 * a worker at most, and, once it has two or more there, the bytes of
 * their requests (the size of what waits for the disk: each sync
 * carries it): each connection may hold these over their number
 * (c->sv.held_max, at least TDBD_REQ_BUDGET; c->sv.held_bytes_max, at least
 * TDBD_HELD_BYTES_MIN; the request that passes it is still taken), so a
 * uid's connection count buys it no more of the disk's syncs, and many
 * connections cannot make every sync, which everyone's acks wait for,
 * carry megabytes.  A lone connection keeps the bound it always had
 * (TDBD_HELD_MAX answers, any size): a client pipelining big values
 * alone is not slowed. */
#define TDBD_HELD_MAX 4096u
#define TDBD_HELD_BYTES (1u << 20)
#define TDBD_HELD_BYTES_MIN (4u << 10)

struct worker {
	struct tdbd *d;
	unsigned int id;
	pthread_t thread;
	int epfd, ctlfd;        /* ctlfd: eventfd, main -> worker */
	struct client **clients;
	unsigned int nclients, cap;
	/* its clients by uid: each uid's share of a round (worker.c) */
	struct uid_share **shares;
	unsigned int nshares, shares_cap;
	pthread_mutex_t inbox_lock;
	struct client **inbox;  /* handed over by main, not yet taken */
	unsigned int ninbox, inbox_cap;
	uint64_t heartbeat;     /* ns, atomic: last round */
	unsigned char *scratch; /* an answer being built (MSG_MAX) */
	struct get_batch *gets; /* a round's consecutive ring GETs */
	unsigned int nheld;     /* atomic: held acks of its clients */
};

/* The committer first (txn.h), then d->cfg.workers threads; d->workers. */
int tdbd_workers_start(struct tdbd *d);
/* Drain and stop every worker (SIGTERM: answer what was sent), then the
 * committer; free them. */
void tdbd_workers_stop(struct tdbd *d);
/* From ../main.c: c to the worker with the fewest clients (c is freed if
 * its inbox cannot grow). */
void tdbd_worker_hand(struct tdbd *d, struct client *c);
/* Wake w out of its epoll sleep (its control eventfd).  From another
 * thread that may outlive the workers, only under d->wake_lock while
 * d->wake_on. */
void tdbd_worker_wake(struct worker *w);

#endif
