/* SPDX-License-Identifier: MIT */
/*
 * internal.h - libtdbclient's private structures and the functions its
 * files share (nothing here is exported: libtdbclient.map keeps every
 * symbol but tdbc_* local).
 *
 * A connection (struct tdbc) talks to one owner through one of three
 * backends (enum tdbc_backend, chosen by tdbc_connect):
 *  - TDBC_BE_DAEMON: one socket to tdbd and, unless TDBC_NO_RINGS, a
 *    submission ring (we produce) and a completion ring (we consume);
 *  - TDBC_BE_KDEV: /dev/tdb (tdb/kdev.h): the same two rings, mapped from
 *    the device; TDB_IOC_ENTER makes the kernel answer, there is no
 *    socket and no wake-up (kdev.c);
 *  - TDBC_BE_GENL: tdb.ko over generic netlink (TDBC_NO_RINGS with the
 *    kernel): the socket path of the daemon backend with datagrams and
 *    the family's dynamic id in nlmsg_type (kdev.c, io.c).
 * Every request gets a fresh sequence number and exactly one
 * answer; io.c reads answers from both channels and routes each by its
 * sequence number to one of two places:
 *  - the blocking call in progress (struct tdbc_call; at most one, as a
 *    connection is used by one thread at a time and calls do not nest);
 *  - the snapshot scan streaming its one dump (c->stream, scan.c; at
 *    most one), whose parts are queued until tdbc_scan_next takes them;
 *  - the table of asynchronous requests (async.c), whose completions are
 *    stashed until tdbc_reap.
 * An answer to anything else means tdbd broke the protocol (-EPROTO).
 *
 * Death: once c->dead is set (-EPROTO, -ECONNRESET, -EPIPE) every call
 * returns it at once and nothing more is sent.
 */
#ifndef TDBC_INTERNAL_H
#define TDBC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tdb/client.h"
#include "proto.h"
#include "ring.h"

/* Everything declared from here on is hidden: tdbc__* would otherwise
 * match the version script's tdbc_* and be exported. */
#pragma GCC visibility push(hidden)

#define TDBC_ERRMSG_MAX   256
#define TDBC_FDQ_MAX      16    /* fds received and not yet claimed */
#define TDBC_SPIN_NS      30000 /* poll the completion ring this long
				 * before sleeping */
#define TDBC_NAP_MS       100   /* longest sleep between hang-up checks */

/* A doubly linked list of the handles made from a connection, so that
 * tdbc_close can free what the caller left open. */
struct tdbc_link {
	struct tdbc_link *prev, *next;
};

/* One mapped ring memfd: the header [0, span) and the data after it. */
struct tdbc_map {
	void *hdr, *data;
	size_t hdr_len, data_len;
};

/* The blocking call in progress: its request's seq and how its answer
 * is taken.  on_msg gets each family message (reply or dump part) and
 * returns 0 or a negative errno (the call then fails with it, and the
 * answer is still read to its end). */
struct tdbc_call;
typedef int tdbc_call_fn(struct tdbc *c, struct tdbc_call *call,
			 const struct tdb_proto_msg *m);
struct tdbc_call {
	uint32_t seq;
	uint8_t cmd;
	bool done;              /* the final answer came */
	int res;                /* 0 or a negative errno */
	tdbc_call_fn *on_msg;
	void *arg;
	unsigned int nfds;      /* fds the ack carries (ATTACH 3, WATCH 1) */
	unsigned int nfds_opt;  /* and up to this many more, if sent
				 * (ATTACH: tdbd's completion eventfd) */
	unsigned int nfds_got;  /* nfds plus the optional ones that came */
	int fds[4];
	/* the ack's NLMSGERR_ATTR_COOKIE (WATCH: the feed's sequence
	 * number where the watch starts); cookie_len 0 = none */
	uint32_t cookie_len;
	unsigned char cookie[TDB_PROTO_COOKIE_MAX];
};

/* A finished asynchronous request, waiting for tdbc_reap. */
struct tdbc_done {
	uint64_t user;
	int res;
	void *val;              /* GET: malloc()ed value (NULL if empty) */
	size_t vlen;
	char *msg;              /* the owner's text of a failure, or NULL */
	uint64_t version;       /* GET, INCR: the record's (0: none) */
	int64_t num;            /* INCR: the new value */
	uint64_t deadline;      /* GET: the record's (0: none) */
};

/* An asynchronous request in flight, by seq (open addressing).  A scan
 * batch (cmd SCAN) names its scan: its parts go there, and its end
 * becomes the completion; NULL once the scan was closed. */
struct tdbc_slot {
	uint32_t seq;
	uint8_t used;
	uint8_t cmd;
	uint64_t user;
	struct tdbc_scan *scan;
};

enum tdbc_backend {
	TDBC_BE_DAEMON = 0,     /* tdbd: Unix socket (+ rings) */
	TDBC_BE_KDEV,           /* tdb.ko: /dev/tdb rings */
	TDBC_BE_GENL,           /* tdb.ko: generic netlink socket */
};

#define TDBC_TOUCH_INFLIGHT 8

struct tdbc {
	int fd;                 /* the socket, or /dev/tdb (TDBC_BE_KDEV) */
	int evfd;               /* the submission ring's wake-up, or -1 */
	/* tdbc_fd (io.c): the descriptor handed out (-1: never asked),
	 * and the eventfd in it that says "look again": tdbd writes it
	 * (its completion ring's and watched feeds' wake-up, ATTACH's
	 * fourth fd) and so do we, when something waits that no wake-up
	 * will announce (kept completions, a feed read behind; /dev/tdb:
	 * ours alone).  -1 when there is none. */
	int pollfd;
	int selfd;
	bool in_reap;           /* completions are being handed out */
	bool rings;
	enum tdbc_backend backend;
	uint16_t family;        /* nlmsg_type of our family's messages:
				 * TDB_PROTO_FAMILY, or the genl id */
	const char *peer;       /* "tdbd" or "tdb.ko", for messages */
	int dead;               /* 0, or the errno every call now returns */
	uint32_t seq;           /* the last sequence number used */
	char errmsg[TDBC_ERRMSG_MAX];

	struct tdb_ring sq, cq;
	struct tdbc_map sq_map, cq_map;

	/* socket receive side: a stream of messages, framed by nlmsg_len */
	unsigned char *rbuf;
	size_t rlen, rcap;
	int fdq[TDBC_FDQ_MAX];  /* SCM_RIGHTS fds in arrival order */
	unsigned int nfdq;
	unsigned int sock_pending;   /* requests sent over the socket and
				      * not fully answered yet */
	/* socket send side: a scratch buffer to build requests in */
	unsigned char *sbuf;
	size_t scap;

	struct tdbc_call *call; /* the blocking call waiting, or NULL */
	struct tdbc_scan *stream;       /* the snapshot scan whose dump is
					 * still coming (scan.c), or NULL */

	/* asynchronous requests (async.c) */
	struct tdbc_slot *slots;
	uint32_t slot_cap, slot_used;   /* cap: 0 or a power of two */
	struct tdbc_done *done;         /* a FIFO of completions */
	uint32_t done_cap, done_head, done_len;
	struct tdbc_done *reaped;       /* handed out by the last reap */
	uint32_t reaped_len, reaped_cap;

	struct tdbc_link handles;       /* tables, txns, scans, watches */

	struct tdbc_reader *reader;     /* read sections (map.c), or NULL:
					 * no SUBMIT ring, no maps */
	/* TOUCH hints sent and not answered yet (map.c): their sequence
	 * numbers; their answers are dropped (tdbc__touch_answer) */
	uint32_t touch_seq[TDBC_TOUCH_INFLIGHT];
	unsigned int touch_inflight;
};

/* The handle kinds share a header so tdbc_close can free any of them. */
enum tdbc_kind { TDBC_K_TABLE, TDBC_K_TXN, TDBC_K_SCAN, TDBC_K_WATCH };
struct tdbc_handle {
	struct tdbc_link link;
	enum tdbc_kind kind;
	struct tdbc *c;
};

struct tdbc_table {
	struct tdbc_handle h;
	char name[TDB_NAME_MAX + 1];
	struct tdbc_tmap *map;  /* the table's read-only map (map.c) */
	uint32_t flags;         /* TDBC_TABLE_* when it was opened */
};

struct tdbc_txn {
	struct tdbc_handle h;
	uint64_t id;
};

/* --- conn.c ------------------------------------------------------------- */
void tdbc__link(struct tdbc *c, struct tdbc_handle *h, enum tdbc_kind k);
void tdbc__unlink(struct tdbc_handle *h);
/* Set c->errmsg (printf-style); returns err. */
int tdbc__fail(struct tdbc *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The connection is dead with err (the first death wins); returns it. */
int tdbc__die(struct tdbc *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Map a ring memfd (span from fstatfs, data_size = st_size - span). */
int tdbc__map_ring(struct tdbc *c, int fd, bool data_writable,
		   bool hdr_writable, struct tdbc_map *map);
void tdbc__unmap_ring(struct tdbc_map *map);
/* Checks of caller arguments, done before anything is sent. */
int tdbc__check_key(struct tdbc *c, const void *key, size_t klen);
int tdbc__check_value(struct tdbc *c, const void *val, size_t vlen);
int tdbc__check_prefix(struct tdbc *c, const void *prefix, size_t plen);
/* A range's flags and bounds (each 1..TDB_KEY_MAX bytes, from not after
 * to), as the owner checks them: 0, or -EINVAL/-E2BIG with errmsg. */
int tdbc__check_range(struct tdbc *c, const struct tdbc_range *r);
/* Keys in an ordered table's order (memcmp, shorter first): <0, 0, >0. */
int tdbc__key_cmp(const void *a, size_t alen, const void *b, size_t blen);

/* --- io.c --------------------------------------------------------------- */
/* Send one request (the caller sets m->seq) over the submission ring, or
 * over the socket when there are no rings or it does not fit the ring's
 * max_msg (or when over_socket).  publish: make it visible at once. */
int tdbc__send(struct tdbc *c, struct tdb_proto_msg *m, bool over_socket,
	       bool publish);
/* Like tdbc__send, but never waits for ring space: -EAGAIN if full. */
int tdbc__send_nowait(struct tdbc *c, struct tdb_proto_msg *m);
/* Publish what was committed to the submission ring. */
int tdbc__publish(struct tdbc *c);
/* Send m and wait for its whole answer; call->on_msg takes the family
 * messages.  Returns call->res (errmsg set on failure). */
int tdbc__call(struct tdbc *c, struct tdb_proto_msg *m,
	       struct tdbc_call *call, bool over_socket);
/* A fresh sequence number for a request (never 0). */
static inline uint32_t tdbc__seq(struct tdbc *c)
{
	if (++c->seq == 0)
		c->seq = 1;
	return c->seq;
}
/* What an answer to a request of command cmd is: a dump part, the end of
 * the answer (NLMSG_ERROR or NLMSG_DONE: m->error), or a reply (the end,
 * with data).  A negative errno (the connection is dead) if it cannot be
 * an answer to cmd. */
enum { TDBC_ANS_PART, TDBC_ANS_END, TDBC_ANS_REPLY };
int tdbc__classify(struct tdbc *c, const struct tdb_proto_msg *m,
		   uint8_t cmd);
/* Keep the owner's text of a failed answer in c->errmsg; returns
 * m->error. */
int tdbc__owner_fail(struct tdbc *c, const struct tdb_proto_msg *m,
		     uint8_t cmd);
/* Take what has arrived on both channels without waiting. */
int tdbc__pump(struct tdbc *c);
/* Wait until cond(c, arg) or timeout_ms (< 0: for ever) ran out
 * (-ETIMEDOUT); -ECONNRESET etc. if the daemon goes away meanwhile. */
typedef bool tdbc_cond_fn(struct tdbc *c, void *arg);
int tdbc__wait(struct tdbc *c, tdbc_cond_fn *cond, void *arg,
	       int timeout_ms);
/* Is the daemon still there?  0, or the connection's death. */
int tdbc__check_hangup(struct tdbc *c);
/* tdbc_fd's contract (io.c): after a reap or watch_next that found
 * nothing, clear selfd, ask tdbd to wake it (TDB_RING_F_CONS_WAITING on
 * the completion ring) and look once more at everything that may wait:
 * if something does, write selfd ourselves.  No-op before tdbc_fd. */
int tdbc__arm(struct tdbc *c);
/* Make tdbc_fd readable now (something waits that no wake-up brings). */
void tdbc__self_signal(struct tdbc *c);
/* Every entry point starts here: -errno of a dead connection, and the
 * values handed out by the last tdbc_reap are released. */
int tdbc__enter(struct tdbc *c);
uint64_t tdbc__now_ns(void);

/* --- kdev.c: tdb.ko (/dev/tdb rings, generic netlink) -------------------- */
/* The system calls kdev.c makes on /dev/tdb, through pointers so that a
 * white-box test can stand in for the device (tests/client/
 * test_client_kdev.c); they are open(2), ioctl(2), mmap(2) otherwise.
 * dev_path is TDB_DEV_PATH. */
struct tdbc_kdev_sys {
	const char *dev_path;
	int (*open)(const char *path, int flags);
	int (*ioctl)(int fd, unsigned long req, void *arg);
	void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off);
};
extern struct tdbc_kdev_sys tdbc__kdev_sys;
/* Does the device exist (stat succeeds)? */
bool tdbc__kdev_exists(void);
/* Open the device and map its rings (c->fd, c->sq, c->cq, ...). */
int tdbc__kdev_connect(struct tdbc *c);
/* Open a generic netlink socket and resolve the family (c->family). */
int tdbc__genl_connect(struct tdbc *c);
/* TDB_IOC_ENTER: the kernel consumes the submission ring and answers
 * into the completion ring.  0, or the connection's death. */
int tdbc__kdev_enter(struct tdbc *c);
/* Map the change feed at a WATCH ack's cookie (struct
 * tdb_dev_watch_cookie) read-only into map. */
int tdbc__kdev_map_feed(struct tdbc *c, const void *cookie,
			uint32_t cookie_len, struct tdbc_map *map,
			uint32_t *start_seq);
/* Wait for cond on /dev/tdb: drain, ENTER, repeat, poll when nothing
 * moves.  The same contract as tdbc__wait. */
int tdbc__kdev_wait(struct tdbc *c, tdbc_cond_fn *cond, void *arg,
		    int timeout_ms);
/* Make room for len bytes in the submission ring (ENTER and drain). */
int tdbc__kdev_wait_sq_space(struct tdbc *c, size_t len);
/* Sleep on the device until a completion or a watched feed's write
 * since the last ENTER, or ms (< 0: for ever).  0 or < 0. */
int tdbc__kdev_poll(struct tdbc *c, int ms);
/* Drain the completion ring to empty: messages routed, or < 0. */
int tdbc__kdev_drain(struct tdbc *c);

/* --- async.c ------------------------------------------------------------ */
/* Route an answer to an asynchronous request: 1 if it was one, 0 if its
 * seq is not in flight, or a negative errno (connection dead). */
int tdbc__async_deliver(struct tdbc *c, const struct tdb_proto_msg *m);
void tdbc__async_free(struct tdbc *c);
void tdbc__release_reaped(struct tdbc *c);

/* --- map.c: zero-copy reads in read-only maps of tables ------------------ */
/* What tdbc__map_get returns to say "read through the ring" (no errno). */
#define TDBC__MAP_RING (-10000L)
/* The reader state of a connection, after its rings (flags: connect's). */
int tdbc__reader_init(struct tdbc *c, unsigned int flags);
void tdbc__reader_free(struct tdbc *c);
/* A table handle's map: asked for at open (TABLE_MAP; a refusal leaves
 * the table on the rings), freed at close. */
int tdbc__map_open(struct tdbc_table *t);
void tdbc__map_close(struct tdbc_table *t);
/* Copy a value out of the map (called with the read section open, maybe
 * more than once: only the last call's result counts).  Returns the
 * length or a negative errno. */
typedef long tdbc_map_copy_fn(void *arg, const void *val, size_t vlen);
/* A get (no transaction) through the map: copy_fn's result, -ENOENT, or
 * TDBC__MAP_RING.  *version and *deadline (each if not NULL) get the
 * record's version and deadline (0: none), read in place with the
 * value. */
long tdbc__map_get(struct tdbc_table *t, const void *key, size_t klen,
		   tdbc_map_copy_fn *copy_fn, void *arg, uint64_t *version,
		   uint64_t *deadline);
/* A GET of tdbc_submit through the map: 1 completed (its completion is
 * queued), 0 take the ring, < 0 an error of the submit. */
int tdbc__map_submit_get(struct tdbc *c, const struct tdbc_req *r);
/* An answer to a TOUCH hint map.c sent: 1 (it is dropped), else 0. */
int tdbc__touch_answer(struct tdbc *c, const struct tdb_proto_msg *m);

/* --- ops.c, async.c: for map.c ------------------------------------------- */
/* tdbc_get_alloc through the ring, whatever the map (checks done);
 * *version and *deadline (each if not NULL) the record's. */
long tdbc__get_ring(struct tdbc_table *t, const void *key, size_t klen,
		    void **val, uint64_t *version, uint64_t *deadline);
/* What PUT, DEL and INCR requests carry besides TABLE, KEY and TXN
 * (ops.c; tdbc_submit builds the same): the value and the conditions
 * (flags TDBC_IF_*, checked: -EINVAL with errmsg), a PUT's TTL or
 * deadline (flags TDBC_TTL or TDBC_DEADLINE: expiry is it), INCR's
 * delta. */
int tdbc__put_msg(struct tdbc *c, struct tdb_proto_msg *m, const void *val,
		  size_t vlen, unsigned int flags, uint64_t version,
		  uint64_t expiry);
/* A TTL given by the caller (what: the words naming it in the message):
 * 0, or -EINVAL (0) / -ERANGE (over TDB_TTL_MAX) with errmsg. */
int tdbc__check_ttl(struct tdbc *c, const char *what, uint64_t ttl);
int tdbc__del_msg(struct tdbc *c, struct tdb_proto_msg *m,
		  unsigned int flags, uint64_t version);
int tdbc__incr_msg(struct tdb_proto_msg *m, int64_t delta);
/* Prefetch the lookups of a batch's mapped GETs (map.c; a hint). */
void tdbc__map_prefetch(struct tdbc *c, const struct tdbc_req *reqs,
			unsigned int n);
/* Queue a completion made here (val: malloc()ed, owned by the queue). */
int tdbc__async_complete(struct tdbc *c, uint64_t user, int res, void *val,
			 size_t vlen, uint64_t version, uint64_t deadline);

/* --- scan.c, watch.c: freeing from tdbc_close --------------------------- */
void tdbc__scan_free(struct tdbc_scan *s);
/* Route an answer to the snapshot scan streaming on c: 1 if it was one
 * of its messages, 0 if not, or a negative errno (connection dead). */
int tdbc__scan_route(struct tdbc *c, const struct tdb_proto_msg *m);
void tdbc__watch_free(struct tdbc_watch *w, bool unwatch);
/* Has any watch of c something to read (or a lapped reader)? */
bool tdbc__watches_pending(struct tdbc *c);
/* Asynchronous scans (scan.c): a batch's part and its end, routed by
 * async.c.  part: 0 or a negative errno (the batch then fails);
 * end: the completion's res (records of the batch, 0 at the scan's
 * end, or the batch's error). */
int tdbc__scan_async_part(struct tdbc_scan *s, const struct tdb_proto_msg *m);
int tdbc__scan_async_end(struct tdbc_scan *s, const struct tdb_proto_msg *m);
/* async.c: register a scan batch's request (sent by the caller) in the
 * table of requests in flight; forget a closed scan's batch. */
int tdbc__async_add_scan(struct tdbc *c, uint32_t seq, uint64_t user,
			 struct tdbc_scan *s);
void tdbc__async_forget_scan(struct tdbc *c, struct tdbc_scan *s);

#pragma GCC visibility pop

#endif
