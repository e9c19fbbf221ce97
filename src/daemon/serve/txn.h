/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * txn.h - the committer thread, where big commits run (txn.c, which
 * owns struct commit_job and the queue in struct tdbd: d->commit_*).
 * Big commits (the owner hands them back: struct tdbo_out.txn) run on
 * the committer thread, not on the client's worker.  Started before the
 * workers, stopped after them (worker.c's start and stop).
 *
 * Invariant: a job is the committer's from tdbd_commit_async until it is
 * done, then its client's worker's (tdbd_commit_take frees it); a client
 * that goes first orphans it (tdbd_commit_orphan: freed there if it is
 * done, else by the committer).  While c->commit is set none of c's
 * requests are read.
 */
#ifndef TDBD_TXN_H
#define TDBD_TXN_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"             /* enum chan */

struct tdbd;
struct tdbo_txn;
struct nlmsghdr;

int tdbd_commit_start(struct tdbd *d);
void tdbd_commit_stop(struct tdbd *d);
/* Hand x (the job frees it) to the committer: true, and c->commit is
 * set until the worker takes the result; false: commit it here. */
bool tdbd_commit_async(struct client *c, enum chan ch, struct tdbo_txn *x,
		       const struct nlmsghdr *req);
/* The result of c->commit if it is done (true; c->commit cleared). */
bool tdbd_commit_take(struct client *c, int *err, uint64_t *lsn,
		      const char **msg, char *keep, struct nlmsghdr *req,
		      enum chan *ch);
/* The client goes: its job (if any) is the committer's to free. */
void tdbd_commit_orphan(struct client *c);

#endif
