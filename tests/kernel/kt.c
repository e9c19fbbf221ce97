/*
 * kt.c - the kernel-stage tests' shared helpers (kt.h): choosing the
 * owner (tdb.ko or a tdbd started here), connecting, and a raw generic
 * netlink client for the tests that must speak to tdb.ko's family
 * without libtdbclient.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>

#include "kt.h"

bool kt_kernel;
static struct h_daemon kt_daemon;
static bool kt_started;

void kt_init(const char *name, unsigned int budget_s)
{
	const char *k = getenv("TDB_KTEST");

	h_init(name, budget_s);
	kt_kernel = k && *k && strcmp(k, "0");
	if (kt_kernel) {
		/* libtdbclient: /dev/tdb or nothing */
		setenv(TDB_BACKEND_ENV, "kernel", 1);
		if (access(TDB_DEV_PATH, R_OK | W_OK)) {
			fprintf(stderr, "%s: %s: %s (tdb.ko not loaded?)\n",
				name, TDB_DEV_PATH, strerror(errno));
			exit(1);
		}
		return;
	}
	if (!getenv("TDBD")) {
		fprintf(stderr, "%s: neither TDB_KTEST (tdb.ko) nor TDBD "
			"(tdbd) set: skipped\n", name);
		exit(77);
	}
	unsetenv(TDB_BACKEND_ENV);
	h_start(&kt_daemon, "kt", NULL);
	kt_started = true;
}

void kt_need_kernel(void)
{
	if (kt_kernel)
		return;
	printf("only against tdb.ko: skipped\n");
	if (kt_started)
		h_stop(&kt_daemon);
	exit(77);
}

int kt_try_connect(struct tdbc **c, unsigned int flags)
{
	char msg[256];
	int err;

	err = tdbc_connect(c, kt_kernel ? NULL : kt_daemon.sock, flags, msg,
			   sizeof(msg));
	if (err)
		h_note("connect (flags %#x): %s: %s", flags, h_errname(err),
		       msg);
	return err;
}

struct tdbc *kt_connect(unsigned int flags)
{
	struct tdbc *c = NULL;
	int err = kt_try_connect(&c, flags);

	CHECK(err == 0, "connect (flags %#x): %s", flags, h_errname(err));
	CHECK(tdbc_uses_rings(c) == !(flags & TDBC_NO_RINGS),
	      "uses rings %d with flags %#x", tdbc_uses_rings(c), flags);
	return c;
}

void kt_create(struct tdbc *c, const char *name, unsigned int mode,
	       unsigned int max_extents)
{
	struct tdbc_table_opts o;
	int err;

	tdbc_table_opts_init(&o);
	if (mode)
		o.mode = mode;
	if (max_extents)
		o.max_extents = max_extents;
	err = tdbc_table_create(c, name, &o);
	CHECK(err == 0, "create %s: %s (%s)", name, h_errname(err),
	      tdbc_errmsg(c));
}

struct tdbc_table *kt_open(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = NULL;
	int err = tdbc_table_open(c, name, &t);

	CHECK(err == 0, "open %s: %s (%s)", name, h_errname(err),
	      tdbc_errmsg(c));
	return t;
}

void kt_done(void)
{
	if (kt_started)
		h_stop(&kt_daemon);
	h_done();
}

/* --- raw generic netlink ----------------------------------------------- */

static int kt_mcgrp_cb(const struct nlattr *grp, struct kt_genl *g)
{
	const struct nlattr *a;
	const char *name = NULL;
	unsigned int id = 0;

	mnl_attr_for_each_nested(a, grp) {
		if (mnl_attr_get_type(a) == CTRL_ATTR_MCAST_GRP_NAME)
			name = mnl_attr_get_str(a);
		else if (mnl_attr_get_type(a) == CTRL_ATTR_MCAST_GRP_ID)
			id = mnl_attr_get_u32(a);
	}
	if (name && !strcmp(name, TDB_GENL_MCGRP))
		g->mcgrp = id;
	return 0;
}

void kt_genl_open(struct kt_genl *g)
{
	char buf[8192] __attribute__((aligned(4)));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t sl = sizeof(sa);
	struct nlmsghdr *nlh;
	struct genlmsghdr *gh;
	struct nlattr *a;
	long n;
	int one = 1;

	memset(g, 0, sizeof(*g));
	g->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	CHECK(g->fd >= 0, "netlink socket: %s", strerror(errno));
	CHECK(bind(g->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
	      "bind: %s", strerror(errno));
	CHECK(getsockname(g->fd, (struct sockaddr *)&sa, &sl) == 0,
	      "getsockname: %s", strerror(errno));
	g->portid = sa.nl_pid;
	setsockopt(g->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(g->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	nlh->nlmsg_seq = ++g->seq;
	gh = mnl_nlmsg_put_extra_header(nlh, sizeof(*gh));
	gh->cmd = CTRL_CMD_GETFAMILY;
	gh->version = 1;
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, TDB_GENL_NAME);
	CHECK(send(g->fd, nlh, nlh->nlmsg_len, 0) == (ssize_t)nlh->nlmsg_len,
	      "send GETFAMILY: %s", strerror(errno));
	n = recv(g->fd, buf, sizeof(buf), 0);
	CHECK(n > 0, "recv GETFAMILY: %s", strerror(errno));
	nlh = (struct nlmsghdr *)buf;
	CHECK(mnl_nlmsg_ok(nlh, (int)n), "GETFAMILY answer malformed");
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);

		CHECK(0, "no generic netlink family \"%s\": %s",
		      TDB_GENL_NAME, strerror(-e->error));
	}
	mnl_attr_for_each(a, nlh, sizeof(*gh)) {
		if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID) {
			g->family = mnl_attr_get_u16(a);
		} else if (mnl_attr_get_type(a) == CTRL_ATTR_MCAST_GROUPS) {
			const struct nlattr *grp;

			mnl_attr_for_each_nested(grp, a)
				kt_mcgrp_cb(grp, g);
		}
	}
	CHECK(g->family, "GETFAMILY gave no family id");
}

void kt_genl_close(struct kt_genl *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
}

struct nlmsghdr *kt_genl_msg(struct kt_genl *g, void *buf, unsigned int cmd,
			     unsigned int flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *gh;

	nlh->nlmsg_type = g->family;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++g->seq;
	gh = mnl_nlmsg_put_extra_header(nlh, sizeof(*gh));
	gh->cmd = cmd;
	gh->version = TDB_PROTO_VERSION;
	return nlh;
}

int kt_genl_call(struct kt_genl *g, struct nlmsghdr *nlh, char *msg,
		 size_t msglen)
{
	static char buf[1 << 17] __attribute__((aligned(4)));
	unsigned int seq = nlh->nlmsg_seq;
	long n;

	if (msg && msglen)
		msg[0] = 0;
	CHECK(send(g->fd, nlh, nlh->nlmsg_len, 0) == (ssize_t)nlh->nlmsg_len,
	      "genl send: %s", strerror(errno));
	for (;;) {
		struct nlmsghdr *r;

		n = recv(g->fd, buf, sizeof(buf), 0);
		CHECK(n > 0, "genl recv: %s", n < 0 ? strerror(errno) : "EOF");
		for (r = (struct nlmsghdr *)buf; mnl_nlmsg_ok(r, (int)n);
		     r = mnl_nlmsg_next(r, (int *)&n)) {
			struct nlmsgerr *e;
			const struct nlattr *a;
			unsigned int off;

			if (r->nlmsg_seq != seq)
				continue;       /* a notification */
			if (r->nlmsg_type != NLMSG_ERROR)
				return 1;
			e = mnl_nlmsg_get_payload(r);
			if (!e->error)
				return 0;
			off = sizeof(*e);
			if (!(r->nlmsg_flags & NLM_F_CAPPED))
				off += e->msg.nlmsg_len - sizeof(e->msg);
			if (msg && (r->nlmsg_flags & NLM_F_ACK_TLVS))
				mnl_attr_for_each(a, r, off)
					if (mnl_attr_get_type(a) ==
					    NLMSGERR_ATTR_MSG)
						snprintf(msg, msglen, "%s",
							 mnl_attr_get_str(a));
			return e->error;
		}
	}
}
