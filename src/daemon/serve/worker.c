// SPDX-License-Identifier: GPL-2.0-only
/*
 * worker.c - the worker threads: each serves the rings and sockets of the
 * clients handed to it, round after round.  Owns struct worker
 * (worker.h) and struct uid_share (below).
 *
 * A round visits every client once: it flushes an answer left in the
 * stash, runs the ring requests left pending (a batch of GETs whose
 * replies found no room: exec.c), moves the client's dumps on, and takes
 * new requests from its submission ring (its consecutive GETs served
 * together) and its socket within its turn of its uid's share (what is
 * left stays buffered, and the worker does not sleep while it waits).
 *
 * Shares.  The worker keeps its clients by uid (struct uid_share).  A
 * round gives each uid TDBD_REQ_BUDGET new requests from rings and as
 * many from sockets, spread over that uid's connections from a rotating
 * start: each takes at most its turn (TDBD_REQ_BUDGET over the uid's
 * connections, at least TDBD_REQ_MIN_TURN) while the share lasts, and
 * the next round starts at the first connection the share ran short
 * for.  So a uid with 60 connections gets no more of a round than a
 * uid with one, and its connections take turns (fair per connection
 * within a uid, over a few rounds).  Answers (stash, held acks, dumps'
 * parts, publishing) are not new work: every client gets them every
 * round.  The acks a uid's connections may hold for the WAL are shared
 * the same way (TDBD_HELD_MAX, and TDBD_HELD_BYTES once it has two or
 * more, over its connections: share_held_max), so many connections
 * cannot make every sync, which everyone's acks wait for, carry more
 * than that.  Shares are per worker (workers
 * = N: a uid whose connections are on every worker has a share of
 * each).
 * Completions are published once per client per round (one wake-up at
 * most).  When a round finds nothing, the worker polls for idle-spin
 * microseconds, then arms every submission ring's waiting flag and
 * sleeps in epoll on the clients' eventfds, sockets and pidfds.
 *
 * A client that leaves its completions undrained (the stash or a dump
 * waiting for room) is "blocked": we read none of its requests, and after
 * client-deadline it is disconnected.  Nobody else waits for it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "client.h"
#include "durable/durable.h"   /* tdbd_log_write */
#include "exec.h"
#include "notify.h"
#include "sigbus.h"
#include "tdbd.h"
#include "txn.h"
#include "worker.h"

#define SLEEP_MS     100        /* longest sleep: heartbeat, deadlines */
#define BLOCKED_MS   1          /* sleep while someone is blocked */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

/* epoll tags in the low bits of the client pointer */
enum { T_SOCK = 0, T_PIDFD = 1, T_EVFD = 2 };

static void *tag(struct client *c, unsigned int t)
{
	return (void *)((uintptr_t)c | t);
}

static int ep_add(struct worker *w, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* --- shares: the clients of one uid ----------------------------------- */

struct uid_share {
	uid_t uid;
	unsigned int slot;      /* index in w->shares */
	struct client **v;      /* its clients on this worker */
	unsigned int n, cap;
	unsigned int rot;       /* where its next round starts in v */
};

static struct uid_share *share_find(struct worker *w, uid_t uid)
{
	unsigned int i;

	for (i = 0; i < w->nshares; i++)
		if (w->shares[i]->uid == uid)
			return w->shares[i];
	return NULL;
}

static struct uid_share *share_new(struct worker *w, uid_t uid)
{
	struct uid_share *s;

	if (w->nshares == w->shares_cap) {
		unsigned int cap = w->shares_cap ? w->shares_cap * 2 : 8;
		struct uid_share **v = realloc(w->shares, cap * sizeof(*v));

		if (!v)
			return NULL;
		w->shares = v;
		w->shares_cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->uid = uid;
	s->slot = w->nshares;
	w->shares[w->nshares++] = s;
	return s;
}

static void share_free(struct worker *w, struct uid_share *s)
{
	w->shares[s->slot] = w->shares[--w->nshares];
	w->shares[s->slot]->slot = s->slot;
	free(s->v);
	free(s);
}

/* Each client of s may hold TDBD_HELD_MAX / s->n acks for the WAL (at
 * least a round's budget) and, when s has more than one, TDBD_HELD_BYTES
 * / s->n of their requests' bytes (at least TDBD_HELD_BYTES_MIN); a
 * lone connection is bounded by its count only, as before (worker.h). */
static void share_held_max(struct uid_share *s)
{
	unsigned int i, n = s->n ? s->n : 1, max = TDBD_HELD_MAX / n;
	size_t bytes = n > 1 ? TDBD_HELD_BYTES / n : SIZE_MAX;

	if (max < TDBD_REQ_BUDGET)
		max = TDBD_REQ_BUDGET;
	if (bytes < TDBD_HELD_BYTES_MIN)
		bytes = TDBD_HELD_BYTES_MIN;
	for (i = 0; i < s->n; i++) {
		s->v[i]->sv.held_max = max;
		s->v[i]->sv.held_bytes_max = bytes;
	}
}

/* c joins its uid's share (made on its first client): 0 or -ENOMEM. */
static int share_join(struct worker *w, struct client *c)
{
	struct uid_share *s = share_find(w, c->cr.uid);

	if (!s && !(s = share_new(w, c->cr.uid)))
		return -ENOMEM;
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 4;
		struct client **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			if (!s->n)
				share_free(w, s);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	c->share = s;
	c->share_slot = s->n;
	s->v[s->n++] = c;
	share_held_max(s);
	return 0;
}

static void share_leave(struct worker *w, struct client *c)
{
	struct uid_share *s = c->share;

	if (!s)
		return;
	s->v[c->share_slot] = s->v[--s->n];
	s->v[c->share_slot]->share_slot = c->share_slot;
	c->share = NULL;
	if (!s->n) {
		share_free(w, s);
		return;
	}
	if (s->rot >= s->n)
		s->rot = 0;
	share_held_max(s);
}

/* --- clients in and out ------------------------------------------------ */

static void take_inbox(struct worker *w)
{
	struct client **in;
	unsigned int n, i;

	pthread_mutex_lock(&w->inbox_lock);
	in = w->inbox;
	n = w->ninbox;
	w->inbox = NULL;
	w->ninbox = w->inbox_cap = 0;
	pthread_mutex_unlock(&w->inbox_lock);
	for (i = 0; i < n; i++) {
		struct client *c = in[i];

		if (w->nclients == w->cap) {
			unsigned int cap = w->cap ? w->cap * 2 : 16;
			struct client **v = realloc(w->clients,
						    cap * sizeof(*v));

			if (!v) {
				tdbd_log(L_ERR, "worker %u: out of memory "
					 "taking a client", w->id);
				tdbd_client_free(c);
				continue;
			}
			w->clients = v;
			w->cap = cap;
		}
		tdbd_serve_init(c);     /* its owner client is set now */
		if (share_join(w, c)) {
			tdbd_log(L_ERR, "worker %u: out of memory taking a "
				 "client", w->id);
			tdbd_client_free(c);
			continue;
		}
		c->w = w;
		c->slot = w->nclients;
		w->clients[w->nclients++] = c;
		c->ep_events = EPOLLIN | EPOLLRDHUP;
		if (ep_add(w, c->sock, c->ep_events, tag(c, T_SOCK)) ||
		    (c->pidfd >= 0 &&
		     ep_add(w, c->pidfd, EPOLLIN, tag(c, T_PIDFD)))) {
			c->dead = true;
			c->why = "epoll failed";
		}
	}
	free(in);
}

static void drop_client(struct worker *w, struct client *c)
{
	unsigned int ntx = tdbo_client_txns(c->oc);
	unsigned int nwa = tdbo_client_watches(c->oc);

	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->sock, NULL);
	if (c->pidfd >= 0)
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->pidfd, NULL);
	if (c->evfd >= 0)
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->evfd, NULL);
	tdbd_log_rl(RL_CLIENT,
		    c->why && strcmp(c->why, "hang-up") ? L_NOTICE : L_DEBUG,
		    "client %llu (pid %d, uid %u) gone: %s; aborted %u "
		    "transaction(s), dropped %u watch(es)",
		    (unsigned long long)c->id, (int)c->cr.pid,
		    (unsigned int)c->cr.uid, c->why ? c->why : "closed", ntx,
		    nwa);
	w->clients[c->slot] = w->clients[--w->nclients];
	w->clients[c->slot]->slot = c->slot;
	share_leave(w, c);
	tdbd_client_free(c);
}

static void reap_dead(struct worker *w)
{
	unsigned int i = w->nclients;

	while (i--)
		if (w->clients[i]->dead)
			drop_client(w, w->clients[i]);
}

/* --- serving ----------------------------------------------------------- */

static int on_ring_msg(void *arg, const struct nlmsghdr *nlh)
{
	struct client *c = arg;

	/* Stopping: a message that starts at or after the index of
	 * SIGTERM was sent after it; it gets no answer (pos is already
	 * past this message here). */
	if (c->draining && (int64_t)(c->sub.pos - NLMSG_ALIGN(nlh->nlmsg_len) -
				     c->drain_to) >= 0)
		return -ECANCELED;
	c->r_taken++;
	tdbd_ring_msg(c, nlh);
	/* Stop taking requests once an answer has nowhere to go, or too
	 * many wait for the disk. */
	return c->stash_len || c->pend_len || c->dead || tdbo_conn_held_full(&c->sv) ||
	       c->commit ? -EAGAIN : 0;
}

static bool flush_stash(struct client *c)
{
	size_t off = 0;

	while (off < c->stash_len) {
		const struct nlmsghdr *nh =
			(const struct nlmsghdr *)(c->stash + off);
		void *p = tdb_ring_reserve(&c->comp, nh->nlmsg_len);

		if (!p)
			break;
		memcpy(p, nh, nh->nlmsg_len);
		tdb_ring_commit(&c->comp, nh->nlmsg_len);
		c->comp_dirty = true;
		off += NLMSG_ALIGN(nh->nlmsg_len);
	}
	memmove(c->stash, c->stash + off, c->stash_len - off);
	c->stash_len -= off;
	return c->stash_len == 0;
}

/* The clock, read at most once per round (it is not free: a vDSO call
 * per client per round showed up as a quarter of a busy worker). */
static uint64_t round_now(uint64_t *now)
{
	if (!*now)
		*now = tdbd_now_ns();
	return *now;
}

/*
 * A client is blocked while answers wait for it (stash, a dump with no
 * room, socket output not taken).  The deadline counts from the last
 * time it took anything: a slow reader that keeps draining is throttled
 * but never cut off; one that takes nothing for client-deadline is.
 */
static void set_blocked(struct client *c, bool blocked, bool progress,
			uint64_t *nowp)
{
	struct tdbd *d = c->d;
	uint64_t now, limit;

	if (!blocked && !c->blocked_since)
		return;
	now = round_now(nowp);
	if (!blocked) {
		c->blocked_since = 0;
		__atomic_fetch_sub(&d->ctr.throttled, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!c->blocked_since)
		__atomic_fetch_add(&d->ctr.throttled, 1, __ATOMIC_RELAXED);
	if (!c->blocked_since || progress)
		c->blocked_since = now;
	limit = (uint64_t)__atomic_load_n(&d->cfg.client_deadline_ms,
					  __ATOMIC_RELAXED) * 1000000;
	if (now - c->blocked_since > limit) {
		c->dead = true;
		c->why = "stuck: took none of its answers for client-deadline";
		__atomic_fetch_add(&d->ctr.stuck, 1, __ATOMIC_RELAXED);
	}
}

/* A read that ran ATTACH (here or in on_event): the worker's epoll
 * watches the submission ring's eventfd from now on. */
static void watch_evfd(struct client *c, bool was_attached)
{
	if (!was_attached && c->attached && !c->dead &&
	    ep_add(c->w, c->evfd, EPOLLIN, tag(c, T_EVFD))) {
		c->dead = true;
		c->why = "epoll failed";
	}
}

/*
 * One client's share of a round, in two halves: serve_in runs its
 * requests (their answers go into its completion ring, unpublished, or
 * its socket buffer, unsent; a change's answer is held for its WAL
 * record), then the round writes the WAL once for all its clients
 * (tdbd_log_write), then serve_out releases the held answers whose
 * records are written (or durable) and publishes everything.  So no
 * answer goes out before its change's record is in the WAL's file, and
 * a round costs one WAL write however many changes it ran.
 * Both return the work done.  serve_in takes at most ring_turn new
 * requests from the submission ring and sock_turn from the socket (its
 * turn of its uid's share); c->r_taken and the socket's count say how
 * many it took.
 */
static unsigned int serve_in(struct client *c, unsigned int ring_turn,
			     unsigned int sock_turn, unsigned int *sock_taken)
{
	unsigned int done = 0;
	int rc;

	c->r_taken = 0;
	*sock_taken = 0;
	c->r_blocked = false;
	c->r_sent = c->sent;
	c->r_cons = c->attached ? c->comp.other : 0;
	if (c->dead)
		return 0;
	if (c->commit && tdbd_commit_answer(c)) {
		done++;
		tdbd_client_update_out(c);
	}
	if (c->stash_len && !flush_stash(c))
		c->r_blocked = true;
	if (c->pend_len && !c->stash_len)
		done += tdbd_pend_run(c);
	/* Socket requests left by the last round's budget, or held back
	 * while its answers backed up: run them once there is room. */
	c->in_budget = sock_turn;
	if (sock_turn && tdbd_client_in_ready(c)) {
		bool was = c->attached;

		rc = tdbd_client_read(c);
		watch_evfd(c, was);
		if (rc < 0) {
			c->in_budget = 0;
			c->dead = true;
			return done;
		}
		done += (unsigned int)rc;
		*sock_taken = (unsigned int)rc;
	}
	/* Reads between rounds (on_event) buffer; they run in the next
	 * round's turn, within its uid's share. */
	c->in_budget = 0;
	if (tdbo_conn_ndumps(&c->sv)) {
		done += tdbo_conn_dumps_run(&c->sv, &c->r_blocked);
		if (c->dead)
			return done;
	}
	if (c->attached && ring_turn && !c->stash_len && !c->pend_len &&
	    !tdbo_conn_held_full(&c->sv) && !c->commit) {
		rc = tdb_ring_consume(&c->sub, ring_turn, on_ring_msg, c);
		tdbd_ring_flush(c);     /* the round's last GETs */
		if (rc == -EPROTO) {
			tdbd_client_violation(c, tdb_ring_error(&c->sub));
		} else if (rc > 0) {
			done += (unsigned int)rc;
		} else if (rc == -EAGAIN) {
			done++;
		}
	}
	return done;
}

static unsigned int serve_out(struct client *c, uint64_t *now)
{
	unsigned int done = 0;
	bool progress;

	if (c->dead)
		return 0;
	if (tdbo_conn_nheld(&c->sv)) {
		unsigned int n = tdbo_conn_release(&c->sv);

		done += n;
		if (n)
			tdbd_client_update_out(c);      /* EPOLLIN again? */
	}
	if (c->comp_dirty) {
		c->comp_dirty = false;
		if (tdb_ring_publish(&c->comp) == -EPROTO)
			tdbd_client_violation(c, tdb_ring_error(&c->comp));
	}
	/* A completion ring found broken while only asking for room (a
	 * dump's pacing, tdbd_client_room) is a violation too, not a
	 * client that merely stopped reading. */
	if (c->attached && (c->comp.dead || c->sub.dead))
		tdbd_client_violation(c, tdb_ring_error(c->comp.dead ?
						       &c->comp : &c->sub));
	if (c->out_len > c->out_off && tdbd_client_flush(c))
		c->dead = true;
	if (c->attached && !c->dead &&
	    (tdbd_sigbus_hit(c->sub_shm.guard) ||
	     tdbd_sigbus_hit(c->comp_shm.guard))) {
		tdbd_client_violation(c, TDBD_WHY_SIGBUS);
		return done;
	}
	if (c->stash_len || c->out_len > c->out_off)
		c->r_blocked = true;
	/* progress: the client took socket bytes or completion space */
	progress = c->sent != c->r_sent ||
		   (c->attached && c->comp.other != c->r_cons);
	set_blocked(c, c->r_blocked, progress, now);
	return done;
}

static void on_event(struct worker *w, struct epoll_event *ev)
{
	uintptr_t p = (uintptr_t)ev->data.ptr;
	struct client *c = (struct client *)(p & ~(uintptr_t)3);
	uint64_t cnt;

	if (!c) {               /* our control eventfd */
		if (read(w->ctlfd, &cnt, sizeof(cnt)) < 0)
			(void)0;
		return;
	}
	if (c->dead)
		return;
	switch (p & 3) {
	case T_EVFD:
		if (read(c->evfd, &cnt, sizeof(cnt)) < 0)
			(void)0;        /* EAGAIN: someone read it */
		return;
	case T_PIDFD:
		c->dead = true;
		c->why = "the client process exited";
		return;
	}
	if (ev->events & EPOLLOUT && tdbd_client_flush(c))
		c->dead = true;
	/* After a flush, requests already buffered may run again. */
	if (!c->dead && ev->events & (EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLERR |
				      EPOLLRDHUP)) {
		bool was = c->attached;

		if (tdbd_client_read(c) < 0)
			c->dead = true;
		watch_evfd(c, was);
	}
}

static unsigned int poll_events(struct worker *w, int timeout_ms)
{
	struct epoll_event ev[64];
	int n, i;

	n = epoll_wait(w->epfd, ev, 64, timeout_ms);
	for (i = 0; i < n; i++)
		on_event(w, &ev[i]);
	return n > 0 ? (unsigned int)n : 0;
}

/* Say we sleep on every ring; false if one has work after all (in its
 * ring, or socket requests the budget left buffered). */
static bool arm_all(struct worker *w)
{
	unsigned int i;

	for (i = 0; i < w->nclients; i++) {
		struct client *c = w->clients[i];

		if (tdbd_client_in_ready(c))
			return false;
		if (c->pend_len && !c->stash_len && !c->commit)
			return false;
		if (c->attached && !c->dead && !c->stash_len && !c->commit &&
		    tdb_ring_wait(&c->sub, 0) != -ETIMEDOUT)
			return false;
	}
	return true;
}

static bool anyone_blocked(struct worker *w)
{
	unsigned int i;

	for (i = 0; i < w->nclients; i++)
		if (w->clients[i]->blocked_since ||
		    tdbo_conn_ndumps(&w->clients[i]->sv))
			return true;
	return false;
}

static unsigned int min_u(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

/*
 * The first half of a round for the clients of one uid: each gets its
 * turn (TDBD_REQ_BUDGET over their number, at least TDBD_REQ_MIN_TURN)
 * from what is left of the uid's share, from s->rot on; the next round
 * starts at the first client the share ran short for (else one on).
 */
static unsigned int serve_share(struct uid_share *s)
{
	unsigned int ring = TDBD_REQ_BUDGET, sock = TDBD_REQ_BUDGET;
	unsigned int turn = TDBD_REQ_BUDGET / s->n, n = s->n, j, done = 0;
	unsigned int next = n;

	if (turn < TDBD_REQ_MIN_TURN)
		turn = TDBD_REQ_MIN_TURN;
	for (j = 0; j < n; j++) {
		unsigned int k = (s->rot + j) % n, taken;
		struct client *c = s->v[k];

		if (next == n && (ring < turn || sock < turn))
			next = k;
		done += serve_in(c, min_u(ring, turn), min_u(sock, turn),
				 &taken);
		ring -= min_u(ring, c->r_taken);
		sock -= min_u(sock, taken);
	}
	s->rot = next < n ? next : (s->rot + 1) % n;
	return done;
}

static unsigned int round_once(struct worker *w)
{
	uint64_t now = 0;
	unsigned int i, done = 0;

	for (i = 0; i < w->nshares; i++)
		done += serve_share(w->shares[i]);
	tdbd_log_write(w->d);
	for (i = 0; i < w->nclients; i++)
		done += serve_out(w->clients[i], &now);
	reap_dead(w);
	if (now)
		__atomic_store_n(&w->heartbeat, now, __ATOMIC_RELAXED);
	return done;
}

/* Has every client been answered all it sent before SIGTERM? */
static bool drained(struct worker *w)
{
	unsigned int i;

	for (i = 0; i < w->nclients; i++) {
		struct client *c = w->clients[i];

		if (c->dead)
			continue;
		if (c->blocked_since)   /* not taking answers: not waited for */
			continue;
		if (c->out_len > c->out_off || c->stash_len || c->pend_len ||
		    c->drain_sock || tdbo_conn_ndumps(&c->sv) ||
		    tdbo_conn_nheld(&c->sv) || c->commit ||
		    tdbd_client_in_ready(c))
			return false;
		if (c->attached && (int64_t)(c->sub.pos - c->drain_to) < 0)
			return false;
	}
	return true;
}

/*
 * SIGTERM: answer what the clients already sent (rings and sockets),
 * send those answers, then let the clients go.  Bounded: a client that
 * does not take its answers is not waited for beyond 2 s.
 */
static void drain_and_close(struct worker *w)
{
	uint64_t until = tdbd_now_ns() + 2000000000ull;
	unsigned int i, quiet = 0;

	for (i = 0; i < w->nclients; i++) {
		struct client *c = w->clients[i];
		int avail = 0;
		long r = c->attached ? tdb_ring_pending(&c->sub) : 0;

		if (ioctl(c->sock, FIONREAD, &avail) < 0 || avail < 0)
			avail = 0;
		c->drain_to = c->sub.pos + (r > 0 ? (uint64_t)r : 0);
		c->drain_sock = (size_t)avail;
		c->draining = true;
	}
	while (quiet < 3 && tdbd_now_ns() < until) {
		poll_events(w, 1);
		round_once(w);
		quiet = drained(w) ? quiet + 1 : 0;
	}
	for (i = 0; i < w->nclients; i++) {
		w->clients[i]->dead = true;
		w->clients[i]->why = "tdbd is stopping";
	}
	reap_dead(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct tdbd *d = w->d;
	uint64_t last_work = tdbd_now_ns();
	unsigned int rounds = 0;
	bool busy = false;

	while (!__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
		uint64_t now;

		if (__atomic_load_n(&w->ninbox, __ATOMIC_RELAXED))
			take_inbox(w);
		if (round_once(w)) {
			busy = true;
			if (++rounds % 64 == 0) {
				poll_events(w, 0);
				__atomic_store_n(&w->heartbeat, tdbd_now_ns(),
						 __ATOMIC_RELAXED);
			}
			continue;
		}
		/* Idle: poll for idle-spin, reading the clock now and then. */
		if (busy) {
			busy = false;
			last_work = tdbd_now_ns();
		}
		if (++rounds % 32) {
			cpu_relax();
			continue;
		}
		now = tdbd_now_ns();
		__atomic_store_n(&w->heartbeat, now, __ATOMIC_RELAXED);
		if (now - last_work < (uint64_t)d->cfg.idle_spin_us * 1000) {
			if (rounds % 64 == 0)
				poll_events(w, 0);
			continue;
		}
		if (!arm_all(w))
			continue;
		poll_events(w, anyone_blocked(w) ? BLOCKED_MS : SLEEP_MS);
		last_work = tdbd_now_ns();
		__atomic_store_n(&w->heartbeat, last_work, __ATOMIC_RELAXED);
	}
	take_inbox(w);
	drain_and_close(w);
	return NULL;
}

/* --- start, stop, hand-over ------------------------------------------------ */

int tdbd_workers_start(struct tdbd *d)
{
	unsigned int i;
	int err0;

	if ((err0 = tdbd_commit_start(d)))
		return err0;
	d->nworkers = d->cfg.workers;
	d->workers = calloc(d->nworkers, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	for (i = 0; i < d->nworkers; i++) {
		struct worker *w = &d->workers[i];
		int err;

		w->d = d;
		w->id = i;
		pthread_mutex_init(&w->inbox_lock, NULL);
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->ctlfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		w->scratch = malloc(TDB_PROTO_MSG_MAX);
		w->gets = calloc(1, sizeof(*w->gets));
		if (w->epfd < 0 || w->ctlfd < 0 || !w->scratch || !w->gets)
			return -ENOMEM;
		if ((err = ep_add(w, w->ctlfd, EPOLLIN, NULL)))
			return err;
		w->heartbeat = tdbd_now_ns();
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err)
			return -err;
	}
	pthread_mutex_lock(&d->wake_lock);
	d->wake_on = true;
	pthread_mutex_unlock(&d->wake_lock);
	return 0;
}

void tdbd_workers_stop(struct tdbd *d)
{
	unsigned int i;

	__atomic_store_n(&d->stopping, 1, __ATOMIC_RELEASE);
	for (i = 0; i < d->nworkers; i++)
		tdbd_worker_wake(&d->workers[i]);
	for (i = 0; i < d->nworkers; i++)
		if (d->workers[i].thread)
			pthread_join(d->workers[i].thread, NULL);
	/* the WAL's flusher must not write to ctlfds closed below */
	pthread_mutex_lock(&d->wake_lock);
	d->wake_on = false;
	pthread_mutex_unlock(&d->wake_lock);
	tdbd_commit_stop(d);    /* runs what is queued; wakes nobody now */
	for (i = 0; i < d->nworkers; i++) {
		struct worker *w = &d->workers[i];

		close(w->epfd);
		close(w->ctlfd);
		free(w->scratch);
		free(w->gets);
		free(w->clients);
		free(w->shares);        /* empty: every client is gone */
		free(w->inbox);
		pthread_mutex_destroy(&w->inbox_lock);
	}
	free(d->workers);
	d->workers = NULL;
}

void tdbd_worker_hand(struct tdbd *d, struct client *c)
{
	struct worker *w = &d->workers[0];
	unsigned int i;

	for (i = 1; i < d->nworkers; i++)
		if (d->workers[i].nclients < w->nclients)
			w = &d->workers[i];
	pthread_mutex_lock(&w->inbox_lock);
	if (w->ninbox == w->inbox_cap) {
		unsigned int cap = w->inbox_cap ? w->inbox_cap * 2 : 8;
		struct client **v = realloc(w->inbox, cap * sizeof(*v));

		if (!v) {
			pthread_mutex_unlock(&w->inbox_lock);
			tdbd_client_free(c);
			return;
		}
		w->inbox = v;
		w->inbox_cap = cap;
	}
	w->inbox[w->ninbox++] = c;
	pthread_mutex_unlock(&w->inbox_lock);
	tdbd_worker_wake(w);
}

void tdbd_worker_wake(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->ctlfd, &one, sizeof(one)) < 0)
		(void)0;        /* EAGAIN: a wake-up is pending already */
}
