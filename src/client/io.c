// SPDX-License-Identifier: MIT
/*
 * io.c - moving messages: sending requests (submission ring or socket),
 * receiving answers (completion ring and socket, with the fds that ride
 * on the socket), routing each answer by its sequence number, and
 * waiting without ever hanging on a daemon that died.  The same code
 * serves tdb.ko (kdev.c): its /dev/tdb rings are used as tdbd's, with
 * TDB_IOC_ENTER after each publish and kdev.c's waiting; its generic
 * netlink socket as tdbd's socket, in datagrams (genl_send, genl_recv).
 *
 * Invariants:
 *  - Every answer is parsed from a private copy: the ring consumer hands
 *    one, and socket bytes are ours once received.  Whatever a handler
 *    keeps it copies out before the next message is read.
 *  - Routing never does I/O, so handlers cannot re-enter the reader; only
 *    the send and wait loops read.
 *  - A wait sleeps at most TDBC_NAP_MS at a time and then looks at the
 *    socket: tdbd's death shows there as a hang-up, while the rings
 *    (shared memory) would just stay quiet.
 *  - While we wait to write (socket full, submission ring full), we keep
 *    reading answers: tdbd stops taking requests from a client whose
 *    answers it cannot deliver, so not reading would deadlock.
 *  - tdbc_fd (the end of this file): once handed out, the descriptor is
 *    readable whenever something waits for tdbc_reap or
 *    tdbc_watch_next, from the moment one of them returned nothing
 *    (tdbc__arm); it may also be readable when nothing does.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define RBUF_MIN        (64u << 10)
#define SOCK_READS_MAX  64      /* recvmsg calls per pump */
#define CQ_BUDGET       128     /* completion messages per pump */

uint64_t tdbc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int tdbc__enter(struct tdbc *c)
{
	if (!c)
		return -EINVAL;
	tdbc__release_reaped(c);
	return c->dead;
}

/* --- classifying answers ------------------------------------------------ */

int tdbc__classify(struct tdbc *c, const struct tdb_proto_msg *m,
		   uint8_t cmd)
{
	const char *name = tdb_proto_cmd_name(cmd);

	if (m->type == NLMSG_ERROR) {
		if (m->error == 0 && !tdb_proto_cmd_is_ack(cmd))
			return tdbc__die(c, -EPROTO, "%s acked %s, which "
					 "takes a reply", c->peer, name);
		return TDBC_ANS_END;
	}
	if (m->type == NLMSG_DONE) {
		if (!tdb_proto_cmd_is_dump(cmd))
			return tdbc__die(c, -EPROTO, "%s ended a dump in "
					 "answer to %s", c->peer, name);
		return TDBC_ANS_END;
	}
	if (m->cmd != cmd || tdb_proto_cmd_is_ack(cmd))
		return tdbc__die(c, -EPROTO, "%s answered %s with a %s "
				 "message", c->peer, name,
				 tdb_proto_cmd_name(m->cmd));
	return tdb_proto_cmd_is_dump(cmd) ? TDBC_ANS_PART : TDBC_ANS_REPLY;
}

int tdbc__owner_fail(struct tdbc *c, const struct tdb_proto_msg *m,
		     uint8_t cmd)
{
	if (m->ext.msg && m->ext.msg[0])
		tdbc__fail(c, 0, "%s", m->ext.msg);
	else
		tdbc__fail(c, 0, "%s: %s", tdb_proto_cmd_name(cmd),
			   tdbc_strerror(m->error));
	return m->error;
}

/* --- routing ------------------------------------------------------------ */

/* Hand the fds that came with an ack to the call that expects them. */
static int claim_fds(struct tdbc *c, struct tdbc_call *call)
{
	unsigned int i;

	unsigned int n = call->nfds;

	if (c->nfdq < call->nfds)
		return tdbc__die(c, -EPROTO, "the ack of %s came without its "
				 "%u file descriptors",
				 tdb_proto_cmd_name(call->cmd), call->nfds);
	/* The optional ones: all that came with the ack (they ride on its
	 * first byte, so the queue holds this ack's fds only). */
	n += c->nfdq - n < call->nfds_opt ? c->nfdq - n : call->nfds_opt;
	for (i = 0; i < n; i++)
		call->fds[i] = c->fdq[i];
	call->nfds_got = n;
	c->nfdq -= n;
	memmove(c->fdq, c->fdq + n, c->nfdq * sizeof(int));
	return 0;
}

static int call_deliver(struct tdbc *c, struct tdbc_call *call,
			const struct tdb_proto_msg *m)
{
	int kind = tdbc__classify(c, m, call->cmd), err;

	if (kind < 0)
		return kind;
	if (kind != TDBC_ANS_END && !call->res) {
		err = call->on_msg ? call->on_msg(c, call, m) :
		      tdbc__die(c, -EPROTO, "unexpected data in answer to %s",
				tdb_proto_cmd_name(call->cmd));
		if (c->dead)
			return c->dead;
		call->res = err;
	}
	if (kind == TDBC_ANS_PART)
		return 0;
	call->done = true;
	if (kind == TDBC_ANS_END && m->error) {
		if (!call->res)
			call->res = tdbc__owner_fail(c, m, call->cmd);
		return 0;
	}
	if (m->type == NLMSG_ERROR && m->ext.cookie_len) {
		call->cookie_len = m->ext.cookie_len;
		memcpy(call->cookie, m->ext.cookie, m->ext.cookie_len);
	}
	if (call->nfds && m->type == NLMSG_ERROR)
		return claim_fds(c, call);
	return 0;
}

static int route(struct tdbc *c, const struct tdb_proto_msg *m)
{
	struct tdbc_call *call = c->call;
	int r;

	if (call && !call->done && m->seq == call->seq)
		return call_deliver(c, call, m);
	r = tdbc__scan_route(c, m);
	if (r)
		return r < 0 ? r : 0;
	r = tdbc__async_deliver(c, m);
	if (r)
		return r < 0 ? r : 0;
	if (tdbc__touch_answer(c, m))
		return 0;       /* a hint's ack (or refusal): nobody waits */
	return tdbc__die(c, -EPROTO, "%s answered a request that is not "
			 "outstanding (seq %u)", c->peer, m->seq);
}

/* Parse one answer (a private copy of len bytes) and route it. */
static int dispatch(struct tdbc *c, const struct nlmsghdr *nlh, size_t len,
		    bool from_socket)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m;
	int err;

	err = tdb_proto_parse_family(nlh, len, TDB_PROTO_ANSWER, c->family,
				     &m, &ext);
	if (err)
		return tdbc__die(c, -EPROTO, "%s sent an answer that does "
				 "not parse: %s", c->peer,
				 ext.msg ? ext.msg : "?");
	/* A socket request is answered once the answer's last message is
	 * in: anything but a dump part. */
	if (from_socket && c->sock_pending &&
	    (m.type != c->family || !(m.nlflags & NLM_F_MULTI)))
		c->sock_pending--;
	return route(c, &m);
}

/* --- the socket --------------------------------------------------------- */

static void take_fds(struct tdbc *c, struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t i, n;
		int fd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			if (c->nfdq < TDBC_FDQ_MAX)
				c->fdq[c->nfdq++] = fd;
			else
				close(fd);
		}
	}
}

/* Fds nobody asked for (only ATTACH and WATCH acks carry any). */
static void drop_stray_fds(struct tdbc *c)
{
	if (c->call && c->call->nfds && !c->call->done)
		return;
	while (c->nfdq)
		close(c->fdq[--c->nfdq]);
}

static int grow_rbuf(struct tdbc *c, size_t need)
{
	unsigned char *p;
	size_t cap = c->rcap ? c->rcap : RBUF_MIN;

	while (cap < need)
		cap *= 2;
	if (cap == c->rcap)
		return 0;
	p = realloc(c->rbuf, cap);
	if (!p)
		return tdbc__die(c, -ENOMEM, "out of memory for an answer "
				 "of %zu bytes", need);
	c->rbuf = p;
	c->rcap = cap;
	return 0;
}

/* Route every complete message in rbuf; keep a partial one. */
static int frame(struct tdbc *c)
{
	size_t off = 0;
	int n = 0, err;

	while (c->rlen - off >= NLMSG_HDRLEN) {
		const struct nlmsghdr *nlh = (const void *)(c->rbuf + off);
		uint32_t len = nlh->nlmsg_len;

		if (len < NLMSG_HDRLEN || len > TDB_PROTO_MSG_MAX || (len & 3))
			return tdbc__die(c, -EPROTO, "%s sent a message of "
					 "impossible length %u", c->peer,
					 len);
		if (c->rlen - off < len)
			break;
		err = dispatch(c, nlh, len, true);
		if (err < 0)
			return err;
		off += len;
		n++;
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
	if (c->rlen >= NLMSG_HDRLEN) {
		err = grow_rbuf(c, ((const struct nlmsghdr *)c->rbuf)->nlmsg_len);
		if (err)
			return err;
	}
	return n;
}

/* Generic netlink: one whole datagram (its size found with
 * MSG_PEEK | MSG_TRUNC), from the kernel only, framed by nlmsg_len; a
 * message never spans datagrams.  >0 bytes read, 0 if none, < 0. */
static long genl_recv(struct tdbc *c)
{
	struct sockaddr_nl sa;
	socklen_t salen;
	ssize_t n, got;
	int err;

	do {
		n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == ENOBUFS)
			return tdbc__die(c, -ENOBUFS, "answers from tdb.ko "
					 "were lost: the generic netlink "
					 "socket's receive buffer overflowed");
		return tdbc__die(c, -errno, "reading from tdb.ko (generic "
				 "netlink): %s", strerror(errno));
	}
	err = grow_rbuf(c, c->rlen + (size_t)n + 1);
	if (err)
		return err;
	do {
		salen = sizeof(sa);
		got = recvfrom(c->fd, c->rbuf + c->rlen, (size_t)n + 1,
			       MSG_DONTWAIT, (struct sockaddr *)&sa, &salen);
	} while (got < 0 && errno == EINTR);
	if (got < 0)
		return tdbc__die(c, -errno, "reading from tdb.ko (generic "
				 "netlink): %s", strerror(errno));
	/* Anyone may send to our port: only the kernel's datagrams count. */
	if (salen < sizeof(sa) || sa.nl_family != AF_NETLINK || sa.nl_pid)
		return 1;
	if (got != n)
		return tdbc__die(c, -EPROTO, "a datagram from tdb.ko changed "
				 "size while it was read (%zd, %zd bytes)", n,
				 got);
	c->rlen += (size_t)got;
	err = frame(c);
	if (err < 0)
		return err;
	if (c->rlen) {
		c->rlen = 0;
		return tdbc__die(c, -EPROTO, "a datagram from tdb.ko ends "
				 "inside a message");
	}
	return got ? got : 1;
}

/* One recvmsg: >0 bytes read (and routed), 0 if nothing was there. */
static long sock_recv(struct tdbc *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TDBC_FDQ_MAX)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int err;

	if (c->backend == TDBC_BE_GENL)
		return genl_recv(c);
	err = grow_rbuf(c, c->rlen + 4096);
	if (err)
		return err;
	iov.iov_base = c->rbuf + c->rlen;
	iov.iov_len = c->rcap - c->rlen;
	do {
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return tdbc__die(c, errno == EPIPE ? -EPIPE : -ECONNRESET,
				 "reading from tdbd: %s", strerror(errno));
	}
	take_fds(c, &mh);
	if (mh.msg_flags & MSG_CTRUNC)
		return tdbc__die(c, -EPROTO, "tdbd sent more file descriptors "
				 "than expected");
	if (n == 0)
		return tdbc__die(c, -ECONNRESET, "tdbd closed the connection");
	c->rlen += (size_t)n;
	err = frame(c);
	drop_stray_fds(c);
	return err < 0 ? err : n;
}

/* Read what the socket has, without waiting: messages routed, or < 0. */
static int sock_read(struct tdbc *c)
{
	int i;
	long n;

	for (i = 0; i < SOCK_READS_MAX; i++) {
		n = sock_recv(c);
		if (n <= 0)
			return n < 0 ? (int)n : 0;
	}
	return 0;
}

static int cq_consume(struct tdbc *c);

static int sock_send_all(struct tdbc *c, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t off = 0;
	ssize_t n;
	int err;

	while (off < len) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLOUT };

		n = send(c->fd, p + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return tdbc__die(c, errno == EPIPE ? -EPIPE :
					 -ECONNRESET, "writing to tdbd: %s",
					 strerror(errno));
		/* Full: read answers meanwhile (tdbd may be waiting for
		 * room to answer before it reads more of ours). */
		if (poll(&pfd, 1, TDBC_NAP_MS) < 0 && errno != EINTR)
			return tdbc__die(c, -errno, "poll: %s", strerror(errno));
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			err = sock_read(c);
			if (err < 0)
				return err;
		}
		if (c->rings) {
			err = cq_consume(c);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

/*
 * Generic netlink: the request built in sbuf (len bytes) goes to the
 * kernel as one datagram, with the family's id in nlmsg_type.  The
 * kernel answers while we send (a dump goes on as we read), and answers
 * wait in our receive buffer, which overflows (answers lost) if we let
 * them pile up: so read what is there after every request.
 */
static int genl_send(struct tdbc *c, long len)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };   /* kernel */
	ssize_t n;

	((struct nlmsghdr *)c->sbuf)->nlmsg_type = c->family;
	do {
		n = sendto(c->fd, c->sbuf, (size_t)len, 0,
			   (struct sockaddr *)&sa, sizeof(sa));
	} while (n < 0 && errno == EINTR);
	/* Not sent, and nothing broken: this request fails alone. */
	if (n < 0 && errno == EMSGSIZE)
		return tdbc__fail(c, -EMSGSIZE, "a request of %ld bytes is over "
				  "the generic netlink socket's send buffer "
				  "(raising it takes CAP_NET_ADMIN or a larger "
				  "net.core.wmem_max)", len);
	if (n < 0 && (errno == ENOBUFS || errno == ENOMEM ||
		      errno == EAGAIN))
		return tdbc__fail(c, -errno, "sending to tdb.ko (generic "
				  "netlink): %s", strerror(errno));
	if (n < 0)
		return tdbc__die(c, -errno, "sending to tdb.ko (generic "
				 "netlink): %s", strerror(errno));
	if (n != len)
		return tdbc__die(c, -EPROTO, "generic netlink took %zd of a "
				 "request's %ld bytes", n, len);
	/* The request is sent and counted: a failure to read is the
	 * connection's death, seen by the next call. */
	(void)sock_read(c);
	return 0;
}

static int sock_send_msg(struct tdbc *c, const struct tdb_proto_msg *m,
			 size_t size)
{
	struct tdb_proto_extack ext;
	long len;
	int err;

	if (c->scap < size) {
		unsigned char *p = realloc(c->sbuf, size);

		if (!p)
			return tdbc__fail(c, -ENOMEM, "out of memory for a "
					  "request of %zu bytes", size);
		c->sbuf = p;
		c->scap = size;
	}
	len = tdb_proto_build(c->sbuf, size, TDB_PROTO_REQUEST, m, &ext);
	if (len < 0)
		return tdbc__fail(c, (int)len, "%s", ext.msg ? ext.msg :
				  "cannot build the request");
	c->sock_pending++;
	if (c->backend == TDBC_BE_GENL)
		err = genl_send(c, len);
	else
		err = sock_send_all(c, c->sbuf, (size_t)len);
	if (err)
		c->sock_pending--;
	return err;
}

int tdbc__check_hangup(struct tdbc *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
	int err;

	if (c->dead)
		return c->dead;
	/* /dev/tdb: the kernel does not go away while the file is open. */
	if (c->backend == TDBC_BE_KDEV)
		return 0;
	if (poll(&pfd, 1, 0) <= 0 || !pfd.revents)
		return 0;
	err = sock_read(c);
	return err < 0 ? err : 0;
}

/* --- the rings ---------------------------------------------------------- */

static int ring_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct tdbc *c = arg;
	int err = dispatch(c, nlh, nlh->nlmsg_len, false);

	return err < 0 ? err : 0;
}

static int cq_consume(struct tdbc *c)
{
	int n = tdb_ring_consume(&c->cq, CQ_BUDGET, ring_cb, c);

	if (c->dead)
		return c->dead;
	if (n < 0)
		return tdbc__die(c, n, "completion ring: %s",
				 tdb_ring_error(&c->cq) ?
				 tdb_ring_error(&c->cq) : strerror(-n));
	return n;
}

int tdbc__publish(struct tdbc *c)
{
	int r;

	if (!c->rings)
		return 0;
	r = tdb_ring_publish(&c->sq);
	/* /dev/tdb: nobody reads the ring until we ENTER. */
	if (r >= 0 && c->backend == TDBC_BE_KDEV)
		return tdbc__kdev_enter(c);
	if (r >= 0)
		return 0;
	return tdbc__die(c, r, "submission ring: %s", tdb_ring_error(&c->sq) ?
			 tdb_ring_error(&c->sq) : strerror(-r));
}

/* Wait for room for len bytes in the submission ring, draining the
 * completion ring meanwhile (tdbd may be waiting for that room). */
static int wait_sq_space(struct tdbc *c, size_t len)
{
	int err;

	if (c->backend == TDBC_BE_KDEV)
		return tdbc__kdev_wait_sq_space(c, len);
	for (;;) {
		err = tdbc__publish(c);
		if (!err)
			err = tdbc__pump(c);
		if (err < 0)
			return err;
		err = tdb_ring_wait_space(&c->sq, len, 10);
		if (!err)
			return 0;
		if (err == -EPROTO)
			return tdbc__die(c, err, "submission ring: %s",
					 tdb_ring_error(&c->sq));
		if (err != -ETIMEDOUT && err != -EINTR)
			return tdbc__die(c, err, "waiting for the submission "
					 "ring: %s", strerror(-err));
		err = tdbc__check_hangup(c);
		if (err)
			return err;
	}
}

static int ring_send(struct tdbc *c, const struct tdb_proto_msg *m,
		     size_t size, bool wait)
{
	struct tdb_proto_extack ext;
	void *p;
	long len;
	int err;

	while (!(p = tdb_ring_reserve(&c->sq, size))) {
		if (errno == EPROTO)
			return tdbc__die(c, -EPROTO, "submission ring: %s",
					 tdb_ring_error(&c->sq));
		if (errno != EAGAIN)
			return tdbc__fail(c, -errno, "submission ring: %s",
					  strerror(errno));
		if (!wait)
			return -EAGAIN;
		err = wait_sq_space(c, size);
		if (err)
			return err;
	}
	len = tdb_proto_build(p, size, TDB_PROTO_REQUEST, m, &ext);
	if (len < 0) {
		tdb_ring_abort(&c->sq);
		return tdbc__fail(c, (int)len, "%s", ext.msg ? ext.msg :
				  "cannot build the request");
	}
	return tdb_ring_commit(&c->sq, (size_t)len);
}

static int send_req(struct tdbc *c, struct tdb_proto_msg *m,
		    bool over_socket, bool publish, bool wait)
{
	struct tdb_proto_extack ext;
	long size;
	int err;

	if (c->dead)
		return c->dead;
	size = tdb_proto_size(TDB_PROTO_REQUEST, m, &ext);
	if (size < 0)
		return tdbc__fail(c, (int)size, "%s", ext.msg ? ext.msg :
				  "bad request");
	/* /dev/tdb has no socket: every request takes the ring (whose
	 * max_msg tdbc__kdev_connect checked holds any request). */
	if (c->backend == TDBC_BE_KDEV) {
		if ((uint64_t)size > c->sq.max_msg)
			return tdbc__fail(c, -EMSGSIZE, "a request of %ld "
					  "bytes is over the submission "
					  "ring's %u", size, c->sq.max_msg);
		over_socket = false;
	}
	/* A request bigger than the ring's max_msg takes the socket. */
	if (!c->rings || over_socket || (uint64_t)size > c->sq.max_msg)
		return sock_send_msg(c, m, (size_t)size);
	err = ring_send(c, m, (size_t)size, wait);
	if (!err && publish)
		err = tdbc__publish(c);
	return err;
}

int tdbc__send(struct tdbc *c, struct tdb_proto_msg *m, bool over_socket,
	       bool publish)
{
	return send_req(c, m, over_socket, publish, true);
}

int tdbc__send_nowait(struct tdbc *c, struct tdb_proto_msg *m)
{
	return send_req(c, m, false, false, false);
}

/* --- waiting ------------------------------------------------------------ */

int tdbc__pump(struct tdbc *c)
{
	int n = 0, r;

	if (c->dead)
		return c->dead;
	if (!c->rings || c->sock_pending) {
		r = sock_read(c);
		if (r < 0)
			return r;
		n += r;
	}
	if (c->rings) {
		r = cq_consume(c);
		if (r < 0)
			return r;
		n += r;
	}
	return n;
}

/* Poll the completion ring for a short while: an answer usually comes
 * back within microseconds, sooner than a futex sleep and wake-up. */
/*
 * Poll the completion ring for up to ns.  The first SPIN_HOT_NS are a
 * pure spin (an answer usually comes within ~1 us); after that each
 * check also yields the CPU: with more clients than CPUs, spinners
 * would otherwise take the CPU tdbd needs to answer them (8 clients on
 * 2 CPUs got a quarter of one client's throughput; docs/BENCHMARKS.md
 * section 4).
 */
#define SPIN_HOT_NS 2000u

static void spin(struct tdbc *c, uint64_t ns)
{
	uint64_t start = tdbc__now_ns(), now;
	unsigned int i;

	for (i = 1;; i++) {
		long p = tdb_ring_pending(&c->cq);

		if (p != 0)
			return;
		if (!(i & 31)) {
			now = tdbc__now_ns();
			if (now - start >= ns)
				return;
			if (now - start >= SPIN_HOT_NS)
				sched_yield();
		}
		__asm__ __volatile__("" ::: "memory");
	}
}

/* Sleep until something may have arrived (or ms ran out). */
static int block(struct tdbc *c, int ms)
{
	int r;

	if (!c->rings || c->sock_pending) {
		struct pollfd pfd = { .fd = c->fd,
				      .events = POLLIN | POLLRDHUP };

		/* With rings too, answers may also come on the ring,
		 * which poll cannot see: look at it every millisecond. */
		if (poll(&pfd, 1, c->rings && ms > 1 ? 1 : ms) < 0 &&
		    errno != EINTR)
			return tdbc__die(c, -errno, "poll: %s", strerror(errno));
		return 0;
	}
	r = tdb_ring_wait(&c->cq, ms);
	if (r == 0)
		return 0;
	if (r == -EPROTO)
		return tdbc__die(c, r, "completion ring: %s",
				 tdb_ring_error(&c->cq));
	return tdbc__check_hangup(c);
}

int tdbc__wait(struct tdbc *c, tdbc_cond_fn *cond, void *arg,
	       int timeout_ms)
{
	uint64_t deadline = 0, now;
	bool spun = false;
	int r, ms;

	if (c->backend == TDBC_BE_KDEV)
		return tdbc__kdev_wait(c, cond, arg, timeout_ms);
	if (timeout_ms >= 0)
		deadline = tdbc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		r = tdbc__pump(c);
		if (r < 0)
			return r;
		if (cond(c, arg))
			return 0;
		if (r > 0)
			continue;
		ms = TDBC_NAP_MS;
		if (timeout_ms >= 0) {
			now = tdbc__now_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			if ((deadline - now + 999999) / 1000000 < (uint64_t)ms)
				ms = (int)((deadline - now + 999999) / 1000000);
		}
		if (c->rings && !c->sock_pending && !spun) {
			spin(c, (uint64_t)ms * 1000000ull < TDBC_SPIN_NS ?
				(uint64_t)ms * 1000000ull : TDBC_SPIN_NS);
			spun = true;
			continue;
		}
		r = block(c, ms);
		if (r < 0)
			return r;
	}
}

static bool call_done(struct tdbc *c, void *arg)
{
	(void)c;
	return ((struct tdbc_call *)arg)->done;
}

int tdbc__call(struct tdbc *c, struct tdb_proto_msg *m,
	       struct tdbc_call *call, bool over_socket)
{
	int err;

	if (c->dead)
		return c->dead;
	m->seq = tdbc__seq(c);
	call->seq = m->seq;
	call->cmd = m->cmd;
	call->done = false;
	call->res = 0;
	/* Registered before sending: answers are routed from the moment
	 * the request could be seen. */
	c->call = call;
	err = tdbc__send(c, m, over_socket, true);
	if (!err)
		err = tdbc__wait(c, call_done, call, -1);
	c->call = NULL;
	if (err)
		return err;
	return call->res;
}

/* --- tdbc_fd: one descriptor for an event loop ---------------------------
 *
 * tdbd: an epoll set of the socket (answers to requests that took it,
 * and the daemon's death) and selfd, the eventfd tdbd passed with
 * ATTACH: once we set TDB_RING_F_EVENTFD in our completion ring's
 * header (poll_set_make), tdbd writes it when it publishes to that ring
 * or to a feed we watch while TDB_RING_F_CONS_WAITING is set there
 * (which only we set: tdbc__arm); and we write it when something waits
 * that no wake-up will announce.
 * /dev/tdb: an epoll set of the device (readable while the completion
 * ring holds answers or a watched feed was written since the last
 * ENTER) and a private selfd (ENTERs between polls forget feed writes;
 * completions a blocking call took are kept for tdbc_reap).
 * Generic netlink, and tdbd without rings: the socket and a private
 * selfd (answers a blocking call read off the socket are kept for
 * tdbc_reap); tdbd does not wake such a client for its watches.
 */

void tdbc__self_signal(struct tdbc *c)
{
	uint64_t one = 1;

	if (c->pollfd < 0 || c->selfd < 0)
		return;
	/* EAGAIN: the counter is full, so readable already */
	if (write(c->selfd, &one, sizeof(one)) < 0)
		return;
}

int tdbc__arm(struct tdbc *c)
{
	uint64_t cnt;
	uint32_t v;
	int r;

	if (c->pollfd < 0 || c->dead)
		return c->dead;
	/* Answers on the socket are routed now (the socket stays readable
	 * in the set until they are), and the daemon's death is seen. */
	r = tdbc__check_hangup(c);
	if (r)
		return r;
	if (read(c->selfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return tdbc__die(c, -errno, "reading the wake-up eventfd: %s",
				 strerror(errno));
	/* /dev/tdb: ENTER (the kernel then announces only feed writes
	 * from now on, and answers what was submitted) and take what it
	 * answered; the looks below cover what came before. */
	if (c->backend == TDBC_BE_KDEV) {
		r = tdbc__kdev_enter(c);
		if (!r)
			r = tdbc__kdev_drain(c);
		if (r < 0)
			return r;
	}
	r = 1;
	if (c->backend == TDBC_BE_DAEMON && c->rings) {
		/* The flag before the looks: tdbd publishes, then reads the
		 * flag; we set the flag, then look at what it published
		 * (both with a full barrier between): one of us sees the
		 * other.  The feeds below are looked at after it too. */
		r = tdb_ring_wait_prepare(&c->cq, &v);
		if (r < 0)
			return tdbc__die(c, r, "completion ring: %s",
					 tdb_ring_error(&c->cq));
	} else if (c->rings && tdb_ring_pending(&c->cq) != 0) {
		r = 0;
	}
	if (!r || c->done_len || tdbc__watches_pending(c))
		tdbc__self_signal(c);
	return 0;
}

static int poll_set_add(struct tdbc *c, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	if (epoll_ctl(c->pollfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return tdbc__fail(c, -errno, "cannot build the pollable "
				  "descriptor: epoll_ctl: %s",
				  strerror(errno));
	return 0;
}

static int poll_set_make(struct tdbc *c)
{
	int err;

	if ((c->backend != TDBC_BE_DAEMON || !c->rings) && c->selfd < 0) {
		c->selfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->selfd < 0)
			return tdbc__fail(c, -errno, "cannot make the "
					  "pollable descriptor: eventfd: %s",
					  strerror(errno));
	}
	if (c->selfd < 0)
		return tdbc__fail(c, -EOPNOTSUPP, "this tdbd passes no "
				  "completion eventfd at ATTACH (it is older "
				  "than the library): no pollable descriptor; "
				  "upgrade tdbd, or connect with "
				  "TDBC_NO_RINGS");
	c->pollfd = epoll_create1(EPOLL_CLOEXEC);
	if (c->pollfd < 0)
		return tdbc__fail(c, -errno, "cannot make the pollable "
				  "descriptor: epoll_create1: %s",
				  strerror(errno));
	err = poll_set_add(c, c->fd, c->backend == TDBC_BE_DAEMON ?
			   EPOLLIN | EPOLLRDHUP : EPOLLIN);
	if (!err)
		err = poll_set_add(c, c->selfd, EPOLLIN);
	if (err) {
		close(c->pollfd);
		c->pollfd = -1;
		return err;
	}
	/* tdbd: wake the eventfd from now on, not only the futex */
	if (c->backend == TDBC_BE_DAEMON && c->rings) {
		struct tdb_ring_hdr *h = c->cq_map.hdr;

		__atomic_fetch_or(&h->flags, TDB_RING_F_EVENTFD,
				  __ATOMIC_SEQ_CST);
	}
	return 0;
}

int tdbc_fd(struct tdbc *c)
{
	int err;

	if (!c)
		return -EINVAL;
	if (c->dead)
		return c->dead;
	if (c->pollfd < 0) {
		err = poll_set_make(c);
		if (err)
			return err;
	}
	err = tdbc__arm(c);
	return err ? err : c->pollfd;
}
