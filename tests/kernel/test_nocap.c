// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_nocap.c - tdb.ko's permission checks: a process without
 * CAP_NET_ADMIN (uid/gid 65534, no capabilities) gets EPERM for a
 * generic netlink PUT and TABLE_CREATE, may not join the "changes"
 * multicast group, and through /dev/tdb (opened for it) gets EACCES
 * from root's 0600 table and may read but not write root's 0644 one.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include <tdb/client.h>
#include <tdb/kdev.h>
#include <tdb/proto.h>

#include "kt.h"

static void unprivileged(void)
{
	char buf[1024] __attribute__((aligned(4))), msg[256];
	struct kt_genl g;
	struct nlmsghdr *nlh;
	struct tdbc *c;
	struct tdbc_table *t = NULL;
	char v[16];
	unsigned int grp;
	int err;

	CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
	      setuid(65534) == 0, "dropping to 65534: %s", strerror(errno));
	CHECK(geteuid() == 65534, "still root");

	kt_genl_open(&g);
	nlh = kt_genl_msg(&g, buf, TDB_CMD_PUT, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "nc_open");
	mnl_attr_put(nlh, TDB_A_KEY, 3, "key");
	mnl_attr_put(nlh, TDB_A_VALUE, 5, "value");
	err = kt_genl_call(&g, nlh, msg, sizeof(msg));
	CHECK(err == -EPERM, "genl PUT without CAP_NET_ADMIN: %s",
	      h_errname(err));
	nlh = kt_genl_msg(&g, buf, TDB_CMD_TABLE_CREATE, NLM_F_ACK);
	mnl_attr_put_strz(nlh, TDB_A_TABLE, "nc_new");
	err = kt_genl_call(&g, nlh, msg, sizeof(msg));
	CHECK(err == -EPERM, "genl TABLE_CREATE without CAP_NET_ADMIN: %s",
	      h_errname(err));
	grp = g.mcgrp;
	CHECK(grp, "no multicast group");
	CHECK(setsockopt(g.fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
			 sizeof(grp)) == -1 && errno == EPERM,
	      "joining \"%s\" without CAP_NET_ADMIN: %s", TDB_GENL_MCGRP,
	      strerror(errno));
	kt_genl_close(&g);

	/* /dev/tdb: the tables' modes decide */
	c = kt_connect(0);
	err = tdbc_table_open(c, "nc_private", &t);
	CHECK(err == -EACCES, "open root's 0600 table: %s", h_errname(err));
	t = kt_open(c, "nc_open");
	CHECK(tdbc_get(t, NULL, "k", 1, v, sizeof(v), NULL) == 1,
	      "read root's 0644 table");
	err = tdbc_put(t, NULL, "k", 1, "x", 1, 0);
	CHECK(err == -EACCES, "write root's 0644 table: %s", h_errname(err));
	err = tdbc_del(t, NULL, "k", 1);
	CHECK(err == -EACCES, "delete in root's 0644 table: %s",
	      h_errname(err));
	err = tdbc_table_drop(c, "nc_open");
	CHECK(err == -EACCES || err == -EPERM, "drop root's table: %s",
	      h_errname(err));
	tdbc_table_close(t);
	tdbc_close(c);
	_exit(0);
}

int main(void)
{
	struct tdbc *c;
	struct tdbc_table *t;
	struct stat st;
	int status;
	pid_t pid;

	kt_init("nocap", 120);
	kt_need_kernel();
	c = kt_connect(0);
	kt_create(c, "nc_private", 0600, 0);
	kt_create(c, "nc_open", 0644, 0);
	t = kt_open(c, "nc_open");
	CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "put");
	/* let the unprivileged child open the device: the table modes are
	 * what is tested here, not the device node's */
	CHECK(stat(TDB_DEV_PATH, &st) == 0, "stat");
	CHECK(chmod(TDB_DEV_PATH, 0666) == 0, "chmod");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0)
		unprivileged();
	h_track(pid);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	chmod(TDB_DEV_PATH, st.st_mode & 07777);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the unprivileged child failed (status %#x)", status);
	/* nothing it tried changed anything */
	{
		char v[4];

		CHECK(tdbc_get(t, NULL, "k", 1, v, sizeof(v), NULL) == 1 &&
		      v[0] == 'v', "the 0644 table changed");
		CHECK(tdbc_get(t, NULL, "key", 3, v, sizeof(v), NULL) ==
		      -ENOENT, "the genl PUT went through");
	}
	tdbc_table_close(t);
	CHECK(tdbc_table_drop(c, "nc_private") == 0, "drop");
	CHECK(tdbc_table_drop(c, "nc_open") == 0, "drop");
	tdbc_close(c);
	printf("nocap: EPERM over genl, no multicast, EACCES by table mode\n");
	kt_done();
	return 0;
}
