// SPDX-License-Identifier: GPL-2.0-only
/*
 * txn.c - the committer thread, where big commits run.  Owns struct
 * commit_job (below) and the committer's queue and thread in struct tdbd
 * (d->commit_*, d->committer; txn.h).
 *
 * The owner (src/owner/txn.c) buffers a client's transactions and commits
 * them all or nothing; a commit of many changes (over TDBD_REQ_BUDGET, or
 * over 1 MiB: the owner's defer-ops and defer-bytes) it hands back
 * (struct tdbo_out.txn), and tdbd runs it here instead of on the client's
 * worker.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "tdbd.h"
#include "txn.h"
#include "worker.h"

/* --- big commits off the worker ------------------------------------------
 * A big commit runs on the committer thread instead of the client's
 * worker, so the worker goes
 * on serving its other clients meanwhile: a reader there does not wait
 * for another client's commit and its WAL write (a GET of a table the
 * commit changes still waits for it, through that table's seqcount).
 * The committing client has none of its requests read until the commit
 * is answered, so whatever it sends next sees the commit.
 *
 * A job belongs to the committer from tdbd_commit_async() until it is
 * done; then to the client's worker, which answers it (tdbd_commit_take)
 * and frees it.  A client that goes while its job runs orphans the job:
 * the committer frees it.  job->state is under d->commit_lock.
 */
enum { JOB_QUEUED, JOB_DONE, JOB_ORPHAN };

struct commit_job {
	struct commit_job *next;
	struct worker *w;               /* to wake when done */
	struct tdbo_txn *x;
	struct nlmsghdr req;            /* the TXN_COMMIT's header */
	enum chan ch;
	int state;
	int err;                        /* the commit's result */
	uint64_t lsn;
	const char *msg;
	char why[TDBO_TEXT];            /* msg, when the owner built it */
};

/* As the WAL's flusher does: only while the workers' eventfds exist. */
static void wake_worker(struct tdbd *d, struct worker *w)
{
	pthread_mutex_lock(&d->wake_lock);
	if (d->wake_on)
		tdbd_worker_wake(w);
	pthread_mutex_unlock(&d->wake_lock);
}

static void run_job(struct tdbd *d, struct commit_job *j)
{
	struct tdb_proto_extack ext = { 0 };
	struct worker *w;
	bool orphan;

	j->err = tdbo_txn_commit(j->x, &j->lsn, &ext);
	tdbo_txn_keep_msg(j->x, &ext, j->why);
	j->msg = ext.msg;
	tdbo_txn_free(j->x);
	j->x = NULL;
	/* Once it is DONE and the lock is let go, the worker may take the
	 * job and free it: nothing of j is read after the unlock. */
	pthread_mutex_lock(&d->commit_lock);
	orphan = j->state == JOB_ORPHAN;
	w = j->w;
	j->state = JOB_DONE;
	pthread_mutex_unlock(&d->commit_lock);
	if (orphan)
		free(j);
	else
		wake_worker(d, w);
}

static void *committer(void *arg)
{
	struct tdbd *d = arg;

	pthread_mutex_lock(&d->commit_lock);
	for (;;) {
		struct commit_job *j = d->commit_q;

		if (!j) {
			if (d->commit_stop)
				break;
			pthread_cond_wait(&d->commit_cv, &d->commit_lock);
			continue;
		}
		d->commit_q = j->next;
		if (!d->commit_q)
			d->commit_tail = NULL;
		pthread_mutex_unlock(&d->commit_lock);
		run_job(d, j);
		pthread_mutex_lock(&d->commit_lock);
	}
	pthread_mutex_unlock(&d->commit_lock);
	return NULL;
}

int tdbd_commit_start(struct tdbd *d)
{
	int err;

	pthread_mutex_init(&d->commit_lock, NULL);
	pthread_cond_init(&d->commit_cv, NULL);
	err = pthread_create(&d->committer, NULL, committer, d);
	if (err)
		return -err;
	d->committer_on = true;
	return 0;
}

void tdbd_commit_stop(struct tdbd *d)
{
	if (!d->committer_on)
		return;
	pthread_mutex_lock(&d->commit_lock);
	d->commit_stop = true;
	pthread_cond_signal(&d->commit_cv);
	pthread_mutex_unlock(&d->commit_lock);
	pthread_join(d->committer, NULL);       /* after the queue ran */
	d->committer_on = false;
	pthread_cond_destroy(&d->commit_cv);
	pthread_mutex_destroy(&d->commit_lock);
}

bool tdbd_commit_async(struct client *c, enum chan ch, struct tdbo_txn *x,
		       const struct nlmsghdr *req)
{
	struct tdbd *d = c->d;
	struct commit_job *j;

	if (!d->committer_on)
		return false;
	j = calloc(1, sizeof(*j));
	if (!j)
		return false;   /* commit it on the worker, then */
	j->w = c->w;
	j->x = x;
	j->req = *req;
	j->ch = ch;
	j->state = JOB_QUEUED;
	c->commit = j;
	pthread_mutex_lock(&d->commit_lock);
	if (d->commit_tail)
		d->commit_tail->next = j;
	else
		d->commit_q = j;
	d->commit_tail = j;
	pthread_cond_signal(&d->commit_cv);
	pthread_mutex_unlock(&d->commit_lock);
	return true;
}

bool tdbd_commit_take(struct client *c, int *err, uint64_t *lsn,
		      const char **msg, char *keep, struct nlmsghdr *req,
		      enum chan *ch)
{
	struct commit_job *j = c->commit;
	bool done;

	pthread_mutex_lock(&c->d->commit_lock);
	done = j->state == JOB_DONE;
	pthread_mutex_unlock(&c->d->commit_lock);
	if (!done)
		return false;
	*err = j->err;
	*lsn = j->lsn;
	*msg = j->msg;
	if (j->msg == j->why) {         /* built in j: outlive it */
		memcpy(keep, j->why, TDBO_TEXT);
		*msg = keep;
	}
	*req = j->req;
	*ch = j->ch;
	c->commit = NULL;
	free(j);
	return true;
}

void tdbd_commit_orphan(struct client *c)
{
	struct commit_job *j = c->commit;
	bool done;

	if (!j)
		return;
	c->commit = NULL;
	pthread_mutex_lock(&c->d->commit_lock);
	done = j->state == JOB_DONE;
	if (!done)
		j->state = JOB_ORPHAN;
	pthread_mutex_unlock(&c->d->commit_lock);
	if (done)
		free(j);
}
