// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_ring.c - tdb-bench-ring: tdb's shared rings against netlink
 * (NETLINK_USERSOCK unicast and multicast) and AF_UNIX SOCK_SEQPACKET,
 * between processes, on the same messages.
 *
 * Throughput (the matrix of the seed benchmark, issue 3): one producer
 * process sends M messages of S bytes to N receiver processes (N = 1, 2,
 * 4, 10; S = 64, 128, 512, 1024, 4096).  Every message is one netlink
 * message of exactly S bytes (nlmsghdr + payload); its payload carries a
 * per-invocation cookie, a 64-bit sequence number and, in its last 8
 * bytes, the sequence number xor the cookie (a torn copy shows).  The
 * receivers check every message: rings must deliver all of them in order
 * (anything else stops the benchmark); for sockets the drops, reorders
 * and ENOBUFS errors are counted and reported.
 *
 *   feed     one TDB_RING_FEED ring written once, read by N reader
 *            processes at their own cursors (read-only mappings); laps
 *            (overruns) are counted and reported
 *   copy     N TDB_RING_SUBMIT rings (SPSC), the producer writes a copy of
 *            each message into each (for N = 1: the plain SPSC ring)
 *   feed1,   the same, publishing after every message instead of every
 *   copy1    --batch messages
 *   nlu      NETLINK_USERSOCK unicast: one sendto per message and receiver
 *            (blocking sends)
 *   nlm      NETLINK_USERSOCK multicast: one sendto per message to a group
 *            of N members
 *   unix     AF_UNIX SOCK_SEQPACKET, a socket pair per receiver, one send
 *            per message and receiver
 *   *-mm     the socket rows again with sendmmsg/recvmmsg, --batch
 *            messages per call
 *
 * Processes: a coordinator forks the N receivers and the producer for
 * every case and run, so every case starts from fresh processes; rings
 * are memfds, mapped by each process with its own protections.  Unless
 * --no-pin, the producer runs on CPU 0 and all receivers share CPU 1 (the
 * machine has 2 vCPUs).  The clock starts when every receiver is ready;
 * sent/s is M over the producer's time to hand over its last message,
 * delivered/s is the number of messages delivered to all receivers over
 * the time until the last receiver had its last message.
 *
 * Netlink multicast and FEED rings never block the sender (the kernel
 * drops what does not fit a receiver's buffer; the FEED producer laps a
 * slow reader), so by default the producer keeps at most half a receive
 * buffer's (half a ring's) worth of messages ahead of the slowest receiver,
 * reading their progress in shared memory: the user-space equivalent of
 * the seed's "blocking broadcast" patch, so that delivered/s measures
 * what the receivers can take.  --mc-nopace and --feed-nopace turn that
 * off; drops and laps are then reported.  A multicast sendto reports ECONNREFUSED
 * after delivering to the group (no kernel socket has port 0 in
 * NETLINK_USERSOCK): that counts as sent.
 *
 * Latency: ping-pong between two processes (pinned to CPU 0 and CPU 1
 * unless --no-pin) over two SUBMIT rings, polling (spin) or sleeping on
 * the futex (sleep); over NETLINK_USERSOCK unicast and AF_UNIX, blocking
 * and busy-polling (MSG_DONTWAIT).  Figures are full round trips (send,
 * echo, receive), p50 and p99.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "../common/csv.h"
#include "../common/machine.h"

#define MAX_RX       16
#define MAX_LIST     16
#define MAX_RUNS     99
#define MAX_BATCH    1024
#define MSG_MAX      65536u
#define MSG_TYPE     0x7db0          /* >= NLMSG_MIN_TYPE */
#define PAY_OFF      NLMSG_HDRLEN    /* cookie, then seq */
#define SEQ_END      UINT64_MAX      /* end-of-stream marker (multicast) */
#define RING_MAXMSG  MSG_MAX
#define CONSUME_BUDGET 256u

/* Default message counts (before --scale): rings stream up to RING_MSGS
 * messages and RING_BYTES bytes per case; sockets SOCK_MSGS per receiver
 * (the reference figures in issue 3 used 20 k messages). */
#define RING_MSGS    2000000ull
#define RING_BYTES   (256ull << 20)
#define SOCK_MSGS    30000ull
#define PP_SPIN      200000u
#define PP_SLEEP     20000u

/* --- options ------------------------------------------------------------ */
enum tp {
	TP_COPY, TP_FEED, TP_COPY1, TP_FEED1,
	TP_NLU, TP_NLM, TP_UNIX,
	TP_NLU_MM, TP_NLM_MM, TP_UNIX_MM,
	NTP
};

enum { K_RING, K_NLU, K_NLM, K_UNIX };

static const struct tpinfo {
	const char *key;
	const char *name;
	int kind;
	bool feed;          /* rings: one FEED ring */
	bool batched;       /* rings: publish per batch; sockets: *mmsg */
} tps[NTP] = {
	[TP_COPY]    = { "copy",    "ring SPSC x N, publish/%u",   K_RING, false, true },
	[TP_FEED]    = { "feed",    "ring FEED x 1, publish/%u",   K_RING, true,  true },
	[TP_COPY1]   = { "copy1",   "ring SPSC x N, publish/msg", K_RING, false, false },
	[TP_FEED1]   = { "feed1",   "ring FEED x 1, publish/msg", K_RING, true,  false },
	[TP_NLU]     = { "nlu",     "netlink unicast",            K_NLU,  false, false },
	[TP_NLM]     = { "nlm",     "netlink multicast",          K_NLM,  false, false },
	[TP_UNIX]    = { "unix",    "AF_UNIX seqpacket",          K_UNIX, false, false },
	[TP_NLU_MM]  = { "nlu-mm",  "netlink unicast, mmsg %u",    K_NLU,  false, true },
	[TP_NLM_MM]  = { "nlm-mm",  "netlink multicast, mmsg %u",  K_NLM,  false, true },
	[TP_UNIX_MM] = { "unix-mm", "AF_UNIX seqpacket, mmsg %u",  K_UNIX, false, true },
};

enum pp {
	PP_RING_SPIN, PP_RING_SLEEP, PP_NL, PP_NL_BUSY, PP_UNIX, PP_UNIX_BUSY,
	NPP
};

static const struct ppinfo {
	const char *key, *name;
	int kind;
	bool spin;
} pps[NPP] = {
	[PP_RING_SPIN]  = { "ring-spin",  "2 rings, spin (poll)",         K_RING, true },
	[PP_RING_SLEEP] = { "ring-sleep", "2 rings, sleep (futex)",       K_RING, false },
	[PP_NL]         = { "nl",         "netlink unicast, blocking",    K_NLU,  false },
	[PP_NL_BUSY]    = { "nl-busy",    "netlink unicast, busy-poll",   K_NLU,  true },
	[PP_UNIX]       = { "unix",       "AF_UNIX seqpacket, blocking",  K_UNIX, false },
	[PP_UNIX_BUSY]  = { "unix-busy",  "AF_UNIX seqpacket, busy-poll", K_UNIX, true },
};

static struct {
	unsigned int runs;
	unsigned int nrx, rx[MAX_LIST];
	unsigned int nsz, sz[MAX_LIST];
	bool tp_on[NTP];
	unsigned int batch;
	double scale;
	uint32_t ring_kb;       /* SPSC ring data size */
	uint32_t feed_kb;       /* FEED ring data size */
	uint32_t sockbuf_kb;
	unsigned int spin_polls;
	unsigned int pp_size, pp_iters_spin, pp_iters_sleep;
	bool pin, matrix, latency, mc_pace, feed_pace, verbose;
	unsigned int group;
	unsigned int timeout_s;
	const char *csv;
} opt = {
	.runs = 3,
	.nrx = 4, .rx = { 1, 2, 4, 10 },
	.nsz = 5, .sz = { 64, 128, 512, 1024, 4096 },
	.batch = 64, .scale = 1.0, .ring_kb = 1024, .feed_kb = 1024,
	.sockbuf_kb = 32768, .spin_polls = 0,
	.pp_size = 64, .pp_iters_spin = PP_SPIN, .pp_iters_sleep = PP_SLEEP,
	.pin = true, .matrix = true, .latency = true, .mc_pace = true,
	.feed_pace = true,
	.timeout_s = 60,
};

static uint64_t cookie;
static int ncpu;

/* --- errors and time ---------------------------------------------------- */
static __attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("tdb-bench-ring: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (!opt.pin || cpu >= ncpu)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

static double median(double *v, unsigned int n);

/* --- shared control block ----------------------------------------------- */
struct rxstat {
	_Atomic uint64_t got;           /* messages delivered so far */
	_Atomic uint64_t pos;           /* next sequence number expected */
	uint64_t lost;                  /* gaps in the sequence numbers */
	uint64_t laps;                  /* FEED overruns seen */
	uint64_t lap_lost;              /* messages the ring said were lost */
	uint64_t reorder, bad, foreign, enobufs;
	uint64_t end_ns;
	uint64_t sleeps;                /* rings: tdb_ring_wait/feed_wait */
	uint32_t portid;
	int failed;
	char why[160];
} __attribute__((aligned(128)));

struct ctl {
	_Atomic int ready;
	_Atomic int done;
	uint64_t t0, t_sent;
	uint64_t send_errors;           /* failed sends (not ECONNREFUSED) */
	uint64_t paced;                 /* multicast: times the sender waited */
	uint64_t wakes;                 /* rings: publishes that woke */
	uint64_t space_waits;           /* rings: tdb_ring_wait_space calls */
	int pfailed;
	char pwhy[160];
	/* ping-pong */
	uint32_t pp_portid[2];
	double lat_p50, lat_p99, lat_p999, lat_min, lat_mean;
	struct rxstat rx[MAX_RX];
	_Atomic uint64_t probe __attribute__((aligned(128)));
	uint64_t probe_pad[15];
	double probe_ns;
};

static struct ctl *ctl;

static __attribute__((format(printf, 2, 3)))
void fail_to(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, 160, fmt, ap);
	va_end(ap);
}

/* --- messages ----------------------------------------------------------- */
static void msg_init(unsigned char *buf, size_t size)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

	for (size_t i = 0; i < size; i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	nlh->nlmsg_len = (uint32_t)size;
	nlh->nlmsg_type = MSG_TYPE;
	nlh->nlmsg_flags = 0;
	nlh->nlmsg_seq = 0;
	nlh->nlmsg_pid = 0;
	memcpy(buf + PAY_OFF, &cookie, 8);
}

static inline void msg_stamp(unsigned char *buf, size_t size, uint64_t seq)
{
	uint64_t tail = seq ^ cookie;

	((struct nlmsghdr *)buf)->nlmsg_seq = (uint32_t)seq;
	memcpy(buf + PAY_OFF + 8, &seq, 8);
	memcpy(buf + size - 8, &tail, 8);
}

/* A receiver's view of the stream. */
struct rx {
	struct rxstat *st;
	uint64_t expect, m;
	size_t size;
	bool ring;              /* loss or reorder is an error */
	bool lapped;            /* a FEED overrun was just reported */
	bool done;
};

/* Check one message; 0, or -1 if the stream is broken (st->why says). */
static int rx_check(struct rx *x, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	const struct nlmsghdr *nlh = buf;
	uint64_t c, seq, tail;

	if (len < PAY_OFF + 16) {
		x->st->foreign++;
		return 0;
	}
	memcpy(&c, b + PAY_OFF, 8);
	if (c != cookie || nlh->nlmsg_type != MSG_TYPE) {
		x->st->foreign++;       /* someone else's (a shared group) */
		return 0;
	}
	memcpy(&seq, b + PAY_OFF + 8, 8);
	if (seq == SEQ_END) {
		x->done = true;
		return 0;
	}
	if (len != x->size || nlh->nlmsg_len != x->size) {
		x->st->bad++;
		if (x->ring) {
			fail_to(x->st->why, "message %" PRIu64 " has length %zu, "
				"not %zu", seq, len, x->size);
			return -1;
		}
		return 0;
	}
	memcpy(&tail, b + len - 8, 8);
	if (tail != (seq ^ cookie)) {
		x->st->bad++;
		if (x->ring) {
			fail_to(x->st->why, "message %" PRIu64 " is torn (its "
				"last bytes belong to another)", seq);
			return -1;
		}
		return 0;
	}
	if (seq != x->expect) {
		if (seq > x->expect) {
			if (x->ring && !x->lapped) {
				fail_to(x->st->why, "lost messages %" PRIu64
					"..%" PRIu64 " without an overrun",
					x->expect, seq - 1);
				return -1;
			}
			x->st->lost += seq - x->expect;
		} else {
			x->st->reorder++;
			if (x->ring) {
				fail_to(x->st->why, "message %" PRIu64
					" after %" PRIu64 " (reordered or "
					"duplicated)", seq, x->expect - 1);
				return -1;
			}
		}
	}
	x->lapped = false;
	x->expect = seq + 1;
	atomic_store_explicit(&x->st->pos, x->expect, memory_order_relaxed);
	atomic_store_explicit(&x->st->got,
			      atomic_load_explicit(&x->st->got,
						   memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (seq + 1 >= x->m)
		x->done = true;
	return 0;
}

static int ring_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct rx *x = arg;

	return rx_check(x, nlh, nlh->nlmsg_len) ? -ECANCELED : 0;
}

/* --- rings in memfds ---------------------------------------------------- */
struct ringmem {
	int fd;
	uint32_t kind, data_size;
};

static void ringmem_create(struct ringmem *rm, uint32_t kind,
			   uint32_t data_size)
{
	size_t len = tdb_ring_map_size(data_size);
	void *p;
	int err;

	rm->kind = kind;
	rm->data_size = data_size;
	rm->fd = memfd_create("tdb-bench-ring", MFD_CLOEXEC);
	if (rm->fd < 0)
		die("memfd_create: %s", strerror(errno));
	if (ftruncate(rm->fd, (off_t)len))
		die("ftruncate: %s", strerror(errno));
	/* Allocate every page now, outside the clock. */
	if (fallocate(rm->fd, 0, 0, (off_t)len))
		die("fallocate %zu: %s", len, strerror(errno));
	p = mmap(NULL, TDB_RING_HDR_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 rm->fd, 0);
	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	err = tdb_ring_format(p, kind, data_size,
			      RING_MAXMSG < data_size / 2 ? RING_MAXMSG
							  : data_size / 2);
	if (err)
		die("tdb_ring_format: %s", strerror(-err));
	munmap(p, TDB_RING_HDR_SIZE);
}

/* Map and attach (in the process that uses it).  Consumers map the data
 * read-only, FEED readers the header too. */
static int ringmem_attach(const struct ringmem *rm, struct tdb_ring *r,
			  bool producer, char *why)
{
	int hprot = producer || rm->kind != TDB_RING_FEED ?
		    PROT_READ | PROT_WRITE : PROT_READ;
	int dprot = producer ? PROT_READ | PROT_WRITE : PROT_READ;
	void *h, *d;
	int err;

	h = mmap(NULL, TDB_RING_HDR_SIZE, hprot, MAP_SHARED | MAP_POPULATE,
		 rm->fd, 0);
	d = mmap(NULL, rm->data_size, dprot, MAP_SHARED | MAP_POPULATE,
		 rm->fd, TDB_RING_HDR_SIZE);
	if (h == MAP_FAILED || d == MAP_FAILED) {
		fail_to(why, "mmap: %s", strerror(errno));
		return -1;
	}
	err = producer ?
	      tdb_ring_attach_producer(r, h, d, rm->data_size, rm->kind) :
	      tdb_ring_attach_consumer(r, h, d, rm->data_size, rm->kind);
	if (err) {
		fail_to(why, "attach: %s (%s)", strerror(-err),
			tdb_ring_error(r) ? tdb_ring_error(r) : "-");
		return -1;
	}
	return 0;
}

/* --- sockets ------------------------------------------------------------ */
static void set_bufs(int fd, bool rcv, bool snd)
{
	int v = (int)opt.sockbuf_kb * 1024;

	/* FORCE: past net.core.[rw]mem_max; we are root. */
	if (rcv && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (snd && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

/* A bound NETLINK_USERSOCK socket; its port id in *portid. */
static int nl_open(uint32_t *portid, unsigned int group, char *why)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_USERSOCK);

	if (fd < 0) {
		fail_to(why, "socket(AF_NETLINK): %s", strerror(errno));
		return -1;
	}
	set_bufs(fd, true, true);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		fail_to(why, "bind(AF_NETLINK): %s", strerror(errno));
		return -1;
	}
	if (group && setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
				&group, sizeof(group))) {
		fail_to(why, "NETLINK_ADD_MEMBERSHIP %u: %s", group,
			strerror(errno));
		return -1;
	}
	*portid = a.nl_pid;
	return fd;
}

/* --- one throughput case ------------------------------------------------ */
struct tcase {
	enum tp tp;
	unsigned int n;         /* receivers */
	size_t size;
	uint64_t m;             /* messages */
	uint32_t feed_size;     /* FEED ring data size */
	/* set up by the coordinator before fork */
	struct ringmem rings[MAX_RX];
	int unix_sv[MAX_RX][2];
};

struct tres {
	bool ok;
	double sent, delivered;         /* msgs/s */
	uint64_t lost, laps, lap_lost, reorder, bad, enobufs, send_errors;
	uint64_t paced;
	uint64_t got, futex;            /* messages delivered, futex calls */
	double secs;
	double probe;                   /* probe_xcpu() before the run */
};

static uint64_t msgs_for(enum tp tp, size_t size)
{
	double m;

	if (tps[tp].kind == K_RING) {
		m = (double)RING_MSGS;
		if ((double)RING_BYTES / (double)size < m)
			m = (double)RING_BYTES / (double)size;
		if (!tps[tp].batched)
			m /= 8;         /* a wake per message: slower */
	} else {
		m = (double)SOCK_MSGS;
	}
	m *= opt.scale;
	return m < 1000 ? 1000 : (uint64_t)m;
}

/* --- receivers ---------------------------------------------------------- */
static void rx_ring(struct tcase *c, unsigned int i, struct rx *x)
{
	struct tdb_ring r;
	bool feed = tps[c->tp].feed;
	struct ringmem *rm = &c->rings[feed ? 0 : i];
	unsigned int empty = 0;

	if (ringmem_attach(rm, &r, false, x->st->why)) {
		x->st->failed = 1;
		atomic_fetch_add(&ctl->ready, 1);
		return;
	}
	atomic_fetch_add(&ctl->ready, 1);
	while (!x->done) {
		int n;

		if (feed) {
			uint64_t lost = 0;

			n = tdb_feed_read(&r, CONSUME_BUDGET, ring_cb, x, &lost);
			if (n == -EOVERFLOW) {
				x->st->laps++;
				x->st->lap_lost += lost;
				x->lapped = true;
				continue;
			}
		} else {
			n = tdb_ring_consume(&r, CONSUME_BUDGET, ring_cb, x);
		}
		if (n == -ECANCELED)
			break;          /* rx_check said why */
		if (n < 0) {
			fail_to(x->st->why, "%s: %s (%s)", feed ?
				"tdb_feed_read" : "tdb_ring_consume",
				strerror(-n), tdb_ring_error(&r) ?
				tdb_ring_error(&r) : "-");
			break;
		}
		if (n > 0) {
			empty = 0;
			continue;
		}
		if (++empty <= opt.spin_polls) {
			cpu_relax();
			continue;
		}
		x->st->sleeps++;
		n = feed ? tdb_feed_wait(&r, 1000) : tdb_ring_wait(&r, 1000);
		if (n < 0 && n != -ETIMEDOUT && n != -EINTR) {
			fail_to(x->st->why, "wait: %s", strerror(-n));
			break;
		}
	}
	x->st->end_ns = now_ns();
	if (!x->done)
		x->st->failed = 1;
}

static void rx_sock(struct tcase *c, unsigned int i, struct rx *x)
{
	int kind = tps[c->tp].kind;
	bool mm = tps[c->tp].batched;
	unsigned int b = mm ? opt.batch : 1;
	static struct mmsghdr vec[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	unsigned char *buf = malloc((size_t)b * MSG_MAX);
	int fd;

	if (!buf)
		die("out of memory");
	if (kind == K_UNIX) {
		fd = c->unix_sv[i][1];
		set_bufs(fd, true, false);
	} else {
		fd = nl_open(&x->st->portid, kind == K_NLM ? opt.group : 0,
			     x->st->why);
		if (fd < 0) {
			x->st->failed = 1;
			atomic_fetch_add(&ctl->ready, 1);
			return;
		}
	}
	for (unsigned int k = 0; k < b; k++) {
		iov[k].iov_base = buf + (size_t)k * MSG_MAX;
		iov[k].iov_len = MSG_MAX;
		memset(&vec[k], 0, sizeof(vec[k]));
		vec[k].msg_hdr.msg_iov = &iov[k];
		vec[k].msg_hdr.msg_iovlen = 1;
	}
	atomic_fetch_add(&ctl->ready, 1);
	while (!x->done) {
		int n;

		if (mm) {
			n = recvmmsg(fd, vec, b, MSG_WAITFORONE, NULL);
		} else {
			ssize_t l = recv(fd, buf, MSG_MAX, 0);

			n = l < 0 ? -1 : 1;
			vec[0].msg_len = (unsigned int)(l < 0 ? 0 : l);
		}
		if (n < 0) {
			if (errno == ENOBUFS) {         /* netlink overrun */
				x->st->enobufs++;
				continue;
			}
			if (errno == EINTR)
				continue;
			fail_to(x->st->why, "recv: %s", strerror(errno));
			break;
		}
		for (int k = 0; k < n; k++)
			rx_check(x, iov[k].iov_base, vec[k].msg_len);
	}
	x->st->end_ns = now_ns();
	if (!x->done)
		x->st->failed = 1;
}

static void rx_main(struct tcase *c, unsigned int i)
{
	struct rx x = {
		.st = &ctl->rx[i], .m = c->m, .size = c->size,
		.ring = tps[c->tp].kind == K_RING,
	};

	pin_to(1);
	if (x.ring)
		rx_ring(c, i, &x);
	else
		rx_sock(c, i, &x);
	atomic_fetch_add(&ctl->done, 1);
	_exit(x.st->failed || x.st->why[0] ? 1 : 0);
}

/* --- the producer ------------------------------------------------------- */
static int wait_ready(unsigned int n)
{
	uint64_t deadline = now_ns() + 10ull * 1000000000ull;

	while ((unsigned int)atomic_load(&ctl->ready) < n) {
		if (now_ns() > deadline)
			return -1;
		usleep(100);
	}
	for (unsigned int i = 0; i < n; i++)
		if (ctl->rx[i].failed)
			return -1;
	return 0;
}

/* Pacing of the transports that never block their sender (netlink
 * multicast, FEED rings): at most `window` messages ahead of the slowest
 * receiver, as its progress in shared memory says. */
static void pace(struct tcase *c, uint64_t sent, uint64_t window)
{
	for (unsigned int spins = 0;; spins++) {
		uint64_t low = UINT64_MAX;

		for (unsigned int i = 0; i < c->n; i++) {
			uint64_t g = atomic_load_explicit(&ctl->rx[i].pos,
							  memory_order_relaxed);
			if (g < low)
				low = g;
		}
		if (sent - low <= window || atomic_load(&ctl->done))
			return;
		if (!spins)
			ctl->paced++;
		if (spins < 64)
			cpu_relax();
		else
			sched_yield();
	}
}

static int tx_ring(struct tcase *c, unsigned char *msg)
{
	struct tdb_ring r[MAX_RX];
	unsigned int nr = tps[c->tp].feed ? 1 : c->n;
	unsigned int b = tps[c->tp].batched ? opt.batch : 1;
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)msg;

	uint64_t window = 0;

	for (unsigned int i = 0; i < nr; i++)
		if (ringmem_attach(&c->rings[i], &r[i], true, ctl->pwhy))
			return -1;
	if (tps[c->tp].feed && opt.feed_pace) {
		/* half the ring, at least a batch */
		window = c->feed_size / 2 / NLMSG_ALIGN(c->size);
		if (window < b)
			window = b;
	}
	if (wait_ready(c->n))
		return -1;
	ctl->t0 = now_ns();
	for (uint64_t seq = 0; seq < c->m; seq++) {
		if (window && seq % b == 0)
			pace(c, seq + b, window);
		msg_stamp(msg, c->size, seq);
		for (unsigned int i = 0; i < nr; i++) {
			int err;

			while ((err = tdb_ring_put(&r[i], nlh)) == -EAGAIN) {
				/* full: publishes, sleeps until there is room */
				ctl->space_waits++;
				err = tdb_ring_wait_space(&r[i], c->size, 1000);
				if (err && err != -ETIMEDOUT && err != -EINTR)
					break;
			}
			if (err) {
				fail_to(ctl->pwhy, "ring put: %s (%s)",
					strerror(-err), tdb_ring_error(&r[i]) ?
					tdb_ring_error(&r[i]) : "-");
				return -1;
			}
		}
		if ((seq + 1) % b == 0 || seq + 1 == c->m) {
			for (unsigned int i = 0; i < nr; i++) {
				int err = tdb_ring_publish(&r[i]);

				if (err < 0) {
					fail_to(ctl->pwhy, "publish: %s",
						strerror(-err));
					return -1;
				}
				ctl->wakes += (uint64_t)err;
			}
		}
	}
	ctl->t_sent = now_ns();
	return 0;
}

static int tx_sock(struct tcase *c, unsigned char *msg0)
{
	int kind = tps[c->tp].kind;
	unsigned int b = tps[c->tp].batched ? opt.batch : 1;
	struct sockaddr_nl to[MAX_RX];
	static struct mmsghdr vec[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	unsigned char *bufs;
	int fds[MAX_RX];
	unsigned int ndst;
	uint64_t window = UINT64_MAX;
	uint32_t me;

	bufs = malloc((size_t)b * c->size);
	if (!bufs)
		die("out of memory");
	for (unsigned int k = 0; k < b; k++)
		memcpy(bufs + (size_t)k * c->size, msg0, c->size);
	if (kind == K_UNIX) {
		for (unsigned int i = 0; i < c->n; i++) {
			fds[i] = c->unix_sv[i][0];
			set_bufs(fds[i], false, true);
		}
		ndst = c->n;
	} else {
		fds[0] = nl_open(&me, 0, ctl->pwhy);
		if (fds[0] < 0)
			return -1;
		ndst = kind == K_NLM ? 1 : c->n;
	}
	if (wait_ready(c->n))
		return -1;
	for (unsigned int i = 0; i < c->n; i++) {
		memset(&to[i], 0, sizeof(to[i]));
		to[i].nl_family = AF_NETLINK;
		if (kind == K_NLM)
			to[i].nl_groups = 1u << (opt.group - 1);
		else
			to[i].nl_pid = ctl->rx[i].portid;
	}
	if (kind == K_NLM && opt.mc_pace) {
		/* what a receive buffer holds, halved: the kernel charges
		 * an skb's truesize (~ the data rounded up to a power of two
		 * with its skb_shared_info, plus the sk_buff) */
		uint64_t truesize = 512, rcvbuf = 2ull * opt.sockbuf_kb * 1024;

		while (truesize < c->size + 320)
			truesize <<= 1;
		truesize += 256;
		window = rcvbuf / truesize / 2;
		if (window < b)
			window = b;
	}
	for (unsigned int k = 0; k < b; k++) {
		iov[k].iov_base = bufs + (size_t)k * c->size;
		iov[k].iov_len = c->size;
		memset(&vec[k], 0, sizeof(vec[k]));
		vec[k].msg_hdr.msg_iov = &iov[k];
		vec[k].msg_hdr.msg_iovlen = 1;
	}
	ctl->t0 = now_ns();
	for (uint64_t seq = 0; seq < c->m; seq += b) {
		unsigned int nb = c->m - seq < b ? (unsigned int)(c->m - seq) : b;

		if (kind == K_NLM && opt.mc_pace)
			pace(c, seq + nb, window);
		for (unsigned int k = 0; k < nb; k++)
			msg_stamp(bufs + (size_t)k * c->size, c->size, seq + k);
		for (unsigned int d = 0; d < ndst; d++) {
			int fd = kind == K_UNIX ? fds[d] : fds[0];
			struct sockaddr_nl *a = kind == K_UNIX ? NULL : &to[d];

			if (b == 1) {
				ssize_t l = sendto(fd, bufs, c->size, 0,
						   (struct sockaddr *)a,
						   a ? sizeof(*a) : 0);

				if (l < 0 && !(kind == K_NLM &&
					       errno == ECONNREFUSED)) {
					if (errno == EINTR) {
						d--;
						continue;
					}
					ctl->send_errors++;
				}
				continue;
			}
			for (unsigned int k = 0; k < nb; k++) {
				vec[k].msg_hdr.msg_name = a;
				vec[k].msg_hdr.msg_namelen = a ? sizeof(*a) : 0;
			}
			for (unsigned int k = 0; k < nb;) {
				int n = sendmmsg(fd, vec + k, nb - k, 0);

				if (n < 0) {
					if (errno == EINTR)
						continue;
					/* the message failed, or a multicast
					 * reported ECONNREFUSED after
					 * delivering it */
					if (!(kind == K_NLM &&
					      errno == ECONNREFUSED))
						ctl->send_errors++;
					n = 1;
				}
				k += (unsigned int)n;
			}
		}
	}
	ctl->t_sent = now_ns();
	if (kind == K_NLM) {
		/* Receivers that lost the last message stop at this. */
		uint64_t deadline = now_ns() + 5ull * 1000000000ull;

		msg_stamp(bufs, c->size, SEQ_END);
		while ((unsigned int)atomic_load(&ctl->done) < c->n &&
		       now_ns() < deadline) {
			if (sendto(fds[0], bufs, c->size, 0,
				   (struct sockaddr *)&to[0], sizeof(to[0])) < 0 &&
			    errno != ECONNREFUSED)
				break;
			usleep(1000);
		}
	}
	return 0;
}

static void tx_main(struct tcase *c)
{
	unsigned char *msg = malloc(c->size);
	int err;

	if (!msg)
		die("out of memory");
	pin_to(0);
	msg_init(msg, c->size);
	err = tps[c->tp].kind == K_RING ? tx_ring(c, msg) : tx_sock(c, msg);
	if (err)
		ctl->pfailed = 1;
	_exit(err ? 1 : 0);
}

/* --- the coordinator ---------------------------------------------------- */
static pid_t fork_or_die(void)
{
	pid_t p;

	fflush(stdout);
	fflush(stderr);
	p = fork();
	if (p < 0)
		die("fork: %s", strerror(errno));
	return p;
}

/* Wait for the children; kill them all at the deadline.  0 if every one
 * exited with status 0. */
static int reap(pid_t *pids, unsigned int n, unsigned int timeout_s,
		const char *what)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;
	unsigned int left = n;
	int bad = 0;

	while (left) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p < 0 && errno == ECHILD)
			break;
		if (p > 0) {
			for (unsigned int i = 0; i < n; i++)
				if (pids[i] == p) {
					pids[i] = 0;
					left--;
				}
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				bad = 1;
			continue;
		}
		if (now_ns() > deadline) {
			fprintf(stderr, "tdb-bench-ring: %s: timed out after "
				"%u s, killing its processes\n", what, timeout_s);
			for (unsigned int i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i], SIGKILL);
			deadline = UINT64_MAX;
			bad = 1;
			continue;
		}
		usleep(1000);
	}
	return bad ? -1 : 0;
}

/*
 * How far apart the two CPUs are now: the round trip of one cache line
 * between a process on CPU 0 and one on CPU 1 (median of 5 bursts of 2k).
 * On this kind of VM it moves between ~200 and ~600 ns from one second
 * to the next (where the host runs the vCPUs), and the rings' figures
 * move with it.  -1 without pinning.
 */
static double probe_xcpu(void)
{
	enum { BURST = 2000, BURSTS = 5 };
	pid_t pids[2];
	double v[BURSTS];

	if (!opt.pin || ncpu < 2)
		return -1;
	atomic_store(&ctl->probe, 0);
	for (int side = 0; side < 2; side++) {
		pids[side] = fork_or_die();
		if (pids[side])
			continue;
		pin_to(side);
		for (int b = 0; b < BURSTS; b++) {
			uint64_t base = (uint64_t)b * 2 * BURST, t0 = now_ns();

			for (uint64_t i = base + (uint64_t)side;
			     i < base + 2 * BURST; i += 2) {
				while (atomic_load_explicit(&ctl->probe,
					memory_order_acquire) != i)
					cpu_relax();
				atomic_store_explicit(&ctl->probe, i + 1,
						      memory_order_release);
			}
			if (!side)
				v[b] = (double)(now_ns() - t0) / BURST;
		}
		if (!side)
			ctl->probe_ns = median(v, BURSTS);
		_exit(0);
	}
	if (reap(pids, 2, 10, "CPU probe"))
		return -1;
	return ctl->probe_ns;
}

static void run_case(struct tcase *c, struct tres *res)
{
	pid_t pids[MAX_RX + 1];
	int kind = tps[c->tp].kind;
	char what[96];
	uint64_t end = 0;

	memset(ctl, 0, sizeof(*ctl));
	memset(res, 0, sizeof(*res));
	res->probe = probe_xcpu();
	snprintf(what, sizeof(what), "%s, %u receivers, %zu B",
		 tps[c->tp].key, c->n, c->size);
	if (kind == K_RING) {
		if (tps[c->tp].feed)
			ringmem_create(&c->rings[0], TDB_RING_FEED, c->feed_size);
		else
			for (unsigned int i = 0; i < c->n; i++)
				ringmem_create(&c->rings[i], TDB_RING_SUBMIT,
					       opt.ring_kb * 1024);
	} else if (kind == K_UNIX) {
		for (unsigned int i = 0; i < c->n; i++)
			if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				       c->unix_sv[i]))
				die("socketpair: %s", strerror(errno));
	}
	for (unsigned int i = 0; i < c->n; i++) {
		pids[i] = fork_or_die();
		if (!pids[i]) {
			if (kind == K_UNIX)
				for (unsigned int k = 0; k < c->n; k++) {
					close(c->unix_sv[k][0]);
					if (k != i)
						close(c->unix_sv[k][1]);
				}
			rx_main(c, i);
		}
	}
	pids[c->n] = fork_or_die();
	if (!pids[c->n]) {
		if (kind == K_UNIX)
			for (unsigned int k = 0; k < c->n; k++)
				close(c->unix_sv[k][1]);
		tx_main(c);
	}
	if (kind == K_RING) {
		for (unsigned int i = 0; i < (tps[c->tp].feed ? 1 : c->n); i++)
			close(c->rings[i].fd);
	} else if (kind == K_UNIX) {
		for (unsigned int i = 0; i < c->n; i++) {
			close(c->unix_sv[i][0]);
			close(c->unix_sv[i][1]);
		}
	}
	if (reap(pids, c->n + 1, opt.timeout_s, what) || ctl->pfailed) {
		fprintf(stderr, "tdb-bench-ring: %s failed", what);
		if (ctl->pwhy[0])
			fprintf(stderr, "; producer: %s", ctl->pwhy);
		for (unsigned int i = 0; i < c->n; i++)
			if (ctl->rx[i].why[0])
				fprintf(stderr, "; receiver %u: %s", i,
					ctl->rx[i].why);
		fputc('\n', stderr);
		if (kind == K_RING)
			exit(1);        /* a ring must never fail */
		return;
	}
	for (unsigned int i = 0; i < c->n; i++) {
		const struct rxstat *s = &ctl->rx[i];

		if (s->end_ns > end)
			end = s->end_ns;
		res->delivered += (double)atomic_load(&s->got);
		res->lost += s->lost;
		res->laps += s->laps;
		res->lap_lost += s->lap_lost;
		res->reorder += s->reorder;
		res->bad += s->bad;
		res->enobufs += s->enobufs;
		res->got += atomic_load(&s->got);
		res->futex += s->sleeps;
	}
	res->futex += ctl->wakes + ctl->space_waits;
	res->send_errors = ctl->send_errors;
	res->paced = ctl->paced;
	res->secs = (double)(end - ctl->t0) * 1e-9;
	res->delivered /= res->secs;
	res->sent = (double)c->m / ((double)(ctl->t_sent - ctl->t0) * 1e-9);
	res->ok = true;
}

/* --- ping-pong ---------------------------------------------------------- */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

struct ppcase {
	enum pp pp;
	unsigned int iters, warm;
	struct ringmem rings[2];        /* 0: ping -> pong, 1: pong -> ping */
	int sv[2];
};

struct ppx {
	struct tdb_ring in, out;
	int fd;
	struct sockaddr_nl peer;
	unsigned char *msg, *buf;
	uint64_t got_seq;
	bool got;
};

static int pp_cb(void *arg, const struct nlmsghdr *nlh)
{
	struct ppx *p = arg;

	memcpy(&p->got_seq, (const unsigned char *)nlh + PAY_OFF + 8, 8);
	p->got = true;
	return 0;
}

/* Send msg (its seq stamped) to the peer. */
static int pp_send(struct ppcase *c, struct ppx *p)
{
	int kind = pps[c->pp].kind;

	if (kind == K_RING) {
		int err = tdb_ring_put(&p->out, (struct nlmsghdr *)p->msg);

		if (!err)
			err = tdb_ring_publish(&p->out);
		return err < 0 ? err : 0;
	}
	for (;;) {
		ssize_t l = kind == K_UNIX ?
			send(p->fd, p->msg, opt.pp_size, 0) :
			sendto(p->fd, p->msg, opt.pp_size, 0,
			       (struct sockaddr *)&p->peer, sizeof(p->peer));

		if (l >= 0)
			return 0;
		if (errno != EINTR)
			return -errno;
	}
}

/* Receive one message; its seq in p->got_seq. */
static int pp_recv(struct ppcase *c, struct ppx *p)
{
	int kind = pps[c->pp].kind;
	bool spin = pps[c->pp].spin;

	if (kind == K_RING) {
		p->got = false;
		for (;;) {
			int n = tdb_ring_consume(&p->in, 1, pp_cb, p);

			if (n < 0)
				return n;
			if (p->got)
				return 0;
			if (spin) {
				cpu_relax();
				continue;
			}
			n = tdb_ring_wait(&p->in, 1000);
			if (n < 0 && n != -ETIMEDOUT && n != -EINTR)
				return n;
		}
	}
	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t l = recvfrom(p->fd, p->buf, MSG_MAX,
				     spin ? MSG_DONTWAIT : 0,
				     kind == K_UNIX ? NULL :
				     (struct sockaddr *)&from,
				     kind == K_UNIX ? NULL : &flen);

		if (l < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				if (spin)
					cpu_relax();
				continue;
			}
			return -errno;
		}
		if (l < (ssize_t)(PAY_OFF + 16))
			continue;
		if (kind == K_NLU)
			p->peer = from;
		memcpy(&p->got_seq, p->buf + PAY_OFF + 8, 8);
		return 0;
	}
}

static void pp_main(struct ppcase *c, int side)
{
	struct ppx p;
	int kind = pps[c->pp].kind;
	char *why = side ? ctl->rx[0].why : ctl->pwhy;
	uint32_t *lat = NULL;
	int err = 0;

	memset(&p, 0, sizeof(p));
	pin_to(side ? 1 : 0);
	p.msg = malloc(opt.pp_size);
	p.buf = malloc(MSG_MAX);
	if (!p.msg || !p.buf)
		die("out of memory");
	msg_init(p.msg, opt.pp_size);
	if (kind == K_RING) {
		if (ringmem_attach(&c->rings[side], &p.out, true, why) ||
		    ringmem_attach(&c->rings[!side], &p.in, false, why))
			_exit(1);
	} else if (kind == K_UNIX) {
		p.fd = c->sv[side];
		close(c->sv[!side]);
	} else {
		p.fd = nl_open(&ctl->pp_portid[side], 0, why);
		if (p.fd < 0)
			_exit(1);
	}
	atomic_fetch_add(&ctl->ready, 1);
	if (side == 1) {
		/* pong: echo until the end marker */
		for (;;) {
			err = pp_recv(c, &p);
			if (err)
				break;
			msg_stamp(p.msg, opt.pp_size, p.got_seq);
			err = pp_send(c, &p);
			if (err || p.got_seq == SEQ_END)
				break;
		}
		if (err)
			fail_to(why, "pong: %s", strerror(-err));
		_exit(err ? 1 : 0);
	}
	/* ping */
	{
		uint64_t d = now_ns() + 10000000000ull;

		while (atomic_load(&ctl->ready) < 2 && now_ns() < d)
			usleep(100);
		if (atomic_load(&ctl->ready) < 2)
			_exit(1);
	}
	p.peer.nl_family = AF_NETLINK;
	p.peer.nl_pid = ctl->pp_portid[1];
	lat = malloc(sizeof(*lat) * c->iters);
	if (!lat)
		die("out of memory");
	for (unsigned int i = 0; i < c->warm + c->iters; i++) {
		uint64_t t0 = now_ns(), t1;

		msg_stamp(p.msg, opt.pp_size, i);
		err = pp_send(c, &p);
		if (!err)
			err = pp_recv(c, &p);
		if (err)
			break;
		t1 = now_ns();
		if (p.got_seq != i) {
			fail_to(why, "ping %u came back as %" PRIu64, i,
				p.got_seq);
			_exit(1);
		}
		if (i >= c->warm)
			lat[i - c->warm] = (uint32_t)(t1 - t0 > UINT32_MAX ?
						      UINT32_MAX : t1 - t0);
	}
	msg_stamp(p.msg, opt.pp_size, SEQ_END);
	if (!err)
		err = pp_send(c, &p);
	if (err) {
		fail_to(why, "ping: %s", strerror(-err));
		_exit(1);
	}
	{
		double sum = 0;

		for (unsigned int i = 0; i < c->iters; i++)
			sum += lat[i];
		qsort(lat, c->iters, sizeof(*lat), cmp_u32);
		ctl->lat_min = lat[0];
		ctl->lat_p50 = lat[c->iters / 2];
		ctl->lat_p99 = lat[(size_t)c->iters * 99 / 100];
		ctl->lat_p999 = lat[(size_t)c->iters * 999 / 1000];
		ctl->lat_mean = sum / c->iters;
	}
	_exit(0);
}

struct pres {
	bool ok;
	double p50, p99, p999, min, mean;       /* ns, round trip */
};

static void run_pp(struct ppcase *c, struct pres *res)
{
	int kind = pps[c->pp].kind;
	pid_t pids[2];

	memset(ctl, 0, sizeof(*ctl));
	memset(res, 0, sizeof(*res));
	if (kind == K_RING) {
		ringmem_create(&c->rings[0], TDB_RING_SUBMIT, opt.ring_kb * 1024);
		ringmem_create(&c->rings[1], TDB_RING_COMPLETE,
			       opt.ring_kb * 1024);
	} else if (kind == K_UNIX) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sv))
			die("socketpair: %s", strerror(errno));
	}
	/* the ping side starts when both are ready */
	pids[1] = fork_or_die();
	if (!pids[1])
		pp_main(c, 1);
	pids[0] = fork_or_die();
	if (!pids[0])
		pp_main(c, 0);
	if (kind == K_RING) {
		close(c->rings[0].fd);
		close(c->rings[1].fd);
	} else if (kind == K_UNIX) {
		close(c->sv[0]);
		close(c->sv[1]);
	}
	if (reap(pids, 2, opt.timeout_s, pps[c->pp].key)) {
		fprintf(stderr, "tdb-bench-ring: ping-pong %s failed: %s %s\n",
			pps[c->pp].key, ctl->pwhy, ctl->rx[0].why);
		if (kind == K_RING)
			exit(1);
		return;
	}
	res->ok = true;
	res->p50 = ctl->lat_p50;
	res->p99 = ctl->lat_p99;
	res->p999 = ctl->lat_p999;
	res->min = ctl->lat_min;
	res->mean = ctl->lat_mean;
}

/* --- machine ------------------------------------------------------------ */
/* --- report ------------------------------------------------------------- */
static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	double t[MAX_RUNS];

	if (!n)
		return 0;
	memcpy(t, v, n * sizeof(*v));
	qsort(t, n, sizeof(*t), cmp_dbl);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static const char *rate(char *buf, double v)
{
	if (v <= 0)
		snprintf(buf, 16, "-");
	else if (v >= 1e6)
		snprintf(buf, 16, "%.2fM", v / 1e6);
	else
		snprintf(buf, 16, "%.0fk", v / 1e3);
	return buf;
}

static const char *ratio(char *buf, double a, double b)
{
	if (a <= 0 || b <= 0)
		snprintf(buf, 16, "-");
	else
		snprintf(buf, 16, "%.1fx", a / b);
	return buf;
}

/* all results: [rx index][size index][transport][run] */
struct cell {
	uint64_t m;
	unsigned int nok;
	double sent[MAX_RUNS], deliv[MAX_RUNS], probe[MAX_RUNS];
	uint64_t lost, laps, lap_lost, reorder, bad, enobufs, send_errors;
	uint64_t paced;
	uint64_t got, futex;    /* all runs */
	double msent, mdeliv;   /* medians */
	double spread;          /* delivered/s: (max - min) / median */
};

static struct cell cells[MAX_LIST][MAX_LIST][NTP];
static struct pres ppres[NPP][MAX_RUNS];
static double pp_med[NPP][5];
static double pp_probe[MAX_RUNS];
static unsigned int pp_nprobe;
static bool pp_ok[NPP];

static void finish_cells(void)
{
	for (unsigned int a = 0; a < opt.nrx; a++)
		for (unsigned int s = 0; s < opt.nsz; s++)
			for (int t = 0; t < NTP; t++) {
				struct cell *c = &cells[a][s][t];

				double lo = 0, hi = 0;

				c->msent = median(c->sent, c->nok);
				c->mdeliv = median(c->deliv, c->nok);
				for (unsigned int k = 0; k < c->nok; k++) {
					if (!k || c->deliv[k] < lo)
						lo = c->deliv[k];
					if (!k || c->deliv[k] > hi)
						hi = c->deliv[k];
				}
				c->spread = c->mdeliv > 0 ?
					    (hi - lo) / c->mdeliv : 0;
			}
}

static void tp_name(char *buf, size_t len, int t)
{
	if (strchr(tps[t].name, '%'))
		snprintf(buf, len, tps[t].name, opt.batch);
	else
		snprintf(buf, len, "%s", tps[t].name);
}

static void print_case(unsigned int a, unsigned int s)
{
	char b1[16], b2[16], b3[16], b4[16], b5[16];
	const struct cell *row = cells[a][s];
	double nlu = row[TP_NLU].mdeliv, nlm = row[TP_NLM].mdeliv;
	double ux = row[TP_UNIX].mdeliv;

	printf("\n%u receiver%s, %u B messages\n", opt.rx[a],
	       opt.rx[a] == 1 ? "" : "s", opt.sz[s]);
	printf("  %-28s %8s %9s %11s %6s %6s %5s %8s  %7s %7s %7s\n",
	       "transport", "msgs", "sent/s", "delivered/s", "spread", "drops",
	       "laps", "futex/1k", "/nl-uni", "/nl-mc", "/unix");
	for (int t = 0; t < NTP; t++) {
		const struct cell *c = &row[t];
		char drops[24], laps[16], name[40], fx[16];

		if (!opt.tp_on[t])
			continue;
		tp_name(name, sizeof(name), t);
		if (!c->nok) {
			printf("  %-28s %8" PRIu64 "  failed\n", name, c->m);
			continue;
		}
		snprintf(drops, sizeof(drops), "%" PRIu64,
			 c->lost + c->enobufs + c->send_errors);
		if (tps[t].kind == K_RING && tps[t].feed)
			snprintf(laps, sizeof(laps), "%" PRIu64, c->laps);
		else
			snprintf(laps, sizeof(laps), "-");
		if (tps[t].kind == K_RING && c->got)
			snprintf(fx, sizeof(fx), "%.1f",
				 1000.0 * (double)c->futex / (double)c->got);
		else
			snprintf(fx, sizeof(fx), "-");
		printf("  %-28s %8" PRIu64 " %9s %11s %5.0f%% %6s %5s %8s  %7s "
		       "%7s %7s\n", name, c->m, rate(b1, c->msent),
		       rate(b2, c->mdeliv), c->spread * 100, drops, laps, fx, ratio(b3, c->mdeliv, nlu),
		       ratio(b4, c->mdeliv, nlm), ratio(b5, c->mdeliv, ux));
	}
}

/* The matrix of one transport's delivered/s: receivers x sizes. */
static void print_matrix(int t, const char *title)
{
	char b[16];

	if (!opt.tp_on[t])
		return;
	printf("\n%s (delivered/s, median)\n  %-9s", title, "receivers");
	for (unsigned int s = 0; s < opt.nsz; s++)
		printf(" %8u B", opt.sz[s]);
	printf("\n");
	for (unsigned int a = 0; a < opt.nrx; a++) {
		printf("  %-9u", opt.rx[a]);
		for (unsigned int s = 0; s < opt.nsz; s++)
			printf(" %10s", rate(b, cells[a][s][t].mdeliv));
		printf("\n");
	}
}

static void print_ratio_matrix(int t, int base, const char *title)
{
	char b[16];

	if (!opt.tp_on[t] || !opt.tp_on[base])
		return;
	printf("\n%s\n  %-9s", title, "receivers");
	for (unsigned int s = 0; s < opt.nsz; s++)
		printf(" %8u B", opt.sz[s]);
	printf("\n");
	for (unsigned int a = 0; a < opt.nrx; a++) {
		printf("  %-9u", opt.rx[a]);
		for (unsigned int s = 0; s < opt.nsz; s++)
			printf(" %10s", ratio(b, cells[a][s][t].mdeliv,
					      cells[a][s][base].mdeliv));
		printf("\n");
	}
}

static int rx_index(unsigned int n)
{
	for (unsigned int a = 0; a < opt.nrx; a++)
		if (opt.rx[a] == n)
			return (int)a;
	return -1;
}

static void print_goals(void)
{
	char b1[16], b2[16], b3[16];
	int a1 = rx_index(1), a10 = rx_index(10);

	printf("\nGoals (issue 3)\n");
	if (a1 >= 0 && opt.tp_on[TP_COPY] &&
	    (opt.tp_on[TP_NLU] || opt.tp_on[TP_NLM])) {
		printf("  1. rings >= 10x netlink sockets in messages/s, 64-1024 B"
		       " (1 receiver: SPSC ring, publish/%u,\n     against the "
		       "faster of netlink unicast and multicast):\n",
		       opt.batch);
		for (unsigned int s = 0; s < opt.nsz; s++) {
			const struct cell *row = cells[a1][s];
			double nl = row[TP_NLU].mdeliv > row[TP_NLM].mdeliv ?
				    row[TP_NLU].mdeliv : row[TP_NLM].mdeliv;
			double r = row[TP_COPY].mdeliv;
			bool in = opt.sz[s] >= 64 && opt.sz[s] <= 1024;

			if (r <= 0 || nl <= 0)
				continue;
			printf("     %5u B  ring %8s  netlink %8s  %6.1fx  %s\n",
			       opt.sz[s], rate(b1, r), rate(b2, nl), r / nl,
			       !in ? "(outside the goal's sizes)" :
			       r / nl >= 10 ? "met" : "MISSED");
		}
	}
	if (a10 >= 0 && opt.tp_on[TP_NLM] &&
	    (opt.tp_on[TP_FEED] || opt.tp_on[TP_COPY])) {
		printf("  2. fan-out to 10 receivers >= 10x netlink multicast in "
		       "delivered/s\n     (FEED ring publish/%u; per-receiver "
		       "SPSC copies for comparison):\n", opt.batch);
		for (unsigned int s = 0; s < opt.nsz; s++) {
			const struct cell *row = cells[a10][s];
			double nl = row[TP_NLM].mdeliv, f = row[TP_FEED].mdeliv;
			double cp = row[TP_COPY].mdeliv;

			if (nl <= 0)
				continue;
			printf("     %5u B  multicast %8s  FEED %8s %6.1fx %-6s"
			       "  copies %8s %6.1fx\n", opt.sz[s],
			       rate(b1, nl), rate(b2, f), f / nl,
			       f / nl >= 10 ? "met" : "MISSED",
			       rate(b3, cp), cp / nl);
		}
	}
	if (opt.latency && pp_ok[PP_RING_SPIN]) {
		double p50 = pp_med[PP_RING_SPIN][0];

		printf("  3. ping-pong p50 under 1 us in spin mode: round trip "
		       "p50 %.2f us (one way ~%.2f us)  %s\n", p50 / 1000,
		       p50 / 2000, p50 < 1000 ? "met" : "MISSED");
	}
}

static void print_pp(void)
{
	printf("\nPing-pong, %u B messages, round trip (send, echo, receive); "
	       "one way ~ half\n", opt.pp_size);
	printf("  %-32s %8s %9s %9s %9s %9s  %8s\n", "transport", "iters",
	       "min us", "p50 us", "p99 us", "p99.9 us", "p50/ring");
	for (int t = 0; t < NPP; t++) {
		char b[16];

		if (!pp_ok[t]) {
			printf("  %-32s failed\n", pps[t].name);
			continue;
		}
		printf("  %-32s %8u %9.2f %9.2f %9.2f %9.2f  %8s\n",
		       pps[t].name, pps[t].spin && pps[t].kind == K_RING ?
		       opt.pp_iters_spin : opt.pp_iters_sleep,
		       pp_med[t][3] / 1000, pp_med[t][0] / 1000,
		       pp_med[t][1] / 1000, pp_med[t][2] / 1000,
		       ratio(b, pp_med[t][0], pp_med[pps[t].spin ?
						   PP_RING_SPIN :
						   PP_RING_SLEEP][0]));
	}
	printf("  (medians over runs of each run's percentiles; /ring: against "
	       "the ring in the same mode)\n");
	if (pp_nprobe) {
		double lo = pp_probe[0], hi = pp_probe[0];

		for (unsigned int i = 1; i < pp_nprobe; i++) {
			lo = pp_probe[i] < lo ? pp_probe[i] : lo;
			hi = pp_probe[i] > hi ? pp_probe[i] : hi;
		}
		printf("  floor: one cache line bounced CPU 0 -> CPU 1 -> CPU 0 "
		       "took %.0f ns (median; %.0f-%.0f)\n  before the runs; a "
		       "ring hop needs two dependent line transfers (the index, "
		       "then the message).\n",
		       median(pp_probe, pp_nprobe), lo, hi);
	}
}

/* --csv: its own columns (bench/ring/plot.gp, bench/summary/make-charts.sh
 * read them), after the comment lines of bench/common/csv.h. */
static void write_csv(int argc, char **argv)
{
	FILE *f = fopen(opt.csv, "w");

	if (!f)
		die("%s: %s", opt.csv, strerror(errno));
	bench_csv_header(f, argc, argv);
	fprintf(f, "test,receivers,size,transport,messages,runs,sent_per_s,"
		"delivered_per_s,drops,laps,lap_lost,reorder,bad,enobufs,"
		"send_errors,spread,futex_per_msg,probe_ns\n");
	for (unsigned int a = 0; a < opt.nrx; a++)
		for (unsigned int s = 0; s < opt.nsz; s++)
			for (int t = 0; t < NTP; t++) {
				const struct cell *c = &cells[a][s][t];

				if (!opt.tp_on[t] || !c->nok)
					continue;
				fprintf(f, "tput,%u,%u,%s,%" PRIu64 ",%u,%.0f,"
					"%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRIu64 ",%.3f,%.4f,%.0f\n", opt.rx[a],
					opt.sz[s], tps[t].key, c->m, c->nok,
					c->msent, c->mdeliv, c->lost, c->laps,
					c->lap_lost, c->reorder, c->bad,
					c->enobufs, c->send_errors, c->spread,
					c->got ? (double)c->futex /
						 (double)c->got : 0,
					median((double *)c->probe, c->nok));
			}
	fprintf(f, "\ntest,size,transport,iters,min_ns,p50_ns,p99_ns,p999_ns\n");
	for (int t = 0; t < NPP; t++)
		if (pp_ok[t])
			fprintf(f, "pingpong,%u,%s,%u,%.0f,%.0f,%.0f,%.0f\n",
				opt.pp_size, pps[t].key,
				pps[t].spin && pps[t].kind == K_RING ?
				opt.pp_iters_spin : opt.pp_iters_sleep,
				pp_med[t][3], pp_med[t][0], pp_med[t][1],
				pp_med[t][2]);
	fclose(f);
}

/* --- main --------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: tdb-bench-ring [options]\n"
"tdb's shared rings against NETLINK_USERSOCK unicast and multicast and\n"
"AF_UNIX SOCK_SEQPACKET, between processes, on the same messages:\n"
"throughput (1 producer, N receivers) and ping-pong latency.\n"
"\n"
"  -r, --runs N          repeats of every case, medians reported (default 3)\n"
"  -q, --quick           one run, a quarter of the messages (~20 s)\n"
"      --scale F         multiply the message counts by F\n"
"      --receivers LIST  receiver counts (default 1,2,4,10; at most %d)\n"
"      --sizes LIST      message sizes in bytes (default 64,128,512,1024,4096)\n"
"      --transports LIST of copy,feed,copy1,feed1,nlu,nlm,unix,nlu-mm,\n"
"                        nlm-mm,unix-mm (default all)\n"
"  -b, --batch N         messages per ring publish and per sendmmsg (default 64)\n"
"      --ring-kb N       SPSC ring data size in KiB (default 1024)\n"
"      --feed-kb N       FEED ring data size in KiB (default 1024)\n"
"      --feed-nopace     let the FEED producer lap slow readers (laps counted)\n"
"      --sockbuf-kb N    SO_RCVBUF/SO_SNDBUF, forced (default 32768)\n"
"      --spin-polls N    ring receivers poll N times before sleeping (0)\n"
"      --mc-nopace       let the multicast sender run ahead (drops counted)\n"
"      --group G         netlink multicast group 1-32 (default from the pid)\n"
"      --pp-size N       ping-pong message size (default 64)\n"
"      --pp-iters N      ping-pong round trips, spin rows (default %u;\n"
"                        blocking rows: a tenth)\n"
"      --no-pin          do not pin the processes to CPUs\n"
"      --no-latency / --no-matrix   skip a part\n"
"      --csv FILE        write the medians as CSV\n"
"      --timeout S       kill a case after S seconds (default 60)\n"
"  -v, --verbose         every run's figures on stderr\n",
		MAX_RX, PP_SPIN);
}

static unsigned int parse_list(const char *s, unsigned int *v,
			       unsigned int max, unsigned int lo, unsigned int hi)
{
	unsigned int n = 0;
	char *end;

	while (*s) {
		unsigned long x = strtoul(s, &end, 10);

		if (end == s || x < lo || x > hi || n == max)
			die("bad list '%s' (values %u-%u, at most %u)", s, lo,
			    hi, max);
		v[n++] = (unsigned int)x;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			die("bad list near '%s'", end);
	}
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "runs", 1, 0, 'r' }, { "quick", 0, 0, 'q' },
		{ "scale", 1, 0, 1 }, { "receivers", 1, 0, 2 },
		{ "sizes", 1, 0, 3 }, { "transports", 1, 0, 4 },
		{ "batch", 1, 0, 'b' }, { "ring-kb", 1, 0, 5 },
		{ "feed-kb", 1, 0, 6 }, { "sockbuf-kb", 1, 0, 7 },
		{ "spin-polls", 1, 0, 8 }, { "mc-nopace", 0, 0, 9 },
		{ "group", 1, 0, 10 }, { "pp-size", 1, 0, 11 },
		{ "pp-iters", 1, 0, 12 }, { "no-pin", 0, 0, 13 },
		{ "no-latency", 0, 0, 14 }, { "no-matrix", 0, 0, 15 },
		{ "csv", 1, 0, 16 }, { "timeout", 1, 0, 17 },
		{ "feed-nopace", 0, 0, 18 }, { "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct cpu_sample c0, c1, cs;
	char cpu[256];
	struct utsname u;
	uint64_t t_start = now_ns();
	bool quick = false, tp_given = false;
	double steal, o;
	int ch;

	for (int t = 0; t < NTP; t++)
		opt.tp_on[t] = true;
	while ((ch = getopt_long(argc, argv, "r:qb:vh", lo, NULL)) != -1) {
		switch (ch) {
		case 'r':
			opt.runs = (unsigned int)atoi(optarg);
			if (opt.runs < 1 || opt.runs > MAX_RUNS)
				die("--runs: 1-%d", MAX_RUNS);
			break;
		case 'q': quick = true; break;
		case 1: opt.scale = atof(optarg); break;
		case 2:
			opt.nrx = parse_list(optarg, opt.rx, MAX_LIST, 1, MAX_RX);
			break;
		case 3:
			opt.nsz = parse_list(optarg, opt.sz, MAX_LIST, 64,
					     MSG_MAX);
			break;
		case 4: {
			char *s = strdup(optarg), *tok, *save = NULL;

			tp_given = true;
			for (int t = 0; t < NTP; t++)
				opt.tp_on[t] = false;
			for (tok = strtok_r(s, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				int t;

				for (t = 0; t < NTP; t++)
					if (!strcmp(tok, tps[t].key))
						break;
				if (t == NTP)
					die("unknown transport '%s'", tok);
				opt.tp_on[t] = true;
			}
			free(s);
			break;
		}
		case 'b':
			opt.batch = (unsigned int)atoi(optarg);
			if (opt.batch < 1 || opt.batch > MAX_BATCH)
				die("--batch: 1-%d", MAX_BATCH);
			break;
		case 5: opt.ring_kb = (uint32_t)atoi(optarg); break;
		case 6: opt.feed_kb = (uint32_t)atoi(optarg); break;
		case 7: opt.sockbuf_kb = (uint32_t)atoi(optarg); break;
		case 8: opt.spin_polls = (unsigned int)atoi(optarg); break;
		case 9: opt.mc_pace = false; break;
		case 10:
			opt.group = (unsigned int)atoi(optarg);
			if (opt.group < 1 || opt.group > 32)
				die("--group: 1-32");
			break;
		case 11:
			opt.pp_size = (unsigned int)atoi(optarg);
			if (opt.pp_size < 64 || opt.pp_size > MSG_MAX)
				die("--pp-size: 64-%u", MSG_MAX);
			break;
		case 12:
			opt.pp_iters_spin = (unsigned int)atoi(optarg);
			opt.pp_iters_sleep = opt.pp_iters_spin / 10;
			break;
		case 13: opt.pin = false; break;
		case 14: opt.latency = false; break;
		case 15: opt.matrix = false; break;
		case 16: opt.csv = optarg; break;
		case 17: opt.timeout_s = (unsigned int)atoi(optarg); break;
		case 18: opt.feed_pace = false; break;
		case 'v': opt.verbose = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	(void)tp_given;
	if (quick) {
		opt.runs = 1;
		opt.scale *= 0.25;
		opt.pp_iters_spin /= 4;
		opt.pp_iters_sleep /= 4;
	}
	if (opt.pp_iters_sleep < 100)
		opt.pp_iters_sleep = 100;
	if (opt.pp_iters_spin < 100)
		opt.pp_iters_spin = 100;
	{
		uint32_t rk = opt.ring_kb * 1024;

		if (rk < TDB_RING_MIN_DATA || (rk & (rk - 1)) ||
		    rk > TDB_RING_MAX_DATA)
			die("--ring-kb: a power of two, 4 KiB - 1 GiB");
		if ((opt.feed_kb & (opt.feed_kb - 1)) ||
		    opt.feed_kb < 4 || opt.feed_kb > (1u << 20))
			die("--feed-kb: a power of two, 4 KiB - 1 GiB");
		for (unsigned int s = 0; s < opt.nsz; s++)
			if (opt.sz[s] > rk / 2 || opt.sz[s] > RING_MAXMSG ||
			    opt.sz[s] > opt.feed_kb * 512)
				die("size %u does not fit the rings", opt.sz[s]);
	}
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (!opt.group)
		opt.group = 1 + (unsigned int)getpid() % 32;
	setvbuf(stdout, NULL, _IOLBF, 0);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		cookie = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^
			 0x7db5eedc0ffee123ull;
	}
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		die("mmap: %s", strerror(errno));

	/* header */
	cpu_model(cpu, sizeof(cpu));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	printf("tdb-bench-ring: shared rings vs NETLINK_USERSOCK unicast/"
	       "multicast vs AF_UNIX SOCK_SEQPACKET, between processes\n");
	printf("  machine   %s, %d CPUs online, kernel %s\n", cpu, ncpu,
	       u.release);
	cpu_sample(&c0);
	usleep(300000);
	cpu_sample(&c1);
	o = cpu_others(&c0, &c1, &steal);
	if (o >= 0)
		printf("  others    other processes used %.0f%% of the CPUs just "
		       "before the start%s\n", o * 100,
		       o > 0.1 ? " - the figures will be noisy" : "");
	printf("  build     gcc %s%s%s\n", __VERSION__,
#ifdef __OPTIMIZE__
	       ", optimised",
#else
	       ", NOT optimised: the figures mean little",
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	       ", SANITIZER build: the figures mean little"
#else
	       ""
#endif
	       );
	printf("  pinning   %s\n", !opt.pin ? "none (--no-pin)" :
	       ncpu >= 2 ? "producer / ping on CPU 0, every receiver / pong on "
	       "CPU 1" : "only 1 CPU: none");
	printf("  rings     SPSC %u KiB each, FEED %u KiB (%s); publish every "
	       "%u messages\n            (publish/msg rows: every message); "
	       "receivers %s\n", opt.ring_kb, opt.feed_kb,
	       opt.feed_pace ? "producer paced to half a ring ahead of the "
	       "slowest reader" : "producer not paced: laps counted",
	       opt.batch, opt.spin_polls ? "poll, then sleep on the futex" :
	       "sleep on the futex when the ring is empty");
	printf("  sockets   SO_RCVBUF/SO_SNDBUF %u KiB (forced), blocking; "
	       "multicast group %u, %s\n", opt.sockbuf_kb, opt.group,
	       opt.mc_pace ? "sender paced to the slowest receiver's buffer" :
	       "sender not paced (drops counted)");
	printf("  messages  rings: up to %.0fk and %.0f MiB per case "
	       "(publish/msg rows: an eighth);\n            sockets: %.0fk per "
	       "receiver; %u run%s per case, medians\n",
	       RING_MSGS * opt.scale / 1000, RING_BYTES * opt.scale / 1048576.0,
	       SOCK_MSGS * opt.scale / 1000, opt.runs,
	       opt.runs == 1 ? "" : "s");

	/* the matrix, runs interleaved: run 1 of every case, then run 2... */
	if (opt.matrix) {
		for (unsigned int run = 0; run < opt.runs; run++) {
			struct cpu_sample r0, r1;

			cpu_sample(&r0);
			for (unsigned int a = 0; a < opt.nrx; a++)
			for (unsigned int s = 0; s < opt.nsz; s++)
			for (int t = 0; t < NTP; t++) {
				static struct tcase c;
				struct cell *cl = &cells[a][s][t];
				struct tres r;

				if (!opt.tp_on[t])
					continue;
				memset(&c, 0, sizeof(c));
				c.tp = (enum tp)t;
				c.n = opt.rx[a];
				c.size = opt.sz[s];
				c.m = msgs_for(c.tp, c.size);
				c.feed_size = opt.feed_kb * 1024;
				cl->m = c.m;
				run_case(&c, &r);
				if (opt.verbose)
					fprintf(stderr, "run %u %s n=%u s=%zu: "
						"probe %.0f ns, "
						"%.0f sent/s %.0f deliv/s %.3f s"
						"; wakes %" PRIu64 " space waits %"
						PRIu64 " rx sleeps %" PRIu64 "\n",
						run, tps[t].key, c.n, c.size,
						r.probe, r.sent, r.delivered,
						r.secs,
						ctl->wakes, ctl->space_waits,
						r.futex - ctl->wakes -
						ctl->space_waits);
				if (!r.ok)
					continue;
				cl->probe[cl->nok] = r.probe;
				cl->sent[cl->nok] = r.sent;
				cl->deliv[cl->nok] = r.delivered;
				cl->nok++;
				cl->lost += r.lost;
				cl->laps += r.laps;
				cl->lap_lost += r.lap_lost;
				cl->reorder += r.reorder;
				cl->bad += r.bad;
				cl->enobufs += r.enobufs;
				cl->send_errors += r.send_errors;
				cl->paced += r.paced;
				cl->got += r.got;
				cl->futex += r.futex;
			}
			cpu_sample(&r1);
			o = cpu_others(&r0, &r1, &steal);
			fprintf(stderr, "tdb-bench-ring: matrix run %u of %u "
				"done (%.0f s; others %.0f%%, steal %.0f%%)\n",
				run + 1, opt.runs,
				(double)(now_ns() - t_start) * 1e-9, o * 100,
				steal * 100);
		}
	}
	if (opt.latency) {
		for (unsigned int run = 0; run < opt.runs; run++) {
			double pr = probe_xcpu();

			if (pr > 0)
				pp_probe[pp_nprobe++] = pr;
			for (int t = 0; t < NPP; t++) {
				struct ppcase c;

				memset(&c, 0, sizeof(c));
				c.pp = (enum pp)t;
				c.iters = pps[t].spin && pps[t].kind == K_RING ?
					  opt.pp_iters_spin : opt.pp_iters_sleep;
				c.warm = c.iters / 10;
				run_pp(&c, &ppres[t][run]);
				if (opt.verbose)
					fprintf(stderr, "run %u ping-pong %s: "
						"p50 %.0f ns p99 %.0f ns\n", run,
						pps[t].key, ppres[t][run].p50,
						ppres[t][run].p99);
			}
		}
		for (int t = 0; t < NPP; t++) {
			double v[5][MAX_RUNS];
			unsigned int n = 0;

			for (unsigned int run = 0; run < opt.runs; run++) {
				const struct pres *p = &ppres[t][run];

				if (!p->ok)
					continue;
				v[0][n] = p->p50;
				v[1][n] = p->p99;
				v[2][n] = p->p999;
				v[3][n] = p->min;
				v[4][n] = p->mean;
				n++;
			}
			pp_ok[t] = n > 0;
			for (int k = 0; k < 5; k++)
				pp_med[t][k] = median(v[k], n);
		}
	}

	/* report */
	if (opt.matrix) {
		finish_cells();
		printf("\nThroughput: messages/s, medians of %u run%s. sent/s: "
		       "distinct messages per second at the producer;\n"
		       "delivered/s: messages received by all receivers "
		       "together per second (N x sent for\nN receivers); drops: "
		       "lost + ENOBUFS + failed sends (all runs); laps: FEED "
		       "overruns;\nfutex/1k: ring futex calls (wakes sent, producer waits for "
		       "space, receiver sleeps)\nper 1000 messages delivered; "
		       "/nl-uni, /nl-mc, /unix: delivered/s against "
		       "the socket rows of one send per message;\nspread: (max - min) / median "
		       "of delivered/s over the runs.\n",
		       opt.runs, opt.runs == 1 ? "" : "s");
		for (unsigned int a = 0; a < opt.nrx; a++)
			for (unsigned int s = 0; s < opt.nsz; s++)
				print_case(a, s);
		printf("\nSummary");
		print_matrix(TP_COPY, "ring SPSC x N (copies), publish/B");
		print_matrix(TP_FEED, "ring FEED, publish/B");
		print_matrix(TP_NLU, "netlink unicast");
		print_matrix(TP_NLM, "netlink multicast");
		print_matrix(TP_UNIX, "AF_UNIX seqpacket");
		print_ratio_matrix(TP_COPY, TP_NLU,
				   "ring SPSC copies / netlink unicast");
		print_ratio_matrix(TP_FEED, TP_NLM,
				   "ring FEED / netlink multicast");
		print_ratio_matrix(TP_FEED, TP_COPY,
				   "ring FEED / ring SPSC copies");
		{
			uint64_t paced = 0, nlm_drops = 0;

			for (unsigned int a = 0; a < opt.nrx; a++)
				for (unsigned int s = 0; s < opt.nsz; s++)
					for (int t = TP_NLM; t < NTP;
					     t += TP_NLM_MM - TP_NLM) {
						paced += cells[a][s][t].paced;
						nlm_drops += cells[a][s][t].lost +
							cells[a][s][t].enobufs;
					}
			if (opt.tp_on[TP_NLM] || opt.tp_on[TP_NLM_MM])
				printf("\nnetlink multicast: the sender waited "
				       "for the slowest receiver %" PRIu64
				       " times; drops %" PRIu64 "\n", paced,
				       nlm_drops);
		}
	}
	if (opt.latency)
		print_pp();
	print_goals();
	cpu_sample(&cs);
	o = cpu_others(&c1, &cs, &steal);
	printf("\nTotal %.0f s", (double)(now_ns() - t_start) * 1e-9);
	if (o >= 0)
		printf("; meanwhile other processes used %.0f%% of the CPUs, the "
		       "hypervisor stole %.0f%%%s", o * 100, steal * 100,
		       o > 0.1 || steal > 0.05 ? ": figures are noisy" : "");
	printf(".\n");
	if (opt.csv)
		write_csv(argc, argv);
	return 0;
}
