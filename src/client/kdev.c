// SPDX-License-Identifier: MIT
/*
 * kdev.c - libtdbclient's tdb.ko backends: /dev/tdb with rings
 * (TDBC_BE_KDEV) and generic netlink (TDBC_BE_GENL, TDBC_NO_RINGS).
 * The ABI is include/tdb/kdev.h; read it first.
 *
 * /dev/tdb: TDB_IOC_ATTACH makes this file's rings, which we map at the
 * offsets it returns (submission ring: header and data writable;
 * completion ring: header writable, data read-only) and use through the
 * same struct tdb_ring views as tdbd's memfds, so io.c produces and
 * consumes exactly as with tdbd.  What differs is only how answers come:
 *  - nobody consumes the submission ring until we call TDB_IOC_ENTER,
 *    which answers every request it takes into the completion ring
 *    before it returns, but for changes tdb.ko holds until they are
 *    durable (a supervisor, tdbd, with sync always): their answers
 *    come at a later ENTER, once poll(2) says POLLIN (tdbc__kdev_wait
 *    polls when an ENTER brought nothing, bounded by the timeout).
 *    It stops early only when the completion ring lacks room for the
 *    largest answer; so after draining, another ENTER always goes on.  tdbc__publish (io.c) ENTERs right after
 *    publishing, so a blocking call costs one ioctl;
 *  - there is no owner thread to wake (no futex, no eventfd) and no
 *    socket to hang up: the kernel does not go away while the file is
 *    open.  Waiting is drain, ENTER, drain, and poll(2) only when
 *    nothing moves;
 *  - change feeds are mapped read-only from the same file, at the
 *    offset the WATCH ack's cookie gives, and a watcher sleeps in
 *    poll(2) on the file (the kernel cannot futex-wake vmalloc memory):
 *    POLLIN means a completion is waiting or a watched feed was written
 *    since the last ENTER, so ENTER, read the feeds, then poll, and no
 *    change is missed.
 *
 * Generic netlink: a NETLINK_GENERIC socket, the family id resolved by
 * name (libmnl), extended acks and capped acks on.  Requests and answers
 * are the socket path's (io.c) with the family id in nlmsg_type; the
 * only differences (datagrams, the sender check, the id) live in io.c's
 * genl_* helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tdb/kdev.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

/* Ring data sizes we ask for: max_msg (data / 2) then holds any message
 * (TDB_PROTO_MSG_MAX), so nothing ever needs another way. */
#define KDEV_RING_DATA   (4u << 20)
#define KDEV_DRAIN_MAX   (1u << 20)   /* messages per drain, a bound only */
#define GENL_RCVBUF      (8 << 20)
/* netlink refuses to send a datagram over the socket's send buffer
 * (less 32 bytes), 212992 bytes by default: room for the largest
 * request (the kernel doubles what it is given). */
#define GENL_SNDBUF      ((int)TDB_PROTO_MSG_MAX + (64 << 10))

static int sys_open(const char *path, int flags)
{
	return open(path, flags);
}

static int sys_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg);
}

struct tdbc_kdev_sys tdbc__kdev_sys = {
	.dev_path = TDB_DEV_PATH,
	.open = sys_open,
	.ioctl = sys_ioctl,
	.mmap = mmap,
};

bool tdbc__kdev_exists(void)
{
	struct stat st;

	return stat(tdbc__kdev_sys.dev_path, &st) == 0;
}

/* --- mapping ------------------------------------------------------------ */

/* Map one ring of the device: its header page at off, data_size bytes of
 * data after it. */
static int map_dev_ring(struct tdbc *c, uint64_t off, uint32_t data_size,
			bool hdr_writable, bool data_writable,
			struct tdbc_map *map, const char *what)
{
	int hprot = PROT_READ | (hdr_writable ? PROT_WRITE : 0);
	int dprot = PROT_READ | (data_writable ? PROT_WRITE : 0);
	int err;

	memset(map, 0, sizeof(*map));
	if (off % TDB_DEV_SLOT || off > (uint64_t)INT64_MAX - TDB_DEV_SLOT)
		return tdbc__fail(c, -EPROTO, "tdb.ko gave the %s an mmap "
				  "offset that is not a slot (%#llx)", what,
				  (unsigned long long)off);
	map->hdr = tdbc__kdev_sys.mmap(NULL, TDB_RING_HDR_SIZE, hprot,
				       MAP_SHARED, c->fd, (off_t)off);
	if (map->hdr == MAP_FAILED) {
		map->hdr = NULL;
		return tdbc__fail(c, -errno, "cannot map the %s's header from "
				  "%s: %s", what, tdbc__kdev_sys.dev_path,
				  strerror(errno));
	}
	map->hdr_len = TDB_RING_HDR_SIZE;
	map->data = tdbc__kdev_sys.mmap(NULL, data_size, dprot, MAP_SHARED,
					c->fd, (off_t)(off +
						       TDB_RING_HDR_SIZE));
	if (map->data == MAP_FAILED) {
		err = -errno;
		map->data = NULL;
		tdbc__unmap_ring(map);
		return tdbc__fail(c, err, "cannot map the %s's data from %s: "
				  "%s", what, tdbc__kdev_sys.dev_path,
				  strerror(-err));
	}
	map->data_len = data_size;
	return 0;
}

int tdbc__kdev_connect(struct tdbc *c)
{
	struct tdb_dev_attach a = {
		.version = TDB_DEV_VERSION,
		.sq_data_size = KDEV_RING_DATA,
		.cq_data_size = KDEV_RING_DATA,
	};
	const char *dev = tdbc__kdev_sys.dev_path;
	int err;

	c->backend = TDBC_BE_KDEV;
	c->peer = "tdb.ko";
	c->fd = tdbc__kdev_sys.open(dev, O_RDWR | O_CLOEXEC);
	if (c->fd < 0) {
		c->fd = -1;
		if (errno == ENOENT || errno == ENXIO || errno == ENODEV)
			return tdbc__fail(c, -ENOENT, "cannot open %s: %s (is "
					  "tdb.ko loaded?)", dev,
					  "no such device");
		return tdbc__fail(c, -errno, "cannot open %s: %s", dev,
				  strerror(errno));
	}
	while (tdbc__kdev_sys.ioctl(c->fd, TDB_IOC_ATTACH, &a) < 0) {
		if (errno == EINTR)
			continue;
		return tdbc__fail(c, -errno, "TDB_IOC_ATTACH on %s: %s", dev,
				  strerror(errno));
	}
	/* Asked for rings that carry any message: anything less is a
	 * kernel we cannot use (a request too big for the ring would have
	 * nowhere else to go). */
	if (a.sq_max_msg < TDB_PROTO_MSG_MAX || a.cq_max_msg <
	    TDB_PROTO_MSG_MAX)
		return tdbc__fail(c, -EPROTO, "tdb.ko attached rings whose "
				  "largest message (%u, %u bytes) is under "
				  "TDB_PROTO_MSG_MAX", a.sq_max_msg,
				  a.cq_max_msg);
	err = map_dev_ring(c, a.sq_offset, a.sq_data_size, true, true,
			   &c->sq_map, "submission ring");
	if (!err)
		err = map_dev_ring(c, a.cq_offset, a.cq_data_size, true, false,
				   &c->cq_map, "completion ring");
	if (err)
		return err;
	err = tdb_ring_attach_producer(&c->sq, c->sq_map.hdr, c->sq_map.data,
				       c->sq_map.data_len, TDB_RING_SUBMIT);
	if (err)
		return tdbc__fail(c, err, "submission ring from tdb.ko: %s",
				  tdb_ring_error(&c->sq) ?
				  tdb_ring_error(&c->sq) : strerror(-err));
	err = tdb_ring_attach_consumer(&c->cq, c->cq_map.hdr, c->cq_map.data,
				       c->cq_map.data_len, TDB_RING_COMPLETE);
	if (err) {
		tdb_ring_detach(&c->sq);
		return tdbc__fail(c, err, "completion ring from tdb.ko: %s",
				  tdb_ring_error(&c->cq) ?
				  tdb_ring_error(&c->cq) : strerror(-err));
	}
	c->rings = true;
	return 0;
}

int tdbc__kdev_map_feed(struct tdbc *c, const void *cookie,
			uint32_t cookie_len, struct tdbc_map *map,
			uint32_t *start_seq)
{
	struct tdb_dev_watch_cookie ck;
	struct tdbc_map hdr = { 0 };
	uint32_t data_size;
	uint64_t off;

	if (cookie_len != sizeof(ck))
		return tdbc__die(c, -EPROTO, "tdb.ko acked WATCH with a "
				 "cookie of %u bytes, not the %zu of struct "
				 "tdb_dev_watch_cookie", cookie_len,
				 sizeof(ck));
	memcpy(&ck, cookie, sizeof(ck));
	off = (uint64_t)ck.offset_hi << 32 | ck.offset_lo;
	if (off < 2 * TDB_DEV_SLOT || off % TDB_DEV_SLOT ||
	    off > (uint64_t)INT64_MAX - TDB_DEV_SLOT)
		return tdbc__die(c, -EPROTO, "tdb.ko acked WATCH with a feed "
				 "offset that is no feed slot (%#llx)",
				 (unsigned long long)off);
	/* The header page alone first: it says how big the data is.  The
	 * size is read once, checked, and the attach below checks that
	 * the header agrees with the mapping. */
	hdr.hdr = tdbc__kdev_sys.mmap(NULL, TDB_RING_HDR_SIZE, PROT_READ,
				      MAP_SHARED, c->fd, (off_t)off);
	if (hdr.hdr == MAP_FAILED)
		return tdbc__fail(c, -errno, "cannot map the change feed's "
				  "header from %s: %s",
				  tdbc__kdev_sys.dev_path, strerror(errno));
	hdr.hdr_len = TDB_RING_HDR_SIZE;
	data_size = __atomic_load_n(&((const struct tdb_ring_hdr *)
				      hdr.hdr)->data_size, __ATOMIC_RELAXED);
	if (data_size < TDB_RING_MIN_DATA || data_size > TDB_RING_MAX_DATA ||
	    (data_size & (data_size - 1))) {
		tdbc__unmap_ring(&hdr);
		return tdbc__die(c, -EPROTO, "the change feed from tdb.ko has "
				 "a bad data size (%u)", data_size);
	}
	*map = hdr;
	map->data = tdbc__kdev_sys.mmap(NULL, data_size, PROT_READ,
					MAP_SHARED, c->fd,
					(off_t)(off + TDB_RING_HDR_SIZE));
	if (map->data == MAP_FAILED) {
		int err = -errno;

		map->data = NULL;
		tdbc__unmap_ring(map);
		return tdbc__fail(c, err, "cannot map the change feed's data "
				  "from %s: %s", tdbc__kdev_sys.dev_path,
				  strerror(-err));
	}
	map->data_len = data_size;
	*start_seq = ck.seq;
	return 0;
}

/* --- ENTER, waiting ----------------------------------------------------- */

int tdbc__kdev_enter(struct tdbc *c)
{
	if (c->dead)
		return c->dead;
	while (tdbc__kdev_sys.ioctl(c->fd, TDB_IOC_ENTER, NULL) < 0) {
		int err = errno;

		if (err == EINTR)
			continue;
		if (err == EPROTO)
			return tdbc__die(c, -EPROTO, "tdb.ko found this "
					 "connection's rings broken and "
					 "stopped serving it");
		return tdbc__die(c, -err, "TDB_IOC_ENTER on %s: %s",
				 tdbc__kdev_sys.dev_path, strerror(err));
	}
	/* The kernel forgot the feed writes poll() would have announced:
	 * if a feed still holds unread changes, tdbc_fd says so (io.c). */
	if (c->pollfd >= 0 && tdbc__watches_pending(c))
		tdbc__self_signal(c);
	return 0;
}

int tdbc__kdev_drain(struct tdbc *c)
{
	int n = 0, r;

	do {
		r = tdbc__pump(c);
		if (r < 0)
			return r;
		n += r;
	} while (r > 0 && n < (int)KDEV_DRAIN_MAX);
	return n;
}

int tdbc__kdev_poll(struct tdbc *c, int ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
		return tdbc__die(c, -errno, "poll on %s: %s",
				 tdbc__kdev_sys.dev_path, strerror(errno));
	/* POLLERR and the like: the next ENTER says what broke. */
	return 0;
}

/* ms to sleep: TDBC_NAP_MS or what is left of the deadline (0 = over). */
static int nap_ms(int timeout_ms, uint64_t deadline)
{
	uint64_t now;

	if (timeout_ms < 0)
		return TDBC_NAP_MS;
	now = tdbc__now_ns();
	if (now >= deadline)
		return 0;
	if ((deadline - now + 999999) / 1000000 < (uint64_t)TDBC_NAP_MS)
		return (int)((deadline - now + 999999) / 1000000);
	return TDBC_NAP_MS;
}

/*
 * Drain; stop when cond holds; else ENTER (the kernel takes what is in
 * the submission ring and goes on with dumps) and drain again.  Only when
 * an ENTER brought nothing does it sleep, in poll(2): an answer tdb.ko
 * holds for durability wakes it (POLLIN) once it may go out, and the
 * next ENTER brings it; anything else is a nap before trying again
 * (the timeout still holds).  With asynchronous
 * requests in flight it ENTERs before the first look at cond: a reap
 * that wants nothing (min 0) must still see what the kernel can answer
 * now, as tdbd would have answered it meanwhile.
 */
int tdbc__kdev_wait(struct tdbc *c, tdbc_cond_fn *cond, void *arg,
		    int timeout_ms)
{
	uint64_t deadline = 0;
	bool entered = false;
	int r, ms;

	if (timeout_ms >= 0)
		deadline = tdbc__now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		r = tdbc__pump(c);
		if (r < 0)
			return r;
		if (!r && !entered && c->slot_used) {
			r = tdbc__kdev_enter(c);
			if (r)
				return r;
			entered = true;
			continue;
		}
		if (cond(c, arg))
			return 0;
		if (r > 0) {
			entered = false;
			continue;
		}
		if (!entered) {
			r = tdbc__kdev_enter(c);
			if (r)
				return r;
			entered = true;
			continue;
		}
		ms = nap_ms(timeout_ms, deadline);
		if (!ms)
			return -ETIMEDOUT;
		r = tdbc__kdev_poll(c, ms);
		if (r)
			return r;
		entered = false;
	}
}

int tdbc__kdev_wait_sq_space(struct tdbc *c, size_t len)
{
	int r;

	for (;;) {
		r = tdbc__publish(c);       /* publishes and ENTERs */
		if (!r)
			r = tdbc__kdev_drain(c);
		if (r < 0)
			return r;
		if (tdb_ring_has_room(&c->sq, len))
			return 0;
		if (c->sq.dead)
			return tdbc__die(c, -EPROTO, "submission ring: %s",
					 tdb_ring_error(&c->sq));
		/* The kernel took nothing although the completion ring
		 * is empty: nap rather than spin, then ENTER again. */
		if (!r) {
			r = tdbc__kdev_poll(c, 10);
			if (r)
				return r;
		}
	}
}

/* --- generic netlink ---------------------------------------------------- */

static int family_cb_attr(const struct nlattr *a, void *data)
{
	uint16_t *id = data;

	if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID &&
	    mnl_attr_validate(a, MNL_TYPE_U16) == 0)
		*id = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_cb_attr, data);
	return MNL_CB_OK;
}

/* CTRL_CMD_GETFAMILY for TDB_GENL_NAME: the family's id in *id. */
static int resolve_family(struct tdbc *c, uint16_t *id)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t salen;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	uint32_t seq = 1;
	ssize_t n;
	int r;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, TDB_GENL_NAME);
	while (sendto(c->fd, nlh, nlh->nlmsg_len, 0, (struct sockaddr *)&sa,
		      sizeof(sa)) < 0) {
		if (errno != EINTR)
			return tdbc__fail(c, -errno, "asking generic netlink "
					  "for the family %s: %s",
					  TDB_GENL_NAME, strerror(errno));
	}
	*id = 0;
	do {
		salen = sizeof(sa);
		n = recvfrom(c->fd, buf, sizeof(buf), 0,
			     (struct sockaddr *)&sa, &salen);
		if (n < 0 && errno == EINTR) {
			r = MNL_CB_OK;
			continue;
		}
		if (n <= 0)
			return tdbc__fail(c, n < 0 ? -errno : -EPROTO,
					  "reading generic netlink's answer "
					  "about the family %s: %s",
					  TDB_GENL_NAME, n < 0 ?
					  strerror(errno) : "nothing");
		if (sa.nl_pid != 0) {   /* not from the kernel */
			r = MNL_CB_OK;
			continue;
		}
		r = mnl_cb_run(buf, (size_t)n, seq, 0, family_cb, id);
	} while (r > MNL_CB_STOP);
	if (r < 0) {
		if (errno == ENOENT)
			return tdbc__fail(c, -ENOENT, "no generic netlink "
					  "family %s (is tdb.ko loaded?)",
					  TDB_GENL_NAME);
		return tdbc__fail(c, -errno, "generic netlink refused to "
				  "name the family %s: %s", TDB_GENL_NAME,
				  strerror(errno));
	}
	if (!*id)
		return tdbc__fail(c, -EPROTO, "generic netlink answered about "
				  "the family %s without its id",
				  TDB_GENL_NAME);
	return 0;
}

int tdbc__genl_connect(struct tdbc *c)
{
	int one = 1, size = GENL_RCVBUF, ssize = GENL_SNDBUF;
	uint16_t id;
	int err;

	c->backend = TDBC_BE_GENL;
	c->peer = "tdb.ko";
	c->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (c->fd < 0)
		return tdbc__fail(c, -errno, "cannot open a generic netlink "
				  "socket: %s", strerror(errno));
	/* Errors say what was wrong (extended ack) and do not echo the
	 * request (a 1 MiB PUT would come back whole). */
	if (setsockopt(c->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one,
		       sizeof(one)) < 0 ||
	    setsockopt(c->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one,
		       sizeof(one)) < 0)
		return tdbc__fail(c, -errno, "generic netlink socket: "
				  "cannot turn on extended and capped acks: "
				  "%s", strerror(errno));
	/* Answers wait in the socket until we read them; room for many
	 * (best effort: the kernel clamps it, and io.c reads after every
	 * request anyway). */
	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size,
		       sizeof(size)) < 0)
		(void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size,
				 sizeof(size));
	/* Large requests (a 1 MiB value) need a send buffer over the
	 * default.  The FORCE variant needs CAP_NET_ADMIN, which changing
	 * state over genl needs anyway; without it the limit is
	 * net.core.wmem_max, and a request over it fails alone with
	 * -EMSGSIZE (io.c). */
	if (setsockopt(c->fd, SOL_SOCKET, SO_SNDBUFFORCE, &ssize,
		       sizeof(ssize)) < 0)
		(void)setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &ssize,
				 sizeof(ssize));
	err = resolve_family(c, &id);
	if (err)
		return err;
	c->family = id;
	return 0;
}
