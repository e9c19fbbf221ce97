// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_owner_serve.c - src/owner/serve.c alone, over a fake transport
 * (a list of the answers it was given) and a fake home (an LSN counter
 * for its log, a durable LSN, a failed flag, a clock and a supervisor
 * flag for deadlines):
 *
 *  - a change's answer is held while the home says so and released in
 *    LSN order as the durable LSN moves; a GET's reply overtakes held
 *    acks; an INCR's reply is held as built;
 *  - the bounds (answers, bytes of the held requests) say full;
 *  - a failed log turns every held answer into the home's error;
 *  - past its deadline with no supervisor, -ETIMEDOUT; with one, it waits;
 *  - dumps are paced: the 9th in progress answers -EBUSY;
 *  - what serve refuses (a parse error, the transport's refusal, the 9th
 *    dump) is answered once and counted once (requests, errors);
 *  - a deferred commit's answer (tdbo_conn_answer) is held like any;
 *  - tdbo_conn_fini drops what is held and tells the transport.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

static struct tdbo_limits lim = {
	.default_mode = 0644, .feed_size = 1u << 16, .max_tables = 64,
	.max_txns = 16, .max_txn_ops = 64, .max_txn_bytes = 1u << 20,
	.max_snapshot_bytes = 1u << 20, .max_snapshot_memory = 1u << 20,
	.max_snapshot_memory_per_uid = 1u << 20,
};

/* --- the fake home: a log that numbers records ---------------------------- */

struct home {
	uint64_t lsn;           /* last record */
	uint64_t durable;
	int failed;
	uint64_t now;           /* its clock */
	bool sup;               /* a supervisor attached */
	unsigned int kicks;     /* held() calls */
};
static struct home H;

static int log_reserve(void *arg, const struct tdbo_log_size *sz,
		       const char **msg)
{
	(void)arg; (void)sz; (void)msg;
	return 0;
}
static void log_cancel(void *arg, const struct tdbo_log_size *sz)
{
	(void)arg; (void)sz;
}
static void log_begin(void *arg, uint64_t version)
{
	(void)arg; (void)version;
}
static void log_op(void *arg, const struct tdbo_table *t, bool del,
		   const void *key, size_t klen, const void *val, size_t vlen,
		   uint64_t deadline)
{
	(void)arg; (void)t; (void)del; (void)key; (void)klen; (void)val;
	(void)vlen; (void)deadline;
}
static uint64_t log_commit(void *arg, const struct tdbo_log_size *sz)
{
	(void)arg; (void)sz;
	return ++H.lsn;
}
static uint64_t log_table(void *arg, const struct tdbo_table *t,
			  const struct tdbo_log_size *sz)
{
	(void)arg; (void)t; (void)sz;
	return ++H.lsn;
}

static bool p_must_hold(void *arg, uint64_t lsn)
{
	(void)arg;
	return lsn > H.durable;
}
static uint64_t p_upto(void *arg)
{
	(void)arg;
	return H.durable;
}
static int p_failed(void *arg, const char **msg)
{
	(void)arg;
	if (H.failed)
		*msg = "the log failed";
	return H.failed;
}
static uint64_t p_deadline(void *arg)
{
	(void)arg;
	return H.now + 100;
}
static int p_late(void *arg, uint64_t deadline, const char **msg)
{
	(void)arg;
	if (H.sup || H.now < deadline)
		return 0;
	*msg = "no supervisor";
	return -ETIMEDOUT;
}
static void p_held(void *arg, uint64_t lsn)
{
	(void)arg; (void)lsn;
	H.kicks++;
}
static int p_no_room(void *arg, uint64_t lsn, const char **msg)
{
	(void)arg; (void)lsn;
	*msg = "no memory to hold it";
	return -ENOMEM;
}

static const struct tdbo_hold_policy pol = {
	.must_hold = p_must_hold, .upto = p_upto, .failed = p_failed,
	.deadline = p_deadline, .late = p_late, .held = p_held,
	.no_room = p_no_room,
};

/* --- the fake transport: the answers it was given -------------------------- */

struct got {
	uint32_t seq;
	uint16_t type;          /* NLMSG_ERROR, NLMSG_DONE, or a reply */
	int err;                /* NLMSG_ERROR's, NLMSG_DONE's */
	char msg[256];
	int64_t ival;           /* INCR's reply */
};

struct tp {
	unsigned char buf[TDB_PROTO_MSG_MAX] __attribute__((aligned(8)));
	bool room;              /* the channel has room */
	bool refuse_stats;      /* refuse STATS (a transport's refusal) */
	struct got got[64];
	unsigned int n;
	int held_now;           /* held_note's sum */
	uint64_t first_lsn;     /* held_note's oldest */
};

static void record(struct tp *t, const void *p, size_t len)
{
	const struct nlmsghdr *nh = p;
	struct got *g;

	assert_true(t->n < 64);
	assert_true(len >= NLMSG_HDRLEN && nh->nlmsg_len == len);
	g = &t->got[t->n++];
	memset(g, 0, sizeof(*g));
	g->seq = nh->nlmsg_seq;
	g->type = nh->nlmsg_type;
	{
		struct tdb_proto_extack ext = { NULL };
		struct tdb_proto_msg m;

		assert_int_equal(tdb_proto_parse(p, len, TDB_PROTO_ANSWER, &m,
						 &ext), 0);
		if (nh->nlmsg_type == NLMSG_ERROR ||
		    nh->nlmsg_type == NLMSG_DONE) {
			g->err = m.error;
			if (m.ext.msg)
				snprintf(g->msg, sizeof(g->msg), "%s",
					 m.ext.msg);
		} else {
			g->ival = m.ival;
		}
	}
}

static void *t_reserve(void *arg, unsigned int ch, size_t len,
		       bool room_check)
{
	struct tp *t = arg;

	assert_int_equal(ch, 0);
	if (len > sizeof(t->buf) || (room_check && !t->room))
		return NULL;
	return t->buf;
}
static void t_commit(void *arg, unsigned int ch, void *p, size_t len)
{
	(void)ch;
	record(arg, p, len);
}
static int t_emit(void *arg, unsigned int ch, const void *msg, size_t len)
{
	struct tp *t = arg;

	(void)ch;
	if (!t->room)
		return -EAGAIN;
	record(t, msg, len);
	return 0;
}
static bool t_room(void *arg, unsigned int ch, size_t len)
{
	(void)ch; (void)len;
	return ((struct tp *)arg)->room;
}
static int t_refuse(void *arg, unsigned int ch, const struct tdb_proto_msg *m,
		    struct tdb_proto_extack *ext)
{
	(void)ch;
	if (((struct tp *)arg)->refuse_stats && m->cmd == TDB_CMD_STATS) {
		ext->msg = "refused by the transport";
		return -EOPNOTSUPP;
	}
	return 0;
}
static void t_held_note(void *arg, int delta, const struct tdbo_held *first)
{
	struct tp *t = arg;

	t->held_now += delta;
	/* the oldest held, as serve says: none iff nothing is held */
	assert_true((first != NULL) == (t->held_now > 0));
	t->first_lsn = first ? first->lsn : 0;
}

static const struct tdbo_conn_ops ops = {
	.reserve = t_reserve, .commit = t_commit, .emit = t_emit,
	.room = t_room, .refuse = t_refuse, .held_note = t_held_note,
	.in_read_section = true,
};

struct world {
	struct tdbo_owner *o;
	struct tdbo_client *oc;
	struct tdbo_conn c;
	struct tp t;
	uint32_t seq;
};

static const struct tdbo_hooks hooks = {
	.log_reserve = log_reserve, .log_cancel = log_cancel,
	.log_begin = log_begin, .log_op = log_op, .log_commit = log_commit,
	.log_create = log_table, .log_drop = log_table,
};

/* Build a request and hand it to serve (as a private copy); its seq. */
static uint32_t send(struct world *w, struct tdb_proto_msg *m)
{
	static unsigned char buf[4096] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	long n;

	m->seq = ++w->seq;
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, m, &ext);
	assert_true(n > 0);
	assert_int_equal(tdbo_serve(&w->c, 0, buf, (size_t)n), 0);
	return m->seq;
}

static struct tdb_proto_msg req(uint8_t cmd, const char *table,
				const char *key)
{
	struct tdb_proto_msg m = { .cmd = cmd };

	if (table) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_TABLE);
		m.table = table;
		m.table_len = (uint32_t)strlen(table);
	}
	if (key) {
		m.attrs |= TDB_PROTO_BIT(TDB_A_KEY);
		m.key = key;
		m.key_len = (uint32_t)strlen(key);
	}
	return m;
}

static uint32_t put(struct world *w, const char *key, const char *val)
{
	struct tdb_proto_msg m = req(TDB_CMD_PUT, "t", key);

	m.attrs |= TDB_PROTO_BIT(TDB_A_VALUE);
	m.value = val;
	m.value_len = (uint32_t)strlen(val);
	return send(w, &m);
}

static int setup(void **state)
{
	struct tdbo_cred root = { 0, 0, 0, NULL };
	struct world *w = calloc(1, sizeof(*w));
	struct tdb_proto_msg m;
	int err;

	assert_non_null(w);
	memset(&H, 0, sizeof(H));
	w->o = tdbo_owner_new(&lim, &hooks, &err);
	assert_non_null(w->o);
	w->oc = tdbo_client_new(w->o, &root, false, NULL, NULL, &err);
	assert_non_null(w->oc);
	tdbo_conn_init(&w->c, &ops, &w->t, &pol, &H, w->oc,
		       tdbo_owner_counters(w->o));
	w->t.room = true;
	m = req(TDB_CMD_TABLE_CREATE, "t", NULL);
	send(w, &m);
	/* the create's ack waits for its record too */
	assert_int_equal(w->t.n, 0);
	assert_int_equal(tdbo_conn_nheld(&w->c), 1);
	H.durable = H.lsn;
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.n, 1);
	assert_int_equal(w->t.got[0].err, 0);
	w->t.n = 0;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	struct world *w = *state;

	tdbo_conn_fini(&w->c);
	assert_int_equal(w->t.held_now, 0);
	tdbo_client_free(w->oc);
	tdbo_owner_free(w->o);
	free(w);
	return 0;
}

/* --- tests ------------------------------------------------------------------ */

static void held_in_lsn_order(void **state)
{
	struct world *w = *state;
	struct tdb_proto_msg g;
	uint32_t s1, s2, s3, sg;
	uint64_t l1;

	s1 = put(w, "a", "1");
	l1 = H.lsn;
	s2 = put(w, "b", "2");
	s3 = put(w, "c", "3");
	assert_int_equal(w->t.n, 0);
	assert_int_equal(tdbo_conn_nheld(&w->c), 3);
	assert_int_equal(w->t.held_now, 3);
	assert_int_equal(w->t.first_lsn, l1);
	assert_true(H.kicks >= 3);
	/* a GET's reply is not held: it overtakes the acks */
	g = req(TDB_CMD_GET, "t", "a");
	sg = send(w, &g);
	assert_int_equal(w->t.n, 1);
	assert_int_equal(w->t.got[0].seq, sg);
	assert_int_equal(w->t.got[0].type, TDB_PROTO_FAMILY);
	assert_false(tdbo_conn_held_ready(&w->c));
	assert_int_equal(tdbo_conn_release(&w->c), 0);
	/* the first two become durable: their acks, in order */
	H.durable = l1 + 1;
	assert_true(tdbo_conn_held_ready(&w->c));
	assert_int_equal(tdbo_conn_release(&w->c), 2);
	assert_int_equal(w->t.n, 3);
	assert_int_equal(w->t.got[1].seq, s1);
	assert_int_equal(w->t.got[1].type, NLMSG_ERROR);
	assert_int_equal(w->t.got[1].err, 0);
	assert_int_equal(w->t.got[2].seq, s2);
	assert_int_equal(tdbo_conn_nheld(&w->c), 1);
	assert_int_equal(w->t.first_lsn, H.lsn);
	/* no room: it stays */
	H.durable = H.lsn;
	w->t.room = false;
	assert_int_equal(tdbo_conn_release(&w->c), 0);
	w->t.room = true;
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.got[3].seq, s3);
	assert_int_equal(w->t.held_now, 0);
	/* durable already: answered at once */
	s1 = put(w, "d", "4");
	assert_int_equal(tdbo_conn_nheld(&w->c), 1);
	H.durable = H.lsn;
	put(w, "e", "5");
	assert_int_equal(tdbo_conn_nheld(&w->c), 2);
}

static void incr_reply_held(void **state)
{
	struct world *w = *state;
	struct tdb_proto_msg m = req(TDB_CMD_INCR, "t", "n");
	uint32_t s;

	m.attrs |= TDB_PROTO_BIT(TDB_A_DELTA);
	m.delta = 5;
	s = send(w, &m);
	assert_int_equal(w->t.n, 0);
	assert_int_equal(tdbo_conn_nheld(&w->c), 1);
	H.durable = H.lsn;
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.n, 1);
	assert_int_equal(w->t.got[0].seq, s);
	assert_int_equal(w->t.got[0].type, TDB_PROTO_FAMILY);
	assert_int_equal(w->t.got[0].ival, 5);
}

static void bounds(void **state)
{
	struct world *w = *state;

	w->c.held_max = 2;
	put(w, "a", "1");
	assert_false(tdbo_conn_held_full(&w->c));
	put(w, "b", "2");
	assert_true(tdbo_conn_held_full(&w->c));
	H.durable = H.lsn;
	tdbo_conn_release(&w->c);
	assert_false(tdbo_conn_held_full(&w->c));
	/* bytes: of the held requests */
	w->c.held_max = 0;
	w->c.held_bytes_max = 100;
	put(w, "c", "3");
	assert_false(tdbo_conn_held_full(&w->c));
	put(w, "d", "a value long enough to pass the bound: 0123456789"
		    "0123456789");
	assert_true(tdbo_conn_held_full(&w->c));
}

static void failed_log(void **state)
{
	struct world *w = *state;
	uint32_t s1, s2;

	s1 = put(w, "a", "1");
	s2 = put(w, "b", "2");
	H.durable = H.lsn - 1;
	H.failed = -EIO;
	assert_int_equal(tdbo_conn_release(&w->c), 2);
	assert_int_equal(w->t.n, 2);
	assert_int_equal(w->t.got[0].seq, s1);
	assert_int_equal(w->t.got[0].err, 0);   /* durable before */
	assert_int_equal(w->t.got[1].seq, s2);
	assert_int_equal(w->t.got[1].err, -EIO);
	assert_string_equal(w->t.got[1].msg, "the log failed");
}

static void deadline(void **state)
{
	struct world *w = *state;
	uint32_t s1, s2;

	H.now = 1000;
	s1 = put(w, "a", "1");          /* late at 1100 */
	H.now = 1050;
	s2 = put(w, "b", "2");          /* late at 1150 */
	H.now = 1100;
	H.sup = true;                   /* a supervisor: it waits on */
	assert_int_equal(tdbo_conn_release(&w->c), 0);
	H.sup = false;
	assert_true(tdbo_conn_held_ready(&w->c));
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.got[0].seq, s1);
	assert_int_equal(w->t.got[0].err, -ETIMEDOUT);
	assert_string_equal(w->t.got[0].msg, "no supervisor");
	assert_false(tdbo_conn_held_ready(&w->c));
	H.now = 1150;
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.got[1].seq, s2);
	assert_int_equal(w->t.got[1].err, -ETIMEDOUT);
}

static void deferred_answer(void **state)
{
	struct world *w = *state;
	struct nlmsghdr req = { .nlmsg_len = 100, .nlmsg_seq = 77 };

	tdbo_conn_answer(&w->c, 0, &req, 0, NULL, H.lsn + 1);
	assert_int_equal(w->t.n, 0);
	assert_int_equal(tdbo_conn_nheld(&w->c), 1);
	H.durable = H.lsn + 1;
	assert_int_equal(tdbo_conn_release(&w->c), 1);
	assert_int_equal(w->t.got[0].seq, 77);
	assert_int_equal(w->t.got[0].err, 0);
	/* an error is never held */
	tdbo_conn_answer(&w->c, 0, &req, -ESTALE, NULL, H.lsn + 5);
	assert_int_equal(w->t.n, 2);
	assert_int_equal(w->t.got[1].err, -ESTALE);
}

static void dump_pacing(void **state)
{
	struct world *w = *state;
	struct tdbo_counters *k = tdbo_owner_counters(w->o);
	uint64_t rq, er;
	bool blocked = false;
	unsigned int i;
	uint32_t s;

	put(w, "a", "1");
	H.durable = H.lsn;
	tdbo_conn_release(&w->c);
	w->t.n = 0;
	w->t.room = false;              /* dumps cannot run */
	for (i = 0; i < TDBO_MAX_DUMPS; i++) {
		struct tdb_proto_msg m = req(TDB_CMD_SCAN, "t", NULL);

		send(w, &m);
	}
	assert_int_equal(tdbo_conn_ndumps(&w->c), TDBO_MAX_DUMPS);
	assert_int_equal(w->t.n, 0);
	rq = k->requests;
	er = k->errors;
	w->t.room = true;               /* the refusal's answer */
	{
		struct tdb_proto_msg m = req(TDB_CMD_SCAN, "t", NULL);

		s = send(w, &m);
	}
	assert_int_equal(w->t.n, 1);
	assert_int_equal(w->t.got[0].seq, s);
	assert_int_equal(w->t.got[0].err, -EBUSY);
	assert_int_equal(k->requests, rq + 1);
	assert_int_equal(k->errors, er + 1);
	/* they run: a record and NLMSG_DONE each */
	assert_true(tdbo_conn_dumps_run(&w->c, &blocked) > 0);
	assert_false(blocked);
	for (i = 0; i < 4 && tdbo_conn_ndumps(&w->c); i++)
		tdbo_conn_dumps_run(&w->c, &blocked);
	assert_int_equal(tdbo_conn_ndumps(&w->c), 0);
	assert_int_equal(w->t.n, 1 + 2 * TDBO_MAX_DUMPS);
	assert_int_equal(w->t.got[w->t.n - 1].type, NLMSG_DONE);
}

static void refused_once(void **state)
{
	struct world *w = *state;
	struct tdbo_counters *k = tdbo_owner_counters(w->o);
	uint64_t rq = k->requests, er = k->errors;
	uint64_t owner_rq = tdbo_owner_requests(w->o);
	struct tdb_proto_msg m = req(TDB_CMD_STATS, NULL, NULL);
	unsigned char buf[256] __attribute__((aligned(8)));
	struct tdb_proto_extack ext = { NULL };
	struct genlmsghdr *gh;
	long n;

	w->t.refuse_stats = true;
	send(w, &m);
	assert_int_equal(w->t.n, 1);
	assert_int_equal(w->t.got[0].err, -EOPNOTSUPP);
	assert_string_equal(w->t.got[0].msg, "refused by the transport");
	assert_int_equal(k->requests, rq + 1);
	assert_int_equal(k->errors, er + 1);
	/* a parse error: a bad genl version */
	m = req(TDB_CMD_GET, "t", "a");
	m.seq = 99;
	n = tdb_proto_build(buf, sizeof(buf), TDB_PROTO_REQUEST, &m, &ext);
	assert_true(n > 0);
	gh = (struct genlmsghdr *)(buf + NLMSG_HDRLEN);
	gh->version = 9;
	assert_int_equal(tdbo_serve(&w->c, 0, buf, (size_t)n), 0);
	assert_int_equal(w->t.n, 2);
	assert_int_equal(w->t.got[1].seq, 99);
	assert_true(w->t.got[1].err < 0);
	assert_int_equal(k->requests, rq + 2);
	assert_int_equal(k->errors, er + 2);
	/* serve counted them; the owner's own count did not move */
	assert_int_equal(tdbo_owner_requests(w->o) - owner_rq,
			 (uint64_t)2);
	/* too short to answer, unframed: not answered, not counted */
	assert_int_equal(tdbo_serve(&w->c, 0, buf, 8), -EPROTO);
	assert_int_equal(w->t.n, 2);
	assert_int_equal(k->requests, rq + 2);
}

static void fini_drops(void **state)
{
	struct world *w = *state;

	put(w, "a", "1");
	put(w, "b", "a value longer than the inline bytes of a held answer "
		    "so that it is kept apart, allocated");
	assert_int_equal(w->t.held_now, 2);
	/* teardown's tdbo_conn_fini: held_now back to 0, nothing sent */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(held_in_lsn_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(incr_reply_held, setup,
						teardown),
		cmocka_unit_test_setup_teardown(bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_log, setup, teardown),
		cmocka_unit_test_setup_teardown(deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(deferred_answer, setup,
						teardown),
		cmocka_unit_test_setup_teardown(dump_pacing, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_once, setup, teardown),
		cmocka_unit_test_setup_teardown(fini_drops, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
