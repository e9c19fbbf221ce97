// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_ring_wakeup.c - lost wake-ups, round after round.
 *
 * Producer and consumer are two processes over a memfd.  Each round, one
 * side goes to sleep with no timeout and the other side gives it exactly
 * what it waits for; a lost wake-up leaves the sleeper asleep for ever,
 * which the alarm() watchdog turns into a loud failure naming the round
 * and the header's state.  Random tiny delays and spins on both sides
 * (and, in half of the rounds, waiting until the sleeper has set its flag)
 * move the post to every point around the sleeper's decision: before it
 * looks, between setting the flag and re-checking, between the re-check
 * and FUTEX_WAIT, and long after it sleeps.
 *
 *   consumer   the consumer sleeps in tdb_ring_wait(-1) on an empty ring;
 *              the producer posts one message and publishes;
 *   space      the ring is full and the producer sleeps in
 *              tdb_ring_wait_space(-1); the consumer consumes one message;
 *   eventfd    as `consumer`, but wake-ups go through an eventfd: the
 *              consumer sleeps in tdb_ring_wait (poll) or arms with
 *              tdb_ring_wait(0) and sleeps in its own epoll_wait.
 *
 * TDB_RING_WAKE_ROUNDS (default 20000) rounds of `consumer`, half as many
 * of the others.
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
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

#define HDR      TDB_RING_HDR_SIZE
#define DATA     4096u
#define MTYPE    0x57
#define WATCHDOG 20             /* seconds for one round */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

enum phase { PH_CONSUMER, PH_SPACE, PH_EVENTFD };
static const char *const phase_name[] = { "consumer", "space", "eventfd" };

struct ctl {
	uint64_t acked;         /* consumer: rounds done */
	uint64_t refilled;      /* producer (space): rounds done */
	uint64_t primed;        /* producer (space): the ring is full */
	uint64_t round[2];      /* where each side is, for the watchdog */
	/* counts */
	uint64_t wakes_sent, flag_seen, waits, slept, spurious, epolls;
	char err[2][300];
};

static struct ctl *ctl;
static struct tdb_ring_hdr *g_hdr;      /* for the watchdog's report */
static int g_who;
static enum phase g_phase;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint32_t)(((z >> 32) * n) >> 32);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctl->err[g_who], sizeof(ctl->err[g_who]), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s (%s phase): %s\n", g_who ? "consumer" : "producer",
		phase_name[g_phase], ctl->err[g_who]);
	_exit(1);
}

static void on_alarm(int sig)
{
	(void)sig;
	snprintf(ctl->err[g_who], sizeof(ctl->err[g_who]),
		 "WATCHDOG: round %" PRIu64 " hung for %d s (other side at round "
		 "%" PRIu64 "; prod %llu cons %llu flags %#x futex %u): a lost "
		 "wake-up", ctl->round[g_who], WATCHDOG, ctl->round[!g_who],
		 (unsigned long long)g_hdr->prod,
		 (unsigned long long)g_hdr->cons, g_hdr->flags, g_hdr->futex);
	if (write(2, ctl->err[g_who], strlen(ctl->err[g_who])) < 0 ||
	    write(2, "\n", 1) < 0) {
		/* nothing more to do */
	}
	_exit(3);
}

/* a random tiny delay: nothing, a spin, a yield, a short sleep */
static void jitter(uint64_t *s)
{
	uint32_t i, n;

	switch (rnd(s, 10)) {
	case 0:
	case 1:
		break;
	case 2:
	case 3:
		n = rnd(s, 64);
		for (i = 0; i < n; i++)
			cpu_relax();
		break;
	case 4:
	case 5:
		n = rnd(s, 2000);
		for (i = 0; i < n; i++)
			cpu_relax();
		break;
	case 6:
		n = rnd(s, 30000);
		for (i = 0; i < n; i++)
			cpu_relax();
		break;
	case 7:
		sched_yield();
		break;
	default:
		usleep(rnd(s, 100));
		break;
	}
}

static void spin_until(const uint64_t *v, uint64_t want)
{
	unsigned int spins = 0;

	while (__atomic_load_n(v, __ATOMIC_ACQUIRE) < want)
		if (++spins % 128 == 0)
			sched_yield();
		else
			cpu_relax();
}

/* Wait (bounded) until the consumer or producer says it sleeps. */
static bool flag_set_within(uint32_t flag, uint64_t ns)
{
	uint64_t t0 = now_ns();

	while (!(__atomic_load_n(&g_hdr->flags, __ATOMIC_ACQUIRE) & flag))
		if (now_ns() - t0 > ns)
			return false;
		else
			cpu_relax();
	return true;
}

static void post(struct tdb_ring *p, uint32_t len, uint32_t seq)
{
	struct nlmsghdr *nlh = tdb_ring_reserve(p, len);

	if (!nlh)
		die("reserve(%u) for seq %u: errno %d", len, seq, errno);
	memset(nlh, 0, len);
	nlh->nlmsg_len = len;
	nlh->nlmsg_type = MTYPE;
	nlh->nlmsg_seq = seq;
	if (tdb_ring_commit(p, len))
		die("commit");
}

struct expect {
	uint32_t seq;
	unsigned int got;
};

static int take(void *arg, const struct nlmsghdr *nlh)
{
	struct expect *e = arg;

	if (nlh->nlmsg_type != MTYPE || nlh->nlmsg_seq != e->seq)
		die("got seq %u type %#x, expected seq %u", nlh->nlmsg_seq,
		    nlh->nlmsg_type, e->seq);
	e->seq++;
	e->got++;
	return 0;
}

static void map_ring(int fd, bool data_rw, struct tdb_ring_hdr **hdr,
		     unsigned char **data)
{
	*hdr = mmap(NULL, HDR, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*data = mmap(NULL, DATA, data_rw ? PROT_READ | PROT_WRITE : PROT_READ,
		     MAP_SHARED, fd, HDR);
	if (*hdr == MAP_FAILED || *data == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	g_hdr = *hdr;
}

/* ------------------------------------------------------------------ */

static void producer(int fd, int efd, enum phase ph, uint64_t rounds,
		     uint64_t seed)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring p;
	uint64_t s = seed, r;
	int rc;

	g_who = 0;
	map_ring(fd, true, &hdr, &data);
	if ((rc = tdb_ring_attach_producer(&p, hdr, data, DATA,
					   TDB_RING_SUBMIT)))
		die("attach: %d", rc);
	if (efd >= 0)
		tdb_ring_set_eventfd(&p, efd);
	if (ph == PH_SPACE) {
		for (r = 0; r < 4; r++)
			post(&p, 1024, (uint32_t)r);
		tdb_ring_publish(&p);
		__atomic_store_n(&ctl->primed, 1, __ATOMIC_RELEASE);
	}
	for (r = 0; r < rounds; r++) {
		ctl->round[0] = r;
		alarm(WATCHDOG);
		if (ph == PH_SPACE) {
			/* full: sleep until the consumer takes one */
			jitter(&s);
			for (;;) {
				uint64_t t0 = now_ns();

				rc = tdb_ring_wait_space(&p, 1024, -1);
				if (rc)
					die("wait_space: %d", rc);
				ctl->waits++;
				if (now_ns() - t0 > 30000)
					ctl->slept++;
				if (tdb_ring_reserve(&p, 1024))
					break;
				if (errno != EAGAIN)
					die("reserve after wait: %d", errno);
				ctl->spurious++;
			}
			tdb_ring_abort(&p);
			post(&p, 1024, (uint32_t)(r + 4));
			tdb_ring_publish(&p);
			__atomic_store_n(&ctl->refilled, r + 1, __ATOMIC_RELEASE);
			continue;
		}
		spin_until(&ctl->acked, r);
		/* half the rounds: post once the consumer has said it
		 * sleeps (then at a random point after); the others: at a
		 * random point around its decision */
		if (rnd(&s, 2) && flag_set_within(TDB_RING_F_CONS_WAITING,
						  2000000))
			ctl->flag_seen++;
		jitter(&s);
		post(&p, 64, (uint32_t)r);
		rc = tdb_ring_publish(&p);
		if (rc < 0)
			die("publish: %d", rc);
		ctl->wakes_sent += (uint64_t)rc;
	}
	alarm(0);
	_exit(0);
}

static void consumer(int fd, int efd, enum phase ph, uint64_t rounds,
		     uint64_t seed)
{
	struct tdb_ring_hdr *hdr;
	unsigned char *data;
	struct tdb_ring c;
	struct expect e = { 0, 0 };
	uint64_t s = seed ^ 0x5555, r;
	int rc, epfd = -1;

	g_who = 1;
	map_ring(fd, false, &hdr, &data);
	if ((rc = tdb_ring_attach_consumer(&c, hdr, data, DATA,
					   TDB_RING_SUBMIT)))
		die("attach: %d", rc);
	if (efd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		tdb_ring_set_eventfd(&c, efd);
		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev))
			die("epoll: %s", strerror(errno));
	}
	for (r = 0; r < rounds; r++) {
		ctl->round[1] = r;
		alarm(WATCHDOG);
		if (ph == PH_SPACE) {
			/* the ring is full; the producer goes to sleep */
			spin_until(&ctl->primed, 1);
			spin_until(&ctl->refilled, r);
			if (rnd(&s, 2))
				flag_set_within(TDB_RING_F_PROD_WAITING,
						2000000);
			jitter(&s);
			e.got = 0;
			rc = tdb_ring_consume(&c, 1, take, &e);
			if (rc != 1 || e.got != 1)
				die("round %" PRIu64 ": consume %d", r, rc);
			continue;
		}
		jitter(&s);
		e.got = 0;
		for (;;) {
			uint64_t t0;

			rc = tdb_ring_consume(&c, 16, take, &e);
			if (rc < 0)
				die("consume: %d", rc);
			if (e.got)
				break;
			t0 = now_ns();
			ctl->waits++;
			if (efd >= 0 && rnd(&s, 2)) {
				/* the caller's own epoll loop */
				struct epoll_event ev;
				uint64_t cnt;

				rc = tdb_ring_wait(&c, 0);
				if (rc == 0)
					continue;
				if (rc != -ETIMEDOUT)
					die("arming wait: %d", rc);
				ctl->epolls++;
				rc = epoll_wait(epfd, &ev, 1, -1);
				if (rc < 0 && errno == EINTR)
					continue;
				if (rc != 1)
					die("epoll_wait: %d", rc);
				if (read(efd, &cnt, sizeof(cnt)) < 0 &&
				    errno != EAGAIN)
					die("eventfd read: %s",
					    strerror(errno));
			} else {
				rc = tdb_ring_wait(&c, -1);
				if (rc && rc != -EINTR)
					die("wait: %d", rc);
			}
			if (now_ns() - t0 > 30000)
				ctl->slept++;
		}
		if (e.got != 1)
			die("round %" PRIu64 ": %u messages", r, e.got);
		__atomic_store_n(&ctl->acked, r + 1, __ATOMIC_RELEASE);
	}
	if (ph == PH_SPACE) {           /* the last four */
		e.got = 0;
		spin_until(&ctl->refilled, rounds);
		rc = tdb_ring_consume(&c, 100, take, &e);
		if (rc != 4)
			die("at the end: consume %d", rc);
	}
	alarm(0);
	_exit(0);
}

/* ------------------------------------------------------------------ */

static int run(enum phase ph, uint64_t rounds, uint64_t seed)
{
	size_t map = tdb_ring_map_size(DATA);
	int fd = memfd_create("test_ring_wakeup", MFD_CLOEXEC);
	int efd = ph == PH_EVENTFD ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
	pid_t kid[2];
	int status[2], i, failed = 0;
	void *whole;
	uint64_t t0 = now_ns();

	g_phase = ph;
	if (fd < 0 || ftruncate(fd, (off_t)map) ||
	    (ph == PH_EVENTFD && efd < 0)) {
		perror("memfd/eventfd");
		return 1;
	}
	whole = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (whole == MAP_FAILED ||
	    tdb_ring_format(whole, TDB_RING_SUBMIT, DATA, 0)) {
		fprintf(stderr, "format failed\n");
		return 1;
	}
	g_hdr = whole;
	memset(ctl, 0, sizeof(*ctl));
	for (i = 0; i < 2; i++) {
		kid[i] = fork();
		if (kid[i] < 0) {
			perror("fork");
			return 1;
		}
		if (kid[i] == 0) {
			if (i == 0)
				producer(fd, efd, ph, rounds, seed);
			consumer(fd, efd, ph, rounds, seed);
		}
	}
	for (i = 0; i < 2; i++) {
		int stt;
		pid_t pid = waitpid(-1, &stt, 0);
		int k = pid == kid[0] ? 0 : 1;

		if (pid < 0) {
			perror("waitpid");
			return 1;
		}
		status[k] = stt;
		kid[k] = -1;
		if (!WIFEXITED(stt) || WEXITSTATUS(stt)) {
			failed = 1;
			if (kid[!k] > 0)
				kill(kid[!k], SIGKILL);
		}
	}
	if (failed) {
		for (i = 0; i < 2; i++)
			fprintf(stderr, "%s phase: %s %s: %s\n", phase_name[ph],
				i ? "consumer" : "producer",
				WIFSIGNALED(status[i]) ? "killed" :
				WEXITSTATUS(status[i]) ? "failed" : "ok",
				ctl->err[i]);
		fprintf(stderr, "%s phase FAILED (seed %" PRIu64 ")\n",
			phase_name[ph], seed);
		return 1;
	}
	printf("%-8s: %" PRIu64 " rounds in %.2f s: %" PRIu64 " waits, %" PRIu64
	       " slept (> 30 us), %" PRIu64 " wake-ups sent, flag seen "
	       "before posting %" PRIu64 ", %" PRIu64 " epoll sleeps, %" PRIu64
	       " spurious\n", phase_name[ph], rounds,
	       (double)(now_ns() - t0) / 1e9, ctl->waits, ctl->slept,
	       ctl->wakes_sent, ctl->flag_seen, ctl->epolls, ctl->spurious);
	/* the test means something only if sleepers were really woken */
	if (ctl->slept < rounds / 20) {
		fprintf(stderr, "%s phase: only %" PRIu64 " of %" PRIu64
			" rounds slept: the test did not test\n",
			phase_name[ph], ctl->slept, rounds);
		return 1;
	}
	munmap(whole, map);
	close(fd);
	if (efd >= 0)
		close(efd);
	return 0;
}

int main(void)
{
	const char *e = getenv("TDB_RING_WAKE_ROUNDS");
	uint64_t rounds = e ? strtoull(e, NULL, 0) : 20000, seed;
	int fails = 0;

	e = getenv("TDB_RING_SEED");
	seed = e ? strtoull(e, NULL, 0) : now_ns() ^ (uint64_t)getpid();
	printf("test_ring_wakeup: %" PRIu64 " rounds, seed %" PRIu64 "\n",
	       rounds, seed);
	fflush(stdout);
	ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED || !rounds)
		return 1;
	signal(SIGALRM, on_alarm);
	fails += run(PH_CONSUMER, rounds, seed);
	fails += run(PH_SPACE, (rounds + 1) / 2, seed + 1);
	fails += run(PH_EVENTFD, (rounds + 1) / 2, seed + 2);
	printf("%d passed, %d failed\n", 3 - fails, fails);
	return fails ? 1 : 0;
}
