// SPDX-License-Identifier: MIT
/*
 * ring_user.c - the user-space home of the rings (tdbd, libtdbclient):
 * what ring.h adds to the freestanding core (ring.c, ring_core.h).  It
 * owns sleeping and waking (FUTEX_WAIT/FUTEX_WAKE on the header's
 * `futex`, or the consumer's eventfd when one was agreed), the
 * consumer's private message buffer (malloc) and the errno-style
 * tdb_ring_reserve().  Every index is the core's: each wait here asks
 * the core whether to sleep (tdb_*_prepare) and on which futex value.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

static int futex_wait(uint32_t *addr, uint32_t val, int timeout_ms)
{
	struct timespec ts, *tp = NULL;

	if (timeout_ms >= 0) {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
		tp = &ts;
	}
	if (syscall(SYS_futex, addr, FUTEX_WAIT, val, tp, NULL, 0) == 0)
		return 0;
	if (errno == EAGAIN)
		return 0;           /* the word moved: something happened */
	return errno == ETIMEDOUT ? -ETIMEDOUT : -errno;
}

/* The core cleared the peer's flag and bumped `futex`: wake it (the
 * consumer through its eventfd, if it has one). */
static int user_wake(struct tdb_ring *r, uint32_t flag)
{
	uint64_t one = 1;

	if (r->eventfd >= 0 && flag == TDB_RING_F_CONS_WAITING) {
		if (write(r->eventfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			return -errno;
		return 1;
	}
	syscall(SYS_futex, &r->hdr->futex, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	return 1;
}

const struct tdb_ring_ops tdb_ring_user_ops = { .wake = user_wake };

/* --- setup ---------------------------------------------------------------- */

int tdb_ring_attach_producer(struct tdb_ring *r, void *hdr, void *data,
			     size_t data_map_size, uint32_t kind)
{
	return tdb_ring_attach(r, hdr, data, data_map_size, kind,
			       TDB_RING_PRODUCER, &tdb_ring_user_ops);
}

int tdb_ring_attach_consumer(struct tdb_ring *r, void *hdr,
			     const void *data, size_t data_map_size,
			     uint32_t kind)
{
	int err = tdb_ring_attach(r, hdr, data, data_map_size, kind,
				  TDB_RING_CONSUMER, &tdb_ring_user_ops);

	if (err)
		return err;
	r->msg = malloc(r->max_msg);
	return r->msg ? 0 : -ENOMEM;
}

void tdb_ring_detach(struct tdb_ring *r)
{
	free(r->msg);
	r->msg = NULL;
	r->hdr = NULL;
	r->data = NULL;
}

void tdb_ring_set_eventfd(struct tdb_ring *r, int fd)
{
	r->eventfd = fd;
}

/* --- producer ------------------------------------------------------------- */

int tdb_ring_put(struct tdb_ring *r, const struct nlmsghdr *nlh)
{
	return tdb_ring_put_msg(r, nlh);
}

int tdb_ring_wait_space(struct tdb_ring *r, size_t len, int timeout_ms)
{
	for (;;) {
		uint32_t v;
		int ret = tdb_ring_space_prepare(r, len, &v);

		if (ret <= 0)
			return ret;
		ret = futex_wait(&r->hdr->futex, v, timeout_ms);
		if (ret)
			return ret;
	}
}

/* --- consumer ------------------------------------------------------------- */

static int eventfd_wait(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t cnt;
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (read(fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

int tdb_ring_wait(struct tdb_ring *r, int timeout_ms)
{
	uint32_t v;
	int ret = tdb_ring_wait_prepare(r, &v);

	if (ret <= 0)
		return ret;
	if (r->eventfd >= 0)
		return eventfd_wait(r->eventfd, timeout_ms);
	return futex_wait(&r->hdr->futex, v, timeout_ms);
}

/* --- feed readers -------------------------------------------------------- */

int tdb_feed_wait(struct tdb_ring *r, int timeout_ms)
{
	uint32_t v;
	int ret = tdb_feed_wait_prepare(r, &v);

	if (ret <= 0)
		return ret;
	return futex_wait(&r->hdr->futex, v, timeout_ms);
}
