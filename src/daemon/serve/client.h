/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * client.h - one client of tdbd; client.c owns struct client: who it is
 * (struct creds), its rings in sealed memfds (struct shm_ring), its
 * socket's buffers, the channel each answer goes back on (enum chan),
 * its owner client (c->oc), and its life from accept (../main.c) to
 * clean-up.  What runs its requests, with its serve state (c->sv) and
 * pending ring requests (c->pend), is exec.h; its big commit (c->commit),
 * txn.h; its worker and its uid's share, worker.h.
 *
 * Invariants (client.c has those of its memfds and answers):
 *  - ../main.c makes a client and hands it to one worker (worker.h); from
 *    then on only that worker touches it, but for the owner's wake-up
 *    of a watcher (tdbd_client_feed_wake: a writer's thread, reading
 *    only what ATTACH published) and its big commit's job (txn.c: the
 *    committer touches the job alone).
 *  - Every request gets exactly one answer, on the channel it came in
 *    on.
 *  - While c->stash or c->pend holds something, or c->commit is set,
 *    no new request is read from its submission ring; while c->commit
 *    is set, none from its socket either.
 */
#ifndef TDBD_CLIENT_H
#define TDBD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring.h"               /* src/ring: struct tdb_ring */
#include "serve.h"              /* src/owner: struct tdbo_conn */

struct tdbd;
struct worker;
struct uid_share;
struct commit_job;

enum chan { CH_SOCK, CH_RING };         /* where a request came in */

/* Who a client is (SO_PEERCRED, SO_PEERGROUPS). */
struct creds {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[64];
};

/* --- memfds shared with clients (client.c) --------------------------- */

/* A ring in a memfd: header page at 0, data at `span`. */
struct shm_ring {
	int fd;
	void *map;
	size_t map_size, span;
	uint32_t data_size;
	int guard;              /* ../sigbus.c slot, or -1 */
};

/* --- the client (client.c) ------------------------------------------- */

struct client {
	struct tdbd *d;
	struct worker *w;
	unsigned int slot;      /* index in w->clients */
	uint64_t id;
	int sock, pidfd, evfd;  /* evfd: the submission ring's wake-up */
	int comp_evfd;          /* the completion ring's (and its watched
				 * feeds') wake-up, for a client in an
				 * event loop (tdbc_fd); -1 before ATTACH */
	struct creds cr;
	bool dead;              /* cleaned up at the end of the round */
	const char *why;        /* why it is being dropped */

	/* rings (after ATTACH) */
	bool attached;
	struct shm_ring sub_shm, comp_shm;
	struct tdb_ring sub, comp;
	bool comp_dirty;        /* committed, not yet published */

	/* socket: input bytes not yet a whole message; output not sent */
	unsigned char *in;
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_off, out_cap;
	uint64_t sent;          /* socket bytes sent, ever (progress) */
	uint32_t ep_events;     /* the socket's epoll interest now */
	unsigned int in_budget; /* socket requests it may still run this
				 * round (its turn of its uid's share at
				 * its start, 0 after it) */
	struct uid_share *share;        /* its uid's on its worker */
	unsigned int share_slot;        /* index in share->v */
	unsigned int r_taken;   /* ring requests run this round */

	/* an answer that did not fit in the completion ring */
	unsigned char *stash;
	size_t stash_len;
	uint64_t blocked_since; /* ns; 0 = not blocked */
	/* this round's (worker.c: serve_in to serve_out) */
	bool r_blocked;         /* answers found no room */
	uint64_t r_sent, r_cons;        /* socket bytes sent, completion
					 * consumer index, at its start */
	/* ring requests taken but not run yet (a batch of GETs whose
	 * replies found no room, and what came after them in the round):
	 * private copies, run before the ring is read again */
	unsigned char *pend;
	size_t pend_len, pend_off;

	/* stopping: answer only what was sent before (bytes left of it) */
	bool draining;
	uint64_t drain_to;      /* submission ring index at SIGTERM */
	size_t drain_sock;      /* socket bytes the kernel held then */

	/* the owner's side of this client: its transactions, watches and
	 * dumps' state, its credentials as the owner checks them */
	struct tdbo_client *oc;
	/* serve's side (src/owner/serve.h): its dumps, its answers held
	 * for the WAL (oldest first, bounded by sv.held_max and
	 * sv.held_bytes_max: its share of TDBD_HELD_MAX and
	 * TDBD_HELD_BYTES, worker.c) */
	struct tdbo_conn sv;

	/* a big commit running on the committer thread (txn.c): none of
	 * its requests are read until it is answered */
	struct commit_job *commit;
};

/* --- life (client.c) ------------------------------------------------- */

/* oc: its owner client (accepted, charged); freed with it. */
struct client *tdbd_client_new(struct tdbd *d, int sock,
			       const struct creds *cr, struct tdbo_client *oc);
/* Free everything (the client is out of its worker's lists). */
void tdbd_client_free(struct client *c);
/* The owner's wake hook (tdbo_client_new): a feed the client watches
 * was written.  An attached client in an event loop (tdbc_fd: flags
 * TDB_RING_F_EVENTFD and TDB_RING_F_CONS_WAITING in its completion
 * ring's header) is woken as its completion ring would wake it: futex
 * and comp_evfd.  The writer's thread, under the table's write lock. */
void tdbd_client_feed_wake(void *arg);
/* The owner's client for a connection: its credentials as numbers.
 * c: the connection; the owner calls tdbd_client_feed_wake(c) when a
 * feed c watches is written. */
struct tdbo_client *tdbd_owner_client(struct tdbd *d, const struct creds *cr,
				      struct client *c, int *err);
/* What the client holds of the owner, of serve and of its rings goes
 * (held answers, dumps, its big commit's job, transactions, watches,
 * rings); the rest with tdbd_client_free. */
void tdbd_client_cleanup(struct client *c);

/* --- its channels (client.c) -------------------------------------------- */

/* Socket side: run buffered whole messages and read more, within the
 * round's budget (c->in_budget): the number run (>= 0), or < 0 if the
 * client must go (c->why set).  What the budget leaves stays buffered
 * for the next round. */
int tdbd_client_read(struct client *c);
/* Has the socket side requests to run now (buffered, or left by the
 * budget), with room for their answers?  The worker must not sleep then. */
bool tdbd_client_in_ready(const struct client *c);
/* Send buffered socket output; < 0 if the socket is gone. */
int tdbd_client_flush(struct client *c);
/* Queue an answer on a channel (copying it).  -EAGAIN: it went to the
 * stash and the client is blocked until the stash drains. */
int tdbd_client_emit(struct client *c, enum chan ch, const void *msg,
		     size_t len);
/* Room for an answer of len bytes on ch right now? */
bool tdbd_client_room(struct client *c, enum chan ch, size_t len);
/* ATTACH: 1 answered (rings or a refusal), < 0 the client must go. */
int tdbd_client_attach(struct client *c, const struct nlmsghdr *req);
/* Descriptors go with an ack sent at once, so nothing may be queued
 * before it: 0 ready, -EAGAIN answers wait for the client to read them,
 * or the socket's error (c->why set). */
int tdbd_client_fds_ready(struct client *c);
/* The client broke its rings (or the protocol): drop it at the end of
 * the round, count a violation, log why (a SIGBUS in its memfds is named
 * first: it is the cause of what a ring then looks like). */
void tdbd_client_violation(struct client *c, const char *why);
#define TDBD_WHY_SIGBUS "its ring memory went away under us (SIGBUS: " \
	"holes punched in its memfd?)"
/* Pass fds with an ack on the socket. */
int tdbd_client_ack_fds(struct client *c, const struct nlmsghdr *req,
			const struct tdb_proto_extack *ext, const int *fds,
			unsigned int nfds);
void tdbd_client_update_out(struct client *c);

#endif
