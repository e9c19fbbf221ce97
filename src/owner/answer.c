/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * answer.c - the one-answer rule, for every transport that builds its
 * own answers (tdbd's rings and socket, tdb.ko's /dev/tdb; generic
 * netlink's acks, errors and NLMSG_DONE are built by the kernel's
 * netlink core from what genl.c returns, by the same rule).
 *
 * Every request gets exactly one answer (include/tdb/proto.h):
 *  - the owner's reply, written into the sink by tdbo_exec(), or
 *  - a dump's parts, then NLMSG_DONE with the run's result
 *    (tdbo_answer_status(..., done = true)), or
 *  - NLMSG_ERROR: an error, or an ack (error 0) with the extended ack's
 *    cookie if any (tdbo_answer_status(..., done = false)).
 * tdbo_answer_owed() says which of the last two a request still needs
 * once tdbo_exec() returned; what the transport does itself in between
 * (tdbd holds an ack until the change's log record is durable, passes a
 * feed's descriptor with WATCH's ack, runs a big commit elsewhere)
 * changes when the answer goes, never how many.
 */
#include "internal.h"

bool tdbo_answer_owed(int err, bool replied, const struct tdbo_out *res)
{
	if (err < 0)
		return true;            /* the error */
	if (res->dump || res->txn)
		return false;           /* NLMSG_DONE, or the commit's answer,
					 * later */
	return !replied;                /* an ack, unless a reply went */
}

int tdbo_answer_status(struct tdbo_sink *out, const struct nlmsghdr *req,
		       int err, const struct tdb_proto_extack *ext, bool done)
{
	void *p = out->reserve(out, TDB_PROTO_ERROR_MAX);
	long n;

	if (!p)
		return -ENOBUFS;
	n = done ? tdb_proto_done(p, TDB_PROTO_ERROR_MAX, req, err, ext) :
		   tdb_proto_error(p, TDB_PROTO_ERROR_MAX, req, err, ext);
	if (n < 0) {
		/* an errno out of range from below us: still one answer */
		tdbp_log(TDBP_LOG_WARNING, "an answer with a bad errno %d "
			 "goes out as EIO", err);
		n = done ? tdb_proto_done(p, TDB_PROTO_ERROR_MAX, req, -EIO,
					  NULL) :
			   tdb_proto_error(p, TDB_PROTO_ERROR_MAX, req, -EIO,
					   NULL);
	}
	if (n < 0)
		return (int)n;  /* cannot happen: the buffer is big enough */
	out->commit(out, p, (size_t)n);
	return 0;
}
