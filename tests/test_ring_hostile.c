// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ring_hostile.c - a ring whose peer is hostile.
 *
 * Each scenario runs a victim and a hostile peer in two processes over a
 * memfd for TDB_RING_HOSTILE_MS milliseconds (default 4000).  The victim
 * maps [guard][header][guard][data][guard] with PROT_NONE guards, so any
 * read or write outside the header page and the data_size bytes of data
 * faults; in the ASan build the victim also runs under ASan (its private
 * message copy is a heap block of exactly max_msg bytes).
 *
 *   producer   a hostile producer writes random bytes into the data, the
 *              indices (prod, tail, cons), flags and futex, and the
 *              header's constants, mixed with bursts of valid messages and
 *              a "flipper" that keeps changing a published message's
 *              nlmsg_len.  The victim consumer runs tdb_ring_consume,
 *              tdb_ring_pending and tdb_ring_wait (short timeouts); it must
 *              never crash, never fault, never take long over one call,
 *              only hand up private copies that stay the same and whose
 *              length is within max_msg, and report violations as -EPROTO
 *              with a text (then it re-attaches).  Violations must be seen.
 *   consumer   a hostile consumer (data mapped read-only, as it would be)
 *              scribbles cons, flags, futex, prod and the constants, and
 *              sometimes frees space honestly.  The victim producer
 *              reserves, builds, commits, publishes and waits for space:
 *              it must never crash or write outside its data (guard pages,
 *              and every reservation is checked to lie within the data),
 *              and must report -EPROTO (seen) or keep getting EAGAIN.
 *   feed       a hostile FEED producer (the owner is trusted, but a reader
 *              must survive a buggy one, and its normal lapping already
 *              overwrites what readers copy) scribbles data, prod, tail and
 *              constants among valid, sequence-numbered messages.  The
 *              victim FEED reader (header and data read-only) runs
 *              tdb_feed_read and tdb_feed_wait: no crash, no fault, bounded
 *              calls, -EPROTO or -EOVERFLOW reported.
 *
 * A hostile FEED *reader* is not a scenario: readers map the header and
 * the data read-only, so there is nothing a reader can do to the producer
 * or to other readers; the MMU enforces it, not the library.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define HDR     TDB_RING_HDR_SIZE
#define GUARD   4096u
#define DATA    16384u
#define MAXMSG  4096u
#define MTYPE   0x33
#define NREASON 32

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

enum scen { SC_PRODUCER, SC_CONSUMER, SC_FEED };
static const char *const scen_name[] = { "producer", "consumer", "feed" };

struct ctl {
	uint64_t calls, msgs, violations, attach_refused, overflows, eagain;
	uint64_t timeouts, reserved, max_call_ns, hostile_acts;
	uint32_t nreason;
	char reason[NREASON][96];
	char err[300];
};

static struct ctl *ctl;
static uint64_t call_limit_ns = 2000000000ull;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rng(s) >> 32) * n) >> 32);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctl->err, sizeof(ctl->err), fmt, ap);
	va_end(ap);
	fprintf(stderr, "victim: %s\n", ctl->err);
	_exit(1);
}

static void note_reason(const char *why)
{
	uint32_t i;

	if (!why || !why[0])
		die("-EPROTO without an error text");
	for (i = 0; i < ctl->nreason; i++)
		if (!strncmp(ctl->reason[i], why, sizeof(ctl->reason[i]) - 1))
			return;
	if (ctl->nreason < NREASON)
		snprintf(ctl->reason[ctl->nreason++], sizeof(ctl->reason[0]),
			 "%s", why);
}

static void timed(uint64_t t0, const char *what)
{
	uint64_t ns = now_ns() - t0;

	if (ns > ctl->max_call_ns)
		ctl->max_call_ns = ns;
	if (ns > call_limit_ns)
		die("%s took %.3f s", what, (double)ns / 1e9);
}

static void *xmap(void *addr, size_t len, int prot, int fd, off_t off)
{
	void *p = mmap(addr, len, prot, MAP_SHARED | MAP_FIXED, fd, off);

	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	return p;
}

/* [guard][header][guard][data][guard] */
static void map_guarded(int fd, int hdr_prot, int data_prot,
			struct tdb_ring_hdr **hdr, unsigned char **data)
{
	size_t total = GUARD + HDR + GUARD + DATA + GUARD;
	unsigned char *base = mmap(NULL, total, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	*hdr = xmap(base + GUARD, HDR, hdr_prot, fd, 0);
	*data = xmap(base + GUARD + HDR + GUARD, DATA, data_prot, fd, HDR);
}

static void futex_wake(uint32_t *f)
{
	syscall(SYS_futex, f, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* victims                                                              */

struct vstate {
	const unsigned char *lo, *hi;   /* the guarded mapping, whole */
	uint32_t max_msg;
	uint64_t msgs;
};

static uint64_t fnv(const unsigned char *b, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int victim_fn(void *arg, const struct nlmsghdr *nlh)
{
	struct vstate *v = arg;
	const unsigned char *b = (const unsigned char *)nlh;
	uint32_t len = nlh->nlmsg_len, i;
	uint64_t h1, h2;

	if (b >= v->lo && b < v->hi)
		die("a message was handed up inside the shared mapping");
	if (len < NLMSG_HDRLEN || len > v->max_msg)
		die("a message of %u bytes was handed up (max_msg %u)", len,
		    v->max_msg);
	/* every byte readable (ASan checks the private copy), and it does
	 * not change under us */
	h1 = fnv(b, len);
	for (i = 0; i < 200; i++)
		cpu_relax();
	h2 = fnv(b, len);
	if (h1 != h2 || nlh->nlmsg_len != len)
		die("the message handed up changed while fn looked at it");
	v->msgs++;
	return 0;
}

static void victim_consumer(int fd, uint64_t ms, bool feed)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring r;
	struct vstate v;
	uint64_t s = now_ns(), end = now_ns() + ms * 1000000u;
	uint32_t kind = feed ? TDB_RING_FEED : TDB_RING_SUBMIT;
	bool attached = false;
	int rc;

	alarm((unsigned int)(ms / 1000 + 60));  /* a hang: killed, fails */
	map_guarded(fd, feed ? PROT_READ : PROT_READ | PROT_WRITE, PROT_READ,
		    &hdr, &data);
	v.lo = data - GUARD - HDR - GUARD;
	v.hi = data + DATA + GUARD;
	v.max_msg = MAXMSG;
	v.msgs = 0;
	while (now_ns() < end) {
		uint64_t t0, lost = 0;
		long pend;
		int op;

		if (!attached) {
			t0 = now_ns();
			rc = tdb_ring_attach_consumer(&r, hdr, data, DATA, kind);
			timed(t0, "attach");
			if (rc == -EPROTO) {
				ctl->attach_refused++;
				note_reason(tdb_ring_error(&r));
				usleep(20);
				continue;
			}
			if (rc)
				die("attach: %d", rc);
			if (r.max_msg > DATA / 2)
				die("attached with max_msg %u", r.max_msg);
			v.max_msg = r.max_msg;
			attached = true;
		}
		op = (int)rnd(&s, 10);
		ctl->calls++;
		t0 = now_ns();
		if (feed) {
			if (op < 8)
				rc = tdb_feed_read(&r, 1 + rnd(&s, 64),
						   victim_fn, &v, &lost);
			else
				rc = tdb_feed_wait(&r, (int)rnd(&s, 3));
			timed(t0, op < 8 ? "tdb_feed_read" : "tdb_feed_wait");
			if (rc == -EOVERFLOW) {
				ctl->overflows++;
				continue;
			}
			if (rc == -ETIMEDOUT) {
				ctl->timeouts++;
				continue;
			}
			if (rc >= 0 || rc == -EINTR)
				continue;
		} else if (op < 6) {
			rc = tdb_ring_consume(&r, 1 + rnd(&s, 64), victim_fn,
					      &v);
			timed(t0, "tdb_ring_consume");
			if (rc >= 0)
				continue;
		} else if (op < 7) {
			pend = tdb_ring_pending(&r);
			timed(t0, "tdb_ring_pending");
			if (pend > (long)DATA)
				die("pending %ld > data size", pend);
			if (pend >= 0)
				continue;
			rc = (int)pend;
		} else {
			rc = tdb_ring_wait(&r, (int)rnd(&s, 3));
			timed(t0, "tdb_ring_wait");
			if (rc == -ETIMEDOUT) {
				ctl->timeouts++;
				continue;
			}
			if (rc == 0 || rc == -EINTR)
				continue;
		}
		if (rc != -EPROTO)
			die("op %d returned %d", op, rc);
		ctl->violations++;
		note_reason(tdb_ring_error(&r));
		tdb_ring_detach(&r);
		attached = false;
	}
	if (attached)
		tdb_ring_detach(&r);
	ctl->msgs = v.msgs;
	_exit(0);
}

static void victim_producer(int fd, uint64_t ms)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring p;
	uint64_t s = now_ns(), end = now_ns() + ms * 1000000u;
	bool attached = false;
	int rc;

	alarm((unsigned int)(ms / 1000 + 60));
	map_guarded(fd, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE, &hdr,
		    &data);
	while (now_ns() < end) {
		uint32_t len;
		unsigned char *w;
		uint64_t t0;

		if (!attached) {
			/* we own the ring: start it afresh */
			tdb_ring_format(hdr, TDB_RING_SUBMIT, DATA, MAXMSG);
			rc = tdb_ring_attach_producer(&p, hdr, data, DATA,
						      TDB_RING_SUBMIT);
			if (rc == -EPROTO) {
				ctl->attach_refused++;
				note_reason(tdb_ring_error(&p));
				continue;
			}
			if (rc)
				die("attach: %d", rc);
			attached = true;
		}
		ctl->calls++;
		len = 16 + rnd(&s, MAXMSG - 15);
		t0 = now_ns();
		w = tdb_ring_reserve(&p, len);
		timed(t0, "tdb_ring_reserve");
		if (w) {
			if (w < data || w + len > data + DATA ||
			    ((uintptr_t)w & 3))
				die("reserve(%u) returned %p, data is [%p, +%u)",
				    len, (void *)w, (void *)data, DATA);
			memset(w, 0x5c, len);   /* faults if outside */
			((struct nlmsghdr *)w)->nlmsg_len = len;
			((struct nlmsghdr *)w)->nlmsg_type = MTYPE;
			if ((rc = tdb_ring_commit(&p, len)))
				die("commit: %d", rc);
			ctl->reserved++;
			if (rnd(&s, 4) == 0) {
				t0 = now_ns();
				rc = tdb_ring_publish(&p);
				timed(t0, "tdb_ring_publish");
				if (rc >= 0)
					continue;
			} else {
				continue;
			}
		} else if (errno == EAGAIN) {
			ctl->eagain++;
			t0 = now_ns();
			rc = rnd(&s, 2) ? tdb_ring_wait_space(&p, len,
							      (int)rnd(&s, 3))
					: tdb_ring_publish(&p);
			timed(t0, "wait_space/publish");
			if (rc == -ETIMEDOUT)
				ctl->timeouts++;
			if (rc >= 0 || rc == -ETIMEDOUT || rc == -EINTR)
				continue;
		} else {
			rc = -errno;
		}
		if (rc != -EPROTO)
			die("producer got %d", rc);
		ctl->violations++;
		note_reason(tdb_ring_error(&p));
		tdb_ring_detach(&p);
		attached = false;
	}
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* hostile peers                                                        */

static uint64_t weird_index(uint64_t *s, uint64_t near)
{
	switch (rnd(s, 9)) {
	case 0: return rng(s);
	case 1: return near + rnd(s, 2 * DATA);
	case 2: return near - rnd(s, 256);
	case 3: return near + 1 + rnd(s, 3);
	case 4: return near + DATA;
	case 5: return near + DATA + 4;
	case 6: return near + (rnd(s, DATA / 4) & ~3u);
	case 7: return ~0ull - rnd(s, 8);
	default: return near;
	}
}

static uint32_t weird_len(uint64_t *s, uint32_t rem)
{
	switch (rnd(s, 12)) {
	case 0: return 0;
	case 1: return 15;
	case 2: return 16;
	case 3: return 17;
	case 4: return MAXMSG;
	case 5: return MAXMSG + 4;
	case 6: return rem;
	case 7: return rem + 4;
	case 8: return 0xffffffffu;
	case 9: return 0x80000000u;
	case 10: return DATA;
	default: return (uint32_t)rng(s);
	}
}

static void scribble_constants(uint64_t *s, struct tdb_ring_hdr *h)
{
	switch (rnd(s, 6)) {
	case 0: h->magic ^= 1ull << rnd(s, 64); break;
	case 1: h->version = rnd(s, 4); break;
	case 2: h->kind = rnd(s, 5); break;
	case 3: h->hdr_size = (uint32_t)rng(s); break;
	case 4: h->data_size = rnd(s, 2) ? DATA * 2 : (uint32_t)rng(s); break;
	default: h->max_msg = rnd(s, 2) ? DATA : (uint32_t)rng(s); break;
	}
}

static void restore_constants(struct tdb_ring_hdr *h, uint32_t kind)
{
	h->magic = TDB_RING_MAGIC;
	h->version = TDB_RING_VERSION;
	h->kind = kind;
	h->hdr_size = HDR;
	h->data_size = DATA;
	h->max_msg = MAXMSG;
}

/* The hostile producer (SUBMIT or FEED): valid bursts among garbage. */
static void hostile_producer(int fd, bool feed, uint64_t seed)
{
	unsigned char *base = mmap(NULL, HDR + DATA, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd, 0);
	struct tdb_ring_hdr *h = (struct tdb_ring_hdr *)base;
	unsigned char *d = base + HDR;
	uint64_t s = seed, hp = 0, starts[1024];
	uint32_t hseq = 0, nstarts = 0, kind = feed ? TDB_RING_FEED
						    : TDB_RING_SUBMIT;

	if (base == MAP_FAILED)
		_exit(2);
	for (;;) {
		uint32_t act = rnd(&s, 100), i, n;
		uint64_t cons = feed ? hp : __atomic_load_n(&h->cons,
							    __ATOMIC_ACQUIRE);

		ctl->hostile_acts++;
		if (act < 40) {
			/* a burst of valid messages */
			if (!feed && (hp - cons > DATA || rnd(&s, 8) == 0))
				hp = cons;
			hp &= ~3ull;
			n = 1 + rnd(&s, 16);
			for (i = 0; i < n; i++) {
				uint32_t len = 16 + rnd(&s, rnd(&s, 2) ? 200 :
							    MAXMSG - 15);
				uint32_t off = (uint32_t)(hp & (DATA - 1));
				uint32_t rem = DATA - off, need = NLMSG_ALIGN(len);
				struct nlmsghdr *nlh;

				if (!feed && hp + need + (need > rem ? rem : 0) -
				    cons > DATA)
					break;          /* full */
				if (need > rem) {
					if (rem >= NLMSG_HDRLEN) {
						nlh = (void *)(d + off);
						nlh->nlmsg_len = rem;
						nlh->nlmsg_type = NLMSG_NOOP;
					}
					hp += rem;
					off = 0;
				}
				if (feed) {
					/* retire old messages first */
					uint64_t t = h->tail;
					uint32_t k;

					for (k = 0; k < nstarts; k++)
						if (hp + need - starts[k] <= DATA)
							break;
					if (k < nstarts &&
					    starts[k] > t)
						t = starts[k];
					else if (k == nstarts)
						t = hp;
					__atomic_store_n(&h->tail, t,
							 __ATOMIC_RELEASE);
					if (nstarts == 1024) {
						memmove(starts, starts + 512,
							512 * sizeof(starts[0]));
						nstarts = 512;
					}
					starts[nstarts++] = hp;
				}
				nlh = (void *)(d + off);
				memset(nlh, (int)rnd(&s, 256), need);
				nlh->nlmsg_len = len;
				nlh->nlmsg_type = MTYPE;
				nlh->nlmsg_seq = hseq++;
				hp += need;
			}
			__atomic_store_n(&h->prod, hp, __ATOMIC_RELEASE);
			__atomic_fetch_add(&h->futex, 1, __ATOMIC_SEQ_CST);
			futex_wake(&h->futex);
		} else if (act < 55) {
			uint32_t off = rnd(&s, DATA), len = 1 + rnd(&s, 64);

			for (i = 0; i < len && off + i < DATA; i++)
				d[off + i] = (unsigned char)rng(&s);
		} else if (act < 62) {
			/* a bad header where the victim will read next */
			uint64_t at = feed ? h->prod : cons;
			uint32_t off = (uint32_t)(at & (DATA - 1)) & ~3u;
			struct nlmsghdr *nlh = (void *)(d + off);

			if (DATA - off >= NLMSG_HDRLEN) {
				nlh->nlmsg_len = weird_len(&s, DATA - off);
				nlh->nlmsg_type = rnd(&s, 3) ? MTYPE : NLMSG_NOOP;
				nlh->nlmsg_seq = rnd(&s, 2) ? hseq++ : (uint32_t)rng(&s);
			}
			__atomic_store_n(&h->prod, at + (rnd(&s, DATA + 8) & ~3u),
					 __ATOMIC_RELEASE);
			if (feed)
				hp = h->prod;
		} else if (act < 70) {
			h->prod = weird_index(&s, feed ? hp : cons);
			if (rnd(&s, 2))
				hp = h->prod;
		} else if (act < 74) {
			h->cons = weird_index(&s, cons);
		} else if (act < 78) {
			h->tail = weird_index(&s, h->tail);
		} else if (act < 84) {
			if (rnd(&s, 2))
				h->flags = (uint32_t)rng(&s);
			else
				h->futex = (uint32_t)rng(&s);
			futex_wake(&h->futex);
		} else if (act < 88) {
			scribble_constants(&s, h);
		} else if (act < 93) {
			restore_constants(h, kind);
		} else if (act < 96) {
			/* the flipper: a published message whose length keeps
			 * changing while the victim copies it */
			uint64_t at = feed ? hp : cons;
			uint32_t off = (uint32_t)(at & (DATA - 1)) & ~3u;
			struct nlmsghdr *nlh = (void *)(d + off);

			if (DATA - off < 128)
				continue;
			nlh->nlmsg_len = 64;
			nlh->nlmsg_type = MTYPE;
			nlh->nlmsg_seq = hseq;
			__atomic_store_n(&h->prod, (at & ~3ull) + 64,
					 __ATOMIC_RELEASE);
			futex_wake(&h->futex);
			for (i = 0; i < 20000; i++) {
				nlh->nlmsg_len = i & 1 ? 64 : weird_len(&s, DATA - off);
				d[off + 16 + (i & 31)] ^= 0xff;
			}
			nlh->nlmsg_len = 64;
		} else {
			sched_yield();
		}
	}
}

/* The hostile consumer: maps the data read-only, as a consumer does. */
static void hostile_consumer(int fd, uint64_t seed)
{
	struct tdb_ring_hdr *h = mmap(NULL, HDR, PROT_READ | PROT_WRITE,
				      MAP_SHARED, fd, 0);
	uint64_t s = seed;

	if (h == MAP_FAILED)
		_exit(2);
	for (;;) {
		uint32_t act = rnd(&s, 100);
		uint64_t prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);

		ctl->hostile_acts++;
		if (act < 45) {
			/* honest: take everything, wake the producer */
			__atomic_store_n(&h->cons, prod, __ATOMIC_RELEASE);
			if (h->flags & TDB_RING_F_PROD_WAITING) {
				__atomic_fetch_and(&h->flags,
						   ~TDB_RING_F_PROD_WAITING,
						   __ATOMIC_SEQ_CST);
				__atomic_fetch_add(&h->futex, 1,
						   __ATOMIC_SEQ_CST);
				futex_wake(&h->futex);
			}
			usleep(rnd(&s, 50));
		} else if (act < 70) {
			h->cons = weird_index(&s, prod);
		} else if (act < 78) {
			h->flags = (uint32_t)rng(&s);
		} else if (act < 84) {
			h->futex = (uint32_t)rng(&s);
			futex_wake(&h->futex);
		} else if (act < 88) {
			h->prod = weird_index(&s, prod);
		} else if (act < 92) {
			scribble_constants(&s, h);
		} else if (act < 96) {
			restore_constants(h, TDB_RING_SUBMIT);
		} else {
			sched_yield();
		}
	}
}

/* ------------------------------------------------------------------ */

static pid_t kids[2];

static void on_alarm(int sig)
{
	static const char msg[] = "test_ring_hostile: watchdog: hung\n";

	(void)sig;
	if (kids[0] > 0)
		kill(kids[0], SIGKILL);
	if (kids[1] > 0)
		kill(kids[1], SIGKILL);
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	_exit(1);
}

static int run(enum scen sc, uint64_t ms, uint64_t seed)
{
	int fd = memfd_create("test_ring_hostile", MFD_CLOEXEC);
	unsigned char *whole;
	pid_t victim, hostile;
	int status, hstatus, failed = 0;
	uint32_t i;

	if (fd < 0 || ftruncate(fd, (off_t)tdb_ring_map_size(DATA))) {
		perror("memfd");
		return 1;
	}
	whole = mmap(NULL, HDR + DATA, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		     0);
	if (whole == MAP_FAILED ||
	    tdb_ring_format(whole, sc == SC_FEED ? TDB_RING_FEED :
			    TDB_RING_SUBMIT, DATA, MAXMSG)) {
		fprintf(stderr, "format failed\n");
		return 1;
	}
	munmap(whole, HDR + DATA);
	memset(ctl, 0, sizeof(*ctl));
	fflush(stdout);
	hostile = kids[0] = fork();
	if (hostile == 0) {
		if (sc == SC_CONSUMER)
			hostile_consumer(fd, seed);
		hostile_producer(fd, sc == SC_FEED, seed);
	}
	victim = kids[1] = fork();
	if (victim == 0) {
		if (sc == SC_CONSUMER)
			victim_producer(fd, ms);
		victim_consumer(fd, ms, sc == SC_FEED);
	}
	if (hostile < 0 || victim < 0) {
		perror("fork");
		return 1;
	}
	while (waitpid(victim, &status, 0) < 0 && errno == EINTR)
		;
	kids[1] = -1;
	if (waitpid(hostile, &hstatus, WNOHANG) == hostile) {
		fprintf(stderr, "%s: the hostile peer died early (status %#x): "
			"the test did not test\n", scen_name[sc], hstatus);
		failed = 1;
	} else {
		kill(hostile, SIGKILL);
		waitpid(hostile, NULL, 0);
	}
	kids[0] = -1;
	close(fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "%s: the victim was killed by signal %d "
				"(%s)\n", scen_name[sc], WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		fprintf(stderr, "%s: FAILED: %s (seed %" PRIu64 ")\n",
			scen_name[sc], ctl->err[0] ? ctl->err : "crashed",
			seed);
		return 1;
	}
	printf("%-8s: %" PRIu64 " calls, %" PRIu64 " messages handed up, %"
	       PRIu64 " reserved, %" PRIu64 " EAGAIN, %" PRIu64 " timeouts, %"
	       PRIu64 " overflows, %" PRIu64 " violations, %" PRIu64
	       " attaches refused, longest call %.0f us, %" PRIu64
	       " hostile acts\n", scen_name[sc], ctl->calls, ctl->msgs,
	       ctl->reserved, ctl->eagain, ctl->timeouts, ctl->overflows,
	       ctl->violations, ctl->attach_refused,
	       (double)ctl->max_call_ns / 1e3, ctl->hostile_acts);
	for (i = 0; i < ctl->nreason; i++)
		printf("          reason: %s\n", ctl->reason[i]);
	if (!ctl->violations) {
		fprintf(stderr, "%s: no violation was reported\n",
			scen_name[sc]);
		failed = 1;
	}
	if (sc != SC_CONSUMER && !ctl->msgs) {
		fprintf(stderr, "%s: no message got through\n", scen_name[sc]);
		failed = 1;
	}
	if (sc == SC_CONSUMER && !ctl->reserved) {
		fprintf(stderr, "%s: nothing was produced\n", scen_name[sc]);
		failed = 1;
	}
	fflush(stdout);
	return failed;
}

int main(void)
{
	const char *e = getenv("TDB_RING_HOSTILE_MS");
	uint64_t ms = e ? strtoull(e, NULL, 0) : 4000, seed;
	int fails = 0;

	e = getenv("TDB_RING_SEED");
	seed = e ? strtoull(e, NULL, 0) : now_ns() ^ (uint64_t)getpid();
	printf("test_ring_hostile: %" PRIu64 " ms per scenario, seed %" PRIu64
	       "\n", ms, seed);
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return 1;
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)(3 * ms / 1000 + 120));     /* a hang fails */
	fails += run(SC_PRODUCER, ms, seed);
	fails += run(SC_CONSUMER, ms, seed + 1);
	fails += run(SC_FEED, ms, seed + 2);
	printf("%d passed, %d failed\n", 3 - fails, fails);
	return fails ? 1 : 0;
}
