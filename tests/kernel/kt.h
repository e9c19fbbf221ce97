/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kt.h - what the kernel-stage tests (tests/kernel/) share.
 *
 * Each test runs against either owner:
 *  - tdb.ko (in the qemu guest: /init sets TDB_KTEST=1 and
 *    TDB_BACKEND=kernel): connections go to /dev/tdb; TDBC_NO_RINGS
 *    means generic netlink;
 *  - tdbd (the host suite: $TDBD set by meson): kt_init() starts a tdbd
 *    on a scratch socket with the integration harness, and connections
 *    go there; TDBC_NO_RINGS means the Unix socket.
 * Running on tdbd proves the test right; running on tdb.ko tests the
 * module.  Tests that only make sense on the module (raw /dev/tdb, raw
 * generic netlink, capabilities) call kt_need_kernel(), which skips (77)
 * on tdbd.  Failure reporting is the harness's CHECK(): file, line,
 * condition and a message, exit 1.
 */
#ifndef TDB_KT_H
#define TDB_KT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

/* Are we against tdb.ko (true) or a tdbd we started (false)? */
extern bool kt_kernel;

/* h_init(), pick the owner, start tdbd when it is the owner (exit 77
 * when neither $TDB_KTEST nor $TDBD is set). */
void kt_init(const char *name, unsigned int budget_s);
/* Skip (exit 77) unless the owner is tdb.ko. */
void kt_need_kernel(void);
/* Connect or fail the test (also right after fork, in a child). */
struct tdbc *kt_connect(unsigned int flags);
/* The same, returning the errno instead of failing. */
int kt_try_connect(struct tdbc **c, unsigned int flags);
/* Create a table (mode, max_extents; 0 = defaults) or fail the test. */
void kt_create(struct tdbc *c, const char *name, unsigned int mode,
	       unsigned int max_extents);
struct tdbc_table *kt_open(struct tdbc *c, const char *name);
/* Stop tdbd if we started it (it must exit cleanly), then h_done(). */
void kt_done(void);

/* --- limits, as tdbd.conf names them ---------------------------------
 * One limit in both homes (src/owner/owner.h, struct tdbo_limits):
 *  - tdb.ko: /sys/module/tdb/parameters/<key with '_' for '-'>, in MiB
 *    for the *-memory ones (kmod/home.c), else as given; the value
 *    found at the first set is written back by kt_limit_reset();
 *  - tdbd: "key = value" in the config file kt_init gave it (value in
 *    bytes for sizes), then SIGHUP; returns once the log says it
 *    reloaded (only keys src/daemon/main.c reload() applies at run
 *    time may be used); kt_limit_reset() takes the key out again.
 * v is a count, or bytes for the size keys (a whole number of MiB for
 * the *-memory ones). */
void kt_limit_set(const char *key, unsigned long long v);
void kt_limit_reset(const char *key);

/* Fork a child that drops to uid (and gid uid, no groups), runs fn(arg)
 * and exits; fn's result comes back.  Fails the test if the child
 * does (its CHECKs end it).  tdb.ko: /dev/tdb must let uid in. */
int kt_as_uid(uid_t uid, int (*fn)(void *arg), void *arg);
/* The same in two steps, for a parent that works while the child runs:
 * start it (returns its pid; *rfd gets the pipe its result comes on),
 * then wait for its result. */
pid_t kt_uid_start(uid_t uid, int (*fn)(void *arg), void *arg, int *rfd);
int kt_uid_wait(pid_t pid, int rfd);

/* --- raw requests on one connection of the home's own transport ---------
 * tdb.ko: a /dev/tdb client with rings (no libtdbclient); tdbd: its
 * Unix socket.  Requests are queued and go together (one ENTER, one
 * write), so the owner sees them in one round. */
struct kt_raw {
	int fd;
	uint32_t seq;
	/* tdb.ko */
	struct tdb_ring_hdr *sq, *cqh;
	unsigned char *sqd;
	const unsigned char *cqd;
	uint64_t prod, cons;
	uint64_t sq_off, cq_off;
	/* tdbd */
	struct h_raw h;
	unsigned char *out;
	size_t outlen;
};
void kt_raw_open(struct kt_raw *r);
void kt_raw_close(struct kt_raw *r);
/* Build *m as a request (seq assigned and returned) and queue it. */
uint32_t kt_raw_queue(struct kt_raw *r, struct tdb_proto_msg *m);
/* Send what is queued. */
void kt_raw_flush(struct kt_raw *r);
/* The next answer (whole message) into out: its length, or fail the
 * test after timeout_ms. */
long kt_raw_recv(struct kt_raw *r, void *out, size_t cap, int timeout_ms);

/* --- raw generic netlink (kernel only; tests/kernel/kt.c) ----------- */
struct kt_genl {
	int fd;
	unsigned int family;    /* the "tdb" family's id */
	unsigned int mcgrp;     /* the "changes" group's id (0: none) */
	unsigned int seq;
	unsigned int portid;
};
/* Open a NETLINK_GENERIC socket and resolve the family and group. */
void kt_genl_open(struct kt_genl *g);
void kt_genl_close(struct kt_genl *g);
/* Start a request of family g->family: returns the buffer's header. */
struct nlmsghdr *kt_genl_msg(struct kt_genl *g, void *buf, unsigned int cmd,
			     unsigned int flags);
/* Send it and wait for its NLMSG_ERROR (ack or error): the errno (0 =
 * ack), the extack text in msg; a reply (not an error) gives 1. */
int kt_genl_call(struct kt_genl *g, struct nlmsghdr *nlh, char *msg,
		 size_t msglen);

#endif
