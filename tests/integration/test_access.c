// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_access.c - tables' owner, group and mode against who the client
 * is (SO_PEERCRED, SO_PEERGROUPS), as root and as forked children that
 * have dropped to other users.
 *
 * tdbd runs with --socket-mode 0666 in a directory everyone can enter.
 * Root creates tables owned by 12345:12345 with various modes, each
 * holding the key "k".  Then each identity, in its own child process
 * (setgroups, setgid, setuid):
 *
 *   root        uid 0
 *   owner       uid 12345, gid 12345
 *   groupie     uid 23456, gid 12345 (the table's group, as primary)
 *   supp        uid 65534, gid 65534, supplementary group 12345
 *   other       uid 65534, gid 65534, no other group
 *
 * runs GET, SCAN, WATCH (read), PUT, DEL (write) and TABLE_STAT (read or
 * write) on every table over a raw socket: each must succeed exactly
 * when the class bits that apply (owner, else group, else other; root:
 * always) allow it, and fail with -EACCES otherwise.  TABLE_LIST (raw,
 * and tdbc_table_list through the library, over rings for some
 * identities and the socket for others) must show exactly the tables
 * the identity may read or write.  Through the library, a table the
 * identity may only write opens, takes a put and refuses a get.
 *
 * Then: only the owner or root may drop a table (others: -EPERM, even
 * with write permission); a non-root user cannot create a table owned by
 * another user or group it is not in (-EPERM, nothing created), may
 * create one in a supplementary group, and gets its own uid and gid and
 * the default table-mode (0600) otherwise; root may create tables for
 * anyone.  Skipped (77) when not run as root.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define OWNER_UID 12345u
#define OWNER_GID 12345u
#define GROUPIE   23456u
#define NOBODY    65534u

struct ident {
	const char *name;
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[2];
	unsigned int flags;     /* for the library connection */
};

static const struct ident ids[] = {
	{ "root", 0, 0, 0, { 0 }, 0 },
	{ "owner", OWNER_UID, OWNER_GID, 0, { 0 }, 0 },
	{ "groupie", GROUPIE, OWNER_GID, 0, { 0 }, TDBC_NO_RINGS },
	{ "supp", NOBODY, NOBODY, 1, { OWNER_GID }, 0 },
	{ "other", NOBODY, NOBODY, 0, { 0 }, TDBC_NO_RINGS },
};
#define NIDS (sizeof(ids) / sizeof(ids[0]))

struct tdef {
	const char *name;
	uint32_t uid, gid, mode;
};

/* The matrix: all owned by 12345:12345. */
static const struct tdef tables[] = {
	{ "m0600", OWNER_UID, OWNER_GID, 0600 },
	{ "m0640", OWNER_UID, OWNER_GID, 0640 },
	{ "m0660", OWNER_UID, OWNER_GID, 0660 },
	{ "m0604", OWNER_UID, OWNER_GID, 0604 },
	{ "m0606", OWNER_UID, OWNER_GID, 0606 },
	{ "m0400", OWNER_UID, OWNER_GID, 0400 },
	{ "m0200", OWNER_UID, OWNER_GID, 0200 },
	{ "m0000", OWNER_UID, OWNER_GID, 0000 },
	{ "m0046", OWNER_UID, OWNER_GID, 0046 },   /* owner: nothing */
	{ "m0460", OWNER_UID, OWNER_GID, 0460 },
	{ "m0027", OWNER_UID, OWNER_GID, 0027 },
	/* for the drop checks (run after the matrix) */
	{ "d_owner", OWNER_UID, OWNER_GID, 0000 },
	{ "d_group", OWNER_UID, OWNER_GID, 0660 },
	{ "d_other", OWNER_UID, OWNER_GID, 0666 },
	{ "d_root", OWNER_UID, OWNER_GID, 0600 },
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

/* The class bits that apply to id for t (rwx as 4, 2, 1). */
static unsigned int bits(const struct ident *id, const struct tdef *t)
{
	unsigned int i;

	if (id->uid == 0)
		return 7;
	if (id->uid == t->uid)
		return (t->mode >> 6) & 7;
	if (id->gid == t->gid)
		return (t->mode >> 3) & 7;
	for (i = 0; i < id->ngroups; i++)
		if (id->groups[i] == t->gid)
			return (t->mode >> 3) & 7;
	return t->mode & 7;
}

/* Become id (in a forked child). */
static void become(const struct ident *id)
{
	gid_t groups[4];
	int n;

	CHECK(setgroups(id->ngroups, id->groups) == 0, "setgroups: %s",
	      strerror(errno));
	CHECK(setgid(id->gid) == 0, "setgid: %s", strerror(errno));
	CHECK(setuid(id->uid) == 0, "setuid: %s", strerror(errno));
	/* cleared by the credential change */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CHECK(getuid() == id->uid && geteuid() == id->uid &&
	      getgid() == id->gid, "still uid %u gid %u", getuid(),
	      getgid());
	n = getgroups(4, groups);
	CHECK(n == (int)id->ngroups, "%d supplementary groups", n);
}

/* Fork, become id, run fn; the child's failure fails the test. */
static void as(const struct ident *id, void (*fn)(const struct ident *,
						  const char *),
	       const char *sock)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		become(id);
		fn(id, sock);
		_exit(0);
	}
	h_track(pid);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "as %s (uid %u): "
	      "failed (status %#x)", id->name, id->uid, st);
}

/* One request over a raw socket: its errno. */
static int call(struct h_raw *r, uint8_t cmd, const char *table,
		const char *key, unsigned int *parts, char *msg, size_t mlen)
{
	struct tdb_proto_msg m = { .cmd = cmd,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = table };

	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (uint32_t)strlen(key);
	}
	if (cmd == TDB_CMD_PUT) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
		m.value = "written";
		m.value_len = 7;
	}
	return h_raw_call(r, &m, NULL, NULL, parts, msg, mlen);
}

static void expect(int err, bool allowed, const struct ident *id,
		   const struct tdef *t, const char *op, const char *msg)
{
	if (allowed)
		CHECK(err == 0, "%s on %s (mode %04o) as %s: %s (%s), want "
		      "success", op, t->name, t->mode, id->name,
		      h_errname(err), msg);
	else
		CHECK(err == -EACCES && msg[0], "%s on %s (mode %04o) as %s: "
		      "%s (%s), want EACCES with a text", op, t->name,
		      t->mode, id->name, h_errname(err), msg);
}

struct listed {
	bool seen[NTABLES];
	unsigned int n;
};

static void list_part(void *arg, const struct tdb_proto_msg *m)
{
	struct listed *l = arg;
	unsigned int i;

	CHECK(TDB_PROTO_HAS(m, TDB_A_TABLE), "a TABLE_LIST part without "
	      "TABLE");
	for (i = 0; i < NTABLES; i++)
		if (!strcmp(m->table, tables[i].name))
			l->seen[i] = true;
	l->n++;
}

static int list_fn(void *arg, const struct tdbc_table_stat *st)
{
	struct listed *l = arg;
	unsigned int i;

	for (i = 0; i < NTABLES; i++)
		if (!strcmp(st->name, tables[i].name)) {
			l->seen[i] = true;
			CHECK(st->uid == tables[i].uid &&
			      st->gid == tables[i].gid &&
			      st->mode == tables[i].mode, "table_list: %s is "
			      "%u:%u %04o", st->name, st->uid, st->gid,
			      st->mode);
		}
	l->n++;
	return 0;
}

static void check_listed(const struct ident *id, const struct listed *l,
			 const char *how)
{
	unsigned int i, want = 0;

	for (i = 0; i < NTABLES; i++) {
		bool r = bits(id, &tables[i]) & 6;

		want += r;
		CHECK(l->seen[i] == r, "%s as %s: %s %s listed (mode %04o)",
		      how, id->name, tables[i].name, l->seen[i] ? "is" :
		      "is not", tables[i].mode);
	}
	CHECK(l->n == want, "%s as %s: %u tables listed, want %u", how,
	      id->name, l->n, want);
}

/* Tables id may write but not read: opened, written, not read. */
static void write_only(const struct ident *id, struct tdbc *c)
{
	unsigned int i;

	for (i = 0; i < 11; i++) {
		const struct tdef *t = &tables[i];
		struct tdbc_table *h;
		char buf[16];
		long n;
		int err;

		if ((bits(id, t) & 6) != 2)
			continue;
		err = tdbc_table_open(c, t->name, &h);
		CHECK(err == 0, "tdbc_table_open of write-only %s as %s: %s "
		      "(%s)", t->name, id->name, h_errname(err),
		      tdbc_errmsg(c));
		err = tdbc_put(h, NULL, "wo", 2, "v", 1, 0);
		CHECK(err == 0, "put into write-only %s as %s: %s", t->name,
		      id->name, h_errname(err));
		n = tdbc_get(h, NULL, "wo", 2, buf, sizeof(buf), NULL);
		CHECK(n == -EACCES, "get from write-only %s as %s: %ld, want "
		      "EACCES", t->name, id->name, n);
		err = tdbc_del(h, NULL, "wo", 2);
		CHECK(err == 0, "del from write-only %s as %s: %s", t->name,
		      id->name, h_errname(err));
		tdbc_table_close(h);
	}
}

/* The whole matrix, as id. */
static void matrix(const struct ident *id, const char *sock)
{
	struct listed l = { { false }, 0 };
	struct tdbc *c = NULL;
	struct h_raw r;
	char msg[256], key[32];
	unsigned int i, parts;
	int err;

	h_raw_connect(&r, sock);
	snprintf(key, sizeof(key), "w%u", id->uid);
	for (i = 0; i < 11; i++) {
		const struct tdef *t = &tables[i];
		bool rd = bits(id, t) & 4, wr = bits(id, t) & 2;

		err = call(&r, TDB_CMD_GET, t->name, "k", &parts, msg,
			   sizeof(msg));
		expect(err, rd, id, t, "GET", msg);
		err = call(&r, TDB_CMD_SCAN, t->name, NULL, &parts, msg,
			   sizeof(msg));
		expect(err, rd, id, t, "SCAN", msg);
		CHECK(!rd || parts >= 1, "SCAN of %s as %s: %u records",
		      t->name, id->name, parts);
		err = call(&r, TDB_CMD_TABLE_STAT, t->name, NULL, &parts, msg,
			   sizeof(msg));
		expect(err, rd || wr, id, t, "TABLE_STAT", msg);
		err = call(&r, TDB_CMD_WATCH, t->name, NULL, &parts, msg,
			   sizeof(msg));
		expect(err, rd, id, t, "WATCH", msg);
		if (!err) {
			int fd;

			CHECK(h_raw_take_fds(&r, &fd, 1) == 1, "WATCH of %s "
			      "without its feed", t->name);
			close(fd);
			err = call(&r, TDB_CMD_UNWATCH, t->name, NULL, &parts,
				   msg, sizeof(msg));
			CHECK(err == 0, "UNWATCH: %s", h_errname(err));
		}
		CHECK(r.nfds == 0, "a refused WATCH brought a descriptor");
		err = call(&r, TDB_CMD_PUT, t->name, key, &parts, msg,
			   sizeof(msg));
		expect(err, wr, id, t, "PUT", msg);
		err = call(&r, TDB_CMD_DEL, t->name, key, &parts, msg,
			   sizeof(msg));
		expect(err, wr, id, t, "DEL", msg);
	}
	/* TABLE_LIST, raw */
	{
		struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_LIST };

		err = h_raw_call(&r, &m, list_part, &l, NULL, msg,
				 sizeof(msg));
		CHECK(err == 0, "TABLE_LIST as %s: %s (%s)", id->name,
		      h_errname(err), msg);
		check_listed(id, &l, "TABLE_LIST");
	}
	h_raw_close(&r);
	/* and through the library */
	memset(&l, 0, sizeof(l));
	err = tdbc_connect(&c, sock, id->flags, msg, sizeof(msg));
	CHECK(err == 0, "connect as %s: %s (%s)", id->name, h_errname(err),
	      msg);
	err = tdbc_table_list(c, list_fn, &l);
	CHECK(err == 0, "tdbc_table_list as %s: %s", id->name,
	      h_errname(err));
	check_listed(id, &l, "tdbc_table_list");
	write_only(id, c);
	tdbc_close(c);
}

/* --- drop and create ------------------------------------------------------ */

static int raw_drop(const char *sock, const char *table, char *msg,
		    size_t mlen)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_DROP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = table };
	struct h_raw r;
	int err;

	h_raw_connect(&r, sock);
	err = h_raw_call(&r, &m, NULL, NULL, NULL, msg, mlen);
	h_raw_close(&r);
	return err;
}

static void drops_refused(const struct ident *id, const char *sock)
{
	static const char *const names[] = { "d_group", "d_other", "d_owner",
					     "d_root", NULL };
	char msg[256];
	int i, err;

	for (i = 0; names[i]; i++) {
		err = raw_drop(sock, names[i], msg, sizeof(msg));
		CHECK(err == -EPERM && msg[0], "%s dropping %s: %s (%s), want "
		      "EPERM", id->name, names[i], h_errname(err), msg);
	}
}

static void owner_drops(const struct ident *id, const char *sock)
{
	char msg[256];
	int err = raw_drop(sock, "d_owner", msg, sizeof(msg));

	CHECK(err == 0, "%s dropping its own d_owner (mode 0000): %s (%s)",
	      id->name, h_errname(err), msg);
}

static int create(struct tdbc *c, const char *name, uint32_t uid,
		  uint32_t gid, uint32_t mode)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.uid = uid;
	o.gid = gid;
	o.mode = mode;
	return tdbc_table_create(c, name, &o);
}

static void owner_creates(const struct ident *id, const char *sock)
{
	struct tdbc_table_stat st;
	struct tdbc *c = NULL;
	char msg[256];
	int err;

	err = tdbc_connect(&c, sock, 0, msg, sizeof(msg));
	CHECK(err == 0, "connect: %s", msg);
	err = create(c, "c_own", (uint32_t)-1, (uint32_t)-1, (uint32_t)-1);
	CHECK(err == 0, "create c_own as %s: %s (%s)", id->name,
	      h_errname(err), tdbc_errmsg(c));
	err = tdbc_table_stat(c, "c_own", &st);
	CHECK(err == 0 && st.uid == id->uid && st.gid == id->gid &&
	      st.mode == 0600, "c_own: %s, %u:%u %04o (want %u:%u 0600)",
	      h_errname(err), st.uid, st.gid, st.mode, id->uid, id->gid);
	err = create(c, "c_self", id->uid, id->gid, 0640);
	CHECK(err == 0, "create c_self naming itself: %s (%s)",
	      h_errname(err), tdbc_errmsg(c));
	err = create(c, "c_theirs", NOBODY, (uint32_t)-1, (uint32_t)-1);
	CHECK(err == -EPERM && tdbc_errmsg(c)[0], "create for uid %u as %s: "
	      "%s, want EPERM", NOBODY, id->name, h_errname(err));
	err = create(c, "c_grp", (uint32_t)-1, NOBODY, (uint32_t)-1);
	CHECK(err == -EPERM, "create in group %u as %s: %s, want EPERM",
	      NOBODY, id->name, h_errname(err));
	CHECK_EQ(tdbc_table_stat(c, "c_theirs", &st), -ENOENT,
		 "a refused create left a table");
	CHECK_EQ(tdbc_table_stat(c, "c_grp", &st), -ENOENT,
		 "a refused create left a table");
	/* the owner's own table: it may drop it */
	CHECK(tdbc_table_drop(c, "c_self") == 0, "drop c_self");
	tdbc_close(c);
}

static void supp_creates(const struct ident *id, const char *sock)
{
	struct tdbc_table_stat st;
	struct tdbc *c = NULL;
	char msg[256];
	int err;

	err = tdbc_connect(&c, sock, TDBC_NO_RINGS, msg, sizeof(msg));
	CHECK(err == 0, "connect: %s", msg);
	err = create(c, "c_supp", (uint32_t)-1, OWNER_GID, 0660);
	CHECK(err == 0, "create in a supplementary group as %s: %s (%s)",
	      id->name, h_errname(err), tdbc_errmsg(c));
	err = tdbc_table_stat(c, "c_supp", &st);
	CHECK(err == 0 && st.uid == id->uid && st.gid == OWNER_GID &&
	      st.mode == 0660, "c_supp: %u:%u %04o", st.uid, st.gid,
	      st.mode);
	/* a group member may not drop it... the owner (itself) may */
	CHECK(tdbc_table_drop(c, "c_supp") == 0, "drop c_supp");
	tdbc_close(c);
}

int main(void)
{
	static const char *const args[] = { "--socket-mode", "0666",
		"--workers", "2", NULL };
	struct tdbc_table_stat st;
	struct h_daemon d;
	struct tdbc *c;
	unsigned int i;
	char msg[256];
	int err;

	if (geteuid() != 0) {
		printf("tdbd-access: skipped: needs root (setuid children)\n");
		return 77;
	}
	h_init("tdbd-access", 600);
	h_start(&d, "tdbd", args);
	c = h_connect(&d, 0);
	for (i = 0; i < NTABLES; i++) {
		struct tdbc_table *t = NULL;

		err = create(c, tables[i].name, tables[i].uid, tables[i].gid,
			     tables[i].mode);
		CHECK(err == 0, "create %s: %s (%s)", tables[i].name,
		      h_errname(err), tdbc_errmsg(c));
		CHECK(tdbc_table_open(c, tables[i].name, &t) == 0, "open");
		CHECK(tdbc_put(t, NULL, "k", 1, "v", 1, 0) == 0, "put k");
		tdbc_table_close(t);
	}

	for (i = 0; i < NIDS; i++)
		as(&ids[i], matrix, d.sock);
	h_note("%u identities x 11 modes x 6 operations, and TABLE_LIST: "
	       "as the mode bits say", (unsigned int)NIDS);

	/* drops: nobody but the owner and root */
	as(&ids[2], drops_refused, d.sock);     /* groupie */
	as(&ids[3], drops_refused, d.sock);     /* supp */
	as(&ids[4], drops_refused, d.sock);     /* other */
	as(&ids[1], owner_drops, d.sock);
	CHECK_EQ(tdbc_table_stat(c, "d_owner", &st), -ENOENT,
		 "d_owner after its owner dropped it");
	err = raw_drop(d.sock, "d_root", msg, sizeof(msg));
	CHECK(err == 0, "root dropping d_root (owner 12345): %s (%s)",
	      h_errname(err), msg);
	CHECK(tdbc_table_stat(c, "d_group", &st) == 0 &&
	      tdbc_table_stat(c, "d_other", &st) == 0,
	      "a refused drop dropped a table");
	h_note("drop: refused to group and others (-EPERM); the owner and "
	       "root may");

	/* creates */
	as(&ids[1], owner_creates, d.sock);
	as(&ids[3], supp_creates, d.sock);
	err = create(c, "c_root_for", GROUPIE, NOBODY, 0604);
	CHECK(err == 0, "root creating for %u:%u: %s", GROUPIE, NOBODY,
	      h_errname(err));
	CHECK(tdbc_table_stat(c, "c_root_for", &st) == 0 &&
	      st.uid == GROUPIE && st.gid == NOBODY && st.mode == 0604,
	      "c_root_for is %u:%u %04o", st.uid, st.gid, st.mode);
	CHECK(tdbc_table_stat(c, "c_own", &st) == 0 && st.uid == OWNER_UID,
	      "c_own");
	h_note("create: others' uid or group refused (-EPERM); own, "
	       "supplementary group and root's: allowed");

	tdbc_close(c);
	h_stop(&d);
	h_done();
	return 0;
}
