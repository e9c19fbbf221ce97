// SPDX-License-Identifier: GPL-2.0-only
/*
 * genl.c - tdb.ko's generic netlink family TDB_GENL_NAME ("tdb"): the
 * protocol of include/tdb/proto.h over NETLINK_GENERIC, with the
 * family's dynamic id in nlmsg_type; its per-socket connection (a
 * client of the owner and serve's struct tdbo_conn, src/owner/serve.h);
 * its acks parked until durable; and the multicast group
 * TDB_GENL_MCGRP ("changes") that carries every change notification.
 *
 * Invariants:
 *  - Generic netlink does not validate our attributes (no policy,
 *    liberal validation, see tdbk_family): a VALUE is sent as repeated
 *    fragments, so the raw message goes to the same validator as over
 *    the rings (tdb_proto_parse_family, with our family id).  Generic
 *    netlink itself still checks the genlmsghdr's length, the command
 *    and GENL_ADMIN_PERM.
 *  - The request is parsed in place in the skb: it is kernel memory,
 *    written once by netlink_sendmsg() from the sender's buffer and not
 *    writable by anyone afterwards, so it already is a private copy.
 *  - A doit is a thin adapter over serve (tdbo_serve_msg): serve
 *    refuses and counts (each refused request once), runs, and answers
 *    through this file's channel (genl_conn_ops: an skb per message,
 *    genlmsg_unicast to the socket's port id in init_net), or parks the
 *    answer of a change in the connection's held queue.  Every answer
 *    is serve's, so doit returns -EINTR: netlink_rcv_skb() then sends
 *    no ack of its own (it skips netlink_ack() for -EINTR, as for a
 *    dump started; 6.1 included).  Answers are built as tdbd and
 *    /dev/tdb build them (tdb_proto_error: NLM_F_CAPPED, the extended
 *    ack's TLVs when there is anything to say), which is what netlink
 *    sends a socket with NETLINK_CAP_ACK and NETLINK_EXT_ACK on, as
 *    libtdbclient's are.  The one request not served is one whose
 *    connection cannot be made (no memory, client limits): netlink
 *    answers it, and it is counted here.
 *  - Parked acks (sync always under a supervisor): the answer to a
 *    change logged (res.lsn) above the durable LSN waits in serve's
 *    held queue, in order, bounded per socket (held_bound: a change
 *    past the bound is refused -EAGAIN, never waited for); doit
 *    returns at once, holding nothing.  TDB_IOC_SUP_DURABLE
 *    (tdbk_genl_durable) queues release_work, which sends what became
 *    durable, per connection in order.  So one client's pipelined
 *    changes share the supervisor's fdatasyncs, and no genl lock
 *    (cb_lock) is held while a change waits.  A parked answer may be
 *    overtaken by a later answer that is not parked (a GET's reply):
 *    clients match answers by seq, as on the rings.  Each has its
 *    deadline (the client deadline): a delayed work per connection
 *    answers it -ETIMEDOUT then, supervisor or not (today's texts); at
 *    unload every parked answer is answered at once ("... being
 *    unloaded"); a released socket's are freed unsent.
 *  - One connection (struct genl_client) per sending socket, created on
 *    the socket's first request and unhashed when the socket is released
 *    (NETLINK_URELEASE; gc->gone, its parked answers freed); freed once
 *    no dump or work uses it.  Its credentials are the socket opener's
 *    (the socket file's f_cred), fixed for the client's life.
 *  - gc->lock serialises calls on one connection (the owner and serve
 *    require it): two threads sending on one socket, dumps, releases.
 *    Lock order: clients_lock, then gc->lock, then held_lock (a
 *    spinlock, innermost).
 *  - gc->sk is dereferenced only under gc->lock with !gc->gone, or
 *    under clients_lock while hashed: the socket is alive until its
 *    NETLINK_URELEASE, which takes both.  The socket's port is released
 *    a little before that notification (netlink_remove, then
 *    sock_orphan): a message is not sent to a socket already orphaned
 *    (SOCK_DEAD), so another socket that took the port id is not sent
 *    this one's answers (but for the few instructions between the two).
 *  - Everything here runs in process context (doit, dump start /
 *    dumpit / done, the netlink notifier, the works), so the owner may
 *    sleep.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/atomic.h>
#include <linux/hashtable.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/sched/signal.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "kcompat.h"
#include "tdb/kdev.h"
#include "owner.h"
#include "serve.h"
#include "transport.h"
#include "sup.h"

/* Parked answers per socket at most: its receive buffer's bytes / 1 KiB
 * (an ack's skb takes about 768 bytes of it: all of them fit when they
 * go out together), within these bounds. */
#define TDBK_GENL_HELD_MIN 4u
#define TDBK_GENL_HELD_MAX 4096u        /* as /dev/tdb's TDBK_DEV_MAX_HELD */

static bool genl_going;                 /* unloading: parked answers end */

struct genl_client {
	struct hlist_node node;         /* in genl_clients, under clients_lock */
	struct kref ref;                /* the hash's, one per dump, one per
					 * release_work's visit */
	u32 portid;
	struct sock *sk;                /* see the top of this file */
	bool hashed;                    /* under clients_lock */
	bool gone;                      /* under lock: socket released */
	struct mutex lock;              /* calls on tc and conn */
	struct tdbo_client *tc;
	struct tdbo_conn conn;          /* serve's: held answers */
	unsigned int ndumps;            /* under lock */
	struct sk_buff *out;            /* under lock: the message reserved */
	struct list_head held_node;     /* on held_clients or release_work's
					 * list, under held_lock: holds
					 * answers */
	struct delayed_work late;       /* the first held answer's deadline */
};

static DEFINE_HASHTABLE(genl_clients, 8);
static DEFINE_MUTEX(clients_lock);
static LIST_HEAD(held_clients);
static DEFINE_SPINLOCK(held_lock);
static struct tdbo_owner *genl_owner;
static struct genl_family tdbk_family;

static void release_fn(struct work_struct *w);
static DECLARE_WORK(release_work, release_fn);

static struct tdbo_counters *counters(void)
{
	return tdbo_owner_counters(genl_owner);
}

/* --- the channel: one skb per message, to the socket's port ------------- */

/* Make a message built by the owner or serve one of ours: the family's
 * id (NLMSG_ERROR and NLMSG_DONE stay), the receiver's port id (as
 * netlink_ack() puts it), the padding zeroed. */
static void finish_msg(struct genl_client *gc, void *p, size_t len)
{
	struct nlmsghdr *nlh = p;

	nlh->nlmsg_len = (u32)len;
	if (nlh->nlmsg_type >= NLMSG_MIN_TYPE)
		nlh->nlmsg_type = (u16)tdbk_family.id;
	nlh->nlmsg_pid = gc->portid;
	memset((u8 *)p + len, 0, NLMSG_ALIGN(len) - len);
}

/* Under gc->lock: send skb to the socket, unless it is going.  A full
 * receive buffer loses it, and netlink reports ENOBUFS on the socket,
 * as for any answer of netlink's. */
static void send_skb(struct genl_client *gc, struct sk_buff *skb)
{
	if (gc->gone || sock_flag(gc->sk, SOCK_DEAD)) {
		kfree_skb(skb);
		return;
	}
	genlmsg_unicast(&init_net, skb, gc->portid);
}

/* No memory for an answer: the socket learns it lost one (ENOBUFS), as
 * netlink_ack() reports its own allocation failures. */
static void lost_answer(struct genl_client *gc)
{
	if (gc->gone || sock_flag(gc->sk, SOCK_DEAD))
		return;
	WRITE_ONCE(gc->sk->sk_err, ENOBUFS);
	sk_error_report(gc->sk);
}

static void *ch_reserve(void *arg, unsigned int ch, size_t len,
			bool room_check)
{
	struct genl_client *gc = arg;

	if (gc->out || len < NLMSG_HDRLEN || len > TDB_PROTO_MSG_MAX)
		return NULL;
	gc->out = alloc_skb(NLMSG_ALIGN(len), GFP_KERNEL);
	return gc->out ? skb_tail_pointer(gc->out) : NULL;
}

static void ch_commit(void *arg, unsigned int ch, void *p, size_t len)
{
	struct genl_client *gc = arg;
	struct sk_buff *skb = gc->out;

	gc->out = NULL;
	if (WARN_ON_ONCE(!skb || p != skb_tail_pointer(skb) ||
			 len < NLMSG_HDRLEN ||
			 NLMSG_ALIGN(len) > skb_tailroom(skb))) {
		kfree_skb(skb);
		return;
	}
	finish_msg(gc, p, len);
	skb_put(skb, NLMSG_ALIGN(len));
	send_skb(gc, skb);
}

static void ch_abort(void *arg, unsigned int ch)
{
	struct genl_client *gc = arg;

	kfree_skb(gc->out);
	gc->out = NULL;
}

/* A held answer (serve's private copy) goes out. */
static int ch_emit(void *arg, unsigned int ch, const void *msg, size_t len)
{
	struct genl_client *gc = arg;
	struct sk_buff *skb;
	void *p;

	if (len < NLMSG_HDRLEN || len > TDB_PROTO_MSG_MAX)
		return 0;               /* cannot happen: serve built it */
	skb = alloc_skb(NLMSG_ALIGN(len), GFP_KERNEL);
	if (!skb) {
		lost_answer(gc);
		return 0;
	}
	p = skb_put(skb, NLMSG_ALIGN(len));
	memcpy(p, msg, len);
	finish_msg(gc, p, len);
	send_skb(gc, skb);
	return 0;
}

/* Every message gets an skb of its own: there is always room (the
 * socket's receive buffer is netlink's to police). */
static bool ch_room(void *arg, unsigned int ch, size_t len)
{
	return true;
}

static bool is_change(unsigned int cmd)
{
	switch (cmd) {
	case TDB_CMD_PUT:
	case TDB_CMD_DEL:
	case TDB_CMD_INCR:
	case TDB_CMD_EXPIRE:
	case TDB_CMD_TXN_COMMIT:
	case TDB_CMD_TABLE_CREATE:
	case TDB_CMD_TABLE_DROP:
		return true;
	}
	return false;
}

/*
 * What generic netlink refuses before the owner (serve counts and
 * answers it): NLM_F_ACK that does not match the command (generic
 * netlink acks exactly when it is set, include/tdb/proto.h), tdb
 * recovering or waiting for its supervisor, TABLE_MAP, and a change
 * while the socket's parked answers are at their bound.
 */
static int ch_refuse(void *arg, unsigned int ch, const struct tdb_proto_msg *m,
		     struct tdb_proto_extack *ext)
{
	struct genl_client *gc = arg;
	bool ack = m->nlh->nlmsg_flags & NLM_F_ACK;
	int err;

	if (ack != tdb_proto_cmd_is_ack(m->cmd)) {
		ext->msg = ack ?
			"NLM_F_ACK set on a command answered by a reply or a "
			"dump (it would get two answers)" :
			"NLM_F_ACK missing on a command answered by an ack "
			"(it would get no answer)";
		return -EINVAL;
	}
	err = tdbk_sup_refuse(NULL, &ext->msg);
	if (err)
		return err;
	if (m->cmd == TDB_CMD_TABLE_MAP) {
		/* A map is pages of the device file: nothing to map here
		 * (and no reader slot to wait for). */
		ext->msg = "table maps are for /dev/tdb clients (generic "
			   "netlink reads with GET)";
		return -EOPNOTSUPP;
	}
	if (is_change(m->cmd) && tdbo_conn_held_full(&gc->conn)) {
		ext->msg = "too many changes of this socket wait for "
			   "durability (their acks are parked): send more "
			   "once some are acknowledged";
		return -EAGAIN;
	}
	return 0;
}

static void ch_held_note(void *arg, int delta,
			 const struct tdbo_held *first);

static const struct tdbo_conn_ops genl_conn_ops = {
	.reserve = ch_reserve,
	.commit = ch_commit,
	.abort = ch_abort,
	.emit = ch_emit,
	.room = ch_room,
	.refuse = ch_refuse,
	.held_note = ch_held_note,
	/* reserve() allocates (GFP_KERNEL): not for read-side sections */
	.in_read_section = false,
};

/* Under gc->lock: the held count moved.  A connection holding answers
 * is on held_clients (release_work visits it) and has its late work
 * armed at the first one's deadline. */
static void ch_held_note(void *arg, int delta, const struct tdbo_held *first)
{
	struct genl_client *gc = arg;
	u64 first_deadline = first ? first->deadline : 0;

	tdbk_held_account(delta);
	spin_lock(&held_lock);
	if (tdbo_conn_nheld(&gc->conn) && !gc->gone &&
	    list_empty(&gc->held_node))
		list_add_tail(&gc->held_node, &held_clients);
	else if (!tdbo_conn_nheld(&gc->conn))
		list_del_init(&gc->held_node);
	spin_unlock(&held_lock);
	if (first_deadline) {
		long left = (long)((unsigned long)first_deadline - jiffies);

		mod_delayed_work(system_wq, &gc->late, left > 0 ? left : 0);
	} else {
		cancel_delayed_work(&gc->late);
	}
}

/* The parked answers that may go out now, in order. */
static void release_locked(struct genl_client *gc)
{
	if (!gc->gone)
		tdbo_conn_release(&gc->conn);
}

static void late_fn(struct work_struct *w)
{
	struct genl_client *gc = container_of(to_delayed_work(w),
					      struct genl_client, late);

	mutex_lock(&gc->lock);
	release_locked(gc);
	mutex_unlock(&gc->lock);
}

static void client_put(struct genl_client *gc);

/* Every connection holding answers: release what is durable now.  One
 * still holding some afterwards goes back on held_clients. */
static void release_fn(struct work_struct *w)
{
	struct genl_client *gc;
	LIST_HEAD(todo);

	spin_lock(&held_lock);
	list_splice_init(&held_clients, &todo);
	while ((gc = list_first_entry_or_null(&todo, struct genl_client,
					      held_node))) {
		/* on a list: still hashed (the notifier takes it off
		 * before it drops the hash's reference) */
		list_del_init(&gc->held_node);
		kref_get(&gc->ref);
		spin_unlock(&held_lock);
		mutex_lock(&gc->lock);
		release_locked(gc);
		spin_lock(&held_lock);
		if (tdbo_conn_nheld(&gc->conn) && !gc->gone &&
		    list_empty(&gc->held_node))
			list_add_tail(&gc->held_node, &held_clients);
		spin_unlock(&held_lock);
		mutex_unlock(&gc->lock);
		client_put(gc);
		cond_resched();
		spin_lock(&held_lock);
	}
	spin_unlock(&held_lock);
}

/* TDB_IOC_SUP_DURABLE moved, or the supervisor left (sup.c).  The
 * releases run in a work: the supervisor never waits for a genl
 * connection's lock.  held_lock orders this look at the list against
 * doit's adding to it and then looking at the durable LSN (doit
 * releases after serving): one of the two sees the other. */
void tdbk_genl_durable(void)
{
	bool any;

	spin_lock(&held_lock);
	any = !list_empty(&held_clients);
	spin_unlock(&held_lock);
	if (any)
		queue_work(system_wq, &release_work);
}

/* --- connections ---------------------------------------------------------- */

static void client_release(struct kref *ref)
{
	struct genl_client *gc = container_of(ref, struct genl_client, ref);

	cancel_delayed_work_sync(&gc->late);
	tdbo_conn_fini(&gc->conn);      /* nothing held by now */
	tdbo_client_free(gc->tc);
	mutex_destroy(&gc->lock);
	kfree(gc);
}

static void client_put(struct genl_client *gc)
{
	kref_put(&gc->ref, client_release);
}

/* Under gc->lock: the socket is gone (or tdb.ko is): its parked answers
 * are freed unsent, and it is taken off held_clients (ch_held_note). */
static void client_gone(struct genl_client *gc)
{
	gc->gone = true;
	tdbo_conn_fini(&gc->conn);
}

/*
 * The client of the socket that sent skb, with a reference; created on
 * first use.  A client of the same port id but another socket belongs
 * to a socket being released (its port id was reused before its
 * NETLINK_URELEASE came): it is left for that notification.
 */
static struct genl_client *client_get(struct sk_buff *skb, int *err)
{
	struct sock *sk = NETLINK_CB(skb).sk;
	u32 portid = NETLINK_CB(skb).portid;
	struct genl_client *gc;

	*err = 0;
	if (!sk || !sk->sk_socket || !sk->sk_socket->file) {
		*err = -ENOTCONN;
		return NULL;
	}
	mutex_lock(&clients_lock);
	hash_for_each_possible(genl_clients, gc, node, portid) {
		if (gc->portid == portid && gc->sk == sk) {
			kref_get(&gc->ref);
			mutex_unlock(&clients_lock);
			return gc;
		}
	}
	gc = kzalloc(sizeof(*gc), GFP_KERNEL);
	if (!gc) {
		mutex_unlock(&clients_lock);
		*err = -ENOMEM;
		return NULL;
	}
	gc->tc = tdbk_client_new(genl_owner, sk->sk_socket->file->f_cred,
				 false, NULL, NULL, err);
	if (!gc->tc) {
		mutex_unlock(&clients_lock);
		kfree(gc);
		if (!*err)
			*err = -ENOMEM;
		return NULL;
	}
	kref_init(&gc->ref);            /* the hash's */
	kref_get(&gc->ref);             /* the caller's */
	gc->portid = portid;
	gc->sk = sk;
	gc->hashed = true;
	mutex_init(&gc->lock);
	INIT_LIST_HEAD(&gc->held_node);
	INIT_DELAYED_WORK(&gc->late, late_fn);
	tdbo_conn_init(&gc->conn, &genl_conn_ops, gc, &tdbk_hold_policy,
		       &genl_going, gc->tc, counters());
	hash_add(genl_clients, &gc->node, portid);
	mutex_unlock(&clients_lock);
	tdbo_client_accept(gc->tc);
	return gc;
}

/* A socket of ours was released: drop its client (the dumps still
 * running keep it until their done()). */
static int tdbk_genl_notify(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct netlink_notify *n = ptr;
	struct genl_client *gc;
	struct hlist_node *tmp;
	HLIST_HEAD(gone);

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    !net_eq(n->net, &init_net))
		return NOTIFY_DONE;
	mutex_lock(&clients_lock);
	hash_for_each_possible_safe(genl_clients, gc, tmp, node, n->portid) {
		/* Every hashed client's socket is alive until its own
		 * notification (this one, or one to come): the one being
		 * released has been orphaned (SOCK_DEAD). */
		if (gc->portid != n->portid || !sock_flag(gc->sk, SOCK_DEAD))
			continue;
		hash_del(&gc->node);
		gc->hashed = false;
		mutex_lock(&gc->lock);
		client_gone(gc);
		mutex_unlock(&gc->lock);
		hlist_add_head(&gc->node, &gone);
	}
	mutex_unlock(&clients_lock);
	hlist_for_each_entry_safe(gc, tmp, &gone, node)
		client_put(gc);
	return NOTIFY_DONE;
}

static struct notifier_block genl_nb = {
	.notifier_call = tdbk_genl_notify,
};

/* A request whose connection could not be made: netlink answers it
 * (the extended ack names nothing: the errno says it), counted here,
 * the one request serve does not see. */
static void count_refused(void)
{
	tdb_fetch_add(&counters()->requests, 1);
	tdb_fetch_add(&counters()->errors, 1);
}

/* Under gc->lock: the bound on parked answers now (the socket's receive
 * buffer may change any time). */
static void held_bound(struct genl_client *gc)
{
	unsigned int n = (unsigned int)READ_ONCE(gc->sk->sk_rcvbuf) / 1024;

	gc->conn.held_max = clamp(n, TDBK_GENL_HELD_MIN, TDBK_GENL_HELD_MAX);
}

/* --- doit: every answer through serve --------------------------------------- */

static int tdbk_genl_doit(struct sk_buff *skb, struct genl_info *info)
{
	const struct nlmsghdr *nlh = info->nlhdr;
	struct tdb_proto_extack ext = { NULL };
	struct genl_client *gc;
	int err;

	gc = client_get(skb, &err);
	if (!gc) {
		count_refused();
		return err;
	}
	mutex_lock(&gc->lock);
	held_bound(gc);
	err = tdb_proto_parse_family(nlh, nlh->nlmsg_len, TDB_PROTO_REQUEST,
				     (u16)tdbk_family.id, &gc->conn.m, &ext);
	if (err)
		tdbo_conn_refuse(&gc->conn, 0, nlh, err, &ext);
	else
		tdbo_serve_msg(&gc->conn, 0, &gc->conn.m);
	/* earlier parked answers durable by now, and this one if the
	 * durable LSN passed it before it was on held_clients */
	release_locked(gc);
	mutex_unlock(&gc->lock);
	client_put(gc);
	/* answered or parked: no ack from netlink_rcv_skb() */
	return -EINTR;
}

/* An owner's error ending a dump start, in netlink's extended ack
 * (attributes at fault pointed at inside the request). */
static void set_extack(struct netlink_ext_ack *extack,
		       const struct nlmsghdr *nlh,
		       const struct tdb_proto_extack *ext)
{
	if (!extack)
		return;
	extack->_msg = ext->msg;
	if (ext->offset && ext->offset < nlh->nlmsg_len)
		extack->bad_attr = (const struct nlattr *)
				   ((const u8 *)nlh + ext->offset);
	if (ext->miss_type)
		extack->miss_type = (u16)ext->miss_type;
}

/* --- dumps ----------------------------------------------------------------- */

struct genl_dump {
	struct genl_client *gc;
	struct tdbo_dump *d;
	int err;                /* an error held for the next dumpit, */
	char msg[TDB_PROTO_EXTACK_MAX + 1];     /* with its message */
};

struct skb_sink {
	struct tdbo_sink s;
	struct sk_buff *skb;
	u32 portid;
	unsigned int written;
	int err;                /* growing an empty skb failed, or a part
				 * longer than any message (-EMSGSIZE) */
};

/* Bytes to skip so that the tail of an empty skb is 4-byte aligned. */
static unsigned int skb_misalign(const struct sk_buff *skb)
{
	return (4 - ((unsigned long)skb_tail_pointer(skb) & 3)) & 3;
}

/*
 * Room for a part at the skb's tail.  The builder (src/proto) needs a
 * 4-byte aligned buffer, and netlink_dump() may hand us an skb whose
 * data is not aligned (it trims the head to the reader's last recvmsg
 * size); parts keep their lengths aligned, so only an empty skb needs
 * its start moved.
 */
static void *skb_reserve_part(struct tdbo_sink *s, size_t len)
{
	struct skb_sink *ss = container_of(s, struct skb_sink, s);
	size_t need = NLMSG_ALIGN(len);

	if (len < NLMSG_HDRLEN || len > TDB_PROTO_MSG_MAX) {
		ss->err = -EMSGSIZE;
		return NULL;
	}
	if (ss->skb->len && skb_misalign(ss->skb))
		return NULL;            /* cannot happen: parts are aligned */
	if (skb_tailroom(ss->skb) < need + skb_misalign(ss->skb)) {
		/* A part that does not fit goes into the next skb; one that
		 * does not fit an empty skb (a big value) grows it, so that
		 * a dump never stalls.  Room is kept for NLMSG_DONE. */
		if (ss->skb->len)
			return NULL;
		if (pskb_expand_head(ss->skb, 0,
				     need + 3 + TDB_PROTO_ERROR_MAX -
				     skb_tailroom(ss->skb), GFP_KERNEL)) {
			ss->err = -ENOMEM;
			return NULL;
		}
	}
	if (!ss->skb->len)
		skb_reserve(ss->skb, skb_misalign(ss->skb));
	return skb_tail_pointer(ss->skb);
}

static void skb_commit_part(struct tdbo_sink *s, void *p, size_t len)
{
	struct skb_sink *ss = container_of(s, struct skb_sink, s);
	struct nlmsghdr *nlh = p;

	if (WARN_ON_ONCE(p != skb_tail_pointer(ss->skb) ||
			 len < NLMSG_HDRLEN ||
			 NLMSG_ALIGN(len) > skb_tailroom(ss->skb)))
		return;
	nlh->nlmsg_len = (u32)len;
	nlh->nlmsg_type = (u16)tdbk_family.id;
	nlh->nlmsg_pid = ss->portid;
	memset((u8 *)p + len, 0, NLMSG_ALIGN(len) - len);
	skb_put(ss->skb, NLMSG_ALIGN(len));
	ss->written++;
}

/*
 * A dump (SCAN, TABLE_LIST) runs in netlink's dump machinery (start,
 * then dumpit as the reader reads, done).  What it shares with serve
 * goes through serve: a request refused before the owner (the
 * validator, ch_refuse, a dump past TDBO_MAX_DUMPS on this socket) is
 * counted and answered by serve, and start returns -EINTR, which ends
 * the dump without netlink's ack (__netlink_dump_start() returns it as
 * it is, and netlink_rcv_skb() skips the ack for it).  An error of the
 * owner's own (counted by it) is netlink's to answer, as it ends a
 * dump.
 */
static int tdbk_genl_start(struct netlink_callback *cb)
{
	struct tdb_proto_extack ext = { NULL };
	struct tdbo_dump *d = NULL;
	struct genl_dump *gd;
	struct genl_client *gc;
	int err;

	gc = client_get(cb->skb, &err);
	if (!gc) {
		count_refused();
		return err;
	}
	gd = kzalloc(sizeof(*gd), GFP_KERNEL);
	mutex_lock(&gc->lock);
	err = tdb_proto_parse_family(cb->nlh, cb->nlh->nlmsg_len,
				     TDB_PROTO_REQUEST, (u16)tdbk_family.id,
				     &gc->conn.m, &ext);
	if (!err && !gd) {
		ext.msg = "out of memory for a dump";
		err = -ENOMEM;
	}
	if (err) {
		tdbo_conn_refuse(&gc->conn, 0, cb->nlh, err, &ext);
		err = 1;
	} else {
		/* refused (ch_refuse, TDBO_MAX_DUMPS) or started by serve */
		err = tdbo_serve_dump_start(&gc->conn, 0, &gc->conn.m,
					    gc->ndumps, &d, &ext);
	}
	if (!err)
		gc->ndumps++;
	mutex_unlock(&gc->lock);
	if (err) {
		if (err < 0)
			set_extack(cb->extack, cb->nlh, &ext);
		client_put(gc);
		kfree(gd);
		return err > 0 ? -EINTR : err;
	}
	gd->gc = gc;
	gd->d = d;
	cb->args[0] = (long)gd;
	return 0;
}

static int tdbk_genl_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct genl_dump *gd = (struct genl_dump *)cb->args[0];
	struct skb_sink ss = {
		.s = { .reserve = skb_reserve_part, .commit = skb_commit_part },
		.skb = skb,
		.portid = NETLINK_CB(cb->skb).portid,
	};
	struct tdb_proto_extack ext = { NULL };
	int ret;


	if (!gd || !gd->d)
		return 0;
	if (gd->err) {          /* held back: NLMSG_DONE in its own skb */
		if (cb->extack && gd->msg[0])
			cb->extack->_msg = gd->msg;
		return gd->err;
	}
	/*
	 * A run that wrote nothing into the empty skb without an error went
	 * through its record budget (a PREFIX or unreadable tables skipped
	 * them): run it again, since returning 0 would end the dump.  It
	 * pauses only once the skb holds parts.
	 */
	for (;;) {
		mutex_lock(&gd->gc->lock);
		ret = tdbo_dump_run(gd->d, &ss.s, &ext);
		mutex_unlock(&gd->gc->lock);
		if (ret <= 0 || skb->len)
			break;
		if (ss.err) {
			ret = ss.err;
			ext.msg = ss.err == -EMSGSIZE ?
				  "a dump part is longer than any message" :
				  "out of memory for a dump part";
			break;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			ext.msg = "the dump was interrupted";
			break;
		}
		cond_resched();
	}
	if (ret > 0)
		return skb->len;
	if (ret < 0 && skb->len) {
		/*
		 * An error after parts: NLMSG_DONE would go where the parts
		 * left room, and netlink drops its message when there is
		 * too little (or sends DONE later without it).  Send the
		 * parts now and the error, with its message, next time.
		 */
		gd->err = ret;
		gd->msg[0] = 0;
		if (ext.msg)
			strscpy(gd->msg, ext.msg, sizeof(gd->msg));
		return skb->len;
	}
	if (ret < 0 && cb->extack)
		cb->extack->_msg = ext.msg;
	/* 0 or a negative errno: netlink ends the dump with NLMSG_DONE
	 * carrying it (after the parts already in skb). */
	return ret;
}

static int tdbk_genl_done(struct netlink_callback *cb)
{
	struct genl_dump *gd = (struct genl_dump *)cb->args[0];

	if (!gd)
		return 0;
	mutex_lock(&gd->gc->lock);
	if (gd->d)
		tdbo_dump_free(gd->d);
	gd->gc->ndumps--;
	mutex_unlock(&gd->gc->lock);
	client_put(gd->gc);
	kfree(gd);
	cb->args[0] = 0;
	return 0;
}

/* --- the family ------------------------------------------------------------ */

/*
 * Every command has both forms: a request with the wrong NLM_F_DUMP for
 * its command then reaches the validator, which says what is wrong,
 * instead of getting generic netlink's bare -EOPNOTSUPP.
 */
#define OP(c, fl) { .cmd = (c), .flags = (fl), \
		    .validate = GENL_DONT_VALIDATE_STRICT | \
				GENL_DONT_VALIDATE_DUMP, \
		    .doit = tdbk_genl_doit, .start = tdbk_genl_start, \
		    .dumpit = tdbk_genl_dumpit, .done = tdbk_genl_done }

static const struct genl_ops tdbk_genl_ops[] = {
	/* Changes need CAP_NET_ADMIN; reads are checked by the owner
	 * against the tables' owner and mode bits. */
	OP(TDB_CMD_TABLE_CREATE, GENL_ADMIN_PERM),
	OP(TDB_CMD_TABLE_DROP, GENL_ADMIN_PERM),
	OP(TDB_CMD_TABLE_LIST, 0),
	OP(TDB_CMD_TABLE_STAT, 0),
	OP(TDB_CMD_GET, 0),
	OP(TDB_CMD_PUT, GENL_ADMIN_PERM),
	OP(TDB_CMD_DEL, GENL_ADMIN_PERM),
	OP(TDB_CMD_SCAN, 0),
	OP(TDB_CMD_TXN_BEGIN, GENL_ADMIN_PERM),
	OP(TDB_CMD_TXN_COMMIT, GENL_ADMIN_PERM),
	OP(TDB_CMD_TXN_ABORT, GENL_ADMIN_PERM),
	OP(TDB_CMD_INCR, GENL_ADMIN_PERM),
	OP(TDB_CMD_EXPIRE, GENL_ADMIN_PERM),
	OP(TDB_CMD_TOUCH, 0),
	/* The owner answers these -EOPNOTSUPP over genl, with a message
	 * (no feeds here: the "changes" group carries notifications). */
	OP(TDB_CMD_WATCH, 0),
	OP(TDB_CMD_UNWATCH, 0),
	OP(TDB_CMD_STATS, 0),
	/* tdbd's socket only: refused by the owner with a message. */
	OP(TDB_CMD_ATTACH, 0),
	/* /dev/tdb only: refused here with a message (doit). */
	OP(TDB_CMD_TABLE_MAP, 0),
};

#if TDBK_HAVE_MCAST_CAP
static const struct genl_multicast_group tdbk_genl_mcgrps[] = {
	/* Joining needs CAP_NET_ADMIN (genl_bind checks the flag). */
	{ .name = TDB_GENL_MCGRP, .flags = GENL_MCAST_CAP_NET_ADMIN },
};
#endif

static struct genl_family tdbk_family __ro_after_init = {
	.name = TDB_GENL_NAME,
	.version = TDB_PROTO_VERSION,
	/*
	 * No policy, and liberal validation (GENL_DONT_VALIDATE_*, which
	 * 6.1 allows only for commands below resv_start_op: so all of
	 * ours are): genl's parse of a doit request then only splits the
	 * attributes (a bare maxattr 0 still gets strict checks that
	 * refuse every attribute), and a dump's is skipped.  The
	 * validator checks what genl's header check would (reserved,
	 * flags), and more.
	 */
	.maxattr = TDB_A_MAX,
	.resv_start_op = __TDB_CMD_MAX,
	.netnsok = false,
	.parallel_ops = true,   /* we lock per client; the owner its own */
	.module = THIS_MODULE,
	.ops = tdbk_genl_ops,
	.n_ops = ARRAY_SIZE(tdbk_genl_ops),
#if TDBK_HAVE_MCAST_CAP
	.mcgrps = tdbk_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(tdbk_genl_mcgrps),
#endif
	/* else no "changes" group: it could not be kept to CAP_NET_ADMIN
	 * (compat/kcompat.h), and notifications carry every table's keys
	 * and values. */
};

/* --- notifications ----------------------------------------------------------- */

/* The owner's change hook: a copy of each notification to the group,
 * when anyone listens.  Called in process context (owner.h). */
static void genl_on_change(void *arg, const void *msg, size_t len)
{
	struct nlmsghdr *nlh;
	struct sk_buff *skb;

	if (!TDBK_HAVE_MCAST_CAP || len < NLMSG_HDRLEN ||
	    len > TDB_PROTO_MSG_MAX)
		return;
	if (genl_has_listeners(&tdbk_family, &init_net, 0) <= 0)
		return;
	skb = alloc_skb(NLMSG_ALIGN(len), GFP_KERNEL);
	if (!skb)
		return;         /* a listener sees the gap as ENOBUFS would */
	nlh = skb_put_zero(skb, NLMSG_ALIGN(len));
	memcpy(nlh, msg, len);
	nlh->nlmsg_len = (u32)len;
	nlh->nlmsg_type = (u16)tdbk_family.id;
	nlh->nlmsg_pid = 0;
	genlmsg_multicast(&tdbk_family, skb, 0, 0, GFP_KERNEL);
}

/* Does anyone listen to the group?  If not, tdbo_notify() does not
 * build the notification of a change to a table without a feed (a
 * restore's records, most changes): the multicast above would drop it. */
static bool genl_change_wanted(void *arg)
{
	return TDBK_HAVE_MCAST_CAP &&
	       genl_has_listeners(&tdbk_family, &init_net, 0) > 0;
}

int tdbk_genl_init(struct tdbo_owner *o)
{
	int err;

	genl_owner = o;
	err = netlink_register_notifier(&genl_nb);
	if (err)
		return err;
	err = genl_register_family(&tdbk_family);
	if (err) {
		netlink_unregister_notifier(&genl_nb);
		return err;
	}
	tdbo_owner_on_change(o, genl_on_change, NULL);
	tdbo_owner_change_wanted(o, genl_change_wanted);
	return 0;
}


void tdbk_genl_exit(void)
{
	struct genl_client *gc;
	struct hlist_node *tmp;
	unsigned int bkt;

	tdbo_owner_on_change(genl_owner, NULL, NULL);
	WRITE_ONCE(genl_going, true);
	/* No doit runs after this; dumps hold a module reference, so none
	 * is left when the module goes. */
	genl_unregister_family(&tdbk_family);
	/* Parked answers end now: durable ones are sent, the others are
	 * answered -ETIMEDOUT "... being unloaded" (sup.c's hold_late).  Under
	 * clients_lock every hashed client's socket is alive (its
	 * notification waits for the lock). */
	mutex_lock(&clients_lock);
	hash_for_each(genl_clients, bkt, gc, node) {
		mutex_lock(&gc->lock);
		release_locked(gc);
		client_gone(gc);
		mutex_unlock(&gc->lock);
	}
	mutex_unlock(&clients_lock);
	netlink_unregister_notifier(&genl_nb);
	cancel_work_sync(&release_work);
	mutex_lock(&clients_lock);
	hash_for_each_safe(genl_clients, bkt, tmp, gc, node) {
		hash_del(&gc->node);
		gc->hashed = false;
		client_put(gc);
	}
	mutex_unlock(&clients_lock);
	genl_owner = NULL;
}
