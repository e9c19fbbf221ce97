// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_cond_hostile.c - issue 24's new surface against a hostile client:
 *
 *  bounds    (tdbd --max-txn-ops 100 --max-txn-bytes 64K) as uid 65534:
 *            a read-only transaction of distinct GETs (absent and present
 *            keys) is refused -E2BIG at the 101st, naming max-txn-ops;
 *            GETs of 4000-byte keys at max-txn-bytes (about 16 of them);
 *            INCRs count the same; the transaction still aborts, and a
 *            new one works.
 *  uidmem    (tdbd --max-txn-memory-per-uid 1M) as uid 65534: GETs of
 *            4000-byte keys in transactions on two connections are
 *            refused -EDQUOT naming max-txn-memory-per-uid after about
 *            1 MiB of keys in all (the read set is charged to the uid,
 *            across connections); an abort gives it back.
 *  oracle    a table uid 65534 may write but not read (0602): PUT
 *            IF_ABSENT / IF_PRESENT / IF_VERSION, DEL IF_VERSION and
 *            INCR are refused -EACCES whether the key exists or not
 *            (the same errno and message: no existence or version
 *            oracle), alone and in a transaction (nothing applied),
 *            while a plain PUT works and GET is -EACCES as before.
 *  malformed raw messages: IF_VERSION 0 / of 4 and 12 bytes, DEL
 *            IF_VERSION 0, VERSION or INT in a request, DELTA of 4 and
 *            16 bytes, INCR without KEY, INCR with VALUE or FLAGS, DEL
 *            with FLAGS, SET_VERSION from a client (-EPERM: only tdb.ko's
 *            supervisor restores versions) and SET_VERSION 0; INCR of a
 *            non-integer (-EDOM) and past the s64 range (-ERANGE) leave
 *            the value as it was; each refusal has an extack text (and
 *            the offending attribute's offset); the connection and
 *            tdbd keep serving.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define UID 65534

static struct h_daemon d;

/* Run fn as uid UID in a child; fail if it fails. */
static void as_uid(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		CHECK(setgroups(0, NULL) == 0 && setresgid(UID, UID, UID) == 0 &&
		      setresuid(UID, UID, UID) == 0, "become %d", UID);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fn();
		_exit(0);
	}
	h_track(pid);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the part as uid %d "
	      "failed", UID);
}

static void start(const char *tag, const char *const *extra)
{
	const char *args[16] = { "--socket-mode", "0666", "--sync", "none" };
	unsigned int n = 4, i;

	for (i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	h_start(&d, tag, args);
}

static void make_table(const char *name, unsigned int mode)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table_opts o;

	tdbc_table_opts_init(&o);
	o.mode = mode;
	CHECK(tdbc_table_create(c, name, &o) == 0, "create %s: %s", name,
	      tdbc_errmsg(c));
	tdbc_close(c);
}

/* --- bounds ----------------------------------------------------------- */

static char bigkey[4000];

static size_t big(unsigned int i)
{
	snprintf(bigkey, sizeof(bigkey), "%08u", i);
	bigkey[8] = '.';
	return sizeof(bigkey);
}

/* GETs of distinct keys (klen: 0 = short keys) in x until refused; the
 * number that passed.  The refusal must be want, its message hold what. */
static long gets_until(struct tdbc *c, struct tdbc_table *t,
		       struct tdbc_txn *x, bool bigkeys, unsigned int from,
		       long max, int want, const char *what)
{
	char buf[16];
	long i, n = 0;

	for (i = 0; i < max; i++) {
		char key[32];
		size_t kl;

		if (bigkeys) {
			kl = big(from + (unsigned int)i);
			n = tdbc_get(t, x, bigkey, kl, buf, sizeof(buf), NULL);
		} else {
			kl = (size_t)snprintf(key, sizeof(key), "g%u",
					      from + (unsigned int)i);
			n = tdbc_get(t, x, key, kl, buf, sizeof(buf), NULL);
		}
		if (n != -ENOENT && n < 0)
			break;
	}
	CHECK(i < max, "%s: %ld GETs in one transaction, none refused", what,
	      max);
	CHECK(n == want, "%s: GET %ld refused %s (%s), want %s", what, i + 1,
	      h_errname((int)n), tdbc_errmsg(c), h_errname(want));
	return i;
}

static void bounds_child(void)
{
	struct tdbc *c = h_connect(&d, 0);
	struct tdbc_table *t;
	struct tdbc_txn *x;
	char buf[16];
	long n;
	int err, i;

	CHECK(tdbc_table_open(c, "hb", &t) == 0, "open");
	CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
	n = gets_until(c, t, x, false, 0, 10000, -E2BIG, "max-txn-ops=100");
	CHECK(n == 100, "max-txn-ops=100: the read set took %ld GETs", n);
	CHECK(strstr(tdbc_errmsg(c), "max-txn-ops"), "message \"%s\" does "
	      "not name max-txn-ops", tdbc_errmsg(c));
	h_note("the 101st GET: %s", tdbc_errmsg(c));
	/* a refused read leaves the transaction to abort */
	CHECK(tdbc_txn_abort(x) == 0, "abort");

	/* INCRs and GETs together */
	CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
	for (i = 0; i < 50; i++) {
		char key[16];
		int kl = snprintf(key, sizeof(key), "i%d", i);

		err = tdbc_incr(t, x, key, (size_t)kl, 1, NULL);
		CHECK(err == 0, "incr %d in txn: %s (%s)", i, h_errname(err),
		      tdbc_errmsg(c));
	}
	n = gets_until(c, t, x, false, 0, 10000, -E2BIG,
		       "50 INCRs then GETs, max-txn-ops=100");
	/* each INCR is a read and a change: 100 ops already, or 50 */
	CHECK(n == 0 || n == 50, "50 INCRs then %ld GETs passed "
	      "max-txn-ops=100", n);
	h_note("50 INCRs in a transaction, then %ld GETs (each INCR counts "
	       "%s)", n, n ? "once" : "twice: a read and a change");
	CHECK(tdbc_txn_abort(x) == 0, "abort");

	CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
	n = gets_until(c, t, x, true, 0, 10000, -E2BIG,
		       "4000-byte keys, max-txn-bytes=64K");
	CHECK(n >= 14 && n <= 16, "max-txn-bytes=64K: %ld GETs of 4000-byte "
	      "keys passed", n);
	CHECK(strstr(tdbc_errmsg(c), "max-txn-bytes"), "message \"%s\" does "
	      "not name max-txn-bytes", tdbc_errmsg(c));
	CHECK(tdbc_txn_abort(x) == 0, "abort");

	/* and a transaction still works */
	CHECK(tdbc_txn_begin(c, &x) == 0, "begin");
	printf("bounds: the read set is bounded by max-txn-ops (100 GETs) "
	       "and max-txn-bytes (%ld GETs of 4000-byte keys)\n", n);
	n = tdbc_get(t, x, "g0", 2, buf, sizeof(buf), NULL);
	CHECK(n == 1, "get in txn: %s", h_errname((int)n));
	CHECK(tdbc_txn_commit(x) == 0, "read-only commit");
	tdbc_table_close(t);
	tdbc_close(c);
}

static void part_bounds(void)
{
	static const char *const extra[] = { "--max-txn-ops", "100",
		"--max-txn-bytes", "64K", NULL };
	struct tdbc *c;
	struct tdbc_table *t;
	int i;

	start("bounds", extra);
	make_table("hb", 0666);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_open(c, "hb", &t) == 0, "open");
	for (i = 0; i < 100; i += 2) {
		char key[16];
		int kl = snprintf(key, sizeof(key), "g%d", i);

		CHECK(tdbc_put(t, NULL, key, (size_t)kl, "v", 1, 0) == 0,
		      "put");
	}
	tdbc_table_close(t);
	as_uid(bounds_child);
	tdbc_close(c);
	h_stop(&d);
}

/* --- uidmem ----------------------------------------------------------- */

static void uidmem_child(void)
{
	struct tdbc *c[2];
	struct tdbc_table *t[2];
	struct tdbc_txn *x[2];
	long n0, n1, n2;
	int i;

	for (i = 0; i < 2; i++) {
		c[i] = h_connect(&d, i ? TDBC_NO_RINGS : 0);
		CHECK(tdbc_table_open(c[i], "hm", &t[i]) == 0, "open");
		CHECK(tdbc_txn_begin(c[i], &x[i]) == 0, "begin");
	}
	/* half the uid's memory on one connection */
	for (n0 = 0; n0 < 120; n0++) {
		long n = tdbc_get(t[0], x[0], bigkey, big((unsigned int)n0),
				  NULL, 0, NULL);

		CHECK(n == -ENOENT, "GET %ld: %s (%s)", n0, h_errname((int)n),
		      tdbc_errmsg(c[0]));
	}
	n1 = gets_until(c[1], t[1], x[1], true, 1000, 100000, -EDQUOT,
			"the second connection, max-txn-memory-per-uid=1M");
	CHECK(strstr(tdbc_errmsg(c[1]), "max-txn-memory-per-uid"), "message "
	      "\"%s\" does not name max-txn-memory-per-uid",
	      tdbc_errmsg(c[1]));
	h_note("uid %d: %ld + %ld GETs of 4000-byte keys, then %s", UID, n0,
	       n1, tdbc_errmsg(c[1]));
	CHECK(n0 + n1 >= 200 && n0 + n1 <= 262, "max-txn-memory-per-uid=1M: "
	      "%ld GETs of 4000-byte keys in all", n0 + n1);
	/* the first connection's abort gives its part back */
	CHECK(tdbc_txn_abort(x[0]) == 0, "abort");
	n2 = gets_until(c[1], t[1], x[1], true, 5000, 100000, -EDQUOT,
			"after the other connection's abort");
	CHECK(n2 >= n0 - 2 && n2 <= n0 + 2, "after an abort gave back %ld "
	      "reads, %ld more passed", n0, n2);
	CHECK(tdbc_txn_abort(x[1]) == 0, "abort");
	for (i = 0; i < 2; i++) {
		tdbc_table_close(t[i]);
		tdbc_close(c[i]);
	}
	printf("uidmem: read sets charged to the uid across connections "
	       "(%ld GETs of 4000-byte keys for 1M), given back at abort\n",
	       n0 + n1);
}

static void part_uidmem(void)
{
	static const char *const extra[] = { "--max-txn-memory-per-uid",
		"1M", NULL };

	start("uidmem", extra);
	make_table("hm", 0666);
	as_uid(uidmem_child);
	h_stop(&d);
}

/* --- hand-made messages (as test_hostile.c) ------------------------------ */

struct mb {
	uint32_t words[2048];
	size_t len;
};

static unsigned char *mb_bytes(struct mb *b)
{
	return (unsigned char *)b->words;
}

static void mb_start(struct mb *b, uint8_t cmd)
{
	uint16_t flags = NLM_F_REQUEST;
	struct nlmsghdr nh = { .nlmsg_type = TDB_PROTO_FAMILY };
	unsigned char g[4] = { cmd, TDB_PROTO_VERSION, 0, 0 };
	static uint32_t seq = 1000;

	if (cmd == TDB_CMD_PUT || cmd == TDB_CMD_DEL ||
	    cmd == TDB_CMD_TXN_COMMIT || cmd == TDB_CMD_TXN_ABORT)
		flags |= NLM_F_ACK;
	nh.nlmsg_flags = flags;
	nh.nlmsg_seq = ++seq;
	memset(b, 0, sizeof(*b));
	memcpy(mb_bytes(b), &nh, sizeof(nh));
	memcpy(mb_bytes(b) + 16, g, 4);
	b->len = 20;
}

static uint32_t mb_attr(struct mb *b, uint16_t type, const void *p,
			size_t plen)
{
	uint32_t off = (uint32_t)b->len;
	uint16_t hdr[2] = { (uint16_t)(4 + plen), type };

	CHECK(b->len + 4 + plen + 4 <= sizeof(b->words), "message too big");
	memcpy(mb_bytes(b) + b->len, hdr, 4);
	if (plen)
		memcpy(mb_bytes(b) + b->len + 4, p, plen);
	b->len += (4 + plen + 3) & ~(size_t)3;
	return off;
}

static uint32_t mb_u64(struct mb *b, uint16_t type, uint64_t v)
{
	return mb_attr(b, type, &v, 8);
}

static void mb_end(struct mb *b)
{
	uint32_t len = (uint32_t)b->len;

	memcpy(mb_bytes(b), &len, 4);
}

/* A request on table/key of cmd. */
static void mb_req(struct mb *b, uint8_t cmd, const char *table,
		   const char *key)
{
	mb_start(b, cmd);
	mb_attr(b, TDB_A_TABLE, table, strlen(table) + 1);
	if (key)
		mb_attr(b, TDB_A_KEY, key, strlen(key));
}

/* Send b; the answer's errno; its text into msg; a reply's parsed copy
 * into *out (if not NULL). */
static int mb_call(struct h_raw *r, struct mb *b, char *msg, size_t cap,
		   uint32_t *off, int64_t *ival)
{
	static unsigned char buf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { 0 };
	struct nlmsghdr nh;
	struct tdb_proto_msg a;
	long n;
	int err;

	mb_end(b);
	memcpy(&nh, mb_bytes(b), sizeof(nh));
	CHECK(h_raw_send(r, mb_bytes(b), b->len) == 0, "send");
	n = h_raw_recv(r, buf, sizeof(buf), 10000);
	CHECK(n > 0, "no answer (%s)", n ? h_errname((int)n) : "closed");
	err = tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a, &ext);
	CHECK(err == 0, "the answer does not parse: %s", ext.msg);
	CHECK(a.seq == nh.nlmsg_seq, "answer seq %u, want %u", a.seq,
	      nh.nlmsg_seq);
	if (msg)
		snprintf(msg, cap, "%s", a.type == NLMSG_ERROR && a.ext.msg ?
			 a.ext.msg : "");
	if (off)
		*off = a.type == NLMSG_ERROR ? a.ext.offset : 0;
	if (a.type != NLMSG_ERROR) {
		if (ival)
			*ival = a.ival;
		return 0;
	}
	return a.error;
}

/* b must be refused with err, an extack text and (off != 0) the offset
 * of the attribute at fault. */
static void refused(struct h_raw *r, struct mb *b, int err, uint32_t off,
		    const char *what)
{
	char msg[300];
	uint32_t got_off = 0;
	int got = mb_call(r, b, msg, sizeof(msg), &got_off, NULL);

	CHECK(got == err, "%s: %s (%s), want %s", what, h_errname(got), msg,
	      h_errname(err));
	CHECK(msg[0], "%s: %s without a text", what, h_errname(got));
	if (off)
		CHECK(got_off == off, "%s: extack offset %u, want %u (%s)",
		      what, got_off, off, msg);
	h_note("%s: %s \"%s\"", what, h_errname(got), msg);
}

static void raw_stats_ok(struct h_raw *r, const char *what)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_STATS };
	unsigned int parts = 0;
	char msg[256];
	int err = h_raw_call(r, &m, NULL, NULL, &parts, msg, sizeof(msg));

	CHECK(err == 0 && parts == 1, "%s: STATS on the same connection: "
	      "%s (%s)", what, h_errname(err), msg);
}

/* --- oracle --------------------------------------------------------------- */

/* The conditional writes of uid UID on "ho" (0602: it may write, not
 * read): "k1" exists, "k0" does not; each refused the same way. */
static void oracle_child(void)
{
	struct h_raw r;
	struct mb b;
	char msg[2][300];
	int k, i, err;

	h_raw_connect(&r, d.sock);
	for (i = 0; i < 5; i++) {
		const char *what[] = { "PUT IF_ABSENT", "PUT IF_PRESENT",
				       "PUT IF_VERSION", "DEL IF_VERSION",
				       "INCR" };

		for (k = 0; k < 2; k++) {
			const char *key = k ? "k1" : "k0";
			uint32_t fl = i == 0 ? TDB_PUT_IF_ABSENT :
				      TDB_PUT_IF_PRESENT;

			mb_req(&b, i == 3 ? TDB_CMD_DEL : i == 4 ?
			       TDB_CMD_INCR : TDB_CMD_PUT, "ho", key);
			if (i < 3)
				mb_attr(&b, TDB_A_VALUE, "w", 1);
			if (i < 2)
				mb_attr(&b, TDB_A_FLAGS, &fl, 4);
			if (i == 2 || i == 3)
				mb_u64(&b, TDB_A_IF_VERSION, 1);
			err = mb_call(&r, &b, msg[k], sizeof(msg[k]), NULL,
				      NULL);
			CHECK(err == -EACCES, "%s of %s key %s on a table "
			      "the client may write, not read: %s (%s), want "
			      "EACCES", what[i], k ? "present" : "absent",
			      key, h_errname(err), msg[k]);
		}
		CHECK(!strcmp(msg[0], msg[1]), "%s: an absent key says \"%s\", "
		      "a present one \"%s\": an existence oracle", what[i],
		      msg[0], msg[1]);
		h_note("%s on a write-only table: EACCES \"%s\"", what[i],
		       msg[0]);
	}
	/* a plain PUT is allowed, GET is not */
	mb_req(&b, TDB_CMD_PUT, "ho", "k2");
	mb_attr(&b, TDB_A_VALUE, "w", 1);
	err = mb_call(&r, &b, msg[0], sizeof(msg[0]), NULL, NULL);
	CHECK(err == 0, "a plain PUT by a writer: %s (%s)", h_errname(err),
	      msg[0]);
	mb_req(&b, TDB_CMD_GET, "ho", "k1");
	err = mb_call(&r, &b, msg[0], sizeof(msg[0]), NULL, NULL);
	CHECK(err == -EACCES, "GET by a writer: %s", h_errname(err));
	raw_stats_ok(&r, "oracle");
	h_raw_close(&r);
}

/* The same in a transaction: TXN_BEGIN's id, then the op. */
static uint64_t raw_begin(struct h_raw *r)
{
	static unsigned char buf[4096] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { 0 };
	struct tdb_proto_msg a;
	struct mb b;
	long n;

	mb_start(&b, TDB_CMD_TXN_BEGIN);
	mb_end(&b);
	CHECK(h_raw_send(r, mb_bytes(&b), b.len) == 0, "send");
	n = h_raw_recv(r, buf, sizeof(buf), 10000);
	CHECK(n > 0, "no answer to TXN_BEGIN");
	CHECK(tdb_proto_parse(buf, (size_t)n, TDB_PROTO_ANSWER, &a, &ext) ==
	      0 && a.type == TDB_PROTO_FAMILY && a.txn, "TXN_BEGIN's answer");
	return a.txn;
}

static void oracle_txn_child(void)
{
	struct h_raw r;
	struct mb b;
	char msg[300];
	int i, err;

	h_raw_connect(&r, d.sock);
	for (i = 0; i < 3; i++) {
		uint64_t txn = raw_begin(&r);
		uint32_t fl = TDB_PUT_IF_ABSENT;
		const char *what[] = { "PUT IF_ABSENT", "DEL IF_VERSION",
				       "INCR" };

		mb_req(&b, i == 1 ? TDB_CMD_DEL : i == 2 ? TDB_CMD_INCR :
		       TDB_CMD_PUT, "ho", "t1");
		if (i == 0) {
			mb_attr(&b, TDB_A_VALUE, "w", 1);
			mb_attr(&b, TDB_A_FLAGS, &fl, 4);
		}
		if (i == 1)
			mb_u64(&b, TDB_A_IF_VERSION, 1);
		mb_u64(&b, TDB_A_TXN, txn);
		err = mb_call(&r, &b, msg, sizeof(msg), NULL, NULL);
		if (err == 0) {
			mb_start(&b, TDB_CMD_TXN_COMMIT);
			mb_u64(&b, TDB_A_TXN, txn);
			err = mb_call(&r, &b, msg, sizeof(msg), NULL, NULL);
			CHECK(err == -EACCES, "%s in a transaction on a table "
			      "the client may not read: commit %s (%s), want "
			      "EACCES", what[i], h_errname(err), msg);
		} else {
			CHECK(err == -EACCES, "%s in a transaction on a table "
			      "the client may not read: %s (%s), want EACCES",
			      what[i], h_errname(err), msg);
			CHECK(msg[0], "%s in a transaction: EACCES without a "
			      "text", what[i]);
			mb_start(&b, TDB_CMD_TXN_ABORT);
			mb_u64(&b, TDB_A_TXN, txn);
			err = mb_call(&r, &b, NULL, 0, NULL, NULL);
			CHECK(err == 0, "abort: %s", h_errname(err));
		}
		h_note("%s in a transaction: EACCES (%s)", what[i], msg);
	}
	h_raw_close(&r);
}

static void part_oracle(void)
{
	struct tdbc *c;
	struct tdbc_table *t;
	char buf[16];
	long n;

	start("oracle", NULL);
	make_table("ho", 0602);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_open(c, "ho", &t) == 0, "open");
	CHECK(tdbc_put(t, NULL, "k1", 2, "5", 1, 0) == 0, "put");
	CHECK(tdbc_put(t, NULL, "t1", 2, "5", 1, 0) == 0, "put");
	as_uid(oracle_child);
	as_uid(oracle_txn_child);
	n = tdbc_get(t, NULL, "k1", 2, buf, sizeof(buf), NULL);
	CHECK(n == 1 && buf[0] == '5', "k1 changed by refused writes");
	n = tdbc_get(t, NULL, "k0", 2, buf, sizeof(buf), NULL);
	CHECK(n == -ENOENT, "k0 made by refused writes");
	n = tdbc_get(t, NULL, "t1", 2, buf, sizeof(buf), NULL);
	CHECK(n == 1 && buf[0] == '5', "t1 changed by a refused "
	      "transaction");
	n = tdbc_get(t, NULL, "k2", 2, buf, sizeof(buf), NULL);
	CHECK(n == 1 && buf[0] == 'w', "the writer's plain put: %ld", n);
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	printf("oracle: conditional writes and INCR on a write-only table: "
	       "EACCES, the same for present and absent keys, alone and in "
	       "transactions; plain PUT allowed\n");
}

/* --- malformed ------------------------------------------------------------ */

static void part_malformed(void)
{
	struct tdbc *c;
	struct tdbc_table *t;
	struct h_raw r;
	struct mb b;
	uint32_t off, u32 = 1;
	uint64_t zero16[2] = { 5, 0 };
	int64_t res;
	char buf[64];
	long n;
	int err;

	start("malformed", NULL);
	make_table("hx", 0600);
	c = h_connect(&d, 0);
	CHECK(tdbc_table_open(c, "hx", &t) == 0, "open");
	CHECK(tdbc_put(t, NULL, "n", 1, "41", 2, 0) == 0, "put");
	h_raw_connect(&r, d.sock);

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	off = mb_u64(&b, TDB_A_IF_VERSION, 0);
	refused(&r, &b, -EINVAL, off, "PUT IF_VERSION 0");

	mb_req(&b, TDB_CMD_DEL, "hx", "n");
	off = mb_u64(&b, TDB_A_IF_VERSION, 0);
	refused(&r, &b, -EINVAL, off, "DEL IF_VERSION 0");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	off = mb_attr(&b, TDB_A_IF_VERSION, &u32, 4);
	refused(&r, &b, -EINVAL, off, "IF_VERSION of 4 bytes");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	off = mb_attr(&b, TDB_A_IF_VERSION, zero16, 12);
	refused(&r, &b, -EINVAL, off, "IF_VERSION of 12 bytes");

	mb_req(&b, TDB_CMD_GET, "hx", "n");
	off = mb_u64(&b, TDB_A_VERSION, 1);
	refused(&r, &b, -EINVAL, off, "VERSION in a GET request");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	off = mb_u64(&b, TDB_A_VERSION, 1);
	refused(&r, &b, -EINVAL, off, "VERSION in a PUT request");

	mb_req(&b, TDB_CMD_INCR, "hx", "n");
	off = mb_attr(&b, TDB_A_DELTA, &u32, 4);
	refused(&r, &b, -EINVAL, off, "DELTA of 4 bytes");

	mb_req(&b, TDB_CMD_INCR, "hx", "n");
	off = mb_attr(&b, TDB_A_DELTA, zero16, 16);
	refused(&r, &b, -EINVAL, off, "DELTA of 16 bytes");

	mb_req(&b, TDB_CMD_INCR, "hx", "n");
	off = mb_u64(&b, TDB_A_INT, 1);
	refused(&r, &b, -EINVAL, off, "INT in an INCR request");

	mb_req(&b, TDB_CMD_INCR, "hx", NULL);
	mb_u64(&b, TDB_A_DELTA, 1);
	refused(&r, &b, -EINVAL, 0, "INCR without KEY");

	mb_req(&b, TDB_CMD_INCR, "hx", "n");
	off = mb_attr(&b, TDB_A_VALUE, "1", 1);
	refused(&r, &b, -EINVAL, off, "INCR with VALUE");

	mb_req(&b, TDB_CMD_INCR, "hx", "n");
	off = mb_attr(&b, TDB_A_FLAGS, &u32, 4);
	refused(&r, &b, -EINVAL, off, "INCR with FLAGS");

	mb_req(&b, TDB_CMD_DEL, "hx", "n");
	off = mb_attr(&b, TDB_A_FLAGS, &u32, 4);
	refused(&r, &b, -EINVAL, off, "DEL with FLAGS");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	off = mb_u64(&b, TDB_A_SET_VERSION, 0);
	refused(&r, &b, -EINVAL, off, "SET_VERSION 0");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	mb_u64(&b, TDB_A_SET_VERSION, 1000000);
	refused(&r, &b, -EPERM, 0, "SET_VERSION from a client (root)");

	mb_req(&b, TDB_CMD_PUT, "hx", "n");
	mb_attr(&b, TDB_A_VALUE, "1", 1);
	u32 = 1u << 5;
	off = mb_attr(&b, TDB_A_FLAGS, &u32, 4);
	refused(&r, &b, -EOPNOTSUPP, off, "PUT with an unknown flag bit");

	raw_stats_ok(&r, "malformed");

	/* values INCR refuses, left as they were */
	{
		static const char *const bad[] = { "x", "", "007", "-0",
			"+1", " 1", "1 ", "1.5", "0x10",
			"123456789012345678901" };
		unsigned int i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			CHECK(tdbc_put(t, NULL, "b", 1, bad[i], strlen(bad[i]),
				       0) == 0, "put");
			err = tdbc_incr(t, NULL, "b", 1, 1, &res);
			CHECK(err == -EDOM, "INCR of \"%s\": %s (%s), want "
			      "EDOM", bad[i], h_errname(err),
			      tdbc_errmsg(c));
			CHECK(tdbc_errmsg(c)[0], "EDOM without a text");
			n = tdbc_get(t, NULL, "b", 1, buf, sizeof(buf), NULL);
			CHECK(n == (long)strlen(bad[i]) &&
			      !memcmp(buf, bad[i], (size_t)n), "\"%s\" changed "
			      "by a refused INCR", bad[i]);
		}
		h_note("INCR of a non-integer: EDOM (%s)", tdbc_errmsg(c));
	}
	CHECK(tdbc_put(t, NULL, "b", 1, "9223372036854775806", 19, 0) == 0,
	      "put");
	err = tdbc_incr(t, NULL, "b", 1, 1, &res);
	CHECK(err == 0 && res == INT64_MAX, "INCR to INT64_MAX: %s",
	      h_errname(err));
	err = tdbc_incr(t, NULL, "b", 1, 1, &res);
	CHECK(err == -ERANGE, "INCR past INT64_MAX: %s (%s), want ERANGE",
	      h_errname(err), tdbc_errmsg(c));
	h_note("INCR past INT64_MAX: ERANGE (%s)", tdbc_errmsg(c));
	n = tdbc_get(t, NULL, "b", 1, buf, sizeof(buf), NULL);
	CHECK(n == 19 && !memcmp(buf, "9223372036854775807", 19), "the value "
	      "after a refused INCR: %.*s", (int)(n > 0 ? n : 0), buf);
	CHECK(tdbc_put(t, NULL, "b", 1, "-9223372036854775807", 20, 0) == 0,
	      "put");
	err = tdbc_incr(t, NULL, "b", 1, -1, &res);
	CHECK(err == 0 && res == INT64_MIN, "INCR to INT64_MIN: %s",
	      h_errname(err));
	n = tdbc_get(t, NULL, "b", 1, buf, sizeof(buf), NULL);
	CHECK(n == 20 && !memcmp(buf, "-9223372036854775808", 20), "INT64_MIN "
	      "stored as %.*s", (int)(n > 0 ? n : 0), buf);
	err = tdbc_incr(t, NULL, "b", 1, INT64_MIN, &res);
	CHECK(err == -ERANGE, "INCR INT64_MIN + INT64_MIN: %s, want ERANGE",
	      h_errname(err));
	err = tdbc_incr(t, NULL, "n", 1, 1, &res);
	CHECK(err == 0 && res == 42, "INCR after all that: %s %lld",
	      h_errname(err), (long long)res);

	raw_stats_ok(&r, "after INCR's refusals");
	h_raw_close(&r);
	tdbc_table_close(t);
	tdbc_close(c);
	h_stop(&d);
	printf("malformed: every bad use of the new attributes refused with "
	       "a text, INCR's EDOM and ERANGE change nothing, tdbd serves "
	       "on\n");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("cond-hostile: not root: skipped\n");
		return 77;
	}
	h_init("cond-hostile", h_sanitized() ? 400 : 120);
	memset(bigkey, 'k', sizeof(bigkey));
	if (h_want("malformed"))
		part_malformed();
	if (h_want("oracle"))
		part_oracle();
	if (h_want("bounds"))
		part_bounds();
	if (h_want("uidmem"))
		part_uidmem();
	h_done();
	return 0;
}
