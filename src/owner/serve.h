/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve.h - a request's way from a transport to its answer, once for
 * every transport (tdbd's rings and socket, tdb.ko's /dev/tdb; generic
 * netlink's parked acks through the same held queue).  Freestanding C
 * on platform.h, like the rest of src/owner.
 *
 * serve.c owns, per connection (struct tdbo_conn, embedded in the
 * transport's own connection):
 *  - refusing and counting what never reaches the owner: a request
 *    tdb_proto_parse() rejects, one the home refuses now (tdb.ko
 *    recovering or waiting for its supervisor) or the transport refuses
 *    (tdbd: ATTACH, WATCH, TABLE_MAP over the ring), a 9th dump: each is
 *    counted ONCE (struct tdbo_counters requests, errors);
 *  - running the rest (tdbo_exec; a batch of GETs with tdbo_get_many)
 *    and deciding the answer owed (tdbo_answer_owed);
 *  - the connection's dumps, at most TDBO_MAX_DUMPS (owner.h), run as
 *    the channel has room, each ended with NLMSG_DONE;
 *  - answers held until their change's log record is durable: a FIFO of
 *    built answers (private copies) with their LSN, bounded by the
 *    transport (held_max answers, held_bytes_max bytes of the held
 *    requests: what their log records carry), released in order by
 *    tdbo_conn_release() once the home's LSN passes them, turned into
 *    an error when the home's log failed or, past its deadline, the home
 *    says it is late; freed (not sent) by tdbo_conn_fini().
 * The home owns the policy (struct tdbo_hold_policy: which LSN answers
 * may go out up to, whether the log failed, deadlines); the transport
 * owns the channel (struct tdbo_conn_ops: reserve/commit a message in
 * it, emit private bytes into it, room, the descriptors or cookie of a
 * WATCH or TABLE_MAP ack, the held count moving).
 *
 * Order.  Answers to one connection keep its requests' order, except
 * that a held answer may be overtaken by later answers that are not
 * held (a GET's reply, an ack of a request that changed nothing) and by
 * a dump's parts: clients match answers by seq (include/tdb/proto.h).
 * Held answers keep their own order (LSN order: a connection's changes
 * are logged in the order it sent them).
 *
 * Threads.  A connection is used by one thread at a time (the
 * transport serialises every call on it, as for struct tdbo_client).
 * The policy's hooks may be called from that thread at any call here.
 */
#ifndef TDB_OWNER_SERVE_H
#define TDB_OWNER_SERVE_H

#include "owner.h"

struct tdbo_conn;
struct tdbo_held;

/* A held answer's bytes kept inside its queue entry up to this size (an
 * ack is 36 bytes; an INCR's reply fits): no allocation per ack. */
#define TDBO_HELD_INLINE 64u

/*
 * The home's held-answer policy (one per home; arg is its own).
 *  must_hold: must the answer to a change logged at lsn wait?
 *    true: hold it (tdbd: its record not yet written, or not durable
 *    under sync always; tdb.ko: not durable under sync always).
 *  upto: held answers with an LSN <= this go out.
 *  failed: 0, or the errno every held answer above upto gets now (the
 *    log failed: it never passes them), *msg its text.
 *  deadline: for an answer held now, when it is late (the home's clock;
 *    0: never, and late is not called).
 *  late: the first held answer, past deadline, that upto does not pass:
 *    0 it waits on, or the errno it gets now (tdb.ko: -ETIMEDOUT with no
 *    supervisor attached), *msg its text.  May count it.
 *  held: an answer for lsn was just held (tdbd: kick the WAL's sync
 *    under sync always).  May be NULL.
 *  no_room: there is no memory to hold one: 0 after waiting here until
 *    lsn passes (it goes out now), or an errno for its answer instead
 *    (*msg).
 */
struct tdbo_hold_policy {
	bool (*must_hold)(void *arg, uint64_t lsn);
	uint64_t (*upto)(void *arg);
	int (*failed)(void *arg, const char **msg);
	uint64_t (*deadline)(void *arg);
	int (*late)(void *arg, uint64_t deadline, const char **msg);
	void (*held)(void *arg, uint64_t lsn);
	int (*no_room)(void *arg, uint64_t lsn, const char **msg);
};

/*
 * The transport's side of a connection (arg: the transport's
 * connection).  A channel `ch` is the transport's number for where a
 * request came in and its answer goes (tdbd: socket or ring; 0 for a
 * transport with one).
 *  reserve/commit: a sink into the channel, as struct tdbo_sink's
 *    (room_check: only where the channel has room now, else NULL; else
 *    room for any message of at most TDB_PROTO_MSG_MAX bytes, which the
 *    transport makes sure of before it hands serve a request).  The
 *    memory must be private (never memory a client can write) and
 *    reserve() must neither sleep nor wait (with in_read_section, a
 *    GET's reply is built in it inside a read-side section).  serve
 *    commits or drops (abort, may
 *    be NULL) each reservation before it reserves again; a reply to a
 *    change stays reserved, uncommitted, until tdbo_exec() returned (it
 *    may be held: copied, then dropped).
 *  emit: put len bytes (private, serve's: a held answer, an error of a
 *    GET batch) into the channel, whatever its room, 0 (tdbd's stash;
 *    genl may unicast an skb); or -EAGAIN from a transport that cannot
 *    now (tdb.ko's full ring): a held answer stays queued, and serve
 *    tries again at the next release.
 *  room: is there room for a message of len bytes on ch now?
 *  grant: the ack of a WATCH (res->feed) or TABLE_MAP (res->map, a
 *    reference grant puts): fill ack's cookie and return 0 (serve
 *    answers the ack), or answer it itself with what it passes (tdbd's
 *    descriptors) and return 1, or return a negative errno with
 *    *msg (serve answers it).  NULL: no cookie (the map is put).
 *  refuse: before the owner: 0 run it; a negative errno (ext->msg set)
 *    to answer, counted as refused; 1 the transport answered it itself
 *    (tdbd's ATTACH; counted as a request).  NULL: nothing is refused.
 *  defer: a big commit (res->txn) the transport runs elsewhere (tdbd's
 *    committer): true, and it calls tdbo_conn_answer() when it is done;
 *    false or NULL: serve commits it here.
 *  too_long: a reserve() failed: was it because the message is longer
 *    than the channel ever takes (tdb.ko's max_msg)?  Then serve
 *    answers -EMSGSIZE (a dump ends with it), *msg.  May be NULL.
 *  in_read_section: reserve() hands out private memory that holds
 *    nothing open (struct tdbo_sink's): GETs may be served together.
 *  held_note: the number held changed by delta; first is the oldest
 *    held now (NULL: none), for a transport that looks at it without
 *    the connection's lock (tdb.ko's poll) or arms a timer for its
 *    deadline; tdbd counts a worker's held answers so the log's
 *    callback wakes it.  May be NULL.
 */
struct tdbo_conn_ops {
	void *(*reserve)(void *arg, unsigned int ch, size_t len,
			 bool room_check);
	void (*commit)(void *arg, unsigned int ch, void *p, size_t len);
	void (*abort)(void *arg, unsigned int ch);
	int (*emit)(void *arg, unsigned int ch, const void *msg, size_t len);
	bool (*room)(void *arg, unsigned int ch, size_t len);
	int (*grant)(void *arg, unsigned int ch, const struct nlmsghdr *req,
		     struct tdbo_out *res, struct tdb_proto_extack *ack,
		     const char **msg);
	int (*refuse)(void *arg, unsigned int ch,
		      const struct tdb_proto_msg *m,
		      struct tdb_proto_extack *ext);
	bool (*defer)(void *arg, unsigned int ch, struct tdbo_txn *x,
		      const struct nlmsghdr *req);
	bool (*too_long)(void *arg, const char **msg);
	void (*held_note)(void *arg, int delta, const struct tdbo_held *first);
	bool in_read_section;
};

/* A dump in progress: the owner's, answered on the channel its request
 * came in on. */
struct tdbo_conn_dump {
	bool used;
	bool over;              /* the owner said so: NLMSG_DONE waits for
				 * room */
	unsigned int ch;
	int err;
	struct nlmsghdr req;    /* the request's header: seq, pid */
	struct tdbo_dump *d;
	char msg[TDB_PROTO_EXTACK_MAX + 1];     /* DONE's text (a copy: the
						 * owner's lives in d) */
};

/* An answer held until durable (serve.c's FIFO). */
struct tdbo_held {
	uint64_t lsn;
	uint64_t deadline;
	struct nlmsghdr req;    /* for an error instead */
	unsigned int ch;
	uint32_t len;           /* bytes of the answer's message */
	uint32_t cost;          /* the request's bytes (held_bytes) */
	unsigned char *big;     /* the message if > TDBO_HELD_INLINE */
	unsigned char inl[TDBO_HELD_INLINE] __attribute__((aligned(8)));
};

struct tdbo_conn {
	const struct tdbo_conn_ops *ops;
	void *arg;
	const struct tdbo_hold_policy *pol;     /* NULL: nothing is held */
	void *pol_arg;
	struct tdbo_client *oc;
	struct tdbo_counters *ctr;
	/* the ring core checked every request's frame: a request too short
	 * to parse is answered with its header (tdb.ko); else it is not
	 * answered and tdbo_serve() returns -EPROTO (tdbd drops the
	 * client) */
	bool framed;
	struct tdb_proto_msg m;         /* the request being served (too
					 * big for a kernel stack) */

	struct tdbo_conn_dump dumps[TDBO_MAX_DUMPS];
	unsigned int ndumps;

	/* held answers, oldest first: a ring of held_cap entries */
	struct tdbo_held *held;
	unsigned int held_head, nheld, held_cap;
	uint64_t held_bytes;            /* their requests' bytes */
	/* the bounds (the transport's, may change any time; 0: none) */
	unsigned int held_max;
	uint64_t held_bytes_max;
};

/* Set up c (zeroed by the caller, or not: every field is set). */
void tdbo_conn_init(struct tdbo_conn *c, const struct tdbo_conn_ops *ops,
		    void *arg, const struct tdbo_hold_policy *pol,
		    void *pol_arg, struct tdbo_client *oc,
		    struct tdbo_counters *ctr);
/* The connection ends: its dumps and held answers are freed (unsent;
 * held_note says so).  The owner client is the caller's. */
void tdbo_conn_fini(struct tdbo_conn *c);

/*
 * One request (msg: a private copy of len bytes, valid during the call)
 * that came in on ch: refused, run, answered or held, or a dump
 * started.  0; -EPROTO if it is too short to answer (not framed: the
 * transport drops the client).
 */
int tdbo_serve(struct tdbo_conn *c, unsigned int ch, const void *msg,
	       size_t len);
/* A request the transport parsed itself (generic netlink: with its
 * family's id) and that failed there: counted and answered (err, ext)
 * as tdbo_serve() would. */
void tdbo_conn_refuse(struct tdbo_conn *c, unsigned int ch,
		      const struct nlmsghdr *req, int err,
		      const struct tdb_proto_extack *ext);
/* The same for a request already parsed (m, a private copy). */
void tdbo_serve_msg(struct tdbo_conn *c, unsigned int ch,
		    const struct tdb_proto_msg *m);

/*
 * A dump whose parts the transport paces itself (generic netlink's dump
 * machinery sends them as the reader reads, through tdbo_dump_run):
 * refused and counted here as any request (the transport's refuse hook;
 * ndumps, the transport's count of this connection's dumps, at
 * TDBO_MAX_DUMPS), else run, *out the dump.  0: *out is the
 * transport's (tdbo_dump_free); 1: refused and answered here; a
 * negative errno of the owner's (ext set), for the transport to end
 * the dump with.
 */
int tdbo_serve_dump_start(struct tdbo_conn *c, unsigned int ch,
			  const struct tdb_proto_msg *m, unsigned int ndumps,
			  struct tdbo_dump **out,
			  struct tdb_proto_extack *ext);

/*
 * A run of n parsed GETs (without TDB_A_TXN) taken together: served
 * by tdbo_get_many() with room-checked reservations on ch, errors
 * emitted.  Returns how many were answered (< n: no room for the next
 * reply; the transport runs the rest later, one by one).  n == 1 runs
 * as tdbo_serve_msg().
 */
unsigned int tdbo_serve_gets(struct tdbo_conn *c, unsigned int ch,
			     const struct tdb_proto_msg *m, unsigned int n);

/*
 * The answer to req that the transport ran elsewhere (a deferred
 * commit): err, ext (err 0: an ack), the LSN of its record (0: none).
 * Held like any change's answer.
 */
void tdbo_conn_answer(struct tdbo_conn *c, unsigned int ch,
		      const struct nlmsghdr *req, int err,
		      const struct tdb_proto_extack *ext, uint64_t lsn);

/*
 * Go on with the connection's dumps: each writes parts while the
 * channel has room (the owner's budget of records per call), and ends
 * with NLMSG_DONE once there is room for it.  Returns the runs done;
 * *blocked set if one waits for room.
 */
unsigned int tdbo_conn_dumps_run(struct tdbo_conn *c, bool *blocked);
/* Dumps in progress. */
static inline unsigned int tdbo_conn_ndumps(const struct tdbo_conn *c)
{
	return c->ndumps;
}

/*
 * Send the held answers that may go out now, in order: those the home's
 * upto passes (where the channel has room: a transport whose emit says
 * -EAGAIN stops the release), then errors for those the failed or late
 * policy says.  Returns how many left the queue.  The transport calls
 * it when the home's LSN may have moved (tdbd: each round; tdb.ko: each
 * ENTER; genl: the home's durable notice).
 */
unsigned int tdbo_conn_release(struct tdbo_conn *c);
/* Answers held now. */
static inline unsigned int tdbo_conn_nheld(const struct tdbo_conn *c)
{
	return c->nheld;
}
/* Could the first held answer go out now (tdb.ko's poll)? */
bool tdbo_conn_held_ready(const struct tdbo_conn *c);
/* At the bounds (held_max answers or held_bytes_max bytes): read no
 * more of this connection's requests for now. */
bool tdbo_conn_held_full(const struct tdbo_conn *c);

#endif
