/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * exec.h - running a client's requests: exec.c, tdbd's side of serve
 * (src/owner/serve.c), owns the client's serve state over its channels
 * (c->sv: tdbd_serve_init), its pending ring requests (c->pend) and
 * struct get_batch (a ring round's consecutive GETs, one per worker:
 * w->gets).  The worker calls these; client.c runs its socket's
 * requests with tdbd_exec.  Named exec.h, not serve.h: src/owner/serve.h
 * is on the include path as "serve.h".
 *
 * Invariant: answers keep the requests' order on each channel: the
 * batch goes out before any other request of the client runs, and what
 * is pending runs before its ring is read again.
 */
#ifndef TDBD_EXEC_H
#define TDBD_EXEC_H

#include <stddef.h>

#include "client.h"             /* struct client, enum chan */
#include "proto.h"              /* src/proto: struct tdb_proto_msg */

/* Run one request (a private copy of len bytes) that came in on ch. */
void tdbd_exec(struct client *c, enum chan ch, const void *msg, size_t len);
/*
 * A message from the submission ring (a private copy, valid during the
 * call).  Consecutive GETs are kept in the worker's batch and served
 * together (tdbo_get_many) when something else comes, when the batch is
 * full, or at tdbd_ring_flush(), which the round calls once the ring
 * has given what it will.  Answers keep the requests' order.
 */
#define TDBD_GET_BATCH 16u      /* TDBE_LOOKUP_GROUP: one lookup walk */
#define TDBD_GET_BYTES 8192u    /* their private copies */
struct get_batch {
	unsigned int n;
	size_t used;
	struct tdb_proto_msg m[TDBD_GET_BATCH];
	unsigned char buf[TDBD_GET_BYTES] __attribute__((aligned(8)));
};
void tdbd_ring_msg(struct client *c, const struct nlmsghdr *nlh);
void tdbd_ring_flush(struct client *c);
/* Run the requests left pending (c->pend) while answers have room;
 * returns how many ran. */
unsigned int tdbd_pend_run(struct client *c);
/* The client's serve state (c->sv) over its channels: when its worker
 * takes it (c->oc set).  Zeroed (calloc) until then: nothing to free. */
void tdbd_serve_init(struct client *c);
/* Answer c's big commit if the committer is done with it: 1, else 0. */
unsigned int tdbd_commit_answer(struct client *c);

#endif
