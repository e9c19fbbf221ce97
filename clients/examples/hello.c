// SPDX-License-Identifier: MIT
/*
 * hello.c - the smallest useful client of tdbd, on libtdbclient.
 *
 * Connects to tdbd, creates the table "hello" (or takes the one there if
 * it is ours), puts a key, reads it back, counts the table's records
 * with a scan and prints the daemon's request counter.  Exit status 0 if
 * all of that worked and the value read is the one written, 1 otherwise.
 *
 * Table names are global and first come: a "hello" that exists already
 * may be someone else's, made so that they can read what we write into
 * it.  So when the create says -EEXIST, TABLE_STAT must show that the
 * table is ours and no wider than the mode we asked for; otherwise we
 * refuse to use it (open_own_table below: copy that, not a bare
 * "create, ignore EEXIST").
 *
 * Build it against the installed library (package libtdbclient-dev):
 *
 *     cc -o hello hello.c $(pkg-config --cflags --libs tdbclient)
 *
 * Run it:
 *
 *     ./hello                         # tdbd at $TDB_SOCKET, else /run/tdb/tdbd.sock
 *     ./hello /tmp/t.sock [VALUE]     # another socket, another value
 *
 * Connecting to the system's tdbd needs write access to its socket: be
 * root or in group tdb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tdb/client.h>

static int fail(struct tdbc *c, const char *what, int err)
{
	const char *msg = c ? tdbc_errmsg(c) : "";

	fprintf(stderr, "hello: %s: %s%s%s\n", what, tdbc_strerror(err),
		msg[0] ? ": " : "", msg);
	return 1;
}

/*
 * Create table name with mode, or accept it if it exists and is ours
 * (owner: our effective uid, which tdbd sees) with no permission bits
 * beyond mode.  0, 1 if it exists and is not safe to use (said why on
 * stderr), or a negative errno.
 */
static int open_own_table(struct tdbc *c, const char *name, uint32_t mode)
{
	struct tdbc_table_opts o;
	struct tdbc_table_stat st;
	uint32_t me = (uint32_t)geteuid();
	int err;

	tdbc_table_opts_init(&o);
	o.mode = mode;
	err = tdbc_table_create(c, name, &o);
	if (err != -EEXIST)
		return err;
	err = tdbc_table_stat(c, name, &st);
	if (err)
		return err;
	if (st.uid != me || (st.mode & ~mode)) {
		fprintf(stderr, "hello: table %s exists, owned by uid %u with "
			"mode %04o; we are uid %u and want mode %04o at most: "
			"not using it\n", name, st.uid, st.mode, me, mode);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : NULL;  /* NULL: the default */
	const char *value = argc > 2 ? argv[2] : "hello, world";
	const char *key = "greeting";
	struct tdbc_table *t = NULL;
	struct tdbc_scan *s = NULL;
	struct tdbc_stats st;
	struct tdbc *c = NULL;
	char errmsg[256], buf[256];
	const void *k, *v;
	size_t kl, vl;
	long len;
	int err, n = 0, rc = 1;

	err = tdbc_connect(&c, path, 0, errmsg, sizeof(errmsg));
	if (err) {
		fprintf(stderr, "hello: %s\n", errmsg);
		return 1;
	}
	printf("connected to %s (%s)\n", tdbc_socket_path(path),
	       tdbc_uses_rings(c) ? "shared rings" : "socket only");

	err = open_own_table(c, "hello", 0600);        /* ours alone */
	if (err > 0) {
		goto out;               /* not ours: said why */
	} else if (err) {
		rc = fail(c, "create table hello", err);
		goto out;
	}
	if ((err = tdbc_table_open(c, "hello", &t))) {
		rc = fail(c, "open table hello", err);
		goto out;
	}
	err = tdbc_put(t, NULL, key, strlen(key), value, strlen(value), 0);
	if (err) {
		rc = fail(c, "put", err);
		goto out;
	}
	len = tdbc_get(t, NULL, key, strlen(key), buf, sizeof(buf) - 1, NULL);
	if (len < 0) {
		rc = fail(c, "get", (int)len);
		goto out;
	}
	buf[len] = 0;
	printf("%s = %s\n", key, buf);
	if ((size_t)len != strlen(value) || memcmp(buf, value, (size_t)len)) {
		fprintf(stderr, "hello: read back '%s', wrote '%s'\n", buf,
			value);
		goto out;
	}

	if ((err = tdbc_scan_open(t, NULL, 0, 0, &s))) {
		rc = fail(c, "scan", err);
		goto out;
	}
	while ((err = tdbc_scan_next(s, &k, &kl, &v, &vl)) == 1)
		n++;
	if (err < 0) {
		rc = fail(c, "scan", err);
		goto out;
	}
	printf("table hello holds %d record(s)\n", n);

	if ((err = tdbc_stats(c, &st))) {
		rc = fail(c, "stats", err);
		goto out;
	}
	printf("tdbd has served %llu request(s), up %llu ms\n",
	       (unsigned long long)st.requests,
	       (unsigned long long)st.uptime_ms);
	rc = 0;
out:
	if (s)
		tdbc_scan_close(s);
	if (t)
		tdbc_table_close(t);
	tdbc_close(c);
	return rc;
}
