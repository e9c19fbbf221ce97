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
