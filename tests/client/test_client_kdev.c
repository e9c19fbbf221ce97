// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_client_kdev.c - libtdbclient's tdb.ko backend without tdb.ko:
 * the backend choice (TDBC_KERNEL, $TDB_BACKEND, /dev/tdb, $TDB_SOCKET)
 * and its error messages, then the /dev/tdb paths against a stand-in
 * device.
 *
 * The stand-in replaces the library's open/ioctl/mmap on the device
 * (tdbc__kdev_sys, internal.h) and plays tdb.ko's side of include/tdb/
 * kdev.h in this process: TDB_IOC_ATTACH formats two memfd rings, mmap
 * offsets pick a ring by slot (refusing what kdev.h refuses: a writable
 * completion ring data area or feed), TDB_IOC_ENTER consumes the
 * submission ring and answers into the completion ring with src/ring
 * and src/proto, a tiny key-value table behind it, WATCH acks with a
 * struct tdb_dev_watch_cookie and PUT/DEL write the feed.  The "device
 * file" is an eventfd: poll() on it is real, the stand-in makes it
 * readable when it writes the feed and clears it at ENTER, as kdev.h's
 * POLL says; it can hold answers back (tdb.ko holding them until they
 * are durable) while a thread plays the supervisor.  What it cannot
 * show is the real module: tests/kernel does.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"
#include "tdb/kdev.h"

#define RING_DATA (4u << 20)
#define FEED_DATA (64u << 10)
#define NKEYS 256

/* --- the stand-in device ------------------------------------------------ */

struct kv {
	char key[64];
	size_t klen;
	unsigned char val[256];
	size_t vlen;
	bool used;
};

static char node[64];           /* an existing file: the "device node" */

static struct fake {
	int fd;                 /* the eventfd the library holds */
	int mfd[3];             /* memfds: submission, completion, feed */
	size_t mlen[3];
	void *mem[3];           /* our own mappings */
	struct tdb_ring sq, cq, feed;   /* we consume sq, produce cq/feed */
	bool attached, watching;
	unsigned int per_enter; /* requests answered per ENTER (0: all) */
	int enter_errno;        /* ENTER fails with this (0: no) */
	int hold;               /* answers are written but not published
				 * while set (tdb.ko holding them until
				 * durable); another thread clears it */
	unsigned int enters, answered;
	uint32_t cookie_len;    /* WATCH cookie length to send */
	struct kv kv[NKEYS];
} F;

static int fake_open(const char *path, int flags)
{
	(void)flags;
	if (strcmp(path, node)) {
		errno = ENOENT;
		return -1;
	}
	F.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return F.fd;
}

static int make_ring(int i, uint32_t kind, uint32_t data_size)
{
	static const char *const names[] = { "tdbc-fake-sq", "tdbc-fake-cq",
					     "tdbc-fake-feed" };

	F.mfd[i] = memfd_create(names[i], MFD_CLOEXEC);
	assert_true(F.mfd[i] >= 0);
	F.mlen[i] = TDB_RING_HDR_SIZE + data_size;
	assert_int_equal(ftruncate(F.mfd[i], (off_t)F.mlen[i]), 0);
	F.mem[i] = mmap(NULL, F.mlen[i], PROT_READ | PROT_WRITE, MAP_SHARED,
			F.mfd[i], 0);
	assert_true(F.mem[i] != MAP_FAILED);
	assert_int_equal(tdb_ring_format(F.mem[i], kind, data_size, 0), 0);
	return 0;
}

static void *ring_data(int i)
{
	return (unsigned char *)F.mem[i] + TDB_RING_HDR_SIZE;
}

static void fake_wake(void)
{
	uint64_t one = 1;

	assert_int_equal(write(F.fd, &one, sizeof(one)), sizeof(one));
}

/* Answer with NLMSG_ERROR (err 0: an ack), ext's text and cookie. */
static void answer_error(const struct nlmsghdr *req, int err,
			 const char *msg, const void *cookie, uint32_t clen)
{
	struct tdb_proto_extack ext = { .msg = msg, .cookie_len = clen };
	void *p = tdb_ring_reserve(&F.cq, TDB_PROTO_ERROR_MAX);
	long len;

	assert_non_null(p);
	if (clen)
		memcpy(ext.cookie, cookie, clen);
	len = tdb_proto_error(p, TDB_PROTO_ERROR_MAX, req, err, &ext);
	assert_true(len > 0);
	assert_int_equal(tdb_ring_commit(&F.cq, (size_t)len), 0);
}

static void answer_msg(struct tdb_ring *r, const struct tdb_proto_msg *a)
{
	struct tdb_proto_extack ext;
	long size = tdb_proto_size(TDB_PROTO_ANSWER, a, &ext);
	void *p;

	assert_true(size > 0);
	p = tdb_ring_reserve(r, (size_t)size);
	assert_non_null(p);
	assert_int_equal(tdb_proto_build(p, (size_t)size, TDB_PROTO_ANSWER,
					 a, &ext), size);
	assert_int_equal(tdb_ring_commit(r, (size_t)size), 0);
}

static struct kv *kv_find(const void *key, size_t klen, bool make)
{
	int i;

	for (i = 0; i < NKEYS; i++)
		if (F.kv[i].used && F.kv[i].klen == klen &&
		    !memcmp(F.kv[i].key, key, klen))
			return &F.kv[i];
	if (!make)
		return NULL;
	for (i = 0; i < NKEYS; i++)
		if (!F.kv[i].used) {
			F.kv[i].used = true;
			return &F.kv[i];
		}
	return NULL;
}

static void feed_change(const struct tdb_proto_msg *m)
{
	struct tdb_proto_msg n = { .cmd = m->cmd,
				   .attrs = TDB_PROTO_BIT(TDB_A_KEY) |
					    TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = m->table, .key = m->key,
				   .key_len = m->key_len };

	if (!F.watching)
		return;
	if (m->cmd == TDB_CMD_PUT) {
		n.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		n.value = m->value;
		n.value_len = m->value_len;
	}
	answer_msg(&F.feed, &n);
	assert_true(tdb_ring_publish(&F.feed) >= 0);
	fake_wake();
}

static int exec_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct tdb_proto_extack ext;
	struct tdb_proto_msg m, a = { 0 };
	struct kv *kv;
	int err;

	(void)arg;
	err = tdb_proto_parse(nlh, nlh->nlmsg_len, TDB_PROTO_REQUEST, &m,
			      &ext);
	if (err) {
		answer_error(nlh, err, ext.msg, NULL, 0);
		return 0;
	}
	a.cmd = m.cmd;
	a.seq = m.seq;
	switch (m.cmd) {
	case TDB_CMD_TABLE_CREATE:
	case TDB_CMD_UNWATCH:
		answer_error(nlh, 0, NULL, NULL, 0);
		break;
	case TDB_CMD_TABLE_STAT:
		if (strcmp(m.table, "t")) {
			answer_error(nlh, -ENOENT, "no such table", NULL, 0);
			break;
		}
		a.attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
			  TDB_PROTO_BIT(TDB_A_STAT);
		a.table = "t";
		a.stat.present = (1u << TDB_STAT_A_RECORDS) |
				 (1u << TDB_STAT_A_BYTES_USED) |
				 (1u << TDB_STAT_A_BYTES_ALLOCATED) |
				 (1u << TDB_STAT_A_EXTENTS) |
				 (1u << TDB_STAT_A_MAX_EXTENTS) |
				 (1u << TDB_STAT_A_PAGE_SIZE);
		a.stat.max_extents = 1;
		a.stat.page_size = 4096;
		answer_msg(&F.cq, &a);
		break;
	case TDB_CMD_PUT:
		kv = kv_find(m.key, m.key_len, true);
		if (!kv || m.key_len > sizeof(kv->key) ||
		    m.value_len > sizeof(kv->val)) {
			if (kv && !kv->klen)
				kv->used = false;
			answer_error(nlh, -ENOSPC, "the fake is full", NULL,
				     0);
			break;
		}
		memcpy(kv->key, m.key, m.key_len);
		kv->klen = m.key_len;
		tdb_proto_value_copy(&m, kv->val);
		kv->vlen = m.value_len;
		feed_change(&m);
		answer_error(nlh, 0, NULL, NULL, 0);
		break;
	case TDB_CMD_GET:
		kv = kv_find(m.key, m.key_len, false);
		if (!kv) {
			answer_error(nlh, -ENOENT, "no such key (fake)", NULL,
				     0);
			break;
		}
		a.attrs = TDB_PROTO_BIT(TDB_A_VALUE);
		a.value = kv->val;
		a.value_len = (uint32_t)kv->vlen;
		answer_msg(&F.cq, &a);
		break;
	case TDB_CMD_DEL:
		kv = kv_find(m.key, m.key_len, false);
		if (!kv) {
			answer_error(nlh, -ENOENT, "no such key (fake)", NULL,
				     0);
			break;
		}
		memset(kv, 0, sizeof(*kv));
		feed_change(&m);
		answer_error(nlh, 0, NULL, NULL, 0);
		break;
	case TDB_CMD_WATCH: {
		struct tdb_dev_watch_cookie ck;
		uint64_t off = 2 * TDB_DEV_SLOT;

		if (!F.watching) {
			make_ring(2, TDB_RING_FEED, FEED_DATA);
			assert_int_equal(tdb_ring_attach_producer(&F.feed,
				F.mem[2], ring_data(2), FEED_DATA,
				TDB_RING_FEED), 0);
			F.watching = true;
		}
		ck.seq = F.feed.seq;
		ck.offset_lo = (uint32_t)off;
		ck.offset_hi = (uint32_t)(off >> 32);
		answer_error(nlh, 0, NULL, &ck, F.cookie_len);
		break;
	}
	default:
		answer_error(nlh, -EOPNOTSUPP, "the fake does not do that",
			     NULL, 0);
	}
	F.answered++;
	return 0;
}

static int fake_enter(void)
{
	uint64_t v;
	unsigned int n = 0;
	int r;

	F.enters++;
	if (F.enter_errno) {
		errno = F.enter_errno;
		return -1;
	}
	if (!F.attached) {
		errno = ENXIO;
		return -1;
	}
	/* Feeds written before now no longer make poll() return. */
	(void)!read(F.fd, &v, sizeof(v));
	for (;;) {
		if (F.per_enter && n >= F.per_enter)
			break;
		if (!tdb_ring_has_room(&F.cq, F.cq.max_msg))
			break;
		r = tdb_ring_consume(&F.sq, 1, exec_cb, NULL);
		assert_true(r >= 0);
		if (!r)
			break;
		n++;
	}
	if (__atomic_load_n(&F.hold, __ATOMIC_ACQUIRE))
		return 0;
	assert_true(tdb_ring_publish(&F.cq) >= 0);
	/* Answers waiting: poll() says so, as the real device does. */
	if (tdb_ring_pending(&F.cq) > 0)
		fake_wake();
	return 0;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	struct tdb_dev_attach *a = arg;

	if (fd != F.fd) {
		errno = ENOTTY;
		return -1;
	}
	if (req == TDB_IOC_ENTER)
		return fake_enter();
	if (req != TDB_IOC_ATTACH) {
		errno = ENOTTY;
		return -1;
	}
	if (F.attached) {
		errno = EBUSY;
		return -1;
	}
	assert_int_equal(a->version, TDB_DEV_VERSION);
	assert_int_equal(a->flags, 0);
	assert_int_equal(a->sq_data_size, RING_DATA);
	assert_int_equal(a->cq_data_size, RING_DATA);
	make_ring(0, TDB_RING_SUBMIT, a->sq_data_size);
	make_ring(1, TDB_RING_COMPLETE, a->cq_data_size);
	assert_int_equal(tdb_ring_attach_consumer(&F.sq, F.mem[0], ring_data(0),
						  RING_DATA, TDB_RING_SUBMIT),
			 0);
	assert_int_equal(tdb_ring_attach_producer(&F.cq, F.mem[1], ring_data(1),
						  RING_DATA,
						  TDB_RING_COMPLETE), 0);
	a->sq_offset = TDB_DEV_OFF_SQ;
	a->cq_offset = TDB_DEV_OFF_CQ;
	a->sq_max_msg = F.sq.max_msg;
	a->cq_max_msg = F.cq.max_msg;
	F.attached = true;
	return 0;
}

static void *fake_mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	uint64_t slot = (uint64_t)off / TDB_DEV_SLOT;
	uint64_t rel = (uint64_t)off % TDB_DEV_SLOT;
	bool data = rel >= TDB_RING_HDR_SIZE;

	if (fd != F.fd)
		return mmap(addr, len, prot, flags, fd, off);
	if (!(flags & MAP_SHARED) || slot > 2 || (slot == 2 && !F.watching) ||
	    (slot < 2 && !F.attached) || rel % 4096 ||
	    rel + len > F.mlen[slot]) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	/* kdev.h: completion data and feeds are read-only for clients. */
	if ((prot & PROT_WRITE) && ((slot == 1 && data) || slot == 2)) {
		errno = EACCES;
		return MAP_FAILED;
	}
	return mmap(addr, len, prot, flags, F.mfd[slot], (off_t)rel);
}

static void fake_reset(void)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (F.mem[i])
			munmap(F.mem[i], F.mlen[i]);
		if (F.mfd[i] > 0)
			close(F.mfd[i]);
	}
	if (F.attached) {
		tdb_ring_detach(&F.sq);
		tdb_ring_detach(&F.cq);
	}
	if (F.watching)
		tdb_ring_detach(&F.feed);
	memset(&F, 0, sizeof(F));
	F.fd = -1;
	F.cookie_len = sizeof(struct tdb_dev_watch_cookie);
}

/* Mappings of the stand-in's memfds in this process. */
static int fake_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "memfd:tdbc-fake"))
			n++;
	fclose(f);
	return n;
}

/* --- environment -------------------------------------------------------- */

static struct tdbc_kdev_sys real_sys;

static int setup(void **state)
{
	int fd;

	(void)state;
	fake_reset();
	unsetenv(TDBC_BACKEND_ENV);
	unsetenv(TDBC_SOCKET_ENV);
	tdbc__kdev_sys = real_sys;
	strcpy(node, "/tmp/tdbc-kdev-XXXXXX");
	fd = mkstemp(node);
	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(node);
	fake_reset();
	tdbc__kdev_sys = real_sys;
	unsetenv(TDBC_BACKEND_ENV);
	unsetenv(TDBC_SOCKET_ENV);
	return 0;
}

/* Use the stand-in as the device (its node is F.path, which exists). */
static void use_fake(void)
{
	tdbc__kdev_sys.dev_path = node;
	tdbc__kdev_sys.open = fake_open;
	tdbc__kdev_sys.ioctl = fake_ioctl;
	tdbc__kdev_sys.mmap = fake_mmap;
}

static bool real_dev_exists(void)
{
	struct stat st;

	return stat(TDB_DEV_PATH, &st) == 0;
}

/* --- the backend choice ------------------------------------------------- */

static void test_backend_bogus(void **state)
{
	struct tdbc *c = (void *)1;
	char msg[256];

	(void)state;
	setenv(TDBC_BACKEND_ENV, "bogus", 1);
	assert_int_equal(tdbc_connect(&c, NULL, 0, msg, sizeof(msg)),
			 -EINVAL);
	assert_null(c);
	assert_non_null(strstr(msg, "TDB_BACKEND=bogus"));
	/* also with a path, and with TDBC_KERNEL */
	assert_int_equal(tdbc_connect(&c, "/nonexistent/sock", TDBC_KERNEL,
				      msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "TDB_BACKEND=bogus"));
}

static void test_backend_kernel_missing(void **state)
{
	struct tdbc *c = (void *)1;
	char msg[256];

	(void)state;
	if (real_dev_exists())
		skip();
	setenv(TDBC_BACKEND_ENV, "kernel", 1);
	assert_int_equal(tdbc_connect(&c, NULL, 0, msg, sizeof(msg)),
			 -ENOENT);
	assert_null(c);
	assert_non_null(strstr(msg, "/dev/tdb"));
	/* a socket path does not matter once the kernel is asked for */
	assert_int_equal(tdbc_connect(&c, "/nonexistent/sock", 0, msg,
				      sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "/dev/tdb"));
	unsetenv(TDBC_BACKEND_ENV);
	assert_int_equal(tdbc_connect(&c, NULL, TDBC_KERNEL, msg,
				      sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "/dev/tdb"));
}

static void test_backend_conflict_and_flags(void **state)
{
	struct tdbc *c = (void *)1;
	char msg[256];

	(void)state;
	setenv(TDBC_BACKEND_ENV, "daemon", 1);
	assert_int_equal(tdbc_connect(&c, NULL, TDBC_KERNEL, msg,
				      sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "TDBC_KERNEL"));
	unsetenv(TDBC_BACKEND_ENV);
	assert_int_equal(tdbc_connect(&c, NULL, 1u << 7, msg, sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "0x80"));
}

/* The daemon is chosen: the error names the socket, not the device. */
static void expect_daemon(const char *path, const char *sock)
{
	struct tdbc *c = (void *)1;
	char msg[256];
	int err = tdbc_connect(&c, path, 0, msg, sizeof(msg));

	assert_true(err == -ENOENT || err == -ECONNREFUSED);
	assert_null(c);
	assert_non_null(strstr(msg, sock));
	assert_non_null(strstr(msg, "tdbd"));
	assert_int_equal(F.enters, 0);
}

static void test_backend_auto(void **state)
{
	const char *sock = "/nonexistent-tdbc/tdbd.sock";
	struct tdbc *c = NULL;
	char msg[256];

	(void)state;
	use_fake();
	/* a socket named by the caller or $TDB_SOCKET: tdbd */
	expect_daemon(sock, sock);
	setenv(TDBC_SOCKET_ENV, sock, 1);
	expect_daemon(NULL, sock);
	/* TDB_BACKEND=daemon: tdbd, whatever exists */
	unsetenv(TDBC_SOCKET_ENV);
	setenv(TDBC_BACKEND_ENV, "daemon", 1);
	{
		struct tdbc *d = (void *)1;
		int err = tdbc_connect(&d, NULL, 0, msg, sizeof(msg));

		assert_true(err < 0);
		assert_non_null(strstr(msg, TDBC_SOCKET_DEFAULT));
	}
	/* nothing named, the device exists: the kernel */
	unsetenv(TDBC_BACKEND_ENV);
	assert_int_equal(tdbc_connect(&c, NULL, 0, msg, sizeof(msg)), 0);
	assert_true(tdbc_uses_rings(c));
	assert_true(F.attached);
	tdbc_close(c);
	/* the device gone: tdbd at the default socket */
	fake_reset();
	tdbc__kdev_sys.dev_path = "/nonexistent-tdbc/tdb";
	expect_daemon(NULL, TDBC_SOCKET_DEFAULT);
}

static void test_backend_genl_missing(void **state)
{
	struct tdbc *c = (void *)1;
	char msg[256];
	int fd, err;

	(void)state;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		skip();
	close(fd);
	setenv(TDBC_BACKEND_ENV, "kernel", 1);
	err = tdbc_connect(&c, NULL, TDBC_NO_RINGS, msg, sizeof(msg));
	if (err == 0) {         /* tdb.ko is loaded here */
		assert_false(tdbc_uses_rings(c));
		tdbc_close(c);
		skip();
	}
	assert_int_equal(err, -ENOENT);
	assert_null(c);
	assert_non_null(strstr(msg, "generic netlink family tdb"));
}

/* --- /dev/tdb against the stand-in ------------------------------------- */

static struct tdbc *fake_connect(void)
{
	struct tdbc *c = NULL;
	char msg[256];

	use_fake();
	setenv(TDBC_BACKEND_ENV, "kernel", 1);
	assert_int_equal(tdbc_connect(&c, NULL, 0, msg, sizeof(msg)), 0);
	assert_non_null(c);
	return c;
}

static void test_kdev_calls(void **state)
{
	struct tdbc_table *t;
	struct tdbc *c;
	char buf[64];
	unsigned int e;
	long n;

	(void)state;
	c = fake_connect();
	assert_true(tdbc_uses_rings(c));
	/* the library maps header + data of both rings */
	assert_int_equal(fake_mappings(), 2 + 4);
	assert_int_equal(tdbc_table_create(c, "t", NULL), 0);
	assert_int_equal(tdbc_table_open(c, "nope", &t), -ENOENT);
	assert_string_equal(tdbc_errmsg(c), "no such table");
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	/* a blocking call costs one ENTER */
	e = F.enters;
	assert_int_equal(tdbc_put(t, NULL, "k1", 2, "v1", 2, 0), 0);
	assert_int_equal(F.enters - e, 1);
	n = tdbc_get(t, NULL, "k1", 2, buf, sizeof(buf), NULL);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "v1", 2);
	assert_int_equal(tdbc_get(t, NULL, "k2", 2, buf, sizeof(buf), NULL),
			 -ENOENT);
	assert_string_equal(tdbc_errmsg(c), "no such key (fake)");
	assert_int_equal(tdbc_del(t, NULL, "k1", 2), 0);
	assert_int_equal(tdbc_del(t, NULL, "k1", 2), -ENOENT);
	/* the stand-in does not do transactions: its error comes back */
	{
		struct tdbc_txn *x;

		assert_int_equal(tdbc_txn_begin(c, &x), -EOPNOTSUPP);
		assert_string_equal(tdbc_errmsg(c),
				    "the fake does not do that");
	}
	tdbc_table_close(t);
	tdbc_close(c);
	/* every mapping of the library is gone (the stand-in's remain) */
	assert_int_equal(fake_mappings(), 2);
}

/* The kernel answers only part of what was submitted per ENTER (as when
 * its completion ring fills): waiting ENTERs again until all came. */
static void test_kdev_partial_enter(void **state)
{
	struct tdbc_req reqs[100];
	struct tdbc_cqe cqes[100];
	struct tdbc_table *t;
	struct tdbc *c;
	char keys[100][8];
	unsigned int i, got = 0, base;
	int n;

	(void)state;
	c = fake_connect();
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	F.per_enter = 3;
	base = F.answered;
	for (i = 0; i < 100; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%u", i);
		reqs[i] = (struct tdbc_req){ .op = TDBC_OP_PUT, .table = t,
					     .key = keys[i],
					     .klen = strlen(keys[i]),
					     .val = "v", .vlen = 1,
					     .user = i };
	}
	assert_int_equal(tdbc_submit(c, reqs, 100), 100);
	assert_int_equal(F.answered - base, 3); /* the publish's ENTER */
	while (got < 100) {
		n = tdbc_reap(c, cqes, 100, 100 - got, 5000);
		assert_true(n > 0);
		for (i = 0; i < (unsigned int)n; i++)
			assert_int_equal(cqes[i].res, 0);
		got += (unsigned int)n;
	}
	assert_int_equal(F.answered - base, 100);
	/* a blocking call in the same state */
	assert_int_equal(tdbc_put(t, NULL, "x", 1, "y", 1, 0), 0);
	/* reap with timeout 0 still makes the kernel work */
	assert_int_equal(tdbc_submit(c, reqs, 5), 5);
	for (got = 0, i = 0; got < 5 && i < 10; i++) {
		n = tdbc_reap(c, cqes, 5, 0, 0);
		assert_true(n >= 0);
		got += (unsigned int)n;
	}
	assert_int_equal(got, 5);
	tdbc_table_close(t);
	tdbc_close(c);
}

static void *late_writer(void *arg)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_PUT,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE) |
					    TDB_PROTO_BIT(TDB_A_KEY) |
					    TDB_PROTO_BIT(TDB_A_VALUE),
				   .table = "t", .key = "late", .key_len = 4,
				   .value = "L", .value_len = 1 };

	(void)arg;
	usleep(150 * 1000);
	feed_change(&m);        /* another client's PUT, as tdb.ko sees it */
	return NULL;
}

static void test_kdev_watch(void **state)
{
	struct tdbc_watch *w;
	struct tdbc_table *t;
	struct tdbc_event ev;
	struct tdbc *c;
	pthread_t th;
	uint64_t t0;

	(void)state;
	c = fake_connect();
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	assert_int_equal(tdbc_watch(t, "k", 1, &w), 0);
	assert_int_equal(fake_mappings(), 3 + 4 + 2);   /* + the feed */
	assert_int_equal(tdbc_put(t, NULL, "k1", 2, "v1", 2, 0), 0);
	assert_int_equal(tdbc_put(t, NULL, "z", 1, "no", 2, 0), 0);
	assert_int_equal(tdbc_del(t, NULL, "k1", 2), 0);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_PUT);
	assert_int_equal(ev.klen, 2);
	assert_memory_equal(ev.key, "k1", 2);
	assert_int_equal(ev.vlen, 2);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 1);
	assert_int_equal(ev.kind, TDBC_EV_DEL);     /* "z" was filtered */
	/* nothing more: a timed wait sleeps (in poll) and times out */
	t0 = tdbc__now_ns();
	assert_int_equal(tdbc_watch_next(w, &ev, 120, NULL), 0);
	assert_true(tdbc__now_ns() - t0 >= 100 * 1000000ull);
	/* a write while we sleep wakes us long before the timeout; "late"
	 * does not match the prefix, so one more comes after it */
	assert_int_equal(pthread_create(&th, NULL, late_writer, NULL), 0);
	t0 = tdbc__now_ns();
	assert_int_equal(tdbc_watch_next(w, &ev, 300, NULL), 0);
	pthread_join(th, NULL);
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), 0);
	assert_int_equal(tdbc_watch_next(w, &ev, 0, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, late_writer, NULL), 0);
	t0 = tdbc__now_ns();
	assert_int_equal(tdbc_watch_next(w, &ev, 5000, NULL), 1);
	assert_true(tdbc__now_ns() - t0 < 2000 * 1000000ull);
	assert_int_equal(ev.klen, 4);
	assert_memory_equal(ev.key, "late", 4);
	pthread_join(th, NULL);
	tdbc_close(c);          /* frees both watches and the table */
	assert_int_equal(fake_mappings(), 3);
}

static void *durable_later(void *arg)
{
	(void)arg;
	usleep(200 * 1000);
	__atomic_store_n(&F.hold, 0, __ATOMIC_RELEASE);
	fake_wake();            /* POLLIN: held answers may go out */
	return NULL;
}

/* tdb.ko holds a change's answer until its record is durable (a
 * supervisor with sync always): ENTER returns without it, so the call
 * waits in poll() and ENTERs again when woken. */
static void test_kdev_held_answer(void **state)
{
	struct tdbc_table *t;
	struct tdbc *c;
	pthread_t th;
	unsigned int e;
	uint64_t t0;

	(void)state;
	c = fake_connect();
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	__atomic_store_n(&F.hold, 1, __ATOMIC_RELEASE);
	e = F.enters;
	t0 = tdbc__now_ns();
	assert_int_equal(pthread_create(&th, NULL, durable_later, NULL), 0);
	assert_int_equal(tdbc_put(t, NULL, "h", 1, "v", 1, 0), 0);
	assert_true(tdbc__now_ns() - t0 >= 150 * 1000000ull);
	assert_true(F.enters - e >= 2);
	pthread_join(th, NULL);
	tdbc_table_close(t);
	tdbc_close(c);
}

static void test_kdev_bad_cookie(void **state)
{
	struct tdbc_watch *w = (void *)1;
	struct tdbc_table *t;
	struct tdbc *c;

	(void)state;
	c = fake_connect();
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	F.cookie_len = 4;       /* tdbd's cookie, not /dev/tdb's */
	assert_int_equal(tdbc_watch(t, NULL, 0, &w), -EPROTO);
	assert_null(w);
	assert_non_null(strstr(tdbc_errmsg(c), "cookie"));
	/* the connection is dead from then on */
	assert_int_equal(tdbc_put(t, NULL, "a", 1, "b", 1, 0), -EPROTO);
	tdbc_close(c);
}

static void test_kdev_enter_eproto(void **state)
{
	struct tdbc_table *t;
	struct tdbc *c;

	(void)state;
	c = fake_connect();
	assert_int_equal(tdbc_table_open(c, "t", &t), 0);
	F.enter_errno = EPROTO;
	assert_int_equal(tdbc_put(t, NULL, "a", 1, "b", 1, 0), -EPROTO);
	assert_non_null(strstr(tdbc_errmsg(c), "broken"));
	F.enter_errno = 0;
	assert_int_equal(tdbc_put(t, NULL, "a", 1, "b", 1, 0), -EPROTO);
	tdbc_close(c);
}

/* ATTACH refused (e.g. a second ATTACH, or an old module): the message
 * names the ioctl and the device. */
static void test_kdev_attach_refused(void **state)
{
	struct tdbc *c = (void *)1;
	char msg[256];

	(void)state;
	use_fake();
	setenv(TDBC_BACKEND_ENV, "kernel", 1);
	F.attached = true;      /* the stand-in answers EBUSY */
	assert_int_equal(tdbc_connect(&c, NULL, 0, msg, sizeof(msg)),
			 -EBUSY);
	assert_null(c);
	assert_non_null(strstr(msg, "TDB_IOC_ATTACH"));
	assert_non_null(strstr(msg, node));
	F.attached = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backend_bogus, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backend_kernel_missing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_backend_conflict_and_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backend_auto, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backend_genl_missing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_kdev_calls, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_partial_enter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_watch, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_held_answer, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_bad_cookie, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_enter_eproto, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kdev_attach_refused,
						setup, teardown),
	};

	real_sys = tdbc__kdev_sys;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
