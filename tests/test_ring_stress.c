// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ring_stress.c - producer and consumer in two processes over a
 * memfd, many millions of messages, across many wraps.
 *
 * The producer maps the header and the data read-write; the consumer maps
 * the header read-write and the data read-only, between PROT_NONE guard
 * pages.  Every message has a random size from 16 bytes to max_msg
 * (mostly small), a 64-bit sequence number (nlmsg_seq and nlmsg_flags) and
 * an xxh64 checksum of its payload, length and sequence number
 * (nlmsg_pid); the payload is random bytes.  The consumer checks that it
 * gets every message once, in order, intact: no loss, no duplicate, no
 * reorder, no torn message.
 *
 * Two modes, each with TDB_RING_MSGS messages (default 20,000,000):
 *   spin   the consumer polls; the producer publishes in small batches
 *          and spins when the ring is full;
 *   sleep  the consumer sleeps in tdb_ring_wait whenever the ring is
 *          empty; the producer publishes in random batch sizes, pauses now
 *          and then, and when the ring is full either sleeps in
 *          tdb_ring_wait_space or yields and retries.
 * A wait that lasts 10 s is a lost wake-up and fails the run.
 *
 *   test_ring_stress [spin|sleep|both]     (default both)
 *   TDB_RING_MSGS=N   messages per mode;  TDB_RING_SEED=S   reproduce
 *
 * Prints messages/s per mode.  A child's failure is its exit status; the
 * parent kills the other child and fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ring.h"

#define HDR     TDB_RING_HDR_SIZE
#define GUARD   4096u
#define MTYPE   0x77
#define POOL    (1u << 20)
#define STUCK_MS 10000

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

struct mode {
	const char *name;
	bool sleep;
	uint32_t data_size, max_msg;
};

static const struct mode modes[] = {
	{ "spin",  false, 65536, 0 },           /* max_msg 32 KiB */
	{ "sleep", true,  16384, 0 },           /* max_msg 8 KiB: often full */
};

/* shared between the processes (MAP_SHARED before fork) */
struct stats {
	/* producer */
	uint64_t full, wait_space, wait_space_sleeps, publishes, wakes, pauses;
	uint64_t bytes, max_seen;
	/* consumer */
	uint64_t got, empty, waits, consume_calls;
	uint64_t first_ns, last_ns;
	char err[2][400];
};

static struct stats *st;
static unsigned char *pool;
static uint64_t seed;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rng_next(s) >> 32) * n) >> 32);
}

/* child: record why, exit 1 */
static void die(int who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err[who], sizeof(st->err[who]), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", who ? "consumer" : "producer",
		st->err[who]);
	_exit(1);
}

static uint32_t msg_sum(const unsigned char *payload, uint32_t plen,
			uint64_t seq, uint32_t len)
{
	return (uint32_t)XXH64(payload, plen, seq ^ ((uint64_t)len << 40));
}

/* sizes: mostly small, some medium, a few up to max_msg, some exactly it */
static uint32_t pick_len(uint64_t *s, uint32_t max_msg)
{
	uint32_t r = rnd(s, 1000), big = max_msg < 8192 ? max_msg : 8192;

	if (r < 600)
		return 16 + rnd(s, 113);                /* 16..128 */
	if (r < 900)
		return 129 + rnd(s, 896);               /* ..1024 */
	if (r < 995)
		return 1025 + rnd(s, big - 1024);      /* ..8 KiB */
	if (r < 998)
		return big + rnd(s, max_msg - big + 1); /* ..max_msg */
	return max_msg - rnd(s, 4);                 /* max_msg and around */
}

/* ------------------------------------------------------------------ */

static void *map_at(void *addr, size_t len, int prot, int fd, off_t off)
{
	void *p = mmap(addr, len, prot, MAP_SHARED | MAP_FIXED, fd, off);

	if (p == MAP_FAILED) {
		perror("mmap");
		_exit(2);
	}
	return p;
}

/* [guard][header][guard][data][guard], data writable or not */
static void map_ring(int fd, uint32_t size, bool data_rw,
		     struct tdb_ring_hdr **hdr, unsigned char **data)
{
	size_t total = GUARD + HDR + GUARD + size + GUARD;
	unsigned char *base = mmap(NULL, total, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED) {
		perror("mmap");
		_exit(2);
	}
	*hdr = map_at(base + GUARD, HDR, PROT_READ | PROT_WRITE, fd, 0);
	*data = map_at(base + GUARD + HDR + GUARD, size,
		       data_rw ? PROT_READ | PROT_WRITE : PROT_READ, fd, HDR);
}

static void producer(int fd, const struct mode *m, uint64_t n)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring r;
	uint64_t s = seed, seq, batch_left;
	uint32_t max_msg;
	int rc;

	map_ring(fd, m->data_size, true, &hdr, &data);
	rc = tdb_ring_attach_producer(&r, hdr, data, m->data_size,
				      TDB_RING_SUBMIT);
	if (rc)
		die(0, "attach: %d (%s)", rc, tdb_ring_error(&r));
	max_msg = r.max_msg;
	batch_left = 1;
	for (seq = 0; seq < n; seq++) {
		uint32_t len = pick_len(&s, max_msg), spins = 0;
		struct nlmsghdr *nlh;
		unsigned char *w;

		while (!(w = tdb_ring_reserve(&r, len))) {
			if (errno != EAGAIN)
				die(0, "reserve(%u) at seq %" PRIu64 ": errno %d "
				    "(%s)", len, seq, errno,
				    tdb_ring_error(&r) ? tdb_ring_error(&r) : "");
			if (!spins++)
				st->full++;
			if (tdb_ring_publish(&r) == 1)
				st->wakes++;
			if (m->sleep && rnd(&s, 2)) {
				uint64_t t0 = now_ns();

				st->wait_space++;
				rc = tdb_ring_wait_space(&r, len, STUCK_MS);
				if (rc == -ETIMEDOUT)
					die(0, "asleep %d ms waiting for %u bytes "
					    "at seq %" PRIu64 " (prod %llu cons "
					    "%llu flags %#x futex %u; own pos "
					    "%llu published %llu cons seen %llu)"
					    ": lost wake-up?",
					    STUCK_MS, len, seq,
					    (unsigned long long)hdr->prod,
					    (unsigned long long)hdr->cons,
					    hdr->flags, hdr->futex,
					    (unsigned long long)r.pos,
					    (unsigned long long)r.published,
					    (unsigned long long)r.other);
				if (rc)
					die(0, "wait_space: %d", rc);
				if (now_ns() - t0 > 20000)
					st->wait_space_sleeps++;
			} else if (spins % 64 == 0) {
				sched_yield();
			} else {
				cpu_relax();
			}
		}
		if ((uintptr_t)w < (uintptr_t)data ||
		    (uintptr_t)w + len > (uintptr_t)data + m->data_size ||
		    ((uintptr_t)w & 3))
			die(0, "reserve(%u) gave %p outside [%p, +%u)", len,
			    (void *)w, (void *)data, m->data_size);
		nlh = (struct nlmsghdr *)w;
		nlh->nlmsg_len = len;
		nlh->nlmsg_type = MTYPE;
		nlh->nlmsg_flags = (uint16_t)(seq >> 32);
		nlh->nlmsg_seq = (uint32_t)seq;
		memcpy(w + NLMSG_HDRLEN, pool + rnd(&s, POOL),
		       len - NLMSG_HDRLEN);
		nlh->nlmsg_pid = msg_sum(w + NLMSG_HDRLEN, len - NLMSG_HDRLEN,
					 seq, len);
		rc = tdb_ring_commit(&r, len);
		if (rc)
			die(0, "commit(%u): %d", len, rc);
		st->bytes += NLMSG_ALIGN(len);
		if (len > st->max_seen)
			st->max_seen = len;
		if (--batch_left == 0) {
			rc = tdb_ring_publish(&r);
			if (rc < 0)
				die(0, "publish: %d", rc);
			st->publishes++;
			st->wakes += (uint64_t)rc;
			if (m->sleep) {
				batch_left = 1 + rnd(&s, 256);
				/* now and then let the consumer fall asleep */
				if (rnd(&s, 64) == 0) {
					st->pauses++;
					usleep(rnd(&s, 300));
				}
			} else {
				batch_left = 1 + rnd(&s, 32);
			}
		}
	}
	rc = tdb_ring_publish(&r);
	if (rc < 0)
		die(0, "last publish: %d", rc);
	st->wakes += (uint64_t)rc;
	tdb_ring_detach(&r);
	_exit(0);
}

struct cstate {
	uint64_t next;
	const unsigned char *lo, *hi;
	char bad[300];
};

static int check(void *arg, const struct nlmsghdr *nlh)
{
	struct cstate *c = arg;
	const unsigned char *b = (const unsigned char *)nlh;
	uint32_t len = nlh->nlmsg_len;
	uint64_t seq = ((uint64_t)nlh->nlmsg_flags << 32) | nlh->nlmsg_seq;

	if (b >= c->lo && b < c->hi)
		snprintf(c->bad, sizeof(c->bad), "message %" PRIu64 " handed "
			 "up inside the shared data", c->next);
	else if (len < NLMSG_HDRLEN || nlh->nlmsg_type != MTYPE)
		snprintf(c->bad, sizeof(c->bad), "message %" PRIu64 ": len %u "
			 "type %#x", c->next, len, nlh->nlmsg_type);
	else if (seq != c->next)
		snprintf(c->bad, sizeof(c->bad), "expected seq %" PRIu64 ", got "
			 "%" PRIu64 " (%s)", c->next, seq,
			 seq < c->next ? "duplicate or reorder" :
					 "loss or reorder");
	else if (nlh->nlmsg_pid != msg_sum(b + NLMSG_HDRLEN,
					   len - NLMSG_HDRLEN, seq, len))
		snprintf(c->bad, sizeof(c->bad), "message %" PRIu64 " (len %u): "
			 "checksum mismatch", seq, len);
	if (c->bad[0])
		return -EBADMSG;
	c->next++;
	return 0;
}

static void consumer(int fd, const struct mode *m, uint64_t n)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring r;
	struct cstate c = { 0 };
	uint64_t s = seed ^ 0xc0ffee, empties = 0;
	int rc;

	map_ring(fd, m->data_size, false, &hdr, &data);
	rc = tdb_ring_attach_consumer(&r, hdr, data, m->data_size,
				      TDB_RING_SUBMIT);
	if (rc)
		die(1, "attach: %d (%s)", rc, tdb_ring_error(&r));
	c.lo = data;
	c.hi = data + m->data_size;
	while (c.next < n) {
		rc = tdb_ring_consume(&r, 1 + rnd(&s, 1024), check, &c);
		st->consume_calls++;
		if (rc == -EBADMSG)
			die(1, "%s", c.bad);
		if (rc < 0)
			die(1, "consume at seq %" PRIu64 ": %d (%s)", c.next,
			    rc, tdb_ring_error(&r) ? tdb_ring_error(&r) : "");
		if (rc > 0) {
			if (!st->first_ns)
				st->first_ns = now_ns();
			st->got = c.next;
			continue;
		}
		st->empty++;
		if (m->sleep) {
			st->waits++;
			rc = tdb_ring_wait(&r, STUCK_MS);
			if (rc == -ETIMEDOUT)
				die(1, "asleep %d ms at seq %" PRIu64 " of %"
				    PRIu64 " (prod %llu cons %llu flags %#x "
				    "futex %u): lost wake-up", STUCK_MS, c.next,
				    n, (unsigned long long)hdr->prod,
				    (unsigned long long)hdr->cons, hdr->flags,
				    hdr->futex);
			if (rc && rc != -EINTR)
				die(1, "wait: %d", rc);
		} else if (++empties % 1024 == 0) {
			sched_yield();
		} else {
			cpu_relax();
		}
	}
	st->last_ns = now_ns();
	st->got = c.next;
	/* nothing more may come */
	usleep(20000);
	rc = tdb_ring_consume(&r, 1000, check, &c);
	if (rc != 0)
		die(1, "after the last message consume returned %d", rc);
	if (tdb_ring_pending(&r) != 0)
		die(1, "after the last message %ld bytes pending",
		    tdb_ring_pending(&r));
	tdb_ring_detach(&r);
	_exit(0);
}

/* ------------------------------------------------------------------ */

static pid_t kids[2];

static void on_alarm(int sig)
{
	static const char msg[] = "test_ring_stress: watchdog: the run hung\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	if (kids[0] > 0)
		kill(kids[0], SIGKILL);
	if (kids[1] > 0)
		kill(kids[1], SIGKILL);
	_exit(1);
}

static const char *status_text(int status, char *buf, size_t n)
{
	if (WIFEXITED(status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, n, "status %#x", status);
	return buf;
}

static int run_mode(const struct mode *m, uint64_t n)
{
	size_t map = tdb_ring_map_size(m->data_size);
	int fd = memfd_create("test_ring_stress", MFD_CLOEXEC);
	void *whole;
	int status[2] = { 0, 0 }, done = 0, failed = 0, i;
	double secs;

	if (fd < 0 || ftruncate(fd, (off_t)map) != 0) {
		perror("memfd");
		return 1;
	}
	whole = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (whole == MAP_FAILED ||
	    tdb_ring_format(whole, TDB_RING_SUBMIT, m->data_size,
			    m->max_msg) != 0) {
		fprintf(stderr, "format failed\n");
		return 1;
	}
	munmap(whole, map);
	memset(st, 0, sizeof(*st));
	for (i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("fork");
			return 1;
		}
		if (kids[i] == 0) {
			if (i == 0)
				producer(fd, m, n);
			else
				consumer(fd, m, n);
		}
	}
	while (done < 2) {
		int stt;
		pid_t pid = waitpid(-1, &stt, 0);

		if (pid < 0) {
			if (errno == EINTR)
				continue;
			perror("waitpid");
			return 1;
		}
		for (i = 0; i < 2; i++) {
			if (pid != kids[i])
				continue;
			status[i] = stt;
			kids[i] = -1;
			done++;
			if (!WIFEXITED(stt) || WEXITSTATUS(stt) != 0) {
				failed = 1;
				if (kids[!i] > 0)       /* the other one */
					kill(kids[!i], SIGKILL);
			}
		}
	}
	close(fd);
	if (failed) {
		char b0[80], b1[80];

		fprintf(stderr, "%s: FAILED: producer %s%s%s, consumer %s%s%s "
			"(seed %" PRIu64 ")\n", m->name,
			status_text(status[0], b0, sizeof(b0)),
			st->err[0][0] ? ": " : "", st->err[0],
			status_text(status[1], b1, sizeof(b1)),
			st->err[1][0] ? ": " : "", st->err[1], seed);
		return 1;
	}
	secs = (double)(st->last_ns - st->first_ns) / 1e9;
	printf("%-5s: %" PRIu64 " messages, %.2f GB (%.0f B mean, max %" PRIu64
	       "), ring %u B, %.0f wraps, %.2f s: %.2f M msgs/s, %.2f GB/s\n",
	       m->name, st->got, (double)st->bytes / 1e9,
	       (double)st->bytes / (double)n, st->max_seen, m->data_size,
	       (double)st->bytes / m->data_size, secs, (double)n / secs / 1e6,
	       (double)st->bytes / secs / 1e9);
	printf("       producer: %" PRIu64 " publishes, %" PRIu64 " wake-ups "
	       "sent, ring full for %" PRIu64 " messages, %" PRIu64 " waits for "
	       "space (%" PRIu64 " slept), %" PRIu64 " pauses\n",
	       st->publishes, st->wakes, st->full, st->wait_space,
	       st->wait_space_sleeps, st->pauses);
	printf("       consumer: %" PRIu64 " consume calls, %" PRIu64 " found "
	       "the ring empty, %" PRIu64 " waits\n", st->consume_calls,
	       st->empty, st->waits);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *e = getenv("TDB_RING_MSGS");
	uint64_t n = e ? strtoull(e, NULL, 0) : 20000000u, s;
	const char *which = argc > 1 ? argv[1] : "both";
	int fails = 0, runs = 0;
	size_t i;

	e = getenv("TDB_RING_SEED");
	seed = e ? strtoull(e, NULL, 0) : (uint64_t)now_ns() ^ (uint64_t)getpid();
	printf("test_ring_stress: %" PRIu64 " messages per mode, seed %" PRIu64
	       " (TDB_RING_SEED)\n", n, seed);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pool = malloc(POOL + 65536);
	if (st == MAP_FAILED || !pool || !n)
		return 1;
	s = seed;
	for (i = 0; i < POOL + 65536; i += 8) {
		uint64_t x = rng_next(&s);

		memcpy(pool + i, &x, 8);
	}
	signal(SIGALRM, on_alarm);
	/* generous: 10 M messages take seconds; ASan is slower */
	alarm(3600);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(which, "both") && strcmp(which, modes[i].name))
			continue;
		runs++;
		fails += run_mode(&modes[i], n);
	}
	if (!runs) {
		fprintf(stderr, "usage: %s [spin|sleep|both]\n", argv[0]);
		return 2;
	}
	printf("%d passed, %d failed\n", runs - fails, fails);
	return fails ? 1 : 0;
}
