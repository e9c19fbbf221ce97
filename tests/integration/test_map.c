// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_map.c - zero-copy reads through tdbd: tables mapped read-only by
 * libtdbclient (TABLE_MAP, src/client/map.c), looked up in the client.
 *
 * Parts (TDB_ITEST_ONLY=name runs one):
 *   equal     a connection with rings maps the table it opens; every
 *             get, get_alloc, submitted GET and get_ref through the map
 *             equals the same through the rings (TDBC_NO_MAP, and
 *             $TDBC_NO_MAP), hits and misses, -ENOBUFS with its length;
 *             a get inside a transaction still sees the transaction; a
 *             socket-only connection gets no map and reads the same
 *   grow      a writer process grows the table from 1 to several extents
 *             while a mapped reader reads keys it wrote: every value
 *             read is its key's, the map follows the growth, nothing is
 *             missing at the end.  tdbd-map-hugepages runs the test with
 *             2 hugepages: the table starts on them and moves to 4 KiB
 *             pages meanwhile (the old memory's magic zeroed: the reader
 *             maps the table anew)
 *   drop      a table dropped while mapped: the reader stops using the
 *             map (-ENOENT), and a table made again under the name is
 *             read right (through a new map)
 *   readonly  the descriptor TABLE_MAP passes is read-only: mmap
 *             PROT_WRITE, mprotect, write, ftruncate, fallocate, seals
 *             fail, and a re-open of /proc/self/fd/N O_RDWR fails for a
 *             non-root uid (a forked child that drops to 65534; root
 *             only)
 *   access    (root) a client that may not read a table gets no map
 *             (TABLE_MAP: -EACCES) and reads with the mapped table of
 *             another mode work
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define NKEYS 3000

static struct h_daemon g_d;

static void key_of(char *k, size_t cap, unsigned int i)
{
	snprintf(k, cap, "key%07u", i);
}

/* A value that names its key: "v<i>:" then (i % 300) bytes of i. */
static size_t val_of(unsigned char *v, unsigned int i)
{
	size_t n = (size_t)snprintf((char *)v, 32, "v%u:", i), k;

	for (k = 0; k < i % 300; k++)
		v[n + k] = (unsigned char)(i + k);
	return n + k;
}

static void fill(struct tdbc_table *t, unsigned int from, unsigned int to)
{
	unsigned char v[400];
	char k[32];
	unsigned int i;

	for (i = from; i < to; i++) {
		size_t n = val_of(v, i);

		key_of(k, sizeof(k), i);
		CHECK_EQ(tdbc_put(t, NULL, k, strlen(k), v, n, 0), 0, "put");
	}
}

static void make_table(struct tdbc *c, const char *name, uint32_t mode)
{
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.mode = mode;
	CHECK_EQ(tdbc_table_create(c, name, &o), 0, name);
}

static struct tdbc_table *open_table(struct tdbc *c, const char *name)
{
	struct tdbc_table *t = NULL;

	CHECK_EQ(tdbc_table_open(c, name, &t), 0, name);
	return t;
}

/* --- equal --------------------------------------------------------------- */

static void same_get(struct tdbc_table *a, struct tdbc_table *b,
		     unsigned int i)
{
	unsigned char va[400], vb[400], want[400];
	void *pa = NULL, *pb = NULL;
	char k[32];
	long na, nb;
	size_t wn = val_of(want, i);

	key_of(k, sizeof(k), i);
	na = tdbc_get(a, NULL, k, strlen(k), va, sizeof(va), NULL);
	nb = tdbc_get(b, NULL, k, strlen(k), vb, sizeof(vb), NULL);
	CHECK(na == nb, "%s: mapped get %ld, ring get %ld", k, na, nb);
	if (i < NKEYS) {
		CHECK(na == (long)wn && !memcmp(va, want, wn),
		      "%s: mapped get gave a wrong value (%ld bytes)", k, na);
		CHECK(!memcmp(vb, want, wn), "%s: ring value", k);
	} else {
		CHECK_EQ(na, -ENOENT, "mapped get of a missing key");
	}
	na = tdbc_get_alloc(a, NULL, k, strlen(k), &pa);
	nb = tdbc_get_alloc(b, NULL, k, strlen(k), &pb);
	CHECK(na == nb, "%s: get_alloc %ld vs %ld", k, na, nb);
	CHECK(na < 0 || !memcmp(pa, pb, (size_t)na), "%s: get_alloc", k);
	free(pa);
	free(pb);
}

static void part_equal(void)
{
	struct tdbc *cm = h_connect(&g_d, 0), *cr = h_connect(&g_d,
							     TDBC_NO_MAP);
	struct tdbc *cs = h_connect(&g_d, TDBC_NO_RINGS), *ce;
	struct tdbc_table *tm, *tr, *ts, *te;
	struct tdbc_req reqs[32];
	struct tdbc_cqe cqes[32];
	unsigned char buf[400];
	char keys[32][32];
	unsigned int i, j, got;
	struct tdbc_txn *txn;
	size_t need = 0;
	long n;

	make_table(cm, "eq", 0600);
	tm = open_table(cm, "eq");
	fill(tm, 0, NKEYS);
	tr = open_table(cr, "eq");
	ts = open_table(cs, "eq");
	CHECK(tdbc_table_mapped(tm) == 1, "a connection with rings did not "
	      "map its table (%s)", tdbc_errmsg(cm));
	CHECK(tdbc_table_mapped(tr) == 0, "TDBC_NO_MAP mapped the table");
	CHECK(tdbc_table_mapped(ts) == 0, "TDBC_NO_RINGS mapped the table");
	setenv("TDBC_NO_MAP", "1", 1);
	ce = h_connect(&g_d, 0);
	unsetenv("TDBC_NO_MAP");
	te = open_table(ce, "eq");
	CHECK(tdbc_table_mapped(te) == 0, "$TDBC_NO_MAP=1 mapped the table");

	for (i = 0; i < NKEYS + 200; i++) {
		same_get(tm, tr, i);
		if (i % 97 == 0)
			same_get(tm, ts, i);
	}
	/* -ENOBUFS with the length, as through the ring */
	n = tdbc_get(tm, NULL, "key0000299", 10, buf, 3, &need);
	CHECK_EQ(n, -ENOBUFS, "get into a small buffer");
	CHECK(need == val_of(buf, 299), "need %zu", need);
	/* batched: tdbc_submit of 32 GETs */
	for (j = 0; j < 32; j++) {
		key_of(keys[j], sizeof(keys[j]), j * 101);
		memset(&reqs[j], 0, sizeof(reqs[j]));
		reqs[j].op = TDBC_OP_GET;
		reqs[j].table = tm;
		reqs[j].key = keys[j];
		reqs[j].klen = strlen(keys[j]);
		reqs[j].user = j;
	}
	CHECK_EQ(tdbc_submit(cm, reqs, 32), 32, "submit");
	for (got = 0; got < 32;) {
		int k = tdbc_reap(cm, cqes, 32, 1, 5000);

		CHECK(k > 0, "reap: %d", k);
		for (j = 0; j < (unsigned int)k; j++) {
			unsigned int idx = (unsigned int)cqes[j].user * 101;
			size_t wn = val_of(buf, idx);

			if (idx < NKEYS) {
				CHECK(cqes[j].res == 0 && cqes[j].vlen == wn &&
				      !memcmp(cqes[j].val, buf, wn),
				      "submitted GET of key %u", idx);
			} else {
				CHECK_EQ(cqes[j].res, -ENOENT, "missing");
			}
		}
		got += (unsigned int)k;
	}
	/* a client that never reaps its mapped GETs stays bounded: -EAGAIN,
	 * as when the submission ring is full */
	{
		unsigned int queued = 0;
		int rc;

		while ((rc = tdbc_submit(cm, reqs, 1)) == 1 &&
		       queued < 1000000)
			queued++;
		CHECK(rc == -EAGAIN && queued >= 1000 && queued < 100000,
		      "submit without reaping: %s after %u", h_errname(rc),
		      queued);
		while (tdbc_inflight(cm))
			CHECK(tdbc_reap(cm, cqes, 32, 0, 0) >= 0, "reap");
		h_note("equal: %u mapped GETs queued unreaped, then -EAGAIN",
		       queued);
	}
	/* in place */
	CHECK_EQ(tdbc_read_begin(cm), 0, "read_begin");
	for (i = 0; i < 50; i++) {
		const void *v;
		size_t vl, wn = val_of(buf, i * 7);
		char k[32];

		key_of(k, sizeof(k), i * 7);
		CHECK_EQ(tdbc_get_ref(tm, k, strlen(k), &v, &vl), 0, k);
		CHECK(vl == wn && !memcmp(v, buf, wn), "get_ref %s", k);
	}
	CHECK_EQ(tdbc_get_ref(tm, "nokey", 5, &(const void *){ 0 },
			      &(size_t){ 0 }), -ENOENT, "get_ref missing");
	/* a tdbc_get inside the section is part of it */
	n = tdbc_get(tm, NULL, "key0000021", 10, buf + 200, 190, NULL);
	CHECK(n == (long)val_of(buf, 21) && !memcmp(buf + 200, buf, (size_t)n),
	      "tdbc_get inside a read section: %ld", n);
	CHECK_EQ(tdbc_read_end(cm), 0, "read_end");
	/* the same API on a table that is not mapped copies */
	CHECK_EQ(tdbc_read_begin(cr), 0, "read_begin (no map)");
	{
		const void *v;
		size_t vl, wn = val_of(buf, 12);

		CHECK_EQ(tdbc_get_ref(tr, "key0000012", 10, &v, &vl), 0,
			 "get_ref (no map)");
		CHECK(vl == wn && !memcmp(v, buf, wn), "get_ref (no map)");
	}
	CHECK_EQ(tdbc_read_end(cr), 0, "read_end (no map)");
	/* a transaction's get sees the transaction */
	CHECK_EQ(tdbc_txn_begin(cm, &txn), 0, "txn");
	CHECK_EQ(tdbc_put(tm, txn, "key0000001", 10, "T", 1, 0), 0, "put");
	n = tdbc_get(tm, txn, "key0000001", 10, buf, sizeof(buf), NULL);
	CHECK(n == 1 && buf[0] == 'T', "get in txn: %ld", n);
	n = tdbc_get(tm, NULL, "key0000001", 10, buf, sizeof(buf), NULL);
	CHECK(n == (long)val_of(buf + 200, 1), "get outside txn: %ld", n);
	CHECK_EQ(tdbc_txn_commit(txn), 0, "commit");
	n = tdbc_get(tm, NULL, "key0000001", 10, buf, sizeof(buf), NULL);
	CHECK(n == 1 && buf[0] == 'T', "mapped get after commit: %ld", n);
	tdbc_close(ce);
	tdbc_close(cs);
	tdbc_close(cr);
	tdbc_close(cm);
	h_note("equal: %u keys, mapped == rings", NKEYS + 200);
}

/* --- grow ---------------------------------------------------------------- */

#define GROW_KEYS 25000u

static void part_grow(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct tdbc_table_stat st;
	struct tdbc_table *t;
	uint64_t seed = 7, reads = 0, hits = 0, page0;
	unsigned char v[400], want[400];
	unsigned int i;
	int pfd[2], status;
	pid_t pid;

	make_table(c, "grow", 0600);
	t = open_table(c, "grow");
	CHECK(tdbc_table_mapped(t), "not mapped");
	CHECK_EQ(tdbc_table_stat(c, "grow", &st), 0, "stat");
	CHECK(st.extents == 1, "a new table has %u extents", st.extents);
	page0 = st.page_size;
	CHECK(pipe(pfd) == 0, "pipe");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc *w = h_connect(&g_d, 0);
		struct tdbc_table *wt = open_table(w, "grow");

		close(pfd[0]);
		fill(wt, 0, GROW_KEYS);
		tdbc_close(w);
		_exit(0);
	}
	h_track(pid);
	close(pfd[1]);
	/* read while it writes: whatever is found is its key's */
	while (waitpid(pid, &status, WNOHANG) == 0) {
		char k[32];
		long n;

		i = (unsigned int)(h_rand(&seed) % GROW_KEYS);
		key_of(k, sizeof(k), i);
		n = tdbc_get(t, NULL, k, strlen(k), v, sizeof(v), NULL);
		reads++;
		if (n == -ENOENT)
			continue;
		CHECK(n >= 0, "get %s: %ld (%s)", k, n, tdbc_errmsg(c));
		CHECK((size_t)n == val_of(want, i) && !memcmp(v, want,
							     (size_t)n),
		      "get %s during growth: a wrong value", k);
		hits++;
	}
	h_untrack(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer");
	close(pfd[0]);
	CHECK_EQ(tdbc_table_stat(c, "grow", &st), 0, "stat");
	CHECK(st.extents > 1, "the table did not grow (%u extents)",
	      st.extents);
	for (i = 0; i < GROW_KEYS; i++) {
		char k[32];
		long n;

		key_of(k, sizeof(k), i);
		n = tdbc_get(t, NULL, k, strlen(k), v, sizeof(v), NULL);
		CHECK(n == (long)val_of(want, i) && !memcmp(v, want,
							    (size_t)n),
		      "after growth: %s: %ld", k, n);
	}
	CHECK(tdbc_table_mapped(t), "the map was lost on growth");
	/* tdbd-map-hugepages: 2 hugepages, so the table starts on them and
	 * moves to 4 KiB pages as it grows, under the reader's map */
	if (getenv("TDB_MAP_EXPECT_MOVE")) {
		CHECK(page0 == (2u << 20) && st.page_size == 4096,
		      "expected a move from hugepages to 4 KiB pages (page "
		      "size %llu, then %llu)", (unsigned long long)page0,
		      (unsigned long long)st.page_size);
		h_note("grow: the table moved from 2 MiB to 4 KiB pages "
		       "while mapped; the reader followed");
	}
	h_note("grow: 1 -> %u extents; %llu reads during it (%llu hits), "
	       "then all %u keys through the map", st.extents,
	       (unsigned long long)reads, (unsigned long long)hits,
	       GROW_KEYS);
	tdbc_close(c);
}

/* --- drop ---------------------------------------------------------------- */

static void part_drop(void)
{
	struct tdbc *c = h_connect(&g_d, 0), *o = h_connect(&g_d, 0);
	struct tdbc_table *t, *ot;
	unsigned char v[400];
	long n;

	make_table(o, "dr", 0600);
	ot = open_table(o, "dr");
	fill(ot, 0, 100);
	t = open_table(c, "dr");
	CHECK(tdbc_table_mapped(t), "not mapped");
	n = tdbc_get(t, NULL, "key0000005", 10, v, sizeof(v), NULL);
	CHECK(n > 0, "get before the drop: %ld", n);
	tdbc_table_close(ot);
	CHECK_EQ(tdbc_table_drop(o, "dr"), 0, "drop");
	n = tdbc_get(t, NULL, "key0000005", 10, v, sizeof(v), NULL);
	CHECK_EQ(n, -ENOENT, "get after the drop");
	CHECK(!tdbc_table_mapped(t), "still mapped after the drop");
	/* again under the name: the handle reads the new table */
	make_table(o, "dr", 0600);
	ot = open_table(o, "dr");
	CHECK_EQ(tdbc_put(ot, NULL, "key0000005", 10, "new", 3, 0), 0, "put");
	n = tdbc_get(t, NULL, "key0000005", 10, v, sizeof(v), NULL);
	CHECK(n == 3 && !memcmp(v, "new", 3), "get of the new table: %ld", n);
	n = tdbc_get(t, NULL, "key0000006", 10, v, sizeof(v), NULL);
	CHECK_EQ(n, -ENOENT, "a key of the dropped table");
	tdbc_close(o);
	tdbc_close(c);
	h_note("drop: the map stopped at the drop; the new table reads "
	       "right");
}

/* --- readonly ------------------------------------------------------------ */

static int map_fd(struct h_raw *r, const char *table, char *msg,
		  size_t msglen)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_MAP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = table };
	struct tdb_proto_msg a = { .cmd = TDB_CMD_ATTACH };
	int fd = -1, rings[8], err;
	unsigned int i, n;

	/* rings first: the SUBMIT ring's header is the reader slot; its
	 * ack's descriptors (3, or 4 with the completion eventfd) go */
	err = h_raw_call(r, &a, NULL, NULL, NULL, msg, msglen);
	CHECK(err == 0, "ATTACH: %s (%s)", h_errname(err), msg);
	n = h_raw_take_fds(r, rings, 8);
	CHECK(n >= 3, "ATTACH brought %u fds", n);
	for (i = 0; i < n; i++)
		close(rings[i]);
	err = h_raw_call(r, &m, NULL, NULL, NULL, msg, msglen);
	if (err)
		return err;
	CHECK(h_raw_take_fds(r, &fd, 1) == 1, "TABLE_MAP brought no fd");
	return fd;
}

/* In a child as uid 65534: may the descriptor be re-opened writable? */
static void reopen_as_nobody(int fd)
{
	char path[64];
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int rw;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
		      setuid(65534) == 0, "dropping to 65534: %s",
		      strerror(errno));
		rw = open(path, O_RDWR | O_CLOEXEC);
		CHECK(rw < 0, "uid 65534 re-opened the table's memory "
		      "read-write through %s", path);
		rw = open(path, O_WRONLY | O_CLOEXEC);
		CHECK(rw < 0, "uid 65534 re-opened it write-only");
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the uid 65534 child failed");
}

static void part_readonly(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	struct h_raw r;
	struct stat st;
	char msg[256] = "";
	void *p;
	int fd;

	make_table(c, "ro", 0600);
	fill(open_table(c, "ro"), 0, 10);
	h_raw_connect(&r, g_d.sock);
	fd = map_fd(&r, "ro", msg, sizeof(msg));
	CHECK(fd >= 0, "TABLE_MAP: %s (%s)", h_errname(fd), msg);
	CHECK((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY,
	      "the table's memory is passed writable");
	CHECK(fstat(fd, &st) == 0 && st.st_size >= (2 << 20), "fstat");
	CHECK((st.st_mode & 0777) == 0400, "the memfd's mode is %o",
	      (unsigned int)(st.st_mode & 0777));
	p = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(p == MAP_FAILED, "the table maps writable");
	p = mmap(NULL, 2 << 20, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(p != MAP_FAILED, "the table does not map read-only: %s",
	      strerror(errno));
	CHECK(*(const uint64_t *)p != 0, "no region magic");
	CHECK(mprotect(p, 2 << 20, PROT_READ | PROT_WRITE) < 0,
	      "mprotect made the map writable");
	munmap(p, 2 << 20);
	CHECK(write(fd, "x", 1) < 0, "write to the table's memory");
	CHECK(pwrite(fd, "x", 1, 0) < 0, "pwrite to the table's memory");
	CHECK(ftruncate(fd, 0) < 0, "the table's memory was truncated");
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			4096) < 0, "a hole was punched in the table");
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW) < 0,
	      "the table's memory was sealed by a client");
	CHECK(fchmod(fd, 0600) < 0 || getuid() == st.st_uid,
	      "a client of another uid changed the memfd's mode");
	if (getuid() == 0)
		reopen_as_nobody(fd);
	else
		h_note("readonly: not root, the uid 65534 re-open is not "
		       "tried");
	close(fd);
	h_raw_close(&r);
	tdbc_close(c);
	h_note("readonly: the map's descriptor cannot be made writable");
}

/* --- access -------------------------------------------------------------- */

static void part_access(void)
{
	struct tdbc *c = h_connect(&g_d, 0);
	int status;
	pid_t pid;

	if (getuid() != 0) {
		h_note("access: skipped (needs root)");
		tdbc_close(c);
		return;
	}
	make_table(c, "priv", 0600);
	make_table(c, "pub", 0644);
	fill(open_table(c, "priv"), 0, 10);
	fill(open_table(c, "pub"), 0, 10);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc_table *t = NULL;
		struct tdbc *n;
		struct h_raw r;
		char msg[256] = "";
		unsigned char v[400];
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
		      setuid(65534) == 0, "setuid: %s", strerror(errno));
		h_raw_connect(&r, g_d.sock);
		fd = map_fd(&r, "priv", msg, sizeof(msg));
		CHECK_EQ(fd, -EACCES, "TABLE_MAP of a table 65534 may not "
			 "read");
		h_raw_close(&r);
		h_raw_connect(&r, g_d.sock);
		fd = map_fd(&r, "pub", msg, sizeof(msg));
		CHECK(fd >= 0, "TABLE_MAP of a readable table: %s (%s)",
		      h_errname(fd), msg);
		close(fd);
		h_raw_close(&r);
		n = h_connect(&g_d, 0);
		CHECK_EQ(tdbc_table_open(n, "priv", &t), -EACCES, "open");
		t = open_table(n, "pub");
		CHECK(tdbc_table_mapped(t), "a readable table not mapped");
		CHECK(tdbc_get(t, NULL, "key0000003", 10, v, sizeof(v),
			       NULL) > 0, "get of pub");
		CHECK_EQ(tdbc_put(t, NULL, "x", 1, "y", 1, 0), -EACCES,
			 "put into a 0644 table of root");
		tdbc_close(n);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the uid 65534 child failed");
	tdbc_close(c);
	h_note("access: no map without read permission; readable: mapped");
}

int main(void)
{
	/* rings on normal pages: the hugepages run's pool is the tables' */
	const char *args[] = { "--socket-mode", "0666", "--hugepages", "no",
			       NULL };

	h_init("tdbd-map", 120);
	/* the socket's directory must let a setuid child in */
	chmod(h_dir(), 0755);
	h_start(&g_d, "map", args);
	if (h_want("equal"))
		part_equal();
	if (h_want("grow"))
		part_grow();
	if (h_want("drop"))
		part_drop();
	if (h_want("readonly"))
		part_readonly();
	if (h_want("access"))
		part_access();
	h_stop(&g_d);
	h_done();
	return 0;
}
