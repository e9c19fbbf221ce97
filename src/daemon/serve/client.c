// SPDX-License-Identifier: GPL-2.0-only
/*
 * client.c - one client of tdbd: its rings in memfds, its socket (the
 * slow path and the control channel), where its answers go, and what is
 * undone when it leaves.  Owns struct client, struct creds and struct
 * shm_ring (client.h), and makes a connection's owner client
 * (tdbd_owner_client, with the owner's wake-up of a watcher).
 *
 * Invariants:
 *  - Only the client's worker touches a struct client after hand-over.
 *  - Memfds passed to a client are sealed against shrinking and growing
 *    before they are passed, so the client cannot make our mappings fault
 *    (SIGBUS) by truncating them.  We map the data a client writes
 *    (its submission ring) read-only: nothing we read there is trusted
 *    beyond what tdb_ring_consume checks.
 *  - Every request gets exactly one answer, on the channel it came in
 *    on.  An answer that finds the completion ring full waits in the
 *    stash (one at most, but a batch's errors: exec.c); while something
 *    waits, the client's requests are not read (it has stopped
 *    draining; it only stops itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/magic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client.h"
#include "durable/durable.h"   /* tdbd_log_write */
#include "exec.h"
#include "notify.h"
#include "sigbus.h"
#include "tdbd.h"
#include "txn.h"
#include "worker.h"

#define HUGE_SPAN  (2u << 20)
#define OUT_MAX    (4u << 20)   /* socket output queued before blocking */

/* --- memfd rings ----------------------------------------------------- */

static void shm_ring_free(struct shm_ring *r)
{
	tdbd_sigbus_unguard(r->guard);
	r->guard = -1;
	if (r->map && r->map != MAP_FAILED)
		munmap(r->map, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	r->map = NULL;
	r->fd = -1;
}

static int shm_try(const char *name, uint32_t kind, uint32_t data_size,
		   bool huge, unsigned int seals, struct shm_ring *r)
{
	unsigned int fl = MFD_CLOEXEC | MFD_ALLOW_SEALING |
			  (huge ? MFD_HUGETLB : 0);
	int err;

	r->guard = -1;
	r->span = huge ? HUGE_SPAN : TDB_RING_HDR_SIZE;
	r->data_size = data_size;
	r->map_size = r->span + data_size;
	r->map = MAP_FAILED;
	r->fd = memfd_create(name, fl);
	if (r->fd < 0)
		return -errno;
	if (ftruncate(r->fd, (off_t)r->map_size) < 0)
		goto fail;
	r->map = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      r->fd, 0);
	if (r->map == MAP_FAILED)
		goto fail;
	err = tdb_ring_format(r->map, kind, data_size, 0);
	if (err) {
		errno = -err;
		goto fail;
	}
	if (fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | seals |
		  F_SEAL_SEAL) < 0)
		goto fail;
	return 0;
fail:
	err = -errno;
	shm_ring_free(r);
	return err;
}

/* A ring in a sealed memfd, on hugepages while they work.  seals: added
 * to F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL (a feed adds
 * F_SEAL_FUTURE_WRITE: after our own mapping, nobody can map it
 * writable, not even through a re-open of /proc/self/fd/N). */
static int shm_ring(struct tdbd *d, const char *name, uint32_t kind,
		    uint32_t data_size, unsigned int seals,
		    struct shm_ring *out)
{
	int err;

	if (d->cfg.hugepages &&
	    __atomic_load_n(&d->hugepages_ok, __ATOMIC_RELAXED)) {
		err = shm_try(name, kind, data_size, true, seals, out);
		if (!err)
			return 0;
		/* Say it once; then stop trying. */
		if (__atomic_exchange_n(&d->hugepages_ok, false,
					__ATOMIC_RELAXED))
			tdbd_log(L_NOTICE, "rings: hugetlb memfd failed (%s); "
				 "using 4 KiB pages from now on",
				 strerror(-err));
	}
	return shm_try(name, kind, data_size, false, seals, out);
}

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* --- life ------------------------------------------------------------ */

struct client *tdbd_client_new(struct tdbd *d, int sock,
			       const struct creds *cr, struct tdbo_client *oc)
{
	struct client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->d = d;
	c->oc = oc;
	c->sock = sock;
	c->cr = *cr;
	c->evfd = -1;
	c->comp_evfd = -1;
	c->sub_shm.fd = c->comp_shm.fd = -1;
	c->sub_shm.guard = c->comp_shm.guard = -1;
	c->id = __atomic_add_fetch(&d->next_client, 1, __ATOMIC_RELAXED);
	c->pidfd = pidfd_open(cr->pid);   /* -1 is fine: hang-up still works */
	return c;
}

struct tdbo_client *tdbd_owner_client(struct tdbd *d, const struct creds *cr,
				      struct client *c, int *err)
{
	uint32_t groups[64];
	struct tdbo_cred oc = {
		.uid = cr->uid, .gid = cr->gid, .ngroups = cr->ngroups,
		.groups = groups,
	};
	unsigned int i;

	for (i = 0; i < cr->ngroups && i < 64; i++)
		groups[i] = cr->groups[i];
	return tdbo_client_new(d->o, &oc, true, tdbd_client_feed_wake, c,
			       err);
}

/* Free what ATTACH made (a half-made one too: nothing of a failed ATTACH
 * may outlive the call; a client's rings at its clean-up). */
static void attach_undo(struct client *c)
{
	tdb_ring_detach(&c->sub);
	tdb_ring_detach(&c->comp);
	shm_ring_free(&c->sub_shm);
	shm_ring_free(&c->comp_shm);
	if (c->evfd >= 0)
		close(c->evfd);
	c->evfd = -1;
	if (c->comp_evfd >= 0)
		close(c->comp_evfd);
	c->comp_evfd = -1;
}

/*
 * Watches: the owner calls this once per flush of a feed c watches,
 * after the publish (tdbo_client_new's wake; under the table's write
 * lock, so c and its rings stay while it runs: the owner drops c's
 * watches in tdbo_client_free, before attach_undo).  The feed's readers
 * cannot say that they sleep (they map it read-only), so a client in an
 * event loop says it in its completion ring's header, which it may
 * write: TDB_RING_F_EVENTFD (tdbc_fd) and TDB_RING_F_CONS_WAITING (it
 * found nothing and waits); it then looks at its feeds.  Publish, full
 * barrier, flags here; flag, full barrier, feeds there: one of us sees
 * the other.  A writer pays a load per watching client that does not
 * wait, and a wake-up per one that does, once until it waits again.
 */
void tdbd_client_feed_wake(void *arg)
{
	struct client *c = arg;
	struct tdb_ring_hdr *h;
	uint64_t one = 1;

	/* ATTACH stores attached (release) after the ring and eventfd */
	if (!__atomic_load_n(&c->attached, __ATOMIC_ACQUIRE))
		return;
	h = c->comp.hdr;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if ((__atomic_load_n(&h->flags, __ATOMIC_RELAXED) &
	     (TDB_RING_F_CONS_WAITING | TDB_RING_F_EVENTFD)) !=
	    (TDB_RING_F_CONS_WAITING | TDB_RING_F_EVENTFD))
		return;
	__atomic_fetch_and(&h->flags, ~TDB_RING_F_CONS_WAITING,
			   __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&h->futex, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &h->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	/* full: a wake-up is pending already, which is all it says */
	if (write(c->comp_evfd, &one, sizeof(one)) < 0)
		return;
}

/*
 * The completion ring's wake op: the futex (a client blocked in a call)
 * and, when the client set TDB_RING_F_EVENTFD (it uses tdbc_fd),
 * comp_evfd too: it sets TDB_RING_F_CONS_WAITING for either wait.
 * Other clients cost no more than before.  The flag is the client's
 * word: a lie costs it only its own wake-ups.
 */
static int comp_wake(struct tdb_ring *r, uint32_t flag)
{
	struct client *c = (struct client *)((unsigned char *)r -
					     offsetof(struct client, comp));
	uint64_t one = 1;
	int ret = tdb_ring_user_ops.wake(r, flag);

	if (flag == TDB_RING_F_CONS_WAITING && c->comp_evfd >= 0 &&
	    (__atomic_load_n(&r->hdr->flags, __ATOMIC_RELAXED) &
	     TDB_RING_F_EVENTFD) &&
	    write(c->comp_evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	return ret;
}

static const struct tdb_ring_ops comp_ops = { .wake = comp_wake };

/* Make the rings and the eventfd, our mappings and the guards. */
static int attach_make(struct client *c)
{
	struct tdbd *d = c->d;
	char name[64];
	int err;

	snprintf(name, sizeof(name), "tdb-sub:%llu",
		 (unsigned long long)c->id);
	err = shm_ring(d, name, TDB_RING_SUBMIT, d->cfg.ring_size, 0,
			    &c->sub_shm);
	if (err)
		return err;
	snprintf(name, sizeof(name), "tdb-comp:%llu",
		 (unsigned long long)c->id);
	err = shm_ring(d, name, TDB_RING_COMPLETE, d->cfg.ring_size, 0,
			    &c->comp_shm);
	if (err)
		return err;
	/* The client can punch holes in these memfds: a SIGBUS there must
	 * cost it its connection, not kill us (../sigbus.c). */
	c->sub_shm.guard = tdbd_sigbus_guard(c->sub_shm.map,
					     c->sub_shm.map_size);
	c->comp_shm.guard = tdbd_sigbus_guard(c->comp_shm.map,
					      c->comp_shm.map_size);
	if (c->sub_shm.guard < 0 || c->comp_shm.guard < 0)
		return -EUSERS;
	/* Our view of the submission data must be read-only: remap it. */
	if (mmap((unsigned char *)c->sub_shm.map + c->sub_shm.span,
		 c->sub_shm.data_size, PROT_READ, MAP_SHARED | MAP_FIXED,
		 c->sub_shm.fd, (off_t)c->sub_shm.span) == MAP_FAILED)
		return -errno;
	c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->evfd < 0)
		return -errno;
	c->comp_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->comp_evfd < 0)
		return -errno;
	err = tdb_ring_attach_consumer(&c->sub, c->sub_shm.map,
			(unsigned char *)c->sub_shm.map + c->sub_shm.span,
			c->sub_shm.data_size, TDB_RING_SUBMIT);
	if (!err)
		err = tdb_ring_attach(&c->comp, c->comp_shm.map,
			(unsigned char *)c->comp_shm.map + c->comp_shm.span,
			c->comp_shm.data_size, TDB_RING_COMPLETE,
			TDB_RING_PRODUCER, &comp_ops);
	if (err)
		return err;
	tdb_ring_set_eventfd(&c->sub, c->evfd);
	return 0;
}

/*
 * ATTACH: 1 answered (the rings and their ack, or a refusal), or < 0:
 * the socket failed and the client must go (c->why says why).  Either
 * way nothing is left half made: a refused or failed ATTACH holds no
 * descriptor, memfd or guard slot afterwards.
 */
int tdbd_client_attach(struct client *c, const struct nlmsghdr *req)
{
	struct tdbd *d = c->d;
	struct tdb_proto_extack ext = { 0 };
	int fds[4], err;

	if (c->attached) {
		ext.msg = "rings are attached already";
		err = -EBUSY;
		goto refuse;
	}
	err = tdbd_client_fds_ready(c);
	if (err == -EAGAIN) {
		ext.msg = "answers to earlier requests are still queued on "
			  "the socket: read them before ATTACH";
		goto refuse;
	}
	if (err)
		return err;
	err = attach_make(c);
	if (err) {
		ext.msg = "cannot make the client's rings (out of memory?)";
		tdbd_log_rl(RL_RINGS, L_WARNING, "client %llu: rings: %s",
			    (unsigned long long)c->id, strerror(-err));
		attach_undo(c);
		goto refuse;
	}
	fds[0] = c->sub_shm.fd;
	fds[1] = c->comp_shm.fd;
	fds[2] = c->evfd;
	fds[3] = c->comp_evfd;  /* clients before issue 17 close it */
	err = tdbd_client_ack_fds(c, req, NULL, fds, 4);
	if (err) {
		attach_undo(c);
		return err;
	}
	__atomic_store_n(&c->attached, true, __ATOMIC_RELEASE);
	__atomic_fetch_add(&d->oct->rings, 2, __ATOMIC_RELAXED);
	/* Its SUBMIT ring's header holds its reader slot (zero-copy reads:
	 * src/owner/readers.c).  The mapping stays until
	 * tdbd_client_cleanup, which frees the owner's client (removing the
	 * reader) before it unmaps the rings. */
	tdbo_client_set_reader(c->oc, (struct tdb_ring_hdr *)c->sub_shm.map);
	return 1;
refuse:
	{
		unsigned char buf[TDB_PROTO_ERROR_MAX];
		long n = tdb_proto_error(buf, sizeof(buf), req, err, &ext);

		if (n > 0)
			tdbd_client_emit(c, CH_SOCK, buf, (size_t)n);
	}
	return 1;
}

/* --- violations ----------------------------------------------------- */

void tdbd_client_violation(struct client *c, const char *why)
{
	if (c->dead)
		return;
	/* A SIGBUS swaps zero pages in (../sigbus.c), which then read as a
	 * broken ring: name the cause, not its echo. */
	if (c->attached && (tdbd_sigbus_hit(c->sub_shm.guard) ||
			    tdbd_sigbus_hit(c->comp_shm.guard)))
		why = TDBD_WHY_SIGBUS;
	c->dead = true;
	c->why = why ? why : "protocol violation";
	__atomic_fetch_add(&c->d->oct->violations, 1, __ATOMIC_RELAXED);
	tdbd_log_rl(RL_VIOLATION, L_WARNING, "client %llu (pid %d, uid %u): %s",
		    (unsigned long long)c->id, (int)c->cr.pid,
		    (unsigned int)c->cr.uid, c->why);
}

/* --- socket output ---------------------------------------------------- */

/*
 * epoll interest follows the output: EPOLLOUT while answers wait to be
 * sent; no EPOLLIN while they back up past OUT_MAX, while too many of
 * its acks wait for the disk or while its big commit runs (we would not
 * read the requests anyway, and level-triggered EPOLLIN would wake us
 * for ever).  Called again when any of these changes.
 */
void tdbd_client_update_out(struct client *c)
{
	size_t pending = c->out_len - c->out_off;
	bool in = pending <= OUT_MAX && !tdbo_conn_held_full(&c->sv) && !c->commit;
	uint32_t want = EPOLLRDHUP | (pending ? EPOLLOUT : 0) |
			(in ? EPOLLIN : 0);
	struct epoll_event ev = { .events = want, .data.ptr = c };

	if (want == c->ep_events || !c->w)
		return;
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->sock, &ev) == 0)
		c->ep_events = want;
}

int tdbd_client_flush(struct client *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->sock, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->why = "socket write failed (client gone)";
			return -errno;
		}
		c->out_off += (size_t)n;
		c->sent += (uint64_t)n;
	}
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	tdbd_client_update_out(c);
	return 0;
}

static int out_append(struct client *c, const void *msg, size_t len)
{
	if (c->out_off && c->out_len + len > c->out_cap) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 65536;
		unsigned char *n;

		while (cap < c->out_len + len)
			cap *= 2;
		n = realloc(c->out, cap);
		if (!n)
			return -ENOMEM;
		c->out = n;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, msg, len);
	c->out_len += len;
	return 0;
}

bool tdbd_client_room(struct client *c, enum chan ch, size_t len)
{
	if (ch == CH_SOCK)
		return c->out_len - c->out_off + len <= OUT_MAX;
	return !c->stash_len && tdb_ring_has_room(&c->comp, len);
}

int tdbd_client_emit(struct client *c, enum chan ch, const void *msg,
		     size_t len)
{
	void *p;

	if (ch == CH_SOCK)      /* sent at the end of the round or read */
		return out_append(c, msg, len);
	if (!c->stash_len) {
		p = tdb_ring_reserve(&c->comp, len);
		if (p) {
			memcpy(p, msg, len);
			tdb_ring_commit(&c->comp, len);
			c->comp_dirty = true;
			return 0;
		}
		if (errno != EAGAIN) {
			int err = -errno;

			tdbd_client_violation(c, tdb_ring_error(&c->comp));
			return err;
		}
	}
	/* Full: keep it until the client drains (one answer at most, or
	 * the error answers of one batch of GETs: we read no more requests
	 * meanwhile; exec.c). */
	p = realloc(c->stash, c->stash_len + len);
	if (!p)
		return -ENOMEM;
	c->stash = p;
	memcpy(c->stash + c->stash_len, msg, len);
	c->stash_len += len;
	return -EAGAIN;
}

int tdbd_client_fds_ready(struct client *c)
{
	int err = tdbd_client_flush(c);

	if (err)
		return err;
	return c->out_len > c->out_off ? -EAGAIN : 0;
}

int tdbd_client_ack_fds(struct client *c, const struct nlmsghdr *req,
			const struct tdb_proto_extack *ext, const int *fds,
			unsigned int nfds)
{
	unsigned char buf[TDB_PROTO_ERROR_MAX];
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov;
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	long n = tdb_proto_error(buf, sizeof(buf), req, 0, ext);
	ssize_t s;
	int err;

	if (n < 0)
		return (int)n;
	/* Whatever is queued goes first, so the fds ride on the ack; the
	 * answers held for the WAL too, once written (the round's write,
	 * early). */
	tdbd_log_write(c->d);
	tdbo_conn_release(&c->sv);
	err = tdbd_client_flush(c);
	if (err)
		return err;
	if (c->out_len > c->out_off) {
		c->why = "socket output backed up during a hand-over of "
			 "descriptors";
		return -EAGAIN;
	}
	iov.iov_base = buf;
	iov.iov_len = (size_t)n;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	memset(cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	s = sendmsg(c->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (s < 0) {
		c->why = errno == EAGAIN ?
			 "socket full while passing descriptors (the client "
			 "reads nothing)" :
			 "socket write failed (client gone)";
		return -errno;
	}
	if ((size_t)s < (size_t)n)      /* the rest as ordinary output */
		return out_append(c, buf + s, (size_t)n - (size_t)s);
	return 0;
}

/* --- socket input ----------------------------------------------------- */

/* Is a whole message (or one that cannot be framed) buffered? */
static bool in_whole(const struct client *c)
{
	struct nlmsghdr nh;

	if (c->in_len < NLMSG_HDRLEN)
		return false;
	memcpy(&nh, c->in, sizeof(nh));
	return nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len <= c->in_len;
}

bool tdbd_client_in_ready(const struct client *c)
{
	return !c->dead && !c->commit && in_whole(c) &&
	       tdbd_client_room((struct client *)c, CH_SOCK,
				TDB_PROTO_ERROR_MAX) &&
	       !tdbo_conn_held_full(&c->sv);
}

/*
 * Run the whole messages in the input buffer, at most c->in_budget of
 * them, as the ring path takes at most TDBD_REQ_BUDGET per round: a
 * client pipelining thousands of requests on its socket gets its share
 * of a round, not the worker.  Stops, leaving whole messages buffered
 * (in_whole), on the budget, when too many acks wait for the disk, while
 * its big commit runs, or when its answers back up (the client must
 * read first).
 */
static int run_input(struct client *c)
{
	size_t off = 0;

	while (c->in_len - off >= NLMSG_HDRLEN && !c->dead) {
		struct nlmsghdr nh;

		memcpy(&nh, c->in + off, sizeof(nh));
		if (nh.nlmsg_len < NLMSG_HDRLEN ||
		    nh.nlmsg_len > TDB_PROTO_MSG_MAX ||
		    nh.nlmsg_len & 3) {
			c->why = "socket: a message length that cannot be "
				 "framed (protocol violation)";
			__atomic_fetch_add(&c->d->oct->violations, 1,
					   __ATOMIC_RELAXED);
			return -EPROTO;
		}
		if (c->in_len - off < nh.nlmsg_len)
			break;
		if (!c->in_budget || tdbo_conn_held_full(&c->sv) || c->commit)
			break;
		/* Not while the socket's answers back up: the client
		 * stopped reading. */
		if (!tdbd_client_room(c, CH_SOCK, TDB_PROTO_ERROR_MAX))
			break;
		tdbd_exec(c, CH_SOCK, c->in + off, nh.nlmsg_len);
		c->in_budget--;
		off += nh.nlmsg_len;
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	return 0;
}

int tdbd_client_read(struct client *c)
{
	unsigned int budget = c->in_budget;

	for (;;) {
		size_t want;
		ssize_t n;

		/* What is buffered runs first; read more only when it
		 * all ran (the budget bounds the buffer too). */
		if (run_input(c))
			return -EPROTO;
		if (in_whole(c) || c->dead)
			break;  /* left for the next round: read no more */
		if (c->in_len >= NLMSG_HDRLEN &&
		    !tdbd_client_room(c, CH_SOCK, TDB_PROTO_ERROR_MAX))
			break;  /* blocked on output: read no more */
		if (c->in_cap - c->in_len < 65536) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 131072;
			unsigned char *p;

			if (cap > TDB_PROTO_MSG_MAX + 131072 &&
			    c->in_len >= TDB_PROTO_MSG_MAX)
				break;   /* a whole message is there */
			p = realloc(c->in, cap);
			if (!p)
				return -ENOMEM;
			c->in = p;
			c->in_cap = cap;
		}
		want = c->in_cap - c->in_len;
		if (c->draining) {      /* stopping: only what came before */
			if (!c->drain_sock)
				break;
			if (want > c->drain_sock)
				want = c->drain_sock;
		}
		n = recv(c->sock, c->in + c->in_len, want, MSG_DONTWAIT);
		if (n > 0 && c->draining)
			c->drain_sock -= (size_t)n;
		if (n == 0) {
			c->why = "hang-up";
			return -ECONNRESET;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->why = "socket read failed";
			return -errno;
		}
		c->in_len += (size_t)n;
	}
	/* the answers are sent by the round, after its WAL write */
	return (int)(budget - c->in_budget);
}

/* --- leaving ----------------------------------------------------------- */

void tdbd_client_cleanup(struct client *c)
{
	struct tdbd *d = c->d;

	/* its held answers dropped, its dumps freed */
	tdbo_conn_fini(&c->sv);
	tdbd_commit_orphan(c);
	/* its transactions aborted, watches dropped (counted in STATS),
	 * its quota charge given back */
	tdbo_client_free(c->oc);
	c->oc = NULL;
	c->sv.oc = NULL;
	if (c->attached) {
		attach_undo(c);
		c->attached = false;
		__atomic_fetch_sub(&d->oct->rings, 2, __ATOMIC_RELAXED);
		__atomic_fetch_add(&d->oct->rings_freed, 2, __ATOMIC_RELAXED);
	}
	if (c->blocked_since)
		__atomic_fetch_sub(&d->ctr.throttled, 1, __ATOMIC_RELAXED);
	c->blocked_since = 0;
}

void tdbd_client_free(struct client *c)
{
	tdbd_client_cleanup(c);
	if (c->evfd >= 0)
		close(c->evfd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->sock >= 0)
		close(c->sock);
	free(c->in);
	free(c->out);
	free(c->stash);
	free(c->pend);
	free(c);
}
