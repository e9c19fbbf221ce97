// SPDX-License-Identifier: GPL-2.0-only
/*
 * genl.c - tdb.ko's generic netlink family TDB_GENL_NAME ("tdb"): the
 * protocol of include/tdb/proto.h over NETLINK_GENERIC, with the
 * family's dynamic id in nlmsg_type; its per-socket client state; and
 * the multicast group TDB_GENL_MCGRP ("changes") that carries every
 * change notification.
 *
 * Invariants:
 *  - Generic netlink does not validate our attributes (no policy,
 *    liberal validation, see tdbk_family): a VALUE is sent as repeated
 *    fragments, so the raw message goes to the same validator as over the rings
 *    (tdb_proto_parse_family), and its errors travel in the extended
 *    ack (message, offset of the attribute at fault, missing type).
 *    Generic netlink itself still checks the genlmsghdr's length, the
 *    command and GENL_ADMIN_PERM.
 *  - The request is parsed in place in the skb: it is kernel memory,
 *    written once by netlink_sendmsg() from the sender's buffer and not
 *    writable by anyone afterwards, so it already is a private copy.
 *  - One client (struct tdbo_client) per sending socket, created on the
 *    socket's first request and freed once the socket is released
 *    (NETLINK_URELEASE) and no dump of it is running.  Its transactions
 *    belong to that socket.  Its credentials are the socket opener's
 *    (the socket file's f_cred): fixed for the client's life, like the
 *    opener's f_cred of /dev/tdb and SO_PEERCRED of tdbd's socket,
 *    rather than whichever thread happens to send.
 *  - gc->lock serialises calls on one client (the owner requires it):
 *    two threads sending on one socket, and dumps, take turns.
 *  - Everything here runs in process context (doit, dump start / dumpit
 *    / done, the netlink notifier), so the owner may sleep.
 *  - Acks keep their meaning (sync always under a supervisor): a change
 *    whose record tdb.ko logged (res.lsn) above the durable LSN is
 *    answered only once TDB_IOC_SUP_DURABLE covers it.  doit waits for
 *    that (wait_durable) after the owner returned and gc->lock is let
 *    go: nothing the supervisor's DURABLE needs is held (klog.c's gate
 *    and lock are released by the log hooks before the owner returns),
 *    only genl's cb_lock for reading, as by every doit.  So that a
 *    stuck supervisor cannot hold cb_lock's readers (and with them any
 *    genl family's registration) for long, the wait always ends at the
 *    client deadline or TDBK_GENL_WAIT_MAX_MS, whichever comes first,
 *    for all the changes of one datagram together, with or without a
 *    supervisor: -ETIMEDOUT, the change applied and logged.  At unload
 *    every wait ends at once.  It is killable (a caught signal
 *    cannot restart a netlink request, only fail it): a fatal signal
 *    ends it early, the change stays applied.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/atomic.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/sched/signal.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "kcompat.h"
#include "tdb/kdev.h"
#include "owner.h"
#include "transport.h"
#include "sup.h"

#define TDBK_GENL_MAX_DUMPS TDBO_MAX_DUMPS  /* per socket (owner.h) */
/* The longest a datagram's changes may wait for durability in all:
 * the wait holds genl's cb_lock for reading, which every genl family's
 * (un)registration needs for writing, and rwsem fairness then queues
 * all genl traffic behind that writer. */
#define TDBK_GENL_WAIT_MAX_MS 2000

/* doits waiting for durability; woken by tdbk_genl_durable() and at
 * unload (genl_going) */
static DECLARE_WAIT_QUEUE_HEAD(durable_wq);
static bool genl_going;
static atomic64_t waiting_now = ATOMIC64_INIT(0);
static atomic64_t waits_timed_out = ATOMIC64_INIT(0);

struct genl_client {
	struct hlist_node node;         /* in genl_clients, under clients_lock */
	struct kref ref;                /* the hash's, and one per dump */
	u32 portid;
	const struct sock *sk;          /* identity only, never dereferenced
					 * once the socket may be gone */
	bool hashed;
	struct mutex lock;              /* calls on tc */
	struct tdbo_client *tc;
	unsigned int ndumps;            /* under lock */
	/* The datagram whose changes wait for durability now (under
	 * lock): netlink_rcv_skb() runs the doit for each message of one
	 * skb in turn, pulling it, so a later message of the same datagram
	 * has the same skb and a larger offset from skb->head; all of them
	 * share one end (TDBK_GENL_WAIT_MAX_MS). */
	const struct sk_buff *wait_skb;
	unsigned int wait_off;
	unsigned long wait_end;
};

static DEFINE_HASHTABLE(genl_clients, 8);
static DEFINE_MUTEX(clients_lock);
static struct tdbo_owner *genl_owner;
static struct genl_family tdbk_family;

static struct tdbo_counters *counters(void)
{
	return tdbo_owner_counters(genl_owner);
}

/* A request refused here, before tdbo_exec() saw it: STATS counts it
 * (the owner counts the ones it runs). */
static void count_refused(void)
{
	tdb_fetch_add(&counters()->requests, 1);
	tdb_fetch_add(&counters()->errors, 1);
}

static void client_release(struct kref *ref)
{
	struct genl_client *gc = container_of(ref, struct genl_client, ref);

	tdbo_client_free(gc->tc);
	mutex_destroy(&gc->lock);
	kfree(gc);
}

static void client_put(struct genl_client *gc)
{
	kref_put(&gc->ref, client_release);
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

/* --- validating ---------------------------------------------------------- */

/* The validator's verdict in the extended ack; attributes at fault are
 * pointed at inside the request (netlink turns that into an offset). */
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
	if (ext->cookie_len && ext->cookie_len <= NETLINK_MAX_COOKIE_LEN) {
		memcpy(extack->cookie, ext->cookie, ext->cookie_len);
		extack->cookie_len = (u8)ext->cookie_len;
	}
}

/*
 * Validate the request, and its NLM_F_ACK: generic netlink acks exactly
 * when NLM_F_ACK is set, so it must be set on the "ack" commands and
 * clear on the others (include/tdb/proto.h), or a request would get a
 * reply and an ack, or nothing at all on success.  The validator allows
 * NLM_F_ACK on any request (the rings and tdbd answer whatever it says).
 */
static int parse(const struct nlmsghdr *nlh, struct tdb_proto_msg *m,
		 struct netlink_ext_ack *extack)
{
	struct tdb_proto_extack ext = { NULL };
	bool ack;
	int err;

	err = tdb_proto_parse_family(nlh, nlh->nlmsg_len, TDB_PROTO_REQUEST,
				     (u16)tdbk_family.id, m, &ext);
	if (err) {
		set_extack(extack, nlh, &ext);
		return err;
	}
	ack = nlh->nlmsg_flags & NLM_F_ACK;
	if (ack != tdb_proto_cmd_is_ack(m->cmd)) {
		if (extack)
			extack->_msg = ack ?
				"NLM_F_ACK set on a command answered by a "
				"reply or a dump (it would get two answers)" :
				"NLM_F_ACK missing on a command answered by "
				"an ack (it would get no answer)";
		return -EINVAL;
	}
	return 0;
}

/* --- doit: replies in an skb of their own --------------------------------- */

struct reply_sink {
	struct tdbo_sink s;
	struct sk_buff *skb;
	u32 portid;
	size_t nomem;           /* the reply could not be allocated: bytes */
};

static void *reply_reserve(struct tdbo_sink *s, size_t len)
{
	struct reply_sink *rs = container_of(s, struct reply_sink, s);

	if (rs->skb || len < NLMSG_HDRLEN || len > TDB_PROTO_MSG_MAX)
		return NULL;            /* one reply per request */
	rs->skb = alloc_skb(NLMSG_ALIGN(len), GFP_KERNEL);
	if (!rs->skb) {
		rs->nomem = len;
		return NULL;
	}
	return skb_tail_pointer(rs->skb);
}

static void reply_commit(struct tdbo_sink *s, void *p, size_t len)
{
	struct reply_sink *rs = container_of(s, struct reply_sink, s);
	struct nlmsghdr *nlh = p;

	if (WARN_ON_ONCE(!rs->skb || p != skb_tail_pointer(rs->skb) ||
			 len < NLMSG_HDRLEN ||
			 NLMSG_ALIGN(len) > skb_tailroom(rs->skb)))
		return;
	nlh->nlmsg_len = (u32)len;
	nlh->nlmsg_type = (u16)tdbk_family.id;
	nlh->nlmsg_pid = rs->portid;
	memset((u8 *)p + len, 0, NLMSG_ALIGN(len) - len);
	skb_put(rs->skb, NLMSG_ALIGN(len));
}

/*
 * The extack message for a reply of len bytes that could not be
 * allocated.  Messages must outlive doit (netlink builds the ack after
 * it returns) and 6.1 has no NL_SET_ERR_MSG_FMT, so they are static, one
 * per power of two: the bound names the size to within a factor of 2.
 */
static const char *reply_nomem_msg(size_t len)
{
	static const char *const msgs[] = {
		"could not allocate the reply of up to 4096 bytes",
		"could not allocate the reply of up to 8192 bytes",
		"could not allocate the reply of up to 16384 bytes",
		"could not allocate the reply of up to 32768 bytes",
		"could not allocate the reply of up to 65536 bytes",
		"could not allocate the reply of up to 131072 bytes",
		"could not allocate the reply of up to 262144 bytes",
		"could not allocate the reply of up to 524288 bytes",
		"could not allocate the reply of up to 1048576 bytes",
	};
	unsigned int i = 0;

	while (i < ARRAY_SIZE(msgs) - 1 && len > (4096UL << i))
		i++;
	return msgs[i];
}

/* tdb is recovering (or waits for its supervisor, require_supervisor):
 * -EAGAIN, saying so in the extended ack. */
static int refuse(struct netlink_ext_ack *extack)
{
	const char *msg = NULL;
	int err = tdbk_sup_refuse(NULL, &msg);

	if (err) {
		count_refused();
		if (extack)
			extack->_msg = msg;
	}
	return err;
}

/* --- acks held for durability -------------------------------------------- */

/* TDB_IOC_SUP_DURABLE moved, or the supervisor left (sup.c): every
 * waiting doit looks again. */
void tdbk_genl_durable(void)
{
	if (wq_has_sleeper(&durable_wq))
		wake_up_all(&durable_wq);
}

void tdbk_genl_held_stats(u64 *held, u64 *timed_out)
{
	*held = atomic64_read(&waiting_now);
	*timed_out = atomic64_read(&waits_timed_out);
}

/*
 * Sync always: the answer to a change logged as lsn waits until it is
 * durable (dev.c's held answers, here in the sender's doit).  0 when it
 * is (or need not be); else the change is applied but its answer says
 * it is not durable: -ETIMEDOUT at the client deadline, -ECANCELED on a
 * fatal signal (not -EINTR: netlink_rcv_skb() sends no ack at all for
 * that).  Called with no lock held.
 */
static bool must_wait(u64 lsn)
{
	return lsn && lsn != U64_MAX &&
	       tdbk_sup_sync() == TDB_SUP_SYNC_ALWAYS &&
	       lsn > tdbk_log_durable_lsn();
}

/* Under gc->lock: when the wait of this message of skb must end (the
 * datagram's end, set by its first message that waits). */
static unsigned long wait_end(struct genl_client *gc,
			      const struct sk_buff *skb)
{
	unsigned int off = (unsigned int)(skb->data - skb->head);
	u32 ms = min_t(u32, tdbk_sup_deadline_ms(), TDBK_GENL_WAIT_MAX_MS);

	if (gc->wait_skb != skb || off <= gc->wait_off) {
		gc->wait_skb = skb;
		gc->wait_end = jiffies + msecs_to_jiffies(ms);
	}
	gc->wait_off = off;
	return gc->wait_end;
}

static int wait_durable(u64 lsn, unsigned long end,
			struct netlink_ext_ack *extack)
{
	long left = (long)(end - jiffies);

	if (!must_wait(lsn))
		return 0;
	/* > 0 only with the condition true: durable in time */
	atomic64_inc(&waiting_now);
	left = left <= 0 ? 0 :
	       wait_event_killable_timeout(durable_wq,
					   lsn <= tdbk_log_durable_lsn() ||
					   READ_ONCE(genl_going), left);
	atomic64_dec(&waiting_now);
	if (left > 0 && lsn <= tdbk_log_durable_lsn())
		return 0;
	if (left < 0) {
		if (extack)
			extack->_msg = "the change is applied but not yet "
				       "durable: the wait for it was ended by "
				       "a fatal signal";
		return -ECANCELED;
	}
	atomic64_inc(&waits_timed_out);
	if (extack)
		extack->_msg = READ_ONCE(genl_going) ?
			"the change is applied but not yet durable: tdb.ko "
			"is being unloaded" :
			tdbk_sup_attached() ?
			"the change is applied but not yet durable: the "
			"supervisor (tdbd) did not report it durable within "
			"the client deadline" :
			"the change is applied but not yet durable: no "
			"supervisor (tdbd) is attached";
	return -ETIMEDOUT;
}

static int tdbk_genl_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct reply_sink rs = {
		.s = { .reserve = reply_reserve, .commit = reply_commit },
		.portid = info->snd_portid,
	};
	struct tdb_proto_extack ext = { NULL };
	struct tdbo_dump *dump = NULL;
	struct tdbo_out res;
	struct genl_client *gc;
	struct tdb_proto_msg *m;
	unsigned long end = 0;
	int err;

	m = kmalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		count_refused();
		return -ENOMEM;
	}
	err = parse(info->nlhdr, m, info->extack);
	if (err) {
		count_refused();
		goto out;
	}
	err = refuse(info->extack);
	if (err)
		goto out;
	if (m->cmd == TDB_CMD_TABLE_MAP) {
		/* A map is pages of the device file: nothing to map here
		 * (and no reader slot to wait for). */
		count_refused();
		if (info->extack)
			info->extack->_msg = "table maps are for /dev/tdb "
					     "clients (generic netlink reads "
					     "with GET)";
		err = -EOPNOTSUPP;
		goto out;
	}
	gc = client_get(skb, &err);
	if (!gc) {
		count_refused();
		goto out;
	}
	mutex_lock(&gc->lock);
	/*
	 * ext.msg may be a text the owner built in gc's client (a key, a
	 * version).  The netlink core copies it into the ack after we
	 * return, still inside this sendmsg(): the socket's file is held
	 * by the call, so its release (which frees gc) cannot come before.
	 * Another thread's request on the same socket may rewrite the text
	 * meanwhile (a garbled message, never out of bounds: the buffer
	 * always ends in a NUL).
	 */
	err = tdbo_exec(gc->tc, m, &rs.s, &ext, &res);
	dump = res.dump;
	if (err >= 0 && must_wait(res.lsn))
		end = wait_end(gc, skb);
	mutex_unlock(&gc->lock);
	if (dump) {
		/* Dump commands come through start/dumpit, never here. */
		WARN_ON_ONCE(1);
		mutex_lock(&gc->lock);
		tdbo_dump_free(dump);
		mutex_unlock(&gc->lock);
		if (!err)
			err = -EIO;
	}
	client_put(gc);
	if (err >= 0 && !dump) {
		/* the reply, if any, stays unsent until then */
		int werr = wait_durable(res.lsn, end, info->extack);

		if (werr) {
			err = werr;
			goto out;
		}
	}
	if (err < 0 && rs.nomem) {
		/* Ours, not the owner's "no room": say what failed. */
		if (info->extack)
			info->extack->_msg = reply_nomem_msg(rs.nomem);
		err = -ENOMEM;
		goto out;
	}
	if (err < 0) {
		set_extack(info->extack, info->nlhdr, &ext);
		goto out;
	}
	if (rs.skb && rs.skb->len) {
		err = genlmsg_unicast(genl_info_net(info), rs.skb,
				      info->snd_portid);
		rs.skb = NULL;
		goto out;
	}
	if (tdb_proto_cmd_is_ack(m->cmd)) {
		/* netlink acks (NLM_F_ACK); a cookie rides along. */
		struct tdb_proto_extack ack = { .cookie_len = ext.cookie_len };

		if (ack.cookie_len <= TDB_PROTO_COOKIE_MAX)
			memcpy(ack.cookie, ext.cookie, ack.cookie_len);
		else
			ack.cookie_len = 0;
		set_extack(info->extack, info->nlhdr, &ack);
		err = 0;
		goto out;
	}
	/* A reply command must be answered: it was not. */
	if (info->extack)
		info->extack->_msg = rs.skb ? "the reply was not written"
					    : "out of memory for the reply";
	err = rs.skb ? -EIO : -ENOMEM;
out:
	kfree_skb(rs.skb);
	kfree(m);
	return err;
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

static void *null_reserve(struct tdbo_sink *s, size_t len)
{
	return NULL;
}

static void null_commit(struct tdbo_sink *s, void *p, size_t len)
{
}

static struct tdbo_sink null_sink = {
	.reserve = null_reserve,
	.commit = null_commit,
};

static int tdbk_genl_start(struct netlink_callback *cb)
{
	struct tdb_proto_extack ext = { NULL };
	struct tdbo_dump *dump = NULL;
	struct tdbo_out res;
	struct genl_dump *gd;
	struct tdb_proto_msg *m;
	int err;

	m = kmalloc(sizeof(*m), GFP_KERNEL);
	gd = kzalloc(sizeof(*gd), GFP_KERNEL);
	if (!m || !gd) {
		count_refused();
		err = -ENOMEM;
		goto fail;
	}
	err = parse(cb->nlh, m, cb->extack);
	if (err) {
		count_refused();
		goto fail;
	}
	err = refuse(cb->extack);
	if (err)
		goto fail;
	gd->gc = client_get(cb->skb, &err);
	if (!gd->gc) {
		count_refused();
		goto fail;
	}
	mutex_lock(&gd->gc->lock);
	if (gd->gc->ndumps >= TDBK_GENL_MAX_DUMPS) {
		count_refused();
		ext.msg = "too many dumps in progress on this connection (8)";
		err = -EBUSY;
	} else {
		/* Parts go through dumpit: exec only starts the dump. */
		err = tdbo_exec(gd->gc->tc, m, &null_sink, &ext, &res);
		dump = res.dump;
		if (!err && !dump) {
			ext.msg = "the dump was not started";
			err = -EIO;
		}
		if (!err)
			gd->gc->ndumps++;
	}
	mutex_unlock(&gd->gc->lock);
	if (err) {
		set_extack(cb->extack, cb->nlh, &ext);
		client_put(gd->gc);
		goto fail;
	}
	gd->d = dump;
	cb->args[0] = (long)gd;
	kfree(m);
	return 0;
fail:
	kfree(gd);
	kfree(m);
	return err;
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
	return 0;
}

void tdbk_genl_exit(void)
{
	struct genl_client *gc;
	struct hlist_node *tmp;
	unsigned int bkt;

	tdbo_owner_on_change(genl_owner, NULL, NULL);
	/* Changes waiting for durability end now (-ETIMEDOUT), or the
	 * unregistration below would wait for them with cb_lock queued. */
	WRITE_ONCE(genl_going, true);
	wake_up_all(&durable_wq);
	/* No doit runs after this; dumps hold a module reference, so none
	 * is left when the module goes. */
	genl_unregister_family(&tdbk_family);
	netlink_unregister_notifier(&genl_nb);
	mutex_lock(&clients_lock);
	hash_for_each_safe(genl_clients, bkt, tmp, gc, node) {
		hash_del(&gc->node);
		gc->hashed = false;
		client_put(gc);
	}
	mutex_unlock(&clients_lock);
	genl_owner = NULL;
}
