// SPDX-License-Identifier: MIT
/*
 * conn.c - connections: choosing the backend (tdbd or tdb.ko: TDBC_KERNEL,
 * $TDB_BACKEND, /dev/tdb), finding the socket, connecting, ATTACH and the
 * mapping of the rings it hands over, closing, and the error texts
 * (tdbc_errmsg, tdbc_strerror).  Also the argument checks the other
 * files share, so that a bad key is refused before anything is sent.
 * tdb.ko's own connecting is kdev.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

/* --- handles ------------------------------------------------------------ */

void tdbc__link(struct tdbc *c, struct tdbc_handle *h, enum tdbc_kind k)
{
	h->c = c;
	h->kind = k;
	h->link.next = c->handles.next;
	h->link.prev = &c->handles;
	c->handles.next->prev = &h->link;
	c->handles.next = &h->link;
}

void tdbc__unlink(struct tdbc_handle *h)
{
	h->link.prev->next = h->link.next;
	h->link.next->prev = h->link.prev;
	h->link.next = h->link.prev = &h->link;
}

/* --- errors ------------------------------------------------------------- */

static void vset(struct tdbc *c, const char *fmt, va_list ap)
{
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
}

int tdbc__fail(struct tdbc *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(c, fmt, ap);
	va_end(ap);
	return err;
}

int tdbc__die(struct tdbc *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->dead)
		return c->dead;     /* the first reason is the one to keep */
	c->dead = err;
	va_start(ap, fmt);
	vset(c, fmt, ap);
	va_end(ap);
	return err;
}

const char *tdbc_errmsg(const struct tdbc *c)
{
	return c ? c->errmsg : "no connection";
}

const char *tdbc_strerror(int err)
{
	const char *s;

	if (err < 0)
		err = -err;
	switch (err) {
	case 0:            return "success";
	/* tdbc_connect's message (tdbc_errmsg or its errmsg) says when
	 * these came from the socket instead: "cannot connect to tdbd at
	 * PATH: no such socket (is tdbd running?)". */
	case ENOENT:       return "no such table or key";
	case EEXIST:       return "key or table exists";
	case EACCES:       return "the table's mode forbids it";
	case ENOSPC:       return "no space (the table at its size cap, or "
				  "the owner's disk full)";
	case E2BIG:        return "key or value over its limit";
	case EINVAL:       return "invalid argument";
	case ENOBUFS:      return "no buffer space (a value bigger than the "
				  "buffer, or a buffer of the owner full)";
	case ECONNREFUSED: return "no daemon at the socket path";
	case EPIPE:
	case ECONNRESET:   return "the daemon went away; the connection is "
				  "dead";
	case EPROTO:       return "the daemon broke the protocol; the "
				  "connection is dead";
	case ETIMEDOUT:    return "timed out";
	case EOVERFLOW:    return "the watcher fell behind and lost changes";
	case ENAMETOOLONG: return "name too long";
	case EAGAIN:       return "try again (the submission ring is full, "
				  "or tdb.ko is recovering)";
	/* libc's texts start with a capital; tdb's are lower case. */
	case EPERM:        return "operation not permitted";
	case ENOMEM:       return "out of memory";
	case EBUSY:        return "busy";
	case EIO:          return "input/output error";
	case EBADF:        return "bad file descriptor";
	case ENOTCONN:     return "not connected";
	case EOPNOTSUPP:   return "not supported";
	case ENODEV:       return "no such device";
	case EMSGSIZE:     return "message too long";
	/* issue 24: conditions, serializable commits, INCR */
	case ECANCELED:    return "condition failed: the key is not at the "
				  "version given (or is absent); nothing "
				  "was changed";
	case ESTALE:       return "a key this transaction read was changed "
				  "by another client; run it again (from "
				  "tdbc_read_end: the tables changed during "
				  "the read section)";
	case EDOM:         return "the value is not a decimal integer "
				  "(a signed 64-bit one, as INCR keeps)";
	case ERANGE:       return "out of range: the sum does not fit a "
				  "signed 64-bit integer, or a TTL or "
				  "deadline is more than 10 years ahead";
	case ENOTSOCK:     return "not a socket";
	case EROFS:        return "read-only file system";
	case EDQUOT:       return "disk quota exceeded";
	case EINTR:        return "interrupted";
	}
	s = strerrordesc_np(err);
	return s ? s : "unknown error";
}

/* --- arguments ---------------------------------------------------------- */

int tdbc__check_key(struct tdbc *c, const void *key, size_t klen)
{
	if (klen < TDB_KEY_MIN)
		return tdbc__fail(c, -EINVAL, "key is empty");
	if (klen > TDB_KEY_MAX)
		return tdbc__fail(c, -E2BIG, "key is longer than %u bytes "
				  "(%zu)", TDB_KEY_MAX, klen);
	if (!key)
		return tdbc__fail(c, -EINVAL, "key is NULL");
	return 0;
}

int tdbc__check_value(struct tdbc *c, const void *val, size_t vlen)
{
	if (vlen > TDB_VALUE_MAX)
		return tdbc__fail(c, -E2BIG, "value is longer than %u bytes "
				  "(%zu)", TDB_VALUE_MAX, vlen);
	if (vlen && !val)
		return tdbc__fail(c, -EINVAL, "value is NULL");
	return 0;
}

int tdbc__check_prefix(struct tdbc *c, const void *prefix, size_t plen)
{
	if (plen > TDB_KEY_MAX)
		return tdbc__fail(c, -E2BIG, "prefix is longer than %u bytes "
				  "(%zu)", TDB_KEY_MAX, plen);
	if (plen && !prefix)
		return tdbc__fail(c, -EINVAL, "prefix is NULL");
	return 0;
}

/* LMDB's order: bytewise, a key before the longer keys it starts. */
int tdbc__key_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	int d = memcmp(a, b, alen < blen ? alen : blen);

	if (d)
		return d;
	return alen < blen ? -1 : alen > blen;
}

int tdbc__check_range(struct tdbc *c, const struct tdbc_range *r)
{
	const unsigned int all = TDBC_RANGE_FROM_EXCL | TDBC_RANGE_TO_INCL |
				 TDBC_RANGE_REVERSE;

	if (!r)
		return tdbc__fail(c, -EINVAL, "the range is NULL");
	if (r->flags & ~all)
		return tdbc__fail(c, -EINVAL, "unknown range flags %#x",
				  r->flags & ~all);
	if (r->from && (!r->from_len || r->from_len > TDB_KEY_MAX))
		return tdbc__fail(c, r->from_len ? -E2BIG : -EINVAL,
				  "the range's from is %zu bytes (a key has "
				  "%u to %u)", r->from_len, TDB_KEY_MIN,
				  TDB_KEY_MAX);
	if (r->to && (!r->to_len || r->to_len > TDB_KEY_MAX))
		return tdbc__fail(c, r->to_len ? -E2BIG : -EINVAL,
				  "the range's to is %zu bytes (a key has "
				  "%u to %u)", r->to_len, TDB_KEY_MIN,
				  TDB_KEY_MAX);
	if (r->from && r->to &&
	    tdbc__key_cmp(r->from, r->from_len, r->to, r->to_len) > 0)
		return tdbc__fail(c, -EINVAL, "the range's FROM is after its "
				  "TO");
	return 0;
}

/* --- ring memfds -------------------------------------------------------- */

/* The header span of a ring memfd: the huge page size on hugetlbfs. */
static int ring_span(int fd, size_t *span)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	*span = 4096;
	if ((unsigned long)sfs.f_type == HUGETLBFS_MAGIC) {
		size_t b = (size_t)sfs.f_bsize;

		if (b < 4096 || (b & (b - 1)))
			return -EPROTO;
		*span = b;
	}
	return 0;
}

int tdbc__map_ring(struct tdbc *c, int fd, bool data_writable,
		   bool hdr_writable, struct tdbc_map *map)
{
	int hprot = PROT_READ | (hdr_writable ? PROT_WRITE : 0);
	int dprot = PROT_READ | (data_writable ? PROT_WRITE : 0);
	struct stat st;
	size_t span = 4096;
	int err;

	memset(map, 0, sizeof(*map));
	if (fstat(fd, &st) < 0)
		return tdbc__fail(c, -errno, "cannot stat a ring from tdbd: "
				  "%s", strerror(errno));
	err = ring_span(fd, &span);
	if (err)
		return tdbc__fail(c, err, "cannot tell the page size of a "
				  "ring from tdbd");
	if (!S_ISREG(st.st_mode) || st.st_size <= (off_t)span ||
	    (uint64_t)st.st_size - span > TDB_RING_MAX_DATA)
		return tdbc__fail(c, -EPROTO, "a ring from tdbd has a bad "
				  "size (%lld bytes)", (long long)st.st_size);
	map->hdr_len = span;
	map->data_len = (size_t)st.st_size - span;
	map->hdr = mmap(NULL, span, hprot, MAP_SHARED, fd, 0);
	if (map->hdr == MAP_FAILED) {
		map->hdr = NULL;
		return tdbc__fail(c, -errno, "cannot map a ring header: %s",
				  strerror(errno));
	}
	map->data = mmap(NULL, map->data_len, dprot, MAP_SHARED, fd,
			 (off_t)span);
	if (map->data == MAP_FAILED) {
		err = -errno;
		map->data = NULL;
		tdbc__unmap_ring(map);
		return tdbc__fail(c, err, "cannot map a ring's data: %s",
				  strerror(-err));
	}
	return 0;
}

void tdbc__unmap_ring(struct tdbc_map *map)
{
	if (map->data)
		munmap(map->data, map->data_len);
	if (map->hdr)
		munmap(map->hdr, map->hdr_len);
	memset(map, 0, sizeof(*map));
}

/* --- connecting --------------------------------------------------------- */

const char *tdbc_socket_path(const char *path)
{
	const char *env;

	if (path && *path)
		return path;
	env = getenv(TDBC_SOCKET_ENV);
	if (env && *env)
		return env;
	return TDBC_SOCKET_DEFAULT;
}

int tdbc_uses_rings(const struct tdbc *c)
{
	return c && c->rings;
}

static int attach_rings(struct tdbc *c, const int fds[3])
{
	int err;

	err = tdbc__map_ring(c, fds[0], true, true, &c->sq_map);
	if (!err)
		err = tdbc__map_ring(c, fds[1], false, true, &c->cq_map);
	if (err)
		return err;
	err = tdb_ring_attach_producer(&c->sq, c->sq_map.hdr, c->sq_map.data,
				       c->sq_map.data_len, TDB_RING_SUBMIT);
	if (err)
		return tdbc__fail(c, err, "submission ring from tdbd: %s",
				  tdb_ring_error(&c->sq) ?
				  tdb_ring_error(&c->sq) : strerror(-err));
	err = tdb_ring_attach_consumer(&c->cq, c->cq_map.hdr, c->cq_map.data,
				       c->cq_map.data_len, TDB_RING_COMPLETE);
	if (err)
		return tdbc__fail(c, err, "completion ring from tdbd: %s",
				  tdb_ring_error(&c->cq) ?
				  tdb_ring_error(&c->cq) : strerror(-err));
	c->evfd = fds[2];
	tdb_ring_set_eventfd(&c->sq, c->evfd);
	c->rings = true;
	return 0;
}

/* ATTACH over the socket; its ack brings the rings' fds. */
static int attach(struct tdbc *c)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_ATTACH };
	struct tdbc_call call = { .nfds = 3, .nfds_opt = 1 };
	unsigned int i;
	int err;

	err = tdbc__call(c, &m, &call, true);
	if (err)
		return err;
	err = attach_rings(c, call.fds);
	/* The mappings keep the memfds alive; the eventfds are kept (in
	 * c->evfd, c->selfd) only when the rings are in use.  A tdbd
	 * before issue 17 sends no fourth (tdbc_fd then says so). */
	for (i = 0; i < call.nfds_got; i++)
		if (i == 0 || i == 1 || err)
			close(call.fds[i]);
	if (!err && call.nfds_got > 3)
		c->selfd = call.fds[3];
	return err;
}

/*
 * A failed connect(2), worded as a connect failure and saying what to do:
 * ENOENT and EACCES here are about the socket, never a table or key.
 */
static int connect_failed(struct tdbc *c, const char *path, int e)
{
	const char *why;

	switch (e) {
	case ENOENT:
		why = "no such socket (is tdbd running?)";
		break;
	case ECONNREFUSED:
		why = "nothing listens there (is tdbd running?)";
		break;
	case EACCES:
	case EPERM:
		why = "permission denied (not in the socket's group?)";
		break;
	case ENOTSOCK:
		why = "not a socket";
		break;
	default:
		why = tdbc_strerror(-e);
		break;
	}
	return tdbc__fail(c, -e, "cannot connect to tdbd at %s: %s", path,
			  why);
}

static int open_socket(struct tdbc *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);

	if (n >= sizeof(sa.sun_path))
		return tdbc__fail(c, -ENAMETOOLONG, "socket path %s is longer "
				  "than %zu bytes", path,
				  sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, n + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return tdbc__fail(c, -errno, "socket: %s", strerror(errno));
	while (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		return connect_failed(c, path, errno);
	}
	return 0;
}

static struct tdbc *conn_alloc(void)
{
	struct tdbc *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = -1;
	c->evfd = -1;
	c->pollfd = -1;
	c->selfd = -1;
	c->backend = TDBC_BE_DAEMON;
	c->family = TDB_PROTO_FAMILY;
	c->peer = "tdbd";
	c->handles.next = c->handles.prev = &c->handles;
	return c;
}

/*
 * Which owner: TDBC_KERNEL or TDB_BACKEND=kernel force tdb.ko,
 * TDB_BACKEND=daemon tdbd; with neither, tdb.ko when /dev/tdb exists and
 * no socket was named.  *kernel says which; -EINVAL for a TDB_BACKEND we
 * do not know, or one that contradicts TDBC_KERNEL.
 */
static int choose_backend(struct tdbc *c, const char *path,
			  unsigned int flags, bool *kernel)
{
	const char *be = getenv(TDBC_BACKEND_ENV);
	const char *sock = getenv(TDBC_SOCKET_ENV);

	*kernel = false;
	if (be && *be && strcmp(be, "kernel") && strcmp(be, "daemon"))
		return tdbc__fail(c, -EINVAL, "%s=%s: the backend is "
				  "\"kernel\" (tdb.ko, %s) or \"daemon\" "
				  "(tdbd)", TDBC_BACKEND_ENV, be,
				  tdbc__kdev_sys.dev_path);
	if (flags & TDBC_KERNEL) {
		if (be && !strcmp(be, "daemon"))
			return tdbc__fail(c, -EINVAL, "TDBC_KERNEL asks for "
					  "tdb.ko but %s=daemon asks for tdbd",
					  TDBC_BACKEND_ENV);
		*kernel = true;
	} else if (be && *be) {
		*kernel = !strcmp(be, "kernel");
	} else {
		*kernel = !(path && *path) && !(sock && *sock) &&
			  tdbc__kdev_exists();
	}
	return 0;
}

/* tdb.ko: /dev/tdb rings, or generic netlink without rings. */
static int connect_kernel(struct tdbc *c, unsigned int flags)
{
	const char *dev = tdbc__kdev_sys.dev_path;

	if (flags & TDBC_NO_RINGS)
		return tdbc__genl_connect(c);
	/* Say plainly that the module is missing, not just ENOENT. */
	if (!tdbc__kdev_exists())
		return tdbc__fail(c, -ENOENT, "tdb.ko's device %s does not "
				  "exist (is the module loaded? %s=daemon "
				  "uses tdbd instead)", dev,
				  TDBC_BACKEND_ENV);
	return tdbc__kdev_connect(c);
}

int tdbc_connect(struct tdbc **out, const char *path, unsigned int flags,
		 char *errmsg, size_t errmsg_size)
{
	const unsigned int known = TDBC_NO_RINGS | TDBC_KERNEL | TDBC_NO_MAP;
	const char *where = tdbc_socket_path(path);
	bool kernel = false;
	struct tdbc *c;
	int err;

	if (errmsg && errmsg_size)
		errmsg[0] = '\0';
	if (!out)
		return -EINVAL;
	*out = NULL;
	c = conn_alloc();
	if (!c) {
		if (errmsg && errmsg_size)
			snprintf(errmsg, errmsg_size, "out of memory");
		return -ENOMEM;
	}
	if (flags & ~known)
		err = tdbc__fail(c, -EINVAL, "unknown connect flags %#x",
				 flags & ~known);
	else
		err = choose_backend(c, path, flags, &kernel);
	if (!err && kernel) {
		err = connect_kernel(c, flags);
		if (err && errmsg && errmsg_size)
			snprintf(errmsg, errmsg_size, "%s", c->errmsg);
	} else if (!err) {
		err = open_socket(c, where);
		if (!err && !(flags & TDBC_NO_RINGS)) {
			err = attach(c);
			if (err && errmsg && errmsg_size)
				snprintf(errmsg, errmsg_size, "tdbd at %s: "
					 "ATTACH: %s", where, c->errmsg);
		} else if (err && errmsg && errmsg_size) {
			snprintf(errmsg, errmsg_size, "%s", c->errmsg);
		}
	} else if (errmsg && errmsg_size) {
		snprintf(errmsg, errmsg_size, "%s", c->errmsg);
	}
	if (!err)
		err = tdbc__reader_init(c, flags);
	if (err) {
		tdbc_close(c);
		return err;
	}
	c->errmsg[0] = '\0';
	*out = c;
	return 0;
}

/* --- closing ------------------------------------------------------------ */

static void free_handles(struct tdbc *c)
{
	while (c->handles.next != &c->handles) {
		struct tdbc_handle *h = (struct tdbc_handle *)c->handles.next;

		switch (h->kind) {
		case TDBC_K_TABLE:
			tdbc_table_close((struct tdbc_table *)h);
			break;
		case TDBC_K_TXN:
			/* tdbd aborts it when the connection goes */
			tdbc__unlink(h);
			free(h);
			break;
		case TDBC_K_SCAN:
			tdbc__scan_free((struct tdbc_scan *)h);
			break;
		case TDBC_K_WATCH:
			tdbc__watch_free((struct tdbc_watch *)h, false);
			break;
		}
	}
}

void tdbc_close(struct tdbc *c)
{
	unsigned int i;

	if (!c)
		return;
	free_handles(c);
	tdbc__reader_free(c);
	tdbc__async_free(c);
	if (c->rings) {
		tdb_ring_detach(&c->sq);
		tdb_ring_detach(&c->cq);
	}
	tdbc__unmap_ring(&c->sq_map);
	tdbc__unmap_ring(&c->cq_map);
	for (i = 0; i < c->nfdq; i++)
		close(c->fdq[i]);
	if (c->evfd >= 0)
		close(c->evfd);
	if (c->selfd >= 0)
		close(c->selfd);
	if (c->pollfd >= 0)
		close(c->pollfd);
	if (c->fd >= 0)
		close(c->fd);
	free(c->rbuf);
	free(c->sbuf);
	free(c);
}
