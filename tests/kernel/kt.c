// SPDX-License-Identifier: GPL-2.0-only
/*
 * kt.c - the kernel-stage tests' shared helpers (kt.h): choosing the
 * owner (tdb.ko or a tdbd started here), connecting, setting a limit
 * in either home, running as another uid, raw requests on the home's
 * own transport, and a raw generic netlink client for the tests that
 * must speak to tdb.ko's family without libtdbclient.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>
#include <tdb/ring.h>

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
	/* others may connect, as /dev/tdb lets them (tests that drop to
	 * another uid chmod it 0666) */
	h_start(&kt_daemon, "kt", (const char *const[]){ "--socket-mode",
							 "0666", NULL });
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

/* --- limits ----------------------------------------------------------- */

#define KT_PARAMS "/sys/module/tdb/parameters/"
#define KT_MIB (1ull << 20)
#define KT_NLIM 24

/* What was set: tdbd's config file is written whole from this; for
 * tdb.ko, the parameter's value before the first set. */
static struct kt_lim {
	char key[48];
	unsigned long long v;   /* tdbd: the value set */
	char orig[32];          /* tdb.ko: the value to reset to */
	bool set;
} kt_lims[KT_NLIM];

static struct kt_lim *kt_lim_find(const char *key)
{
	struct kt_lim *free_one = NULL;
	unsigned int i;

	for (i = 0; i < KT_NLIM; i++) {
		if (kt_lims[i].key[0] && !strcmp(kt_lims[i].key, key))
			return &kt_lims[i];
		if (!kt_lims[i].key[0] && !free_one)
			free_one = &kt_lims[i];
	}
	CHECK(free_one && strlen(key) < sizeof(free_one->key),
	      "too many limits (%s)", key);
	snprintf(free_one->key, sizeof(free_one->key), "%s", key);
	return free_one;
}

/* tdb.ko's parameter for a key: '_' for '-'. */
static void kt_param_path(char *out, size_t size, const char *key)
{
	size_t n = strlen(KT_PARAMS), i;

	CHECK(n + strlen(key) < size, "key too long: %s", key);
	memcpy(out, KT_PARAMS, n);
	for (i = 0; key[i]; i++)
		out[n + i] = key[i] == '-' ? '_' : key[i];
	out[n + i] = '\0';
}

/* The *-memory keys (max-txn-memory[-per-uid],
 * max-snapshot-memory[-per-uid]) are MiB as module parameters
 * (kmod/home.c). */
static bool kt_param_mib(const char *key)
{
	return strstr(key, "-memory") != NULL;
}

static void kt_param_write(const char *key, const char *val)
{
	char path[160];
	int fd;
	ssize_t n;

	kt_param_path(path, sizeof(path), key);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %s (no such writable module parameter)", path,
	      strerror(errno));
	n = write(fd, val, strlen(val));
	CHECK(n == (ssize_t)strlen(val), "write %s to %s: %s", val, path,
	      n < 0 ? strerror(errno) : "short");
	close(fd);
}

static void kt_param_read(const char *key, char *out, size_t size)
{
	char path[160];
	ssize_t n;
	int fd;

	kt_param_path(path, sizeof(path), key);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	n = read(fd, out, size - 1);
	CHECK(n > 0, "read %s: %s", path, strerror(errno));
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	close(fd);
}

/* How many times tdbd's log says it reloaded. */
static unsigned int kt_reloads(void)
{
	char *log = h_read_file(kt_daemon.log), *p = log;
	unsigned int n = 0;

	while ((p = strstr(p, "reloaded ")) != NULL) {
		n++;
		p++;
	}
	free(log);
	return n;
}

/* Write tdbd's config file (the one h_start named) from kt_lims and
 * reload it. */
static void kt_conf_reload(void)
{
	unsigned int before = kt_reloads(), i;
	char conf[H_PATH];
	FILE *f;

	h_path(conf, sizeof(conf), "empty.conf");
	f = fopen(conf, "w");
	CHECK(f, "%s: %s", conf, strerror(errno));
	for (i = 0; i < KT_NLIM; i++)
		if (kt_lims[i].key[0] && kt_lims[i].set)
			fprintf(f, "%s = %llu\n", kt_lims[i].key,
				kt_lims[i].v);
	CHECK(fclose(f) == 0, "write %s", conf);
	CHECK(kill(kt_daemon.pid, SIGHUP) == 0, "SIGHUP: %s",
	      strerror(errno));
	for (i = 0; i < 1000 && kt_reloads() == before; i++)
		h_sleep_ms(10);
	CHECK(kt_reloads() > before, "tdbd did not reload in 10 s");
	CHECK(!h_log_has(&kt_daemon, "reload refused"), "tdbd refused the "
	      "reload (see its log)");
}

void kt_limit_set(const char *key, unsigned long long v)
{
	struct kt_lim *l = kt_lim_find(key);
	char val[32];

	if (!kt_kernel) {
		l->v = v;
		l->set = true;
		kt_conf_reload();
		return;
	}
	if (!l->orig[0])
		kt_param_read(key, l->orig, sizeof(l->orig));
	if (kt_param_mib(key)) {
		CHECK(v % KT_MIB == 0, "%s: %llu is not whole MiB", key, v);
		v /= KT_MIB;
	}
	snprintf(val, sizeof(val), "%llu\n", v);
	kt_param_write(key, val);
	l->set = true;
}

void kt_limit_reset(const char *key)
{
	struct kt_lim *l = kt_lim_find(key);

	if (!l->set)
		return;
	l->set = false;
	if (kt_kernel)
		kt_param_write(key, l->orig);
	else
		kt_conf_reload();
}

/* --- another uid ------------------------------------------------------ */

pid_t kt_uid_start(uid_t uid, int (*fn)(void *arg), void *arg, int *rfd)
{
	int p[2], res;
	pid_t pid;

	CHECK(pipe(p) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CHECK(setgroups(0, NULL) == 0 &&
		      setresgid(uid, uid, uid) == 0 &&
		      setresuid(uid, uid, uid) == 0, "dropping to %u: %s",
		      (unsigned int)uid, strerror(errno));
		res = fn(arg);
		CHECK(write(p[1], &res, sizeof(res)) == sizeof(res), "write");
		_exit(0);
	}
	h_track(pid);
	close(p[1]);
	*rfd = p[0];
	return pid;
}

int kt_uid_wait(pid_t pid, int rfd)
{
	int res = 0, st;
	bool got = read(rfd, &res, sizeof(res)) == sizeof(res);

	close(rfd);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
	h_untrack(pid);
	CHECK(got && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child (pid %d) failed", (int)pid);
	return res;
}

int kt_as_uid(uid_t uid, int (*fn)(void *arg), void *arg)
{
	int rfd;
	pid_t pid = kt_uid_start(uid, fn, arg, &rfd);

	return kt_uid_wait(pid, rfd);
}

/* --- raw requests ------------------------------------------------------ */

#define KT_SQ (64u << 10)
#define KT_CQ (256u << 10)

static void kt_raw_attach(struct kt_raw *r)
{
	struct tdb_dev_attach at = { .version = TDB_DEV_VERSION,
				     .sq_data_size = KT_SQ,
				     .cq_data_size = KT_CQ };
	void *p;

	r->fd = open(TDB_DEV_PATH, O_RDWR | O_CLOEXEC);
	CHECK(r->fd >= 0, "open %s: %s", TDB_DEV_PATH, strerror(errno));
	CHECK(ioctl(r->fd, TDB_IOC_ATTACH, &at) == 0, "ATTACH: %s",
	      strerror(errno));
	r->sq_off = at.sq_offset;
	r->cq_off = at.cq_offset;
	p = mmap(NULL, TDB_RING_HDR_SIZE + KT_SQ, PROT_READ | PROT_WRITE,
		 MAP_SHARED, r->fd, (off_t)at.sq_offset);
	CHECK(p != MAP_FAILED, "mmap sq: %s", strerror(errno));
	r->sq = p;
	r->sqd = (unsigned char *)p + TDB_RING_HDR_SIZE;
	p = mmap(NULL, TDB_RING_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 r->fd, (off_t)at.cq_offset);
	CHECK(p != MAP_FAILED, "mmap cq header: %s", strerror(errno));
	r->cqh = p;
	p = mmap(NULL, KT_CQ, PROT_READ, MAP_SHARED, r->fd,
		 (off_t)(at.cq_offset + TDB_RING_HDR_SIZE));
	CHECK(p != MAP_FAILED, "mmap cq data: %s", strerror(errno));
	r->cqd = p;
	r->prod = r->sq->prod;
	r->cons = r->cqh->cons;
}

void kt_raw_open(struct kt_raw *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (kt_kernel)
		kt_raw_attach(r);
	else
		h_raw_connect(&r->h, kt_daemon.sock);
}

void kt_raw_close(struct kt_raw *r)
{
	if (kt_kernel) {
		munmap(r->sq, TDB_RING_HDR_SIZE + KT_SQ);
		munmap(r->cqh, TDB_RING_HDR_SIZE);
		munmap((void *)r->cqd, KT_CQ);
		close(r->fd);
	} else {
		h_raw_close(&r->h);
	}
	free(r->out);
	r->out = NULL;
}

uint32_t kt_raw_queue(struct kt_raw *r, struct tdb_proto_msg *m)
{
	struct tdb_proto_extack ext = { 0 };
	unsigned char buf[4096] __attribute__((aligned(8)));
	long len;

	m->seq = ++r->seq;
	len = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, m, &ext);
	CHECK(len > 0, "cannot build a request: %s", ext.msg);
	if (kt_kernel) {
		/* a fresh ring: no wrap to handle while it stays short */
		CHECK((r->prod & (KT_SQ - 1)) + NLMSG_ALIGN(len) <= KT_SQ &&
		      r->prod + NLMSG_ALIGN(len) - r->sq->cons <= KT_SQ,
		      "raw requests past the end of the sq");
		memcpy(r->sqd + (r->prod & (KT_SQ - 1)), buf, (size_t)len);
		r->prod += NLMSG_ALIGN(len);
		return m->seq;
	}
	r->out = realloc(r->out, r->outlen + (size_t)len);
	CHECK(r->out, "out of memory");
	memcpy(r->out + r->outlen, buf, (size_t)len);
	r->outlen += (size_t)len;
	return m->seq;
}

void kt_raw_flush(struct kt_raw *r)
{
	int err;

	if (kt_kernel) {
		__atomic_store_n(&r->sq->prod, r->prod, __ATOMIC_RELEASE);
		CHECK(ioctl(r->fd, TDB_IOC_ENTER, 0) == 0, "ENTER: %s",
		      strerror(errno));
		return;
	}
	err = h_raw_send(&r->h, r->out, r->outlen);
	CHECK(err == 0, "send to tdbd: %s", h_errname(err));
	r->outlen = 0;
}

/* The next answer in the completion ring (NOOPs skipped), or NULL. */
static const struct nlmsghdr *kt_raw_next(struct kt_raw *r)
{
	for (;;) {
		uint64_t prod = __atomic_load_n(&r->cqh->prod,
						__ATOMIC_ACQUIRE);
		uint64_t left = KT_CQ - (r->cons & (KT_CQ - 1));
		const struct nlmsghdr *n;

		if (r->cons == prod)
			return NULL;
		if (left < NLMSG_HDRLEN) {
			r->cons += left;
			continue;
		}
		n = (const void *)(r->cqd + (r->cons & (KT_CQ - 1)));
		CHECK(n->nlmsg_len >= NLMSG_HDRLEN &&
		      n->nlmsg_len <= prod - r->cons, "bad answer frame");
		if (n->nlmsg_type == NLMSG_NOOP) {
			r->cons += NLMSG_ALIGN(n->nlmsg_len);
			continue;
		}
		return n;
	}
}

long kt_raw_recv(struct kt_raw *r, void *out, size_t cap, int timeout_ms)
{
	uint64_t end = h_now_ms() + (uint64_t)timeout_ms;
	const struct nlmsghdr *n;
	long len;

	if (!kt_kernel) {
		len = h_raw_recv(&r->h, out, cap, timeout_ms);
		CHECK(len > 0, "no answer from tdbd: %s",
		      len ? h_errname((int)len) : "it hung up");
		return len;
	}
	while (!(n = kt_raw_next(r))) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		CHECK(h_now_ms() < end, "no answer from tdb.ko in %d ms",
		      timeout_ms);
		/* room was made: let the dumps go on */
		CHECK(ioctl(r->fd, TDB_IOC_ENTER, 0) == 0, "ENTER: %s",
		      strerror(errno));
		if (!kt_raw_next(r))
			poll(&pfd, 1, 10);
	}
	CHECK(n->nlmsg_len <= cap, "answer of %u bytes", n->nlmsg_len);
	memcpy(out, n, n->nlmsg_len);
	r->cons += NLMSG_ALIGN(n->nlmsg_len);
	__atomic_store_n(&r->cqh->cons, r->cons, __ATOMIC_RELEASE);
	return (long)n->nlmsg_len;
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
