/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * owner.h - tdb.ko's owner: the tables, and running one protocol request
 * for one client.  The transports (dev.c: /dev/tdb rings; genl.c:
 * generic netlink) copy a request into private memory, validate it with
 * tdb_proto_parse*() (src/proto, the same validator tdbd uses) and hand
 * the parsed message here; the answers come back through a sink, so the
 * owner never knows which transport it serves.
 *
 * Every request gets exactly one answer (include/tdb/proto.h):
 *  - tdbk_exec() returns a negative errno (with ext->msg, ext->offset):
 *    the transport answers NLMSG_ERROR with it;
 *  - it returns 0 for an "ack" command: the transport acks (with
 *    ext->cookie when cookie_len > 0: WATCH);
 *  - it returns 0 for a "reply" command after writing the reply into
 *    the sink (the sink is given room for any reply of at most
 *    TDB_PROTO_MSG_MAX bytes: the transport makes sure of that before
 *    calling);
 *  - for a dump command (SCAN, TABLE_LIST) it returns 0 and a dump in
 *    *dump; the transport calls tdbk_dump_run() until it is finished,
 *    ends the answer with NLMSG_DONE carrying the run's result, and frees
 *    it with tdbk_dump_free().
 *
 * Locking: the owner takes its own locks; every function here may sleep
 * and must be called in process context, never under a spinlock or
 * rcu_read_lock().  A client (struct tdbk_client) is used by one thread
 * at a time: the transport serialises calls on one client.
 */
#ifndef TDBK_OWNER_H
#define TDBK_OWNER_H

#include <linux/types.h>
#include <linux/atomic.h>
#include <linux/cred.h>

#include "proto.h"      /* src/proto: struct tdb_proto_msg */

struct tdbk_owner;
struct tdbk_client;
struct tdbk_dump;
struct tdbk_feed;

/*
 * Where answers go.  reserve() returns room for one message of at most
 * len bytes, or NULL when there is none now (a ring that is full, an skb
 * that is full); commit() says the message at p is complete, nlmsg_len
 * bytes (<= the len reserved), with nlmsg_type TDB_PROTO_FAMILY (the
 * genl transport rewrites it to the family id).
 */
struct tdbk_sink {
	void *(*reserve)(struct tdbk_sink *s, size_t len);
	void (*commit)(struct tdbk_sink *s, void *p, size_t len);
};

/* Module parameters the owner honours (kmod/main.c owns the values). */
struct tdbk_limits {
	unsigned int default_mode;      /* table mode when CREATE has none */
	unsigned int feed_size;         /* a change feed's data bytes */
};

/* max_tables now: tables at once (main.c; writable at run time, never
 * 0). */
unsigned int tdbk_max_tables(void);

struct tdbk_owner *tdbk_owner_new(const struct tdbk_limits *lim, int *err);
/* Frees every table; no client may be left. */
void tdbk_owner_free(struct tdbk_owner *o);

/*
 * Called with every change notification (PUT, DEL, TABLE_DROP, built
 * with TDB_A_TABLE) after the change is visible; genl.c multicasts it.
 * Set once at module load, before any client exists.
 */
typedef void tdbk_change_fn(void *arg, const void *msg, size_t len);
void tdbk_owner_on_change(struct tdbk_owner *o, tdbk_change_fn *fn, void *arg);

/*
 * A client.  cred: whose permissions every request is checked against
 * (the opener's f_cred for /dev/tdb, the sender's for genl; the owner
 * takes a reference).  may_watch: feeds can be handed to it (/dev/tdb
 * yes, genl no: WATCH there answers -EOPNOTSUPP and points at the
 * multicast group).  wake(arg) is called when a feed the client watches
 * is written (dev.c wakes poll()); may be NULL.  Called from the writer's
 * context with no owner lock held that wake() could need.
 */
struct tdbk_client *tdbk_client_new(struct tdbk_owner *o,
				    const struct cred *cred, bool may_watch,
				    void (*wake)(void *arg), void *arg,
				    int *err);
/*
 * /dev/tdb's ATTACH: count the client against max_clients_per_uid and
 * max_clients (by its credentials' fsuid) before it gets rings.  0, or
 * a negative errno (-EDQUOT, -ENOSPC, -ENOMEM) with *msg naming the
 * module parameter.  The charge is given back by
 * tdbk_client_attach_uncharge() or tdbk_client_free().
 */
int tdbk_client_attach_charge(struct tdbk_client *c, const char **msg);
void tdbk_client_attach_uncharge(struct tdbk_client *c);
/* The uid (fsuid, initial user namespace) the client acts as. */
u32 tdbk_client_uid(const struct tdbk_client *c);

/* The dead-client hook: aborts its transactions, drops its watches,
 * frees its dumps' state.  Counted in STATS (cleanups, txns_aborted,
 * watches_dropped) when the client had any. */
void tdbk_client_free(struct tdbk_client *c);

/* Run one validated request (see the top of this file). */
int tdbk_exec(struct tdbk_client *c, const struct tdb_proto_msg *m,
	      struct tdbk_sink *out, struct tdb_proto_extack *ext,
	      struct tdbk_dump **dump);

/*
 * Go on with a dump: write parts into out until it is finished or out
 * has no room.  Returns 1 when more is to come (call again later), 0 when
 * finished, or a negative errno that ends the dump early (ext->msg says
 * why).  A part that did not fit is written by the next call: nothing is
 * lost or repeated.
 */
int tdbk_dump_run(struct tdbk_dump *d, struct tdbk_sink *out,
		  struct tdb_proto_extack *ext);
void tdbk_dump_free(struct tdbk_dump *d);

/*
 * Feeds, for dev.c's mmap: the feed whose mmap slot is `slot` (>= 2), if
 * client c watches it now, with a reference (NULL otherwise).  Its ring
 * memory is vmalloc_user() memory of tdbk_feed_size() bytes (header page,
 * then data); dev.c maps it read-only with remap_vmalloc_range_partial().
 */
struct tdbk_feed *tdbk_feed_get(struct tdbk_client *c, u64 slot);
void tdbk_feed_put(struct tdbk_feed *f);
void *tdbk_feed_mem(struct tdbk_feed *f);
size_t tdbk_feed_size(const struct tdbk_feed *f);

/* STATS figures the transports keep; the owner reports them.  Bumped
 * with atomic ops from any context. */
struct tdbk_counters {
	atomic_t clients;               /* clients now (both transports) */
	atomic_t rings;                 /* client rings mapped now */
	atomic64_t accepted;            /* clients ever */
	atomic64_t rings_freed;
	atomic64_t violations;          /* clients cut off for breaking the
					 * ring protocol */
	/* requests the transport answered itself, without tdbk_exec()
	 * (refused by tdb_proto_parse, ...), and of those the failed
	 * ones: STATS adds them to the owner's own counts */
	atomic64_t requests;
	atomic64_t errors;
};
struct tdbk_counters *tdbk_owner_counters(struct tdbk_owner *o);

#endif
