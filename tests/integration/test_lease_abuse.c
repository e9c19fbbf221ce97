// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_lease_abuse.c - a mapped reader cannot make writers wait its
 * lease over and over (issue 25, item 2).
 *
 * tdbd runs with --reader-lease 100ms.  A writer (the victim, reading
 * through its rings only) puts 32 KiB values over 64 keys: every 256
 * puts retire 8 MiB, so the engine reclaims, a grace period that waits
 * for mapped readers.  First alone for 1 s (the baseline), then for
 * 2.5 s beside each attacker, a raw client granted a map (ATTACH,
 * TABLE_MAP) that keeps an odd value in its read_section and, each time
 * read_expired moves (the owner stopped waiting for it), puts a NEW odd
 * value there and
 *   reask      asks for its map again (TABLE_MAP), as the issue measured;
 *   reconnect  or connects anew (ATTACH, TABLE_MAP: a new reader).
 * Before the fix every grace period waited the whole lease; now an
 * expired reader is benched until it asks again and its uid's backoff
 * (1 s, 2 s, 4 s ...) is over (src/owner/readers.c, "Benched readers").
 * Each part:
 *  - the writer's put rate beside the attacker is at least half the
 *    baseline's;
 *  - the expiries the attacker caused (STATS readers_expired) are at
 *    most 4 in those 2.5 s (0, 1, 3 s after the first: 3, and one for a
 *    slow machine);
 *  - the attacker saw read_expired move (it was told: bumped) and its
 *    TABLE_MAPs were all answered.
 * And honest: a libtdbclient reader that overstays the lease once is
 * waited for again after the backoff (the library asks for its map
 * again after an expiry): its second long section expires too.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include <tdb/ring.h>

#define VAL        (32u << 10)
#define NKEYS      64u
#define BASE_MS    1000u
#define ATTACK_MS  2500u
#define MAX_EXPIRIES 4u
#define LEASE_MS   100u

static struct h_daemon g_d;

struct run {
	uint64_t puts, ms, p99_us, max_us;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void writer(struct tdbc_table *t, unsigned int ms, struct run *r)
{
	static unsigned char val[VAL];
	static uint64_t lat[1u << 20];
	uint64_t t0 = h_now_ms(), end = t0 + ms;

	memset(r, 0, sizeof(*r));
	while (h_now_ms() < end && r->puts < sizeof(lat) / sizeof(lat[0])) {
		struct timespec a, b;
		char k[16];

		snprintf(k, sizeof(k), "big%u",
			 (unsigned int)(r->puts % NKEYS));
		memset(val, (int)r->puts, 64);
		clock_gettime(CLOCK_MONOTONIC, &a);
		CHECK_EQ(tdbc_put(t, NULL, k, strlen(k), val, VAL, 0), 0,
			 "put");
		clock_gettime(CLOCK_MONOTONIC, &b);
		lat[r->puts++] = (uint64_t)(((int64_t)b.tv_sec - a.tv_sec) *
					    1000000000 + b.tv_nsec -
					    a.tv_nsec) / 1000;
	}
	r->ms = h_now_ms() - t0;
	if (!r->puts)
		return;
	qsort(lat, r->puts, sizeof(lat[0]), cmp_u64);
	r->p99_us = lat[r->puts * 99 / 100];
	r->max_us = lat[r->puts - 1];
}

static int table_map(struct h_raw *r)
{
	struct tdb_proto_msg m = { .cmd = TDB_CMD_TABLE_MAP,
				   .attrs = TDB_PROTO_BIT(TDB_A_TABLE),
				   .table = "victim" };
	char msg[256] = "";
	int fd = -1, err;

	err = h_raw_call(r, &m, NULL, NULL, NULL, msg, sizeof(msg));
	if (!err && h_raw_take_fds(r, &fd, 1) == 1)
		close(fd);
	return err;
}

/* The attacker: until killed, a new odd value after each expiry and a
 * TABLE_MAP.  Says "r" on fd once in a section, then, at SIGTERM, how
 * often read_expired moved and how many TABLE_MAPs failed. */
static volatile sig_atomic_t g_stop;

static void on_term(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* A raw client with rings and a map of "victim": its SUBMIT header. */
static struct tdb_ring_hdr *reader_connect(struct h_raw *r)
{
	struct tdb_proto_msg a = { .cmd = TDB_CMD_ATTACH };
	struct tdb_ring_hdr *hdr;
	char msg[256] = "";
	int fds[8], err;
	unsigned int n, i;

	h_raw_connect(r, g_d.sock);
	err = h_raw_call(r, &a, NULL, NULL, NULL, msg, sizeof(msg));
	n = err ? 0 : h_raw_take_fds(r, fds, 8);
	CHECK(n >= 3, "ATTACH: %s (%s)", h_errname(err), msg);
	CHECK_EQ(table_map(r), 0, "TABLE_MAP");
	hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	CHECK(hdr != MAP_FAILED, "mmap of the SUBMIT header");
	for (i = 0; i < n; i++)
		close(fds[i]);
	return hdr;
}

static pid_t attacker(int fd, bool reconnect)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdb_ring_hdr *hdr;
		uint64_t v = 1, seen, moved = 0, failed = 0;
		unsigned int rep[2];
		struct h_raw r;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGTERM, on_term);
		hdr = reader_connect(&r);
		seen = __atomic_load_n(&hdr->read_expired, __ATOMIC_ACQUIRE);
		__atomic_store_n(&hdr->read_section, v, __ATOMIC_RELEASE);
		CHECK(write(fd, "r", 1) == 1, "pipe");
		while (!g_stop) {
			uint64_t e = __atomic_load_n(&hdr->read_expired,
						     __ATOMIC_ACQUIRE);

			if (e != seen) {
				moved++;
				v += 2;
				if (reconnect) {
					munmap(hdr, 4096);
					h_raw_close(&r);
					/* not faster than a lease: what
					 * it costs tdbd to connect is
					 * not what this tests */
					usleep(LEASE_MS * 1000);
					hdr = reader_connect(&r);
					e = __atomic_load_n(&hdr->read_expired,
							    __ATOMIC_ACQUIRE);
				} else if (table_map(&r)) {
					failed++;
				}
				seen = e;
				__atomic_store_n(&hdr->read_section, v,
						 __ATOMIC_RELEASE);
			}
			usleep(1000);
		}
		rep[0] = (unsigned int)moved;
		rep[1] = (unsigned int)failed;
		CHECK(write(fd, rep, sizeof(rep)) == sizeof(rep), "pipe");
		_exit(0);
	}
	h_track(pid);
	return pid;
}

static void report(const char *what, const struct run *r)
{
	h_note("%s: %llu puts of 32 KiB in %llu ms (%.0f/s), p99 %llu us, "
	       "max %llu us", what, (unsigned long long)r->puts,
	       (unsigned long long)r->ms, r->puts * 1000.0 / r->ms,
	       (unsigned long long)r->p99_us,
	       (unsigned long long)r->max_us);
}

/* A tdbd of its own (the backoff is remembered per uid), the writer
 * alone, then beside the attacker. */
static void part(bool reconnect)
{
	const char *args[] = { "--sync", "none", "--reader-lease", "100ms",
			       NULL };
	const char *name = reconnect ? "reconnect" : "reask";
	struct tdbc_stats a, b;
	struct run att, base, after, warm;
	struct tdbc_table *t;
	struct tdbc *c;
	unsigned int rep[2];
	double rb, ra;
	int p[2], status;
	pid_t pid;
	char x;

	h_start(&g_d, reconnect ? "lb" : "la", args);
	c = h_connect(&g_d, TDBC_NO_MAP);
	CHECK_EQ(tdbc_table_create(c, "victim", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "victim", &t), 0, "open");
	writer(t, 300, &warm);          /* every key there */
	writer(t, BASE_MS, &base);
	report(reconnect ? "reconnect: alone" : "reask: alone", &base);
	CHECK(base.puts > 300, "too few puts alone (%llu) to reclaim",
	      (unsigned long long)base.puts);
	CHECK(pipe(p) == 0, "pipe");
	pid = attacker(p[1], reconnect);
	close(p[1]);            /* a dead attacker is EOF, not a hang */
	if (read(p[0], &x, 1) != 1) {
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		h_untrack(pid);
		CHECK(0, "the attacker did not get in: it %s %d",
		      WIFSIGNALED(status) ? "died of signal" : "exited with",
		      WIFSIGNALED(status) ? WTERMSIG(status) :
		      WEXITSTATUS(status));
	}
	h_stats(c, &a);
	writer(t, ATTACK_MS, &att);
	h_stats(c, &b);
	kill(pid, SIGTERM);
	CHECK(read(p[0], rep, sizeof(rep)) == sizeof(rep),
	      "the attacker's report (it exited or died without one)");
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the attacker failed");
	report(name, &att);
	/* alone again after the attack: the baseline is the lower of the
	 * two, so that other work on the host (CI runs qemu beside this)
	 * that comes or goes between the phases is not taken for the
	 * attacker's doing */
	writer(t, BASE_MS, &after);
	report(reconnect ? "reconnect: alone after" : "reask: alone after",
	       &after);
	rb = base.puts * 1000.0 / base.ms;
	if (after.puts * 1000.0 / after.ms < rb)
		rb = after.puts * 1000.0 / after.ms;
	ra = att.puts * 1000.0 / att.ms;
	h_note("%s: the attacker caused %llu expiries in %llu ms; it saw "
	       "read_expired move %u times, %u TABLE_MAPs failed", name,
	       (unsigned long long)(b.readers_expired - a.readers_expired),
	       (unsigned long long)att.ms, rep[0], rep[1]);
	CHECK(ra >= rb / 2, "%s: beside the attacker the writer did %.0f "
	      "puts/s, under half of %.0f alone (the lower of before and "
	      "after)", name, ra, rb);
	CHECK(b.readers_expired - a.readers_expired <= MAX_EXPIRIES,
	      "%s: the attacker made writers wait out %llu leases in %llu "
	      "ms (at most %u)", name,
	      (unsigned long long)(b.readers_expired - a.readers_expired),
	      (unsigned long long)att.ms, MAX_EXPIRIES);
	CHECK(b.readers_expired > a.readers_expired && rep[0] > 0,
	      "%s: the attacker was never expired: the test tests nothing",
	      name);
	CHECK_EQ(rep[1], 0, "TABLE_MAPs of the attacker failed");
	close(p[0]);
	tdbc_close(c);
	h_stop(&g_d);
}

/* An honest library client that overstays the lease once: the owner
 * benches it, the library asks for its map again (map.c,
 * reask_after_expiry) at its next read, and once the backoff (1 s) is
 * over the owner waits for it again: a second long section expires
 * (STATS counts expiries, not the bumps of a benched reader, so a client
 * left benched would leave the count at 1).  A section expires only if
 * a grace period falls in it, which the writer's puts make when the
 * table reuses memory: so the reader holds each long section open until
 * the writer has seen STATS count the expiry (says "in" on `rd`, waits
 * for a byte on `go`), not for a fixed time, which a loaded machine
 * outran. */
static pid_t honest(int rd, int go)
{
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct tdbc *c = h_connect(&g_d, 0);
		struct tdbc_table *t = NULL;
		unsigned char buf[VAL];
		const void *v;
		size_t n;
		char x;
		int i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CHECK_EQ(tdbc_table_open(c, "victim", &t), 0, "open");
		CHECK(tdbc_table_mapped(t), "not mapped");
		for (i = 0; i < 2; i++) {
			if (i) {
				h_sleep_ms(1200);       /* the backoff */
				CHECK(tdbc_get(t, NULL, "big1", 4, buf,
					       sizeof(buf), NULL) == VAL,
				      "a get after the backoff");
			}
			CHECK_EQ(tdbc_read_begin(c), 0, "read_begin");
			CHECK_EQ(tdbc_get_ref(t, "big0", 4, &v, &n), 0,
				 "get_ref");
			CHECK(write(rd, "i", 1) == 1, "pipe");
			CHECK(read(go, &x, 1) == 1, "pipe");
			CHECK_EQ(tdbc_read_end(c), -ESTALE,
				 i ? "read_end of long section 2" :
				 "read_end of long section 1");
			CHECK(tdbc_get(t, NULL, "big1", 4, buf, sizeof(buf),
				       NULL) == VAL, "a get after the expiry");
		}
		tdbc_close(c);
		_exit(0);
	}
	h_track(pid);
	return pid;
}

static bool expired_past(const struct tdbc_stats *st, const void *arg)
{
	return st->readers_expired > *(const uint64_t *)arg;
}

/* The writer puts until the reader is in its section and STATS counts
 * one more expiry than `*seen`, then lets the reader go. */
static void write_until_expiry(struct tdbc *c, struct tdbc_table *t,
			       int rd, int go, uint64_t *seen, int section)
{
	uint64_t t0 = h_now_ms();
	struct tdbc_stats st;
	struct run w;
	char x;

	CHECK(read(rd, &x, 1) == 1, "the honest reader died before its "
	      "section %d", section);
	for (;;) {
		writer(t, 50, &w);
		h_stats(c, &st);
		if (expired_past(&st, seen))
			break;
		CHECK(h_now_ms() - t0 < 20000, "section %d: no expiry in 20 s "
		      "of puts (readers_expired %llu)", section,
		      (unsigned long long)st.readers_expired);
	}
	*seen = st.readers_expired;
	CHECK(write(go, "g", 1) == 1, "pipe");
}

static void part_honest(void)
{
	const char *args[] = { "--sync", "none", "--reader-lease", "100ms",
			       NULL };
	struct tdbc_stats a, b;
	struct tdbc_table *t;
	struct run w;
	struct tdbc *c;
	int status, rd[2], go[2];
	uint64_t seen;
	pid_t pid;

	h_start(&g_d, "lc", args);
	c = h_connect(&g_d, TDBC_NO_MAP);
	CHECK_EQ(tdbc_table_create(c, "victim", NULL), 0, "create");
	CHECK_EQ(tdbc_table_open(c, "victim", &t), 0, "open");
	writer(t, 300, &w);             /* every key there */
	h_stats(c, &a);
	seen = a.readers_expired;
	CHECK(pipe(rd) == 0 && pipe(go) == 0, "pipe");
	pid = honest(rd[1], go[0]);
	close(rd[1]);
	close(go[0]);
	write_until_expiry(c, t, rd[0], go[1], &seen, 1);
	/* the reader waits out its backoff (1 s) and asks again: the
	 * writer keeps the grace periods coming meanwhile */
	write_until_expiry(c, t, rd[0], go[1], &seen, 2);
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	h_untrack(pid);
	close(rd[0]);
	close(go[1]);
	h_stats(c, &b);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the honest reader failed");
	h_note("honest: %llu expiries (one per long section)",
	       (unsigned long long)(b.readers_expired - a.readers_expired));
	CHECK_EQ(b.readers_expired - a.readers_expired, 2,
		 "expiries of a reader that asked for its map again");
	tdbc_close(c);
	h_stop(&g_d);
}

int main(void)
{
	h_init("tdbd-lease-abuse", 60);
	if (h_want("honest"))
		part_honest();
	if (h_want("reask"))
		part(false);
	if (h_want("reconnect"))
		part(true);
	h_done();
	return 0;
}
