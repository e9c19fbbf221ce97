/* SPDX-License-Identifier: MIT */
/*
 * tdb/proto.h - the tdb wire protocol (stable ABI; TDB_PROTO_VERSION).
 *
 * Clients and the owner (tdbd, later tdb.ko) talk in netlink messages of
 * one generic-netlink-style family.  The same bytes travel over the
 * shared rings (tdb/ring.h), over AF_UNIX to tdbd and, later, over
 * generic netlink to tdb.ko.  docs/PROTOCOL.md is the tutorial; this
 * header is the reference.
 *
 * MESSAGE LAYOUT
 *
 *   struct nlmsghdr     nlmsg_len, nlmsg_type = TDB_PROTO_FAMILY,
 *                       nlmsg_flags, nlmsg_seq, nlmsg_pid
 *   struct genlmsghdr   cmd (enum tdb_cmd), version = TDB_PROTO_VERSION,
 *                       reserved = 0
 *   attributes          struct nlattr TLVs (enum tdb_attr), each padded
 *                       to 4 bytes (NLA_ALIGN)
 *
 *  - nlmsg_len counts the whole message and is a multiple of 4; the
 *    attributes fill the payload exactly (no bytes left over).
 *  - nlmsg_type: over rings and AF_UNIX it is the fixed TDB_PROTO_FAMILY.
 *    Over generic netlink the family TDB_GENL_NAME ("tdb") gets a
 *    dynamic id from the kernel's genl controller, which takes the place
 *    of TDB_PROTO_FAMILY; every other byte is identical.
 *  - All integers are in host byte order (the protocol never leaves the
 *    host); NLA_F_NET_BYTEORDER is never set.  u64 attributes are only
 *    4-byte aligned: read them with memcpy (mnl_attr_get_u64 does).
 *  - Nested attributes (TDB_A_STAT, TDB_A_COUNTERS) have NLA_F_NESTED set
 *    in nla_type; no other attribute has it.
 *  - A message is at most TDB_PROTO_MSG_MAX bytes.  The biggest real
 *    ones are a PUT or a SCAN part with a 1 MiB value, so a ring that
 *    carries them needs max_msg >= TDB_PROTO_MSG_MAX (a data area of
 *    4 MiB or more, as max_msg <= data_size / 2).
 *
 * REQUESTS, REPLIES, NOTIFICATIONS
 *
 * Replies reuse the command number of the request; the direction is told
 * by NLM_F_REQUEST, set on every request and on nothing else.
 *
 *  - A request has NLM_F_REQUEST, NLM_F_DUMP for the dump commands
 *    (TABLE_LIST, SCAN) and only for them, and NLM_F_ACK for the commands
 *    answered by an ack (below).  No other flag is allowed.
 *  - Every request gets exactly one answer:
 *      "ack" commands:   NLMSG_ERROR with error 0 on success;
 *      "reply" commands: one message with the request's cmd, no
 *                        NLM_F_REQUEST, no NLM_F_MULTI;
 *      "dump" commands:  zero or more parts (the request's cmd,
 *                        NLM_F_MULTI), then NLMSG_DONE (NLM_F_MULTI, a
 *                        32-bit int: 0, or the negative errno that ended
 *                        the dump early, plus extack TLVs as below);
 *    and on failure, instead, an NLMSG_ERROR with a negative errno.
 *    The owner answers this way whatever NLM_F_ACK says; NLM_F_ACK is set
 *    on "ack" commands so that generic netlink, which acks only when
 *    asked, behaves the same.
 *  - Every answer carries the request's nlmsg_seq and nlmsg_pid.  A
 *    client picks its sequence numbers (e.g. counting up) and matches
 *    answers by them: answers to different requests may come in any
 *    order (a slow SCAN need not hold up a GET); the parts of one dump
 *    come in order and end with its NLMSG_DONE.  nlmsg_pid is 0 over
 *    rings and AF_UNIX; over generic netlink it is the socket's port
 *    id, as usual.
 *  - Notifications: a change feed (a TDB_RING_FEED ring) carries the
 *    changes to a watched table as PUT, DEL and TABLE_DROP messages
 *    without NLM_F_REQUEST and with no flags; nlmsg_seq is the feed's
 *    sequence number (tdb/ring.h).  Acks are never PUT/DEL/TABLE_DROP
 *    messages, so these are unambiguous.
 *
 * COMMANDS  (R = required attribute, o = optional; answer kind)
 *
 *   cmd           request                         answer  reply / part
 *   TABLE_CREATE  TABLE R, MAX_EXTENTS o, UID o,  ack
 *                 GID o, MODE o, TTL o,
 *                 MAX_BYTES o, MAX_RECORDS o,
 *                 EVICT o, TABLE_FLAGS o
 *   TABLE_DROP    TABLE R                         ack     notification: TABLE o
 *   TABLE_LIST    -                               dump    TABLE R, STAT R
 *   TABLE_STAT    TABLE R                         reply   TABLE R, STAT R
 *   GET           TABLE R, KEY R, TXN o           reply   VALUE R, VERSION o,
 *                                                         DEADLINE o
 *   PUT           TABLE R, KEY R, VALUE R,        ack     notification: KEY R,
 *                 FLAGS o, TXN o, IF_VERSION o,           VALUE R, TABLE o,
 *                 SET_VERSION o, TTL o,                   VERSION o,
 *                 DEADLINE o                              DEADLINE o
 *   DEL           TABLE R, KEY R, TXN o,          ack     notification: KEY R,
 *                 IF_VERSION o                            TABLE o, VERSION o,
 *                                                         REASON o
 *   SCAN          TABLE R, PREFIX o, LIMIT o,     dump    KEY, VALUE, CURSOR,
 *                 CURSOR o, SCAN_FLAGS o,                 VERSION, DEADLINE
 *                 FROM o, TO o, TXN o                     (SCAN below)
 *   INCR          TABLE R, KEY R, DELTA o, TXN o  reply   INT R, VERSION o
 *   EXPIRE        TABLE R, KEY R, TTL o,          reply   VERSION R,
 *                 DEADLINE o, EXPIRE_FLAGS o              DEADLINE o
 *   TOUCH         TABLE R, HASHES R               ack
 *   TXN_BEGIN     -                               reply   TXN R
 *   TXN_COMMIT    TXN R                           ack
 *   TXN_ABORT     TXN R                           ack
 *   WATCH         TABLE R, PREFIX o               ack
 *   UNWATCH       TABLE R, PREFIX o               ack
 *   STATS         -                               reply   COUNTERS R
 *   ATTACH        -                               ack     (tdbd socket only)
 *   TABLE_MAP     TABLE R                         ack     (cookie: struct
 *                                                         tdb_map_cookie)
 *
 * GET of an absent key answers NLMSG_ERROR -ENOENT.  PUT with
 * TDB_PUT_NOOVERWRITE of a present key answers -EEXIST.  Versions,
 * conditions, INCR and what a transaction guarantees: VERSIONS AND
 * CONDITIONS below.  A PUT, DEL or
 * GET with TXN acts inside that transaction (ids come from TXN_BEGIN and
 * belong to the client that began them).  WATCH starts notifications for
 * the table (keys with PREFIX only, when given) on the client's feed;
 * UNWATCH with the same TABLE and PREFIX stops them.  How a feed is
 * handed to a client belongs to the transport (tdbd, tdb.ko).
 * TABLE_MAP asks for a read-only map of the table's memory, so that the
 * client looks keys up itself (struct tdb_map_cookie at the end of this
 * file; tdb/ring.h, "Zero-copy readers"): it needs read permission
 * (-EACCES), and a transport that can hand maps out (-EOPNOTSUPP, e.g.
 * generic netlink: then read through the rings).
 *
 * ATTACH and WATCH over tdbd's Unix socket pass file descriptors with
 * the ack (SCM_RIGHTS on its first byte): ATTACH gives the client its
 * submission ring, completion ring and wake-up eventfd, WATCH the
 * table's change feed (read-only) and, in NLMSGERR_ATTR_COOKIE, the
 * feed's u32 sequence number where the watch starts.  Sent over a ring
 * they are refused
 * with -EOPNOTSUPP.  docs/PROTOCOL.md, "tdbd's socket", has the details.
 *
 * SCAN: each part is one record (KEY and VALUE) and may also carry
 * CURSOR; a part may also carry CURSOR alone.  The owner stops after
 * LIMIT records (no limit when absent) or when it bounds its work; if the
 * table may hold more, the last part carries CURSOR.  A new SCAN with
 * that CURSOR (and the same TABLE, PREFIX, FROM, TO and range flags)
 * goes on after the last record returned.  A cursor is opaque: clients
 * only hand it back; one that another scan made (another table, range or
 * flags) is refused with -EINVAL naming what differs.  Keys present for
 * the whole scan are returned exactly once; order is the owner's: hash
 * order on a hash table, key order on an ordered table.
 *
 * ORDERED TABLES.  TABLE_CREATE with TABLE_FLAGS TDB_TABLE_F_ORDERED
 * makes a table that also keeps its keys in LMDB's order (memcmp, a
 * prefix before the keys it starts), fixed at create; STAT's
 * TDB_STAT_A_TABLE_FLAGS says so.  Its SCANs walk in key order and take
 * a range: FROM (inclusive, or exclusive with TDB_SCAN_FROM_EXCL;
 * absent: the first key) to TO (exclusive, or inclusive with
 * TDB_SCAN_TO_INCL; absent: past the last), walked from the top down
 * with TDB_SCAN_REVERSE; with a PREFIX, the intersection.  FROM after TO
 * is -EINVAL; a range flag without its bound is -EINVAL.  A range on a
 * hash table is refused with -EOPNOTSUPP.
 *
 * SCAN with SCAN_FLAGS TDB_SCAN_SNAPSHOT: the dump is the table exactly
 * as it was when the owner took the request (every record present then,
 * with the value it had then, each once; nothing written later), while
 * writers go on.  It is one dump for the whole table (PREFIX and LIMIT
 * apply; CURSOR is refused with -EINVAL and no part carries one), paced
 * by the client like any dump.  The owner keeps the old value of each
 * key changed during the dump; if that grows past its bound (tdbd:
 * max-snapshot-bytes) the dump ends with NLMSG_DONE -ENOBUFS ("snapshot
 * grew past ...").  The parts of a hash table's snapshot come in no
 * particular order, an ordered table's in the walk's order (ranges and
 * reverse apply); a table dropped meanwhile still dumps as it was.
 * An owner that does not know SCAN_FLAGS refuses it (-EOPNOTSUPP), so a
 * client never mistakes a plain scan for a snapshot.
 *
 * VERSIONS AND CONDITIONS
 *
 * Every record carries a version: a u64 the owner gives each write (a
 * PUT, a DEL, an INCR, a committed transaction: all the changes of one
 * commit share one version) from one counter per owner that only goes
 * up and survives restarts, checkpoints, power cuts and tdb.ko's
 * restore.  So a key's version changes on every write and never
 * repeats for that key (a key deleted and written again gets a new,
 * higher one), and versions order the writes of one key.  0 is never a
 * version.  GET answers it (VERSION), SCAN parts and feed notifications
 * carry it (a DEL notification: the delete's version).
 *
 * Conditions on PUT and DEL (checked under the table's write lock,
 * with the change; a failed condition changes nothing):
 *   FLAGS TDB_PUT_NOOVERWRITE (= TDB_PUT_IF_ABSENT)  the key is absent,
 *                                  else -EEXIST
 *   FLAGS TDB_PUT_IF_PRESENT       the key is present, else -ENOENT
 *                                  ("no such key (if-present put)")
 *   IF_VERSION V                   the key is present at version V, else
 *                                  -ECANCELED, whose message names the
 *                                  key's version now or says it is absent
 * Inside a transaction they are checked at commit, with the rest.
 *
 * INCR adds DELTA (s64, default 1) to the key's value, read as a signed
 * 64-bit decimal integer in ASCII ("-12", "0", "42": an optional '-',
 * digits, no sign on 0, no leading zeros, no spaces, at most 20 bytes;
 * an absent key counts as 0) and stores the sum in the same form; the
 * reply carries it (INT) and the write's VERSION.  A value that is not
 * such an integer: -EDOM; a sum past the s64 range: -ERANGE; nothing is
 * changed.  Inside a transaction, INCR reads the key (it joins the read
 * set, below) and buffers a PUT of the sum; its reply carries INT only.
 *
 * Transactions are serializable (optimistic).  Every key a GET or INCR
 * in the transaction reads from the table (not from the transaction's
 * own changes), found or absent, joins its read set with the version
 * seen.  TXN_COMMIT, under the write locks of every table the
 * transaction read or wrote, checks that each key of the read set still
 * has that version (or is still absent); if one does not, nothing is
 * applied and the commit fails with -ESTALE, whose message names the
 * table and key.  A transaction with no changes commits the same way:
 * 0 means every read was of one consistent state.  A committed
 * transaction is what running it alone at its commit would give.  The
 * read set counts against the same bounds as the changes (max-txn-ops,
 * max-txn-bytes, the per-uid and total transaction memory).  A SCAN
 * with TXN (not a snapshot scan) is a range read of the transaction: it
 * reads the table as committed (a range the transaction already changed
 * is refused, -EOPNOTSUPP), and the commit walks the span it sent again
 * under the table's lock: a key added (a phantom), changed, deleted or
 * expired in it fails the commit with -ESTALE.  Each record it sends
 * counts against max-txn-ops; a commit while it still sends is -EBUSY.
 *
 * EXPIRY
 *
 * A record may have a deadline: a wall-clock time (ms since the Unix
 * epoch, the owner's CLOCK_REALTIME) from which it is absent.  A PUT
 * sets it with TTL (ms from when the owner applies it) or DEADLINE
 * (absolute), not both; a PUT with neither gets the table's default TTL
 * (TABLE_CREATE's TTL) if it has one, else no deadline: a PUT replaces
 * the deadline with the value, as Redis's SET does.  INCR keeps the
 * key's deadline (an absent key gets the table's default).  EXPIRE
 * reads or changes the deadline of a present key (-ENOENT if absent or
 * expired): with TTL or DEADLINE it sets it, with EXPIRE_FLAGS
 * TDB_EXPIRE_PERSIST it clears it, with none of them it only reads
 * (read permission; the others need write permission and are a write:
 * a new version, logged and sent to watchers as a PUT of the same value
 * with the new deadline); its reply carries the key's VERSION and
 * DEADLINE (absent: none).  GET replies, SCAN parts and PUT
 * notifications carry DEADLINE when the record has one.
 *
 * From its deadline on, a record is absent to every read: GET (ring,
 * generic netlink, zero-copy maps: a mapped reader compares the
 * deadline with its own clock), SCAN and snapshot SCAN, dumps, the
 * conditions of PUT/DEL and a transaction's reads and commit checks
 * (a key read before its deadline and committed after it fails
 * -ESTALE).  The owner removes expired records in the background (a
 * bounded sweep) as ordinary logged changes, each sent to watchers as
 * a DEL with REASON TDB_REASON_EXPIRED, so restarts and power cuts
 * never bring one back.  TTL is 1..TDB_TTL_MAX: 0 is -EINVAL, more
 * is -ERANGE; a DEADLINE beyond now + TDB_TTL_MAX is -ERANGE, one
 * already past writes a record no read sees (removed by the sweep).
 * The wall clock may step: a step forward expires records early, a
 * step back keeps them longer; deadlines mean the same after a restart.
 *
 * EVICTION
 *
 * TABLE_CREATE may bound a table by the bytes of its keys and values
 * (MAX_BYTES: TABLE_STAT's BYTES_USED) and/or by its records
 * (MAX_RECORDS), and say what a write that would take it past a bound
 * does (EVICT; EVICT without a bound is -EINVAL):
 *   TDB_EVICT_REFUSE  the write fails with -ENOSPC naming the bound
 *                     (the default)
 *   TDB_EVICT_LRU     records least recently used are removed
 *   TDB_EVICT_LFU     records least frequently used are removed
 *   TDB_EVICT_TTL     records soonest to expire are removed (only
 *                     records with a deadline: with none left, the
 *                     write fails -ENOSPC as under REFUSE)
 * "Used" is a write, a read the owner serves (GET over the rings or
 * generic netlink), or a read through a zero-copy map that the client
 * reports with TOUCH: HASHES holds the keys' 64-bit hashes (xxh64 with
 * the region header's seed, as the map's lookup computes them); the
 * owner counts a use of each record of the table whose key has such a
 * hash (a record that only shares the 24 bits of the index's tag may be
 * counted too: a hint, never a change).  TOUCH needs read permission
 * and changes nothing a reader sees; the client library sends it for a
 * sample of its mapped hits, batched.  The policies are approximate, as Redis's
 * are: each eviction samples a few records and removes the best
 * candidate among them (LFU counts uses on a logarithmic scale that
 * decays with time).  Evictions run after the write that needed them,
 * under the same table lock, so no one sees the table past its bound;
 * the record just written is never the one evicted.  Each eviction is
 * a logged change sent to watchers as a DEL with REASON
 * TDB_REASON_EVICTED and counted (TABLE_STAT EVICTED, STATS EVICTED).
 *
 * SET_VERSION (the supervisor's restore into tdb.ko only; anyone else
 * gets -EPERM): the PUT stores the record with that version, and the
 * owner's counter is raised past it.
 *
 * ATTRIBUTES  (types; payload lengths in bytes)
 *
 *   TDB_A_PAD          empty; padding before a u64 (may repeat; ignored)
 *   TDB_A_TABLE        NUL-terminated string: 1..TDB_NAME_MAX bytes, then
 *                      one NUL (payload 2..65); no space, control
 *                      character (< 0x21, 0x7f) or '/'; no inner NUL.
 *                      TABLE_CREATE takes only safe names (NAMES below)
 *   TDB_A_KEY          binary, TDB_KEY_MIN..TDB_KEY_MAX (1..4096)
 *   TDB_A_VALUE        binary, 0..TDB_VALUE_MAX (1 MiB), in fragments:
 *                      see VALUES below
 *   TDB_A_FLAGS        u32: PUT flags (TDB_PUT_*); unknown bits refused
 *   TDB_A_TXN          u64, not 0: transaction id
 *   TDB_A_PREFIX       binary, 0..TDB_KEY_MAX: keys starting with these
 *                      bytes (empty = all keys)
 *   TDB_A_LIMIT        u32, >= 1: at most this many records
 *   TDB_A_CURSOR       binary, 1..TDB_CURSOR_MAX, opaque
 *   TDB_A_STAT         nested, enum tdb_stat_attr: one table's figures
 *   TDB_A_COUNTERS     nested, enum tdb_counter_attr: the owner's figures
 *   TDB_A_MAX_EXTENTS  u32, 1..TDB_EXTENTS_MAX: the table's size cap in
 *                      2 MiB extents (default TDB_EXTENTS_DEFAULT)
 *   TDB_A_UID          u32, not (u32)-1: the table's owner
 *   TDB_A_GID          u32, not (u32)-1: the table's group
 *   TDB_A_MODE         u32, permission bits only (mask 0777)
 *   TDB_A_SCAN_FLAGS   u32: SCAN flags (TDB_SCAN_*); unknown bits refused
 *   TDB_A_VERSION      u64, not 0: a record's version (answers only)
 *   TDB_A_IF_VERSION   u64, not 0: PUT/DEL only if the key is at it
 *   TDB_A_DELTA        s64 (u64 payload): INCR's addend
 *   TDB_A_INT          s64 (u64 payload): INCR's result (answers only)
 *   TDB_A_SET_VERSION  u64, not 0: the supervisor's restore (above)
 *   TDB_A_TTL          u64, 1..TDB_TTL_MAX: ms to live (EXPIRY above)
 *   TDB_A_DEADLINE     u64, not 0: ms since the epoch (EXPIRY above)
 *   TDB_A_EXPIRE_FLAGS u32: EXPIRE flags (TDB_EXPIRE_*); unknown bits
 *                      refused
 *   TDB_A_REASON       u32: TDB_REASON_* (notifications only)
 *   TDB_A_MAX_BYTES    u64, not 0: a table's bound (EVICTION below)
 *   TDB_A_MAX_RECORDS  u64, not 0: a table's bound (EVICTION below)
 *   TDB_A_EVICT        u32, TDB_EVICT_*: what a full table does
 *   TDB_A_HASHES       binary, 8..8 * TDB_TOUCH_MAX bytes, a multiple of
 *                      8: u64 key hashes (TOUCH, EVICTION below)
 *   TDB_A_TABLE_FLAGS  u32: TDB_TABLE_F_* (TABLE_CREATE); unknown bits
 *                      refused
 *   TDB_A_FROM         binary, TDB_KEY_MIN..TDB_KEY_MAX: a range's start
 *   TDB_A_TO           binary, TDB_KEY_MIN..TDB_KEY_MAX: a range's end
 *
 * Each attribute appears at most once per message (nest), except PAD and
 * the fragments of one VALUE.  The type and limits of an attribute are
 * the same in every command that takes it.
 *
 * VALUES: a netlink attribute holds at most 65531 bytes (nla_len is
 * 16 bits), so a value is sent as consecutive TDB_A_VALUE attributes
 * whose payloads, concatenated, are the value.  Every fragment but the
 * last holds exactly TDB_VALUE_FRAG bytes; the last holds
 * 1..TDB_VALUE_FRAG bytes (or 0 when it is the only one: the empty
 * value); a fragment shorter than TDB_VALUE_FRAG ends the value.  No
 * other attribute comes between fragments.  So a value of n bytes always
 * has the same encoding: max(1, ceil(n / TDB_VALUE_FRAG)) fragments.
 *
 * NAMES
 *
 * A new table's name (TDB_A_TABLE of a TABLE_CREATE request) is made of
 * ASCII letters, digits, '_', '.', '-' and ':' only, and does not start
 * with '-' or '.' (so it is never an option, a hidden file or "..", and
 * prints as it is in a terminal or a log).  tdb_name_check() below is
 * the rule; the codec refuses any other name in a TABLE_CREATE with
 * -EINVAL (or -ENAMETOOLONG) and its text, at the attribute's offset.
 * Tables made before the rule keep their names: every other command, and
 * every answer, takes any name the looser rule of TDB_A_TABLE allows
 * (bytes >= 0x80 included), so such a table is still read, listed and
 * dropped by its name.  Print a name escaped: it came from a client.
 *
 * ERRORS
 *
 * A failed request is answered by NLMSG_ERROR: struct nlmsgerr holding a
 * negative errno and the request's struct nlmsghdr (the request's
 * payload is not echoed: NLM_F_CAPPED is set), then, with NLM_F_ACK_TLVS,
 * attributes of enum nlmsgerr_attrs:
 *   NLMSGERR_ATTR_MSG       NUL-terminated text saying what was wrong
 *                           (at most TDB_PROTO_EXTACK_MAX bytes before
 *                           the NUL)
 *   NLMSGERR_ATTR_OFFS      u32: offset of the attribute at fault, from
 *                           the first byte of the request's nlmsghdr
 *   NLMSGERR_ATTR_MISS_TYPE u32: a required attribute that was missing
 *                           (missing inside a nest: OFFS is the nest's
 *                           offset, MISS_TYPE the type within it)
 * An ack is the same message with error 0 and no attributes.  An error
 * answer is at most TDB_PROTO_ERROR_MAX bytes.  Receivers also accept an
 * NLMSG_ERROR that echoes the request (NLM_F_CAPPED clear), as generic
 * netlink sends by default.
 *
 * The validator's errnos (the engine uses the same ones for the same
 * faults, so a client sees one errno whichever side caught it):
 *   -EBADMSG          framing: lengths that disagree (nlmsg_len,
 *                     nla_len, bytes left over), a missing genlmsghdr
 *   -EMSGSIZE         a message over TDB_PROTO_MSG_MAX
 *   -EPROTONOSUPPORT  genlmsghdr.version is not one the owner speaks
 *   -EOPNOTSUPP       an unknown nlmsg_type, cmd, attribute type (in a
 *                     request) or flag bit
 *   -EINVAL           bad nlmsg_flags, missing, duplicate or misplaced
 *                     attributes, wrong lengths or values, bad names,
 *                     an empty key
 *   -E2BIG            a key, prefix or value over its limit
 *   -ENAMETOOLONG     a table name over TDB_NAME_MAX
 * A message too short for its nlmsghdr, or whose nlmsg_len is beyond the
 * bytes received, cannot be answered (there is no trustworthy header to
 * answer): on a ring that is a protocol violation and ends the client's
 * connection.  Everything else gets an NLMSG_ERROR.
 *
 * VERSIONS
 *
 * genlmsghdr.version is TDB_PROTO_VERSION (1; 0 is never valid).  The
 * owner answers a request in the request's version, and refuses a
 * version it does not speak with -EPROTONOSUPPORT and a message; a client
 * that gets that may retry with an older version.  Within one version
 * the ABI only grows: new commands, new optional request attributes and
 * new reply attributes get new numbers; nothing is renumbered, removed
 * or given a new meaning.  An owner refuses what it does not know in a
 * request (-EOPNOTSUPP), so a client learns its request was not
 * understood rather than half-done; a client skips attribute types it
 * does not know in answers and notifications (top level and nested), so
 * the owner may add figures without a new version.  Anything else
 * (a new required attribute, a changed answer) needs a new version.
 */
#ifndef TDB_PROTO_H
#define TDB_PROTO_H

#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>
#include <linux/errno.h>

/* nlmsg_type of every tdb message over rings and AF_UNIX (>=
 * NLMSG_MIN_TYPE, so it never collides with NLMSG_NOOP/ERROR/DONE). */
#define TDB_PROTO_FAMILY   0x20
#define TDB_PROTO_VERSION  1
/* The generic netlink family name of tdb.ko (dynamic id). */
#define TDB_GENL_NAME      "tdb"

/* Limits (the engine's: src/core/core.h). */
#define TDB_KEY_MIN          1u
#define TDB_KEY_MAX          4096u
#define TDB_VALUE_MAX        (1u << 20)        /* 1 MiB */
#define TDB_NAME_MAX         64u               /* bytes, without the NUL */
#define TDB_EXTENTS_MAX      32768u
#define TDB_EXTENTS_DEFAULT  512u
#define TDB_CURSOR_MAX       4352u             /* TDB_KEY_MAX + 256 */
#define TDB_VALUE_FRAG       65528u            /* bytes per VALUE fragment */
#define TDB_VALUE_FRAGS_MAX  17u               /* ceil(1 MiB / 65528) */
#define TDB_PROTO_MSG_MAX    ((1u << 20) + (16u << 10))
#define TDB_PROTO_EXTACK_MAX 255u              /* message text, bytes */
#define TDB_PROTO_ERROR_MAX  512u              /* an NLMSG_ERROR answer */

/*
 * The rule for a new table name (NAMES above): 0 if the len bytes at
 * name are one, else -EINVAL or -ENAMETOOLONG with *why (if not NULL)
 * set to a static text naming the rule that was broken.  Bytes are
 * classified by value, never by locale.
 */
static inline int tdb_name_check(const char *name, unsigned long len,
				 const char **why)
{
	const char *msg = 0;
	unsigned long i;

	if (len == 0)
		msg = "table name is empty";
	else if (len > TDB_NAME_MAX)
		msg = "table name is longer than 64 bytes";
	else if (name[0] == '-' || name[0] == '.')
		msg = "table name starts with '-' or '.'";
	for (i = 0; !msg && i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		    c == '-' || c == ':')
			continue;
		if (c < 0x20 || c == 0x7f)
			msg = "table name has a control character "
			      "(allowed: letters, digits, '_', '.', '-', ':')";
		else if (c == ' ')
			msg = "table name has a space "
			      "(allowed: letters, digits, '_', '.', '-', ':')";
		else if (c >= 0x80)
			msg = "table name has a byte over 0x7f, not ASCII "
			      "(allowed: letters, digits, '_', '.', '-', ':')";
		else
			msg = "table name has a punctuation character other "
			      "than '_', '.', '-', ':'";
	}
	if (!msg)
		return 0;
	if (why)
		*why = msg;
	return len > TDB_NAME_MAX ? -ENAMETOOLONG : -EINVAL;
}

/*
 * Bytes a peer sent (a table name, a key, a cursor) as tdb's programs
 * show them in a message or a log line, so that nothing a client chose
 * reaches a terminal raw: printable ASCII as it is, '\\' doubled, any
 * other byte as \xHH.  Writes at most size - 1 characters and a NUL
 * (stopping before an escape that would not fit); returns out.
 */
static inline char *tdb_escape(char *out, unsigned long size,
			       const void *p, unsigned long n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = (const unsigned char *)p;
	unsigned long i, o = 0;

	if (!size)
		return out;
	for (i = 0; i < n; i++) {
		unsigned char c = b[i];
		unsigned long need = c == '\\' ? 2 :
				     c >= 0x20 && c < 0x7f ? 1 : 4;

		if (o + need >= size)
			break;
		if (need == 1) {
			out[o++] = (char)c;
		} else if (need == 2) {
			out[o++] = '\\';
			out[o++] = '\\';
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return out;
}

enum tdb_cmd {
	TDB_CMD_UNSPEC       = 0,     /* never valid */
	TDB_CMD_TABLE_CREATE = 1,
	TDB_CMD_TABLE_DROP   = 2,
	TDB_CMD_TABLE_LIST   = 3,     /* dump */
	TDB_CMD_TABLE_STAT   = 4,
	TDB_CMD_GET          = 5,
	TDB_CMD_PUT          = 6,
	TDB_CMD_DEL          = 7,
	TDB_CMD_SCAN         = 8,     /* dump */
	TDB_CMD_TXN_BEGIN    = 9,
	TDB_CMD_TXN_COMMIT   = 10,
	TDB_CMD_TXN_ABORT    = 11,
	TDB_CMD_WATCH        = 12,
	TDB_CMD_UNWATCH      = 13,
	TDB_CMD_STATS        = 14,
	TDB_CMD_ATTACH       = 15,    /* tdbd socket only: map rings */
	TDB_CMD_TABLE_MAP    = 16,    /* a read-only map of a table */
	TDB_CMD_INCR         = 17,    /* add to an integer value */
	TDB_CMD_EXPIRE       = 18,    /* a key's deadline: read, set, clear */
	TDB_CMD_TOUCH        = 19,    /* keys read through a map: uses */
	TDB_CMD_RESTORE_BULK = 20,    /* the supervisor's restore: many
				       * records in one request (RECORDS) */
	__TDB_CMD_MAX,
	TDB_CMD_MAX = __TDB_CMD_MAX - 1
};

enum tdb_attr {
	TDB_A_UNSPEC      = 0,        /* never valid */
	TDB_A_PAD         = 1,        /* empty */
	TDB_A_TABLE       = 2,        /* NUL-terminated string */
	TDB_A_KEY         = 3,        /* binary */
	TDB_A_VALUE       = 4,        /* binary, fragments */
	TDB_A_FLAGS       = 5,        /* u32, TDB_PUT_* */
	TDB_A_TXN         = 6,        /* u64 */
	TDB_A_PREFIX      = 7,        /* binary */
	TDB_A_LIMIT       = 8,        /* u32 */
	TDB_A_CURSOR      = 9,        /* binary, opaque */
	TDB_A_STAT        = 10,       /* nested, enum tdb_stat_attr */
	TDB_A_COUNTERS    = 11,       /* nested, enum tdb_counter_attr */
	TDB_A_MAX_EXTENTS = 12,       /* u32 */
	TDB_A_UID         = 13,       /* u32 */
	TDB_A_GID         = 14,       /* u32 */
	TDB_A_MODE        = 15,       /* u32 */
	TDB_A_SCAN_FLAGS  = 16,       /* u32, TDB_SCAN_* */
	TDB_A_VERSION     = 17,       /* u64: a record's version */
	TDB_A_IF_VERSION  = 18,       /* u64: condition of PUT/DEL */
	TDB_A_DELTA       = 19,       /* s64: INCR's addend */
	TDB_A_INT         = 20,       /* s64: INCR's result */
	TDB_A_SET_VERSION = 21,       /* u64: the supervisor's restore */
	TDB_A_TTL         = 22,       /* u64: ms to live (PUT, EXPIRE), or a
				       * table's default (TABLE_CREATE) */
	TDB_A_DEADLINE    = 23,       /* u64: ms since the epoch when the
				       * record expires */
	TDB_A_EXPIRE_FLAGS = 24,      /* u32, TDB_EXPIRE_* */
	TDB_A_REASON      = 25,       /* u32: why a DEL notification's key
				       * went (TDB_REASON_*) */
	TDB_A_MAX_BYTES   = 26,       /* u64: a table's bound on its key and
				       * value bytes (TABLE_CREATE) */
	TDB_A_MAX_RECORDS = 27,       /* u64: a table's bound on records */
	TDB_A_EVICT       = 28,       /* u32: what a bounded table does when
				       * full (TDB_EVICT_*) */
	TDB_A_HASHES      = 29,       /* binary: u64 key hashes (TOUCH) */
	TDB_A_TABLE_FLAGS = 30,       /* u32: TDB_TABLE_F_* (TABLE_CREATE) */
	TDB_A_FROM        = 31,       /* binary key: a range's start (SCAN) */
	TDB_A_TO          = 32,       /* binary key: a range's end (SCAN) */
	TDB_A_RECORDS     = 33,       /* binary: packed records
				       * (RESTORE_BULK, below) */
	__TDB_A_MAX,
	TDB_A_MAX = __TDB_A_MAX - 1
};

/* TDB_A_FLAGS of PUT.  Bits not defined here are reserved: refused with
 * -EOPNOTSUPP until a later revision gives them a meaning. */
#define TDB_PUT_NOOVERWRITE  (1u << 0)   /* -EEXIST if the key is present */
#define TDB_PUT_IF_ABSENT    TDB_PUT_NOOVERWRITE
#define TDB_PUT_IF_PRESENT   (1u << 1)   /* -ENOENT if the key is absent */
#define TDB_PUT_FLAGS_ALL    (TDB_PUT_NOOVERWRITE | TDB_PUT_IF_PRESENT)

/* Expiry (EXPIRY below): a TTL is 1..TDB_TTL_MAX ms (10 years of 365
 * days); a deadline is at most that far ahead of the owner's clock. */
#define TDB_TTL_MAX          315360000000ull
/* TOUCH's HASHES: at most this many (8 bytes each). */
#define TDB_TOUCH_MAX        512u
/* TDB_A_EXPIRE_FLAGS of EXPIRE.  Unknown bits are refused (-EOPNOTSUPP). */
#define TDB_EXPIRE_PERSIST   (1u << 0)   /* clear the key's deadline */
#define TDB_EXPIRE_FLAGS_ALL TDB_EXPIRE_PERSIST
/* TDB_A_REASON of a DEL notification (absent: a client's DEL). */
#define TDB_REASON_EXPIRED   1u          /* its deadline passed */
#define TDB_REASON_EVICTED   2u          /* its bounded table was full */
/* TDB_A_EVICT of TABLE_CREATE (EVICTION below). */
#define TDB_EVICT_REFUSE     0u          /* writes past the bound fail */
#define TDB_EVICT_LRU        1u          /* least recently used goes */
#define TDB_EVICT_LFU        2u          /* least frequently used goes */
#define TDB_EVICT_TTL        3u          /* soonest to expire goes */
#define TDB_EVICT_MAX        TDB_EVICT_TTL

/* TDB_A_SCAN_FLAGS of SCAN.  Unknown bits are refused (-EOPNOTSUPP). */
#define TDB_SCAN_SNAPSHOT    (1u << 0)   /* the table as of the request */
#define TDB_SCAN_FROM_EXCL   (1u << 1)   /* FROM itself is not in the range */
#define TDB_SCAN_TO_INCL     (1u << 2)   /* TO itself is */
#define TDB_SCAN_REVERSE     (1u << 3)   /* from the range's top down */
#define TDB_SCAN_FLAGS_ALL   (TDB_SCAN_SNAPSHOT | TDB_SCAN_FROM_EXCL | \
			      TDB_SCAN_TO_INCL | TDB_SCAN_REVERSE)

/*
 * TDB_A_RECORDS of RESTORE_BULK: the supervisor's restore into tdb.ko,
 * many records in one request answered by one ack.  One attribute of
 * TDB_RESTORE_BULK_MAX bytes at most (a netlink attribute's length is a
 * u16), holding 1 or more records back to back, no padding, host byte
 * order like every tdb integer:
 *
 *     u32 klen   TDB_KEY_MIN..TDB_KEY_MAX
 *     u32 vlen   0.., the record must fit in the attribute
 *     u64 version   not 0 (SET_VERSION's rule)
 *     u64 deadline  0: none, else DEADLINE's rule (ms since the epoch)
 *     key bytes, value bytes
 *
 * Each record is restored exactly as a PUT with SET_VERSION (and
 * DEADLINE if not 0) would restore it, in order; the first failure
 * stops the batch (the records before it stay) and its ack names the
 * record's index.  Only the supervisor's file may send it (-EPERM).  A
 * record larger than fits goes as a PUT.
 */
#define TDB_RESTORE_REC_HDR   24u
#define TDB_RESTORE_BULK_MAX  65528u     /* = TDB_VALUE_FRAG */

/* TDB_A_TABLE_FLAGS of TABLE_CREATE (and STAT).  Unknown bits are
 * refused (-EOPNOTSUPP).  A table's flags are fixed at create. */
#define TDB_TABLE_F_ORDERED  (1u << 0)   /* keys also kept in key order:
					  * SCAN takes ranges (FROM, TO) */
#define TDB_TABLE_F_ALL      TDB_TABLE_F_ORDERED

/* Inside TDB_A_STAT: one table (tdbe_table_stat and its owner). */
enum tdb_stat_attr {
	TDB_STAT_A_UNSPEC          = 0,
	TDB_STAT_A_PAD             = 1,   /* empty */
	TDB_STAT_A_RECORDS         = 2,   /* u64, R: keys present */
	TDB_STAT_A_BYTES_USED      = 3,   /* u64, R: key + value bytes */
	TDB_STAT_A_BYTES_ALLOCATED = 4,   /* u64, R: allocator bytes in use */
	TDB_STAT_A_BYTES_PENDING   = 5,   /* u64: freed, awaiting readers */
	TDB_STAT_A_EXTENTS         = 6,   /* u32, R: 2 MiB extents backed */
	TDB_STAT_A_MAX_EXTENTS     = 7,   /* u32, R: the cap */
	TDB_STAT_A_PAGE_SIZE       = 8,   /* u64, R: 2097152 or 4096 */
	TDB_STAT_A_INDEX_NODES     = 9,   /* u64: interior trie nodes */
	TDB_STAT_A_INDEX_BUCKETS   = 10,  /* u64: trie buckets */
	TDB_STAT_A_UID             = 11,  /* u32: owner */
	TDB_STAT_A_GID             = 12,  /* u32: group */
	TDB_STAT_A_MODE            = 13,  /* u32: permission bits */
	TDB_STAT_A_STATE           = 14,  /* u32: TDB_TABLE_* (absent = 0) */
	TDB_STAT_A_DEFAULT_TTL     = 15,  /* u64: ms; absent = none */
	TDB_STAT_A_EXPIRING        = 16,  /* u64: records with a deadline
					   * (expired ones until removed) */
	TDB_STAT_A_EXPIRED         = 17,  /* u64: records removed by expiry
					   * since the owner started */
	TDB_STAT_A_MAX_BYTES       = 18,  /* u64: bound; absent = none */
	TDB_STAT_A_MAX_RECORDS     = 19,  /* u64: bound; absent = none */
	TDB_STAT_A_EVICT           = 20,  /* u32: TDB_EVICT_* */
	TDB_STAT_A_EVICTED         = 21,  /* u64: records evicted since the
					   * owner started */
	TDB_STAT_A_TABLE_FLAGS     = 22,  /* u32: TDB_TABLE_F_*; absent = 0 */
	__TDB_STAT_A_MAX,
	TDB_STAT_A_MAX = __TDB_STAT_A_MAX - 1
};

/* TDB_STAT_A_STATE: 0, or a table the owner set aside at start (it could
 * not be restored: tdbd, docs/DURABILITY.md).  Its data is kept on disk;
 * every request on it but TABLE_DROP fails with -EIO; the figures it
 * must send (records, bytes, extents, page size) are 0. */
#define TDB_TABLE_SET_ASIDE  1u

/* Inside TDB_A_COUNTERS: the owner as a whole (STATS). */
enum tdb_counter_attr {
	TDB_CTR_A_UNSPEC    = 0,
	TDB_CTR_A_PAD       = 1,          /* empty */
	TDB_CTR_A_TABLES    = 2,          /* u32, R: tables that exist */
	TDB_CTR_A_CLIENTS   = 3,          /* u32: clients connected */
	TDB_CTR_A_WATCHES   = 4,          /* u32: watches in force */
	TDB_CTR_A_TXNS      = 5,          /* u32: transactions open */
	TDB_CTR_A_REQUESTS  = 6,          /* u64: requests answered */
	TDB_CTR_A_ERRORS    = 7,          /* u64: of which failed */
	TDB_CTR_A_UPTIME_MS = 8,          /* u64: since the owner started */
	TDB_CTR_A_ACCEPTED  = 9,          /* u64: clients accepted, ever */
	TDB_CTR_A_CLEANUPS  = 10,         /* u64: clients cleaned up after
					   * they went (hang-up, death) */
	TDB_CTR_A_TXNS_ABORTED = 11,      /* u64: transactions aborted by a
					   * cleanup */
	TDB_CTR_A_WATCHES_DROPPED = 12,   /* u64: watches dropped by a
					   * cleanup */
	TDB_CTR_A_RINGS     = 13,         /* u32: client rings mapped now */
	TDB_CTR_A_RINGS_FREED = 14,       /* u64: client rings freed */
	TDB_CTR_A_STUCK     = 15,         /* u64: clients disconnected for
					   * not draining their completions */
	TDB_CTR_A_VIOLATIONS = 16,        /* u64: clients disconnected for
					   * breaking the protocol */
	TDB_CTR_A_THROTTLED = 17,         /* u32: clients throttled now */
	TDB_CTR_A_DUMPS     = 18,         /* u32: dumps (scans) in progress */
	/* durability (tdbd; 0 where there is none) */
	TDB_CTR_A_WAL_RECORDS = 19,       /* u64: changes logged since start */
	TDB_CTR_A_WAL_LSN   = 20,         /* u64: LSN of the last WAL record
					   * written */
	TDB_CTR_A_WAL_DURABLE = 21,       /* u64: LSN up to which the WAL is
					   * on disk */
	TDB_CTR_A_CHECKPOINTS = 22,       /* u64: checkpoints since start */
	TDB_CTR_A_CKPT_FAILURES = 23,     /* u64: checkpoints that failed (and
					   * were tried again) */
	TDB_CTR_A_CKPT_LSN  = 24,         /* u64: LSN of the last checkpoint */
	TDB_CTR_A_TABLES_ASIDE = 25,      /* u32: of TABLES, set aside at
					   * start (TDB_TABLE_SET_ASIDE) */
	TDB_CTR_A_WAL_SYNCS = 26,         /* u64: WAL fdatasyncs since start
					   * (WAL_RECORDS / WAL_SYNCS: changes
					   * per disk flush) */
	TDB_CTR_A_READERS_EXPIRED = 27,   /* u64: read sections of mapped
					   * readers the owner stopped waiting
					   * for (their lease ran out) */
	TDB_CTR_A_EXPIRED   = 28,         /* u64: records removed by expiry
					   * since start (all tables) */
	TDB_CTR_A_EVICTED   = 29,         /* u64: records evicted since
					   * start (all tables) */
	__TDB_CTR_A_MAX,
	TDB_CTR_A_MAX = __TDB_CTR_A_MAX - 1
};

/*
 * TABLE_MAP's ack (NLMSG_ERROR 0) carries this as NLMSGERR_ATTR_COOKIE
 * (16 bytes, 4-byte aligned).  The map is max_extents * 2 MiB long:
 * extent n of the table's region at n * 2 MiB, only extents below the
 * region header's `nextents` backed.  tdb.ko: mmap the /dev/tdb file
 * at `offset` (PROT_READ, MAP_SHARED).  tdbd: `offset` is 0 and a
 * read-only descriptor of the region rides on the ack (SCM_RIGHTS).
 * The map may be used while the region header's `map_gen` equals
 * `map_gen` here and its magic is intact; after that (the table was
 * dropped, its region moved) the client asks again or reads through
 * the rings.  How a reader reads: tdb/ring.h, "Zero-copy readers".
 */
struct tdb_map_cookie {
	__u32 offset_lo;        /* tdb.ko: the mmap offset on /dev/tdb */
	__u32 offset_hi;
	__u32 max_extents;      /* the map's length in 2 MiB extents */
	__u32 map_gen;          /* the region header's map_gen, granted */
};

#endif
